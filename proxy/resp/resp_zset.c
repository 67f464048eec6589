/* RESP: the sorted-set commands - ZADD (NX, XX, GT, LT, CH, INCR), ZREM,
 * ZSCORE, ZMSCORE, ZINCRBY, ZRANK, ZREVRANK, ZRANGE (BYSCORE, REV, LIMIT,
 * WITHSCORES) with ZREVRANGE, ZRANGEBYSCORE and ZREVRANGEBYSCORE, ZCARD,
 * ZCOUNT, ZUNIONSTORE (WEIGHTS, AGGREGATE) - on Momento's sorted sets.
 *
 * ZADD's conditions and counts need the members' scores before the write,
 * and Momento's put says nothing of them: ZADD reads the scores, decides
 * member by member in argument order exactly as Redis's zsetAdd() does,
 * then puts the scores that change. Two calls, not one atomic step: a
 * writer in between can be overwritten or miscounted. ZINCRBY and a plain
 * ZADD INCR are Momento's atomic increment; with a condition (or an
 * infinite increment, whose NaN Redis refuses) they read first too. ZREM
 * reads which members exist to count them. */
#include "resp/resp.h"

#include <errno.h>
#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The union's destination is replaced, as Redis replaces it (its TTL
 * goes): the default TTL, whatever the key had. Other writes keep the
 * key's TTL (resp_keep_ttl). */
static const momento_collection_ttl *replace_ttl(const px_reply *r, momento_collection_ttl *t)
{
    t->ttl_ms = resp_default_ttl(r);
    t->refresh = 1;
    return t;
}

/* One end of a score range as Redis's zslParseRange() reads it: "(x"
 * excludes x; strtod's own rules otherwise (leading spaces, "inf",
 * and an empty number as 0). */
static bool arg_bound(const px_str *a, double *score, bool *exclusive)
{
    char buf[256];
    if (a->n >= sizeof(buf))
        return false;
    memcpy(buf, a->p, a->n);
    buf[a->n] = '\0';
    const char *p = buf;
    *exclusive = a->n > 0 && buf[0] == '(';
    if (*exclusive)
        p++;
    char *end;
    double d = strtod(p, &end);
    if (*end || isnan(d))
        return false;
    *score = d;
    return true;
}

static int cmp_str(const px_str *x, const px_str *y)
{
    size_t n = x->n < y->n ? x->n : y->n;
    int c = n ? memcmp(x->p, y->p, n) : 0;
    if (c)
        return c;
    return x->n < y->n ? -1 : x->n > y->n ? 1 : 0;
}

static int cmp_str_q(const void *a, const void *b)
{
    return cmp_str(a, b);
}

/* The distinct members of argv[first], argv[first + stride], ..., sorted,
 * copied with the key into one allocation after `head` bytes. */
typedef struct members {
    const char *key;
    size_t key_len;
    size_t n;
    px_str *m;
    const void **ps;   /* m[i].p, for Momento's arrays */
    size_t *lens;
} members;

static void *members_new(size_t head, members **ret, int argc, const px_str *argv, int first,
                         int stride)
{
    size_t k = (size_t)(argc - first + stride - 1) / (size_t)stride;
    px_str *sorted = malloc((k ? k : 1) * sizeof(*sorted));
    if (!sorted)
        return NULL;
    for (size_t i = 0; i < k; i++)
        sorted[i] = argv[first + (int)i * stride];
    qsort(sorted, k, sizeof(*sorted), cmp_str_q);
    size_t n = 0, bytes = argv[1].n;
    for (size_t i = 0; i < k; i++) {
        if (n > 0 && cmp_str(&sorted[n - 1], &sorted[i]) == 0)
            continue;
        sorted[n++] = sorted[i];
        bytes += sorted[i].n;
    }
    head = (head + 15) & ~(size_t)15;
    char *block = calloc(1, head + sizeof(members) +
                                n * (sizeof(px_str) + sizeof(void *) + sizeof(size_t)) + bytes + 1);
    if (!block) {
        free(sorted);
        return NULL;
    }
    members *ms = (members *)(block + head);
    ms->n = n;
    ms->m = (px_str *)(ms + 1);
    ms->ps = (const void **)(ms->m + n);
    ms->lens = (size_t *)(ms->ps + n);
    char *p = (char *)(ms->lens + n);
    memcpy(p, argv[1].p, argv[1].n);
    ms->key = p;
    ms->key_len = argv[1].n;
    p += argv[1].n;
    for (size_t i = 0; i < n; i++) {
        memcpy(p, sorted[i].p, sorted[i].n);
        ms->m[i].p = p;
        ms->m[i].n = sorted[i].n;
        ms->ps[i] = p;
        ms->lens[i] = sorted[i].n;
        p += sorted[i].n;
    }
    free(sorted);
    *ret = ms;
    return block;
}

static size_t members_find(const members *ms, const px_str *s)
{
    size_t lo = 0, hi = ms->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = cmp_str(&ms->m[mid], s);
        if (c == 0)
            return mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return ms->n; /* not reached: every argument is among them */
}

/* ---- ZADD, ZINCRBY ---- */

enum { Z_NX = 1, Z_XX = 2, Z_GT = 4, Z_LT = 8, Z_CH = 16, Z_INCR = 32 };

typedef struct zadd_req {
    px_reply *r;
    int flags;
    size_t pairs;
    double *scores;      /* the arguments' scores, in argument order */
    size_t *which;       /* each argument's member in ms */
    bool *exists;        /* per member: after the read, then as decided */
    double *cur;
    bool *changed;
    members *ms;
    double result;       /* INCR: the new score */
    bool processed;      /* INCR: not a no-op */
} zadd_req;

