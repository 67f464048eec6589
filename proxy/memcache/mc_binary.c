/* memcached's binary protocol: the feed and the answers, with memcached
 * 1.6's status codes and texts. Quiet requests answer only failures (a
 * quiet get: only hits); a noop is answered in its turn, after every
 * reply before it, which is what clients wait for. With a password
 * (px_backend.requirepass), SASL PLAIN as memcached -S asks for it. */
#include "auth.h"
#include "memcache/mc_proto.h"
#include "metrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* memcached's MAX_SASL_MECH_LEN: a longer mechanism name is refused. */
#define SASL_MECH_MAX 32
/* The longest body (mechanism and data) of a SASL request the proxy
 * reads: PLAIN's authzid, user name and password (at most 512 bytes:
 * options.c) fit several times over. A longer one is answered at its
 * header, as a wrong password, and skipped, not held: before
 * authentication a client can make the proxy hold no more than this, or
 * another request's header, extras and key (body_max()), where memcached
 * holds a SASL body up to an item's chunk (512 KB). */
#define SASL_DATA_MAX 4096

typedef struct bin_ctx {
    px_reply *r;
    uint8_t opcode;
    mc_bin_kind kind;
    bool quiet;
    bool with_key;
    bool too_large;     /* a set over the limit: the old value deleted */
    mc_text_kind count; /* what mc_stats counts it as */
    uint32_t opaque;
    size_t key_len;
    char key[];         /* for getk / gatk answers */
} bin_ctx;

static void put_be16(char *p, uint16_t v)
{
    p[0] = (char)(v >> 8);
    p[1] = (char)v;
}

static void put_be32(char *p, uint32_t v)
{
    p[0] = (char)(v >> 24);
    p[1] = (char)(v >> 16);
    p[2] = (char)(v >> 8);
    p[3] = (char)v;
}

static void put_be64(char *p, uint64_t v)
{
    put_be32(p, (uint32_t)(v >> 32));
    put_be32(p + 4, (uint32_t)v);
}

/* One response: header, extras, key, value. */
static void respond(px_reply *r, uint8_t op, uint32_t opaque, uint16_t status, uint64_t cas,
                    const void *extras, size_t extlen, const void *key, size_t keylen,
                    const void *value, size_t vlen)
{
    char h[MC_BIN_HEADER];
    h[0] = (char)MC_BIN_RES;
    h[1] = (char)op;
    put_be16(h + 2, (uint16_t)keylen);
    h[4] = (char)extlen;
    h[5] = 0; /* raw bytes */
    put_be16(h + 6, status);
    put_be32(h + 8, (uint32_t)(extlen + keylen + vlen));
    put_be32(h + 12, opaque);
    put_be64(h + 16, cas);
    px_reply_put(r, h, sizeof(h));
    if (extlen)
        px_reply_put(r, extras, extlen);
    if (keylen)
        px_reply_put(r, key, keylen);
    if (vlen)
        px_reply_put(r, value, vlen);
}

static void respond_status(px_reply *r, uint8_t op, uint32_t opaque, uint16_t status,
                           const char *text)
{
    respond(r, op, opaque, status, 0, NULL, 0, NULL, 0, text, strlen(text));
}

/* A Momento failure: a temporary one (the client may try again) or an
 * internal one, with Momento's reason as the body. */
static void respond_failed(bin_ctx *x, const mc_result *res)
{
    if (res->status == MC_TOO_LARGE) {
        respond_status(x->r, x->opcode, x->opaque, MC_ST_E2BIG, "Too large.");
        return;
    }
    uint16_t st = MC_ST_EINTERNAL;
    switch (res->error) {
    case MOMENTO_ERR_TIMEOUT:
    case MOMENTO_ERR_SERVER_UNAVAILABLE:
    case MOMENTO_ERR_CONNECTION:
    case MOMENTO_ERR_LIMIT_EXCEEDED:
    case MOMENTO_ERR_CLIENT_RESOURCE_EXHAUSTED:
        st = MC_ST_ETMPFAIL;
        break;
    case MOMENTO_ERR_NO_MEMORY:
        st = MC_ST_ENOMEM;
        break;
    default:
        break;
    }
    char buf[512];
    snprintf(buf, sizeof(buf), "momento %s: %s", momento_error_name(res->error), res->message);
    respond_status(x->r, x->opcode, x->opaque, st, buf);
}

