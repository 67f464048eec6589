/* Webhooks: the registry each cache's webhooks live in, and their
 * deliveries, which POST published items to them (srv_webhooks.h;
 * docs/server.md "Webhooks" says which parts of the format are Momento's
 * documented ones and which are inferred).
 *
 * Each webhook has a *box*: its deliveries waiting, in publish order, and
 * whether one is being sent. A publish only queues (a copy of the item and
 * names, charged to the store before it is kept), into its webhook's box;
 * the delivery thread (`momento-webhook`) sends from every box at once, at
 * most one delivery per box at a time (so each webhook hears its items in
 * order) and MAX_SENDING in all, over non-blocking connections it polls
 * together: a receiver that never answers holds only its own box, until
 * the timeout. Host names that are not addresses are looked up on a second
 * thread (`momento-wh-dns`, started with the first), since getaddrinfo()
 * blocks; addresses never wait for it. Each delivery is sent once
 * (Momento: "one time", no redrive), giving up at the timeout; a stop cuts
 * every one short through the wake pipe the thread polls.
 *
 * Room: a box holds at most max_items and BOX_MAX_BYTES waiting (but
 * always one delivery, whatever its size); all deliveries together, waiting
 * and being sent, at most ALL_MAX_BYTES, or a quarter of --max-memory if
 * that is less (so that a dead receiver's backlog never leaves the store
 * without room for publishes and items), and what the store can charge.
 * When either of the last two is short, the box with the most bytes
 * waiting gives up its oldest, unless that is the publishing webhook's own
 * box: then its new delivery is dropped. So a webhook's backlog costs only
 * its own deliveries.
 *
 * Memory is charged to the store with the server's turn (a publish) and
 * given back with it: the delivery thread frees a sent delivery without
 * the turn, and takes the turn to uncharge what it freed (a publish also
 * settles what is owed before it charges). */
#include "core/srv_webhooks.h"

#include "core/srv_server.h"
#include "data/srv_list.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include <uthash.h>

#define SECRET_BYTES 32
#define SECRET_HEX (2 * SECRET_BYTES)
/* What all deliveries may hold together, waiting and being sent: their
 * copies of the items and names and the buffers that send them; and the
 * share of --max-memory they may hold, if that is less. */
#define ALL_MAX_BYTES (64u * 1024u * 1024u)
#define MEMORY_SHARE 4u
/* What one webhook may have waiting: an eighth of ALL_MAX_BYTES, so that
 * up to eight webhooks' full backlogs fit before that bound is reached. */
#define BOX_MAX_BYTES (ALL_MAX_BYTES / 8u)
/* Deliveries being sent at once (each a connection); beyond it, webhooks
 * with deliveries waiting take their turn as one ends, first come first
 * served. */
#define MAX_SENDING 128
/* Momento's, as its docs give it (docs/server.md "Webhooks"). */
#define USER_AGENT "Momento/1.0 (Webhooks; +https://docs.momentohq.com/topics/webhooks)"

typedef struct hook hook;
typedef struct hook_topic hook_topic;
typedef struct box box;

/* A webhook. `key` is "cache\0name"; `cache` and `name` point into it. */
struct hook {
    UT_hash_handle hh;
    char *key;
    size_t key_len;
    const char *cache, *name;
    char *topic, *url;
    char *host, *port, *path; /* the URL's parts, as the delivery needs them */
    char secret[SECRET_HEX + 1];
    box *box;                 /* its deliveries; kept when it is put again */
    hook_topic *t;
    hook *tprev, *tnext;
};

/* The webhooks on one topic of one cache; `key` is "cache\0topic". */
struct hook_topic {
    UT_hash_handle hh;
    char *key;
    size_t key_len;
    hook *head;
};

/* One delivery: everything the thread needs, in one block. `cost` is what
 * it is charged: this block and the connection (conn) that sends it, whose
 * buffers' sizes are worked out here. */
typedef struct job {
    struct job *next;
    uint64_t cost;
    size_t head_cap, body_cap;
    const char *cache, *topic, *host, *port, *path; /* into data, after the value */
    char secret[SECRET_HEX + 1];
    uint64_t seq;
    int64_t event_ms;
    bool is_text;
    size_t len;
    unsigned char data[];
} job;

/* One webhook's deliveries (under the queue's lock). Apart from the hook,
 * so that a PutWebhook pointing the webhook elsewhere keeps its queue, and
 * a delivery being sent when its webhook is deleted can finish: the box is
 * freed then, by the thread. */
struct box {
    box *prev, *next;   /* every box */
    box *rprev, *rnext; /* the ready list: something waiting, nothing being sent */
    job *head, *tail;   /* waiting, oldest first */
    size_t n;
    uint64_t bytes;     /* their costs */
    bool ready, sending, deleted;
};

/* A host name to look up, and then its answer. */
typedef struct lookup {
    struct lookup *next;
    uint64_t conn_id;
    struct addrinfo *ai;
    int rc;
    const char *port;
    char host[];        /* then the port */
} lookup;

struct srv_webhooks {
    momento_local *s;
    /* The registry: the server's state, with the turn. */
    hook *by_key;
    hook_topic *by_topic;
    uint32_t timeout_ms, max_items;
    uint64_t max_bytes; /* ALL_MAX_BYTES, or the share of --max-memory */
    /* The rest under `mu`, taken after the turn when both are. */
    pthread_mutex_t mu;
    box *boxes;
    box *ready_head, *ready_tail;
    size_t n_waiting, n_sending;
    uint64_t held;      /* the costs of the deliveries waiting and being sent */
    uint64_t unsettled; /* freed, and not yet uncharged (that takes the turn) */
    bool stop, started, kicked;
    pthread_t thread;
    int wake[2];        /* the delivery thread polls [0]: work, lookups done, stop */
    /* The lookups' thread, started by the delivery thread. */
    pthread_cond_t lookup_cv;
    lookup *todo, *todo_tail, *done;
    bool lookups_started;
    pthread_t lookup_thread;
    atomic_uint_fast64_t queued, delivered, rejected, timed_out, failed, dropped;
    atomic_uint_fast64_t dropped_full, dropped_global, dropped_memory;
};

