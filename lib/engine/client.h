/* The client (client.c): its transports, the state its completion thread
 * (completion.c) and timers (timer.c) share, and the one place that
 * decides how long a request lives. A request is accepted
 * (momento__client_accept), may change what it has on the wire between
 * attempts
 * (momento__client_publish), and is retired (momento__client_retire) once
 * its callback has returned, or at once when it is refused after all.
 * momento_client_free() cancels what is tracked and waits for the last
 * retirement; called from a callback, it leaves the release to the
 * completion thread. */
#ifndef MOMENTO_CLIENT_H
#define MOMENTO_CLIENT_H

#include "engine/dispatch.h"
#include "engine/retry.h"
#include "engine/timer.h"
#include "heap.h"
#include "model/config.h"
#include "model/credentials.h"
#include "transport/transport.h"

#include <grpc/grpc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>


/* One accepted request, as the client sees it: embedded in the call. */
typedef struct momento__tracked {
    struct momento__tracked *prev, *next;
    /* What is on the wire for it now, NULL between attempts: a call's or a
     * subscription's stream's transport attempt (transport/transport.h);
     * ended by `cancel` (any thread, under the client's lock). */
    void *call;
    void (*cancel)(void *call, const char *why);
    bool cancelled;  /* by its token: every later gRPC call is cancelled at once */
    bool answered;   /* no longer counted in n_rpcs (momento__client_answered) */
    const char *cancel_why;
    /* Fired by a cancel or momento_client_free() when the request has no
     * gRPC call to cancel right then: the timer it waits on (a call queued
     * under the cap, waiting to retry or holding an early
     * DEADLINE_EXCEEDED; a subscription waiting to resubscribe; a member's
     * END); NULL when there is nothing to fire. */
    struct momento__timer *wake;
} momento__tracked;



/* Requests waiting for a place under the client's cap (call.c). Lock
 * order: this lock, then the client's. */
typedef struct momento__gate {
    pthread_mutex_t lock;
    uint32_t busy;              /* places taken */
    size_t queued;
    struct momento__call *head, *tail;
} momento__gate;

/* An optional part of the client that hears of every write submitted
 * through it (a coalescer, coalescer.c: a read issued after a write must
 * never join one issued before it). Embedded in its owner, which registers
 * it (momento__client_observe_writes) and, in its destructor, deregisters
 * it; the client knows nothing else of it. */
typedef struct momento__write_observer {
    struct momento__write_observer *prev, *next;
    /* A write of (cache, key) is being submitted (momento__client_note_
     * write): any thread, the client's observer lock held, so it takes only
     * locks of its own. */
    void (*written)(struct momento__write_observer *o, const char *cache, size_t cache_len,
                    const void *key, size_t key_len);
    /* Every key of `cache` is being written at once: the cache is being
     * flushed or deleted (momento__client_note_flush). NULL: not told. As
     * `written`: any thread, under the client's observer lock. */
    void (*flushed)(struct momento__write_observer *o, const char *cache, size_t cache_len);
    /* The client is being freed while the observer is registered: it is
     * off the list from now on and must not deregister. Under the same
     * lock; on the freeing thread. */
    void (*detached)(struct momento__write_observer *o);
} momento__write_observer;

/* The optional part of the client that hears of each RPC's end: the
 * batcher (batcher.c), which sends its queue then. The client holds at most
 * one, installed by the part itself the first time it is needed
 * (momento__client_install_rpc_hook), and knows nothing else of it; the
 * client's release is the part's too. */
typedef struct momento__rpc_hook {
    /* An RPC of the client is over (retired, or its reply held for a late
     * delivery), n_rpcs already lowered. Any thread, no client lock held. */
    void (*rpc_done)(struct momento__rpc_hook *h);
    /* The client is being released, every request retired: the part frees
     * itself. */
    void (*release)(struct momento__rpc_hook *h);
} momento__rpc_hook;

