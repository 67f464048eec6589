/* Faults, driven by the local server's injection headers and by stopping
 * and restarting it: the error each status maps to, which are retried and
 * how often (counted at the server), deadlines, reconnection, and coalesced
 * waiters under each. */
#include "cacheclient.pb-c.h"
#include "momento/collections.h"
#include "momento/coalescer.h"
#include "testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static momento_local *server;
static int session;

static momento_local *start_on(int port)
{
    momento_local_options *o = tu_options("c");
    momento_local_options_set_port(o, port);
    momento_local *s = NULL;
    int rc = momento_local_start(&s, o);
    momento_local_options_free(o);
    return rc == MOMENTO_OK ? s : NULL;
}

static int setup(void **state)
{
    (void)state;
    server = start_on(0);
    assert_non_null(server);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    momento_local_stop(server);
    return 0;
}

/* A client whose calls carry the given fault headers under a fresh session. */
static momento_client *faulty(const momento_config *cfg, const char *const *headers, size_t n)
{
    momento_client *c = tu_client(server, cfg);
    char id[32];
    snprintf(id, sizeof(id), "faults-%d", ++session);
    tu_headers(server, c, id, headers, n);
    return c;
}

static void test_every_injected_error(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        int status;
        int err;
        bool retried;
    } table[] = {
        {"invalid-argument", 3, MOMENTO_ERR_INVALID_ARGUMENT, false},
        {"unknown", 2, MOMENTO_ERR_UNKNOWN_SERVICE, false},
        {"already-exists", 6, MOMENTO_ERR_ALREADY_EXISTS, false},
        {"not-found", 5, MOMENTO_ERR_CACHE_NOT_FOUND, false},
        {"internal", 13, MOMENTO_ERR_INTERNAL_SERVER, true},
        {"permission-denied", 7, MOMENTO_ERR_PERMISSION, false},
        {"unauthenticated", 16, MOMENTO_ERR_AUTHENTICATION, false},
        {"cancelled", 1, MOMENTO_ERR_CANCELLED, true}, /* as the JS SDK: a server's CANCELLED */
        {"resource-exhausted", 8, MOMENTO_ERR_LIMIT_EXCEEDED, false},
        {"deadline-exceeded", 4, MOMENTO_ERR_TIMEOUT, false},
        {"unavailable", 14, MOMENTO_ERR_SERVER_UNAVAILABLE, true},
        {"failed-precondition", 9, MOMENTO_ERR_FAILED_PRECONDITION, false},
    };
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
        const char *h[] = {"return-error", table[i].name};
        momento_client *c = faulty(NULL, h, 1);
        momento_local_reset_stats(server);
        /* An idempotent get: retried up to 3 attempts when the rule says.
         * An injected DEADLINE_EXCEEDED is delivered at the request's
         * deadline, never before it (call.c): a short one keeps this quick.
         * The others get a deadline no machine's load can reach before
         * their 3 attempts are done. */
        momento_request_options o = MOMENTO_REQUEST_OPTIONS_INIT;
        o.timeout_ms = (uint32_t)(table[i].status == 4 ? TU_MS(500) : TU_MS(60000));
        momento_result *r;
        assert_int_equal(momento_get_sync(c, "c", "k", 1, &o, &r), table[i].err);
        assert_int_equal(momento_result_grpc_status(r), table[i].status);
        int attempts = table[i].retried ? 3 : 1;
        assert_int_equal(momento_result_attempts(r), attempts);
        momento_result_free(r);
        assert_int_equal(momento_local_rpc_count(server, "Get", table[i].status), (uint64_t)attempts);
        /* A non-idempotent increment: never retried, whatever the status. */
        assert_int_equal(momento_increment_sync(c, "c", "n", 1, 1, 0, &o, &r), table[i].err);
        assert_int_equal(momento_result_attempts(r), 1);
        momento_result_free(r);
        assert_int_equal(momento_local_rpc_count(server, "Increment", -1), 1);
        momento_client_free(c);
    }
}

