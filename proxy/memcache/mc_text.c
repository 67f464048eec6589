/* memcached's text protocol: the feed, the retrieval commands (one batched
 * request for a get of many keys, duplicate keys asked once, values
 * answered in request order) and the answers of the others. */
#include "memcache/mc_proto.h"
#include "metrics.h"
#include "multiget.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void put_line(px_reply *r, const char *s)
{
    px_reply_puts(r, s);
    px_reply_put(r, "\r\n", 2);
}

/* SERVER_ERROR with Momento's reason, on one line. */
static void put_failure(px_reply *r, const mc_result *res)
{
    if (res->status == MC_TOO_LARGE) {
        put_line(r, "SERVER_ERROR object too large for cache");
        return;
    }
    char buf[512];
    snprintf(buf, sizeof(buf), "SERVER_ERROR momento %s: %s", momento_error_name(res->error),
             res->message);
    for (char *p = buf; *p; p++)
        if (*p == '\r' || *p == '\n')
            *p = ' ';
    put_line(r, buf);
}

/* A command the proxy could not start for want of memory: memcached's
 * answer to that, and the reply ends. */
static void end_no_memory(px_reply *r)
{
    put_line(r, "SERVER_ERROR out of memory");
    px_reply_end(r);
}

static void put_result(px_reply *r, const mc_result *res)
{
    char num[32];
    switch (res->status) {
    case MC_STORED: put_line(r, "STORED"); break;
    case MC_NOT_STORED: put_line(r, "NOT_STORED"); break;
    case MC_EXISTS: put_line(r, "EXISTS"); break;
    case MC_NOT_FOUND: put_line(r, "NOT_FOUND"); break;
    case MC_DELETED: put_line(r, "DELETED"); break;
    case MC_TOUCHED: put_line(r, "TOUCHED"); break;
    case MC_OK: put_line(r, "OK"); break;
    case MC_NUMBER:
        snprintf(num, sizeof(num), "%llu", (unsigned long long)res->number);
        put_line(r, num);
        break;
    case MC_NON_NUMERIC:
        put_line(r, "CLIENT_ERROR cannot increment or decrement non-numeric value");
        break;
    default:
        put_failure(r, res);
        break;
    }
}

/* ---- commands answered with one line ---- */

typedef struct line_ctx {
    px_reply *r;
    mc_text_kind kind;
    bool noreply;
    bool too_large; /* a set over the size limit: its old value deleted */
} line_ctx;

static void on_line(const mc_result *res, void *ud)
{
    line_ctx *x = ud;
    mc_count_result(x->kind, res);
    if (x->too_large) {
        if (!x->noreply) {
            if (res->status == MC_FAILED)
                put_failure(x->r, res);
            else
                put_line(x->r, "SERVER_ERROR object too large for cache");
        }
    } else if (!x->noreply) {
        put_result(x->r, res);
    }
    px_reply_end(x->r);
    free(x);
}

static line_ctx *line_new(px_reply *r, const mc_text_cmd *cmd)
{
    line_ctx *x = malloc(sizeof(*x));
    if (!x) {
        end_no_memory(r);
        return NULL;
    }
    *x = (line_ctx){r, cmd->kind, cmd->noreply, false};
    return x;
}

static void run_storage(px_reply *r, px_backend *b, const mc_text_cmd *cmd)
{
    mc_stats.cmd_set++;
    if (cmd->too_large) {
        mc_stats.store_too_large++;
        if (cmd->kind != MC_T_SET) {
            if (!cmd->noreply)
                put_line(r, "SERVER_ERROR object too large for cache");
            px_reply_end(r);
            return;
        }
        /* memcached drops the old value of a set it cannot store, rather
         * than leave it stale. */
        line_ctx *x = line_new(r, cmd);
        if (x) {
            x->too_large = true;
            mc_delete(b, cmd->key, 0, false, on_line, x);
        }
        return;
    }
    static const mc_store_mode modes[] = {
        [MC_T_SET] = MC_MODE_SET,         [MC_T_ADD] = MC_MODE_ADD,
        [MC_T_REPLACE] = MC_MODE_REPLACE, [MC_T_APPEND] = MC_MODE_APPEND,
        [MC_T_PREPEND] = MC_MODE_PREPEND, [MC_T_CAS] = MC_MODE_CAS,
    };
    line_ctx *x = line_new(r, cmd);
    if (!x)
        return;
    mc_store(b, modes[cmd->kind], cmd->key, cmd->flags, cmd->data,
             mc_exptime(cmd->exptime, mc_now_s()), cmd->cas, false, on_line, x);
}

