/* momento-local's leaderboards (leaderboard.Leaderboard), spoken to
 * directly over gRPC: upserts and their order (score, then id; descending
 * the exact reverse), double scores kept exactly, ranks by rank and by
 * score with offsets and limits, GetRank and competition ranks in the
 * order asked with absent ids left out, a missing leaderboard as an empty
 * one, Momento's refusals (empty names, empty or over-8192 calls, NaN and
 * infinite scores, empty or inverted or too wide ranges), names apart from
 * the cache's keys, a cache's flush and deletion, --max-memory (all or
 * nothing), disposable tokens' scopes, the fault names, and a model check
 * of every query on a leaderboard with many ties. */
#include "srv_test.h"
#include "testutil.h"

#include "cacheclient.pb-c.h"
#include "common.pb-c.h"
#include "controlclient.pb-c.h"
#include "leaderboard.pb-c.h"
#include "token.pb-c.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LB "/leaderboard.Leaderboard/"

enum { ST_OK = 0, ST_INVALID_ARGUMENT = 3, ST_NOT_FOUND = 5, ST_PERMISSION_DENIED = 7,
       ST_RESOURCE_EXHAUSTED = 8, ST_UNAVAILABLE = 14 };

static const char *const cache_hdr[] = {"cache", "c"};

static int call_to(const char *ep, const char *path, const ProtobufCMessage *m,
                   const char *const *headers, size_t n_headers)
{
    tu_raw_reply_free(tu_fx.reply);
    return tu_raw_call_msg(ep, path, headers, n_headers, m, tu_fx.reply);
}

static int call(const char *path, const ProtobufCMessage *m)
{
    return call_to(tu_fx.target, path, m, cache_hdr, 1);
}

/* ---- Requests ------------------------------------------------------------ */

typedef struct el {
    uint32_t id;
    double score;
    uint32_t rank;
} el;

/* An element to upsert. */
typedef struct in {
    uint32_t id;
    double score;
} in;

static int upsert_to(const char *ep, const char *const *h, size_t nh, const char *name,
                     const in *els, size_t n)
{
    Leaderboard__Element *e = calloc(n ? n : 1, sizeof(*e));
    Leaderboard__Element **p = calloc(n ? n : 1, sizeof(*p));
    assert_non_null(e);
    assert_non_null(p);
    for (size_t i = 0; i < n; i++) {
        leaderboard____element__init(&e[i]);
        e[i].id = els[i].id;
        e[i].score = els[i].score;
        p[i] = &e[i];
    }
    Leaderboard__UpsertElementsRequest req = LEADERBOARD____UPSERT_ELEMENTS_REQUEST__INIT;
    req.leaderboard = (char *)name;
    req.n_elements = n;
    req.elements = p;
    int st = call_to(ep, LB "UpsertElements", &req.base, h, nh);
    free(e);
    free(p);
    return st;
}

static int upsert(const char *name, const in *els, size_t n)
{
    return upsert_to(tu_fx.target, cache_hdr, 1, name, els, n);
}

static int remove_ids(const char *name, const uint32_t *ids, size_t n)
{
    Leaderboard__RemoveElementsRequest req = LEADERBOARD____REMOVE_ELEMENTS_REQUEST__INIT;
    req.leaderboard = (char *)name;
    req.n_ids = n;
    req.ids = (uint32_t *)ids;
    return call(LB "RemoveElements", &req.base);
}

static int delete_board(const char *name)
{
    Leaderboard__DeleteLeaderboardRequest req = LEADERBOARD____DELETE_LEADERBOARD_REQUEST__INIT;
    req.leaderboard = (char *)name;
    return call(LB "DeleteLeaderboard", &req.base);
}

/* The length of `name` at `ep` with `h` (nh pairs), or -1 - status on an
 * error. */
static long length_at(const char *ep, const char *const *h, size_t nh, const char *name)
{
    Leaderboard__GetLeaderboardLengthRequest req =
        LEADERBOARD____GET_LEADERBOARD_LENGTH_REQUEST__INIT;
    req.leaderboard = (char *)name;
    int st = call_to(ep, LB "GetLeaderboardLength", &req.base, h, nh);
    if (st != ST_OK)
        return -1 - st;
    Leaderboard__GetLeaderboardLengthResponse *resp =
        srv_reply_msg(tu_fx.reply, &leaderboard____get_leaderboard_length_response__descriptor);
    long n = resp->count;
    protobuf_c_message_free_unpacked(&resp->base, NULL);
    return n;
}

static long length_of(const char *name)
{
    return length_at(tu_fx.target, cache_hdr, 1, name);
}

