/* The transport seam (lib/transport/transport.h, docs/transport.md) with a
 * transport that is not gRPC: a fake that answers Get and Set from a
 * thread of its own and hands each end to the client's completion thread
 * through the engine's post(). Everything above the seam - retries, cancel
 * tokens, deadlines, the client's free, blocking calls - must work through
 * it unchanged, while the RPCs not routed to it (Ping) still go over gRPC
 * to momento-local. This is what the protosocket transport will plug into. */
#include "cacheclient.pb-c.h"
#include "clock.h"
#include "testing.h"
#include "momento/coalescer.h"
#include "momento/momento.h"
#include "testutil.h"
#include "transport/transport.h"

#include <grpc/slice.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

/* ------------------------------------------------------------ the fake */

typedef struct fake_attempt {
    momento__attempt base; /* first, as the seam asks */
    const momento__wire_request *rq;
    int64_t deadline_ns;
    const char *cancelled; /* why; under fake.lock */
    grpc_slice msg;        /* the reply's one message */
    struct fake_attempt *next;
} fake_attempt;

typedef struct fake {
    momento__transport base; /* first */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    fake_attempt *queue; /* launched, not yet ended */
    bool stop;
    pthread_t thread;
    /* What it does. */
    bool hold;      /* answer nothing: only a cancel or the deadline ends one */
    bool hold_get, hold_set; /* answer no Get / no Set until lowered */
    bool block_launch; /* a Get's launch returns only once this is lowered */
    bool fail_get_launch; /* ...and then fails, with nothing launched */
    int fail_first; /* the first N attempts fail UNAVAILABLE */
    /* What it saw (under lock). */
    int prepared, launched, completed, ended, failed;
    int in_queue;
    char cache[64];
} fake;

/* The seam's deadlines are on gRPC's monotonic clock. */
static int64_t mono_ns(void)
{
    return momento__now_ns();
}

static int fake_prepare(momento__transport *t, momento__attempt *a,
                        const momento__wire_request *rq, gpr_timespec deadline)
{
    fake *f = (fake *)t;
    fake_attempt *fa = (fake_attempt *)a;
    fa->rq = rq;
    fa->deadline_ns = deadline.tv_sec == INT64_MAX ? INT64_MAX : momento__gpr_ns(deadline);
    pthread_mutex_lock(&f->lock);
    f->prepared++;
    if (GRPC_SLICE_LENGTH(rq->cache) < sizeof(f->cache)) {
        memcpy(f->cache, GRPC_SLICE_START_PTR(rq->cache), GRPC_SLICE_LENGTH(rq->cache));
        f->cache[GRPC_SLICE_LENGTH(rq->cache)] = 0;
    }
    pthread_mutex_unlock(&f->lock);
    return 0;
}

/* The transport the attempt belongs to: the one its engine routed it to. */
static fake *the_fake;

static int fake_launch(momento__attempt *a)
{
    fake *f = the_fake;
    fake_attempt *fa = (fake_attempt *)a;
    bool get = fa->rq->method == MOMENTO__RPC_GET; /* `fa` may be answered and ended below */
    pthread_mutex_lock(&f->lock);
    if (get && f->fail_get_launch) {
        f->launched++; /* counted, so that a test sees it arrive */
        pthread_cond_broadcast(&f->cond);
        while (f->block_launch)
            pthread_cond_wait(&f->cond, &f->lock);
        f->launched--;
        pthread_mutex_unlock(&f->lock);
        return MOMENTO_ERR_CONNECTION;
    }
    f->launched++;
    f->in_queue++;
    fa->next = f->queue;
    f->queue = fa;
    pthread_cond_broadcast(&f->cond);
    /* Launched (it may be answered meanwhile), but its launcher not back. */
    while (f->block_launch && get)
        pthread_cond_wait(&f->cond, &f->lock);
    pthread_mutex_unlock(&f->lock);
    return 0;
}

static void fake_cancel(void *a, const char *why)
{
    fake *f = the_fake;
    pthread_mutex_lock(&f->lock);
    ((fake_attempt *)a)->cancelled = why;
    pthread_cond_broadcast(&f->cond);
    pthread_mutex_unlock(&f->lock);
}

static void fake_end(momento__attempt *a)
{
    fake *f = the_fake;
    fake_attempt *fa = (fake_attempt *)a;
    grpc_slice_unref(fa->msg);
    grpc_slice_unref(a->reply.details);
    void *data = a->data;
    void (*done)(momento__attempt *) = a->done;
    memset(fa, 0, sizeof(*fa));
    a->data = data;
    a->done = done;
    pthread_mutex_lock(&f->lock);
    f->ended++;
    pthread_mutex_unlock(&f->lock);
}

