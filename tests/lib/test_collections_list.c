/* Lists and sorted sets through the library, against the local server:
 * values and their order, lengths, truncation, slices, erasing by
 * position, scores and ranks, misses once the last element is gone,
 * CollectionTtl, type mismatches, the async forms, coalesced reads and
 * read-your-writes through a coalescer, and the refusals at submit
 * (nothing sent, no callback). */
#include "testing.h"
#include "testutil.h"

#include "momento/coalescer.h"
#include "momento/collections.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define N(a) (sizeof(a) / sizeof((a)[0]))

static void check_score(double got, double want)
{
    if (got != want)
        fail_msg("score %.17g, want %.17g", got, want);
}

/* Asserts that `r` is a HIT whose items are exactly `want`: comma-separated
 * values ("" = no items), each "value:score" when `scored`. */
static void check_items(const momento_result *r, const char *want, int scored)
{
    assert_int_equal(momento_result_error(r), MOMENTO_OK);
    assert_int_equal(momento_result_outcome(r), MOMENTO_OUTCOME_HIT);
    char buf[512];
    snprintf(buf, sizeof(buf), "%s", want);
    size_t i = 0;
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save), i++) {
        const momento_result *it = momento_result_item(r, i);
        if (!it)
            fail_msg("%zu items, want %s", momento_result_item_count(r), want);
        assert_int_equal(momento_result_outcome(it), MOMENTO_OUTCOME_HIT);
        if (scored) {
            char *colon = strrchr(tok, ':');
            assert_non_null(colon);
            *colon = '\0';
            check_score(momento_result_score(it), strtod(colon + 1, NULL));
        }
        size_t len;
        const void *v = momento_result_value(it, &len);
        assert_non_null(v);
        if (len != strlen(tok) || memcmp(v, tok, len) != 0)
            fail_msg("item %zu is \"%.*s\", want \"%s\" (of %s)", i, (int)len, (const char *)v, tok,
                     want);
    }
    assert_int_equal(momento_result_item_count(r), i);
}

static void check_fetch(const char *list, int32_t start, int32_t end, const char *want)
{
    momento_result *r;
    assert_int_equal(
        momento_list_fetch_sync(tu_fx.client, "c", MOMENTO_STR(list), start, end, NULL, &r),
        MOMENTO_OK);
    if (momento_result_outcome(r) != MOMENTO_OUTCOME_HIT)
        fail_msg("fetch [%d, %d) of %s: outcome %d, want a HIT", start, end, list,
                 (int)momento_result_outcome(r));
    check_items(r, want, 0);
    momento_result_free(r);
}

static void check_rank_fetch(const char *set, int32_t start, int32_t end, momento_order order,
                             const char *want)
{
    momento_result *r;
    assert_int_equal(momento_sorted_set_fetch_by_rank_sync(tu_fx.client, "c", MOMENTO_STR(set),
                                                           start, end, order, NULL, &r),
                     MOMENTO_OK);
    check_items(r, want, 1);
    momento_result_free(r);
}

static void check_score_fetch(const char *set, double min, double max, momento_order order,
                              uint32_t offset, uint32_t count, const char *want)
{
    momento_result *r;
    assert_int_equal(momento_sorted_set_fetch_by_score_sync(tu_fx.client, "c", MOMENTO_STR(set),
                                                            min, max, order, offset, count, NULL,
                                                            &r),
                     MOMENTO_OK);
    check_items(r, want, 1);
    momento_result_free(r);
}

/* `r`, which it frees, is a MISS for `want` < 0, else a HIT of `want`. */
static void check_int_or_miss(momento_result *r, int64_t want)
{
    if (want < 0) {
        assert_int_equal(momento_result_outcome(r), MOMENTO_OUTCOME_MISS);
    } else {
        assert_int_equal(momento_result_outcome(r), MOMENTO_OUTCOME_HIT);
        assert_int_equal(momento_result_int(r), want);
    }
    momento_result_free(r);
}

/* The outcome of a length call, and the length when it is a HIT. */
static void check_list_length(const char *list, int64_t want)
{
    momento_result *r;
    assert_int_equal(momento_list_length_sync(tu_fx.client, "c", MOMENTO_STR(list), NULL, &r),
                     MOMENTO_OK);
    check_int_or_miss(r, want);
}

/* momento_list_push_back_sync() or momento_list_push_front_sync(). */
typedef int (*list_push_sync_fn)(momento_client *c, const char *cache, const void *name,
                                 size_t name_len, const void *value, size_t value_len,
                                 uint32_t truncate_to_size, const momento_collection_ttl *ttl,
                                 const momento_request_options *opts, momento_result **ret);

/* Pushes `value` onto one end of `list` with `push_sync` and checks the
 * new length it answers. */
static void push(list_push_sync_fn push_sync, const char *list, const char *value,
                 uint32_t truncate, int64_t want_len)
{
    momento_result *r;
    assert_int_equal(push_sync(tu_fx.client, "c", MOMENTO_STR(list), MOMENTO_STR(value), truncate,
                               NULL, NULL, &r),
                     MOMENTO_OK);
    assert_int_equal(momento_result_outcome(r), MOMENTO_OUTCOME_SUCCESS);
    assert_int_equal(momento_result_int(r), want_len);
    momento_result_free(r);
}

static void push_back(const char *list, const char *value, uint32_t truncate, int64_t want_len)
{
    push(momento_list_push_back_sync, list, value, truncate, want_len);
}

static void push_front(const char *list, const char *value, uint32_t truncate, int64_t want_len)
{
    push(momento_list_push_front_sync, list, value, truncate, want_len);
}

/* momento_list_concatenate_back_sync() or momento_list_concatenate_front_sync(). */
typedef int (*list_concat_sync_fn)(momento_client *c, const char *cache, const void *name,
                                   size_t name_len, const void *const *values,
                                   const size_t *value_lens, size_t n, uint32_t truncate_to_size,
                                   const momento_collection_ttl *ttl,
                                   const momento_request_options *opts, momento_result **ret);

/* Concatenates the `n` values onto one end of `list` with `concat_sync`
 * and checks the new length it answers. */
static void concat(list_concat_sync_fn concat_sync, const char *list, const void *const *values,
                   const size_t *lens, size_t n, uint32_t truncate, int64_t want_len)
{
    momento_result *r;
    assert_int_equal(concat_sync(tu_fx.client, "c", MOMENTO_STR(list), values, lens, n, truncate,
                                 NULL, NULL, &r),
                     MOMENTO_OK);
    assert_int_equal(momento_result_int(r), want_len);
    momento_result_free(r);
}

/* A list "0".."9". */
static void make_digits(const char *list)
{
    const void *v[] = {"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"};
    size_t l[] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    concat(momento_list_concatenate_back_sync, list, v, l, N(v), 0, 10);
}

static void test_list_push_fetch(void **state)
{
    (void)state;
    momento_result *r;
    /* No list yet: every read misses. */
    assert_int_equal(
        momento_list_fetch_sync(tu_fx.client, "c", MOMENTO_STR("l1"), 0, MOMENTO_END, NULL, &r),
        MOMENTO_OK);
    assert_int_equal(momento_result_outcome(r), MOMENTO_OUTCOME_MISS);
    assert_int_equal(momento_result_item_count(r), 0);
    momento_result_free(r);
    check_list_length("l1", -1);
    assert_int_equal(momento_list_pop_front_sync(tu_fx.client, "c", MOMENTO_STR("l1"), NULL, &r),
                     MOMENTO_OK);
    assert_int_equal(momento_result_outcome(r), MOMENTO_OUTCOME_MISS);
    assert_null(momento_result_value(r, NULL));
    momento_result_free(r);

    push_back("l1", "b", 0, 1);
    push_back("l1", "c", 0, 2);
    push_front("l1", "a", 0, 3);
    const void *back[] = {"d", "e"};
    size_t back_lens[] = {1, 1};
    assert_int_equal(momento_list_concatenate_back_sync(tu_fx.client, "c", MOMENTO_STR("l1"), back,
                                                        back_lens, 2, 0, NULL, NULL, &r),
                     MOMENTO_OK);
    assert_int_equal(momento_result_outcome(r), MOMENTO_OUTCOME_SUCCESS);
    assert_int_equal(momento_result_int(r), 5);
    momento_result_free(r);
    /* Concatenated at the front, the values keep their own order. */
    const void *front[] = {"x", "y"};
    size_t front_lens[] = {1, 1};
    concat(momento_list_concatenate_front_sync, "l1", front, front_lens, 2, 0, 7);

    check_fetch("l1", 0, MOMENTO_END, "x,y,a,b,c,d,e");
    check_list_length("l1", 7);
    assert_int_equal(momento_item_get_type_sync(tu_fx.client, "c", MOMENTO_STR("l1"), NULL, &r),
                     MOMENTO_OK);
    assert_int_equal(momento_result_item_type(r), MOMENTO_ITEM_TYPE_LIST);
    momento_result_free(r);

    /* An empty value is an element like any other, and reads as present. */
    push_back("l1", "", 0, 8);
    assert_int_equal(
        momento_list_fetch_sync(tu_fx.client, "c", MOMENTO_STR("l1"), -2, MOMENTO_END, NULL, &r),
        MOMENTO_OK);
    assert_int_equal(momento_result_item_count(r), 2);
    size_t len = 99;
    assert_non_null(momento_result_value(momento_result_item(r, 1), &len));
    assert_int_equal(len, 0);
    /* An owned copy keeps the items. */
    momento_result *copy;
    assert_int_equal(momento_result_dup(r, &copy), MOMENTO_OK);
    momento_result_free(r);
    assert_int_equal(momento_result_item_count(copy), 2);
    assert_memory_equal(momento_result_value(momento_result_item(copy, 0), &len), "e", 1);
    momento_result_free(copy);
}

