/* One RPC from start to callback. The request is packed straight into a
 * slice, kept for retries. Each attempt is the transport's (transport/
 * transport.h; transport/grpc/ puts it on a gRPC call): this file prepares
 * it, makes it cancellable, launches it, and hears of its end on the
 * completion thread (attempt_done). Then the status is mapped, the
 * message(s) decoded and the user's callback run on that thread.
 *
 * This file makes attempts, and a call waits for its next one on a client
 * timer (wait_retry); whether to make another, and after what delay, is
 * retry.c's, and how long the request lives (accept, cancel at free,
 * retire) is client.c's. */
#include "engine/call.h"

#include "base/alloc.h"
#include "base/fifo.h"
#include "clock.h"
#include "codec/compress.h"
#include "codec/unpack.h"
#include "engine/client.h"
#include "engine/respond.h"
#include "engine/retry.h"
#include "grpc_util.h"
#include "model/cancel.h"
#include "model/errors.h"
#include "model/metrics.h"
#include "model/result.h"
#include "model/validate.h"
#include "transport/transport.h"

#include <grpc/slice.h>
#include <grpc/support/alloc.h>
#include <grpc/support/time.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define AGENT "c:cache:" MOMENTO_VERSION_STRING
#ifdef __clang__
#define RUNTIME "c:clang-" __clang_version__
#else
#define RUNTIME "c:gcc-" __VERSION__
#endif

struct momento__call {
    momento__tracked track;     /* the client's view of the request */
    momento_client *client;
    momento__decode_fn decode; /* the op's decoder for `method` */
    momento_callback cb;
    void *userdata;
    /* What every attempt sends: the method, the packed request, the cache
     * name, the headers (md) and a stream's exact message count. */
    momento__wire_request rq;
    /* The current attempt, the transport's, in this allocation after md[];
     * its reply is read until the next attempt or the release. */
    momento__attempt *att;
    momento__transport *transport; /* the one its method is routed to */
    int attempt;                /* 1-based */
    bool no_metrics;            /* its callback reports it (call.h) */
    bool late;                  /* ...and runs from the dispatch queue (call.h) */
    momento_request_group *group; /* counted in it with the client (call.h) */
    int64_t submitted_ns;       /* for the metrics hook */
    uint8_t own_md, n_own_md;   /* md[own_md ..] are the request's own headers, copied */
    gpr_timespec deadline;      /* the request's overall deadline */
    gpr_timespec attempt_deadline; /* this attempt's: the overall, or its own if sooner */
    momento__timer retry_timer; /* its next attempt, while it waits for it
                                 * (wait_retry); set up at the first wait */
    /* The client's cap on requests in flight (momento_config_set_max_
     * concurrent_requests()): whether it waits for a place or holds one,
     * and its place in the queue; while it waits, its first attempt is
     * prepared, not launched. */
    enum { GATE_NONE, GATE_QUEUED, GATE_HOLDS } gate;
    momento__call *gate_next;
    momento__timer gate_timer;  /* its deadline, or a cancel, while queued */
    momento__timer late_timer;  /* a DEADLINE_EXCEEDED that came early: delivered
                                 * at the deadline (attempt_done()) */
    momento_cancel_token *token; /* a reference, or NULL */
    momento__cancel_hook hook;  /* on the token until delivery */
    grpc_metadata md[]; /* sized per call: the headers it sends (momento__call_start_with) */
};

static grpc_slice pack(const ProtobufCMessage *req)
{
    size_t size = protobuf_c_message_get_packed_size(req);
    grpc_slice s = grpc_slice_malloc(size);
    protobuf_c_message_pack(req, GRPC_SLICE_START_PTR(s));
    return s;
}