/* ---- get, gets, gat, gats ---- */

typedef struct slot {
    bool hit;
    uint32_t flags;
    uint64_t cas;
    char *data;
    size_t len;
} slot;

typedef struct mget mget;

typedef struct slot_ref {
    mget *g;
    size_t i;
} slot_ref;

struct mget {
    px_reply *r;
    px_backend *b;
    mc_text_kind kind;
    size_t n;          /* keys asked, in order */
    size_t nu;         /* distinct keys */
    size_t *map;       /* asked key -> distinct key */
    px_str *ukeys;     /* the distinct keys, copied into keybuf */
    char *keybuf;
    slot *slots;
    slot_ref *refs;
    size_t pending;
    bool bad_key;      /* mc_text_cmd.bad_key: touched, answered the error */
    bool once;         /* gat/gats with an exptime already past: memcached
                          expires the item as it answers the key, so a key
                          asked again in the command misses */
    bool failed;
    mc_result fail;
    char msg[256];
};

static void mget_free(mget *g)
{
    if (g->slots)
        for (size_t i = 0; i < g->nu; i++)
            free(g->slots[i].data);
    free(g->slots);
    free(g->refs);
    free(g->map);
    free(g->ukeys);
    free(g->keybuf);
    free(g);
}

static void put_value(px_reply *r, const px_str *key, uint32_t flags, const char *data, size_t len,
                      bool with_cas, uint64_t cas)
{
    char head[96];
    int n = with_cas ? snprintf(head, sizeof(head), " %u %zu %llu\r\n", flags, len,
                                (unsigned long long)cas)
                     : snprintf(head, sizeof(head), " %u %zu\r\n", flags, len);
    px_reply_put(r, "VALUE ", 6);
    px_reply_put(r, key->p, key->n);
    px_reply_put(r, head, (size_t)n);
    px_reply_put(r, data, len);
    px_reply_put(r, "\r\n", 2);
}

/* Every key in the order asked, a hit as often as it was asked. */
static void mget_answer(mget *g)
{
    px_reply *r = g->r;
    bool with_cas = g->kind == MC_T_GETS || g->kind == MC_T_GATS;
    if (g->bad_key) {
        put_line(r, "CLIENT_ERROR bad command line format");
    } else if (g->failed) {
        put_failure(r, &g->fail);
    } else {
        for (size_t i = 0; i < g->n; i++) {
            slot *s = &g->slots[g->map[i]];
            bool hit = s->hit;
            if (g->once)
                s->hit = false;
            if (hit) {
                g->b->stats->hits++;
                mc_stats.get_hits++;
                put_value(r, &g->ukeys[g->map[i]], s->flags, s->data, s->len, with_cas, s->cas);
            } else {
                g->b->stats->misses++;
                mc_stats.get_misses++;
            }
            if (g->kind == MC_T_GAT || g->kind == MC_T_GATS) {
                if (hit)
                    mc_stats.touch_hits++;
                else
                    mc_stats.touch_misses++;
            }
        }
        px_reply_put(r, "END\r\n", 5);
    }
    px_reply_end(r);
    mget_free(g);
}

static void keep_fail(mget *g, const mc_result *res)
{
    if (g->failed)
        return;
    g->failed = true;
    g->fail = *res;
    snprintf(g->msg, sizeof(g->msg), "%s", res->message);
    g->fail.message = g->msg;
}

static bool slot_fill(slot *s, const mc_result *res)
{
    s->hit = true;
    s->flags = res->flags;
    s->cas = res->cas;
    s->len = res->len;
    s->data = malloc(res->len ? res->len : 1);
    if (!s->data)
        return false;
    if (res->len)
        memcpy(s->data, res->data, res->len);
    return true;
}

/* One key's answer (gets, gat, gats: a call per distinct key). */
static void on_slot(const mc_result *res, void *ud)
{
    slot_ref *ref = ud;
    mget *g = ref->g;
    if (res->status == MC_HIT) {
        if (!slot_fill(&g->slots[ref->i], res)) {
            mc_result oom = {.status = MC_FAILED, .error = MOMENTO_ERR_NO_MEMORY,
                             .message = "out of memory"};
            keep_fail(g, &oom);
        }
    } else if (res->status != MC_MISS) {
        keep_fail(g, res);
    }
    if (--g->pending == 0)
        mget_answer(g);
}

/* The answer to a get of one distinct key asked `times` times (a hit as
 * often as asked), from the callback's buffer. */
