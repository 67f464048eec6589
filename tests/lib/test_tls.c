/* TLS end to end: momento-local serving a certificate from a throwaway CA
 * made here with the openssl command; the library trusting that CA through
 * momento_config_set_tls_roots_file(), and refusing what it must refuse. */
#include "testing.h"
#include "testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[] = "/tmp/momento-tls-XXXXXX";
static char path_buf[8][300];

static const char *path(int slot, const char *name)
{
    snprintf(path_buf[slot], sizeof(path_buf[slot]), "%s/%s", dir, name);
    return path_buf[slot];
}

/* A CA, a server certificate for localhost/127.0.0.1, one for another
 * name and one for the cache and control endpoints of a made-up cell, all
 * signed by that CA. */
static int make_certs(void)
{
    char cmd[4096];
    snprintf(cmd, sizeof(cmd),
             "set -e; cd %s; "
             "K='-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes'; "
             "openssl req -x509 $K -keyout ca.key -out ca.pem -days 2 -subj /CN=libmomento-test-ca; "
             "for n in good other vpc; do "
             "  openssl req $K -keyout $n.key -out $n.csr -subj /CN=$n; done; "
             "echo 'subjectAltName=DNS:localhost,IP:127.0.0.1' > good.ext; "
             "echo 'subjectAltName=DNS:other.example' > other.ext; "
             "echo 'subjectAltName=DNS:cache.vpc.example,DNS:control.vpc.example' > vpc.ext; "
             "for n in good other vpc; do "
             "  openssl x509 -req -in $n.csr -CA ca.pem -CAkey ca.key -CAcreateserial "
             "    -out $n.pem -days 2 -extfile $n.ext; done",
             dir);
    char full[4200];
    snprintf(full, sizeof(full), "(%s) >/dev/null 2>&1", cmd);
    return system(full);
}

/* A server's options with cache "c" and TLS with cert `name`. */
static momento_local_options *tls_options(const char *name)
{
    char cert[64], key[64];
    snprintf(cert, sizeof(cert), "%s.pem", name);
    snprintf(key, sizeof(key), "%s.key", name);
    momento_local_options *o = tu_options("c");
    assert_int_equal(momento_local_options_set_tls(o, path(0, cert), path(1, key)), MOMENTO_OK);
    return o;
}

static momento_local *tls_server(const char *name)
{
    return tu_start(tls_options(name));
}

static momento_client *tls_client(momento_local *s, bool trust_ca)
{
    momento_config *cfg = tu_config();
    /* The first TLS handshake under valgrind on a busy machine takes seconds. */
    momento_config_set_timeout_ms(cfg, (uint32_t)TU_MS(3000));
    if (trust_ca)
        assert_int_equal(momento_config_set_tls_roots_file(cfg, path(2, "ca.pem")), MOMENTO_OK);
    momento_credentials *creds;
    const char *ep = momento_local_endpoint(s);
    assert_int_equal(momento_credentials_with_endpoints(&creds, "", ep, ep), MOMENTO_OK);
    assert_int_equal(momento_credentials_uses_tls(creds), 1);
    momento_client *c;
    assert_int_equal(momento_client_new(&c, cfg, creds), MOMENTO_OK);
    momento_credentials_free(creds);
    momento_config_free(cfg);
    return c;
}

static void test_trusted_ca_connects(void **state)
{
    (void)state;
    momento_local *s = tls_server("good");
    momento_client *c = tls_client(s, true);
    assert_int_equal(momento_set_sync(c, "c", "k", 1, "over tls", 8, 0, NULL, NULL), MOMENTO_OK);
    tu_assert_get(c, "c", "k", 1, "over tls", 8);
    assert_int_equal(momento_list_caches_sync(c, NULL, NULL), MOMENTO_OK); /* control plane too */
    momento_client_free(c);
    momento_local_stop(s);
}

static int handshake_errors;

static void count_log(momento_log_level level, const char *message, void *ud)
{
    (void)ud;
    if (level == MOMENTO_LOG_ERROR && strstr(message, "Handshake failed"))
        __atomic_add_fetch(&handshake_errors, 1, __ATOMIC_SEQ_CST);
}

