/* memcached's operations on Momento (mc_ops.h). One mc_op per operation
 * holds the copied key and data and whatever a later call needs; it is
 * freed when `done` has been called. */
#include "memcache/mc_ops.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* How often a read-modify-write (cas, incr, append, ...) starts again
 * when another writer keeps changing the key between its read and its
 * conditional write. */
#define MC_TRIES 8
/* The TTL of a write whose exptime is already past (then deleted). */
#define EXPIRED_TTL_MS 1
/* The cas unique a binary write answers when its exptime is already past:
 * memcached answers the unique of an item already gone, which no later
 * cas can match. Nothing is stored to take a unique from, so any non-zero
 * number serves: a later value whose unique (mc_unique) is 1 - a 2^-63
 * chance, as a hash of 0 is made 1 too - would match it. */
#define GONE_CAS 1

typedef enum { OP_GAT, OP_STORE, OP_RMW, OP_DELETE, OP_TOUCH, OP_FLUSH } op_kind;

typedef struct mc_op {
    px_backend *b;
    mc_done done;
    void *ud;
    op_kind kind;
    mc_store_mode mode;
    uint32_t flags;
    mc_ttl ttl;
    uint64_t cas;
    bool want_cas;
    uint64_t unique;    /* the value being written's (want_cas) */
    bool check;
    /* incr / decr */
    bool arith;
    bool incr;
    uint64_t delta;
    bool has_initial;
    bool creating;      /* the write under way stores `initial` */
    uint64_t initial;
    uint64_t number;    /* the counter being written */
    int tries;
    /* Two calls at once (a read-modify-write's read, gat): both end
     * before the operation goes on. */
    int pending;
    bool failed;
    mc_result fail;
    char msg[256];      /* fail.message, copied out of its result */
    bool hit;
    bool other;         /* gat: the key holds a collection (a miss) */
    bool ttl_hit;
    uint64_t remaining_ms;
    char *hash;
    size_t hash_len;
    char *val;          /* the value read, as stored (flags first) */
    size_t val_len;
    /* key and data, inline after the struct */
    char *key;
    size_t key_len;
    char *data;
    size_t data_len;
} mc_op;

static void no_memory(px_backend *b, mc_done done, void *ud)
{
    mc_result r = {.status = MC_FAILED, .error = MOMENTO_ERR_NO_MEMORY, .message = "out of memory"};
    b->stats->backend_errors++;
    done(&r, ud);
}

/* NULL out of memory, done having been told so (no_memory): every
 * operation answers that failure alike. */
static mc_op *op_new(px_backend *b, op_kind kind, px_str key, px_str data, mc_done done, void *ud)
{
    mc_op *op = calloc(1, sizeof(*op) + key.n + data.n + 1);
    if (!op) {
        no_memory(b, done, ud);
        return NULL;
    }
    op->b = b;
    op->kind = kind;
    op->done = done;
    op->ud = ud;
    op->key = (char *)(op + 1);
    op->key_len = key.n;
    if (key.n)
        memcpy(op->key, key.p, key.n);
    op->data = op->key + key.n;
    op->data_len = data.n;
    if (data.n)
        memcpy(op->data, data.p, data.n);
    return op;
}

static void op_free(mc_op *op)
{
    free(op->hash);
    free(op->val);
    free(op);
}

static void finish(mc_op *op, const mc_result *res)
{
    op->done(res, op->ud);
    op_free(op);
}

static void finish_status(mc_op *op, mc_status st)
{
    mc_result r = {.status = st, .message = ""};
    finish(op, &r);
}

void mc_result_failed(px_backend *b, mc_result *out, int rc, const momento_result *res)
{
    b->stats->backend_errors++;
    if (rc == MOMENTO_OK)
        rc = momento_result_error(res);
    memset(out, 0, sizeof(*out));
    out->status = MC_FAILED;
    out->error = rc;
    if (rc == MOMENTO_ERR_LIMIT_EXCEEDED && momento_result_limit_kind(res) == MOMENTO_LIMIT_ITEM_SIZE)
        out->status = MC_TOO_LARGE;
    const char *msg = res ? momento_result_message(res) : NULL;
    out->message = msg && *msg ? msg : momento_strerror(rc);
}

