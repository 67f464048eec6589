/* Webhooks: the library against an embedded momento-local (every RPC, its
 * errors, bad input refused by the library and by the server), and a small
 * HTTP receiver on loopback that verifies the signature of every delivery
 * (momento_webhook_signature_valid()) and reads its JSON body: a rotated
 * secret signs what comes next, a deleted webhook hears nothing more, a
 * receiver that answers 500, never answers or is not there never holds a
 * publish up, and a full queue drops and counts. */
#include "momento/topics.h"
#include "momento/webhooks.h"
#include "testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* ---- the receiver -------------------------------------------------------- */

typedef enum { ANSWER_200, ANSWER_500, ANSWER_NEVER } answer_mode;

#define MAX_DELIVERIES 64

typedef struct delivery {
    char *body;
    size_t len;
    char signature[80];
    char user_agent[128];
    char content_type[64];
    char path[128];
    int64_t received_ms; /* wall clock */
} delivery;

typedef struct receiver {
    int fd, port, wake[2];
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    answer_mode mode;
    delivery got[MAX_DELIVERIES];
    size_t n;
    size_t malformed; /* requests that were not a POST with a body */
} receiver;

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Reads from `fd` until `stop` is written or `want` bytes are in; -1 when
 * the peer closed or the receiver stops first. */
static ssize_t read_some(receiver *rv, int fd, char *buf, size_t cap)
{
    struct pollfd p[2] = {{.fd = fd, .events = POLLIN}, {.fd = rv->wake[0], .events = POLLIN}};
    if (poll(p, 2, -1) <= 0 || p[1].revents)
        return -1;
    ssize_t n = recv(fd, buf, cap, 0);
    return n > 0 ? n : -1;
}

static const char *header(const char *head, const char *name, char *out, size_t cap)
{
    out[0] = '\0';
    size_t nl = strlen(name);
    for (const char *p = strstr(head, "\r\n"); p && p[2]; p = strstr(p + 2, "\r\n")) {
        const char *line = p + 2;
        if (strncasecmp(line, name, nl) == 0 && line[nl] == ':') {
            const char *v = line + nl + 1;
            while (*v == ' ')
                v++;
            size_t len = strcspn(v, "\r\n");
            if (len >= cap)
                len = cap - 1;
            memcpy(out, v, len);
            out[len] = '\0';
            return out;
        }
    }
    return NULL;
}

static void serve_one(receiver *rv, int fd)
{
    static char buf[1 << 16]; /* this thread's alone; off its stack */
    size_t got = 0;
    char *end = NULL;
    buf[0] = '\0';
    while (!(end = strstr(buf, "\r\n\r\n"))) {
        if (got == sizeof(buf) - 1)
            return;
        ssize_t n = read_some(rv, fd, buf + got, sizeof(buf) - 1 - got);
        if (n < 0)
            return;
        got += (size_t)n;
        buf[got] = '\0';
    }
    *end = '\0';
    char cl[32];
    size_t body_at = (size_t)(end - buf) + 4;
    long len = header(buf, "Content-Length", cl, sizeof(cl)) ? atol(cl) : -1;
    if (strncmp(buf, "POST ", 5) != 0 || len < 0 || body_at + (size_t)len >= sizeof(buf)) {
        pthread_mutex_lock(&rv->mu);
        rv->malformed++;
        pthread_cond_broadcast(&rv->cv);
        pthread_mutex_unlock(&rv->mu);
        return;
    }
    while (got < body_at + (size_t)len) {
        ssize_t n = read_some(rv, fd, buf + got, sizeof(buf) - 1 - got);
        if (n < 0)
            return;
        got += (size_t)n;
    }
    delivery d = {0};
    d.len = (size_t)len;
    d.body = malloc(d.len + 1);
    memcpy(d.body, buf + body_at, d.len);
    d.body[d.len] = '\0';
    header(buf, "momento-signature", d.signature, sizeof(d.signature));
    header(buf, "User-Agent", d.user_agent, sizeof(d.user_agent));
    header(buf, "Content-Type", d.content_type, sizeof(d.content_type));
    size_t pl = strcspn(buf + 5, " ");
    snprintf(d.path, sizeof(d.path), "%.*s", (int)pl, buf + 5);
    d.received_ms = wall_ms();
    pthread_mutex_lock(&rv->mu);
    answer_mode mode = rv->mode;
    if (rv->n < MAX_DELIVERIES)
        rv->got[rv->n++] = d;
    else
        free(d.body);
    pthread_cond_broadcast(&rv->cv);
    pthread_mutex_unlock(&rv->mu);
    if (mode == ANSWER_NEVER) {
        /* Held until the sender gives up and closes, or the receiver stops. */
        while (read_some(rv, fd, buf, sizeof(buf)) > 0)
            ;
        return;
    }
    const char *reply = mode == ANSWER_200
                            ? "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                            : "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n";
    ssize_t n = send(fd, reply, strlen(reply), MSG_NOSIGNAL);
    (void)n;
}

