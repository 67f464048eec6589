/* momento-local's batches item by item, and faults scoped to keys.
 *
 * a. A GetBatch naming a key of another type (a collection) answers that
 *    key's item alone, _GetResponse{result: Invalid, message}, and every
 *    other key as usual, in order; the checks about the request (a bad key,
 *    undecodable bytes, a reply over 64 MiB) still fail the batch whole.
 *    Both decode paths (the wire bytes read in place, protobuf-c's unpacked
 *    request) answer byte for byte the same. A Set and a SetBatch both
 *    replace a collection.
 * b. `error-keys` / `delay-keys` make one key fail or wait in whatever call
 *    names it (a scalar RPC, a collection RPC, a GetBatch or SetBatch, which
 *    then fails or waits whole), and no call that does not; malformed lists
 *    are refused.
 *
 * Raw gRPC calls (tu_raw_call(), and open calls on a connection of our own
 * for the delays), so that the tests read the wire itself rather than the
 * library's decoding of it; and the library once each way, as a client
 * meets both. */
#include "core/srv_faults.h"
#include "core/srv_reply.h"
#include "core/srv_server.h"
#include "rpc/srv_rpc.h"
#include "srv_test.h"
#include "testutil.h"
#include "tu_raw_conn.h"
#include "tu_srv.h"

#include "cacheclient.pb-c.h"
#include "controlclient.pb-c.h"

#include <grpc/grpc.h>
#include <grpc/support/time.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SCS "/cache_client.Scs/"

enum {
    ST_OK = 0,
    ST_INVALID_ARGUMENT = 3,
    ST_RESOURCE_EXHAUSTED = 8,
    ST_FAILED_PRECONDITION = 9,
    ST_UNAVAILABLE = 14,
};

#define B(str) ((ProtobufCBinaryData){strlen(str), (uint8_t *)(str)})

/* A delay longer than any test: only a cancel or the server's stop ends
 * it. */
#define FOREVER_MS "999999999"

/* ---- requests ------------------------------------------------------------ */

/* `m` packed; the caller frees it. A byte more than it needs, so that an
 * empty message (a batch of no items) still has a buffer. */
static uint8_t *pack(const ProtobufCMessage *m, size_t *ret_len)
{
    *ret_len = protobuf_c_message_get_packed_size(m);
    uint8_t *buf = malloc(*ret_len + 1);
    assert_non_null(buf);
    protobuf_c_message_pack(m, buf);
    return buf;
}

/* A GetBatch of `n` keys, packed; the caller frees it. */
static uint8_t *get_batch_body(const char *const *keys, size_t n, size_t *ret_len)
{
    CacheClient__GetRequest items[32], *ptrs[32];
    assert_true(n <= 32);
    for (size_t i = 0; i < n; i++) {
        items[i] = (CacheClient__GetRequest)CACHE_CLIENT____GET_REQUEST__INIT;
        items[i].cache_key = B(keys[i]);
        ptrs[i] = &items[i];
    }
    CacheClient__GetBatchRequest req = CACHE_CLIENT____GET_BATCH_REQUEST__INIT;
    req.items = ptrs;
    req.n_items = n;
    return pack(&req.base, ret_len);
}

/* A SetBatch of "key=value" items, packed; the caller frees it. */
static uint8_t *set_batch_body(const char *const *kvs, size_t n, size_t *ret_len)
{
    CacheClient__SetRequest items[16], *ptrs[16];
    char keys[16][64];
    assert_true(n <= 16);
    for (size_t i = 0; i < n; i++) {
        const char *eq = strchr(kvs[i], '=');
        snprintf(keys[i], sizeof(keys[i]), "%.*s", (int)(eq - kvs[i]), kvs[i]);
        items[i] = (CacheClient__SetRequest)CACHE_CLIENT____SET_REQUEST__INIT;
        items[i].cache_key = B(keys[i]);
        items[i].cache_body = B(eq + 1);
        items[i].ttl_milliseconds = 600000;
        ptrs[i] = &items[i];
    }
    CacheClient__SetBatchRequest req = CACHE_CLIENT____SET_BATCH_REQUEST__INIT;
    req.items = ptrs;
    req.n_items = n;
    return pack(&req.base, ret_len);
}

/* A request whose only field is field 1, `key`: every scalar and
 * collection request names its key there. */
#define KEY_BODY_MAX 1100
static size_t key_only_body(const char *key, uint8_t *out)
{
    size_t n = strlen(key), at = 0;
    assert_true(n + 3 <= KEY_BODY_MAX);
    out[at++] = 0x0a;
    for (size_t v = n; ; v >>= 7) {
        out[at++] = (uint8_t)(v >= 0x80 ? (v & 0x7f) | 0x80 : v);
        if (v < 0x80)
            break;
    }
    memcpy(out + at, key, n);
    return at + n;
}

/* Raw calls to the server's endpoint with `hdrs` (pairs); the reply is
 * the caller's to free. */
static int raw(const char *ep, const char *path, const char *const *hdrs, size_t n,
               const void *body, size_t len, tu_raw_reply *out)
{
    return tu_raw_call(ep, path, hdrs, n, body, len, out);
}

/* A raw GetBatch of the `n` keys in `items`, or (set) a SetBatch of the `n`
 * key-value pairs in it. */
