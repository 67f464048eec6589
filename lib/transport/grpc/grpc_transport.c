/* The seam's operations over gRPC C core: one attempt of an RPC is one gRPC
 * call on the next channel of its plane. A unary attempt is a single batch
 * of six ops. A server-streaming one (GetBatch, SetBatch, a subscription's
 * live stream) is a batch that sends and waits for the status, plus a
 * chain of one-op batches that read messages until the stream ends, each
 * kind with its own tag, whose handler
 * the client's completion loop runs. When every batch has completed, the
 * reply is filled and the engine's done() runs. What to do with it
 * (retry, decode, deliver) is the engine's (call.c). */
#include "transport/grpc/grpc_transport.h"

#include "base/alloc.h"
#include "clock.h"
#include "grpc_util.h"
#include "momento/metrics.h" /* the kind the metrics record reports */

#include <grpc/slice.h>
#include <grpc/support/alloc.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

typedef struct grpc_attempt {
    momento__attempt base; /* first */
    /* The attempt's batches' tags: the unary batch or a stream's status
     * batch (unary_done / stream_status_done), and a stream's reads
     * (stream_read_done). */
    momento__tag tag, read_tag;
    const momento__wire_request *rq;
    grpc_call *call;
    momento__channel *channel;
    momento__channel_slot *stream_slot; /* a live stream's place, or NULL */
    grpc_byte_buffer *send_msg; /* gRPC moves the slices out of it when sending */
    grpc_byte_buffer *recv_msg;
    int pending;                /* batches not yet completed */
    size_t cap_msgs;
    grpc_slice msg0;            /* a unary reply's one message, without a malloc */
    grpc_status_code status;
    grpc_metadata_array recv_initial;
    grpc_metadata_array recv_trailing;
} grpc_attempt;

#define ATTEMPT(a) ((grpc_attempt *)(a))

static int grpc_prepare(momento__transport *t, momento__attempt *a,
                        const momento__wire_request *rq, gpr_timespec deadline)
{
    momento__grpc_transport *g = (momento__grpc_transport *)t;
    grpc_attempt *ga = ATTEMPT(a);
    ga->rq = rq;
    if (a->on_msg) {
        /* A live stream: on the subscriptions' own channels, within
         * Momento's streams per connection. */
        ga->channel = momento__channels_take_stream(&g->channels, &ga->stream_slot);
        if (!ga->channel)
            return MOMENTO_ERR_LIMIT_EXCEEDED;
    } else {
        ga->channel = momento__channels_take(&g->channels, momento__rpcs[rq->method].plane);
    }
    ga->call = grpc_channel_create_registered_call(ga->channel->channel, NULL,
                                                   GRPC_PROPAGATE_DEFAULTS, g->cq,
                                                   ga->channel->registered[rq->method],
                                                   deadline, NULL);
    return ga->call ? 0 : MOMENTO_ERR_NO_MEMORY;
}

static void unary_done(momento__tag *tag, int success);
static void stream_status_done(momento__tag *tag, int success);
static void stream_read_done(momento__tag *tag, int success);

