/* The coalescer against the local server. Overlap is made deterministic,
 * never a matter of time (issue 46), in one of two ways:
 *
 * - A gate on the client's completion thread (tu_gate_close()): while it is
 *   closed no RPC of the client can complete, so the first RPC of a key
 *   stays in flight, open to duplicates, until the test opens the gate -
 *   however slow the machine is. For the tests whose requests must share
 *   an RPC and then all get its answer.
 * - The server's delay injection, for as long as the test lasts: the first
 *   get is held until the test cancels it. For the tests that make
 *   blocking calls while a get is in flight (which a closed gate would
 *   hold up) and need no answer from the held get itself. */
#include "momento/coalescer.h"
#include "testing.h"
#include "testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>
#include <unistd.h>

static int counter_id;

/* A client (30 s deadline) under a fault-injection session of its own. */
static momento_client *session_client(tu_fixture *f)
{
    momento_client *c = tu_patient_client(f->server, 30000);
    char id[32];
    snprintf(id, sizeof(id), "co-%d", ++counter_id);
    tu_header(f->server, c, "request-id", id);
    return c;
}

/* A client whose calls of `rpcs` are held `ms` by the server, `count` times. */
static momento_client *delayed_client(tu_fixture *f, const char *rpcs, int64_t ms, int count)
{
    momento_client *c = session_client(f);
    char ms_s[32], count_s[16];
    snprintf(ms_s, sizeof(ms_s), "%lld", (long long)ms);
    snprintf(count_s, sizeof(count_s), "%d", count);
    tu_header(f->server, c, "delay-rpcs", rpcs);
    tu_header(f->server, c, "delay-ms", ms_s);
    tu_header(f->server, c, "delay-count", count_s);
    return c;
}

/* A hold longer than any test: the server caps a delay at its call's
 * deadline (docs/protocol.md "Fault injection"), the client's 30 s, so
 * only the test's cancel (or the client's free) ends such a get in time. */
#define FOREVER_MS 600000

/* Waits until the server holds one call more than `before`. */
static void wait_parked(tu_fixture *f, uint64_t before)
{
    tu_wait_until(momento_local_parked_calls(f->server) > before, 20000);
    assert_int_equal(momento_local_parked_calls(f->server), before + 1);
}


/* A test's coalescer of `c`, with the server's counters reset and `k`
 * ready to count its callbacks. */
static momento_coalescer *coalescer_begin(tu_fixture *f, momento_client *c, tu_counter *k)
{
    momento_coalescer *co = tu_coalescer(c);
    momento_local_reset_stats(f->server);
    tu_counter_init(k);
    return co;
}

/* Frees what coalescer_begin() made, and `c`. */
static void coalescer_end(momento_coalescer *co, momento_client *c, tu_counter *k)
{
    momento_coalescer_free(co);
    momento_client_free(c);
    tu_counter_destroy(k);
}

static void test_duplicate_gets_share_one_rpc(void **state)
{
    tu_fixture *f = *state;
    assert_int_equal(momento_set_sync(f->client, "c", "k", 1, "shared bytes", 12, 0, NULL, NULL), MOMENTO_OK);
    momento_client *c = session_client(f);
    tu_counter k;
    momento_coalescer *co = coalescer_begin(f, c, &k);
    k.expect = "shared bytes";
    k.expect_len = 12;
    const size_t n = 50;
    tu_gate *g = tu_gate_close(c);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(momento_coalescing_get(co, "c", "k", 1, NULL, tu_count_cb, &k), MOMENTO_OK);
    /* The first get's RPC cannot have completed: every other one joined it. */
    momento_coalescer_stats s = tu_coalescer_stats(co);
    assert_int_equal(s.get_requests, n);
    assert_int_equal(s.get_coalesced, n - 1);
    assert_int_equal(s.peak_waiters, n);
    assert_int_equal(s.keys_in_flight, 1);
    assert_int_equal(k.total, 0);
    tu_gate_open(g);
    assert_int_equal(tu_counter_wait(&k, n, 10000), n);
    assert_int_equal(k.total, n);
    assert_int_equal(k.hits, n);
    assert_int_equal(k.bad_values, 0);  /* identical bytes for all */
    assert_int_equal(momento_local_rpc_count(f->server, "Get", -1), 1);
    s = tu_coalescer_stats(co);
    assert_int_equal(s.get_coalesced, n - 1);
    assert_int_equal(s.keys_in_flight, 0);
    /* Nothing in flight now: the next get is a new RPC. */
    assert_int_equal(momento_coalescing_get_sync(co, "c", "k", 1, NULL, NULL), MOMENTO_OK);
    assert_int_equal(momento_local_rpc_count(f->server, "Get", -1), 2);
    momento_coalescer_free(co);
    /* The free waits for every callback, so none can come after it: a
     * duplicate would have been counted by now. */
    momento_client_free(c);
    assert_int_equal(k.total, n); /* exactly once each */
    tu_counter_destroy(&k);
}

