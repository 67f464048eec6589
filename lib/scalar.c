/* The scalar operations beyond get/set/delete, with the names and outcomes
 * of the official SDKs: conditional sets, increment, key existence and item
 * TTLs. Each checks its arguments, builds its request and has a decoder the
 * method table (methods.c) points to. */
#include "internal.h"

#include "cacheclient.pb-c.h"

#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- decoders */

int momento__decode_set_if(momento_result *r, const grpc_slice *msgs, size_t n,
                           momento__scratch *scratch)
{
    (void)n;
    CacheClient__SetIfResponse *m = cache_client____set_if_response__unpack(
        NULL, GRPC_SLICE_LENGTH(msgs[0]), GRPC_SLICE_START_PTR(msgs[0]));
    if (!m)
        return MOMENTO_ERR_BAD_RESPONSE;
    scratch->msg = &m->base;
    if (m->result_case == CACHE_CLIENT____SET_IF_RESPONSE__RESULT_STORED)
        r->outcome = MOMENTO_OUTCOME_STORED;
    else if (m->result_case == CACHE_CLIENT____SET_IF_RESPONSE__RESULT_NOT_STORED)
        r->outcome = MOMENTO_OUTCOME_NOT_STORED;
    else
        return MOMENTO_ERR_BAD_RESPONSE;
    return MOMENTO_OK;
}

int momento__decode_increment(momento_result *r, const grpc_slice *msgs, size_t n,
                              momento__scratch *scratch)
{
    (void)n;
    CacheClient__IncrementResponse *m = cache_client____increment_response__unpack(
        NULL, GRPC_SLICE_LENGTH(msgs[0]), GRPC_SLICE_START_PTR(msgs[0]));
    if (!m)
        return MOMENTO_ERR_BAD_RESPONSE;
    scratch->msg = &m->base;
    r->int_value = m->value;
    r->outcome = MOMENTO_OUTCOME_SUCCESS;
    return MOMENTO_OK;
}

