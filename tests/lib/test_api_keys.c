/* API keys against momento-local: keys issued through the library (super
 * user, AllDataReadWrite, explicit grants; expiring or not) working within
 * their scope and refused (PERMISSION) outside it, who may make which keys,
 * refresh (a new pair; the old key and refresh token refused
 * AUTHENTICATION afterwards, as is a wrong refresh token), expiry, the
 * library's argument checks, and the raw requests the official SDKs send
 * (no authorization header, the key in the body). */
#include "momento/tokens.h"
#include "momento/topics.h"
#include "srv_test.h"
#include "testutil.h"

#include "auth.pb-c.h"
#include "permissionmessages.pb-c.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static momento_token_scope *super_user(void)
{
    momento_token_scope *s = NULL;
    assert_int_equal(momento_token_scope_new_super_user(&s), MOMENTO_OK);
    return s;
}

static momento_token_scope *all_data(void)
{
    momento_token_scope *s = NULL;
    assert_int_equal(momento_token_scope_new(&s), MOMENTO_OK);
    assert_int_equal(momento_token_scope_add_all_data_read_write(s), MOMENTO_OK);
    return s;
}

/* A key and its refresh token (malloc'd). */
typedef struct pair {
    char *key, *refresh;
    uint64_t valid_until;
} pair;

static void pair_free(pair *p)
{
    free(p->key);
    free(p->refresh);
}

static pair take(momento_result *r)
{
    assert_int_equal(momento_result_outcome(r), MOMENTO_OUTCOME_SUCCESS);
    pair p = {strdup(momento_result_token_api_key(r)),
              strdup(momento_result_token_refresh_token(r)), momento_result_token_valid_until(r)};
    assert_true(strlen(p.key) > 0 && strlen(p.refresh) > 0);
    assert_string_equal(momento_result_token_endpoint(r), momento_local_endpoint(tu_fx.server));
    momento_result_free(r);
    return p;
}

/* A key for `scope` (freed here) from `from`, or the error it got. */
static int issue_from(momento_client *from, momento_token_scope *scope, uint32_t seconds,
                      pair *ret)
{
    momento_result *r = NULL;
    int rc = momento_generate_api_key_sync(from, scope, seconds, NULL, &r);
    momento_token_scope_free(scope);
    if (rc == MOMENTO_OK) {
        *ret = take(r);
        return rc;
    }
    if (rc == MOMENTO_ERR_PERMISSION)
        assert_non_null(strstr(momento_result_message(r), "Insufficient permissions"));
    momento_result_free(r);
    return rc;
}

static pair issue(momento_token_scope *scope, uint32_t seconds)
{
    pair p;
    assert_int_equal(issue_from(tu_fx.client, scope, seconds, &p), MOMENTO_OK);
    return p;
}

static int refresh(momento_client *c, const char *key, const char *refresh_token, pair *ret)
{
    momento_result *r = NULL;
    int rc = momento_refresh_api_key_sync(c, key, refresh_token, NULL, &r);
    if (rc == MOMENTO_OK)
        *ret = take(r);
    else
        momento_result_free(r);
    return rc;
}

static int do_set(momento_client *c, const char *key)
{
    return momento_set_sync(c, "c", key, strlen(key), "v", 1, 0, NULL, NULL);
}

static int do_get(momento_client *c, const char *key)
{
    momento_result *r = NULL;
    int rc = momento_get_sync(c, "c", key, strlen(key), NULL, &r);
    momento_result_free(r);
    return rc;
}

static int create_cache(momento_client *c, const char *name)
{
    return momento_create_cache_sync(c, name, NULL, NULL);
}