static void test_different_values_are_separate_sets(void **state)
{
    tu_fixture *f = *state;
    momento_client *c = session_client(f);
    tu_counter k;
    momento_coalescer *co = coalescer_begin(f, c, &k);
    /* Every set below is submitted while the ones before it are in flight. */
    tu_gate *g = tu_gate_close(c);
    assert_int_equal(momento_coalescing_set(co, "c", "s", 1, "v1", 2, 0, NULL, tu_count_cb, &k), MOMENTO_OK);
    assert_int_equal(momento_coalescing_set(co, "c", "s", 1, "v2", 2, 0, NULL, tu_count_cb, &k), MOMENTO_OK);
    /* Identical to the latest write: joins it. */
    assert_int_equal(momento_coalescing_set(co, "c", "s", 1, "v2", 2, 0, NULL, tu_count_cb, &k), MOMENTO_OK);
    /* Same value, different TTL: its own RPC. */
    assert_int_equal(momento_coalescing_set(co, "c", "s", 1, "v2", 2, 99999, NULL, tu_count_cb, &k), MOMENTO_OK);
    /* Identical to the first set, but later writes overtook it: its own RPC,
     * so the caller's intent (v1 last) holds. */
    assert_int_equal(momento_coalescing_set(co, "c", "s", 1, "v1", 2, 0, NULL, tu_count_cb, &k), MOMENTO_OK);
    momento_coalescer_stats s = tu_coalescer_stats(co);
    assert_int_equal(s.set_requests, 5);
    assert_int_equal(s.set_coalesced, 1);
    tu_gate_open(g);
    assert_int_equal(tu_counter_wait(&k, 5, 10000), 5);
    assert_int_equal(k.ok, 5);
    assert_int_equal(momento_local_rpc_count(f->server, "Set", -1), 4);
    assert_int_equal(tu_coalescer_stats(co).set_coalesced, 1);
    tu_assert_get_str(f->client, "c", "s", "v1");
    coalescer_end(co, c, &k);
}

/* Starts a get of `key` through `co` that the server holds (delayed_client
 * with FOREVER_MS, count 1) until `tok` is cancelled, and waits until the
 * server holds it: a cancel that came first would leave the session's one
 * delay to a later get. */
static void held_get(tu_fixture *f, momento_coalescer *co, const char *key,
                     momento_cancel_token *tok, tu_counter *k)
{
    momento_request_options o = MOMENTO_REQUEST_OPTIONS_INIT;
    o.cancel = tok;
    uint64_t parked = momento_local_parked_calls(f->server);
    assert_int_equal(momento_coalescing_get(co, "c", key, strlen(key), &o, tu_count_cb, k),
                     MOMENTO_OK);
    wait_parked(f, parked);
}

/* Ends what held_get() started, and its joiners with the same token: all
 * leave, so the coalescer cancels the RPC on the wire (docs/coalescing.md,
 * "The last to leave"), and the server counts it CANCELLED. */
static void release_get(tu_fixture *f, momento_cancel_token *tok, tu_counter *k, size_t waiters)
{
    uint64_t cancelled = momento_local_rpc_count(f->server, "Get", 1);
    momento_cancel(tok);
    assert_int_equal(tu_counter_wait(k, waiters, 10000), waiters);
    assert_int_equal(tu_counter_errors(k, MOMENTO_ERR_CANCELLED), waiters);
    /* The server counts the cancel when gRPC reports it, a moment after. */
    tu_wait_until(momento_local_rpc_count(f->server, "Get", 1) > cancelled, 10000);
    assert_int_equal(momento_local_rpc_count(f->server, "Get", 1), cancelled + 1);
    momento_cancel_token_free(tok);
}

/* The start of a read-your-writes test: `key` set to `old`, then a client
 * whose first get the server holds, a coalescer of it, and that get, held
 * (held_get()) with the token `t`; `early` counts its callbacks. */
typedef struct held_read {
    momento_client *c;
    momento_coalescer *co;
    momento_cancel_token *t;
    tu_counter early;
} held_read;