/* The ranked elements of the reply (every ranked response is field 1,
 * repeated _RankedElement: read as _GetByRankResponse), into `out` (room
 * for `cap`); their number. */
static size_t ranked_of(el *out, size_t cap)
{
    Leaderboard__GetByRankResponse *resp =
        srv_reply_msg(tu_fx.reply, &leaderboard____get_by_rank_response__descriptor);
    size_t n = resp->n_elements;
    assert_true(n <= cap);
    for (size_t i = 0; i < n; i++)
        out[i] = (el){resp->elements[i]->id, resp->elements[i]->score, resp->elements[i]->rank};
    protobuf_c_message_free_unpacked(&resp->base, NULL);
    return n;
}

static int by_rank(const char *name, uint32_t start, uint32_t end, int order)
{
    Leaderboard__RankRange rr = LEADERBOARD____RANK_RANGE__INIT;
    rr.start_inclusive = start;
    rr.end_exclusive = end;
    Leaderboard__GetByRankRequest req = LEADERBOARD____GET_BY_RANK_REQUEST__INIT;
    req.leaderboard = (char *)name;
    req.rank_range = &rr;
    req.order = order;
    return call(LB "GetByRank", &req.base);
}

/* NAN for an open bound. */
static int by_score(const char *name, double min, double max, uint32_t offset, uint32_t limit,
                    int order)
{
    Leaderboard__Unbounded unb = LEADERBOARD____UNBOUNDED__INIT;
    Leaderboard__ScoreRange sr = LEADERBOARD____SCORE_RANGE__INIT;
    if (isnan(min)) {
        sr.min_case = LEADERBOARD____SCORE_RANGE__MIN_UNBOUNDED_MIN;
        sr.unbounded_min = &unb;
    } else {
        sr.min_case = LEADERBOARD____SCORE_RANGE__MIN_MIN_INCLUSIVE;
        sr.min_inclusive = min;
    }
    if (isnan(max)) {
        sr.max_case = LEADERBOARD____SCORE_RANGE__MAX_UNBOUNDED_MAX;
        sr.unbounded_max = &unb;
    } else {
        sr.max_case = LEADERBOARD____SCORE_RANGE__MAX_MAX_EXCLUSIVE;
        sr.max_exclusive = max;
    }
    Leaderboard__GetByScoreRequest req = LEADERBOARD____GET_BY_SCORE_REQUEST__INIT;
    req.leaderboard = (char *)name;
    req.score_range = &sr;
    req.offset = offset;
    req.limit_elements = limit;
    req.order = order;
    return call(LB "GetByScore", &req.base);
}

static int get_rank(const char *name, const uint32_t *ids, size_t n, int order)
{
    Leaderboard__GetRankRequest req = LEADERBOARD____GET_RANK_REQUEST__INIT;
    req.leaderboard = (char *)name;
    req.n_ids = n;
    req.ids = (uint32_t *)ids;
    req.order = order;
    return call(LB "GetRank", &req.base);
}

/* order -1: left out (the proto's default, descending). */
static int competition_rank(const char *name, const uint32_t *ids, size_t n, int order)
{
    Leaderboard__GetCompetitionRankRequest req = LEADERBOARD____GET_COMPETITION_RANK_REQUEST__INIT;
    req.leaderboard = (char *)name;
    req.n_ids = n;
    req.ids = (uint32_t *)ids;
    if (order >= 0) {
        req._order_case = LEADERBOARD____GET_COMPETITION_RANK_REQUEST___ORDER_ORDER;
        req.order = order;
    }
    return call(LB "GetCompetitionRank", &req.base);
}

#define ASC LEADERBOARD____ORDER__ASCENDING
#define DESC LEADERBOARD____ORDER__DESCENDING
#define OPEN NAN
#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static void assert_els(const el *got, size_t n, const el *want, size_t n_want)
{
    assert_int_equal(n, n_want);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(got[i].id, want[i].id);
        assert_true(got[i].score == want[i].score);
        assert_int_equal(got[i].rank, want[i].rank);
    }
}

/* ---- Tests --------------------------------------------------------------- */

/* The JS suite's "inserts and updates": order by score, an update moves an
 * element, and scores are doubles kept to the last bit. */
