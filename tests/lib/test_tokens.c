/* Disposable tokens against momento-local: each kind of scope issued
 * through the library, a client made from the token doing what the scope
 * allows and refused (PERMISSION) the rest, expiry and forgery refused
 * (AUTHENTICATION), the library's and the server's argument checks
 * (INVALID_ARGUMENT), and the token endpoint the credentials derive. */
#include "base/alloc.h"
#include "base/base64.h"
#include "base/json.h"
#include "model/credentials.h"
#include "momento/collections.h"
#include "momento/topics.h"
#include "srv_test.h"
#include "testutil.h"

#include "permissionmessages.pb-c.h"
#include "token.pb-c.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* tests/common's fixture (tu_fx.client holds the ordinary, empty, token)
 * and a second cache. */
static int setup(void **state)
{
    tu_fixture_setup(state);
    tu_create_cache(tu_fx.client, "other");
    return 0;
}

/* A token for `scope` (freed here) from `from`, as its key; the caller
 * frees it. */
static char *issue_from(momento_client *from, momento_token_scope *scope, uint32_t seconds)
{
    momento_result *r = NULL;
    int rc = momento_generate_disposable_token_sync(from, scope, seconds, "tid", NULL, &r);
    momento_token_scope_free(scope);
    assert_int_equal(rc, MOMENTO_OK);
    assert_int_equal(momento_result_outcome(r), MOMENTO_OUTCOME_SUCCESS);
    char *key = strdup(momento_result_token_api_key(r));
    momento_result_free(r);
    assert_true(strlen(key) > 0);
    return key;
}

static char *issue(momento_token_scope *scope, uint32_t seconds)
{
    return issue_from(tu_fx.client, scope, seconds);
}

/* A client whose key is issued (for 60 s) with `scope`, which it frees. */
static momento_client *scoped_client(momento_token_scope *scope)
{
    char *key = issue(scope, 60);
    momento_client *c = tu_client_with_key(tu_fx.server, key);
    free(key);
    return c;
}

static momento_token_scope *new_scope(void)
{
    momento_token_scope *s = NULL;
    assert_int_equal(momento_token_scope_new(&s), MOMENTO_OK);
    return s;
}

static int do_set(momento_client *c, const char *cache, const char *key)
{
    return momento_set_sync(c, cache, key, strlen(key), "v", 1, 0, NULL, NULL);
}

static int do_get(momento_client *c, const char *cache, const char *key)
{
    momento_result *r = NULL;
    int rc = momento_get_sync(c, cache, key, strlen(key), NULL, &r);
    if (rc != MOMENTO_OK) {
        /* Momento's words, so that the SDKs' "Insufficient permissions"
         * checks hold against momento-local too. */
        if (rc == MOMENTO_ERR_PERMISSION)
            assert_non_null(strstr(momento_result_message(r), "Insufficient permissions"));
        assert_int_equal(momento_result_error(r), rc);
    }
    momento_result_free(r);
    return rc;
}

