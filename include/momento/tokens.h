/*
 * Disposable tokens: short-lived keys limited to some caches, keys or key
 * prefixes, topics, and to reading, writing or both (docs/api.md
 * "Disposable tokens"); and API keys, which may also be super users, may
 * never expire, and come with a refresh token that trades them for a new
 * pair (docs/api.md "API keys"). Included by momento.h; the conventions at
 * the top of momento.h hold here too.
 *
 * A token is made in three steps: build a scope (momento_token_scope_*),
 * ask the token service for a token with it
 * (momento_generate_disposable_token), and make credentials from the
 * result's key (momento_credentials_from_api_key() for Momento,
 * momento_credentials_local_with_key() for a local server) for a new
 * client. A token is a secret like any key: the library never logs it.
 */
#ifndef MOMENTO_TOKENS_H
#define MOMENTO_TOKENS_H

#include "momento/momento.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What a grant allows. For caches: reading (Get, KeysExist, ItemGetTtl,
 * collection fetches, ...), writing (Set, Delete, collection writes, ...),
 * or both. Momento grants the writes that read as well (SetIf, Increment,
 * UpdateTtl, list pops, ...) only to MOMENTO_TOKEN_READ_WRITE. For topics:
 * subscribing (read), publishing (write), or both. The values are Momento's
 * own (CacheRole / TopicRole). */
typedef enum momento_token_role {
    MOMENTO_TOKEN_READ_WRITE = 1,
    MOMENTO_TOKEN_READ_ONLY = 2,
    MOMENTO_TOKEN_WRITE_ONLY = 3
} momento_token_role;

/* The longest token id, in bytes, as Momento allows. */
#define MOMENTO_DISPOSABLE_TOKEN_ID_MAX 64u

/* A list of grants; a token may do what any one of them allows. Built on one
 * thread (not safe for concurrent use), read by each
 * momento_generate_disposable_token() that is given it, which copies it:
 * a scope may be freed or changed as soon as that call returns. */
typedef struct momento_token_scope momento_token_scope;

/* Returns 0 with an empty scope in *ret, MOMENTO_ERR_INVALID_ARGUMENT when
 * `ret` is NULL, or MOMENTO_ERR_NO_MEMORY (then *ret is untouched). */
MOMENTO_EXPORT int momento_token_scope_new(momento_token_scope **ret);
/* As momento_token_scope_new(), a scope that grants everything, the
 * control plane (creating and deleting caches) and making API keys and
 * disposable tokens included: the SDKs' super-user scope. It takes no
 * grants (momento_token_scope_add_* refuse), and only
 * momento_generate_api_key() takes it: a disposable token cannot be a
 * super user. */
MOMENTO_EXPORT int momento_token_scope_new_super_user(momento_token_scope **ret);
/* Frees a scope (NULL is accepted). */
MOMENTO_EXPORT void momento_token_scope_free(momento_token_scope *scope);

/*
 * Adds a grant on every item of cache `cache` (NULL: of every cache).
 * `cache` is copied. Returns 0; MOMENTO_ERR_INVALID_ARGUMENT when `scope` is
 * NULL, `role` is not one of momento_token_role, or `cache` is "" or longer
 * than 255 bytes; MOMENTO_ERR_NO_MEMORY. A failed call leaves the scope as
 * it was.
 */
MOMENTO_EXPORT int momento_token_scope_add_cache(momento_token_scope *scope,
                                                 momento_token_role role, const char *cache);
/* As momento_token_scope_add_cache(), for the one key `key` (copied; not
 * empty) of `cache` (NULL: of every cache). For a collection the key is its
 * name. Also MOMENTO_ERR_INVALID_ARGUMENT when `key` is NULL or `key_len`
 * is 0. */
MOMENTO_EXPORT int momento_token_scope_add_cache_key(momento_token_scope *scope,
                                                     momento_token_role role, const char *cache,
                                                     const void *key, size_t key_len);
/* As momento_token_scope_add_cache_key(), for every key that starts with
 * `prefix` (copied; not empty). */
MOMENTO_EXPORT int momento_token_scope_add_cache_key_prefix(momento_token_scope *scope,
                                                            momento_token_role role,
                                                            const char *cache, const void *prefix,
                                                            size_t prefix_len);
/* Adds a grant on topic `topic` (NULL: every topic) of cache `cache` (NULL:
 * of every cache); both copied. Returns as momento_token_scope_add_cache(),
 * and MOMENTO_ERR_INVALID_ARGUMENT when `topic` is "". */
MOMENTO_EXPORT int momento_token_scope_add_topic(momento_token_scope *scope,
                                                 momento_token_role role, const char *cache,
                                                 const char *topic);
/* As momento_token_scope_add_topic(), for every topic whose name starts
 * with `prefix` (not NULL, not ""). */