static void put_single(px_reply *r, px_backend *b, const px_str *key, const mc_result *res,
                       size_t times)
{
    if (res->status != MC_HIT && res->status != MC_MISS) {
        put_failure(r, res);
    } else {
        for (size_t i = 0; i < times; i++) {
            if (res->status == MC_HIT) {
                b->stats->hits++;
                mc_stats.get_hits++;
                put_value(r, key, res->flags, res->data, res->len, false, 0);
            } else {
                b->stats->misses++;
                mc_stats.get_misses++;
            }
        }
        px_reply_put(r, "END\r\n", 5);
    }
    px_reply_end(r);
}

/* A get of one distinct key, asked more than once. */
static void on_single(const mc_result *res, void *ud)
{
    mget *g = ud;
    put_single(g->r, g->b, &g->ukeys[0], res, g->n);
    mget_free(g);
}

/* A get of many: one GetBatch, each key answered from its item or its
 * get alone (multiget.h), as a one-key get answers it. */
static void on_batch(const momento_result *const *items, size_t n, void *ud)
{
    mget *g = ud;
    for (size_t i = 0; i < n && !g->failed; i++) {
        if (!items[i]) { /* not asked: no memory (multiget.h) */
            mc_result oom = {.status = MC_FAILED, .error = MOMENTO_ERR_NO_MEMORY,
                             .message = "out of memory"};
            keep_fail(g, &oom);
            break;
        }
        mc_result res;
        mc_get_result(g->b, items[i], false, &res);
        if (res.status == MC_FAILED || res.status == MC_TOO_LARGE) {
            keep_fail(g, &res);
        } else if (res.status == MC_HIT && !slot_fill(&g->slots[i], &res)) {
            mc_result oom = {.status = MC_FAILED, .error = MOMENTO_ERR_NO_MEMORY,
                             .message = "out of memory"};
            keep_fail(g, &oom);
        }
    }
    mget_answer(g);
}

/* `get KEY`, the commonest command: one allocation, its key kept for the
 * reply, and none of mget's tables. */
typedef struct one_get {
    px_reply *r;
    px_backend *b;
    px_str key; /* in keybuf */
    char keybuf[];
} one_get;

static void on_one(const momento_result *answer, void *ud)
{
    one_get *g = ud;
    mc_result res;
    mc_get_result(g->b, answer, false, &res);
    put_single(g->r, g->b, &g->key, &res, 1);
    free(g);
}

static void run_get_one(px_reply *r, px_backend *b, const px_str *key)
{
    one_get *g = malloc(sizeof(*g) + key->n);
    if (!g) {
        end_no_memory(r);
        return;
    }
    g->r = r;
    g->b = b;
    memcpy(g->keybuf, key->p, key->n);
    g->key = (px_str){g->keybuf, key->n};
    int rc = mc_get_send(b, g->key, false, on_one, g);
    if (rc != MOMENTO_OK) {
        mc_result f;
        mc_result_failed(b, &f, rc, NULL);
        put_failure(r, &f);
        px_reply_end(r);
        free(g);
    }
}

static uint64_t key_hash(const char *p, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)p[i]) * 1099511628211ull;
    return h;
}

/* The distinct keys of the command, in first-asked order. */
static bool mget_dedupe(mget *g, const mc_text_cmd *cmd)
{
    size_t n = cmd->nkeys, total = 0;
    for (size_t i = 0; i < n; i++)
        total += cmd->keys[i].n;
    g->map = malloc(n * sizeof(*g->map));
    g->ukeys = malloc(n * sizeof(*g->ukeys));
    g->keybuf = malloc(total ? total : 1);
    size_t cap = 16;
    while (cap < 2 * n)
        cap *= 2;
    size_t *table = malloc(cap * sizeof(*table));
    if (!g->map || !g->ukeys || !g->keybuf || !table) {
        free(table);
        return false;
    }
    for (size_t i = 0; i < cap; i++)
        table[i] = SIZE_MAX;
    char *kp = g->keybuf;
    for (size_t i = 0; i < n; i++) {
        const px_str *k = &cmd->keys[i];
        size_t j = (size_t)key_hash(k->p, k->n) & (cap - 1);
        while (table[j] != SIZE_MAX) {
            const px_str *u = &g->ukeys[table[j]];
            if (u->n == k->n && memcmp(u->p, k->p, k->n) == 0)
                break;
            j = (j + 1) & (cap - 1);
        }
        if (table[j] == SIZE_MAX) {
            memcpy(kp, k->p, k->n);
            g->ukeys[g->nu] = (px_str){kp, k->n};
            kp += k->n;
            table[j] = g->nu++;
        }
        g->map[i] = table[j];
    }
    free(table);
    return true;
}

