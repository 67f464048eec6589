/* Topic subscriptions: one long-lived server stream at a time per
 * subscription, read a message at a time on the client's completion thread,
 * and opened again after it breaks, from where the last one stopped.
 *
 * A subscription is a request the client tracks (client.h) from
 * momento_topic_subscribe() until its END event has returned, so that
 * momento_client_free() ends it like any other request: its current stream
 * is cancelled, or its wait for a resubscribe cut short (the tracked
 * entry's `wake` timer). It never counts towards batching's RPCs in flight.
 *
 * States, each changed under `lock`:
 *   STARTING   a stream is open, no message yet (first-message timer armed)
 *   STREAMING  messages arrive (idle timer armed, checked lazily)
 *   WAITING    between streams (resubscribe timer armed)
 *   ENDED      the END event is delivered or being delivered
 * One timer serves the three, since only one is ever wanted at a time.
 *
 * The memory lives while either reference does: the library's (until the
 * END event's callback returns) and the caller's (until
 * momento_subscription_free()). */
#include "alloc.h"
#include "client.h"
#include "log.h"
#include "retry.h"
#include "validate.h"
#include "wire.h"

#include "momento/topics.h"

#include "cachepubsub.pb-c.h"

#include <grpc/byte_buffer_reader.h>
#include <grpc/support/time.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_RESUBSCRIBE_MS 500u /* the official SDKs' fixed delay */
#define DEFAULT_IDLE_MS 30000u

typedef enum { S_STARTING, S_STREAMING, S_WAITING, S_ENDED } sub_state;

/* Tags on the completion queue: the subscription's address plus 2 (its
 * status batch), 4 (the request's sending) or 6 (a read); calls' tags are
 * aligned, or + 1 (client.c tells them apart). */
#define STATUS_TAG(s) ((void *)((char *)(s) + 2))
#define SEND_TAG(s) ((void *)((char *)(s) + 4))
#define READ_TAG(s) ((void *)((char *)(s) + 6))

struct momento_subscription {
    momento__tracked track;     /* first: the client's view */
    momento_client *client;
    momento_topic_callback cb;
    void *userdata;
    char *cache, *topic;
    uint32_t first_ms, resubscribe_ms, idle_ms;
    unsigned flags;

    pthread_mutex_t lock;       /* guards what follows, up to the stream */
    int refs;
    sub_state state;
    bool unsubscribed;          /* momento_topic_unsubscribe() was called */
    bool lost_reported;         /* CONNECTION_LOST sent for the current break */
    bool ever_connected;
    bool opened;                /* a stream was opened before */
    bool have_position;         /* last_seq / page name a point in the topic */
    uint64_t last_seq, page;
    momento_subscription_stats stats;
    momento__timer timer;

    /* The current stream: completion thread only. */
    grpc_call *call;
    int pending;                /* its batches not yet completed */
    bool got_message;           /* this stream brought a message */
    int64_t last_msg_ns;
    grpc_byte_buffer *send_msg, *recv_msg;
    grpc_metadata_array recv_initial, recv_trailing;
    grpc_status_code status;
    grpc_slice details;
    const char *local_why;      /* why we cancelled it ourselves, or NULL */
    grpc_status_code local_status;
    char *publisher;            /* the last item's publisher id, NUL-terminated */
    size_t publisher_cap;
    size_t n_md;
    grpc_metadata md[];
};

static void sub_unref(momento_subscription *s)
{
    pthread_mutex_lock(&s->lock);
    bool last = --s->refs == 0;
    pthread_mutex_unlock(&s->lock);
    if (!last)
        return;
    pthread_mutex_destroy(&s->lock);
    free(s->cache);
    free(s->topic);
    free(s->publisher);
    free(s);
}

static void emit(momento_subscription *s, momento_topic_event *ev)
{
    s->cb(s, ev, s->userdata);
}

/* Delivers the END event (once), then lets the client forget the request
 * and drops the library's reference. Completion thread, no lock held. */
