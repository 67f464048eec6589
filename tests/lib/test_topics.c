/* Topics through the library: publish (text and bytes) and subscriptions
 * against momento-local - order, numbers and pages, the one END of every
 * subscription (unsubscribe, errors, the client's free), resubscribing
 * after a stream error and after a server restart with nothing lost in
 * silence, first-message and idle timeouts, resuming from a position - and
 * against a fake server for what momento-local never sends (gaps,
 * repeats, undecodable messages). */
#include "fake_server.h"
#include "testing.h"
#include "testutil.h"

#include "momento/topics.h"

#include "cachepubsub.pb-c.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <sys/socket.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_EVENTS 4096

/* Every event a subscription delivered, copied. */
typedef struct rec_event {
    momento_topic_event_kind kind;
    char value[64];
    size_t value_len;
    int is_text;
    uint64_t seq, page, d_last, d_new, d_page;
    int from_server;
    int error;
} rec_event;

typedef struct recorder {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    rec_event ev[MAX_EVENTS];
    size_t n;
    size_t ends;
    momento_subscription *sub_seen;
    /* What the callback does on an event of this kind: 1 unsubscribe,
     * 2 free the caller's reference (`own`). */
    momento_topic_event_kind act_on;
    int action;
    momento_subscription *own;
    momento_client *client; /* for the WOULD_DEADLOCK check */
    int sync_rc;
} recorder;

static void rec_init(recorder *r)
{
    memset(r, 0, sizeof(*r));
    pthread_mutex_init(&r->lock, NULL);
    pthread_cond_init(&r->cond, NULL);
}

static void rec_destroy(recorder *r)
{
    pthread_mutex_destroy(&r->lock);
    pthread_cond_destroy(&r->cond);
}

static void on_event(momento_subscription *sub, const momento_topic_event *e, void *userdata)
{
    recorder *r = userdata;
    assert_non_null(e->publisher_id);
    assert_non_null(e->message);
    pthread_mutex_lock(&r->lock);
    if (r->ends)
        fail_msg("an event (kind %d) after END", (int)e->kind);
    r->sub_seen = sub;
    if (r->n < MAX_EVENTS) {
        rec_event *x = &r->ev[r->n++];
        memset(x, 0, sizeof(*x));
        x->kind = e->kind;
        x->value_len = e->value_len;
        memcpy(x->value, e->value ? (const char *)e->value : "",
               e->value_len < sizeof(x->value) - 1 ? e->value_len : sizeof(x->value) - 1);
        x->is_text = e->is_text;
        x->seq = e->sequence_number;
        x->page = e->sequence_page;
        x->d_last = e->last_sequence_number;
        x->d_new = e->new_sequence_number;
        x->d_page = e->new_sequence_page;
        x->from_server = e->from_server;
        x->error = e->error;
    }
    if (e->kind == MOMENTO_TOPIC_END)
        r->ends++;
    int action = r->act_on == e->kind ? r->action : 0;
    momento_subscription *own = r->own;
    if (action == 2)
        r->own = NULL;
    pthread_cond_broadcast(&r->cond);
    pthread_mutex_unlock(&r->lock);
    if (r->client && e->kind == MOMENTO_TOPIC_CONNECTED)
        r->sync_rc = momento_topic_subscribe_sync(r->client, "c", "t", NULL, on_event, r, NULL);
    if (action == 1)
        momento_topic_unsubscribe(sub);
    else if (action == 2)
        momento_subscription_free(own);
}

static size_t count_kind(recorder *r, momento_topic_event_kind kind)
{
    size_t k = 0;
    pthread_mutex_lock(&r->lock);
    for (size_t i = 0; i < r->n; i++)
        k += r->ev[i].kind == kind;
    pthread_mutex_unlock(&r->lock);
    return k;
}

/* Waits until `n` events of `kind` arrived; returns how many did. */
static size_t wait_kind(recorder *r, momento_topic_event_kind kind, size_t n, int timeout_ms)
{
    size_t k;
    tu_wait_until((k = count_kind(r, kind)) >= n, timeout_ms);
    return k;
}

static const rec_event *last_of(recorder *r, momento_topic_event_kind kind)
{
    const rec_event *found = NULL;
    pthread_mutex_lock(&r->lock);
    for (size_t i = 0; i < r->n; i++)
        if (r->ev[i].kind == kind)
            found = &r->ev[i];
    pthread_mutex_unlock(&r->lock);
    return found;
}

static momento_local *start_server(int port)
{
    momento_local_options *o = tu_options("c");
    if (port)
        momento_local_options_set_port(o, port);
    momento_local *s = NULL;
    /* The old server's port may take a moment to be free again. */
    for (int i = 0; i < 100 && momento_local_start(&s, o) != MOMENTO_OK; i++)
        usleep(20000);
    momento_local_options_free(o);
    assert_non_null(s);
    return s;
}

static void publish_text(momento_client *c, const char *topic, const char *text)
{
    momento_result *r = NULL;
    tu_expect(momento_topic_publish_text_sync(c, "c", topic, MOMENTO_STR(text), NULL, &r), r,
              MOMENTO_OUTCOME_SUCCESS);
}

static momento_subscription *subscribe(momento_client *c, const char *topic, recorder *r,
                                       const momento_subscribe_options *o)
{
    momento_subscription *sub = NULL;
    int rc = momento_topic_subscribe_sync(c, "c", topic, o, on_event, r, &sub);
    if (rc != MOMENTO_OK)
        fail_msg("subscribe: %s", momento_error_name(rc));
    assert_non_null(sub);
    return sub;
}

/* A subscription of `c` to `topic` that is given its heartbeats. */
static momento_subscription *subscribe_heartbeats(momento_client *c, const char *topic,
                                                  recorder *r)
{
    momento_subscribe_options o = MOMENTO_SUBSCRIBE_OPTIONS_INIT;
    o.flags = MOMENTO_SUBSCRIBE_HEARTBEATS;
    return subscribe(c, topic, r, &o);
}

/* Unsubscribes, checks the one END (error 0), frees. */
static void finish(momento_subscription *sub, recorder *r)
{
    momento_topic_unsubscribe(sub);
    assert_int_equal(wait_kind(r, MOMENTO_TOPIC_END, 1, 20000), 1);
    assert_int_equal(last_of(r, MOMENTO_TOPIC_END)->error, MOMENTO_OK);
    momento_subscription_free(sub);
}

/* ---- against momento-local ---------------------------------------------- */

