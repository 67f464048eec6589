/* The server's in-memory data: named caches of binary keys with millisecond
 * TTLs, one LRU order across all caches for eviction under --max-memory.
 * Single-threaded: only the server's own thread touches a store. */
#ifndef MOMENTO_LOCAL_STORE_H
#define MOMENTO_LOCAL_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uthash.h>

typedef struct store_cache store_cache;

typedef struct store_item {
    UT_hash_handle hh;
    struct store_item *lru_prev, *lru_next; /* most recent at the head */
    store_cache *cache;
    int64_t expires_ms;                     /* monotonic ms; 0 = never */
    size_t key_len;
    size_t value_len;
    uint8_t *value;                         /* points into data */
    uint8_t data[];                         /* key bytes, then value bytes */
} store_item;

struct store_cache {
    UT_hash_handle hh;
    store_item *items;
    char name[];
};

typedef struct store {
    store_cache *caches;
    store_item *lru_head, *lru_tail;
    uint64_t bytes;      /* accounted size of all items */
    uint64_t max_bytes;  /* 0 = unlimited */
    uint64_t evictions;
    uint64_t items;
} store;

int64_t store_now_ms(void);

void store_init(store *s, uint64_t max_bytes);
void store_destroy(store *s);

/* What store_create_cache() can fail with. */
#define STORE_EXISTS (-1)    /* a cache of that name exists */
#define STORE_NO_MEMORY (-2)

/* 0, STORE_EXISTS or STORE_NO_MEMORY. */
int store_create_cache(store *s, const char *name);
/* 0, or -1 when the name is missing. */
int store_delete_cache(store *s, const char *name);
int store_flush_cache(store *s, const char *name);
store_cache *store_find_cache(store *s, const char *name, size_t len);

/* A live item, or NULL when absent or expired (expired ones are freed on the
 * way). A hit moves the item to the head of the LRU order. */
store_item *store_get(store *s, store_cache *c, const uint8_t *key, size_t key_len, int64_t now);

/* Inserts or replaces. ttl_ms 0 = never expires. Returns the item or NULL
 * when out of memory. May evict least recently used items of any cache. */
store_item *store_set(store *s, store_cache *c, const uint8_t *key, size_t key_len,
                      const uint8_t *value, size_t value_len, uint64_t ttl_ms, int64_t now);

/* true when an item was removed. */
bool store_delete(store *s, store_cache *c, const uint8_t *key, size_t key_len);

/* Frees at most `budget` expired items; returns how many. */
size_t store_sweep(store *s, int64_t now, size_t budget);

#endif
