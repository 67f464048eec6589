/* Requests finished on protosocket's I/O thread (transport.h's finish()):
 * always in dispatch mode, where that thread decodes the reply, reports the
 * metrics hook and queues the callback for the dispatching thread; and in
 * the default mode with momento_config_set_io_thread_callbacks(), where it
 * runs the callback itself (gRPC's requests still call back on the
 * completion thread). What must hold either way: exactly one callback per
 * request - answered, retried, chained, cancelled, held, freed with the
 * client or freeing it from a callback - on the thread the mode promises;
 * a blocking call from the hook or a callback refused rather than hung;
 * the hook's calls one at a time although they come from two threads.
 * With momento_config_set_dispatch_io() dispatch mode has no I/O thread:
 * the dispatching thread reads and writes the connections, a reply waits
 * in the socket until it dispatches, and blocking calls and the free work
 * the connections themselves; the dispatch-mode tests run in both forms.
 * (test_dispatch.c is dispatch mode over gRPC: it needs the fault headers
 * and batching protosocket does not carry.) */
#include "testing.h"
#include "testutil.h"

#include "momento/collections.h"
#include "momento/metrics.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dirent.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool on_thread(const char *name)
{
    char got[16] = "";
    pthread_getname_np(pthread_self(), got, sizeof(got));
    return strcmp(got, name) == 0;
}

/* Threads of this process named `name` (/proc/self/task). */
static int threads_named(const char *name)
{
    DIR *d = opendir("/proc/self/task");
    assert_non_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        char path[300], comm[32] = "";
        snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue; /* it just ended */
        if (fgets(comm, sizeof(comm), f)) {
            comm[strcspn(comm, "\n")] = 0;
            n += strcmp(comm, name) == 0;
        }
        fclose(f);
    }
    closedir(d);
    return n;
}

/* Callbacks by what they got and where they ran, under a lock (with
 * I/O-thread callbacks they come from two threads). */
typedef struct tally {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    pthread_t expect; /* dispatch mode: the dispatching thread */
    bool check_thread;
    int n, ok, hits, cancelled, other;
    int on_ps, on_cq, wrong_thread, wrong_value, max_attempts, timeouts;
    unsigned char seen[2048]; /* per request index: callbacks so far */
} tally;

typedef struct req {
    tally *k;
    int index;
    const char *want; /* a get's expected value, or NULL */
} req;

/* `dispatching`: callbacks must run on this thread. */
static void tally_init(tally *k, bool dispatching)
{
    memset(k, 0, sizeof(*k));
    pthread_mutex_init(&k->lock, NULL);
    pthread_cond_init(&k->cond, NULL);
    k->expect = pthread_self();
    k->check_thread = dispatching;
}

static void tally_destroy(tally *k)
{
    pthread_mutex_destroy(&k->lock);
    pthread_cond_destroy(&k->cond);
}

static void tally_cb(const momento_result *r, void *userdata)
{
    req *q = userdata;
    tally *k = q->k;
    bool ps = on_thread("momento-ps"), cq = on_thread("momento-cq");
    int err = momento_result_error(r);
    bool hit = err == MOMENTO_OK && momento_result_outcome(r) == MOMENTO_OUTCOME_HIT;
    size_t len = 0;
    const void *v = hit ? momento_result_value(r, &len) : NULL;
    pthread_mutex_lock(&k->lock);
    k->seen[q->index]++;
    k->on_ps += ps;
    k->on_cq += cq;
    if (k->check_thread && !pthread_equal(pthread_self(), k->expect))
        k->wrong_thread++;
    if (momento_result_attempts(r) > k->max_attempts)
        k->max_attempts = momento_result_attempts(r);
    if (err == MOMENTO_OK)
        k->ok++;
    else if (err == MOMENTO_ERR_CANCELLED)
        k->cancelled++;
    else if (err == MOMENTO_ERR_TIMEOUT)
        k->timeouts++;
    else
        k->other++;
    if (hit) {
        k->hits++;
        if (!q->want || len != strlen(q->want) || memcmp(v, q->want, len) != 0)
            k->wrong_value++;
    }
    k->n++;
    pthread_cond_broadcast(&k->cond);
    pthread_mutex_unlock(&k->lock);
}

