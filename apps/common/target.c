/* Where an example's requests go, its trust roots, and its option errors
 * (target.h). */
#include "target.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ex_bad_option(const char *prog, const char *opt, const char *value, const char *why)
{
    fprintf(stderr, "%s: invalid %s '%s': %s (see --help)\n", prog, opt, value, why);
    return 2;
}

int ex_cache_option(const char *prog, const char *arg, const char **cache)
{
    if (!*arg || strlen(arg) > MOMENTO_MAX_CACHE_NAME_BYTES)
        return ex_bad_option(prog, "--cache", arg, "must be 1 to 255 bytes");
    *cache = arg;
    return 0;
}

bool ex_parse_int(const char *s, long lo, long hi, int *out)
{
    char *end;
    if (!s || !*s)
        return false;
    long v = strtol(s, &end, 10);
    if (*end || v < lo || v > hi)
        return false;
    *out = (int)v;
    return true;
}

int ex_check_endpoint(const char *prog, const char *endpoint)
{
    /* The library's own parser decides, so an example accepts exactly the
     * endpoints the library does. */
    momento_credentials *probe;
    if (momento_credentials_local(&probe, endpoint) != MOMENTO_OK)
        return ex_bad_option(prog, "--endpoint", endpoint, momento_refusal_reason());
    momento_credentials_free(probe);
    return 0;
}

int ex_target_option(const char *prog, int ch, const char *arg, ex_target_options *o)
{
    switch (ch) {
    case EX_OPT_ENDPOINT:
        if (ex_check_endpoint(prog, arg))
            return 2;
        o->endpoint = arg;
        return 0;
    case EX_OPT_INSECURE: o->insecure = true; return 0;
    case EX_OPT_TRANSPORT:
        if (strcmp(arg, "grpc") != 0 && strcmp(arg, "protosocket") != 0)
            return ex_bad_option(prog, "--transport", arg, "must be grpc or protosocket");
        o->protosocket = strcmp(arg, "protosocket") == 0;
        return 0;
    case EX_OPT_PS_ENDPOINT: {
        /* As for --tls-roots: the library's own setter decides now. */
        momento_config *probe;
        int rc = momento_config_new(&probe);
        if (rc == MOMENTO_OK)
            rc = momento_config_set_protosocket_endpoint(probe, arg);
        momento_config_free(probe);
        if (rc != MOMENTO_OK)
            return ex_bad_option(prog, "--protosocket-endpoint", arg, "must be HOST:PORT");
        o->ps_endpoint = arg;
        return 0;
    }
    case EX_OPT_TLS_ROOTS: {
        /* The library reads the file when it is set; setting it on a probe
         * configuration now turns a missing or wrong file into an option
         * error rather than a failure after the target is up. */
        momento_config *probe;
        int rc = momento_config_new(&probe);
        if (rc == MOMENTO_OK)
            rc = momento_config_set_tls_roots_file(probe, arg);
        momento_config_free(probe);
        if (rc != MOMENTO_OK)
            return ex_bad_option(prog, "--tls-roots", arg,
                                 "cannot be read, or holds no PEM certificate");
        o->tls_roots = arg;
        return 0;
    }
    default: return ex_bad_option(prog, "option", "?", "not a target option");
    }
}

int ex_check_target(const char *prog, const ex_target_options *o)
{
    if (o->insecure && !o->endpoint)
        return ex_bad_option(prog, "option", "--insecure", "goes with --endpoint");
    if (o->tls_roots && o->insecure)
        return ex_bad_option(prog, "option", "--tls-roots",
                             "is for TLS, and --insecure is plaintext");
    if (o->tls_roots && !o->endpoint && !getenv("MOMENTO_API_KEY"))
        return ex_bad_option(prog, "option", "--tls-roots",
                             "needs a TLS target (--endpoint without --insecure, or "
                             "MOMENTO_API_KEY); the bundled server is plaintext");
    if (o->ps_endpoint && !o->protosocket)
        return ex_bad_option(prog, "option", "--protosocket-endpoint",
                             "goes with --transport protosocket");
    /* A plaintext server's address says nothing of its protosocket port
     * (Momento's is cache.<endpoint>:9004, a local server's is its own). */
    if (o->protosocket && o->insecure && !o->ps_endpoint)
        return ex_bad_option(prog, "option", "--transport protosocket",
                             "with --insecure needs --protosocket-endpoint HOST:PORT");
    return 0;
}

/* The log callback is process-wide, so what it reports is too. */
static const char *log_prog;
static char log_target[128];
static const char *log_roots;
static atomic_bool handshake_reported;

/* Runs on any thread, gRPC's included; prints only the first failed
 * handshake (a client retries, and each attempt fails the same way). */
static void on_log(momento_log_level level, const char *message, void *ud)
{
    (void)ud;
    if (level != MOMENTO_LOG_ERROR || !strstr(message, "Handshake failed") ||
        atomic_exchange(&handshake_reported, true))
        return;
    fprintf(stderr, "%s: TLS handshake with %s failed: %s\n", log_prog, log_target, message);
    /* OpenSSL's words for a peer that answered in plaintext: no CA file
     * helps there, the server is not speaking TLS at all. */
    if (strstr(message, "wrong version number") || strstr(message, "packet length too long") ||
        strstr(message, "http request") || strstr(message, "unknown protocol"))
        fprintf(stderr, "%s: %s does not speak TLS; a plaintext server (momento-local without "
                        "--tls-cert) needs --insecure\n",
                log_prog, log_target);
    else if (log_roots)
        fprintf(stderr, "%s: is %s the CA that signed the server's certificate, and does the "
                        "certificate name the host you connect to?\n",
                log_prog, log_roots);
    else
        fprintf(stderr, "%s: the system's CA certificates do not vouch for the server; if its "
                        "certificate comes from a private CA, pass it with --tls-roots FILE\n",
                log_prog);
}