static void test_list_slices(void **state)
{
    (void)state;
    make_digits("l2");
    check_fetch("l2", 2, 5, "2,3,4");
    check_fetch("l2", 0, 3, "0,1,2");
    check_fetch("l2", 7, MOMENTO_END, "7,8,9");
    check_fetch("l2", -3, MOMENTO_END, "7,8,9");
    check_fetch("l2", 0, -8, "0,1");
    check_fetch("l2", 3, -3, "3,4,5,6");
    check_fetch("l2", -4, -1, "6,7,8");
    check_fetch("l2", -3, 9, "7,8");
    /* Out-of-range ends are clamped. */
    check_fetch("l2", -100, 2, "0,1");
    check_fetch("l2", 5, 100, "5,6,7,8,9");
    check_fetch("l2", 8, INT32_MAX - 1, "8,9");
    /* Empty only given the length: accepted, and answered as Momento does
     * (the Go SDK's "provides no start and 0 as end yields no result"):
     * a MISS, though the list exists. */
    int32_t empty[][2] = {{-2, 3}, {12, 20}, {-3, 0}};
    for (size_t i = 0; i < N(empty); i++) {
        momento_result *r;
        assert_int_equal(momento_list_fetch_sync(tu_fx.client, "c", MOMENTO_STR("l2"), empty[i][0],
                                                 empty[i][1], NULL, &r),
                         MOMENTO_OK);
        assert_int_equal(momento_result_outcome(r), MOMENTO_OUTCOME_MISS);
        assert_int_equal(momento_result_item_count(r), 0);
        momento_result_free(r);
    }
    /* Unchanged by the reads. */
    check_list_length("l2", 10);
}

static void test_list_truncate(void **state)
{
    (void)state;
    push_back("l3", "1", 0, 1);
    push_back("l3", "2", 0, 2);
    push_back("l3", "3", 0, 3);
    /* Pushed at the back, cut from the front; and the other way round. */
    push_back("l3", "4", 3, 3);
    check_fetch("l3", 0, MOMENTO_END, "2,3,4");
    push_front("l3", "0", 2, 2);
    check_fetch("l3", 0, MOMENTO_END, "0,2");
    /* A limit the list is within leaves it whole. */
    push_back("l3", "5", 10, 3);
    check_fetch("l3", 0, MOMENTO_END, "0,2,5");

    const void *abc[] = {"a", "b", "c"};
    size_t one[] = {1, 1, 1};
    concat(momento_list_concatenate_back_sync, "l3", abc, one, 3, 4, 4);
    check_fetch("l3", 0, MOMENTO_END, "5,a,b,c");
    const void *pq[] = {"p", "q"};
    concat(momento_list_concatenate_front_sync, "l3", pq, one, 2, 3, 3);
    check_fetch("l3", 0, MOMENTO_END, "p,q,5");
}

static void test_list_pop_remove_retain(void **state)
{
    (void)state;
    momento_result *r;
    const void *v[] = {"a", "b", "a", "c", "a"};
    size_t l[] = {1, 1, 1, 1, 1};
    assert_int_equal(momento_list_concatenate_back_sync(tu_fx.client, "c", MOMENTO_STR("l4"), v, l,
                                                        N(v), 0, NULL, NULL, NULL),
                     MOMENTO_OK);
    /* Every "a" goes; a value not in the list, or no list, is no error. */
    tu_expect(momento_list_remove_value_sync(tu_fx.client, "c", MOMENTO_STR("l4"), MOMENTO_STR("a"),
                                             NULL, &r),
              r, MOMENTO_OUTCOME_SUCCESS);
    check_fetch("l4", 0, MOMENTO_END, "b,c");
    assert_int_equal(momento_list_remove_value_sync(tu_fx.client, "c", MOMENTO_STR("l4"),
                                                    MOMENTO_STR("zz"), NULL, NULL),
                     MOMENTO_OK);
    tu_expect(momento_list_remove_value_sync(tu_fx.client, "c", MOMENTO_STR("no-list"),
                                             MOMENTO_STR("a"), NULL, &r),
              r, MOMENTO_OUTCOME_SUCCESS);
    check_fetch("l4", 0, MOMENTO_END, "b,c");

    /* Pops take from their own end; the last one deletes the list. */
    size_t len;
    assert_int_equal(momento_list_pop_back_sync(tu_fx.client, "c", MOMENTO_STR("l4"), NULL, &r),
                     MOMENTO_OK);
    assert_int_equal(momento_result_outcome(r), MOMENTO_OUTCOME_HIT);
    assert_memory_equal(momento_result_value(r, &len), "c", 1);
    assert_int_equal(len, 1);
    momento_result_free(r);
    assert_int_equal(momento_list_pop_front_sync(tu_fx.client, "c", MOMENTO_STR("l4"), NULL, &r),
                     MOMENTO_OK);
    assert_int_equal(momento_result_outcome(r), MOMENTO_OUTCOME_HIT);
    assert_memory_equal(momento_result_value(r, &len), "b", 1);
    momento_result_free(r);
    tu_expect(momento_list_pop_front_sync(tu_fx.client, "c", MOMENTO_STR("l4"), NULL, &r), r,
              MOMENTO_OUTCOME_MISS);
    tu_expect(momento_list_pop_back_sync(tu_fx.client, "c", MOMENTO_STR("l4"), NULL, &r), r,
              MOMENTO_OUTCOME_MISS);
    check_list_length("l4", -1);
    assert_int_equal(
        momento_list_fetch_sync(tu_fx.client, "c", MOMENTO_STR("l4"), 0, MOMENTO_END, NULL, &r),
        MOMENTO_OK);
    assert_int_equal(momento_result_outcome(r), MOMENTO_OUTCOME_MISS);
    momento_result_free(r);

    /* Retain keeps a slice, with the same index rules as fetch. */
    make_digits("l5");
    assert_int_equal(
        momento_list_retain_sync(tu_fx.client, "c", MOMENTO_STR("l5"), 2, 8, NULL, NULL, &r),
        MOMENTO_OK);
    assert_int_equal(momento_result_outcome(r), MOMENTO_OUTCOME_SUCCESS);
    momento_result_free(r);
    check_fetch("l5", 0, MOMENTO_END, "2,3,4,5,6,7");
    assert_int_equal(momento_list_retain_sync(tu_fx.client, "c", MOMENTO_STR("l5"), -3, MOMENTO_END,
                                              NULL, NULL, NULL),
                     MOMENTO_OK);
    check_fetch("l5", 0, MOMENTO_END, "5,6,7");
    assert_int_equal(
        momento_list_retain_sync(tu_fx.client, "c", MOMENTO_STR("l5"), 1, -1, NULL, NULL, NULL),
        MOMENTO_OK);
    check_fetch("l5", 0, MOMENTO_END, "6");
    assert_int_equal(
        momento_list_retain_sync(tu_fx.client, "c", MOMENTO_STR("no-list"), 0, 2, NULL, NULL, &r),
        MOMENTO_OK);
    assert_int_equal(momento_result_outcome(r), MOMENTO_OUTCOME_SUCCESS);
    momento_result_free(r);
}

/* CollectionTtl reaches the list: a write creates it with its TTL, and a
 * later write changes that only when it asks to refresh. */
static void test_list_ttl(void **state)
{
    (void)state;
    momento_result *r;
    momento_collection_ttl minute = {60000, 1};
    momento_collection_ttl hour_keep = {3600000, 0};
    assert_int_equal(momento_list_push_back_sync(tu_fx.client, "c", MOMENTO_STR("l6"),
                                                 MOMENTO_STR("v"), 0, &minute, NULL, NULL),
                     MOMENTO_OK);
    assert_int_equal(momento_list_push_back_sync(tu_fx.client, "c", MOMENTO_STR("l6"),
                                                 MOMENTO_STR("w"), 0, &hour_keep, NULL, NULL),
                     MOMENTO_OK);
    assert_int_equal(momento_item_get_ttl_sync(tu_fx.client, "c", MOMENTO_STR("l6"), NULL, &r),
                     MOMENTO_OK);
    assert_int_equal(momento_result_outcome(r), MOMENTO_OUTCOME_HIT);
    assert_true(momento_result_ttl_ms(r) <= 60000);
    assert_true(momento_result_ttl_ms(r) > 30000);
    momento_result_free(r);
    momento_collection_ttl hour = {3600000, 1};
    assert_int_equal(momento_list_retain_sync(tu_fx.client, "c", MOMENTO_STR("l6"), 0, MOMENTO_END,
                                              &hour, NULL, NULL),
                     MOMENTO_OK);
    assert_int_equal(momento_item_get_ttl_sync(tu_fx.client, "c", MOMENTO_STR("l6"), NULL, &r),
                     MOMENTO_OK);
    assert_true(momento_result_ttl_ms(r) > 60000);
    momento_result_free(r);
}

static void put_scores(const char *set, const char *const *values, const double *scores, size_t n)
{
    size_t lens[16];
    for (size_t i = 0; i < n; i++)
        lens[i] = strlen(values[i]);
    momento_result *r;
    tu_expect(momento_sorted_set_put_elements_sync(tu_fx.client, "c", MOMENTO_STR(set),
                                                   (const void *const *)values, lens, scores, n,
                                                   NULL, NULL, &r),
              r, MOMENTO_OUTCOME_SUCCESS);
}

