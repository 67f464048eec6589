/* The server's counters: calls per method and gRPC status, calls per
 * method by the transport they came by (gRPC or protosocket), calls per
 * method cancelled by their clients, calls carrying each of a few headers,
 * topics' memory, and their JSON summary. Written by the server's
 * threads, read from any thread; relaxed atomics, as each counter stands
 * alone. */
#include "core/srv_server.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *const status_names[SRV_STATUS_COUNT] = {
    "OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
    "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED",
    "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED",
};

static const char *const counted_headers[SRV_COUNTED_HEADERS] = {
    "authorization", "cache", "agent", "runtime-version", "read-concern"};

/* A method's name in the stats: the table's, "Unimplemented" for the rest. */
static const char *method_name(int m)
{
    return m == SRV_UNKNOWN ? "Unimplemented" : momento__rpcs[m].name;
}

/* One counter, read from any thread: an atomic, so reading it through a
 * const server is safe (relaxed, as each stands alone). */
static uint64_t counter(const atomic_uint_fast64_t *a)
{
    return atomic_load_explicit((atomic_uint_fast64_t *)a, memory_order_relaxed);
}

/* The transports' names in the stats' "by_transport". */
static const char *const transport_names[SRV_TRANSPORT_COUNT] = {"grpc", "protosocket"};

void srv_stats_count(momento_local *s, srv_transport via, momento__rpc_id m,
                     grpc_status_code status)
{
    if ((unsigned)status >= SRV_STATUS_COUNT)
        return;
    atomic_fetch_add_explicit(&s->stats[m][status], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->by_transport[via][m], 1, memory_order_relaxed);
}

void srv_stats_count_client_cancel(momento_local *s, momento__rpc_id m)
{
    atomic_fetch_add_explicit(&s->client_cancels[m], 1, memory_order_relaxed);
}

void srv_stats_count_headers(momento_local *s, const grpc_metadata_array *md)
{
    for (size_t i = 0; i < md->count; i++)
        for (int h = 0; h < SRV_COUNTED_HEADERS; h++)
            if (grpc_slice_str_cmp(md->metadata[i].key, counted_headers[h]) == 0)
                atomic_fetch_add_explicit(&s->header_counts[h], 1, memory_order_relaxed);
}

uint64_t momento_local_header_count(const momento_local *s, const char *name)
{
    if (!s || !name)
        return 0;
    for (int h = 0; h < SRV_COUNTED_HEADERS; h++)
        if (strcmp(name, counted_headers[h]) == 0)
            return counter(&s->header_counts[h]);
    return 0;
}

static int method_index(const char *name)
{
    for (int m = 0; m < SRV_METHOD_COUNT; m++)
        if (strcmp(method_name(m), name) == 0)
            return m;
    return -1;
}

/* The methods a count covers, [*first, *end): every one for NULL, else
 * the one named; false for a name that is none. */
static bool methods_of(const char *method, int *first, int *end)
{
    *first = method ? method_index(method) : 0;
    *end = method ? *first + 1 : SRV_METHOD_COUNT;
    return *first >= 0;
}

uint64_t momento_local_rpc_count(const momento_local *s, const char *method, int grpc_status)
{
    int first, end;
    if (!s || grpc_status < -1 || grpc_status >= SRV_STATUS_COUNT ||
        !methods_of(method, &first, &end))
        return 0;
    uint64_t total = 0;
    for (int m = first; m < end; m++)
        for (int st = 0; st < SRV_STATUS_COUNT; st++)
            if (grpc_status < 0 || st == grpc_status)
                total += counter(&s->stats[m][st]);
    return total;
}

uint64_t momento_local_cancelled_calls(const momento_local *s, const char *method)
{
    int first, end;
    if (!s || !methods_of(method, &first, &end))
        return 0;
    uint64_t total = 0;
    for (int m = first; m < end; m++)
        total += counter(&s->client_cancels[m]);
    return total;
}

