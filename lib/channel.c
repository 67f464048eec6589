/* gRPC channels: one or more to the data endpoint, one to the control
 * endpoint, each with every method of its plane registered once so that
 * calls skip per-call path parsing (registered calls). */
#include "channel.h"

#include "alloc.h"
#include "config.h"
#include "credentials.h"
#include "decode.h"
#include "grpc_util.h"
#include "validate.h"

#include <grpc/grpc_security.h>
#include <grpc/support/time.h>
#include <stdlib.h>
#include <string.h>

static grpc_channel *open_channel(const momento_config *cfg, const momento_credentials *creds,
                                  const char *target)
{
    grpc_arg args[11];
    size_t n = 0;
    /* The library applies its own retry rule; gRPC's hidden retries would
     * repeat non-idempotent RPCs and cost ~9,000 instructions per call. */
    args[n++] = momento__int_arg(GRPC_ARG_ENABLE_RETRIES, 0);
    /* Without a local subchannel pool, channels to one target share a single
     * connection, which would defeat num_channels. */
    args[n++] = momento__int_arg(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    /* gRPC backs off up to 120 s between reconnection attempts; a cache
     * client should find a restarted server within seconds. (Not
     * GRPC_ARG_MIN_RECONNECT_BACKOFF_MS: gRPC also uses that as the minimum
     * connect timeout, and 250 ms would fail any slower handshake.) */
    args[n++] = momento__int_arg(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 250);
    args[n++] = momento__int_arg(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 2000);
    args[n++] = momento__int_arg(GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH, MOMENTO__MAX_MESSAGE_BYTES);
    args[n++] = momento__int_arg(GRPC_ARG_MAX_SEND_MESSAGE_LENGTH, MOMENTO__MAX_MESSAGE_BYTES);
    if (cfg->keepalive_ms) {
        args[n++] = momento__int_arg(GRPC_ARG_KEEPALIVE_TIME_MS, (int)cfg->keepalive_ms);
        args[n++] = momento__int_arg(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, (int)cfg->keepalive_timeout_ms);
        args[n++] = momento__int_arg(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
        args[n++] = momento__int_arg(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
    }
    grpc_channel_args ch_args = {n, args};

    grpc_channel_credentials *gc = creds->tls
                                       ? grpc_ssl_credentials_create(cfg->tls_roots_pem, NULL, NULL, NULL)
                                       : grpc_insecure_credentials_create();
    if (!gc)
        return NULL;
    grpc_channel *ch = grpc_channel_create(target, gc, &ch_args);
    grpc_channel_credentials_release(gc);
    return ch;
}

/* Registers the RPCs of one endpoint that the library makes. */
static int setup(momento__channel *mc, const momento_config *cfg,
                 const momento_credentials *creds, const char *target, bool control)
{
    memset(mc, 0, sizeof(*mc));
    mc->channel = open_channel(cfg, creds, target);
    if (!mc->channel)
        return MOMENTO_ERR_NO_MEMORY;
    for (int m = 0; m < MOMENTO__RPC_COUNT; m++)
        if (momento__decoders[m] && (momento__rpcs[m].plane == MOMENTO__PLANE_CONTROL) == control)
            mc->registered[m] =
                grpc_channel_register_call(mc->channel, momento__rpcs[m].path, NULL, NULL);
    return MOMENTO_OK;
}

/* Waits until the channel is READY or the deadline passes. */
static int connect_now(grpc_channel *ch, uint32_t timeout_ms)
{
    gpr_timespec deadline = gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
                                         gpr_time_from_millis(timeout_ms, GPR_TIMESPAN));
    grpc_completion_queue *cq = grpc_completion_queue_create_for_next(NULL);
    int rc = MOMENTO_ERR_SERVER_UNAVAILABLE;
    for (;;) {
        grpc_connectivity_state st = grpc_channel_check_connectivity_state(ch, 1);
        if (st == GRPC_CHANNEL_READY) {
            rc = MOMENTO_OK;
            break;
        }
        grpc_channel_watch_connectivity_state(ch, st, deadline, cq, NULL);
        grpc_event ev = grpc_completion_queue_next(cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL);
        if (!ev.success) /* the deadline passed with no state change */
            break;
    }
    momento__cq_drain(cq, NULL, NULL);
    grpc_completion_queue_destroy(cq);
    return rc;
}

int momento__channels_open(momento__channels *ch, const momento_config *cfg,
                           const momento_credentials *creds)
{
    ch->n_data = cfg->num_channels;
    ch->data = momento__calloc(ch->n_data, sizeof(*ch->data));
    if (!ch->data)
        return MOMENTO_ERR_NO_MEMORY;
    for (uint32_t i = 0; i < ch->n_data; i++)
        if (setup(&ch->data[i], cfg, creds, creds->cache_endpoint, false) < 0)
            return MOMENTO_ERR_NO_MEMORY;
    if (setup(&ch->control, cfg, creds, creds->control_endpoint, true) < 0)
        return MOMENTO_ERR_NO_MEMORY;
    if (cfg->eager_connect_ms) {
        for (uint32_t i = 0; i < ch->n_data; i++)
            if (connect_now(ch->data[i].channel, cfg->eager_connect_ms) < 0)
                return MOMENTO_ERR_SERVER_UNAVAILABLE;
    }
    return MOMENTO_OK;
}

momento__channel *momento__channels_pick(momento__channels *ch, momento__plane plane)
{
    if (plane == MOMENTO__PLANE_CONTROL)
        return &ch->control;
    return &ch->data[atomic_fetch_add_explicit(&ch->next, 1, memory_order_relaxed) % ch->n_data];
}

void momento__channels_close(momento__channels *ch)
{
    for (uint32_t i = 0; ch->data && i < ch->n_data; i++)
        if (ch->data[i].channel)
            grpc_channel_destroy(ch->data[i].channel);
    free(ch->data);
    ch->data = NULL;
    if (ch->control.channel)
        grpc_channel_destroy(ch->control.channel);
    ch->control.channel = NULL;
}
