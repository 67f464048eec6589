/* The protosocket transport: get, set and delete as CacheCommand frames on
 * a pool of TCP (TLS) connections, pipelined and answered out of order
 * (docs/transport.md "Protosocket"; the wire is common/ps_wire.h).
 *
 * Threads. The seam's prepare, launch and cancel come from any thread;
 * everything else - sockets, TLS, message ids, deadlines, replies - is
 * worked under `loop`, which the transport's I/O thread ("momento-ps")
 * holds except while it sleeps in epoll_wait. A launch that finds `loop`
 * free sends its frame itself (one wake-up less per request); otherwise
 * two lists cross to the thread under `lock`: attempts launched and not
 * yet taken (`launched`), and attempts whose cancel has not yet been acted
 * on (`cancels`); an eventfd wakes the thread when either goes from empty
 * to not, a timerfd at the earliest deadline. An attempt's `state` is read
 * and written under `lock`, so a cancel that comes after the end finds it
 * DONE and does nothing. An attempt ends by its reply filled and handed to
 * the engine - after which it is never touched again: by the I/O thread
 * at the end of its turn through finish(), holding neither lock (the
 * engine may run done() there, which launches and cancels); by a launching
 * thread through post(), holding `loop` but not `lock`, since the engine
 * may call cancel() under the client's lock and post() takes that lock.
 * Nothing holding the client's lock waits for `loop` (launch only tries
 * it).
 *
 * Without the thread (`stepped`: dispatch mode with
 * momento_config_set_dispatch_io()) the same turn is taken by whoever
 * calls ps_step() - the dispatching thread, a blocking call's or the
 * free's - under the same `loop`, and the epoll fd is what the engine
 * watches for it (ps_poll_fd).
 *
 * Each connection authenticates first and holds what is sent to it until
 * the server's auth reply; its in-flight requests are a hash by message
 * id. A connection that fails ends its requests with UNAVAILABLE (the
 * client's retry strategy retries the idempotent ones) and is made again
 * on a later use, after a backoff. A request whose deadline passes, or
 * whose cancel comes, is answered at once and the server told with a
 * cancel frame; a late reply for its id is ignored. */
#include "transport/protosocket/ps_transport.h"

#include "base/alloc.h"
#include "base/fifo.h"
#include "base/wire.h"
#include "clock.h"
#include "heap.h"
#include "methods.h"
#include "model/validate.h"
#include "momento/metrics.h" /* the kind the metrics record reports */
#include "ps_wire.h"

#include <arpa/inet.h>
#include <errno.h>
#include <grpc/slice.h>
#include <grpc/status.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>
#include <uthash.h>
#include <utlist.h>

#define PS_DEFAULT_PORT 9004
#define BACKOFF_MIN_MS 50
#define BACKOFF_MAX_MS 5000
/* Bytes one read takes at most before the loop looks at the others. */
#define READ_CHUNK (64 * 1024)

typedef struct ps_transport ps_transport;
typedef struct ps_conn ps_conn;

enum a_state { A_IDLE, A_PREPARED, A_LAUNCHED, A_DONE };

typedef struct ps_attempt {
    momento__attempt base; /* first, as the seam asks */
    ps_transport *t;
    const momento__wire_request *rq;
    int64_t deadline_ns; /* INT64_MAX: none */

    /* Under t->lock. */
    enum a_state state;
    const char *cancel_why; /* a cancel came (static) */
    bool cancel_listed;     /* on t->cancels */
    struct ps_attempt *qnext;          /* t->launched */
    struct ps_attempt *cprev, *cnext;  /* t->cancels (utlist's DL) */

    /* The I/O thread's. */
    uint64_t id;     /* 0 until sent */
    ps_conn *conn;   /* waiting on it or sent on it; NULL otherwise */
    bool sent;       /* in conn->inflight (else on conn->waiting) */
    size_t heap_at;  /* its place in t->deadlines, or MOMENTO__HEAP_GONE */
    bool in_order;   /* on t->by_deadline (else in the heap, or neither) */
    struct ps_attempt *oprev, *onext; /* t->by_deadline */
    UT_hash_handle hh;                 /* conn->inflight, by id */
    struct ps_attempt *wprev, *wnext;  /* conn->waiting (DL) */
    struct ps_attempt *dnext;          /* the ends to post */
    grpc_slice msg;  /* the reply's one message */
} ps_attempt;

enum c_state { C_IDLE, C_CONNECTING, C_TLS, C_AUTH, C_READY, C_BACKOFF };

struct ps_conn {
    ps_transport *t;
    int fd;
    SSL *ssl;
    enum c_state state;
    int64_t retry_at_ns;  /* C_BACKOFF: when it may be made again */
    uint32_t backoff_ms;
    char last_error[160]; /* why it last failed, for the requests it fails */
    int last_status;      /* and with what: UNAVAILABLE, or the auth refusal's */
    uint8_t *rbuf;
    size_t rlen, rcap;
    uint8_t *wbuf;
    size_t wlen, woff, wcap;
    bool want_out; /* EPOLLOUT registered */
    ps_attempt *inflight; /* sent, by id */
    ps_attempt *waiting;  /* until the connection is ready */
    size_t load;          /* inflight + waiting */
};

struct ps_transport {
    momento__transport base; /* first */
    /* Held by whoever works the connections: the I/O thread whenever it
     * is not asleep in epoll_wait, or a launching thread that found it
     * free (ps_launch's inline send). Everything below marked "the I/O
     * thread's" is under it. Taken before `lock`, never after. */
    pthread_mutex_t loop;
    pthread_mutex_t lock;
    ps_attempt *launched, *launched_tail;
    ps_attempt *cancels;
    bool stopping;
    int epfd, evfd;
    pthread_t thread;
    bool thread_started;
    bool stepped; /* no thread: worked by ps_step() on the engine's call */

    /* Where and how to connect; read-only once made. */
    char host[MOMENTO__HOST_PORT_MAX + 1];
    char port[8];
    char tls_name[MOMENTO__HOST_PORT_MAX + 1]; /* SNI and certificate name */
    bool tls;
    SSL_CTX *ctx;
    char *token;

    /* The I/O thread's (under `loop`). */
    ps_conn *conns;
    size_t n_conns;
    uint64_t next_id;
    /* The deadlines of the attempts on the wire: a list sorted by
     * deadline, which takes nearly every one at its tail in O(1) - those
     * of one client's requests mostly come in deadline order, their
     * timeout being the same - and a heap for the few that would land
     * deeper than ORDER_WALK from its tail. The earliest is the sooner of
     * the list's head and the heap's top. Before, the heap alone: its
     * sifts on every push and every removal were a tenth of the client's
     * CPU at 1000 in flight (docs/performance.md). */
    struct ps_attempt *by_deadline, *by_deadline_tail;
    momento__heap deadlines;
    ps_attempt *to_post;
    int tfd;          /* a timerfd in the epoll set: the earliest deadline */
    int64_t armed_ns; /* what it is set for; INT64_MAX: not set */
    /* Set while the I/O thread sleeps with a connection idle: the hint
     * that lets a launch skip trying `loop` when it would find nothing to
     * send on - at many in flight, its trying would only make the thread
     * wait for the lock as it wakes. */
    atomic_bool inline_hint;
};