typedef enum { KEPT, DROP_FULL, DROP_GLOBAL, DROP_MEMORY } admission;

/* ---- time, text --------------------------------------------------------- */

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static char *dup_n(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

/* A buffer of fixed capacity for the body and the request head; with no
 * `p` it only counts, which is how a publish learns the capacities to
 * charge. */
typedef struct buf {
    char *p;
    size_t len, cap;
    bool failed;
} buf;

static void put(buf *b, const void *s, size_t n)
{
    if (b->p && !b->failed) {
        if (b->cap - b->len < n)
            b->failed = true;
        else
            memcpy(b->p + b->len, s, n);
    }
    b->len += n;
}

static void puts_(buf *b, const char *s)
{
    put(b, s, strlen(s));
}

/* A JSON string: quotes, backslashes and control characters escaped, the
 * rest (valid UTF-8, as every string here is) as it is. */
static void put_json_string(buf *b, const unsigned char *s, size_t n)
{
    put(b, "\"", 1);
    size_t from = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = s[i];
        if (ch >= 0x20 && ch != '"' && ch != '\\')
            continue;
        put(b, s + from, i - from);
        char esc[8];
        if (ch == '"' || ch == '\\')
            snprintf(esc, sizeof(esc), "\\%c", ch);
        else if (ch == '\n')
            snprintf(esc, sizeof(esc), "\\n");
        else
            snprintf(esc, sizeof(esc), "\\u%04x", ch);
        puts_(b, esc);
        from = i + 1;
    }
    put(b, s + from, n - from);
    put(b, "\"", 1);
}

static void put_base64(buf *b, const unsigned char *s, size_t n)
{
    static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)s[i] << 16 | (i + 1 < n ? (unsigned)s[i + 1] << 8 : 0) |
                     (i + 2 < n ? s[i + 2] : 0);
        char out[4] = {a[v >> 18 & 63], a[v >> 12 & 63], i + 1 < n ? a[v >> 6 & 63] : '=',
                       i + 2 < n ? a[v & 63] : '='};
        put(b, out, 4);
    }
}

/* What a body holds: its publish's, and the time it is sent. */
typedef struct body_parts {
    const char *cache, *topic;
    int64_t event_ms, publish_ms;
    uint64_t seq;
    bool is_text;
    const unsigned char *value;
    size_t len;
} body_parts;

/* The body Momento documents, compact, its fields in the documented order;
 * a binary item carries its bytes as base64 in "binary" where a text item
 * has "text" (inferred: docs/server.md). */
static void build_body(buf *b, const body_parts *p)
{
    char num[32];
    puts_(b, "{\"cache\":");
    put_json_string(b, (const unsigned char *)p->cache, strlen(p->cache));
    puts_(b, ",\"topic\":");
    put_json_string(b, (const unsigned char *)p->topic, strlen(p->topic));
    snprintf(num, sizeof(num), "%lld", (long long)p->event_ms);
    puts_(b, ",\"event_timestamp\":");
    puts_(b, num);
    snprintf(num, sizeof(num), "%lld", (long long)p->publish_ms);
    puts_(b, ",\"publish_timestamp\":");
    puts_(b, num);
    snprintf(num, sizeof(num), "%llu", (unsigned long long)p->seq);
    puts_(b, ",\"topic_sequence_number\":");
    puts_(b, num);
    /* momento-local's publishes carry no token id (their items' publisher
     * id is empty too): "" as Momento sends for a key without one. */
    puts_(b, ",\"token_id\":\"\"");
    if (p->is_text) {
        puts_(b, ",\"text\":");
        put_json_string(b, p->value, p->len);
    } else {
        puts_(b, ",\"binary\":\"");
        put_base64(b, p->value, p->len);
        puts_(b, "\"");
    }
    puts_(b, "}");
}

static void build_head(buf *b, const char *path, const char *host, const char *port,
                       size_t body_len, const char *sig)
{
    char num[32];
    snprintf(num, sizeof(num), "%zu", body_len);
    puts_(b, "POST ");
    puts_(b, path);
    puts_(b, " HTTP/1.1\r\nHost: ");
    /* An IPv6 address (the only host with a colon) in its brackets, as in
     * the URL (RFC 7230 5.4, RFC 3986 3.2.2): "[::1]:8080". */
    bool v6 = strchr(host, ':') != NULL;
    if (v6)
        puts_(b, "[");
    puts_(b, host);
    if (v6)
        puts_(b, "]");
    if (strcmp(port, "80") != 0) {
        puts_(b, ":");
        puts_(b, port);
    }
    puts_(b, "\r\nUser-Agent: " USER_AGENT "\r\nContent-Type: application/json\r\n");
    puts_(b, "Content-Length: ");
    puts_(b, num);
    puts_(b, "\r\nmomento-signature: ");
    puts_(b, sig);
    puts_(b, "\r\nConnection: close\r\n\r\n");
}

/* ---- boxes (under mu) ------------------------------------------------------ */

static void ready_push(srv_webhooks *w, box *b)
{
    b->ready = true;
    SRV_QUEUE_APPEND(w->ready_head, w->ready_tail, b, rprev, rnext);
}

static void ready_remove(srv_webhooks *w, box *b)
{
    if (!b->ready)
        return;
    SRV_QUEUE_REMOVE(w->ready_head, w->ready_tail, b, rprev, rnext);
    b->ready = false;
}

static void job_free(job *j)
{
    if (!j)
        return;
    OPENSSL_cleanse(j->secret, sizeof(j->secret));
    free(j);
}

/* Takes the oldest waiting delivery off `b`; its cost is still held. */
static job *box_pop(srv_webhooks *w, box *b)
{
    job *j = b->head;
    b->head = j->next;
    if (!b->head) {
        b->tail = NULL;
        ready_remove(w, b);
    }
    b->n--;
    b->bytes -= j->cost;
    w->n_waiting--;
    return j;
}