/* Fills the reply of `fa` (fake's lock not held). */
static void answer(fake *f, fake_attempt *fa, bool fail)
{
    momento__reply *r = &fa->base.reply;
    if (fa->cancelled) {
        r->status = 1; /* CANCELLED */
        r->details = grpc_slice_from_static_string(fa->cancelled);
        return;
    }
    if (!f->hold && fail) {
        r->status = 14; /* UNAVAILABLE */
        r->details = grpc_slice_from_static_string("the fake fails this one");
        return;
    }
    if (f->hold || fa->deadline_ns <= mono_ns()) {
        r->status = 4; /* DEADLINE_EXCEEDED */
        r->details = grpc_slice_from_static_string("Deadline Exceeded");
        return;
    }
    uint8_t buf[256];
    size_t len = 0;
    const grpc_slice *body = &fa->rq->body;
    if (fa->rq->method == MOMENTO__RPC_GET) {
        CacheClient__GetRequest *rq = cache_client____get_request__unpack(
            NULL, GRPC_SLICE_LENGTH(*body), GRPC_SLICE_START_PTR(*body));
        assert_non_null(rq);
        char value[128];
        int n = snprintf(value, sizeof(value), "fake:%.*s", (int)rq->cache_key.len,
                         (const char *)rq->cache_key.data);
        CacheClient__GetResponse rs = CACHE_CLIENT____GET_RESPONSE__INIT;
        rs.result = CACHE_CLIENT__ECACHE_RESULT__Hit;
        rs.cache_body.data = (uint8_t *)value;
        rs.cache_body.len = (size_t)n;
        len = cache_client____get_response__pack(&rs, buf);
        cache_client____get_request__free_unpacked(rq, NULL);
    } else if (fa->rq->method == MOMENTO__RPC_SET) {
        CacheClient__SetResponse rs = CACHE_CLIENT____SET_RESPONSE__INIT;
        rs.result = CACHE_CLIENT__ECACHE_RESULT__Ok;
        len = cache_client____set_response__pack(&rs, buf);
    } else {
        r->status = 12; /* UNIMPLEMENTED */
        return;
    }
    fa->msg = grpc_slice_from_copied_buffer((const char *)buf, len);
    r->status = 0;
    r->msgs = &fa->msg;
    r->n_msgs = 1;
}

/* The fake's own thread: ends what is due (everything, unless holding;
 * a cancelled one; one past its deadline) and posts it to the client. */
static void *fake_thread(void *arg)
{
    fake *f = arg;
    pthread_mutex_lock(&f->lock);
    while (!f->stop) {
        int64_t now = mono_ns();
        fake_attempt **p = &f->queue, *due = NULL;
        for (; *p; p = &(*p)->next) {
            momento__rpc_id m = (*p)->rq->method;
            bool held = f->hold || (f->hold_get && m == MOMENTO__RPC_GET) ||
                        (f->hold_set && m == MOMENTO__RPC_SET);
            if (!held || (*p)->cancelled || (*p)->deadline_ns <= now) {
                due = *p;
                *p = due->next;
                break;
            }
        }
        if (!due) {
            tu_cond_wait_ms(&f->cond, &f->lock, 2);
            continue;
        }
        bool fail = f->failed < f->fail_first;
        if (fail)
            f->failed++;
        f->in_queue--;
        f->completed++;
        pthread_mutex_unlock(&f->lock);
        /* Outside the fake's lock, which its cancel() (called under the
         * client's lock) takes: post() takes the client's. */
        answer(f, due, fail);
        f->base.post(&f->base, &due->base);
        pthread_mutex_lock(&f->lock);
    }
    pthread_mutex_unlock(&f->lock);
    return NULL;
}

static const momento__transport_ops fake_ops = {
    .name = "fake",
    .attempt_size = sizeof(fake_attempt),
    .prepare = fake_prepare,
    .launch = fake_launch,
    .cancel = fake_cancel,
    .end = fake_end,
    /* run, wake, shutdown, close: the loop is gRPC's; the fake is only
     * routed to, never the client's own. */
};

static fake *fake_new(void)
{
    fake *f = calloc(1, sizeof(*f));
    f->base.ops = &fake_ops;
    pthread_mutex_init(&f->lock, NULL);
    pthread_cond_init(&f->cond, NULL);
    the_fake = f;
    assert_int_equal(pthread_create(&f->thread, NULL, fake_thread, f), 0);
    return f;
}

