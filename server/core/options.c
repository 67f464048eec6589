/* Server options: defaults, validated setters, deep copy into a server. */
#include "core/srv_options.h"

#include <arpa/inet.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_MAX_ITEM_BYTES (5u * 1024u * 1024u)
/* Topics (docs/server.md "Topics"). A heartbeat after 1 s idle, as the
 * official SDKs' tests expect one within about a second; 4096 items per
 * topic to resume from; 10,000 subscribers per topic, past the 2010 the JS
 * SDK's suite opens on one topic. */
#define DEFAULT_HEARTBEAT_MS 1000u
#define DEFAULT_TOPIC_BUFFER_ITEMS 4096u
#define DEFAULT_MAX_SUBSCRIBERS 10000u
/* Momento's own limit (the Go SDK's MAX_CONCURRENT_STREAMS_PER_CHANNEL,
 * momento-proxy's listener): the SDKs open more connections for more. */
#define DEFAULT_MAX_STREAMS 100u
#define MAX_MAX_STREAMS 100000u
/* A topic nobody subscribes or publishes to is forgotten after 5 minutes:
 * long past any resume after a reconnect (the SDKs wait 0.5 s). A
 * subscriber's queue holds up to 1 MiB (thousands of small items, as the
 * 8192-entry queue before it), and all of them together 64 MiB: 2000
 * subscribers that never read hold 32 KiB each, not 400 KiB (issue 27). */
#define DEFAULT_TOPIC_IDLE_MS 300000u
#define DEFAULT_SUB_QUEUE_BYTES (1u << 20)
#define DEFAULT_MAX_QUEUED_BYTES (64u << 20)
/* Momento drops a delivery not answered within 5 s (docs/server.md
 * "Webhooks"). */
#define DEFAULT_WEBHOOK_TIMEOUT_MS 5000u
#define DEFAULT_WEBHOOK_QUEUE_ITEMS 1024u
/* Below this a queue could not hold even a few small items. */
#define MIN_QUEUE_BYTES 1024u

static char *dup_str(const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

/* The length of the UTF-8 sequence at p[0..n), with its code point in *cp,
 * or 0 when it is not one (overlong forms, surrogates and values past
 * U+10FFFF included). */
static size_t utf8_next(const unsigned char *p, size_t n, uint32_t *cp)
{
    size_t len;
    uint32_t c = p[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    } else if ((c & 0xE0) == 0xC0) {
        len = 2;
        c &= 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
        len = 3;
        c &= 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
        len = 4;
        c &= 0x07;
    } else {
        return 0;
    }
    if (len > n)
        return 0;
    for (size_t k = 1; k < len; k++) {
        if ((p[k] & 0xC0) != 0x80)
            return 0;
        c = (c << 6) | (p[k] & 0x3F);
    }
    if ((len == 2 && c < 0x80) || (len == 3 && c < 0x800) || (len == 4 && c < 0x10000) ||
        (c >= 0xD800 && c <= 0xDFFF) || c > 0x10FFFF)
        return 0;
    *cp = c;
    return len;
}

bool momento__local_utf8_valid(const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        size_t n = utf8_next(p + i, len - i, &cp);
        if (n == 0)
            return false;
        i += n;
    }
    return true;
}

const char *momento__local_cache_name_problem(const char *name, size_t len)
{
    if (!name || len == 0)
        return "cache name must not be empty";
    if (len > MOMENTO_MAX_CACHE_NAME_BYTES)
        return "cache name must be at most 255 bytes";
    const unsigned char *p = (const unsigned char *)name;
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        size_t n = utf8_next(p + i, len - i, &cp);
        if (n == 0)
            return "cache name must be valid UTF-8";
        /* Unicode's control characters: C0, DEL and C1 (NUL among them). */
        if (cp < 0x20 || (cp >= 0x7F && cp <= 0x9F))
            return "cache name must not contain control characters";
        i += n;
    }
    return NULL;
}

