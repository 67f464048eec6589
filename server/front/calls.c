/* The gRPC call layer (srv_calls.h), one of the two network front ends
 * (the other is protosocket.c): the server thread owns the completion
 * queue, the store and a timer heap. Every call is requested as a
 * registered method with its payload already read, checked (auth, rate,
 * a disposable token's scope, faults - which only the --auth-token's
 * holder may inject on a server with one),
 * handed to the dispatcher, answered (a unary call with one batch, a
 * stream with one batch per message, the status riding with the last) and
 * counted.
 * Injected delays park a call on the timer heap, so a delayed call never
 * holds up any other. A parked call never outlives its client: its delay
 * ends at its deadline at the latest (the client's own deadline ends it,
 * or the server 1 s later, lest it answer before the client's deadline),
 * and it watches for its client going
 * away (RECV_CLOSE_ON_SERVER started when it is parked), which takes it off
 * the heap and frees it at once.
 *
 * Every call's RECV_CLOSE_ON_SERVER also tells whether it ended before its
 * status was sent (gRPC's `cancelled`): a call its client cancelled or left
 * then is counted for momento_local_cancelled_calls(), parked or not. A
 * call that is not parked receives it in the batch of its status; a parked
 * call watches for it in a batch of its own, as each of its batches must
 * complete before the next can start, and so does a stream whose batch
 * before the last failed (its client gone, the likely cause).
 *
 * A Subscribe stream (topics.c) is the exception to "answered, then
 * done": its handler leaves its subscription in the reply as an
 * attachment (srv_attach.h), and the call sends what the subscription
 * queues, one message per batch with one
 * batch out at a time, until the subscription ends (its cache deleted, an
 * injected stream error, the server stopping, the disposable token it was
 * opened with expiring: such a stream waits on the timer heap for the
 * expiry) or its client goes away. It watches for the latter from the
 * start, so that a subscriber that leaves leaves its topic at once, and it
 * is counted once, when it ends. */
#include "front/srv_calls.h"

#include "clock.h"
#include "core/srv_metadata.h"
#include "core/srv_reply.h"
#include "core/srv_tokens.h"
#include "data/srv_list.h"
#include "grpc_util.h"

#include <grpc/slice_buffer.h>
#include <grpc/support/time.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Calls requested per method ahead of arrival: enough that a burst does not
 * wait for the server thread to re-request. */
#define REQUESTS_PER_METHOD 16
/* 200,000 items a second, in sweeps well under a millisecond each: one of
 * 200,000 took tens of milliseconds, which every call waited. */
#define SWEEP_INTERVAL_MS 50
#define SWEEP_BUDGET 10000
/* Upper bound on how long the loop sleeps, so momento_local_stop() is seen
 * promptly even with no traffic. */
#define MAX_WAIT_MS 50
/* What a call meets while the data port is blocked (momento_local_block). */
#define BLOCKED "the data port is blocked (test admin)"
/* A call whose client goes away this close to its deadline (or later),
 * before its status was sent, ended at its deadline (a parked one counts
 * as DEADLINE_EXCEEDED), else its client cancelled it (a parked one counts
 * as CANCELLED): the client's own deadline timer and the server's (which
 * starts when the headers arrive) fire a little apart. */
#define DEADLINE_SLACK_MS 50
/* A delayed call that reaches its deadline is its client's to end (at the
 * deadline, by cancelling it); the server answers it DEADLINE_EXCEEDED
 * itself only this long after the deadline as gRPC gives it, if the client
 * has not. That view can fall well before the client's deadline: gRPC
 * dates the arrival by the clock it caches while it works (ExecCtx::Now),
 * which lagged by up to 24 ms under CPU load and by 90 ms or more under
 * valgrind, where an answer 50 ms after it reached clients as a timeout
 * 40 ms before their deadline. */
#define DEADLINE_ANSWER_MS 1000

typedef enum { TAG_NEW_CALL, TAG_BATCH, TAG_CLOSE, TAG_SHUTDOWN } tag_kind;

typedef struct srv_call {
    tag_kind kind; /* first member: every tag starts with its kind */
    momento_local *s;
    momento__rpc_id method;    /* SRV_UNKNOWN for a path outside the table */
    grpc_call *call;
    gpr_timespec deadline;
    grpc_metadata_array md;
    grpc_byte_buffer *payload; /* until call_body() reads it into `body` */
    grpc_slice body;
    bool have_body;
    grpc_call_details details; /* unknown-method requests only */
    srv_reply reply;
    size_t sent;               /* stream messages sent */
    bool started;              /* initial metadata sent */
    bool final_sent;
    int cancelled;
    grpc_byte_buffer *out;     /* the reply's message buffer, refilled per message */
    grpc_slice status_details;
    grpc_metadata trailer;
    int64_t due_ms;            /* when due on the timer heap: a delay's end, a token's expiry */
    int64_t deadline_ms;       /* the call's deadline (store_now_ms clock); INT64_MAX: none */
    uint64_t seq;              /* arrival order: breaks ties in due_ms */
    size_t heap_index;         /* its place on the timer heap, MOMENTO__HEAP_GONE when not on it */
    int pending_error;         /* injected error to send after a delay, or -1 */
    /* Its disposable token's expiry (seconds since the epoch), 0 for a
     * call without one; and whether the token's scope was checked when it
     * arrived, with no delay since (after a delay it is checked again: the
     * token may have expired meanwhile). */
    uint64_t token_valid_until;
    bool scope_checked;
    /* The tag of the RECV_CLOSE_ON_SERVER batch started when the call is
     * parked; it completes when the client cancels, its deadline passes,
     * the connection drops, or (after the reply) the call is over. */
    tag_kind close_kind;
    bool close_started;        /* RECV_CLOSE_ON_SERVER is in a batch already */
    bool close_in_reply;       /* ... in the reply's final batch (`kind` TAG_BATCH) */
    bool server_ended;         /* we cancelled it ourselves: a reply batch would not start */
    bool client_gone;          /* that batch completed: send nothing more */
    bool finished;             /* nothing more to send; free when no batch is out */
    int outstanding;           /* batches started whose tags have not come back */
    /* Held back behind a long request's pins (srv_turns.h): in
     * s->deferred (or s->redo while answered again), and on the timer
     * heap until its deadline if it has one. */
    bool deferred;
    struct srv_call_list *list;
    struct srv_call *next, *prev;
    uint64_t arrival;          /* order of arrival, kept in s->deferred */
    /* A stream: its messages come from `source`, the attachment its
     * reply carried (srv_attach.h; Subscribe's subscription), which the
     * call owns from stream_start() on and frees with itself. ops NULL:
     * not a stream. */
    srv_attachment source;
    bool sending;              /* its message batch is out */
    bool pumping;              /* in stream_pump(): a wake-up from below is ignored */
    int stream_error;          /* injected stream-error status, or -1 */
    uint32_t stream_error_after; /* ... after this many messages */
    uint32_t drop_items;       /* items still to drop unseen (stream-drop-items) */
    uint32_t drop_after;       /* ...once this many more have gone out */
} srv_call;