static void test_upsert_and_order(void **state)
{
    (void)state;
    el got[16];
    const in first[] = {{123, 100}, {456, 200}, {789, 300}};
    assert_int_equal(upsert("order", first, 3), ST_OK);
    const in update[] = {{456, 50}, {1011, 500}};
    assert_int_equal(upsert("order", update, 2), ST_OK);
    assert_int_equal(by_score("order", OPEN, OPEN, 0, 0, ASC), ST_OK);
    const el want[] = {{456, 50, 0}, {123, 100, 1}, {789, 300, 2}, {1011, 500, 3}};
    assert_els(got, ranked_of(got, 16), want, 4);
    assert_int_equal(length_of("order"), 4);

    const in dbl[] = {{1, 27.004309862363737}, {2, 16777217.0}, {3, 300.5}};
    assert_int_equal(upsert("doubles", dbl, 3), ST_OK);
    assert_int_equal(by_rank("doubles", 0, 10, ASC), ST_OK);
    const el want_dbl[] = {{1, 27.004309862363737, 0}, {3, 300.5, 1}, {2, 16777217.0, 2}};
    assert_els(got, ranked_of(got, 16), want_dbl, 3);
    /* The extremes of an id. */
    const in ends[] = {{0, -1e300}, {UINT32_MAX, 1e300}};
    assert_int_equal(upsert("doubles", ends, 2), ST_OK);
    assert_int_equal(by_rank("doubles", 0, 1, ASC), ST_OK);
    assert_int_equal(ranked_of(got, 16), 1);
    assert_int_equal(got[0].id, 0);
    assert_int_equal(by_rank("doubles", 0, 1, DESC), ST_OK);
    assert_int_equal(ranked_of(got, 16), 1);
    assert_int_equal(got[0].id, UINT32_MAX);
    /* An id twice in one call: the last score wins. */
    const in twice[] = {{7, 1}, {7, 2}};
    assert_int_equal(upsert("twice", twice, 2), ST_OK);
    assert_int_equal(by_rank("twice", 0, 10, ASC), ST_OK);
    const el want_twice[] = {{7, 2, 0}};
    assert_els(got, ranked_of(got, 16), want_twice, 1);
}

/* The JS and Go suites' score queries: offset and count, a bounded range
 * [min, max), and all options descending, whose ranks count from the top. */
static void test_by_score(void **state)
{
    (void)state;
    el got[16];
    const in els[] = {{123, 10},   {234, 100},  {345, 250},  {456, 500},
                      {567, 750},  {678, 1000}, {789, 1500}, {890, 2000}};
    assert_int_equal(upsert("score", els, 8), ST_OK);
    assert_int_equal(by_score("score", OPEN, OPEN, 2, 2, ASC), ST_OK);
    const el w1[] = {{345, 250, 2}, {456, 500, 3}};
    assert_els(got, ranked_of(got, 16), w1, 2);
    assert_int_equal(by_score("score", 750, 1500, 0, 0, ASC), ST_OK);
    const el w2[] = {{567, 750, 4}, {678, 1000, 5}};
    assert_els(got, ranked_of(got, 16), w2, 2);
    assert_int_equal(by_score("score", 0, 800, 2, 10, DESC), ST_OK);
    const el w3[] = {{345, 250, 5}, {234, 100, 6}, {123, 10, 7}};
    assert_els(got, ranked_of(got, 16), w3, 3);
    /* An offset past the matches, an empty range, infinite bounds. */
    assert_int_equal(by_score("score", OPEN, OPEN, 10, 0, ASC), ST_OK);
    assert_int_equal(ranked_of(got, 16), 0);
    assert_int_equal(by_score("score", 500, 500, 0, 0, ASC), ST_OK);
    assert_int_equal(ranked_of(got, 16), 0);
    assert_int_equal(by_score("score", -INFINITY, INFINITY, 0, 3, DESC), ST_OK);
    const el w4[] = {{890, 2000, 0}, {789, 1500, 1}, {678, 1000, 2}};
    assert_els(got, ranked_of(got, 16), w4, 3);
}

static void test_by_rank(void **state)
{
    (void)state;
    el got[16];
    const in els[] = {{123, 100}, {456, 200}, {789, 300}};
    assert_int_equal(upsert("rank", els, 3), ST_OK);
    assert_int_equal(by_rank("rank", 0, 10, DESC), ST_OK);
    const el w1[] = {{789, 300, 0}, {456, 200, 1}, {123, 100, 2}};
    assert_els(got, ranked_of(got, 16), w1, 3);
    assert_int_equal(by_rank("rank", 1, 2, ASC), ST_OK);
    const el w2[] = {{456, 200, 1}};
    assert_els(got, ranked_of(got, 16), w2, 1);
    assert_int_equal(by_rank("rank", 1, 3, DESC), ST_OK);
    const el w3[] = {{456, 200, 1}, {123, 100, 2}};
    assert_els(got, ranked_of(got, 16), w3, 2);
    assert_int_equal(by_rank("rank", 3, 8195, ASC), ST_OK); /* past the end: nothing */
    assert_int_equal(ranked_of(got, 16), 0);
    assert_int_equal(by_rank("rank", 0, 8192, ASC), ST_OK); /* the widest range */
    assert_int_equal(ranked_of(got, 16), 3);
}

