/*
 * libmomento metrics: a hook a client calls once for every request it
 * accepted (installed with momento_config_set_metrics(), in momento.h's
 * configuration section, with its type momento_metrics_fn), with the request's method, latency, status and attempts, for
 * the application to count (apps/metrics-prometheus.c keeps
 * Prometheus-style counters and a latency histogram from it).
 *
 * What the hook promises:
 *  - One call per accepted request, the same requests that get exactly one
 *    callback (momento.h): successes, errors, timeouts, cancellations and
 *    the requests ended by momento_client_free() alike. A refused submit
 *    (an error returned, no callback) gets no hook call either.
 *  - Per request as the application submitted it, not per RPC: each waiter
 *    of a coalescer (momento/coalescer.h) and each get, set or delete that
 *    adaptive batching queued is its own call, with the method it was submitted as
 *    ("Get", not "GetBatch") and a flag saying so; the coalescer's shared
 *    RPC and the batcher's GetBatch / SetBatch are not reported themselves.
 *    That is what the official SDKs' middleware sees (one event per SDK
 *    request), and it keeps hook counts equal to callback counts. A
 *    `_sync` call is its async request: one call. A paged ListCaches is one
 *    request. Topic subscriptions are streams, not requests, and are not
 *    reported (their events and momento_subscription_stats_get() are);
 *    a publish is.
 *  - Before the request's callback: when a callback runs, its request has
 *    already been counted. So a program that counts in the hook and waits
 *    for its callbacks sees exact counts.
 *  - On which thread. In the default mode, on the client's completion
 *    thread, immediately before the callback, which runs there too (so the
 *    two never overlap); with momento_config_set_io_thread_callbacks(), a
 *    request protosocket carried on its I/O thread, likewise immediately
 *    before its callback there. In dispatch mode (momento_config_set_dispatch())
 *    callbacks run on the thread that runs the queue (momento_client_
 *    dispatch(), or momento_client_wait_idle() and momento_client_free()
 *    for what they run: the dispatching thread), and the hook where the
 *    request ends: a request with an RPC of its own on the completion
 *    thread when that RPC completes (its callback runs later), or when
 *    protosocket carried it on that transport's I/O thread; a batched or
 *    coalesced request answered by its shared RPC (a GetBatch or SetBatch,
 *    a coalesced call) on the dispatching thread, immediately before its
 *    callback there, since that answer is queued whole, one entry for all
 *    of its requests (on the completion thread if that entry cannot be
 *    allocated); one that ends without that answer (its deadline or cancel
 *    while it waits) on the completion thread. So in dispatch mode a hook
 *    call may run while a callback does. Two rare ends run on the
 *    submitting thread, in either mode: a momento_delete_batch() whose
 *    every key was answered before the submitting call returned, and the
 *    coalesced requests that had joined a shared RPC that then could not
 *    be started (the client being freed, no memory).
 *  - Hook calls of one client never overlap each other: in dispatch mode
 *    and with I/O-thread callbacks a lock of the client's, taken around
 *    each call, keeps them apart and
 *    orders them (a counter only the hook writes needs no atomic add; one
 *    another thread reads needs atomic loads and stores); in the default
 *    mode the completion thread makes them one at a time (the two rare
 *    ends above excepted: that mode takes no lock).
 *  - The hook must not block and must not call blocking libmomento
 *    functions (on its own client they return MOMENTO_ERR_WOULD_DEADLOCK,
 *    on either thread; on any client they hold up every callback of this
 *    one, and in dispatch mode every hook call of this one). It should
 *    only record: update counters, push to a queue.
 *    It may not free the client. It is called only between
 *    momento_client_new() and the return of momento_client_free().
 *  - Nothing when unset: the library then costs one predictable branch per
 *    request.
 */
#ifndef MOMENTO_METRICS_H
#define MOMENTO_METRICS_H

#include "momento/momento.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bits of momento_request_metrics.flags. */
enum {
    /* Submitted through a coalescer (momento_coalescing_*): it may have
     * shared its RPC with duplicate requests, or left one at its own
     * deadline or cancel. */
    MOMENTO_METRICS_COALESCED = 1u << 0,
    /* Queued by adaptive batching (momento_config_set_batching()): sent in
     * a GetBatch / SetBatch, or alone, or ended while queued. (A coalesced
     * request whose shared RPC was queued has COALESCED only.) */
    MOMENTO_METRICS_BATCHED = 1u << 1,
    /* Answered from the near cache (momento_config_set_near_cache()): no
     * RPC, `attempts` 0, transport NONE, grpc_status -1. */
    MOMENTO_METRICS_NEAR_CACHE = 1u << 2,
};

