/* The library's half of the cross-check with the official Node.js SDK:
 *   crosscheck write HOST:PORT   writes keys for cross.js to read
 *   crosscheck read  HOST:PORT   reads and checks what cross.js wrote
 * One line per check, then "N passed, M failed". */
#include "momento/collections.h"
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

/* A string literal as pointer and length, embedded NULs included. */
#define LIT(s) s, sizeof(s) - 1

static int bytes_are(const void *p, size_t n, const void *want, size_t want_len)
{
    return p && n == want_len && memcmp(p, want, n) == 0;
}

/* Item i of a collection read: a HIT with this value (and field, when
 * `field` is non-NULL). */
static int item_is(const momento_result *r, size_t i, const void *field, size_t field_len, const void *value,
                   size_t value_len)
{
    const momento_result *it = momento_result_item(r, i);
    size_t fl, vl;
    const void *f = momento_result_field(it, &fl);
    const void *v = momento_result_value(it, &vl);
    return it && momento_result_outcome(it) == MOMENTO_OUTCOME_HIT && bytes_are(v, vl, value, value_len) &&
           (!field || bytes_are(f, fl, field, field_len));
}

/* Whether some item of an unordered read (dictionary, set) is that one. */
static int has_item(const momento_result *r, const void *field, size_t field_len, const void *value, size_t value_len)
{
    for (size_t i = 0; i < momento_result_item_count(r); i++)
        if (item_is(r, i, field, field_len, value, value_len))
            return 1;
    return 0;
}

/* A HIT of exactly n items. */
static int hit_with(const momento_result *r, size_t n)
{
    return momento_result_outcome(r) == MOMENTO_OUTCOME_HIT && momento_result_item_count(r) == n;
}

/* Whether a sorted-set read holds exactly `values` with `scores`, in order. */
static int zitems_are(const momento_result *r, const char *const *values, const double *scores, size_t n)
{
    if (!hit_with(r, n))
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!item_is(r, i, NULL, 0, values[i], strlen(values[i])) ||
            momento_result_score(momento_result_item(r, i)) != scores[i])
            return 0;
    return 1;
}

static void write_collections(momento_client *c)
{
    momento_result *r = NULL;
    const momento_collection_ttl ttl45 = {45000, 1};
    /* c-dict: three fields (one binary), then a counter field. */
    const void *fields[3] = {"f1", "f2", "\x00\xff"};
    size_t flens[3] = {2, 2, 2};
    const void *fvals[3] = {"v1", "v2", "\x01\x00"};
    size_t fvlens[3] = {2, 2, 2};
    check("C dictionary set fields c-dict",
          momento_dictionary_set_fields_sync(c, "cross", LIT("c-dict"), fields, flens, fvals, fvlens, 3, NULL, NULL, NULL) ==
              MOMENTO_OK);
    check("C dictionary increment c-dict n by 5",
          momento_dictionary_increment_sync(c, "cross", LIT("c-dict"), LIT("n"), 5, NULL, NULL, &r) == MOMENTO_OK &&
              momento_result_int(r) == 5);
    momento_result_free(r);
    /* c-set: x y z and a binary element. */
    const void *elems[4] = {"x", "y", "z", "\x00\x07"};
    size_t elens[4] = {1, 1, 1, 2};
    check("C set add elements c-set",
          momento_set_add_elements_sync(c, "cross", LIT("c-set"), elems, elens, 4, NULL, NULL, NULL) == MOMENTO_OK);
    /* c-list: zero one two three, with a 45 s TTL. */
    const void *lvals[3] = {"one", "two", "three"};
    size_t lvlens[3] = {3, 3, 5};
    check("C list concatenate back c-list",
          momento_list_concatenate_back_sync(c, "cross", LIT("c-list"), lvals, lvlens, 3, 0, &ttl45, NULL, &r) ==
                  MOMENTO_OK &&
              momento_result_int(r) == 3);
    momento_result_free(r);
    check("C list push front c-list",
          momento_list_push_front_sync(c, "cross", LIT("c-list"), LIT("zero"), 0, &ttl45, NULL, &r) == MOMENTO_OK &&
              momento_result_int(r) == 4);
    momento_result_free(r);
    /* c-zset: low -1.5, mid 2, tie 2, high 10.25. */
    const void *zvals[4] = {"high", "tie", "mid", "low"};
    size_t zlens[4] = {4, 3, 3, 3};
    const double scores[4] = {10.25, 2, 2, -1.5};
    check("C sorted set put elements c-zset",
          momento_sorted_set_put_elements_sync(c, "cross", LIT("c-zset"), zvals, zlens, scores, 4, NULL, NULL, NULL) ==
              MOMENTO_OK);
}

