/* A memcached load driver (bench/proxy.sh, issue 33 item 6), in the manner
 * of memtier_benchmark, which Debian does not package: one thread, epoll, N
 * connections, each keeping P requests pipelined, `get` or `set` of keys
 * drawn uniformly from a key space, so that the same load can be put on
 * memcached itself and on momento-proxy's memcache port. The text protocol
 * by default; --binary speaks the binary one, which a port with a password
 * requires (memcached -S, momento-proxy --requirepass: issue 48).
 *
 *   mc_load --port N [--host 127.0.0.1] [--conns 50] [--pipeline 1]
 *           [--op get|set] [--keys 100000] [--value-bytes 100]
 *           [--multi 1] [--requests 1000000] [--seconds 10] [--prefill]
 *           [--binary [--sasl-pass PASS [--sasl-user bench]]]
 *   mc_load --port N --idle C [--hold 60]
 *           [--binary [--sasl-pass PASS] | --resp [--auth PASS]]
 *
 * Load mode. Keys are "key:%012u", as redis-benchmark's `key:__rand_int__`
 * writes them, and every value is its key padded with '.' to --value-bytes,
 * so each hit is checked (its length and its key; a mismatch is counted as
 * wrong, a bug). --multi M makes each get name M keys (one reply, M values
 * at most). --prefill first sets every key of the space once, on the same
 * connections, so that the gets of the measured phase hit. The measured
 * phase stops at --requests requests or after --seconds, whichever comes
 * first; requests still in flight then get two more seconds to complete.
 * A request's latency runs from when it is queued for writing to when its
 * reply has been parsed (the time is read once per read(), so the replies
 * of one read share it). Prints one line:
 *   RESULT mc_load op= conns= pipeline= keys= ... ops_per_s= p50_us= p99_us=
 *
 * --binary: a get is a GETK (its answer names its key), a set a SET with
 * flags and expiry 0, each request's opaque the number of its key; the
 * quiet forms are not used, every request has its answer. An answer is
 * checked as a text one is: a hit's value must be its key padded (and its
 * key the one asked for), a miss (status 1) is counted as a miss, any
 * other status as an error; an answer out of order (another opcode or
 * opaque) drops the connection. --multi is text only. With --sasl-pass,
 * each connection first authenticates, SASL PLAIN "\0USER\0PASS" (the
 * answer must be status 0, "Authenticated"); a refusal stops the run
 * (exit 1) with the server's answer.
 *
 * Idle mode (--idle C): opens C connections, checks each is served (a
 * `version`, a binary version with --binary, or a RESP PING with --resp),
 * after authenticating it first with --sasl-pass (--binary) or --auth
 * (--resp: AUTH PASS, answered +OK; a refusal stops the run), prints
 * "ready open=N" on stdout, then holds them without traffic until --hold
 * seconds pass or SIGTERM / SIGINT arrives; it then checks each once more
 * and prints
 *   RESULT mc_idle connections=C open=N alive=M
 *
 * Loopback use only; every run is bounded in requests and in time. */
#include "histogram.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define KEY_FMT "key:%012u"
#define KEY_LEN 16
#define DRAIN_NS 2000000000LL

/* The binary protocol (memcached's protocol_binary.h). */
#define BIN_HDR 24
#define BIN_REQ 0x80
#define BIN_RES 0x81
#define OP_GET_K 0x0c
#define OP_SET 0x01
#define OP_VERSION 0x0b
#define OP_SASL_AUTH 0x21
#define ST_OK 0x0000
#define ST_KEY_ENOENT 0x0001
#define BIN_BODY_MAX (64u << 20) /* more is no answer of ours: the stream is lost */

typedef struct conn {
    int fd;
    int open;
    char *rbuf;
    size_t rlen, rcap;
    char *wbuf;
    size_t wlen, woff, wcap;
    int64_t *sent; /* queue times of the requests in flight, a ring of P */
    uint32_t *keys; /* --binary: their keys' numbers, the opaques (same ring) */
    unsigned head, inflight;
    int watching_out;
} conn;

