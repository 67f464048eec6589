/* A stress test for ThreadSanitizer (tests/tsan/run.sh builds and runs it).
 *
 * 8 threads submit a mix of coalescing gets, sets and deletes and plain
 * gets, sets and deletes (a few blocking ones too) on 4 hot keys, through 3
 * clients of one in-process momento-local: one answered at once, one whose
 * calls the server holds 40 ms, one whose gets it holds 200 ms (fault
 * injection headers). Each request has a random deadline of 1..300 ms (or
 * the client's) and often a cancel token. Tokens live in shared slots: many
 * requests of several threads and clients hold the same token, and it is
 * cancelled by a canceller thread, by other workers and from inside
 * callbacks (and now and then by its submitter, right after submitting).
 * Callbacks also submit follow-up requests. The run is bounded in time and in
 * requests; at the end the slow client is freed with requests still in
 * flight, the others once drained.
 *
 * A subscriber thread churns topic subscriptions on the three clients
 * (kept or not, unsubscribed or freed from its thread or from their own
 * events, some left to the clients' free) while workers publish.
 *
 * Checked: every accepted subscription gets exactly one END and no event
 * after it; every accepted request (submit returned 0) gets exactly one
 * callback, none missing once everything drained, none twice; a refused
 * one gets none; every result is OK (HIT or MISS for a get, SUCCESS for a
 * write), CANCELLED, TIMEOUT or CLOSED; every HIT carries a value written
 * for that key; refusals are only CANCELLED (the token was already
 * cancelled) or CLOSED. ThreadSanitizer checks the rest: any report fails
 * the run (halt_on_error, see run.sh).
 *
 * Usage: tsan_stress [SECONDS [MAX_REQUESTS]]   (default 10 s, 60000) */
#include "testing.h"
#include "engine/timer.h" /* momento__tsan_fire_delay_us */
#include "momento/coalescer.h"
#include "momento/local.h"
#include "momento/momento.h"
#include "momento/topics.h"

#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CACHE "tsan"
#define N_WORKERS 8
#define N_KEYS 4
#define N_CLIENTS 3
#define N_SLOTS 12
#define MAX_IN_FLIGHT 150 /* accepted and not yet called back, all threads */
#define CLIENT_TIMEOUT_MS 2000
#define SLOW_CLIENT 2 /* freed with requests in flight */
#define DISPATCH_CLIENT 1 /* in dispatch mode, run by the dispatcher thread */
#define WATCHDOG_MS 120000 /* after the load: a run still going then has hung */

/* OP_DFETCH / OP_DSET: a dictionary per hot key ("d" + its name, so no
 * type mismatch with the scalars): coalesced collection reads against
 * writes that close them. */
enum { OP_GET, OP_SET, OP_DELETE, OP_DFETCH, OP_DSET };
static const char *const op_names[] = {"get", "set", "delete", "dictionary fetch",
                                       "dictionary set field"};

/* One submitted request. The fields above `calls` are written before the
 * submission and read by its callback. */
typedef struct rec {
    uint8_t op, key, client;
    bool coalescing, from_callback, with_token;
    uint32_t timeout_ms;
    int64_t not_before_ns; /* the clock before the call plus its timeout: no
                            * TIMEOUT may come earlier (issue 27 item 3) */
    atomic_int calls;  /* callbacks seen */
    atomic_int error;  /* of the (first) callback's result */
    int submit_rc;     /* written by the submitter after the call returned */
    bool returned;     /* ...and set with it */
} rec;

static rec *recs;
static size_t max_recs;
static atomic_size_t n_recs;
static atomic_size_t accepted, done; /* first callbacks, counted last thing in each */
static atomic_bool stopping;
static atomic_int failures;
static int64_t t0_ms;

static momento_local *server;
static momento_client *clients[N_CLIENTS];
static momento_coalescer *coalescers[N_CLIENTS];
/* The dispatch-mode client's coalescer is freed while its requests are in
 * flight and the dispatcher runs (its waiters' timers on the completion
 * thread and its answers on the dispatching thread then race its release);
 * callbacks still submitting hold this read lock around a submission and
 * leave the coalescer alone once it is freed. */
static pthread_rwlock_t dispatch_co_gate = PTHREAD_RWLOCK_INITIALIZER;
static bool dispatch_co_freed;

/* Result tallies, per client. */
enum { R_HIT, R_MISS, R_WRITE_OK, R_CANCELLED, R_TIMEOUT, R_CLOSED, N_RESULTS };
static const char *const result_names[] = {"hit", "miss", "write ok", "cancelled", "timeout",
                                           "closed"};
static atomic_size_t results[N_CLIENTS][N_RESULTS];
static atomic_size_t n_refused_cancelled, n_refused_closed, n_follow_ups, n_cancels;
static atomic_size_t n_sync, n_sync_refused;

/* Cancel token slots: requests take a reference to a slot's current token. */
typedef struct slot {
    pthread_mutex_t lock;
    momento_cancel_token *token;
} slot;
static slot slots[N_SLOTS];

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void fail(const char *fmt, ...)
{
    if (atomic_fetch_add(&failures, 1) >= 20)
        return; /* counted, not printed */
    va_list ap;
    va_start(ap, fmt);
    flockfile(stderr);
    fprintf(stderr, "FAIL [%lld ms]: ", (long long)(now_ms() - t0_ms));
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    funlockfile(stderr);
    va_end(ap);
}