static void fake_free(fake *f)
{
    pthread_mutex_lock(&f->lock);
    f->stop = true;
    pthread_cond_broadcast(&f->cond);
    pthread_mutex_unlock(&f->lock);
    pthread_join(f->thread, NULL);
    assert_null(f->queue); /* nothing launched was left unanswered */
    pthread_mutex_destroy(&f->lock);
    pthread_cond_destroy(&f->cond);
    the_fake = NULL;
    free(f);
}

static int fake_count(fake *f, const int *field)
{
    pthread_mutex_lock(&f->lock);
    int n = *field;
    pthread_mutex_unlock(&f->lock);
    return n;
}

/* A client of the fixture's server whose Get and Set go to `f`. */
static momento_client *routed_client(tu_fixture *fx, fake *f, const momento_config *cfg)
{
    momento_client *c = tu_client(fx->server, cfg);
    assert_int_equal(momento__client_route(c, MOMENTO__RPC_GET, &f->base), MOMENTO_OK);
    assert_int_equal(momento__client_route(c, MOMENTO__RPC_SET, &f->base), MOMENTO_OK);
    return c;
}

/* ------------------------------------------------------------ tests */

static void test_routed_rpcs_go_through_the_transport(void **state)
{
    tu_fixture *fx = *state;
    fake *f = fake_new();
    momento_client *c = routed_client(fx, f, NULL);
    uint64_t server_gets = momento_local_rpc_count(fx->server, "Get", -1);
    uint64_t server_pings = momento_local_rpc_count(fx->server, "Ping", -1);

    /* Blocking calls go through it too. */
    momento_result *r = NULL;
    assert_int_equal(momento_set_sync(c, "c", "k", 1, "v", 1, 0, NULL, &r), MOMENTO_OK);
    momento_result_free(r);
    tu_assert_get(c, "c", "abc", 3, "fake:abc", 8);

    /* An async one is called back on the client's completion thread. */
    tu_rec x;
    memset(&x, 0, sizeof(x));
    assert_int_equal(momento_get(c, "c", "xy", 2, NULL, tu_rec_cb, &x), MOMENTO_OK);
    tu_wait_until(tu_rec_calls(&x) == 1, 20000);
    assert_int_equal(x.error, MOMENTO_OK);
    assert_string_equal(x.value, "fake:xy");
    assert_string_equal(x.thread, "momento-cq");
    assert_int_equal(x.attempts, 1);

    /* What is not routed still goes over gRPC to the server. */
    assert_int_equal(momento_ping_sync(c, NULL, &r), MOMENTO_OK);
    momento_result_free(r);
    assert_int_equal(momento_local_rpc_count(fx->server, "Ping", -1) - server_pings, 1);
    assert_int_equal(momento_local_rpc_count(fx->server, "Get", -1), server_gets);

    assert_int_equal(fake_count(f, &f->launched), 3);
    assert_string_equal(f->cache, "c");
    momento_client_free(c);
    /* Every attempt it made was given back. */
    assert_int_equal(fake_count(f, &f->ended), fake_count(f, &f->prepared));
    fake_free(f);
}

static void test_retries_through_the_transport(void **state)
{
    tu_fixture *fx = *state;
    fake *f = fake_new();
    f->fail_first = 2;
    momento_config *cfg = tu_config();
    momento_config_set_retry_fixed_timeout(cfg, 3, 5000, 0);
    momento_client *c = routed_client(fx, f, cfg);
    momento_config_free(cfg);
    tu_rec x;
    memset(&x, 0, sizeof(x));
    assert_int_equal(momento_get(c, "c", "k", 1, NULL, tu_rec_cb, &x), MOMENTO_OK);
    tu_wait_until(tu_rec_calls(&x) == 1, 20000);
    assert_int_equal(x.error, MOMENTO_OK);
    assert_int_equal(x.attempts, 3);
    assert_string_equal(x.value, "fake:k");
    /* A third failure is the request's. */
    f->fail_first = 5;
    memset(&x, 0, sizeof(x));
    assert_int_equal(momento_get(c, "c", "k", 1, NULL, tu_rec_cb, &x), MOMENTO_OK);
    tu_wait_until(tu_rec_calls(&x) == 1, 20000);
    assert_int_equal(x.error, MOMENTO_ERR_SERVER_UNAVAILABLE);
    assert_int_equal(x.attempts, 3);
    momento_client_free(c);
    assert_int_equal(fake_count(f, &f->prepared), 6);
    assert_int_equal(fake_count(f, &f->ended), 6);
    fake_free(f);
}