MOMENTO_EXPORT int momento_token_scope_add_topic_prefix(momento_token_scope *scope,
                                                        momento_token_role role, const char *cache,
                                                        const char *prefix);
/* Adds the SDKs' AllDataReadWrite preset: MOMENTO_TOKEN_READ_WRITE on every
 * item of every cache and on every topic of every cache (not the control
 * plane, nor making keys). Returns 0; MOMENTO_ERR_INVALID_ARGUMENT when
 * `scope` is NULL or a super user's; MOMENTO_ERR_NO_MEMORY, the scope then
 * as it was. */
MOMENTO_EXPORT int momento_token_scope_add_all_data_read_write(momento_token_scope *scope);

/*
 * Asks the token service (the credentials' token endpoint: token.<base>
 * for Momento, the one address of a local server) for a token that may do
 * what `scope` allows for `expires_in_s` seconds. The client's own key
 * authenticates the request. `scope` and `token_id` (NULL for none; at most
 * MOMENTO_DISPOSABLE_TOKEN_ID_MAX bytes: Momento stamps it on the topic
 * messages the token publishes) are copied before this returns.
 *
 * Returns 0 when the request was accepted: `cb` then runs exactly once,
 * on the client's completion thread, with outcome MOMENTO_OUTCOME_SUCCESS
 * and the accessors below filled, or an error: MOMENTO_ERR_AUTHENTICATION
 * (the client's key was refused), MOMENTO_ERR_PERMISSION (the client's key
 * may not make tokens: a disposable token may not), MOMENTO_ERR_INVALID_ARGUMENT
 * (the service refused the scope), and the errors any request can end with.
 * Returns without calling back: MOMENTO_ERR_INVALID_ARGUMENT when `c`,
 * `scope` or `cb` is NULL, the scope has no grant, `expires_in_s` is 0 (a
 * disposable token must expire; there is no upper bound), or `token_id` is too
 * long or not UTF-8; MOMENTO_ERR_NO_MEMORY; MOMENTO_ERR_CLOSED once
 * momento_client_free() has begun; MOMENTO_ERR_CANCELLED when the options'
 * cancel token has fired. Not retried: the official SDKs do not retry it.
 */
MOMENTO_EXPORT int momento_generate_disposable_token(momento_client *c,
                                                     const momento_token_scope *scope,
                                                     uint32_t expires_in_s, const char *token_id,
                                                     const momento_request_options *opts,
                                                     momento_callback cb, void *userdata);
/* Blocking form: returns what the async call or its result says; *ret
 * as for every _sync function (momento.h): the caller frees it with
 * momento_result_free(). */
MOMENTO_EXPORT int
momento_generate_disposable_token_sync(momento_client *c, const momento_token_scope *scope,
                                       uint32_t expires_in_s, const char *token_id,
                                       const momento_request_options *opts, momento_result **ret);

/*
 * The new token as a key: base64 of {"endpoint": ..., "api_key": ...}, the
 * form Momento's SDKs hand out and momento_credentials_from_api_key() reads.
 * A secret: do not log it. "" when `r` is NULL or holds no token. Borrowed
 * from `r`: valid while `r` is (until the callback returns, or until a
 * copy's momento_result_free()).
 */
MOMENTO_EXPORT const char *momento_result_token_api_key(const momento_result *r);
/* The base endpoint the token works against; "" when there is none. Borrowed
 * as momento_result_token_api_key(). */
MOMENTO_EXPORT const char *momento_result_token_endpoint(const momento_result *r);
/* When the token stops working, in seconds since the epoch; 0 when `r`
 * holds no token, or holds an API key that never expires. */
MOMENTO_EXPORT uint64_t momento_result_token_valid_until(const momento_result *r);
/* The refresh token of a new API key (momento_generate_api_key(),
 * momento_refresh_api_key()): what momento_refresh_api_key() takes with
 * the key. A secret like the key: do not log it. "" when `r` is NULL or
 * holds no API key (a disposable token has none). Borrowed as
 * momento_result_token_api_key(); momento_result_dup() copies it. */
MOMENTO_EXPORT const char *momento_result_token_refresh_token(const momento_result *r);

/* ---------------------------------------------------------------- api keys */

/* momento_generate_api_key()'s `expires_in_s` for a key that never
 * expires. */
#define MOMENTO_API_KEY_NEVER_EXPIRES UINT32_MAX

