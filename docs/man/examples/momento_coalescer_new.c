/* Duplicate gets in flight share one RPC; each caller gets its callback.
 * MOMENTO_ENDPOINT=127.0.0.1:8080 for a momento-local with cache "demo". */
#include <momento/coalescer.h>
#include <momento/momento.h>
#include <stdatomic.h>
#include <stdio.h>

static void on_get(const momento_result *r, void *userdata)
{
    if (momento_result_is_hit(r))
        atomic_fetch_add((atomic_int *)userdata, 1);
}

int main(void)
{
    momento_credentials *creds;
    momento_client *c;
    momento_coalescer *co;
    if (momento_credentials_from_env(&creds) != MOMENTO_OK)
        return 1;
    int rc = momento_client_new(&c, NULL, creds);
    momento_credentials_free(creds);
    if (rc != MOMENTO_OK || momento_coalescer_new(&co, c) != MOMENTO_OK)
        return 1;
    momento_coalescing_set_sync(co, "demo", MOMENTO_STR("hot"), MOMENTO_STR("v"), 0, NULL,
                                NULL);
    atomic_int hits = 0;
    for (int i = 0; i < 1000; i++) /* the same key: they join one RPC */
        momento_coalescing_get(co, "demo", MOMENTO_STR("hot"), NULL, on_get, &hits);
    momento_client_wait_idle(c, 5000);
    printf("%d callbacks\n", atomic_load(&hits));
    momento_coalescer_free(co); /* before or after the client: either is fine */
    momento_client_free(c);
    return atomic_load(&hits) == 1000 ? 0 : 1;
}
