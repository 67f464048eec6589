/* The library's half of the cross-check with the official Node.js SDK:
 *   crosscheck write HOST:PORT      writes keys for cross.js to read
 *   crosscheck read  HOST:PORT      reads and checks what cross.js wrote
 *   crosscheck subscribe HOST:PORT  subscribes to topic node-to-c, prints
 *                                   "ready", then checks what cross.js
 *                                   publish sends (run.sh starts that)
 *   crosscheck publish HOST:PORT    publishes to topic c-to-node for
 *                                   cross.js subscribe
 * One line per check, then "N passed, M failed". */
#include "interop_check.h"
#include "tu_deadline.h"
#include "momento/collections.h"
#include "momento/momento.h"
#include "momento/topics.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
    check("C reads n-plain written by Node", value_is(c, "cross", "n-plain", "from-node", 9));
    check("C reads Node's binary n-binary", value_is(c, "cross", "n-binary", "\x00\x09\x00", 3));
    check("C reads Node's counter n-ctr as text 7", value_is(c, "cross", "n-ctr", "7", 1));
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

/* ---- Topics. Both directions publish the same kinds of values: text
 * (ASCII, multi-byte UTF-8, empty), bytes (with NULs and 0xff, empty, bytes
 * that happen to be valid UTF-8), and one large binary value. cross.js
 * lists the same values in the same order. */

/* Every wait for an event is bounded by this; after the last expected item
 * nothing more may arrive for QUIET_MS. */
#define WAIT_MS 10000
#define QUIET_MS 300
#define BIG_LEN (300u * 1024u)
#define MAX_ITEMS 32

/* Byte i of the large binary value (cross.js's bigBinary). */
static unsigned char big_byte(size_t i)
{
    return (unsigned char)((i * 7 + (i >> 10)) & 0xff);
}

typedef struct got_item {
    int is_text;
    uint64_t seq, page;
    size_t len;
    unsigned char *value;
} got_item;

/* What a subscription's callback saw, under `mu`. */
typedef struct topic_log {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    got_item items[MAX_ITEMS];
    size_t n_items, extra_items, connected, discontinuities, losses;
    int ended, end_error;
} topic_log;

static void on_topic_event(momento_subscription *sub, const momento_topic_event *ev, void *userdata)
{
    (void)sub;
    topic_log *l = userdata;
    pthread_mutex_lock(&l->mu);
    switch (ev->kind) {
    case MOMENTO_TOPIC_CONNECTED:
        l->connected++;
        break;
    case MOMENTO_TOPIC_ITEM:
        if (l->n_items < MAX_ITEMS) {
            got_item *it = &l->items[l->n_items++];
            it->is_text = ev->is_text;
            it->seq = ev->sequence_number;
            it->page = ev->sequence_page;
            it->len = ev->value_len;
            it->value = malloc(ev->value_len ? ev->value_len : 1);
            if (it->value && ev->value_len)
                memcpy(it->value, ev->value, ev->value_len);
        } else {
            l->extra_items++;
        }
        break;
    case MOMENTO_TOPIC_DISCONTINUITY:
        l->discontinuities++;
        break;
    case MOMENTO_TOPIC_CONNECTION_LOST:
        l->losses++;
        break;
    case MOMENTO_TOPIC_END:
        l->ended = 1;
        l->end_error = ev->error;
        break;
    default:
        break;
    }
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mu);
}

static void topic_log_init(topic_log *l)
{
    memset(l, 0, sizeof(*l));
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->cv, NULL);
}

/* Waits, at most `ms`, until `l` has `n` items (or, with n == 0, has
 * ended). Returns whether it got there. */
static int topic_log_wait(topic_log *l, size_t n, int ms)
{
    struct timespec end = tu_deadline_ms(ms);
    pthread_mutex_lock(&l->mu);
    int rc = 0;
    while (!(n ? l->n_items >= n : l->ended) && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&l->cv, &l->mu, &end);
    int ok = n ? l->n_items >= n : l->ended;
    pthread_mutex_unlock(&l->mu);
    return ok;
}