static void run_get(px_reply *r, px_backend *b, const mc_text_cmd *cmd)
{
    mc_stats.cmd_get += cmd->nkeys;
    if (cmd->kind == MC_T_GAT || cmd->kind == MC_T_GATS)
        mc_stats.cmd_touch += cmd->nkeys;
    if (cmd->nkeys == 0) {
        /* "gat <exptime>" alone: memcached answers an empty result. */
        px_reply_put(r, "END\r\n", 5);
        px_reply_end(r);
        return;
    }
    if (cmd->kind == MC_T_GET && cmd->nkeys == 1) {
        run_get_one(r, b, &cmd->keys[0]);
        return;
    }
    mget *g = calloc(1, sizeof(*g));
    if (!g || !mget_dedupe(g, cmd) || !(g->slots = calloc(g->nu, sizeof(*g->slots)))) {
        if (g)
            mget_free(g);
        end_no_memory(r);
        return;
    }
    g->r = r;
    g->b = b;
    g->kind = cmd->kind;
    g->n = cmd->nkeys;
    if (cmd->kind == MC_T_GET && g->nu == 1) {
        mc_get(b, g->ukeys[0], false, on_single, g);
        return;
    }
    if (cmd->kind == MC_T_GET) {
        int rc = px_multiget(b, g->ukeys, g->nu, on_batch, g);
        if (rc == MOMENTO_OK) {
            b->stats->backend_calls++;
        } else {
            mc_result f;
            mc_result_failed(b, &f, rc, NULL);
            keep_fail(g, &f);
            mget_answer(g);
        }
        return;
    }
    /* gets, gat, gats: each needs its key's hash or TTL update. */
    g->refs = malloc(g->nu * sizeof(*g->refs));
    if (!g->refs) {
        mget_free(g);
        end_no_memory(r);
        return;
    }
    mc_ttl ttl = mc_exptime(cmd->exptime, mc_now_s());
    g->once = cmd->kind != MC_T_GETS && ttl.expired;
    g->bad_key = cmd->bad_key;
    bool with_cas = cmd->kind == MC_T_GETS || cmd->kind == MC_T_GATS;
    g->pending = g->nu + 1; /* held until every call is sent */
    for (size_t i = 0; i < g->nu; i++) {
        g->refs[i] = (slot_ref){g, i};
        if (cmd->kind == MC_T_GETS)
            mc_get(b, g->ukeys[i], true, on_slot, &g->refs[i]);
        else
            mc_gat(b, g->ukeys[i], ttl, with_cas, on_slot, &g->refs[i]);
    }
    if (--g->pending == 0)
        mget_answer(g);
}

/* ---- the rest ---- */

static void stat_line(void *ud, const char *name, const char *value)
{
    px_reply *r = ud;
    px_reply_puts(r, "STAT ");
    px_reply_puts(r, name);
    px_reply_put(r, " ", 1);
    px_reply_puts(r, value);
    px_reply_put(r, "\r\n", 2);
}

/* The keys a command touches and whether it writes them: what orders it
 * after the connection's earlier commands on those keys (conn.h). */
static size_t command_keys(const mc_text_cmd *cmd, const px_str **keys, bool *write)
{
    *write = true;
    switch (cmd->kind) {
    case MC_T_GET:
    case MC_T_GETS:
        *write = false;
        *keys = cmd->keys;
        return cmd->nkeys;
    case MC_T_GAT: /* a TTL written */
    case MC_T_GATS:
        *keys = cmd->keys;
        return cmd->nkeys;
    case MC_T_SET:
    case MC_T_ADD:
    case MC_T_REPLACE:
    case MC_T_APPEND:
    case MC_T_PREPEND:
    case MC_T_CAS:
    case MC_T_DELETE:
    case MC_T_INCR:
    case MC_T_DECR:
    case MC_T_TOUCH:
        *keys = &cmd->key;
        return 1;
    default:
        *keys = NULL;
        return 0;
    }
}