int momento__decode_keys_exist(momento_result *r, const grpc_slice *msgs, size_t n,
                               momento__scratch *scratch)
{
    (void)n;
    CacheClient__KeysExistResponse *m = cache_client____keys_exist_response__unpack(
        NULL, GRPC_SLICE_LENGTH(msgs[0]), GRPC_SLICE_START_PTR(msgs[0]));
    if (!m)
        return MOMENTO_ERR_BAD_RESPONSE;
    scratch->msg = &m->base;
    uint8_t *exists = malloc(m->n_exists + 1);
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

int momento__decode_item_get_ttl(momento_result *r, const grpc_slice *msgs, size_t n,
                                 momento__scratch *scratch)
{
    (void)n;
    CacheClient__ItemGetTtlResponse *m = cache_client____item_get_ttl_response__unpack(
        NULL, GRPC_SLICE_LENGTH(msgs[0]), GRPC_SLICE_START_PTR(msgs[0]));
    if (!m)
        return MOMENTO_ERR_BAD_RESPONSE;
    scratch->msg = &m->base;
    if (m->result_case == CACHE_CLIENT____ITEM_GET_TTL_RESPONSE__RESULT_FOUND && m->found) {
        r->outcome = MOMENTO_OUTCOME_HIT;
        r->ttl_ms = m->found->remaining_ttl_millis;
    } else if (m->result_case == CACHE_CLIENT____ITEM_GET_TTL_RESPONSE__RESULT_MISSING) {
        r->outcome = MOMENTO_OUTCOME_MISS;
    } else {
        return MOMENTO_ERR_BAD_RESPONSE;
    }
    return MOMENTO_OK;
}

int momento__decode_update_ttl(momento_result *r, const grpc_slice *msgs, size_t n,
                               momento__scratch *scratch)
{
    (void)n;
    CacheClient__UpdateTtlResponse *m = cache_client____update_ttl_response__unpack(
        NULL, GRPC_SLICE_LENGTH(msgs[0]), GRPC_SLICE_START_PTR(msgs[0]));
    if (!m)
        return MOMENTO_ERR_BAD_RESPONSE;
    scratch->msg = &m->base;
    switch (m->result_case) {
    case CACHE_CLIENT____UPDATE_TTL_RESPONSE__RESULT_SET:
        r->outcome = MOMENTO_OUTCOME_TTL_UPDATED;
        break;
    case CACHE_CLIENT____UPDATE_TTL_RESPONSE__RESULT_NOT_SET:
        r->outcome = MOMENTO_OUTCOME_TTL_NOT_UPDATED;
        break;
    case CACHE_CLIENT____UPDATE_TTL_RESPONSE__RESULT_MISSING:
        r->outcome = MOMENTO_OUTCOME_MISS;
        break;
    default:
        return MOMENTO_ERR_BAD_RESPONSE;
    }
    return MOMENTO_OK;
}

/* ---------------------------------------------------------------- requests */

static ProtobufCBinaryData bytes(const void *p, size_t n)
{
    ProtobufCBinaryData b = {n, (uint8_t *)p};
    return b;
}

int momento_set_if(momento_client *c, const char *cache, const void *key, size_t key_len,
                   const void *value, size_t value_len, uint64_t ttl_ms,
                   momento_condition condition, const void *compare, size_t compare_len,
                   momento_callback cb, void *userdata)
{
    MOMENTO__CHECK(momento__check_set(c, cache, key, key_len, value, value_len, ttl_ms, cb));
    bool needs_compare = condition != MOMENTO_IF_ABSENT && condition != MOMENTO_IF_PRESENT;
    if (condition < MOMENTO_IF_ABSENT || condition > MOMENTO_IF_ABSENT_OR_EQUAL)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    if (needs_compare && ((!compare && compare_len) || compare_len > MOMENTO_MAX_ITEM_BYTES))
        return MOMENTO_ERR_INVALID_ARGUMENT;

    CacheClient__SetIfRequest req = CACHE_CLIENT____SET_IF_REQUEST__INIT;
    req.cache_key = bytes(key, key_len);
    req.cache_body = bytes(value, value_len);
    req.ttl_milliseconds = ttl_ms ? ttl_ms : c->cfg.default_ttl_ms;
    Common__Present present = COMMON__PRESENT__INIT;
    Common__Absent absent = COMMON__ABSENT__INIT;
    Common__Equal equal = COMMON__EQUAL__INIT;
    Common__NotEqual not_equal = COMMON__NOT_EQUAL__INIT;
    Common__PresentAndNotEqual present_ne = COMMON__PRESENT_AND_NOT_EQUAL__INIT;
    Common__AbsentOrEqual absent_eq = COMMON__ABSENT_OR_EQUAL__INIT;
    ProtobufCBinaryData check = bytes(compare, compare_len);
    switch (condition) {
    case MOMENTO_IF_ABSENT:
        req.condition_case = CACHE_CLIENT____SET_IF_REQUEST__CONDITION_ABSENT;
        req.absent = &absent;
        break;
    case MOMENTO_IF_PRESENT:
        req.condition_case = CACHE_CLIENT____SET_IF_REQUEST__CONDITION_PRESENT;
        req.present = &present;
        break;
    case MOMENTO_IF_EQUAL:
        equal.value_to_check = check;
        req.condition_case = CACHE_CLIENT____SET_IF_REQUEST__CONDITION_EQUAL;
        req.equal = &equal;
        break;
    case MOMENTO_IF_NOT_EQUAL:
        not_equal.value_to_check = check;
        req.condition_case = CACHE_CLIENT____SET_IF_REQUEST__CONDITION_NOT_EQUAL;
        req.not_equal = &not_equal;
        break;
    case MOMENTO_IF_PRESENT_AND_NOT_EQUAL:
        present_ne.value_to_check = check;
        req.condition_case = CACHE_CLIENT____SET_IF_REQUEST__CONDITION_PRESENT_AND_NOT_EQUAL;
        req.present_and_not_equal = &present_ne;
        break;
    case MOMENTO_IF_ABSENT_OR_EQUAL:
        absent_eq.value_to_check = check;
        req.condition_case = CACHE_CLIENT____SET_IF_REQUEST__CONDITION_ABSENT_OR_EQUAL;
        req.absent_or_equal = &absent_eq;
        break;
    }
    return momento__call_start(c, MOMENTO__M_SET_IF, cache, &req.base, cb, userdata);
}

int momento_set_if_absent(momento_client *c, const char *cache, const void *key, size_t key_len,
                          const void *value, size_t value_len, uint64_t ttl_ms,
                          momento_callback cb, void *userdata)
{
    return momento_set_if(c, cache, key, key_len, value, value_len, ttl_ms, MOMENTO_IF_ABSENT,
                          NULL, 0, cb, userdata);
}

int momento_set_if_not_exists(momento_client *c, const char *cache, const void *key,
                              size_t key_len, const void *value, size_t value_len,
                              uint64_t ttl_ms, momento_callback cb, void *userdata)
{
    return momento_set_if_absent(c, cache, key, key_len, value, value_len, ttl_ms, cb, userdata);
}

int momento_set_if_present(momento_client *c, const char *cache, const void *key, size_t key_len,
                           const void *value, size_t value_len, uint64_t ttl_ms,
                           momento_callback cb, void *userdata)
{
    return momento_set_if(c, cache, key, key_len, value, value_len, ttl_ms, MOMENTO_IF_PRESENT,
                          NULL, 0, cb, userdata);
}

int momento_set_if_equal(momento_client *c, const char *cache, const void *key, size_t key_len,
                         const void *value, size_t value_len, uint64_t ttl_ms,
                         const void *equal_to, size_t equal_len, momento_callback cb,
                         void *userdata)
{
    return momento_set_if(c, cache, key, key_len, value, value_len, ttl_ms, MOMENTO_IF_EQUAL,
                          equal_to, equal_len, cb, userdata);
}

int momento_set_if_not_equal(momento_client *c, const char *cache, const void *key,
                             size_t key_len, const void *value, size_t value_len, uint64_t ttl_ms,
                             const void *not_equal_to, size_t not_equal_len, momento_callback cb,
                             void *userdata)
{
    return momento_set_if(c, cache, key, key_len, value, value_len, ttl_ms, MOMENTO_IF_NOT_EQUAL,
                          not_equal_to, not_equal_len, cb, userdata);
}

int momento_set_if_present_and_not_equal(momento_client *c, const char *cache, const void *key,
                                         size_t key_len, const void *value, size_t value_len,
                                         uint64_t ttl_ms, const void *not_equal_to,
                                         size_t not_equal_len, momento_callback cb,
                                         void *userdata)
{
    return momento_set_if(c, cache, key, key_len, value, value_len, ttl_ms,
                          MOMENTO_IF_PRESENT_AND_NOT_EQUAL, not_equal_to, not_equal_len, cb,
                          userdata);
}

int momento_set_if_absent_or_equal(momento_client *c, const char *cache, const void *key,
                                   size_t key_len, const void *value, size_t value_len,
                                   uint64_t ttl_ms, const void *equal_to, size_t equal_len,
                                   momento_callback cb, void *userdata)
{
    return momento_set_if(c, cache, key, key_len, value, value_len, ttl_ms,
                          MOMENTO_IF_ABSENT_OR_EQUAL, equal_to, equal_len, cb, userdata);
}

int momento_increment(momento_client *c, const char *cache, const void *key, size_t key_len,
                      int64_t amount, uint64_t ttl_ms, momento_callback cb, void *userdata)
{
    MOMENTO__CHECK(momento__check_get(c, cache, key, key_len, cb));
    if (ttl_ms > MOMENTO_MAX_TTL_MS)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    CacheClient__IncrementRequest req = CACHE_CLIENT____INCREMENT_REQUEST__INIT;
    req.cache_key = bytes(key, key_len);
    req.amount = amount;
    req.ttl_milliseconds = ttl_ms ? ttl_ms : c->cfg.default_ttl_ms;
    return momento__call_start(c, MOMENTO__M_INCREMENT, cache, &req.base, cb, userdata);
}

int momento_keys_exist(momento_client *c, const char *cache, const void *const *keys,
                       const size_t *key_lens, size_t n, momento_callback cb, void *userdata)
{
    if (!keys || !key_lens || n == 0 || n > MOMENTO_MAX_ITEM_BYTES)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    MOMENTO__CHECK(momento__check_get(c, cache, keys[0], key_lens[0], cb));
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        MOMENTO__CHECK(momento__check_key(keys[i], key_lens[i]));
        total += key_lens[i] + 8;
        if (total > MOMENTO__MAX_REQUEST_BYTES)
            return MOMENTO_ERR_INVALID_ARGUMENT;
    }
    ProtobufCBinaryData *list = malloc(n * sizeof(*list));
    if (!list)
        return MOMENTO_ERR_NO_MEMORY;
    for (size_t i = 0; i < n; i++)
        list[i] = bytes(keys[i], key_lens[i]);
    CacheClient__KeysExistRequest req = CACHE_CLIENT____KEYS_EXIST_REQUEST__INIT;
    req.n_cache_keys = n;
    req.cache_keys = list;
    int rc = momento__call_start(c, MOMENTO__M_KEYS_EXIST, cache, &req.base, cb, userdata);
    free(list); /* packed at submit */
    return rc;
}