static void test_error_count_against_attempts(void **state)
{
    (void)state;
    for (int n = 1; n <= 4; n++) {
        char count[8];
        snprintf(count, sizeof(count), "%d", n);
        const char *h[] = {"return-error", "unavailable", "error-rpcs", "get set", "error-count", count};
        momento_client *c = faulty(NULL, h, 3);
        momento_local_reset_stats(server);
        momento_result *r;
        int rc = momento_get_sync(c, "c", "k", 1, NULL, &r);
        if (n < 3) { /* success on attempt n + 1 */
            assert_int_equal(rc, MOMENTO_OK);
            assert_int_equal(momento_result_attempts(r), n + 1);
            assert_int_equal(momento_local_rpc_count(server, "Get", 14), (uint64_t)n);
            assert_int_equal(momento_local_rpc_count(server, "Get", 0), 1);
        } else { /* the last error, after 3 attempts */
            assert_int_equal(rc, MOMENTO_ERR_SERVER_UNAVAILABLE);
            assert_int_equal(momento_result_attempts(r), 3);
            assert_int_equal(momento_local_rpc_count(server, "Get", -1), 3);
        }
        momento_result_free(r);
        /* The same rule for sets. A conditional set is never retried. */
        momento_local_reset_stats(server);
        assert_int_equal(momento_set_if_sync(c, "c", "k", 1, "v", 1, 0, MOMENTO_IF_ABSENT, NULL, 0, NULL, NULL) != MOMENTO_OK,
                         0); /* set-if is not in error-rpcs: untouched */
        momento_client_free(c);
    }
    /* Retries off: the first error is final. */
    momento_config *cfg = tu_config();
    assert_int_equal(momento_config_set_retries(cfg, 0), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_config_set_retries(cfg, 11), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_config_set_retries(cfg, 1), MOMENTO_OK);
    const char *h[] = {"return-error", "unavailable", "error-count", "1"};
    momento_client *c = faulty(cfg, h, 2);
    momento_config_free(cfg);
    assert_int_equal(momento_get_sync(c, "c", "k", 1, NULL, NULL), MOMENTO_ERR_SERVER_UNAVAILABLE);
    momento_client_free(c);
}

/* The names the official clients' tests send (JS momento-rpc-method.ts):
 * "list-remove" also names ListErase, "set-if" also SetIfNotExists, beside
 * their own names. */
static void test_fault_aliases(void **state)
{
    (void)state;
    momento_result *r = NULL;
    const uint32_t begin = 0, count = 1;
    for (int i = 0; i < 2; i++) {
        const char *names = i ? "list-erase" : "list-remove";
        const char *h[] = {"return-error", "unavailable", "error-rpcs", names};
        momento_client *c = faulty(NULL, h, 2);
        assert_int_equal(momento_list_erase_sync(c, "c", MOMENTO_STR("alias-list"), &begin,
                                                 &count, 1, NULL, &r),
                         MOMENTO_ERR_SERVER_UNAVAILABLE);
        momento_result_free(r);
        /* ...and only ListErase among the list writes. */
        assert_int_equal(momento_list_push_back_sync(c, "c", MOMENTO_STR("alias-list"),
                                                     MOMENTO_STR("v"), 0, NULL, NULL, &r),
                         MOMENTO_OK);
        momento_result_free(r);
        momento_client_free(c);
    }
    /* SetIfNotExists is server-only (the library sends SetIf): raw. */
    CacheClient__SetIfNotExistsRequest req = CACHE_CLIENT____SET_IF_NOT_EXISTS_REQUEST__INIT;
    req.cache_key.data = (uint8_t *)"alias-k";
    req.cache_key.len = 7;
    req.cache_body.data = (uint8_t *)"v";
    req.cache_body.len = 1;
    req.ttl_milliseconds = 60000;
    const char *const by_alias[] = {"cache", "c", "request-id", "alias-set-if", "return-error",
                                    "unavailable", "error-rpcs", "set-if"};
    const char *const by_other[] = {"cache", "c", "request-id", "alias-other", "return-error",
                                    "unavailable", "error-rpcs", "get"};
    assert_int_equal(tu_raw_call_msg(momento_local_endpoint(server),
                                     "/cache_client.Scs/SetIfNotExists", by_alias, 4, &req.base,
                                     NULL),
                     14);
    assert_int_equal(tu_raw_call_msg(momento_local_endpoint(server),
                                     "/cache_client.Scs/SetIfNotExists", by_other, 4, &req.base,
                                     NULL),
                     0);
}

/* A deadline is the call's own: a get held by the server for good does not
 * hold up the sets on its channel (all answered while it is still
 * outstanding), and a get with the client's 300 ms deadline times out, not
 * before it (a timer cannot fire early). How soon after it is the
 * machine's business, not a pass condition. */
