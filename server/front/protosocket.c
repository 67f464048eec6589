/* The protosocket port (srv_protosocket.h; PROTOSOCKET.md): one thread, one
 * epoll loop, non-blocking sockets (plaintext, or TLS through OpenSSL with
 * the gRPC port's certificate), frames read and written many at a time
 * with common/ps_wire.
 *
 * A command is answered by the gRPC side's own dispatcher: Get, Set and
 * Delete are re-encoded as the gRPC requests they stand for and handed to
 * s->dispatch as a call's work with the server's turn held, so the store,
 * the checks, the errors (status and message), the limits and the counters
 * are the gRPC port's, and a long request's pins hold a command back as
 * they hold a call (it is tried again every RETRY_MS). The turn is taken
 * once for all the commands one wake-up reads, and given away between them
 * after a slice when another thread waits for it.
 *
 * Injected delays (momento_local_protosocket_fault()) hold a command on
 * this thread's timer heap, so a delayed command holds nothing else up;
 * answers go out in the order they are ready, which protosocket allows
 * (the client correlates by message id). A cancel frame drops a held
 * command unanswered; a connection that closes drops its held commands.
 *
 * Memory per connection is bounded: a connection whose unsent output
 * passes OUT_CAP, or that holds MAX_HELD commands or HELD_BYTES_CAP of
 * their bytes, is not read until that drains; a frame over PS_MAX_FRAME,
 * a bad varint or a body that does not decode closes it. */
#include "front/srv_protosocket.h"

#include "clock.h"
#include "core/srv_listen.h"
#include "core/srv_server.h"
#include "core/srv_tokens.h"
#include "core/srv_turns.h"
#include "data/srv_list.h"
#include "front/srv_calls.h"
#include "heap.h"
#include "ps_wire.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

/* Unsent output past which a connection is not read until it drains. */
#define OUT_CAP (8u << 20)
/* Commands one connection may have held (delayed, or behind pins), and
 * their bytes, before it is not read until one is answered. */
#define MAX_HELD 4096u
#define HELD_BYTES_CAP (8u << 20)
/* One read's size, and what one connection may read per wake-up before
 * the others have their turn. */
#define READ_CHUNK (64u * 1024u)
#define READ_BUDGET (1u << 20)
/* A buffer this big is given back once empty. */
#define KEEP_BYTES (256u * 1024u)
#define MAX_EVENTS 64
/* How often commands held behind a long request's pins are tried again:
 * the gRPC side's release does not reach this thread. */
#define RETRY_MS 1
/* The loop's longest sleep (the stop wakes it at once). */
#define MAX_WAIT_MS 1000
#define BLOCKED "the data port is blocked (test admin)"

typedef struct srv_protosocket srv_protosocket;
typedef struct ps_conn ps_conn;

/* A command held by an injected delay (on the timer heap) or behind a
 * long request's pins (on the `deferred` list), keeping its frame's body,
 * which is decoded again when it is answered. */
typedef struct ps_held {
    ps_conn *conn;
    struct ps_held *prev, *next;   /* the connection's held commands */
    struct ps_held *dprev, *dnext; /* the deferred list, while `deferred` */
    momento__rpc_id method;
    uint64_t id;
    int error;                     /* injected status after the delay, or -1 */
    int64_t due_ms;                /* store_now_ms()'s clock */
    uint64_t seq;                  /* arrival: breaks ties in due_ms */
    size_t heap_index;
    bool deferred;
    size_t len;
    uint8_t body[];
} ps_held;

typedef struct ps_buf {
    uint8_t *data;
    size_t off, len, cap; /* bytes [off, len) are pending */
} ps_buf;

struct ps_conn {
    srv_protosocket *ps;
    int fd;
    SSL *ssl;                 /* NULL: plaintext */
    ps_conn *prev, *next;     /* every connection */
    ps_conn *rnext;           /* the ready list, while `ready` */
    ps_buf in, out;
    char *token;              /* the accepted token, for a disposable one's scope */
    size_t token_len;
    ps_held *held;
    size_t n_held, held_bytes;
    uint32_t events;          /* the epoll interest registered */
    bool authenticated;
    bool disposable;          /* its token is a disposable token of this server's */
    bool closing;             /* refused: closed once its output is out */
    bool dead;                /* to be freed (reap()) */
    bool peer_closed;         /* ... because its client closed or reset it */
    bool ready;               /* on the ready list: serviced without waiting for epoll */
    bool want_write;          /* the socket (or TLS) waits to be writable */
    bool write_wants_read;    /* TLS: a write waits for the socket to be readable */
};

/* momento_local_protosocket_fault()'s rule, set from any thread. */
typedef struct ps_fault_rule {
    pthread_mutex_t mu;
    bool rpcs[MOMENTO__RPC_COUNT];
    int status;
    uint32_t delay_ms;
    uint32_t left;
} ps_fault_rule;

struct srv_protosocket {
    momento_local *s;
    int listen_fd, epfd, wake_fd;
    int port;
    SSL_CTX *ctx;             /* NULL: plaintext */
    pthread_t thread;
    bool running;
    atomic_bool stop;
    ps_conn *conns;
    ps_conn *ready;
    size_t n_dead;
    momento__heap timers;     /* delayed commands: due time, then arrival */
    uint64_t seq;
    ps_held *deferred_head, *deferred_tail;
    bool turn;                /* this thread holds the server's turn */
    int64_t turn_since_ns;
    uint8_t *scratch;         /* the gRPC request a command stands for */
    size_t scratch_cap;
    ps_fault_rule fault;
};

