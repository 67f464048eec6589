/* Topic subscriptions. A subscription (a member) hears the events of a
 * stream (a group): one long-lived server stream at a time, read a message
 * at a time on the client's completion thread, opened again after it
 * breaks from where the last one stopped. Subscriptions of one client to
 * the same topic, with the same timings and no position of their own,
 * share one stream: the server sends each item once to this client, and
 * the library hands it to every member (MOMENTO_SUBSCRIBE_OWN_STREAM opts
 * out). A new member joins only a stream that is up, and hears what
 * arrives from then on, as a fresh subscription would.
 *
 * Both are requests the client tracks (client.h), so that
 * momento_client_free() ends them: a group's stream is cancelled, or its
 * wait for a resubscribe cut short (`track.wake`); a member, which never
 * has a call, is woken through its own timer and ends with
 * MOMENTO_ERR_CLOSED. Neither counts as an RPC for batching.
 *
 * Threads: everything that happens to a stream, and every event, runs on
 * the completion thread. Other threads only join a group (subscribe) and
 * mark a member unsubscribed, then wake it through its timer; a member
 * leaves its group, and gets its END, on the completion thread only. So
 * the group's loop over its members cannot meet a member being freed.
 *
 * A group's states, changed under its lock:
 *   STARTING   a stream is open, no message yet (first-message timer armed)
 *   STREAMING  messages arrive (idle timer armed, checked lazily)
 *   WAITING    between streams (resubscribe timer armed)
 *   ENDED      it has ended its members and is going
 * One timer serves the three, since only one is ever wanted at a time.
 *
 * A member's memory lives while either reference does: the library's
 * (until its END event's callback returns) and the caller's (until
 * momento_subscription_free()). A group is freed once it has ended. */
#include "topics/subscription.h"

#include "base/alloc.h"
#include "base/wire.h"
#include "clock.h"
#include "engine/client.h"
#include "engine/completion.h"
#include "engine/respond.h"
#include "model/validate.h"
#include "transport/transport.h"

#include "momento/topics.h"

#include "cachepubsub.pb-c.h"

#include <grpc/support/time.h>
#include <pthread.h>
#include <stdalign.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utlist.h>

#define DEFAULT_RESUBSCRIBE_MS 500u /* the official SDKs' fixed delay */
#define DEFAULT_IDLE_MS 30000u

typedef enum { S_STARTING, S_STREAMING, S_WAITING, S_ENDED } sub_state;

typedef struct sub_group sub_group;

struct momento_subscription {
    momento__tracked track;     /* first: the client's view; never a call */
    momento_client *client;
    sub_group *group;           /* its stream; NULL once it has left */
    momento_topic_callback cb;
    void *userdata;
    unsigned flags;
    bool internal;              /* the library's own: events at once (subscription.h) */
    momento__timer timer;       /* its CONNECTED on joining, its END */
    momento_subscription *prev, *next; /* the group's members */

    pthread_mutex_t lock;       /* guards what follows */
    int refs;
    bool unsubscribed;          /* momento_topic_unsubscribe() was called */
    bool ended;                 /* END delivered (or being delivered) */
    bool greet;                 /* joined a stream that is up: CONNECTED due */
    momento_subscription_stats stats;
};

struct sub_group {
    momento__tracked track;     /* first: the client's view */
    momento_client *client;
    struct sub_group *next_shared; /* the client's joinable groups */
    bool shared;
    char *cache, *topic;
    uint32_t first_ms, resubscribe_ms, idle_ms;
    momento__timer timer;

    pthread_mutex_t lock;       /* guards what follows, up to the stream */
    momento_subscription *members;
    size_t n_members;
    sub_state state;
    bool lost_reported;         /* CONNECTION_LOST sent for the current break */
    bool ever_connected;
    bool opened;                /* a stream was opened before */
    bool have_position;         /* last_seq / page name a point in the topic */
    uint64_t last_seq, page;

    /* The current stream, and the members' snapshot: completion thread. */
    /* The stream is one attempt of the transport the client routes
     * TopicSubscribe to (transport/transport.h), a live one (`on_msg`),
     * in this allocation after the headers; prepared again for each
     * stream. */
    momento__transport *transport;
    momento__attempt *att;
    momento__wire_request rq;   /* the current stream's request */
    bool on_wire;               /* prepared and not yet ended */
    bool got_message;           /* this stream brought a message */
    int64_t last_msg_ns;
    const char *local_why;      /* why we cancelled it ourselves, or NULL */
    int local_status;           /* and the status it ends with for us */
    char *publisher;            /* the last item's publisher id, NUL-terminated */
    size_t publisher_cap;
    momento_subscription **snap; /* the members an event goes to */
    size_t snap_cap;
    size_t n_md;
    grpc_metadata md[];
};

/* ---- members ------------------------------------------------------------ */

static void member_unref(momento_subscription *m)
{
    pthread_mutex_lock(&m->lock);
    bool last = --m->refs == 0;
    pthread_mutex_unlock(&m->lock);
    if (!last)
        return;
    pthread_mutex_destroy(&m->lock);
    free(m);
}

static void member_ref(momento_subscription *m)
{
    pthread_mutex_lock(&m->lock);
    m->refs++;
    pthread_mutex_unlock(&m->lock);
}

static void sync_cb(momento_subscription *s, const momento_topic_event *ev, void *userdata);

