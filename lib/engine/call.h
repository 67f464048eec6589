/* One RPC from start to callback (call.c): its attempts on the wire, the
 * status mapping and decoding, and the callback. */
#ifndef MOMENTO_CALL_H
#define MOMENTO_CALL_H

#include "codec/unpack.h"
#include "methods.h"
#include "momento/momento.h"

#include <grpc/grpc.h>
#include <grpc/support/time.h>
#include <stdbool.h>

typedef struct momento__call momento__call;
typedef struct momento__bmember momento__bmember; /* batcher.c */

/* What a call needs beyond its RPC: momento__call_opts_from() fills it
 * from a request's options; then set what else applies. */
typedef struct momento__call_opts {
    /* The overall deadline (GPR_CLOCK_MONOTONIC). The pages of one listing
     * share the first's; a coalesced request issued again keeps its own. */
    gpr_timespec deadline;
    /* Cancels the call; NULL: none. Borrowed: the call takes a reference. */
    momento_cancel_token *token;
    /* A stream's reply must have exactly this many messages (a batch: one
     * per key); any other count is MOMENTO_ERR_BAD_RESPONSE, and reading
     * stops at the first message too many. 0: any number. */
    size_t expect_msgs;
    /* When not NULL, set to the call once it is accepted, for
     * momento__call_cancel() (the coalescer's abandoned RPCs). */
    momento__call **started;
    /* When not NULL, set to the batcher's member when the request is
     * queued instead of started, for momento__batcher_withdraw(). */
    momento__bmember **queued;
    /* When not NULL, the request already packed (the coalescer's collection
     * reads, whose identity is these bytes): sent instead of `req`, which
     * may then be NULL. Copied at submit. */
    const uint8_t *packed;
    size_t packed_len;
    /* Sent as is: the batcher's own sends (momento__batcher_get and
     * friends otherwise offer the request to the batcher first), and
     * requests whose read concern is not the client's (a batch has one set
     * of headers). */
    bool unbatched;
    /* A momento_read_concern; 0: the client's (momento_config_set_read_concern()). */
    int read_concern;
    /* The request's own headers (checked; the caller's memory, copied when
     * the call starts). */
    const momento_header *headers;
    size_t n_headers;
    /* For the metrics hook (metrics.h): when the request was submitted
     * (momento__now_ns(); set by momento__call_opts_from()), and whether
     * its callback reports it instead (the coalescer's, the batcher's and
     * a listing's own RPCs), so that each request is reported once. */
    int64_t submitted_ns;
    bool no_metrics;
    /* A library callback (no_metrics) that calls many requests back: the
     * batcher's and the coalescer's RPCs. In dispatch mode it runs on the
     * dispatching thread, from the queue, with the result as decoded (the
     * call lives until it has returned), and the requests it calls back
     * are called at once there (respond.h): one queued entry for a whole
     * batch instead of a copied result each, and their bookkeeping on the
     * thread that submitted them instead of against it. Never set for an
     * RPC a blocking call may wait on, since the waiting thread may be the
     * one that dispatches (batcher.c, coalescer.c keep them apart). With a
     * metrics hook its requests are reported there too, each just before
     * its callback (the client's metrics lock keeps those hook calls apart
     * from the completion thread's: metrics.c). */
    bool late;
    /* The application's request group (momento_request_options.group),
     * counted with the request wherever the client counts it; NULL for
     * none, and for the RPCs the library makes for itself. Borrowed: the
     * count takes a reference. */
    momento_request_group *group;
} momento__call_opts;

/* Resolves a request's options (NULL: the client's defaults; already
 * checked by momento__check_options()) at the time of submission. */
void momento__call_opts_from(const momento_client *c, const momento_request_options *opts,
                             momento__call_opts *out);

/* Starts RPC `m`, whose reply `decode` reads (the op's decoder for that
 * RPC: the call knows none by name). `req` is packed at once; `cache` is
 * sent as the `cache` header for data-plane RPCs (NULL otherwise). Returns
 * 0 when accepted
 * (exactly one callback follows), or MOMENTO_ERR_CANCELLED (the token is
 * already cancelled), MOMENTO_ERR_NO_MEMORY, MOMENTO_ERR_CLOSED or
 * MOMENTO_ERR_UNKNOWN (no callback). */
int momento__call_start(momento_client *c, momento__rpc_id m, momento__decode_fn decode,
                        const char *cache, const ProtobufCMessage *req,
                        const momento_request_options *opts, momento_callback cb, void *userdata);
/* The same with resolved options. */
int momento__call_start_with(momento_client *c, momento__rpc_id m, momento__decode_fn decode,
                             const char *cache, const ProtobufCMessage *req,
                             const momento__call_opts *opts, momento_callback cb, void *userdata);
/* Cancels an accepted call as its token would (any thread). Valid until
 * the call's callback has returned. */
void momento__call_cancel(momento__call *call, const char *why);

#endif