static void on_zadd_put(const momento_result *res, void *ud)
{
    zadd_req *q = ud;
    if (momento_result_error(res) != MOMENTO_OK) {
        resp_end_failure(q->r, res);
    } else if (q->flags & Z_INCR) {
        resp_double(q->r, q->result);
        px_reply_end(q->r);
    } else {
        /* The count was kept in `result` by zadd_decide(). */
        resp_int(q->r, (long long)q->result);
        px_reply_end(q->r);
    }
    free(q);
}

/* Applies the pairs in order, as zsetAdd() does, to what the read found;
 * then puts what changed. */
static void zadd_decide(zadd_req *q)
{
    int f = q->flags;
    long long added = 0, updated = 0;
    for (size_t i = 0; i < q->pairs; i++) {
        size_t u = q->which[i];
        double score = q->scores[i];
        if (q->exists[u]) {
            if (f & Z_NX)
                continue;
            if (f & Z_INCR) {
                score += q->cur[u];
                if (isnan(score)) {
                    resp_end_error(q->r, "ERR resulting score is not a number (NaN)");
                    free(q);
                    return;
                }
            }
            if (((f & Z_LT) && score >= q->cur[u]) || ((f & Z_GT) && score <= q->cur[u]))
                continue;
            q->processed = true;
            q->result = score;
            if (score != q->cur[u]) {
                q->cur[u] = score;
                q->changed[u] = true;
                updated++;
            }
        } else if (!(f & Z_XX)) {
            q->exists[u] = true;
            q->cur[u] = score;
            q->changed[u] = true;
            q->processed = true;
            q->result = score;
            added++;
        }
    }
    size_t n = 0;
    for (size_t u = 0; u < q->ms->n; u++)
        if (q->changed[u]) {
            /* Compacts the changed members to the front of ms's arrays. */
            q->ms->ps[n] = q->ms->ps[u];
            q->ms->lens[n] = q->ms->lens[u];
            q->cur[n] = q->cur[u];
            n++;
        }
    if (!(f & Z_INCR))
        q->result = (double)((f & Z_CH) ? added + updated : added);
    if (n == 0) {
        if (f & Z_INCR) {
            if (q->processed)
                resp_double(q->r, q->result);
            else
                resp_nil(q->r);
        } else {
            resp_int(q->r, (long long)q->result);
        }
        px_reply_end(q->r);
        free(q);
        return;
    }
    px_backend *b = px_conn_backend(px_reply_conn(q->r));
    momento_collection_ttl t;
    int rc = momento_sorted_set_put_elements(b->client, b->cache, q->ms->key, q->ms->key_len,
                                             (const void *const *)q->ms->ps, q->ms->lens, q->cur,
                                             n, resp_keep_ttl(q->r, &t), NULL, on_zadd_put, q);
    if (!resp_submitted(q->r, rc))
        free(q);
}

static void on_zadd_read(const momento_result *res, void *ud)
{
    zadd_req *q = ud;
    if (resp_end_if_failed(q->r, res)) {
        free(q);
        return;
    }
    if (momento_result_is_hit(res))
        for (size_t u = 0; u < q->ms->n && u < momento_result_item_count(res); u++) {
            const momento_result *it = momento_result_item(res, u);
            if (momento_result_is_hit(it)) {
                q->exists[u] = true;
                /* + 0.0: a stored -0 reads back as 0 in Redis. */
                q->cur[u] = momento_result_score(it) + 0.0;
            }
        }
    zadd_decide(q);
}

/* ZINCRBY, and ZADD INCR without conditions: Momento's increment. */
static void on_incremented(const momento_result *res, void *ud)
{
    px_reply *r = ud;
    if (resp_end_if_failed(r, res))
        return;
    resp_double(r, momento_result_score(res));
    px_reply_end(r);
}

/* The pairs at argv[first..argc), already checked for count and floats. */
static void zadd_start(px_reply *r, int argc, const px_str *argv, int first, int flags,
                       const double *scores)
{
    px_backend *b = px_conn_backend(px_reply_conn(r));
    size_t pairs = (size_t)(argc - first) / 2;
    /* An increment of -0 answers -0 for a new member (Redis answers the
     * increment itself there) and the score for an existing one; Momento's
     * increment answers 0 + -0 = 0 for both, so that one reads first. */
    bool minus_zero = scores[0] == 0 && signbit(scores[0]);
    if ((flags & Z_INCR) && !(flags & (Z_NX | Z_XX | Z_GT | Z_LT)) && isfinite(scores[0]) &&
        !minus_zero) {
        momento_collection_ttl t;
        const px_str *m = &argv[first + 1];
        int rc = momento_sorted_set_increment_score(b->client, b->cache, argv[1].p, argv[1].n,
                                                    m->p, m->n, scores[0], resp_keep_ttl(r, &t),
                                                    NULL, on_incremented, r);
        resp_submitted(r, rc);
        return;
    }
    size_t head = sizeof(zadd_req) + pairs * (sizeof(double) + sizeof(size_t)) +
                  pairs * (2 * sizeof(bool) + sizeof(double));
    members *ms;
    zadd_req *q = members_new(head, &ms, argc, argv, first + 1, 2);
    if (!q) {
        resp_end_error(r, "ERR out of memory");
        return;
    }
    q->r = r;
    q->flags = flags;
    q->pairs = pairs;
    q->ms = ms;
    q->scores = (double *)(q + 1);
    q->cur = q->scores + pairs;
    q->which = (size_t *)(q->cur + pairs);
    q->exists = (bool *)(q->which + pairs);
    q->changed = q->exists + pairs;
    for (size_t i = 0; i < pairs; i++) {
        q->scores[i] = scores[i];
        q->which[i] = members_find(ms, &argv[first + 1 + 2 * (int)i]);
    }
    int rc = momento_sorted_set_get_scores(b->client, b->cache, ms->key, ms->key_len,
                                           (const void *const *)ms->ps, ms->lens, ms->n, NULL,
                                           on_zadd_read, q);
    if (!resp_submitted(r, rc))
        free(q);
}

