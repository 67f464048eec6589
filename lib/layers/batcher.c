/* Adaptive batching. A get or set offered while the client has N RPCs in
 * flight becomes a queued member (with copies of its cache, key and value);
 * each RPC retirement - or, at the latest, the bound W after the queue
 * started (the linger timer) - then sends the whole queue: gets as GetBatch and sets
 * as SetBatch RPCs, one per cache, split at M keys and B bytes, in the order
 * of their first member. A group of one leaves as a plain Get or Set. Light
 * load never queues, so it sees no added latency.
 *
 * Every member keeps what a single request has (docs/batching.md):
 * - its own callback, once: with its item of the batch's reply, or with the
 *   batch's error (the status mapped as for a single call);
 * - its deadline: while queued, one timer at the queue's earliest deadline
 *   ends the members whose time is up, and they never reach the wire; a batch's deadline is its members' earliest,
 *   so nobody waits past its own, and a member with time left when a batch
 *   runs out of another's is queued again;
 * - its token: a cancel ends it at once (queued: it is never sent; sent: it
 *   leaves the batch, and the last to leave cancels the RPC on the wire);
 * - retries: GetBatch and SetBatch are idempotent, like Get and Set;
 * - its own answer: a member whose item failed, or whose batch failed in a
 *   way that may be another key's doing, is queued again `alone` and
 *   leaves as a plain call (may_be_one_keys()).
 * Write order: once a set or delete is queued, every later set and delete
 * of the client queues behind it (a delete leaves alone, after the sets
 * queued before it have left), so two writes of one key issued in order
 * leave in order, on the channel round robin, as unqueued writes do.
 *
 * Members' states are guarded by the batcher's lock; callbacks run on the
 * completion thread with no lock held (a batch's answer, in dispatch mode,
 * on the dispatching thread: call.h `late`). A flush takes the queue under the
 * lock and sends it without (an offer on another thread never waits for an
 * RPC's start); what else could touch the taken members runs on the
 * completion thread too, after it. Lock order: a token, this lock, the
 * client's lock. */
#include "layers/batcher.h"

#include "base/alloc.h"
#include "clock.h"
#include "engine/blocking.h"
#include "engine/client.h"
#include "engine/completion.h"
#include "engine/respond.h"
#include "layers/kv_send.h"
#include "model/cancel.h"
#include "model/metrics.h"
#include "model/result.h"
#include "model/validate.h"

#include "cacheclient.pb-c.h"

#include <stdlib.h>
#include <string.h>
#include <utlist.h>

/* M_PENDING: being offered, not yet queued (a cancel then only marks it). */
typedef enum { M_PENDING, M_QUEUED, M_SENT, M_DONE } member_state;

typedef struct batch batch;

struct momento__bmember {
    momento__bmember *prev, *next; /* in the queue; `next` also links a flush's work */
    momento_client *client;
    momento__bop op;
    momento_callback cb;
    void *userdata;
    gpr_timespec deadline;
    momento_cancel_token *token;   /* a reference, or NULL */
    momento__cancel_hook hook;
    momento__timer timer;          /* fires at once when cancelled (never armed at a time) */
    bool armed;                    /* ...and is on the client's list for that */
    member_state state;
    bool cancelled;
    bool alone;                    /* re-asked: leaves as a plain call, never in a batch */
    int own_error;                 /* batch_done: ends with this local error, not
                                    * the batch's result (0: the result) */
    const char *own_message;
    batch *in;                     /* while sent */
    size_t index;                  /* ...its place there */
    int64_t queued_ns;
    int64_t submitted_ns;          /* for the metrics hook */
    bool no_metrics;               /* a coalescer's RPC: its waiters are reported */
    momento_request_group *group;  /* counted in it with the client (call.h) */
    uint64_t ttl_ms;
    size_t cache_len, key_len, value_len;
    uint8_t data[];                /* cache, NUL, key, value */
};

struct batch {
    momento_client *client;
    momento__bop op;
    momento__call *call;
    size_t n, attached;
    batch *next_sent;            /* in its flush's list of batches sent */
    momento__bmember *members[]; /* NULL once that member left */
};

static const char *m_cache(const momento__bmember *m)
{
    return (const char *)m->data;
}

static const uint8_t *m_key(const momento__bmember *m)
{
    return m->data + m->cache_len + 1;
}

static const uint8_t *m_value(const momento__bmember *m)
{
    return m->data + m->cache_len + 1 + m->key_len;
}

static void linger_fire(momento__timer *t);
static void deadline_fire(momento__timer *t);

static void rpc_done(momento__rpc_hook *h);

