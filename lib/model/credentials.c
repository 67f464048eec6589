/* Credentials: which token to send and which endpoints to call, derived from
 * the three key formats Momento has issued (docs/protocol.md "Credentials
 * and key formats"). Reasons for rejection are static strings so no part of
 * a secret can ever reach an error message. */
#include "model/credentials.h"

#include "momento/tokens.h"

#include "base/alloc.h"
#include "base/base64.h"
#include "base/json.h"
#include "model/validate.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *dup_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = momento__malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

/* A token travels as the `authorization` header: a control or non-ASCII
 * character would make gRPC refuse every call and write the header, token
 * and all, into its log. NULL when the token is usable, else why not. */
static const char *check_token(const char *token)
{
    for (const char *p = token; *p; p++)
        if ((unsigned char)*p < ' ' || (unsigned char)*p >= 0x7f)
            return "the token contains a control or non-ASCII character";
    return NULL;
}

/* Why credentials were refused, for momento_refusal_reason(): the one
 * channel every refusal of the library uses. `why` is static and never
 * holds any part of the key. */
static void set_reason(const char *why)
{
    momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT, "%s", why);
}

/* Refuses the call: `why` for momento_refusal_reason(), and the code. */
static int invalid(const char *why)
{
    set_reason(why);
    return MOMENTO_ERR_INVALID_ARGUMENT;
}

void momento__credentials_clear(momento_credentials *c)
{
    free(c->token);
    free(c->cache_endpoint);
    free(c->control_endpoint);
    free(c->token_endpoint);
    free(c->base);
    memset(c, 0, sizeof(*c));
}

int momento__credentials_copy(momento_credentials *dst, const momento_credentials *src)
{
    memset(dst, 0, sizeof(*dst));
    dst->token = dup_str(src->token);
    dst->cache_endpoint = dup_str(src->cache_endpoint);
    dst->control_endpoint = dup_str(src->control_endpoint);
    dst->token_endpoint = dup_str(src->token_endpoint);
    dst->base = src->base ? dup_str(src->base) : NULL;
    dst->tls = src->tls;
    if (!dst->token || !dst->cache_endpoint || !dst->control_endpoint || !dst->token_endpoint ||
        (src->base && !dst->base)) {
        momento__credentials_clear(dst);
        return MOMENTO_ERR_NO_MEMORY;
    }
    return MOMENTO_OK;
}

/* A base endpoint is a DNS name: letters, digits, '-' and '.', no scheme,
 * port, path or spaces. */
static const char *check_base_endpoint(const char *e)
{
    if (!*e)
        return "the endpoint is empty";
    if (strlen(e) > 253)
        return "the endpoint is longer than a DNS name can be";
    for (const char *p = e; *p; p++) {
        char ch = *p;
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '-' || ch == '.'))
            return "the endpoint must be a host name such as cell-1.prod.a.momentohq.com "
                   "(no scheme, port or path)";
    }
    if (e[0] == '.' || e[0] == '-')
        return "the endpoint must be a host name such as cell-1.prod.a.momentohq.com "
               "(no scheme, port or path)";
    return NULL;
}

const char *momento__check_host_port(const char *s)
{
    if (!s || !*s)
        return "the endpoint is empty";
    const char *colon;
    if (s[0] == '[') {
        const char *close = strchr(s, ']');
        if (!close || close == s + 1)
            return "an IPv6 endpoint must look like [::1]:8080";
        if (close[1] != ':')
            return "the endpoint has no port (expected host:port)";
        colon = close + 1;
    } else {
        colon = strrchr(s, ':');
        if (!colon)
            return "the endpoint has no port (expected host:port)";
        if (colon == s)
            return "the endpoint has no host (expected host:port)";
        if (memchr(s, ':', (size_t)(colon - s)))
            return "an IPv6 endpoint must be in brackets, as in [::1]:8080";
        for (const char *p = s; p < colon; p++)
            if (*p == ' ' || *p == '/' || *p == '\t')
                return "the endpoint's host has a space or slash in it";
    }
    const char *port = colon + 1;
    if (!*port)
        return "the endpoint has no port (expected host:port)";
    long v = 0;
    for (const char *p = port; *p; p++) {
        if (*p < '0' || *p > '9')
            return "the endpoint's port is not a number";
        v = v * 10 + (*p - '0');
        if (v > 65535)
            return "the endpoint's port is out of range (1-65535)";
    }
    if (v == 0)
        return "the endpoint's port is out of range (1-65535)";
    return NULL;
}