static int raw_batch(const char *ep, bool set, const char *const *hdrs, size_t n_hdrs,
                     const char *const *items, size_t n, tu_raw_reply *out)
{
    size_t len;
    uint8_t *body = set ? set_batch_body(items, n, &len) : get_batch_body(items, n, &len);
    int st = raw(ep, set ? SCS "SetBatch" : SCS "GetBatch", hdrs, n_hdrs, body, len, out);
    free(body);
    return st;
}

/* The status of a call whose reply is of no interest. */
static int status_of(const char *ep, const char *path, const char *const *hdrs, size_t n,
                     const void *body, size_t len)
{
    tu_raw_reply r;
    int st = raw(ep, path, hdrs, n, body, len, &r);
    tu_raw_reply_free(&r);
    return st;
}

static int get_key(const char *ep, const char *const *hdrs, size_t n, const char *key)
{
    uint8_t body[KEY_BODY_MAX];
    return status_of(ep, SCS "Get", hdrs, n, body, key_only_body(key, body));
}

static const char *const plain[] = {"cache", "c"};

/* A Get without fault headers: 1 hit (its value in `out`), 0 miss, or
 * -status. */
static int peek(const char *ep, const char *key, char *out, size_t cap)
{
    uint8_t body[KEY_BODY_MAX];
    tu_raw_reply r;
    int st = raw(ep, SCS "Get", plain, 1, body, key_only_body(key, body), &r);
    if (st != 0) {
        tu_raw_reply_free(&r);
        return -st;
    }
    assert_int_equal(r.n_msgs, 1);
    CacheClient__GetResponse *g = cache_client____get_response__unpack(NULL, r.lens[0], r.msgs[0]);
    assert_non_null(g);
    int ret = g->result == CACHE_CLIENT__ECACHE_RESULT__Hit;
    if (ret && out) {
        assert_true(g->cache_body.len < cap);
        memcpy(out, g->cache_body.data, g->cache_body.len);
        out[g->cache_body.len] = '\0';
    }
    cache_client____get_response__free_unpacked(g, NULL);
    tu_raw_reply_free(&r);
    return ret;
}

/* ---- the keys of every type, on a server and on a bare store ------------- */

/* Where fill() puts its keys: over gRPC to a server's endpoint `ep`, or
 * (`ep` NULL) into `bare`'s store through the table's handlers, for the
 * decode paths compared in-process. */
typedef struct fill_to {
    const char *ep;
    momento_local *bare;
} fill_to;

/* One request `m` of RPC `path`, whose handler is `h`, asserted OK. */
static void put(const fill_to *to, const char *path, srv_handler *h, const ProtobufCMessage *m)
{
    if (to->ep) {
        assert_int_equal(tu_raw_call_msg(to->ep, path, plain, 1, m, NULL), 0);
        return;
    }
    srv_reply r = {0};
    h(to->bare, store_find_cache(&to->bare->store, "c", 1), m, &r);
    assert_int_equal(r.status, GRPC_STATUS_OK);
    srv_reply_clear(&r);
}

/* One key of each kind: a scalar "hit" (value "v1"), an empty scalar
 * "empty", with `big_len` a scalar "big" of that many bytes, a dictionary,
 * a list, a set and a sorted set. */
static void fill(const fill_to *to, size_t big_len)
{
    CacheClient__SetRequest set = CACHE_CLIENT____SET_REQUEST__INIT;
    set.cache_key = B("hit");
    set.cache_body = B("v1");
    put(to, SCS "Set", srv_set, &set.base);
    set.cache_key = B("empty");
    set.cache_body = B("");
    put(to, SCS "Set", srv_set, &set.base);
    if (big_len) {
        uint8_t *v = malloc(big_len);
        assert_non_null(v);
        memset(v, 'b', big_len);
        set.cache_key = B("big");
        set.cache_body = (ProtobufCBinaryData){big_len, v};
        put(to, SCS "Set", srv_set, &set.base);
        free(v);
    }

    CacheClient__DictionaryFieldValuePair pair = CACHE_CLIENT____DICTIONARY_FIELD_VALUE_PAIR__INIT;
    CacheClient__DictionaryFieldValuePair *pairs[] = {&pair};
    pair.field = B("f");
    pair.value = B("x");
    CacheClient__DictionarySetRequest ds = CACHE_CLIENT____DICTIONARY_SET_REQUEST__INIT;
    ds.dictionary_name = B("dict");
    ds.items = pairs;
    ds.n_items = 1;
    put(to, SCS "DictionarySet", srv_dictionary_set, &ds.base);

    CacheClient__ListPushBackRequest lp = CACHE_CLIENT____LIST_PUSH_BACK_REQUEST__INIT;
    lp.list_name = B("list");
    lp.value = B("x");
    put(to, SCS "ListPushBack", srv_list_push_back, &lp.base);

    ProtobufCBinaryData el = B("x");
    CacheClient__SetUnionRequest su = CACHE_CLIENT____SET_UNION_REQUEST__INIT;
    su.set_name = B("set");
    su.elements = &el;
    su.n_elements = 1;
    put(to, SCS "SetUnion", srv_set_union, &su.base);

    CacheClient__SortedSetElement ze = CACHE_CLIENT____SORTED_SET_ELEMENT__INIT;
    CacheClient__SortedSetElement *zes[] = {&ze};
    ze.value = B("x");
    ze.score = 1.5;
    CacheClient__SortedSetPutRequest zp = CACHE_CLIENT____SORTED_SET_PUT_REQUEST__INIT;
    zp.set_name = B("zset");
    zp.elements = zes;
    zp.n_elements = 1;
    put(to, SCS "SortedSetPut", srv_sorted_set_put, &zp.base);
}