/* xorshift64*, one state per thread (callbacks run on the completion
 * threads, which get their own). */
static _Thread_local uint64_t rng_state;
static uint32_t rnd(uint32_t n)
{
    if (!rng_state) {
        rng_state = (uint64_t)(uintptr_t)&rng_state ^ (uint64_t)now_ms() * 0x9E3779B97F4A7C15ull;
        if (!rng_state)
            rng_state = 1;
    }
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (uint32_t)((rng_state * 0x2545F4914F6CDD1Dull) >> 32) % n;
}

/* Values: "k<key>:" then a fill byte; three variants per key so identical
 * sets are common (and coalesce). */
#define VALUE_MAX 300
static size_t make_value(uint8_t *buf, unsigned key, unsigned variant)
{
    static const size_t lens[3] = {16, 64, 256};
    size_t len = lens[variant];
    int n = snprintf((char *)buf, VALUE_MAX, "k%u:", key);
    memset(buf + n, 'a' + (int)variant, len - (size_t)n);
    return len;
}

static bool value_ok(const uint8_t *v, size_t len, unsigned key)
{
    for (unsigned variant = 0; variant < 3; variant++) {
        uint8_t want[VALUE_MAX];
        size_t want_len = make_value(want, key, variant);
        if (len == want_len && memcmp(v, want, len) == 0)
            return true;
    }
    return false;
}

static void key_name(char *buf, unsigned key)
{
    snprintf(buf, 8, "hot%u", key);
}

static momento_cancel_token *slot_take(unsigned i)
{
    pthread_mutex_lock(&slots[i].lock);
    momento_cancel_token *t = momento_cancel_token_ref(slots[i].token);
    pthread_mutex_unlock(&slots[i].lock);
    return t;
}

/* Cancels slot i's token, shared by whatever requests took it. Mostly the
 * slot gets a fresh token first; sometimes the cancelled one stays for a
 * while, so that submissions with it are refused. */
static void slot_cancel(unsigned i)
{
    momento_cancel_token *old;
    pthread_mutex_lock(&slots[i].lock);
    if (rnd(4) != 0 || momento_cancel_token_is_cancelled(slots[i].token)) {
        old = slots[i].token;
        momento_cancel_token *fresh = NULL;
        if (momento_cancel_token_new(&fresh) != MOMENTO_OK) {
            pthread_mutex_unlock(&slots[i].lock);
            fail("momento_cancel_token_new failed");
            return;
        }
        slots[i].token = fresh; /* the slot's reference moves to `old` */
    } else {
        old = momento_cancel_token_ref(slots[i].token);
    }
    pthread_mutex_unlock(&slots[i].lock);
    momento_cancel(old);
    momento_cancel_token_free(old);
    atomic_fetch_add(&n_cancels, 1);
}

static void on_result(const momento_result *r, void *userdata);

/* Picks and submits one request (async). Returns false when the request
 * budget is spent. */