/* The operation ends with this Momento failure. */
static void finish_failed(mc_op *op, int rc, const momento_result *res)
{
    mc_result r;
    mc_result_failed(op->b, &r, rc, res);
    finish(op, &r);
}

/* When res failed, ends the operation with it and returns true: the first
 * line of most callbacks. */
static bool finish_if_failed(mc_op *op, const momento_result *res)
{
    if (momento_result_error(res) == MOMENTO_OK)
        return false;
    finish_failed(op, 0, res);
    return true;
}

/* Keeps the first failure of a pair of calls until both are over. */
static void keep_failure(mc_op *op, int rc, const momento_result *res)
{
    if (op->failed) {
        op->b->stats->backend_errors++;
        return;
    }
    op->failed = true;
    mc_result_failed(op->b, &op->fail, rc, res);
    snprintf(op->msg, sizeof(op->msg), "%s", op->fail.message);
    op->fail.message = op->msg;
}

/* A call's submission: false (and the operation finished) when refused. */
static bool submitted(mc_op *op, int rc)
{
    if (rc == MOMENTO_OK) {
        op->b->stats->backend_calls++;
        return true;
    }
    finish_failed(op, rc, NULL);
    return false;
}

uint64_t mc_ttl_ms(const px_backend *b, mc_ttl ttl)
{
    if (ttl.expired)
        return EXPIRED_TTL_MS;
    uint64_t ms = ttl.ms ? ttl.ms : b->default_ttl_ms;
    return ms > MOMENTO_MAX_TTL_MS ? MOMENTO_MAX_TTL_MS : ms;
}

static bool copy_bytes(char **dst, size_t *dst_len, const void *src, size_t n)
{
    free(*dst);
    *dst = malloc(n ? n : 1);
    if (!*dst) {
        *dst_len = 0;
        return false;
    }
    if (n)
        memcpy(*dst, src, n);
    *dst_len = n;
    return true;
}

/* The value to store: flags, then data. NULL when out of memory. */
static char *encode(uint32_t flags, const char *data, size_t n)
{
    char *v = malloc(MC_FLAGS_BYTES + n);
    if (v)
        mc_value_encode(flags, data, n, v);
    return v;
}

/* ---- the cas unique ---- */

/* SplitMix64's finalizer (Steele, Lea and Flood, "Fast splittable
 * pseudorandom number generators", 2014): a bijection of 64-bit words in
 * which every input bit changes about half of the output bits. */
static uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ x >> 31;
}

/* Eight bytes as a little-endian number on every host, so that proxies on
 * different machines give one value the same unique. */
static uint64_t load_le64(const unsigned char *p)
{
    uint64_t w;
    memcpy(&w, p, sizeof(w));
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    w = __builtin_bswap64(w);
#endif
    return w;
}

/* The cas unique of a stored value (flags, then data: mc_value_encode's
 * form): a 64-bit hash of its bytes, computed here rather than read from
 * Momento, so that a get owing a unique is a plain get (coalesced and
 * batched) and a write knows its unique without asking. The same bytes
 * give the same unique in every proxy; different bytes the same one with
 * a chance of about 2^-64 (it is not a cryptographic hash: a client that
 * crafts two values with one unique fools only cas, which anyone who can
 * write the key can already overwrite). Never 0, which means "no cas" in
 * both protocols. Four lanes of eight bytes each, so that a large value
 * is read at several bytes a cycle; each step, mix64(lane ^ word), is a
 * bijection of the lane, so two values of one length that differ in one
 * word never meet. */
