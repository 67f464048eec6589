/* A deadline of its own and a cancel token for one request.
 * MOMENTO_ENDPOINT=127.0.0.1:8080 for a momento-local with cache "demo". */
#include <momento/momento.h>
#include <stdio.h>

static void on_get(const momento_result *r, void *userdata)
{
    (void)userdata;
    printf("get: %s\n", momento_error_name(momento_result_error(r)));
}

int main(void)
{
    momento_credentials *creds;
    momento_client *c;
    if (momento_credentials_from_env(&creds) != MOMENTO_OK)
        return 1;
    int rc = momento_client_new(&c, NULL, creds);
    momento_credentials_free(creds);
    if (rc != MOMENTO_OK)
        return 1;
    momento_cancel_token *t;
    if (momento_cancel_token_new(&t) != MOMENTO_OK)
        return 1;
    momento_request_options o = MOMENTO_REQUEST_OPTIONS_INIT;
    o.timeout_ms = 250; /* this request's deadline, not the client's */
    o.cancel = t;       /* the request takes its own reference */
    rc = momento_get(c, "demo", MOMENTO_STR("k"), &o, on_get, NULL);
    momento_cancel(t); /* ends it with MOMENTO_ERR_CANCELLED unless answered */
    momento_cancel_token_free(t);
    momento_client_free(c); /* waits for the one callback */
    return rc == MOMENTO_OK ? 0 : 1;
}