static void test_super_user_never_expires(void **state)
{
    (void)state;
    pair k = issue(super_user(), MOMENTO_API_KEY_NEVER_EXPIRES);
    /* Never expiring: valid_until 0, as Momento's reply says "never". */
    assert_int_equal(k.valid_until, 0);
    momento_client *c = tu_client_with_key(tu_fx.server, k.key);
    assert_int_equal(do_set(c, "su"), MOMENTO_OK);
    assert_int_equal(do_get(c, "su"), MOMENTO_OK);
    /* The control plane too. */
    assert_int_equal(create_cache(c, "made-by-super-user"), MOMENTO_OK);
    assert_int_equal(momento_delete_cache_sync(c, "made-by-super-user", NULL, NULL), MOMENTO_OK);
    /* A super user's key makes explicit keys, not super users. */
    pair sub;
    assert_int_equal(issue_from(c, all_data(), 60, &sub), MOMENTO_OK);
    pair_free(&sub);
    assert_int_equal(issue_from(c, super_user(), 60, &sub), MOMENTO_ERR_PERMISSION);
    /* And disposable tokens. */
    momento_token_scope *ts = NULL;
    momento_token_scope_new(&ts);
    momento_token_scope_add_cache(ts, MOMENTO_TOKEN_READ_ONLY, "c");
    momento_result *r = NULL;
    assert_int_equal(momento_generate_disposable_token_sync(c, ts, 60, NULL, NULL, &r), MOMENTO_OK);
    momento_result_free(r);
    momento_token_scope_free(ts);
    momento_client_free(c);
    pair_free(&k);
}

static void test_all_data_read_write(void **state)
{
    (void)state;
    int64_t before = (int64_t)time(NULL);
    pair k = issue(all_data(), 60);
    assert_true((int64_t)k.valid_until >= before + 60 &&
                (int64_t)k.valid_until <= (int64_t)time(NULL) + 60);
    momento_client *c = tu_client_with_key(tu_fx.server, k.key);
    assert_int_equal(do_set(c, "adrw"), MOMENTO_OK);
    assert_int_equal(do_get(c, "adrw"), MOMENTO_OK);
    momento_result *r = NULL;
    assert_int_equal(momento_topic_publish_sync(c, "c", "t", "m", 1, NULL, &r), MOMENTO_OK);
    momento_result_free(r);
    /* Data, not the control plane, and no keys of its own. */
    assert_int_equal(create_cache(c, "adrw-may-not"), MOMENTO_ERR_PERMISSION);
    pair sub;
    assert_int_equal(issue_from(c, all_data(), 60, &sub), MOMENTO_ERR_PERMISSION);
    momento_client_free(c);
    pair_free(&k);
}

static void test_explicit_scope(void **state)
{
    (void)state;
    momento_token_scope *s = NULL;
    momento_token_scope_new(&s);
    assert_int_equal(momento_token_scope_add_cache_key_prefix(s, MOMENTO_TOKEN_READ_ONLY, "c",
                                                              "ro-", 3),
                     MOMENTO_OK);
    pair k = issue(s, 60);
    assert_int_equal(do_set(tu_fx.client, "ro-x"), MOMENTO_OK);
    momento_client *c = tu_client_with_key(tu_fx.server, k.key);
    assert_int_equal(do_get(c, "ro-x"), MOMENTO_OK);
    assert_int_equal(do_set(c, "ro-x"), MOMENTO_ERR_PERMISSION);
    assert_int_equal(do_get(c, "rw-x"), MOMENTO_ERR_PERMISSION);
    momento_client_free(c);
    pair_free(&k);
}

