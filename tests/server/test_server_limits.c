/* momento-local at its limits: TTL updates to 0, cache names that are not
 * names, stored values that are almost integers, a flood of fault-injection
 * sessions, and --max-memory under items larger than it and under a fill far
 * past it (a separate momento-local process, its RSS read from /proc). */
#include "core/srv_faults.h"
#include "core/srv_reply.h"
#include "core/srv_server.h"
#include "model/errors.h"
#include "rpc/srv_rpc.h"
#include "srv_rng.h"
#include "srv_test.h"
#include "testutil.h"
#include "tu_raw_conn.h"
#include "tu_srv.h"

#include "cacheclient.pb-c.h"
#include "cachepubsub.pb-c.h"
#include "controlclient.pb-c.h"

#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/time.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Built with AddressSanitizer, the server's allocator is ASan's (freed
 * memory held in quarantine), so its RSS says nothing about the store. */
#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#ifndef UNDER_ASAN
#define UNDER_ASAN 0
#endif

#define SCS "/cache_client.Scs/"
#define CTL "/control_client.ScsControl/"

enum { ST_OK = 0, ST_INVALID_ARGUMENT = 3, ST_NOT_FOUND = 5, ST_RESOURCE_EXHAUSTED = 8,
       ST_FAILED_PRECONDITION = 9 };

static const char *cache_hdr[] = {"cache", "c"};

/* A server with cache "c" and the given --max-memory (0 = none). */
static momento_local *server_with(uint64_t max_memory)
{
    momento_local_options *o = tu_options("c");
    momento_local_options_set_max_memory(o, max_memory);
    return tu_start(o);
}

static int set_bytes(const char *ep, const char *key, const void *val, size_t len, uint64_t ttl,
                     tu_raw_reply *out)
{
    CacheClient__SetRequest req = CACHE_CLIENT____SET_REQUEST__INIT;
    req.cache_key = (ProtobufCBinaryData){strlen(key), (uint8_t *)key};
    req.cache_body = (ProtobufCBinaryData){len, (uint8_t *)val};
    req.ttl_milliseconds = ttl;
    return tu_raw_call_msg(ep, SCS "Set", cache_hdr, 1, &req.base, out);
}

/* 1 hit (value length to *len if given), 0 miss, or -status. */
static int get_len(const char *ep, const char *key, size_t *len)
{
    CacheClient__GetRequest req = CACHE_CLIENT____GET_REQUEST__INIT;
    req.cache_key = (ProtobufCBinaryData){strlen(key), (uint8_t *)key};
    tu_raw_reply r;
    int st = tu_raw_call_msg(ep, SCS "Get", cache_hdr, 1, &req.base, &r);
    int ret = -st;
    if (st == 0) {
        CacheClient__GetResponse *resp =
            cache_client____get_response__unpack(NULL, r.lens[0], r.msgs[0]);
        assert_non_null(resp);
        ret = resp->result == CACHE_CLIENT__ECACHE_RESULT__Hit;
        if (ret && len)
            *len = resp->cache_body.len;
        protobuf_c_message_free_unpacked(&resp->base, NULL);
    }
    tu_raw_reply_free(&r);
    return ret;
}

/* Remaining ms (UINT64_MAX: never expires), or 0 when missing. */
static uint64_t item_ttl(const char *ep, const char *key)
{
    uint64_t ms = 0;
    return srv_item_ttl(ep, key, &ms) ? ms : 0;
}

/* ------------------------------------------------------------------ */
/* a. UpdateTtl to 0 is refused in every mode, on a present or missing item,
 * and the item keeps the TTL it had. */
static void test_update_ttl_zero(void **state)
{
    (void)state;
    momento_local *s = server_with(0);
    const char *ep = momento_local_endpoint(s);
    assert_int_equal(set_bytes(ep, "t", "v", 1, 60000, NULL), 0);
    static const int modes[] = {
        CACHE_CLIENT____UPDATE_TTL_REQUEST__UPDATE_TTL_INCREASE_TO_MILLISECONDS,
        CACHE_CLIENT____UPDATE_TTL_REQUEST__UPDATE_TTL_DECREASE_TO_MILLISECONDS,
        CACHE_CLIENT____UPDATE_TTL_REQUEST__UPDATE_TTL_OVERWRITE_TO_MILLISECONDS,
    };
    for (size_t i = 0; i < 3; i++) {
        for (int missing = 0; missing < 2; missing++) {
            const char *key = missing ? "no-such-key" : "t";
            CacheClient__UpdateTtlRequest req = CACHE_CLIENT____UPDATE_TTL_REQUEST__INIT;
            req.cache_key = (ProtobufCBinaryData){strlen(key), (uint8_t *)key};
            req.update_ttl_case = (CacheClient__UpdateTtlRequest__UpdateTtlCase)modes[i];
            tu_raw_reply r;
            int st = tu_raw_call_msg(ep, SCS "UpdateTtl", cache_hdr, 1, &req.base, &r);
            if (st != ST_INVALID_ARGUMENT)
                fail_msg("UpdateTtl mode %d to 0 on a %s item: status %d (%s), want 3",
                         modes[i], missing ? "missing" : "present", st, r.details);
            assert_int_equal(r.n_msgs, 0);
            tu_raw_reply_free(&r);
        }
        uint64_t left = item_ttl(ep, "t");
        if (left == 0 || left > 60000)
            fail_msg("after mode %d to 0 the item has %" PRIu64 " ms left, want <= 60000",
                     modes[i], left);
    }
    /* 1 ms is a TTL like any other. */
    CacheClient__UpdateTtlRequest req = CACHE_CLIENT____UPDATE_TTL_REQUEST__INIT;
    req.cache_key = (ProtobufCBinaryData){1, (uint8_t *)"t"};
    req.update_ttl_case = CACHE_CLIENT____UPDATE_TTL_REQUEST__UPDATE_TTL_DECREASE_TO_MILLISECONDS;
    req.decrease_to_milliseconds = 1;
    assert_int_equal(tu_raw_call_msg(ep, SCS "UpdateTtl", cache_hdr, 1, &req.base, NULL), 0);
    usleep(20 * 1000);
    assert_int_equal(get_len(ep, "t", NULL), 0);
    momento_local_stop(s);
}

/* ------------------------------------------------------------------ */
/* b. Cache names: 1..255 bytes of valid UTF-8 without control characters,
 * for CreateCache, DeleteCache, FlushCache, the `cache` header of data calls
 * and the caches named at start. */

/* A CreateCache/DeleteCache/FlushCache body: field 1, the name's raw bytes
 * (which may hold a NUL, unlike a C string). */
static size_t name_body(uint8_t *buf, const char *name, size_t len)
{
    buf[0] = 0x0a;
    buf[1] = (uint8_t)(0x80 | (len & 0x7f));
    buf[2] = (uint8_t)(len >> 7);
    memcpy(buf + 3, name, len);
    return len + 3;
}

static int control_raw(const char *ep, const char *rpc, const char *name, size_t len,
                       tu_raw_reply *out)
{
    uint8_t buf[600];
    assert_true(len < 512);
    char path[64];
    snprintf(path, sizeof(path), CTL "%s", rpc);
    return tu_raw_call(ep, path, NULL, 0, buf, name_body(buf, name, len), out);
}

