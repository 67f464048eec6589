/* Webhooks: the library against an embedded momento-local (every RPC, its
 * errors, bad input refused by the library and by the server), and a small
 * HTTP receiver on loopback that verifies the signature of every delivery
 * (momento_webhook_signature_valid()) and reads its JSON body: a rotated
 * secret signs what comes next, a deleted webhook hears nothing more, a
 * receiver that answers 500, never answers or is not there never holds a
 * publish up, and a full queue drops and counts. A receiver that never
 * answers costs only its own webhook: another webhook hears everything,
 * in order, while it still holds its first delivery (its queue's bound,
 * the global one and --max-memory drop only its deliveries), and a stop
 * cuts every held delivery short. */
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

/* ANSWER_HOLD: the first delivery is answered 200 once receiver_release()
 * is called, the rest at once. */
typedef enum { ANSWER_200, ANSWER_500, ANSWER_NEVER, ANSWER_HOLD } answer_mode;

#define MAX_DELIVERIES 256
/* How long a wait for what must come (a delivery, a count, a closed
 * connection) goes on before the test fails: only a hang takes this long,
 * so no check here depends on how fast anything is. */
#define WATCHDOG_MS 60000
/* Long enough that no held delivery times out while a test runs, however
 * slowly (the longest the option takes). */
#define FOREVER_MS 600000u

typedef struct delivery {
    char *body;
    size_t len;
    char signature[80];
    char user_agent[128];
    char content_type[64];
    char path[128];
    char host[80];
    int64_t received_ms; /* wall clock */
} delivery;

typedef struct receiver {
    int fd, port, wake[2];
    bool v6; /* on ::1, not 127.0.0.1 */
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    answer_mode mode;
    delivery got[MAX_DELIVERIES];
    size_t n;
    size_t malformed; /* requests that were not a POST with a body */
    /* ANSWER_NEVER: held connections the sender has closed (seen by this
     * thread as their end of file), as opposed to the receiver stopping. */
    size_t closed;
    bool released, quit; /* ANSWER_HOLD's, and the stop's for it */
} receiver;

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Reads what `fd` has: -1 when the peer closed (or failed), -2 when the
 * receiver stops first. */
static ssize_t read_some(receiver *rv, int fd, char *buf, size_t cap)
{
    struct pollfd p[2] = {{.fd = fd, .events = POLLIN}, {.fd = rv->wake[0], .events = POLLIN}};
    if (poll(p, 2, -1) <= 0 || p[1].revents)
        return -2;
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
    /* Each receiver's thread its own (a plain static was every receiver's:
     * two serving at once wrote into each other's request, and a held
     * receiver recorded another webhook's delivery); off the stack. */
    static _Thread_local char buf[1 << 16];
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
    header(buf, "Host", d.host, sizeof(d.host));
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
    if (mode == ANSWER_HOLD && rv->n == 1)
        while (!rv->released && !rv->quit)
            pthread_cond_wait(&rv->cv, &rv->mu);
    pthread_mutex_unlock(&rv->mu);
    if (mode == ANSWER_NEVER) {
        /* Held until the sender gives up and closes, or the receiver stops. */
        ssize_t n;
        while ((n = read_some(rv, fd, buf, sizeof(buf))) > 0)
            ;
        if (n == -1) {
            pthread_mutex_lock(&rv->mu);
            rv->closed++;
            pthread_cond_broadcast(&rv->cv);
            pthread_mutex_unlock(&rv->mu);
        }
        return;
    }
    const char *reply = mode != ANSWER_500
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

/* A receiver on 127.0.0.1, or with `v6` on ::1: NULL when ::1 cannot be
 * bound (a machine without IPv6). */
static receiver *receiver_start_on(answer_mode mode, bool v6)
{
    int fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM, 0);
    if (v6 && fd < 0)
        return NULL;
    assert_true(fd >= 0);
    struct sockaddr_storage ss = {0};
    socklen_t al;
    if (v6) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
        a->sin6_family = AF_INET6;
        a->sin6_addr = in6addr_loopback;
        al = sizeof(*a);
    } else {
        struct sockaddr_in *a = (struct sockaddr_in *)&ss;
        a->sin_family = AF_INET;
        a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        al = sizeof(*a);
    }
    if (bind(fd, (struct sockaddr *)&ss, al) != 0) {
        assert_true(v6);
        close(fd);
        return NULL;
    }
    assert_int_equal(listen(fd, 16), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&ss, &al), 0);
    receiver *rv = calloc(1, sizeof(*rv));
    rv->mode = mode;
    rv->fd = fd;
    rv->v6 = v6;
    rv->port = ntohs(v6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                        : ((struct sockaddr_in *)&ss)->sin_port);
    pthread_mutex_init(&rv->mu, NULL);
    pthread_cond_init(&rv->cv, NULL);
    assert_int_equal(pipe(rv->wake), 0);
    assert_int_equal(pthread_create(&rv->thread, NULL, receiver_thread, rv), 0);
    return rv;
}

