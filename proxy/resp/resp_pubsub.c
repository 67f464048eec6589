/* RESP: PUBLISH, SUBSCRIBE and UNSUBSCRIBE on Momento topics (a Redis
 * channel is a topic of the proxy's cache).
 *
 * SUBSCRIBE answers a channel's confirmation only once Momento's stream
 * for it is up, so a message published after the client saw the
 * confirmation reaches it. Messages are pushed as replies of their own, in
 * arrival order behind whatever replies are pending. A subscriber that
 * stops reading is disconnected once its output passes the proxy's output
 * limit, as Redis's pubsub output-buffer limit does, instead of growing
 * without bound.
 *
 * PUBLISH answers how many subscribers of this proxy the channel has:
 * Momento does not say how many there are in all (docs/proxy.md). It
 * publishes a value as text when it is valid UTF-8 (other Momento SDKs'
 * subscribers then see a string), as bytes otherwise. */
#include "resp/resp.h"

#include "momento/topics.h"

#include <stdlib.h>
#include <string.h>
#include <uthash.h>

/* This proxy's subscriptions per channel, for PUBLISH's answer. */
typedef struct channel_count {
    UT_hash_handle hh;
    unsigned n;
    char name[];
} channel_count;

typedef struct sub {
    struct sub *next;
    resp_pubsub *owner;   /* NULL once the connection is closed */
    momento_subscription *handle;
    px_reply *confirm;    /* the SUBSCRIBE reply, until the stream is up */
    bool counted;         /* in owner's count and the channel's */
    int ack_count;        /* the count its confirmation reports */
    bool ending;          /* unsubscribed: waiting for its END */
    char name[];
} sub;

struct resp_pubsub {
    px_conn *conn;
    px_backend *b;
    sub *subs;
    int count; /* channels confirmed, as Redis counts them */
};

static channel_count *channel_find(px_backend *b, const char *name)
{
    channel_count *head = *b->channels, *c = NULL;
    HASH_FIND_STR(head, name, c);
    return c;
}

static void channel_add(px_backend *b, const char *name, int delta)
{
    channel_count *head = *b->channels;
    channel_count *c = channel_find(b, name);
    if (!c && delta > 0) {
        size_t n = strlen(name);
        c = calloc(1, sizeof(*c) + n + 1);
        if (!c)
            return;
        memcpy(c->name, name, n + 1);
        HASH_ADD_STR(head, name, c);
    }
    if (!c)
        return;
    c->n = (unsigned)((int)c->n + delta);
    if (c->n == 0) {
        HASH_DEL(head, c);
        free(c);
    }
    *b->channels = head;
}

int resp_pubsub_count(const resp_pubsub *ps)
{
    return ps ? ps->count : 0;
}

/* ["kind", channel, count] */
static void write_ack(px_reply *r, const char *kind, const char *name, int count)
{
    resp_array(r, 3);
    resp_bulk_str(r, kind);
    if (name)
        resp_bulk_str(r, name);
    else
        resp_nil(r);
    resp_int(r, count);
}

static void unlink_sub(resp_pubsub *ps, sub *s)
{
    for (sub **p = &ps->subs; *p; p = &(*p)->next)
        if (*p == s) {
            *p = s->next;
            return;
        }
}

static void uncount(sub *s, px_backend *b)
{
    if (s->counted) {
        s->counted = false;
        if (s->owner)
            s->owner->count--;
        channel_add(b, s->name, -1);
    }
}