static const struct {
    const char *bytes;
    size_t len;
    const char *what;
} bad_names[] = {
    {"ab\0cd", 5, "an embedded NUL"},
    {"\0", 1, "only a NUL"},
    {"a\x01z", 3, "a C0 control"},
    {"tab\there", 8, "a tab"},
    {"line\n", 5, "a newline"},
    {"del\x7f", 4, "DEL"},
    {"c1\xc2\x85", 4, "a C1 control (U+0085)"},
    {"\xff", 1, "a byte that is never UTF-8"},
    {"trunc\xe2\x82", 7, "a truncated sequence"},
    {"\xc0\xaf", 2, "an overlong form"},
    {"\xed\xa0\x80", 3, "a surrogate"},
    {"\xf4\x90\x80\x80", 4, "a code point past U+10FFFF"},
    {"\x80x", 2, "a lone continuation byte"},
};
#define N_BAD_NAMES (sizeof(bad_names) / sizeof(bad_names[0]))

static void list_names(const char *ep, char *out, size_t cap)
{
    ControlClient__ListCachesRequest req = CONTROL_CLIENT____LIST_CACHES_REQUEST__INIT;
    req.next_token = "";
    tu_raw_reply r;
    assert_int_equal(tu_raw_call_msg(ep, CTL "ListCaches", NULL, 0, &req.base, &r), 0);
    ControlClient__ListCachesResponse *resp =
        control_client____list_caches_response__unpack(NULL, r.lens[0], r.msgs[0]);
    assert_non_null(resp);
    out[0] = '\0';
    for (size_t i = 0; i < resp->n_cache; i++) {
        strncat(out, resp->cache[i]->cache_name, cap - strlen(out) - 2);
        strcat(out, "|");
    }
    protobuf_c_message_free_unpacked(&resp->base, NULL);
    tu_raw_reply_free(&r);
}

static void test_cache_names_control(void **state)
{
    (void)state;
    momento_local *s = server_with(0);
    const char *ep = momento_local_endpoint(s);
    static const char *const rpcs[] = {"CreateCache", "DeleteCache", "FlushCache"};
    /* "ab" exists, so a name that protobuf-c would cut at its NUL must not
     * reach it either. */
    tu_raw_reply r;
    assert_int_equal(control_raw(ep, "CreateCache", "ab", 2, &r), 0);
    tu_raw_reply_free(&r);
    for (size_t i = 0; i < N_BAD_NAMES; i++) {
        for (size_t k = 0; k < 3; k++) {
            int st = control_raw(ep, rpcs[k], bad_names[i].bytes, bad_names[i].len, &r);
            if (st != ST_INVALID_ARGUMENT)
                fail_msg("%s of a name with %s: status %d (%s), want 3", rpcs[k],
                         bad_names[i].what, st, r.details);
            tu_raw_reply_free(&r);
        }
    }
    char name[300];
    memset(name, 'n', sizeof(name));
    assert_int_equal(control_raw(ep, "CreateCache", name, 256, &r), ST_INVALID_ARGUMENT);
    tu_raw_reply_free(&r);
    assert_int_equal(control_raw(ep, "CreateCache", name, 255, &r), 0);
    tu_raw_reply_free(&r);
    /* Names that are fine: printable ASCII with spaces, and UTF-8 past ASCII. */
    static const char *const good[] = {"with space", "caf\xc3\xa9", "\xe2\x82\xac-\xf0\x9f\x98\x80"};
    for (size_t i = 0; i < 3; i++) {
        int st = control_raw(ep, "CreateCache", good[i], strlen(good[i]), &r);
        if (st != 0)
            fail_msg("CreateCache '%s': status %d (%s), want 0", good[i], st, r.details);
        tu_raw_reply_free(&r);
    }
    char names[1024];
    list_names(ep, names, sizeof(names));
    /* c, ab, the 255-byte name and the three good ones: nothing else. */
    size_t bars = 0;
    for (const char *p = names; *p; p++)
        bars += *p == '|';
    if (bars != 6)
        fail_msg("ListCaches has %zu caches (%s), want 6", bars, names);
    assert_int_equal(control_raw(ep, "FlushCache", "ab", 2, &r), 0); /* still there */
    tu_raw_reply_free(&r);

    /* The library decodes the listing. */
    momento_client *c = tu_client(s, NULL);
    momento_result *res;
    assert_int_equal(momento_list_caches_sync(c, NULL, &res), MOMENTO_OK);
    assert_int_equal(momento_result_error(res), MOMENTO_OK);
    momento_result_free(res);
    momento_client_free(c);
    momento_local_stop(s);
}

/* The `cache` header: gRPC core will not send a control character or a
 * non-ASCII byte in a header value, but other clients' stacks may, so the
 * dispatcher is called directly with the bytes such a header carries. */
static void test_cache_names_header(void **state)
{
    (void)state;
    momento_local *s = tu_bare_server("ab", 5u << 20);
    CacheClient__GetRequest get = CACHE_CLIENT____GET_REQUEST__INIT;
    get.cache_key = (ProtobufCBinaryData){1, (uint8_t *)"k"};
    uint8_t body[16];
    size_t len = protobuf_c_message_pack(&get.base, body);
    for (size_t i = 0; i < N_BAD_NAMES; i++) {
        srv_reply r = {0};
        srv_dispatch(s, MOMENTO__RPC_GET, bad_names[i].bytes, bad_names[i].len, body, len, &r);
        if (r.status != GRPC_STATUS_INVALID_ARGUMENT)
            fail_msg("a cache header with %s: status %d (%s), want 3", bad_names[i].what,
                     r.status, r.details);
        srv_reply_clear(&r);
    }
    srv_reply r = {0};
    srv_dispatch(s, MOMENTO__RPC_GET, "ab", 2, body, len, &r);
    assert_int_equal(r.status, GRPC_STATUS_OK);
    srv_reply_clear(&r);
    srv_dispatch(s, MOMENTO__RPC_GET, "caf\xc3\xa9", 5, body, len, &r);
    assert_int_equal(r.status, GRPC_STATUS_NOT_FOUND); /* a name, just not a cache */
    srv_reply_clear(&r);
    tu_bare_server_free(s);
}

static void test_cache_names_options(void **state)
{
    (void)state;
    momento_local_options *o;
    momento_local_options_new(&o);
    static const char *const bad[] = {"a\x01z", "tab\there", "del\x7f", "c1\xc2\x85", "\xff",
                                      "\xc0\xaf", "\xed\xa0\x80", ""};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (momento_local_options_add_cache(o, bad[i]) != MOMENTO_ERR_INVALID_ARGUMENT)
            fail_msg("momento_local_options_add_cache accepted bad name %zu", i);
    assert_int_equal(momento_local_options_add_cache(o, "caf\xc3\xa9"), MOMENTO_OK);
    momento_local_options_free(o);
}

/* ------------------------------------------------------------------ */
/* c. Increment reads only an optional '-' and decimal digits. */
static int increment(const char *ep, const char *key, int64_t amount, int64_t *value)
{
    CacheClient__IncrementRequest req = CACHE_CLIENT____INCREMENT_REQUEST__INIT;
    req.cache_key = (ProtobufCBinaryData){strlen(key), (uint8_t *)key};
    req.amount = amount;
    int st;
    CacheClient__IncrementResponse *resp =
        srv_call(ep, SCS "Increment", cache_hdr, 1, &req.base,
                 &cache_client____increment_response__descriptor, &st);
    if (resp) {
        *value = resp->value;
        protobuf_c_message_free_unpacked(&resp->base, NULL);
    }
    return st;
}

