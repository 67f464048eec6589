/* What the token service (rpc_token.c, which defines it) and the auth
 * service (rpc_api_key.c) ask alike of the scope a caller wants granted. */
#ifndef MOMENTO_LOCAL_SRV_GRANTS_H
#define MOMENTO_LOCAL_SRV_GRANTS_H
#include "core/srv_reply.h"
#include "permissionmessages.pb-c.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
/* Checks a request's `token_id` (NULL: none; at most SRV_TOKEN_ID_MAX
 * bytes) and `perms`, which must be a scope this server can hold calls
 * to: explicit grants, each with a role and a non-empty cache, key, prefix
 * or topic where it names one, or (when `super_user_ok`: API keys) a super
 * user's. Returns `perms` packed, to sign, in memory the caller frees,
 * its size in *ret_len; or NULL with INVALID_ARGUMENT (saying why) or the
 * no-memory error set in `r`. */
uint8_t *srv_grants_pack(srv_reply *r, const char *token_id,
                         const PermissionMessages__Permissions *perms, bool super_user_ok,
                         size_t *ret_len);
#endif