static int grpc_launch(momento__attempt *a)
{
    grpc_attempt *ga = ATTEMPT(a);
    const momento__rpc *info = &momento__rpcs[ga->rq->method];
    ga->send_msg = grpc_raw_byte_buffer_create((grpc_slice *)&ga->rq->body, 1); /* takes a ref */

    grpc_op ops[6];
    size_t n = 0;
    memset(ops, 0, sizeof(ops));
    ops[n].op = GRPC_OP_SEND_INITIAL_METADATA;
    ops[n].data.send_initial_metadata.count = ga->rq->n_headers;
    ops[n++].data.send_initial_metadata.metadata = (grpc_metadata *)ga->rq->headers;
    ops[n].op = GRPC_OP_SEND_MESSAGE;
    ops[n++].data.send_message.send_message = ga->send_msg;
    ops[n++].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
    ops[n].op = GRPC_OP_RECV_INITIAL_METADATA;
    ops[n++].data.recv_initial_metadata.recv_initial_metadata = &ga->recv_initial;
    if (!info->streaming) {
        ops[n].op = GRPC_OP_RECV_MESSAGE;
        ops[n++].data.recv_message.recv_message = &ga->recv_msg;
    }
    ops[n].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
    ops[n].data.recv_status_on_client.trailing_metadata = &ga->recv_trailing;
    ops[n].data.recv_status_on_client.status = &ga->status;
    ops[n++].data.recv_status_on_client.status_details = &ga->base.reply.details;

    ga->pending = info->streaming ? 2 : 1;
    ga->tag.cb = info->streaming ? stream_status_done : unary_done;
    if (grpc_call_start_batch(ga->call, ops, n, &ga->tag, NULL) != GRPC_CALL_OK)
        return MOMENTO_ERR_UNKNOWN; /* only a programming error in this file */
    if (info->streaming) {
        grpc_op read;
        memset(&read, 0, sizeof(read));
        read.op = GRPC_OP_RECV_MESSAGE;
        read.data.recv_message.recv_message = &ga->recv_msg;
        ga->read_tag.cb = stream_read_done;
        if (grpc_call_start_batch(ga->call, &read, 1, &ga->read_tag, NULL) != GRPC_CALL_OK) {
            /* The status batch is under way: let it finish the attempt. */
            grpc_call_cancel(ga->call, NULL);
            ga->pending = 1;
        }
    }
    return MOMENTO_OK;
}

static void grpc_cancel(void *a, const char *why)
{
    grpc_attempt *ga = a;
    if (ga->call)
        grpc_call_cancel_with_status(ga->call, GRPC_STATUS_CANCELLED, why, NULL);
}

static void grpc_end(momento__attempt *a)
{
    grpc_attempt *ga = ATTEMPT(a);
    momento__reply *r = &a->reply;
    for (size_t i = 0; i < r->n_msgs; i++)
        grpc_slice_unref(r->msgs[i]);
    if (r->msgs != &ga->msg0)
        free(r->msgs);
    gpr_free(r->err);
    free((void *)r->trailers);
    grpc_slice_unref(r->details);
    memset(r, 0, sizeof(*r)); /* zeroes are an empty slice, no messages */
    if (ga->send_msg)
        grpc_byte_buffer_destroy(ga->send_msg);
    ga->send_msg = NULL;
    if (ga->recv_msg)
        grpc_byte_buffer_destroy(ga->recv_msg);
    ga->recv_msg = NULL;
    /* gRPC allocates an array only for metadata that came (usually none). */
    if (ga->recv_initial.capacity) {
        grpc_metadata_array_destroy(&ga->recv_initial);
        grpc_metadata_array_init(&ga->recv_initial);
    }
    if (ga->recv_trailing.capacity) {
        grpc_metadata_array_destroy(&ga->recv_trailing);
        grpc_metadata_array_init(&ga->recv_trailing);
    }
    if (ga->call)
        grpc_call_unref(ga->call);
    ga->call = NULL;
    momento__channel_put(ga->channel);
    ga->channel = NULL;
    momento__channels_stream_done(ga->stream_slot);
    ga->stream_slot = NULL;
    /* The rest is written by every prepare and launch before it is read. */
}

