/* The local server's GetWithHash and SetIfHash, spoken to directly over
 * gRPC: the hash is SHA-256 of the value (known answers, so a change of
 * algorithm or a hash that drifts between runs fails here), each condition
 * stored and not stored, the new hash on Stored, TTLs, the refusals
 * (no condition, empty key, too big, unknown cache), the type mismatch on a
 * collection, a value near the item limit, and the fault-injection names. */
#include "srv_test.h"
#include "testutil.h"

#include "cacheclient.pb-c.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SCS "/cache_client.Scs/"

enum { ST_OK = 0, ST_INVALID_ARGUMENT = 3, ST_NOT_FOUND = 5, ST_RESOURCE_EXHAUSTED = 8,
       ST_FAILED_PRECONDITION = 9, ST_UNAVAILABLE = 14 };

/* SHA-256 of "abc" and of the empty string (FIPS 180-2 test vectors). */
static const uint8_t sha_abc[32] = {
    0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01, 0xcf, 0xea, 0x41, 0x41, 0x40, 0xde, 0x5d, 0xae, 0x22, 0x23,
    0xb0, 0x03, 0x61, 0xa3, 0x96, 0x17, 0x7a, 0x9c, 0xb4, 0x10, 0xff, 0x61, 0xf2, 0x00, 0x15, 0xad};
static const uint8_t sha_empty[32] = {
    0xe3, 0xb0, 0xc4, 0x42, 0x98, 0xfc, 0x1c, 0x14, 0x9a, 0xfb, 0xf4, 0xc8, 0x99, 0x6f, 0xb9, 0x24,
    0x27, 0xae, 0x41, 0xe4, 0x64, 0x9b, 0x93, 0x4c, 0xa4, 0x95, 0x99, 0x1b, 0x78, 0x52, 0xb8, 0x55};

static const char *const cache_hdr[] = {"cache", "c"};
static const char *const mismatch =
    "The stored type for this key is not compatible with this operation";

#define B(str) ((ProtobufCBinaryData){strlen(str), (uint8_t *)(str)})

/* Packs `m` and calls `path` with `headers` (pairs); the reply is left in
 * `tu_fx.reply` until the next call. Returns the status. */
static int call_with(const char *path, const ProtobufCMessage *m, const char *const *headers,
                     size_t n_headers)
{
    tu_raw_reply_free(tu_fx.reply);
    return tu_raw_call_msg(tu_fx.target, path, headers, n_headers, m, tu_fx.reply);
}

static int call(const char *path, const ProtobufCMessage *m)
{
    return call_with(path, m, cache_hdr, 1);
}

/* ---- Requests ------------------------------------------------------------ */

/* Copies a hash of a reply into `out` (room for 64 bytes); its length. */
static size_t copy_hash(uint8_t *out, ProtobufCBinaryData h)
{
    assert_true(h.len <= 64);
    memcpy(out, h.data, h.len);
    return h.len;
}

/* What a GetWithHash found. */
typedef struct found {
    int status;
    bool hit;
    uint8_t *value; /* malloc'd copy, NULL on a miss */
    size_t value_len;
    uint8_t hash[64];
    size_t hash_len;
} found;

static found get_with_hash(const ProtobufCBinaryData *key)
{
    CacheClient__GetWithHashRequest req = CACHE_CLIENT____GET_WITH_HASH_REQUEST__INIT;
    req.cache_key = *key;
    found f = {.status = call(SCS "GetWithHash", &req.base)};
    if (f.status != ST_OK)
        return f;
    CacheClient__GetWithHashResponse *resp =
        srv_reply_msg(tu_fx.reply, &cache_client____get_with_hash_response__descriptor);
    if (resp->result_case == CACHE_CLIENT____GET_WITH_HASH_RESPONSE__RESULT_FOUND) {
        f.hit = true;
        f.value_len = resp->found->value.len;
        f.value = malloc(f.value_len + 1);
        assert_non_null(f.value);
        if (f.value_len)
            memcpy(f.value, resp->found->value.data, f.value_len);
        f.hash_len = copy_hash(f.hash, resp->found->hash);
    } else {
        assert_int_equal(resp->result_case, CACHE_CLIENT____GET_WITH_HASH_RESPONSE__RESULT_MISSING);
    }
    protobuf_c_message_free_unpacked(&resp->base, NULL);
    return f;
}

