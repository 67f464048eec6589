/* Credential parsing and endpoint derivation for every key format, and the
 * rejections: each must name what is wrong and never echo the key. */
#include "base/base64.h"
#include "base/json.h"
#include "model/credentials.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *b64(const char *in, int url)
{
    static const char *std = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    static const char *urlsafe =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    const char *alpha = url ? urlsafe : std;
    size_t n = strlen(in);
    char *out = malloc(n / 3 * 4 + 8);
    size_t o = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)(unsigned char)in[i] << 16;
        if (i + 1 < n)
            v |= (uint32_t)(unsigned char)in[i + 1] << 8;
        if (i + 2 < n)
            v |= (unsigned char)in[i + 2];
        out[o++] = alpha[(v >> 18) & 63];
        out[o++] = alpha[(v >> 12) & 63];
        if (i + 1 < n)
            out[o++] = alpha[(v >> 6) & 63];
        else if (!url)
            out[o++] = '=';
        if (i + 2 < n)
            out[o++] = alpha[v & 63];
        else if (!url)
            out[o++] = '=';
    }
    out[o] = '\0';
    return out;
}

static char *jwt(const char *claims)
{
    char *h = b64("{\"alg\":\"HS256\"}", 1);
    char *p = b64(claims, 1);
    char *out = malloc(strlen(h) + strlen(p) + 16);
    sprintf(out, "%s.%s.c2lnbmF0dXJl", h, p);
    free(h);
    free(p);
    return out;
}