/* What Node wrote (cross.js write), and what it did to C's collections. */
static void read_collections(momento_client *c)
{
    momento_result *r = NULL;
    int ok = momento_dictionary_fetch_sync(c, "cross", LIT("n-dict"), NULL, &r) == MOMENTO_OK && hit_with(r, 3) &&
             has_item(r, LIT("a"), LIT("alpha")) && has_item(r, LIT("b"), LIT("beta")) &&
             has_item(r, LIT("bin\x00"), LIT("\xfe\x00\x01"));
    check("C dictionary fetch of Node's n-dict: exactly a, b, binary", ok);
    momento_result_free(r);
    const void *gf[3] = {"b", "missing", "a"};
    size_t gfl[3] = {1, 7, 1};
    ok = momento_dictionary_get_fields_sync(c, "cross", LIT("n-dict"), gf, gfl, 3, NULL, &r) == MOMENTO_OK &&
         hit_with(r, 3) && item_is(r, 0, LIT("b"), LIT("beta")) &&
         momento_result_outcome(momento_result_item(r, 1)) == MOMENTO_OUTCOME_MISS &&
         item_is(r, 2, LIT("a"), LIT("alpha"));
    check("C dictionary get fields of n-dict: hit, miss, hit in order, each with its field", ok);
    momento_result_free(r);
    ok = momento_dictionary_increment_sync(c, "cross", LIT("n-dict-ctr"), LIT("hits"), 1, NULL, NULL, &r) ==
             MOMENTO_OK &&
         momento_result_int(r) == 11;
    check("C dictionary increment of Node's counter field 10 -> 11", ok);
    momento_result_free(r);
    ok = momento_dictionary_get_field_sync(c, "cross", LIT("c-dict"), LIT("n"), NULL, &r) == MOMENTO_OK &&
         momento_result_is_hit(r);
    if (ok) {
        size_t len;
        const void *v = momento_result_value(r, &len);
        ok = bytes_are(v, len, LIT("7"));
    }
    check("C sees Node's increment of c-dict n: 7", ok);
    momento_result_free(r);

    ok = momento_set_fetch_sync(c, "cross", LIT("n-set"), NULL, &r) == MOMENTO_OK && hit_with(r, 4) &&
         has_item(r, NULL, 0, LIT("red")) && has_item(r, NULL, 0, LIT("green")) && has_item(r, NULL, 0, LIT("blue")) &&
         has_item(r, NULL, 0, LIT("\xff\x00"));
    check("C set fetch of Node's n-set: exactly red, green, blue, binary", ok);
    momento_result_free(r);
    const void *ce[3] = {"green", "purple", "\xff\x00"};
    size_t cel[3] = {5, 6, 2};
    ok = momento_set_contains_elements_sync(c, "cross", LIT("n-set"), ce, cel, 3, NULL, &r) == MOMENTO_OK &&
         momento_result_outcome(r) == MOMENTO_OUTCOME_HIT && momento_result_exists(r, 0) == 1 &&
         momento_result_exists(r, 1) == 0 && momento_result_exists(r, 2) == 1;
    check("C set contains elements of n-set: yes, no, yes", ok);
    momento_result_free(r);
    ok = momento_item_get_ttl_sync(c, "cross", LIT("n-set"), NULL, &r) == MOMENTO_OK && momento_result_is_hit(r) &&
         momento_result_ttl_ms(r) > 30000 && momento_result_ttl_ms(r) <= 40000;
    check("C sees n-set's 40 s CollectionTtl", ok);
    momento_result_free(r);
    ok = momento_set_fetch_sync(c, "cross", LIT("c-set"), NULL, &r) == MOMENTO_OK && hit_with(r, 3) &&
         has_item(r, NULL, 0, LIT("x")) && has_item(r, NULL, 0, LIT("z")) && has_item(r, NULL, 0, LIT("\x00\x07"));
    check("C sees Node's removal of y from c-set", ok);
    momento_result_free(r);

    static const char *const list[5] = {"l0", "l1", "l2", "l3", "l4"};
    ok = momento_list_fetch_sync(c, "cross", LIT("n-list"), 0, MOMENTO_END, NULL, &r) == MOMENTO_OK && hit_with(r, 6);
    for (size_t i = 0; ok && i < 5; i++)
        ok = item_is(r, i, NULL, 0, list[i], 2);
    ok = ok && item_is(r, 5, NULL, 0, LIT("\x00\x01\x00"));
    check("C list fetch of Node's n-list: l0..l4 and a binary value, in order", ok);
    momento_result_free(r);
    ok = momento_list_fetch_sync(c, "cross", LIT("n-list"), -3, -1, NULL, &r) == MOMENTO_OK && hit_with(r, 2) &&
         item_is(r, 0, NULL, 0, LIT("l3")) && item_is(r, 1, NULL, 0, LIT("l4"));
    check("C list fetch [-3, -1) of n-list: l3 l4", ok);
    momento_result_free(r);
    ok = momento_list_length_sync(c, "cross", LIT("n-list"), NULL, &r) == MOMENTO_OK &&
         momento_result_outcome(r) == MOMENTO_OUTCOME_HIT && momento_result_int(r) == 6;
    check("C list length of n-list: 6", ok);
    momento_result_free(r);
    ok = momento_list_fetch_sync(c, "cross", LIT("c-list"), 0, MOMENTO_END, NULL, &r) == MOMENTO_OK && hit_with(r, 3) &&
         item_is(r, 0, NULL, 0, LIT("one")) && item_is(r, 1, NULL, 0, LIT("two")) &&
         item_is(r, 2, NULL, 0, LIT("three"));
    check("C sees Node's pop front of c-list: one two three", ok);
    momento_result_free(r);

    static const char *const zasc[5] = {"first", "second", "third", "tiny", "fourth"};
    static const double sasc[5] = {-3, 0, 0, 0.125, 1e10};
    ok = momento_sorted_set_fetch_by_rank_sync(c, "cross", LIT("n-zset"), 0, MOMENTO_END, MOMENTO_ASCENDING, NULL, &r) ==
             MOMENTO_OK &&
         zitems_are(r, zasc, sasc, 5);
    check("C sorted set fetch by rank of Node's n-zset: order and scores", ok);
    momento_result_free(r);
    static const char *const zdesc[3] = {"tiny", "third", "second"};
    static const double sdesc[3] = {0.125, 0, 0};
    ok = momento_sorted_set_fetch_by_score_sync(c, "cross", LIT("n-zset"), 0, 1, MOMENTO_DESCENDING, 0, 0, NULL, &r) ==
             MOMENTO_OK &&
         zitems_are(r, zdesc, sdesc, 3);
    check("C sorted set fetch by score [0, 1] descending of n-zset", ok);
    momento_result_free(r);
    ok = momento_sorted_set_get_score_sync(c, "cross", LIT("n-zset"), LIT("fourth"), NULL, &r) == MOMENTO_OK &&
         momento_result_is_hit(r) && momento_result_score(r) == 1e10;
    check("C sorted set get score of n-zset fourth: 1e10", ok);
    momento_result_free(r);
    ok = momento_sorted_set_get_rank_sync(c, "cross", LIT("n-zset"), LIT("third"), MOMENTO_DESCENDING, NULL, &r) ==
             MOMENTO_OK &&
         momento_result_is_hit(r) && momento_result_int(r) == 2;
    check("C sorted set get rank descending of n-zset third: 2", ok);
    momento_result_free(r);
    static const char *const cz[4] = {"low", "tie", "mid", "high"};
    static const double czs[4] = {-1.5, 2, 2.5, 10.25};
    ok = momento_sorted_set_fetch_by_rank_sync(c, "cross", LIT("c-zset"), 0, MOMENTO_END, MOMENTO_ASCENDING, NULL, &r) ==
             MOMENTO_OK &&
         zitems_are(r, cz, czs, 4);
    check("C sees Node's increment of c-zset mid to 2.5", ok);
    momento_result_free(r);

    static const struct {
        const char *key;
        momento_item_type type;
    } types[4] = {{"n-dict", MOMENTO_ITEM_TYPE_DICTIONARY},
                  {"n-set", MOMENTO_ITEM_TYPE_SET},
                  {"n-list", MOMENTO_ITEM_TYPE_LIST},
                  {"n-zset", MOMENTO_ITEM_TYPE_SORTED_SET}};
    ok = 1;
    for (size_t i = 0; i < 4; i++) {
        ok = ok && momento_item_get_type_sync(c, "cross", types[i].key, strlen(types[i].key), NULL, &r) == MOMENTO_OK &&
             momento_result_item_type(r) == types[i].type;
        momento_result_free(r);
        r = NULL;
    }
    check("C item get type of Node's four collections", ok);
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
    write_collections(c);
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
    read_collections(c);
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
