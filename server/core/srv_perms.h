/* protobuf-c's names for the permission messages and their oneof cases,
 * shortened, for the files that read a scope: tokens.c, which holds a call
 * to one, and rpc/rpc_token.c, which checks one before it is granted.
 * PT(CACHE_PERMISSIONS__CACHE_ALL_CACHES) is
 * PERMISSION_MESSAGES__PERMISSIONS_TYPE__CACHE_PERMISSIONS__CACHE_ALL_CACHES. */
#ifndef MOMENTO_LOCAL_SRV_PERMS_H
#define MOMENTO_LOCAL_SRV_PERMS_H

#include "permissionmessages.pb-c.h"

#define PT(name) PERMISSION_MESSAGES__PERMISSIONS_TYPE__##name
typedef PermissionMessages__PermissionsType__CachePermissions CachePerm;
typedef PermissionMessages__PermissionsType__TopicPermissions TopicPerm;
typedef PermissionMessages__PermissionsType__CacheSelector CacheSel;
typedef PermissionMessages__PermissionsType__CacheItemSelector ItemSel;
typedef PermissionMessages__PermissionsType__TopicSelector TopicSel;
typedef PermissionMessages__PermissionsType__All AllSel;

#endif
