/* Topics and their subscriptions (srv_topics.h; docs/server.md "Topics").
 *
 * A topic is created by its first publish or subscribe. Its items are
 * numbered from 1 within its sequence page, a number taken from the wall
 * clock when the topic is created, so that a topic re-created (by a
 * restarted server, or after it was forgotten) has a larger page than any
 * a subscriber may resume with, and the subscriber learns of the reset by
 * a discontinuity. A publish packs its _SubscriptionItem once, in a
 * message (`tmsg`) that the topic's buffer and each subscriber's queue
 * hold.
 *
 * Memory: every block topics allocate is charged to the store before it is
 * allocated and uncharged when freed, so --max-memory holds topics and
 * items together. A topic without subscribers is forgotten after
 * topic_idle_ms without a publish, when its cache is flushed or deleted,
 * and when memory is needed (the store's reclaim hook): then the least
 * recently used go first, next the buffers of topics with subscribers are
 * emptied, and only then are items evicted. A message is charged once,
 * however many hold it, until the last lets go; what gRPC holds of it
 * after that is gRPC's.
 *
 * A subscription's queue is a ring of messages; its stream (calls.c) takes
 * them one at a time as gRPC takes each message, through the attachment
 * Subscribe's reply carried (sub_ops: sub_next()). A queue counts each
 * message it holds at its full size plus its ring's slots, and may hold
 * the smaller of sub_queue_bytes and max_queued_bytes / subscriptions:
 * past that it loses its oldest entries, and the subscriber is told with a
 * discontinuity before the next item it gets. Subscriptions are also kept
 * in the order of their last queued message, so that the ones due a
 * heartbeat are found at the front without scanning. */
#include "core/srv_topics.h"

#include "core/srv_server.h"
#include "data/srv_list.h"

#include "cachepubsub.pb-c.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <uthash.h>

typedef enum { MSG_ITEM, MSG_DISCONTINUITY, MSG_HEARTBEAT } msg_kind;

/* A packed message: an item, or a discontinuity queued for one
 * subscriber. Its slice lies over `data`; gRPC's last unref frees the
 * block. `holders` counts the buffer and queues holding it (the server
 * thread's own references); the block is charged while there are any. */
typedef struct tmsg {
    grpc_slice slice;
    uint32_t holders;
    uint64_t cost;
    uint8_t data[];
} tmsg;

/* gRPC's refcount object for a slice of ours (new_with_user_data), with
 * its allocator's rounding. */
#define SLICE_REFCOUNT_COST 48u

typedef struct queued {
    tmsg *m;      /* NULL for a heartbeat */
    uint64_t seq; /* an item's number; a discontinuity's new_topic_sequence */
    msg_kind kind;
} queued;

/* A queue's ring starts at this many slots, and is freed once drained
 * past LARGE_RING, so a subscriber that caught up gives its memory back. */
#define MIN_RING 8u
#define LARGE_RING 64u

struct srv_sub {
    momento_local *s;
    srv_topic *topic;             /* NULL once it has left (ended or freed) */
    srv_sub *prev, *next;         /* the topic's subscribers */
    srv_sub *idle_prev, *idle_next;
    int64_t last_queued_ms;       /* when its last message was queued */
    uint64_t page;                /* its topic's page */
    queued *q;                    /* ring: q_n entries from q_head */
    size_t q_head, q_n, q_cap;
    uint64_t q_bytes;             /* the queued messages' lengths */
    uint64_t q_charged;           /* the ring's charge */
    uint64_t cost;                /* this structure's charge */
    /* The last item number the subscriber has been given, or told of by a
     * discontinuity: where a discontinuity after lost items starts. */
    uint64_t sent_seq;
    bool lost;                    /* items were dropped since the last one taken */
    bool ended;
    grpc_status_code end_status;
    char end_details[192];
    /* Whom to tell that a message was queued or the subscription ended:
     * the stream that sends it (calls.c), through the callback it gave
     * (sub_ops.set_wake). NULL until then: nobody is told. */
    srv_wake_fn *wake;
    void *wake_arg;
};

