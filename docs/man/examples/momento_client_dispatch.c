/* Dispatch mode: callbacks run on this thread, from a poll() loop on the
 * client's eventfd, as an event loop of your own would run them.
 * MOMENTO_ENDPOINT=127.0.0.1:8080 for a momento-local with cache "demo". */
#include <momento/momento.h>
#include <poll.h>
#include <stdio.h>

static int answered; /* only this thread touches it: callbacks run here */

static void on_get(const momento_result *r, void *userdata)
{
    (void)r;
    (void)userdata;
    answered++;
}

int main(void)
{
    momento_credentials *creds;
    momento_config *cfg;
    momento_client *c;
    if (momento_credentials_from_env(&creds) != MOMENTO_OK ||
        momento_config_new(&cfg) != MOMENTO_OK)
        return 1;
    momento_config_set_dispatch(cfg, 1); /* before momento_client_new() */
    int rc = momento_client_new(&c, cfg, creds);
    momento_config_free(cfg);
    momento_credentials_free(creds);
    if (rc != MOMENTO_OK)
        return 1;
    for (int i = 0; i < 100; i++)
        momento_get(c, "demo", MOMENTO_STR("k"), NULL, on_get, NULL);
    struct pollfd p = {.fd = momento_client_dispatch_fd(c), .events = POLLIN};
    for (int spins = 0; answered < 100 && spins < 500; spins++)
        if (poll(&p, 1, 10) > 0)
            momento_client_dispatch(c, 64); /* at most 64 per wake-up */
    printf("%d answered\n", answered);
    momento_client_free(c);
    return answered == 100 ? 0 : 1;
}
