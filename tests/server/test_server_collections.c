/* The local server's dictionaries and sets, spoken to directly over gRPC:
 * values, hits and misses, Missing for an absent collection, deletion of
 * an emptied one, CollectionTtl (created with the TTL, refreshed only when
 * asked), the type mismatch both ways, ItemGetType of each kind, random
 * samples and pops, --max-memory counting a collection's bytes, and the
 * limits on what one request may make the server do (a collection within
 * the item limit, SortedSetUnionStore's sources, a reply's size). */
#include "srv_test.h"
#include "testutil.h"

#include "cacheclient.pb-c.h"
#include "controlclient.pb-c.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SCS "/cache_client.Scs/"

enum { ST_OK = 0, ST_INVALID_ARGUMENT = 3, ST_RESOURCE_EXHAUSTED = 8,
       ST_FAILED_PRECONDITION = 9 };

static const char *const cache_hdr[] = {"cache", "c"};
static const char *const mismatch =
    "The stored type for this key is not compatible with this operation";

#define B(str) ((ProtobufCBinaryData){strlen(str), (uint8_t *)(str)})

/* Packs `m` and calls `path` with the cache header at `ep`; returns the
 * status, the reply in `out` (free it with tu_raw_reply_free(); NULL:
 * dropped). */
static int call_at(const char *ep, const char *path, const ProtobufCMessage *m, tu_raw_reply *out)
{
    return tu_raw_call_msg(ep, path, cache_hdr, 1, m, out);
}

static int call(const char *path, const ProtobufCMessage *m, tu_raw_reply *out)
{
    return call_at(tu_fx.target, path, m, out);
}

/* call(), the reply unpacked as `desc` (srv_call()); `st` NULL: asserts
 * success, else NULL and the status in *st for an error. */
static void *ask(const char *path, const ProtobufCMessage *m,
                 const ProtobufCMessageDescriptor *desc, int *st)
{
    return srv_call(tu_fx.target, path, cache_hdr, 1, m, desc, st);
}

/* Calls and expects the error `status` with `details` (NULL: any). */
static void expect_error(const char *path, const ProtobufCMessage *m, int status,
                         const char *details)
{
    tu_raw_reply r;
    assert_int_equal(call(path, m, &r), status);
    if (details)
        assert_string_equal(r.details, details);
    tu_raw_reply_free(&r);
}

/* Calls `path` at `ep` and expects it refused for an item over the size
 * limit (RESOURCE_EXHAUSTED, `err` item_size_limit_exceeded). */
static void expect_too_big(const char *ep, const char *path, const ProtobufCMessage *m)
{
    tu_raw_reply r;
    assert_int_equal(call_at(ep, path, m, &r), ST_RESOURCE_EXHAUSTED);
    assert_string_equal(r.err, "item_size_limit_exceeded");
    tu_raw_reply_free(&r);
}

/* ---- Requests ------------------------------------------------------------ */

/* Fills `req`, a DictionarySet of dictionary `name`, with the n pairs
 * fields[i] = values[i], held in `items` and `ptrs` (room for n each). */
static void dict_set_req(CacheClient__DictionarySetRequest *req, const char *name,
                         CacheClient__DictionaryFieldValuePair *items,
                         CacheClient__DictionaryFieldValuePair **ptrs,
                         const ProtobufCBinaryData *fields, const ProtobufCBinaryData *values,
                         size_t n)
{
    for (size_t i = 0; i < n; i++) {
        cache_client____dictionary_field_value_pair__init(&items[i]);
        items[i].field = fields[i];
        items[i].value = values[i];
        ptrs[i] = &items[i];
    }
    cache_client____dictionary_set_request__init(req);
    req->dictionary_name = B(name);
    req->items = ptrs;
    req->n_items = n;
}

/* DictionarySet of "f=v" pairs (NULL-terminated) with a TTL. */
static int dict_set_at(const char *ep, const char *name, uint64_t ttl, bool refresh,
                       const char *const *pairs)
{
    CacheClient__DictionaryFieldValuePair items[16], *ptrs[16];
    ProtobufCBinaryData fields[16], values[16];
    size_t n = 0;
    for (; pairs[n]; n++) {
        assert_true(n < 16);
        const char *eq = strchr(pairs[n], '=');
        fields[n] = (ProtobufCBinaryData){(size_t)(eq - pairs[n]), (uint8_t *)pairs[n]};
        values[n] = B(eq + 1);
    }
    CacheClient__DictionarySetRequest req;
    dict_set_req(&req, name, items, ptrs, fields, values, n);
    req.ttl_milliseconds = ttl;
    req.refresh_ttl = refresh;
    return call_at(ep, SCS "DictionarySet", &req.base, NULL);
}

#define dict_set(name, ttl, refresh, ...)                                                          \
    dict_set_at(tu_fx.target, name, ttl, refresh, (const char *const[]){__VA_ARGS__, NULL})

/* DictionaryGet of one field: 1 hit (value in out), 0 miss, -1 dictionary
 * missing, or -status. */
static int dict_get(const char *name, const char *field, char *out, size_t cap)
{
    CacheClient__DictionaryGetRequest req = CACHE_CLIENT____DICTIONARY_GET_REQUEST__INIT;
    ProtobufCBinaryData f = B(field);
    req.dictionary_name = B(name);
    req.fields = &f;
    req.n_fields = 1;
    tu_raw_reply r;
    int st = call(SCS "DictionaryGet", &req.base, &r);
    if (st != 0) {
        tu_raw_reply_free(&r);
        return -st;
    }
    CacheClient__DictionaryGetResponse *resp =
        cache_client____dictionary_get_response__unpack(NULL, r.lens[0], r.msgs[0]);
    assert_non_null(resp);
    int ret = -1;
    if (resp->dictionary_case == CACHE_CLIENT____DICTIONARY_GET_RESPONSE__DICTIONARY_FOUND) {
        assert_int_equal(resp->found->n_items, 1);
        const CacheClient__DictionaryGetResponse__DictionaryGetResponsePart *p =
            resp->found->items[0];
        ret = p->result == CACHE_CLIENT__ECACHE_RESULT__Hit;
        if (!ret)
            assert_int_equal(p->result, CACHE_CLIENT__ECACHE_RESULT__Miss);
        if (ret && out) {
            assert_true(p->cache_body.len < cap);
            if (p->cache_body.len)
                memcpy(out, p->cache_body.data, p->cache_body.len);
            out[p->cache_body.len] = '\0';
        }
    } else {
        assert_int_equal(resp->dictionary_case,
                         CACHE_CLIENT____DICTIONARY_GET_RESPONSE__DICTIONARY_MISSING);
    }
    protobuf_c_message_free_unpacked(&resp->base, NULL);
    tu_raw_reply_free(&r);
    return ret;
}

/* DictionaryLength: the length, -1 missing, or -status (< -1). */
static long dict_length(const char *name)
{
    CacheClient__DictionaryLengthRequest req = CACHE_CLIENT____DICTIONARY_LENGTH_REQUEST__INIT;
    req.dictionary_name = B(name);
    int st;
    CacheClient__DictionaryLengthResponse *resp =
        ask(SCS "DictionaryLength", &req.base,
            &cache_client____dictionary_length_response__descriptor, &st);
    if (!resp)
        return -100 - st;
    long n = resp->dictionary_case == CACHE_CLIENT____DICTIONARY_LENGTH_RESPONSE__DICTIONARY_FOUND
                 ? (long)resp->found->length
                 : -1;
    protobuf_c_message_free_unpacked(&resp->base, NULL);
    return n;
}

/* DictionaryIncrement: the status, the new value in *out. */
static int dict_incr(const char *name, const char *field, int64_t amount, int64_t *out)
{
    CacheClient__DictionaryIncrementRequest req = CACHE_CLIENT____DICTIONARY_INCREMENT_REQUEST__INIT;
    req.dictionary_name = B(name);
    req.field = B(field);
    req.amount = amount;
    req.ttl_milliseconds = 60000;
    int st;
    CacheClient__DictionaryIncrementResponse *resp =
        ask(SCS "DictionaryIncrement", &req.base,
            &cache_client____dictionary_increment_response__descriptor, &st);
    if (resp) {
        *out = resp->value;
        protobuf_c_message_free_unpacked(&resp->base, NULL);
    }
    return st;
}

static int dict_remove(const char *name, const char *field)
{
    CacheClient__DictionaryDeleteRequest req = CACHE_CLIENT____DICTIONARY_DELETE_REQUEST__INIT;
    CacheClient__DictionaryDeleteRequest__Some some = CACHE_CLIENT____DICTIONARY_DELETE_REQUEST__SOME__INIT;
    ProtobufCBinaryData f = B(field);
    some.fields = &f;
    some.n_fields = 1;
    req.dictionary_name = B(name);
    req.delete_case = CACHE_CLIENT____DICTIONARY_DELETE_REQUEST__DELETE_SOME;
    req.some = &some;
    return call(SCS "DictionaryDelete", &req.base, NULL);
}