/* The bundled server, on free loopback ports: gRPC's, and protosocket's
 * when that transport is asked for (its address the default endpoint). */
static int start_local(ex_target *t, bool protosocket)
{
    momento_local_options *lo = NULL;
    int rc = momento_local_options_new(&lo);
    if (rc == MOMENTO_OK && protosocket)
        rc = momento_local_options_set_protosocket_port(lo, 0);
    if (rc == MOMENTO_OK)
        rc = momento_local_start(&t->local, lo);
    momento_local_options_free(lo);
    if (rc == MOMENTO_OK)
        rc = momento_credentials_local(&t->creds, momento_local_endpoint(t->local));
    if (rc != MOMENTO_OK)
        return rc;
    if (protosocket) {
        /* The gRPC endpoint's host, the protosocket port. */
        const char *ep = momento_local_endpoint(t->local);
        const char *colon = strrchr(ep, ':');
        snprintf(t->ps_endpoint, sizeof(t->ps_endpoint), "%.*s:%d",
                 (int)(colon ? colon - ep : (ptrdiff_t)strlen(ep)), ep,
                 momento_local_protosocket_port(t->local));
    }
    snprintf(t->description, sizeof(t->description),
             "the bundled local server at %s (no --endpoint or MOMENTO_API_KEY given)",
             momento_local_endpoint(t->local));
    return MOMENTO_OK;
}

int ex_target_open(ex_target *t, const char *prog, const ex_target_options *o)
{
    memset(t, 0, sizeof(*t));
    int rc;
    const char *endpoint = o->endpoint;
    if (endpoint) {
        rc = o->insecure ? momento_credentials_local(&t->creds, endpoint)
                         : momento_credentials_with_endpoints(&t->creds, "", endpoint, endpoint);
        snprintf(t->description, sizeof(t->description), "%s (%s%s)", endpoint,
                 o->insecure ? "plaintext" : "TLS", o->tls_roots ? ", trusting --tls-roots" : "");
    } else if (getenv("MOMENTO_API_KEY")) {
        rc = momento_credentials_from_env(&t->creds);
        if (rc == MOMENTO_OK)
            snprintf(t->description, sizeof(t->description), "Momento at %s%s",
                     momento_credentials_cache_endpoint(t->creds),
                     o->tls_roots ? " (trusting --tls-roots)" : "");
    } else {
        rc = start_local(t, o->protosocket);
    }
    if (rc == MOMENTO_OK && o->protosocket) {
        if (o->ps_endpoint)
            snprintf(t->ps_endpoint, sizeof(t->ps_endpoint), "%s", o->ps_endpoint);
        size_t n = strlen(t->description);
        snprintf(t->description + n, sizeof(t->description) - n,
                 "; get, set and delete over protosocket to %s",
                 t->ps_endpoint[0] ? t->ps_endpoint : "cache.<endpoint>:9004");
    }
    if (rc != MOMENTO_OK) {
        fprintf(stderr, "cannot set up the target: %s %s\n", momento_strerror(rc),
                momento_refusal_reason());
        ex_target_close(t);
        return rc;
    }
    t->tls_roots = o->tls_roots;
    t->protosocket = o->protosocket;
    t->tls = momento_credentials_uses_tls(t->creds) == 1;
    if (t->tls) {
        log_prog = prog;
        snprintf(log_target, sizeof(log_target), "%s", momento_credentials_cache_endpoint(t->creds));
        log_roots = o->tls_roots;
        atomic_store(&handshake_reported, false);
        momento_set_log_callback(on_log, NULL);
    }
    return rc;
}

int ex_target_config_new(const ex_target *t, momento_config **ret)
{
    momento_config *cfg;
    int rc = momento_config_new(&cfg);
    if (rc != MOMENTO_OK)
        return rc;
    if (t->tls_roots)
        rc = momento_config_set_tls_roots_file(cfg, t->tls_roots);
    if (rc == MOMENTO_OK && t->protosocket)
        rc = momento_config_set_transport(cfg, MOMENTO_TRANSPORT_PROTOSOCKET);
    if (rc == MOMENTO_OK && t->ps_endpoint[0])
        rc = momento_config_set_protosocket_endpoint(cfg, t->ps_endpoint);
    if (rc != MOMENTO_OK) {
        momento_config_free(cfg);
        return rc;
    }
    *ret = cfg;
    return MOMENTO_OK;
}

int ex_target_client_new(const ex_target *t, momento_client **ret)
{
    momento_config *cfg;
    int rc = ex_target_config_new(t, &cfg);
    if (rc != MOMENTO_OK)
        return rc;
    rc = momento_client_new(ret, cfg, t->creds);
    momento_config_free(cfg);
    return rc;
}

void ex_target_close(ex_target *t)
{
    if (t->tls)
        momento_set_log_callback(NULL, NULL);
    momento_credentials_free(t->creds);
    momento_local_stop(t->local);
    memset(t, 0, sizeof(*t));
}