uint64_t momento_local_parked_calls(const momento_local *s)
{
    return s ? counter(&s->parked) : 0;
}

uint64_t momento_local_long_requests(const momento_local *s)
{
    return s ? counter(&s->turns.long_now) : 0;
}

uint64_t momento_local_waiting_calls(const momento_local *s)
{
    return s ? counter(&s->waiting_calls) : 0;
}

uint64_t momento_local_subscriptions(const momento_local *s)
{
    return s ? counter(&s->subscriptions) : 0;
}

uint64_t momento_local_topic_deliveries(const momento_local *s)
{
    return s ? counter(&s->topic_deliveries) : 0;
}

uint64_t momento_local_topic_heartbeats(const momento_local *s)
{
    return s ? counter(&s->topic_heartbeats) : 0;
}

uint64_t momento_local_topic_bytes(const momento_local *s)
{
    return s ? counter(&s->topics.bytes_seen) : 0;
}

uint64_t momento_local_topic_count(const momento_local *s)
{
    return s ? counter(&s->topics.count_seen) : 0;
}

uint64_t momento_local_queued_bytes(const momento_local *s)
{
    return s ? counter(&s->topics.queued_seen) : 0;
}

double momento_local_cpu_seconds(const momento_local *s)
{
    if (!s)
        return 0;
    /* Every server thread's (srv_turns.h); each is set before it counts. */
    momento_local *ms = (momento_local *)s;
    unsigned n = atomic_load(&ms->turns.n_threads);
    double total = 0;
    for (unsigned i = 0; i < n; i++) {
        clockid_t cid;
        struct timespec ts;
        if (pthread_getcpuclockid(ms->turns.threads[i], &cid) == 0 &&
            clock_gettime(cid, &ts) == 0)
            total += (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
    }
    return total;
}

void momento_local_reset_stats(momento_local *s)
{
    if (!s)
        return;
    for (int m = 0; m < SRV_METHOD_COUNT; m++)
        for (int st = 0; st < SRV_STATUS_COUNT; st++)
            atomic_store(&s->stats[m][st], 0);
    for (int m = 0; m < SRV_METHOD_COUNT; m++)
        atomic_store(&s->client_cancels[m], 0);
    for (int t = 0; t < SRV_TRANSPORT_COUNT; t++)
        for (int m = 0; m < SRV_METHOD_COUNT; m++)
            atomic_store(&s->by_transport[t][m], 0);
    for (int h = 0; h < SRV_COUNTED_HEADERS; h++)
        atomic_store(&s->header_counts[h], 0);
    atomic_store(&s->topic_deliveries, 0);
    atomic_store(&s->topic_heartbeats, 0);
}

/* `"by_transport": {"grpc": {"total": 2, "methods": {"Get": 2}}, ...}`,
 * each transport's methods with counts, appended at out + len. */
static size_t by_transport_json(const momento_local *s, char *out, size_t cap)
{
    size_t len = (size_t)snprintf(out, cap, ", \"by_transport\": {");
    for (int t = 0; t < SRV_TRANSPORT_COUNT; t++) {
        uint64_t total = 0;
        for (int m = 0; m < SRV_METHOD_COUNT; m++)
            total += counter(&s->by_transport[t][m]);
        len += (size_t)snprintf(out + len, cap - len, "%s\"%s\": {\"total\": %llu, \"methods\": {",
                                t ? ", " : "", transport_names[t], (unsigned long long)total);
        bool first = true;
        for (int m = 0; m < SRV_METHOD_COUNT; m++) {
            uint64_t n = counter(&s->by_transport[t][m]);
            if (!n)
                continue;
            len += (size_t)snprintf(out + len, cap - len, "%s\"%s\": %llu", first ? "" : ", ",
                                    method_name(m), (unsigned long long)n);
            first = false;
        }
        len += (size_t)snprintf(out + len, cap - len, "}}");
    }
    len += (size_t)snprintf(out + len, cap - len, "}");
    return len;
}

char *momento_local_stats_json(const momento_local *s)
{
    if (!s)
        return NULL;
    /* Room for every counter at its widest (20 digits), with a method name
     * of up to 64 bytes, so that no snprintf below can run past `cap`: the
     * statuses, "cancelled_by_client" and the webhooks' 12 fields take at
     * most 48 bytes each; each transport's line of a method, at most 96. */
    size_t cap = 128 + 12 * 48 + SRV_METHOD_COUNT * (128 + (SRV_STATUS_COUNT + 1) * 48) +
                 SRV_TRANSPORT_COUNT * (128 + SRV_METHOD_COUNT * 96),
           len = 0;
    char *out = malloc(cap);
    if (!out)
        return NULL;
    len += (size_t)snprintf(out + len, cap - len, "{\"total\": %llu, \"methods\": {",
                            (unsigned long long)momento_local_rpc_count(s, NULL, -1));
    bool first = true;
    for (int m = 0; m < SRV_METHOD_COUNT; m++) {
        const char *name = method_name(m);
        uint64_t total = momento_local_rpc_count(s, name, -1);
        uint64_t cancels = momento_local_cancelled_calls(s, name);
        /* A call counted before momento_local_reset_stats() and cancelled
         * after it leaves a cancel without a total. */
        if (!total && !cancels)
            continue;
        len += (size_t)snprintf(out + len, cap - len, "%s\"%s\": {\"total\": %llu", first ? "" : ", ",
                                name, (unsigned long long)total);
        first = false;
        for (int st = 0; st < SRV_STATUS_COUNT; st++) {
            uint64_t n = momento_local_rpc_count(s, name, st);
            if (n)
                len += (size_t)snprintf(out + len, cap - len, ", \"%s\": %llu", status_names[st],
                                        (unsigned long long)n);
        }
        /* Like the statuses, only when there are any: the line of a method
         * without cancels stays as it was (bench/server.sh matches it). */
        if (cancels)
            len += (size_t)snprintf(out + len, cap - len, ", \"cancelled_by_client\": %llu",
                                    (unsigned long long)cancels);
        len += (size_t)snprintf(out + len, cap - len, "}");
    }
    /* Appended after "methods" so that what came before is unchanged;
     * always there, so a reader can tell 0 from a server without it. */
    len += (size_t)snprintf(out + len, cap - len, "}, \"cancelled_by_client\": %llu",
                            (unsigned long long)momento_local_cancelled_calls(s, NULL));
    /* Webhook deliveries, once there have been any: a server without them
     * prints what it printed before. Every field of the struct, in its
     * order: they are only ever appended, here too. */
    momento_local_webhook_stats w;
    momento_local_webhook_stats_get(s, &w);
    if (w.queued)
        len += (size_t)snprintf(
            out + len, cap - len,
            ", \"webhooks\": {\"queued\": %llu, \"delivered\": %llu, \"rejected\": %llu, "
            "\"timed_out\": %llu, \"failed\": %llu, \"dropped\": %llu, \"pending\": %llu, "
            "\"dropped_full\": %llu, \"dropped_global\": %llu, \"dropped_memory\": %llu, "
            "\"sending\": %llu, \"bytes\": %llu}",
            (unsigned long long)w.queued, (unsigned long long)w.delivered,
            (unsigned long long)w.rejected, (unsigned long long)w.timed_out,
            (unsigned long long)w.failed, (unsigned long long)w.dropped,
            (unsigned long long)w.pending, (unsigned long long)w.dropped_full,
            (unsigned long long)w.dropped_global, (unsigned long long)w.dropped_memory,
            (unsigned long long)w.sending, (unsigned long long)w.bytes);
    /* The count by transport, last, on a server with a protosocket port:
     * a server without one (every call gRPC's) prints what it printed
     * before, and one with it prints that, then this. */
    if (s->opts.protosocket_port >= 0)
        len += by_transport_json(s, out + len, cap - len);
    snprintf(out + len, cap - len, "}");
    return out;
}