/* An optional part the client owns: the near cache (layers/near.c), made
 * by the part itself on first use (momento__client_install_near), and its
 * invalidation (layers/near_sync.c), made with the client; each
 * released with the client, every request retired; the client knows
 * nothing else of it. */
typedef struct momento__part {
    void (*release)(struct momento__part *p);
} momento__part;

/* The config's (MOMENTO_MAX_CLIENT_HEADERS) and tests' own. */
#define MOMENTO__MAX_EXTRA_HEADERS 16
#define MOMENTO__MAX_ADOPTED 4

struct momento_client {
    momento_config cfg;
    momento_credentials creds;
    pthread_t thread;
    /* What the completion thread runs (completion.c), and where every
     * RPC's attempts and subscriptions' streams go unless routed
     * elsewhere: the gRPC transport, opened with the others by
     * momento__transports_open() (transport/transports.h). */
    momento__transport *transport;
    /* The transport each RPC's attempts go through (call.c): `transport`
     * for all but those momento__client_route() gave another. */
    momento__transport *routes[MOMENTO__RPC_COUNT];
    /* Transports besides `transport` that the client closes when freed
     * (momento__client_adopt), oldest first. */
    momento__transport *adopted[MOMENTO__MAX_ADOPTED];
    size_t n_adopted;
    /* Those of them with no thread of their own (momento_config_set_dispatch_io()):
     * stepped by momento_client_dispatch(), the free and blocking waits
     * (momento__client_step), and watched through `dispatch_poll`, an epoll
     * set of their poll fds and the dispatch queue's eventfd (-1: none). */
    momento__transport *stepped[MOMENTO__MAX_ADOPTED];
    size_t n_stepped;
    int dispatch_poll;
    atomic_bool agent_sent;
    grpc_slice auth_value;
    bool token_in_log_filter;    /* the token is cut out of log messages */

    /* Extra request headers for tests (fault injection); set before the
     * first call, see momento__client_add_header(). */
    grpc_metadata extra_md[MOMENTO__MAX_EXTRA_HEADERS];
    size_t n_extra_md;

    pthread_mutex_t lock;        /* guards everything below */
    pthread_cond_t drained;
    momento__tracked *in_flight; /* doubly linked, for cancellation at free */
    size_t n_in_flight;
    momento__retries retries;    /* the retry policy's jitter (retry.c) */
    momento__heap timers;        /* armed momento__timers, by due_ns: every
                                  * wait of the completion thread, retries' too */
    momento__timer *soon;        /* timers due at once (no allocation: cannot fail) */
    /* Attempts other transports finished on their own threads, for the
     * completion thread to call done() on (momento__completion_post;
     * oldest first). */
    momento__attempt *posted, *posted_tail;
    atomic_bool any_posted;      /* not under the lock: the loop's cheap look */
    atomic_bool any_timer;       /* `timers` or `soon` holds one; written under the
                                  * lock, read without it by the loop (completion.c) */
    /* The timer whose fire runs now: set under the lock when it is taken,
     * cleared (release) after its fire returns (momento__timer_settle). */
    _Atomic(momento__timer *) firing;
    /* Its RPC hook, or NULL: read once per retirement, so an unbatched
     * client pays one load for it. */
    _Atomic(momento__rpc_hook *) rpc_hook;
    _Atomic(momento__part *) near; /* the near cache, once made */
    /* Invalidation across clients (layers/near_sync.c), made by the
     * config's on_client_new before the client is handed out; NULL: none. */
    momento__part *near_sync;
    momento__gate gate;          /* the cap on requests in flight (call.c) */
    momento__dispatcher dispatch; /* callbacks queued for momento_client_dispatch() */
    /* cfg.metrics_lock in dispatch mode with a hook (config.h): its hook
     * calls run on the completion thread and on the dispatching one. */
    pthread_mutex_t metrics_lock;
    atomic_size_t n_rpcs;        /* accepted gRPC calls not yet retired (batching's N) */
    /* The application's requests accepted whose callback has not returned
     * (momento_client_in_flight, momento_client_wait_idle): one per
     * request, coalesced waiter, batched or queued one; never the RPCs the
     * library makes for itself, nor subscriptions. `idle` is broadcast
     * under `lock` when it drops to 0. */
    atomic_size_t n_requests;
    pthread_cond_t idle;
    atomic_bool closing;         /* momento_client_free() has begun; written only
                                  * by client.c, under `lock`; read without it by
                                  * momento__client_closing(), on every queued
                                  * request's path */
    bool free_deferred;          /* ...from the completion thread itself */
    /* What frees the client (client.c's): the completion thread calls it
     * as it ends after a deferred free (momento__completion_start). */
    void (*release)(momento_client *c);

