/* Disposable tokens and API keys (tokens.c): momento-local issues them
 * (GenerateDisposableToken, rpc_token.c; GenerateApiToken and
 * RefreshApiToken, rpc_api_key.c) and, on every later call that carries
 * one, checks its signature, expiry and (a key) that no refresh retired it,
 * and holds the call to its scope (docs/server.md "Disposable tokens", "API
 * keys"). The server's threads; the API keys' state has its own lock. */
#ifndef MOMENTO_LOCAL_SRV_TOKENS_H
#define MOMENTO_LOCAL_SRV_TOKENS_H

#include "core/srv_reply.h"
#include "methods.h"
#include "momento/local.h"

#include <grpc/grpc.h>
#include <protobuf-c/protobuf-c.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A token id's longest, as Momento allows. A token's life has no upper
 * bound since Momento dropped its one-hour cap (February 2026). */
#define SRV_TOKEN_ID_MAX 64u

/* The signing key: SRV_TOKEN_KEY_BYTES random bytes drawn the first time a
 * server of this process needs one, so that a token works only against
 * the server that issued it, and only until that server stops. */
#define SRV_TOKEN_KEY_BYTES 32

/* Whether `token` (NUL-terminated) is in the form this server issues
 * disposable tokens in. Says nothing of its signature. */
bool srv_token_is_disposable(const char *token, size_t len);
/* Whether `token` is a disposable token's or an API key's form. */
bool srv_token_is_issued(const char *token, size_t len);

/* A new token granting `perms` (a packed permission_messages.Permissions
 * that the caller has checked) until `valid_until` (seconds since the
 * epoch). Returns a malloc'd NUL-terminated string, or NULL (no memory). */
char *srv_token_sign(momento_local *s, const uint8_t *perms, size_t perms_len,
                     uint64_t valid_until);

/* On a new call (calls.c): 0 when `auth` (the `authorization` header, or
 * NULL) is neither a disposable token nor an API key; 1 when it is one this
 * server signed, has not expired and (a key) has not been refreshed away,
 * with *ret_valid_until (when not NULL) set to its expiry (seconds since
 * the epoch: it is expired once time(NULL) reaches it; 0 for a key that
 * never expires); -1 when it is one but forged, altered, expired or
 * refreshed away, with `r` set to UNAUTHENTICATED. */
int srv_token_authenticate(momento_local *s, const grpc_slice *auth, srv_reply *r,
                           uint64_t *ret_valid_until);

/* Whether the caller's key in the body of a request to the token or auth
 * service (RPC `m`: GenerateDisposableToken's or GenerateApiToken's
 * `auth_token`, RefreshApiToken's `api_key`) is `key`. `body` is the
 * request's wire bytes; a body that does not decode is not, nor is any
 * other RPC's. */
bool srv_token_request_key_is(momento__rpc_id m, grpc_slice body, const char *key);

/* Before a call is dispatched (calls.c): true when `auth` is not a
 * disposable token or API key, or is a valid one whose scope allows RPC `m`
 * on the cache and keys (or the topic) the call names (a super user's key
 * allows every call); else false with `r` set:
 * UNAUTHENTICATED (forged, altered, expired), PERMISSION_DENIED (outside
 * the scope; every control-plane and token-service call) or
 * INVALID_ARGUMENT (a body that does not decode). `cache` is the `cache`
 * header or NULL; `body` the request's wire bytes. */
bool srv_token_permits(momento_local *s, momento__rpc_id m, const grpc_slice *auth,
                       const grpc_slice *cache, grpc_slice body, srv_reply *r);

/* What a key in a request's body is (rpc_token.c, rpc_api_key.c). */
typedef struct srv_token_info {
    bool api_key;    /* an API key, else a disposable token */
    bool super_user; /* its scope is a super user's */
} srv_token_info;
/* 0 when `key` is neither a disposable token nor an API key; 1 when it is
 * a valid one, *ret filled; -1 (forged, altered, expired, refreshed away)
 * with `r` set to UNAUTHENTICATED. */
int srv_token_inspect(momento_local *s, const char *key, srv_reply *r, srv_token_info *ret);

/* A new API key and its refresh token (malloc'd, NUL-terminated; cleared
 * with srv_api_key_clear(), which wipes them), and when the key stops
 * working (0: never). */
typedef struct srv_api_key {
    char *key, *refresh_token;
    uint64_t valid_until;
} srv_api_key;
/* A new key granting `perms` (a packed permission_messages.Permissions the
 * caller has checked) for `lifetime` seconds (0: forever). 0, or -1 when
 * out of memory. Any thread. */
int srv_api_key_issue(momento_local *s, const uint8_t *perms, size_t perms_len, uint32_t lifetime,
                      srv_api_key *ret);
void srv_api_key_clear(srv_api_key *k);
/* RefreshApiToken: when `key` is a valid API key of this server and
 * `refresh_token` its refresh token, a new key with its scope and lifetime
 * in *ret, and `key` (with its refresh token) retired for good: 0. Else -1
 * with `r` set: UNAUTHENTICATED (not such a key, expired, refreshed away,
 * the wrong refresh token), or RESOURCE_EXHAUSTED (no memory). Any thread:
 * of two refreshes of one key, one wins. */
int srv_api_key_refresh(momento_local *s, const char *key, const char *refresh_token,
                        srv_reply *r, srv_api_key *ret);
#endif
