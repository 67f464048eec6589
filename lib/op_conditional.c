/* Conditional writes: SetIf with each of its conditions, under the names
 * the official SDKs give them. Never retried: not idempotent. */
#include "op.h"

#include "cacheclient.pb-c.h"

MOMENTO__DECODER(set_if)
{
    const CacheClient__SetIfResponse *m = momento__unpack_reply(MOMENTO__RPC_SET_IF, &msgs[0], scratch);
    if (!m)
        return MOMENTO_ERR_BAD_RESPONSE;
    if (m->result_case == CACHE_CLIENT____SET_IF_RESPONSE__RESULT_STORED)
        r->outcome = MOMENTO_OUTCOME_STORED;
    else if (m->result_case == CACHE_CLIENT____SET_IF_RESPONSE__RESULT_NOT_STORED)
        r->outcome = MOMENTO_OUTCOME_NOT_STORED;
    else
        return MOMENTO_ERR_BAD_RESPONSE;
    return MOMENTO_OK;
}

int momento_set_if(momento_client *c, const char *cache, const void *key, size_t key_len,
                   const void *value, size_t value_len, uint64_t ttl_ms,
                   momento_condition condition, const void *compare, size_t compare_len,
                   const momento_request_options *opts, momento_callback cb, void *userdata)
{
    MOMENTO__CHECK(
        momento__check_item_request(c, cache, key, key_len, value, value_len, ttl_ms, opts, cb));
    MOMENTO__CHECK(momento__check_condition(condition, compare, compare_len));
    momento__coalescers_note_write(c, cache, key, key_len); /* read-your-writes */

    CacheClient__SetIfRequest req = CACHE_CLIENT____SET_IF_REQUEST__INIT;
    req.cache_key = momento__bytes(key, key_len);
    req.cache_body = momento__bytes(value, value_len);
    req.ttl_milliseconds = momento__effective_ttl(&c->cfg, ttl_ms);
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
    }
    return momento__call_start(c, MOMENTO__RPC_SET_IF, cache, &req.base, opts, cb, userdata);
}

int momento_set_if_sync(momento_client *c, const char *cache, const void *key, size_t key_len,
                        const void *value, size_t value_len, uint64_t ttl_ms,
                        momento_condition condition, const void *compare, size_t compare_len,
                        const momento_request_options *opts, momento_result **ret)
{
    momento__blocking b;
    MOMENTO__CHECK(momento__blocking_begin(&b, c, ret));
    return momento__blocking_wait(&b,
                                  momento_set_if(c, cache, key, key_len, value, value_len, ttl_ms,
                                                 condition, compare, compare_len,
                                                 opts, momento__blocking_done, &b),
                                  ret);
}

/* The same, one name per condition, as the official SDKs spell them. */
int momento_set_if_absent(momento_client *c, const char *cache, const void *key, size_t key_len,
                          const void *value, size_t value_len, uint64_t ttl_ms,
                          const momento_request_options *opts, momento_callback cb, void *userdata)
{
    return momento_set_if(c, cache, key, key_len, value, value_len, ttl_ms, MOMENTO_IF_ABSENT,
                          NULL, 0, opts, cb, userdata);
}

int momento_set_if_not_exists(momento_client *c, const char *cache, const void *key, size_t key_len,
                              const void *value, size_t value_len, uint64_t ttl_ms,
                              const momento_request_options *opts, momento_callback cb,
                              void *userdata)
{
    return momento_set_if_absent(c, cache, key, key_len, value, value_len, ttl_ms, opts, cb, userdata);
}

int momento_set_if_present(momento_client *c, const char *cache, const void *key, size_t key_len,
                           const void *value, size_t value_len, uint64_t ttl_ms,
                           const momento_request_options *opts, momento_callback cb, void *userdata)
{
    return momento_set_if(c, cache, key, key_len, value, value_len, ttl_ms, MOMENTO_IF_PRESENT,
                          NULL, 0, opts, cb, userdata);
}

int momento_set_if_equal(momento_client *c, const char *cache, const void *key, size_t key_len,
                         const void *value, size_t value_len, uint64_t ttl_ms, const void *equal_to,
                         size_t equal_len, const momento_request_options *opts, momento_callback cb,
                         void *userdata)
{
    return momento_set_if(c, cache, key, key_len, value, value_len, ttl_ms, MOMENTO_IF_EQUAL,
                          equal_to, equal_len, opts, cb, userdata);
}

int momento_set_if_not_equal(momento_client *c, const char *cache, const void *key, size_t key_len,
                             const void *value, size_t value_len, uint64_t ttl_ms,
                             const void *not_equal_to, size_t not_equal_len,
                             const momento_request_options *opts, momento_callback cb,
                             void *userdata)
{
    return momento_set_if(c, cache, key, key_len, value, value_len, ttl_ms, MOMENTO_IF_NOT_EQUAL,
                          not_equal_to, not_equal_len, opts, cb, userdata);
}

int momento_set_if_present_and_not_equal(momento_client *c, const char *cache, const void *key,
                                         size_t key_len, const void *value, size_t value_len,
                                         uint64_t ttl_ms, const void *not_equal_to,
                                         size_t not_equal_len, const momento_request_options *opts,
                                         momento_callback cb, void *userdata)
{
    return momento_set_if(c, cache, key, key_len, value, value_len, ttl_ms,
                          MOMENTO_IF_PRESENT_AND_NOT_EQUAL, not_equal_to, not_equal_len, opts, cb,
                          userdata);
}

int momento_set_if_absent_or_equal(momento_client *c, const char *cache, const void *key,
                                   size_t key_len, const void *value, size_t value_len,
                                   uint64_t ttl_ms, const void *equal_to, size_t equal_len,
                                   const momento_request_options *opts, momento_callback cb,
                                   void *userdata)
{
    return momento_set_if(c, cache, key, key_len, value, value_len, ttl_ms,
                          MOMENTO_IF_ABSENT_OR_EQUAL, equal_to, equal_len, opts, cb, userdata);
}
