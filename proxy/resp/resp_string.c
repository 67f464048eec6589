/* RESP: the string commands - GET, SET with its options, SETNX, SETEX,
 * PSETEX, GETDEL, MGET, MSET - on Momento's scalar items.
 *
 * Momento has no GETSET; SET ... GET is made atomic with its conditional
 * writes: read the old value, then write only if it is still that value
 * (set-if-equal) or still absent (set-if-absent), and start again if
 * another writer came between (a bounded number of times). */
#include "multiget.h"
#include "resp/resp.h"

#include <stdlib.h>
#include <string.h>

/* How often SET ... GET starts again when another writer keeps changing
 * the key between its read and its conditional write. */
#define GETSET_TRIES 8

/* ---- GET ---- */

static void on_get(const momento_result *res, void *ud)
{
    px_reply *r = ud;
    int err = momento_result_error(res);
    if (err == MOMENTO_OK) {
        resp_read_value(r, res, momento_result_is_hit(res));
        px_reply_end(r);
    } else if (resp_is_wrongtype(res)) {
        resp_end_wrongtype(r);
    } else {
        resp_momento_error(r, 0, res);
    }
}

static void cmd_get(px_reply *r, int argc, const px_str *argv)
{
    px_backend *b = px_conn_backend(px_reply_conn(r));
    int rc = b->co ? momento_coalescing_get(b->co, b->cache, argv[1].p, argv[1].n, NULL, on_get, r)
                   : momento_get(b->client, b->cache, argv[1].p, argv[1].n, NULL, on_get, r);
    resp_submitted(r, rc);
}

/* ---- SET and its family ---- */

enum { SET_ALWAYS, SET_NX, SET_XX };

typedef struct set_ctx {
    px_reply *r;
    int cond;           /* SET_ALWAYS, SET_NX, SET_XX */
    bool get;           /* GET: reply the old value */
    bool keepttl;       /* KEEPTTL: the key's TTL, read first */
    bool int_reply;     /* SETNX: :1 / :0 instead of +OK / nil */
    bool past;          /* EXAT / PXAT already past: nothing is written */
    uint64_t ttl_ms;    /* 0: the default (or the kept TTL) */
    int tries;
    /* For GET: the old value the conditional write compares with. */
    bool old_hit;
    char *old;
    size_t old_len;
    char *key;
    size_t key_len;
    char *value;
    size_t value_len;
} set_ctx;

static void set_ctx_free(set_ctx *s)
{
    free(s->old);
    free(s);
}

/* NULL out of memory, r then ended with that error. */
static set_ctx *set_ctx_new(px_reply *r, const px_str *key, const px_str *value)
{
    set_ctx *s = resp_ctx_new(r, sizeof(*s) + key->n + value->n);
    if (!s)
        return NULL;
    s->r = r;
    s->key = (char *)(s + 1);
    s->key_len = key->n;
    memcpy(s->key, key->p, key->n);
    s->value = s->key + key->n;
    s->value_len = value->n;
    memcpy(s->value, value->p, value->n);
    return s;
}

static void set_submit_failed(set_ctx *s, int rc)
{
    resp_submitted(s->r, rc);
    set_ctx_free(s);
}

static void set_start(set_ctx *s);

/* The write's answer. */
static void on_written(const momento_result *res, void *ud)
{
    set_ctx *s = ud;
    if (resp_end_if_failed(s->r, res)) {
        set_ctx_free(s);
        return;
    }
    bool stored = momento_result_outcome(res) != MOMENTO_OUTCOME_NOT_STORED;
    if (s->get) {
        if (!stored && s->tries < GETSET_TRIES) {
            /* The key changed between our read and our write: read again. */
            set_start(s);
            return;
        }
        if (!stored) {
            resp_end_error(s->r, "ERR momento the key kept changing during SET GET");
            set_ctx_free(s);
            return;
        }
        if (s->old_hit)
            resp_bulk(s->r, s->old, s->old_len);
        else
            resp_nil(s->r);
    } else if (s->int_reply) {
        resp_int(s->r, stored ? 1 : 0);
    } else if (stored) {
        resp_ok(s->r);
    } else {
        resp_nil(s->r);
    }
    px_reply_end(s->r);
    set_ctx_free(s);
}

