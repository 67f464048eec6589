/* momento-local's long requests (docs/server.md "Long requests"): a
 * request whose work runs long goes on in slices, and other clients' calls
 * are answered between them; a call on one of its keys, or on a cache a
 * flush is emptying, waits until it is done and then sees all of it. Each
 * long request here is several hundred milliseconds of server work, many
 * times what the calls around it take. */
#include "testutil.h"

#include "momento/collections.h"
#include "momento/local.h"
#include "momento/momento.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 800,000 distinct 4-byte elements: a 4.8 MB SetUnion, within the request
 * and the item limits, that takes the server a few hundred milliseconds. */
#define BIG_N 800000u

typedef struct big_set {
    uint8_t *bytes;
    const void **elems;
    size_t *lens;
    size_t n;
} big_set;

static void big_set_init(big_set *b, size_t n, uint32_t salt)
{
    b->n = n;
    b->bytes = malloc(n * 4);
    b->elems = malloc(n * sizeof(*b->elems));
    b->lens = malloc(n * sizeof(*b->lens));
    assert_non_null(b->bytes);
    assert_non_null(b->elems);
    assert_non_null(b->lens);
    for (size_t i = 0; i < n; i++) {
        uint32_t v = (uint32_t)i ^ salt;
        memcpy(b->bytes + 4 * i, &v, 4);
        b->elems[i] = b->bytes + 4 * i;
        b->lens[i] = 4;
    }
}

static void big_set_free(big_set *b)
{
    free(b->bytes);
    free(b->elems);
    free(b->lens);
}

/* A callback's outcome and integer, and that it came. */
typedef struct answer {
    atomic_int done;
    momento_outcome outcome;
    int error;
    int64_t value;
} answer;

static void answer_cb(const momento_result *r, void *userdata)
{
    answer *a = userdata;
    a->outcome = momento_result_outcome(r);
    a->error = momento_result_error(r);
    a->value = a->outcome == MOMENTO_OUTCOME_HIT ? momento_result_int(r) : -1;
    atomic_fetch_add(&a->done, 1);
}

static void send_big_union(momento_client *c, const char *name, const big_set *b, answer *a)
{
    assert_int_equal(momento_set_add_elements(c, "c", name, strlen(name), b->elems, b->lens,
                                              b->n, NULL, NULL, answer_cb, a),
                     MOMENTO_OK);
}

/* Waits until the server runs a long request (or `a` is answered, which
 * would mean it never ran long: the assertion after says so). */
static void wait_long(momento_local *s, answer *a)
{
    tu_wait_until(momento_local_long_requests(s) >= 1 || atomic_load(&a->done), 60000);
    assert_int_equal(atomic_load(&a->done), 0);
    assert_true(momento_local_long_requests(s) >= 1);
}

/* The set `name`'s length, read back (a sync SetLength that must HIT). */
static int64_t set_length(momento_client *c, const char *name)
{
    momento_result *r = NULL;
    assert_int_equal(momento_set_length_sync(c, "c", name, strlen(name), NULL, &r), MOMENTO_OK);
    assert_int_equal(momento_result_outcome(r), MOMENTO_OUTCOME_HIT);
    int64_t n = momento_result_int(r);
    momento_result_free(r);
    return n;
}

static void wait_answer(answer *a)
{
    tu_wait_until(atomic_load(&a->done), 120000);
    assert_int_equal(atomic_load(&a->done), 1);
}

/* The fixture of the tests with two clients: a server with cache "c", `a`
 * to send the long request and `b` for the calls around it, both patient;
 * freed and stopped after the test even when it fails. */
static struct {
    momento_local *s;
    momento_client *a, *b;
} fx;

static int two_clients_setup(void **state)
{
    (void)state;
    fx.s = tu_server_with_cache("c");
    fx.a = tu_patient_client(fx.s, 120000);
    fx.b = tu_patient_client(fx.s, 120000);
    return 0;
}

/* Frees the clients (a test may do it first, to check what follows). */
static void free_clients(void)
{
    fx.a = fx.b = NULL;
}

static int two_clients_teardown(void **state)
{
    (void)state;
    free_clients();
    momento_local_stop(fx.s);
    fx.s = NULL;
    return 0;
}

#define two_clients_test(f)                                                                        \
    cmocka_unit_test_setup_teardown(f, two_clients_setup, two_clients_teardown)

/* While a long SetUnion runs, another client's Gets and Sets on other keys
 * are answered: before its own answer, several round trips of them. Before
 * the server worked in slices, the first waited for the whole union. */
static void test_others_answered_while_a_long_request_runs(void **state)
{
    (void)state;
    big_set big;
    big_set_init(&big, BIG_N, 0);
    answer u = {0};
    send_big_union(fx.a, "big", &big, &u);
    wait_long(fx.s, &u);
    for (int i = 0; i < 3; i++) {
        momento_result *r = NULL;
        tu_expect(momento_set_sync(fx.b, "c", "other", 5, "v", 1, 0, NULL, &r), r,
                  MOMENTO_OUTCOME_SUCCESS);
        tu_expect(momento_get_sync(fx.b, "c", "other", 5, NULL, &r), r, MOMENTO_OUTCOME_HIT);
    }
    /* All of them answered while the union still ran. */
    assert_int_equal(atomic_load(&u.done), 0);
    wait_answer(&u);
    assert_int_equal(u.outcome, MOMENTO_OUTCOME_SUCCESS);
    assert_int_equal(momento_local_long_requests(fx.s), 0);

    assert_int_equal(set_length(fx.b, "big"), BIG_N);
    big_set_free(&big);
}