static void test_result_and_key(void **state)
{
    (void)state;
    momento_token_scope *s = new_scope();
    assert_int_equal(momento_token_scope_add_cache(s, MOMENTO_TOKEN_READ_WRITE, "c"), MOMENTO_OK);
    momento_result *r = NULL;
    int64_t before = (int64_t)time(NULL);
    assert_int_equal(momento_generate_disposable_token_sync(tu_fx.client, s, 60, NULL, NULL, &r),
                     MOMENTO_OK);
    assert_string_equal(momento_result_token_endpoint(r), momento_local_endpoint(tu_fx.server));
    uint64_t until = momento_result_token_valid_until(r);
    assert_true((int64_t)until >= before + 60 && (int64_t)until <= (int64_t)time(NULL) + 60);

    /* Past the hour Momento once capped tokens at: 30 days, and a token of
     * that life works. */
    momento_result *month = NULL;
    enum { DAYS30 = 30 * 86400 };
    before = (int64_t)time(NULL);
    assert_int_equal(
        momento_generate_disposable_token_sync(tu_fx.client, s, DAYS30, NULL, NULL, &month),
        MOMENTO_OK);
    momento_token_scope_free(s);
    int64_t month_until = (int64_t)momento_result_token_valid_until(month);
    assert_true(month_until >= before + DAYS30 && month_until <= (int64_t)time(NULL) + DAYS30);
    momento_credentials *mc = NULL;
    assert_int_equal(momento_credentials_local_with_key(&mc, momento_local_endpoint(tu_fx.server),
                                                        momento_result_token_api_key(month)),
                     MOMENTO_OK);
    momento_client *mclient = NULL;
    assert_int_equal(momento_client_new(&mclient, NULL, mc), MOMENTO_OK);
    momento_credentials_free(mc);
    momento_result *w = NULL;
    assert_int_equal(momento_set_sync(mclient, "c", MOMENTO_STR("month"), MOMENTO_STR("v"), 0,
                                      NULL, &w),
                     MOMENTO_OK);
    momento_result_free(w);
    momento_client_free(mclient);
    momento_result_free(month);
    /* The key is the v1 form: base64 of {"endpoint", "api_key"}. */
    const char *key = momento_result_token_api_key(r);
    unsigned char *json;
    size_t json_len;
    assert_int_equal(momento__base64_decode(key, strlen(key), &json, &json_len), 0);
    char *endpoint = NULL, *token = NULL;
    assert_int_equal(momento__json_get_string((char *)json, json_len, "endpoint", &endpoint), 1);
    assert_int_equal(momento__json_get_string((char *)json, json_len, "api_key", &token), 1);
    assert_string_equal(endpoint, momento_local_endpoint(tu_fx.server));
    assert_true(strlen(token) > 20);
    free(json);
    free(endpoint);
    /* ...which momento_credentials_from_api_key() reads (with an endpoint:
     * a local server's host:port is no base endpoint). */
    momento_credentials *creds = NULL;
    assert_int_equal(momento_credentials_from_api_key(&creds, key, "cell-1.example.com"),
                     MOMENTO_OK);
    assert_string_equal(creds->token, token);
    momento_credentials_free(creds);
    /* A copy keeps everything. */
    char *saved = strdup(key);
    momento_result *copy = NULL;
    assert_int_equal(momento_result_dup(r, &copy), MOMENTO_OK);
    momento_result_free(r);
    assert_string_equal(momento_result_token_api_key(copy), saved);
    free(saved);
    assert_string_equal(momento_result_token_endpoint(copy), momento_local_endpoint(tu_fx.server));
    assert_int_equal(momento_result_token_valid_until(copy), until);
    momento_result_free(copy);
    /* The bare token works as a key too. */
    momento_client *c = tu_client_with_key(tu_fx.server, token);
    free(token);
    assert_int_equal(do_set(c, "c", "x"), MOMENTO_OK);
    momento_client_free(c);
    /* Other results hold no token, even one whose value and field (the
     * fields a token result reuses) are set. */
    assert_string_equal(momento_result_token_api_key(NULL), "");
    assert_int_equal(momento_result_token_valid_until(NULL), 0);
    assert_int_equal(momento_dictionary_set_field_sync(tu_fx.client, "c", "d", 1, "f", 1, "v", 1,
                                                       NULL, NULL, NULL),
                     MOMENTO_OK);
    momento_result *other = NULL;
    assert_int_equal(
        momento_dictionary_get_field_sync(tu_fx.client, "c", "d", 1, "f", 1, NULL, &other),
        MOMENTO_OK);
    assert_true(momento_result_is_hit(other));
    assert_string_equal(momento_result_token_api_key(other), "");
    assert_string_equal(momento_result_token_endpoint(other), "");
    momento_result_free(other);
}

static void test_cache_scope(void **state)
{
    (void)state;
    momento_token_scope *s = new_scope();
    assert_int_equal(momento_token_scope_add_cache(s, MOMENTO_TOKEN_READ_WRITE, "c"), MOMENTO_OK);
    momento_client *c = scoped_client(s);
    assert_int_equal(do_set(c, "c", "a"), MOMENTO_OK);
    assert_int_equal(do_get(c, "c", "a"), MOMENTO_OK);
    assert_int_equal(do_get(c, "c", "missing"), MOMENTO_OK);
    assert_int_equal(momento_increment_sync(c, "c", "n", 1, 5, 0, NULL, NULL), MOMENTO_OK);
    /* Another cache, the control plane, and making tokens: refused. */
    assert_int_equal(do_get(c, "other", "a"), MOMENTO_ERR_PERMISSION);
    assert_int_equal(do_set(c, "other", "a"), MOMENTO_ERR_PERMISSION);
    /* A cache that does not exist is outside the scope before it is
     * missing. */
    assert_int_equal(do_get(c, "nope", "a"), MOMENTO_ERR_PERMISSION);
    assert_int_equal(momento_create_cache_sync(c, "new", NULL, NULL), MOMENTO_ERR_PERMISSION);
    assert_int_equal(momento_list_caches_sync(c, NULL, NULL), MOMENTO_ERR_PERMISSION);
    s = new_scope();
    assert_int_equal(momento_token_scope_add_cache(s, MOMENTO_TOKEN_READ_WRITE, "c"), MOMENTO_OK);
    assert_int_equal(momento_generate_disposable_token_sync(c, s, 60, NULL, NULL, NULL),
                     MOMENTO_ERR_PERMISSION);
    momento_token_scope_free(s);
    /* Ping needs no token at all. */
    assert_int_equal(momento_ping_sync(c, NULL, NULL), MOMENTO_OK);
    momento_client_free(c);
}