static void test_increment_strict(void **state)
{
    (void)state;
    momento_local *s = server_with(0);
    const char *ep = momento_local_endpoint(s);
    static const struct {
        const char *bytes;
        size_t len;
    } bad[] = {
        {"\t5", 2}, {"\n5", 2}, {"\v5", 2}, {"\f5", 2}, {"\r5", 2}, {" 5", 2}, {"5 ", 2},
        {"5\n", 2}, {"5\0junk", 6}, {"5\0", 2}, {"\0", 1}, {"+5", 2}, {"-", 1}, {"--5", 3},
        {"-+5", 3}, {"0x10", 4}, {"1e3", 3}, {"5.0", 3}, {"\xd9\xa5", 2} /* Arabic-Indic 5 */,
        {"9223372036854775808", 19}, {"-9223372036854775809", 20},
        {"99999999999999999999", 20},
    };
    int64_t v = 0;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(set_bytes(ep, "n", bad[i].bytes, bad[i].len, 60000, NULL), 0);
        int st = increment(ep, "n", 1, &v);
        if (st != ST_FAILED_PRECONDITION)
            fail_msg("Increment of stored value %zu (%zu bytes): status %d (value %" PRId64
                     "), want 9",
                     i, bad[i].len, st, v);
        size_t len = 0;
        assert_int_equal(get_len(ep, "n", &len), 1); /* left as it was */
        assert_int_equal(len, bad[i].len);
    }
    static const struct {
        const char *text;
        int64_t amount, want;
    } good[] = {
        {"5", 1, 6}, {"-5", 1, -4}, {"0", 0, 0}, {"-0", 2, 2}, {"007", 1, 8},
        {"9223372036854775806", 1, INT64_MAX}, {"-9223372036854775808", 1, INT64_MIN + 1},
    };
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        assert_int_equal(set_bytes(ep, "n", good[i].text, strlen(good[i].text), 60000, NULL), 0);
        int st = increment(ep, "n", good[i].amount, &v);
        if (st != 0 || v != good[i].want)
            fail_msg("Increment of '%s' by %" PRId64 ": status %d value %" PRId64
                     ", want %" PRId64,
                     good[i].text, good[i].amount, st, v, good[i].want);
    }
    momento_local_stop(s);
}

/* ------------------------------------------------------------------ */
/* d. A flood of request-ids evicts the least recently used sessions, not
 * every session: a test that keeps using its id keeps its budget. */

/* One call's plan under request-id `id` with an error budget of 2. */
static int plan_error(fault_session **sessions, const char *id)
{
    grpc_metadata md[4];
    const char *kv[] = {"request-id", id, "return-error", "unavailable", "error-count", "2",
                        "error-rpcs", "get"};
    for (size_t i = 0; i < 4; i++) {
        md[i].key = grpc_slice_from_static_string(kv[2 * i]);
        md[i].value = grpc_slice_from_copied_string(kv[2 * i + 1]);
    }
    grpc_metadata_array arr = {.count = 4, .capacity = 4, .metadata = md};
    fault_plan plan;
    faults_plan(sessions, &arr, &momento__rpcs[MOMENTO__RPC_GET], &plan);
    for (size_t i = 0; i < 4; i++)
        grpc_slice_unref(md[i].value);
    assert_null(plan.bad_header);
    return plan.error_status;
}

static void test_fault_session_flood(void **state)
{
    (void)state;
    grpc_init();
    fault_session *sessions = NULL;
    /* "kept" and "idle" spend one of their two errors. */
    assert_int_equal(plan_error(&sessions, "kept"), GRPC_STATUS_UNAVAILABLE);
    assert_int_equal(plan_error(&sessions, "idle"), GRPC_STATUS_UNAVAILABLE);
    /* 150,000 other ids, "kept" used (its second error) in the middle and
     * then only looked at through calls its budget no longer covers. */
    char id[32];
    for (int i = 0; i < 150000; i++) {
        snprintf(id, sizeof(id), "flood-%d", i);
        assert_int_equal(plan_error(&sessions, id), GRPC_STATUS_UNAVAILABLE);
        if (i == 1000)
            assert_int_equal(plan_error(&sessions, "kept"), GRPC_STATUS_UNAVAILABLE);
        if (i > 1000 && i % 5000 == 0 && plan_error(&sessions, "kept") != -1)
            fail_msg("after %d other ids the session 'kept' got a third error: its count was "
                     "reset",
                     i);
    }
    /* The idle session was the least recently used: evicted, so it starts
     * over (the documented cost of a bounded table). */
    assert_int_equal(plan_error(&sessions, "idle"), GRPC_STATUS_UNAVAILABLE);
    assert_int_equal(plan_error(&sessions, "idle"), GRPC_STATUS_UNAVAILABLE);
    assert_int_equal(plan_error(&sessions, "idle"), -1);
    assert_int_equal(plan_error(&sessions, "kept"), -1);
    faults_clear(&sessions);
    assert_null(sessions);
    grpc_shutdown();
}

/* ------------------------------------------------------------------ */
/* e. --max-memory. */

/* An item that could never fit is refused with Momento's item-size answer,
 * and refusing it loses nothing: not an older value of its key, not the rest
 * of the store, and a batch holding it stores none of its items. */
static void test_item_larger_than_memory(void **state)
{
    (void)state;
    const uint64_t limit = 1u << 20;
    momento_local *s = server_with(limit);
    const char *ep = momento_local_endpoint(s);
    size_t big_len = 2u << 20;
    char *big = malloc(big_len);
    memset(big, 'b', big_len);
    assert_int_equal(set_bytes(ep, "k", "old", 3, 0, NULL), 0);
    assert_int_equal(set_bytes(ep, "other", "x", 1, 0, NULL), 0);
    tu_raw_reply r;
    int st = set_bytes(ep, "k", big, big_len, 0, &r);
    if (st != ST_RESOURCE_EXHAUSTED || strcmp(r.err, "item_size_limit_exceeded") != 0)
        fail_msg("a 2 MiB item under --max-memory 1 MiB: status %d err '%s' (%s), want 8 "
                 "item_size_limit_exceeded",
                 st, r.err, r.details);
    assert_int_equal(r.n_msgs, 0);
    tu_raw_reply_free(&r);
    size_t len = 0;
    assert_int_equal(get_len(ep, "k", &len), 1);
    assert_int_equal(len, 3);
    assert_int_equal(get_len(ep, "other", NULL), 1);

    /* Just under the limit's worth of value, with the overhead counted, does
     * not fit either; well under it does, evicting the rest. */
    st = set_bytes(ep, "k", big, limit, 0, &r);
    assert_int_equal(st, ST_RESOURCE_EXHAUSTED);
    assert_string_equal(r.err, "item_size_limit_exceeded");
    tu_raw_reply_free(&r);
    assert_int_equal(get_len(ep, "k", &len), 1);
    assert_int_equal(len, 3);
    assert_int_equal(set_bytes(ep, "fits", big, limit - 64 * 1024, 0, NULL), 0);
    assert_int_equal(get_len(ep, "fits", &len), 1);
    assert_int_equal(len, limit - 64 * 1024);

    /* SetIf and SetIfNotExists answer the same. */
    CacheClient__SetIfNotExistsRequest sine = CACHE_CLIENT____SET_IF_NOT_EXISTS_REQUEST__INIT;
    sine.cache_key = (ProtobufCBinaryData){3, (uint8_t *)"new"};
    sine.cache_body = (ProtobufCBinaryData){big_len, (uint8_t *)big};
    assert_int_equal(tu_raw_call_msg(ep, SCS "SetIfNotExists", cache_hdr, 1, &sine.base, &r),
                     ST_RESOURCE_EXHAUSTED);
    assert_string_equal(r.err, "item_size_limit_exceeded");
    tu_raw_reply_free(&r);

    /* A batch with one such item stores nothing. */
    CacheClient__SetRequest items[2] = {CACHE_CLIENT____SET_REQUEST__INIT,
                                        CACHE_CLIENT____SET_REQUEST__INIT};
    items[0].cache_key = (ProtobufCBinaryData){6, (uint8_t *)"batch0"};
    items[0].cache_body = (ProtobufCBinaryData){1, (uint8_t *)"v"};
    items[1].cache_key = (ProtobufCBinaryData){6, (uint8_t *)"batch1"};
    items[1].cache_body = (ProtobufCBinaryData){big_len, (uint8_t *)big};
    CacheClient__SetRequest *ptrs[2] = {&items[0], &items[1]};
    CacheClient__SetBatchRequest batch = CACHE_CLIENT____SET_BATCH_REQUEST__INIT;
    batch.n_items = 2;
    batch.items = ptrs;
    assert_int_equal(tu_raw_call_msg(ep, SCS "SetBatch", cache_hdr, 1, &batch.base, &r),
                     ST_RESOURCE_EXHAUSTED);
    assert_string_equal(r.err, "item_size_limit_exceeded");
    assert_int_equal(r.n_msgs, 0);
    tu_raw_reply_free(&r);
    assert_int_equal(get_len(ep, "batch0", NULL), 0);
    free(big);
    momento_local_stop(s);
}