static receiver *receiver_start(answer_mode mode)
{
    return receiver_start_on(mode, false);
}

static void receiver_release(receiver *rv)
{
    pthread_mutex_lock(&rv->mu);
    rv->released = true;
    pthread_cond_broadcast(&rv->cv);
    pthread_mutex_unlock(&rv->mu);
}

static void receiver_stop(receiver *rv)
{
    pthread_mutex_lock(&rv->mu);
    rv->quit = true;
    pthread_cond_broadcast(&rv->cv);
    pthread_mutex_unlock(&rv->mu);
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

/* Waits until `n` deliveries arrived (the watchdog, scaled); returns how
 * many did. */
static size_t receiver_wait(receiver *rv, size_t n)
{
    return tu_wait_count(&rv->mu, &rv->cv, &rv->n, n, WATCHDOG_MS);
}

/* Waits until `n` held connections were closed by their sender (the
 * watchdog, scaled); returns how many were. */
static size_t receiver_wait_closed(receiver *rv, size_t n)
{
    return tu_wait_count(&rv->mu, &rv->cv, &rv->closed, n, WATCHDOG_MS);
}

/* The receiver's deliveries and its held connections closed, together. */
static void receiver_counts(receiver *rv, size_t *ret_n, size_t *ret_closed)
{
    pthread_mutex_lock(&rv->mu);
    *ret_n = rv->n;
    *ret_closed = rv->closed;
    pthread_mutex_unlock(&rv->mu);
}

/* A receiver that never answers still holds its first delivery's
 * connection, open and unanswered: it has seen neither that connection's
 * end nor a second one. */
static void assert_holds_first(receiver *rv)
{
    size_t n, closed;
    receiver_counts(rv, &n, &closed);
    assert_int_equal(closed, 0);
    assert_int_equal(n, 1);
}

static char *url_of(receiver *rv, const char *path)
{
    static char url[128];
    snprintf(url, sizeof(url), "http://%s:%d%s", rv->v6 ? "[::1]" : "127.0.0.1", rv->port, path);
    return url;
}

/* ---- fixtures ------------------------------------------------------------ */

static momento_local *server_with(uint32_t timeout_ms, uint32_t queue_items)
{
    momento_local_options *o = tu_options("c");
    assert_int_equal(momento_local_options_set_webhook_timeout_ms(o, timeout_ms), MOMENTO_OK);
    assert_int_equal(momento_local_options_set_webhook_queue_items(o, queue_items), MOMENTO_OK);
    momento_local *s = tu_start(o);
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
    tu_expect(momento_webhook_delete_sync(c, "c", "w1", NULL, &r), r, MOMENTO_OUTCOME_SUCCESS);
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
    assert_int_equal(tu_counter_wait(&k, 3, (int)TU_MS(WATCHDOG_MS)), 3);
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

    char host[32];
    snprintf(host, sizeof(host), "127.0.0.1:%d", rv->port);
    for (size_t i = 0; i < 3; i++) {
        const delivery *d = &rv->got[i];
        assert_int_equal(momento_webhook_signature_valid(d->body, d->len, d->signature, secret), 1);
        assert_string_equal(d->host, host);
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
    tu_wait_until(stats(s).delivered == 3, WATCHDOG_MS);
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

/* A delivery to an IPv6 URL names its host in brackets, as the URL does
 * (RFC 7230 5.4): "Host: [::1]:PORT", not "::1:PORT", which a receiver
 * cannot split into host and port. Skipped where ::1 cannot be bound. */
static void test_host_header_ipv6(void **state)
{
    (void)state;
    receiver *rv = receiver_start_on(ANSWER_200, true);
    if (!rv)
        skip();
    momento_local *s = server_with(FOREVER_MS, 64);
    momento_client *c = tu_client(s, NULL);
    char *secret = put(c, "c", "v6", "t", url_of(rv, "/six"));
    publish_text(c, "t", "over IPv6");
    assert_int_equal(receiver_wait(rv, 1), 1);
    char want[32];
    snprintf(want, sizeof(want), "[::1]:%d", rv->port);
    const delivery *d = &rv->got[0];
    assert_string_equal(d->host, want);
    assert_string_equal(d->path, "/six");
    assert_has(d->body, "\"text\":\"over IPv6\"");
    assert_int_equal(momento_webhook_signature_valid(d->body, d->len, d->signature, secret), 1);
    tu_wait_until(stats(s).delivered == 1, WATCHDOG_MS);
    assert_int_equal(stats(s).delivered, 1);
    assert_int_equal(rv->malformed, 0);

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
     * A publish counts the deliveries it queues before it is answered, so
     * `queued` staying at 3 says none was made for a. */
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
    tu_wait_until(stats(s).delivered == 3, WATCHDOG_MS);
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

/* A receiver that answers 500, one that never answers and a port nobody
 * listens on: each delivery ends as the stats say, and no publish waits for
 * any of them. With no timeout to end it while the test runs (FOREVER_MS),
 * the never-answering receiver holds its first delivery's connection, open
 * and unanswered, while six publishes are answered: a publish that waited
 * for it would hang to its own deadline and fail. */
static void test_failing_receivers(void **state)
{
    (void)state;
    momento_local *s = server_with(FOREVER_MS, 2);
    momento_client *c = tu_client(s, NULL);

    /* 500: counted rejected, signed all the same. */
    receiver *rv = receiver_start(ANSWER_500);
    char *secret = put(c, "c", "w", "t", url_of(rv, "/"));
    publish_text(c, "t", "x");
    assert_int_equal(receiver_wait(rv, 1), 1);
    assert_int_equal(momento_webhook_signature_valid(rv->got[0].body, rv->got[0].len,
                                                     rv->got[0].signature, secret),
                     1);
    tu_wait_until(stats(s).rejected == 1, WATCHDOG_MS);
    assert_int_equal(stats(s).rejected, 1);
    assert_int_equal(stats(s).delivered, 0);
    receiver_stop(rv);
    free(secret);

    /* Never answers: the first delivery is held, two wait, the rest are
     * dropped as their publishes come, and every publish is answered while
     * the receiver still holds the first: it has seen neither that
     * connection's end nor a second one. */
    receiver *never = receiver_start(ANSWER_NEVER);
    free(put(c, "c", "w", "t", url_of(never, "/")));
    publish_text(c, "t", "x");
    assert_int_equal(receiver_wait(never, 1), 1); /* held from now on */
    for (int i = 0; i < 5; i++)
        publish_text(c, "t", "x");
    assert_holds_first(never);
    momento_local_webhook_stats w = stats(s);
    assert_int_equal(w.queued, 7);
    assert_int_equal(w.rejected, 1);
    assert_int_equal(w.sending, 1);
    assert_int_equal(w.pending, 3);
    assert_int_equal(w.dropped, 3);
    assert_int_equal(w.dropped_full, 3);
    assert_int_equal(w.timed_out, 0);

    /* Nobody listening on the port: failed. Another webhook, since the
     * held one's waiting deliveries keep its URL of then. */
    rv = receiver_start(ANSWER_200);
    char url[128];
    snprintf(url, sizeof(url), "%s", url_of(rv, "/"));
    receiver_stop(rv); /* its port is closed now */
    free(put(c, "c", "w2", "t2", url));
    publish_text(c, "t2", "x");
    tu_wait_until(stats(s).failed == 1, WATCHDOG_MS);
    assert_int_equal(stats(s).failed, 1);
    size_t n, closed;
    receiver_counts(never, &n, &closed);
    assert_int_equal(closed, 0); /* still held */

    momento_client_free(c);
    momento_local_stop(s); /* cuts the held delivery short */
    receiver_stop(never);
}

/* A receiver that never answers: each delivery reaches it, is given up at
 * the timeout (the receiver sees its connection closed by the sender) and
 * counted timed_out, and the webhook's next delivery is sent after it. What
 * is asserted is what happened, not how soon: the timeout only has to end
 * the deliveries while the test runs. */
static void test_receiver_timeout(void **state)
{
    (void)state;
    receiver *rv = receiver_start(ANSWER_NEVER);
    momento_local *s = server_with((uint32_t)TU_MS(500), 2);
    momento_client *c = tu_client(s, NULL);
    free(put(c, "c", "w", "t", url_of(rv, "/")));
    publish_text(c, "t", "one");
    publish_text(c, "t", "two");
    assert_int_equal(receiver_wait_closed(rv, 2), 2);
    tu_wait_until(stats(s).timed_out == 2, WATCHDOG_MS);
    momento_local_webhook_stats w = stats(s);
    assert_int_equal(w.queued, 2);
    assert_int_equal(w.timed_out, 2);
    assert_int_equal(w.failed + w.dropped + w.delivered + w.rejected, 0);
    assert_int_equal(w.pending, 0);
    /* Both reached it, in order: the second once the first was given up. */
    assert_int_equal(rv->n, 2);
    assert_has(rv->got[0].body, "\"text\":\"one\"");
    assert_has(rv->got[1].body, "\"text\":\"two\"");

    momento_client_free(c);
    momento_local_stop(s);
    receiver_stop(rv);
}

/* ---- one receiver's trouble is its own ------------------------------------ */

/* A server with caches "c", "a" and "b". */
static momento_local *server_opts(uint32_t timeout_ms, uint32_t queue_items, uint64_t max_memory)
{
    momento_local_options *o = tu_options("c");
    momento_local_options_add_cache(o, "a");
    momento_local_options_add_cache(o, "b");
    assert_int_equal(momento_local_options_set_webhook_timeout_ms(o, timeout_ms), MOMENTO_OK);
    assert_int_equal(momento_local_options_set_webhook_queue_items(o, queue_items), MOMENTO_OK);
    if (max_memory) {
        assert_int_equal(momento_local_options_set_max_memory(o, max_memory), MOMENTO_OK);
        /* No resume buffers: what a publish leaves behind is the webhooks'. */
        assert_int_equal(momento_local_options_set_topic_buffer_items(o, 0), MOMENTO_OK);
    }
    momento_local *s = tu_start(o);
    return s;
}

/* Publishes `len` bytes of text (`text`, padded with '.'), asserting it is
 * accepted. */
static void publish_to(momento_client *c, const char *cache, const char *topic, const char *text,
                       size_t len)
{
    char *v = malloc(len + 1);
    size_t tl = strlen(text);
    memset(v, '.', len);
    memcpy(v, text, tl < len ? tl : len);
    v[len] = '\0';
    momento_result *r = NULL;
    int rc = momento_topic_publish_text_sync(c, cache, topic, v, len, NULL, &r);
    if (rc != MOMENTO_OK)
        fail_msg("publish to %s/%s: %s", cache, topic, momento_result_message(r));
    momento_result_free(r);
    free(v);
}

/* Delivery `i` of `rv` is item `seq` of its topic, and its text starts
 * with `prefix` and `seq` - 1 ("b0" for item 1). */
static void assert_item(receiver *rv, size_t i, const char *prefix, int64_t seq)
{
    const char *body = rv->got[i].body;
    if (field_int(body, "topic_sequence_number") != seq)
        fail_msg("delivery %zu is %s, not item %lld", i, body, (long long)seq);
    char want[64];
    snprintf(want, sizeof(want), "\"text\":\"%s%lld", prefix, (long long)seq - 1);
    assert_has(body, want);
}

/* What most tests of this section start from: a receiver that takes the
 * connection and never answers, behind webhook "dead" on cache "a", and a
 * healthy one behind "ok" on cache "b", both on topic "t", on a server of
 * server_opts(FOREVER_MS, queue_items, max_memory); the dead one already
 * holds its first delivery (`first_len` bytes of text), and will for as
 * long as the test runs. */
typedef struct dead_and_ok {
    receiver *dead, *ok;
    momento_local *s;
    momento_client *c;
} dead_and_ok;

static dead_and_ok dead_and_ok_start(uint32_t queue_items, uint64_t max_memory, size_t first_len)
{
    dead_and_ok t;
    t.dead = receiver_start(ANSWER_NEVER);
    t.ok = receiver_start(ANSWER_200);
    t.s = server_opts(FOREVER_MS, queue_items, max_memory);
    t.c = tu_client(t.s, NULL);
    free(put(t.c, "a", "dead", "t", url_of(t.dead, "/")));
    free(put(t.c, "b", "ok", "t", url_of(t.ok, "/")));
    publish_to(t.c, "a", "t", "d", first_len);
    assert_int_equal(receiver_wait(t.dead, 1), 1); /* held from now on */
    return t;
}

static void dead_and_ok_stop(dead_and_ok *t)
{
    momento_client_free(t->c);
    momento_local_stop(t->s);
    receiver_stop(t->dead);
    receiver_stop(t->ok);
}

/* A receiver that takes the connection and never answers, on cache "a",
 * holds its first delivery for as long as the test runs; a healthy
 * receiver on cache "b" hears all of 100 deliveries meanwhile, in order,
 * while the dead one's queue grows by as many. */
static void test_dead_receiver_isolated(void **state)
{
    (void)state;
    dead_and_ok t = dead_and_ok_start(1024, 0, 1);
    char text[16];
    for (int i = 0; i < 100; i++) {
        publish_to(t.c, "a", "t", "d", 1);
        snprintf(text, sizeof(text), "b%d", i);
        publish_to(t.c, "b", "t", text, strlen(text));
    }
    assert_int_equal(receiver_wait(t.ok, 100), 100);
    /* ... while the dead receiver still holds its first connection, open
     * and unanswered: it has seen neither its end nor a second one. */
    assert_holds_first(t.dead);
    for (size_t i = 0; i < 100; i++)
        assert_item(t.ok, i, "b", (int64_t)i + 1);

    tu_wait_until(stats(t.s).delivered == 100, WATCHDOG_MS);
    momento_local_webhook_stats w = stats(t.s);
    assert_int_equal(w.queued, 201);
    assert_int_equal(w.delivered, 100);
    assert_int_equal(w.dropped, 0);
    assert_int_equal(w.pending, 101); /* the dead one's: one held, 100 waiting */
    assert_int_equal(w.sending, 1);
    assert_true(w.bytes > 0);
    assert_int_equal(t.ok->malformed, 0);

    dead_and_ok_stop(&t);
}

/* With room for 4 waiting deliveries per webhook, the dead receiver's
 * backlog past 4 is dropped and counted, and only its: the healthy
 * receiver, published to between them, hears every one of its own. */
static void test_full_queue_drops_only_its_own(void **state)
{
    (void)state;
    dead_and_ok t = dead_and_ok_start(4, 0, 1);
    for (int i = 0; i < 10; i++)
        publish_to(t.c, "a", "t", "d", 1);
    /* One held, 4 waiting, 6 dropped, each as its publish came. */
    momento_local_webhook_stats w = stats(t.s);
    assert_int_equal(w.dropped, 6);
    assert_int_equal(w.pending, 5);

    /* One at a time, so that the healthy webhook's own bound of 4 is never
     * what is tested. */
    char text[16];
    for (int i = 0; i < 50; i++) {
        publish_to(t.c, "a", "t", "d", 1);
        snprintf(text, sizeof(text), "b%d", i);
        publish_to(t.c, "b", "t", text, strlen(text));
        assert_int_equal(receiver_wait(t.ok, (size_t)i + 1), (size_t)i + 1);
    }
    assert_holds_first(t.dead);
    for (size_t i = 0; i < 50; i++)
        assert_item(t.ok, i, "b", (int64_t)i + 1);

    tu_wait_until(stats(t.s).delivered == 50, WATCHDOG_MS);
    w = stats(t.s);
    assert_int_equal(w.queued, 111);
    assert_int_equal(w.delivered, 50);
    assert_int_equal(w.dropped, 56);
    assert_int_equal(w.dropped_full, 56);
    assert_int_equal(w.dropped_global, 0);
    assert_int_equal(w.dropped_memory, 0);
    assert_int_equal(w.pending, 5);
    assert_int_equal(w.sending, 1);
    assert_true(w.bytes > 0);
    /* The stats JSON (the exit report) has every field, in the struct's
     * order, with the same counts (nothing moves now: the dead one holds). */
    char want[512];
    snprintf(want, sizeof(want),
             ", \"webhooks\": {\"queued\": 111, \"delivered\": 50, \"rejected\": 0, "
             "\"timed_out\": 0, \"failed\": 0, \"dropped\": 56, \"pending\": 5, "
             "\"dropped_full\": 56, \"dropped_global\": 0, \"dropped_memory\": 0, "
             "\"sending\": 1, \"bytes\": %llu}}",
             (unsigned long long)w.bytes);
    char *json = momento_local_stats_json(t.s);
    assert_non_null(json);
    if (!strstr(json, want))
        fail_msg("%s lacks %s", json, want);
    free(json);

    dead_and_ok_stop(&t);
}

/* Each webhook hears its items in publish order, one delivery at a time:
 * with a dead receiver on another webhook, a receiver that holds its first
 * delivery has the other 19 waiting (not sent) while a third receiver
 * hears all of its 20; released, it hears its 19 in order. */
static void test_order_per_receiver(void **state)
{
    (void)state;
    receiver *dead = receiver_start(ANSWER_NEVER);
    receiver *held = receiver_start(ANSWER_HOLD);
    receiver *ok = receiver_start(ANSWER_200);
    momento_local *s = server_opts(FOREVER_MS, 1024, 0);
    momento_client *c = tu_client(s, NULL);
    free(put(c, "a", "dead", "t", url_of(dead, "/")));
    free(put(c, "c", "held", "th", url_of(held, "/")));
    free(put(c, "c", "ok", "to", url_of(ok, "/")));

    publish_to(c, "a", "t", "d", 1);
    assert_int_equal(receiver_wait(dead, 1), 1);
    char text[16];
    for (int i = 0; i < 20; i++) {
        snprintf(text, sizeof(text), "h%d", i);
        publish_to(c, "c", "th", text, strlen(text));
        snprintf(text, sizeof(text), "o%d", i);
        publish_to(c, "c", "to", text, strlen(text));
        publish_to(c, "a", "t", "d", 1);
    }
    assert_int_equal(receiver_wait(ok, 20), 20);
    assert_int_equal(receiver_wait(held, 1), 1);
    for (size_t i = 0; i < 20; i++)
        assert_item(ok, i, "o", (int64_t)i + 1);
    tu_wait_until(stats(s).delivered == 20, WATCHDOG_MS);
    momento_local_webhook_stats w = stats(s);
    assert_int_equal(w.delivered, 20);
    /* Two being sent (the dead one's first and the held one's first); the
     * held webhook's other 19 wait behind its first. */
    assert_int_equal(w.sending, 2);
    assert_int_equal(w.pending, 21 + 20);
    assert_int_equal(held->n, 1);

    receiver_release(held);
    assert_int_equal(receiver_wait(held, 20), 20);
    for (size_t i = 0; i < 20; i++)
        assert_item(held, i, "h", (int64_t)i + 1);
    assert_holds_first(dead);

    momento_client_free(c);
    momento_local_stop(s);
    receiver_stop(dead);
    receiver_stop(held);
    receiver_stop(ok);
}

/* Three receivers that never answer hold a delivery each, at once (one by
 * a host name, looked up on the lookups' thread); a stop returns, having
 * closed every held connection, and leaves no webhook thread behind. */
static void test_stop_with_dead_receivers(void **state)
{
    (void)state;
    receiver *dead[3];
    momento_local *s = server_opts(FOREVER_MS, 1024, 0);
    momento_client *c = tu_client(s, NULL);
    for (int i = 0; i < 3; i++) {
        dead[i] = receiver_start(ANSWER_NEVER);
        char name[8], topic[8], url[128];
        snprintf(name, sizeof(name), "w%d", i);
        snprintf(topic, sizeof(topic), "t%d", i);
        snprintf(url, sizeof(url), "http://%s:%d/", i == 2 ? "localhost" : "127.0.0.1",
                 dead[i]->port);
        free(put(c, "c", name, topic, url));
        publish_to(c, "c", topic, "x", 1);
        publish_to(c, "c", topic, "y", 1); /* and one waiting */
    }
    for (int i = 0; i < 3; i++)
        assert_int_equal(receiver_wait(dead[i], 1), 1);
    assert_int_equal(stats(s).sending, 3);
    assert_int_equal(tu_threads_named("momento-webhook"), 1);
    assert_int_equal(tu_threads_named("momento-wh-dns"), 1);

    momento_client_free(c);
    momento_local_stop(s);
    /* Returned: each held connection was closed by the stop (the receivers
     * see its end), and the threads are gone. */
    for (int i = 0; i < 3; i++) {
        assert_int_equal(receiver_wait_closed(dead[i], 1), 1);
        assert_int_equal(dead[i]->n, 1); /* the waiting one was never sent */
    }
    tu_wait_until(tu_threads_named("momento-webhook") + tu_threads_named("momento-wh-dns") == 0,
                  WATCHDOG_MS);
    assert_int_equal(tu_threads_named("momento-webhook"), 0);
    assert_int_equal(tu_threads_named("momento-wh-dns"), 0);
    for (int i = 0; i < 3; i++)
        receiver_stop(dead[i]);
}

/* Under --max-memory, webhooks' deliveries may hold a quarter of it: the
 * dead receiver's backlog fills that share, and then its new deliveries
 * are dropped (counted); a healthy webhook's delivery that finds no room
 * takes it from the dead one's oldest, and hears all of its own; the cache
 * keeps the rest. */
static void test_memory_share_drops_only_its_own(void **state)
{
    (void)state;
    const uint64_t limit = 256 * 1024;
    dead_and_ok t = dead_and_ok_start(1024, limit, 500);
    int i = 0;
    for (; i < 1000 && stats(t.s).dropped == 0; i++)
        publish_to(t.c, "a", "t", "d", 500);
    momento_local_webhook_stats w = stats(t.s);
    assert_int_equal(w.dropped, 1);
    assert_int_equal(w.dropped_global, 1);
    assert_true(w.bytes <= limit / 4);
    assert_true(w.pending > 10); /* its backlog took the share */
    /* The rest is the cache's: an item of half the limit is kept. */
    static char big[128 * 1024];
    memset(big, 'v', sizeof(big));
    momento_result *r = NULL;
    assert_int_equal(momento_set_sync(t.c, "c", "k", 1, big, sizeof(big), 0, NULL, &r), MOMENTO_OK);
    momento_result_free(r);
    tu_expect(momento_get_sync(t.c, "c", "k", 1, NULL, &r), r, MOMENTO_OUTCOME_HIT);

    /* Each bigger than what the dead one's newest leaves: its oldest give
     * way. One at a time: each is given back once it is counted. */
    char text[16];
    for (int k = 0; k < 20; k++) {
        snprintf(text, sizeof(text), "b%d", k);
        publish_to(t.c, "b", "t", text, 6000);
        assert_int_equal(receiver_wait(t.ok, (size_t)k + 1), (size_t)k + 1);
        tu_wait_until(stats(t.s).delivered == (uint64_t)k + 1, WATCHDOG_MS);
        assert_int_equal(stats(t.s).delivered, (uint64_t)k + 1);
    }
    for (size_t k = 0; k < 20; k++)
        assert_item(t.ok, k, "b", (int64_t)k + 1);
    w = stats(t.s);
    assert_true(w.dropped_global > 1); /* the dead one's oldest */
    assert_int_equal(w.dropped, w.dropped_global);
    assert_int_equal(w.queued, (uint64_t)i + 1 + 20);
    assert_int_equal(w.delivered, 20);
    assert_true(w.bytes <= limit / 4);
    assert_holds_first(t.dead);

    dead_and_ok_stop(&t);
}

static void test_local_options(void **state)
{
    (void)state;
    momento_local_options *o = tu_options(NULL);
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
        cmocka_unit_test(test_host_header_ipv6),
        cmocka_unit_test(test_rotate_and_delete),
        cmocka_unit_test(test_failing_receivers),
        cmocka_unit_test(test_receiver_timeout),
        cmocka_unit_test(test_dead_receiver_isolated),
        cmocka_unit_test(test_full_queue_drops_only_its_own),
        cmocka_unit_test(test_order_per_receiver),
        cmocka_unit_test(test_stop_with_dead_receivers),
        cmocka_unit_test(test_memory_share_drops_only_its_own),
        cmocka_unit_test(test_local_options),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