static void test_deadline_is_precise_and_local(void **state)
{
    (void)state;
    momento_config *cfg = tu_config();
    momento_config_set_timeout_ms(cfg, (uint32_t)TU_MS(300));
    const char *h[] = {"delay-ms", "999999999", "delay-rpcs", "get"};
    momento_client *c = faulty(cfg, h, 2);
    momento_config_free(cfg);
    tu_counter held, timed, fast;
    tu_counter_init(&held);
    tu_counter_init(&timed);
    tu_counter_init(&fast);
    momento_request_options long_deadline = MOMENTO_REQUEST_OPTIONS_INIT;
    long_deadline.timeout_ms = 600000;
    assert_int_equal(momento_get(c, "c", "k", 1, &long_deadline, tu_count_cb, &held), MOMENTO_OK);
    /* Sets on the same channel meanwhile are answered. */
    for (int i = 0; i < 20; i++)
        assert_int_equal(momento_set(c, "c", "k", 1, "v", 1, 0, NULL, tu_count_cb, &fast), MOMENTO_OK);
    assert_int_equal(tu_counter_wait(&fast, 20, 30000), 20);
    assert_int_equal(fast.ok, 20);
    assert_int_equal(held.total, 0);
    int64_t t0 = tu_now_ms();
    assert_int_equal(momento_get(c, "c", "k", 1, NULL, tu_count_cb, &timed), MOMENTO_OK);
    assert_int_equal(tu_counter_wait(&timed, 1, 30000), 1);
    int64_t took = tu_now_ms() - t0;
    assert_int_equal(tu_counter_errors(&timed, MOMENTO_ERR_TIMEOUT), 1);
    assert_true(took >= TU_MS(300) - 5);
    assert_int_equal(held.total, 0);
    momento_client_free(c); /* ends the held get */
    assert_int_equal(tu_counter_errors(&held, MOMENTO_ERR_CANCELLED), 1);
    tu_counter_destroy(&held);
    tu_counter_destroy(&timed);
    tu_counter_destroy(&fast);
}

static void test_fixed_timeout_strategy(void **state)
{
    (void)state;
    momento_config *cfg = tu_config();
    momento_config_set_timeout_ms(cfg, (uint32_t)TU_MS(60000));
    assert_int_equal(momento_config_set_retry_fixed_timeout(cfg, 3, 0, 100), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_config_set_retry_fixed_timeout(cfg, 3, (uint32_t)TU_MS(150), 100), MOMENTO_OK);
    /* The first two attempts are held for good, so only their own 150 ms
     * end them; the third is not held. */
    const char *h[] = {"delay-ms", "999999999", "delay-rpcs", "get", "delay-count", "2"};
    momento_client *c = faulty(cfg, h, 3);
    momento_config_free(cfg);
    momento_local_reset_stats(server);
    momento_result *r;
    int64_t t0 = tu_now_ms();
    assert_int_equal(momento_get_sync(c, "c", "k", 1, NULL, &r), MOMENTO_OK);
    int64_t took = tu_now_ms() - t0;
    assert_int_equal(momento_result_attempts(r), 3);
    momento_result_free(r);
    /* Two attempt timeouts (150 ms each) and two pauses of 100 ms +/-10%,
     * a lower bound the timers guarantee. */
    assert_true(took >= 2 * 150 + 2 * 90 - 10);
    momento_client_free(c);

    /* The overall deadline still bounds the whole. */
    momento_config_new(&cfg);
    momento_config_set_timeout_ms(cfg, (uint32_t)TU_MS(400));
    momento_config_set_retry_fixed_timeout(cfg, 10, (uint32_t)TU_MS(150), 50);
    const char *h2[] = {"delay-ms", "999999999", "delay-rpcs", "get"};
    c = faulty(cfg, h2, 2);
    momento_config_free(cfg);
    t0 = tu_now_ms();
    assert_int_equal(momento_get_sync(c, "c", "k", 1, NULL, &r), MOMENTO_ERR_TIMEOUT);
    took = tu_now_ms() - t0;
    /* Not 10 attempts: a 4th could start 3 x (150 + 45) ms in at the
     * earliest, past the 400 ms (timers do not fire early); a loaded
     * machine may make fewer. Each attempt took its 150 ms at least (a
     * third, whatever the overall deadline left), each pause 45 ms. */
    int attempts = momento_result_attempts(r);
    assert_true(attempts >= 1 && attempts <= 3);
    int64_t least = attempts == 3 ? TU_MS(400) : attempts * TU_MS(150) + (attempts - 1) * 45;
    assert_true(took >= least - 5);
    momento_result_free(r);
    momento_client_free(c);
}

