/* The result getters' promises that need no server: momento_outcome_name()
 * for every outcome and for values outside the enum, and what each getter
 * returns for a NULL result (momento.h's result section). */
#include "momento/momento.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <string.h>

static void test_outcome_names(void **state)
{
    (void)state;
    static const struct {
        momento_outcome o;
        const char *name;
    } table[] = {
        {MOMENTO_OUTCOME_ERROR, "ERROR"},
        {MOMENTO_OUTCOME_SUCCESS, "SUCCESS"},
        {MOMENTO_OUTCOME_HIT, "HIT"},
        {MOMENTO_OUTCOME_MISS, "MISS"},
        {MOMENTO_OUTCOME_CREATED, "CREATED"},
        {MOMENTO_OUTCOME_ALREADY_EXISTS, "ALREADY_EXISTS"},
        {MOMENTO_OUTCOME_STORED, "STORED"},
        {MOMENTO_OUTCOME_NOT_STORED, "NOT_STORED"},
        {MOMENTO_OUTCOME_TTL_UPDATED, "TTL_UPDATED"},
        {MOMENTO_OUTCOME_TTL_NOT_UPDATED, "TTL_NOT_UPDATED"},
    };
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
        assert_string_equal(momento_outcome_name(table[i].o), table[i].name);
    /* Outside the enum, on either side: a name, never NULL. */
    assert_string_equal(momento_outcome_name((momento_outcome)10), "UNRECOGNISED");
    assert_string_equal(momento_outcome_name((momento_outcome)-1), "UNRECOGNISED");
    assert_string_equal(momento_outcome_name((momento_outcome)1000000), "UNRECOGNISED");
}

static void test_null_result(void **state)
{
    (void)state;
    size_t len = 99;
    assert_int_equal(momento_result_error(NULL), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_result_outcome(NULL), MOMENTO_OUTCOME_ERROR);
    assert_int_equal(momento_result_grpc_status(NULL), -1);
    assert_string_equal(momento_result_message(NULL), "");
    assert_int_equal(momento_result_attempts(NULL), 0);
    assert_null(momento_result_error_detail(NULL));
    assert_int_equal(momento_result_limit_kind(NULL), MOMENTO_LIMIT_NONE);
    assert_int_equal(momento_result_is_hit(NULL), 0);
    assert_null(momento_result_value(NULL, &len));
    assert_int_equal(len, 0);
    assert_null(momento_result_value(NULL, NULL));
    len = 99;
    assert_null(momento_result_hash(NULL, &len));
    assert_int_equal(len, 0);
    assert_int_equal(momento_result_int(NULL), 0);
    assert_int_equal(momento_result_ttl_ms(NULL), 0);
    assert_int_equal(momento_result_item_type(NULL), MOMENTO_ITEM_TYPE_NONE);
    assert_int_equal(momento_result_exists_count(NULL), 0);
    assert_int_equal(momento_result_exists(NULL, 0), -1);
    assert_int_equal(momento_result_item_count(NULL), 0);
    assert_null(momento_result_item(NULL, 0));
    assert_int_equal(momento_result_cache_count(NULL), 0);
    assert_null(momento_result_cache_name(NULL, 0));
    assert_null(momento_result_cache_limits(NULL, 0));
    assert_int_equal(momento_result_trailer_count(NULL), 0);
    assert_null(momento_result_trailer(NULL, 0));
    momento_result_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_outcome_names),
        cmocka_unit_test(test_null_result),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