static tag_kind shutdown_tag = TAG_SHUTDOWN;

static bool is_stream(const srv_call *c)
{
    return c->source.ops != NULL;
}

/* Ends the stream's source with `status`; it wakes the stream to send it. */
static void source_end(srv_call *c, grpc_status_code status, const char *details)
{
    c->source.ops->end(c->source.obj, status, details);
}

/* Earlier due time first; equal due times in arrival order, so calls with
 * the same injected delay are answered in the order they came. */
static bool due_before(const void *a, const void *b)
{
    const srv_call *x = a, *y = b;
    return x->due_ms < y->due_ms || (x->due_ms == y->due_ms && x->seq < y->seq);
}

static void heap_moved(void *item, size_t index)
{
    ((srv_call *)item)->heap_index = index;
}

/* ---- call lifecycle -------------------------------------------------- */

static void timer_remove(momento_local *s, srv_call *c);

/* ---- calls held back behind pins ------------------------------------ */

static void list_remove(srv_call *c)
{
    struct srv_call_list *l = c->list;
    if (!l)
        return;
    SRV_QUEUE_REMOVE(l->head, l->tail, c, prev, next);
    c->list = NULL;
}

/* Into `l` in order of arrival: a call answered again and held back once
 * more goes back before those that came after it. */
static void list_insert(struct srv_call_list *l, srv_call *c)
{
    srv_call *after = l->tail;
    while (after && after->arrival > c->arrival)
        after = after->prev;
    c->prev = after;
    c->next = after ? after->next : l->head;
    if (c->next)
        c->next->prev = c;
    else
        l->tail = c;
    if (after)
        after->next = c;
    else
        l->head = c;
    c->list = l;
}

/* Takes a held-back call off its list and the heap. */
static void undefer(srv_call *c)
{
    if (c->heap_index != MOMENTO__HEAP_GONE)
        timer_remove(c->s, c);
    list_remove(c);
    c->deferred = false;
    c->reply.deferred = false;
    atomic_fetch_sub_explicit(&c->s->waiting_calls, 1, memory_order_relaxed);
}

static void call_free(srv_call *c)
{
    if (c->deferred)
        undefer(c);
    /* A stream may end (its cache deleted, an injected error, its client
     * gone) before its token expires: it leaves the heap with it. */
    if (c->heap_index != MOMENTO__HEAP_GONE)
        timer_remove(c->s, c);
    if (is_stream(c)) {
        c->source.ops->free(c->source.obj);
        atomic_fetch_sub(&c->s->open_streams, 1);
    }
    if (c->call)
        grpc_call_unref(c->call);
    grpc_metadata_array_destroy(&c->md);
    if (c->payload)
        grpc_byte_buffer_destroy(c->payload);
    if (c->have_body)
        grpc_slice_unref(c->body);
    if (c->out)
        grpc_byte_buffer_destroy(c->out);
    if (c->method == SRV_UNKNOWN)
        grpc_call_details_destroy(&c->details);
    grpc_slice_unref(c->status_details);
    srv_reply_clear(&c->reply);
    free(c);
}

static void request_call(momento_local *s, momento__rpc_id m)
{
    srv_call *c = calloc(1, sizeof(*c));
    if (!c)
        return;
    c->kind = TAG_NEW_CALL;
    c->s = s;
    c->method = m;
    c->pending_error = -1;
    c->stream_error = -1;
    c->heap_index = MOMENTO__HEAP_GONE;
    c->close_kind = TAG_CLOSE;
    c->status_details = grpc_empty_slice();
    grpc_metadata_array_init(&c->md);
    grpc_call_error err;
    if (m == SRV_UNKNOWN) {
        grpc_call_details_init(&c->details);
        err = grpc_server_request_call(s->server, &c->call, &c->details, &c->md, s->cq, s->cq, c);
    } else {
        err = grpc_server_request_registered_call(s->server, s->registered[m], &c->call,
                                                  &c->deadline, &c->md, &c->payload, s->cq, s->cq,
                                                  c);
    }
    if (err != GRPC_CALL_OK)
        call_free(c);
}

/* Every batch of a call starts here. None may once the queue is shut:
 * gRPC aborts the process on a batch for a shut queue, so it is refused as
 * one that would not start, which every caller handles. (The queue is not
 * shut while a call is answered off the poller, after_event().) */
static bool start_batch(srv_call *c, const grpc_op *ops, size_t n, void *tag)
{
    if (c->s->queue_shut)
        return false;
    return grpc_call_start_batch(c->call, ops, n, tag, NULL) == GRPC_CALL_OK;
}

/* Starts RECV_CLOSE_ON_SERVER in a batch of its own (tag `close_kind`). It
 * completes when the client cancels or goes away, the deadline passes, the
 * server stops, or (after the reply) the call is over; on_close() reads
 * which. Should it fail to start, a parked call still leaves at its
 * deadline and its final batch carries RECV_CLOSE_ON_SERVER. */
static void watch_close(srv_call *c)
{
    grpc_op op;
    memset(&op, 0, sizeof(op));
    op.op = GRPC_OP_RECV_CLOSE_ON_SERVER;
    op.data.recv_close_on_server.cancelled = &c->cancelled;
    if (start_batch(c, &op, 1, &c->close_kind)) {
        c->close_started = true;
        c->outstanding++;
    }
}

/* Starts the next batch of a call's reply; false when there is none left.
 * gRPC core sends one message per GRPC_OP_SEND_MESSAGE and takes one at a
 * time, so a reply of n messages is n batches (one when it has none): the
 * first carries the initial metadata, the last the status (and
 * RECV_CLOSE_ON_SERVER, as a unary reply does). The messages between go
 * with GRPC_WRITE_BUFFER_HINT: gRPC then completes each one's batch as soon
 * as the message is buffered (up to the transport's write buffer, 64 KiB)
 * instead of after a write of its own, and they leave with the last
 * message's: a stream that fits the buffer is two writes, not one per
 * message (a bigger one writes as the buffer fills). Not the first:
 * its batch also holds the initial metadata, which completes only once
 * written, and a buffered message starts no write — the stream would wait
 * for whatever else made the connection write. */
