/* A disposable token that may only read cache "demo", and a client that
 * uses it: its get is answered, its set refused with MOMENTO_ERR_PERMISSION.
 * MOMENTO_ENDPOINT=127.0.0.1:8080 for a momento-local with cache "demo". */
#include <momento/momento.h>
#include <momento/tokens.h>
#include <stdio.h>
#include <stdlib.h>

int main(void)
{
    momento_credentials *creds, *token_creds;
    momento_client *c, *reader;
    momento_token_scope *scope;
    momento_result *r = NULL;
    if (momento_credentials_from_env(&creds) != MOMENTO_OK)
        return 1;
    int rc = momento_client_new(&c, NULL, creds);
    momento_credentials_free(creds);
    if (rc != MOMENTO_OK || momento_token_scope_new(&scope) != MOMENTO_OK)
        return 1;
    momento_token_scope_add_cache(scope, MOMENTO_TOKEN_READ_ONLY, "demo");
    /* 60 s, no token id; the scope is copied: it may go at once */
    rc = momento_generate_disposable_token_sync(c, scope, 60, NULL, NULL, &r);
    momento_token_scope_free(scope);
    if (rc != MOMENTO_OK) {
        fprintf(stderr, "token: %s\n", momento_result_message(r));
        return 1;
    }
    /* The key is the result's: make credentials from it before freeing it.
     * A local server's key carries no endpoint: name it. */
    const char *local = getenv("MOMENTO_ENDPOINT");
    rc = local ? momento_credentials_local_with_key(&token_creds, local,
                                                    momento_result_token_api_key(r))
               : momento_credentials_from_api_key(&token_creds, momento_result_token_api_key(r),
                                                  NULL);
    momento_result_free(r);
    r = NULL;
    if (rc != MOMENTO_OK) {
        fprintf(stderr, "credentials: %s\n", momento_refusal_reason()); /* why it was refused */
        return 1;
    }
    if (momento_client_new(&reader, NULL, token_creds) != MOMENTO_OK)
        return 1;
    momento_credentials_free(token_creds);

    int get = momento_get_sync(reader, "demo", MOMENTO_STR("k"), NULL, &r);
    momento_result_free(r);
    int set = momento_set_sync(reader, "demo", MOMENTO_STR("k"), MOMENTO_STR("v"), 0, NULL, &r);
    printf("get: %s, set: %s\n", momento_error_name(get), momento_error_name(set));
    momento_result_free(r);
    momento_client_free(reader);
    momento_client_free(c);
    return get == MOMENTO_OK && set == MOMENTO_ERR_PERMISSION ? 0 : 1;
}