/* Every batch of the attempt is done: the reply, then the engine. */
static void complete(grpc_attempt *ga)
{
    momento__reply *r = &ga->base.reply;
    r->status = (int)ga->status;
    if (ga->status == GRPC_STATUS_UNAVAILABLE)
        momento__channel_failed(ga->channel);
    const grpc_metadata_array *md = &ga->recv_trailing;
    if (md->count) {
        /* Listed only when some came (Momento's successes carry none): the
         * entries point into gRPC's slices, alive until grpc_end(). */
        momento_metadata *list = momento__malloc(md->count * sizeof(*list));
        if (list) {
            for (size_t i = 0; i < md->count; i++) {
                const grpc_slice *k = &md->metadata[i].key, *v = &md->metadata[i].value;
                list[i] = (momento_metadata){(const char *)GRPC_SLICE_START_PTR(*k),
                                             GRPC_SLICE_LENGTH(*k), GRPC_SLICE_START_PTR(*v),
                                             GRPC_SLICE_LENGTH(*v)};
            }
            r->trailers = list;
            r->n_trailers = md->count;
        }
    }
    if (ga->status != GRPC_STATUS_OK) {
        for (size_t i = 0; i < md->count; i++)
            if (grpc_slice_str_cmp(md->metadata[i].key, "err") == 0) {
                r->err = grpc_slice_to_c_string(md->metadata[i].value);
                break;
            }
    }
    ga->base.done(&ga->base);
}

/* Moves the received message (if any) into the reply's list. */
static bool take_message(grpc_attempt *ga)
{
    momento__reply *r = &ga->base.reply;
    if (!ga->recv_msg)
        return false;
    grpc_byte_buffer *bb = ga->recv_msg;
    grpc_slice body = momento__byte_buffer_slice(bb);
    grpc_byte_buffer_destroy(bb);
    ga->recv_msg = NULL;
    size_t expect = ga->rq->expect_msgs;
    if (expect && r->n_msgs == expect) {
        /* One message more than the request allows: stop reading (a
         * misbehaving server could send any number) and end the call. */
        grpc_slice_unref(body);
        r->too_many = true;
        grpc_call_cancel_with_status(ga->call, GRPC_STATUS_DATA_LOSS,
                                     "the server sent more replies than the request allows",
                                     NULL);
        return false;
    }
    if (!r->msgs) {
        r->msgs = &ga->msg0;
        ga->cap_msgs = 1;
    }
    if (r->n_msgs == ga->cap_msgs) {
        size_t cap = ga->cap_msgs * 4;
        bool was_inline = r->msgs == &ga->msg0;
        grpc_slice *grown = was_inline ? momento__malloc(cap * sizeof(*grown))
                                       : momento__realloc(r->msgs, cap * sizeof(*grown));
        if (!grown) {
            grpc_slice_unref(body);
            r->out_of_memory = true;
            grpc_call_cancel_with_status(ga->call, GRPC_STATUS_RESOURCE_EXHAUSTED,
                                         "client out of memory for the response", NULL);
            return false;
        }
        if (was_inline)
            grown[0] = ga->msg0;
        r->msgs = grown;
        ga->cap_msgs = cap;
    }
    r->msgs[r->n_msgs++] = body;
    return true;
}

/* The handlers of the attempt's tags (grpc_launch), on the completion
 * thread. */

/* A unary call's one batch completed: its reply, if any, and status. */
static void unary_done(momento__tag *tag, int success)
{
    grpc_attempt *ga = (grpc_attempt *)((char *)tag - offsetof(grpc_attempt, tag));
    take_message(ga);
    (void)success; /* a failed batch still reports its status */
    if (--ga->pending == 0)
        complete(ga);
}

/* A stream's status batch completed; the reads may still be under way. */
static void stream_status_done(momento__tag *tag, int success)
{
    grpc_attempt *ga = (grpc_attempt *)((char *)tag - offsetof(grpc_attempt, tag));
    (void)success; /* a failed batch still reports its status */
    if (--ga->pending == 0)
        complete(ga);
}

/* Hands the received message (if any) to a live stream's reader. */
static bool hand_message(grpc_attempt *ga)
{
    if (!ga->recv_msg)
        return false;
    grpc_byte_buffer *bb = ga->recv_msg;
    ga->recv_msg = NULL;
    grpc_slice body = momento__byte_buffer_slice(bb);
    grpc_byte_buffer_destroy(bb);
    bool more = ga->base.on_msg(&ga->base, GRPC_SLICE_START_PTR(body), GRPC_SLICE_LENGTH(body));
    grpc_slice_unref(body);
    return more;
}

