/* One RPC from start to callback. The request is packed straight into a gRPC
 * slice. A unary call is a single batch of six ops. A server-streaming call
 * is a batch that sends and waits for the status, plus a chain of one-op
 * batches that read messages until the stream ends; its second tag is the
 * call's address plus one (calls are aligned, so the low bit tells the tags
 * apart). When every batch has completed, the status is mapped, the
 * message(s) decoded and the user's callback run on the completion thread. */
#include "internal.h"

#include <grpc/byte_buffer_reader.h>
#include <grpc/slice.h>
#include <grpc/support/alloc.h>
#include <grpc/support/time.h>
#include <stdlib.h>
#include <string.h>

#define AGENT "c:cache:" MOMENTO_VERSION_STRING
#ifdef __clang__
#define RUNTIME "c:clang-" __clang_version__
#else
#define RUNTIME "c:gcc-" __VERSION__
#endif

struct momento__call {
    momento__call *prev, *next; /* client's in-flight list */
    momento_client *client;
    grpc_call *call;
    momento__method method;
    momento_callback cb;
    void *userdata;
    grpc_slice request;         /* the packed request, kept for retries */
    grpc_byte_buffer *send_msg; /* per attempt: gRPC moves the slices out of it when sending */
    grpc_byte_buffer *recv_msg;
    int pending;                /* batches of the current attempt not yet completed */
    int attempt;                /* 1-based */
    size_t n_md;
    momento__channel *channel;
    gpr_timespec deadline;      /* the request's overall deadline */
    int64_t retry_due_ns;       /* while waiting in the client's retry heap */
    grpc_slice *msgs;           /* messages received so far: &msg0 until a
                                 * stream brings a second one */
    size_t n_msgs, cap_msgs;
    grpc_slice msg0;            /* a unary reply's one message, without a malloc */
    grpc_metadata_array recv_initial;
    grpc_metadata_array recv_trailing;
    grpc_status_code status;
    grpc_slice details;
    grpc_slice cache_value;
    grpc_metadata md[]; /* sized per client: 4 + its extra headers */
};

static grpc_slice pack(const ProtobufCMessage *req)
{
    size_t size = protobuf_c_message_get_packed_size(req);
    grpc_slice s = grpc_slice_malloc(size);
    protobuf_c_message_pack(req, GRPC_SLICE_START_PTR(s));
    return s;
}

static void unlink_call(momento_client *c, momento__call *call)
{
    if (call->prev)
        call->prev->next = call->next;
    else
        c->in_flight = call->next;
    if (call->next)
        call->next->prev = call->prev;
}

#define MSG_TAG(call) ((void *)((char *)(call) + 1))

static void release(momento__call *call)
{
    for (size_t i = 0; i < call->n_msgs; i++)
        grpc_slice_unref(call->msgs[i]);
    if (call->msgs != &call->msg0)
        free(call->msgs);
    if (call->send_msg)
        grpc_byte_buffer_destroy(call->send_msg);
    grpc_slice_unref(call->request);
    if (call->recv_msg)
        grpc_byte_buffer_destroy(call->recv_msg);
    grpc_metadata_array_destroy(&call->recv_initial);
    grpc_metadata_array_destroy(&call->recv_trailing);
    grpc_slice_unref(call->details);
    grpc_slice_unref(call->cache_value);
    if (call->call)
        grpc_call_unref(call->call);
    free(call);
}

static momento__channel *pick_channel(momento_client *c, const momento__method_info *info)
{
    if (info->control)
        return &c->control;
    return &c->data[atomic_fetch_add_explicit(&c->next_channel, 1, memory_order_relaxed) %
                    c->n_data];
}

/* Makes the gRPC call for the next attempt, on the next channel, with the
 * request's deadline or the attempt's own if sooner. NULL if gRPC refused. */
static grpc_call *new_attempt_call(momento__call *call)
{
    momento_client *c = call->client;
    const momento__method_info *info = &momento__methods[call->method];
    call->attempt++;
    call->channel = pick_channel(c, info);
    gpr_timespec deadline = call->deadline;
    if (c->cfg.retry_attempt_timeout_ms) {
        gpr_timespec own = gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
                                        gpr_time_from_millis(c->cfg.retry_attempt_timeout_ms,
                                                             GPR_TIMESPAN));
        if (gpr_time_cmp(own, deadline) < 0)
            deadline = own;
    }
    return grpc_channel_create_registered_call(call->channel->channel, NULL,
                                               GRPC_PROPAGATE_DEFAULTS, c->cq,
                                               call->channel->registered[call->method],
                                               deadline, NULL);
}