static void on_done(const mc_result *res, void *ud)
{
    bin_ctx *x = ud;
    px_reply *r = x->r;
    mc_count_result(x->count, res);
    char ext[8];
    switch (res->status) {
    case MC_HIT:
        if (x->kind == MC_B_GET || x->kind == MC_B_GAT) {
            mc_stats.get_hits++;
            px_conn_backend(px_reply_conn(r))->stats->hits++;
        }
        put_be32(ext, res->flags);
        /* touch answers the flags without the value, as memcached does. */
        respond(r, x->opcode, x->opaque, MC_ST_OK, res->cas, ext, 4, x->with_key ? x->key : NULL,
                x->with_key ? x->key_len : 0, res->data,
                x->opcode == MC_OP_TOUCH ? 0 : res->len);
        break;
    case MC_MISS:
        mc_stats.get_misses++;
        px_conn_backend(px_reply_conn(r))->stats->misses++;
        if (x->quiet)
            break;
        if (x->with_key)
            respond(r, x->opcode, x->opaque, MC_ST_KEY_ENOENT, 0, NULL, 0, x->key, x->key_len,
                    NULL, 0);
        else
            respond_status(r, x->opcode, x->opaque, MC_ST_KEY_ENOENT, "Not found");
        break;
    case MC_STORED:
    case MC_DELETED:
    case MC_OK:
        if (x->too_large) {
            respond_status(r, x->opcode, x->opaque, MC_ST_E2BIG, "Too large.");
            break;
        }
        if (!x->quiet)
            respond(r, x->opcode, x->opaque, MC_ST_OK, res->cas, NULL, 0, NULL, 0, NULL, 0);
        break;
    case MC_TOUCHED:
        if (!x->quiet)
            respond(r, x->opcode, x->opaque, MC_ST_OK, 0, NULL, 0, NULL, 0, NULL, 0);
        break;
    case MC_NUMBER:
        if (!x->quiet) {
            put_be64(ext, res->number);
            respond(r, x->opcode, x->opaque, MC_ST_OK, res->cas, NULL, 0, NULL, 0, ext, 8);
        }
        break;
    case MC_NOT_STORED:
        if (x->opcode == MC_OP_ADD || x->opcode == MC_OP_ADDQ)
            respond_status(r, x->opcode, x->opaque, MC_ST_KEY_EEXISTS, "Data exists for key.");
        else if (x->opcode == MC_OP_REPLACE || x->opcode == MC_OP_REPLACEQ)
            respond_status(r, x->opcode, x->opaque, MC_ST_KEY_ENOENT, "Not found");
        else
            respond_status(r, x->opcode, x->opaque, MC_ST_NOT_STORED, "Not stored.");
        break;
    case MC_EXISTS:
        respond_status(r, x->opcode, x->opaque, MC_ST_KEY_EEXISTS, "Data exists for key.");
        break;
    case MC_NOT_FOUND:
        respond_status(r, x->opcode, x->opaque, MC_ST_KEY_ENOENT, "Not found");
        break;
    case MC_NON_NUMERIC:
        respond_status(r, x->opcode, x->opaque, MC_ST_DELTA_BADVAL,
                       "Non-numeric server-side value for incr or decr");
        break;
    case MC_TOO_LARGE:
    case MC_FAILED:
        respond_failed(x, res);
        break;
    }
    px_reply_end(r);
    free(x);
}

static bin_ctx *ctx_new(px_reply *r, const mc_bin_req *q, mc_text_kind count)
{
    size_t kn = q->with_key ? q->key.n : 0;
    bin_ctx *x = malloc(sizeof(*x) + kn);
    if (!x) {
        respond_status(r, q->opcode, q->opaque, MC_ST_ENOMEM, "Out of memory");
        px_reply_end(r);
        return NULL;
    }
    x->r = r;
    x->opcode = q->opcode;
    x->kind = q->kind;
    x->quiet = q->quiet;
    x->with_key = q->with_key;
    x->too_large = false;
    x->count = count;
    x->opaque = q->opaque;
    x->key_len = kn;
    if (kn)
        memcpy(x->key, q->key.p, kn);
    return x;
}

typedef struct stat_ud {
    px_reply *r;
    const mc_bin_req *q;
} stat_ud;

static void stat_packet(void *ud, const char *name, const char *value)
{
    stat_ud *s = ud;
    respond(s->r, s->q->opcode, s->q->opaque, MC_ST_OK, 0, NULL, 0, name, strlen(name), value,
            strlen(value));
}

/* ---- SASL (memcached 1.6's proto_bin.c, with Cyrus SASL's PLAIN) ---- */