/* The values cross.js publish sends to node-to-c, in order. */
static const struct {
    int is_text;
    const char *value; /* NULL: the large binary value */
    size_t len;
    const char *what;
} node_values[] = {
    {1, LIT("from-node"), "ASCII text"},
    {0, LIT("\x00\x01\x02\xff\x00"), "bytes with NULs and 0xff"},
    {1, LIT("h\xc3\xa9llo \xe2\x9c\x93 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x9a\x80"), "multi-byte UTF-8 text"},
    {0, LIT("abc"), "bytes that are valid UTF-8 (stay bytes)"},
    {1, LIT(""), "empty text"},
    {0, LIT(""), "empty bytes"},
    {0, NULL, BIG_LEN, "300 KiB of bytes"},
    {1, LIT("last"), "the last text"},
};
#define N_NODE_VALUES (sizeof(node_values) / sizeof(node_values[0]))

static int item_is_node_value(const got_item *it, size_t i)
{
    if (it->is_text != node_values[i].is_text || it->len != node_values[i].len || !it->value)
        return 0;
    if (node_values[i].value)
        return memcmp(it->value, node_values[i].value, it->len) == 0;
    for (size_t k = 0; k < it->len; k++)
        if (it->value[k] != big_byte(k))
            return 0;
    return 1;
}

/* crosscheck subscribe: a libmomento subscriber to what the Node SDK
 * publishes. */
static void subscribe_topics(momento_client *c)
{
    static topic_log l;
    topic_log_init(&l);
    momento_create_cache_sync(c, "cross", NULL, NULL);
    momento_subscription *sub = NULL;
    momento_subscribe_options so = MOMENTO_SUBSCRIBE_OPTIONS_INIT;
    so.first_message_timeout_ms = WAIT_MS;
    int rc = momento_topic_subscribe_sync(c, "cross", "node-to-c", &so, on_topic_event, &l, &sub);
    check("C momento_topic_subscribe_sync to node-to-c: connected", rc == MOMENTO_OK && sub);
    /* run.sh starts the Node publisher on this line. */
    printf("ready\n");
    fflush(stdout);
    if (rc != MOMENTO_OK)
        return;
    int all = topic_log_wait(&l, N_NODE_VALUES, WAIT_MS);
    struct timespec quiet = {0, QUIET_MS * 1000000L};
    nanosleep(&quiet, NULL);
    momento_topic_unsubscribe(sub);
    int ended = topic_log_wait(&l, 0, WAIT_MS);

    pthread_mutex_lock(&l.mu);
    char name[160];
    snprintf(name, sizeof(name), "C subscriber got all %zu items Node published (got %zu)", N_NODE_VALUES, l.n_items);
    check(name, all);
    for (size_t i = 0; i < N_NODE_VALUES; i++) {
        snprintf(name, sizeof(name), "C gets Node's item %zu, %s: exact bytes and kind", i + 1, node_values[i].what);
        check(name, i < l.n_items && item_is_node_value(&l.items[i], i));
    }
    int seq_ok = l.n_items == N_NODE_VALUES, page_ok = l.n_items > 0 && l.items[0].page != 0;
    for (size_t i = 0; i < l.n_items; i++) {
        seq_ok = seq_ok && l.items[i].seq == i + 1;
        page_ok = page_ok && l.items[i].page == l.items[0].page;
    }
    check("C sees sequence numbers 1..n in order", seq_ok);
    check("C sees one non-zero sequence page for every item", page_ok);
    check("C gets nothing more after the last item", l.n_items == N_NODE_VALUES && l.extra_items == 0);
    check("C subscription: connected once, no discontinuity, no lost connection",
          l.connected == 1 && l.discontinuities == 0 && l.losses == 0);
    check("C unsubscribe ends the subscription with END, error 0", ended && l.end_error == 0);
    momento_subscription_stats st;
    check("C subscription stats count the items",
          momento_subscription_stats_get(sub, &st, sizeof(st)) == MOMENTO_OK && st.items == N_NODE_VALUES &&
              st.last_sequence_number == N_NODE_VALUES && st.ended);
    for (size_t i = 0; i < l.n_items; i++)
        free(l.items[i].value);
    pthread_mutex_unlock(&l.mu);
    momento_subscription_free(sub);
}