static void release(momento__call *call)
{
    call->transport->ops->end(call->att);
    grpc_slice_unref(call->rq.body);
    grpc_slice_unref(call->rq.cache);
    for (size_t i = call->own_md; i < (size_t)call->own_md + call->n_own_md; i++) {
        grpc_slice_unref(call->md[i].key);
        grpc_slice_unref(call->md[i].value);
    }
    if (call->track.wake)
        momento__timer_disarm(call->client, &call->gate_timer);
    /* A fire of one of its timers may still be under way on the completion
     * thread, taken off the heap just before a disarm: a cancel's or a
     * deadline's fire of the gate's while a freed place launched the call
     * from another thread, whose attempt then ended and was released on a
     * thread other than the completion thread (a refused submit, a late
     * answer released on the dispatching thread, an attempt finished on a
     * transport's own thread). Each fire finds the call's state done and
     * returns; wait it out (one load per timer when none fires). */
    momento__timer_settle(call->client, &call->gate_timer);
    momento__timer_settle(call->client, &call->late_timer);
    momento__timer_settle(call->client, &call->retry_timer);
    momento_cancel_token_free(call->token);
    free(call);
}

/* Prepares the next attempt, with the request's deadline or the attempt's
 * own if sooner. Returns 0 or an error (the transport's). */
static int prepare_attempt(momento__call *call)
{
    momento_client *c = call->client;
    call->attempt++;
    gpr_timespec deadline = call->deadline;
    if (c->cfg.retry_attempt_timeout_ms) {
        gpr_timespec own = gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
                                        gpr_time_from_millis(c->cfg.retry_attempt_timeout_ms,
                                                             GPR_TIMESPAN));
        if (gpr_time_cmp(own, deadline) < 0)
            deadline = own;
    }
    call->attempt_deadline = deadline;
    return call->transport->ops->prepare(call->transport, call->att, &call->rq, deadline);
}

static void attempt_done(momento__attempt *a);

/* Launches the prepared attempt, already published as the request's
 * current one. Returns 0, or an error (then no attempt_done() follows). */
static int launch_attempt(momento__call *call)
{
    return call->transport->ops->launch(call->att);
}

/* Starts the call's next attempt (a due retry). Returns 0, or an error
 * when it could not start (then the caller gives up). */
static int next_attempt(momento__call *call)
{
    if (prepare_attempt(call) != MOMENTO_OK)
        return MOMENTO_ERR_NO_MEMORY;
    momento__client_publish(call->client, &call->track, call->att);
    return launch_attempt(call);
}

void momento__call_opts_from(const momento_client *c, const momento_request_options *opts,
                             momento__call_opts *out)
{
    uint32_t ms = opts && opts->timeout_ms ? opts->timeout_ms : c->cfg.timeout_ms;
    memset(out, 0, sizeof(*out));
    /* Plain arithmetic: gpr_time_add() and gpr_time_from_millis() are two
     * calls into gRPC per request for what an addition does (ms is at most
     * a day, so no overflow). */
    out->submitted_ns = momento__now_ns();
    out->deadline = momento__ns_gpr(out->submitted_ns + (int64_t)ms * 1000000);
    out->token = opts ? opts->cancel : NULL;
    int concern = MOMENTO__OPT(opts, read_concern);
    if (concern && concern != c->cfg.read_concern) {
        out->read_concern = concern;
        out->unbatched = true;
    }
    out->group = MOMENTO__OPT(opts, group);
    out->n_headers = MOMENTO__OPT(opts, n_headers);
    if (out->n_headers) {
        out->headers = MOMENTO__OPT(opts, headers);
        out->unbatched = true; /* a batch carries one set of headers */
    }
}

int momento__call_start(momento_client *c, momento__rpc_id m, momento__decode_fn decode,
                        const char *cache, const ProtobufCMessage *req,
                        const momento_request_options *opts, momento_callback cb, void *userdata)
{
    momento__call_opts resolved;
    momento__call_opts_from(c, opts, &resolved);
    return momento__call_start_with(c, m, decode, cache, req, &resolved, cb, userdata);
}