static bool send_next(srv_call *c)
{
    if (c->final_sent)
        return false;
    grpc_op ops[4];
    size_t n = 0;
    memset(ops, 0, sizeof(ops));
    srv_reply *r = &c->reply;
    bool first = !c->started;
    if (first) {
        c->started = true;
        ops[n++].op = GRPC_OP_SEND_INITIAL_METADATA;
    }
    bool message = r->status == GRPC_STATUS_OK && c->sent < r->n_msgs;
    if (message) {
        /* One byte buffer per call, refilled for each message once the
         * previous batch is back: creating and destroying one per message
         * (each with an ExecCtx of its own) cost ~500 instructions. The
         * message's slice is handed over, not referenced again. */
        if (!c->out)
            c->out = grpc_raw_byte_buffer_create(NULL, 0);
        grpc_slice_buffer *sb = &c->out->data.raw.slice_buffer;
        if (sb->count) /* gRPC moves the slices out; should it not have */
            grpc_slice_buffer_reset_and_unref(sb);
        grpc_slice_buffer_add(sb, r->msgs[c->sent]);
        r->msgs[c->sent++] = grpc_empty_slice();
        ops[n].op = GRPC_OP_SEND_MESSAGE;
        ops[n].data.send_message.send_message = c->out;
        if (!first && c->sent < r->n_msgs)
            ops[n].flags = GRPC_WRITE_BUFFER_HINT;
        n++;
    }
    if (!message || c->sent == r->n_msgs) {
        c->status_details = grpc_slice_from_copied_string(r->details);
        ops[n].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
        ops[n].data.send_status_from_server.status = r->status;
        ops[n].data.send_status_from_server.status_details = &c->status_details;
        if (r->err) {
            c->trailer.key = grpc_slice_from_static_string("err");
            c->trailer.value = grpc_slice_from_static_string(r->err);
            ops[n].data.send_status_from_server.trailing_metadata_count = 1;
            ops[n].data.send_status_from_server.trailing_metadata = &c->trailer;
        }
        n++;
        if (!c->close_started) {
            ops[n].op = GRPC_OP_RECV_CLOSE_ON_SERVER;
            ops[n].data.recv_close_on_server.cancelled = &c->cancelled;
            n++;
            c->close_started = true;
            c->close_in_reply = true;
        }
        c->final_sent = true;
    }
    c->kind = TAG_BATCH;
    if (!start_batch(c, ops, n, c)) {
        /* finish() cancels the call, which its RECV_CLOSE_ON_SERVER (if
         * any is out) reports as cancelled: not the client's doing. */
        c->server_ended = true;
        c->close_in_reply = false;
        return false;
    }
    c->outstanding++;
    return true;
}

/* Our side of the call is over: it is freed once gRPC has given back every
 * batch. A call ended without a status is cancelled, so that a
 * RECV_CLOSE_ON_SERVER still out completes. */
static void finish(srv_call *c)
{
    c->finished = true;
    if (c->outstanding == 0)
        call_free(c);
    else if (!c->final_sent)
        grpc_call_cancel(c->call, NULL);
}

static void stream_start(srv_call *c);

static void reply(srv_call *c)
{
    srv_stats_count(c->s, SRV_VIA_GRPC, c->method, c->reply.status);
    if (!send_next(c))
        finish(c);
}

/* The request's bytes, read once (the scope check on arrival, the token
 * service's key and the handler may each need them): a request in one
 * slice (the usual case) is read where it is, as readall() would copy it,
 * a batch's whole body. False when the request has no message. */
static bool call_body(srv_call *c, grpc_slice *ret_body)
{
    if (!c->have_body) {
        if (!c->payload)
            return false;
        c->body = momento__byte_buffer_slice(c->payload);
        c->have_body = true;
        grpc_byte_buffer_destroy(c->payload);
        c->payload = NULL;
    }
    *ret_body = c->body;
    return true;
}

/* A disposable token's scope: the cache, keys or topic and the access it
 * grants (tokens.c). False with the reply set when it does not allow the
 * call (or the token no longer holds); true for a call without one. */
static bool token_permits(srv_call *c, grpc_slice body)
{
    return srv_token_permits(c->s, c->method, srv_header(&c->md, "authorization"),
                             srv_header(&c->md, "cache"), body, &c->reply);
}

static void defer(srv_call *c);
static void redo_deferred(momento_local *s);

/* This thread is in redo_deferred()'s loop; a release on it (a held call
 * answered again that ran long) makes that loop go round again. Per
 * thread: a long request ending on another thread redoes at once itself,
 * rather than leave its waiters to a loop busy elsewhere. */
static _Thread_local bool t_redoing;
static _Thread_local bool t_redo_again;

/* Runs the handler (or the injected error) and replies; or holds the call
 * back while a long request holds what it names (srv_turns.h). */
static void answer(srv_call *c)
{
    grpc_slice body;
    if (c->pending_error >= 0) {
        srv_reply_error(&c->reply, (grpc_status_code)c->pending_error, NULL,
                        "injected error (return-error)");
    } else if (!call_body(c, &body)) {
        srv_reply_error(&c->reply, GRPC_STATUS_INVALID_ARGUMENT, NULL, "request has no message");
    } else {
        momento_local *s = c->s;
        const grpc_slice *cache = srv_header(&c->md, "cache");
        srv_work w;
        /* A release seen while this call's work gave its turn away: if
         * the call is then held back, the request it waited for may be
         * done already, and no later release would wake it. */
        uint64_t releases = s->turns.releases;
        s->turns.answering++;
        srv_work_begin(&w, &s->turns, &s->store);
        if (c->scope_checked || token_permits(c, body))
            s->dispatch(s, c->method, cache ? (const char *)GRPC_SLICE_START_PTR(*cache) : NULL,
                        cache ? GRPC_SLICE_LENGTH(*cache) : 0, GRPC_SLICE_START_PTR(body),
                        GRPC_SLICE_LENGTH(body), &c->reply);
        bool released = srv_work_end(&w);
        if (released)
            s->turns.releases++;
        if (c->reply.deferred) {
            defer(c);
            if (s->turns.releases != releases)
                released = true;
        } else {
            /* The request is done with: its memory goes back before the
             * reply is sent. */
            grpc_slice_unref(c->body);
            c->body = grpc_empty_slice();
            if (c->reply.attached.ops)
                stream_start(c);
            else
                reply(c);
        }
        /* `c` may be freed by now. */
        s->turns.answering--;
        if (released)
            redo_deferred(s);
        return;
    }
    reply(c);
}