static void expect_reject(const char *key, const char *endpoint, const char *reason_part)
{
    momento_credentials *c = (momento_credentials *)0x1;
    assert_int_equal(momento_credentials_from_api_key(&c, key, endpoint),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_ptr_equal(c, (momento_credentials *)0x1); /* untouched on failure */
    assert_true(*momento_refusal_reason()); /* not "" */
    if (reason_part && !strstr(momento_refusal_reason(), reason_part))
        fail_msg("reason '%s' does not mention '%s'", momento_refusal_reason(), reason_part);
    if (key && strlen(key) > 8 && strstr(momento_refusal_reason(), key))
        fail_msg("reason echoes the key");
}

/* A v1 key of `json` (standard base64) is refused, saying `reason_part`. */
static void expect_reject_v1(const char *json, const char *reason_part)
{
    char *key = b64(json, 0);
    expect_reject(key, NULL, reason_part);
    free(key);
}

/* Credentials from a v1 key of `json` (base64; `url`: base64url, as b64())
 * and `endpoint`, asserting success. The caller frees them. */
static momento_credentials *v1_credentials(const char *json, int url, const char *endpoint)
{
    char *key = b64(json, url);
    momento_credentials *c = NULL;
    assert_int_equal(momento_credentials_from_api_key(&c, key, endpoint), MOMENTO_OK);
    free(key);
    return c;
}

static void test_v1_key(void **state)
{
    (void)state;
    const char *json = "{\"endpoint\":\"cell-1.example.com\",\"api_key\":\"tok-123\"}";
    momento_credentials *c = v1_credentials(json, 0, NULL);
    assert_string_equal(momento_credentials_cache_endpoint(c), "cache.cell-1.example.com:443");
    assert_string_equal(momento_credentials_control_endpoint(c), "control.cell-1.example.com:443");
    assert_string_equal(c->token, "tok-123");
    assert_int_equal(momento_credentials_uses_tls(c), 1);
    momento_credentials_free(c);

    /* An explicit endpoint overrides the key's own. */
    c = v1_credentials(json, 0, "other.example.org");
    assert_string_equal(momento_credentials_cache_endpoint(c), "cache.other.example.org:443");
    assert_string_equal(c->token, "tok-123");
    momento_credentials_free(c);
}

/* The SDKs' endpointPrefix: <prefix>.cache.<base> and its siblings, for
 * credentials made from a base endpoint only; a bad prefix leaves them as
 * they were. */
static void test_endpoint_prefix(void **state)
{
    (void)state;
    const char *json = "{\"endpoint\":\"cell-1.example.com\",\"api_key\":\"tok-123\"}";
    momento_credentials *c = v1_credentials(json, 0, NULL);
    assert_int_equal(momento_credentials_set_endpoint_prefix(c, "vpc"), MOMENTO_OK);
    assert_string_equal(momento_credentials_cache_endpoint(c), "vpc.cache.cell-1.example.com:443");
    assert_string_equal(momento_credentials_control_endpoint(c),
                        "vpc.control.cell-1.example.com:443");
    assert_string_equal(c->token_endpoint, "vpc.token.cell-1.example.com:443");
    /* A copy keeps the base: a second prefix replaces the first. */
    momento_credentials copy;
    assert_int_equal(momento__credentials_copy(&copy, c), MOMENTO_OK);
    assert_int_equal(momento_credentials_set_endpoint_prefix(&copy, "p-2"), MOMENTO_OK);
    assert_string_equal(copy.cache_endpoint, "p-2.cache.cell-1.example.com:443");
    momento__credentials_clear(&copy);
    const char *bad[] = {"", "-a", "a-", "a.b", "a b", "0123456789012345678901234567890123456789012345678901234567890123"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(momento_credentials_set_endpoint_prefix(c, bad[i]),
                         MOMENTO_ERR_INVALID_ARGUMENT);
        assert_non_null(strstr(momento_refusal_reason(), "DNS label"));
        assert_string_equal(momento_credentials_cache_endpoint(c),
                            "vpc.cache.cell-1.example.com:443");
    }
    assert_int_equal(momento_credentials_set_endpoint_prefix(NULL, "vpc"),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_credentials_set_endpoint_prefix(c, NULL), MOMENTO_ERR_INVALID_ARGUMENT);
    momento_credentials_free(c);
    /* With an explicit endpoint, that is the base. */
    c = v1_credentials(json, 0, "other.example.org");
    assert_int_equal(momento_credentials_set_endpoint_prefix(c, "x"), MOMENTO_OK);
    assert_string_equal(momento_credentials_cache_endpoint(c), "x.cache.other.example.org:443");
    momento_credentials_free(c);
    /* Endpoints named one by one have no base. */
    assert_int_equal(momento_credentials_local(&c, "127.0.0.1:8080"), MOMENTO_OK);
    assert_int_equal(momento_credentials_set_endpoint_prefix(c, "vpc"),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(momento_refusal_reason(), "no base"));
    assert_string_equal(momento_credentials_cache_endpoint(c), "127.0.0.1:8080");
    momento_credentials_free(c);
}

static void test_v1_key_escapes_and_unpadded(void **state)
{
    (void)state;
    momento_credentials *c =
        v1_credentials("{\"api_key\":\"a\\\"b\\u0041\",\"endpoint\":\"e.example.com\"}", 1, NULL);
    assert_string_equal(c->token, "a\"bA");
    momento_credentials_free(c);
}

/* A v1 key's token goes out as the `authorization` header: a control or
 * non-ASCII character in it (JSON escapes reach any) is refused at parse
 * time, as it is for momento_credentials_with_endpoints(), rather than
 * failing every request and putting the header into gRPC's log. */
static void test_v1_token_characters(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "tok\\u0001en", "tok\\ten", "tok\\u007fen", "tok\\u00e9n", "tok\\nen",
        "tok\xc3\xa9n",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char json[128];
        snprintf(json, sizeof(json), "{\"api_key\":\"%s\",\"endpoint\":\"e.example.com\"}", bad[i]);
        expect_reject_v1(json, "control or non-ASCII");
    }
    /* U+0000 would cut the token short; the key is refused whole. */
    expect_reject_v1("{\"api_key\":\"tok\\u0000en\",\"endpoint\":\"e.example.com\"}", "JSON");
    /* Every printable ASCII character is a usable token character. */
    momento_credentials *c = v1_credentials(
        "{\"api_key\":\"a ~!#$%&'()*+,-./:;<=>?@[]^_`{|}z\",\"endpoint\":\"e.example.com\"}", 0, NULL);
    momento_credentials_free(c);
    /* The other constructors apply the same rule. */
    assert_int_equal(momento_credentials_with_endpoints(&c, "t\x01k", "h:1", "h:1"),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(momento_refusal_reason(), "control or non-ASCII"));
    assert_int_equal(momento_credentials_from_api_key(&c, "a.b\x7f.c", "e.example.com"),
                     MOMENTO_ERR_INVALID_ARGUMENT);
}

static void test_legacy_jwt(void **state)
{
    (void)state;
    char *key = jwt("{\"sub\":\"x\",\"c\":\"cache.cell-9.example.com\",\"cp\":\"control.cell-9.example.com\"}");
    momento_credentials *c = NULL;
    assert_int_equal(momento_credentials_from_api_key(&c, key, NULL), MOMENTO_OK);
    assert_string_equal(momento_credentials_cache_endpoint(c), "cache.cell-9.example.com:443");
    assert_string_equal(momento_credentials_control_endpoint(c), "control.cell-9.example.com:443");
    assert_string_equal(c->token, key); /* the whole JWT is the token */
    momento_credentials_free(c);
    free(key);
}