static found get_str(const char *key)
{
    ProtobufCBinaryData k = B(key);
    return get_with_hash(&k);
}

/* The conditions of SetIfHash, as the request's condition cases; NONE
 * sends none. */
typedef enum cond {
    NONE = CACHE_CLIENT____SET_IF_HASH_REQUEST__CONDITION__NOT_SET,
    UNCOND = CACHE_CLIENT____SET_IF_HASH_REQUEST__CONDITION_UNCONDITIONAL,
    PRESENT_EQ = CACHE_CLIENT____SET_IF_HASH_REQUEST__CONDITION_PRESENT_AND_HASH_EQUAL,
    PRESENT_NE = CACHE_CLIENT____SET_IF_HASH_REQUEST__CONDITION_PRESENT_AND_NOT_HASH_EQUAL,
    ABSENT_OR_EQ = CACHE_CLIENT____SET_IF_HASH_REQUEST__CONDITION_ABSENT_OR_HASH_EQUAL,
    ABSENT_OR_NE = CACHE_CLIENT____SET_IF_HASH_REQUEST__CONDITION_ABSENT_OR_NOT_HASH_EQUAL,
} cond;

/* What a SetIfHash answered. */
typedef struct stored {
    int status;
    bool stored;
    uint8_t hash[64];
    size_t hash_len;
} stored;

static stored set_if_hash_hdr(const ProtobufCBinaryData *key, const ProtobufCBinaryData *value,
                              uint64_t ttl, cond c, const uint8_t *hash, size_t hash_len,
                              const char *const *headers, size_t n_headers)
{
    CacheClient__SetIfHashRequest req = CACHE_CLIENT____SET_IF_HASH_REQUEST__INIT;
    req.cache_key = *key;
    req.cache_body = *value;
    req.ttl_milliseconds = ttl;
    Common__PresentAndHashEqual peq = COMMON__PRESENT_AND_HASH_EQUAL__INIT;
    Common__PresentAndNotHashEqual pne = COMMON__PRESENT_AND_NOT_HASH_EQUAL__INIT;
    Common__AbsentOrHashEqual aeq = COMMON__ABSENT_OR_HASH_EQUAL__INIT;
    Common__AbsentOrNotHashEqual ane = COMMON__ABSENT_OR_NOT_HASH_EQUAL__INIT;
    Common__Unconditional unc = COMMON__UNCONDITIONAL__INIT;
    /* Each hash condition holds the hash; only the one named is sent. */
    ProtobufCBinaryData h = {hash_len, (uint8_t *)hash};
    peq.hash_to_check = pne.hash_to_check = aeq.hash_to_check = ane.hash_to_check = h;
    req.condition_case = (CacheClient__SetIfHashRequest__ConditionCase)c;
    switch (c) {
    case NONE: break;
    case UNCOND: req.unconditional = &unc; break;
    case PRESENT_EQ: req.present_and_hash_equal = &peq; break;
    case PRESENT_NE: req.present_and_not_hash_equal = &pne; break;
    case ABSENT_OR_EQ: req.absent_or_hash_equal = &aeq; break;
    case ABSENT_OR_NE: req.absent_or_not_hash_equal = &ane; break;
    }
    stored s = {.status = call_with(SCS "SetIfHash", &req.base, headers, n_headers)};
    if (s.status != ST_OK)
        return s;
    CacheClient__SetIfHashResponse *resp =
        srv_reply_msg(tu_fx.reply, &cache_client____set_if_hash_response__descriptor);
    s.stored = resp->result_case == CACHE_CLIENT____SET_IF_HASH_RESPONSE__RESULT_STORED;
    if (s.stored)
        s.hash_len = copy_hash(s.hash, resp->stored->new_hash);
    else
        assert_int_equal(resp->result_case, CACHE_CLIENT____SET_IF_HASH_RESPONSE__RESULT_NOT_STORED);
    protobuf_c_message_free_unpacked(&resp->base, NULL);
    return s;
}

