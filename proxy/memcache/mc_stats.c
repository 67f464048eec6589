/* The counters memcached's `stats` reports (mc_stats.h), kept by both
 * protocols of the memcached port. */
#include "memcache/mc_stats.h"
#include "memcache/mc_proto.h"

#include <stdio.h>
#include <unistd.h>

mc_counters mc_stats;

/* memcached's hit or miss of a command on one key: a hit when it found the
 * key, a miss when it answered NOT_FOUND; a failure of Momento's is
 * neither, as memcached counts nothing for an error. */
static void count_hit(bool hit, const mc_result *res, uint64_t *hits, uint64_t *misses)
{
    if (hit)
        (*hits)++;
    else if (res->status == MC_NOT_FOUND)
        (*misses)++;
}

void mc_count_result(mc_text_kind kind, const mc_result *res)
{
    bool found = res->status != MC_NOT_FOUND && res->status != MC_FAILED;
    switch (kind) {
    case MC_T_DELETE:
        count_hit(res->status == MC_DELETED, res, &mc_stats.delete_hits, &mc_stats.delete_misses);
        break;
    case MC_T_INCR:
        count_hit(found, res, &mc_stats.incr_hits, &mc_stats.incr_misses);
        break;
    case MC_T_DECR:
        count_hit(found, res, &mc_stats.decr_hits, &mc_stats.decr_misses);
        break;
    case MC_T_CAS:
        /* A unique that no longer matches: badval, neither hit nor miss. */
        if (res->status == MC_EXISTS)
            mc_stats.cas_badval++;
        else
            count_hit(res->status == MC_STORED, res, &mc_stats.cas_hits, &mc_stats.cas_misses);
        break;
    case MC_T_TOUCH:
        count_hit(res->status == MC_TOUCHED, res, &mc_stats.touch_hits, &mc_stats.touch_misses);
        break;
    default:
        break;
    }
    if (res->status == MC_TOO_LARGE)
        mc_stats.store_too_large++;
}

void mc_stats_each(px_backend *b, mc_stat_fn fn, void *ud)
{
    const px_counters *s = b->stats;
    char v[64];
#define STAT_U(name, val)                                                                          \
    do {                                                                                           \
        snprintf(v, sizeof(v), "%llu", (unsigned long long)(val));                                 \
        fn(ud, name, v);                                                                           \
    } while (0)
    int64_t now = mc_now_s();
    STAT_U("pid", (unsigned long long)getpid());
    STAT_U("uptime", (unsigned long long)(now - b->started_ms / 1000));
    STAT_U("time", (unsigned long long)now);
    fn(ud, "version", MC_VERSION);
    fn(ud, "libmomento_version", momento_version());
    STAT_U("pointer_size", sizeof(void *) * 8);
    STAT_U("max_connections", b->limits.max_connections);
    STAT_U("curr_connections", s->connections);
    STAT_U("total_connections", s->connections_total);
    STAT_U("rejected_connections", s->connections_rejected);
    STAT_U("cmd_get", mc_stats.cmd_get);
    STAT_U("cmd_set", mc_stats.cmd_set);
    STAT_U("cmd_flush", mc_stats.cmd_flush);
    STAT_U("cmd_touch", mc_stats.cmd_touch);
    STAT_U("get_hits", mc_stats.get_hits);
    STAT_U("get_misses", mc_stats.get_misses);
    STAT_U("delete_misses", mc_stats.delete_misses);
    STAT_U("delete_hits", mc_stats.delete_hits);
    STAT_U("incr_misses", mc_stats.incr_misses);
    STAT_U("incr_hits", mc_stats.incr_hits);
    STAT_U("decr_misses", mc_stats.decr_misses);
    STAT_U("decr_hits", mc_stats.decr_hits);
    STAT_U("cas_misses", mc_stats.cas_misses);
    STAT_U("cas_hits", mc_stats.cas_hits);
    STAT_U("cas_badval", mc_stats.cas_badval);
    STAT_U("touch_hits", mc_stats.touch_hits);
    STAT_U("touch_misses", mc_stats.touch_misses);
    STAT_U("store_too_large", mc_stats.store_too_large);
    STAT_U("bytes_read", s->bytes_in);
    STAT_U("bytes_written", s->bytes_out);
    STAT_U("item_size_max", mc_max_item(b));
    STAT_U("threads", 1);
    fn(ud, "momento_cache", b->cache);
    STAT_U("momento_default_ttl_ms", b->default_ttl_ms);
    STAT_U("momento_commands", s->commands);
    STAT_U("momento_calls", s->backend_calls);
    STAT_U("momento_errors", s->backend_errors);
    STAT_U("momento_in_flight", momento_client_in_flight(b->client));
    STAT_U("momento_hits", s->hits);
    STAT_U("momento_misses", s->misses);
    STAT_U("protocol_errors", s->protocol_errors);
#undef STAT_U
}