/* Until `k` has `n` callbacks or 20 s (scaled) passed: dispatching them
 * on this thread when `c` is in dispatch mode, else waiting. */
static void wait_for(momento_client *c, tally *k, int n)
{
    int64_t until = tu_now_ms() + TU_MS(20000);
    while (tu_locked_int(&k->lock, &k->n) < n && tu_now_ms() < until) {
        if (!k->check_thread) {
            pthread_mutex_lock(&k->lock);
            if (k->n < n)
                tu_cond_wait_ms(&k->cond, &k->lock, 50);
            pthread_mutex_unlock(&k->lock);
            continue;
        }
        struct pollfd p = {.fd = momento_client_dispatch_fd(c), .events = POLLIN};
        if (poll(&p, 1, 50) == 1)
            assert_true(momento_client_dispatch(c, 0) >= 0);
    }
}

static void assert_each_once(tally *k, int n)
{
    pthread_mutex_lock(&k->lock);
    for (int i = 0; i < n; i++)
        assert_int_equal(k->seen[i], 1);
    assert_int_equal(k->n, n);
    assert_int_equal(k->wrong_thread, 0);
    pthread_mutex_unlock(&k->lock);
}

/* The metrics hook: calls per thread, calls that overlapped, and what a
 * blocking call of the same client answered there. */
typedef struct hooked {
    momento_client *probe; /* set: one blocking get from the hook */
    atomic_int blocking_rc; /* 1: not tried */
    atomic_int inside, overlaps;
    atomic_int calls, on_ps, on_cq;
} hooked;

static void hooked_init(hooked *h)
{
    memset(h, 0, sizeof(*h));
    atomic_store(&h->blocking_rc, 1);
}

static void hook(const momento_request_metrics *m, void *userdata)
{
    hooked *h = userdata;
    if (atomic_fetch_add(&h->inside, 1) != 0)
        atomic_fetch_add(&h->overlaps, 1);
    atomic_fetch_add(&h->calls, 1);
    if (on_thread("momento-ps"))
        atomic_fetch_add(&h->on_ps, 1);
    else if (on_thread("momento-cq"))
        atomic_fetch_add(&h->on_cq, 1);
    if (h->probe && atomic_load(&h->blocking_rc) == 1 &&
        m->transport == MOMENTO_METRICS_TRANSPORT_PROTOSOCKET) {
        momento_result *r = NULL;
        atomic_store(&h->blocking_rc, momento_get_sync(h->probe, "c", "k0", 2, NULL, &r));
        momento_result_free(r);
    }
    /* Long enough that a call of the other thread would meet this one. */
    for (volatile int spin = 0; spin < 2000; spin++)
        ;
    atomic_fetch_sub(&h->inside, 1);
}

/* DISPATCH_IO: dispatch mode with momento_config_set_dispatch_io(). */
enum { DISPATCH, DISPATCH_IO, IO_CALLBACKS };

/* A client over protosocket (main() sets it up) in dispatch mode (with or
 * without its I/O thread) or with I/O-thread callbacks, with the hook when
 * `h`. */
static momento_client *ps_client(int mode, hooked *h, uint32_t timeout_ms)
{
    momento_config *cfg;
    assert_int_equal(momento_config_new(&cfg), MOMENTO_OK);
    if (mode != IO_CALLBACKS)
        assert_int_equal(momento_config_set_dispatch(cfg, 1), MOMENTO_OK);
    if (mode == DISPATCH_IO)
        assert_int_equal(momento_config_set_dispatch_io(cfg, 1), MOMENTO_OK);
    if (mode == IO_CALLBACKS)
        assert_int_equal(momento_config_set_io_thread_callbacks(cfg, 1), MOMENTO_OK);
    momento_config_set_timeout_ms(cfg, (uint32_t)TU_MS(timeout_ms));
    if (h)
        assert_int_equal(momento_config_set_metrics(cfg, hook, h), MOMENTO_OK);
    momento_client *c = tu_client(tu_fx.server, cfg);
    momento_config_free(cfg);
    return c;
}

