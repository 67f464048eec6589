/* Disposable tokens (tokens.c): momento-local issues them
 * (GenerateDisposableToken, rpc_token.c) and, on every later call that
 * carries one, checks its signature and expiry and holds the call to its
 * scope (docs/server.md "Disposable tokens"). Server thread only. */
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

/* Whether `token` (NUL-terminated) is in the form this server issues.
 * Says nothing of its signature. */
bool srv_token_is_disposable(const char *token, size_t len);

/* A new token granting `perms` (a packed permission_messages.Permissions
 * that the caller has checked) until `valid_until` (seconds since the
 * epoch). Returns a malloc'd NUL-terminated string, or NULL (no memory). */
char *srv_token_sign(momento_local *s, const uint8_t *perms, size_t perms_len,
                     uint64_t valid_until);

/* On a new call (calls.c): 0 when `auth` (the `authorization` header, or
 * NULL) is not a disposable token; 1 when it is one this server signed and
 * it has not expired, with *ret_valid_until (when not NULL) set to its
 * expiry (seconds since the epoch: it is expired once time(NULL) reaches
 * it); -1 when it is one but forged, altered or expired, with `r` set to
 * UNAUTHENTICATED. */
int srv_token_authenticate(momento_local *s, const grpc_slice *auth, srv_reply *r,
                           uint64_t *ret_valid_until);

/* Whether a GenerateDisposableToken request's `auth_token` (the caller's
 * key, which the token service reads from the body) is `key`. `body` is
 * the request's wire bytes; a body that does not decode is not. */
bool srv_token_request_key_is(grpc_slice body, const char *key);

/* Before a call is dispatched (calls.c): true when `auth` is not a
 * disposable token, or is a valid one whose scope allows RPC `m` on the
 * cache and keys (or the topic) the call names; else false with `r` set:
 * UNAUTHENTICATED (forged, altered, expired), PERMISSION_DENIED (outside
 * the scope; every control-plane and token-service call) or
 * INVALID_ARGUMENT (a body that does not decode). `cache` is the `cache`
 * header or NULL; `body` the request's wire bytes. */
bool srv_token_permits(momento_local *s, momento__rpc_id m, const grpc_slice *auth,
                       const grpc_slice *cache, grpc_slice body, srv_reply *r);

#endif
