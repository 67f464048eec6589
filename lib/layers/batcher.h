/* Adaptive batching (batcher.c; docs/batching.md): when the client already
 * has N RPCs in flight, gets and sets wait in a queue, and each completion
 * sends the queue as GetBatch / SetBatch RPCs, so that distinct keys share
 * one gRPC call the way duplicate ones share one in the coalescer. */
#ifndef MOMENTO_BATCHER_H
#define MOMENTO_BATCHER_H

#include "engine/call.h"
#include "engine/client.h"
#include "engine/timer.h"

#include <pthread.h>
#include <stdatomic.h>

typedef enum { MOMENTO__BOP_GET, MOMENTO__BOP_SET, MOMENTO__BOP_DELETE } momento__bop;

typedef struct momento__bmember momento__bmember;

/* A client's batcher: made the first time a request would queue, hung on
 * the client as its RPC hook (client.h), released with the client. */
typedef struct momento__batcher {
    momento_client *client;
    momento__rpc_hook hook;   /* rpc_done: sends the queue; release */
    pthread_mutex_t lock;     /* guards all below and every member's state */
    momento__bmember *queue;  /* FIFO */
    size_t n_queued;
    atomic_size_t n_queued_writes; /* sets and deletes in the queue: later writes queue
                                    * behind (changed under the lock, read without) */
    momento__timer linger;    /* sends the queue L us after it started */
    bool linger_armed;
    momento__timer deadline;  /* the earliest deadline in the queue */
    bool deadline_armed;
    momento_client_batching_stats counters;
} momento__batcher;

/* A checked get, set or delete with resolved options, through the
 * batcher: queued for a batch when the client has enough RPCs in flight
 * (never when `opts->unbatched`), else sent at once (kv_send.h). Return as
 * momento_get() and friends. */
int momento__batcher_get(momento_client *c, const char *cache, const void *key, size_t key_len,
                         const momento__call_opts *opts, momento_callback cb, void *userdata);
int momento__batcher_set(momento_client *c, const char *cache, const void *key, size_t key_len,
                         const void *value, size_t value_len, uint64_t ttl_ms,
                         const momento__call_opts *opts, momento_callback cb, void *userdata);
int momento__batcher_delete(momento_client *c, const char *cache, const void *key, size_t key_len,
                            const momento__call_opts *opts, momento_callback cb, void *userdata);

/* Takes back a request queued with `opts->queued` set, whose answer nobody
 * wants any more (the coalescer's abandoned RPCs): queued, it leaves the
 * queue unsent; sent in a batch, it leaves the batch, and the last member
 * to leave cancels the batch on the wire. Its callback still comes, once,
 * with MOMENTO_ERR_CANCELLED unless its answer came first. The caller
 * guarantees `m` has not been called back yet, or is being called back by
 * a callback that waits for the caller (the coalescer holds its lock, which
 * its callback takes). Any thread; lock order: the caller's, this one's. */
void momento__batcher_withdraw(momento__bmember *m);

/* Requests queued now. */
size_t momento__batcher_queued(momento_client *c);

#endif
