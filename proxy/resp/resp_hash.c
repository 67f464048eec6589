/* RESP: the hash commands - HSET, HMSET, HSETNX, HGET, HMGET, HGETALL,
 * HKEYS, HVALS, HDEL, HINCRBY, HLEN, HEXISTS - on Momento's dictionaries.
 *
 * Momento's dictionary writes say nothing of what was there before, and
 * Redis's replies do (HSET counts new fields, HDEL removed ones, HSETNX
 * whether it wrote). Those commands read the fields first and then write:
 * two calls, not one atomic step, so a writer that comes between them can
 * make the count (or HSETNX's decision) stale. The write itself is never
 * lost or doubled. */
#include "resp/resp.h"

#include <stdlib.h>
#include <string.h>

/* A command's key, and the distinct fields it names (the last value of a
 * field named twice), copied for the calls after the first. */
typedef struct hreq {
    px_reply *r;
    const char *key;
    size_t key_len;
    size_t n;              /* distinct fields */
    const void **fields;
    size_t *field_lens;
    const void **values;   /* NULL for commands without values */
    size_t *value_lens;
    long long count;
} hreq;

typedef struct field_ref {
    px_str s;
    int pos;   /* the argument the value comes from: the last naming it */
    int first; /* the first argument naming it, for the order of writes */
} field_ref;

static int cmp_first(const void *a, const void *b)
{
    return ((const field_ref *)a)->first - ((const field_ref *)b)->first;
}

static int cmp_field_ref(const void *a, const void *b)
{
    const field_ref *x = a, *y = b;
    size_t n = x->s.n < y->s.n ? x->s.n : y->s.n;
    int c = n ? memcmp(x->s.p, y->s.p, n) : 0;
    if (c)
        return c;
    if (x->s.n != y->s.n)
        return x->s.n < y->s.n ? -1 : 1;
    return x->pos - y->pos;
}

/* Copies argv[1] (the key) and the fields argv[first], argv[first +
 * stride], ... with, for stride 2, the value after each. A field named more
 * than once is kept once, with its last value, as Redis applies them in
 * order. NULL when out of memory, r then ended with that error. */
static hreq *hreq_new(px_reply *r, int argc, const px_str *argv, int first, int stride)
{
    size_t m = (size_t)(argc - first) / (size_t)stride;
    field_ref *refs = malloc((m ? m : 1) * sizeof(*refs));
    if (!refs) {
        resp_end_error(r, "ERR out of memory");
        return NULL;
    }
    for (size_t i = 0; i < m; i++) {
        refs[i].s = argv[first + (int)i * stride];
        refs[i].pos = first + (int)i * stride;
        refs[i].first = refs[i].pos;
    }
    qsort(refs, m, sizeof(*refs), cmp_field_ref);
    /* After sorting, equal fields sit together, the last one last. They
     * are written in the order they were first named, as Redis adds them
     * (HGETALL lists a small hash in that order). */
    size_t n = 0, bytes = argv[1].n;
    int run_first = -1;
    for (size_t i = 0; i < m; i++) {
        if (run_first < 0)
            run_first = refs[i].first;
        if (i + 1 < m && refs[i].s.n == refs[i + 1].s.n &&
            memcmp(refs[i].s.p, refs[i + 1].s.p, refs[i].s.n) == 0)
            continue;
        refs[n] = refs[i];
        refs[n++].first = run_first;
        run_first = -1;
        bytes += refs[i].s.n + (stride == 2 ? argv[refs[i].pos + 1].n : 0);
    }
    qsort(refs, n, sizeof(*refs), cmp_first);
    size_t arrays = stride == 2 ? 2 : 1;
    hreq *q = calloc(1, sizeof(*q) + arrays * n * (sizeof(void *) + sizeof(size_t)) + bytes + 1);
    if (!q) {
        free(refs);
        resp_end_error(r, "ERR out of memory");
        return NULL;
    }
    q->r = r;
    q->n = n;
    q->fields = (const void **)(q + 1);
    q->field_lens = (size_t *)(q->fields + n);
    char *p;
    if (stride == 2) {
        q->values = (const void **)(q->field_lens + n);
        q->value_lens = (size_t *)(q->values + n);
        p = (char *)(q->value_lens + n);
    } else {
        p = (char *)(q->field_lens + n);
    }
    memcpy(p, argv[1].p, argv[1].n);
    q->key = p;
    q->key_len = argv[1].n;
    p += argv[1].n;
    for (size_t i = 0; i < n; i++) {
        memcpy(p, refs[i].s.p, refs[i].s.n);
        q->fields[i] = p;
        q->field_lens[i] = refs[i].s.n;
        p += refs[i].s.n;
        if (stride == 2) {
            const px_str *v = &argv[refs[i].pos + 1];
            memcpy(p, v->p, v->n);
            q->values[i] = p;
            q->value_lens[i] = v->n;
            p += v->n;
        }
    }
    free(refs);
    return q;
}

