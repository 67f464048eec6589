/* Allocation failure, one allocation at a time: for every N, the N-th
 * allocation of the credential parser, the coalescer or the call path fails. The call must
 * return MOMENTO_ERR_NO_MEMORY with its output untouched (or succeed when the
 * failure hit nothing it needed), never crash, and never leak: ASan and
 * valgrind run this suite in CI. */
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
#include <unistd.h>

/* Runs fn with the N-th allocation failing, for N = 0, 1, ... until a run
 * completes without reaching its failure. Returns how many N were tried. */
typedef int (*attempt_fn)(void *arg, bool *ok);

static int for_every_allocation(attempt_fn fn, void *arg)
{
    for (int n = 0; n < 1000; n++) {
        atomic_store(&momento__alloc_countdown, n);
        bool ok = false;
        int rc = fn(arg, &ok);
        bool reached = atomic_load(&momento__alloc_countdown) < 0;
        atomic_store(&momento__alloc_countdown, -1);
        if (!reached) {
            assert_int_equal(rc, MOMENTO_OK); /* nothing failed: must succeed */
            assert_true(ok);
            return n + 1;
        }
        if (rc != MOMENTO_OK && rc != MOMENTO_ERR_NO_MEMORY)
            fail_msg("allocation %d failing gave %s, not NO_MEMORY", n, momento_error_name(rc));
    }
    fail_msg("more than 1000 allocations");
    return 0;
}

static int parse_key(void *arg, bool *ok)
{
    const char **a = arg;
    momento_credentials *c = (momento_credentials *)0x1;
    int rc = momento_credentials_from_api_key(&c, a[0], a[1]);
    if (rc == MOMENTO_OK) {
        *ok = strcmp(momento_credentials_cache_endpoint(c), a[2]) == 0;
        momento_credentials_free(c);
    } else {
        assert_ptr_equal(c, (momento_credentials *)0x1); /* untouched */
        assert_true(*momento_refusal_reason()); /* not "" */
    }
    return rc;
}

static void test_credential_parser(void **state)
{
    (void)state;
    /* base64 of {"api_key": "tok", "endpoint": "cell.example.com"} */
    const char *v1[3] = {"eyJhcGlfa2V5IjogInRvayIsICJlbmRwb2ludCI6ICJjZWxsLmV4YW1wbGUuY29tIn0=", NULL,
                         "cache.cell.example.com:443"};
    /* header.{"c":"cache.x.example.com","cp":"control.x.example.com"}.sig */
    const char *legacy[3] = {"eyJhbGciOiJIUzI1NiJ9.eyJjIjoiY2FjaGUueC5leGFtcGxlLmNvbSIsImNwIjoiY29udHJvbC54LmV4YW1wbGUuY29tIn0.c2ln",
                             NULL, "cache.x.example.com:443"};
    /* header.{"t":"g"}.sig with an endpoint */
    const char *current[3] = {"eyJhbGciOiJIUzI1NiJ9.eyJ0IjoiZyJ9.c2ln", "cell-2.example.com",
                              "cache.cell-2.example.com:443"};
    assert_true(for_every_allocation(parse_key, v1) > 3);
    assert_true(for_every_allocation(parse_key, legacy) > 3);
    assert_true(for_every_allocation(parse_key, current) > 3);
}

static int parse_local(void *arg, bool *ok)
{
    (void)arg;
    momento_credentials *c = NULL;
    int rc = momento_credentials_local(&c, "127.0.0.1:9");
    if (rc == MOMENTO_OK) {
        *ok = momento_credentials_uses_tls(c) == 0;
        momento_credentials_free(c);
    } else {
        assert_null(c);
    }
    return rc;
}

static void test_local_credentials(void **state)
{
    (void)state;
    assert_true(for_every_allocation(parse_local, NULL) >= 3);
}

typedef struct co_fixture {
    momento_local *server;
    momento_client *client;
    momento_client *slow;    /* its first get is held by the server until the free */
    momento_coalescer *co;
    tu_counter k;
    size_t accepted;
} co_fixture;

