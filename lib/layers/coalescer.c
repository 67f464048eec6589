/* Request coalescing. One uthash table, keyed by (cache name, key), holds a
 * key_state per key with requests in flight. A key_state names the get that
 * newcomers may still join (open_get) and the latest write issued
 * (last_write); each in-flight RPC is an `inflight` carrying its waiters.
 *
 * Identity is (operation, cache, key) and, for sets, value bytes and
 * effective TTL: a get joins open_get; a set joins last_write only when that
 * is a set of the same bytes and TTL; a delete joins last_write only when it
 * is a delete. Issuing a write clears open_get (read-your-writes) and
 * becomes last_write, so nothing joins a write that a later write has
 * overtaken.
 *
 * Waiters are independent (docs/coalescing.md, "Deadlines and
 * cancellation"). Each has its own deadline and its own cancel token; the
 * shared RPC carries no waiter's token, only the deadline of the waiter that
 * issued it. A joiner with a shorter deadline than the RPC's has a client
 * timer armed at it (the others need none: the RPC ends by their deadline
 * and brings their callback or re-issue). A waiter whose deadline passes or
 * whose token is cancelled leaves at once with its own callback; the last
 * to leave cancels the RPC on the wire (momento__call_cancel). When the RPC ends with DEADLINE_EXCEEDED at
 * its issuer's deadline, a waiter with time left is issued again (leading or
 * joining a new RPC) rather than failed.
 *
 * A waiter is finished exactly once, under the lock: by the RPC's completion
 * (on_done: on the completion thread, or in dispatch mode on the
 * dispatching thread, call.h `late`), by its timer (waiter_fire, on the
 * completion thread). Its token hook only marks it and makes its timer
 * fire at once.
 *
 * A new RPC is started after the lock is let go (start_outside): starting
 * one is the dearest step of a request (gRPC's call start, or the
 * batcher's queue and lock), and the completion thread needs this lock
 * for every answer, so holding it there made each side wait on the other.
 * The inflight is in the table and its issuer attached before the start,
 * marked `starting`: newcomers may join it meanwhile; an answer that comes
 * before the starter is back leaves the inflight's memory to it
 * (`finished`); waiters that all leave meanwhile leave the cancel to it;
 * and a start that is refused gives the joiners that error as their
 * callback (on the starter's thread), the issuer its return value. The
 * re-issues of on_done still start under the lock (rare, and on the
 * completion thread).
 *
 * The lock is never held while user callbacks run. Lock order (cancel.h):
 * a user's token, this lock, the batcher's, the client's. */
#include "layers/coalescer.h"
#include "layers/near.h"

#include "base/alloc.h"
#include "clock.h"
#include "engine/blocking.h"
#include "engine/respond.h"
#include "layers/batcher.h"
#include "layers/kv_send.h"
#include "layers/write.h"
#include "model/cancel.h"
#include "model/metrics.h"
#include "model/result.h"
#include "model/validate.h"

#include <stdlib.h>
#include <string.h>
#include <uthash.h>
#include <utlist.h>

/* CO_READ: a collection read, whose identity is its RPC and its packed
 * request (kept as the inflight's value). */
typedef enum { CO_GET, CO_SET, CO_DELETE, CO_READ } co_op;

typedef struct inflight inflight;

typedef enum { W_PENDING, W_ATTACHED, W_DONE } waiter_state;

typedef struct waiter {
    momento_coalescer *co;
    momento_callback cb;
    void *userdata;
    gpr_timespec deadline;          /* its own, fixed at submission */
    momento_cancel_token *token;    /* a reference, or NULL */
    momento__cancel_hook hook;
    momento__timer timer;           /* at its deadline; at once when cancelled */
    /* For the metrics hook: its method, submission time, and cache (its
     * key_state's name, which outlives it: set while attached). */
    const char *method;
    int64_t submitted_ns;
    const char *cache;
    momento_request_group *group;   /* counted in it with the client (call.h) */
    /* Guarded by the coalescer's lock: */
    waiter_state state;
    bool cancelled;
    int own_error;                  /* on_done: ends with this local error instead
                                     * of the RPC's result (0: the result) */
    const char *own_message;
    bool armed;                     /* its timer may be armed (the client's lock
                                     * guards the timer itself; this spares
                                     * taking it for waiters that have none) */
    inflight *e;                    /* while attached */
    struct waiter *prev, *next;     /* in e's waiters */
} waiter;

typedef struct key_state key_state;

struct inflight {
    momento_coalescer *co;
    key_state *ks;
    co_op op;
    momento__rpc_id rpc;       /* CO_READ: which read... */
    momento__decode_fn decode; /* ...and its decoder (the op's) */
    inflight *next_read;    /* CO_READ: in its key_state's open reads */
    uint64_t ttl_ms;        /* sets: effective TTL */
    gpr_timespec deadline;  /* the RPC's: its issuer's */
    int64_t submitted_ns;   /* its issuer's submission; 0 for a re-issue */
    momento__call *call;    /* the RPC, cancelled when the last waiter leaves... */
    momento__bmember *queued; /* ...or, batched, withdrawn from the batcher */
    size_t value_len;       /* sets: the value, kept to compare joiners and to re-issue;
                             * reads: the packed request, for the same */
    uint8_t *value;
    size_t n_waiters;
    bool embedded;          /* lives inside its key_state's allocation */
    /* A start outside the lock (start_outside): */
    bool starting;          /* its starter is not back yet */
    bool rpc_over;          /* on_done has taken its waiters: no cancel any more */
    /* CO_GET with the client's near cache: when the RPC was sent and the
     * key's write counter then, so that its answer is kept once, aged from
     * the RPC's send - not from a waiter's join, which may come later. */
    momento__near *near;
    momento__near_read near_read;
    bool finished;          /* on_done is through while starting: the starter releases */
    waiter *issuer;         /* the waiter that started it, while attached */
    waiter *waiters;        /* doubly linked, newest first */
};

