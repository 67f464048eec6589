/* The local server's gRPC side: one thread owns a completion queue, the
 * store and a timer heap. Every call is requested as a registered method
 * with its payload already read, answered with one batch (streams: one batch
 * per message), and counted. Injected delays park a call on the timer heap,
 * so a delayed call never holds up any other. */
#include "server_internal.h"

#include <grpc/grpc_security.h>
#include <grpc/support/time.h>
#include <grpc/byte_buffer_reader.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const srv_method_info srv_methods[SRV_METHOD_COUNT] = {
    [SRV_GET] = {"/cache_client.Scs/Get", "Get", "get", true, false},
    [SRV_SET] = {"/cache_client.Scs/Set", "Set", "set", true, false},
    [SRV_DELETE] = {"/cache_client.Scs/Delete", "Delete", "delete", true, false},
    [SRV_SET_IF] = {"/cache_client.Scs/SetIf", "SetIf", "set-if", true, false},
    [SRV_SET_IF_NOT_EXISTS] = {"/cache_client.Scs/SetIfNotExists", "SetIfNotExists",
                               "set-if-not-exists", true, false},
    [SRV_INCREMENT] = {"/cache_client.Scs/Increment", "Increment", "increment", true, false},
    [SRV_KEYS_EXIST] = {"/cache_client.Scs/KeysExist", "KeysExist", "keys-exist", true, false},
    [SRV_ITEM_GET_TTL] = {"/cache_client.Scs/ItemGetTtl", "ItemGetTtl", "item-get-ttl", true,
                          false},
    [SRV_UPDATE_TTL] = {"/cache_client.Scs/UpdateTtl", "UpdateTtl", "update-ttl", true, false},
    [SRV_GET_BATCH] = {"/cache_client.Scs/GetBatch", "GetBatch", "get-batch", true, true},
    [SRV_SET_BATCH] = {"/cache_client.Scs/SetBatch", "SetBatch", "set-batch", true, true},
    [SRV_PING] = {"/cache_client.Ping/Ping", "Ping", "ping", false, false},
    [SRV_CREATE_CACHE] = {"/control_client.ScsControl/CreateCache", "CreateCache", "create-cache",
                          false, false},
    [SRV_DELETE_CACHE] = {"/control_client.ScsControl/DeleteCache", "DeleteCache", "delete-cache",
                          false, false},
    [SRV_LIST_CACHES] = {"/control_client.ScsControl/ListCaches", "ListCaches", "list-caches",
                         false, false},
    [SRV_FLUSH_CACHE] = {"/control_client.ScsControl/FlushCache", "FlushCache", "flush-cache",
                         false, false},
    [SRV_UNKNOWN] = {NULL, "Unimplemented", "unimplemented", false, false},
};

static const char *const status_names[GRPC_STATUS_COUNT] = {
    "OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
    "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED",
    "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED",
};

/* Calls requested per method ahead of arrival: enough that a burst does not
 * wait for the server thread to re-request. */
#define REQUESTS_PER_METHOD 16
#define SWEEP_INTERVAL_MS 1000
#define SWEEP_BUDGET 200000
/* Upper bound on how long the loop sleeps, so momento_local_stop() is seen
 * promptly even with no traffic. */
#define MAX_WAIT_MS 50

typedef enum { TAG_NEW_CALL, TAG_BATCH, TAG_SHUTDOWN } tag_kind;

struct srv_call {
    tag_kind kind; /* first member: every tag starts with its kind */
    momento_local *s;
    srv_method method;
    grpc_call *call;
    gpr_timespec deadline;
    grpc_metadata_array md;
    grpc_byte_buffer *payload;
    grpc_call_details details; /* unknown-method requests only */
    srv_reply reply;
    size_t sent;               /* stream messages sent */
    bool started;              /* initial metadata sent */
    bool final_sent;
    int cancelled;
    grpc_byte_buffer *out;     /* message of the batch in progress */
    grpc_slice status_details;
    grpc_metadata trailer;
    int64_t due_ms;            /* when parked on the timer heap */
    uint64_t seq;              /* arrival order: breaks ties in due_ms */
    int pending_error;         /* injected error to send after a delay, or -1 */
};

