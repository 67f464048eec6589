/* The metrics hook in dispatch mode (momento/metrics.h "On which thread"),
 * against the local server, with adaptive batching and a coalescer: a
 * shared RPC's answer (a GetBatch, a coalesced get) is still delivered
 * whole on the dispatching thread with a hook set - one queued entry per
 * RPC, its requests reported there, each just before its callback - while
 * a request with an RPC of its own is reported on the completion thread;
 * under load from several threads every request is reported exactly once,
 * before its own callback, and no two hook calls of the client overlap;
 * a blocking call from the hook is refused on either thread rather than
 * wait for a thread that waits for the hook. */
#include "momento/coalescer.h"
#include "momento/metrics.h"
#include "testing.h"
#include "testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int client_id;

/* A client of `f`'s server in dispatch mode with `hook(ud)`, batching from
 * one RPC in flight, deadlines of `timeout_ms`, its calls under a fresh
 * fault-injection session held `delay_ms` each (0: not held). */
static momento_client *hooked_dispatch(tu_fixture *f, momento_metrics_fn hook, void *ud,
                                       uint32_t timeout_ms, int delay_ms)
{
    momento_config *cfg = tu_config();
    assert_int_equal(momento_config_set_dispatch(cfg, 1), MOMENTO_OK);
    assert_int_equal(momento_config_set_metrics(cfg, hook, ud), MOMENTO_OK);
    assert_int_equal(momento_config_set_timeout_ms(cfg, (uint32_t)TU_MS(timeout_ms)), MOMENTO_OK);
    assert_int_equal(momento_config_set_batching(cfg, 1, 0, 64, 1024 * 1024), MOMENTO_OK);
    momento_client *c = tu_client(f->server, cfg);
    momento_config_free(cfg);
    char id[32];
    snprintf(id, sizeof(id), "metrics-dispatch-%d", ++client_id);
    momento__client_add_header(c, "request-id", id);
    if (delay_ms) {
        char ms[16];
        snprintf(ms, sizeof(ms), "%d", (int)TU_MS(delay_ms));
        momento__client_add_header(c, "delay-ms", ms);
    }
    return c;
}

/* The key index a get's value "v<i>" names, or -1. */
static int value_index(const momento_result *r)
{
    size_t len = 0;
    const char *v = momento_result_is_hit(r) ? momento_result_value(r, &len) : NULL;
    if (!v || len < 2 || len > 10 || v[0] != 'v')
        return -1;
    int i = 0;
    for (size_t k = 1; k < len; k++) {
        if (v[k] < '0' || v[k] > '9')
            return -1;
        i = i * 10 + (v[k] - '0');
    }
    return i;
}

/* Writes "g<i>" = "v<i>" for i < n through `c` (no hook), and waits. At
 * most PREFILL_WINDOW sets are in flight: thousands at once under
 * valgrind outlast the fixture client's deadline, and this is set-up,
 * not the load under test. */
#define PREFILL_WINDOW 256
static void prefill(momento_client *c, int n)
{
    tu_counter k;
    tu_counter_init(&k);
    char key[16], value[16];
    for (int i = 0; i < n; i++) {
        if (i >= PREFILL_WINDOW)
            assert_true(tu_counter_wait(&k, (size_t)(i - PREFILL_WINDOW + 1), 20000) >
                        (size_t)(i - PREFILL_WINDOW));
        int kl = snprintf(key, sizeof(key), "g%d", i);
        int vl = snprintf(value, sizeof(value), "v%d", i);
        assert_int_equal(momento_set(c, "c", key, (size_t)kl, value, (size_t)vl, 0, NULL,
                                     tu_count_cb, &k),
                         MOMENTO_OK);
    }
    assert_int_equal(tu_counter_wait(&k, (size_t)n, 20000), (size_t)n);
    assert_int_equal(k.ok, (size_t)n);
    tu_counter_destroy(&k);
}

