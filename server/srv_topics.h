/* Momento Topics in momento-local (topics.c): the topics of each cache,
 * each with its sequence numbers, its sequence page and a buffer of its
 * most recent items for subscribers that resume, and the subscriptions:
 * one queue of packed _SubscriptionItem messages per Subscribe stream,
 * which calls.c drains one message per batch (docs/server.md "Topics").
 *
 * An item is packed once per publish; every subscriber's queue, and the
 * topic's buffer, hold a reference to the same slice. Server thread only,
 * but for the counters in momento_local. */
#ifndef MOMENTO_LOCAL_SRV_TOPICS_H
#define MOMENTO_LOCAL_SRV_TOPICS_H

#include "momento/local.h"

#include <grpc/grpc.h>
#include <protobuf-c/protobuf-c.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct srv_topic srv_topic;
typedef struct srv_sub srv_sub;

/* What a server holds of topics (part of momento_local). */
typedef struct srv_topics {
    srv_topic *by_key;          /* uthash: cache name, NUL, topic name */
    /* Subscriptions in the order of their last queued message, oldest
     * first: the first is the next to need a heartbeat. */
    srv_sub *idle_head, *idle_tail;
} srv_topics;

/* Limits of one subscriber's queue: a subscriber that reads slower than
 * items are published loses the oldest queued items beyond these (and
 * then gets a discontinuity) rather than holding the server's memory. */
#define SRV_SUB_QUEUE_MAX 8192u
#define SRV_SUB_QUEUE_MAX_BYTES (64u * 1024u * 1024u)
/* A topic's resume buffer keeps at most this many bytes of items, besides
 * its limit in items (momento_local_options_set_topic_buffer_items()). */
#define SRV_TOPIC_BUFFER_MAX_BYTES (64u * 1024u * 1024u)

/* Publishes `value` (a packed _TopicValue's message, borrowed) to `topic`
 * of `cache`: numbers it, buffers it, queues it for every subscriber.
 * Returns 0, or -1 out of memory (nothing published). */
int srv_topics_publish(momento_local *s, const char *cache, const char *topic,
                       const ProtobufCMessage *value);

/* A new subscription to `topic` of `cache` resuming at `resume` of page
 * `page` (0, 0: only what is published from now on), its first messages
 * queued: a heartbeat, then a discontinuity and replayed items as
 * docs/server.md "Topics" says. Sets *ret_sub and returns 0; or returns
 * SRV_TOPICS_FULL (the topic has max_subscribers already) or
 * SRV_TOPICS_NO_MEMORY. */
#define SRV_TOPICS_FULL (-1)
#define SRV_TOPICS_NO_MEMORY (-2)
int srv_topics_subscribe(momento_local *s, const char *cache, const char *topic, uint64_t resume,
                         uint64_t page, srv_sub **ret_sub);

/* Ends every subscription to a topic of `cache` with NOT_FOUND and forgets
 * its topics (the cache was deleted). */
void srv_topics_drop_cache(momento_local *s, const char *cache);
/* Ends every subscription with `status` (the server is stopping). */
void srv_topics_end_all(momento_local *s, grpc_status_code status, const char *details);
/* Queues heartbeats for the subscriptions idle for the heartbeat interval;
 * returns when the next one is due (store_now_ms() clock), INT64_MAX for
 * none. */
int64_t srv_topics_tick(momento_local *s, int64_t now);
/* Frees every topic (at server destruction, once no stream is left). */
void srv_topics_destroy(momento_local *s);

/* ---- One subscription, as calls.c drives it. */

/* The stream that sends `sub`'s messages: srv_stream_wake(stream) is
 * called when a message is queued or the subscription ends. NULL until
 * set (no wake-ups). */
void srv_sub_set_stream(srv_sub *sub, void *stream);
/* The next message to send, a reference handed to the caller; false when
 * none is queued. *more: another one is queued after it. Counts items and
 * heartbeats for the server's counters. */
bool srv_sub_next(srv_sub *sub, grpc_slice *ret_msg, bool *more);
/* Whether the subscription has ended; then *status and *details say how. */
bool srv_sub_ended(const srv_sub *sub, grpc_status_code *status, const char **details);
/* Ends it: leaves its topic, drops what is queued, and wakes its stream to
 * send `status`. A second end is ignored. */
void srv_sub_end(srv_sub *sub, grpc_status_code status, const char *details);
/* Leaves its topic and frees it. NULL-safe. */
void srv_sub_free(srv_sub *sub);

/* calls.c: `stream` (srv_sub_set_stream()'s) has something to send. */
void srv_stream_wake(void *stream);

#endif
