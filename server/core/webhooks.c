/* Webhooks: the registry each cache's webhooks live in, and the delivery
 * thread (`momento-webhook`) that POSTs published items to them
 * (srv_webhooks.h; docs/server.md "Webhooks" says which parts of the
 * format are Momento's documented ones and which are inferred).
 *
 * A delivery is built on the delivery thread from what the publish queued
 * (names, value, sequence number, the event's time, the URL's parts and
 * the secret of that moment), so a publish costs a copy and a lock. The
 * thread sends one delivery at a time, each once (Momento: "one time", no
 * redrive), giving up at the timeout; a stop cuts a delivery short through
 * the wake pipe its polls watch. */
#include "core/srv_webhooks.h"

#include "core/srv_server.h"

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
#include <time.h>
#include <unistd.h>
#include <uthash.h>

#define SECRET_BYTES 32
#define SECRET_HEX (2 * SECRET_BYTES)
/* What the queue may hold besides its count of deliveries: the values and
 * names it copied. */
#define QUEUE_MAX_BYTES (64u * 1024u * 1024u)
/* Momento's, as its docs give it (docs/server.md "Webhooks"). */
#define USER_AGENT "Momento/1.0 (Webhooks; +https://docs.momentohq.com/topics/webhooks)"

typedef struct hook hook;
typedef struct hook_topic hook_topic;

/* A webhook. `key` is "cache\0name"; `cache` and `name` point into it. */
struct hook {
    UT_hash_handle hh;
    char *key;
    size_t key_len;
    const char *cache, *name;
    char *topic, *url;
    char *host, *port, *path; /* the URL's parts, as the delivery needs them */
    char secret[SECRET_HEX + 1];
    uint64_t id;              /* its queued deliveries carry it */
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

/* One delivery waiting: everything the thread needs, owned. */
typedef struct job {
    struct job *next;
    uint64_t hook_id;
    size_t cost;
    char *cache, *topic, *host, *port, *path;
    char secret[SECRET_HEX + 1];
    uint64_t seq;
    int64_t event_ms;
    bool is_text;
    size_t len;
    unsigned char value[];
} job;

struct srv_webhooks {
    /* The registry: the server's state, with the turn. */
    hook *by_key;
    hook_topic *by_topic;
    uint64_t next_id;
    uint32_t timeout_ms, max_items;
    /* The queue, under `mu`. */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    job *head, *tail;
    size_t n_items, bytes;
    bool busy, stop, started;
    pthread_t thread;
    int wake[2]; /* written at stop: a delivery's polls watch [0] */
    atomic_uint_fast64_t queued, delivered, rejected, timed_out, failed, dropped;
};

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

/* A growing buffer for the body and the request. */
typedef struct buf {
    char *p;
    size_t len, cap;
    bool failed;
} buf;

static void put(buf *b, const void *s, size_t n)
{
    if (b->failed)
        return;
    if (b->cap - b->len < n + 1) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap - b->len < n + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->failed = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
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

/* The body Momento documents, compact, its fields in the documented order;
 * a binary item carries its bytes as base64 in "binary" where a text item
 * has "text" (inferred: docs/server.md). */
static void build_body(buf *b, const job *j, int64_t publish_ms)
{
    char num[32];
    puts_(b, "{\"cache\":");
    put_json_string(b, (const unsigned char *)j->cache, strlen(j->cache));
    puts_(b, ",\"topic\":");
    put_json_string(b, (const unsigned char *)j->topic, strlen(j->topic));
    snprintf(num, sizeof(num), "%lld", (long long)j->event_ms);
    puts_(b, ",\"event_timestamp\":");
    puts_(b, num);
    snprintf(num, sizeof(num), "%lld", (long long)publish_ms);
    puts_(b, ",\"publish_timestamp\":");
    puts_(b, num);
    snprintf(num, sizeof(num), "%llu", (unsigned long long)j->seq);
    puts_(b, ",\"topic_sequence_number\":");
    puts_(b, num);
    /* momento-local's publishes carry no token id (their items' publisher
     * id is empty too): "" as Momento sends for a key without one. */
    puts_(b, ",\"token_id\":\"\"");
    if (j->is_text) {
        puts_(b, ",\"text\":");
        put_json_string(b, j->value, j->len);
    } else {
        puts_(b, ",\"binary\":\"");
        put_base64(b, j->value, j->len);
        puts_(b, "\"");
    }
    puts_(b, "}");
}

/* ---- the delivery --------------------------------------------------------- */

typedef enum { SENT_OK, SENT_REJECTED, SENT_TIMEOUT, SENT_FAILED, SENT_STOPPED } sent;

/* Waits for `events` on `fd` until `deadline`: 1 ready, 0 timed out, -1
 * stopped or failed (*stopped tells). */
static int wait_fd(srv_webhooks *w, int fd, short events, int64_t deadline, bool *stopped)
{
    for (;;) {
        int64_t left = deadline - mono_ms();
        if (left <= 0)
            return 0;
        struct pollfd p[2] = {{.fd = fd, .events = events}, {.fd = w->wake[0], .events = POLLIN}};
        int n = poll(p, 2, (int)(left > 1000000 ? 1000000 : left));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (p[1].revents) {
            *stopped = true;
            return -1;
        }
        if (p[0].revents)
            return 1;
    }
}

static sent deliver(srv_webhooks *w, const job *j)
{
    int64_t deadline = mono_ms() + w->timeout_ms;
    bool stopped = false;
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai = NULL;
    if (getaddrinfo(j->host, j->port, &hints, &ai) != 0 || !ai)
        return SENT_FAILED;
    int fd = -1;
    sent result = SENT_FAILED;
    for (struct addrinfo *a = ai; a && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0)
            continue;
        if (connect(fd, a->ai_addr, a->ai_addrlen) == 0)
            break;
        int err = errno, ready = -1;
        if (err == EINPROGRESS) {
            ready = wait_fd(w, fd, POLLOUT, deadline, &stopped);
            socklen_t el = sizeof(err);
            if (ready == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) == 0 && err == 0)
                break;
        }
        close(fd);
        fd = -1;
        if (stopped || ready == 0) {
            result = stopped ? SENT_STOPPED : SENT_TIMEOUT;
            break;
        }
    }
    freeaddrinfo(ai);
    if (fd < 0)
        return result;