static void *receiver_thread(void *arg)
{
    receiver *rv = arg;
    for (;;) {
        struct pollfd p[2] = {{.fd = rv->fd, .events = POLLIN}, {.fd = rv->wake[0], .events = POLLIN}};
        if (poll(p, 2, -1) <= 0 || p[1].revents)
            break;
        int c = accept(rv->fd, NULL, NULL);
        if (c < 0)
            continue;
        serve_one(rv, c);
        close(c);
    }
    return NULL;
}

static receiver *receiver_start(answer_mode mode)
{
    receiver *rv = calloc(1, sizeof(*rv));
    rv->mode = mode;
    pthread_mutex_init(&rv->mu, NULL);
    pthread_cond_init(&rv->cv, NULL);
    assert_int_equal(pipe(rv->wake), 0);
    rv->fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(rv->fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(rv->fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(rv->fd, 16), 0);
    socklen_t al = sizeof(a);
    getsockname(rv->fd, (struct sockaddr *)&a, &al);
    rv->port = ntohs(a.sin_port);
    assert_int_equal(pthread_create(&rv->thread, NULL, receiver_thread, rv), 0);
    return rv;
}

static void receiver_stop(receiver *rv)
{
    ssize_t n = write(rv->wake[1], "x", 1);
    (void)n;
    pthread_join(rv->thread, NULL);
    close(rv->fd);
    close(rv->wake[0]);
    close(rv->wake[1]);
    for (size_t i = 0; i < rv->n; i++)
        free(rv->got[i].body);
    pthread_cond_destroy(&rv->cv);
    pthread_mutex_destroy(&rv->mu);
    free(rv);
}

/* Waits until `n` deliveries arrived (10 s, scaled); returns how many did. */
static size_t receiver_wait(receiver *rv, size_t n)
{
    int64_t until = tu_now_ms() + TU_MS(10000);
    pthread_mutex_lock(&rv->mu);
    while (rv->n < n && tu_now_ms() < until) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 10 * 1000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&rv->cv, &rv->mu, &ts);
    }
    size_t got = rv->n;
    pthread_mutex_unlock(&rv->mu);
    return got;
}

static char *url_of(receiver *rv, const char *path)
{
    static char url[128];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", rv->port, path);
    return url;
}

/* ---- fixtures ------------------------------------------------------------ */

static momento_local *server_with(uint32_t timeout_ms, uint32_t queue_items)
{
    momento_local_options *o;
    momento_local_options_new(&o);
    momento_local_options_add_cache(o, "c");
    assert_int_equal(momento_local_options_set_webhook_timeout_ms(o, timeout_ms), MOMENTO_OK);
    assert_int_equal(momento_local_options_set_webhook_queue_items(o, queue_items), MOMENTO_OK);
    momento_local *s = tu_server(o);
    momento_local_options_free(o);
    return s;
}

/* Puts a webhook, returning its secret (malloc'd). */
static char *put(momento_client *c, const char *cache, const char *name, const char *topic,
                 const char *url)
{
    momento_result *r = NULL;
    assert_int_equal(momento_webhook_put_sync(c, cache, name, topic, url, NULL, &r), MOMENTO_OK);
    assert_int_equal(momento_result_outcome(r), MOMENTO_OUTCOME_SUCCESS);
    char *secret = strdup(momento_result_webhook_secret(r));
    momento_result_free(r);
    assert_int_equal(strlen(secret), 64);
    return secret;
}