/* ---------------------------------------------- the late path, observed */

#define SHARED_KEYS 40
#define SHARED_HOT 10
#define HOT_INDEX 999 /* "g999" = "v999": the coalesced key */

/* What the hook and callbacks of test_shared_answer_reported_on_dispatch
 * saw. The test thread dispatches; the hook runs there or on the
 * completion thread. */
typedef struct seen {
    pthread_t test_thread;
    atomic_bool dispatching;           /* the test thread is inside a dispatch */
    atomic_int before_dispatch;        /* hook calls made before the first dispatch */
    atomic_int flagged_before;         /* ...of which BATCHED or COALESCED */
    atomic_int flagged_on_dispatch;    /* BATCHED or COALESCED, on the dispatching thread */
    atomic_int own_on_completion;      /* flags 0, off the test thread */
    atomic_int misplaced;              /* a hook call on a thread it should not be on */
    atomic_int hooked[SHARED_KEYS + 1];/* per key: hook calls (the hot key last) */
    atomic_int called[SHARED_KEYS + 1];/* per key: callbacks */
    atomic_int early_callbacks;        /* a callback whose hook call had not come */
    atomic_int bad_results;            /* a callback without a hit of a key of ours */
    atomic_int probe_rc;               /* a blocking call from the hook on the dispatching thread */
    atomic_bool probed;
    momento_client *client;
} seen;

static int slot_of(int index)
{
    return index == HOT_INDEX ? SHARED_KEYS : index;
}

static void shared_hook(const momento_request_metrics *m, void *ud)
{
    seen *s = ud;
    bool on_test = pthread_equal(pthread_self(), s->test_thread);
    bool flagged = (m->flags & (MOMENTO_METRICS_BATCHED | MOMENTO_METRICS_COALESCED)) != 0;
    if (!atomic_load(&s->dispatching)) {
        atomic_fetch_add(&s->before_dispatch, 1);
        if (flagged)
            atomic_fetch_add(&s->flagged_before, 1);
    }
    if (flagged && on_test && atomic_load(&s->dispatching))
        atomic_fetch_add(&s->flagged_on_dispatch, 1);
    else if (!flagged && !on_test)
        atomic_fetch_add(&s->own_on_completion, 1);
    else
        atomic_fetch_add(&s->misplaced, 1);
    int i = value_index(m->result);
    if (i >= 0 && slot_of(i) <= SHARED_KEYS)
        atomic_fetch_add(&s->hooked[slot_of(i)], 1);
    /* Once, on the dispatching thread: a blocking call here would wait for
     * the completion thread, which waits for this hook call's lock to
     * report that call's answer. It must be refused, not hang. */
    if (on_test && !atomic_exchange(&s->probed, true)) {
        momento_result *r = NULL;
        atomic_store(&s->probe_rc, momento_get_sync(s->client, "c", "g0", 2, NULL, &r));
        momento_result_free(r);
    }
}

static void shared_cb(const momento_result *r, void *ud)
{
    seen *s = ud;
    int i = value_index(r);
    if (i < 0 || slot_of(i) > SHARED_KEYS) {
        atomic_fetch_add(&s->bad_results, 1);
        return;
    }
    int slot = slot_of(i);
    /* This callback's hook call came first (for the hot key: one per
     * waiter, so as many as its callbacks so far, this one included). */
    int called = atomic_fetch_add(&s->called[slot], 1) + 1;
    if (atomic_load(&s->hooked[slot]) < called)
        atomic_fetch_add(&s->early_callbacks, 1);
}

/* Every answer is in before the test dispatches (the server holds each
 * call 200 ms, and the test waits for the queue): the batched and
 * coalesced requests are reported only then, on the dispatching thread,
 * from one queued entry per RPC; the requests with an RPC of their own
 * were reported on the completion thread as they completed. Before late
 * delivery kept its place with a hook, every request was reported on the
 * completion thread and queued alone. */