/* A refusal with RESOURCE_EXHAUSTED and the `err` cause Momento sends,
 * whose message alone leads an SDK that does not read the trailer (the
 * Node.js SDK decides before it has it) to the same limit. */
static void expect_cause(int st, const tu_raw_reply *r, const char *cause)
{
    if (st != ST_RESOURCE_EXHAUSTED || strcmp(r->err, cause) != 0)
        fail_msg("status %d err '%s' (%s), want 8 %s", st, r->err, r->details, cause);
    assert_int_equal(r->n_msgs, 0);
    momento_limit_kind by_cause = momento__limit_kind(cause, NULL);
    assert_int_not_equal(by_cause, MOMENTO_LIMIT_UNKNOWN);
    if (momento__limit_kind(NULL, r->details) != by_cause)
        fail_msg("message \"%s\" does not say %s", r->details, momento_limit_kind_text(by_cause));
}

/* Every `err` cause momento-local sends, with the request that draws it:
 * a request over the request limit (the Node.js SDK's large-message test:
 * a Set of a 5,300,000-byte value) is request_size_limit_exceeded before
 * anything in it is read; an item over the item limit in a request within
 * it is item_size_limit_exceeded; a collection element over 128 KiB is
 * element_size_limit_exceeded; a call past --max-rps is
 * operations_rate_limit_exceeded. */
static void test_err_causes(void **state)
{
    (void)state;
    momento_local *s = server_with(0);
    const char *ep = momento_local_endpoint(s);
    const size_t item_limit = 5u << 20;
    size_t big_len = 6u << 20;
    char *big = malloc(big_len);
    memset(big, 'r', big_len);
    tu_raw_reply r;

    /* The SDK's test. */
    expect_cause(set_bytes(ep, "k", big, 5300000, 0, &r), &r, "request_size_limit_exceeded");
    tu_raw_reply_free(&r);
    assert_int_equal(get_len(ep, "k", NULL), 0);
    /* Before the cache is looked at: the same for an unknown cache. */
    CacheClient__SetRequest sr = CACHE_CLIENT____SET_REQUEST__INIT;
    sr.cache_key = (ProtobufCBinaryData){1, (uint8_t *)"k"};
    sr.cache_body = (ProtobufCBinaryData){5300000, (uint8_t *)big};
    const char *nope[] = {"cache", "nope"};
    expect_cause(tu_raw_call_msg(ep, SCS "Set", nope, 1, &sr.base, &r), &r,
                 "request_size_limit_exceeded");
    tu_raw_reply_free(&r);
    /* An item one byte over the item limit still fits a request: the item
     * is what is refused. At the limit it is stored. */
    expect_cause(set_bytes(ep, "k", big, item_limit, 0, &r), &r, "item_size_limit_exceeded");
    tu_raw_reply_free(&r);
    assert_int_equal(set_bytes(ep, "k", big, item_limit - 1, 0, NULL), ST_OK);
    size_t len = 0;
    assert_int_equal(get_len(ep, "k", &len), 1);
    assert_int_equal(len, item_limit - 1);
    /* Two items that each fit, in one request that does not: nothing of
     * the batch is stored. */
    CacheClient__SetRequest items[2] = {CACHE_CLIENT____SET_REQUEST__INIT,
                                        CACHE_CLIENT____SET_REQUEST__INIT};
    items[0].cache_key = (ProtobufCBinaryData){2, (uint8_t *)"b0"};
    items[0].cache_body = (ProtobufCBinaryData){3u << 20, (uint8_t *)big};
    items[1].cache_key = (ProtobufCBinaryData){2, (uint8_t *)"b1"};
    items[1].cache_body = (ProtobufCBinaryData){3u << 20, (uint8_t *)big};
    CacheClient__SetRequest *ptrs[2] = {&items[0], &items[1]};
    CacheClient__SetBatchRequest batch = CACHE_CLIENT____SET_BATCH_REQUEST__INIT;
    batch.n_items = 2;
    batch.items = ptrs;
    expect_cause(tu_raw_call_msg(ep, SCS "SetBatch", cache_hdr, 1, &batch.base, &r), &r,
                 "request_size_limit_exceeded");
    tu_raw_reply_free(&r);
    assert_int_equal(get_len(ep, "b0", NULL), 0);
    /* Just under the request limit passes it. */
    batch.n_items = 1;
    assert_int_equal(tu_raw_call_msg(ep, SCS "SetBatch", cache_hdr, 1, &batch.base, NULL), ST_OK);
    assert_int_equal(get_len(ep, "b0", NULL), 1);

    /* An element over 128 KiB. */
    CacheClient__DictionaryFieldValuePair pair = CACHE_CLIENT____DICTIONARY_FIELD_VALUE_PAIR__INIT;
    pair.field = (ProtobufCBinaryData){1, (uint8_t *)"f"};
    pair.value = (ProtobufCBinaryData){200u << 10, (uint8_t *)big};
    CacheClient__DictionaryFieldValuePair *pairs[1] = {&pair};
    CacheClient__DictionarySetRequest ds = CACHE_CLIENT____DICTIONARY_SET_REQUEST__INIT;
    ds.dictionary_name = (ProtobufCBinaryData){1, (uint8_t *)"d"};
    ds.items = pairs;
    ds.n_items = 1;
    expect_cause(tu_raw_call_msg(ep, SCS "DictionarySet", cache_hdr, 1, &ds.base, &r), &r,
                 "element_size_limit_exceeded");
    tu_raw_reply_free(&r);
    free(big);
    momento_local_stop(s);

    /* The rate limit: of a few calls in one second, one is refused. */
    momento_local_options *o = tu_options("c");
    momento_local_options_set_max_rps(o, 1);
    s = tu_start(o);
    ep = momento_local_endpoint(s);
    int st = ST_OK;
    for (int i = 0; i < 5 && st == ST_OK; i++) {
        st = set_bytes(ep, "k", "v", 1, 0, &r);
        if (st != ST_OK)
            expect_cause(st, &r, "operations_rate_limit_exceeded");
        tu_raw_reply_free(&r);
    }
    assert_int_equal(st, ST_RESOURCE_EXHAUSTED);
    momento_local_stop(s);
}