static const char *host = "127.0.0.1";
static int port;
static int nconns = 50;
static unsigned pipeline = 1;
static int op_set;
static uint32_t keyspace = 100000;
static size_t value_bytes = 100;
static unsigned multi = 1;
static uint64_t max_requests = 1000000;
static double seconds = 10;
static int prefill;
static int idle_conns;
static double hold_s = 60;
static int resp_probe;
static int binary;
static const char *sasl_pass;
static const char *sasl_user = "bench";
static const char *resp_pass;

static conn *conns;
static int epfd;
static char *value_tmpl;
static uint64_t rng = 0x9e3779b97f4a7c15ULL;

/* What one phase counts. */
static histogram hist;
static uint64_t issued, completed, hits, misses, errors, wrong, closed_conns;
static int64_t last_done_ns;
static uint32_t seq_next; /* the next key to set, in the prefill phase */
static int phase_prefill;

static volatile sig_atomic_t stop_signal;

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void die(const char *what)
{
    perror(what);
    exit(2);
}

static void *xrealloc(void *p, size_t n)
{
    p = realloc(p, n);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    return p;
}

static uint32_t next_key(void)
{
    /* xorshift64*: cheap and good enough to spread keys uniformly. */
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return (uint32_t)((rng * 0x2545f4914f6cdd1dULL) >> 32) % keyspace;
}

static void wreserve(conn *c, size_t n)
{
    if (c->wlen + n <= c->wcap)
        return;
    if (c->woff > 0) { /* slide what is left to the front first */
        memmove(c->wbuf, c->wbuf + c->woff, c->wlen - c->woff);
        c->wlen -= c->woff;
        c->woff = 0;
        if (c->wlen + n <= c->wcap)
            return;
    }
    while (c->wlen + n > c->wcap)
        c->wcap = c->wcap ? c->wcap * 2 : 4096;
    c->wbuf = xrealloc(c->wbuf, c->wcap);
}

static void wappend(conn *c, const char *s, size_t n)
{
    wreserve(c, n);
    memcpy(c->wbuf + c->wlen, s, n);
    c->wlen += n;
}

/* The value stored for a key: the key, then '.' up to value_bytes. */
static void put_value(conn *c, const char *key)
{
    wreserve(c, value_bytes);
    memcpy(c->wbuf + c->wlen, value_tmpl, value_bytes);
    memcpy(c->wbuf + c->wlen, key, value_bytes < KEY_LEN ? value_bytes : KEY_LEN);
    c->wlen += value_bytes;
}

static void put_be16(char *p, uint16_t v)
{
    p[0] = (char)(v >> 8);
    p[1] = (char)v;
}

static void put_be32(char *p, uint32_t v)
{
    p[0] = (char)(v >> 24);
    p[1] = (char)(v >> 16);
    p[2] = (char)(v >> 8);
    p[3] = (char)v;
}

static uint16_t be16(const char *p)
{
    const unsigned char *u = (const unsigned char *)p;
    return (uint16_t)(u[0] << 8 | u[1]);
}

static uint32_t be32(const char *p)
{
    const unsigned char *u = (const unsigned char *)p;
    return (uint32_t)u[0] << 24 | (uint32_t)u[1] << 16 | (uint32_t)u[2] << 8 | u[3];
}

/* A binary request's header: no data type, vbucket or cas. */
static void bin_header(char *h, uint8_t op, uint16_t keylen, uint8_t extlen, uint32_t body,
                       uint32_t opaque)
{
    memset(h, 0, BIN_HDR);
    h[0] = (char)BIN_REQ;
    h[1] = (char)op;
    put_be16(h + 2, keylen);
    h[4] = (char)extlen;
    put_be32(h + 8, body);
    put_be32(h + 12, opaque);
}

/* --binary: a GETK or a SET (flags and expiry 0) of key number k, whose
 * opaque is k: its answer must carry it back. */
