/* The options behind momento_local_options (options.c), and the deep copy a
 * server keeps of them so the caller may free its own at once. */
#ifndef MOMENTO_LOCAL_SRV_OPTIONS_H
#define MOMENTO_LOCAL_SRV_OPTIONS_H

#include "momento/local.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct momento_local_options {
    char *bind;
    int port;
    char *auth_token;
    uint64_t max_memory;
    uint64_t max_item_bytes;
    uint32_t max_rps;
    uint32_t list_page_size; /* ListCaches entries per page; 0 = one page */
    uint32_t heartbeat_ms;       /* a subscription idle this long gets a heartbeat */
    uint32_t topic_buffer_items; /* items kept per topic for resuming; 0 = none */
    uint32_t max_subscribers;    /* per topic; 0 = no limit */
    uint32_t max_streams;        /* concurrent HTTP/2 streams per connection */
    int test_admin_port;         /* the test admin's HTTP port; -1 = off */
    int protosocket_port;        /* the protosocket port; -1 = off */
    uint32_t topic_idle_ms;      /* a topic without subscribers or publishes this long goes */
    uint64_t sub_queue_bytes;    /* what one subscription may have queued */
    uint64_t max_queued_bytes;   /* ... every subscription together; 0 = no bound */
    uint32_t webhook_timeout_ms; /* a delivery's answer is waited for this long */
    uint32_t webhook_queue_items; /* deliveries waiting per webhook; past it, dropped */
    char *tls_cert;
    char *tls_key;
    char **caches;
    size_t n_caches;
};

/* Copies `src` (NULL: the defaults) into `dst`, with bind defaulting to
 * 127.0.0.1. Returns MOMENTO_OK, or MOMENTO_ERR_NO_MEMORY with `dst` empty. */
int momento__local_options_copy(momento_local_options *dst, const momento_local_options *src);
/* Why `len` bytes at `name` are not a cache name, as a static sentence, or
 * NULL when they are one: 1 to MOMENTO_MAX_CACHE_NAME_BYTES bytes of valid
 * UTF-8 without control characters (U+0000-U+001F, U+007F-U+009F). The one
 * rule for CreateCache, DeleteCache, FlushCache, the `cache` header of data
 * calls and the caches named at start (docs/server.md "Cache names"). */
const char *momento__local_cache_name_problem(const char *name, size_t len);
/* Whether `len` bytes at `s` are valid UTF-8 (no overlong forms,
 * surrogates or code points past U+10FFFF): what a protobuf string field
 * must hold (topic names and text values). */
bool momento__local_utf8_valid(const char *s, size_t len);
/* Frees what `o` owns (not `o`) and zeroes it. */
void momento__local_options_clear(momento_local_options *o);

#endif