static void test_sorted_set_put_fetch(void **state)
{
    (void)state;
    momento_result *r;
    /* No set: every read misses. */
    tu_expect(momento_sorted_set_fetch_by_rank_sync(tu_fx.client, "c", MOMENTO_STR("z1"), 0,
                                                    MOMENTO_END, MOMENTO_ASCENDING, NULL, &r),
              r, MOMENTO_OUTCOME_MISS);
    tu_expect(momento_sorted_set_fetch_by_score_sync(tu_fx.client, "c", MOMENTO_STR("z1"),
                                                     -INFINITY, INFINITY, MOMENTO_ASCENDING, 0, 0,
                                                     NULL, &r),
              r, MOMENTO_OUTCOME_MISS);
    tu_expect(momento_sorted_set_length_sync(tu_fx.client, "c", MOMENTO_STR("z1"), NULL, &r), r,
              MOMENTO_OUTCOME_MISS);
    tu_expect(momento_sorted_set_length_by_score_sync(tu_fx.client, "c", MOMENTO_STR("z1"),
                                                      -INFINITY, INFINITY, NULL, &r),
              r, MOMENTO_OUTCOME_MISS);

    const char *v[] = {"a", "b", "c", "d"};
    double s[] = {3, 1, 2, -1.5};
    put_scores("z1", v, s, 4);
    /* A put replaces an element's score. */
    tu_expect(momento_sorted_set_put_element_sync(tu_fx.client, "c", MOMENTO_STR("z1"),
                                                  MOMENTO_STR("b"), 5, NULL, NULL, &r),
              r, MOMENTO_OUTCOME_SUCCESS);

    check_rank_fetch("z1", 0, MOMENTO_END, MOMENTO_ASCENDING, "d:-1.5,c:2,a:3,b:5");
    check_rank_fetch("z1", 0, MOMENTO_END, MOMENTO_DESCENDING, "b:5,a:3,c:2,d:-1.5");
    check_rank_fetch("z1", 1, 3, MOMENTO_ASCENDING, "c:2,a:3");
    check_rank_fetch("z1", -2, MOMENTO_END, MOMENTO_DESCENDING, "c:2,d:-1.5");
    check_rank_fetch("z1", 0, -3, MOMENTO_ASCENDING, "d:-1.5");
    check_rank_fetch("z1", 3, 10, MOMENTO_ASCENDING, "b:5");
    check_rank_fetch("z1", 6, 10, MOMENTO_ASCENDING, "");

    assert_int_equal(momento_sorted_set_length_sync(tu_fx.client, "c", MOMENTO_STR("z1"), NULL, &r),
                     MOMENTO_OK);
    assert_int_equal(momento_result_outcome(r), MOMENTO_OUTCOME_HIT);
    assert_int_equal(momento_result_int(r), 4);
    momento_result_free(r);
    assert_int_equal(momento_item_get_type_sync(tu_fx.client, "c", MOMENTO_STR("z1"), NULL, &r),
                     MOMENTO_OK);
    assert_int_equal(momento_result_item_type(r), MOMENTO_ITEM_TYPE_SORTED_SET);
    momento_result_free(r);

    /* Scores survive an owned copy. */
    assert_int_equal(momento_sorted_set_fetch_by_rank_sync(tu_fx.client, "c", MOMENTO_STR("z1"), 0,
                                                           MOMENTO_END, MOMENTO_DESCENDING, NULL,
                                                           &r),
                     MOMENTO_OK);
    momento_result *copy;
    assert_int_equal(momento_result_dup(r, &copy), MOMENTO_OK);
    momento_result_free(r);
    check_items(copy, "b:5,a:3,c:2,d:-1.5", 1);
    momento_result_free(copy);
}

static void test_sorted_set_by_score(void **state)
{
    (void)state;
    momento_result *r;
    const char *v[] = {"e1", "e2", "e3", "e4", "e5"};
    double s[] = {1, 2, 3, 4, 5};
    put_scores("z2", v, s, 5);

    /* Both bounds inclusive. */
    check_score_fetch("z2", 2, 4, MOMENTO_ASCENDING, 0, 0, "e2:2,e3:3,e4:4");
    check_score_fetch("z2", 2, 4, MOMENTO_DESCENDING, 0, 0, "e4:4,e3:3,e2:2");
    check_score_fetch("z2", 3, 3, MOMENTO_ASCENDING, 0, 0, "e3:3");
    check_score_fetch("z2", -INFINITY, 2.5, MOMENTO_ASCENDING, 0, 0, "e1:1,e2:2");
    check_score_fetch("z2", 3.5, INFINITY, MOMENTO_ASCENDING, 0, 0, "e4:4,e5:5");
    check_score_fetch("z2", -INFINITY, INFINITY, MOMENTO_ASCENDING, 0, 0,
                      "e1:1,e2:2,e3:3,e4:4,e5:5");
    /* Paging: offset skips, count limits, in the requested order. */
    check_score_fetch("z2", -INFINITY, INFINITY, MOMENTO_DESCENDING, 1, 2, "e4:4,e3:3");
    check_score_fetch("z2", -INFINITY, INFINITY, MOMENTO_ASCENDING, 3, 0, "e4:4,e5:5");
    check_score_fetch("z2", 2, INFINITY, MOMENTO_ASCENDING, 0, 1, "e2:2");
    check_score_fetch("z2", -INFINITY, INFINITY, MOMENTO_ASCENDING, 0, UINT32_MAX,
                      "e1:1,e2:2,e3:3,e4:4,e5:5");
    /* Nothing in range, or offset past the end: a HIT with no items. */
    check_score_fetch("z2", 10, 20, MOMENTO_ASCENDING, 0, 0, "");
    check_score_fetch("z2", -INFINITY, INFINITY, MOMENTO_ASCENDING, 5, 0, "");

    struct {
        double min, max;
        int64_t want;
    } lens[] = {{2, 4, 3},          {-INFINITY, INFINITY, 5},
                {4.5, INFINITY, 1}, {-INFINITY, 1, 1},
                {6, 7, 0},          {3, 3, 1}};
    for (size_t i = 0; i < N(lens); i++) {
        assert_int_equal(momento_sorted_set_length_by_score_sync(tu_fx.client, "c",
                                                                 MOMENTO_STR("z2"), lens[i].min,
                                                                 lens[i].max, NULL, &r),
                         MOMENTO_OK);
        assert_int_equal(momento_result_outcome(r), MOMENTO_OUTCOME_HIT);
        if (momento_result_int(r) != lens[i].want)
            fail_msg("length in [%g, %g]: %lld, want %lld", lens[i].min, lens[i].max,
                     (long long)momento_result_int(r), (long long)lens[i].want);
        momento_result_free(r);
    }
}

static void check_range_fetch(const char *set, const momento_score_range *range,
                              momento_order order, const char *want)
{
    momento_result *r;
    assert_int_equal(momento_sorted_set_fetch_by_score_range_sync(
                         tu_fx.client, "c", MOMENTO_STR(set), range, order, 0, 0, NULL, &r),
                     MOMENTO_OK);
    check_items(r, want, 1);
    momento_result_free(r);
}

static void check_range_length(const char *set, const momento_score_range *range, int64_t want)
{
    momento_result *r;
    assert_int_equal(momento_sorted_set_length_by_score_range_sync(
                         tu_fx.client, "c", MOMENTO_STR(set), range, NULL, &r),
                     MOMENTO_OK);
    assert_int_equal(momento_result_outcome(r), MOMENTO_OUTCOME_HIT);
    assert_int_equal(momento_result_int(r), want);
    momento_result_free(r);
}

#define INC(x) {(x), MOMENTO_INCLUSIVE}
#define EXC(x) {(x), MOMENTO_EXCLUSIVE}

/* Each end inclusive, exclusive or open, for fetch and length alike; an
 * exclusive infinity leaves out the elements scored at it. */
static void test_sorted_set_exclusive_bounds(void **state)
{
    (void)state;
    const char *v[] = {"lo", "e1", "e2", "e3", "e4", "hi"};
    double s[] = {-INFINITY, 1, 2, 3, 4, INFINITY};
    put_scores("zx", v, s, 6);

    const struct {
        const momento_score_range *range; /* NULL: every score */
        momento_order order;
        const char *want;
    } fetches[] = {
        {MOMENTO_SCORE_RANGE(.min = EXC(1), .max = EXC(4)), MOMENTO_ASCENDING, "e2:2,e3:3"},
        {MOMENTO_SCORE_RANGE(.min = EXC(1), .max = INC(4)), MOMENTO_DESCENDING, "e4:4,e3:3,e2:2"},
        {MOMENTO_SCORE_RANGE(.min = INC(1), .max = EXC(3)), MOMENTO_ASCENDING, "e1:1,e2:2"},
        {MOMENTO_SCORE_RANGE(.min = EXC(3)), MOMENTO_ASCENDING, "e4:4,hi:inf"},
        {MOMENTO_SCORE_RANGE(.max = EXC(2)), MOMENTO_ASCENDING, "lo:-inf,e1:1"},
        {NULL, MOMENTO_ASCENDING, "lo:-inf,e1:1,e2:2,e3:3,e4:4,hi:inf"},
        {MOMENTO_SCORE_RANGE(.min = EXC(-INFINITY), .max = EXC(INFINITY)), MOMENTO_ASCENDING,
         "e1:1,e2:2,e3:3,e4:4"},
        {MOMENTO_SCORE_RANGE(.min = INC(-INFINITY), .max = INC(INFINITY)), MOMENTO_ASCENDING,
         "lo:-inf,e1:1,e2:2,e3:3,e4:4,hi:inf"},
        /* Equal bounds: one element when both are inclusive, none otherwise. */
        {MOMENTO_SCORE_RANGE(.min = INC(2), .max = INC(2)), MOMENTO_ASCENDING, "e2:2"},
        {MOMENTO_SCORE_RANGE(.min = EXC(2), .max = INC(2)), MOMENTO_ASCENDING, ""},
        {MOMENTO_SCORE_RANGE(.min = INC(2), .max = EXC(2)), MOMENTO_ASCENDING, ""},
    };
    for (size_t i = 0; i < N(fetches); i++)
        check_range_fetch("zx", fetches[i].range, fetches[i].order, fetches[i].want);
    /* Paging counts within the exclusive range. */
    momento_result *r;
    assert_int_equal(momento_sorted_set_fetch_by_score_range_sync(
                         tu_fx.client, "c", MOMENTO_STR("zx"),
                         MOMENTO_SCORE_RANGE(.min = EXC(1), .max = EXC(INFINITY)),
                         MOMENTO_DESCENDING, 1, 2, NULL, &r),
                     MOMENTO_OK);
    check_items(r, "e3:3,e2:2", 1);
    momento_result_free(r);

    check_range_length("zx", MOMENTO_SCORE_RANGE(.min = EXC(1), .max = EXC(4)), 2);
    check_range_length("zx", MOMENTO_SCORE_RANGE(.min = EXC(1), .max = INC(4)), 3);
    check_range_length("zx", MOMENTO_SCORE_RANGE(.min = INC(1), .max = EXC(4)), 3);
    check_range_length("zx", MOMENTO_SCORE_RANGE(.min = EXC(4)), 1);
    check_range_length("zx", MOMENTO_SCORE_RANGE(.max = EXC(1)), 1);
    check_range_length("zx", NULL, 6);
    check_range_length("zx", MOMENTO_SCORE_RANGE(.min = EXC(-INFINITY), .max = EXC(INFINITY)),
                       4);
    check_range_length("zx", MOMENTO_SCORE_RANGE(.min = EXC(3), .max = EXC(3)), 0);

    /* An open end ignores its score, NaN included. */
    check_range_length("zx", MOMENTO_SCORE_RANGE(.min = {NAN, MOMENTO_UNBOUNDED}, .max = EXC(4)),
                       4);
    /* A missing set is a MISS whatever the range. */
    assert_int_equal(
        momento_sorted_set_length_by_score_range_sync(tu_fx.client, "c", MOMENTO_STR("zx-none"),
                                                      MOMENTO_SCORE_RANGE(.min = EXC(0)), NULL, &r),
        MOMENTO_OK);
    assert_int_equal(momento_result_outcome(r), MOMENTO_OUTCOME_MISS);
    momento_result_free(r);
}

