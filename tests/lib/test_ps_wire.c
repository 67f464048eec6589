/* The protosocket codec (common/ps_wire.c): the worked examples of
 * ../shared/PROTOSOCKET.md byte for byte, both directions checked against
 * protobuf-c's code for the same messages (proto/pscache.proto), frames
 * split and merged, and malformed input refused without reading past it. */
#include "ps_wire.h"
#include "pscache.pb-c.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define B(s) ((ps_bytes){(const uint8_t *)(s), sizeof(s) - 1})

static size_t unhex(const char *hex, uint8_t *out)
{
    size_t n = 0;
    unsigned v;
    while (*hex) {
        if (*hex == ' ') {
            hex++;
            continue;
        }
        assert_int_equal(sscanf(hex, "%2x", &v), 1);
        out[n++] = (uint8_t)v;
        hex += 2;
    }
    return n;
}

static void check_command_bytes(const ps_command *c, const char *hex)
{
    uint8_t want[256], got[256];
    size_t n = unhex(hex, want);
    assert_int_equal(ps_command_frame_size(c), n);
    assert_int_equal(ps_command_encode(c, got), n);
    assert_memory_equal(got, want, n);
}

static void check_response_bytes(const ps_response *r, const char *hex)
{
    uint8_t want[256], got[256];
    size_t n = unhex(hex, want);
    assert_int_equal(ps_response_frame_size(r), n);
    assert_int_equal(ps_response_encode(r, got), n);
    assert_memory_equal(got, want, n);
}

static void test_worked_examples(void **state)
{
    (void)state;
    check_command_bytes(&(ps_command){.id = 1, .kind = PS_GET, .ns = B("c"), .key = B("k")},
                        "0c 10 01 52 08 12 06 0a 01 63 12 01 6b");
    check_command_bytes(&(ps_command){.id = 2,
                                      .kind = PS_SET,
                                      .ns = B("c"),
                                      .key = B("k"),
                                      .value = B("v"),
                                      .ttl_ms = 60000},
                        "13 10 02 52 0f 1a 0d 0a 01 63 12 01 6b 1a 01 76 20 e0 d4 03");
    check_command_bytes(&(ps_command){.id = 2, .kind = PS_DELETE, .ns = B("c"), .key = B("k")},
                        "0c 10 02 52 08 22 06 0a 01 63 12 01 6b");
    check_command_bytes(&(ps_command){.id = 1, .control = PS_CONTROL_CANCEL}, "04 10 01 18 01");
    check_response_bytes(&(ps_response){.id = 1, .kind = PS_AUTH}, "04 08 01 52 00");
    check_response_bytes(&(ps_response){.id = 1, .kind = PS_GET, .value = B("v")},
                         "07 08 01 5a 03 0a 01 76");
    check_response_bytes(&(ps_response){.id = 2, .kind = PS_SET}, "04 08 02 62 00");
    check_response_bytes(&(ps_response){.id = 2, .kind = PS_DELETE}, "04 08 02 6a 00");
    check_response_bytes(
        &(ps_response){.id = 1, .kind = PS_ERROR, .code = 5, .message = B("Key not found")},
        "15 08 01 4a 11 08 05 12 0d 4b 65 79 20 6e 6f 74 20 66 6f 75 6e 64");
}