/* Starts the attempt's batches on gc, already published as call->call.
 * Returns 0, or an error when gRPC refused (then no event will come). */
static int launch_attempt(momento__call *call, grpc_call *gc)
{
    const momento__method_info *info = &momento__methods[call->method];
    if (call->send_msg)
        grpc_byte_buffer_destroy(call->send_msg);
    call->send_msg = grpc_raw_byte_buffer_create(&call->request, 1); /* takes a ref */

    grpc_op ops[6];
    size_t n = 0;
    memset(ops, 0, sizeof(ops));
    ops[n].op = GRPC_OP_SEND_INITIAL_METADATA;
    ops[n].data.send_initial_metadata.count = call->n_md;
    ops[n++].data.send_initial_metadata.metadata = call->md;
    ops[n].op = GRPC_OP_SEND_MESSAGE;
    ops[n++].data.send_message.send_message = call->send_msg;
    ops[n++].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
    ops[n].op = GRPC_OP_RECV_INITIAL_METADATA;
    ops[n++].data.recv_initial_metadata.recv_initial_metadata = &call->recv_initial;
    if (!info->streaming) {
        ops[n].op = GRPC_OP_RECV_MESSAGE;
        ops[n++].data.recv_message.recv_message = &call->recv_msg;
    }
    ops[n].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
    ops[n].data.recv_status_on_client.trailing_metadata = &call->recv_trailing;
    ops[n].data.recv_status_on_client.status = &call->status;
    ops[n++].data.recv_status_on_client.status_details = &call->details;

    call->pending = info->streaming ? 2 : 1;
    if (grpc_call_start_batch(gc, ops, n, call, NULL) != GRPC_CALL_OK)
        return MOMENTO_ERR_UNKNOWN; /* only a programming error in this file */
    if (info->streaming) {
        grpc_op read;
        memset(&read, 0, sizeof(read));
        read.op = GRPC_OP_RECV_MESSAGE;
        read.data.recv_message.recv_message = &call->recv_msg;
        if (grpc_call_start_batch(gc, &read, 1, MSG_TAG(call), NULL) != GRPC_CALL_OK) {
            /* The status batch is under way: let it finish the attempt. */
            grpc_call_cancel(gc, NULL);
            call->pending = 1;
        }
    }
    return MOMENTO_OK;
}

/* Starts a retry's attempt: 0, or an error (then no event will come). */
static int start_attempt(momento__call *call)
{
    grpc_call *gc = new_attempt_call(call);
    if (!gc)
        return MOMENTO_ERR_NO_MEMORY;
    /* Published under the lock: momento__calls_cancel_all() reads it there. */
    pthread_mutex_lock(&call->client->lock);
    call->call = gc;
    pthread_mutex_unlock(&call->client->lock);
    return launch_attempt(call, gc);
}

int momento__call_start(momento_client *c, momento__method m, const char *cache,
                        const ProtobufCMessage *req, momento_callback cb, void *userdata)
{
    const momento__method_info *info = &momento__methods[m];
    /* malloc, not calloc: glibc's calloc skips the per-thread cache, and
     * the metadata array needs no zeroing. Sized to what this client sends,
     * the struct stays small enough for that cache. */
    size_t md_slots = 4 + c->n_extra_md;
    momento__call *call = malloc(sizeof(*call) + md_slots * sizeof(grpc_metadata));
    if (!call)
        return MOMENTO_ERR_NO_MEMORY;
    memset(call, 0, sizeof(*call));
    call->client = c;
    call->method = m;
    call->cb = cb;
    call->userdata = userdata;
    call->details = grpc_empty_slice();
    call->cache_value = grpc_empty_slice();
    grpc_metadata_array_init(&call->recv_initial);
    grpc_metadata_array_init(&call->recv_trailing);
    call->request = pack(req);

    size_t n_md = 0;
    if (info->auth_header) {
        call->md[n_md].key = grpc_slice_from_static_string("authorization");
        call->md[n_md++].value = c->auth_value;
    }
    if (info->cache_header) {
        call->cache_value = grpc_slice_from_copied_string(cache);
        call->md[n_md].key = grpc_slice_from_static_string("cache");
        call->md[n_md++].value = call->cache_value;
    }

    for (size_t i = 0; i < c->n_extra_md; i++)
        call->md[n_md++] = c->extra_md[i];

    call->deadline = gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
                                  gpr_time_from_millis(c->cfg.timeout_ms, GPR_TIMESPAN));

    grpc_call *gc = new_attempt_call(call);
    if (!gc) {
        release(call);
        return MOMENTO_ERR_NO_MEMORY;
    }
    /* One lock section accepts the request and publishes its gRPC call
     * (momento__calls_cancel_all() reads both there). */
    pthread_mutex_lock(&c->lock);
    if (c->closing) {
        pthread_mutex_unlock(&c->lock);
        grpc_call_unref(gc);
        release(call);
        return MOMENTO_ERR_CLOSED;
    }
    call->next = c->in_flight;
    if (c->in_flight)
        c->in_flight->prev = call;
    c->in_flight = call;
    c->n_in_flight++;
    call->call = gc;
    pthread_mutex_unlock(&c->lock);

    /* The client introduces itself on its first accepted call. */
    if (!atomic_load_explicit(&c->agent_sent, memory_order_relaxed) &&
        !atomic_exchange(&c->agent_sent, true)) {
        call->md[n_md].key = grpc_slice_from_static_string("agent");
        call->md[n_md++].value = grpc_slice_from_static_string(AGENT);
        call->md[n_md].key = grpc_slice_from_static_string("runtime-version");
        call->md[n_md++].value = grpc_slice_from_static_string(RUNTIME);
    }
    call->n_md = n_md;

    int rc = launch_attempt(call, gc);
    if (rc != MOMENTO_OK) {
        /* Refuse the request rather than lose it: no callback follows. */
        pthread_mutex_lock(&c->lock);
        unlink_call(c, call);
        c->n_in_flight--;
        pthread_mutex_unlock(&c->lock);
        release(call);
    }
    return rc;
}