/* A call waiting out a long retry delay is ended by momento_client_free()
 * promptly, with CANCELLED, not when the delay would have ended. */
static void test_free_ends_a_waiting_retry(void **state)
{
    (void)state;
    momento_config *cfg = tu_config();
    momento_config_set_timeout_ms(cfg, 120000);
    assert_int_equal(momento_config_set_retry_fixed_timeout(cfg, 3, 60000, 30000), MOMENTO_OK);
    const char *h[] = {"return-error", "unavailable", "error-rpcs", "get", "error-count", "1"};
    momento_client *c = faulty(cfg, h, 3);
    momento_config_free(cfg);
    momento_local_reset_stats(server);
    tu_counter k;
    tu_counter_init(&k);
    assert_int_equal(momento_get(c, "c", "k", 1, NULL, tu_count_cb, &k), MOMENTO_OK);
    /* The first attempt fails; the retry then waits 30 s (+/-10%). */
    tu_wait_until(momento_local_rpc_count(server, "Get", 14) > 0, 5000);
    assert_int_equal(momento_local_rpc_count(server, "Get", 14), 1);
    usleep(100 * 1000);
    assert_int_equal(k.total, 0);
    momento_client_free(c);
    /* CANCELLED: the free ended the wait. Had it waited for the retry, the
     * retry (error-count 1 is used up) would have answered OK. */
    assert_int_equal(k.total, 1);
    assert_int_equal(tu_counter_errors(&k, MOMENTO_ERR_CANCELLED), 1);
    /* No retry reached the server. Counted by status, not in total: the
     * earlier tests' held Gets end (DEADLINE_EXCEEDED or CANCELLED) when
     * their cancels reach the server, which on a loaded machine can be
     * after this test's reset; none of them is OK or UNAVAILABLE. */
    assert_int_equal(momento_local_rpc_count(server, "Get", 14), 1);
    assert_int_equal(momento_local_rpc_count(server, "Get", 0), 0);
    tu_counter_destroy(&k);
}

static void test_coalesced_waiters_time_out_once(void **state)
{
    (void)state;
    momento_config *cfg = tu_config();
    momento_config_set_timeout_ms(cfg, (uint32_t)TU_MS(300));
    const char *h[] = {"delay-ms", "999999999", "delay-rpcs", "get"}; /* only deadlines end them */
    momento_client *c = faulty(cfg, h, 2);
    momento_config_free(cfg);
    momento_coalescer *co = tu_coalescer(c);
    tu_counter k;
    tu_counter_init(&k);
    for (int i = 0; i < 15; i++)
        assert_int_equal(momento_coalescing_get(co, "c", "k", 1, NULL, tu_count_cb, &k), MOMENTO_OK);
    assert_int_equal(tu_counter_wait(&k, 15, 30000), 15);
    momento_coalescer_free(co);
    /* The free waits for every callback, so none can come after it: a
     * duplicate would have been counted by now. */
    momento_client_free(c);
    assert_int_equal(k.total, 15);
    assert_int_equal(tu_counter_errors(&k, MOMENTO_ERR_TIMEOUT), 15);
    tu_counter_destroy(&k);
}

