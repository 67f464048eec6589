/* momento_config_set_io_thread_callbacks(): the callbacks of the requests
 * protosocket carries run on its I/O thread, those of gRPC requests on the
 * completion thread as before. What it keeps: exactly one callback per
 * request (chained, held, freed from a callback), blocking calls from a
 * callback refused rather than hung, the metrics hook's calls one at a
 * time although they now come from two threads. */
#include "testing.h"
#include "testutil.h"

#include "momento/collections.h"
#include "momento/metrics.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool on_thread(const char *name)
{
    char got[16] = "";
    pthread_getname_np(pthread_self(), got, sizeof(got));
    return strcmp(got, name) == 0;
}

/* Callbacks counted under a lock (they come from two threads). */
typedef struct tally {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int n, ok, cancelled, other;
    int on_ps, on_cq;
    unsigned char seen[2048];
} tally;

typedef struct req {
    tally *k;
    int index;
} req;

static void tally_init(tally *k)
{
    memset(k, 0, sizeof(*k));
    pthread_mutex_init(&k->lock, NULL);
    pthread_cond_init(&k->cond, NULL);
}

static void tally_destroy(tally *k)
{
    pthread_mutex_destroy(&k->lock);
    pthread_cond_destroy(&k->cond);
}

static void tally_add(tally *k, int index, int err)
{
    bool ps = on_thread("momento-ps"), cq = on_thread("momento-cq");
    pthread_mutex_lock(&k->lock);
    k->seen[index]++;
    k->on_ps += ps;
    k->on_cq += cq;
    if (err == MOMENTO_OK)
        k->ok++;
    else if (err == MOMENTO_ERR_CANCELLED)
        k->cancelled++;
    else
        k->other++;
    k->n++;
    pthread_cond_broadcast(&k->cond);
    pthread_mutex_unlock(&k->lock);
}

static void tally_cb(const momento_result *r, void *userdata)
{
    req *q = userdata;
    tally_add(q->k, q->index, momento_result_error(r));
}

