/* Topics and their subscriptions (srv_topics.h; docs/server.md "Topics").
 *
 * A topic is created by its first publish or subscribe and lives until its
 * cache is deleted. Its items are numbered from 1 within its sequence
 * page, a number taken from the wall clock when the topic is created, so
 * that a topic re-created by a restarted server has a larger page than any
 * a subscriber may resume with, and learns of the reset by a
 * discontinuity. A publish packs its _SubscriptionItem once; the topic's
 * buffer and each subscriber's queue hold references to that slice.
 *
 * A subscription's queue is a ring of messages; calls.c takes them one at a
 * time (srv_sub_next()) as gRPC takes each message. A queue at its limit
 * loses its oldest entries; the subscriber is told with a discontinuity
 * before the next item it gets. Subscriptions are also kept in the order
 * of their last queued message, so that the ones due a heartbeat are found
 * at the front without scanning. */
#include "srv_topics.h"

#include "srv_server.h"

#include "cachepubsub.pb-c.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <uthash.h>

typedef enum { MSG_ITEM, MSG_DISCONTINUITY, MSG_HEARTBEAT } msg_kind;

typedef struct queued {
    grpc_slice msg;
    uint64_t seq; /* an item's number; a discontinuity's new_topic_sequence */
    msg_kind kind;
} queued;

struct srv_sub {
    momento_local *s;
    srv_topic *topic;             /* NULL once it has left (ended or freed) */
    srv_sub *prev, *next;         /* the topic's subscribers */
    srv_sub *idle_prev, *idle_next;
    int64_t last_queued_ms;       /* when its last message was queued */
    uint64_t page;                /* its topic's page */
    queued *q;                    /* ring: q_n entries from q_head */
    size_t q_head, q_n, q_cap, q_bytes;
    /* The last item number the subscriber has been given, or told of by a
     * discontinuity: where a discontinuity after lost items starts. */
    uint64_t sent_seq;
    bool lost;                    /* items were dropped since the last one taken */
    bool ended;
    grpc_status_code end_status;
    char end_details[192];
    void *stream;
};

struct srv_topic {
    UT_hash_handle hh;
    uint64_t page;
    uint64_t next_seq;            /* the number of the next item published */
    grpc_slice *ring;             /* the last ring_n items, oldest at ring_head */
    size_t ring_cap, ring_head, ring_n, ring_bytes;
    srv_sub *subs;
    size_t n_subs;
    size_t cache_len;             /* key: the cache's name, NUL, the topic's */
    size_t key_len;
    char key[];
};

/* _SubscriptionItem{heartbeat: {}}: field 3, length 0. */
static const uint8_t heartbeat_bytes[] = {0x1a, 0x00};

/* ---- pages ------------------------------------------------------------- */

/* Microseconds of the wall clock, strictly increasing across every server
 * of the process: a restarted server's topics get pages larger than any
 * its predecessor (in this process or an earlier one) handed out, as long
 * as the clock does not go back. */