/* SetUnion of NULL-terminated elements. */
static int set_add(const char *name, uint64_t ttl, bool refresh, const char *const *elems)
{
    ProtobufCBinaryData e[128];
    size_t n = 0;
    for (; elems[n]; n++)
        e[n] = B(elems[n]);
    CacheClient__SetUnionRequest req = CACHE_CLIENT____SET_UNION_REQUEST__INIT;
    req.set_name = B(name);
    req.elements = e;
    req.n_elements = n;
    req.ttl_milliseconds = ttl;
    req.refresh_ttl = refresh;
    return call(SCS "SetUnion", &req.base, NULL);
}

#define SET_ADD(name, ...) set_add(name, 60000, true, (const char *const[]){__VA_ARGS__, NULL})

static long set_length(const char *name)
{
    CacheClient__SetLengthRequest req = CACHE_CLIENT____SET_LENGTH_REQUEST__INIT;
    req.set_name = B(name);
    int st;
    CacheClient__SetLengthResponse *resp =
        ask(SCS "SetLength", &req.base, &cache_client____set_length_response__descriptor, &st);
    if (!resp)
        return -100 - st;
    long n = resp->set_case == CACHE_CLIENT____SET_LENGTH_RESPONSE__SET_FOUND
                 ? (long)resp->found->length
                 : -1;
    protobuf_c_message_free_unpacked(&resp->base, NULL);
    return n;
}

/* SetContains of one element: 1, 0, -1 set missing. */
static int set_contains(const char *name, const char *elem)
{
    CacheClient__SetContainsRequest req = CACHE_CLIENT____SET_CONTAINS_REQUEST__INIT;
    ProtobufCBinaryData e = B(elem);
    req.set_name = B(name);
    req.elements = &e;
    req.n_elements = 1;
    CacheClient__SetContainsResponse *resp =
        ask(SCS "SetContains", &req.base, &cache_client____set_contains_response__descriptor, NULL);
    int ret = -1;
    if (resp->set_case == CACHE_CLIENT____SET_CONTAINS_RESPONSE__SET_FOUND) {
        assert_int_equal(resp->found->n_contains, 1);
        ret = resp->found->contains[0] ? 1 : 0;
    }
    protobuf_c_message_free_unpacked(&resp->base, NULL);
    return ret;
}

/* The item type ItemGetType reports, or -1 when missing. */
static int item_type(const char *key)
{
    CacheClient__ItemGetTypeRequest req = CACHE_CLIENT____ITEM_GET_TYPE_REQUEST__INIT;
    req.cache_key = B(key);
    CacheClient__ItemGetTypeResponse *resp =
        ask(SCS "ItemGetType", &req.base,
            &cache_client____item_get_type_response__descriptor, NULL);
    int t = resp->result_case == CACHE_CLIENT____ITEM_GET_TYPE_RESPONSE__RESULT_FOUND
                ? (int)resp->found->item_type
                : -1;
    protobuf_c_message_free_unpacked(&resp->base, NULL);
    return t;
}

/* ItemGetTtl: ms left, or -1 when missing. */
static long long ttl_left(const char *key)
{
    uint64_t ms = 0;
    return srv_item_ttl(tu_fx.target, key, &ms) ? (long long)ms : -1;
}

static int scalar_set_at(const char *ep, const char *key, const char *val, size_t len)
{
    CacheClient__SetRequest req = CACHE_CLIENT____SET_REQUEST__INIT;
    req.cache_key = B(key);
    req.cache_body = (ProtobufCBinaryData){len, (uint8_t *)val};
    return call_at(ep, SCS "Set", &req.base, NULL);
}

/* ---- Dictionaries ---------------------------------------------------------- */

static void test_dictionary_values(void **state)
{
    (void)state;
    char buf[64];
    assert_int_equal(dict_set("d", 60000, false, "a=1", "b=2", "e="), 0);
    assert_int_equal(dict_get("d", "a", buf, sizeof(buf)), 1);
    assert_string_equal(buf, "1");
    assert_int_equal(dict_get("d", "x", NULL, 0), 0);
    assert_int_equal(dict_get("d", "e", buf, sizeof(buf)), 1); /* an empty value is a hit */
    assert_string_equal(buf, "");
    assert_int_equal(dict_length("d"), 3);
    /* Overwriting a field keeps the length; the last of a repeated field wins. */
    assert_int_equal(dict_set("d", 60000, false, "a=10", "a=11"), 0);
    assert_int_equal(dict_get("d", "a", buf, sizeof(buf)), 1);
    assert_string_equal(buf, "11");
    assert_int_equal(dict_length("d"), 3);

    /* Get of several fields answers each in the request's order. */
    CacheClient__DictionaryGetRequest req = CACHE_CLIENT____DICTIONARY_GET_REQUEST__INIT;
    ProtobufCBinaryData f[] = {B("b"), B("zz"), B("a")};
    req.dictionary_name = B("d");
    req.fields = f;
    req.n_fields = 3;
    tu_raw_reply r;
    CacheClient__DictionaryGetResponse *g =
        ask(SCS "DictionaryGet", &req.base,
            &cache_client____dictionary_get_response__descriptor, NULL);
    assert_int_equal(g->dictionary_case, CACHE_CLIENT____DICTIONARY_GET_RESPONSE__DICTIONARY_FOUND);
    assert_int_equal(g->found->n_items, 3);
    assert_int_equal(g->found->items[0]->result, CACHE_CLIENT__ECACHE_RESULT__Hit);
    assert_memory_equal(g->found->items[0]->cache_body.data, "2", 1);
    assert_int_equal(g->found->items[1]->result, CACHE_CLIENT__ECACHE_RESULT__Miss);
    assert_int_equal(g->found->items[2]->result, CACHE_CLIENT__ECACHE_RESULT__Hit);
    assert_memory_equal(g->found->items[2]->cache_body.data, "11", 2);
    protobuf_c_message_free_unpacked(&g->base, NULL);

    /* Fetch answers every field once, with its value. */
    CacheClient__DictionaryFetchRequest fr = CACHE_CLIENT____DICTIONARY_FETCH_REQUEST__INIT;
    fr.dictionary_name = B("d");
    assert_int_equal(call(SCS "DictionaryFetch", &fr.base, &r), 0);
    CacheClient__DictionaryFetchResponse *fe =
        cache_client____dictionary_fetch_response__unpack(NULL, r.lens[0], r.msgs[0]);
    assert_int_equal(fe->dictionary_case, CACHE_CLIENT____DICTIONARY_FETCH_RESPONSE__DICTIONARY_FOUND);
    assert_int_equal(fe->found->n_items, 3);
    int seen = 0;
    for (size_t i = 0; i < fe->found->n_items; i++) {
        const CacheClient__DictionaryFieldValuePair *p = fe->found->items[i];
        if (p->field.len == 1 && p->field.data[0] == 'a') {
            assert_int_equal(p->value.len, 2);
            assert_memory_equal(p->value.data, "11", 2);
            seen |= 1;
        } else if (p->field.len == 1 && p->field.data[0] == 'b') {
            seen |= 2;
        } else if (p->field.len == 1 && p->field.data[0] == 'e') {
            assert_int_equal(p->value.len, 0);
            seen |= 4;
        }
    }
    assert_int_equal(seen, 7);
    protobuf_c_message_free_unpacked(&fe->base, NULL);
    tu_raw_reply_free(&r);
}