static bool hreq_submitted(hreq *q, int rc)
{
    if (resp_submitted(q->r, rc))
        return true;
    free(q);
    return false;
}

static void hreq_end_int(hreq *q, long long v)
{
    resp_end_int(q->r, v);
    free(q);
}

/* ---- HSET, HMSET ---- */

static void on_hset_written(const momento_result *res, void *ud)
{
    hreq *q = ud;
    if (resp_end_if_failed(q->r, res)) {
        free(q);
        return;
    }
    if (q->count < 0)
        resp_ok(q->r);
    else
        resp_int(q->r, q->count);
    px_reply_end(q->r);
    free(q);
}

static void hset_write(hreq *q)
{
    px_backend *b = px_conn_backend(px_reply_conn(q->r));
    momento_collection_ttl t;
    int rc = momento_dictionary_set_fields(
        b->client, b->cache, q->key, q->key_len, (const void *const *)q->fields, q->field_lens,
        (const void *const *)q->values, q->value_lens, q->n, resp_keep_ttl(q->r, &t), NULL,
        on_hset_written, q);
    hreq_submitted(q, rc);
}

/* HSET's read: the fields that exist already are not new. */
static void on_hset_read(const momento_result *res, void *ud)
{
    hreq *q = ud;
    if (resp_end_if_failed(q->r, res)) {
        free(q);
        return;
    }
    q->count = (long long)(q->n - resp_count_hits(res));
    hset_write(q);
}

static void hset(px_reply *r, int argc, const px_str *argv, bool count_new, const char *name)
{
    if (argc % 2 != 0) {
        resp_errorf(r, "ERR wrong number of arguments for '%s' command", name);
        px_reply_end(r);
        return;
    }
    hreq *q = hreq_new(r, argc, argv, 2, 2);
    if (!q)
        return;
    if (!count_new) {
        q->count = -1; /* HMSET: +OK */
        hset_write(q);
        return;
    }
    px_backend *b = px_conn_backend(px_reply_conn(r));
    int rc = momento_dictionary_get_fields(b->client, b->cache, q->key, q->key_len,
                                           (const void *const *)q->fields, q->field_lens, q->n,
                                           NULL, on_hset_read, q);
    hreq_submitted(q, rc);
}

static void cmd_hset(px_reply *r, int argc, const px_str *argv)
{
    hset(r, argc, argv, true, "hset");
}

static void cmd_hmset(px_reply *r, int argc, const px_str *argv)
{
    hset(r, argc, argv, false, "hmset");
}

/* ---- HSETNX ---- */

static void on_hsetnx_read(const momento_result *res, void *ud)
{
    hreq *q = ud;
    if (resp_end_if_failed(q->r, res)) {
        free(q);
        return;
    }
    if (momento_result_is_hit(res)) {
        hreq_end_int(q, 0);
        return;
    }
    q->count = 1;
    hset_write(q);
}

static void cmd_hsetnx(px_reply *r, int argc, const px_str *argv)
{
    hreq *q = hreq_new(r, argc, argv, 2, 2);
    if (!q)
        return;
    /* Momento has no set-if-absent for a field: read, then write. */
    px_backend *b = px_conn_backend(px_reply_conn(r));
    int rc = momento_dictionary_get_field(b->client, b->cache, q->key, q->key_len, q->fields[0],
                                          q->field_lens[0], NULL, on_hsetnx_read, q);
    hreq_submitted(q, rc);
}

/* ---- HGET, HEXISTS ---- */