static stored set_if_hash(const char *key, const char *value, cond c, const uint8_t *hash,
                          size_t hash_len)
{
    ProtobufCBinaryData k = B(key), v = B(value);
    return set_if_hash_hdr(&k, &v, 0, c, hash, hash_len, cache_hdr, 1);
}

/* The value `key` holds must be `want` (NULL: absent). */
static void expect_stored(const char *key, const char *want)
{
    found f = get_str(key);
    assert_int_equal(f.status, ST_OK);
    if (!want) {
        assert_false(f.hit);
    } else {
        assert_true(f.hit);
        assert_int_equal(f.value_len, strlen(want));
        assert_memory_equal(f.value, want, f.value_len);
    }
    free(f.value);
}

/* A SetIfHash of `value` at `key` under `c` with a 32-byte `hash` must
 * store it or not as `want`; after it, `key` must hold `then` (NULL:
 * absent). */
static void expect_set(const char *key, const char *value, cond c, const uint8_t *hash, bool want,
                       const char *then)
{
    assert_int_equal(set_if_hash(key, value, c, hash, 32).stored, want);
    expect_stored(key, then);
}

/* ---- Tests ---------------------------------------------------------------- */

static void test_hash_is_sha256_of_the_value(void **state)
{
    (void)state;
    found f = get_str("k1");
    assert_int_equal(f.status, ST_OK);
    assert_false(f.hit);

    stored s = set_if_hash("k1", "abc", UNCOND, NULL, 0);
    assert_int_equal(s.status, ST_OK);
    assert_true(s.stored);
    assert_int_equal(s.hash_len, 32);
    assert_memory_equal(s.hash, sha_abc, 32);

    f = get_str("k1");
    assert_true(f.hit);
    assert_int_equal(f.value_len, 3);
    assert_memory_equal(f.value, "abc", 3);
    assert_int_equal(f.hash_len, 32);
    assert_memory_equal(f.hash, sha_abc, 32);
    free(f.value);

    /* A value written by a plain Set has its hash too. */
    CacheClient__SetRequest set = CACHE_CLIENT____SET_REQUEST__INIT;
    set.cache_key = B("k2");
    set.cache_body = B("");
    assert_int_equal(call(SCS "Set", &set.base), ST_OK);
    f = get_str("k2");
    assert_true(f.hit);
    assert_int_equal(f.value_len, 0);
    assert_int_equal(f.hash_len, 32);
    assert_memory_equal(f.hash, sha_empty, 32);
    free(f.value);
}