static void box_unlink(srv_webhooks *w, box *b)
{
    ready_remove(w, b);
    SRV_LIST_REMOVE(w->boxes, b, prev, next);
    free(b);
}

/* ---- a delivery, step by step -------------------------------------------- */

typedef enum { SENT_OK, SENT_REJECTED, SENT_TIMEOUT, SENT_FAILED } sent;
typedef enum { C_LOOKUP, C_CONNECTING, C_SENDING, C_READING, C_DONE } conn_state;

/* A delivery being sent; its buffers (the head, then the body) follow it,
 * in the capacities its job worked out. */
typedef struct conn {
    uint64_t id;
    job *j;
    box *b;
    conn_state state;
    sent result;
    int fd;
    int64_t deadline;
    struct addrinfo *ai, *at; /* the addresses, and the one tried now */
    char *head, *body;
    size_t head_len, body_len, off;
    char line[64];            /* the answer's status line */
    size_t got;
    char bufs[];
} conn;

static void conn_done(conn *c, sent r)
{
    c->state = C_DONE;
    c->result = r;
    if (c->fd >= 0) {
        close(c->fd);
        c->fd = -1;
    }
}

static void conn_read(conn *c)
{
    for (;;) {
        ssize_t n = recv(c->fd, c->line + c->got, sizeof(c->line) - 1 - c->got, 0);
        if (n > 0) {
            c->got += (size_t)n;
            c->line[c->got] = '\0';
            /* The status line is all that is read: "HTTP/1.x NNN ...". */
            if (strchr(c->line, '\n') || c->got == sizeof(c->line) - 1) {
                int code = 0;
                if (sscanf(c->line, "HTTP/1.%*1[01] %3d", &code) == 1)
                    conn_done(c, code >= 200 && code <= 299 ? SENT_OK : SENT_REJECTED);
                else
                    conn_done(c, SENT_FAILED);
                return;
            }
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        conn_done(c, SENT_FAILED); /* closed or failed before a status line */
        return;
    }
}

static void conn_send(conn *c)
{
    size_t total = c->head_len + c->body_len;
    while (c->off < total) {
        struct iovec iov[2];
        int n_iov = 0;
        if (c->off < c->head_len) {
            iov[n_iov++] = (struct iovec){c->head + c->off, c->head_len - c->off};
            iov[n_iov++] = (struct iovec){c->body, c->body_len};
        } else {
            iov[n_iov++] = (struct iovec){c->body + (c->off - c->head_len), total - c->off};
        }
        struct msghdr m = {.msg_iov = iov, .msg_iovlen = (size_t)n_iov};
        ssize_t n = sendmsg(c->fd, &m, MSG_NOSIGNAL);
        if (n > 0) {
            c->off += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        conn_done(c, SENT_FAILED);
        return;
    }
    c->state = C_READING;
}

/* Connected: the body, with the time it is sent, signed with the secret of
 * its publish, and the head. */
static void conn_connected(conn *c)
{
    const job *j = c->j;
    buf body = {.p = c->bufs + j->head_cap, .cap = j->body_cap};
    build_body(&body, &(body_parts){j->cache, j->topic, j->event_ms, wall_ms(), j->seq,
                                    j->is_text, j->data, j->len});
    unsigned char mac[32];
    unsigned int mac_len = 0;
    char sig[65];
    buf head = {.p = c->bufs, .cap = j->head_cap};
    if (!body.failed && HMAC(EVP_sha3_256(), j->secret, (int)strlen(j->secret),
                             (const unsigned char *)body.p, body.len, mac, &mac_len) &&
        mac_len == sizeof(mac)) {
        for (size_t i = 0; i < sizeof(mac); i++)
            snprintf(sig + 2 * i, 3, "%02x", mac[i]);
        build_head(&head, j->path, j->host, j->port, body.len, sig);
    } else {
        head.failed = true;
    }
    OPENSSL_cleanse(mac, sizeof(mac));
    if (head.failed) {
        conn_done(c, SENT_FAILED);
        return;
    }
    c->head = head.p;
    c->head_len = head.len;
    c->body = body.p;
    c->body_len = body.len;
    c->state = C_SENDING;
    conn_send(c);
}

/* Tries the addresses from `at` on, until one connects or is connecting. */
static void conn_connect(conn *c)
{
    for (; c->at; c->at = c->at->ai_next) {
        const struct addrinfo *a = c->at;
        int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0)
            continue;
        c->fd = fd;
        if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
            conn_connected(c);
            return;
        }
        if (errno == EINPROGRESS) {
            c->state = C_CONNECTING;
            return;
        }
        close(fd);
        c->fd = -1;
    }
    conn_done(c, SENT_FAILED);
}

static void conn_addresses(conn *c, int rc, struct addrinfo *ai)
{
    if (rc != 0 || !ai) {
        if (ai)
            freeaddrinfo(ai);
        conn_done(c, SENT_FAILED);
        return;
    }
    c->ai = c->at = ai;
    conn_connect(c);
}

/* The socket is ready for what the state waits on (or has failed). */
static void conn_ready(conn *c)
{
    if (c->state == C_CONNECTING) {
        int err = 0;
        socklen_t el = sizeof(err);
        if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &el) == 0 && err == 0) {
            conn_connected(c);
            return;
        }
        close(c->fd);
        c->fd = -1;
        c->at = c->at->ai_next;
        conn_connect(c);
    } else if (c->state == C_SENDING) {
        conn_send(c);
    } else if (c->state == C_READING) {
        conn_read(c);
    }
}

static void *lookup_thread(void *arg);

