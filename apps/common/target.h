/* What every example shares: where its requests go (--endpoint HOST:PORT,
 * --insecure, MOMENTO_API_KEY, or a local server started in-process) and
 * how it reports a bad option; with --tls-roots, the CA certificates its
 * clients trust. load-gen and request-coalescing reach it through
 * loadgen.h; the other examples use it directly. */
#ifndef EX_TARGET_H
#define EX_TARGET_H

#include "momento/local.h"
#include "momento/momento.h"

#include <getopt.h>
#include <stdbool.h>

/* The --help lines for the target options, the same in every example. */
#define EX_TARGET_HELP                                                                   \
    "Target (default: a local server started in-process on a free loopback port):\n"     \
    "  --endpoint HOST:PORT   a Momento-compatible server at HOST:PORT (TLS)\n"           \
    "  --insecure             plaintext to --endpoint (a local server)\n"                 \
    "  --tls-roots FILE       trust the PEM CA certificates in FILE instead of the\n"     \
    "                         system's, for a TLS server behind a private CA\n"           \
    "  MOMENTO_API_KEY (+ MOMENTO_ENDPOINT) in the environment: Momento itself, TLS\n"   \
    "  --transport grpc|protosocket\n"                                                  \
    "                         what carries get, set and delete (default grpc; every\n"  \
    "                         other call stays on gRPC): protosocket is Momento's\n"     \
    "                         pipelined protobuf-over-TCP protocol\n"                    \
    "  --protosocket-endpoint HOST:PORT\n"                                              \
    "                         where protosocket connects (default: the bundled\n"       \
    "                         server's protosocket port, or cache.<endpoint>:9004\n"    \
    "                         from MOMENTO_API_KEY; needed with --insecure)\n"

/* The target options as an example's getopt_long() table lists them;
 * their codes are above any character so they cannot clash with the
 * example's own. */
enum {
    EX_OPT_ENDPOINT = 0x1000,
    EX_OPT_INSECURE,
    EX_OPT_TLS_ROOTS,
    EX_OPT_TRANSPORT,
    EX_OPT_PS_ENDPOINT
};
#define EX_TARGET_LONGOPTS                                                 \
    {"endpoint", required_argument, NULL, EX_OPT_ENDPOINT},                \
    {"insecure", no_argument, NULL, EX_OPT_INSECURE},                      \
    {"tls-roots", required_argument, NULL, EX_OPT_TLS_ROOTS},              \
    {"transport", required_argument, NULL, EX_OPT_TRANSPORT},              \
    {"protosocket-endpoint", required_argument, NULL, EX_OPT_PS_ENDPOINT}

/* What the target options said. */
typedef struct ex_target_options {
    const char *endpoint;   /* --endpoint HOST:PORT, or NULL */
    bool insecure;          /* --insecure: plaintext to --endpoint */
    const char *tls_roots;  /* --tls-roots FILE, or NULL: the system's roots */
    bool protosocket;       /* --transport protosocket */
    const char *ps_endpoint; /* --protosocket-endpoint HOST:PORT, or NULL */
} ex_target_options;

/* Where requests go. With neither an endpoint nor MOMENTO_API_KEY, a local
 * server is started in-process on a free loopback port. */
typedef struct ex_target {
    momento_local *local;          /* the in-process server, or NULL */
    momento_credentials *creds;
    const char *tls_roots;         /* applied by ex_target_config_new() */
    bool tls;                      /* the connection is TLS */
    bool protosocket;              /* get, set, delete over protosocket */
    char ps_endpoint[320];         /* where, or "": the library's default */
    char description[480];         /* for the program's first line */
} ex_target;

/* Prints "PROG: invalid OPT 'VALUE': WHY (see --help)" to stderr and
 * returns 2, the exit status for a bad option. */
int ex_bad_option(const char *prog, const char *opt, const char *value, const char *why);

/* --cache NAME: 1 .. 255 bytes, kept in *cache. Returns 0, or 2 after
 * printing why not. */
int ex_cache_option(const char *prog, const char *arg, const char **cache);

/* A base-10 integer in [lo, hi], nothing after it. */
bool ex_parse_int(const char *s, long lo, long hi, int *out);

/* Checks --endpoint's value as momento_credentials_local() would take it.
 * Returns 0, or 2 after printing why not. */
int ex_check_endpoint(const char *prog, const char *endpoint);

/* Handles one of the EX_TARGET_LONGOPTS options (`ch` its code, `arg` its
 * value): checks it and records it in `o`. Returns 0, or 2 after printing
 * why not. */
int ex_target_option(const char *prog, int ch, const char *arg, ex_target_options *o);
/* Checks the target options together (--insecure needs --endpoint;
 * --tls-roots needs a TLS target; --protosocket-endpoint needs --transport
 * protosocket, which needs it with --insecure). Returns 0, or 2 after printing why not. */
int ex_check_target(const char *prog, const ex_target_options *o);

/* Sets up the target: credentials for o->endpoint (plaintext when
 * o->insecure, else TLS with an empty token), or from MOMENTO_API_KEY, or a
 * local server started here (with its protosocket port open when
 * o->protosocket, the default protosocket endpoint then). For a TLS target it also sets a log callback
 * that prints the first failed TLS handshake to stderr, naming --tls-roots,
 * since the library drops its diagnostics unless asked and a client that
 * does not trust the server only sees SERVER_UNAVAILABLE. Returns 0 or a
 * negative momento_error after printing why to stderr; on failure nothing is
 * left to close. */
int ex_target_open(ex_target *t, const char *prog, const ex_target_options *o);
/* A new configuration for a client of this target: the library's defaults
 * plus the target's trust roots (--tls-roots) and transport (--transport,
 * --protosocket-endpoint). Every client an example makes
 * starts from one. Returns 0 or a negative momento_error (the caller frees
 * *ret with momento_config_free()). */
int ex_target_config_new(const ex_target *t, momento_config **ret);
/* momento_client_new() with such a configuration and the target's
 * credentials, for an example that sets nothing else. */
int ex_target_client_new(const ex_target *t, momento_client **ret);
/* Frees the credentials, stops the local server, if any, and removes the
 * log callback. */
void ex_target_close(ex_target *t);

#endif