void momento__call_cancel(momento__call *call, const char *why)
{
    momento__client_cancel(call->client, &call->track, why);
}

/* The token was cancelled (any thread, under the token's lock). */
static void on_token_cancelled(momento__cancel_hook *h)
{
    momento__call *call = (momento__call *)((char *)h - offsetof(momento__call, hook));
    momento__client_cancel(call->client, &call->track, "cancelled by the request's cancel token");
}

static void give_up(momento__call *call, grpc_status_code status, const char *why);

/* The cap on requests in flight: a FIFO of accepted calls waiting for a
 * place. A queued call has its first attempt prepared but not launched,
 * and not published, so nothing can end it but this queue: it leaves when
 * a place frees, or - over the cap - when its deadline passes, it is
 * cancelled or the client is freed; the transport then ends it at once
 * with DEADLINE_EXCEEDED or CANCELLED through the usual path, so it needs
 * no ending of its own. */
static void gate_launch(momento__call *call)
{
    momento__client_publish(call->client, &call->track, call->att);
    if (launch_attempt(call) != MOMENTO_OK)
        give_up(call, GRPC_STATUS_UNAVAILABLE, "could not start the call");
}

/* A place is free: the calls at the head of the queue take them. */
static void gate_leave(momento_client *c)
{
    momento__gate *g = &c->gate;
    momento__call *go = NULL, **tail = &go;
    pthread_mutex_lock(&g->lock);
    g->busy--;
    while (g->head && g->busy < c->cfg.max_concurrent) {
        momento__call *next = g->head;
        g->head = next->gate_next;
        if (!g->head)
            g->tail = NULL;
        g->queued--;
        next->gate = GATE_HOLDS;
        next->gate_next = NULL;
        g->busy++;
        momento__timer_disarm(c, &next->gate_timer);
        *tail = next;
        tail = &next->gate_next;
    }
    pthread_mutex_unlock(&g->lock);
    while (go) {
        momento__call *next = go->gate_next;
        gate_launch(go);
        go = next;
    }
}

static void deliver_late(momento__timer *t);

/* Its deadline passed, or it was cancelled, while queued (completion
 * thread): it leaves over the cap, to be ended by gRPC at once. */
static void gate_fire(momento__timer *t)
{
    momento__call *call = (momento__call *)((char *)t - offsetof(momento__call, gate_timer));
    momento__gate *g = &call->client->gate;
    pthread_mutex_lock(&g->lock);
    bool queued = call->gate == GATE_QUEUED;
    if (queued) {
        momento__call **p = &g->head;
        momento__call *prev = NULL;
        while (*p != call) {
            prev = *p;
            p = &(*p)->gate_next;
        }
        *p = call->gate_next;
        if (g->tail == call)
            g->tail = prev;
        g->queued--;
        call->gate = GATE_HOLDS;
        g->busy++;
    }
    pthread_mutex_unlock(&g->lock);
    if (queued)
        gate_launch(call);
}

/* Takes a place, or queues the call (returns true). Its deadline timer is
 * armed under the queue's lock, so that no other thread can launch, end
 * and free the call before it is armed. */
static bool gate_enter(momento_client *c, momento__call *call)
{
    momento__gate *g = &c->gate;
    pthread_mutex_lock(&g->lock);
    if (g->busy < c->cfg.max_concurrent) {
        g->busy++;
        call->gate = GATE_HOLDS;
        pthread_mutex_unlock(&g->lock);
        return false;
    }
    call->gate = GATE_QUEUED;
    MOMENTO__FIFO_APPEND(g->head, g->tail, call, gate_next);
    g->queued++;
    /* A cancel or the client's free that came since the request was
     * accepted found it not yet queued (gate_fire did nothing) and this
     * arming would undo theirs: it leaves at once instead. */
    if (momento__timer_arm(c, &call->gate_timer, momento__gpr_ns(call->deadline), true) != MOMENTO_OK ||
        momento__client_cancelled(c, &call->track) || momento__client_closing(c))
        momento__timer_fire_soon(c, &call->gate_timer); /* leave over the cap at once */
    pthread_mutex_unlock(&g->lock);
    return true;
}

