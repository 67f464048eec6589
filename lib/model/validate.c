/* Argument checks at the public boundary (validate.h says which request
 * uses which). */
#include "model/validate.h"

#include "model/group.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* Why this thread's last refused call was refused (momento_refusal_reason). */
static _Thread_local char refusal[256];

int momento__refuse(int err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(refusal, sizeof(refusal), fmt, ap);
    va_end(ap);
    return err;
}

void momento__refusal_clear(void)
{
    refusal[0] = '\0';
}

const char *momento_refusal_reason(void)
{
    return refusal;
}

/* Where the first byte that breaks UTF-8 (or, unless `controls_ok`, is a
 * control character) is, or `n` when there is none. */
static size_t utf8_problem(const unsigned char *s, size_t n, int controls_ok)
{
    size_t i = 0;
    while (i < n) {
        unsigned char ch = s[i];
        if (ch < 0x80) {
            if (!controls_ok && (ch < 0x20 || ch == 0x7f))
                return i;
            i++;
            continue;
        }
        size_t len;
        uint32_t cp;
        if ((ch & 0xE0) == 0xC0) {
            len = 2;
            cp = ch & 0x1F;
        } else if ((ch & 0xF0) == 0xE0) {
            len = 3;
            cp = ch & 0x0F;
        } else if ((ch & 0xF8) == 0xF0) {
            len = 4;
            cp = ch & 0x07;
        } else {
            return i;
        }
        if (i + len > n)
            return i;
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xC0) != 0x80)
                return i;
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        /* Reject overlong forms, surrogates and values past U+10FFFF. */
        if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
            (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
            return i;
        i += len;
    }
    return n;
}

#define INVALID MOMENTO_ERR_INVALID_ARGUMENT

/* Headers the library sends itself, and gRPC's own: a request header may
 * not replace them. */
static const char *const reserved_headers[] = {
    "authorization", "cache", "agent", "runtime-version", "read-concern",
    "content-type",  "te",    "user-agent", "host",       NULL};

#define MAX_HEADER_NAME 64
#define MAX_HEADER_VALUE 1024

/* What is wrong with a request's headers, or NULL (a static text). */
static const char *headers_problem(const momento_header *h, size_t n)
{
    if (n == 0)
        return NULL;
    if (!h)
        return "headers is NULL with n_headers > 0";
    if (n > MOMENTO_MAX_REQUEST_HEADERS)
        return "more than MOMENTO_MAX_REQUEST_HEADERS headers";
    for (size_t i = 0; i < n; i++) {
        const char *why = momento__header_problem(h[i].name, h[i].value);
        if (why)
            return why;
    }
    return NULL;
}

const char *momento__header_problem(const char *name, const char *value)
{
    if (!name || !value)
        return "a header's name or value is NULL";
    size_t len = strnlen(name, MAX_HEADER_NAME + 1);
    if (len == 0 || len > MAX_HEADER_NAME)
        return "a header name is empty or over 64 bytes";
    /* gRPC metadata keys: lowercase; no "-bin" (values here are text). */
    for (size_t k = 0; k < len; k++)
        if (!((name[k] >= 'a' && name[k] <= 'z') || (name[k] >= '0' && name[k] <= '9') ||
              name[k] == '-' || name[k] == '_' || name[k] == '.'))
            return "a header name has a character other than a-z 0-9 - _ .";
    if (strncmp(name, "grpc-", 5) == 0 || (len > 4 && strcmp(name + len - 4, "-bin") == 0))
        return "a header name is gRPC's (grpc-*) or binary (-bin)";
    for (const char *const *r = reserved_headers; *r; r++)
        if (strcmp(name, *r) == 0)
            return "a header name is one the library or gRPC sends itself";
    size_t vlen = strnlen(value, MAX_HEADER_VALUE + 1);
    if (vlen > MAX_HEADER_VALUE)
        return "a header value is over 1024 bytes";
    for (size_t k = 0; k < vlen; k++)
        if ((unsigned char)value[k] < 0x20 || (unsigned char)value[k] > 0x7e)
            return "a header value has a byte outside printable ASCII";
    return NULL;
}

bool momento__is_utf8(const void *p, size_t n)
{
    return (p || !n) && utf8_problem(p, n, 1) == n;
}

int momento__check_utf8(const void *p, size_t n)
{
    if (!p && n)
        return momento__refuse(INVALID, "a text argument is NULL with a length of %zu", n);
    size_t at = utf8_problem(p, n, 1);
    if (at < n)
        return momento__refuse(INVALID, "text is not valid UTF-8 at byte %zu (0x%02x)", at,
                               ((const unsigned char *)p)[at]);
    return 0;
}

