/* The proxy's Prometheus metrics (metrics.h; docs/proxy.md "Metrics"). */
#include "metrics.h"
#include "memcache/mc_parse.h"

#include "momento/coalescer.h"
#include "momento/metrics.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The buckets' upper bounds (Prometheus's `le`), from a cache hit on
 * loopback to past the longest --timeout-ms most deployments set. */
static const uint64_t bound_ns[PX_METRICS_BUCKETS] = {
    50000,     100000,     250000,     500000,     1000000,    2500000,
    5000000,   10000000,   25000000,   50000000,   100000000,  250000000,
    500000000, 1000000000, 2500000000, 5000000000, 10000000000};
static const char *const bound_le[PX_METRICS_BUCKETS] = {
    "5e-05", "0.0001", "0.00025", "0.0005", "0.001", "0.0025", "0.005", "0.01", "0.025",
    "0.05",  "0.1",    "0.25",    "0.5",    "1",     "2.5",    "5",     "10"};

static const char *const protocol_label[PX_METRICS_PROTOCOLS] = {"resp", "memcache"};

static unsigned bucket_of(uint64_t ns)
{
    unsigned i = 0;
    while (i < PX_METRICS_BUCKETS && ns > bound_ns[i])
        i++;
    return i;
}

/* ---- commands (the loop thread) ---- */

/* Every command of both protocols is under 300 (RESP's table has about
 * 200); past the pool a command counts as "other". */
#define POOL 512
static px_cmd_metrics pool[POOL];
static unsigned npool;
static px_cmd_metrics overflow[PX_METRICS_PROTOCOLS] = {
    {.name = "other", .protocol = PX_METRICS_RESP},
    {.name = "other", .protocol = PX_METRICS_MEMCACHE}};

/* A command's counters by name, made on its first use: the lookups below
 * keep what this returns, so each name is searched for once. */
static px_cmd_metrics *intern(px_metrics_protocol p, const char *name)
{
    for (unsigned i = 0; i < npool; i++)
        if (pool[i].protocol == p && strcmp(pool[i].name, name) == 0)
            return &pool[i];
    if (npool == POOL)
        return &overflow[p];
    pool[npool] = (px_cmd_metrics){.name = name, .protocol = p};
    return &pool[npool++];
}

/* resp.c's table has 512 slots; a larger one would still work, through
 * the search. */
#define RESP_SLOTS 1024
static px_cmd_metrics *resp_slot[RESP_SLOTS];
static px_cmd_metrics *resp_unknown;

px_cmd_metrics *px_metrics_resp_command(int slot, const char *name)
{
    if (!name) {
        if (!resp_unknown)
            resp_unknown = intern(PX_METRICS_RESP, "unknown");
        return resp_unknown;
    }
    if (slot < 0 || slot >= RESP_SLOTS) {
        /* Found by the name's address after the first search. */
        static struct {
            const char *name;
            px_cmd_metrics *m;
        } seen[8];
        static unsigned next;
        for (unsigned i = 0; i < 8; i++)
            if (seen[i].name == name)
                return seen[i].m;
        px_cmd_metrics *m = intern(PX_METRICS_RESP, name);
        seen[next].name = name;
        seen[next].m = m;
        next = (next + 1) % 8;
        return m;
    }
    if (!resp_slot[slot])
        resp_slot[slot] = intern(PX_METRICS_RESP, name);
    return resp_slot[slot];
}

static const char *const mc_text_name[] = {
    [MC_T_ERROR] = "invalid", [MC_T_GET] = "get",         [MC_T_GETS] = "gets",
    [MC_T_GAT] = "gat",       [MC_T_GATS] = "gats",       [MC_T_SET] = "set",
    [MC_T_ADD] = "add",       [MC_T_REPLACE] = "replace", [MC_T_APPEND] = "append",
    [MC_T_PREPEND] = "prepend", [MC_T_CAS] = "cas",       [MC_T_DELETE] = "delete",
    [MC_T_INCR] = "incr",     [MC_T_DECR] = "decr",       [MC_T_TOUCH] = "touch",
    [MC_T_VERSION] = "version", [MC_T_STATS] = "stats",   [MC_T_QUIT] = "quit",
    [MC_T_VERBOSITY] = "verbosity", [MC_T_FLUSH_ALL] = "flush_all",
};
#define MC_TEXT_KINDS (sizeof(mc_text_name) / sizeof(mc_text_name[0]))
static px_cmd_metrics *mc_text_slot[MC_TEXT_KINDS + 1]; /* the last: an unnamed kind */