static void held_start(tu_fixture *f, held_read *h, const char *key, const char *old)
{
    assert_int_equal(momento_set_sync(f->client, "c", key, strlen(key), old, strlen(old), 0, NULL,
                                      NULL),
                     MOMENTO_OK);
    h->c = delayed_client(f, "get", FOREVER_MS, 1);
    h->co = coalescer_begin(f, h->c, &h->early);
    assert_int_equal(momento_cancel_token_new(&h->t), MOMENTO_OK);
    held_get(f, h->co, key, h->t, &h->early);
}

/* Its end: the held get and its `waiters` joiners released (release_get()),
 * two Gets on the server in all (the held one and the one after the
 * write), and everything freed. */
static void held_end(tu_fixture *f, held_read *h, size_t waiters)
{
    release_get(f, h->t, &h->early, waiters);
    assert_int_equal(momento_local_rpc_count(f->server, "Get", -1), 2);
    coalescer_end(h->co, h->c, &h->early);
}

static void test_read_your_writes(void **state)
{
    tu_fixture *f = *state;
    held_read h;
    /* G1 is held by the server; a duplicate issued before any write joins it. */
    held_start(f, &h, "r", "old");
    momento_coalescer *co = h.co;
    momento_request_options o = MOMENTO_REQUEST_OPTIONS_INIT;
    o.cancel = h.t;
    assert_int_equal(momento_coalescing_get(co, "c", "r", 1, &o, tu_count_cb, &h.early), MOMENTO_OK);
    /* The write returns while G1 is still in flight (held until the
     * cancel below)... */
    assert_int_equal(momento_coalescing_set_sync(co, "c", "r", 1, "new", 3, 0, NULL, NULL), MOMENTO_OK);
    assert_int_equal(tu_coalescer_stats(co).keys_in_flight, 1);
    /* ...so a get issued now must not join G1: it is a new RPC and sees it. */
    momento_result *r;
    assert_int_equal(momento_coalescing_get_sync(co, "c", "r", 1, NULL, &r), MOMENTO_OK);
    size_t len;
    const void *v = momento_result_value(r, &len);
    assert_int_equal(len, 3);
    assert_memory_equal(v, "new", 3);
    momento_result_free(r);
    momento_coalescer_stats s = tu_coalescer_stats(co);
    assert_int_equal(s.get_requests, 3);
    assert_int_equal(s.get_coalesced, 1);
    assert_int_equal(h.early.total, 0); /* G1 was held all along */
    assert_int_equal(momento_local_rpc_count(f->server, "Get", 0), 1);
    held_end(f, &h, 2);
}

/* A write through one coalescer closes the key's open reads in the client's
 * other coalescers too (write.c's notice skips only the coalescer that
 * orders the write): a get issued after it, through another coalescer,
 * must not join a get issued before it. */
static void test_read_your_writes_across_coalescers(void **state)
{
    tu_fixture *f = *state;
    for (int op = 0; op < 2; op++) {
        assert_int_equal(momento_set_sync(f->client, "c", "rx", 2, "old", 3, 0, NULL, NULL),
                         MOMENTO_OK);
        momento_client *c = delayed_client(f, "get", FOREVER_MS, 1);
        momento_coalescer *a, *b;
        assert_int_equal(momento_coalescer_new(&a, c), MOMENTO_OK);
        assert_int_equal(momento_coalescer_new(&b, c), MOMENTO_OK);
        tu_counter early;
        tu_counter_init(&early);
        momento_cancel_token *t;
        assert_int_equal(momento_cancel_token_new(&t), MOMENTO_OK);
        /* Held by the server until the test cancels it. */
        held_get(f, b, "rx", t, &early);
        if (op == 0)
            assert_int_equal(momento_coalescing_set_sync(a, "c", "rx", 2, "new", 3, 0, NULL, NULL),
                             MOMENTO_OK);
        else
            assert_int_equal(momento_coalescing_delete_sync(a, "c", "rx", 2, NULL, NULL),
                             MOMENTO_OK);
        momento_result *r;
        assert_int_equal(momento_coalescing_get_sync(b, "c", "rx", 2, NULL, &r), MOMENTO_OK);
        if (op == 0) {
            size_t len;
            const void *v = momento_result_value(r, &len);
            assert_int_equal(len, 3);
            assert_memory_equal(v, "new", 3);
        } else {
            assert_int_equal(momento_result_outcome(r), MOMENTO_OUTCOME_MISS);
        }
        momento_result_free(r);
        assert_int_equal(tu_coalescer_stats(b).get_coalesced, 0);
        assert_int_equal(tu_coalescer_stats(b).keys_in_flight, 1); /* the first get, still held */
        release_get(f, t, &early, 1);
        momento_coalescer_free(a);
        momento_coalescer_free(b);
        momento_client_free(c);
        tu_counter_destroy(&early);
    }
}