static void test_setter_checks(void **state)
{
    (void)state;
    momento_config *cfg;
    assert_int_equal(momento_config_new(&cfg), MOMENTO_OK);
    assert_int_equal(momento_config_set_io_thread_callbacks(NULL, 1),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_config_set_io_thread_callbacks(cfg, 2), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_config_set_io_thread_callbacks(cfg, 0), MOMENTO_OK);
    assert_int_equal(momento_config_set_dispatch_io(NULL, 1), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_config_set_dispatch_io(cfg, -1), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_config_set_dispatch_io(cfg, 1), MOMENTO_OK);
    momento_config_free(cfg);
}

#define N 200

/* N sets of "k<i>" = "v<i>" through dispatch-mode client `c`, then N gets
 * of them wanting those values: requests 0 .. 2N-1 of `k`, which had
 * `before` callbacks already, dispatched on this thread until all are
 * called back. */
static void sets_then_gets(momento_client *c, tally *k, int before)
{
    static req q[2 * N];
    static char vals[N][16];
    char key[16];
    for (int i = 0; i < N; i++) {
        snprintf(key, sizeof(key), "k%d", i);
        snprintf(vals[i], sizeof(vals[i]), "v%d", i);
        q[i] = (req){.k = k, .index = i};
        assert_int_equal(momento_set(c, "c", key, strlen(key), vals[i], strlen(vals[i]), 0, NULL,
                                     tally_cb, &q[i]),
                         MOMENTO_OK);
    }
    wait_for(c, k, before + N);
    for (int i = 0; i < N; i++) {
        snprintf(key, sizeof(key), "k%d", i);
        q[N + i] = (req){.k = k, .index = N + i, .want = vals[i]};
        assert_int_equal(momento_get(c, "c", key, strlen(key), NULL, tally_cb, &q[N + i]),
                         MOMENTO_OK);
    }
    wait_for(c, k, before + 2 * N);
}

/* Dispatch mode: N sets, then N gets of them, called back on this thread
 * with the values written, each reported once where its RPC ended - the
 * I/O thread, not the completion thread, which the ends no longer cross. */
static void test_dispatch_answers_reported_on_io_thread(void **state)
{
    (void)state;
    hooked h;
    hooked_init(&h);
    momento_client *c = ps_client(DISPATCH, &h, 5000);
    tally k;
    tally_init(&k, true);
    sets_then_gets(c, &k, 0);
    assert_each_once(&k, 2 * N);
    assert_int_equal(k.ok, 2 * N);
    assert_int_equal(k.hits, N);
    assert_int_equal(k.wrong_value, 0);
    assert_int_equal(atomic_load(&h.calls), 2 * N);
    assert_int_equal(atomic_load(&h.on_ps), 2 * N);
    assert_int_equal(atomic_load(&h.on_cq), 0);
    momento_client_free(c);
    tally_destroy(&k);
}

/* A blocking call of the same client from the hook (dispatch mode) would
 * wait for the very thread the hook runs on. */
static void test_dispatch_blocking_call_from_hook_refused(void **state)
{
    (void)state;
    hooked h;
    hooked_init(&h);
    momento_client *c = ps_client(DISPATCH, &h, 5000);
    h.probe = c;
    tally k;
    tally_init(&k, true);
    req q = {.k = &k, .index = 0};
    assert_int_equal(momento_get(c, "c", "k0", 2, NULL, tally_cb, &q), MOMENTO_OK);
    wait_for(c, &k, 1);
    assert_each_once(&k, 1);
    assert_int_equal(atomic_load(&h.blocking_rc), MOMENTO_ERR_WOULD_DEADLOCK);
    h.probe = NULL;
    momento_client_free(c);
    tally_destroy(&k);
}