int momento__call_start_with(momento_client *c, momento__rpc_id m, momento__decode_fn decode,
                             const char *cache, const ProtobufCMessage *req,
                             const momento__call_opts *opts, momento_callback cb, void *userdata)
{
    momento__plane plane = momento__rpcs[m].plane;
    int rc;
    if (opts->token && momento_cancel_token_is_cancelled(opts->token))
        return momento__refuse(MOMENTO_ERR_CANCELLED,
                               "the request's cancel token was already cancelled");
    /* One block per request: the call, its metadata (sized to exactly what
     * this call sends, below) and the transport's attempt after it, which
     * the seam has us zero (transport.h). malloc, not calloc: glibc's calloc
     * skips the per-thread cache, and the metadata array needs no zeroing.
     * The block must stay within that cache's largest size (1032 bytes):
     * past it each request's malloc and free cost ~550 instructions more
     * (bench/client.sh, docs/performance.md). */
    int concern = opts->read_concern ? opts->read_concern : c->cfg.read_concern;
    size_t md_slots = (plane != MOMENTO__PLANE_PING) + (plane == MOMENTO__PLANE_DATA) +
                      (plane == MOMENTO__PLANE_DATA && concern == MOMENTO_READ_CONSISTENT) +
                      c->n_extra_md + opts->n_headers;
    /* agent_sent only ever turns true: seen true here, the check below
     * cannot find it false, and seen false, the slots may go unused. */
    if (!atomic_load_explicit(&c->agent_sent, memory_order_relaxed))
        md_slots += 2; /* agent, runtime-version */
    momento__transport *transport = c->routes[m];
    /* What a second transport's commands cannot carry - protosocket's have
     * no metadata and no read concern - goes over the client's own (gRPC),
     * which can: a request's own headers, a consistent read. */
    if (transport != c->transport && (opts->n_headers || concern == MOMENTO_READ_CONSISTENT))
        transport = c->transport;
    const momento__transport_ops *ops = transport->ops;
    size_t att_at = sizeof(momento__call) + md_slots * sizeof(grpc_metadata);
    att_at = (att_at + _Alignof(max_align_t) - 1) & ~(_Alignof(max_align_t) - 1);
    momento__call *call = momento__malloc(att_at + ops->attempt_size);
    if (!call)
        return MOMENTO_ERR_NO_MEMORY;
    memset(call, 0, sizeof(*call));
    call->att = (momento__attempt *)((char *)call + att_at);
    memset(call->att, 0, ops->attempt_size);
    call->att->data = call;
    call->att->done = attempt_done;
    call->transport = transport;
    call->track.cancel = ops->cancel;
    call->client = c;
    call->rq.method = m;
    call->decode = decode;
    momento__timer_init(&call->gate_timer, gate_fire);
    momento__timer_init(&call->late_timer, deliver_late);
    call->cb = cb;
    call->userdata = userdata;
    call->rq.cache = grpc_empty_slice();
    call->rq.body = opts->packed ? grpc_slice_from_copied_buffer((const char *)opts->packed,
                                                                 opts->packed_len)
                                 : pack(req);

    size_t n_md = 0;
    if (plane != MOMENTO__PLANE_PING) {
        call->md[n_md].key = grpc_slice_from_static_string("authorization");
        call->md[n_md++].value = c->auth_value;
    }
    if (plane == MOMENTO__PLANE_DATA) {
        call->rq.cache = grpc_slice_from_copied_string(cache);
        call->md[n_md].key = grpc_slice_from_static_string("cache");
        call->md[n_md++].value = call->rq.cache;
        /* As the official SDKs: no header means BALANCED, so only
         * CONSISTENT is sent. */
        if (concern == MOMENTO_READ_CONSISTENT) {
            call->md[n_md].key = grpc_slice_from_static_string("read-concern");
            call->md[n_md++].value = grpc_slice_from_static_string("consistent");
        }
    }

    for (size_t i = 0; i < c->n_extra_md; i++)
        call->md[n_md++] = c->extra_md[i];
    /* The request's own headers: copied, since the caller's strings live
     * only during this call; release() gives them back. */
    call->own_md = (uint8_t)n_md;
    for (size_t i = 0; i < opts->n_headers; i++) {
        call->md[n_md].key = grpc_slice_from_copied_string(opts->headers[i].name);
        call->md[n_md++].value = grpc_slice_from_copied_string(opts->headers[i].value);
    }
    call->n_own_md = (uint8_t)opts->n_headers;

    call->rq.headers = call->md;
    call->deadline = opts->deadline;
    call->rq.expect_msgs = opts->expect_msgs;
    call->submitted_ns = opts->submitted_ns;
    call->no_metrics = opts->no_metrics;
    /* With a metrics hook too: its requests' reports are then made on
     * the dispatching thread, each just before its callback, under the
     * client's metrics lock (metrics.c), which keeps them apart from the
     * completion thread's. */
    call->late = opts->late && opts->no_metrics;
    call->group = opts->group;

    if (prepare_attempt(call) != MOMENTO_OK) {
        release(call);
        return MOMENTO_ERR_NO_MEMORY;
    }
    /* Under a cap, the gRPC call is published when it leaves the queue. */
    bool gated = c->cfg.max_concurrent != 0;
    /* What a cancel or the client's free fires when the request has no gRPC
     * call: while it is queued, that ends its wait (gate_fire); otherwise
     * the fire finds nothing to do. Set before the token's hook is hung,
     * which a cancel on another thread may fire at once. */
    if (gated)
        call->track.wake = &call->gate_timer;
    if (opts->token) {
        /* Hung before the request is accepted: a cancel from now on either
         * finds it not yet accepted (then it is refused below) or ends its
         * attempt. Either way nothing is lost. */
        call->token = momento_cancel_token_ref(opts->token);
        call->hook.fire = on_token_cancelled;
        if (momento__cancel_hook_add(call->token, &call->hook) != MOMENTO_OK) {
            release(call);
            return MOMENTO_ERR_CANCELLED;
        }
    }
    rc = momento__client_accept(c, &call->track, gated ? NULL : call->att);
    if (rc != MOMENTO_OK) {
        if (call->token)
            momento__cancel_hook_remove(call->token, &call->hook);
        release(call);
        return rc;
    }
    if (!call->no_metrics) /* the application's, not one the library made for itself */
        momento__request_accepted(c, call->group);

    /* The client introduces itself on its first accepted call. */
    if (!atomic_load_explicit(&c->agent_sent, memory_order_relaxed) &&
        !atomic_exchange(&c->agent_sent, true)) {
        call->md[n_md].key = grpc_slice_from_static_string("agent");
        call->md[n_md++].value = grpc_slice_from_static_string(AGENT);
        call->md[n_md].key = grpc_slice_from_static_string("runtime-version");
        call->md[n_md++].value = grpc_slice_from_static_string(RUNTIME);
    }
    call->rq.n_headers = n_md;

    if (opts->started)
        *opts->started = call;
    if (gated) {
        if (gate_enter(c, call))
            return MOMENTO_OK; /* accepted; it leaves the queue later */
        momento__client_publish(c, &call->track, call->att);
    }
    rc = launch_attempt(call);
    if (rc != MOMENTO_OK) {
        /* Refuse the request rather than lose it: no callback follows. */
        if (call->token)
            momento__cancel_hook_remove(call->token, &call->hook);
        if (gated)
            gate_leave(c);
        if (!call->no_metrics)
            momento__request_done(c, call->group);
        momento__client_retire(c, &call->track);
        release(call);
    }
    return rc;
}