px_cmd_metrics *px_metrics_mc_text_command(int kind)
{
    size_t i = kind >= 0 && (size_t)kind < MC_TEXT_KINDS && mc_text_name[kind]
                   ? (size_t)kind
                   : MC_TEXT_KINDS;
    if (!mc_text_slot[i])
        mc_text_slot[i] = intern(PX_METRICS_MEMCACHE, i < MC_TEXT_KINDS ? mc_text_name[i]
                                                                       : "unknown");
    return mc_text_slot[i];
}

/* The binary opcodes by the text protocol's names, quiet and key-echoing
 * forms with their plain one (the memcached binary protocol's table). */
static const char *mc_binary_name(uint8_t op)
{
    switch (op) {
    case 0x00: case 0x09: case 0x0c: case 0x0d: return "get";
    case 0x01: case 0x11: return "set";
    case 0x02: case 0x12: return "add";
    case 0x03: case 0x13: return "replace";
    case 0x04: case 0x14: return "delete";
    case 0x05: case 0x15: return "incr";
    case 0x06: case 0x16: return "decr";
    case 0x07: case 0x17: return "quit";
    case 0x08: case 0x18: return "flush_all";
    case 0x0a: return "noop";
    case 0x0b: return "version";
    case 0x0e: case 0x19: return "append";
    case 0x0f: case 0x1a: return "prepend";
    case 0x10: return "stats";
    case 0x1b: return "verbosity";
    case 0x1c: return "touch";
    case 0x1d: case 0x1e: case 0x23: case 0x24: return "gat";
    case 0x20: return "sasl_list_mechs";
    case 0x21: return "sasl_auth";
    case 0x22: return "sasl_step";
    default: return "unknown";
    }
}

static px_cmd_metrics *mc_binary_slot[256];

