/* The library's protosocket transport (lib/transport/protosocket/) against
 * a server that misbehaves as momento-local never does
 * (tests/common/fake_ps.c): replies out of order, split and merged, for ids
 * nobody sent, CANCEL frames, silence, a connection cut mid-frame, a refused
 * Authenticate, a frame over the 4 MiB limit. Every request gets exactly
 * one callback, counted after the client's free (which waits for all of
 * them; a test waits for the answers it wants first, as the free cancels
 * what is still in flight), each bounded in time. The gRPC endpoint of every client is a port
 * bound but not listening: get, set and delete never touch gRPC, whose
 * channels connect only when a call needs them. */
#include "fake_ps.h"
#include "testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* ---- the client and its callbacks ---------------------------------- */

static int dead_fd = -1; /* bound, never listening: connections refused */
static char dead_endpoint[64];

static int group_setup(void **state)
{
    (void)state;
    dead_fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t sl = sizeof(sa);
    if (dead_fd < 0 || bind(dead_fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
        getsockname(dead_fd, (struct sockaddr *)&sa, &sl) != 0)
        return -1;
    snprintf(dead_endpoint, sizeof(dead_endpoint), "127.0.0.1:%d", ntohs(sa.sin_port));
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    close(dead_fd);
    return 0;
}

/* A client whose get, set and delete go to `f` over one protosocket
 * connection; `attempts` 1 = no retries. */
static momento_client *ps_client(tu_ps *f, uint32_t timeout_ms, uint32_t attempts)
{
    momento_config *cfg = tu_config();
    assert_int_equal(momento_config_set_timeout_ms(cfg, timeout_ms), MOMENTO_OK);
    assert_int_equal(momento_config_set_retries(cfg, attempts), MOMENTO_OK);
    assert_int_equal(momento_config_set_transport(cfg, MOMENTO_TRANSPORT_PROTOSOCKET), MOMENTO_OK);
    assert_int_equal(momento_config_set_protosocket_endpoint(cfg, tu_ps_endpoint(f)), MOMENTO_OK);
    assert_int_equal(momento_config_set_protosocket_connections(cfg, 1), MOMENTO_OK);
    momento_credentials *creds;
    assert_int_equal(momento_credentials_local(&creds, dead_endpoint), MOMENTO_OK);
    momento_client *c;
    assert_int_equal(momento_client_new(&c, cfg, creds), MOMENTO_OK);
    momento_credentials_free(creds);
    momento_config_free(cfg);
    return c;
}

/* Waits (30 s at most: a watchdog) until each of s[0, n) was called back: the client's
 * free cancels what is in flight, so a test that wants answers waits for
 * them first and counts after the free. */
static void wait_calls(tu_rec *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        tu_wait_until(tu_rec_calls(&s[i]) > 0, 30000);
}

static void get(momento_client *c, const char *key, tu_rec *s)
{
    assert_int_equal(momento_get(c, "c", key, strlen(key), NULL, tu_rec_cb, s), MOMENTO_OK);
}

static void assert_hit(const tu_rec *s, const char *value)
{
    assert_int_equal(tu_rec_calls(s), 1);
    assert_int_equal(s->error, MOMENTO_OK);
    assert_int_equal(s->outcome, MOMENTO_OUTCOME_HIT);
    assert_int_equal(s->value_len, strlen(value));
    assert_memory_equal(s->value, value, s->value_len);
}

static void assert_error(const tu_rec *s, int err)
{
    assert_int_equal(tu_rec_calls(s), 1);
    assert_int_equal(s->error, err);
}

/* The first frame of every connection the fake accepted was the
 * Authenticate, with the Rust SDK's id. */
static void assert_auth_first(tu_ps *f)
{
    size_t n_conns = tu_ps_connections(f), n = tu_ps_frame_count(f);
    for (size_t conn = 0; conn < n_conns; conn++) {
        for (size_t i = 0; i < n; i++) {
            tu_ps_frame fr;
            assert_true(tu_ps_frame_at(f, i, &fr));
            if (fr.conn != conn)
                continue;
            assert_int_equal(fr.kind, PS_AUTH);
            assert_int_equal(fr.id, PS_AUTH_ID);
            break;
        }
    }
}

/* ---- replies in another order or shape ----------------------------- */

/* Eight gets held and answered last first: each value reaches the callback
 * of the get that asked for it. */
static void test_out_of_order(void **state)
{
    (void)state;
    enum { N = 8 };
    tu_ps *f = tu_ps_start(TU_PS_REVERSE, N);
    char keys[N][8], values[N][8];
    for (int i = 0; i < N; i++) {
        snprintf(keys[i], sizeof(keys[i]), "k%d", i);
        snprintf(values[i], sizeof(values[i]), "v%d", i);
        tu_ps_put(f, keys[i], values[i]);
    }
    momento_client *c = ps_client(f, (uint32_t)TU_MS(5000), 1);
    tu_rec s[N] = {0};
    for (int i = 0; i < N; i++)
        get(c, keys[i], &s[i]);
    wait_calls(s, N);
    momento_client_free(c);
    for (int i = 0; i < N; i++)
        assert_hit(&s[i], values[i]);
    assert_int_equal(tu_ps_connections(f), 1);
    assert_auth_first(f);
    tu_ps_stop(f);
}

/* Replies a byte at a time (a frame across many reads), then six replies in
 * one write (many frames in one read): every kind decoded. */
static void test_split_and_merged(void **state)
{
    (void)state;
    tu_ps *f = tu_ps_start(TU_PS_SPLIT, 1);
    tu_ps_put(f, "a", "apple");
    momento_client *c = ps_client(f, (uint32_t)TU_MS(5000), 1);
    tu_rec hit = {0}, miss = {0}, set = {0}, del = {0};
    get(c, "a", &hit);
    get(c, "nothing", &miss);
    assert_int_equal(momento_set(c, "c", "b", 1, "banana", 6, 0, NULL, tu_rec_cb, &set), MOMENTO_OK);
    assert_int_equal(momento_delete(c, "c", "a", 1, NULL, tu_rec_cb, &del), MOMENTO_OK);
    tu_wait_until(tu_rec_calls(&hit) && tu_rec_calls(&miss) && tu_rec_calls(&set) &&
                      tu_rec_calls(&del),
                  30000);
    assert_hit(&hit, "apple");
    assert_error(&miss, MOMENTO_OK);
    assert_int_equal(miss.outcome, MOMENTO_OUTCOME_MISS);
    assert_error(&set, MOMENTO_OK);
    assert_error(&del, MOMENTO_OK);

    enum { N = 6 };
    tu_ps_set_mode(f, TU_PS_MERGE, N);
    tu_rec s[N] = {0};
    for (int i = 0; i < N; i++)
        get(c, i % 2 ? "b" : "a", &s[i]);
    wait_calls(s, N);
    momento_client_free(c);
    for (int i = 0; i < N; i++) {
        if (i % 2) {
            assert_hit(&s[i], "banana");
        } else {
            assert_error(&s[i], MOMENTO_OK);
            assert_int_equal(s[i].outcome, MOMENTO_OUTCOME_MISS); /* deleted above */
        }
    }
    assert_int_equal(tu_ps_connections(f), 1);
    tu_ps_stop(f);
}

/* A reply for an id the client never sent, before each real one: ignored,
 * not a reason to drop the connection. The client cannot tell it from the
 * late reply of a request it cancelled or timed out (whose id it no longer
 * tracks), which PROTOSOCKET.md says to ignore and which would otherwise
 * cost every other request on the connection. */
static void test_unknown_id_ignored(void **state)
{
    (void)state;
    tu_ps *f = tu_ps_start(TU_PS_UNKNOWN_ID, 1);
    tu_ps_put(f, "k", "real");
    momento_client *c = ps_client(f, (uint32_t)TU_MS(5000), 1);
    enum { N = 4 };
    tu_rec s[N] = {0};
    for (int i = 0; i < N; i++)
        get(c, "k", &s[i]);
    wait_calls(s, N);
    momento_client_free(c);
    for (int i = 0; i < N; i++)
        assert_hit(&s[i], "real");
    assert_int_equal(tu_ps_connections(f), 1);
    tu_ps_stop(f);
}

/* ---- the server ends a request ------------------------------------- */

/* A CANCEL control frame for one id ends that request CANCELLED, as a gRPC
 * server's RST_STREAM(CANCEL) does (the status PROTOSOCKET.md gives the
 * remote end of an id), and no other. Like gRPC's, a CANCELLED the server
 * sent is retried for an idempotent get by the SDKs' default rule
 * (docs/api.md, momento_config_set_retries()), so with retries on the get
 * makes every attempt before it fails. */
static void test_server_cancel(void **state)
{
    (void)state;
    tu_ps *f = tu_ps_start(TU_PS_CANCEL, 1);
    tu_ps_set_target(f, "doomed");
    tu_ps_put(f, "doomed", "x");
    tu_ps_put(f, "fine", "y");
    momento_client *c = ps_client(f, (uint32_t)TU_MS(5000), 1);
    tu_rec before = {0}, doomed = {0}, after = {0};
    get(c, "fine", &before);
    get(c, "doomed", &doomed);
    get(c, "fine", &after);
    wait_calls(&before, 1);
    wait_calls(&doomed, 1);
    wait_calls(&after, 1);
    momento_client_free(c);
    assert_hit(&before, "y");
    assert_error(&doomed, MOMENTO_ERR_CANCELLED);
    assert_int_equal(doomed.attempts, 1);
    assert_hit(&after, "y");

    c = ps_client(f, (uint32_t)TU_MS(5000), 3);
    tu_rec retried = {0}, other = {0};
    get(c, "doomed", &retried);
    get(c, "fine", &other);
    wait_calls(&retried, 1);
    wait_calls(&other, 1);
    momento_client_free(c);
    assert_error(&retried, MOMENTO_ERR_CANCELLED);
    assert_int_equal(retried.attempts, 3);
    assert_hit(&other, "y");
    tu_ps_stop(f);
}

/* A server that never answers: the request ends DEADLINE_EXCEEDED
 * (MOMENTO_ERR_TIMEOUT) at its deadline, and the server is told with a
 * CANCEL frame for its id on the connection it was sent on. */
static void test_silent_deadline(void **state)
{
    (void)state;
    tu_ps *f = tu_ps_start(TU_PS_SILENT, 1);
    int64_t timeout = TU_MS(300);
    momento_client *c = ps_client(f, (uint32_t)timeout, 1);
    tu_rec s = {0};
    int64_t t0 = tu_now_ms();
    get(c, "k", &s);
    tu_wait_until(tu_rec_calls(&s), 30000);
    /* The server never answers: TIMEOUT is the deadline's doing, and it
     * comes no earlier than the deadline (a timer cannot fire early). */
    assert_error(&s, MOMENTO_ERR_TIMEOUT);
    assert_true(s.at_ms - t0 >= timeout - 5);
    tu_ps_frame fr;
    assert_true(tu_ps_find_key(f, "k", &fr));
    tu_wait_until(tu_ps_saw_cancel(f, fr.conn, fr.id), 10000);
    assert_true(tu_ps_saw_cancel(f, fr.conn, fr.id));
    momento_client_free(c);
    assert_int_equal(tu_rec_calls(&s), 1);
    assert_auth_first(f);
    tu_ps_stop(f);
}

/* A cancel token fired under a sent request: CANCELLED (not TIMEOUT: the
 * cancel, not the 60 s deadline, ended it), and a CANCEL frame for its id.
 * Another request on the same connection is untouched. */
static void test_cancel_token(void **state)
{
    (void)state;
    tu_ps *f = tu_ps_start(TU_PS_SILENT, 1);
    tu_ps_set_target(f, "k");
    tu_ps_put(f, "other", "o");
    momento_client *c = ps_client(f, (uint32_t)TU_MS(60000), 1);
    momento_cancel_token *tok;
    assert_int_equal(momento_cancel_token_new(&tok), MOMENTO_OK);
    tu_rec s = {0}, other = {0};
    assert_int_equal(momento_get(c, "c", "k", 1, MOMENTO_REQUEST_OPTIONS(.cancel = tok), tu_rec_cb,
                                 &s),
                     MOMENTO_OK);
    tu_ps_frame fr;
    tu_wait_until(tu_ps_find_key(f, "k", &fr), 10000);
    assert_true(tu_ps_find_key(f, "k", &fr));
    momento_cancel(tok);
    tu_wait_until(tu_rec_calls(&s), 30000);
    assert_error(&s, MOMENTO_ERR_CANCELLED);
    tu_wait_until(tu_ps_saw_cancel(f, fr.conn, fr.id), 10000);
    assert_true(tu_ps_saw_cancel(f, fr.conn, fr.id));
    get(c, "other", &other);
    wait_calls(&other, 1);
    momento_client_free(c);
    momento_cancel_token_free(tok);
    assert_int_equal(tu_rec_calls(&s), 1);
    assert_hit(&other, "o");
    tu_ps_stop(f);
}

/* ---- the connection fails ------------------------------------------ */

/* Three requests in flight and half a reply, then the connection closes:
 * each gets one UNAVAILABLE (MOMENTO_ERR_SERVER_UNAVAILABLE) without
 * retries; the next request makes a new connection, authenticated first. */
static void test_cut_mid_frame(void **state)
{
    (void)state;
    tu_ps *f = tu_ps_start(TU_PS_CUT, 3);
    tu_ps_put(f, "k", "v");
    momento_client *c = ps_client(f, (uint32_t)TU_MS(5000), 1);
    tu_rec s[3] = {0}, set = {0}, del = {0};
    get(c, "k", &s[0]);
    assert_int_equal(momento_set(c, "c", "k2", 2, "w", 1, 0, NULL, tu_rec_cb, &set), MOMENTO_OK);
    assert_int_equal(momento_delete(c, "c", "k3", 2, NULL, tu_rec_cb, &del), MOMENTO_OK);
    tu_wait_until(tu_rec_calls(&s[0]) && tu_rec_calls(&set) && tu_rec_calls(&del), 30000);
    assert_error(&s[0], MOMENTO_ERR_SERVER_UNAVAILABLE);
    assert_error(&set, MOMENTO_ERR_SERVER_UNAVAILABLE);
    assert_error(&del, MOMENTO_ERR_SERVER_UNAVAILABLE);
    get(c, "k", &s[1]);
    tu_wait_until(tu_rec_calls(&s[1]), 30000);
    assert_hit(&s[1], "v");
    assert_int_equal(tu_ps_connections(f), 2);
    momento_client_free(c);
    assert_auth_first(f);
    tu_ps_stop(f);
}

/* The same cut under the default retry strategy: the gets, idempotent, are
 * retried on a new connection and succeed on their second attempt. */
static void test_cut_mid_frame_retried(void **state)
{
    (void)state;
    tu_ps *f = tu_ps_start(TU_PS_CUT, 3);
    tu_ps_put(f, "k", "v");
    momento_client *c = ps_client(f, (uint32_t)TU_MS(5000), 3);
    tu_rec s[3] = {0};
    for (int i = 0; i < 3; i++)
        get(c, "k", &s[i]);
    wait_calls(s, 3);
    momento_client_free(c);
    for (int i = 0; i < 3; i++) {
        assert_hit(&s[i], "v");
        assert_int_equal(s[i].attempts, 2);
    }
    assert_int_equal(tu_ps_connections(f), 2);
    assert_auth_first(f);
    tu_ps_stop(f);
}

/* A frame whose prefix announces 5 MiB, over the 4 MiB limit: the
 * connection is closed and the requests on it fail UNAVAILABLE. */
static void test_oversized_frame(void **state)
{
    (void)state;
    tu_ps *f = tu_ps_start(TU_PS_OVERSIZE, 2);
    tu_ps_put(f, "k", "v");
    momento_client *c = ps_client(f, (uint32_t)TU_MS(5000), 1);
    tu_rec s[2] = {0};
    get(c, "k", &s[0]);
    get(c, "k", &s[1]);
    tu_wait_until(tu_rec_calls(&s[0]) && tu_rec_calls(&s[1]), 30000);
    momento_client_free(c);
    assert_error(&s[0], MOMENTO_ERR_SERVER_UNAVAILABLE);
    assert_error(&s[1], MOMENTO_ERR_SERVER_UNAVAILABLE);
    tu_ps_stop(f);
}

/* ---- authentication ------------------------------------------------ */

/* The Authenticate answered 200 ms late: nothing else is sent before its
 * answer, and what waited goes after it. */
static void test_nothing_before_auth(void **state)
{
    (void)state;
    tu_ps *f = tu_ps_start(TU_PS_NORMAL, 1);
    tu_ps_set_auth_delay(f, (int)TU_MS(200));
    tu_ps_put(f, "k", "v");
    momento_client *c = ps_client(f, (uint32_t)TU_MS(5000), 1);
    tu_rec s[3] = {0};
    for (int i = 0; i < 3; i++)
        get(c, "k", &s[i]);
    wait_calls(s, 3);
    momento_client_free(c);
    for (int i = 0; i < 3; i++)
        assert_hit(&s[i], "v");
    int64_t authed = tu_ps_auth_answered_ns(f, 0);
    assert_true(authed > 0);
    size_t n = tu_ps_frame_count(f), data = 0;
    for (size_t i = 0; i < n; i++) {
        tu_ps_frame fr;
        assert_true(tu_ps_frame_at(f, i, &fr));
        if (fr.kind != PS_AUTH) {
            assert_true(fr.at_ns >= authed);
            data++;
        }
    }
    assert_int_equal(data, 3);
    assert_auth_first(f);
    tu_ps_stop(f);
}

/* The Authenticate refused (after 200 ms, the requests waiting): every
 * request fails UNAUTHENTICATED (MOMENTO_ERR_AUTHENTICATION) and no data
 * frame ever reaches the server. */
static void test_auth_refused(void **state)
{
    (void)state;
    tu_ps *f = tu_ps_start(TU_PS_REFUSE_AUTH, 1);
    tu_ps_set_auth_delay(f, (int)TU_MS(200));
    momento_client *c = ps_client(f, (uint32_t)TU_MS(5000), 3);
    tu_rec s = {0}, set = {0};
    get(c, "k", &s);
    assert_int_equal(momento_set(c, "c", "k", 1, "v", 1, 0, NULL, tu_rec_cb, &set), MOMENTO_OK);
    tu_wait_until(tu_rec_calls(&s) && tu_rec_calls(&set), 30000);
    assert_error(&s, MOMENTO_ERR_AUTHENTICATION);
    assert_error(&set, MOMENTO_ERR_AUTHENTICATION);
    /* At once after, while the connection waits out its backoff: the same
     * answer, not an UNAVAILABLE that the retries would spend at once. */
    tu_rec again = {0};
    get(c, "k", &again);
    wait_calls(&again, 1);
    assert_error(&again, MOMENTO_ERR_AUTHENTICATION);
    assert_int_equal(again.attempts, 1);
    momento_client_free(c);
    size_t n = tu_ps_frame_count(f);
    assert_true(n >= 1);
    for (size_t i = 0; i < n; i++) {
        tu_ps_frame fr;
        assert_true(tu_ps_frame_at(f, i, &fr));
        assert_int_equal(fr.kind, PS_AUTH);
    }
    tu_ps_stop(f);
}

/* ---- the client's free --------------------------------------------- */

/* Ten requests sent to a silent server with a 60 s deadline: the free
 * cancels them, each called back once CANCELLED (not TIMEOUT: it did not
 * wait for the deadline), before it returns. */
static void test_free_in_flight(void **state)
{
    (void)state;
    enum { N = 10 };
    tu_ps *f = tu_ps_start(TU_PS_SILENT, 1);
    momento_client *c = ps_client(f, 60000, 1);
    tu_rec s[N] = {0};
    for (int i = 0; i < N; i++)
        get(c, "k", &s[i]);
    tu_wait_until(tu_ps_frame_count(f) >= N + 1, 10000);
    assert_int_equal(tu_ps_frame_count(f), N + 1);
    momento_client_free(c);
    for (int i = 0; i < N; i++)
        assert_error(&s[i], MOMENTO_ERR_CANCELLED);
    tu_ps_stop(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_out_of_order),
        cmocka_unit_test(test_split_and_merged),
        cmocka_unit_test(test_unknown_id_ignored),
        cmocka_unit_test(test_server_cancel),
        cmocka_unit_test(test_silent_deadline),
        cmocka_unit_test(test_cancel_token),
        cmocka_unit_test(test_cut_mid_frame),
        cmocka_unit_test(test_cut_mid_frame_retried),
        cmocka_unit_test(test_oversized_frame),
        cmocka_unit_test(test_nothing_before_auth),
        cmocka_unit_test(test_auth_refused),
        cmocka_unit_test(test_free_in_flight),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
