/* Blocking calls: each is the async call plus a wait, as libcurl's easy
 * interface is its multi interface run to completion. The completion thread
 * copies the result out, so the caller owns what it gets. */
#include "internal.h"

#include <stdlib.h>

typedef struct waiter {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool done;
    int error;
    momento_result *result;
} waiter;

static void wake(const momento_result *r, void *userdata)
{
    waiter *w = userdata;
    momento_result *copy = NULL;
    int err = momento_result_dup(r, &copy);
    pthread_mutex_lock(&w->lock);
    w->result = copy;
    w->error = err == MOMENTO_OK ? r->error : err;
    w->done = true;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->lock);
}

int momento__run_blocking(const momento_client *owner, momento__submit_fn submit, void *target,
                          const void *args, momento_result **ret)
{
    if (ret)
        *ret = NULL;
    if (!owner || !target)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    /* The completion thread would wait for itself. */
    if (momento__current_client == owner)
        return MOMENTO_ERR_WOULD_DEADLOCK;
    waiter w = {.done = false, .result = NULL};
    pthread_mutex_init(&w.lock, NULL);
    pthread_cond_init(&w.cond, NULL);
    int rc = submit(target, args, wake, &w);
    if (rc == MOMENTO_OK) {
        pthread_mutex_lock(&w.lock);
        while (!w.done)
            pthread_cond_wait(&w.cond, &w.lock);
        pthread_mutex_unlock(&w.lock);
        rc = w.error;
        if (ret)
            *ret = w.result;
        else
            momento_result_free(w.result);
    }
    pthread_mutex_destroy(&w.lock);
    pthread_cond_destroy(&w.cond);
    return rc;
}

static int submit_get(void *c, const void *a, momento_callback cb, void *w)
{
    const momento__op_args *o = a;
    return momento_get(c, o->cache, o->key, o->key_len, cb, w);
}

static int submit_set(void *c, const void *a, momento_callback cb, void *w)
{
    const momento__op_args *o = a;
    return momento_set(c, o->cache, o->key, o->key_len, o->value, o->value_len, o->ttl_ms, cb, w);
}

static int submit_delete(void *c, const void *a, momento_callback cb, void *w)
{
    const momento__op_args *o = a;
    return momento_delete(c, o->cache, o->key, o->key_len, cb, w);
}

static int submit_create(void *c, const void *a, momento_callback cb, void *w)
{
    return momento_create_cache(c, ((const momento__op_args *)a)->cache, cb, w);
}

static int submit_delete_cache(void *c, const void *a, momento_callback cb, void *w)
{
    return momento_delete_cache(c, ((const momento__op_args *)a)->cache, cb, w);
}

static int submit_flush(void *c, const void *a, momento_callback cb, void *w)
{
    return momento_flush_cache(c, ((const momento__op_args *)a)->cache, cb, w);
}

static int submit_list(void *c, const void *a, momento_callback cb, void *w)
{
    (void)a;
    return momento_list_caches(c, cb, w);
}

static int submit_ping(void *c, const void *a, momento_callback cb, void *w)
{
    (void)a;
    return momento_ping(c, cb, w);
}

int momento_get_sync(momento_client *c, const char *cache, const void *key, size_t key_len,
                     momento_result **ret)
{
    momento__op_args a = {.cache = cache, .key = key, .key_len = key_len};
    return momento__run_blocking(c, submit_get, c, &a, ret);
}

int momento_set_sync(momento_client *c, const char *cache, const void *key, size_t key_len,
                     const void *value, size_t value_len, uint64_t ttl_ms, momento_result **ret)
{
    momento__op_args a = {cache, key, key_len, value, value_len, ttl_ms};
    return momento__run_blocking(c, submit_set, c, &a, ret);
}

int momento_delete_sync(momento_client *c, const char *cache, const void *key, size_t key_len,
                        momento_result **ret)
{
    momento__op_args a = {.cache = cache, .key = key, .key_len = key_len};
    return momento__run_blocking(c, submit_delete, c, &a, ret);
}

int momento_create_cache_sync(momento_client *c, const char *cache, momento_result **ret)
{
    momento__op_args a = {.cache = cache};
    return momento__run_blocking(c, submit_create, c, &a, ret);
}

int momento_delete_cache_sync(momento_client *c, const char *cache, momento_result **ret)
{
    momento__op_args a = {.cache = cache};
    return momento__run_blocking(c, submit_delete_cache, c, &a, ret);
}

int momento_flush_cache_sync(momento_client *c, const char *cache, momento_result **ret)
{
    momento__op_args a = {.cache = cache};
    return momento__run_blocking(c, submit_flush, c, &a, ret);
}

int momento_list_caches_sync(momento_client *c, momento_result **ret)
{
    return momento__run_blocking(c, submit_list, c, NULL, ret);
}

int momento_ping_sync(momento_client *c, momento_result **ret)
{
    return momento__run_blocking(c, submit_ping, c, NULL, ret);
}

/* The scalar and batch operations. Their extra arguments travel in this. */
typedef struct more_args {
    momento__op_args base;
    momento_condition condition;
    const void *compare;
    size_t compare_len;
    int64_t amount;
    const void *const *keys;
    const size_t *key_lens;
    const void *const *values;
    const size_t *value_lens;
    size_t n;
    int which; /* ttl: 0 update, 1 increase, 2 decrease */
} more_args;

static int submit_set_if(void *c, const void *a, momento_callback cb, void *w)
{
    const more_args *o = a;
    return momento_set_if(c, o->base.cache, o->base.key, o->base.key_len, o->base.value,
                          o->base.value_len, o->base.ttl_ms, o->condition, o->compare,
                          o->compare_len, cb, w);
}