/* Ends the last attempt (unpublished first, so that no cancel reaches it
 * while the transport gives it back), so the next starts clean. */
static void reset_attempt(momento__call *call)
{
    momento__client_publish(call->client, &call->track, NULL);
    call->transport->ops->end(call->att);
}

static void deliver(momento__call *call);

/* Ends the call CANCELLED, as the client's free or the cancel (its token,
 * or a coalescer) that came meanwhile ends every request, when one did;
 * returns whether it did. For a call between attempts or holding a reply
 * back, which no transport cancel can reach. */
static bool give_up_if_cut(momento__call *call)
{
    momento_client *c = call->client;
    if (momento__client_closing(c))
        give_up(call, GRPC_STATUS_CANCELLED, "cancelled: the client was freed");
    else if (momento__client_cancelled(c, &call->track))
        give_up(call, GRPC_STATUS_CANCELLED,
                call->track.cancel_why ? call->track.cancel_why : "cancelled");
    else
        return false;
    return true;
}

/* A DEADLINE_EXCEEDED can come before the attempt's deadline: gRPC keeps
 * its timers in whole milliseconds (0.4 ms early seen under load), and a
 * server's deadline, taken from grpc-timeout when it read the headers, may
 * run on a stale clock (16 ms early seen at momento-local under load).
 * Such an end is delivered at the attempt's deadline instead, from a client
 * timer: no request ends TIMEOUT before its own deadline (a fixed-timeout
 * attempt's own, when no retry is left). */
