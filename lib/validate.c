/* Argument checks at the public boundary (validate.h says which request
 * uses which). */
#include "validate.h"

#include <stddef.h>

#include <string.h>

/* Cache names travel as a gRPC header value and a protobuf string, so they
 * must be valid UTF-8 without control characters. */
static int valid_utf8(const unsigned char *s, size_t n, int controls_ok)
{
    size_t i = 0;
    while (i < n) {
        unsigned char ch = s[i];
        if (ch < 0x80) {
            if (!controls_ok && (ch < 0x20 || ch == 0x7f))
                return 0;
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
            return 0;
        }
        if (i + len > n)
            return 0;
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xC0) != 0x80)
                return 0;
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        /* Reject overlong forms, surrogates and values past U+10FFFF. */
        if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
            (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
            return 0;
        i += len;
    }
    return 1;
}

static int valid_utf8_name(const unsigned char *s, size_t n)
{
    return valid_utf8(s, n, 0);
}

int momento__check_utf8(const void *p, size_t n)
{
    if (!p && n)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    return valid_utf8(p, n, 1) ? 0 : MOMENTO_ERR_INVALID_ARGUMENT;
}

int momento__check_topic_name(const char *topic)
{
    if (!topic)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    size_t n = strnlen(topic, MOMENTO__MAX_REQUEST_BYTES / 2 + 1);
    if (n > MOMENTO__MAX_REQUEST_BYTES / 2 || !valid_utf8((const unsigned char *)topic, n, 1))
        return MOMENTO_ERR_INVALID_ARGUMENT;
    for (size_t i = 0; i < n; i++)
        if (!strchr(" \t\n\r\v\f", topic[i]))
            return MOMENTO_OK;
    return MOMENTO_ERR_INVALID_ARGUMENT; /* empty, or whitespace only */
}

int momento__check_cache_name(const char *cache)
{
    if (!cache)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    size_t n = strnlen(cache, MOMENTO_MAX_CACHE_NAME_BYTES + 1);
    if (n == 0 || n > MOMENTO_MAX_CACHE_NAME_BYTES)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    return valid_utf8_name((const unsigned char *)cache, n) ? 0 : MOMENTO_ERR_INVALID_ARGUMENT;
}

int momento__check_key(const void *key, size_t key_len)
{
    if (!key || key_len == 0 || key_len > MOMENTO_MAX_ITEM_BYTES)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    return 0;
}

int momento__check_item(const void *key, size_t key_len, const void *value, size_t value_len)
{
    MOMENTO__CHECK(momento__check_key(key, key_len));
    if (!value && value_len > 0)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    if (value_len > MOMENTO_MAX_ITEM_BYTES - key_len)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    return 0;
}

int momento__check_ttl(uint64_t ttl_ms)
{
    return ttl_ms > MOMENTO_MAX_TTL_MS ? MOMENTO_ERR_INVALID_ARGUMENT : 0;
}

int momento__check_condition(momento_condition condition, const void *compare,
                             size_t compare_len)
{
    if (condition < MOMENTO_IF_ABSENT || condition > MOMENTO_IF_ABSENT_OR_HASH_NOT_EQUAL)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    if (condition == MOMENTO_IF_ABSENT || condition == MOMENTO_IF_PRESENT)
        return 0; /* nothing to compare */
    if ((!compare && compare_len) || compare_len > MOMENTO_MAX_ITEM_BYTES)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    /* A value may be empty, but a hash never is (the server's hashes are
     * non-empty), so an empty one can only be a caller's mistake. */
    if (condition >= MOMENTO_IF_PRESENT_AND_HASH_EQUAL && compare_len == 0)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    return 0;
}

int momento__check_options(const momento_request_options *opts)
{
    if (!opts)
        return 0;
    /* Fields are only appended: a program built against an older header
     * passes a smaller size (never below the first version's), and one
     * built against a newer header may pass a larger one when the fields
     * this library does not know are left zero (the openat2() rule). */
    size_t first = offsetof(momento_request_options, cancel) + sizeof(opts->cancel);
    if (opts->size < first)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    const unsigned char *tail = (const unsigned char *)opts;
    for (size_t i = sizeof(*opts); i < opts->size; i++)
        if (tail[i])
            return MOMENTO_ERR_INVALID_ARGUMENT;
    if (opts->timeout_ms > MOMENTO__MAX_TIMEOUT_MS)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    int rc_ = MOMENTO__OPT(opts, read_concern);
    if (rc_ < 0 || rc_ > MOMENTO_READ_CONSISTENT)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    int comp = MOMENTO__OPT(opts, compression);
    if (comp < 0 || comp > MOMENTO_COMPRESS_ZSTD)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    return 0;
}

int momento__check_request(const momento_client *c, const momento_request_options *opts,
                           momento_callback cb)
{
    if (!c || !cb)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    return momento__check_options(opts);
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
    if (!keys || !key_lens || n == 0 || n > MOMENTO__MAX_REQUEST_BYTES / 4 ||
        (values && !value_lens))
        return MOMENTO_ERR_INVALID_ARGUMENT;
    MOMENTO__CHECK(momento__check_cache_request(c, cache, opts, cb));
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        MOMENTO__CHECK(values ? momento__check_item(keys[i], key_lens[i], values[i], value_lens[i])
                              : momento__check_key(keys[i], key_lens[i]));
        /* Field tags, lengths and a nested message's own header. */
        total += key_lens[i] + (values ? value_lens[i] + 24 : 8);
        if (total > MOMENTO__MAX_REQUEST_BYTES)
            return MOMENTO_ERR_INVALID_ARGUMENT;
    }
    return 0;
}