static void test_dictionary_missing_and_emptied(void **state)
{
    (void)state;
    /* Missing, not empty: every read says so, and removing succeeds. */
    assert_int_equal(dict_get("nod", "a", NULL, 0), -1);
    assert_int_equal(dict_length("nod"), -1);
    assert_int_equal(dict_remove("nod", "a"), 0);
    CacheClient__DictionaryFetchRequest fr = CACHE_CLIENT____DICTIONARY_FETCH_REQUEST__INIT;
    fr.dictionary_name = B("nod");
    CacheClient__DictionaryFetchResponse *fe =
        ask(SCS "DictionaryFetch", &fr.base,
            &cache_client____dictionary_fetch_response__descriptor, NULL);
    assert_int_equal(fe->dictionary_case, CACHE_CLIENT____DICTIONARY_FETCH_RESPONSE__DICTIONARY_MISSING);
    protobuf_c_message_free_unpacked(&fe->base, NULL);

    /* Removing the last field removes the dictionary itself. */
    assert_int_equal(dict_set("em", 60000, false, "a=1", "b=2"), 0);
    assert_int_equal(dict_remove("em", "a"), 0);
    assert_int_equal(dict_length("em"), 1);
    assert_int_equal(dict_remove("em", "b"), 0);
    assert_int_equal(dict_length("em"), -1);
    assert_int_equal(item_type("em"), -1);
    assert_int_equal(ttl_left("em"), -1);

    /* "all" removes the whole dictionary. */
    assert_int_equal(dict_set("all", 60000, false, "a=1", "b=2"), 0);
    CacheClient__DictionaryDeleteRequest del = CACHE_CLIENT____DICTIONARY_DELETE_REQUEST__INIT;
    CacheClient__DictionaryDeleteRequest__All all = CACHE_CLIENT____DICTIONARY_DELETE_REQUEST__ALL__INIT;
    del.dictionary_name = B("all");
    del.delete_case = CACHE_CLIENT____DICTIONARY_DELETE_REQUEST__DELETE_ALL;
    del.all = &all;
    assert_int_equal(call(SCS "DictionaryDelete", &del.base, NULL), 0);
    assert_int_equal(dict_length("all"), -1);

    /* An empty DictionarySet creates nothing. */
    CacheClient__DictionarySetRequest none = CACHE_CLIENT____DICTIONARY_SET_REQUEST__INIT;
    none.dictionary_name = B("none");
    assert_int_equal(call(SCS "DictionarySet", &none.base, NULL), 0);
    assert_int_equal(item_type("none"), -1);
}

static void test_dictionary_increment(void **state)
{
    (void)state;
    int64_t v = 0;
    char buf[64];
    /* A missing dictionary and field count from 0; the sum is stored as text. */
    assert_int_equal(dict_incr("cnt", "n", 1, &v), 0);
    assert_int_equal(v, 1);
    assert_int_equal(dict_incr("cnt", "n", 41, &v), 0);
    assert_int_equal(v, 42);
    assert_int_equal(dict_incr("cnt", "n", -1042, &v), 0);
    assert_int_equal(v, -1000);
    assert_int_equal(dict_get("cnt", "n", buf, sizeof(buf)), 1);
    assert_string_equal(buf, "-1000");
    /* An amount of 0 reads a stored number (the JS SDK's "setting and
     * resetting field"). */
    assert_int_equal(dict_set("cnt", 60000, false, "t=10"), 0);
    assert_int_equal(dict_incr("cnt", "t", 0, &v), 0);
    assert_int_equal(v, 10);
    /* Not a number, or an overflow: FAILED_PRECONDITION, value untouched. */
    assert_int_equal(dict_set("cnt", 60000, false, "x=abcxyz", "big=9223372036854775807"), 0);
    assert_int_equal(dict_incr("cnt", "x", 1, &v), ST_FAILED_PRECONDITION);
    assert_int_equal(dict_incr("cnt", "big", 1, &v), ST_FAILED_PRECONDITION);
    assert_int_equal(dict_get("cnt", "x", buf, sizeof(buf)), 1);
    assert_string_equal(buf, "abcxyz");
    assert_int_equal(dict_get("cnt", "big", buf, sizeof(buf)), 1);
    assert_string_equal(buf, "9223372036854775807");
}

/* ---- CollectionTtl ----------------------------------------------------------- */

static void test_collection_ttl(void **state)
{
    (void)state;
    /* Created with the request's TTL; a later write without refresh_ttl
     * keeps it, one with refresh_ttl resets it. */
    assert_int_equal(dict_set("t1", 5000, false, "a=1"), 0);
    assert_int_equal(dict_set("t1", 600000, false, "b=2"), 0);
    long long left = ttl_left("t1");
    assert_true(left > 0 && left <= 5000);
    assert_int_equal(dict_set("t1", 600000, true, "c=3"), 0);
    assert_true(ttl_left("t1") > 500000);

    assert_int_equal(set_add("t2", 5000, true, (const char *const[]){"a", NULL}), 0);
    assert_int_equal(set_add("t2", 600000, false, (const char *const[]){"b", NULL}), 0);
    left = ttl_left("t2");
    assert_true(left > 0 && left <= 5000);
    assert_int_equal(set_add("t2", 600000, true, (const char *const[]){"c", NULL}), 0);
    assert_true(ttl_left("t2") > 500000);

    /* It expires as a scalar does. On a loaded machine more than the TTL
     * can pass before the first read: then it may already be gone. */
    int64_t t0 = tu_now_ms();
    assert_int_equal(dict_set("t3", TU_MS(100), false, "a=1"), 0);
    assert_int_equal(set_add("t4", TU_MS(100), false, (const char *const[]){"a", NULL}), 0);
    long n = dict_length("t3");
    if (n != 1) {
        assert_int_equal(n, -1);
        assert_true(tu_now_ms() - t0 >= TU_MS(100));
    }
    usleep((useconds_t)TU_MS(300) * 1000);
    assert_int_equal(dict_length("t3"), -1);
    assert_int_equal(set_length("t4"), -1);
}

/* ---- Types ------------------------------------------------------------------- */

static void test_types(void **state)
{
    (void)state;
    assert_int_equal(scalar_set_at(tu_fx.target, "sc", "1", 1), 0);
    assert_int_equal(dict_set("dc", 60000, false, "a=1"), 0);
    assert_int_equal(SET_ADD("st", "a"), 0);
    assert_int_equal(item_type("sc"), CACHE_CLIENT____ITEM_GET_TYPE_RESPONSE__ITEM_TYPE__SCALAR);
    assert_int_equal(item_type("dc"), CACHE_CLIENT____ITEM_GET_TYPE_RESPONSE__ITEM_TYPE__DICTIONARY);
    assert_int_equal(item_type("st"), CACHE_CLIENT____ITEM_GET_TYPE_RESPONSE__ITEM_TYPE__SET);
    assert_int_equal(item_type("nothing"), -1);

    /* A collection op on a scalar, or on the other family. */
    assert_int_equal(dict_get("sc", "a", NULL, 0), -ST_FAILED_PRECONDITION);
    assert_int_equal(dict_set("sc", 60000, false, "a=1"), ST_FAILED_PRECONDITION);
    assert_int_equal(dict_set("st", 60000, false, "a=1"), ST_FAILED_PRECONDITION);
    assert_int_equal(SET_ADD("dc", "a"), ST_FAILED_PRECONDITION);
    assert_int_equal(set_length("sc"), -100 - ST_FAILED_PRECONDITION);
    CacheClient__SetFetchRequest sf = CACHE_CLIENT____SET_FETCH_REQUEST__INIT;
    sf.set_name = B("dc");
    expect_error(SCS "SetFetch", &sf.base, ST_FAILED_PRECONDITION, mismatch);

    /* A scalar op that needs a value, on a collection. */
    CacheClient__GetRequest get = CACHE_CLIENT____GET_REQUEST__INIT;
    get.cache_key = B("dc");
    expect_error(SCS "Get", &get.base, ST_FAILED_PRECONDITION, mismatch);
    CacheClient__IncrementRequest inc = CACHE_CLIENT____INCREMENT_REQUEST__INIT;
    inc.cache_key = B("st");
    inc.amount = 1;
    expect_error(SCS "Increment", &inc.base, ST_FAILED_PRECONDITION, mismatch);
    CacheClient__GetBatchRequest gb = CACHE_CLIENT____GET_BATCH_REQUEST__INIT;
    CacheClient__GetRequest items[2] = {CACHE_CLIENT____GET_REQUEST__INIT,
                                        CACHE_CLIENT____GET_REQUEST__INIT};
    CacheClient__GetRequest *ptrs[2] = {&items[0], &items[1]};
    items[0].cache_key = B("sc");
    items[1].cache_key = B("dc");
    gb.items = ptrs;
    gb.n_items = 2;
    /* In a GetBatch the collection is its own item's error, the scalar a
     * hit (test_server_batch_items.c has the details). */
    tu_raw_reply gr;
    assert_int_equal(call(SCS "GetBatch", &gb.base, &gr), ST_OK);
    assert_int_equal(gr.n_msgs, 2);
    CacheClient__GetResponse *g1 = cache_client____get_response__unpack(NULL, gr.lens[1], gr.msgs[1]);
    assert_non_null(g1);
    assert_int_equal(g1->result, CACHE_CLIENT__ECACHE_RESULT__Invalid);
    assert_string_equal(g1->message, mismatch);
    cache_client____get_response__free_unpacked(g1, NULL);
    tu_raw_reply_free(&gr);
    /* The mismatch changed nothing. */
    assert_int_equal(dict_length("dc"), 1);
    assert_int_equal(set_length("st"), 1);

    /* Set replaces a collection, and Delete removes one, as any key. */
    assert_int_equal(scalar_set_at(tu_fx.target, "dc", "v", 1), 0);
    assert_int_equal(item_type("dc"), CACHE_CLIENT____ITEM_GET_TYPE_RESPONSE__ITEM_TYPE__SCALAR);
    CacheClient__DeleteRequest del = CACHE_CLIENT____DELETE_REQUEST__INIT;
    del.cache_key = B("st");
    assert_int_equal(call(SCS "Delete", &del.base, NULL), 0);
    assert_int_equal(set_length("st"), -1);
}

