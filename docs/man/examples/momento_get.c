/* Async gets: submit, count the answers in the callback, wait for all.
 * MOMENTO_ENDPOINT=127.0.0.1:8080 for a momento-local with cache "demo". */
#include <momento/momento.h>
#include <stdatomic.h>
#include <stdio.h>

static void on_get(const momento_result *r, void *userdata)
{
    atomic_int *hits = userdata; /* callbacks run on the client's thread */
    if (momento_result_is_hit(r))
        atomic_fetch_add(hits, 1);
    else if (momento_result_error(r) != MOMENTO_OK) /* valid only in here */
        fprintf(stderr, "get: %s\n", momento_result_message(r));
}

int main(void)
{
    momento_credentials *creds;
    momento_client *c;
    if (momento_credentials_from_env(&creds) != MOMENTO_OK) {
        fprintf(stderr, "credentials: %s\n", momento_refusal_reason());
        return 1;
    }
    int rc = momento_client_new(&c, NULL, creds);
    momento_credentials_free(creds);
    if (rc != MOMENTO_OK)
        return 1;
    momento_set_sync(c, "demo", MOMENTO_STR("k"), MOMENTO_STR("v"), 0, NULL, NULL);
    atomic_int hits = 0;
    for (int i = 0; i < 10; i++)
        if (momento_get(c, "demo", MOMENTO_STR("k"), NULL, on_get, &hits) != MOMENTO_OK)
            fprintf(stderr, "refused: %s\n", momento_refusal_reason());
    momento_client_wait_idle(c, 5000); /* every callback has returned */
    printf("%d hits\n", atomic_load(&hits));
    momento_client_free(c);
    return atomic_load(&hits) == 10 ? 0 : 1;
}
