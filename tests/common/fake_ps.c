/* The fake protosocket server (fake_ps.h): one thread polling the listening
 * socket and its connections every few milliseconds, blocking writes (the
 * replies are small), the scripted behaviour read under the lock at each
 * command. */
#include "fake_ps.h"
#include "testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONNS 32
#define MAX_ITEMS 256
#define MAX_HELD 256

typedef struct reply {
    uint8_t *bytes;
    size_t len;
} reply;

typedef struct fconn {
    int fd;
    size_t index;         /* among every connection accepted */
    uint8_t *rbuf;
    size_t rlen, rcap;
    reply held[MAX_HELD]; /* the held modes' replies, in the order of their commands */
    size_t n_held;
    int64_t auth_due_ns;  /* a delayed Authenticate's answer: when; 0 = none */
    uint64_t auth_id;
} fconn;

typedef struct item {
    char *key, *value;
    size_t key_len, value_len;
} item;

struct tu_ps {
    int lfd;
    pthread_t thread;
    atomic_bool stopping;
    char endpoint[64];

    pthread_mutex_t lock; /* everything below */
    tu_ps_mode mode;
    size_t n;
    char *target;
    int auth_delay_ms;
    tu_ps_frame *frames;
    size_t n_frames, cap_frames;
    int64_t auth_answered[MAX_CONNS];
    size_t accepted;
    item items[MAX_ITEMS];
    size_t n_items;

    fconn conns[MAX_CONNS]; /* the thread's */
    size_t n_conns;
};

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void write_all(int fd, const uint8_t *p, size_t n)
{
    while (n) {
        ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
        if (k <= 0)
            return; /* the client went away: nothing to answer */
        p += k;
        n -= (size_t)k;
    }
}

static reply encode(const ps_response *r)
{
    reply out = {.len = ps_response_frame_size(r)};
    out.bytes = malloc(out.len);
    assert_non_null(out.bytes);
    assert_int_equal(ps_response_encode(r, out.bytes), out.len);
    return out;
}

/* ---- the map (the fake's thread, under the lock) ---- */

static item *find(tu_ps *f, const uint8_t *key, size_t len)
{
    for (size_t i = 0; i < f->n_items; i++)
        if (f->items[i].key_len == len && memcmp(f->items[i].key, key, len) == 0)
            return &f->items[i];
    return NULL;
}

static char *dup_bytes(const uint8_t *p, size_t n)
{
    char *s = malloc(n + 1);
    assert_non_null(s);
    if (n)
        memcpy(s, p, n);
    s[n] = '\0';
    return s;
}

static void store(tu_ps *f, const uint8_t *key, size_t key_len, const uint8_t *v, size_t v_len)
{
    item *it = find(f, key, key_len);
    if (!it) {
        assert_true(f->n_items < MAX_ITEMS);
        it = &f->items[f->n_items++];
        it->key = dup_bytes(key, key_len);
        it->key_len = key_len;
    } else {
        free(it->value);
    }
    it->value = dup_bytes(v, v_len);
    it->value_len = v_len;
}

/* The reply to a get, set or delete, from the map. */
static reply answer(tu_ps *f, const ps_command *c)
{
    ps_response r = {.id = c->id, .kind = c->kind};
    item *it = find(f, c->key.data, c->key.len);
    if (c->kind == PS_GET && it) {
        r.value = (ps_bytes){(const uint8_t *)it->value, it->value_len};
    } else if (c->kind == PS_GET) {
        r.kind = PS_ERROR;
        r.code = 5; /* NOT_FOUND */
        r.message = (ps_bytes){(const uint8_t *)"Key not found", 13};
    } else if (c->kind == PS_SET) {
        store(f, c->key.data, c->key.len, c->value.data, c->value.len);
    } else if (it) {
        free(it->key);
        free(it->value);
        *it = f->items[--f->n_items];
    }
    return encode(&r);
}

/* ---- connections (the fake's thread) ---- */

static void conn_close(tu_ps *f, fconn *c)
{
    close(c->fd);
    free(c->rbuf);
    for (size_t i = 0; i < c->n_held; i++)
        free(c->held[i].bytes);
    *c = f->conns[--f->n_conns];
}

