/* base64 for the v1 API key format (base64.c). */
#ifndef MOMENTO_BASE64_H
#define MOMENTO_BASE64_H

#include <stddef.h>

/* base64 (standard or URL alphabet, padding optional) → newly allocated
 * bytes plus a NUL. Returns 0, or -1 for malformed input, -2 for no memory. */
int momento__base64_decode(const char *in, size_t in_len, unsigned char **ret, size_t *ret_len);

#endif