static void test_key_scope(void **state)
{
    (void)state;
    momento_token_scope *s = new_scope();
    /* Key "k1" of every cache. */
    assert_int_equal(momento_token_scope_add_cache_key(s, MOMENTO_TOKEN_READ_WRITE, NULL, "k1", 2),
                     MOMENTO_OK);
    momento_client *c = scoped_client(s);
    assert_int_equal(do_set(c, "c", "k1"), MOMENTO_OK);
    assert_int_equal(do_set(c, "other", "k1"), MOMENTO_OK);
    assert_int_equal(do_get(c, "other", "k1"), MOMENTO_OK);
    assert_int_equal(do_get(c, "c", "k2"), MOMENTO_ERR_PERMISSION);
    assert_int_equal(do_set(c, "c", "k10"), MOMENTO_ERR_PERMISSION); /* a key, not a prefix */
    assert_int_equal(momento_delete_sync(c, "c", "k2", 2, NULL, NULL), MOMENTO_ERR_PERMISSION);
    /* Every key a request names must be in scope. */
    const void *keys[] = {"k1", "k2"};
    size_t lens[] = {2, 2};
    assert_int_equal(momento_keys_exist_sync(c, "c", keys, lens, 1, NULL, NULL), MOMENTO_OK);
    assert_int_equal(momento_keys_exist_sync(c, "c", keys, lens, 2, NULL, NULL),
                     MOMENTO_ERR_PERMISSION);
    assert_int_equal(momento_get_batch_sync(c, "c", keys, lens, 1, NULL, NULL), MOMENTO_OK);
    assert_int_equal(momento_get_batch_sync(c, "c", keys, lens, 2, NULL, NULL),
                     MOMENTO_ERR_PERMISSION);
    /* A collection's key is its name. */
    assert_int_equal(
        momento_dictionary_set_field_sync(c, "c", "k1", 2, "f", 1, "v", 1, NULL, NULL, NULL),
        MOMENTO_ERR_FAILED_PRECONDITION); /* k1 holds a scalar: in scope, wrong type */
    assert_int_equal(
        momento_dictionary_set_field_sync(c, "c", "d", 1, "f", 1, "v", 1, NULL, NULL, NULL),
        MOMENTO_ERR_PERMISSION);
    momento_client_free(c);
}

static void test_prefix_read_only(void **state)
{
    (void)state;
    assert_int_equal(do_set(tu_fx.client, "c", "pet-cat"), MOMENTO_OK);
    assert_int_equal(do_set(tu_fx.client, "c", "cow"), MOMENTO_OK);
    momento_token_scope *s = new_scope();
    assert_int_equal(
        momento_token_scope_add_cache_key_prefix(s, MOMENTO_TOKEN_READ_ONLY, "c", "pet", 3),
        MOMENTO_OK);
    momento_client *c = scoped_client(s);
    assert_int_equal(do_get(c, "c", "pet-cat"), MOMENTO_OK);
    assert_int_equal(do_get(c, "c", "pet-dog"), MOMENTO_OK); /* a miss, but allowed */
    assert_int_equal(do_get(c, "c", "cow"), MOMENTO_ERR_PERMISSION);
    assert_int_equal(do_get(c, "other", "pet-cat"), MOMENTO_ERR_PERMISSION);
    assert_int_equal(do_set(c, "c", "pet-cat"), MOMENTO_ERR_PERMISSION);
    /* A write that reads needs both. */
    assert_int_equal(momento_increment_sync(c, "c", "pet-n", 5, 1, 0, NULL, NULL),
                     MOMENTO_ERR_PERMISSION);
    momento_client_free(c);
}

static void test_write_only(void **state)
{
    (void)state;
    momento_token_scope *s = new_scope();
    assert_int_equal(momento_token_scope_add_cache(s, MOMENTO_TOKEN_WRITE_ONLY, "c"), MOMENTO_OK);
    momento_client *c = scoped_client(s);
    assert_int_equal(do_set(c, "c", "w"), MOMENTO_OK);
    assert_int_equal(momento_delete_sync(c, "c", "w", 1, NULL, NULL), MOMENTO_OK);
    assert_int_equal(do_get(c, "c", "w"), MOMENTO_ERR_PERMISSION);
    assert_int_equal(
        momento_set_if_sync(c, "c", "w", 1, "v", 1, 0, MOMENTO_IF_ABSENT, NULL, 0, NULL, NULL),
        MOMENTO_ERR_PERMISSION);
    momento_client_free(c);
}

/* Several grants: any one of them allows. */
static void test_several_grants(void **state)
{
    (void)state;
    momento_token_scope *s = new_scope();
    assert_int_equal(momento_token_scope_add_cache_key(s, MOMENTO_TOKEN_WRITE_ONLY, "c", "cow", 3),
                     MOMENTO_OK);
    assert_int_equal(
        momento_token_scope_add_cache_key_prefix(s, MOMENTO_TOKEN_READ_WRITE, "other", "pet", 3),
        MOMENTO_OK);
    momento_client *c = scoped_client(s);
    assert_int_equal(do_set(c, "c", "cow"), MOMENTO_OK);
    assert_int_equal(do_get(c, "c", "cow"), MOMENTO_ERR_PERMISSION);
    assert_int_equal(do_set(c, "other", "pet-fish"), MOMENTO_OK);
    assert_int_equal(do_get(c, "other", "pet-fish"), MOMENTO_OK);
    assert_int_equal(do_set(c, "other", "cow"), MOMENTO_ERR_PERMISSION);
    assert_int_equal(do_set(c, "c", "pet-fish"), MOMENTO_ERR_PERMISSION);
    momento_client_free(c);
}