/* GetRank (the Java suite's superset and subset) and competition ranks
 * (its getCompetitionRankHappyPath): the order asked, absent ids left out. */
static void test_ranks_of_ids(void **state)
{
    (void)state;
    el got[16];
    const in els[] = {{0, 20}, {1, 10}, {2, 10}, {3, 5}};
    assert_int_equal(upsert("ids", els, 4), ST_OK);
    const uint32_t ids[] = {3, 4, 1, 0, 2};
    assert_int_equal(get_rank("ids", ids, 5, ASC), ST_OK);
    const el asc[] = {{3, 5, 0}, {1, 10, 1}, {0, 20, 3}, {2, 10, 2}};
    assert_els(got, ranked_of(got, 16), asc, 4);
    assert_int_equal(get_rank("ids", ids, 5, DESC), ST_OK);
    const el desc[] = {{3, 5, 3}, {1, 10, 2}, {0, 20, 0}, {2, 10, 1}};
    assert_els(got, ranked_of(got, 16), desc, 4);
    assert_int_equal(get_rank("ids", NULL, 0, ASC), ST_OK);
    assert_int_equal(ranked_of(got, 16), 0);

    const uint32_t all[] = {0, 1, 2, 3};
    assert_int_equal(competition_rank("ids", all, 4, -1), ST_OK);
    const el cdef[] = {{0, 20, 0}, {1, 10, 1}, {2, 10, 1}, {3, 5, 3}};
    assert_els(got, ranked_of(got, 16), cdef, 4);
    assert_int_equal(competition_rank("ids", all, 4, DESC), ST_OK);
    assert_els(got, ranked_of(got, 16), cdef, 4);
    assert_int_equal(competition_rank("ids", all, 4, ASC), ST_OK);
    const el casc[] = {{0, 20, 3}, {1, 10, 1}, {2, 10, 1}, {3, 5, 0}};
    assert_els(got, ranked_of(got, 16), casc, 4);
    const uint32_t some[] = {1, 2, 3, 4};
    assert_int_equal(competition_rank("ids", some, 4, -1), ST_OK);
    const el csome[] = {{1, 10, 1}, {2, 10, 1}, {3, 5, 3}};
    assert_els(got, ranked_of(got, 16), csome, 3);
}

/* A leaderboard that does not exist is an empty one; one whose last
 * element goes is gone; Delete drops it. */
static void test_missing_and_removed(void **state)
{
    (void)state;
    el got[16];
    const uint32_t one[] = {123};
    assert_int_equal(length_of("none"), 0);
    assert_int_equal(by_rank("none", 0, 100, ASC), ST_OK);
    assert_int_equal(ranked_of(got, 16), 0);
    assert_int_equal(by_score("none", OPEN, OPEN, 0, 0, ASC), ST_OK);
    assert_int_equal(ranked_of(got, 16), 0);
    assert_int_equal(get_rank("none", one, 1, ASC), ST_OK);
    assert_int_equal(ranked_of(got, 16), 0);
    assert_int_equal(competition_rank("none", one, 1, -1), ST_OK);
    assert_int_equal(ranked_of(got, 16), 0);
    assert_int_equal(remove_ids("none", one, 1), ST_OK);
    assert_int_equal(delete_board("none"), ST_OK);

    const in els[] = {{123, 100}, {456, 200}, {789, 300}};
    assert_int_equal(upsert("rm", els, 3), ST_OK);
    const uint32_t two[] = {123, 789, 99999};
    assert_int_equal(remove_ids("rm", two, 3), ST_OK);
    assert_int_equal(by_score("rm", OPEN, OPEN, 0, 0, ASC), ST_OK);
    const el left[] = {{456, 200, 0}};
    assert_els(got, ranked_of(got, 16), left, 1);
    const uint32_t last[] = {456};
    assert_int_equal(remove_ids("rm", last, 1), ST_OK);
    assert_int_equal(length_of("rm"), 0);

    assert_int_equal(upsert("del", els, 3), ST_OK);
    assert_int_equal(length_of("del"), 3);
    assert_int_equal(delete_board("del"), ST_OK);
    assert_int_equal(length_of("del"), 0);
}