static bool rate_limited(momento_local *s)
{
    if (!s->opts.max_rps)
        return false;
    int64_t now = store_now_ms();
    if (now - s->rate_window_ms >= 1000) {
        s->rate_window_ms = now;
        s->rate_count = 0;
    }
    return ++s->rate_count > s->opts.max_rps;
}

/* The first millisecond of store_now_ms()'s clock at or after `ns` of
 * momento__mono_ns()'s: a timer due then fires at `ns` or later, never before. */
static int64_t ms_at_or_after(int64_t ns)
{
    return ns / 1000000 + (ns % 1000000 > 0);
}

/* The call's deadline (as gRPC read it from grpc-timeout) in
 * store_now_ms()'s milliseconds, rounded up: the first millisecond at or
 * after it. Rounded down, a delay ending in the deadline's millisecond was
 * answered DEADLINE_EXCEEDED before the deadline. INT64_MAX for none. */
static int64_t deadline_in_ms(const srv_call *c)
{
    if (c->method == SRV_UNKNOWN || c->deadline.tv_sec == INT64_MAX)
        return INT64_MAX;
    gpr_timespec left = gpr_time_sub(gpr_convert_clock_type(c->deadline, GPR_CLOCK_MONOTONIC),
                                     gpr_now(GPR_CLOCK_MONOTONIC));
    if (left.tv_sec > INT32_MAX)
        return INT64_MAX;
    /* Read after gRPC's clock: the sum errs late, never early. */
    return ms_at_or_after(momento__mono_ns() + momento__gpr_ns(left));
}

/* When store_now_ms() reaches a disposable token's expiry, `valid_until`
 * seconds since the epoch (tokens.c: expired once time(NULL) reaches it),
 * rounded up as above. */
static int64_t expiry_in_ms(uint64_t valid_until)
{
    struct timespec wall;
    clock_gettime(CLOCK_REALTIME, &wall);
    int64_t left = (int64_t)valid_until * 1000000000 - momento__timespec_ns(wall);
    return ms_at_or_after(momento__mono_ns() + left);
}

/* The timer heap holds the calls parked by a delay and the subscription
 * streams waiting for their token to expire (is_stream(): a call becomes a
 * stream only once answered, so never while parked), one clock for both.
 * momento_local_parked_calls() counts the former. */
static bool timer_push(momento_local *s, srv_call *c)
{
    c->seq = s->timer_seq++;
    if (momento__heap_push(&s->timers, c) != 0)
        return false;
    if (!is_stream(c) && !c->deferred)
        atomic_fetch_add_explicit(&s->parked, 1, memory_order_relaxed);
    return true;
}

static void timer_remove(momento_local *s, srv_call *c)
{
    momento__heap_remove(&s->timers, c->heap_index);
    if (!is_stream(c) && !c->deferred)
        atomic_fetch_sub_explicit(&s->parked, 1, memory_order_relaxed);
}

/* Whether the call's deadline is less than DEADLINE_SLACK_MS away, or
 * past. */
static bool near_deadline(const srv_call *c)
{
    /* The deadline of a call outside the table is in `details`. */
    gpr_timespec d = c->method == SRV_UNKNOWN ? c->details.deadline : c->deadline;
    if (d.tv_sec == INT64_MAX)
        return false;
    gpr_timespec left = gpr_time_sub(gpr_convert_clock_type(d, GPR_CLOCK_MONOTONIC),
                                     gpr_now(GPR_CLOCK_MONOTONIC));
    return gpr_time_cmp(left, gpr_time_from_millis(DEADLINE_SLACK_MS, GPR_TIMESPAN)) < 0;
}

/* Who ended a call before its status was sent, as a status: UNAVAILABLE
 * the server stopping (which cancels every call), DEADLINE_EXCEEDED its
 * deadline (gRPC cancels the call at it, and the client's own timer fires
 * then too), CANCELLED its client, by cancelling or going away. gRPC says
 * only that the call was cancelled, not by whom, hence the clocks. */
static grpc_status_code ended_by(const srv_call *c)
{
    if (atomic_load(&c->s->stopping))
        return GRPC_STATUS_UNAVAILABLE;
    if (near_deadline(c))
        return GRPC_STATUS_DEADLINE_EXCEEDED;
    return GRPC_STATUS_CANCELLED;
}

/* The call's RECV_CLOSE_ON_SERVER completed after its reply had begun (or
 * with it): counts the call as cancelled by its client if gRPC says it
 * ended before its status was sent and neither we, the deadline nor the
 * server stopping ended it. A call whose status had gone out is not
 * counted, whatever the client does afterwards. */
static void count_if_client_cancelled(srv_call *c)
{
    if (c->cancelled && !c->server_ended && ended_by(c) == GRPC_STATUS_CANCELLED)
        srv_stats_count_client_cancel(c->s, c->method);
}

/* Holds the call until `delay_ms` from now, or its deadline if that comes
 * first, and watches for its client going away meanwhile. False if it
 * could not be parked (out of memory). */
static bool park(srv_call *c, uint32_t delay_ms)
{
    momento_local *s = c->s;
    c->deadline_ms = deadline_in_ms(c);
    c->due_ms = store_now_ms() + delay_ms;
    /* A delay that reaches the deadline is the client's to end: it does so
     * at its deadline (counted as ended by the deadline, near_deadline()).
     * The server answers DEADLINE_EXCEEDED only if it has not, and never
     * at or near the deadline itself: answering then reached applications
     * as a timeout before their own deadline (bench/lateness.sh). */
    if (c->deadline_ms != INT64_MAX && c->due_ms >= c->deadline_ms)
        c->due_ms = c->deadline_ms + DEADLINE_ANSWER_MS;
    /* The token's scope is checked again when the delay is over. */
    c->scope_checked = false;
    if (!timer_push(s, c))
        return false;
    watch_close(c);
    return true;
}

/* Holds the call back until the long request that holds what it names is
 * done (redo_deferred()), watching for its client going away meanwhile; if
 * that comes after the call's deadline, it is answered DEADLINE_EXCEEDED
 * then (as a delayed call is, park()). */
static void defer(srv_call *c)
{
    momento_local *s = c->s;
    c->deferred = true;
    atomic_fetch_add_explicit(&s->waiting_calls, 1, memory_order_relaxed);
    list_insert(&s->deferred, c);
    c->deadline_ms = deadline_in_ms(c);
    if (c->deadline_ms != INT64_MAX) {
        c->due_ms = c->deadline_ms + DEADLINE_ANSWER_MS;
        /* Without the timer it still ends: at the redo, or its client
         * leaving. */
        (void)timer_push(s, c);
    }
    if (!c->close_started)
        watch_close(c);
}