static void test_publish_and_receive_in_order(void **state)
{
    (void)state;
    momento_client *c = tu_fx.client;
    recorder r;
    rec_init(&r);
    momento_subscription *sub = subscribe(c, "t", &r, NULL);
    assert_int_equal(count_kind(&r, MOMENTO_TOPIC_CONNECTED), 1);

    publish_text(c, "t", "one");
    momento_result *res = NULL;
    tu_expect(momento_topic_publish_sync(c, "c", "t", "\x00\xff", 2, NULL, &res), res,
              MOMENTO_OUTCOME_SUCCESS);
    assert_int_equal(momento_topic_publish_text_sync(c, "c", "t", "", 0, NULL, &res), MOMENTO_OK);
    momento_result_free(res);
    /* Another topic's item does not reach this subscription. */
    publish_text(c, "other", "elsewhere");
    publish_text(c, "t", "four");
    assert_int_equal(wait_kind(&r, MOMENTO_TOPIC_ITEM, 4, 20000), 4);

    const char *want[] = {"one", "\x00\xff", "", "four"};
    size_t want_len[] = {3, 2, 0, 4};
    int want_text[] = {1, 0, 1, 1};
    size_t k = 0;
    uint64_t page = 0;
    for (size_t i = 0; i < r.n; i++) {
        if (r.ev[i].kind != MOMENTO_TOPIC_ITEM)
            continue;
        assert_int_equal(r.ev[i].value_len, want_len[k]);
        assert_memory_equal(r.ev[i].value, want[k], want_len[k]);
        assert_int_equal(r.ev[i].is_text, want_text[k]);
        assert_int_equal(r.ev[i].seq, k + 1); /* a new topic starts at 1 */
        if (k == 0)
            page = r.ev[i].page;
        assert_int_equal(r.ev[i].page, page);
        k++;
    }
    assert_true(page > 0);
    assert_int_equal(count_kind(&r, MOMENTO_TOPIC_DISCONTINUITY), 0);

    momento_subscription_stats st;
    assert_int_equal(momento_subscription_stats_get(sub, &st, sizeof(st)), MOMENTO_OK);
    assert_int_equal(st.items, 4);
    assert_true(st.heartbeats >= 1); /* the stream's first message */
    assert_int_equal(st.last_sequence_number, 4);
    assert_int_equal(st.sequence_page, page);
    assert_int_equal(st.connected, 1);
    assert_int_equal(st.ended, 0);

    finish(sub, &r);
    rec_destroy(&r);
}