    /* What is told of the client's writes (momento__write_observer: its
     * coalescers). The count spares the lock when there is none. */
    pthread_mutex_t observers_lock;
    momento__write_observer *write_observers;
    atomic_size_t n_write_observers;

    /* Topic subscriptions' streams that newcomers to the same topic may
     * share (subscription.c); a short list: one per topic in use. */
    pthread_mutex_t topics_lock;
    struct sub_group *topic_groups;
    /* Streams the client's subscription groups hold places for (one per
     * live group, shared or not), at most cfg.stream_channels x
     * MOMENTO_STREAMS_PER_CONNECTION; under topics_lock. */
    uint32_t n_streams;
};

/* Installs `h` unless a hook is installed already; returns the one that is
 * (then `h` is not used). Any thread. */
momento__rpc_hook *momento__client_install_rpc_hook(momento_client *c, momento__rpc_hook *h);
/* Installs `p` as the client's near cache unless one is already: returns
 * the one installed (the caller releases `p` when it is not). */
momento__part *momento__client_install_near(momento_client *c, momento__part *p);
/* Tells the RPC hook that an RPC is over without its retirement (call.c:
 * a reply held for a late delivery; momento__client_retire tells it too). */
void momento__client_rpc_ended(momento_client *c);

/* Registers `o` to hear of the writes of `c`, until its owner deregisters
 * it or the client's free detaches it (o->detached). Any thread. */
void momento__client_observe_writes(momento_client *c, momento__write_observer *o);
void momento__client_unobserve_writes(momento_client *c, momento__write_observer *o);
/* A write of (cache, key) is being submitted through `c`: every observer
 * but `self` (the one the write goes through, which orders the key itself;
 * NULL for none; registered) hears of it. One atomic load when there is
 * none but `self`. Any
 * thread, holding no observer's lock; takes the observer lock, then what
 * each observer takes. */
void momento__client_note_write(momento_client *c, const momento__write_observer *self,
                                const char *cache, const void *key, size_t key_len);
/* The same for every key of `cache` at once: a flush or a delete of the
 * cache is being submitted. */
void momento__client_note_flush(momento_client *c, const char *cache);

/* Accepts a request whose first attempt (a transport's, or a subscription's
 * gRPC call; `t->cancel` ends it) is `gc`: from now on exactly one
 * callback must follow, then momento__client_retire(). Returns 0, or
 * MOMENTO_ERR_CLOSED once the client is being freed (nothing tracked). */
int momento__client_accept(momento_client *c, momento__tracked *t, void *gc);
/* Makes `gc` the request's current attempt (NULL between attempts), so
 * that momento_client_free() cancels the right one; a call published once
 * the free has begun is cancelled at once. Returns the previous. */
void *momento__client_publish(momento_client *c, momento__tracked *t, void *gc);
/* The request's attempt is over and it waits on `wake` (a timer of its
 * own, armed by the caller: its next attempt, or its callback): it has no
 * gRPC call from now on, and a cancel or momento_client_free() fires
 * `wake` at once instead - also one that came before this call, so that
 * none is missed between the end of the gRPC call and the wait. Returns the
 * attempt it had, for the caller to give back. Any thread. */
void *momento__client_wait_on(momento_client *c, momento__tracked *t,
                                   struct momento__timer *wake);
/* The request's `wake` is forgotten (under the lock, so no free's sweep
 * fires it from now on); returns it, for the caller to disarm. */
