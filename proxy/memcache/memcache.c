/* The memcached port: which protocol a connection speaks (its first byte,
 * as memcached decides), and its state. A port with a password
 * (px_backend.requirepass) speaks binary only, with SASL, as memcached -S
 * does. */
#include "memcache/memcache.h"
#include "memcache/mc_proto.h"

#include <stdlib.h>

static size_t mc_feed(px_conn *c, const char *data, size_t len)
{
    mc_state *st = px_conn_state_or_new(c, sizeof(*st));
    if (!st)
        return 0;
    if (!st->decided && len > 0) {
        st->decided = true;
        st->binary = (unsigned char)data[0] == MC_BIN_REQ;
        if (!st->binary && px_conn_backend(c)->requirepass) {
            /* memcached -S takes only the binary protocol and hangs up
             * without a word on anything else (once 24 bytes are in: a
             * short text command waits for more that never come; the
             * proxy need not wait). */
            px_conn_backend(c)->stats->protocol_errors++;
            px_conn_close_after(c);
            return len;
        }
    }
    return st->binary ? mc_bin_feed(c, st, data, len) : mc_text_feed(c, st, data, len);
}

static void mc_closed(px_conn *c)
{
    mc_state *st = px_conn_state(c);
    if (st) {
        mc_text_cmd_free(&st->cmd);
        free(st);
    }
}

const px_proto memcache_proto = {
    .name = "memcache",
    .feed = mc_feed,
    .refused = "SERVER_ERROR Too many open connections\r\n",
    .closed = mc_closed,
};