static void release(momento__rpc_hook *h)
{
    momento__batcher *b = (momento__batcher *)((char *)h - offsetof(momento__batcher, hook));
    pthread_mutex_destroy(&b->lock);
    free(b);
}

/* The batcher of `c`, or NULL when it has none (yet). */
static momento__batcher *batcher_of(momento_client *c)
{
    momento__rpc_hook *h = atomic_load(&c->rpc_hook);
    return h && h->rpc_done == rpc_done
               ? (momento__batcher *)((char *)h - offsetof(momento__batcher, hook))
               : NULL;
}

/* The batcher of `c`, made and hung on the client the first time a request
 * may queue (an unbatched client never has one). NULL without memory for
 * it: the request then goes alone, as it would have without batching. */
static momento__batcher *batcher_make(momento_client *c)
{
    momento__batcher *b = momento__calloc(1, sizeof(*b));
    if (!b)
        return NULL;
    b->client = c;
    b->hook.rpc_done = rpc_done;
    b->hook.release = release;
    atomic_init(&b->n_queued_writes, 0);
    pthread_mutex_init(&b->lock, NULL);
    momento__timer_init(&b->linger, linger_fire);
    momento__timer_init(&b->deadline, deadline_fire);
    /* Another thread may have made one meanwhile: that one stays. */
    if (momento__client_install_rpc_hook(c, &b->hook) != &b->hook)
        release(&b->hook);
    return batcher_of(c);
}

/* Calls `m` back with `r` and frees it: with no lock held, once it is
 * M_DONE and off every list, its timer disarmed. */
static void deliver(momento__bmember *m, const momento_result *r)
{
    if (m->token)
        momento__cancel_hook_remove(m->token, &m->hook);
    if (momento__metrics_on(&m->client->cfg) && !m->no_metrics) {
        momento__rpc_id method = m->op == MOMENTO__BOP_GET   ? MOMENTO__RPC_GET
                                 : m->op == MOMENTO__BOP_SET ? MOMENTO__RPC_SET
                                                             : MOMENTO__RPC_DELETE;
        momento__metrics_shared(&m->client->cfg, momento__rpcs[method].name, m_cache(m),
                                m->submitted_ns, MOMENTO_METRICS_BATCHED, r);
    }
    momento__respond(m->client, m->group, m->cb, r, m->userdata, m->no_metrics);
    /* Delivered in dispatch mode off the completion thread, a batch's
     * answer may have disarmed a cancel's fire already taken. */
    momento__timer_settle(m->client, &m->timer);
    momento_cancel_token_free(m->token);
    free(m);
}

static void deliver_local(momento__bmember *m, int err, const char *why)
{
    momento_result r;
    momento__result_local_error(&r, err, why);
    deliver(m, &r);
}

/* With the lock held: off the client's list of timers to fire at once. */
static void disarm(momento__bmember *m)
{
    if (m->armed) {
        momento__timer_disarm(m->client, &m->timer);
        m->armed = false;
    }
}

/* With the lock held: the queue's deadline timer covers `due_ns` too. One
 * timer for the whole queue rather than one per request: the queue usually
 * leaves long before anything in it is due, and then only this timer is
 * disarmed. Returns 0 or MOMENTO_ERR_NO_MEMORY (the timer could not be
 * armed; then the request is not queued). */
static int watch_deadline(momento_client *c, int64_t due_ns)
{
    momento__batcher *b = batcher_of(c);
    if (b->deadline_armed && b->deadline.due_ns <= due_ns)
        return MOMENTO_OK;
    int rc = momento__timer_arm(c, &b->deadline, due_ns, true);
    if (rc == MOMENTO_OK)
        b->deadline_armed = true;
    return rc;
}

/* With the lock held: takes `m` out of the queue. */
static void unqueue(momento__batcher *b, momento__bmember *m)
{
    DL_DELETE(b->queue, m);
    b->n_queued--;
    if (m->op != MOMENTO__BOP_GET)
        b->n_queued_writes--;
    uint64_t waited = (uint64_t)(momento__now_ns() - m->queued_ns);
    b->counters.queued_ns_total += waited;
    if (waited > b->counters.queued_ns_max)
        b->counters.queued_ns_max = waited;
}

/* The member's deadline came, or its token fired: it ends now, queued or
 * sent. On the completion thread. */