/* A key with requests in flight. The first RPC of a key (with a set's value)
 * is allocated in the same block, after the id. */
struct key_state {
    UT_hash_handle hh;
    inflight *open_get;
    inflight *open_reads;   /* collection reads newcomers may join (next_read) */
    inflight *last_write;
    size_t refs;            /* in-flight RPCs of this key, and waiters being
                             * called back by their timer (waiter_fire) */
    size_t cache_len;
    size_t id_len;
    uint8_t id[];           /* cache name, NUL, key bytes; then the embedded inflight */
};

#define ALIGN_UP(n) (((n) + 15u) & ~(size_t)15u)

struct momento_coalescer {
    momento_client *client;
    pthread_mutex_t lock;   /* guards everything below, and every waiter's state */
    key_state *table;
    bool closed;
    size_t delivering;      /* on_done calls still calling waiters back: their
                             * token hooks may still take our lock */
    momento_coalescer_stats counters;
    /* Registered with the client, which tells it of the client's writes. */
    momento__write_observer observer;
    atomic_bool detached; /* the client was freed first: not registered */
};

static void close_key(momento_coalescer *co, const char *cache, size_t cache_len, const void *key,
                      size_t key_len);

/* The client's observer hooks (client.h): a write of the client's closes
 * the key here; a client freed first leaves this coalescer unregistered. */
static void key_written(momento__write_observer *o, const char *cache, size_t cache_len,
                        const void *key, size_t key_len)
{
    close_key((momento_coalescer *)((char *)o - offsetof(momento_coalescer, observer)), cache,
              cache_len, key, key_len);
}

static void client_gone(momento__write_observer *o)
{
    momento_coalescer *co =
        (momento_coalescer *)((char *)o - offsetof(momento_coalescer, observer));
    atomic_store(&co->detached, true);
}

int momento_coalescer_new(momento_coalescer **ret, momento_client *client)
{
    if (!ret || !client)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    momento_coalescer *co = momento__calloc(1, sizeof(*co));
    if (!co)
        return MOMENTO_ERR_NO_MEMORY;
    co->client = client;
    pthread_mutex_init(&co->lock, NULL);
    atomic_init(&co->detached, false);
    co->observer.written = key_written;
    co->observer.detached = client_gone;
    momento__client_observe_writes(client, &co->observer);
    *ret = co;
    return MOMENTO_OK;
}

static void destroy(momento_coalescer *co)
{
    pthread_mutex_destroy(&co->lock);
    free(co);
}

void momento_coalescer_free(momento_coalescer *co)
{
    if (!co)
        return;
    /* As every optional part of a client: its destructor deregisters. */
    if (!atomic_load(&co->detached))
        momento__client_unobserve_writes(co->client, &co->observer);
    pthread_mutex_lock(&co->lock);
    co->closed = true;
    bool drained = co->counters.keys_in_flight == 0 && co->delivering == 0;
    pthread_mutex_unlock(&co->lock);
    /* Otherwise the last completion releases it (see on_done). */
    if (drained)
        destroy(co);
}

int momento_coalescer_stats_get(const momento_coalescer *co, momento_coalescer_stats *ret,
                                size_t size)
{
    if (!co || !ret)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    momento_coalescer *mco = (momento_coalescer *)co; /* the lock is not part of the value */
    pthread_mutex_lock(&mco->lock);
    momento_coalescer_stats snapshot = co->counters;
    pthread_mutex_unlock(&mco->lock);
    memcpy(ret, &snapshot, size < sizeof(snapshot) ? size : sizeof(snapshot));
    return MOMENTO_OK;
}

static void attach(inflight *e, waiter *w)
{
    w->e = e;
    w->cache = (const char *)e->ks->id;
    w->state = W_ATTACHED;
    DL_PREPEND(e->waiters, w);
    if (++e->n_waiters > e->co->counters.peak_waiters)
        e->co->counters.peak_waiters = e->n_waiters;
}

static void detach(waiter *w)
{
    inflight *e = w->e;
    DL_DELETE(e->waiters, w);
    e->n_waiters--;
    w->e = NULL;
}

/* Newcomers can no longer join `e`. */
static void close_to_newcomers(inflight *e)
{
    if (e->ks->open_get == e)
        e->ks->open_get = NULL;
    if (e->op == CO_READ) {
        for (inflight **p = &e->ks->open_reads; *p; p = &(*p)->next_read)
            if (*p == e) {
                *p = e->next_read;
                break;
            }
    }
    if (e->ks->last_write == e)
        e->ks->last_write = NULL;
}

/* With the lock held. */
static void disarm(waiter *w)
{
    if (w->armed) {
        momento__timer_disarm(w->co->client, &w->timer);
        w->armed = false;
    }
}

/* A reference on `ks` goes; the last takes it out of the table. Returns
 * `ks` when it is to be freed (after the lock), else NULL. With the lock
 * held. */
static key_state *ks_drop(momento_coalescer *co, key_state *ks)
{
    if (--ks->refs > 0)
        return NULL;
    HASH_DELETE(hh, co->table, ks);
    return ks;
}

/* A pin on `co` (`delivering`) goes. Returns whether `co` is to be
 * destroyed now (after the lock): freed by the application, with nothing
 * in flight and no other pin. With the lock held. */
static bool unpin_locked(momento_coalescer *co)
{
    return --co->delivering == 0 && co->counters.keys_in_flight == 0 && co->closed;
}

/* A key_state made for a request that was then refused, which nothing
 * holds, goes again. With the lock held. */
static void drop_if_unused(momento_coalescer *co, key_state *ks)
{
    if (ks->refs == 0) {
        HASH_DELETE(hh, co->table, ks);
        free(ks);
    }
}