int momento_key_exists(momento_client *c, const char *cache, const void *key, size_t key_len,
                       momento_callback cb, void *userdata)
{
    return momento_keys_exist(c, cache, &key, &key_len, 1, cb, userdata);
}

int momento_item_get_ttl(momento_client *c, const char *cache, const void *key, size_t key_len,
                         momento_callback cb, void *userdata)
{
    MOMENTO__CHECK(momento__check_get(c, cache, key, key_len, cb));
    CacheClient__ItemGetTtlRequest req = CACHE_CLIENT____ITEM_GET_TTL_REQUEST__INIT;
    req.cache_key = bytes(key, key_len);
    return momento__call_start(c, MOMENTO__M_ITEM_GET_TTL, cache, &req.base, cb, userdata);
}

static int ttl_call(momento_client *c, const char *cache, const void *key, size_t key_len,
                    uint64_t ttl_ms, CacheClient__UpdateTtlRequest__UpdateTtlCase mode,
                    momento_callback cb, void *userdata)
{
    MOMENTO__CHECK(momento__check_get(c, cache, key, key_len, cb));
    if (ttl_ms == 0 || ttl_ms > MOMENTO_MAX_TTL_MS)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    CacheClient__UpdateTtlRequest req = CACHE_CLIENT____UPDATE_TTL_REQUEST__INIT;
    req.cache_key = bytes(key, key_len);
    req.update_ttl_case = mode;
    if (mode == CACHE_CLIENT____UPDATE_TTL_REQUEST__UPDATE_TTL_INCREASE_TO_MILLISECONDS)
        req.increase_to_milliseconds = ttl_ms;
    else if (mode == CACHE_CLIENT____UPDATE_TTL_REQUEST__UPDATE_TTL_DECREASE_TO_MILLISECONDS)
        req.decrease_to_milliseconds = ttl_ms;
    else
        req.overwrite_to_milliseconds = ttl_ms;
    return momento__call_start(c, MOMENTO__M_UPDATE_TTL, cache, &req.base, cb, userdata);
}

int momento_update_ttl(momento_client *c, const char *cache, const void *key, size_t key_len,
                       uint64_t ttl_ms, momento_callback cb, void *userdata)
{
    return ttl_call(c, cache, key, key_len, ttl_ms,
                    CACHE_CLIENT____UPDATE_TTL_REQUEST__UPDATE_TTL_OVERWRITE_TO_MILLISECONDS, cb,
                    userdata);
}

int momento_increase_ttl(momento_client *c, const char *cache, const void *key, size_t key_len,
                         uint64_t ttl_ms, momento_callback cb, void *userdata)
{
    return ttl_call(c, cache, key, key_len, ttl_ms,
                    CACHE_CLIENT____UPDATE_TTL_REQUEST__UPDATE_TTL_INCREASE_TO_MILLISECONDS, cb,
                    userdata);
}

int momento_decrease_ttl(momento_client *c, const char *cache, const void *key, size_t key_len,
                         uint64_t ttl_ms, momento_callback cb, void *userdata)
{
    return ttl_call(c, cache, key, key_len, ttl_ms,
                    CACHE_CLIENT____UPDATE_TTL_REQUEST__UPDATE_TTL_DECREASE_TO_MILLISECONDS, cb,
                    userdata);
}
