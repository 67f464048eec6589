/* The metrics port (http.h): a small HTTP/1.x server for one resource,
 * on the proxy's epoll loop. Why not libmicrohttpd: docs/proxy.md
 * "Metrics". */
#include "http.h"
#include "metrics.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* Connections at once: a Prometheus server or two and a person with curl. */
#define MAX_CONNS 4
/* The request line and headers: a scrape's are a few hundred bytes. */
#define HEAD_MAX 8192
/* From accept to the whole head: a client sends its request at once. */
#define HEAD_MS 3000
/* From accept to closed, whatever the client does: the answer (a few
 * hundred KiB at most) is written and what the client still sends is read
 * and dropped within it. */
#define LIFE_MS 10000
/* What is read and dropped, at most, after the answer: a client still
 * sending an oversized head gets to its read of the answer rather than a
 * reset. */
#define DRAIN_BYTES (256 * 1024)

typedef enum { H_FREE, H_READING, H_WRITING, H_DRAINING } h_state;

typedef struct hconn {
    px_watch watch; /* first: epoll's data.ptr */
    int fd;
    h_state state;
    size_t len;       /* of head */
    char *out;        /* the answer, while writing */
    size_t out_len, out_off;
    size_t drained;
    int64_t head_until, close_until; /* CLOCK_MONOTONIC ms */
    char head[HEAD_MAX];
} hconn;

struct px_http {
    px_watch watch; /* first: the listener's */
    int epfd;
    int fd;
    px_http_render_fn render;
    void *ud;
    unsigned open;
    hconn conns[MAX_CONNS];
};

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void conn_close(px_http *h, hconn *c)
{
    epoll_ctl(h->epfd, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    free(c->out);
    c->out = NULL;
    c->fd = -1;
    c->state = H_FREE;
    h->open--;
    px_metrics_http_open = h->open;
}

static void conn_watch(px_http *h, hconn *c, uint32_t events)
{
    struct epoll_event ev = {.events = events, .data.ptr = &c->watch};
    if (epoll_ctl(h->epfd, EPOLL_CTL_MOD, c->fd, &ev) != 0)
        conn_close(h, c);
}

static const char *reason(int code)
{
    switch (code) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 431: return "Request Header Fields Too Large";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Internal Server Error";
    }
}

/* The whole answer: status line, headers and (unless HEAD) body. `body`
 * is taken (freed here); NULL: the status's reason as the body. Returns
 * the buffer or NULL when out of memory. */
static char *answer(int code, char *body, size_t body_len, bool head_only, size_t *len)
{
    char small[64];
    const char *type = "text/plain; charset=utf-8";
    if (code == 200) {
        type = "text/plain; version=0.0.4; charset=utf-8";
    } else {
        free(body);
        body = NULL;
        body_len = (size_t)snprintf(small, sizeof(small), "%d %s\n", code, reason(code));
    }
    char hdr[256];
    int n = snprintf(hdr, sizeof(hdr),
                     "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                     "Connection: close\r\n%s\r\n",
                     code, reason(code), type, body_len,
                     code == 405 ? "Allow: GET, HEAD\r\n" : "");
    size_t send_body = head_only ? 0 : body_len;
    char *out = malloc((size_t)n + send_body + 1);
    if (out) {
        memcpy(out, hdr, (size_t)n);
        memcpy(out + n, body ? body : small, send_body);
        *len = (size_t)n + send_body;
    }
    free(body);
    px_metrics_http_answered(code);
    return out;
}

/* ---- the request head ---- */

/* RFC 9110's token characters. */
static bool tchar(unsigned char ch)
{
    return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
           (ch && strchr("!#$%&'*+-.^_`|~", ch));
}

/* Where the head ends (after its empty line), or 0: not yet. A bare LF
 * ends a line as well as CRLF (RFC 9112 section 2.2). */
static size_t head_end(const char *p, size_t len)
{
    /* Empty lines before the request line are not its end (judge() skips
     * them, RFC 9112 2.2). */
    size_t start = 0;
    while (start < len && (p[start] == '\r' || p[start] == '\n'))
        start++;
    for (size_t i = start; i < len; i++) {
        if (p[i] != '\n')
            continue;
        size_t j = i + 1;
        if (j < len && p[j] == '\r')
            j++;
        if (j < len && p[j] == '\n')
            return j + 1;
    }
    return 0;
}

/* The line at *pos (without its CR LF or LF), advancing *pos past it. */
static const char *next_line(const char *p, size_t end, size_t *pos, size_t *n)
{
    const char *line = p + *pos;
    const char *nl = memchr(line, '\n', end - *pos);
    size_t len = nl ? (size_t)(nl - line) : end - *pos;
    *pos += len + (nl ? 1 : 0);
    if (len > 0 && line[len - 1] == '\r')
        len--;
    *n = len;
    return line;
}