static void test_delete_invalidates(void **state)
{
    tu_fixture *f = *state;
    held_read h;
    held_start(f, &h, "d", "x");
    momento_coalescer *co = h.co;
    assert_int_equal(momento_coalescing_delete_sync(co, "c", "d", 1, NULL, NULL), MOMENTO_OK);
    /* Issued after the delete, while the first get is still held: its own
     * RPC, which sees the delete. */
    momento_result *r;
    tu_expect(momento_coalescing_get_sync(co, "c", "d", 1, NULL, &r), r, MOMENTO_OUTCOME_MISS);
    assert_int_equal(tu_coalescer_stats(co).get_coalesced, 0);
    assert_int_equal(h.early.total, 0);
    assert_int_equal(momento_local_rpc_count(f->server, "Get", 0), 1);
    held_end(f, &h, 1);
}

static void test_duplicate_deletes_share(void **state)
{
    tu_fixture *f = *state;
    momento_client *c = session_client(f);
    tu_counter k;
    momento_coalescer *co = coalescer_begin(f, c, &k);
    tu_gate *g = tu_gate_close(c);
    for (int i = 0; i < 5; i++)
        assert_int_equal(momento_coalescing_delete(co, "c", "x", 1, NULL, tu_count_cb, &k), MOMENTO_OK);
    assert_int_equal(tu_coalescer_stats(co).delete_coalesced, 4); /* the first still in flight */
    tu_gate_open(g);
    assert_int_equal(tu_counter_wait(&k, 5, 10000), 5);
    assert_int_equal(k.ok, 5);
    assert_int_equal(momento_local_rpc_count(f->server, "Delete", -1), 1);
    assert_int_equal(tu_coalescer_stats(co).delete_coalesced, 4);
    coalescer_end(co, c, &k);
}

static void test_error_fans_out(void **state)
{
    tu_fixture *f = *state;
    momento_client *c = session_client(f);
    tu_header(f->server, c, "return-error", "unavailable");
    tu_header(f->server, c, "error-rpcs", "get");
    tu_header(f->server, c, "error-count", "3"); /* outlasts all 3 attempts */
    tu_counter k;
    momento_coalescer *co = coalescer_begin(f, c, &k);
    tu_gate *g = tu_gate_close(c);
    for (int i = 0; i < 20; i++)
        assert_int_equal(momento_coalescing_get(co, "c", "e", 1, NULL, tu_count_cb, &k), MOMENTO_OK);
    assert_int_equal(tu_coalescer_stats(co).get_coalesced, 19); /* the first still in flight */
    tu_gate_open(g);
    assert_int_equal(tu_counter_wait(&k, 20, 10000), 20);
    momento_coalescer_free(co);
    /* The free waits for every callback, so none can come after it: a
     * duplicate would have been counted by now. */
    momento_client_free(c);
    assert_int_equal(k.total, 20);
    assert_int_equal(tu_counter_errors(&k, MOMENTO_ERR_SERVER_UNAVAILABLE), 20);
    assert_int_equal(momento_local_rpc_count(f->server, "Get", 14), 3); /* one RPC, 3 attempts */
    tu_counter_destroy(&k);
}

static void test_retried_success_fans_out(void **state)
{
    tu_fixture *f = *state;
    assert_int_equal(momento_set_sync(f->client, "c", "rs", 2, "ok", 2, 0, NULL, NULL), MOMENTO_OK);
    momento_client *c = session_client(f);
    tu_header(f->server, c, "return-error", "internal");
    tu_header(f->server, c, "error-rpcs", "get");
    tu_header(f->server, c, "error-count", "1");
    tu_counter k;
    momento_coalescer *co = coalescer_begin(f, c, &k);
    k.expect = "ok";
    k.expect_len = 2;
    tu_gate *g = tu_gate_close(c);
    for (int i = 0; i < 20; i++)
        assert_int_equal(momento_coalescing_get(co, "c", "rs", 2, NULL, tu_count_cb, &k), MOMENTO_OK);
    /* Joined the first attempt: the retry is the completion thread's. */
    assert_int_equal(tu_coalescer_stats(co).get_coalesced, 19);
    tu_gate_open(g);
    assert_int_equal(tu_counter_wait(&k, 20, 10000), 20);
    momento_coalescer_free(co);
    /* The free waits for every callback, so none can come after it: a
     * duplicate would have been counted by now. */
    momento_client_free(c);
    assert_int_equal(k.total, 20);
    assert_int_equal(k.hits, 20);
    assert_int_equal(k.bad_values, 0);
    /* The shared RPC failed once and its retry succeeded; nobody saw the error. */
    assert_int_equal(momento_local_rpc_count(f->server, "Get", 13), 1);
    assert_int_equal(momento_local_rpc_count(f->server, "Get", 0), 1);
    tu_counter_destroy(&k);
}