struct srv_topic {
    UT_hash_handle hh;
    srv_topic *list_prev, *list_next;
    srv_topic_list *list;         /* unheard, buffered or NULL (srv_topics) */
    int64_t active_ms;            /* its last publish, or its last subscriber leaving */
    uint64_t page;
    uint64_t next_seq;            /* the number of the next item published */
    tmsg **ring;                  /* the last ring_n items, oldest at ring_head */
    size_t ring_cap, ring_head, ring_n;
    uint64_t ring_bytes;
    uint64_t ring_charged, cost;  /* the charges of its ring and of itself */
    srv_sub *subs;
    size_t n_subs;
    size_t cache_len;             /* key: the cache's name, NUL, the topic's */
    size_t key_len;
    char key[];
};

/* _SubscriptionItem{heartbeat: {}}: field 3, length 0. */
static const uint8_t heartbeat_bytes[] = {0x1a, 0x00};

/* How many idle topics one tick forgets at most, so that a flood of them
 * never stalls the server thread. */
#define IDLE_BUDGET 1000u

/* ---- memory ------------------------------------------------------------ */

static void publish_counts(srv_topics *ts)
{
    atomic_store_explicit(&ts->bytes_seen, ts->charged, memory_order_relaxed);
    atomic_store_explicit(&ts->queued_seen, ts->queued, memory_order_relaxed);
    atomic_store_explicit(&ts->count_seen, HASH_COUNT(ts->by_key), memory_order_relaxed);
}

static bool charge(momento_local *s, uint64_t bytes)
{
    if (store_charge(&s->store, bytes) != 0)
        return false;
    s->topics.charged += bytes;
    publish_counts(&s->topics);
    return true;
}

static void uncharge(momento_local *s, uint64_t bytes)
{
    store_uncharge(&s->store, bytes);
    s->topics.charged -= bytes;
    publish_counts(&s->topics);
}

static uint64_t msg_cost(size_t len)
{
    return store_alloc_cost(sizeof(tmsg) + len) + SLICE_REFCOUNT_COST;
}

static void free_block(void *p)
{
    free(p);
}

/* A message of `len` bytes, charged, held once (by the caller); NULL when
 * there is no room or no memory. */
static tmsg *msg_new(momento_local *s, size_t len)
{
    uint64_t cost = msg_cost(len);
    if (!charge(s, cost))
        return NULL;
    tmsg *m = malloc(sizeof(*m) + len);
    if (!m) {
        uncharge(s, cost);
        return NULL;
    }
    m->slice = grpc_slice_new_with_user_data(m->data, len, free_block, m);
    m->holders = 1;
    m->cost = cost;
    return m;
}

static void msg_release(momento_local *s, tmsg *m)
{
    if (--m->holders)
        return;
    uncharge(s, m->cost);
    grpc_slice_unref(m->slice); /* frees m, unless gRPC still has it */
}

static size_t msg_len(const tmsg *m)
{
    return m ? GRPC_SLICE_LENGTH(m->slice) : sizeof(heartbeat_bytes);
}

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

/* ---- a topic's lists --------------------------------------------------- */

static void list_unlink(srv_topic *t)
{
    srv_topic_list *l = t->list;
    if (!l)
        return;
    SRV_QUEUE_REMOVE(l->head, l->tail, t, list_prev, list_next);
    t->list = NULL;
}

static void list_push_head(srv_topic_list *l, srv_topic *t)
{
    list_unlink(t);
    SRV_QUEUE_PREPEND(l->head, l->tail, t, list_prev, list_next);
    t->list = l;
}

/* Puts `t`, active at `now`, where it now belongs: at the head of the
 * unheard list without subscribers, of the buffered list with subscribers
 * and items buffered, else in neither. */
static void topic_touch(srv_topics *ts, srv_topic *t, int64_t now)
{
    t->active_ms = now;
    if (t->n_subs == 0)
        list_push_head(&ts->unheard, t);
    else if (t->ring_n)
        list_push_head(&ts->buffered, t);
    else
        list_unlink(t);
}

/* ---- a topic's buffer -------------------------------------------------- */

static void buffer_drop_oldest(momento_local *s, srv_topic *t)
{
    tmsg *old = t->ring[t->ring_head];
    t->ring_bytes -= msg_len(old);
    t->ring_head = (t->ring_head + 1) % t->ring_cap;
    t->ring_n--;
    msg_release(s, old);
}

/* Empties the buffer and frees its ring. A subscribed topic leaves the
 * buffered list; an unheard one keeps its place. */