static void test_topics(void **state)
{
    (void)state;
    momento_token_scope *s = new_scope();
    assert_int_equal(momento_token_scope_add_topic(s, MOMENTO_TOKEN_WRITE_ONLY, "c", "news"),
                     MOMENTO_OK);
    assert_int_equal(
        momento_token_scope_add_topic_prefix(s, MOMENTO_TOKEN_READ_WRITE, NULL, "chat-"),
        MOMENTO_OK);
    momento_client *c = scoped_client(s);
    assert_int_equal(momento_topic_publish_text_sync(c, "c", "news", "hi", 2, NULL, NULL),
                     MOMENTO_OK);
    assert_int_equal(momento_topic_publish_text_sync(c, "other", "news", "hi", 2, NULL, NULL),
                     MOMENTO_ERR_PERMISSION);
    assert_int_equal(momento_topic_publish_text_sync(c, "c", "sports", "hi", 2, NULL, NULL),
                     MOMENTO_ERR_PERMISSION);
    assert_int_equal(momento_topic_publish_text_sync(c, "other", "chat-1", "hi", 2, NULL, NULL),
                     MOMENTO_OK);
    /* Topic grants are no cache grants. */
    assert_int_equal(do_get(c, "c", "news"), MOMENTO_ERR_PERMISSION);
    momento_client_free(c);
}

static void test_expiry(void **state)
{
    (void)state;
    momento_token_scope *s = new_scope();
    assert_int_equal(momento_token_scope_add_cache(s, MOMENTO_TOKEN_READ_WRITE, NULL), MOMENTO_OK);
    /* Three seconds natively (at least two: valid_until is a whole
     * second), longer under a slow wrapper: making the client and one set
     * must fit before the expiry on a loaded machine too. */
    uint32_t seconds = 3 * (uint32_t)tu_time_scale();
    char *key = issue(s, seconds);
    momento_client *c = tu_client_with_key(tu_fx.server, key);
    free(key);
    assert_int_equal(do_set(c, "c", "e"), MOMENTO_OK);
    /* valid_until is a whole second: wait past the next one. */
    usleep((seconds * 1000u + 1100u) * 1000u);
    assert_int_equal(do_get(c, "c", "e"), MOMENTO_ERR_AUTHENTICATION);
    assert_int_equal(do_set(c, "c", "e"), MOMENTO_ERR_AUTHENTICATION);
    assert_int_equal(momento_ping_sync(c, NULL, NULL), MOMENTO_OK);
    momento_client_free(c);
}

/* What a subscription's callback saw. */
typedef struct sub_seen {
    pthread_mutex_t lock;
    size_t items, lost, ends;
    int end_error;
    char end_message[128];
    struct timespec end_at; /* CLOCK_REALTIME, when the END came */
} sub_seen;

static void on_sub_event(momento_subscription *sub, const momento_topic_event *e, void *userdata)
{
    (void)sub;
    sub_seen *w = userdata;
    pthread_mutex_lock(&w->lock);
    if (w->ends)
        fail_msg("an event (kind %d) after the END", (int)e->kind);
    if (e->kind == MOMENTO_TOPIC_ITEM)
        w->items++;
    else if (e->kind == MOMENTO_TOPIC_CONNECTION_LOST)
        w->lost++;
    else if (e->kind == MOMENTO_TOPIC_END) {
        clock_gettime(CLOCK_REALTIME, &w->end_at);
        w->ends++;
        w->end_error = e->error;
        snprintf(w->end_message, sizeof(w->end_message), "%s", e->message);
    }
    pthread_mutex_unlock(&w->lock);
}

/* Waits up to `timeout_ms` (not scaled) for *count to reach `n`. */
static size_t wait_count(sub_seen *w, const size_t *count, size_t n, int64_t timeout_ms)
{
    int64_t until = tu_now_ms() + timeout_ms;
    size_t k;
    for (;;) {
        pthread_mutex_lock(&w->lock);
        k = *count;
        pthread_mutex_unlock(&w->lock);
        if (k >= n || tu_now_ms() >= until)
            return k;
        usleep(2000);
    }
}

/* A subscription made with a disposable token ends when the token expires
 * (issue 27 item 10), not before: the server ends its stream
 * UNAUTHENTICATED, which the library does not retry, so the subscription
 * ends exactly once with MOMENTO_ERR_AUTHENTICATION, no CONNECTION_LOST
 * before it. Before the expiry it delivers as usual. How soon after the
 * expiry the end comes is the machine's business: the end's error (not the
 * library's 30 s idle timeout's) shows the server's check ended it. */