static void emit(momento_subscription *m, const momento_topic_event *ev)
{
    if (m->cb == sync_cb) /* the library's own: it forwards (dispatch.c) */
        sync_cb(m, ev, m->userdata);
    else if (m->internal) /* the library's own too, in every mode */
        m->cb(m, ev, m->userdata);
    else
        momento__respond_topic(m->client, m->cb, m, ev, m->userdata, member_ref, member_unref);
}

/* Delivers `m`'s END (once), then lets the client forget it and drops the
 * library's reference. `m` has left its group. Completion thread, no lock
 * held. */
static void member_end(momento_subscription *m, int error, const char *message)
{
    pthread_mutex_lock(&m->lock);
    if (m->ended) {
        pthread_mutex_unlock(&m->lock);
        return;
    }
    m->ended = true;
    m->stats.connected = 0;
    m->stats.ended = 1;
    pthread_mutex_unlock(&m->lock);

    momento_topic_event ev = {.kind = MOMENTO_TOPIC_END, .error = error,
                              .message = message ? message : "", .publisher_id = ""};
    emit(m, &ev);
    /* Off the in-flight list first: until then a client free (from the
     * callback, or a thread it woke) may queue the timer to end it. Then
     * nothing can queue it: the timer comes off the client's lists for
     * good before the memory may go. */
    momento_client *c = m->client;
    momento__client_retire(c, &m->track);
    momento__timer_disarm(c, &m->timer);
    member_unref(m);
}

static void group_member_left(sub_group *g);

/* Takes `m` out of its group (completion thread). */
static void member_leave(momento_subscription *m)
{
    sub_group *g = m->group;
    if (!g)
        return;
    pthread_mutex_lock(&g->lock);
    DL_DELETE(g->members, m);
    g->n_members--;
    pthread_mutex_unlock(&g->lock);
    m->group = NULL;
    group_member_left(g);
}

/* The member's timer: its END after an unsubscribe or when the client is
 * being freed, or its CONNECTED after joining a stream that is up. */
static void member_timer(momento__timer *t)
{
    momento_subscription *m =
        (momento_subscription *)((char *)t - offsetof(momento_subscription, timer));
    pthread_mutex_lock(&m->lock);
    bool ended = m->ended, unsubscribed = m->unsubscribed, greet = m->greet;
    m->greet = false;
    if (greet && !unsubscribed)
        m->stats.connected = 1;
    pthread_mutex_unlock(&m->lock);
    if (ended)
        return;
    if (unsubscribed || momento__client_closing(m->client)) {
        member_leave(m);
        member_end(m, unsubscribed ? MOMENTO_OK : MOMENTO_ERR_CLOSED,
                   unsubscribed ? "unsubscribed" : "the client was freed");
        return;
    }
    if (greet) {
        momento_topic_event ev = {.kind = MOMENTO_TOPIC_CONNECTED, .publisher_id = "",
                                  .message = ""};
        emit(m, &ev);
    }
}

/* ---- a group's events, to each member ------------------------------------ */

/* Fills g->snap with the members an event goes to; returns how many. They
 * stay valid through the event: members leave on this thread only. */
static size_t snapshot(sub_group *g)
{
    pthread_mutex_lock(&g->lock);
    if (g->n_members > g->snap_cap) {
        size_t cap = g->n_members * 2;
        momento_subscription **grown = momento__realloc(g->snap, cap * sizeof(*grown));
        if (grown) {
            g->snap = grown;
            g->snap_cap = cap;
        }
    }
    size_t n = 0;
    momento_subscription *m;
    DL_FOREACH(g->members, m)
    {
        if (n == g->snap_cap)
            break; /* out of memory for a longer list: the first ones hear it */
        g->snap[n++] = m;
    }
    pthread_mutex_unlock(&g->lock);
    return n;
}

/* Sends `ev` to every listening member (a heartbeat only to those that
 * asked), counting it first in each one's stats at `stat_offset` when
 * `counted`, and setting their position from it when `position`. A member
 * that joined since the last event hears its CONNECTED first. */
static void broadcast(sub_group *g, momento_topic_event *ev, size_t stat_offset, bool counted,
                      bool position)
{
    static const momento_topic_event connected = {.kind = MOMENTO_TOPIC_CONNECTED,
                                                  .publisher_id = "", .message = ""};
    size_t n = snapshot(g);
    for (size_t i = 0; i < n; i++) {
        momento_subscription *m = g->snap[i];
        pthread_mutex_lock(&m->lock);
        bool on = !m->unsubscribed && !m->ended;
        bool greet = on && m->greet;
        if (greet)
            m->greet = false;
        if (on && counted)
            (*(uint64_t *)((char *)&m->stats + stat_offset))++;
        if (on && position) {
            bool item = ev->kind == MOMENTO_TOPIC_ITEM;
            m->stats.last_sequence_number = item ? ev->sequence_number : ev->new_sequence_number;
            m->stats.sequence_page = item ? ev->sequence_page : ev->new_sequence_page;
        }
        if (greet || (on && ev->kind == MOMENTO_TOPIC_CONNECTED))
            m->stats.connected = 1;
        if (on && ev->kind == MOMENTO_TOPIC_CONNECTION_LOST)
            m->stats.connected = 0;
        bool deliver = on && (ev->kind != MOMENTO_TOPIC_HEARTBEAT ||
                              (m->flags & MOMENTO_SUBSCRIBE_HEARTBEATS));
        pthread_mutex_unlock(&m->lock);
        if (greet && ev->kind != MOMENTO_TOPIC_CONNECTED)
            emit(m, &connected);
        if (deliver)
            emit(m, ev);
    }
}