static void publish_text(momento_client *c, const char *topic, const char *text)
{
    momento_result *r = NULL;
    assert_int_equal(momento_topic_publish_text_sync(c, "c", topic, text, strlen(text), NULL, &r),
                     MOMENTO_OK);
    momento_result_free(r);
}

static momento_local_webhook_stats stats(momento_local *s)
{
    momento_local_webhook_stats w;
    momento_local_webhook_stats_get(s, &w);
    return w;
}

/* ---- the signature helper ----------------------------------------------- */

/* The Node.js SDK's own test vector for WebhookUtils (its unit test of
 * validateWebhookRequest): this secret and body give this signature. */
static void test_signature_vector(void **state)
{
    (void)state;
    const char *secret = "1234567890";
    const char *body = "{\"text\":\"some text\", \"another_field\": \"another field\" }";
    const char *sig = "b43f72787eb66410ff110295b036ef828e5686af21b414ce092f02c05deea3da";
    assert_int_equal(momento_webhook_signature_valid(body, strlen(body), sig, secret), 1);
    char out[MOMENTO_WEBHOOK_SIGNATURE_HEX_LEN + 1];
    assert_int_equal(momento_webhook_sign(body, strlen(body), secret, out), MOMENTO_OK);
    assert_string_equal(out, sig);
    /* Either case of hex digits; anything else, another secret or one
     * byte of the body changed is no match. */
    char upper[65];
    for (size_t i = 0; i < 65; i++)
        upper[i] = (char)(sig[i] >= 'a' && sig[i] <= 'f' ? sig[i] - 32 : sig[i]);
    assert_int_equal(momento_webhook_signature_valid(body, strlen(body), upper, secret), 1);
    assert_int_equal(momento_webhook_signature_valid(body, strlen(body) - 1, sig, secret), 0);
    assert_int_equal(momento_webhook_signature_valid(body, strlen(body), sig, "1234567891"), 0);
    assert_int_equal(momento_webhook_signature_valid(body, strlen(body), "b43f", secret), 0);
    assert_int_equal(momento_webhook_signature_valid(body, strlen(body), "this signature is incorrect",
                                                     secret),
                     0);
    char bad[65];
    memcpy(bad, sig, 65);
    bad[10] = 'g';
    assert_int_equal(momento_webhook_signature_valid(body, strlen(body), bad, secret), 0);
    assert_int_equal(momento_webhook_signature_valid(NULL, 3, sig, secret),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_webhook_signature_valid(body, 3, NULL, secret),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_webhook_signature_valid(body, 3, sig, NULL),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_webhook_sign(body, 3, secret, NULL), MOMENTO_ERR_INVALID_ARGUMENT);
    /* An empty body has a signature too. */
    assert_int_equal(momento_webhook_sign(NULL, 0, secret, out), MOMENTO_OK);
    assert_int_equal(momento_webhook_signature_valid(NULL, 0, out, secret), 1);
}

/* ---- the RPCs ------------------------------------------------------------ */