static void check_rank(const char *set, const char *value, momento_order order, int64_t want)
{
    momento_result *r;
    assert_int_equal(momento_sorted_set_get_rank_sync(tu_fx.client, "c", MOMENTO_STR(set),
                                                      MOMENTO_STR(value), order, NULL, &r),
                     MOMENTO_OK);
    check_int_or_miss(r, want);
}

static void check_one_score(const char *set, const char *value, int hit, double want)
{
    momento_result *r;
    assert_int_equal(momento_sorted_set_get_score_sync(tu_fx.client, "c", MOMENTO_STR(set),
                                                       MOMENTO_STR(value), NULL, &r),
                     MOMENTO_OK);
    assert_int_equal(momento_result_outcome(r), hit ? MOMENTO_OUTCOME_HIT : MOMENTO_OUTCOME_MISS);
    assert_int_equal(momento_result_item_count(r), 0);
    check_score(momento_result_score(r), hit ? want : 0.0);
    momento_result_free(r);
}

static void test_sorted_set_scores_ranks(void **state)
{
    (void)state;
    momento_result *r;
    check_one_score("z3", "e1", 0, 0);
    check_rank("z3", "e1", MOMENTO_ASCENDING, -1);

    const char *v[] = {"e1", "e2", "e3", "e4", "e5"};
    double s[] = {1, 2, 3, 4, 5};
    put_scores("z3", v, s, 5);
    check_one_score("z3", "e3", 1, 3);
    check_one_score("z3", "nope", 0, 0);
    const void *ask[] = {"e5", "nope", "e1"};
    size_t ask_lens[] = {2, 4, 2};
    assert_int_equal(momento_sorted_set_get_scores_sync(tu_fx.client, "c", MOMENTO_STR("z3"), ask,
                                                        ask_lens, 3, NULL, &r),
                     MOMENTO_OK);
    assert_int_equal(momento_result_outcome(r), MOMENTO_OUTCOME_HIT);
    assert_int_equal(momento_result_item_count(r), 3);
    assert_int_equal(momento_result_outcome(momento_result_item(r, 0)), MOMENTO_OUTCOME_HIT);
    check_score(momento_result_score(momento_result_item(r, 0)), 5);
    assert_int_equal(momento_result_outcome(momento_result_item(r, 1)), MOMENTO_OUTCOME_MISS);
    assert_int_equal(momento_result_outcome(momento_result_item(r, 2)), MOMENTO_OUTCOME_HIT);
    check_score(momento_result_score(momento_result_item(r, 2)), 1);
    momento_result_free(r);

    check_rank("z3", "e1", MOMENTO_ASCENDING, 0);
    check_rank("z3", "e1", MOMENTO_DESCENDING, 4);
    check_rank("z3", "e4", MOMENTO_ASCENDING, 3);
    check_rank("z3", "e4", MOMENTO_DESCENDING, 1);
    check_rank("z3", "nope", MOMENTO_ASCENDING, -1);

    /* Increments answer the new score and move the element. */
    assert_int_equal(momento_sorted_set_increment_score_sync(tu_fx.client, "c", MOMENTO_STR("z3"),
                                                             MOMENTO_STR("e1"), 10.5, NULL, NULL,
                                                             &r),
                     MOMENTO_OK);
    assert_int_equal(momento_result_outcome(r), MOMENTO_OUTCOME_SUCCESS);
    check_score(momento_result_score(r), 11.5);
    momento_result_free(r);
    check_rank("z3", "e1", MOMENTO_DESCENDING, 0);
    check_one_score("z3", "e1", 1, 11.5);
    /* A missing element, or set, starts from 0. */
    assert_int_equal(momento_sorted_set_increment_score_sync(tu_fx.client, "c", MOMENTO_STR("z3"),
                                                             MOMENTO_STR("new"), -2, NULL, NULL,
                                                             &r),
                     MOMENTO_OK);
    check_score(momento_result_score(r), -2);
    momento_result_free(r);
    check_rank("z3", "new", MOMENTO_ASCENDING, 0);
    assert_int_equal(momento_sorted_set_increment_score_sync(tu_fx.client, "c", MOMENTO_STR("z4"),
                                                             MOMENTO_STR("x"), 0.25, NULL, NULL,
                                                             &r),
                     MOMENTO_OK);
    check_score(momento_result_score(r), 0.25);
    momento_result_free(r);
    check_rank_fetch("z4", 0, MOMENTO_END, MOMENTO_ASCENDING, "x:0.25");

    /* Removes; missing elements are ignored; the last one deletes the set. */
    tu_expect(momento_sorted_set_remove_element_sync(tu_fx.client, "c", MOMENTO_STR("z3"),
                                                     MOMENTO_STR("e1"), NULL, &r),
              r, MOMENTO_OUTCOME_SUCCESS);
    const void *rm[] = {"e2", "nope", "e3"};
    size_t rm_lens[] = {2, 4, 2};
    assert_int_equal(momento_sorted_set_remove_elements_sync(tu_fx.client, "c", MOMENTO_STR("z3"),
                                                             rm, rm_lens, 3, NULL, NULL),
                     MOMENTO_OK);
    check_rank_fetch("z3", 0, MOMENTO_END, MOMENTO_ASCENDING, "new:-2,e4:4,e5:5");
    const void *rest[] = {"new", "e4", "e5"};
    size_t rest_lens[] = {3, 2, 2};
    assert_int_equal(momento_sorted_set_remove_elements_sync(tu_fx.client, "c", MOMENTO_STR("z3"),
                                                             rest, rest_lens, 3, NULL, NULL),
                     MOMENTO_OK);
    tu_expect(momento_sorted_set_length_sync(tu_fx.client, "c", MOMENTO_STR("z3"), NULL, &r), r,
              MOMENTO_OUTCOME_MISS);
    check_one_score("z3", "e4", 0, 0);
}

/* A list or sorted-set operation on a key of another type. */
/* An element's score in `name`, or NAN when it is not there. */
static double score_of(const char *name, const char *element)
{
    momento_result *r = NULL;
    double score = NAN;
    assert_int_equal(momento_sorted_set_get_score_sync(tu_fx.client, "c", name, strlen(name),
                                                       element, strlen(element), NULL, &r),
                     MOMENTO_OK);
    if (momento_result_outcome(r) == MOMENTO_OUTCOME_HIT)
        score = momento_result_score(r);
    momento_result_free(r);
    return score;
}

/* SortedSetUnionStore from the library (the JS and Rust SDKs have it):
 * weights, the three aggregates, a missing source, refusals. */
