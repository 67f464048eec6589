/* The server's in-memory data: named caches of binary keys with millisecond
 * TTLs, one LRU order across all caches for eviction under --max-memory.
 * One thread at a time: the server thread holding the turn (srv_turns.h).
 * Big collections that leave the store are freed on a thread of its own
 * (the janitor), which touches nothing else. */
#ifndef MOMENTO_LOCAL_STORE_H
#define MOMENTO_LOCAL_STORE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uthash.h>

typedef struct store_cache store_cache;

/* What a key holds: Momento's item types (ItemGetType's numbering). */
typedef enum store_kind {
    STORE_SCALAR = 0,
    STORE_DICTIONARY = 1,
    STORE_SET = 2,
    STORE_LIST = 3,
    STORE_SORTED_SET = 4
} store_kind;

/* A collection's data, owned by its item: each family's structure
 * (rpc_dictionary.c, rpc_set.c, rpc_list.c, rpc_sorted_set.c) begins with
 * this header, so that the store can free it and count it without knowing
 * the family. */
typedef struct store_coll {
    void (*destroy)(struct store_coll *coll); /* frees the whole structure; touches nothing else */
    uint64_t bytes;  /* what it costs against max_bytes; set with store_coll_resize() */
    struct store_coll *next_free; /* in the janitor's queue */
} store_coll;

typedef struct store_item {
    UT_hash_handle hh;
    store_kind kind;
    store_coll *coll;                       /* a collection's data; NULL for a scalar */
    struct store_item *lru_prev, *lru_next; /* most recent at the head */
    store_cache *cache;
    int64_t expires_ms;                     /* monotonic ms; 0 = never */
    uint64_t cost;                          /* what it counts against max_bytes */
    bool mapped;                            /* its own mmap, not malloc */
    size_t key_len;
    size_t value_len;
    uint8_t *value;                         /* points into data */
    uint8_t data[];                         /* key bytes, then value bytes */
} store_item;

/* A key pinned in its cache (store_pin()). */
typedef struct store_pinned_key {
    UT_hash_handle hh;
    unsigned count;
    size_t len;
    uint8_t key[];
} store_pinned_key;

/* A leaderboard (rpc_leaderboard.c): named within its cache, but apart
 * from its items, as Momento's leaderboard service keeps them (its own
 * names, no TTL, never evicted, no ItemGetType). Its memory counts against
 * max_bytes as memory outside the items (store_charge()). */
typedef struct store_board {
    UT_hash_handle hh;
    store_coll *coll;    /* its data; coll->bytes is what is charged for it */
    uint64_t own;        /* what this record itself is charged */
    size_t name_len;
    char name[];
} store_board;

struct store_cache {
    UT_hash_handle hh;
    store_item *items;
    store_board *boards;
    store_pinned_key *pins; /* keys long requests work on (uthash by key bytes) */
    unsigned pinned;     /* store_pin() calls not yet undone, in this cache */
    bool whole;          /* pinned whole (store_pin_cache()) */
    char name[];
};

/* Frees big collections off the server's threads: their destroy()s, and
 * malloc_trim(), run on its thread, started at first use. */
typedef struct store_janitor {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    store_coll *queue;
    bool trim;           /* malloc_trim() wanted */
    bool quit;
    bool started;
    pthread_t thread;
} store_janitor;

/* Gives back memory held outside the items (store_charge()'s) when
 * something needs room: frees what it can, aiming at `want` bytes, and
 * returns what it freed (store_uncharge()d already). */
typedef uint64_t (*store_reclaim_fn)(void *ctx, uint64_t want);