#define STAT(field) offsetof(momento_subscription_stats, field), true

/* A new group's place among the client's streams: as the SDKs, at most
 * MOMENTO_STREAMS_PER_CONNECTION per stream channel, refused past that at
 * once rather than queued behind other streams. Any thread. */
static int stream_place_take(momento_client *c)
{
    uint32_t cap = c->cfg.stream_channels * MOMENTO_STREAMS_PER_CONNECTION;
    pthread_mutex_lock(&c->topics_lock);
    bool room = c->n_streams < cap;
    c->n_streams += room;
    pthread_mutex_unlock(&c->topics_lock);
    if (room)
        return MOMENTO_OK;
    return momento__refuse(MOMENTO_ERR_LIMIT_EXCEEDED,
                           "already at the maximum number of subscriptions: %u streams (%u "
                           "stream channels x %u, momento_config_set_stream_channels())",
                           cap, c->cfg.stream_channels, MOMENTO_STREAMS_PER_CONNECTION);
}

static void stream_place_free(momento_client *c)
{
    pthread_mutex_lock(&c->topics_lock);
    c->n_streams--;
    pthread_mutex_unlock(&c->topics_lock);
}

/* Frees a group's lock, buffers and itself: at its end, and when one just
 * made is not taken (no memory, or a client that refuses it). The one list
 * of what a group owns. */
static void group_free(sub_group *g)
{
    pthread_mutex_destroy(&g->lock);
    free(g->cache);
    free(g->topic);
    free(g->publisher);
    free(g->snap);
    free(g);
}

/* Ends the group: every member gets its END with `error` (none when it has
 * no members left), the client forgets the group, and it goes. Completion
 * thread, no stream open. */
static void group_end(sub_group *g, int error, const char *message)
{
    momento_client *c = g->client;
    pthread_mutex_lock(&g->lock);
    g->state = S_ENDED;
    pthread_mutex_unlock(&g->lock);
    if (g->shared) {
        /* No newcomer may join it from now on. */
        pthread_mutex_lock(&c->topics_lock);
        sub_group **p = (sub_group **)&c->topic_groups;
        while (*p && *p != g)
            p = &(*p)->next_shared;
        if (*p)
            *p = g->next_shared;
        pthread_mutex_unlock(&c->topics_lock);
    }
    for (;;) {
        pthread_mutex_lock(&g->lock);
        momento_subscription *m = g->members;
        if (m) {
            DL_DELETE(g->members, m);
            g->n_members--;
        }
        pthread_mutex_unlock(&g->lock);
        if (!m)
            break;
        m->group = NULL;
        pthread_mutex_lock(&m->lock);
        bool unsubscribed = m->unsubscribed;
        pthread_mutex_unlock(&m->lock);
        member_end(m, unsubscribed ? MOMENTO_OK : error,
                   unsubscribed ? "unsubscribed" : message);
    }
    momento__client_retire(c, &g->track);
    momento__timer_disarm(c, &g->timer);
    stream_place_free(c);
    group_free(g);
}
/* ---- the wire: one _SubscriptionItem ---------------------------------- */

typedef struct sub_msg {
    int kind;                   /* 1 item, 2 discontinuity, 3 heartbeat, 0 unknown */
    uint64_t seq, page;
    const uint8_t *value;
    size_t value_len;
    int is_text;
    bool has_value;
    const uint8_t *publisher;
    size_t publisher_len;
    uint64_t d_last, d_new, d_page;
} sub_msg;

static bool decode_value(const uint8_t *p, const uint8_t *end, sub_msg *m)
{
    while (p < end) {
        unsigned field, type;
        if (!momento__wire_tag(&p, end, &field, &type))
            return false;
        if ((field == 1 || field == 2) && type == 2) { /* text, binary: the last wins */
            if (!momento__wire_bytes(&p, end, &m->value, &m->value_len))
                return false;
            /* is_text means valid UTF-8: a server's "text" that is not is
             * delivered as the bytes it is. */
            m->is_text = field == 1 && momento__is_utf8(m->value, m->value_len);
            m->has_value = true;
        } else if (field == 0 || !momento__wire_skip(&p, end, type)) {
            return false;
        }
    }
    return true;
}

static bool decode_item(const uint8_t *p, const uint8_t *end, sub_msg *m)
{
    while (p < end) {
        unsigned field, type;
        if (!momento__wire_tag(&p, end, &field, &type))
            return false;
        if (field == 1 && type == 0) {
            if (!momento__wire_varint(&p, end, &m->seq))
                return false;
        } else if (field == 2 && type == 2) {
            const uint8_t *b;
            size_t n;
            if (!momento__wire_bytes(&p, end, &b, &n) || !decode_value(b, b + n, m))
                return false;
        } else if (field == 3 && type == 2) {
            if (!momento__wire_bytes(&p, end, &m->publisher, &m->publisher_len))
                return false;
        } else if (field == 4 && type == 0) {
            if (!momento__wire_varint(&p, end, &m->page))
                return false;
        } else if (field == 0 || !momento__wire_skip(&p, end, type)) {
            return false;
        }
    }
    return m->has_value;
}