static void answer_auth(tu_ps *f, fconn *c, uint64_t id, bool refuse)
{
    ps_response r = {.id = id, .kind = PS_AUTH};
    if (refuse) {
        r.kind = PS_ERROR;
        r.code = 16; /* UNAUTHENTICATED */
        r.message = (ps_bytes){(const uint8_t *)"Invalid token", 13};
    }
    reply out = encode(&r);
    write_all(c->fd, out.bytes, out.len);
    free(out.bytes);
    pthread_mutex_lock(&f->lock);
    if (c->index < MAX_CONNS)
        f->auth_answered[c->index] = now_ns();
    pthread_mutex_unlock(&f->lock);
}

/* Writes what a held mode held once `n` commands are in; false when the
 * connection was closed (c is then gone). Under the lock. */
static bool release_held(tu_ps *f, fconn *c)
{
    if (c->n_held < f->n)
        return true;
    if (f->mode == TU_PS_REVERSE) {
        for (size_t i = c->n_held; i-- > 0;)
            write_all(c->fd, c->held[i].bytes, c->held[i].len);
    } else if (f->mode == TU_PS_MERGE) {
        size_t total = 0;
        for (size_t i = 0; i < c->n_held; i++)
            total += c->held[i].len;
        uint8_t *all = malloc(total), *p = all;
        assert_non_null(all);
        for (size_t i = 0; i < c->n_held; i++) {
            memcpy(p, c->held[i].bytes, c->held[i].len);
            p += c->held[i].len;
        }
        write_all(c->fd, all, total);
        free(all);
    } else if (f->mode == TU_PS_CUT) {
        write_all(c->fd, c->held[0].bytes, c->held[0].len / 2 ? c->held[0].len / 2 : 1);
        f->mode = TU_PS_NORMAL;
        conn_close(f, c);
        return false;
    } else if (f->mode == TU_PS_OVERSIZE) {
        uint8_t junk[64] = {0};
        size_t k = ps_varint_put(junk, 5u * 1024 * 1024);
        write_all(c->fd, junk, k + 32);
    }
    for (size_t i = 0; i < c->n_held; i++)
        free(c->held[i].bytes);
    c->n_held = 0;
    return true;
}

/* One command received on `c`. false: `c` was closed. */
static bool on_command(tu_ps *f, fconn *c, const ps_command *cmd)
{
    pthread_mutex_lock(&f->lock);
    if (f->n_frames == f->cap_frames) {
        f->cap_frames = f->cap_frames ? f->cap_frames * 2 : 64;
        f->frames = realloc(f->frames, f->cap_frames * sizeof(*f->frames));
        assert_non_null(f->frames);
    }
    tu_ps_frame *rec = &f->frames[f->n_frames++];
    memset(rec, 0, sizeof(*rec));
    rec->conn = c->index;
    rec->at_ns = now_ns();
    rec->id = cmd->id;
    rec->control = cmd->control;
    rec->kind = cmd->kind;
    size_t kl = cmd->key.len < sizeof(rec->key) ? cmd->key.len : sizeof(rec->key) - 1;
    if (kl)
        memcpy(rec->key, cmd->key.data, kl);

    tu_ps_mode mode = f->mode;
    bool targeted = !f->target || (cmd->key.len == strlen(f->target) &&
                                   memcmp(cmd->key.data, f->target, cmd->key.len) == 0);
    if (cmd->kind == PS_AUTH) {
        int delay = f->auth_delay_ms;
        pthread_mutex_unlock(&f->lock);
        if (delay > 0 && mode != TU_PS_REFUSE_AUTH) {
            c->auth_due_ns = now_ns() + (int64_t)delay * 1000000;
            c->auth_id = cmd->id;
        } else {
            if (delay > 0)
                usleep((useconds_t)delay * 1000);
            answer_auth(f, c, cmd->id, mode == TU_PS_REFUSE_AUTH);
        }
        return true;
    }
    if (cmd->kind == PS_NONE) { /* a client's cancel, or a kind we do not know */
        pthread_mutex_unlock(&f->lock);
        return true;
    }
    reply out = answer(f, cmd);
    if (!targeted)
        mode = TU_PS_NORMAL;
    bool alive = true;
    switch (mode) {
    case TU_PS_REVERSE:
    case TU_PS_MERGE:
    case TU_PS_CUT:
    case TU_PS_OVERSIZE:
        assert_true(c->n_held < MAX_HELD);
        c->held[c->n_held++] = out;
        out.bytes = NULL;
        alive = release_held(f, c);
        break;
    case TU_PS_SPLIT:
        for (size_t i = 0; i < out.len; i++) {
            write_all(c->fd, out.bytes + i, 1);
            usleep(1000);
        }
        break;
    case TU_PS_UNKNOWN_ID: {
        ps_response bogus = {.id = cmd->id ^ (1ull << 40), .kind = PS_GET,
                             .value = {(const uint8_t *)"bogus", 5}};
        reply b = encode(&bogus);
        write_all(c->fd, b.bytes, b.len);
        free(b.bytes);
        write_all(c->fd, out.bytes, out.len);
        break;
    }
    case TU_PS_CANCEL: {
        ps_response cancel = {.id = cmd->id, .control = PS_CONTROL_CANCEL};
        reply b = encode(&cancel);
        write_all(c->fd, b.bytes, b.len);
        free(b.bytes);
        break;
    }
    case TU_PS_SILENT:
        break;
    default:
        write_all(c->fd, out.bytes, out.len);
        break;
    }
    pthread_mutex_unlock(&f->lock);
    free(out.bytes);
    return alive;
}