px_cmd_metrics *px_metrics_mc_binary_command(uint8_t opcode)
{
    if (!mc_binary_slot[opcode])
        mc_binary_slot[opcode] = intern(PX_METRICS_MEMCACHE, mc_binary_name(opcode));
    return mc_binary_slot[opcode];
}

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Whether a reply is an error by its first bytes: RESP's begin with '-';
 * memcached's text errors are ERROR, CLIENT_ERROR and SERVER_ERROR lines,
 * and a binary response (magic 0x81) has its status in bytes 6-7: an error
 * unless it is one the text protocol answers without an error line (not
 * found, exists, not stored: NOT_FOUND, EXISTS, NOT_STORED, a miss's END)
 * or SASL's "go on". */
static bool is_error(px_metrics_protocol p, const unsigned char *lead, size_t size)
{
    if (size == 0)
        return false;
    if (p == PX_METRICS_RESP)
        return lead[0] == '-';
    if (lead[0] == 0x81) {
        unsigned status = size >= 8 ? (unsigned)lead[6] << 8 | lead[7] : 0;
        return status != 0x00 && status != 0x01 && status != 0x02 && status != 0x05 &&
               status != 0x21;
    }
    return (size >= 5 && memcmp(lead, "ERROR", 5) == 0) ||
           (size >= 7 && (memcmp(lead, "CLIENT_", 7) == 0 || memcmp(lead, "SERVER_", 7) == 0));
}

void px_metrics_observe(px_cmd_metrics *m, const unsigned char *lead, size_t size,
                        int64_t began_ns)
{
    int64_t ns = mono_ns() - began_ns;
    if (ns < 0)
        ns = 0;
    m->count++;
    if (is_error(m->protocol, lead, size))
        m->errors++;
    m->sum_ns += (uint64_t)ns;
    m->buckets[bucket_of((uint64_t)ns)]++;
}

/* ---- Momento requests (the library's completion thread) ---- */

/* gRPC's codes 0-16, and one more for a request that ended without an
 * answer from gRPC (refused locally, left its shared RPC, ended queued). */
#define STATUSES 18
static const char *const status_name[STATUSES] = {
    "OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
    "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
    "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS",
    "UNAUTHENTICATED", "NONE"};

/* momento_error values -1..-17 and -30..-33 by index 1..21; 22 for any
 * other (a newer library's); 0 (no error) is not counted. */
#define ERRORS 23
static unsigned error_index(int err)
{
    if (err <= -1 && err >= -17)
        return (unsigned)-err;
    if (err <= -30 && err >= -33)
        return (unsigned)(-err - 30 + 18);
    return ERRORS - 1;
}
static int error_value(unsigned i)
{
    return i <= 17 ? -(int)i : i < ERRORS - 1 ? -(int)(i - 18 + 30) : 0;
}

/* One method of one cache. The keys are published with a release store
 * once filled, and read with acquire; the counts are relaxed atomics (one
 * writer: the hook's calls never overlap, momento/metrics.h). */
typedef struct method_slot {
    const char *method; /* static (momento/metrics.h); NULL: free */
    uint64_t status[STATUSES];
    uint64_t error[ERRORS];
    uint64_t attempts;
    uint64_t sum_ns;
    uint64_t buckets[PX_METRICS_BUCKETS + 1];
} method_slot;

/* The library has 70 methods; the proxy calls fewer than half. */
#define METHOD_SLOTS 128
typedef struct cache_row {
    const char *name; /* a copy; NULL: the calls that name no cache */
    method_slot slots[METHOD_SLOTS];
} cache_row;

/* Row 0 is the calls without a cache; one per cache the proxy serves
 * (PX_MAX_LISTENERS at most), each made at its first call. */
#define ROWS 65
static cache_row *rows[ROWS];
static cache_row no_cache;

/* One writer (the hook's calls never overlap), so an add is a relaxed load
 * and store, not a locked read-modify-write: the scrape reads whole values
 * either way, and the hook costs the completion thread a few plain adds. */
#define ADD(field, n) \
    __atomic_store_n(&(field), __atomic_load_n(&(field), __ATOMIC_RELAXED) + (n), __ATOMIC_RELAXED)
#define LOAD(field) __atomic_load_n(&(field), __ATOMIC_RELAXED)

static cache_row *row_of(const char *cache)
{
    if (!cache)
        return &no_cache;
    for (int i = 1; i < ROWS; i++) {
        cache_row *r = __atomic_load_n(&rows[i], __ATOMIC_ACQUIRE);
        if (r && strcmp(r->name, cache) == 0)
            return r;
        if (!r) {
            /* A cache seen for the first time: once per cache the proxy
             * serves, so this allocation is not per request. */
            size_t n = strlen(cache) + 1;
            cache_row *made = calloc(1, sizeof(*made) + n);
            if (!made)
                return NULL;
            char *copy = (char *)(made + 1);
            memcpy(copy, cache, n);
            made->name = copy;
            cache_row *none = NULL;
            if (__atomic_compare_exchange_n(&rows[i], &none, made, false, __ATOMIC_RELEASE,
                                            __ATOMIC_ACQUIRE))
                return made;
            free(made);
            if (strcmp(none->name, cache) == 0)
                return none;
        }
    }
    return NULL;
}

static method_slot *slot_of(cache_row *row, const char *method)
{
    size_t h = ((uintptr_t)method >> 3) * 2654435761u;
    for (unsigned k = 0; k < METHOD_SLOTS; k++) {
        method_slot *s = &row->slots[(h + k) & (METHOD_SLOTS - 1)];
        const char *m = __atomic_load_n(&s->method, __ATOMIC_ACQUIRE);
        if (m == method)
            return s;
        if (!m) {
            const char *none = NULL;
            if (__atomic_compare_exchange_n(&s->method, &none, method, false, __ATOMIC_RELEASE,
                                            __ATOMIC_ACQUIRE) ||
                none == method)
                return s;
        }
    }
    return NULL;
}

void px_metrics_momento_hook(const momento_request_metrics *m, void *userdata)
{
    (void)userdata;
    cache_row *row = row_of(m->cache);
    method_slot *s = row ? slot_of(row, m->method) : NULL;
    if (!s)
        return; /* past every bound above: not counted rather than miscounted */
    unsigned st = m->grpc_status >= 0 && m->grpc_status < STATUSES - 1 ? (unsigned)m->grpc_status
                                                                        : STATUSES - 1;
    ADD(s->status[st], 1);
    if (m->error != 0)
        ADD(s->error[error_index(m->error)], 1);
    ADD(s->attempts, m->attempts);
    ADD(s->sum_ns, m->latency_ns);
    ADD(s->buckets[bucket_of(m->latency_ns)], 1);
}

/* ---- the metrics port's answers ---- */

static const int http_codes[] = {200, 400, 404, 405, 408, 431, 500, 503, 505};
#define HTTP_CODES (sizeof(http_codes) / sizeof(http_codes[0]))
static uint64_t http_answers[HTTP_CODES];
unsigned px_metrics_http_open;

void px_metrics_http_answered(int code)
{
    for (size_t i = 0; i < HTTP_CODES; i++)
        if (http_codes[i] == code)
            http_answers[i]++;
}

/* ---- the exposition ---- */

typedef struct text {
    char *p;
    size_t len, cap;
    bool failed;
} text;

static void put(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(text *t, const char *fmt, ...)
{
    if (t->failed)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(t->p + t->len, t->cap - t->len, fmt, ap);
        va_end(ap);
        if (n < 0) {
            t->failed = true;
            return;
        }
        if ((size_t)n < t->cap - t->len) {
            t->len += (size_t)n;
            return;
        }
        size_t cap = t->cap ? t->cap * 2 : 256;
        while (cap < t->len + (size_t)n + 1)
            cap *= 2;
        char *p = realloc(t->p, cap);
        if (!p) {
            t->failed = true;
            return;
        }
        t->p = p;
        t->cap = cap;
    }
}

/* A label value as the format escapes it: backslash, quote, newline. */
static void put_escaped(text *t, const char *s)
{
    for (; *s; s++) {
        if (*s == '\\')
            put(t, "\\\\");
        else if (*s == '"')
            put(t, "\\\"");
        else if (*s == '\n')
            put(t, "\\n");
        else
            put(t, "%c", *s);
    }
}

static void family(text *t, const char *name, const char *type, const char *help)
{
    put(t, "# HELP momento_proxy_%s %s\n# TYPE momento_proxy_%s %s\n", name, help, name, type);
}

static void one(text *t, const char *name, const char *type, const char *help, uint64_t v)
{
    family(t, name, type, help);
    put(t, "momento_proxy_%s %llu\n", name, (unsigned long long)v);
}

/* The bucket, sum and count lines of one histogram series; `labels` ends
 * with a comma. */
static void histogram(text *t, const char *name, const char *labels, const uint64_t *buckets,
                      uint64_t sum_ns)
{
    uint64_t cum = 0;
    for (unsigned i = 0; i < PX_METRICS_BUCKETS; i++) {
        cum += buckets[i];
        put(t, "momento_proxy_%s_bucket{%sle=\"%s\"} %llu\n", name, labels, bound_le[i],
            (unsigned long long)cum);
    }
    cum += buckets[PX_METRICS_BUCKETS];
    put(t, "momento_proxy_%s_bucket{%sle=\"+Inf\"} %llu\n", name, labels, (unsigned long long)cum);
    size_t n = strlen(labels);
    put(t, "momento_proxy_%s_sum{%.*s} %.9f\n", name, (int)(n ? n - 1 : 0), labels,
        (double)sum_ns / 1e9);
    put(t, "momento_proxy_%s_count{%.*s} %llu\n", name, (int)(n ? n - 1 : 0), labels,
        (unsigned long long)cum);
}

static void render_commands(text *t)
{
    family(t, "commands_total", "counter",
           "Commands answered, by protocol and command (counted when the reply ends).");
    for (unsigned i = 0; i < npool; i++)
        put(t, "momento_proxy_commands_total{protocol=\"%s\",command=\"%s\"} %llu\n",
            protocol_label[pool[i].protocol], pool[i].name, (unsigned long long)pool[i].count);
    family(t, "command_errors_total", "counter",
           "Commands answered an error: a RESP reply that begins with '-', a memcached "
           "ERROR, CLIENT_ERROR or SERVER_ERROR line, a binary response with a non-zero "
           "status.");
    for (unsigned i = 0; i < npool; i++)
        put(t, "momento_proxy_command_errors_total{protocol=\"%s\",command=\"%s\"} %llu\n",
            protocol_label[pool[i].protocol], pool[i].name, (unsigned long long)pool[i].errors);
    family(t, "command_duration_seconds", "histogram",
           "From the start of the loop pass that began a command to the end of its reply.");
    for (unsigned i = 0; i < npool; i++) {
        char labels[128];
        snprintf(labels, sizeof(labels), "protocol=\"%s\",command=\"%s\",",
                 protocol_label[pool[i].protocol], pool[i].name);
        histogram(t, "command_duration_seconds", labels, pool[i].buckets, pool[i].sum_ns);
    }
}

/* Per protocol: open connections and the reply bytes they hold. */
typedef struct tally {
    const char *proto[8];
    uint64_t open[8];
    uint64_t held[8];
    unsigned n;
} tally;

static void count_conn(const px_conn *c, void *ud)
{
    tally *y = ud;
    const char *name = px_conn_proto(c)->name;
    unsigned i = 0;
    while (i < y->n && strcmp(y->proto[i], name) != 0)
        i++;
    if (i == y->n) {
        if (y->n == 8)
            return;
        y->proto[y->n++] = name;
    }
    y->open[i]++;
    y->held[i] += px_conn_held_bytes(c);
}

static void render_connections(text *t, const px_metrics_source *src)
{
    tally y = {.proto = {"resp", "memcache"}, .n = 2};
    if (src->conns)
        px_conns_each(src->conns, count_conn, &y);
    family(t, "connections", "gauge", "Client connections open now, by protocol.");
    for (unsigned i = 0; i < y.n; i++)
        put(t, "momento_proxy_connections{protocol=\"%s\"} %llu\n", y.proto[i],
            (unsigned long long)y.open[i]);
    family(t, "held_reply_bytes", "gauge",
           "Reply bytes held for clients that have not read them: written and unread, and "
           "finished behind a reply still open.");
    for (unsigned i = 0; i < y.n; i++)
        put(t, "momento_proxy_held_reply_bytes{protocol=\"%s\"} %llu\n", y.proto[i],
            (unsigned long long)y.held[i]);
    const px_counters *s = src->stats;
    one(t, "connections_accepted_total", "counter", "Client connections accepted since start.",
        s->connections_total);
    one(t, "connections_refused_total", "counter",
        "Client connections refused (over --max-connections, or draining).",
        s->connections_rejected);
    one(t, "connections_max", "gauge", "--max-connections.", src->limits->max_connections);
    one(t, "received_bytes_total", "counter", "Bytes read from clients.", s->bytes_in);
    one(t, "sent_bytes_total", "counter", "Bytes written to clients.", s->bytes_out);
    one(t, "protocol_errors_total", "counter",
        "Input that broke the protocol's framing (answered, then the connection closed) or "
        "was not a command.",
        s->protocol_errors);
    one(t, "tls_handshake_failures_total", "counter",
        "TLS handshakes that failed (plaintext on a TLS port, a refused or missing client "
        "certificate, a bad hello); the connection closed.",
        s->tls_handshake_failures);
    one(t, "tls_handshake_timeouts_total", "counter",
        "TLS handshakes not finished in 10 s; the connection closed.",
        s->tls_handshake_timeouts);
    one(t, "hits_total", "counter", "Reads that found their key.", s->hits);
    one(t, "misses_total", "counter", "Reads that did not.", s->misses);
}

static void render_momento(text *t, const px_metrics_source *src)
{
    one(t, "backend_calls_total", "counter",
        "Momento calls the commands started (each batched or coalesced request counts).",
        src->stats->backend_calls);
    one(t, "backend_errors_total", "counter", "Those that failed, or were refused at submit.",
        src->stats->backend_errors);

    cache_row *all[ROWS];
    all[0] = &no_cache;
    unsigned nrows = 1;
    for (int i = 1; i < ROWS; i++) {
        cache_row *r = __atomic_load_n(&rows[i], __ATOMIC_ACQUIRE);
        if (r)
            all[nrows++] = r;
    }
    static const char *const names[] = {"momento_requests_total", "momento_request_errors_total",
                                        "momento_request_attempts_total",
                                        "momento_request_duration_seconds"};
    static const char *const types[] = {"counter", "counter", "counter", "histogram"};
    static const char *const helps[] = {
        "Momento requests completed, by method, cache and the gRPC status of their last "
        "attempt (NONE: ended without one), as libmomento's metrics hook reports them (a "
        "batched or coalesced request is its own).",
        "Those that failed, by libmomento's error.",
        "Attempts on the wire (retries included).",
        "From submit to completion, queueing and retries included."};
    for (unsigned f = 0; f < 4; f++) {
        family(t, names[f], types[f], helps[f]);
        for (unsigned ri = 0; ri < nrows; ri++) {
            const cache_row *r = all[ri];
            for (unsigned k = 0; k < METHOD_SLOTS; k++) {
                const method_slot *s = &r->slots[k];
                const char *method = __atomic_load_n(&s->method, __ATOMIC_ACQUIRE);
                if (!method)
                    continue;
                text labels = {0};
                put(&labels, "method=\"");
                put_escaped(&labels, method);
                put(&labels, "\",");
                if (r->name) {
                    put(&labels, "cache=\"");
                    put_escaped(&labels, r->name);
                    put(&labels, "\",");
                }
                if (labels.failed) {
                    t->failed = true;
                    free(labels.p);
                    return;
                }
                const char *l = labels.p;
                int ln = (int)labels.len - 1; /* without the trailing comma */
                if (f == 0) {
                    for (unsigned i = 0; i < STATUSES; i++) {
                        uint64_t v = LOAD(s->status[i]);
                        if (v)
                            put(t, "momento_proxy_%s{%sstatus=\"%s\"} %llu\n", names[f], l,
                                status_name[i], (unsigned long long)v);
                    }
                } else if (f == 1) {
                    for (unsigned i = 1; i < ERRORS; i++) {
                        uint64_t v = LOAD(s->error[i]);
                        if (v)
                            put(t, "momento_proxy_%s{%serror=\"%s\"} %llu\n", names[f], l,
                                i == ERRORS - 1 ? "OTHER" : momento_error_name(error_value(i)),
                                (unsigned long long)v);
                    }
                } else if (f == 2) {
                    put(t, "momento_proxy_%s{%.*s} %llu\n", names[f], ln, l,
                        (unsigned long long)LOAD(s->attempts));
                } else {
                    uint64_t b[PX_METRICS_BUCKETS + 1];
                    for (unsigned i = 0; i <= PX_METRICS_BUCKETS; i++)
                        b[i] = LOAD(s->buckets[i]);
                    histogram(t, names[f], l, b, LOAD(s->sum_ns));
                }
                free(labels.p);
            }
        }
    }
}

static void render_batching(text *t, const px_metrics_source *src)
{
    momento_client_batching_stats b;
    memset(&b, 0, sizeof(b));
    if (src->client)
        momento_client_batching_stats_get(src->client, &b, sizeof(b));
    one(t, "batching_queued_total", "counter",
        "Gets and sets that waited to share a GetBatch or SetBatch (--batch).", b.queued);
    one(t, "batching_batches_total", "counter", "GetBatch and SetBatch calls sent.", b.batches);
    one(t, "batching_sent_alone_total", "counter",
        "Queued requests that left alone, as plain calls.", b.sent_alone);
    one(t, "batching_left_queue_total", "counter",
        "Queued requests that ended in the queue (deadline or cancel).", b.left_queue);
    one(t, "batching_asked_alone_total", "counter",
        "Requests asked again alone after their batch's answer could have been another "
        "key's doing.",
        b.asked_alone);
    one(t, "batching_wait_bound_reached_total", "counter",
        "Times the queue left because its oldest request waited the bound.",
        b.wait_bound_reached);
    family(t, "batching_queued_seconds_total", "counter",
           "Time requests spent queued, summed over those that left the queue.");
    put(t, "momento_proxy_batching_queued_seconds_total %.9f\n", (double)b.queued_ns_total / 1e9);
    /* The library's keys-per-batch histogram: 2, 3-4, 5-8, ... 65-128, more. */
    family(t, "batching_batch_keys", "histogram", "Requests per GetBatch or SetBatch call.");
    static const char *const le[] = {"2", "4", "8", "16", "32", "64", "128"};
    uint64_t cum = 0;
    for (unsigned i = 0; i < 7; i++) {
        cum += b.keys_per_batch[i];
        put(t, "momento_proxy_batching_batch_keys_bucket{le=\"%s\"} %llu\n", le[i],
            (unsigned long long)cum);
    }
    cum += b.keys_per_batch[7];
    put(t, "momento_proxy_batching_batch_keys_bucket{le=\"+Inf\"} %llu\n",
        (unsigned long long)cum);
    put(t, "momento_proxy_batching_batch_keys_sum %llu\n", (unsigned long long)b.batched_keys);
    put(t, "momento_proxy_batching_batch_keys_count %llu\n", (unsigned long long)cum);

    momento_coalescer_stats c;
    memset(&c, 0, sizeof(c));
    if (src->co)
        momento_coalescer_stats_get(src->co, &c, sizeof(c));
    const char *const kinds[] = {"get", "set", "delete", "read"};
    const uint64_t req[] = {c.get_requests, c.set_requests, c.delete_requests, c.read_requests};
    const uint64_t joined[] = {c.get_coalesced, c.set_coalesced, c.delete_coalesced,
                               c.read_coalesced};
    family(t, "coalescer_requests_total", "counter",
           "Requests submitted through the coalescer, by kind (read: collection reads).");
    for (unsigned i = 0; i < 4; i++)
        put(t, "momento_proxy_coalescer_requests_total{kind=\"%s\"} %llu\n", kinds[i],
            (unsigned long long)req[i]);
    family(t, "coalescer_joined_total", "counter",
           "Those that joined an identical call in flight instead of making their own.");
    for (unsigned i = 0; i < 4; i++)
        put(t, "momento_proxy_coalescer_joined_total{kind=\"%s\"} %llu\n", kinds[i],
            (unsigned long long)joined[i]);
    one(t, "coalescer_waiters_left_total", "counter",
        "Waiters that left at their own deadline or cancel before their shared call ended.",
        c.waiters_left);
    one(t, "coalescer_calls_abandoned_total", "counter",
        "Shared calls cancelled on the wire when their last waiter left.", c.rpcs_abandoned);
    one(t, "coalescer_reissued_total", "counter",
        "Waiters issued again: their shared call hit another waiter's deadline.", c.reissued);
    one(t, "coalescer_calls_in_flight", "gauge", "Shared calls in flight now.",
        c.keys_in_flight);

    /* The near cache (--near-cache-bytes): all 0 without one. */
    momento_near_cache_stats nc;
    memset(&nc, 0, sizeof(nc));
    if (src->client)
        momento_client_near_cache_stats_get(src->client, &nc, sizeof(nc));
    one(t, "near_cache_hits_total", "counter",
        "Gets answered from the near cache with a value.", nc.hits);
    one(t, "near_cache_miss_hits_total", "counter",
        "Gets answered from the near cache with a miss it kept.", nc.miss_hits);
    one(t, "near_cache_misses_total", "counter",
        "Gets that looked in the near cache and went to Momento.", nc.misses);
    one(t, "near_cache_bypassed_total", "counter",
        "Gets that had to be current and skipped it (SET ... GET, GETDEL, gets, gat, cas).",
        nc.bypassed);
    one(t, "near_cache_fills_total", "counter",
        "Entries stored from a get's answer or a set.", nc.fills);
    one(t, "near_cache_stale_total", "counter",
        "Answers not stored: past the bound, or the key written meanwhile.", nc.stale);
    one(t, "near_cache_dropped_total", "counter",
        "Entries dropped by this proxy's writes.", nc.dropped);
    one(t, "near_cache_expired_total", "counter",
        "Entries found past the bound and dropped.", nc.expired);
    one(t, "near_cache_evictions_total", "counter",
        "Entries dropped to make room.", nc.evictions);
    one(t, "near_cache_entries", "gauge", "Entries held now.", nc.entries);
    one(t, "near_cache_bytes", "gauge",
        "Bytes held now: keys, values and bookkeeping.", nc.bytes);
    /* Invalidation across clients (--near-cache-topic): all 0 without it;
     * a proxy without a near cache only publishes. */
    one(t, "near_cache_invalidated_total", "counter",
        "Entries dropped on keys other clients published to the topic.", nc.invalidated);
    one(t, "near_cache_resets_total", "counter",
        "Times every entry was dropped: the topic's stream connected, broke or skipped "
        "items, or carried a message not in the library's format.",
        nc.resets);
    one(t, "near_cache_keys_published_total", "counter",
        "Keys this proxy wrote, sent to the topic.", nc.keys_published);
    one(t, "near_cache_publishes_total", "counter",
        "Messages sent to the topic (keys written while one is on its way go in the next).",
        nc.publishes);
    one(t, "near_cache_publish_errors_total", "counter",
        "Publishes that failed: their keys' entries in other clients live out their bound.",
        nc.publish_errors);
    one(t, "near_cache_keys_heard_total", "counter",
        "Keys other clients published, received from the topic.", nc.keys_heard);
    one(t, "near_cache_subscribed", "gauge",
        "1 while the topic's stream is up, else 0.", nc.subscribed);

    /* What the three saved: a batch of n requests is one call instead of
     * n; a request that joined one in flight made none, nor did one the
     * near cache answered. */
    family(t, "calls_saved_total", "counter",
           "Momento calls not made: requests that left in a GetBatch or SetBatch beyond one "
           "per batch, requests that joined an identical call in flight, and gets the near "
           "cache answered.");
    put(t, "momento_proxy_calls_saved_total{by=\"batching\"} %llu\n",
        (unsigned long long)(b.batched_keys >= b.batches ? b.batched_keys - b.batches : 0));
    put(t, "momento_proxy_calls_saved_total{by=\"coalescing\"} %llu\n",
        (unsigned long long)(joined[0] + joined[1] + joined[2] + joined[3]));
    put(t, "momento_proxy_calls_saved_total{by=\"near_cache\"} %llu\n",
        (unsigned long long)(nc.hits + nc.miss_hits));
}

char *px_metrics_render(void *ud, size_t *len)
{
    const px_metrics_source *src = ud;
    text t = {.p = malloc(64 * 1024), .cap = 64 * 1024};
    if (!t.p)
        return NULL;
    t.p[0] = '\0';
    family(&t, "start_time_seconds", "gauge", "When the proxy started, in Unix time.");
    put(&t, "momento_proxy_start_time_seconds %.3f\n", (double)src->started_ms / 1000);
    render_commands(&t);
    render_connections(&t, src);
    render_momento(&t, src);
    render_batching(&t, src);
    one(&t, "metrics_connections", "gauge",
        "Connections open on the metrics port now (this scrape's included).",
        px_metrics_http_open);
    family(&t, "metrics_responses_total", "counter", "The metrics port's answers, by status.");
    for (size_t i = 0; i < HTTP_CODES; i++)
        put(&t, "momento_proxy_metrics_responses_total{code=\"%d\"} %llu\n", http_codes[i],
            (unsigned long long)http_answers[i]);
    if (t.failed) {
        free(t.p);
        return NULL;
    }
    *len = t.len;
    return t.p;
}