static void test_untrusted_certificate_refused(void **state)
{
    (void)state;
    momento_set_log_callback(count_log, NULL);
    momento_local *s = tls_server("good");
    momento_client *c = tls_client(s, false); /* system roots do not know our CA */
    assert_int_equal(momento_get_sync(c, "c", "k", 1, NULL, NULL), MOMENTO_ERR_SERVER_UNAVAILABLE);
    /* The reason reached the log callback rather than stderr. */
    assert_true(__atomic_load_n(&handshake_errors, __ATOMIC_SEQ_CST) > 0);
    momento_set_log_callback(NULL, NULL);
    momento_client_free(c);
    assert_int_equal(momento_local_rpc_count(s, NULL, -1), 0); /* nothing got through */
    momento_local_stop(s);
}

/* `c`'s call to `s` fails, refused at the handshake before any RPC
 * reached the server; frees both. */
static void assert_refused(momento_local *s, momento_client *c)
{
    assert_int_equal(momento_get_sync(c, "c", "k", 1, NULL, NULL), MOMENTO_ERR_SERVER_UNAVAILABLE);
    momento_client_free(c);
    assert_int_equal(momento_local_rpc_count(s, NULL, -1), 0);
    momento_local_stop(s);
}

static void test_hostname_mismatch_refused(void **state)
{
    (void)state;
    momento_local *s = tls_server("other"); /* valid chain, wrong name */
    momento_client *c = tls_client(s, true);
    assert_refused(s, c);
}

static void test_plaintext_client_refused(void **state)
{
    (void)state;
    momento_local *s = tls_server("good");
    momento_client *c = tu_client(s, NULL);
    assert_refused(s, c);
}

/* A client whose endpoints are cache.vpc.example:PORT and
 * control.vpc.example:PORT (names no resolver here knows), set to connect
 * to the server's address. */
static momento_client *vpc_client(momento_local *s, const char *connect_to, bool trust_ca)
{
    char cache[64], control[64];
    int port = momento_local_port(s);
    snprintf(cache, sizeof(cache), "cache.vpc.example:%d", port);
    snprintf(control, sizeof(control), "control.vpc.example:%d", port);
    momento_config *cfg = tu_config();
    momento_config_set_timeout_ms(cfg, (uint32_t)TU_MS(3000));
    if (trust_ca)
        assert_int_equal(momento_config_set_tls_roots_file(cfg, path(2, "ca.pem")), MOMENTO_OK);
    if (connect_to)
        assert_int_equal(momento_config_set_connect_address(cfg, connect_to), MOMENTO_OK);
    momento_client *c = tu_client_with_endpoints("", cache, control, cfg);
    momento_config_free(cfg);
    return c;
}

/* A private endpoint: connect to an address, verify the name the
 * credentials give (both planes). The name is checked, not the address: a
 * certificate for the address alone is refused. */
static void test_connect_address_verifies_the_endpoint_name(void **state)
{
    (void)state;
    momento_config *cfg = tu_config();
    assert_int_equal(momento_config_set_connect_address(cfg, "no-port"),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(momento_refusal_reason(), "the connect address"));
    assert_int_equal(momento_config_set_connect_address(NULL, "127.0.0.1:1"),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_config_set_connect_address(cfg, NULL), MOMENTO_OK);
    momento_config_free(cfg);

    momento_local *s = tls_server("vpc");
    const char *addr = momento_local_endpoint(s);
    momento_client *c = vpc_client(s, addr, true);
    assert_int_equal(momento_set_sync(c, "c", MOMENTO_STR("k"), MOMENTO_STR("vpc"), 0, NULL, NULL),
                     MOMENTO_OK);
    momento_result *r = NULL;
    assert_int_equal(momento_get_sync(c, "c", MOMENTO_STR("k"), NULL, &r), MOMENTO_OK);
    assert_true(momento_result_is_hit(r));
    momento_result_free(r);
    assert_int_equal(momento_list_caches_sync(c, NULL, NULL), MOMENTO_OK); /* control plane */
    momento_client_free(c);
    /* Without the address, the names lead nowhere. */
    c = vpc_client(s, NULL, true);
    assert_int_equal(momento_get_sync(c, "c", MOMENTO_STR("k"), NULL, NULL),
                     MOMENTO_ERR_SERVER_UNAVAILABLE);
    momento_client_free(c);
    momento_local_stop(s);

    s = tls_server("good"); /* valid for 127.0.0.1, not for cache.vpc.example */
    uint64_t before = momento_local_rpc_count(s, NULL, -1);
    c = vpc_client(s, momento_local_endpoint(s), true);
    assert_int_equal(momento_get_sync(c, "c", MOMENTO_STR("k"), NULL, NULL),
                     MOMENTO_ERR_SERVER_UNAVAILABLE);
    momento_client_free(c);
    assert_int_equal(momento_local_rpc_count(s, NULL, -1), before);
    momento_local_stop(s);
}

