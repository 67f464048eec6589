/* momento-local's protosocket port spoken to directly, with raw sockets and
 * the shared codec (common/ps_wire): Authenticate first, get / set /
 * delete against the gRPC port's store with its errors, pipelining,
 * delayed and cancelled commands, malformed frames, the counters, the stop
 * with commands held, and TLS with an OpenSSL client. Every read has a
 * deadline (RECV_MS), so no test can hang. */
#include "srv_test.h"
#include "testutil.h"

#include "ps_wire.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* The longest any one response may take to come (scaled for valgrind). */
#define RECV_MS 5000

/* One client connection: plaintext or TLS, with what it has read and not
 * yet taken. */
typedef struct conn {
    int fd;
    SSL *ssl;
    uint8_t *buf;
    size_t len, cap;
} conn;

static conn *conn_open(int port, SSL_CTX *ctx)
{
    conn *c = calloc(1, sizeof(*c));
    assert_non_null(c);
    c->fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(c->fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    assert_int_equal(connect(c->fd, (struct sockaddr *)&a, sizeof(a)), 0);
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    /* Bounds a TLS handshake's reads too. */
    struct timeval tv = {.tv_sec = TU_MS(RECV_MS) / 1000};
    setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    if (ctx) {
        c->ssl = SSL_new(ctx);
        SSL_set_fd(c->ssl, c->fd);
        SSL_set_tlsext_host_name(c->ssl, "localhost");
        assert_int_equal(SSL_connect(c->ssl), 1);
    }
    c->cap = 1 << 16;
    c->buf = malloc(c->cap);
    return c;
}

static void conn_close(conn *c)
{
    if (c->ssl)
        SSL_free(c->ssl);
    close(c->fd);
    free(c->buf);
    free(c);
}

static void send_bytes(conn *c, const void *p, size_t n)
{
    const uint8_t *b = p;
    while (n > 0) {
        ssize_t k = c->ssl ? SSL_write(c->ssl, b, (int)n) : send(c->fd, b, n, MSG_NOSIGNAL);
        assert_true(k > 0);
        b += k;
        n -= (size_t)k;
    }
}

/* Frames `n` commands back to back and sends them in one write. */
static void send_cmds(conn *c, const ps_command *cmds, size_t n)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += ps_command_frame_size(&cmds[i]);
    uint8_t *out = malloc(total);
    size_t at = 0;
    for (size_t i = 0; i < n; i++)
        at += ps_command_encode(&cmds[i], out + at);
    send_bytes(c, out, at);
    free(out);
}

static void send_cmd(conn *c, const ps_command *cmd)
{
    send_cmds(c, cmd, 1);
}

/* Waits up to `ms` for bytes: 1 read, 0 none in time, -1 the connection
 * closed (EOF or reset). */
static int fill(conn *c, int ms)
{
    if (!c->ssl || SSL_pending(c->ssl) == 0) {
        struct pollfd p = {.fd = c->fd, .events = POLLIN};
        if (poll(&p, 1, ms) == 0)
            return 0;
    }
    if (c->cap - c->len < 65536) {
        c->cap *= 2;
        c->buf = realloc(c->buf, c->cap);
    }
    ssize_t k = c->ssl ? SSL_read(c->ssl, c->buf + c->len, (int)(c->cap - c->len))
                       : recv(c->fd, c->buf + c->len, c->cap - c->len, 0);
    if (k <= 0)
        return -1;
    c->len += (size_t)k;
    return 1;
}

/* The next response within `ms`: 1 with *r (its bytes copied into `keep`,
 * which the caller frees), 0 none in time, -1 the connection closed. */
static int recv_resp_within(conn *c, ps_response *r, uint8_t **keep, int ms)
{
    int64_t until = tu_now_ms() + ms;
    for (;;) {
        size_t off, len;
        int rc = ps_frame_next(c->buf, c->len, PS_MAX_FRAME, &off, &len);
        assert_true(rc >= 0);
        if (rc == 1) {
            *keep = malloc(len ? len : 1);
            memcpy(*keep, c->buf + off, len);
            memmove(c->buf, c->buf + off + len, c->len - off - len);
            c->len -= off + len;
            assert_int_equal(ps_response_decode(*keep, len, r), 0);
            return 1;
        }
        int64_t left = until - tu_now_ms();
        if (left <= 0)
            return 0;
        int got = fill(c, (int)left);
        if (got <= 0)
            return got;
    }
}