/* Ours encodes, protobuf-c decodes the same fields; and back. */
static void test_commands_match_protobuf_c(void **state)
{
    (void)state;
    static uint8_t big[70000];
    for (size_t i = 0; i < sizeof(big); i++)
        big[i] = (uint8_t)(i * 7);
    ps_command cases[] = {
        {.id = PS_AUTH_ID, .kind = PS_AUTH, .token = B("a token")},
        {.id = 0, .kind = PS_GET, .ns = B("cache"), .key = B("")},
        {.id = UINT64_MAX, .kind = PS_SET, .ns = B("c"), .key = B("k\0z"), .value = {big, sizeof(big)},
         .ttl_ms = UINT64_MAX},
        {.id = 300, .kind = PS_DELETE, .ns = B("c"), .key = B("\xff")},
        {.id = 7, .control = PS_CONTROL_CANCEL},
    };
    static uint8_t buf[80000];
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const ps_command *c = &cases[i];
        size_t n = ps_command_encode(c, buf);
        assert_int_equal(n, ps_command_frame_size(c));
        size_t off, len;
        assert_int_equal(ps_frame_next(buf, n, PS_MAX_FRAME, &off, &len), 1);
        assert_int_equal(off + len, n);
        Pscache__Command *m = pscache__command__unpack(NULL, len, buf + off);
        assert_non_null(m);
        assert_true(m->message_id == c->id);
        assert_int_equal(m->control_code, c->control);
        if (c->kind == PS_NONE) {
            assert_int_equal(m->rpc_kind_case, PSCACHE__COMMAND__RPC_KIND__NOT_SET);
        } else {
            assert_int_equal(m->rpc_kind_case, PSCACHE__COMMAND__RPC_KIND_UNARY);
            Pscache__UnaryCommand *u = m->unary;
            switch (c->kind) {
            case PS_AUTH:
                assert_int_equal(u->command_case, PSCACHE__UNARY_COMMAND__COMMAND_AUTH);
                assert_string_equal(u->auth->token, "a token");
                break;
            case PS_GET:
            case PS_DELETE: {
                Pscache__KeyCommand *k = c->kind == PS_GET ? u->get : u->delete_;
                assert_non_null(k);
                assert_int_equal(strlen(k->namespace_), c->ns.len);
                assert_int_equal(k->key.len, c->key.len);
                if (c->key.len)
                    assert_memory_equal(k->key.data, c->key.data, c->key.len);
                break;
            }
            case PS_SET:
                assert_int_equal(u->command_case, PSCACHE__UNARY_COMMAND__COMMAND_SET);
                assert_int_equal(u->set->value.len, sizeof(big));
                assert_memory_equal(u->set->value.data, big, sizeof(big));
                assert_int_equal(u->set->key.len, 3);
                assert_true(u->set->ttl_milliseconds == UINT64_MAX);
                break;
            default: fail();
            }
        }
        /* Back through protobuf-c's encoder and our decoder. */
        size_t m_len = pscache__command__get_packed_size(m);
        uint8_t *again = malloc(m_len + 1);
        assert_non_null(again);
        pscache__command__pack(m, again);
        ps_command d;
        assert_int_equal(ps_command_decode(again, m_len, &d), 0);
        assert_true(d.id == c->id);
        assert_int_equal(d.control, c->control);
        assert_int_equal(d.kind, c->kind);
        assert_int_equal(d.key.len, c->key.len);
        assert_int_equal(d.value.len, c->value.len);
        assert_int_equal(d.token.len, c->token.len);
        assert_int_equal(d.ns.len, c->ns.len);
        assert_true(d.ttl_ms == c->ttl_ms);
        if (d.value.len)
            assert_memory_equal(d.value.data, c->value.data, d.value.len);
        free(again);
        pscache__command__free_unpacked(m, NULL);
    }
}

static void test_responses_match_protobuf_c(void **state)
{
    (void)state;
    ps_response cases[] = {
        {.id = PS_AUTH_ID, .kind = PS_AUTH},
        {.id = 1, .kind = PS_GET, .value = B("")}, /* an empty value is a hit */
        {.id = 2, .kind = PS_GET, .value = B("v\0w")},
        {.id = 3, .kind = PS_ERROR, .code = 5, .message = B("Key not found")},
        {.id = 4, .kind = PS_ERROR, .code = 8},
        {.id = 5, .kind = PS_SET},
        {.id = 6, .kind = PS_DELETE},
        {.id = 9, .control = PS_CONTROL_CANCEL},
    };
    uint8_t buf[256];
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const ps_response *r = &cases[i];
        size_t n = ps_response_encode(r, buf), off, len;
        assert_int_equal(ps_frame_next(buf, n, PS_MAX_FRAME, &off, &len), 1);
        Pscache__Response *m = pscache__response__unpack(NULL, len, buf + off);
        assert_non_null(m);
        assert_true(m->message_id == r->id);
        assert_int_equal(m->control_code, r->control);
        static const int cases_of[] = {
            [PS_NONE] = PSCACHE__RESPONSE__KIND__NOT_SET, [PS_AUTH] = PSCACHE__RESPONSE__KIND_AUTH,
            [PS_GET] = PSCACHE__RESPONSE__KIND_GET,       [PS_SET] = PSCACHE__RESPONSE__KIND_SET,
            [PS_DELETE] = PSCACHE__RESPONSE__KIND_DELETE, [PS_ERROR] = PSCACHE__RESPONSE__KIND_ERROR,
        };
        assert_int_equal(m->kind_case, cases_of[r->kind]);
        size_t m_len = pscache__response__get_packed_size(m);
        uint8_t again[256];
        pscache__response__pack(m, again);
        ps_response d;
        assert_int_equal(ps_response_decode(again, m_len, &d), 0);
        assert_true(d.id == r->id);
        assert_int_equal(d.kind, r->kind);
        assert_int_equal(d.code, r->code);
        assert_int_equal(d.message.len, r->message.len);
        assert_int_equal(d.value.len, r->value.len);
        if (d.value.len)
            assert_memory_equal(d.value.data, r->value.data, d.value.len);
        pscache__response__free_unpacked(m, NULL);
    }
}

