/* The library's half of the cross-check with the official Node.js SDK:
 *   crosscheck write HOST:PORT   writes keys for cross.js to read
 *   crosscheck read  HOST:PORT   reads and checks what cross.js wrote
 * One line per check, then "N passed, M failed". */
#include "momento/momento.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static int passed, failed;

static void check(const char *name, int ok)
{
    printf("%s - %s\n", ok ? "ok" : "not ok", name);
    if (ok)
        passed++;
    else
        failed++;
}

static int value_is(momento_client *c, const char *key, const void *want, size_t want_len)
{
    momento_result *r;
    int ok = momento_get_sync(c, "cross", key, strlen(key), NULL, &r) == MOMENTO_OK && momento_result_is_hit(r);
    if (ok) {
        size_t len;
        const void *v = momento_result_value(r, &len);
        ok = len == want_len && memcmp(v, want, len) == 0;
    }
    momento_result_free(r);
    return ok;
}

static void write_keys(momento_client *c)
{
    static const unsigned char binary[] = {0, 1, 2, 0xff, 0};
    momento_result *r = NULL;
    momento_create_cache_sync(c, "cross", NULL, NULL);
    check("C set c-plain", momento_set_sync(c, "cross", "c-plain", 7, "from-c", 6, 0, NULL, NULL) == MOMENTO_OK);
    check("C set c-binary", momento_set_sync(c, "cross", "c-binary", 8, binary, sizeof(binary), 0, NULL, NULL) == MOMENTO_OK);
    check("C setIfAbsent c-cond", momento_set_if_sync(c, "cross", "c-cond", 6, "first", 5, 0, MOMENTO_IF_ABSENT,
                                                      NULL, 0, NULL, &r) == MOMENTO_OK &&
                                      momento_result_outcome(r) == MOMENTO_OUTCOME_STORED);
    momento_result_free(r);
    check("C increment c-ctr by 42", momento_increment_sync(c, "cross", "c-ctr", 5, 42, 0, NULL, &r) == MOMENTO_OK &&
                                         momento_result_int(r) == 42);
    momento_result_free(r);
    check("C set c-ttl for 45 s", momento_set_sync(c, "cross", "c-ttl", 5, "t", 1, 45000, NULL, NULL) == MOMENTO_OK);
    const void *keys[3] = {"c-b0", "c-b1", "c-b2"};
    size_t klens[3] = {4, 4, 4};
    const void *vals[3] = {"zero", "one", "two"};
    size_t vlens[3] = {4, 3, 3};
    check("C setBatch c-b0..2", momento_set_batch_sync(c, "cross", keys, klens, vals, vlens, 3, 0, NULL, NULL) == MOMENTO_OK);
}

static void read_keys(momento_client *c)
{
    momento_result *r = NULL;
    check("C reads n-plain written by Node", value_is(c, "n-plain", "from-node", 9));
    check("C reads Node's binary n-binary", value_is(c, "n-binary", "\x00\x09\x00", 3));
    check("C reads Node's counter n-ctr as text 7", value_is(c, "n-ctr", "7", 1));
    check("C increments Node's counter to 10", momento_increment_sync(c, "cross", "n-ctr", 5, 3, 0, NULL, &r) == MOMENTO_OK &&
                                                   momento_result_int(r) == 10);
    momento_result_free(r);
    int ok = momento_item_get_ttl_sync(c, "cross", "n-ttl", 5, NULL, &r) == MOMENTO_OK &&
             momento_result_outcome(r) == MOMENTO_OUTCOME_HIT && momento_result_ttl_ms(r) > 20000 &&
             momento_result_ttl_ms(r) <= 30000;
    check("C sees Node's 30 s TTL on n-ttl", ok);
    momento_result_free(r);
    ok = momento_item_get_type_sync(c, "cross", "n-ttl", 5, NULL, &r) == MOMENTO_OK &&
         momento_result_outcome(r) == MOMENTO_OUTCOME_HIT &&
         momento_result_item_type(r) == MOMENTO_ITEM_TYPE_SCALAR;
    check("C item get type of Node's n-ttl: scalar", ok);
    momento_result_free(r);
    ok = momento_item_get_type_sync(c, "cross", "n-missing", 9, NULL, &r) == MOMENTO_OK &&
         momento_result_outcome(r) == MOMENTO_OUTCOME_MISS;
    check("C item get type of a key nobody wrote: miss", ok);
    momento_result_free(r);
    const void *keys[3] = {"n-plain", "n-missing", "n-b1"};
    size_t lens[3] = {7, 9, 4};
    ok = momento_keys_exist_sync(c, "cross", keys, lens, 3, NULL, &r) == MOMENTO_OK && momento_result_exists(r, 0) == 1 &&
         momento_result_exists(r, 1) == 0 && momento_result_exists(r, 2) == 1;
    check("C keysExist over Node's keys", ok);
    momento_result_free(r);
    const void *bkeys[2] = {"n-b0", "n-b1"};
    size_t blens[2] = {4, 4};
    ok = momento_get_batch_sync(c, "cross", bkeys, blens, 2, NULL, &r) == MOMENTO_OK && momento_result_item_count(r) == 2;
    if (ok) {
        size_t l0, l1;
        const void *v0 = momento_result_value(momento_result_item(r, 0), &l0);
        const void *v1 = momento_result_value(momento_result_item(r, 1), &l1);
        ok = l0 == 2 && memcmp(v0, "b0", 2) == 0 && l1 == 2 && memcmp(v1, "b1", 2) == 0;
    }
    check("C getBatch over Node's setBatch", ok);
    momento_result_free(r);
    ok = momento_set_if_sync(c, "cross", "n-plain", 7, "c-won", 5, 0, MOMENTO_IF_EQUAL, "from-node", 9, NULL, &r) ==
             MOMENTO_OK &&
         momento_result_outcome(r) == MOMENTO_OUTCOME_STORED;
    check("C setIfEqual against Node's value", ok);
    momento_result_free(r);
    check("C sees Node's deletion of c-plain", momento_get_sync(c, "cross", "c-plain", 7, NULL, &r) == MOMENTO_OK &&
                                                  momento_result_outcome(r) == MOMENTO_OUTCOME_MISS);
    momento_result_free(r);
}

int main(int argc, char **argv)
{
    if (argc != 3 || (strcmp(argv[1], "write") != 0 && strcmp(argv[1], "read") != 0)) {
        fprintf(stderr, "usage: crosscheck write|read HOST:PORT\n");
        return 2;
    }
    momento_credentials *creds;
    momento_client *c;
    if (momento_credentials_local(&creds, argv[2], NULL) != MOMENTO_OK ||
        momento_client_new(&c, NULL, creds) != MOMENTO_OK)
        return 1;
    momento_credentials_free(creds);
    if (strcmp(argv[1], "write") == 0)
        write_keys(c);
    else
        read_keys(c);
    momento_client_free(c);
    printf("%d passed, %d failed\n", passed, failed);
    return failed || !passed ? 1 : 0;
}
