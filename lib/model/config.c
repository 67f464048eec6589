/* Client configuration: defaults and validated setters. */
#include "model/config.h"

#include "base/alloc.h"
#include "model/credentials.h"
#include "model/validate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void momento__config_defaults(momento_config *cfg)
{
    /* Every field starts at zero, so one added without a line here is off,
     * not garbage. */
    memset(cfg, 0, sizeof(*cfg));
    /* Momento's "laptop" profile: generous timeout, keepalive as the official
     * SDKs set it (5 s ping, 1 s to answer). */
    cfg->timeout_ms = 5000;
    cfg->default_ttl_ms = 60000;
    cfg->num_channels = 1;
    cfg->stream_channels = 4; /* the JS SDK's NUM_DEFAULT_STREAM_CLIENTS */
    cfg->keepalive_ms = 5000;
    cfg->keepalive_timeout_ms = 1000;
    cfg->eager_connect_ms = 0;
    cfg->tls_roots_pem = NULL;
    cfg->tls_verify = 1;
    cfg->retry_max_attempts = 3;
    cfg->max_message_bytes = MOMENTO__MAX_MESSAGE_BYTES;
    cfg->retry_attempt_timeout_ms = 0;
    cfg->retry_delay_ms = 0;
    cfg->retry_backoff_initial_us = 0;
    cfg->retry_backoff_max_us = 0;
    cfg->read_concern = MOMENTO_READ_BALANCED;
    cfg->max_idle_ms = MOMENTO_DEFAULT_MAX_IDLE_MS;
    cfg->max_client_age_ms = 0;
    cfg->max_concurrent = 0;
    cfg->dispatch = false;
    cfg->io_thread_callbacks = false;
    cfg->dispatch_io = false;
    cfg->batch_min_in_flight = 0;
    cfg->batch_linger_us = 0;
    cfg->batch_max_keys = MOMENTO_BATCH_DEFAULT_MAX_KEYS;
    cfg->batch_max_bytes = MOMENTO_BATCH_DEFAULT_MAX_BYTES;
    cfg->batch_max_wait_us = MOMENTO_BATCH_DEFAULT_MAX_WAIT_US;
    cfg->metrics_fn = NULL;
    cfg->metrics_userdata = NULL;
    cfg->compression = MOMENTO_COMPRESS_NONE;
    cfg->compression_level = MOMENTO_COMPRESS_LEVEL_BALANCED;
    cfg->decompress = -1;
    cfg->decompress_max_bytes = MOMENTO_DECOMPRESS_DEFAULT_MAX_BYTES;
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

int momento_config_set_tls_verify(momento_config *cfg, int verify)
{
    if (!cfg)
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT, "cfg is NULL");
    cfg->tls_verify = verify != 0;
    return MOMENTO_OK;
}

/* The two host:port settings (the connect address, the protosocket
 * endpoint) are checked and stored alike, into a buffer of
 * MOMENTO__HOST_PORT_MAX + 1 bytes; `what` names the setting in a refusal.
 * NULL clears it. */
static int set_host_port(momento_config *cfg, char *dst, const char *what, const char *host_port)
{
    if (!cfg)
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT, "cfg is NULL");
    if (!host_port) {
        dst[0] = '\0';
        return MOMENTO_OK;
    }
    const char *why = momento__check_host_port(host_port);
    if (why)
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT, "%s: %s", what, why);
    if (strlen(host_port) > MOMENTO__HOST_PORT_MAX)
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT, "%s is longer than %d bytes", what,
                               MOMENTO__HOST_PORT_MAX);
    strcpy(dst, host_port);
    return MOMENTO_OK;
}

int momento_config_set_connect_address(momento_config *cfg, const char *host_port)
{
    return set_host_port(cfg, cfg ? cfg->connect_address : NULL, "the connect address",
                         host_port);
}

