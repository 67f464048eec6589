/* The check of a requested scope that the token service (rpc_token.c,
 * which defines it) and the auth service (rpc_api_key.c) share. */
#ifndef MOMENTO_LOCAL_SRV_GRANTS_H
#define MOMENTO_LOCAL_SRV_GRANTS_H
#include "permissionmessages.pb-c.h"
#include <stdbool.h>
/* NULL when `perms` is a scope this server can hold calls to: explicit
 * grants, each with a role and a non-empty cache, key, prefix or topic
 * where it names one, or (when `super_user_ok`: API keys) a super user's;
 * else why not, for an INVALID_ARGUMENT. */
const char *srv_check_permissions(const PermissionMessages__Permissions *perms, bool super_user_ok);
#endif
