/* Connections: reading, the reply order, writing, backpressure, closing
 * (conn.h says what the order guarantees). */
#include "conn.h"
#include "tls.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* A read takes at most this much per event, so one busy client cannot
 * keep the loop from the others. */
#define READ_CHUNK (64 * 1024)
/* Input and output buffers above this are given back once empty, so an
 * idle connection after a large value holds no more than this. */
#define KEEP_BYTES (64 * 1024)
/* Replies whose size is unknown when their command starts (a GET's value)
 * reserve at least this share of the reply budget each: so at most this
 * many such commands of one connection are in flight while nothing is
 * held, and a connection holds at most the budget plus this many of the
 * largest item however its client behaves. 16 keeps a redis-benchmark
 * -P 16 pipeline whole. */
#define RESERVE_SHARE 16
/* What a reply known to be small (a status, a number, an error) reserves. */
#define SMALL_REPLY 64
/* What a closing connection reads and drops, at most, of what its client
 * still sends after the write side is shut (conn_finish()). */
#define LINGER_BYTES (1024 * 1024)
/* And for how long: a client that neither closes nor sends holds a
 * connection slot no longer than this once its replies are written. */
#define LINGER_MS 2000
/* How often lingering connections are looked at (px_conns_timeout_ms()). */
#define LINGER_TICK_MS 250
/* A TLS client's handshake must finish within this, or its connection is
 * closed: a client that connects and never speaks (or speaks too slowly)
 * holds a slot of --max-connections no longer than this. */
#define HANDSHAKE_MS 10000

typedef struct px_buf {
    char *p;
    size_t off; /* consumed (input) or written (output) */
    size_t len; /* filled */
    size_t cap;
} px_buf;

struct px_reply {
    px_reply *next;
    px_conn *conn;
    px_buf buf; /* held until the reply reaches the head of the order */
    bool ended;
    bool small;       /* px_reply_small(): its reply is a status, a number
                         or an error, so it reserves next to nothing */
    size_t reserve;   /* what it holds of the connection's budget while
                         open (reply_reserve()) */
    size_t size;      /* bytes put so far */
    bool writes;      /* its command writes the claimed keys */
    uint32_t nclaims; /* hashes of the keys its command touches */
    uint64_t claim1;  /* the one key of most commands */
    uint64_t *claims; /* more than one */
    px_cmd_metrics *cmd;   /* px_reply_command(); NULL: not counted */
    int64_t began_ns;      /* the loop pass that began it (metrics.h) */
    unsigned char lead[8]; /* its first bytes: whether it is an error */
};

struct px_conn {
    px_watch watch; /* first: epoll's data.ptr */
    px_conns *set;
    const px_proto *proto;
    void *state;
    uint64_t id;
    int fd;            /* -1 once closed */
    uint32_t events;   /* what epoll watches now */
    px_buf in, out;
    px_reply *head, *tail;
    unsigned pending;  /* begun, not ended */
    /* The reply budget (limits.max_output_bytes, 4 MiB; docs/proxy.md
     * "Pipelining, ordering, backpressure"):
     * what the client has not read (out), what finished replies hold
     * while an earlier one is open (held), and what the replies still
     * open are expected to bring (reserved, each at most `est`). */
    size_t held;
    size_t reserved;
    size_t est;        /* a reply's expected size: the largest of recent
                          replies, never below the budget's 1/RESERVE_SHARE */
    bool close_after;  /* no more reading; close once written */
    bool eof;          /* nothing more is read (the client shut its side,
                          or SIGTERM): what is buffered is still served */
    bool dirty;        /* on set->dirty */
    bool paused;       /* stopped feeding at a limit: resume when drained */
    bool waiting;      /* the feed stopped at a command that must wait */
    /* That command, when it has many keys or many claims to check
     * (px_conn_keys_free()): its keys' hashes sorted, and how many claims
     * of the replies in flight hit them. A reply that ends takes its hits
     * off, so each claim is looked at once while the command waits, and
     * asking again costs nothing. */
    struct {
        uint64_t *hashes;
        size_t n;
        size_t hits;
        uint64_t first; /* the first key's hash: the same command asked again */
        bool write;
    } waiter;
    bool lingering;    /* replies written and the write side shut: what
                          the client still sends is dropped until it
                          closes (conn_finish()) */
    size_t linger_left;
    int64_t linger_until; /* CLOCK_MONOTONIC ms */
    px_backend *b;        /* its listener's: the cache it serves */
    /* TLS (tls.h); NULL: plaintext. Reads and writes go through the
     * session once its handshake is done. */
    SSL *tls;
    bool handshaking;      /* on set's handshake list, until hs_until */
    uint32_t hs_events;    /* what the handshake's next step waits for */
    int64_t hs_until;      /* CLOCK_MONOTONIC ms */
    px_conn *hs_prev, *hs_next;
    bool tls_starved;      /* the last read found the session and the socket
                              empty: only epoll can tell of more */
    bool tls_read_wants_write; /* a read waits for the socket to be writable */
    bool tls_write_wants_read; /* a write waits for it to be readable */
    /* A TLS record is half written (the socket was full): no read until it
     * is out. OpenSSL's read may have to answer a TLS 1.3 KeyUpdate, and
     * with a record still pending that write fails the session ("bad
     * length"): the review's client lost 0.7 MB of replies that way. */
    bool tls_write_blocked;
    bool tls_ready;        /* on set->ready: the session holds bytes epoll
                              will not report (px_conns_expire() reads them) */
    px_conn *ready_next;
    px_conn *dirty_next;
    px_conn *prev, *next; /* every connection not yet freed */
};

