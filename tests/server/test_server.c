/* The local server spoken to directly over gRPC, without the library: every
 * RPC and outcome, Momento's error statuses and trailers, auth, throttling,
 * fault injection, malformed and oversized requests, unknown methods,
 * delayed calls that must not outlive their clients, the per-connection
 * stream limit, the count of calls cancelled by their clients. */
#include "srv_test.h"
#include "testutil.h"
#include "tu_raw_conn.h"

#include "cacheclient.pb-c.h"
#include "cacheping.pb-c.h"
#include "controlclient.pb-c.h"
#include "core/srv_server.h" /* SRV_MAX_STREAMS_PER_CONNECTION */
#include "permissionmessages.pb-c.h"
#include "rpc/srv_rpc.h"    /* the hand-packed responses */
#include "token.pb-c.h"

#include <grpc/grpc.h>
#include <grpc/support/alloc.h>
#include <grpc/support/time.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SCS "/cache_client.Scs/"
#define CTL "/control_client.ScsControl/"

static const char *cache_hdr[] = {"cache", "c"};

/* Packs `m` and calls `path` on the shared server with headers; returns
 * the status. */
static int call(const char *path, const char *const *hdrs, size_t n, const ProtobufCMessage *m,
                tu_raw_reply *out)
{
    return tu_raw_call_msg(tu_fx.target, path, hdrs, n, m, out);
}

/* call() with the cache header, the reply unpacked as `desc` (srv_call()):
 * NULL and the status in *st for an error. */
static void *ask(const char *path, const ProtobufCMessage *m,
                 const ProtobufCMessageDescriptor *desc, int *st)
{
    return srv_call(tu_fx.target, path, cache_hdr, 1, m, desc, st);
}

static int set(const char *key, const char *val, uint64_t ttl)
{
    CacheClient__SetRequest req = CACHE_CLIENT____SET_REQUEST__INIT;
    req.cache_key = (ProtobufCBinaryData){strlen(key), (uint8_t *)key};
    req.cache_body = (ProtobufCBinaryData){strlen(val), (uint8_t *)val};
    req.ttl_milliseconds = ttl;
    int st;
    CacheClient__SetResponse *resp =
        ask(SCS "Set", &req.base, &cache_client____set_response__descriptor, &st);
    if (resp) {
        assert_int_equal(resp->result, CACHE_CLIENT__ECACHE_RESULT__Ok);
        protobuf_c_message_free_unpacked(&resp->base, NULL);
    }
    return st;
}

/* Returns 1 hit (value copied to out), 0 miss, or -status. */
static int get(const char *key, char *out, size_t cap)
{
    CacheClient__GetRequest req = CACHE_CLIENT____GET_REQUEST__INIT;
    req.cache_key = (ProtobufCBinaryData){strlen(key), (uint8_t *)key};
    int st;
    CacheClient__GetResponse *resp =
        ask(SCS "Get", &req.base, &cache_client____get_response__descriptor, &st);
    if (!resp)
        return -st;
    int hit = resp->result == CACHE_CLIENT__ECACHE_RESULT__Hit;
    if (!hit)
        assert_int_equal(resp->result, CACHE_CLIENT__ECACHE_RESULT__Miss);
    if (hit && out) {
        assert_true(resp->cache_body.len < cap);
        memcpy(out, resp->cache_body.data, resp->cache_body.len);
        out[resp->cache_body.len] = '\0';
    }
    protobuf_c_message_free_unpacked(&resp->base, NULL);
    return hit;
}

static void test_get_set_delete(void **state)
{
    (void)state;
    char buf[64];
    assert_int_equal(set("a", "1", 60000), 0);
    assert_int_equal(get("a", buf, sizeof(buf)), 1);
    assert_string_equal(buf, "1");
    CacheClient__DeleteRequest del = CACHE_CLIENT____DELETE_REQUEST__INIT;
    del.cache_key = (ProtobufCBinaryData){1, (uint8_t *)"a"};
    tu_raw_reply r;
    assert_int_equal(call(SCS "Delete", cache_hdr, 1, &del.base, &r), 0);
    assert_int_equal(r.n_msgs, 1);
    tu_raw_reply_free(&r);
    assert_int_equal(get("a", NULL, 0), 0);
    /* Deleting what is not there succeeds too. */
    assert_int_equal(call(SCS "Delete", cache_hdr, 1, &del.base, &r), 0);
    tu_raw_reply_free(&r);
}

static int set_if(int cond, const char *key, const char *val, const char *check)
{
    CacheClient__SetIfRequest req = CACHE_CLIENT____SET_IF_REQUEST__INIT;
    req.cache_key = (ProtobufCBinaryData){strlen(key), (uint8_t *)key};
    req.cache_body = (ProtobufCBinaryData){strlen(val), (uint8_t *)val};
    req.ttl_milliseconds = 60000;
    Common__Present present = COMMON__PRESENT__INIT;
    Common__Absent absent = COMMON__ABSENT__INIT;
    Common__PresentAndNotEqual pne = COMMON__PRESENT_AND_NOT_EQUAL__INIT;
    Common__Equal eq = COMMON__EQUAL__INIT;
    Common__AbsentOrEqual aoe = COMMON__ABSENT_OR_EQUAL__INIT;
    Common__NotEqual ne = COMMON__NOT_EQUAL__INIT;
    /* Each condition on a value holds `check`; only the one named is sent. */
    ProtobufCBinaryData chk = {check ? strlen(check) : 0, (uint8_t *)check};
    pne.value_to_check = eq.value_to_check = aoe.value_to_check = ne.value_to_check = chk;
    req.condition_case = (CacheClient__SetIfRequest__ConditionCase)cond;
    switch (cond) {
    case CACHE_CLIENT____SET_IF_REQUEST__CONDITION_PRESENT: req.present = &present; break;
    case CACHE_CLIENT____SET_IF_REQUEST__CONDITION_ABSENT: req.absent = &absent; break;
    case CACHE_CLIENT____SET_IF_REQUEST__CONDITION_PRESENT_AND_NOT_EQUAL:
        req.present_and_not_equal = &pne;
        break;
    case CACHE_CLIENT____SET_IF_REQUEST__CONDITION_EQUAL: req.equal = &eq; break;
    case CACHE_CLIENT____SET_IF_REQUEST__CONDITION_ABSENT_OR_EQUAL:
        req.absent_or_equal = &aoe;
        break;
    case CACHE_CLIENT____SET_IF_REQUEST__CONDITION_NOT_EQUAL: req.not_equal = &ne; break;
    default: break;
    }
    int st;
    CacheClient__SetIfResponse *resp =
        ask(SCS "SetIf", &req.base, &cache_client____set_if_response__descriptor, &st);
    if (!resp)
        return -st;
    int stored = resp->result_case == CACHE_CLIENT____SET_IF_RESPONSE__RESULT_STORED;
    if (!stored)
        assert_int_equal(resp->result_case, CACHE_CLIENT____SET_IF_RESPONSE__RESULT_NOT_STORED);
    protobuf_c_message_free_unpacked(&resp->base, NULL);
    return stored;
}

static void test_set_if_all_conditions(void **state)
{
    (void)state;
    char buf[64];
    /* absent: stores only when missing */
    assert_int_equal(set_if(CACHE_CLIENT____SET_IF_REQUEST__CONDITION_ABSENT, "si", "v1", NULL), 1);
    assert_int_equal(set_if(CACHE_CLIENT____SET_IF_REQUEST__CONDITION_ABSENT, "si", "v2", NULL), 0);
    get("si", buf, sizeof(buf));
    assert_string_equal(buf, "v1");
    /* present */
    assert_int_equal(set_if(CACHE_CLIENT____SET_IF_REQUEST__CONDITION_PRESENT, "si", "v2", NULL), 1);
    assert_int_equal(set_if(CACHE_CLIENT____SET_IF_REQUEST__CONDITION_PRESENT, "none1", "x", NULL), 0);
    assert_int_equal(get("none1", NULL, 0), 0);
    /* equal */
    assert_int_equal(set_if(CACHE_CLIENT____SET_IF_REQUEST__CONDITION_EQUAL, "si", "v3", "nope"), 0);
    assert_int_equal(set_if(CACHE_CLIENT____SET_IF_REQUEST__CONDITION_EQUAL, "si", "v3", "v2"), 1);
    assert_int_equal(set_if(CACHE_CLIENT____SET_IF_REQUEST__CONDITION_EQUAL, "none2", "x", "x"), 0);
    /* not equal: absent counts as not equal */
    assert_int_equal(set_if(CACHE_CLIENT____SET_IF_REQUEST__CONDITION_NOT_EQUAL, "si", "v4", "v3"), 0);
    assert_int_equal(set_if(CACHE_CLIENT____SET_IF_REQUEST__CONDITION_NOT_EQUAL, "si", "v4", "zz"), 1);
    assert_int_equal(set_if(CACHE_CLIENT____SET_IF_REQUEST__CONDITION_NOT_EQUAL, "ne", "x", "zz"), 1);
    /* present and not equal: absent does not count */
    assert_int_equal(set_if(CACHE_CLIENT____SET_IF_REQUEST__CONDITION_PRESENT_AND_NOT_EQUAL, "si", "v5", "v4"), 0);
    assert_int_equal(set_if(CACHE_CLIENT____SET_IF_REQUEST__CONDITION_PRESENT_AND_NOT_EQUAL, "si", "v5", "zz"), 1);
    assert_int_equal(set_if(CACHE_CLIENT____SET_IF_REQUEST__CONDITION_PRESENT_AND_NOT_EQUAL, "pne", "x", "zz"), 0);
    /* absent or equal */
    assert_int_equal(set_if(CACHE_CLIENT____SET_IF_REQUEST__CONDITION_ABSENT_OR_EQUAL, "si", "v6", "zz"), 0);
    assert_int_equal(set_if(CACHE_CLIENT____SET_IF_REQUEST__CONDITION_ABSENT_OR_EQUAL, "si", "v6", "v5"), 1);
    assert_int_equal(set_if(CACHE_CLIENT____SET_IF_REQUEST__CONDITION_ABSENT_OR_EQUAL, "aoe", "x", "zz"), 1);
    get("si", buf, sizeof(buf));
    assert_string_equal(buf, "v6");
    /* no condition at all */
    assert_int_equal(set_if(0, "si", "v7", NULL), -3);
}

static void test_set_if_not_exists(void **state)
{
    (void)state;
    CacheClient__SetIfNotExistsRequest req = CACHE_CLIENT____SET_IF_NOT_EXISTS_REQUEST__INIT;
    req.cache_key = (ProtobufCBinaryData){3, (uint8_t *)"sne"};
    req.cache_body = (ProtobufCBinaryData){1, (uint8_t *)"x"};
    for (int round = 0; round < 2; round++) {
        tu_raw_reply r;
        assert_int_equal(call(SCS "SetIfNotExists", cache_hdr, 1, &req.base, &r), 0);
        CacheClient__SetIfNotExistsResponse *resp =
            cache_client____set_if_not_exists_response__unpack(NULL, r.lens[0], r.msgs[0]);
        assert_int_equal(resp->result_case,
                         round == 0 ? CACHE_CLIENT____SET_IF_NOT_EXISTS_RESPONSE__RESULT_STORED
                                    : CACHE_CLIENT____SET_IF_NOT_EXISTS_RESPONSE__RESULT_NOT_STORED);
        protobuf_c_message_free_unpacked(&resp->base, NULL);
        tu_raw_reply_free(&r);
    }
}

static int64_t increment(const char *key, int64_t amount, int *status)
{
    CacheClient__IncrementRequest req = CACHE_CLIENT____INCREMENT_REQUEST__INIT;
    req.cache_key = (ProtobufCBinaryData){strlen(key), (uint8_t *)key};
    req.amount = amount;
    req.ttl_milliseconds = 60000;
    CacheClient__IncrementResponse *resp =
        ask(SCS "Increment", &req.base, &cache_client____increment_response__descriptor, status);
    int64_t v = 0;
    if (resp) {
        v = resp->value;
        protobuf_c_message_free_unpacked(&resp->base, NULL);
    }
    return v;
}