/* ---- the server's turn ---------------------------------------------- */

static void turn_take(srv_protosocket *ps)
{
    if (ps->turn)
        return;
    srv_turn_take(&ps->s->turns);
    ps->turn = true;
    ps->turn_since_ns = momento__mono_ns();
}

static void turn_give(srv_protosocket *ps)
{
    if (!ps->turn)
        return;
    srv_turn_give(&ps->s->turns);
    ps->turn = false;
}

/* Between commands: a batch keeps the turn no longer than a slice while
 * another thread waits for it, as a long request does. */
static void turn_check(srv_protosocket *ps)
{
    if (ps->turn && momento__mono_ns() - ps->turn_since_ns >= SRV_SLICE_NS &&
        srv_turn_wanted(&ps->s->turns)) {
        turn_give(ps);
        turn_take(ps);
    }
}

/* ---- buffers -------------------------------------------------------- */

static size_t pending(const ps_buf *b)
{
    return b->len - b->off;
}

/* Room for `n` more bytes at the end; false when out of memory. */
static bool buf_room(ps_buf *b, size_t n)
{
    if (b->cap - b->len >= n)
        return true;
    if (b->off) {
        memmove(b->data, b->data + b->off, pending(b));
        b->len -= b->off;
        b->off = 0;
        if (b->cap - b->len >= n)
            return true;
    }
    size_t cap = b->cap ? b->cap : 4096;
    while (cap - b->len < n)
        cap *= 2;
    uint8_t *d = realloc(b->data, cap);
    if (!d)
        return false;
    b->data = d;
    b->cap = cap;
    return true;
}

/* An empty buffer starts over, and gives a big allocation back. */
static void buf_trim(ps_buf *b)
{
    if (b->off != b->len)
        return;
    b->off = b->len = 0;
    if (b->cap > KEEP_BYTES) {
        free(b->data);
        b->data = NULL;
        b->cap = 0;
    }
}

/* ---- connections' states -------------------------------------------- */

static void conn_kill(ps_conn *c, bool by_peer)
{
    if (c->dead)
        return;
    c->dead = true;
    c->peer_closed = by_peer;
    c->ps->n_dead++;
}

/* Whether the connection may take more commands (and be read). */
static bool may_take(const ps_conn *c)
{
    return !c->dead && !c->closing && pending(&c->out) < OUT_CAP && c->n_held < MAX_HELD &&
           c->held_bytes < HELD_BYTES_CAP;
}

/* Serviced on this loop's turn without waiting for epoll: its held
 * commands were answered, or TLS holds bytes the socket no longer shows. */
static void mark_ready(ps_conn *c)
{
    if (c->ready || c->dead)
        return;
    c->ready = true;
    c->rnext = c->ps->ready;
    c->ps->ready = c;
}

/* ---- answers -------------------------------------------------------- */

static void send_response(ps_conn *c, const ps_response *r)
{
    if (c->dead)
        return;
    size_t n = ps_response_frame_size(r);
    if (!buf_room(&c->out, n)) {
        conn_kill(c, false);
        return;
    }
    c->out.len += ps_response_encode(r, c->out.data + c->out.len);
}