/* The momento-local binary: $MOMENTO_LOCAL_BIN, else ../server/momento-local
 * beside this test in the build tree. */
static void local_bin(char *out, size_t cap)
{
    const char *env = getenv("MOMENTO_LOCAL_BIN");
    if (env && *env) {
        snprintf(out, cap, "%s", env);
        return;
    }
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    assert_true(n > 0);
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    assert_non_null(slash);
    *slash = '\0';
    snprintf(out, cap, "%s/../server/momento-local", self);
    if (access(out, X_OK) != 0)
        fail_msg("no momento-local at %s (set MOMENTO_LOCAL_BIN)", out);
}

typedef struct child {
    pid_t pid;
    int out;  /* its stdout */
    int err;  /* its stderr */
} child;

/* The child still running, for teardown to stop when a test fails first. */
static pid_t running;

static child spawn(char *const *argv)
{
    int o[2], e[2];
    assert_int_equal(pipe(o), 0);
    assert_int_equal(pipe(e), 0);
    child ch = {fork(), o[0], e[0]};
    assert_true(ch.pid >= 0);
    if (ch.pid == 0) {
        dup2(o[1], 1);
        dup2(e[1], 2);
        close(o[0]);
        close(e[0]);
        close(o[1]);
        close(e[1]);
        execv(argv[0], argv);
        _exit(127);
    }
    close(o[1]);
    close(e[1]);
    running = ch.pid;
    return ch;
}

/* Reads from `fd` into buf until `want` appears, EOF or `ms` pass. */
static bool read_until(int fd, char *buf, size_t cap, const char *want, int ms)
{
    size_t n = 0;
    buf[0] = '\0';
    int64_t end = tu_now_ms() + ms;
    while (n + 1 < cap && !strstr(buf, want)) {
        int64_t left = end - tu_now_ms();
        if (left <= 0)
            return false;
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, (int)left) <= 0)
            continue;
        ssize_t k = read(fd, buf + n, cap - 1 - n);
        if (k <= 0)
            return strstr(buf, want) != NULL;
        n += (size_t)k;
        buf[n] = '\0';
    }
    return strstr(buf, want) != NULL;
}

/* Exit status of `pid` within `ms` (scaled), or -1 (then it is killed). */
static int wait_exit(pid_t pid, int ms)
{
    int status;
    running = 0;
    pid_t w = 0;
    tu_wait_until((w = waitpid(pid, &status, WNOHANG)) == pid, ms);
    if (w == pid)
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return -1;
}

static int stop_child(void **state)
{
    (void)state;
    if (running > 0) {
        kill(running, SIGKILL);
        waitpid(running, NULL, 0);
        running = 0;
    }
    return 0;
}

/* ---- batch requests read in place ------------------------------------ */

/* A random batch request, packed by protobuf-c: keys from a small set (so
 * batches repeat keys and gets hit), now and then empty or too big, TTLs
 * that do not expire during the test. Returns its length. */
static size_t random_batch(bool set, uint8_t *out, size_t cap)
{
    enum { MAX = 6 };
    static char keys[MAX][8], vals[MAX][80];
    CacheClient__SetRequest sets[MAX];
    CacheClient__GetRequest gets[MAX];
    void *ptrs[MAX];
    size_t n = (size_t)(tu_rng() % (MAX + 1));
    static const uint64_t ttls[] = {0, 60000, UINT64_MAX, 1u << 31};
    for (size_t i = 0; i < n; i++) {
        size_t klen = tu_rng() % 16 == 0 ? 0 : 1 + tu_rng() % 3;
        for (size_t k = 0; k < klen; k++)
            keys[i][k] = (char)('a' + tu_rng() % 3);
        size_t vlen = tu_rng() % 8 == 0 ? 70 : tu_rng() % 20;
        memset(vals[i], (int)('A' + tu_rng() % 26), vlen);
        ProtobufCBinaryData key = {klen, (uint8_t *)keys[i]};
        if (set) {
            cache_client____set_request__init(&sets[i]);
            sets[i].cache_key = key;
            sets[i].cache_body = (ProtobufCBinaryData){vlen, (uint8_t *)vals[i]};
            sets[i].ttl_milliseconds = ttls[tu_rng() % 4];
            ptrs[i] = &sets[i];
        } else {
            cache_client____get_request__init(&gets[i]);
            gets[i].cache_key = key;
            ptrs[i] = &gets[i];
        }
    }
    CacheClient__SetBatchRequest sb = CACHE_CLIENT____SET_BATCH_REQUEST__INIT;
    CacheClient__GetBatchRequest gb = CACHE_CLIENT____GET_BATCH_REQUEST__INIT;
    sb.n_items = gb.n_items = n;
    sb.items = (CacheClient__SetRequest **)ptrs;
    gb.items = (CacheClient__GetRequest **)ptrs;
    const ProtobufCMessage *m = set ? &sb.base : &gb.base;
    assert_true(protobuf_c_message_get_packed_size(m) <= cap);
    return protobuf_c_message_pack(m, out);
}

/* Damages a request the ways a broken or hostile client might: a byte
 * changed, cut short, a byte inserted, random bytes appended, a known or
 * unknown field appended. Returns the new length (at most `cap`). */
static size_t mutate(uint8_t *b, size_t len, size_t cap)
{
    switch (tu_rng() % 7) {
    case 0: /* left alone */
        return len;
    case 1:
        if (len)
            b[tu_rng() % len] = (uint8_t)tu_rng();
        return len;
    case 2:
        return len ? (size_t)(tu_rng() % len) : 0;
    case 3: {
        if (len + 1 > cap)
            return len;
        size_t at = len ? (size_t)(tu_rng() % (len + 1)) : 0;
        memmove(b + at + 1, b + at, len - at);
        b[at] = (uint8_t)tu_rng();
        return len + 1;
    }
    case 4: {
        size_t extra = 1 + tu_rng() % 6;
        if (len + extra > cap)
            return len;
        for (size_t i = 0; i < extra; i++)
            b[len + i] = (uint8_t)tu_rng();
        return len + extra;
    }
    case 5: { /* an item holding unknown fields and a second key */
        static const uint8_t item[] = {0x0a, 0x0c, 0x0a, 0x01, 'b', 0x20, 0x05, 0x2d, 1, 2, 3, 4,
                                       0x0a, 0x01};
        if (len + sizeof(item) + 1 > cap)
            return len;
        memcpy(b + len, item, sizeof(item));
        b[len + sizeof(item)] = 'c';
        return len + sizeof(item) + 1;
    }
    default: { /* a top-level unknown field: fixed64, then a varint */
        static const uint8_t unk[] = {0x11, 1, 2, 3, 4, 5, 6, 7, 8, 0x18, 0x96, 0x01};
        if (len + sizeof(unk) > cap)
            return len;
        memcpy(b + len, unk, sizeof(unk));
        return len + sizeof(unk);
    }
    }
}