    buf body = {0}, req = {0};
    build_body(&body, j, wall_ms());
    unsigned char mac[32];
    unsigned int mac_len = 0;
    char sig[65];
    if (!body.failed && HMAC(EVP_sha3_256(), j->secret, (int)strlen(j->secret),
                             (const unsigned char *)body.p, body.len, mac, &mac_len) &&
        mac_len == sizeof(mac)) {
        for (size_t i = 0; i < sizeof(mac); i++)
            snprintf(sig + 2 * i, 3, "%02x", mac[i]);
        char head[256];
        snprintf(head, sizeof(head), "Content-Length: %zu\r\n", body.len);
        puts_(&req, "POST ");
        puts_(&req, j->path);
        puts_(&req, " HTTP/1.1\r\nHost: ");
        puts_(&req, j->host);
        if (strcmp(j->port, "80") != 0) {
            puts_(&req, ":");
            puts_(&req, j->port);
        }
        puts_(&req, "\r\nUser-Agent: " USER_AGENT "\r\nContent-Type: application/json\r\n");
        puts_(&req, head);
        puts_(&req, "momento-signature: ");
        puts_(&req, sig);
        puts_(&req, "\r\nConnection: close\r\n\r\n");
        put(&req, body.p, body.len);
    } else {
        req.failed = true;
    }
    OPENSSL_cleanse(mac, sizeof(mac));
    free(body.p);
    result = SENT_FAILED;
    size_t off = 0;
    while (!req.failed && off < req.len) {
        ssize_t n = send(fd, req.p + off, req.len - off, MSG_NOSIGNAL);
        if (n > 0) {
            off += (size_t)n;
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
            int ready = wait_fd(w, fd, POLLOUT, deadline, &stopped);
            if (ready == 1)
                continue;
            result = stopped ? SENT_STOPPED : ready == 0 ? SENT_TIMEOUT : SENT_FAILED;
        }
        break;
    }
    if (!req.failed && off == req.len) {
        /* The status line is all that is read: "HTTP/1.x NNN ...". */
        char line[64];
        size_t got = 0;
        for (;;) {
            ssize_t n = recv(fd, line + got, sizeof(line) - 1 - got, 0);
            if (n > 0) {
                got += (size_t)n;
                line[got] = '\0';
                if (strchr(line, '\n') || got == sizeof(line) - 1)
                    break;
                continue;
            }
            if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
                int ready = wait_fd(w, fd, POLLIN, deadline, &stopped);
                if (ready == 1)
                    continue;
                result = stopped ? SENT_STOPPED : ready == 0 ? SENT_TIMEOUT : SENT_FAILED;
            }
            got = 0; /* closed or failed before a status line */
            break;
        }
        int code = 0;
        if (got && sscanf(line, "HTTP/1.%*1[01] %3d", &code) == 1)
            result = code >= 200 && code <= 299 ? SENT_OK : SENT_REJECTED;
    }
    free(req.p);
    close(fd);
    return result;
}