static void test_client_freed_with_waiters(void **state)
{
    tu_fixture *f = *state;
    momento_client *c = delayed_client(f, "get set", FOREVER_MS, 100);
    momento_coalescer *co = tu_coalescer(c);
    tu_counter k;
    tu_counter_init(&k);
    for (int i = 0; i < 30; i++)
        assert_int_equal(momento_coalescing_get(co, "c", "w", 1, NULL, tu_count_cb, &k), MOMENTO_OK);
    for (int i = 0; i < 5; i++) {
        char key[8];
        snprintf(key, sizeof(key), "w%d", i);
        assert_int_equal(momento_coalescing_set(co, "c", key, strlen(key), "v", 1, 0, NULL, tu_count_cb, &k),
                         MOMENTO_OK);
    }
    assert_int_equal(tu_coalescer_stats(co).keys_in_flight, 6);
    momento_client_free(c);
    /* Every waiter was called back, once, before the client's free returned. */
    assert_int_equal(k.total, 35);
    assert_int_equal(tu_counter_errors(&k, MOMENTO_ERR_CANCELLED), 35);
    assert_int_equal(tu_coalescer_stats(co).keys_in_flight, 0);
    momento_coalescer_free(co);
    tu_counter_destroy(&k);
}

static void test_coalescer_freed_first(void **state)
{
    tu_fixture *f = *state;
    momento_client *c = session_client(f);
    momento_coalescer *co = tu_coalescer(c);
    tu_counter k;
    tu_counter_init(&k);
    tu_gate *g = tu_gate_close(c);
    for (int i = 0; i < 10; i++)
        assert_int_equal(momento_coalescing_get(co, "c", "f", 1, NULL, tu_count_cb, &k), MOMENTO_OK);
    momento_coalescer_free(co); /* released by the last completion, after the tu_gate */
    assert_int_equal(k.total, 0);
    tu_gate_open(g);
    assert_int_equal(tu_counter_wait(&k, 10, 10000), 10);
    assert_int_equal(k.ok, 10);
    momento_client_free(c);
    tu_counter_destroy(&k);
}

typedef struct resubmit {
    momento_coalescer *co;
    tu_counter k;
    int again;
} resubmit;

static void get_again(const momento_result *r, void *ud)
{
    resubmit *x = ud;
    if (x->again-- > 0) /* the entry has left the table: this is a fresh RPC */
        assert_int_equal(momento_coalescing_get(x->co, "c", "g", 1, NULL, get_again, x), MOMENTO_OK);
    /* Last: counting releases the test, which then drops x. */
    tu_count_cb(r, &x->k);
}

static void test_callback_can_resubmit(void **state)
{
    tu_fixture *f = *state;
    momento_coalescer *co = tu_coalescer(f->client);
    momento_local_reset_stats(f->server);
    resubmit x = {.co = co, .again = 1};
    tu_counter_init(&x.k);
    assert_int_equal(momento_coalescing_get(co, "c", "g", 1, NULL, get_again, &x), MOMENTO_OK);
    assert_int_equal(tu_counter_wait(&x.k, 2, 10000), 2);
    assert_int_equal(momento_local_rpc_count(f->server, "Get", -1), 2);
    /* A blocking coalescing call on the callback thread would deadlock. */
    assert_int_equal(tu_coalescer_stats(co).get_coalesced, 0);
    momento_coalescer_free(co);
    tu_counter_destroy(&x.k);
}

typedef struct worker {
    momento_coalescer *co;
    tu_counter *k;
    int id;
    int refused;
} worker;

static void *hammer(void *arg)
{
    worker *w = arg;
    for (int i = 0; i < 10000; i++) {
        char key[8];
        int n = snprintf(key, sizeof(key), "h%d", (i + w->id) % 10);
        int rc = (i % 4 == 0)
                     ? momento_coalescing_set(w->co, "c", key, (size_t)n, key, (size_t)n, 0, NULL, tu_count_cb, w->k)
                     : momento_coalescing_get(w->co, "c", key, (size_t)n, NULL, tu_count_cb, w->k);
        if (rc != MOMENTO_OK)
            w->refused++;
    }
    return NULL;
}