static tag_kind shutdown_tag = TAG_SHUTDOWN;

/* ---- timer heap ------------------------------------------------------ */

/* Earlier due time first; equal due times in arrival order, so calls with
 * the same injected delay are answered in the order they came. */
static bool before(const srv_call *a, const srv_call *b)
{
    return a->due_ms < b->due_ms || (a->due_ms == b->due_ms && a->seq < b->seq);
}

static void heap_swap(momento_local *s, size_t a, size_t b)
{
    srv_call *t = s->timers[a];
    s->timers[a] = s->timers[b];
    s->timers[b] = t;
}

static int heap_push(momento_local *s, srv_call *c)
{
    if (s->n_timers == s->cap_timers) {
        size_t cap = s->cap_timers ? s->cap_timers * 2 : 64;
        srv_call **grown = realloc(s->timers, cap * sizeof(*grown));
        if (!grown)
            return -1;
        s->timers = grown;
        s->cap_timers = cap;
    }
    size_t i = s->n_timers++;
    s->timers[i] = c;
    while (i > 0 && before(s->timers[i], s->timers[(i - 1) / 2])) {
        heap_swap(s, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
    return 0;
}

static srv_call *heap_pop(momento_local *s)
{
    srv_call *top = s->timers[0];
    s->timers[0] = s->timers[--s->n_timers];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < s->n_timers && before(s->timers[l], s->timers[m]))
            m = l;
        if (r < s->n_timers && before(s->timers[r], s->timers[m]))
            m = r;
        if (m == i)
            break;
        heap_swap(s, i, m);
        i = m;
    }
    return top;
}

/* ---- call lifecycle -------------------------------------------------- */

static void call_free(srv_call *c)
{
    if (c->call)
        grpc_call_unref(c->call);
    grpc_metadata_array_destroy(&c->md);
    if (c->payload)
        grpc_byte_buffer_destroy(c->payload);
    if (c->out)
        grpc_byte_buffer_destroy(c->out);
    if (c->method == SRV_UNKNOWN)
        grpc_call_details_destroy(&c->details);
    grpc_slice_unref(c->status_details);
    srv_reply_clear(&c->reply);
    free(c);
}