static void test_cancel_and_deadline_through_the_transport(void **state)
{
    tu_fixture *fx = *state;
    fake *f = fake_new();
    f->hold = true;
    momento_client *c = routed_client(fx, f, NULL);
    momento_cancel_token *t;
    assert_int_equal(momento_cancel_token_new(&t), MOMENTO_OK);
    momento_request_options o = MOMENTO_REQUEST_OPTIONS_INIT;
    o.cancel = t;
    tu_rec cancelled, timed_out;
    memset(&cancelled, 0, sizeof(cancelled));
    memset(&timed_out, 0, sizeof(timed_out));
    assert_int_equal(momento_get(c, "c", "k", 1, &o, tu_rec_cb, &cancelled), MOMENTO_OK);
    momento_request_options d = MOMENTO_REQUEST_OPTIONS_INIT;
    d.timeout_ms = 200;
    int64_t t0 = tu_now_ms();
    assert_int_equal(momento_get(c, "c", "k", 1, &d, tu_rec_cb, &timed_out), MOMENTO_OK);
    tu_wait_until(fake_count(f, &f->in_queue) == 2, 20000);
    assert_int_equal(tu_rec_calls(&cancelled), 0);
    momento_cancel(t);
    tu_wait_until(tu_rec_calls(&cancelled) == 1, 20000);
    assert_int_equal(cancelled.error, MOMENTO_ERR_CANCELLED);
    tu_wait_until(tu_rec_calls(&timed_out) == 1, 20000);
    assert_int_equal(timed_out.error, MOMENTO_ERR_TIMEOUT);
    assert_true(timed_out.at_ms - t0 >= 200); /* never before its deadline */
    momento_cancel_token_free(t);
    momento_client_free(c);
    assert_int_equal(tu_rec_calls(&cancelled), 1);
    assert_int_equal(tu_rec_calls(&timed_out), 1);
    fake_free(f);
}

/* The client's free cancels what the fake holds and waits for every
 * callback: counted after the free, each came exactly once. */
static void test_free_ends_what_the_transport_holds(void **state)
{
    tu_fixture *fx = *state;
    fake *f = fake_new();
    f->hold = true;
    momento_client *c = routed_client(fx, f, NULL);
    enum { N = 50 };
    static tu_rec recs[N];
    memset(recs, 0, sizeof(recs));
    for (int i = 0; i < N; i++)
        assert_int_equal(momento_get(c, "c", "k", 1, NULL, tu_rec_cb, &recs[i]), MOMENTO_OK);
    tu_wait_until(fake_count(f, &f->in_queue) == N, 20000);
    momento_client_free(c);
    for (int i = 0; i < N; i++) {
        assert_int_equal(recs[i].calls, 1);
        assert_int_equal(recs[i].error, MOMENTO_ERR_CANCELLED);
    }
    assert_int_equal(fake_count(f, &f->ended), N);
    fake_free(f);
}

/* A transport the client owns (momento__client_adopt): the client's free
 * shuts it down and closes it once every request has had its callback and
 * every attempt has been given back - what the client will do with a
 * transport chosen by configuration. What it saw at its close: */
/* Sets a field of the fake under its lock, and wakes its thread and a
 * blocked launch. */
static void fake_set(fake *f, bool *field, bool v)
{
    pthread_mutex_lock(&f->lock);
    *field = v;
    pthread_cond_broadcast(&f->cond);
    pthread_mutex_unlock(&f->lock);
}

typedef struct starter {
    momento_coalescer *co;
    tu_rec *x;
    int rc;
} starter;

static void *start_get(void *arg)
{
    starter *st = arg;
    st->rc = momento_coalescing_get(st->co, "c", "k", 1, NULL, tu_rec_cb, st->x);
    return NULL;
}

/* A coalesced get whose RPC starts outside the coalescer's lock is
 * answered, and another RPC of the same key ends, before its starter is
 * back from the start: the key's state (which holds the get's own record)
 * must live until the starter is done with it. CI's ASan run found this
 * freed under the starter; here the order is forced, so ASan and valgrind
 * see it every time. */