/* What Momento refuses, INVALID_ARGUMENT each, with nothing changed. */
static void test_refusals(void **state)
{
    (void)state;
    const in els[] = {{1, 1}, {2, 2}};
    assert_int_equal(upsert("ok", els, 2), ST_OK);
    assert_int_equal(upsert("", els, 2), ST_INVALID_ARGUMENT);
    assert_int_equal(upsert("  ", els, 2), ST_INVALID_ARGUMENT);
    assert_int_equal(length_of(""), -1 - ST_INVALID_ARGUMENT);
    assert_int_equal(delete_board(" "), ST_INVALID_ARGUMENT);
    assert_int_equal(upsert("ok", els, 0), ST_INVALID_ARGUMENT);
    const in nan[] = {{3, 3}, {4, NAN}};
    const in inf[] = {{3, 3}, {4, -INFINITY}};
    assert_int_equal(upsert("ok", nan, 2), ST_INVALID_ARGUMENT);
    assert_int_equal(upsert("ok", inf, 2), ST_INVALID_ARGUMENT);
    assert_int_equal(length_of("ok"), 2); /* all or nothing: id 3 is not in */

    enum { OVER = 8193 };
    in *many = calloc(OVER, sizeof(*many));
    uint32_t *ids = calloc(OVER, sizeof(*ids));
    assert_non_null(many);
    assert_non_null(ids);
    for (uint32_t i = 0; i < OVER; i++) {
        many[i] = (in){i, i};
        ids[i] = i;
    }
    assert_int_equal(upsert("ok", many, OVER), ST_INVALID_ARGUMENT);
    assert_int_equal(length_of("ok"), 2);
    assert_int_equal(upsert("ok", many, OVER - 1), ST_OK); /* 8192: the most */
    assert_int_equal(length_of("ok"), 8192);
    assert_int_equal(remove_ids("ok", ids, OVER), ST_INVALID_ARGUMENT);
    assert_int_equal(get_rank("ok", ids, OVER, ASC), ST_INVALID_ARGUMENT);
    assert_int_equal(competition_rank("ok", ids, OVER, -1), ST_INVALID_ARGUMENT);
    assert_int_equal(remove_ids("ok", ids, 0), ST_INVALID_ARGUMENT);
    assert_int_equal(length_of("ok"), 8192);
    free(many);
    free(ids);

    /* The proto's error ranges, and the SDKs' (10, 5). */
    assert_int_equal(by_rank("ok", 0, 0, ASC), ST_INVALID_ARGUMENT);
    assert_int_equal(by_rank("ok", 4, 3, ASC), ST_INVALID_ARGUMENT);
    assert_int_equal(by_rank("ok", 10, 5, DESC), ST_INVALID_ARGUMENT);
    assert_int_equal(by_rank("ok", 0, 8193, ASC), ST_INVALID_ARGUMENT);
    assert_int_equal(by_rank("ok", 123, 8315, ASC), ST_OK);
    Leaderboard__GetByRankRequest no_range = LEADERBOARD____GET_BY_RANK_REQUEST__INIT;
    no_range.leaderboard = "ok";
    assert_int_equal(call(LB "GetByRank", &no_range.base), ST_INVALID_ARGUMENT);
    assert_int_equal(by_rank("ok", 0, 1, 7), ST_INVALID_ARGUMENT); /* no such order */
    assert_int_equal(by_score("ok", 100, 50, 0, 0, ASC), ST_INVALID_ARGUMENT);
    assert_int_equal(by_score("ok", OPEN, OPEN, 0, 8193, ASC), ST_INVALID_ARGUMENT);
    assert_int_equal(by_score("ok", OPEN, OPEN, 0, 8192, ASC), ST_OK);
    /* A NaN bound (by_score() reads NAN as open, so it is packed here). */
    Leaderboard__ScoreRange sr = LEADERBOARD____SCORE_RANGE__INIT;
    sr.min_case = LEADERBOARD____SCORE_RANGE__MIN_MIN_INCLUSIVE;
    sr.min_inclusive = NAN;
    Leaderboard__GetByScoreRequest req = LEADERBOARD____GET_BY_SCORE_REQUEST__INIT;
    req.leaderboard = "ok";
    req.score_range = &sr;
    assert_int_equal(call(LB "GetByScore", &req.base), ST_INVALID_ARGUMENT);
    /* No cache, an unknown one; a body that does not decode. */
    assert_int_equal(length_at(tu_fx.target, NULL, 0, "ok"), -1 - ST_INVALID_ARGUMENT);
    const char *nope[] = {"cache", "nope"};
    assert_int_equal(length_at(tu_fx.target, nope, 1, "ok"), -1 - ST_NOT_FOUND);
    tu_raw_reply_free(tu_fx.reply);
    assert_int_equal(tu_raw_call(tu_fx.target, LB "UpsertElements", cache_hdr, 1, "\x1a\x05\x08", 3,
                                 tu_fx.reply),
                     ST_INVALID_ARGUMENT);
    assert_int_equal(delete_board("ok"), ST_OK);
}