static int submit_increment(void *c, const void *a, momento_callback cb, void *w)
{
    const more_args *o = a;
    return momento_increment(c, o->base.cache, o->base.key, o->base.key_len, o->amount,
                             o->base.ttl_ms, cb, w);
}

static int submit_keys_exist(void *c, const void *a, momento_callback cb, void *w)
{
    const more_args *o = a;
    return momento_keys_exist(c, o->base.cache, o->keys, o->key_lens, o->n, cb, w);
}

static int submit_item_get_ttl(void *c, const void *a, momento_callback cb, void *w)
{
    const more_args *o = a;
    return momento_item_get_ttl(c, o->base.cache, o->base.key, o->base.key_len, cb, w);
}

static int submit_ttl(void *c, const void *a, momento_callback cb, void *w)
{
    const more_args *o = a;
    int (*fn)(momento_client *, const char *, const void *, size_t, uint64_t, momento_callback,
              void *) = o->which == 1   ? momento_increase_ttl
                        : o->which == 2 ? momento_decrease_ttl
                                        : momento_update_ttl;
    return fn(c, o->base.cache, o->base.key, o->base.key_len, o->base.ttl_ms, cb, w);
}

static int submit_get_batch(void *c, const void *a, momento_callback cb, void *w)
{
    const more_args *o = a;
    return momento_get_batch(c, o->base.cache, o->keys, o->key_lens, o->n, cb, w);
}

static int submit_set_batch(void *c, const void *a, momento_callback cb, void *w)
{
    const more_args *o = a;
    return momento_set_batch(c, o->base.cache, o->keys, o->key_lens, o->values, o->value_lens,
                             o->n, o->base.ttl_ms, cb, w);
}

int momento_set_if_sync(momento_client *c, const char *cache, const void *key, size_t key_len,
                        const void *value, size_t value_len, uint64_t ttl_ms,
                        momento_condition condition, const void *compare, size_t compare_len,
                        momento_result **ret)
{
    more_args a = {.base = {cache, key, key_len, value, value_len, ttl_ms},
                   .condition = condition, .compare = compare, .compare_len = compare_len};
    return momento__run_blocking(c, submit_set_if, c, &a, ret);
}

int momento_increment_sync(momento_client *c, const char *cache, const void *key, size_t key_len,
                           int64_t amount, uint64_t ttl_ms, momento_result **ret)
{
    more_args a = {.base = {.cache = cache, .key = key, .key_len = key_len, .ttl_ms = ttl_ms},
                   .amount = amount};
    return momento__run_blocking(c, submit_increment, c, &a, ret);
}

int momento_keys_exist_sync(momento_client *c, const char *cache, const void *const *keys,
                            const size_t *key_lens, size_t n, momento_result **ret)
{
    more_args a = {.base = {.cache = cache}, .keys = keys, .key_lens = key_lens, .n = n};
    return momento__run_blocking(c, submit_keys_exist, c, &a, ret);
}

int momento_key_exists_sync(momento_client *c, const char *cache, const void *key, size_t key_len,
                            momento_result **ret)
{
    return momento_keys_exist_sync(c, cache, &key, &key_len, 1, ret);
}

int momento_item_get_ttl_sync(momento_client *c, const char *cache, const void *key,
                              size_t key_len, momento_result **ret)
{
    more_args a = {.base = {.cache = cache, .key = key, .key_len = key_len}};
    return momento__run_blocking(c, submit_item_get_ttl, c, &a, ret);
}

static int ttl_sync(momento_client *c, const char *cache, const void *key, size_t key_len,
                    uint64_t ttl_ms, int which, momento_result **ret)
{
    more_args a = {.base = {.cache = cache, .key = key, .key_len = key_len, .ttl_ms = ttl_ms},
                   .which = which};
    return momento__run_blocking(c, submit_ttl, c, &a, ret);
}

int momento_update_ttl_sync(momento_client *c, const char *cache, const void *key, size_t key_len,
                            uint64_t ttl_ms, momento_result **ret)
{
    return ttl_sync(c, cache, key, key_len, ttl_ms, 0, ret);
}

int momento_increase_ttl_sync(momento_client *c, const char *cache, const void *key,
                              size_t key_len, uint64_t ttl_ms, momento_result **ret)
{
    return ttl_sync(c, cache, key, key_len, ttl_ms, 1, ret);
}

int momento_decrease_ttl_sync(momento_client *c, const char *cache, const void *key,
                              size_t key_len, uint64_t ttl_ms, momento_result **ret)
{
    return ttl_sync(c, cache, key, key_len, ttl_ms, 2, ret);
}

int momento_get_batch_sync(momento_client *c, const char *cache, const void *const *keys,
                           const size_t *key_lens, size_t n, momento_result **ret)
{
    more_args a = {.base = {.cache = cache}, .keys = keys, .key_lens = key_lens, .n = n};
    return momento__run_blocking(c, submit_get_batch, c, &a, ret);
}

int momento_set_batch_sync(momento_client *c, const char *cache, const void *const *keys,
                           const size_t *key_lens, const void *const *values,
                           const size_t *value_lens, size_t n, uint64_t ttl_ms,
                           momento_result **ret)
{
    more_args a = {.base = {.cache = cache, .ttl_ms = ttl_ms}, .keys = keys, .key_lens = key_lens,
                   .values = values, .value_lens = value_lens, .n = n};
    return momento__run_blocking(c, submit_set_batch, c, &a, ret);
}