static void buffer_clear(momento_local *s, srv_topic *t)
{
    while (t->ring_n)
        buffer_drop_oldest(s, t);
    free(t->ring);
    t->ring = NULL;
    t->ring_cap = t->ring_head = 0;
    if (t->ring_charged)
        uncharge(s, t->ring_charged);
    t->ring_charged = 0;
    if (t->list == &s->topics.buffered)
        list_unlink(t);
}

/* Holds `m` as the topic's newest item, the oldest leaving past the
 * buffer's limits. Without room or memory for a larger ring the buffer is
 * emptied instead (it holds consecutive items): a resume from an item no
 * longer there gets a discontinuity. */
static void buffer_push(momento_local *s, srv_topic *t, tmsg *m)
{
    size_t limit = s->opts.topic_buffer_items, len = msg_len(m);
    if (limit == 0 || len > SRV_TOPIC_BUFFER_MAX_BYTES) {
        buffer_clear(s, t);
        return;
    }
    while (t->ring_n && (t->ring_n >= limit || t->ring_bytes + len > SRV_TOPIC_BUFFER_MAX_BYTES))
        buffer_drop_oldest(s, t);
    if (t->ring_n == t->ring_cap) {
        /* Grown by doubling up to the limit: a topic with few items keeps
         * a small ring. */
        size_t cap = t->ring_cap ? t->ring_cap * 2 : 16;
        if (cap > limit)
            cap = limit;
        uint64_t cost = store_alloc_cost(cap * sizeof(*t->ring));
        if (!charge(s, cost)) {
            buffer_clear(s, t);
            return;
        }
        tmsg **ring = malloc(cap * sizeof(*ring));
        if (!ring) {
            uncharge(s, cost);
            buffer_clear(s, t);
            return;
        }
        for (size_t i = 0; i < t->ring_n; i++)
            ring[i] = t->ring[(t->ring_head + i) % t->ring_cap];
        free(t->ring);
        if (t->ring_charged)
            uncharge(s, t->ring_charged);
        t->ring = ring;
        t->ring_cap = cap;
        t->ring_head = 0;
        t->ring_charged = cost;
    }
    m->holders++;
    t->ring[(t->ring_head + t->ring_n) % t->ring_cap] = m;
    t->ring_n++;
    t->ring_bytes += len;
}

/* ---- topics ------------------------------------------------------------ */

static uint64_t reclaim(void *ctx, uint64_t want);
static void sub_end(void *obj, grpc_status_code status, const char *details);
/* A subscription as its stream sees it (the ops of srv_attach.h). */
static const srv_attachment_ops sub_ops;

static srv_topic *topic_get(momento_local *s, const char *cache, const char *topic, bool create)
{
    srv_topics *ts = &s->topics;
    size_t cl = strlen(cache), tl = strlen(topic), kl = cl + 1 + tl;
    char stack_key[512];
    char *key = kl <= sizeof(stack_key) ? stack_key : malloc(kl);
    if (!key)
        return NULL;
    memcpy(key, cache, cl + 1);
    memcpy(key + cl + 1, topic, tl);
    srv_topic *t = NULL;
    HASH_FIND(hh, ts->by_key, key, kl, t);
    /* Its share of the hash table as an item's: STORE_ITEM_OVERHEAD. */
    uint64_t cost = store_alloc_cost(sizeof(*t) + kl) + STORE_ITEM_OVERHEAD;
    if (!t && create && charge(s, cost)) {
        if ((t = calloc(1, sizeof(*t) + kl))) {
            memcpy(t->key, key, kl);
            t->key_len = kl;
            t->cache_len = cl;
            t->page = new_page();
            t->next_seq = 1;
            t->cost = cost;
            HASH_ADD_KEYPTR(hh, ts->by_key, t->key, kl, t);
            topic_touch(ts, t, store_now_ms());
            publish_counts(ts);
            /* Only topics have anything to give back: the store asks
             * once there is one. */
            if (!s->store.reclaim)
                store_set_reclaim(&s->store, reclaim, s);
        } else {
            uncharge(s, cost);
        }
    }
    if (key != stack_key)
        free(key);
    return t;
}

/* Forgets a topic without subscribers. */
static void topic_remove(momento_local *s, srv_topic *t)
{
    list_unlink(t);
    HASH_DELETE(hh, s->topics.by_key, t);
    buffer_clear(s, t);
    uncharge(s, t->cost);
    free(t);
}