static void test_each_condition(void **state)
{
    (void)state;
    static const uint8_t other[32] = {7};
    assert_true(set_if_hash("c1", "abc", UNCOND, NULL, 0).stored);

    /* present and hash equal */
    assert_false(set_if_hash("c1", "x", PRESENT_EQ, other, 32).stored);
    expect_set("c1-absent", "x", PRESENT_EQ, sha_abc, false, NULL);
    stored s = set_if_hash("c1", "", PRESENT_EQ, sha_abc, 32);
    assert_true(s.stored);
    assert_memory_equal(s.hash, sha_empty, 32); /* the new value's hash */
    expect_stored("c1", "");

    /* present and hash not equal */
    assert_false(set_if_hash("c1", "abc", PRESENT_NE, sha_empty, 32).stored);
    expect_set("c1-absent", "abc", PRESENT_NE, other, false, NULL);
    expect_set("c1", "abc", PRESENT_NE, other, true, "abc");

    /* absent or hash equal */
    expect_set("c1", "y", ABSENT_OR_EQ, other, false, "abc");
    expect_set("c1", "y", ABSENT_OR_EQ, sha_abc, true, "y");
    expect_set("c2", "abc", ABSENT_OR_EQ, other, true, "abc");

    /* absent or hash not equal */
    expect_set("c2", "z", ABSENT_OR_NE, sha_abc, false, "abc");
    expect_set("c2", "z", ABSENT_OR_NE, other, true, "z");
    expect_set("c3", "z", ABSENT_OR_NE, other, true, "z");

    /* A hash of another length, the empty one included, equals none. */
    assert_true(set_if_hash("c3", "abc", UNCOND, NULL, 0).stored);
    assert_false(set_if_hash("c3", "q", PRESENT_EQ, sha_abc, 31).stored);
    assert_false(set_if_hash("c3", "q", PRESENT_EQ, NULL, 0).stored);
    assert_true(set_if_hash("c3", "q", PRESENT_NE, NULL, 0).stored);
    expect_stored("c3", "q");
}

static void test_ttl_is_applied(void **state)
{
    (void)state;
    ProtobufCBinaryData k = B("t1"), v = B("abc");
    assert_true(set_if_hash_hdr(&k, &v, 100000, UNCOND, NULL, 0, cache_hdr, 1).stored);
    uint64_t ms = 0;
    assert_true(srv_item_ttl(tu_fx.target, "t1", &ms));
    assert_true(ms <= 100000);
    assert_true(ms > 50000);
    /* A write that does not happen leaves the TTL alone: here, a 1 ms TTL
     * would expire the item. */
    assert_false(
        set_if_hash_hdr(&k, &v, 1, PRESENT_EQ, sha_empty, 32, cache_hdr, 1).stored);
    expect_stored("t1", "abc");
}

static void test_refusals(void **state)
{
    (void)state;
    /* No condition. */
    assert_int_equal(set_if_hash("r1", "v", NONE, NULL, 0).status, ST_INVALID_ARGUMENT);
    expect_stored("r1", NULL);
    /* An empty key. */
    assert_int_equal(set_if_hash("", "v", UNCOND, NULL, 0).status, ST_INVALID_ARGUMENT);
    assert_int_equal(get_str("").status, ST_INVALID_ARGUMENT);
    /* An unknown cache. */
    static const char *const nope_hdr[] = {"cache", "nope"};
    ProtobufCBinaryData k = B("r1"), v = B("v");
    assert_int_equal(set_if_hash_hdr(&k, &v, 0, UNCOND, NULL, 0, nope_hdr, 1).status, ST_NOT_FOUND);
    CacheClient__GetWithHashRequest get = CACHE_CLIENT____GET_WITH_HASH_REQUEST__INIT;
    get.cache_key = k;
    assert_int_equal(call_with(SCS "GetWithHash", &get.base, nope_hdr, 1), ST_NOT_FOUND);
    /* Over the item limit: RESOURCE_EXHAUSTED with the SDKs' cause. */
    size_t big = 5u * 1024 * 1024;
    uint8_t *body = calloc(1, big);
    assert_non_null(body);
    ProtobufCBinaryData bv = {big, body};
    assert_int_equal(set_if_hash_hdr(&k, &bv, 0, UNCOND, NULL, 0, cache_hdr, 1).status,
                     ST_RESOURCE_EXHAUSTED);
    assert_string_equal(tu_fx.reply->err, "item_size_limit_exceeded");
    free(body);
}

