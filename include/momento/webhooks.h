/*
 * Webhooks: a webhook belongs to a cache and listens to one of its topics;
 * Momento POSTs every item published to that topic to the webhook's URL,
 * as a JSON body signed with the webhook's secret (docs/api.md
 * "Webhooks"). Included by momento.h; the conventions at the top of
 * momento.h hold here too.
 *
 * The five requests go to the control endpoint with the client's key, as
 * the official SDKs' WebhookClient sends them; none is retried (none is in
 * the SDKs' retry list). Each is async with exactly one callback, or
 * `_sync`, and takes momento_request_options like every request.
 *
 * A webhook's secret is a secret: the library never logs it, and no error
 * message holds any part of it. An application that receives deliveries
 * checks each with momento_webhook_signature_valid(), which needs no client.
 */
#ifndef MOMENTO_WEBHOOKS_H
#define MOMENTO_WEBHOOKS_H

#include "momento/momento.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One webhook, as momento_result_webhook() hands it out: NUL-terminated
 * strings, never NULL ("" for what the server did not send), borrowed from
 * the result (valid while it is: until the callback returns, or until a
 * copy's momento_result_free()). Fields are only ever appended. */
typedef struct momento_webhook {
    const char *cache; /* the cache it belongs to */
    const char *name;  /* its name, unique within the cache */
    const char *topic; /* the topic of that cache it listens to */
    const char *url;   /* where each item is POSTed */
} momento_webhook;

/*
 * Makes webhook `name` of cache `cache`, listening to `topic` of that cache
 * and POSTing each item published there to `url`; or, when the cache has a
 * webhook of that name, points it at `topic` and `url` (its secret stays).
 * `cache`, `name` and `topic` are NUL-terminated UTF-8 and not empty (the
 * SDKs' checks; Momento limits a name to 128 characters, which the server
 * checks), `url` is NUL-terminated UTF-8 and not empty; all are copied
 * before this returns. Momento takes https:// and http:// URLs;
 * momento-local only http:// ones (it answers others INVALID_ARGUMENT).
 *
 * Returns 0 when the request was accepted: `cb` then runs exactly once, on
 * the client's completion thread, with outcome MOMENTO_OUTCOME_SUCCESS and
 * the webhook's signing secret (momento_result_webhook_secret()), or an
 * error: MOMENTO_ERR_CACHE_NOT_FOUND (no such cache), MOMENTO_ERR_INVALID_ARGUMENT
 * (the server refused a name, topic or URL), MOMENTO_ERR_PERMISSION (a
 * disposable token, or a key without control-plane rights), and the errors
 * every request may end with (momento.h). A submit that fails returns, and
 * never calls back: MOMENTO_ERR_INVALID_ARGUMENT (NULL `c`, `cb` or string;
 * an empty or non-UTF-8 string; a blank topic; bad `opts`; the reason in
 * momento_refusal_reason()), MOMENTO_ERR_CLOSED, MOMENTO_ERR_NO_MEMORY.
 * Thread rules as momento.h's async calls.
 */
MOMENTO_EXPORT int momento_webhook_put(momento_client *c, const char *cache, const char *name,
                                       const char *topic, const char *url,
                                       const momento_request_options *opts, momento_callback cb,
                                       void *userdata);
/* momento_webhook_put(), waited for, as momento.h's `_sync` calls are:
 * returns the request's error (0 on success) with its result in *ret,
 * the caller's to momento_result_free() (a refused submit's result holds
 * the reason); MOMENTO_ERR_WOULD_DEADLOCK on the client's completion
 * thread. */
MOMENTO_EXPORT int momento_webhook_put_sync(momento_client *c, const char *cache,
                                            const char *name, const char *topic, const char *url,
                                            const momento_request_options *opts,
                                            momento_result **ret);

/*
 * Deletes webhook `name` of cache `cache`: nothing more is delivered to it
 * from this answer on. Outcome MOMENTO_OUTCOME_SUCCESS, also when the cache
 * has no webhook of that name (momento-local answers so; deleting is
 * idempotent); MOMENTO_ERR_CACHE_NOT_FOUND when there is no such cache.
 * Arguments, return codes and the `_sync` form as momento_webhook_put().
 */
MOMENTO_EXPORT int momento_webhook_delete(momento_client *c, const char *cache, const char *name,
                                          const momento_request_options *opts,
                                          momento_callback cb, void *userdata);
MOMENTO_EXPORT int momento_webhook_delete_sync(momento_client *c, const char *cache,
                                               const char *name,
                                               const momento_request_options *opts,
                                               momento_result **ret);

/*
 * Lists every webhook of cache `cache` (one reply, no paging): outcome
 * MOMENTO_OUTCOME_SUCCESS with momento_result_webhook_count() webhooks,
 * read with momento_result_webhook() (no secrets: ask
 * momento_webhook_get_secret() for one); MOMENTO_ERR_CACHE_NOT_FOUND when
 * there is no such cache. Arguments, return codes and the `_sync` form as
 * momento_webhook_put().
 */
MOMENTO_EXPORT int momento_webhook_list(momento_client *c, const char *cache,
                                        const momento_request_options *opts, momento_callback cb,
                                        void *userdata);
MOMENTO_EXPORT int momento_webhook_list_sync(momento_client *c, const char *cache,
                                             const momento_request_options *opts,
                                             momento_result **ret);

/*
 * The current signing secret of webhook `name` of cache `cache`: outcome
 * MOMENTO_OUTCOME_SUCCESS with it in momento_result_webhook_secret(), and
 * one webhook (momento_result_webhook(r, 0)) holding the cache and name the
 * server answered for (its topic and URL ""). A missing webhook or cache is
 * NOT_FOUND, which the library reports as MOMENTO_ERR_CACHE_NOT_FOUND (as
 * the official SDKs report every NOT_FOUND of these requests; the message
 * says which). Arguments, return codes and the `_sync` form as
 * momento_webhook_put().
 */
MOMENTO_EXPORT int momento_webhook_get_secret(momento_client *c, const char *cache,
                                              const char *name,
                                              const momento_request_options *opts,
                                              momento_callback cb, void *userdata);
MOMENTO_EXPORT int momento_webhook_get_secret_sync(momento_client *c, const char *cache,
                                                   const char *name,
                                                   const momento_request_options *opts,
                                                   momento_result **ret);

/*
 * Gives webhook `name` of cache `cache` a new signing secret, which signs
 * every delivery from then on; the old one is gone. Outcome
 * MOMENTO_OUTCOME_SUCCESS with the new secret in
 * momento_result_webhook_secret(); errors as momento_webhook_get_secret().
 * Arguments, return codes and the `_sync` form as momento_webhook_put().
 */
MOMENTO_EXPORT int momento_webhook_rotate_secret(momento_client *c, const char *cache,
                                                 const char *name,
                                                 const momento_request_options *opts,
                                                 momento_callback cb, void *userdata);
MOMENTO_EXPORT int momento_webhook_rotate_secret_sync(momento_client *c, const char *cache,
                                                      const char *name,
                                                      const momento_request_options *opts,
                                                      momento_result **ret);

/*
 * The signing secret a successful momento_webhook_put(),
 * momento_webhook_get_secret() or momento_webhook_rotate_secret() answered;
 * "" for any other result, or NULL `r`. A secret: do not log it. Borrowed
 * from `r` (valid while it is); momento_result_dup() copies it.
 */
MOMENTO_EXPORT const char *momento_result_webhook_secret(const momento_result *r);
/* How many webhooks `r` holds: a momento_webhook_list()'s, one for a
 * momento_webhook_get_secret(), 0 for anything else or NULL `r`. */
MOMENTO_EXPORT size_t momento_result_webhook_count(const momento_result *r);
/* Webhook `i` of `r` (0 .. count - 1), in the server's order (momento-local:
 * by name); NULL past the end or for NULL `r`. Borrowed from `r`, as its
 * strings are; momento_result_dup() copies them all. */
MOMENTO_EXPORT const momento_webhook *momento_result_webhook(const momento_result *r, size_t i);

/* A signature as Momento sends it in a delivery's `momento-signature`
 * header: lowercase hex of an HMAC-SHA3-256, 64 characters. */
#define MOMENTO_WEBHOOK_SIGNATURE_HEX_LEN 64

/*
 * Whether `signature_hex` (a delivery's `momento-signature` header, NUL-
 * terminated) signs the `body_len` bytes of `body` (the request body
 * exactly as received, before any parsing) with `secret` (the webhook's
 * signing secret, NUL-terminated), as Momento signs deliveries: the
 * HMAC-SHA3-256 of the body keyed with the secret's bytes, in hex. Compared
 * in constant time; hex digits of either case are taken.
 *
 * Returns 1 when it does, 0 when it does not (another secret, an altered
 * body, a signature that is not 64 hex digits), MOMENTO_ERR_INVALID_ARGUMENT
 * for a NULL `signature_hex` or `secret`, or a NULL `body` with a length
 * other than 0, MOMENTO_ERR_NO_MEMORY when the hash could not be set up.
 * Needs no client; any thread; logs nothing.
 */
MOMENTO_EXPORT int momento_webhook_signature_valid(const void *body, size_t body_len,
                                                   const char *signature_hex, const char *secret);
/*
 * Writes the signature of `body` with `secret`, as Momento would send it
 * (MOMENTO_WEBHOOK_SIGNATURE_HEX_LEN lowercase hex digits and a NUL), into
 * `out`, which holds at least MOMENTO_WEBHOOK_SIGNATURE_HEX_LEN + 1 bytes:
 * for tests that sign requests of their own, as Momento's docs suggest.
 * Returns 0; MOMENTO_ERR_INVALID_ARGUMENT for a NULL `out` or `secret`, or a
 * NULL `body` with a length other than 0 (`out` untouched);
 * MOMENTO_ERR_NO_MEMORY. Any thread.
 */
MOMENTO_EXPORT int momento_webhook_sign(const void *body, size_t body_len, const char *secret,
                                        char *out);

#ifdef __cplusplus
}
#endif

#endif /* MOMENTO_WEBHOOKS_H */