static void on_event(momento_subscription *h, const momento_topic_event *ev, void *ud)
{
    sub *s = ud;
    resp_pubsub *ps = s->owner;
    switch (ev->kind) {
    case MOMENTO_TOPIC_CONNECTED:
        if (s->confirm && ps) {
            write_ack(s->confirm, "subscribe", s->name, s->ack_count);
            px_reply_end(s->confirm);
            s->confirm = NULL;
        }
        break;
    case MOMENTO_TOPIC_ITEM:
        if (ps && s->counted && !s->ending) {
            px_conn *c = ps->conn;
            px_reply *r = px_reply_begin(c);
            if (!r)
                break;
            resp_array(r, 3);
            resp_bulk_str(r, "message");
            resp_bulk_str(r, s->name);
            resp_bulk(r, ev->value, ev->value_len);
            px_reply_end(r);
            /* Messages held behind an open reply (a SUBSCRIBE waiting for
             * its stream) count as the unread ones do. */
            if (px_conn_held_bytes(c) > px_conn_backend(c)->limits.max_output_bytes)
                px_conn_abort(c); /* ends every subscription: resp_pubsub_closed() */
        }
        break;
    case MOMENTO_TOPIC_END: {
        px_backend *b = ps ? ps->b : NULL;
        if (s->confirm) {
            /* The stream never came up: the channel's answer is the error,
             * unless an UNSUBSCRIBE ended it first. */
            if (ev->error && !s->ending)
                resp_errorf(s->confirm, "ERR momento %s: %s", momento_error_name(ev->error),
                            ev->message && *ev->message ? ev->message
                                                        : momento_strerror(ev->error));
            else
                write_ack(s->confirm, "subscribe", s->name, s->ack_count);
            px_reply_end(s->confirm);
            s->confirm = NULL;
        }
        if (ps) {
            uncount(s, b);
            unlink_sub(ps, s);
        }
        momento_subscription_free(h);
        free(s);
        break;
    }
    default: /* heartbeats, breaks and discontinuities: Redis has none to tell */
        break;
    }
}

/* The subscriptions of r's connection, made at its first (UN)SUBSCRIBE;
 * NULL when they cannot be (out of memory), r then answered and ended. */
static resp_pubsub *pubsub_of(px_reply *r)
{
    px_conn *c = px_reply_conn(r);
    resp_pubsub **slot = resp_conn_pubsub(c);
    if (slot && !*slot) {
        *slot = calloc(1, sizeof(**slot));
        if (*slot) {
            (*slot)->conn = c;
            (*slot)->b = px_conn_backend(c);
        }
    }
    if (!slot || !*slot) {
        resp_end_error(r, "ERR out of memory");
        return NULL;
    }
    return *slot;
}

static sub *find_sub(resp_pubsub *ps, const char *name)
{
    for (sub *s = ps->subs; s; s = s->next)
        if (!s->ending && strcmp(s->name, name) == 0)
            return s;
    return NULL;
}

/* A channel argument as a topic name: no NUL, not empty. */
static bool channel_name(const px_str *a, char *buf, size_t size)
{
    if (a->n == 0 || a->n >= size || memchr(a->p, '\0', a->n))
        return false;
    memcpy(buf, a->p, a->n);
    buf[a->n] = '\0';
    return true;
}

static void cmd_subscribe(px_reply *r, int argc, const px_str *argv)
{
    resp_pubsub *ps = pubsub_of(r);
    if (!ps)
        return;
    px_conn *c = px_reply_conn(r);
    px_backend *b = px_conn_backend(c);
    /* One reply per channel, as Redis sends: the command's own is the
     * first channel's, the others take their places behind it. */
    for (int i = 1; i < argc; i++) {
        px_reply *ri = i == 1 ? r : px_reply_begin(c);
        if (!ri)
            return;
        char name[1024];
        if (!channel_name(&argv[i], name, sizeof(name))) {
            resp_end_error(ri, "ERR momento INVALID_ARGUMENT_ERROR: a channel is a Momento "
                               "topic name: 1 to 1023 bytes, no NUL");
            continue;
        }
        if (find_sub(ps, name)) { /* already: Redis confirms again, same count */
            write_ack(ri, "subscribe", name, ps->count);
            px_reply_end(ri);
            continue;
        }
        size_t n = strlen(name);
        sub *s = calloc(1, sizeof(*s) + n + 1);
        if (!s) {
            resp_end_error(ri, "ERR out of memory");
            continue;
        }
        memcpy(s->name, name, n + 1);
        s->owner = ps;
        s->confirm = ri;
        /* Counted from now, as Redis counts: the confirmations report the
         * channels in command order, whichever stream comes up first. */
        s->counted = true;
        ps->count++;
        channel_add(b, s->name, 1);
        s->ack_count = ps->count;
        int rc = momento_topic_subscribe(b->client, b->cache, name, NULL, on_event, s, &s->handle);
        if (rc != MOMENTO_OK) {
            uncount(s, b);
            free(s);
            resp_momento_error(ri, rc, NULL);
            continue;
        }
        b->stats->backend_calls++;
        s->next = ps->subs;
        ps->subs = s;
    }
}

/* Ends one subscription: it leaves the counts now, its memory at END. */
static void end_sub(resp_pubsub *ps, sub *s)
{
    s->ending = true;
    uncount(s, ps->b);
    momento_topic_unsubscribe(s->handle);
}