/* Asks the lookups' thread for `c`'s host (starting it with the first). */
static void conn_lookup(srv_webhooks *w, conn *c)
{
    size_t hl = strlen(c->j->host) + 1, pl = strlen(c->j->port) + 1;
    lookup *l = calloc(1, sizeof(*l) + hl + pl);
    if (!l) {
        conn_done(c, SENT_FAILED);
        return;
    }
    l->conn_id = c->id;
    memcpy(l->host, c->j->host, hl);
    memcpy(l->host + hl, c->j->port, pl);
    l->port = l->host + hl;
    /* Only this thread starts it, and the stop reads the flag after
     * joining this thread. */
    if (!w->lookups_started) {
        if (pthread_create(&w->lookup_thread, NULL, lookup_thread, w) != 0) {
            free(l);
            conn_done(c, SENT_FAILED);
            return;
        }
        pthread_setname_np(w->lookup_thread, "momento-wh-dns");
        w->lookups_started = true;
    }
    pthread_mutex_lock(&w->mu);
    if (w->todo_tail)
        w->todo_tail->next = l;
    else
        w->todo = l;
    w->todo_tail = l;
    pthread_cond_signal(&w->lookup_cv);
    pthread_mutex_unlock(&w->mu);
    c->state = C_LOOKUP;
}

static void conn_start(srv_webhooks *w, conn *c)
{
    c->deadline = mono_ms() + w->timeout_ms;
    /* An address needs no lookup; a name goes to the lookups' thread. */
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV},
                    *ai = NULL;
    int rc = getaddrinfo(c->j->host, c->j->port, &hints, &ai);
    if (rc == EAI_NONAME)
        conn_lookup(w, c);
    else
        conn_addresses(c, rc, ai);
}

/* Wakes the delivery thread (under mu): once until it next looks. */
static void kick(srv_webhooks *w)
{
    if (w->kicked)
        return;
    w->kicked = true;
    ssize_t n = write(w->wake[1], "x", 1);
    (void)n; /* a full pipe wakes it as well */
}

static void *lookup_thread(void *arg)
{
    srv_webhooks *w = arg;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->stop && !w->todo)
            pthread_cond_wait(&w->lookup_cv, &w->mu);
        if (w->stop)
            break;
        lookup *l = w->todo;
        w->todo = l->next;
        if (!w->todo)
            w->todo_tail = NULL;
        pthread_mutex_unlock(&w->mu);
        struct addrinfo hints = {.ai_family = AF_UNSPEC,
                                 .ai_socktype = SOCK_STREAM,
                                 .ai_flags = AI_NUMERICSERV};
        l->rc = getaddrinfo(l->host, l->port, &hints, &l->ai);
        pthread_mutex_lock(&w->mu);
        l->next = w->done;
        w->done = l;
        kick(w);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

static void lookups_free(lookup *l)
{
    while (l) {
        lookup *next = l->next;
        if (l->ai)
            freeaddrinfo(l->ai);
        free(l);
        l = next;
    }
}

static void conn_free(conn *c)
{
    if (c->fd >= 0)
        close(c->fd);
    if (c->ai)
        freeaddrinfo(c->ai);
    job_free(c->j);
    free(c);
}

/* A delivery ended (`j` sent, or failed without a connection): its box
 * free for the next, its memory owed back to the store; the caller counts
 * it once that is settled. */
static void job_finish(srv_webhooks *w, job *j, box *b)
{
    uint64_t cost = j->cost;
    job_free(j);
    pthread_mutex_lock(&w->mu);
    b->sending = false;
    w->n_sending--;
    w->held -= cost;
    w->unsettled += cost;
    if (b->deleted)
        box_unlink(w, b);
    else if (b->n)
        ready_push(w, b);
    pthread_mutex_unlock(&w->mu);
}

static sent conn_finish(srv_webhooks *w, conn *c)
{
    job *j = c->j;
    box *b = c->b;
    sent r = c->result;
    c->j = NULL;
    conn_free(c);
    job_finish(w, j, b);
    return r;
}

/* Gives the store back what was freed. With the turn. */
static void settle(srv_webhooks *w)
{
    pthread_mutex_lock(&w->mu);
    uint64_t owed = w->unsettled;
    w->unsettled = 0;
    pthread_mutex_unlock(&w->mu);
    if (owed)
        store_uncharge(&w->s->store, owed);
}