static void queue_bin(conn *c, uint32_t k, int is_set)
{
    char key[KEY_LEN + 1], h[BIN_HDR + 8];
    snprintf(key, sizeof(key), KEY_FMT, k);
    if (is_set) {
        bin_header(h, OP_SET, KEY_LEN, 8, (uint32_t)(8 + KEY_LEN + value_bytes), k);
        memset(h + BIN_HDR, 0, 8);
        wappend(c, h, BIN_HDR + 8);
        wappend(c, key, KEY_LEN);
        put_value(c, key);
    } else {
        bin_header(h, OP_GET_K, KEY_LEN, 0, KEY_LEN, k);
        wappend(c, h, BIN_HDR);
        wappend(c, key, KEY_LEN);
    }
    c->keys[(c->head + c->inflight) % pipeline] = k;
}

static void queue_request(conn *c, int64_t t)
{
    char key[KEY_LEN + 1], line[64];
    if (binary) {
        int is_set = phase_prefill || op_set;
        queue_bin(c, phase_prefill ? seq_next++ : next_key(), is_set);
    } else if (phase_prefill || op_set) {
        uint32_t k = phase_prefill ? seq_next++ : next_key();
        snprintf(key, sizeof(key), KEY_FMT, k);
        int n = snprintf(line, sizeof(line), "set %s 0 0 %zu\r\n", key, value_bytes);
        wappend(c, line, (size_t)n);
        put_value(c, key);
        wappend(c, "\r\n", 2);
    } else {
        wappend(c, "get", 3);
        for (unsigned i = 0; i < multi; i++) {
            snprintf(key, sizeof(key), KEY_FMT, next_key());
            wappend(c, " ", 1);
            wappend(c, key, KEY_LEN);
        }
        wappend(c, "\r\n", 2);
    }
    c->sent[(c->head + c->inflight) % pipeline] = t;
    c->inflight++;
    issued++;
}

static void close_conn(conn *c)
{
    if (!c->open)
        return;
    epoll_ctl(epfd, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    c->open = 0;
    closed_conns++;
    /* What was in flight on it will never be answered: counted as errors. */
    errors += c->inflight;
    completed += c->inflight;
    c->inflight = 0;
}

static void watch_out(conn *c, int on)
{
    if (c->watching_out == on)
        return;
    struct epoll_event ev = {.events = EPOLLIN | (on ? EPOLLOUT : 0), .data.ptr = c};
    if (epoll_ctl(epfd, EPOLL_CTL_MOD, c->fd, &ev) < 0)
        die("epoll_ctl");
    c->watching_out = on;
}

static void flush(conn *c)
{
    while (c->woff < c->wlen) {
        ssize_t n = write(c->fd, c->wbuf + c->woff, c->wlen - c->woff);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN) {
                watch_out(c, 1);
                return;
            }
            close_conn(c);
            return;
        }
        c->woff += (size_t)n;
    }
    c->woff = c->wlen = 0;
    watch_out(c, 0);
}

static const char *find_crlf(const char *p, const char *end)
{
    for (; p + 1 < end; p++) {
        p = memchr(p, '\r', (size_t)(end - p - 1));
        if (!p)
            return NULL;
        if (p[1] == '\n')
            return p;
    }
    return NULL;
}

static int is_error_line(const char *p, size_t n)
{
    return (n >= 5 && memcmp(p, "ERROR", 5) == 0) || (n >= 12 && memcmp(p, "CLIENT_ERROR", 12) == 0) ||
           (n >= 12 && memcmp(p, "SERVER_ERROR", 12) == 0);
}

/* Parses one whole reply at p: returns its length, 0 if it is not all
 * there yet, -1 if it makes no sense (the connection is then dropped). */
