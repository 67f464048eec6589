/* memcached's `stats`: the per-command counters both protocols of the
 * memcached port keep, and the lines `stats` answers. One proxy thread
 * touches them. */
#ifndef PX_MC_STATS_H
#define PX_MC_STATS_H

#include "memcache/mc_ops.h"

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

/* Counts a command's outcome in mc_stats. */
void mc_count_result(mc_text_kind kind, const mc_result *res);

/* The `stats` lines, as (name, value) pairs, shared by both protocols. */
typedef void (*mc_stat_fn)(void *ud, const char *name, const char *value);
void mc_stats_each(px_backend *b, mc_stat_fn fn, void *ud);

#endif