/* The write itself, once the TTL and (for GET) the old value are known. */
static void set_write(set_ctx *s)
{
    px_backend *b = px_conn_backend(px_reply_conn(s->r));
    uint64_t ttl = s->ttl_ms ? s->ttl_ms : b->default_ttl_ms;
    int rc;
    if (s->get) {
        /* Only over what we read: the old value, or its absence. */
        if (s->old_hit)
            rc = momento_set_if_equal(b->client, b->cache, s->key, s->key_len, s->value,
                                      s->value_len, ttl, s->old, s->old_len, NULL, on_written, s);
        else
            rc = momento_set_if_absent(b->client, b->cache, s->key, s->key_len, s->value,
                                       s->value_len, ttl, NULL, on_written, s);
    } else if (s->cond == SET_NX) {
        rc = momento_set_if_absent(b->client, b->cache, s->key, s->key_len, s->value, s->value_len,
                                   ttl, NULL, on_written, s);
    } else if (s->cond == SET_XX) {
        rc = momento_set_if_present(b->client, b->cache, s->key, s->key_len, s->value,
                                    s->value_len, ttl, NULL, on_written, s);
    } else {
        rc = momento_set(b->client, b->cache, s->key, s->key_len, s->value, s->value_len, ttl,
                         NULL, on_written, s);
    }
    if (rc != MOMENTO_OK)
        set_submit_failed(s, rc);
    else
        b->stats->backend_calls++;
}

/* An expiry already past (SET ... EXAT / PXAT): Redis writes the key and
 * it is expired at once, so the answer is as if written and the key ends
 * absent. The proxy writes nothing - a value written then deleted could be
 * read in between - and deletes what the write would have replaced. */
static void on_past_deleted(const momento_result *res, void *ud)
{
    set_ctx *s = ud;
    if (resp_end_if_failed(s->r, res)) {
        set_ctx_free(s);
        return;
    }
    if (!s->get)
        resp_ok(s->r);
    else if (s->old_hit)
        resp_bulk(s->r, s->old, s->old_len);
    else
        resp_nil(s->r);
    px_reply_end(s->r);
    set_ctx_free(s);
}

static void past_delete(set_ctx *s)
{
    px_backend *b = px_conn_backend(px_reply_conn(s->r));
    int rc = momento_delete(b->client, b->cache, s->key, s->key_len, NULL, on_past_deleted, s);
    if (!resp_submitted(s->r, rc))
        set_ctx_free(s);
}

/* The write's condition held (or there was none): the key goes. With GET
 * the value was read first: a write another client makes between that
 * read and the delete is deleted unseen, as with GETDEL. */
static void past_end(set_ctx *s)
{
    if (s->get && !s->old_hit) {
        /* Nothing there to replace: nothing to do. */
        resp_nil(s->r);
        px_reply_end(s->r);
        set_ctx_free(s);
        return;
    }
    past_delete(s);
}

/* SET NX / XX without GET: whether the key is there decides the answer. */
static void on_past_exists(const momento_result *res, void *ud)
{
    set_ctx *s = ud;
    if (resp_end_if_failed(s->r, res)) {
        set_ctx_free(s);
        return;
    }
    bool exists = momento_result_exists(res, 0) == 1;
    if (s->cond == SET_NX && !exists) {
        resp_ok(s->r); /* written and expired: nothing to delete */
    } else if (s->cond == SET_XX && exists) {
        past_delete(s);
        return;
    } else {
        resp_nil(s->r);
    }
    px_reply_end(s->r);
    set_ctx_free(s);
}

/* SET ... GET: the old value read. */
static void on_old(const momento_result *res, void *ud)
{
    set_ctx *s = ud;
    if (resp_end_if_failed(s->r, res)) {
        set_ctx_free(s);
        return;
    }
    free(s->old);
    s->old = NULL;
    s->old_hit = momento_result_is_hit(res);
    s->old_len = 0;
    if (s->old_hit) {
        size_t n;
        const void *v = momento_result_value(res, &n);
        s->old = malloc(n ? n : 1);
        if (!s->old) {
            resp_end_error(s->r, "ERR out of memory");
            set_ctx_free(s);
            return;
        }
        memcpy(s->old, v, n);
        s->old_len = n;
    }
    /* NX with a value there, XX without one: nothing is written, and the
     * reply is the old value (nil). */
    if ((s->cond == SET_NX && s->old_hit) || (s->cond == SET_XX && !s->old_hit)) {
        if (s->old_hit)
            resp_bulk(s->r, s->old, s->old_len);
        else
            resp_nil(s->r);
        px_reply_end(s->r);
        set_ctx_free(s);
        return;
    }
    if (s->past)
        past_end(s);
    else
        set_write(s);
}