static bool parse_scores(px_reply *r, int argc, const px_str *argv, int first, double **ret)
{
    size_t pairs = (size_t)(argc - first) / 2;
    double *s = malloc(pairs * sizeof(*s));
    if (!s) {
        resp_end_error(r, "ERR out of memory");
        return false;
    }
    for (size_t i = 0; i < pairs; i++)
        if (!resp_arg_double(&argv[first + 2 * (int)i], &s[i])) {
            free(s);
            resp_end_error(r, "ERR value is not a valid float");
            return false;
        }
    *ret = s;
    return true;
}

static void cmd_zadd(px_reply *r, int argc, const px_str *argv)
{
    int flags = 0, i = 2;
    for (; i < argc; i++) {
        const px_str *a = &argv[i];
        if (resp_arg_is(a, "nx"))
            flags |= Z_NX;
        else if (resp_arg_is(a, "xx"))
            flags |= Z_XX;
        else if (resp_arg_is(a, "ch"))
            flags |= Z_CH;
        else if (resp_arg_is(a, "incr"))
            flags |= Z_INCR;
        else if (resp_arg_is(a, "gt"))
            flags |= Z_GT;
        else if (resp_arg_is(a, "lt"))
            flags |= Z_LT;
        else
            break;
    }
    int elements = argc - i;
    if (elements == 0 || elements % 2) {
        resp_end_syntax(r);
        return;
    }
    if ((flags & Z_NX) && (flags & Z_XX)) {
        resp_end_error(r, "ERR XX and NX options at the same time are not compatible");
        return;
    }
    if (((flags & Z_GT) && (flags & Z_LT)) || ((flags & (Z_GT | Z_LT)) && (flags & Z_NX))) {
        resp_end_error(r, "ERR GT, LT, and/or NX options at the same time are not compatible");
        return;
    }
    if ((flags & Z_INCR) && elements > 2) {
        resp_end_error(r, "ERR INCR option supports a single increment-element pair");
        return;
    }
    double *scores;
    if (!parse_scores(r, argc, argv, i, &scores))
        return;
    zadd_start(r, argc, argv, i, flags, scores);
    free(scores);
}

static void cmd_zincrby(px_reply *r, int argc, const px_str *argv)
{
    double *scores;
    if (!parse_scores(r, argc, argv, 2, &scores))
        return;
    zadd_start(r, argc, argv, 2, Z_INCR, scores);
    free(scores);
}

/* ---- ZREM ---- */

typedef struct zrem_req {
    px_reply *r;
    long long count;
    members *ms;
} zrem_req;

static void on_zrem_removed(const momento_result *res, void *ud)
{
    zrem_req *q = ud;
    resp_end_int_or_failure(q->r, res, q->count);
    free(q);
}

static void on_zrem_read(const momento_result *res, void *ud)
{
    zrem_req *q = ud;
    if (resp_end_if_failed(q->r, res)) {
        free(q);
        return;
    }
    q->count = (long long)resp_count_hits(res);
    if (q->count == 0) {
        resp_end_int(q->r, 0);
        free(q);
        return;
    }
    px_backend *b = px_conn_backend(px_reply_conn(q->r));
    int rc = momento_sorted_set_remove_elements(b->client, b->cache, q->ms->key, q->ms->key_len,
                                                (const void *const *)q->ms->ps, q->ms->lens,
                                                q->ms->n, NULL, on_zrem_removed, q);
    if (!resp_submitted(q->r, rc))
        free(q);
}

static void cmd_zrem(px_reply *r, int argc, const px_str *argv)
{
    members *ms;
    zrem_req *q = members_new(sizeof(zrem_req), &ms, argc, argv, 2, 1);
    if (!q) {
        resp_end_error(r, "ERR out of memory");
        return;
    }
    q->r = r;
    q->ms = ms;
    px_backend *b = px_conn_backend(px_reply_conn(r));
    int rc = momento_sorted_set_get_scores(b->client, b->cache, ms->key, ms->key_len,
                                           (const void *const *)ms->ps, ms->lens, ms->n, NULL,
                                           on_zrem_read, q);
    if (!resp_submitted(r, rc))
        free(q);
}

/* ---- ZSCORE, ZMSCORE, ZRANK, ZREVRANK ---- */

static void on_zscore(const momento_result *res, void *ud)
{
    px_reply *r = ud;
    if (resp_end_if_failed(r, res))
        return;
    if (momento_result_is_hit(res))
        resp_double(r, momento_result_score(res));
    else
        resp_nil(r);
    px_reply_end(r);
}

static void cmd_zscore(px_reply *r, int argc, const px_str *argv)
{
    px_backend *b = px_conn_backend(px_reply_conn(r));
    int rc = b->co ? momento_coalescing_sorted_set_get_score(b->co, b->cache, argv[1].p, argv[1].n,
                                                             argv[2].p, argv[2].n, NULL, on_zscore,
                                                             r)
                   : momento_sorted_set_get_score(b->client, b->cache, argv[1].p, argv[1].n,
                                                  argv[2].p, argv[2].n, NULL, on_zscore, r);
    resp_submitted(r, rc);
}

static void zmscore_each(px_reply *r, const momento_result *res, size_t i)
{
    const momento_result *it = momento_result_is_hit(res) ? momento_result_item(res, i) : NULL;
    if (it && momento_result_is_hit(it))
        resp_double(r, momento_result_score(it));
    else
        resp_nil(r);
}

static void cmd_zmscore(px_reply *r, int argc, const px_str *argv)
{
    resp_read_many(r, argc, argv, MOMENTO_ITEM_TYPE_SORTED_SET, true, zmscore_each);
}

