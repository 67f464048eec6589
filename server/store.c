/* The in-memory store. Expired items are never returned: a lookup frees an
 * expired item it meets, and a periodic sweep reclaims the rest. */
#include "store.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

int64_t store_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static uint64_t item_cost(const store_item *it)
{
    return sizeof(*it) + it->key_len + it->value_len;
}

static void lru_unlink(store *s, store_item *it)
{
    if (it->lru_prev)
        it->lru_prev->lru_next = it->lru_next;
    else
        s->lru_head = it->lru_next;
    if (it->lru_next)
        it->lru_next->lru_prev = it->lru_prev;
    else
        s->lru_tail = it->lru_prev;
    it->lru_prev = it->lru_next = NULL;
}

static void lru_push_head(store *s, store_item *it)
{
    it->lru_prev = NULL;
    it->lru_next = s->lru_head;
    if (s->lru_head)
        s->lru_head->lru_prev = it;
    s->lru_head = it;
    if (!s->lru_tail)
        s->lru_tail = it;
}

static void item_free(store *s, store_item *it)
{
    HASH_DELETE(hh, it->cache->items, it);
    lru_unlink(s, it);
    s->bytes -= item_cost(it);
    s->items--;
    free(it);
}

void store_init(store *s, uint64_t max_bytes)
{
    memset(s, 0, sizeof(*s));
    s->max_bytes = max_bytes;
}

static void cache_clear(store *s, store_cache *c)
{
    store_item *it, *tmp;
    HASH_ITER(hh, c->items, it, tmp) item_free(s, it);
}

void store_destroy(store *s)
{
    store_cache *c, *tmp;
    HASH_ITER(hh, s->caches, c, tmp)
    {
        cache_clear(s, c);
        HASH_DELETE(hh, s->caches, c);
        free(c);
    }
}

store_cache *store_find_cache(store *s, const char *name, size_t len)
{
    store_cache *c = NULL;
    HASH_FIND(hh, s->caches, name, len, c);
    return c;
}

int store_create_cache(store *s, const char *name)
{
    size_t len = strlen(name);
    if (store_find_cache(s, name, len))
        return STORE_EXISTS;
    store_cache *c = calloc(1, sizeof(*c) + len + 1);
    if (!c)
        return STORE_NO_MEMORY;
    memcpy(c->name, name, len + 1);
    HASH_ADD_KEYPTR(hh, s->caches, c->name, len, c);
    return 0;
}

int store_delete_cache(store *s, const char *name)
{
    store_cache *c = store_find_cache(s, name, strlen(name));
    if (!c)
        return -1;
    cache_clear(s, c);
    HASH_DELETE(hh, s->caches, c);
    free(c);
    return 0;
}

int store_flush_cache(store *s, const char *name)
{
    store_cache *c = store_find_cache(s, name, strlen(name));
    if (!c)
        return -1;
    cache_clear(s, c);
    return 0;
}

static bool expired(const store_item *it, int64_t now)
{
    return it->expires_ms != 0 && it->expires_ms <= now;
}

store_item *store_get(store *s, store_cache *c, const uint8_t *key, size_t key_len, int64_t now)
{
    store_item *it = NULL;
    HASH_FIND(hh, c->items, key, key_len, it);
    if (!it)
        return NULL;
    if (expired(it, now)) {
        item_free(s, it);
        return NULL;
    }
    if (s->lru_head != it) {
        lru_unlink(s, it);
        lru_push_head(s, it);
    }
    return it;
}

store_item *store_set(store *s, store_cache *c, const uint8_t *key, size_t key_len,
                      const uint8_t *value, size_t value_len, uint64_t ttl_ms, int64_t now)
{
    store_item *old = NULL;
    HASH_FIND(hh, c->items, key, key_len, old);
    if (old)
        item_free(s, old);

    store_item *it = malloc(sizeof(*it) + key_len + value_len);
    if (!it)
        return NULL;
    memset(it, 0, sizeof(*it));
    it->cache = c;
    it->key_len = key_len;
    it->value_len = value_len;
    memcpy(it->data, key, key_len);
    it->value = it->data + key_len;
    if (value_len)
        memcpy(it->value, value, value_len);
    /* TTLs beyond what the clock can hold simply never expire. */
    it->expires_ms = (ttl_ms == 0 || ttl_ms > (uint64_t)(INT64_MAX - now)) ? 0
                                                                            : now + (int64_t)ttl_ms;

    uint64_t cost = item_cost(it);
    while (s->max_bytes && s->lru_tail && s->bytes + cost > s->max_bytes) {
        item_free(s, s->lru_tail);
        s->evictions++;
    }
    HASH_ADD_KEYPTR(hh, c->items, it->data, key_len, it);
    lru_push_head(s, it);
    s->bytes += cost;
    s->items++;
    return it;
}

bool store_delete(store *s, store_cache *c, const uint8_t *key, size_t key_len)
{
    store_item *it = NULL;
    HASH_FIND(hh, c->items, key, key_len, it);
    if (!it)
        return false;
    item_free(s, it);
    return true;
}

size_t store_sweep(store *s, int64_t now, size_t budget)
{
    /* Walk from the cold end: idle items are the likeliest to have expired,
     * and the walk is bounded so a huge store never stalls the server. */
    size_t freed = 0, seen = 0;
    store_item *it = s->lru_tail;
    while (it && seen < budget) {
        store_item *prev = it->lru_prev;
        if (expired(it, now)) {
            item_free(s, it);
            freed++;
        }
        seen++;
        it = prev;
    }
    return freed;
}