static bool decode_discontinuity(const uint8_t *p, const uint8_t *end, sub_msg *m)
{
    while (p < end) {
        unsigned field, type;
        if (!momento__wire_tag(&p, end, &field, &type))
            return false;
        uint64_t *dst = field == 1 ? &m->d_last : field == 2 ? &m->d_new : &m->d_page;
        if (field >= 1 && field <= 3 && type == 0) {
            if (!momento__wire_varint(&p, end, dst))
                return false;
        } else if (field == 0 || !momento__wire_skip(&p, end, type)) {
            return false;
        }
    }
    return true;
}

/* false: the message is not a _SubscriptionItem. An unknown kind (a newer
 * server's) decodes with kind 0 and is skipped. */
static bool decode(const uint8_t *p, size_t len, sub_msg *m)
{
    const uint8_t *end = p + len;
    memset(m, 0, sizeof(*m));
    while (p < end) {
        unsigned field, type;
        if (!momento__wire_tag(&p, end, &field, &type))
            return false;
        if (field >= 1 && field <= 3 && type == 2) { /* oneof kind: the last wins */
            const uint8_t *b;
            size_t n;
            if (!momento__wire_bytes(&p, end, &b, &n))
                return false;
            sub_msg fresh;
            memset(&fresh, 0, sizeof(fresh));
            fresh.kind = (int)field;
            if ((field == 1 && !decode_item(b, b + n, &fresh)) ||
                (field == 2 && !decode_discontinuity(b, b + n, &fresh)))
                return false;
            *m = fresh;
        } else if (field == 0 || !momento__wire_skip(&p, end, type)) {
            return false;
        }
    }
    return true;
}


/* ---- a group's stream ---------------------------------------------------- */

/* Adds 1 to one counter of every member (no event). */
static void count_all(sub_group *g, size_t stat_offset)
{
    size_t n = snapshot(g);
    for (size_t i = 0; i < n; i++) {
        pthread_mutex_lock(&g->snap[i]->lock);
        (*(uint64_t *)((char *)&g->snap[i]->stats + stat_offset))++;
        pthread_mutex_unlock(&g->snap[i]->lock);
    }
}

static void discontinuity(sub_group *g, uint64_t last, uint64_t next, uint64_t page,
                          bool from_server, const char *why)
{
    pthread_mutex_lock(&g->lock);
    g->have_position = true;
    g->last_seq = next;
    g->page = page;
    pthread_mutex_unlock(&g->lock);
    momento_topic_event ev = {.kind = MOMENTO_TOPIC_DISCONTINUITY, .last_sequence_number = last,
                              .new_sequence_number = next, .new_sequence_page = page,
                              .from_server = from_server, .publisher_id = "",
                              .message = why ? why : ""};
    broadcast(g, &ev, STAT(discontinuities), true);
}

static void on_item(sub_group *g, const sub_msg *msg)
{
    pthread_mutex_lock(&g->lock);
    bool known = g->have_position;
    uint64_t last = g->last_seq, page = g->page;
    pthread_mutex_unlock(&g->lock);
    if (known && msg->page == page && msg->seq <= last) {
        /* Replayed after a resubscribe that overlapped: seen already. */
        count_all(g, offsetof(momento_subscription_stats, duplicates_dropped));
        return;
    }
    if (known && (msg->page != page || msg->seq != last + 1))
        discontinuity(g, last, msg->seq - 1, msg->page, false, NULL);

    /* The id as a C string: kept in a buffer that grows as needed (out of
     * memory for it, the item still goes out, without an id). */
    const char *publisher = "";
    if (msg->publisher_len) {
        if (msg->publisher_len + 1 > g->publisher_cap) {
            char *grown = momento__realloc(g->publisher, msg->publisher_len + 1);
            if (grown) {
                g->publisher = grown;
                g->publisher_cap = msg->publisher_len + 1;
            }
        }
        if (msg->publisher_len + 1 <= g->publisher_cap) {
            memcpy(g->publisher, msg->publisher, msg->publisher_len);
            g->publisher[msg->publisher_len] = '\0';
            publisher = g->publisher;
        }
    }
    pthread_mutex_lock(&g->lock);
    g->have_position = true;
    g->last_seq = msg->seq;
    g->page = msg->page;
    pthread_mutex_unlock(&g->lock);
    momento_topic_event ev = {.kind = MOMENTO_TOPIC_ITEM,
                              .value = msg->value_len ? msg->value : (const uint8_t *)"",
                              .value_len = msg->value_len, .is_text = msg->is_text,
                              .sequence_number = msg->seq, .sequence_page = msg->page,
                              .publisher_id = publisher, .message = ""};
    broadcast(g, &ev, STAT(items), true);
}

/* The first message of a stream: it is up, and newcomers may join. After a
 * break in which nothing told us where the topic stood (no item yet, no
 * discontinuity), items published during it cannot be asked for again:
 * say so. */
static void on_connected(sub_group *g)
{
    pthread_mutex_lock(&g->lock);
    bool blind = g->ever_connected && !g->have_position;
    g->ever_connected = true;
    g->lost_reported = false;
    g->state = S_STREAMING;
    pthread_mutex_unlock(&g->lock);
    momento_topic_event ev = {.kind = MOMENTO_TOPIC_CONNECTED, .publisher_id = "", .message = ""};
    broadcast(g, &ev, 0, false, false);
    if (blind) {
        /* The position stays unknown: the next item sets it. */
        momento_topic_event d = {.kind = MOMENTO_TOPIC_DISCONTINUITY, .publisher_id = "",
                                 .message = "reconnected before any item: items published "
                                            "while disconnected may be missing"};
        broadcast(g, &d, STAT(discontinuities), false);
    }
}