static void test_subscription_ends_at_expiry(void **state)
{
    (void)state;
    momento_token_scope *s = new_scope();
    assert_int_equal(momento_token_scope_add_topic(s, MOMENTO_TOKEN_READ_ONLY, "c", "expiring"),
                     MOMENTO_OK);
    /* Four seconds natively, longer under a slow wrapper: making the
     * client, subscribing and one delivery must fit before the expiry. */
    uint32_t seconds = 4 * (uint32_t)tu_time_scale();
    momento_result *r = NULL;
    assert_int_equal(
        momento_generate_disposable_token_sync(tu_fx.client, s, seconds, NULL, NULL, &r),
        MOMENTO_OK);
    momento_token_scope_free(s);
    uint64_t valid_until = momento_result_token_valid_until(r);
    momento_client *c = tu_client_with_key(tu_fx.server, momento_result_token_api_key(r));
    momento_result_free(r);
    sub_seen w;
    memset(&w, 0, sizeof(w));
    pthread_mutex_init(&w.lock, NULL);
    momento_subscription *sub = NULL;
    assert_int_equal(
        momento_topic_subscribe_sync(c, "c", "expiring", NULL, on_sub_event, &w, &sub), MOMENTO_OK);
    assert_int_equal(momento_local_subscriptions(tu_fx.server), 1);
    assert_int_equal(
        momento_topic_publish_text_sync(tu_fx.client, "c", "expiring", "before", 6, NULL, NULL),
        MOMENTO_OK);
    assert_int_equal(wait_count(&w, &w.items, 1, TU_MS(5000)), 1);
    /* The library's idle timeout (30 s) is far off: only the server can
     * end it within this wait. */
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    int64_t left_ms = ((int64_t)valid_until - now.tv_sec) * 1000 - now.tv_nsec / 1000000;
    assert_int_equal(wait_count(&w, &w.ends, 1, left_ms + TU_MS(20000)), 1);
    pthread_mutex_lock(&w.lock);
    assert_int_equal(w.end_error, MOMENTO_ERR_AUTHENTICATION);
    assert_non_null(strstr(w.end_message, "expired"));
    assert_int_equal(w.lost, 0);
    /* Not before the expiry (a lower bound: the server checks the clock). */
    int64_t after_ms = ((int64_t)w.end_at.tv_sec - (int64_t)valid_until) * 1000 +
                       w.end_at.tv_nsec / 1000000;
    pthread_mutex_unlock(&w.lock);
    assert_true(after_ms >= 0);
    assert_int_equal(
        momento_local_rpc_count(tu_fx.server, "TopicSubscribe", 16 /* UNAUTHENTICATED */), 1);
    assert_int_equal(momento_local_subscriptions(tu_fx.server), 0);
    momento_subscription_free(sub);
    /* The client's free waits for every callback: none came after. */
    momento_client_free(c);
    assert_int_equal(w.ends, 1);
    pthread_mutex_destroy(&w.lock);
}

/* The bare token inside a key; the caller frees it. */
static char *bare_token(const char *key)
{
    unsigned char *json;
    size_t json_len;
    assert_int_equal(momento__base64_decode(key, strlen(key), &json, &json_len), 0);
    char *token = NULL;
    assert_int_equal(momento__json_get_string((char *)json, json_len, "api_key", &token), 1);
    free(json);
    return token;
}

static int get_with_token(momento_local *s, const char *token)
{
    momento_client *c = tu_client_with_key(s, token);
    int rc = do_get(c, "c", "a");
    momento_client_free(c);
    return rc;
}

static void test_forged(void **state)
{
    (void)state;
    momento_token_scope *s = new_scope();
    assert_int_equal(momento_token_scope_add_cache_key(s, MOMENTO_TOKEN_READ_ONLY, "c", "a", 1),
                     MOMENTO_OK);
    char *key = issue(s, 60);
    char *token = bare_token(key);
    free(key);
    assert_int_equal(get_with_token(tu_fx.server, token), MOMENTO_OK);
    size_t len = strlen(token);
    size_t dot2 = len; /* where the signature's dot is */
    while (dot2 > 0 && token[dot2 - 1] != '.')
        dot2--;
    assert_true(dot2 > 6);
    dot2--;
    /* A changed claim (the scope or expiry), a changed signature, a cut
     * token: each refused. */
    char *t = strdup(token);
    t[6] = t[6] == 'A' ? 'B' : 'A';
    assert_int_equal(get_with_token(tu_fx.server, t), MOMENTO_ERR_AUTHENTICATION);
    strcpy(t, token);
    t[len - 2] = t[len - 2] == 'A' ? 'B' : 'A';
    assert_int_equal(get_with_token(tu_fx.server, t), MOMENTO_ERR_AUTHENTICATION);
    strcpy(t, token);
    t[len - 1] = '\0';
    assert_int_equal(get_with_token(tu_fx.server, t), MOMENTO_ERR_AUTHENTICATION);
    strcpy(t, token);
    t[dot2] = '\0';
    assert_int_equal(get_with_token(tu_fx.server, t), MOMENTO_ERR_AUTHENTICATION);
    free(t);
    /* Another server signs with another key. */
    momento_local *second = tu_server_with_cache("c");
    assert_int_equal(get_with_token(second, token), MOMENTO_ERR_AUTHENTICATION);
    momento_local_stop(second);
    free(token);
}