/* The keys as unary calls to the server at `ep` (no "big"). */
static void fill_over_grpc(const char *ep)
{
    fill(&(fill_to){.ep = ep}, 0);
}

/* The fixture's server filled over gRPC; its endpoint. */
static const char *filled_fixture(void)
{
    fill_over_grpc(tu_fx.target);
    return tu_fx.target;
}

/* A server's state without gRPC (tu_srv.h): cache "c", Momento's item
 * limit. */
static momento_local *bare_server(void)
{
    return tu_bare_server("c", 5u * 1024u * 1024u);
}

/* The keys into `s`'s store through the table's handlers. */
static void fill_bare(momento_local *s, size_t big_len)
{
    fill(&(fill_to){.bare = s}, big_len);
}

/* ---- a. GetBatch item by item --------------------------------------------- */

static const char *const wrong_type_text =
    "The stored type for this key is not compatible with this operation";

/* What one streamed _GetResponse must be. */
typedef enum { HIT_V1, HIT_EMPTY, MISS, WRONG_TYPE } item_want;

static void assert_item(const uint8_t *msg, size_t len, item_want want, size_t i)
{
    CacheClient__GetResponse *g = cache_client____get_response__unpack(NULL, len, msg);
    if (!g)
        fail_msg("item %zu does not decode", i);
    switch (want) {
    case HIT_V1:
        assert_int_equal(g->result, CACHE_CLIENT__ECACHE_RESULT__Hit);
        assert_int_equal(g->cache_body.len, 2);
        assert_memory_equal(g->cache_body.data, "v1", 2);
        break;
    case HIT_EMPTY:
        assert_int_equal(g->result, CACHE_CLIENT__ECACHE_RESULT__Hit);
        assert_int_equal(g->cache_body.len, 0);
        break;
    case MISS:
        assert_int_equal(g->result, CACHE_CLIENT__ECACHE_RESULT__Miss);
        break;
    case WRONG_TYPE: {
        if (g->result != CACHE_CLIENT__ECACHE_RESULT__Invalid)
            fail_msg("item %zu: result %d, want Invalid (0)", i, (int)g->result);
        assert_string_equal(g->message, wrong_type_text);
        assert_int_equal(g->cache_body.len, 0);
        /* Byte for byte what protobuf-c packs of the same message. */
        CacheClient__GetResponse want_msg = CACHE_CLIENT____GET_RESPONSE__INIT;
        want_msg.result = CACHE_CLIENT__ECACHE_RESULT__Invalid;
        want_msg.message = (char *)wrong_type_text;
        uint8_t packed[128];
        size_t n = protobuf_c_message_get_packed_size(&want_msg.base);
        assert_true(n <= sizeof(packed));
        protobuf_c_message_pack(&want_msg.base, packed);
        assert_int_equal(len, n);
        assert_memory_equal(msg, packed, n);
        break;
    }
    }
    cache_client____get_response__free_unpacked(g, NULL);
}

/* Over the wire: each key of another type is its own Invalid item with the
 * single Get's message, the others Hit or Miss, in order, status OK. */
static void test_get_batch_answers_wrong_type_per_item(void **state)
{
    (void)state;
    const char *ep = filled_fixture();

    const char *keys[] = {"hit", "dict", "miss", "list", "set", "zset", "empty", "hit", "dict"};
    const item_want want[] = {HIT_V1, WRONG_TYPE, MISS,      WRONG_TYPE, WRONG_TYPE,
                              WRONG_TYPE, HIT_EMPTY, HIT_V1, WRONG_TYPE};
    size_t n = sizeof(keys) / sizeof(keys[0]);
    tu_raw_reply r;
    int st = raw_batch(ep, false, plain, 1, keys, n, &r);
    if (st != ST_OK)
        fail_msg("GetBatch with collections among its keys: status %d (%s), want OK per item", st,
                 r.details);
    assert_int_equal(r.n_msgs, n);
    for (size_t i = 0; i < n; i++)
        assert_item(r.msgs[i], r.lens[i], want[i], i);
    tu_raw_reply_free(&r);

    /* The item's message is the single Get's FAILED_PRECONDITION. */
    uint8_t body[KEY_BODY_MAX];
    assert_int_equal(raw(ep, SCS "Get", plain, 1, body, key_only_body("dict", body), &r),
                     ST_FAILED_PRECONDITION);
    assert_string_equal(r.details, wrong_type_text);
    tu_raw_reply_free(&r);

    /* A batch of collections alone: every item its own error. */
    const char *colls[] = {"zset", "list"};
    assert_int_equal(raw_batch(ep, false, plain, 1, colls, 2, &r), ST_OK);
    assert_int_equal(r.n_msgs, 2);
    assert_item(r.msgs[0], r.lens[0], WRONG_TYPE, 0);
    assert_item(r.msgs[1], r.lens[1], WRONG_TYPE, 1);
    tu_raw_reply_free(&r);

    /* Nothing was changed by reading. */
    assert_int_equal(peek(ep, "hit", NULL, 0), 1);
    assert_int_equal(peek(ep, "dict", NULL, 0), -ST_FAILED_PRECONDITION);
}

/* Through libmomento (its decoder reads an Invalid item as that item's
 * MOMENTO_ERR_UNKNOWN with the server's message): the batch succeeds, the
 * collection's item is its own error, the others a hit and a miss. */
