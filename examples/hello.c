/* hello: connect, make sure a cache exists, set a key, read it back.
 *
 * With MOMENTO_API_KEY (and MOMENTO_ENDPOINT for current keys) set it talks
 * to Momento; otherwise it starts the bundled local server in-process on a
 * free loopback port. */
#include "momento/local.h"
#include "momento/momento.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(const char *what, int err, momento_result *r)
{
    fprintf(stderr, "hello: %s failed: %s (%s)%s%s\n", what, momento_error_name(err),
            momento_strerror(err), r && *momento_result_message(r) ? ": " : "",
            r ? momento_result_message(r) : "");
    momento_result_free(r);
    return 1;
}

int main(void)
{
    const char *cache = "hello-cache";
    momento_local *local = NULL;
    momento_credentials *creds = NULL;
    int rc;

    if (getenv("MOMENTO_API_KEY")) {
        rc = momento_credentials_from_env(&creds);
    } else {
        rc = momento_local_start(&local, NULL);
        if (rc != MOMENTO_OK)
            return fail("starting the local server", rc, NULL);
        printf("no MOMENTO_API_KEY: using the bundled local server at %s\n",
               momento_local_endpoint(local));
        rc = momento_credentials_local(&creds, momento_local_endpoint(local));
    }
    if (rc != MOMENTO_OK) {
        fprintf(stderr, "hello: bad credentials: %s\n", momento_refusal_reason());
        momento_local_stop(local);
        return 1;
    }

    momento_client *client;
    rc = momento_client_new(&client, NULL, creds);
    momento_credentials_free(creds);
    if (rc != MOMENTO_OK) {
        momento_local_stop(local);
        return fail("creating the client", rc, NULL);
    }

    momento_result *r = NULL;
    int status = 0;
    rc = momento_create_cache_sync(client, cache, NULL, &r);
    if (rc != MOMENTO_OK) {
        status = fail("create cache", rc, r);
        goto out;
    }
    printf("cache '%s': %s\n", cache,
           momento_result_outcome(r) == MOMENTO_OUTCOME_CREATED ? "created" : "already exists");
    momento_result_free(r);

    const char *key = "greeting", *value = "hello, momento";
    rc = momento_set_sync(client, cache, key, strlen(key), value, strlen(value), 0, NULL, &r);
    if (rc != MOMENTO_OK) {
        status = fail("set", rc, r);
        goto out;
    }
    momento_result_free(r);

    rc = momento_get_sync(client, cache, key, strlen(key), NULL, &r);
    if (rc != MOMENTO_OK) {
        status = fail("get", rc, r);
        goto out;
    }
    size_t len;
    const char *got = momento_result_value(r, &len);
    if (momento_result_is_hit(r))
        printf("get %s -> hit: %.*s\n", key, (int)len, got);
    else
        printf("get %s -> miss\n", key);
    momento_result_free(r);

out:
    momento_client_free(client);
    momento_local_stop(local);
    return status;
}
