/* Conditional writes: SetIf with each of its conditions, SetIfHash with
 * each of its own (a condition on the hash of the stored value), under the
 * names the official SDKs give them, and GetWithHash, the read that gives
 * such a hash. The writes are never retried: not idempotent. */
#include "layers/write.h"
#include "ops/op.h"

#include "cacheclient.pb-c.h"

MOMENTO__DECODER(set_if)
{
    MOMENTO__UNPACK_ONE(CacheClient__SetIfResponse, SET_IF);
    if (m->result_case == CACHE_CLIENT____SET_IF_RESPONSE__RESULT_STORED)
        r->outcome = MOMENTO_OUTCOME_STORED;
    else if (m->result_case == CACHE_CLIENT____SET_IF_RESPONSE__RESULT_NOT_STORED)
        r->outcome = MOMENTO_OUTCOME_NOT_STORED;
    else
        return MOMENTO_ERR_BAD_RESPONSE;
    return MOMENTO_OK;
}

/* A stored SetIfHash carries the new value's hash; the result points into
 * the unpacked reply, which lives until the callback has returned. */
MOMENTO__DECODER(set_if_hash)
{
    MOMENTO__UNPACK_ONE(CacheClient__SetIfHashResponse, SET_IF_HASH);
    if (m->result_case == CACHE_CLIENT____SET_IF_HASH_RESPONSE__RESULT_STORED) {
        r->outcome = MOMENTO_OUTCOME_STORED;
        r->hash = m->stored->new_hash.data;
        r->hash_len = m->stored->new_hash.len;
    } else if (m->result_case == CACHE_CLIENT____SET_IF_HASH_RESPONSE__RESULT_NOT_STORED) {
        r->outcome = MOMENTO_OUTCOME_NOT_STORED;
    } else {
        return MOMENTO_ERR_BAD_RESPONSE;
    }
    return MOMENTO_OK;
}

/* SetIfHash under `condition`, one of the hash conditions or 0 for
 * unconditional (setWithHash), of a prepared write (write.c). */
static int send_set_if_hash(momento_client *c, const char *cache, const void *key,
                            size_t key_len, const momento__write *w, int condition,
                            const void *hash, size_t hash_len,
                            const momento_request_options *opts, momento_callback cb,
                            void *userdata)
{
    CacheClient__SetIfHashRequest req = CACHE_CLIENT____SET_IF_HASH_REQUEST__INIT;
    req.cache_key = momento__bytes(key, key_len);
    req.cache_body = momento__bytes(w->value, w->value_len);
    req.ttl_milliseconds = w->ttl_ms;
    Common__PresentAndHashEqual present_eq = COMMON__PRESENT_AND_HASH_EQUAL__INIT;
    Common__PresentAndNotHashEqual present_ne = COMMON__PRESENT_AND_NOT_HASH_EQUAL__INIT;
    Common__AbsentOrHashEqual absent_eq = COMMON__ABSENT_OR_HASH_EQUAL__INIT;
    Common__AbsentOrNotHashEqual absent_ne = COMMON__ABSENT_OR_NOT_HASH_EQUAL__INIT;
    Common__Unconditional always = COMMON__UNCONDITIONAL__INIT;
    ProtobufCBinaryData check = momento__bytes(hash, hash_len);
    switch (condition) {
    case MOMENTO_IF_PRESENT_AND_HASH_EQUAL:
        present_eq.hash_to_check = check;
        req.condition_case = CACHE_CLIENT____SET_IF_HASH_REQUEST__CONDITION_PRESENT_AND_HASH_EQUAL;
        req.present_and_hash_equal = &present_eq;
        break;
    case MOMENTO_IF_PRESENT_AND_HASH_NOT_EQUAL:
        present_ne.hash_to_check = check;
        req.condition_case =
            CACHE_CLIENT____SET_IF_HASH_REQUEST__CONDITION_PRESENT_AND_NOT_HASH_EQUAL;
        req.present_and_not_hash_equal = &present_ne;
        break;
    case MOMENTO_IF_ABSENT_OR_HASH_EQUAL:
        absent_eq.hash_to_check = check;
        req.condition_case = CACHE_CLIENT____SET_IF_HASH_REQUEST__CONDITION_ABSENT_OR_HASH_EQUAL;
        req.absent_or_hash_equal = &absent_eq;
        break;
    case MOMENTO_IF_ABSENT_OR_HASH_NOT_EQUAL:
        absent_ne.hash_to_check = check;
        req.condition_case =
            CACHE_CLIENT____SET_IF_HASH_REQUEST__CONDITION_ABSENT_OR_NOT_HASH_EQUAL;
        req.absent_or_not_hash_equal = &absent_ne;
        break;
    default:
        req.condition_case = CACHE_CLIENT____SET_IF_HASH_REQUEST__CONDITION_UNCONDITIONAL;
        req.unconditional = &always;
        break;
    }
    return momento__call_start(c, MOMENTO__RPC_SET_IF_HASH, momento__decode_set_if_hash, cache,
                               &req.base, opts, cb, userdata);
}