/* SASL PLAIN's message: [authzid] NUL authcid NUL password. The proxy has
 * one secret and no users: any user name is taken with the password
 * --requirepass; an authorization identity other than the user's own is
 * refused, as Cyrus SASL refuses it by default. */
static bool plain_ok(const px_backend *b, const px_str *msg)
{
    const char *p = msg->p, *end = msg->p + msg->n;
    const char *nul1 = msg->n ? memchr(p, '\0', msg->n) : NULL;
    if (!nul1)
        return false;
    const char *user = nul1 + 1;
    const char *nul2 = memchr(user, '\0', (size_t)(end - user));
    if (!nul2 || nul2 == user)
        return false;
    size_t zn = (size_t)(nul1 - p), un = (size_t)(nul2 - user);
    if (zn && (zn != un || memcmp(p, user, un) != 0))
        return false;
    px_str pass = {nul2 + 1, (size_t)(end - nul2 - 1)};
    return px_secret_equal(b->requirepass, &pass);
}

/* SASL auth (a mechanism and its first data) or step (more data), answered
 * as memcached -S answers them with Cyrus SASL's PLAIN. Every exchange
 * that completes leaves the connection unauthenticated until it succeeds.
 * An exchange begun (PLAIN, with or without data) takes steps until one
 * succeeds: a wrong step can be followed by the right one. Once one has
 * succeeded (Cyrus's done flag), a later step fails, and so does the next
 * auth with data, which clears the flag; PLAIN without data keeps it. */
static void sasl_auth(px_reply *r, mc_state *st, const px_backend *b, const mc_bin_req *q)
{
    if (q->key.n > SASL_MECH_MAX) {
        respond_status(r, q->opcode, q->opaque, MC_ST_EINVAL, "Invalid arguments");
        st->swallow = q->swallow;
        return;
    }
    /* The body, when it was not awaited (over SASL_DATA_MAX): the
     * mechanism is the key, there are no extras. */
    size_t body = q->key.n + q->swallow;
    if (q->too_large && body > mc_max_item(b)) {
        respond_status(r, q->opcode, q->opaque, MC_ST_ENOMEM, "Out of memory");
        st->swallow = q->swallow;
        return;
    }
    st->authed = false;
    if (q->too_large)
        st->swallow = q->swallow; /* answered now, as a wrong password */
    bool plain = q->key.n == 5 && strncasecmp(q->key.p, "plain", 5) == 0;
    bool ok;
    if (q->opcode == MC_OP_SASL_STEP) {
        ok = st->sasl_started && !st->sasl_done && !q->too_large && plain_ok(b, &q->value);
    } else if (plain && q->value.n == 0 && !q->too_large) {
        /* PLAIN without its data: the client sends it as a step. */
        st->sasl_started = true;
        respond(r, q->opcode, q->opaque, MC_ST_AUTH_CONTINUE, 0, NULL, 0, NULL, 0, NULL, 0);
        return;
    } else {
        ok = !st->sasl_done && plain && !q->too_large && plain_ok(b, &q->value);
        st->sasl_started = ok;
        st->sasl_done = false;
    }
    if (ok) {
        st->authed = st->sasl_done = true;
        respond(r, q->opcode, q->opaque, MC_ST_OK, 0, NULL, 0, NULL, 0, "Authenticated", 13);
    } else {
        respond_status(r, q->opcode, q->opaque, MC_ST_AUTH_ERROR, "Auth failure.");
    }
}

/* What memcached -S answers before authentication: the SASL requests,
 * version, and the framing error it answers before looking at the
 * request at all. */
static bool runs_unauthenticated(const mc_bin_req *q)
{
    return q->opcode == MC_OP_SASL_LIST_MECHS || q->opcode == MC_OP_SASL_AUTH ||
           q->opcode == MC_OP_SASL_STEP || q->opcode == MC_OP_VERSION ||
           (q->kind == MC_B_UNKNOWN && q->hangup);
}

static mc_store_mode store_mode(const mc_bin_req *q)
{
    /* memcached: a set, add or replace that names a cas is a cas. */
    bool set_family = q->kind == MC_B_SET;
    if (set_family && q->cas)
        return MC_MODE_CAS;
    switch (q->opcode) {
    case MC_OP_ADD: case MC_OP_ADDQ:
        return MC_MODE_ADD;
    case MC_OP_REPLACE: case MC_OP_REPLACEQ:
        return MC_MODE_REPLACE;
    case MC_OP_APPEND: case MC_OP_APPENDQ:
        return MC_MODE_APPEND;
    case MC_OP_PREPEND: case MC_OP_PREPENDQ:
        return MC_MODE_PREPEND;
    default:
        return MC_MODE_SET;
    }
}

