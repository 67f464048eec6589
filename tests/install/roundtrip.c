/* Built by check.sh from the installed headers and `pkg-config momento`
 * alone: a set/get round trip against the server at argv[1]. */
#include <momento/momento.h>

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    momento_credentials *creds;
    momento_client *c;
    momento_result *r;
    if (argc != 2 || momento_credentials_local(&creds, argv[1]) != MOMENTO_OK ||
        momento_client_new(&c, NULL, creds) != MOMENTO_OK)
        return 1;
    momento_credentials_free(creds);
    int ok = momento_create_cache_sync(c, "installed", NULL, NULL) == MOMENTO_OK &&
             momento_set_sync(c, "installed", "k", 1, "round trip", 10, 0, NULL, NULL) == MOMENTO_OK &&
             momento_get_sync(c, "installed", "k", 1, NULL, &r) == MOMENTO_OK;
    if (ok) {
        size_t len;
        const char *v = momento_result_value(r, &len);
        ok = momento_result_is_hit(r) && len == 10 && memcmp(v, "round trip", 10) == 0;
        momento_result_free(r);
    }
    momento_client_free(c);
    printf("%s\n", ok ? "round trip ok" : "round trip FAILED");
    return ok ? 0 : 1;
}
