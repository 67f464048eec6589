/* RESP2 request framing, as Redis reads it: multibulk (`*N` then N `$len`
 * strings, what every client library sends) and inline commands (a line of
 * words, what telnet and redis-cli's inline mode send). No I/O and no
 * state between calls: the fuzzer drives it directly (fuzz/fuzz_resp.c). */
#ifndef PX_RESP_PARSE_H
#define PX_RESP_PARSE_H

#include "px.h"

#include <stddef.h>
#include <sys/types.h>

/* Redis's own limits on what precedes the data. */
#define RESP_MAX_INLINE (64 * 1024)      /* an inline command's line */
#define RESP_MAX_MULTIBULK (1024 * 1024) /* arguments of one command */

/* One parsed command. argv[i] points into the input, or into `scratch`
 * for an inline argument with quotes or escapes; valid until the next
 * parse with the same resp_args. */
typedef struct resp_args {
    int argc;
    px_str *argv;
    int cap;
    char *scratch; /* unescaped inline arguments */
    size_t scratch_cap;
    char errbuf[64]; /* *err when it names a byte of the input */
    /* Bytes of input the parser has looked at, over its life: what a test
     * checks to see that parsing stays linear however the input arrives. */
    size_t scanned;
} resp_args;

/* Parses the first command of p[0, n). Returns the bytes it takes (> 0;
 * argc 0 for an empty command, which Redis skips without a reply), 0 when
 * it is not whole yet, or -1 for a protocol error, with *err the text
 * Redis gives after "-ERR " (the connection is then closed, as Redis
 * does). A bulk longer than max_bulk is a protocol error, as over Redis's
 * proto-max-bulk-len. -2: out of memory. */
ssize_t resp_parse(const char *p, size_t n, size_t max_bulk, resp_args *a, const char **err);

void resp_args_free(resp_args *a);

#endif