static void test_increment(void **state)
{
    (void)state;
    int st;
    assert_int_equal(increment("n", 5, &st), 5);
    assert_int_equal(st, 0);
    assert_int_equal(increment("n", -7, &st), -2);
    char buf[32];
    get("n", buf, sizeof(buf));
    assert_string_equal(buf, "-2"); /* stored as base-10 text */
    set("txt", "abc", 60000);
    increment("txt", 1, &st);
    assert_int_equal(st, 9); /* FAILED_PRECONDITION */
    set("maxed", "9223372036854775807", 60000);
    increment("maxed", 1, &st);
    assert_int_equal(st, 9);
}

static void test_keys_exist(void **state)
{
    (void)state;
    set("k1", "v", 60000);
    set("k3", "v", 60000);
    ProtobufCBinaryData keys[3] = {{2, (uint8_t *)"k1"}, {2, (uint8_t *)"k2"}, {2, (uint8_t *)"k3"}};
    CacheClient__KeysExistRequest req = CACHE_CLIENT____KEYS_EXIST_REQUEST__INIT;
    req.n_cache_keys = 3;
    req.cache_keys = keys;
    CacheClient__KeysExistResponse *resp =
        ask(SCS "KeysExist", &req.base, &cache_client____keys_exist_response__descriptor, NULL);
    assert_int_equal(resp->n_exists, 3);
    const protobuf_c_boolean want[] = {1, 0, 1};
    assert_memory_equal(resp->exists, want, sizeof(want));
    protobuf_c_message_free_unpacked(&resp->base, NULL);
}

/* Returns remaining ms, or -1 when missing. */
static int64_t item_ttl(const char *key)
{
    uint64_t ms = 0;
    return srv_item_ttl(tu_fx.target, key, &ms) ? (int64_t)ms : -1;
}

/* 1 set, 0 not set, -1 missing. */
static int update_ttl(const char *key, int which, uint64_t ms)
{
    CacheClient__UpdateTtlRequest req = CACHE_CLIENT____UPDATE_TTL_REQUEST__INIT;
    req.cache_key = (ProtobufCBinaryData){strlen(key), (uint8_t *)key};
    req.update_ttl_case = (CacheClient__UpdateTtlRequest__UpdateTtlCase)which;
    req.increase_to_milliseconds = req.decrease_to_milliseconds = req.overwrite_to_milliseconds = ms;
    CacheClient__UpdateTtlResponse *resp =
        ask(SCS "UpdateTtl", &req.base, &cache_client____update_ttl_response__descriptor, NULL);
    int v = resp->result_case == CACHE_CLIENT____UPDATE_TTL_RESPONSE__RESULT_SET       ? 1
            : resp->result_case == CACHE_CLIENT____UPDATE_TTL_RESPONSE__RESULT_NOT_SET ? 0
                                                                                      : -1;
    protobuf_c_message_free_unpacked(&resp->base, NULL);
    return v;
}

static void test_ttl_ops(void **state)
{
    (void)state;
    set("ttl", "v", 10000);
    int64_t left = item_ttl("ttl");
    assert_true(left > 9000 && left <= 10000);
    assert_int_equal(item_ttl("missing-ttl"), -1);
    enum { INC = 2, DEC = 3, OVER = 4 };
    assert_int_equal(update_ttl("ttl", INC, 5000), 0);  /* not an increase */
    assert_int_equal(update_ttl("ttl", INC, 20000), 1);
    assert_true(item_ttl("ttl") > 19000);
    assert_int_equal(update_ttl("ttl", DEC, 30000), 0); /* not a decrease */
    assert_int_equal(update_ttl("ttl", DEC, 3000), 1);
    assert_true(item_ttl("ttl") <= 3000);
    assert_int_equal(update_ttl("ttl", OVER, 100), 1);
    assert_int_equal(update_ttl("missing-ttl", OVER, 100), -1);
    usleep(200 * 1000);
    assert_int_equal(get("ttl", NULL, 0), 0); /* the overwritten TTL took effect */
}

static void test_batches(void **state)
{
    (void)state;
    enum { N = 1000 };
    static CacheClient__SetRequest items[N];
    static CacheClient__SetRequest *ptrs[N];
    static char keys[N][16];
    for (int i = 0; i < N; i++) {
        cache_client____set_request__init(&items[i]);
        snprintf(keys[i], sizeof(keys[i]), "b%d", i);
        items[i].cache_key = (ProtobufCBinaryData){strlen(keys[i]), (uint8_t *)keys[i]};
        items[i].cache_body = items[i].cache_key;
        items[i].ttl_milliseconds = 60000;
        ptrs[i] = &items[i];
    }
    CacheClient__SetBatchRequest sb = CACHE_CLIENT____SET_BATCH_REQUEST__INIT;
    sb.n_items = N / 2; /* store the even half only... */
    for (int i = 0; i < N / 2; i++)
        ptrs[i] = &items[2 * i];
    sb.items = ptrs;
    tu_raw_reply r;
    assert_int_equal(call(SCS "SetBatch", cache_hdr, 1, &sb.base, &r), 0);
    assert_int_equal(r.n_msgs, N / 2);
    tu_raw_reply_free(&r);

    static CacheClient__GetRequest gets[N];
    static CacheClient__GetRequest *gptrs[N];
    for (int i = 0; i < N; i++) {
        cache_client____get_request__init(&gets[i]);
        gets[i].cache_key = items[i].cache_key;
        gptrs[i] = &gets[i];
    }
    CacheClient__GetBatchRequest gb = CACHE_CLIENT____GET_BATCH_REQUEST__INIT;
    gb.n_items = N;
    gb.items = gptrs;
    assert_int_equal(call(SCS "GetBatch", cache_hdr, 1, &gb.base, &r), 0);
    assert_int_equal(r.n_msgs, N);
    for (int i = 0; i < N; i++) { /* ...so results alternate hit, miss, in order */
        CacheClient__GetResponse *g = cache_client____get_response__unpack(NULL, r.lens[i], r.msgs[i]);
        if (i % 2 == 0) {
            assert_int_equal(g->result, CACHE_CLIENT__ECACHE_RESULT__Hit);
            assert_memory_equal(g->cache_body.data, keys[i], strlen(keys[i]));
        } else {
            assert_int_equal(g->result, CACHE_CLIENT__ECACHE_RESULT__Miss);
        }
        protobuf_c_message_free_unpacked(&g->base, NULL);
    }
    tu_raw_reply_free(&r);
    /* An empty batch is an empty stream with OK. */
    gb.n_items = 0;
    assert_int_equal(call(SCS "GetBatch", cache_hdr, 1, &gb.base, &r), 0);
    assert_int_equal(r.n_msgs, 0);
    tu_raw_reply_free(&r);
}

/* Reads a whole GetBatch reply for `n` keys named "s<i>" (odd ones never
 * set) and checks it: OK, n messages in order, hits holding `vlen` bytes of
 * 'v' + i % 26. */
static void check_get_batch(size_t n, size_t vlen)
{
    enum { MAX = 64 };
    assert_true(n <= MAX);
    static CacheClient__GetRequest gets[MAX];
    static CacheClient__GetRequest *gptrs[MAX];
    static char keys[MAX][16];
    for (size_t i = 0; i < n; i++) {
        cache_client____get_request__init(&gets[i]);
        snprintf(keys[i], sizeof(keys[i]), "s%zu", i);
        gets[i].cache_key = (ProtobufCBinaryData){strlen(keys[i]), (uint8_t *)keys[i]};
        gptrs[i] = &gets[i];
    }
    CacheClient__GetBatchRequest gb = CACHE_CLIENT____GET_BATCH_REQUEST__INIT;
    gb.n_items = n;
    gb.items = gptrs;
    tu_raw_reply r;
    assert_int_equal(call(SCS "GetBatch", cache_hdr, 1, &gb.base, &r), 0);
    assert_int_equal(r.n_msgs, n);
    for (size_t i = 0; i < n; i++) {
        CacheClient__GetResponse *g = cache_client____get_response__unpack(NULL, r.lens[i], r.msgs[i]);
        assert_non_null(g);
        if (i % 2 == 0) {
            assert_int_equal(g->result, CACHE_CLIENT__ECACHE_RESULT__Hit);
            assert_int_equal(g->cache_body.len, vlen);
            for (size_t j = 0; j < vlen; j++)
                assert_int_equal(g->cache_body.data[j], 'v' + i % 26);
        } else {
            assert_int_equal(g->result, CACHE_CLIENT__ECACHE_RESULT__Miss);
        }
        protobuf_c_message_free_unpacked(&g->base, NULL);
    }
    tu_raw_reply_free(&r);
}

/* Streams of every shape the server sends: one message (a single batch,
 * as a unary reply), two (first and last), many (buffered between), and
 * more than gRPC's 64 KiB write buffer. The client (tu_raw_call) sends
 * nothing while it waits, so a stream that relied on other traffic to be
 * written out would hang here until its deadline. */
static void test_batch_streams_of_every_size(void **state)
{
    (void)state;
    static const size_t sizes[] = {1, 2, 3, 17, 64};
    static const size_t vlens[] = {0, 1, 100, 4096};
    enum { MAX = 64 };
    static CacheClient__SetRequest items[MAX];
    static CacheClient__SetRequest *ptrs[MAX];
    static char keys[MAX][16];
    static char vals[MAX / 2][4096];
    for (size_t v = 0; v < sizeof(vlens) / sizeof(vlens[0]); v++) {
        size_t vlen = vlens[v];
        for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
            size_t n = sizes[k];
            /* SetBatch of the even keys: one _SetResponse{Ok} each. */
            size_t m = 0;
            for (size_t i = 0; i < n; i += 2) {
                cache_client____set_request__init(&items[m]);
                snprintf(keys[m], sizeof(keys[m]), "s%zu", i);
                memset(vals[m], 'v' + (int)(i % 26), vlen);
                items[m].cache_key = (ProtobufCBinaryData){strlen(keys[m]), (uint8_t *)keys[m]};
                items[m].cache_body = (ProtobufCBinaryData){vlen, (uint8_t *)vals[m]};
                items[m].ttl_milliseconds = 60000;
                ptrs[m] = &items[m];
                m++;
            }
            CacheClient__SetBatchRequest sb = CACHE_CLIENT____SET_BATCH_REQUEST__INIT;
            sb.n_items = m;
            sb.items = ptrs;
            tu_raw_reply r;
            assert_int_equal(call(SCS "SetBatch", cache_hdr, 1, &sb.base, &r), 0);
            assert_int_equal(r.n_msgs, m);
            for (size_t i = 0; i < m; i++) {
                CacheClient__SetResponse *sr =
                    cache_client____set_response__unpack(NULL, r.lens[i], r.msgs[i]);
                assert_non_null(sr);
                assert_int_equal(sr->result, CACHE_CLIENT__ECACHE_RESULT__Ok);
                protobuf_c_message_free_unpacked(&sr->base, NULL);
            }
            tu_raw_reply_free(&r);
            check_get_batch(n, vlen);
            /* Clean up for the next round's misses. */
            for (size_t i = 0; i < m; i++) {
                CacheClient__DeleteRequest d = CACHE_CLIENT____DELETE_REQUEST__INIT;
                d.cache_key = items[i].cache_key;
                assert_int_equal(call(SCS "Delete", cache_hdr, 1, &d.base, &r), 0);
                tu_raw_reply_free(&r);
            }
        }
    }
}

/* The responses momento-local packs by hand are the bytes protobuf-c
 * packs, so that every client reads them as it would Momento's. */