int momento_set_if(momento_client *c, const char *cache, const void *key, size_t key_len,
                   const void *value, size_t value_len, uint64_t ttl_ms,
                   momento_condition condition, const void *compare, size_t compare_len,
                   const momento_request_options *opts, momento_callback cb, void *userdata)
{
    /* The condition first: the write is prepared (write.c: compressed,
     * checked, coalescers told) only once it is known to be sent. */
    MOMENTO__CHECK(momento__check_condition(condition, compare, compare_len));
    momento__write w;
    MOMENTO__CHECK(momento__write_begin(&w, c, NULL, cache, key, key_len, value, value_len, ttl_ms,
                                        opts, cb));
    int rc;
    if (condition >= MOMENTO_IF_PRESENT_AND_HASH_EQUAL) {
        rc = send_set_if_hash(c, cache, key, key_len, &w, condition, compare, compare_len, opts,
                              cb, userdata);
        momento__write_end(&w); /* packed at submit */
        return rc;
    }

    CacheClient__SetIfRequest req = CACHE_CLIENT____SET_IF_REQUEST__INIT;
    req.cache_key = momento__bytes(key, key_len);
    req.cache_body = momento__bytes(w.value, w.value_len);
    req.ttl_milliseconds = w.ttl_ms;
    Common__Present present = COMMON__PRESENT__INIT;
    Common__Absent absent = COMMON__ABSENT__INIT;
    Common__Equal equal = COMMON__EQUAL__INIT;
    Common__NotEqual not_equal = COMMON__NOT_EQUAL__INIT;
    Common__PresentAndNotEqual present_ne = COMMON__PRESENT_AND_NOT_EQUAL__INIT;
    Common__AbsentOrEqual absent_eq = COMMON__ABSENT_OR_EQUAL__INIT;
    ProtobufCBinaryData check = momento__bytes(compare, compare_len);
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
    default: /* the hash conditions left above; the rest were refused */
        momento__write_end(&w);
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT, "unknown condition %d", (int)condition);
    }
    rc = momento__call_start(c, MOMENTO__RPC_SET_IF, momento__decode_set_if, cache, &req.base, opts,
                             cb, userdata);
    momento__write_end(&w); /* packed at submit */
    return rc;
}

int momento_set_if_sync(momento_client *c, const char *cache, const void *key, size_t key_len,
                        const void *value, size_t value_len, uint64_t ttl_ms,
                        momento_condition condition, const void *compare, size_t compare_len,
                        const momento_request_options *opts, momento_result **ret)
{
    MOMENTO__SYNC(momento_set_if(c, cache, key, key_len, value, value_len, ttl_ms, condition,
                                 compare, compare_len, opts, MOMENTO__SYNC_CB));
}

/* The same, one name per condition, as the official SDKs spell them (the
 * hash conditions as the JS SDK names them, setIfPresentAndHashEqual, ...:
 * the comparand is a hash as momento_result_hash() gave it), each with its
 * blocking form: momento_set_if() / _sync() under the name's condition. */
#define NAMED_PLAIN(name, condition)                                                               \
    int momento_##name(momento_client *c, const char *cache, const void *key, size_t key_len,     \
                       const void *value, size_t value_len, uint64_t ttl_ms,                       \
                       const momento_request_options *opts, momento_callback cb, void *userdata)  \
    {                                                                                              \
        return momento_set_if(c, cache, key, key_len, value, value_len, ttl_ms, condition, NULL,   \
                              0, opts, cb, userdata);                                              \
    }                                                                                              \
    int momento_##name##_sync(momento_client *c, const char *cache, const void *key,              \
                              size_t key_len, const void *value, size_t value_len,                 \
                              uint64_t ttl_ms, const momento_request_options *opts,                \
                              momento_result **ret)                                                \
    {                                                                                              \
        return momento_set_if_sync(c, cache, key, key_len, value, value_len, ttl_ms, condition,    \
                                   NULL, 0, opts, ret);                                            \
    }

#define NAMED_COMPARE(name, condition)                                                             \
    int momento_##name(momento_client *c, const char *cache, const void *key, size_t key_len,     \
                       const void *value, size_t value_len, uint64_t ttl_ms, const void *compare, \
                       size_t compare_len, const momento_request_options *opts,                    \
                       momento_callback cb, void *userdata)                                        \
    {                                                                                              \
        return momento_set_if(c, cache, key, key_len, value, value_len, ttl_ms, condition,         \
                              compare, compare_len, opts, cb, userdata);                           \
    }                                                                                              \
    int momento_##name##_sync(momento_client *c, const char *cache, const void *key,              \
                              size_t key_len, const void *value, size_t value_len,                 \
                              uint64_t ttl_ms, const void *compare, size_t compare_len,            \
                              const momento_request_options *opts, momento_result **ret)           \
    {                                                                                              \
        return momento_set_if_sync(c, cache, key, key_len, value, value_len, ttl_ms, condition,    \
                                   compare, compare_len, opts, ret);                               \
    }