static bool submit_one(unsigned client, bool from_callback)
{
    size_t i = atomic_fetch_add(&n_recs, 1);
    if (i >= max_recs)
        return false;
    rec *q = &recs[i];
    unsigned dice = rnd(100);
    q->client = (uint8_t)client;
    q->key = (uint8_t)rnd(N_KEYS);
    /* Callbacks of the slow client, which is freed while they may still
     * run, never touch its coalescer (freed first). */
    q->coalescing = dice < 70 && !(from_callback && client == SLOW_CLIENT);
    unsigned op_dice = rnd(100);
    q->op = op_dice < 50   ? OP_GET
            : op_dice < 70 ? OP_SET
            : op_dice < 80 ? OP_DELETE
            : op_dice < 92 ? OP_DFETCH
                           : OP_DSET;
    if (q->op == OP_DSET)
        q->coalescing = false; /* a write: it closes the coalescer's reads */
    q->from_callback = from_callback;
    q->timeout_ms = rnd(10) == 0 ? 0 : 1 + rnd(300);

    momento_request_options opts = MOMENTO_REQUEST_OPTIONS_INIT;
    opts.timeout_ms = q->timeout_ms;
    momento_cancel_token *token = NULL;
    if (rnd(100) < 40) {
        token = slot_take(rnd(N_SLOTS));
        opts.cancel = token;
    }
    q->with_token = token != NULL;

    char key[8];
    key_name(key, q->key);
    uint8_t value[VALUE_MAX];
    size_t value_len = make_value(value, q->key, rnd(3));
    uint64_t ttl = rnd(2) ? 0 : 30000;
    momento_client *c = clients[client];
    momento_coalescer *co = coalescers[client];
    int rc;
    char dname[10];
    q->not_before_ns =
        now_ns() + (int64_t)(q->timeout_ms ? q->timeout_ms : CLIENT_TIMEOUT_MS) * 1000000;
    snprintf(dname, sizeof(dname), "d%s", key);
    bool gated = client == DISPATCH_CLIENT;
    if (gated) {
        pthread_rwlock_rdlock(&dispatch_co_gate);
        if (dispatch_co_freed)
            q->coalescing = false;
    }
    if (q->op == OP_DFETCH) {
        rc = q->coalescing ? momento_coalescing_dictionary_fetch(co, CACHE, dname, strlen(dname),
                                                                 &opts, on_result, q)
                           : momento_dictionary_fetch(c, CACHE, dname, strlen(dname), &opts,
                                                      on_result, q);
    } else if (q->op == OP_DSET) {
        rc = momento_dictionary_set_field(c, CACHE, dname, strlen(dname), "f", 1, value,
                                          value_len, NULL, &opts, on_result, q);
    } else if (q->coalescing) {
        rc = q->op == OP_GET   ? momento_coalescing_get(co, CACHE, key, strlen(key), &opts,
                                                        on_result, q)
             : q->op == OP_SET ? momento_coalescing_set(co, CACHE, key, strlen(key), value,
                                                        value_len, ttl, &opts, on_result, q)
                               : momento_coalescing_delete(co, CACHE, key, strlen(key), &opts,
                                                           on_result, q);
    } else {
        rc = q->op == OP_GET   ? momento_get(c, CACHE, key, strlen(key), &opts, on_result, q)
             : q->op == OP_SET ? momento_set(c, CACHE, key, strlen(key), value, value_len, ttl,
                                             &opts, on_result, q)
                               : momento_delete(c, CACHE, key, strlen(key), &opts, on_result, q);
    }
    if (gated)
        pthread_rwlock_unlock(&dispatch_co_gate);
    q->submit_rc = rc;
    q->returned = true;
    if (rc == MOMENTO_OK)
        atomic_fetch_add(&accepted, 1);
    else if (rc == MOMENTO_ERR_CANCELLED && token)
        atomic_fetch_add(&n_refused_cancelled, 1);
    else if (rc == MOMENTO_ERR_CLOSED)
        atomic_fetch_add(&n_refused_closed, 1);
    else
        fail("request %zu (%s%s on client %u) refused: %s", i, q->coalescing ? "coalescing " : "",
             op_names[q->op], client, momento_error_name(rc));
    /* The request holds its own reference: drop ours at once, sometimes
     * after cancelling it ourselves (the submitter's cancel race). */
    if (token && rnd(50) == 0) {
        momento_cancel(token);
        atomic_fetch_add(&n_cancels, 1);
    }
    momento_cancel_token_free(token);
    return true;
}

static void on_result(const momento_result *r, void *userdata)
{
    rec *q = userdata;
    size_t id = (size_t)(q - recs);
    int err = momento_result_error(r);
    bool first = atomic_fetch_add(&q->calls, 1) == 0;
    if (!first) {
        fail("request %zu (%s%s): a second callback (%s; first %s)", id,
             q->coalescing ? "coalescing " : "", op_names[q->op], momento_error_name(err),
             momento_error_name(atomic_load(&q->error)));
    } else {
        atomic_store(&q->error, err);
    }

    momento_outcome out = momento_result_outcome(r);
    if (err == MOMENTO_OK) {
        if (q->op == OP_GET && out == MOMENTO_OUTCOME_HIT) {
            size_t len;
            const uint8_t *v = momento_result_value(r, &len);
            if (!v || !value_ok(v, len, q->key))
                fail("request %zu (get hot%u): a HIT with a value not written for this key "
                     "(%zu bytes, \"%.8s\")",
                     id, q->key, len, v ? (const char *)v : "");
            atomic_fetch_add(&results[q->client][R_HIT], 1);
        } else if (q->op == OP_DFETCH && out == MOMENTO_OUTCOME_HIT) {
            /* One field, "f", holding a value written for this key. */
            const momento_result *e = momento_result_item(r, 0);
            size_t flen, len;
            const void *f = momento_result_field(e, &flen);
            const uint8_t *v = momento_result_value(e, &len);
            if (momento_result_item_count(r) != 1 || !f || flen != 1 || memcmp(f, "f", 1) != 0 ||
                !v || !value_ok(v, len, q->key))
                fail("request %zu (dictionary fetch dhot%u): not the one field written", id,
                     q->key);
            atomic_fetch_add(&results[q->client][R_HIT], 1);
        } else if ((q->op == OP_GET || q->op == OP_DFETCH) && out == MOMENTO_OUTCOME_MISS) {
            atomic_fetch_add(&results[q->client][R_MISS], 1);
        } else if (q->op != OP_GET && q->op != OP_DFETCH && out == MOMENTO_OUTCOME_SUCCESS) {
            atomic_fetch_add(&results[q->client][R_WRITE_OK], 1);
        } else {
            fail("request %zu (%s): OK with outcome %d", id, op_names[q->op], (int)out);
        }
    } else if (err == MOMENTO_ERR_CANCELLED) {
        atomic_fetch_add(&results[q->client][R_CANCELLED], 1);
    } else if (err == MOMENTO_ERR_TIMEOUT) {
        atomic_fetch_add(&results[q->client][R_TIMEOUT], 1);
        int64_t early = q->not_before_ns - now_ns();
        if (early > 0)
            fail("request %zu (%s%s, client %u, timeout %u ms): TIMEOUT %.3f ms before its "
                 "deadline", id, q->coalescing ? "coalescing " : "", op_names[q->op], q->client,
                 q->timeout_ms, (double)early / 1e6);
    } else if (err == MOMENTO_ERR_CLOSED) {
        atomic_fetch_add(&results[q->client][R_CLOSED], 1);
    } else {
        fail("request %zu (%s%s, client %u, timeout %u ms%s): unexpected %s (grpc %d: %s)", id,
             q->coalescing ? "coalescing " : "", op_names[q->op], q->client, q->timeout_ms,
             q->with_token ? ", token" : "", momento_error_name(err),
             momento_result_grpc_status(r), momento_result_message(r));
    }

    /* From the completion thread: cancel someone's token, or submit more. */
    if (rnd(100) < 2)
        slot_cancel(rnd(N_SLOTS));
    if (!atomic_load(&stopping) && rnd(100) < 3) {
        atomic_fetch_add(&n_follow_ups, 1);
        submit_one(q->client, true);
    }
    if (first)
        atomic_fetch_add(&done, 1); /* last: the drain waits for it */
}

