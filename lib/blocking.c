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