static void test_get_batch_wrong_type_through_library(void **state)
{
    (void)state;
    momento_local *s = tu_fx.server;
    fill_over_grpc(momento_local_endpoint(s));
    momento_client *c = tu_client(s, NULL);
    const void *keys[] = {"hit", "dict", "miss"};
    size_t lens[] = {3, 4, 4};
    momento_result *r = NULL;
    assert_int_equal(momento_get_batch_sync(c, "c", keys, lens, 3, NULL, &r), MOMENTO_OK);
    assert_int_equal(momento_result_item_count(r), 3);
    const momento_result *hit = momento_result_item(r, 0), *dict = momento_result_item(r, 1),
                         *miss = momento_result_item(r, 2);
    assert_int_equal(momento_result_outcome(hit), MOMENTO_OUTCOME_HIT);
    size_t len;
    const void *v = momento_result_value(hit, &len);
    assert_int_equal(len, 2);
    assert_memory_equal(v, "v1", 2);
    assert_int_equal(momento_result_outcome(dict), MOMENTO_OUTCOME_ERROR);
    assert_int_equal(momento_result_error(dict), MOMENTO_ERR_UNKNOWN);
    assert_string_equal(momento_result_message(dict), wrong_type_text);
    assert_int_equal(momento_result_outcome(miss), MOMENTO_OUTCOME_MISS);
    momento_result_free(r);
    momento_client_free(c);
}

/* The checks about the request still fail the batch whole, a key of
 * another type among its items or not: the same items answer per item
 * until one bad item is added. */
static void test_get_batch_request_checks_stay_whole(void **state)
{
    (void)state;
    const char *ep = filled_fixture();
    tu_raw_reply r;

    const char *good[] = {"hit", "dict", "miss"};
    assert_int_equal(raw_batch(ep, false, plain, 1, good, 3, &r), ST_OK);
    assert_int_equal(r.n_msgs, 3);
    assert_item(r.msgs[1], r.lens[1], WRONG_TYPE, 1);
    tu_raw_reply_free(&r);

    /* An empty key. */
    const char *empty_key[] = {"hit", "dict", "miss", ""};
    assert_int_equal(raw_batch(ep, false, plain, 1, empty_key, 4, &r), ST_INVALID_ARGUMENT);
    assert_int_equal(r.n_msgs, 0);
    tu_raw_reply_free(&r);

    /* Bytes that do not decode, after the good items. */
    size_t len;
    uint8_t *body = get_batch_body(good, 3, &len);
    uint8_t *damaged = malloc(len + 2);
    assert_non_null(damaged);
    memcpy(damaged, body, len);
    damaged[len] = 0x0a; /* field 1, its length missing */
    assert_int_equal(raw(ep, SCS "GetBatch", plain, 1, damaged, len + 1, &r), ST_INVALID_ARGUMENT);
    assert_int_equal(r.n_msgs, 0);
    assert_string_equal(r.details, "request could not be decoded");
    tu_raw_reply_free(&r);
    free(damaged);
    free(body);
}

/* A reply over 64 MiB is refused whole before anything is copied, a key
 * of another type among the items or not (in-process: no 64 MiB goes over
 * the wire). */
static void test_get_batch_reply_limit_stays_whole(void **state)
{
    (void)state;
    momento_local *s = bare_server();
    fill_bare(s, 4u * 1024u * 1024u);
    const char *fits[] = {"dict", "big", "hit"};
    const char *over[17] = {"dict"};
    for (size_t i = 1; i < 17; i++)
        over[i] = "big"; /* 16 x 4 MiB and their framing: over 64 MiB */
    struct {
        const char *const *keys;
        size_t n;
        int status;
    } cases[] = {{fits, 3, GRPC_STATUS_OK}, {over, 17, GRPC_STATUS_RESOURCE_EXHAUSTED}};
    for (size_t k = 0; k < 2; k++) {
        size_t len;
        uint8_t *body = get_batch_body(cases[k].keys, cases[k].n, &len);
        srv_reply a = {0}, b = {0};
        assert_true(tu_batch_both_paths(s, s, false, body, len, &a, &b));
        for (int path = 0; path < 2; path++) {
            srv_reply *r = path ? &b : &a;
            if ((int)r->status != cases[k].status)
                fail_msg("case %zu, %s path: status %d (%s), want %d", k,
                         path ? "unpacked" : "wire", (int)r->status, r->details, cases[k].status);
            if (cases[k].status == GRPC_STATUS_OK) {
                assert_int_equal(r->n_msgs, 3);
                assert_item(GRPC_SLICE_START_PTR(r->msgs[0]), GRPC_SLICE_LENGTH(r->msgs[0]),
                            WRONG_TYPE, 0);
                assert_item(GRPC_SLICE_START_PTR(r->msgs[2]), GRPC_SLICE_LENGTH(r->msgs[2]),
                            HIT_V1, 2);
            } else {
                assert_int_equal(r->n_msgs, 0);
            }
        }
        srv_reply_clear(&a);
        srv_reply_clear(&b);
        free(body);
    }
    tu_bare_server_free(s);
}

/* Both decode paths, over random batches mixing every kind of key (now and
 * then an empty key, or bytes cut short): the same replies, byte for byte,
 * with the per-item answers among them. */