/* crosscheck publish: what cross.js subscribe checks, in this order. */
static void publish_topics(momento_client *c)
{
    static const unsigned char bytes[] = {0, 0xff, 0, 1};
    static const char utf8[] = "\xc3\xbc" "n" "\xc3\xaf" "code \xe2\x9c\x93";
    momento_result *r = NULL;
    check("C publish_text from-c",
          momento_topic_publish_text_sync(c, "cross", "c-to-node", LIT("from-c"), NULL, NULL) == MOMENTO_OK);
    check("C publish bytes 00 ff 00 01",
          momento_topic_publish_sync(c, "cross", "c-to-node", bytes, sizeof(bytes), NULL, NULL) == MOMENTO_OK);
    check("C publish_text multi-byte UTF-8",
          momento_topic_publish_text_sync(c, "cross", "c-to-node", utf8, sizeof(utf8) - 1, NULL, NULL) == MOMENTO_OK);
    check("C publish bytes that are valid UTF-8",
          momento_topic_publish_sync(c, "cross", "c-to-node", LIT("xyz"), NULL, NULL) == MOMENTO_OK);
    unsigned char *big = malloc(BIG_LEN);
    for (size_t i = 0; big && i < BIG_LEN; i++)
        big[i] = big_byte(i);
    check("C publish 300 KiB of bytes",
          big && momento_topic_publish_sync(c, "cross", "c-to-node", big, BIG_LEN, NULL, NULL) == MOMENTO_OK);
    free(big);
    check("C publish_text last",
          momento_topic_publish_text_sync(c, "cross", "c-to-node", LIT("last"), NULL, NULL) == MOMENTO_OK);
    int rc = momento_topic_publish_text_sync(c, "no-such-cache", "c-to-node", LIT("v"), NULL, &r);
    check("C publish to a missing cache -> CACHE_NOT_FOUND", rc == MOMENTO_ERR_CACHE_NOT_FOUND);
    momento_result_free(r);
    static topic_log l;
    topic_log_init(&l);
    momento_subscription *sub = NULL;
    rc = momento_topic_subscribe_sync(c, "no-such-cache", "c-to-node", NULL, on_topic_event, &l, &sub);
    pthread_mutex_lock(&l.mu);
    check("C subscribe to a missing cache -> CACHE_NOT_FOUND, after an END event",
          rc == MOMENTO_ERR_CACHE_NOT_FOUND && l.ended && l.end_error == MOMENTO_ERR_CACHE_NOT_FOUND);
    pthread_mutex_unlock(&l.mu);
}

int main(int argc, char **argv)
{
    static const char *const modes[] = {"write", "read", "subscribe", "publish"};
    int mode = -1;
    for (int i = 0; argc == 3 && i < 4; i++)
        if (strcmp(argv[1], modes[i]) == 0)
            mode = i;
    if (mode < 0) {
        fprintf(stderr, "usage: crosscheck write|read|subscribe|publish HOST:PORT\n");
        return 2;
    }
    momento_credentials *creds;
    momento_client *c;
    if (momento_credentials_local(&creds, argv[2]) != MOMENTO_OK ||
        momento_client_new(&c, NULL, creds) != MOMENTO_OK)
        return 1;
    momento_credentials_free(creds);
    if (mode == 0)
        write_keys(c);
    else if (mode == 1)
        read_keys(c);
    else if (mode == 2)
        subscribe_topics(c);
    else
        publish_topics(c);
    momento_client_free(c);
    return summary();
}