static void test_hand_packed_responses(void **state)
{
    (void)state;
    static const size_t lens[] = {0, 1, 127, 128, 300, 16383, 16384, 70000};
    uint8_t *value = malloc(70000);
    uint8_t *mine = malloc(70010), *theirs = malloc(70010);
    assert_non_null(value);
    assert_non_null(mine);
    assert_non_null(theirs);
    for (size_t i = 0; i < 70000; i++)
        value[i] = (uint8_t)(i * 7);
    for (size_t k = 0; k <= sizeof(lens) / sizeof(lens[0]); k++) {
        bool miss = k == sizeof(lens) / sizeof(lens[0]);
        store_item it;
        memset(&it, 0, sizeof(it));
        CacheClient__GetResponse resp = CACHE_CLIENT____GET_RESPONSE__INIT;
        resp.result = CACHE_CLIENT__ECACHE_RESULT__Miss;
        if (!miss) {
            it.value = value;
            it.value_len = lens[k];
            resp.result = CACHE_CLIENT__ECACHE_RESULT__Hit;
            resp.cache_body = (ProtobufCBinaryData){lens[k], value};
        }
        size_t want = protobuf_c_message_pack(&resp.base, theirs);
        assert_int_equal(srv_get_response_size(miss ? NULL : &it), want);
        uint8_t *end = srv_pack_get_response(mine, miss ? NULL : &it);
        assert_int_equal((size_t)(end - mine), want);
        assert_memory_equal(mine, theirs, want);
        /* And through a reply, as unary Get sends it. */
        srv_reply r;
        memset(&r, 0, sizeof(r));
        assert_int_equal(srv_reply_get(&r, miss ? NULL : &it), 0);
        assert_int_equal(r.n_msgs, 1);
        assert_int_equal(GRPC_SLICE_LENGTH(r.msgs[0]), want);
        assert_memory_equal(GRPC_SLICE_START_PTR(r.msgs[0]), theirs, want);
        srv_reply_clear(&r);
    }
    CacheClient__SetResponse ok = CACHE_CLIENT____SET_RESPONSE__INIT;
    ok.result = CACHE_CLIENT__ECACHE_RESULT__Ok;
    size_t want = protobuf_c_message_pack(&ok.base, theirs);
    srv_reply r;
    memset(&r, 0, sizeof(r));
    for (int i = 0; i < 3; i++) /* the first in the reply itself, then an array */
        assert_int_equal(srv_reply_set_ok(&r), 0);
    assert_int_equal(r.n_msgs, 3);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(GRPC_SLICE_LENGTH(r.msgs[i]), want);
        assert_memory_equal(GRPC_SLICE_START_PTR(r.msgs[i]), theirs, want);
    }
    srv_reply_clear(&r);
    free(value);
    free(mine);
    free(theirs);
}

static void test_control_and_ping(void **state)
{
    (void)state;
    ControlClient__CreateCacheRequest cr = CONTROL_CLIENT____CREATE_CACHE_REQUEST__INIT;
    cr.cache_name = "ctl";
    tu_raw_reply r;
    assert_int_equal(call(CTL "CreateCache", NULL, 0, &cr.base, &r), 0);
    tu_raw_reply_free(&r);
    assert_int_equal(call(CTL "CreateCache", NULL, 0, &cr.base, &r), 6);
    tu_raw_reply_free(&r);
    cr.cache_name = "";
    assert_int_equal(call(CTL "CreateCache", NULL, 0, &cr.base, &r), 3);
    tu_raw_reply_free(&r);

    ControlClient__ListCachesRequest lr = CONTROL_CLIENT____LIST_CACHES_REQUEST__INIT;
    assert_int_equal(call(CTL "ListCaches", NULL, 0, &lr.base, &r), 0);
    ControlClient__ListCachesResponse *l = control_client____list_caches_response__unpack(NULL, r.lens[0], r.msgs[0]);
    assert_int_equal(l->n_cache, 2);
    assert_non_null(l->cache[0]->cache_limits);
    protobuf_c_message_free_unpacked(&l->base, NULL);
    tu_raw_reply_free(&r);

    ControlClient__FlushCacheRequest fr = CONTROL_CLIENT____FLUSH_CACHE_REQUEST__INIT;
    fr.cache_name = "nope";
    assert_int_equal(call(CTL "FlushCache", NULL, 0, &fr.base, &r), 5);
    tu_raw_reply_free(&r);
    ControlClient__DeleteCacheRequest dr = CONTROL_CLIENT____DELETE_CACHE_REQUEST__INIT;
    dr.cache_name = "ctl";
    assert_int_equal(call(CTL "DeleteCache", NULL, 0, &dr.base, &r), 0);
    tu_raw_reply_free(&r);
    assert_int_equal(call(CTL "DeleteCache", NULL, 0, &dr.base, &r), 5);
    tu_raw_reply_free(&r);

    CacheClient__PingRequest pr = CACHE_CLIENT____PING_REQUEST__INIT;
    assert_int_equal(call("/cache_client.Ping/Ping", NULL, 0, &pr.base, &r), 0);
    tu_raw_reply_free(&r);
}

static void test_errors(void **state)
{
    (void)state;
    CacheClient__GetRequest req = CACHE_CLIENT____GET_REQUEST__INIT;
    req.cache_key = (ProtobufCBinaryData){1, (uint8_t *)"k"};
    tu_raw_reply r;
    /* No cache header. */
    assert_int_equal(call(SCS "Get", NULL, 0, &req.base, &r), 3);
    tu_raw_reply_free(&r);
    /* Unknown cache. */
    const char *other[] = {"cache", "missing"};
    assert_int_equal(call(SCS "Get", other, 1, &req.base, &r), 5);
    tu_raw_reply_free(&r);
    /* Empty key. */
    req.cache_key.len = 0;
    assert_int_equal(call(SCS "Get", cache_hdr, 1, &req.base, &r), 3);
    tu_raw_reply_free(&r);
    /* Over the 5 MiB item limit: RESOURCE_EXHAUSTED with the err trailer. */
    size_t n = 5 * 1024 * 1024;
    char *big = malloc(n);
    memset(big, 'x', n);
    CacheClient__SetRequest sr = CACHE_CLIENT____SET_REQUEST__INIT;
    sr.cache_key = (ProtobufCBinaryData){1, (uint8_t *)"k"};
    sr.cache_body = (ProtobufCBinaryData){n, (uint8_t *)big};
    assert_int_equal(call(SCS "Set", cache_hdr, 1, &sr.base, &r), 8);
    assert_string_equal(r.err, "item_size_limit_exceeded");
    tu_raw_reply_free(&r);
    sr.cache_body.len = n - 1; /* exactly at the limit: stored */
    assert_int_equal(call(SCS "Set", cache_hdr, 1, &sr.base, &r), 0);
    tu_raw_reply_free(&r);
    free(big);
    /* Unknown methods, in a known service and outside any. */
    assert_int_equal(tu_raw_call(tu_fx.target, SCS "NoSuchMethod", cache_hdr, 1, "", 0, &r), 12);
    tu_raw_reply_free(&r);
    assert_int_equal(tu_raw_call(tu_fx.target, "/nope.Nope/Nope", NULL, 0, "", 0, &r), 12);
    tu_raw_reply_free(&r);
}

static void test_malformed_protobuf(void **state)
{
    (void)state;
    static const struct {
        const char *bytes;
        size_t len;
    } bad[] = {
        {"\x0a\x05\x61", 3},          /* field 1, length 5, one byte follows */
        {"\x0a", 1},                  /* tag with no length */
        {"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 11}, /* varint too long */
        {"\x0b", 1},                  /* start-group wire type */
        {"\x12\x80\x80\x80\x80\x10", 6}, /* absurd length */
    };
    static const char *paths[] = {SCS "Get", SCS "Set", SCS "SetIf", SCS "KeysExist",
                                  SCS "GetBatch", SCS "SetBatch", CTL "CreateCache"};
    for (size_t p = 0; p < sizeof(paths) / sizeof(paths[0]); p++) {
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
            tu_raw_reply r;
            int st =
                tu_raw_call(tu_fx.target, paths[p], cache_hdr, 1, bad[i].bytes, bad[i].len, &r);
            if (st != 3)
                fail_msg("%s with malformed body %zu: status %d, want 3", paths[p], i, st);
            tu_raw_reply_free(&r);
        }
    }
    /* Still serving. */
    assert_int_equal(set("after", "ok", 60000), 0);
    assert_int_equal(get("after", NULL, 0), 1);
}

static void test_fault_injection(void **state)
{
    (void)state;
    CacheClient__GetRequest req = CACHE_CLIENT____GET_REQUEST__INIT;
    req.cache_key = (ProtobufCBinaryData){1, (uint8_t *)"k"};
    tu_raw_reply r;
    static const struct {
        const char *name;
        int status;
    } errs[] = {{"invalid-argument", 3}, {"unknown", 2}, {"already-exists", 6}, {"not-found", 5},
                {"internal", 13}, {"permission-denied", 7}, {"unauthenticated", 16},
                {"cancelled", 1}, {"resource-exhausted", 8}, {"deadline-exceeded", 4},
                {"unavailable", 14}, {"failed-precondition", 9}};
    for (size_t i = 0; i < sizeof(errs) / sizeof(errs[0]); i++) {
        char id[32];
        snprintf(id, sizeof(id), "fi-%zu", i);
        const char *h[] = {"cache", "c", "request-id", id, "return-error", errs[i].name,
                           "error-rpcs", "get set", "error-count", "2"};
        assert_int_equal(call(SCS "Get", h, 5, &req.base, &r), errs[i].status);
        tu_raw_reply_free(&r);
        assert_int_equal(call(SCS "Get", h, 5, &req.base, &r), errs[i].status);
        tu_raw_reply_free(&r);
        int st = call(SCS "Get", h, 5, &req.base, &r);
        if (st != 0)
            fail_msg("%s: third call got %d (%s)", errs[i].name, st, r.details);
        tu_raw_reply_free(&r);
    }
    /* RPCs not listed are untouched; an unknown error name is refused. */
    const char *h2[] = {"cache", "c", "return-error", "unavailable", "error-rpcs", "set"};
    assert_int_equal(call(SCS "Get", h2, 3, &req.base, &r), 0);
    tu_raw_reply_free(&r);
    const char *h3[] = {"cache", "c", "return-error", "no-such-error"};
    assert_int_equal(call(SCS "Get", h3, 2, &req.base, &r), 3);
    tu_raw_reply_free(&r);

    /* Delay: the delayed call takes at least delay-ms (a lower bound the
     * server's timer guarantees: it cannot fire before its time, however
     * loaded the machine). That a delay holds nothing else up, and that
     * delay-count is used up, is test_delay_does_not_block_others's. */
    const char *hd[] = {"cache", "c", "request-id", "delay-1", "delay-ms", "300", "delay-count", "1"};
    int64_t t0 = tu_now_ms();
    assert_int_equal(call(SCS "Get", hd, 4, &req.base, &r), 0);
    tu_raw_reply_free(&r);
    assert_true(tu_now_ms() - t0 >= 300);
}

static void test_auth(void **state)
{
    (void)state;
    momento_local *s = tu_server_with_token("sekrit");
    const char *ep = momento_local_endpoint(s);
    CacheClient__GetRequest req = CACHE_CLIENT____GET_REQUEST__INIT;
    req.cache_key = (ProtobufCBinaryData){1, (uint8_t *)"k"};
    uint8_t buf[16];
    size_t len = protobuf_c_message_pack(&req.base, buf);
    tu_raw_reply r;
    const char *noauth[] = {"cache", "c"};
    const char *wrong[] = {"cache", "c", "authorization", "nope"};
    const char *right[] = {"cache", "c", "authorization", "sekrit"};
    assert_int_equal(tu_raw_call(ep, SCS "Get", noauth, 1, buf, len, &r), 16);
    tu_raw_reply_free(&r);
    assert_int_equal(tu_raw_call(ep, SCS "Get", wrong, 2, buf, len, &r), 16);
    tu_raw_reply_free(&r);
    /* The right token is let through (the cache has no key k: a miss). */
    assert_int_equal(tu_raw_call(ep, SCS "Get", right, 2, buf, len, &r), 0);
    assert_int_equal(r.n_msgs, 1);
    tu_raw_reply_free(&r);
    /* Ping needs no token. */
    assert_int_equal(tu_raw_call(ep, "/cache_client.Ping/Ping", NULL, 0, "", 0, &r), 0);
    tu_raw_reply_free(&r);
    assert_int_equal(momento_local_rpc_count(s, "Get", 16), 2);
    assert_int_equal(momento_local_rpc_count(s, "Get", 0), 1);
    char *json = momento_local_stats_json(s);
    assert_non_null(strstr(json, "\"UNAUTHENTICATED\": 2"));
    free(json);
    momento_local_stop(s);
}