/* The timerfd's epoll tag (the eventfd's is NULL, a connection's itself). */
static char timer_tag;

/* ------------------------------------------------------------ endings */

static void heap_moved(void *item, size_t index)
{
    ((ps_attempt *)item)->heap_at = index;
}

static bool due_first(const void *a, const void *b)
{
    return ((const ps_attempt *)a)->deadline_ns < ((const ps_attempt *)b)->deadline_ns;
}

/* How far back from the list's tail a deadline is placed before it goes
 * to the heap instead. */
#define ORDER_WALK 8

/* Tracks `a`'s deadline (`loop` held). Returns 0, or -1 without memory. */
static int deadline_add(ps_transport *t, ps_attempt *a)
{
    ps_attempt *after = t->by_deadline_tail;
    for (int i = 0; after && after->deadline_ns > a->deadline_ns; i++) {
        if (i == ORDER_WALK)
            return momento__heap_push(&t->deadlines, a);
        after = after->oprev;
    }
    a->in_order = true;
    a->oprev = after;
    a->onext = after ? after->onext : t->by_deadline;
    if (a->onext)
        a->onext->oprev = a;
    else
        t->by_deadline_tail = a;
    if (after)
        after->onext = a;
    else
        t->by_deadline = a;
    return 0;
}

static void deadline_remove(ps_transport *t, ps_attempt *a)
{
    if (a->in_order) {
        if (a->oprev)
            a->oprev->onext = a->onext;
        else
            t->by_deadline = a->onext;
        if (a->onext)
            a->onext->oprev = a->oprev;
        else
            t->by_deadline_tail = a->oprev;
        a->in_order = false;
        a->oprev = a->onext = NULL;
    } else if (a->heap_at != MOMENTO__HEAP_GONE) {
        momento__heap_remove(&t->deadlines, a->heap_at);
    }
}

/* The attempt whose deadline comes first, or NULL. */
static ps_attempt *deadline_first(ps_transport *t)
{
    ps_attempt *l = t->by_deadline, *h = momento__heap_peek(&t->deadlines);
    if (!l || (h && h->deadline_ns < l->deadline_ns))
        return h;
    return l;
}

/* Takes `a` off its connection and its deadline's place (I/O thread). */
static void detach(ps_attempt *a)
{
    ps_conn *c = a->conn;
    if (c) {
        if (a->sent)
            HASH_DEL(c->inflight, a);
        else
            DL_DELETE2(c->waiting, a, wprev, wnext);
        c->load--;
        a->conn = NULL;
        a->sent = false;
    }
    deadline_remove(a->t, a);
}

/* Ends `a` with `status` (its reply already holding a message when OK):
 * marks it done under the lock, so that no cancel acts on it after, and
 * queues it for post() (I/O thread; `a` detached). */
static void finish(ps_attempt *a, int status, const char *details)
{
    ps_transport *t = a->t;
    a->base.reply.status = status;
    if (details)
        a->base.reply.details = grpc_slice_from_copied_string(details);
    pthread_mutex_lock(&t->lock);
    a->state = A_DONE;
    if (a->cancel_listed) {
        DL_DELETE2(t->cancels, a, cprev, cnext);
        a->cancel_listed = false;
    }
    pthread_mutex_unlock(&t->lock);
    a->dnext = t->to_post;
    t->to_post = a;
}

/* Takes the ends queued so far, oldest first (`loop` held). */
static ps_attempt *take_ends(ps_transport *t)
{
    ps_attempt *list = NULL;
    while (t->to_post) { /* reversed: oldest first */
        ps_attempt *a = t->to_post;
        t->to_post = a->dnext;
        a->dnext = list;
        list = a;
    }
    return list;
}

/* Hands the ends to the engine, in the order they came: through post(),
 * or from the I/O thread holding no lock of ours through finish(), which
 * may run their done() right here (`own_thread`). */
static void hand_ends(ps_transport *t, ps_attempt *list, bool own_thread)
{
    while (list) {
        ps_attempt *a = list;
        list = a->dnext; /* read first: `a` is the engine's from here */
        if (own_thread)
            t->base.finish(&t->base, &a->base);
        else
            t->base.post(&t->base, &a->base);
    }
}

/* Hands the ends to the client's completion thread, holding no `lock`: a
 * launching thread's (it may hold the engine's locks, which done() takes),
 * or the I/O thread's as it stops. */
static void post_ends(ps_transport *t)
{
    hand_ends(t, take_ends(t), false);
}

/* ------------------------------------------------------------ connections */

static void conn_want_out(ps_conn *c, bool on)
{
    if (c->want_out == on || c->fd < 0)
        return;
    struct epoll_event ev = {.events = EPOLLIN | (on ? EPOLLOUT : 0), .data.ptr = c};
    epoll_ctl(c->t->epfd, EPOLL_CTL_MOD, c->fd, &ev);
    c->want_out = on;
}

/* Fails every request of `c` with UNAVAILABLE and closes it: a later use
 * makes it again, at once if it was ready, after a backoff if it never
 * got there. */
static void conn_fail(ps_conn *c, const char *what, const char *detail)
{
    bool was_ready = c->state == C_READY;
    snprintf(c->last_error, sizeof(c->last_error), "%s%s%s", what, detail ? ": " : "",
             detail ? detail : "");
    c->last_status = GRPC_STATUS_UNAVAILABLE;
    char why[512];
    snprintf(why, sizeof(why), "protosocket connection to %s:%s: %s", c->t->host, c->t->port,
             c->last_error);
    ps_attempt *a, *tmp;
    HASH_ITER(hh, c->inflight, a, tmp)
    {
        detach(a);
        finish(a, GRPC_STATUS_UNAVAILABLE, why);
    }
    DL_FOREACH_SAFE2(c->waiting, a, tmp, wnext)
    {
        detach(a);
        finish(a, GRPC_STATUS_UNAVAILABLE, why);
    }
    if (c->ssl) {
        SSL_free(c->ssl);
        c->ssl = NULL;
    }
    if (c->fd >= 0) {
        epoll_ctl(c->t->epfd, EPOLL_CTL_DEL, c->fd, NULL);
        close(c->fd);
        c->fd = -1;
    }
    c->want_out = false;
    c->rlen = c->wlen = c->woff = 0;
    if (was_ready) {
        /* It had worked: made again at once on its next use, as gRPC makes
         * a dropped connection again. The backoff is for connections that
         * cannot be made; here it would fail at once the very retries the
         * UNAVAILABLE above asks for. */
        c->state = C_IDLE;
        return;
    }
    c->state = C_BACKOFF;
    c->backoff_ms = c->backoff_ms ? c->backoff_ms * 2 : BACKOFF_MIN_MS;
    if (c->backoff_ms > BACKOFF_MAX_MS)
        c->backoff_ms = BACKOFF_MAX_MS;
    c->retry_at_ns = momento__now_ns() + (int64_t)c->backoff_ms * 1000000;
}

