/* The token service: GenerateDisposableToken (docs/server.md "Disposable
 * tokens"). The caller's key comes in the request body, as Momento's token
 * service reads it; the token it gets back is signed by tokens.c. */
#include "rpc/srv_rpc.h"
#include "rpc/srv_grants.h"

#include "core/srv_perms.h"
#include "core/srv_server.h"
#include "core/srv_tokens.h"

#include "permissionmessages.pb-c.h"
#include "token.pb-c.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static bool role_ok(int role)
{
    return role >= 1 && role <= 3;
}

/* NULL when the grant is one this server can hold calls to, else why not. */
static const char *check_grant(const PermissionMessages__PermissionsType *t)
{
    if (t->kind_case == PT(KIND_CACHE_PERMISSIONS)) {
        const CachePerm *p = t->cache_permissions;
        if (!role_ok(p->role))
            return "a cache permission has no role";
        if (p->cache_case == PT(CACHE_PERMISSIONS__CACHE_CACHE_SELECTOR) &&
            (!p->cache_selector->cache_name || !*p->cache_selector->cache_name))
            return "cache name must not be empty";
        if (p->cache_case == PT(CACHE_PERMISSIONS__CACHE__NOT_SET))
            return "a cache permission names no cache";
        if (p->cache_item_case == PT(CACHE_PERMISSIONS__CACHE_ITEM_ITEM_SELECTOR)) {
            const ItemSel *sel = p->item_selector;
            if (sel->kind_case == PT(CACHE_ITEM_SELECTOR__KIND__NOT_SET) ||
                (sel->kind_case == PT(CACHE_ITEM_SELECTOR__KIND_KEY) ? sel->key.len
                                                                     : sel->key_prefix.len) == 0)
                return "cache key or key prefix must not be empty";
        }
        /* No item selector at all is every item (tokens.c): the SDKs send
         * a cache-wide grant without one. */
        return NULL;
    }
    if (t->kind_case == PT(KIND_TOPIC_PERMISSIONS)) {
        const TopicPerm *p = t->topic_permissions;
        if (!role_ok(p->role))
            return "a topic permission has no role";
        if (p->cache_case == PT(TOPIC_PERMISSIONS__CACHE_CACHE_SELECTOR) &&
            (!p->cache_selector->cache_name || !*p->cache_selector->cache_name))
            return "cache name must not be empty";
        if (p->cache_case == PT(TOPIC_PERMISSIONS__CACHE__NOT_SET))
            return "a topic permission names no cache";
        if (p->topic_case == PT(TOPIC_PERMISSIONS__TOPIC__NOT_SET))
            return "a topic permission names no topic";
        if (p->topic_case == PT(TOPIC_PERMISSIONS__TOPIC_TOPIC_SELECTOR)) {
            const TopicSel *sel = p->topic_selector;
            const char *name = sel->kind_case == PT(TOPIC_SELECTOR__KIND_TOPIC_NAME)
                                   ? sel->topic_name
                               : sel->kind_case == PT(TOPIC_SELECTOR__KIND_TOPIC_NAME_PREFIX)
                                   ? sel->topic_name_prefix
                                   : NULL;
            if (!name || !*name)
                return "topic name must not be empty";
        }
        return NULL;
    }
    /* The SDKs' AllDataReadWrite carries a function grant: accepted, and
     * granting nothing here, where there are no functions. */
    if (t->kind_case == PT(KIND_FUNCTION_PERMISSIONS))
        return NULL;
    return "a permission is neither a cache, a topic nor a function permission";
}

/* NULL when `perms` is a scope srv_grants_pack() takes, else why not. */
static const char *check_permissions(const PermissionMessages__Permissions *perms,
                                     bool super_user_ok)
{
    if (perms && perms->kind_case == PERMISSION_MESSAGES__PERMISSIONS__KIND_SUPER_USER)
        return super_user_ok ? NULL : "disposable tokens cannot be super users";
    if (!perms || perms->kind_case != PERMISSION_MESSAGES__PERMISSIONS__KIND_EXPLICIT ||
        !perms->explicit_ || perms->explicit_->n_permissions == 0)
        return super_user_ok ? "an API key needs super-user or at least one explicit permission"
                             : "disposable tokens need at least one explicit permission";
    const PermissionMessages__ExplicitPermissions *ex = perms->explicit_;
    for (size_t i = 0; i < ex->n_permissions; i++) {
        const char *why = check_grant(ex->permissions[i]);
        if (why)
            return why;
    }
    return NULL;
}

uint8_t *srv_grants_pack(srv_reply *r, const char *token_id,
                         const PermissionMessages__Permissions *perms, bool super_user_ok,
                         size_t *ret_len)
{
    if (token_id && strlen(token_id) > SRV_TOKEN_ID_MAX) {
        srv_reply_error(r, GRPC_STATUS_INVALID_ARGUMENT, NULL,
                        "TokenID must be less than or equal to %u characters.", SRV_TOKEN_ID_MAX);
        return NULL;
    }
    const char *why = check_permissions(perms, super_user_ok);
    if (why) {
        srv_reply_error(r, GRPC_STATUS_INVALID_ARGUMENT, NULL, "%s", why);
        return NULL;
    }
    size_t n = permission_messages__permissions__get_packed_size(perms);
    uint8_t *packed = malloc(n ? n : 1);
    if (!packed) {
        srv_reply_no_memory(r);
        return NULL;
    }
    permission_messages__permissions__pack(perms, packed);
    *ret_len = n;
    return packed;
}

void srv_generate_disposable_token(momento_local *s, store_cache *c, const ProtobufCMessage *msg,
                                   srv_reply *r)
{
    (void)c;
    const Token__GenerateDisposableTokenRequest *req =
        (const Token__GenerateDisposableTokenRequest *)msg;
    const char *key = req->auth_token ? req->auth_token : "";
    /* The caller's key: a disposable token may not make more of itself,
     * nor an API key but a super user's; on a server with a token, only
     * that token (or such a key) may make them. */
    srv_token_info who;
    int issued = srv_token_inspect(s, key, r, &who);
    if (issued < 0)
        return;
    if (issued > 0 && !(who.api_key && who.super_user)) {
        srv_reply_error(r, GRPC_STATUS_PERMISSION_DENIED, NULL,
                        "Insufficient permissions to perform this operation");
        return;
    }
    if (!issued && s->opts.auth_token && strcmp(key, s->opts.auth_token) != 0) {
        srv_reply_error(r, GRPC_STATUS_UNAUTHENTICATED, NULL, "invalid auth token");
        return;
    }
    if (!req->expires || req->expires->valid_for_seconds == 0) {
        srv_reply_error(r, GRPC_STATUS_INVALID_ARGUMENT, NULL,
                        "disposable tokens must have an expiry");
        return;
    }
    size_t n;
    uint8_t *packed = srv_grants_pack(r, req->token_id, req->permissions, false, &n);
    if (!packed)
        return;
    uint64_t valid_until = (uint64_t)time(NULL) + req->expires->valid_for_seconds;
    char *token = srv_token_sign(s, packed, n, valid_until);
    free(packed);
    if (!token) {
        srv_reply_no_memory(r);
        return;
    }
    Token__GenerateDisposableTokenResponse resp = TOKEN____GENERATE_DISPOSABLE_TOKEN_RESPONSE__INIT;
    resp.api_key = token;
    /* The address the token works against: this server's. */
    resp.endpoint = s->endpoint;
    resp.valid_until = valid_until;
    srv_reply_add(r, &resp.base);
    /* A token is a secret: wiped before its memory goes back. */
    memset(token, 0, strlen(token));
    free(token);
}