static uint64_t mc_unique(const void *value, size_t n)
{
    const unsigned char *p = value;
    /* 1 to 4 times 2^64 over the golden ratio: distinct lanes, so that
     * words moved from one lane to another change the unique. */
    uint64_t lane[4] = {0x9e3779b97f4a7c15ull, 0x3c6ef372fe94f82aull, 0xdaa66d2c7ddf743full,
                        0x78dde6e5fd29f054ull};
    size_t i = 0;
    for (; n - i >= 32; i += 32)
        for (int j = 0; j < 4; j++)
            lane[j] = mix64(lane[j] ^ load_le64(p + i + 8 * j));
    int j = 0;
    for (; n - i >= 8; i += 8, j++)
        lane[j] = mix64(lane[j] ^ load_le64(p + i));
    if (i < n) {
        /* The last bytes, zero-padded: the length, mixed in below, tells
         * them from a value that has those zeros. */
        uint64_t w = 0;
        for (size_t k = 0; i + k < n; k++)
            w |= (uint64_t)p[i + k] << (8 * k);
        lane[j] = mix64(lane[j] ^ w);
    }
    uint64_t h = mix64((uint64_t)n);
    for (j = 0; j < 4; j++)
        h = mix64(h ^ lane[j]);
    return h ? h : 1;
}

/* ---- get ---- */

/* A get needs none of mc_op's state (its key is copied by the library at
 * submit): the commonest command gets a small allocation of its own. */
typedef struct get_op {
    px_backend *b;
    mc_done done;
    void *ud;
    bool want_cas;
} get_op;

/* memcached has no types: a key holding a collection (made through the
 * RESP port), which fails a get with FAILED_PRECONDITION, holds nothing a
 * memcached client can read, as a value shorter than the flags does -
 * both are misses (issue 46). */
static bool other_type(const momento_result *res)
{
    return momento_result_error(res) == MOMENTO_ERR_FAILED_PRECONDITION;
}

void mc_get_result(px_backend *b, const momento_result *res, bool want_cas, mc_result *out)
{
    *out = (mc_result){.status = MC_MISS, .message = ""};
    if (other_type(res))
        return;
    if (momento_result_error(res) != MOMENTO_OK) {
        mc_result_failed(b, out, 0, res);
        return;
    }
    size_t n;
    const void *v = momento_result_value(res, &n);
    if (momento_result_is_hit(res) && mc_value_decode(v, n, &out->flags, &out->data, &out->len)) {
        out->status = MC_HIT;
        if (want_cas)
            out->cas = mc_unique(v, n);
    }
}

int mc_get_send(px_backend *b, px_str key, bool want_cas, momento_callback cb, void *ud)
{
    /* A get may be answered from the near cache; one that answers a
     * unique (gets, gats, every binary get) may not. The unique is a hash
     * of the value read (mc_unique), so a stale value's unique is an old
     * one: the cas it feeds compares it with the bytes GetWithHash reads
     * and answers EXISTS - no write is lost - but nothing drops the near
     * cache's entry on EXISTS, so a client's gets-cas loop would read the
     * same stale item and fail again until the bound passed (up to an
     * hour). A unique is asked for to write with it: it must be current. */
    const momento_request_options *opts = want_cas ? &px_current_read : NULL;
    int rc;
    if (b->co)
        rc = momento_coalescing_get(b->co, b->cache, key.p, key.n, opts, cb, ud);
    else
        rc = momento_get(b->client, b->cache, key.p, key.n, opts, cb, ud);
    if (rc == MOMENTO_OK)
        b->stats->backend_calls++;
    return rc;
}

static void on_get(const momento_result *res, void *ud)
{
    get_op op = *(get_op *)ud;
    free(ud);
    mc_result r;
    mc_get_result(op.b, res, op.want_cas, &r);
    op.done(&r, op.ud);
}

void mc_get(px_backend *b, px_str key, bool want_cas, mc_done done, void *ud)
{
    get_op *op = malloc(sizeof(*op));
    if (!op) {
        no_memory(b, done, ud);
        return;
    }
    *op = (get_op){b, done, ud, want_cas};
    int rc = mc_get_send(b, key, want_cas, on_get, op);
    if (rc == MOMENTO_OK)
        return;
    free(op);
    mc_result r;
    mc_result_failed(b, &r, rc, NULL);
    done(&r, ud);
}

/* ---- gat: a get and a TTL update at once ---- */

static void on_deleted(const momento_result *res, void *ud);