static void test_shared_answer_reported_on_dispatch(void **state)
{
    tu_fixture *f = *state;
    char key[16];
    prefill(f->client, SHARED_KEYS);
    assert_int_equal(momento_set_sync(f->client, "c", "g999", 4, "v999", 4, 0, NULL, NULL),
                     MOMENTO_OK);

    seen *s = calloc(1, sizeof(*s));
    s->test_thread = pthread_self();
    atomic_init(&s->probe_rc, 1);
    momento_client *c = hooked_dispatch(f, shared_hook, s, 20000, 200);
    s->client = c;
    momento_coalescer *co = tu_coalescer(c);

    for (int i = 0; i < SHARED_KEYS; i++) {
        int kl = snprintf(key, sizeof(key), "g%d", i);
        assert_int_equal(momento_get(c, "c", key, (size_t)kl, NULL, shared_cb, s), MOMENTO_OK);
    }
    for (int i = 0; i < SHARED_HOT; i++)
        assert_int_equal(momento_coalescing_get(co, "c", "g999", 4, NULL, shared_cb, s),
                         MOMENTO_OK);

    /* Every answer in the queue: 41 requests went to the batcher (the
     * keys, and the hot key's one RPC); each RPC is one entry - a batch's,
     * one sent alone from the queue, the hot key's - or, for a get that
     * was never queued, its own result's. */
    momento_client_batching_stats bs;
    size_t rpcs = tu_wait_dispatched(c, SHARED_KEYS, &bs);
    assert_true(bs.batches >= 1); /* the premise: a GetBatch answered several */
    assert_int_equal(bs.batched_keys + bs.sent_alone, bs.queued);
    assert_int_equal(momento__dispatch_queued(c), rpcs); /* one entry per RPC */
    assert_true(rpcs < SHARED_KEYS);
    /* Reported so far: only requests with an RPC of their own (gets the
     * batcher never queued), each when it completed, on the completion
     * thread; at least the first, sent before anything was in flight. */
    assert_int_equal(atomic_load(&s->flagged_before), 0);
    assert_true(atomic_load(&s->before_dispatch) >= 1);
    assert_true(atomic_load(&s->before_dispatch) <= SHARED_KEYS + 1 - (int)bs.queued);

    atomic_store(&s->dispatching, true);
    int64_t end = tu_now_ms() + TU_MS(20000);
    int total = 0;
    while (total < SHARED_KEYS + SHARED_HOT && tu_now_ms() < end) {
        int ran = momento_client_dispatch(c, 0);
        assert_true(ran >= 0);
        int n = 0;
        for (int k = 0; k <= SHARED_KEYS; k++)
            n += atomic_load(&s->called[k]);
        total = n + atomic_load(&s->bad_results);
        if (total < SHARED_KEYS + SHARED_HOT)
            usleep(1000);
    }
    atomic_store(&s->dispatching, false);
    assert_int_equal(total, SHARED_KEYS + SHARED_HOT);
    assert_int_equal(atomic_load(&s->bad_results), 0);
    assert_int_equal(atomic_load(&s->early_callbacks), 0);
    assert_int_equal(atomic_load(&s->misplaced), 0);
    /* Every batched and coalesced request reported on the dispatching
     * thread, each before its callback there. */
    assert_int_equal(atomic_load(&s->flagged_on_dispatch) + atomic_load(&s->own_on_completion),
                     SHARED_KEYS + SHARED_HOT);
    assert_int_equal(atomic_load(&s->own_on_completion), atomic_load(&s->before_dispatch));
    assert_true(atomic_load(&s->flagged_on_dispatch) >= SHARED_HOT + 2);
    for (int k = 0; k < SHARED_KEYS; k++) {
        assert_int_equal(atomic_load(&s->hooked[k]), 1);
        assert_int_equal(atomic_load(&s->called[k]), 1);
    }
    assert_int_equal(atomic_load(&s->hooked[SHARED_KEYS]), SHARED_HOT);
    assert_int_equal(atomic_load(&s->called[SHARED_KEYS]), SHARED_HOT);
    /* The hook's blocking call on the dispatching thread was refused. */
    assert_true(atomic_load(&s->probed));
    assert_int_equal(atomic_load(&s->probe_rc), MOMENTO_ERR_WOULD_DEADLOCK);

    momento_coalescer_free(co);
    momento_client_free(c);
    free(s);
}