static void on_zrank(const momento_result *res, void *ud)
{
    px_reply *r = ud;
    if (resp_end_if_failed(r, res))
        return;
    if (momento_result_is_hit(res))
        resp_int(r, (long long)momento_result_int(res));
    else
        resp_nil(r);
    px_reply_end(r);
}

static void zrank(px_reply *r, const px_str *argv, momento_order order)
{
    px_backend *b = px_conn_backend(px_reply_conn(r));
    int rc = b->co ? momento_coalescing_sorted_set_get_rank(b->co, b->cache, argv[1].p, argv[1].n,
                                                            argv[2].p, argv[2].n, order, NULL,
                                                            on_zrank, r)
                   : momento_sorted_set_get_rank(b->client, b->cache, argv[1].p, argv[1].n,
                                                 argv[2].p, argv[2].n, order, NULL, on_zrank, r);
    resp_submitted(r, rc);
}

static void cmd_zrank(px_reply *r, int argc, const px_str *argv)
{
    zrank(r, argv, MOMENTO_ASCENDING);
}

static void cmd_zrevrank(px_reply *r, int argc, const px_str *argv)
{
    zrank(r, argv, MOMENTO_DESCENDING);
}

/* ---- ZCARD, ZCOUNT, and the empty answers that need only the type ---- */

static void cmd_zcard(px_reply *r, int argc, const px_str *argv)
{
    resp_length(r, &argv[1], MOMENTO_ITEM_TYPE_SORTED_SET, resp_on_length);
}

/* Redis's min and max as Momento's range; false with *empty when the range
 * holds nothing whatever the set (Momento refuses min above max). */
static bool to_range(const px_str *min, const px_str *max, momento_score_range *range,
                     bool *empty)
{
    double lo, hi;
    bool lo_ex, hi_ex;
    if (!arg_bound(min, &lo, &lo_ex) || !arg_bound(max, &hi, &hi_ex))
        return false;
    *empty = lo > hi || (lo == hi && (lo_ex || hi_ex));
    range->min.score = lo;
    range->min.kind = lo_ex ? MOMENTO_EXCLUSIVE : MOMENTO_INCLUSIVE;
    range->max.score = hi;
    range->max.kind = hi_ex ? MOMENTO_EXCLUSIVE : MOMENTO_INCLUSIVE;
    /* The whole line is no bound: the same elements, and no infinity on
     * the wire. */
    if (!lo_ex && lo == -INFINITY)
        range->min.kind = MOMENTO_UNBOUNDED;
    if (!hi_ex && hi == INFINITY)
        range->max.kind = MOMENTO_UNBOUNDED;
    return true;
}

static void cmd_zcount(px_reply *r, int argc, const px_str *argv)
{
    momento_score_range range;
    bool empty;
    if (!to_range(&argv[2], &argv[3], &range, &empty)) {
        resp_end_error(r, "ERR min or max is not a float");
        return;
    }
    if (empty) {
        resp_length(r, &argv[1], MOMENTO_ITEM_TYPE_SORTED_SET, resp_on_type_then_zero);
        return;
    }
    px_backend *b = px_conn_backend(px_reply_conn(r));
    int rc = b->co ? momento_coalescing_sorted_set_length_by_score_range(
                         b->co, b->cache, argv[1].p, argv[1].n, &range, NULL, resp_on_length, r)
                   : momento_sorted_set_length_by_score_range(b->client, b->cache, argv[1].p,
                                                              argv[1].n, &range, NULL, resp_on_length,
                                                              r);
    resp_submitted(r, rc);
}

/* ---- ZRANGE and its older forms ---- */

enum { RANGE_AUTO, RANGE_RANK, RANGE_SCORE, RANGE_LEX };
enum { DIR_AUTO, DIR_FORWARD, DIR_REVERSE };

typedef struct range_req {
    px_reply *r;
    bool withscores;
} range_req;

static void on_range(const momento_result *res, void *ud)
{
    range_req *q = ud;
    px_reply *r = q->r;
    bool withscores = q->withscores;
    free(q);
    if (resp_end_if_failed(r, res))
        return;
    size_t n = momento_result_is_hit(res) ? momento_result_item_count(res) : 0;
    resp_array(r, (long long)(withscores ? 2 * n : n));
    for (size_t i = 0; i < n; i++) {
        const momento_result *it = momento_result_item(res, i);
        resp_bulk_value(r, it);
        if (withscores)
            resp_double(r, momento_result_score(it));
    }
    px_reply_end(r);
}

static int32_t clamp32(long long v)
{
    return v < INT32_MIN ? INT32_MIN : v > INT32_MAX ? INT32_MAX : (int32_t)v;
}

/* Redis's ranks [start, stop] as Momento's slice [*s, *e) (as LRANGE's);
 * false when that slice is empty for any set (Momento refuses it). */
static bool to_slice(long long start, long long stop, int32_t *s, int32_t *e)
{
    *s = clamp32(start);
    *e = stop == -1 ? MOMENTO_END : clamp32(stop >= INT32_MAX ? INT32_MAX : stop + 1);
    return !((*e >= 0 && *s >= *e) || (*s < 0 && *e <= *s));
}

/* zrangeGenericCommand() of Redis 7.0: its options, their checks and
 * their order. `type` and `dir` are preset by ZREVRANGE, ZRANGEBYSCORE
 * and ZREVRANGEBYSCORE, which then refuse the keywords that would set
 * them again. */