/* Decodes one ListCaches page: its names, joined by ',', and its token. */
static void list_page(const char *ep, const char *token, char *names, size_t cap, char *next,
                      size_t next_cap)
{
    ControlClient__ListCachesRequest lr = CONTROL_CLIENT____LIST_CACHES_REQUEST__INIT;
    lr.next_token = (char *)token;
    uint8_t buf[64];
    size_t len = protobuf_c_message_pack(&lr.base, buf);
    tu_raw_reply r;
    assert_int_equal(tu_raw_call(ep, CTL "ListCaches", NULL, 0, buf, len, &r), 0);
    assert_int_equal(r.n_msgs, 1);
    ControlClient__ListCachesResponse *l =
        control_client____list_caches_response__unpack(NULL, r.lens[0], r.msgs[0]);
    assert_non_null(l);
    names[0] = '\0';
    for (size_t i = 0; i < l->n_cache; i++) {
        if (i)
            strncat(names, ",", cap - strlen(names) - 1);
        strncat(names, l->cache[i]->cache_name, cap - strlen(names) - 1);
    }
    snprintf(next, next_cap, "%s", l->next_token);
    protobuf_c_message_free_unpacked(&l->base, NULL);
    tu_raw_reply_free(&r);
}

/* --list-page-size: pages in name order, the token is the last name of the
 * page, no token on the last page; a token resumes after that name even if
 * the cache it names is gone. */
static void test_list_pages(void **state)
{
    (void)state;
    momento_local_options *o = tu_options(NULL);
    const char *names[] = {"d", "b", "e", "a", "c"};
    for (size_t i = 0; i < 5; i++)
        momento_local_options_add_cache(o, names[i]);
    momento_local_options_set_list_page_size(o, 2);
    momento_local *s = tu_start(o);
    const char *ep = momento_local_endpoint(s);
    char got[64], next[16];
    list_page(ep, "", got, sizeof(got), next, sizeof(next));
    assert_string_equal(got, "a,b");
    assert_string_equal(next, "b");
    list_page(ep, next, got, sizeof(got), next, sizeof(next));
    assert_string_equal(got, "c,d");
    assert_string_equal(next, "d");
    list_page(ep, next, got, sizeof(got), next, sizeof(next));
    assert_string_equal(got, "e");
    assert_string_equal(next, "");
    /* Resuming after a name that no cache has (bb, between b and c). */
    list_page(ep, "bb", got, sizeof(got), next, sizeof(next));
    assert_string_equal(got, "c,d");
    /* A token past every name: an empty last page. */
    list_page(ep, "zz", got, sizeof(got), next, sizeof(next));
    assert_string_equal(got, "");
    assert_string_equal(next, "");
    momento_local_stop(s);
}

static void test_rate_limit(void **state)
{
    (void)state;
    momento_local_options *o = tu_options("c");
    momento_local_options_set_max_rps(o, 5);
    momento_local *s = tu_start(o);
    momento_client *c = tu_client(s, NULL);
    /* A burst of 50: at most 5 per one-second window get through. However
     * slowly they arrive, they span at most a few windows. */
    tu_counter k;
    tu_counter_init(&k);
    for (int i = 0; i < 50; i++)
        assert_int_equal(momento_get(c, "c", "k", 1, NULL, tu_count_cb, &k), MOMENTO_OK);
    assert_int_equal(tu_counter_wait(&k, 50, 30000), 50);
    size_t limited = tu_counter_errors(&k, MOMENTO_ERR_LIMIT_EXCEEDED);
    assert_true(k.ok >= 5);
    assert_true(limited >= 20);
    assert_int_equal(k.ok + limited, 50);
    assert_int_equal(momento_local_rpc_count(s, "Get", 8), limited);
    /* The err trailer names the cause. */
    momento_result *r = NULL;
    for (int i = 0; i < 10 && momento_get_sync(c, "c", "k", 1, NULL, &r) == MOMENTO_OK; i++) {
        momento_result_free(r);
        r = NULL;
    }
    assert_non_null(r);
    assert_string_equal(momento_result_error_detail(r), "operations_rate_limit_exceeded");
    momento_result_free(r);
    /* Ping is never throttled. */
    assert_int_equal(momento_ping_sync(c, NULL, NULL), MOMENTO_OK);
    momento_client_free(c);
    tu_counter_destroy(&k);
    momento_local_stop(s);
}

static void test_options_and_lru(void **state)
{
    (void)state;
    assert_int_equal(momento_local_options_new(NULL), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_local_options_set_bind(NULL, "::1"), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_local_options_set_port(NULL, 1), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_local_options_set_auth_token(NULL, "t"), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_local_options_set_max_memory(NULL, 1), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_local_options_set_max_item_bytes(NULL, 1), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_local_options_set_max_rps(NULL, 1), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_local_options_add_cache(NULL, "c"), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_local_start(NULL, NULL), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_local_port(NULL), -1);
    assert_string_equal(momento_local_endpoint(NULL), "");
    assert_int_equal(momento_local_rpc_count(NULL, "Get", -1), 0);
    assert_null(momento_local_stats_json(NULL));
    momento_local_stop(NULL);
    momento_local_options_free(NULL);
    momento_local_options *o;
    momento_local_options_new(&o);
    assert_int_equal(momento_local_options_set_bind(o, "localhost"), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_local_options_set_bind(o, NULL), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_local_options_set_max_item_bytes(o, 0), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_local_options_set_bind(o, "::1"), MOMENTO_OK);
    assert_int_equal(momento_local_options_set_bind(o, "127.0.0.1"), MOMENTO_OK);
    assert_int_equal(momento_local_options_set_port(o, 70000), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_local_options_set_tls(o, "cert", NULL), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_local_options_add_cache(o, ""), MOMENTO_ERR_INVALID_ARGUMENT);
    momento_local_options_add_cache(o, "c");
    momento_local_options_set_max_memory(o, 64 * 1024);
    momento_local *s = tu_server(o);
    /* A second server on the same port cannot bind. */
    momento_local_options_set_port(o, momento_local_port(s));
    momento_local *s2 = (momento_local *)0x1;
    assert_int_equal(momento_local_start(&s2, o), MOMENTO_ERR_SERVER_UNAVAILABLE);
    assert_ptr_equal(s2, (momento_local *)0x1);
    momento_local_options_set_port(o, 0);
    momento_local_options_set_tls(o, "/nonexistent/cert.pem", "/nonexistent/key.pem");
    assert_int_equal(momento_local_start(&s2, o), MOMENTO_ERR_INVALID_ARGUMENT);
    momento_local_options_free(o);

    momento_client *c = tu_client(s, NULL);
    char val[1024];
    memset(val, 'v', sizeof(val));
    for (int i = 0; i < 200; i++) { /* ~200 KiB into a 64 KiB store */
        char key[16];
        snprintf(key, sizeof(key), "lru%d", i);
        assert_int_equal(momento_set_sync(c, "c", key, strlen(key), val, sizeof(val), 0, NULL, NULL), MOMENTO_OK);
        if (i == 100) /* keep touching lru0 so it stays hot */
            assert_int_equal(momento_get_sync(c, "c", "lru0", 4, NULL, NULL), MOMENTO_OK);
        if (i % 10 == 0)
            momento_get_sync(c, "c", "lru0", 4, NULL, NULL);
    }
    momento_result *r;
    assert_int_equal(momento_get_sync(c, "c", "lru1", 4, NULL, &r), MOMENTO_OK);
    assert_int_equal(momento_result_outcome(r), MOMENTO_OUTCOME_MISS); /* evicted */
    momento_result_free(r);
    assert_int_equal(momento_get_sync(c, "c", "lru0", 4, NULL, &r), MOMENTO_OK);
    assert_int_equal(momento_result_outcome(r), MOMENTO_OUTCOME_HIT); /* recently used: kept */
    momento_result_free(r);
    tu_expect(momento_get_sync(c, "c", "lru199", 6, NULL, &r), r, MOMENTO_OUTCOME_HIT);
    momento_client_free(c);
    momento_local_stop(s);
}

/* A `cache` header longer than a cache name may be is refused, never cut
 * to a name that exists: 300 bytes whose first 255 name a cache do not
 * reach it. */
static void test_long_cache_header(void **state)
{
    (void)state;
    char name[301];
    memset(name, 'n', 300);
    name[255] = '\0';
    momento_local *s = tu_start(tu_options(name));
    const char *ep = momento_local_endpoint(s);
    const char *h[] = {"cache", name};
    CacheClient__GetRequest get = CACHE_CLIENT____GET_REQUEST__INIT;
    get.cache_key = (ProtobufCBinaryData){1, (uint8_t *)"k"};
    /* Exactly 255 bytes: the cache (a miss). */
    assert_int_equal(tu_raw_call_msg(ep, SCS "Get", h, 1, &get.base, NULL), 0);
    for (size_t n = 256; n <= 300; n += 44) {
        memset(name, 'n', n);
        name[n] = '\0';
        tu_raw_reply r;
        int st = tu_raw_call_msg(ep, SCS "Get", h, 1, &get.base, &r);
        if (st != 3)
            fail_msg("%zu-byte cache header: status %d (%s), want 3", n, st, r.details);
        assert_non_null(strstr(r.details, "255 bytes"));
        assert_int_equal(r.n_msgs, 0);
        tu_raw_reply_free(&r);
    }
    /* Streams are refused the same way. */
    CacheClient__GetBatchRequest gb = CACHE_CLIENT____GET_BATCH_REQUEST__INIT;
    assert_int_equal(tu_raw_call_msg(ep, SCS "GetBatch", h, 1, &gb.base, NULL), 3);
    assert_int_equal(momento_local_rpc_count(s, "Get", 3), 2);
    momento_local_stop(s);
}

/* A cache listed twice at start is one cache, and the server starts. */
static void test_duplicate_start_caches(void **state)
{
    (void)state;
    momento_local_options *o;
    momento_local_options_new(&o);
    momento_local_options_add_cache(o, "dup");
    momento_local_options_add_cache(o, "other");
    momento_local_options_add_cache(o, "dup");
    momento_local *s = NULL;
    assert_int_equal(momento_local_start(&s, o), MOMENTO_OK);
    momento_local_options_free(o);
    const char *ep = momento_local_endpoint(s);
    char got[64], next[16];
    list_page(ep, "", got, sizeof(got), next, sizeof(next));
    if (strcmp(got, "dup,other") != 0 && strcmp(got, "other,dup") != 0)
        fail_msg("ListCaches gave '%s', want dup and other once each", got);
    CacheClient__GetRequest req = CACHE_CLIENT____GET_REQUEST__INIT;
    req.cache_key = (ProtobufCBinaryData){1, (uint8_t *)"k"};
    const char *h[] = {"cache", "dup"};
    assert_int_equal(tu_raw_call_msg(ep, SCS "Get", h, 1, &req.base, NULL), 0);
    momento_local_stop(s);
}

/* ---- calls left open: deadlines, cancels, many streams ---------------- */

/* On connections of the tests' own (tu_raw_conn.h), unlike tu_raw_call's. */

/* A delay longer than any test: only a deadline, a cancel or the server
 * stopping ends it. */
#define FOREVER_MS "999999999"

/* A delayed call is parked, not slept (the server answers calls on one
 * thread): while a call with a delay no test outlasts is held, a Set on
 * another connection and a Get of the same request-id on the same
 * connection - its delay-count of 1 used up - are both answered, and the
 * held call is still parked after them. Order, not time: nothing here
 * depends on how fast the machine is. */
static void test_delay_does_not_block_others(void **state)
{
    (void)state;
    tu_raw_conn k;
    tu_raw_conn_open(&k, tu_fx.target);
    const char *hd[] = {"cache", "c", "request-id", "delay-par", "delay-ms", FOREVER_MS,
                        "delay-count", "1"};
    uint8_t get_body[] = {0x0a, 0x04, 'd', 'p', 'a', 'r'}; /* a key no other test sets */
    tu_open_call held, next;
    tu_open_call_start(&k, &held, SCS "Get", hd, 4, get_body, sizeof(get_body), 0);
    assert_int_equal(tu_wait_parked(tu_fx.server, 1, 10000), 1);
    assert_int_equal(set("free", "x", 60000), 0);
    tu_open_call_start(&k, &next, SCS "Get", hd, 4, get_body, sizeof(get_body), 0);
    assert_ptr_equal(tu_raw_conn_next(&k, TU_MS(30000)), &next);
    assert_int_equal(next.status, GRPC_STATUS_OK);
    assert_int_equal(momento_local_parked_calls(tu_fx.server), 1);
    assert_false(held.done);
    grpc_call_cancel(held.call, NULL);
    assert_ptr_equal(tu_raw_conn_next(&k, TU_MS(30000)), &held);
    assert_int_equal(held.status, GRPC_STATUS_CANCELLED);
    assert_int_equal(tu_wait_parked(tu_fx.server, 0, 10000), 0);
    tu_open_call_close(&held);
    tu_open_call_close(&next);
    tu_raw_conn_close(&k);
}