/* ---- Sets ------------------------------------------------------------------------ */

static void test_set_values(void **state)
{
    (void)state;
    /* Duplicates count once; an empty element is an element. */
    assert_int_equal(SET_ADD("s", "a", "b", "b", ""), 0);
    assert_int_equal(set_length("s"), 3);
    assert_int_equal(set_contains("s", "a"), 1);
    assert_int_equal(set_contains("s", ""), 1);
    assert_int_equal(set_contains("s", "z"), 0);
    assert_int_equal(set_contains("nos", "a"), -1);
    assert_int_equal(set_length("nos"), -1);

    CacheClient__SetFetchRequest fr = CACHE_CLIENT____SET_FETCH_REQUEST__INIT;
    fr.set_name = B("s");
    tu_raw_reply r;
    assert_int_equal(call(SCS "SetFetch", &fr.base, &r), 0);
    CacheClient__SetFetchResponse *f = cache_client____set_fetch_response__unpack(NULL, r.lens[0], r.msgs[0]);
    assert_int_equal(f->set_case, CACHE_CLIENT____SET_FETCH_RESPONSE__SET_FOUND);
    assert_int_equal(f->found->n_elements, 3);
    size_t total = 0;
    for (size_t i = 0; i < 3; i++)
        total += f->found->elements[i].len;
    assert_int_equal(total, 2); /* "a", "b" and "" */
    protobuf_c_message_free_unpacked(&f->base, NULL);
    tu_raw_reply_free(&r);

    /* Removing what is there and what is not; the last one removes the set. */
    CacheClient__SetDifferenceRequest d = CACHE_CLIENT____SET_DIFFERENCE_REQUEST__INIT;
    CacheClient__SetDifferenceRequest__Subtrahend sub =
        CACHE_CLIENT____SET_DIFFERENCE_REQUEST____SUBTRAHEND__INIT;
    CacheClient__SetDifferenceRequest__Subtrahend__Set sset =
        CACHE_CLIENT____SET_DIFFERENCE_REQUEST____SUBTRAHEND____SET__INIT;
    ProtobufCBinaryData rm[] = {B("a"), B("zz")};
    sset.elements = rm;
    sset.n_elements = 2;
    sub.subtrahend_set_case = CACHE_CLIENT____SET_DIFFERENCE_REQUEST____SUBTRAHEND__SUBTRAHEND_SET_SET;
    sub.set = &sset;
    d.set_name = B("s");
    d.difference_case = CACHE_CLIENT____SET_DIFFERENCE_REQUEST__DIFFERENCE_SUBTRAHEND;
    d.subtrahend = &sub;
    CacheClient__SetDifferenceResponse *dr =
        ask(SCS "SetDifference", &d.base,
            &cache_client____set_difference_response__descriptor, NULL);
    assert_int_equal(dr->set_case, CACHE_CLIENT____SET_DIFFERENCE_RESPONSE__SET_FOUND);
    protobuf_c_message_free_unpacked(&dr->base, NULL);
    assert_int_equal(set_length("s"), 2);
    assert_int_equal(set_contains("s", "a"), 0);
    ProtobufCBinaryData rest[] = {B("b"), B("")};
    sset.elements = rest;
    assert_int_equal(call(SCS "SetDifference", &d.base, NULL), 0);
    assert_int_equal(set_length("s"), -1);
    assert_int_equal(item_type("s"), -1);
    /* On a missing set: Missing. */
    assert_int_equal(call(SCS "SetDifference", &d.base, &r), 0);
    dr = cache_client____set_difference_response__unpack(NULL, r.lens[0], r.msgs[0]);
    assert_int_equal(dr->set_case, CACHE_CLIENT____SET_DIFFERENCE_RESPONSE__SET_MISSING);
    protobuf_c_message_free_unpacked(&dr->base, NULL);
    tu_raw_reply_free(&r);

    /* The identity removes the whole set. */
    assert_int_equal(SET_ADD("s", "a", "b"), 0);
    CacheClient__SetDifferenceRequest__Subtrahend__Identity id =
        CACHE_CLIENT____SET_DIFFERENCE_REQUEST____SUBTRAHEND____IDENTITY__INIT;
    sub.subtrahend_set_case =
        CACHE_CLIENT____SET_DIFFERENCE_REQUEST____SUBTRAHEND__SUBTRAHEND_SET_IDENTITY;
    sub.identity = &id;
    assert_int_equal(call(SCS "SetDifference", &d.base, NULL), 0);
    assert_int_equal(set_length("s"), -1);

    /* The minuend: the set becomes the request's elements it did not hold. */
    assert_int_equal(SET_ADD("m", "a", "b"), 0);
    CacheClient__SetDifferenceRequest md = CACHE_CLIENT____SET_DIFFERENCE_REQUEST__INIT;
    CacheClient__SetDifferenceRequest__Minuend mi = CACHE_CLIENT____SET_DIFFERENCE_REQUEST____MINUEND__INIT;
    ProtobufCBinaryData me[] = {B("b"), B("c"), B("d")};
    mi.elements = me;
    mi.n_elements = 3;
    md.set_name = B("m");
    md.difference_case = CACHE_CLIENT____SET_DIFFERENCE_REQUEST__DIFFERENCE_MINUEND;
    md.minuend = &mi;
    assert_int_equal(call(SCS "SetDifference", &md.base, NULL), 0);
    assert_int_equal(set_length("m"), 2);
    assert_int_equal(set_contains("m", "c"), 1);
    assert_int_equal(set_contains("m", "d"), 1);
    assert_int_equal(set_contains("m", "a"), 0);
    assert_int_equal(set_contains("m", "b"), 0);
}

/* The elements of a SetSample or SetPop reply, as "e<i>" numbers marked in
 * `seen` (each at most once); returns how many. */
static size_t mark(const ProtobufCBinaryData *e, size_t n, unsigned char *seen)
{
    for (size_t i = 0; i < n; i++) {
        char buf[16];
        assert_true(e[i].len > 1 && e[i].len < sizeof(buf));
        memcpy(buf, e[i].data, e[i].len);
        buf[e[i].len] = '\0';
        int k = atoi(buf + 1);
        assert_true(k >= 0 && k < 100);
        assert_int_equal(seen[k], 0); /* without replacement */
        seen[k] = 1;
    }
    return n;
}

static size_t sample(const char *name, uint64_t limit, unsigned char *seen)
{
    CacheClient__SetSampleRequest req = CACHE_CLIENT____SET_SAMPLE_REQUEST__INIT;
    req.set_name = B(name);
    req.limit = limit;
    CacheClient__SetSampleResponse *resp =
        ask(SCS "SetSample", &req.base, &cache_client____set_sample_response__descriptor, NULL);
    assert_int_equal(resp->set_case, CACHE_CLIENT____SET_SAMPLE_RESPONSE__SET_FOUND);
    size_t n = mark(resp->found->elements, resp->found->n_elements, seen);
    protobuf_c_message_free_unpacked(&resp->base, NULL);
    return n;
}

static void add_hundred(const char *name)
{
    char names[100][8];
    const char *elems[101];
    for (int i = 0; i < 100; i++) {
        snprintf(names[i], sizeof(names[i]), "e%d", i);
        elems[i] = names[i];
    }
    elems[100] = NULL;
    assert_int_equal(set_add(name, 60000, true, elems), 0);
}

static void test_set_sample(void **state)
{
    (void)state;
    add_hundred("smp");
    unsigned char a[100] = {0}, b[100] = {0}, all[100] = {0};
    assert_int_equal(sample("smp", 10, a), 10);
    assert_int_equal(sample("smp", 10, b), 10);
    /* Two random tens out of a hundred are the same ten once in 10^13. */
    assert_memory_not_equal(a, b, sizeof(a));
    assert_int_equal(sample("smp", 0, a + 0 /* nothing marked */), 0);
    assert_int_equal(sample("smp", 1000, all), 100);
    assert_int_equal(set_length("smp"), 100); /* sampling removes nothing */

    CacheClient__SetSampleRequest req = CACHE_CLIENT____SET_SAMPLE_REQUEST__INIT;
    req.set_name = B("nosmp");
    req.limit = 3;
    CacheClient__SetSampleResponse *resp =
        ask(SCS "SetSample", &req.base, &cache_client____set_sample_response__descriptor, NULL);
    assert_int_equal(resp->set_case, CACHE_CLIENT____SET_SAMPLE_RESPONSE__SET_MISSING);
    protobuf_c_message_free_unpacked(&resp->base, NULL);
}