static void request_call(momento_local *s, srv_method m)
{
    srv_call *c = calloc(1, sizeof(*c));
    if (!c)
        return;
    c->kind = TAG_NEW_CALL;
    c->s = s;
    c->method = m;
    c->pending_error = -1;
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

static void count(momento_local *s, srv_method m, grpc_status_code st)
{
    if ((unsigned)st < GRPC_STATUS_COUNT)
        atomic_fetch_add_explicit(&s->stats[m][st], 1, memory_order_relaxed);
}

/* Starts the next batch of a call's reply; false when there is none left.
 * A unary reply is one batch. A stream sends its first message with the
 * initial metadata, one message per batch after that, and closes with the
 * status in a batch of its own. */
static bool send_next(srv_call *c)
{
    if (c->final_sent)
        return false;
    grpc_op ops[4];
    size_t n = 0;
    memset(ops, 0, sizeof(ops));
    srv_reply *r = &c->reply;
    if (c->out) {
        grpc_byte_buffer_destroy(c->out);
        c->out = NULL;
    }
    if (!c->started) {
        c->started = true;
        ops[n++].op = GRPC_OP_SEND_INITIAL_METADATA;
    }
    bool message = r->status == GRPC_STATUS_OK && c->sent < r->n_msgs;
    if (message) {
        c->out = grpc_raw_byte_buffer_create(&r->msgs[c->sent++], 1);
        ops[n].op = GRPC_OP_SEND_MESSAGE;
        ops[n].data.send_message.send_message = c->out;
        n++;
    }
    if (!srv_methods[c->method].streaming || !message) {
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
        ops[n].op = GRPC_OP_RECV_CLOSE_ON_SERVER;
        ops[n].data.recv_close_on_server.cancelled = &c->cancelled;
        n++;
        c->final_sent = true;
    }
    c->kind = TAG_BATCH;
    return grpc_call_start_batch(c->call, ops, n, c, NULL) == GRPC_CALL_OK;
}

static void reply(srv_call *c)
{
    count(c->s, c->method, c->reply.status);
    if (!send_next(c))
        call_free(c);
}

static const grpc_slice *header(const grpc_metadata_array *md, const char *key)
{
    for (size_t i = 0; i < md->count; i++)
        if (grpc_slice_str_cmp(md->metadata[i].key, key) == 0)
            return &md->metadata[i].value;
    return NULL;
}

/* Runs the handler (or the injected error) and replies. */
static void answer(srv_call *c)
{
    momento_local *s = c->s;
    if (c->pending_error >= 0) {
        srv_reply_error(&c->reply, (grpc_status_code)c->pending_error, NULL,
                        "injected error (return-error)");
    } else if (!c->payload) {
        srv_reply_error(&c->reply, GRPC_STATUS_INVALID_ARGUMENT, NULL, "request has no message");
    } else {
        grpc_byte_buffer_reader reader;
        grpc_slice body = grpc_empty_slice();
        if (grpc_byte_buffer_reader_init(&reader, c->payload)) {
            body = grpc_byte_buffer_reader_readall(&reader);
            grpc_byte_buffer_reader_destroy(&reader);
        }
        const grpc_slice *cache = header(&c->md, "cache");
        char name[256];
        size_t name_len = 0;
        if (cache) {
            name_len = GRPC_SLICE_LENGTH(*cache);
            if (name_len >= sizeof(name))
                name_len = sizeof(name) - 1;
            memcpy(name, GRPC_SLICE_START_PTR(*cache), name_len);
        }
        name[name_len] = '\0';
        srv_handle(s, c->method, cache ? name : NULL, name_len, GRPC_SLICE_START_PTR(body),
                   GRPC_SLICE_LENGTH(body), &c->reply);
        grpc_slice_unref(body);
    }
    reply(c);
}

static const char *const counted_headers[4] = {"authorization", "cache", "agent",
                                                "runtime-version"};

static void count_headers(momento_local *s, const grpc_metadata_array *md)
{
    for (size_t i = 0; i < md->count; i++)
        for (int h = 0; h < 4; h++)
            if (grpc_slice_str_cmp(md->metadata[i].key, counted_headers[h]) == 0)
                atomic_fetch_add_explicit(&s->header_counts[h], 1, memory_order_relaxed);
}

uint64_t momento_local_header_count(const momento_local *s, const char *name)
{
    if (!s || !name)
        return 0;
    momento_local *ms = (momento_local *)s; /* counters are atomics, read-only here */
    for (int h = 0; h < 4; h++)
        if (strcmp(name, counted_headers[h]) == 0)
            return atomic_load_explicit(&ms->header_counts[h], memory_order_relaxed);
    return 0;
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

static void on_new_call(srv_call *c, bool ok)
{
    momento_local *s = c->s;
    if (!ok) { /* the server is shutting down */
        call_free(c);
        return;
    }
    if (!s->shut_down)
        request_call(s, c->method);
    count_headers(s, &c->md);

    if (c->method == SRV_UNKNOWN) {
        srv_reply_error(&c->reply, GRPC_STATUS_UNIMPLEMENTED, NULL, "unknown method");
        reply(c);
        return;
    }
    if (s->opts.auth_token && c->method != SRV_PING) {
        const grpc_slice *auth = header(&c->md, "authorization");
        if (!auth || grpc_slice_str_cmp(*auth, s->opts.auth_token) != 0) {
            srv_reply_error(&c->reply, GRPC_STATUS_UNAUTHENTICATED, NULL, "invalid auth token");
            reply(c);
            return;
        }
    }
    if (c->method != SRV_PING && rate_limited(s)) {
        srv_reply_error(&c->reply, GRPC_STATUS_RESOURCE_EXHAUSTED, "operations_rate_limit_exceeded",
                        "request rate exceeded the limit of %u per second", s->opts.max_rps);
        reply(c);
        return;
    }
    fault_plan plan;
    faults_plan(&s->sessions, &c->md, srv_methods[c->method].fault_name, &plan);
    if (plan.bad_header) {
        srv_reply_error(&c->reply, GRPC_STATUS_INVALID_ARGUMENT, NULL, "%s", plan.bad_header);
        reply(c);
        return;
    }
    c->pending_error = plan.error_status;
    if (plan.delay_ms) {
        c->due_ms = store_now_ms() + plan.delay_ms;
        c->seq = s->timer_seq++;
        if (heap_push(s, c) == 0)
            return;
    }
    answer(c);
}

static void on_batch(srv_call *c, bool ok)
{
    if (!ok || c->s->shut_down || !send_next(c))
        call_free(c);
}

static void run_timers(momento_local *s, int64_t now)
{
    while (s->n_timers && s->timers[0]->due_ms <= now)
        answer(heap_pop(s));
}

/* Delayed calls still parked when the server stops are failed with
 * UNAVAILABLE, as a server going away would. */
static void drop_timers(momento_local *s)
{
    while (s->n_timers) {
        srv_call *c = heap_pop(s);
        c->pending_error = GRPC_STATUS_UNAVAILABLE;
        answer(c);
    }
}

static void *server_loop(void *arg)
{
    momento_local *s = arg;
    bool queue_shut = false;
    for (;;) {
        int64_t now = store_now_ms();
        int64_t wait = MAX_WAIT_MS;
        if (s->n_timers && s->timers[0]->due_ms - now < wait)
            wait = s->timers[0]->due_ms - now;
        if (wait < 0)
            wait = 0;
        gpr_timespec deadline = gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
                                             gpr_time_from_millis(wait, GPR_TIMESPAN));
        grpc_event ev = grpc_completion_queue_next(s->cq, deadline, NULL);
        if (ev.type == GRPC_QUEUE_SHUTDOWN)
            break;
        if (ev.type == GRPC_OP_COMPLETE) {
            tag_kind kind = *(tag_kind *)ev.tag;
            if (kind == TAG_SHUTDOWN) {
                s->shut_down = true;
            } else if (kind == TAG_NEW_CALL) {
                on_new_call(ev.tag, ev.success);
            } else {
                on_batch(ev.tag, ev.success);
            }
        }
        now = store_now_ms();
        if (atomic_load(&s->stopping))
            drop_timers(s);
        else
            run_timers(s, now);
        if (now >= s->next_sweep_ms) {
            store_sweep(&s->store, now, SWEEP_BUDGET);
            s->next_sweep_ms = now + SWEEP_INTERVAL_MS;
        }
        if (s->shut_down && !queue_shut) {
            grpc_completion_queue_shutdown(s->cq);
            queue_shut = true;
        }
    }
    return NULL;
}

/* ---- lifecycle ------------------------------------------------------- */

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (cap - len < 4096) {
            cap = cap ? cap * 2 : 8192;
            char *grown = realloc(buf, cap + 1);
            if (!grown) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = grown;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0)
            break;
    }
    fclose(f);
    buf[len] = '\0';
    return buf;
}

