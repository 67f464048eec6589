/* A client's configuration (config.c): what the public setters fill in. */
#ifndef MOMENTO_CONFIG_H
#define MOMENTO_CONFIG_H

#include "momento/metrics.h"
#include "momento/momento.h"

/* The longest "host:port" a config keeps. */
#define MOMENTO__HOST_PORT_MAX 300

#include <pthread.h>
#include <stdbool.h>

struct momento_config {
    uint32_t timeout_ms;
    uint64_t default_ttl_ms;
    uint32_t num_channels;
    uint32_t stream_channels; /* topic subscriptions' own connections */
    uint32_t keepalive_ms;
    uint32_t keepalive_timeout_ms;
    uint32_t eager_connect_ms;
    char *tls_roots_pem;               /* NULL = system roots */
    int tls_verify;                    /* 0: no certificate or name check (tests) */
    /* Where every channel connects instead of its endpoint's host:port
     * ("" = the endpoints themselves); TLS still names and verifies the
     * endpoint's host. Copied by value with the struct. */
    char connect_address[MOMENTO__HOST_PORT_MAX + 1];
    momento_transport transport;        /* what carries get, set, delete */
    char protosocket_endpoint[MOMENTO__HOST_PORT_MAX + 1]; /* "" = the default */
    uint32_t protosocket_connections; /* 0 = the default (half the CPUs, 1 .. 16) */
    uint32_t retry_max_attempts;       /* 1 = no retries */
    uint32_t retry_attempt_timeout_ms; /* 0 = each attempt may use the whole deadline */
    uint32_t retry_delay_ms;           /* between attempts, +/-10% */
    /* Exponential backoff (retry.c) when retry_backoff_max_us is not 0:
     * the base delay doubles from the initial one up to the cap. */
    uint32_t retry_backoff_initial_us;
    uint32_t retry_backoff_max_us;
    int retry_deadline_exceeded;       /* also retry a DEADLINE_EXCEEDED answer (opt-in) */
    uint32_t max_message_bytes;        /* gRPC's send and receive limit per message */
    /* Headers sent with every request of the client (momento_config_add_
     * header), copied by value with the struct. */
    struct {
        char name[65];
        char value[1025];
    } headers[MOMENTO_MAX_CLIENT_HEADERS];
    size_t n_headers;
    int read_concern;                  /* momento_read_concern, never DEFAULT */
    /* Channels older than this, or idle this long, are replaced before
     * their next call (channel.c); 0 = never. */
    uint32_t max_idle_ms;
    uint32_t max_client_age_ms;
    uint32_t max_concurrent;           /* requests on the wire at once; 0 = no cap */
    bool dispatch;                     /* callbacks queued for momento_client_dispatch() */
    bool io_thread_callbacks;          /* protosocket's callbacks on its I/O thread */
    bool dispatch_io;                  /* dispatch mode: protosocket worked by the dispatcher */
    /* The near cache (layers/near.c); near_max_bytes 0 = off. */
    size_t near_max_bytes;
    uint32_t near_staleness_ms;
    /* Invalidation across clients (layers/near_sync.c): the topic's cache
     * and name, "" = off; copied by value with the struct. */
    char near_sync_cache[256];
    char near_sync_topic[256];
    /* What the client calls once it is made, before momento_client_new()
     * returns (NULL: nothing): the parts above the engine that start with
     * the client hang themselves here from their setter (near_sync.c), as
     * the engine may not call up to them. */
    void (*on_client_new)(momento_client *c);
    /* Adaptive batching (batcher.c); batch_min_in_flight 0 = off. */
    uint32_t batch_min_in_flight;      /* N: queue gets and sets from this many RPCs */
    uint32_t batch_linger_us;          /* L: send a queue this long after it started, at most */
    uint32_t batch_max_keys;           /* M */
    uint32_t batch_max_bytes;          /* B: keys + values of one batch */
    uint32_t batch_max_wait_us;        /* W: a queue leaves this long after it started, at most */
    /* The metrics hook (metrics.c); NULL = none. */
    momento_metrics_fn metrics_fn;
    void *metrics_userdata;
    /* Taken around each hook call when they may come from two threads at
     * once (dispatch mode: the completion thread's and the dispatching
     * thread's; I/O-thread callbacks: the completion thread's and the
     * protosocket I/O thread's, momento/metrics.h); NULL, never taken,
     * otherwise. Only a
     * client's own copy has one, its client's (client.c): an application's
     * config keeps the NULL of momento__config_defaults(). */
    pthread_mutex_t *metrics_lock;
    /* Value compression (compress.c). */
    int compression;                   /* momento_compression of writes; NONE = off */
    int compression_level;             /* as momento_config_set_compression() takes it */
    int decompress;                    /* -1: on iff compressing (the SDK's default); 0; 1 */
    size_t decompress_max_bytes;       /* the largest decompressed value */
};

void momento__config_defaults(momento_config *cfg);
/* Deep copy into *dst (overwritten). Returns 0 or NO_MEMORY. */
int momento__config_copy(momento_config *dst, const momento_config *src);
void momento__config_clear(momento_config *cfg);

/* The TTL a write sends: `ttl_ms`, or the default TTL when it is 0. */
static inline uint64_t momento__effective_ttl(const momento_config *cfg, uint64_t ttl_ms)
{
    return ttl_ms ? ttl_ms : cfg->default_ttl_ms;
}

#endif