static void deliver_late(momento__timer *t)
{
    momento__call *call = (momento__call *)((char *)t - offsetof(momento__call, late_timer));
    if (!give_up_if_cut(call))
        deliver(call);
}

/* Holds an early DEADLINE_EXCEEDED until `due` (deliver_late()). The RPC
 * is over on the wire, so the request gives back at once what it held as
 * one: its place in the client's list of cancellable attempts, its place under the client's cap (the next queued
 * request starts), its count towards batching's threshold (the queue may
 * leave). A cancel or the client's free fires the timer at once (the
 * tracked request's `wake`; momento__client_wait_on() fires it for one
 * that came before, too). Returns false, with nothing changed, when the
 * timer cannot be armed (no memory): then the caller delivers now. */
static bool wait_late(momento__call *call, int64_t due)
{
    momento_client *c = call->client;
    if (momento__timer_arm(c, &call->late_timer, due, true) != MOMENTO_OK)
        return false;
    momento__client_wait_on(c, &call->track, &call->late_timer); /* the attempt is unpublished */
    momento__client_answered(c, &call->track);
    if (call->gate == GATE_HOLDS) {
        call->gate = GATE_NONE;
        gate_leave(c);
    }
    momento__client_rpc_ended(c);
    return true;
}

/* Ends a call that will make no further attempt, with a local status. */
static void give_up(momento__call *call, grpc_status_code status, const char *why)
{
    momento__reply *r = &call->att->reply;
    r->status = (int)status;
    grpc_slice_unref(r->details);
    r->details = grpc_slice_from_static_string(why);
    deliver(call);
}

/* The call's next attempt is due (its retry timer, completion thread), or
 * a cancel or the client's free cut its wait short: it makes the attempt,
 * or ends as the cancel or the free would have ended the attempt. */
static void retry_fire(momento__timer *t)
{
    momento__call *call = (momento__call *)((char *)t - offsetof(momento__call, retry_timer));
    momento_client *c = call->client;
    /* Nothing may fire the timer again from now on (one a cancel or a free
     * queued meanwhile is taken back). A cancel or a free after this finds
     * nothing to fire: one before the checks below ends the call there,
     * one after them cancels the next attempt's gRPC call as it is
     * published (momento__client_publish). */
    momento__timer_disarm(c, momento__client_unwake(c, &call->track));
    if (!give_up_if_cut(call) && next_attempt(call) != MOMENTO_OK)
        give_up(call, GRPC_STATUS_UNAVAILABLE, "could not start a retry");
}

