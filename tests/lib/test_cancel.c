/* Per-request deadlines and cancel tokens (issue 14), for the plain client
 * and for coalesced waiters, against the local server. The server's delay
 * injection holds replies, so a deadline or a cancel always comes while the
 * request is provably in flight: a fast server cannot make these pass. */
#include "clock.h"
#include "momento/coalescer.h"
#include "testing.h"
#include "transport/grpc/grpc_transport.h" /* the client's queue, woken late */
#include "testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int client_id;

/* A delay no test outlasts: only a deadline or a cancel ends such a call,
 * so a test that asserts one did cannot be passed by a slow machine. */
#define FOREVER_MS 999999999

/* A client whose calls of `rpcs` are held `ms` by the server. */
static momento_client *delayed_client(tu_fixture *f, const char *rpcs, int64_t ms,
                                      const momento_config *cfg)
{
    momento_client *c = cfg ? tu_client(f->server, cfg) : tu_patient_client(f->server, 30000);
    char id[32], ms_s[32];
    snprintf(id, sizeof(id), "cancel-%d", ++client_id);
    snprintf(ms_s, sizeof(ms_s), "%lld", (long long)ms);
    tu_header(f->server, c, "request-id", id);
    tu_header(f->server, c, "delay-rpcs", rpcs);
    tu_header(f->server, c, "delay-ms", ms_s);
    return c;
}

static momento_request_options with(uint32_t timeout_ms, momento_cancel_token *t)
{
    momento_request_options o = MOMENTO_REQUEST_OPTIONS_INIT;
    o.timeout_ms = timeout_ms;
    o.cancel = t;
    return o;
}

/* Waits until the server has no parked call left (the cancel reached it). */
static void wait_unparked(tu_fixture *f)
{
    tu_wait_until(momento_local_parked_calls(f->server) == 0, 10000);
    assert_int_equal(momento_local_parked_calls(f->server), 0);
}

/* Waits until the server has counted `n` calls cancelled by their client
 * since `before`: it counts a call on its own thread as gRPC reports it,
 * a moment after the call leaves the parked ones (momento/local.h), so a
 * test reading the count once just after wait_unparked() can miss it (seen
 * once in a full suite run on a loaded machine). */
static void wait_cancelled(tu_fixture *f, uint64_t before, uint64_t n)
{
    tu_wait_until(momento_local_cancelled_calls(f->server, NULL) - before >= n, 10000);
}

/* ------------------------------------------------------------ options */

/* Waits for `x`'s callback (20 s at most, scaled) and checks its error. */
static void assert_ended(const tu_rec *x, int error)
{
    assert_int_equal(tu_rec_wait(x, 20000), 1);
    assert_int_equal(x->error, error);
}