static void run_request(px_conn *c, mc_state *st, const mc_bin_req *q, bool keyed)
{
    px_backend *b = px_conn_backend(c);
    px_reply *r = px_reply_begin(c);
    if (!r)
        return;
    if (keyed)
        px_reply_claim(r, &q->key, 1, 1, q->kind != MC_B_GET);
    /* Only gets and gats answer values; every other answer is a header
     * and a short body (stat's few dozen packets, about 2 KB, are written
     * at once). */
    if (q->kind != MC_B_GET && q->kind != MC_B_GAT)
        px_reply_small(r);
    b->stats->commands++;
    px_reply_command(r, px_metrics_mc_binary_command(q->opcode));
    bin_ctx *x;
    mc_ttl ttl = mc_exptime((int64_t)q->exptime, mc_now_s());
    switch (q->kind) {
    case MC_B_INVALID:
        b->stats->protocol_errors++;
        respond_status(r, q->opcode, q->opaque, MC_ST_EINVAL, "Invalid arguments");
        px_reply_end(r);
        px_conn_close_after(c);
        return;
    case MC_B_UNKNOWN:
        b->stats->protocol_errors++;
        respond_status(r, q->opcode, q->opaque, MC_ST_UNKNOWN_COMMAND, "Unknown command");
        px_reply_end(r);
        if (q->hangup)
            px_conn_close_after(c);
        else
            st->swallow = q->swallow;
        return;
    case MC_B_SASL_LIST:
    case MC_B_SASL_AUTH:
        if (!b->requirepass) {
            /* memcached without -S knows no SASL request. */
            b->stats->protocol_errors++;
            respond_status(r, q->opcode, q->opaque, MC_ST_UNKNOWN_COMMAND, "Unknown command");
            st->swallow = q->swallow;
            break;
        }
        if (q->kind == MC_B_SASL_AUTH) {
            sasl_auth(r, st, b, q);
            break;
        }
        /* Listing unauthenticates, as in memcached (its init_sasl_conn());
         * an exchange begun goes on. */
        st->authed = false;
        respond(r, q->opcode, q->opaque, MC_ST_OK, 0, NULL, 0, NULL, 0, "PLAIN", 5);
        break;
    case MC_B_GET:
        mc_stats.cmd_get++;
        if ((x = ctx_new(r, q, MC_T_GET)))
            /* With the hash, so that the answer carries a cas unique. */
            mc_get(b, q->key, true, on_done, x);
        return;
    case MC_B_GAT:
        mc_stats.cmd_touch++;
        if (q->opcode != MC_OP_TOUCH)
            mc_stats.cmd_get++;
        if ((x = ctx_new(r, q, MC_T_TOUCH)))
            mc_gat(b, q->key, ttl, true, on_done, x);
        return;
    case MC_B_SET:
    case MC_B_APPEND:
        mc_stats.cmd_set++;
        if (q->too_large) {
            mc_stats.store_too_large++;
            st->swallow = q->swallow;
            if (q->opcode == MC_OP_SET || q->opcode == MC_OP_SETQ) {
                /* As memcached: the old value goes rather than stay stale. */
                if ((x = ctx_new(r, q, MC_T_SET))) {
                    x->too_large = true;
                    mc_delete(b, q->key, 0, false, on_done, x);
                }
                return;
            }
            respond_status(r, q->opcode, q->opaque, MC_ST_E2BIG, "Too large.");
            break;
        }
        if ((x = ctx_new(r, q, q->cas ? MC_T_CAS : MC_T_SET)))
            mc_store(b, store_mode(q), q->key, q->flags, q->value, ttl, q->cas, true, on_done, x);
        return;
    case MC_B_DELETE:
        if ((x = ctx_new(r, q, MC_T_DELETE)))
            mc_delete(b, q->key, q->cas, true, on_done, x);
        return;
    case MC_B_ARITH: {
        bool incr = q->opcode == MC_OP_INCREMENT || q->opcode == MC_OP_INCREMENTQ;
        if ((x = ctx_new(r, q, incr ? MC_T_INCR : MC_T_DECR)))
            /* An expiration of 0xffffffff: fail when the key is missing. */
            mc_arith(b, q->key, incr, q->delta, q->exptime != 0xffffffffu, q->initial, ttl, true,
                     on_done, x);
        return;
    }
    case MC_B_QUIT:
        if (!q->quiet)
            respond(r, q->opcode, q->opaque, MC_ST_OK, 0, NULL, 0, NULL, 0, NULL, 0);
        px_reply_end(r);
        px_conn_close_after(c);
        return;
    case MC_B_FLUSH:
        mc_stats.cmd_flush++;
        if (q->exptime > 0) {
            respond_status(r, q->opcode, q->opaque, MC_ST_EINVAL,
                           "momento-proxy cannot delay a flush");
            break;
        }
        if ((x = ctx_new(r, q, MC_T_FLUSH_ALL)))
            mc_flush(b, on_done, x);
        return;
    case MC_B_NOOP:
    case MC_B_VERBOSITY:
        respond(r, q->opcode, q->opaque, MC_ST_OK, 0, NULL, 0, NULL, 0, NULL, 0);
        break;
    case MC_B_VERSION:
        respond(r, q->opcode, q->opaque, MC_ST_OK, 0, NULL, 0, NULL, 0, MC_VERSION,
                strlen(MC_VERSION));
        break;
    case MC_B_STAT:
        if (q->key.n == 0) {
            stat_ud s = {r, q};
            mc_stats_each(b, stat_packet, &s);
        } else if (q->key.n == 5 && memcmp(q->key.p, "reset", 5) == 0) {
            memset(&mc_stats, 0, sizeof(mc_stats));
        } else {
            respond_status(r, q->opcode, q->opaque, MC_ST_KEY_ENOENT, "Not found");
            break;
        }
        /* The end of the stats: an empty packet. */
        respond(r, q->opcode, q->opaque, MC_ST_OK, 0, NULL, 0, NULL, 0, NULL, 0);
        break;
    }
    px_reply_end(r);
}