int momento__check_topic_name(const char *topic)
{
    if (!topic)
        return momento__refuse(INVALID, "the topic name is NULL");
    size_t n = strnlen(topic, MOMENTO__MAX_REQUEST_BYTES / 2 + 1);
    if (n > MOMENTO__MAX_REQUEST_BYTES / 2)
        return momento__refuse(INVALID, "the topic name is over %d bytes",
                               MOMENTO__MAX_REQUEST_BYTES / 2);
    size_t at = utf8_problem((const unsigned char *)topic, n, 1);
    if (at < n)
        return momento__refuse(INVALID, "the topic name is not valid UTF-8 at byte %zu", at);
    for (size_t i = 0; i < n; i++)
        if (!strchr(" \t\n\r\v\f", topic[i]))
            return MOMENTO_OK;
    return momento__refuse(INVALID, n ? "the topic name is only whitespace"
                                      : "the topic name is empty");
}

int momento__check_cache_name(const char *cache)
{
    if (!cache)
        return momento__refuse(INVALID, "the cache name is NULL");
    size_t n = strnlen(cache, MOMENTO_MAX_CACHE_NAME_BYTES + 1);
    if (n == 0)
        return momento__refuse(INVALID, "the cache name is empty");
    if (n > MOMENTO_MAX_CACHE_NAME_BYTES)
        return momento__refuse(INVALID, "the cache name is %zu bytes, over the limit of %d",
                               strlen(cache), MOMENTO_MAX_CACHE_NAME_BYTES);
    /* It travels as a gRPC header value and a protobuf string: valid UTF-8
     * without control characters. */
    size_t at = utf8_problem((const unsigned char *)cache, n, 0);
    if (at < n) {
        unsigned char ch = (unsigned char)cache[at];
        if (ch < 0x20 || ch == 0x7f)
            return momento__refuse(INVALID,
                                   "the cache name has a control character (0x%02x) at byte %zu",
                                   ch, at);
        return momento__refuse(INVALID, "the cache name is not valid UTF-8 at byte %zu", at);
    }
    return 0;
}

int momento__check_key(const void *key, size_t key_len)
{
    if (!key)
        return momento__refuse(INVALID, "the key is NULL");
    if (key_len == 0)
        return momento__refuse(INVALID, "the key is empty");
    if (key_len > MOMENTO_MAX_ITEM_BYTES)
        return momento__refuse(INVALID,
                               "the key is %zu bytes, over Momento's item limit of %u bytes "
                               "(MOMENTO_MAX_ITEM_BYTES)",
                               key_len, (unsigned)MOMENTO_MAX_ITEM_BYTES);
    return 0;
}

int momento__check_item(const void *key, size_t key_len, const void *value, size_t value_len)
{
    MOMENTO__CHECK(momento__check_key(key, key_len));
    if (!value && value_len > 0)
        return momento__refuse(INVALID, "the value is NULL with a length of %zu", value_len);
    if (value_len > MOMENTO_MAX_ITEM_BYTES - key_len)
        return momento__refuse(INVALID,
                               "key + value are %zu bytes, over Momento's item limit of %u bytes "
                               "(MOMENTO_MAX_ITEM_BYTES), which every Momento server refuses "
                               "(LIMIT_EXCEEDED, item_size_limit_exceeded): not sent",
                               key_len + value_len, (unsigned)MOMENTO_MAX_ITEM_BYTES);
    return 0;
}

int momento__check_ttl(uint64_t ttl_ms)
{
    if (ttl_ms > MOMENTO_MAX_TTL_MS)
        return momento__refuse(INVALID, "the TTL of %llu ms is over MOMENTO_MAX_TTL_MS",
                               (unsigned long long)ttl_ms);
    return 0;
}

int momento__check_condition(momento_condition condition, const void *compare,
                             size_t compare_len)
{
    if (condition < MOMENTO_IF_ABSENT || condition > MOMENTO_IF_ABSENT_OR_HASH_NOT_EQUAL)
        return momento__refuse(INVALID, "unknown condition %d", (int)condition);
    if (condition == MOMENTO_IF_ABSENT || condition == MOMENTO_IF_PRESENT)
        return 0; /* nothing to compare */
    if (!compare && compare_len)
        return momento__refuse(INVALID, "the value to compare is NULL with a length of %zu",
                               compare_len);
    if (compare_len > MOMENTO_MAX_ITEM_BYTES)
        return momento__refuse(INVALID, "the value to compare is over MOMENTO_MAX_ITEM_BYTES");
    /* A value may be empty, but a hash never is (the server's hashes are
     * non-empty), so an empty one can only be a caller's mistake. */
    if (condition >= MOMENTO_IF_PRESENT_AND_HASH_EQUAL && compare_len == 0)
        return momento__refuse(INVALID, "the hash to compare is empty");
    return 0;
}