static void test_server_stop_and_restart(void **state)
{
    (void)state;
    int port = momento_local_port(server);
    momento_client *c = tu_client(server, NULL);
    momento_coalescer *co = tu_coalescer(c);
    assert_int_equal(momento_set_sync(c, "c", "k", 1, "v", 1, 0, NULL, NULL), MOMENTO_OK);

    momento_local_stop(server);
    server = NULL;
    /* Down: calls fail fast (UNAVAILABLE, not TIMEOUT), plain and
     * coalesced alike, each waiter once. */
    assert_int_equal(momento_get_sync(c, "c", "k", 1, NULL, NULL), MOMENTO_ERR_SERVER_UNAVAILABLE);
    tu_counter k;
    tu_counter_init(&k);
    for (int i = 0; i < 10; i++)
        assert_int_equal(momento_coalescing_get(co, "c", "k", 1, NULL, tu_count_cb, &k), MOMENTO_OK);
    assert_int_equal(tu_counter_wait(&k, 10, 30000), 10);
    assert_int_equal(k.total, 10);
    assert_int_equal(tu_counter_errors(&k, MOMENTO_ERR_SERVER_UNAVAILABLE), 10);

    /* Back on the same port (empty: a new process would be too). */
    server = start_on(port);
    assert_non_null(server);
    /* The same client recovers: tried until it does (gRPC's reconnect
     * backoff decides when), a minute at most. */
    int64_t t0 = tu_now_ms();
    int rc = -1;
    while (tu_now_ms() - t0 < TU_MS(60000)) {
        rc = momento_set_sync(c, "c", "k", 1, "again", 5, 0, NULL, NULL);
        if (rc == MOMENTO_OK)
            break;
        usleep(50 * 1000);
    }
    assert_int_equal(rc, MOMENTO_OK);
    assert_int_equal(momento_coalescing_get_sync(co, "c", "k", 1, NULL, NULL), MOMENTO_OK);
    momento_coalescer_free(co);
    /* The free waits for every callback, so none can come after it: a
     * duplicate would have been counted by now. */
    momento_client_free(c);
    assert_int_equal(k.total, 10); /* each waiter once */
    tu_counter_destroy(&k);
}

typedef struct load {
    momento_client *client;
    atomic_bool stop;
    atomic_uint_fast64_t ok_before, err_during, ok_after;
    atomic_int phase; /* 0 before the stop, 1 down, 2 restarted */
    tu_counter done;
    int in_flight;
} load;

static void load_step(const momento_result *r, void *ud);

static void load_submit(load *l)
{
    if (momento_set(l->client, "c", "load", 4, "v", 1, 0, NULL, load_step, l) != MOMENTO_OK)
        tu_count_cb(NULL, &l->done);
}

static void load_step(const momento_result *r, void *ud)
{
    load *l = ud;
    int phase = atomic_load(&l->phase);
    if (momento_result_error(r) == MOMENTO_OK)
        atomic_fetch_add(phase == 2 ? &l->ok_after : &l->ok_before, 1);
    else if (phase >= 1)
        atomic_fetch_add(&l->err_during, 1);
    if (atomic_load(&l->stop)) {
        tu_count_cb(r, &l->done);
        return;
    }
    usleep(1000); /* about a thousand requests a second per worker at most */
    load_submit(l);
}

static void test_restart_mid_load(void **state)
{
    (void)state;
    int port = momento_local_port(server);
    load l;
    memset(&l, 0, sizeof(l));
    tu_counter_init(&l.done);
    l.client = tu_client(server, NULL);
    /* Each phase ends once its outcome was seen, not after a fixed time
     * (a loaded machine may need longer to connect, or to reconnect after
     * gRPC's backoff); a minute each at most. */
    for (int i = 0; i < 4; i++)
        load_submit(&l);
    tu_wait_until(atomic_load(&l.ok_before) > 0, 60000);
    atomic_store(&l.phase, 1);
    momento_local_stop(server);
    server = NULL;
    tu_wait_until(atomic_load(&l.err_during) > 0, 60000);
    server = start_on(port);
    assert_non_null(server);
    atomic_store(&l.phase, 2);
    tu_wait_until(atomic_load(&l.ok_after) > 0, 60000);
    atomic_store(&l.stop, true);
    assert_int_equal(tu_counter_wait(&l.done, 4, 30000), 4);
    assert_true(atomic_load(&l.ok_before) > 0);
    assert_true(atomic_load(&l.err_during) > 0);  /* the gap was seen... */
    assert_true(atomic_load(&l.ok_after) > 0);    /* ...and recovered from */
    momento_client_free(l.client);
    tu_counter_destroy(&l.done);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_injected_error),
        cmocka_unit_test(test_error_count_against_attempts),
        cmocka_unit_test(test_fault_aliases),
        cmocka_unit_test(test_deadline_is_precise_and_local),
        cmocka_unit_test(test_fixed_timeout_strategy),
        cmocka_unit_test(test_free_ends_a_waiting_retry),
        cmocka_unit_test(test_coalesced_waiters_time_out_once),
        cmocka_unit_test(test_server_stop_and_restart),
        cmocka_unit_test(test_restart_mid_load),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
