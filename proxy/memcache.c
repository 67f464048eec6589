/* memcached text and binary protocols (being written). */
#include "memcache.h"

static size_t mc_feed(px_conn *c, const char *data, size_t len)
{
    (void)data;
    px_conn_abort(c);
    return len;
}

const px_proto memcache_proto = {
    .name = "memcache",
    .feed = mc_feed,
    .refused = "SERVER_ERROR Too many open connections\r\n",
};