static void test_get_batch_paths_agree(void **state)
{
    (void)state;
    momento_local *wire = bare_server(), *unpacked = bare_server();
    fill_bare(wire, 0);
    fill_bare(unpacked, 0);
    static const char *const pool[] = {"hit", "empty", "miss", "dict", "list", "set", "zset"};
    static const item_want pool_want[] = {HIT_V1,     HIT_EMPTY,  MISS,      WRONG_TYPE,
                                          WRONG_TYPE, WRONG_TYPE, WRONG_TYPE};
    size_t per_item = 0, refused = 0;
    for (int round = 0; round < 3000; round++) {
        const char *keys[12];
        size_t picks[12] = {0};
        size_t n = (size_t)(tu_rng() % 13);
        bool empty_key = false;
        for (size_t i = 0; i < n; i++) {
            if (tu_rng() % 40 == 0) {
                keys[i] = "";
                empty_key = true;
                continue;
            }
            picks[i] = (size_t)(tu_rng() % 7);
            keys[i] = pool[picks[i]];
        }
        size_t len;
        uint8_t *body = get_batch_body(keys, n, &len);
        bool cut = len > 0 && tu_rng() % 10 == 0;
        if (cut)
            len -= 1 + (size_t)(tu_rng() % (len < 3 ? len : 3));
        srv_reply a = {0}, b = {0};
        tu_batch_both_paths(wire, unpacked, false, body, len, &a, &b);
        tu_assert_same_reply(&a, &b);
        if (a.status != GRPC_STATUS_OK) {
            refused++;
        } else if (!cut && !empty_key) {
            /* Uncut: the answers are the keys', in order. */
            assert_int_equal(a.n_msgs, n);
            for (size_t i = 0; i < n; i++) {
                assert_item(GRPC_SLICE_START_PTR(a.msgs[i]), GRPC_SLICE_LENGTH(a.msgs[i]),
                            pool_want[picks[i]], i);
                per_item += pool_want[picks[i]] == WRONG_TYPE;
            }
        }
        srv_reply_clear(&a);
        srv_reply_clear(&b);
        free(body);
    }
    /* The mix reached both outcomes. */
    assert_true(per_item > 1000);
    assert_true(refused > 100);
    tu_bare_server_free(wire);
    tu_bare_server_free(unpacked);
}

/* A Set replaces whatever a key holds, a collection included, and a
 * SetBatch does the same item by item: every item Ok, each key a scalar
 * after. */
static void test_set_and_set_batch_replace_collections(void **state)
{
    (void)state;
    const char *ep = filled_fixture();
    char v[16];

    CacheClient__SetRequest set = CACHE_CLIENT____SET_REQUEST__INIT;
    set.cache_key = B("dict");
    set.cache_body = B("d1");
    assert_int_equal(tu_raw_call_msg(ep, SCS "Set", plain, 1, &set.base, NULL), ST_OK);
    assert_int_equal(peek(ep, "dict", v, sizeof(v)), 1);
    assert_string_equal(v, "d1");

    const char *items[] = {"list=l1", "hit=h2", "set=s1", "zset=z1"};
    tu_raw_reply r;
    assert_int_equal(raw_batch(ep, true, plain, 1, items, 4, &r), ST_OK);
    assert_int_equal(r.n_msgs, 4);
    for (size_t i = 0; i < 4; i++) {
        CacheClient__SetResponse *sr =
            cache_client____set_response__unpack(NULL, r.lens[i], r.msgs[i]);
        assert_non_null(sr);
        assert_int_equal(sr->result, CACHE_CLIENT__ECACHE_RESULT__Ok);
        cache_client____set_response__free_unpacked(sr, NULL);
    }
    tu_raw_reply_free(&r);
    const char *want[][2] = {{"list", "l1"}, {"hit", "h2"}, {"set", "s1"}, {"zset", "z1"}};
    for (size_t i = 0; i < 4; i++) {
        assert_int_equal(peek(ep, want[i][0], v, sizeof(v)), 1);
        assert_string_equal(v, want[i][1]);
    }
}

/* ---- b. faults scoped to keys --------------------------------------------- */

/* `error-keys`: the keys' calls fail, whatever RPC carries them; the
 * other calls are answered; a batch naming one fails whole, before
 * anything of it is stored. */
