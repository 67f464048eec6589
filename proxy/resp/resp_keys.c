/* RESP: commands on keys of any type - DEL, UNLINK, EXISTS, TYPE, the
 * TTL family (EXPIRE, PEXPIRE, TTL, PTTL, PERSIST) - and the counters
 * (INCR, INCRBY, DECR, DECRBY) on Momento's increment. */
#include "resp/resp.h"

#include <stdlib.h>
#include <string.h>

/* A command over many keys keeps them for its second call. */
typedef struct keys_req {
    px_reply *r;
    size_t n;
    const void **keys;
    size_t *lens;
    long long count;
} keys_req;

static void keys_req_free(keys_req *q)
{
    free(q);
}

/* Copies argv[1..argc) into one allocation. */
static keys_req *keys_req_new(px_reply *r, int argc, const px_str *argv)
{
    size_t n = (size_t)argc - 1, bytes = 0;
    for (size_t i = 0; i < n; i++)
        bytes += argv[i + 1].n;
    keys_req *q = calloc(1, sizeof(*q) + n * (sizeof(void *) + sizeof(size_t)) + bytes);
    if (!q)
        return NULL;
    q->r = r;
    q->n = n;
    q->keys = (const void **)(q + 1);
    q->lens = (size_t *)(q->keys + n);
    char *p = (char *)(q->lens + n);
    for (size_t i = 0; i < n; i++) {
        memcpy(p, argv[i + 1].p, argv[i + 1].n);
        q->keys[i] = p;
        q->lens[i] = argv[i + 1].n;
        p += argv[i + 1].n;
    }
    return q;
}

static bool same_key(const keys_req *q, size_t i, size_t j)
{
    return q->lens[i] == q->lens[j] && memcmp(q->keys[i], q->keys[j], q->lens[i]) == 0;
}

/* ---- DEL, UNLINK ---- */

static void on_deleted(const momento_result *res, void *ud)
{
    keys_req *q = ud;
    if (resp_end_if_error(q->r, res)) {
        keys_req_free(q);
        return;
    }
    for (size_t i = 0; i < momento_result_item_count(res); i++) {
        const momento_result *it = momento_result_item(res, i);
        if (momento_result_error(it) != MOMENTO_OK) {
            resp_momento_error(q->r, 0, it);
            keys_req_free(q);
            return;
        }
    }
    resp_end_int(q->r, q->count);
    keys_req_free(q);
}

/* Which keys exist, then delete them all: the count is of distinct keys
 * that existed, as Redis counts (DEL a a deletes one key). */
static void on_del_exist(const momento_result *res, void *ud)
{
    keys_req *q = ud;
    if (resp_end_if_error(q->r, res)) {
        keys_req_free(q);
        return;
    }
    q->count = 0;
    for (size_t i = 0; i < q->n; i++) {
        if (momento_result_exists(res, i) != 1)
            continue;
        bool dup = false;
        for (size_t j = 0; j < i && !dup; j++)
            dup = same_key(q, i, j);
        if (!dup)
            q->count++;
    }
    if (q->count == 0) {
        resp_end_int(q->r, 0);
        keys_req_free(q);
        return;
    }
    px_backend *b = px_conn_backend(px_reply_conn(q->r));
    int rc = momento_delete_batch(b->client, b->cache, (const void *const *)q->keys, q->lens, q->n,
                                  NULL, on_deleted, q);
    if (!resp_submitted(q->r, rc))
        keys_req_free(q);
}

static void cmd_del(px_reply *r, int argc, const px_str *argv)
{
    keys_req *q = keys_req_new(r, argc, argv);
    if (!q) {
        resp_end_error(r, "ERR out of memory");
        return;
    }
    px_backend *b = px_conn_backend(px_reply_conn(r));
    int rc = momento_keys_exist(b->client, b->cache, (const void *const *)q->keys, q->lens, q->n,
                                NULL, on_del_exist, q);
    if (!resp_submitted(r, rc))
        keys_req_free(q);
}

/* ---- EXISTS ---- */

static void on_exists(const momento_result *res, void *ud)
{
    px_reply *r = ud;
    if (resp_end_if_error(r, res))
        return;
    long long n = 0;
    for (size_t i = 0; i < momento_result_exists_count(res); i++)
        n += momento_result_exists(res, i) == 1;
    resp_end_int(r, n);
}