static void job_free(job *j)
{
    if (!j)
        return;
    OPENSSL_cleanse(j->secret, sizeof(j->secret));
    free(j->cache);
    free(j->topic);
    free(j->host);
    free(j->port);
    free(j->path);
    free(j);
}

static void *delivery_thread(void *arg)
{
    srv_webhooks *w = arg;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->stop && !w->head)
            pthread_cond_wait(&w->cv, &w->mu);
        if (w->stop)
            break;
        job *j = w->head;
        w->head = j->next;
        if (!w->head)
            w->tail = NULL;
        w->n_items--;
        w->bytes -= j->cost;
        w->busy = true;
        pthread_mutex_unlock(&w->mu);
        sent r = deliver(w, j);
        atomic_uint_fast64_t *c = r == SENT_OK         ? &w->delivered
                                  : r == SENT_REJECTED ? &w->rejected
                                  : r == SENT_TIMEOUT  ? &w->timed_out
                                  : r == SENT_FAILED   ? &w->failed
                                                       : NULL;
        if (c)
            atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
        job_free(j);
        pthread_mutex_lock(&w->mu);
        w->busy = false;
    }
    pthread_mutex_unlock(&w->mu);
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
    if (pthread_cond_init(&w->cv, NULL) != 0) {
        pthread_mutex_destroy(&w->mu);
        free(w);
        return -1;
    }
    w->timeout_ms = s->opts.webhook_timeout_ms;
    w->max_items = s->opts.webhook_queue_items;
    w->next_id = 1;
    s->webhooks = w;
    return 0;
}

