/* faults: driving momento-local's fault injection from your own program.
 *
 * momento-local fails, delays or cuts calls that carry certain request
 * headers (docs/server.md, "Fault injection"); a request's options carry
 * headers (momento_request_options.headers). So a test of an application's
 * error handling needs nothing private:
 *   1. a get that fails once with UNAVAILABLE is retried and succeeds;
 *   2. a get that the server refuses with PERMISSION_DENIED, every time;
 *   3. a get held 2 s by the server, with a 200 ms deadline: a timeout.
 * Each prints what the application sees. It starts momento-local
 * in-process on a free loopback port (fault injection is momento-local's,
 * not Momento's). */
#include "momento/local.h"
#include "momento/momento.h"

#include <stdio.h>
#include <string.h>

static int run(momento_client *c, const char *what, const momento_header *h, size_t n,
               uint32_t timeout_ms, int expect)
{
    momento_request_options o = MOMENTO_REQUEST_OPTIONS_INIT;
    o.headers = h;
    o.n_headers = n;
    o.timeout_ms = timeout_ms;
    momento_result *r = NULL;
    int rc = momento_get_sync(c, "faults", "k", 1, &o, &r);
    printf("%-36s -> %s after %d attempt(s)%s%s\n", what, momento_error_name(rc),
           momento_result_attempts(r), *momento_result_message(r) ? ": " : "",
           momento_result_message(r));
    momento_result_free(r);
    return rc == expect ? 0 : 1;
}

int main(void)
{
    momento_local_options *o = NULL;
    momento_local *local = NULL;
    momento_credentials *creds = NULL;
    momento_client *c = NULL;
    int rc = momento_local_options_new(&o);
    if (rc == MOMENTO_OK)
        rc = momento_local_options_add_cache(o, "faults");
    if (rc == MOMENTO_OK)
        rc = momento_local_start(&local, o);
    momento_local_options_free(o);
    if (rc == MOMENTO_OK)
        rc = momento_credentials_local(&creds, momento_local_endpoint(local));
    if (rc == MOMENTO_OK)
        rc = momento_client_new(&c, NULL, creds);
    momento_credentials_free(creds);
    if (rc != MOMENTO_OK) {
        fprintf(stderr, "faults: setup failed: %s %s\n", momento_strerror(rc),
                momento_refusal_reason());
        momento_local_stop(local);
        return 1;
    }

    /* A request-id groups a test's calls: counts such as error-count are
     * per id, so the retry below is not failed again. */
    const momento_header once[] = {{"request-id", "faults-example-1"},
                                   {"return-error", "unavailable"},
                                   {"error-rpcs", "get"},
                                   {"error-count", "1"}};
    const momento_header denied[] = {{"return-error", "permission-denied"}};
    const momento_header slow[] = {{"delay-ms", "2000"}, {"delay-rpcs", "get"}};
    int failures = 0;
    failures += run(c, "unavailable once (retried)", once, 4, 0, MOMENTO_OK);
    failures += run(c, "permission denied", denied, 1, 0, MOMENTO_ERR_PERMISSION);
    failures += run(c, "held 2 s, 200 ms deadline", slow, 2, 200, MOMENTO_ERR_TIMEOUT);

    momento_client_free(c);
    momento_local_stop(local);
    return failures ? 1 : 0;
}
