/* Momento Topics in momento-local (topics.c): the topics of each cache,
 * each with its sequence numbers, its sequence page and a buffer of its
 * most recent items for subscribers that resume, and the subscriptions:
 * one queue of packed _SubscriptionItem messages per Subscribe stream,
 * handed out as a reply's attachment (srv_attach.h), which calls.c's
 * stream drains one message per batch (docs/server.md "Topics"). topics.c
 * knows no call: it tells the stream of news through the wake callback
 * the stream gives it.
 *
 * An item is packed once per publish; every subscriber's queue, and the
 * topic's buffer, hold a reference to the same message. Everything topics
 * hold (topics, buffers, messages, subscriptions and their queues) is
 * charged to the store (store_charge()), against --max-memory with the
 * items. Server thread only, but for the counters. */
#ifndef MOMENTO_LOCAL_SRV_TOPICS_H
#define MOMENTO_LOCAL_SRV_TOPICS_H

#include "core/srv_attach.h"
#include "momento/local.h"

#include <grpc/grpc.h>
#include <protobuf-c/protobuf-c.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct srv_topic srv_topic;
typedef struct srv_sub srv_sub;

/* Topics in the order of their last activity, the most recent first. */
typedef struct srv_topic_list {
    srv_topic *head, *tail;
} srv_topic_list;

/* What a server holds of topics (part of momento_local). */
typedef struct srv_topics {
    srv_topic *by_key;          /* uthash: cache name, NUL, topic name */
    /* Subscriptions in the order of their last queued message, oldest
     * first: the first is the next to need a heartbeat. */
    srv_sub *idle_head, *idle_tail;
    /* Where memory can be given back (the store's reclaim hook) and idle
     * topics are found: topics without subscribers, by their last publish
     * or subscriber; topics with subscribers and items buffered, by their
     * last publish. Every other topic is in neither. */
    srv_topic_list unheard, buffered;
    srv_topic *pinned;          /* being published or subscribed to: not reclaimed */
    uint64_t queued;            /* every subscription's queue, as the queue bounds count */
    uint64_t charged;           /* what topics.c has charged to the store */
    /* momento_local_topic_bytes(), _topic_count(), _queued_bytes(). */
    atomic_uint_fast64_t bytes_seen, count_seen, queued_seen;
} srv_topics;

/* The longest topic name, in bytes. No public source gives Momento's
 * limit; this is the cache name's (docs/server.md "Topics"). */
#define SRV_TOPIC_NAME_MAX_BYTES 255u
/* A topic's resume buffer keeps at most this many bytes of items, besides
 * its limit in items (momento_local_options_set_topic_buffer_items()). */
#define SRV_TOPIC_BUFFER_MAX_BYTES (64u * 1024u * 1024u)

/* Publishes `value` (a packed _TopicValue's message, borrowed) to `topic`
 * of `cache`: numbers it (its number in *ret_seq), buffers it, queues it
 * for every subscriber.
 * Returns 0; SRV_TOPICS_TOO_BIG when the item alone would not fit in
 * --max-memory; SRV_TOPICS_NO_MEMORY when there is no room for it (nothing
 * published). */
#define SRV_TOPICS_FULL (-1)
#define SRV_TOPICS_NO_MEMORY (-2)
#define SRV_TOPICS_TOO_BIG (-3)
int srv_topics_publish(momento_local *s, const char *cache, const char *topic,
                       const ProtobufCMessage *value, uint64_t *ret_seq);

/* A new subscription to `topic` of `cache` resuming at `resume` of page
 * `page` (0, 0: only what is published from now on), its first messages
 * queued: a heartbeat, then a discontinuity and replayed items as
 * docs/server.md "Topics" says. Sets *ret_sub to it as an attachment
 * (srv_attach.h), which the caller owns: its ops give the queued messages
 * one at a time (counting items and heartbeats for the server's
 * counters), say whether it has ended (its cache deleted, the server
 * stopping: srv_topics_end_all()), end it (it leaves its topic and drops
 * what is queued) and free it (leaving its topic first, if it has not
 * ended). Returns 0; or SRV_TOPICS_FULL (the topic has
 * max_subscribers already) or SRV_TOPICS_NO_MEMORY, *ret_sub untouched. */
int srv_topics_subscribe(momento_local *s, const char *cache, const char *topic, uint64_t resume,
                         uint64_t page, srv_attachment *ret_sub);

/* Ends every subscription to a topic of `cache` with NOT_FOUND and forgets
 * its topics (the cache was deleted). */
void srv_topics_drop_cache(momento_local *s, const char *cache);
/* The cache was flushed: its topics without subscribers are forgotten
 * (numbered afresh, on a new page, if used again) and the others' resume
 * buffers emptied; subscriptions go on. */
void srv_topics_flush_cache(momento_local *s, const char *cache);
/* Ends every subscription with `status` (the server is stopping). */
void srv_topics_end_all(momento_local *s, grpc_status_code status, const char *details);
/* Queues heartbeats for the subscriptions idle for the heartbeat interval
 * and forgets topics without subscribers idle for topic_idle_ms; returns
 * when it is next due (store_now_ms() clock), INT64_MAX for never. */
int64_t srv_topics_tick(momento_local *s, int64_t now);
/* Frees every topic (at server destruction, once no stream is left). */
void srv_topics_destroy(momento_local *s);

#endif
