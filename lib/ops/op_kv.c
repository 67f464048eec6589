/* The key/value family: get, set, delete, increment, keys exist and item
 * type, async and blocking, with their decoders. Get, set and delete go
 * through the batcher, which sends them (kv_send.c, with their decoders)
 * when it does not queue them. */
#include "ops/op.h"

#include "base/alloc.h"
#include "layers/batcher.h"
#include "layers/near.h"
#include "layers/write.h"

#include "cacheclient.pb-c.h"

#include <stdlib.h>

MOMENTO__NUMBER_DECODER(increment, INCREMENT, CacheClient__IncrementResponse, int_value, value)

MOMENTO__DECODER(keys_exist)
{
    MOMENTO__UNPACK_ONE(CacheClient__KeysExistResponse, KEYS_EXIST);
    uint8_t *exists = momento__malloc(m->n_exists + 1);
    if (!exists)
        return MOMENTO_ERR_NO_MEMORY;
    scratch->mem = exists;
    for (size_t i = 0; i < m->n_exists; i++)
        exists[i] = m->exists[i] ? 1 : 0;
    r->exists = exists;
    r->n_exists = m->n_exists;
    r->outcome = MOMENTO_OUTCOME_SUCCESS;
    return MOMENTO_OK;
}

MOMENTO__DECODER(item_get_type)
{
    MOMENTO__UNPACK_FOUND(CacheClient__ItemGetTypeResponse, ITEM_GET_TYPE, result_case,
                          CACHE_CLIENT____ITEM_GET_TYPE_RESPONSE__RESULT);
    /* The wire numbers the types differently from the public enum. */
    switch (m->found->item_type) {
    case CACHE_CLIENT____ITEM_GET_TYPE_RESPONSE__ITEM_TYPE__SCALAR:
        r->item_type = MOMENTO_ITEM_TYPE_SCALAR;
        break;
    case CACHE_CLIENT____ITEM_GET_TYPE_RESPONSE__ITEM_TYPE__DICTIONARY:
        r->item_type = MOMENTO_ITEM_TYPE_DICTIONARY;
        break;
    case CACHE_CLIENT____ITEM_GET_TYPE_RESPONSE__ITEM_TYPE__SET:
        r->item_type = MOMENTO_ITEM_TYPE_SET;
        break;
    case CACHE_CLIENT____ITEM_GET_TYPE_RESPONSE__ITEM_TYPE__LIST:
        r->item_type = MOMENTO_ITEM_TYPE_LIST;
        break;
    case CACHE_CLIENT____ITEM_GET_TYPE_RESPONSE__ITEM_TYPE__SORTED_SET:
        r->item_type = MOMENTO_ITEM_TYPE_SORTED_SET;
        break;
    default:
        return MOMENTO_ERR_BAD_RESPONSE;
    }
    r->outcome = MOMENTO_OUTCOME_HIT;
    return MOMENTO_OK;
}

/* A get as it goes to Momento (the near cache's `send`): checked already. */
static int get_sent(void *target, const char *cache, const void *key, size_t key_len,
                    const momento_request_options *opts, momento_callback cb, void *userdata)
{
    momento_client *c = target;
    momento__call_opts resolved;
    momento__call_opts_from(c, opts, &resolved);
    return momento__batcher_get(c, cache, key, key_len, &resolved, cb, userdata);
}

int momento_get(momento_client *c, const char *cache, const void *key, size_t key_len,
                const momento_request_options *opts, momento_callback cb, void *userdata)
{
    MOMENTO__CHECK(momento__check_key_request(c, cache, key, key_len, opts, cb));
    momento__near *n = momento__near_for_get(c, opts, true);
    if (n)
        return momento__near_get(n, c, c, get_sent, true, cache, key, key_len, opts, cb, userdata);
    return get_sent(c, cache, key, key_len, opts, cb, userdata);
}