static char *join_host(const char *prefix, const char *host)
{
    size_t n = strlen(prefix) + strlen(host) + sizeof(":443");
    char *out = momento__malloc(n);
    if (out)
        snprintf(out, n, "%s%s:443", prefix, host);
    return out;
}

/* Momento names its token service token.<base> beside control.<base>
 * (docs/protocol.md "Credentials and key formats"); any other control
 * endpoint (a local server, a proxy) is taken to answer it too. */
static char *token_endpoint_for(const char *control_ep)
{
    if (!control_ep)
        return NULL;
    if (strncmp(control_ep, "control.", 8) != 0)
        return dup_str(control_ep);
    size_t n = strlen(control_ep) - 8 + sizeof("token.");
    char *out = momento__malloc(n);
    if (out)
        snprintf(out, n, "token.%s", control_ep + 8);
    return out;
}

/* Takes `cache_ep` and `control_ep` (either may be NULL, an allocation that
 * failed): they are the new credentials', or freed. */
static int make_creds(momento_credentials **ret, const char *token, char *cache_ep,
                      char *control_ep, int tls)
{
    momento_credentials *c = momento__calloc(1, sizeof(*c));
    if (!c) {
        free(cache_ep);
        free(control_ep);
        return MOMENTO_ERR_NO_MEMORY;
    }
    c->cache_endpoint = cache_ep;
    c->control_endpoint = control_ep;
    c->token = dup_str(token);
    c->token_endpoint = token_endpoint_for(control_ep);
    c->tls = tls;
    /* Whatever was made is freed by the one function that knows the
     * fields, not by a second list of them here. */
    if (!c->token || !c->cache_endpoint || !c->control_endpoint || !c->token_endpoint) {
        momento_credentials_free(c);
        return MOMENTO_ERR_NO_MEMORY;
    }
    *ret = c;
    return MOMENTO_OK;
}

/* What a key says about itself. Strings are malloc'd; NULL when absent. */
typedef struct {
    char *token;
    char *endpoint;     /* base endpoint (v1 keys) */
    char *cache_host;   /* legacy claim "c" */
    char *control_host; /* legacy claim "cp" */
} key_info;

static void key_info_clear(key_info *k)
{
    free(k->token);
    free(k->endpoint);
    free(k->cache_host);
    free(k->control_host);
}

/* A JWT: three base64url parts; the claims are the middle one. */
static int parse_jwt(const char *key, key_info *k, const char **why)
{
    const char *d1 = strchr(key, '.');
    const char *d2 = d1 ? strchr(d1 + 1, '.') : NULL;
    if (!d1 || !d2 || strchr(d2 + 1, '.')) {
        *why = "the API key is neither a JWT nor a base64-encoded v1 key";
        return MOMENTO_ERR_INVALID_ARGUMENT;
    }
    unsigned char *claims;
    size_t claims_len;
    int rc = momento__base64_decode(d1 + 1, (size_t)(d2 - d1 - 1), &claims, &claims_len);
    if (rc == -2)
        return MOMENTO_ERR_NO_MEMORY;
    if (rc < 0) {
        *why = "the API key's JWT claims are not valid base64url";
        return MOMENTO_ERR_INVALID_ARGUMENT;
    }
    char *type = NULL;
    int r1 = momento__json_get_string((char *)claims, claims_len, "c", &k->cache_host);
    int r2 = momento__json_get_string((char *)claims, claims_len, "cp", &k->control_host);
    int r3 = momento__json_get_string((char *)claims, claims_len, "t", &type);
    free(claims);
    free(type);
    if (r1 == -2 || r2 == -2 || r3 == -2)
        return MOMENTO_ERR_NO_MEMORY;
    if (r1 < 0) {
        *why = "the API key's JWT claims are not a JSON object";
        return MOMENTO_ERR_INVALID_ARGUMENT;
    }
    k->token = dup_str(key);
    return k->token ? MOMENTO_OK : MOMENTO_ERR_NO_MEMORY;
}