/* After its callback: the waiter's references go. A finisher on another
 * thread than the completion thread (a start refused, an answer delivered
 * in dispatch mode) may have disarmed the timer while its fire was already
 * taken: that fire still reads the waiter. */
static void waiter_free(momento_client *c, waiter *w)
{
    momento__timer_settle(c, &w->timer);
    momento_cancel_token_free(w->token);
    free(w);
}

/* Calls `w` back with `r`, once it is W_DONE and off every list: outside the
 * lock. Its hook comes off first, so no cancel touches it afterwards. */
static void waiter_deliver(momento_client *c, waiter *w, const momento_result *r)
{
    if (w->token)
        momento__cancel_hook_remove(w->token, &w->hook);
    if (momento__metrics_on(&c->cfg))
        momento__metrics_shared(&c->cfg, w->method, w->cache, w->submitted_ns,
                                MOMENTO_METRICS_COALESCED, r);
    momento__respond(c, w->group, w->cb, r, w->userdata, false);
    waiter_free(c, w);
}

/* The waiter's token was cancelled: any thread, the token's lock held. The
 * completion thread calls it back (waiter_fire), at once. */
static void waiter_cancelled(momento__cancel_hook *h)
{
    waiter *w = (waiter *)((char *)h - offsetof(waiter, hook));
    momento_coalescer *co = w->co;
    pthread_mutex_lock(&co->lock);
    if (w->state != W_DONE && !w->cancelled) {
        w->cancelled = true;
        /* A pending waiter is called back as soon as it attaches. */
        if (w->state == W_ATTACHED) {
            momento__timer_fire_soon(co->client, &w->timer);
            w->armed = true;
        }
    }
    pthread_mutex_unlock(&co->lock);
}

/* Nobody waits on `e` any more: end its RPC on the wire, and let nobody
 * join it meanwhile. on_done still comes, with no one to call. With the
 * lock held. */
static void abandon(momento_coalescer *co, inflight *e)
{
    close_to_newcomers(e);
    co->counters.rpcs_abandoned++;
    if (e->call)
        momento__call_cancel(e->call, "cancelled: every request waiting on it left");
    else if (e->queued) /* alive: its callback, on_done, needs our lock */
        momento__batcher_withdraw(e->queued);
}

/* The waiter's deadline came, or it was cancelled: it leaves its RPC with
 * its own callback. On the completion thread. */
static void waiter_fire(momento__timer *t)
{
    waiter *w = (waiter *)((char *)t - offsetof(waiter, timer));
    momento_coalescer *co = w->co;
    pthread_mutex_lock(&co->lock);
    if (w->state != W_ATTACHED) { /* finished by its RPC meanwhile */
        pthread_mutex_unlock(&co->lock);
        return;
    }
    momento_client *c = co->client;
    /* A cancel may have re-armed the timer since it was taken to fire. */
    momento__timer_disarm(c, t);
    w->armed = false;
    inflight *e = w->e;
    detach(w);
    w->state = W_DONE;
    co->counters.waiters_left++;
    if (e->issuer == w)
        e->issuer = NULL;
    /* While it is being started, its starter does this when back. */
    if (e->n_waiters == 0 && !e->starting)
        abandon(co, e);
    bool cancelled = w->cancelled;
    /* Its RPC may end on another thread while we call back (dispatch
     * mode's whole answers, a refused start): held until then are the
     * coalescer (a momento_coalescer_free() meanwhile leaves it to us) and
     * the key_state its cache name points into (the metrics hook's). */
    co->delivering++;
    key_state *ks = e->ks;
    ks->refs++;
    pthread_mutex_unlock(&co->lock);

    momento_result r;
    momento__result_local_error(
        &r, cancelled ? MOMENTO_ERR_CANCELLED : MOMENTO_ERR_TIMEOUT,
        cancelled ? "cancelled by the request's cancel token"
                  : "the request's deadline passed while it waited on a shared RPC");
    waiter_deliver(c, w, &r);

    pthread_mutex_lock(&co->lock);
    key_state *gone = ks_drop(co, ks);
    bool release = unpin_locked(co);
    pthread_mutex_unlock(&co->lock);
    free(gone);
    if (release)
        destroy(co);
}

static int submit_locked(momento_coalescer *co, co_op op, momento__rpc_id rpc,
                         momento__decode_fn decode, const char *cache, size_t cache_len,
                         const void *key, size_t key_len, const void *value, size_t value_len,
                         uint64_t ttl_ms, waiter *w, inflight **to_start);

/* Whether `w`, still attached to `e` which ended with `r`, is to be issued
 * again: the RPC timed out, and this waiter has a later deadline than the
 * RPC's and time left. A waiter never fails of another's deadline - also
 * when a server answered DEADLINE_EXCEEDED before the RPC's deadline: the
 * waiters with more time go again, under the latest of their deadlines,
 * so this happens at most once per waiter for such an answer. */
static bool wants_again(const inflight *e, const waiter *w, const momento_result *r,
                        gpr_timespec now)
{
    if (r->error != MOMENTO_ERR_TIMEOUT || w->cancelled)
        return false;
    return gpr_time_cmp(w->deadline, e->deadline) > 0 && gpr_time_cmp(now, w->deadline) < 0;
}

/* What to free once the lock is let go: after that, `e` may already be
 * gone with its key_state, which another RPC of the key frees. */
typedef struct to_free {
    inflight *e;  /* NULL when embedded */
    key_state *ks; /* NULL while other RPCs of the key hold it */
} to_free;

/* `e` is over and called back: its reference on its key_state goes, and
 * the key_state leaves the table when it was the last. With the lock held;
 * free_later() after it. */
static to_free drop_ref(momento_coalescer *co, inflight *e)
{
    return (to_free){e->embedded ? NULL : e, ks_drop(co, e->ks)};
}