struct momento__timer *momento__client_unwake(momento_client *c, momento__tracked *t);
/* The request's RPC is over and its callback about to run: it stops
 * counting towards batching's threshold now, so that a request submitted
 * from the callback, or by a thread the callback wakes, is not queued
 * behind an RPC that is already done. On the completion thread. */
void momento__client_answered(momento_client *c, momento__tracked *t);
/* Forgets an accepted request: after its callback has returned, or when it
 * is refused after all (then no callback runs). */
void momento__client_retire(momento_client *c, momento__tracked *t);
/* Whether momento_client_free() has begun. */
bool momento__client_closing(momento_client *c);
/* Callbacks of `c` queued for momento_client_dispatch(), or being run by
 * it (tests, lib/testing.h). Any thread. */
size_t momento__dispatch_queued(momento_client *c);

/* Cancels an accepted request (any thread, from a cancel token's hook): its
 * current gRPC call ends with CANCELLED and `why`; without one, its `wake`
 * fires at once instead (a retry waiting, say, ends now); and any later
 * attempt is cancelled as it starts. Also before acceptance: then the
 * request is cancelled as it is accepted. */
void momento__client_cancel(momento_client *c, momento__tracked *t, const char *why);

/* An application's request was accepted: counted until its callback has
 * returned (momento__request_done, from respond.c's momento__respond, or
 * after a dispatched callback), and in its group `g` (NULL: none) as long
 * (model/group.h). Called before the request can complete; a request refused after it
 * gives the count back with momento__request_done too. Any thread. */
void momento__request_accepted(momento_client *c, momento_request_group *g);
void momento__request_done(momento_client *c, momento_request_group *g);

/* Whether the request was cancelled by momento__client_cancel(). */
bool momento__client_cancelled(momento_client *c, momento__tracked *t);



/* Sends the attempts of RPC `m` through `t` from now on, which must
 * outlive the client (the client neither runs nor closes it: the
 * transport's own thread completes them, through t->post, which this
 * sets). Not locked: call it before `c` makes a call of `m`. The client
 * routes what momento__transports_open() says with it; the tests of the
 * seam (tests/lib/test_transport.c) route their own. Returns 0, or
 * MOMENTO_ERR_INVALID_ARGUMENT. */
int momento__client_route(momento_client *c, momento__rpc_id m, momento__transport *t);

/* Makes `t` the client's to close: once momento_client_free() has seen
 * every request retired and the completion thread end (so no attempt of
 * `t` is under way and nothing will post), it calls t->ops->shutdown, then
 * t->ops->close, which gives back everything `t` holds, its own thread
 * included, and frees it. `t` is never run by the loop: its close drains
 * what it has itself. Not locked: call it at the client's making, before
 * any request; route RPCs to it with momento__client_route(). Returns 0,
 * or MOMENTO_ERR_INVALID_ARGUMENT (NULL, no shutdown or close op, more than
 * MOMENTO__MAX_ADOPTED) - then `t` is still the caller's. */
int momento__client_adopt(momento_client *c, momento__transport *t);

/* Works the client's transports that have no thread of their own
 * (`stepped`) on the calling thread: one turn each, the first waiting up to
 * `timeout_ms` for work. Returns false, doing nothing, when it has none:
 * then a waiting thread waits as usual. Any thread, no lock of the
 * client's held. */
bool momento__client_step(momento_client *c, int timeout_ms);
/* One round of a wait for what `c`'s transports finish, `mu` held (and
 * held again on return): a wait on `cv` - or, when some transport has no
 * thread to finish anything, a step of it (up to `step_ms`) with `mu`
 * released. The caller loops on its own condition. */
void momento__client_wait_or_step(momento_client *c, pthread_cond_t *cv, pthread_mutex_t *mu,
                                  int step_ms);

/* Adds a header sent with every later call of `c`. For tests only: it is not
 * locked, so call it before the client is used. Returns 0 or an error. */
int momento__client_add_header(momento_client *c, const char *key, const char *value);

#endif