/* Many frames in one buffer, and one frame arriving a byte at a time. */
static void test_frames_split_and_merged(void **state)
{
    (void)state;
    uint8_t buf[1024];
    size_t n = 0;
    for (uint64_t id = 1; id <= 20; id++)
        n += ps_response_encode(&(ps_response){.id = id, .kind = PS_GET, .value = B("value")},
                                buf + n);
    size_t at = 0, off, len;
    for (uint64_t id = 1; id <= 20; id++) {
        assert_int_equal(ps_frame_next(buf + at, n - at, PS_MAX_FRAME, &off, &len), 1);
        ps_response r;
        assert_int_equal(ps_response_decode(buf + at + off, len, &r), 0);
        assert_true(r.id == id);
        at += off + len;
    }
    assert_int_equal(at, n);
    assert_int_equal(ps_frame_next(buf + at, 0, PS_MAX_FRAME, &off, &len), 0);
    size_t one = ps_response_encode(&(ps_response){.id = 1, .kind = PS_SET}, buf);
    for (size_t k = 0; k < one; k++)
        assert_int_equal(ps_frame_next(buf, k, PS_MAX_FRAME, &off, &len), 0);
    assert_int_equal(ps_frame_next(buf, one, PS_MAX_FRAME, &off, &len), 1);
}

static void test_frame_limits(void **state)
{
    (void)state;
    uint8_t p[12];
    size_t off, len;
    /* Exactly at the limit, prefix included, is a frame; one more is not. */
    size_t k = ps_varint_put(p, PS_MAX_FRAME - 4);
    assert_int_equal(k, 4);
    assert_int_equal(ps_frame_next(p, k, PS_MAX_FRAME, &off, &len), 0); /* body to come */
    k = ps_varint_put(p, PS_MAX_FRAME - 3);
    assert_int_equal(ps_frame_next(p, k, PS_MAX_FRAME, &off, &len), -1);
    /* A prefix of eleven continuation bytes is no varint. */
    memset(p, 0x80, sizeof(p));
    assert_int_equal(ps_frame_next(p, 9, PS_MAX_FRAME, &off, &len), 0);
    assert_int_equal(ps_frame_next(p, 10, PS_MAX_FRAME, &off, &len), -1);
    k = ps_varint_put(p, UINT64_MAX);
    assert_int_equal(ps_frame_next(p, k, PS_MAX_FRAME, &off, &len), -1);
}

static void test_malformed_bodies(void **state)
{
    (void)state;
    ps_command c;
    ps_response r;
    uint8_t b[64];
    /* A length running past the body. */
    size_t n = unhex("52 08 12 06 0a 01 63 12 01", b);
    assert_int_equal(ps_command_decode(b, n, &c), -1);
    /* A known field with the wrong wire type: message_id as bytes. */
    n = unhex("12 01 00", b);
    assert_int_equal(ps_command_decode(b, n, &c), -1);
    n = unhex("0a 01 00", b);
    assert_int_equal(ps_response_decode(b, n, &r), -1);
    /* A cut varint, field 0, a group. */
    assert_int_equal(ps_command_decode((const uint8_t *)"\x10\x80", 2, &c), -1);
    assert_int_equal(ps_command_decode((const uint8_t *)"\x02\x00", 2, &c), -1);
    assert_int_equal(ps_response_decode((const uint8_t *)"\x0b", 1, &r), -1);
    /* Unknown fields are skipped; an unknown kind decodes as PS_NONE. */
    n = unhex("08 07 f8 01 05 7d 01 02 03 04 10 05", b); /* id 7, field 31, fixed32 15, control 5 */
    assert_int_equal(ps_response_decode(b, n, &r), 0);
    assert_true(r.id == 7);
    assert_int_equal(r.control, 5);
    assert_int_equal(r.kind, PS_NONE);
    n = unhex("10 03 52 02 2a 00", b); /* unary of field 5: no command of ours */
    assert_int_equal(ps_command_decode(b, n, &c), 0);
    assert_int_equal(c.kind, PS_NONE);
    /* Empty bodies: id 0, no kind. */
    assert_int_equal(ps_command_decode(b, 0, &c), 0);
    assert_int_equal(c.kind, PS_NONE);
}

