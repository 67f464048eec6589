/* Helpers momento-local's integration tests share (tests/server/ only;
 * tests/common holds those of every suite). The data-structure tests'
 * one helper is srv_rng.h. */
#ifndef MOMENTO_SRV_TEST_H
#define MOMENTO_SRV_TEST_H

#include "momento/local.h"

#include "permissionmessages.pb-c.h"
#include "token.pb-c.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ProtobufCMessage;
struct ProtobufCMessageDescriptor;
struct grpc_byte_buffer;
struct tu_raw_reply;

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

/* A cmocka test on tests/common's fixture without a client
 * (tu_fixture_setup_server()): the server is tu_fx.server, stopped after
 * the test even when it fails. */
#define srv_fixture_test(f)                                                                        \
    cmocka_unit_test_setup_teardown(f, tu_fixture_setup_server, tu_fixture_teardown)

/* The one message of the successful reply `r`, unpacked as `desc`:
 * asserts that there is exactly one and that it unpacks. The caller frees
 * it (protobuf_c_message_free_unpacked()); void *, to be assigned to the
 * reply's own type. */
void *srv_reply_msg(const struct tu_raw_reply *r, const struct ProtobufCMessageDescriptor *desc);

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

/* ItemGetTtl of `key` in cache "c" at `target`, asserting the call
 * succeeds: whether the item is there, and if so its milliseconds left in
 * *ret_ms (UINT64_MAX: it never expires; untouched when missing). */
bool srv_item_ttl(const char *target, const char *key, uint64_t *ret_ms);

/* A gRPC message holding a copy of `body` (len bytes), or `m` packed, for
 * a GRPC_OP_SEND_MESSAGE of a call the test drives itself; the caller
 * destroys it (grpc_byte_buffer_destroy()). */
struct grpc_byte_buffer *srv_byte_buffer(const void *body, size_t len);
struct grpc_byte_buffer *srv_msg_buffer(const struct ProtobufCMessage *m);

/* A GenerateDisposableToken request, valid 60 s, with `caller_key` as the
 * caller's key, granting `role` on cache `cache`: on its key `item`, or
 * every item for NULL - named as such (ALL_ITEMS) when `name_all_items`,
 * else by leaving the item case unset, which the server reads the same.
 * `token_id` NULL: none. The request is `req`; the other members are the
 * parts it points to, so the whole lives as long as the struct. Strings
 * are borrowed. */
typedef struct srv_token_request {
    Token__GenerateDisposableTokenRequest req;
    Token__GenerateDisposableTokenRequest__Expires expires;
    PermissionMessages__Permissions perms;
    PermissionMessages__ExplicitPermissions explicit_;
    PermissionMessages__PermissionsType type, *types[1];
    PermissionMessages__PermissionsType__CachePermissions cache_perms;
    PermissionMessages__PermissionsType__CacheSelector cache_sel;
    PermissionMessages__PermissionsType__CacheItemSelector item_sel;
    PermissionMessages__PermissionsType__All all;
} srv_token_request;
void srv_token_request_init(srv_token_request *t, const char *caller_key, const char *cache,
                            PermissionMessages__CacheRole role, const char *item,
                            bool name_all_items, const char *token_id);

#endif