/* Reads what came on `c` and acts on each whole frame. false: `c` was
 * closed (by the client, a bad frame, or the mode). */
static bool conn_read(tu_ps *f, fconn *c)
{
    if (c->rcap - c->rlen < 65536) {
        c->rcap = c->rcap ? c->rcap * 2 : 131072;
        c->rbuf = realloc(c->rbuf, c->rcap);
        assert_non_null(c->rbuf);
    }
    ssize_t k = recv(c->fd, c->rbuf + c->rlen, c->rcap - c->rlen, MSG_DONTWAIT);
    if (k <= 0) {
        conn_close(f, c);
        return false;
    }
    c->rlen += (size_t)k;
    size_t at = 0, off, len;
    int fr;
    while ((fr = ps_frame_next(c->rbuf + at, c->rlen - at, PS_MAX_FRAME, &off, &len)) == 1) {
        ps_command cmd;
        if (ps_command_decode(c->rbuf + at + off, len, &cmd) != 0) {
            conn_close(f, c);
            return false;
        }
        at += off + len;
        if (!on_command(f, c, &cmd))
            return false;
    }
    if (fr < 0) {
        conn_close(f, c);
        return false;
    }
    memmove(c->rbuf, c->rbuf + at, c->rlen - at);
    c->rlen -= at;
    return true;
}

static void *serve(void *arg)
{
    tu_ps *f = arg;
    while (!atomic_load(&f->stopping)) {
        struct pollfd pfd[MAX_CONNS + 1];
        pfd[0] = (struct pollfd){.fd = f->lfd, .events = POLLIN};
        for (size_t i = 0; i < f->n_conns; i++)
            pfd[i + 1] = (struct pollfd){.fd = f->conns[i].fd, .events = POLLIN};
        size_t polled = f->n_conns;
        if (poll(pfd, polled + 1, 5) < 0)
            continue;
        /* Last first: closing one moves the last into its place. */
        for (size_t i = polled; i-- > 0;)
            if (pfd[i + 1].revents)
                conn_read(f, &f->conns[i]);
        int64_t now = now_ns();
        for (size_t i = 0; i < f->n_conns; i++) {
            fconn *c = &f->conns[i];
            if (c->auth_due_ns && c->auth_due_ns <= now) {
                c->auth_due_ns = 0;
                answer_auth(f, c, c->auth_id, false);
            }
        }
        if (pfd[0].revents & POLLIN) {
            int fd = accept(f->lfd, NULL, NULL);
            if (fd < 0)
                continue;
            if (f->n_conns == MAX_CONNS) {
                close(fd);
                continue;
            }
            int one = 1;
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
            pthread_mutex_lock(&f->lock);
            size_t index = f->accepted++;
            pthread_mutex_unlock(&f->lock);
            f->conns[f->n_conns++] = (fconn){.fd = fd, .index = index};
        }
    }
    while (f->n_conns)
        conn_close(f, &f->conns[0]);
    return NULL;
}