static void test_current_key_needs_endpoint(void **state)
{
    (void)state;
    char *key = jwt("{\"t\":\"g\",\"id\":\"abc\"}");
    expect_reject(key, NULL, "endpoint");
    momento_credentials *c = NULL;
    assert_int_equal(momento_credentials_from_api_key(&c, key, "cell-4-us-west-2-1.prod.a.momentohq.com"),
                     MOMENTO_OK);
    assert_string_equal(momento_credentials_cache_endpoint(c),
                        "cache.cell-4-us-west-2-1.prod.a.momentohq.com:443");
    assert_string_equal(momento_credentials_control_endpoint(c),
                        "control.cell-4-us-west-2-1.prod.a.momentohq.com:443");
    assert_string_equal(c->token, key);
    momento_credentials_free(c);
    free(key);
}

static void test_from_env(void **state)
{
    (void)state;
    char *key = jwt("{\"t\":\"g\"}");
    setenv("MOMENTO_API_KEY", key, 1);
    setenv("MOMENTO_ENDPOINT", "env.example.com", 1);
    momento_credentials *c = NULL;
    assert_int_equal(momento_credentials_from_env(&c), MOMENTO_OK);
    assert_string_equal(momento_credentials_cache_endpoint(c), "cache.env.example.com:443");
    momento_credentials_free(c);
    unsetenv("MOMENTO_API_KEY");
    assert_int_equal(momento_credentials_from_env(&c), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(momento_refusal_reason(), "MOMENTO_API_KEY"));
    unsetenv("MOMENTO_ENDPOINT");
    free(key);
}

/* MOMENTO_ENDPOINT=host:port on this machine: a local server, plaintext,
 * with or without a key; elsewhere, refused. */
static void test_from_env_local(void **state)
{
    (void)state;
    unsetenv("MOMENTO_API_KEY");
    const char *local[] = {"127.0.0.1:8080", "localhost:9", "[::1]:8080", "127.9.9.9:1"};
    for (size_t i = 0; i < sizeof(local) / sizeof(local[0]); i++) {
        setenv("MOMENTO_ENDPOINT", local[i], 1);
        momento_credentials *c = NULL;
        assert_int_equal(momento_credentials_from_env(&c), MOMENTO_OK);
        assert_string_equal(momento_refusal_reason(), ""); /* no older reason */
        assert_string_equal(momento_credentials_cache_endpoint(c), local[i]);
        assert_string_equal(momento_credentials_control_endpoint(c), local[i]);
        assert_int_equal(momento_credentials_uses_tls(c), 0);
        assert_string_equal(c->token, "");
        momento_credentials_free(c);
    }
    /* A key, when set, is sent (a server with --auth-token). */
    setenv("MOMENTO_API_KEY", "tok-local", 1);
    setenv("MOMENTO_ENDPOINT", "127.0.0.1:8080", 1);
    momento_credentials *c = NULL;
    assert_int_equal(momento_credentials_from_env(&c), MOMENTO_OK);
    assert_string_equal(c->token, "tok-local");
    momento_credentials_free(c);
    /* Not this machine, or not a host:port: refused, saying why. */
    const char *refused[][2] = {
        {"10.0.0.1:8080", "not this machine"},
        {"example.com:443", "not this machine"},
        {"128.0.0.1:80", "not this machine"},
        {"127.0.0.1:", "port"},
        {"127.0.0.1:99999", "port"},
    };
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        setenv("MOMENTO_ENDPOINT", refused[i][0], 1);
        c = (momento_credentials *)0x1;
        assert_int_equal(momento_credentials_from_env(&c), MOMENTO_ERR_INVALID_ARGUMENT);
        assert_ptr_equal(c, (momento_credentials *)0x1); /* untouched */
        assert_true(*momento_refusal_reason()); /* not "" */
        if (!strstr(momento_refusal_reason(), refused[i][1]))
            fail_msg("%s: reason \"%s\" does not say \"%s\"", refused[i][0],
                     momento_refusal_reason(), refused[i][1]);
    }
    unsetenv("MOMENTO_API_KEY");
    unsetenv("MOMENTO_ENDPOINT");
}

static void test_rejections(void **state)
{
    (void)state;
    expect_reject("", NULL, "empty");
    expect_reject(NULL, NULL, "NULL");
    char *v1 = b64("{\"api_key\":\"secret-token-value\",\"endpoint\":\"e.example.com\"}", 0);
    /* Truncated base64: cut one symbol so six bits dangle. */
    v1[strlen(v1) - 3] = '\0';
    expect_reject(v1, NULL, "base64");
    free(v1);
    expect_reject("abc$def", NULL, "base64");
    expect_reject_v1("{\"api_key\": \"x\", ", "JSON");
    expect_reject_v1("{\"api_key\":\"secret-token-value\"}", "endpoint");
    expect_reject_v1("{\"endpoint\":\"e.example.com\"}", "api_key");
    expect_reject_v1("[1,2,3]", "JSON");
    /* JWTs: claims missing, claims not JSON, two parts only. */
    char *claimless = jwt("{}");
    expect_reject(claimless, NULL, "endpoint");
    free(claimless);
    expect_reject("aGVhZGVy.!!!.c2ln", NULL, "base64url");
    char *notjson = malloc(64);
    char *p = b64("not json at all", 1);
    sprintf(notjson, "aGVhZGVy.%s.c2ln", p);
    expect_reject(notjson, NULL, "JSON");
    free(p);
    free(notjson);
    expect_reject("only.two", NULL, "JWT");
    expect_reject("key with space", NULL, "whitespace");
    /* Bad explicit endpoints. */
    char *cur = jwt("{\"t\":\"g\"}");
    expect_reject(cur, "", "empty");
    expect_reject(cur, "https://cell.example.com", "host name");
    expect_reject(cur, "cell.example.com:443", "host name");
    free(cur);
}