int momento_config_set_transport(momento_config *cfg, momento_transport t)
{
    if (!cfg)
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT, "cfg is NULL");
    if (t != MOMENTO_TRANSPORT_GRPC && t != MOMENTO_TRANSPORT_PROTOSOCKET)
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT, "transport %d is not a momento_transport",
                               (int)t);
    cfg->transport = t;
    return MOMENTO_OK;
}

int momento_config_set_protosocket_endpoint(momento_config *cfg, const char *host_port)
{
    return set_host_port(cfg, cfg ? cfg->protosocket_endpoint : NULL,
                         "the protosocket endpoint", host_port);
}

int momento_config_set_protosocket_connections(momento_config *cfg, uint32_t n)
{
    if (!cfg)
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT, "cfg is NULL");
    if (n < 1 || n > 64)
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT,
                               "protosocket connections must be 1 .. 64, not %u", n);
    cfg->protosocket_connections = n;
    return MOMENTO_OK;
}

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

int momento_config_set_stream_channels(momento_config *cfg, uint32_t n)
{
    if (!cfg || n == 0 || n > 64)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    cfg->stream_channels = n;
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

/* One retry strategy at a time: setting one clears the others' fields. */
static int set_strategy(momento_config *cfg, uint32_t max_attempts, uint32_t attempt_timeout_ms,
                        uint32_t delay_ms, uint32_t backoff_initial_us, uint32_t backoff_max_us)
{
    cfg->retry_max_attempts = max_attempts;
    cfg->retry_attempt_timeout_ms = attempt_timeout_ms;
    cfg->retry_delay_ms = delay_ms;
    cfg->retry_backoff_initial_us = backoff_initial_us;
    cfg->retry_backoff_max_us = backoff_max_us;
    return MOMENTO_OK;
}

int momento_config_add_header(momento_config *cfg, const char *name, const char *value)
{
    if (!cfg)
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT, "cfg is NULL");
    const char *why = momento__header_problem(name, value);
    if (why)
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT, "%s", why);
    if (cfg->n_headers == MOMENTO_MAX_CLIENT_HEADERS)
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT,
                               "already MOMENTO_MAX_CLIENT_HEADERS (%d) headers",
                               MOMENTO_MAX_CLIENT_HEADERS);
    /* The checks bound both: 64 and 1024 bytes. */
    snprintf(cfg->headers[cfg->n_headers].name, sizeof(cfg->headers[0].name), "%s", name);
    snprintf(cfg->headers[cfg->n_headers].value, sizeof(cfg->headers[0].value), "%s", value);
    cfg->n_headers++;
    return MOMENTO_OK;
}

int momento_config_set_retry_deadline_exceeded(momento_config *cfg, int enabled)
{
    if (!cfg)
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT, "cfg is NULL");
    cfg->retry_deadline_exceeded = enabled != 0;
    return MOMENTO_OK;
}

int momento_config_set_max_message_bytes(momento_config *cfg, uint32_t bytes)
{
    if (!cfg)
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT, "cfg is NULL");
    if (bytes < MOMENTO_MIN_MESSAGE_BYTES || bytes > MOMENTO_MAX_MESSAGE_BYTES)
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT,
                               "max message bytes %u is outside %u .. %u", (unsigned)bytes,
                               (unsigned)MOMENTO_MIN_MESSAGE_BYTES,
                               (unsigned)MOMENTO_MAX_MESSAGE_BYTES);
    cfg->max_message_bytes = bytes;
    return MOMENTO_OK;
}

int momento_config_set_retries(momento_config *cfg, uint32_t max_attempts)
{
    if (!cfg || max_attempts < 1 || max_attempts > 10)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    return set_strategy(cfg, max_attempts, 0, 0, 0, 0);
}

int momento_config_set_retry_none(momento_config *cfg)
{
    return momento_config_set_retries(cfg, 1);
}