/* The value read (or a miss), as gat answers it. */
static void gat_answer(mc_op *op)
{
    mc_result r = {.status = MC_MISS, .message = ""};
    if (op->hit && mc_value_decode(op->val, op->val_len, &r.flags, &r.data, &r.len)) {
        r.status = MC_HIT;
        r.cas = op->want_cas ? mc_unique(op->val, op->val_len) : 0;
    }
    finish(op, &r);
}

static void gat_step(mc_op *op)
{
    if (--op->pending > 0)
        return;
    if (op->failed) {
        finish(op, &op->fail);
        return;
    }
    if (op->ttl.expired && (op->hit || op->other)) {
        /* memcached answers the value and the item is gone: deleted before
         * the answer, so that nothing after it can see the value. */
        submitted(op, momento_delete(op->b->client, op->b->cache, op->key, op->key_len, NULL,
                                     on_deleted, op));
        return;
    }
    gat_answer(op);
}

static void on_gat_get(const momento_result *res, void *ud)
{
    mc_op *op = ud;
    if (momento_result_error(res) != MOMENTO_OK) {
        /* A key of another type is a miss; the TTL update beside the get
         * still touches it, as touch does (a past exptime deletes it). */
        if (other_type(res))
            op->other = true;
        else
            keep_failure(op, 0, res);
    } else if (momento_result_is_hit(res)) {
        size_t n;
        const void *v = momento_result_value(res, &n);
        op->hit = copy_bytes(&op->val, &op->val_len, v, n);
        if (!op->hit)
            keep_failure(op, MOMENTO_ERR_NO_MEMORY, NULL);
    }
    gat_step(op);
}

static void on_gat_ttl(const momento_result *res, void *ud)
{
    mc_op *op = ud;
    if (momento_result_error(res) != MOMENTO_OK)
        keep_failure(op, 0, res);
    gat_step(op);
}

void mc_gat(px_backend *b, px_str key, mc_ttl ttl, bool want_cas, mc_done done, void *ud)
{
    mc_op *op = op_new(b, OP_GAT, key, (px_str){NULL, 0}, done, ud);
    if (!op)
        return;
    op->want_cas = want_cas;
    op->ttl = ttl;
    /* An exptime already past: the get alone, then a Delete on a hit
     * (gat_step) - no TTL of 1 ms that a get could still meet. */
    op->pending = ttl.expired ? 1 : 2;
    /* Current, not the near cache's: an expired exptime deletes the key
     * when the get finds it (gat_step), and a stale miss would leave it. */
    int rc = momento_get(b->client, b->cache, op->key, op->key_len, &px_current_read, on_gat_get,
                         op);
    if (!submitted(op, rc) || ttl.expired)
        return;
    rc = momento_update_ttl(b->client, b->cache, op->key, op->key_len, mc_ttl_ms(b, ttl), NULL,
                            on_gat_ttl, op);
    if (rc == MOMENTO_OK) {
        b->stats->backend_calls++;
    } else {
        keep_failure(op, rc, NULL);
        op->pending--; /* the get still ends it */
    }
}

/* ---- touch ---- */

static void delete_now(mc_op *op);

static void on_touched(const momento_result *res, void *ud)
{
    mc_op *op = ud;
    if (finish_if_failed(op, res))
        return;
    if (momento_result_outcome(res) == MOMENTO_OUTCOME_MISS) {
        finish_status(op, MC_NOT_FOUND);
        return;
    }
    if (op->ttl.expired) {
        /* Its TTL is now 1 ms: deleted before TOUCHED is answered, so that
         * no read after the answer meets it in that millisecond. */
        delete_now(op);
        return;
    }
    finish_status(op, MC_TOUCHED);
}

void mc_touch(px_backend *b, px_str key, mc_ttl ttl, bool check, mc_done done, void *ud)
{
    mc_op *op = op_new(b, OP_TOUCH, key, (px_str){NULL, 0}, done, ud);
    if (!op)
        return;
    op->ttl = ttl;
    if (ttl.expired && !check) {
        /* Nobody reads the answer: the Delete alone. */
        delete_now(op);
        return;
    }
    submitted(op, momento_update_ttl(b->client, b->cache, op->key, op->key_len, mc_ttl_ms(b, ttl),
                                     NULL, on_touched, op));
}