static void test_coalesced_start_outlives_its_key(void **state)
{
    tu_fixture *fx = *state;
    fake *f = fake_new();
    fake_set(f, &f->hold_get, true);
    fake_set(f, &f->hold_set, true);
    fake_set(f, &f->block_launch, true);
    momento_client *c = routed_client(fx, f, NULL);
    momento_coalescer *co = NULL;
    assert_int_equal(momento_coalescer_new(&co, c), MOMENTO_OK);

    tu_rec got, set;
    memset(&got, 0, sizeof(got));
    memset(&set, 0, sizeof(set));
    starter st = {co, &got, -1};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, start_get, &st), 0);
    tu_wait_until(fake_count(f, &f->launched) == 1, 20000); /* its starter held in launch */
    /* A set of the same key: an RPC of its own, beside the get's. */
    assert_int_equal(momento_coalescing_set(co, "c", "k", 1, "v", 1, 0, NULL, tu_rec_cb, &set),
                     MOMENTO_OK);
    tu_wait_until(fake_count(f, &f->launched) == 2, 20000);
    fake_set(f, &f->hold_get, false); /* the get is answered first... */
    tu_wait_until(tu_rec_calls(&got) == 1, 20000);
    assert_int_equal(got.error, MOMENTO_OK);
    assert_string_equal(got.value, "fake:k");
    fake_set(f, &f->hold_set, false); /* ...then the set, the key's last */
    tu_wait_until(tu_rec_calls(&set) == 1, 20000);
    assert_int_equal(set.error, MOMENTO_OK);
    fake_set(f, &f->block_launch, false); /* and only now is the starter back */
    pthread_join(t, NULL);
    assert_int_equal(st.rc, MOMENTO_OK);
    assert_int_equal(tu_rec_calls(&got), 1);
    assert_int_equal(tu_rec_calls(&set), 1);

    /* The key is gone from the table: a new get is a new RPC. */
    momento_result *r = NULL;
    assert_int_equal(momento_coalescing_get_sync(co, "c", "k", 1, NULL, &r), MOMENTO_OK);
    assert_true(momento_result_is_hit(r));
    momento_result_free(r);
    momento_coalescer_stats k = tu_coalescer_stats(co);
    assert_int_equal(k.keys_in_flight, 0);
    assert_int_equal(k.get_requests, 2);
    assert_int_equal(k.get_coalesced, 0);
    momento_coalescer_free(co);
    momento_client_free(c);
    assert_int_equal(fake_count(f, &f->ended), fake_count(f, &f->prepared));
    fake_free(f);
}

/* A joiner's callback that stays until the test lets it go. */
typedef struct held_cb {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool in, go, out;
    int error;
} held_cb;

static void hold_cb(const momento_result *r, void *ud)
{
    held_cb *h = ud;
    pthread_mutex_lock(&h->lock);
    h->error = momento_result_error(r);
    h->in = true;
    pthread_cond_broadcast(&h->cond);
    while (!h->go)
        pthread_cond_wait(&h->cond, &h->lock);
    h->out = true;
    pthread_cond_broadcast(&h->cond);
    pthread_mutex_unlock(&h->lock);
}

static void held_wait(held_cb *h, bool *field)
{
    pthread_mutex_lock(&h->lock);
    while (!*field)
        pthread_cond_wait(&h->cond, &h->lock);
    pthread_mutex_unlock(&h->lock);
}

/* A joiner leaves at its deadline (waiter_fire, its callback on the
 * completion thread) while, on another thread, the start of the RPC it
 * joined is refused after the application freed the coalescer. Neither
 * may release the coalescer (or the key's state) while the other still
 * uses it: the starter keeps its pin until its caller is done, and the
 * leaving joiner holds one of its own until after its callback. */