/* SetPop: how many elements came back (marked in `seen`), or -1 missing. */
static long pop(const char *name, uint32_t count, unsigned char *seen)
{
    CacheClient__SetPopRequest req = CACHE_CLIENT____SET_POP_REQUEST__INIT;
    req.set_name = B(name);
    req.count = count;
    CacheClient__SetPopResponse *resp =
        ask(SCS "SetPop", &req.base, &cache_client____set_pop_response__descriptor, NULL);
    long n = -1;
    if (resp->set_case == CACHE_CLIENT____SET_POP_RESPONSE__SET_FOUND)
        n = (long)mark(resp->found->elements, resp->found->n_elements, seen);
    protobuf_c_message_free_unpacked(&resp->base, NULL);
    return n;
}

static void test_set_pop(void **state)
{
    (void)state;
    add_hundred("pp");
    unsigned char seen[100] = {0};
    assert_int_equal(pop("pp", 30, seen), 30);
    assert_int_equal(set_length("pp"), 70);
    /* What was popped is gone, and what was not is there. */
    for (int i = 0; i < 100; i++) {
        char e[8];
        snprintf(e, sizeof(e), "e%d", i);
        assert_int_equal(set_contains("pp", e), seen[i] ? 0 : 1);
    }
    /* More than there is: the rest, every element popped exactly once, and
     * the set is gone. */
    assert_int_equal(pop("pp", 1000, seen), 70);
    for (int i = 0; i < 100; i++)
        assert_int_equal(seen[i], 1);
    assert_int_equal(set_length("pp"), -1);
    assert_int_equal(pop("pp", 1, seen), -1);
    /* Chosen at random: two sets filled alike give up different tens. */
    add_hundred("pa");
    add_hundred("pb");
    unsigned char a[100] = {0}, b[100] = {0};
    assert_int_equal(pop("pa", 10, a), 10);
    assert_int_equal(pop("pb", 10, b), 10);
    assert_memory_not_equal(a, b, sizeof(a));
    /* A count of 0 is refused. */
    CacheClient__SetPopRequest req = CACHE_CLIENT____SET_POP_REQUEST__INIT;
    req.set_name = B("pp");
    expect_error(SCS "SetPop", &req.base, ST_INVALID_ARGUMENT, NULL);
}

/* The set's index (an open-addressing table of places in its array,
 * rpc_set.c) against a model: 3000 random operations on values drawn
 * from 4000 short strings and "" - unions, removals, pops and samples
 * (which reorder the array the table points into), minuend differences,
 * the set emptied and made again - each checked, and every 100 the whole
 * set: contains for every value, fetch, length. */
enum { MODEL_VALUES = 4000 };

static ProtobufCBinaryData model_value(size_t k, char *buf)
{
    if (k == 0)
        return (ProtobufCBinaryData){0, NULL};
    int len = snprintf(buf, 16, "m%zu", k);
    return (ProtobufCBinaryData){(size_t)len, (uint8_t *)buf};
}

static size_t model_index(const ProtobufCBinaryData *e)
{
    if (e->len == 0)
        return 0;
    char buf[16];
    assert_true(e->len < sizeof(buf) && e->data[0] == 'm');
    memcpy(buf, e->data, e->len);
    buf[e->len] = '\0';
    long k = atol(buf + 1);
    assert_true(k > 0 && k < MODEL_VALUES);
    return (size_t)k;
}

static uint64_t model_rng = 0x2545f4914f6cdd1du;

static size_t model_below(size_t n)
{
    model_rng ^= model_rng << 13;
    model_rng ^= model_rng >> 7;
    model_rng ^= model_rng << 17;
    return (size_t)(model_rng % n);
}

static void model_check_all(const unsigned char *in)
{
    static ProtobufCBinaryData all[MODEL_VALUES];
    static char bufs[MODEL_VALUES][16];
    size_t count = 0;
    for (size_t k = 0; k < MODEL_VALUES; k++) {
        all[k] = model_value(k, bufs[k]);
        count += in[k];
    }
    CacheClient__SetContainsRequest req = CACHE_CLIENT____SET_CONTAINS_REQUEST__INIT;
    req.set_name = B("model");
    req.elements = all;
    req.n_elements = MODEL_VALUES;
    tu_raw_reply r;
    assert_int_equal(call(SCS "SetContains", &req.base, &r), 0);
    CacheClient__SetContainsResponse *resp =
        cache_client____set_contains_response__unpack(NULL, r.lens[0], r.msgs[0]);
    if (count == 0) {
        assert_int_equal(resp->set_case, CACHE_CLIENT____SET_CONTAINS_RESPONSE__SET_MISSING);
    } else {
        assert_int_equal(resp->found->n_contains, MODEL_VALUES);
        for (size_t k = 0; k < MODEL_VALUES; k++)
            if ((bool)resp->found->contains[k] != (bool)in[k])
                fail_msg("value %zu: the set says %d, the model %d", k, resp->found->contains[k], in[k]);
    }
    protobuf_c_message_free_unpacked(&resp->base, NULL);
    tu_raw_reply_free(&r);
    assert_int_equal(set_length("model"), count ? (long)count : -1);
    if (count) {
        CacheClient__SetFetchRequest f = CACHE_CLIENT____SET_FETCH_REQUEST__INIT;
        f.set_name = B("model");
        assert_int_equal(call(SCS "SetFetch", &f.base, &r), 0);
        CacheClient__SetFetchResponse *fr =
            cache_client____set_fetch_response__unpack(NULL, r.lens[0], r.msgs[0]);
        assert_int_equal(fr->found->n_elements, count);
        unsigned char seen[MODEL_VALUES] = {0};
        for (size_t i = 0; i < fr->found->n_elements; i++) {
            size_t k = model_index(&fr->found->elements[i]);
            assert_true(in[k] && !seen[k]);
            seen[k] = 1;
        }
        protobuf_c_message_free_unpacked(&fr->base, NULL);
        tu_raw_reply_free(&r);
    }
}