int momento_config_set_retry_exponential(momento_config *cfg, uint32_t max_attempts,
                                         uint32_t initial_delay_us, uint32_t max_backoff_us)
{
    if (!cfg || max_attempts > 100 || initial_delay_us == 0 || max_backoff_us < initial_delay_us ||
        max_backoff_us > 60000000u)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    /* 0: as the SDK, no count limit; the deadline ends the retries. */
    return set_strategy(cfg, max_attempts ? max_attempts : INT32_MAX, 0, 0, initial_delay_us,
                        max_backoff_us);
}

int momento_config_set_read_concern(momento_config *cfg, momento_read_concern concern)
{
    if (!cfg || (concern != MOMENTO_READ_BALANCED && concern != MOMENTO_READ_CONSISTENT))
        return MOMENTO_ERR_INVALID_ARGUMENT;
    cfg->read_concern = concern;
    return MOMENTO_OK;
}

int momento_config_set_connection_lifetime(momento_config *cfg, uint32_t max_idle_ms,
                                           uint32_t max_client_age_ms)
{
    if (!cfg || max_idle_ms > 86400000u || max_client_age_ms > 86400000u ||
        (max_client_age_ms && max_client_age_ms < 1000))
        return MOMENTO_ERR_INVALID_ARGUMENT;
    cfg->max_idle_ms = max_idle_ms;
    cfg->max_client_age_ms = max_client_age_ms;
    return MOMENTO_OK;
}

int momento_config_set_max_concurrent_requests(momento_config *cfg, uint32_t max)
{
    if (!cfg || max > 1000000u)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    cfg->max_concurrent = max;
    return MOMENTO_OK;
}

int momento_config_set_dispatch(momento_config *cfg, int enabled)
{
    if (!cfg || (enabled != 0 && enabled != 1))
        return MOMENTO_ERR_INVALID_ARGUMENT;
    cfg->dispatch = enabled;
    return MOMENTO_OK;
}

int momento_config_set_near_cache(momento_config *cfg, size_t max_bytes,
                                  uint32_t max_staleness_ms)
{
    if (!cfg)
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT, "the configuration is NULL");
    if (max_bytes != 0 && (max_bytes < 4096 || max_bytes > ((size_t)1 << 40)))
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT,
                               "the near cache's max_bytes must be 0 (off) or 4096 to 1 TiB");
    if (max_bytes != 0 && (max_staleness_ms < 1 || max_staleness_ms > 3600000))
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT,
                               "the near cache's max_staleness_ms must be 1 to 3,600,000");
    cfg->near_max_bytes = max_bytes;
    cfg->near_staleness_ms = max_bytes ? max_staleness_ms : 0;
    return MOMENTO_OK;
}

int momento_config_set_io_thread_callbacks(momento_config *cfg, int enabled)
{
    if (!cfg || (enabled != 0 && enabled != 1))
        return MOMENTO_ERR_INVALID_ARGUMENT;
    cfg->io_thread_callbacks = enabled;
    return MOMENTO_OK;
}

int momento_config_set_dispatch_io(momento_config *cfg, int enabled)
{
    if (!cfg || (enabled != 0 && enabled != 1))
        return MOMENTO_ERR_INVALID_ARGUMENT;
    cfg->dispatch_io = enabled;
    return MOMENTO_OK;
}

