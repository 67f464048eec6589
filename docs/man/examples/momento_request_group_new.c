/* Two threads share one client; each waits for its own requests only.
 * MOMENTO_ENDPOINT=127.0.0.1:8080 for a momento-local with cache "demo". */
#include <momento/momento.h>
#include <pthread.h>
#include <stdio.h>

static momento_client *client;

static void on_set(const momento_result *r, void *userdata)
{
    if (momento_result_error(r) != MOMENTO_OK)
        ++*(int *)userdata; /* runs on the completion thread: one at a time */
}

static void *worker(void *arg)
{
    const char *name = arg;
    int failed = 0;
    momento_request_group *mine;
    if (momento_request_group_new(client, &mine) != MOMENTO_OK)
        return "no group";
    momento_request_options o = MOMENTO_REQUEST_OPTIONS_INIT;
    o.group = mine; /* each request holds the group until its callback returns */
    for (int i = 0; i < 10; i++)
        momento_set(client, "demo", MOMENTO_STR(name), MOMENTO_STR("v"), 0, &o, on_set, &failed);
    /* Returns once these ten callbacks have returned, whatever the other
     * thread still has in flight. */
    int rc = momento_request_group_wait(mine, 5000);
    printf("%s: %s, %d failed\n", name, momento_error_name(rc), failed);
    momento_request_group_free(mine);
    return rc == MOMENTO_OK && failed == 0 ? NULL : "failed";
}

int main(void)
{
    momento_credentials *creds;
    if (momento_credentials_from_env(&creds) != MOMENTO_OK)
        return 1;
    int rc = momento_client_new(&client, NULL, creds);
    momento_credentials_free(creds);
    if (rc != MOMENTO_OK)
        return 1;
    pthread_t a, b;
    void *ra, *rb;
    pthread_create(&a, NULL, worker, "alpha");
    pthread_create(&b, NULL, worker, "beta");
    pthread_join(a, &ra);
    pthread_join(b, &rb);
    momento_client_free(client);
    return ra == NULL && rb == NULL ? 0 : 1;
}