/* The store needs room: forgets topics without subscribers, least recently
 * active first, then empties the buffers of topics with subscribers,
 * least recently published first, until `want` bytes are freed or nothing
 * is left to give (the topic being written to is left alone). An emptied
 * buffer frees only the items no queue still holds. */
static uint64_t reclaim(void *ctx, uint64_t want)
{
    momento_local *s = ctx;
    srv_topics *ts = &s->topics;
    uint64_t before = ts->charged;
    for (srv_topic *t = ts->unheard.tail, *prev; t && before - ts->charged < want; t = prev) {
        prev = t->list_prev;
        if (t != ts->pinned)
            topic_remove(s, t);
    }
    for (srv_topic *t = ts->buffered.tail, *prev; t && before - ts->charged < want; t = prev) {
        prev = t->list_prev;
        if (t != ts->pinned)
            buffer_clear(s, t);
    }
    return before - ts->charged;
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
    SRV_QUEUE_APPEND(ts->idle_head, ts->idle_tail, sub, idle_prev, idle_next);
}

/* What a queue counts against its bound: its messages, each at its full
 * size, and its ring's slots. */
static uint64_t queue_cost(const srv_sub *sub)
{
    return sub->q_bytes + sub->q_cap * sizeof(queued);
}

/* The most a queue may count now: its own bound, or its share of the
 * server-wide one, whichever is less. */
static uint64_t queue_limit(momento_local *s)
{
    uint64_t limit = s->opts.sub_queue_bytes;
    if (s->opts.max_queued_bytes) {
        uint64_t n = atomic_load_explicit(&s->subscriptions, memory_order_relaxed);
        uint64_t share = s->opts.max_queued_bytes / (n ? n : 1);
        if (share < limit)
            limit = share;
    }
    return limit;
}

/* Gives the ring `cap` slots (0: frees it), keeping its entries (at most
 * `cap`). false, with the ring as it was, without room or memory. */
static bool queue_resize(srv_sub *sub, size_t cap)
{
    momento_local *s = sub->s;
    queued *q = NULL;
    uint64_t cost = 0;
    if (cap) {
        cost = store_alloc_cost(cap * sizeof(*q));
        if (!charge(s, cost))
            return false;
        if (!(q = malloc(cap * sizeof(*q)))) {
            uncharge(s, cost);
            return false;
        }
        for (size_t i = 0; i < sub->q_n; i++)
            q[i] = sub->q[(sub->q_head + i) % sub->q_cap];
    }
    free(sub->q);
    if (sub->q_charged)
        uncharge(s, sub->q_charged);
    s->topics.queued = s->topics.queued - sub->q_cap * sizeof(*q) + cap * sizeof(*q);
    sub->q = q;
    sub->q_cap = cap;
    sub->q_head = 0;
    sub->q_charged = cost;
    publish_counts(&s->topics);
    return true;
}

/* Takes the oldest entry off the queue; the queue's hold on its message
 * passes to the caller. */
static queued queue_pop(srv_sub *sub)
{
    queued e = sub->q[sub->q_head];
    size_t len = msg_len(e.m);
    sub->q_bytes -= len;
    sub->s->topics.queued -= len;
    sub->q_head = (sub->q_head + 1) % sub->q_cap;
    sub->q_n--;
    return e;
}

static void queue_drop_oldest(srv_sub *sub)
{
    queued e = queue_pop(sub);
    if (e.kind == MSG_ITEM)
        sub->lost = true;
    if (e.m)
        msg_release(sub->s, e.m);
    publish_counts(&sub->s->topics);
}

static void queue_clear(srv_sub *sub)
{
    while (sub->q_n)
        queue_drop_oldest(sub);
}

/* Queues `m` (NULL: a heartbeat), the queue taking a hold of its own, and
 * wakes the stream. Past the queue's bound its oldest entries go first;
 * with no slot to be had the message is lost (an item: the subscriber is
 * told, as for one dropped). */