static void member_fire(momento__timer *t)
{
    momento__bmember *m = (momento__bmember *)((char *)t - offsetof(momento__bmember, timer));
    momento_client *c = m->client;
    momento__batcher *b = batcher_of(c);
    pthread_mutex_lock(&b->lock);
    if (m->state == M_DONE) { /* its batch answered first */
        pthread_mutex_unlock(&b->lock);
        return;
    }
    m->armed = false;
    if (m->state == M_QUEUED) {
        unqueue(b, m);
    } else {
        batch *bt = m->in;
        bt->members[m->index] = NULL;
        if (--bt->attached == 0) /* nobody waits for it any more */
            momento__call_cancel(bt->call, "cancelled: every request in the batch left");
    }
    m->state = M_DONE;
    b->counters.left_queue++;
    bool cancelled = m->cancelled;
    pthread_mutex_unlock(&b->lock);
    if (cancelled)
        deliver_local(m, MOMENTO_ERR_CANCELLED, "cancelled by the request's cancel token");
    else
        deliver_local(m, MOMENTO_ERR_TIMEOUT, "the request's deadline passed while it was batched");
}

/* The member's token was cancelled: any thread, the token's lock held. */
static void member_cancelled(momento__cancel_hook *h)
{
    momento__batcher_withdraw((momento__bmember *)((char *)h - offsetof(momento__bmember, hook)));
}

/* A cancel, by its token or by the coalescer: member_fire ends it on the
 * completion thread (a member being offered is only marked; the offer
 * refuses it). */
void momento__batcher_withdraw(momento__bmember *m)
{
    momento__batcher *b = batcher_of(m->client);
    pthread_mutex_lock(&b->lock);
    if (m->state != M_DONE && !m->cancelled) {
        m->cancelled = true;
        if (m->state != M_PENDING) {
            momento__timer_fire_soon(m->client, &m->timer);
            m->armed = true;
        }
    }
    pthread_mutex_unlock(&b->lock);
}

/* How long a queue may wait for a completion before it leaves anyway: the
 * linger L or the bound W, whichever is shorter and set; 0 = only
 * completions send it. The bound is what keeps a slow RPC in flight from
 * holding requests that have nothing to do with it (docs/batching.md "How
 * long a request waits"). */
static uint32_t queue_wait_us(const momento_config *cfg)
{
    uint32_t l = cfg->batch_linger_us, w = cfg->batch_max_wait_us;
    return !l ? w : !w ? l : l < w ? l : w;
}

/* Offers a checked get, set or delete with resolved options. Returns 1 when
 * the batcher does not take it (the caller sends it as usual), else what
 * the async call returns: 0 (queued: exactly one callback follows) or an
 * error (refused, no callback). */