static void test_refused_start_and_leaving_joiner_keep_the_coalescer(void **state)
{
    tu_fixture *fx = *state;
    fake *f = fake_new();
    fake_set(f, &f->fail_get_launch, true);
    fake_set(f, &f->block_launch, true);
    momento_client *c = routed_client(fx, f, NULL);
    momento_coalescer *co = NULL;
    assert_int_equal(momento_coalescer_new(&co, c), MOMENTO_OK);

    tu_rec issuer;
    memset(&issuer, 0, sizeof(issuer));
    starter st = {co, &issuer, -1};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, start_get, &st), 0);
    tu_wait_until(fake_count(f, &f->launched) == 1, 20000); /* its starter held in launch */

    /* A joiner with less time than the issuer: a timer of its own. */
    held_cb h = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};
    momento_request_options o = MOMENTO_REQUEST_OPTIONS_INIT;
    o.timeout_ms = 50;
    assert_int_equal(momento_coalescing_get(co, "c", "k", 1, &o, hold_cb, &h), MOMENTO_OK);
    held_wait(&h, &h.in); /* it left at its deadline; its callback holds on */
    assert_int_equal(h.error, MOMENTO_ERR_TIMEOUT);

    momento_coalescer_free(co); /* allowed with requests in flight */
    fake_set(f, &f->block_launch, false); /* the start is refused now */
    pthread_join(t, NULL);
    assert_int_not_equal(st.rc, MOMENTO_OK);
    assert_int_equal(tu_rec_calls(&issuer), 0); /* refused: no callback */

    pthread_mutex_lock(&h.lock);
    h.go = true;
    pthread_cond_broadcast(&h.cond);
    pthread_mutex_unlock(&h.lock);
    held_wait(&h, &h.out);
    momento_client_free(c); /* waits for the completion thread's work */
    assert_int_equal(fake_count(f, &f->ended), fake_count(f, &f->prepared));
    fake_free(f);
}

static struct {
    int shutdowns, closes, calls, ended, prepared;
    bool shut_down_first;
} at_close;
static tu_rec *adopted_recs;
static int n_adopted_recs;

static void owned_shutdown(momento__transport *t)
{
    (void)t;
    at_close.shutdowns++;
}

static void owned_close(momento__transport *t)
{
    fake *f = (fake *)t;
    at_close.shut_down_first = at_close.shutdowns == 1;
    at_close.closes++;
    for (int i = 0; i < n_adopted_recs; i++)
        at_close.calls += tu_rec_calls(&adopted_recs[i]);
    at_close.ended = fake_count(f, &f->ended);
    at_close.prepared = fake_count(f, &f->prepared);
    fake_free(f); /* the transport's memory goes with its close */
}

static const momento__transport_ops owned_ops = {
    .name = "fake-owned",
    .attempt_size = sizeof(fake_attempt),
    .prepare = fake_prepare,
    .launch = fake_launch,
    .cancel = fake_cancel,
    .end = fake_end,
    .shutdown = owned_shutdown,
    .close = owned_close,
};

static void test_client_closes_an_adopted_transport(void **state)
{
    tu_fixture *fx = *state;
    memset(&at_close, 0, sizeof(at_close));
    momento_client *c = tu_client(fx->server, NULL);

    /* One the client could not close is refused, and stays the caller's. */
    fake *plain = fake_new();
    assert_int_equal(momento__client_adopt(c, &plain->base), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento__client_adopt(c, NULL), MOMENTO_ERR_INVALID_ARGUMENT);
    fake_free(plain);

    fake *f = fake_new();
    f->base.ops = &owned_ops;
    f->hold = true; /* only the client's free ends what it holds */
    assert_int_equal(momento__client_route(c, MOMENTO__RPC_GET, &f->base), MOMENTO_OK);
    assert_int_equal(momento__client_adopt(c, &f->base), MOMENTO_OK);
    enum { N = 20 };
    static tu_rec recs[N];
    memset(recs, 0, sizeof(recs));
    adopted_recs = recs;
    n_adopted_recs = N;
    for (int i = 0; i < N; i++)
        assert_int_equal(momento_get(c, "c", "k", 1, NULL, tu_rec_cb, &recs[i]), MOMENTO_OK);
    tu_wait_until(fake_count(f, &f->in_queue) == N, 20000);
    assert_int_equal(at_close.closes, 0);

    momento_client_free(c); /* f is gone after this */
    assert_int_equal(at_close.closes, 1);
    assert_true(at_close.shut_down_first);
    assert_int_equal(at_close.calls, N); /* every callback before the close */
    assert_int_equal(at_close.ended, at_close.prepared);
    assert_int_equal(at_close.prepared, N);
    for (int i = 0; i < N; i++) {
        assert_int_equal(recs[i].calls, 1);
        assert_int_equal(recs[i].error, MOMENTO_ERR_CANCELLED);
    }
    adopted_recs = NULL;
    n_adopted_recs = 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_routed_rpcs_go_through_the_transport,
                                        tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_retries_through_the_transport, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_cancel_and_deadline_through_the_transport,
                                        tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_free_ends_what_the_transport_holds,
                                        tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_client_closes_an_adopted_transport,
                                        tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_coalesced_start_outlives_its_key,
                                        tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_refused_start_and_leaving_joiner_keep_the_coalescer,
                                        tu_fixture_setup, tu_fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