typedef struct store {
    store_cache *caches;
    store_item *lru_head, *lru_tail;
    uint64_t bytes;      /* the items' costs (store_item_cost) */
    uint64_t max_bytes;  /* 0 = unlimited */
    uint64_t freed;      /* malloc'd bytes freed since the heap was last trimmed */
    uint64_t evictions;
    uint64_t items;
    /* Memory held outside the items and counted against max_bytes with
     * them (topics.c's: topics, replay buffers, subscriber queues). */
    uint64_t outside;
    store_reclaim_fn reclaim;
    void *reclaim_ctx;
    /* Called once per item a cache's flush or deletion frees (srv_yield():
     * the work gives its turn away between slices). */
    void (*yield)(void);
    unsigned pins;       /* keys pinned, all caches */
    /* Where the next store_sweep() goes on from (toward the head); NULL:
     * the tail. Moved off an item that leaves or moves. */
    store_item *sweep_at;
    store_janitor janitor;
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

/* What an item of these sizes costs against max_bytes: the memory its
 * block really takes (malloc's rounding and header, or whole pages for a
 * large item, which gets its own mapping so that freeing it returns the
 * memory to the system) plus STORE_ITEM_OVERHEAD for its share of the hash
 * table. Within a few bytes of what store_set() counts. */
#define STORE_ITEM_OVERHEAD 32u
uint64_t store_item_cost(size_t key_len, size_t value_len);
/* Could an item of these sizes be stored at all (its cost within
 * max_bytes, if there is a limit)? */
bool store_item_fits(const store *s, size_t key_len, size_t value_len);

/* What store_set() can fail with. */
#define STORE_TOO_BIG (-3)   /* the item's cost alone exceeds max_bytes */

/* Inserts or replaces. ttl_ms 0 = never expires. Returns 0, STORE_TOO_BIG or
 * STORE_NO_MEMORY; on failure the store is as it was (an older value of the
 * key included). Evicts least recently used items of any cache to keep the
 * total cost within max_bytes. */
int store_set(store *s, store_cache *c, const uint8_t *key, size_t key_len, const uint8_t *value,
              size_t value_len, uint64_t ttl_ms, int64_t now);

/* true when an item was removed. */
bool store_delete(store *s, store_cache *c, const uint8_t *key, size_t key_len);

/* ---- Collections (store.c). A collection is an item of its kind whose
 * value is empty and whose data is `coll`; its cost is its key's and
 * coll->bytes. Scalar operations (store_get, store_set, ...) see a
 * collection as an item like any other: ItemGetType, ItemGetTtl, UpdateTtl,
 * Delete and KeysExist apply to it unchanged; Get on one is the type
 * mismatch its RPC reports. */

/* The live collection at `key`: sets *ret_it to it, or to NULL when the key
 * is absent or expired. Returns 0, or STORE_WRONG_KIND when the key holds
 * another kind (scalar or collection). A hit moves it to the head of the
 * LRU order. */
#define STORE_WRONG_KIND (-4)
int store_coll_find(store *s, store_cache *c, const uint8_t *key, size_t key_len,
                    store_kind kind, int64_t now, store_item **ret_it);

/* Adds a new collection `coll` (its bytes already set) at `key`, which must
 * be absent (store_coll_find() said so), expiring ttl_ms from now (0 =
 * never). Evicts least recently used items to make room. Returns 0,
 * STORE_TOO_BIG or STORE_NO_MEMORY; on failure `coll` is NOT freed (the
 * caller still owns it). */
int store_coll_add(store *s, store_cache *c, const uint8_t *key, size_t key_len, store_kind kind,
                   store_coll *coll, uint64_t ttl_ms, int64_t now, store_item **ret_it);

/* After a write changed `it`'s collection: its cost becomes `new_bytes`,
 * evicting other items (never `it`) if it grew past max_bytes. Returns 0,
 * or STORE_TOO_BIG when even evicting every other item leaves no room
 * (the caller then undoes its write, or deletes the item). */
int store_coll_resize(store *s, store_item *it, uint64_t new_bytes);

/* Momento's CollectionTtl on a write to an existing collection: with
 * `refresh` its expiry becomes ttl_ms from now (0 = never); without, it is
 * left alone. */
void store_coll_refresh_ttl(store_item *it, uint64_t ttl_ms, bool refresh, int64_t now);

/* Frees a collection no item holds: on the janitor's thread when big. */
void store_free_aside(store *s, store_coll *coll);

/* Removes `it` (a collection that became empty: Momento deletes it). */
void store_remove(store *s, store_item *it);

/* What a malloc'd block (of a collection's data) really takes: its usable
 * size plus malloc's own header, as an item's cost counts its block. The
 * families add up these, plus STORE_ITEM_OVERHEAD per entry for its share
 * of their hash tables, into coll->bytes. */
uint64_t store_block_cost(const void *block);

/* ---- Leaderboards (store_board above). A cache's flush or deletion
 * drops its leaderboards with its items. */

/* The leaderboard named so in `c`, or NULL. */
store_board *store_board_find(store_cache *c, const char *name, size_t len);
/* Adds `coll` (its bytes set) as the leaderboard `name`, which must be
 * absent, charging it. Returns 0, or STORE_NO_MEMORY (the limit cannot
 * hold it, or out of memory); on failure `coll` is NOT freed. */
int store_board_add(store *s, store_cache *c, const char *name, size_t len, store_coll *coll);
/* Its data's cost becomes `bytes`: charged more (which may evict items,
 * and fails with STORE_NO_MEMORY when even that leaves no room, the cost
 * unchanged) or given back. */
int store_board_resize(store *s, store_board *b, uint64_t bytes);
/* Removes it and frees its data (on the janitor's thread when big). */
void store_board_delete(store *s, store_cache *c, store_board *b);

/* ---- Memory outside the items. One budget, max_bytes, holds the items
 * and what store_charge() counts. When anything needs room, the reclaim
 * hook gives back what it can first (topics.c: topics no one listens to,
 * then resume buffers, which only ever spare a resuming subscriber a
 * discontinuity), then least recently used items are evicted. An item
 * write still stores its item when the rest is memory that cannot give
 * way (subscriptions' queues, bounded on their own). */

/* Installs the hook (NULL: none). */
void store_set_reclaim(store *s, store_reclaim_fn fn, void *ctx);
/* Counts `bytes` more outside the items, making room for them as above.
 * Returns 0, or STORE_NO_MEMORY (nothing counted) when even with every
 * item evicted they would not fit. Always 0 without a limit. */
int store_charge(store *s, uint64_t bytes);
/* What a store_charge() counted has been freed. */
void store_uncharge(store *s, uint64_t bytes);
/* What a malloc'd block of `n` bytes will take, to charge before it is
 * allocated: glibc's rounding and header, or whole pages from 64 KiB on
 * (the binary maps such blocks; an estimate either way, within a page). */
uint64_t store_alloc_cost(size_t n);

/* ---- Pins. A long request works on its keys in slices, other calls
 * running between them (srv_turns.h). While a key is pinned, eviction and
 * the sweep leave its item alone (the request holds it), and the server
 * holds back the calls that name it. A key may be pinned without an item
 * (one the request will create); pins count, so two pins need two
 * unpins. */
/* The key's pin record (the same for each pin of one key), or NULL when
 * out of memory (nothing pinned). */
store_pinned_key *store_pin(store *s, store_cache *c, const uint8_t *key, size_t len);
/* Undoes one store_pin() that returned `p`. */
void store_unpin(store *s, store_cache *c, store_pinned_key *p);
bool store_pinned(const store_cache *c, const uint8_t *key, size_t len);
/* The whole cache, for a flush or deletion that runs in slices: every call
 * that names it waits; its items may still be evicted or expire (they are
 * leaving anyway). */
void store_pin_cache(store_cache *c);
void store_unpin_cache(store_cache *c);
/* Pinned keys in it, or pinned whole. */
static inline bool store_cache_busy(const store_cache *c)
{
    return c->pinned || c->whole;
}
/* Installs the hook (NULL: none). */
void store_set_yield(store *s, void (*yield)(void));

/* Looks at `budget` items for expired ones to free, from the LRU order's
 * cold end, going on where the last sweep stopped (so that sweeps of a few
 * thousand items, each well under a millisecond, still cover the whole
 * store in turn); returns how many it freed. Also gives freed heap memory
 * back to the system once enough has been freed since the last time, so
 * that evictions do not leave the process's RSS at its peak. */
size_t store_sweep(store *s, int64_t now, size_t budget);

#endif
