/* What the memcached port's modules share: the per-connection state, the
 * two protocols' feeds (mc_text.c, mc_binary.c), the command counters
 * `stats` reports, and the version the port announces. */
#ifndef PX_MC_PROTO_H
#define PX_MC_PROTO_H

#include "conn.h"
#include "mc_ops.h"
#include "mc_parse.h"

/* The version `version` answers: memcached's whose protocol the port
 * follows (clients parse it as numbers), then who answers. */
#define MC_VERSION "1.6.18-momento-proxy"

typedef struct mc_state {
    bool decided;        /* the first byte has been seen */
    bool binary;         /* ...and it was 0x80 */
    size_t swallow;      /* data of a refused command still to skip */
    bool flushing;       /* a flush is in flight: it touches every key, so
                            nothing starts beside it (it waited for the
                            connection's commands before it) */
    mc_text_cmd cmd;
} mc_state;

/* memcached's per-command counters, for the memcached port's clients
 * (the proxy's own counters are px_backend.stats). */
typedef struct mc_counters {
    uint64_t cmd_get, cmd_set, cmd_flush, cmd_touch;
    uint64_t get_hits, get_misses;
    uint64_t delete_hits, delete_misses;
    uint64_t incr_hits, incr_misses, decr_hits, decr_misses;
    uint64_t cas_hits, cas_misses, cas_badval;
    uint64_t touch_hits, touch_misses;
    uint64_t store_too_large;
} mc_counters;

extern mc_counters mc_stats;

/* The most a value (with its key and flags) may take: the proxy's
 * request limit, within Momento's item limit. */
size_t mc_max_item(const px_backend *b);

size_t mc_text_feed(px_conn *c, mc_state *st, const char *data, size_t len);
size_t mc_bin_feed(px_conn *c, mc_state *st, const char *data, size_t len);

/* The `stats` lines, as (name, value) pairs, shared by both protocols. */
typedef void (*mc_stat_fn)(void *ud, const char *name, const char *value);
void mc_stats_each(px_backend *b, mc_stat_fn fn, void *ud);

/* Seconds since the epoch, for exptime. */
int64_t mc_now_s(void);

/* Counts a store's outcome in mc_stats. */
void mc_count_result(mc_text_kind kind, const mc_result *res);

#endif