static void cmd_exists(px_reply *r, int argc, const px_str *argv)
{
    size_t n = (size_t)argc - 1;
    const void **keys;
    size_t *lens;
    if (!resp_str_arrays(argv + 1, n, &keys, &lens)) {
        resp_end_error(r, "ERR out of memory");
        return;
    }
    px_backend *b = px_conn_backend(px_reply_conn(r));
    /* Each key counts as often as it is named, as in Redis. */
    int rc = momento_keys_exist(b->client, b->cache, (const void *const *)keys, lens, n, NULL,
                                on_exists, r);
    free(keys);
    free(lens);
    resp_submitted(r, rc);
}

/* ---- TYPE ---- */

static void on_type(const momento_result *res, void *ud)
{
    px_reply *r = ud;
    if (resp_end_if_error(r, res))
        return;
    const char *t = "none";
    if (momento_result_outcome(res) == MOMENTO_OUTCOME_HIT) {
        switch (momento_result_item_type(res)) {
        case MOMENTO_ITEM_TYPE_SCALAR: t = "string"; break;
        case MOMENTO_ITEM_TYPE_DICTIONARY: t = "hash"; break;
        case MOMENTO_ITEM_TYPE_SET: t = "set"; break;
        case MOMENTO_ITEM_TYPE_LIST: t = "list"; break;
        case MOMENTO_ITEM_TYPE_SORTED_SET: t = "zset"; break;
        default: break;
        }
    }
    resp_simple(r, t);
    px_reply_end(r);
}

static void cmd_type(px_reply *r, int argc, const px_str *argv)
{
    px_backend *b = px_conn_backend(px_reply_conn(r));
    resp_submitted(r, momento_item_get_type(b->client, b->cache, argv[1].p, argv[1].n, NULL,
                                            on_type, r));
}

/* ---- INCR, INCRBY, DECR, DECRBY ---- */

static void on_incr(const momento_result *res, void *ud)
{
    px_reply *r = ud;
    int err = momento_result_error(res);
    if (err == MOMENTO_OK) {
        resp_end_int(r, (long long)momento_result_int(res));
        return;
    }
    /* Momento answers FAILED_PRECONDITION both for a key of another type
     * and for a value that is not an integer; its message tells which. */
    const char *msg = momento_result_message(res);
    if (err == MOMENTO_ERR_FAILED_PRECONDITION && msg && strstr(msg, "overflow"))
        resp_end_error(r, "ERR increment or decrement would overflow");
    else if (err == MOMENTO_ERR_FAILED_PRECONDITION && msg && strstr(msg, "integer"))
        resp_end_not_integer(r);
    else if (err == MOMENTO_ERR_FAILED_PRECONDITION)
        resp_end_wrongtype(r);
    else
        resp_momento_error(r, 0, res);
}

/* INCR keeps the key's TTL, as Redis does: Momento's increment sets the
 * TTL it is given, so the remaining TTL is read first and given back (the
 * default for a key that is not there). Two calls, not one atomic step: a
 * TTL another client sets between them is replaced by the one read, and a
 * key that expires between them comes back with the few milliseconds it
 * had left (docs/proxy.md). */
typedef struct incr_req {
    px_reply *r;
    long long delta;
    size_t key_len;
    char key[];
} incr_req;

static void on_incr_ttl(const momento_result *res, void *ud)
{
    incr_req *q = ud;
    px_reply *r = q->r;
    if (resp_end_if_error(r, res)) {
        free(q);
        return;
    }
    px_backend *b = px_conn_backend(px_reply_conn(r));
    uint64_t ttl = b->default_ttl_ms;
    if (momento_result_outcome(res) == MOMENTO_OUTCOME_HIT) {
        ttl = momento_result_ttl_ms(res);
        /* 0 would mean the default: a key about to expire keeps 1 ms. */
        if (ttl == 0)
            ttl = 1;
        if (ttl > MOMENTO_MAX_TTL_MS)
            ttl = MOMENTO_MAX_TTL_MS;
    }
    resp_submitted(r, momento_increment(b->client, b->cache, q->key, q->key_len, q->delta, ttl,
                                        NULL, on_incr, r));
    free(q);
}