/* Both stores hold the same items: every key random_batch() can make.
 * (Their byte counts may differ: an item counts the block malloc gave
 * it.) */
static void assert_same_items(momento_local *x, momento_local *y)
{
    assert_int_equal(x->store.items, y->store.items);
    store_cache *cx = store_find_cache(&x->store, "c", 1), *cy = store_find_cache(&y->store, "c", 1);
    int64_t now = store_now_ms();
    for (int k = 0; k < 3 + 9 + 27; k++) {
        char key[3];
        size_t len = k < 3 ? 1 : k < 12 ? 2 : 3;
        int v = k < 3 ? k : k < 12 ? k - 3 : k - 12;
        for (size_t i = 0; i < len; i++, v /= 3)
            key[i] = (char)('a' + v % 3);
        const store_item *a = store_get(&x->store, cx, (const uint8_t *)key, len, now);
        const store_item *b = store_get(&y->store, cy, (const uint8_t *)key, len, now);
        assert_true((a == NULL) == (b == NULL));
        if (a) {
            assert_int_equal(a->value_len, b->value_len);
            assert_memory_equal(a->value, b->value, a->value_len);
            assert_true(a->expires_ms == 0 ? b->expires_ms == 0 : b->expires_ms != 0);
        }
    }
}

/* GetBatch and SetBatch read their requests' wire bytes in place, without
 * protobuf-c (rpc_batch.c). Thousands of random batches, many of them
 * damaged, go to two stores: one through the dispatcher (in place), one
 * unpacked by protobuf-c and given to the table's handlers. The replies
 * (status, message, trailer, every response byte) and the stores must
 * come out the same: the same bytes accepted and refused, the same first
 * bad item reported, nothing stored from a refused batch. */
static void test_batches_read_in_place(void **state)
{
    (void)state;
    /* Items of at most 64 bytes, so that some items are refused. */
    momento_local *in_place = tu_bare_server("c", 64), *unpacked = tu_bare_server("c", 64);
    uint8_t body[1024];
    size_t refused = 0, undecodable = 0;
    for (int round = 0; round < 20000; round++) {
        bool set = tu_rng() % 2;
        size_t len = random_batch(set, body, sizeof(body) - 64);
        len = mutate(body, len, sizeof(body));
        srv_reply a = {0}, b = {0};
        if (!tu_batch_both_paths(in_place, unpacked, set, body, len, &a, &b))
            undecodable++;
        if (b.status != GRPC_STATUS_OK)
            refused++;
        tu_assert_same_reply(&a, &b);
        assert_same_items(in_place, unpacked);
        srv_reply_clear(&a);
        srv_reply_clear(&b);
    }
    /* The mix reached every outcome. */
    assert_true(undecodable > 1000);
    assert_true(refused > undecodable + 1000);
    assert_true(unpacked->store.items > 0);
    tu_bare_server_free(in_place);
    tu_bare_server_free(unpacked);
}


/* `--cache` names at start follow the same rule, with a message naming the
 * option and the reason. */
static void test_cli_bad_cache_name(void **state)
{
    (void)state;
    char bin[PATH_MAX + 32];
    local_bin(bin, sizeof(bin));
    static const char *const bad[] = {"a\x01z", "\xff\xfe", "tab\there"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char *argv[] = {bin, "--port", "0", "--cache", (char *)bad[i], NULL};
        child ch = spawn(argv);
        char err[1024];
        read_until(ch.err, err, sizeof(err), "\n", (int)TU_MS(5000));
        int rc = wait_exit(ch.pid, 5000);
        close(ch.out);
        close(ch.err);
        if (rc != 2)
            fail_msg("--cache with bad name %zu: exit %d, want 2 (stderr: %s)", i, rc, err);
        assert_non_null(strstr(err, "--cache"));
        assert_non_null(strstr(err, "UTF-8"));
    }
}

static uint64_t proc_kib(pid_t pid, const char *field)
{
    char path[64], line[256];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    uint64_t v = 0;
    size_t n = strlen(field);
    while (fgets(line, sizeof(line), f))
        if (strncmp(line, field, n) == 0 && line[n] == ':')
            v = strtoull(line + n + 1, NULL, 10);
    fclose(f);
    return v;
}

/* Starts the binary with `args` (NULL-terminated, after the program name)
 * and reads its endpoint into `ep`. */
static child start_binary(const char *const *args, char *ep, size_t cap)
{
    char bin[PATH_MAX + 32];
    local_bin(bin, sizeof(bin));
    char *argv[32];
    size_t n = 0;
    argv[n++] = bin;
    for (size_t i = 0; args[i] && n < 31; i++)
        argv[n++] = (char *)args[i];
    argv[n] = NULL;
    child ch = spawn(argv);
    char out[256];
    if (!read_until(ch.out, out, sizeof(out), "\n", (int)TU_MS(10000)))
        fail_msg("momento-local did not start: '%s'", out);
    const char *at = strstr(out, "listening on ");
    assert_non_null(at);
    snprintf(ep, cap, "%.*s", (int)strcspn(at + 13, "\r\n"), at + 13);
    return ch;
}

static void stop_binary(child *ch)
{
    kill(ch->pid, SIGTERM);
    int rc = wait_exit(ch->pid, 10000);
    close(ch->out);
    close(ch->err);
    assert_int_equal(rc, 0);
}

static momento_client *client_at(const char *ep)
{
    momento_credentials *creds;
    assert_int_equal(momento_credentials_local(&creds, ep), MOMENTO_OK);
    momento_config *cfg = tu_config();
    momento_config_set_timeout_ms(cfg, (uint32_t)TU_MS(30000));
    momento_client *c;
    assert_int_equal(momento_client_new(&c, cfg, creds), MOMENTO_OK);
    momento_config_free(cfg);
    momento_credentials_free(creds);
    return c;
}

/* The RSS tests' first line: under ASan, RSS would measure ASan's
 * allocator, so they skip. */
static void skip_rss_under_asan(void)
{
    if (UNDER_ASAN) {
        print_message("skipped: under AddressSanitizer RSS measures ASan's allocator\n");
        skip();
    }
}

/* The subject of an RSS test (skipped under ASan: skip_rss_under_asan()):
 * a momento-local of its own with cache "c" and --max-memory `limit`, in
 * *ret_child, and a client of it. */
static momento_client *start_rss_subject(uint64_t limit, child *ret_child)
{
    skip_rss_under_asan();
    char lim[32], ep[64];
    snprintf(lim, sizeof(lim), "%" PRIu64, limit);
    const char *args[] = {"--port", "0", "--cache", "c", "--max-memory", lim, NULL};
    *ret_child = start_binary(args, ep, sizeof(ep));
    return client_at(ep);
}

/* A separate momento-local with --max-memory 64 MiB is sent items of mixed
 * sizes, 100 B to 4 MiB, four times its limit and with overwrites; its
 * resident memory stays within 1.25 x the limit plus what it used empty. */
