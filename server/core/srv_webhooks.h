/* Webhooks in momento-local (webhooks.c; docs/server.md "Webhooks"): each
 * cache's webhooks (name, topic, http:// URL, signing secret), and their
 * deliveries: every item published to a topic with webhooks is queued,
 * once per webhook, in that webhook's own queue, from which the delivery
 * thread POSTs it as Momento does (its JSON body, `momento-signature`,
 * Momento's User-Agent), once, within the configured timeout. Webhooks are
 * sent to concurrently, each one delivery at a time, in order. A publish
 * only queues: a slow or dead receiver never holds it up, nor another
 * webhook's deliveries; a delivery with no room is dropped and counted.
 *
 * The registry is the server's state (touched with the turn); the queues
 * have their own lock, taken after the turn, shared with the delivery
 * thread and its host-name lookups' thread, which touch nothing else of
 * the server but the store's memory count, with the turn. */
#ifndef MOMENTO_LOCAL_SRV_WEBHOOKS_H
#define MOMENTO_LOCAL_SRV_WEBHOOKS_H

#include "momento/local.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct srv_webhooks srv_webhooks;

/* The longest webhook name, in bytes: Momento's protos say 128 characters;
 * counted in bytes here, as cache names are. */
#define SRV_WEBHOOK_NAME_MAX_BYTES 128u
/* The longest URL taken. No public source gives Momento's; 2048 is the
 * length browsers and servers commonly take. */
#define SRV_WEBHOOK_URL_MAX_BYTES 2048u

/* Makes s->webhooks (the delivery thread starts with the first webhook).
 * Returns 0, or -1 out of memory. */
int srv_webhooks_init(momento_local *s);
/* Stops the threads: every delivery in progress is cut short, nothing more
 * is queued or sent (uncounted). While the server's threads still run: the
 * delivery thread takes the turn to give memory back. Idempotent. */
void srv_webhooks_stop(momento_local *s);
/* Stops (if not yet) and frees everything, queued deliveries included
 * (they are not counted), their memory uncharged. NULL-safe for a server
 * whose init failed. */
void srv_webhooks_destroy(momento_local *s);

/* Why `url` will not do, as a static sentence, or NULL when momento-local
 * can deliver to it: http://HOST[:PORT][/PATH] (an IPv6 host in brackets),
 * at most SRV_WEBHOOK_URL_MAX_BYTES, no spaces or control characters. */
const char *srv_webhooks_url_problem(const char *url);

/* PutWebhook: makes webhook `name` of `cache` on `topic` to `url` (checked
 * by the caller), or points the existing one there, keeping its secret.
 * Sets *ret_secret to the secret (borrowed until the next call). Returns
 * 0, or -1 out of memory (nothing changed). */
int srv_webhooks_put(momento_local *s, const char *cache, const char *name, const char *topic,
                     const char *url, const char **ret_secret);
/* DeleteWebhook: true when there was one. Its queued deliveries go
 * (uncounted); one being sent finishes. */
bool srv_webhooks_delete(momento_local *s, const char *cache, const char *name);
/* The secret of webhook `name` of `cache`, NULL when there is none;
 * `rotate` draws a new one first. Returns NULL also when a rotation found
 * no randomness (*ret_failed set then). */
const char *srv_webhooks_secret(momento_local *s, const char *cache, const char *name,
                                bool rotate, bool *ret_failed);

/* One webhook as ListWebhooks answers it; borrowed. */
typedef struct srv_webhook_view {
    const char *cache, *name, *topic, *url;
} srv_webhook_view;
/* The webhooks of `cache`, by name, in *ret (malloc'd, the caller frees;
 * the strings borrowed until the registry next changes). Returns how many,
 * or -1 out of memory. */
long srv_webhooks_list(momento_local *s, const char *cache, srv_webhook_view **ret);

/* A publish of item `seq` to `topic` of `cache`: `value` (`len` bytes,
 * text or not) queued for every webhook on that topic, its memory charged
 * to the store (with the turn), or dropped and counted. */
void srv_webhooks_publish(momento_local *s, const char *cache, const char *topic,
                          const void *value, size_t len, bool is_text, uint64_t seq);
/* The cache is gone: its webhooks and their queued deliveries too. */
void srv_webhooks_drop_cache(momento_local *s, const char *cache);

#endif