static void test_eight_threads(void **state)
{
    tu_fixture *f = *state;
    momento_client *c = tu_patient_client(f->server, 60000);
    tu_counter k;
    momento_coalescer *co = coalescer_begin(f, c, &k);
    pthread_t t[8];
    worker w[8];
    for (int i = 0; i < 8; i++) {
        w[i] = (worker){co, &k, i, 0};
        pthread_create(&t[i], NULL, hammer, &w[i]);
    }
    for (int i = 0; i < 8; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(w[i].refused, 0);
    }
    assert_int_equal(tu_counter_wait(&k, 80000, 120000), 80000);
    momento_coalescer_stats s = tu_coalescer_stats(co);
    assert_int_equal(s.get_requests, 60000);
    assert_int_equal(s.set_requests, 20000);
    assert_int_equal(s.keys_in_flight, 0);
    /* Every request is either a leader (one RPC at the server) or joined one. */
    assert_int_equal(momento_local_rpc_count(f->server, "Get", 0), s.get_requests - s.get_coalesced);
    assert_int_equal(momento_local_rpc_count(f->server, "Set", 0), s.set_requests - s.set_coalesced);
    momento_coalescer_free(co);
    /* The free waits for every callback, so none can come after it: a
     * duplicate would have been counted by now. */
    momento_client_free(c);
    assert_int_equal(k.total, 80000);
    assert_int_equal(k.ok, 80000);
    /* Hits carry the key itself as value (only that was ever written). */
    assert_int_equal(k.bad_values, 0);
    tu_counter_destroy(&k);
}

static void blocking_inside(const momento_result *r, void *ud)
{
    void **a = ud;
    *(int *)a[1] = momento_coalescing_get_sync(a[0], "c", "k", 1, NULL, NULL);
    tu_count_cb(r, a[2]);
}

/* Holds the completion thread in an unrelated callback until `release`
 * (or the client's free, with `until_closing`) - bounded at 10 s (scaled). */
typedef struct blocker {
    momento_client *c;
    atomic_int started;
    atomic_int release;
    bool until_closing;
} blocker;

static void block_completion_thread(const momento_result *r, void *ud)
{
    (void)r;
    blocker *b = ud;
    atomic_store(&b->started, 1);
    tu_wait_until(b->until_closing ? momento__client_closing(b->c) : atomic_load(&b->release),
                  10000);
}

/* Starts a request whose callback (after `timeout_ms`, on a server that
 * holds it) blocks the completion thread, and waits until it does. */
static void start_blocker(momento_client *c, blocker *b, uint32_t timeout_ms)
{
    momento_request_options quick = MOMENTO_REQUEST_OPTIONS_INIT;
    quick.timeout_ms = timeout_ms;
    assert_int_equal(momento_get(c, "c", "blocker", 7, &quick, block_completion_thread, b),
                     MOMENTO_OK);
}

static void wait_started(blocker *b)
{
    tu_wait_until(atomic_load(&b->started), 10000);
    assert_true(atomic_load(&b->started));
}

/* Issue 27 item 2: a shared get times out on its leader's deadline while
 * the client is being freed; its joiners, with time left, are issued again,
 * which the closing client refuses. That refusal freed the key's record
 * while on_done still used it (a use after free under ASan). Now each
 * joiner ends once, CANCELLED as every request the free ends, never of the
 * leader's TIMEOUT; the coalescer is freed after the client. */
static void test_reissue_refused_while_closing(void **state)
{
    tu_fixture *f = *state;
    int leader_timed_out = 0;
    for (int round = 0; round < 8; round++) {
        momento_client *c = delayed_client(f, "get", TU_MS(60000), 1000);
        momento_coalescer *co = tu_coalescer(c);
        blocker b = {.c = c, .until_closing = true};
        atomic_init(&b.started, 0);
        atomic_init(&b.release, 0);
        start_blocker(c, &b, 1);
        wait_started(&b);

        tu_counter k;
        tu_counter_init(&k);
        momento_request_options leader = MOMENTO_REQUEST_OPTIONS_INIT;
        leader.timeout_ms = 20;
        momento_request_options joiner = MOMENTO_REQUEST_OPTIONS_INIT;
        joiner.timeout_ms = 60000;
        assert_int_equal(momento_coalescing_get(co, "c", "u", 1, &leader, tu_count_cb, &k),
                         MOMENTO_OK);
        for (int i = 0; i < 5; i++)
            assert_int_equal(momento_coalescing_get(co, "c", "u", 1, &joiner, tu_count_cb, &k),
                             MOMENTO_OK);
        /* The leader's deadline passes: gRPC ends the shared RPC
         * DEADLINE_EXCEEDED, and its completion waits behind the blocker
         * until the free has begun. */
        usleep((useconds_t)TU_MS(100) * 1000);
        momento_client_free(c);
        assert_int_equal(k.total, 6);
        /* The leader's own deadline, or (when gRPC was slower than the
         * sleep) the free's cancel; the joiners never time out. */
        size_t timeouts = tu_counter_errors(&k, MOMENTO_ERR_TIMEOUT);
        assert_true(timeouts <= 1);
        assert_int_equal(tu_counter_errors(&k, MOMENTO_ERR_CANCELLED), 6 - timeouts);
        leader_timed_out += (int)timeouts;
        momento_coalescer_free(co);
        tu_counter_destroy(&k);
    }
    /* The race was run: in most rounds the shared RPC ended of the
     * leader's deadline, with joiners to issue again. */
    assert_true(leader_timed_out >= 1);
}