/* `n` gets of `key` through dispatch-mode client `c`, tallied in `k`
 * (initialised here), dispatched on this thread until each is called
 * back, and checked called back once each. */
static void gets_called_back(momento_client *c, tally *k, const char *key, int n)
{
    static req q[64];
    assert_true(n <= 64);
    tally_init(k, true);
    for (int i = 0; i < n; i++) {
        q[i] = (req){.k = k, .index = i};
        assert_int_equal(momento_get(c, "c", key, strlen(key), NULL, tally_cb, &q[i]), MOMENTO_OK);
    }
    wait_for(c, k, n);
    assert_each_once(k, n);
}

/* The first 2 gets to arrive fail UNAVAILABLE, which the default strategy
 * retries (3 attempts: even a request that meets both failures ends OK):
 * the failed attempt ends on the I/O thread (or the dispatching one),
 * which makes the next (or arms its timer). */
static void dispatch_retries_made_from_io_thread(int mode)
{
    assert_int_equal(momento_local_protosocket_fault(tu_fx.server, "get", 14, 0, 2), MOMENTO_OK);
    momento_client *c = ps_client(mode, NULL, 5000);
    tally k;
    gets_called_back(c, &k, "absent", 20);
    assert_int_equal(k.ok, 20);
    assert_true(k.max_attempts >= 2);
    momento_client_free(c);
    tally_destroy(&k);
}

/* Dispatch mode, every get held by the server (released by a cancel frame
 * or the connection closing) and the sets answered: 30 gets cancelled by a
 * token, 30 ended by the free, 30 sets' callbacks left queued for it. */
static void dispatch_cancel_and_free_with_requests_held(int mode)
{
    assert_int_equal(momento_local_protosocket_fault(tu_fx.server, "get", -1, 600000, 1000000),
                     MOMENTO_OK);
    momento_client *c = ps_client(mode, NULL, 30000);
    tally k;
    tally_init(&k, true);
    momento_cancel_token *tok;
    assert_int_equal(momento_cancel_token_new(&tok), MOMENTO_OK);
    momento_request_options tokened = MOMENTO_REQUEST_OPTIONS_INIT;
    tokened.cancel = tok;
    static req q[90];
    char key[16];
    for (int i = 0; i < 90; i++) {
        snprintf(key, sizeof(key), "%c%d", i < 60 ? 'h' : 's', i);
        q[i] = (req){.k = &k, .index = i};
        int rc = i < 60 ? momento_get(c, "c", key, strlen(key), i < 30 ? &tokened : NULL,
                                      tally_cb, &q[i])
                        : momento_set(c, "c", key, strlen(key), "v", 1, 0, NULL, tally_cb, &q[i]);
        assert_int_equal(rc, MOMENTO_OK);
    }
    momento_cancel(tok);
    wait_for(c, &k, 30);
    assert_int_equal(k.cancelled, 30);
    for (int i = 0; i < 30; i++)
        assert_int_equal(k.seen[i], 1);
    /* The sets' answers queued, not run: the free must run them. Without
     * the I/O thread those not yet dispatched are still unread: the free
     * reads them too. */
    if (mode == DISPATCH) {
        tu_wait_until(momento__dispatch_queued(c) >= 30 - (size_t)(k.n - 30), 20000);
        assert_int_equal(momento__dispatch_queued(c) + (size_t)(k.n - 30), 30);
    } else {
        assert_int_equal(momento__dispatch_queued(c), 0);
    }
    int sets_answered = k.n - 30;
    /* The free ends the held gets and runs every queued callback, on this
     * thread, once each. Without the I/O thread a set whose answer no
     * dispatch read is still in flight at the free, and ends CANCELLED
     * with the gets. */
    momento_client_free(c);
    assert_each_once(&k, 90);
    assert_int_equal(k.ok + k.cancelled, 90);
    assert_int_equal(k.ok, mode == DISPATCH ? 30 : sets_answered);
    momento_cancel_token_free(tok);
    assert_int_equal(momento_local_protosocket_fault(tu_fx.server, NULL, 0, 0, 0), MOMENTO_OK);
    tally_destroy(&k);
}