static void test_refresh(void **state)
{
    (void)state;
    pair k1 = issue(all_data(), 100);
    momento_client *c1 = tu_client_with_key(tu_fx.server, k1.key);
    /* As the SDKs do: the client's own key (NULL) is the one refreshed. */
    pair k2;
    int64_t before = (int64_t)time(NULL);
    assert_int_equal(refresh(c1, NULL, k1.refresh, &k2), MOMENTO_OK);
    assert_string_not_equal(k2.key, k1.key);
    assert_string_not_equal(k2.refresh, k1.refresh);
    /* As long again from now as the old key was made for. */
    assert_true((int64_t)k2.valid_until >= before + 100 &&
                (int64_t)k2.valid_until <= (int64_t)time(NULL) + 100);
    momento_client *c2 = tu_client_with_key(tu_fx.server, k2.key);
    assert_int_equal(do_set(c2, "refreshed"), MOMENTO_OK);
    /* Same scope: still no control plane. */
    assert_int_equal(create_cache(c2, "refreshed-may-not"), MOMENTO_ERR_PERMISSION);
    /* The old key and the old refresh token are gone. */
    assert_int_equal(do_set(c1, "old"), MOMENTO_ERR_AUTHENTICATION);
    pair k3;
    assert_int_equal(refresh(c1, NULL, k1.refresh, &k3), MOMENTO_ERR_AUTHENTICATION);
    assert_int_equal(refresh(tu_fx.client, k2.key, k1.refresh, &k3), MOMENTO_ERR_AUTHENTICATION);
    /* A refresh token that was never issued, and one of another key. */
    assert_int_equal(refresh(tu_fx.client, k2.key, "mlr1.not-a-refresh-token", &k3),
                     MOMENTO_ERR_AUTHENTICATION);
    pair other = issue(all_data(), 100);
    assert_int_equal(refresh(tu_fx.client, k2.key, other.refresh, &k3), MOMENTO_ERR_AUTHENTICATION);
    /* Neither failure spent k2's refresh: it still works, from a client
     * whose own key is another (the key named, in the SDKs' form). */
    assert_int_equal(refresh(tu_fx.client, k2.key, k2.refresh, &k3), MOMENTO_OK);
    assert_int_equal(do_set(c2, "k2-gone"), MOMENTO_ERR_AUTHENTICATION);
    /* Only an API key this server issued is refreshed. */
    pair none;
    assert_int_equal(refresh(tu_fx.client, "some-other-key", k3.refresh, &none),
                     MOMENTO_ERR_AUTHENTICATION);
    momento_client_free(c1);
    momento_client_free(c2);
    pair_free(&k1);
    pair_free(&k2);
    pair_free(&k3);
    pair_free(&other);

    /* A key that never expires stays so. */
    pair n1 = issue(super_user(), MOMENTO_API_KEY_NEVER_EXPIRES), n2;
    assert_int_equal(refresh(tu_fx.client, n1.key, n1.refresh, &n2), MOMENTO_OK);
    assert_int_equal(n2.valid_until, 0);
    momento_client *cn = tu_client_with_key(tu_fx.server, n2.key);
    assert_int_equal(create_cache(cn, "never-refreshed"), MOMENTO_OK);
    momento_client_free(cn);
    pair_free(&n1);
    pair_free(&n2);
}

static void test_expired(void **state)
{
    (void)state;
    /* Issuing the key, making the client and one set must come before
     * the expiry, on a loaded machine too: 3 s natively (valid_until is on
     * the second, so at least 2 s), 12 s under valgrind (a time scale
     * above 1). */
    pair k = issue(all_data(), tu_time_scale() > 1 ? 12 : 3);
    momento_client *c = tu_client_with_key(tu_fx.server, k.key);
    assert_int_equal(do_set(c, "soon"), MOMENTO_OK);
    /* Expired once the clock reaches valid_until (on the second). */
    while ((uint64_t)time(NULL) < k.valid_until)
        usleep(20000);
    assert_int_equal(do_set(c, "late"), MOMENTO_ERR_AUTHENTICATION);
    pair k2;
    assert_int_equal(refresh(c, NULL, k.refresh, &k2), MOMENTO_ERR_AUTHENTICATION);
    momento_client_free(c);
    pair_free(&k);
}

static void test_disposable_token_makes_no_keys(void **state)
{
    (void)state;
    momento_token_scope *ts = NULL;
    momento_token_scope_new(&ts);
    momento_token_scope_add_cache(ts, MOMENTO_TOKEN_READ_WRITE, NULL);
    momento_result *r = NULL;
    assert_int_equal(momento_generate_disposable_token_sync(tu_fx.client, ts, 60, NULL, NULL, &r),
                     MOMENTO_OK);
    momento_token_scope_free(ts);
    momento_client *c = tu_client_with_key(tu_fx.server, momento_result_token_api_key(r));
    /* A disposable token has no refresh token. */
    assert_string_equal(momento_result_token_refresh_token(r), "");
    momento_result_free(r);
    pair k;
    assert_int_equal(issue_from(c, all_data(), 60, &k), MOMENTO_ERR_PERMISSION);
    momento_client_free(c);
}

static void test_auth_token_server(void **state)
{
    (void)state;
    momento_local *s = tu_server_with_token("secret");
    momento_client *wrong = tu_client_with_key(s, "not-the-secret");
    momento_client *right = tu_client_with_key(s, "secret");
    pair k;
    assert_int_equal(issue_from(wrong, all_data(), 60, &k), MOMENTO_ERR_AUTHENTICATION);
    momento_result *r = NULL;
    momento_token_scope *scope = all_data();
    assert_int_equal(momento_generate_api_key_sync(right, scope, 60, NULL, &r), MOMENTO_OK);
    momento_token_scope_free(scope);
    momento_client *c = tu_client_with_key(s, momento_result_token_api_key(r));
    momento_result_free(r);
    /* The server that asks for its token takes the keys it issued. */
    assert_int_equal(momento_set_sync(c, "c", "k", 1, "v", 1, 0, NULL, NULL), MOMENTO_OK);
    momento_client_free(c);
    momento_client_free(wrong);
    momento_client_free(right);
    momento_local_stop(s);
}