/* A server with cache "c" that wants `token`. */
/* Starts on `k`, as `oc`, a Set of 4 MB to key "big" with `h` (n_h
 * pairs) and `deadline_ms` (0: none): with a delay header, a call the
 * server parks with its large message. */
static void start_big_set(tu_raw_conn *k, tu_open_call *oc, const char *const *h, size_t n_h,
                          int64_t deadline_ms)
{
    size_t big = 4 * 1024 * 1024;
    char *val = malloc(big);
    assert_non_null(val);
    memset(val, 'v', big);
    CacheClient__SetRequest sr = CACHE_CLIENT____SET_REQUEST__INIT;
    sr.cache_key = (ProtobufCBinaryData){3, (uint8_t *)"big"};
    sr.cache_body = (ProtobufCBinaryData){big, (uint8_t *)val};
    size_t len = protobuf_c_message_get_packed_size(&sr.base);
    uint8_t *buf = malloc(len);
    assert_non_null(buf);
    protobuf_c_message_pack(&sr.base, buf);
    tu_open_call_start(k, oc, SCS "Set", h, n_h, buf, len, deadline_ms);
    free(buf);
    free(val);
}

/* Calls parked by a huge delay leave at their deadline: the clients see
 * DEADLINE_EXCEEDED, the server frees them (a 4 MB Set among them) and
 * counts each as DEADLINE_EXCEEDED under its RPC. */
static void test_parked_calls_leave_at_deadline(void **state)
{
    (void)state;
    momento_local *s = tu_server_with_cache("c");
    tu_raw_conn k;
    tu_raw_conn_open(&k, momento_local_endpoint(s));
    const char *h[] = {"cache", "c", "request-id", "park-deadline", "delay-ms", FOREVER_MS};
    enum { N = 20 };
    static tu_open_call calls[N + 1];
    uint8_t get_body[] = {0x0a, 0x01, 'k'};
    for (int i = 0; i < N; i++)
        tu_open_call_start(&k, &calls[i], SCS "Get", h, 3, get_body, sizeof(get_body), TU_MS(300));
    start_big_set(&k, &calls[N], h, 3, TU_MS(300));
    for (int i = 0; i <= N; i++) {
        tu_open_call *oc = tu_raw_conn_next(&k, TU_MS(5000));
        assert_non_null(oc);
        assert_int_equal(oc->status, GRPC_STATUS_DEADLINE_EXCEEDED);
    }
    /* The server lets go of them too, rather than at the end of the delay. */
    assert_int_equal(tu_wait_parked(s, 0, 2000), 0);
    uint64_t gets = momento_local_rpc_count(s, "Get", GRPC_STATUS_DEADLINE_EXCEEDED);
    uint64_t sets = momento_local_rpc_count(s, "Set", GRPC_STATUS_DEADLINE_EXCEEDED);
    if (tu_time_scale() == 1) {
        assert_int_equal(gets, N);
        assert_int_equal(sets, 1);
    } else {
        /* Under a slow wrapper the server may read a call's headers long
         * after they were sent, and see the client give up well before its
         * own view of the deadline: then it counts CANCELLED. */
        assert_int_equal(gets + momento_local_rpc_count(s, "Get", GRPC_STATUS_CANCELLED), N);
        assert_int_equal(sets + momento_local_rpc_count(s, "Set", GRPC_STATUS_CANCELLED), 1);
    }
    assert_int_equal(momento_local_rpc_count(s, NULL, -1), N + 1);
    for (int i = 0; i <= N; i++)
        tu_open_call_close(&calls[i]);
    tu_raw_conn_close(&k);
    momento_local_stop(s);
}

/* A parked call whose client cancels leaves the server at once, counted
 * CANCELLED; the calls parked beside it stay. */
static void test_cancelled_parked_call_leaves(void **state)
{
    (void)state;
    momento_local *s = tu_server_with_cache("c");
    tu_raw_conn k;
    tu_raw_conn_open(&k, momento_local_endpoint(s));
    const char *h[] = {"cache", "c", "request-id", "park-cancel", "delay-ms", FOREVER_MS};
    uint8_t get_body[] = {0x0a, 0x01, 'k'};
    tu_open_call calls[3];
    for (int i = 0; i < 3; i++)
        tu_open_call_start(&k, &calls[i], SCS "Get", h, 3, get_body, sizeof(get_body), 0);
    assert_int_equal(tu_wait_parked(s, 3, 5000), 3);
    /* The middle one first, then the others: removal from anywhere in the
     * heap. */
    int order[3] = {1, 0, 2};
    for (int j = 0; j < 3; j++) {
        tu_open_call *oc = &calls[order[j]];
        /* Its delay has no end: the count going down is the cancel's
         * doing, whenever it comes. */
        grpc_call_cancel(oc->call, NULL);
        assert_ptr_equal(tu_raw_conn_next(&k, TU_MS(5000)), oc);
        assert_int_equal(oc->status, GRPC_STATUS_CANCELLED);
        assert_int_equal(tu_wait_parked(s, (uint64_t)(2 - j), 10000), 2 - j);
        assert_int_equal(momento_local_rpc_count(s, "Get", GRPC_STATUS_CANCELLED), (uint64_t)j + 1);
    }
    assert_int_equal(momento_local_rpc_count(s, NULL, -1), 3);
    for (int i = 0; i < 3; i++)
        tu_open_call_close(&calls[i]);
    tu_raw_conn_close(&k);
    /* Still serving, and a short delay still ends in an answer. */
    tu_raw_reply r;
    const char *hd[] = {"cache", "c", "delay-ms", "50"};
    assert_int_equal(tu_raw_call(momento_local_endpoint(s), SCS "Get", hd, 2, get_body,
                                 sizeof(get_body), &r), 0);
    tu_raw_reply_free(&r);
    momento_local_stop(s);
}

/* On a server with a token, fault injection is for those holding it: a
 * Ping without the token (Ping needs none) is neither delayed nor failed;
 * with the token it is. */
static void test_unauthenticated_ping_has_no_faults(void **state)
{
    (void)state;
    momento_local *s = tu_server_with_token("sekrit");
    const char *ep = momento_local_endpoint(s);
    const char *path = "/cache_client.Ping/Ping";
    tu_raw_reply r;
    const char *delay[] = {"delay-ms", FOREVER_MS, "authorization", "nope"};
    /* No token, then a wrong one: answered OK, so not held by a delay that
     * would outlast tu_raw_call()'s deadline (it would end
     * DEADLINE_EXCEEDED). */
    for (size_t n = 1; n <= 2; n++) {
        assert_int_equal(tu_raw_call(ep, path, delay, n, "", 0, &r), 0);
        tu_raw_reply_free(&r);
    }
    const char *fail[] = {"return-error", "unavailable"};
    assert_int_equal(tu_raw_call(ep, path, fail, 1, "", 0, &r), 0);
    tu_raw_reply_free(&r);
    const char *bad[] = {"return-error", "no-such-error"};
    assert_int_equal(tu_raw_call(ep, path, bad, 1, "", 0, &r), 0);
    tu_raw_reply_free(&r);
    assert_int_equal(momento_local_parked_calls(s), 0);
    assert_int_equal(momento_local_rpc_count(s, "Ping", 0), 4);
    /* With the token the faults apply. */
    const char *authed_fail[] = {"return-error", "unavailable", "authorization", "sekrit"};
    assert_int_equal(tu_raw_call(ep, path, authed_fail, 2, "", 0, &r), 14);
    tu_raw_reply_free(&r);
    const char *authed_delay[] = {"delay-ms", "200", "authorization", "sekrit"};
    int64_t t0 = tu_now_ms();
    assert_int_equal(tu_raw_call(ep, path, authed_delay, 2, "", 0, &r), 0);
    tu_raw_reply_free(&r);
    assert_true(tu_now_ms() - t0 >= 200);
    momento_local_stop(s);
}

/* ---- who may inject faults; a token's scope before any delay --------- */

#define TOKEN_PATH "/token.Token/GenerateDisposableToken"

/* Packs a GenerateDisposableToken request for a read-write grant on cache
 * "c" (on its key `item`, or every item for NULL), valid 60 s, with
 * `caller_key` as the caller's key and `pad` bytes of token id (0: none;
 * the server refuses ids over 64 characters, but only after the key). */
static uint8_t *pack_token_request(const char *caller_key, const char *item, size_t pad,
                                   size_t *ret_len)
{
    char *id = NULL;
    if (pad) {
        id = malloc(pad + 1);
        memset(id, 't', pad);
        id[pad] = '\0';
    }
    srv_token_request t;
    srv_token_request_init(&t, caller_key, "c", PERMISSION_MESSAGES__CACHE_ROLE__CacheReadWrite,
                           item, false, id);
    *ret_len = protobuf_c_message_get_packed_size(&t.req.base);
    uint8_t *buf = malloc(*ret_len + 1);
    protobuf_c_message_pack(&t.req.base, buf);
    free(id);
    return buf;
}

/* A disposable token (the bare token, malloc'd) for a read-write grant on
 * key `item` of cache "c" (NULL: every key), from the server at `ep` with
 * `caller_key` as the caller's key. */
static char *mint_token(const char *ep, const char *caller_key, const char *item)
{
    size_t len;
    uint8_t *buf = pack_token_request(caller_key, item, 0, &len);
    tu_raw_reply r;
    /* The key in the body, no authorization header: as the official SDKs'
     * token client sends it. */
    assert_int_equal(tu_raw_call(ep, TOKEN_PATH, NULL, 0, buf, len, &r), 0);
    free(buf);
    assert_int_equal(r.n_msgs, 1);
    Token__GenerateDisposableTokenResponse *resp =
        token____generate_disposable_token_response__unpack(NULL, r.lens[0], r.msgs[0]);
    assert_non_null(resp);
    char *token = strdup(resp->api_key);
    token____generate_disposable_token_response__free_unpacked(resp, NULL);
    tu_raw_reply_free(&r);
    return token;
}

/* On a server with a token, the token service's callers without it cannot
 * inject faults (issue 27 item 6): 200 GenerateDisposableToken calls with
 * no key and no deadline, each asking for a 10-minute delay with a
 * 256 KiB body, are all refused at once (UNAUTHENTICATED), none parked.
 * Its callers with the token - as `authorization`, or as the key in the
 * body, where the token service reads it - still can. */