/* ---- the API ---- */

tu_ps *tu_ps_start(tu_ps_mode mode, size_t n)
{
    tu_ps *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    pthread_mutex_init(&f->lock, NULL);
    f->mode = mode;
    f->n = n ? n : 1;
    f->lfd = tu_listen_loopback(16, f->endpoint, sizeof(f->endpoint));
    assert_int_equal(pthread_create(&f->thread, NULL, serve, f), 0);
    return f;
}

void tu_ps_set_mode(tu_ps *f, tu_ps_mode mode, size_t n)
{
    pthread_mutex_lock(&f->lock);
    f->mode = mode;
    f->n = n ? n : 1;
    pthread_mutex_unlock(&f->lock);
}

void tu_ps_set_target(tu_ps *f, const char *key)
{
    pthread_mutex_lock(&f->lock);
    free(f->target);
    f->target = key ? strdup(key) : NULL;
    pthread_mutex_unlock(&f->lock);
}

void tu_ps_set_auth_delay(tu_ps *f, int ms)
{
    pthread_mutex_lock(&f->lock);
    f->auth_delay_ms = ms;
    pthread_mutex_unlock(&f->lock);
}

void tu_ps_put(tu_ps *f, const char *key, const char *value)
{
    pthread_mutex_lock(&f->lock);
    store(f, (const uint8_t *)key, strlen(key), (const uint8_t *)value, strlen(value));
    pthread_mutex_unlock(&f->lock);
}

const char *tu_ps_endpoint(const tu_ps *f)
{
    return f->endpoint;
}

size_t tu_ps_connections(tu_ps *f)
{
    pthread_mutex_lock(&f->lock);
    size_t n = f->accepted;
    pthread_mutex_unlock(&f->lock);
    return n;
}

size_t tu_ps_frame_count(tu_ps *f)
{
    pthread_mutex_lock(&f->lock);
    size_t n = f->n_frames;
    pthread_mutex_unlock(&f->lock);
    return n;
}

bool tu_ps_frame_at(tu_ps *f, size_t i, tu_ps_frame *out)
{
    pthread_mutex_lock(&f->lock);
    bool ok = i < f->n_frames;
    if (ok)
        *out = f->frames[i];
    pthread_mutex_unlock(&f->lock);
    return ok;
}

bool tu_ps_find_key(tu_ps *f, const char *key, tu_ps_frame *out)
{
    bool found = false;
    pthread_mutex_lock(&f->lock);
    for (size_t i = 0; i < f->n_frames && !found; i++) {
        const tu_ps_frame *r = &f->frames[i];
        if ((r->kind == PS_GET || r->kind == PS_SET || r->kind == PS_DELETE) &&
            strcmp(r->key, key) == 0) {
            *out = *r;
            found = true;
        }
    }
    pthread_mutex_unlock(&f->lock);
    return found;
}

bool tu_ps_saw_cancel(tu_ps *f, size_t conn, uint64_t id)
{
    bool seen = false;
    pthread_mutex_lock(&f->lock);
    for (size_t i = 0; i < f->n_frames && !seen; i++) {
        const tu_ps_frame *r = &f->frames[i];
        seen = r->conn == conn && r->id == id && r->control == PS_CONTROL_CANCEL &&
               r->kind == PS_NONE;
    }
    pthread_mutex_unlock(&f->lock);
    return seen;
}

int64_t tu_ps_auth_answered_ns(tu_ps *f, size_t conn)
{
    pthread_mutex_lock(&f->lock);
    int64_t t = conn < MAX_CONNS ? f->auth_answered[conn] : 0;
    pthread_mutex_unlock(&f->lock);
    return t;
}

void tu_ps_stop(tu_ps *f)
{
    if (!f)
        return;
    atomic_store(&f->stopping, true);
    pthread_join(f->thread, NULL);
    close(f->lfd);
    for (size_t i = 0; i < f->n_items; i++) {
        free(f->items[i].key);
        free(f->items[i].value);
    }
    free(f->frames);
    free(f->target);
    pthread_mutex_destroy(&f->lock);
    free(f);
}