static uint64_t new_page(void)
{
    static _Atomic uint64_t last;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t now = (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
    uint64_t prev = atomic_load(&last), page;
    do {
        page = now > prev ? now : prev + 1;
    } while (!atomic_compare_exchange_weak(&last, &prev, page));
    return page;
}

/* ---- topics ------------------------------------------------------------ */

static srv_topic *topic_get(momento_local *s, const char *cache, const char *topic, bool create)
{
    size_t cl = strlen(cache), tl = strlen(topic), kl = cl + 1 + tl;
    char stack_key[512];
    char *key = kl <= sizeof(stack_key) ? stack_key : malloc(kl);
    if (!key)
        return NULL;
    memcpy(key, cache, cl + 1);
    memcpy(key + cl + 1, topic, tl);
    srv_topic *t = NULL;
    HASH_FIND(hh, s->topics.by_key, key, kl, t);
    if (!t && create && (t = calloc(1, sizeof(*t) + kl))) {
        memcpy(t->key, key, kl);
        t->key_len = kl;
        t->cache_len = cl;
        t->page = new_page();
        t->next_seq = 1;
        HASH_ADD_KEYPTR(hh, s->topics.by_key, t->key, kl, t);
    }
    if (key != stack_key)
        free(key);
    return t;
}

static void buffer_drop_oldest(srv_topic *t)
{
    grpc_slice *old = &t->ring[t->ring_head];
    t->ring_bytes -= GRPC_SLICE_LENGTH(*old);
    grpc_slice_unref(*old);
    t->ring_head = (t->ring_head + 1) % t->ring_cap;
    t->ring_n--;
}

/* Keeps `msg` (a reference of its own) as the topic's newest item, the
 * oldest leaving past the buffer's limits. Out of memory the item is not
 * buffered: a resume from it then gets a discontinuity instead. */
static void buffer_push(momento_local *s, srv_topic *t, grpc_slice msg)
{
    size_t limit = s->opts.topic_buffer_items, len = GRPC_SLICE_LENGTH(msg);
    if (limit == 0 || len > SRV_TOPIC_BUFFER_MAX_BYTES) {
        /* Everything older must go too: the buffer holds consecutive items. */
        while (t->ring_n)
            buffer_drop_oldest(t);
        grpc_slice_unref(msg);
        return;
    }
    while (t->ring_n && (t->ring_n >= limit || t->ring_bytes + len > SRV_TOPIC_BUFFER_MAX_BYTES))
        buffer_drop_oldest(t);
    if (t->ring_n == t->ring_cap) {
        /* Grown by doubling up to the limit: a topic with few items keeps
         * a small ring. */
        size_t cap = t->ring_cap ? t->ring_cap * 2 : 16;
        if (cap > limit)
            cap = limit;
        grpc_slice *ring = malloc(cap * sizeof(*ring));
        if (!ring) {
            while (t->ring_n)
                buffer_drop_oldest(t);
            grpc_slice_unref(msg);
            return;
        }
        for (size_t i = 0; i < t->ring_n; i++)
            ring[i] = t->ring[(t->ring_head + i) % t->ring_cap];
        free(t->ring);
        t->ring = ring;
        t->ring_cap = cap;
        t->ring_head = 0;
    }
    t->ring[(t->ring_head + t->ring_n) % t->ring_cap] = msg;
    t->ring_n++;
    t->ring_bytes += len;
}

static void topic_free(srv_topic *t)
{
    while (t->ring_n)
        buffer_drop_oldest(t);
    free(t->ring);
    free(t);
}

/* ---- a subscription's queue ------------------------------------------- */

static void idle_unlink(srv_topics *ts, srv_sub *sub)
{
    if (sub->idle_prev)
        sub->idle_prev->idle_next = sub->idle_next;
    else if (ts->idle_head == sub)
        ts->idle_head = sub->idle_next;
    if (sub->idle_next)
        sub->idle_next->idle_prev = sub->idle_prev;
    else if (ts->idle_tail == sub)
        ts->idle_tail = sub->idle_prev;
    sub->idle_prev = sub->idle_next = NULL;
}

/* A message was queued at `now`: the subscription goes to the back of the
 * heartbeat order. */
static void idle_touch(srv_topics *ts, srv_sub *sub, int64_t now)
{
    sub->last_queued_ms = now;
    if (ts->idle_tail == sub)
        return;
    idle_unlink(ts, sub);
    sub->idle_prev = ts->idle_tail;
    if (ts->idle_tail)
        ts->idle_tail->idle_next = sub;
    else
        ts->idle_head = sub;
    ts->idle_tail = sub;
}

static void queue_drop_oldest(srv_sub *sub)
{
    queued *e = &sub->q[sub->q_head];
    if (e->kind == MSG_ITEM)
        sub->lost = true;
    sub->q_bytes -= GRPC_SLICE_LENGTH(e->msg);
    grpc_slice_unref(e->msg);
    sub->q_head = (sub->q_head + 1) % sub->q_cap;
    sub->q_n--;
}

static void queue_clear(srv_sub *sub)
{
    while (sub->q_n)
        queue_drop_oldest(sub);
}

/* Queues `msg` (a reference handed over) and wakes the stream. */
static void queue_push(srv_sub *sub, grpc_slice msg, msg_kind kind, uint64_t seq, int64_t now)
{
    if (sub->ended) {
        grpc_slice_unref(msg);
        return;
    }
    size_t len = GRPC_SLICE_LENGTH(msg);
    while (sub->q_n &&
           (sub->q_n >= SRV_SUB_QUEUE_MAX || sub->q_bytes + len > SRV_SUB_QUEUE_MAX_BYTES))
        queue_drop_oldest(sub);
    if (sub->q_n == sub->q_cap) {
        size_t cap = sub->q_cap ? sub->q_cap * 2 : 8;
        if (cap > SRV_SUB_QUEUE_MAX)
            cap = SRV_SUB_QUEUE_MAX;
        queued *q = malloc(cap * sizeof(*q));
        if (!q) {
            /* Lost like an item dropped from a full queue: never silently. */
            if (kind == MSG_ITEM)
                sub->lost = true;
            grpc_slice_unref(msg);
            return;
        }
        for (size_t i = 0; i < sub->q_n; i++)
            q[i] = sub->q[(sub->q_head + i) % sub->q_cap];
        free(sub->q);
        sub->q = q;
        sub->q_cap = cap;
        sub->q_head = 0;
    }
    sub->q[(sub->q_head + sub->q_n) % sub->q_cap] = (queued){msg, seq, kind};
    sub->q_n++;
    sub->q_bytes += len;
    if (sub->topic)
        idle_touch(&sub->s->topics, sub, now);
    if (sub->stream)
        srv_stream_wake(sub->stream);
}

static grpc_slice pack_discontinuity(uint64_t last, uint64_t next, uint64_t page)
{
    CacheClient__Pubsub__Discontinuity d = CACHE_CLIENT__PUBSUB____DISCONTINUITY__INIT;
    d.last_topic_sequence = last;
    d.new_topic_sequence = next;
    d.new_sequence_page = page;
    CacheClient__Pubsub__SubscriptionItem m = CACHE_CLIENT__PUBSUB____SUBSCRIPTION_ITEM__INIT;
    m.kind_case = CACHE_CLIENT__PUBSUB____SUBSCRIPTION_ITEM__KIND_DISCONTINUITY;
    m.discontinuity = &d;
    grpc_slice s = grpc_slice_malloc(protobuf_c_message_get_packed_size(&m.base));
    protobuf_c_message_pack(&m.base, GRPC_SLICE_START_PTR(s));
    return s;
}

static void queue_discontinuity(srv_sub *sub, uint64_t last, uint64_t next, int64_t now)
{
    queue_push(sub, pack_discontinuity(last, next, sub->page), MSG_DISCONTINUITY, next, now);
}

static void queue_heartbeat(srv_sub *sub, int64_t now)
{
    queue_push(sub, grpc_slice_from_static_buffer(heartbeat_bytes, sizeof(heartbeat_bytes)),
               MSG_HEARTBEAT, 0, now);
}

/* Takes the subscription out of its topic and the heartbeat order. */
static void leave_topic(srv_sub *sub)
{
    srv_topic *t = sub->topic;
    if (!t)
        return;
    if (sub->prev)
        sub->prev->next = sub->next;
    else
        t->subs = sub->next;
    if (sub->next)
        sub->next->prev = sub->prev;
    sub->prev = sub->next = NULL;
    t->n_subs--;
    sub->topic = NULL;
    idle_unlink(&sub->s->topics, sub);
    atomic_fetch_sub_explicit(&sub->s->subscriptions, 1, memory_order_relaxed);
}

/* ---- publish and subscribe --------------------------------------------- */

/* Above this a message's memory comes from malloc(), which can fail,
 * rather than grpc_slice_malloc(), which aborts (as reply.c's blocks). */
#define SLICE_FROM_GRPC_MAX (1u << 20)

static void free_block(void *p, size_t len)
{
    (void)len;
    free(p);
}

int srv_topics_publish(momento_local *s, const char *cache, const char *topic,
                       const ProtobufCMessage *value)
{
    srv_topic *t = topic_get(s, cache, topic, true);
    if (!t)
        return -1;
    CacheClient__Pubsub__TopicItem item = CACHE_CLIENT__PUBSUB____TOPIC_ITEM__INIT;
    item.topic_sequence_number = t->next_seq;
    item.value = (CacheClient__Pubsub__TopicValue *)value;
    item.sequence_page = t->page;
    CacheClient__Pubsub__SubscriptionItem m = CACHE_CLIENT__PUBSUB____SUBSCRIPTION_ITEM__INIT;
    m.kind_case = CACHE_CLIENT__PUBSUB____SUBSCRIPTION_ITEM__KIND_ITEM;
    m.item = &item;
    size_t len = protobuf_c_message_get_packed_size(&m.base);
    grpc_slice msg;
    if (len <= SLICE_FROM_GRPC_MAX) {
        msg = grpc_slice_malloc(len);
    } else {
        void *p = malloc(len);
        if (!p)
            return -1;
        msg = grpc_slice_new_with_len(p, len, free_block);
    }
    protobuf_c_message_pack(&m.base, GRPC_SLICE_START_PTR(msg));
    uint64_t seq = t->next_seq++;
    int64_t now = store_now_ms();
    /* A subscriber's stream may end while it is woken (its batch would
     * not start): it leaves the list then, so the next one is read
     * first. */
    for (srv_sub *sub = t->subs, *next; sub; sub = next) {
        next = sub->next;
        queue_push(sub, grpc_slice_ref(msg), MSG_ITEM, seq, now);
    }
    buffer_push(s, t, msg);
    return 0;
}

int srv_topics_subscribe(momento_local *s, const char *cache, const char *topic, uint64_t resume,
                         uint64_t page, srv_sub **ret_sub)
{
    srv_topic *t = topic_get(s, cache, topic, true);
    if (!t)
        return SRV_TOPICS_NO_MEMORY;
    if (s->opts.max_subscribers && t->n_subs >= s->opts.max_subscribers)
        return SRV_TOPICS_FULL;
    srv_sub *sub = calloc(1, sizeof(*sub));
    if (!sub)
        return SRV_TOPICS_NO_MEMORY;
    sub->s = s;
    sub->topic = t;
    sub->page = t->page;
    sub->next = t->subs;
    if (t->subs)
        t->subs->prev = sub;
    t->subs = sub;
    t->n_subs++;
    atomic_fetch_add_explicit(&s->subscriptions, 1, memory_order_relaxed);

    int64_t now = store_now_ms();
    /* First a heartbeat, always: the Go SDK fails a subscription whose
     * first message is anything else, and the Node SDK's subscribe()
     * resolves on the first message. */
    queue_heartbeat(sub, now);
    uint64_t last = t->next_seq - 1, oldest = t->next_seq - t->ring_n;
    if (resume == 0) {
        /* Fresh: only what is published from now on, no discontinuity. */
        sub->sent_seq = last;
    } else {
        sub->sent_seq = resume - 1;
        uint64_t from = resume;
        if (page != 0 && page != t->page) {
            /* Another page: the topic was reset (a restart). Everything
             * buffered of this page follows. */
            queue_discontinuity(sub, resume - 1, oldest - 1, now);
            from = oldest;
        } else if (resume > last + 1) {
            queue_discontinuity(sub, resume - 1, last, now);
            from = last + 1;
        } else if (resume < oldest) {
            /* Older than the buffer (oldest - 1 == last when it is
             * empty). */
            queue_discontinuity(sub, resume - 1, oldest - 1, now);
            from = oldest;
        }
        for (uint64_t seq = from; seq <= last; seq++)
            queue_push(sub, grpc_slice_ref(t->ring[(t->ring_head + (seq - oldest)) % t->ring_cap]),
                       MSG_ITEM, seq, now);
    }
    *ret_sub = sub;
    return 0;
}

void srv_topics_drop_cache(momento_local *s, const char *cache)
{
    size_t cl = strlen(cache);
    char details[160];
    snprintf(details, sizeof(details), "cache not found: %.100s", cache);
    srv_topic *t, *tmp;
    HASH_ITER(hh, s->topics.by_key, t, tmp)
    {
        if (t->cache_len != cl || memcmp(t->key, cache, cl) != 0)
            continue;
        for (srv_sub *sub = t->subs, *next; sub; sub = next) {
            next = sub->next;
            srv_sub_end(sub, GRPC_STATUS_NOT_FOUND, details);
        }
        HASH_DELETE(hh, s->topics.by_key, t);
        topic_free(t);
    }
}

void srv_topics_end_all(momento_local *s, grpc_status_code status, const char *details)
{
    srv_topic *t, *tmp;
    HASH_ITER(hh, s->topics.by_key, t, tmp)
    {
        for (srv_sub *sub = t->subs, *next; sub; sub = next) {
            next = sub->next;
            srv_sub_end(sub, status, details);
        }
    }
}

int64_t srv_topics_tick(momento_local *s, int64_t now)
{
    srv_topics *ts = &s->topics;
    int64_t interval = s->opts.heartbeat_ms;
    if (interval <= 0)
        return INT64_MAX;
    srv_sub *sub;
    while ((sub = ts->idle_head) && sub->last_queued_ms + interval <= now) {
        /* A subscriber with messages still queued is not idle: it only
         * goes to the back. */
        if (sub->q_n == 0)
            queue_heartbeat(sub, now);
        else
            idle_touch(ts, sub, now);
    }
    return sub ? sub->last_queued_ms + interval : INT64_MAX;
}

void srv_topics_destroy(momento_local *s)
{
    srv_topic *t, *tmp;
    HASH_ITER(hh, s->topics.by_key, t, tmp)
    {
        /* Subscriptions belong to their streams, all freed by now; should
         * one remain, it only loses its topic. */
        while (t->subs)
            leave_topic(t->subs);
        HASH_DELETE(hh, s->topics.by_key, t);
        topic_free(t);
    }
}

/* ---- one subscription ------------------------------------------------- */

void srv_sub_set_stream(srv_sub *sub, void *stream)
{
    sub->stream = stream;
}

bool srv_sub_next(srv_sub *sub, grpc_slice *ret_msg, bool *more)
{
    if (sub->ended || sub->q_n == 0)
        return false;
    queued *e = &sub->q[sub->q_head];
    if (sub->lost && e->kind == MSG_ITEM) {
        /* Items were dropped from the queue: say so before the next one. */
        sub->lost = false;
        if (e->seq != sub->sent_seq + 1) {
            *ret_msg = pack_discontinuity(sub->sent_seq, e->seq - 1, sub->page);
            sub->sent_seq = e->seq - 1;
            *more = true;
            return true;
        }
    }
    *ret_msg = e->msg;
    if (e->kind == MSG_HEARTBEAT) {
        atomic_fetch_add_explicit(&sub->s->topic_heartbeats, 1, memory_order_relaxed);
    } else {
        sub->sent_seq = e->seq;
        if (e->kind == MSG_ITEM)
            atomic_fetch_add_explicit(&sub->s->topic_deliveries, 1, memory_order_relaxed);
    }
    sub->q_bytes -= GRPC_SLICE_LENGTH(e->msg);
    sub->q_head = (sub->q_head + 1) % sub->q_cap;
    sub->q_n--;
    *more = sub->q_n > 0;
    return true;
}

bool srv_sub_ended(const srv_sub *sub, grpc_status_code *status, const char **details)
{
    if (!sub->ended)
        return false;
    *status = sub->end_status;
    *details = sub->end_details;
    return true;
}

void srv_sub_end(srv_sub *sub, grpc_status_code status, const char *details)
{
    if (sub->ended)
        return;
    sub->ended = true;
    sub->end_status = status;
    snprintf(sub->end_details, sizeof(sub->end_details), "%s", details);
    leave_topic(sub);
    queue_clear(sub);
    if (sub->stream)
        srv_stream_wake(sub->stream);
}

void srv_sub_free(srv_sub *sub)
{
    if (!sub)
        return;
    leave_topic(sub);
    queue_clear(sub);
    free(sub->q);
    free(sub);
}