static void incr(px_reply *r, const px_str *key, long long delta)
{
    incr_req *q = resp_ctx_new(r, sizeof(*q) + key->n);
    if (!q)
        return;
    q->r = r;
    q->delta = delta;
    q->key_len = key->n;
    memcpy(q->key, key->p, key->n);
    px_backend *b = px_conn_backend(px_reply_conn(r));
    int rc = momento_item_get_ttl(b->client, b->cache, q->key, q->key_len, NULL, on_incr_ttl, q);
    if (!resp_submitted(r, rc))
        free(q);
}

static void cmd_incr(px_reply *r, int argc, const px_str *argv)
{
    incr(r, &argv[1], 1);
}

static void cmd_decr(px_reply *r, int argc, const px_str *argv)
{
    incr(r, &argv[1], -1);
}

static void cmd_incrby(px_reply *r, int argc, const px_str *argv)
{
    long long d;
    if (!resp_arg_ll(&argv[2], &d)) {
        resp_end_not_integer(r);
        return;
    }
    incr(r, &argv[1], d);
}

static void cmd_decrby(px_reply *r, int argc, const px_str *argv)
{
    long long d;
    if (!resp_arg_ll(&argv[2], &d)) {
        resp_end_not_integer(r);
        return;
    }
    if (d == INT64_MIN) {
        /* Redis: "decrement would overflow" for LLONG_MIN. */
        resp_end_error(r, "ERR decrement would overflow");
        return;
    }
    incr(r, &argv[1], -d);
}

/* ---- EXPIRE, PEXPIRE, TTL, PTTL, PERSIST ---- */

static void on_expire(const momento_result *res, void *ud)
{
    px_reply *r = ud;
    if (resp_end_if_error(r, res))
        return;
    resp_end_int(r, momento_result_outcome(res) == MOMENTO_OUTCOME_TTL_UPDATED ? 1 : 0);
}

/* EXPIRE to a time already past deletes the key: 1 if it existed. */
typedef struct expire_del {
    px_reply *r;
    bool existed;
    size_t key_len;
    char key[];
} expire_del;

static void on_expire_deleted(const momento_result *res, void *ud)
{
    expire_del *q = ud;
    resp_end_int_or_error(q->r, res, q->existed ? 1 : 0);
    free(q);
}

static void on_expire_exists(const momento_result *res, void *ud)
{
    expire_del *q = ud;
    if (resp_end_if_error(q->r, res)) {
        free(q);
        return;
    }
    q->existed = momento_result_exists(res, 0) == 1;
    if (!q->existed) {
        resp_end_int(q->r, 0);
        free(q);
        return;
    }
    px_backend *b = px_conn_backend(px_reply_conn(q->r));
    int rc = momento_delete(b->client, b->cache, q->key, q->key_len, NULL, on_expire_deleted, q);
    if (!resp_submitted(q->r, rc))
        free(q);
}

static void expire(px_reply *r, int argc, const px_str *argv, long long unit_ms, const char *name)
{
    /* Redis reads the options before the time: "EXPIRE k abc BAD" is
     * about BAD. NX: only a key without a TTL; XX: only one with; GT, LT:
     * only longer, only shorter. */
    bool nx = false, xx = false, gt = false, lt = false;
    for (int i = 3; i < argc; i++) {
        if (resp_arg_is(&argv[i], "nx"))
            nx = true;
        else if (resp_arg_is(&argv[i], "xx"))
            xx = true;
        else if (resp_arg_is(&argv[i], "gt"))
            gt = true;
        else if (resp_arg_is(&argv[i], "lt"))
            lt = true;
        else {
            resp_errorf(r, "ERR Unsupported option %.*s", (int)(argv[i].n < 400 ? argv[i].n : 400),
                        argv[i].p);
            px_reply_end(r);
            return;
        }
    }
    if (nx && (xx || gt || lt)) {
        resp_end_error(r, "ERR NX and XX, GT or LT options at the same time are not compatible");
        return;
    }
    if (gt && lt) {
        resp_end_error(r, "ERR GT and LT options at the same time are not compatible");
        return;
    }
    long long t;
    if (!resp_arg_ll(&argv[2], &t)) {
        resp_end_not_integer(r);
        return;
    }
    /* Redis refuses a time whose milliseconds, or whose absolute time,
     * would overflow. */
    if ((unit_ms == 1000 && (t > INT64_MAX / 1000 || t < INT64_MIN / 1000)) ||
        t * unit_ms > INT64_MAX - resp_now_ms()) {
        resp_errorf(r, "ERR invalid expire time in '%s' command", name);
        px_reply_end(r);
        return;
    }
    px_backend *b = px_conn_backend(px_reply_conn(r));
    long long ms = t * unit_ms;
    /* Every Momento item has a TTL, the default one when it was given
     * none, so NX cannot ask "no TTL yet". It is taken as LT: it sets the
     * TTL only where that shortens it, which is what "INCR k; EXPIRE k 2
     * NX" needs (a new key's default TTL is shortened once; later NXs
     * leave the running window alone). docs/proxy.md. */
    if (nx)
        lt = true;
    if (ms <= 0) {
        if (gt) { /* no TTL is shorter than a past one: nothing to do */
            resp_end_int(r, 0);
            return;
        }
        expire_del *q = resp_ctx_new(r, sizeof(*q) + argv[1].n);
        if (!q)
            return;
        q->r = r;
        q->key_len = argv[1].n;
        memcpy(q->key, argv[1].p, argv[1].n);
        const void *k = q->key;
        int rc = momento_keys_exist(b->client, b->cache, &k, &q->key_len, 1, NULL,
                                    on_expire_exists, q);
        if (!resp_submitted(r, rc))
            free(q);
        return;
    }
    uint64_t ttl = (unsigned long long)ms > MOMENTO_MAX_TTL_MS ? MOMENTO_MAX_TTL_MS : (uint64_t)ms;
    int rc;
    if (gt)
        rc = momento_increase_ttl(b->client, b->cache, argv[1].p, argv[1].n, ttl, NULL, on_expire,
                                  r);
    else if (lt)
        rc = momento_decrease_ttl(b->client, b->cache, argv[1].p, argv[1].n, ttl, NULL, on_expire,
                                  r);
    else
        rc = momento_update_ttl(b->client, b->cache, argv[1].p, argv[1].n, ttl, NULL, on_expire,
                                r);
    resp_submitted(r, rc);
}

