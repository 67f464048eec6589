/* A gRPC server for replies momento-local never sends: wrong message counts,
 * ListCaches tokens that repeat or never end, slow pages. It answers every
 * call, whatever its path, one call at a time, with the messages a test's
 * function produces and status OK, and two trailers: `fake-call` (the
 * call's 0-based index in decimal) and `fake-trailer-bin` (the bytes
 * 00 ff 'x'). Loopback only. */
#ifndef MOMENTO_FAKE_SERVER_H
#define MOMENTO_FAKE_SERVER_H

#include <grpc/slice.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct tu_fake tu_fake;

/* The i-th message (0-based) of the reply to the call-th call (0-based):
 * true with *msg set (the fake takes the reference), false when the reply
 * has no more messages. Runs on the fake's thread. */
typedef bool (*tu_fake_msg_fn)(void *arg, size_t call, size_t i, grpc_slice *msg);

/* Starts a fake on 127.0.0.1 (free port) that waits `delay_ms` before each
 * reply. Aborts the test on failure. */
tu_fake *tu_fake_start(tu_fake_msg_fn fn, void *arg, int delay_ms);
/* From now on, the replies to calls with index >= `call` wait (after the
 * delay) until tu_fake_release(), or until the fake stops: a reply that
 * comes only after something the test does, so that what the test checks
 * meanwhile is order, not time. */
void tu_fake_hold_from(tu_fake *f, size_t call);
void tu_fake_release(tu_fake *f);
/* "127.0.0.1:port", for momento_credentials_local(). */
const char *tu_fake_endpoint(const tu_fake *f);
/* Calls answered so far, and messages sent in all. */
size_t tu_fake_calls(tu_fake *f);
size_t tu_fake_messages(tu_fake *f);
void tu_fake_stop(tu_fake *f);

#endif