/* One received message. false: it did not decode (the stream is ended). */
static bool on_message(sub_group *g, const uint8_t *p, size_t len)
{
    sub_msg msg;
    if (!decode(p, len, &msg))
        return false;
    g->last_msg_ns = momento__now_ns();
    if (!g->got_message) {
        g->got_message = true;
        on_connected(g);
    }
    if (msg.kind == 1) {
        on_item(g, &msg);
    } else if (msg.kind == 2) {
        discontinuity(g, msg.d_last, msg.d_new, msg.d_page, true, NULL);
    } else if (msg.kind == 3) {
        momento_topic_event ev = {.kind = MOMENTO_TOPIC_HEARTBEAT, .publisher_id = "",
                                  .message = ""};
        broadcast(g, &ev, STAT(heartbeats), false);
    }
    return true;
}

static void arm(sub_group *g, uint32_t ms)
{
    /* Out of memory for the timer heap: fire at once and try again then;
     * not expected in practice. */
    if (momento__timer_arm(g->client, &g->timer, momento__now_ns() + (int64_t)ms * 1000000, true) !=
        MOMENTO_OK)
        momento__timer_fire_soon(g->client, &g->timer);
}

/* Gives back the stream's attempt (unpublished first, so that no cancel
 * reaches it after) and its request. */
static void release_stream(sub_group *g)
{
    if (g->on_wire) {
        momento__client_publish(g->client, &g->track, NULL);
        g->transport->ops->end(g->att);
        g->on_wire = false;
    }
    grpc_slice_unref(g->rq.body);
    g->rq.body = grpc_empty_slice();
}

/* Ends the current stream from our side, as `status` for us; the
 * attempt's done() follows. */
static void cut(sub_group *g, int status, const char *why)
{
    g->local_status = status;
    g->local_why = why;
    g->transport->ops->cancel(g->att, why);
}

static void stream_done(momento__attempt *a);
static bool stream_message(momento__attempt *a, const uint8_t *bytes, size_t len);

/* Opens a stream from where the group stands. Completion thread only:
 * the stream starts and ends there. Returns 0 or MOMENTO_ERR_NO_MEMORY
 * (nothing started). */
static int open_stream(sub_group *g)
{
    momento_client *c = g->client;
    const momento__transport_ops *ops = g->transport->ops;
    pthread_mutex_lock(&g->lock);
    uint64_t resume = g->have_position ? g->last_seq + 1 : 0;
    uint64_t page = g->have_position ? g->page : 0;
    pthread_mutex_unlock(&g->lock);

    CacheClient__Pubsub__SubscriptionRequest req = CACHE_CLIENT__PUBSUB____SUBSCRIPTION_REQUEST__INIT;
    req.cache_name = g->cache;
    req.topic = g->topic;
    req.resume_at_topic_sequence_number = resume;
    req.sequence_page = page;
    size_t size = protobuf_c_message_get_packed_size(&req.base);
    g->rq.body = grpc_slice_malloc(size);
    protobuf_c_message_pack(&req.base, GRPC_SLICE_START_PTR(g->rq.body));

    g->att->data = g;
    g->att->done = stream_done;
    g->att->on_msg = stream_message;
    /* No deadline: the stream lives until it breaks or we cut it (the
     * timers watch the first message and the heartbeats). */
    if (ops->prepare(g->transport, g->att, &g->rq, gpr_inf_future(GPR_CLOCK_MONOTONIC)) != 0) {
        ops->end(g->att);
        release_stream(g);
        return MOMENTO_ERR_NO_MEMORY;
    }
    g->on_wire = true;
    g->got_message = false;
    g->local_why = NULL;
    pthread_mutex_lock(&g->lock);
    g->state = S_STARTING;
    pthread_mutex_unlock(&g->lock);
    /* Published before it can complete: from here a free cancels it. */
    momento__client_publish(c, &g->track, g->att);
    if (ops->launch(g->att) != 0) {
        release_stream(g);
        return MOMENTO_ERR_NO_MEMORY;
    }
    arm(g, g->first_ms);
    return MOMENTO_OK;
}

static bool retryable(int err)
{
    /* The errors after which the official SDKs stop resubscribing (and an
     * answer that does not decode). */
    return err != MOMENTO_ERR_AUTHENTICATION && err != MOMENTO_ERR_CANCELLED &&
           err != MOMENTO_ERR_CACHE_NOT_FOUND && err != MOMENTO_ERR_PERMISSION &&
           err != MOMENTO_ERR_BAD_RESPONSE && err != MOMENTO_ERR_INVALID_ARGUMENT;
}

/* Its last member left: the group goes, its stream cancelled or its wait
 * cut short (completion thread). */
static void group_member_left(sub_group *g)
{
    pthread_mutex_lock(&g->lock);
    bool empty = g->n_members == 0 && g->state != S_ENDED;
    pthread_mutex_unlock(&g->lock);
    if (!empty)
        return;
    if (g->on_wire && !g->local_why)
        cut(g, GRPC_STATUS_CANCELLED, "no subscriber left");
    else if (!g->on_wire)
        momento__timer_fire_soon(g->client, &g->timer);
}