/* KEEPTTL: the key's TTL read. */
static void on_ttl(const momento_result *res, void *ud)
{
    set_ctx *s = ud;
    if (resp_end_if_failed(s->r, res)) {
        set_ctx_free(s);
        return;
    }
    s->keepttl = false;
    /* A missing key gets the default, as Redis gives it none. */
    s->ttl_ms = momento_result_outcome(res) == MOMENTO_OUTCOME_HIT ? momento_result_ttl_ms(res) : 0;
    if (s->ttl_ms == 0 && momento_result_outcome(res) == MOMENTO_OUTCOME_HIT)
        s->ttl_ms = 1;
    if (s->ttl_ms > MOMENTO_MAX_TTL_MS)
        s->ttl_ms = MOMENTO_MAX_TTL_MS;
    set_start(s);
}

static void set_start(set_ctx *s)
{
    px_backend *b = px_conn_backend(px_reply_conn(s->r));
    int rc = MOMENTO_OK;
    if (s->keepttl) {
        rc = momento_item_get_ttl(b->client, b->cache, s->key, s->key_len, NULL, on_ttl, s);
    } else if (s->get) {
        s->tries++;
        /* The old value answered must be the one the SET replaces (the
         * conditional write would refuse a stale one, but only after a
         * wasted round trip). */
        rc = momento_get(b->client, b->cache, s->key, s->key_len, &px_current_read, on_old, s);
    } else if (s->past && s->cond == SET_ALWAYS) {
        past_delete(s);
        return;
    } else if (s->past) {
        rc = momento_key_exists(b->client, b->cache, s->key, s->key_len, NULL, on_past_exists, s);
    } else {
        set_write(s);
        return;
    }
    if (rc != MOMENTO_OK)
        set_submit_failed(s, rc);
    else
        b->stats->backend_calls++;
}

/* Momento's TTLs stop at MOMENTO_MAX_TTL_MS; a longer Redis expiry is
 * held to it. */
static uint64_t clamp_ttl(long long ms)
{
    return (unsigned long long)ms > MOMENTO_MAX_TTL_MS ? MOMENTO_MAX_TTL_MS : (uint64_t)ms;
}

static void cmd_set(px_reply *r, int argc, const px_str *argv)
{
    /* Redis 7.0's parse: every option first (a repeated one is allowed,
     * the last expiry wins), the expiry's number only after - so
     * "SET k v EX abc PX 0" is a syntax error, not a bad number. */
    int cond = SET_ALWAYS;
    bool get = false, keepttl = false;
    const px_str *expire_arg = NULL;
    char expire_kind = 0; /* 'e' EX, 'p' PX, 'E' EXAT, 'P' PXAT */
    for (int i = 3; i < argc; i++) {
        const px_str *a = &argv[i];
        bool more = i + 1 < argc;
        char kind = resp_arg_is(a, "ex")     ? 'e'
                    : resp_arg_is(a, "px")   ? 'p'
                    : resp_arg_is(a, "exat") ? 'E'
                    : resp_arg_is(a, "pxat") ? 'P'
                                             : 0;
        if (resp_arg_is(a, "nx") && cond != SET_XX) {
            cond = SET_NX;
        } else if (resp_arg_is(a, "xx") && cond != SET_NX) {
            cond = SET_XX;
        } else if (resp_arg_is(a, "get")) {
            get = true;
        } else if (resp_arg_is(a, "keepttl") && !expire_kind) {
            keepttl = true;
        } else if (kind && !keepttl && (!expire_kind || expire_kind == kind) && more) {
            expire_kind = kind;
            expire_arg = &argv[++i];
        } else {
            resp_end_syntax(r);
            return;
        }
    }
    uint64_t ttl_ms = 0;
    bool past = false;
    if (expire_kind) {
        long long expire;
        if (!resp_arg_ll(expire_arg, &expire)) {
            resp_end_not_integer(r);
            return;
        }
        bool seconds = expire_kind == 'e' || expire_kind == 'E';
        bool absolute = expire_kind == 'E' || expire_kind == 'P';
        int64_t now = resp_now_ms();
        /* Redis: a non-positive expiry, or one whose milliseconds or whose
         * absolute time overflow. */
        if (expire <= 0 || (seconds && expire > (long long)(INT64_MAX / 1000)) ||
            (!absolute && expire * (seconds ? 1000 : 1) > INT64_MAX - now)) {
            resp_end_error(r, "ERR invalid expire time in 'set' command");
            return;
        }
        long long ms = expire * (seconds ? 1000 : 1);
        if (absolute)
            ms -= now;
        /* Already past: Redis writes a key that is expired at once; the
         * proxy writes nothing it would have to delete (set_start). */
        past = ms <= 0;
        if (!past)
            ttl_ms = clamp_ttl(ms);
    }
    set_ctx *s = set_ctx_new(r, &argv[1], &argv[2]);
    if (!s)
        return;
    s->cond = cond;
    s->get = get;
    s->keepttl = keepttl;
    s->past = past;
    s->ttl_ms = ttl_ms;
    set_start(s);
}