static void test_set_index_against_model(void **state)
{
    (void)state;
    static unsigned char in[MODEL_VALUES];
    memset(in, 0, sizeof(in));
    char bufs[64][16];
    ProtobufCBinaryData batch[64];
    tu_raw_reply r;
    for (int op = 0; op < 3000; op++) {
        size_t n = 1 + model_below(64), kind = model_below(10);
        size_t keys[64];
        for (size_t i = 0; i < n; i++) {
            /* Mostly the first 1000 values, so that operations meet. */
            keys[i] = model_below(4) ? model_below(1000) : model_below(MODEL_VALUES);
            batch[i] = model_value(keys[i], bufs[i]);
        }
        if (kind < 4) { /* SetUnion */
            CacheClient__SetUnionRequest q = CACHE_CLIENT____SET_UNION_REQUEST__INIT;
            q.set_name = B("model");
            q.elements = batch;
            q.n_elements = n;
            q.ttl_milliseconds = 600000;
            assert_int_equal(call(SCS "SetUnion", &q.base, &r), 0);
            tu_raw_reply_free(&r);
            for (size_t i = 0; i < n; i++)
                in[keys[i]] = 1;
        } else if (kind < 6) { /* SetDifference, subtrahend */
            CacheClient__SetDifferenceRequest__Subtrahend__Set sub =
                CACHE_CLIENT____SET_DIFFERENCE_REQUEST____SUBTRAHEND____SET__INIT;
            sub.elements = batch;
            sub.n_elements = n;
            CacheClient__SetDifferenceRequest__Subtrahend sb =
                CACHE_CLIENT____SET_DIFFERENCE_REQUEST____SUBTRAHEND__INIT;
            sb.subtrahend_set_case =
                CACHE_CLIENT____SET_DIFFERENCE_REQUEST____SUBTRAHEND__SUBTRAHEND_SET_SET;
            sb.set = &sub;
            CacheClient__SetDifferenceRequest q = CACHE_CLIENT____SET_DIFFERENCE_REQUEST__INIT;
            q.set_name = B("model");
            q.difference_case = CACHE_CLIENT____SET_DIFFERENCE_REQUEST__DIFFERENCE_SUBTRAHEND;
            q.subtrahend = &sb;
            assert_int_equal(call(SCS "SetDifference", &q.base, &r), 0);
            tu_raw_reply_free(&r);
            for (size_t i = 0; i < n; i++)
                in[keys[i]] = 0;
        } else if (kind < 8) { /* SetPop or SetSample of up to n */
            bool popping = kind == 6;
            CacheClient__SetPopRequest pq = CACHE_CLIENT____SET_POP_REQUEST__INIT;
            CacheClient__SetSampleRequest sq = CACHE_CLIENT____SET_SAMPLE_REQUEST__INIT;
            pq.set_name = sq.set_name = B("model");
            pq.count = (uint32_t)n;
            sq.limit = n;
            assert_int_equal(popping ? call(SCS "SetPop", &pq.base, &r)
                                     : call(SCS "SetSample", &sq.base, &r),
                             0);
            /* Both answers are a Found of elements or a Missing: the same
             * wire shape (field 1 Found { 1: elements }, 2 Missing). */
            CacheClient__SetFetchResponse *fr =
                cache_client____set_fetch_response__unpack(NULL, r.lens[0], r.msgs[0]);
            size_t held = 0;
            for (size_t k = 0; k < MODEL_VALUES; k++)
                held += in[k];
            if (fr->set_case == CACHE_CLIENT____SET_FETCH_RESPONSE__SET_FOUND) {
                assert_int_equal(fr->found->n_elements, held < n ? held : n);
                unsigned char seen[MODEL_VALUES] = {0};
                for (size_t i = 0; i < fr->found->n_elements; i++) {
                    size_t k = model_index(&fr->found->elements[i]);
                    assert_true(in[k] && !seen[k]);
                    seen[k] = 1;
                }
                for (size_t k = 0; popping && k < MODEL_VALUES; k++)
                    if (seen[k])
                        in[k] = 0;
            } else {
                assert_int_equal(held, 0);
            }
            protobuf_c_message_free_unpacked(&fr->base, NULL);
            tu_raw_reply_free(&r);
        } else if (kind == 8 && model_below(4) == 0) { /* minuend: request - stored */
            CacheClient__SetDifferenceRequest__Minuend mi =
                CACHE_CLIENT____SET_DIFFERENCE_REQUEST____MINUEND__INIT;
            mi.elements = batch;
            mi.n_elements = n;
            CacheClient__SetDifferenceRequest q = CACHE_CLIENT____SET_DIFFERENCE_REQUEST__INIT;
            q.set_name = B("model");
            q.difference_case = CACHE_CLIENT____SET_DIFFERENCE_REQUEST__DIFFERENCE_MINUEND;
            q.minuend = &mi;
            assert_int_equal(call(SCS "SetDifference", &q.base, &r), 0);
            tu_raw_reply_free(&r);
            bool any = false;
            for (size_t k = 0; k < MODEL_VALUES; k++)
                any = any || in[k];
            if (any) {
                unsigned char next[MODEL_VALUES] = {0};
                for (size_t i = 0; i < n; i++)
                    next[keys[i]] = !in[keys[i]];
                memcpy(in, next, sizeof(in));
            }
        } else { /* SetContains of the batch */
            CacheClient__SetContainsRequest q = CACHE_CLIENT____SET_CONTAINS_REQUEST__INIT;
            q.set_name = B("model");
            q.elements = batch;
            q.n_elements = n;
            assert_int_equal(call(SCS "SetContains", &q.base, &r), 0);
            CacheClient__SetContainsResponse *cr =
                cache_client____set_contains_response__unpack(NULL, r.lens[0], r.msgs[0]);
            if (cr->set_case == CACHE_CLIENT____SET_CONTAINS_RESPONSE__SET_FOUND)
                for (size_t i = 0; i < n; i++)
                    assert_int_equal((bool)cr->found->contains[i], (bool)in[keys[i]]);
            protobuf_c_message_free_unpacked(&cr->base, NULL);
            tu_raw_reply_free(&r);
        }
        if (op % 100 == 99)
            model_check_all(in);
    }
    model_check_all(in);
}

/* ---- Limits ---------------------------------------------------------------------- */

static void test_bad_arguments(void **state)
{
    (void)state;
    /* An empty collection name, as an empty key. */
    assert_int_equal(dict_set("", 60000, false, "a=1"), ST_INVALID_ARGUMENT);
    assert_int_equal(set_length(""), -100 - ST_INVALID_ARGUMENT);
    /* One element over Momento's 128 KB: element_size_limit_exceeded. */
    size_t big = 128 * 1024 + 1;
    char *v = malloc(big);
    memset(v, 'x', big);
    ProtobufCBinaryData e = {big, (uint8_t *)v};
    CacheClient__SetUnionRequest req = CACHE_CLIENT____SET_UNION_REQUEST__INIT;
    req.set_name = B("big");
    req.elements = &e;
    req.n_elements = 1;
    tu_raw_reply r;
    assert_int_equal(call(SCS "SetUnion", &req.base, &r), ST_RESOURCE_EXHAUSTED);
    assert_string_equal(r.err, "element_size_limit_exceeded");
    tu_raw_reply_free(&r);
    e.len = big - 1; /* at the limit: stored */
    assert_int_equal(call(SCS "SetUnion", &req.base, NULL), 0);
    assert_int_equal(set_length("big"), 1);
    free(v);
}

/* Under --max-memory a collection's elements count: a dictionary holding
 * ~48 KiB is evicted once ~48 KiB of newer scalars need the room, which
 * its key alone would never have made it. */
static void test_max_memory(void **state)
{
    (void)state;
    momento_local_options *o = tu_options("c");
    momento_local_options_set_max_memory(o, 100 * 1024);
    momento_local *s = tu_start(o);
    const char *ep = momento_local_endpoint(s);

    static char value[4096 + 2];
    memset(value, 'v', 4096);
    value[4096] = '\0';
    char pairs[12][4200];
    const char *list[13];
    for (int i = 0; i < 12; i++) {
        snprintf(pairs[i], sizeof(pairs[i]), "f%d=%s", i, value);
        list[i] = pairs[i];
    }
    list[12] = NULL;
    assert_int_equal(dict_set_at(ep, "dict", 60000, false, list), 0);
    /* ~48 KiB of dictionary and ~48 KiB of scalars fit in 100 KiB together
     * only just; a few more scalars must evict the dictionary (the least
     * recently used), and nothing else. */
    char key[16];
    for (int i = 0; i < 14; i++) {
        snprintf(key, sizeof(key), "k%d", i);
        assert_int_equal(scalar_set_at(ep, key, value, 4096), 0);
    }
    CacheClient__KeysExistRequest ke = CACHE_CLIENT____KEYS_EXIST_REQUEST__INIT;
    ProtobufCBinaryData keys[] = {B("dict"), B("k0"), B("k13")};
    ke.cache_keys = keys;
    ke.n_cache_keys = 3;
    CacheClient__KeysExistResponse *kr =
        srv_call(ep, SCS "KeysExist", cache_hdr, 1, &ke.base,
                 &cache_client____keys_exist_response__descriptor, NULL);
    assert_int_equal(kr->n_exists, 3);
    const protobuf_c_boolean want[] = {0, 1, 1};
    assert_memory_equal(kr->exists, want, sizeof(want));
    protobuf_c_message_free_unpacked(&kr->base, NULL);

    /* A collection --max-memory cannot hold at all is refused as an item
     * would be, and leaves what was there: 30 fields of 4 KiB is past
     * 100 KiB, so the write fails whole. */
    assert_int_equal(dict_set_at(ep, "d2", 60000, false, (const char *const[]){"a=1", NULL}), 0);
    char names[30][8];
    ProtobufCBinaryData fields[30], values[30];
    for (int i = 0; i < 30; i++) {
        snprintf(names[i], sizeof(names[i]), "g%d", i);
        fields[i] = B(names[i]);
        values[i] = (ProtobufCBinaryData){4096, (uint8_t *)value};
    }
    CacheClient__DictionaryFieldValuePair items[30], *ptrs[30];
    CacheClient__DictionarySetRequest req;
    dict_set_req(&req, "d2", items, ptrs, fields, values, 30);
    expect_too_big(ep, SCS "DictionarySet", &req.base);
    CacheClient__DictionaryLengthRequest lr = CACHE_CLIENT____DICTIONARY_LENGTH_REQUEST__INIT;
    lr.dictionary_name = B("d2");
    CacheClient__DictionaryLengthResponse *l =
        srv_call(ep, SCS "DictionaryLength", cache_hdr, 1, &lr.base,
                 &cache_client____dictionary_length_response__descriptor, NULL);
    assert_int_equal(l->dictionary_case, CACHE_CLIENT____DICTIONARY_LENGTH_RESPONSE__DICTIONARY_FOUND);
    assert_int_equal(l->found->length, 1);
    protobuf_c_message_free_unpacked(&l->base, NULL);
    momento_local_stop(s);
}

/* ---- Per-request limits ------------------------------------------------------- */

/* `n` distinct byte strings of `len` bytes (len >= 4: the index is in the
 * first four), in one block the caller frees with free_elems(). */
