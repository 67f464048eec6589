/* Taking turns (turns.c): how momento-local's threads share its state, so
 * that no one request holds the others up for more than a slice.
 *
 * Everything the server keeps (the store, the calls, the timer heap,
 * topics, tokens, faults) is touched by one thread at a time: the one that
 * holds the *turn*, a first-come-first-served lock. One thread at a time is
 * the *poller*: it waits on the completion queue without the turn, then
 * takes it to answer what arrived. A request's work normally runs in one
 * go on the poller. When it runs past SRV_SLICE_NS (srv_yield(), called in
 * the loops whose length a request or a collection sets), it becomes
 * *long*: it pins the keys its request names (store_pin(): no other call
 * runs on them, no eviction or expiry frees them; calls that name one wait
 * in calls.c until it is done), hands the poller's role to another thread
 * (started on demand, at most SRV_MAX_THREADS in all), and from then on
 * gives the turn away at the end of each slice whenever another thread
 * waits for it. Work that reads nothing shared but the pinned data
 * (decoding a big request, packing a big reply, hashing a big value) is
 * done without the turn (srv_let_go() / srv_take_back()).
 *
 * When every thread is busy with a long request, a further one runs in one
 * go, as all did before: the cost is bounded, the interleaving not.
 *
 * Thread rules: srv_turn_*() from the server's threads; the rest from the
 * thread that holds the turn, inside the work calls.c begins for a call
 * (srv_work_begin()). Outside a work, srv_yield() and srv_let_go() do
 * nothing. */
#ifndef MOMENTO_LOCAL_SRV_TURNS_H
#define MOMENTO_LOCAL_SRV_TURNS_H

#include "data/srv_yield.h"
#include "data/store.h"

#include <protobuf-c/protobuf-c.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* How long a request's work runs before it gives the turn to a thread
 * waiting for it: what another call waits, at most, for each long request
 * ahead of it (plus the check's granularity, SRV_YIELD_EVERY loop steps). */
#define SRV_SLICE_NS 1000000
#define SRV_YIELD_EVERY 64
/* The poller and the threads that carry long requests. */
#define SRV_MAX_THREADS 4

typedef struct srv_turns {
    pthread_mutex_t mu;
    pthread_cond_t cv;          /* a turn given */
    pthread_cond_t role_cv;     /* the poller's role free, or quit */
    uint64_t next_ticket;       /* under mu */
    uint64_t serving;           /* under mu; the ticket whose turn it is */
    atomic_uint_fast64_t waiting; /* threads waiting for the turn */
    bool poller_busy;           /* some thread has the poller's role (under mu) */
    bool quit;                  /* under mu: threads waiting for the role leave */
    unsigned idle;              /* threads waiting for the role (under mu) */
    atomic_uint n_threads;      /* started; threads[0 .. n) are set before it grows */
    atomic_uint_fast64_t long_now; /* works that are long (momento_local_long_requests()) */
    /* With the turn (calls.c): calls being answered now, on any thread
     * (the queue is shut down only at 0), and how many works have
     * released pins so far. */
    unsigned answering;
    uint64_t releases;
    pthread_t threads[SRV_MAX_THREADS];
    void *(*body)(void *);      /* every thread's */
    void *arg;
} srv_turns;

/* The turns of a server whose threads all run `body(arg)`; the first is
 * started by srv_turns_start(), the others when a long request hands the
 * poller's role on. */
int srv_turns_init(srv_turns *t, void *(*body)(void *), void *arg);
/* Starts the first thread (the poller). Returns 0 or -1. */
int srv_turns_start(srv_turns *t);
/* Makes the threads waiting for the poller's role return false from
 * srv_turns_poll(), and every later call, then joins every thread. From a
 * thread that is not one of them, once the completion queue is shut down. */
void srv_turns_join(srv_turns *t);
void srv_turns_destroy(srv_turns *t);

/* Takes the turn, after every thread that asked before (FIFO). */
void srv_turn_take(srv_turns *t);
void srv_turn_give(srv_turns *t);
/* Whether another thread waits for the turn (a racy hint). */
bool srv_turn_wanted(srv_turns *t);

/* A thread's loop: waits (without the turn) until the poller's role is
 * free and takes it; false once the server is quitting. */
bool srv_turns_poll(srv_turns *t);
/* Whether this thread has the poller's role. */
bool srv_turns_polling(void);

/* One call's work, on the stack of the thread that answers it. */
typedef struct srv_work {
    srv_turns *turns;
    store *store;
    store_cache *cache;                      /* the cache its keys are in (NULL: none) */
    const ProtobufCMessage *req;             /* its decoded request, for the keys */
    const ProtobufCMessageDescriptor *desc;  /* ... or, read in place, its type */
    const uint8_t *body;                     /* ... and bytes */
    size_t len;
    ProtobufCMessage *unpacked;              /* that request decoded for its keys */
    /* Its pins, kept apart from the request so that they outlive it: a
     * long request's waiters go only once its request is freed and its
     * reply made, with no turn given away in between. */
    store_cache *pin_cache;
    store_pinned_key **pins;
    size_t n_pins, cap_pins;
    int64_t slice_start_ns;
    unsigned ticks;
    bool passed;     /* it handed the poller's role on (or never had it) */
    bool pinned;     /* its keys are pinned */
    bool stuck;      /* could not do either: it runs in one go */
    bool released;   /* it pinned something: calls waiting on pins may go */
    bool counted;    /* in turns->long_now */
    struct srv_work *outer;
} srv_work;

/* Makes `w` the thread's current work. */
void srv_work_begin(srv_work *w, srv_turns *t, store *st);
/* Which request it is answering (dispatch.c, once decoded; or `req` NULL
 * and the wire bytes of a request read in place): its keys are what it
 * pins. */
void srv_work_request(store_cache *c, const ProtobufCMessage *req,
                      const ProtobufCMessageDescriptor *desc, const uint8_t *body, size_t len);
/* The current work's request is answered and about to be freed
 * (dispatch.c): it is not read again; its pins stay until
 * srv_work_end(). */
void srv_work_request_done(void);
/* Unpins what is left and ends the work; returns whether it pinned
 * anything (then calls waiting behind pins should be tried again). */
bool srv_work_end(srv_work *w);

/* Whether any of the current request's keys is pinned by another work, or
 * its cache is (calls.c then holds the call back). Only when something is
 * pinned; cheap otherwise. */
bool srv_work_blocked(void);
/* The cache-wide work of FlushCache / DeleteCache: false when a long
 * request has keys pinned in `c` or another has it whole (the call waits);
 * else pins the whole cache for this work (no other call on it runs until
 * srv_work_unpin_cache()) and returns true. */
bool srv_work_pin_cache(store_cache *c);
void srv_work_unpin_cache(store_cache *c);

/* srv_yield(), srv_let_go(), srv_take_back(): srv_yield.h. Once a work
 * has run a slice, srv_yield() makes it long (above) and gives the turn to
 * whoever waits. */
/* Whether the current work is long: pinned, the poller's role passed. */
bool srv_work_long(void);

#endif