static void zrange(px_reply *r, int argc, const px_str *argv, int type, int dir)
{
    bool withscores = false, limited = false;
    long long offset = 0, limit = -1;
    for (int j = 4; j < argc; j++) {
        const px_str *a = &argv[j];
        int left = argc - j - 1;
        if (resp_arg_is(a, "withscores")) {
            withscores = true;
        } else if (resp_arg_is(a, "limit") && left >= 2) {
            if (!resp_arg_ll(&argv[j + 1], &offset) || !resp_arg_ll(&argv[j + 2], &limit)) {
                resp_end_not_integer(r);
                return;
            }
            limited = true;
            j += 2;
        } else if (dir == DIR_AUTO && resp_arg_is(a, "rev")) {
            dir = DIR_REVERSE;
        } else if (type == RANGE_AUTO && resp_arg_is(a, "bylex")) {
            type = RANGE_LEX;
        } else if (type == RANGE_AUTO && resp_arg_is(a, "byscore")) {
            type = RANGE_SCORE;
        } else {
            resp_end_syntax(r);
            return;
        }
    }
    if (dir == DIR_AUTO)
        dir = DIR_FORWARD;
    if (type == RANGE_AUTO)
        type = RANGE_RANK;
    /* Redis checks the limit's count, not whether LIMIT was given. */
    if (limited && limit != -1 && type == RANGE_RANK) {
        resp_end_error(
            r, "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX");
        return;
    }
    if (withscores && type == RANGE_LEX) {
        resp_end_error(r, "ERR syntax error, WITHSCORES not supported in combination with BYLEX");
        return;
    }
    if (type == RANGE_LEX) {
        resp_end_error(r, "ERR momento-proxy does not support BYLEX: Momento has no "
                          "lexicographic ranges");
        return;
    }
    px_backend *b = px_conn_backend(px_reply_conn(r));
    momento_order order = dir == DIR_REVERSE ? MOMENTO_DESCENDING : MOMENTO_ASCENDING;
    range_req *q;
    int rc;
    if (type == RANGE_RANK) {
        long long start, stop;
        if (!resp_arg_ll(&argv[2], &start) || !resp_arg_ll(&argv[3], &stop)) {
            resp_end_not_integer(r);
            return;
        }
        int32_t s, e;
        if (!to_slice(start, stop, &s, &e)) {
            resp_length(r, &argv[1], MOMENTO_ITEM_TYPE_SORTED_SET, resp_on_type_then_empty);
            return;
        }
        if (!(q = resp_ctx_new(r, sizeof(*q))))
            return;
        q->r = r;
        q->withscores = withscores;
        rc = b->co ? momento_coalescing_sorted_set_fetch_by_rank(b->co, b->cache, argv[1].p,
                                                                 argv[1].n, s, e, order, NULL,
                                                                 on_range, q)
                   : momento_sorted_set_fetch_by_rank(b->client, b->cache, argv[1].p, argv[1].n,
                                                      s, e, order, NULL, on_range, q);
    } else {
        /* BYSCORE with REV takes max first. */
        const px_str *min = &argv[dir == DIR_REVERSE ? 3 : 2];
        const px_str *max = &argv[dir == DIR_REVERSE ? 2 : 3];
        momento_score_range range;
        bool empty;
        if (!to_range(min, max, &range, &empty)) {
            resp_end_error(r, "ERR min or max is not a float");
            return;
        }
        /* A negative offset, a count of 0 or an offset past any set
         * select nothing; a negative count is no limit. */
        if (empty || offset < 0 || limit == 0 || offset > UINT32_MAX) {
            resp_length(r, &argv[1], MOMENTO_ITEM_TYPE_SORTED_SET, resp_on_type_then_empty);
            return;
        }
        uint32_t count = limit < 0 || limit > UINT32_MAX ? 0 : (uint32_t)limit;
        if (!(q = resp_ctx_new(r, sizeof(*q))))
            return;
        q->r = r;
        q->withscores = withscores;
        rc = b->co ? momento_coalescing_sorted_set_fetch_by_score_range(
                         b->co, b->cache, argv[1].p, argv[1].n, &range, order, (uint32_t)offset,
                         count, NULL, on_range, q)
                   : momento_sorted_set_fetch_by_score_range(b->client, b->cache, argv[1].p,
                                                             argv[1].n, &range, order,
                                                             (uint32_t)offset, count, NULL,
                                                             on_range, q);
    }
    if (!resp_submitted(r, rc))
        free(q);
}

static void cmd_zrange(px_reply *r, int argc, const px_str *argv)
{
    zrange(r, argc, argv, RANGE_AUTO, DIR_AUTO);
}

static void cmd_zrevrange(px_reply *r, int argc, const px_str *argv)
{
    zrange(r, argc, argv, RANGE_RANK, DIR_REVERSE);
}

static void cmd_zrangebyscore(px_reply *r, int argc, const px_str *argv)
{
    zrange(r, argc, argv, RANGE_SCORE, DIR_FORWARD);
}

static void cmd_zrevrangebyscore(px_reply *r, int argc, const px_str *argv)
{
    zrange(r, argc, argv, RANGE_SCORE, DIR_REVERSE);
}

/* ---- ZUNIONSTORE ---- */

/* Redis replaces a destination of any type; Momento refuses to store
 * over a key of another type, with the same FAILED_PRECONDITION as for a
 * source of another type. On that failure the proxy finds which: a source
 * that is neither a sorted set nor a set is Redis's WRONGTYPE; a
 * destination of another type alone is deleted and the union sent again
 * (once). Redis also takes plain sets as sources (each member at score 1),
 * which Momento's union does not: with a set among the sources (or a weight
 * beyond a float, which Momento's union cannot carry) the proxy reads every
 * source and computes the union itself (union_local), then replaces the
 * destination. Those are separate calls, not one atomic step. */
typedef struct union_elem {
    char *member;
    size_t len;
    double score;
    size_t source; /* its source's index, then its place in Redis's order */
} union_elem;