static void cmd_expire(px_reply *r, int argc, const px_str *argv)
{
    expire(r, argc, argv, 1000, "expire");
}

static void cmd_pexpire(px_reply *r, int argc, const px_str *argv)
{
    expire(r, argc, argv, 1, "pexpire");
}

/* TTL and PTTL: -2 for no key, else what is left of its TTL (every
 * Momento item has one), in seconds rounded as Redis rounds them
 * ((ms + 500) / 1000) or in milliseconds. */
static void end_ttl(const momento_result *res, px_reply *r, bool seconds)
{
    if (resp_end_if_error(r, res))
        return;
    if (momento_result_outcome(res) != MOMENTO_OUTCOME_HIT) {
        resp_end_int(r, -2);
        return;
    }
    uint64_t ms = momento_result_ttl_ms(res);
    resp_end_int(r, (long long)(seconds ? (ms + 500) / 1000 : ms));
}

static void on_ttl_s(const momento_result *res, void *ud)
{
    end_ttl(res, ud, true);
}

static void on_ttl_ms(const momento_result *res, void *ud)
{
    end_ttl(res, ud, false);
}

static void ttl(px_reply *r, const px_str *key, momento_callback cb)
{
    px_backend *b = px_conn_backend(px_reply_conn(r));
    resp_submitted(r, momento_item_get_ttl(b->client, b->cache, key->p, key->n, NULL, cb, r));
}

static void cmd_ttl(px_reply *r, int argc, const px_str *argv)
{
    ttl(r, &argv[1], on_ttl_s);
}

static void cmd_pttl(px_reply *r, int argc, const px_str *argv)
{
    ttl(r, &argv[1], on_ttl_ms);
}

static void cmd_persist(px_reply *r, int argc, const px_str *argv)
{
    /* Momento keeps no item forever, so no TTL is ever removed: 0, which
     * Redis answers for a key without one (docs/proxy.md). */
    (void)argv;
    resp_end_int(r, 0);
}

const resp_cmd resp_keys_cmds[] = {
    {"del", -2, cmd_del},         {"unlink", -2, cmd_del},      {"exists", -2, cmd_exists},
    {"type", 2, cmd_type},        {"incr", 2, cmd_incr},        {"decr", 2, cmd_decr},
    {"incrby", 3, cmd_incrby},    {"decrby", 3, cmd_decrby},    {"expire", -3, cmd_expire},
    {"pexpire", -3, cmd_pexpire}, {"ttl", 2, cmd_ttl},          {"pttl", 2, cmd_pttl},
    {"persist", 2, cmd_persist},  {NULL, 0, NULL},
};
