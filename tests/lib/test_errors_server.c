/* The error kinds a result reports from momento-local's replies: which limit
 * a MOMENTO_ERR_LIMIT_EXCEEDED hit (momento_result_limit_kind()), read from
 * the `err` trailer and, as official SDKs fall back to it, from the message
 * alone; and an eager connection that fails (MOMENTO_ERR_CONNECTION). */
#include "model/errors.h"
#include "testutil.h"

#include "momento/collections.h"
#include "momento/topics.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A result that failed with a server limit of `kind`, whose trailer says
 * `cause`, and whose message alone leads to the same kind (what an SDK that
 * ignores the trailer reports). Frees `r`. */
static void expect_limit(momento_result *r, momento_limit_kind kind, const char *cause)
{
    assert_non_null(r);
    assert_int_equal(momento_result_error(r), MOMENTO_ERR_LIMIT_EXCEEDED);
    assert_int_equal(momento_result_grpc_status(r), 8);
    assert_string_equal(momento_result_error_detail(r), cause);
    assert_int_equal(momento_result_limit_kind(r), kind);
    if (momento__limit_kind(NULL, momento_result_message(r)) != kind)
        fail_msg("message \"%s\" alone does not say %s", momento_result_message(r),
                 momento_limit_kind_text(kind));
    /* An owned copy keeps what the kind is read from. */
    momento_result *copy;
    assert_int_equal(momento_result_dup(r, &copy), MOMENTO_OK);
    momento_result_free(r);
    assert_int_equal(momento_result_limit_kind(copy), kind);
    momento_result_free(copy);
}

/* Each limit momento-local enforces, through the library. */
static void test_limit_kinds(void **state)
{
    (void)state;
    momento_local_options *o = tu_options("c");
    momento_local_options_set_max_item_bytes(o, 1000);
    momento_local *s = tu_start(o);
    momento_client *c = tu_client(s, NULL);
    momento_result *r = NULL;

    /* Success and a non-limit error have no limit kind. */
    assert_int_equal(momento_set_sync(c, "c", "k", 1, "v", 1, 0, NULL, &r), MOMENTO_OK);
    assert_int_equal(momento_result_limit_kind(r), MOMENTO_LIMIT_NONE);
    momento_result_free(r);
    assert_int_equal(momento_get_sync(c, "nope", "k", 1, NULL, &r), MOMENTO_ERR_CACHE_NOT_FOUND);
    assert_int_equal(momento_result_limit_kind(r), MOMENTO_LIMIT_NONE);
    momento_result_free(r);

    /* Item: key + value over the server's 1000 bytes. */
    char small[2000];
    memset(small, 'i', sizeof(small));
    assert_int_equal(momento_set_sync(c, "c", "k", 1, small, sizeof(small), 0, NULL, &r),
                     MOMENTO_ERR_LIMIT_EXCEEDED);
    expect_limit(r, MOMENTO_LIMIT_ITEM_SIZE, "item_size_limit_exceeded");

    /* Element: one dictionary value over 128 KiB. */
    size_t elen = 200 * 1024;
    char *elem = malloc(elen);
    memset(elem, 'e', elen);
    assert_int_equal(momento_dictionary_set_field_sync(c, "c", "d", 1, "f", 1, elem, elen, NULL,
                                                       NULL, &r),
                     MOMENTO_ERR_LIMIT_EXCEEDED);
    expect_limit(r, MOMENTO_LIMIT_ELEMENT_SIZE, "element_size_limit_exceeded");
    free(elem);

    /* Request: a batch whose items each fit the library's item limit but
     * whose request is over momento-local's 5 MiB (+ framing) request
     * limit. */
    size_t vlen = 3u * 1024 * 1024;
    char *val = calloc(1, vlen);
    const void *keys[2] = {"a", "b"};
    size_t klens[2] = {1, 1};
    const void *vals[2] = {val, val};
    size_t vlens[2] = {vlen, vlen};
    assert_int_equal(momento_set_batch_sync(c, "c", keys, klens, vals, vlens, 2, 0, NULL, &r),
                     MOMENTO_ERR_LIMIT_EXCEEDED);
    expect_limit(r, MOMENTO_LIMIT_REQUEST_SIZE, "request_size_limit_exceeded");
    free(val);

    /* A topic value over the item limit is a request-size refusal too. */
    assert_int_equal(momento_topic_publish_sync(c, "c", "t", small, sizeof(small), NULL, &r),
                     MOMENTO_ERR_LIMIT_EXCEEDED);
    expect_limit(r, MOMENTO_LIMIT_REQUEST_SIZE, "request_size_limit_exceeded");

    momento_client_free(c);
    momento_local_stop(s);
}