/* A stream read finished: keep reading until the stream ends (or a live
 * stream's reader says stop). */
static void stream_read_done(momento__tag *tag, int success)
{
    grpc_attempt *ga = (grpc_attempt *)((char *)tag - offsetof(grpc_attempt, read_tag));
    if (success && (ga->base.on_msg ? hand_message(ga) : take_message(ga))) {
        grpc_op read;
        memset(&read, 0, sizeof(read));
        read.op = GRPC_OP_RECV_MESSAGE;
        read.data.recv_message.recv_message = &ga->recv_msg;
        if (grpc_call_start_batch(ga->call, &read, 1, tag, NULL) == GRPC_CALL_OK)
            return;
    }
    if (--ga->pending == 0)
        complete(ga);
}

/* ------------------------------------------------------------ the loop */

/* gRPC core has no way to post an event to a completion queue, but a call
 * on a lame channel fails at once and so posts its completion: that wakes
 * the completion thread when a timer is armed sooner than it would wake, or
 * must fire at once (a cancel, the client's free). One kick at a time is
 * enough, since a woken loop looks at everything that is due. */
static void grpc_wake(momento__transport *t)
{
    momento__grpc_transport *g = (momento__grpc_transport *)t;
    if (atomic_exchange(&g->kick_pending, true))
        return;
    /* Another thread may wake the loop just as the client's free shuts the
     * queue down: the protosocket I/O thread's post (momento__completion_
     * post) kicks after it has let the client's lock go, by when the
     * completion thread may have run the attempt it posted, the last
     * request retired and the free shut the queue. Nothing is left to wake then (the loop drains and
     * ends), but a batch started on the shut queue aborts the process. */
    pthread_mutex_lock(&g->shut_lock);
    if (g->shut) {
        pthread_mutex_unlock(&g->shut_lock);
        return; /* kick_pending stays up: no kick is made any more */
    }
    grpc_call *gc = grpc_channel_create_call(g->kick_channel, NULL, GRPC_PROPAGATE_DEFAULTS, g->cq,
                                             grpc_slice_from_static_string("/momento.Kick/Kick"),
                                             NULL, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL);
    grpc_op ops[2];
    memset(ops, 0, sizeof(ops));
    ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
    ops[1].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
    ops[1].data.recv_status_on_client.trailing_metadata = &g->kick_trailing;
    ops[1].data.recv_status_on_client.status = &g->kick_status;
    ops[1].data.recv_status_on_client.status_details = &g->kick_details;
    g->kick_call = gc;
    if (!gc || grpc_call_start_batch(gc, ops, 2, &g->kick_tag, NULL) != GRPC_CALL_OK) {
        /* Not expected (no memory for the call): the loop then runs what
         * is due when it next wakes, at the latest when the first timer on
         * the heap is due. */
        if (gc)
            grpc_call_unref(gc);
        g->kick_call = NULL;
        atomic_store(&g->kick_pending, false);
    }
    pthread_mutex_unlock(&g->shut_lock);
}

/* The kick's batch completed (its tag's handler): the loop, woken, runs
 * what is due; the next kick may start. */
static void kick_done(momento__tag *tag, int success)
{
    momento__grpc_transport *g =
        (momento__grpc_transport *)((char *)tag - offsetof(momento__grpc_transport, kick_tag));
    (void)success; /* it always fails: that is what it is for */
    grpc_call_unref(g->kick_call);
    g->kick_call = NULL;
    grpc_slice_unref(g->kick_details);
    g->kick_details = grpc_empty_slice();
    grpc_metadata_array_destroy(&g->kick_trailing);
    grpc_metadata_array_init(&g->kick_trailing);
    atomic_store(&g->kick_pending, false);
}