static void cmd_unsubscribe(px_reply *r, int argc, const px_str *argv)
{
    resp_pubsub *ps = pubsub_of(r);
    if (!ps)
        return;
    px_conn *c = px_reply_conn(r);
    if (argc == 1) {
        /* Every channel, one reply each; none: one reply with nil. */
        bool any = false;
        px_reply *ri = r;
        for (sub *s = ps->subs; s; s = s->next) {
            if (s->ending)
                continue;
            if (!ri && !(ri = px_reply_begin(c)))
                return;
            end_sub(ps, s);
            write_ack(ri, "unsubscribe", s->name, ps->count);
            px_reply_end(ri);
            ri = NULL;
            any = true;
        }
        if (!any) {
            write_ack(r, "unsubscribe", NULL, 0);
            px_reply_end(r);
        }
        return;
    }
    for (int i = 1; i < argc; i++) {
        px_reply *ri = i == 1 ? r : px_reply_begin(c);
        if (!ri)
            return;
        char name[1024];
        sub *s = channel_name(&argv[i], name, sizeof(name)) ? find_sub(ps, name) : NULL;
        if (s)
            end_sub(ps, s);
        /* Redis names the channel whether or not it was subscribed. */
        resp_array(ri, 3);
        resp_bulk_str(ri, "unsubscribe");
        resp_bulk(ri, argv[i].p, argv[i].n);
        resp_int(ri, ps->count);
        px_reply_end(ri);
    }
}

void resp_pubsub_closed(resp_pubsub *ps)
{
    /* The connection is gone: every subscription ends, and its END (which
     * frees it) must not reach the connection. */
    sub *s = ps->subs;
    while (s) {
        sub *next = s->next;
        uncount(s, ps->b);
        s->owner = NULL;
        s->next = NULL;
        if (!s->ending) {
            s->ending = true;
            momento_topic_unsubscribe(s->handle);
        }
        s = next;
    }
    free(ps);
}

/* ---- PUBLISH ---- */

static bool valid_utf8(const unsigned char *p, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned c = p[i];
        size_t len;
        unsigned min;
        if (c == 0)
            return false; /* momento-local refuses NUL in a string */
        if (c < 0x80) {
            i++;
            continue;
        } else if ((c & 0xe0) == 0xc0) {
            len = 2, min = 0x80, c &= 0x1f;
        } else if ((c & 0xf0) == 0xe0) {
            len = 3, min = 0x800, c &= 0x0f;
        } else if ((c & 0xf8) == 0xf0) {
            len = 4, min = 0x10000, c &= 0x07;
        } else {
            return false;
        }
        if (i + len > n)
            return false;
        for (size_t k = 1; k < len; k++) {
            if ((p[i + k] & 0xc0) != 0x80)
                return false;
            c = (c << 6) | (p[i + k] & 0x3f);
        }
        if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
            return false;
        i += len;
    }
    return true;
}

typedef struct publish_ctx {
    px_reply *r;
    unsigned receivers;
} publish_ctx;

static void on_published(const momento_result *res, void *ud)
{
    publish_ctx *p = ud;
    resp_end_int_or_error(p->r, res, p->receivers);
    free(p);
}

static void cmd_publish(px_reply *r, int argc, const px_str *argv)
{
    px_backend *b = px_conn_backend(px_reply_conn(r));
    char name[1024];
    if (!channel_name(&argv[1], name, sizeof(name))) {
        resp_end_error(r, "ERR momento INVALID_ARGUMENT_ERROR: a channel is a Momento topic "
                          "name: 1 to 1023 bytes, no NUL");
        return;
    }
    publish_ctx *p = resp_ctx_new(r, sizeof(*p));
    if (!p)
        return;
    p->r = r;
    /* Counted now: the subscribers that will hear it. */
    channel_count *cc = channel_find(b, name);
    p->receivers = cc ? cc->n : 0;
    int rc = valid_utf8((const unsigned char *)argv[2].p, argv[2].n)
                 ? momento_topic_publish_text(b->client, b->cache, name, argv[2].p, argv[2].n,
                                              NULL, on_published, p)
                 : momento_topic_publish(b->client, b->cache, name, argv[2].p, argv[2].n, NULL,
                                         on_published, p);
    if (!resp_submitted(r, rc))
        free(p);
}

const resp_cmd resp_pubsub_cmds[] = {
    {"publish", 3, cmd_publish},
    {"subscribe", -2, cmd_subscribe},
    {"unsubscribe", -1, cmd_unsubscribe},
    {NULL, 0, NULL},
};