struct px_conns {
    int epfd;
    int64_t pass_ns;             /* px_conns_tick(): when this loop pass began */
    px_reply_observer observer;  /* told of each tagged reply's end */
    px_backend *b; /* the limits and counters every backend shares */
    px_conn *all;
    unsigned count;
    px_conn *dirty;
    uint64_t next_id;
    unsigned lingering; /* connections in conn_finish()'s linger */
    /* TLS handshakes under way, oldest first: each has the same time to
     * finish, so the list is in deadline order too. */
    px_conn *hs_head, *hs_tail;
    px_conn *ready;     /* TLS connections with bytes buffered in the session */
    bool draining;
};

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- buffers ---- */

static bool buf_reserve(px_buf *b, size_t more)
{
    if (b->off > 0 && b->off == b->len) {
        b->off = b->len = 0;
    }
    if (b->len + more <= b->cap)
        return true;
    if (b->off > 0 && b->len - b->off + more <= b->cap) {
        memmove(b->p, b->p + b->off, b->len - b->off);
        b->len -= b->off;
        b->off = 0;
        return true;
    }
    size_t need = b->len - b->off + more;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < need)
        cap *= 2;
    /* realloc, not malloc-copy-free: a large buffer grows in place (glibc
     * remaps it), so an unfinished 8 MB command does not leave the smaller
     * buffers it outgrew resident beside it. */
    if (b->off > 0) {
        memmove(b->p, b->p + b->off, b->len - b->off);
        b->len -= b->off;
        b->off = 0;
    }
    char *p = realloc(b->p, cap);
    if (!p)
        return false;
    b->p = p;
    b->cap = cap;
    return true;
}

static bool buf_add(px_buf *b, const void *p, size_t n)
{
    if (n == 0)
        return true;
    if (!buf_reserve(b, n))
        return false;
    memcpy(b->p + b->len, p, n);
    b->len += n;
    return true;
}

/* An empty buffer that grew past KEEP_BYTES is given back. */
static void buf_trim(px_buf *b)
{
    if (b->off == b->len && b->cap > KEEP_BYTES) {
        free(b->p);
        *b = (px_buf){0};
    }
}

static void buf_free(px_buf *b)
{
    free(b->p);
    *b = (px_buf){0};
}

static void reply_free(px_reply *r);

/* ---- the loop's view ---- */

static void mark_dirty(px_conn *c)
{
    if (!c->dirty) {
        c->dirty = true;
        c->dirty_next = c->set->dirty;
        c->set->dirty = c;
    }
}

static void watch(px_conn *c, uint32_t events)
{
    if (c->fd < 0 || c->events == events)
        return;
    struct epoll_event ev = {.events = events, .data.ptr = &c->watch};
    if (epoll_ctl(c->set->epfd, EPOLL_CTL_MOD, c->fd, &ev) == 0)
        c->events = events;
}

/* Takes a connection off the handshake list (its handshake is done, or it
 * closes). */
static void hs_remove(px_conn *c)
{
    if (!c->handshaking)
        return;
    px_conns *s = c->set;
    if (c->hs_prev)
        c->hs_prev->hs_next = c->hs_next;
    else
        s->hs_head = c->hs_next;
    if (c->hs_next)
        c->hs_next->hs_prev = c->hs_prev;
    else
        s->hs_tail = c->hs_prev;
    c->hs_prev = c->hs_next = NULL;
    c->handshaking = false;
}