/* The next response, which must come within RECV_MS. */
static void recv_resp(conn *c, ps_response *r, uint8_t **keep)
{
    assert_int_equal(recv_resp_within(c, r, keep, (int)TU_MS(RECV_MS)), 1);
}

/* Whether the server closes the connection within RECV_MS (responses
 * before the close are skipped). */
static bool closes(conn *c)
{
    int64_t until = tu_now_ms() + TU_MS(RECV_MS);
    while (tu_now_ms() < until) {
        ps_response r;
        uint8_t *keep = NULL;
        int rc = recv_resp_within(c, &r, &keep, (int)(until - tu_now_ms()));
        free(keep);
        if (rc < 0)
            return true;
    }
    return false;
}

static ps_bytes str(const char *s)
{
    return (ps_bytes){(const uint8_t *)s, strlen(s)};
}

static ps_command cmd_get(uint64_t id, const char *cache, const char *key)
{
    return (ps_command){.id = id, .kind = PS_GET, .ns = str(cache), .key = str(key)};
}

static ps_command cmd_set(uint64_t id, const char *cache, const char *key, const char *value)
{
    return (ps_command){
        .id = id, .kind = PS_SET, .ns = str(cache), .key = str(key), .value = str(value)};
}

static ps_command cmd_delete(uint64_t id, const char *cache, const char *key)
{
    return (ps_command){.id = id, .kind = PS_DELETE, .ns = str(cache), .key = str(key)};
}

/* Sends one command and checks its response's id, kind and (for an error)
 * code; returns the response, whose bytes are in *keep. */
static ps_response exchange(conn *c, ps_command cmd, ps_kind kind, int code, uint8_t **keep)
{
    send_cmd(c, &cmd);
    ps_response r;
    recv_resp(c, &r, keep);
    assert_int_equal(r.id, cmd.id);
    assert_int_equal(r.kind, kind);
    if (kind == PS_ERROR)
        assert_int_equal(r.code, code);
    return r;
}

static void expect(conn *c, ps_command cmd, ps_kind kind, int code)
{
    uint8_t *keep = NULL;
    exchange(c, cmd, kind, code, &keep);
    free(keep);
}

/* A Get of `key` in cache "c" as command `id`: a hit holding `value`. */
static void expect_hit(conn *c, uint64_t id, const char *key, const char *value)
{
    uint8_t *keep = NULL;
    ps_response r = exchange(c, cmd_get(id, "c", key), PS_GET, 0, &keep);
    assert_int_equal(r.value.len, strlen(value));
    if (r.value.len)
        assert_memory_equal(r.value.data, value, r.value.len);
    free(keep);
}

static void expect_message(conn *c, ps_command cmd, int code, const char *message)
{
    uint8_t *keep = NULL;
    ps_response r = exchange(c, cmd, PS_ERROR, code, &keep);
    assert_int_equal(r.message.len, strlen(message));
    assert_memory_equal(r.message.data, message, r.message.len);
    free(keep);
}

static void authenticate(conn *c, const char *token)
{
    ps_command a = {.id = PS_AUTH_ID, .kind = PS_AUTH, .token = str(token)};
    expect(c, a, PS_AUTH, 0);
}

/* A connection to `s`'s protosocket port, authenticated. */
static conn *ps_open(momento_local *s)
{
    conn *c = conn_open(momento_local_protosocket_port(s), NULL);
    authenticate(c, "");
    return c;
}

static momento_local *ps_server_with(momento_local_options *o)
{
    assert_int_equal(momento_local_options_add_cache(o, "c"), MOMENTO_OK);
    assert_int_equal(momento_local_options_set_protosocket_port(o, 0), MOMENTO_OK);
    momento_local *s = tu_server(o);
    momento_local_options_free(o);
    assert_true(momento_local_protosocket_port(s) > 0);
    assert_int_not_equal(momento_local_protosocket_port(s), momento_local_port(s));
    return s;
}

static momento_local *ps_server(void)
{
    momento_local_options *o = tu_options(NULL);
    return ps_server_with(o);
}

