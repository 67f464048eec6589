/* Helpers momento-local's tests share (tests/server/ only; tests/common
 * holds those of every suite). */
#ifndef MOMENTO_SRV_TEST_H
#define MOMENTO_SRV_TEST_H

#include "momento/local.h"

#include <stddef.h>
#include <stdint.h>

struct ProtobufCMessage;
struct ProtobufCMessageDescriptor;
struct grpc_byte_buffer;

/* One xorshift64 step of `*state`, which must not be 0: the data-structure
 * tests' random numbers, a fixed sequence from each test's own seed, so that
 * a failure replays. Inline, as those tests link no test library. */
static inline uint64_t srv_xorshift(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *state = x;
}

/* Asserts that the options setter `set` refuses each of the values after
 * `ok` (those just outside its range) on `o`, refuses NULL options, and
 * takes `ok`. A macro, as the setters' value types differ and a failure
 * should name the test's line. */
#define srv_assert_option_range(o, set, ok, ...)                                                   \
    do {                                                                                           \
        const long long srv_bad_[] = {__VA_ARGS__};                                                \
        for (size_t srv_i_ = 0; srv_i_ < sizeof(srv_bad_) / sizeof(srv_bad_[0]); srv_i_++)        \
            assert_int_equal(set((o), srv_bad_[srv_i_]), MOMENTO_ERR_INVALID_ARGUMENT);            \
        assert_int_equal(set(NULL, (ok)), MOMENTO_ERR_INVALID_ARGUMENT);                           \
        assert_int_equal(set((o), (ok)), MOMENTO_OK);                                              \
    } while (0)

/* New server options, asserting success, with cache `cache` (NULL: none).
 * The caller sets more on them, then starts a server with srv_start(). */
momento_local_options *srv_options(const char *cache);
/* A server (tu_server()) started with `o`, which it frees. */
momento_local *srv_start(momento_local_options *o);

/* A raw unary call (tu_raw_call_msg()) of `path` at `target` with `req`
 * and `headers` (n_headers pairs), its one reply unpacked as `desc`.
 * `ret_status` NULL: asserts that the call succeeded. Otherwise the gRPC
 * status goes to *ret_status, and a failed call returns NULL. The reply
 * is the caller's, to free with protobuf_c_message_free_unpacked(); the
 * result is void *, to be assigned to the reply's own type. Asserts that a
 * successful call brought exactly one message, which unpacks. */
void *srv_call(const char *target, const char *path, const char *const *headers,
               size_t n_headers, const struct ProtobufCMessage *req,
               const struct ProtobufCMessageDescriptor *desc, int *ret_status);

/* A gRPC message holding a copy of `body` (len bytes), or `m` packed, for
 * a GRPC_OP_SEND_MESSAGE of a call the test drives itself; the caller
 * destroys it (grpc_byte_buffer_destroy()). */
struct grpc_byte_buffer *srv_byte_buffer(const void *body, size_t len);
struct grpc_byte_buffer *srv_msg_buffer(const struct ProtobufCMessage *m);

#endif
