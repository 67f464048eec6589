/* A dictionary: set two fields at once, then read every entry back.
 * MOMENTO_ENDPOINT=127.0.0.1:8080 for a momento-local with cache "demo". */
#include <momento/collections.h>
#include <momento/momento.h>
#include <stdio.h>

int main(void)
{
    momento_credentials *creds;
    momento_client *c;
    momento_result *r = NULL;
    if (momento_credentials_from_env(&creds) != MOMENTO_OK)
        return 1;
    int rc = momento_client_new(&c, NULL, creds);
    momento_credentials_free(creds);
    if (rc != MOMENTO_OK)
        return 1;

    const void *fields[] = {"name", "visits"};
    const size_t field_lens[] = {4, 6};
    const void *values[] = {"ada", "3"};
    const size_t value_lens[] = {3, 1};
    /* NULL ttl: the client's default TTL, refreshed on every write */
    rc = momento_dictionary_set_fields_sync(c, "demo", MOMENTO_STR("user:1"), fields, field_lens,
                                            values, value_lens, 2, NULL, NULL, &r);
    momento_result_free(r);
    r = NULL;
    if (rc == MOMENTO_OK)
        rc = momento_dictionary_fetch_sync(c, "demo", MOMENTO_STR("user:1"), NULL, &r);
    if (rc != MOMENTO_OK) {
        fprintf(stderr, "%s: %s\n", momento_error_name(rc), momento_result_message(r));
    } else if (momento_result_is_hit(r)) {
        /* one item per entry, in no particular order; each a field and a value */
        for (size_t i = 0; i < momento_result_item_count(r); i++) {
            const momento_result *e = momento_result_item(r, i);
            size_t flen, vlen;
            const char *f = momento_result_field(e, &flen);
            const char *v = momento_result_value(e, &vlen);
            printf("%.*s = %.*s\n", (int)flen, f, (int)vlen, v);
        }
    }
    momento_result_free(r);
    momento_client_free(c);
    return rc == MOMENTO_OK ? 0 : 1;
}