/* ---- delete ---- */

static void on_deleted(const momento_result *res, void *ud)
{
    mc_op *op = ud;
    if (finish_if_failed(op, res))
        return;
    /* A store, touch or gat whose exptime was past ends here too. */
    switch (op->kind) {
    case OP_DELETE:
        finish_status(op, MC_DELETED);
        break;
    case OP_TOUCH:
        finish_status(op, MC_TOUCHED);
        break;
    case OP_GAT:
        gat_answer(op);
        break;
    default: {
        mc_result r = {.status = MC_STORED, .message = "", .cas = op->want_cas ? GONE_CAS : 0};
        finish(op, &r);
        break;
    }
    }
}

static void delete_now(mc_op *op)
{
    submitted(op, momento_delete(op->b->client, op->b->cache, op->key, op->key_len, NULL,
                                 on_deleted, op));
}

static void on_delete_checked(const momento_result *res, void *ud)
{
    mc_op *op = ud;
    if (finish_if_failed(op, res))
        return;
    bool there;
    if (op->cas) {
        size_t n;
        const void *v = momento_result_value(res, &n);
        uint32_t flags;
        const char *d;
        size_t dn;
        there = momento_result_is_hit(res) && mc_value_decode(v, n, &flags, &d, &dn);
        if (there && mc_unique(v, n) != op->cas) {
            finish_status(op, MC_EXISTS);
            return;
        }
    } else {
        there = momento_result_exists(res, 0) == 1;
    }
    if (!there) {
        finish_status(op, MC_NOT_FOUND);
        return;
    }
    delete_now(op);
}

void mc_delete(px_backend *b, px_str key, uint64_t cas, bool check, mc_done done, void *ud)
{
    mc_op *op = op_new(b, OP_DELETE, key, (px_str){NULL, 0}, done, ud);
    if (!op)
        return;
    op->cas = cas;
    /* A plain Get: the unique is the value's (mc_unique), and Momento has
     * no Delete conditioned on a hash for the server's hash to serve. */
    if (cas)
        /* Current: the unique compared must be the item's now. */
        submitted(op, momento_get(b->client, b->cache, op->key, op->key_len, &px_current_read,
                                  on_delete_checked, op));
    else if (check)
        submitted(op, momento_key_exists(b->client, b->cache, op->key, op->key_len, NULL,
                                         on_delete_checked, op));
    else
        delete_now(op);
}

/* ---- read-modify-write: incr, decr, append, prepend ---- */

static void rmw_read(mc_op *op);
static void finish_written(mc_op *op);

static void rmw_retry(mc_op *op)
{
    if (++op->tries >= MC_TRIES) {
        mc_result r = {.status = MC_FAILED, .error = MOMENTO_ERR_FAILED_PRECONDITION,
                       .message = "the key kept changing during the update"};
        op->b->stats->backend_errors++;
        finish(op, &r);
        return;
    }
    rmw_read(op);
}

static void on_rmw_written(const momento_result *res, void *ud)
{
    mc_op *op = ud;
    if (finish_if_failed(op, res))
        return;
    if (momento_result_outcome(res) == MOMENTO_OUTCOME_NOT_STORED) {
        rmw_retry(op);
        return;
    }
    finish_written(op);
}

/* Writes `nv` (encoded) if the key still holds what was read. */
static void rmw_write(mc_op *op, char *nv, size_t n, uint64_t ttl_ms)
{
    px_backend *b = op->b;
    op->unique = op->want_cas ? mc_unique(nv, n) : 0;
    int rc;
    if (op->creating)
        rc = momento_set_if_absent(b->client, b->cache, op->key, op->key_len, nv, n, ttl_ms, NULL,
                                   on_rmw_written, op);
    else
        rc = momento_set_if_present_and_hash_equal(b->client, b->cache, op->key, op->key_len, nv, n,
                                                   ttl_ms, op->hash, op->hash_len, NULL,
                                                   on_rmw_written, op);
    free(nv);
    submitted(op, rc);
}