static void test_arguments(void **state)
{
    (void)state;
    momento_result *r = NULL;
    momento_token_scope *empty = NULL, *su = super_user();
    momento_token_scope_new(&empty);
    assert_int_equal(momento_generate_api_key_sync(tu_fx.client, NULL, 60, NULL, &r),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    tu_assert_refusal(&r, MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_generate_api_key_sync(tu_fx.client, empty, 60, NULL, &r),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    tu_assert_refusal(&r, MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_generate_api_key_sync(tu_fx.client, su, 0, NULL, &r),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    tu_assert_refusal(&r, MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_generate_api_key(NULL, su, 60, NULL, tu_count_cb, NULL),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_generate_api_key(tu_fx.client, su, 60, NULL, NULL, NULL),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    /* A super user's scope takes no grants, and makes no disposable token. */
    assert_int_equal(momento_token_scope_add_cache(su, MOMENTO_TOKEN_READ_ONLY, "c"),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_token_scope_add_all_data_read_write(su), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_generate_disposable_token_sync(tu_fx.client, su, 60, NULL, NULL, &r),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    tu_assert_refusal(&r, MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_token_scope_add_all_data_read_write(NULL),
                     MOMENTO_ERR_INVALID_ARGUMENT);

    /* Refresh: the refresh token and the key are checked, and the reason
     * never quotes either. */
    assert_int_equal(momento_refresh_api_key_sync(tu_fx.client, "k", NULL, NULL, &r),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    tu_assert_refusal(&r, MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_refresh_api_key_sync(tu_fx.client, "k", "", NULL, &r),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    tu_assert_refusal(&r, MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(
        momento_refresh_api_key(tu_fx.client, "k", "secret part", NULL, tu_count_cb, NULL),
        MOMENTO_ERR_INVALID_ARGUMENT);
    assert_null(strstr(momento_refusal_reason(), "secret"));
    assert_int_equal(
        momento_refresh_api_key(tu_fx.client, "key\tpart", "rt", NULL, tu_count_cb, NULL),
        MOMENTO_ERR_INVALID_ARGUMENT);
    assert_null(strstr(momento_refusal_reason(), "part"));
    assert_int_equal(momento_refresh_api_key(tu_fx.client, "", "rt", NULL, tu_count_cb, NULL),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    /* The admin client's own key is "" (a local server's): nothing to
     * refresh. */
    assert_int_equal(momento_refresh_api_key(tu_fx.client, NULL, "rt", NULL, tu_count_cb, NULL),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_refresh_api_key(tu_fx.client, "k", "rt", NULL, NULL, NULL),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    momento_token_scope_free(empty);
    momento_token_scope_free(su);
}

/* Every accepted request gets one callback, counted after the client's
 * free (which waits for them all); the copy a dup makes keeps the refresh
 * token. */
typedef struct kept {
    tu_counter k;
    momento_result *copy;
} kept;

static void keep_cb(const momento_result *r, void *userdata)
{
    kept *w = userdata;
    if (!w->copy && momento_result_outcome(r) == MOMENTO_OUTCOME_SUCCESS)
        assert_int_equal(momento_result_dup(r, &w->copy), MOMENTO_OK);
    tu_count_cb(r, &w->k);
}

static void test_async_and_dup(void **state)
{
    (void)state;
    momento_client *c = tu_client(tu_fx.server, NULL);
    kept w = {0};
    tu_counter_init(&w.k);
    momento_token_scope *s = super_user();
    for (int i = 0; i < 4; i++)
        assert_int_equal(momento_generate_api_key(c, s, 60, NULL, keep_cb, &w), MOMENTO_OK);
    momento_token_scope_free(s); /* copied at submit */
    assert_int_equal(momento_refresh_api_key(c, "mlk1.forged.x", "mlr1.x", NULL, keep_cb, &w),
                     MOMENTO_OK);
    assert_int_equal(tu_counter_wait(&w.k, 5, 5000 * tu_time_scale()), 5);
    momento_client_free(c);
    assert_int_equal(w.k.total, 5);
    assert_int_equal(w.k.ok, 4);
    assert_int_equal(tu_counter_errors(&w.k, MOMENTO_ERR_AUTHENTICATION), 1);
    assert_non_null(w.copy);
    assert_true(strncmp(momento_result_token_refresh_token(w.copy), "mlr1.", 5) == 0);
    assert_true(strlen(momento_result_token_api_key(w.copy)) > 0);
    /* The copy's refresh token works. */
    pair k;
    assert_int_equal(refresh(tu_fx.client, momento_result_token_api_key(w.copy),
                             momento_result_token_refresh_token(w.copy), &k),
                     MOMENTO_OK);
    pair_free(&k);
    momento_result_free(w.copy);
    tu_counter_destroy(&w.k);
    /* Accessors of a result that holds no key. */
    assert_string_equal(momento_result_token_refresh_token(NULL), "");
}

/* The requests as the official SDKs send them: no authorization header,
 * the caller's key in the body; the server's own checks of what the
 * library refuses before sending. */
static int raw_generate(int expiry, bool with_permissions, bool super_user_scope)
{
    PermissionMessages__Permissions perms = PERMISSION_MESSAGES__PERMISSIONS__INIT;
    PermissionMessages__ExplicitPermissions ex = PERMISSION_MESSAGES__EXPLICIT_PERMISSIONS__INIT;
    if (super_user_scope) {
        perms.kind_case = PERMISSION_MESSAGES__PERMISSIONS__KIND_SUPER_USER;
    } else {
        perms.kind_case = PERMISSION_MESSAGES__PERMISSIONS__KIND_EXPLICIT;
        perms.explicit_ = &ex;
    }
    Auth__GenerateApiTokenRequest req = AUTH____GENERATE_API_TOKEN_REQUEST__INIT;
    Auth__GenerateApiTokenRequest__Never never = AUTH____GENERATE_API_TOKEN_REQUEST__NEVER__INIT;
    Auth__GenerateApiTokenRequest__Expires exp = AUTH____GENERATE_API_TOKEN_REQUEST__EXPIRES__INIT;
    if (expiry < 0) {
        req.expiry_case = AUTH____GENERATE_API_TOKEN_REQUEST__EXPIRY_NEVER;
        req.never = &never;
    } else if (expiry < 1000000) {
        exp.valid_for_seconds = (uint32_t)expiry;
        req.expiry_case = AUTH____GENERATE_API_TOKEN_REQUEST__EXPIRY_EXPIRES;
        req.expires = &exp;
    } /* else: no expiry at all */
    req.auth_token = "";
    req.permissions = with_permissions ? &perms : NULL;
    int st;
    Auth__GenerateApiTokenResponse *resp =
        srv_call(momento_local_endpoint(tu_fx.server), "/auth.Auth/GenerateApiToken", NULL, 0,
                 &req.base, &auth____generate_api_token_response__descriptor, &st);
    if (resp) {
        assert_true(strlen(resp->api_key) > 0 && strlen(resp->refresh_token) > 0);
        assert_int_equal(resp->valid_until == 0, expiry < 0);
        auth____generate_api_token_response__free_unpacked(resp, NULL);
    }
    return st;
}

static void test_server_checks(void **state)
{
    (void)state;
    enum { OK = 0, INVALID_ARGUMENT = 3 };
    assert_int_equal(raw_generate(60, true, true), OK);
    assert_int_equal(raw_generate(-1, true, true), OK);
    assert_int_equal(raw_generate(0, true, true), INVALID_ARGUMENT);
    assert_int_equal(raw_generate(1000000, true, true), INVALID_ARGUMENT); /* no expiry */
    assert_int_equal(raw_generate(60, false, false), INVALID_ARGUMENT);   /* no scope */
    assert_int_equal(raw_generate(60, true, false), INVALID_ARGUMENT);    /* no grant */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_super_user_never_expires),
        cmocka_unit_test(test_all_data_read_write),
        cmocka_unit_test(test_explicit_scope),
        cmocka_unit_test(test_refresh),
        cmocka_unit_test(test_expired),
        cmocka_unit_test(test_disposable_token_makes_no_keys),
        cmocka_unit_test(test_auth_token_server),
        cmocka_unit_test(test_arguments),
        cmocka_unit_test(test_async_and_dup),
        cmocka_unit_test(test_server_checks),
    };
    /* tu_fx.client holds the ordinary (empty) token: a session's. */
    return cmocka_run_group_tests(tests, tu_fixture_setup, tu_fixture_teardown);
}
