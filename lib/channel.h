/* gRPC channels (channel.c): one or more to the cache endpoint, one to the
 * control endpoint, each with its plane's RPCs registered once. */
#ifndef MOMENTO_CHANNEL_H
#define MOMENTO_CHANNEL_H

#include "methods.h"

#include <grpc/grpc.h>
#include <stdatomic.h>
#include <stdint.h>

typedef struct momento__channel {
    grpc_channel *channel;
    void *registered[MOMENTO__RPC_COUNT]; /* NULL for RPCs of the other plane */
} momento__channel;

typedef struct momento__channels {
    momento__channel *data; /* n_data of them, used in turn */
    uint32_t n_data;
    atomic_uint next;       /* the data channel the next call takes */
    momento__channel control;
} momento__channels;

struct momento_config;
struct momento_credentials;

/* Opens every channel (and connects them now when the config says so).
 * Returns 0, NO_MEMORY or SERVER_UNAVAILABLE; on failure the caller still
 * calls momento__channels_close(). */
int momento__channels_open(momento__channels *ch, const struct momento_config *cfg,
                           const struct momento_credentials *creds);
void momento__channels_close(momento__channels *ch);
/* The channel for the next call of `plane`: data calls rotate over the data
 * channels. Any thread. */
momento__channel *momento__channels_pick(momento__channels *ch, momento__plane plane);

#endif