static grpc_server_credentials *server_credentials(const momento_local_options *o, int *err)
{
    *err = MOMENTO_OK;
    if (!o->tls_cert)
        return grpc_insecure_server_credentials_create();
    char *cert = read_file(o->tls_cert);
    char *key = read_file(o->tls_key);
    grpc_server_credentials *creds = NULL;
    if (cert && key) {
        grpc_ssl_pem_key_cert_pair pair = {key, cert};
        creds = grpc_ssl_server_credentials_create(NULL, &pair, 1, 0, NULL);
    }
    free(cert);
    free(key);
    if (!creds)
        *err = MOMENTO_ERR_INVALID_ARGUMENT;
    return creds;
}

static grpc_arg int_arg(const char *key, int value)
{
    grpc_arg a;
    a.type = GRPC_ARG_INTEGER;
    a.key = (char *)key;
    a.value.integer = value;
    return a;
}

static void destroy(momento_local *s)
{
    store_destroy(&s->store);
    faults_clear(&s->sessions);
    free(s->timers);
    momento__local_options_clear(&s->opts);
    free(s);
    grpc_shutdown();
}

int momento_local_start(momento_local **ret, const momento_local_options *opts)
{
    if (!ret)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    momento_local *s = calloc(1, sizeof(*s));
    if (!s)
        return MOMENTO_ERR_NO_MEMORY;
    grpc_init();
    int rc = momento__local_options_copy(&s->opts, opts);
    if (rc != MOMENTO_OK) {
        free(s);
        grpc_shutdown();
        return rc;
    }
    store_init(&s->store, s->opts.max_memory);
    for (size_t i = 0; i < s->opts.n_caches; i++)
        store_create_cache(&s->store, s->opts.caches[i]);

    grpc_server_credentials *creds = server_credentials(&s->opts, &rc);
    if (!creds) {
        destroy(s);
        return rc;
    }
    /* Accept messages well past the item limit, so an oversized item is
     * answered with Momento's RESOURCE_EXHAUSTED rather than gRPC's own
     * message-size error; tolerate clients' 5 s keepalive pings. */
    grpc_arg args[] = {
        int_arg(GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH, 64 * 1024 * 1024),
        int_arg(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 1000),
        int_arg(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 0),
        /* Without this a second server could bind the same port and the two
         * would split clients between them. */
        int_arg(GRPC_ARG_ALLOW_REUSEPORT, 0),
    };
    grpc_channel_args ch_args = {sizeof(args) / sizeof(args[0]), args};
    s->server = grpc_server_create(&ch_args, NULL);
    s->cq = grpc_completion_queue_create_for_next(NULL);
    grpc_server_register_completion_queue(s->server, s->cq, NULL);
    for (int m = 0; m < SRV_UNKNOWN; m++)
        s->registered[m] = grpc_server_register_method(
            s->server, srv_methods[m].path, NULL, GRPC_SRM_PAYLOAD_READ_INITIAL_BYTE_BUFFER, 0);

    char addr[96];
    bool v6 = strchr(s->opts.bind, ':') != NULL;
    snprintf(addr, sizeof(addr), v6 ? "[%s]:%d" : "%s:%d", s->opts.bind, s->opts.port);
    s->port = grpc_server_add_http2_port(s->server, addr, creds);
    grpc_server_credentials_release(creds);
    if (s->port <= 0) {
        grpc_server_destroy(s->server);
        grpc_completion_queue_shutdown(s->cq);
        while (grpc_completion_queue_next(s->cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL).type !=
               GRPC_QUEUE_SHUTDOWN)
            ;
        grpc_completion_queue_destroy(s->cq);
        destroy(s);
        return MOMENTO_ERR_SERVER_UNAVAILABLE;
    }
    snprintf(s->endpoint, sizeof(s->endpoint), v6 ? "[%s]:%d" : "%s:%d", s->opts.bind, s->port);
    grpc_server_start(s->server);
    for (int m = 0; m < SRV_METHOD_COUNT; m++)
        for (int k = 0; k < REQUESTS_PER_METHOD; k++)
            request_call(s, (srv_method)m);
    s->next_sweep_ms = store_now_ms() + SWEEP_INTERVAL_MS;
    if (pthread_create(&s->thread, NULL, server_loop, s) != 0) {
        grpc_server_shutdown_and_notify(s->server, s->cq, &shutdown_tag);
        grpc_server_cancel_all_calls(s->server);
        s->shut_down = true;
        grpc_completion_queue_shutdown(s->cq);
        grpc_event ev;
        while ((ev = grpc_completion_queue_next(s->cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL))
                   .type != GRPC_QUEUE_SHUTDOWN)
            if (ev.type == GRPC_OP_COMPLETE && *(tag_kind *)ev.tag != TAG_SHUTDOWN)
                call_free(ev.tag);
        grpc_server_destroy(s->server);
        grpc_completion_queue_destroy(s->cq);
        destroy(s);
        return MOMENTO_ERR_NO_MEMORY;
    }
    *ret = s;
    return MOMENTO_OK;
}