/* Room for `n` more bytes in the write buffer; false when out of memory. */
static bool wbuf_reserve(ps_conn *c, size_t n)
{
    if (c->woff && c->woff == c->wlen)
        c->woff = c->wlen = 0;
    if (c->wlen + n <= c->wcap)
        return true;
    if (c->woff) { /* slide the unsent bytes down first */
        memmove(c->wbuf, c->wbuf + c->woff, c->wlen - c->woff);
        c->wlen -= c->woff;
        c->woff = 0;
        if (c->wlen + n <= c->wcap)
            return true;
    }
    size_t cap = c->wcap ? c->wcap : 16384;
    while (cap < c->wlen + n)
        cap *= 2;
    uint8_t *grown = momento__realloc(c->wbuf, cap);
    if (!grown)
        return false;
    c->wbuf = grown;
    c->wcap = cap;
    return true;
}

static bool queue_frame(ps_conn *c, const ps_command *cmd)
{
    size_t n = ps_command_frame_size(cmd);
    if (!wbuf_reserve(c, n))
        return false;
    c->wlen += ps_command_encode(cmd, c->wbuf + c->wlen);
    return true;
}

/* Writes what is buffered; false when the connection failed (it is then
 * failed already). */
static bool conn_flush(ps_conn *c)
{
    while (c->woff < c->wlen) {
        size_t n = c->wlen - c->woff;
        ssize_t k;
        if (c->ssl) {
            int w = SSL_write(c->ssl, c->wbuf + c->woff, n > INT32_MAX ? INT32_MAX : (int)n);
            if (w <= 0) {
                int e = SSL_get_error(c->ssl, w);
                if (e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ) {
                    conn_want_out(c, true);
                    return true;
                }
                conn_fail(c, "TLS write failed", NULL);
                return false;
            }
            k = w;
        } else {
            k = send(c->fd, c->wbuf + c->woff, n, MSG_NOSIGNAL);
            if (k < 0) {
                if (errno == EAGAIN || errno == EWOULDBLOCK) {
                    conn_want_out(c, true);
                    return true;
                }
                if (errno == EINTR)
                    continue;
                conn_fail(c, "write failed", strerror(errno));
                return false;
            }
        }
        c->woff += (size_t)k;
    }
    c->woff = c->wlen = 0;
    conn_want_out(c, false);
    return true;
}

/* The key, value and TTL of a gRPC _GetRequest / _SetRequest /
 * _DeleteRequest body (fields 1, 2, 3 in all three). */
static bool read_request(const momento__wire_request *rq, ps_command *cmd)
{
    const uint8_t *p = GRPC_SLICE_START_PTR(rq->body);
    const uint8_t *end = p + GRPC_SLICE_LENGTH(rq->body);
    while (p < end) {
        uint64_t key, v;
        if (!momento__wire_varint(&p, end, &key))
            return false;
        unsigned field = (unsigned)(key >> 3), wt = (unsigned)(key & 7);
        if ((field == 1 || field == 2) && wt == 2) {
            if (!momento__wire_varint(&p, end, &v) || v > (uint64_t)(end - p))
                return false;
            ps_bytes b = {p, (size_t)v};
            if (field == 1)
                cmd->key = b;
            else
                cmd->value = b;
            p += v;
        } else if (field == 3 && wt == 0) {
            if (!momento__wire_varint(&p, end, &cmd->ttl_ms))
                return false;
        } else if (!momento__wire_skip(&p, end, wt)) {
            return false;
        }
    }
    return true;
}

/* Puts `a` on the ready connection `c`'s wire (I/O thread). */
static void send_on(ps_conn *c, ps_attempt *a)
{
    ps_transport *t = c->t;
    const momento__wire_request *rq = a->rq;
    ps_command cmd = {0};
    cmd.kind = rq->method == MOMENTO__RPC_GET   ? PS_GET
               : rq->method == MOMENTO__RPC_SET ? PS_SET
                                                : PS_DELETE;
    cmd.ns = (ps_bytes){GRPC_SLICE_START_PTR(rq->cache), GRPC_SLICE_LENGTH(rq->cache)};
    if (!read_request(rq, &cmd)) {
        detach(a);
        finish(a, GRPC_STATUS_INTERNAL, "protosocket: the request did not parse");
        return;
    }
    if (cmd.kind != PS_SET) {
        cmd.value = (ps_bytes){0};
        cmd.ttl_ms = 0;
    }
    if (++t->next_id == PS_AUTH_ID)
        ++t->next_id;
    cmd.id = t->next_id;
    if (ps_command_frame_size(&cmd) > PS_MAX_FRAME) {
        detach(a);
        a->base.reply.err = (char *)"request_size_limit_exceeded";
        finish(a, GRPC_STATUS_RESOURCE_EXHAUSTED,
               "Request size limit exceeded: protosocket frames are at most 4 MiB");
        return;
    }
    if (!queue_frame(c, &cmd)) {
        detach(a);
        a->base.reply.out_of_memory = true;
        finish(a, GRPC_STATUS_RESOURCE_EXHAUSTED, "no memory for the request's frame");
        return;
    }
    DL_DELETE2(c->waiting, a, wprev, wnext);
    a->id = cmd.id;
    a->sent = true;
    HASH_ADD(hh, c->inflight, id, sizeof(a->id), a);
}

static void conn_ready(ps_conn *c)
{
    c->state = C_READY;
    c->backoff_ms = 0;
    ps_attempt *a, *tmp;
    DL_FOREACH_SAFE2(c->waiting, a, tmp, wnext)
    send_on(c, a);
    conn_flush(c);
}

static void conn_send_auth(ps_conn *c)
{
    c->state = C_AUTH;
    ps_command auth = {.id = PS_AUTH_ID, .kind = PS_AUTH};
    auth.token = (ps_bytes){(const uint8_t *)c->t->token, strlen(c->t->token)};
    if (!queue_frame(c, &auth)) {
        conn_fail(c, "no memory for the Authenticate frame", NULL);
        return;
    }
    conn_flush(c);
}