/* Frees the client from the first callback that finds it set. */
typedef struct freer {
    tally k; /* first: a request's req points to it */
    momento_client *c;
} freer;

static void free_cb(const momento_result *r, void *userdata)
{
    req *q = userdata;
    freer *f = (freer *)q->k;
    tally_cb(r, userdata);
    pthread_mutex_lock(&f->k.lock);
    momento_client *c = f->c;
    f->c = NULL;
    pthread_mutex_unlock(&f->k.lock);
    if (c)
        momento_client_free(c);
}

static momento_client *freer_client(freer *f)
{
    pthread_mutex_lock(&f->k.lock);
    momento_client *c = f->c;
    pthread_mutex_unlock(&f->k.lock);
    return c;
}

static void dispatch_free_from_callback(int mode)
{
    momento_client *c = ps_client(mode, NULL, 5000);
    static freer f;
    tally_init(&f.k, true);
    f.c = c;
    static req q[100];
    for (int i = 0; i < 100; i++) {
        q[i] = (req){.k = &f.k, .index = i};
        assert_int_equal(momento_get(c, "c", "k", 1, NULL, free_cb, &q[i]), MOMENTO_OK);
    }
    int64_t until = tu_now_ms() + TU_MS(20000);
    while (freer_client(&f) && tu_now_ms() < until) {
        struct pollfd p = {.fd = momento_client_dispatch_fd(c), .events = POLLIN};
        if (poll(&p, 1, 50) == 1)
            assert_true(momento_client_dispatch(c, 1) >= 0);
    }
    /* The free ran inside the first callback: every other request got its
     * one callback by the time the dispatch that ran it returned. */
    assert_null(f.c);
    assert_each_once(&f.k, 100);
    assert_int_equal(f.k.ok + f.k.cancelled, 100);
    tally_destroy(&f.k);
}

/* The dispatch-mode tests above, with and without protosocket's I/O thread. */
#define BOTH_DISPATCH_MODES(name)                                                                 \
    static void test_##name(void **state)                                                          \
    {                                                                                              \
        (void)state;                                                                               \
        name(DISPATCH);                                                                            \
    }                                                                                              \
    static void test_##name##_io(void **state)                                                     \
    {                                                                                              \
        (void)state;                                                                               \
        name(DISPATCH_IO);                                                                         \
    }
BOTH_DISPATCH_MODES(dispatch_retries_made_from_io_thread)
BOTH_DISPATCH_MODES(dispatch_cancel_and_free_with_requests_held)
BOTH_DISPATCH_MODES(dispatch_free_from_callback)

/* Without the I/O thread: no "momento-ps" thread is made; a reply waits in
 * the socket until the application dispatches (nothing is queued before,
 * though the fd is readable), then N sets and N gets are read, reported
 * and called back on the dispatching thread - no thread of the library's
 * touches them. */
static void test_dispatch_io_no_thread_crossed(void **state)
{
    (void)state;
    int ps_before = threads_named("momento-ps");
    hooked h;
    hooked_init(&h);
    momento_client *c = ps_client(DISPATCH_IO, &h, 5000);
    assert_int_equal(threads_named("momento-ps"), ps_before);
    tally k;
    tally_init(&k, true);
    static req first;
    first = (req){.k = &k, .index = 2 * N};
    assert_int_equal(momento_set(c, "c", "first", 5, "v", 1, 0, NULL, tally_cb, &first),
                     MOMENTO_OK);
    /* Until this thread dispatches, the connection is not even made: the
     * fd says there is work, and nothing has come back. */
    struct pollfd p = {.fd = momento_client_dispatch_fd(c), .events = POLLIN};
    assert_int_equal(poll(&p, 1, (int)TU_MS(5000)), 1);
    usleep(50000);
    assert_int_equal(momento__dispatch_queued(c), 0);
    assert_int_equal(tu_locked_int(&k.lock, &k.n), 0);
    wait_for(c, &k, 1);
    sets_then_gets(c, &k, 1);
    assert_each_once(&k, 2 * N + 1);
    assert_int_equal(k.ok, 2 * N + 1);
    assert_int_equal(k.hits, N);
    assert_int_equal(k.wrong_value, 0);
    assert_int_equal(k.on_ps + k.on_cq, 0);
    assert_int_equal(atomic_load(&h.calls), 2 * N + 1);
    assert_int_equal(atomic_load(&h.on_ps) + atomic_load(&h.on_cq), 0);
    momento_client_free(c);
    tally_destroy(&k);
}