/* A blocking request, now and then, from a worker. */
static void sync_one(unsigned client)
{
    unsigned key_i = rnd(N_KEYS);
    char key[8];
    key_name(key, key_i);
    momento_request_options opts = MOMENTO_REQUEST_OPTIONS_INIT;
    opts.timeout_ms = 1 + rnd(300);
    momento_cancel_token *token = rnd(2) ? slot_take(rnd(N_SLOTS)) : NULL;
    opts.cancel = token;
    momento_result *r = NULL;
    int rc = rnd(2) ? momento_coalescing_get_sync(coalescers[client], CACHE, key, strlen(key),
                                                  &opts, &r)
                    : momento_get_sync(clients[client], CACHE, key, strlen(key), &opts, &r);
    momento_cancel_token_free(token);
    atomic_fetch_add(&n_sync, 1);
    if (!r) {
        if (rc == MOMENTO_ERR_CANCELLED && token)
            atomic_fetch_add(&n_sync_refused, 1);
        else
            fail("blocking get refused: %s", momento_error_name(rc));
        return;
    }
    if (rc != momento_result_error(r))
        fail("blocking get returned %d, its result says %d", rc, momento_result_error(r));
    if (rc == MOMENTO_OK) {
        size_t len;
        const uint8_t *v = momento_result_value(r, &len);
        if (momento_result_outcome(r) == MOMENTO_OUTCOME_HIT ? !value_ok(v, len, key_i)
                                                             : momento_result_outcome(r) !=
                                                                   MOMENTO_OUTCOME_MISS)
            fail("blocking get: bad outcome %d or value", (int)momento_result_outcome(r));
    } else if (rc != MOMENTO_ERR_CANCELLED && rc != MOMENTO_ERR_TIMEOUT) {
        fail("blocking get: unexpected %s", momento_error_name(rc));
    }
    momento_result_free(r);
}

static int64_t end_ms;

/* ---- topic subscriptions ------------------------------------------------ */

#define MAX_SUBS 4000
#define TOPIC "tsan-topic"

typedef struct subrec {
    atomic_int ends;       /* END events */
    atomic_int late;       /* events after the END */
    atomic_int events;
    bool accepted;
} subrec;

static subrec subrecs[MAX_SUBS];
static atomic_size_t n_subs;
static atomic_size_t n_sub_items;

static void on_topic(momento_subscription *sub, const momento_topic_event *e, void *userdata)
{
    subrec *q = userdata;
    if (atomic_load(&q->ends))
        atomic_fetch_add(&q->late, 1);
    atomic_fetch_add(&q->events, 1);
    if (e->kind == MOMENTO_TOPIC_END) {
        atomic_fetch_add(&q->ends, 1);
    } else if (e->kind == MOMENTO_TOPIC_ITEM) {
        atomic_fetch_add(&n_sub_items, 1);
        if (rnd(32) == 0)
            momento_topic_unsubscribe(sub); /* from its own event */
    }
}

static void on_published(const momento_result *r, void *userdata)
{
    (void)r, (void)userdata;
}

/* Subscribes and unsubscribes on random clients for as long as the load
 * runs: at most 8 kept at once; some are never kept (they end at an
 * unsubscribe from their events, or at the clients' free). */
static void *subscriber(void *arg)
{
    (void)arg;
    momento_subscription *kept[8] = {0};
    while (!atomic_load(&stopping) && now_ms() < end_ms) {
        size_t i = atomic_fetch_add(&n_subs, 1);
        if (i >= MAX_SUBS)
            break;
        subrec *q = &subrecs[i];
        unsigned pick = rnd(8);
        if (kept[pick]) {
            /* Unsubscribe first or free straight away: both end it once. */
            if (rnd(2))
                momento_topic_unsubscribe(kept[pick]);
            momento_subscription_free(kept[pick]);
            kept[pick] = NULL;
        }
        bool keep = rnd(4) != 0;
        int rc = momento_topic_subscribe(clients[rnd(N_CLIENTS)], CACHE, TOPIC, NULL, on_topic, q,
                                         keep ? &kept[pick] : NULL);
        q->accepted = rc == MOMENTO_OK;
        if (rc != MOMENTO_OK && rc != MOMENTO_ERR_CLOSED)
            fail("subscribe refused: %s", momento_error_name(rc));
        usleep(500 + rnd(3000));
    }
    for (unsigned k = 0; k < 8; k++)
        momento_subscription_free(kept[k]);
    return NULL;
}