/* A call on the long request's key waits for all of it, whichever it is:
 * the length read while the union runs is the whole union's, never part
 * of it; a second union on the key goes after the first. */
static void test_a_call_on_its_key_waits_and_sees_all_of_it(void **state)
{
    (void)state;
    big_set first, second;
    big_set_init(&first, BIG_N / 2, 0);
    big_set_init(&second, BIG_N / 2, 0x80000000u);
    answer u1 = {0}, u2 = {0}, len = {0};
    send_big_union(fx.a, "big", &first, &u1);
    wait_long(fx.s, &u1);
    assert_int_equal(momento_set_length(fx.b, "c", "big", 3, NULL, answer_cb, &len), MOMENTO_OK);
    tu_wait_until(momento_local_waiting_calls(fx.s) >= 1 || atomic_load(&u1.done), 60000);
    assert_int_equal(atomic_load(&u1.done), 0);
    assert_int_equal(momento_local_waiting_calls(fx.s), 1);
    send_big_union(fx.b, "big", &second, &u2);
    wait_answer(&u1);
    wait_answer(&len);
    wait_answer(&u2);
    assert_int_equal(u1.outcome, MOMENTO_OUTCOME_SUCCESS);
    assert_int_equal(u2.outcome, MOMENTO_OUTCOME_SUCCESS);
    /* Answered after the first union, whole; the second (sent after it
     * was held back) does not run before it. */
    assert_int_equal(len.outcome, MOMENTO_OUTCOME_HIT);
    assert_int_equal(len.value, BIG_N / 2);
    assert_int_equal(momento_local_waiting_calls(fx.s), 0);

    assert_int_equal(set_length(fx.b, "big"), BIG_N);
    big_set_free(&first);
    big_set_free(&second);
}

/* A call held back whose client gives up (its deadline) gets its one
 * TIMEOUT, and the server lets it go at once: it does not wait for the
 * long request to end. */
static void test_a_held_call_whose_client_leaves_is_let_go(void **state)
{
    (void)state;
    momento_client *b = tu_client(fx.s, NULL); /* not patient */
    big_set big;
    big_set_init(&big, BIG_N, 0);
    answer u = {0}, len = {0};
    send_big_union(fx.a, "big", &big, &u);
    wait_long(fx.s, &u);
    momento_request_options o = MOMENTO_REQUEST_OPTIONS_INIT;
    o.timeout_ms = 20;
    assert_int_equal(momento_set_length(b, "c", "big", 3, &o, answer_cb, &len), MOMENTO_OK);
    wait_answer(&len);
    assert_int_equal(len.error, MOMENTO_ERR_TIMEOUT);
    /* The server saw its client go (RECV_CLOSE_ON_SERVER) and freed it. */
    tu_wait_until(momento_local_waiting_calls(fx.s) == 0, 60000);
    assert_int_equal(momento_local_waiting_calls(fx.s), 0);
    wait_answer(&u);
    assert_int_equal(u.outcome, MOMENTO_OUTCOME_SUCCESS);
    momento_client_free(b);
    assert_int_equal(atomic_load(&len.done), 1);
    big_set_free(&big);
}

/* A flush of a big cache runs in slices too: another cache's calls are
 * answered meanwhile, a call on the cache being flushed waits and then
 * finds it empty. */
static void test_a_flush_runs_in_slices(void **state)
{
    (void)state;
    tu_create_cache(fx.a, "big");
    /* 300,000 items, by batches of 1000. */
    enum { BATCH = 1000, BATCHES = 300 };
    static char keys[BATCH][16];
    static const void *kp[BATCH], *vp[BATCH];
    static size_t kl[BATCH], vl[BATCH];
    for (int j = 0; j < BATCHES; j++) {
        for (int i = 0; i < BATCH; i++) {
            kl[i] = (size_t)snprintf(keys[i], sizeof(keys[i]), "k%d", j * BATCH + i);
            kp[i] = keys[i];
            vp[i] = "v";
            vl[i] = 1;
        }
        momento_result *r = NULL;
        assert_int_equal(momento_set_batch_sync(fx.a, "big", kp, kl, vp, vl, BATCH, 0, NULL, &r),
                         MOMENTO_OK);
        assert_int_equal(momento_result_error(r), MOMENTO_OK);
        momento_result_free(r);
    }
    answer f = {0}, g = {0};
    assert_int_equal(momento_flush_cache(fx.a, "big", NULL, answer_cb, &f), MOMENTO_OK);
    wait_long(fx.s, &f);
    momento_result *r = NULL;
    tu_expect(momento_get_sync(fx.b, "c", "other", 5, NULL, &r), r, MOMENTO_OUTCOME_MISS);
    assert_int_equal(momento_get(fx.b, "big", "k0", 2, NULL, answer_cb, &g), MOMENTO_OK);
    wait_answer(&f);
    wait_answer(&g);
    assert_int_equal(f.outcome, MOMENTO_OUTCOME_SUCCESS);
    assert_int_equal(g.outcome, MOMENTO_OUTCOME_MISS);
}