static void test_token_service_faults_need_the_token(void **state)
{
    (void)state;
    momento_local *s = tu_server_with_token("sekrit");
    const char *ep = momento_local_endpoint(s);
    tu_raw_conn k;
    tu_raw_conn_open(&k, ep);
    const char *h[] = {"delay-ms", "600000"};
    enum { N = 200 };
    static tu_open_call calls[N];
    size_t len;
    uint8_t *buf = pack_token_request("", NULL, 256 * 1024, &len);
    for (int i = 0; i < N; i++)
        tu_open_call_start(&k, &calls[i], TOKEN_PATH, h, 1, buf, len, 0);
    free(buf);
    for (int i = 0; i < N; i++) {
        tu_open_call *oc = tu_raw_conn_next(&k, TU_MS(10000));
        if (!oc)
            fail_msg("%d of %d calls answered; %llu parked", i, N,
                     (unsigned long long)momento_local_parked_calls(s));
        assert_int_equal(oc->status, GRPC_STATUS_UNAUTHENTICATED);
    }
    assert_int_equal(momento_local_parked_calls(s), 0);
    assert_int_equal(momento_local_rpc_count(s, "GenerateDisposableToken", GRPC_STATUS_UNAUTHENTICATED),
                     N);
    for (int i = 0; i < N; i++)
        tu_open_call_close(&calls[i]);
    tu_raw_conn_close(&k);

    tu_raw_reply r;
    uint8_t *no_key = pack_token_request("", NULL, 0, &len);
    /* A wrong key in the body, or a wrong authorization: no fault. */
    const char *fail[] = {"return-error", "unavailable", "authorization", "nope"};
    for (size_t n = 1; n <= 2; n++) {
        assert_int_equal(tu_raw_call(ep, TOKEN_PATH, fail, n, no_key, len, &r),
                         GRPC_STATUS_UNAUTHENTICATED);
        tu_raw_reply_free(&r);
    }
    /* The token as `authorization` (the library sends it so): delayed, then
     * refused for the key in the body. */
    const char *delay[] = {"delay-ms", "150", "authorization", "sekrit"};
    int64_t t0 = tu_now_ms();
    assert_int_equal(tu_raw_call(ep, TOKEN_PATH, delay, 2, no_key, len, &r),
                     GRPC_STATUS_UNAUTHENTICATED);
    tu_raw_reply_free(&r);
    assert_true(tu_now_ms() - t0 >= 150);
    free(no_key);
    /* The token as the key in the body (the Node.js SDK sends only that). */
    uint8_t *keyed = pack_token_request("sekrit", NULL, 0, &len);
    assert_int_equal(tu_raw_call(ep, TOKEN_PATH, fail, 1, keyed, len, &r),
                     GRPC_STATUS_UNAVAILABLE);
    tu_raw_reply_free(&r);
    assert_int_equal(tu_raw_call(ep, TOKEN_PATH, NULL, 0, keyed, len, &r), 0);
    tu_raw_reply_free(&r);
    free(keyed);
    momento_local_stop(s);
}

/* On a server with a token, a disposable token's holder cannot inject
 * faults either (Momento has none): its calls are served as if they had no
 * fault headers, even malformed ones - and outside its scope refused. */
static void test_disposable_token_faults_ignored(void **state)
{
    (void)state;
    momento_local *s = tu_server_with_token("sekrit");
    const char *ep = momento_local_endpoint(s);
    char *token = mint_token(ep, "sekrit", "a");
    tu_raw_conn k;
    tu_raw_conn_open(&k, ep);
    uint8_t get_a[] = {0x0a, 0x01, 'a'}, get_b[] = {0x0a, 0x01, 'b'};
    const char *h[] = {"cache", "c", "authorization", token, "delay-ms", FOREVER_MS,
                       "return-error", "unavailable"};
    const char *bad[] = {"cache", "c", "authorization", token, "return-error", "no-such-error"};
    tu_open_call calls[3];
    tu_open_call_start(&k, &calls[0], SCS "Get", h, 4, get_a, sizeof(get_a), TU_MS(5000));
    tu_open_call_start(&k, &calls[1], SCS "Get", h, 4, get_b, sizeof(get_b), TU_MS(5000));
    tu_open_call_start(&k, &calls[2], SCS "Get", bad, 3, get_a, sizeof(get_a), TU_MS(5000));
    grpc_status_code want[3] = {GRPC_STATUS_OK, GRPC_STATUS_PERMISSION_DENIED, GRPC_STATUS_OK};
    for (int i = 0; i < 3; i++) {
        tu_open_call *oc = tu_raw_conn_next(&k, TU_MS(10000));
        assert_non_null(oc);
        assert_int_equal(oc->status, want[oc - calls]);
    }
    assert_int_equal(momento_local_parked_calls(s), 0);
    assert_int_equal(momento_local_rpc_count(s, "Get", GRPC_STATUS_DEADLINE_EXCEEDED), 0);
    for (int i = 0; i < 3; i++)
        tu_open_call_close(&calls[i]);
    tu_raw_conn_close(&k);
    free(token);
    momento_local_stop(s);
}

/* On a server without a token anyone may inject faults, a disposable
 * token's holder too; but the token's scope comes first: a Get outside it
 * is refused at once, not after its delay (issue 27 item 6). */
static void test_scope_checked_before_delay(void **state)
{
    (void)state;
    momento_local *s = tu_server_with_cache("c");
    const char *ep = momento_local_endpoint(s);
    char *token = mint_token(ep, "", "a");
    tu_raw_conn k;
    tu_raw_conn_open(&k, ep);
    uint8_t get_a[] = {0x0a, 0x01, 'a'}, get_b[] = {0x0a, 0x01, 'b'};
    const char *forever[] = {"cache", "c", "authorization", token, "delay-ms", FOREVER_MS};
    const char *brief[] = {"cache", "c", "authorization", token, "delay-ms", "100"};
    tu_open_call out, in;
    tu_open_call_start(&k, &out, SCS "Get", forever, 3, get_b, sizeof(get_b), TU_MS(5000));
    assert_ptr_equal(tu_raw_conn_next(&k, TU_MS(10000)), &out);
    assert_int_equal(out.status, GRPC_STATUS_PERMISSION_DENIED);
    assert_int_equal(momento_local_rpc_count(s, "Get", GRPC_STATUS_PERMISSION_DENIED), 1);
    /* In its scope the delay applies. */
    int64_t t0 = tu_now_ms();
    tu_open_call_start(&k, &in, SCS "Get", brief, 3, get_a, sizeof(get_a), TU_MS(5000));
    assert_ptr_equal(tu_raw_conn_next(&k, TU_MS(10000)), &in);
    assert_int_equal(in.status, GRPC_STATUS_OK);
    assert_true(tu_now_ms() - t0 >= 100);
    tu_open_call_close(&out);
    tu_open_call_close(&in);
    tu_raw_conn_close(&k);
    free(token);
    momento_local_stop(s);
}

/* A delay that ends at the call's deadline never reaches the client as a
 * DEADLINE_EXCEEDED before that deadline (issue 27 item 3): the server's
 * view of the deadline is rounded up, the server answers a delay that
 * reaches it only 1 s later (if the client's own timer has not ended the
 * call), and gRPC's own server-side deadline is off. Rounded down, this
 * server answered some such calls up to 1 ms early; gRPC's, under CPU load,
 * up to tens of ms; 50 ms later, under valgrind, up to 40 ms before the
 * client's deadline. Within a round the calls start a fraction of a
 * millisecond apart, so that their deadlines fall at every point of a
 * millisecond; the rounds start at different points of the server loop's
 * cycle. */
static void test_delay_never_ends_before_deadline(void **state)
{
    (void)state;
    momento_local *s = tu_server_with_cache("c");
    tu_raw_conn k;
    tu_raw_conn_open(&k, momento_local_endpoint(s));
    char delay[16];
    snprintf(delay, sizeof(delay), "%lld", (long long)TU_MS(200));
    const char *h[] = {"cache", "c", "delay-ms", delay};
    uint8_t get_body[] = {0x0a, 0x01, 'k'};
    enum { ROUNDS = 5, N = 40 };
    static tu_open_call calls[N];
    int early = 0;
    char why[160] = "";
    for (int round = 0; round < ROUNDS; round++) {
        usleep(1000 + 230 * round);
        for (int i = 0; i < N; i++) {
            tu_open_call_start(&k, &calls[i], SCS "Get", h, 2, get_body, sizeof(get_body),
                               TU_MS(200));
            usleep(370);
        }
        for (int i = 0; i < N; i++) {
            tu_open_call *oc = tu_raw_conn_next(&k, TU_MS(5000));
            assert_non_null(oc);
            gpr_timespec at = gpr_now(GPR_CLOCK_MONOTONIC);
            /* An answer that beat the deadline is fine; a timeout never is. */
            if (oc->status == GRPC_STATUS_OK)
                continue;
            assert_int_equal(oc->status, GRPC_STATUS_DEADLINE_EXCEEDED);
            if (gpr_time_cmp(at, oc->deadline) < 0) {
                gpr_timespec d = gpr_time_sub(oc->deadline, at);
                char *msg = grpc_slice_to_c_string(oc->details);
                snprintf(why, sizeof(why), "%d us before its deadline (\"%s\")",
                         (int)(d.tv_sec * 1000000 + d.tv_nsec / 1000), msg);
                gpr_free(msg);
                early++;
            }
        }
        for (int i = 0; i < N; i++)
            tu_open_call_close(&calls[i]);
    }
    if (early)
        fail_msg("%d of %d calls timed out early, e.g. %s", early, ROUNDS * N, why);
    tu_raw_conn_close(&k);
    momento_local_stop(s);
}

/* Stopping with calls parked (Gets without a deadline, a 4 MB Set) ends
 * each of them, counts them UNAVAILABLE and frees everything (the memcheck
 * run checks the last under valgrind). */
static void test_stop_with_parked_calls(void **state)
{
    (void)state;
    momento_local *s = tu_server_with_cache("c");
    tu_raw_conn k;
    tu_raw_conn_open(&k, momento_local_endpoint(s));
    const char *h[] = {"cache", "c", "delay-ms", FOREVER_MS};
    uint8_t get_body[] = {0x0a, 0x01, 'k'};
    enum { N = 10 };
    static tu_open_call calls[N + 1];
    for (int i = 0; i < N; i++)
        tu_open_call_start(&k, &calls[i], SCS "Get", h, 2, get_body, sizeof(get_body), 0);
    start_big_set(&k, &calls[N], h, 2, 0);
    assert_int_equal(tu_wait_parked(s, N + 1, 10000), N + 1);
    assert_int_equal(momento_local_rpc_count(s, NULL, -1), 0);
    momento_local_stop(s);
    for (int i = 0; i <= N; i++) {
        tu_open_call *oc = tu_raw_conn_next(&k, TU_MS(5000));
        assert_non_null(oc);
        assert_int_not_equal(oc->status, GRPC_STATUS_OK);
    }
    for (int i = 0; i <= N; i++)
        tu_open_call_close(&calls[i]);
    tu_raw_conn_close(&k);
}

/* The order behind CI's abort, forced: a call gRPC matched before the
 * stop comes after the completion queue is shut (srv_test_hold_new_calls()
 * keeps it until then). It must go unanswered: a batch started for it
 * aborted the process in gRPC. Its client, gone by then, was called back
 * once, CANCELLED, at its free. */
static void test_call_handed_over_after_the_queue_is_shut(void **state)
{
    (void)state;
    const char *delays[] = {NULL, FOREVER_MS}; /* answered at once, then parked */
    for (int i = 0; i < 2; i++) {
        momento_local *s = tu_server_with_cache("c");
        srv_test_hold_new_calls(s);
        momento_client *c = tu_client(s, NULL);
        if (delays[i]) {
            tu_header(s, c, "delay-ms", delays[i]);
            tu_header(s, c, "delay-rpcs", "get");
        }
        tu_counter k;
        tu_counter_init(&k);
        assert_int_equal(momento_get(c, "c", "k", 1, NULL, tu_count_cb, &k), MOMENTO_OK);
        tu_wait_until(srv_test_held_calls(s) == 1, TU_MS(5000));
        assert_int_equal(srv_test_held_calls(s), 1);
        momento_client_free(c);
        assert_int_equal(k.total, 1);
        assert_int_equal(tu_counter_errors(&k, MOMENTO_ERR_CANCELLED), 1);
        tu_counter_destroy(&k);
        momento_local_stop(s); /* the held call is handled in here */
    }
}

/* Stopped just after its client left with delayed gets in flight, as
 * every test_client fixture's teardown does: gRPC can hand the server a
 * call it matched before the stop after the shutdown tag, even after the
 * queue is shut, and a batch started for it then aborted the process in
 * gRPC, silently (CI saw it once, in test_client). Before the fix about one
 * round in 4,000 of this loop aborted: a stress check, not a proof, bounded
 * in rounds and time. Each round also checks every get is called back
 * once, CANCELLED. */