/* Issue 27 item 3: a cancelled waiter never gets another's TIMEOUT. Two
 * shared gets wait in the batcher's queue behind a held RPC: K1 (leader
 * deadline 50 ms) and K2 (leader 52 ms, joined by 10 waiters holding a
 * cancel token, deadline 2 s). The completion thread is busy in an
 * unrelated 100 ms callback across both deadlines, so both leave the queue
 * in one pass; K1's leader, called back first, cancels the token. K2's
 * joiners are then marked cancelled when K2's RPC ends of its leader's
 * deadline: they must end CANCELLED (they got the RPC's TIMEOUT before the
 * fix, every round), the leaders TIMEOUT, each once. */
static void busy_100ms(const momento_result *r, void *ud)
{
    (void)r;
    atomic_store((atomic_int *)ud, 1);
    usleep(100 * 1000);
    atomic_store((atomic_int *)ud, 2); /* the test may drop `ud` now */
}

typedef struct cancel_on_end {
    momento_cancel_token *token;
    tu_counter k;
} cancel_on_end;

static void cancel_then_count(const momento_result *r, void *ud)
{
    cancel_on_end *x = ud;
    momento_cancel(x->token);
    tu_count_cb(r, &x->k);
}

static void test_cancelled_joiners_are_not_timed_out(void **state)
{
    tu_fixture *f = *state;
    momento_config *cfg = tu_config();
    assert_int_equal(momento_config_set_timeout_ms(cfg, (uint32_t)TU_MS(30000)), MOMENTO_OK);
    assert_int_equal(momento_config_set_batching(cfg, 1, 0, 64, 1024 * 1024), MOMENTO_OK);
    momento_client *c = tu_client(f->server, cfg);
    momento_config_free(cfg);
    tu_header(f->server, c, "request-id", "co-cancelled-joiners");
    tu_header(f->server, c, "delay-rpcs", "get get-batch");
    tu_header(f->server, c, "delay-ms", "60000");
    tu_header(f->server, c, "delay-count", "1000");
    momento_coalescer *co = tu_coalescer(c);
    for (int round = 0; round < 5; round++) {
        /* The RPC in flight that makes the rest queue. */
        tu_counter held;
        tu_counter_init(&held);
        momento_request_options held_opts = MOMENTO_REQUEST_OPTIONS_INIT;
        held_opts.timeout_ms = 500;
        assert_int_equal(momento_get(c, "c", "held", 4, &held_opts, tu_count_cb, &held),
                         MOMENTO_OK);

        cancel_on_end k1;
        assert_int_equal(momento_cancel_token_new(&k1.token), MOMENTO_OK);
        tu_counter_init(&k1.k);
        tu_counter leader2, joiners;
        tu_counter_init(&leader2);
        tu_counter_init(&joiners);
        momento_request_options o1 = MOMENTO_REQUEST_OPTIONS_INIT, o2 = o1, oj = o1;
        o1.timeout_ms = 50;
        o2.timeout_ms = 52;
        oj.timeout_ms = 2000;
        oj.cancel = k1.token;
        char key1[16], key2[16];
        snprintf(key1, sizeof(key1), "k1-%d", round);
        snprintf(key2, sizeof(key2), "k2-%d", round);
        assert_int_equal(momento_coalescing_get(co, "c", key1, strlen(key1), &o1,
                                                cancel_then_count, &k1),
                         MOMENTO_OK);
        assert_int_equal(
            momento_coalescing_get(co, "c", key2, strlen(key2), &o2, tu_count_cb, &leader2),
            MOMENTO_OK);
        for (int i = 0; i < 10; i++)
            assert_int_equal(
                momento_coalescing_get(co, "c", key2, strlen(key2), &oj, tu_count_cb, &joiners),
                MOMENTO_OK);
        /* The busy callback: a request that is neither delayed nor batched,
         * answered at once. */
        atomic_int busy = 0;
        assert_int_equal(momento_item_get_type(c, "c", "busy", 4, NULL, busy_100ms, &busy),
                         MOMENTO_OK);

        assert_int_equal(tu_counter_wait(&k1.k, 1, 10000), 1);
        assert_int_equal(tu_counter_wait(&leader2, 1, 10000), 1);
        assert_int_equal(tu_counter_wait(&joiners, 10, 10000), 10);
        /* Under valgrind the busy reply may come after the deadlines: the
         * joiners must end CANCELLED either way; wait for its callback to
         * be over before its counter goes out of scope. */
        tu_wait_until(atomic_load(&busy) == 2, 20000);
        assert_int_equal(atomic_load(&busy), 2);
        assert_int_equal(tu_counter_errors(&k1.k, MOMENTO_ERR_TIMEOUT), 1);
        assert_int_equal(tu_counter_errors(&leader2, MOMENTO_ERR_TIMEOUT), 1);
        assert_int_equal(tu_counter_errors(&joiners, MOMENTO_ERR_CANCELLED), 10);
        assert_int_equal(tu_counter_wait(&held, 1, 10000), 1);
        momento_cancel_token_free(k1.token);
        tu_counter_destroy(&k1.k);
        tu_counter_destroy(&leader2);
        tu_counter_destroy(&joiners);
        tu_counter_destroy(&held);
    }
    momento_coalescer_free(co);
    momento_client_free(c);
}