static void *delivery_thread(void *arg)
{
    srv_webhooks *w = arg;
    conn *cs[MAX_SENDING];
    size_t n = 0;
    uint64_t next_id = 1;
    struct pollfd pfd[MAX_SENDING + 1];
    conn *polled[MAX_SENDING + 1];
    for (;;) {
        /* Emptied before looking: a kick after the look leaves a byte. */
        char drain[64];
        while (read(w->wake[0], drain, sizeof(drain)) > 0)
            ;
        job *fresh[MAX_SENDING];
        box *fresh_box[MAX_SENDING];
        size_t n_fresh = 0;
        uint64_t ended[SENT_FAILED + 1] = {0};
        pthread_mutex_lock(&w->mu);
        if (w->stop) {
            pthread_mutex_unlock(&w->mu);
            break;
        }
        w->kicked = false;
        lookup *answers = w->done;
        w->done = NULL;
        while (n + n_fresh < MAX_SENDING && w->ready_head) {
            box *b = w->ready_head;
            fresh[n_fresh] = box_pop(w, b);
            fresh_box[n_fresh++] = b;
            ready_remove(w, b);
            b->sending = true;
            w->n_sending++;
        }
        pthread_mutex_unlock(&w->mu);

        for (lookup *l = answers, *next; l; l = next) {
            next = l->next;
            for (size_t i = 0; i < n; i++)
                if (cs[i]->id == l->conn_id && cs[i]->state == C_LOOKUP) {
                    conn_addresses(cs[i], l->rc, l->ai);
                    l->ai = NULL;
                    break;
                }
            l->next = NULL;
            lookups_free(l); /* the answer of one given up already, too */
        }
        for (size_t i = 0; i < n_fresh; i++) {
            job *j = fresh[i];
            conn *c = malloc(sizeof(*c) + j->head_cap + j->body_cap);
            if (!c) {
                /* Charged, but malloc() has nothing: it cannot be sent. */
                job_finish(w, j, fresh_box[i]);
                ended[SENT_FAILED]++;
                continue;
            }
            *c = (conn){.id = next_id++, .j = j, .b = fresh_box[i], .fd = -1};
            cs[n++] = c;
            conn_start(w, c);
        }

        /* Past its deadline, whatever it waits on (a lookup too). */
        int64_t now = mono_ms();
        for (size_t i = 0; i < n; i++)
            if (cs[i]->state != C_DONE && now >= cs[i]->deadline)
                conn_done(cs[i], SENT_TIMEOUT);
        size_t kept = 0;
        for (size_t i = 0; i < n; i++) {
            if (cs[i]->state == C_DONE)
                ended[conn_finish(w, cs[i])]++;
            else
                cs[kept++] = cs[i];
        }
        n = kept;
        if (ended[SENT_OK] + ended[SENT_REJECTED] + ended[SENT_TIMEOUT] + ended[SENT_FAILED]) {
            srv_turn_take(&w->s->turns);
            settle(w);
            srv_turn_give(&w->s->turns);
            /* Counted once their memory is the store's again, so that a
             * count seen says so too. */
            atomic_uint_fast64_t *counter[] = {&w->delivered, &w->rejected, &w->timed_out,
                                               &w->failed};
            for (int r = SENT_OK; r <= SENT_FAILED; r++)
                if (ended[r])
                    atomic_fetch_add_explicit(counter[r], ended[r], memory_order_relaxed);
            continue; /* their boxes' next deliveries may be ready */
        }

        size_t np = 0;
        pfd[np++] = (struct pollfd){.fd = w->wake[0], .events = POLLIN};
        int64_t first = INT64_MAX;
        for (size_t i = 0; i < n; i++) {
            conn *c = cs[i];
            if (c->deadline < first)
                first = c->deadline;
            if (c->state == C_LOOKUP)
                continue;
            polled[np] = c;
            pfd[np++] = (struct pollfd){.fd = c->fd,
                                        .events = c->state == C_READING ? POLLIN : POLLOUT};
        }
        int wait = -1;
        if (n) {
            int64_t left = first - mono_ms();
            wait = left <= 0 ? 0 : left > 1000000 ? 1000000 : (int)left;
        }
        if (poll(pfd, np, wait) > 0)
            for (size_t i = 1; i < np; i++)
                if (pfd[i].revents)
                    conn_ready(polled[i]);
    }
    for (size_t i = 0; i < n; i++)
        conn_free(cs[i]); /* stopped: cut short, uncounted */
    return NULL;
}

/* ---- the registry -------------------------------------------------------- */

int srv_webhooks_init(momento_local *s)
{
    srv_webhooks *w = calloc(1, sizeof(*w));
    if (!w)
        return -1;
    w->wake[0] = w->wake[1] = -1;
    if (pthread_mutex_init(&w->mu, NULL) != 0) {
        free(w);
        return -1;
    }
    if (pthread_cond_init(&w->lookup_cv, NULL) != 0) {
        pthread_mutex_destroy(&w->mu);
        free(w);
        return -1;
    }
    w->s = s;
    w->timeout_ms = s->opts.webhook_timeout_ms;
    w->max_items = s->opts.webhook_queue_items;
    w->max_bytes = ALL_MAX_BYTES;
    if (s->opts.max_memory && s->opts.max_memory / MEMORY_SHARE < w->max_bytes)
        w->max_bytes = s->opts.max_memory / MEMORY_SHARE;
    s->webhooks = w;
    return 0;
}

/* The delivery thread and its wake pipe, with the first webhook; none
 * once stopped. */
static int start_thread(srv_webhooks *w)
{
    pthread_mutex_lock(&w->mu);
    bool skip = w->started || w->stop;
    pthread_mutex_unlock(&w->mu);
    if (skip)
        return 0;
    if (pipe2(w->wake, O_CLOEXEC | O_NONBLOCK) != 0) {
        w->wake[0] = w->wake[1] = -1;
        return -1;
    }
    if (pthread_create(&w->thread, NULL, delivery_thread, w) != 0) {
        close(w->wake[0]);
        close(w->wake[1]);
        w->wake[0] = w->wake[1] = -1;
        return -1;
    }
    pthread_setname_np(w->thread, "momento-webhook");
    pthread_mutex_lock(&w->mu);
    w->started = true;
    pthread_mutex_unlock(&w->mu);
    return 0;
}

static void hook_free(hook *h)
{
    OPENSSL_cleanse(h->secret, sizeof(h->secret));
    free(h->key);
    free(h->topic);
    free(h->url);
    free(h->host);
    free(h->port);
    free(h->path);
    free(h);
}

static void topic_unlink(srv_webhooks *w, hook *h)
{
    hook_topic *t = h->t;
    if (!t)
        return;
    SRV_LIST_REMOVE(t->head, h, tprev, tnext);
    h->t = NULL;
    if (!t->head) {
        HASH_DEL(w->by_topic, t);
        free(t->key);
        free(t);
    }
}
static char *pair_key(const char *a, const char *b, size_t *ret_len)
{
    size_t al = strlen(a), bl = strlen(b);
    char *k = malloc(al + 1 + bl + 1);
    if (k) {
        memcpy(k, a, al + 1);
        memcpy(k + al + 1, b, bl + 1);
        *ret_len = al + 1 + bl;
    }
    return k;
}
static int topic_link(srv_webhooks *w, hook *h)
{
    size_t len;
    char *k = pair_key(h->cache, h->topic, &len);
    if (!k)
        return -1;
    hook_topic *t;
    HASH_FIND(hh, w->by_topic, k, len, t);
    if (t) {
        free(k);
    } else {
        if (!(t = calloc(1, sizeof(*t)))) {
            free(k);
            return -1;
        }
        t->key = k;
        t->key_len = len;
        HASH_ADD_KEYPTR(hh, w->by_topic, t->key, t->key_len, t);
    }
    h->t = t;
    SRV_LIST_PUSH(t->head, h, tprev, tnext);
    return 0;
}
static hook *find(srv_webhooks *w, const char *cache, const char *name)
{
    size_t len;
    char *k = pair_key(cache, name, &len);
    if (!k)
        return NULL;
    hook *h;
    HASH_FIND(hh, w->by_key, k, len, h);
    free(k);
    return h;
}