static void test_local_endpoints(void **state)
{
    (void)state;
    momento_credentials *c = NULL;
    assert_int_equal(momento_credentials_local(&c, "127.0.0.1:8080"), MOMENTO_OK);
    assert_string_equal(momento_credentials_cache_endpoint(c), "127.0.0.1:8080");
    assert_string_equal(momento_credentials_control_endpoint(c), "127.0.0.1:8080");
    assert_int_equal(momento_credentials_uses_tls(c), 0);
    assert_string_equal(c->token, "");
    momento_credentials_free(c);
    assert_int_equal(momento_credentials_local(&c, "[::1]:9"), MOMENTO_OK);
    momento_credentials_free(c);
    assert_int_equal(momento_credentials_local(&c, "localhost:1"), MOMENTO_OK);
    momento_credentials_free(c);

    static const char *bad[] = {"", "127.0.0.1", "127.0.0.1:", ":8080", "127.0.0.1:0",
                                "127.0.0.1:65536", "127.0.0.1:80x", "::1:8080", "[::1]8080",
                                "[]:80", "host name:80", "127.0.0.1:99999999999"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        c = NULL;
        assert_int_equal(momento_credentials_local(&c, bad[i]), MOMENTO_ERR_INVALID_ARGUMENT);
        assert_null(c);
        assert_true(*momento_refusal_reason()); /* not "" */
    }
    assert_int_equal(momento_credentials_local(NULL, "127.0.0.1:1"), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_credentials_local(&c, NULL), MOMENTO_ERR_INVALID_ARGUMENT);
    momento_credentials_free(NULL);
}

static void test_base64_edges(void **state)
{
    (void)state;
    unsigned char *out;
    size_t n;
    assert_int_equal(momento__base64_decode("aGk=", 4, &out, &n), 0);
    assert_int_equal(n, 2);
    assert_memory_equal(out, "hi", 2);
    free(out);
    assert_int_equal(momento__base64_decode("aGk", 3, &out, &n), 0);
    free(out);
    assert_int_equal(momento__base64_decode("aGl", 3, &out, &n), -1); /* stray bits */
    assert_int_equal(momento__base64_decode("a", 1, &out, &n), -1);
    assert_int_equal(momento__base64_decode("aG=k", 4, &out, &n), -1);
    assert_int_equal(momento__base64_decode("aGk==", 5, &out, &n), -1);
}

static void test_json_edges(void **state)
{
    (void)state;
    char *v = NULL;
    const char *doc = "{\"a\": [1, {\"b\": \"x\"}], \"b\": \"\\ud83d\\ude00\", \"n\": null}";
    assert_int_equal(momento__json_get_string(doc, strlen(doc), "b", &v), 1);
    assert_string_equal(v, "\xf0\x9f\x98\x80");
    free(v);
    assert_int_equal(momento__json_get_string(doc, strlen(doc), "n", &v), 0);
    assert_int_equal(momento__json_get_string(doc, strlen(doc), "zz", &v), 0);
    const char *broken = "{\"b\": \"x\"";
    assert_int_equal(momento__json_get_string(broken, strlen(broken), "b", &v), -1);
    const char *trailing = "{\"b\": \"x\"} junk";
    assert_int_equal(momento__json_get_string(trailing, strlen(trailing), "b", &v), -1);
    char deep[200];
    memset(deep, '[', sizeof(deep));
    deep[0] = '{';
    assert_int_equal(momento__json_get_string(deep, sizeof(deep), "b", &v), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_v1_key),
        cmocka_unit_test(test_endpoint_prefix),
        cmocka_unit_test(test_v1_key_escapes_and_unpadded),
        cmocka_unit_test(test_v1_token_characters),
        cmocka_unit_test(test_legacy_jwt),
        cmocka_unit_test(test_current_key_needs_endpoint),
        cmocka_unit_test(test_from_env),
        cmocka_unit_test(test_from_env_local),
        cmocka_unit_test(test_rejections),
        cmocka_unit_test(test_local_endpoints),
        cmocka_unit_test(test_base64_edges),
        cmocka_unit_test(test_json_edges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