static void test_error_keys_fail_only_calls_naming_them(void **state)
{
    (void)state;
    const char *ep = tu_fx.target;
    const char *h[] = {"cache", "c", "request-id", "ek", "return-error", "unavailable",
                       "error-keys", "bad k,2"};
    tu_raw_reply r;

    assert_int_equal(get_key(ep, h, 4, "good"), ST_OK);
    uint8_t body[KEY_BODY_MAX];
    assert_int_equal(raw(ep, SCS "Get", h, 4, body, key_only_body("bad", body), &r),
                     ST_UNAVAILABLE);
    assert_string_equal(r.details, "injected error (return-error)");
    tu_raw_reply_free(&r);
    /* A comma is a byte of a key, not a separator. */
    assert_int_equal(get_key(ep, h, 4, "k,2"), ST_UNAVAILABLE);
    assert_int_equal(get_key(ep, h, 4, "k"), ST_OK);
    assert_int_equal(get_key(ep, h, 4, "2"), ST_OK);
    /* A key of which a listed one is a prefix, or the other way round. */
    assert_int_equal(get_key(ep, h, 4, "bad2"), ST_OK);
    assert_int_equal(get_key(ep, h, 4, "ba"), ST_OK);

    /* GetBatch: whole, only when one item names a listed key. */
    const char *clean[] = {"good", "other", "more"};
    assert_int_equal(raw_batch(ep, false, h, 4, clean, 3, &r), ST_OK);
    assert_int_equal(r.n_msgs, 3);
    tu_raw_reply_free(&r);
    const char *dirty[] = {"good", "other", "bad", "more"};
    assert_int_equal(raw_batch(ep, false, h, 4, dirty, 4, &r), ST_UNAVAILABLE);
    assert_int_equal(r.n_msgs, 0);
    tu_raw_reply_free(&r);

    /* SetBatch: likewise, and nothing of the failed one is stored. */
    const char *set_dirty[] = {"fresh=1", "bad=2"};
    assert_int_equal(raw_batch(ep, true, h, 4, set_dirty, 2, &r), ST_UNAVAILABLE);
    assert_int_equal(r.n_msgs, 0);
    tu_raw_reply_free(&r);
    assert_int_equal(peek(ep, "fresh", NULL, 0), 0);
    const char *set_clean[] = {"fresh=1", "other=2"};
    assert_int_equal(raw_batch(ep, true, h, 4, set_clean, 2, &r), ST_OK);
    assert_int_equal(r.n_msgs, 2);
    tu_raw_reply_free(&r);
    assert_int_equal(peek(ep, "fresh", NULL, 0), 1);

    /* KeysExist naming any of them. */
    CacheClient__KeysExistRequest ke = CACHE_CLIENT____KEYS_EXIST_REQUEST__INIT;
    ProtobufCBinaryData ks[] = {B("good"), B("bad")};
    ke.cache_keys = ks;
    ke.n_cache_keys = 2;
    assert_int_equal(tu_raw_call_msg(ep, SCS "KeysExist", h, 4, &ke.base, NULL), ST_UNAVAILABLE);
    ks[1] = B("other");
    assert_int_equal(tu_raw_call_msg(ep, SCS "KeysExist", h, 4, &ke.base, NULL), ST_OK);

    /* Every data RPC whose request names a key (or a collection's name) in
     * its field 1: fails for a listed key, is answered (whatever its own
     * answer to a bare request is) for another. A leaderboard's name is no
     * key, and a control call names none. */
    size_t keyed = 0;
    for (int m = 0; m < MOMENTO__RPC_COUNT; m++) {
        const momento__rpc *rpc = &momento__rpcs[m];
        if (rpc->plane != MOMENTO__PLANE_DATA || rpc->streaming)
            continue;
        const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field(rpc->request, 1);
        bool names_key = f && f->type == PROTOBUF_C_TYPE_BYTES;
        int bad = status_of(ep, rpc->path, h, 4, body, key_only_body("bad", body));
        int other = status_of(ep, rpc->path, h, 4, body, key_only_body("zzz", body));
        if (names_key && bad != ST_UNAVAILABLE)
            fail_msg("%s naming a listed key: status %d, want UNAVAILABLE", rpc->name, bad);
        if (!names_key && bad == ST_UNAVAILABLE)
            fail_msg("%s names no key but failed", rpc->name);
        if (other == ST_UNAVAILABLE)
            fail_msg("%s naming another key failed", rpc->name);
        keyed += names_key;
    }
    assert_true(keyed >= 40); /* scalar, dictionary, set, list and sorted-set RPCs */
    ControlClient__ListCachesRequest lc = CONTROL_CLIENT____LIST_CACHES_REQUEST__INIT;
    assert_int_equal(
        tu_raw_call_msg(ep, "/control_client.ScsControl/ListCaches", h + 2, 3, &lc.base, NULL),
        ST_OK);
}

/* `error-rpcs` and `error-count` still apply on top, and only calls naming
 * a listed key count against the count. */
static void test_error_keys_with_rpcs_and_count(void **state)
{
    (void)state;
    const char *ep = tu_fx.target;
    uint8_t body[KEY_BODY_MAX];

    const char *rpcs[] = {"cache", "c", "request-id", "ek-rpcs", "return-error", "unavailable",
                          "error-keys", "bad", "error-rpcs", "get"};
    assert_int_equal(status_of(ep, SCS "Delete", rpcs, 5, body, key_only_body("bad", body)),
                     ST_OK);
    assert_int_equal(get_key(ep, rpcs, 5, "bad"), ST_UNAVAILABLE);
    const char *bad_batch[] = {"bad"};
    tu_raw_reply r;
    assert_int_equal(raw_batch(ep, false, rpcs, 5, bad_batch, 1, &r), ST_OK); /* get-batch not listed */
    tu_raw_reply_free(&r);

    const char *count[] = {"cache", "c", "request-id", "ek-count", "return-error", "unavailable",
                           "error-keys", "bad", "error-count", "1"};
    for (int i = 0; i < 3; i++)
        assert_int_equal(get_key(ep, count, 5, "good"), ST_OK); /* spends nothing */
    assert_int_equal(raw_batch(ep, false, count, 5, bad_batch, 1, &r), ST_UNAVAILABLE);
    tu_raw_reply_free(&r);
    assert_int_equal(get_key(ep, count, 5, "bad"), ST_OK); /* the one error is spent */
}

/* A value libmomento's client-wide headers let through
 * (momento_config_add_header(): printable ASCII, at most 1024 bytes) and a
 * client that sends it: its Get and GetBatch naming the key fail, the
 * others do not. */