static int offer(momento_client *c, momento__bop op, const char *cache, const void *key,
                 size_t key_len, const void *value, size_t value_len, uint64_t ttl_ms,
                 const momento__call_opts *opts, momento_callback cb, void *userdata)
{
    uint32_t n = c->cfg.batch_min_in_flight;
    if (n == 0)
        return 1;
    /* A blocking call in dispatch mode goes alone: a batch's answer runs
     * on the dispatching thread (call.h `late`), which may be the one
     * waiting. */
    if (momento__blocking_goes_alone(c, cb))
        return 1;
    /* A first look without the lock: the usual answer under light load,
     * for gets... */
    if (op == MOMENTO__BOP_GET && atomic_load(&c->n_rpcs) < n)
        return 1;
    /* ...and for writes when none is queued (none is without a batcher): a
     * write this thread queued earlier is seen here, since it was counted
     * before that call returned (writes of different threads have no order
     * to keep). */
    momento__batcher *b = batcher_of(c);
    if (op != MOMENTO__BOP_GET && (!b || atomic_load(&b->n_queued_writes) == 0) &&
        (op == MOMENTO__BOP_DELETE || atomic_load(&c->n_rpcs) < n))
        return 1;
    /* Made before the decision under its lock below, so that the
     * retirement that lowers n_rpcs from what that decision reads hears of
     * it (momento__client_install_rpc_hook). */
    if (!b && !(b = batcher_make(c)))
        return 1;
    if (opts->token && momento_cancel_token_is_cancelled(opts->token))
        return momento__refuse(MOMENTO_ERR_CANCELLED,
                               "the request's cancel token was already cancelled");

    size_t cache_len = strlen(cache);
    momento__bmember *m = momento__malloc(sizeof(*m) + cache_len + 1 + key_len + value_len);
    if (!m)
        return MOMENTO_ERR_NO_MEMORY;
    memset(m, 0, sizeof(*m));
    m->client = c;
    m->op = op;
    m->cb = cb;
    m->userdata = userdata;
    m->deadline = opts->deadline;
    m->submitted_ns = opts->submitted_ns;
    m->no_metrics = opts->no_metrics;
    m->group = opts->group;
    m->ttl_ms = ttl_ms;
    m->cache_len = cache_len;
    m->key_len = key_len;
    m->value_len = value_len;
    memcpy(m->data, cache, cache_len + 1);
    memcpy(m->data + cache_len + 1, key, key_len);
    if (value_len)
        memcpy(m->data + cache_len + 1 + key_len, value, value_len);
    momento__timer_init(&m->timer, member_fire);
    if (opts->token) {
        /* Hung before the lock: the token's comes first. */
        m->token = momento_cancel_token_ref(opts->token);
        m->hook.fire = member_cancelled;
        if (momento__cancel_hook_add(m->token, &m->hook) != MOMENTO_OK) {
            momento_cancel_token_free(m->token);
            free(m);
            return MOMENTO_ERR_CANCELLED;
        }
    }

    pthread_mutex_lock(&b->lock);
    /* The decision under the lock that retirements take before sending the
     * queue (rpc_done, its client hook), after lowering n_rpcs: whatever is
     * queued here, some retirement still to come will send. */
    bool behind_write = op != MOMENTO__BOP_GET && b->n_queued_writes > 0;
    bool queue = behind_write || (op != MOMENTO__BOP_DELETE && atomic_load(&c->n_rpcs) >= n);
    int rc = 1;
    if (m->cancelled) /* its token fired while it was being offered */
        rc = momento__refuse(MOMENTO_ERR_CANCELLED, "the request's cancel token was cancelled "
                                                    "while it was being submitted");
    else if (queue && momento__client_closing(c))
        rc = MOMENTO_ERR_CLOSED;
    else if (queue)
        rc = watch_deadline(c, momento__gpr_ns(m->deadline));
    if (rc == MOMENTO_OK) {
        if (!m->no_metrics) /* counted before any retirement can deliver it */
            momento__request_accepted(c, m->group);
        m->state = M_QUEUED;
        /* The submission's clock reading when it has one: microseconds
         * from now, and one clock read fewer per request. */
        m->queued_ns = opts->submitted_ns ? opts->submitted_ns : momento__now_ns();
        DL_APPEND(b->queue, m);
        b->n_queued++;
        if (op != MOMENTO__BOP_GET)
            b->n_queued_writes++;
        b->counters.queued++;
        if (opts->queued)
            *opts->queued = m;
        uint32_t wait_us = queue_wait_us(&c->cfg);
        if (b->n_queued == 1 && wait_us && !b->linger_armed) {
            /* Best effort: without it the next completion sends the queue
             * (and the request's deadline timer, armed above, still ends
             * it in time). */
            b->linger_armed = momento__timer_arm(c, &b->linger,
                                                 m->queued_ns + (int64_t)wait_us * 1000,
                                                 true) == MOMENTO_OK;
        }
    }
    pthread_mutex_unlock(&b->lock);
    if (rc != MOMENTO_OK) {
        /* Not queued: sent as usual by the caller (1), or refused. */
        if (m->token) {
            momento__cancel_hook_remove(m->token, &m->hook);
            momento_cancel_token_free(m->token);
        }
        free(m);
    }
    return rc;
}

int momento__batcher_get(momento_client *c, const char *cache, const void *key, size_t key_len,
                         const momento__call_opts *opts, momento_callback cb, void *userdata)
{
    /* Batching off (the default): straight to the wire. */
    if (!opts->unbatched && c->cfg.batch_min_in_flight) {
        int rc = offer(c, MOMENTO__BOP_GET, cache, key, key_len, NULL, 0, 0, opts, cb, userdata);
        if (rc != 1)
            return rc;
    }
    return momento__send_get(c, cache, key, key_len, opts, cb, userdata);
}

int momento__batcher_set(momento_client *c, const char *cache, const void *key, size_t key_len,
                         const void *value, size_t value_len, uint64_t ttl_ms,
                         const momento__call_opts *opts, momento_callback cb, void *userdata)
{
    if (!opts->unbatched && c->cfg.batch_min_in_flight) {
        /* Queued with the TTL it would be sent with. */
        uint64_t ttl = momento__effective_ttl(&c->cfg, ttl_ms);
        int rc = offer(c, MOMENTO__BOP_SET, cache, key, key_len, value, value_len, ttl, opts, cb,
                       userdata);
        if (rc != 1)
            return rc;
    }
    return momento__send_set(c, cache, key, key_len, value, value_len, ttl_ms, opts, cb, userdata);
}