static void free_later(to_free f)
{
    free(f.e);
    free(f.ks);
}

/* Completion of a shared RPC: issue again the waiters it failed for no
 * fault of theirs, detach it, then call the others back with the result. */
static void on_done(const momento_result *r, void *userdata)
{
    inflight *e = userdata;
    momento_coalescer *co = e->co;
    momento_client *c = co->client; /* a callback may free the coalescer, not the client */
    key_state *ks = e->ks;

    if (e->near) /* kept once per RPC; `ks` holds the key until `e` is released */
        momento__near_keep(e->near, e->near_read, (const char *)ks->id,
                           ks->id + ks->cache_len + 1, ks->id_len - ks->cache_len - 1, r);
    pthread_mutex_lock(&co->lock);
    close_to_newcomers(e);
    e->rpc_over = true; /* a starter not back yet must not cancel it now */
    e->issuer = NULL;   /* every waiter is taken below */
    co->counters.keys_in_flight--;
    /* Until its waiters are called back their token hooks are on, and a
     * cancel may still take our lock: a momento_coalescer_free() meanwhile
     * must not release us (`delivering`). */
    co->delivering++;
    /* ks->refs counts `e` until `e` is released, after its callbacks: an
     * embedded `e` lives inside `ks`, and the waiters' cache names point
     * into it, so another RPC of the key that ends meanwhile must not free
     * it. (A re-issue refused below frees only a key_state nothing holds.) */
    /* The clock only for an RPC that timed out: no one else goes again. */
    gpr_timespec now = r->error == MOMENTO_ERR_TIMEOUT ? gpr_now(GPR_CLOCK_MONOTONIC)
                                                       : gpr_inf_past(GPR_CLOCK_MONOTONIC);
    /* The waiter with the most time left goes again first: its RPC lives
     * longest, so the others that join it are least likely to need a third. */
    waiter *first = NULL;
    for (waiter *w = e->waiters; w; w = w->next)
        if (wants_again(e, w, r, now) &&
            (!first || gpr_time_cmp(w->deadline, first->deadline) > 0))
            first = w;
    if (first && first != e->waiters) {
        DL_DELETE(e->waiters, first);
        DL_PREPEND(e->waiters, first);
    }
    waiter *done = NULL;
    for (waiter *w = e->waiters, *next; w; w = next) {
        next = w->next;
        detach(w);
        w->own_error = 0;
        if (w->cancelled) {
            /* Its token fired before the RPC's end reached it: it ends
             * cancelled, whatever the RPC brought (its timer, fired soon,
             * finds it done). */
            w->own_error = MOMENTO_ERR_CANCELLED;
            w->own_message = "cancelled by the request's cancel token";
        } else if (wants_again(e, w, r, now)) {
            w->state = W_PENDING;
            const char *cache = (const char *)ks->id;
            int rc = submit_locked(co, e->op, e->rpc, e->decode, cache, ks->cache_len,
                                   ks->id + ks->cache_len + 1, ks->id_len - ks->cache_len - 1,
                                   e->value, e->value_len, e->ttl_ms, w, NULL);
            if (rc == MOMENTO_OK) {
                co->counters.reissued++;
                continue;
            }
            /* Not the RPC's timeout, which was another's: why it could not
             * go on. The client is being freed, as for every request it
             * ends, or there was no memory. */
            w->own_error = rc == MOMENTO_ERR_CLOSED ? MOMENTO_ERR_CANCELLED : rc;
            w->own_message = rc == MOMENTO_ERR_CLOSED
                                 ? "cancelled: the client was freed"
                                 : "could not be issued again after a shared RPC ran out of "
                                   "another request's time";
        }
        w->state = W_DONE;
        disarm(w);
        w->next = done;
        done = w;
    }
    pthread_mutex_unlock(&co->lock);

    /* No lock held: a callback may submit again (a new RPC: `e` is closed
     * to newcomers) or free the coalescer. */
    for (waiter *w = done, *next; w; w = next) {
        next = w->next;
        if (w->own_error) {
            momento_result own;
            momento__result_local_error(&own, w->own_error, w->own_message);
            waiter_deliver(c, w, &own);
        } else {
            waiter_deliver(c, w, r);
        }
    }
    pthread_mutex_lock(&co->lock);
    /* Its starter not back yet (it may answer that fast): releasing `e` is
     * the starter's, once back. */
    to_free f = {NULL, NULL};
    if (e->starting)
        e->finished = true;
    else
        f = drop_ref(co, e);
    bool release = unpin_locked(co);
    pthread_mutex_unlock(&co->lock);
    free_later(f);
    if (release)
        destroy(co);
}

/* Finds the key_state of (cache, key), or (with `create`) makes one with
 * room for an embedded inflight carrying `value_len` value bytes; *fresh
 * says which. The caller holds the lock. The id is hashed once for both
 * lookup and insert. */
static key_state *state_for(momento_coalescer *co, const char *cache, size_t cache_len,
                            const void *key, size_t key_len, size_t value_len, bool create,
                            bool *fresh, int *err)
{
    size_t id_len = cache_len + 1 + key_len;
    uint8_t stack_id[512];
    uint8_t *id = id_len <= sizeof(stack_id) ? stack_id : momento__malloc(id_len);
    if (!id) {
        *err = MOMENTO_ERR_NO_MEMORY;
        return NULL;
    }
    memcpy(id, cache, cache_len);
    id[cache_len] = 0;
    memcpy(id + cache_len + 1, key, key_len);

    unsigned hv;
    HASH_VALUE(id, id_len, hv);
    key_state *ks = NULL;
    HASH_FIND_BYHASHVALUE(hh, co->table, id, id_len, hv, ks);
    *fresh = ks == NULL;
    if (!ks && create) {
        size_t at = ALIGN_UP(sizeof(*ks) + id_len);
        ks = momento__malloc(at + sizeof(inflight) + value_len);
        if (ks) {
            memset(ks, 0, sizeof(*ks));
            ks->cache_len = cache_len;
            ks->id_len = id_len;
            memcpy(ks->id, id, id_len);
            HASH_ADD_KEYPTR_BYHASHVALUE(hh, co->table, ks->id, ks->id_len, hv, ks);
        } else {
            *err = MOMENTO_ERR_NO_MEMORY;
        }
    }
    if (id != stack_id)
        free(id);
    return ks;
}