static void on_hget(const momento_result *res, void *ud)
{
    px_reply *r = ud;
    if (resp_end_if_failed(r, res))
        return;
    resp_read_value(r, res, momento_result_is_hit(res));
    px_reply_end(r);
}

static void on_hexists(const momento_result *res, void *ud)
{
    px_reply *r = ud;
    if (resp_end_if_failed(r, res))
        return;
    resp_end_int(r, momento_result_is_hit(res) ? 1 : 0);
}

static void get_field(px_reply *r, const px_str *argv, momento_callback cb)
{
    px_backend *b = px_conn_backend(px_reply_conn(r));
    int rc = b->co ? momento_coalescing_dictionary_get_field(b->co, b->cache, argv[1].p, argv[1].n,
                                                             argv[2].p, argv[2].n, NULL, cb, r)
                   : momento_dictionary_get_field(b->client, b->cache, argv[1].p, argv[1].n,
                                                  argv[2].p, argv[2].n, NULL, cb, r);
    resp_submitted(r, rc);
}

static void cmd_hget(px_reply *r, int argc, const px_str *argv)
{
    get_field(r, argv, on_hget);
}

static void cmd_hexists(px_reply *r, int argc, const px_str *argv)
{
    get_field(r, argv, on_hexists);
}

/* ---- HMGET ---- */

static void hmget_each(px_reply *r, const momento_result *res, size_t i)
{
    /* No hash (a MISS, without items): every field is nil. */
    const momento_result *it = momento_result_is_hit(res) ? momento_result_item(res, i) : NULL;
    resp_read_value(r, it, it && momento_result_is_hit(it));
}

static void cmd_hmget(px_reply *r, int argc, const px_str *argv)
{
    resp_read_many(r, argc, argv, MOMENTO_ITEM_TYPE_DICTIONARY, true, hmget_each);
}

/* ---- HGETALL, HKEYS, HVALS ---- */

enum { FETCH_BOTH = 3, FETCH_FIELDS = 1, FETCH_VALUES = 2 };

static void on_fetch(const momento_result *res, int what, px_reply *r)
{
    if (resp_end_if_failed(r, res))
        return;
    bool hit = momento_result_is_hit(res);
    resp_count_read(r, hit);
    size_t n = hit ? momento_result_item_count(res) : 0;
    resp_array(r, (long long)(what == FETCH_BOTH ? 2 * n : n));
    for (size_t i = 0; i < n; i++) {
        const momento_result *it = momento_result_item(res, i);
        size_t len;
        if (what & FETCH_FIELDS) {
            const void *f = momento_result_field(it, &len);
            resp_bulk(r, f, len);
        }
        if (what & FETCH_VALUES)
            resp_bulk_value(r, it);
    }
    px_reply_end(r);
}

static void on_hgetall(const momento_result *res, void *ud)
{
    on_fetch(res, FETCH_BOTH, ud);
}

static void on_hkeys(const momento_result *res, void *ud)
{
    on_fetch(res, FETCH_FIELDS, ud);
}

static void on_hvals(const momento_result *res, void *ud)
{
    on_fetch(res, FETCH_VALUES, ud);
}

static void fetch(px_reply *r, const px_str *argv, momento_callback cb)
{
    px_backend *b = px_conn_backend(px_reply_conn(r));
    int rc = b->co ? momento_coalescing_dictionary_fetch(b->co, b->cache, argv[1].p, argv[1].n,
                                                         NULL, cb, r)
                   : momento_dictionary_fetch(b->client, b->cache, argv[1].p, argv[1].n, NULL,
                                              cb, r);
    resp_submitted(r, rc);
}

static void cmd_hgetall(px_reply *r, int argc, const px_str *argv)
{
    fetch(r, argv, on_hgetall);
}

static void cmd_hkeys(px_reply *r, int argc, const px_str *argv)
{
    fetch(r, argv, on_hkeys);
}

static void cmd_hvals(px_reply *r, int argc, const px_str *argv)
{
    fetch(r, argv, on_hvals);
}

/* ---- HDEL ---- */

static void on_hdel_removed(const momento_result *res, void *ud)
{
    hreq *q = ud;
    resp_end_int_or_failure(q->r, res, q->count);
    free(q);
}