/* What the local union may read of its sources (members, and per element
 * its score and bookkeeping), so that one command cannot grow the proxy
 * without bound: 100 sources of Momento's largest collection would be
 * 500 MB. Momento's own union is bounded by its item limit. */
#define UNION_READ_MAX (64u << 20)
#define UNION_ELEM_COST (sizeof(union_elem) + 16)

typedef struct union_req {
    px_reply *r;
    momento_aggregate agg;
    bool retried;
    bool dest_ok;        /* the destination's type is no obstacle */
    bool has_set;        /* a source is a plain set */
    bool force_local;    /* a weight Momento's float cannot carry */
    size_t checked;      /* sources whose type has been read */
    size_t n;
    momento_sorted_set_source *src;
    double *weight;      /* Redis's weights (src's are Momento's floats) */
    uint8_t *type;       /* each source's momento_item_type, once read */
    const char *dest;
    size_t dest_len;
    size_t *card;        /* union_local: each source's element count */
    union_elem *elems;   /* union_local: every source's elements read */
    size_t nelems, cap;
    size_t read_bytes;   /* what the elements cost, against UNION_READ_MAX */
    const char *opt_error; /* a WEIGHTS / AGGREGATE error, answered once
                              every source's type is seen to be no WRONGTYPE */
} union_req;

static void union_free(union_req *q)
{
    for (size_t i = 0; i < q->nelems; i++)
        free(q->elems[i].member);
    free(q->elems);
    free(q);
}

static void union_send(union_req *q);
static void union_check_next(union_req *q);
static void union_local_next(union_req *q, size_t i);

static bool is_zset_or_none(const momento_result *res)
{
    int t = momento_result_is_hit(res) ? momento_result_item_type(res) : MOMENTO_ITEM_TYPE_NONE;
    return t == MOMENTO_ITEM_TYPE_NONE || t == MOMENTO_ITEM_TYPE_SORTED_SET;
}

static void on_union_dest_deleted(const momento_result *res, void *ud)
{
    union_req *q = ud;
    if (resp_end_if_failed(q->r, res)) {
        union_free(q);
        return;
    }
    q->retried = true;
    union_send(q);
}

static void on_union_source_type(const momento_result *res, void *ud)
{
    union_req *q = ud;
    if (resp_end_if_failed(q->r, res)) {
        union_free(q);
        return;
    }
    int t = momento_result_is_hit(res) ? momento_result_item_type(res) : MOMENTO_ITEM_TYPE_NONE;
    if (t != MOMENTO_ITEM_TYPE_NONE && t != MOMENTO_ITEM_TYPE_SORTED_SET &&
        t != MOMENTO_ITEM_TYPE_SET) {
        resp_end_wrongtype(q->r);
        union_free(q);
        return;
    }
    q->type[q->checked] = (uint8_t)t;
    q->has_set |= t == MOMENTO_ITEM_TYPE_SET;
    q->checked++;
    union_check_next(q);
}

/* The sources' types, one by one (a failure's path only); then, with a
 * plain set among them, the union is computed here; otherwise, the
 * destination being of another type, it is replaced and the union sent
 * again. */
static void union_check_next(union_req *q)
{
    px_backend *b = px_conn_backend(px_reply_conn(q->r));
    int rc;
    if (q->checked < q->n) {
        rc = momento_item_get_type(b->client, b->cache, q->src[q->checked].name,
                                   q->src[q->checked].name_len, NULL, on_union_source_type, q);
    } else if (q->opt_error) {
        resp_end_error(q->r, q->opt_error);
        union_free(q);
        return;
    } else if (q->has_set || q->force_local) {
        union_local_next(q, 0);
        return;
    } else if (q->dest_ok) {
        /* Every source a sorted set, the destination too: Momento's
         * refusal was not about types after all - a writer changed one
         * between the calls. Redis would have seen the new types. */
        resp_end_wrongtype(q->r);
        union_free(q);
        return;
    } else {
        rc = momento_delete(b->client, b->cache, q->dest, q->dest_len, NULL,
                            on_union_dest_deleted, q);
    }
    if (!resp_submitted(q->r, rc))
        union_free(q);
}

static void on_union_dest_type(const momento_result *res, void *ud)
{
    union_req *q = ud;
    if (resp_end_if_failed(q->r, res)) {
        union_free(q);
        return;
    }
    bool dest_is_source = false;
    for (size_t i = 0; i < q->n && !dest_is_source; i++)
        dest_is_source = q->src[i].name_len == q->dest_len &&
                         memcmp(q->src[i].name, q->dest, q->dest_len) == 0;
    /* A destination that is a sorted set, nothing, or one of the sources
     * is not what Momento refused: a source is. */
    q->dest_ok = is_zset_or_none(res) || dest_is_source;
    q->checked = 0;
    union_check_next(q);
}

static void on_union(const momento_result *res, void *ud)
{
    union_req *q = ud;
    if (momento_result_error(res) == MOMENTO_OK) {
        resp_end_int(q->r, (long long)momento_result_int(res));
        union_free(q);
        return;
    }
    if (!resp_is_wrongtype(res) || q->retried) {
        resp_end_failure(q->r, res);
        union_free(q);
        return;
    }
    px_backend *b = px_conn_backend(px_reply_conn(q->r));
    int rc = momento_item_get_type(b->client, b->cache, q->dest, q->dest_len, NULL,
                                   on_union_dest_type, q);
    if (!resp_submitted(q->r, rc))
        union_free(q);
}

static void union_send(union_req *q)
{
    px_backend *b = px_conn_backend(px_reply_conn(q->r));
    int rc = momento_sorted_set_union_store(b->client, b->cache, q->dest, q->dest_len, q->src,
                                            q->n, q->agg, b->default_ttl_ms, NULL, on_union, q);
    if (!resp_submitted(q->r, rc))
        union_free(q);
}