static inflight *embedded_inflight(key_state *ks)
{
    return (inflight *)((uint8_t *)ks + ALIGN_UP(sizeof(*ks) + ks->id_len));
}

/* The open read of `ks` with this RPC and packed request, or NULL. */
static inflight *open_read(key_state *ks, momento__rpc_id rpc, const void *req, size_t req_len)
{
    for (inflight *e = ks->open_reads; e; e = e->next_read)
        if (e->rpc == rpc && e->value_len == req_len && memcmp(e->value, req, req_len) == 0)
            return e;
    return NULL;
}

static bool same_set(const inflight *e, const void *value, size_t value_len, uint64_t ttl_ms)
{
    return e->op == CO_SET && e->ttl_ms == ttl_ms && e->value_len == value_len &&
           (value_len == 0 || memcmp(e->value, value, value_len) == 0);
}

/* Starts `e`'s RPC: through the batcher for gets, sets and deletes, as
 * its own call for a collection read. `started` and `queued` receive what
 * a cancel needs (the call, or the batcher's member). Returns as the
 * batcher's calls: 0, or an error with nothing started. */
static int start_rpc(momento_coalescer *co, inflight *e, momento__call **started,
                     momento__bmember **queued)
{
    key_state *ks = e->ks;
    const char *cache = (const char *)ks->id;
    const uint8_t *key = ks->id + ks->cache_len + 1;
    size_t key_len = ks->id_len - ks->cache_len - 1;
    /* The RPC carries the issuer's deadline and no waiter's token. */
    momento__call_opts opts = {.deadline = e->deadline,
                               .submitted_ns = e->submitted_ns, /* spares the batcher a clock read */
                               .started = started,
                               .queued = queued,
                               .no_metrics = true, /* each waiter is reported */
                               .late = true};      /* no blocking call waits on it */
    switch (e->op) {
    case CO_GET:
        e->near = momento__near_of(co->client);
        if (e->near)
            e->near_read = momento__near_begin(e->near, cache, key, key_len);
        return momento__batcher_get(co->client, cache, key, key_len, &opts, on_done, e);
    case CO_SET:
        return momento__batcher_set(co->client, cache, key, key_len, e->value, e->value_len,
                                    e->ttl_ms, &opts, on_done, e);
    case CO_READ:
        opts.packed = e->value;
        opts.packed_len = e->value_len;
        return momento__call_start_with(co->client, e->rpc, e->decode, cache, NULL, &opts, on_done,
                                        e);
    case CO_DELETE:
        break;
    }
    return momento__batcher_delete(co->client, cache, key, key_len, &opts, on_done, e);
}

/* Attaches pending waiter `w` to an RPC of its request: joins the one in
 * flight that it may join, or issues one. With the lock held; on the
 * completion thread too (a waiter issued again). With `to_start`, a new
 * RPC is not started here: it is set up, `w` attached, and left in
 * *to_start for start_outside() once the lock is let go (*to_start stays
 * NULL when `w` joined). Returns 0, or an error with `w` left pending and
 * untouched. */
static int submit_locked(momento_coalescer *co, co_op op, momento__rpc_id rpc,
                         momento__decode_fn decode, const char *cache, size_t cache_len,
                         const void *key, size_t key_len, const void *value, size_t value_len,
                         uint64_t ttl_ms, waiter *w, inflight **to_start)
{
    int rc;
    bool fresh;
    key_state *ks = state_for(co, cache, cache_len, key, key_len, value_len, true, &fresh, &rc);
    if (!ks)
        return rc;

    inflight *target = NULL;
    if (op == CO_GET)
        target = ks->open_get;
    else if (op == CO_READ)
        target = open_read(ks, rpc, value, value_len);
    else if (ks->last_write && (op == CO_SET ? same_set(ks->last_write, value, value_len, ttl_ms)
                                             : ks->last_write->op == CO_DELETE))
        target = ks->last_write;

    /* A timer at its deadline only when the RPC it waits on may outlive
     * it: a joiner with a shorter deadline. Otherwise the RPC ends by then
     * and brings its callback (or its re-issue). Arming comes before
     * joining or sending, since it can fail; a cancelled waiter is called
     * back at once, which cannot fail. */
    if (w->cancelled) {
        momento__timer_fire_soon(co->client, &w->timer);
        w->armed = true;
    } else if (target && gpr_time_cmp(w->deadline, target->deadline) < 0) {
        rc = momento__timer_arm(co->client, &w->timer, momento__gpr_ns(w->deadline), true);
        if (rc != MOMENTO_OK) {
            drop_if_unused(co, ks);
            return rc;
        }
        w->armed = true;
    } else {
        disarm(w); /* issued again: no longer needed */
    }
    if (target) {
        attach(target, w);
        return MOMENTO_OK;
    }

    inflight *e = fresh ? embedded_inflight(ks) : momento__malloc(sizeof(*e) + value_len);
    if (!e) {
        drop_if_unused(co, ks);
        disarm(w);
        return MOMENTO_ERR_NO_MEMORY;
    }
    memset(e, 0, sizeof(*e));
    e->co = co;
    e->ks = ks;
    e->op = op;
    e->rpc = rpc;
    e->decode = decode;
    e->ttl_ms = ttl_ms;
    e->value_len = value_len;
    e->value = (uint8_t *)(e + 1);
    if (value_len)
        memcpy(e->value, value, value_len);
    e->embedded = fresh;
    e->deadline = w->deadline;

    if (!to_start) {
        /* Started under the lock: on_done cannot run before we return, and
         * nobody joins an RPC that ends up refused. */
        rc = start_rpc(co, e, &e->call, &e->queued);
        if (rc != MOMENTO_OK) {
            if (!fresh)
                free(e);
            drop_if_unused(co, ks);
            disarm(w);
            return rc;
        }
    } else {
        e->starting = true;
        e->issuer = w;
        e->submitted_ns = w->submitted_ns;
        co->delivering++; /* the starter comes back to the lock: keep it */
        *to_start = e;
    }
    ks->refs++;
    if (op == CO_GET) {
        ks->open_get = e;
    } else if (op == CO_READ) {
        e->next_read = ks->open_reads;
        ks->open_reads = e;
    } else {
        ks->open_get = NULL; /* later reads must observe this write */
        ks->open_reads = NULL;
        ks->last_write = e;
    }
    co->counters.keys_in_flight++;
    attach(e, w);
    return MOMENTO_OK;
}

