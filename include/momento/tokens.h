/*
 * Disposable tokens: short-lived keys limited to some caches, keys or key
 * prefixes, topics, and to reading, writing or both (docs/api.md
 * "Disposable tokens"). Included by momento.h; the conventions at the top of
 * momento.h hold here too.
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
 * holds no token. */
MOMENTO_EXPORT uint64_t momento_result_token_valid_until(const momento_result *r);

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