int momento_config_new_preset(momento_config **ret, momento_preset preset)
{
    if (!ret)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    *ret = NULL;
    if (preset < MOMENTO_PRESET_LAPTOP || preset > MOMENTO_PRESET_LAMBDA)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    int rc = momento_config_new(ret);
    if (rc != MOMENTO_OK)
        return rc;
    momento_config *cfg = *ret;
    /* The JS SDK's v1 presets (docs/api.md "Presets"): the defaults are the
     * laptop's; in-region ones only shorten the deadline. */
    switch (preset) {
    case MOMENTO_PRESET_LAPTOP:
        break;
    case MOMENTO_PRESET_IN_REGION:
        cfg->timeout_ms = 1100;
        break;
    case MOMENTO_PRESET_IN_REGION_LOW_LATENCY:
        cfg->timeout_ms = 500;
        break;
    case MOMENTO_PRESET_LAMBDA:
        /* A frozen function cannot answer keepalive pings, so the SDK sends
         * none; a connection left from before the freeze is replaced after
         * max idle instead of timing out a request. */
        cfg->timeout_ms = 1100;
        cfg->keepalive_ms = 0;
        cfg->keepalive_timeout_ms = 0;
        break;
    }
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

int momento_config_set_batching_max_wait(momento_config *cfg, uint32_t max_wait_us)
{
    if (!cfg || max_wait_us > MOMENTO_MAX_BATCH_LINGER_US)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    cfg->batch_max_wait_us = max_wait_us;
    return MOMENTO_OK;
}

int momento_config_set_retry_fixed_timeout(momento_config *cfg, uint32_t max_attempts,
                                           uint32_t attempt_timeout_ms, uint32_t delay_ms)
{
    if (!cfg || max_attempts < 1 || max_attempts > 10 || attempt_timeout_ms == 0 ||
        attempt_timeout_ms > 86400000u || delay_ms > 60000u)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    return set_strategy(cfg, max_attempts, attempt_timeout_ms, delay_ms, 0, 0);
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

uint32_t momento_config_stream_channels(const momento_config *cfg)
{
    return cfg ? cfg->stream_channels : 0;
}

uint32_t momento_config_keepalive_ms(const momento_config *cfg)
{
    return cfg ? cfg->keepalive_ms : 0;
}

uint32_t momento_config_max_idle_ms(const momento_config *cfg)
{
    return cfg ? cfg->max_idle_ms : 0;
}

momento_read_concern momento_config_read_concern(const momento_config *cfg)
{
    return cfg ? (momento_read_concern)cfg->read_concern : MOMENTO_READ_CONCERN_DEFAULT;
}

int momento_config_set_metrics(momento_config *cfg, momento_metrics_fn fn, void *userdata)
{
    if (!cfg)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    cfg->metrics_fn = fn;
    cfg->metrics_userdata = fn ? userdata : NULL;
    return MOMENTO_OK;
}

int momento_config_set_compression(momento_config *cfg, momento_compression compression,
                                   int level)
{
    /* As an int: a value outside the enum (its type may be unsigned) is
     * refused, not wrapped. */
    int algo = (int)compression;
    /* Raw levels as zlib (1..9) and zstd (1..22) take them; zstd's negative
     * "fast" levels are not offered: the SDK's levels do not reach them. */
    int max = algo == MOMENTO_COMPRESS_GZIP ? 9 : 22;
    if (!cfg || algo < MOMENTO_COMPRESS_DEFAULT || algo > MOMENTO_COMPRESS_ZSTD)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    if (algo == MOMENTO_COMPRESS_DEFAULT || algo == MOMENTO_COMPRESS_NONE) {
        cfg->compression = MOMENTO_COMPRESS_NONE;
        cfg->compression_level = MOMENTO_COMPRESS_LEVEL_BALANCED;
        return MOMENTO_OK;
    }
    if (level < MOMENTO_COMPRESS_LEVEL_SMALLEST || level > max)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    cfg->compression = algo;
    cfg->compression_level = level;
    return MOMENTO_OK;
}

int momento_config_set_decompression(momento_config *cfg, int enabled, size_t max_bytes)
{
    if (!cfg || (enabled != 0 && enabled != 1) || max_bytes > MOMENTO_DECOMPRESS_MAX_BYTES)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    cfg->decompress = enabled;
    cfg->decompress_max_bytes = max_bytes ? max_bytes : MOMENTO_DECOMPRESS_DEFAULT_MAX_BYTES;
    return MOMENTO_OK;
}