static void *worker(void *arg)
{
    (void)arg;
    while (!atomic_load(&stopping) && now_ms() < end_ms) {
        if (atomic_load(&accepted) - atomic_load(&done) >= MAX_IN_FLIGHT) {
            usleep(200);
            continue;
        }
        unsigned dice = rnd(1000);
        if (dice < 15) {
            sync_one(rnd(N_CLIENTS));
        } else if (dice < 20) {
            slot_cancel(rnd(N_SLOTS)); /* tokens other threads' requests hold */
        } else if (dice < 40) {
            momento_topic_publish_text(clients[rnd(N_CLIENTS)], CACHE, TOPIC, "m", 1, NULL,
                                       on_published, NULL);
        } else if (!submit_one(rnd(N_CLIENTS), false)) {
            break; /* the request budget is spent */
        }
        if (rnd(8) == 0)
            usleep(rnd(300));
    }
    /* A last burst on the slow client, which is freed with it in flight. */
    for (int i = 0; i < 16 && !atomic_load(&stopping); i++)
        if (!submit_one(SLOW_CLIENT, false))
            break;
    return NULL;
}

static void *canceller(void *arg)
{
    (void)arg;
    while (!atomic_load(&stopping)) {
        usleep(2000 + rnd(18000));
        slot_cancel(rnd(N_SLOTS));
    }
    return NULL;
}

/* Runs the dispatch-mode client's callbacks, as an event loop would: up to
 * 64 per wake-up. */
static atomic_bool dispatcher_stop;
static void *dispatcher(void *arg)
{
    momento_client *c = arg;
    struct pollfd p = {.fd = momento_client_dispatch_fd(c), .events = POLLIN};
    while (!atomic_load(&dispatcher_stop))
        if (poll(&p, 1, 20) == 1)
            momento_client_dispatch(c, 64);
    return NULL;
}

/* With MOMENTO_TSAN_TRANSPORT=protosocket, get, set and delete go over
 * protosocket to the server's protosocket port (tests/tsan/run.sh's second
 * run): its I/O thread, cancel lists and posts race the rest. The fault
 * headers do not travel there; the server's protosocket rule holds every
 * client's gets 40 ms instead. */
static char ps_endpoint[64];
/* With MOMENTO_TSAN_IO_CALLBACKS=1 too, the default-mode clients call back
 * protosocket's requests on its I/O thread
 * (momento_config_set_io_thread_callbacks()): those callbacks and the
 * follow-ups they submit race the completion thread's. */
static bool io_callbacks;
/* With MOMENTO_TSAN_DISPATCH_IO=1 too, the dispatch-mode client has no
 * protosocket I/O thread (momento_config_set_dispatch_io()): the
 * dispatcher thread steps its connections while the submitting threads'
 * launches write on them, blocking calls step them too, and the free
 * steps them to its end. */
static bool dispatch_io;
/* With MOMENTO_TSAN_NEAR=1, every client has a near cache (1 MiB, 20 ms):
 * its lookups, fills, the writes that drop entries and the answers it
 * delivers through the completion thread race the rest; and invalidation
 * on one topic: each client's written keys published from its completion
 * thread, the others' dropping entries as they hear them. */
static bool near_cache;

static momento_client *new_client(const char *id, const char *delay_ms, const char *rpcs,
                                  uint32_t batch_from, uint32_t cap, uint32_t max_age_ms,
                                  int dispatch)
{
    momento_credentials *creds = NULL;
    momento_config *cfg = NULL;
    momento_client *c = NULL;
    if (momento_credentials_local(&creds, momento_local_endpoint(server)) != MOMENTO_OK ||
        momento_config_new(&cfg) != MOMENTO_OK ||
        momento_config_set_timeout_ms(cfg, CLIENT_TIMEOUT_MS) != MOMENTO_OK ||
        /* No keepalive: a slow (instrumented) process must not lose its
         * connection to a missed ping ack. */
        momento_config_set_keepalive(cfg, 0, 0) != MOMENTO_OK ||
        momento_config_set_num_channels(cfg, 2) != MOMENTO_OK ||
        /* Adaptive batching from `batch_from` RPCs in flight (0: off), so
         * its queue, batches and per-member deadlines and cancels race too. */
        momento_config_set_batching(cfg, batch_from, 0, 16, 64 * 1024) != MOMENTO_OK ||
        /* A cap on requests in flight (0: none), so its queue races with
         * deadlines, cancels and the free; channels renewed every
         * `max_age_ms` under load, so calls race the swap. */
        momento_config_set_max_concurrent_requests(cfg, cap) != MOMENTO_OK ||
        momento_config_set_connection_lifetime(cfg, MOMENTO_DEFAULT_MAX_IDLE_MS, max_age_ms) !=
            MOMENTO_OK ||
        /* Dispatch mode: its callbacks (and topic events) queued for the
         * dispatcher thread, so the queue races the completion thread. */
        momento_config_set_dispatch(cfg, dispatch) != MOMENTO_OK ||
        (ps_endpoint[0] &&
         (momento_config_set_transport(cfg, MOMENTO_TRANSPORT_PROTOSOCKET) != MOMENTO_OK ||
          momento_config_set_protosocket_connections(cfg, 2) != MOMENTO_OK ||
          momento_config_set_protosocket_endpoint(cfg, ps_endpoint) != MOMENTO_OK)) ||
        (io_callbacks && !dispatch && momento_config_set_io_thread_callbacks(cfg, 1) != MOMENTO_OK) ||
        (dispatch_io && dispatch && momento_config_set_dispatch_io(cfg, 1) != MOMENTO_OK) ||
        (near_cache && (momento_config_set_near_cache(cfg, 1 << 20, 20) != MOMENTO_OK ||
                        momento_config_set_near_cache_invalidation(cfg, CACHE, "near") !=
                            MOMENTO_OK)) ||
        momento_client_new(&c, cfg, creds) != MOMENTO_OK) {
        fprintf(stderr, "tsan_stress: cannot create a client\n");
        exit(2);
    }
    momento_config_free(cfg);
    momento_credentials_free(creds);
    momento__client_add_header(c, "request-id", id); /* gRPC's calls only on protosocket */
    if (delay_ms) {
        momento__client_add_header(c, "delay-ms", delay_ms);
        momento__client_add_header(c, "delay-rpcs", rpcs);
    }
    return c;
}