static void conn_tls_step(ps_conn *c)
{
    int r = SSL_connect(c->ssl);
    if (r == 1) {
        conn_want_out(c, false);
        conn_send_auth(c);
        return;
    }
    int e = SSL_get_error(c->ssl, r);
    if (e == SSL_ERROR_WANT_READ) {
        conn_want_out(c, false);
        return;
    }
    if (e == SSL_ERROR_WANT_WRITE) {
        conn_want_out(c, true);
        return;
    }
    long v = SSL_get_verify_result(c->ssl);
    char why[128];
    if (v != X509_V_OK)
        snprintf(why, sizeof(why), "%s", X509_verify_cert_error_string(v));
    else
        ERR_error_string_n(ERR_peek_last_error(), why, sizeof(why));
    ERR_clear_error();
    conn_fail(c, "TLS handshake failed", why);
}

/* The socket connected: TLS, or straight to authentication. */
static void conn_connected(ps_conn *c)
{
    if (!c->t->tls) {
        conn_send_auth(c);
        return;
    }
    /* An address names the peer by its IP: no SNI for it (RFC 6066 has
     * none for addresses) and the certificate's IP SAN checked, as gRPC
     * checks an endpoint such as 127.0.0.1:8443. */
    unsigned char ip[16];
    bool is_ip = inet_pton(AF_INET, c->t->tls_name, ip) == 1 ||
                 inet_pton(AF_INET6, c->t->tls_name, ip) == 1;
    c->ssl = SSL_new(c->t->ctx);
    if (!c->ssl || !SSL_set_fd(c->ssl, c->fd) ||
        (!is_ip && !SSL_set_tlsext_host_name(c->ssl, c->t->tls_name))) {
        conn_fail(c, "no memory for TLS", NULL);
        return;
    }
    if (SSL_CTX_get_verify_mode(c->t->ctx) != SSL_VERIFY_NONE) {
        int ok = is_ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(c->ssl), c->t->tls_name)
                       : SSL_set1_host(c->ssl, c->t->tls_name);
        if (ok != 1) {
            conn_fail(c, "no memory for TLS", NULL);
            return;
        }
    }
    c->state = C_TLS;
    conn_tls_step(c);
}