/* A long request is done: the calls held back are answered again, in
 * order of arrival (each may be held back again, behind another). Not
 * re-entered: a redo that releases pins itself makes this loop go again. */
static void redo_deferred(momento_local *s)
{
    if (t_redoing) {
        t_redo_again = true;
        return;
    }
    t_redoing = true;
    do {
        t_redo_again = false;
        srv_call *c;
        while ((c = s->deferred.head)) {
            list_remove(c);
            list_insert(&s->redo, c);
        }
        /* From the list, not a copy of it: while one is answered (a long
         * one gives its turn away), the others may leave. */
        while ((c = s->redo.head)) {
            undefer(c);
            answer(c);
        }
    } while (t_redo_again);
    t_redoing = false;
}

/* What the protosocket port (protosocket.c) shares with the calls: the
 * one rate window, and the calls held behind pins its commands release. */
bool srv_calls_rate_limited(momento_local *s)
{
    return rate_limited(s);
}

void srv_calls_redo(momento_local *s)
{
    redo_deferred(s);
}

/* ---- subscription streams ------------------------------------------- */

/* The source's next message, less the items a `stream-drop-items` fault
 * drops unseen (after `stream-drop-after` went out), as a lost message
 * would be: the subscriber learns of it
 * only from the next item's number. An item is a _SubscriptionItem whose
 * first field is 1 (`item`); heartbeats and discontinuities pass. */
static bool next_kept(srv_call *c, grpc_slice *msg, bool *more)
{
    while (c->source.ops->next(c->source.obj, msg, more)) {
        if (c->drop_items == 0 || GRPC_SLICE_LENGTH(*msg) == 0 ||
            GRPC_SLICE_START_PTR(*msg)[0] != ((1 << 3) | 2))
            return true;
        if (c->drop_after > 0) {
            c->drop_after--;
            return true;
        }
        c->drop_items--;
        grpc_slice_unref(*msg);
    }
    return false;
}

/* Sends the subscription's next message, or its status once it has ended,
 * unless a batch is out already (its completion pumps again) or the call
 * is over. Messages with more queued behind them go with
 * GRPC_WRITE_BUFFER_HINT (as in send_next()): a subscriber that fell
 * behind gets its backlog in few writes. The call may be freed on the way
 * (a batch that would not start), so callers touch it no more after. */
static void stream_pump(srv_call *c)
{
    if (c->pumping || c->sending || c->final_sent || c->finished || c->client_gone)
        return;
    momento_local *s = c->s;
    /* source_end() wakes this stream: `pumping` makes that a no-op, and
     * the status is sent below. */
    c->pumping = true;
    if (c->stream_error >= 0 && c->sent >= c->stream_error_after) {
        source_end(c, (grpc_status_code)c->stream_error, "injected error (stream-error)");
        c->stream_error = -1;
    }
    if (atomic_load(&s->ending_streams))
        source_end(c, GRPC_STATUS_UNAVAILABLE, "server stopping");
    if (atomic_load_explicit(&s->blocked, memory_order_relaxed))
        source_end(c, GRPC_STATUS_UNAVAILABLE, BLOCKED);
    grpc_op ops[2];
    size_t n = 0;
    memset(ops, 0, sizeof(ops));
    bool first = !c->started;
    if (first) {
        c->started = true;
        ops[n++].op = GRPC_OP_SEND_INITIAL_METADATA;
    }
    grpc_status_code status;
    const char *details;
    grpc_slice msg;
    bool more;
    if (c->source.ops->ended(c->source.obj, &status, &details)) {
        c->status_details = grpc_slice_from_copied_string(details);
        ops[n].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
        ops[n].data.send_status_from_server.status = status;
        ops[n].data.send_status_from_server.status_details = &c->status_details;
        n++;
        c->final_sent = true;
        srv_stats_count(s, SRV_VIA_GRPC, c->method, status);
    } else if (next_kept(c, &msg, &more)) {
        if (!c->out)
            c->out = grpc_raw_byte_buffer_create(NULL, 0);
        grpc_slice_buffer *sb = &c->out->data.raw.slice_buffer;
        if (sb->count)
            grpc_slice_buffer_reset_and_unref(sb);
        grpc_slice_buffer_add(sb, msg);
        ops[n].op = GRPC_OP_SEND_MESSAGE;
        ops[n].data.send_message.send_message = c->out;
        if (!first && more)
            ops[n].flags = GRPC_WRITE_BUFFER_HINT;
        n++;
        c->sent++;
    }
    bool ok = true;
    if (n) {
        c->kind = TAG_BATCH;
        ok = start_batch(c, ops, n, c);
        if (ok) {
            c->outstanding++;
            c->sending = true;
        }
    }
    c->pumping = false;
    if (!ok) {
        /* The call is broken: cancelled by finish(), whose close watch
         * then counts it (not as its client's doing). */
        c->server_ended = true;
        finish(c);
    }
}

/* The source has news (its ops' set_wake): a message to send, or
 * its end. Ignored while the stream is pumping (`pumping`). */
static void stream_wake(void *arg)
{
    stream_pump(arg);
}

/* The handler left an attachment in the reply (Subscribe's subscription):
 * the call becomes its stream, driven by the attachment's ops alone. A
 * stream opened with a disposable token lasts until the token expires
 * (stream_token_expired()): it waits on the timer heap for that. */
static void stream_start(srv_call *c)
{
    c->source = srv_reply_take_attachment(&c->reply);
    atomic_fetch_add(&c->s->open_streams, 1);
    c->source.ops->set_wake(c->source.obj, stream_wake, c);
    /* A parked call watches already. */
    if (!c->close_started)
        watch_close(c);
    if (c->token_valid_until) {
        c->due_ms = expiry_in_ms(c->token_valid_until);
        if (!timer_push(c->s, c)) {
            /* Without a timer it would outlive its token: it ends now. */
            source_end(c, GRPC_STATUS_RESOURCE_EXHAUSTED, "server out of memory");
        }
    }
    stream_pump(c);
}

/* Its token expired: the stream ends UNAUTHENTICATED, as Momento answers
 * every call made with an expired token (docs/server.md "Disposable
 * tokens"), within a millisecond or two of the expiry. */
static void stream_token_expired(srv_call *c)
{
    source_end(c, GRPC_STATUS_UNAUTHENTICATED, "auth token has expired");
}