/* One event of the queue: every batch on it carries a momento__tag
 * (attempts', subscriptions' streams', the kick's), whose handler runs. */
static bool grpc_run(momento__transport *t, int64_t until_ns)
{
    momento__grpc_transport *g = (momento__grpc_transport *)t;
    gpr_timespec until = until_ns == INT64_MAX
                             ? gpr_inf_future(GPR_CLOCK_MONOTONIC)
                             : (gpr_timespec){until_ns / 1000000000,
                                              (int32_t)(until_ns % 1000000000),
                                              GPR_CLOCK_MONOTONIC};
    grpc_event ev = grpc_completion_queue_next(g->cq, until, NULL);
    if (ev.type == GRPC_QUEUE_SHUTDOWN) {
        g->drained = true;
        return false;
    }
    if (ev.type == GRPC_OP_COMPLETE) {
        momento__tag *tag = ev.tag;
        tag->cb(tag, ev.success);
    }
    return true;
}

/* After every kick started before it; none starts after (grpc_wake). */
static void grpc_shutdown_queue(momento__transport *t)
{
    momento__grpc_transport *g = (momento__grpc_transport *)t;
    pthread_mutex_lock(&g->shut_lock);
    g->shut = true;
    grpc_completion_queue_shutdown(g->cq);
    pthread_mutex_unlock(&g->shut_lock);
}

static void grpc_close(momento__transport *t)
{
    momento__grpc_transport *g = (momento__grpc_transport *)t;
    if (g->channels_open)
        momento__channels_close(&g->channels);
    g->channels_open = false;
    if (g->kick_channel)
        grpc_channel_destroy(g->kick_channel);
    g->kick_channel = NULL;
    grpc_slice_unref(g->kick_details);
    g->kick_details = grpc_empty_slice();
    grpc_metadata_array_destroy(&g->kick_trailing);
    if (g->cq) {
        if (!g->drained) /* never run: a client whose open failed */
            momento__cq_drain(g->cq, NULL, NULL);
        grpc_completion_queue_destroy(g->cq);
    }
    pthread_mutex_destroy(&g->shut_lock);
    free(g);
}

int momento__grpc_transport_new(momento__transport **ret, const momento_config *cfg,
                                const momento_credentials *creds)
{
    *ret = NULL;
    momento__grpc_transport *g = momento__calloc(1, sizeof(*g));
    if (!g)
        return MOMENTO_ERR_NO_MEMORY;
    g->base.ops = &momento__grpc_ops;
    g->kick_details = grpc_empty_slice();
    g->kick_tag.cb = kick_done;
    grpc_metadata_array_init(&g->kick_trailing);
    atomic_init(&g->kick_pending, false);
    pthread_mutex_init(&g->shut_lock, NULL);
    g->cq = grpc_completion_queue_create_for_next(NULL);
    g->kick_channel = grpc_lame_client_channel_create(NULL, GRPC_STATUS_UNAVAILABLE, "kick");
    int rc = MOMENTO_ERR_NO_MEMORY;
    if (g->cq && g->kick_channel) {
        g->channels_open = true; /* close() undoes a partial open too */
        rc = momento__channels_open(&g->channels, cfg, creds);
    }
    if (rc != MOMENTO_OK) {
        grpc_close(&g->base);
        return rc;
    }
    *ret = &g->base;
    return MOMENTO_OK;
}

const momento__transport_ops momento__grpc_ops = {
    .name = "grpc",
    .metrics_kind = MOMENTO_METRICS_TRANSPORT_GRPC,
    .attempt_size = sizeof(grpc_attempt),
    .prepare = grpc_prepare,
    .launch = grpc_launch,
    .cancel = grpc_cancel,
    .end = grpc_end,
    .run = grpc_run,
    .wake = grpc_wake,
    .shutdown = grpc_shutdown_queue,
    .close = grpc_close,
};