/* The thread and its wake pipe, with the first webhook. */
static int start_thread(srv_webhooks *w)
{
    if (w->started)
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
    w->started = true;
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

/* Takes `h` off its topic, freeing the topic's entry when it was the last. */
static void topic_unlink(srv_webhooks *w, hook *h)
{
    hook_topic *t = h->t;
    if (!t)
        return;
    if (h->tprev)
        h->tprev->tnext = h->tnext;
    else
        t->head = h->tnext;
    if (h->tnext)
        h->tnext->tprev = h->tprev;
    h->tprev = h->tnext = NULL;
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
    h->tnext = t->head;
    if (t->head)
        t->head->tprev = h;
    t->head = h;
    return 0;
}

/* Takes the queued deliveries of webhook `id` (0: of every webhook of
 * `cache`) off the queue, uncounted: a deleted webhook receives nothing
 * more. */
static void purge(srv_webhooks *w, uint64_t id, const char *cache)
{
    pthread_mutex_lock(&w->mu);
    job **at = &w->head, *last = NULL;
    while (*at) {
        job *j = *at;
        if (id ? j->hook_id == id : strcmp(j->cache, cache) == 0) {
            *at = j->next;
            w->n_items--;
            w->bytes -= j->cost;
            job_free(j);
        } else {
            last = j;
            at = &j->next;
        }
    }
    w->tail = last;
    pthread_mutex_unlock(&w->mu);
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
    if (old) {
        /* The same webhook pointed elsewhere: its secret and id stay. */
        memcpy(fresh->secret, old->secret, sizeof(fresh->secret));
        fresh->id = old->id;
    } else {
        if (!new_secret(fresh->secret)) {
            hook_free(fresh);
            return -1;
        }
        fresh->id = w->next_id++;
    }
    if (topic_link(w, fresh) < 0) {
        hook_free(fresh);
        return -1;
    }
    if (old) {
        topic_unlink(w, old);
        HASH_DEL(w->by_key, old);
        hook_free(old);
    }
    HASH_ADD_KEYPTR(hh, w->by_key, fresh->key, fresh->key_len, fresh);
    *ret_secret = fresh->secret;
    return 0;
}

static void remove_hook(srv_webhooks *w, hook *h)
{
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
    purge(w, h->id, NULL);
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
    bool any = false;
    for (hook *h = w->by_key, *next; h; h = next) {
        next = h->hh.next;
        if (strcmp(h->cache, cache) == 0) {
            remove_hook(w, h);
            any = true;
        }
    }
    if (any)
        purge(w, 0, cache);
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
    int64_t now = wall_ms();
    for (hook *h = t->head; h; h = h->tnext) {
        atomic_fetch_add_explicit(&w->queued, 1, memory_order_relaxed);
        size_t cost = sizeof(job) + len + strlen(cache) + strlen(topic) + strlen(h->host) +
                      strlen(h->port) + strlen(h->path) + 5;
        pthread_mutex_lock(&w->mu);
        bool full = w->n_items >= w->max_items || w->bytes + cost > QUEUE_MAX_BYTES;
        pthread_mutex_unlock(&w->mu);
        job *j = full ? NULL : calloc(1, sizeof(job) + len);
        if (j) {
            j->hook_id = h->id;
            j->cost = cost;
            j->cache = strdup(cache);
            j->topic = strdup(topic);
            j->host = strdup(h->host);
            j->port = strdup(h->port);
            j->path = strdup(h->path);
            memcpy(j->secret, h->secret, sizeof(j->secret));
            j->seq = seq;
            j->event_ms = now;
            j->is_text = is_text;
            j->len = len;
            if (len)
                memcpy(j->value, value, len);
            if (!j->cache || !j->topic || !j->host || !j->port || !j->path) {
                job_free(j);
                j = NULL;
            }
        }
        if (!j) {
            /* Full, or no memory for it: dropped, never waited for. */
            atomic_fetch_add_explicit(&w->dropped, 1, memory_order_relaxed);
            continue;
        }
        pthread_mutex_lock(&w->mu);
        /* Only this thread (with the turn) adds: the room seen above is
         * still there. */
        if (w->tail)
            w->tail->next = j;
        else
            w->head = j;
        w->tail = j;
        w->n_items++;
        w->bytes += cost;
        pthread_cond_signal(&w->cv);
        pthread_mutex_unlock(&w->mu);
    }
}

void srv_webhooks_destroy(momento_local *s)
{
    srv_webhooks *w = s->webhooks;
    if (!w)
        return;
    if (w->started) {
        pthread_mutex_lock(&w->mu);
        w->stop = true;
        pthread_cond_signal(&w->cv);
        pthread_mutex_unlock(&w->mu);
        ssize_t n = write(w->wake[1], "x", 1);
        (void)n;
        pthread_join(w->thread, NULL);
        close(w->wake[0]);
        close(w->wake[1]);
    }
    for (job *j = w->head, *next; j; j = next) {
        next = j->next;
        job_free(j);
    }
    for (hook *h = w->by_key, *next; h; h = next) {
        next = h->hh.next;
        remove_hook(w, h);
    }
    pthread_cond_destroy(&w->cv);
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
    pthread_mutex_lock(&w->mu);
    ret->pending = w->n_items + (w->busy ? 1 : 0);
    pthread_mutex_unlock(&w->mu);
}
