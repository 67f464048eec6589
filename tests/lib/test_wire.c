/* The hand-written _GetResponse decoder and the well-formedness check
 * against protobuf-c's own encodings: hits, misses, empty and binary values,
 * unknown and repeated fields, and every truncation of a valid message. */
#include "base/wire.h"
#include "ops/decode.h"

#include "cacheclient.pb-c.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <string.h>

static int decode(const uint8_t *buf, size_t len, momento_result *r)
{
    memset(r, 0, sizeof(*r));
    grpc_slice s = grpc_slice_from_static_buffer(buf, len);
    momento__scratch scratch;
    memset(&scratch, 0, sizeof(scratch));
    return momento__decode_get(r, &s, 1, &scratch);
}

static size_t pack_get(uint8_t *out, CacheClient__ECacheResult result, const void *body, size_t n)
{
    CacheClient__GetResponse m = CACHE_CLIENT____GET_RESPONSE__INIT;
    m.result = result;
    m.cache_body.data = (uint8_t *)body;
    m.cache_body.len = n;
    m.message = "a server message";
    return protobuf_c_message_pack(&m.base, out);
}

static void test_matches_protobuf_c(void **state)
{
    (void)state;
    uint8_t buf[512];
    momento_result r;
    const uint8_t binary[] = {0, 0xff, 0, 7};
    size_t n = pack_get(buf, CACHE_CLIENT__ECACHE_RESULT__Hit, binary, sizeof(binary));
    assert_int_equal(decode(buf, n, &r), MOMENTO_OK);
    assert_int_equal(r.outcome, MOMENTO_OUTCOME_HIT);
    assert_int_equal(r.value_len, sizeof(binary));
    assert_memory_equal(r.value, binary, sizeof(binary));
    assert_true(r.value >= buf && r.value < buf + n); /* zero-copy */

    n = pack_get(buf, CACHE_CLIENT__ECACHE_RESULT__Hit, NULL, 0);
    assert_int_equal(decode(buf, n, &r), MOMENTO_OK);
    assert_int_equal(r.outcome, MOMENTO_OUTCOME_HIT);
    assert_int_equal(r.value_len, 0);
    assert_non_null(r.value);

    n = pack_get(buf, CACHE_CLIENT__ECACHE_RESULT__Miss, NULL, 0);
    assert_int_equal(decode(buf, n, &r), MOMENTO_OK);
    assert_int_equal(r.outcome, MOMENTO_OUTCOME_MISS);

    n = pack_get(buf, CACHE_CLIENT__ECACHE_RESULT__Invalid, NULL, 0);
    assert_int_equal(decode(buf, n, &r), MOMENTO_ERR_BAD_RESPONSE);
    assert_int_equal(decode(buf, 0, &r), MOMENTO_ERR_BAD_RESPONSE); /* empty: result Invalid */
}

static void test_unknown_and_repeated_fields(void **state)
{
    (void)state;
    /* field 9 varint, field 10 fixed64, field 11 bytes, field 12 fixed32,
     * then result=Miss, then result=Hit and two bodies: the last wins. */
    const uint8_t msg[] = {0x48, 0x96, 0x01,
                           0x51, 1, 2, 3, 4, 5, 6, 7, 8,
                           0x5a, 2, 'z', 'z',
                           0x65, 1, 2, 3, 4,
                           0x08, 0x03, 0x12, 1, 'a', 0x08, 0x02, 0x12, 2, 'b', 'c'};
    momento_result r;
    assert_int_equal(decode(msg, sizeof(msg), &r), MOMENTO_OK);
    assert_int_equal(r.outcome, MOMENTO_OUTCOME_HIT);
    assert_int_equal(r.value_len, 2);
    assert_memory_equal(r.value, "bc", 2);
    assert_true(momento__wire_valid(msg, sizeof(msg)));
    /* Every truncation of it is refused rather than misread. */
    for (size_t cut = 1; cut < sizeof(msg); cut++) {
        bool field_boundary = cut == 3 || cut == 12 || cut == 16 || cut == 21 || cut == 23 ||
                              cut == 26 || cut == 28;
        if (!field_boundary)
            assert_false(momento__wire_valid(msg, cut));
    }
}

static void test_malformed(void **state)
{
    (void)state;
    momento_result r;
    const uint8_t too_long_varint[] = {0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    const uint8_t body_past_end[] = {0x08, 0x02, 0x12, 0x05, 'a'};
    const uint8_t field_zero[] = {0x00, 0x01};
    const uint8_t group[] = {0x0b, 0x0c};
    const uint8_t huge_len[] = {0x12, 0xff, 0xff, 0xff, 0xff, 0x0f};
    assert_int_equal(decode(too_long_varint, sizeof(too_long_varint), &r), MOMENTO_ERR_BAD_RESPONSE);
    assert_int_equal(decode(body_past_end, sizeof(body_past_end), &r), MOMENTO_ERR_BAD_RESPONSE);
    assert_int_equal(decode(field_zero, sizeof(field_zero), &r), MOMENTO_ERR_BAD_RESPONSE);
    assert_int_equal(decode(group, sizeof(group), &r), MOMENTO_ERR_BAD_RESPONSE);
    assert_int_equal(decode(huge_len, sizeof(huge_len), &r), MOMENTO_ERR_BAD_RESPONSE);
    assert_false(momento__wire_valid(field_zero, sizeof(field_zero)));
    assert_false(momento__wire_valid(huge_len, sizeof(huge_len)));
    assert_true(momento__wire_valid(NULL, 0));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matches_protobuf_c),
        cmocka_unit_test(test_unknown_and_repeated_fields),
        cmocka_unit_test(test_malformed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