/* Without the I/O thread, a get the server holds ends at its deadline
 * through the dispatch: the fd turns readable when it passes. */
static void test_dispatch_io_deadline(void **state)
{
    (void)state;
    assert_int_equal(momento_local_protosocket_fault(tu_fx.server, "get", -1, 600000, 1000000),
                     MOMENTO_OK);
    momento_client *c = ps_client(DISPATCH_IO, NULL, 300);
    tally k;
    gets_called_back(c, &k, "held", 10);
    assert_int_equal(k.timeouts, 10);
    momento_client_free(c);
    assert_int_equal(momento_local_protosocket_fault(tu_fx.server, NULL, 0, 0, 0), MOMENTO_OK);
    tally_destroy(&k);
}

/* Blocking calls of a client without the I/O thread: answered although no
 * thread dispatches (the waiting thread works the connection), and from
 * another thread while this one dispatches async requests (two threads
 * stepping the same connections at once). */
typedef struct syncer {
    momento_client *c;
    int ok, wrong;
} syncer;

static void *sync_gets(void *arg)
{
    syncer *y = arg;
    for (int i = 0; i < N; i++) {
        momento_result *r = NULL;
        int rc = momento_get_sync(y->c, "c", "sync", 4, NULL, &r);
        size_t len = 0;
        const void *v = rc == MOMENTO_OK && momento_result_is_hit(r) ? momento_result_value(r, &len)
                                                                     : NULL;
        if (v && len == 2 && memcmp(v, "sv", 2) == 0)
            y->ok++;
        else
            y->wrong++;
        momento_result_free(r);
    }
    return NULL;
}

static void test_dispatch_io_blocking_calls(void **state)
{
    (void)state;
    momento_client *c = ps_client(DISPATCH_IO, NULL, 5000);
    momento_result *r = NULL;
    assert_int_equal(momento_set_sync(c, "c", "sync", 4, "sv", 2, 0, NULL, &r), MOMENTO_OK);
    momento_result_free(r);
    assert_int_equal(momento__dispatch_queued(c), 0);
    syncer y = {.c = c};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, sync_gets, &y), 0);
    tally k;
    tally_init(&k, true);
    static req q[N];
    for (int i = 0; i < N; i++) {
        q[i] = (req){.k = &k, .index = i, .want = "sv"};
        assert_int_equal(momento_get(c, "c", "sync", 4, NULL, tally_cb, &q[i]), MOMENTO_OK);
    }
    wait_for(c, &k, N);
    pthread_join(th, NULL);
    assert_each_once(&k, N);
    assert_int_equal(k.hits, N);
    assert_int_equal(k.wrong_value, 0);
    assert_int_equal(y.ok, N);
    assert_int_equal(y.wrong, 0);
    momento_client_free(c);
    tally_destroy(&k);
}

/* I/O-thread callbacks: each callback makes the next get, a chain of 300,
 * every link on the I/O thread, written there; gRPC's requests still come
 * back on the completion thread. */
typedef struct chain {
    tally k; /* first: a link's req points to it */
    momento_client *c;
    req q[300];
} chain;