/* A v1 key: base64 of {"api_key": ..., "endpoint": ...}. */
static int parse_v1(const char *key, key_info *k, const char **why)
{
    unsigned char *json;
    size_t json_len;
    int rc = momento__base64_decode(key, strlen(key), &json, &json_len);
    if (rc == -2)
        return MOMENTO_ERR_NO_MEMORY;
    if (rc < 0) {
        *why = "the API key is not a JWT, and as a v1 key it is not valid base64 "
               "(truncated or corrupted?)";
        return MOMENTO_ERR_INVALID_ARGUMENT;
    }
    int r1 = momento__json_get_string((char *)json, json_len, "api_key", &k->token);
    int r2 = momento__json_get_string((char *)json, json_len, "endpoint", &k->endpoint);
    free(json);
    if (r1 == -2 || r2 == -2)
        return MOMENTO_ERR_NO_MEMORY;
    if (r1 < 0) {
        *why = "the v1 API key does not decode to a JSON object";
        return MOMENTO_ERR_INVALID_ARGUMENT;
    }
    if (r1 == 0 || !*k->token) {
        *why = "the v1 API key has no \"api_key\" string";
        return MOMENTO_ERR_INVALID_ARGUMENT;
    }
    if (check_token(k->token)) {
        *why = "the v1 API key's \"api_key\" contains a control or non-ASCII character";
        return MOMENTO_ERR_INVALID_ARGUMENT;
    }
    if (r2 == 0) {
        *why = "the v1 API key has no \"endpoint\" string";
        return MOMENTO_ERR_INVALID_ARGUMENT;
    }
    return MOMENTO_OK;
}

int momento_credentials_from_api_key(momento_credentials **ret, const char *api_key,
                                     const char *endpoint)
{
    momento__refusal_clear(); /* a success leaves "", not an older reason */
    if (!ret || !api_key)
        return invalid("a required argument is NULL");
    if (!*api_key)
        return invalid("the API key is empty");
    for (const char *p = api_key; *p; p++) {
        if ((unsigned char)*p <= ' ' || (unsigned char)*p >= 0x7f)
            return invalid("the API key contains whitespace or a non-ASCII character");
    }
    if (endpoint) {
        const char *why = check_base_endpoint(endpoint);
        if (why)
            return invalid(why);
    }

    key_info k = {0};
    const char *why = NULL;
    int rc = strchr(api_key, '.') ? parse_jwt(api_key, &k, &why) : parse_v1(api_key, &k, &why);
    if (rc == MOMENTO_OK) {
        char *cache_ep = NULL, *control_ep = NULL;
        const char *base = endpoint ? endpoint : k.endpoint;
        if (base) {
            if (!endpoint && (why = check_base_endpoint(base)) != NULL) {
                why = "the endpoint inside the v1 API key is not a valid host name";
                rc = MOMENTO_ERR_INVALID_ARGUMENT;
            } else {
                cache_ep = join_host("cache.", base);
                control_ep = join_host("control.", base);
            }
        } else if (k.cache_host && k.control_host) {
            if (check_base_endpoint(k.cache_host) || check_base_endpoint(k.control_host)) {
                why = "the legacy token's \"c\"/\"cp\" claims are not valid host names";
                rc = MOMENTO_ERR_INVALID_ARGUMENT;
            } else {
                cache_ep = join_host("", k.cache_host);
                control_ep = join_host("", k.control_host);
            }
        } else {
            why = "the API key carries no endpoint: set MOMENTO_ENDPOINT or pass an endpoint "
                  "(legacy tokens need both \"c\" and \"cp\" claims)";
            rc = MOMENTO_ERR_INVALID_ARGUMENT;
        }
        momento_credentials *made = NULL;
        if (rc == MOMENTO_OK)
            rc = make_creds(&made, k.token, cache_ep, control_ep, 1);
        if (rc == MOMENTO_OK && base && !(made->base = dup_str(base))) {
            momento_credentials_free(made); /* *ret stays untouched on failure */
            rc = MOMENTO_ERR_NO_MEMORY;
        } else if (rc == MOMENTO_OK) {
            *ret = made;
        } else if (rc != MOMENTO_ERR_NO_MEMORY) {
            free(cache_ep);
            free(control_ep);
        }
    }
    key_info_clear(&k);
    if (rc == MOMENTO_ERR_NO_MEMORY)
        why = "out of memory";
    if (rc != MOMENTO_OK)
        set_reason(why);
    return rc;
}