/* The fixture of the tests on one protosocket connection (and a gRPC
 * client, for those that compare the two ports): a server with cache "c",
 * a connection that has authenticated; closed, freed and stopped after the
 * test even when it fails. */
static struct {
    momento_local *s;
    conn *c;
    momento_client *g; /* NULL: none */
} fx;

static int ps_conn_setup(void **state)
{
    (void)state;
    fx.s = ps_server();
    fx.c = ps_open(fx.s);
    return 0;
}

static int ps_and_grpc_setup(void **state)
{
    ps_conn_setup(state);
    fx.g = tu_client(fx.s, NULL);
    return 0;
}

static int ps_teardown(void **state)
{
    (void)state;
    conn_close(fx.c);
    momento_client_free(fx.g);
    momento_local_stop(fx.s);
    memset(&fx, 0, sizeof(fx));
    return 0;
}

#define ps_conn_test(f) cmocka_unit_test_setup_teardown(f, ps_conn_setup, ps_teardown)
#define ps_and_grpc_test(f) cmocka_unit_test_setup_teardown(f, ps_and_grpc_setup, ps_teardown)

/* The options' and the fault rule's refusals; the port off by default. */
static void test_arguments(void **state)
{
    (void)state;
    momento_local_options *o = tu_options(NULL);
    srv_assert_option_range(o, momento_local_options_set_protosocket_port, -1, -2, 65536);
    momento_local *off = tu_server(o);
    assert_int_equal(momento_local_protosocket_port(off), -1);
    assert_int_equal(momento_local_protosocket_port(NULL), -1);
    momento_local_stop(off);
    momento_local_options_free(o);

    momento_local *s = ps_server();
    assert_int_equal(momento_local_protosocket_fault(NULL, "get", -1, 0, 1),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_local_protosocket_fault(s, "get", 17, 0, 1),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_local_protosocket_fault(s, "get", -2, 0, 1),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_local_protosocket_fault(s, "get gett", 14, 0, 1),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    /* A refused rule leaves none in place. */
    conn *c = ps_open(s);
    expect(c, cmd_get(1, "c", "k"), PS_ERROR, 5); /* a miss, not an injected 14 */
    assert_int_equal(momento_local_protosocket_fault(s, "", 14, 0, 1), MOMENTO_OK); /* all */
    expect(c, cmd_delete(2, "c", "k"), PS_ERROR, 14);
    expect(c, cmd_delete(3, "c", "k"), PS_DELETE, 0);
    assert_int_equal(momento_local_protosocket_fault(s, "get set delete", 14, 0, 100), MOMENTO_OK);
    assert_int_equal(momento_local_protosocket_fault(s, NULL, 0, 0, 0), MOMENTO_OK); /* cleared */
    expect(c, cmd_set(4, "c", "k", "v"), PS_SET, 0);
    conn_close(c);
    momento_local_stop(s);
}

/* Authenticate first, with the gRPC port's token rule: a command before
 * it, or a wrong token, is answered UNAUTHENTICATED and the connection
 * closes; the right token is answered with the auth response, under any
 * message id. */
static void test_auth(void **state)
{
    (void)state;
    momento_local_options *o = tu_options(NULL);
    assert_int_equal(momento_local_options_set_auth_token(o, "secret"), MOMENTO_OK);
    momento_local *s = ps_server_with(o);
    int port = momento_local_protosocket_port(s);

    conn *c = conn_open(port, NULL);
    expect(c, cmd_get(1, "c", "k"), PS_ERROR, 16);
    assert_true(closes(c));
    conn_close(c);

    c = conn_open(port, NULL);
    ps_command a = {.id = PS_AUTH_ID, .kind = PS_AUTH, .token = str("wrong")};
    expect_message(c, a, 16, "invalid auth token");
    assert_true(closes(c));
    conn_close(c);

    c = conn_open(port, NULL);
    ps_command empty = {.id = 3, .kind = PS_AUTH};
    expect(c, empty, PS_ERROR, 16);
    assert_true(closes(c));
    conn_close(c);

    c = conn_open(port, NULL);
    ps_command good = {.id = 42, .kind = PS_AUTH, .token = str("secret")};
    expect(c, good, PS_AUTH, 0);
    expect(c, cmd_set(1, "c", "k", "v"), PS_SET, 0);
    conn_close(c);
    assert_int_equal(momento_local_rpc_count(s, "Get", -1), 0); /* refusals are no Get */
    assert_int_equal(momento_local_rpc_count(s, "Set", 0), 1);
    momento_local_stop(s);
}

/* Set, get, delete, a miss (NOT_FOUND "Key not found", PROTOSOCKET.md),
 * an empty value (a hit), a TTL. */
static void test_round_trip(void **state)
{
    (void)state;
    expect(fx.c, cmd_set(1, "c", "k", "hello"), PS_SET, 0);
    expect_hit(fx.c, 2, "k", "hello");
    expect(fx.c, cmd_delete(3, "c", "k"), PS_DELETE, 0);
    expect_message(fx.c, cmd_get(4, "c", "k"), 5, "Key not found");

    expect(fx.c, cmd_set(5, "c", "empty", ""), PS_SET, 0);
    expect_hit(fx.c, 6, "empty", "");

    ps_command ttl = cmd_set(7, "c", "brief", "x");
    ttl.ttl_ms = 100;
    int64_t t0 = tu_now_ms();
    expect(fx.c, ttl, PS_SET, 0);
    /* A hit while the TTL cannot have run out; on a machine too loaded for
     * that, a miss is right too. */
    ps_command get_brief = cmd_get(8, "c", "brief");
    send_cmd(fx.c, &get_brief);
    ps_response r;
    uint8_t *keep = NULL;
    recv_resp(fx.c, &r, &keep);
    assert_int_equal(r.id, 8);
    if (tu_now_ms() - t0 < 100)
        assert_int_equal(r.kind, PS_GET);
    free(keep);
    usleep(250 * 1000); /* past the TTL on any machine: a miss */
    expect(fx.c, cmd_get(9, "c", "brief"), PS_ERROR, 5);
}

/* The gRPC port's errors, status and message alike: an unknown cache, an
 * empty key, a value over the item limit; and an item within the item
 * limit but over the frame a client takes. */
static void test_errors_match_grpc(void **state)
{
    (void)state;
    momento_local_options *o = tu_options(NULL);
    assert_int_equal(momento_local_options_set_max_item_bytes(o, 1000), MOMENTO_OK);
    momento_local *s = ps_server_with(o);
    momento_client *g = tu_client(s, NULL);
    conn *c = ps_open(s);
    momento_result *r = NULL;

    assert_int_equal(momento_get_sync(g, "nope", "k", 1, NULL, &r),
                     MOMENTO_ERR_CACHE_NOT_FOUND);
    assert_int_equal(momento_result_grpc_status(r), 5);
    uint8_t *keep = NULL;
    ps_response p = exchange(c, cmd_get(1, "nope", "k"), PS_ERROR, 5, &keep);
    assert_int_equal(p.message.len, strlen("cache not found: nope"));
    assert_memory_equal(p.message.data, "cache not found: nope", p.message.len);
    assert_non_null(strstr(momento_result_message(r), "cache not found: nope"));
    free(keep);
    momento_result_free(r);

    expect(c, cmd_get(2, "c", ""), PS_ERROR, 3);

    char big[2001];
    memset(big, 'x', 2000);
    big[2000] = '\0';
    r = NULL;
    assert_int_equal(momento_set_sync(g, "c", "big", 3, big, 2000, 0, NULL, &r),
                     MOMENTO_ERR_LIMIT_EXCEEDED);
    assert_int_equal(momento_result_grpc_status(r), 8);
    p = exchange(c, cmd_set(3, "c", "big", big), PS_ERROR, 8, &keep);
    char msg[256];
    snprintf(msg, sizeof(msg), "%.*s", (int)p.message.len, (const char *)p.message.data);
    assert_non_null(strstr(msg, "exceeds the limit of 1000 bytes"));
    assert_non_null(strstr(momento_result_message(r), msg));
    free(keep);
    momento_result_free(r);
    conn_close(c);
    momento_client_free(g);
    momento_local_stop(s);

    /* 4.5 MiB set over gRPC (item limit 5 MiB) cannot come back in a
     * frame of 4 MiB. */
    s = ps_server();
    g = tu_client(s, NULL);
    size_t n = 4608u * 1024;
    char *v = malloc(n);
    memset(v, 'y', n);
    assert_int_equal(momento_set_sync(g, "c", "huge", 4, v, n, 0, NULL, NULL), MOMENTO_OK);
    free(v);
    c = ps_open(s);
    expect(c, cmd_get(1, "c", "huge"), PS_ERROR, 8);
    expect(c, cmd_delete(2, "c", "huge"), PS_DELETE, 0);
    conn_close(c);
    momento_client_free(g);
    momento_local_stop(s);
}

/* 1000 commands in one write, every one answered once, in one go. */
static void test_pipelined(void **state)
{
    (void)state;
    enum { N = 1000 };
    ps_command *cmds = calloc(N, sizeof(*cmds));
    char (*keys)[16] = calloc(N, sizeof(*keys));
    for (int i = 0; i < N; i++) {
        snprintf(keys[i], sizeof(keys[i]), "p%d", i / 2);
        /* A set, then the get of the same key: answered in that order. */
        cmds[i] = i % 2 ? cmd_get((uint64_t)i + 100, "c", keys[i])
                        : cmd_set((uint64_t)i + 100, "c", keys[i], keys[i]);
    }
    send_cmds(fx.c, cmds, N);
    bool *seen = calloc(N, sizeof(*seen));
    for (int k = 0; k < N; k++) {
        ps_response r;
        uint8_t *keep = NULL;
        recv_resp(fx.c, &r, &keep);
        assert_true(r.id >= 100 && r.id < 100 + N);
        int i = (int)(r.id - 100);
        assert_false(seen[i]);
        seen[i] = true;
        assert_int_equal(r.kind, i % 2 ? PS_GET : PS_SET);
        if (i % 2) {
            assert_int_equal(r.value.len, strlen(keys[i]));
            assert_memory_equal(r.value.data, keys[i], r.value.len);
        }
        free(keep);
    }
    assert_int_equal(momento_local_rpc_count(fx.s, "Get", 0), N / 2);
    assert_int_equal(momento_local_rpc_count(fx.s, "Set", 0), N / 2);
    free(seen);
    free(keys);
    free(cmds);
}

/* A delayed command holds nothing back: held for a minute, the command
 * after it on the same connection, and another connection's, are answered
 * while it is still held (order, not time); its connection closing drops
 * it. A short delay ends in its answer, with its injected error, no sooner
 * than the delay (the server's timer cannot fire early). */
static void test_delay_holds_nothing_back(void **state)
{
    (void)state;
    conn *c = ps_open(fx.s), *other = fx.c; /* the fixture's */
    assert_int_equal(momento_local_protosocket_fault(fx.s, "get", 14, 60000, 1), MOMENTO_OK);
    ps_command two[] = {cmd_get(1, "c", "k"), cmd_set(2, "c", "k", "v")};
    send_cmds(c, two, 2);
    expect(other, cmd_set(3, "c", "k2", "w"), PS_SET, 0);
    ps_response r;
    uint8_t *keep = NULL;
    recv_resp(c, &r, &keep);
    assert_int_equal(r.id, 2); /* the later command's answer first */
    free(keep);
    assert_int_equal(momento_local_parked_calls(fx.s), 1);
    conn_close(c);
    tu_wait_until(momento_local_parked_calls(fx.s) == 0, 20000);
    assert_int_equal(momento_local_parked_calls(fx.s), 0);
    assert_int_equal(momento_local_rpc_count(fx.s, "Get", 14), 0);

    int delay = (int)TU_MS(100);
    assert_int_equal(momento_local_protosocket_fault(fx.s, "get", 14, (uint32_t)delay, 1),
                     MOMENTO_OK);
    c = ps_open(fx.s);
    int64_t t0 = tu_now_ms();
    expect(c, cmd_get(4, "c", "k"), PS_ERROR, 14);
    assert_true(tu_now_ms() - t0 >= delay);
    assert_int_equal(momento_local_rpc_count(fx.s, "Get", 14), 1);
    assert_int_equal(momento_local_parked_calls(fx.s), 0);
    conn_close(c);
}

/* A cancel frame drops a delayed command: no answer, counted CANCELLED and
 * as cancelled by its client. A cancel for an id not held changes nothing. */
static void test_cancel(void **state)
{
    (void)state;
    assert_int_equal(momento_local_protosocket_fault(fx.s, "get", -1, 60000, 1), MOMENTO_OK);
    send_cmd(fx.c, &(ps_command){.id = 9, .control = PS_CONTROL_CANCEL}); /* nothing held */
    ps_command get = cmd_get(7, "c", "k");
    send_cmd(fx.c, &get);
    tu_wait_until(momento_local_parked_calls(fx.s) == 1, 20000);
    assert_int_equal(momento_local_parked_calls(fx.s), 1);
    send_cmd(fx.c, &(ps_command){.id = 7, .control = PS_CONTROL_CANCEL});
    expect(fx.c, cmd_get(8, "c", "k"), PS_ERROR, 5); /* the rule's one command is gone */
    tu_wait_until(momento_local_cancelled_calls(fx.s, "Get") == 1, 20000);
    assert_int_equal(momento_local_cancelled_calls(fx.s, "Get"), 1);
    assert_int_equal(momento_local_rpc_count(fx.s, "Get", 1), 1);
    assert_int_equal(momento_local_parked_calls(fx.s), 0);
    ps_response r;
    uint8_t *keep = NULL;
    assert_int_equal(recv_resp_within(fx.c, &r, &keep, 300), 0); /* nothing for id 7 */
}

/* A connection closed with a command held drops it (counted as its
 * client's cancel); the server stopping answers one held UNAVAILABLE, and
 * does not wait for its delay. */
static void test_close_and_stop_with_held(void **state)
{
    (void)state;
    momento_local *s = ps_server();
    conn *c = ps_open(s);
    assert_int_equal(momento_local_protosocket_fault(s, "set", -1, 60000, 2), MOMENTO_OK);
    ps_command set = cmd_set(1, "c", "k", "v");
    send_cmd(c, &set);
    tu_wait_until(momento_local_parked_calls(s) == 1, 20000);
    conn_close(c);
    tu_wait_until(momento_local_cancelled_calls(s, "Set") == 1, 20000);
    assert_int_equal(momento_local_cancelled_calls(s, "Set"), 1);
    assert_int_equal(momento_local_parked_calls(s), 0);

    c = ps_open(s);
    set.id = 2;
    send_cmd(c, &set);
    tu_wait_until(momento_local_parked_calls(s) == 1, 20000);
    /* The answer is UNAVAILABLE, not the set's own after its minute: the
     * stop did not wait for the delay. */
    momento_local_stop(s);
    ps_response r;
    uint8_t *keep = NULL;
    recv_resp(c, &r, &keep);
    assert_int_equal(r.id, 2);
    assert_int_equal(r.kind, PS_ERROR);
    assert_int_equal(r.code, 14);
    free(keep);
    assert_true(closes(c));
    conn_close(c);
}

/* A bad varint, a frame over the limit and a body that does not decode
 * each close their connection, and only theirs. */
static void test_malformed_closes_one_connection(void **state)
{
    (void)state;
    momento_local *s = ps_server();
    conn *good = ps_open(s);
    static const uint8_t bad_varint[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                         0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    static const uint8_t too_big[] = {0x80, 0x80, 0x80, 0x03}; /* 6 MiB */
    static const uint8_t undecodable[] = {0x02, 0x52, 0x05};   /* unary cut short */
    const uint8_t *frames[] = {bad_varint, too_big, undecodable};
    size_t lens[] = {sizeof(bad_varint), sizeof(too_big), sizeof(undecodable)};
    for (int i = 0; i < 3; i++) {
        conn *c = ps_open(s);
        send_bytes(c, frames[i], lens[i]);
        assert_true(closes(c));
        conn_close(c);
        expect(good, cmd_set((uint64_t)i, "c", "k", "v"), PS_SET, 0);
    }
    conn_close(good);
    momento_local_stop(s);
}

/* One store: what one port writes, the other reads. */
static void test_same_store_as_grpc(void **state)
{
    (void)state;
    expect(fx.c, cmd_set(1, "c", "from-ps", "one"), PS_SET, 0);
    momento_result *r = NULL;
    assert_int_equal(momento_get_sync(fx.g, "c", "from-ps", 7, NULL, &r), MOMENTO_OK);
    assert_true(momento_result_is_hit(r));
    size_t n;
    const char *v = momento_result_value(r, &n);
    assert_int_equal(n, 3);
    assert_memory_equal(v, "one", 3);
    momento_result_free(r);
    assert_int_equal(momento_set_sync(fx.g, "c", "from-grpc", 9, "two", 3, 0, NULL, NULL),
                     MOMENTO_OK);
    expect_hit(fx.c, 2, "from-grpc", "two");
    expect(fx.c, cmd_delete(3, "c", "from-grpc"), PS_DELETE, 0);
    r = NULL;
    assert_int_equal(momento_get_sync(fx.g, "c", "from-grpc", 9, NULL, &r), MOMENTO_OK);
    assert_false(momento_result_is_hit(r));
    momento_result_free(r);
}

/* The counters: a hit and a miss are OK Gets, as on gRPC; an injected
 * error counts under its status; the rate limit is the gRPC port's. */
static void test_stats_and_rate(void **state)
{
    (void)state;
    momento_local_options *o = tu_options(NULL);
    assert_int_equal(momento_local_options_set_max_rps(o, 5), MOMENTO_OK);
    momento_local *s = ps_server_with(o);
    conn *c = ps_open(s);
    momento_local_reset_stats(s);
    assert_int_equal(momento_local_protosocket_fault(s, "delete", 13, 0, 1), MOMENTO_OK);
    expect(c, cmd_set(1, "c", "k", "v"), PS_SET, 0);
    expect(c, cmd_get(2, "c", "k"), PS_GET, 0);
    expect(c, cmd_get(3, "c", "missing"), PS_ERROR, 5);
    expect(c, cmd_delete(4, "c", "k"), PS_ERROR, 13);
    expect(c, cmd_delete(5, "c", "k"), PS_DELETE, 0);
    /* Past the fifth operation in a second, refused as on gRPC. Twelve
     * sent at once, so they reach the server together: however slow the
     * machine, no two one-second windows (ten operations) take them all. */
    ps_response r;
    uint8_t *keep = NULL;
    int limited = 0;
    ps_command burst[12];
    for (int i = 0; i < 12; i++)
        burst[i] = (ps_command){.id = 10 + (uint64_t)i, .kind = PS_GET, .ns = str("c"),
                                .key = str("k")};
    send_cmds(c, burst, 12);
    for (int i = 0; i < 12; i++) {
        recv_resp(c, &r, &keep);
        if (r.kind == PS_ERROR && r.code == 8)
            limited++;
        free(keep);
    }
    assert_true(limited >= 1);
    assert_int_equal(momento_local_rpc_count(s, "Set", 0), 1);
    assert_int_equal(momento_local_rpc_count(s, "Delete", 0), 1);
    assert_int_equal(momento_local_rpc_count(s, "Delete", 13), 1);
    assert_int_equal(momento_local_rpc_count(s, "Get", 8), (uint64_t)limited);
    assert_int_equal(momento_local_rpc_count(s, "Get", -1), 14);
    char *json = momento_local_stats_json(s);
    assert_non_null(strstr(json, "\"Delete\": {\"total\": 2"));
    free(json);
    conn_close(c);
    momento_local_stop(s);
}

/* The count by transport: a protosocket Get is counted under protosocket
 * and a gRPC one under gRPC, while the per-method counts keep counting
 * both. */
static void test_stats_by_transport(void **state)
{
    (void)state;
    momento_local_reset_stats(fx.s);
    expect(fx.c, cmd_set(1, "c", "k", "v"), PS_SET, 0);
    expect(fx.c, cmd_get(2, "c", "k"), PS_GET, 0);
    expect(fx.c, cmd_get(3, "c", "k"), PS_GET, 0);
    momento_result *r = NULL;
    assert_int_equal(momento_get_sync(fx.g, "c", "k", 1, NULL, &r), MOMENTO_OK);
    assert_true(momento_result_is_hit(r));
    momento_result_free(r);
    assert_int_equal(momento_local_rpc_count(fx.s, "Get", -1), 3);
    char *json = momento_local_stats_json(fx.s);
    assert_non_null(strstr(json, "\"Get\": {\"total\": 3, \"OK\": 3}"));
    assert_non_null(strstr(json, ", \"by_transport\": {"
                                 "\"grpc\": {\"total\": 1, \"methods\": {\"Get\": 1}}, "
                                 "\"protosocket\": {\"total\": 3, \"methods\": "
                                 "{\"Get\": 2, \"Set\": 1}}}}"));
    free(json);
    /* Zeroed with the rest; still there, so that 0 reads as 0. */
    momento_local_reset_stats(fx.s);
    json = momento_local_stats_json(fx.s);
    assert_non_null(strstr(json, ", \"by_transport\": {"
                                 "\"grpc\": {\"total\": 0, \"methods\": {}}, "
                                 "\"protosocket\": {\"total\": 0, \"methods\": {}}}}"));
    free(json);
}

/* ---- TLS ------------------------------------------------------------ */

static char dir[] = "/tmp/momento-ps-tls-XXXXXX";

static int make_certs(void)
{
    char cmd[2048];
    snprintf(cmd, sizeof(cmd),
             "(set -e; cd %s; "
             "K='-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes'; "
             "openssl req -x509 $K -keyout ca.key -out ca.pem -days 2 -subj /CN=ps-test-ca; "
             "openssl req $K -keyout good.key -out good.csr -subj /CN=good; "
             "echo 'subjectAltName=DNS:localhost,IP:127.0.0.1' > good.ext; "
             "openssl x509 -req -in good.csr -CA ca.pem -CAkey ca.key -CAcreateserial "
             "  -out good.pem -days 2 -extfile good.ext) >/dev/null 2>&1",
             dir);
    return system(cmd);
}

/* TLS with the gRPC port's certificate, verified by an OpenSSL client
 * against the CA; and the gRPC port still answers over TLS. */
static void test_tls(void **state)
{
    (void)state;
    assert_non_null(mkdtemp(dir));
    assert_int_equal(make_certs(), 0);
    char cert[128], key[128], ca[128];
    snprintf(cert, sizeof(cert), "%s/good.pem", dir);
    snprintf(key, sizeof(key), "%s/good.key", dir);
    snprintf(ca, sizeof(ca), "%s/ca.pem", dir);
    momento_local_options *o = tu_options(NULL);
    assert_int_equal(momento_local_options_set_tls(o, cert, key), MOMENTO_OK);
    momento_local *s = ps_server_with(o);

    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    assert_int_equal(SSL_CTX_load_verify_locations(ctx, ca, NULL), 1);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    conn *c = conn_open(momento_local_protosocket_port(s), ctx);
    authenticate(c, "any");
    expect(c, cmd_set(1, "c", "k", "tls"), PS_SET, 0);
    /* Many frames in one write, answered across several records. */
    enum { N = 300 };
    ps_command cmds[N];
    for (int i = 0; i < N; i++)
        cmds[i] = cmd_get(100 + (uint64_t)i, "c", "k");
    send_cmds(c, cmds, N);
    for (int i = 0; i < N; i++) {
        ps_response r;
        uint8_t *keep = NULL;
        recv_resp(c, &r, &keep);
        assert_int_equal(r.kind, PS_GET);
        assert_int_equal(r.value.len, 3);
        free(keep);
    }
    conn_close(c);

    /* A plaintext client gets nothing it can read, and is closed. */
    conn *plain = conn_open(momento_local_protosocket_port(s), NULL);
    ps_command a = {.id = 1, .kind = PS_AUTH, .token = str("")};
    send_cmd(plain, &a);
    int64_t t0 = tu_now_ms();
    while (fill(plain, 500) > 0 && tu_now_ms() - t0 < TU_MS(RECV_MS))
        ;
    conn_close(plain);

    SSL_CTX_free(ctx);
    momento_local_stop(s);
    char rm[128];
    snprintf(rm, sizeof(rm), "rm -rf %s", dir);
    assert_int_equal(system(rm), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_arguments),
        cmocka_unit_test(test_auth),
        ps_conn_test(test_round_trip),
        cmocka_unit_test(test_errors_match_grpc),
        ps_conn_test(test_pipelined),
        ps_conn_test(test_delay_holds_nothing_back),
        ps_conn_test(test_cancel),
        cmocka_unit_test(test_close_and_stop_with_held),
        cmocka_unit_test(test_malformed_closes_one_connection),
        ps_and_grpc_test(test_same_store_as_grpc),
        cmocka_unit_test(test_stats_and_rate),
        ps_and_grpc_test(test_stats_by_transport),
        cmocka_unit_test(test_tls),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