int momento__batcher_delete(momento_client *c, const char *cache, const void *key, size_t key_len,
                            const momento__call_opts *opts, momento_callback cb, void *userdata)
{
    if (!opts->unbatched && c->cfg.batch_min_in_flight) {
        int rc = offer(c, MOMENTO__BOP_DELETE, cache, key, key_len, NULL, 0, 0, opts, cb, userdata);
        if (rc != 1)
            return rc;
    }
    return momento__send_delete(c, cache, key, key_len, opts, cb, userdata);
}

size_t momento__batcher_queued(momento_client *c)
{
    momento__batcher *b = batcher_of(c);
    if (!b)
        return 0;
    pthread_mutex_lock(&b->lock);
    size_t n = b->n_queued;
    pthread_mutex_unlock(&b->lock);
    return n;
}

int momento_client_batching_stats_get(const momento_client *c,
                                      momento_client_batching_stats *ret, size_t size)
{
    if (!c || !ret)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    /* A client that never queued has no batcher yet: its counters are 0. */
    momento_client_batching_stats snapshot;
    memset(&snapshot, 0, sizeof(snapshot));
    momento__batcher *b = batcher_of((momento_client *)c); /* read only */
    if (b) {
        pthread_mutex_lock(&b->lock);
        snapshot = b->counters;
        pthread_mutex_unlock(&b->lock);
    }
    memcpy(ret, &snapshot, size < sizeof(snapshot) ? size : sizeof(snapshot));
    return MOMENTO_OK;
}

/* Whether member `i`'s answer from batch reply `r` may be another key's
 * doing, so that alone it could have ended otherwise: its own item failed
 * (a key of another type, a value that would not decompress...), or the
 * whole batch failed with anything but what ends every request of the
 * client alike - the transport (UNAVAILABLE, no connection), the
 * credentials, a cancel, the client's free, memory - or the deadline,
 * which batch_done judges member by member. Asking such a member again
 * alone never sends more than the unbatched client would have: one plain
 * call for it (docs/batching.md "One key's failure"). */
static bool may_be_one_keys(const momento_result *r, size_t i)
{
    switch (r->error) {
    case MOMENTO_OK:
        return momento_result_item(r, i)->error != MOMENTO_OK;
    case MOMENTO_ERR_TIMEOUT:
    case MOMENTO_ERR_CANCELLED:
    case MOMENTO_ERR_SERVER_UNAVAILABLE:
    case MOMENTO_ERR_CONNECTION:
    case MOMENTO_ERR_AUTHENTICATION:
    case MOMENTO_ERR_NO_MEMORY:
    case MOMENTO_ERR_CLOSED:
        return false;
    default:
        return true;
    }
}

/* A batch's reply: each member still in it gets its own item, or the
 * batch's error; one that has time left when the batch ran out of a shorter
 * deadline than its own is queued again. */
static void batch_done(const momento_result *r, void *userdata)
{
    batch *bt = userdata;
    momento_client *c = bt->client;
    momento__batcher *b = batcher_of(c);
    momento__bmember *done = NULL, **tail = &done;
    pthread_mutex_lock(&b->lock);
    gpr_timespec now = gpr_now(GPR_CLOCK_MONOTONIC);
    bool closing = momento__client_closing(c);
    bool requeued = false;
    for (size_t i = bt->n; i-- > 0;) { /* back to front: requeued ones keep their order */
        momento__bmember *m = bt->members[i];
        if (!m)
            continue;
        /* A member never ends of another's deadline, nor ends TIMEOUT
         * before its own, nor of another's key: one cancelled meanwhile
         * ends CANCELLED; one with time left is queued again, and one whose
         * answer may be another member's doing is asked again alone (or
         * ends as the client's free ends every request, or of the memory
         * its deadline timer lacked). */
        m->own_error = 0;
        bool again = false;
        if (m->cancelled) {
            m->own_error = MOMENTO_ERR_CANCELLED;
            m->own_message = "cancelled by the request's cancel token";
        } else if (r->error == MOMENTO_ERR_TIMEOUT && gpr_time_cmp(m->deadline, now) > 0) {
            again = true;
        } else if (bt->n > 1 && may_be_one_keys(r, m->index)) {
            again = true;
            m->alone = true;
        }
        if (again) {
            if (closing) {
                m->own_error = MOMENTO_ERR_CANCELLED;
                m->own_message = "cancelled: the client was freed";
            } else if (watch_deadline(c, momento__gpr_ns(m->deadline)) != MOMENTO_OK) {
                m->own_error = MOMENTO_ERR_NO_MEMORY;
                m->own_message = m->alone ? "could not be asked again alone after its batch failed"
                                          : "could not be queued again after its batch ran out "
                                            "of another request's time";
            } else {
                m->state = M_QUEUED;
                m->in = NULL;
                m->queued_ns = momento__now_ns();
                DL_PREPEND(b->queue, m);
                b->n_queued++;
                if (m->op != MOMENTO__BOP_GET)
                    b->n_queued_writes++;
                if (m->alone)
                    b->counters.asked_alone++;
                requeued = true;
                continue;
            }
        }
        m->state = M_DONE;
        disarm(m);
        m->next = NULL;
        *tail = m;
        tail = &m->next;
    }
    /* On the completion thread this RPC's retirement, next, sends what was
     * queued again; delivered late (dispatch mode) it retired already, so
     * the completion thread is asked to. */
    if (requeued && momento__current_client != c && !b->linger_armed) {
        momento__timer_fire_soon(c, &b->linger);
        b->linger_armed = true;
    }
    pthread_mutex_unlock(&b->lock);

    /* Results in request order (the list was built back to front). */
    momento__bmember *rev = NULL;
    for (momento__bmember *m = done, *next; m; m = next) {
        next = m->next;
        m->next = rev;
        rev = m;
    }
    for (momento__bmember *m = rev, *next; m; m = next) {
        next = m->next;
        if (m->own_error) {
            deliver_local(m, m->own_error, m->own_message);
            continue;
        }
        if (bt->n == 1 || r->error != MOMENTO_OK) {
            deliver(m, r); /* a plain call's own result, or the batch's error */
            continue;
        }
        momento_result item = *momento_result_item(r, m->index);
        item.grpc_status = r->grpc_status;
        item.attempts = r->attempts;
        item.transport = r->transport;
        if (item.error == MOMENTO_OK) /* a failed item keeps its own (compress.c) */
            item.message = r->message;
        item.error_detail = r->error_detail;
        item.trailers = r->trailers;
        item.n_trailers = r->n_trailers;
        deliver(m, &item);
    }
    free(bt);
}

