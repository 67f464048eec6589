/* What the collection families (op_dictionary.c, op_set.c, op_list.c,
 * op_sorted_set.c) share: argument checks, CollectionTtl, request arrays and
 * result items (collection.c), the length reads' decoder. */
#ifndef MOMENTO_COLLECTION_H
#define MOMENTO_COLLECTION_H

#include "base/alloc.h"
#include "layers/coalescer.h"
#include "ops/op.h"

/* A request on one collection: the checks of a key request (momento.h),
 * the collection's name as its key. Returns 0 or an error to return. */
int momento__check_coll_request(const momento_client *c, const char *cache, const void *name,
                                size_t name_len, const momento_request_options *opts,
                                momento_callback cb);

/* Counts the bytes a request will carry against the message limit. */
typedef struct momento__size {
    size_t total;
} momento__size;

/* One field, element or value: may be empty, NULL only when empty; adds it
 * to `sz`. Returns 0 or MOMENTO_ERR_INVALID_ARGUMENT (also when the request
 * would exceed the limit). */
int momento__check_blob(momento__size *sz, const void *p, size_t len);
/* n >= 1 of them, `items` and `lens` not NULL. */
int momento__check_blobs(momento__size *sz, const void *const *items, const size_t *lens,
                         size_t n);

/* A slice [start, end) of a list or of a sorted set's ranks, as
 * collections.h describes it: MOMENTO_ERR_INVALID_ARGUMENT when it is empty
 * whatever the length (0 <= end <= start, or end <= start < 0), else 0. On
 * the wire, start 0 and end MOMENTO_END travel as unbounded, as the
 * official SDKs send them. */
int momento__check_slice(int32_t start, int32_t end);

/* Resolves a CollectionTtl (NULL: MOMENTO_COLLECTION_TTL_DEFAULT) against
 * the client's default TTL. Returns 0 or MOMENTO_ERR_INVALID_ARGUMENT (a TTL
 * over MOMENTO_MAX_TTL_MS). */
int momento__coll_ttl(const momento_client *c, const momento_collection_ttl *ttl,
                      uint64_t *ret_ttl_ms, protobuf_c_boolean *ret_refresh);

/* The n byte strings as a request's repeated bytes field: an array of
 * borrowed ProtobufCBinaryData, freed with free() once the request is
 * sent. NULL when out of memory. */
ProtobufCBinaryData *momento__blob_array(const void *const *items, const size_t *lens, size_t n);

/* n result items (n may be 0) for a decoder, freed with `scratch`; each
 * with an empty message, no gRPC status of its own and `outcome`. NULL
 * when out of memory. */
momento_result *momento__items_new(momento__scratch *scratch, size_t n, momento_outcome outcome);

/* A request for one element sent as its many-element form with n = 1, as
 * the official SDKs send them (a get of one dictionary field, the score of
 * one sorted-set element): its callback gets the one item as the whole
 * result (outcome, value, field, score), or MOMENTO_ERR_BAD_RESPONSE when a
 * hit does not carry exactly one item.
 *
 * momento__one_item_new() wraps the caller's `cb` and `userdata` (NULL when
 * out of memory); submit the many-element call with momento__one_item_done
 * and the wrapper as its callback and userdata, and free() the wrapper when
 * that submit fails (no callback follows then). The callback frees it. */
void *momento__one_item_new(momento_callback cb, void *userdata);
void momento__one_item_done(const momento_result *r, void *one);

/* Where a collection request goes: a client's plain call, or a
 * coalescer's shared read. */
typedef struct momento__target {
    momento_client *client;
    momento_coalescer *co;
} momento__target;

static inline momento__target momento__to_client(momento_client *c)
{
    momento__target t = {c, NULL};
    return t;
}

static inline momento__target momento__to_coalescer(momento_coalescer *co)
{
    momento__target t = {momento__coalescer_client(co), co};
    return t;
}

/* Sends a checked read of `name` to `t`. */
int momento__coll_read(momento__target t, momento__rpc_id rpc, momento__decode_fn decode,
                       const char *cache, const void *name, size_t name_len,
                       const ProtobufCMessage *req, const momento_request_options *opts,
                       momento_callback cb, void *userdata);
/* Sends a checked write of `name` through `c`, closing the key's open reads
 * in its coalescers first (read-your-writes). */
int momento__coll_write(momento_client *c, momento__rpc_id rpc, momento__decode_fn decode,
                        const char *cache, const void *name, size_t name_len,
                        const ProtobufCMessage *req, const momento_request_options *opts,
                        momento_callback cb, void *userdata);

/* A found collection's elements (set fetch, sample, pop; list fetch) as
 * `r`'s items, each a HIT with its value: outcome HIT. Returns 0 or
 * MOMENTO_ERR_NO_MEMORY. */
int momento__decode_values(momento_result *r, momento__scratch *scratch, size_t n,
                           const ProtobufCBinaryData *values);

/* A protobuf byte string as a result's bytes: never NULL, so that an empty
 * field or element still reads as present. */
static inline const uint8_t *momento__data(const ProtobufCBinaryData *b)
{
    return b->data ? b->data : (const uint8_t *)"";
}

/* Defines the decoder of a collection's length read (ListLength,
 * SetLength, DictionaryLength, SortedSetLength, and SortedSetLengthByScore,
 * a count of some of the elements): the reply is found, with the length
 * (HIT, momento_result_int()), or missing (MISS). The five replies differ
 * only in their names. */
#define MOMENTO__LENGTH_READ_DECODER(fn, ID, Type, which, PREFIX)                                  \
    MOMENTO__FOUND_NUMBER_DECODER(fn, ID, Type, which, PREFIX, MOMENTO_OUTCOME_HIT, int_value,     \
                                  length)

#endif
