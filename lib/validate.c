/* Argument checks at the public boundary: a request that fails one is never
 * sent, and its caller gets MOMENTO_ERR_INVALID_ARGUMENT with no callback. */
#include "internal.h"

#include <string.h>

/* Cache names travel as a gRPC header value and a protobuf string, so they
 * must be valid UTF-8 without control characters. */
static int valid_utf8_name(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned char ch = s[i];
        if (ch < 0x80) {
            if (ch < 0x20 || ch == 0x7f)
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
    if (momento__check_key(key, key_len) < 0)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    if (!value && value_len > 0)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    if (value_len > MOMENTO_MAX_ITEM_BYTES - key_len)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    return 0;
}