static void defaults(momento_local_options *o)
{
    memset(o, 0, sizeof(*o));
    o->port = 0;
    o->max_item_bytes = DEFAULT_MAX_ITEM_BYTES;
    o->heartbeat_ms = DEFAULT_HEARTBEAT_MS;
    o->topic_buffer_items = DEFAULT_TOPIC_BUFFER_ITEMS;
    o->max_subscribers = DEFAULT_MAX_SUBSCRIBERS;
    o->max_streams = DEFAULT_MAX_STREAMS;
    o->test_admin_port = -1;
    o->protosocket_port = -1;
    o->topic_idle_ms = DEFAULT_TOPIC_IDLE_MS;
    o->sub_queue_bytes = DEFAULT_SUB_QUEUE_BYTES;
    o->max_queued_bytes = DEFAULT_MAX_QUEUED_BYTES;
    o->webhook_timeout_ms = DEFAULT_WEBHOOK_TIMEOUT_MS;
    o->webhook_queue_items = DEFAULT_WEBHOOK_QUEUE_ITEMS;
}

int momento_local_options_new(momento_local_options **ret)
{
    if (!ret)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    momento_local_options *o = malloc(sizeof(*o));
    if (!o)
        return MOMENTO_ERR_NO_MEMORY;
    defaults(o);
    *ret = o;
    return MOMENTO_OK;
}

void momento__local_options_clear(momento_local_options *o)
{
    free(o->bind);
    free(o->auth_token);
    free(o->tls_cert);
    free(o->tls_key);
    for (size_t i = 0; i < o->n_caches; i++)
        free(o->caches[i]);
    free(o->caches);
    memset(o, 0, sizeof(*o));
}

void momento_local_options_free(momento_local_options *o)
{
    if (!o)
        return;
    momento__local_options_clear(o);
    free(o);
}

static int replace(char **slot, const char *value)
{
    char *copy = NULL;
    if (value && !(copy = dup_str(value)))
        return MOMENTO_ERR_NO_MEMORY;
    free(*slot);
    *slot = copy;
    return MOMENTO_OK;
}

int momento_local_options_set_bind(momento_local_options *o, const char *addr)
{
    unsigned char buf[sizeof(struct in6_addr)];
    if (!o || !addr || (inet_pton(AF_INET, addr, buf) != 1 && inet_pton(AF_INET6, addr, buf) != 1))
        return MOMENTO_ERR_INVALID_ARGUMENT;
    return replace(&o->bind, addr);
}

int momento_local_options_set_port(momento_local_options *o, int port)
{
    if (!o || port < 0 || port > 65535)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    o->port = port;
    return MOMENTO_OK;
}

int momento_local_options_set_auth_token(momento_local_options *o, const char *token)
{
    if (!o)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    return replace(&o->auth_token, token);
}

int momento_local_options_set_max_memory(momento_local_options *o, uint64_t bytes)
{
    if (!o)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    o->max_memory = bytes;
    return MOMENTO_OK;
}

int momento_local_options_set_max_item_bytes(momento_local_options *o, uint64_t bytes)
{
    if (!o || bytes == 0 || bytes > 60u * 1024u * 1024u)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    o->max_item_bytes = bytes;
    return MOMENTO_OK;
}

int momento_local_options_set_max_rps(momento_local_options *o, uint32_t rps)
{
    if (!o)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    o->max_rps = rps;
    return MOMENTO_OK;
}

int momento_local_options_set_list_page_size(momento_local_options *o, uint32_t n)
{
    if (!o)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    o->list_page_size = n;
    return MOMENTO_OK;
}

int momento_local_options_set_heartbeat_ms(momento_local_options *o, uint32_t ms)
{
    if (!o || ms < 10 || ms > 3600000u)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    o->heartbeat_ms = ms;
    return MOMENTO_OK;
}

int momento_local_options_set_topic_buffer_items(momento_local_options *o, uint32_t n)
{
    if (!o || n > 1000000u)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    o->topic_buffer_items = n;
    return MOMENTO_OK;
}

int momento_local_options_set_max_subscribers(momento_local_options *o, uint32_t n)
{
    if (!o)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    o->max_subscribers = n;
    return MOMENTO_OK;
}

