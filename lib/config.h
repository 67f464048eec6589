/* A client's configuration (config.c): what the public setters fill in. */
#ifndef MOMENTO_CONFIG_H
#define MOMENTO_CONFIG_H

#include "momento/momento.h"

struct momento_config {
    uint32_t timeout_ms;
    uint64_t default_ttl_ms;
    uint32_t num_channels;
    uint32_t keepalive_ms;
    uint32_t keepalive_timeout_ms;
    uint32_t eager_connect_ms;
    char *tls_roots_pem;               /* NULL = system roots */
    uint32_t retry_max_attempts;       /* 1 = no retries */
    uint32_t retry_attempt_timeout_ms; /* 0 = each attempt may use the whole deadline */
    uint32_t retry_delay_ms;           /* between attempts, +/-10% */
    /* Adaptive batching (batcher.c); batch_min_in_flight 0 = off. */
    uint32_t batch_min_in_flight;      /* N: queue gets and sets from this many RPCs */
    uint32_t batch_linger_us;          /* L: send a queue this long after it started, at most */
    uint32_t batch_max_keys;           /* M */
    uint32_t batch_max_bytes;          /* B: keys + values of one batch */
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