static void end(momento_subscription *s, int error, const char *message)
{
    pthread_mutex_lock(&s->lock);
    if (s->state == S_ENDED) {
        pthread_mutex_unlock(&s->lock);
        return;
    }
    s->state = S_ENDED;
    s->stats.connected = 0;
    s->stats.ended = 1;
    pthread_mutex_unlock(&s->lock);

    momento_topic_event ev = {.kind = MOMENTO_TOPIC_END, .error = error,
                              .message = message ? message : ""};
    ev.publisher_id = "";
    emit(s, &ev);
    /* Off the in-flight list first: until then a client free (from the
     * callback, or a thread it woke) may queue the timer to end us. Then
     * nothing can queue it: the timer comes off the client's lists for
     * good before the memory may go. */
    momento_client *c = s->client;
    momento__client_retire(c, &s->track);
    momento__timer_disarm(c, &s->timer);
    sub_unref(s);
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

/* Reads the length-delimited field at *p. */
static bool wire_bytes(const uint8_t **p, const uint8_t *end, const uint8_t **out, size_t *len)
{
    uint64_t n;
    if (!momento__wire_varint(p, end, &n) || n > (uint64_t)(end - *p))
        return false;
    *out = *p;
    *len = (size_t)n;
    *p += n;
    return true;
}

static bool decode_value(const uint8_t *p, const uint8_t *end, sub_msg *m)
{
    while (p < end) {
        uint64_t tag;
        if (!momento__wire_varint(&p, end, &tag))
            return false;
        unsigned field = (unsigned)(tag >> 3), type = (unsigned)(tag & 7);
        if ((field == 1 || field == 2) && type == 2) { /* text, binary: the last wins */
            if (!wire_bytes(&p, end, &m->value, &m->value_len))
                return false;
            m->is_text = field == 1;
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
        uint64_t tag;
        if (!momento__wire_varint(&p, end, &tag))
            return false;
        unsigned field = (unsigned)(tag >> 3), type = (unsigned)(tag & 7);
        const uint8_t *b;
        size_t n;
        if (field == 1 && type == 0) {
            if (!momento__wire_varint(&p, end, &m->seq))
                return false;
        } else if (field == 2 && type == 2) {
            if (!wire_bytes(&p, end, &b, &n) || !decode_value(b, b + n, m))
                return false;
        } else if (field == 3 && type == 2) {
            if (!wire_bytes(&p, end, &m->publisher, &m->publisher_len))
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
        uint64_t tag;
        if (!momento__wire_varint(&p, end, &tag))
            return false;
        unsigned field = (unsigned)(tag >> 3), type = (unsigned)(tag & 7);
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
        uint64_t tag;
        if (!momento__wire_varint(&p, end, &tag))
            return false;
        unsigned field = (unsigned)(tag >> 3), type = (unsigned)(tag & 7);
        const uint8_t *b;
        size_t n;
        if (field >= 1 && field <= 3 && type == 2) { /* oneof kind: the last wins */
            if (!wire_bytes(&p, end, &b, &n))
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

/* ---- events ------------------------------------------------------------ */

static void discontinuity(momento_subscription *s, uint64_t last, uint64_t next, uint64_t page,
                          bool from_server)
{
    momento_topic_event ev = {.kind = MOMENTO_TOPIC_DISCONTINUITY, .last_sequence_number = last,
                              .new_sequence_number = next, .new_sequence_page = page,
                              .from_server = from_server, .publisher_id = "", .message = ""};
    pthread_mutex_lock(&s->lock);
    s->stats.discontinuities++;
    s->have_position = true;
    s->last_seq = next;
    s->page = page;
    s->stats.last_sequence_number = next;
    s->stats.sequence_page = page;
    pthread_mutex_unlock(&s->lock);
    emit(s, &ev);
}

/* Whether the subscription is still to hear events: not once the caller
 * unsubscribed (its END is on the way). */
static bool listening(momento_subscription *s)
{
    pthread_mutex_lock(&s->lock);
    bool on = !s->unsubscribed && s->state != S_ENDED;
    pthread_mutex_unlock(&s->lock);
    return on;
}

static void on_item(momento_subscription *s, const sub_msg *m)
{
    pthread_mutex_lock(&s->lock);
    bool known = s->have_position;
    uint64_t last = s->last_seq, page = s->page;
    pthread_mutex_unlock(&s->lock);
    if (known && m->page == page && m->seq <= last) {
        /* Replayed after a resubscribe that overlapped: seen already. */
        pthread_mutex_lock(&s->lock);
        s->stats.duplicates_dropped++;
        pthread_mutex_unlock(&s->lock);
        return;
    }
    if (known && (m->page != page || m->seq != last + 1))
        discontinuity(s, last, m->seq - 1, m->page, false);
    if (!listening(s))
        return;

    /* The id as a C string: kept in a buffer that grows as needed (out of
     * memory for it, the item still goes out, without an id). */
    const char *publisher = "";
    if (m->publisher_len) {
        if (m->publisher_len + 1 > s->publisher_cap) {
            char *grown = momento__realloc(s->publisher, m->publisher_len + 1);
            if (grown) {
                s->publisher = grown;
                s->publisher_cap = m->publisher_len + 1;
            }
        }
        if (m->publisher_len + 1 <= s->publisher_cap) {
            memcpy(s->publisher, m->publisher, m->publisher_len);
            s->publisher[m->publisher_len] = '\0';
            publisher = s->publisher;
        }
    }
    momento_topic_event ev = {.kind = MOMENTO_TOPIC_ITEM,
                              .value = m->value_len ? m->value : (const uint8_t *)"",
                              .value_len = m->value_len, .is_text = m->is_text,
                              .sequence_number = m->seq, .sequence_page = m->page,
                              .publisher_id = publisher,
                              .message = ""};
    pthread_mutex_lock(&s->lock);
    s->stats.items++;
    s->have_position = true;
    s->last_seq = m->seq;
    s->page = m->page;
    s->stats.last_sequence_number = m->seq;
    s->stats.sequence_page = m->page;
    pthread_mutex_unlock(&s->lock);
    emit(s, &ev);
}

/* The first message of a stream: it is up. After a break in which nothing
 * told us where the topic stood (no item yet, no discontinuity), items
 * published during it cannot be asked for again: say so. */
static void on_connected(momento_subscription *s)
{
    pthread_mutex_lock(&s->lock);
    bool again = s->ever_connected;
    bool blind = again && !s->have_position;
    s->ever_connected = true;
    s->lost_reported = false;
    s->state = S_STREAMING;
    s->stats.connected = 1;
    bool on = !s->unsubscribed;
    pthread_mutex_unlock(&s->lock);
    momento_topic_event ev = {.kind = MOMENTO_TOPIC_CONNECTED, .publisher_id = "", .message = ""};
    if (on)
        emit(s, &ev);
    if (blind && listening(s)) {
        /* The position is still unknown afterwards: the next item sets it. */
        momento_topic_event d = {.kind = MOMENTO_TOPIC_DISCONTINUITY, .publisher_id = "",
                                 .message = "reconnected before any item: items published "
                                            "while disconnected may be missing"};
        pthread_mutex_lock(&s->lock);
        s->stats.discontinuities++;
        pthread_mutex_unlock(&s->lock);
        emit(s, &d);
    }
}

/* One received message. false: it did not decode (the stream is ended). */
static bool on_message(momento_subscription *s, const uint8_t *p, size_t len)
{
    sub_msg m;
    if (!decode(p, len, &m))
        return false;
    s->last_msg_ns = momento__now_ns();
    if (!s->got_message) {
        s->got_message = true;
        on_connected(s);
    }
    if (!listening(s))
        return true;
    if (m.kind == 1) {
        on_item(s, &m);
    } else if (m.kind == 2) {
        discontinuity(s, m.d_last, m.d_new, m.d_page, true);
    } else if (m.kind == 3) {
        pthread_mutex_lock(&s->lock);
        s->stats.heartbeats++;
        pthread_mutex_unlock(&s->lock);
        if (s->flags & MOMENTO_SUBSCRIBE_HEARTBEATS) {
            momento_topic_event ev = {.kind = MOMENTO_TOPIC_HEARTBEAT, .publisher_id = "",
                                      .message = ""};
            emit(s, &ev);
        }
    }
    return true;
}

/* ---- streams ----------------------------------------------------------- */

static void arm(momento_subscription *s, uint32_t ms)
{
    /* Out of memory for the timer heap: try again in a moment is all that
     * is left; the completion thread wakes at least that often while
     * anything is tracked (retry.c). Not expected in practice. */
    if (momento__timer_arm(s->client, &s->timer, momento__now_ns() + (int64_t)ms * 1000000, true) !=
        MOMENTO_OK)
        momento__timer_fire_soon(s->client, &s->timer);
}

static void release_stream(momento_subscription *s)
{
    if (s->call) {
        momento__client_publish(s->client, &s->track, NULL);
        grpc_call_unref(s->call);
        s->call = NULL;
    }
    if (s->send_msg)
        grpc_byte_buffer_destroy(s->send_msg);
    if (s->recv_msg)
        grpc_byte_buffer_destroy(s->recv_msg);
    s->send_msg = s->recv_msg = NULL;
    grpc_metadata_array_destroy(&s->recv_initial);
    grpc_metadata_array_destroy(&s->recv_trailing);
    grpc_metadata_array_init(&s->recv_initial);
    grpc_metadata_array_init(&s->recv_trailing);
    grpc_slice_unref(s->details);
    s->details = grpc_empty_slice();
}

static bool start_read(momento_subscription *s)
{
    grpc_op op;
    memset(&op, 0, sizeof(op));
    op.op = GRPC_OP_RECV_MESSAGE;
    op.data.recv_message.recv_message = &s->recv_msg;
    return grpc_call_start_batch(s->call, &op, 1, READ_TAG(s), NULL) == GRPC_CALL_OK;
}

static void cut(momento_subscription *s, grpc_status_code status, const char *why);

/* Opens a stream from where the subscription stands. Completion thread
 * only: every batch of a stream starts and ends there, so `pending` needs
 * no lock. Returns 0 or MOMENTO_ERR_NO_MEMORY (nothing started). */
static int open_stream(momento_subscription *s)
{
    momento_client *c = s->client;
    pthread_mutex_lock(&s->lock);
    uint64_t resume = s->have_position ? s->last_seq + 1 : 0;
    uint64_t page = s->have_position ? s->page : 0;
    pthread_mutex_unlock(&s->lock);

    CacheClient__Pubsub__SubscriptionRequest req = CACHE_CLIENT__PUBSUB____SUBSCRIPTION_REQUEST__INIT;
    req.cache_name = s->cache;
    req.topic = s->topic;
    req.resume_at_topic_sequence_number = resume;
    req.sequence_page = page;
    size_t size = protobuf_c_message_get_packed_size(&req.base);
    grpc_slice body = grpc_slice_malloc(size);
    protobuf_c_message_pack(&req.base, GRPC_SLICE_START_PTR(body));
    s->send_msg = grpc_raw_byte_buffer_create(&body, 1);
    grpc_slice_unref(body);

    momento__channel *ch = momento__channels_pick(&c->channels, MOMENTO__PLANE_TOPIC);
    s->call = grpc_channel_create_registered_call(
        ch->channel, NULL, GRPC_PROPAGATE_DEFAULTS, c->cq,
        ch->registered[MOMENTO__RPC_TOPIC_SUBSCRIBE], gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL);
    if (!s->call) {
        release_stream(s);
        return MOMENTO_ERR_NO_MEMORY;
    }
    s->got_message = false;
    s->local_why = NULL;
    s->status = GRPC_STATUS_OK;

    grpc_op ops[4];
    memset(ops, 0, sizeof(ops));
    ops[0].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
    ops[0].data.recv_status_on_client.trailing_metadata = &s->recv_trailing;
    ops[0].data.recv_status_on_client.status = &s->status;
    ops[0].data.recv_status_on_client.status_details = &s->details;
    if (grpc_call_start_batch(s->call, ops, 1, STATUS_TAG(s), NULL) != GRPC_CALL_OK) {
        release_stream(s);
        return MOMENTO_ERR_NO_MEMORY;
    }
    s->pending = 1;
    pthread_mutex_lock(&s->lock);
    s->state = S_STARTING;
    pthread_mutex_unlock(&s->lock);
    /* From here a free or an unsubscribe cancels it; the status batch ends
     * the stream whatever happens to the others. */
    momento__client_publish(c, &s->track, s->call);
    memset(ops, 0, sizeof(ops));
    ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
    ops[0].data.send_initial_metadata.count = s->n_md;
    ops[0].data.send_initial_metadata.metadata = s->md;
    ops[1].op = GRPC_OP_SEND_MESSAGE;
    ops[1].data.send_message.send_message = s->send_msg;
    ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
    ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
    ops[3].data.recv_initial_metadata.recv_initial_metadata = &s->recv_initial;
    bool sent = grpc_call_start_batch(s->call, ops, 4, SEND_TAG(s), NULL) == GRPC_CALL_OK;
    s->pending += sent;
    bool reading = sent && start_read(s);
    s->pending += reading;
    if (!reading)
        cut(s, GRPC_STATUS_INTERNAL, "could not start the subscription's stream");
    arm(s, s->first_ms);
    return MOMENTO_OK;
}

/* Ends the current stream from our side; its status completion follows. */
static void cut(momento_subscription *s, grpc_status_code status, const char *why)
{
    s->local_status = status;
    s->local_why = why;
    grpc_call_cancel_with_status(s->call, status, why, NULL);
}

static bool retryable(int err)
{
    /* The errors after which the official SDKs stop resubscribing. */
    return err != MOMENTO_ERR_AUTHENTICATION && err != MOMENTO_ERR_CANCELLED &&
           err != MOMENTO_ERR_CACHE_NOT_FOUND && err != MOMENTO_ERR_PERMISSION &&
           err != MOMENTO_ERR_BAD_RESPONSE && err != MOMENTO_ERR_INVALID_ARGUMENT;
}

/* Every batch of the stream is back: end or try again. */
static void stream_over(momento_subscription *s)
{
    momento_client *c = s->client;
    int err = s->local_why ? momento_error_from_grpc_status((int)s->local_status)
                           : momento_error_from_grpc_status((int)s->status);
    if (s->local_why == NULL && s->status == GRPC_STATUS_OK)
        err = MOMENTO_ERR_SERVER_UNAVAILABLE; /* the server ended the stream: open another */
    if (s->local_why && s->local_status == GRPC_STATUS_DATA_LOSS)
        err = MOMENTO_ERR_BAD_RESPONSE;
    char why[256];
    if (s->local_why)
        snprintf(why, sizeof(why), "%s", s->local_why);
    else
        snprintf(why, sizeof(why), "%.*s", (int)GRPC_SLICE_LENGTH(s->details),
                 (const char *)GRPC_SLICE_START_PTR(s->details));
    release_stream(s);

    pthread_mutex_lock(&s->lock);
    bool unsubscribed = s->unsubscribed;
    bool first = !s->ever_connected;
    bool report = !s->lost_reported;
    pthread_mutex_unlock(&s->lock);
    if (unsubscribed) {
        end(s, MOMENTO_OK, "unsubscribed");
        return;
    }
    if (momento__client_closing(c)) {
        end(s, MOMENTO_ERR_CLOSED, "the client was freed");
        return;
    }
    /* The first stream failing is the subscribe failing, as with the
     * SDKs: a cache that does not exist, a server that does not answer. */
    if (first || !retryable(err)) {
        end(s, err, why);
        return;
    }
    pthread_mutex_lock(&s->lock);
    s->state = S_WAITING;
    s->stats.connected = 0;
    if (report) {
        s->lost_reported = true;
        s->stats.connection_losses++;
    }
    pthread_mutex_unlock(&s->lock);
    if (report) {
        momento_topic_event ev = {.kind = MOMENTO_TOPIC_CONNECTION_LOST, .error = err,
                                  .message = why, .publisher_id = ""};
        emit(s, &ev);
    }
    /* The callback may have unsubscribed: the timer's fire sees it. A
     * client free that began meanwhile may have fired the timer before
     * this arm put it back on the heap: then it fires now. */
    arm(s, s->resubscribe_ms);
    if (momento__client_closing(c))
        momento__timer_fire_soon(c, &s->timer);
}

static void on_timer(momento__timer *t)
{
    momento_subscription *s =
        (momento_subscription *)((char *)t - offsetof(momento_subscription, timer));
    pthread_mutex_lock(&s->lock);
    sub_state state = s->state;
    bool unsubscribed = s->unsubscribed;
    pthread_mutex_unlock(&s->lock);
    momento_client *c = s->client;

    if (state == S_ENDED)
        return;
    if (state == S_WAITING) {
        if (unsubscribed) {
            end(s, MOMENTO_OK, "unsubscribed");
        } else if (momento__client_closing(c)) {
            end(s, MOMENTO_ERR_CLOSED, "the client was freed");
        } else {
            if (s->opened) {
                pthread_mutex_lock(&s->lock);
                s->stats.reconnects++;
                pthread_mutex_unlock(&s->lock);
            }
            if (open_stream(s) == MOMENTO_OK)
                s->opened = true;
            else
                arm(s, s->resubscribe_ms);
        }
        return;
    }
    /* A stream is open; an unsubscribe has cancelled it already. */
    if (!s->call || unsubscribed)
        return;
    if (state == S_STARTING) {
        if (!s->got_message)
            cut(s, GRPC_STATUS_DEADLINE_EXCEEDED,
                "the subscription's stream brought no first message in time");
        return;
    }
    /* STREAMING: the idle check, made when the timer comes due rather
     * than re-armed per message. */
    int64_t quiet_until = s->last_msg_ns + (int64_t)s->idle_ms * 1000000;
    if (momento__now_ns() >= quiet_until)
        cut(s, GRPC_STATUS_UNAVAILABLE, "the subscription's stream went quiet (no heartbeat)");
    else if (momento__timer_arm(c, t, quiet_until, false) != MOMENTO_OK)
        momento__timer_fire_soon(c, t);
}

void momento__subscription_event(void *tag, int success)
{
    uintptr_t kind = (uintptr_t)tag & 7;
    momento_subscription *s = (momento_subscription *)((char *)tag - kind);
    if (kind == 6 && success && s->recv_msg && s->call) {
        grpc_byte_buffer *bb = s->recv_msg;
        s->recv_msg = NULL;
        grpc_slice body = grpc_empty_slice();
        grpc_byte_buffer_reader reader;
        if (bb->type == GRPC_BB_RAW && bb->data.raw.compression == GRPC_COMPRESS_NONE &&
            bb->data.raw.slice_buffer.count == 1) {
            body = grpc_slice_ref(bb->data.raw.slice_buffer.slices[0]); /* no copy */
        } else if (grpc_byte_buffer_reader_init(&reader, bb)) {
            body = grpc_byte_buffer_reader_readall(&reader);
            grpc_byte_buffer_reader_destroy(&reader);
        }
        grpc_byte_buffer_destroy(bb);
        bool was_first = !s->got_message;
        bool ok = on_message(s, GRPC_SLICE_START_PTR(body), GRPC_SLICE_LENGTH(body));
        grpc_slice_unref(body);
        if (!ok) {
            cut(s, GRPC_STATUS_DATA_LOSS, "a subscription message did not decode");
        } else {
            /* From the first-message wait to the idle watch. */
            if (was_first && s->idle_ms != UINT32_MAX)
                arm(s, s->idle_ms);
            else if (was_first)
                momento__timer_disarm(s->client, &s->timer);
            if (start_read(s))
                return; /* this read's place in `pending` passes to the next */
        }
    }
    if (--s->pending == 0)
        stream_over(s);
}

/* ---- the API ----------------------------------------------------------- */

static momento_subscription *sub_new(momento_client *c, const char *cache, const char *topic,
                                     const momento_subscribe_options *o,
                                     momento_topic_callback cb, void *userdata)
{
    size_t md_slots = 1 + c->n_extra_md;
    momento_subscription *s = momento__calloc(1, sizeof(*s) + md_slots * sizeof(grpc_metadata));
    if (!s)
        return NULL;
    s->cache = strdup(cache);
    s->topic = strdup(topic);
    if (!s->cache || !s->topic) {
        free(s->cache);
        free(s->topic);
        free(s);
        return NULL;
    }
    s->client = c;
    s->cb = cb;
    s->userdata = userdata;
    s->first_ms = o && o->first_message_timeout_ms ? o->first_message_timeout_ms
                                                    : c->cfg.timeout_ms;
    s->resubscribe_ms = o && o->resubscribe_delay_ms ? o->resubscribe_delay_ms
                                                      : DEFAULT_RESUBSCRIBE_MS;
    s->idle_ms = o && o->idle_timeout_ms ? o->idle_timeout_ms : DEFAULT_IDLE_MS;
    s->flags = o ? o->flags : 0;
    if (o && (o->resume_at_sequence_number || o->sequence_page)) {
        s->have_position = o->resume_at_sequence_number > 0;
        s->last_seq = o->resume_at_sequence_number ? o->resume_at_sequence_number - 1 : 0;
        s->page = o->sequence_page;
    }
    pthread_mutex_init(&s->lock, NULL);
    momento__timer_init(&s->timer, on_timer);
    s->track.wake = &s->timer;
    s->details = grpc_empty_slice();
    grpc_metadata_array_init(&s->recv_initial);
    grpc_metadata_array_init(&s->recv_trailing);
    s->md[s->n_md].key = grpc_slice_from_static_string("authorization");
    s->md[s->n_md++].value = c->auth_value;
    for (size_t i = 0; i < c->n_extra_md; i++)
        s->md[s->n_md++] = c->extra_md[i];
    return s;
}

int momento_topic_subscribe(momento_client *c, const char *cache, const char *topic,
                            const momento_subscribe_options *opts, momento_topic_callback cb,
                            void *userdata, momento_subscription **ret)
{
    if (!c || !cb || (opts && opts->size != sizeof(*opts)))
        return MOMENTO_ERR_INVALID_ARGUMENT;
    if (opts && opts->first_message_timeout_ms > MOMENTO__MAX_TIMEOUT_MS)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    MOMENTO__CHECK(momento__check_cache_name(cache));
    MOMENTO__CHECK(momento__check_topic_name(topic));
    momento_subscription *s = sub_new(c, cache, topic, opts, cb, userdata);
    if (!s)
        return MOMENTO_ERR_NO_MEMORY;
    s->refs = ret ? 2 : 1;
    int rc = momento__client_accept(c, &s->track, NULL);
    if (rc != MOMENTO_OK) {
        s->refs = 1;
        sub_unref(s);
        return rc;
    }
    /* A subscription is not an RPC a batch could wait behind. */
    momento__client_answered(c, &s->track);
    /* Streams open on the completion thread, where all their batches
     * complete: the first one too, at once. */
    s->state = S_WAITING;
    momento__timer_fire_soon(c, &s->timer);
    if (ret)
        *ret = s;
    return MOMENTO_OK;
}

void momento_topic_unsubscribe(momento_subscription *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->lock);
    if (s->unsubscribed || s->state == S_ENDED) {
        pthread_mutex_unlock(&s->lock);
        return;
    }
    s->unsubscribed = true;
    /* A stream open: cancelled through the client, which knows the current
     * gRPC call (its status completion then ends the subscription). None:
     * the resubscribe wait is cut short. Either way END follows on the
     * completion thread. Done under the lock, which end() takes to mark
     * the END: so the client is still there, and the timer queued here is
     * taken off again by end() before the memory can go. */
    momento__client_cancel(s->client, &s->track, NULL, "unsubscribed");
    momento__timer_fire_soon(s->client, &s->timer);
    pthread_mutex_unlock(&s->lock);
}

void momento_subscription_free(momento_subscription *s)
{
    if (!s)
        return;
    momento_topic_unsubscribe(s);
    sub_unref(s);
}

int momento_subscription_stats_get(const momento_subscription *sub,
                                   momento_subscription_stats *ret, size_t size)
{
    if (!sub || !ret)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    momento_subscription *s = (momento_subscription *)sub; /* the lock is not the value */
    pthread_mutex_lock(&s->lock);
    momento_subscription_stats snap = s->stats;
    pthread_mutex_unlock(&s->lock);
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
    cb(s, ev, ud);
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
    if (c && momento__current_client == c)
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
            sub_unref(s); /* the library's reference keeps it running */
        }
    }
    pthread_mutex_destroy(&w.lock);
    pthread_cond_destroy(&w.cond);
    return rc;
}
