/* The transport seam (docs/transport.md): how the engine (call.c) makes an
 * attempt of an RPC on the wire without knowing the wire. Everything above
 * it - options, deadlines, cancel tokens, the cap, retries, metrics,
 * decoding, delivery, the coalescer and the batcher - calls only these
 * operations; everything of gRPC behind them is in transport/grpc/.
 *
 * As libuv's requests, an attempt lives in memory its caller owns: the
 * engine allocates `attempt_size` bytes inside its call (no allocation of
 * the transport's own per request), zeroed, whose first member is a
 * momento__attempt. One attempt goes through
 *
 *     prepare -> [publish for cancel] -> launch -> ... -> done -> end
 *
 * and the engine may prepare it again after end (a retry). prepare and
 * launch are two steps so that the engine can make the attempt cancellable
 * (the client's in-flight list, client.h) before it can complete: once
 * launched, it may complete on the completion thread at any time.
 *
 * Bytes cross the seam as grpc_slice (refcounted, the type decode.c and the
 * metrics hook read) and headers as grpc_metadata: plain data types of
 * gRPC's support library that any transport can make and read. */
#ifndef MOMENTO_TRANSPORT_H
#define MOMENTO_TRANSPORT_H

#include "methods.h"
#include "momento/momento.h"

#include <grpc/grpc.h>
#include <grpc/support/time.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What an attempt ended with: written by the transport before done(), read
 * by the engine until end(). The engine may overwrite `status` and
 * `details` (a local end: a cancel the wire never saw, say); end() gives
 * back whatever `details` then holds. */
typedef struct momento__reply {
    int status;         /* Momento's status codes (gRPC's numbering); 0: OK */
    grpc_slice details; /* the status message; empty when none */
    char *err;          /* the `err` detail (PROTOCOL.md), NUL-terminated, or NULL; set
                         * only when status != 0; the transport's */
    grpc_slice *msgs;   /* the reply's messages, n_msgs of them; the transport's */
    size_t n_msgs;
    /* The reply's trailing metadata, whatever the status; the transport's,
     * pointing into its buffers until end(). Empty when there was none, or
     * no memory to list it (the reply stands without). */
    const momento_metadata *trailers;
    size_t n_trailers;
    bool too_many;      /* more messages came than expect_msgs: reading stopped */
    bool out_of_memory; /* the transport ended it: no memory to keep the reply */
} momento__reply;

/* The head of every transport's attempt. */
typedef struct momento__attempt {
    void *data; /* the engine's: its call, for done() */
    /* Set by the engine before launch: the attempt has completed, `reply`
     * is filled. Called exactly once per successful launch, no lock held:
     * on the client's completion thread (by the transport's run(), or
     * through post()), or through finish() on the transport's own. */
    void (*done)(struct momento__attempt *a);
    /* A live stream (a topic subscription's): set by the engine before
     * launch, NULL for every other attempt. Each message of the stream is
     * handed over as it arrives - on the client's completion thread, in
     * order, no lock held, the bytes borrowed for the call - instead of
     * being kept in reply.msgs; the next is read only after it returns
     * (the stream's pace is the reader's). false: stop reading, the
     * engine has cancelled the attempt (done() still follows). Only the
     * client's own, loop-running transport carries live streams. */
    bool (*on_msg)(struct momento__attempt *a, const uint8_t *bytes, size_t len);
    momento__reply reply;
    struct momento__attempt *posted; /* the engine's: its place in post()'s queue */
} momento__attempt;

/* One request as every attempt of it sends it; the engine's, valid from
 * prepare to end (the transport may keep the pointer). */
typedef struct momento__wire_request {
    momento__rpc_id method;          /* its row of momento__rpcs (methods.h) */
    grpc_slice body;                 /* the packed request */
    grpc_slice cache;                /* the cache name (data plane); empty otherwise */
    const grpc_metadata *headers;    /* authorization, cache, read concern, the
                                      * client's and the request's own, agent */
    size_t n_headers;
    size_t expect_msgs;              /* a stream's exact message count; 0 = any */
} momento__wire_request;

typedef struct momento__transport momento__transport;