/* Member i of batch `src` for momento__send_batch(). */
static void member_at(const void *src, size_t i, momento__batch_item *out)
{
    const momento__bmember *m = ((const batch *)src)->members[i];
    out->key = m_key(m);
    out->key_len = m->key_len;
    out->value = m_value(m);
    out->value_len = m->value_len;
    out->ttl_ms = m->ttl_ms;
}

/* Sends `bt` (members in order, all M_QUEUED and out of the queue), without
 * the lock. Returns 0, or an error: then nothing was sent. */
static int send_batch(momento_client *c, batch *bt)
{
    momento__bmember *first = bt->members[0];
    gpr_timespec deadline = first->deadline;
    for (size_t i = 1; i < bt->n; i++)
        if (gpr_time_cmp(bt->members[i]->deadline, deadline) < 0)
            deadline = bt->members[i]->deadline;
    momento__call_opts opts = {.deadline = deadline,
                               .started = &bt->call,
                               .unbatched = true,
                               .no_metrics = true, /* each member is reported */
                               .late = true};      /* no blocking call is a member */
    const char *cache = m_cache(first);
    int rc;
    if (bt->n == 1) { /* alone: a plain call */
        if (first->op == MOMENTO__BOP_GET)
            rc = momento__send_get(c, cache, m_key(first), first->key_len, &opts, batch_done, bt);
        else if (first->op == MOMENTO__BOP_SET)
            rc = momento__send_set(c, cache, m_key(first), first->key_len, m_value(first),
                                   first->value_len, first->ttl_ms, &opts, batch_done, bt);
        else
            rc = momento__send_delete(c, cache, m_key(first), first->key_len, &opts, batch_done,
                                      bt);
    } else {
        rc = momento__send_batch(c, bt->op != MOMENTO__BOP_GET, cache, bt->n, member_at, bt, &opts,
                                 batch_done, bt);
    }
    return rc;
}

/* With the lock held, after `bt` was sent: its members are M_SENT in it
 * (withdraw and member_fire find them there), and it is counted. */
static void mark_sent(momento__batcher *b, batch *bt)
{
    for (size_t i = 0; i < bt->n; i++) {
        bt->members[i]->state = M_SENT;
        bt->members[i]->in = bt;
        bt->members[i]->index = i;
    }
    bt->attached = bt->n;
    if (bt->n > 1) {
        b->counters.batches++;
        b->counters.batched_keys += bt->n;
        size_t bucket = 0;
        for (size_t k = bt->n - 1; k > 1 && bucket < 7; k >>= 1)
            bucket++;
        b->counters.keys_per_batch[bucket]++;
    } else {
        b->counters.sent_alone++;
    }
}

/* Groups being filled by one flush: a batch each, still unsent. */
#define OPEN_GROUPS 8

