/* The result a callback reads (result.c): one struct for every operation,
 * filled by the decoders; owned copies for blocking calls. */
#ifndef MOMENTO_RESULT_H
#define MOMENTO_RESULT_H

#include "momento/momento.h"

struct momento_result {
    int error;
    int grpc_status;
    momento_outcome outcome;
    const char *message;      /* never NULL */
    const char *error_detail; /* `err` trailer or NULL */
    const uint8_t *value;
    size_t value_len;
    int attempts;             /* how many tries it took */
    /* The momento_metrics_transport of the last attempt (for the metrics
     * record; no getter): set with `attempts` by call.c, carried where a
     * result stands for a shared RPC's; 0 (NONE) on a local result. */
    int transport;
    int64_t int_value;        /* increment */
    uint64_t ttl_ms;          /* item_get_ttl */
    momento_item_type item_type; /* item_get_type */
    size_t n_caches;
    const char *const *caches;
    const momento_cache_limits *cache_limits; /* n_caches of them, beside the names */
    size_t n_exists;          /* keys_exist / key_exists */
    const uint8_t *exists;
    const uint8_t *field;     /* a dictionary entry's field */
    size_t field_len;
    double score;             /* a sorted-set element's or score answer; a leaderboard element's */
    uint32_t element_id;      /* a leaderboard element's id (its rank is int_value) */
    size_t n_items;           /* batches, in request order; a collection's elements */
    const momento_result *items;
    const char *next_token;   /* ListCaches paging; NULL or "" on the last page */
    const uint8_t *hash;      /* get_with_hash HIT, hash-conditional STORED; else NULL */
    size_t hash_len;
    const char *refresh_token; /* an API key's (a secret); NULL for other results */
    const char *webhook_secret; /* a webhook's signing secret (a secret); NULL for others */
    const struct momento_webhook *webhooks; /* a webhook listing's, get_secret's one */
    size_t n_webhooks;
    const momento_metadata *trailers; /* the reply's trailing metadata, borrowed */
    size_t n_trailers;
    /* The RPC whose reply this is, + 1 (call.c); 0 for a result made
     * without one. Lets accessors of fields that several RPCs reuse tell
     * whose they are. */
    int rpc;
};

/* A result that failed before reaching gRPC. */
void momento__result_local_error(momento_result *r, int err, const char *message);

/* momento_result_dup() in two steps, for a caller that keeps the copy in
 * memory of its own (the dispatch queue's entries): the bytes a copy of `r`
 * takes, and the copy made in `mem` (that many bytes, aligned as
 * malloc()'s). The copy points only into `mem`. */
size_t momento__result_copy_size(const momento_result *r);
momento_result *momento__result_copy_into(const momento_result *r, void *mem);

#endif