static ProtobufCBinaryData *make_elems(size_t n, size_t len)
{
    ProtobufCBinaryData *e = calloc(n ? n : 1, sizeof(*e));
    uint8_t *bytes = malloc(n * len + 1);
    assert_non_null(e);
    assert_non_null(bytes);
    memset(bytes, 'e', n * len);
    for (size_t i = 0; i < n; i++) {
        uint8_t *p = bytes + i * len;
        p[0] = (uint8_t)(i >> 24);
        p[1] = (uint8_t)(i >> 16);
        p[2] = (uint8_t)(i >> 8);
        p[3] = (uint8_t)i;
        e[i] = (ProtobufCBinaryData){len, p};
    }
    return e;
}

static void free_elems(ProtobufCBinaryData *e)
{
    free(e[0].data);
    free(e);
}

/* SortedSetPut of the elements, each with score i; the status. */
static int zput_at(const char *ep, const char *name, const ProtobufCBinaryData *vals, size_t n,
                   tu_raw_reply *r)
{
    CacheClient__SortedSetElement *el = calloc(n ? n : 1, sizeof(*el));
    CacheClient__SortedSetElement **ptrs = calloc(n ? n : 1, sizeof(*ptrs));
    for (size_t i = 0; i < n; i++) {
        el[i] = (CacheClient__SortedSetElement)CACHE_CLIENT____SORTED_SET_ELEMENT__INIT;
        el[i].value = vals[i];
        el[i].score = (double)i;
        ptrs[i] = &el[i];
    }
    CacheClient__SortedSetPutRequest req = CACHE_CLIENT____SORTED_SET_PUT_REQUEST__INIT;
    req.set_name = B(name);
    req.elements = ptrs;
    req.n_elements = n;
    req.ttl_milliseconds = 60000;
    int st = call_at(ep, SCS "SortedSetPut", &req.base, r);
    free(el);
    free(ptrs);
    return st;
}

/* SortedSetUnionStore into `dest` of `n` sources, each `names[i % n_names]`
 * with weight 1; the status, the length stored in *len. */
static int zunion_at(const char *ep, const char *dest, const char *const *names, size_t n_names,
                     size_t n, tu_raw_reply *r, long *len)
{
    CacheClient__SortedSetUnionStoreRequest__Source *src = calloc(n ? n : 1, sizeof(*src));
    CacheClient__SortedSetUnionStoreRequest__Source **ptrs = calloc(n ? n : 1, sizeof(*ptrs));
    for (size_t i = 0; i < n; i++) {
        src[i] = (CacheClient__SortedSetUnionStoreRequest__Source)
            CACHE_CLIENT____SORTED_SET_UNION_STORE_REQUEST____SOURCE__INIT;
        src[i].set_name = B(names[i % n_names]);
        src[i].weight = 1;
        ptrs[i] = &src[i];
    }
    CacheClient__SortedSetUnionStoreRequest req = CACHE_CLIENT____SORTED_SET_UNION_STORE_REQUEST__INIT;
    req.set_name = B(dest);
    req.sources = ptrs;
    req.n_sources = n;
    req.ttl_milliseconds = 60000;
    int st = call_at(ep, SCS "SortedSetUnionStore", &req.base, r);
    *len = -1;
    if (st == 0) {
        CacheClient__SortedSetUnionStoreResponse *resp =
            cache_client____sorted_set_union_store_response__unpack(NULL, r->lens[0], r->msgs[0]);
        assert_non_null(resp);
        *len = (long)resp->length;
        protobuf_c_message_free_unpacked(&resp->base, NULL);
    }
    free(src);
    free(ptrs);
    return st;
}

/* The request named one 100,000-element set 1000 times and held
 * the server thread 22.5 s. A union now names at most 100 sources
 * (INVALID_ARGUMENT), and its sources may hold, together, at most what one
 * collection may (the 5 MiB item limit, counted as a fetch with scores
 * carries them): beyond that RESOURCE_EXHAUSTED before any is read, and
 * the destination is left alone. 50,000 elements of 16 bytes take 29
 * bytes each: 1,450,000 bytes, three times within the limit, four past. */
static void test_union_store_limits(void **state)
{
    (void)state;
    enum { N = 50000 };
    ProtobufCBinaryData *vals = make_elems(N, 16);
    tu_raw_reply r;
    assert_int_equal(zput_at(tu_fx.target, "zbig", vals, N, &r), 0);
    tu_raw_reply_free(&r);
    free_elems(vals);
    const char *big[] = {"zbig"}, *missing[] = {"nozset"};
    long len;

    assert_int_equal(zunion_at(tu_fx.target, "zu", big, 1, 1000, &r, &len), ST_INVALID_ARGUMENT);
    assert_string_equal(r.details, "SortedSetUnionStore takes at most 100 sources, not 1000");
    tu_raw_reply_free(&r);
    assert_int_equal(zunion_at(tu_fx.target, "zu", missing, 1, 101, &r, &len), ST_INVALID_ARGUMENT);
    tu_raw_reply_free(&r);
    assert_int_equal(zunion_at(tu_fx.target, "zu", missing, 1, 100, &r, &len), 0);
    tu_raw_reply_free(&r);
    assert_int_equal(len, 0);

    assert_int_equal(zunion_at(tu_fx.target, "zu", big, 1, 4, &r, &len), ST_RESOURCE_EXHAUSTED);
    assert_string_equal(r.err, "");
    assert_string_equal(r.details, "SortedSetUnionStore's sources hold 5800000 bytes, more than"
                                   " the item limit of 5242880 bytes one union may read");
    tu_raw_reply_free(&r);
    assert_int_equal(item_type("zu"), -1);
    assert_int_equal(zunion_at(tu_fx.target, "zu", big, 1, 3, &r, &len), 0);
    tu_raw_reply_free(&r);
    assert_int_equal(len, N);
    /* A source that is missing or empty adds nothing to the count. */
    const char *mixed[] = {"zbig", "nozset", "nozset", "zbig", "zbig"};
    assert_int_equal(zunion_at(tu_fx.target, "zu2", mixed, 5, 5, &r, &len), 0);
    tu_raw_reply_free(&r);
    assert_int_equal(len, N);
}

/* A collection is one item: its key and its elements, as a fetch of all
 * of it carries them, within the item limit (--max-item-bytes, here 4096).
 * A write past it is refused whole, as an item over the limit is
 * (RESOURCE_EXHAUSTED, item_size_limit_exceeded), and leaves the
 * collection as it was. */