static void queue_push(srv_sub *sub, tmsg *m, msg_kind kind, uint64_t seq, int64_t now)
{
    if (sub->ended)
        return;
    momento_local *s = sub->s;
    size_t len = msg_len(m);
    uint64_t limit = queue_limit(s);
    while (sub->q_n && queue_cost(sub) + len > limit)
        queue_drop_oldest(sub);
    /* A ring grown while the subscription had a larger share. */
    if (sub->q_n == 0 && sub->q_cap > MIN_RING && queue_cost(sub) + len > limit)
        queue_resize(sub, 0);
    if (sub->q_n == sub->q_cap) {
        size_t cap = sub->q_cap ? sub->q_cap * 2 : MIN_RING;
        bool room = sub->q_cap == 0 || sub->q_bytes + len + cap * sizeof(queued) <= limit;
        if (!room || !queue_resize(sub, cap)) {
            if (sub->q_n) {
                queue_drop_oldest(sub); /* its slot takes the new one */
            } else {
                if (kind == MSG_ITEM)
                    sub->lost = true;
                return;
            }
        }
    }
    if (m)
        m->holders++;
    sub->q[(sub->q_head + sub->q_n) % sub->q_cap] = (queued){m, seq, kind};
    sub->q_n++;
    sub->q_bytes += len;
    s->topics.queued += len;
    publish_counts(&s->topics);
    if (sub->topic)
        idle_touch(&s->topics, sub, now);
    if (sub->wake)
        sub->wake(sub->wake_arg);
}

static size_t discontinuity_size(CacheClient__Pubsub__SubscriptionItem *m,
                                 CacheClient__Pubsub__Discontinuity *d, uint64_t last,
                                 uint64_t next, uint64_t page)
{
    d->last_topic_sequence = last;
    d->new_topic_sequence = next;
    d->new_sequence_page = page;
    m->kind_case = CACHE_CLIENT__PUBSUB____SUBSCRIPTION_ITEM__KIND_DISCONTINUITY;
    m->discontinuity = d;
    return protobuf_c_message_get_packed_size(&m->base);
}

/* A discontinuity sent at once (sub_next()), not queued. */
static grpc_slice pack_discontinuity(uint64_t last, uint64_t next, uint64_t page)
{
    CacheClient__Pubsub__Discontinuity d = CACHE_CLIENT__PUBSUB____DISCONTINUITY__INIT;
    CacheClient__Pubsub__SubscriptionItem m = CACHE_CLIENT__PUBSUB____SUBSCRIPTION_ITEM__INIT;
    grpc_slice s = grpc_slice_malloc(discontinuity_size(&m, &d, last, next, page));
    protobuf_c_message_pack(&m.base, GRPC_SLICE_START_PTR(s));
    return s;
}

/* Queues a discontinuity; without room for it, marks items lost instead,
 * which makes sub_next() say the same before the next item. */
static void queue_discontinuity(srv_sub *sub, uint64_t last, uint64_t next, int64_t now)
{
    CacheClient__Pubsub__Discontinuity d = CACHE_CLIENT__PUBSUB____DISCONTINUITY__INIT;
    CacheClient__Pubsub__SubscriptionItem pm = CACHE_CLIENT__PUBSUB____SUBSCRIPTION_ITEM__INIT;
    tmsg *m = msg_new(sub->s, discontinuity_size(&pm, &d, last, next, sub->page));
    if (!m) {
        sub->lost = true;
        return;
    }
    protobuf_c_message_pack(&pm.base, m->data);
    queue_push(sub, m, MSG_DISCONTINUITY, next, now);
    msg_release(sub->s, m);
}

static void queue_heartbeat(srv_sub *sub, int64_t now)
{
    queue_push(sub, NULL, MSG_HEARTBEAT, 0, now);
}

/* Takes the subscription out of its topic and the heartbeat order; a
 * topic left without subscribers starts to idle. */
static void leave_topic(srv_sub *sub)
{
    srv_topic *t = sub->topic;
    if (!t)
        return;
    SRV_LIST_REMOVE(t->subs, sub, prev, next);
    t->n_subs--;
    sub->topic = NULL;
    idle_unlink(&sub->s->topics, sub);
    atomic_fetch_sub_explicit(&sub->s->subscriptions, 1, memory_order_relaxed);
    if (t->n_subs == 0)
        topic_touch(&sub->s->topics, t, store_now_ms());
}

/* ---- publish and subscribe --------------------------------------------- */