static void test_error_keys_from_client_headers(void **state)
{
    (void)state;
    momento_local *s = tu_fx.server;
    momento_config *cfg = NULL;
    assert_int_equal(momento_config_new(&cfg), MOMENTO_OK);
    /* 64 keys of 15 bytes and their 63 spaces: 1023 bytes. */
    char many[1100];
    size_t at = 0;
    for (int i = 0; i < 64; i++)
        at += (size_t)snprintf(many + at, sizeof(many) - at, "%skey-%011d", i ? " " : "", i);
    assert_int_equal(strlen(many), 1023);
    assert_int_equal(momento_config_add_header(cfg, "error-keys", many), MOMENTO_OK);
    assert_int_equal(momento_config_add_header(cfg, "delay-keys", "bad"), MOMENTO_OK);
    assert_int_equal(momento_config_add_header(cfg, "return-error", "permission-denied"),
                     MOMENTO_OK);
    assert_int_equal(momento_config_add_header(cfg, "request-id", "ek-client"), MOMENTO_OK);
    momento_client *c = tu_client(s, cfg);

    assert_int_equal(momento_get_sync(c, "c", "key-00000000063", 15, NULL, NULL),
                     MOMENTO_ERR_PERMISSION);
    assert_int_equal(momento_get_sync(c, "c", "key-00000000000", 15, NULL, NULL),
                     MOMENTO_ERR_PERMISSION);
    momento_result *res = NULL;
    tu_expect(momento_get_sync(c, "c", "key-0000000006", 14, NULL, &res), res,
              MOMENTO_OUTCOME_MISS);

    const void *keys[] = {"a", "key-00000000042", "b"};
    size_t lens[] = {1, 15, 1};
    assert_int_equal(momento_get_batch_sync(c, "c", keys, lens, 3, NULL, NULL),
                     MOMENTO_ERR_PERMISSION);
    keys[1] = "c";
    lens[1] = 1;
    assert_int_equal(momento_get_batch_sync(c, "c", keys, lens, 3, NULL, &res), MOMENTO_OK);
    assert_int_equal(momento_result_item_count(res), 3);
    momento_result_free(res);
    momento_client_free(c);
    momento_config_free(cfg);
}

/* Malformed lists are refused with INVALID_ARGUMENT, as other malformed
 * fault headers are, whatever keys the call names. */
static void test_malformed_key_lists_refused(void **state)
{
    (void)state;
    const char *ep = tu_fx.target;
    static char too_many[64 * 3 + 8], too_long[1100];
    size_t at = 0;
    for (int i = 0; i < 65; i++)
        at += (size_t)snprintf(too_many + at, sizeof(too_many) - at, "%s%d", i ? " " : "", i % 10);
    memset(too_long, 'k', 1025);
    too_long[1025] = '\0';
    const char *bad_values[] = {"", "   ", too_many, too_long};
    for (size_t i = 0; i < sizeof(bad_values) / sizeof(bad_values[0]); i++) {
        const char *eh[] = {"cache",        "c", "return-error", "unavailable", "error-keys",
                            bad_values[i]};
        const char *dh[] = {"cache", "c", "delay-ms", "1", "delay-keys", bad_values[i]};
        for (int d = 0; d < 2; d++) {
            tu_raw_reply r;
            uint8_t body[KEY_BODY_MAX];
            int st = raw(ep, SCS "Get", d ? dh : eh, 3, body, key_only_body("k", body), &r);
            if (st != ST_INVALID_ARGUMENT)
                fail_msg("%s value %zu: status %d (%s), want INVALID_ARGUMENT",
                         d ? "delay-keys" : "error-keys", i, st, r.details);
            assert_non_null(strstr(r.details, d ? "delay-keys" : "error-keys"));
            tu_raw_reply_free(&r);
            /* A batch too, before any of its keys is looked at. */
            const char *keys[] = {"k"};
            assert_int_equal(raw_batch(ep, false, d ? dh : eh, 3, keys, 1, &r), ST_INVALID_ARGUMENT);
            tu_raw_reply_free(&r);
        }
    }
    /* At the limits: 64 keys, 1024 bytes, spaces around. */
    char sixty_four[64 * 2 + 4], at_limit[1025];
    at = 0;
    for (int i = 0; i < 64; i++)
        at += (size_t)snprintf(sixty_four + at, sizeof(sixty_four) - at, " %c", 'A' + i % 26);
    memset(at_limit, 'k', 1024);
    at_limit[1024] = '\0';
    const char *ok_values[] = {sixty_four, at_limit, " a "};
    for (size_t i = 0; i < sizeof(ok_values) / sizeof(ok_values[0]); i++) {
        const char *eh[] = {"cache", "c", "return-error", "unavailable", "error-keys",
                            ok_values[i]};
        assert_int_equal(get_key(ep, eh, 3, "zz"), ST_OK);
        assert_int_equal(get_key(ep, eh, 3, i == 0 ? "Z" : i == 1 ? at_limit : "a"),
                         ST_UNAVAILABLE);
    }
}

/* ---- delays: open calls on a connection of the test's own ---------------- */

/* `delay-keys`: the calls naming a listed key wait (parked on the server),
 * whole batches among them; the calls that name none are answered while
 * those are still waiting. */
