/* Leaderboards through the library (leaderboards.h), against momento-local:
 * each call's elements, ranks and scores in both orders, score ranges'
 * half-open ends and paging, ids left out, competition ranks with ties,
 * length, removal and delete, leaderboards kept apart by cache and by name,
 * Momento's limits answered by the server, refusals at submit, async
 * callbacks and owned copies. */
#include "momento/leaderboards.h"
#include "testing.h"
#include "testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* tests/common's fixture, and a second cache. */
static int setup(void **state)
{
    tu_fixture_setup(state);
    tu_create_cache(tu_fx.client, "c2");
    return 0;
}

static void ok(momento_result *r)
{
    if (momento_result_error(r) != MOMENTO_OK)
        fail_msg("%s: %s", momento_strerror(momento_result_error(r)), momento_result_message(r));
    assert_int_equal(momento_result_outcome(r), MOMENTO_OUTCOME_SUCCESS);
}

static void upsert(const char *cache, const char *lb, const momento_leaderboard_element *e,
                   size_t n)
{
    momento_result *r;
    assert_int_equal(momento_leaderboard_upsert_sync(tu_fx.client, cache, lb, e, n, NULL, &r),
                     MOMENTO_OK);
    ok(r);
    momento_result_free(r);
}

/* Asserts that `r` holds exactly the `n` elements of `want`, in order. */
static void assert_elements(momento_result *r, const momento_ranked_element *want, size_t n)
{
    ok(r);
    assert_int_equal(momento_result_item_count(r), n);
    for (size_t i = 0; i < n; i++) {
        momento_ranked_element e;
        assert_int_equal(momento_result_ranked(r, i, &e), MOMENTO_OK);
        if (e.id != want[i].id || e.rank != want[i].rank || e.score != want[i].score)
            fail_msg("element %zu: got id %u rank %u score %g, want id %u rank %u score %g", i,
                     e.id, e.rank, e.score, want[i].id, want[i].rank, want[i].score);
    }
    momento_ranked_element past;
    assert_int_equal(momento_result_ranked(r, n, &past), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(past.id, 0);
    momento_result_free(r);
}

static uint64_t length(const char *cache, const char *lb)
{
    momento_result *r;
    assert_int_equal(momento_leaderboard_length_sync(tu_fx.client, cache, lb, NULL, &r),
                     MOMENTO_OK);
    ok(r);
    int64_t n = momento_result_int(r);
    momento_result_free(r);
    return (uint64_t)n;
}

static const momento_leaderboard_element four[] = {
    {.id = 1, .score = 10.5},
    {.id = 2, .score = 20},
    {.id = 3, .score = 30},
    {.id = 4, .score = -5}};

static void test_rank_orders_and_updates(void **state)
{
    (void)state;
    upsert("c", "orders", four, 4);
    momento_result *r;
    assert_int_equal(momento_leaderboard_fetch_by_rank_sync(tu_fx.client, "c", "orders", 0, 10,
                                                            MOMENTO_ASCENDING, NULL, &r),
                     MOMENTO_OK);
    assert_elements(r,
                    (momento_ranked_element[]){
                        {4, 0, -5}, {1, 1, 10.5}, {2, 2, 20}, {3, 3, 30}},
                    4);
    assert_int_equal(momento_leaderboard_fetch_by_rank_sync(tu_fx.client, "c", "orders", 1, 3,
                                                            MOMENTO_DESCENDING, NULL, &r),
                     MOMENTO_OK);
    assert_elements(r, (momento_ranked_element[]){{2, 1, 20}, {1, 2, 10.5}}, 2);

    /* An upsert of an existing id moves it; a new id joins. */
    upsert("c", "orders",
           (momento_leaderboard_element[]){{.id = 3, .score = -100}, {.id = 9, .score = 15}}, 2);
    assert_int_equal(momento_leaderboard_fetch_by_rank_sync(tu_fx.client, "c", "orders", 0, 2,
                                                            MOMENTO_ASCENDING, NULL, &r),
                     MOMENTO_OK);
    assert_elements(r, (momento_ranked_element[]){{3, 0, -100}, {4, 1, -5}}, 2);
    assert_int_equal(length("c", "orders"), 5);

    /* Past the end: fewer, or none. */
    assert_int_equal(momento_leaderboard_fetch_by_rank_sync(tu_fx.client, "c", "orders", 4, 100,
                                                            MOMENTO_ASCENDING, NULL, &r),
                     MOMENTO_OK);
    assert_elements(r, (momento_ranked_element[]){{2, 4, 20}}, 1);
    assert_int_equal(momento_leaderboard_fetch_by_rank_sync(tu_fx.client, "c", "orders", 50, 60,
                                                            MOMENTO_ASCENDING, NULL, &r),
                     MOMENTO_OK);
    assert_elements(r, NULL, 0);
}

static void test_fetch_by_score(void **state)
{
    (void)state;
    upsert("c", "scores", four, 4);
    momento_result *r;
    /* [10.5, 30): the minimum in, the maximum out. */
    assert_int_equal(momento_leaderboard_fetch_by_score_sync(tu_fx.client, "c", "scores", 10.5, 30,
                                                             MOMENTO_ASCENDING, 0, 0, NULL, &r),
                     MOMENTO_OK);
    assert_elements(r, (momento_ranked_element[]){{1, 1, 10.5}, {2, 2, 20}}, 2);
    /* Open ends; ranks are the whole leaderboard's, in the order asked. */
    assert_int_equal(momento_leaderboard_fetch_by_score_sync(tu_fx.client, "c", "scores", -INFINITY,
                                                             INFINITY, MOMENTO_DESCENDING, 0, 0,
                                                             NULL, &r),
                     MOMENTO_OK);
    assert_elements(r,
                    (momento_ranked_element[]){
                        {3, 0, 30}, {2, 1, 20}, {1, 2, 10.5}, {4, 3, -5}},
                    4);
    /* Paging: skip one, take two. */
    assert_int_equal(momento_leaderboard_fetch_by_score_sync(tu_fx.client, "c", "scores", -INFINITY,
                                                             INFINITY, MOMENTO_ASCENDING, 1, 2,
                                                             NULL, &r),
                     MOMENTO_OK);
    assert_elements(r, (momento_ranked_element[]){{1, 1, 10.5}, {2, 2, 20}}, 2);
    /* min == max is an empty range, not an error. */
    assert_int_equal(momento_leaderboard_fetch_by_score_sync(tu_fx.client, "c", "scores", 20, 20,
                                                             MOMENTO_ASCENDING, 0, 0, NULL, &r),
                     MOMENTO_OK);
    assert_elements(r, NULL, 0);
    /* Full double precision survives the trip. */
    double fine = 0.1 + 0.2;
    upsert("c", "precise", (momento_leaderboard_element[]){{.id = 7, .score = fine}}, 1);
    assert_int_equal(momento_leaderboard_fetch_by_score_sync(tu_fx.client, "c", "precise",
                                                             -INFINITY, INFINITY, MOMENTO_ASCENDING,
                                                             0, 0, NULL, &r),
                     MOMENTO_OK);
    assert_elements(r, (momento_ranked_element[]){{7, 0, fine}}, 1);
}

static void test_get_rank_and_competition_rank(void **state)
{
    (void)state;
    upsert("c", "ties",
           (momento_leaderboard_element[]){{.id = 1, .score = 10},
                                           {.id = 2, .score = 20},
                                           {.id = 3, .score = 20},
                                           {.id = 4, .score = 30}},
           4);
    momento_result *r;
    /* Ids not there are left out; the others keep the order asked. */
    uint32_t ids[] = {4, 1, 77};
    assert_int_equal(momento_leaderboard_get_rank_sync(tu_fx.client, "c", "ties", ids, 3,
                                                       MOMENTO_ASCENDING, NULL, &r),
                     MOMENTO_OK);
    ok(r);
    assert_int_equal(momento_result_item_count(r), 2);
    for (size_t i = 0; i < 2; i++) {
        momento_ranked_element e;
        assert_int_equal(momento_result_ranked(r, i, &e), MOMENTO_OK);
        if (e.id == 4)
            assert_true(e.rank == 3 && e.score == 30);
        else if (e.id == 1)
            assert_true(e.rank == 0 && e.score == 10);
        else
            fail_msg("id %u was not asked for", e.id);
    }
    momento_result_free(r);

    /* Competition ranks, descending: 30 first, the two 20s share rank 1,
     * and 10 comes after three elements. */
    uint32_t all[] = {1, 2, 3, 4};
    assert_int_equal(momento_leaderboard_get_competition_rank_sync(tu_fx.client, "c", "ties", all,
                                                                   4, MOMENTO_DESCENDING, NULL, &r),
                     MOMENTO_OK);
    ok(r);
    assert_int_equal(momento_result_item_count(r), 4);
    uint32_t want_desc[5] = {0, 3, 1, 1, 0};
    for (size_t i = 0; i < 4; i++) {
        momento_ranked_element e;
        assert_int_equal(momento_result_ranked(r, i, &e), MOMENTO_OK);
        assert_true(e.id >= 1 && e.id <= 4);
        assert_int_equal(e.rank, want_desc[e.id]);
    }
    momento_result_free(r);
    assert_int_equal(momento_leaderboard_get_competition_rank_sync(tu_fx.client, "c", "ties", all,
                                                                   4, MOMENTO_ASCENDING, NULL, &r),
                     MOMENTO_OK);
    ok(r);
    uint32_t want_asc[5] = {0, 0, 1, 1, 3};
    for (size_t i = 0; i < momento_result_item_count(r); i++) {
        momento_ranked_element e;
        assert_int_equal(momento_result_ranked(r, i, &e), MOMENTO_OK);
        assert_int_equal(e.rank, want_asc[e.id]);
    }
    assert_int_equal(momento_result_item_count(r), 4);
    momento_result_free(r);
}

static void test_remove_delete_and_separation(void **state)
{
    (void)state;
    /* The same name in two caches, and a key of that name: unrelated. */
    upsert("c", "apart", four, 4);
    upsert("c2", "apart", four, 2);
    momento_result *r;
    assert_int_equal(
        momento_set_sync(tu_fx.client, "c", MOMENTO_STR("apart"), MOMENTO_STR("v"), 0, NULL, &r),
        MOMENTO_OK);
    momento_result_free(r);
    assert_int_equal(length("c", "apart"), 4);
    assert_int_equal(length("c2", "apart"), 2);

    uint32_t gone[] = {1, 3, 1000};
    assert_int_equal(
        momento_leaderboard_remove_elements_sync(tu_fx.client, "c", "apart", gone, 3, NULL, &r),
        MOMENTO_OK);
    ok(r);
    momento_result_free(r);
    assert_int_equal(length("c", "apart"), 2);
    assert_int_equal(length("c2", "apart"), 2);

    assert_int_equal(momento_leaderboard_delete_sync(tu_fx.client, "c", "apart", NULL, &r),
                     MOMENTO_OK);
    ok(r);
    momento_result_free(r);
    assert_int_equal(length("c", "apart"), 0);
    assert_int_equal(length("c2", "apart"), 2);
    tu_expect(momento_get_sync(tu_fx.client, "c", MOMENTO_STR("apart"), NULL, &r), r,
              MOMENTO_OUTCOME_HIT);

    /* A leaderboard that does not exist reads as empty; its removal and
     * delete succeed. */
    assert_int_equal(length("c", "never"), 0);
    assert_int_equal(momento_leaderboard_fetch_by_rank_sync(tu_fx.client, "c", "never", 0, 5,
                                                            MOMENTO_ASCENDING, NULL, &r),
                     MOMENTO_OK);
    assert_elements(r, NULL, 0);
    assert_int_equal(
        momento_leaderboard_remove_elements_sync(tu_fx.client, "c", "never", gone, 1, NULL, &r),
        MOMENTO_OK);
    ok(r);
    momento_result_free(r);
    assert_int_equal(momento_leaderboard_delete_sync(tu_fx.client, "c", "never", NULL, &r),
                     MOMENTO_OK);
    ok(r);
    momento_result_free(r);
}

static void test_server_limits_and_unknown_cache(void **state)
{
    (void)state;
    momento_result *r;
    /* A rank range of 8193 ranks: Momento's limit, the server's answer. */
    assert_int_equal(momento_leaderboard_fetch_by_rank_sync(tu_fx.client, "c", "limits", 0,
                                                            MOMENTO_LEADERBOARD_MAX_ELEMENTS + 1,
                                                            MOMENTO_ASCENDING, NULL, &r),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_result_grpc_status(r), 3);
    momento_result_free(r);
    assert_int_equal(momento_leaderboard_fetch_by_rank_sync(tu_fx.client, "c", "limits", 0,
                                                            MOMENTO_LEADERBOARD_MAX_ELEMENTS,
                                                            MOMENTO_ASCENDING, NULL, &r),
                     MOMENTO_OK);
    momento_result_free(r);

    /* 8193 elements: refused whole, nothing stored. */
    size_t n = MOMENTO_LEADERBOARD_MAX_ELEMENTS + 1;
    momento_leaderboard_element *many = calloc(n, sizeof(*many));
    assert_non_null(many);
    for (size_t i = 0; i < n; i++)
        many[i] = (momento_leaderboard_element){.id = (uint32_t)i, .score = (double)i};
    assert_int_equal(
        momento_leaderboard_upsert_sync(tu_fx.client, "c", "limits", many, n, NULL, &r),
        MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_result_grpc_status(r), 3);
    momento_result_free(r);
    assert_int_equal(length("c", "limits"), 0);
    upsert("c", "limits", many, n - 1);
    assert_int_equal(length("c", "limits"), n - 1);
    free(many);

    /* An unknown cache, as for every data call. */
    assert_int_equal(momento_leaderboard_length_sync(tu_fx.client, "no-such-cache", "x", NULL, &r),
                     MOMENTO_ERR_CACHE_NOT_FOUND);
    momento_result_free(r);
    assert_int_equal(
        momento_leaderboard_upsert_sync(tu_fx.client, "no-such-cache", "x", four, 1, NULL, &r),
        MOMENTO_ERR_CACHE_NOT_FOUND);
    momento_result_free(r);
}

static void test_refusals(void **state)
{
    (void)state;
    momento_result *r;
    uint32_t id = 1;
    const momento_leaderboard_element nan_score = {.id = 1, .score = NAN};
    const momento_leaderboard_element inf_score = {.id = 1, .score = INFINITY};
#define REFUSED(call)                                                                              \
    do {                                                                                           \
        assert_int_equal((call), MOMENTO_ERR_INVALID_ARGUMENT);                                   \
        tu_assert_refusal(&r, MOMENTO_ERR_INVALID_ARGUMENT);                                       \
    } while (0)
    REFUSED(momento_leaderboard_length_sync(tu_fx.client, "c", NULL, NULL, &r));
    REFUSED(momento_leaderboard_length_sync(tu_fx.client, "c", "", NULL, &r));
    REFUSED(momento_leaderboard_length_sync(tu_fx.client, "c", "bad\xff", NULL, &r));
    REFUSED(momento_leaderboard_length_sync(tu_fx.client, NULL, "x", NULL, &r));
    REFUSED(momento_leaderboard_upsert_sync(tu_fx.client, "c", "x", NULL, 1, NULL, &r));
    REFUSED(momento_leaderboard_upsert_sync(tu_fx.client, "c", "x", four, 0, NULL, &r));
    REFUSED(momento_leaderboard_upsert_sync(tu_fx.client, "c", "x", &nan_score, 1, NULL, &r));
    REFUSED(momento_leaderboard_upsert_sync(tu_fx.client, "c", "x", &inf_score, 1, NULL, &r));
    REFUSED(momento_leaderboard_remove_elements_sync(tu_fx.client, "c", "x", NULL, 1, NULL, &r));
    REFUSED(momento_leaderboard_remove_elements_sync(tu_fx.client, "c", "x", &id, 0, NULL, &r));
    REFUSED(momento_leaderboard_get_rank_sync(tu_fx.client, "c", "x", &id, 0, MOMENTO_ASCENDING,
                                              NULL, &r));
    REFUSED(momento_leaderboard_get_rank_sync(tu_fx.client, "c", "x", &id, 1, (momento_order)7,
                                              NULL, &r));
    REFUSED(momento_leaderboard_get_competition_rank_sync(tu_fx.client, "c", "x", NULL, 1,
                                                          MOMENTO_DESCENDING, NULL, &r));
    REFUSED(momento_leaderboard_fetch_by_rank_sync(tu_fx.client, "c", "x", 5, 5, MOMENTO_ASCENDING,
                                                   NULL, &r));
    REFUSED(momento_leaderboard_fetch_by_rank_sync(tu_fx.client, "c", "x", 6, 5, MOMENTO_ASCENDING,
                                                   NULL, &r));
    REFUSED(momento_leaderboard_fetch_by_score_sync(tu_fx.client, "c", "x", 2, 1, MOMENTO_ASCENDING,
                                                    0, 0, NULL, &r));
    REFUSED(momento_leaderboard_fetch_by_score_sync(tu_fx.client, "c", "x", NAN, 1,
                                                    MOMENTO_ASCENDING, 0, 0, NULL, &r));
#undef REFUSED
    /* The async form refuses with no callback. */
    tu_counter k;
    tu_counter_init(&k);
    assert_int_equal(
        momento_leaderboard_upsert(tu_fx.client, "c", "x", &nan_score, 1, NULL, tu_count_cb, &k),
        MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(tu_counter_wait(&k, 1, 50), 0);
    tu_counter_destroy(&k);
    /* momento_result_ranked() of a result that is not a leaderboard read's. */
    assert_int_equal(momento_get_sync(tu_fx.client, "c", MOMENTO_STR("k"), NULL, &r), MOMENTO_OK);
    momento_ranked_element e = {.id = 5};
    assert_int_equal(momento_result_ranked(r, 0, &e), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(e.id, 0);
    assert_int_equal(momento_result_ranked(NULL, 0, &e), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_result_ranked(r, 0, NULL), MOMENTO_ERR_INVALID_ARGUMENT);
    momento_result_free(r);
}

static void test_async_and_dup(void **state)
{
    (void)state;
    upsert("c", "async", four, 4);
    tu_kept kp = {.copy = NULL};
    tu_counter_init(&kp.k);
    assert_int_equal(momento_leaderboard_fetch_by_rank(tu_fx.client, "c", "async", 0, 2,
                                                       MOMENTO_DESCENDING, NULL, tu_keep_cb, &kp),
                     MOMENTO_OK);
    assert_int_equal(tu_counter_wait(&kp.k, 1, 5000), 1);
    assert_int_equal(kp.k.ok, 1);
    /* The copy outlives the callback with its ids, ranks and scores. */
    assert_non_null(kp.copy);
    assert_int_equal(momento_result_item_count(kp.copy), 2);
    momento_ranked_element e;
    assert_int_equal(momento_result_ranked(kp.copy, 1, &e), MOMENTO_OK);
    assert_int_equal(e.id, 2);
    assert_int_equal(e.rank, 1);
    assert_true(e.score == 20);
    momento_result_free(kp.copy);
    tu_counter_destroy(&kp.k);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rank_orders_and_updates),
        cmocka_unit_test(test_fetch_by_score),
        cmocka_unit_test(test_get_rank_and_competition_rank),
        cmocka_unit_test(test_remove_delete_and_separation),
        cmocka_unit_test(test_server_limits_and_unknown_cache),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_async_and_dup),
    };
    return cmocka_run_group_tests(tests, setup, tu_fixture_teardown);
}