static void cmd_setnx(px_reply *r, int argc, const px_str *argv)
{
    set_ctx *s = set_ctx_new(r, &argv[1], &argv[2]);
    if (!s)
        return;
    s->cond = SET_NX;
    s->int_reply = true;
    set_start(s);
}

/* SETEX key seconds value, PSETEX key ms value. */
static void setex(px_reply *r, const px_str *argv, int unit_ms, const char *name)
{
    long long t;
    if (!resp_arg_ll(&argv[2], &t)) {
        resp_end_not_integer(r);
        return;
    }
    /* Redis's checks, as SET EX/PX: a non-positive time, or one whose
     * milliseconds or whose absolute time (now + ms) would overflow. */
    if (t <= 0 || (unit_ms == 1000 && t > (long long)(INT64_MAX / 1000)) ||
        t * unit_ms > INT64_MAX - resp_now_ms()) {
        resp_errorf(r, "ERR invalid expire time in '%s' command", name);
        px_reply_end(r);
        return;
    }
    set_ctx *s = set_ctx_new(r, &argv[1], &argv[3]);
    if (!s)
        return;
    s->ttl_ms = clamp_ttl(t * unit_ms);
    set_start(s);
}

static void cmd_setex(px_reply *r, int argc, const px_str *argv)
{
    setex(r, argv, 1000, "setex");
}

static void cmd_psetex(px_reply *r, int argc, const px_str *argv)
{
    setex(r, argv, 1, "psetex");
}

/* ---- GETDEL ---- */

/* A read, then a delete of what was read. Not atomic: a write between
 * the two is deleted unseen (Momento has no delete-if-equal). */
typedef struct getdel_req {
    px_reply *r;
    char *value;
    size_t value_len;
    size_t key_len;
    char key[];
} getdel_req;

static void on_getdel_deleted(const momento_result *res, void *ud)
{
    getdel_req *q = ud;
    if (momento_result_error(res) != MOMENTO_OK) {
        resp_momento_error(q->r, 0, res);
    } else {
        resp_bulk(q->r, q->value, q->value_len);
        px_reply_end(q->r);
    }
    free(q->value);
    free(q);
}

static void on_getdel_read(const momento_result *res, void *ud)
{
    getdel_req *q = ud;
    px_reply *r = q->r;
    if (momento_result_error(res) != MOMENTO_OK || !momento_result_is_hit(res)) {
        on_get(res, r); /* the error, wrong type or nil, as GET answers */
        free(q);
        return;
    }
    resp_count_read(r, true);
    size_t n;
    const void *v = momento_result_value(res, &n);
    q->value = malloc(n ? n : 1);
    if (!q->value) {
        resp_end_error(r, "ERR out of memory");
        free(q);
        return;
    }
    memcpy(q->value, v, n);
    q->value_len = n;
    px_backend *b = px_conn_backend(px_reply_conn(r));
    int rc = momento_delete(b->client, b->cache, q->key, q->key_len, NULL, on_getdel_deleted, q);
    if (!resp_submitted(r, rc)) {
        free(q->value);
        free(q);
    }
}

