/* async: the asynchronous API in full, plain and coalesced.
 *
 * Submits requests without waiting for each one, counts their answers in
 * callbacks, and waits for all of them with momento_client_wait_idle():
 *   1. 100 sets, then 100 gets of the same keys, all in flight at once;
 *   2. 1000 gets of one hot key through a coalescer: they share the RPCs
 *      in flight, and every caller still gets its own callback.
 * Callbacks run on the client's own thread (docs/threading.md), so the
 * counts they update are atomics; results are valid only inside them.
 *
 * With MOMENTO_API_KEY (and MOMENTO_ENDPOINT for current keys) it talks to
 * Momento; otherwise it starts the bundled local server in-process on a
 * free loopback port. */
#include "momento/coalescer.h"
#include "momento/local.h"
#include "momento/momento.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct tally {
    atomic_int ok, hits, errors;
} tally;

static void on_done(const momento_result *r, void *userdata)
{
    tally *t = userdata;
    if (momento_result_error(r) != MOMENTO_OK) {
        /* The message is valid only until we return: print it now. */
        fprintf(stderr, "async: %s: %s\n", momento_error_name(momento_result_error(r)),
                momento_result_message(r));
        atomic_fetch_add(&t->errors, 1);
        return;
    }
    atomic_fetch_add(&t->ok, 1);
    if (momento_result_is_hit(r))
        atomic_fetch_add(&t->hits, 1);
}

/* A refused submission never calls back: count it as an error here. */
static void submitted(int rc, tally *t)
{
    if (rc != MOMENTO_OK) {
        fprintf(stderr, "async: refused: %s (%s)\n", momento_strerror(rc),
                momento_refusal_reason());
        atomic_fetch_add(&t->errors, 1);
    }
}

int main(void)
{
    const char *cache = "async-example";
    momento_local *local = NULL;
    momento_credentials *creds = NULL;
    int rc;
    if (getenv("MOMENTO_API_KEY")) {
        rc = momento_credentials_from_env(&creds);
    } else {
        momento_local_options *o = NULL;
        rc = momento_local_options_new(&o);
        if (rc == MOMENTO_OK)
            rc = momento_local_options_add_cache(o, cache);
        if (rc == MOMENTO_OK)
            rc = momento_local_start(&local, o);
        momento_local_options_free(o);
        if (rc == MOMENTO_OK)
            rc = momento_credentials_local(&creds, momento_local_endpoint(local));
    }
    if (rc != MOMENTO_OK) {
        fprintf(stderr, "async: no target: %s %s\n", momento_strerror(rc), momento_refusal_reason());
        momento_local_stop(local);
        return 1;
    }
    momento_client *client = NULL;
    rc = momento_client_new(&client, NULL, creds);
    momento_credentials_free(creds);
    if (rc != MOMENTO_OK) {
        fprintf(stderr, "async: cannot create the client: %s\n", momento_strerror(rc));
        momento_local_stop(local);
        return 1;
    }
    if (!local) { /* Momento itself: the cache may not exist yet */
        momento_result *r = NULL;
        rc = momento_create_cache_sync(client, cache, NULL, &r);
        if (rc != MOMENTO_OK)
            fprintf(stderr, "async: create cache: %s\n", momento_result_message(r));
        momento_result_free(r);
    }

    /* 1. Plain: everything in flight at once, then one wait. */
    tally sets = {0}, gets = {0};
    char key[32], value[32];
    for (int i = 0; i < 100; i++) {
        snprintf(key, sizeof(key), "key-%d", i);
        snprintf(value, sizeof(value), "value-%d", i);
        /* Key and value are copied in: the buffers may be reused at once. */
        submitted(momento_set(client, cache, key, strlen(key), value, strlen(value), 0, NULL,
                              on_done, &sets),
                  &sets);
    }
    rc = momento_client_wait_idle(client, 10000);
    for (int i = 0; i < 100; i++) {
        snprintf(key, sizeof(key), "key-%d", i);
        submitted(momento_get(client, cache, key, strlen(key), NULL, on_done, &gets), &gets);
    }
    if (rc == MOMENTO_OK)
        rc = momento_client_wait_idle(client, 10000);
    printf("plain: %d sets ok, %d gets ok (%d hits), %d errors%s\n", atomic_load(&sets.ok),
           atomic_load(&gets.ok), atomic_load(&gets.hits),
           atomic_load(&sets.errors) + atomic_load(&gets.errors),
           rc == MOMENTO_OK ? "" : " (timed out waiting)");

    /* 2. Coalesced: 1000 callers, one key, far fewer RPCs. */
    momento_coalescer *co = NULL;
    tally hot = {0};
    int crc = momento_coalescer_new(&co, client);
    if (crc == MOMENTO_OK) {
        for (int i = 0; i < 1000; i++)
            submitted(momento_coalescing_get(co, cache, "key-0", 5, NULL, on_done, &hot), &hot);
        crc = momento_client_wait_idle(client, 10000);
        momento_coalescer_stats k;
        momento_coalescer_stats_get(co, &k, sizeof(k));
        printf("coalesced: %d gets ok (%d hits), %d errors, %llu of them joined an RPC in "
               "flight%s\n",
               atomic_load(&hot.ok), atomic_load(&hot.hits), atomic_load(&hot.errors),
               (unsigned long long)k.get_coalesced, crc == MOMENTO_OK ? "" : " (timed out)");
        momento_coalescer_free(co);
    }

    momento_client_free(client);
    momento_local_stop(local);
    bool all_ok = rc == MOMENTO_OK && crc == MOMENTO_OK && atomic_load(&sets.ok) == 100 &&
                  atomic_load(&gets.hits) == 100 && atomic_load(&hot.hits) == 1000;
    return all_ok ? 0 : 1;
}