static void rmw_step(mc_op *op)
{
    if (--op->pending > 0)
        return;
    if (op->failed) {
        finish(op, &op->fail);
        return;
    }
    op->creating = false;
    if (!op->hit) {
        if (op->arith && op->has_initial) {
            op->number = op->initial;
            if (op->ttl.expired) {
                /* memcached creates it already expired: the answer is the
                 * initial value and nothing is left, so nothing is written
                 * (no 1 ms in which a read could meet it). */
                mc_result r = {.status = MC_NUMBER, .message = "", .number = op->number,
                               .cas = op->want_cas ? GONE_CAS : 0};
                finish(op, &r);
                return;
            }
            char digits[MC_COUNTER_MAX];
            size_t n = mc_counter_format(op->initial, 0, digits);
            char *nv = encode(0, digits, n);
            if (!nv) {
                no_memory(op->b, op->done, op->ud);
                op_free(op);
                return;
            }
            op->creating = true;
            rmw_write(op, nv, MC_FLAGS_BYTES + n, mc_ttl_ms(op->b, op->ttl));
            return;
        }
        finish_status(op, op->arith ? MC_NOT_FOUND : MC_NOT_STORED);
        return;
    }
    if (!op->ttl_hit) {
        rmw_retry(op); /* gone between the two reads */
        return;
    }
    uint32_t flags;
    const char *old;
    size_t old_len;
    if (!mc_value_decode(op->val, op->val_len, &flags, &old, &old_len)) {
        finish_status(op, op->arith ? MC_NON_NUMERIC : MC_NOT_STORED);
        return;
    }
    /* The item keeps the TTL it has left, as memcached's keeps its
     * exptime; one reported with 0 ms left is at its end, not new. */
    uint64_t ttl_ms = op->remaining_ms ? op->remaining_ms : EXPIRED_TTL_MS;
    char *nv;
    size_t n;
    if (op->arith) {
        uint64_t v;
        if (!mc_counter_parse(old, old_len, &v)) {
            finish_status(op, MC_NON_NUMERIC);
            return;
        }
        if (op->incr)
            v += op->delta; /* wraps at 2^64, as memcached's */
        else
            v = op->delta > v ? 0 : v - op->delta;
        op->number = v;
        size_t room = old_len > MC_COUNTER_MAX ? old_len : MC_COUNTER_MAX;
        nv = malloc(MC_FLAGS_BYTES + room);
        if (nv) {
            n = mc_counter_format(v, old_len, nv + MC_FLAGS_BYTES);
            mc_value_encode(flags, NULL, 0, nv);
        }
    } else {
        n = old_len + op->data_len;
        if (MC_FLAGS_BYTES + op->key_len + n > MOMENTO_MAX_ITEM_BYTES) {
            finish_status(op, MC_TOO_LARGE);
            return;
        }
        nv = malloc(MC_FLAGS_BYTES + n);
        if (nv) {
            mc_value_encode(flags, NULL, 0, nv);
            char *d = nv + MC_FLAGS_BYTES;
            if (op->mode == MC_MODE_APPEND) {
                memcpy(d, old, old_len);
                memcpy(d + old_len, op->data, op->data_len);
            } else {
                memcpy(d, op->data, op->data_len);
                memcpy(d + op->data_len, old, old_len);
            }
        }
    }
    if (!nv) {
        no_memory(op->b, op->done, op->ud);
        op_free(op);
        return;
    }
    rmw_write(op, nv, MC_FLAGS_BYTES + n, ttl_ms);
}

static void on_rmw_get(const momento_result *res, void *ud)
{
    mc_op *op = ud;
    if (momento_result_error(res) != MOMENTO_OK) {
        keep_failure(op, 0, res);
    } else if (momento_result_is_hit(res)) {
        size_t n, hn;
        const void *v = momento_result_value(res, &n);
        const void *h = momento_result_hash(res, &hn);
        op->hit = copy_bytes(&op->val, &op->val_len, v, n) &&
                  copy_bytes(&op->hash, &op->hash_len, h, hn);
        if (!op->hit)
            keep_failure(op, MOMENTO_ERR_NO_MEMORY, NULL);
    }
    rmw_step(op);
}