/* The status a head deserves: 200 for a GET or HEAD of /metrics. */
static int judge(const char *p, size_t end, bool *head_only)
{
    size_t pos = 0, n;
    /* Empty lines before the request line are skipped (RFC 9112 2.2). */
    while (pos < end && (p[pos] == '\r' || p[pos] == '\n'))
        pos++;
    const char *line = next_line(p, end, &pos, &n);
    size_t m = 0;
    while (m < n && tchar((unsigned char)line[m]))
        m++;
    if (m == 0 || m == n || line[m] != ' ')
        return 400;
    /* A HEAD's answer has no body, whatever its status (RFC 9110 9.3.2). */
    if (m == 4 && memcmp(line, "HEAD", 4) == 0)
        *head_only = true;
    size_t t0 = m + 1, t1 = t0;
    while (t1 < n && line[t1] > ' ' && line[t1] < 0x7f)
        t1++;
    if (t1 == t0 || t1 == n || line[t1] != ' ')
        return 400;
    const char *version = line + t1 + 1;
    size_t vn = n - t1 - 1;
    if (vn != 8 || memcmp(version, "HTTP/", 5) != 0 || version[5] < '0' || version[5] > '9' ||
        version[6] != '.' || version[7] < '0' || version[7] > '9')
        return 400;
    bool v11 = memcmp(version + 5, "1.1", 3) == 0;
    if (!v11 && memcmp(version + 5, "1.0", 3) != 0)
        return 505;
    int hosts = 0;
    for (;;) {
        const char *h = next_line(p, end, &pos, &n);
        if (n == 0)
            break; /* the empty line: the head's end */
        if (h[0] == ' ' || h[0] == '\t')
            return 400; /* obsolete line folding (RFC 9112 5.2) */
        size_t k = 0;
        while (k < n && tchar((unsigned char)h[k]))
            k++;
        if (k == 0 || k == n || h[k] != ':')
            return 400;
        for (size_t i = k + 1; i < n; i++) {
            unsigned char ch = (unsigned char)h[i];
            if ((ch < ' ' && ch != '\t') || ch == 0x7f)
                return 400;
        }
        if (k == 4 && strncasecmp(h, "host", 4) == 0)
            hosts++;
    }
    if (v11 && hosts != 1)
        return 400; /* RFC 9112 3.2: exactly one Host in HTTP/1.1 */
    /* The target: origin-form, or absolute-form (its path); a query
     * string is ignored. */
    const char *target = line + t0;
    size_t tn = t1 - t0;
    if (tn > 7 && (strncasecmp(target, "http://", 7) == 0 || strncasecmp(target, "https://", 8) == 0)) {
        const char *auth = memchr(target, '/', tn);
        auth += 2; /* past "//" */
        const char *path = memchr(auth, '/', (size_t)(target + tn - auth));
        if (!path)
            return 404;
        tn -= (size_t)(path - target);
        target = path;
    }
    const char *q = memchr(target, '?', tn);
    if (q)
        tn = (size_t)(q - target);
    if (tn != 8 || memcmp(target, "/metrics", 8) != 0)
        return 404;
    if (m == 3 && memcmp(line, "GET", 3) == 0)
        return 200;
    if (m == 4 && memcmp(line, "HEAD", 4) == 0) {
        *head_only = true;
        return 200;
    }
    return 405;
}

/* ---- one connection ---- */

static void conn_write(px_http *h, hconn *c);
static void conn_read(px_http *h, hconn *c);

static void respond(px_http *h, hconn *c, int code, bool head_only)
{
    char *body = NULL;
    size_t body_len = 0;
    if (code == 200) {
        body = h->render(h->ud, &body_len);
        if (!body)
            code = 500;
    }
    c->out = answer(code, body, body_len, head_only, &c->out_len);
    if (!c->out) {
        conn_close(h, c);
        return;
    }
    c->out_off = 0;
    c->state = H_WRITING;
    conn_write(h, c);
}

static void conn_write(px_http *h, hconn *c)
{
    while (c->out_off < c->out_len) {
        ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
        if (n > 0) {
            c->out_off += (size_t)n;
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            conn_watch(h, c, EPOLLOUT);
            return;
        } else {
            conn_close(h, c);
            return;
        }
    }
    /* Answered: Connection: close. With nothing more from the client the
     * socket closes now, which frees its place at once. A client still
     * sending (a body, an oversized head) has its bytes read and dropped
     * until it closes, the write side shut so that it sees the end: a
     * close with unread bytes would reset the connection, and the client
     * could lose the answer. */
    free(c->out);
    c->out = NULL;
    shutdown(c->fd, SHUT_WR);
    c->state = H_DRAINING;
    c->drained = 0;
    conn_read(h, c);
    if (c->state != H_DRAINING)
        return; /* closed: the client's end, or too much */
    if (c->drained == 0)
        conn_close(h, c);
    else
        conn_watch(h, c, EPOLLIN);
}