static bool group_empty(sub_group *g)
{
    pthread_mutex_lock(&g->lock);
    bool empty = g->n_members == 0;
    pthread_mutex_unlock(&g->lock);
    return empty;
}

/* The stream has ended (its attempt's done(), completion thread): end or
 * try again. */
static void stream_done(momento__attempt *a)
{
    sub_group *g = a->data;
    momento_client *c = g->client;
    const momento__reply *r = &a->reply;
    int status = g->local_why ? g->local_status : r->status;
    int err = momento_error_from_grpc_status(status);
    if (g->local_why == NULL && status == GRPC_STATUS_OK)
        err = MOMENTO_ERR_SERVER_UNAVAILABLE; /* the server ended the stream: open another */
    if (g->local_why && status == GRPC_STATUS_DATA_LOSS)
        err = MOMENTO_ERR_BAD_RESPONSE;
    char why[256];
    if (g->local_why)
        snprintf(why, sizeof(why), "%s", g->local_why);
    else
        snprintf(why, sizeof(why), "%.*s", (int)GRPC_SLICE_LENGTH(r->details),
                 (const char *)GRPC_SLICE_START_PTR(r->details));
    release_stream(g);

    pthread_mutex_lock(&g->lock);
    bool first = !g->ever_connected;
    bool report = !g->lost_reported;
    pthread_mutex_unlock(&g->lock);
    if (group_empty(g)) {
        group_end(g, MOMENTO_OK, NULL);
        return;
    }
    if (momento__client_closing(c)) {
        group_end(g, MOMENTO_ERR_CLOSED, "the client was freed");
        return;
    }
    /* The first stream failing is the subscribe failing, as with the
     * SDKs: a cache that does not exist, a server that does not answer. */
    if (first || !retryable(err)) {
        group_end(g, err, why);
        return;
    }
    pthread_mutex_lock(&g->lock);
    g->state = S_WAITING;
    g->lost_reported = true;
    pthread_mutex_unlock(&g->lock);
    if (report) {
        momento_topic_event ev = {.kind = MOMENTO_TOPIC_CONNECTION_LOST, .error = err,
                                  .message = why, .publisher_id = ""};
        broadcast(g, &ev, STAT(connection_losses), false);
    }
    /* A member may have left meanwhile: the timer's fire sees it. A client
     * free that began meanwhile may have fired the timer before this arm
     * put it back on the heap: then it fires now. */
    arm(g, g->resubscribe_ms);
    if (momento__client_closing(c))
        momento__timer_fire_soon(c, &g->timer);
}

static void group_timer(momento__timer *t)
{
    sub_group *g = (sub_group *)((char *)t - offsetof(sub_group, timer));
    pthread_mutex_lock(&g->lock);
    sub_state state = g->state;
    bool empty = g->n_members == 0;
    pthread_mutex_unlock(&g->lock);
    momento_client *c = g->client;

    if (state == S_ENDED)
        return;
    if (state == S_WAITING) {
        if (empty) {
            group_end(g, MOMENTO_OK, NULL);
        } else if (momento__client_closing(c)) {
            group_end(g, MOMENTO_ERR_CLOSED, "the client was freed");
        } else {
            if (g->opened)
                count_all(g, offsetof(momento_subscription_stats, reconnects));
            if (open_stream(g) == MOMENTO_OK)
                g->opened = true;
            else
                arm(g, g->resubscribe_ms);
        }
        return;
    }
    if (!g->on_wire || g->local_why)
        return; /* a stream open, being cut already */
    if (state == S_STARTING) {
        if (!g->got_message)
            cut(g, GRPC_STATUS_DEADLINE_EXCEEDED,
                "the subscription's stream brought no first message in time");
        return;
    }
    /* STREAMING: the idle check, made when the timer comes due rather
     * than re-armed per message. */
    int64_t quiet_until = g->last_msg_ns + (int64_t)g->idle_ms * 1000000;
    if (momento__now_ns() >= quiet_until)
        cut(g, GRPC_STATUS_UNAVAILABLE, "the subscription's stream went quiet (no heartbeat)");
    else if (momento__timer_arm(c, t, quiet_until, false) != MOMENTO_OK)
        momento__timer_fire_soon(c, t);
}

/* A message of the stream (the attempt's on_msg, completion thread): to
 * the members; false when it does not decode (the stream is cut). */
static bool stream_message(momento__attempt *a, const uint8_t *bytes, size_t len)
{
    sub_group *g = a->data;
    bool was_first = !g->got_message;
    if (!on_message(g, bytes, len)) {
        cut(g, GRPC_STATUS_DATA_LOSS, "a subscription message did not decode");
        return false;
    }
    /* From the first-message wait to the idle watch. */
    if (was_first && g->idle_ms != UINT32_MAX)
        arm(g, g->idle_ms);
    else if (was_first)
        momento__timer_disarm(g->client, &g->timer);
    return true;
}

/* ---- the API ------------------------------------------------------------- */