static void test_arguments_and_blocking(void **state)
{
    tu_fixture *f = *state;
    momento_coalescer *co;
    assert_int_equal(momento_coalescer_new(NULL, f->client), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_coalescer_new(&co, NULL), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_coalescer_new(&co, f->client), MOMENTO_OK);
    tu_counter k;
    tu_counter_init(&k);
    assert_int_equal(momento_coalescing_get(NULL, "c", "k", 1, NULL, tu_count_cb, &k), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_coalescing_get(co, "", "k", 1, NULL, tu_count_cb, &k), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_coalescing_get(co, "c", "k", 0, NULL, tu_count_cb, &k), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_coalescing_get(co, "c", "k", 1, NULL, NULL, &k), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_coalescing_set(co, "c", "k", 1, NULL, 3, 0, NULL, tu_count_cb, &k), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_coalescing_set(co, "c", "k", 1, "v", 1, (uint64_t)INT64_MAX + 1, NULL, tu_count_cb, &k),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_coalescing_delete(co, "bad\xff", "k", 1, NULL, tu_count_cb, &k), MOMENTO_ERR_INVALID_ARGUMENT);
    momento_result *r = (momento_result *)0x1;
    assert_int_equal(momento_coalescing_get_sync(NULL, "c", "k", 1, NULL, &r), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_null(r);
    assert_int_equal(momento_coalescer_stats_get(co, NULL, 0), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(k.total, 0);
    assert_int_equal(tu_coalescer_stats(co).get_requests, 0); /* refusals are not requests */

    int rc = 0;
    void *args[3] = {co, &rc, &k};
    assert_int_equal(momento_coalescing_get(co, "c", "k", 1, NULL, blocking_inside, args), MOMENTO_OK);
    assert_int_equal(tu_counter_wait(&k, 1, 10000), 1);
    assert_int_equal(rc, MOMENTO_ERR_WOULD_DEADLOCK);
    /* Unknown cache: the error reaches the caller like the plain client's. */
    assert_int_equal(momento_coalescing_get_sync(co, "nope", "k", 1, NULL, NULL), MOMENTO_ERR_CACHE_NOT_FOUND);
    momento_coalescer_free(co);
    momento_coalescer_free(NULL);
    tu_counter_destroy(&k);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_duplicate_gets_share_one_rpc, tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_different_values_are_separate_sets, tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_read_your_writes, tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_read_your_writes_across_coalescers, tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_delete_invalidates, tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_duplicate_deletes_share, tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_error_fans_out, tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_retried_success_fans_out, tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_client_freed_with_waiters, tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_coalescer_freed_first, tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_callback_can_resubmit, tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_eight_threads, tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_arguments_and_blocking, tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_reissue_refused_while_closing, tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_cancelled_joiners_are_not_timed_out, tu_fixture_setup, tu_fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
