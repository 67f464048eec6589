/* What every example shares: where its requests go (--endpoint HOST:PORT,
 * --insecure, MOMENTO_API_KEY, or a local server started in-process) and
 * how it reports a bad option. load-gen and request-coalescing reach it
 * through loadgen.h; leaderboard and session-store use it directly. */
#ifndef EX_TARGET_H
#define EX_TARGET_H

#include "momento/local.h"
#include "momento/momento.h"

#include <stdbool.h>

/* The --help lines for the target options, the same in every example. */
#define EX_TARGET_HELP                                                                   \
    "Target (default: a local server started in-process on a free loopback port):\n"     \
    "  --endpoint HOST:PORT   a Momento-compatible server at HOST:PORT (TLS)\n"           \
    "  --insecure             plaintext to --endpoint (a local server)\n"                 \
    "  MOMENTO_API_KEY (+ MOMENTO_ENDPOINT) in the environment: Momento itself, TLS\n"

/* Where requests go. With neither an endpoint nor MOMENTO_API_KEY, a local
 * server is started in-process on a free loopback port. */
typedef struct ex_target {
    momento_local *local;          /* the in-process server, or NULL */
    momento_credentials *creds;
    char description[160];         /* for the program's first line */
} ex_target;

/* Prints "PROG: invalid OPT 'VALUE': WHY (see --help)" to stderr and
 * returns 2, the exit status for a bad option. */
int ex_bad_option(const char *prog, const char *opt, const char *value, const char *why);

/* A base-10 integer in [lo, hi], nothing after it. */
bool ex_parse_int(const char *s, long lo, long hi, int *out);

/* Checks --endpoint's value as momento_credentials_local() would take it.
 * Returns 0, or 2 after printing why not. */
int ex_check_endpoint(const char *prog, const char *endpoint);
/* Checks the target options together (--insecure needs --endpoint).
 * Returns 0, or 2 after printing why not. */
int ex_check_target(const char *prog, const char *endpoint, bool insecure);

/* Sets up the target: credentials for `endpoint` (plaintext when
 * `insecure`, else TLS with an empty token), or from MOMENTO_API_KEY, or a
 * local server started here. Returns 0 or a negative momento_error after
 * printing why to stderr; on failure nothing is left to close. */
int ex_target_open(ex_target *t, const char *endpoint, bool insecure);
/* Frees the credentials and stops the local server, if any. */
void ex_target_close(ex_target *t);

#endif