/* Ties: ordinal ranks go by id, ascending; descending is the exact
 * reverse. Checked against a model on a leaderboard of many ties, through
 * every query: pages by rank both ways, each element's rank and
 * competition rank, score ranges with offsets. */
typedef struct model_el {
    uint32_t id;
    double score;
} model_el;

static int model_cmp(const void *a, const void *b)
{
    const model_el *x = a, *y = b;
    if (x->score != y->score)
        return x->score < y->score ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

static void test_model(void **state)
{
    (void)state;
    enum { N = 12000, PAGE = 8192 };
    model_el *m = calloc(N, sizeof(*m));
    in *batch = calloc(PAGE, sizeof(*batch));
    el *got = calloc(PAGE, sizeof(*got));
    uint32_t *ids = calloc(PAGE, sizeof(*ids));
    assert_non_null(m);
    assert_non_null(batch);
    assert_non_null(got);
    assert_non_null(ids);
    /* Ids spread over the whole range, scores among 97 values: ties. */
    uint64_t x = 88172645463325252u;
    for (size_t i = 0; i < N; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        m[i].id = (uint32_t)i * 2654435761u; /* odd: distinct ids, all over */
        m[i].score = (double)(x % 97) - 48.5;
    }
    for (size_t at = 0; at < N; at += PAGE) {
        size_t n = N - at < PAGE ? N - at : PAGE;
        for (size_t i = 0; i < n; i++)
            batch[i] = (in){m[at + i].id, m[at + i].score};
        assert_int_equal(upsert("model", batch, n), ST_OK);
    }
    qsort(m, N, sizeof(*m), model_cmp);
    assert_int_equal(length_of("model"), N);

    for (int down = 0; down < 2; down++) {
        for (size_t at = 0; at < N; at += PAGE) {
            assert_int_equal(by_rank("model", (uint32_t)at, (uint32_t)(at + PAGE), down), ST_OK);
            size_t n = ranked_of(got, PAGE);
            assert_int_equal(n, N - at < PAGE ? N - at : PAGE);
            for (size_t i = 0; i < n; i++) {
                size_t r = at + i;
                const model_el *e = &m[down ? N - 1 - r : r];
                assert_int_equal(got[i].id, e->id);
                assert_true(got[i].score == e->score);
                assert_int_equal(got[i].rank, r);
            }
        }
    }
    /* Every 7th element's ranks, asked for in the model's order. */
    size_t k = 0;
    for (size_t i = 0; i < N && k < PAGE; i += 7)
        ids[k++] = m[i].id;
    for (int down = 0; down < 2; down++) {
        assert_int_equal(get_rank("model", ids, k, down), ST_OK);
        assert_int_equal(ranked_of(got, PAGE), k);
        for (size_t j = 0; j < k; j++) {
            size_t i = j * 7;
            assert_int_equal(got[j].id, m[i].id);
            assert_int_equal(got[j].rank, down ? N - 1 - i : i);
        }
        assert_int_equal(competition_rank("model", ids, k, down), ST_OK);
        assert_int_equal(ranked_of(got, PAGE), k);
        for (size_t j = 0; j < k; j++) {
            size_t i = j * 7, ahead = 0;
            /* The elements strictly ahead in that order. */
            if (!down)
                while (ahead < N && m[ahead].score < m[i].score)
                    ahead++;
            else
                for (size_t t = N; t > 0 && m[t - 1].score > m[i].score; t--)
                    ahead++;
            assert_int_equal(got[j].rank, ahead);
        }
    }
    /* Score ranges with offsets, both ways. */
    const double lo = -10.5, hi = 20.5;
    size_t first = 0, end = 0;
    while (first < N && m[first].score < lo)
        first++;
    end = first;
    while (end < N && m[end].score < hi)
        end++;
    /* One query cut by its limit, one by the range's end. */
    const uint32_t offset = 1000, limits[] = {2000, 8192};
    assert_true(end - first > offset + limits[0] && end - first < offset + limits[1]);
    for (size_t l = 0; l < 2; l++) {
        size_t want = end - first - offset < limits[l] ? end - first - offset : limits[l];
        assert_int_equal(by_score("model", lo, hi, offset, limits[l], ASC), ST_OK);
        size_t n = ranked_of(got, PAGE);
        assert_int_equal(n, want);
        for (size_t i = 0; i < n; i++) {
            assert_int_equal(got[i].id, m[first + offset + i].id);
            assert_int_equal(got[i].rank, first + offset + i);
        }
        assert_int_equal(by_score("model", lo, hi, offset, limits[l], DESC), ST_OK);
        n = ranked_of(got, PAGE);
        assert_int_equal(n, want);
        for (size_t i = 0; i < n; i++) {
            size_t r = end - 1 - offset - i;
            assert_int_equal(got[i].id, m[r].id);
            assert_int_equal(got[i].rank, N - 1 - r);
        }
    }
    assert_int_equal(delete_board("model"), ST_OK);
    free(m);
    free(batch);
    free(got);
    free(ids);
}

static int control(const char *path, const char *cache)
{
    ControlClient__DeleteCacheRequest req = CONTROL_CLIENT____DELETE_CACHE_REQUEST__INIT;
    req.cache_name = (char *)cache; /* the three requests: field 1, cache_name */
    return call_to(tu_fx.target, path, &req.base, NULL, 0);
}

/* A leaderboard's name is not a key of its cache: an item of that name
 * lives beside it, each untouched by the other's calls. A flush of the
 * cache empties its leaderboards, its deletion drops them. */
static void test_names_and_caches(void **state)
{
    (void)state;
    const in els[] = {{1, 1}, {2, 2}};
    assert_int_equal(upsert("both", els, 2), ST_OK);
    CacheClient__SetRequest set = CACHE_CLIENT____SET_REQUEST__INIT;
    set.cache_key = (ProtobufCBinaryData){4, (uint8_t *)"both"};
    set.cache_body = (ProtobufCBinaryData){1, (uint8_t *)"v"};
    assert_int_equal(call("/cache_client.Scs/Set", &set.base), ST_OK);
    assert_int_equal(length_of("both"), 2);
    CacheClient__DeleteRequest del = CACHE_CLIENT____DELETE_REQUEST__INIT;
    del.cache_key = set.cache_key;
    assert_int_equal(call("/cache_client.Scs/Delete", &del.base), ST_OK);
    assert_int_equal(length_of("both"), 2);
    assert_int_equal(call("/cache_client.Scs/Set", &set.base), ST_OK);
    assert_int_equal(delete_board("both"), ST_OK);
    CacheClient__GetRequest get = CACHE_CLIENT____GET_REQUEST__INIT;
    get.cache_key = set.cache_key;
    assert_int_equal(call("/cache_client.Scs/Get", &get.base), ST_OK);
    CacheClient__GetResponse *g =
        srv_reply_msg(tu_fx.reply, &cache_client____get_response__descriptor);
    assert_int_equal(g->result, CACHE_CLIENT__ECACHE_RESULT__Hit);
    protobuf_c_message_free_unpacked(&g->base, NULL);

    assert_int_equal(upsert("flushed", els, 2), ST_OK);
    assert_int_equal(control("/control_client.ScsControl/FlushCache", "c"), ST_OK);
    assert_int_equal(length_of("flushed"), 0);

    assert_int_equal(control("/control_client.ScsControl/CreateCache", "gone"), ST_OK);
    const char *gone[] = {"cache", "gone"};
    assert_int_equal(upsert_to(tu_fx.target, gone, 1, "lb", els, 2), ST_OK);
    assert_int_equal(control("/control_client.ScsControl/DeleteCache", "gone"), ST_OK);
    assert_int_equal(upsert_to(tu_fx.target, gone, 1, "lb", els, 1), ST_NOT_FOUND);
    assert_int_equal(control("/control_client.ScsControl/CreateCache", "gone"), ST_OK);
    /* A new cache of that name: empty. */
    assert_int_equal(length_at(tu_fx.target, gone, 1, "lb"), 0);
    assert_int_equal(control("/control_client.ScsControl/DeleteCache", "gone"), ST_OK);
}

/* Under --max-memory a leaderboard counts (and is never evicted): an
 * upsert it cannot hold is refused whole, and the items give way first. */
static void test_max_memory(void **state)
{
    (void)state;
    momento_local_options *o = tu_options("c");
    momento_local_options_set_max_memory(o, 2u << 20);
    momento_local *s = tu_start(o);
    const char *ep = momento_local_endpoint(s);
    enum { PAGE = 8192 };
    in *batch = calloc(PAGE, sizeof(*batch));
    assert_non_null(batch);
    int st = ST_OK;
    uint32_t next = 0;
    size_t pages = 0;
    /* ~100 bytes an element: 2 MiB is full within ~3 pages. */
    while (st == ST_OK && pages < 20) {
        for (size_t i = 0; i < PAGE; i++)
            batch[i] = (in){next++, (double)i};
        st = upsert_to(ep, cache_hdr, 1, "big", batch, PAGE);
        pages++;
    }
    assert_int_equal(st, ST_RESOURCE_EXHAUSTED);
    assert_true(pages >= 2);
    /* The refused page left no trace. */
    assert_int_equal(length_at(ep, cache_hdr, 1, "big"), (long)((pages - 1) * PAGE));
    free(batch);
    momento_local_stop(s);
}

/* A disposable token for a grant of `role` on cache "c": every item, or
 * key `item`. */
static char *mint(int role, const char *item)
{
    srv_token_request t;
    srv_token_request_init(&t, "", "c", role, item, true, NULL);
    assert_int_equal(
        call_to(tu_fx.target, "/token.Token/GenerateDisposableToken", &t.req.base, NULL, 0), ST_OK);
    Token__GenerateDisposableTokenResponse *resp =
        srv_reply_msg(tu_fx.reply, &token____generate_disposable_token_response__descriptor);
    char *token = strdup(resp->api_key);
    token____generate_disposable_token_response__free_unpacked(resp, NULL);
    return token;
}

/* Cache grants cover leaderboards when they cover every item of the cache
 * (reads for the queries, writes for upsert, remove and delete); a grant
 * on a key of the leaderboard's name covers nothing. */
static void test_token_scopes(void **state)
{
    (void)state;
    const in els[] = {{1, 1}};
    const uint32_t one[] = {1};
    Leaderboard__GetRankRequest rank = LEADERBOARD____GET_RANK_REQUEST__INIT;
    rank.leaderboard = "scoped";
    rank.n_ids = 1;
    rank.ids = (uint32_t *)one;
    Leaderboard__GetCompetitionRankRequest comp = LEADERBOARD____GET_COMPETITION_RANK_REQUEST__INIT;
    comp.leaderboard = "scoped";
    struct {
        int role;
        const char *item;
        int read, write;
    } cases[] = {
        {PERMISSION_MESSAGES__CACHE_ROLE__CacheReadOnly, NULL, ST_OK, ST_PERMISSION_DENIED},
        {PERMISSION_MESSAGES__CACHE_ROLE__CacheWriteOnly, NULL, ST_PERMISSION_DENIED, ST_OK},
        {PERMISSION_MESSAGES__CACHE_ROLE__CacheReadWrite, NULL, ST_OK, ST_OK},
        {PERMISSION_MESSAGES__CACHE_ROLE__CacheReadWrite, "scoped", ST_PERMISSION_DENIED,
         ST_PERMISSION_DENIED},
    };
    for (size_t i = 0; i < N_OF(cases); i++) {
        char *token = mint(cases[i].role, cases[i].item);
        const char *h[] = {"cache", "c", "authorization", token};
        assert_int_equal(upsert_to(tu_fx.target, h, 2, "scoped", els, 1), cases[i].write);
        assert_int_equal(call_to(tu_fx.target, LB "GetRank", &rank.base, h, 2), cases[i].read);
        assert_int_equal(call_to(tu_fx.target, LB "GetCompetitionRank", &comp.base, h, 2),
                         cases[i].read);
        if (cases[i].read == ST_PERMISSION_DENIED)
            assert_string_equal(tu_fx.reply->details,
                                "Insufficient permissions to perform this operation");
        free(token);
    }
    assert_int_equal(delete_board("scoped"), ST_OK);
}

/* The fault names: an error for one RPC leaves the others alone. */
static void test_fault_names(void **state)
{
    (void)state;
    const in els[] = {{1, 1}};
    const char *h[] = {"cache", "c", "return-error", "unavailable", "error-rpcs",
                       "leaderboard-upsert leaderboard-get-competition-rank"};
    assert_int_equal(upsert_to(tu_fx.target, h, 3, "faults", els, 1), ST_UNAVAILABLE);
    assert_int_equal(length_at(tu_fx.target, h, 3, "faults"), 0); /* served; the upsert was not */
    Leaderboard__GetCompetitionRankRequest comp = LEADERBOARD____GET_COMPETITION_RANK_REQUEST__INIT;
    comp.leaderboard = "faults";
    assert_int_equal(call_to(tu_fx.target, LB "GetCompetitionRank", &comp.base, h, 3),
                     ST_UNAVAILABLE);
    assert_true(momento_local_rpc_count(tu_fx.server, "UpsertElements", ST_UNAVAILABLE) >= 1);
    assert_true(momento_local_rpc_count(tu_fx.server, "GetLeaderboardLength", ST_OK) >= 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_upsert_and_order),
        cmocka_unit_test(test_by_score),
        cmocka_unit_test(test_by_rank),
        cmocka_unit_test(test_ranks_of_ids),
        cmocka_unit_test(test_missing_and_removed),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_model),
        cmocka_unit_test(test_names_and_caches),
        cmocka_unit_test(test_max_memory),
        cmocka_unit_test(test_token_scopes),
        cmocka_unit_test(test_fault_names),
    };
    return cmocka_run_group_tests(tests, tu_fixture_setup_server, tu_fixture_teardown);
}