/* ------------------------------------------------------------- load */

#define SUBMITTERS 4
#define PER_SUBMITTER 1500
#define N_REQUESTS (SUBMITTERS * PER_SUBMITTER)
#define IN_FLIGHT_CAP 64 /* per submitter */
#define HOT_KEYS 8
/* Request r is a set (r % 4 == 0), a coalesced get of hot key r % HOT_KEYS
 * (r % 4 == 1), or a plain get of its own key "g<r>". Hot key h is
 * "g<N_REQUESTS + h>". */

typedef struct load load;

typedef struct req {
    load *l;
    int id;
} req;

struct load {
    momento_client *client;
    momento_coalescer *co;
    pthread_t dispatcher;
    atomic_bool dispatcher_set;
    /* The hook. */
    atomic_int in_hook;       /* hook calls running now */
    atomic_int overlaps;      /* a hook call that found another running */
    size_t plain_hooks;       /* written only in the hook: TSan reports two at once */
    atomic_int hooks;
    atomic_int set_hooks;
    atomic_int flagged_on_dispatcher;
    atomic_int own_on_dispatcher; /* flags 0 on the dispatching thread: never */
    atomic_int unknown;       /* a hook call or callback naming no request of ours */
    atomic_int hooked[N_REQUESTS + HOT_KEYS]; /* per key */
    /* The callbacks. */
    atomic_int called[N_REQUESTS + HOT_KEYS]; /* per key */
    atomic_int set_callbacks;
    atomic_int callbacks;
    atomic_int early;         /* a callback before its request's hook call */
    atomic_int off_dispatcher;/* a callback off the dispatching thread */
    atomic_int failed;        /* a result other than a hit or a stored set */
    atomic_int accepted;
    atomic_int refused;
    req reqs[N_REQUESTS];
    /* Each submitter's requests in flight, at most IN_FLIGHT_CAP. */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int in_flight[SUBMITTERS];
    atomic_bool stop;
};

static int key_slot(const momento_result *r)
{
    int i = value_index(r);
    return i >= 0 && i < N_REQUESTS + HOT_KEYS ? i : -1;
}

static void load_hook(const momento_request_metrics *m, void *ud)
{
    load *l = ud;
    if (atomic_fetch_add(&l->in_hook, 1) != 0)
        atomic_fetch_add(&l->overlaps, 1);
    /* The thread lets others run inside the hook: two calls not kept
     * apart then meet, on one core too. */
    sched_yield();
    l->plain_hooks++;
    atomic_fetch_add(&l->hooks, 1);
    bool on_dispatcher = atomic_load(&l->dispatcher_set) &&
                         pthread_equal(pthread_self(), l->dispatcher);
    if (m->flags & (MOMENTO_METRICS_BATCHED | MOMENTO_METRICS_COALESCED)) {
        if (on_dispatcher)
            atomic_fetch_add(&l->flagged_on_dispatcher, 1);
    } else if (on_dispatcher) {
        atomic_fetch_add(&l->own_on_dispatcher, 1);
    }
    if (strcmp(m->method, "Set") == 0) {
        atomic_fetch_add(&l->set_hooks, 1);
    } else {
        int k = key_slot(m->result);
        if (k >= 0)
            atomic_fetch_add(&l->hooked[k], 1);
        else
            atomic_fetch_add(&l->unknown, 1);
    }
    atomic_fetch_sub(&l->in_hook, 1);
}