int momento_get_sync(momento_client *c, const char *cache, const void *key, size_t key_len,
                     const momento_request_options *opts, momento_result **ret)
{
    momento__near *n = NULL;
    if (momento__check_key_request(c, cache, key, key_len, opts, momento__blocking_done) ==
        MOMENTO_OK)
        n = momento__near_for_get(c, opts, false); /* momento_get() counts a bypass */
    if (!n)
        MOMENTO__SYNC(momento_get(c, cache, key, key_len, opts, MOMENTO__SYNC_CB));
    /* With a near cache: its answer, here and now, or Momento's kept
     * there. */
    momento__blocking b_;
    MOMENTO__CHECK(momento__blocking_begin(&b_, c, ret));
    momento_result *here = NULL;
    if (momento__near_get_here(n, c, cache, key, key_len, opts, &here)) {
        momento__blocking_end(&b_);
        if (ret)
            *ret = here;
        else
            momento_result_free(here);
        return MOMENTO_OK;
    }
    momento__near_read rd = momento__near_begin(n, cache, key, key_len);
    int rc = momento__blocking_wait(&b_, momento_get(c, cache, key, key_len, opts, MOMENTO__SYNC_CB),
                                    ret);
    if (ret)
        momento__near_keep(n, rd, cache, key, key_len, *ret);
    return rc;
}

/* A set as it goes to Momento (the near cache's `send`). */
static int set_sent(void *target, const char *cache, const void *key, size_t key_len,
                    const void *value, size_t value_len, uint64_t ttl_ms,
                    const momento_request_options *opts, momento_callback cb, void *userdata);

int momento_set(momento_client *c, const char *cache, const void *key, size_t key_len,
                const void *value, size_t value_len, uint64_t ttl_ms,
                const momento_request_options *opts, momento_callback cb, void *userdata)
{
    momento__near *n = momento__near_of(c);
    if (n && momento__check_item_request(c, cache, key, key_len, value, value_len, ttl_ms, opts,
                                         cb) == MOMENTO_OK)
        return momento__near_set(n, c, c, set_sent, cache, key, key_len, value, value_len, ttl_ms,
                                 momento__effective_ttl(&c->cfg, ttl_ms), opts, cb, userdata);
    return set_sent(c, cache, key, key_len, value, value_len, ttl_ms, opts, cb, userdata);
}

static int set_sent(void *target, const char *cache, const void *key, size_t key_len,
                    const void *value, size_t value_len, uint64_t ttl_ms,
                    const momento_request_options *opts, momento_callback cb, void *userdata)
{
    momento_client *c = target;
    /* Prepared once (write.c): the batcher and the wire get the bytes to
     * store. */
    momento__write w;
    MOMENTO__CHECK(momento__write_begin(&w, c, NULL, cache, key, key_len, value, value_len, ttl_ms,
                                        opts, cb));
    momento__call_opts resolved;
    momento__call_opts_from(c, opts, &resolved);
    int rc = momento__batcher_set(c, cache, key, key_len, w.value, w.value_len, w.ttl_ms, &resolved,
                                  cb, userdata);
    momento__write_end(&w); /* packed or copied at submit */
    return rc;
}

int momento_set_sync(momento_client *c, const char *cache, const void *key, size_t key_len,
                     const void *value, size_t value_len, uint64_t ttl_ms,
                     const momento_request_options *opts, momento_result **ret)
{
    momento__near *n = NULL;
    if (momento__check_item_request(c, cache, key, key_len, value, value_len, ttl_ms, opts,
                                    momento__blocking_done) == MOMENTO_OK)
        n = momento__near_of(c);
    if (!n)
        MOMENTO__SYNC(momento_set(c, cache, key, key_len, value, value_len, ttl_ms, opts,
                                  MOMENTO__SYNC_CB));
    /* With a near cache: the value written is kept, as an async set's. */
    momento__near_read rd = momento__near_write_begin(n, cache, key, key_len);
    momento__blocking b_;
    MOMENTO__CHECK(momento__blocking_begin(&b_, c, ret));
    int rc = momento__blocking_wait(
        &b_, momento_set(c, cache, key, key_len, value, value_len, ttl_ms, opts, MOMENTO__SYNC_CB),
        ret);
    if (rc == MOMENTO_OK)
        momento__near_keep_write(n, rd, cache, key, key_len, value, value_len,
                                 momento__effective_ttl(&c->cfg, ttl_ms));
    return rc;
}

int momento_delete(momento_client *c, const char *cache, const void *key, size_t key_len,
                   const momento_request_options *opts, momento_callback cb, void *userdata)
{
    MOMENTO__CHECK(momento__check_key_request(c, cache, key, key_len, opts, cb));
    momento__client_note_write(c, NULL, cache, key, key_len); /* read-your-writes */
    momento__call_opts resolved;
    momento__call_opts_from(c, opts, &resolved);
    return momento__batcher_delete(c, cache, key, key_len, &resolved, cb, userdata);
}

