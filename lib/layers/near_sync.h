/* Invalidation of near caches across clients (near_sync.c;
 * momento_config_set_near_cache_invalidation(), docs/near-cache.md): each
 * client so configured publishes the keys written through it to a Momento
 * topic and drops its near cache's entries for the keys others publish.
 *
 * It starts with the client (the config's on_client_new hook, which its
 * setter installs: the engine knows nothing of it) and is released with
 * the client, every request retired.
 *
 * Lock order: its lock after the client's observer lock (its write
 * observer runs under that); it calls the near cache (near.h), the
 * transport and the timers with its lock released. */
#ifndef MOMENTO_NEAR_SYNC_H
#define MOMENTO_NEAR_SYNC_H

#include "momento/momento.h"

/* The message format on the topic, for tests and other implementations:
 * byte 0 the version (1), byte 1 flags (NEAR_SYNC_RESET: drop every
 * entry; a writer sends it when more keys came than one message holds),
 * bytes 2-9 the sending client's random id (little-endian; a client skips
 * its own), then for each key the cache name and the key, each as a
 * protobuf varint length and its bytes. Anything else on the topic is
 * taken as a reset. */
#define MOMENTO__NEAR_SYNC_VERSION 1
#define MOMENTO__NEAR_SYNC_RESET 0x1
#define MOMENTO__NEAR_SYNC_HEADER 10

/* Starts `c`'s invalidation (the config's on_client_new): its write
 * observer, and its subscription to the topic. Without memory it starts
 * nothing, and the bound alone limits staleness. */
void momento__near_sync_start(momento_client *c);

#endif