static void load_cb(const momento_result *r, void *ud)
{
    req *q = ud;
    load *l = q->l;
    if (!atomic_load(&l->dispatcher_set) || !pthread_equal(pthread_self(), l->dispatcher))
        atomic_fetch_add(&l->off_dispatcher, 1);
    if (q->id % 4 == 0) {
        if (momento_result_error(r) != MOMENTO_OK)
            atomic_fetch_add(&l->failed, 1);
        /* Sets name no key in their result: counted as a kind, their hook
         * calls at least as many as their callbacks, this one included. */
        int called = atomic_fetch_add(&l->set_callbacks, 1) + 1;
        if (atomic_load(&l->set_hooks) < called)
            atomic_fetch_add(&l->early, 1);
    } else {
        int want = q->id % 4 == 1 ? N_REQUESTS + q->id % HOT_KEYS : q->id;
        int k = key_slot(r);
        if (k != want) {
            atomic_fetch_add(&l->failed, 1);
        } else {
            int called = atomic_fetch_add(&l->called[k], 1) + 1;
            if (atomic_load(&l->hooked[k]) < called)
                atomic_fetch_add(&l->early, 1);
        }
    }
    atomic_fetch_add(&l->callbacks, 1);
    int s = (q->id / PER_SUBMITTER);
    pthread_mutex_lock(&l->lock);
    l->in_flight[s]--;
    pthread_cond_broadcast(&l->cond);
    pthread_mutex_unlock(&l->lock);
}

typedef struct submitter {
    load *l;
    int index;
} submitter;

static void *submit_loop(void *arg)
{
    submitter *sb = arg;
    load *l = sb->l;
    char key[24];
    int64_t until = tu_now_ms() + TU_MS(60000);
    for (int n = 0; n < PER_SUBMITTER && tu_now_ms() < until; n++) {
        pthread_mutex_lock(&l->lock);
        while (l->in_flight[sb->index] >= IN_FLIGHT_CAP && tu_now_ms() < until) {
            tu_cond_wait_ms(&l->cond, &l->lock, 10);
        }
        l->in_flight[sb->index]++;
        pthread_mutex_unlock(&l->lock);

        int id = sb->index * PER_SUBMITTER + n;
        req *q = &l->reqs[id];
        q->l = l;
        q->id = id;
        int rc;
        if (id % 4 == 0) {
            int kl = snprintf(key, sizeof(key), "s%d", id);
            rc = momento_set(l->client, "c", key, (size_t)kl, "x", 1, 0, NULL, load_cb, q);
        } else if (id % 4 == 1) {
            int kl = snprintf(key, sizeof(key), "g%d", N_REQUESTS + id % HOT_KEYS);
            rc = momento_coalescing_get(l->co, "c", key, (size_t)kl, NULL, load_cb, q);
        } else {
            int kl = snprintf(key, sizeof(key), "g%d", id);
            rc = momento_get(l->client, "c", key, (size_t)kl, NULL, load_cb, q);
        }
        if (rc == MOMENTO_OK) {
            atomic_fetch_add(&l->accepted, 1);
        } else {
            atomic_fetch_add(&l->refused, 1);
            pthread_mutex_lock(&l->lock);
            l->in_flight[sb->index]--;
            pthread_mutex_unlock(&l->lock);
        }
    }
    return NULL;
}

static void *dispatch_loop(void *arg)
{
    load *l = arg;
    int fd = momento_client_dispatch_fd(l->client);
    int64_t until = tu_now_ms() + TU_MS(90000);
    while (!atomic_load(&l->stop) && tu_now_ms() < until) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        poll(&p, 1, 10);
        momento_client_dispatch(l->client, 0);
    }
    return NULL;
}