/* A server with its own token: only that token makes disposable tokens,
 * and the disposable ones are accepted beside it. */
static void test_server_with_token(void **state)
{
    (void)state;
    momento_local *srv = tu_server_with_token("secret-token");

    momento_client *wrong = tu_client_with_key(srv, "not-the-token");
    momento_token_scope *s = new_scope();
    assert_int_equal(momento_token_scope_add_cache(s, MOMENTO_TOKEN_READ_WRITE, "c"), MOMENTO_OK);
    assert_int_equal(momento_generate_disposable_token_sync(wrong, s, 60, NULL, NULL, NULL),
                     MOMENTO_ERR_AUTHENTICATION);
    momento_token_scope_free(s);
    momento_client_free(wrong);

    momento_client *owner = tu_client_with_key(srv, "secret-token");
    s = new_scope();
    assert_int_equal(momento_token_scope_add_cache(s, MOMENTO_TOKEN_READ_WRITE, "c"), MOMENTO_OK);
    char *key = issue_from(owner, s, 60);
    momento_client_free(owner);
    momento_client *c = tu_client_with_key(srv, key);
    free(key);
    assert_int_equal(do_set(c, "c", "a"), MOMENTO_OK);
    assert_int_equal(momento_list_caches_sync(c, NULL, NULL), MOMENTO_ERR_PERMISSION);
    momento_client_free(c);
    momento_local_stop(srv);
}

/* `rc` is a refusal whose reason contains `why`. */
static void assert_refused_why(int rc, const char *why)
{
    assert_int_equal(rc, MOMENTO_ERR_INVALID_ARGUMENT);
    if (!strstr(momento_refusal_reason(), why))
        fail_msg("refusal reason \"%s\" does not say \"%s\"", momento_refusal_reason(), why);
}