static void test_rpcs(void **state)
{
    (void)state;
    momento_local *s = server_with(1000, 16);
    momento_client *c = tu_client(s, NULL);
    momento_result *r = NULL;

    char *secret = put(c, "c", "w1", "t1", "http://127.0.0.1:9/a");
    char *other = put(c, "c", "w0", "t0", "http://localhost:9/");
    assert_string_not_equal(secret, other);

    assert_int_equal(momento_webhook_list_sync(c, "c", NULL, &r), MOMENTO_OK);
    assert_int_equal(momento_result_webhook_count(r), 2);
    const momento_webhook *w = momento_result_webhook(r, 0); /* by name */
    assert_string_equal(w->cache, "c");
    assert_string_equal(w->name, "w0");
    assert_string_equal(w->topic, "t0");
    assert_string_equal(w->url, "http://localhost:9/");
    w = momento_result_webhook(r, 1);
    assert_string_equal(w->name, "w1");
    assert_string_equal(w->topic, "t1");
    assert_string_equal(w->url, "http://127.0.0.1:9/a");
    assert_null(momento_result_webhook(r, 2));
    assert_string_equal(momento_result_webhook_secret(r), ""); /* a listing holds none */
    /* A copy keeps every string after the original is gone. */
    momento_result *copy = NULL;
    assert_int_equal(momento_result_dup(r, &copy), MOMENTO_OK);
    momento_result_free(r);
    assert_int_equal(momento_result_webhook_count(copy), 2);
    assert_string_equal(momento_result_webhook(copy, 1)->url, "http://127.0.0.1:9/a");
    assert_string_equal(momento_result_webhook(copy, 0)->topic, "t0");
    momento_result_free(copy);

    assert_int_equal(momento_webhook_get_secret_sync(c, "c", "w1", NULL, &r), MOMENTO_OK);
    assert_string_equal(momento_result_webhook_secret(r), secret);
    assert_int_equal(momento_result_webhook_count(r), 1);
    assert_string_equal(momento_result_webhook(r, 0)->cache, "c");
    assert_string_equal(momento_result_webhook(r, 0)->name, "w1");
    assert_int_equal(momento_result_dup(r, &copy), MOMENTO_OK);
    momento_result_free(r);
    assert_string_equal(momento_result_webhook_secret(copy), secret);
    momento_result_free(copy);

    /* Put again: a new topic and URL, the same secret. */
    char *again = put(c, "c", "w1", "t2", "http://127.0.0.1:10/b");
    assert_string_equal(again, secret);
    free(again);
    assert_int_equal(momento_webhook_list_sync(c, "c", NULL, &r), MOMENTO_OK);
    assert_int_equal(momento_result_webhook_count(r), 2);
    assert_string_equal(momento_result_webhook(r, 1)->topic, "t2");
    assert_string_equal(momento_result_webhook(r, 1)->url, "http://127.0.0.1:10/b");
    momento_result_free(r);

    /* Rotate: a new secret, which get_secret answers from then on. */
    assert_int_equal(momento_webhook_rotate_secret_sync(c, "c", "w1", NULL, &r), MOMENTO_OK);
    char *rotated = strdup(momento_result_webhook_secret(r));
    momento_result_free(r);
    assert_int_equal(strlen(rotated), 64);
    assert_string_not_equal(rotated, secret);
    assert_int_equal(momento_webhook_get_secret_sync(c, "c", "w1", NULL, &r), MOMENTO_OK);
    assert_string_equal(momento_result_webhook_secret(r), rotated);
    momento_result_free(r);

    /* Delete; again is no error; what is gone is NOT_FOUND. */
    assert_int_equal(momento_webhook_delete_sync(c, "c", "w1", NULL, &r), MOMENTO_OK);
    assert_int_equal(momento_result_outcome(r), MOMENTO_OUTCOME_SUCCESS);
    momento_result_free(r);
    assert_int_equal(momento_webhook_delete_sync(c, "c", "w1", NULL, &r), MOMENTO_OK);
    momento_result_free(r);
    assert_int_equal(momento_webhook_get_secret_sync(c, "c", "w1", NULL, &r),
                     MOMENTO_ERR_CACHE_NOT_FOUND);
    assert_int_equal(momento_result_grpc_status(r), 5);
    assert_non_null(strstr(momento_result_message(r), "webhook not found"));
    assert_string_equal(momento_result_webhook_secret(r), "");
    momento_result_free(r);
    assert_int_equal(momento_webhook_rotate_secret_sync(c, "c", "w1", NULL, &r),
                     MOMENTO_ERR_CACHE_NOT_FOUND);
    momento_result_free(r);
    assert_int_equal(momento_webhook_list_sync(c, "c", NULL, &r), MOMENTO_OK);
    assert_int_equal(momento_result_webhook_count(r), 1);
    momento_result_free(r);

    /* A cache that does not exist, for each. */
    assert_int_equal(momento_webhook_put_sync(c, "nope", "w", "t", "http://127.0.0.1:9/", NULL, &r),
                     MOMENTO_ERR_CACHE_NOT_FOUND);
    momento_result_free(r);
    assert_int_equal(momento_webhook_list_sync(c, "nope", NULL, &r), MOMENTO_ERR_CACHE_NOT_FOUND);
    momento_result_free(r);
    assert_int_equal(momento_webhook_delete_sync(c, "nope", "w", NULL, &r),
                     MOMENTO_ERR_CACHE_NOT_FOUND);
    momento_result_free(r);
    assert_int_equal(momento_webhook_get_secret_sync(c, "nope", "w", NULL, &r),
                     MOMENTO_ERR_CACHE_NOT_FOUND);
    momento_result_free(r);

    /* A deleted cache takes its webhooks: made again, it has none. */
    tu_create_cache(c, "d");
    free(put(c, "d", "w", "t", "http://127.0.0.1:9/"));
    assert_int_equal(momento_delete_cache_sync(c, "d", NULL, &r), MOMENTO_OK);
    momento_result_free(r);
    tu_create_cache(c, "d");
    assert_int_equal(momento_webhook_list_sync(c, "d", NULL, &r), MOMENTO_OK);
    assert_int_equal(momento_result_webhook_count(r), 0);
    momento_result_free(r);

    /* Async: exactly one callback each. */
    tu_counter k;
    tu_counter_init(&k);
    assert_int_equal(momento_webhook_list(c, "c", NULL, tu_count_cb, &k), MOMENTO_OK);
    assert_int_equal(momento_webhook_put(c, "c", "w2", "t", "http://127.0.0.1:9/", NULL,
                                         tu_count_cb, &k),
                     MOMENTO_OK);
    assert_int_equal(momento_webhook_get_secret(c, "c", "zz", NULL, tu_count_cb, &k), MOMENTO_OK);
    assert_int_equal(tu_counter_wait(&k, 3, (int)TU_MS(5000)), 3);
    momento_client_free(c); /* every callback has run; none comes after */
    assert_int_equal(k.total, 3);
    assert_int_equal(k.ok, 2);
    assert_int_equal(tu_counter_errors(&k, MOMENTO_ERR_CACHE_NOT_FOUND), 1);
    tu_counter_destroy(&k);

    free(secret);
    free(other);
    free(rotated);
    momento_local_stop(s);
}