/* A webhook is gone (with the turn): its waiting deliveries go, uncounted,
 * and their memory back; its box goes now, or, while one of its deliveries
 * is being sent, once that ends. */
static void box_release(srv_webhooks *w, box *b)
{
    pthread_mutex_lock(&w->mu);
    uint64_t freed = 0;
    while (b->n) {
        job *j = box_pop(w, b);
        freed += j->cost;
        job_free(j);
    }
    w->held -= freed;
    if (b->sending)
        b->deleted = true;
    else
        box_unlink(w, b);
    pthread_mutex_unlock(&w->mu);
    if (freed)
        store_uncharge(&w->s->store, freed);
}

static bool new_secret(char out[SECRET_HEX + 1])
{
    unsigned char raw[SECRET_BYTES];
    if (RAND_bytes(raw, sizeof(raw)) != 1)
        return false;
    for (size_t i = 0; i < SECRET_BYTES; i++)
        snprintf(out + 2 * i, 3, "%02x", raw[i]);
    OPENSSL_cleanse(raw, sizeof(raw));
    return true;
}

const char *srv_webhooks_url_problem(const char *url)
{
    size_t len = strlen(url);
    if (len > SRV_WEBHOOK_URL_MAX_BYTES)
        return "the webhook URL must be at most 2048 bytes";
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)url[i] <= ' ' || url[i] == 0x7f)
            return "the webhook URL must not hold spaces or control characters";
    if (strncmp(url, "http://", 7) != 0)
        return strncmp(url, "https://", 8) == 0
                   ? "momento-local delivers to http:// URLs only, not https://"
                   : "the webhook URL must be an http:// URL";
    const char *h = url + 7, *end = h + strcspn(h, "/?#");
    if (memchr(h, '@', (size_t)(end - h)))
        return "the webhook URL must not hold a user name";
    const char *colon;
    if (*h == '[') {
        const char *close = memchr(h, ']', (size_t)(end - h));
        if (!close || close == h + 1)
            return "the webhook URL's IPv6 host is not closed with ]";
        colon = close[1] == ':' ? close + 1 : NULL;
        if (close + 1 != end && !colon)
            return "the webhook URL's host is malformed";
    } else {
        colon = memchr(h, ':', (size_t)(end - h));
        if ((colon ? colon : end) == h)
            return "the webhook URL has no host";
    }
    if (colon) {
        if (colon + 1 == end || (size_t)(end - colon - 1) > 5)
            return "the webhook URL's port must be 1 to 65535";
        long port = 0;
        for (const char *p = colon + 1; p < end; p++) {
            if (*p < '0' || *p > '9')
                return "the webhook URL's port must be 1 to 65535";
            port = port * 10 + (*p - '0');
        }
        if (port < 1 || port > 65535)
            return "the webhook URL's port must be 1 to 65535";
    }
    return NULL;
}

/* The host (brackets off), port and path (query kept, fragment dropped)
 * of a URL srv_webhooks_url_problem() passed. */
static int split_url(hook *h, const char *url)
{
    const char *host = url + 7, *end = host + strcspn(host, "/?#");
    const char *hend, *port = NULL;
    if (*host == '[') {
        hend = memchr(host, ']', (size_t)(end - host));
        port = hend[1] == ':' ? hend + 2 : NULL;
        host++;
    } else {
        const char *colon = memchr(host, ':', (size_t)(end - host));
        hend = colon ? colon : end;
        port = colon ? colon + 1 : NULL;
    }
    const char *path = end, *pend = path + strcspn(path, "#");
    h->host = dup_n(host, (size_t)(hend - host));
    h->port = port ? dup_n(port, (size_t)(end - port)) : dup_n("80", 2);
    if (*path == '/')
        h->path = dup_n(path, (size_t)(pend - path));
    else if (pend > path) { /* "?q" with no path: the root's */
        h->path = malloc((size_t)(pend - path) + 2);
        if (h->path) {
            h->path[0] = '/';
            memcpy(h->path + 1, path, (size_t)(pend - path));
            h->path[pend - path + 1] = '\0';
        }
    } else {
        h->path = dup_n("/", 1);
    }
    return h->host && h->port && h->path ? 0 : -1;
}


int srv_webhooks_put(momento_local *s, const char *cache, const char *name, const char *topic,
                     const char *url, const char **ret_secret)
{
    srv_webhooks *w = s->webhooks;
    if (start_thread(w) < 0)
        return -1;
    hook *fresh = calloc(1, sizeof(*fresh));
    if (!fresh)
        return -1;
    fresh->key = pair_key(cache, name, &fresh->key_len);
    fresh->topic = strdup(topic);
    fresh->url = strdup(url);
    if (!fresh->key || !fresh->topic || !fresh->url || split_url(fresh, url) < 0) {
        hook_free(fresh);
        return -1;
    }
    fresh->cache = fresh->key;
    fresh->name = fresh->key + strlen(cache) + 1;
    hook *old;
    HASH_FIND(hh, w->by_key, fresh->key, fresh->key_len, old);
    box *b = NULL;
    if (old) {
        /* The same webhook pointed elsewhere: its secret and box stay. */
        memcpy(fresh->secret, old->secret, sizeof(fresh->secret));
    } else if (!new_secret(fresh->secret) || !(b = calloc(1, sizeof(*b)))) {
        hook_free(fresh);
        return -1;
    }
    if (topic_link(w, fresh) < 0) {
        free(b);
        hook_free(fresh);
        return -1;
    }
    if (old) {
        fresh->box = old->box;
        topic_unlink(w, old);
        HASH_DEL(w->by_key, old);
        hook_free(old);
    } else {
        pthread_mutex_lock(&w->mu);
        SRV_LIST_PUSH(w->boxes, b, prev, next);
        pthread_mutex_unlock(&w->mu);
        fresh->box = b;
    }
    HASH_ADD_KEYPTR(hh, w->by_key, fresh->key, fresh->key_len, fresh);
    *ret_secret = fresh->secret;
    return 0;
}