static void tally_wait(tally *k, int n)
{
    int64_t until = tu_now_ms() + TU_MS(20000);
    pthread_mutex_lock(&k->lock);
    while (k->n < n && tu_now_ms() < until)
        tu_cond_wait_ms(&k->cond, &k->lock, 50);
    pthread_mutex_unlock(&k->lock);
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

static void assert_each_once(tally *k, int n)
{
    pthread_mutex_lock(&k->lock);
    for (int i = 0; i < n; i++)
        assert_int_equal(k->seen[i], 1);
    assert_int_equal(k->n, n);
    pthread_mutex_unlock(&k->lock);
}

/* The hook: overlapping calls and calls per thread. */
typedef struct hooked {
    atomic_int inside;
    atomic_int overlaps;
    atomic_int calls, on_ps, on_cq;
} hooked;

static void hook(const momento_request_metrics *m, void *userdata)
{
    (void)m;
    hooked *h = userdata;
    if (atomic_fetch_add(&h->inside, 1) != 0)
        atomic_fetch_add(&h->overlaps, 1);
    atomic_fetch_add(&h->calls, 1);
    if (on_thread("momento-ps"))
        atomic_fetch_add(&h->on_ps, 1);
    else if (on_thread("momento-cq"))
        atomic_fetch_add(&h->on_cq, 1);
    /* Long enough that a call of the other thread would meet this one. */
    for (volatile int spin = 0; spin < 2000; spin++)
        ;
    atomic_fetch_sub(&h->inside, 1);
}

static momento_client *io_client(hooked *h, uint32_t timeout_ms)
{
    momento_config *cfg;
    assert_int_equal(momento_config_new(&cfg), MOMENTO_OK);
    assert_int_equal(momento_config_set_io_thread_callbacks(cfg, 1), MOMENTO_OK);
    momento_config_set_timeout_ms(cfg, (uint32_t)TU_MS(timeout_ms));
    if (h)
        assert_int_equal(momento_config_set_metrics(cfg, hook, h), MOMENTO_OK);
    momento_client *c = tu_client(tu_fx.server, cfg); /* protosocket: main() */
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
    momento_config_free(cfg);
}

/* Each callback makes the next get: a chain of 300, every link on the
 * I/O thread, written there. */
typedef struct chain {
    tally k; /* first: a link's req points to it */
    momento_client *c;
    req q[300];
    int next;
} chain;

static void chain_cb(const momento_result *r, void *userdata)
{
    req *q = userdata;
    chain *ch = (chain *)q->k; /* k is chain's first member */
    tally_cb(r, userdata);
    if (q->index + 1 < 300) {
        req *n = &ch->q[q->index + 1];
        if (momento_get(ch->c, "c", "k", 1, NULL, chain_cb, n) != MOMENTO_OK)
            tally_add(&ch->k, q->index + 1, -1); /* counted in `other` */
    }
}

static void test_chained_on_io_thread_and_grpc_on_cq(void **state)
{
    (void)state;
    hooked h;
    memset(&h, 0, sizeof(h));
    momento_client *c = io_client(&h, 5000);
    static chain ch;
    memset(&ch, 0, sizeof(ch));
    tally_init(&ch.k);
    ch.c = c;
    for (int i = 0; i < 300; i++)
        ch.q[i] = (req){.k = &ch.k, .index = i};
    assert_int_equal(momento_get(c, "c", "k", 1, NULL, chain_cb, &ch.q[0]), MOMENTO_OK);
    tally_wait(&ch.k, 300);
    assert_each_once(&ch.k, 300);
    assert_int_equal(ch.k.ok, 300);
    assert_int_equal(ch.k.on_ps, 300);
    /* gRPC's requests still come back on the completion thread. */
    tally g;
    tally_init(&g);
    req gq[20];
    for (int i = 0; i < 20; i++) {
        gq[i] = (req){.k = &g, .index = i};
        assert_int_equal(momento_dictionary_set_field(c, "c", "d", 1, "f", 1, "v", 1, 0, NULL,
                                                      tally_cb, &gq[i]),
                         MOMENTO_OK);
    }
    tally_wait(&g, 20);
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

/* Two threads' hook calls, never at once: gets over protosocket and
 * dictionary writes over gRPC, both in flight together. */
static void test_hook_calls_one_at_a_time(void **state)
{
    (void)state;
    hooked h;
    memset(&h, 0, sizeof(h));
    momento_client *c = io_client(&h, 10000);
    tally k;
    tally_init(&k);
    static req q[2000];
    for (int i = 0; i < 2000; i++) {
        q[i] = (req){.k = &k, .index = i};
        int rc = i % 2 ? momento_get(c, "c", "k", 1, NULL, tally_cb, &q[i])
                       : momento_dictionary_set_field(c, "c", "d", 1, "f", 1, "v", 1, 0, NULL,
                                                      tally_cb, &q[i]);
        assert_int_equal(rc, MOMENTO_OK);
    }
    tally_wait(&k, 2000);
    assert_each_once(&k, 2000);
    assert_int_equal(k.ok, 2000);
    assert_int_equal(atomic_load(&h.calls), 2000);
    assert_int_equal(atomic_load(&h.on_ps), 1000);
    assert_int_equal(atomic_load(&h.on_cq), 1000);
    assert_int_equal(atomic_load(&h.overlaps), 0);
    momento_client_free(c);
    tally_destroy(&k);
}

/* A blocking call of the same client from an I/O-thread callback. */
typedef struct blocker {
    tally k;
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

static void test_blocking_call_from_callback_refused(void **state)
{
    (void)state;
    momento_client *c = io_client(NULL, 5000);
    blocker b = {.c = c, .rc = 1};
    tally_init(&b.k);
    req q = {.k = &b.k, .index = 0};
    assert_int_equal(momento_get(c, "c", "k", 1, NULL, blocking_cb, &q), MOMENTO_OK);
    tally_wait(&b.k, 1);
    assert_each_once(&b.k, 1);
    assert_int_equal(b.k.on_ps, 1);
    assert_int_equal(b.rc, MOMENTO_ERR_WOULD_DEADLOCK);
    momento_client_free(c);
    tally_destroy(&b.k);
}

/* The client freed from an I/O-thread callback while gets are held by the
 * server: each of them still gets its one callback, and the release
 * finishes by itself (a leak or a hang fails under the sanitizers and the
 * test's timeout). */
typedef struct freer {
    tally k;
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

static void test_free_from_io_thread_callback(void **state)
{
    (void)state;
    int cq_before = threads_named("momento-cq");
    momento_client *c = io_client(NULL, 30000);
    static freer f;
    memset(&f, 0, sizeof(f));
    tally_init(&f.k);
    static req q[51];
    /* The gets are held; the set, answered at once, frees the client
     * from its callback. */
    assert_int_equal(momento_local_protosocket_fault(tu_fx.server, "get", -1, 600000, 1000000),
                     MOMENTO_OK);
    for (int i = 1; i <= 50; i++) {
        q[i] = (req){.k = &f.k, .index = i};
        assert_int_equal(momento_get(c, "c", "h", 1, NULL, free_cb, &q[i]), MOMENTO_OK);
    }
    f.c = c;
    q[0] = (req){.k = &f.k, .index = 0};
    assert_int_equal(momento_set(c, "c", "s", 1, "v", 1, 0, NULL, free_cb, &q[0]), MOMENTO_OK);
    tally_wait(&f.k, 51);
    assert_each_once(&f.k, 51);
    assert_null(f.c);
    assert_int_equal(f.k.ok, 1);
    assert_int_equal(f.k.cancelled, 50);
    /* Nobody joins the completion thread: it releases the client (the I/O
     * thread joined first) and ends by itself. */
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
        tu_fixture_test(test_chained_on_io_thread_and_grpc_on_cq),
        tu_fixture_test(test_hook_calls_one_at_a_time),
        tu_fixture_test(test_blocking_call_from_callback_refused),
        tu_fixture_test(test_free_from_io_thread_callback),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