/* Whether `host_port` (already checked as host:port) names this machine:
 * localhost, 127.0.0.0/8 or [::1]. */
static bool loopback(const char *host_port)
{
    if (strncmp(host_port, "localhost:", 10) == 0 || strncmp(host_port, "[::1]:", 6) == 0)
        return true;
    unsigned a, b, c, d;
    char colon;
    return sscanf(host_port, "%u.%u.%u.%u%c", &a, &b, &c, &d, &colon) == 5 && colon == ':' &&
           a == 127 && b < 256 && c < 256 && d < 256;
}

int momento_credentials_from_env(momento_credentials **ret)
{
    momento__refusal_clear(); /* a success leaves "", not an older reason */
    const char *key = getenv("MOMENTO_API_KEY");
    const char *endpoint = getenv("MOMENTO_ENDPOINT");
    if (key && !*key)
        key = NULL;
    if (endpoint && !*endpoint)
        endpoint = NULL;
    /* A host:port is a local server (momento-local), plaintext: only on
     * this machine, where no key travels over a network in the clear. */
    if (endpoint && strchr(endpoint, ':')) {
        if (!ret)
            return invalid("a required argument is NULL");
        const char *why = momento__check_host_port(endpoint);
        if (why)
            return invalid(why);
        if (!loopback(endpoint)) {
            return invalid("MOMENTO_ENDPOINT is a host:port that is not this machine: a host:port "
                           "is taken for a local server (plaintext), on localhost, 127.x.x.x or "
                           "[::1] only; Momento's endpoints are host names without a port");
        }
        return momento_credentials_local_with_key(ret, endpoint, key ? key : "");
    }
    if (!key)
        return invalid("MOMENTO_API_KEY is not set");
    return momento_credentials_from_api_key(ret, key, endpoint);
}

int momento_credentials_local(momento_credentials **ret, const char *host_port)
{
    momento__refusal_clear(); /* a success leaves "", not an older reason */
    if (!ret || !host_port)
        return invalid("a required argument is NULL");
    const char *why = momento__check_host_port(host_port);
    if (why)
        return invalid(why);
    int rc = make_creds(ret, "", dup_str(host_port), dup_str(host_port), 0);
    if (rc != MOMENTO_OK)
        set_reason("out of memory");
    return rc;
}

int momento__key_field(const char *api_key, char **ret)
{
    *ret = NULL;
    unsigned char *json;
    size_t json_len;
    int rc = momento__base64_decode(api_key, strlen(api_key), &json, &json_len);
    if (rc != 0)
        return rc == -2 ? -2 : 0; /* not base64: a bare token */
    char *field = NULL;
    int got = momento__json_get_string((char *)json, json_len, "api_key", &field);
    memset(json, 0, json_len);
    free(json);
    if (got == 1) {
        *ret = field;
        return 1;
    }
    free(field);
    return got == -2 ? -2 : 0;
}

/* Declared in tokens.h, beside the disposable tokens whose keys it takes;
 * here so that momento_credentials_from_env() can make the same. */