/* Makes the next attempt after `delay_ns` (retry.c's answer): at once, or
 * on a client timer, like any other wait of the completion thread. While
 * it waits the request has no gRPC call, so a cancel or the client's free
 * fires the timer at once (momento__client_wait_on): it ends then, with
 * exactly one callback. */
static void wait_retry(momento__call *call, int64_t now_ns, int64_t delay_ns)
{
    momento_client *c = call->client;
    if (delay_ns == 0) {
        if (next_attempt(call) != MOMENTO_OK)
            give_up(call, GRPC_STATUS_UNAVAILABLE, "could not start a retry");
        return;
    }
    if (!call->retry_timer.fire) /* not armed before: the call was zeroed */
        momento__timer_init(&call->retry_timer, retry_fire);
    if (momento__timer_arm(c, &call->retry_timer, now_ns + delay_ns, true) != MOMENTO_OK) {
        /* As when a retry cannot start: the attempt's own failure. */
        give_up(call, GRPC_STATUS_UNAVAILABLE, "could not queue a retry: out of memory");
        return;
    }
    momento__client_wait_on(c, &call->track, &call->retry_timer); /* reset_attempt took its call */
}

/* The attempt is over (the transport's done(), completion thread): retry,
 * or deliver. */
static void attempt_done(momento__attempt *a)
{
    momento__call *call = a->data;
    momento_client *c = call->client;
    if (a->reply.status != GRPC_STATUS_OK) {
        int64_t now = momento__now_ns();
        int64_t delay = momento__retry_delay(c, &momento__rpcs[call->rq.method], call->attempt,
                                             a->reply.status, now, momento__gpr_ns(call->deadline));
        if (delay >= 0) {
            /* A failure that would be retried ends as the cancel or the free
             * that came meanwhile would have ended the wait for its retry:
             * the request ends because of them, not of the failure. The
             * cancel may have come after the server's answer reached gRPC
             * (or after gRPC's own CANCELLED, which retry.c counts
             * eligible), so its status can be either. */
            if (give_up_if_cut(call))
                return;
            reset_attempt(call);
            wait_retry(call, now, delay);
            return;
        }
        int64_t due = momento__gpr_ns(call->attempt_deadline);
        if (a->reply.status == GRPC_STATUS_DEADLINE_EXCEEDED && due > now && wait_late(call, due))
            return; /* deliver_late() */
    }
    deliver(call);
}

/* An answer delivered late (call.h `late`): the result as decoded, with
 * what it points into, until its callback has run on the dispatching
 * thread. */
typedef struct late_answer {
    momento__call *call;
    momento_result r;
    momento__scratch scratch;
    char *message;
} late_answer;

/* On the dispatching thread (or in the client's free): the callback, then
 * the call goes, retired already. */
static void deliver_late_answer(void *arg)
{
    late_answer *la = arg;
    momento__call *call = la->call;
    momento__respond_late(call->client, call->cb, &la->r, call->userdata);
    momento__scratch_free(&la->scratch);
    gpr_free(la->message);
    release(call);
    free(la);
}