/* The starter's pin on `co` (submit_locked's `delivering`) goes, after a
 * refused start's caller is done with `co`. */
static void unpin(momento_coalescer *co)
{
    pthread_mutex_lock(&co->lock);
    bool release = unpin_locked(co);
    pthread_mutex_unlock(&co->lock);
    if (release)
        destroy(co);
}

/* Starts `e`, which submit_locked() set up with its issuer `w` attached,
 * without the lock, then settles with what happened meanwhile. Returns 0
 * (the issuer has had or will have its one callback), or the start's
 * error: then `w` is detached and pending again, for the caller to refuse,
 * every joiner has had that error as its callback, and the caller still
 * holds the pin on `co` (unpin() when done with it). */
static int start_outside(momento_coalescer *co, inflight *e, waiter *w)
{
    momento__call *call = NULL;
    momento__bmember *queued = NULL;
    int rc = start_rpc(co, e, &call, &queued);
    int start_rc = rc;

    to_free f = {NULL, NULL};
    waiter *refused = NULL; /* joiners of a start that was refused */
    pthread_mutex_lock(&co->lock);
    e->starting = false;
    if (rc == MOMENTO_OK) {
        if (e->finished) {
            /* Answered, and everyone called back, before we were back. */
            f = drop_ref(co, e);
        } else if (!e->rpc_over) {
            e->call = call;
            e->queued = queued;
            if (e->n_waiters == 0)
                abandon(co, e); /* everyone left meanwhile (waiter_fire left it to us) */
        } /* else on_done is calling back; it frees */
    } else {
        /* Never started, so on_done never comes: undo, as if refused under
         * the lock, but for those who joined meanwhile. */
        close_to_newcomers(e);
        co->counters.keys_in_flight--;
        bool issuer_here = e->issuer == w;
        for (waiter *x = e->waiters, *next; x; x = next) {
            next = x->next;
            detach(x);
            if (issuer_here && x == w) {
                disarm(x);
                continue; /* pending again: the caller refuses it */
            }
            x->own_error = start_rc == MOMENTO_ERR_CLOSED ? MOMENTO_ERR_CANCELLED : start_rc;
            x->own_message = start_rc == MOMENTO_ERR_CLOSED
                                 ? "cancelled: the client was freed"
                                 : "the shared RPC it joined could not be started";
            /* Called back here, below: not through its timer, since the
             * client's free (CLOSED) waits for RPCs, not for timers, and
             * its cache name lives in the key state released after. In the
             * default mode this one callback runs on the submitting
             * thread, like the one whose result could not be copied
             * (docs/coalescing.md). */
            x->state = W_DONE;
            disarm(x);
            x->next = refused;
            refused = x;
        }
        if (!refused) /* else once they are called back: their cache names live in ks */
            f = drop_ref(co, e);
        if (issuer_here)
            w->state = W_PENDING;
        else
            rc = MOMENTO_OK; /* it left with its own callback meanwhile */
    }
    /* The pin goes now, unless joiners are still to be called back (their
     * token hooks may take our lock until then), or the issuer is refused:
     * then the caller still uses the coalescer, and lets go (unpin). */
    bool keep_pin = rc != MOMENTO_OK, release = false;
    if (!refused && !keep_pin)
        release = unpin_locked(co);
    pthread_mutex_unlock(&co->lock);

    for (waiter *x = refused, *next; x; x = next) {
        next = x->next;
        momento_result r;
        momento__result_local_error(&r, x->own_error, x->own_message);
        waiter_deliver(co->client, x, &r);
    }
    if (refused) {
        pthread_mutex_lock(&co->lock);
        f = drop_ref(co, e);
        if (!keep_pin)
            release = unpin_locked(co);
        pthread_mutex_unlock(&co->lock);
    }
    free_later(f);
    if (release)
        destroy(co);
    return rc;
}

static int enqueue(momento_coalescer *co, co_op op, momento__rpc_id rpc, momento__decode_fn decode,
                   const char *cache, const void *key, size_t key_len, const void *value,
                   size_t value_len, uint64_t ttl_ms, const momento__call_opts *resolved,
                   momento_callback cb, void *userdata);

/* A write of (cache, key) goes past `co`'s table: newcomers no longer join
 * what the key has in flight (read-your-writes). Takes the lock. */
static void close_key(momento_coalescer *co, const char *cache, size_t cache_len, const void *key,
                      size_t key_len)
{
    pthread_mutex_lock(&co->lock);
    bool fresh;
    int err = MOMENTO_OK;
    key_state *ks = state_for(co, cache, cache_len, key, key_len, 0, false, &fresh, &err);
    if (ks) {
        ks->open_get = NULL;
        ks->open_reads = NULL;
        ks->last_write = NULL;
    } else if (err != MOMENTO_OK) {
        /* No memory for the lookup: close every key rather than risk a
         * read that misses this write. */
        for (key_state *k = co->table; k; k = k->hh.next) {
            k->open_get = NULL;
            k->open_reads = NULL;
            k->last_write = NULL;
        }
    }
    pthread_mutex_unlock(&co->lock);
}