static int make_coalescer(void *arg, bool *ok)
{
    co_fixture *f = arg;
    momento_coalescer *co = (momento_coalescer *)0x1;
    int rc = momento_coalescer_new(&co, f->client);
    if (rc == MOMENTO_OK) {
        *ok = true;
        momento_coalescer_free(co);
    } else {
        assert_ptr_equal(co, (momento_coalescer *)0x1);
    }
    return rc;
}

/* A leader for a new key each time, and a set with a value. */
static int submit_leader(void *arg, bool *ok)
{
    co_fixture *f = arg;
    static int seq;
    char key[32];
    int n = snprintf(key, sizeof(key), "lead-%d", seq++);
    int rc = momento_coalescing_set(f->co, "c", key, (size_t)n, "value", 5, 0, NULL, tu_count_cb, &f->k);
    if (rc == MOMENTO_OK) {
        f->accepted++;
        *ok = true;
    }
    return rc;
}

/* A joiner of the slow get in flight. */
static int submit_joiner(void *arg, bool *ok)
{
    co_fixture *f = arg;
    int rc = momento_coalescing_get(f->co, "c", "held", 4, NULL, tu_count_cb, &f->k);
    if (rc == MOMENTO_OK) {
        f->accepted++;
        *ok = true;
    }
    return rc;
}

static void test_coalescer(void **state)
{
    (void)state;
    co_fixture f;
    memset(&f, 0, sizeof(f));
    tu_counter_init(&f.k);
    f.server = tu_server_with_cache("c");
    f.client = tu_client(f.server, NULL);
    assert_true(for_every_allocation(make_coalescer, &f) >= 1);

    assert_int_equal(momento_coalescer_new(&f.co, f.client), MOMENTO_OK);
    assert_true(for_every_allocation(submit_leader, &f) >= 1);
    /* A long key takes the coalescer's heap path for the table id. */
    char longkey[700];
    memset(longkey, 'L', sizeof(longkey));
    for (int n = 0; n < 10; n++) {
        atomic_store(&momento__alloc_countdown, n);
        int rc = momento_coalescing_get(f.co, "c", longkey, sizeof(longkey), NULL, tu_count_cb, &f.k);
        atomic_store(&momento__alloc_countdown, -1);
        if (rc == MOMENTO_OK)
            f.accepted++;
        else
            assert_int_equal(rc, MOMENTO_ERR_NO_MEMORY);
    }
    momento_coalescer_free(f.co);

    /* Joiners: a leader held by the server, then joins under failure. The
     * hold outlasts the test (capped at the client's 30 s deadline), so
     * every joiner meets the leader in flight however slow the machine
     * (issue 46: a 400 ms hold was a window); the client's free ends it. */
    f.slow = tu_patient_client(f.server, 30000);
    momento__client_add_header(f.slow, "request-id", "alloc-joins");
    momento__client_add_header(f.slow, "delay-rpcs", "get");
    momento__client_add_header(f.slow, "delay-ms", "600000");
    momento__client_add_header(f.slow, "delay-count", "1");
    assert_int_equal(momento_coalescer_new(&f.co, f.slow), MOMENTO_OK);
    assert_int_equal(momento_coalescing_get(f.co, "c", "held", 4, NULL, tu_count_cb, &f.k), MOMENTO_OK);
    f.accepted++;
    assert_true(for_every_allocation(submit_joiner, &f) >= 1);
    momento_coalescer_stats s;
    momento_coalescer_stats_get(f.co, &s, sizeof(s));
    assert_true(s.get_coalesced >= 1);
    assert_int_equal(s.keys_in_flight, 1); /* the held get, still */

    /* Every accepted request is called back exactly once; refusals never.
     * All but the held get and its joiners are answered; those end with
     * the free, CANCELLED. */
    assert_int_equal(tu_counter_wait(&f.k, f.accepted - (s.get_coalesced + 1), 10000),
                     f.accepted - (s.get_coalesced + 1));
    momento_coalescer_free(f.co);
    /* The frees wait for every callback, so none can come after them: a
     * duplicate would have been counted by now. */
    momento_client_free(f.slow);
    momento_client_free(f.client);
    assert_int_equal(f.k.total, f.accepted);
    assert_int_equal(tu_counter_errors(&f.k, MOMENTO_ERR_CANCELLED), s.get_coalesced + 1);
    momento_local_stop(f.server);
    tu_counter_destroy(&f.k);
}