/* The socket is closed now; the memory stays until no reply is pending. */
static void conn_close(px_conn *c)
{
    if (c->fd < 0)
        return;
    epoll_ctl(c->set->epfd, EPOLL_CTL_DEL, c->fd, NULL);
    if (c->tls) {
        /* Best effort: the client can tell the end of the replies from a
         * cut stream. Nothing is sent after a failed handshake. */
        px_tls_close_notify(c->tls);
        px_tls_session_free(c->tls);
        c->tls = NULL;
    }
    hs_remove(c);
    close(c->fd);
    c->fd = -1;
    c->close_after = true;
    if (c->lingering) {
        c->lingering = false;
        c->set->lingering--;
    }
    c->b->stats->connections--;
    buf_free(&c->in);
    buf_free(&c->out);
    for (px_reply *r = c->head; r; r = r->next)
        buf_free(&r->buf);
    c->held = 0;
    if (c->proto->closed && c->state)
        c->proto->closed(c);
    c->state = NULL;
    mark_dirty(c);
}

static void waiter_clear(px_conn *c)
{
    free(c->waiter.hashes);
    c->waiter.hashes = NULL;
    c->waiter.n = c->waiter.hits = 0;
}

static void conn_free(px_conn *c)
{
    waiter_clear(c);
    px_conns *s = c->set;
    px_reply *r = c->head;
    while (r) { /* all ended: pending is 0 */
        px_reply *n = r->next;
        reply_free(r);
        r = n;
    }
    if (c->prev)
        c->prev->next = c->next;
    else
        s->all = c->next;
    if (c->next)
        c->next->prev = c->prev;
    s->count--;
    free(c);
}

/* ---- replies ---- */

static void reply_free(px_reply *r)
{
    buf_free(&r->buf);
    free(r->claims);
    free(r);
}

static uint64_t key_hash(const px_str *k)
{
    uint64_t h = 14695981039346656037ull;
    for (size_t i = 0; i < k->n; i++)
        h = (h ^ (unsigned char)k->p[i]) * 1099511628211ull;
    return h;
}

static bool reply_has(const px_reply *r, uint64_t h)
{
    if (r->nclaims == 1)
        return r->claim1 == h;
    for (uint32_t i = 0; i < r->nclaims; i++)
        if (r->claims[i] == h)
            return true;
    return false;
}