static void test_collection_item_limit(void **state)
{
    (void)state;
    momento_local_options *o = tu_options("c");
    momento_local_options_set_max_item_bytes(o, 4096);
    momento_local *s = tu_start(o);
    const char *ep = momento_local_endpoint(s);
    tu_raw_reply r;

    /* A set: key "s" and 45 elements of 89 bytes (tag, length, bytes: 91
     * each) are 4096 bytes exactly; one more element, even an empty one,
     * is too many. */
    ProtobufCBinaryData *e = make_elems(45, 89);
    CacheClient__SetUnionRequest su = CACHE_CLIENT____SET_UNION_REQUEST__INIT;
    su.set_name = B("s");
    su.elements = e;
    su.n_elements = 45;
    assert_int_equal(call_at(ep, SCS "SetUnion", &su.base, NULL), 0);
    ProtobufCBinaryData none = {0, NULL};
    su.elements = &none;
    su.n_elements = 1;
    assert_int_equal(call_at(ep, SCS "SetUnion", &su.base, &r), ST_RESOURCE_EXHAUSTED);
    assert_string_equal(r.err, "item_size_limit_exceeded");
    assert_string_equal(r.details,
                        "item size 4098 bytes exceeds the limit of 4096 bytes (a collection is one item)");
    tu_raw_reply_free(&r);
    su.elements = e; /* elements it holds: no growth, accepted */
    su.n_elements = 3;
    assert_int_equal(call_at(ep, SCS "SetUnion", &su.base, NULL), 0);
    CacheClient__SetFetchRequest sf = CACHE_CLIENT____SET_FETCH_REQUEST__INIT;
    sf.set_name = B("s");
    CacheClient__SetFetchResponse *sr =
        srv_call(ep, SCS "SetFetch", cache_hdr, 1, &sf.base,
                 &cache_client____set_fetch_response__descriptor, NULL);
    assert_int_equal(sr->found->n_elements, 45);
    protobuf_c_message_free_unpacked(&sr->base, NULL);

    /* A list of the same: full; a push past it is refused, unless its
     * truncation keeps the list within the limit. */
    CacheClient__ListConcatenateBackRequest lc = CACHE_CLIENT____LIST_CONCATENATE_BACK_REQUEST__INIT;
    lc.list_name = B("l");
    lc.values = e;
    lc.n_values = 45;
    assert_int_equal(call_at(ep, SCS "ListConcatenateBack", &lc.base, NULL), 0);
    CacheClient__ListPushBackRequest lp = CACHE_CLIENT____LIST_PUSH_BACK_REQUEST__INIT;
    lp.list_name = B("l");
    lp.value = e[0];
    expect_too_big(ep, SCS "ListPushBack", &lp.base);
    lp.truncate_front_to_size = 45;
    CacheClient__ListPushBackResponse *lr =
        srv_call(ep, SCS "ListPushBack", cache_hdr, 1, &lp.base,
                 &cache_client____list_push_back_response__descriptor, NULL);
    assert_int_equal(lr->list_length, 45);
    protobuf_c_message_free_unpacked(&lr->base, NULL);

    /* A dictionary and a sorted set created past the limit: not created. */
    CacheClient__DictionaryFieldValuePair pairs[45], *pp[45];
    CacheClient__DictionarySetRequest ds;
    dict_set_req(&ds, "d", pairs, pp, e, e, 45);
    expect_too_big(ep, SCS "DictionarySet", &ds.base);
    ds.n_items = 20; /* 20 x 184 bytes: fits */
    assert_int_equal(call_at(ep, SCS "DictionarySet", &ds.base, NULL), 0);
    ds.items = pp + 20;
    ds.n_items = 5; /* 4 more would do, 5 is one too many */
    assert_int_equal(call_at(ep, SCS "DictionarySet", &ds.base, &r), ST_RESOURCE_EXHAUSTED);
    tu_raw_reply_free(&r);
    CacheClient__DictionaryLengthRequest dl = CACHE_CLIENT____DICTIONARY_LENGTH_REQUEST__INIT;
    dl.dictionary_name = B("d");
    CacheClient__DictionaryLengthResponse *dr =
        srv_call(ep, SCS "DictionaryLength", cache_hdr, 1, &dl.base,
                 &cache_client____dictionary_length_response__descriptor, NULL);
    assert_int_equal(dr->found->length, 20);
    protobuf_c_message_free_unpacked(&dr->base, NULL);

    assert_int_equal(zput_at(ep, "z", e, 45, &r), ST_RESOURCE_EXHAUSTED);
    assert_string_equal(r.err, "item_size_limit_exceeded");
    tu_raw_reply_free(&r);
    /* 36 elements of 89 bytes with scores take 102 bytes each: 3672. A
     * union of it is as big, and its destination's longer name tips it
     * over. */
    assert_int_equal(zput_at(ep, "z", e, 36, &r), 0);
    tu_raw_reply_free(&r);
    char dest[512];
    memset(dest, 'k', sizeof(dest) - 1);
    dest[sizeof(dest) - 1] = '\0';
    const char *src[] = {"z"};
    long len;
    assert_int_equal(zunion_at(ep, dest, src, 1, 1, &r, &len), ST_RESOURCE_EXHAUSTED);
    assert_string_equal(r.err, "item_size_limit_exceeded");
    tu_raw_reply_free(&r);
    assert_int_equal(zunion_at(ep, "z2", src, 1, 1, &r, &len), 0);
    tu_raw_reply_free(&r);
    assert_int_equal(len, 36);
    free_elems(e);
    momento_local_stop(s);
}

/* At the default limit, 5 MiB: a set of 51 elements of 100 KiB (102,404
 * bytes each with their framing) fits, a 52nd does not. */
static void test_collection_item_limit_default(void **state)
{
    (void)state;
    ProtobufCBinaryData *e = make_elems(52, 100 * 1024);
    CacheClient__SetUnionRequest su = CACHE_CLIENT____SET_UNION_REQUEST__INIT;
    su.set_name = B("huge");
    tu_raw_reply r;
    su.elements = e;
    su.n_elements = 26;
    assert_int_equal(call(SCS "SetUnion", &su.base, NULL), 0);
    su.elements = e + 26;
    su.n_elements = 25;
    assert_int_equal(call(SCS "SetUnion", &su.base, NULL), 0);
    su.elements = e + 51;
    su.n_elements = 1;
    assert_int_equal(call(SCS "SetUnion", &su.base, &r), ST_RESOURCE_EXHAUSTED);
    assert_string_equal(r.err, "item_size_limit_exceeded");
    tu_raw_reply_free(&r);
    assert_int_equal(set_length("huge"), 51);
    free_elems(e);
}

/* GetBatch naming one 1 MiB item 100 times, or DictionaryGet one 100 KiB
 * field 1000 times, would return 100 MB for a request of a few KB: past
 * the 64 MiB one reply may hold, refused before anything is copied. Ten
 * times each is answered. */
static void test_reply_limit(void **state)
{
    (void)state;
    size_t mib = 1024 * 1024;
    char *v = malloc(mib);
    assert_non_null(v);
    memset(v, 'v', mib);
    assert_int_equal(scalar_set_at(tu_fx.target, "one_mib", v, mib), 0);
    CacheClient__GetRequest g = CACHE_CLIENT____GET_REQUEST__INIT, *gp[100];
    g.cache_key = B("one_mib");
    for (size_t i = 0; i < 100; i++)
        gp[i] = &g;
    CacheClient__GetBatchRequest gb = CACHE_CLIENT____GET_BATCH_REQUEST__INIT;
    gb.items = gp;
    gb.n_items = 100;
    tu_raw_reply r;
    assert_int_equal(call(SCS "GetBatch", &gb.base, &r), ST_RESOURCE_EXHAUSTED);
    assert_string_equal(r.details,
                        "the reply would hold 104858200 bytes, more than the 67108864 one request"
                        " may return");
    tu_raw_reply_free(&r);
    gb.n_items = 10;
    assert_int_equal(call(SCS "GetBatch", &gb.base, &r), 0);
    assert_int_equal(r.n_msgs, 10);
    tu_raw_reply_free(&r);

    CacheClient__DictionaryFieldValuePair pair = CACHE_CLIENT____DICTIONARY_FIELD_VALUE_PAIR__INIT;
    CacheClient__DictionaryFieldValuePair *pairs[] = {&pair};
    pair.field = B("f");
    pair.value = (ProtobufCBinaryData){100 * 1024, (uint8_t *)v};
    CacheClient__DictionarySetRequest ds = CACHE_CLIENT____DICTIONARY_SET_REQUEST__INIT;
    ds.dictionary_name = B("dbig");
    ds.items = pairs;
    ds.n_items = 1;
    assert_int_equal(call(SCS "DictionarySet", &ds.base, NULL), 0);
    ProtobufCBinaryData *fields = calloc(1000, sizeof(*fields));
    for (size_t i = 0; i < 1000; i++)
        fields[i] = B("f");
    CacheClient__DictionaryGetRequest dg = CACHE_CLIENT____DICTIONARY_GET_REQUEST__INIT;
    dg.dictionary_name = B("dbig");
    dg.fields = fields;
    dg.n_fields = 1000;
    assert_int_equal(call(SCS "DictionaryGet", &dg.base, &r), ST_RESOURCE_EXHAUSTED);
    tu_raw_reply_free(&r);
    dg.n_fields = 10;
    assert_int_equal(call(SCS "DictionaryGet", &dg.base, NULL), 0);
    free(fields);
    free(v);
}

/* Flushing the cache frees its collections with it. */
static void test_flush(void **state)
{
    (void)state;
    assert_int_equal(dict_set("fl", 60000, false, "a=1"), 0);
    assert_int_equal(SET_ADD("fs", "a"), 0);
    ControlClient__FlushCacheRequest req = CONTROL_CLIENT____FLUSH_CACHE_REQUEST__INIT;
    req.cache_name = "c";
    tu_raw_reply r;
    assert_int_equal(call("/control_client.ScsControl/FlushCache", &req.base, &r), 0);
    tu_raw_reply_free(&r);
    assert_int_equal(dict_length("fl"), -1);
    assert_int_equal(set_length("fs"), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dictionary_values),
        cmocka_unit_test(test_dictionary_missing_and_emptied),
        cmocka_unit_test(test_dictionary_increment),
        cmocka_unit_test(test_collection_ttl),
        cmocka_unit_test(test_types),
        cmocka_unit_test(test_set_values),
        cmocka_unit_test(test_set_sample),
        cmocka_unit_test(test_set_pop),
        cmocka_unit_test(test_set_index_against_model),
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_max_memory),
        cmocka_unit_test(test_union_store_limits),
        cmocka_unit_test(test_collection_item_limit),
        cmocka_unit_test(test_collection_item_limit_default),
        cmocka_unit_test(test_reply_limit),
        cmocka_unit_test(test_flush),
    };
    return cmocka_run_group_tests(tests, tu_fixture_setup_server, tu_fixture_teardown);
}