/* Four threads submit 6,000 gets, coalesced gets and sets, up to 256 in
 * flight, which the batcher queues behind the RPCs in flight: the
 * batches' and coalesced RPCs' requests are reported on the dispatching
 * thread while the completion thread reports the others. Each request's
 * hook call comes once, before its callback; no two hook calls overlap
 * (an in-hook count, and under TSan a plain counter only the hook
 * writes). Without the client's metrics lock the two threads' calls meet. */
static void test_load_hook_calls_apart_and_first(void **state)
{
    tu_fixture *f = *state;
    prefill(f->client, N_REQUESTS + HOT_KEYS);

    load *l = calloc(1, sizeof(*l));
    pthread_mutex_init(&l->lock, NULL);
    pthread_cond_init(&l->cond, NULL);
    l->client = hooked_dispatch(f, load_hook, l, 30000, 0);
    assert_int_equal(momento_coalescer_new(&l->co, l->client), MOMENTO_OK);

    assert_int_equal(pthread_create(&l->dispatcher, NULL, dispatch_loop, l), 0);
    atomic_store(&l->dispatcher_set, true);
    pthread_t th[SUBMITTERS];
    submitter sb[SUBMITTERS];
    for (int i = 0; i < SUBMITTERS; i++) {
        sb[i] = (submitter){l, i};
        assert_int_equal(pthread_create(&th[i], NULL, submit_loop, &sb[i]), 0);
    }
    for (int i = 0; i < SUBMITTERS; i++)
        pthread_join(th[i], NULL);
    tu_wait_until(atomic_load(&l->callbacks) >= atomic_load(&l->accepted), 60000);
    atomic_store(&l->stop, true);
    pthread_join(l->dispatcher, NULL);

    int accepted = atomic_load(&l->accepted);
    assert_int_equal(accepted, N_REQUESTS);
    assert_int_equal(atomic_load(&l->refused), 0);
    assert_int_equal(atomic_load(&l->callbacks), accepted);
    momento_coalescer_free(l->co);
    momento_client_free(l->client);

    /* (b) Never two hook calls at once. */
    assert_int_equal(atomic_load(&l->overlaps), 0);
    assert_int_equal(l->plain_hooks, (size_t)accepted);
    /* (a) One hook call per request, each before its callback. */
    assert_int_equal(atomic_load(&l->hooks), accepted);
    assert_int_equal(atomic_load(&l->callbacks), accepted);
    assert_int_equal(atomic_load(&l->early), 0);
    assert_int_equal(atomic_load(&l->unknown), 0);
    assert_int_equal(atomic_load(&l->failed), 0);
    assert_int_equal(atomic_load(&l->off_dispatcher), 0);
    assert_int_equal(atomic_load(&l->set_hooks), N_REQUESTS / 4);
    assert_int_equal(atomic_load(&l->set_callbacks), N_REQUESTS / 4);
    for (int k = 0; k < N_REQUESTS; k++) {
        int want = k % 4 >= 2 ? 1 : 0; /* plain gets read their own key */
        assert_int_equal(atomic_load(&l->hooked[k]), want);
        assert_int_equal(atomic_load(&l->called[k]), want);
    }
    int hot = 0;
    for (int h = 0; h < HOT_KEYS; h++) {
        assert_int_equal(atomic_load(&l->hooked[N_REQUESTS + h]),
                         atomic_load(&l->called[N_REQUESTS + h]));
        hot += atomic_load(&l->called[N_REQUESTS + h]);
    }
    assert_int_equal(hot, N_REQUESTS / 4);
    /* (c) Shared answers' requests reported on the dispatching thread; a
     * request with an RPC of its own never there. */
    assert_true(atomic_load(&l->flagged_on_dispatcher) > 0);
    assert_int_equal(atomic_load(&l->own_on_dispatcher), 0);

    pthread_mutex_destroy(&l->lock);
    pthread_cond_destroy(&l->cond);
    free(l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_shared_answer_reported_on_dispatch, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_load_hook_calls_apart_and_first, tu_fixture_setup,
                                        tu_fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