static void test_refusals(void **state)
{
    (void)state;
    momento_client *c = tu_fx.client;
    recorder r;
    rec_init(&r);
    momento_subscription *sub = (momento_subscription *)&r; /* must stay untouched */
    momento_subscribe_options bad = MOMENTO_SUBSCRIBE_OPTIONS_INIT;
    bad.size = 3;
    assert_int_equal(momento_topic_subscribe(NULL, "c", "t", NULL, on_event, &r, &sub),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_topic_subscribe(c, "c", "t", NULL, NULL, &r, &sub),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_topic_subscribe(c, NULL, "t", NULL, on_event, &r, &sub),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_topic_subscribe(c, "", "t", NULL, on_event, &r, &sub),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_topic_subscribe(c, "c", NULL, NULL, on_event, &r, &sub),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_topic_subscribe(c, "c", "", NULL, on_event, &r, &sub),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_topic_subscribe(c, "c", " \t ", NULL, on_event, &r, &sub),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_topic_subscribe(c, "c", "\xff", NULL, on_event, &r, &sub),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_topic_subscribe(c, "c", "t", &bad, on_event, &r, &sub),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_ptr_equal(sub, (momento_subscription *)&r);

    momento_result *res = (momento_result *)&r;
    assert_int_equal(momento_topic_publish_text_sync(c, "c", "t", "\xc3", 1, NULL, &res),
                     MOMENTO_ERR_INVALID_ARGUMENT); /* not UTF-8 */
    tu_assert_refusal(&res, MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_topic_publish_sync(c, "c", "t", NULL, 1, NULL, &res),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    tu_assert_refusal(&res, MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_topic_publish_sync(c, "c", " ", "v", 1, NULL, &res),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    tu_assert_refusal(&res, MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_topic_publish(c, "c", "t", "v", 1, NULL, NULL, NULL),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_subscription_stats_get(NULL, NULL, 0), MOMENTO_ERR_INVALID_ARGUMENT);
    momento_topic_unsubscribe(NULL);
    momento_subscription_free(NULL);
    assert_int_equal(r.n, 0); /* no event for anything refused */

    /* A text with a NUL in it is refused (momento-local refuses such
     * strings); bytes carry it whole. */
    assert_int_equal(momento_topic_publish_text_sync(c, "c", "t", "a\0b", 3, NULL, &res),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    tu_assert_refusal(&res, MOMENTO_ERR_INVALID_ARGUMENT);
    momento_subscription *ok = subscribe(c, "t", &r, NULL);
    publish_text(c, "t", "\xc3\xa9t\xc3\xa9"); /* "été": UTF-8 beyond ASCII */
    assert_int_equal(momento_topic_publish_sync(c, "c", "t", "a\0b", 3, NULL, &res), MOMENTO_OK);
    momento_result_free(res);
    assert_int_equal(wait_kind(&r, MOMENTO_TOPIC_ITEM, 2, 20000), 2);
    const rec_event *e = last_of(&r, MOMENTO_TOPIC_ITEM);
    assert_int_equal(e->value_len, 3);
    assert_memory_equal(e->value, "a\0b", 3);
    assert_int_equal(e->is_text, 0);
    assert_int_equal(r.ev[1].is_text, 1);
    assert_int_equal(r.ev[1].value_len, 5);
    finish(ok, &r);
    rec_destroy(&r);
}

static void test_unknown_cache(void **state)
{
    (void)state;
    momento_client *c = tu_fx.client;
    recorder r;
    rec_init(&r);
    momento_subscription *sub = NULL;
    assert_int_equal(momento_topic_subscribe_sync(c, "nope", "t", NULL, on_event, &r, &sub),
                     MOMENTO_ERR_CACHE_NOT_FOUND);
    assert_null(sub);
    assert_int_equal(r.n, 1); /* the END, and nothing else */
    assert_int_equal(r.ev[0].kind, MOMENTO_TOPIC_END);
    assert_int_equal(r.ev[0].error, MOMENTO_ERR_CACHE_NOT_FOUND);

    /* Async, without keeping a reference: the END still comes, once. */
    recorder r2;
    rec_init(&r2);
    assert_int_equal(momento_topic_subscribe(c, "nope", "t", NULL, on_event, &r2, NULL),
                     MOMENTO_OK);
    assert_int_equal(wait_kind(&r2, MOMENTO_TOPIC_END, 1, 20000), 1);
    assert_int_equal(r2.ev[0].error, MOMENTO_ERR_CACHE_NOT_FOUND);

    momento_result *res = NULL;
    assert_int_equal(momento_topic_publish_text_sync(c, "nope", "t", MOMENTO_STR("v"), NULL, &res),
                     MOMENTO_ERR_CACHE_NOT_FOUND);
    momento_result_free(res);
    rec_destroy(&r);
    rec_destroy(&r2);
}

/* Unsubscribing from the callback, freeing from it, unsubscribing twice,
 * freeing after the END: one END each, nothing after it. */
static void test_unsubscribe_paths(void **state)
{
    (void)state;
    momento_client *c = tu_fx.client;

    recorder a;
    rec_init(&a);
    a.act_on = MOMENTO_TOPIC_ITEM;
    a.action = 1; /* unsubscribe on the first item */
    momento_subscription *sa = subscribe(c, "t", &a, NULL);
    recorder b;
    rec_init(&b);
    b.act_on = MOMENTO_TOPIC_ITEM;
    b.action = 2; /* free the reference on the first item */
    momento_subscription *sb = subscribe(c, "t", &b, NULL);
    pthread_mutex_lock(&b.lock);
    b.own = sb;
    pthread_mutex_unlock(&b.lock);

    publish_text(c, "t", "x");
    publish_text(c, "t", "y");
    assert_int_equal(wait_kind(&a, MOMENTO_TOPIC_END, 1, 20000), 1);
    assert_int_equal(wait_kind(&b, MOMENTO_TOPIC_END, 1, 20000), 1);
    assert_int_equal(count_kind(&a, MOMENTO_TOPIC_ITEM), 1);
    assert_int_equal(count_kind(&b, MOMENTO_TOPIC_ITEM), 1);
    assert_int_equal(last_of(&a, MOMENTO_TOPIC_END)->error, MOMENTO_OK);
    momento_subscription_stats st;
    assert_int_equal(momento_subscription_stats_get(sa, &st, sizeof(st)), MOMENTO_OK);
    assert_int_equal(st.ended, 1);
    momento_topic_unsubscribe(sa); /* after the END: nothing */
    momento_topic_unsubscribe(sa);
    momento_subscription_free(sa);
    assert_int_equal(count_kind(&a, MOMENTO_TOPIC_END), 1);

    /* The free waits for every callback, so none can come after it: an
     * item after the END, or a second END, would have been counted by
     * now. */
    momento_client_free(c);
    tu_fx.client = NULL; /* freed: not the teardown's to free */
    assert_int_equal(count_kind(&a, MOMENTO_TOPIC_ITEM), 1);
    assert_int_equal(count_kind(&b, MOMENTO_TOPIC_ITEM), 1);
    assert_int_equal(count_kind(&a, MOMENTO_TOPIC_END), 1);
    assert_int_equal(count_kind(&b, MOMENTO_TOPIC_END), 1);
    rec_destroy(&a);
    rec_destroy(&b);
}

/* The client's free ends every subscription with MOMENTO_ERR_CLOSED:
 * streaming ones and one waiting to resubscribe. */
static void test_client_free_ends_subscriptions(void **state)
{
    (void)state;
    momento_local *s = tu_fx.server;
    momento_client *c = tu_fx.client;
    recorder a, b;
    rec_init(&a);
    rec_init(&b);
    momento_subscription *sa = subscribe(c, "t", &a, NULL);
    assert_int_equal(momento_topic_subscribe(c, "c", "t", NULL, on_event, &b, NULL), MOMENTO_OK);
    assert_int_equal(wait_kind(&b, MOMENTO_TOPIC_CONNECTED, 1, 20000), 1);

    /* A third, waiting for a resubscribe an hour away after its stream broke. */
    momento_client *c3 = tu_client(s, NULL);
    assert_int_equal(momento__client_add_header(c3, "stream-error", "unavailable"), MOMENTO_OK);
    assert_int_equal(momento__client_add_header(c3, "stream-error-rpcs", "topic-subscribe"),
                     MOMENTO_OK);
    assert_int_equal(momento__client_add_header(c3, "stream-error-message-limit", "1"), MOMENTO_OK);
    recorder w;
    rec_init(&w);
    momento_subscribe_options o = MOMENTO_SUBSCRIBE_OPTIONS_INIT;
    o.resubscribe_delay_ms = 3600000;
    assert_int_equal(momento_topic_subscribe(c3, "c", "t", &o, on_event, &w, NULL), MOMENTO_OK);
    assert_int_equal(wait_kind(&w, MOMENTO_TOPIC_CONNECTION_LOST, 1, 20000), 1);
    /* Not an hour: a watchdog a sixtieth of the delay, which fails the
     * test rather than let it hang, not a bound on how soon. */
    int64_t t0 = tu_now_ms();
    momento_client_free(c3);
    assert_true(tu_now_ms() - t0 < 60000);
    assert_int_equal(count_kind(&w, MOMENTO_TOPIC_END), 1);
    assert_int_equal(last_of(&w, MOMENTO_TOPIC_END)->error, MOMENTO_ERR_CLOSED);

    momento_client_free(c);
    tu_fx.client = NULL; /* freed: not the teardown's to free */
    assert_int_equal(count_kind(&a, MOMENTO_TOPIC_END), 1);
    assert_int_equal(last_of(&a, MOMENTO_TOPIC_END)->error, MOMENTO_ERR_CLOSED);
    assert_int_equal(count_kind(&b, MOMENTO_TOPIC_END), 1);
    assert_int_equal(last_of(&b, MOMENTO_TOPIC_END)->error, MOMENTO_ERR_CLOSED);
    momento_subscription_free(sa); /* the caller's reference outlives the client */
    rec_destroy(&a);
    rec_destroy(&b);
    rec_destroy(&w);
}

/* Checks that the ITEM events carry, in order, every number of `page`
 * from 1 to `n` exactly once, or that a discontinuity accounts for any
 * number missing. Returns how many items arrived. */
static size_t check_nothing_lost_in_silence(recorder *r)
{
    size_t items = 0;
    tu_topic_seq q = {0};
    pthread_mutex_lock(&r->lock);
    for (size_t i = 0; i < r->n; i++) {
        const rec_event *e = &r->ev[i];
        if (e->kind == MOMENTO_TOPIC_DISCONTINUITY) {
            tu_topic_seq_jump(&q, e->d_new, e->d_page, e->d_page != 0);
        } else if (e->kind == MOMENTO_TOPIC_ITEM) {
            tu_topic_seq_item(&q, e->seq, e->page);
            items++;
        }
    }
    pthread_mutex_unlock(&r->lock);
    return items;
}

/* A stream that fails with UNAVAILABLE (fault injection, after a few
 * messages) is resubscribed from where it stopped: one CONNECTION_LOST,
 * two CONNECTED, every item once, in order, no discontinuity. */
static void test_resubscribes_after_stream_error(void **state)
{
    (void)state;
    momento_local *s = tu_fx.server;
    momento_client *pub = tu_fx.client;
    momento_client *c = tu_client(s, NULL);
    assert_int_equal(momento__client_add_header(c, "request-id", "resub-1"), MOMENTO_OK);
    assert_int_equal(momento__client_add_header(c, "stream-error", "unavailable"), MOMENTO_OK);
    assert_int_equal(momento__client_add_header(c, "stream-error-rpcs", "topic-subscribe"),
                     MOMENTO_OK);
    assert_int_equal(momento__client_add_header(c, "stream-error-message-limit", "4"), MOMENTO_OK);
    recorder r;
    rec_init(&r);
    momento_subscribe_options o = MOMENTO_SUBSCRIBE_OPTIONS_INIT;
    o.resubscribe_delay_ms = 50;
    momento_subscription *sub = subscribe(c, "t", &r, &o);
    char v[16];
    for (int i = 1; i <= 10; i++) {
        snprintf(v, sizeof(v), "v%d", i);
        publish_text(pub, "t", v);
    }
    assert_int_equal(wait_kind(&r, MOMENTO_TOPIC_ITEM, 10, 20000), 10);
    assert_int_equal(count_kind(&r, MOMENTO_TOPIC_CONNECTION_LOST), 1);
    assert_int_equal(last_of(&r, MOMENTO_TOPIC_CONNECTION_LOST)->error,
                     MOMENTO_ERR_SERVER_UNAVAILABLE);
    assert_int_equal(count_kind(&r, MOMENTO_TOPIC_CONNECTED), 2);
    assert_int_equal(count_kind(&r, MOMENTO_TOPIC_DISCONTINUITY), 0);
    assert_int_equal(check_nothing_lost_in_silence(&r), 10);
    assert_int_equal(last_of(&r, MOMENTO_TOPIC_ITEM)->seq, 10);
    momento_subscription_stats st;
    momento_subscription_stats_get(sub, &st, sizeof(st));
    assert_int_equal(st.reconnects, 1);
    assert_int_equal(st.connection_losses, 1);
    finish(sub, &r);
    rec_destroy(&r);
    momento_client_free(c);
}

/* An error the SDKs do not retry ends an established subscription. */
static void test_unrecoverable_stream_error_ends(void **state)
{
    (void)state;
    momento_client *c = tu_fx.client;
    assert_int_equal(momento__client_add_header(c, "stream-error", "not-found"), MOMENTO_OK);
    assert_int_equal(momento__client_add_header(c, "stream-error-rpcs", "topic-subscribe"),
                     MOMENTO_OK);
    assert_int_equal(momento__client_add_header(c, "stream-error-message-limit", "2"), MOMENTO_OK);
    recorder r;
    rec_init(&r);
    momento_subscription *sub = subscribe(c, "t", &r, NULL);
    publish_text(c, "t", "a");
    assert_int_equal(wait_kind(&r, MOMENTO_TOPIC_END, 1, 20000), 1);
    assert_int_equal(last_of(&r, MOMENTO_TOPIC_END)->error, MOMENTO_ERR_CACHE_NOT_FOUND);
    assert_int_equal(count_kind(&r, MOMENTO_TOPIC_CONNECTION_LOST), 0);
    momento_subscription_free(sub);
    rec_destroy(&r);
}

/* The server restarts mid-subscription (a new process would do the same:
 * its topics start over on a new, larger page). Items published before and
 * after arrive; what was lost with the old server is a discontinuity. */
static void test_server_restart_nothing_lost_in_silence(void **state)
{
    (void)state;
    momento_local *s = start_server(0);
    int port = momento_local_port(s);
    momento_client *c = tu_patient_client(s, 5000);
    recorder r;
    rec_init(&r);
    momento_subscribe_options o = MOMENTO_SUBSCRIBE_OPTIONS_INIT;
    o.resubscribe_delay_ms = 50;
    momento_subscription *sub = subscribe(c, "t", &r, &o);
    publish_text(c, "t", "before-1");
    publish_text(c, "t", "before-2");
    assert_int_equal(wait_kind(&r, MOMENTO_TOPIC_ITEM, 2, 20000), 2);
    uint64_t old_page = last_of(&r, MOMENTO_TOPIC_ITEM)->page;

    momento_local_stop(s);
    assert_int_equal(wait_kind(&r, MOMENTO_TOPIC_CONNECTION_LOST, 1, 20000), 1);
    s = start_server(port);
    /* Published before the subscriber is back: replayed on resubscribe.
     * A publish is never retried, and one made while the client is still
     * reconnecting (slow under valgrind) fails with UNAVAILABLE: the test
     * is about what the new server accepted, so it publishes until three
     * are accepted. */
    int published = 0;
    for (int tries = 0; published < 3 && tries < 1000; tries++) {
        momento_result *res = NULL;
        if (momento_topic_publish_text_sync(c, "c", "t", MOMENTO_STR("after"), NULL, &res) ==
            MOMENTO_OK)
            published++;
        else
            usleep(50 * 1000);
        momento_result_free(res);
    }
    assert_int_equal(published, 3);
    assert_int_equal(wait_kind(&r, MOMENTO_TOPIC_ITEM, 5, 30000), 5);
    assert_int_equal(count_kind(&r, MOMENTO_TOPIC_CONNECTED), 2);
    const rec_event *d = last_of(&r, MOMENTO_TOPIC_DISCONTINUITY);
    assert_non_null(d);
    assert_int_equal(d->d_last, 2);
    assert_true(d->d_page > old_page);
    assert_int_equal(check_nothing_lost_in_silence(&r), 5);
    const rec_event *e = last_of(&r, MOMENTO_TOPIC_ITEM);
    assert_int_equal(e->seq, 3);
    assert_int_equal(e->page, d->d_page);
    finish(sub, &r);
    rec_destroy(&r);
    momento_client_free(c);
    momento_local_stop(s);
}

/* A stream that goes quiet (the server sends no heartbeat for longer than
 * idle_timeout_ms) is taken as broken: CONNECTION_LOST, then a new stream
 * from where it stopped. */
static void test_idle_stream_is_resubscribed(void **state)
{
    (void)state;
    momento_local_options *lo = tu_options("c");
    assert_int_equal(momento_local_options_set_heartbeat_ms(lo, 3600000), MOMENTO_OK);
    momento_local *s = tu_start(lo);
    momento_client *c = tu_client(s, NULL);
    recorder r;
    rec_init(&r);
    momento_subscribe_options o = MOMENTO_SUBSCRIBE_OPTIONS_INIT;
    o.idle_timeout_ms = (uint32_t)TU_MS(300);
    o.resubscribe_delay_ms = 20;
    momento_subscription *sub = subscribe(c, "t", &r, &o);
    publish_text(c, "t", "a");
    assert_int_equal(wait_kind(&r, MOMENTO_TOPIC_CONNECTION_LOST, 1, 20000), 1);
    assert_int_equal(last_of(&r, MOMENTO_TOPIC_CONNECTION_LOST)->error,
                     MOMENTO_ERR_SERVER_UNAVAILABLE);
    assert_true(wait_kind(&r, MOMENTO_TOPIC_CONNECTED, 2, 20000) >= 2);
    publish_text(c, "t", "b");
    assert_int_equal(wait_kind(&r, MOMENTO_TOPIC_ITEM, 2, 20000), 2);
    assert_int_equal(check_nothing_lost_in_silence(&r), 2);
    assert_int_equal(last_of(&r, MOMENTO_TOPIC_ITEM)->seq, 2);
    finish(sub, &r);
    rec_destroy(&r);
    momento_client_free(c);
    momento_local_stop(s);
}

/* A stream whose first message does not come in time: the first one ends
 * the subscription with MOMENTO_ERR_TIMEOUT. */
static void test_first_message_timeout(void **state)
{
    (void)state;
    momento_client *c = tu_fx.client;
    /* Held for good: only the first message's timeout can end it. */
    assert_int_equal(momento__client_add_header(c, "delay-ms", "999999999"), MOMENTO_OK);
    assert_int_equal(momento__client_add_header(c, "delay-rpcs", "topic-subscribe"), MOMENTO_OK);
    recorder r;
    rec_init(&r);
    momento_subscribe_options o = MOMENTO_SUBSCRIBE_OPTIONS_INIT;
    o.first_message_timeout_ms = 200;
    momento_subscription *sub = NULL;
    int64_t t0 = tu_now_ms();
    assert_int_equal(momento_topic_subscribe_sync(c, "c", "t", &o, on_event, &r, &sub),
                     MOMENTO_ERR_TIMEOUT);
    assert_true(tu_now_ms() - t0 >= 195); /* not before it (a timer's lower bound) */
    assert_null(sub);
    if (r.n != 1) /* say which events came, should this ever fail again */
        fail_msg("%zu events, the first two of kinds %d and %d (errors %d, %d)", (size_t)r.n,
                 (int)r.ev[0].kind, (int)r.ev[1].kind, r.ev[0].error, r.ev[1].error);
    assert_int_equal(r.ev[0].error, MOMENTO_ERR_TIMEOUT);
    rec_destroy(&r);
}

/* Heartbeats are counted, and delivered when asked for. */
static void test_heartbeats(void **state)
{
    (void)state;
    momento_client *c = tu_fx.client;
    recorder r;
    rec_init(&r);
    momento_subscription *sub = subscribe_heartbeats(c, "t", &r);
    /* The first message, then one per second while idle. */
    assert_true(wait_kind(&r, MOMENTO_TOPIC_HEARTBEAT, 2, 20000) >= 2);
    momento_subscription_stats st;
    momento_subscription_stats_get(sub, &st, sizeof(st));
    assert_true(st.heartbeats >= 2);
    finish(sub, &r);

    recorder q;
    rec_init(&q);
    sub = subscribe(c, "t", &q, NULL);
    /* Counted as they come (waited for, not given a fixed 1.2 s)... */
    memset(&st, 0, sizeof(st));
    tu_wait_until((momento_subscription_stats_get(sub, &st, sizeof(st)), st.heartbeats >= 2),
                  30000);
    assert_true(st.heartbeats >= 2);
    assert_int_equal(count_kind(&q, MOMENTO_TOPIC_HEARTBEAT), 0); /* not asked for */
    finish(sub, &q);
    rec_destroy(&r);
    rec_destroy(&q);
}

/* An HTTP GET of `path` on 127.0.0.1:`port`: the status code, or -1. */
static int http_get(int port, const char *path)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    int code = -1;
    char buf[512];
    if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0) {
        int n = snprintf(buf, sizeof(buf), "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", path);
        if (send(fd, buf, (size_t)n, 0) == n) {
            ssize_t got = recv(fd, buf, sizeof(buf) - 1, 0);
            if (got > 0) {
                buf[got] = '\0';
                if (sscanf(buf, "HTTP/%*s %d", &code) != 1)
                    code = -1;
            }
        }
    }
    if (fd >= 0)
        close(fd);
    return code;
}

/* The test admin of the official suites (momento-local
 * --enable-test-admin): /block cuts the data port - the subscription
 * loses its stream once, gets no heartbeat while blocked, and a get fails
 * UNAVAILABLE - and /unblock gives it back: the subscription is up again on
 * its own, and so are requests. */
static void test_test_admin_blocks_and_unblocks(void **state)
{
    (void)state;
    momento_local_options *o = tu_options(NULL);
    assert_int_equal(momento_local_options_set_test_admin_port(o, -2), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_local_options_set_test_admin_port(o, 65536),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_local_options_set_test_admin_port(o, 0), MOMENTO_OK);
    assert_int_equal(momento_local_options_set_heartbeat_ms(o, 100), MOMENTO_OK);
    assert_int_equal(momento_local_options_add_cache(o, "c"), MOMENTO_OK);
    momento_local *s = tu_start(o);
    int admin = momento_local_test_admin_port(s);
    assert_true(admin > 0);
    momento_local *plain = start_server(0);
    assert_int_equal(momento_local_test_admin_port(plain), 0); /* off unless asked for */
    momento_local_stop(plain);

    momento_client *c = tu_client(s, NULL);
    recorder r;
    rec_init(&r);
    momento_subscription *sub = subscribe_heartbeats(c, "t", &r);
    assert_true(wait_kind(&r, MOMENTO_TOPIC_HEARTBEAT, 3, 20000) >= 3);

    assert_int_equal(http_get(admin, "/block"), 200);
    assert_int_equal(wait_kind(&r, MOMENTO_TOPIC_CONNECTION_LOST, 1, 20000), 1);
    size_t heartbeats = count_kind(&r, MOMENTO_TOPIC_HEARTBEAT);
    momento_result *res = NULL;
    assert_int_equal(momento_get_sync(c, "c", MOMENTO_STR("k"), NULL, &res),
                     MOMENTO_ERR_SERVER_UNAVAILABLE);
    momento_result_free(res);
    usleep((useconds_t)TU_MS(500) * 1000); /* five heartbeat intervals, two resubscribes */
    assert_int_equal(count_kind(&r, MOMENTO_TOPIC_HEARTBEAT), heartbeats);
    assert_int_equal(count_kind(&r, MOMENTO_TOPIC_CONNECTION_LOST), 1);

    assert_int_equal(http_get(admin, "/unblock"), 200);
    assert_true(wait_kind(&r, MOMENTO_TOPIC_HEARTBEAT, heartbeats + 1, 20000) > heartbeats);
    assert_int_equal(count_kind(&r, MOMENTO_TOPIC_CONNECTED), 2);
    assert_int_equal(momento_get_sync(c, "c", MOMENTO_STR("k"), NULL, &res), MOMENTO_OK);
    momento_result_free(res);
    assert_int_equal(http_get(admin, "/elsewhere"), 404);
    finish(sub, &r);
    rec_destroy(&r);
    momento_client_free(c);
    momento_local_stop(s);
}

/* A subscription that gives a position replays from it. */
static void test_resume_from_position(void **state)
{
    (void)state;
    momento_client *c = tu_fx.client;
    recorder r;
    rec_init(&r);
    momento_subscription *sub = subscribe(c, "t", &r, NULL);
    for (int i = 0; i < 5; i++)
        publish_text(c, "t", "p");
    assert_int_equal(wait_kind(&r, MOMENTO_TOPIC_ITEM, 5, 20000), 5);
    uint64_t page = last_of(&r, MOMENTO_TOPIC_ITEM)->page;
    finish(sub, &r);

    recorder q;
    rec_init(&q);
    momento_subscribe_options o = MOMENTO_SUBSCRIBE_OPTIONS_INIT;
    o.resume_at_sequence_number = 3;
    o.sequence_page = page;
    sub = subscribe(c, "t", &q, &o);
    assert_int_equal(wait_kind(&q, MOMENTO_TOPIC_ITEM, 3, 20000), 3);
    assert_int_equal(q.ev[1].kind, MOMENTO_TOPIC_ITEM); /* right after CONNECTED */
    assert_int_equal(q.ev[1].seq, 3);
    assert_int_equal(check_nothing_lost_in_silence(&q), 3);
    assert_int_equal(count_kind(&q, MOMENTO_TOPIC_DISCONTINUITY), 0);
    finish(sub, &q);
    rec_destroy(&r);
    rec_destroy(&q);
}

/* A blocking subscribe from a subscription's own callback would wait for
 * the thread it runs on. */
static void test_blocking_subscribe_from_callback(void **state)
{
    (void)state;
    momento_client *c = tu_fx.client;
    recorder r;
    rec_init(&r);
    r.client = c;
    r.sync_rc = 1;
    momento_subscription *sub = NULL;
    assert_int_equal(momento_topic_subscribe(c, "c", "t", NULL, on_event, &r, &sub), MOMENTO_OK);
    assert_int_equal(wait_kind(&r, MOMENTO_TOPIC_CONNECTED, 1, 20000), 1);
    assert_int_equal(r.sync_rc, MOMENTO_ERR_WOULD_DEADLOCK);
    r.client = NULL;
    finish(sub, &r);
    rec_destroy(&r);
}

static bool wait_server_subscriptions(momento_local *s, uint64_t n, int timeout_ms)
{
    tu_wait_until(momento_local_subscriptions(s) == n, timeout_ms);
    return momento_local_subscriptions(s) == n;
}

/* Subscriptions have channels of their own, each with at most Momento's
 * 100 streams (momento-local enforces 100 per connection by default): 150
 * subscriptions on a default client, and a get is still answered - on a
 * connection shared with the streams it would wait behind them for its
 * whole deadline. With one stream channel the 101st stream is refused at
 * once with LIMIT_EXCEEDED and a reason; a subscription sharing a stream
 * is not; a place freed is taken again. */
static void test_stream_channels(void **state)
{
    (void)state;
    momento_local *s = tu_fx.server;
    momento_client *c = tu_fx.client;
    enum { N = 150, CAP = 100 };
    recorder *recs = calloc(N, sizeof(*recs));
    momento_subscription **subs = calloc(N, sizeof(*subs));
    char topic[32];
    for (int i = 0; i < N; i++) {
        rec_init(&recs[i]);
        snprintf(topic, sizeof(topic), "t%d", i);
        subs[i] = subscribe(c, topic, &recs[i], NULL);
    }
    assert_true(wait_server_subscriptions(s, N, 20000));
    momento_request_options o = MOMENTO_REQUEST_OPTIONS_INIT;
    o.timeout_ms = (uint32_t)TU_MS(3000);
    momento_result *r = NULL;
    assert_int_equal(momento_get_sync(c, "c", MOMENTO_STR("k"), &o, &r), MOMENTO_OK);
    momento_result_free(r);
    for (int i = 0; i < N; i++) {
        finish(subs[i], &recs[i]);
        rec_destroy(&recs[i]);
    }
    momento_client_free(c);
    tu_fx.client = NULL; /* freed: not the teardown's to free */

    momento_config *cfg = tu_config();
    assert_int_equal(momento_config_stream_channels(cfg), 4);
    assert_int_equal(momento_config_set_stream_channels(cfg, 0), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_config_set_stream_channels(cfg, 65), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_config_set_stream_channels(NULL, 1), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_config_set_stream_channels(cfg, 1), MOMENTO_OK);
    c = tu_client(s, cfg);
    momento_config_free(cfg);
    for (int i = 0; i < CAP; i++) {
        rec_init(&recs[i]);
        snprintf(topic, sizeof(topic), "u%d", i);
        subs[i] = subscribe(c, topic, &recs[i], NULL);
    }
    recorder extra_rec;
    rec_init(&extra_rec);
    momento_subscription *extra = NULL;
    assert_int_equal(momento_topic_subscribe(c, "c", "u-extra", NULL, on_event, &extra_rec, &extra),
                     MOMENTO_ERR_LIMIT_EXCEEDED);
    assert_null(extra);
    assert_non_null(strstr(momento_refusal_reason(), "maximum number of subscriptions: 100"));
    /* Sharing u0's stream needs no place of its own. */
    recorder joined_rec;
    rec_init(&joined_rec);
    momento_subscription *joined = subscribe(c, "u0", &joined_rec, NULL);
    finish(joined, &joined_rec);
    rec_destroy(&joined_rec);
    assert_int_equal(momento_local_subscriptions(s), CAP);
    /* u0's stream ends with its last subscriber: its place is free again. */
    finish(subs[0], &recs[0]);
    int rc;
    tu_wait_until((rc = momento_topic_subscribe(c, "c", "u-extra", NULL, on_event, &extra_rec,
                                                &extra)) == MOMENTO_OK,
                  5000);
    assert_int_equal(rc, MOMENTO_OK);
    assert_int_equal(wait_kind(&extra_rec, MOMENTO_TOPIC_CONNECTED, 1, 20000), 1);
    finish(extra, &extra_rec);
    rec_destroy(&extra_rec);
    for (int i = 0; i < CAP; i++) {
        if (i > 0)
            finish(subs[i], &recs[i]);
        rec_destroy(&recs[i]);
    }
    free(recs);
    free(subs);
}

/* Subscriptions of one client to one topic share a server stream; each
 * keeps its own events, stats and END; a joiner hears from its join on;
 * the stream goes when its last subscriber does; OWN_STREAM opts out. */
static void test_subscriptions_share_a_stream(void **state)
{
    (void)state;
    momento_local *s = tu_fx.server;
    momento_client *c = tu_fx.client;
    /* Static: five recorders of MAX_EVENTS events are too much stack for
     * valgrind's main thread. */
    static recorder a, b, own;
    rec_init(&a);
    rec_init(&b);
    rec_init(&own);
    momento_subscription *sa = subscribe(c, "t", &a, NULL);
    publish_text(c, "t", "before b");
    assert_int_equal(wait_kind(&a, MOMENTO_TOPIC_ITEM, 1, 20000), 1);
    momento_subscription *sb = subscribe(c, "t", &b, NULL);
    momento_subscribe_options o = MOMENTO_SUBSCRIBE_OPTIONS_INIT;
    o.flags = MOMENTO_SUBSCRIBE_OWN_STREAM;
    momento_subscription *so = subscribe(c, "t", &own, &o);
    assert_true(wait_server_subscriptions(s, 2, 20000)); /* shared + own, not 3 */

    publish_text(c, "t", "x");
    publish_text(c, "t", "y");
    assert_int_equal(wait_kind(&a, MOMENTO_TOPIC_ITEM, 3, 20000), 3);
    assert_int_equal(wait_kind(&b, MOMENTO_TOPIC_ITEM, 2, 20000), 2);
    assert_int_equal(wait_kind(&own, MOMENTO_TOPIC_ITEM, 2, 20000), 2);
    /* b joined after item 1: it starts at 2, CONNECTED first. */
    assert_int_equal(b.ev[0].kind, MOMENTO_TOPIC_CONNECTED);
    assert_int_equal(b.ev[1].seq, 2);
    assert_int_equal(b.ev[2].seq, 3);
    assert_int_equal(count_kind(&b, MOMENTO_TOPIC_CONNECTED), 1);
    assert_int_equal(count_kind(&b, MOMENTO_TOPIC_DISCONTINUITY), 0);
    momento_subscription_stats st;
    momento_subscription_stats_get(sb, &st, sizeof(st));
    assert_int_equal(st.items, 2);
    assert_int_equal(st.last_sequence_number, 3);
    assert_int_equal(st.connected, 1);
    momento_subscription_stats_get(sa, &st, sizeof(st));
    assert_int_equal(st.items, 3);

    /* a leaves: b still hears, the stream stays. */
    finish(sa, &a);
    publish_text(c, "t", "z");
    assert_int_equal(wait_kind(&b, MOMENTO_TOPIC_ITEM, 3, 20000), 3);
    assert_int_equal(count_kind(&a, MOMENTO_TOPIC_ITEM), 3);
    assert_int_equal(momento_local_subscriptions(s), 2);
    /* b leaves: the shared stream goes. */
    finish(sb, &b);
    assert_true(wait_server_subscriptions(s, 1, 20000));
    finish(so, &own);
    assert_true(wait_server_subscriptions(s, 0, 20000));

    /* A deleted cache ends every subscription of a shared stream. */
    tu_create_cache(c, "d");
    static recorder d1, d2;
    rec_init(&d1);
    rec_init(&d2);
    momento_subscription *s1 = NULL, *s2 = NULL;
    assert_int_equal(momento_topic_subscribe_sync(c, "d", "t", NULL, on_event, &d1, &s1),
                     MOMENTO_OK);
    assert_int_equal(momento_topic_subscribe_sync(c, "d", "t", NULL, on_event, &d2, &s2),
                     MOMENTO_OK);
    assert_true(wait_server_subscriptions(s, 1, 20000));
    momento_result *res = NULL;
    assert_int_equal(momento_delete_cache_sync(c, "d", NULL, &res), MOMENTO_OK);
    momento_result_free(res);
    assert_int_equal(wait_kind(&d1, MOMENTO_TOPIC_END, 1, 20000), 1);
    assert_int_equal(wait_kind(&d2, MOMENTO_TOPIC_END, 1, 20000), 1);
    assert_int_equal(last_of(&d1, MOMENTO_TOPIC_END)->error, MOMENTO_ERR_CACHE_NOT_FOUND);
    assert_int_equal(last_of(&d2, MOMENTO_TOPIC_END)->error, MOMENTO_ERR_CACHE_NOT_FOUND);
    momento_subscription_free(s1);
    momento_subscription_free(s2);
    rec_destroy(&a);
    rec_destroy(&b);
    rec_destroy(&own);
    rec_destroy(&d1);
    rec_destroy(&d2);
}

/* ---- against a fake server: what momento-local never sends --------------- */

static grpc_slice pack_item(uint64_t seq, uint64_t page, const char *text)
{
    CacheClient__Pubsub__TopicValue v = CACHE_CLIENT__PUBSUB____TOPIC_VALUE__INIT;
    v.kind_case = CACHE_CLIENT__PUBSUB____TOPIC_VALUE__KIND_TEXT;
    v.text = (char *)text;
    CacheClient__Pubsub__TopicItem it = CACHE_CLIENT__PUBSUB____TOPIC_ITEM__INIT;
    it.topic_sequence_number = seq;
    it.sequence_page = page;
    it.value = &v;
    it.publisher_id = (char *)"pub-7";
    CacheClient__Pubsub__SubscriptionItem m = CACHE_CLIENT__PUBSUB____SUBSCRIPTION_ITEM__INIT;
    m.kind_case = CACHE_CLIENT__PUBSUB____SUBSCRIPTION_ITEM__KIND_ITEM;
    m.item = &it;
    grpc_slice s = grpc_slice_malloc(protobuf_c_message_get_packed_size(&m.base));
    protobuf_c_message_pack(&m.base, GRPC_SLICE_START_PTR(s));
    return s;
}

static grpc_slice pack_heartbeat(void)
{
    CacheClient__Pubsub__Heartbeat h = CACHE_CLIENT__PUBSUB____HEARTBEAT__INIT;
    CacheClient__Pubsub__SubscriptionItem m = CACHE_CLIENT__PUBSUB____SUBSCRIPTION_ITEM__INIT;
    m.kind_case = CACHE_CLIENT__PUBSUB____SUBSCRIPTION_ITEM__KIND_HEARTBEAT;
    m.heartbeat = &h;
    grpc_slice s = grpc_slice_malloc(protobuf_c_message_get_packed_size(&m.base));
    protobuf_c_message_pack(&m.base, GRPC_SLICE_START_PTR(s));
    return s;
}

/* Call 0: heartbeat, items 1, 2, 2 again, 5 (a gap), then the stream ends
 * OK. Call 1: heartbeat, item 6, end. Later calls: garbage. */
static bool fake_stream(void *arg, size_t call, size_t i, grpc_slice *msg)
{
    (void)arg;
    static const uint64_t first[] = {0, 1, 2, 2, 5};
    if (call == 0 && i < 5) {
        *msg = i == 0 ? pack_heartbeat() : pack_item(first[i], 9, "x");
        return true;
    }
    if (call == 1 && i < 2) {
        *msg = i == 0 ? pack_heartbeat() : pack_item(6, 9, "y");
        return true;
    }
    if (call >= 2 && i == 0) {
        *msg = grpc_slice_from_copied_string("\xff\xff\xff");
        return true;
    }
    return false;
}

/* A client of the fake server `f`, with the default configuration. */
static momento_client *fake_client(const tu_fake *f)
{
    momento_credentials *cr = NULL;
    assert_int_equal(momento_credentials_local(&cr, tu_fake_endpoint(f)), MOMENTO_OK);
    momento_client *c = NULL;
    assert_int_equal(momento_client_new(&c, NULL, cr), MOMENTO_OK);
    momento_credentials_free(cr);
    return c;
}

static void test_gaps_repeats_and_garbage_from_a_server(void **state)
{
    (void)state;
    tu_fake *f = tu_fake_start(fake_stream, NULL, 0);
    momento_client *c = fake_client(f);
    recorder r;
    rec_init(&r);
    momento_subscribe_options o = MOMENTO_SUBSCRIBE_OPTIONS_INIT;
    o.resubscribe_delay_ms = 20;
    momento_subscription *sub = subscribe(c, "t", &r, &o);
    /* The third stream's garbage ends the subscription. */
    assert_int_equal(wait_kind(&r, MOMENTO_TOPIC_END, 1, 20000), 1);
    assert_int_equal(last_of(&r, MOMENTO_TOPIC_END)->error, MOMENTO_ERR_BAD_RESPONSE);

    assert_int_equal(count_kind(&r, MOMENTO_TOPIC_ITEM), 4); /* 1, 2, 5, 6 */
    assert_int_equal(check_nothing_lost_in_silence(&r), 4);
    const rec_event *d = last_of(&r, MOMENTO_TOPIC_DISCONTINUITY);
    assert_non_null(d);
    assert_int_equal(d->from_server, 0);
    assert_int_equal(d->d_last, 2);
    assert_int_equal(d->d_new, 4);
    assert_int_equal(d->d_page, 9);
    assert_int_equal(count_kind(&r, MOMENTO_TOPIC_DISCONTINUITY), 1);
    assert_int_equal(count_kind(&r, MOMENTO_TOPIC_CONNECTION_LOST), 2);
    momento_subscription_stats st;
    momento_subscription_stats_get(sub, &st, sizeof(st));
    assert_int_equal(st.duplicates_dropped, 1);
    assert_int_equal(st.reconnects, 2);
    momento_subscription_free(sub);
    rec_destroy(&r);
    momento_client_free(c);
    tu_fake_stop(f);
}

/* Issue 27 item 5: is_text means valid UTF-8. A server's item sent as text
 * whose bytes are not UTF-8 (ff fe) arrives as bytes (is_text 0, nothing
 * lost); valid text arrives as text. */
static bool fake_bad_text(void *arg, size_t call, size_t i, grpc_slice *msg)
{
    (void)arg;
    (void)call;
    static const char *const texts[] = {NULL, "\xff\xfe", "h\xc3\xa9llo", "a\xc3"};
    if (i < 4) {
        *msg = i == 0 ? pack_heartbeat() : pack_item(i, 3, texts[i]);
        return true;
    }
    return false;
}

static void test_invalid_utf8_text_is_bytes(void **state)
{
    (void)state;
    tu_fake *f = tu_fake_start(fake_bad_text, NULL, 0);
    momento_client *c = fake_client(f);
    recorder r;
    rec_init(&r);
    momento_subscription *sub = subscribe(c, "t", &r, NULL);
    assert_true(wait_kind(&r, MOMENTO_TOPIC_ITEM, 3, 20000) >= 3);
    pthread_mutex_lock(&r.lock);
    const rec_event *items[3];
    size_t n = 0;
    for (size_t i = 0; i < r.n && n < 3; i++)
        if (r.ev[i].kind == MOMENTO_TOPIC_ITEM)
            items[n++] = &r.ev[i];
    pthread_mutex_unlock(&r.lock);
    assert_int_equal(items[0]->is_text, 0);
    assert_int_equal(items[0]->value_len, 2);
    assert_memory_equal(items[0]->value, "\xff\xfe", 2);
    assert_int_equal(items[1]->is_text, 1);
    assert_int_equal(items[1]->value_len, 6);
    assert_memory_equal(items[1]->value, "h\xc3\xa9llo", 6);
    assert_int_equal(items[2]->is_text, 0); /* truncated sequence */
    assert_int_equal(items[2]->value_len, 2);
    momento_subscription_free(sub);
    rec_destroy(&r);
    momento_client_free(c);
    tu_fake_stop(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        tu_fixture_test(test_publish_and_receive_in_order),
        tu_fixture_test(test_refusals),
        tu_fixture_test(test_unknown_cache),
        tu_fixture_test(test_unsubscribe_paths),
        tu_fixture_test(test_client_free_ends_subscriptions),
        tu_fixture_test(test_resubscribes_after_stream_error),
        tu_fixture_test(test_unrecoverable_stream_error_ends),
        cmocka_unit_test(test_server_restart_nothing_lost_in_silence),
        tu_fixture_test(test_first_message_timeout),
        cmocka_unit_test(test_idle_stream_is_resubscribed),
        tu_fixture_test(test_heartbeats),
        tu_fixture_test(test_resume_from_position),
        tu_fixture_test(test_blocking_subscribe_from_callback),
        tu_fixture_test(test_subscriptions_share_a_stream),
        tu_fixture_test(test_stream_channels),
        cmocka_unit_test(test_test_admin_blocks_and_unblocks),
        cmocka_unit_test(test_gaps_repeats_and_garbage_from_a_server),
        cmocka_unit_test(test_invalid_utf8_text_is_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
