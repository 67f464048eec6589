/* RESP: the set commands - SADD, SREM, SMEMBERS, SISMEMBER, SMISMEMBER,
 * SCARD, SPOP and SRANDMEMBER (with their counts) - on Momento's sets.
 *
 * Momento's set writes do not say how many elements they added or
 * removed, and SADD and SREM answer that: they ask which elements are
 * members first, then write. Two calls, not one atomic step: a writer in
 * between can make the count stale (never the set). */
#include "resp.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int cmp_str(const void *a, const void *b)
{
    const px_str *x = a, *y = b;
    size_t n = x->n < y->n ? x->n : y->n;
    int c = n ? memcmp(x->p, y->p, n) : 0;
    if (c)
        return c;
    return x->n < y->n ? -1 : x->n > y->n ? 1 : 0;
}

/* A command's key and its distinct elements (SADD s a a adds one),
 * copied for the call after the first. */
typedef struct sreq {
    px_reply *r;
    const char *key;
    size_t key_len;
    size_t n;
    const void **els;
    size_t *lens;
    long long count;
} sreq;

static sreq *sreq_new(px_reply *r, int argc, const px_str *argv)
{
    size_t m = (size_t)argc - 2;
    px_str *sorted = malloc(m * sizeof(*sorted));
    if (!sorted)
        return NULL;
    memcpy(sorted, argv + 2, m * sizeof(*sorted));
    qsort(sorted, m, sizeof(*sorted), cmp_str);
    size_t n = 0, bytes = argv[1].n;
    for (size_t i = 0; i < m; i++) {
        if (n > 0 && cmp_str(&sorted[n - 1], &sorted[i]) == 0)
            continue;
        sorted[n++] = sorted[i];
        bytes += sorted[i].n;
    }
    sreq *q = calloc(1, sizeof(*q) + n * (sizeof(void *) + sizeof(size_t)) + bytes + 1);
    if (!q) {
        free(sorted);
        return NULL;
    }
    q->r = r;
    q->n = n;
    q->els = (const void **)(q + 1);
    q->lens = (size_t *)(q->els + n);
    char *p = (char *)(q->lens + n);
    memcpy(p, argv[1].p, argv[1].n);
    q->key = p;
    q->key_len = argv[1].n;
    p += argv[1].n;
    for (size_t i = 0; i < n; i++) {
        memcpy(p, sorted[i].p, sorted[i].n);
        q->els[i] = p;
        q->lens[i] = sorted[i].n;
        p += sorted[i].n;
    }
    free(sorted);
    return q;
}

static void sreq_end_int(sreq *q, long long v)
{
    resp_int(q->r, v);
    px_reply_end(q->r);
    free(q);
}

/* ---- SADD, SREM ---- */

static void on_written(const momento_result *res, void *ud)
{
    sreq *q = ud;
    if (momento_result_error(res) != MOMENTO_OK) {
        resp_end_failure(q->r, res);
        free(q);
        return;
    }
    sreq_end_int(q, q->count);
}

/* Which elements are members: SADD counts the others, SREM these. */
static void on_members_read(const momento_result *res, bool add, sreq *q)
{
    if (momento_result_error(res) != MOMENTO_OK) {
        resp_end_failure(q->r, res);
        free(q);
        return;
    }
    long long members = 0;
    if (momento_result_is_hit(res))
        for (size_t i = 0; i < q->n; i++)
            if (momento_result_exists(res, i) == 1)
                members++;
    q->count = add ? (long long)q->n - members : members;
    if (q->count == 0) {
        /* Nothing changes, as in Redis, which writes nothing either. */
        sreq_end_int(q, 0);
        return;
    }
    px_backend *b = px_conn_backend(px_reply_conn(q->r));
    const void *const *els = (const void *const *)q->els;
    momento_collection_ttl t;
    resp_keep_ttl(q->r, &t);
    int rc = add ? momento_set_add_elements(b->client, b->cache, q->key, q->key_len, els, q->lens,
                                            q->n, &t, NULL, on_written, q)
                 : momento_set_remove_elements(b->client, b->cache, q->key, q->key_len, els,
                                               q->lens, q->n, NULL, on_written, q);
    if (!resp_submitted(q->r, rc))
        free(q);
}

static void on_sadd_read(const momento_result *res, void *ud)
{
    on_members_read(res, true, ud);
}

static void on_srem_read(const momento_result *res, void *ud)
{
    on_members_read(res, false, ud);
}

static void add_or_remove(px_reply *r, int argc, const px_str *argv, momento_callback cb)
{
    sreq *q = sreq_new(r, argc, argv);
    if (!q) {
        resp_end_error(r, "ERR out of memory");
        return;
    }
    /* Not through the coalescer: a read that decides a write should not
     * share another command's answer. */
    px_backend *b = px_conn_backend(px_reply_conn(r));
    int rc = momento_set_contains_elements(b->client, b->cache, q->key, q->key_len,
                                           (const void *const *)q->els, q->lens, q->n, NULL, cb,
                                           q);
    if (!resp_submitted(r, rc))
        free(q);
}