static void test_bad_input(void **state)
{
    (void)state;
    momento_token_scope *s = NULL;
    assert_int_equal(momento_token_scope_new(NULL), MOMENTO_ERR_INVALID_ARGUMENT);
    s = new_scope();
    /* An empty scope, no expiry, a long token id. */
    assert_int_equal(
        momento_generate_disposable_token(tu_fx.client, NULL, 60, NULL, NULL, tu_count_cb, NULL),
        MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_generate_disposable_token_sync(tu_fx.client, s, 60, NULL, NULL, NULL),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_token_scope_add_cache(s, MOMENTO_TOKEN_READ_ONLY, "c"), MOMENTO_OK);
    assert_int_equal(momento_generate_disposable_token_sync(tu_fx.client, s, 0, NULL, NULL, NULL),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    char long_id[MOMENTO_DISPOSABLE_TOKEN_ID_MAX + 2];
    memset(long_id, 't', sizeof(long_id) - 1);
    long_id[sizeof(long_id) - 1] = '\0';
    assert_int_equal(
        momento_generate_disposable_token_sync(tu_fx.client, s, 60, long_id, NULL, NULL),
        MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_generate_disposable_token(NULL, s, 60, NULL, NULL, tu_count_cb, NULL),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_generate_disposable_token(tu_fx.client, s, 60, NULL, NULL, NULL, NULL),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    /* Each refusal says why (momento_refusal_reason()). */
    momento_token_scope *empty = new_scope();
    assert_refused_why(
        momento_generate_disposable_token(tu_fx.client, NULL, 60, NULL, NULL, tu_count_cb, NULL),
        "the scope is NULL");
    assert_refused_why(
        momento_generate_disposable_token(tu_fx.client, empty, 60, NULL, NULL, tu_count_cb, NULL),
        "grants nothing");
    assert_refused_why(
        momento_generate_disposable_token(tu_fx.client, s, 0, NULL, NULL, tu_count_cb, NULL),
        "no expiry");
    assert_refused_why(
        momento_generate_disposable_token(tu_fx.client, s, 60, long_id, NULL, tu_count_cb, NULL),
        "the token id is 65 bytes, over 64");
    assert_refused_why(momento_token_scope_add_cache(NULL, MOMENTO_TOKEN_READ_ONLY, "c"),
                       "the scope is NULL");
    assert_refused_why(momento_token_scope_add_cache(empty, (momento_token_role)7, "c"),
                       "role 7 is not a momento_token_role");
    assert_refused_why(
        momento_token_scope_add_topic_prefix(empty, MOMENTO_TOKEN_READ_ONLY, "c", NULL),
        "the topic prefix is NULL");
    assert_refused_why(momento_token_scope_new(NULL), "ret is NULL");
    momento_token_scope_free(empty);
    /* The longest allowed id is fine, and so is the longest expiry the
     * argument can say (no cap since February 2026). */
    long_id[MOMENTO_DISPOSABLE_TOKEN_ID_MAX] = '\0';
    momento_result *r = NULL;
    assert_int_equal(
        momento_generate_disposable_token_sync(tu_fx.client, s, UINT32_MAX, long_id, NULL, &r),
        MOMENTO_OK);
    momento_result_free(r);
    /* Grants the builder refuses, leaving the scope as it was. */
    assert_int_equal(momento_token_scope_add_cache(NULL, MOMENTO_TOKEN_READ_ONLY, "c"),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_token_scope_add_cache(s, (momento_token_role)0, "c"),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_token_scope_add_cache(s, (momento_token_role)4, "c"),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_token_scope_add_cache(s, MOMENTO_TOKEN_READ_ONLY, ""),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_token_scope_add_cache_key(s, MOMENTO_TOKEN_READ_ONLY, "c", NULL, 0),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_token_scope_add_cache_key(s, MOMENTO_TOKEN_READ_ONLY, "c", "k", 0),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(
        momento_token_scope_add_cache_key_prefix(s, MOMENTO_TOKEN_READ_ONLY, "c", "", 0),
        MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_token_scope_add_topic(s, MOMENTO_TOKEN_READ_ONLY, "c", ""),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_token_scope_add_topic_prefix(s, MOMENTO_TOKEN_READ_ONLY, "c", NULL),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    momento_token_scope_free(s);
    momento_token_scope_free(NULL);
}

/* Every allocation of the builder, the request and its decoder failing in
 * turn: each ends in MOMENTO_ERR_NO_MEMORY, nothing leaks (valgrind), and a
 * refused grant leaves the scope as it was. */
static void test_out_of_memory(void **state)
{
    (void)state;
    bool done = false; /* an n past every allocation: nothing failed */
    for (int n = 0; !done && n < 200; n++) {
        momento_token_scope *s = NULL;
        atomic_store(&momento__alloc_countdown, n);
        int rc = momento_token_scope_new(&s);
        if (rc == MOMENTO_OK)
            rc = momento_token_scope_add_cache_key(s, MOMENTO_TOKEN_READ_ONLY, "c", "k", 1);
        if (rc == MOMENTO_OK)
            rc = momento_token_scope_add_topic(s, MOMENTO_TOKEN_READ_WRITE, NULL, "t");
        if (rc == MOMENTO_OK)
            rc = momento_generate_disposable_token_sync(tu_fx.client, s, 60, "id", NULL, NULL);
        bool failed_one = atomic_load(&momento__alloc_countdown) < 0;
        atomic_store(&momento__alloc_countdown, -1);
        if (failed_one) {
            assert_int_equal(rc, MOMENTO_ERR_NO_MEMORY);
        } else {
            assert_int_equal(rc, MOMENTO_OK);
            done = true;
        }
        momento_token_scope_free(s);
    }
    assert_true(done);
    /* A grant refused for want of memory leaves the scope usable. */
    momento_token_scope *s = new_scope();
    atomic_store(&momento__alloc_countdown, 0);
    assert_int_equal(momento_token_scope_add_cache(s, MOMENTO_TOKEN_READ_ONLY, "c"),
                     MOMENTO_ERR_NO_MEMORY);
    atomic_store(&momento__alloc_countdown, -1);
    assert_int_equal(momento_generate_disposable_token_sync(tu_fx.client, s, 60, NULL, NULL, NULL),
                     MOMENTO_ERR_INVALID_ARGUMENT); /* still empty */
    assert_int_equal(momento_token_scope_add_cache(s, MOMENTO_TOKEN_READ_ONLY, "c"), MOMENTO_OK);
    assert_int_equal(momento_generate_disposable_token_sync(tu_fx.client, s, 60, NULL, NULL, NULL),
                     MOMENTO_OK);
    momento_token_scope_free(s);
    atomic_store(&momento__alloc_countdown, 0);
    momento_credentials *creds = NULL;
    assert_int_equal(momento_credentials_local_with_key(&creds, "127.0.0.1:9", "t"),
                     MOMENTO_ERR_NO_MEMORY);
    atomic_store(&momento__alloc_countdown, -1);
    assert_null(creds);
}

/* Packs a GenerateDisposableToken request with one cache-wide grant on
 * "c" and sends it raw: the server's own checks, as the official SDKs
 * (which check less) meet them. */
static int raw_generate(uint32_t seconds, bool with_grant, const char *token_id)
{
    PermissionMessages__PermissionsType__CacheSelector sel =
        PERMISSION_MESSAGES__PERMISSIONS_TYPE__CACHE_SELECTOR__INIT;
    sel.kind_case = PERMISSION_MESSAGES__PERMISSIONS_TYPE__CACHE_SELECTOR__KIND_CACHE_NAME;
    sel.cache_name = "c";
    PermissionMessages__PermissionsType__CachePermissions cp =
        PERMISSION_MESSAGES__PERMISSIONS_TYPE__CACHE_PERMISSIONS__INIT;
    cp.role = PERMISSION_MESSAGES__CACHE_ROLE__CacheReadWrite;
    cp.cache_case = PERMISSION_MESSAGES__PERMISSIONS_TYPE__CACHE_PERMISSIONS__CACHE_CACHE_SELECTOR;
    cp.cache_selector = &sel;
    PermissionMessages__PermissionsType t = PERMISSION_MESSAGES__PERMISSIONS_TYPE__INIT;
    t.kind_case = PERMISSION_MESSAGES__PERMISSIONS_TYPE__KIND_CACHE_PERMISSIONS;
    t.cache_permissions = &cp;
    PermissionMessages__PermissionsType *list[] = {&t};
    PermissionMessages__ExplicitPermissions ex = PERMISSION_MESSAGES__EXPLICIT_PERMISSIONS__INIT;
    ex.n_permissions = with_grant ? 1 : 0;
    ex.permissions = list;
    PermissionMessages__Permissions perms = PERMISSION_MESSAGES__PERMISSIONS__INIT;
    perms.kind_case = PERMISSION_MESSAGES__PERMISSIONS__KIND_EXPLICIT;
    perms.explicit_ = &ex;
    Token__GenerateDisposableTokenRequest__Expires exp =
        TOKEN____GENERATE_DISPOSABLE_TOKEN_REQUEST__EXPIRES__INIT;
    exp.valid_for_seconds = seconds;
    Token__GenerateDisposableTokenRequest req = TOKEN____GENERATE_DISPOSABLE_TOKEN_REQUEST__INIT;
    req.expires = &exp;
    req.auth_token = "";
    req.permissions = &perms;
    req.token_id = (char *)token_id;
    /* No authorization header: the official SDKs' token client sends
     * none, the key is in the body. */
    int st;
    Token__GenerateDisposableTokenResponse *resp =
        srv_call(momento_local_endpoint(tu_fx.server), "/token.Token/GenerateDisposableToken", NULL,
                 0, &req.base, &token____generate_disposable_token_response__descriptor, &st);
    if (resp) {
        assert_true(strlen(resp->api_key) > 0);
        token____generate_disposable_token_response__free_unpacked(resp, NULL);
    }
    return st;
}

static void test_server_checks(void **state)
{
    (void)state;
    enum { OK = 0, INVALID_ARGUMENT = 3 };
    assert_int_equal(raw_generate(60, true, ""), OK);
    assert_int_equal(raw_generate(0, true, ""), INVALID_ARGUMENT);
    /* No upper bound since Momento dropped its one-hour cap. */
    assert_int_equal(raw_generate(3601, true, ""), OK);
    assert_int_equal(raw_generate(UINT32_MAX, true, ""), OK);
    assert_int_equal(raw_generate(60, false, ""), INVALID_ARGUMENT);
    assert_int_equal(
        raw_generate(60, true,
                     "tttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttt"),
        INVALID_ARGUMENT);
}

/* Momento's token service is token.<base>, beside control.<base>; a local
 * server answers it on its one address. */
static void test_token_endpoint(void **state)
{
    (void)state;
    momento_credentials *creds = NULL;
    assert_int_equal(
        momento_credentials_from_api_key(&creds, "a.eyJ0IjoiZyJ9.c", "cell-1.example.com"),
        MOMENTO_OK);
    assert_string_equal(creds->token_endpoint, "token.cell-1.example.com:443");
    momento_credentials_free(creds);
    assert_int_equal(momento_credentials_local(&creds, "127.0.0.1:9"), MOMENTO_OK);
    assert_string_equal(creds->token_endpoint, "127.0.0.1:9");
    momento_credentials_free(creds);
    assert_int_equal(
        momento_credentials_with_endpoints(&creds, "", "cache.x.io:443", "control.x.io:443"),
        MOMENTO_OK);
    assert_string_equal(creds->token_endpoint, "token.x.io:443");
    momento_credentials_free(creds);
    assert_int_equal(momento_credentials_local_with_key(&creds, "127.0.0.1:9", "bad token"),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_true(*momento_refusal_reason()); /* not "" */
    assert_null(strstr(momento_refusal_reason(), "bad token"));
    assert_int_equal(momento_credentials_local_with_key(&creds, "no-port", "t"),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_credentials_local_with_key(NULL, "127.0.0.1:9", "t"),
                     MOMENTO_ERR_INVALID_ARGUMENT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_result_and_key),
        cmocka_unit_test(test_cache_scope),
        cmocka_unit_test(test_key_scope),
        cmocka_unit_test(test_prefix_read_only),
        cmocka_unit_test(test_write_only),
        cmocka_unit_test(test_several_grants),
        cmocka_unit_test(test_topics),
        cmocka_unit_test(test_expiry),
        cmocka_unit_test(test_subscription_ends_at_expiry),
        cmocka_unit_test(test_forged),
        cmocka_unit_test(test_server_with_token),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_out_of_memory),
        cmocka_unit_test(test_server_checks),
        cmocka_unit_test(test_token_endpoint),
    };
    return cmocka_run_group_tests(tests, setup, tu_fixture_teardown);
}