static void conn_read(px_http *h, hconn *c)
{
    for (;;) {
        char *buf = c->head + c->len;
        size_t room = HEAD_MAX - c->len;
        if (c->state == H_DRAINING) {
            buf = c->head; /* the head is done with: scratch */
            room = HEAD_MAX;
        }
        ssize_t n = recv(c->fd, buf, room, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (n <= 0) {
            conn_close(h, c); /* the client's end, or an error */
            return;
        }
        if (c->state == H_DRAINING) {
            c->drained += (size_t)n;
            if (c->drained > DRAIN_BYTES) {
                conn_close(h, c);
                return;
            }
            continue;
        }
        c->len += (size_t)n;
        size_t end = head_end(c->head, c->len);
        if (end) {
            bool head_only = false;
            int code = judge(c->head, end, &head_only);
            respond(h, c, code, head_only);
            return;
        }
        if (c->len == HEAD_MAX) {
            respond(h, c, 431, false);
            return;
        }
    }
}

/* ---- the port ---- */

px_http *px_http_new(int epfd, int listen_fd, px_http_render_fn render, void *ud)
{
    px_http *h = calloc(1, sizeof(*h));
    if (!h) {
        close(listen_fd);
        return NULL;
    }
    h->watch.kind = PX_WATCH_HTTP;
    h->epfd = epfd;
    h->fd = listen_fd;
    h->render = render;
    h->ud = ud;
    for (int i = 0; i < MAX_CONNS; i++) {
        h->conns[i].watch.kind = PX_WATCH_HTTP;
        h->conns[i].fd = -1;
    }
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &h->watch};
    epoll_ctl(epfd, EPOLL_CTL_ADD, listen_fd, &ev);
    return h;
}

static void accept_all(px_http *h)
{
    for (int i = 0; i < 16; i++) { /* a bounded burst */
        int fd = accept4(h->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return;
        hconn *c = NULL;
        for (int k = 0; k < MAX_CONNS && !c; k++)
            if (h->conns[k].state == H_FREE)
                c = &h->conns[k];
        struct epoll_event ev = {.events = EPOLLIN};
        if (c) {
            ev.data.ptr = &c->watch;
            if (epoll_ctl(h->epfd, EPOLL_CTL_ADD, fd, &ev) != 0)
                c = NULL;
        }
        if (!c) {
            /* Full: one try at saying so, then closed. */
            size_t len;
            char *out = answer(503, NULL, 0, false, &len);
            if (out)
                (void)!send(fd, out, len, MSG_NOSIGNAL | MSG_DONTWAIT);
            free(out);
            close(fd);
            continue;
        }
        int64_t now = mono_ms();
        c->fd = fd;
        c->state = H_READING;
        c->len = 0;
        c->head_until = now + HEAD_MS;
        c->close_until = now + LIFE_MS;
        h->open++;
        px_metrics_http_open = h->open;
    }
}

void px_http_event(px_http *h, px_watch *w, uint32_t events)
{
    if (w == &h->watch) {
        accept_all(h);
        return;
    }
    hconn *c = (hconn *)w;
    if (c->state == H_FREE)
        return;
    if (c->state == H_WRITING) {
        if (events & (EPOLLERR | EPOLLHUP))
            conn_close(h, c);
        else
            conn_write(h, c);
        return;
    }
    conn_read(h, c);
}

static int64_t deadline(const hconn *c)
{
    return c->state == H_READING ? c->head_until : c->close_until;
}

int px_http_timeout_ms(const px_http *h)
{
    if (!h || h->open == 0)
        return -1;
    int64_t first = INT64_MAX;
    for (int i = 0; i < MAX_CONNS; i++)
        if (h->conns[i].state != H_FREE && deadline(&h->conns[i]) < first)
            first = deadline(&h->conns[i]);
    int64_t left = first - mono_ms();
    return left < 0 ? 0 : left > 60000 ? 60000 : (int)left;
}

void px_http_expire(px_http *h)
{
    if (!h || h->open == 0)
        return;
    int64_t now = mono_ms();
    for (int i = 0; i < MAX_CONNS; i++) {
        hconn *c = &h->conns[i];
        if (c->state == H_FREE || now < deadline(c))
            continue;
        if (c->state == H_READING && now < c->close_until)
            respond(h, c, 408, false);
        else
            conn_close(h, c);
    }
}

void px_http_stop(px_http *h)
{
    if (!h || h->fd < 0)
        return;
    epoll_ctl(h->epfd, EPOLL_CTL_DEL, h->fd, NULL);
    close(h->fd);
    h->fd = -1;
}

void px_http_free(px_http *h)
{
    if (!h)
        return;
    px_http_stop(h);
    for (int i = 0; i < MAX_CONNS; i++)
        if (h->conns[i].state != H_FREE)
            conn_close(h, &h->conns[i]);
    free(h);
}
