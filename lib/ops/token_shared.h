/* What disposable tokens (op_token.c) and API keys (op_api_key.c) share:
 * a scope as the permission messages both requests carry, a result holding
 * a new key, and the bare token inside a key as the SDKs hand it out. */
#ifndef MOMENTO_TOKEN_SHARED_H
#define MOMENTO_TOKEN_SHARED_H

#include "momento/tokens.h"

#include "codec/unpack.h"

#include "permissionmessages.pb-c.h"

#include <stdbool.h>

/* A scope's messages, borrowing its strings: they live until the request
 * is packed, then go with momento__scope_msgs_free(). */
typedef struct momento__scope_msgs {
    PermissionMessages__Permissions perms;
    PermissionMessages__ExplicitPermissions explicit_;
    void *grants;                            /* one group of messages per grant */
    PermissionMessages__PermissionsType **types;
} momento__scope_msgs;

/* How many grants `s` holds (0 for a super-user scope). */
size_t momento__scope_grants(const momento_token_scope *s);
/* Whether `s` was made by momento_token_scope_new_super_user(). */
bool momento__scope_is_super_user(const momento_token_scope *s);
/* Fills `m` for `s`: super user, or its explicit grants. Returns 0 or
 * MOMENTO_ERR_NO_MEMORY (nothing then to free). */
int momento__scope_msgs_fill(momento__scope_msgs *m, const momento_token_scope *s);
void momento__scope_msgs_free(momento__scope_msgs *m);

/* Fills `r` with a new key: `api_key` (the token as the service sent it)
 * wrapped as the SDKs hand keys out, base64 of {"endpoint", "api_key"};
 * `endpoint`, `refresh_token` (NULL for a disposable token) and
 * `valid_until` borrowed from the unpacked reply, which `scratch` keeps.
 * Returns 0, MOMENTO_ERR_NO_MEMORY, or MOMENTO_ERR_BAD_RESPONSE when the
 * reply holds no key (or an API key's reply no refresh token). */
int momento__token_result(momento_result *r, momento__scratch *scratch, const char *endpoint,
                          const char *api_key, const char *refresh_token, uint64_t valid_until);

/* The token to send for `api_key`: the "api_key" inside a key in the v1
 * form (base64 JSON), else `api_key` itself. Returns a malloc'd copy
 * (the caller wipes and frees it) or NULL when out of memory. */
char *momento__key_token(const char *api_key);

#endif
