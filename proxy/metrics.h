/* The proxy's Prometheus metrics (docs/proxy.md "Metrics"): what each
 * command costs and answers, the connections, the bytes, and the Momento
 * calls behind them, rendered as Prometheus's text format (0.0.4) for the
 * metrics port (http.c).
 *
 * Two writers, no locks:
 *  - the loop thread counts commands: a protocol tags each reply with its
 *    command (px_reply_command(), conn.h) and conn.c observes it when the
 *    reply ends (px_metrics_observe()). Plain counters: only that thread
 *    writes them, and the scrape runs on it too.
 *  - the library counts Momento requests through the metrics hook
 *    (px_metrics_momento_hook(), momento/metrics.h), on its completion
 *    thread or, for the requests a shared RPC answered, on the loop's; in
 *    dispatch mode its calls never overlap (a lock of the library's), so
 *    relaxed atomics suffice, which the scrape reads the same way.
 * The per-command cost is one clock read (at the reply's end; its start is
 * the loop pass's stamp, px_conns_tick()), a few compares and adds: no
 * allocation, no lock, no system call. */
#ifndef PX_METRICS_H
#define PX_METRICS_H

#include "conn.h"
#include "px.h"

#include <stddef.h>
#include <stdint.h>

/* The latency buckets' upper bounds, 50 us to 10 s; one more is +Inf. */
#define PX_METRICS_BUCKETS 17

typedef enum { PX_METRICS_RESP, PX_METRICS_MEMCACHE, PX_METRICS_PROTOCOLS } px_metrics_protocol;

/* One command of one protocol: its counters since start. memcached's text
 * and binary forms of a command share one (the label is the port's
 * protocol, "memcache"). */
struct px_cmd_metrics {
    const char *name; /* "get", "hset", ...: static */
    px_metrics_protocol protocol;
    uint64_t count;   /* replies ended */
    uint64_t errors;  /* ...that began as the protocol's errors do */
    uint64_t sum_ns;
    uint64_t buckets[PX_METRICS_BUCKETS + 1]; /* per bucket, not cumulative */
};

/* The counters a protocol tags its replies with; the lookup is an array
 * index after a command's first use (which interns its name). */
/* A RESP command by its slot in resp.c's table and its static name; a
 * NULL name is an unknown command ("unknown"). Without a slot (-1) the name
 * is searched for each time: for rare commands only. */
px_cmd_metrics *px_metrics_resp_command(int slot, const char *name);
/* A memcached text command by its mc_text_kind (MC_T_ERROR: "invalid"). */
px_cmd_metrics *px_metrics_mc_text_command(int kind);
/* A memcached binary request by its opcode (getq and getk count as "get",
 * as the text protocol names it; an opcode the proxy does not serve as
 * "unknown"). */
px_cmd_metrics *px_metrics_mc_binary_command(uint8_t opcode);

/* A reply tagged with m ended: `lead` holds the first min(size, 8) bytes
 * it was given (what tells an error), `began_ns` its start. */
void px_metrics_observe(px_cmd_metrics *m, const unsigned char *lead, size_t size,
                        int64_t began_ns);

/* The metrics hook (momento_config_set_metrics(cfg, px_metrics_momento_hook,
 * NULL)): Momento requests by method, cache and gRPC status, by error,
 * their attempts and a latency histogram. Runs on the library's completion
 * thread, or on the loop's for the requests a shared RPC answered; never
 * two at once. */
void px_metrics_momento_hook(const momento_request_metrics *m, void *userdata);

/* What a scrape reads besides the counters above. */
typedef struct px_metrics_source {
    const px_counters *stats;      /* shared by every listener */
    const px_limits *limits;
    momento_client *client;        /* batching stats; NULL: none */
    const momento_coalescer *co;   /* NULL: coalescing off */
    const px_conns *conns;         /* walked for per-protocol gauges */
    int64_t started_ms;            /* CLOCK_REALTIME */
} px_metrics_source;

/* The metrics port answered `code` (http.c): counted by code. */
void px_metrics_http_answered(int code);
/* Its connections open now (http.c keeps it). */
extern unsigned px_metrics_http_open;

/* The whole exposition for `src` (a px_metrics_source: the shape of
 * http.h's px_http_render_fn), malloc'd (*len bytes, NUL-terminated), or
 * NULL when out of memory. On the loop thread. */
char *px_metrics_render(void *src, size_t *len);

#endif
