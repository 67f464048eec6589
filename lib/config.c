/* Client configuration: defaults and validated setters. */
#include "config.h"

#include "alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void momento__config_defaults(momento_config *cfg)
{
    /* Momento's "laptop" profile: generous timeout, keepalive as the official
     * SDKs set it (5 s ping, 1 s to answer). */
    cfg->timeout_ms = 5000;
    cfg->default_ttl_ms = 60000;
    cfg->num_channels = 1;
    cfg->keepalive_ms = 5000;
    cfg->keepalive_timeout_ms = 1000;
    cfg->eager_connect_ms = 0;
    cfg->tls_roots_pem = NULL;
    cfg->retry_max_attempts = 3;
    cfg->retry_attempt_timeout_ms = 0;
    cfg->retry_delay_ms = 0;
    cfg->batch_min_in_flight = 0;
    cfg->batch_linger_us = 0;
    cfg->batch_max_keys = MOMENTO_BATCH_DEFAULT_MAX_KEYS;
    cfg->batch_max_bytes = MOMENTO_BATCH_DEFAULT_MAX_BYTES;
}

int momento__config_copy(momento_config *dst, const momento_config *src)
{
    *dst = *src;
    if (src->tls_roots_pem) {
        size_t n = strlen(src->tls_roots_pem) + 1;
        dst->tls_roots_pem = momento__malloc(n);
        if (!dst->tls_roots_pem)
            return MOMENTO_ERR_NO_MEMORY;
        memcpy(dst->tls_roots_pem, src->tls_roots_pem, n);
    }
    return MOMENTO_OK;
}

void momento__config_clear(momento_config *cfg)
{
    free(cfg->tls_roots_pem);
    cfg->tls_roots_pem = NULL;
}

int momento_config_new(momento_config **ret)
{
    if (!ret)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    momento_config *cfg = momento__malloc(sizeof(*cfg));
    if (!cfg)
        return MOMENTO_ERR_NO_MEMORY;
    momento__config_defaults(cfg);
    *ret = cfg;
    return MOMENTO_OK;
}

void momento_config_free(momento_config *cfg)
{
    if (!cfg)
        return;
    momento__config_clear(cfg);
    free(cfg);
}

/* Roots files are small; anything past this is not a certificate bundle. */
#define MAX_ROOTS_BYTES (16u * 1024u * 1024u)

int momento_config_set_tls_roots_file(momento_config *cfg, const char *path)
{
    if (!cfg)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    if (!path) {
        momento__config_clear(cfg);
        return MOMENTO_OK;
    }
    FILE *f = fopen(path, "rb");
    if (!f)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    char *buf = momento__malloc(MAX_ROOTS_BYTES + 1);
    if (!buf) {
        fclose(f);
        return MOMENTO_ERR_NO_MEMORY;
    }
    size_t n = fread(buf, 1, MAX_ROOTS_BYTES + 1, f);
    fclose(f);
    buf[n > MAX_ROOTS_BYTES ? MAX_ROOTS_BYTES : n] = '\0';
    if (n > MAX_ROOTS_BYTES || !strstr(buf, "-----BEGIN CERTIFICATE-----")) {
        free(buf);
        return MOMENTO_ERR_INVALID_ARGUMENT;
    }
    char *shrunk = momento__realloc(buf, n + 1);
    momento__config_clear(cfg);
    cfg->tls_roots_pem = shrunk ? shrunk : buf;
    return MOMENTO_OK;
}

int momento_config_set_timeout_ms(momento_config *cfg, uint32_t ms)
{
    if (!cfg || ms == 0 || ms > 86400000u)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    cfg->timeout_ms = ms;
    return MOMENTO_OK;
}

int momento_config_set_default_ttl_ms(momento_config *cfg, uint64_t ms)
{
    if (!cfg || ms == 0 || ms > MOMENTO_MAX_TTL_MS)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    cfg->default_ttl_ms = ms;
    return MOMENTO_OK;
}

int momento_config_set_num_channels(momento_config *cfg, uint32_t n)
{
    if (!cfg || n == 0 || n > 64)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    cfg->num_channels = n;
    return MOMENTO_OK;
}

int momento_config_set_keepalive(momento_config *cfg, uint32_t interval_ms, uint32_t timeout_ms)
{
    if (!cfg || (interval_ms != 0 && timeout_ms == 0) || interval_ms > 86400000u ||
        timeout_ms > 86400000u)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    cfg->keepalive_ms = interval_ms;
    cfg->keepalive_timeout_ms = timeout_ms;
    return MOMENTO_OK;
}

int momento_config_set_eager_connect(momento_config *cfg, uint32_t timeout_ms)
{
    if (!cfg || timeout_ms > 86400000u)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    cfg->eager_connect_ms = timeout_ms;
    return MOMENTO_OK;
}

int momento_config_set_retries(momento_config *cfg, uint32_t max_attempts)
{
    if (!cfg || max_attempts < 1 || max_attempts > 10)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    cfg->retry_max_attempts = max_attempts;
    cfg->retry_attempt_timeout_ms = 0;
    cfg->retry_delay_ms = 0;
    return MOMENTO_OK;
}

int momento_config_set_batching(momento_config *cfg, uint32_t min_in_flight, uint32_t linger_us,
                                uint32_t max_keys, uint32_t max_bytes)
{
    if (!cfg || min_in_flight > 100000u || linger_us > MOMENTO_MAX_BATCH_LINGER_US ||
        (min_in_flight && (max_keys < 2 || max_keys > 10000u || max_bytes < 1024u ||
                           max_bytes > MOMENTO_MAX_BATCH_BYTES)))
        return MOMENTO_ERR_INVALID_ARGUMENT;
    cfg->batch_min_in_flight = min_in_flight;
    cfg->batch_linger_us = linger_us;
    cfg->batch_max_keys = max_keys;
    cfg->batch_max_bytes = max_bytes;
    return MOMENTO_OK;
}

int momento_config_set_retry_fixed_timeout(momento_config *cfg, uint32_t max_attempts,
                                           uint32_t attempt_timeout_ms, uint32_t delay_ms)
{
    if (!cfg || max_attempts < 1 || max_attempts > 10 || attempt_timeout_ms == 0 ||
        attempt_timeout_ms > 86400000u || delay_ms > 60000u)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    cfg->retry_max_attempts = max_attempts;
    cfg->retry_attempt_timeout_ms = attempt_timeout_ms;
    cfg->retry_delay_ms = delay_ms;
    return MOMENTO_OK;
}

uint32_t momento_config_timeout_ms(const momento_config *cfg)
{
    return cfg ? cfg->timeout_ms : 0;
}

uint64_t momento_config_default_ttl_ms(const momento_config *cfg)
{
    return cfg ? cfg->default_ttl_ms : 0;
}

uint32_t momento_config_num_channels(const momento_config *cfg)
{
    return cfg ? cfg->num_channels : 0;
}