static sub_group *group_new(momento_client *c, const char *cache, const char *topic,
                            uint32_t first_ms, uint32_t resubscribe_ms, uint32_t idle_ms,
                            const momento_subscribe_options *o)
{
    size_t md_slots = 1 + c->n_extra_md;
    /* The loop's own transport: only it carries live streams (on_msg). */
    momento__transport *tr = c->transport;
    /* The headers, then the transport's attempt, aligned for any type. */
    size_t att_at = sizeof(sub_group) + md_slots * sizeof(grpc_metadata);
    att_at = (att_at + alignof(max_align_t) - 1) / alignof(max_align_t) * alignof(max_align_t);
    sub_group *g = momento__calloc(1, att_at + tr->ops->attempt_size);
    if (!g)
        return NULL;
    /* First, so that group_free() may undo the rest. */
    pthread_mutex_init(&g->lock, NULL);
    g->transport = tr;
    g->att = (momento__attempt *)((char *)g + att_at);
    g->cache = strdup(cache);
    g->topic = strdup(topic);
    if (!g->cache || !g->topic) {
        group_free(g);
        return NULL;
    }
    g->client = c;
    g->first_ms = first_ms;
    g->resubscribe_ms = resubscribe_ms;
    g->idle_ms = idle_ms;
    if (o && (o->resume_at_sequence_number || o->sequence_page)) {
        g->have_position = o->resume_at_sequence_number > 0;
        g->last_seq = o->resume_at_sequence_number ? o->resume_at_sequence_number - 1 : 0;
        g->page = o->sequence_page;
    }
    momento__timer_init(&g->timer, group_timer);
    g->track.wake = &g->timer;
    g->track.cancel = tr->ops->cancel;
    g->state = S_WAITING; /* its first stream opens on the completion thread */
    g->md[g->n_md].key = grpc_slice_from_static_string("authorization");
    g->md[g->n_md++].value = c->auth_value;
    for (size_t i = 0; i < c->n_extra_md; i++)
        g->md[g->n_md++] = c->extra_md[i];
    g->rq.method = MOMENTO__RPC_TOPIC_SUBSCRIBE;
    g->rq.headers = g->md;
    g->rq.n_headers = g->n_md; /* the cache travels in the body (PLANE_TOPIC) */
    return g;
}

/* Joins `m` to a joinable group of the same topic and timings whose stream
 * is up; false when there is none. */
static bool join(momento_client *c, momento_subscription *m, const char *cache,
                 const char *topic, uint32_t first_ms, uint32_t resubscribe_ms, uint32_t idle_ms)
{
    bool joined = false;
    pthread_mutex_lock(&c->topics_lock);
    for (sub_group *g = c->topic_groups; g && !joined; g = g->next_shared) {
        if (g->first_ms != first_ms || g->resubscribe_ms != resubscribe_ms ||
            g->idle_ms != idle_ms || strcmp(g->topic, topic) != 0 || strcmp(g->cache, cache) != 0)
            continue;
        pthread_mutex_lock(&g->lock);
        if (g->state == S_STREAMING && g->n_members > 0) {
            DL_APPEND(g->members, m);
            g->n_members++;
            m->group = g;
            m->greet = true;
            joined = true;
        }
        pthread_mutex_unlock(&g->lock);
    }
    pthread_mutex_unlock(&c->topics_lock);
    return joined;
}

static int subscribe(momento_client *c, const char *cache, const char *topic,
                     const momento_subscribe_options *opts, momento_topic_callback cb,
                     void *userdata, momento_subscription **ret, bool internal)
{
    if (!c || !cb || (opts && opts->size != sizeof(*opts)))
        return MOMENTO_ERR_INVALID_ARGUMENT;
    if (opts && opts->first_message_timeout_ms > MOMENTO__MAX_TIMEOUT_MS)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    MOMENTO__CHECK(momento__check_cache_name(cache));
    MOMENTO__CHECK(momento__check_topic_name(topic));
    uint32_t first_ms = opts && opts->first_message_timeout_ms ? opts->first_message_timeout_ms
                                                               : c->cfg.timeout_ms;
    uint32_t resubscribe_ms = opts && opts->resubscribe_delay_ms ? opts->resubscribe_delay_ms
                                                                 : DEFAULT_RESUBSCRIBE_MS;
    uint32_t idle_ms = opts && opts->idle_timeout_ms ? opts->idle_timeout_ms : DEFAULT_IDLE_MS;
    bool own = opts && (opts->resume_at_sequence_number || opts->sequence_page ||
                        (opts->flags & MOMENTO_SUBSCRIBE_OWN_STREAM));

    momento_subscription *m = momento__calloc(1, sizeof(*m));
    if (!m)
        return MOMENTO_ERR_NO_MEMORY;
    m->client = c;
    m->cb = cb;
    m->userdata = userdata;
    m->flags = opts ? opts->flags : 0;
    m->internal = internal;
    m->refs = ret ? 2 : 1;
    pthread_mutex_init(&m->lock, NULL);
    momento__timer_init(&m->timer, member_timer);
    m->track.wake = &m->timer;
    int rc = momento__client_accept(c, &m->track, NULL);
    if (rc != MOMENTO_OK) {
        m->refs = 1;
        member_unref(m);
        return rc;
    }
    /* Neither is an RPC a batch could wait behind. */
    momento__client_answered(c, &m->track);

    if (!own && join(c, m, cache, topic, first_ms, resubscribe_ms, idle_ms)) {
        momento__timer_fire_soon(c, &m->timer); /* its CONNECTED, on the completion thread */
    } else {
        rc = stream_place_take(c);
        sub_group *g = rc == MOMENTO_OK
                           ? group_new(c, cache, topic, first_ms, resubscribe_ms, idle_ms, opts)
                           : NULL;
        if (!g || momento__client_accept(c, &g->track, NULL) != MOMENTO_OK) {
            if (g)
                group_free(g);
            if (rc == MOMENTO_OK)
                stream_place_free(c);
            momento__client_retire(c, &m->track);
            m->refs = 1;
            member_unref(m);
            return rc != MOMENTO_OK ? rc : g ? MOMENTO_ERR_CLOSED : MOMENTO_ERR_NO_MEMORY;
        }
        momento__client_answered(c, &g->track);
        DL_APPEND(g->members, m);
        g->n_members = 1;
        m->group = g;
        if (!own) {
            g->shared = true;
            pthread_mutex_lock(&c->topics_lock);
            g->next_shared = c->topic_groups;
            c->topic_groups = g;
            pthread_mutex_unlock(&c->topics_lock);
        }
        /* Streams open on the completion thread, where all their batches
         * complete: the first one too, at once. */
        momento__timer_fire_soon(c, &g->timer);
    }
    if (ret)
        *ret = m;
    return MOMENTO_OK;
}