static void on_rmw_ttl(const momento_result *res, void *ud)
{
    mc_op *op = ud;
    if (momento_result_error(res) != MOMENTO_OK) {
        keep_failure(op, 0, res);
    } else if (momento_result_is_hit(res)) {
        op->ttl_hit = true;
        op->remaining_ms = momento_result_ttl_ms(res);
    }
    rmw_step(op);
}

static void rmw_read(mc_op *op)
{
    px_backend *b = op->b;
    op->hit = op->ttl_hit = false;
    op->remaining_ms = 0;
    op->pending = 2;
    if (!submitted(op, momento_get_with_hash(b->client, b->cache, op->key, op->key_len, NULL,
                                             on_rmw_get, op)))
        return;
    int rc = momento_item_get_ttl(b->client, b->cache, op->key, op->key_len, NULL, on_rmw_ttl, op);
    if (rc == MOMENTO_OK) {
        b->stats->backend_calls++;
    } else {
        keep_failure(op, rc, NULL);
        op->pending--;
    }
}

void mc_arith(px_backend *b, px_str key, bool incr, uint64_t delta, bool has_initial,
              uint64_t initial, mc_ttl initial_ttl, bool want_cas, mc_done done, void *ud)
{
    mc_op *op = op_new(b, OP_RMW, key, (px_str){NULL, 0}, done, ud);
    if (!op)
        return;
    op->arith = true;
    op->incr = incr;
    op->delta = delta;
    op->has_initial = has_initial;
    op->initial = initial;
    op->ttl = initial_ttl;
    op->want_cas = want_cas;
    rmw_read(op);
}

/* ---- the answer to a write ---- */

/* The write's success, with the unique of the value it wrote (op->unique,
 * computed as it was sent). A writer after it changes the key's unique:
 * then the answer is as memcached's, the unique of a value since
 * replaced, which a cas no longer matches. */
static void finish_written(mc_op *op)
{
    mc_result r = {.status = op->arith ? MC_NUMBER : MC_STORED, .message = "",
                   .number = op->number, .cas = op->unique};
    finish(op, &r);
}

/* ---- set, add, replace, cas ---- */

static void cas_read(mc_op *op);

static void on_stored(const momento_result *res, void *ud)
{
    mc_op *op = ud;
    if (finish_if_failed(op, res))
        return;
    if (momento_result_outcome(res) == MOMENTO_OUTCOME_NOT_STORED) {
        if (op->mode != MC_MODE_CAS) {
            finish_status(op, MC_NOT_STORED);
        } else if (++op->tries >= MC_TRIES) {
            finish_status(op, MC_EXISTS); /* other writers kept winning */
        } else {
            cas_read(op); /* changed or gone since the read: look again */
        }
        return;
    }
    if (op->ttl.expired) {
        /* Written with a 1 ms TTL for the answer; gone now. */
        delete_now(op);
        return;
    }
    finish_written(op);
}

static void store_write(mc_op *op, const char *hash, size_t hash_len)
{
    px_backend *b = op->b;
    char *v = encode(op->flags, op->data, op->data_len);
    if (!v) {
        no_memory(b, op->done, op->ud);
        op_free(op);
        return;
    }
    size_t n = MC_FLAGS_BYTES + op->data_len;
    uint64_t ttl = mc_ttl_ms(b, op->ttl);
    op->unique = op->want_cas ? mc_unique(v, n) : 0;
    int rc;
    switch (op->mode) {
    case MC_MODE_ADD:
        rc = momento_set_if_absent(b->client, b->cache, op->key, op->key_len, v, n, ttl, NULL,
                                   on_stored, op);
        break;
    case MC_MODE_REPLACE:
        rc = momento_set_if_present(b->client, b->cache, op->key, op->key_len, v, n, ttl, NULL,
                                    on_stored, op);
        break;
    case MC_MODE_CAS:
        rc = momento_set_if_present_and_hash_equal(b->client, b->cache, op->key, op->key_len, v, n,
                                                   ttl, hash, hash_len, NULL, on_stored, op);
        break;
    default:
        rc = momento_set(b->client, b->cache, op->key, op->key_len, v, n, ttl, NULL, on_stored, op);
        break;
    }
    free(v);
    submitted(op, rc);
}