/* More long requests at once than the server has threads for them: each
 * still gets its one answer and does all its work; the ones past the
 * threads run in one go. */
static void test_more_long_requests_than_threads(void **state)
{
    (void)state;
    enum { N = 6 };
    momento_local *s = tu_server_with_cache("c");
    momento_client *cl[N];
    big_set big[N];
    answer u[N];
    memset(u, 0, sizeof(u));
    for (int i = 0; i < N; i++) {
        cl[i] = tu_patient_client(s, 240000);
        big_set_init(&big[i], BIG_N / 4, (uint32_t)i << 24);
    }
    for (int i = 0; i < N; i++) {
        char name[8];
        snprintf(name, sizeof(name), "s%d", i);
        send_big_union(cl[i], name, &big[i], &u[i]);
    }
    for (int i = 0; i < N; i++) {
        wait_answer(&u[i]);
        assert_int_equal(u[i].outcome, MOMENTO_OUTCOME_SUCCESS);
    }
    for (int i = 0; i < N; i++) {
        char name[8];
        snprintf(name, sizeof(name), "s%d", i);
        assert_int_equal(set_length(cl[0], name), BIG_N / 4);
    }
    for (int i = 0; i < N; i++) {
        momento_client_free(cl[i]);
        assert_int_equal(atomic_load(&u[i].done), 1);
        big_set_free(&big[i]);
    }
    assert_int_equal(momento_local_long_requests(s), 0);
    assert_int_equal(momento_local_waiting_calls(s), 0);
    momento_local_stop(s);
}

/* Stopped while a long request runs: it ends with its one answer (done, or
 * UNAVAILABLE), and the stop waits for it. Before, the queue was shut
 * down under it and its reply's batch aborted the process in gRPC. */
static void test_stop_while_a_long_request_runs(void **state)
{
    (void)state;
    big_set big;
    big_set_init(&big, BIG_N, 0);
    for (int round = 0; round < 3; round++) {
        momento_local *s = tu_server_with_cache("c");
        momento_client *a = tu_patient_client(s, 120000);
        answer u = {0};
        send_big_union(a, "big", &big, &u);
        wait_long(s, &u);
        momento_local_stop(s);
        wait_answer(&u);
        assert_true(u.error == MOMENTO_OK || u.error == MOMENTO_ERR_SERVER_UNAVAILABLE ||
                    u.error == MOMENTO_ERR_CONNECTION || u.error == MOMENTO_ERR_CANCELLED);
        momento_client_free(a);
        assert_int_equal(atomic_load(&u.done), 1);
    }
    big_set_free(&big);
}

/* The cache deleted (and made again) over and over while big requests to
 * it are decoded without the turn: each is answered (done, or NOT_FOUND),
 * and the server never uses the freed cache (ASan saw a use after free
 * here before: the cache was looked up before the decode only). */
static void test_cache_deleted_while_a_big_request_is_decoded(void **state)
{
    (void)state;
    big_set big;
    big_set_init(&big, BIG_N / 8, 0);
    for (int round = 0; round < 5; round++) {
        momento_result *r = NULL;
        assert_int_equal(momento_create_cache_sync(fx.b, "x", NULL, &r), MOMENTO_OK);
        momento_result_free(r);
        answer u = {0};
        assert_int_equal(momento_set_add_elements(fx.a, "x", "big", 3, big.elems, big.lens, big.n,
                                                  NULL, NULL, answer_cb, &u),
                         MOMENTO_OK);
        for (int i = 0; i < 200 && !atomic_load(&u.done); i++) {
            assert_int_equal(momento_delete_cache_sync(fx.b, "x", NULL, &r), MOMENTO_OK);
            momento_result_free(r);
            assert_int_equal(momento_create_cache_sync(fx.b, "x", NULL, &r), MOMENTO_OK);
            momento_result_free(r);
        }
        wait_answer(&u);
        assert_true(u.error == MOMENTO_OK || u.error == MOMENTO_ERR_CACHE_NOT_FOUND);
    }
    free_clients();
    big_set_free(&big);
    assert_int_equal(momento_local_waiting_calls(fx.s), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        two_clients_test(test_others_answered_while_a_long_request_runs),
        two_clients_test(test_a_call_on_its_key_waits_and_sees_all_of_it),
        two_clients_test(test_a_held_call_whose_client_leaves_is_let_go),
        two_clients_test(test_a_flush_runs_in_slices),
        cmocka_unit_test(test_more_long_requests_than_threads),
        cmocka_unit_test(test_stop_while_a_long_request_runs),
        two_clients_test(test_cache_deleted_while_a_big_request_is_decoded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