int momento__check_options(const momento_request_options *opts)
{
    if (!opts)
        return 0;
    const char *bad = momento__options_problem(opts);
    return bad ? momento__refuse(INVALID, "request options: %s", bad) : 0;
}

const char *momento__options_problem(const momento_request_options *opts)
{
    /* Fields are only appended: a program built against an older header
     * passes a smaller size (never below the first version's), and one
     * built against a newer header may pass a larger one when the fields
     * this library does not know are left zero (the openat2() rule). */
    size_t first = offsetof(momento_request_options, cancel) + sizeof(opts->cancel);
    if (opts->size < first)
        return "`size` is below the first version's (use MOMENTO_REQUEST_OPTIONS_INIT)";
    const unsigned char *tail = (const unsigned char *)opts;
    for (size_t i = sizeof(*opts); i < opts->size; i++)
        if (tail[i])
            return "fields this library does not know are set (a newer header)";
    if (opts->timeout_ms > MOMENTO__MAX_TIMEOUT_MS)
        return "timeout_ms is over 86,400,000";
    int rc_ = MOMENTO__OPT(opts, read_concern);
    if (rc_ < 0 || rc_ > MOMENTO_READ_CONSISTENT)
        return "read_concern is not a momento_read_concern";
    int comp = MOMENTO__OPT(opts, compression);
    if (comp < 0 || comp > MOMENTO_COMPRESS_ZSTD)
        return "compression is not a momento_compression";
    return headers_problem(MOMENTO__OPT(opts, headers), MOMENTO__OPT(opts, n_headers));
}

int momento__check_request(const momento_client *c, const momento_request_options *opts,
                           momento_callback cb)
{
    /* Every request's checks start here: a refusal after it that names no
     * reason must not show an earlier call's. */
    momento__refusal_clear();
    if (!c)
        return momento__refuse(INVALID, "the client is NULL");
    if (!cb)
        return momento__refuse(INVALID, "the callback is NULL");
    MOMENTO__CHECK(momento__check_options(opts));
    /* A group counts one client's requests: another's would never let its
     * wait end while the group's client runs (or would name a freed one). */
    const momento_request_group *g = MOMENTO__OPT(opts, group);
    if (g && g->client != c)
        return momento__refuse(INVALID,
                               "request options: the group belongs to another client "
                               "(momento_request_group_new() of this one)");
    return 0;
}

int momento__check_cache_request(const momento_client *c, const char *cache,
                                 const momento_request_options *opts, momento_callback cb)
{
    MOMENTO__CHECK(momento__check_request(c, opts, cb));
    return momento__check_cache_name(cache);
}

int momento__check_key_request(const momento_client *c, const char *cache, const void *key,
                               size_t key_len, const momento_request_options *opts,
                               momento_callback cb)
{
    MOMENTO__CHECK(momento__check_cache_request(c, cache, opts, cb));
    return momento__check_key(key, key_len);
}

int momento__check_item_request(const momento_client *c, const char *cache, const void *key,
                                size_t key_len, const void *value, size_t value_len,
                                uint64_t ttl_ms, const momento_request_options *opts,
                                momento_callback cb)
{
    MOMENTO__CHECK(momento__check_cache_request(c, cache, opts, cb));
    MOMENTO__CHECK(momento__check_item(key, key_len, value, value_len));
    return momento__check_ttl(ttl_ms);
}

int momento__check_keys_request(const momento_client *c, const char *cache, const void *const *keys,
                                const size_t *key_lens, const void *const *values,
                                const size_t *value_lens, size_t n,
                                const momento_request_options *opts, momento_callback cb)
{
    MOMENTO__CHECK(momento__check_cache_request(c, cache, opts, cb));
    if (!keys || !key_lens || (values && !value_lens))
        return momento__refuse(INVALID, "the array of keys, of their lengths or of the values' "
                                        "lengths is NULL");
    if (n == 0)
        return momento__refuse(INVALID, "no keys");
    if (n > MOMENTO__MAX_REQUEST_BYTES / 4)
        return momento__refuse(INVALID, "%zu keys are more than one request can carry", n);
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        MOMENTO__CHECK(values ? momento__check_item(keys[i], key_lens[i], values[i], value_lens[i])
                              : momento__check_key(keys[i], key_lens[i]));
        /* Field tags, lengths and a nested message's own header. */
        total += key_lens[i] + (values ? value_lens[i] + 24 : 8);
        if (total > MOMENTO__MAX_REQUEST_BYTES)
            return momento__refuse(INVALID, "the request would be over %d bytes",
                                   MOMENTO__MAX_REQUEST_BYTES);
    }
    return 0;
}