/* ---- ZUNIONSTORE with plain sets: the union computed here ---- */

/* 0, or -1 out of memory, or 1 past UNION_READ_MAX. */
static int union_add(union_req *q, size_t source, const void *m, size_t n, double score)
{
    q->read_bytes += n + UNION_ELEM_COST;
    if (q->read_bytes > UNION_READ_MAX)
        return 1;
    union_elem *e = px_grow(q->elems, q->nelems, &q->cap, sizeof(*e), 64);
    if (!e)
        return -1;
    q->elems = e;
    char *copy = malloc(n ? n : 1);
    if (!copy)
        return -1;
    if (n)
        memcpy(copy, m, n);
    /* zunionInterDiffGenericCommand(): a weighted score that is NaN
     * (inf times 0) counts as 0. */
    double w = q->weight[source] * score;
    q->elems[q->nelems++] = (union_elem){copy, n, isnan(w) ? 0 : w, source};
    return 0;
}

static void on_union_source_read(const momento_result *res, void *ud)
{
    union_req *q = ud;
    if (resp_end_if_failed(q->r, res)) {
        union_free(q);
        return;
    }
    size_t i = q->checked; /* the source being read */
    bool set = q->type[i] == MOMENTO_ITEM_TYPE_SET;
    size_t count = momento_result_is_hit(res) ? momento_result_item_count(res) : 0;
    q->card[i] = count;
    for (size_t k = 0; k < count; k++) {
        const momento_result *it = momento_result_item(res, k);
        size_t n;
        const void *m = momento_result_value(it, &n);
        int rc = union_add(q, i, m, n, set ? 1.0 : momento_result_score(it));
        if (rc != 0) {
            /* Nothing has been written: the destination is as it was. */
            if (rc < 0)
                resp_error(q->r, "ERR out of memory");
            else
                resp_errorf(q->r, "ERR momento-proxy: ZUNIONSTORE with a plain set reads at "
                                  "most %u MiB of its sources", UNION_READ_MAX >> 20);
            px_reply_end(q->r);
            union_free(q);
            return;
        }
    }
    union_local_next(q, i + 1);
}

static int elem_cmp(const void *a, const void *b)
{
    const union_elem *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = n ? memcmp(x->member, y->member, n) : 0;
    if (c)
        return c;
    if (x->len != y->len)
        return x->len < y->len ? -1 : 1;
    return x->source < y->source ? -1 : x->source > y->source;
}

/* zunionInterAggregate(): SUM (an inf minus inf is 0), MIN, MAX. */
static double aggregate(momento_aggregate agg, double acc, double v)
{
    if (agg == MOMENTO_AGGREGATE_MIN)
        return v < acc ? v : acc;
    if (agg == MOMENTO_AGGREGATE_MAX)
        return v > acc ? v : acc;
    double sum = acc + v;
    return isnan(sum) ? 0 : sum;
}

static void on_union_local_put(const momento_result *res, void *ud)
{
    union_req *q = ud;
    resp_end_int_or_failure(q->r, res, (long long)q->nelems);
    union_free(q);
}

/* The destination is gone: the union goes in its place. */
static void on_union_local_cleared(const momento_result *res, void *ud)
{
    union_req *q = ud;
    if (!resp_store_cleared(q->r, res, q->nelems)) {
        union_free(q);
        return;
    }
    const void **values = NULL;
    size_t *lens = NULL;
    double *scores = malloc(q->nelems * sizeof(*scores));
    int rc = MOMENTO_ERR_NO_MEMORY;
    if (scores && resp_arrays_new(q->nelems, &values, &lens)) {
        for (size_t i = 0; i < q->nelems; i++) {
            values[i] = q->elems[i].member;
            lens[i] = q->elems[i].len;
            scores[i] = q->elems[i].score;
        }
        px_backend *b = px_conn_backend(px_reply_conn(q->r));
        momento_collection_ttl t;
        /* The call copies its arguments before it returns. */
        rc = momento_sorted_set_put_elements(b->client, b->cache, q->dest, q->dest_len, values,
                                             lens, scores, q->nelems, replace_ttl(q->r, &t), NULL,
                                             on_union_local_put, q);
    }
    free(values);
    free(lens);
    free(scores);
    if (!resp_submitted(q->r, rc))
        union_free(q);
}

/* Reads source i onwards (a missing one has nothing to read); once all are
 * read, merges equal members, aggregating in source order, and replaces the
 * destination. */
