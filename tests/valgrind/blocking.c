/* The smallest blocking program: an embedded momento-local, one client, a
 * cache, a set and a get, everything freed. check.sh runs it under valgrind
 * with valgrind/libmomento.supp and counts "possibly lost" as an error.
 * With --leak it keeps the get's result instead of freeing it: a leak of
 * libmomento's own memory, which the suppressions must not hide. With
 * --linger it starts a thread of its own once the client is freed, and
 * another once the server is stopped, and leaves them running at exit, as
 * gRPC's teardown thread sometimes is: glibc gives them the stacks of the
 * joined completion and server threads, and valgrind charges their DTVs to
 * momento_client_new() and momento_local_start() - the report a fresh
 * machine gets by chance, made (nearly) certain. */
#include "momento/local.h"
#include "momento/momento.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int fail(const char *what, int err)
{
    fprintf(stderr, "blocking: %s: %s\n", what, momento_error_name(err));
    return 1;
}

static void *linger(void *arg)
{
    for (;;)
        pause();
    return arg;
}

/* A thread that is still running when main() returns. */
static void leave_running(int lingering, int *status)
{
    pthread_t t;
    if (lingering && pthread_create(&t, NULL, linger, NULL) != 0) {
        fprintf(stderr, "blocking: no thread to leave running\n");
        *status = 1;
    }
}

int main(int argc, char **argv)
{
    int leak = argc > 1 && strcmp(argv[1], "--leak") == 0;
    int lingering = argc > 1 && strcmp(argv[1], "--linger") == 0;
    momento_local *local = NULL;
    momento_credentials *creds = NULL;
    momento_config *cfg = NULL;
    momento_client *client = NULL;
    momento_result *r = NULL;
    int status = 1;

    int rc = momento_local_start(&local, NULL);
    if (rc != MOMENTO_OK)
        return fail("starting momento-local", rc);
    rc = momento_credentials_local(&creds, momento_local_endpoint(local));
    if (rc != MOMENTO_OK) {
        fprintf(stderr, "blocking: credentials: %s\n", momento_refusal_reason());
        goto out;
    }
    /* Valgrind runs everything many times slower: a generous deadline, so
     * a slow machine fails on memory errors only. */
    if ((rc = momento_config_new(&cfg)) != MOMENTO_OK ||
        (rc = momento_config_set_timeout_ms(cfg, 60000)) != MOMENTO_OK ||
        (rc = momento_client_new(&client, cfg, creds)) != MOMENTO_OK) {
        fail("creating the client", rc);
        goto out;
    }
    if ((rc = momento_create_cache_sync(client, "c", NULL, &r)) != MOMENTO_OK) {
        fail("create cache", rc);
        goto out;
    }
    momento_result_free(r);
    r = NULL;
    if ((rc = momento_set_sync(client, "c", "k", 1, "v", 1, 0, NULL, &r)) != MOMENTO_OK) {
        fail("set", rc);
        goto out;
    }
    momento_result_free(r);
    r = NULL;
    if ((rc = momento_get_sync(client, "c", "k", 1, NULL, &r)) != MOMENTO_OK) {
        fail("get", rc);
        goto out;
    }
    size_t len;
    const char *v = momento_result_value(r, &len);
    if (!momento_result_is_hit(r) || len != 1 || v[0] != 'v') {
        fprintf(stderr, "blocking: get: %s, not the value set\n",
                momento_outcome_name(momento_result_outcome(r)));
        goto out;
    }
    if (leak)
        r = NULL;
    status = 0;
out:
    momento_result_free(r);
    momento_client_free(client);
    leave_running(lingering, &status);
    momento_config_free(cfg);
    momento_credentials_free(creds);
    momento_local_stop(local);
    leave_running(lingering, &status);
    return status;
}
