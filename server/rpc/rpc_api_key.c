/* The auth service: GenerateApiToken and RefreshApiToken (docs/server.md
 * "API keys"). As the token service does, it reads the caller's key from
 * the request body, as Momento's auth service does: the SDKs send no
 * authorization header to it. The keys are signed, and refreshes recorded,
 * by tokens.c. */
#include "rpc/srv_rpc.h"
#include "rpc/srv_grants.h"

#include "core/srv_server.h"
#include "core/srv_tokens.h"

#include "auth.pb-c.h"
#include "permissionmessages.pb-c.h"

#include <stdlib.h>
#include <string.h>

static void deny(srv_reply *r)
{
    srv_reply_error(r, GRPC_STATUS_PERMISSION_DENIED, NULL,
                    "Insufficient permissions to perform this operation");
}

/* Fills and adds one of the two responses, which have the same fields. */
#define REPLY_WITH(TYPE, INIT, k, r)                                                               \
    do {                                                                                           \
        TYPE resp_ = INIT;                                                                         \
        resp_.api_key = (k)->key;                                                                  \
        resp_.refresh_token = (k)->refresh_token;                                                  \
        resp_.endpoint = s->endpoint;                                                              \
        resp_.valid_until = (k)->valid_until;                                                      \
        srv_reply_add((r), &resp_.base);                                                           \
    } while (0)

void srv_generate_api_token(momento_local *s, store_cache *c, const ProtobufCMessage *msg,
                            srv_reply *r)
{
    (void)c;
    const Auth__GenerateApiTokenRequest *req = (const Auth__GenerateApiTokenRequest *)msg;
    const char *key = req->auth_token ? req->auth_token : "";
    const PermissionMessages__Permissions *perms = req->permissions;
    bool wants_super_user =
        perms && perms->kind_case == PERMISSION_MESSAGES__PERMISSIONS__KIND_SUPER_USER;
    /* The caller's key. This server's --auth-token is what a Momento
     * session token is: it may make any key. Of the keys this server
     * issued, only a super user's makes keys, and not super users (as
     * Momento answers the SDKs' tests); a disposable token makes none. */
    srv_token_info who;
    int issued = srv_token_inspect(s, key, r, &who);
    if (issued < 0)
        return;
    if (issued > 0 && (!who.api_key || !who.super_user || wants_super_user)) {
        deny(r);
        return;
    }
    if (!issued && s->opts.auth_token && strcmp(key, s->opts.auth_token) != 0) {
        srv_reply_error(r, GRPC_STATUS_UNAUTHENTICATED, NULL, "invalid auth token");
        return;
    }
    uint32_t lifetime;
    if (req->expiry_case == AUTH____GENERATE_API_TOKEN_REQUEST__EXPIRY_NEVER) {
        lifetime = 0;
    } else if (req->expiry_case == AUTH____GENERATE_API_TOKEN_REQUEST__EXPIRY_EXPIRES &&
               req->expires->valid_for_seconds > 0) {
        lifetime = req->expires->valid_for_seconds;
    } else {
        srv_reply_error(r, GRPC_STATUS_INVALID_ARGUMENT, NULL,
                        "an API key needs an expiry: never, or a positive validForSeconds");
        return;
    }
    size_t n;
    uint8_t *packed = srv_grants_pack(r, req->token_id, perms, true, &n);
    if (!packed)
        return;
    srv_api_key k;
    int rc = srv_api_key_issue(s, packed, n, lifetime, &k);
    free(packed);
    if (rc < 0) {
        srv_reply_no_memory(r);
        return;
    }
    REPLY_WITH(Auth__GenerateApiTokenResponse, AUTH____GENERATE_API_TOKEN_RESPONSE__INIT, &k, r);
    srv_api_key_clear(&k);
}

void srv_refresh_api_token(momento_local *s, store_cache *c, const ProtobufCMessage *msg,
                           srv_reply *r)
{
    (void)c;
    const Auth__RefreshApiTokenRequest *req = (const Auth__RefreshApiTokenRequest *)msg;
    /* The key being refreshed is the credential: neither --auth-token nor
     * anything else is asked for. */
    srv_api_key k;
    if (srv_api_key_refresh(s, req->api_key ? req->api_key : "",
                            req->refresh_token ? req->refresh_token : "", r, &k) < 0)
        return;
    REPLY_WITH(Auth__RefreshApiTokenResponse, AUTH____REFRESH_API_TOKEN_RESPONSE__INIT, &k, r);
    srv_api_key_clear(&k);
}
