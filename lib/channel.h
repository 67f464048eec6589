/* gRPC channels (channel.c): one or more to the cache endpoint, one to the
 * control endpoint, each with its plane's RPCs registered once, and each
 * replaced by a new one after too long idle or too long a life (the SDKs'
 * max idle / max client age). */
#ifndef MOMENTO_CHANNEL_H
#define MOMENTO_CHANNEL_H

#include "methods.h"

#include <grpc/grpc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

/* One gRPC channel: a slot's current one, or one it replaced, which lives
 * on while calls made on it do. */
typedef struct momento__channel {
    grpc_channel *channel;
    void *registered[MOMENTO__RPC_COUNT]; /* NULL for RPCs of the other plane */
    int64_t born_ns;                      /* monotonic */
    /* The slot's reference (until replaced) + one per gRPC call made on it. */
    atomic_int refs;
    int64_t retired_ns;                   /* when replaced */
    struct momento__channel *next_retired;
} momento__channel;

/* Where calls find a channel: the current one, swapped when it is renewed. */
typedef struct momento__channel_slot {
    _Atomic(momento__channel *) current; /* NULL: an unused token slot */
    _Atomic int64_t last_used_ns;
    const char *target;
    int ep, also;                        /* the endpoints whose RPCs it carries */
} momento__channel_slot;

struct momento_config;
struct momento_credentials;

typedef struct momento__channels {
    momento__channel_slot *data; /* n_data of them, used in turn */
    uint32_t n_data;
    atomic_uint next;       /* the data slot the next call takes */
    momento__channel_slot control;
    /* The token service's, when not on the control endpoint's address. */
    momento__channel_slot token;
    /* Renewing: the client's config and credentials (they outlive the
     * channels), and the replaced channels not yet destroyed. */
    const struct momento_config *cfg;
    const struct momento_credentials *creds;
    int64_t max_idle_ns, max_age_ns; /* 0 = never */
    pthread_mutex_t lock;            /* renewals and `retired` */
    momento__channel *retired;
} momento__channels;

/* Opens every channel (and connects them now when the config says so).
 * `cfg` and `creds` must outlive the channels. Returns 0, NO_MEMORY or
 * CONNECTION (an eager connection failed); on failure the caller still calls
 * momento__channels_close(). */
int momento__channels_open(momento__channels *ch, const struct momento_config *cfg,
                           const struct momento_credentials *creds);
/* Destroys every channel; no call may be in flight. */
void momento__channels_close(momento__channels *ch);
/* The channel for the next call of `plane` (data calls rotate over the data
 * slots), renewed first when its slot was idle or its channel is too old.
 * The caller holds a reference: make the call at once and give it back with
 * momento__channel_put() once that gRPC call is unreferenced. Any thread. */
momento__channel *momento__channels_take(momento__channels *ch, momento__plane plane);
/* Gives back a reference from momento__channels_take(); NULL is ignored. */
void momento__channel_put(momento__channel *mc);

#endif