/* TLS without verification (test setups): a certificate of an unknown CA
 * for another name is accepted; with verification (the default) it is not. */
static void test_tls_without_verification(void **state)
{
    (void)state;
    momento_local *s = tls_server("other");
    momento_config *cfg = tu_config();
    momento_config_set_timeout_ms(cfg, (uint32_t)TU_MS(3000));
    assert_int_equal(momento_config_set_tls_verify(NULL, 0), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_config_set_tls_verify(cfg, 0), MOMENTO_OK);
    momento_credentials *creds;
    const char *ep = momento_local_endpoint(s);
    assert_int_equal(momento_credentials_with_endpoints(&creds, "", ep, ep), MOMENTO_OK);
    momento_client *c;
    assert_int_equal(momento_client_new(&c, cfg, creds), MOMENTO_OK);
    assert_int_equal(momento_set_sync(c, "c", MOMENTO_STR("k"), MOMENTO_STR("v"), 0, NULL, NULL),
                     MOMENTO_OK);
    momento_client_free(c);
    assert_int_equal(momento_config_set_tls_verify(cfg, 1), MOMENTO_OK);
    assert_int_equal(momento_client_new(&c, cfg, creds), MOMENTO_OK);
    assert_int_equal(momento_get_sync(c, "c", MOMENTO_STR("k"), NULL, NULL),
                     MOMENTO_ERR_SERVER_UNAVAILABLE);
    momento_client_free(c);
    momento_credentials_free(creds);
    momento_config_free(cfg);
    momento_local_stop(s);
}