int momento_local_options_set_max_streams_per_connection(momento_local_options *o, uint32_t n)
{
    if (!o || n == 0 || n > MAX_MAX_STREAMS)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    o->max_streams = n;
    return MOMENTO_OK;
}

int momento_local_options_set_test_admin_port(momento_local_options *o, int port)
{
    if (!o || port < -1 || port > 65535)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    o->test_admin_port = port;
    return MOMENTO_OK;
}

int momento_local_options_set_protosocket_port(momento_local_options *o, int port)
{
    if (!o || port < -1 || port > 65535)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    o->protosocket_port = port;
    return MOMENTO_OK;
}

int momento_local_options_set_topic_idle_ms(momento_local_options *o, uint32_t ms)
{
    if (!o || ms < 10 || ms > 86400000u)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    o->topic_idle_ms = ms;
    return MOMENTO_OK;
}

int momento_local_options_set_subscriber_queue_bytes(momento_local_options *o, uint64_t bytes)
{
    if (!o || bytes < MIN_QUEUE_BYTES || bytes > (1ull << 30))
        return MOMENTO_ERR_INVALID_ARGUMENT;
    o->sub_queue_bytes = bytes;
    return MOMENTO_OK;
}

int momento_local_options_set_max_queued_bytes(momento_local_options *o, uint64_t bytes)
{
    if (!o || (bytes != 0 && bytes < MIN_QUEUE_BYTES))
        return MOMENTO_ERR_INVALID_ARGUMENT;
    o->max_queued_bytes = bytes;
    return MOMENTO_OK;
}

int momento_local_options_set_webhook_timeout_ms(momento_local_options *o, uint32_t ms)
{
    if (!o || ms < 10 || ms > 600000u)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    o->webhook_timeout_ms = ms;
    return MOMENTO_OK;
}

int momento_local_options_set_webhook_queue_items(momento_local_options *o, uint32_t n)
{
    if (!o || n < 1 || n > 1000000u)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    o->webhook_queue_items = n;
    return MOMENTO_OK;
}

int momento_local_options_set_tls(momento_local_options *o, const char *cert_file,
                                  const char *key_file)
{
    if (!o || (!cert_file) != (!key_file))
        return MOMENTO_ERR_INVALID_ARGUMENT;
    int rc = replace(&o->tls_cert, cert_file);
    if (rc == MOMENTO_OK)
        rc = replace(&o->tls_key, key_file);
    return rc;
}

int momento_local_options_add_cache(momento_local_options *o, const char *name)
{
    if (!o || !name ||
        momento__local_cache_name_problem(name, strnlen(name, MOMENTO_MAX_CACHE_NAME_BYTES + 1)))
        return MOMENTO_ERR_INVALID_ARGUMENT;
    char **grown = realloc(o->caches, (o->n_caches + 1) * sizeof(*grown));
    if (!grown)
        return MOMENTO_ERR_NO_MEMORY;
    o->caches = grown;
    if (!(o->caches[o->n_caches] = dup_str(name)))
        return MOMENTO_ERR_NO_MEMORY;
    o->n_caches++;
    return MOMENTO_OK;
}

int momento__local_options_copy(momento_local_options *dst, const momento_local_options *src)
{
    momento_local_options def;
    if (!src) {
        defaults(&def);
        src = &def;
    }
    *dst = *src;
    dst->bind = dup_str(src->bind ? src->bind : "127.0.0.1");
    dst->auth_token = dup_str(src->auth_token);
    dst->tls_cert = dup_str(src->tls_cert);
    dst->tls_key = dup_str(src->tls_key);
    dst->caches = NULL;
    dst->n_caches = 0;
    bool ok = dst->bind && (!src->auth_token || dst->auth_token) &&
              (!src->tls_cert || dst->tls_cert) && (!src->tls_key || dst->tls_key);
    for (size_t i = 0; ok && i < src->n_caches; i++)
        ok = momento_local_options_add_cache(dst, src->caches[i]) == MOMENTO_OK;
    if (!ok) {
        momento__local_options_clear(dst);
        return MOMENTO_ERR_NO_MEMORY;
    }
    return MOMENTO_OK;
}
