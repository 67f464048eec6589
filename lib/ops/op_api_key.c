/* API keys (include/momento/tokens.h, docs/api.md "API keys"):
 * GenerateApiToken and RefreshApiToken to the auth service, which is on the
 * control endpoint and, like the token service, reads the caller's key
 * from the request body. The scope is a momento_token_scope (op_token.c
 * builds its messages); the result is a token result with a refresh token.
 * A key and a refresh token are secrets: nothing here logs, and no error
 * message holds any part of one. */
#include "momento/tokens.h"

#include "ops/op.h"
#include "ops/token_shared.h"

#include "base/alloc.h"

#include "auth.pb-c.h"

#include <stdlib.h>
#include <string.h>

int momento_generate_api_key(momento_client *c, const momento_token_scope *scope,
                             uint32_t expires_in_s, const momento_request_options *opts,
                             momento_callback cb, void *userdata)
{
    MOMENTO__CHECK(momento__check_request(c, opts, cb));
    if (!scope)
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT, "the scope is NULL");
    if (!momento__scope_is_super_user(scope) && momento__scope_grants(scope) == 0)
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT,
                               "the scope grants nothing: add a grant to it, or make it with "
                               "momento_token_scope_new_super_user()");
    /* 0 s is a key dead on arrival; "never" has its own value, so that no
     * computed 0 makes a key that lives forever. */
    if (expires_in_s == 0)
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT,
                               "expires_in_s is 0: give seconds from now, or "
                               "MOMENTO_API_KEY_NEVER_EXPIRES");

    momento__scope_msgs sm;
    if (momento__scope_msgs_fill(&sm, scope) != MOMENTO_OK)
        return MOMENTO_ERR_NO_MEMORY;
    Auth__GenerateApiTokenRequest req = AUTH____GENERATE_API_TOKEN_REQUEST__INIT;
    Auth__GenerateApiTokenRequest__Never never = AUTH____GENERATE_API_TOKEN_REQUEST__NEVER__INIT;
    Auth__GenerateApiTokenRequest__Expires expires =
        AUTH____GENERATE_API_TOKEN_REQUEST__EXPIRES__INIT;
    if (expires_in_s == MOMENTO_API_KEY_NEVER_EXPIRES) {
        req.expiry_case = AUTH____GENERATE_API_TOKEN_REQUEST__EXPIRY_NEVER;
        req.never = &never;
    } else {
        expires.valid_for_seconds = expires_in_s;
        req.expiry_case = AUTH____GENERATE_API_TOKEN_REQUEST__EXPIRY_EXPIRES;
        req.expires = &expires;
    }
    /* The auth service reads the caller's key from the body, as the SDKs
     * send it; the call sends it as `authorization` too. */
    req.auth_token = c->creds.token;
    req.permissions = &sm.perms;

    /* Packed before this returns: the messages above may go. */
    int rc = momento__call_start(c, MOMENTO__RPC_GENERATE_API_TOKEN,
                                 momento__decode_generate_api_token, NULL, &req.base, opts, cb,
                                 userdata);
    momento__scope_msgs_free(&sm);
    return rc;
}

int momento_generate_api_key_sync(momento_client *c, const momento_token_scope *scope,
                                  uint32_t expires_in_s, const momento_request_options *opts,
                                  momento_result **ret)
{
    MOMENTO__SYNC(momento_generate_api_key(c, scope, expires_in_s, opts, MOMENTO__SYNC_CB));
}

/* 0 when `s` may go in a request as a key or refresh token, else a
 * refusal naming `what` and nothing of `s`. */
static int check_secret(const char *s, const char *what)
{
    if (!*s)
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT, "the %s is empty", what);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p <= ' ' || *p >= 0x7f)
            return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT,
                                   "the %s holds whitespace, a control or a non-ASCII character",
                                   what);
    return MOMENTO_OK;
}

static void wipe_free(char *s)
{
    if (s) {
        memset(s, 0, strlen(s));
        free(s);
    }
}

int momento_refresh_api_key(momento_client *c, const char *api_key, const char *refresh_token,
                            const momento_request_options *opts, momento_callback cb,
                            void *userdata)
{
    MOMENTO__CHECK(momento__check_request(c, opts, cb));
    if (!refresh_token)
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT, "the refresh token is NULL");
    MOMENTO__CHECK(check_secret(refresh_token, "refresh token"));
    char *token = NULL;
    if (api_key && !(token = momento__key_token(api_key)))
        return MOMENTO_ERR_NO_MEMORY;
    const char *sent = token ? token : c->creds.token;
    int rc = check_secret(sent, api_key ? "API key" : "client's own key");
    if (rc != MOMENTO_OK) {
        wipe_free(token);
        return rc;
    }
    Auth__RefreshApiTokenRequest req = AUTH____REFRESH_API_TOKEN_REQUEST__INIT;
    req.api_key = (char *)sent;
    req.refresh_token = (char *)refresh_token;
    rc = momento__call_start(c, MOMENTO__RPC_REFRESH_API_TOKEN,
                                 momento__decode_refresh_api_token, NULL, &req.base, opts, cb,
                                 userdata);
    /* Packed: the copy of the key can go, wiped. */
    wipe_free(token);
    return rc;
}

int momento_refresh_api_key_sync(momento_client *c, const char *api_key, const char *refresh_token,
                                 const momento_request_options *opts, momento_result **ret)
{
    MOMENTO__SYNC(momento_refresh_api_key(c, api_key, refresh_token, opts, MOMENTO__SYNC_CB));
}

/* An API key's reply must carry a refresh token: without one the key
 * could not be refreshed, which is not what was asked for. */
static int api_key_result(momento_result *r, momento__scratch *scratch, const char *endpoint,
                          const char *api_key, const char *refresh_token, uint64_t valid_until)
{
    if (!refresh_token || !*refresh_token)
        return MOMENTO_ERR_BAD_RESPONSE;
    return momento__token_result(r, scratch, endpoint, api_key, refresh_token, valid_until);
}

MOMENTO__DECODER(generate_api_token)
{
    MOMENTO__UNPACK_ONE(Auth__GenerateApiTokenResponse, GENERATE_API_TOKEN);
    return api_key_result(r, scratch, m->endpoint, m->api_key, m->refresh_token, m->valid_until);
}

MOMENTO__DECODER(refresh_api_token)
{
    MOMENTO__UNPACK_ONE(Auth__RefreshApiTokenResponse, REFRESH_API_TOKEN);
    return api_key_result(r, scratch, m->endpoint, m->api_key, m->refresh_token, m->valid_until);
}