void momento_local_stop(momento_local *s)
{
    if (!s)
        return;
    atomic_store(&s->stopping, true);
    grpc_server_shutdown_and_notify(s->server, s->cq, &shutdown_tag);
    grpc_server_cancel_all_calls(s->server);
    pthread_join(s->thread, NULL);
    grpc_server_destroy(s->server);
    grpc_completion_queue_destroy(s->cq);
    destroy(s);
}

int momento_local_port(const momento_local *s)
{
    return s ? s->port : -1;
}

const char *momento_local_endpoint(const momento_local *s)
{
    return s ? s->endpoint : "";
}

static int method_index(const char *name)
{
    for (int m = 0; m < SRV_METHOD_COUNT; m++)
        if (strcmp(srv_methods[m].name, name) == 0)
            return m;
    return -1;
}

uint64_t momento_local_rpc_count(const momento_local *s, const char *method, int grpc_status)
{
    if (!s || grpc_status < -1 || grpc_status >= GRPC_STATUS_COUNT)
        return 0;
    momento_local *ms = (momento_local *)s; /* counters are atomics, read-only here */
    int only = method ? method_index(method) : -1;
    if (method && only < 0)
        return 0;
    uint64_t total = 0;
    for (int m = 0; m < SRV_METHOD_COUNT; m++) {
        if (only >= 0 && m != only)
            continue;
        for (int st = 0; st < GRPC_STATUS_COUNT; st++)
            if (grpc_status < 0 || st == grpc_status)
                total += atomic_load_explicit(&ms->stats[m][st], memory_order_relaxed);
    }
    return total;
}

