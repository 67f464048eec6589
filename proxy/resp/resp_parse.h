/* RESP2 request framing, as Redis reads it: multibulk (`*N` then N `$len`
 * strings, what every client library sends) and inline commands (a line of
 * words, what telnet and redis-cli's inline mode send). No I/O: the fuzzer
 * drives it directly (fuzz/fuzz_resp.c).
 *
 * Incremental: a command that is not whole yet is parsed as far as it goes
 * and the parse resumes there on the next call, so the cost is linear in
 * the bytes however they arrive (issue 47). The state is offsets from the
 * start of the input, which the caller keeps at the same byte (it consumes
 * whole commands only) but may move between calls. */
#ifndef PX_RESP_PARSE_H
#define PX_RESP_PARSE_H

#include "px.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Redis's own limits on what precedes the data. */
#define RESP_MAX_INLINE (64 * 1024)      /* an inline command's line */
#define RESP_MAX_MULTIBULK (1024 * 1024) /* arguments of one command (Redis 6's bound) */
/* Redis 7's bounds for a client that has not authenticated yet
 * (processMultibulkBuffer's authRequired() checks), applied where Redis
 * applies them: at the `*N` and `$N` lines, before any data is awaited, so
 * that an unauthenticated connection cannot make the proxy hold more than
 * about ten such arguments. */
#define RESP_UNAUTH_MAX_MULTIBULK 10   /* arguments */
#define RESP_UNAUTH_MAX_BULK 16384     /* bytes of one argument */

/* What a connection may send, as the caller knows it at each call. */
typedef struct resp_limits {
    size_t max_bulk;      /* a longer bulk: "invalid bulk length", as over
                             Redis's proto-max-bulk-len */
    bool unauthenticated; /* the connection must still AUTH: Redis's
                             RESP_UNAUTH_* bounds, with their errors */
} resp_limits;

/* One parsed command, and the parse of the next one so far. argv[i]
 * points into the input (multibulk) or into `scratch` (inline: every word
 * is copied there, unescaped); valid until the next call with the same
 * resp_args. Zeroed is the state before the first command. */
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
    /* The unfinished command at the input's start: nothing is recorded per
     * argument until it is whole, so its cost is these few words whatever
     * it announces (argv is listed in one pass once every byte is here). */
    long long count; /* announced arguments; 0 before its `*N` line is read */
    long long seen;  /* arguments whole so far */
    long long bulk;  /* the length of the next argument, once its `$` line is read; else -1 */
    size_t pos;      /* where the next line or argument starts */
    size_t scan;     /* how far the line at `pos` (or the inline command) was searched */
    /* A whole command returned and not yet consumed (resp_parse_done):
     * asked for again, it is returned as it is, with argv moved along
     * with the input. */
    size_t whole;     /* its bytes; 0: none */
    const char *base; /* where the input started when argv was listed */
    bool whole_inline;
} resp_args;

/* Parses the first command of p[0, n). Returns the bytes it takes (> 0;
 * argc 0 for an empty command, which Redis skips without a reply), 0 when
 * it is not whole yet, or -1 for a protocol error, with *err the text
 * Redis gives after "-ERR " (the connection is then closed, as Redis
 * does). A bulk longer than lim->max_bulk is a protocol error, as over
 * Redis's proto-max-bulk-len; with lim->unauthenticated, so is a command
 * of more than RESP_UNAUTH_MAX_MULTIBULK arguments ("unauthenticated
 * multibulk length") or a bulk of more than RESP_UNAUTH_MAX_BULK bytes
 * ("unauthenticated bulk length"). -2: out of memory.
 *
 * Between calls the caller keeps p[0] the same byte of its stream (p
 * itself may change) and n never shrinks, until the command returned is
 * consumed: resp_parse_done(), after which p[0] is the byte after it. A
 * call before that returns the same command again, without parsing it.
 * Each `*N` or `$N` line is checked against the limits of the call that
 * reads it (Redis too checks each line as it comes, against the client's
 * state then). */
ssize_t resp_parse(const char *p, size_t n, const resp_limits *lim, resp_args *a,
                   const char **err);

/* The command resp_parse() returned is consumed: the next call parses the
 * command after it. Gives back an argv grown for a large command. */
void resp_parse_done(resp_args *a);

void resp_args_free(resp_args *a);

#endif