static long parse_reply(const char *p, const char *end, int is_get)
{
    const char *start = p;
    if (!is_get) {
        const char *e = find_crlf(p, end);
        if (!e)
            return 0;
        size_t n = (size_t)(e - p);
        if (n == 6 && memcmp(p, "STORED", 6) == 0)
            ;
        else if (is_error_line(p, n) || (n == 10 && memcmp(p, "NOT_STORED", 10) == 0))
            errors++;
        else
            return -1;
        return e + 2 - start;
    }
    uint64_t h = 0, w = 0;
    for (;;) {
        const char *e = find_crlf(p, end);
        if (!e)
            return 0;
        size_t n = (size_t)(e - p);
        if (n == 3 && memcmp(p, "END", 3) == 0) {
            p = e + 2;
            break;
        }
        if (is_error_line(p, n)) {
            errors++;
            return e + 2 - start;
        }
        if (n < 6 || memcmp(p, "VALUE ", 6) != 0)
            return -1;
        /* VALUE <key> <flags> <bytes> [<cas>] */
        const char *k = p + 6;
        const char *ke = memchr(k, ' ', (size_t)(e - k));
        if (!ke)
            return -1;
        const char *fl = ke + 1;
        const char *fe = memchr(fl, ' ', (size_t)(e - fl));
        if (!fe)
            return -1;
        char num[24];
        size_t nl = (size_t)(e - fe - 1);
        const char *sp = memchr(fe + 1, ' ', nl);
        if (sp)
            nl = (size_t)(sp - fe - 1);
        if (nl == 0 || nl >= sizeof(num))
            return -1;
        memcpy(num, fe + 1, nl);
        num[nl] = 0;
        size_t bytes = strtoull(num, NULL, 10);
        const char *data = e + 2;
        if ((size_t)(end - data) < bytes + 2)
            return 0;
        if (data[bytes] != '\r' || data[bytes + 1] != '\n')
            return -1;
        size_t klen = (size_t)(ke - k);
        size_t cmp = value_bytes < KEY_LEN ? value_bytes : KEY_LEN;
        if (bytes != value_bytes || klen != KEY_LEN || memcmp(data, k, cmp) != 0)
            w++;
        else
            h++;
        p = data + bytes + 2;
    }
    hits += h;
    wrong += w;
    misses += multi > h + w ? multi - h - w : 0;
    return p - start;
}

/* --binary: parses the answer to c's oldest request at p, as
 * parse_reply() does a text one: its length, 0 if it is not all there yet,
 * -1 if it is no answer to that request (another opcode or opaque, a
 * garbled header). */
static long parse_bin(const conn *c, const char *p, const char *end, int is_get)
{
    if (end - p < BIN_HDR)
        return 0;
    uint32_t body = be32(p + 8);
    uint16_t keylen = be16(p + 2), status = be16(p + 6);
    uint8_t extlen = (uint8_t)p[4];
    uint32_t want = c->keys[c->head];
    if ((uint8_t)p[0] != BIN_RES || (uint8_t)p[1] != (is_get ? OP_GET_K : OP_SET) ||
        body > BIN_BODY_MAX || (uint32_t)extlen + keylen > body || be32(p + 12) != want)
        return -1;
    if ((size_t)(end - p) < BIN_HDR + (size_t)body)
        return 0;
    if (status == ST_KEY_ENOENT && is_get) {
        misses++;
    } else if (status != ST_OK) {
        errors++;
    } else if (is_get) {
        const char *k = p + BIN_HDR + extlen, *data = k + keylen;
        size_t bytes = body - extlen - keylen;
        char asked[KEY_LEN + 1];
        snprintf(asked, sizeof(asked), KEY_FMT, want);
        size_t cmp = value_bytes < KEY_LEN ? value_bytes : KEY_LEN;
        if (bytes != value_bytes || keylen != KEY_LEN || memcmp(k, asked, KEY_LEN) != 0 ||
            memcmp(data, k, cmp) != 0)
            wrong++;
        else
            hits++;
    }
    return BIN_HDR + (long)body;
}

/* What came that made no sense, for the message: text as it is, binary in
 * hex (its first header). */
static void print_unexpected(const char *what, const char *p, const char *end)
{
    long n = end - p > 80 ? 80 : end - p;
    if (!binary) {
        fprintf(stderr, "mc_load: %s: %.*s\n", what, (int)n, p);
        return;
    }
    fprintf(stderr, "mc_load: %s:", what);
    for (long i = 0; i < n && i < BIN_HDR; i++)
        fprintf(stderr, " %02x", (unsigned char)p[i]);
    fprintf(stderr, "\n");
}

