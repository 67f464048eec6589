/* Get and set batches over Momento's server-streaming RPCs: one request
 * carrying every key, one response message per key, in order, gathered into
 * a single result whose items are the per-key results (the decoders are
 * kv_send.c's, which the batcher's batches use too). */
#include "layers/write.h"
#include "ops/op.h"

#include "base/alloc.h"

#include "cacheclient.pb-c.h"

#include <stdlib.h>

int momento_get_batch(momento_client *c, const char *cache, const void *const *keys,
                      const size_t *key_lens, size_t n, const momento_request_options *opts,
                      momento_callback cb, void *userdata)
{
    MOMENTO__CHECK(momento__check_keys_request(c, cache, keys, key_lens, NULL, NULL, n, opts, cb));
    CacheClient__GetRequest *items = momento__malloc(n * sizeof(*items));
    CacheClient__GetRequest **ptrs = momento__malloc(n * sizeof(*ptrs));
    if (!items || !ptrs) {
        free(items);
        free(ptrs);
        return MOMENTO_ERR_NO_MEMORY;
    }
    for (size_t i = 0; i < n; i++) {
        cache_client____get_request__init(&items[i]);
        items[i].cache_key.data = (uint8_t *)keys[i];
        items[i].cache_key.len = key_lens[i];
        ptrs[i] = &items[i];
    }
    CacheClient__GetBatchRequest req = CACHE_CLIENT____GET_BATCH_REQUEST__INIT;
    req.n_items = n;
    req.items = ptrs;
    /* One reply per key, no more, no less (a misbehaving server could send
     * any number). */
    momento__call_opts resolved;
    momento__call_opts_from(c, opts, &resolved);
    resolved.expect_msgs = n;
    int rc = momento__call_start_with(c, MOMENTO__RPC_GET_BATCH, momento__decode_get_batch, cache,
                                      &req.base, &resolved, cb, userdata);
    free(items); /* packed at submit */
    free(ptrs);
    return rc;
}

int momento_get_batch_sync(momento_client *c, const char *cache, const void *const *keys,
                           const size_t *key_lens, size_t n, const momento_request_options *opts,
                           momento_result **ret)
{
    momento__blocking b;
    MOMENTO__CHECK(momento__blocking_begin(&b, c, ret));
    return momento__blocking_wait(
        &b, momento_get_batch(c, cache, keys, key_lens, n, opts, momento__blocking_done, &b), ret);
}

int momento_set_batch(momento_client *c, const char *cache, const void *const *keys,
                      const size_t *key_lens, const void *const *values, const size_t *value_lens,
                      size_t n, uint64_t ttl_ms, const momento_request_options *opts,
                      momento_callback cb, void *userdata)
{
    /* Prepared once (write.c): compressed, checked, coalescers told. */
    momento__writes w;
    MOMENTO__CHECK(momento__writes_begin(&w, c, cache, keys, key_lens, values, value_lens, n,
                                         ttl_ms, opts, cb));
    values = w.values;
    value_lens = w.value_lens;
    CacheClient__SetRequest *items = momento__malloc(n * sizeof(*items));
    CacheClient__SetRequest **ptrs = momento__malloc(n * sizeof(*ptrs));
    if (!items || !ptrs) {
        free(items);
        free(ptrs);
        momento__writes_end(&w);
        return MOMENTO_ERR_NO_MEMORY;
    }
    uint64_t ttl = w.ttl_ms;
    for (size_t i = 0; i < n; i++) {
        cache_client____set_request__init(&items[i]);
        items[i].cache_key.data = (uint8_t *)keys[i];
        items[i].cache_key.len = key_lens[i];
        items[i].cache_body.data = (uint8_t *)values[i];
        items[i].cache_body.len = value_lens[i];
        items[i].ttl_milliseconds = ttl;
        ptrs[i] = &items[i];
    }
    CacheClient__SetBatchRequest req = CACHE_CLIENT____SET_BATCH_REQUEST__INIT;
    req.n_items = n;
    req.items = ptrs;
    momento__call_opts resolved;
    momento__call_opts_from(c, opts, &resolved);
    resolved.expect_msgs = n;
    int rc = momento__call_start_with(c, MOMENTO__RPC_SET_BATCH, momento__decode_set_batch, cache,
                                      &req.base, &resolved, cb, userdata);
    free(items);
    free(ptrs);
    momento__writes_end(&w); /* packed at submit */
    return rc;
}

int momento_set_batch_sync(momento_client *c, const char *cache, const void *const *keys,
                           const size_t *key_lens, const void *const *values,
                           const size_t *value_lens, size_t n, uint64_t ttl_ms,
                           const momento_request_options *opts, momento_result **ret)
{
    momento__blocking b;
    MOMENTO__CHECK(momento__blocking_begin(&b, c, ret));
    return momento__blocking_wait(&b,
                                  momento_set_batch(c, cache, keys, key_lens, values, value_lens,
                                                    n, ttl_ms, opts, momento__blocking_done, &b),
                                  ret);
}