int momento_delete_sync(momento_client *c, const char *cache, const void *key, size_t key_len,
                        const momento_request_options *opts, momento_result **ret)
{
    MOMENTO__SYNC(momento_delete(c, cache, key, key_len, opts, MOMENTO__SYNC_CB));
}

int momento_increment(momento_client *c, const char *cache, const void *key, size_t key_len,
                      int64_t amount, uint64_t ttl_ms, const momento_request_options *opts,
                      momento_callback cb, void *userdata)
{
    MOMENTO__CHECK(momento__check_key_request(c, cache, key, key_len, opts, cb));
    MOMENTO__CHECK(momento__check_ttl(ttl_ms));
    CacheClient__IncrementRequest req = CACHE_CLIENT____INCREMENT_REQUEST__INIT;
    req.cache_key = momento__bytes(key, key_len);
    req.amount = amount;
    req.ttl_milliseconds = momento__effective_ttl(&c->cfg, ttl_ms);
    momento__client_note_write(c, NULL, cache, key, key_len); /* read-your-writes */
    return momento__call_start(c, MOMENTO__RPC_INCREMENT, momento__decode_increment, cache,
                               &req.base, opts, cb, userdata);
}

int momento_increment_sync(momento_client *c, const char *cache, const void *key, size_t key_len,
                           int64_t amount, uint64_t ttl_ms, const momento_request_options *opts,
                           momento_result **ret)
{
    MOMENTO__SYNC(momento_increment(c, cache, key, key_len, amount, ttl_ms, opts,
                                    MOMENTO__SYNC_CB));
}

int momento_keys_exist(momento_client *c, const char *cache, const void *const *keys,
                       const size_t *key_lens, size_t n, const momento_request_options *opts,
                       momento_callback cb, void *userdata)
{
    MOMENTO__CHECK(momento__check_keys_request(c, cache, keys, key_lens, NULL, NULL, n, opts, cb));
    ProtobufCBinaryData *list = momento__malloc(n * sizeof(*list));
    if (!list)
        return MOMENTO_ERR_NO_MEMORY;
    for (size_t i = 0; i < n; i++)
        list[i] = momento__bytes(keys[i], key_lens[i]);
    CacheClient__KeysExistRequest req = CACHE_CLIENT____KEYS_EXIST_REQUEST__INIT;
    req.n_cache_keys = n;
    req.cache_keys = list;
    int rc = momento__call_start(c, MOMENTO__RPC_KEYS_EXIST, momento__decode_keys_exist, cache,
                                 &req.base, opts, cb, userdata);
    free(list); /* packed at submit */
    return rc;
}

int momento_keys_exist_sync(momento_client *c, const char *cache, const void *const *keys,
                            const size_t *key_lens, size_t n, const momento_request_options *opts,
                            momento_result **ret)
{
    MOMENTO__SYNC(momento_keys_exist(c, cache, keys, key_lens, n, opts, MOMENTO__SYNC_CB));
}

int momento_key_exists(momento_client *c, const char *cache, const void *key, size_t key_len,
                       const momento_request_options *opts, momento_callback cb, void *userdata)
{
    return momento_keys_exist(c, cache, &key, &key_len, 1, opts, cb, userdata);
}

int momento_key_exists_sync(momento_client *c, const char *cache, const void *key, size_t key_len,
                            const momento_request_options *opts, momento_result **ret)
{
    return momento_keys_exist_sync(c, cache, &key, &key_len, 1, opts, ret);
}

int momento_item_get_type(momento_client *c, const char *cache, const void *key, size_t key_len,
                          const momento_request_options *opts, momento_callback cb, void *userdata)
{
    MOMENTO__CHECK(momento__check_key_request(c, cache, key, key_len, opts, cb));
    CacheClient__ItemGetTypeRequest req = CACHE_CLIENT____ITEM_GET_TYPE_REQUEST__INIT;
    req.cache_key = momento__bytes(key, key_len);
    return momento__call_start(c, MOMENTO__RPC_ITEM_GET_TYPE, momento__decode_item_get_type, cache,
                               &req.base, opts, cb, userdata);
}

int momento_item_get_type_sync(momento_client *c, const char *cache, const void *key,
                               size_t key_len, const momento_request_options *opts,
                               momento_result **ret)
{
    MOMENTO__SYNC(momento_item_get_type(c, cache, key, key_len, opts, MOMENTO__SYNC_CB));
}