static void test_options_are_checked(void **state)
{
    tu_fixture *f = *state;
    momento_request_options o = MOMENTO_REQUEST_OPTIONS_INIT;
    o.size = 0;
    assert_int_equal(momento_get(f->client, "c", "k", 1, &o, tu_rec_cb, NULL),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    o.size = sizeof(size_t); /* older than any version */
    assert_int_equal(momento_get(f->client, "c", "k", 1, &o, tu_rec_cb, NULL),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    o = with(86400001, NULL);
    assert_int_equal(momento_ping(f->client, &o, tu_rec_cb, NULL), MOMENTO_ERR_INVALID_ARGUMENT);
    momento_result *r = (momento_result *)0x1;
    assert_int_equal(momento_get_sync(f->client, "c", "k", 1, &o, &r),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    tu_assert_refusal(&r, MOMENTO_ERR_INVALID_ARGUMENT);

    /* A newer program's larger struct: accepted while its tail is zero. */
    struct {
        momento_request_options known;
        uint64_t future;
    } newer;
    memset(&newer, 0, sizeof(newer));
    newer.known.size = sizeof(newer);
    newer.known.timeout_ms = 1000;
    assert_int_equal(momento_get_sync(f->client, "c", "k", 1, &newer.known, &r), MOMENTO_OK);
    momento_result_free(r);
    newer.future = 7;
    assert_int_equal(momento_get_sync(f->client, "c", "k", 1, &newer.known, &r),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    tu_assert_refusal(&r, MOMENTO_ERR_INVALID_ARGUMENT);

    momento_coalescer *co = tu_coalescer(f->client);
    assert_int_equal(momento_coalescing_get(co, "c", "k", 1, &newer.known, tu_rec_cb, NULL),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    momento_coalescer_free(co);
    assert_int_equal(momento_cancel_token_new(NULL), MOMENTO_ERR_INVALID_ARGUMENT);
    momento_cancel(NULL); /* NULL-safe */
    momento_cancel_token_free(NULL);
    assert_int_equal(momento_cancel_token_is_cancelled(NULL), 0);
}

/* ------------------------------------------------------ plain requests */

static void test_request_deadline_overrides_client(void **state)
{
    tu_fixture *f = *state;
    /* A shorter deadline than the client's (30 s), on calls the server
     * holds for good. `first` goes first with the client's deadline, then
     * `second` with 200 ms: `second` times out while `first` is still
     * waiting. Were the request's deadline ignored, `second` would have
     * the client's, ending after `first`'s. Order, not time. */
    momento_client *c = delayed_client(f, "get", FOREVER_MS, NULL);
    momento_cancel_token *t;
    assert_int_equal(momento_cancel_token_new(&t), MOMENTO_OK);
    momento_request_options client_deadline = with(0, t), o = with(200, NULL);
    tu_rec first, second;
    memset(&first, 0, sizeof(first));
    memset(&second, 0, sizeof(second));
    assert_int_equal(momento_get(c, "c", "k", 1, &client_deadline, tu_rec_cb, &first), MOMENTO_OK);
    assert_int_equal(momento_get(c, "c", "k", 1, &o, tu_rec_cb, &second), MOMENTO_OK);
    assert_ended(&second, MOMENTO_ERR_TIMEOUT);
    assert_int_equal(tu_rec_calls(&first), 0);
    momento_cancel(t);
    assert_ended(&first, MOMENTO_ERR_CANCELLED);
    assert_true(second.seq < first.seq);
    momento_cancel_token_free(t);
    momento_client_free(c);

    /* ...and a longer one than the client's (100 ms), on calls held
     * 400 ms: without its own deadline a call times out (the server cannot
     * answer before 400 ms have passed since it arrived, so the client's
     * 100 ms come first on any machine); with a longer one it is
     * answered. */
    momento_config *cfg = tu_config();
    momento_config_set_timeout_ms(cfg, 100);
    c = delayed_client(f, "get", 400, cfg);
    momento_config_free(cfg);
    momento_result *r;
    assert_int_equal(momento_get_sync(c, "c", "k", 1, NULL, &r), MOMENTO_ERR_TIMEOUT);
    momento_result_free(r);
    o = with(TU_MS(30000), NULL);
    tu_expect(momento_get_sync(c, "c", "k", 1, &o, &r), r, MOMENTO_OUTCOME_MISS);
    momento_client_free(c);
}

typedef struct canceller {
    momento_cancel_token *token;
    int after_ms;
} canceller;

static void *cancel_later(void *arg)
{
    canceller *x = arg;
    usleep((useconds_t)x->after_ms * 1000);
    momento_cancel(x->token);
    return NULL;
}

static void test_cancel_from_another_thread(void **state)
{
    tu_fixture *f = *state;
    momento_client *c = delayed_client(f, "get set", FOREVER_MS, NULL);
    uint64_t cancelled_before = momento_local_cancelled_calls(f->server, NULL);
    momento_cancel_token *t;
    assert_int_equal(momento_cancel_token_new(&t), MOMENTO_OK);
    momento_request_options o = with(0, t);
    enum { N = 20 };
    tu_rec recs[N + 1];
    memset(recs, 0, sizeof(recs));
    for (int i = 0; i < N; i++)
        assert_int_equal(momento_get(c, "c", "k", 1, &o, tu_rec_cb, &recs[i]), MOMENTO_OK);
    assert_int_equal(momento_set(c, "c", "k", 1, "v", 1, 0, &o, tu_rec_cb, &recs[N]), MOMENTO_OK);
    /* One token covers them all; it is cancelled from a thread that
     * submitted none of them. */
    canceller x = {t, 100};
    pthread_t th;
    pthread_create(&th, NULL, cancel_later, &x);
    /* The server holds them for good: CANCELLED is the cancel's doing,
     * however late the machine lets it come. */
    for (int i = 0; i <= N; i++) {
        assert_ended(&recs[i], MOMENTO_ERR_CANCELLED);
    }
    pthread_join(th, NULL);
    assert_true(momento_cancel_token_is_cancelled(t));
    /* Cancelled on the wire: the server let go of every held call and
     * counted each as cancelled by its client. */
    wait_unparked(f);
    wait_cancelled(f, cancelled_before, N + 1);
    assert_int_equal(momento_local_cancelled_calls(f->server, NULL) - cancelled_before, N + 1);
    assert_int_equal(momento_local_cancelled_calls(f->server, "Set"), 1);

    /* A request with a cancelled token is refused, blocking ones too. */
    assert_int_equal(momento_get(c, "c", "k", 1, &o, tu_rec_cb, &recs[0]), MOMENTO_ERR_CANCELLED);
    momento_result *r = (momento_result *)0x1;
    assert_int_equal(momento_get_sync(c, "c", "k", 1, &o, &r), MOMENTO_ERR_CANCELLED);
    tu_assert_refusal(&r, MOMENTO_ERR_CANCELLED);
    momento_cancel(t); /* a second cancel does nothing */
    /* The free waits for every callback, so none can come after it: a
     * duplicate would have been counted by now. */
    momento_client_free(c);
    for (int i = 0; i <= N; i++)
        assert_int_equal(tu_rec_calls(&recs[i]), 1);
    momento_cancel_token_free(t);
}

/* Request A's callback cancels the token of request B. */
typedef struct chain {
    momento_cancel_token *token;
    tu_rec done;
} chain;

static void cancel_in_callback(const momento_result *r, void *ud)
{
    chain *x = ud;
    momento_cancel(x->token);
    tu_rec_cb(r, &x->done);
}

static void test_cancel_from_a_callback(void **state)
{
    tu_fixture *f = *state;
    momento_client *c = delayed_client(f, "get", 60000, NULL);
    chain x;
    memset(&x, 0, sizeof(x));
    assert_int_equal(momento_cancel_token_new(&x.token), MOMENTO_OK);
    momento_request_options o = with(0, x.token);
    tu_rec held;
    memset(&held, 0, sizeof(held));
    assert_int_equal(momento_get(c, "c", "k", 1, &o, tu_rec_cb, &held), MOMENTO_OK);
    /* The token's only reference now belongs to the request... */
    momento_cancel_token *t = x.token;
    momento_cancel_token_ref(t);
    momento_cancel_token_free(t);
    /* ...and to the ping whose callback cancels it. */
    assert_int_equal(momento_ping(c, NULL, cancel_in_callback, &x), MOMENTO_OK);
    assert_ended(&held, MOMENTO_ERR_CANCELLED);
    assert_ended(&x.done, MOMENTO_OK);
    momento_cancel_token_free(x.token);
    momento_client_free(c);
}

/* A client whose gets the server fails UNAVAILABLE, retried 60 s apart
 * (the longest wait there is; a cancel must not wait for the next
 * attempt, and a test's watchdog is shorter than that), in session `id`. */
static momento_client *failing_client(tu_fixture *f, const char *id)
{
    momento_config *cfg = tu_config();
    momento_config_set_timeout_ms(cfg, 600000);
    momento_config_set_retry_fixed_timeout(cfg, 3, 300000, 60000);
    momento_client *c = tu_client(f->server, cfg);
    momento_config_free(cfg);
    tu_header(f->server, c, "request-id", id);
    tu_header(f->server, c, "return-error", "unavailable");
    tu_header(f->server, c, "error-rpcs", "get");
    return c;
}

static void test_cancel_ends_a_waiting_retry(void **state)
{
    tu_fixture *f = *state;
    momento_client *c = failing_client(f, "cancel-retry");
    momento_cancel_token *t;
    assert_int_equal(momento_cancel_token_new(&t), MOMENTO_OK);
    momento_request_options o = with(0, t);
    tu_rec x;
    memset(&x, 0, sizeof(x));
    assert_int_equal(momento_get(c, "c", "k", 1, &o, tu_rec_cb, &x), MOMENTO_OK);
    momento_cancel_token_free(t); /* the request keeps its own reference */
    /* The first attempt fails at once; the request then waits 60 s. */
    tu_wait_until(momento_local_rpc_count(f->server, "Get", 14) >= 1, 10000);
    usleep(50 * 1000); /* time for a callback that would come too early */
    assert_int_equal(tu_rec_calls(&x), 0);
    momento_cancel(t); /* still alive: the request holds it */
    /* Called back before the wait could have ended by itself: the
     * watchdog (20 s) is shorter than the 60 s wait. */
    assert_ended(&x, MOMENTO_ERR_CANCELLED);
    /* Not retried after the cancel. */
    usleep(100 * 1000);
    assert_int_equal(momento_local_rpc_count(f->server, "Get", -1), 1);
    momento_client_free(c);
}

/* The ping's callback (completion thread) sends the get, waits until the
 * server has failed it and the failure has had time to reach the client,
 * and only then cancels: the failure is read after the cancel. */
typedef struct fail_then_cancel {
    momento_client *client;
    tu_fixture *f;
    momento_cancel_token *token;
    tu_rec got;
    int sent;
} fail_then_cancel;

static void send_fail_then_cancel(const momento_result *r, void *ud)
{
    (void)r;
    fail_then_cancel *x = ud;
    momento_request_options o = with(0, x->token);
    uint64_t before = momento_local_rpc_count(x->f->server, "Get", 14);
    x->sent = momento_get(x->client, "c", "k", 1, &o, tu_rec_cb, &x->got);
    if (x->sent != MOMENTO_OK)
        return;
    int64_t until = tu_now_ms() + TU_MS(3000);
    while (momento_local_rpc_count(x->f->server, "Get", 14) == before && tu_now_ms() < until)
        usleep(1000);
    usleep(TU_MS(100) * 1000);
    momento_cancel(x->token);
}

/* A retryable failure that is read after the request's cancel ends
 * CANCELLED, as the cancel would have ended the wait for its retry: the
 * request ended because of the cancel, not of the failure. */
static void test_cancel_wins_over_a_retryable_failure(void **state)
{
    tu_fixture *f = *state;
    momento_client *c = failing_client(f, "cancel-after-failure");
    enum { ROUNDS = 5 };
    for (int i = 0; i < ROUNDS; i++) {
        fail_then_cancel x;
        memset(&x, 0, sizeof(x));
        x.client = c;
        x.f = f;
        x.sent = -1;
        assert_int_equal(momento_cancel_token_new(&x.token), MOMENTO_OK);
        uint64_t gets = momento_local_rpc_count(f->server, "Get", -1);
        assert_int_equal(momento_ping(c, NULL, send_fail_then_cancel, &x), MOMENTO_OK);
        assert_int_equal(tu_rec_wait(&x.got, 20000), 1);
        assert_int_equal(x.sent, MOMENTO_OK);
        assert_int_equal(x.got.error, MOMENTO_ERR_CANCELLED);
        /* Not retried. */
        usleep(100 * 1000);
        assert_int_equal(momento_local_rpc_count(f->server, "Get", -1) - gets, 1);
        momento_cancel_token_free(x.token);
    }
    momento_client_free(c);
}

/* Cancels racing completions: whichever wins, one callback each. */
static void test_cancel_races_completion(void **state)
{
    tu_fixture *f = *state;
    enum { ROUNDS = 40, PER = 25 };
    static tu_rec recs[ROUNDS][PER];
    memset(recs, 0, sizeof(recs));
    size_t ok = 0, cancelled = 0;
    for (int round = 0; round < ROUNDS; round++) {
        momento_cancel_token *t;
        assert_int_equal(momento_cancel_token_new(&t), MOMENTO_OK);
        momento_request_options o = with(0, t);
        for (int i = 0; i < PER; i++)
            assert_int_equal(momento_get(f->client, "c", "k", 1, &o, tu_rec_cb, &recs[round][i]),
                             MOMENTO_OK);
        canceller x = {t, round % 3}; /* 0..2 ms: around the replies */
        pthread_t th;
        pthread_create(&th, NULL, cancel_later, &x);
        pthread_join(th, NULL);
        momento_cancel_token_free(t);
    }
    for (int round = 0; round < ROUNDS; round++) {
        for (int i = 0; i < PER; i++) {
            assert_int_equal(tu_rec_wait(&recs[round][i], 20000), 1);
            if (recs[round][i].error == MOMENTO_OK)
                ok++;
            else if (recs[round][i].error == MOMENTO_ERR_CANCELLED)
                cancelled++;
        }
    }
    /* The last callback has returned a moment after it was recorded. */
    tu_wait_until(momento_client_in_flight(f->client) == 0, 1000);
    assert_int_equal(momento_client_in_flight(f->client), 0);
    /* The free waits for every callback, so none can come after it: a
     * duplicate would have been counted by now. (The teardown's free of
     * NULL does nothing.) */
    momento_client_free(f->client);
    f->client = NULL;
    for (int round = 0; round < ROUNDS; round++)
        for (int i = 0; i < PER; i++)
            assert_int_equal(tu_rec_calls(&recs[round][i]), 1);
    assert_int_equal(ok + cancelled, ROUNDS * PER);
}

static void test_control_and_batch_take_options(void **state)
{
    tu_fixture *f = *state;
    momento_client *c = delayed_client(f, "list-caches get-batch flush-cache", FOREVER_MS, NULL);
    momento_request_options o = with(150, NULL);
    momento_result *r;
    assert_int_equal(momento_list_caches_sync(c, &o, &r), MOMENTO_ERR_TIMEOUT);
    momento_result_free(r);
    const void *keys[2] = {"a", "b"};
    size_t lens[2] = {1, 1};
    assert_int_equal(momento_get_batch_sync(c, "c", keys, lens, 2, &o, &r), MOMENTO_ERR_TIMEOUT);
    momento_result_free(r);
    momento_cancel_token *t;
    momento_cancel_token_new(&t);
    o = with(0, t);
    tu_rec x;
    memset(&x, 0, sizeof(x));
    assert_int_equal(momento_flush_cache(c, "c", &o, tu_rec_cb, &x), MOMENTO_OK);
    momento_cancel(t);
    assert_ended(&x, MOMENTO_ERR_CANCELLED);
    momento_cancel_token_free(t);
    momento_client_free(c);
}

/* ------------------------------------------------------- coalesced waiters */

/* Zeroes `lead` and `join`, then submits a coalescing get of "k" for each,
 * the leader's first: the joiner's joins the leader's RPC. */
static void lead_and_join(momento_coalescer *co, const momento_request_options *lo,
                          const momento_request_options *jo, tu_rec *lead, tu_rec *join)
{
    memset(lead, 0, sizeof(*lead));
    memset(join, 0, sizeof(*join));
    assert_int_equal(momento_coalescing_get(co, "c", "k", 1, lo, tu_rec_cb, lead), MOMENTO_OK);
    assert_int_equal(momento_coalescing_get(co, "c", "k", 1, jo, tu_rec_cb, join), MOMENTO_OK);
}

/* A joiner with a shorter deadline than the RPC it joins is called back at
 * its own deadline; the RPC goes on for the others. The server holds the
 * RPC for good, so the joiner's TIMEOUT comes while it is provably in
 * flight; that it went on is the coalescer's own count (not abandoned)
 * and the server's (still held), and the leader then ends it with its
 * cancel. Order, not time. */
static void test_joiner_called_back_at_its_own_deadline(void **state)
{
    tu_fixture *f = *state;
    momento_client *c = delayed_client(f, "get", FOREVER_MS, NULL);
    momento_coalescer *co = tu_coalescer(c);
    momento_cancel_token *t;
    assert_int_equal(momento_cancel_token_new(&t), MOMENTO_OK);
    tu_rec lead, join;
    momento_request_options lo = with(0, t), jo = with(200, NULL);
    int64_t t0 = tu_now_ms();
    lead_and_join(co, &lo, &jo, &lead, &join);
    assert_int_equal(tu_coalescer_stats(co).get_coalesced, 1);
    assert_ended(&join, MOMENTO_ERR_TIMEOUT);
    /* Not before its deadline: a timer cannot fire early. */
    assert_true(join.at_ms - t0 >= 195);
    /* The RPC goes on: the leader has no answer, the coalescer has not
     * abandoned the RPC, and the server holds it. */
    assert_int_equal(tu_rec_calls(&lead), 0);
    assert_int_equal(tu_coalescer_stats(co).waiters_left, 1);
    assert_int_equal(tu_coalescer_stats(co).rpcs_abandoned, 0);
    assert_int_equal(tu_coalescer_stats(co).keys_in_flight, 1);
    tu_wait_until(momento_local_parked_calls(f->server) == 1, 10000);
    assert_int_equal(momento_local_parked_calls(f->server), 1);
    momento_cancel(t);
    assert_ended(&lead, MOMENTO_ERR_CANCELLED);
    assert_true(join.seq < lead.seq);
    assert_int_equal(momento_local_rpc_count(f->server, "Get", 0), 0);
    momento_cancel_token_free(t);
    momento_coalescer_free(co);
    momento_client_free(c);
}

/* The leader's cancel does not reach the joiners. The server holds their
 * RPC 800 ms, and the leader is cancelled while it does: the RPC must go
 * on for the joiner (a cancel reaching the wire would end it CANCELLED at
 * the server, and for the joiner). A gate keeps the client's completion
 * thread meanwhile, so the order of the two endings is the test's, not
 * the machine's: the cancel marks the leader before the RPC's end can
 * reach it, and such a waiter ends CANCELLED whatever the RPC brought
 * (docs/coalescing.md, "Own cancel"). Were the machine to stall 800 ms
 * between the server taking the call and the cancel, the reply would come
 * first and the test would prove less, but still pass. */
static void test_leader_cancel_does_not_poison_joiners(void **state)
{
    tu_fixture *f = *state;
    momento_client *c = delayed_client(f, "get", 800, NULL);
    momento_coalescer *co = tu_coalescer(c);
    momento_cancel_token *t;
    assert_int_equal(momento_cancel_token_new(&t), MOMENTO_OK);
    tu_rec lead, join;
    momento_request_options lo = with(0, t);
    tu_gate *g = tu_gate_close(c);
    uint64_t parked = momento_local_parked_calls(f->server);
    lead_and_join(co, &lo, NULL, &lead, &join);
    /* At the server (held, or answered already after a stall). */
    tu_wait_until(momento_local_parked_calls(f->server) > parked ||
                      momento_local_rpc_count(f->server, "Get", -1) > 0,
                  20000);
    assert_true(momento_local_parked_calls(f->server) > parked ||
                momento_local_rpc_count(f->server, "Get", -1) > 0);
    momento_cancel(t);
    /* The RPC leaves the server: answered after its 800 ms (or cancelled,
     * were the leader's cancel to reach it). */
    tu_wait_until(momento_local_rpc_count(f->server, "Get", -1) == 1, 20000);
    assert_int_equal(momento_local_rpc_count(f->server, "Get", -1), 1);
    assert_int_equal(tu_rec_calls(&lead) + tu_rec_calls(&join), 0);
    tu_gate_open(g);
    /* CANCELLED is the cancel's doing (the reply is OK). */
    assert_ended(&lead, MOMENTO_ERR_CANCELLED);
    assert_ended(&join, MOMENTO_OK);
    assert_int_equal(join.outcome, MOMENTO_OUTCOME_MISS);
    /* One RPC, answered, not cancelled. */
    assert_int_equal(momento_local_rpc_count(f->server, "Get", -1), 1);
    assert_int_equal(momento_local_rpc_count(f->server, "Get", 0), 1);
    momento_cancel_token_free(t);
    momento_coalescer_free(co);
    momento_client_free(c);
}

/* The leader's deadline does not time the joiners out: when the shared RPC
 * dies of it, a joiner with time left is issued again. The first get is
 * held for good (delay-count 1), so the leader's TIMEOUT cannot race its
 * reply; the re-issued one is answered at once. */
static void test_leader_deadline_reissues_joiners(void **state)
{
    tu_fixture *f = *state;
    momento_client *c = delayed_client(f, "get", FOREVER_MS, NULL);
    tu_header(f->server, c, "delay-count", "1");
    momento_coalescer *co = tu_coalescer(c);
    tu_rec lead, join;
    momento_request_options lo = with(200, NULL), jo = with(TU_MS(10000), NULL);
    lead_and_join(co, &lo, &jo, &lead, &join);
    assert_ended(&lead, MOMENTO_ERR_TIMEOUT);
    assert_ended(&join, MOMENTO_OK);
    assert_int_equal(join.outcome, MOMENTO_OUTCOME_MISS);
    assert_true(lead.seq < join.seq);
    assert_int_equal(tu_coalescer_stats(co).reissued, 1);
    assert_int_equal(momento_local_rpc_count(f->server, "Get", 0), 1);
    momento_coalescer_free(co);
    momento_client_free(c);
}

/* When the last waiter leaves, the shared RPC is cancelled on the wire. */
static void test_last_waiter_leaving_cancels_the_rpc(void **state)
{
    tu_fixture *f = *state;
    momento_client *c = delayed_client(f, "get set", 60000, NULL);
    momento_coalescer *co = tu_coalescer(c);
    uint64_t cancelled_before = momento_local_cancelled_calls(f->server, NULL);
    momento_cancel_token *a, *b;
    momento_cancel_token_new(&a);
    momento_cancel_token_new(&b);
    tu_rec r1, r2, r3;
    memset(&r1, 0, sizeof(r1));
    memset(&r2, 0, sizeof(r2));
    memset(&r3, 0, sizeof(r3));
    momento_request_options oa = with(0, a), ob = with(0, b), short_deadline = with(150, NULL);
    assert_int_equal(momento_coalescing_get(co, "c", "k", 1, &oa, tu_rec_cb, &r1), MOMENTO_OK);
    assert_int_equal(momento_coalescing_get(co, "c", "k", 1, &ob, tu_rec_cb, &r2), MOMENTO_OK);
    assert_int_equal(momento_coalescing_get(co, "c", "k", 1, &short_deadline, tu_rec_cb, &r3),
                     MOMENTO_OK);
    assert_int_equal(tu_coalescer_stats(co).keys_in_flight, 1);
    momento_cancel(a);
    assert_int_equal(tu_rec_wait(&r1, 20000), 1);
    assert_ended(&r3, MOMENTO_ERR_TIMEOUT);
    /* One waiter is left: the RPC is still held by the server. */
    tu_wait_until(momento_local_parked_calls(f->server) >= 1, 10000);
    usleep(50 * 1000); /* time for a second parked call to show */
    assert_int_equal(momento_local_parked_calls(f->server), 1);
    assert_int_equal(tu_coalescer_stats(co).rpcs_abandoned, 0);
    momento_cancel(b);
    assert_int_equal(tu_rec_wait(&r2, 20000), 1);
    assert_int_equal(r1.error, MOMENTO_ERR_CANCELLED);
    assert_int_equal(r2.error, MOMENTO_ERR_CANCELLED);
    wait_unparked(f);
    wait_cancelled(f, cancelled_before, 1);
    assert_int_equal(momento_local_cancelled_calls(f->server, NULL) - cancelled_before, 1);
    assert_int_equal(momento_local_cancelled_calls(f->server, "Get"), 1);
    assert_int_equal(tu_coalescer_stats(co).rpcs_abandoned, 1);

    /* A write abandoned the same way; a newcomer after that issues its own
     * RPC rather than join the abandoned one. */
    momento_cancel_token *w;
    momento_cancel_token_new(&w);
    momento_request_options ow = with(0, w);
    memset(&r1, 0, sizeof(r1));
    memset(&r2, 0, sizeof(r2));
    assert_int_equal(momento_coalescing_set(co, "c", "k", 1, "v", 1, 0, &ow, tu_rec_cb, &r1),
                     MOMENTO_OK);
    momento_cancel(w);
    assert_ended(&r1, MOMENTO_ERR_CANCELLED);
    momento_request_options quick = with(100, NULL);
    assert_int_equal(momento_coalescing_set(co, "c", "k", 1, "v", 1, 0, &quick, tu_rec_cb, &r2),
                     MOMENTO_OK);
    assert_int_equal(tu_coalescer_stats(co).set_coalesced, 0);
    assert_ended(&r2, MOMENTO_ERR_TIMEOUT);
    /* Refused with a token already cancelled: nothing joins, no callback. */
    assert_int_equal(momento_coalescing_get(co, "c", "k", 1, &oa, tu_rec_cb, &r3),
                     MOMENTO_ERR_CANCELLED);
    momento_result *res = (momento_result *)0x1;
    assert_int_equal(momento_coalescing_get_sync(co, "c", "k", 1, &oa, &res),
                     MOMENTO_ERR_CANCELLED);
    tu_assert_refusal(&res, MOMENTO_ERR_CANCELLED);
    momento_cancel_token_free(a);
    momento_cancel_token_free(b);
    momento_cancel_token_free(w);
    momento_coalescer_free(co);
    momento_client_free(c);
    assert_int_equal(tu_rec_calls(&r3), 1);
}

/* Many waiters with deadlines spread over the RPC's life: each is called
 * back once, none before its own deadline, and those whose deadline came
 * after the reply get the reply. */
static void test_spread_deadlines_on_one_rpc(void **state)
{
    tu_fixture *f = *state;
    momento_client *c = delayed_client(f, "get", 500, NULL);
    momento_coalescer *co = tu_coalescer(c);
    enum { N = 40 };
    tu_rec recs[N];
    int64_t sent[N];
    uint32_t timeout[N];
    memset(recs, 0, sizeof(recs));
    for (int i = 0; i < N; i++) {
        /* 20 .. 1540 ms, and the last 30 s: one waiter that outlasts the
         * reply on any machine, however late its RPC is issued. */
        timeout[i] = i == N - 1 ? (uint32_t)TU_MS(30000) : 20 + (uint32_t)i * 40;
        momento_request_options o = with(timeout[i], NULL);
        sent[i] = tu_now_ms();
        assert_int_equal(momento_coalescing_get(co, "c", "k", 1, &o, tu_rec_cb, &recs[i]),
                         MOMENTO_OK);
    }
    /* Every waiter ends on the same RPC (re-issued onto it if it joined a
     * shorter-lived one): its reply at `answered` reaches everyone still
     * waiting then, and the rest left at their own deadlines, not sooner. */
    int64_t answered = INT64_MAX;
    for (int i = 0; i < N; i++) {
        assert_int_equal(tu_rec_wait(&recs[i], 40000), 1);
        if (recs[i].error == MOMENTO_OK && recs[i].at_ms < answered)
            answered = recs[i].at_ms;
    }
    assert_true(answered != INT64_MAX); /* the longest deadlines got the reply */
    /* Lower bounds the server's and the client's timers guarantee: the
     * reply not before the delay, a timeout not before its deadline. */
    assert_true(answered - sent[0] >= 500);
    for (int i = 0; i < N; i++) {
        if (recs[i].error == MOMENTO_ERR_TIMEOUT) {
            assert_true(recs[i].at_ms - sent[i] >= (int64_t)timeout[i] - 1);
            assert_true(sent[i] + (int64_t)timeout[i] <= answered + 1);
        } else {
            assert_int_equal(recs[i].error, MOMENTO_OK);
            assert_int_equal(recs[i].outcome, MOMENTO_OUTCOME_MISS);
        }
    }
    momento_coalescer_stats k = tu_coalescer_stats(co);
    assert_int_equal(k.get_requests, N);
    momento_coalescer_free(co);
    /* The free waits for every callback, so none can come after it: a
     * duplicate would have been counted by now. */
    momento_client_free(c);
    for (int i = 0; i < N; i++)
        assert_int_equal(tu_rec_calls(&recs[i]), 1);
}

/* Another transport's thread (the protosocket I/O thread's post) wakes
 * the gRPC loop holding no lock of the client's: by then the completion
 * thread may have run what it posted, the last request retired and the
 * client's free shut the gRPC queue down. That late wake must do nothing:
 * a kick started on the shut queue aborted the process in gRPC
 * (grpc_cq_begin_op, about 1 run in 50 of cancel_ps, at a client's free).
 * Forced here on the transport itself: a wake that comes after the
 * shutdown, from another thread, and the loop still drains and ends. */
static void *wake_from_another_thread(void *arg)
{
    momento__transport *t = arg;
    t->ops->wake(t);
    return NULL;
}

static void test_wake_after_the_queue_is_shut(void **state)
{
    tu_fixture *f = *state;
    momento_config *cfg = NULL;
    momento_credentials *creds = NULL;
    assert_int_equal(momento_config_new(&cfg), MOMENTO_OK);
    assert_int_equal(momento_credentials_local(&creds, momento_local_endpoint(f->server)),
                     MOMENTO_OK);
    momento__transport *t = NULL;
    assert_int_equal(momento__grpc_transport_new(&t, cfg, creds), MOMENTO_OK);
    momento__grpc_transport *g = (momento__grpc_transport *)t;
    int64_t until = momento__now_ns() + 10 * 1000000000LL;

    /* A wake before the shutdown is a kick, which the loop runs: the next
     * wake is free to kick again. */
    t->ops->wake(t);
    for (int i = 0; i < 100 && atomic_load(&g->kick_pending) && momento__now_ns() < until; i++)
        assert_true(t->ops->run(t, until));
    assert_false(atomic_load(&g->kick_pending));

    t->ops->shutdown(t);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, wake_from_another_thread, t), 0);
    pthread_join(th, NULL);

    /* Nothing was started on the shut queue: it drains at once. */
    bool running = true;
    for (int i = 0; i < 100 && running && momento__now_ns() < until; i++)
        running = t->ops->run(t, until);
    assert_false(running);
    assert_true(g->drained);
    t->ops->close(t);
    momento_credentials_free(creds);
    momento_config_free(cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_options_are_checked, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_request_deadline_overrides_client, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_cancel_from_another_thread, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_cancel_from_a_callback, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_cancel_ends_a_waiting_retry, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_cancel_wins_over_a_retryable_failure,
                                        tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_wake_after_the_queue_is_shut, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_cancel_races_completion, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_control_and_batch_take_options, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_joiner_called_back_at_its_own_deadline,
                                        tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_leader_cancel_does_not_poison_joiners,
                                        tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_leader_deadline_reissues_joiners, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_last_waiter_leaving_cancels_the_rpc,
                                        tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_spread_deadlines_on_one_rpc, tu_fixture_setup,
                                        tu_fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
