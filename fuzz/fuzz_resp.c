/* libFuzzer target: the proxy's RESP2 request framing (proxy/resp_parse.c)
 * on arbitrary bytes, as a client's stream. Besides memory errors it checks
 * what the connection relies on: a command's size never exceeds the input,
 * every argument lies inside the input or the scratch buffer, and a whole
 * command cut short by one byte reads as incomplete, not as something
 * else (what makes parsing across reads come out the same). */
#include "resp_parse.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_BULK (1u << 20)

static void check_args(const resp_args *a, const char *p, size_t n)
{
    for (int i = 0; i < a->argc; i++) {
        const char *s = a->argv[i].p;
        bool in_input = s >= p && s + a->argv[i].n <= p + n;
        bool in_scratch = a->scratch && s >= a->scratch &&
                          s + a->argv[i].n <= a->scratch + a->scratch_cap;
        if (!in_input && !in_scratch)
            abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *)data;
    resp_args a = {0}, b = {0};
    size_t off = 0;
    for (int cmds = 0; off < size && cmds < 10000; cmds++) {
        const char *err = NULL;
        ssize_t n = resp_parse(p + off, size - off, MAX_BULK, &a, &err);
        if (n == 0)
            break;
        if (n < 0) {
            if (n == -1 && !err)
                abort(); /* a protocol error always says why */
            break;
        }
        if ((size_t)n > size - off)
            abort();
        check_args(&a, p + off, (size_t)n);
        if ((size_t)n <= RESP_MAX_INLINE) {
            const char *err2 = NULL;
            if (resp_parse(p + off, (size_t)n - 1, MAX_BULK, &b, &err2) > 0)
                abort(); /* a shorter input cannot hold the same command */
        }
        off += (size_t)n;
    }
    resp_args_free(&a);
    resp_args_free(&b);
    return 0;
}