/* The call path: a blocking request whose N-th library allocation fails,
 * wherever it falls - the argument copy, the call, the decoder, the list
 * pager, the result copy. The request is refused before sending (NO_MEMORY,
 * *ret NULL), or it was sent and *ret is a result: OK with the right content,
 * or an error (NO_MEMORY from a decoder or the copy; CLIENT_RESOURCE_EXHAUSTED
 * when a stream could not keep a message). Nothing leaks, nothing stays in
 * flight. */
typedef struct call_case {
    const char *name;
    int (*run)(momento_client *c, momento_result **ret);
    bool (*check)(const momento_result *r); /* the content of a success */
} call_case;

static const void *const batch_keys[3] = {"k1", "k2", "k3"};
static const size_t batch_lens[3] = {2, 2, 2};

static int run_set(momento_client *c, momento_result **ret)
{
    return momento_set_sync(c, "c", "k1", 2, "one", 3, 0, NULL, ret);
}

/* With a cancel token and a deadline of its own: the token's hook, and for
 * the coalescer its waiter, timer and RPC token, are on the path too. */
static momento_cancel_token *g_token;
static momento_coalescer *g_co;

static int run_get_with_token(momento_client *c, momento_result **ret)
{
    momento_request_options o = MOMENTO_REQUEST_OPTIONS_INIT;
    o.timeout_ms = 5000;
    o.cancel = g_token;
    return momento_get_sync(c, "c", "k1", 2, &o, ret);
}

static int run_coalesced_get(momento_client *c, momento_result **ret)
{
    (void)c;
    momento_request_options o = MOMENTO_REQUEST_OPTIONS_INIT;
    o.timeout_ms = 5000;
    o.cancel = g_token;
    return momento_coalescing_get_sync(g_co, "c", "k1", 2, &o, ret);
}

/* Through adaptive batching: three gets in flight, then a blocking one, on
 * a client that queues from one RPC in flight, so that the last three
 * leave as one GetBatch (member, batch, request and result allocations). */
static momento_client *g_batching;

static int run_batched_get(momento_client *c, momento_result **ret)
{
    (void)c;
    tu_counter k;
    tu_counter_init(&k);
    size_t accepted = 0;
    const char *keys[3] = {"k1", "k2", "k3"};
    for (int i = 0; i < 3; i++)
        if (momento_get(g_batching, "c", keys[i], 2, NULL, tu_count_cb, &k) == MOMENTO_OK)
            accepted++;
    int rc = momento_get_sync(g_batching, "c", "k1", 2, NULL, ret);
    assert_int_equal(tu_counter_wait(&k, accepted, 10000), accepted);
    tu_wait_until(momento_client_in_flight(g_batching) == 0, 1000);
    assert_int_equal(momento_client_in_flight(g_batching), 0);
    tu_counter_destroy(&k);
    return rc;
}

static bool check_hit_one(const momento_result *r)
{
    size_t len = 0;
    const void *v = momento_result_value(r, &len);
    return momento_result_is_hit(r) && len == 3 && memcmp(v, "one", 3) == 0;
}

static bool check_success(const momento_result *r)
{
    return momento_result_outcome(r) == MOMENTO_OUTCOME_SUCCESS;
}

static int run_get_batch(momento_client *c, momento_result **ret)
{
    return momento_get_batch_sync(c, "c", batch_keys, batch_lens, 3, NULL, ret);
}

static bool check_get_batch(const momento_result *r)
{
    size_t len = 0;
    return momento_result_item_count(r) == 3 && momento_result_is_hit(momento_result_item(r, 0)) &&
           momento_result_value(momento_result_item(r, 0), &len) && len == 3 &&
           !momento_result_is_hit(momento_result_item(r, 2));
}

static int run_keys_exist(momento_client *c, momento_result **ret)
{
    return momento_keys_exist_sync(c, "c", batch_keys, batch_lens, 3, NULL, ret);
}

static bool check_keys_exist(const momento_result *r)
{
    return momento_result_exists_count(r) == 3 && momento_result_exists(r, 0) == 1 &&
           momento_result_exists(r, 2) == 0;
}