/* Another read concern than the client's, or headers of its own: the RPC
 * in flight may not answer as this request asked, so it goes alone, as the
 * client's own request. So does a blocking call in dispatch mode: a shared
 * RPC's answer runs on the dispatching thread (call.h `late`), which may
 * be the one waiting. */
static bool goes_alone(const momento_client *c, const momento__call_opts *resolved,
                       momento_callback cb)
{
    return resolved->read_concern || resolved->n_headers ||
           momento__blocking_goes_alone(c, cb);
}

/* The one path for gets, sets and deletes. A write is prepared once
 * (write.c), joining or leading an RPC here or going alone: a set's
 * identity is then the bytes sent (the same for the same value, algorithm
 * and level) and its effective TTL. The write notice skips this coalescer
 * only when the write goes through its table, which orders the key. */
static int submit(momento_coalescer *co, co_op op, const char *cache, const void *key,
                  size_t key_len, const void *value, size_t value_len, uint64_t ttl_ms,
                  const momento_request_options *opts, momento_callback cb, void *userdata)
{
    if (!co) {
        momento__refusal_clear();
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT, "the coalescer is NULL");
    }
    momento_client *c = co->client;
    momento__write w = {0};
    int rc;
    if (op == CO_SET)
        rc = momento__write_begin(&w, c, &co->observer, cache, key, key_len, value, value_len,
                                  ttl_ms, opts, cb);
    else
        rc = momento__check_key_request(c, cache, key, key_len, opts, cb);
    if (rc != MOMENTO_OK)
        return rc;
    if (op == CO_DELETE)
        momento__client_note_write(c, &co->observer, cache, key, key_len);
    momento__call_opts resolved;
    momento__call_opts_from(c, opts, &resolved);
    bool alone = goes_alone(c, &resolved, cb);
    if (alone && op != CO_GET) /* not through the table: it must hear of it too */
        close_key(co, cache, strlen(cache), key, key_len);
    if (alone) {
        if (op == CO_GET)
            rc = momento__batcher_get(c, cache, key, key_len, &resolved, cb, userdata);
        else if (op == CO_SET)
            rc = momento__batcher_set(c, cache, key, key_len, w.value, w.value_len, w.ttl_ms,
                                      &resolved, cb, userdata);
        else
            rc = momento__batcher_delete(c, cache, key, key_len, &resolved, cb, userdata);
    } else {
        rc = enqueue(co, op, MOMENTO__RPC_GET, NULL, cache, key, key_len, w.value,
                     op == CO_SET ? w.value_len : 0, w.ttl_ms, &resolved, cb, userdata);
    }
    momento__write_end(&w); /* copied at submit */
    return rc;
}

/* A checked request: a waiter for it, attached to an RPC of its own or one
 * it joins. Returns as the public calls. */
static int enqueue(momento_coalescer *co, co_op op, momento__rpc_id rpc, momento__decode_fn decode,
                   const char *cache, const void *key, size_t key_len, const void *value,
                   size_t value_len, uint64_t ttl_ms, const momento__call_opts *resolved,
                   momento_callback cb, void *userdata)
{
    int rc;
    waiter *w = momento__malloc(sizeof(*w));
    if (!w)
        return MOMENTO_ERR_NO_MEMORY;
    memset(w, 0, sizeof(*w));
    w->co = co;
    w->cb = cb;
    w->userdata = userdata;
    w->deadline = resolved->deadline;
    w->submitted_ns = resolved->submitted_ns;
    w->group = resolved->group;
    w->method = momento__rpcs[op == CO_SET      ? MOMENTO__RPC_SET
                              : op == CO_DELETE ? MOMENTO__RPC_DELETE
                              : op == CO_READ   ? rpc
                                                : MOMENTO__RPC_GET].name;
    w->state = W_PENDING;
    momento__timer_init(&w->timer, waiter_fire);
    if (resolved->token) {
        /* Hung before the lock (the token's lock comes first): a cancel
         * from here on marks the waiter, and it is called back as soon as
         * it is attached. */
        w->token = momento_cancel_token_ref(resolved->token);
        w->hook.fire = waiter_cancelled;
        if (momento__cancel_hook_add(w->token, &w->hook) != MOMENTO_OK) {
            waiter_free(co->client, w);
            return MOMENTO_ERR_CANCELLED;
        }
    }

    uint64_t *requests = op == CO_GET    ? &co->counters.get_requests
                         : op == CO_SET  ? &co->counters.set_requests
                         : op == CO_READ ? &co->counters.read_requests
                                         : &co->counters.delete_requests;
    uint64_t *coalesced = op == CO_GET    ? &co->counters.get_coalesced
                          : op == CO_SET  ? &co->counters.set_coalesced
                          : op == CO_READ ? &co->counters.read_coalesced
                                          : &co->counters.delete_coalesced;

    /* Counted before it can be answered; given back if refused. */
    momento__request_accepted(co->client, w->group);
    pthread_mutex_lock(&co->lock);
    uint64_t in_flight = co->counters.keys_in_flight;
    /* A freed coalescer takes no new request; the waiters it has may still
     * be issued again (submit_locked) and keep it until their end. */
    inflight *to_start = NULL;
    rc = co->closed ? momento__refuse(MOMENTO_ERR_CLOSED, "the coalescer is being freed")
                    : submit_locked(co, op, rpc, decode, cache, strlen(cache), key, key_len, value,
                                    value_len, ttl_ms, w, &to_start);
    if (rc == MOMENTO_OK) {
        (*requests)++;
        if (co->counters.keys_in_flight == in_flight)
            (*coalesced)++; /* joined: no RPC was added */
    }
    pthread_mutex_unlock(&co->lock);
    bool start_refused = to_start && (rc = start_outside(co, to_start, w)) != MOMENTO_OK;
    if (start_refused) {
        pthread_mutex_lock(&co->lock);
        (*requests)--; /* refused after all */
        pthread_mutex_unlock(&co->lock);
    }
    if (rc != MOMENTO_OK) {
        if (w->token)
            momento__cancel_hook_remove(w->token, &w->hook);
        momento__request_done(co->client, w->group);
        waiter_free(co->client, w); /* a cancel's fire may still take co's lock */
    }
    if (start_refused) /* start_outside() left us its pin on co */
        unpin(co);
    return rc;
}