static void run_command(px_conn *c, mc_state *st, const px_str *keys, size_t nkeys, bool write)
{
    mc_text_cmd *cmd = &st->cmd;
    px_backend *b = px_conn_backend(c);
    px_reply *r = px_reply_begin(c);
    if (!r)
        return;
    if (nkeys)
        px_reply_claim(r, keys, nkeys, 1, write);
    /* Only the reads answer values; every other answer is a line. */
    if (cmd->kind != MC_T_GET && cmd->kind != MC_T_GETS && cmd->kind != MC_T_GAT &&
        cmd->kind != MC_T_GATS)
        px_reply_small(r);
    b->stats->commands++;
    px_reply_command(r, px_metrics_mc_text_command(cmd->kind));
    line_ctx *x;
    switch (cmd->kind) {
    case MC_T_ERROR:
        b->stats->protocol_errors++;
        if (cmd->reply)
            put_line(r, cmd->reply);
        px_reply_end(r);
        if (cmd->close)
            px_conn_close_after(c);
        return;
    case MC_T_GET:
    case MC_T_GETS:
    case MC_T_GAT:
    case MC_T_GATS:
        run_get(r, b, cmd);
        return;
    case MC_T_SET:
    case MC_T_ADD:
    case MC_T_REPLACE:
    case MC_T_APPEND:
    case MC_T_PREPEND:
    case MC_T_CAS:
        if (cmd->too_large)
            st->swallow = cmd->swallow;
        run_storage(r, b, cmd);
        return;
    case MC_T_DELETE:
        if ((x = line_new(r, cmd)))
            /* Nobody reads a noreply delete's answer: one call, not two. */
            mc_delete(b, cmd->key, 0, !cmd->noreply, on_line, x);
        return;
    case MC_T_INCR:
    case MC_T_DECR:
        if ((x = line_new(r, cmd)))
            mc_arith(b, cmd->key, cmd->kind == MC_T_INCR, cmd->delta, false, 0, (mc_ttl){0, false},
                     false, on_line, x);
        return;
    case MC_T_TOUCH:
        mc_stats.cmd_touch++;
        if ((x = line_new(r, cmd)))
            mc_touch(b, cmd->key, mc_exptime(cmd->exptime, mc_now_s()), !cmd->noreply, on_line,
                     x);
        return;
    case MC_T_VERSION:
        put_line(r, "VERSION " MC_VERSION);
        break;
    case MC_T_STATS:
        if (cmd->arg.n == 0) {
            mc_stats_each(b, stat_line, r);
            put_line(r, "END");
        } else if (cmd->arg.n == 5 && memcmp(cmd->arg.p, "reset", 5) == 0) {
            memset(&mc_stats, 0, sizeof(mc_stats));
            put_line(r, "RESET");
        } else {
            /* memcached's item, slab and setting reports have no
             * counterpart here. */
            put_line(r, "ERROR");
        }
        break;
    case MC_T_QUIT:
        px_reply_end(r);
        px_conn_close_after(c);
        return;
    case MC_T_VERBOSITY:
        if (!cmd->noreply)
            put_line(r, "OK");
        break;
    case MC_T_FLUSH_ALL:
        mc_stats.cmd_flush++;
        if (cmd->exptime > 0) {
            /* Momento flushes a cache now or not at all. */
            if (!cmd->noreply)
                put_line(r, "SERVER_ERROR momento-proxy cannot delay flush_all");
            break;
        }
        if ((x = line_new(r, cmd)))
            mc_flush(b, on_line, x);
        return;
    }
    px_reply_end(r);
}

size_t mc_text_feed(px_conn *c, mc_state *st, const char *data, size_t len)
{
    px_backend *b = px_conn_backend(c);
    size_t used = 0;
    while (mc_feed_ready(c, st, len, &used)) {
        ssize_t n = mc_text_parse(data + used, len - used, mc_max_item(b), &st->cmd, &st->resume);
        if (n == 0)
            break;
        if (n < 0) {
            px_conn_abort(c);
            return len;
        }
        const px_str *keys;
        bool write;
        size_t nkeys = command_keys(&st->cmd, &keys, &write);
        bool flush = st->cmd.kind == MC_T_FLUSH_ALL;
        if ((nkeys && !px_conn_keys_free(c, keys, nkeys, 1, write)) ||
            (flush && px_conn_pending(c) > 0)) {
            /* Parsed again once the command it waits for has answered. */
            px_conn_wait(c);
            break;
        }
        used += (size_t)n;
        st->flushing = flush;
        run_command(c, st, keys, nkeys, write);
        if (px_conn_closing(c))
            break;
        /* A huge multi-get's key array is not kept for the connection's
         * life (run_get copied the keys it needs). */
        if (st->cmd.keys_cap > 1024)
            mc_text_cmd_free(&st->cmd);
    }
    return used;
}