int srv_topics_publish(momento_local *s, const char *cache, const char *topic,
                       const ProtobufCMessage *value, uint64_t *ret_seq)
{
    srv_topics *ts = &s->topics;
    srv_topic *t = topic_get(s, cache, topic, true);
    if (!t)
        return SRV_TOPICS_NO_MEMORY;
    CacheClient__Pubsub__TopicItem item = CACHE_CLIENT__PUBSUB____TOPIC_ITEM__INIT;
    item.topic_sequence_number = t->next_seq;
    item.value = (CacheClient__Pubsub__TopicValue *)value;
    item.sequence_page = t->page;
    CacheClient__Pubsub__SubscriptionItem pm = CACHE_CLIENT__PUBSUB____SUBSCRIPTION_ITEM__INIT;
    pm.kind_case = CACHE_CLIENT__PUBSUB____SUBSCRIPTION_ITEM__KIND_ITEM;
    pm.item = &item;
    size_t len = protobuf_c_message_get_packed_size(&pm.base);
    if (s->store.max_bytes && msg_cost(len) > s->store.max_bytes)
        return SRV_TOPICS_TOO_BIG;
    srv_topic *was = ts->pinned;
    ts->pinned = t;
    tmsg *m = msg_new(s, len);
    if (!m && t->ring_n) {
        /* What fills the memory may be this topic's own buffer. */
        buffer_clear(s, t);
        m = msg_new(s, len);
    }
    if (!m) {
        ts->pinned = was;
        return SRV_TOPICS_NO_MEMORY;
    }
    protobuf_c_message_pack(&pm.base, m->data);
    uint64_t seq = t->next_seq++;
    *ret_seq = seq;
    int64_t now = store_now_ms();
    /* A subscriber's stream may end while it is woken (its batch would
     * not start): it leaves the list then, so the next one is read
     * first. */
    for (srv_sub *sub = t->subs, *next; sub; sub = next) {
        next = sub->next;
        queue_push(sub, m, MSG_ITEM, seq, now);
    }
    buffer_push(s, t, m);
    msg_release(s, m);
    topic_touch(ts, t, now);
    ts->pinned = was;
    return 0;
}

int srv_topics_subscribe(momento_local *s, const char *cache, const char *topic, uint64_t resume,
                         uint64_t page, srv_attachment *ret_sub)
{
    srv_topics *ts = &s->topics;
    srv_topic *t = topic_get(s, cache, topic, true);
    if (!t)
        return SRV_TOPICS_NO_MEMORY;
    if (s->opts.max_subscribers && t->n_subs >= s->opts.max_subscribers)
        return SRV_TOPICS_FULL;
    srv_topic *was = ts->pinned;
    ts->pinned = t;
    uint64_t cost = store_alloc_cost(sizeof(srv_sub));
    srv_sub *sub = NULL;
    if (charge(s, cost) && !(sub = calloc(1, sizeof(*sub))))
        uncharge(s, cost);
    if (!sub) {
        ts->pinned = was;
        return SRV_TOPICS_NO_MEMORY;
    }
    sub->s = s;
    sub->cost = cost;
    /* The ring the first heartbeat goes to. */
    if (!queue_resize(sub, MIN_RING)) {
        uncharge(s, cost);
        free(sub);
        ts->pinned = was;
        return SRV_TOPICS_NO_MEMORY;
    }
    sub->topic = t;
    sub->page = t->page;
    SRV_LIST_PUSH(t->subs, sub, prev, next);
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
            /* Another page: the topic was reset (a restart, or it was
             * forgotten). Everything buffered of this page follows. */
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
            queue_push(sub, t->ring[(t->ring_head + (seq - oldest)) % t->ring_cap], MSG_ITEM, seq,
                       now);
    }
    topic_touch(ts, t, now);
    ts->pinned = was;
    *ret_sub = (srv_attachment){.ops = &sub_ops, .obj = sub};
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
            sub_end(sub, GRPC_STATUS_NOT_FOUND, details);
        }
        topic_remove(s, t);
    }
}

void srv_topics_flush_cache(momento_local *s, const char *cache)
{
    size_t cl = strlen(cache);
    srv_topic *t, *tmp;
    HASH_ITER(hh, s->topics.by_key, t, tmp)
    {
        if (t->cache_len != cl || memcmp(t->key, cache, cl) != 0)
            continue;
        if (t->n_subs == 0)
            topic_remove(s, t);
        else
            buffer_clear(s, t);
    }
}