static void test_stop_just_after_clients_left(void **state)
{
    (void)state;
    enum { ROUNDS = 3000 };
    /* Wall time, not scaled: under valgrind the first rounds suffice. */
    int64_t until = tu_now_ms() + 8000;
    for (int r = 0; r < ROUNDS && (r < 5 || tu_now_ms() < until); r++) {
        momento_local *s = tu_server_with_cache("c");
        momento_client *c = tu_client(s, NULL);
        tu_header(s, c, "delay-ms", FOREVER_MS);
        tu_header(s, c, "delay-rpcs", "get");
        tu_counter k;
        tu_counter_init(&k);
        /* Past the 100 streams of a connection: some wait in the client. */
        size_t n = 150 + (size_t)(r % 100);
        for (size_t i = 0; i < n; i++)
            assert_int_equal(momento_get(c, "c", "k", 1, NULL, tu_count_cb, &k), MOMENTO_OK);
        momento_client_free(c);
        assert_int_equal(k.total, n);
        assert_int_equal(tu_counter_errors(&k, MOMENTO_ERR_CANCELLED), n);
        tu_counter_destroy(&k);
        momento_local_stop(s);
        if (getenv("TU_DEBUG") && r % 500 == 0)
            fprintf(stderr, "round %d\n", r);
    }
}

/* One connection holds at most `L` calls (the server's streams per
 * connection): with that many parked, its further calls wait in the client
 * (gRPC queues streams beyond the server's SETTINGS_MAX_CONCURRENT_STREAMS)
 * and reach the server as streams free up; another connection is served
 * meanwhile. `s` is stopped. */
static void stream_limit(momento_local *s, int L)
{
    enum { EXTRA = 10 };
    const char *ep = momento_local_endpoint(s);
    tu_raw_conn k;
    tu_raw_conn_open(&k, ep);
    const char *h[] = {"cache", "c", "delay-ms", FOREVER_MS};
    uint8_t get_body[] = {0x0a, 0x01, 'k'};
    /* Connected first, so that calls take streams in the order they are
     * made (calls made while the channel connects resume in any order). */
    const char *hc[] = {"cache", "c"};
    tu_open_call warm;
    tu_open_call_start(&k, &warm, SCS "Get", hc, 1, get_body, sizeof(get_body), 0);
    assert_ptr_equal(tu_raw_conn_next(&k, TU_MS(5000)), &warm);
    assert_int_equal(warm.status, GRPC_STATUS_OK);
    tu_open_call_close(&warm);
    tu_open_call *calls = calloc(L + EXTRA, sizeof(*calls));
    for (int i = 0; i < L + EXTRA; i++)
        tu_open_call_start(&k, &calls[i], SCS "Get", h, 2, get_body, sizeof(get_body), 0);
    assert_int_equal(tu_wait_parked(s, L, 20000), L);
    usleep((useconds_t)TU_MS(300) * 1000);
    uint64_t parked = momento_local_parked_calls(s);
    if (parked != (uint64_t)L)
        fail_msg("one connection got %llu calls to the server, want at most %d",
                 (unsigned long long)parked, L);
    /* Another connection is not held up. */
    tu_raw_reply r;
    assert_int_equal(tu_raw_call(ep, SCS "Get", hc, 1, get_body, sizeof(get_body), &r), 0);
    tu_raw_reply_free(&r);
    /* Cancelling EXTRA parked calls (the first made) lets the waiting ones
     * in. */
    for (int i = 0; i < EXTRA; i++)
        grpc_call_cancel(calls[i].call, NULL);
    for (int i = 0; i < EXTRA; i++) {
        tu_open_call *oc = tu_raw_conn_next(&k, TU_MS(5000));
        assert_non_null(oc);
        assert_int_equal(oc->status, GRPC_STATUS_CANCELLED);
    }
    tu_wait_until(momento_local_rpc_count(s, "Get", GRPC_STATUS_CANCELLED) >= EXTRA, 5000);
    assert_int_equal(momento_local_rpc_count(s, "Get", GRPC_STATUS_CANCELLED), EXTRA);
    assert_int_equal(tu_wait_parked(s, L, 5000), L);
    for (int i = EXTRA; i < L + EXTRA; i++)
        grpc_call_cancel(calls[i].call, NULL);
    for (int i = EXTRA; i < L + EXTRA; i++)
        assert_non_null(tu_raw_conn_next(&k, TU_MS(10000)));
    for (int i = 0; i < L + EXTRA; i++) {
        assert_true(calls[i].done);
        tu_open_call_close(&calls[i]);
    }
    free(calls);
    tu_raw_conn_close(&k);
    assert_int_equal(tu_wait_parked(s, 0, 5000), 0);
    momento_local_stop(s);
}

/* 100 by default, as Momento; what the option says otherwise. */
static void test_stream_limit_per_connection(void **state)
{
    (void)state;
    stream_limit(tu_server_with_cache("c"), 100);
    momento_local_options *o = NULL;
    assert_int_equal(momento_local_options_new(&o), MOMENTO_OK);
    srv_assert_option_range(o, momento_local_options_set_max_streams_per_connection, 250, 0,
                            100001);
    assert_int_equal(momento_local_options_add_cache(o, "c"), MOMENTO_OK);
    momento_local *s = tu_server(o);
    momento_local_options_free(o);
    stream_limit(s, 250);
}

/* ---- calls cancelled by their clients ---------------------------------- */

/* Waits up to timeout_ms (scaled) for momento_local_cancelled_calls(s,
 * method) to be `want`; returns the last count seen. */
static uint64_t wait_cancelled(momento_local *s, const char *method, uint64_t want,
                               int64_t timeout_ms)
{
    uint64_t n;
    tu_wait_until((n = momento_local_cancelled_calls(s, method)) == want, timeout_ms);
    return n;
}

/* Parks a Get on `k` until it is cancelled, and cancels it: the positive
 * control of the tests below that check what is not counted. Returns once
 * the server has counted it (`want` cancelled Gets in all). */
static void park_and_cancel_get(momento_local *s, uint64_t want)
{
    tu_raw_conn k;
    tu_raw_conn_open(&k, momento_local_endpoint(s));
    const char *h[] = {"cache", "c", "delay-ms", FOREVER_MS};
    uint8_t get_body[] = {0x0a, 0x01, 'k'};
    tu_open_call oc;
    tu_open_call_start(&k, &oc, SCS "Get", h, 2, get_body, sizeof(get_body), 0);
    assert_int_equal(tu_wait_parked(s, 1, 5000), 1);
    grpc_call_cancel(oc.call, NULL);
    assert_ptr_equal(tu_raw_conn_next(&k, TU_MS(5000)), &oc);
    assert_int_equal(oc.status, GRPC_STATUS_CANCELLED);
    tu_open_call_close(&oc);
    tu_raw_conn_close(&k);
    assert_int_equal(wait_cancelled(s, "Get", want, 5000), want);
}

/* Parked calls their clients cancel are counted once each, under their
 * RPC and in the total, and in the stats JSON; the calls still parked are
 * not. */
static void test_parked_call_cancel_counted(void **state)
{
    (void)state;
    momento_local *s = tu_server_with_cache("c");
    tu_raw_conn k;
    tu_raw_conn_open(&k, momento_local_endpoint(s));
    const char *h[] = {"cache", "c", "delay-ms", FOREVER_MS};
    uint8_t get_body[] = {0x0a, 0x01, 'k'};
    uint8_t set_body[] = {0x0a, 0x01, 'k', 0x12, 0x01, 'v'};
    tu_open_call calls[3];
    tu_open_call_start(&k, &calls[0], SCS "Get", h, 2, get_body, sizeof(get_body), 0);
    tu_open_call_start(&k, &calls[1], SCS "Get", h, 2, get_body, sizeof(get_body), 0);
    tu_open_call_start(&k, &calls[2], SCS "Set", h, 2, set_body, sizeof(set_body), 0);
    assert_int_equal(tu_wait_parked(s, 3, 5000), 3);
    assert_int_equal(momento_local_cancelled_calls(s, NULL), 0);
    char *json = momento_local_stats_json(s);
    assert_non_null(json);
    assert_string_equal(json, "{\"total\": 0, \"methods\": {}, \"cancelled_by_client\": 0}");
    free(json);

    grpc_call_cancel(calls[0].call, NULL);
    assert_ptr_equal(tu_raw_conn_next(&k, TU_MS(5000)), &calls[0]);
    assert_int_equal(calls[0].status, GRPC_STATUS_CANCELLED);
    assert_int_equal(wait_cancelled(s, "Get", 1, 5000), 1);
    assert_int_equal(momento_local_cancelled_calls(s, NULL), 1);
    assert_int_equal(momento_local_cancelled_calls(s, "Set"), 0);
    assert_int_equal(momento_local_rpc_count(s, "Get", GRPC_STATUS_CANCELLED), 1);
    assert_int_equal(tu_wait_parked(s, 2, 5000), 2);
    json = momento_local_stats_json(s);
    assert_string_equal(json, "{\"total\": 1, \"methods\": {\"Get\": {\"total\": 1, "
                              "\"CANCELLED\": 1, \"cancelled_by_client\": 1}}, "
                              "\"cancelled_by_client\": 1}");
    free(json);

    grpc_call_cancel(calls[2].call, NULL);
    assert_ptr_equal(tu_raw_conn_next(&k, TU_MS(5000)), &calls[2]);
    assert_int_equal(wait_cancelled(s, "Set", 1, 5000), 1);
    assert_int_equal(momento_local_cancelled_calls(s, "Get"), 1);
    assert_int_equal(momento_local_cancelled_calls(s, NULL), 2);
    json = momento_local_stats_json(s);
    assert_non_null(strstr(json, "\"Set\": {\"total\": 1, \"CANCELLED\": 1, "
                                 "\"cancelled_by_client\": 1}"));
    assert_non_null(strstr(json, "}}, \"cancelled_by_client\": 2}"));
    free(json);

    /* Names as momento_local_rpc_count() takes them; nothing else. */
    assert_int_equal(momento_local_cancelled_calls(s, "get"), 0);
    assert_int_equal(momento_local_cancelled_calls(s, "Nope"), 0);
    assert_int_equal(momento_local_cancelled_calls(NULL, NULL), 0);
    assert_int_equal(momento_local_cancelled_calls(s, "Unimplemented"), 0);

    /* Zeroed with the rest of the counters. */
    momento_local_reset_stats(s);
    assert_int_equal(momento_local_cancelled_calls(s, NULL), 0);
    json = momento_local_stats_json(s);
    assert_string_equal(json, "{\"total\": 0, \"methods\": {}, \"cancelled_by_client\": 0}");
    free(json);

    grpc_call_cancel(calls[1].call, NULL);
    assert_ptr_equal(tu_raw_conn_next(&k, TU_MS(5000)), &calls[1]);
    assert_int_equal(wait_cancelled(s, NULL, 1, 5000), 1);
    assert_int_equal(tu_wait_parked(s, 0, 5000), 0);
    for (int i = 0; i < 3; i++)
        tu_open_call_close(&calls[i]);
    tu_raw_conn_close(&k);
    momento_local_stop(s);
}

/* A call answered with an injected CANCELLED error, at once or after a
 * delay, was answered: counted CANCELLED by momento_local_rpc_count(), not
 * as cancelled by its client. */
static void test_injected_cancelled_not_counted(void **state)
{
    (void)state;
    momento_local *s = tu_server_with_cache("c");
    const char *ep = momento_local_endpoint(s);
    uint8_t get_body[] = {0x0a, 0x01, 'k'};
    tu_raw_reply r;
    const char *now[] = {"cache", "c", "return-error", "cancelled"};
    assert_int_equal(tu_raw_call(ep, SCS "Get", now, 2, get_body, sizeof(get_body), &r),
                     GRPC_STATUS_CANCELLED);
    tu_raw_reply_free(&r);
    const char *later[] = {"cache", "c", "return-error", "cancelled", "delay-ms", "50"};
    assert_int_equal(tu_raw_call(ep, SCS "Get", later, 3, get_body, sizeof(get_body), &r),
                     GRPC_STATUS_CANCELLED);
    tu_raw_reply_free(&r);
    assert_int_equal(momento_local_rpc_count(s, "Get", GRPC_STATUS_CANCELLED), 2);
    usleep((useconds_t)TU_MS(100) * 1000); /* give a wrong count time to show */
    assert_int_equal(momento_local_cancelled_calls(s, NULL), 0);
    /* A real cancel after them is counted, and it alone. */
    park_and_cancel_get(s, 1);
    usleep((useconds_t)TU_MS(100) * 1000);
    assert_int_equal(momento_local_cancelled_calls(s, NULL), 1);
    assert_int_equal(momento_local_rpc_count(s, "Get", GRPC_STATUS_CANCELLED), 3);
    char *json = momento_local_stats_json(s);
    assert_non_null(strstr(json, "\"Get\": {\"total\": 3, \"CANCELLED\": 3, "
                                 "\"cancelled_by_client\": 1}"));
    free(json);
    momento_local_stop(s);
}