static void test_collection_is_a_type_mismatch(void **state)
{
    (void)state;
    CacheClient__SetUnionRequest add = CACHE_CLIENT____SET_UNION_REQUEST__INIT;
    ProtobufCBinaryData elem = B("e");
    add.set_name = B("coll");
    add.elements = &elem;
    add.n_elements = 1;
    assert_int_equal(call(SCS "SetUnion", &add.base), ST_OK);
    found f = get_str("coll");
    assert_int_equal(f.status, ST_FAILED_PRECONDITION);
    assert_string_equal(tu_fx.reply->details, mismatch);
    static const cond hash_conds[] = {PRESENT_EQ, PRESENT_NE, ABSENT_OR_EQ, ABSENT_OR_NE};
    for (size_t i = 0; i < 4; i++) {
        assert_int_equal(set_if_hash("coll", "v", hash_conds[i], sha_abc, 32).status,
                         ST_FAILED_PRECONDITION);
        assert_string_equal(tu_fx.reply->details, mismatch);
    }
    /* Unconditional replaces it, as Set does. */
    stored s = set_if_hash("coll", "abc", UNCOND, NULL, 0);
    assert_true(s.stored);
    assert_memory_equal(s.hash, sha_abc, 32);
    expect_stored("coll", "abc");
}

static void test_value_near_the_limit(void **state)
{
    (void)state;
    /* Key and value within the 5 MB item limit. */
    size_t n = 5u * 1024 * 1024 - 16;
    uint8_t *body = malloc(n);
    assert_non_null(body);
    for (size_t i = 0; i < n; i++)
        body[i] = (uint8_t)(i * 31 + 7);
    ProtobufCBinaryData k = B("big"), v = {n, body};
    stored s = set_if_hash_hdr(&k, &v, 0, UNCOND, NULL, 0, cache_hdr, 1);
    assert_int_equal(s.status, ST_OK);
    assert_true(s.stored);
    found f = get_with_hash(&k);
    assert_true(f.hit);
    assert_int_equal(f.value_len, n);
    assert_memory_equal(f.value, body, n);
    assert_int_equal(f.hash_len, 32);
    assert_memory_equal(f.hash, s.hash, 32);
    free(f.value);
    /* One byte different, another hash. */
    body[n / 2] ^= 1;
    stored s2 = set_if_hash_hdr(&k, &v, 0, UNCOND, NULL, 0, cache_hdr, 1);
    assert_true(s2.stored);
    assert_memory_not_equal(s2.hash, s.hash, 32);
    free(body);
}

/* The names the SDKs' fault-injection headers use for the two RPCs. */
static void test_fault_names(void **state)
{
    (void)state;
    static const char *const get_fault[] = {"cache", "c", "request-id", "hash-faults-get",
                                            "return-error", "unavailable",
                                            "error-rpcs", "get-with-hash", "error-count", "1"};
    static const char *const set_fault[] = {"cache", "c", "request-id", "hash-faults-set",
                                            "return-error", "unavailable",
                                            "error-rpcs", "set-if-hash", "error-count", "1"};
    ProtobufCBinaryData k = B("f1"), v = B("v");
    CacheClient__GetWithHashRequest get = CACHE_CLIENT____GET_WITH_HASH_REQUEST__INIT;
    get.cache_key = k;
    assert_int_equal(call_with(SCS "GetWithHash", &get.base, get_fault, 5), ST_UNAVAILABLE);
    assert_int_equal(call_with(SCS "GetWithHash", &get.base, get_fault, 5), ST_OK);
    assert_int_equal(set_if_hash_hdr(&k, &v, 0, UNCOND, NULL, 0, set_fault, 5).status,
                     ST_UNAVAILABLE);
    expect_stored("f1", NULL);
    assert_true(set_if_hash_hdr(&k, &v, 0, UNCOND, NULL, 0, set_fault, 5).stored);
    expect_stored("f1", "v");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hash_is_sha256_of_the_value),
        cmocka_unit_test(test_each_condition),
        cmocka_unit_test(test_ttl_is_applied),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_collection_is_a_type_mismatch),
        cmocka_unit_test(test_value_near_the_limit),
        cmocka_unit_test(test_fault_names),
    };
    return cmocka_run_group_tests(tests, tu_fixture_setup_server, tu_fixture_teardown);
}
