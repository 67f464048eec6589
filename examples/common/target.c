/* Where an example's requests go, and its option errors (target.h). */
#include "target.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ex_bad_option(const char *prog, const char *opt, const char *value, const char *why)
{
    fprintf(stderr, "%s: invalid %s '%s': %s (see --help)\n", prog, opt, value, why);
    return 2;
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
    const char *why = NULL;
    if (momento_credentials_local(&probe, endpoint, &why) != MOMENTO_OK)
        return ex_bad_option(prog, "--endpoint", endpoint, why ? why : "not HOST:PORT");
    momento_credentials_free(probe);
    return 0;
}

int ex_check_target(const char *prog, const char *endpoint, bool insecure)
{
    if (insecure && !endpoint)
        return ex_bad_option(prog, "option", "--insecure", "goes with --endpoint");
    return 0;
}

int ex_target_open(ex_target *t, const char *endpoint, bool insecure)
{
    memset(t, 0, sizeof(*t));
    const char *why = NULL;
    int rc;
    if (endpoint) {
        rc = insecure ? momento_credentials_local(&t->creds, endpoint, &why)
                      : momento_credentials_with_endpoints(&t->creds, "", endpoint, endpoint, &why);
        snprintf(t->description, sizeof(t->description), "%s (%s)", endpoint,
                 insecure ? "plaintext" : "TLS");
    } else if (getenv("MOMENTO_API_KEY")) {
        rc = momento_credentials_from_env(&t->creds, &why);
        if (rc == MOMENTO_OK)
            snprintf(t->description, sizeof(t->description), "Momento at %s",
                     momento_credentials_cache_endpoint(t->creds));
    } else {
        rc = momento_local_start(&t->local, NULL);
        if (rc == MOMENTO_OK)
            rc = momento_credentials_local(&t->creds, momento_local_endpoint(t->local), &why);
        if (rc == MOMENTO_OK)
            snprintf(t->description, sizeof(t->description),
                     "the bundled local server at %s (no --endpoint or MOMENTO_API_KEY given)",
                     momento_local_endpoint(t->local));
    }
    if (rc != MOMENTO_OK) {
        fprintf(stderr, "cannot set up the target: %s\n", why ? why : momento_strerror(rc));
        ex_target_close(t);
    }
    return rc;
}

void ex_target_close(ex_target *t)
{
    momento_credentials_free(t->creds);
    momento_local_stop(t->local);
    memset(t, 0, sizeof(*t));
}