int momento_topic_subscribe(momento_client *c, const char *cache, const char *topic,
                            const momento_subscribe_options *opts, momento_topic_callback cb,
                            void *userdata, momento_subscription **ret)
{
    return subscribe(c, cache, topic, opts, cb, userdata, ret, false);
}

int momento__topic_subscribe_own(momento_client *c, const char *cache, const char *topic,
                                 const momento_subscribe_options *opts, momento_topic_callback cb,
                                 void *userdata)
{
    return subscribe(c, cache, topic, opts, cb, userdata, NULL, true);
}

void momento_topic_unsubscribe(momento_subscription *m)
{
    if (!m)
        return;
    pthread_mutex_lock(&m->lock);
    if (m->unsubscribed || m->ended) {
        pthread_mutex_unlock(&m->lock);
        return;
    }
    m->unsubscribed = true;
    /* The member leaves its group, and gets its END, on the completion
     * thread. Queued under the lock, which member_end() takes to mark the
     * END: so the client is still there, and the timer queued here is
     * taken off again by member_end() before the memory can go. */
    momento__timer_fire_soon(m->client, &m->timer);
    pthread_mutex_unlock(&m->lock);
}

void momento_subscription_free(momento_subscription *m)
{
    if (!m)
        return;
    momento_topic_unsubscribe(m);
    member_unref(m);
}

int momento_subscription_stats_get(const momento_subscription *sub,
                                   momento_subscription_stats *ret, size_t size)
{
    if (!sub || !ret)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    momento_subscription *m = (momento_subscription *)sub; /* the lock is not the value */
    pthread_mutex_lock(&m->lock);
    momento_subscription_stats snap = m->stats;
    pthread_mutex_unlock(&m->lock);
    memcpy(ret, &snap, size < sizeof(snap) ? size : sizeof(snap));
    return MOMENTO_OK;
}

/* ---- blocking subscribe ------------------------------------------------ */

typedef struct sync_wait {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int state;                  /* 0 waiting, 1 connected, 2 ended */
    int error;
    momento_topic_callback cb;
    void *userdata;
} sync_wait;

/* Wraps the caller's callback until the first CONNECTED or END: the
 * subscription's userdata points here only until then. */
static void sync_cb(momento_subscription *s, const momento_topic_event *ev, void *userdata)
{
    sync_wait *w = userdata;
    momento_topic_callback cb = w->cb;
    void *ud = w->userdata;
    momento__respond_topic(s->client, cb, s, ev, ud, member_ref, member_unref);
    if (ev->kind == MOMENTO_TOPIC_CONNECTED || ev->kind == MOMENTO_TOPIC_END) {
        /* From now on the caller's own callback, directly. */
        s->cb = cb;
        s->userdata = ud;
        pthread_mutex_lock(&w->lock);
        w->state = ev->kind == MOMENTO_TOPIC_END ? 2 : 1;
        w->error = ev->error;
        pthread_cond_signal(&w->cond);
        pthread_mutex_unlock(&w->lock);
    }
}

int momento_topic_subscribe_sync(momento_client *c, const char *cache, const char *topic,
                                 const momento_subscribe_options *opts, momento_topic_callback cb,
                                 void *userdata, momento_subscription **ret)
{
    if (c && momento__completion_here(c))
        return MOMENTO_ERR_WOULD_DEADLOCK;
    if (!cb)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    sync_wait w = {.cb = cb, .userdata = userdata};
    pthread_mutex_init(&w.lock, NULL);
    pthread_cond_init(&w.cond, NULL);
    momento_subscription *s = NULL;
    int rc = momento_topic_subscribe(c, cache, topic, opts, sync_cb, &w, &s);
    if (rc == MOMENTO_OK) {
        pthread_mutex_lock(&w.lock);
        while (w.state == 0)
            pthread_cond_wait(&w.cond, &w.lock);
        pthread_mutex_unlock(&w.lock);
        if (w.state == 2) {
            rc = w.error ? w.error : MOMENTO_ERR_CANCELLED;
            momento_subscription_free(s);
        } else if (ret) {
            *ret = s;
        } else {
            member_unref(s); /* the library's reference keeps it running */
        }
    }
    pthread_mutex_destroy(&w.lock);
    pthread_cond_destroy(&w.cond);
    return rc;
}
