/* Invalidation of near caches across clients (near_sync.h).
 *
 * Publishing: the client's write observer appends each written key to a
 * pending message, on the writer's thread, under this part's lock; the
 * completion thread sends it (a timer fired at once), one publish at a
 * time: keys written while one is on its way wait for its answer and go
 * together in the next, so a burst of writes costs a few publishes, not
 * one each, and a writer's thread never waits on the topic. More keys than
 * one message holds make it a reset (every receiver drops everything):
 * losing keys silently would leave entries stale up to the bound.
 *
 * Receiving: the library's own subscription to the topic (its events on
 * the completion thread in every mode, topics/subscription.h). A key
 * another client published drops this client's entry for it. Whatever may
 * have hidden a message - the stream connecting (a first connection or a
 * reconnection: what was published meanwhile is unknown), breaking,
 * skipping items, ending, or a message not in our format - drops every
 * entry instead. A subscription that ends with an error (the cache does
 * not exist yet, say) is made again a second later, until the client is
 * freed. */
#include "layers/near_sync.h"

#include "base/alloc.h"
#include "base/wire.h"
#include "clock.h"
#include "engine/call.h"
#include "engine/client.h"
#include "engine/timer.h"
#include "layers/near.h"
#include "model/config.h"
#include "model/validate.h"
#include "topics/publish.h"
#include "topics/subscription.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

/* The most a message carries before it becomes a reset: far below
 * Momento's limit on a topic item, and small enough that a burst's keys
 * cost a receiver little to walk. */
#define MAX_MESSAGE (32u * 1024u)
/* The wait before subscribing again after the subscription ended. */
#define RESUBSCRIBE_MS 1000

typedef struct near_sync {
    momento__part part; /* the client's hold on it */
    momento__write_observer obs;
    momento_client *client;
    uint64_t id;                 /* this client's, in each message it sends */
    momento__timer send_timer;   /* sends the pending message (completion thread) */
    momento__timer retry_timer;  /* subscribes again */

    pthread_mutex_t lock;        /* guards what follows */
    uint8_t *pending;            /* header space, then the keys written since the last send */
    size_t len, cap;
    uint64_t pending_keys;
    bool overflow;               /* more keys than a message holds: send a reset */
    bool in_flight;              /* a publish is on its way */
    bool scheduled;              /* send_timer is due */
    bool detached;               /* the client's free took the observer off its list */
    uint64_t keys_published, publishes, publish_errors, keys_heard, resets;
    bool subscribed;             /* the topic's stream is up */
} near_sync;