/* A coalesced get as it goes to Momento (the near cache's `send`). */
static int get_sent(void *target, const char *cache, const void *key, size_t key_len,
                    const momento_request_options *opts, momento_callback cb, void *userdata)
{
    return submit(target, CO_GET, cache, key, key_len, NULL, 0, 0, opts, cb, userdata);
}

/* The client's near cache for a coalesced get, or NULL (as the client's
 * own gets: near.h). */
static momento__near *near_for(momento_coalescer *co, const char *cache, const void *key,
                               size_t key_len, const momento_request_options *opts,
                               momento_callback cb)
{
    if (!co || momento__check_key_request(co->client, cache, key, key_len, opts, cb) != MOMENTO_OK)
        return NULL; /* refused by submit(), as it says */
    return momento__near_for_get(co->client, opts, true);
}

int momento_coalescing_get(momento_coalescer *co, const char *cache, const void *key,
                           size_t key_len, const momento_request_options *opts,
                           momento_callback cb, void *userdata)
{
    momento__near *n = near_for(co, cache, key, key_len, opts, cb);
    if (n) /* answered from memory, or sent; the RPC's answer is kept by on_done */
        return momento__near_get(n, co->client, co, get_sent, false, cache, key, key_len, opts,
                                 cb, userdata);
    return get_sent(co, cache, key, key_len, opts, cb, userdata);
}

int momento_coalescing_set(momento_coalescer *co, const char *cache, const void *key,
                           size_t key_len, const void *value, size_t value_len, uint64_t ttl_ms,
                           const momento_request_options *opts, momento_callback cb,
                           void *userdata)
{
    return submit(co, CO_SET, cache, key, key_len, value, value_len, ttl_ms, opts, cb, userdata);
}

int momento_coalescing_delete(momento_coalescer *co, const char *cache, const void *key,
                              size_t key_len, const momento_request_options *opts,
                              momento_callback cb, void *userdata)
{
    return submit(co, CO_DELETE, cache, key, key_len, NULL, 0, 0, opts, cb, userdata);
}

/* Blocking variants: the coalescing call plus a wait, as for the client's. */
int momento_coalescing_get_sync(momento_coalescer *co, const char *cache, const void *key,
                                size_t key_len, const momento_request_options *opts,
                                momento_result **ret)
{
    momento_client *c = co ? co->client : NULL; /* the client MOMENTO__SYNC waits on */
    /* A near cache answers it or keeps its RPC's answer (on_done), as for
     * the asynchronous form. */
    MOMENTO__SYNC(momento_coalescing_get(co, cache, key, key_len, opts, MOMENTO__SYNC_CB));
}

int momento_coalescing_set_sync(momento_coalescer *co, const char *cache, const void *key,
                                size_t key_len, const void *value, size_t value_len,
                                uint64_t ttl_ms, const momento_request_options *opts,
                                momento_result **ret)
{
    momento_client *c = co ? co->client : NULL; /* the client MOMENTO__SYNC waits on */
    MOMENTO__SYNC(momento_coalescing_set(co, cache, key, key_len, value, value_len, ttl_ms, opts,
                                         MOMENTO__SYNC_CB));
}

int momento_coalescing_delete_sync(momento_coalescer *co, const char *cache, const void *key,
                                   size_t key_len, const momento_request_options *opts,
                                   momento_result **ret)
{
    momento_client *c = co ? co->client : NULL; /* the client MOMENTO__SYNC waits on */
    MOMENTO__SYNC(momento_coalescing_delete(co, cache, key, key_len, opts, MOMENTO__SYNC_CB));
}

momento_client *momento__coalescer_client(const momento_coalescer *co)
{
    return co ? co->client : NULL;
}

int momento__coalesce_read(momento_coalescer *co, momento__rpc_id rpc, momento__decode_fn decode,
                           const char *cache, const void *name, size_t name_len,
                           const ProtobufCMessage *req, const momento_request_options *opts,
                           momento_callback cb, void *userdata)
{
    /* The identity: the request as packed (protobuf-c packs fields in
     * number order, so equal requests pack to equal bytes). */
    size_t len = protobuf_c_message_get_packed_size(req);
    uint8_t stack[256];
    uint8_t *packed = len <= sizeof(stack) ? stack : momento__malloc(len);
    if (!packed)
        return MOMENTO_ERR_NO_MEMORY;
    protobuf_c_message_pack(req, packed);
    momento__call_opts resolved;
    momento__call_opts_from(co->client, opts, &resolved);
    int rc;
    if (goes_alone(co->client, &resolved, cb)) {
        resolved.packed = packed;
        resolved.packed_len = len;
        rc = momento__call_start_with(co->client, rpc, decode, cache, NULL, &resolved, cb,
                                      userdata);
    } else {
        rc = enqueue(co, CO_READ, rpc, decode, cache, name, name_len, packed, len, 0, &resolved, cb,
                     userdata);
    }
    if (packed != stack)
        free(packed);
    return rc;
}