/* A oneof member met twice: the second replaces the first whole, as
 * protobuf-c reads it. fuzz_ps_command found an empty second unary after
 * an Authenticate leaving kind NONE with the token still set (a command
 * that re-encoded as another). */
static void test_repeated_oneof_replaces(void **state)
{
    (void)state;
    uint8_t b[64];
    /* unary{auth{token "to\xff\xff_"}}, then unary{} */
    size_t n = unhex("52 09 0a 07 0a 05 74 6f ff ff 5f 52 00", b);
    ps_command c;
    assert_int_equal(ps_command_decode(b, n, &c), 0);
    Pscache__Command *m = pscache__command__unpack(NULL, n, b);
    assert_non_null(m);
    assert_int_equal(m->rpc_kind_case, PSCACHE__COMMAND__RPC_KIND_UNARY);
    assert_int_equal(m->unary->command_case, PSCACHE__UNARY_COMMAND__COMMAND__NOT_SET);
    assert_int_equal(c.kind, PS_NONE);
    assert_int_equal(c.token.len, 0);
    pscache__command__free_unpacked(m, NULL);
    /* unary{get{ns "c"}}, then unary{delete{key "k"}}: the delete alone */
    n = unhex("52 05 12 03 0a 01 63 52 05 22 03 12 01 6b", b);
    assert_int_equal(ps_command_decode(b, n, &c), 0);
    m = pscache__command__unpack(NULL, n, b);
    assert_non_null(m);
    assert_int_equal(m->unary->command_case, PSCACHE__UNARY_COMMAND__COMMAND_DELETE);
    assert_int_equal(c.kind, PS_DELETE);
    assert_int_equal(c.ns.len, strlen(m->unary->delete_->namespace_));
    assert_int_equal(c.key.len, 1);
    pscache__command__free_unpacked(m, NULL);
    /* error{code 5}, then error{message "m"} */
    n = unhex("4a 02 08 05 4a 03 12 01 6d", b);
    ps_response r;
    assert_int_equal(ps_response_decode(b, n, &r), 0);
    Pscache__Response *pr = pscache__response__unpack(NULL, n, b);
    assert_non_null(pr);
    assert_int_equal(r.kind, PS_ERROR);
    assert_int_equal(r.code, pr->error->code);
    assert_int_equal(r.message.len, strlen(pr->error->message));
    pscache__response__free_unpacked(pr, NULL);
}

/* Random bytes, bounded: decoders return 0 or -1 and what they return lies
 * inside the input (ASan/valgrind catch a read past it). */
static void test_random_bytes(void **state)
{
    (void)state;
    srand(12345);
    for (int round = 0; round < 20000; round++) {
        size_t n = (size_t)(rand() % 40);
        uint8_t *b = malloc(n ? n : 1);
        assert_non_null(b);
        for (size_t i = 0; i < n; i++)
            b[i] = (uint8_t)rand();
        ps_command c;
        ps_response r;
        int rc = ps_command_decode(b, n, &c);
        assert_true(rc == 0 || rc == -1);
        if (rc == 0 && c.value.len)
            assert_true(c.value.data >= b && c.value.data + c.value.len <= b + n);
        rc = ps_response_decode(b, n, &r);
        assert_true(rc == 0 || rc == -1);
        if (rc == 0 && r.value.len)
            assert_true(r.value.data >= b && r.value.data + r.value.len <= b + n);
        size_t off, len;
        rc = ps_frame_next(b, n, 64, &off, &len);
        if (rc == 1)
            assert_true(off + len <= n);
        free(b);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_worked_examples),
        cmocka_unit_test(test_commands_match_protobuf_c),
        cmocka_unit_test(test_responses_match_protobuf_c),
        cmocka_unit_test(test_frames_split_and_merged),
        cmocka_unit_test(test_frame_limits),
        cmocka_unit_test(test_malformed_bodies),
        cmocka_unit_test(test_repeated_oneof_replaces),
        cmocka_unit_test(test_random_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
