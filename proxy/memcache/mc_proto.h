/* What the memcached port's modules share: the per-connection state, the
 * two protocols' feeds (mc_text.c, mc_binary.c), and the version the port
 * announces. */
#ifndef PX_MC_PROTO_H
#define PX_MC_PROTO_H

#include "conn.h"
#include "memcache/mc_ops.h"
#include "memcache/mc_parse.h"
#include "memcache/mc_stats.h"

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
    bool authed;         /* SASL PLAIN gave px_backend.requirepass */
    bool sasl_started;   /* a SASL PLAIN exchange was begun: a SASL step
                            may bring (or bring again) its data */
    bool sasl_done;      /* ...and it succeeded: Cyrus SASL refuses a
                            step after that (mc_binary.c, sasl_auth()) */
    mc_text_cmd cmd;
    mc_resume resume;    /* how far the parser looked into the command at
                            the head of the input (mc_parse.h) */
} mc_state;


size_t mc_text_feed(px_conn *c, mc_state *st, const char *data, size_t len);
size_t mc_bin_feed(px_conn *c, mc_state *st, const char *data, size_t len);

/* What both feeds do before each request they read from data[*used, len),
 * the condition of their loops: false when none is read now - the input
 * is used up, the connection may start no more commands
 * (px_conn_can_start()), a flush in flight waits for the commands before
 * it (px_conn_wait()), or the input ends while the data of a refused
 * command is skipped (*used moves past what is skipped). Inline:
 * memcache.c, which calls the feeds, is the only other file of the port
 * they share. */
static inline bool mc_feed_ready(px_conn *c, mc_state *st, size_t len, size_t *used)
{
    if (*used >= len || !px_conn_can_start(c))
        return false;
    if (st->flushing && px_conn_pending(c) > 0) {
        px_conn_wait(c);
        return false;
    }
    st->flushing = false;
    if (st->swallow) {
        size_t k = len - *used < st->swallow ? len - *used : st->swallow;
        st->swallow -= k;
        *used += k;
    }
    return *used < len;
}

#endif