/* The rate limit: operations_rate_limit_exceeded. */
static void test_operations_rate(void **state)
{
    (void)state;
    momento_local_options *o = tu_options("c");
    momento_local_options_set_max_rps(o, 1);
    momento_local *s = tu_start(o);
    momento_config *cfg = tu_config();
    momento_config_set_retries(cfg, 1);
    momento_client *c = tu_client(s, cfg);
    momento_config_free(cfg);
    /* At most one call a second passes: of a few made at once, one is
     * refused at least. */
    momento_result *limited = NULL;
    for (int i = 0; i < 5 && !limited; i++) {
        momento_result *r;
        int rc = momento_get_sync(c, "c", "k", 1, NULL, &r);
        if (rc == MOMENTO_ERR_LIMIT_EXCEEDED)
            limited = r;
        else
            momento_result_free(r);
    }
    assert_non_null(limited);
    expect_limit(limited, MOMENTO_LIMIT_OPERATIONS_RATE, "operations_rate_limit_exceeded");
    momento_client_free(c);
    momento_local_stop(s);
}

/* A reply larger than the client's 10 MiB receive limit: gRPC refuses it
 * on the client with RESOURCE_EXHAUSTED and no `err` trailer, which is this
 * client's resource, not a service limit. */
static void test_client_resource_exhausted(void **state)
{
    (void)state;
    /* A collection is one item (momento-local holds it within the item
     * limit, as Momento does): a server with a larger limit than Momento's
     * 5 MB stores one too big for the client to receive. */
    momento_local_options *o = tu_options(NULL);
    assert_int_equal(momento_local_options_set_max_item_bytes(o, 16u * 1024 * 1024), MOMENTO_OK);
    momento_local *s = tu_start(o);
    momento_client *c = tu_client(s, NULL);
    tu_create_cache(c, "c");
    /* 96 fields of 120 KiB (each within the element limit), 32 a request
     * (within the request limit): a dictionary of 11.25 MiB. */
    enum { PER = 32, ROUNDS = 3 };
    size_t vlen = 120u * 1024;
    char *val = calloc(1, vlen);
    char names[PER][8];
    const void *fields[PER], *vals[PER];
    size_t flens[PER], vlens[PER];
    for (int round = 0; round < ROUNDS; round++) {
        for (int i = 0; i < PER; i++) {
            snprintf(names[i], sizeof(names[i]), "f%d", round * PER + i);
            fields[i] = names[i];
            flens[i] = strlen(names[i]);
            vals[i] = val;
            vlens[i] = vlen;
        }
        assert_int_equal(momento_dictionary_set_fields_sync(c, "c", "d", 1, fields, flens, vals,
                                                            vlens, PER, NULL, NULL, NULL),
                         MOMENTO_OK);
    }
    free(val);
    momento_result *r = NULL;
    assert_int_equal(momento_dictionary_fetch_sync(c, "c", "d", 1, NULL, &r),
                     MOMENTO_ERR_CLIENT_RESOURCE_EXHAUSTED);
    assert_int_equal(momento_result_grpc_status(r), 8);
    assert_null(momento_result_error_detail(r));
    assert_int_equal(momento_result_limit_kind(r), MOMENTO_LIMIT_NONE);
    momento_result_free(r);
    /* The client goes on. */
    assert_int_equal(momento_set_sync(c, "c", "k", 1, "v", 1, 0, NULL, NULL), MOMENTO_OK);
    momento_client_free(c);
    momento_local_stop(s);
}

/* A client whose eager connection fails is not made: CONNECTION_ERROR, as
 * the official SDKs fail theirs. A request that finds no server is still
 * SERVER_UNAVAILABLE (UNAVAILABLE, as every SDK maps it). */
static void test_connection_error(void **state)
{
    (void)state;
    momento_credentials *creds;
    assert_int_equal(momento_credentials_local(&creds, "127.0.0.1:1"), MOMENTO_OK);
    momento_config *cfg = tu_config();
    momento_config_set_eager_connect(cfg, 300);
    momento_client *c = (momento_client *)0x1;
    assert_int_equal(momento_client_new(&c, cfg, creds), MOMENTO_ERR_CONNECTION);
    assert_ptr_equal(c, (momento_client *)0x1);
    assert_string_equal(momento_error_name(MOMENTO_ERR_CONNECTION), "CONNECTION_ERROR");

    momento_config_set_eager_connect(cfg, 0);
    assert_int_equal(momento_client_new(&c, cfg, creds), MOMENTO_OK);
    momento_result *r;
    assert_int_equal(momento_get_sync(c, "c", "k", 1, NULL, &r), MOMENTO_ERR_SERVER_UNAVAILABLE);
    assert_int_equal(momento_result_limit_kind(r), MOMENTO_LIMIT_NONE);
    momento_result_free(r);
    momento_client_free(c);
    momento_config_free(cfg);
    momento_credentials_free(creds);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_limit_kinds),
        cmocka_unit_test(test_operations_rate),
        cmocka_unit_test(test_client_resource_exhausted),
        cmocka_unit_test(test_connection_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
