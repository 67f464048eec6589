/* Argument checks at the public boundary (validate.c): a request that fails
 * one is never sent, and its caller gets MOMENTO_ERR_INVALID_ARGUMENT with no
 * callback. The request checks combine the single checks for each shape of
 * request; each op names the one that fits it. */
#ifndef MOMENTO_VALIDATE_H
#define MOMENTO_VALIDATE_H

#include "momento/momento.h"

#include <stdbool.h>
#include <stddef.h>

/* Returns from the enclosing function when `expr` is a negative error. */
#define MOMENTO__CHECK(expr)                                                                       \
    do {                                                                                           \
        int rc_ = (expr);                                                                          \
        if (rc_ < 0)                                                                               \
            return rc_;                                                                            \
    } while (0)

/* gRPC message limits: room for a 5 MiB item plus framing, as the official
 * SDKs allow; requests beyond MOMENTO__MAX_REQUEST_BYTES are refused before
 * sending. */
#define MOMENTO__MAX_MESSAGE_BYTES ((int)MOMENTO_MAX_MESSAGE_BYTES)
#define MOMENTO__MAX_REQUEST_BYTES (MOMENTO__MAX_MESSAGE_BYTES - 64 * 1024)

/* Refusals say why (momento_refusal_reason(), a thread-local explanation,
 * which a blocking call copies into the error result it returns):
 * momento__refuse() records it and returns `err`; _clear() forgets the
 * last one (every request's checks start with it). */
int momento__refuse(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void momento__refusal_clear(void);

/* Single checks. Each returns 0 or MOMENTO_ERR_INVALID_ARGUMENT (after
 * momento__refuse() with what was wrong). */

/* What is wrong with one extra header (a request's, or the config's), or
 * NULL: the rules of momento_request_options.headers. */
const char *momento__header_problem(const char *name, const char *value);
/* 1..255 bytes of UTF-8 without control characters (it travels as a header). */
int momento__check_cache_name(const char *cache);
/* 1..MOMENTO_MAX_ITEM_BYTES bytes, not NULL. */
int momento__check_key(const void *key, size_t key_len);
/* A key as above and a value (NULL only when empty) within the item limit. */
int momento__check_item(const void *key, size_t key_len, const void *value, size_t value_len);
/* At most MOMENTO_MAX_TTL_MS; 0 means the default TTL. */
int momento__check_ttl(uint64_t ttl_ms);
/* A known condition, and for those that compare, a comparand (NULL only
 * when empty) within the item limit; a hash condition's is never empty. */
int momento__check_condition(momento_condition condition, const void *compare,
                             size_t compare_len);

/* A topic name: NUL-terminated valid UTF-8 (a protobuf string), not empty
 * nor only whitespace (the SDKs' "topic name must not be empty"), within
 * one request. */
int momento__check_topic_name(const char *topic);
/* Whether `n` bytes at `p` are valid UTF-8 (control characters allowed):
 * a plain answer, for what arrives rather than what is refused. */
bool momento__is_utf8(const void *p, size_t n);
/* Bytes that travel as a protobuf string: valid UTF-8 (control characters
 * allowed). */
int momento__check_utf8(const void *p, size_t n);

/* Request options: NULL, or a known size (momento.h) and a timeout within
 * MOMENTO__MAX_TIMEOUT_MS. */
#define MOMENTO__MAX_TIMEOUT_MS 86400000u
int momento__check_options(const momento_request_options *opts);
/* What is wrong with non-NULL `opts`, or NULL. */
const char *momento__options_problem(const momento_request_options *opts);
/* A field of checked options, or 0 when `opts` is NULL or its `size` stops
 * before the field (a program built against an older header). */
#define MOMENTO__OPT(opts, field)                                                                  \
    ((opts) && (opts)->size >= offsetof(momento_request_options, field) + sizeof((opts)->field)    \
         ? (opts)->field                                                                           \
         : 0)

/* Request checks, by the shape of the request. Each checks the options
 * too. */

/* A client, options and a callback: ping, list caches. */
int momento__check_request(const momento_client *c, const momento_request_options *opts,
                           momento_callback cb);
/* ... and a cache name: the control calls on one cache. */
int momento__check_cache_request(const momento_client *c, const char *cache,
                                 const momento_request_options *opts, momento_callback cb);
/* ... and a key: get, delete, increment, item TTL and type, TTL updates. */
int momento__check_key_request(const momento_client *c, const char *cache, const void *key,
                               size_t key_len, const momento_request_options *opts,
                               momento_callback cb);
/* ... and a value and TTL: set, conditional sets. */
int momento__check_item_request(const momento_client *c, const char *cache, const void *key,
                                size_t key_len, const void *value, size_t value_len,
                                uint64_t ttl_ms, const momento_request_options *opts,
                                momento_callback cb);
/* ... and n >= 1 keys (with values when `values` is not NULL), each as its
 * single-key request would be, the whole within one request message:
 * keys exist, get and set batches. */
int momento__check_keys_request(const momento_client *c, const char *cache, const void *const *keys,
                                const size_t *key_lens, const void *const *values,
                                const size_t *value_lens, size_t n,
                                const momento_request_options *opts, momento_callback cb);

#endif