static void on_cas_read(const momento_result *res, void *ud)
{
    mc_op *op = ud;
    if (finish_if_failed(op, res))
        return;
    size_t n, hn;
    const void *v = momento_result_value(res, &n);
    const void *h = momento_result_hash(res, &hn);
    uint32_t flags;
    const char *d;
    size_t dn;
    if (!momento_result_is_hit(res) || !mc_value_decode(v, n, &flags, &d, &dn)) {
        finish_status(op, MC_NOT_FOUND);
        return;
    }
    if (!h || hn == 0 || mc_unique(v, n) != op->cas) {
        finish_status(op, MC_EXISTS);
        return;
    }
    /* The unique matched the bytes read; the write is conditioned on
     * Momento's hash of those same bytes, so that it lands only over them
     * and not over a write that came after the read. */
    store_write(op, h, hn);
}

/* add with an exptime already past: memcached stores an item that is
 * gone at once, so only whether the key was there shows (NOT_STORED). */
static void on_add_expired(const momento_result *res, void *ud)
{
    mc_op *op = ud;
    if (finish_if_failed(op, res))
        return;
    if (momento_result_exists(res, 0) == 1) {
        finish_status(op, MC_NOT_STORED);
        return;
    }
    mc_result r = {.status = MC_STORED, .message = "", .cas = op->want_cas ? GONE_CAS : 0};
    finish(op, &r);
}

static void cas_read(mc_op *op)
{
    submitted(op, momento_get_with_hash(op->b->client, op->b->cache, op->key, op->key_len, NULL,
                                        on_cas_read, op));
}

void mc_store(px_backend *b, mc_store_mode mode, px_str key, uint32_t flags, px_str data,
              mc_ttl ttl, uint64_t cas, bool want_cas, mc_done done, void *ud)
{
    mc_op *op = op_new(b, mode == MC_MODE_APPEND || mode == MC_MODE_PREPEND ? OP_RMW : OP_STORE,
                       key, data, done, ud);
    if (!op)
        return;
    op->mode = mode;
    op->flags = flags;
    op->ttl = ttl;
    op->cas = cas;
    op->want_cas = want_cas;
    switch (mode) {
    case MC_MODE_APPEND:
    case MC_MODE_PREPEND:
        rmw_read(op);
        break;
    case MC_MODE_CAS:
        cas_read(op);
        break;
    case MC_MODE_SET:
        if (ttl.expired) {
            /* memcached stores an item already expired: the key is gone. */
            delete_now(op);
            break;
        }
        store_write(op, NULL, 0);
        break;
    case MC_MODE_ADD:
        if (ttl.expired) {
            /* Nothing to write: one call, and no millisecond in which a
             * read could meet the value. */
            submitted(op, momento_key_exists(b->client, b->cache, op->key, op->key_len, NULL,
                                             on_add_expired, op));
            break;
        }
        store_write(op, NULL, 0);
        break;
    default:
        store_write(op, NULL, 0);
        break;
    }
}

/* ---- flush_all ---- */

static void on_flushed(const momento_result *res, void *ud)
{
    mc_op *op = ud;
    if (finish_if_failed(op, res))
        return;
    finish_status(op, MC_OK);
}

void mc_flush(px_backend *b, mc_done done, void *ud)
{
    mc_op *op = op_new(b, OP_FLUSH, (px_str){NULL, 0}, (px_str){NULL, 0}, done, ud);
    if (!op)
        return;
    submitted(op, momento_flush_cache(b->client, b->cache, NULL, on_flushed, op));
}

/* ---- what both protocols use ---- */

size_t mc_max_item(const px_backend *b)
{
    size_t m = b->limits.max_request_bytes;
    return m < MOMENTO_MAX_ITEM_BYTES ? m : MOMENTO_MAX_ITEM_BYTES;
}

int64_t mc_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec;
}