NAMED_PLAIN(set_if_absent, MOMENTO_IF_ABSENT)
NAMED_PLAIN(set_if_not_exists, MOMENTO_IF_ABSENT) /* the SDKs' older name */
NAMED_PLAIN(set_if_present, MOMENTO_IF_PRESENT)
NAMED_COMPARE(set_if_equal, MOMENTO_IF_EQUAL)
NAMED_COMPARE(set_if_not_equal, MOMENTO_IF_NOT_EQUAL)
NAMED_COMPARE(set_if_present_and_not_equal, MOMENTO_IF_PRESENT_AND_NOT_EQUAL)
NAMED_COMPARE(set_if_absent_or_equal, MOMENTO_IF_ABSENT_OR_EQUAL)
NAMED_COMPARE(set_if_present_and_hash_equal, MOMENTO_IF_PRESENT_AND_HASH_EQUAL)
NAMED_COMPARE(set_if_present_and_hash_not_equal, MOMENTO_IF_PRESENT_AND_HASH_NOT_EQUAL)
NAMED_COMPARE(set_if_absent_or_hash_equal, MOMENTO_IF_ABSENT_OR_HASH_EQUAL)
NAMED_COMPARE(set_if_absent_or_hash_not_equal, MOMENTO_IF_ABSENT_OR_HASH_NOT_EQUAL)

/* setWithHash: SetIfHash with the unconditional condition, a set whose
 * answer carries the new hash. */
int momento_set_with_hash(momento_client *c, const char *cache, const void *key, size_t key_len,
                          const void *value, size_t value_len, uint64_t ttl_ms,
                          const momento_request_options *opts, momento_callback cb,
                          void *userdata)
{
    /* Compressed, as momento_set() is (the JS SDK's setWithHash compresses
     * too): the hash is then the stored bytes'. */
    momento__write w;
    MOMENTO__CHECK(momento__write_begin(&w, c, NULL, cache, key, key_len, value, value_len, ttl_ms,
                                        opts, cb));
    int rc = send_set_if_hash(c, cache, key, key_len, &w, 0, NULL, 0, opts, cb, userdata);
    momento__write_end(&w); /* packed at submit */
    return rc;
}

/* GetWithHash: found carries the value and its hash; both point into the
 * unpacked reply, which lives until the callback has returned. */
MOMENTO__DECODER(get_with_hash)
{
    MOMENTO__UNPACK_FOUND(CacheClient__GetWithHashResponse, GET_WITH_HASH, result_case,
                          CACHE_CLIENT____GET_WITH_HASH_RESPONSE__RESULT);
    r->outcome = MOMENTO_OUTCOME_HIT;
    r->value = m->found->value.data ? m->found->value.data : (const uint8_t *)"";
    r->value_len = m->found->value.len;
    r->hash = m->found->hash.data;
    r->hash_len = m->found->hash.len;
    /* A compressed value is returned decompressed, as a get's is; the hash
     * stays the stored bytes', which is what a hash condition compares. */
    return momento__decompress_hit(scratch, &r->value, &r->value_len, &scratch->message);
}

/* Not coalesced or batched as a get is: the coalescer and the batcher share
 * a Get's reply, which has no hash. */
int momento_get_with_hash(momento_client *c, const char *cache, const void *key, size_t key_len,
                          const momento_request_options *opts, momento_callback cb,
                          void *userdata)
{
    MOMENTO__CHECK(momento__check_key_request(c, cache, key, key_len, opts, cb));
    CacheClient__GetWithHashRequest req = CACHE_CLIENT____GET_WITH_HASH_REQUEST__INIT;
    req.cache_key = momento__bytes(key, key_len);
    return momento__call_start(c, MOMENTO__RPC_GET_WITH_HASH, momento__decode_get_with_hash, cache,
                               &req.base, opts, cb, userdata);
}

/* ---- Blocking forms: each is its async call plus a wait. */

int momento_get_with_hash_sync(momento_client *c, const char *cache, const void *key,
                               size_t key_len, const momento_request_options *opts,
                               momento_result **ret)
{
    MOMENTO__SYNC(momento_get_with_hash(c, cache, key, key_len, opts, MOMENTO__SYNC_CB));
}

int momento_set_with_hash_sync(momento_client *c, const char *cache, const void *key,
                               size_t key_len, const void *value, size_t value_len,
                               uint64_t ttl_ms, const momento_request_options *opts,
                               momento_result **ret)
{
    MOMENTO__SYNC(momento_set_with_hash(c, cache, key, key_len, value, value_len, ttl_ms, opts,
                                        MOMENTO__SYNC_CB));
}