static size_t varint_put(uint8_t *p, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        p[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    p[n++] = (uint8_t)v;
    return n;
}

/* ---- publishing -------------------------------------------------------- */

/* Appends (cache, key) to the pending message; false when it does not fit
 * (or there is no memory for it): the message becomes a reset. */
static bool append_locked(near_sync *s, const char *cache, size_t cache_len, const void *key,
                          size_t key_len)
{
    size_t need = 20 + cache_len + key_len;
    if (s->len + need > MAX_MESSAGE + MOMENTO__NEAR_SYNC_HEADER)
        return false;
    if (!s->pending) {
        s->len = MOMENTO__NEAR_SYNC_HEADER;
        s->cap = 0;
    }
    if (s->len + need > s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 256;
        while (cap < s->len + need)
            cap *= 2;
        uint8_t *p = realloc(s->pending, cap);
        if (!p)
            return false;
        s->pending = p;
        s->cap = cap;
    }
    s->len += varint_put(s->pending + s->len, cache_len);
    memcpy(s->pending + s->len, cache, cache_len);
    s->len += cache_len;
    s->len += varint_put(s->pending + s->len, key_len);
    memcpy(s->pending + s->len, key, key_len);
    s->len += key_len;
    return true;
}

/* The client's write observer: a write of (cache, key) is being submitted. */
static void written(momento__write_observer *o, const char *cache, size_t cache_len,
                    const void *key, size_t key_len)
{
    near_sync *s = (near_sync *)((char *)o - offsetof(near_sync, obs));
    pthread_mutex_lock(&s->lock);
    if (!s->overflow && !append_locked(s, cache, cache_len, key, key_len))
        s->overflow = true;
    s->pending_keys++;
    bool kick = !s->in_flight && !s->scheduled;
    s->scheduled |= kick;
    pthread_mutex_unlock(&s->lock);
    if (kick)
        momento__timer_fire_soon(s->client, &s->send_timer);
}

/* The client's write observer: every key of a cache is being written (a
 * flush, a delete of the cache). Told to the others as a reset: the
 * message format names keys, and a cache's whole set of them is not worth
 * a format of its own. */
static void flushed(momento__write_observer *o, const char *cache, size_t cache_len)
{
    (void)cache, (void)cache_len;
    near_sync *s = (near_sync *)((char *)o - offsetof(near_sync, obs));
    pthread_mutex_lock(&s->lock);
    s->overflow = true;
    bool kick = !s->in_flight && !s->scheduled;
    s->scheduled |= kick;
    pthread_mutex_unlock(&s->lock);
    if (kick)
        momento__timer_fire_soon(s->client, &s->send_timer);
}

static void detached(momento__write_observer *o)
{
    near_sync *s = (near_sync *)((char *)o - offsetof(near_sync, obs));
    s->detached = true;
}

static void send_pending(momento__timer *t);

/* A publish is over (completion thread: the library's own callback). */
static void published(const momento_result *r, void *userdata)
{
    near_sync *s = userdata;
    pthread_mutex_lock(&s->lock);
    s->in_flight = false;
    if (momento_result_error(r) != MOMENTO_OK)
        s->publish_errors++;
    bool kick = (s->pending_keys || s->overflow) && !s->scheduled;
    s->scheduled |= kick;
    pthread_mutex_unlock(&s->lock);
    if (kick)
        momento__timer_fire_soon(s->client, &s->send_timer);
}

/* Completion thread: the pending keys, as one message. */
static void send_pending(momento__timer *t)
{
    near_sync *s = (near_sync *)((char *)t - offsetof(near_sync, send_timer));
    momento_client *c = s->client;
    pthread_mutex_lock(&s->lock);
    s->scheduled = false;
    if (s->in_flight || (!s->pending_keys && !s->overflow)) {
        pthread_mutex_unlock(&s->lock);
        return;
    }
    uint8_t reset_only[MOMENTO__NEAR_SYNC_HEADER];
    bool reset = s->overflow;
    uint8_t *msg = reset ? reset_only : s->pending;
    size_t len = reset ? sizeof(reset_only) : s->len;
    uint8_t *owned = s->pending;
    uint64_t keys = s->pending_keys;
    s->pending = NULL;
    s->len = s->cap = 0;
    s->pending_keys = 0;
    s->overflow = false;
    s->in_flight = true;
    pthread_mutex_unlock(&s->lock);

    msg[0] = MOMENTO__NEAR_SYNC_VERSION;
    msg[1] = reset ? MOMENTO__NEAR_SYNC_RESET : 0;
    for (int i = 0; i < 8; i++)
        msg[2 + i] = (uint8_t)(s->id >> (8 * i));
    momento__call_opts co;
    momento__call_opts_from(c, NULL, &co);
    co.no_metrics = true; /* the library's own: not the application's request */
    int rc = momento__topic_publish_send(c, c->cfg.near_sync_cache, c->cfg.near_sync_topic, msg,
                                         len, false, &co, published, s);
    free(owned);
    pthread_mutex_lock(&s->lock);
    if (rc == MOMENTO_OK) {
        s->publishes++;
        s->keys_published += keys;
    } else { /* the client is closing, or no memory: its keys are lost */
        s->in_flight = false;
        s->publish_errors++;
    }
    pthread_mutex_unlock(&s->lock);
}

/* ---- receiving --------------------------------------------------------- */

/* Every entry dropped: what the topic said meanwhile may be missed. */
static void reset(near_sync *s)
{
    momento__near_reset(momento__near_made(s->client));
    pthread_mutex_lock(&s->lock);
    s->resets++;
    pthread_mutex_unlock(&s->lock);
}

/* One message from the topic: its keys' entries dropped, or all of them. */
static void on_item(near_sync *s, const uint8_t *p, size_t len)
{
    momento__near *n = momento__near_made(s->client);
    if (len < MOMENTO__NEAR_SYNC_HEADER || p[0] != MOMENTO__NEAR_SYNC_VERSION) {
        reset(s); /* not ours: whatever it says is unknown */
        return;
    }
    uint64_t from = 0;
    for (int i = 0; i < 8; i++)
        from |= (uint64_t)p[2 + i] << (8 * i);
    if (from == s->id) /* our own writes dropped our entries as they were submitted */
        return;
    if (p[1] & MOMENTO__NEAR_SYNC_RESET) {
        reset(s);
        return;
    }
    const uint8_t *at = p + MOMENTO__NEAR_SYNC_HEADER, *end = p + len;
    uint64_t heard = 0;
    while (at < end) {
        const uint8_t *cache, *key;
        size_t cache_len, key_len;
        if (!momento__wire_bytes(&at, end, &cache, &cache_len) ||
            !momento__wire_bytes(&at, end, &key, &key_len)) {
            reset(s); /* damaged: its remaining keys are unknown */
            break;
        }
        momento__near_invalidate(n, (const char *)cache, cache_len, key, key_len);
        heard++;
    }
    pthread_mutex_lock(&s->lock);
    s->keys_heard += heard;
    pthread_mutex_unlock(&s->lock);
}

/* The subscription's events: the completion thread, in every mode. */
static void heard(momento_subscription *sub, const momento_topic_event *ev, void *userdata)
{
    (void)sub;
    near_sync *s = userdata;
    switch (ev->kind) {
    case MOMENTO_TOPIC_ITEM:
        on_item(s, ev->value, ev->value_len);
        break;
    case MOMENTO_TOPIC_HEARTBEAT:
        break;
    case MOMENTO_TOPIC_CONNECTED:
    case MOMENTO_TOPIC_CONNECTION_LOST:
    case MOMENTO_TOPIC_END:
        pthread_mutex_lock(&s->lock);
        s->subscribed = ev->kind == MOMENTO_TOPIC_CONNECTED;
        pthread_mutex_unlock(&s->lock);
        reset(s);
        if (ev->kind == MOMENTO_TOPIC_END && ev->error != MOMENTO_ERR_CLOSED)
            momento__timer_arm(s->client, &s->retry_timer,
                               momento__now_ns() + (int64_t)RESUBSCRIBE_MS * 1000000, true);
        break;
    case MOMENTO_TOPIC_DISCONTINUITY: /* items were skipped */
    default:
        reset(s);
        break;
    }
}

static int subscribe(near_sync *s)
{
    momento_client *c = s->client;
    return momento__topic_subscribe_own(c, c->cfg.near_sync_cache, c->cfg.near_sync_topic, NULL,
                                        heard, s);
}

/* Completion thread: subscribing again, a while after the last one ended. */
static void resubscribe(momento__timer *t)
{
    near_sync *s = (near_sync *)((char *)t - offsetof(near_sync, retry_timer));
    int rc = subscribe(s);
    if (rc != MOMENTO_OK && rc != MOMENTO_ERR_CLOSED)
        momento__timer_arm(s->client, &s->retry_timer,
                           momento__now_ns() + (int64_t)RESUBSCRIBE_MS * 1000000, true);
}

/* ---- the part ---------------------------------------------------------- */

static void release(momento__part *p)
{
    near_sync *s = (near_sync *)p;
    if (!s->detached)
        momento__client_unobserve_writes(s->client, &s->obs);
    free(s->pending);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

static uint64_t random_id(momento_client *c)
{
    uint64_t id = 0;
    if (getrandom(&id, sizeof(id), GRND_NONBLOCK) == (ssize_t)sizeof(id) && id)
        return id;
    /* No entropy yet (early boot): distinct enough for telling clients
     * apart, which is all the id is for. */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec) ^
           ((uint64_t)(uintptr_t)c << 16) ^ (uint64_t)getpid() ^ 1;
}

void momento__near_sync_start(momento_client *c)
{
    near_sync *s = momento__calloc(1, sizeof(*s));
    if (!s)
        return;
    s->part.release = release;
    s->client = c;
    s->id = random_id(c);
    pthread_mutex_init(&s->lock, NULL);
    momento__timer_init(&s->send_timer, send_pending);
    momento__timer_init(&s->retry_timer, resubscribe);
    s->obs.written = written;
    s->obs.flushed = flushed;
    s->obs.detached = detached;
    c->near_sync = &s->part;
    momento__client_observe_writes(c, &s->obs);
    if (!c->cfg.near_max_bytes)
        return; /* no near cache to keep fresh: it only publishes */
    if (subscribe(s) != MOMENTO_OK)
        momento__timer_arm(c, &s->retry_timer,
                           momento__now_ns() + (int64_t)RESUBSCRIBE_MS * 1000000, true);
}

int momento_config_set_near_cache_invalidation(momento_config *cfg, const char *cache,
                                               const char *topic)
{
    if (!cfg)
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT, "cfg is NULL");
    if (!cache && !topic) {
        cfg->near_sync_cache[0] = cfg->near_sync_topic[0] = '\0';
        cfg->on_client_new = NULL;
        return MOMENTO_OK;
    }
    if (!cache || !topic)
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT,
                               "the invalidation topic needs both a cache and a topic (or neither, to turn it off)");
    MOMENTO__CHECK(momento__check_cache_name(cache));
    MOMENTO__CHECK(momento__check_topic_name(topic));
    if (strlen(cache) >= sizeof(cfg->near_sync_cache) || strlen(topic) >= sizeof(cfg->near_sync_topic))
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT,
                               "the invalidation topic's cache and topic names must be under %zu bytes",
                               sizeof(cfg->near_sync_topic));
    memcpy(cfg->near_sync_cache, cache, strlen(cache) + 1);
    memcpy(cfg->near_sync_topic, topic, strlen(topic) + 1);
    cfg->on_client_new = momento__near_sync_start;
    return MOMENTO_OK;
}

int momento_client_near_cache_stats_get(const momento_client *c, momento_near_cache_stats *ret,
                                        size_t size)
{
    if (!c || !ret)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    momento_near_cache_stats snapshot;
    momento__near_stats(momento__near_made((momento_client *)c), &snapshot);
    if (c->near_sync) {
        near_sync *s = (near_sync *)c->near_sync;
        pthread_mutex_lock(&s->lock);
        snapshot.keys_published = s->keys_published;
        snapshot.publishes = s->publishes;
        snapshot.publish_errors = s->publish_errors;
        snapshot.keys_heard = s->keys_heard;
        snapshot.resets = s->resets;
        snapshot.subscribed = s->subscribed;
        pthread_mutex_unlock(&s->lock);
    }
    memcpy(ret, &snapshot, size < sizeof(snapshot) ? size : sizeof(snapshot));
    return MOMENTO_OK;
}