/* Values of momento_request_metrics.transport: the protocol that carried
 * the request's last attempt (momento_config_set_transport() decides which
 * requests may leave gRPC; the others always go over gRPC). */
typedef enum momento_metrics_transport {
    /* No transport carried it: it ended before reaching the wire
     * (`attempts` 0: refused locally, ended in a queue, left a shared RPC
     * before it was sent). Also what a record of a library older than the
     * field reads, having no such field (check `size`). */
    MOMENTO_METRICS_TRANSPORT_NONE = 0,
    MOMENTO_METRICS_TRANSPORT_GRPC = 1,        /* gRPC (HTTP/2) */
    MOMENTO_METRICS_TRANSPORT_PROTOSOCKET = 2, /* protosocket: get, set, delete */
} momento_metrics_transport;

/*
 * One request's record, borrowed by the hook until it returns (copy what
 * you keep). Fields are only appended: a field is present when
 * offsetof(field) + sizeof(field) <= `size`.
 */
struct momento_request_metrics { /* the typedef is momento.h's */
    size_t size;           /* sizeof(momento_request_metrics) of the library */
    /* The RPC's name as the protocol spells it: "Get", "SetIf",
     * "ListCaches", "DictionaryGet" (also for
     * momento_dictionary_get_field(), which is that RPC with one field),
     * ...: the `name` column of common/methods.def, which momento-local's
     * stats use too. Static, never NULL. A coalesced or batched get, set or
     * delete is "Get", "Set" or "Delete". */
    const char *method;
    /* The cache a data-plane request named (its `cache` header), borrowed;
     * NULL for control-plane requests, ping and topic publishes. */
    const char *cache;
    /* The callback's momento_result_error(): 0 or a momento_error (but see
     * `result`). */
    int error;
    /* The gRPC status of its last attempt, or -1 when it ended without an
     * answer from gRPC (refused locally, left a shared RPC, ended in the
     * batching queue). */
    int grpc_status;
    int outcome;           /* the callback's momento_outcome (but see `result`) */
    /* Attempts made on the wire for it (retries included; a coalesced or
     * batched request counts its shared RPC's); 0 when it ended before
     * reaching the wire. */
    uint32_t attempts;
    uint32_t flags;        /* MOMENTO_METRICS_* */
    /* From the submitting call (its options resolved, its deadline
     * starting) to just before this hook: queueing, retries and delays
     * included; the callback's own time is not. Monotonic clock. */
    uint64_t latency_ns;
    /* The packed request sent (once, however many attempts) and the
     * reply's messages (the last attempt's): protobuf bytes, without gRPC
     * framing or headers. 0 for a coalesced or batched request (its RPC
     * is shared: counting the bytes per request would count them again
     * per waiter) and for a paged ListCaches. */
    uint64_t request_bytes;
    uint64_t response_bytes;
    /* The result the callback is about to get, borrowed until the hook
     * returns (momento_result_message() for an error's text, ...).
     * One exception: the one-element reads built on a many-element RPC
     * (momento_dictionary_get_field(), momento_sorted_set_get_score()) and
     * momento_dictionary_get_fields() are reported with the RPC's result,
     * before the library picks out the element: `outcome` HIT there means
     * the collection was found, while the callback may get the element's
     * MISS. The reply's trailing metadata is read from it with
     * momento_result_trailer() (a coalesced or batched request: its shared
     * RPC's), as the SDKs' middleware reads it. */
    const momento_result *result;
    /* Which protocol carried its last attempt: a momento_metrics_transport
     * value (an int, so that a value added later keeps the record's
     * layout). A coalesced or batched request reports its shared RPC's,
     * as it does its attempts; a delete_batch the one its deletes went
     * over. A plain value, borrowed with the record like every field.
     * Present when `size` covers it (the library is newer than 0.2.0). */
    int transport;
};

#ifdef __cplusplus
}
#endif

#endif /* MOMENTO_METRICS_H */