static void stream_batch_done(srv_call *c, bool ok)
{
    c->sending = false;
    if (c->finished) {
        if (c->outstanding == 0)
            call_free(c);
        return;
    }
    if (c->final_sent) {
        finish(c);
        return;
    }
    if (!ok) {
        /* Its client is gone: the close watch says so and ends it. Should
         * that watch not be out, nothing else would. */
        if (!c->close_started) {
            srv_stats_count(c->s, SRV_VIA_GRPC, c->method, ended_by(c));
            c->final_sent = true;
            finish(c);
        }
        return;
    }
    stream_pump(c);
}

/* The stream's RECV_CLOSE_ON_SERVER completed. Before its status was sent
 * that means its client cancelled or left, its deadline passed or the
 * server is stopping: counted as such (CANCELLED counts as cancelled by
 * the client, as for a parked call) and its subscription leaves its topic
 * now. */
static void stream_closed(srv_call *c)
{
    if (!c->final_sent) {
        grpc_status_code st = ended_by(c);
        srv_stats_count(c->s, SRV_VIA_GRPC, c->method, st);
        if (st == GRPC_STATUS_CANCELLED && !c->server_ended)
            srv_stats_count_client_cancel(c->s, c->method);
        c->final_sent = true; /* nothing more goes out */
    } else {
        count_if_client_cancelled(c);
    }
    source_end(c, GRPC_STATUS_CANCELLED, "the client went away");
    finish(c);
}

static bool holds_auth_token(const momento_local *s, const grpc_slice *auth)
{
    return auth && grpc_slice_str_cmp(*auth, s->opts.auth_token) == 0;
}

/* Whether the call's fault headers apply. On a server with --auth-token
 * only to a call holding that token: as `authorization`, or for the token
 * and auth services, which read their caller's key from the body
 * (rpc_token.c, rpc_api_key.c), as the request's key. Nobody else, a disposable token's holder included
 * (Momento itself has no fault injection), can park calls on the server
 * or fail them: such a call is answered as if it had no fault headers,
 * even malformed ones. On a server without a token, anyone may. */
static bool may_inject_faults(srv_call *c, const grpc_slice *auth, bool token_plane)
{
    const momento_local *s = c->s;
    if (!s->opts.auth_token || holds_auth_token(s, auth))
        return true;
    grpc_slice body;
    return token_plane && call_body(c, &body) &&
           srv_token_request_key_is(c->method, body, s->opts.auth_token);
}

/* The checks before a call is answered, in the order that
 * docs/protocol.md "Errors momento-local returns" lists them. */
static void on_new_call(srv_call *c, bool ok)
{
    momento_local *s = c->s;
    if (!ok) { /* the server is shutting down */
        call_free(c);
        return;
    }
    /* A call gRPC matched before the stop can still come after the
     * shutdown tag, even after the queue is shut: any batch started for it
     * then aborts the process in gRPC (seen with a client freed just
     * before the stop: its delayed get was parked, watch_close()). It
     * goes unanswered; the unref in call_free() cancels it. */
    if (s->queue_shut) {
        call_free(c);
        return;
    }
    if (!s->shut_down)
        request_call(s, c->method);
    c->arrival = s->arrivals++;
    srv_stats_count_headers(s, &c->md);

    if (atomic_load_explicit(&s->blocked, memory_order_relaxed)) {
        srv_reply_error(&c->reply, GRPC_STATUS_UNAVAILABLE, NULL, BLOCKED);
        reply(c);
        return;
    }
    if (c->method == SRV_UNKNOWN) {
        srv_reply_error(&c->reply, GRPC_STATUS_UNIMPLEMENTED, NULL, "unknown method");
        reply(c);
        return;
    }
    const momento__rpc *rpc = &momento__rpcs[c->method];
    /* Official clients ping without a token (docs/protocol.md "Headers"). */
    bool ping = rpc->plane == MOMENTO__PLANE_PING;
    bool authenticated = true;
    const grpc_slice *auth = srv_header(&c->md, "authorization");
    /* A disposable token or API key this server issued is a credential of
     * its own (tokens.c): forged, altered, expired or refreshed away, the
     * call ends here. The token and auth services read their caller's key
     * from the body (rpc_token.c, rpc_api_key.c). */
    bool token_plane = rpc->plane == MOMENTO__PLANE_TOKEN || rpc->plane == MOMENTO__PLANE_AUTH;
    int disposable = ping || token_plane
                         ? 0
                         : srv_token_authenticate(s, auth, &c->reply, &c->token_valid_until);
    if (disposable < 0) {
        reply(c);
        return;
    }
    if (s->opts.auth_token && !disposable && !token_plane)
        authenticated = holds_auth_token(s, auth);
    if (!authenticated && !ping) {
        srv_reply_error(&c->reply, GRPC_STATUS_UNAUTHENTICATED, NULL, "invalid auth token");
        reply(c);
        return;
    }
    if (!ping && rate_limited(s)) {
        /* "operations": the word official SDKs look for when they read the
         * message rather than the `err` trailer. */
        srv_reply_error(&c->reply, GRPC_STATUS_RESOURCE_EXHAUSTED, "operations_rate_limit_exceeded",
                        "operations rate limit exceeded: more than %u operations per second",
                        s->opts.max_rps);
        reply(c);
        return;
    }
    /* A disposable token's scope comes before anything the call asks of
     * the server: a call outside it is refused at once, never delayed. A
     * call without a message is refused for that when it is answered. */
    grpc_slice body;
    if (disposable && call_body(c, &body)) {
        if (!token_permits(c, body)) {
            reply(c);
            return;
        }
        c->scope_checked = true;
    }
    fault_plan plan = {.error_status = -1, .stream_error_status = -1};
    if (faults_requested(&c->md) && may_inject_faults(c, auth, token_plane)) {
        if (rpc->streaming && rpc->plane == MOMENTO__PLANE_TOPIC) {
            faults_plan_subscription(&s->sessions, &c->md, rpc, &plan);
        } else {
            /* The request, for faults scoped to keys (error-keys,
             * delay-keys): read here only when faults are asked for. */
            fault_request req = {.keys = s->request_keys, .m = c->method};
            if (call_body(c, &body)) {
                req.body = GRPC_SLICE_START_PTR(body);
                req.len = GRPC_SLICE_LENGTH(body);
            }
            faults_plan_request(&s->sessions, &c->md, rpc, &req, &plan);
        }
    }
    if (plan.bad_header) {
        srv_reply_error(&c->reply, GRPC_STATUS_INVALID_ARGUMENT, NULL, "%s", plan.bad_header);
        reply(c);
        return;
    }
    c->pending_error = plan.error_status;
    c->stream_error = plan.stream_error_status;
    c->stream_error_after = plan.stream_error_after;
    c->drop_items = plan.stream_drop_items;
    c->drop_after = plan.stream_drop_after;
    if (plan.delay_ms && park(c, plan.delay_ms))
        return;
    answer(c);
}