static void conn_start(ps_conn *c)
{
    ps_transport *t = c->t;
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai = NULL;
    int g = getaddrinfo(t->host, t->port, &hints, &ai);
    if (g != 0 || !ai) {
        conn_fail(c, "cannot resolve the host", gai_strerror(g));
        return;
    }
    int fd = -1, err = 0;
    for (struct addrinfo *p = ai; p; p = p->ai_next) {
        fd = socket(p->ai_family, p->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, p->ai_protocol);
        if (fd < 0) {
            err = errno;
            continue;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
        if (connect(fd, p->ai_addr, p->ai_addrlen) == 0 || errno == EINPROGRESS)
            break;
        err = errno;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(ai);
    if (fd < 0) {
        conn_fail(c, "connect failed", strerror(err));
        return;
    }
    c->fd = fd;
    c->state = C_CONNECTING;
    struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.ptr = c};
    c->want_out = true;
    if (epoll_ctl(t->epfd, EPOLL_CTL_ADD, fd, &ev) != 0)
        conn_fail(c, "epoll", strerror(errno));
}

/* A reply frame for connection `c`. false: the connection failed. */
static bool on_response(ps_conn *c, const ps_response *r)
{
    if (c->state == C_AUTH) {
        if (r->id != PS_AUTH_ID)
            return true; /* nothing but its auth reply can come yet */
        if (r->kind == PS_AUTH) {
            conn_ready(c);
            return c->fd >= 0;
        }
        /* Refused: the requests waiting get the server's status. */
        char why[256];
        snprintf(why, sizeof(why), "%.*s", (int)(r->message.len > 200 ? 200 : r->message.len),
                 (const char *)r->message.data);
        int status = r->kind == PS_ERROR && r->code ? (int)r->code : GRPC_STATUS_UNAUTHENTICATED;
        ps_attempt *a, *tmp;
        DL_FOREACH_SAFE2(c->waiting, a, tmp, wnext)
        {
            detach(a);
            finish(a, status, why[0] ? why : "the server refused the Authenticate command");
        }
        conn_fail(c, "authentication refused", why);
        c->last_status = status; /* for what comes during the backoff */
        return false;
    }
    ps_attempt *a;
    HASH_FIND(hh, c->inflight, &r->id, sizeof(r->id), a);
    if (!a)
        return true; /* cancelled, timed out, or unknown: ignored */
    detach(a);
    momento__reply *rep = &a->base.reply;
    momento__rpc_id m = a->rq->method;
    if (r->kind == PS_ERROR) {
        if (m == MOMENTO__RPC_GET && r->code == GRPC_STATUS_NOT_FOUND &&
            r->message.len == 13 && memcmp(r->message.data, "Key not found", 13) == 0) {
            static const uint8_t miss[] = {0x08, 0x03}; /* _GetResponse{result: Miss} */
            a->msg = grpc_slice_from_static_buffer(miss, sizeof(miss));
            rep->msgs = &a->msg;
            rep->n_msgs = 1;
            finish(a, GRPC_STATUS_OK, NULL);
            return true;
        }
        char msg[512];
        snprintf(msg, sizeof(msg), "%.*s", (int)(r->message.len > 500 ? 500 : r->message.len),
                 (const char *)r->message.data);
        finish(a, r->code ? (int)r->code : GRPC_STATUS_UNKNOWN, msg);
        return true;
    }
    if (r->kind == PS_NONE && (r->control == PS_CONTROL_CANCEL || r->control == PS_CONTROL_END)) {
        finish(a, GRPC_STATUS_CANCELLED, "the server cancelled the request");
        return true;
    }
    /* The gRPC reply the decoders read, for the command's own kind; any
     * other is a reply without a message (MOMENTO_ERR_BAD_RESPONSE). */
    if (m == MOMENTO__RPC_GET && r->kind == PS_GET) {
        size_t n = 2 + 1 + ps_varint_size(r->value.len) + r->value.len;
        a->msg = grpc_slice_malloc(n);
        uint8_t *p = GRPC_SLICE_START_PTR(a->msg);
        *p++ = 0x08; /* result: Hit */
        *p++ = 0x02;
        *p++ = 0x12; /* cache_body */
        p += ps_varint_put(p, r->value.len);
        if (r->value.len)
            memcpy(p, r->value.data, r->value.len);
    } else if (m == MOMENTO__RPC_SET && r->kind == PS_SET) {
        static const uint8_t ok[] = {0x08, 0x01}; /* _SetResponse{result: Ok} */
        a->msg = grpc_slice_from_static_buffer(ok, sizeof(ok));
    } else if (m == MOMENTO__RPC_DELETE && r->kind == PS_DELETE) {
        a->msg = grpc_empty_slice(); /* _DeleteResponse{} */
    } else {
        finish(a, GRPC_STATUS_OK, NULL);
        return true;
    }
    rep->msgs = &a->msg;
    rep->n_msgs = 1;
    finish(a, GRPC_STATUS_OK, NULL);
    return true;
}

/* Reads what came and answers every whole frame. */
static void conn_read(ps_conn *c)
{
    for (int rounds = 0; rounds < 16; rounds++) {
        if (c->rcap - c->rlen < READ_CHUNK) {
            size_t cap = c->rcap ? c->rcap : READ_CHUNK * 2;
            while (cap - c->rlen < READ_CHUNK)
                cap *= 2;
            uint8_t *grown = momento__realloc(c->rbuf, cap);
            if (!grown) {
                conn_fail(c, "no memory for a reply", NULL);
                return;
            }
            c->rbuf = grown;
            c->rcap = cap;
        }
        ssize_t k;
        if (c->ssl) {
            int r = SSL_read(c->ssl, c->rbuf + c->rlen, READ_CHUNK);
            if (r <= 0) {
                int e = SSL_get_error(c->ssl, r);
                if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
                    return;
                conn_fail(c, e == SSL_ERROR_ZERO_RETURN ? "the server closed it" : "TLS read failed",
                          NULL);
                return;
            }
            k = r;
        } else {
            k = recv(c->fd, c->rbuf + c->rlen, READ_CHUNK, 0);
            if (k < 0) {
                if (errno == EAGAIN || errno == EWOULDBLOCK)
                    return;
                if (errno == EINTR)
                    continue;
                conn_fail(c, "read failed", strerror(errno));
                return;
            }
            if (k == 0) {
                conn_fail(c, "the server closed it", NULL);
                return;
            }
        }
        c->rlen += (size_t)k;
        size_t at = 0, off, len;
        int f;
        while ((f = ps_frame_next(c->rbuf + at, c->rlen - at, PS_MAX_FRAME, &off, &len)) == 1) {
            ps_response r;
            if (ps_response_decode(c->rbuf + at + off, len, &r) != 0) {
                conn_fail(c, "a reply frame did not decode", NULL);
                return;
            }
            at += off + len;
            if (!on_response(c, &r))
                return;
        }
        if (f < 0) {
            conn_fail(c, "a reply frame is malformed or over 4 MiB", NULL);
            return;
        }
        memmove(c->rbuf, c->rbuf + at, c->rlen - at);
        c->rlen -= at;
        if (c->wlen > c->woff && !conn_flush(c))
            return;
        if (!c->ssl && (size_t)k < READ_CHUNK)
            return; /* drained (TLS may hold more decrypted bytes: read on) */
    }
}

static void conn_event(ps_conn *c, uint32_t events)
{
    if (c->state == C_CONNECTING) {
        int err = 0;
        socklen_t len = sizeof(err);
        if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
            err = errno;
        if (err) {
            conn_fail(c, "connect failed", strerror(err));
            return;
        }
        if (!(events & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
            return;
        conn_want_out(c, false);
        conn_connected(c);
        return;
    }
    if (c->state == C_TLS) {
        conn_tls_step(c);
        return;
    }
    if (events & (EPOLLIN | EPOLLERR | EPOLLHUP))
        conn_read(c);
    if (c->fd >= 0 && (events & EPOLLOUT))
        conn_flush(c);
}

/* ------------------------------------------------------------ routing */

/* Sends the cancel frame for a request sent on `c` (best effort: a
 * connection that cannot take it fails, which ends its id anyway). */
static void tell_cancel(ps_conn *c, uint64_t id)
{
    ps_command cancel = {.id = id, .control = PS_CONTROL_CANCEL};
    if (c->state == C_READY)
        queue_frame(c, &cancel);
}

/* The connection for a new request: the least loaded that is usable,
 * starting one that is idle or whose backoff has passed; NULL when every
 * one is failing (I/O thread). */
static ps_conn *pick(ps_transport *t, int64_t now)
{
    ps_conn *best = NULL;
    for (size_t i = 0; i < t->n_conns; i++) {
        ps_conn *c = &t->conns[i];
        if (c->state == C_BACKOFF && c->retry_at_ns <= now)
            c->state = C_IDLE;
        if (c->state == C_BACKOFF)
            continue;
        if (!best || c->load < best->load || (best->state != C_READY && c->state == C_READY))
            best = c;
    }
    if (best && best->state == C_IDLE)
        conn_start(best);
    if (best && best->state == C_BACKOFF) /* it failed at once */
        return NULL;
    return best;
}

static void route_on(ps_transport *t, ps_attempt *a, ps_conn *c);

static void route(ps_transport *t, ps_attempt *a, int64_t now)
{
    if (a->deadline_ns <= now) {
        finish(a, GRPC_STATUS_DEADLINE_EXCEEDED, "Deadline Exceeded");
        return;
    }
    route_on(t, a, pick(t, now));
}

/* Puts `a` on connection `c` (NULL: every one is failing). */
static void route_on(ps_transport *t, ps_attempt *a, ps_conn *c)
{
    if (!c) {
        char why[512];
        snprintf(why, sizeof(why), "protosocket: no connection to %s:%s (last: %s)", t->host,
                 t->port, t->conns[0].last_error);
        /* A refused token is refused for every request, as on gRPC, not
         * an UNAVAILABLE that the retry strategy would spend at once. */
        finish(a, t->conns[0].last_status, why);
        return;
    }
    if (a->deadline_ns != INT64_MAX && deadline_add(t, a) != 0) {
        a->base.reply.out_of_memory = true;
        finish(a, GRPC_STATUS_RESOURCE_EXHAUSTED, "no memory to track the request's deadline");
        return;
    }
    a->conn = c;
    c->load++;
    DL_APPEND2(c->waiting, a, wprev, wnext);
    if (c->state == C_READY)
        send_on(c, a);
}

/* An attempt ended early (its cancel, its deadline): off its connection,
 * the server told, answered. */
static void end_early(ps_attempt *a, int status, const char *why)
{
    ps_conn *c = a->conn;
    uint64_t id = a->sent ? a->id : 0;
    detach(a);
    if (c && id)
        tell_cancel(c, id);
    finish(a, status, why);
}

/* ------------------------------------------------------------ the thread */

static int64_t next_wake(ps_transport *t)
{
    ps_attempt *a = deadline_first(t);
    return a ? a->deadline_ns : INT64_MAX;
}

/* Sets the timer for the earliest deadline when it would fire later than
 * that (`loop` held). It is never moved later: a timer whose deadline has
 * gone fires early, finds nothing due, and is set again - cheaper than a
 * system call for every reply. */
static void arm_deadline(ps_transport *t)
{
    int64_t due = next_wake(t);
    if (due >= t->armed_ns)
        return;
    int64_t rel = due - momento__now_ns();
    if (rel < 1)
        rel = 1; /* 0 would disarm it */
    struct itimerspec its = {.it_value = {.tv_sec = rel / 1000000000, .tv_nsec = rel % 1000000000}};
    if (timerfd_settime(t->tfd, 0, &its, NULL) == 0)
        t->armed_ns = due;
}

static ps_conn *pick_inline(ps_transport *t);

/* Sets the hint, writing it only when it changes: every launch reads it,
 * and at many in flight (where it stays false) a store on each of the
 * thread's turns would move its cache line back and forth for nothing. */
static void set_hint(ps_transport *t, bool on)
{
    if (atomic_load_explicit(&t->inline_hint, memory_order_relaxed) != on)
        atomic_store_explicit(&t->inline_hint, on, memory_order_relaxed);
}

/* One turn's work on what epoll_wait gave (`loop` held): the events, the
 * attempts launched since, the cancels, the deadlines past, the writes.
 * Returns whether the transport is stopping. */
static bool turn(ps_transport *t, const struct epoll_event *evs, int n)
{
    for (int i = 0; i < n; i++) {
        if (!evs[i].data.ptr || evs[i].data.ptr == &timer_tag) {
            uint64_t v;
            ssize_t r = read(evs[i].data.ptr ? t->tfd : t->evfd, &v, sizeof(v));
            (void)r;
            if (evs[i].data.ptr)
                t->armed_ns = INT64_MAX; /* it fired: set it again below */
            continue;
        }
        conn_event(evs[i].data.ptr, evs[i].events);
    }
    pthread_mutex_lock(&t->lock);
    ps_attempt *launched = t->launched;
    t->launched = t->launched_tail = NULL;
    /* Cancels are acted on below, off the list one at a time. */
    bool stopping = t->stopping;
    pthread_mutex_unlock(&t->lock);

    int64_t now = momento__now_ns();
    while (launched) {
        ps_attempt *a = launched;
        launched = a->qnext;
        a->qnext = NULL;
        pthread_mutex_lock(&t->lock);
        const char *why = a->cancel_why;
        pthread_mutex_unlock(&t->lock);
        if (why)
            finish(a, GRPC_STATUS_CANCELLED, why);
        else
            route(t, a, now);
    }
    for (;;) {
        pthread_mutex_lock(&t->lock);
        ps_attempt *a = t->cancels;
        const char *why = a ? a->cancel_why : NULL;
        pthread_mutex_unlock(&t->lock);
        if (!a)
            break;
        end_early(a, GRPC_STATUS_CANCELLED, why); /* finish() takes it off the list */
    }
    now = momento__now_ns();
    for (ps_attempt *a; (a = deadline_first(t)) && a->deadline_ns <= now;)
        end_early(a, GRPC_STATUS_DEADLINE_EXCEEDED, "Deadline Exceeded");
    for (size_t i = 0; i < t->n_conns; i++) {
        ps_conn *c = &t->conns[i];
        if (c->fd >= 0 && c->wlen > c->woff && !c->want_out)
            conn_flush(c);
    }
    return stopping;
}

/* Readies the connections for a sleep (`loop` held): the timer set for
 * the earliest deadline, and the hint that a launch may write itself. */
static void before_sleep(ps_transport *t)
{
    arm_deadline(t);
    /* Asleep, the connections are free for a launching thread to write on
     * (ps_launch). */
    set_hint(t, pick_inline(t) != NULL);
}

static void *io_thread(void *arg)
{
    ps_transport *t = arg;
    struct epoll_event evs[64];
    pthread_mutex_lock(&t->loop);
    for (;;) {
        before_sleep(t);
        ps_attempt *ends = take_ends(t);
        pthread_mutex_unlock(&t->loop);
        /* The last turn's ends, with `loop` free: what their done() sends
         * (a retry, a read coalesced again) a launch writes at once. */
        hand_ends(t, ends, true);
        int n = epoll_wait(t->epfd, evs, 64, -1);
        set_hint(t, false);
        pthread_mutex_lock(&t->loop);
        if (turn(t, evs, n)) {
            /* The engine retires every request before it shuts a
             * transport down; anything still here is ended, not lost. */
            for (size_t i = 0; i < t->n_conns; i++)
                if (t->conns[i].fd >= 0 || t->conns[i].load)
                    conn_fail(&t->conns[i], "the client is shutting down", NULL);
            post_ends(t);
            pthread_mutex_unlock(&t->loop);
            return NULL;
        }
    }
}

/* Without an I/O thread (momento_config_set_dispatch_io()): the turn the
 * thread would take, on the calling thread - the dispatching one, or one
 * waiting for a blocking call or the client's free. Its wait for events
 * holds no lock, as the thread's sleep does: two threads may step at
 * once, and the second to take `loop` finds the readiness the first
 * used up (a read that would block is nothing to do). */
static void ps_step(momento__transport *tr, int timeout_ms)
{
    ps_transport *t = (ps_transport *)tr;
    struct epoll_event evs[64];
    int n = epoll_wait(t->epfd, evs, 64, timeout_ms);
    set_hint(t, false);
    pthread_mutex_lock(&t->loop);
    turn(t, evs, n < 0 ? 0 : n);
    before_sleep(t);
    ps_attempt *ends = take_ends(t);
    pthread_mutex_unlock(&t->loop);
    hand_ends(t, ends, true);
}

static int ps_poll_fd(momento__transport *tr)
{
    ps_transport *t = (ps_transport *)tr;
    return t->stepped ? t->epfd : -1;
}

static void wake(ps_transport *t)
{
    uint64_t one = 1;
    ssize_t r = write(t->evfd, &one, sizeof(one));
    (void)r; /* a full counter still wakes the thread */
}

/* ------------------------------------------------------------ the seam */

static int ps_prepare(momento__transport *tr, momento__attempt *base,
                      const momento__wire_request *rq, gpr_timespec deadline)
{
    ps_attempt *a = (ps_attempt *)base;
    a->t = (ps_transport *)tr;
    a->rq = rq;
    a->deadline_ns = deadline.tv_sec == INT64_MAX ? INT64_MAX : momento__gpr_ns(deadline);
    a->heap_at = MOMENTO__HEAP_GONE;
    a->msg = grpc_empty_slice();
    pthread_mutex_lock(&a->t->lock);
    a->state = A_PREPARED;
    a->cancel_why = NULL;
    pthread_mutex_unlock(&a->t->lock);
    return MOMENTO_OK;
}

/* The connection a launching thread may send on itself (`loop` held): a
 * ready one with nothing in flight, or NULL - when every ready one is busy
 * (the I/O thread then writes this frame with the others, many per
 * write: sent one by one from here they cost a system call each, and at
 * 1000 in flight that cut the throughput to a third), or when one waits to
 * be made (its name lookup, its connect are the I/O thread's). */
static ps_conn *pick_inline(ps_transport *t)
{
    ps_conn *idle = NULL;
    for (size_t i = 0; i < t->n_conns; i++) {
        ps_conn *c = &t->conns[i];
        if (c->state == C_IDLE)
            return NULL;
        if (c->state == C_READY && c->load == 0 && !idle)
            idle = c;
    }
    return idle;
}

static int ps_launch(momento__attempt *base)
{
    ps_attempt *a = (ps_attempt *)base;
    ps_transport *t = a->t;
    /* With the I/O thread asleep and a connection idle, the launching
     * thread writes the frame itself: one wake-up less on the request's
     * path, the one that counts when few are in flight. Otherwise the
     * thread takes it from the list below with the others. */
    bool inline_ok = atomic_load_explicit(&t->inline_hint, memory_order_relaxed) &&
                     pthread_mutex_trylock(&t->loop) == 0;
    pthread_mutex_lock(&t->lock);
    if (t->stopping) {
        pthread_mutex_unlock(&t->lock);
        if (inline_ok)
            pthread_mutex_unlock(&t->loop);
        return MOMENTO_ERR_CLOSED;
    }
    a->state = A_LAUNCHED;
    ps_conn *c = inline_ok ? pick_inline(t) : NULL;
    if (c) {
        const char *why = a->cancel_why;
        pthread_mutex_unlock(&t->lock);
        int64_t now = momento__now_ns();
        if (why)
            finish(a, GRPC_STATUS_CANCELLED, why);
        else if (a->deadline_ns <= now)
            finish(a, GRPC_STATUS_DEADLINE_EXCEEDED, "Deadline Exceeded");
        else
            route_on(t, a, c);
        if (c->fd >= 0 && c->wlen > c->woff && !c->want_out)
            conn_flush(c);
        /* The next launch finds this connection busy. */
        set_hint(t, pick_inline(t) != NULL);
        arm_deadline(t);
        post_ends(t);
        pthread_mutex_unlock(&t->loop);
        return MOMENTO_OK;
    }
    bool first = !t->launched;
    MOMENTO__FIFO_APPEND(t->launched, t->launched_tail, a, qnext);
    pthread_mutex_unlock(&t->lock);
    if (inline_ok)
        pthread_mutex_unlock(&t->loop);
    /* A list that was not empty has a wake on its way already. */
    if (first)
        wake(t);
    return MOMENTO_OK;
}

static void ps_cancel(void *p, const char *why)
{
    ps_attempt *a = p;
    ps_transport *t = a->t;
    if (!t)
        return;
    bool tell = false;
    pthread_mutex_lock(&t->lock);
    if (a->state == A_PREPARED && !a->cancel_why) {
        a->cancel_why = why; /* launch() ends it at once */
    } else if (a->state == A_LAUNCHED && !a->cancel_why) {
        a->cancel_why = why;
        /* Not on `launched` any more: the I/O thread holds it. (Still on
         * it: routed with its cancel seen, never listed.) */
        bool queued = false;
        for (ps_attempt *q = t->launched; q && !queued; q = q->qnext)
            queued = q == a;
        if (!queued) {
            DL_APPEND2(t->cancels, a, cprev, cnext);
            a->cancel_listed = true;
            tell = true;
        }
    }
    pthread_mutex_unlock(&t->lock);
    if (tell)
        wake(t);
}

static void ps_end(momento__attempt *base)
{
    ps_attempt *a = (ps_attempt *)base;
    if (!a->t && !a->rq)
        return; /* zeroed */
    grpc_slice_unref(a->msg);
    grpc_slice_unref(a->base.reply.details);
    void *data = base->data;
    void (*done)(momento__attempt *) = base->done;
    memset(a, 0, sizeof(*a));
    base->data = data;
    base->done = done;
}

/* Stops the I/O thread and waits for it to end: from then on nothing of
 * the transport's calls into the engine (the client's free runs its
 * dispatch queue next, which the thread must not be queueing to). */
static void ps_shutdown(momento__transport *tr)
{
    ps_transport *t = (ps_transport *)tr;
    pthread_mutex_lock(&t->lock);
    t->stopping = true;
    pthread_mutex_unlock(&t->lock);
    wake(t);
    if (t->thread_started) {
        pthread_join(t->thread, NULL);
        t->thread_started = false;
    }
}

static void ps_close(momento__transport *tr)
{
    ps_transport *t = (ps_transport *)tr;
    ps_shutdown(tr);
    for (size_t i = 0; t->conns && i < t->n_conns; i++) {
        ps_conn *c = &t->conns[i];
        if (c->ssl)
            SSL_free(c->ssl);
        if (c->fd >= 0)
            close(c->fd);
        free(c->rbuf);
        free(c->wbuf);
    }
    free(t->conns);
    if (t->ctx)
        SSL_CTX_free(t->ctx);
    if (t->epfd >= 0)
        close(t->epfd);
    if (t->evfd >= 0)
        close(t->evfd);
    if (t->tfd >= 0)
        close(t->tfd);
    momento__heap_clear(&t->deadlines);
    pthread_mutex_destroy(&t->lock);
    pthread_mutex_destroy(&t->loop);
    free(t->token);
    free(t);
}

const momento__transport_ops momento__ps_ops = {
    .name = "protosocket",
    .metrics_kind = MOMENTO_METRICS_TRANSPORT_PROTOSOCKET,
    .attempt_size = sizeof(ps_attempt),
    .prepare = ps_prepare,
    .launch = ps_launch,
    .cancel = ps_cancel,
    .end = ps_end,
    .shutdown = ps_shutdown,
    .close = ps_close,
    .poll_fd = ps_poll_fd,
    .step = ps_step,
};

/* ------------------------------------------------------------ opening */

/* Splits "host:port" ("[v6]:port" too) into its parts. */
static bool split_host_port(const char *hp, char *host, size_t host_cap, char *port,
                            size_t port_cap)
{
    const char *colon = strrchr(hp, ':');
    if (!colon)
        return false;
    const char *h = hp, *h_end = colon;
    if (*h == '[' && h_end > h && h_end[-1] == ']') {
        h++;
        h_end--;
    }
    size_t hl = (size_t)(h_end - h), pl = strlen(colon + 1);
    if (!hl || hl >= host_cap || !pl || pl >= port_cap)
        return false;
    memcpy(host, h, hl);
    host[hl] = '\0';
    memcpy(port, colon + 1, pl + 1);
    return true;
}

static int make_tls(ps_transport *t, const momento_config *cfg)
{
    t->ctx = SSL_CTX_new(TLS_client_method());
    if (!t->ctx)
        return MOMENTO_ERR_NO_MEMORY;
    SSL_CTX_set_min_proto_version(t->ctx, TLS1_2_VERSION);
    /* The write buffer may move between the tries of one SSL_write. */
    SSL_CTX_set_mode(t->ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    if (!cfg->tls_verify) {
        SSL_CTX_set_verify(t->ctx, SSL_VERIFY_NONE, NULL);
        return MOMENTO_OK;
    }
    SSL_CTX_set_verify(t->ctx, SSL_VERIFY_PEER, NULL);
    if (cfg->tls_roots_pem) {
        BIO *bio = BIO_new_mem_buf(cfg->tls_roots_pem, -1);
        STACK_OF(X509_INFO) *infos = bio ? PEM_X509_INFO_read_bio(bio, NULL, NULL, NULL) : NULL;
        X509_STORE *store = SSL_CTX_get_cert_store(t->ctx);
        int added = 0;
        for (int i = 0; infos && i < sk_X509_INFO_num(infos); i++) {
            X509_INFO *info = sk_X509_INFO_value(infos, i);
            if (info->x509 && X509_STORE_add_cert(store, info->x509) == 1)
                added++;
        }
        if (infos)
            sk_X509_INFO_pop_free(infos, X509_INFO_free);
        BIO_free(bio);
        ERR_clear_error();
        if (!added)
            return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT,
                                   "the TLS roots hold no certificate protosocket can use");
    } else if (SSL_CTX_set_default_verify_paths(t->ctx) != 1) {
        ERR_clear_error();
    }
    return MOMENTO_OK;
}

int momento__ps_transport_new(momento__transport **ret, const momento_config *cfg,
                              const momento_credentials *creds)
{
    *ret = NULL;
    /* The endpoint's host names the TLS peer whatever address is dialled. */
    char cache_host[MOMENTO__HOST_PORT_MAX + 1], cache_port[8];
    if (!split_host_port(creds->cache_endpoint, cache_host, sizeof(cache_host), cache_port,
                         sizeof(cache_port)))
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT,
                               "the cache endpoint %s is not host:port", creds->cache_endpoint);
    char dial[MOMENTO__HOST_PORT_MAX + 16];
    if (cfg->protosocket_endpoint[0]) {
        snprintf(dial, sizeof(dial), "%s", cfg->protosocket_endpoint);
    } else if (!creds->tls) {
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT,
                               "protosocket to a local server needs its port: "
                               "momento_config_set_protosocket_endpoint()");
    } else {
        char h[MOMENTO__HOST_PORT_MAX + 1], p[8];
        const char *from = cache_host;
        if (cfg->connect_address[0] &&
            split_host_port(cfg->connect_address, h, sizeof(h), p, sizeof(p)))
            from = h;
        snprintf(dial, sizeof(dial), strchr(from, ':') ? "[%s]:%d" : "%s:%d", from,
                 PS_DEFAULT_PORT);
    }
    ps_transport *t = momento__calloc(1, sizeof(*t));
    if (!t)
        return MOMENTO_ERR_NO_MEMORY;
    t->base.ops = &momento__ps_ops;
    t->epfd = t->evfd = t->tfd = -1;
    t->armed_ns = INT64_MAX;
    atomic_init(&t->inline_hint, false);
    pthread_mutex_init(&t->lock, NULL);
    pthread_mutex_init(&t->loop, NULL);
    momento__heap_init(&t->deadlines, due_first, momento__realloc);
    momento__heap_track(&t->deadlines, heap_moved);
    int rc = MOMENTO_OK;
    if (!split_host_port(dial, t->host, sizeof(t->host), t->port, sizeof(t->port)))
        rc = momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT, "the protosocket endpoint %s is not "
                                                           "host:port", dial);
    snprintf(t->tls_name, sizeof(t->tls_name), "%s", cache_host);
    t->tls = creds->tls != 0;
    if (rc == MOMENTO_OK && t->tls)
        rc = make_tls(t, cfg);
    if (rc == MOMENTO_OK) {
        size_t n = strlen(creds->token) + 1;
        t->token = momento__malloc(n);
        if (t->token)
            memcpy(t->token, creds->token, n);
        else
            rc = MOMENTO_ERR_NO_MEMORY;
    }
    if (rc == MOMENTO_OK) {
        uint32_t n = cfg->protosocket_connections;
        if (!n) {
            long cpus = sysconf(_SC_NPROCESSORS_ONLN);
            n = cpus > 1 ? (uint32_t)(cpus / 2) : 1;
            n = n > 16 ? 16 : n;
        }
        t->conns = momento__calloc(n, sizeof(*t->conns));
        t->n_conns = n;
        if (!t->conns)
            rc = MOMENTO_ERR_NO_MEMORY;
        for (size_t i = 0; rc == MOMENTO_OK && i < n; i++) {
            t->conns[i].t = t;
            t->conns[i].fd = -1;
            snprintf(t->conns[i].last_error, sizeof(t->conns[i].last_error), "not connected yet");
            t->conns[i].last_status = GRPC_STATUS_UNAVAILABLE;
        }
    }
    if (rc == MOMENTO_OK) {
        t->epfd = epoll_create1(EPOLL_CLOEXEC);
        t->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        t->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
        struct epoll_event tev = {.events = EPOLLIN, .data.ptr = &timer_tag};
        if (t->epfd < 0 || t->evfd < 0 || t->tfd < 0 ||
            epoll_ctl(t->epfd, EPOLL_CTL_ADD, t->evfd, &ev) != 0 ||
            epoll_ctl(t->epfd, EPOLL_CTL_ADD, t->tfd, &tev) != 0)
            rc = MOMENTO_ERR_NO_MEMORY;
    }
    if (rc == MOMENTO_OK && cfg->dispatch && cfg->dispatch_io) {
        t->stepped = true;
        set_hint(t, true); /* no thread holds `loop`: a launch may write */
    } else if (rc == MOMENTO_OK) {
        if (pthread_create(&t->thread, NULL, io_thread, t) != 0)
            rc = MOMENTO_ERR_NO_MEMORY;
        else
            t->thread_started = true;
        if (rc == MOMENTO_OK)
            pthread_setname_np(t->thread, "momento-ps");
    }
    if (rc != MOMENTO_OK) {
        ps_close(&t->base);
        return rc;
    }
    *ret = &t->base;
    return MOMENTO_OK;
}