/* Calls the server answered are not counted when their clients cancel
 * afterwards or go away: a unary call, a delayed one (which watches for
 * its client in a batch of its own) and a stream (likewise). */
static void test_answered_then_gone_not_counted(void **state)
{
    (void)state;
    momento_local *s = tu_server_with_cache("c");
    tu_raw_conn k;
    tu_raw_conn_open(&k, momento_local_endpoint(s));
    const char *plain[] = {"cache", "c"};
    const char *delayed[] = {"cache", "c", "delay-ms", "50"};
    uint8_t get_body[] = {0x0a, 0x01, 'k'};
    /* GetBatchRequest{items: [GetRequest{cache_key: "k"}]}: one message,
     * which is all tu_open_call_start() reads. */
    uint8_t batch_body[] = {0x0a, 0x03, 0x0a, 0x01, 'k'};
    tu_open_call calls[3];
    tu_open_call_start(&k, &calls[0], SCS "Get", plain, 1, get_body, sizeof(get_body), 0);
    tu_open_call_start(&k, &calls[1], SCS "Get", delayed, 2, get_body, sizeof(get_body), 0);
    tu_open_call_start(&k, &calls[2], SCS "GetBatch", plain, 1, batch_body, sizeof(batch_body), 0);
    for (int i = 0; i < 3; i++) {
        tu_open_call *oc = tu_raw_conn_next(&k, TU_MS(5000));
        assert_non_null(oc);
        assert_int_equal(oc->status, GRPC_STATUS_OK);
        /* Cancelling a call that has its status changes nothing. */
        grpc_call_cancel(oc->call, NULL);
    }
    assert_int_equal(momento_local_rpc_count(s, "Get", GRPC_STATUS_OK), 2);
    assert_int_equal(momento_local_rpc_count(s, "GetBatch", GRPC_STATUS_OK), 1);
    for (int i = 0; i < 3; i++)
        tu_open_call_close(&calls[i]);
    tu_raw_conn_close(&k); /* the client goes away */
    usleep((useconds_t)TU_MS(100) * 1000);
    assert_int_equal(momento_local_cancelled_calls(s, NULL), 0);
    park_and_cancel_get(s, 1);
    usleep((useconds_t)TU_MS(100) * 1000);
    assert_int_equal(momento_local_cancelled_calls(s, NULL), 1);
    assert_int_equal(momento_local_cancelled_calls(s, "GetBatch"), 0);
    momento_local_stop(s);
}

/* A stream its client cancels before the server has sent it all is
 * counted, though it was never parked: the server is answering it (and
 * counted it OK when it began), but its status never went out. The client
 * reads one message and no more, and its receive window does not grow, so
 * the reply (8 MiB) stalls in the server until the cancel. */
static void test_stream_cancelled_midway(void **state)
{
    (void)state;
    momento_local *s = tu_server_with_cache("c");
    const char *ep = momento_local_endpoint(s);
    enum { ITEMS = 32, VALUE = 256 * 1024 };
    char *val = malloc(VALUE);
    memset(val, 'v', VALUE);
    CacheClient__SetRequest sr = CACHE_CLIENT____SET_REQUEST__INIT;
    sr.cache_key = (ProtobufCBinaryData){1, (uint8_t *)"k"};
    sr.cache_body = (ProtobufCBinaryData){VALUE, (uint8_t *)val};
    sr.ttl_milliseconds = 600000;
    size_t len = protobuf_c_message_get_packed_size(&sr.base);
    uint8_t *buf = malloc(len);
    protobuf_c_message_pack(&sr.base, buf);
    tu_raw_reply r;
    assert_int_equal(tu_raw_call(ep, SCS "Set", cache_hdr, 1, buf, len, &r), 0);
    tu_raw_reply_free(&r);
    free(buf);
    free(val);

    static CacheClient__GetRequest gets[ITEMS];
    static CacheClient__GetRequest *gptrs[ITEMS];
    for (int i = 0; i < ITEMS; i++) {
        cache_client____get_request__init(&gets[i]);
        gets[i].cache_key = sr.cache_key;
        gptrs[i] = &gets[i];
    }
    CacheClient__GetBatchRequest gb = CACHE_CLIENT____GET_BATCH_REQUEST__INIT;
    gb.n_items = ITEMS;
    gb.items = gptrs;
    uint8_t body[ITEMS * 8];
    len = protobuf_c_message_pack(&gb.base, body);

    tu_raw_conn k;
    tu_raw_conn_open_bdp(&k, ep, 0);
    tu_open_call oc;
    tu_open_call_start(&k, &oc, SCS "GetBatch", cache_hdr, 1, body, len, 0);
    /* The server counts a call when it begins the reply. */
    tu_wait_until(momento_local_rpc_count(s, "GetBatch", -1) > 0, 5000);
    assert_int_equal(momento_local_rpc_count(s, "GetBatch", GRPC_STATUS_OK), 1);
    /* Whether or not it has stalled yet, its status cannot have gone out. */
    assert_null(tu_raw_conn_next(&k, TU_MS(200)));
    assert_int_equal(momento_local_cancelled_calls(s, NULL), 0);
    grpc_call_cancel(oc.call, NULL);
    assert_ptr_equal(tu_raw_conn_next(&k, TU_MS(5000)), &oc);
    assert_int_equal(oc.status, GRPC_STATUS_CANCELLED);
    assert_int_equal(wait_cancelled(s, "GetBatch", 1, 5000), 1);
    assert_int_equal(momento_local_cancelled_calls(s, NULL), 1);
    /* Counted once in the RPC counts too, under the status it began with. */
    assert_int_equal(momento_local_rpc_count(s, "GetBatch", -1), 1);
    tu_open_call_close(&oc);
    tu_raw_conn_close(&k);
    /* Still serving. */
    assert_int_equal(tu_raw_call(ep, SCS "Get", cache_hdr, 1, (uint8_t[]){0x0a, 0x01, 'k'}, 3, &r),
                     0);
    tu_raw_reply_free(&r);
    momento_local_stop(s);
}

/* A unary call cancelled before the server answered it, never parked: its
 * client sends the headers and then cancels instead of sending the
 * request, so the server cannot have answered first (it takes a call once
 * its message is in, or its stream has ended). It learns of the cancel
 * from its reply's batch. */
static void test_unanswered_call_cancel_counted(void **state)
{
    (void)state;
    momento_local *s = tu_server_with_cache("c");
    tu_raw_conn k;
    tu_raw_conn_open(&k, momento_local_endpoint(s));
    tu_open_call oc;
    memset(&oc, 0, sizeof(oc));
    grpc_slice method = grpc_slice_from_static_string(SCS "Get");
    oc.call = grpc_channel_create_call(k.ch, NULL, GRPC_PROPAGATE_DEFAULTS, k.cq, method, NULL,
                                       gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL);
    oc.n_md = 1;
    oc.md[0].key = grpc_slice_from_static_string("cache");
    oc.md[0].value = grpc_slice_from_static_string("c");
    grpc_metadata_array_init(&oc.init_md);
    grpc_metadata_array_init(&oc.trailing);
    /* The headers in a batch of their own, waited for: once gRPC reports
     * them sent, the stream is on the wire, and the cancel that follows
     * reaches the server as the end of a call it has begun to receive. (A
     * fixed wait for that let a loaded machine cancel first: then nothing
     * reached the server at all.) */
    grpc_op ops[3];
    memset(ops, 0, sizeof(ops));
    ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
    ops[0].data.send_initial_metadata.count = 1;
    ops[0].data.send_initial_metadata.metadata = oc.md;
    static char sent_tag;
    assert_int_equal(grpc_call_start_batch(oc.call, ops, 1, &sent_tag, NULL), GRPC_CALL_OK);
    grpc_event ev = grpc_completion_queue_next(
        k.cq, gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC), gpr_time_from_millis(TU_MS(30000), GPR_TIMESPAN)),
        NULL);
    assert_int_equal(ev.type, GRPC_OP_COMPLETE);
    assert_ptr_equal(ev.tag, &sent_tag);
    assert_true(ev.success);
    memset(ops, 0, sizeof(ops));
    ops[0].op = GRPC_OP_RECV_INITIAL_METADATA;
    ops[0].data.recv_initial_metadata.recv_initial_metadata = &oc.init_md;
    ops[1].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
    ops[1].data.recv_status_on_client.trailing_metadata = &oc.trailing;
    ops[1].data.recv_status_on_client.status = &oc.status;
    ops[1].data.recv_status_on_client.status_details = &oc.details;
    assert_int_equal(grpc_call_start_batch(oc.call, ops, 2, &oc, NULL), GRPC_CALL_OK);
    /* Nothing to answer yet: the server takes a call once its message is
     * in, or its stream has ended. */
    assert_null(tu_raw_conn_next(&k, 0));
    assert_int_equal(momento_local_rpc_count(s, NULL, -1), 0);
    grpc_call_cancel(oc.call, NULL);
    assert_ptr_equal(tu_raw_conn_next(&k, TU_MS(5000)), &oc);
    assert_int_equal(oc.status, GRPC_STATUS_CANCELLED);
    assert_int_equal(wait_cancelled(s, "Get", 1, 5000), 1);
    usleep((useconds_t)TU_MS(100) * 1000);
    assert_int_equal(momento_local_cancelled_calls(s, NULL), 1);
    assert_int_equal(momento_local_rpc_count(s, "Get", -1), 1);
    assert_int_equal(momento_local_parked_calls(s), 0);
    oc.n_md = 0; /* static slices */
    grpc_metadata_array_destroy(&oc.init_md);
    grpc_metadata_array_destroy(&oc.trailing);
    grpc_slice_unref(oc.details);
    grpc_call_unref(oc.call);
    tu_raw_conn_close(&k);
    momento_local_stop(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_get_set_delete),
        cmocka_unit_test(test_set_if_all_conditions),
        cmocka_unit_test(test_set_if_not_exists),
        cmocka_unit_test(test_increment),
        cmocka_unit_test(test_keys_exist),
        cmocka_unit_test(test_ttl_ops),
        cmocka_unit_test(test_batches),
        cmocka_unit_test(test_batch_streams_of_every_size),
        cmocka_unit_test(test_hand_packed_responses),
        cmocka_unit_test(test_control_and_ping),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_malformed_protobuf),
        cmocka_unit_test(test_fault_injection),
        cmocka_unit_test(test_delay_does_not_block_others),
        cmocka_unit_test(test_auth),
        cmocka_unit_test(test_list_pages),
        cmocka_unit_test(test_rate_limit),
        cmocka_unit_test(test_options_and_lru),
        cmocka_unit_test(test_long_cache_header),
        cmocka_unit_test(test_duplicate_start_caches),
        cmocka_unit_test(test_parked_calls_leave_at_deadline),
        cmocka_unit_test(test_cancelled_parked_call_leaves),
        cmocka_unit_test(test_unauthenticated_ping_has_no_faults),
        cmocka_unit_test(test_token_service_faults_need_the_token),
        cmocka_unit_test(test_disposable_token_faults_ignored),
        cmocka_unit_test(test_scope_checked_before_delay),
        cmocka_unit_test(test_delay_never_ends_before_deadline),
        cmocka_unit_test(test_stop_with_parked_calls),
        cmocka_unit_test(test_call_handed_over_after_the_queue_is_shut),
        cmocka_unit_test(test_stop_just_after_clients_left),
        cmocka_unit_test(test_stream_limit_per_connection),
        cmocka_unit_test(test_parked_call_cancel_counted),
        cmocka_unit_test(test_injected_cancelled_not_counted),
        cmocka_unit_test(test_answered_then_gone_not_counted),
        cmocka_unit_test(test_stream_cancelled_midway),
        cmocka_unit_test(test_unanswered_call_cancel_counted),
    };
    return cmocka_run_group_tests(tests, tu_fixture_setup_server, tu_fixture_teardown);
}