static void test_sorted_set_union_store(void **state)
{
    (void)state;
    const void *av[] = {"x", "y"}, *bv[] = {"y", "z"};
    size_t lens[] = {1, 1};
    double as[] = {1, 2}, bs[] = {10, 5};
    assert_int_equal(momento_sorted_set_put_elements_sync(tu_fx.client, "c", MOMENTO_STR("u-a"), av,
                                                          lens, as, 2, NULL, NULL, NULL),
                     MOMENTO_OK);
    assert_int_equal(momento_sorted_set_put_elements_sync(tu_fx.client, "c", MOMENTO_STR("u-b"), bv,
                                                          lens, bs, 2, NULL, NULL, NULL),
                     MOMENTO_OK);
    momento_sorted_set_source src[] = {{"u-a", 3, 1.0f}, {"u-b", 3, 2.0f}, {"u-none", 6, 9.0f}};
    momento_result *r = NULL;
    assert_int_equal(momento_sorted_set_union_store_sync(tu_fx.client, "c", MOMENTO_STR("u-sum"),
                                                         src, 3, MOMENTO_AGGREGATE_SUM, 0, NULL,
                                                         &r),
                     MOMENTO_OK);
    assert_int_equal(momento_result_outcome(r), MOMENTO_OUTCOME_SUCCESS);
    assert_int_equal(momento_result_int(r), 3);
    momento_result_free(r);
    assert_true(score_of("u-sum", "x") == 1.0);
    assert_true(score_of("u-sum", "y") == 2.0 + 20.0);
    assert_true(score_of("u-sum", "z") == 10.0);
    assert_int_equal(momento_sorted_set_union_store_sync(tu_fx.client, "c", MOMENTO_STR("u-min"),
                                                         src, 2, MOMENTO_AGGREGATE_MIN, 0, NULL,
                                                         NULL),
                     MOMENTO_OK);
    assert_true(score_of("u-min", "y") == 2.0);
    assert_int_equal(momento_sorted_set_union_store_sync(tu_fx.client, "c", MOMENTO_STR("u-max"),
                                                         src, 2, MOMENTO_AGGREGATE_MAX, 0, NULL,
                                                         NULL),
                     MOMENTO_OK);
    assert_true(score_of("u-max", "y") == 20.0);

    /* Refused before sending, with a reason. */
    assert_int_equal(momento_sorted_set_union_store(tu_fx.client, "c", MOMENTO_STR("u"), NULL, 1,
                                                    MOMENTO_AGGREGATE_SUM, 0, NULL, tu_count_cb,
                                                    NULL),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_sorted_set_union_store(tu_fx.client, "c", MOMENTO_STR("u"), src, 0,
                                                    MOMENTO_AGGREGATE_SUM, 0, NULL, tu_count_cb,
                                                    NULL),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(momento_refusal_reason(), "MOMENTO_MAX_UNION_SOURCES"));
    assert_int_equal(momento_sorted_set_union_store(tu_fx.client, "c", MOMENTO_STR("u"), src, 2,
                                                    (momento_aggregate)3, 0, NULL, tu_count_cb,
                                                    NULL),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    momento_sorted_set_source bad[] = {{"u-a", 3, NAN}};
    assert_int_equal(momento_sorted_set_union_store(tu_fx.client, "c", MOMENTO_STR("u"), bad, 1,
                                                    MOMENTO_AGGREGATE_SUM, 0, NULL, tu_count_cb,
                                                    NULL),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(momento_refusal_reason(), "source 0's weight"));
    momento_sorted_set_source empty_name[] = {{"", 0, 1.0f}};
    assert_int_equal(momento_sorted_set_union_store(tu_fx.client, "c", MOMENTO_STR("u"), empty_name,
                                                    1, MOMENTO_AGGREGATE_SUM, 0, NULL, tu_count_cb,
                                                    NULL),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(momento_refusal_reason(), "source 0"));
}

static void test_type_mismatch(void **state)
{
    (void)state;
    momento_result *r;
    assert_int_equal(
        momento_set_sync(tu_fx.client, "c", MOMENTO_STR("scalar"), MOMENTO_STR("v"), 0, NULL, NULL),
        MOMENTO_OK);
    push_back("a-list", "x", 0, 1);
    assert_int_equal(momento_sorted_set_put_element_sync(tu_fx.client, "c", MOMENTO_STR("a-zset"),
                                                         MOMENTO_STR("x"), 1, NULL, NULL, NULL),
                     MOMENTO_OK);

    assert_int_equal(momento_list_push_back_sync(tu_fx.client, "c", MOMENTO_STR("scalar"),
                                                 MOMENTO_STR("v"), 0, NULL, NULL, &r),
                     MOMENTO_ERR_FAILED_PRECONDITION);
    assert_int_equal(momento_result_outcome(r), MOMENTO_OUTCOME_ERROR);
    assert_int_equal(momento_result_grpc_status(r), 9);
    momento_result_free(r);
    assert_int_equal(momento_list_fetch_sync(tu_fx.client, "c", MOMENTO_STR("scalar"), 0,
                                             MOMENTO_END, NULL, NULL),
                     MOMENTO_ERR_FAILED_PRECONDITION);
    assert_int_equal(momento_list_length_sync(tu_fx.client, "c", MOMENTO_STR("a-zset"), NULL, NULL),
                     MOMENTO_ERR_FAILED_PRECONDITION);
    assert_int_equal(
        momento_list_pop_front_sync(tu_fx.client, "c", MOMENTO_STR("a-zset"), NULL, NULL),
        MOMENTO_ERR_FAILED_PRECONDITION);
    assert_int_equal(momento_sorted_set_put_element_sync(tu_fx.client, "c", MOMENTO_STR("a-list"),
                                                         MOMENTO_STR("y"), 2, NULL, NULL, NULL),
                     MOMENTO_ERR_FAILED_PRECONDITION);
    assert_int_equal(momento_sorted_set_fetch_by_rank_sync(tu_fx.client, "c", MOMENTO_STR("scalar"),
                                                           0, MOMENTO_END, MOMENTO_ASCENDING, NULL,
                                                           NULL),
                     MOMENTO_ERR_FAILED_PRECONDITION);
    assert_int_equal(momento_sorted_set_get_score_sync(tu_fx.client, "c", MOMENTO_STR("a-list"),
                                                       MOMENTO_STR("x"), NULL, NULL),
                     MOMENTO_ERR_FAILED_PRECONDITION);
    assert_int_equal(momento_get_sync(tu_fx.client, "c", MOMENTO_STR("a-list"), NULL, NULL),
                     MOMENTO_ERR_FAILED_PRECONDITION);
    /* The refused writes changed nothing. */
    check_fetch("a-list", 0, MOMENTO_END, "x");
    check_rank_fetch("a-zset", 0, MOMENTO_END, MOMENTO_ASCENDING, "x:1");
}

/* The async forms: one callback each, with the result as the sync form's. */
static momento_result *await(tu_kept *g, int submitted)
{
    assert_int_equal(submitted, MOMENTO_OK);
    assert_int_equal(tu_counter_wait(&g->k, 1, 10000), 1);
    momento_result *r = g->copy;
    assert_non_null(r);
    g->copy = NULL;
    tu_counter_destroy(&g->k);
    tu_counter_init(&g->k);
    return r;
}

static void test_async(void **state)
{
    (void)state;
    tu_kept g = {0};
    tu_counter_init(&g.k);
    momento_result *r;
    r = await(&g, momento_list_push_back(tu_fx.client, "c", MOMENTO_STR("l7"), MOMENTO_STR("one"),
                                         0, NULL, NULL, tu_keep_cb, &g));
    assert_int_equal(momento_result_int(r), 1);
    momento_result_free(r);
    const void *v[] = {"two", "three"};
    size_t l[] = {3, 5};
    r = await(&g, momento_list_concatenate_back(tu_fx.client, "c", MOMENTO_STR("l7"), v, l, 2, 0,
                                                NULL, NULL, tu_keep_cb, &g));
    assert_int_equal(momento_result_int(r), 3);
    momento_result_free(r);
    r = await(&g, momento_list_fetch(tu_fx.client, "c", MOMENTO_STR("l7"), 1, MOMENTO_END, NULL,
                                     tu_keep_cb, &g));
    check_items(r, "two,three", 0);
    momento_result_free(r);
    r = await(&g, momento_list_pop_back(tu_fx.client, "c", MOMENTO_STR("l7"), NULL, tu_keep_cb, &g));
    size_t len;
    assert_memory_equal(momento_result_value(r, &len), "three", 5);
    momento_result_free(r);
    r = await(&g, momento_list_length(tu_fx.client, "c", MOMENTO_STR("l7"), NULL, tu_keep_cb, &g));
    assert_int_equal(momento_result_int(r), 2);
    momento_result_free(r);

    r = await(&g, momento_sorted_set_put_element(tu_fx.client, "c", MOMENTO_STR("z5"),
                                                 MOMENTO_STR("m"), 7.25, NULL, NULL, tu_keep_cb, &g));
    assert_int_equal(momento_result_outcome(r), MOMENTO_OUTCOME_SUCCESS);
    momento_result_free(r);
    r = await(&g, momento_sorted_set_get_score(tu_fx.client, "c", MOMENTO_STR("z5"),
                                               MOMENTO_STR("m"), NULL, tu_keep_cb, &g));
    assert_int_equal(momento_result_outcome(r), MOMENTO_OUTCOME_HIT);
    check_score(momento_result_score(r), 7.25);
    momento_result_free(r);
    r = await(&g, momento_sorted_set_fetch_by_score(tu_fx.client, "c", MOMENTO_STR("z5"), 7, 8,
                                                    MOMENTO_ASCENDING, 0, 0, NULL, tu_keep_cb, &g));
    check_items(r, "m:7.25", 1);
    momento_result_free(r);
    r = await(&g,
              momento_sorted_set_get_rank(tu_fx.client, "c", MOMENTO_STR("z5"), MOMENTO_STR("m"),
                                          MOMENTO_DESCENDING, NULL, tu_keep_cb, &g));
    assert_int_equal(momento_result_outcome(r), MOMENTO_OUTCOME_HIT);
    assert_int_equal(momento_result_int(r), 0);
    momento_result_free(r);
    r = await(&g,
              momento_sorted_set_increment_score(tu_fx.client, "c", MOMENTO_STR("z5"),
                                                 MOMENTO_STR("m"), -0.25, NULL, NULL, tu_keep_cb, &g));
    check_score(momento_result_score(r), 7);
    momento_result_free(r);
    r = await(&g, momento_sorted_set_length_by_score(tu_fx.client, "c", MOMENTO_STR("z5"), 7, 7,
                                                     NULL, tu_keep_cb, &g));
    assert_int_equal(momento_result_int(r), 1);
    momento_result_free(r);
    tu_counter_destroy(&g.k);
}

#define REFUSED(call) assert_int_equal((call), MOMENTO_ERR_INVALID_ARGUMENT)

/* Refused at submit: nothing sent, no callback. */
static void test_refusals(void **state)
{
    (void)state;
    const void *one[] = {"x"};
    size_t one_len[] = {1};
    const void *bad[] = {NULL};
    size_t bad_len[] = {3};
    double score[] = {1};
    double nan_score[] = {NAN};
    momento_collection_ttl huge = {MOMENTO_MAX_TTL_MS + 1, 1};
    uint64_t before = momento_local_rpc_count(tu_fx.server, NULL, -1);
    void *cb_ud = NULL;
#define CB NULL, tu_never_cb, cb_ud

    /* Slices that are empty whatever the length. */
    int32_t empty[][2] = {{0, 0},
                          {3, 3},
                          {5, 2},
                          {4, 0},
                          {-1, -1},
                          {-1, -3},
                          {-2, -5},
                          {MOMENTO_END, MOMENTO_END},
                          {INT32_MIN, INT32_MIN}};
    for (size_t i = 0; i < N(empty); i++) {
        REFUSED(
            momento_list_fetch(tu_fx.client, "c", MOMENTO_STR("l"), empty[i][0], empty[i][1], CB));
        REFUSED(momento_list_retain(tu_fx.client, "c", MOMENTO_STR("l"), empty[i][0], empty[i][1],
                                    NULL, CB));
        REFUSED(momento_sorted_set_fetch_by_rank(tu_fx.client, "c", MOMENTO_STR("z"), empty[i][0],
                                                 empty[i][1], MOMENTO_ASCENDING, CB));
    }
    /* Names and values. */
    REFUSED(momento_list_push_back(tu_fx.client, "c", NULL, 0, MOMENTO_STR("v"), 0, NULL, CB));
    REFUSED(momento_list_push_front(tu_fx.client, "c", "", 0, MOMENTO_STR("v"), 0, NULL, CB));
    REFUSED(momento_list_push_front(tu_fx.client, "c", MOMENTO_STR("l"), NULL, 1, 0, NULL, CB));
    REFUSED(momento_list_push_back(tu_fx.client, "c", MOMENTO_STR("l"), MOMENTO_STR("v"), 0, &huge,
                                   CB));
    REFUSED(momento_list_push_back(tu_fx.client, "c\n", MOMENTO_STR("l"), MOMENTO_STR("v"), 0, NULL,
                                   CB));
    REFUSED(momento_list_push_back(tu_fx.client, "c", MOMENTO_STR("l"), MOMENTO_STR("v"), 0, NULL,
                                   NULL, NULL, NULL));
    REFUSED(momento_list_remove_value(tu_fx.client, "c", MOMENTO_STR("l"), NULL, 2, CB));
    REFUSED(momento_list_length(tu_fx.client, "c", NULL, 3, CB));
    REFUSED(momento_list_pop_front(tu_fx.client, "c", "", 0, CB));
    REFUSED(momento_list_pop_back(tu_fx.client, NULL, MOMENTO_STR("l"), CB));
    /* Erase: both arrays with n >= 1; neither with n == 0 (all). */
    uint32_t begin[] = {0}, count[] = {1};
    REFUSED(momento_list_erase(tu_fx.client, "c", MOMENTO_STR("l"), NULL, NULL, 1, CB));
    REFUSED(momento_list_erase(tu_fx.client, "c", MOMENTO_STR("l"), NULL, count, 1, CB));
    REFUSED(momento_list_erase(tu_fx.client, "c", MOMENTO_STR("l"), begin, NULL, 1, CB));
    REFUSED(momento_list_erase(tu_fx.client, "c", MOMENTO_STR("l"), begin, count, 0, CB));
    REFUSED(momento_list_erase(tu_fx.client, "c", MOMENTO_STR("l"), NULL, count, 0, CB));
    REFUSED(momento_list_erase(tu_fx.client, "c", "", 0, NULL, NULL, 0, CB));
    REFUSED(
        momento_list_erase(tu_fx.client, "c", MOMENTO_STR("l"), begin, count, SIZE_MAX / 2, CB));
    REFUSED(
        momento_list_erase(tu_fx.client, "c", MOMENTO_STR("l"), NULL, NULL, 0, NULL, NULL, NULL));
    /* Arrays: NULL, n == 0, a NULL element with a length. */
    REFUSED(momento_list_concatenate_back(tu_fx.client, "c", MOMENTO_STR("l"), one, one_len, 0, 0,
                                          NULL, CB));
    REFUSED(momento_list_concatenate_back(tu_fx.client, "c", MOMENTO_STR("l"), NULL, one_len, 1, 0,
                                          NULL, CB));
    REFUSED(momento_list_concatenate_front(tu_fx.client, "c", MOMENTO_STR("l"), one, NULL, 1, 0,
                                           NULL, CB));
    REFUSED(momento_list_concatenate_front(tu_fx.client, "c", MOMENTO_STR("l"), bad, bad_len, 1, 0,
                                           NULL, CB));
    REFUSED(momento_sorted_set_put_elements(tu_fx.client, "c", MOMENTO_STR("z"), one, one_len,
                                            score, 0, NULL, CB));
    REFUSED(momento_sorted_set_put_elements(tu_fx.client, "c", MOMENTO_STR("z"), one, one_len, NULL,
                                            1, NULL, CB));
    REFUSED(momento_sorted_set_put_elements(tu_fx.client, "c", MOMENTO_STR("z"), bad, bad_len,
                                            score, 1, NULL, CB));
    REFUSED(
        momento_sorted_set_get_scores(tu_fx.client, "c", MOMENTO_STR("z"), one, one_len, 0, CB));
    REFUSED(
        momento_sorted_set_get_scores(tu_fx.client, "c", MOMENTO_STR("z"), NULL, one_len, 1, CB));
    REFUSED(momento_sorted_set_remove_elements(tu_fx.client, "c", MOMENTO_STR("z"), one, one_len, 0,
                                               CB));
    REFUSED(
        momento_sorted_set_remove_elements(tu_fx.client, "c", MOMENTO_STR("z"), one, NULL, 1, CB));
    REFUSED(momento_sorted_set_remove_element(tu_fx.client, "c", MOMENTO_STR("z"), NULL, 1, CB));
    REFUSED(momento_sorted_set_get_score(tu_fx.client, "c", MOMENTO_STR("z"), NULL, 1, CB));
    REFUSED(momento_sorted_set_get_score(tu_fx.client, "c", NULL, 0, MOMENTO_STR("x"), CB));
    REFUSED(momento_sorted_set_get_rank(tu_fx.client, "c", MOMENTO_STR("z"), NULL, 4,
                                        MOMENTO_ASCENDING, CB));
    /* NaN, inverted score ranges, unknown orders. */
    REFUSED(momento_sorted_set_put_element(tu_fx.client, "c", MOMENTO_STR("z"), MOMENTO_STR("x"),
                                           NAN, NULL, CB));
    REFUSED(momento_sorted_set_put_elements(tu_fx.client, "c", MOMENTO_STR("z"), one, one_len,
                                            nan_score, 1, NULL, CB));
    /* The reason names the element by its index, as such. */
    assert_string_equal(momento_refusal_reason(), "the score at index 0 of the array is NaN");
    REFUSED(momento_sorted_set_increment_score(tu_fx.client, "c", MOMENTO_STR("z"),
                                               MOMENTO_STR("x"), NAN, NULL, CB));
    REFUSED(momento_sorted_set_increment_score(tu_fx.client, "c", MOMENTO_STR("z"),
                                               MOMENTO_STR("x"), 1, &huge, CB));
    REFUSED(momento_sorted_set_fetch_by_score(tu_fx.client, "c", MOMENTO_STR("z"), NAN, 1,
                                              MOMENTO_ASCENDING, 0, 0, CB));
    REFUSED(momento_sorted_set_fetch_by_score(tu_fx.client, "c", MOMENTO_STR("z"), 0, NAN,
                                              MOMENTO_ASCENDING, 0, 0, CB));
    REFUSED(momento_sorted_set_fetch_by_score(tu_fx.client, "c", MOMENTO_STR("z"), 3, 2,
                                              MOMENTO_ASCENDING, 0, 0, CB));
    REFUSED(momento_sorted_set_fetch_by_score(tu_fx.client, "c", MOMENTO_STR("z"), INFINITY,
                                              -INFINITY, MOMENTO_DESCENDING, 0, 0, CB));
    REFUSED(momento_sorted_set_fetch_by_score(tu_fx.client, "c", MOMENTO_STR("z"), 0, 1,
                                              (momento_order)2, 0, 0, CB));
    REFUSED(momento_sorted_set_length_by_score(tu_fx.client, "c", MOMENTO_STR("z"), NAN, 1, CB));
    REFUSED(momento_sorted_set_length_by_score(tu_fx.client, "c", MOMENTO_STR("z"), 1, NAN, CB));
    REFUSED(momento_sorted_set_length_by_score(tu_fx.client, "c", MOMENTO_STR("z"), 1, 0.5, CB));
    /* The range forms: NaN, reversed, a kind outside the enum. */
    REFUSED(momento_sorted_set_fetch_by_score_range(
        tu_fx.client, "c", MOMENTO_STR("z"), MOMENTO_SCORE_RANGE(.min = {NAN, MOMENTO_EXCLUSIVE}),
        MOMENTO_ASCENDING, 0, 0, CB));
    REFUSED(momento_sorted_set_length_by_score_range(
        tu_fx.client, "c", MOMENTO_STR("z"),
        MOMENTO_SCORE_RANGE(.min = {2, MOMENTO_EXCLUSIVE}, .max = {1, MOMENTO_INCLUSIVE}), CB));
    assert_string_equal(momento_refusal_reason(), "the score range is reversed (min 2 > max 1)");
    REFUSED(momento_sorted_set_length_by_score_range(
        tu_fx.client, "c", MOMENTO_STR("z"), MOMENTO_SCORE_RANGE(.max = {1, (momento_bound_kind)3}),
        CB));
    REFUSED(momento_sorted_set_fetch_by_score_range(tu_fx.client, "c", MOMENTO_STR("z"), NULL,
                                                    (momento_order)2, 0, 0, CB));
    REFUSED(momento_sorted_set_fetch_by_score_range(tu_fx.client, "c", NULL, 1, NULL,
                                                    MOMENTO_ASCENDING, 0, 0, CB));
    REFUSED(momento_sorted_set_fetch_by_rank(tu_fx.client, "c", MOMENTO_STR("z"), 0, MOMENTO_END,
                                             (momento_order)-1, CB));
    REFUSED(momento_sorted_set_get_rank(tu_fx.client, "c", MOMENTO_STR("z"), MOMENTO_STR("x"),
                                        (momento_order)5, CB));
    REFUSED(momento_sorted_set_length(tu_fx.client, "c", "", 0, CB));
    /* Larger than one request can carry, though each value fits. */
    size_t big = 6u * 1024 * 1024;
    char *blob = calloc(1, big);
    assert_non_null(blob);
    const void *two[] = {blob, blob};
    size_t two_lens[] = {big, big};
    REFUSED(momento_list_concatenate_back(tu_fx.client, "c", MOMENTO_STR("l"), two, two_lens, 2, 0,
                                          NULL, CB));
    REFUSED(
        momento_sorted_set_get_scores(tu_fx.client, "c", MOMENTO_STR("z"), two, two_lens, 2, CB));
    free(blob);
    /* The blocking forms refuse the same way, with a result saying why. */
    momento_result *r = (momento_result *)1;
    REFUSED(momento_list_fetch_sync(tu_fx.client, "c", MOMENTO_STR("l"), 2, 1, NULL, &r));
    tu_assert_refusal(&r, MOMENTO_ERR_INVALID_ARGUMENT);
    r = (momento_result *)1;
    REFUSED(momento_sorted_set_length_by_score_sync(tu_fx.client, "c", MOMENTO_STR("z"), 2, 1, NULL,
                                                    &r));
    tu_assert_refusal(&r, MOMENTO_ERR_INVALID_ARGUMENT);
    REFUSED(momento_sorted_set_put_element_sync(tu_fx.client, "c", MOMENTO_STR("z"),
                                                MOMENTO_STR("x"), NAN, NULL, NULL, NULL));
    r = (momento_result *)1;
    REFUSED(momento_list_erase_sync(tu_fx.client, "c", MOMENTO_STR("l"), NULL, NULL, 2, NULL, &r));
    tu_assert_refusal(&r, MOMENTO_ERR_INVALID_ARGUMENT);
#undef CB
    assert_int_equal(momento_local_rpc_count(tu_fx.server, NULL, -1), before);
}

/* The outcome of an erase, and the length it answers when SUCCESS. */
static void erase(const char *list, const uint32_t *begin, const uint32_t *count, size_t n,
                  momento_outcome want, int64_t want_len)
{
    momento_result *r;
    assert_int_equal(
        momento_list_erase_sync(tu_fx.client, "c", MOMENTO_STR(list), begin, count, n, NULL, &r),
        MOMENTO_OK);
    assert_int_equal(momento_result_outcome(r), want);
    if (want == MOMENTO_OUTCOME_SUCCESS)
        assert_int_equal(momento_result_int(r), want_len);
    momento_result_free(r);
}

static void test_list_erase(void **state)
{
    (void)state;
    /* Every range is in the list as it was before the call: applied one
     * after the other, {6, 1} would take "8" once 1 and 2 were gone.
     * Overlaps ({5, 2} and {6, 1}) and a count of 0 are fine. */
    make_digits("e1");
    uint32_t b1[] = {1, 6, 5, 9}, c1[] = {2, 1, 2, 0};
    erase("e1", b1, c1, N(b1), MOMENTO_OUTCOME_SUCCESS, 6);
    check_fetch("e1", 0, MOMENTO_END, "0,3,4,7,8,9");
    /* What lies past the end erases nothing. */
    uint32_t b2[] = {4, 100}, c2[] = {UINT32_MAX, 3};
    erase("e1", b2, c2, N(b2), MOMENTO_OUTCOME_SUCCESS, 4);
    check_fetch("e1", 0, MOMENTO_END, "0,3,4,7");
    /* No arrays: all of it; the emptied list is deleted. */
    erase("e1", NULL, NULL, 0, MOMENTO_OUTCOME_SUCCESS, 0);
    check_list_length("e1", -1);
    momento_result *r;
    assert_int_equal(
        momento_list_fetch_sync(tu_fx.client, "c", MOMENTO_STR("e1"), 0, MOMENTO_END, NULL, &r),
        MOMENTO_OK);
    assert_int_equal(momento_result_outcome(r), MOMENTO_OUTCOME_MISS);
    momento_result_free(r);
    /* Ranges that cover every element delete the list too. */
    push_back("e2", "a", 0, 1);
    push_back("e2", "b", 0, 2);
    uint32_t b3[] = {1, 0}, c3[] = {1, 1};
    erase("e2", b3, c3, N(b3), MOMENTO_OUTCOME_SUCCESS, 0);
    check_list_length("e2", -1);
    /* No list: a MISS, for ranges as for all, and nothing is created. */
    erase("e2", NULL, NULL, 0, MOMENTO_OUTCOME_MISS, 0);
    erase("no-list", b3, c3, N(b3), MOMENTO_OUTCOME_MISS, 0);
    check_list_length("no-list", -1);
    /* A key of another type. */
    assert_int_equal(momento_set_sync(tu_fx.client, "c", MOMENTO_STR("e-scalar"), MOMENTO_STR("v"),
                                      0, NULL, NULL),
                     MOMENTO_OK);
    assert_int_equal(momento_list_erase_sync(tu_fx.client, "c", MOMENTO_STR("e-scalar"), NULL, NULL,
                                             0, NULL, NULL),
                     MOMENTO_ERR_FAILED_PRECONDITION);

    /* The async form: one callback, the same result. */
    make_digits("e3");
    tu_counter k;
    tu_counter_init(&k);
    uint32_t b4[] = {0}, c4[] = {9};
    assert_int_equal(
        momento_list_erase(tu_fx.client, "c", MOMENTO_STR("e3"), b4, c4, 1, NULL, tu_count_cb, &k),
        MOMENTO_OK);
    assert_int_equal(tu_counter_wait(&k, 1, (int)TU_MS(10000)), 1);
    assert_int_equal(k.ok, 1);
    tu_counter_destroy(&k);
    check_fetch("e3", 0, MOMENTO_END, "9");

    /* Not idempotent: an UNAVAILABLE (which an idempotent call retries)
     * ends the call at its first attempt. */
    momento_client *c = tu_client(tu_fx.server, NULL);
    momento__client_add_header(c, "request-id", "list-erase-not-retried");
    momento__client_add_header(c, "return-error", "unavailable");
    momento__client_add_header(c, "error-rpcs", "list-erase");
    momento__client_add_header(c, "error-count", "1");
    make_digits("e4");
    uint64_t before = momento_local_rpc_count(tu_fx.server, "ListErase", -1);
    assert_int_equal(momento_list_erase_sync(c, "c", MOMENTO_STR("e4"), NULL, NULL, 0, NULL, &r),
                     MOMENTO_ERR_SERVER_UNAVAILABLE);
    assert_int_equal(momento_result_attempts(r), 1);
    momento_result_free(r);
    assert_int_equal(momento_local_rpc_count(tu_fx.server, "ListErase", -1), before + 1);
    check_list_length("e4", 10);
    momento_client_free(c);
}

/* A result kept past its callback, for the coalescing tests: every slot
 * of a batch counts into one counter. */
typedef struct slot {
    tu_counter *k;
    momento_result *r;
} slot;

static void slot_cb(const momento_result *r, void *userdata)
{
    slot *s = userdata;
    momento_result *copy = NULL;
    momento_result_dup(r, &copy);
    s->r = copy; /* read only after the counter's lock says it arrived */
    tu_count_cb(r, s->k);
}

/* A client whose calls of `rpcs` (fault names) the server holds for 300
 * ms (scaled), so that the reads issued meanwhile meet them in flight. */
static momento_client *delaying_client(const char *id, const char *rpcs)
{
    /* Patient: the held calls must not reach the client's deadline under a
     * slow wrapper (valgrind scales the hold by 20). */
    momento_client *c = tu_patient_client(tu_fx.server, (uint32_t)TU_MS(20000));
    char ms[32];
    snprintf(ms, sizeof(ms), "%lld", (long long)TU_MS(300));
    momento__client_add_header(c, "request-id", id);
    momento__client_add_header(c, "delay-rpcs", rpcs);
    momento__client_add_header(c, "delay-ms", ms);
    momento__client_add_header(c, "delay-count", "1000");
    return c;
}

static void check_int(const momento_result *r, momento_outcome outcome, int64_t want)
{
    assert_non_null(r);
    assert_int_equal(momento_result_error(r), MOMENTO_OK);
    assert_int_equal(momento_result_outcome(r), outcome);
    assert_int_equal(momento_result_int(r), want);
}

/* Every coalescing list and sorted-set read: identical reads in flight
 * share one RPC, reads that differ in any argument do not, and each
 * caller gets its own callback with the result in its own call's shape.
 * All are submitted behind a closed gate, so every RPC is still in flight
 * when its duplicates come (issue 46: a 300 ms hold was a window). */
static void test_coalesced_reads(void **state)
{
    (void)state;
    const void *abc[] = {"a", "b", "c"};
    size_t ones[] = {1, 1, 1};
    assert_int_equal(momento_list_concatenate_back_sync(tu_fx.client, "c", MOMENTO_STR("cl"), abc,
                                                        ones, 3, 0, NULL, NULL, NULL),
                     MOMENTO_OK);
    const char *zv[] = {"m", "n", "o"};
    double zs[] = {1, 2, 3};
    put_scores("cz", zv, zs, 3);

    momento_client *c = tu_patient_client(tu_fx.server, 20000);
    momento_coalescer *co = tu_coalescer(c);
    static const char *const rpcs[] = {
        "ListFetch",        "ListLength",      "SortedSetFetch",        "SortedSetGetScore",
        "SortedSetGetRank", "SortedSetLength", "SortedSetLengthByScore"};
    /* RPCs each should take: two list fetches (two slices), three sorted-set
     * fetches (two orders by rank, one by score), two score gets (one
     * element, asked for by get_score and get_scores alike, and two). */
    static const uint64_t want_rpcs[] = {2, 1, 3, 2, 1, 1, 1};
    uint64_t before[N(rpcs)];
    for (size_t i = 0; i < N(rpcs); i++)
        before[i] = momento_local_rpc_count(tu_fx.server, rpcs[i], -1);

    tu_counter k;
    tu_counter_init(&k);
    slot sl[25];
    for (size_t i = 0; i < N(sl); i++)
        sl[i] = (slot){&k, NULL};
    const void *one[] = {"n"};
    size_t one_len[] = {1};
    const void *two[] = {"n", "x"};
    size_t two_lens[] = {1, 1};
#define OK(call) assert_int_equal((call), MOMENTO_OK)
#define TO(i) slot_cb, &sl[i]
    tu_gate *g = tu_gate_close(c);
    for (int i = 0; i < 5; i++)
        OK(momento_coalescing_list_fetch(co, "c", MOMENTO_STR("cl"), 0, MOMENTO_END, NULL, TO(i)));
    OK(momento_coalescing_list_fetch(co, "c", MOMENTO_STR("cl"), 1, MOMENTO_END, NULL, TO(5)));
    for (int i = 6; i < 9; i++)
        OK(momento_coalescing_list_length(co, "c", MOMENTO_STR("cl"), NULL, TO(i)));
    for (int i = 9; i < 12; i++)
        OK(momento_coalescing_sorted_set_fetch_by_rank(co, "c", MOMENTO_STR("cz"), 0, MOMENTO_END,
                                                       MOMENTO_ASCENDING, NULL, TO(i)));
    OK(momento_coalescing_sorted_set_fetch_by_rank(co, "c", MOMENTO_STR("cz"), 0, MOMENTO_END,
                                                   MOMENTO_DESCENDING, NULL, TO(12)));
    /* The range form of the same inclusive range sends the same request. */
    OK(momento_coalescing_sorted_set_fetch_by_score(co, "c", MOMENTO_STR("cz"), 2, INFINITY,
                                                    MOMENTO_ASCENDING, 0, 0, NULL, TO(13)));
    OK(momento_coalescing_sorted_set_fetch_by_score_range(
        co, "c", MOMENTO_STR("cz"), MOMENTO_SCORE_RANGE(.min = {2, MOMENTO_INCLUSIVE}),
        MOMENTO_ASCENDING, 0, 0, NULL, TO(14)));
    for (int i = 15; i < 17; i++)
        OK(momento_coalescing_sorted_set_get_score(co, "c", MOMENTO_STR("cz"), MOMENTO_STR("n"),
                                                   NULL, TO(i)));
    OK(momento_coalescing_sorted_set_get_scores(co, "c", MOMENTO_STR("cz"), one, one_len, 1, NULL,
                                                TO(17)));
    OK(momento_coalescing_sorted_set_get_scores(co, "c", MOMENTO_STR("cz"), two, two_lens, 2, NULL,
                                                TO(18)));
    for (int i = 19; i < 21; i++)
        OK(momento_coalescing_sorted_set_get_rank(co, "c", MOMENTO_STR("cz"), MOMENTO_STR("o"),
                                                  MOMENTO_DESCENDING, NULL, TO(i)));
    for (int i = 21; i < 23; i++)
        OK(momento_coalescing_sorted_set_length(co, "c", MOMENTO_STR("cz"), NULL, TO(i)));
    OK(momento_coalescing_sorted_set_length_by_score(co, "c", MOMENTO_STR("cz"), 1.5, 3, NULL,
                                                     TO(23)));
    OK(momento_coalescing_sorted_set_length_by_score_range(
        co, "c", MOMENTO_STR("cz"),
        MOMENTO_SCORE_RANGE(.min = {1.5, MOMENTO_INCLUSIVE}, .max = {3, MOMENTO_INCLUSIVE}), NULL,
        TO(24)));
#undef OK
#undef TO
    momento_coalescer_stats cc = tu_coalescer_stats(co);
    assert_int_equal(cc.read_requests, N(sl));
    uint64_t want_total = 0;
    for (size_t i = 0; i < N(rpcs); i++)
        want_total += want_rpcs[i];
    assert_int_equal(cc.read_coalesced, N(sl) - want_total);
    assert_int_equal(k.total, 0);
    tu_gate_open(g);
    assert_int_equal(tu_counter_wait(&k, N(sl), (int)TU_MS(10000)), N(sl));
    assert_int_equal(k.ok, N(sl));
    tu_counter_destroy(&k);

    for (int i = 0; i < 5; i++)
        check_items(sl[i].r, "a,b,c", 0);
    check_items(sl[5].r, "b,c", 0);
    for (int i = 6; i < 9; i++)
        check_int(sl[i].r, MOMENTO_OUTCOME_HIT, 3);
    for (int i = 9; i < 12; i++)
        check_items(sl[i].r, "m:1,n:2,o:3", 1);
    check_items(sl[12].r, "o:3,n:2,m:1", 1);
    for (int i = 13; i < 15; i++)
        check_items(sl[i].r, "n:2,o:3", 1);
    for (int i = 15; i < 17; i++) { /* one score: the item is the result */
        assert_int_equal(momento_result_outcome(sl[i].r), MOMENTO_OUTCOME_HIT);
        assert_int_equal(momento_result_item_count(sl[i].r), 0);
        check_score(momento_result_score(sl[i].r), 2);
    }
    assert_int_equal(momento_result_outcome(sl[17].r), MOMENTO_OUTCOME_HIT);
    assert_int_equal(momento_result_item_count(sl[17].r), 1);
    check_score(momento_result_score(momento_result_item(sl[17].r, 0)), 2);
    assert_int_equal(momento_result_item_count(sl[18].r), 2);
    check_score(momento_result_score(momento_result_item(sl[18].r, 0)), 2);
    assert_int_equal(momento_result_outcome(momento_result_item(sl[18].r, 1)),
                     MOMENTO_OUTCOME_MISS);
    for (int i = 19; i < 21; i++)
        check_int(sl[i].r, MOMENTO_OUTCOME_HIT, 0);
    for (int i = 21; i < 23; i++)
        check_int(sl[i].r, MOMENTO_OUTCOME_HIT, 3);
    for (int i = 23; i < 25; i++)
        check_int(sl[i].r, MOMENTO_OUTCOME_HIT, 2);
    for (size_t i = 0; i < N(sl); i++)
        momento_result_free(sl[i].r);

    uint64_t total = 0;
    for (size_t i = 0; i < N(rpcs); i++) {
        uint64_t sent = momento_local_rpc_count(tu_fx.server, rpcs[i], -1) - before[i];
        if (sent != want_rpcs[i])
            fail_msg("%s: %llu RPCs, want %llu", rpcs[i], (unsigned long long)sent,
                     (unsigned long long)want_rpcs[i]);
        total += sent;
    }
    cc = tu_coalescer_stats(co);
    assert_int_equal(cc.read_requests, N(sl));
    assert_int_equal(cc.read_coalesced, N(sl) - total);
    momento_coalescer_free(co);
    momento_client_free(c);
}

/* Read-your-writes: a write submitted through the coalescer's client
 * while a coalesced read of its key is in flight closes that read to
 * newcomers, so the next read is a new RPC and sees the write. The server
 * holds the reads and the write alike and answers them in the order they
 * came: the read in flight is answered before the write (so it does not
 * see it, which shows the test can tell), the new read after it. */
typedef int (*write_fn)(momento_client *c, slot *s);
typedef int (*read_fn)(momento_coalescer *co, slot *s);

static void check_write_closes_reads(momento_client *c, momento_coalescer *co, read_fn rd,
                                     write_fn wr, const char *rpc, const char *want_before,
                                     const char *want_after, int scored)
{
    uint64_t before = momento_local_rpc_count(tu_fx.server, rpc, -1);
    tu_counter k;
    tu_counter_init(&k);
    slot first = {&k, NULL}, write = {&k, NULL}, next = {&k, NULL};
    uint64_t parked = momento_local_parked_calls(tu_fx.server);
    assert_int_equal(rd(co, &first), MOMENTO_OK);
    /* The first read is at the server (held, or already answered on a
     * machine slow enough to miss the hold) before the write is sent: the
     * order the test needs, waited for rather than slept for. */
    tu_wait_until(momento_local_parked_calls(tu_fx.server) > parked ||
                      momento_local_rpc_count(tu_fx.server, rpc, -1) > before,
                  10000);
    assert_true(momento_local_parked_calls(tu_fx.server) > parked ||
                momento_local_rpc_count(tu_fx.server, rpc, -1) > before);
    assert_int_equal(wr(c, &write), MOMENTO_OK);
    assert_int_equal(rd(co, &next), MOMENTO_OK);
    assert_int_equal(tu_counter_wait(&k, 3, (int)TU_MS(10000)), 3);
    assert_int_equal(k.ok, 3);
    tu_counter_destroy(&k);
    check_items(first.r, want_before, scored);
    assert_int_equal(momento_result_error(write.r), MOMENTO_OK);
    if (want_after)
        check_items(next.r, want_after, scored);
    else
        assert_int_equal(momento_result_outcome(next.r), MOMENTO_OUTCOME_MISS);
    momento_result_free(first.r);
    momento_result_free(write.r);
    momento_result_free(next.r);
    assert_int_equal(momento_local_rpc_count(tu_fx.server, rpc, -1), before + 2);
}

static int read_list(momento_coalescer *co, slot *s)
{
    return momento_coalescing_list_fetch(co, "c", MOMENTO_STR("ryw"), 0, MOMENTO_END, NULL, slot_cb,
                                         s);
}

static int push_y(momento_client *c, slot *s)
{
    return momento_list_push_back(c, "c", MOMENTO_STR("ryw"), MOMENTO_STR("y"), 0, NULL, NULL,
                                  slot_cb, s);
}

static int erase_all(momento_client *c, slot *s)
{
    return momento_list_erase(c, "c", MOMENTO_STR("ryw"), NULL, NULL, 0, NULL, slot_cb, s);
}

static int read_zset(momento_coalescer *co, slot *s)
{
    return momento_coalescing_sorted_set_fetch_by_rank(co, "c", MOMENTO_STR("zryw"), 0, MOMENTO_END,
                                                       MOMENTO_ASCENDING, NULL, slot_cb, s);
}

static int raise_m(momento_client *c, slot *s)
{
    return momento_sorted_set_increment_score(c, "c", MOMENTO_STR("zryw"), MOMENTO_STR("m"), 10,
                                              NULL, NULL, slot_cb, s);
}

static void test_coalesced_read_your_writes(void **state)
{
    (void)state;
    push_back("ryw", "x", 0, 1);
    const char *zv[] = {"m", "n"};
    double zs[] = {1, 2};
    put_scores("zryw", zv, zs, 2);
    momento_client *c = delaying_client("list-read-your-writes",
                                        "list-fetch list-push-back list-erase sorted-set-fetch "
                                        "sorted-set-increment");
    momento_coalescer *co = tu_coalescer(c);
    check_write_closes_reads(c, co, read_list, push_y, "ListFetch", "x", "x,y", 0);
    check_write_closes_reads(c, co, read_list, erase_all, "ListFetch", "x,y", NULL, 0);
    check_write_closes_reads(c, co, read_zset, raise_m, "SortedSetFetch", "m:1,n:2", "n:2,m:11", 1);
    momento_coalescer_stats cc = tu_coalescer_stats(co);
    assert_int_equal(cc.read_requests, 6);
    assert_int_equal(cc.read_coalesced, 0);
    momento_coalescer_free(co);
    momento_client_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_list_push_fetch),
        cmocka_unit_test(test_list_slices),
        cmocka_unit_test(test_list_truncate),
        cmocka_unit_test(test_list_pop_remove_retain),
        cmocka_unit_test(test_list_ttl),
        cmocka_unit_test(test_sorted_set_put_fetch),
        cmocka_unit_test(test_sorted_set_by_score),
        cmocka_unit_test(test_sorted_set_exclusive_bounds),
        cmocka_unit_test(test_sorted_set_scores_ranks),
        cmocka_unit_test(test_sorted_set_union_store),
        cmocka_unit_test(test_type_mismatch),
        cmocka_unit_test(test_async),
        cmocka_unit_test(test_list_erase),
        cmocka_unit_test(test_coalesced_reads),
        cmocka_unit_test(test_coalesced_read_your_writes),
    };
    return cmocka_run_group_tests(tests, tu_fixture_setup, tu_fixture_teardown);
}
