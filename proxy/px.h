/* What every part of momento-proxy shares: the backend the commands reach
 * Momento through, the limits, the counters INFO and stats report, and a
 * borrowed byte string. The proxy is one thread: the event loop
 * (main.c) reads, parses and writes, and the library's callbacks run on
 * the same thread through dispatch mode, so nothing here is locked. */
#ifndef PX_H
#define PX_H

#include "momento/coalescer.h"
#include "momento/momento.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* The options of a read whose answer must be Momento's current value,
 * never one from the near cache (--near-cache-bytes; docs/proxy.md "The
 * near cache"): the read of a command that writes from what it read (SET
 * ... GET, GETDEL, gat's delete of an expired key, a delete with a CAS) or
 * that answers a cas unique (mc_ops.c). Static: it outlives every call. */
static const momento_request_options px_current_read = {
    .size = sizeof(momento_request_options), .no_near_cache = 1};

/* A byte string borrowed from a connection's input buffer: valid only
 * during the call it is passed to (the library copies what it sends). */
typedef struct px_str {
    const char *p;
    size_t n;
} px_str;

/* Room for one more element in an array that grows as it fills: arr
 * (NULL at first) holds n elements of `size` bytes in room for *cap.
 * Returns the array with room for n + 1 - arr itself when there was room,
 * else arr reallocated to twice *cap (`first` elements the first time),
 * *cap updated - or NULL out of memory, arr and *cap as they were. */
static inline void *px_grow(void *arr, size_t n, size_t *cap, size_t size, size_t first)
{
    if (n < *cap)
        return arr;
    size_t room = *cap ? *cap * 2 : first;
    void *grown = realloc(arr, room * size);
    if (grown)
        *cap = room;
    return grown;
}

typedef struct px_limits {
    uint32_t max_connections;  /* open client connections, all ports */
    size_t max_request_bytes;  /* one command, framing included */
    uint32_t max_in_flight;    /* commands per connection awaiting a reply */
    size_t max_output_bytes;   /* replies buffered for a client that reads
                                  slowly: above it the connection is not read */
} px_limits;

/* Counters since start (INFO, stats). */
typedef struct px_counters {
    uint64_t connections_total;
    uint64_t connections_rejected;
    uint32_t connections;
    uint64_t commands;
    uint64_t backend_calls;
    uint64_t backend_errors;
    uint64_t hits;
    uint64_t misses;
    uint64_t protocol_errors;
    uint64_t bytes_in;
    uint64_t bytes_out;
    /* TLS handshakes that failed (plaintext on a TLS port, a client
     * certificate refused, a client gone mid-handshake) and those that did
     * not finish within the deadline (conn.c HANDSHAKE_MS). */
    uint64_t tls_handshake_failures;
    uint64_t tls_handshake_timeouts;
} px_counters;

/* Where commands go: one per listener (each listener serves one cache);
 * the client, the coalescer, the limits and the counters are shared. */
typedef struct px_backend {
    momento_client *client;   /* dispatch mode: callbacks run on the loop */
    momento_coalescer *co;    /* duplicate reads in flight share one RPC */
    const char *cache;
    /* The password a connection must give (AUTH, HELLO AUTH, memcached
     * binary SASL PLAIN) before other commands; NULL: none. Never written
     * anywhere (logs, INFO, metrics). */
    const char *requirepass;
    uint64_t default_ttl_ms;  /* a write without a TTL of its own */
    /* The client has a near cache (--near-cache-bytes): a read of many
     * keys asks each alone, so that each may be answered from memory
     * (multiget.h). */
    bool near;
    px_limits limits;
    px_counters *stats;       /* shared by every listener */
    int64_t started_ms;       /* CLOCK_REALTIME at start, for uptime */
    /* resp_pubsub.c: this proxy's subscribers to this cache's topics, by
     * channel: one slot shared by every listener of the cache (PUBLISH on
     * one port counts the subscribers of another). */
    void **channels;
} px_backend;

#endif