typedef struct group {
    momento__bop op;
    const char *cache;
    size_t bytes;
    batch *bt;
} group;

/* What one flush did, for its last locked section: the batches it sent
 * and the members it could not send. */
typedef struct flushed {
    batch *sent;
    momento__bmember *failed, **failed_tail;
    int why;
} flushed;

static void fail_member(flushed *f, momento__bmember *m, int why)
{
    m->next = NULL;
    *f->failed_tail = m;
    f->failed_tail = &m->next;
    f->why = why;
}

/* Sends group `g` (or, if that fails, puts its members on the failed
 * list) and empties it. Without the lock. */
static void close_group(momento_client *c, group *g, flushed *f)
{
    if (!g->bt)
        return;
    batch *bt = g->bt;
    g->bt = NULL;
    int rc = send_batch(c, bt);
    if (rc != MOMENTO_OK) {
        for (size_t i = 0; i < bt->n; i++)
            fail_member(f, bt->members[i], rc);
        free(bt);
        return;
    }
    bt->next_sent = f->sent;
    f->sent = bt;
}

/* Sends the whole queue. On the completion thread. The queue is taken
 * under the lock and sent without it, so that a request offered meanwhile
 * (on the application's thread) waits for no RPC's start: it joins the
 * next queue. Nothing else can touch the taken members meanwhile - their
 * timers and the next flush run on this thread, a batch's answer (which
 * may run on a dispatching thread) touches only its own members, sent
 * already, and a cancel only marks them - but they count as queued writes
 * until they have left, so that a later write queues behind them. */
static void flush(momento_client *c)
{
    momento__batcher *b = batcher_of(c);
    flushed f = {.failed_tail = &f.failed, .why = MOMENTO_OK};
    group groups[OPEN_GROUPS];
    size_t n_groups = 0, writes = 0;
    uint32_t max_keys = c->cfg.batch_max_keys, max_bytes = c->cfg.batch_max_bytes;

    pthread_mutex_lock(&b->lock);
    if (b->linger_armed) {
        momento__timer_disarm(c, &b->linger);
        b->linger_armed = false;
    }
    if (b->deadline_armed) { /* the queue is leaving whole */
        momento__timer_disarm(c, &b->deadline);
        b->deadline_armed = false;
    }
    bool closing = momento__client_closing(c);
    momento__bmember *taken = b->queue;
    int64_t now = momento__now_ns();
    for (momento__bmember *m = taken; m; m = m->next) {
        uint64_t waited = (uint64_t)(now - m->queued_ns);
        b->counters.queued_ns_total += waited;
        if (waited > b->counters.queued_ns_max)
            b->counters.queued_ns_max = waited;
        if (m->op != MOMENTO__BOP_GET)
            writes++;
    }
    b->queue = NULL;
    b->n_queued = 0;
    pthread_mutex_unlock(&b->lock);

    for (momento__bmember *m = taken, *next; m; m = next) {
        next = m->next;
        if (closing) {
            fail_member(&f, m, MOMENTO_ERR_CANCELLED);
            continue;
        }
        group *g = NULL;
        /* A delete (there is no delete batch) and a request asked again
         * alone leave as plain calls. */
        bool single = m->op == MOMENTO__BOP_DELETE || m->alone;
        if (single) {
            /* Writes leave in order: the sets queued before it first. */
            for (size_t i = 0; m->op != MOMENTO__BOP_GET && i < n_groups; i++)
                if (groups[i].op == MOMENTO__BOP_SET)
                    close_group(c, &groups[i], &f);
        } else {
            for (size_t i = 0; i < n_groups && !g; i++)
                if (groups[i].op == m->op && strcmp(groups[i].cache, m_cache(m)) == 0)
                    g = &groups[i];
        }
        size_t bytes = m->key_len + m->value_len;
        if (g && g->bt && (g->bt->n == max_keys || g->bytes + bytes > max_bytes))
            close_group(c, g, &f);
        if (!g) {
            if (n_groups == OPEN_GROUPS) { /* the oldest group leaves to make room */
                close_group(c, &groups[0], &f);
                memmove(groups, groups + 1, (OPEN_GROUPS - 1) * sizeof(groups[0]));
                n_groups--;
            }
            g = &groups[n_groups++];
            memset(g, 0, sizeof(*g));
            g->op = m->op;
            g->cache = m_cache(m); /* freed only after this flush */
        }
        if (!g->bt) {
            g->bt = momento__malloc(sizeof(batch) + max_keys * sizeof(momento__bmember *));
            if (!g->bt) {
                fail_member(&f, m, MOMENTO_ERR_NO_MEMORY);
                continue;
            }
            memset(g->bt, 0, sizeof(batch));
            g->bt->client = c;
            g->bt->op = m->op;
            g->cache = m_cache(m);
            g->bytes = 0;
        }
        g->bt->members[g->bt->n++] = m;
        g->bytes += bytes;
        if (single)
            close_group(c, g, &f);
    }
    for (size_t i = 0; i < n_groups; i++)
        close_group(c, &groups[i], &f);

    pthread_mutex_lock(&b->lock);
    for (batch *bt = f.sent; bt; bt = bt->next_sent)
        mark_sent(b, bt);
    for (momento__bmember *m = f.failed; m; m = m->next) {
        m->state = M_DONE;
        disarm(m);
    }
    b->n_queued_writes -= writes;
    /* A write queued behind these while they left, with none of them sent
     * (no RPC will retire to send it): the completion thread sends it. */
    if (b->queue && !f.sent && !b->linger_armed) {
        momento__timer_fire_soon(c, &b->linger);
        b->linger_armed = true;
    }
    pthread_mutex_unlock(&b->lock);

    for (momento__bmember *m = f.failed, *next; m; m = next) {
        next = m->next;
        deliver_local(m, f.why == MOMENTO_ERR_CLOSED ? MOMENTO_ERR_CANCELLED : f.why,
                      f.why == MOMENTO_ERR_CANCELLED || f.why == MOMENTO_ERR_CLOSED
                          ? "cancelled: the client was freed"
                          : "the batch could not be sent");
    }
}