static void cmd_getdel(px_reply *r, int argc, const px_str *argv)
{
    getdel_req *q = resp_ctx_new(r, sizeof(*q) + argv[1].n);
    if (!q)
        return;
    q->r = r;
    q->key_len = argv[1].n;
    memcpy(q->key, argv[1].p, argv[1].n);
    px_backend *b = px_conn_backend(px_reply_conn(r));
    /* The value answered must be the one deleted. */
    int rc = momento_get(b->client, b->cache, q->key, q->key_len, &px_current_read,
                         on_getdel_read, q);
    if (!resp_submitted(r, rc))
        free(q);
}

/* ---- MGET, MSET ---- */

/* Each key's answer, from its item of the batch or its get alone
 * (multiget.h). A key of another type reads as nil, as in Redis's MGET.
 * Any other failure of a key is the command's: Redis's MGET never answers
 * in part, and a nil would say the key is absent. */
static void on_mget(const momento_result *const *items, size_t n, void *ud)
{
    px_reply *r = ud;
    for (size_t i = 0; i < n; i++) {
        if (!items[i]) { /* not asked: no memory (multiget.h) */
            resp_end_error(r, "ERR out of memory");
            return;
        }
        if (momento_result_error(items[i]) != MOMENTO_OK && !resp_is_wrongtype(items[i])) {
            resp_momento_error(r, 0, items[i]);
            return;
        }
    }
    resp_array(r, (long long)n);
    for (size_t i = 0; i < n; i++) {
        const momento_result *it = items[i];
        resp_read_value(r, it, momento_result_error(it) == MOMENTO_OK && momento_result_is_hit(it));
    }
    px_reply_end(r);
}

static void cmd_mget(px_reply *r, int argc, const px_str *argv)
{
    px_backend *b = px_conn_backend(px_reply_conn(r));
    resp_submitted(r, px_multiget(b, argv + 1, (size_t)argc - 1, on_mget, r));
}

static void on_mset(const momento_result *res, void *ud)
{
    px_reply *r = ud;
    if (resp_end_if_error(r, res))
        return;
    for (size_t i = 0; i < momento_result_item_count(res); i++) {
        const momento_result *it = momento_result_item(res, i);
        if (momento_result_error(it) != MOMENTO_OK) {
            if (resp_is_wrongtype(it))
                resp_end_wrongtype(r);
            else
                resp_momento_error(r, 0, it);
            return;
        }
    }
    resp_end_ok(r);
}

static void cmd_mset(px_reply *r, int argc, const px_str *argv)
{
    if (argc % 2 == 0) {
        resp_end_error(r, "ERR wrong number of arguments for 'mset' command");
        return;
    }
    px_backend *b = px_conn_backend(px_reply_conn(r));
    size_t n = (size_t)(argc - 1) / 2;
    const void **keys;
    size_t *lens;
    if (!resp_arrays_new(2 * n, &keys, &lens)) {
        resp_end_error(r, "ERR out of memory");
        return;
    }
    for (size_t i = 0; i < n; i++) {
        keys[i] = argv[1 + 2 * i].p;
        lens[i] = argv[1 + 2 * i].n;
        keys[n + i] = argv[2 + 2 * i].p;
        lens[n + i] = argv[2 + 2 * i].n;
    }
    int rc = momento_set_batch(b->client, b->cache, (const void *const *)keys, lens,
                               (const void *const *)(keys + n), lens + n, n, b->default_ttl_ms,
                               NULL, on_mset, r);
    free(keys);
    free(lens);
    resp_submitted(r, rc);
}

const resp_cmd resp_string_cmds[] = {
    {"get", 2, cmd_get},         {"set", -3, cmd_set},       {"setnx", 3, cmd_setnx},
    {"setex", 4, cmd_setex},     {"psetex", 4, cmd_psetex},  {"getdel", 2, cmd_getdel},
    {"mget", -2, cmd_mget},      {"mset", -3, cmd_mset},     {NULL, 0, NULL},
};