static void union_local_next(union_req *q, size_t i)
{
    px_backend *b = px_conn_backend(px_reply_conn(q->r));
    while (i < q->n && q->type[i] == MOMENTO_ITEM_TYPE_NONE)
        i++;
    int rc;
    if (i < q->n) {
        q->checked = i;
        const momento_sorted_set_source *s = &q->src[i];
        if (q->type[i] == MOMENTO_ITEM_TYPE_SET)
            rc = momento_set_fetch(b->client, b->cache, s->name, s->name_len, NULL,
                                   on_union_source_read, q);
        else
            rc = momento_sorted_set_fetch_by_rank(b->client, b->cache, s->name, s->name_len, 0,
                                                  MOMENTO_END, MOMENTO_ASCENDING, NULL,
                                                  on_union_source_read, q);
    } else {
        /* zunionInterDiffGenericCommand() sorts the sources by their size,
         * smallest first, and aggregates in that order (which a SUM's
         * rounding, or inf + -inf, can tell). Ties keep argument order. */
        size_t *rank = malloc(q->n * sizeof(*rank));
        if (!rank) {
            resp_end_error(q->r, "ERR out of memory");
            union_free(q);
            return;
        }
        for (size_t k = 0; k < q->n; k++) {
            rank[k] = 0;
            for (size_t j = 0; j < q->n; j++)
                rank[k] += q->card[j] < q->card[k] || (q->card[j] == q->card[k] && j < k);
        }
        for (size_t k = 0; k < q->nelems; k++)
            q->elems[k].source = rank[q->elems[k].source];
        free(rank);
        if (q->nelems > 1)
            qsort(q->elems, q->nelems, sizeof(*q->elems), elem_cmp);
        size_t out = 0;
        for (size_t k = 0; k < q->nelems; k++) {
            union_elem *e = &q->elems[k];
            if (out > 0 && q->elems[out - 1].len == e->len &&
                memcmp(q->elems[out - 1].member, e->member, e->len) == 0) {
                q->elems[out - 1].score = aggregate(q->agg, q->elems[out - 1].score, e->score);
                free(e->member);
            } else {
                q->elems[out++] = *e;
            }
        }
        q->nelems = out;
        /* Refused before anything is deleted: a union Momento would not
         * store (its item limit, roughly: each member and its score). */
        size_t bytes = q->dest_len;
        for (size_t k = 0; k < q->nelems; k++)
            bytes += q->elems[k].len + sizeof(double);
        if (!resp_store_fits(q->r, "union", bytes)) {
            union_free(q);
            return;
        }
        rc = momento_delete(b->client, b->cache, q->dest, q->dest_len, NULL,
                            on_union_local_cleared, q);
    }
    if (!resp_submitted(q->r, rc))
        union_free(q);
}

static void cmd_zunionstore(px_reply *r, int argc, const px_str *argv)
{
    long long nkeys;
    if (!resp_arg_ll(&argv[2], &nkeys)) {
        resp_end_not_integer(r);
        return;
    }
    if (nkeys < 1) {
        resp_end_error(r, "ERR at least 1 input key is needed for 'zunionstore' command");
        return;
    }
    if (nkeys > argc - 3) {
        resp_end_syntax(r);
        return;
    }
    size_t n = (size_t)nkeys, bytes = argv[1].n;
    for (size_t i = 0; i < n; i++)
        bytes += argv[3 + i].n;
    union_req *q = calloc(1, sizeof(*q) +
                                 n * (sizeof(momento_sorted_set_source) + sizeof(double) +
                                      sizeof(size_t) + 1) +
                                 bytes + 1);
    if (!q) {
        resp_end_error(r, "ERR out of memory");
        return;
    }
    q->r = r;
    q->n = n;
    q->src = (momento_sorted_set_source *)(q + 1);
    q->weight = (double *)(q->src + n);
    q->card = (size_t *)(q->weight + n);
    q->type = (uint8_t *)(q->card + n);
    char *p = (char *)(q->type + n);
    memcpy(p, argv[1].p, argv[1].n);
    q->dest = p;
    q->dest_len = argv[1].n;
    p += argv[1].n;
    for (size_t i = 0; i < n; i++) {
        memcpy(p, argv[3 + i].p, argv[3 + i].n);
        q->src[i].name = p;
        q->src[i].name_len = argv[3 + i].n;
        q->src[i].weight = 1;
        q->weight[i] = 1;
        p += argv[3 + i].n;
    }
    q->agg = MOMENTO_AGGREGATE_SUM;
    for (int j = 3 + (int)n; j < argc;) {
        int left = argc - j;
        if (left >= (int)n + 1 && resp_arg_is(&argv[j], "weights")) {
            j++;
            for (size_t i = 0; i < n; i++, j++) {
                double w;
                if (!resp_arg_double(&argv[j], &w)) {
                    q->opt_error = "ERR weight value is not a float";
                    break;
                }
                /* Momento's weights are floats: 0.1 is 0.100000001490116. */
                q->src[i].weight = (float)w;
                q->weight[i] = w;
                q->force_local |= !isfinite(q->src[i].weight);
            }
        } else if (left >= 2 && resp_arg_is(&argv[j], "aggregate")) {
            const px_str *a = &argv[j + 1];
            if (resp_arg_is(a, "sum")) {
                q->agg = MOMENTO_AGGREGATE_SUM;
            } else if (resp_arg_is(a, "min")) {
                q->agg = MOMENTO_AGGREGATE_MIN;
            } else if (resp_arg_is(a, "max")) {
                q->agg = MOMENTO_AGGREGATE_MAX;
            } else {
                q->opt_error = "ERR syntax error";
            }
            j += 2;
        } else {
            q->opt_error = "ERR syntax error";
        }
        if (q->opt_error) {
            /* Redis looks the sources up before it reads the options: a
             * source of another type is WRONGTYPE whatever follows. Their
             * types are read on this path only, so a valid command costs
             * nothing more. */
            q->dest_ok = true;
            union_check_next(q);
            return;
        }
    }
    if (q->force_local) {
        /* Redis takes any double weight; Momento's union a finite float:
         * read the types, then compute the union here. */
        q->dest_ok = true;
        union_check_next(q);
        return;
    }
    union_send(q);
}

const resp_cmd resp_zset_cmds[] = {
    {"zadd", -4, cmd_zadd},
    {"zincrby", 4, cmd_zincrby},
    {"zrem", -3, cmd_zrem},
    {"zscore", 3, cmd_zscore},
    {"zmscore", -3, cmd_zmscore},
    {"zrank", 3, cmd_zrank},
    {"zrevrank", 3, cmd_zrevrank},
    {"zcard", 2, cmd_zcard},
    {"zcount", 4, cmd_zcount},
    {"zrange", -4, cmd_zrange},
    {"zrevrange", -4, cmd_zrevrange},
    {"zrangebyscore", -4, cmd_zrangebyscore},
    {"zrevrangebyscore", -4, cmd_zrevrangebyscore},
    {"zunionstore", -4, cmd_zunionstore},
    {NULL, 0, NULL},
};