static void test_fill_stays_within_memory(void **state)
{
    (void)state;
    const uint64_t limit = 64u << 20;
    child ch;
    momento_client *c = start_rss_subject(limit, &ch);

    size_t max_len = 4u << 20;
    char *val = malloc(max_len);
    for (size_t i = 0; i < max_len; i++)
        val[i] = (char)('a' + i % 23);
    /* Empty, but with the connection and one small item: the baseline. */
    assert_int_equal(momento_set_sync(c, "c", "warm", 4, "v", 1, 0, NULL, NULL), MOMENTO_OK);
    uint64_t base_kib = proc_kib(ch.pid, "VmRSS");

    uint64_t x = 88172645463325252ull, written = 0;
    unsigned n = 0, refused = 0;
    char key[32];
    while (written < 4 * limit && n < 100000) {
        uint64_t r = srv_xorshift(&x);
        size_t len;
        switch (r % 20) {
        case 0: case 1: /* 10%: 512 KiB .. 4 MiB */
            len = (512u << 10) + (size_t)(srv_xorshift(&x) % ((4u << 20) - (512u << 10)));
            break;
        case 2: case 3: case 4: /* 15%: 64 .. 512 KiB */
            len = (64u << 10) + (size_t)(srv_xorshift(&x) % (448u << 10));
            break;
        case 5: case 6: case 7: case 8: case 9: /* 25%: 1 .. 64 KiB */
            len = 1024 + (size_t)(srv_xorshift(&x) % (63u << 10));
            break;
        default: /* 50%: 100 B .. 1 KiB */
            len = 100 + (size_t)(srv_xorshift(&x) % 924);
        }
        /* One set in five overwrites a recent key. */
        unsigned id = (r >> 8) % 5 == 0 && n > 50 ? n - 1 - (unsigned)((r >> 16) % 50) : n;
        snprintf(key, sizeof(key), "fill-%u", id);
        int rc = momento_set_sync(c, "c", key, strlen(key), val, len, 0, NULL, NULL);
        if (rc != MOMENTO_OK)
            refused++;
        written += len;
        n++;
    }
    assert_int_equal(refused, 0);
    /* The newest item is there; the oldest was evicted. */
    momento_result *res;
    snprintf(key, sizeof(key), "fill-%u", n - 1);
    tu_expect(momento_get_sync(c, "c", key, strlen(key), NULL, &res), res, MOMENTO_OUTCOME_HIT);
    tu_expect(momento_get_sync(c, "c", "fill-0", 6, NULL, &res), res, MOMENTO_OUTCOME_MISS);

    uint64_t rss_kib = proc_kib(ch.pid, "VmRSS"), hwm_kib = proc_kib(ch.pid, "VmHWM");
    uint64_t bound_kib = limit / 1024 * 5 / 4 + base_kib;
    print_message("fill: %u sets, %" PRIu64 " MiB written into a %" PRIu64
                  " MiB limit; RSS empty %" PRIu64 " KiB, after %" PRIu64 " KiB (peak %" PRIu64
                  " KiB), bound %" PRIu64 " KiB\n",
                  n, written >> 20, limit >> 20, base_kib, rss_kib, hwm_kib, bound_kib);
    momento_client_free(c);
    free(val);
    stop_binary(&ch);
    if (rss_kib > bound_kib)
        fail_msg("RSS %" PRIu64 " KiB exceeds 1.25 x --max-memory + the empty server's RSS "
                 "(%" PRIu64 " KiB)",
                 rss_kib, bound_kib);
}

/* ---- topics' memory, in a momento-local of its own ------------------- */

/* The RSS of `pid` once it is within `bound_kib`, waiting up to 3 s for
 * the server's periodic heap trim (once a second) to give back what it
 * freed; else the last reading. */
static uint64_t rss_within(pid_t pid, uint64_t bound_kib)
{
    uint64_t rss;
    tu_wait_until((rss = proc_kib(pid, "VmRSS")) <= bound_kib, 3000);
    return rss;
}

/* Topics count against --max-memory: a separate momento-local with a
 * 16 MiB limit gets 20,000 publishes of 1 KiB to as many topics, then
 * 4096 publishes of 16 KiB to each of four topics (64 MiB of resume
 * buffer each, by the buffer's own limits). Every publish is accepted
 * (old topics and buffers give way) and the process's RSS stays within
 * 1.25 x the limit plus its RSS when empty, as for items; then 20
 * publishes with 1 MiB topic names are refused. Before topics were
 * counted its RSS went from 14 to 333 MB and the names were taken. */
static void test_topics_stay_within_memory(void **state)
{
    (void)state;
    const uint64_t limit = 16u << 20;
    child ch;
    momento_client *c = start_rss_subject(limit, &ch);
    static char val[16u << 10];
    memset(val, 'v', sizeof(val));
    momento_result *res = NULL;
    assert_int_equal(momento_topic_publish_sync(c, "c", "warm", val, 100, NULL, &res), MOMENTO_OK);
    momento_result_free(res);
    uint64_t base_kib = proc_kib(ch.pid, "VmRSS");

    unsigned refused = 0, n = 0;
    char topic[64];
    for (unsigned i = 0; i < 20000; i++, n++) {
        snprintf(topic, sizeof(topic), "distinct-%u", i);
        if (momento_topic_publish_sync(c, "c", topic, val, 1024, NULL, &res) != MOMENTO_OK)
            refused++;
        momento_result_free(res);
    }
    for (unsigned i = 0; i < 4 * 4096; i++, n++) {
        snprintf(topic, sizeof(topic), "deep-%u", i % 4);
        if (momento_topic_publish_sync(c, "c", topic, val, sizeof(val), NULL, &res) != MOMENTO_OK)
            refused++;
        momento_result_free(res);
    }
    uint64_t bound_kib = limit / 1024 * 5 / 4 + base_kib;
    uint64_t rss_kib = rss_within(ch.pid, bound_kib), hwm_kib = proc_kib(ch.pid, "VmHWM");
    /* After the reading: a refused request's memory is the request's
     * while it is in flight, not the topics'. */
    size_t name_len = 1u << 20;
    char *name = malloc(name_len + 1);
    memset(name, 'n', name_len);
    name[name_len] = '\0';
    unsigned names_refused = 0;
    for (unsigned i = 0; i < 20; i++) {
        name[0] = (char)('a' + i);
        int rc = momento_topic_publish_sync(c, "c", name, "x", 1, NULL, &res);
        if (rc == MOMENTO_ERR_INVALID_ARGUMENT)
            names_refused++;
        momento_result_free(res);
    }
    free(name);
    print_message("topics: %u publishes (%u refused), 20 long names (%u refused) into a %" PRIu64
                  " MiB limit; RSS empty %" PRIu64 " KiB, after %" PRIu64 " KiB (peak %" PRIu64
                  " KiB), bound %" PRIu64 " KiB\n",
                  n, refused, names_refused, limit >> 20, base_kib, rss_kib, hwm_kib, bound_kib);
    momento_client_free(c);
    stop_binary(&ch);
    assert_int_equal(refused, 0);
    assert_int_equal(names_refused, 20);
    if (rss_kib > bound_kib)
        fail_msg("RSS %" PRIu64 " KiB exceeds 1.25 x --max-memory + the empty server's RSS "
                 "(%" PRIu64 " KiB)",
                 rss_kib, bound_kib);
}

/* A Subscribe stream that is never read: its HTTP/2 window (64 KiB, the
 * channel's lookahead, no BDP probing) closes once the server has sent
 * that much, and nothing the server queues for it can leave. */