void momento__calls_cancel_all(momento_client *c)
{
    for (momento__call *call = c->in_flight; call; call = call->next)
        if (call->call) /* NULL while waiting to retry: momento__run_retries() ends it */
            grpc_call_cancel_with_status(call->call, GRPC_STATUS_CANCELLED,
                                         "cancelled: the client was freed", NULL);
}

static char *trailer_value(const grpc_metadata_array *md, const char *key)
{
    for (size_t i = 0; i < md->count; i++)
        if (grpc_slice_str_cmp(md->metadata[i].key, key) == 0)
            return grpc_slice_to_c_string(md->metadata[i].value);
    return NULL;
}

static int64_t now_ns(void)
{
    gpr_timespec t = gpr_now(GPR_CLOCK_MONOTONIC);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static int64_t to_ns(gpr_timespec t)
{
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* Whether the attempt that just ended should be tried again, by the rule of
 * the official SDKs (PROTOCOL.md "Retries"). */
static bool retryable(const momento__call *call, int64_t now)
{
    const momento_client *c = call->client;
    if (!momento__methods[call->method].idempotent ||
        call->attempt >= (int)c->cfg.retry_max_attempts)
        return false;
    bool eligible = call->status == GRPC_STATUS_UNAVAILABLE || call->status == GRPC_STATUS_INTERNAL;
    /* Fixed-timeout mode: an attempt that ran out of its own time is retried
     * while the overall deadline allows. */
    if (c->cfg.retry_attempt_timeout_ms && call->status == GRPC_STATUS_DEADLINE_EXCEEDED)
        eligible = true;
    return eligible && now + (int64_t)c->cfg.retry_delay_ms * 1000000 < to_ns(call->deadline);
}

/* Clears what the last attempt received, so the next starts clean. */
static void reset_attempt(momento__call *call)
{
    momento_client *c = call->client;
    pthread_mutex_lock(&c->lock);
    grpc_call *old = call->call;
    call->call = NULL;
    pthread_mutex_unlock(&c->lock);
    grpc_call_unref(old);
    for (size_t i = 0; i < call->n_msgs; i++)
        grpc_slice_unref(call->msgs[i]);
    call->n_msgs = 0;
    if (call->recv_msg)
        grpc_byte_buffer_destroy(call->recv_msg);
    call->recv_msg = NULL;
    grpc_metadata_array_destroy(&call->recv_initial);
    grpc_metadata_array_destroy(&call->recv_trailing);
    grpc_metadata_array_init(&call->recv_initial);
    grpc_metadata_array_init(&call->recv_trailing);
    grpc_slice_unref(call->details);
    call->details = grpc_empty_slice();
    call->status = GRPC_STATUS_OK;
}

static void heap_swap(momento__call **h, size_t a, size_t b)
{
    momento__call *t = h[a];
    h[a] = h[b];
    h[b] = t;
}

/* Queues `call` to retry at its retry_due_ns; the caller holds c->lock. */
static bool heap_push(momento_client *c, momento__call *call)
{
    if (c->n_retry == c->cap_retry) {
        size_t cap = c->cap_retry ? c->cap_retry * 2 : 16;
        momento__call **grown = realloc(c->retry_heap, cap * sizeof(*grown));
        if (!grown)
            return false;
        c->retry_heap = grown;
        c->cap_retry = cap;
    }
    size_t i = c->n_retry++;
    c->retry_heap[i] = call;
    while (i > 0 && c->retry_heap[(i - 1) / 2]->retry_due_ns > c->retry_heap[i]->retry_due_ns) {
        heap_swap(c->retry_heap, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
    return true;
}

static momento__call *heap_pop(momento_client *c)
{
    momento__call **h = c->retry_heap;
    momento__call *top = h[0];
    h[0] = h[--c->n_retry];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < c->n_retry && h[l]->retry_due_ns < h[m]->retry_due_ns)
            m = l;
        if (r < c->n_retry && h[r]->retry_due_ns < h[m]->retry_due_ns)
            m = r;
        if (m == i)
            break;
        heap_swap(h, i, m);
        i = m;
    }
    return top;
}

static void deliver(momento__call *call);

/* Ends a call that could not make its next attempt, with `status`. */
static void give_up(momento__call *call, grpc_status_code status, const char *why)
{
    call->status = status;
    grpc_slice_unref(call->details);
    call->details = grpc_slice_from_static_string(why);
    deliver(call);
}

/* Next attempt now, or after the configured delay (+/-10% jitter, so clients
 * that failed together do not retry together). False: deliver instead. */
static bool schedule_retry(momento__call *call, int64_t now)
{
    momento_client *c = call->client;
    reset_attempt(call);
    if (c->cfg.retry_delay_ms == 0) {
        if (start_attempt(call) == MOMENTO_OK)
            return true;
        give_up(call, GRPC_STATUS_UNAVAILABLE, "could not start a retry");
        return true;
    }
    int64_t delay = (int64_t)c->cfg.retry_delay_ms * 1000000;
    pthread_mutex_lock(&c->lock);
    c->jitter_state = c->jitter_state * 6364136223846793005ull + 1442695040888963407ull;
    int64_t jitter = (int64_t)((c->jitter_state >> 33) % 2001) - 1000; /* -1000..1000 */
    call->retry_due_ns = now + delay + delay / 10 * jitter / 1000;
    bool queued = !c->closing && heap_push(c, call);
    pthread_mutex_unlock(&c->lock);
    if (!queued)
        give_up(call, GRPC_STATUS_CANCELLED, "cancelled: the client was freed");
    return true;
}

gpr_timespec momento__run_retries(momento_client *c)
{
    /* Only the completion thread (the caller) adds to or takes from the
     * retry heap, so it may find the heap empty without the lock: the case
     * after nearly every event. */
    if (c->n_retry == 0)
        return gpr_inf_future(GPR_CLOCK_MONOTONIC);
    for (;;) {
        pthread_mutex_lock(&c->lock);
        if (c->n_retry == 0) {
            pthread_mutex_unlock(&c->lock);
            return gpr_inf_future(GPR_CLOCK_MONOTONIC);
        }
        int64_t now = now_ns();
        int64_t due = c->retry_heap[0]->retry_due_ns;
        if (!c->closing && due > now) {
            pthread_mutex_unlock(&c->lock);
            gpr_timespec t = {due / 1000000000, (int32_t)(due % 1000000000), GPR_CLOCK_MONOTONIC};
            return t;
        }
        bool closing = c->closing;
        momento__call *call = heap_pop(c);
        pthread_mutex_unlock(&c->lock);
        if (closing)
            give_up(call, GRPC_STATUS_CANCELLED, "cancelled: the client was freed");
        else if (start_attempt(call) != MOMENTO_OK)
            give_up(call, GRPC_STATUS_UNAVAILABLE, "could not start a retry");
    }
}

/* Every batch of the attempt is done: retry, or deliver. */
static void finish(momento__call *call)
{
    if (call->status != GRPC_STATUS_OK) {
        int64_t now = now_ns();
        if (retryable(call, now)) {
            pthread_mutex_lock(&call->client->lock);
            bool closing = call->client->closing;
            pthread_mutex_unlock(&call->client->lock);
            if (!closing && schedule_retry(call, now))
                return;
        }
    }
    deliver(call);
}

/* Maps the status, decodes, calls back, and retires the call. */
static void deliver(momento__call *call)
{
    momento_client *c = call->client;
    const momento__method_info *info = &momento__methods[call->method];
    momento_result r;
    momento__scratch scratch;
    memset(&scratch, 0, sizeof(scratch));
    memset(&r, 0, sizeof(r));
    r.grpc_status = (int)call->status;
    r.attempts = call->attempt;
    if (call->status == GRPC_STATUS_OK) {
        if (!info->streaming && call->n_msgs != 1)
            r.error = MOMENTO_ERR_BAD_RESPONSE; /* a unary reply has exactly one message */
        else
            r.error = info->decode(&r, call->msgs, call->n_msgs, &scratch);
    } else if (info->already_exists_ok && call->status == GRPC_STATUS_ALREADY_EXISTS) {
        r.error = MOMENTO_OK;
        r.outcome = MOMENTO_OUTCOME_ALREADY_EXISTS;
    } else {
        r.error = momento_error_from_grpc_status((int)call->status);
    }
    if (r.error != MOMENTO_OK) {
        r.outcome = MOMENTO_OUTCOME_ERROR;
        /* Nothing a failed decode left behind may be read. */
        r.value = NULL;
        r.value_len = 0;
        r.n_caches = r.n_exists = r.n_items = 0;
    }

    char *message = GRPC_SLICE_LENGTH(call->details) ? grpc_slice_to_c_string(call->details) : NULL;
    char *detail = call->status != GRPC_STATUS_OK ? trailer_value(&call->recv_trailing, "err")
                                                  : NULL;
    r.message = message ? message
                        : (r.error == MOMENTO_ERR_BAD_RESPONSE ? momento_strerror(r.error) : "");
    r.error_detail = detail;

    call->cb(&r, call->userdata);

    momento__scratch_free(&scratch);
    gpr_free(message);
    gpr_free(detail);

    pthread_mutex_lock(&c->lock);
    unlink_call(c, call);
    if (--c->n_in_flight == 0 && c->closing) {
        pthread_cond_broadcast(&c->drained);
        if (c->free_deferred)
            grpc_completion_queue_shutdown(c->cq);
    }
    pthread_mutex_unlock(&c->lock);
    release(call);
}

/* Moves the received message (if any) into the call's list. */
static bool take_message(momento__call *call)
{
    if (!call->recv_msg)
        return false;
    grpc_byte_buffer *bb = call->recv_msg;
    grpc_slice body = grpc_empty_slice();
    if (bb->type == GRPC_BB_RAW && bb->data.raw.compression == GRPC_COMPRESS_NONE &&
        bb->data.raw.slice_buffer.count == 1) {
        /* The usual small reply is one uncompressed slice: keep a reference
         * rather than copy it into a new one (as gRPC's C++ ByteBuffer's
         * TrySingleSlice does). */
        body = grpc_slice_ref(bb->data.raw.slice_buffer.slices[0]);
    } else {
        grpc_byte_buffer_reader reader;
        if (grpc_byte_buffer_reader_init(&reader, bb)) {
            body = grpc_byte_buffer_reader_readall(&reader);
            grpc_byte_buffer_reader_destroy(&reader);
        }
    }
    grpc_byte_buffer_destroy(bb);
    call->recv_msg = NULL;
    if (!call->msgs) {
        call->msgs = &call->msg0;
        call->cap_msgs = 1;
    }
    /* A retry starts again at n_msgs 0 in whatever storage it had. */
    if (call->n_msgs == call->cap_msgs) {
        size_t cap = call->cap_msgs * 4;
        bool was_inline = call->msgs == &call->msg0;
        grpc_slice *grown = was_inline ? malloc(cap * sizeof(*grown))
                                       : realloc(call->msgs, cap * sizeof(*grown));
        if (!grown) {
            grpc_slice_unref(body);
            grpc_call_cancel_with_status(call->call, GRPC_STATUS_RESOURCE_EXHAUSTED,
                                         "client out of memory for the response", NULL);
            return false;
        }
        if (was_inline)
            grown[0] = call->msg0;
        call->msgs = grown;
        call->cap_msgs = cap;
    }
    call->msgs[call->n_msgs++] = body;
    return true;
}

void momento__call_event(void *tag, int success)
{
    if ((uintptr_t)tag & 1) {
        /* A stream read finished: keep reading until the stream ends. */
        momento__call *call = (momento__call *)((char *)tag - 1);
        if (success && take_message(call)) {
            grpc_op read;
            memset(&read, 0, sizeof(read));
            read.op = GRPC_OP_RECV_MESSAGE;
            read.data.recv_message.recv_message = &call->recv_msg;
            if (grpc_call_start_batch(call->call, &read, 1, tag, NULL) == GRPC_CALL_OK)
                return;
        }
        if (--call->pending == 0)
            finish(call);
        return;
    }
    momento__call *call = tag;
    if (!momento__methods[call->method].streaming)
        take_message(call);
    (void)success; /* a failed batch still reports its status */
    if (--call->pending == 0)
        finish(call);
}