static uint64_t claim_at(const px_reply *r, uint32_t i)
{
    return r->nclaims == 1 ? r->claim1 : r->claims[i];
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* How many claims of r hit the waiter's keys. */
static size_t waiter_hits(const px_conn *c, const px_reply *r)
{
    size_t hits = 0;
    for (uint32_t i = 0; i < r->nclaims; i++) {
        uint64_t h = claim_at(r, i);
        if (bsearch(&h, c->waiter.hashes, c->waiter.n, sizeof(h), cmp_u64))
            hits++;
    }
    return hits;
}

/* Whether an open reply's claims can stop a command that writes (or only
 * reads) its keys. */
static bool may_block(const px_reply *r, bool write)
{
    return !r->ended && r->nclaims > 0 && (write || r->writes);
}

bool px_conn_keys_free(px_conn *c, const px_str *keys, size_t n, size_t step, bool write)
{
    size_t nk = step ? (n + step - 1) / step : 0;
    if (nk == 0)
        return true;
    uint64_t first = key_hash(&keys[0]);
    if (c->waiter.hashes) {
        if (c->waiter.n == nk && c->waiter.first == first && c->waiter.write == write) {
            if (c->waiter.hits > 0)
                return false;
            waiter_clear(c);
            return true;
        }
        waiter_clear(c); /* another command: not the one that waited */
    }
    size_t claims = 0;
    for (const px_reply *r = c->head; r; r = r->next)
        if (may_block(r, write))
            claims += r->nclaims;
    if (claims == 0)
        return true;
    uint64_t *h = nk * claims > 256 ? malloc(nk * sizeof(*h)) : NULL;
    if (!h) {
        /* Few keys against few claims: compare them all. */
        for (const px_reply *r = c->head; r; r = r->next) {
            if (!may_block(r, write))
                continue;
            for (size_t i = 0; i < n; i += step)
                if (reply_has(r, i == 0 ? first : key_hash(&keys[i])))
                    return false;
        }
        return true;
    }
    /* Many: sort the command's hashes once and look each claim up, so one
     * command of a million keys behind a million claims costs about
     * (keys + claims) log keys, not their product. */
    for (size_t i = 0, k = 0; i < n; i += step)
        h[k++] = i == 0 ? first : key_hash(&keys[i]);
    qsort(h, nk, sizeof(*h), cmp_u64);
    c->waiter.hashes = h;
    c->waiter.n = nk;
    c->waiter.first = first;
    c->waiter.write = write;
    c->waiter.hits = 0;
    for (const px_reply *r = c->head; r; r = r->next)
        if (may_block(r, write))
            c->waiter.hits += waiter_hits(c, r);
    if (c->waiter.hits > 0)
        return false;
    waiter_clear(c);
    return true;
}

void px_reply_claim(px_reply *r, const px_str *keys, size_t n, size_t step, bool write)
{
    size_t count = step ? (n + step - 1) / step : 0;
    r->writes = write;
    if (count == 0)
        return;
    if (count == 1) {
        r->claim1 = key_hash(&keys[0]);
        r->nclaims = 1;
        return;
    }
    r->claims = malloc(count * sizeof(*r->claims));
    if (!r->claims) {
        /* Without a record the command could be overtaken: close rather
         * than risk answering out of order. */
        conn_close(r->conn);
        return;
    }
    for (size_t i = 0, k = 0; i < n; i += step)
        r->claims[k++] = key_hash(&keys[i]);
    r->nclaims = (uint32_t)count;
}

void px_conn_wait(px_conn *c)
{
    c->waiting = true;
}

px_reply *px_reply_begin(px_conn *c)
{
    if (c->fd < 0)
        return NULL;
    px_reply *r = calloc(1, sizeof(*r));
    if (!r) {
        conn_close(c);
        return NULL;
    }
    r->conn = c;
    r->began_ns = c->set->pass_ns;
    r->reserve = c->est;
    c->reserved += r->reserve;
    if (c->tail)
        c->tail->next = r;
    else
        c->head = r;
    c->tail = r;
    c->pending++;
    return r;
}

void px_reply_put(px_reply *r, const void *p, size_t n)
{
    px_conn *c = r->conn;
    if (c->fd < 0 || n == 0)
        return;
    bool ok;
    if (r->size < sizeof(r->lead))
        memcpy(r->lead + r->size, p,
               n < sizeof(r->lead) - r->size ? n : sizeof(r->lead) - r->size);
    r->size += n;
    if (r == c->head) {
        ok = buf_add(&c->out, p, n);
        mark_dirty(c);
    } else {
        ok = buf_add(&r->buf, p, n);
        c->held += n;
    }
    if (!ok)
        conn_close(c);
}

void px_reply_puts(px_reply *r, const char *s)
{
    px_reply_put(r, s, strlen(s));
}

void px_reply_printf(px_reply *r, const char *fmt, ...)
{
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof(small), fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n < sizeof(small)) {
        px_reply_put(r, small, (size_t)n);
        return;
    }
    char *big = malloc((size_t)n + 1);
    if (!big) {
        conn_close(r->conn);
        return;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    px_reply_put(r, big, (size_t)n);
    free(big);
}

void px_reply_small(px_reply *r)
{
    if (r->ended || r->reserve <= SMALL_REPLY)
        return;
    r->conn->reserved -= r->reserve - SMALL_REPLY;
    r->reserve = SMALL_REPLY;
    r->small = true;
}

/* The expected size of a reply whose command is about to start: the
 * largest of recent replies, forgotten slowly (an eighth of the way down
 * per smaller reply), never below the floor. */
static void learn_size(px_conn *c, size_t size)
{
    size_t floor = c->b->limits.max_output_bytes / RESERVE_SHARE;
    if (size < floor)
        size = floor;
    if (size >= c->est)
        c->est = size;
    else
        c->est -= (c->est - size) / 8;
}

void px_reply_end(px_reply *r)
{
    px_conn *c = r->conn;
    if (c->waiter.hashes && may_block(r, c->waiter.write))
        c->waiter.hits -= waiter_hits(c, r);
    r->ended = true;
    c->pending--;
    c->reserved -= r->reserve;
    r->reserve = 0;
    if (!r->small)
        learn_size(c, r->size);
    if (r->cmd && c->set->observer)
        c->set->observer(r->cmd, r->lead, r->size, r->began_ns);
    /* This reply may be what the feed waits for (its keys, a flush): the
     * next feed finds out, and waits again if it must. Left set, the flag
     * could outlive its cause and leave the connection unwatched. */
    c->waiting = false;
    mark_dirty(c);
    if (r != c->head)
        return;
    /* The head ended: every ended reply behind it is written now, and the
     * first one still open becomes the head, its bytes so far with them. */
    while (c->head && c->head->ended) {
        px_reply *h = c->head;
        c->head = h->next;
        if (!c->head)
            c->tail = NULL;
        reply_free(h);
        px_reply *n = c->head;
        if (n && c->fd >= 0 && n->buf.len > n->buf.off) {
            c->held -= n->buf.len - n->buf.off;
            if (!buf_add(&c->out, n->buf.p + n->buf.off, n->buf.len - n->buf.off))
                conn_close(c);
            buf_free(&n->buf);
        }
    }
}

px_conn *px_reply_conn(const px_reply *r)
{
    return r->conn;
}

void px_reply_command(px_reply *r, px_cmd_metrics *m)
{
    r->cmd = m;
}

/* ---- the connection, for protocols ---- */

px_backend *px_conn_backend(const px_conn *c)
{
    return c->b;
}

bool px_conn_can_start(const px_conn *c)
{
    const px_limits *l = &c->b->limits;
    if (c->fd < 0 || c->close_after || c->pending >= l->max_in_flight)
        return false;
    size_t unread = c->out.len - c->out.off;
    if (unread >= l->max_output_bytes)
        return false;
    /* The next command's reply must fit beside what is unread, held and
     * expected; the first command in flight always may start, or a reply
     * larger than the budget could never be asked for. */
    return c->pending == 0 || unread + c->held + c->reserved + c->est <= l->max_output_bytes;
}

size_t px_conn_held_bytes(const px_conn *c)
{
    return c->out.len - c->out.off + c->held;
}

size_t px_conn_output_bytes(const px_conn *c)
{
    return c->out.len - c->out.off;
}

unsigned px_conn_pending(const px_conn *c)
{
    return c->pending;
}

void px_conn_close_after(px_conn *c)
{
    c->close_after = true;
    mark_dirty(c);
}

void px_conn_abort(px_conn *c)
{
    conn_close(c);
}

bool px_conn_closing(const px_conn *c)
{
    return c->close_after || c->fd < 0;
}

void *px_conn_state(const px_conn *c)
{
    return c->state;
}

void *px_conn_state_or_new(px_conn *c, size_t size)
{
    if (!c->state) {
        c->state = calloc(1, size);
        if (!c->state)
            px_conn_abort(c);
    }
    return c->state;
}

uint64_t px_conn_id(const px_conn *c)
{
    return c->id;
}

const px_proto *px_conn_proto(const px_conn *c)
{
    return c->proto;
}

void px_conns_each(const px_conns *s, void (*fn)(const px_conn *c, void *ud), void *ud)
{
    for (const px_conn *c = s->all; c; c = c->next)
        if (c->fd >= 0)
            fn(c, ud);
}

/* ---- reading and writing ---- */

/* Feeds the protocol what is buffered; pauses at a limit. */
static void conn_feed(px_conn *c)
{
    px_buf *in = &c->in;
    c->waiting = false;
    while (c->fd >= 0 && in->len > in->off && px_conn_can_start(c) && !c->waiting) {
        size_t before = in->len - in->off;
        size_t used = c->proto->feed(c, in->p + in->off, before);
        if (c->fd < 0)
            return; /* aborted: the buffer is gone */
        in->off += used;
        if (used == 0)
            break; /* an incomplete command: wait for more */
    }
    if (c->fd < 0)
        return;
    if (in->len - in->off > c->b->limits.max_request_bytes + 1024) {
        /* The protocol checks announced lengths itself; this catches a
         * command that never ends (a line without its newline). */
        c->b->stats->protocol_errors++;
        conn_close(c);
        return;
    }
    buf_trim(in);
    c->paused = in->len > in->off && (!px_conn_can_start(c) || c->waiting) && !c->close_after;
}

/* Every reply is written and the connection is to close. A client still
 * sending (a pipeline past a protocol error, commands after QUIT) would
 * make close() answer with a reset, and a reset can reach the client
 * before it has read the replies written just before it: the last
 * replies would be lost. So the write side is shut first (the replies,
 * then FIN), and what the client still sends is read and dropped until
 * it closes, LINGER_BYTES at most. A client that already shut its side,
 * or a SIGTERM drain, closes at once. Over TLS the same, with close_notify
 * written before the write side is shut, and what the client sends after
 * it read from the socket as it is, undecrypted. */
static void conn_finish(px_conn *c)
{
    if (c->eof || c->set->draining) {
        conn_close(c);
        return;
    }
    if (c->tls) {
        /* TLS's end of the replies before TCP's; what the client still
         * sends is dropped unread (conn_linger_read()), so the session
         * and its buffers go now. */
        px_tls_close_notify(c->tls);
        px_tls_session_free(c->tls);
        c->tls = NULL;
    }
    if (shutdown(c->fd, SHUT_WR) != 0) {
        conn_close(c);
        return;
    }
    c->lingering = true;
    c->set->lingering++;
    c->linger_left = LINGER_BYTES;
    c->linger_until = mono_ms() + LINGER_MS;
    buf_free(&c->in);
    /* Nothing more is served: the protocol's state (subscriptions among
     * it) ends now, not when the client closes. */
    if (c->proto->closed && c->state)
        c->proto->closed(c);
    c->state = NULL;
}

static void conn_linger_read(px_conn *c)
{
    char sink[16 * 1024];
    for (;;) {
        ssize_t n = read(c->fd, sink, sizeof(sink));
        if (n > 0 && (size_t)n < c->linger_left) {
            c->linger_left -= (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        conn_close(c); /* its end, an error, or more than LINGER_BYTES */
        return;
    }
}

/* Whether the connection is finished once its replies are written. */
static bool conn_done(const px_conn *c)
{
    return c->close_after || (c->eof && !c->paused);
}

/* What conn_recv() and conn_send() return when they move no bytes. */
#define IO_AGAIN (-1) /* nothing now: epoll says when */
#define IO_ERROR (-2) /* the connection is unusable */

/* Reads into p[0, n) from the socket, or through its TLS session: the
 * bytes read, 0 at the client's end of stream (TLS: its close_notify, or
 * its end of the TCP stream), or IO_AGAIN / IO_ERROR. */
static ssize_t conn_recv(px_conn *c, char *p, size_t n)
{
    if (c->tls) {
        ssize_t r = px_tls_read(c->tls, p, n);
        switch (r) {
        case PX_TLS_WANT_READ: c->tls_starved = true; return IO_AGAIN;
        case PX_TLS_WANT_WRITE: c->tls_read_wants_write = true; return IO_AGAIN;
        case PX_TLS_CLOSED: return 0;
        case PX_TLS_FAILED: return IO_ERROR;
        default: return r;
        }
    }
    for (;;) {
        ssize_t r = read(c->fd, p, n);
        if (r >= 0)
            return r;
        if (errno != EINTR)
            return errno == EAGAIN || errno == EWOULDBLOCK ? IO_AGAIN : IO_ERROR;
    }
}

/* Writes from p[0, n) to the socket or its TLS session: the bytes taken,
 * or IO_AGAIN / IO_ERROR. After IO_AGAIN over TLS the next call must offer
 * the same bytes again (and maybe more after them), which the output
 * buffer does: its offset moves only when bytes are taken. */
static ssize_t conn_send(px_conn *c, const char *p, size_t n)
{
    if (c->tls) {
        ssize_t r = px_tls_write(c->tls, p, n);
        switch (r) {
        case PX_TLS_WANT_WRITE: c->tls_write_blocked = true; return IO_AGAIN;
        case PX_TLS_WANT_READ: c->tls_write_wants_read = true; return IO_AGAIN;
        case PX_TLS_CLOSED:
        case PX_TLS_FAILED: return IO_ERROR;
        default: return r;
        }
    }
    for (;;) {
        ssize_t r = send(c->fd, p, n, MSG_NOSIGNAL);
        if (r >= 0)
            return r;
        if (errno != EINTR)
            return errno == EAGAIN || errno == EWOULDBLOCK ? IO_AGAIN : IO_ERROR;
    }
}

static void conn_read(px_conn *c)
{
    if (c->tls_write_blocked)
        return; /* the pending record first (tls_write_blocked) */
    size_t got = 0;
    c->tls_starved = c->tls_read_wants_write = false;
    while (c->fd >= 0 && got < READ_CHUNK) {
        if (!buf_reserve(&c->in, 16 * 1024)) {
            conn_close(c);
            return;
        }
        ssize_t n = conn_recv(c, c->in.p + c->in.len, c->in.cap - c->in.len);
        if (n > 0) {
            c->in.len += (size_t)n;
            got += (size_t)n;
            c->b->stats->bytes_in += (uint64_t)n;
            continue;
        }
        if (n == 0) {
            /* The client is done sending: answer what it sent, then close. */
            c->eof = true;
            break;
        }
        if (n == IO_ERROR)
            conn_close(c);
        break;
    }
    if (c->fd < 0)
        return;
    conn_feed(c);
    mark_dirty(c);
}

static void conn_write(px_conn *c)
{
    px_buf *out = &c->out;
    if (c->handshaking)
        return; /* nothing was read yet, so nothing is to be written */
    c->tls_write_wants_read = c->tls_write_blocked = false;
    while (c->fd >= 0 && out->len > out->off) {
        ssize_t n = conn_send(c, out->p + out->off, out->len - out->off);
        if (n > 0) {
            out->off += (size_t)n;
            c->b->stats->bytes_out += (uint64_t)n;
            continue;
        }
        if (n == IO_AGAIN)
            break;
        conn_close(c); /* the client went away */
        return;
    }
    buf_trim(out);
}

/* The TLS handshake's next step; once done, what the client sent after
 * it, which the session may already hold, is read at once. */
static void conn_handshake(px_conn *c)
{
    int r = px_tls_handshake(c->tls);
    if (r == 1) {
        hs_remove(c);
        conn_read(c);
        return;
    }
    if (r == PX_TLS_WANT_READ || r == PX_TLS_WANT_WRITE) {
        c->hs_events = r == PX_TLS_WANT_READ ? EPOLLIN : EPOLLOUT;
        return;
    }
    /* Plaintext on a TLS port, a client certificate refused, a client gone:
     * closed, nothing answered (as redis-server does). */
    c->b->stats->tls_handshake_failures++;
    conn_close(c);
}

/* What the connection waits for now. */
static void conn_rewatch(px_conn *c)
{
    if (c->fd < 0)
        return;
    if (c->lingering) {
        watch(c, EPOLLIN);
        return;
    }
    if (c->handshaking) {
        watch(c, c->hs_events);
        return;
    }
    uint32_t ev = 0;
    bool reading = !c->close_after && !c->paused && !c->eof && !c->tls_write_blocked;
    bool writing = c->out.len > c->out.off;
    if (reading)
        ev |= EPOLLIN;
    if (writing)
        ev |= EPOLLOUT;
    if (c->tls) {
        if (reading && c->tls_read_wants_write)
            ev |= EPOLLOUT;
        if (writing && c->tls_write_wants_read)
            ev |= EPOLLIN;
        /* Bytes the session read ahead, or decrypted and a read stopped
         * short of (READ_CHUNK, a pause), are not in the socket: epoll
         * would never wake for them, and a client waiting for the replies
         * to a command held there would wait forever. */
        if (reading && !c->tls_starved && !c->tls_read_wants_write && !c->tls_ready &&
            px_tls_buffered(c->tls)) {
            c->tls_ready = true;
            c->ready_next = c->set->ready;
            c->set->ready = c;
        }
    }
    watch(c, ev);
}

/* ---- the set ---- */

px_conns *px_conns_new(int epfd, px_backend *b)
{
    px_conns *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->epfd = epfd;
    s->b = b;
    s->next_id = 1;
    return s;
}

void px_conns_accept(px_conns *s, int fd, const px_proto *p, px_backend *b, px_tls *tls)
{
    if (s->draining || b->stats->connections >= b->limits.max_connections) {
        b->stats->connections_rejected++;
        /* A TLS client is not answered in plaintext, and its handshake is
         * not waited for: the refusal is the close. */
        if (p->refused && !tls)
            (void)!send(fd, p->refused, strlen(p->refused), MSG_NOSIGNAL | MSG_DONTWAIT);
        close(fd);
        return;
    }
    px_conn *c = calloc(1, sizeof(*c));
    if (!c) {
        close(fd);
        return;
    }
    if (tls && !(c->tls = px_tls_session(tls, fd))) {
        free(c);
        close(fd);
        return;
    }
    c->watch.kind = PX_WATCH_CONN;
    c->set = s;
    c->b = b;
    c->proto = p;
    c->fd = fd;
    c->id = s->next_id++;
    c->est = b->limits.max_output_bytes / RESERVE_SHARE;
    c->events = EPOLLIN;
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &c->watch};
    if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
        px_tls_session_free(c->tls);
        close(fd);
        free(c);
        return;
    }
    if (c->tls) {
        /* The client speaks first (its ClientHello). */
        c->handshaking = true;
        c->hs_events = EPOLLIN;
        c->hs_until = mono_ms() + HANDSHAKE_MS;
        c->hs_prev = s->hs_tail;
        if (s->hs_tail)
            s->hs_tail->hs_next = c;
        else
            s->hs_head = c;
        s->hs_tail = c;
    }
    c->next = s->all;
    if (s->all)
        s->all->prev = c;
    s->all = c;
    s->count++;
    b->stats->connections++;
    b->stats->connections_total++;
}

void px_conns_event(px_conns *s, px_watch *w, uint32_t events)
{
    (void)s;
    px_conn *c = (px_conn *)w;
    if (c->fd < 0)
        return;
    if (c->lingering) {
        conn_linger_read(c);
        mark_dirty(c);
        return;
    }
    if (c->handshaking) {
        conn_handshake(c);
        mark_dirty(c);
        return; /* a dead socket fails the handshake's next step */
    }
    /* A TLS read or write may wait for the other direction. */
    bool in = events & (EPOLLIN | EPOLLHUP | EPOLLERR), out = events & EPOLLOUT;
    bool write_now = out || (in && c->tls_write_wants_read);
    bool read_now = in || (out && c->tls_read_wants_write);
    if (write_now) {
        conn_write(c);
        mark_dirty(c);
    }
    if (read_now)
        conn_read(c);
    /* Both directions are shut (or the socket failed): no reply can be
     * delivered, and level-triggered HUP would wake the loop until the
     * pending replies end. */
    if (events & (EPOLLHUP | EPOLLERR))
        conn_close(c);
}

void px_conns_flush(px_conns *s)
{
    /* Feeding can end replies at once (PING, errors), which dirties the
     * connection again: loop until nothing is dirty. */
    while (s->dirty) {
        px_conn *list = s->dirty;
        s->dirty = NULL;
        for (px_conn *c = list; c;) {
            px_conn *next = c->dirty_next;
            c->dirty = false;
            c->dirty_next = NULL;
            if (c->fd >= 0) {
                if (c->paused && px_conn_can_start(c))
                    conn_feed(c);
                conn_write(c);
                /* Paused at the output limit, and the write just took it
                 * below: feed again now, as nothing else would wake it
                 * (no reply pending, nothing left to write). A connection
                 * waiting on its own earlier commands' keys is woken when
                 * those replies end, so it must not spin here. */
                if (c->fd >= 0 && c->paused && !c->waiting && px_conn_can_start(c))
                    mark_dirty(c);
                if (c->fd >= 0 && !c->lingering && conn_done(c) && c->pending == 0 &&
                    c->out.len == c->out.off)
                    conn_finish(c);
                conn_rewatch(c);
            }
            /* One on the ready list is freed once px_conns_expire() has
             * taken it off (it marks it dirty). */
            if (c->fd < 0 && c->pending == 0 && !c->dirty && !c->tls_ready)
                conn_free(c);
            c = next;
        }
    }
}

int px_conns_timeout_ms(const px_conns *s)
{
    if (s->ready)
        return 0;
    int ms = s->lingering ? LINGER_TICK_MS : -1;
    if (s->hs_head) {
        int64_t left = s->hs_head->hs_until - mono_ms();
        if (left < 0)
            left = 0;
        if (ms < 0 || left < ms)
            ms = (int)left;
    }
    return ms;
}

void px_conns_expire(px_conns *s)
{
    /* TLS bytes epoll does not report: a read each, as an event would
     * give (READ_CHUNK at most), so other connections take their turns. */
    px_conn *ready = s->ready;
    s->ready = NULL;
    while (ready) {
        px_conn *c = ready;
        ready = c->ready_next;
        c->ready_next = NULL;
        c->tls_ready = false;
        /* As conn_rewatch() left it: still reading (an event of this
         * pass may have paused or closed it since). */
        if (c->fd >= 0 && c->tls && !c->lingering && !c->close_after && !c->paused && !c->eof)
            conn_read(c);
        mark_dirty(c);
    }
    if (!s->lingering && !s->hs_head)
        return;
    int64_t now = mono_ms();
    while (s->hs_head && now >= s->hs_head->hs_until) {
        px_conn *c = s->hs_head;
        c->b->stats->tls_handshake_timeouts++;
        conn_close(c); /* takes it off the list */
        mark_dirty(c);
    }
    if (!s->lingering)
        return;
    for (px_conn *c = s->all; c; c = c->next)
        if (c->lingering && now >= c->linger_until) {
            conn_close(c);
            mark_dirty(c);
        }
}

void px_conns_tick(px_conns *s)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    s->pass_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void px_conns_observe(px_conns *s, px_reply_observer fn)
{
    s->observer = fn;
}

void px_conns_drain(px_conns *s)
{
    s->draining = true;
    for (px_conn *c = s->all; c; c = c->next) {
        c->eof = true;
        if (c->lingering)
            conn_close(c);
        mark_dirty(c);
    }
}

unsigned px_conns_count(const px_conns *s)
{
    return s->count;
}

void px_conns_close_all(px_conns *s)
{
    for (px_conn *c = s->all; c; c = c->next)
        conn_close(c);
}

void px_conns_free(px_conns *s)
{
    if (!s)
        return;
    px_conn *c = s->all;
    while (c) {
        px_conn *n = c->next;
        conn_close(c);
        c = n;
    }
    s->dirty = NULL;
    for (c = s->all; c; c = c->next)
        c->tls_ready = false;
    s->ready = NULL;
    c = s->all;
    while (c) {
        px_conn *n = c->next;
        c->dirty = false;
        if (c->pending == 0)
            conn_free(c);
        c = n;
    }
    /* A connection still pending here would be reached by a callback of a
     * client not yet freed: the caller frees the client first. */
    free(s);
}
