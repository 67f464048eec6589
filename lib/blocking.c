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

/* A submit function bound to its arguments. */
typedef int (*submit_fn)(momento_client *c, const void *args, momento_callback cb, void *w);

static int run(momento_client *c, submit_fn submit, const void *args, momento_result **ret)
{
    if (ret)
        *ret = NULL;
    if (!c)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    /* The completion thread would wait for itself. */
    if (momento__current_client == c)
        return MOMENTO_ERR_WOULD_DEADLOCK;
    waiter w = {.done = false, .result = NULL};
    pthread_mutex_init(&w.lock, NULL);
    pthread_cond_init(&w.cond, NULL);
    int rc = submit(c, args, wake, &w);
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

typedef struct op_args {
    const char *cache;
    const void *key;
    size_t key_len;
    const void *value;
    size_t value_len;
    uint64_t ttl_ms;
} op_args;

static int submit_get(momento_client *c, const void *a, momento_callback cb, void *w)
{
    const op_args *o = a;
    return momento_get(c, o->cache, o->key, o->key_len, cb, w);
}

static int submit_set(momento_client *c, const void *a, momento_callback cb, void *w)
{
    const op_args *o = a;
    return momento_set(c, o->cache, o->key, o->key_len, o->value, o->value_len, o->ttl_ms, cb, w);
}

static int submit_delete(momento_client *c, const void *a, momento_callback cb, void *w)
{
    const op_args *o = a;
    return momento_delete(c, o->cache, o->key, o->key_len, cb, w);
}

static int submit_create(momento_client *c, const void *a, momento_callback cb, void *w)
{
    return momento_create_cache(c, ((const op_args *)a)->cache, cb, w);
}

static int submit_delete_cache(momento_client *c, const void *a, momento_callback cb, void *w)
{
    return momento_delete_cache(c, ((const op_args *)a)->cache, cb, w);
}

static int submit_flush(momento_client *c, const void *a, momento_callback cb, void *w)
{
    return momento_flush_cache(c, ((const op_args *)a)->cache, cb, w);
}

static int submit_list(momento_client *c, const void *a, momento_callback cb, void *w)
{
    (void)a;
    return momento_list_caches(c, cb, w);
}

static int submit_ping(momento_client *c, const void *a, momento_callback cb, void *w)
{
    (void)a;
    return momento_ping(c, cb, w);
}

int momento_get_sync(momento_client *c, const char *cache, const void *key, size_t key_len,
                     momento_result **ret)
{
    op_args a = {.cache = cache, .key = key, .key_len = key_len};
    return run(c, submit_get, &a, ret);
}

int momento_set_sync(momento_client *c, const char *cache, const void *key, size_t key_len,
                     const void *value, size_t value_len, uint64_t ttl_ms, momento_result **ret)
{
    op_args a = {cache, key, key_len, value, value_len, ttl_ms};
    return run(c, submit_set, &a, ret);
}

int momento_delete_sync(momento_client *c, const char *cache, const void *key, size_t key_len,
                        momento_result **ret)
{
    op_args a = {.cache = cache, .key = key, .key_len = key_len};
    return run(c, submit_delete, &a, ret);
}

int momento_create_cache_sync(momento_client *c, const char *cache, momento_result **ret)
{
    op_args a = {.cache = cache};
    return run(c, submit_create, &a, ret);
}

int momento_delete_cache_sync(momento_client *c, const char *cache, momento_result **ret)
{
    op_args a = {.cache = cache};
    return run(c, submit_delete_cache, &a, ret);
}

int momento_flush_cache_sync(momento_client *c, const char *cache, momento_result **ret)
{
    op_args a = {.cache = cache};
    return run(c, submit_flush, &a, ret);
}

int momento_list_caches_sync(momento_client *c, momento_result **ret)
{
    return run(c, submit_list, NULL, ret);
}

int momento_ping_sync(momento_client *c, momento_result **ret)
{
    return run(c, submit_ping, NULL, ret);
}