static void on_batch(srv_call *c, bool ok)
{
    c->outstanding--;
    if (is_stream(c)) {
        stream_batch_done(c, ok);
        return;
    }
    if (c->close_in_reply && c->final_sent) {
        /* This was the final batch, RECV_CLOSE_ON_SERVER with it. */
        c->close_in_reply = false;
        count_if_client_cancelled(c);
    }
    if (c->finished) {
        if (c->outstanding == 0)
            call_free(c);
        return;
    }
    /* A stream's batch before its last fails when its client has
     * cancelled or gone away (or the deadline or the server's stop ended
     * the call): RECV_CLOSE_ON_SERVER, started now, says which, for the
     * count of calls cancelled by their clients. Streams do not watch for
     * this from the start: that would cost every stream a batch and a
     * completion more. */
    if (!ok && !c->close_started && !c->final_sent)
        watch_close(c);
    if (!ok || c->s->shut_down || c->client_gone || !send_next(c))
        finish(c);
}

/* The RECV_CLOSE_ON_SERVER of watch_close() completed. While the call is
 * still parked that means its client is gone (cancelled, past its
 * deadline, disconnected) or the server is stopping: the call leaves the
 * heap and is freed, counted as CANCELLED (and as cancelled by its
 * client), DEADLINE_EXCEEDED or (when stopping) UNAVAILABLE. Otherwise the
 * reply under way stops, if it has not ended already, and the call is
 * counted as cancelled by its client if it was. */
static void on_close(srv_call *c)
{
    momento_local *s = c->s;
    c->outstanding--;
    c->client_gone = true;
    if (c->deferred || (c->heap_index != MOMENTO__HEAP_GONE && !is_stream(c))) {
        if (c->deferred)
            undefer(c);
        else
            timer_remove(s, c);
        grpc_status_code st = ended_by(c);
        srv_stats_count(s, SRV_VIA_GRPC, c->method, st);
        if (st == GRPC_STATUS_CANCELLED)
            srv_stats_count_client_cancel(s, c->method);
        finish(c);
    } else if (is_stream(c)) {
        stream_closed(c);
    } else {
        count_if_client_cancelled(c);
        if (c->finished && c->outstanding == 0)
            call_free(c);
    }
}

/* Answers the parked calls that are due: those whose delay is over, and
 * those whose deadline came first (DEADLINE_EXCEEDED, as their clients have
 * seen already); and ends the streams whose token has expired. */
static void run_timers(momento_local *s, int64_t now)
{
    srv_call *c;
    while ((c = momento__heap_peek(&s->timers)) && c->due_ms <= now) {
        if (c->deferred) {
            undefer(c);
            srv_reply_error(&c->reply, GRPC_STATUS_DEADLINE_EXCEEDED, NULL,
                            "deadline exceeded waiting for a long request on the same key");
            reply(c);
            continue;
        }
        timer_remove(s, c);
        if (is_stream(c)) {
            stream_token_expired(c);
        } else if (c->due_ms > c->deadline_ms) {
            srv_reply_error(&c->reply, GRPC_STATUS_DEADLINE_EXCEEDED, NULL,
                            "deadline exceeded during an injected delay (delay-ms)");
            reply(c);
        } else {
            answer(c);
        }
    }
}

/* Delayed calls still parked when the server stops are failed with
 * UNAVAILABLE, as a server going away would; streams are ended so by the
 * stop already, and only leave the heap. */
static void drop_timers(momento_local *s)
{
    srv_call *c;
    while ((c = momento__heap_peek(&s->timers))) {
        if (c->deferred)
            undefer(c);
        else
            timer_remove(s, c);
        if (!is_stream(c)) {
            c->pending_error = GRPC_STATUS_UNAVAILABLE;
            answer(c);
        }
    }
    /* Held back without a deadline. */
    while ((c = s->deferred.head)) {
        undefer(c);
        c->pending_error = GRPC_STATUS_UNAVAILABLE;
        answer(c);
    }
}

/* Tests only (srv_test_hold_new_calls()). */
static void hold_for_test(momento_local *s, srv_call *c)
{
    list_insert(&s->test_held, c);
    atomic_fetch_add(&s->test_n_held, 1);
}

void srv_test_hold_new_calls(momento_local *s)
{
    atomic_store(&s->test_hold_new_calls, true);
}

uint64_t srv_test_held_calls(const momento_local *s)
{
    return atomic_load(&s->test_n_held);
}

static void handle(momento_local *s, grpc_event ev)
{
    tag_kind kind = *(tag_kind *)ev.tag;
    if (kind == TAG_SHUTDOWN)
        s->shut_down = true;
    else if (kind == TAG_NEW_CALL && ev.success && !s->queue_shut &&
             atomic_load_explicit(&s->test_hold_new_calls, memory_order_relaxed))
        hold_for_test(s, ev.tag);
    else if (kind == TAG_NEW_CALL)
        on_new_call(ev.tag, ev.success);
    else if (kind == TAG_CLOSE)
        on_close((srv_call *)((char *)ev.tag - offsetof(srv_call, close_kind)));
    else
        on_batch(ev.tag, ev.success);
}

/* After each event: the stop's steps, timers, the sweep. */
static void after_event(momento_local *s)
{
    int64_t now = store_now_ms();
    if (atomic_load(&s->ending_streams) && !s->streams_ended) {
        s->streams_ended = true;
        srv_topics_end_all(s, GRPC_STATUS_UNAVAILABLE, "server stopping");
    }
    bool blocked = atomic_load_explicit(&s->blocked, memory_order_relaxed);
    if (blocked && !s->block_applied)
        srv_topics_end_all(s, GRPC_STATUS_UNAVAILABLE, BLOCKED);
    s->block_applied = blocked;
    /* Read once: the queue is shut below only after a drop_timers() that
     * knew of the stop has answered every parked call. */
    bool stopping = atomic_load(&s->stopping);
    if (stopping)
        drop_timers(s);
    else
        run_timers(s, now);
    if (now >= s->next_sweep_ms) {
        store_sweep(&s->store, now, SWEEP_BUDGET);
        s->next_sweep_ms = now + SWEEP_INTERVAL_MS;
    }
    /* Not while a call is being answered (a long one, on another thread,
     * or one decoding without the turn): its reply would start a batch on
     * a queue shut down, which gRPC aborts on. Nor before the stop has
     * dropped the parked calls: the shutdown tag comes once every channel
     * is gone, which can be before momento_local_stop() sets `stopping`
     * (its clients left first) and before a parked call of theirs has
     * heard (on_close()); drop_timers() would then answer it on the shut
     * queue. The poller comes back within MAX_WAIT_MS. */
    if (stopping && s->shut_down && !s->queue_shut && s->turns.answering == 0) {
        grpc_completion_queue_shutdown(s->cq);
        s->queue_shut = true;
        /* Tests only: the calls kept come now, as a late one would. */
        for (srv_call *c; (c = s->test_held.head);) {
            list_remove(c);
            on_new_call(c, true);
        }
    }
}