static void on_readable(conn *c, int64_t *now)
{
    for (;;) {
        if (c->rcap - c->rlen < 16384) {
            c->rcap = c->rcap ? c->rcap * 2 : 65536;
            c->rbuf = xrealloc(c->rbuf, c->rcap);
        }
        ssize_t n = read(c->fd, c->rbuf + c->rlen, c->rcap - c->rlen);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            break;
        if (n <= 0) {
            close_conn(c);
            return;
        }
        *now = now_ns();
        c->rlen += (size_t)n;
        const char *p = c->rbuf, *end = c->rbuf + c->rlen;
        while (c->inflight > 0) {
            int is_get = !(phase_prefill || op_set);
            long used = binary ? parse_bin(c, p, end, is_get) : parse_reply(p, end, is_get);
            if (used == 0)
                break;
            if (used < 0) {
                print_unexpected("unexpected reply", p, end);
                close_conn(c);
                return;
            }
            p += used;
            int64_t t0 = c->sent[c->head];
            c->head = (c->head + 1) % pipeline;
            c->inflight--;
            completed++;
            hist_record(&hist, (uint64_t)((*now - t0) / 1000));
            last_done_ns = *now;
        }
        if (c->inflight == 0 && p < end) {
            print_unexpected("reply without a request", p, end);
            close_conn(c);
            return;
        }
        memmove(c->rbuf, p, (size_t)(end - p));
        c->rlen = (size_t)(end - p);
        if ((size_t)n < c->rcap - c->rlen)
            break; /* the socket is likely drained: skip a read that would say EAGAIN */
    }
}

static int connect_one(void)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, host, &a.sin_addr) != 1) {
        fprintf(stderr, "mc_load: --host must be a numeric IPv4 address\n");
        exit(2);
    }
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        die("socket");
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
        die("connect");
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
}

/* Blocking I/O on a connection not yet in the loop (its receive timeout
 * bounds each read): 1 when all n bytes went or came, 0 if not. */
static int write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return 0;
        p += w;
        n -= (size_t)w;
    }
    return 1;
}