static void chain_cb(const momento_result *r, void *userdata)
{
    req *q = userdata;
    chain *ch = (chain *)q->k;
    tally_cb(r, userdata);
    if (q->index + 1 < 300 &&
        momento_get(ch->c, "c", "k", 1, NULL, chain_cb, &ch->q[q->index + 1]) != MOMENTO_OK) {
        pthread_mutex_lock(&ch->k.lock);
        ch->k.other++; /* the chain broke: the wait below times out */
        pthread_mutex_unlock(&ch->k.lock);
    }
}

static void test_io_chained_and_grpc_on_cq(void **state)
{
    (void)state;
    hooked h;
    hooked_init(&h);
    momento_client *c = ps_client(IO_CALLBACKS, &h, 5000);
    static chain ch;
    tally_init(&ch.k, false);
    ch.c = c;
    for (int i = 0; i < 300; i++)
        ch.q[i] = (req){.k = &ch.k, .index = i};
    assert_int_equal(momento_get(c, "c", "k", 1, NULL, chain_cb, &ch.q[0]), MOMENTO_OK);
    wait_for(c, &ch.k, 300);
    assert_each_once(&ch.k, 300);
    assert_int_equal(ch.k.ok, 300);
    assert_int_equal(ch.k.on_ps, 300);
    tally g;
    tally_init(&g, false);
    req gq[20];
    for (int i = 0; i < 20; i++) {
        gq[i] = (req){.k = &g, .index = i};
        assert_int_equal(momento_dictionary_set_field(c, "c", "d", 1, "f", 1, "v", 1, 0, NULL,
                                                      tally_cb, &gq[i]),
                         MOMENTO_OK);
    }
    wait_for(c, &g, 20);
    assert_each_once(&g, 20);
    assert_int_equal(g.ok, 20);
    assert_int_equal(g.on_cq, 20);
    assert_int_equal(atomic_load(&h.calls), 320);
    assert_int_equal(atomic_load(&h.on_ps), 300);
    assert_int_equal(atomic_load(&h.on_cq), 20);
    momento_client_free(c);
    tally_destroy(&ch.k);
    tally_destroy(&g);
}

/* I/O-thread callbacks: the hook's calls from two threads, never at once -
 * gets over protosocket and dictionary writes over gRPC in flight
 * together. */
static void test_io_hook_calls_one_at_a_time(void **state)
{
    (void)state;
    hooked h;
    hooked_init(&h);
    momento_client *c = ps_client(IO_CALLBACKS, &h, 10000);
    tally k;
    tally_init(&k, false);
    static req q[2000];
    for (int i = 0; i < 2000; i++) {
        q[i] = (req){.k = &k, .index = i};
        int rc = i % 2 ? momento_get(c, "c", "k", 1, NULL, tally_cb, &q[i])
                       : momento_dictionary_set_field(c, "c", "d", 1, "f", 1, "v", 1, 0, NULL,
                                                      tally_cb, &q[i]);
        assert_int_equal(rc, MOMENTO_OK);
    }
    wait_for(c, &k, 2000);
    assert_each_once(&k, 2000);
    assert_int_equal(k.ok, 2000);
    assert_int_equal(atomic_load(&h.calls), 2000);
    assert_int_equal(atomic_load(&h.on_ps), 1000);
    assert_int_equal(atomic_load(&h.on_cq), 1000);
    assert_int_equal(atomic_load(&h.overlaps), 0);
    momento_client_free(c);
    tally_destroy(&k);
}

/* I/O-thread callbacks: a blocking call of the same client from one. */
typedef struct blocker {
    tally k; /* first: a request's req points to it */
    momento_client *c;
    int rc;
} blocker;

static void blocking_cb(const momento_result *r, void *userdata)
{
    req *q = userdata;
    blocker *b = (blocker *)q->k;
    momento_result *got = NULL;
    b->rc = momento_get_sync(b->c, "c", "k", 1, NULL, &got);
    momento_result_free(got);
    tally_cb(r, userdata);
}