/* A transport's operations: a const table, one per kind of transport. */
typedef struct momento__transport_ops {
    const char *name;
    /* What the metrics hook reports for the attempts it carries: a
     * momento_metrics_transport (momento/metrics.h). A transport of the
     * tests' that leaves it 0 reads as NONE. */
    int metrics_kind;
    size_t attempt_size; /* >= sizeof(momento__attempt); the engine zeroes it */
    /* Readies attempt `a` of `rq` with its own deadline (GPR_CLOCK_MONOTONIC),
     * on the submitting thread or the completion thread. Returns 0,
     * MOMENTO_ERR_NO_MEMORY, or for a live stream MOMENTO_ERR_LIMIT_EXCEEDED
     * (no connection has room for another stream); then only end() may
     * follow. From 0 on, cancel() may be called from any thread. */
    int (*prepare)(momento__transport *t, momento__attempt *a, const momento__wire_request *rq,
                   gpr_timespec deadline);
    /* Puts the prepared attempt on the wire. Returns 0: done() follows
     * exactly once - with DEADLINE_EXCEEDED when launched past its
     * deadline, CANCELLED when cancelled before or during; or an error:
     * done() never runs. */
    int (*launch)(momento__attempt *a);
    /* Ends a prepared attempt with CANCELLED and `why` (static) unless it
     * has ended already: any thread, possibly under the client's lock, so
     * it takes no lock of the client's and does not call back. */
    void (*cancel)(void *a, const char *why);
    /* Gives back what the attempt holds (after done(), a failed launch, or
     * a prepare never launched) and leaves it zeroed for the next prepare;
     * on a zeroed attempt it does nothing; `data` and `done` stay. Nothing
     * may cancel it after. */
    void (*end)(momento__attempt *a);

    /* The client's completion thread (docs/transport.md "The loop"). */
    /* Waits until one of the transport's events comes, wake() is called,
     * or `until_ns` (momento__now_ns()'s clock; INT64_MAX: no limit)
     * passes, and runs what came (an attempt's done(), say). Completion
     * thread only. Returns false once shutdown() was called and everything
     * the transport started has ended: the loop ends. */
    bool (*run)(momento__transport *t, int64_t until_ns);
    /* Makes the run() in progress, or the next, return soon. Any thread,
     * under the client's lock or not: it takes none of the client's and
     * cannot fail in a way that matters (a wake that cannot be made is
     * made up for by the next event or the next timer). */
    void (*wake)(momento__transport *t);
    /* No attempt will be prepared any more: run() returns false once what
     * is under way has ended; a transport with a thread of its own returns
     * once that thread has ended (nothing of it calls the engine after).
     * Any thread but that one, once (a transport's own close may call
     * its shutdown again). */
    void (*shutdown)(momento__transport *t);
    /* Gives back everything it holds, after run() returned false, or when
     * it was never run (then it shuts down and drains itself first). */
    void (*close)(momento__transport *t);

    /* A transport with its own I/O but no thread for it (protosocket with
     * momento_config_set_dispatch_io()): the engine works it on the
     * threads that wait for it. Both NULL for the others. */
    /* A descriptor readable when step() has work (a reply, a launch from
     * another thread, a deadline), or -1: the transport has a thread of
     * its own after all. */
    int (*poll_fd)(momento__transport *t);
    /* One turn on the calling thread, waiting up to `timeout_ms` (0: none)
     * for work first: what the transport's thread would do, ends handed
     * through finish(). Any thread, no lock of the client's held; two may
     * step at once. */
    void (*step)(momento__transport *t, int timeout_ms);
} momento__transport_ops;

/* A transport's state, embedded first in its own (transport/grpc/). */
struct momento__transport {
    const momento__transport_ops *ops;
    /* Set by the engine when it routes RPCs to the transport, for one that
     * completes attempts on a thread of its own: hands `a` to the client's
     * completion thread, which then calls a->done(a) (done() runs nowhere
     * else). Any thread; it never fails (the attempt's own memory queues
     * it). It takes the client's lock, which cancel() may be called under:
     * call it holding no lock that cancel() takes. A transport whose
     * run() is the loop's (gRPC's) calls done() itself instead. */
    void (*post)(struct momento__transport *t, momento__attempt *a);
    /* Set with post: hands `a` over as post() does, but called only from
     * the transport's own thread holding none of its locks, where the
     * engine may run a->done(a) at once instead of crossing to the
     * completion thread - it does when no application callback can run
     * in done() (dispatch mode: they are queued for the dispatching
     * thread), which saves a thread wake-up per batch of ends. */
    void (*finish)(struct momento__transport *t, momento__attempt *a);
    void *host; /* the engine's: for post() and finish() */
};

#endif
