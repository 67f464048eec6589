/* libFuzzer target: credential parsing. The input is an API key, optionally
 * followed by a newline and an endpoint. Whatever the bytes, parsing must
 * not crash, must give a reason when it refuses, and the reason must never
 * come from the key: it may not point into the caller's buffer, and a key
 * longer than any reason the library has (real keys are hundreds of bytes)
 * may not appear in it. (A short key such as "endpoint" can coincide with a
 * word of a reason; the first fuzzing run found exactly that.) The JSON and
 * base64 readers and the host:port check get the raw bytes too. */
#include "base/base64.h"
#include "base/json.h"
#include "momento/momento.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size + 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    buf[size] = '\0';
    char *endpoint = memchr(buf, '\n', size);
    if (endpoint)
        *endpoint++ = '\0';

    momento_credentials *c = NULL;
    if (momento_credentials_from_api_key(&c, buf, endpoint) == MOMENTO_OK) {
        if (!*momento_credentials_cache_endpoint(c) || !*momento_credentials_control_endpoint(c))
            abort(); /* accepted credentials always lead somewhere */
        momento_credentials_free(c);
    } else {
        const char *why = momento_refusal_reason();
        if (!*why)
            abort(); /* every refusal says why */
        if (strlen(buf) > 160 && strstr(why, buf))
            abort(); /* a reason that echoes the key */
    }
    if (momento_credentials_local(&c, buf) == MOMENTO_OK)
        momento_credentials_free(c);

    char *value = NULL;
    if (momento__json_get_string((const char *)data, size, "api_key", &value) == 1)
        free(value);
    unsigned char *decoded = NULL;
    size_t decoded_len;
    if (momento__base64_decode((const char *)data, size, &decoded, &decoded_len) == 0) {
        if (decoded_len > size)
            abort();
        free(decoded);
    }
    free(buf);
    return 0;
}
