/* gRPC channels: one or more to the data endpoint, one to the control
 * endpoint, each with every method of its plane registered once so that
 * calls skip per-call path parsing (registered calls). */
#include "internal.h"

#include <grpc/grpc_security.h>
#include <grpc/support/time.h>
#include <stdlib.h>
#include <string.h>


static grpc_arg int_arg(const char *key, int value)
{
    grpc_arg a;
    a.type = GRPC_ARG_INTEGER;
    a.key = (char *)key;
    a.value.integer = value;
    return a;
}

static grpc_channel *open_channel(const momento_client *c, const char *target)
{
    grpc_arg args[11];
    size_t n = 0;
    /* The library applies its own retry rule; gRPC's hidden retries would
     * repeat non-idempotent RPCs and cost ~9,000 instructions per call. */
    args[n++] = int_arg(GRPC_ARG_ENABLE_RETRIES, 0);
    /* Without a local subchannel pool, channels to one target share a single
     * connection, which would defeat num_channels. */
    args[n++] = int_arg(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    /* gRPC backs off up to 120 s between reconnection attempts; a cache
     * client should find a restarted server within seconds. (Not
     * GRPC_ARG_MIN_RECONNECT_BACKOFF_MS: gRPC also uses that as the minimum
     * connect timeout, and 250 ms would fail any slower handshake.) */
    args[n++] = int_arg(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 250);
    args[n++] = int_arg(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 2000);
    args[n++] = int_arg(GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH,
                                                MOMENTO__MAX_MESSAGE_BYTES);
    args[n++] = int_arg(GRPC_ARG_MAX_SEND_MESSAGE_LENGTH,
                                                MOMENTO__MAX_MESSAGE_BYTES);
    if (c->cfg.keepalive_ms) {
        args[n++] = int_arg(GRPC_ARG_KEEPALIVE_TIME_MS,
                                                    (int)c->cfg.keepalive_ms);
        args[n++] = int_arg(GRPC_ARG_KEEPALIVE_TIMEOUT_MS,
                                                    (int)c->cfg.keepalive_timeout_ms);
        args[n++] = int_arg(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
        args[n++] = int_arg(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
    }
    grpc_channel_args ch_args = {n, args};

    grpc_channel_credentials *creds = c->creds.tls
                                          ? grpc_ssl_credentials_create(c->cfg.tls_roots_pem, NULL, NULL, NULL)
                                          : grpc_insecure_credentials_create();
    if (!creds)
        return NULL;
    grpc_channel *ch = grpc_channel_create(target, creds, &ch_args);
    grpc_channel_credentials_release(creds);
    return ch;
}

static int setup(const momento_client *c, momento__channel *mc, const char *target, bool control)
{
    memset(mc, 0, sizeof(*mc));
    mc->channel = open_channel(c, target);
    if (!mc->channel)
        return MOMENTO_ERR_NO_MEMORY;
    for (int m = 0; m < MOMENTO__M_COUNT; m++)
        if (momento__methods[m].control == control)
            mc->registered[m] =
                grpc_channel_register_call(mc->channel, momento__methods[m].path, NULL, NULL);
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
    grpc_completion_queue_shutdown(cq);
    while (grpc_completion_queue_next(cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL).type !=
           GRPC_QUEUE_SHUTDOWN)
        ;
    grpc_completion_queue_destroy(cq);
    return rc;
}

int momento__channels_open(momento_client *c)
{
    c->n_data = c->cfg.num_channels;
    c->data = calloc(c->n_data, sizeof(*c->data));
    if (!c->data)
        return MOMENTO_ERR_NO_MEMORY;
    for (uint32_t i = 0; i < c->n_data; i++)
        if (setup(c, &c->data[i], c->creds.cache_endpoint, false) < 0)
            return MOMENTO_ERR_NO_MEMORY;
    if (setup(c, &c->control, c->creds.control_endpoint, true) < 0)
        return MOMENTO_ERR_NO_MEMORY;
    if (c->cfg.eager_connect_ms) {
        for (uint32_t i = 0; i < c->n_data; i++)
            if (connect_now(c->data[i].channel, c->cfg.eager_connect_ms) < 0)
                return MOMENTO_ERR_SERVER_UNAVAILABLE;
    }
    return MOMENTO_OK;
}

void momento__channels_close(momento_client *c)
{
    for (uint32_t i = 0; c->data && i < c->n_data; i++)
        if (c->data[i].channel)
            grpc_channel_destroy(c->data[i].channel);
    free(c->data);
    c->data = NULL;
    if (c->control.channel)
        grpc_channel_destroy(c->control.channel);
    c->control.channel = NULL;
}
