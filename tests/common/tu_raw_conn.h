/* Raw gRPC calls left open: a connection of the test's own (a channel and a
 * completion queue) on which unary calls are started and then left running
 * while the test does other things, unlike tu_raw_call()'s, which wait for
 * their answer. For the server's held (parked) calls, their deadlines and
 * their cancels, read off the wire without the library.
 *
 * Apart from testutil.h because its types are gRPC's: only the tests that
 * drive gRPC themselves include it. */
#ifndef MOMENTO_TU_RAW_CONN_H
#define MOMENTO_TU_RAW_CONN_H

#include "momento/local.h"

#include <grpc/grpc.h>
#include <grpc/support/time.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct tu_raw_conn {
    grpc_channel *ch;
    grpc_completion_queue *cq;
} tu_raw_conn;

/* One call of a tu_raw_conn: filled in by tu_open_call_start(); `status`,
 * `details`, `trailing` and `recv` (its first response message, if any)
 * are the call's once tu_raw_conn_next() has returned it. */
typedef struct tu_open_call {
    grpc_call *call;
    grpc_byte_buffer *send, *recv;
    grpc_metadata md[8];
    size_t n_md;
    grpc_metadata_array init_md, trailing;
    grpc_status_code status;
    grpc_slice details;
    gpr_timespec deadline; /* GPR_CLOCK_MONOTONIC; infinite for none */
    bool done;             /* returned by tu_raw_conn_next() */
} tu_open_call;

/* A connection to `target` ("host:port"), without retries, taking
 * messages of up to 64 MiB. */
void tu_raw_conn_open(tu_raw_conn *k, const char *target);
/* The same, with gRPC's BDP probe `bdp` (1, the default, or 0): with 0 the
 * connection's receive window stays at HTTP/2's 64 KiB instead of growing
 * with the traffic, so that a reply the client does not read stalls in
 * the server for good. */
void tu_raw_conn_open_bdp(tu_raw_conn *k, const char *target, int bdp);
/* Every call of the connection must have ended and been closed. */
void tu_raw_conn_close(tu_raw_conn *k);

/* Starts a unary call of `path` with headers (`n` pairs, at most 8) and
 * `body`; `deadline_ms` 0 = none. Its end is `oc` on the connection's
 * queue (tu_raw_conn_next()). */
void tu_open_call_start(tu_raw_conn *k, tu_open_call *oc, const char *path,
                        const char *const *hdrs, size_t n, const void *body, size_t len,
                        int64_t deadline_ms);
/* Frees what tu_open_call_start() made; the call must have ended. */
void tu_open_call_close(tu_open_call *oc);

/* The next call of the connection to end (marked done), or NULL after
 * `timeout_ms` (0: only one that has ended already). Not scaled: callers
 * pass TU_MS() where they wait for something to come. */
tu_open_call *tu_raw_conn_next(tu_raw_conn *k, int64_t timeout_ms);

/* The request half of a unary or server-streaming call: ops[0], [1] and
 * [2] set to send the `n` headers `md`, the message `send` and the close
 * (the ops after them untouched). Returns 3, how many it set. */
size_t tu_request_ops(grpc_op *ops, grpc_metadata *md, size_t n, grpc_byte_buffer *send);

/* tu_raw_call() (testutil.h) on a channel of the caller's, which it
 * leaves open: for calls that must share one connection. */
struct tu_raw_reply;
int tu_raw_call_on(grpc_channel *ch, const char *path, const char *const *headers,
                   size_t n_headers, const void *body, size_t len, struct tu_raw_reply *out);

/* Waits up to `timeout_ms` (scaled) for momento_local_parked_calls(s) to
 * be `want`; returns the last count seen. */
uint64_t tu_wait_parked(momento_local *s, uint64_t want, int64_t timeout_ms);

#endif