/*
 * Asks Momento's auth service (the credentials' control endpoint:
 * control.<base> for Momento, the one address of a local server) for an
 * API key that may do what `scope` allows - a super user's
 * (momento_token_scope_new_super_user()) or explicit grants, such as
 * momento_token_scope_add_all_data_read_write()'s - for `expires_in_s`
 * seconds, or forever when it is MOMENTO_API_KEY_NEVER_EXPIRES. The
 * client's own key authenticates the request (sent in its body, where the
 * service reads it). `scope` is copied before this returns.
 *
 * Returns 0 when the request was accepted: `cb` then runs exactly once,
 * on the client's completion thread, with outcome MOMENTO_OUTCOME_SUCCESS
 * and the key, its refresh token, endpoint and expiry in the
 * momento_result_token_* accessors, or an error: MOMENTO_ERR_AUTHENTICATION
 * (the client's key was refused: unknown, expired, refreshed away),
 * MOMENTO_ERR_PERMISSION (the client's key may not make this key: only a
 * super user makes keys, and Momento lets a super-user API key make
 * explicit keys but not super users), MOMENTO_ERR_INVALID_ARGUMENT (the
 * service refused the scope or expiry), and the errors any request can end
 * with. Returns without calling back: MOMENTO_ERR_INVALID_ARGUMENT when
 * `c`, `scope` or `cb` is NULL, the scope grants nothing (neither a super
 * user's nor one with a grant), or `expires_in_s` is 0;
 * MOMENTO_ERR_NO_MEMORY; MOMENTO_ERR_CLOSED once momento_client_free() has
 * begun; MOMENTO_ERR_CANCELLED when the options' cancel token has fired.
 * Not retried: the official SDKs do not retry it.
 */
MOMENTO_EXPORT int momento_generate_api_key(momento_client *c, const momento_token_scope *scope,
                                            uint32_t expires_in_s,
                                            const momento_request_options *opts,
                                            momento_callback cb, void *userdata);
/* Blocking form: returns what the async call or its result says; *ret
 * as for every _sync function (momento.h): the caller frees it with
 * momento_result_free(). */
MOMENTO_EXPORT int momento_generate_api_key_sync(momento_client *c,
                                                 const momento_token_scope *scope,
                                                 uint32_t expires_in_s,
                                                 const momento_request_options *opts,
                                                 momento_result **ret);

/*
 * Trades an API key and its refresh token for a new key and refresh token
 * with the same scope, valid for as long again from now as the old key was
 * when it was made (a key that never expires stays so). Once it has
 * succeeded, the old key and the old refresh token no longer work.
 * `api_key` is the key to refresh, in the form
 * momento_result_token_api_key() gives or as the bare token, or NULL for
 * the client's own key (as the official SDKs refresh theirs);
 * `refresh_token` is the one momento_result_token_refresh_token() gave with
 * it. Both are copied before this returns and never logged.
 *
 * Returns 0 when the request was accepted: `cb` then runs exactly once,
 * on the client's completion thread, with outcome MOMENTO_OUTCOME_SUCCESS
 * and the accessors as for momento_generate_api_key(), or an error:
 * MOMENTO_ERR_AUTHENTICATION (the key is unknown, expired or refreshed
 * away, or the refresh token is not the key's), MOMENTO_ERR_INVALID_ARGUMENT,
 * and the errors any request can end with. Returns without calling back:
 * MOMENTO_ERR_INVALID_ARGUMENT when `c`, `refresh_token` or `cb` is NULL,
 * `refresh_token` or the key is empty or holds whitespace, a control or a
 * non-ASCII character (momento_refusal_reason() says which, with no part of
 * either); MOMENTO_ERR_NO_MEMORY; MOMENTO_ERR_CLOSED; MOMENTO_ERR_CANCELLED,
 * as momento_generate_api_key(). Not retried.
 */
MOMENTO_EXPORT int momento_refresh_api_key(momento_client *c, const char *api_key,
                                           const char *refresh_token,
                                           const momento_request_options *opts,
                                           momento_callback cb, void *userdata);
/* Blocking form: as momento_generate_api_key_sync(). */
MOMENTO_EXPORT int momento_refresh_api_key_sync(momento_client *c, const char *api_key,
                                                const char *refresh_token,
                                                const momento_request_options *opts,
                                                momento_result **ret);

/*
 * Credentials for a local server at `host_port` (as momento_credentials_local())
 * that send `api_key`: a key as momento_result_token_api_key() gives it
 * (the token inside it is sent), or a bare token (sent as it is). Returns 0,
 * MOMENTO_ERR_NO_MEMORY, or MOMENTO_ERR_INVALID_ARGUMENT when an argument is
 * NULL, `host_port` is not host:port, or the token has a control or non-ASCII
 * character; momento_refusal_reason() then says which, never with any part
 * of the key.
 */
MOMENTO_EXPORT int momento_credentials_local_with_key(momento_credentials **ret,
                                                      const char *host_port, const char *api_key);

#ifdef __cplusplus
}
#endif

#endif /* MOMENTO_TOKENS_H */