/* Waits until every accepted request has been called back; false after
 * `limit_ms`. */
static bool drain(int64_t limit_ms)
{
    int64_t until = now_ms() + limit_ms;
    while (atomic_load(&done) != atomic_load(&accepted)) {
        if (now_ms() > until)
            return false;
        usleep(2000);
    }
    return true;
}

static void report_missing(void)
{
    size_t n = atomic_load(&n_recs);
    if (n > max_recs)
        n = max_recs;
    size_t missing = 0;
    for (size_t i = 0; i < n; i++) {
        rec *q = &recs[i];
        if (q->returned && q->submit_rc == MOMENTO_OK && atomic_load(&q->calls) == 0 &&
            missing++ < 20)
            fprintf(stderr,
                    "  no callback: request %zu, %s%s of hot%u on client %u, timeout %u ms%s%s\n",
                    i, q->coalescing ? "coalescing " : "", op_names[q->op], q->key, q->client,
                    q->timeout_ms, q->with_token ? ", with a token" : "",
                    q->from_callback ? ", from a callback" : "");
    }
    fprintf(stderr, "  %zu accepted requests without a callback\n", missing);
}

/* Ends a run that hangs (a client's free waiting forever, a drain that
 * never ends), saying what it was waiting for. */
static atomic_bool finished;
static void *watchdog(void *arg)
{
    int64_t limit = *(int64_t *)arg;
    while (!atomic_load(&finished)) {
        if (now_ms() > limit) {
            fprintf(stderr, "FAIL: still running %lld s after the load ended (accepted %zu, "
                            "called back %zu)\n",
                    (long long)(WATCHDOG_MS / 1000), atomic_load(&accepted), atomic_load(&done));
            report_missing();
            fflush(stderr);
            _exit(3);
        }
        usleep(100000);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int seconds = argc > 1 ? atoi(argv[1]) : 10;
    max_recs = argc > 2 ? (size_t)atol(argv[2]) : 60000;
    if (seconds < 1 || max_recs < 1) {
        fprintf(stderr, "usage: %s [SECONDS [MAX_REQUESTS]]\n", argv[0]);
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    t0_ms = now_ms();
    recs = calloc(max_recs, sizeof(*recs));
    if (!recs)
        return 2;

    /* With MOMENTO_TSAN_FIRE_DELAY_US, every client timer's fire waits
     * that long: a request's cancel, already taken to fire, then meets its
     * answer finished and freed on the dispatching thread far more often
     * (the race momento__timer_settle closes). */
    const char *delay = getenv("MOMENTO_TSAN_FIRE_DELAY_US");
    if (delay)
        atomic_store(&momento__tsan_fire_delay_us, atoi(delay));

    momento_local_options *o = NULL;
    const char *near = getenv("MOMENTO_TSAN_NEAR");
    near_cache = near && strcmp(near, "1") == 0;
    if (near_cache)
        printf("tsan_stress: every client with a near cache\n");
    const char *transport = getenv("MOMENTO_TSAN_TRANSPORT");
    bool ps = transport && strcmp(transport, "protosocket") == 0;
    if (momento_local_options_new(&o) != MOMENTO_OK ||
        momento_local_options_add_cache(o, CACHE) != MOMENTO_OK ||
        (ps && momento_local_options_set_protosocket_port(o, 0) != MOMENTO_OK) ||
        momento_local_start(&server, o) != MOMENTO_OK) {
        fprintf(stderr, "tsan_stress: cannot start momento-local\n");
        return 2;
    }
    momento_local_options_free(o);
    if (ps) {
        snprintf(ps_endpoint, sizeof(ps_endpoint), "127.0.0.1:%d",
                 momento_local_protosocket_port(server));
        if (momento_local_protosocket_fault(server, "get", -1, 40, UINT32_MAX) != MOMENTO_OK)
            return 2;
        printf("tsan_stress: get, set and delete over protosocket (%s)\n", ps_endpoint);
        const char *io = getenv("MOMENTO_TSAN_IO_CALLBACKS");
        io_callbacks = io && strcmp(io, "1") == 0;
        if (io_callbacks)
            printf("tsan_stress: callbacks on protosocket's I/O thread\n");
        const char *dio = getenv("MOMENTO_TSAN_DISPATCH_IO");
        dispatch_io = dio && strcmp(dio, "1") == 0;
        if (dispatch_io)
            printf("tsan_stress: the dispatch-mode client without protosocket's I/O thread\n");
    }

    clients[0] = new_client("tsan-fast", NULL, NULL, 4, 0, 1000, 0);
    clients[1] = new_client("tsan-40ms", "40", "get set delete", 2, 8, 0, 1);
    clients[2] = new_client("tsan-200ms", "200", "get", 2, 4, 1500, 0);
    pthread_t dispatcher_thread;
    pthread_create(&dispatcher_thread, NULL, dispatcher, clients[DISPATCH_CLIENT]);
    for (int i = 0; i < N_CLIENTS; i++)
        if (momento_coalescer_new(&coalescers[i], clients[i]) != MOMENTO_OK)
            return 2;
    for (int i = 0; i < N_SLOTS; i++) {
        pthread_mutex_init(&slots[i].lock, NULL);
        if (momento_cancel_token_new(&slots[i].token) != MOMENTO_OK)
            return 2;
    }

    end_ms = now_ms() + (int64_t)seconds * 1000;
    static int64_t watchdog_limit;
    watchdog_limit = end_ms + WATCHDOG_MS;
    pthread_t watchdog_thread;
    pthread_create(&watchdog_thread, NULL, watchdog, &watchdog_limit);
    pthread_t workers[N_WORKERS], cancel_thread;
    for (int i = 0; i < N_WORKERS; i++)
        pthread_create(&workers[i], NULL, worker, NULL);
    pthread_create(&cancel_thread, NULL, canceller, NULL);
    pthread_t subscriber_thread;
    pthread_create(&subscriber_thread, NULL, subscriber, NULL);
    for (int i = 0; i < N_WORKERS; i++)
        pthread_join(workers[i], NULL);
    atomic_store(&stopping, true);
    pthread_join(cancel_thread, NULL);
    pthread_join(subscriber_thread, NULL);
    int64_t load_ms = now_ms() - t0_ms;

    /* The slow client goes with requests still in flight: its coalescer
     * first (it does not wait), then the client, which cancels what is in
     * flight and waits for every callback. */
    size_t in_flight_slow = momento_client_in_flight(clients[SLOW_CLIENT]);
    momento_coalescer_free(coalescers[SLOW_CLIENT]);
    momento_client_free(clients[SLOW_CLIENT]);
    /* The dispatch-mode client's coalescer goes now too, with requests in
     * flight (see dispatch_co_gate); the client stays until the end. */
    momento_coalescer_stats k[N_CLIENTS];
    size_t in_flight_dispatch = momento_client_in_flight(clients[DISPATCH_CLIENT]);
    pthread_rwlock_wrlock(&dispatch_co_gate);
    momento_coalescer_stats_get(coalescers[DISPATCH_CLIENT], &k[DISPATCH_CLIENT],
                                sizeof(k[DISPATCH_CLIENT]));
    dispatch_co_freed = true;
    momento_coalescer_free(coalescers[DISPATCH_CLIENT]);
    pthread_rwlock_unlock(&dispatch_co_gate);
    /* The others drain first: deadlines are at most CLIENT_TIMEOUT_MS. */
    if (!drain(30000)) {
        fail("requests still without a callback 30 s after the load stopped "
             "(accepted %zu, called back %zu)",
             atomic_load(&accepted), atomic_load(&done));
        report_missing();
        fflush(stderr);
        _exit(1); /* freeing the clients would wait for them forever */
    }
    /* Nothing may dispatch while the client is freed on another thread;
     * what is still queued then runs inside the free. */
    atomic_store(&dispatcher_stop, true);
    pthread_join(dispatcher_thread, NULL);
    momento_client_batching_stats bk[N_CLIENTS];
    momento_near_cache_stats nk[N_CLIENTS];
    for (int i = 0; i < N_CLIENTS; i++) {
        if (i == SLOW_CLIENT)
            continue;
        if (i != DISPATCH_CLIENT) {
            momento_coalescer_stats_get(coalescers[i], &k[i], sizeof(k[i]));
            momento_coalescer_free(coalescers[i]);
        }
        momento_client_batching_stats_get(clients[i], &bk[i], sizeof(bk[i]));
        momento_client_near_cache_stats_get(clients[i], &nk[i], sizeof(nk[i]));
        momento_client_free(clients[i]);
    }
    for (int i = 0; i < N_SLOTS; i++) {
        momento_cancel_token_free(slots[i].token);
        pthread_mutex_destroy(&slots[i].lock);
    }
    momento_local_stop(server);
    atomic_store(&finished, true);
    pthread_join(watchdog_thread, NULL);

    /* Exactly once, per request. */
    size_t n = atomic_load(&n_recs);
    if (n > max_recs)
        n = max_recs;
    size_t missing = 0, extra = 0, n_accepted = 0;
    for (size_t i = 0; i < n; i++) {
        rec *q = &recs[i];
        int calls = atomic_load(&q->calls);
        if (!q->returned) {
            fail("request %zu: its submission never returned", i);
        } else if (q->submit_rc == MOMENTO_OK) {
            n_accepted++;
            if (calls == 0)
                missing++;
            else if (calls > 1)
                extra++;
        } else if (calls != 0) {
            fail("request %zu: refused (%s), yet called back %d time(s)", i,
                 momento_error_name(q->submit_rc), calls);
        }
    }
    /* Exactly one END per accepted subscription, nothing after it. */
    size_t ns = atomic_load(&n_subs), subs_accepted = 0;
    if (ns > MAX_SUBS)
        ns = MAX_SUBS;
    for (size_t i = 0; i < ns; i++) {
        subrec *q = &subrecs[i];
        int ends = atomic_load(&q->ends);
        subs_accepted += q->accepted;
        if (q->accepted && ends != 1)
            fail("subscription %zu: %d END events", i, ends);
        if (!q->accepted && atomic_load(&q->events))
            fail("subscription %zu: refused, yet %d events", i, atomic_load(&q->events));
        if (atomic_load(&q->late))
            fail("subscription %zu: %d events after its END", i, atomic_load(&q->late));
    }
    printf("tsan_stress: %zu subscriptions (%zu accepted), %zu items delivered\n", ns,
           subs_accepted, atomic_load(&n_sub_items));
    if (missing || extra) {
        fail("%zu accepted requests got no callback, %zu got more than one", missing, extra);
        if (missing)
            report_missing();
    }

    printf("tsan_stress: %zu requests in %.1f s of load (%zu accepted, %zu from callbacks; "
           "%zu refused for a cancelled token, %zu as closed), %zu blocking gets "
           "(%zu refused), %zu token cancels\n",
           n, load_ms / 1000.0, n_accepted, atomic_load(&n_follow_ups),
           atomic_load(&n_refused_cancelled), atomic_load(&n_refused_closed),
           atomic_load(&n_sync), atomic_load(&n_sync_refused), atomic_load(&n_cancels));
    for (int i = 0; i < N_CLIENTS; i++) {
        printf("tsan_stress: client %d results:", i);
        for (int j = 0; j < N_RESULTS; j++)
            printf(" %zu %s%s", atomic_load(&results[i][j]), result_names[j],
                   j + 1 < N_RESULTS ? "," : "");
        if (i == SLOW_CLIENT)
            printf(" (freed with %zu RPCs in flight)\n", in_flight_slow);
        else if (i == DISPATCH_CLIENT)
            printf(" (its coalescer freed with %zu requests in flight)\n", in_flight_dispatch);
        else
            printf("\n");
    }
    for (int i = 0; i < N_CLIENTS; i++)
        if (i != SLOW_CLIENT)
            printf("tsan_stress: client %d coalesced %llu/%llu gets, %llu/%llu sets, "
                   "%llu/%llu deletes, %llu/%llu dictionary fetches; peak %llu waiters\n",
                   i, (unsigned long long)k[i].get_coalesced,
                   (unsigned long long)k[i].get_requests, (unsigned long long)k[i].set_coalesced,
                   (unsigned long long)k[i].set_requests,
                   (unsigned long long)k[i].delete_coalesced,
                   (unsigned long long)k[i].delete_requests,
                   (unsigned long long)k[i].read_coalesced, (unsigned long long)k[i].read_requests,
                   (unsigned long long)k[i].peak_waiters);
    for (int i = 0; i < N_CLIENTS; i++)
        if (i != SLOW_CLIENT)
            printf("tsan_stress: client %d batching: %llu queued, %llu batches of %llu keys, "
                   "%llu sent alone, %llu left the queue\n",
                   i, (unsigned long long)bk[i].queued, (unsigned long long)bk[i].batches,
                   (unsigned long long)bk[i].batched_keys, (unsigned long long)bk[i].sent_alone,
                   (unsigned long long)bk[i].left_queue);
    if (near_cache)
        for (int i = 0; i < N_CLIENTS; i++)
            if (i != SLOW_CLIENT)
                printf("tsan_stress: client %d near cache: %llu hits, %llu kept misses, %llu "
                       "misses, %llu fills, %llu dropped by writes, %llu not kept; %llu keys "
                       "published in %llu messages, %llu heard, %llu resets\n",
                       i, (unsigned long long)nk[i].hits, (unsigned long long)nk[i].miss_hits,
                       (unsigned long long)nk[i].misses, (unsigned long long)nk[i].fills,
                       (unsigned long long)nk[i].dropped, (unsigned long long)nk[i].stale,
                       (unsigned long long)nk[i].keys_published,
                       (unsigned long long)nk[i].publishes, (unsigned long long)nk[i].keys_heard,
                       (unsigned long long)nk[i].resets);
    free(recs);
    int f = atomic_load(&failures);
    if (f) {
        printf("tsan_stress: FAILED (%d problem(s))\n", f);
        return 1;
    }
    printf("tsan_stress: every accepted request was called back exactly once\n");
    return 0;
}