static void test_roots_file_validation(void **state)
{
    (void)state;
    momento_config *cfg = tu_config();
    assert_int_equal(momento_config_set_tls_roots_file(cfg, "/nonexistent/ca.pem"),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_config_set_tls_roots_file(cfg, path(3, "good.ext")),
                     MOMENTO_ERR_INVALID_ARGUMENT); /* not PEM */
    assert_int_equal(momento_config_set_tls_roots_file(cfg, path(3, "ca.pem")), MOMENTO_OK);
    assert_int_equal(momento_config_set_tls_roots_file(cfg, NULL), MOMENTO_OK);
    momento_config_free(cfg);
    momento_credentials *creds = NULL;
    assert_int_equal(momento_credentials_with_endpoints(&creds, "t", "127.0.0.1", "127.0.0.1:1"),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_credentials_with_endpoints(&creds, "t\n", "a:1", "a:1"),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_null(creds);
}

/* No log line holds a token, whatever gRPC logs: main() turns on gRPC's
 * http trace, which prints every request header, `authorization`
 * included. Over TLS, a client whose token the server accepts and one whose
 * token it refuses each make calls; the log callback sees the headers but
 * never the tokens. */
#define MARK "SeCrEtMaRkEr"

static struct {
    pthread_mutex_t lock;
    size_t lines, auth_headers, leaks;
} seen = {PTHREAD_MUTEX_INITIALIZER, 0, 0, 0};

static void watch_log(momento_log_level level, const char *message, void *ud)
{
    (void)level;
    (void)ud;
    pthread_mutex_lock(&seen.lock);
    seen.lines++;
    if (strstr(message, "authorization"))
        seen.auth_headers++;
    if (strstr(message, MARK) || strstr(message, "-token-"))
        seen.leaks++;
    pthread_mutex_unlock(&seen.lock);
}

static momento_client *token_client(momento_local *s, const char *token)
{
    momento_config *cfg = tu_config();
    assert_int_equal(momento_config_set_tls_roots_file(cfg, path(2, "ca.pem")), MOMENTO_OK);
    const char *ep = momento_local_endpoint(s);
    momento_client *c = tu_client_with_endpoints(token, ep, ep, cfg);
    momento_config_free(cfg);
    return c;
}

static void test_no_log_line_holds_the_token(void **state)
{
    (void)state;
    momento_set_log_callback(watch_log, NULL);
    momento_local_options *o = tu_options("c");
    assert_int_equal(momento_local_options_set_tls(o, path(0, "good.pem"), path(1, "good.key")),
                     MOMENTO_OK);
    assert_int_equal(momento_local_options_set_auth_token(o, MARK "-token-right"), MOMENTO_OK);
    momento_local *s = tu_start(o);

    momento_client *right = token_client(s, MARK "-token-right");
    momento_client *wrong = token_client(s, MARK "-token-wrong");
    assert_int_equal(momento_set_sync(right, "c", "k", 1, "v", 1, 0, NULL, NULL), MOMENTO_OK);
    assert_int_equal(momento_get_sync(right, "c", "k", 1, NULL, NULL), MOMENTO_OK);
    assert_int_equal(momento_get_sync(wrong, "c", "k", 1, NULL, NULL), MOMENTO_ERR_AUTHENTICATION);
    momento_client_free(wrong);
    momento_client_free(right);
    momento_local_stop(s);
    momento_set_log_callback(NULL, NULL);

    pthread_mutex_lock(&seen.lock);
    /* The trace was on and printed the header: the check below means something. */
    assert_true(seen.lines > 0);
    assert_true(seen.auth_headers > 0);
    assert_int_equal(seen.leaks, 0);
    pthread_mutex_unlock(&seen.lock);
}

/* ---- Protosocket over TLS: the same certificates, the same rules. */

/* A TLS server with cert `name`, a protosocket port, and token "tok". */
static momento_local *ps_tls_server(const char *name)
{
    momento_local_options *o = tls_options(name);
    assert_int_equal(momento_local_options_set_protosocket_port(o, 0), MOMENTO_OK);
    assert_int_equal(momento_local_options_set_auth_token(o, "tok"), MOMENTO_OK);
    momento_local *s = tu_start(o);
    assert_true(momento_local_protosocket_port(s) > 0);
    return s;
}

/* A protosocket client of `s` for endpoints `cache_ep` (NULL: the
 * server's own), dialling 127.0.0.1 at its protosocket port; every gRPC
 * Get and Set of it fails (a fault header protosocket does not carry), so
 * a get or set that succeeds went over protosocket. */
static momento_client *ps_tls_client(momento_local *s, const char *cache_ep, bool trust_ca,
                                     const char *token)
{
    momento_config *cfg = tu_config();
    momento_config_set_timeout_ms(cfg, (uint32_t)TU_MS(3000));
    if (trust_ca)
        assert_int_equal(momento_config_set_tls_roots_file(cfg, path(2, "ca.pem")), MOMENTO_OK);
    char ps[64];
    snprintf(ps, sizeof(ps), "127.0.0.1:%d", momento_local_protosocket_port(s));
    assert_int_equal(momento_config_set_transport(cfg, MOMENTO_TRANSPORT_PROTOSOCKET), MOMENTO_OK);
    assert_int_equal(momento_config_set_protosocket_endpoint(cfg, ps), MOMENTO_OK);
    if (cache_ep) {
        char connect[64];
        snprintf(connect, sizeof(connect), "127.0.0.1:%d", momento_local_port(s));
        assert_int_equal(momento_config_set_connect_address(cfg, connect), MOMENTO_OK);
    }
    const char *ep = cache_ep ? cache_ep : momento_local_endpoint(s);
    momento_client *c = tu_client_with_endpoints(token, ep, ep, cfg);
    momento_config_free(cfg);
    momento__client_add_header(c, "return-error", "internal");
    momento__client_add_header(c, "error-rpcs", "get set");
    return c;
}

static void test_protosocket_over_tls(void **state)
{
    (void)state;
    momento_local *s = ps_tls_server("good");
    momento_client *c = ps_tls_client(s, NULL, true, "tok");
    assert_int_equal(momento_set_sync(c, "c", "k", 1, "over ps", 7, 0, NULL, NULL), MOMENTO_OK);
    tu_assert_get(c, "c", "k", 1, "over ps", 7);
    assert_int_equal(momento_local_rpc_count(s, "Get", 0), 1);
    momento_client_free(c);

    /* The wrong token: authentication refused, no data. */
    c = ps_tls_client(s, NULL, true, "not-tok");
    assert_int_equal(momento_get_sync(c, "c", "k", 1, NULL, NULL), MOMENTO_ERR_AUTHENTICATION);
    momento_client_free(c);
    assert_int_equal(momento_local_rpc_count(s, "Get", 0), 1);
    momento_local_stop(s);
}

/* Untrusted, and trusted but for another name: refused before any data. */
static void test_protosocket_tls_refusals(void **state)
{
    (void)state;
    momento_local *s = ps_tls_server("good");
    momento_client *c = ps_tls_client(s, NULL, false, "tok");
    assert_refused(s, c);
    s = ps_tls_server("other");
    c = ps_tls_client(s, NULL, true, "tok");
    assert_refused(s, c);
}

/* A private endpoint: dial 127.0.0.1, verify cache.vpc.example (the
 * endpoint's name), as gRPC does with the connect address. */
static void test_protosocket_verifies_the_endpoint_name(void **state)
{
    (void)state;
    momento_local *s = ps_tls_server("vpc");
    char ep[64];
    snprintf(ep, sizeof(ep), "cache.vpc.example:%d", momento_local_port(s));
    momento_client *c = ps_tls_client(s, ep, true, "tok");
    assert_int_equal(momento_set_sync(c, "c", "v", 1, "x", 1, 0, NULL, NULL), MOMENTO_OK);
    momento_client_free(c);
    momento_local_stop(s);
    s = ps_tls_server("good"); /* localhost / 127.0.0.1 only */
    snprintf(ep, sizeof(ep), "cache.vpc.example:%d", momento_local_port(s));
    c = ps_tls_client(s, ep, true, "tok");
    assert_int_equal(momento_set_sync(c, "c", "v", 1, "x", 1, 0, NULL, NULL),
                     MOMENTO_ERR_SERVER_UNAVAILABLE);
    momento_client_free(c);
    momento_local_stop(s);
}

int main(void)
{
    if (system("openssl version >/dev/null 2>&1") != 0) {
        printf("SKIP: the openssl command is not installed; TLS tests need it to make certificates\n");
        return 77;
    }
    /* Before the first grpc_init(): gRPC's http trace, which prints request
     * headers, for test_no_log_line_holds_the_token. */
    setenv("GRPC_TRACE", "http", 1);
    setenv("GRPC_VERBOSITY", "DEBUG", 1);
    if (!mkdtemp(dir) || make_certs() != 0) {
        printf("could not make test certificates in %s\n", dir);
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trusted_ca_connects),
        cmocka_unit_test(test_untrusted_certificate_refused),
        cmocka_unit_test(test_hostname_mismatch_refused),
        cmocka_unit_test(test_plaintext_client_refused),
        cmocka_unit_test(test_roots_file_validation),
        cmocka_unit_test(test_connect_address_verifies_the_endpoint_name),
        cmocka_unit_test(test_tls_without_verification),
        cmocka_unit_test(test_no_log_line_holds_the_token),
        cmocka_unit_test(test_protosocket_over_tls),
        cmocka_unit_test(test_protosocket_tls_refusals),
        cmocka_unit_test(test_protosocket_verifies_the_endpoint_name),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    char cmd[400];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    if (system(cmd) != 0)
        rc = rc ? rc : 1;
    return rc;
}