/* The largest body the request at p[0, n) is awaited with. Before
 * authentication memcached -S answers every request but the SASL ones and
 * version at its header (its key and extras in), so its body is not held:
 * 0. A SASL request's data is bounded. */
static size_t body_max(const px_backend *b, const mc_state *st, const char *p, size_t n)
{
    size_t max = mc_max_item(b);
    uint8_t op = n >= 2 ? (uint8_t)p[1] : 0;
    if (op == MC_OP_SASL_AUTH || op == MC_OP_SASL_STEP)
        return max < SASL_DATA_MAX ? max : SASL_DATA_MAX;
    return b->requirepass && !st->authed ? 0 : max;
}

size_t mc_bin_feed(px_conn *c, mc_state *st, const char *data, size_t len)
{
    px_backend *b = px_conn_backend(c);
    size_t used = 0;
    while (mc_feed_ready(c, st, len, &used)) {
        mc_bin_req q;
        ssize_t n = mc_bin_parse(data + used, len - used, body_max(b, st, data + used, len - used),
                                 &q, &st->resume);
        if (n == 0)
            break;
        if (n < 0) {
            /* Not a request header: memcached hangs up without a word. */
            b->stats->protocol_errors++;
            px_conn_close_after(c);
            return len;
        }
        if (b->requirepass && !st->authed && !runs_unauthenticated(&q)) {
            /* memcached -S: "Auth failure." and the connection closed. */
            used += (size_t)n;
            px_reply *r = px_reply_begin(c);
            if (r) {
                px_reply_small(r);
                b->stats->commands++;
                px_reply_command(r, px_metrics_mc_binary_command(q.opcode));
                respond_status(r, q.opcode, q.opaque, MC_ST_AUTH_ERROR, "Auth failure.");
                px_reply_end(r);
            }
            px_conn_close_after(c);
            break;
        }
        /* Ordered after the connection's earlier requests on its key
         * (conn.h); only a get leaves the key as it is. */
        bool keyed = q.key.n > 0 && (q.kind == MC_B_GET || q.kind == MC_B_GAT ||
                                     q.kind == MC_B_SET || q.kind == MC_B_APPEND ||
                                     q.kind == MC_B_DELETE || q.kind == MC_B_ARITH);
        bool flush = q.kind == MC_B_FLUSH;
        if ((keyed && !px_conn_keys_free(c, &q.key, 1, 1, q.kind != MC_B_GET)) ||
            (flush && px_conn_pending(c) > 0)) {
            px_conn_wait(c);
            break;
        }
        used += (size_t)n;
        st->flushing = flush;
        run_request(c, st, &q, keyed);
        if (px_conn_closing(c))
            break;
    }
    return used;
}