double momento_local_cpu_seconds(const momento_local *s)
{
    clockid_t cid;
    struct timespec ts;
    if (!s || pthread_getcpuclockid(s->thread, &cid) != 0 || clock_gettime(cid, &ts) != 0)
        return 0;
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void momento_local_reset_stats(momento_local *s)
{
    if (!s)
        return;
    for (int m = 0; m < SRV_METHOD_COUNT; m++)
        for (int st = 0; st < GRPC_STATUS_COUNT; st++)
            atomic_store(&s->stats[m][st], 0);
    for (int h = 0; h < 4; h++)
        atomic_store(&s->header_counts[h], 0);
}

char *momento_local_stats_json(const momento_local *s)
{
    if (!s)
        return NULL;
    size_t cap = 8192, len = 0;
    char *out = malloc(cap);
    if (!out)
        return NULL;
    len += (size_t)snprintf(out + len, cap - len, "{\"total\": %llu, \"methods\": {",
                            (unsigned long long)momento_local_rpc_count(s, NULL, -1));
    bool first = true;
    for (int m = 0; m < SRV_METHOD_COUNT; m++) {
        uint64_t total = momento_local_rpc_count(s, srv_methods[m].name, -1);
        if (!total)
            continue;
        len += (size_t)snprintf(out + len, cap - len, "%s\"%s\": {\"total\": %llu", first ? "" : ", ",
                                srv_methods[m].name, (unsigned long long)total);
        first = false;
        for (int st = 0; st < GRPC_STATUS_COUNT; st++) {
            uint64_t n = momento_local_rpc_count(s, srv_methods[m].name, st);
            if (n)
                len += (size_t)snprintf(out + len, cap - len, ", \"%s\": %llu", status_names[st],
                                        (unsigned long long)n);
        }
        len += (size_t)snprintf(out + len, cap - len, "}");
    }
    snprintf(out + len, cap - len, "}}");
    return out;
}