/* The queue's earliest deadline came: the members whose time is up leave
 * it with MOMENTO_ERR_TIMEOUT; the timer moves on to the next deadline. */
static void deadline_fire(momento__timer *t)
{
    momento__batcher *b = (momento__batcher *)((char *)t - offsetof(momento__batcher, deadline));
    momento_client *c = b->client;
    momento__bmember *late = NULL, **tail = &late;
    pthread_mutex_lock(&b->lock);
    b->deadline_armed = false;
    int64_t now = momento__now_ns(), next = INT64_MAX;
    for (momento__bmember *m = b->queue, *after; m; m = after) {
        after = m->next;
        int64_t due = momento__gpr_ns(m->deadline);
        if (due > now) {
            if (due < next)
                next = due;
            continue;
        }
        unqueue(b, m);
        m->state = M_DONE;
        disarm(m);
        b->counters.left_queue++;
        m->next = NULL;
        *tail = m;
        tail = &m->next;
    }
    /* Re-arming an armed timer cannot fail; this one just fired, so it may:
     * then the next completion's flush still ends or sends them. */
    if (next != INT64_MAX)
        watch_deadline(c, next);
    pthread_mutex_unlock(&b->lock);
    for (momento__bmember *m = late, *after; m; m = after) {
        after = m->next;
        deliver_local(m, MOMENTO_ERR_TIMEOUT, "the request's deadline passed while it was queued");
    }
}

static void linger_fire(momento__timer *t)
{
    momento__batcher *b = (momento__batcher *)((char *)t - offsetof(momento__batcher, linger));
    momento_client *c = b->client;
    pthread_mutex_lock(&b->lock);
    b->linger_armed = false;
    /* Fired at the bound W rather than asked to fire at once (a requeue,
     * a refusal on another thread) or at a shorter linger: no RPC
     * completed in W. */
    uint32_t w = c->cfg.batch_max_wait_us;
    if (b->queue && w && queue_wait_us(&c->cfg) == w &&
        momento__now_ns() - b->queue->queued_ns >= (int64_t)w * 1000)
        b->counters.wait_bound_reached++;
    pthread_mutex_unlock(&b->lock);
    flush(c);
}

/* An RPC of the client is over (its hook: client.c), with the in-flight
 * RPC count already lowered: sends what is queued. On the completion
 * thread it sends at once; elsewhere it asks that thread to. */
static void rpc_done(momento__rpc_hook *h)
{
    momento__batcher *b = (momento__batcher *)((char *)h - offsetof(momento__batcher, hook));
    momento_client *c = b->client;
    pthread_mutex_lock(&b->lock);
    bool pending = b->queue != NULL;
    pthread_mutex_unlock(&b->lock);
    if (!pending)
        return;
    if (momento__current_client == c) {
        flush(c);
        return;
    }
    /* A refusal on a submitting thread: the completion thread sends. */
    pthread_mutex_lock(&b->lock);
    momento__timer_fire_soon(c, &b->linger);
    b->linger_armed = true;
    pthread_mutex_unlock(&b->lock);
}