void srv_topics_end_all(momento_local *s, grpc_status_code status, const char *details)
{
    srv_topic *t, *tmp;
    HASH_ITER(hh, s->topics.by_key, t, tmp)
    {
        for (srv_sub *sub = t->subs, *next; sub; sub = next) {
            next = sub->next;
            sub_end(sub, status, details);
        }
    }
}

int64_t srv_topics_tick(momento_local *s, int64_t now)
{
    srv_topics *ts = &s->topics;
    int64_t due = INT64_MAX;
    int64_t interval = s->opts.heartbeat_ms;
    if (interval > 0) {
        srv_sub *sub;
        while ((sub = ts->idle_head) && sub->last_queued_ms + interval <= now) {
            /* To the back first, also for a heartbeat that finds no slot;
             * a subscriber with messages still queued is not idle: it only
             * goes there. The heartbeat wakes the stream, which may end
             * the subscription (the server stopping, sub_end() taking
             * it out of this order) or free it: touched after, it went
             * back into the order it had left, and stayed there once
             * freed. */
            idle_touch(ts, sub, now);
            if (sub->q_n == 0)
                queue_heartbeat(sub, now);
        }
        if (sub)
            due = sub->last_queued_ms + interval;
    }
    int64_t idle = s->opts.topic_idle_ms;
    if (idle > 0) {
        srv_topic *t;
        unsigned budget = IDLE_BUDGET;
        while ((t = ts->unheard.tail) && t->active_ms + idle <= now && budget) {
            topic_remove(s, t);
            budget--;
        }
        if (t) {
            int64_t at = budget ? t->active_ms + idle : now;
            if (at < due)
                due = at;
        }
    }
    return due;
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
        topic_remove(s, t);
    }
}

/* ---- one subscription: a reply's attachment (srv_attach.h) ----------- */

static void sub_set_wake(void *obj, srv_wake_fn *wake, void *arg)
{
    srv_sub *sub = obj;
    sub->wake = wake;
    sub->wake_arg = arg;
}

static bool sub_next(void *obj, grpc_slice *ret_msg, bool *more)
{
    srv_sub *sub = obj;
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
    queued taken = queue_pop(sub);
    if (taken.m) {
        *ret_msg = grpc_slice_ref(taken.m->slice);
        msg_release(sub->s, taken.m);
    } else {
        *ret_msg = grpc_slice_from_static_buffer(heartbeat_bytes, sizeof(heartbeat_bytes));
    }
    if (taken.kind == MSG_HEARTBEAT) {
        atomic_fetch_add_explicit(&sub->s->topic_heartbeats, 1, memory_order_relaxed);
    } else {
        sub->sent_seq = taken.seq;
        if (taken.kind == MSG_ITEM)
            atomic_fetch_add_explicit(&sub->s->topic_deliveries, 1, memory_order_relaxed);
    }
    *more = sub->q_n > 0;
    /* Caught up after a backlog: the large ring goes back. */
    if (sub->q_n == 0 && sub->q_cap > LARGE_RING)
        queue_resize(sub, 0);
    publish_counts(&sub->s->topics);
    return true;
}

static bool sub_ended(const void *obj, grpc_status_code *status, const char **details)
{
    const srv_sub *sub = obj;
    if (!sub->ended)
        return false;
    *status = sub->end_status;
    *details = sub->end_details;
    return true;
}

static void sub_end(void *obj, grpc_status_code status, const char *details)
{
    srv_sub *sub = obj;
    if (sub->ended)
        return;
    sub->ended = true;
    sub->end_status = status;
    snprintf(sub->end_details, sizeof(sub->end_details), "%s", details);
    leave_topic(sub);
    queue_clear(sub);
    queue_resize(sub, 0);
    if (sub->wake)
        sub->wake(sub->wake_arg);
}

static void sub_free(void *obj)
{
    srv_sub *sub = obj;
    if (!sub)
        return;
    leave_topic(sub);
    queue_clear(sub);
    queue_resize(sub, 0);
    uncharge(sub->s, sub->cost);
    free(sub);
}

static const srv_attachment_ops sub_ops = {
    .set_wake = sub_set_wake,
    .next = sub_next,
    .ended = sub_ended,
    .end = sub_end,
    .free = sub_free,
};