static void remove_hook(srv_webhooks *w, hook *h)
{
    box_release(w, h->box);
    topic_unlink(w, h);
    HASH_DEL(w->by_key, h);
    hook_free(h);
}

bool srv_webhooks_delete(momento_local *s, const char *cache, const char *name)
{
    srv_webhooks *w = s->webhooks;
    hook *h = find(w, cache, name);
    if (!h)
        return false;
    remove_hook(w, h);
    return true;
}

const char *srv_webhooks_secret(momento_local *s, const char *cache, const char *name,
                                bool rotate, bool *ret_failed)
{
    *ret_failed = false;
    hook *h = find(s->webhooks, cache, name);
    if (!h)
        return NULL;
    if (rotate) {
        char next[SECRET_HEX + 1];
        if (!new_secret(next)) {
            *ret_failed = true;
            return NULL;
        }
        memcpy(h->secret, next, sizeof(next));
        OPENSSL_cleanse(next, sizeof(next));
    }
    return h->secret;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const srv_webhook_view *)a)->name, ((const srv_webhook_view *)b)->name);
}

long srv_webhooks_list(momento_local *s, const char *cache, srv_webhook_view **ret)
{
    srv_webhooks *w = s->webhooks;
    size_t n = 0;
    for (hook *h = w->by_key; h; h = h->hh.next)
        n += strcmp(h->cache, cache) == 0;
    srv_webhook_view *v = malloc((n ? n : 1) * sizeof(*v));
    if (!v)
        return -1;
    size_t i = 0;
    for (hook *h = w->by_key; h; h = h->hh.next)
        if (strcmp(h->cache, cache) == 0)
            v[i++] = (srv_webhook_view){h->cache, h->name, h->topic, h->url};
    qsort(v, n, sizeof(*v), by_name);
    *ret = v;
    return (long)n;
}

void srv_webhooks_drop_cache(momento_local *s, const char *cache)
{
    srv_webhooks *w = s->webhooks;
    for (hook *h = w->by_key, *next; h; h = next) {
        next = h->hh.next;
        if (strcmp(h->cache, cache) == 0)
            remove_hook(w, h);
    }
}

/* ---- publishing: room, then the queue ------------------------------------ */

/* The box other than `self` with the most bytes waiting, if it has more
 * than `self`: the one to give way. Under mu. */
static box *fullest_other(srv_webhooks *w, const box *self)
{
    box *most = NULL;
    for (box *b = w->boxes; b; b = b->next)
        if (b != self && b->n && (!most || b->bytes > most->bytes))
            most = b;
    return most && most->bytes > self->bytes ? most : NULL;
}