static void send_error(ps_conn *c, uint64_t id, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void send_error(ps_conn *c, uint64_t id, int code, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    ps_response r = {.id = id, .kind = PS_ERROR, .code = (uint32_t)code};
    r.message = (ps_bytes){(const uint8_t *)msg, (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1};
    send_response(c, &r);
}

static void count(srv_protosocket *ps, momento__rpc_id m, int status)
{
    srv_stats_count(ps->s, SRV_VIA_PROTOSOCKET, m, (grpc_status_code)status);
}

/* A command answered with an error, counted under its status. */
static void answer_error(ps_conn *c, momento__rpc_id m, uint64_t id, int status, const char *msg)
{
    count(c->ps, m, status);
    send_error(c, id, status, "%s", msg);
}

/* The value of the _GetResponse in `r` (srv_pack_get_response()'s
 * format, read as protobuf: field 1 the result, field 2 the body): 1 for a
 * hit, 0 for a miss, -1 when it does not read. */
static int read_get_response(const srv_reply *r, ps_bytes *value)
{
    if (r->n_msgs != 1)
        return -1;
    const uint8_t *p = GRPC_SLICE_START_PTR(r->msgs[0]);
    const uint8_t *end = p + GRPC_SLICE_LENGTH(r->msgs[0]);
    uint64_t result = 0;
    *value = (ps_bytes){NULL, 0};
    while (p < end) {
        uint8_t tag = *p++;
        uint64_t v = 0;
        for (int shift = 0; p < end && shift < 64; shift += 7) {
            uint8_t b = *p++;
            v |= (uint64_t)(b & 0x7f) << shift;
            if (!(b & 0x80))
                break;
        }
        if (tag == 0x08) {
            result = v;
        } else if (tag == 0x12 && v <= (uint64_t)(end - p)) {
            *value = (ps_bytes){p, (size_t)v};
            p += v;
        } else {
            return -1;
        }
    }
    return result == 2 ? 1 : result == 3 ? 0 : -1; /* ECacheResult Hit, Miss */
}

/* The dispatcher's reply as the command's response, counted under the
 * reply's status. A miss is protosocket's NOT_FOUND "Key not found"
 * (PROTOSOCKET.md "Results"), counted OK as the gRPC Get's miss is. */
static void answer_reply(ps_conn *c, momento__rpc_id m, uint64_t id, const srv_reply *r)
{
    if (r->status != GRPC_STATUS_OK) {
        answer_error(c, m, id, r->status, r->details);
        return;
    }
    ps_response resp = {.id = id};
    resp.kind = m == MOMENTO__RPC_GET ? PS_GET : m == MOMENTO__RPC_SET ? PS_SET : PS_DELETE;
    if (m == MOMENTO__RPC_GET) {
        int hit = read_get_response(r, &resp.value);
        if (hit < 0) {
            answer_error(c, m, id, GRPC_STATUS_INTERNAL, "the reply could not be read");
            return;
        }
        if (!hit) {
            count(c->ps, m, GRPC_STATUS_OK);
            send_error(c, id, GRPC_STATUS_NOT_FOUND, "Key not found");
            return;
        }
        /* An item within the item limit (5 MiB) may not fit the frame the
         * client takes (4 MiB): refused rather than sent for the client to
         * drop its connection over. */
        size_t frame = ps_response_frame_size(&resp);
        if (frame > PS_MAX_FRAME) {
            count(c->ps, m, GRPC_STATUS_RESOURCE_EXHAUSTED);
            send_error(c, id, GRPC_STATUS_RESOURCE_EXHAUSTED,
                       "the item is %zu bytes, more than a protosocket frame of %u bytes carries",
                       resp.value.len, PS_MAX_FRAME);
            return;
        }
    }
    count(c->ps, m, GRPC_STATUS_OK);
    send_response(c, &resp);
}

/* ---- commands through the dispatcher -------------------------------- */

static size_t put_bytes(uint8_t *p, uint8_t tag, ps_bytes b)
{
    if (b.len == 0) /* proto3 leaves an empty field out */
        return 0;
    size_t n = 0;
    p[n++] = tag;
    n += ps_varint_put(p + n, b.len);
    memcpy(p + n, b.data, b.len);
    return n + b.len;
}

/* The _GetRequest, _SetRequest or _DeleteRequest the command stands for
 * (cache_key = 1, cache_body = 2, ttl_milliseconds = 3), in the scratch
 * buffer; NULL when out of memory. */
static const uint8_t *grpc_request(srv_protosocket *ps, momento__rpc_id m, const ps_command *cmd,
                                   size_t *len)
{
    size_t need = cmd->key.len + cmd->value.len + 32;
    if (need > ps->scratch_cap) {
        free(ps->scratch);
        ps->scratch = malloc(need);
        ps->scratch_cap = ps->scratch ? need : 0;
        if (!ps->scratch)
            return NULL;
    }
    uint8_t *p = ps->scratch;
    size_t n = put_bytes(p, 0x0a, cmd->key);
    if (m == MOMENTO__RPC_SET) {
        n += put_bytes(p + n, 0x12, cmd->value);
        if (cmd->ttl_ms) {
            p[n++] = 0x18;
            n += ps_varint_put(p + n, cmd->ttl_ms);
        }
    }
    *len = n;
    return p;
}

static void scratch_trim(srv_protosocket *ps)
{
    if (ps->scratch_cap > KEEP_BYTES) {
        free(ps->scratch);
        ps->scratch = NULL;
        ps->scratch_cap = 0;
    }
}

static grpc_slice bytes_slice(const void *p, size_t n)
{
    return grpc_slice_from_static_buffer(p, n);
}

/* Whether a disposable token's scope allows the command (tokens.c, as for
 * a call with the same cache header and body); else false with `r` set. */
static bool token_permits(ps_conn *c, momento__rpc_id m, const ps_command *cmd,
                          const uint8_t *body, size_t len, srv_reply *r)
{
    if (!c->disposable)
        return true;
    grpc_slice auth = bytes_slice(c->token, c->token_len);
    grpc_slice cache = bytes_slice(cmd->ns.data, cmd->ns.len);
    return srv_token_permits(c->ps->s, m, &auth, &cache, bytes_slice(body, len), r);
}

/* Runs the command as a call's work and answers it; false when a long
 * request holds its key or cache (srv_turns.h): then nothing is answered
 * and the caller holds it back. With the turn. */
static bool run(ps_conn *c, momento__rpc_id m, const ps_command *cmd)
{
    srv_protosocket *ps = c->ps;
    momento_local *s = ps->s;
    size_t len;
    const uint8_t *body = grpc_request(ps, m, cmd, &len);
    if (!body) {
        answer_error(c, m, cmd->id, GRPC_STATUS_RESOURCE_EXHAUSTED, "server out of memory");
        return true;
    }
    srv_reply r;
    memset(&r, 0, sizeof(r));
    srv_work w;
    srv_work_begin(&w, &s->turns, &s->store);
    if (token_permits(c, m, cmd, body, len, &r))
        s->dispatch(s, m, (const char *)cmd->ns.data, cmd->ns.len, body, len, &r);
    if (srv_work_end(&w)) {
        /* Its pins may have held gRPC calls back. */
        s->turns.releases++;
        srv_calls_redo(s);
    }
    bool done = !r.deferred;
    if (done)
        answer_reply(c, m, cmd->id, &r);
    srv_reply_clear(&r);
    scratch_trim(ps);
    return done;
}

/* ---- held commands -------------------------------------------------- */

static bool due_before(const void *a, const void *b)
{
    const ps_held *x = a, *y = b;
    return x->due_ms < y->due_ms || (x->due_ms == y->due_ms && x->seq < y->seq);
}

static void heap_moved(void *item, size_t index)
{
    ((ps_held *)item)->heap_index = index;
}

static ps_held *held_new(ps_conn *c, momento__rpc_id m, uint64_t id, int error,
                         const uint8_t *body, size_t len)
{
    ps_held *h = malloc(sizeof(*h) + len);
    if (!h)
        return NULL;
    memset(h, 0, sizeof(*h));
    h->conn = c;
    h->method = m;
    h->id = id;
    h->error = error;
    h->heap_index = MOMENTO__HEAP_GONE;
    h->len = len;
    if (len)
        memcpy(h->body, body, len);
    SRV_LIST_PUSH(c->held, h, prev, next);
    c->n_held++;
    c->held_bytes += len;
    return h;
}

static void deferred_remove(srv_protosocket *ps, ps_held *h)
{
    if (!h->deferred)
        return;
    SRV_QUEUE_REMOVE(ps->deferred_head, ps->deferred_tail, h, dprev, dnext);
    h->deferred = false;
    atomic_fetch_sub_explicit(&ps->s->waiting_calls, 1, memory_order_relaxed);
}

/* Behind a long request's pins, in arrival order, until tried again. */
static void defer(ps_held *h)
{
    srv_protosocket *ps = h->conn->ps;
    h->deferred = true;
    SRV_QUEUE_APPEND(ps->deferred_head, ps->deferred_tail, h, dprev, dnext);
    atomic_fetch_add_explicit(&ps->s->waiting_calls, 1, memory_order_relaxed);
}

static void timer_remove(srv_protosocket *ps, ps_held *h)
{
    if (h->heap_index == MOMENTO__HEAP_GONE)
        return;
    momento__heap_remove(&ps->timers, h->heap_index);
    atomic_fetch_sub_explicit(&ps->s->parked, 1, memory_order_relaxed);
}

static void held_free(ps_held *h)
{
    ps_conn *c = h->conn;
    timer_remove(c->ps, h);
    deferred_remove(c->ps, h);
    SRV_LIST_REMOVE(c->held, h, prev, next);
    c->n_held--;
    c->held_bytes -= h->len;
    free(h);
}

/* A held command its client gave up: no answer; counted CANCELLED, and as
 * cancelled by its client when it was (a cancel frame, or the connection
 * closed by its side), as a parked gRPC call is. */
static void held_drop(ps_held *h, bool by_client)
{
    srv_protosocket *ps = h->conn->ps;
    count(ps, h->method, GRPC_STATUS_CANCELLED);
    if (by_client)
        srv_stats_count_client_cancel(ps->s, h->method);
    held_free(h);
}

/* Held until `delay_ms` from now on the timer heap. */
static void hold(ps_conn *c, momento__rpc_id m, const ps_command *cmd, int error,
                 uint32_t delay_ms, const uint8_t *body, size_t len)
{
    srv_protosocket *ps = c->ps;
    ps_held *h = held_new(c, m, cmd->id, error, body, len);
    if (h) {
        h->due_ms = store_now_ms() + delay_ms;
        h->seq = ps->seq++;
        if (momento__heap_push(&ps->timers, h) == 0) {
            atomic_fetch_add_explicit(&ps->s->parked, 1, memory_order_relaxed);
            return;
        }
        held_free(h);
    }
    answer_error(c, m, cmd->id, GRPC_STATUS_RESOURCE_EXHAUSTED, "server out of memory");
}

/* A held command's delay is over, or it is tried again behind pins: its
 * injected error, or its run. With the turn. */
static void answer_held(ps_held *h)
{
    ps_conn *c = h->conn;
    if (c->dead) {
        held_drop(h, c->peer_closed);
        return;
    }
    mark_ready(c); /* its answer goes out, and it may take commands again */
    if (h->error >= 0) {
        answer_error(c, h->method, h->id, h->error,
                     "injected error (momento_local_protosocket_fault)");
        held_free(h);
        return;
    }
    if (atomic_load_explicit(&c->ps->s->blocked, memory_order_relaxed)) {
        answer_error(c, h->method, h->id, GRPC_STATUS_UNAVAILABLE, BLOCKED);
        held_free(h);
        return;
    }
    ps_command cmd;
    if (ps_command_decode(h->body, h->len, &cmd) < 0) { /* it decoded once: cannot happen */
        answer_error(c, h->method, h->id, GRPC_STATUS_INTERNAL, "held command lost");
        held_free(h);
        return;
    }
    if (run(c, h->method, &cmd))
        held_free(h);
    else if (!h->deferred)
        defer(h);
}

static void run_due(srv_protosocket *ps)
{
    int64_t now = store_now_ms();
    ps_held *h;
    while ((h = momento__heap_peek(&ps->timers)) && h->due_ms <= now) {
        timer_remove(ps, h);
        turn_take(ps);
        answer_held(h);
        turn_check(ps);
    }
}

/* The commands behind pins, tried again in arrival order; those still
 * held back go back on the list in the same order. */
static void retry_deferred(srv_protosocket *ps)
{
    ps_held *h = ps->deferred_head;
    if (!h)
        return;
    turn_take(ps);
    ps_held *tail = ps->deferred_tail;
    for (bool last = false; h && !last;) {
        ps_held *next = h->dnext;
        last = h == tail;
        deferred_remove(ps, h);
        answer_held(h);
        turn_check(ps);
        h = next;
    }
}

static void cancel(ps_conn *c, uint64_t id)
{
    for (ps_held *h = c->held; h; h = h->next)
        if (h->id == id) {
            held_drop(h, true);
            return;
        }
    /* Answered already, or never held: nothing to drop. */
}

/* ---- the fault rule ------------------------------------------------- */

/* Takes one command of `m` from the rule: true, with its error (or -1) and
 * delay, when the rule applies to it. */
static bool fault_take(srv_protosocket *ps, momento__rpc_id m, int *error, uint32_t *delay_ms)
{
    ps_fault_rule *f = &ps->fault;
    pthread_mutex_lock(&f->mu);
    bool hit = f->left > 0 && f->rpcs[m];
    if (hit) {
        f->left--;
        *error = f->status;
        *delay_ms = f->delay_ms;
    }
    pthread_mutex_unlock(&f->mu);
    return hit;
}

/* The RPCs the space-separated names `list` name ("" = all); -1 for a
 * name that is no RPC's fault name or alias. */
static int parse_rpcs(const char *list, bool *on)
{
    bool any = false;
    for (const char *p = list; *p;) {
        while (*p == ' ')
            p++;
        const char *w = p;
        while (*p && *p != ' ')
            p++;
        size_t n = (size_t)(p - w);
        if (n == 0)
            break;
        bool known = false;
        for (int m = 0; m < MOMENTO__RPC_COUNT; m++) {
            const char *a = momento__rpcs[m].fault_alias;
            if ((strlen(momento__rpcs[m].fault_name) == n &&
                 memcmp(momento__rpcs[m].fault_name, w, n) == 0) ||
                (a && strlen(a) == n && memcmp(a, w, n) == 0)) {
                on[m] = known = true;
            }
        }
        if (!known)
            return -1;
        any = true;
    }
    if (!any)
        for (int m = 0; m < MOMENTO__RPC_COUNT; m++)
            on[m] = true;
    return 0;
}

int momento_local_protosocket_fault(momento_local *s, const char *rpcs, int grpc_status,
                                    uint32_t delay_ms, uint32_t count)
{
    bool on[MOMENTO__RPC_COUNT] = {false};
    if (!s || grpc_status < -1 || grpc_status >= SRV_STATUS_COUNT ||
        (rpcs && parse_rpcs(rpcs, on) < 0))
        return MOMENTO_ERR_INVALID_ARGUMENT;
    srv_protosocket *ps = s->protosocket;
    if (!ps)
        return MOMENTO_OK;
    ps_fault_rule *f = &ps->fault;
    pthread_mutex_lock(&f->mu);
    memcpy(f->rpcs, on, sizeof(on));
    f->status = grpc_status;
    f->delay_ms = delay_ms;
    f->left = rpcs ? count : 0;
    pthread_mutex_unlock(&f->mu);
    return MOMENTO_OK;
}

/* ---- commands ------------------------------------------------------- */

/* The first command must authenticate; one that does not, or a token
 * refused, is answered UNAUTHENTICATED and the connection closes once
 * that is sent. */
static void refuse(ps_conn *c, uint64_t id, const char *why)
{
    send_error(c, id, GRPC_STATUS_UNAUTHENTICATED, "%s", why);
    c->authenticated = false;
    c->closing = true;
}

static bool token_is(const char *want, ps_bytes got)
{
    return strlen(want) == got.len && memcmp(want, got.data, got.len) == 0;
}

/* The gRPC port's rule: on a server with a token, that token or a
 * disposable one of this server's; on one without, any token but a
 * disposable one that is forged, altered or expired. */
static void authenticate(ps_conn *c, const ps_command *cmd)
{
    srv_protosocket *ps = c->ps;
    momento_local *s = ps->s;
    turn_take(ps); /* tokens.c's signing key is the server's state */
    srv_reply r;
    memset(&r, 0, sizeof(r));
    int disposable = 0;
    if (cmd->token.len) {
        grpc_slice auth = bytes_slice(cmd->token.data, cmd->token.len);
        disposable = srv_token_authenticate(s, &auth, &r, NULL);
    }
    if (disposable < 0)
        refuse(c, cmd->id, r.details);
    else if (s->opts.auth_token && !disposable && !token_is(s->opts.auth_token, cmd->token))
        refuse(c, cmd->id, "invalid auth token");
    srv_reply_clear(&r);
    if (c->closing)
        return;
    char *copy = malloc(cmd->token.len + 1);
    if (!copy) {
        refuse(c, cmd->id, "server out of memory");
        return;
    }
    if (cmd->token.len) /* an empty token decodes with no data pointer */
        memcpy(copy, cmd->token.data, cmd->token.len);
    copy[cmd->token.len] = '\0';
    free(c->token);
    c->token = copy;
    c->token_len = cmd->token.len;
    c->authenticated = true;
    c->disposable = disposable > 0;
    ps_response ok = {.id = cmd->id, .kind = PS_AUTH};
    send_response(c, &ok);
}

/* A Get, Set or Delete arriving: the gRPC call's checks in their order
 * (blocked, rate, scope, faults), then held or run. */
static void arrive(ps_conn *c, momento__rpc_id m, const ps_command *cmd, const uint8_t *frame,
                   size_t frame_len)
{
    srv_protosocket *ps = c->ps;
    momento_local *s = ps->s;
    turn_take(ps);
    if (atomic_load_explicit(&s->blocked, memory_order_relaxed)) {
        answer_error(c, m, cmd->id, GRPC_STATUS_UNAVAILABLE, BLOCKED);
        return;
    }
    if (srv_calls_rate_limited(s)) {
        char msg[128];
        snprintf(msg, sizeof(msg),
                 "operations rate limit exceeded: more than %u operations per second",
                 s->opts.max_rps);
        answer_error(c, m, cmd->id, GRPC_STATUS_RESOURCE_EXHAUSTED, msg);
        return;
    }
    int error = -1;
    uint32_t delay_ms = 0;
    bool faulty = fault_take(ps, m, &error, &delay_ms);
    if (faulty && delay_ms > 0) {
        /* A command outside its token's scope is refused at once, never
         * after its delay (checked again when the delay is over). */
        if (c->disposable) {
            size_t len;
            const uint8_t *body = grpc_request(ps, m, cmd, &len);
            srv_reply r;
            memset(&r, 0, sizeof(r));
            bool ok = !body || token_permits(c, m, cmd, body, len, &r);
            if (!ok)
                answer_error(c, m, cmd->id, r.status, r.details);
            srv_reply_clear(&r);
            if (!ok)
                return;
        }
        hold(c, m, cmd, error, delay_ms, frame, frame_len);
        return;
    }
    if (faulty && error >= 0) {
        answer_error(c, m, cmd->id, error, "injected error (momento_local_protosocket_fault)");
        return;
    }
    if (!run(c, m, cmd)) {
        ps_held *h = held_new(c, m, cmd->id, -1, frame, frame_len);
        if (h)
            defer(h);
        else
            answer_error(c, m, cmd->id, GRPC_STATUS_RESOURCE_EXHAUSTED, "server out of memory");
    }
}

static bool rpc_of(ps_kind kind, momento__rpc_id *m)
{
    switch (kind) {
    case PS_GET: *m = MOMENTO__RPC_GET; return true;
    case PS_SET: *m = MOMENTO__RPC_SET; return true;
    case PS_DELETE: *m = MOMENTO__RPC_DELETE; return true;
    default: return false;
    }
}

static void on_frame(ps_conn *c, const uint8_t *body, size_t len)
{
    ps_command cmd;
    if (ps_command_decode(body, len, &cmd) < 0) {
        conn_kill(c, false);
        return;
    }
    if (cmd.control == PS_CONTROL_CANCEL) {
        cancel(c, cmd.id);
        return;
    }
    if (cmd.control != PS_CONTROL_NORMAL) /* END: only streams have it, and none is ours */
        return;
    if (cmd.kind == PS_AUTH) {
        authenticate(c, &cmd);
        return;
    }
    if (!c->authenticated) {
        refuse(c, cmd.id, "the first command must be Authenticate");
        return;
    }
    momento__rpc_id m;
    if (!rpc_of(cmd.kind, &m)) {
        /* As the gRPC port answers a path outside the table. */
        count(c->ps, SRV_UNKNOWN, GRPC_STATUS_UNIMPLEMENTED);
        send_error(c, cmd.id, GRPC_STATUS_UNIMPLEMENTED, "unknown command");
        return;
    }
    arrive(c, m, &cmd, body, len);
}

/* The complete frames read so far, while the connection may take them. */
static void take_frames(ps_conn *c)
{
    while (may_take(c)) {
        size_t off, len;
        int rc = ps_frame_next(c->in.data + c->in.off, pending(&c->in), PS_MAX_FRAME, &off, &len);
        if (rc < 0)
            conn_kill(c, false);
        if (rc <= 0)
            break;
        const uint8_t *body = c->in.data + c->in.off + off;
        c->in.off += off + len; /* the body stays where it is until the next read */
        on_frame(c, body, len);
        turn_check(c->ps);
    }
    buf_trim(&c->in);
}

/* ---- the socket ----------------------------------------------------- */

/* Reads up to `n` bytes: how many, 0 when there are none now, -1 when the
 * connection is over (killed). */
static ssize_t conn_read(ps_conn *c, size_t n)
{
    if (!buf_room(&c->in, n)) {
        conn_kill(c, false);
        return -1;
    }
    uint8_t *p = c->in.data + c->in.len;
    if (c->ssl) {
        ERR_clear_error();
        int k = SSL_read(c->ssl, p, (int)n);
        if (k > 0) {
            c->in.len += (size_t)k;
            return k;
        }
        int e = SSL_get_error(c->ssl, k);
        if (e == SSL_ERROR_WANT_READ)
            return 0;
        if (e == SSL_ERROR_WANT_WRITE) {
            c->want_write = true;
            return 0;
        }
        conn_kill(c, e == SSL_ERROR_ZERO_RETURN || e == SSL_ERROR_SYSCALL);
        return -1;
    }
    for (;;) {
        ssize_t k = recv(c->fd, p, n, 0);
        if (k > 0) {
            c->in.len += (size_t)k;
            return k;
        }
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 0;
        conn_kill(c, k == 0 || errno == ECONNRESET);
        return -1;
    }
}

/* Sends what it can of the output without waiting. */
static void flush(ps_conn *c)
{
    c->want_write = c->write_wants_read = false;
    while (!c->dead && pending(&c->out) > 0) {
        const uint8_t *p = c->out.data + c->out.off;
        size_t n = pending(&c->out);
        if (c->ssl) {
            ERR_clear_error();
            int k = SSL_write(c->ssl, p, (int)(n > (1u << 20) ? (1u << 20) : n));
            if (k > 0) {
                c->out.off += (size_t)k;
                continue;
            }
            int e = SSL_get_error(c->ssl, k);
            if (e == SSL_ERROR_WANT_WRITE)
                c->want_write = true;
            else if (e == SSL_ERROR_WANT_READ)
                c->write_wants_read = true;
            else
                conn_kill(c, e == SSL_ERROR_SYSCALL);
            break;
        }
        ssize_t k = send(c->fd, p, n, MSG_NOSIGNAL);
        if (k > 0) {
            c->out.off += (size_t)k;
        } else if (k < 0 && errno == EINTR) {
            continue;
        } else if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            c->want_write = true;
            break;
        } else {
            conn_kill(c, true);
        }
    }
    buf_trim(&c->out);
}

static void update_events(ps_conn *c)
{
    if (c->dead)
        return;
    uint32_t want = 0;
    if (may_take(c) || c->write_wants_read)
        want |= EPOLLIN;
    if (c->want_write || pending(&c->out) > 0)
        want |= EPOLLOUT;
    if (want == c->events)
        return;
    struct epoll_event ev = {.events = want, .data.ptr = c};
    if (epoll_ctl(c->ps->epfd, EPOLL_CTL_MOD, c->fd, &ev) == 0)
        c->events = want;
    else
        conn_kill(c, false);
}

/* Everything a connection can do now: send, read and answer (bounded
 * per wake-up, READ_BUDGET), send again. */
static void service(ps_conn *c, uint32_t events)
{
    c->ready = false;
    if (c->dead)
        return;
    if (events & EPOLLERR) {
        conn_kill(c, true);
        return;
    }
    flush(c);
    size_t budget = READ_BUDGET;
    while (!c->dead) {
        take_frames(c);
        if (!may_take(c))
            break;
        if (budget == 0) {
            mark_ready(c);
            break;
        }
        ssize_t n = conn_read(c, READ_CHUNK);
        if (n <= 0)
            break;
        budget = (size_t)n < budget ? budget - (size_t)n : 0;
    }
    /* TLS may hold decrypted bytes the socket no longer signals. */
    if (!c->dead && c->ssl && SSL_pending(c->ssl) > 0 && may_take(c))
        mark_ready(c);
    flush(c);
    if (!c->dead && c->closing && pending(&c->out) == 0)
        conn_kill(c, false);
    update_events(c);
}

static void conn_free(ps_conn *c)
{
    srv_protosocket *ps = c->ps;
    while (c->held)
        held_drop(c->held, c->peer_closed);
    epoll_ctl(ps->epfd, EPOLL_CTL_DEL, c->fd, NULL);
    if (c->ssl)
        SSL_free(c->ssl);
    close(c->fd);
    SRV_LIST_REMOVE(ps->conns, c, prev, next);
    free(c->in.data);
    free(c->out.data);
    free(c->token);
    free(c);
}

/* Frees the connections that died, but for those still on the ready list
 * (they go once serviced). */
static void reap(srv_protosocket *ps)
{
    if (ps->n_dead == 0)
        return;
    for (ps_conn *c = ps->conns, *next; c; c = next) {
        next = c->next;
        if (c->dead && !c->ready) {
            conn_free(c);
            ps->n_dead--;
        }
    }
}

static void conn_new(srv_protosocket *ps, int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    ps_conn *c = calloc(1, sizeof(*c));
    if (!c) {
        close(fd);
        return;
    }
    c->ps = ps;
    c->fd = fd;
    if (ps->ctx) {
        c->ssl = SSL_new(ps->ctx);
        if (!c->ssl || SSL_set_fd(c->ssl, fd) != 1) {
            if (c->ssl)
                SSL_free(c->ssl);
            free(c);
            close(fd);
            return;
        }
        SSL_set_accept_state(c->ssl);
    }
    c->events = EPOLLIN;
    struct epoll_event ev = {.events = c->events, .data.ptr = c};
    if (epoll_ctl(ps->epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
        if (c->ssl)
            SSL_free(c->ssl);
        free(c);
        close(fd);
        return;
    }
    SRV_LIST_PUSH(ps->conns, c, prev, next);
}

static void accept_all(srv_protosocket *ps)
{
    for (;;) {
        int fd = accept4(ps->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0)
            conn_new(ps, fd);
        else if (errno != EINTR && errno != ECONNABORTED)
            return;
    }
}

/* ---- the loop ------------------------------------------------------- */

static void run_ready(srv_protosocket *ps)
{
    ps_conn *c = ps->ready;
    ps->ready = NULL;
    while (c) {
        ps_conn *next = c->rnext;
        service(c, 0);
        c = next;
    }
}

static int next_wait(const srv_protosocket *ps)
{
    if (ps->ready)
        return 0;
    int64_t wait = MAX_WAIT_MS;
    if (ps->deferred_head)
        wait = RETRY_MS;
    const ps_held *h = momento__heap_peek(&ps->timers);
    if (h) {
        int64_t left = h->due_ms - store_now_ms();
        if (left < wait)
            wait = left < 0 ? 0 : left;
    }
    return (int)wait;
}

/* The stop: held commands are answered UNAVAILABLE, as a parked gRPC call
 * is, and sent as far as each socket takes them now; then all is closed. */
static void close_all(srv_protosocket *ps)
{
    while (ps->conns) {
        ps_conn *c = ps->conns;
        while (c->held) {
            ps_held *h = c->held;
            answer_error(c, h->method, h->id, GRPC_STATUS_UNAVAILABLE, "server stopping");
            held_free(h);
        }
        flush(c);
        conn_free(c);
    }
}

static void *ps_loop(void *arg)
{
    srv_protosocket *ps = arg;
    /* A write to a socket its client closed raises SIGPIPE in the writing
     * thread; OpenSSL's writes cannot say MSG_NOSIGNAL, so this thread
     * keeps it blocked (the write fails EPIPE instead). */
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, NULL);
    struct epoll_event evs[MAX_EVENTS];
    while (!atomic_load(&ps->stop)) {
        int n = epoll_wait(ps->epfd, evs, MAX_EVENTS, next_wait(ps));
        for (int i = 0; i < n; i++) {
            void *p = evs[i].data.ptr;
            if (p == &ps->wake_fd)
                continue; /* the stop */
            if (p == &ps->listen_fd)
                accept_all(ps);
            else
                service(p, evs[i].events);
        }
        run_due(ps);
        retry_deferred(ps);
        run_ready(ps);
        turn_give(ps);
        reap(ps);
    }
    close_all(ps);
    return NULL;
}

/* ---- start and stop ------------------------------------------------- */

static int tls_context(srv_protosocket *ps)
{
    const momento_local_options *o = &ps->s->opts;
    ps->ctx = SSL_CTX_new(TLS_server_method());
    if (!ps->ctx)
        return MOMENTO_ERR_NO_MEMORY;
    SSL_CTX_set_min_proto_version(ps->ctx, TLS1_2_VERSION);
    /* The output buffer moves as it grows, and writes go out a record at a
     * time. */
    SSL_CTX_set_mode(ps->ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    if (SSL_CTX_use_certificate_chain_file(ps->ctx, o->tls_cert) != 1 ||
        SSL_CTX_use_PrivateKey_file(ps->ctx, o->tls_key, SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_check_private_key(ps->ctx) != 1) {
        ERR_clear_error();
        return MOMENTO_ERR_INVALID_ARGUMENT;
    }
    return MOMENTO_OK;
}

static int listen_on(srv_protosocket *ps)
{
    const momento_local_options *o = &ps->s->opts;
    ps->listen_fd = srv_listen(o->bind, o->protosocket_port, true, 128, &ps->port);
    return ps->listen_fd < 0 ? -1 : 0;
}

static int add_fd(srv_protosocket *ps, int fd, void *ptr)
{
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = ptr};
    return epoll_ctl(ps->epfd, EPOLL_CTL_ADD, fd, &ev);
}

static void ps_free(srv_protosocket *ps)
{
    if (ps->listen_fd >= 0)
        close(ps->listen_fd);
    if (ps->epfd >= 0)
        close(ps->epfd);
    if (ps->wake_fd >= 0)
        close(ps->wake_fd);
    if (ps->ctx)
        SSL_CTX_free(ps->ctx);
    momento__heap_clear(&ps->timers);
    pthread_mutex_destroy(&ps->fault.mu);
    free(ps->scratch);
    free(ps);
}

int srv_protosocket_start(momento_local *s)
{
    if (s->opts.protosocket_port < 0)
        return MOMENTO_OK;
    srv_protosocket *ps = calloc(1, sizeof(*ps));
    if (!ps)
        return MOMENTO_ERR_NO_MEMORY;
    ps->s = s;
    ps->listen_fd = ps->epfd = ps->wake_fd = -1;
    momento__heap_init(&ps->timers, due_before, NULL);
    momento__heap_track(&ps->timers, heap_moved);
    if (pthread_mutex_init(&ps->fault.mu, NULL) != 0) {
        free(ps);
        return MOMENTO_ERR_NO_MEMORY;
    }
    int rc = s->opts.tls_cert ? tls_context(ps) : MOMENTO_OK;
    if (rc == MOMENTO_OK && listen_on(ps) < 0)
        rc = MOMENTO_ERR_SERVER_UNAVAILABLE;
    if (rc == MOMENTO_OK) {
        ps->epfd = epoll_create1(EPOLL_CLOEXEC);
        ps->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (ps->epfd < 0 || ps->wake_fd < 0 || add_fd(ps, ps->listen_fd, &ps->listen_fd) < 0 ||
            add_fd(ps, ps->wake_fd, &ps->wake_fd) < 0 ||
            pthread_create(&ps->thread, NULL, ps_loop, ps) != 0)
            rc = MOMENTO_ERR_NO_MEMORY;
    }
    if (rc != MOMENTO_OK) {
        ps_free(ps);
        return rc;
    }
    pthread_setname_np(ps->thread, "momento-ps");
    ps->running = true;
    s->protosocket = ps;
    return MOMENTO_OK;
}

void srv_protosocket_stop(momento_local *s)
{
    srv_protosocket *ps = s->protosocket;
    if (!ps)
        return;
    atomic_store(&ps->stop, true);
    uint64_t one = 1;
    ssize_t w = write(ps->wake_fd, &one, sizeof(one));
    (void)w;
    pthread_join(ps->thread, NULL);
    s->protosocket = NULL;
    ps_free(ps);
}

int momento_local_protosocket_port(const momento_local *s)
{
    return s && s->protosocket ? s->protosocket->port : -1;
}
