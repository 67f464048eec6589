/* Built by check.sh from the installed headers and
 * `pkg-config --cflags --libs momento-local` alone: momento-local embedded
 * in this process (docs/server.md, "Embedding it"), and a client's set/get
 * round trip to it, counted by the server. */
#include <momento/local.h>
#include <momento/momento.h>

#include <stdio.h>
#include <string.h>

int main(void)
{
    momento_local_options *o;
    momento_local *srv;
    if (momento_local_options_new(&o) != MOMENTO_OK ||
        momento_local_options_add_cache(o, "embedded") != MOMENTO_OK ||
        momento_local_start(&srv, o) != MOMENTO_OK) {
        fprintf(stderr, "embed: momento-local did not start\n");
        return 1;
    }
    momento_local_options_free(o);

    momento_credentials *creds;
    momento_client *c;
    if (momento_credentials_local(&creds, momento_local_endpoint(srv)) != MOMENTO_OK ||
        momento_client_new(&c, NULL, creds) != MOMENTO_OK) {
        fprintf(stderr, "embed: no client\n");
        momento_local_stop(srv);
        return 1;
    }
    momento_credentials_free(creds);
    momento_result *r = NULL;
    int ok = momento_set_sync(c, "embedded", "k", 1, "in process", 10, 0, NULL, NULL) == MOMENTO_OK &&
             momento_get_sync(c, "embedded", "k", 1, NULL, &r) == MOMENTO_OK;
    if (ok) {
        size_t len;
        const char *v = momento_result_value(r, &len);
        ok = momento_result_is_hit(r) && len == 10 && memcmp(v, "in process", 10) == 0;
    }
    momento_result_free(r);
    momento_client_free(c);
    /* The server saw exactly what the client sent. */
    ok = ok && momento_local_rpc_count(srv, "Set", -1) == 1 &&
         momento_local_rpc_count(srv, "Get", -1) == 1;
    momento_local_stop(srv);
    printf("%s\n", ok ? "embedded round trip ok" : "embedded round trip FAILED");
    return ok ? 0 : 1;
}