/* HDEL's read: the fields that exist are the ones it removes. */
static void on_hdel_read(const momento_result *res, void *ud)
{
    hreq *q = ud;
    if (resp_end_if_failed(q->r, res)) {
        free(q);
        return;
    }
    q->count = (long long)resp_count_hits(res);
    if (q->count == 0) {
        hreq_end_int(q, 0);
        return;
    }
    px_backend *b = px_conn_backend(px_reply_conn(q->r));
    int rc = momento_dictionary_remove_fields(b->client, b->cache, q->key, q->key_len,
                                              (const void *const *)q->fields, q->field_lens, q->n,
                                              NULL, on_hdel_removed, q);
    hreq_submitted(q, rc);
}

static void cmd_hdel(px_reply *r, int argc, const px_str *argv)
{
    hreq *q = hreq_new(r, argc, argv, 2, 1);
    if (!q)
        return;
    px_backend *b = px_conn_backend(px_reply_conn(r));
    int rc = momento_dictionary_get_fields(b->client, b->cache, q->key, q->key_len,
                                           (const void *const *)q->fields, q->field_lens, q->n,
                                           NULL, on_hdel_read, q);
    hreq_submitted(q, rc);
}

/* ---- HINCRBY ---- */

/* Momento refuses an increment with FAILED_PRECONDITION both for a key of
 * another type and for a field that holds no integer (or would overflow):
 * reading the field tells which, and gives Redis's error for each. */
static void on_hincrby_why(const momento_result *res, void *ud)
{
    hreq *q = ud;
    if (resp_end_if_failed(q->r, res)) {
        free(q);
        return;
    }
    if (!momento_result_is_hit(res)) {
        /* Gone meanwhile: what is left to say is that it failed. */
        resp_end_error(q->r, "ERR hash value is not an integer");
        free(q);
        return;
    }
    size_t n;
    const void *v = momento_result_value(res, &n);
    px_str s = {v, n};
    long long ll;
    resp_end_error(q->r, resp_arg_ll(&s, &ll) ? "ERR increment or decrement would overflow"
                                              : "ERR hash value is not an integer");
    free(q);
}

static void on_hincrby(const momento_result *res, void *ud)
{
    hreq *q = ud;
    if (momento_result_error(res) == MOMENTO_OK) {
        hreq_end_int(q, (long long)momento_result_int(res));
        return;
    }
    if (!resp_is_wrongtype(res)) {
        resp_end_failure(q->r, res);
        free(q);
        return;
    }
    px_backend *b = px_conn_backend(px_reply_conn(q->r));
    int rc = momento_dictionary_get_field(b->client, b->cache, q->key, q->key_len, q->fields[0],
                                          q->field_lens[0], NULL, on_hincrby_why, q);
    hreq_submitted(q, rc);
}

static void cmd_hincrby(px_reply *r, int argc, const px_str *argv)
{
    long long by;
    if (!resp_arg_ll(&argv[3], &by)) {
        resp_end_not_integer(r);
        return;
    }
    hreq *q = hreq_new(r, 3, argv, 2, 1);
    if (!q)
        return;
    px_backend *b = px_conn_backend(px_reply_conn(r));
    momento_collection_ttl t;
    int rc = momento_dictionary_increment(b->client, b->cache, q->key, q->key_len, q->fields[0],
                                          q->field_lens[0], by, resp_keep_ttl(r, &t), NULL,
                                          on_hincrby, q);
    hreq_submitted(q, rc);
}

/* ---- HLEN ---- */

static void cmd_hlen(px_reply *r, int argc, const px_str *argv)
{
    resp_length(r, &argv[1], MOMENTO_ITEM_TYPE_DICTIONARY, resp_on_length);
}

const resp_cmd resp_hash_cmds[] = {
    {"hset", -4, cmd_hset},       {"hmset", -4, cmd_hmset},     {"hsetnx", 4, cmd_hsetnx},
    {"hget", 3, cmd_hget},        {"hmget", -3, cmd_hmget},     {"hgetall", 2, cmd_hgetall},
    {"hkeys", 2, cmd_hkeys},      {"hvals", 2, cmd_hvals},      {"hdel", -3, cmd_hdel},
    {"hincrby", 4, cmd_hincrby},  {"hlen", 2, cmd_hlen},        {"hexists", 3, cmd_hexists},
    {NULL, 0, NULL},
};