static void cmd_sadd(px_reply *r, int argc, const px_str *argv)
{
    add_or_remove(r, argc, argv, on_sadd_read);
}

static void cmd_srem(px_reply *r, int argc, const px_str *argv)
{
    add_or_remove(r, argc, argv, on_srem_read);
}

/* ---- SISMEMBER, SMISMEMBER ---- */

static void on_ismember(const momento_result *res, void *ud)
{
    px_reply *r = ud;
    if (momento_result_error(res) != MOMENTO_OK) {
        resp_end_failure(r, res);
        return;
    }
    resp_int(r, momento_result_is_hit(res) && momento_result_exists(res, 0) == 1 ? 1 : 0);
    px_reply_end(r);
}

typedef struct mismember_req {
    px_reply *r;
    size_t n;
} mismember_req;

static void on_mismember(const momento_result *res, void *ud)
{
    mismember_req *q = ud;
    px_reply *r = q->r;
    size_t n = q->n;
    free(q);
    if (momento_result_error(res) != MOMENTO_OK) {
        resp_end_failure(r, res);
        return;
    }
    bool found = momento_result_is_hit(res);
    resp_array(r, (long long)n);
    for (size_t i = 0; i < n; i++)
        resp_int(r, found && momento_result_exists(res, i) == 1 ? 1 : 0);
    px_reply_end(r);
}

static int contains(px_reply *r, const px_str *key, const px_str *els, size_t n,
                    momento_callback cb, void *ud)
{
    px_backend *b = px_conn_backend(px_reply_conn(r));
    const void **ps = malloc(n * sizeof(*ps));
    size_t *lens = malloc(n * sizeof(*lens));
    if (!ps || !lens) {
        free(ps);
        free(lens);
        return MOMENTO_ERR_NO_MEMORY;
    }
    for (size_t i = 0; i < n; i++) {
        ps[i] = els[i].p;
        lens[i] = els[i].n;
    }
    const void *const *e = (const void *const *)ps;
    int rc = b->co ? momento_coalescing_set_contains_elements(b->co, b->cache, key->p, key->n, e,
                                                              lens, n, NULL, cb, ud)
                   : momento_set_contains_elements(b->client, b->cache, key->p, key->n, e, lens,
                                                   n, NULL, cb, ud);
    free(ps);
    free(lens);
    return rc;
}

static void cmd_sismember(px_reply *r, int argc, const px_str *argv)
{
    resp_submitted(r, contains(r, &argv[1], &argv[2], 1, on_ismember, r));
}

static void cmd_smismember(px_reply *r, int argc, const px_str *argv)
{
    mismember_req *q = malloc(sizeof(*q));
    if (!q) {
        resp_end_error(r, "ERR out of memory");
        return;
    }
    q->r = r;
    q->n = (size_t)argc - 2;
    if (!resp_submitted(r, contains(r, &argv[1], &argv[2], q->n, on_mismember, q)))
        free(q);
}

/* ---- SMEMBERS, SCARD ---- */

/* The elements of a HIT as an array (none for a MISS). */
static void reply_elements(px_reply *r, const momento_result *res)
{
    size_t n = momento_result_is_hit(res) ? momento_result_item_count(res) : 0;
    resp_array(r, (long long)n);
    for (size_t i = 0; i < n; i++) {
        size_t len;
        const void *v = momento_result_value(momento_result_item(res, i), &len);
        resp_bulk(r, v, len);
    }
}

static void on_smembers(const momento_result *res, void *ud)
{
    px_reply *r = ud;
    if (momento_result_error(res) != MOMENTO_OK) {
        resp_end_failure(r, res);
        return;
    }
    reply_elements(r, res);
    px_reply_end(r);
}

static void cmd_smembers(px_reply *r, int argc, const px_str *argv)
{
    px_backend *b = px_conn_backend(px_reply_conn(r));
    int rc = b->co ? momento_coalescing_set_fetch(b->co, b->cache, argv[1].p, argv[1].n, NULL,
                                                  on_smembers, r)
                   : momento_set_fetch(b->client, b->cache, argv[1].p, argv[1].n, NULL,
                                       on_smembers, r);
    resp_submitted(r, rc);
}

static void length(px_reply *r, const px_str *key, momento_callback cb)
{
    px_backend *b = px_conn_backend(px_reply_conn(r));
    int rc = b->co ? momento_coalescing_set_length(b->co, b->cache, key->p, key->n, NULL, cb, r)
                   : momento_set_length(b->client, b->cache, key->p, key->n, NULL, cb, r);
    resp_submitted(r, rc);
}

static void cmd_scard(px_reply *r, int argc, const px_str *argv)
{
    length(r, &argv[1], resp_on_length);
}

/* ---- SPOP, SRANDMEMBER ---- */