static int run_list(momento_client *c, momento_result **ret)
{
    return momento_list_caches_sync(c, NULL, ret);
}

static bool check_list(const momento_result *r)
{
    return momento_result_cache_count(r) == 3; /* over three pages */
}

static int run_set_if(momento_client *c, momento_result **ret)
{
    return momento_set_if_sync(c, "c", "k1", 2, "one", 3, 0, MOMENTO_IF_EQUAL, "one", 3, NULL, ret);
}

static bool check_stored(const momento_result *r)
{
    return momento_result_outcome(r) == MOMENTO_OUTCOME_STORED;
}

static void test_call_path(void **state)
{
    (void)state;
    momento_local_options *o = tu_options("c");
    momento_local_options_add_cache(o, "d");
    momento_local_options_add_cache(o, "e");
    momento_local_options_set_list_page_size(o, 1);
    momento_local *server = tu_start(o);
    momento_client *c = tu_client(server, NULL);
    assert_int_equal(momento_set_sync(c, "c", "k1", 2, "one", 3, 0, NULL, NULL), MOMENTO_OK);

    static const call_case cases[] = {
        {"set", run_set, check_success},
        {"get batch", run_get_batch, check_get_batch},
        {"keys exist", run_keys_exist, check_keys_exist},
        {"list caches", run_list, check_list},
        {"set if", run_set_if, check_stored},
        {"get with a token", run_get_with_token, check_hit_one},
        {"coalesced get with a token", run_coalesced_get, check_hit_one},
        {"batched get", run_batched_get, check_hit_one},
    };
    momento_config *bcfg;
    assert_int_equal(momento_config_new(&bcfg), MOMENTO_OK);
    assert_int_equal(momento_config_set_batching(bcfg, 1, 0, 64, 1 << 20), MOMENTO_OK);
    g_batching = tu_client(server, bcfg);
    momento_config_free(bcfg);
    assert_int_equal(momento_cancel_token_new(&g_token), MOMENTO_OK);
    assert_int_equal(momento_coalescer_new(&g_co, c), MOMENTO_OK);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int n = 0;
        for (;; n++) {
            assert_true(n < 1000);
            momento_result *r = (momento_result *)0x1;
            atomic_store(&momento__alloc_countdown, n);
            int rc = cases[i].run(c, &r);
            bool reached = atomic_load(&momento__alloc_countdown) < 0;
            atomic_store(&momento__alloc_countdown, -1);
            /* Retired just after its callback returned (blocking calls wake
             * inside the callback). */
            tu_wait_until(momento_client_in_flight(c) == 0, 1000);
            assert_int_equal(momento_client_in_flight(c), 0);
            if (!reached) { /* nothing failed: the whole request worked */
                assert_int_equal(rc, MOMENTO_OK);
                assert_non_null(r);
                if (!cases[i].check(r))
                    fail_msg("%s: wrong content with no allocation failing", cases[i].name);
                momento_result_free(r);
                break;
            }
            if (r == NULL) { /* refused before sending */
                assert_int_equal(rc, MOMENTO_ERR_NO_MEMORY);
                continue;
            }
            assert_ptr_not_equal(r, (momento_result *)0x1);
            assert_int_equal(momento_result_error(r), rc);
            if (rc == MOMENTO_OK && !cases[i].check(r))
                fail_msg("%s: allocation %d failing gave OK with wrong content", cases[i].name, n);
            if (rc != MOMENTO_OK && rc != MOMENTO_ERR_NO_MEMORY &&
                rc != MOMENTO_ERR_CLIENT_RESOURCE_EXHAUSTED)
                fail_msg("%s: allocation %d failing gave %s", cases[i].name, n,
                         momento_error_name(rc));
            momento_result_free(r);
        }
        /* At least the blocking helper's, the call's and the result copy's. */
        if (n < 3)
            fail_msg("%s: only %d allocations on its path", cases[i].name, n);
    }
    momento_coalescer_free(g_co);
    momento_cancel_token_free(g_token);
    momento_client_free(g_batching);
    momento_client_free(c);
    momento_local_stop(server);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_credential_parser),
        cmocka_unit_test(test_local_credentials),
        cmocka_unit_test(test_coalescer),
        cmocka_unit_test(test_call_path),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