static int read_full(int fd, char *p, size_t n)
{
    while (n > 0) {
        ssize_t r = read(fd, p, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return 0;
        p += r;
        n -= (size_t)r;
    }
    return 1;
}

/* One binary request on fd and its answer's header; the answer's body
 * (up to cap bytes of it; the rest is read and dropped) into body.
 * Returns the answer's status, or -1 if none came (closed, 5 s of
 * silence, not an answer to op). */
static int bin_call(int fd, const char *req, size_t n, uint8_t op, char *body, size_t cap,
                    size_t *body_len)
{
    char h[BIN_HDR];
    if (!write_all(fd, req, n) || !read_full(fd, h, BIN_HDR) || (uint8_t)h[0] != BIN_RES ||
        (uint8_t)h[1] != op)
        return -1;
    uint32_t len = be32(h + 8);
    if (len > BIN_BODY_MAX)
        return -1;
    size_t keep = len < cap ? len : cap;
    if (!read_full(fd, body, keep))
        return -1;
    for (uint32_t left = len - (uint32_t)keep; left > 0;) {
        char skip[256];
        size_t k = left < sizeof(skip) ? left : sizeof(skip);
        if (!read_full(fd, skip, k))
            return -1;
        left -= (uint32_t)k;
    }
    *body_len = keep;
    return be16(h + 6);
}

/* SASL PLAIN on connection i (blocking, fd's receive timeout set): the
 * run goes on only if the server answers status 0. A refusal is no load
 * figure: the run stops, with the server's answer. */
static void sasl_plain(int fd, int i)
{
    size_t ul = strlen(sasl_user), pl = strlen(sasl_pass);
    size_t vlen = 1 + ul + 1 + pl, body = 5 + vlen;
    char *m = malloc(BIN_HDR + body);
    if (!m)
        die("malloc");
    bin_header(m, OP_SASL_AUTH, 5, 0, (uint32_t)body, 0);
    memcpy(m + BIN_HDR, "PLAIN", 5);
    char *v = m + BIN_HDR + 5;
    v[0] = '\0';
    memcpy(v + 1, sasl_user, ul);
    v[1 + ul] = '\0';
    memcpy(v + 2 + ul, sasl_pass, pl);
    char ans[128];
    size_t an = 0;
    int st = bin_call(fd, m, BIN_HDR + body, OP_SASL_AUTH, ans, sizeof(ans), &an);
    free(m);
    if (st == ST_OK)
        return;
    if (st < 0)
        fprintf(stderr, "mc_load: SASL PLAIN auth on connection %d: no answer (closed, or 5 s of silence)\n", i);
    else
        fprintf(stderr, "mc_load: SASL PLAIN auth on connection %d refused: status 0x%04x \"%.*s\"\n", i, st,
                (int)an, ans);
    exit(1);
}

/* --resp --auth: AUTH PASS on connection i, answered +OK, or the run stops. */
static void resp_auth(int fd, int i)
{
    char req[512], line[256];
    size_t pl = strlen(resp_pass);
    int n = snprintf(req, sizeof(req), "*2\r\n$4\r\nAUTH\r\n$%zu\r\n%s\r\n", pl, resp_pass);
    if (n < 0 || (size_t)n >= sizeof(req)) {
        fprintf(stderr, "mc_load: --auth: the password is too long\n");
        exit(2);
    }
    size_t got = 0;
    int ok = write_all(fd, req, (size_t)n);
    while (ok && got < sizeof(line) - 1 && !(got >= 2 && line[got - 2] == '\r' && line[got - 1] == '\n'))
        ok = read_full(fd, line + got++, 1);
    if (ok && got == 5 && memcmp(line, "+OK\r\n", 5) == 0)
        return;
    if (!ok)
        fprintf(stderr, "mc_load: AUTH on connection %d: no answer (closed, or 5 s of silence)\n", i);
    else
        fprintf(stderr, "mc_load: AUTH on connection %d refused: %.*s\n", i, (int)(got > 2 ? got - 2 : got), line);
    exit(1);
}

/* One phase: prefill (sets of keys 0..keyspace-1) or the measured load. */
static void run_phase(int is_prefill, uint64_t limit, double max_s, int64_t *ret_start, int64_t *ret_end)
{
    phase_prefill = is_prefill;
    hist_init(&hist);
    issued = completed = hits = misses = errors = wrong = 0;
    seq_next = 0;
    int64_t start = now_ns(), now = start, deadline = start + (int64_t)(max_s * 1e9);
    last_done_ns = start;
    for (int i = 0; i < nconns; i++) {
        conn *c = &conns[i];
        while (c->open && c->inflight < pipeline && issued < limit)
            queue_request(c, now);
        if (c->open)
            flush(c);
    }
    struct epoll_event evs[256];
    for (;;) {
        int open = 0;
        uint64_t inflight = 0;
        for (int i = 0; i < nconns; i++) {
            open += conns[i].open;
            inflight += conns[i].inflight;
        }
        int stopping = issued >= limit || now >= deadline || stop_signal;
        if (!open || (stopping && inflight == 0) || now >= deadline + DRAIN_NS)
            break;
        int n = epoll_wait(epfd, evs, 256, 100);
        if (n < 0 && errno != EINTR)
            die("epoll_wait");
        now = now_ns();
        for (int i = 0; i < n; i++) {
            conn *c = evs[i].data.ptr;
            if (!c->open)
                continue;
            if (evs[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP))
                on_readable(c, &now);
            if (!c->open)
                continue;
            while (c->inflight < pipeline && issued < limit && now < deadline && !stop_signal)
                queue_request(c, now);
            if (c->wlen > c->woff)
                flush(c);
        }
    }
    uint64_t lost = 0;
    for (int i = 0; i < nconns; i++)
        lost += conns[i].inflight;
    if (lost) {
        fprintf(stderr, "mc_load: %llu requests unanswered %.0f s after the end\n", (unsigned long long)lost,
                DRAIN_NS / 1e9);
        errors += lost;
    }
    *ret_start = start;
    *ret_end = last_done_ns > start ? last_done_ns : now;
}

static void run_load(void)
{
    conns = calloc((size_t)nconns, sizeof(conn));
    if (!conns)
        die("calloc");
    epfd = epoll_create1(EPOLL_CLOEXEC);
    if (epfd < 0)
        die("epoll_create1");
    for (int i = 0; i < nconns; i++) {
        conn *c = &conns[i];
        c->fd = connect_one();
        if (sasl_pass) { /* before the loop: blocking, each read bounded */
            struct timeval tv = {.tv_sec = 5};
            setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
            sasl_plain(c->fd, i);
        }
        fcntl(c->fd, F_SETFL, fcntl(c->fd, F_GETFL) | O_NONBLOCK);
        c->open = 1;
        c->sent = calloc(pipeline, sizeof(int64_t));
        if (!c->sent)
            die("calloc");
        if (binary && !(c->keys = calloc(pipeline, sizeof(uint32_t))))
            die("calloc");
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
        if (epoll_ctl(epfd, EPOLL_CTL_ADD, c->fd, &ev) < 0)
            die("epoll_ctl");
    }
    int64_t s, e;
    if (prefill) {
        run_phase(1, keyspace, 120, &s, &e);
        printf("prefill keys=%u seconds=%.2f errors=%llu\n", keyspace, (e - s) / 1e9, (unsigned long long)errors);
        if (errors || completed < keyspace) {
            fprintf(stderr, "mc_load: the prefill did not store every key\n");
            exit(1);
        }
    }
    run_phase(0, max_requests, seconds, &s, &e);
    double el = (e - s) / 1e9;
    char p50[32], p99[32], p999[32];
    printf("RESULT mc_load op=%s conns=%d pipeline=%u keys=%u value_bytes=%zu multi=%u requests=%llu "
           "seconds=%.2f ops_per_s=%.0f p50_us=%s p99_us=%s p999_us=%s max_us=%llu hits=%llu misses=%llu "
           "errors=%llu wrong=%llu closed=%llu protocol=%s\n",
           op_set ? "set" : "get", nconns, pipeline, keyspace, value_bytes, op_set ? 1 : multi,
           (unsigned long long)completed, el, el > 0 ? completed / el : 0.0, hist_quantile_str(&hist, 0.5, 1, p50, sizeof(p50)),
           hist_quantile_str(&hist, 0.99, 1, p99, sizeof(p99)), hist_quantile_str(&hist, 0.999, 1, p999, sizeof(p999)),
           (unsigned long long)hist.max, (unsigned long long)hits, (unsigned long long)misses,
           (unsigned long long)errors, (unsigned long long)wrong, (unsigned long long)closed_conns,
           binary ? "binary" : "text");
}

/* Sends the probe on fd and reads its reply's first line: 1 if it is the
 * expected one, 0 if not (closed, refused, an error, 5 s of silence). */
static int probe(int fd)
{
    if (binary) {
        char h[BIN_HDR], body[64];
        size_t n;
        bin_header(h, OP_VERSION, 0, 0, 0, 0);
        return bin_call(fd, h, BIN_HDR, OP_VERSION, body, sizeof(body), &n) == ST_OK;
    }
    const char *req = resp_probe ? "PING\r\n" : "version\r\n";
    const char *want = resp_probe ? "+PONG\r\n" : "VERSION ";
    if (write(fd, req, strlen(req)) != (ssize_t)strlen(req))
        return 0;
    char buf[256];
    size_t got = 0;
    while (got < strlen(want)) {
        ssize_t n = read(fd, buf + got, sizeof(buf) - got);
        if (n <= 0)
            return 0;
        got += (size_t)n;
    }
    if (memcmp(buf, want, strlen(want)) != 0)
        return 0;
    /* The rest of a VERSION line: read to its end so the next probe starts clean. */
    while (!memchr(buf, '\n', got)) {
        ssize_t n = read(fd, buf, sizeof(buf));
        if (n <= 0)
            return 0;
        got = (size_t)n;
    }
    return 1;
}

static void on_stop(int sig)
{
    (void)sig;
    stop_signal = 1;
}

static void run_idle(void)
{
    int *fds = calloc((size_t)idle_conns, sizeof(int));
    if (!fds)
        die("calloc");
    int open = 0;
    struct timeval tv = {.tv_sec = 5};
    for (int i = 0; i < idle_conns; i++) {
        fds[i] = connect_one();
        setsockopt(fds[i], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        if (sasl_pass)
            sasl_plain(fds[i], i);
        if (resp_pass)
            resp_auth(fds[i], i);
        open += probe(fds[i]);
    }
    printf("ready open=%d\n", open);
    fflush(stdout);
    int64_t end = now_ns() + (int64_t)(hold_s * 1e9);
    while (!stop_signal && now_ns() < end) {
        struct timespec ts = {0, 50000000};
        nanosleep(&ts, NULL);
    }
    int alive = 0;
    for (int i = 0; i < idle_conns; i++) {
        alive += probe(fds[i]);
        close(fds[i]);
    }
    printf("RESULT mc_idle connections=%d open=%d alive=%d\n", idle_conns, open, alive);
}

static void usage(void)
{
    fprintf(stderr, "usage: mc_load --port N [--host A] [--conns N] [--pipeline P] [--op get|set]\n"
                    "               [--keys K] [--value-bytes V] [--multi M] [--requests N]\n"
                    "               [--seconds S] [--prefill]\n"
                    "               [--binary [--sasl-pass PASS [--sasl-user USER]]]\n"
                    "       mc_load --port N --idle C [--hold S]\n"
                    "               [--binary [--sasl-pass PASS] | --resp [--auth PASS]]\n"
                    "--multi is text only (M > 1 with --binary is refused).\n");
    exit(2);
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"host", required_argument, 0, 'h'},        {"port", required_argument, 0, 'p'},
        {"conns", required_argument, 0, 'c'},       {"pipeline", required_argument, 0, 'P'},
        {"op", required_argument, 0, 'o'},          {"keys", required_argument, 0, 'k'},
        {"value-bytes", required_argument, 0, 'v'}, {"multi", required_argument, 0, 'm'},
        {"requests", required_argument, 0, 'n'},    {"seconds", required_argument, 0, 's'},
        {"prefill", no_argument, 0, 'f'},           {"idle", required_argument, 0, 'i'},
        {"hold", required_argument, 0, 'H'},        {"resp", no_argument, 0, 'r'},
        {"binary", no_argument, 0, 'b'},            {"sasl-pass", required_argument, 0, 'S'},
        {"sasl-user", required_argument, 0, 'U'},   {"auth", required_argument, 0, 'a'},
        {0, 0, 0, 0},
    };
    int o;
    while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (o) {
        case 'h': host = optarg; break;
        case 'p': port = atoi(optarg); break;
        case 'c': nconns = atoi(optarg); break;
        case 'P': pipeline = (unsigned)atoi(optarg); break;
        case 'o':
            if (strcmp(optarg, "get") && strcmp(optarg, "set"))
                usage();
            op_set = strcmp(optarg, "set") == 0;
            break;
        case 'k': keyspace = (uint32_t)strtoul(optarg, NULL, 10); break;
        case 'v': value_bytes = strtoul(optarg, NULL, 10); break;
        case 'm': multi = (unsigned)atoi(optarg); break;
        case 'n': max_requests = strtoull(optarg, NULL, 10); break;
        case 's': seconds = atof(optarg); break;
        case 'f': prefill = 1; break;
        case 'i': idle_conns = atoi(optarg); break;
        case 'H': hold_s = atof(optarg); break;
        case 'r': resp_probe = 1; break;
        case 'b': binary = 1; break;
        case 'S': sasl_pass = optarg; break;
        case 'U': sasl_user = optarg; break;
        case 'a': resp_pass = optarg; break;
        default: usage();
        }
    }
    if (port <= 0 || port > 65535 || nconns < 1 || pipeline < 1 || keyspace < 1 || multi < 1 || multi > 1000 ||
        seconds <= 0 || idle_conns < 0 || value_bytes > (1u << 20))
        usage();
    /* Each credential goes with its protocol; a binary get names one key. */
    if ((sasl_pass && !binary) || (resp_pass && !resp_probe) || (binary && resp_probe) ||
        (binary && multi > 1))
        usage();
    /* 1000 connections and more need descriptors past a default soft limit. */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    signal(SIGPIPE, SIG_IGN);
    struct sigaction sa = {.sa_handler = on_stop};
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    if (idle_conns > 0) {
        run_idle();
        return 0;
    }
    value_tmpl = malloc(value_bytes + 1);
    if (!value_tmpl)
        die("malloc");
    memset(value_tmpl, '.', value_bytes);
    run_load();
    return (errors || wrong) ? 1 : 0;
}