static void test_io_blocking_call_from_callback_refused(void **state)
{
    (void)state;
    momento_client *c = ps_client(IO_CALLBACKS, NULL, 5000);
    blocker b = {.c = c, .rc = 1};
    tally_init(&b.k, false);
    req q = {.k = &b.k, .index = 0};
    assert_int_equal(momento_get(c, "c", "k", 1, NULL, blocking_cb, &q), MOMENTO_OK);
    wait_for(c, &b.k, 1);
    assert_each_once(&b.k, 1);
    assert_int_equal(b.k.on_ps, 1);
    assert_int_equal(b.rc, MOMENTO_ERR_WOULD_DEADLOCK);
    momento_client_free(c);
    tally_destroy(&b.k);
}

/* I/O-thread callbacks: the client freed from one while gets are held by
 * the server. Each of them still gets its one callback, and the release
 * finishes by itself: nobody joins the completion thread, which releases
 * the client (joining the I/O thread first) and ends (a leak or a hang
 * fails under the sanitizers and the test's timeout). */
static void test_io_free_from_callback(void **state)
{
    (void)state;
    int cq_before = threads_named("momento-cq");
    momento_client *c = ps_client(IO_CALLBACKS, NULL, 30000);
    static freer f;
    tally_init(&f.k, false);
    static req q[51];
    /* The gets are held; the set, answered at once, frees the client from
     * its callback. */
    assert_int_equal(momento_local_protosocket_fault(tu_fx.server, "get", -1, 600000, 1000000),
                     MOMENTO_OK);
    for (int i = 1; i <= 50; i++) {
        q[i] = (req){.k = &f.k, .index = i};
        assert_int_equal(momento_get(c, "c", "h", 1, NULL, free_cb, &q[i]), MOMENTO_OK);
    }
    pthread_mutex_lock(&f.k.lock);
    f.c = c;
    pthread_mutex_unlock(&f.k.lock);
    q[0] = (req){.k = &f.k, .index = 0};
    assert_int_equal(momento_set(c, "c", "s", 1, "v", 1, 0, NULL, free_cb, &q[0]), MOMENTO_OK);
    wait_for(NULL, &f.k, 51);
    assert_each_once(&f.k, 51);
    assert_null(freer_client(&f));
    assert_int_equal(f.k.ok, 1);
    assert_int_equal(f.k.cancelled, 50);
    tu_wait_until(threads_named("momento-cq") == cq_before, 20000);
    assert_int_equal(threads_named("momento-cq"), cq_before);
    assert_int_equal(momento_local_protosocket_fault(tu_fx.server, NULL, 0, 0, 0), MOMENTO_OK);
    tally_destroy(&f.k);
}

int main(void)
{
    /* The fixture's server gets a protosocket port, and tu_client() sends
     * get, set and delete to it (testutil.c). */
    setenv("MOMENTO_TEST_TRANSPORT", "protosocket", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_setter_checks),
        tu_fixture_test(test_dispatch_answers_reported_on_io_thread),
        tu_fixture_test(test_dispatch_blocking_call_from_hook_refused),
        tu_fixture_test(test_dispatch_retries_made_from_io_thread),
        tu_fixture_test(test_dispatch_retries_made_from_io_thread_io),
        tu_fixture_test(test_dispatch_cancel_and_free_with_requests_held),
        tu_fixture_test(test_dispatch_cancel_and_free_with_requests_held_io),
        tu_fixture_test(test_dispatch_free_from_callback),
        tu_fixture_test(test_dispatch_free_from_callback_io),
        tu_fixture_test(test_dispatch_io_no_thread_crossed),
        tu_fixture_test(test_dispatch_io_deadline),
        tu_fixture_test(test_dispatch_io_blocking_calls),
        tu_fixture_test(test_io_chained_and_grpc_on_cq),
        tu_fixture_test(test_io_hook_calls_one_at_a_time),
        tu_fixture_test(test_io_blocking_call_from_callback_refused),
        tu_fixture_test(test_io_free_from_callback),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