static void count_drop(srv_webhooks *w, admission why)
{
    atomic_fetch_add_explicit(&w->dropped, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(why == DROP_FULL     ? &w->dropped_full
                              : why == DROP_GLOBAL ? &w->dropped_global
                                                   : &w->dropped_memory,
                              1, memory_order_relaxed);
}

/* Drops the oldest waiting delivery of `b` to make room (with the turn,
 * under mu). */
static void give_way(srv_webhooks *w, box *b, admission why)
{
    job *j = box_pop(w, b);
    w->held -= j->cost;
    store_uncharge(&w->s->store, j->cost);
    job_free(j);
    count_drop(w, why);
}

/* Whether a delivery costing `cost` may join `b`, making room for it as
 * the file's head says; when it may, its cost is charged and held. With the
 * turn, under mu. */
static admission admit(srv_webhooks *w, box *b, uint64_t cost)
{
    if (b->n >= w->max_items || (b->n && b->bytes + cost > BOX_MAX_BYTES))
        return DROP_FULL;
    if (cost > w->max_bytes)
        return DROP_GLOBAL;
    while (w->held + cost > w->max_bytes) {
        box *v = fullest_other(w, b);
        if (!v)
            return DROP_GLOBAL;
        give_way(w, v, DROP_GLOBAL);
    }
    while (store_charge(&w->s->store, cost) != 0) {
        box *v = fullest_other(w, b);
        if (!v)
            return DROP_MEMORY;
        give_way(w, v, DROP_MEMORY);
    }
    w->held += cost;
    return KEPT;
}

/* What a delivery of this publish to `h` will hold: its job's block, and
 * the connection whose buffers hold the head and the body (sized for the
 * longest send time and Content-Length). */
static uint64_t delivery_cost(const hook *h, const body_parts *p, size_t *ret_block,
                              size_t *ret_head_cap, size_t *ret_body_cap)
{
    body_parts most = *p;
    most.publish_ms = INT64_MAX;
    buf body = {0}, head = {0};
    build_body(&body, &most);
    char sig[65];
    memset(sig, 'f', 64);
    sig[64] = '\0';
    build_head(&head, h->path, h->host, h->port, SIZE_MAX, sig);
    *ret_block = sizeof(job) + p->len + strlen(p->cache) + strlen(p->topic) + strlen(h->host) +
                 strlen(h->port) + strlen(h->path) + 5;
    *ret_head_cap = head.len;
    *ret_body_cap = body.len;
    return store_alloc_cost(*ret_block) + store_alloc_cost(sizeof(conn) + head.len + body.len);
}

static char *place(char **at, const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = memcpy(*at, s, n);
    *at += n;
    return d;
}

static job *job_new(const hook *h, const body_parts *p, size_t block)
{
    job *j = malloc(block);
    if (!j)
        return NULL;
    memset(j, 0, sizeof(*j));
    if (p->len)
        memcpy(j->data, p->value, p->len);
    char *at = (char *)j->data + p->len;
    j->cache = place(&at, p->cache);
    j->topic = place(&at, p->topic);
    j->host = place(&at, h->host);
    j->port = place(&at, h->port);
    j->path = place(&at, h->path);
    memcpy(j->secret, h->secret, sizeof(j->secret));
    j->seq = p->seq;
    j->event_ms = p->event_ms;
    j->is_text = p->is_text;
    j->len = p->len;
    return j;
}

void srv_webhooks_publish(momento_local *s, const char *cache, const char *topic,
                          const void *value, size_t len, bool is_text, uint64_t seq)
{
    srv_webhooks *w = s->webhooks;
    if (!w->by_topic)
        return;
    size_t klen;
    char *k = pair_key(cache, topic, &klen);
    hook_topic *t = NULL;
    if (k)
        HASH_FIND(hh, w->by_topic, k, klen, t);
    free(k);
    if (!t)
        return;
    /* What the thread freed is the store's again before anything is
     * charged. */
    settle(w);
    body_parts p = {cache, topic, wall_ms(), 0, seq, is_text, value, len};
    for (hook *h = t->head; h; h = h->tnext) {
        size_t block, head_cap, body_cap;
        uint64_t cost = delivery_cost(h, &p, &block, &head_cap, &body_cap);
        pthread_mutex_lock(&w->mu);
        if (w->stop) { /* the server is stopping: nothing more is queued */
            pthread_mutex_unlock(&w->mu);
            return;
        }
        atomic_fetch_add_explicit(&w->queued, 1, memory_order_relaxed);
        box *b = h->box;
        admission why = admit(w, b, cost);
        job *j = why == KEPT ? job_new(h, &p, block) : NULL;
        if (why == KEPT && !j) {
            /* No memory for it after all: dropped, as for the limit. */
            w->held -= cost;
            store_uncharge(&s->store, cost);
            why = DROP_MEMORY;
        }
        if (j) {
            j->cost = cost;
            j->head_cap = head_cap;
            j->body_cap = body_cap;
            if (b->tail)
                b->tail->next = j;
            else
                b->head = j;
            b->tail = j;
            b->n++;
            b->bytes += cost;
            w->n_waiting++;
            if (!b->sending && !b->ready)
                ready_push(w, b);
            kick(w);
        } else {
            /* Dropped, never waited for. */
            count_drop(w, why);
        }
        pthread_mutex_unlock(&w->mu);
    }
}

/* ---- stopping ------------------------------------------------------------ */

void srv_webhooks_stop(momento_local *s)
{
    srv_webhooks *w = s->webhooks;
    if (!w)
        return;
    pthread_mutex_lock(&w->mu);
    bool was = w->stop, started = w->started;
    w->stop = true;
    pthread_cond_broadcast(&w->lookup_cv);
    pthread_mutex_unlock(&w->mu);
    if (was || !started)
        return;
    ssize_t n = write(w->wake[1], "x", 1);
    (void)n;
    pthread_join(w->thread, NULL);
    /* Set by the delivery thread only, which is gone. A lookup in
     * progress is waited for: getaddrinfo() cannot be cut short. */
    if (w->lookups_started)
        pthread_join(w->lookup_thread, NULL);
}

void srv_webhooks_destroy(momento_local *s)
{
    srv_webhooks *w = s->webhooks;
    if (!w)
        return;
    srv_webhooks_stop(s);
    if (w->wake[0] >= 0) {
        close(w->wake[0]);
        close(w->wake[1]);
    }
    /* The threads are gone: what they shared is this thread's now. What
     * is held (waiting, and what was being sent, which the delivery thread
     * freed as it stopped) and what was freed but not settled go back. */
    uint64_t owed = w->held + w->unsettled;
    for (box *b = w->boxes, *next; b; b = next) {
        next = b->next;
        for (job *j = b->head, *jn; j; j = jn) {
            jn = j->next;
            job_free(j);
        }
        free(b);
    }
    w->boxes = NULL;
    lookups_free(w->todo);
    lookups_free(w->done);
    for (hook *h = w->by_key, *next; h; h = next) {
        next = h->hh.next;
        topic_unlink(w, h);
        HASH_DEL(w->by_key, h);
        hook_free(h);
    }
    store_uncharge(&s->store, owed);
    pthread_cond_destroy(&w->lookup_cv);
    pthread_mutex_destroy(&w->mu);
    free(w);
    s->webhooks = NULL;
}

void momento_local_webhook_stats_get(const momento_local *s, momento_local_webhook_stats *ret)
{
    if (!ret)
        return;
    memset(ret, 0, sizeof(*ret));
    if (!s || !s->webhooks)
        return;
    srv_webhooks *w = s->webhooks;
    ret->queued = atomic_load_explicit(&w->queued, memory_order_relaxed);
    ret->delivered = atomic_load_explicit(&w->delivered, memory_order_relaxed);
    ret->rejected = atomic_load_explicit(&w->rejected, memory_order_relaxed);
    ret->timed_out = atomic_load_explicit(&w->timed_out, memory_order_relaxed);
    ret->failed = atomic_load_explicit(&w->failed, memory_order_relaxed);
    ret->dropped = atomic_load_explicit(&w->dropped, memory_order_relaxed);
    ret->dropped_full = atomic_load_explicit(&w->dropped_full, memory_order_relaxed);
    ret->dropped_global = atomic_load_explicit(&w->dropped_global, memory_order_relaxed);
    ret->dropped_memory = atomic_load_explicit(&w->dropped_memory, memory_order_relaxed);
    pthread_mutex_lock(&w->mu);
    ret->pending = w->n_waiting + w->n_sending;
    ret->sending = w->n_sending;
    ret->bytes = w->held + w->unsettled; /* what the store counts */
    pthread_mutex_unlock(&w->mu);
}