static void test_delay_keys_hold_only_calls_naming_them(void **state)
{
    (void)state;
    momento_local *s = tu_fx.server;
    const char *ep = tu_fx.target;
    const char *h[] = {"cache", "c", "request-id", "dk", "delay-ms", FOREVER_MS,
                       "delay-keys", "slow other-slow"};
    tu_raw_conn k;
    tu_raw_conn_open(&k, ep);
    tu_open_call get_slow, batch_slow, set_batch_slow;
    uint8_t body[KEY_BODY_MAX];
    tu_open_call_start(&k, &get_slow, SCS "Get", h, 4, body, key_only_body("slow", body), 0);
    assert_int_equal(tu_wait_parked(s, 1, 10000), 1);

    /* Answered while the slow Get waits: a Get, a GetBatch and a SetBatch
     * of other keys. */
    assert_int_equal(get_key(ep, h, 4, "fast"), ST_OK);
    tu_raw_reply r;
    const char *clean[] = {"fast", "other", "slo"};
    assert_int_equal(raw_batch(ep, false, h, 4, clean, 3, &r), ST_OK);
    assert_int_equal(r.n_msgs, 3);
    tu_raw_reply_free(&r);
    const char *set_clean[] = {"fast=1", "other=2"};
    assert_int_equal(raw_batch(ep, true, h, 4, set_clean, 2, &r), ST_OK);
    tu_raw_reply_free(&r);
    assert_null(tu_raw_conn_next(&k, 0));
    assert_int_equal(momento_local_parked_calls(s), 1);

    /* A GetBatch and a SetBatch naming a slow key among others wait whole. */
    size_t len;
    const char *dirty[] = {"fast", "other-slow", "other"};
    uint8_t *gb = get_batch_body(dirty, 3, &len);
    tu_open_call_start(&k, &batch_slow, SCS "GetBatch", h, 4, gb, len, 0);
    free(gb);
    assert_int_equal(tu_wait_parked(s, 2, 10000), 2);
    const char *set_dirty[] = {"fast=3", "slow=4"};
    uint8_t *sb = set_batch_body(set_dirty, 2, &len);
    tu_open_call_start(&k, &set_batch_slow, SCS "SetBatch", h, 4, sb, len, 0);
    free(sb);
    assert_int_equal(tu_wait_parked(s, 3, 10000), 3);

    /* And still the others are answered, the waiting SetBatch having
     * stored nothing yet. */
    assert_int_equal(get_key(ep, h, 4, "other"), ST_OK);
    char v[8];
    assert_int_equal(peek(ep, "fast", v, sizeof(v)), 1);
    assert_string_equal(v, "1");
    assert_null(tu_raw_conn_next(&k, 0));
    assert_int_equal(momento_local_parked_calls(s), 3);

    /* The waiting calls end when their clients cancel them. */
    grpc_call_cancel(get_slow.call, NULL);
    grpc_call_cancel(batch_slow.call, NULL);
    grpc_call_cancel(set_batch_slow.call, NULL);
    for (int i = 0; i < 3; i++) {
        tu_open_call *oc = tu_raw_conn_next(&k, TU_MS(10000));
        assert_non_null(oc);
        assert_int_equal(oc->status, GRPC_STATUS_CANCELLED);
    }
    assert_int_equal(tu_wait_parked(s, 0, 10000), 0);
    assert_int_equal(peek(ep, "slow", NULL, 0), 0);
    tu_open_call_close(&get_slow);
    tu_open_call_close(&batch_slow);
    tu_open_call_close(&set_batch_slow);
    tu_raw_conn_close(&k);
}

/* `delay-count` counts only the calls naming a listed key. */
static void test_delay_keys_with_count(void **state)
{
    (void)state;
    momento_local *s = tu_fx.server;
    const char *ep = tu_fx.target;
    const char *h[] = {"cache", "c", "request-id", "dk-count", "delay-ms", FOREVER_MS,
                       "delay-keys", "slow", "delay-count", "1"};
    for (int i = 0; i < 3; i++)
        assert_int_equal(get_key(ep, h, 5, "fast"), ST_OK); /* spends nothing */
    tu_raw_conn k;
    tu_raw_conn_open(&k, ep);
    tu_open_call held;
    uint8_t body[KEY_BODY_MAX];
    tu_open_call_start(&k, &held, SCS "Get", h, 5, body, key_only_body("slow", body), 0);
    assert_int_equal(tu_wait_parked(s, 1, 10000), 1);
    /* The one delay is spent: the next Get of the key is answered while
     * the first still waits. */
    assert_int_equal(get_key(ep, h, 5, "slow"), ST_OK);
    assert_null(tu_raw_conn_next(&k, 0));
    assert_int_equal(momento_local_parked_calls(s), 1);
    grpc_call_cancel(held.call, NULL);
    tu_open_call *oc = tu_raw_conn_next(&k, TU_MS(10000));
    assert_ptr_equal(oc, &held);
    assert_int_equal(oc->status, GRPC_STATUS_CANCELLED);
    tu_open_call_close(&held);
    tu_raw_conn_close(&k);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        srv_fixture_test(test_get_batch_answers_wrong_type_per_item),
        srv_fixture_test(test_get_batch_wrong_type_through_library),
        srv_fixture_test(test_get_batch_request_checks_stay_whole),
        cmocka_unit_test(test_get_batch_reply_limit_stays_whole),
        cmocka_unit_test(test_get_batch_paths_agree),
        srv_fixture_test(test_set_and_set_batch_replace_collections),
        srv_fixture_test(test_error_keys_fail_only_calls_naming_them),
        srv_fixture_test(test_error_keys_with_rpcs_and_count),
        srv_fixture_test(test_error_keys_from_client_headers),
        srv_fixture_test(test_malformed_key_lists_refused),
        srv_fixture_test(test_delay_keys_hold_only_calls_naming_them),
        srv_fixture_test(test_delay_keys_with_count),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
