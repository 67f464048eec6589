/* load-gen --merge: runs made at the same time (several processes on one
 * machine, or one per machine) combined into one report, read back from
 * their --json files (loadgen.h, lg_merge).
 *
 * The percentiles are exact because the files carry whole histograms:
 * every non-empty bucket with its count, and the count, min, max and sum.
 * Adding the buckets gives the histogram one process would have built from
 * every request, so its quantiles are the same numbers, not an average of
 * percentiles (which has no meaning). */
#include "jread.h"
#include "loadgen.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* The parsed files: cfg's strings point into the first. */
static jv **docs;
static int n_docs;

static const char *const error_keys[LG_ERR_COUNT] = {
    "unavailable", "deadline_exceeded", "resource_exhausted", "rst_stream", "cancelled", "other",
};

static int bad(const char *file, const char *fmt, ...)
{
    char why[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    fprintf(stderr, "load-gen: cannot merge %s: %s\n", file, why);
    return 2;
}

/* A member that must be an unsigned integer. */
static bool get_uint(const jv *obj, const char *key, uint64_t *out)
{
    return jv_uint(jv_get(obj, key), out);
}

/* Rebuilds a histogram from json_hist()'s form. A bucket whose bounds are
 * not one of this histogram's (another layout, a hand-edited file) is
 * refused rather than placed approximately: the merge promises exactness. */
static bool read_hist(const jv *o, histogram *h, char *why, size_t len)
{
    hist_init(h);
    uint64_t count, min, max, sum;
    const jv *b = jv_get(o, "buckets");
    if (!b) {
        snprintf(why, len, "no buckets (written by a load-gen older than --merge?)");
        return false;
    }
    if (!get_uint(o, "count", &count) || !get_uint(o, "min_us", &min) ||
        !get_uint(o, "max_us", &max) || !get_uint(o, "sum_us", &sum) || b->kind != JV_ARR) {
        snprintf(why, len, "count, min_us, max_us, sum_us or buckets missing or not integers");
        return false;
    }
    uint64_t total = 0;
    int64_t last = -1;
    for (size_t i = 0; i < b->n; i++) {
        const jv *e = &b->items[i];
        uint64_t lo, hi, n;
        if (e->kind != JV_ARR || e->n != 3 || !jv_uint(&e->items[0], &lo) ||
            !jv_uint(&e->items[1], &hi) || !jv_uint(&e->items[2], &n) || n == 0) {
            snprintf(why, len, "bucket %zu is not [low, high, count > 0]", i);
            return false;
        }
        uint32_t idx = hist_index(lo);
        if (hist_bucket_low(idx) != lo || hist_bucket_high(idx) != hi) {
            snprintf(why, len, "bucket [%llu, %llu] is not one of this histogram's",
                     (unsigned long long)lo, (unsigned long long)hi);
            return false;
        }
        if ((int64_t)idx <= last) {
            snprintf(why, len, "buckets out of order at [%llu, %llu]", (unsigned long long)lo,
                     (unsigned long long)hi);
            return false;
        }
        last = idx;
        h->buckets[idx] = n;
        total += n;
    }
    if (total != count || (count && (min > max || hist_index(min) > hist_index(max)))) {
        snprintf(why, len, "the buckets hold %llu values, count says %llu (or min > max)",
                 (unsigned long long)total, (unsigned long long)count);
        return false;
    }
    h->count = count;
    h->sum = sum;
    if (count) {
        h->min = min;
        h->max = max;
    }
    return true;
}

/* The inverse of momento_error_name(), for first_refusal. */
static int error_code(const char *name)
{
    for (int e = -1; e >= -200; e--)
        if (strcmp(momento_error_name(e), name) == 0)
            return e;
    return MOMENTO_ERR_UNKNOWN;
}

/* One file's run into `r` (its config is read separately). */
static int read_run(const char *file, const jv *d, lg_result *r)
{
    char why[200];
    memset(r, 0, sizeof(*r));
    lg_stats_init(&r->stats);
    lg_stats *s = &r->stats;
    if (!d || d->kind != JV_OBJ)
        return bad(file, "not a JSON object");
    if (jv_get(d, "before") || jv_get(d, "coalesced"))
        return bad(file, "written by request-coalescing; only load-gen runs merge");
    const jv *errors = jv_get(d, "errors");
    if (!get_uint(d, "requests", &s->requests) || !get_uint(d, "success", &s->success) ||
        !get_uint(d, "refused", &s->refused) || !get_uint(d, "timed_out", &s->timed_out) ||
        !get_uint(d, "timed_out_early", &s->timed_out_early) ||
        !get_uint(d, "timed_out_early_max_us", &s->early_max_us) ||
        !get_uint(d, "get_hits", &s->get_hits) || !get_uint(d, "get_misses", &s->get_misses) ||
        !get_uint(d, "wrong_results", &s->wrong_results) || !get_uint(d, "rpcs", &r->rpcs) ||
        !errors || !jv_get(d, "config"))
        return bad(file, "not a load-gen --json file (a count is missing)");
    for (int i = 0; i < LG_ERR_COUNT; i++)
        if (!get_uint(errors, error_keys[i], &s->errors[i]))
            return bad(file, "errors.%s missing", error_keys[i]);
    const char *names[3] = {"set", "get", "timeout_late"};
    histogram *hs[3] = {&s->set, &s->get, &s->late};
    for (int i = 0; i < 3; i++)
        if (!read_hist(jv_get(d, names[i]), hs[i], why, sizeof(why)))
            return bad(file, "%s: %s", names[i], why);
    uint64_t rss;
    if (!jv_num(jv_get(d, "client_cpu_s"), &r->cpu_s) || !jv_num(jv_get(d, "wall_s"), &r->wall_s) ||
        !get_uint(d, "max_rss_kb", &rss) || !jv_num(jv_get(d, "started_at"), &r->started_at))
        return bad(file, "client_cpu_s, wall_s, max_rss_kb or started_at missing");
    r->max_rss_kb = (long)rss;
    const jv *fr = jv_get(d, "first_refusal");
    if (fr && fr->kind == JV_STR)
        s->first_refusal = error_code(fr->str);
    const jv *srv = jv_get(d, "server");
    if (srv && srv->kind == JV_OBJ) {
        r->have_server = get_uint(srv, "Get", &r->server_get_rpcs) &&
                         get_uint(srv, "Set", &r->server_set_rpcs) &&
                         get_uint(srv, "GetBatch", &r->server_get_batch_rpcs) &&
                         get_uint(srv, "SetBatch", &r->server_set_batch_rpcs);
        if (!r->have_server)
            return bad(file, "server counts missing");
    }
    const jv *b = jv_get(d, "batching");
    if (b && b->kind == JV_OBJ) {
        momento_client_batching_stats *k = &r->batch_counters;
        double total_us, max_us;
        const jv *kpb = jv_get(b, "keys_per_batch");
        static const char *const kpb_keys[8] = {"2", "3-4", "5-8", "9-16", "17-32", "33-64",
                                                "65-128", "129+"};
        if (!get_uint(b, "queued", &k->queued) || !get_uint(b, "batches", &k->batches) ||
            !get_uint(b, "batched_keys", &k->batched_keys) ||
            !get_uint(b, "sent_alone", &k->sent_alone) ||
            !get_uint(b, "left_queue", &k->left_queue) ||
            !jv_num(jv_get(b, "queued_us_total"), &total_us) ||
            !jv_num(jv_get(b, "queued_us_max"), &max_us))
            return bad(file, "batching counters missing");
        for (int i = 0; i < 8; i++)
            if (!get_uint(kpb, kpb_keys[i], &k->keys_per_batch[i]))
                return bad(file, "batching.keys_per_batch.%s missing", kpb_keys[i]);
        k->queued_ns_total = (uint64_t)(total_us * 1e3 + 0.5);
        k->queued_ns_max = (uint64_t)(max_us * 1e3 + 0.5);
        r->batching = true;
    }
    const jv *m = jv_get(d, "merged");
    uint64_t runs = 1;
    if (m && m->kind == JV_OBJ && !get_uint(m, "runs", &runs))
        return bad(file, "merged.runs missing");
    r->merged_runs = (int)runs;
    return 0;
}

/* The configuration of the first run, as lg_json_config() writes it. */
static int read_config(const char *file, const jv *c, lg_options *o)
{
    uint64_t v[8];
    const char *keys[8] = {"concurrency", "rps", "payload_bytes", "timeout_ms", "keys",
                           "threads", "timeout_min_ms", "timeout_max_ms"};
    for (int i = 0; i < 8; i++)
        if (!get_uint(c, keys[i], &v[i]))
            return bad(file, "config.%s missing", keys[i]);
    const jv *ep = jv_get(c, "endpoint"), *cache = jv_get(c, "cache"),
             *dist = jv_get(c, "distribution"), *open = jv_get(c, "open_loop"),
             *batch = jv_get(c, "batch");
    if (!jv_num(jv_get(c, "duration_s"), &o->duration_s) || !cache || cache->kind != JV_STR ||
        !dist || dist->kind != JV_STR || !open || open->kind != JV_BOOL || !batch)
        return bad(file, "config incomplete");
    o->target.endpoint = ep && ep->kind == JV_STR ? ep->str : NULL;
    /* Absent in files written before protosocket: gRPC then. */
    const jv *tr = jv_get(c, "transport");
    o->target.protosocket = tr && tr->kind == JV_STR && strcmp(tr->str, "protosocket") == 0;
    o->cache = cache->str;
    o->concurrency = (int)v[0];
    o->rps = (int)v[1];
    o->payload_bytes = (int)v[2];
    o->keys = (int)v[4];
    o->threads = (int)v[5];
    o->timeout_min_ms = (int)v[6];
    o->timeout_ms = (int)v[7];
    o->zipf = strcmp(dist->str, "zipf") == 0;
    o->open_loop = open->b;
    /* Absent in files written before --get-ratio: set-then-get, 0.5. */
    if (!jv_num(jv_get(c, "get_ratio"), &o->get_ratio))
        o->get_ratio = 0.5;
    if (batch->kind == JV_OBJ) {
        uint64_t n, l, m, b;
        if (!get_uint(batch, "min_in_flight", &n) || !get_uint(batch, "linger_us", &l) ||
            !get_uint(batch, "max_keys", &m) || !get_uint(batch, "max_bytes", &b))
            return bad(file, "config.batch incomplete");
        o->batch = true;
        o->batch_min_in_flight = (uint32_t)n;
        o->batch_linger_us = (uint32_t)l;
        o->batch_max_keys = (uint32_t)m;
        o->batch_max_bytes = (uint32_t)b;
        /* Written since 0.3.0; an older run's file has none: the bound then
         * did not exist, 0. */
        uint64_t w = 0;
        o->batch_max_wait_us = get_uint(batch, "max_wait_us", &w) ? (uint32_t)w : 0;
    }
    return 0;
}

static bool same(const jv *a, const jv *b)
{
    if (!a || !b || a->kind != b->kind)
        return a == b;
    switch (a->kind) {
    case JV_NULL: return true;
    case JV_BOOL: return a->b == b->b;
    case JV_NUM: return a->num == b->num;
    case JV_STR: return strcmp(a->str, b->str) == 0;
    default:
        if (a->n != b->n)
            return false;
        for (size_t i = 0; i < a->n; i++)
            if ((a->keys && strcmp(a->keys[i], b->keys[i]) != 0) || !same(&a->items[i], &b->items[i]))
                return false;
        return true;
    }
}

int lg_merge(const lg_options *o, lg_options *cfg, lg_result *out)
{
    memset(out, 0, sizeof(*out));
    lg_stats_init(&out->stats);
    docs = calloc((size_t)o->n_merge, sizeof(*docs));
    if (!docs)
        return bad(o->merge_files[0], "out of memory");
    n_docs = o->n_merge;
    double first_start = 0, last_start = 0;
    /* Each run's start and wall time, to find the span they covered. */
    double *start = calloc((size_t)o->n_merge, sizeof(*start));
    double *wall = calloc((size_t)o->n_merge, sizeof(*wall));
    if (!start || !wall) {
        free(start);
        free(wall);
        return bad(o->merge_files[0], "out of memory");
    }
    int rc = 0;
    for (int i = 0; i < o->n_merge && rc == 0; i++) {
        const char *file = o->merge_files[i];
        char why[200];
        docs[i] = jv_parse_file(file, why, sizeof(why));
        if (!docs[i]) {
            rc = bad(file, "%s", why);
            break;
        }
        lg_result r;
        rc = read_run(file, docs[i], &r);
        if (rc)
            break;
        const jv *c = jv_get(docs[i], "config");
        if (i == 0) {
            *cfg = *o;
            cfg->merge_files = NULL;
            cfg->n_merge = 0;
            rc = read_config(file, c, cfg);
            if (rc)
                break;
            out->have_server = r.have_server;
            first_start = last_start = r.started_at;
        } else {
            lg_options other = *o;
            rc = read_config(file, c, &other);
            if (rc)
                break;
            /* Workers, rates and threads add up; the rest should be alike,
             * or the percentiles mix different loads. Say so, and go on. */
            cfg->concurrency += other.concurrency;
            cfg->rps = cfg->rps && other.rps ? cfg->rps + other.rps : 0;
            cfg->threads += other.threads;
            const jv *c0 = jv_get(docs[0], "config");
            for (size_t k = 0; k < c0->n; k++) {
                const char *key = c0->keys[k];
                if (strcmp(key, "concurrency") && strcmp(key, "rps") && strcmp(key, "threads") &&
                    !same(&c0->items[k], jv_get(c, key)))
                    fprintf(stderr, "load-gen: note: %s differs in config.%s from %s (the "
                                    "report shows the first file's)\n",
                            file, key, o->merge_files[0]);
            }
            out->have_server = out->have_server && r.have_server;
        }
        lg_stats_merge(&out->stats, &r.stats);
        out->cpu_s += r.cpu_s;
        if (r.max_rss_kb > out->max_rss_kb)
            out->max_rss_kb = r.max_rss_kb;
        out->server_get_rpcs += r.server_get_rpcs;
        out->server_set_rpcs += r.server_set_rpcs;
        out->server_get_batch_rpcs += r.server_get_batch_rpcs;
        out->server_set_batch_rpcs += r.server_set_batch_rpcs;
        out->rpcs += r.rpcs;
        if (r.batching) {
            momento_client_batching_stats *sum = &out->batch_counters;
            const momento_client_batching_stats *b = &r.batch_counters;
            out->batching = true;
            sum->queued += b->queued;
            sum->batches += b->batches;
            sum->batched_keys += b->batched_keys;
            sum->sent_alone += b->sent_alone;
            sum->left_queue += b->left_queue;
            for (int j = 0; j < 8; j++)
                sum->keys_per_batch[j] += b->keys_per_batch[j];
            sum->queued_ns_total += b->queued_ns_total;
            if (b->queued_ns_max > sum->queued_ns_max)
                sum->queued_ns_max = b->queued_ns_max;
        }
        out->merged_runs += r.merged_runs;
        if (r.started_at < first_start)
            first_start = r.started_at;
        if (r.started_at > last_start)
            last_start = r.started_at;
        start[i] = r.started_at;
        wall[i] = r.wall_s;
    }
    /* Throughput is every run's requests over the time they covered together,
     * from the first start to the last end (their clocks are the machines'
     * real-time clocks, so keep those in sync: NTP is plenty at these
     * durations). Runs started together cover about one run's duration.
     * Measured from the first start, the first run's end is its own wall
     * time exactly, so a merge of one run reports that run's throughput. */
    double shortest = 0;
    for (int i = 0; i < o->n_merge && rc == 0; i++) {
        if (start[i] - first_start + wall[i] > out->wall_s)
            out->wall_s = start[i] - first_start + wall[i];
        if (i == 0 || wall[i] < shortest)
            shortest = wall[i];
    }
    /* Runs that did not overlap much make a rate over a span in which few
     * of them were running: say so rather than let it pass as a peak. */
    if (rc == 0 && last_start - first_start > 0.1 * shortest)
        fprintf(stderr, "load-gen: note: the runs started %.1f s apart and the shortest ran %.1f s: "
                        "they did not all run at the same time, so the throughput is an average "
                        "over %.1f s\n",
                last_start - first_start, shortest, out->wall_s);
    free(start);
    free(wall);
    if (rc)
        return rc;
    if (!out->have_server)
        out->server_get_rpcs = out->server_set_rpcs = out->server_get_batch_rpcs =
            out->server_set_batch_rpcs = 0;
    out->started_at = first_start;
    out->start_spread_s = last_start - first_start;
    return 0;
}

void lg_merge_free(void)
{
    for (int i = 0; i < n_docs; i++)
        jv_free(docs[i]);
    free(docs);
    docs = NULL;
    n_docs = 0;
}