/* Maps the status, decodes, calls back, and retires the call. */
static void deliver(momento__call *call)
{
    momento_client *c = call->client;
    const momento__rpc *info = &momento__rpcs[call->rq.method];
    const momento__reply *rep = &call->att->reply;
    momento_result r;
    momento__scratch scratch;
    memset(&scratch, 0, sizeof(scratch));
    scratch.decompress_max = momento__decompress_limit(&c->cfg); /* gets' decoders read it */
    memset(&r, 0, sizeof(r));
    r.grpc_status = rep->status;
    r.attempts = call->attempt;
    if (call->attempt > 0) /* else it never reached the wire: NONE */
        r.transport = call->transport->ops->metrics_kind;
    r.rpc = (int)call->rq.method + 1;
    char *message = GRPC_SLICE_LENGTH(rep->details) ? grpc_slice_to_c_string(rep->details) : NULL;
    const char *detail = rep->status != GRPC_STATUS_OK ? rep->err : NULL;
    if (rep->too_many ||
        (rep->status == GRPC_STATUS_OK && call->rq.expect_msgs &&
         rep->n_msgs != call->rq.expect_msgs)) {
        /* A batch answered with more or fewer replies than keys. */
        r.error = MOMENTO_ERR_BAD_RESPONSE;
    } else if (rep->status == GRPC_STATUS_OK) {
        if (!info->streaming && rep->n_msgs != 1)
            r.error = MOMENTO_ERR_BAD_RESPONSE; /* a unary reply has exactly one message */
        else
            r.error = call->decode(&r, rep->msgs, rep->n_msgs, &scratch);
    } else if (info->already_exists_is_outcome && rep->status == GRPC_STATUS_ALREADY_EXISTS) {
        r.error = MOMENTO_OK;
        r.outcome = MOMENTO_OUTCOME_ALREADY_EXISTS;
    } else if (rep->out_of_memory) {
        /* The RESOURCE_EXHAUSTED is our own: no room for the reply. */
        r.error = MOMENTO_ERR_CLIENT_RESOURCE_EXHAUSTED;
    } else {
        r.error = momento__error_from_reply(rep->status, detail, message);
    }
    if (r.error != MOMENTO_OK) {
        r.outcome = MOMENTO_OUTCOME_ERROR;
        /* Nothing a failed decode left behind may be read. */
        r.value = NULL;
        r.value_len = 0;
        r.n_caches = r.n_exists = r.n_items = 0;
    }

    r.message = message ? message
                        : scratch.message ? scratch.message
                        : (r.error == MOMENTO_ERR_BAD_RESPONSE ? momento_strerror(r.error) : "");
    r.error_detail = detail;
    r.trailers = rep->trailers;
    r.n_trailers = rep->n_trailers;

    /* From here a cancel cannot reach this request: it has its result. */
    if (call->token)
        momento__cancel_hook_remove(call->token, &call->hook);
    if (call->track.wake) {
        /* Nor may anything fire its timer (the gate's, or a late delivery's):
         * the call is released after its callback, while a free's sweep may
         * still find it tracked. One the sweep queued already is taken back. */
        momento__timer_disarm(c, momento__client_unwake(c, &call->track));
    }
    if (!call->track.answered) /* wait_late() may have */
        momento__client_answered(c, &call->track);
    if (call->gate == GATE_HOLDS)
        gate_leave(c); /* before the callback: a request it makes may take the place */
    if (momento__metrics_on(&c->cfg) && !call->no_metrics)
        momento__metrics_rpc(&c->cfg, call->rq.method, call->rq.cache, call->submitted_ns,
                             call->rq.body, rep->msgs, rep->n_msgs, &r);
    if (call->late && c->dispatch.on) {
        late_answer *la = momento__malloc(sizeof(*la));
        if (la) {
            la->call = call;
            la->r = r;
            la->scratch = scratch;
            la->message = message;
            /* Retired first: once queued, the answer may run, and release
             * the call, at any moment. */
            momento__client_retire(c, &call->track);
            if (momento__respond_later(c, deliver_late_answer, la) != MOMENTO_OK)
                deliver_late_answer(la); /* no memory to queue it: here, now */
            return;
        }
    }
    momento__respond(c, call->group, call->cb, &r, call->userdata, call->no_metrics);

    momento__scratch_free(&scratch);
    gpr_free(message);

    momento__client_retire(c, &call->track);
    release(call);
}