/* One element (the form without a count): bulk, or nil for no set. */
static void on_one(const momento_result *res, void *ud)
{
    px_reply *r = ud;
    if (momento_result_error(res) != MOMENTO_OK) {
        resp_end_failure(r, res);
        return;
    }
    if (momento_result_is_hit(res) && momento_result_item_count(res) > 0) {
        size_t len;
        const void *v = momento_result_value(momento_result_item(res, 0), &len);
        resp_bulk(r, v, len);
    } else {
        resp_nil(r);
    }
    px_reply_end(r);
}

static void cmd_spop(px_reply *r, int argc, const px_str *argv)
{
    px_backend *b = px_conn_backend(px_reply_conn(r));
    if (argc > 3) {
        resp_end_syntax(r);
        return;
    }
    long long count = 1;
    if (argc == 3) {
        if (!resp_arg_ll(&argv[2], &count) || count < 0) {
            resp_end_error(r, "ERR value is out of range, must be positive");
            return;
        }
        if (count == 0) {
            length(r, &argv[1], resp_on_type_then_empty);
            return;
        }
    }
    uint32_t n = count > UINT32_MAX ? UINT32_MAX : (uint32_t)count;
    int rc = momento_set_pop(b->client, b->cache, argv[1].p, argv[1].n, n, NULL,
                             argc == 3 ? on_smembers : on_one, r);
    resp_submitted(r, rc);
}

/* SRANDMEMBER key -n: n elements that may repeat. Momento samples
 * distinct elements; the n picks are drawn, with repeats, from a sample of
 * n of them (the whole set when it is smaller), so each pick is any
 * element with equal chance, as in Redis, though picks are not
 * independent of each other in a set larger than n. */
typedef struct rand_req {
    px_reply *r;
    long long n;
} rand_req;

static uint64_t rand_state;

static uint64_t next_rand(void)
{
    if (rand_state == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        rand_state = ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)ts.tv_sec ^ (uint64_t)getpid();
        rand_state |= 1;
    }
    /* xorshift64*: enough for picking elements, and the proxy's only
     * thread owns it. */
    rand_state ^= rand_state >> 12;
    rand_state ^= rand_state << 25;
    rand_state ^= rand_state >> 27;
    return rand_state * 2685821657736338717ULL;
}

static void on_sample_repeats(const momento_result *res, void *ud)
{
    rand_req *q = ud;
    px_reply *r = q->r;
    long long want = q->n;
    free(q);
    if (momento_result_error(res) != MOMENTO_OK) {
        resp_end_failure(r, res);
        return;
    }
    size_t have = momento_result_is_hit(res) ? momento_result_item_count(res) : 0;
    if (have == 0) {
        resp_array(r, 0);
        px_reply_end(r);
        return;
    }
    resp_array(r, want);
    for (long long i = 0; i < want; i++) {
        size_t len;
        const momento_result *it = momento_result_item(res, (size_t)(next_rand() % have));
        const void *v = momento_result_value(it, &len);
        resp_bulk(r, v, len);
    }
    px_reply_end(r);
}

static void cmd_srandmember(px_reply *r, int argc, const px_str *argv)
{
    px_backend *b = px_conn_backend(px_reply_conn(r));
    if (argc > 3) {
        resp_end_syntax(r);
        return;
    }
    if (argc == 2) {
        resp_submitted(r, momento_set_sample(b->client, b->cache, argv[1].p, argv[1].n, 1, NULL,
                                             on_one, r));
        return;
    }
    long long count;
    if (!resp_arg_ll(&argv[2], &count)) {
        resp_end_not_integer(r);
        return;
    }
    if (count == INT64_MIN) {
        resp_end_error(r, "ERR value is out of range, value must between -9223372036854775807 "
                          "and 9223372036854775807");
        return;
    }
    if (count == 0) {
        length(r, &argv[1], resp_on_type_then_empty);
        return;
    }
    if (count > 0) {
        resp_submitted(r, momento_set_sample(b->client, b->cache, argv[1].p, argv[1].n,
                                             (uint64_t)count, NULL, on_smembers, r));
        return;
    }
    rand_req *q = malloc(sizeof(*q));
    if (!q) {
        resp_end_error(r, "ERR out of memory");
        return;
    }
    q->r = r;
    q->n = -count;
    int rc = momento_set_sample(b->client, b->cache, argv[1].p, argv[1].n, (uint64_t)q->n, NULL,
                                on_sample_repeats, q);
    if (!resp_submitted(r, rc))
        free(q);
}

const resp_cmd resp_set_cmds[] = {
    {"sadd", -3, cmd_sadd},
    {"srem", -3, cmd_srem},
    {"smembers", 2, cmd_smembers},
    {"sismember", 3, cmd_sismember},
    {"smismember", -3, cmd_smismember},
    {"scard", 2, cmd_scard},
    {"spop", -2, cmd_spop},
    {"srandmember", -2, cmd_srandmember},
    {NULL, 0, NULL},
};