int momento_credentials_local_with_key(momento_credentials **ret, const char *host_port,
                                       const char *api_key)
{
    momento__refusal_clear(); /* a success leaves "", not an older reason */
    if (!ret || !host_port || !api_key)
        return invalid("a required argument is NULL");
    /* A key in the v1 form carries its token as "api_key"; anything else is
     * taken to be the bare token. */
    char *token;
    int rc = momento__key_field(api_key, &token);
    if (rc == -2)
        goto no_memory;
    const char *sent = token ? token : api_key;
    for (const char *p = sent; *p; p++) {
        if ((unsigned char)*p <= ' ' || (unsigned char)*p >= 0x7f) {
            free(token);
            return invalid("the key's token contains whitespace or a non-ASCII character");
        }
    }
    momento_credentials *creds;
    rc = momento_credentials_local(&creds, host_port);
    if (rc != MOMENTO_OK) {
        free(token);
        return rc;
    }
    char *copy = token;
    if (!copy && (copy = momento__malloc(strlen(api_key) + 1)))
        memcpy(copy, api_key, strlen(api_key) + 1);
    if (!copy) {
        momento_credentials_free(creds);
        goto no_memory;
    }
    free(creds->token);
    creds->token = copy;
    *ret = creds;
    return MOMENTO_OK;

no_memory:
    set_reason("out of memory");
    return MOMENTO_ERR_NO_MEMORY;
}

int momento_credentials_with_endpoints(momento_credentials **ret, const char *token,
                                       const char *cache_host_port, const char *control_host_port)
{
    momento__refusal_clear(); /* a success leaves "", not an older reason */
    if (!ret || !token || !cache_host_port || !control_host_port)
        return invalid("a required argument is NULL");
    const char *why = momento__check_host_port(cache_host_port);
    if (!why)
        why = momento__check_host_port(control_host_port);
    if (why)
        return invalid(why);
    if ((why = check_token(token)) != NULL)
        return invalid(why);
    int rc = make_creds(ret, token, dup_str(cache_host_port), dup_str(control_host_port), 1);
    if (rc != MOMENTO_OK)
        set_reason("out of memory");
    return rc;
}

void momento_credentials_free(momento_credentials *creds)
{
    if (!creds)
        return;
    momento__credentials_clear(creds);
    free(creds);
}

const char *momento_credentials_cache_endpoint(const momento_credentials *creds)
{
    return creds ? creds->cache_endpoint : "";
}

const char *momento_credentials_control_endpoint(const momento_credentials *creds)
{
    return creds ? creds->control_endpoint : "";
}

int momento_credentials_uses_tls(const momento_credentials *creds)
{
    return creds ? creds->tls : 0;
}

int momento_credentials_set_endpoint_prefix(momento_credentials *c, const char *prefix)
{
    momento__refusal_clear();
    if (!c || !prefix)
        return invalid("a required argument is NULL");
    if (!c->base)
        return invalid("these credentials name their endpoints one by one: there is no base "
                       "endpoint to prefix");
    /* One DNS label: 1 to 63 letters, digits or '-', not at either end. */
    size_t n = strlen(prefix);
    bool ok = n >= 1 && n <= 63 && prefix[0] != '-' && prefix[n - 1] != '-';
    for (size_t i = 0; ok && i < n; i++)
        ok = isalnum((unsigned char)prefix[i]) || prefix[i] == '-';
    if (!ok)
        return invalid("the endpoint prefix is not one DNS label (1-63 letters, digits or '-')");
    /* As the JS SDK: <prefix>.cache.<base>, <prefix>.control.<base>,
     * <prefix>.token.<base>. */
    char *p[3] = {NULL, NULL, NULL};
    const char *what[3] = {"cache.", "control.", "token."};
    for (int i = 0; i < 3; i++) {
        size_t len = n + 1 + strlen(what[i]) + strlen(c->base) + sizeof(":443");
        if ((p[i] = momento__malloc(len)) != NULL)
            snprintf(p[i], len, "%s.%s%s:443", prefix, what[i], c->base);
    }
    if (!p[0] || !p[1] || !p[2]) {
        for (int i = 0; i < 3; i++)
            free(p[i]);
        set_reason("out of memory");
        return MOMENTO_ERR_NO_MEMORY;
    }
    free(c->cache_endpoint);
    free(c->control_endpoint);
    free(c->token_endpoint);
    c->cache_endpoint = p[0];
    c->control_endpoint = p[1];
    c->token_endpoint = p[2];
    return MOMENTO_OK;
}