/* How long the poller may wait for the next event: until the next timer,
 * the topics' next heartbeat, or MAX_WAIT_MS. */
static gpr_timespec next_wait(momento_local *s)
{
    int64_t now = store_now_ms();
    int64_t wait = MAX_WAIT_MS;
    const srv_call *next = momento__heap_peek(&s->timers);
    if (next && next->due_ms - now < wait)
        wait = next->due_ms - now;
    int64_t heartbeat = srv_topics_tick(s, now);
    if (heartbeat - now < wait)
        wait = heartbeat - now;
    if (wait < 0)
        wait = 0;
    return gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC), gpr_time_from_millis(wait, GPR_TIMESPAN));
}

/* A long request waits for the turn: the poller answers what else has
 * arrived meanwhile, for up to a slice, rather than one event per slice
 * of the long request. */
static void drain(momento_local *s)
{
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        grpc_event ev = grpc_completion_queue_next(s->cq, gpr_inf_past(GPR_CLOCK_MONOTONIC), NULL);
        if (ev.type == GRPC_QUEUE_SHUTDOWN) {
            s->queue_done = true;
            return;
        }
        if (ev.type != GRPC_OP_COMPLETE)
            return;
        handle(s, ev);
        after_event(s);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        if (!srv_turns_polling() ||
            (t1.tv_sec - t0.tv_sec) * 1000000000 + (t1.tv_nsec - t0.tv_nsec) >= SRV_SLICE_NS)
            return;
    }
}

/* Every server thread: polls while it has the poller's role (it loses it
 * to a long request it answers, srv_turns.h), then waits to have it
 * again. The server's state is touched only with the turn. */
static void *server_loop(void *arg)
{
    momento_local *s = arg;
    srv_turns *t = &s->turns;
    while (srv_turns_poll(t)) {
        srv_turn_take(t);
        while (srv_turns_polling() && !s->queue_done) {
            gpr_timespec deadline = next_wait(s);
            srv_turn_give(t);
            grpc_event ev = grpc_completion_queue_next(s->cq, deadline, NULL);
            srv_turn_take(t);
            if (ev.type == GRPC_QUEUE_SHUTDOWN) {
                s->queue_done = true;
                break;
            }
            if (ev.type == GRPC_OP_COMPLETE)
                handle(s, ev);
            after_event(s);
            if (srv_turns_polling() && !s->queue_done && srv_turn_wanted(t))
                drain(s);
        }
        bool done = s->queue_done && srv_turns_polling();
        srv_turn_give(t);
        if (done)
            break;
    }
    return NULL;
}

/* Stops accepting calls (a new one is refused by gRPC, UNAVAILABLE); the
 * shutdown tag arrives once those in progress are done. Once. */
static void stop_accepting(momento_local *s)
{
    grpc_server_shutdown_and_notify(s->server, s->cq, &shutdown_tag);
}

/* Cancels the calls still in progress, after stop_accepting(). */
static void cancel_the_rest(momento_local *s)
{
    atomic_store(&s->stopping, true);
    grpc_server_cancel_all_calls(s->server);
}

static void shut_down(momento_local *s)
{
    stop_accepting(s);
    cancel_the_rest(s);
}

/* A requested call the queue gives back after shutdown, with no thread to
 * answer it. */
static void discard(void *tag, void *arg)
{
    if (*(tag_kind *)tag != TAG_SHUTDOWN)
        call_free(tag);
}

int srv_calls_start(momento_local *s, srv_dispatch_fn *dispatch)
{
    s->dispatch = dispatch;
    momento__heap_init(&s->timers, due_before, NULL);
    momento__heap_track(&s->timers, heap_moved);
    if (srv_turns_init(&s->turns, server_loop, s) != 0) {
        shut_down(s);
        s->shut_down = true;
        momento__cq_drain(s->cq, discard, NULL);
        return -1;
    }
    /* Long work gives its turn away between the items a flush or a
     * cache's deletion frees, too. */
    store_set_yield(&s->store, srv_yield);
    for (int m = 0; m < SRV_METHOD_COUNT; m++)
        for (int k = 0; k < REQUESTS_PER_METHOD; k++)
            request_call(s, (momento__rpc_id)m);
    s->next_sweep_ms = store_now_ms() + SWEEP_INTERVAL_MS;
    if (srv_turns_start(&s->turns) == 0)
        return 0;
    shut_down(s);
    s->shut_down = true;
    momento__cq_drain(s->cq, discard, NULL);
    srv_turns_destroy(&s->turns);
    return -1;
}

/* How long momento_local_stop() waits for subscription streams to send
 * their UNAVAILABLE: a subscriber that reads nothing (its flow-control
 * window full) cannot be sent it at all. */
#define END_STREAMS_WAIT_MS 1000

void srv_calls_stop(momento_local *s)
{
    /* No new call first: a subscriber told "server stopping" below comes
     * back after its resubscribe delay, and must find the server refusing
     * it (UNAVAILABLE, after which it tries again) rather than accept its
     * stream and then, in cancel_the_rest(), cancel it (CANCELLED, after
     * which the SDKs and libmomento end the subscription). Seen under
     * valgrind: a resubscribe taken in that gap ended test_topics'
     * subscription across a restart. */
    stop_accepting(s);
    atomic_store(&s->ending_streams, true);
    int64_t until = store_now_ms() + END_STREAMS_WAIT_MS;
    while (atomic_load(&s->open_streams) > 0 && store_now_ms() < until) {
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    cancel_the_rest(s);
    /* Once the queue is shut down and drained the poller leaves; the
     * others, waiting for its role, leave when told to quit. */
    srv_turns_join(&s->turns);
    srv_turns_destroy(&s->turns);
}