typedef struct stuck_stream {
    grpc_call *call;
    grpc_metadata_array trailing;
    grpc_status_code status;
    grpc_slice details;
} stuck_stream;

static void open_stuck(grpc_channel *ch, grpc_completion_queue *cq, stuck_stream *x,
                       const char *topic)
{
    memset(x, 0, sizeof(*x));
    x->call = grpc_channel_create_call(ch, NULL, GRPC_PROPAGATE_DEFAULTS, cq,
                                       grpc_slice_from_static_string(
                                           "/cache_client.pubsub.Pubsub/Subscribe"),
                                       NULL, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
    grpc_metadata_array_init(&x->trailing);
    x->details = grpc_empty_slice();
    CacheClient__Pubsub__SubscriptionRequest req =
        CACHE_CLIENT__PUBSUB____SUBSCRIPTION_REQUEST__INIT;
    req.cache_name = "c";
    req.topic = (char *)topic;
    grpc_byte_buffer *send = srv_msg_buffer(&req.base);
    grpc_op ops[4];
    memset(ops, 0, sizeof(ops));
    tu_request_ops(ops, NULL, 0, send);
    ops[3].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
    ops[3].data.recv_status_on_client.trailing_metadata = &x->trailing;
    ops[3].data.recv_status_on_client.status = &x->status;
    ops[3].data.recv_status_on_client.status_details = &x->details;
    /* One batch, one completion: when the call ends. */
    assert_int_equal(grpc_call_start_batch(x->call, ops, 4, x, NULL), GRPC_CALL_OK);
    grpc_byte_buffer_destroy(send);
}

/* Subscribers that never read cannot make the server hold more than
 * --max-queued-bytes for them: 200 such streams on one topic, then 8192
 * publishes of 16 bytes, and the RSS of a separate momento-local with a
 * 4 MiB bound grows by less than 16 MiB (queues, gRPC's buffers and
 * allocator slack together; 3 MB measured). Before the bound it grew by
 * 66 MB, 330 KB a stream, most of it each stream's 8192-slot ring. */
static void test_stuck_subscribers_stay_bounded(void **state)
{
    (void)state;
    skip_rss_under_asan();
    enum { STREAMS = 200, PUBLISHES = 8192 };
    char ep[64];
    const char *args[] = {"--port", "0", "--cache", "c", "--heartbeat-ms", "3600000",
                          "--max-queued-bytes", "4194304", NULL};
    child ch = start_binary(args, ep, sizeof(ep));
    grpc_init();
    grpc_channel_credentials *creds = grpc_insecure_credentials_create();
    grpc_arg cargs[] = {
        {GRPC_ARG_INTEGER, (char *)GRPC_ARG_HTTP2_BDP_PROBE, {.integer = 0}},
        {GRPC_ARG_INTEGER, (char *)GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, {.integer = 65536}},
    };
    grpc_channel_args ch_args = {2, cargs};
    grpc_channel *chan = grpc_channel_create(ep, creds, &ch_args);
    grpc_channel_credentials_release(creds);
    grpc_completion_queue *cq = grpc_completion_queue_create_for_next(NULL);
    /* The last stream reads its first message: gRPC hands the server one
     * connection's calls in the order they came, and the server
     * subscribes each as it gets it, so once that stream has its
     * heartbeat every stream before it is subscribed. */
    static stuck_stream xs[STREAMS + 1];
    for (int i = 0; i <= STREAMS; i++)
        open_stuck(chan, cq, &xs[i], "t");
    grpc_metadata_array init_md;
    grpc_metadata_array_init(&init_md);
    grpc_byte_buffer *first = NULL;
    grpc_op rd[2];
    memset(rd, 0, sizeof(rd));
    rd[0].op = GRPC_OP_RECV_INITIAL_METADATA;
    rd[0].data.recv_initial_metadata.recv_initial_metadata = &init_md;
    rd[1].op = GRPC_OP_RECV_MESSAGE;
    rd[1].data.recv_message.recv_message = &first;
    assert_int_equal(grpc_call_start_batch(xs[STREAMS].call, rd, 2, &first, NULL), GRPC_CALL_OK);
    grpc_event ev = grpc_completion_queue_next(cq, gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
                                                                gpr_time_from_millis(TU_MS(10000),
                                                                                     GPR_TIMESPAN)),
                                               NULL);
    assert_int_equal(ev.type, GRPC_OP_COMPLETE);
    assert_ptr_equal(ev.tag, &first);
    assert_non_null(first);
    grpc_byte_buffer_destroy(first);
    grpc_metadata_array_destroy(&init_md);
    momento_client *c = client_at(ep);
    momento_result *res = NULL;
    uint64_t base_kib = proc_kib(ch.pid, "VmRSS");
    static const char val[16] = "0123456789abcdef";
    unsigned refused = 0;
    for (int i = 0; i < PUBLISHES; i++) {
        if (momento_topic_publish_sync(c, "c", "t", val, sizeof(val), NULL, &res) != MOMENTO_OK)
            refused++;
        momento_result_free(res);
    }
    const uint64_t bound_kib = base_kib + 16 * 1024;
    uint64_t rss_kib = rss_within(ch.pid, bound_kib);
    print_message("stuck subscribers: %d streams, %d publishes (%u refused); RSS before %" PRIu64
                  " KiB, after %" PRIu64 " KiB (+%" PRId64 " KiB), bound %" PRIu64 " KiB\n",
                  STREAMS, PUBLISHES, refused, base_kib, rss_kib,
                  (int64_t)rss_kib - (int64_t)base_kib, bound_kib);
    momento_client_free(c);
    for (int i = 0; i <= STREAMS; i++)
        grpc_call_cancel(xs[i].call, NULL);
    for (int done = 0; done <= STREAMS;) {
        ev = grpc_completion_queue_next(cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
        assert_int_equal(ev.type, GRPC_OP_COMPLETE);
        done++;
    }
    for (int i = 0; i <= STREAMS; i++) {
        grpc_metadata_array_destroy(&xs[i].trailing);
        grpc_slice_unref(xs[i].details);
        grpc_call_unref(xs[i].call);
    }
    grpc_channel_destroy(chan);
    grpc_completion_queue_shutdown(cq);
    while (grpc_completion_queue_next(cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type !=
           GRPC_QUEUE_SHUTDOWN)
        ;
    grpc_completion_queue_destroy(cq);
    grpc_shutdown();
    stop_binary(&ch);
    assert_int_equal(refused, 0);
    if (rss_kib > bound_kib)
        fail_msg("RSS grew by %" PRIu64 " KiB under 200 streams that never read, past 16 MiB",
                 rss_kib - base_kib);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_update_ttl_zero),
        cmocka_unit_test(test_cache_names_control),
        cmocka_unit_test(test_cache_names_header),
        cmocka_unit_test(test_cache_names_options),
        cmocka_unit_test(test_increment_strict),
        cmocka_unit_test(test_fault_session_flood),
        cmocka_unit_test(test_item_larger_than_memory),
        cmocka_unit_test(test_err_causes),
        cmocka_unit_test(test_batches_read_in_place),
        cmocka_unit_test_teardown(test_cli_bad_cache_name, stop_child),
        cmocka_unit_test_teardown(test_fill_stays_within_memory, stop_child),
        cmocka_unit_test_teardown(test_topics_stay_within_memory, stop_child),
        cmocka_unit_test_teardown(test_stuck_subscribers_stay_bounded, stop_child),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
