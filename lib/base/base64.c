/* base64 decoding for v1 API keys (standard alphabet) and JWT parts (URL
 * alphabet). Both alphabets are accepted, padding is optional, and anything
 * else — stray characters, a dangling single symbol, non-zero trailing bits
 * in a padded group count — is malformed, so a truncated key is caught here
 * rather than as confusing JSON later. */
#include "base/base64.h"

#include "base/alloc.h"

#include <stdint.h>

#include <stdlib.h>

static int sextet(unsigned char ch)
{
    if (ch >= 'A' && ch <= 'Z')
        return ch - 'A';
    if (ch >= 'a' && ch <= 'z')
        return ch - 'a' + 26;
    if (ch >= '0' && ch <= '9')
        return ch - '0' + 52;
    if (ch == '+' || ch == '-')
        return 62;
    if (ch == '/' || ch == '_')
        return 63;
    return -1;
}

int momento__base64_decode(const char *in, size_t in_len, unsigned char **ret, size_t *ret_len)
{
    size_t n = in_len;
    size_t pad = 0;
    while (n > 0 && in[n - 1] == '=' && pad < 2) {
        n--;
        pad++;
    }
    if (pad && (n + pad) % 4 != 0)
        return -1;
    if (n % 4 == 1)
        return -1; /* six bits cannot make a byte: the input was cut short */

    unsigned char *out = momento__malloc(n / 4 * 3 + 3 + 1);
    if (!out)
        return -2;
    size_t o = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < n; i++) {
        int v = sextet((unsigned char)in[i]);
        if (v < 0) {
            free(out);
            return -1;
        }
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (unsigned char)(acc >> bits);
            acc &= (1u << bits) - 1;
        }
    }
    if (acc != 0) { /* leftover bits must be zero in a well-formed encoding */
        free(out);
        return -1;
    }
    out[o] = '\0';
    *ret = out;
    *ret_len = o;
    return 0;
}