static void test_bad_input(void **state)
{
    (void)state;
    momento_local *s = server_with(1000, 16);
    momento_client *c = tu_client(s, NULL);
    momento_result *r = NULL;
    const char *u = "http://127.0.0.1:9/";

    /* Refused by the library, before anything is sent. */
#define REFUSED(call)                                                                              \
    do {                                                                                           \
        assert_int_equal((call), MOMENTO_ERR_INVALID_ARGUMENT);                                    \
        tu_assert_refusal(&r, MOMENTO_ERR_INVALID_ARGUMENT);                                       \
    } while (0)
    REFUSED(momento_webhook_put_sync(c, "c", "", "t", u, NULL, &r));
    REFUSED(momento_webhook_put_sync(c, "c", NULL, "t", u, NULL, &r));
    REFUSED(momento_webhook_put_sync(c, "", "w", "t", u, NULL, &r));
    REFUSED(momento_webhook_put_sync(c, "c", "w", "", u, NULL, &r));
    REFUSED(momento_webhook_put_sync(c, "c", "w", "  ", u, NULL, &r));
    REFUSED(momento_webhook_put_sync(c, "c", "w", "t", "", NULL, &r));
    REFUSED(momento_webhook_put_sync(c, "c", "w", "t", NULL, NULL, &r));
    REFUSED(momento_webhook_put_sync(c, "c", "w\xff", "t", u, NULL, &r));
    REFUSED(momento_webhook_put_sync(c, "c", "w", "t", "http://\xc3(", NULL, &r));
    REFUSED(momento_webhook_delete_sync(c, "c", "", NULL, &r));
    REFUSED(momento_webhook_get_secret_sync(c, "c", "", NULL, &r));
    REFUSED(momento_webhook_rotate_secret_sync(c, "c", NULL, NULL, &r));
    REFUSED(momento_webhook_list_sync(c, "", NULL, &r));
    REFUSED(momento_webhook_list_sync(c, NULL, NULL, &r));
#undef REFUSED
    assert_int_equal(momento_webhook_list(c, "c", NULL, NULL, NULL), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_webhook_list(NULL, "c", NULL, tu_count_cb, NULL),
                     MOMENTO_ERR_INVALID_ARGUMENT);

    /* Refused by momento-local, INVALID_ARGUMENT with the reason. */
    char name[130], topic[257];
    memset(name, 'n', 129);
    name[129] = '\0';
    memset(topic, 't', 256);
    topic[256] = '\0';
    static const struct {
        const char *name, *topic, *url, *why;
    } bad[] = {
        {"w", "t", "https://127.0.0.1:9/", "http:// URLs only"},
        {"w", "t", "ftp://127.0.0.1/", "must be an http:// URL"},
        {"w", "t", "127.0.0.1:9/", "must be an http:// URL"},
        {"w", "t", "http:///path", "no host"},
        {"w", "t", "http://h:0/", "port"},
        {"w", "t", "http://h:65536/", "port"},
        {"w", "t", "http://h:8x/", "port"},
        {"w", "t", "http://u@h/", "user name"},
        {"w", "t", "http://[::1/", "IPv6"},
        {"w", "t", "http://h/a b", "spaces"},
        {NULL, "t", "http://h/", "at most 128 bytes"},
        {"w", NULL, "http://h/", "at most 255 bytes"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(momento_webhook_put_sync(c, "c", bad[i].name ? bad[i].name : name,
                                                  bad[i].topic ? bad[i].topic : topic, bad[i].url,
                                                  NULL, &r),
                         MOMENTO_ERR_INVALID_ARGUMENT);
        assert_int_equal(momento_result_grpc_status(r), 3);
        if (!strstr(momento_result_message(r), bad[i].why))
            fail_msg("%s: %s", bad[i].url, momento_result_message(r));
        momento_result_free(r);
    }
    /* Nothing was made. */
    assert_int_equal(momento_webhook_list_sync(c, "c", NULL, &r), MOMENTO_OK);
    assert_int_equal(momento_result_webhook_count(r), 0);
    momento_result_free(r);
    /* The URLs it does take. */
    free(put(c, "c", "v4", "t", "http://127.0.0.1"));
    free(put(c, "c", "v6", "t", "http://[::1]:8080/x?y=1#frag"));
    free(put(c, "c", "q", "t", "http://localhost?x"));

    momento_client_free(c);
    momento_local_stop(s);
}

/* ---- deliveries ---------------------------------------------------------- */

/* Whether `body` holds `frag` (the body is compact JSON in a fixed order:
 * each field is one exact fragment). */
static void assert_has(const char *body, const char *frag)
{
    if (!strstr(body, frag))
        fail_msg("%s lacks %s", body, frag);
}

static int64_t field_int(const char *body, const char *name)
{
    char key[64];
    snprintf(key, sizeof(key), "\"%s\":", name);
    const char *p = strstr(body, key);
    assert_non_null(p);
    return atoll(p + strlen(key));
}

static void test_delivery_format(void **state)
{
    (void)state;
    receiver *rv = receiver_start(ANSWER_200);
    momento_local *s = server_with(2000, 64);
    momento_client *c = tu_client(s, NULL);
    char *secret = put(c, "c", "hook", "room-281", url_of(rv, "/in?k=1"));

    int64_t before = wall_ms();
    publish_text(c, "room-281", "Here I am!!");
    static const uint8_t bin[] = {0, 1, 2, 0xff};
    momento_result *r = NULL;
    assert_int_equal(momento_topic_publish_sync(c, "c", "room-281", bin, sizeof(bin), NULL, &r),
                     MOMENTO_OK);
    momento_result_free(r);
    publish_text(c, "room-281", "say \"hi\"\n\t\\ \xc3\xa9");
    publish_text(c, "elsewhere", "not for this webhook");
    assert_int_equal(receiver_wait(rv, 3), 3);
    int64_t after = wall_ms();

    for (size_t i = 0; i < 3; i++) {
        const delivery *d = &rv->got[i];
        assert_int_equal(momento_webhook_signature_valid(d->body, d->len, d->signature, secret), 1);
        assert_int_equal(strlen(d->signature), 64);
        assert_string_equal(d->user_agent,
                            "Momento/1.0 (Webhooks; +https://docs.momentohq.com/topics/webhooks)");
        assert_string_equal(d->content_type, "application/json");
        assert_string_equal(d->path, "/in?k=1");
        assert_true(strncmp(d->body, "{\"cache\":\"c\",\"topic\":\"room-281\",\"event_timestamp\":",
                            50) == 0);
        assert_has(d->body, "\"token_id\":\"\"");
        assert_int_equal(field_int(d->body, "topic_sequence_number"), (int64_t)i + 1);
        int64_t ev = field_int(d->body, "event_timestamp");
        int64_t pub = field_int(d->body, "publish_timestamp");
        assert_true(ev >= before - 1 && ev <= pub && pub <= after + 1);
    }
    assert_has(rv->got[0].body, ",\"text\":\"Here I am!!\"}");
    assert_has(rv->got[1].body, ",\"binary\":\"AAEC/w==\"}");
    assert_has(rv->got[2].body, ",\"text\":\"say \\\"hi\\\"\\n\\u0009\\\\ \xc3\xa9\"}");
    /* Another secret does not verify it. */
    assert_int_equal(momento_webhook_signature_valid(rv->got[0].body, rv->got[0].len,
                                                     rv->got[0].signature, "not the secret"),
                     0);
    tu_wait_until(stats(s).delivered == 3, 5000);
    momento_local_webhook_stats w = stats(s);
    assert_int_equal(w.queued, 3);
    assert_int_equal(w.delivered, 3);
    assert_int_equal(w.pending, 0);
    assert_int_equal(rv->malformed, 0);
    char *json = momento_local_stats_json(s);
    assert_non_null(strstr(json, "\"webhooks\": {\"queued\": 3, \"delivered\": 3"));
    assert_non_null(strstr(json, "\"PutWebhook\": {\"total\": 1, \"OK\": 1}"));
    free(json);

    free(secret);
    momento_client_free(c);
    momento_local_stop(s);
    receiver_stop(rv);
}

static void test_rotate_and_delete(void **state)
{
    (void)state;
    receiver *rv = receiver_start(ANSWER_200);
    momento_local *s = server_with(2000, 64);
    momento_client *c = tu_client(s, NULL);
    char *first = put(c, "c", "a", "t1", url_of(rv, "/a"));
    char *b_secret = put(c, "c", "b", "t2", url_of(rv, "/b"));

    publish_text(c, "t1", "one");
    assert_int_equal(receiver_wait(rv, 1), 1);
    assert_int_equal(momento_webhook_signature_valid(rv->got[0].body, rv->got[0].len,
                                                     rv->got[0].signature, first),
                     1);

    momento_result *r = NULL;
    assert_int_equal(momento_webhook_rotate_secret_sync(c, "c", "a", NULL, &r), MOMENTO_OK);
    char *second = strdup(momento_result_webhook_secret(r));
    momento_result_free(r);
    publish_text(c, "t1", "two");
    assert_int_equal(receiver_wait(rv, 2), 2);
    const delivery *d = &rv->got[1];
    assert_has(d->body, "\"text\":\"two\"");
    assert_int_equal(momento_webhook_signature_valid(d->body, d->len, d->signature, second), 1);
    assert_int_equal(momento_webhook_signature_valid(d->body, d->len, d->signature, first), 0);

    /* Deleted: what is published to its topic afterwards goes nowhere.
     * The delivery thread sends in order, so once b's delivery of an item
     * published after it has arrived, a's would have come first. */
    assert_int_equal(momento_webhook_delete_sync(c, "c", "a", NULL, &r), MOMENTO_OK);
    momento_result_free(r);
    publish_text(c, "t1", "three");
    publish_text(c, "t2", "four");
    assert_int_equal(receiver_wait(rv, 3), 3);
    d = &rv->got[2];
    assert_string_equal(d->path, "/b");
    assert_has(d->body, "\"topic\":\"t2\"");
    assert_has(d->body, "\"text\":\"four\"");
    assert_int_equal(momento_webhook_signature_valid(d->body, d->len, d->signature, b_secret), 1);
    tu_wait_until(stats(s).delivered == 3, 5000);
    assert_int_equal(stats(s).queued, 3);
    assert_int_equal(stats(s).delivered, 3);
    assert_int_equal(rv->n, 3);

    free(first);
    free(second);
    free(b_secret);
    momento_client_free(c);
    momento_local_stop(s);
    receiver_stop(rv);
}

/* A publish is answered at once whatever the receiver does. */
static void publish_quickly(momento_client *c, const char *topic, int64_t bound_ms)
{
    int64_t t0 = tu_now_ms();
    publish_text(c, topic, "x");
    int64_t took = tu_now_ms() - t0;
    if (took >= bound_ms)
        fail_msg("a publish took %lld ms", (long long)took);
}

static void test_failing_receivers(void **state)
{
    (void)state;
    const uint32_t timeout = (uint32_t)TU_MS(150);
    momento_local *s = server_with(timeout, 2);
    momento_client *c = tu_client(s, NULL);

    /* 500: counted rejected, signed all the same. */
    receiver *rv = receiver_start(ANSWER_500);
    char *secret = put(c, "c", "w", "t", url_of(rv, "/"));
    publish_quickly(c, "t", timeout);
    assert_int_equal(receiver_wait(rv, 1), 1);
    assert_int_equal(momento_webhook_signature_valid(rv->got[0].body, rv->got[0].len,
                                                     rv->got[0].signature, secret),
                     1);
    tu_wait_until(stats(s).rejected == 1, 5000);
    assert_int_equal(stats(s).rejected, 1);
    assert_int_equal(stats(s).delivered, 0);
    receiver_stop(rv);
    free(secret);

    /* Never answers: the first delivery is held to the timeout, two wait,
     * the rest are dropped; every publish is answered at once meanwhile. */
    rv = receiver_start(ANSWER_NEVER);
    free(put(c, "c", "w", "t", url_of(rv, "/")));
    publish_quickly(c, "t", timeout);
    assert_int_equal(receiver_wait(rv, 1), 1); /* held now */
    for (int i = 0; i < 5; i++)
        publish_quickly(c, "t", timeout);
    tu_wait_until(stats(s).pending == 0, 10000);
    momento_local_webhook_stats w = stats(s);
    assert_int_equal(w.queued, 7);
    assert_int_equal(w.pending, 0);
    assert_int_equal(w.rejected, 1);
    assert_true(w.dropped >= 1);
    assert_true(w.timed_out >= 1);
    assert_int_equal(w.timed_out + w.dropped, 6);
    /* Each timed-out one reached the receiver, which read it after the
     * one before was given up. */
    assert_int_equal(receiver_wait(rv, w.timed_out), w.timed_out);
    receiver_stop(rv);

    /* Nobody listening on the port: failed. */
    rv = receiver_start(ANSWER_200);
    char url[128];
    snprintf(url, sizeof(url), "%s", url_of(rv, "/"));
    receiver_stop(rv); /* its port is closed now */
    free(put(c, "c", "w", "t", url));
    publish_quickly(c, "t", timeout);
    tu_wait_until(stats(s).failed == 1, 5000);
    assert_int_equal(stats(s).failed, 1);

    /* A stop while a delivery is held is not held up by it. */
    rv = receiver_start(ANSWER_NEVER);
    momento_client_free(c);
    momento_local_stop(s);
    s = server_with(600000, 2);
    c = tu_client(s, NULL);
    free(put(c, "c", "w", "t", url_of(rv, "/")));
    publish_quickly(c, "t", timeout);
    assert_int_equal(receiver_wait(rv, 1), 1);
    int64_t t0 = tu_now_ms();
    momento_client_free(c);
    momento_local_stop(s);
    assert_true(tu_now_ms() - t0 < TU_MS(5000));
    receiver_stop(rv);
}

static void test_local_options(void **state)
{
    (void)state;
    momento_local_options *o;
    momento_local_options_new(&o);
    assert_int_equal(momento_local_options_set_webhook_timeout_ms(o, 9), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_local_options_set_webhook_timeout_ms(o, 600001),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_local_options_set_webhook_queue_items(o, 0),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_local_options_set_webhook_timeout_ms(NULL, 100),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    momento_local_options_free(o);
    momento_local_webhook_stats w = {.queued = 9};
    momento_local_webhook_stats_get(NULL, &w);
    assert_int_equal(w.queued, 0);
    momento_local_webhook_stats_get(NULL, NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_signature_vector),
        cmocka_unit_test(test_rpcs),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_delivery_format),
        cmocka_unit_test(test_rotate_and_delete),
        cmocka_unit_test(test_failing_receivers),
        cmocka_unit_test(test_local_options),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
