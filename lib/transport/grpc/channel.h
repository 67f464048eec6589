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

struct momento__channel_slot;

/* One gRPC channel: a slot's current one, or one it replaced, which lives
 * on while calls made on it do. Made and destroyed by channel.c alone
 * (under momento__channels.lock, or at open and close); its fields are
 * written once before it is published, but `refs` and `next_retired`. */
typedef struct momento__channel {
    grpc_channel *channel;
    void *registered[MOMENTO__RPC_COUNT]; /* NULL for RPCs of the other plane */
    int64_t born_ns;                      /* monotonic */
    struct momento__channel_slot *slot;   /* the slot it was made for */
    /* The slot's reference (until replaced) + one per gRPC call made on it;
     * any thread. */
    atomic_int refs;
    struct momento__channel *next_retired; /* momento__channels.lock */
} momento__channel;

/* Where calls find a channel: the current one, swapped when it is renewed.
 * Part of momento__channels, which owns it. */
typedef struct momento__channel_slot {
    /* NULL: an unused token slot. Read by any thread; swapped under
     * momento__channels.lock. */
    _Atomic(momento__channel *) current;
    _Atomic int64_t last_used_ns;
    /* Threads between their load of `current` and their reference on it
     * (momento__channels_take): while any is, none of the slot's replaced
     * channels is destroyed, since one may be the channel it loaded. */
    atomic_int taking;
    /* A stream slot's live streams (momento__channels_take_stream); any
     * thread. */
    atomic_uint streams;
    /* A call on it failed UNAVAILABLE (momento__channel_failed): the next
     * take looks whether the channel is stuck in TRANSIENT_FAILURE. */
    atomic_bool suspect;
    _Atomic int64_t stuck_renewed_ns; /* the last such replacement */
    const char *target;
    int ep, also;                        /* the endpoints whose RPCs it carries */
} momento__channel_slot;

struct momento_config;
struct momento_credentials;

typedef struct momento__channels {
    momento__channel_slot *data; /* n_data of them, used in turn */
    uint32_t n_data;
    /* Topic subscriptions' own, n_stream of them, each with at most
     * MOMENTO_STREAMS_PER_CONNECTION streams: the least loaded takes the
     * next. Never used by a request. */
    momento__channel_slot *stream;
    uint32_t n_stream;
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
/* Gives back a reference from momento__channels_take(); NULL is ignored.
 * Any thread. */
void momento__channel_put(momento__channel *mc);
/* The channel for a new live stream: the stream slot with the fewest, its
 * count raised, in *ret_slot; NULL when every one holds
 * MOMENTO_STREAMS_PER_CONNECTION. Give it back with momento__channel_put()
 * and the slot's place with momento__channels_stream_done(). Any thread. */
momento__channel *momento__channels_take_stream(momento__channels *ch,
                                                momento__channel_slot **ret_slot);
void momento__channels_stream_done(momento__channel_slot *slot);
/* A call made on `mc` ended UNAVAILABLE: its slot's next take replaces the
 * channel if it is stuck in TRANSIENT_FAILURE (at most once a second), as
 * the JS SDK does (#1540), rather than leave calls failing fast through
 * gRPC's reconnect backoff. Any thread; one store. */
void momento__channel_failed(momento__channel *mc);

/* Test hook (tests/lib/test_channel.c): when set, every
 * momento__channels_take() calls it between its load of the slot's current
 * channel and its reference on it, the window a replaced channel must
 * survive. NULL (the default) in every program but that test; set it
 * before any channel is used. */
extern void (*momento__channel_take_pause)(void);

#endif
