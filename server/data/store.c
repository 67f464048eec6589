/* The in-memory store. Expired items are never returned: a lookup frees an
 * expired item it meets, and a periodic sweep reclaims the rest.
 *
 * Memory: every item is one block (header, key, value) whose real size is
 * what it counts against max_bytes, so --max-memory bounds what the items
 * occupy, not just their bytes. Large items get their own mapping, which
 * goes back to the system the moment the item is freed; small ones come from
 * malloc, whose freed memory the sweep hands back with malloc_trim(). The
 * same budget holds memory charged from outside (store_charge(): topics),
 * whose owner is asked to give some back before items are evicted. */
#include "data/store.h"

#include "data/srv_list.h"

#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* Blocks of at least this many bytes are mapped, not malloc'd: the heap then
 * holds only small blocks, which evictions free and later items reuse, and
 * never the holes a freed multi-megabyte value would leave. */
#define MAPPED_MIN (64u * 1024u)
/* The bytes glibc's malloc keeps before each block (its size field), which
 * malloc_usable_size() leaves out; blocks are multiples of 16, at least 32. */
#define MALLOC_HEADER 8u
#define MALLOC_ALIGN 16u
#define MALLOC_MIN_CHUNK 32u
/* Trim the heap once this much malloc'd item memory has been freed. */
#define TRIM_AFTER_BYTES (4u * 1024u * 1024u)
/* A collection this big that leaves the store is freed by the janitor:
 * freeing a million elements takes tens of milliseconds, which the server
 * thread would otherwise spend while every other call waited. */
#define FREE_ASIDE_BYTES (256u * 1024u)

int64_t store_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static size_t page_bytes(void)
{
    static size_t page;
    if (!page) {
        long p = sysconf(_SC_PAGESIZE);
        page = p > 0 ? (size_t)p : 4096;
    }
    return page;
}

static uint64_t round_up(uint64_t n, uint64_t to)
{
    return (n + to - 1) / to * to;
}

static uint64_t block_bytes(size_t key_len, size_t value_len)
{
    return (uint64_t)sizeof(store_item) + key_len + value_len;
}

/* The memory a mapped block of `n` bytes takes. */
static uint64_t mapped_bytes(uint64_t n)
{
    return round_up(n, page_bytes());
}

uint64_t store_item_cost(size_t key_len, size_t value_len)
{
    uint64_t n = block_bytes(key_len, value_len);
    uint64_t mem;
    if (n >= MAPPED_MIN) {
        mem = mapped_bytes(n);
    } else {
        mem = round_up(n + MALLOC_HEADER, MALLOC_ALIGN);
        if (mem < MALLOC_MIN_CHUNK)
            mem = MALLOC_MIN_CHUNK;
    }
    return mem + STORE_ITEM_OVERHEAD;
}

bool store_item_fits(const store *s, size_t key_len, size_t value_len)
{
    return !s->max_bytes || store_item_cost(key_len, value_len) <= s->max_bytes;
}

/* A block for an item of these sizes, its sizes, `mapped` and `cost` set
 * and the rest zero, or NULL. */
static store_item *item_alloc(size_t key_len, size_t value_len)
{
    uint64_t n = block_bytes(key_len, value_len);
    store_item *it;
    bool mapped = n >= MAPPED_MIN;
    if (mapped) {
        void *p = mmap(NULL, (size_t)mapped_bytes(n), PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            return NULL;
        it = p;
    } else if (!(it = malloc((size_t)n))) {
        return NULL;
    }
    memset(it, 0, sizeof(*it));
    it->key_len = key_len;
    it->value_len = value_len;
    it->mapped = mapped;
    it->cost = (mapped ? mapped_bytes(n) : malloc_usable_size(it) + MALLOC_HEADER) +
               STORE_ITEM_OVERHEAD;
    return it;
}

/* Gives an item's block back (not linked anywhere). */
static void item_release(store *s, store_item *it)
{
    if (it->mapped) {
        munmap(it, (size_t)mapped_bytes(block_bytes(it->key_len, it->value_len)));
    } else {
        s->freed += it->cost;
        free(it);
    }
}

static void lru_unlink(store *s, store_item *it)
{
    if (s->sweep_at == it)
        s->sweep_at = it->lru_prev;
    SRV_QUEUE_REMOVE(s->lru_head, s->lru_tail, it, lru_prev, lru_next);
}

static void lru_push_head(store *s, store_item *it)
{
    SRV_QUEUE_PREPEND(s->lru_head, s->lru_tail, it, lru_prev, lru_next);
}

/* Every way an item leaves the store (delete, replacement, eviction,
 * expiry, flush, cache deletion, destruction) comes through here, so a
 * collection's data is freed with its item wherever that happens. */
static void *janitor_main(void *arg)
{
    store_janitor *j = arg;
    pthread_mutex_lock(&j->mu);
    for (;;) {
        while (!j->queue && !j->trim && !j->quit)
            pthread_cond_wait(&j->cv, &j->mu);
        store_coll *q = j->queue;
        bool trim = j->trim;
        if (!q && !trim)
            break; /* quit, with nothing left */
        j->queue = NULL;
        j->trim = false;
        pthread_mutex_unlock(&j->mu);
        while (q) {
            store_coll *next = q->next_free;
            q->destroy(q);
            q = next;
        }
#ifdef __GLIBC__
        if (trim)
            malloc_trim(0);
#endif
        pthread_mutex_lock(&j->mu);
    }
    pthread_mutex_unlock(&j->mu);
    return NULL;
}

/* Queues `coll` for the janitor (or a trim when NULL), starting it at first
 * use. False when it cannot run (no thread): the caller does it itself. */
static bool janitor_take(store *s, store_coll *coll)
{
    store_janitor *j = &s->janitor;
    pthread_mutex_lock(&j->mu);
    if (!j->started) {
        if (pthread_create(&j->thread, NULL, janitor_main, j) != 0) {
            pthread_mutex_unlock(&j->mu);
            return false;
        }
        pthread_setname_np(j->thread, "momento-free");
        j->started = true;
    }
    if (coll) {
        coll->next_free = j->queue;
        j->queue = coll;
    } else {
        j->trim = true;
    }
    pthread_cond_signal(&j->cv);
    pthread_mutex_unlock(&j->mu);
    return true;
}

static void janitor_stop(store *s)
{
    store_janitor *j = &s->janitor;
    pthread_mutex_lock(&j->mu);
    j->quit = true;
    pthread_cond_signal(&j->cv);
    bool started = j->started;
    pthread_mutex_unlock(&j->mu);
    if (started)
        pthread_join(j->thread, NULL);
    pthread_mutex_destroy(&j->mu);
    pthread_cond_destroy(&j->cv);
}

static void item_free(store *s, store_item *it)
{
    HASH_DELETE(hh, it->cache->items, it);
    lru_unlink(s, it);
    s->bytes -= it->cost;
    s->items--;
    if (it->coll && (it->coll->bytes < FREE_ASIDE_BYTES || !janitor_take(s, it->coll)))
        it->coll->destroy(it->coll);
    item_release(s, it);
}

/* Whether a long request holds `it` (store_pin()). */
static bool item_pinned(const store_item *it)
{
    return it->cache->pinned && store_pinned(it->cache, it->data, it->key_len);
}

void store_init(store *s, uint64_t max_bytes)
{
    memset(s, 0, sizeof(*s));
    s->max_bytes = max_bytes;
    pthread_mutex_init(&s->janitor.mu, NULL);
    pthread_cond_init(&s->janitor.cv, NULL);
}

/* Frees a cache's items, giving the turn away between slices (the cache is
 * pinned whole meanwhile). Always the first item: between slices eviction
 * and the sweep may free any of the others. */
static void cache_clear(store *s, store_cache *c)
{
    store_item *it;
    while ((it = c->items)) {
        item_free(s, it);
        if (s->yield)
            s->yield();
    }
    store_board *b;
    while ((b = c->boards)) {
        store_board_delete(s, c, b);
        if (s->yield)
            s->yield();
    }
}

static void pins_clear(store_cache *c)
{
    store_pinned_key *p, *tmp;
    HASH_ITER(hh, c->pins, p, tmp)
    {
        HASH_DELETE(hh, c->pins, p);
        free(p);
    }
}

void store_destroy(store *s)
{
    store_cache *c, *tmp;
    s->yield = NULL;
    HASH_ITER(hh, s->caches, c, tmp)
    {
        cache_clear(s, c);
        pins_clear(c);
        HASH_DELETE(hh, s->caches, c);
        free(c);
    }
    janitor_stop(s);
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
    pins_clear(c);
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

/* An expiry ttl_ms from now (0 = never); TTLs beyond what the clock can
 * hold simply never expire. */
static int64_t expiry(uint64_t ttl_ms, int64_t now)
{
    return (ttl_ms == 0 || ttl_ms > (uint64_t)(INT64_MAX - now)) ? 0 : now + (int64_t)ttl_ms;
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

/* Whether `cost` more fits, counting `kept` as already gone. */
static bool fits(const store *s, uint64_t cost, uint64_t kept)
{
    return s->bytes + s->outside - kept + cost <= s->max_bytes;
}

/* Makes room for `cost` more (counting `keep` as already gone): first what
 * the reclaim hook gives back of the memory outside the items (its owner
 * decides what can go), then least recently used items, never `keep`. */
static void make_room(store *s, uint64_t cost, const store_item *keep)
{
    if (!s->max_bytes)
        return;
    uint64_t kept = keep ? keep->cost : 0;
    if (!fits(s, cost, kept) && s->reclaim)
        s->reclaim(s->reclaim_ctx, s->bytes + s->outside - kept + cost - s->max_bytes);
    while (!fits(s, cost, kept)) {
        store_item *victim = s->lru_tail;
        /* Never `keep`, nor what a long request holds (a few items). */
        while (victim && (victim == keep || (s->pins && item_pinned(victim))))
            victim = victim->lru_prev;
        /* No items at all: outside memory alone is over the limit. */
        if (!victim)
            break;
        item_free(s, victim);
        s->evictions++;
    }
}

int store_set(store *s, store_cache *c, const uint8_t *key, size_t key_len, const uint8_t *value,
              size_t value_len, uint64_t ttl_ms, int64_t now)
{
    if (!store_item_fits(s, key_len, value_len))
        return STORE_TOO_BIG;
    store_item *old = NULL;
    HASH_FIND(hh, c->items, key, key_len, old);
    /* Room first, so the new block is never allocated on top of a full
     * store; the old value stays until the new one exists. */
    make_room(s, store_item_cost(key_len, value_len), old);
    store_item *it = item_alloc(key_len, value_len);
    if (!it)
        return STORE_NO_MEMORY;
    if (s->max_bytes && it->cost > s->max_bytes) {
        item_release(s, it);
        return STORE_TOO_BIG;
    }
    it->cache = c;
    memcpy(it->data, key, key_len);
    it->value = it->data + key_len;
    if (value_len)
        memcpy(it->value, value, value_len);
    it->expires_ms = expiry(ttl_ms, now);
    if (old)
        item_free(s, old);
    make_room(s, it->cost, NULL); /* in case malloc rounded past the estimate */
    HASH_ADD_KEYPTR(hh, c->items, it->data, key_len, it);
    lru_push_head(s, it);
    s->bytes += it->cost;
    s->items++;
    return 0;
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

/* ---- Collections ---- */

int store_coll_find(store *s, store_cache *c, const uint8_t *key, size_t key_len,
                    store_kind kind, int64_t now, store_item **ret_it)
{
    store_item *it = store_get(s, c, key, key_len, now);
    *ret_it = NULL;
    if (it && it->kind != kind)
        return STORE_WRONG_KIND;
    *ret_it = it;
    return 0;
}

int store_coll_add(store *s, store_cache *c, const uint8_t *key, size_t key_len, store_kind kind,
                   store_coll *coll, uint64_t ttl_ms, int64_t now, store_item **ret_it)
{
    /* The block holds the key only; the collection's own memory is counted
     * through coll->bytes, which its family keeps up to date. */
    uint64_t cost = store_item_cost(key_len, 0) + coll->bytes;
    if (s->max_bytes && cost > s->max_bytes)
        return STORE_TOO_BIG;
    make_room(s, cost, NULL);
    store_item *it = item_alloc(key_len, 0);
    if (!it)
        return STORE_NO_MEMORY;
    it->cost += coll->bytes;
    if (s->max_bytes && it->cost > s->max_bytes) {
        item_release(s, it);
        return STORE_TOO_BIG;
    }
    it->cache = c;
    it->kind = kind;
    it->coll = coll;
    memcpy(it->data, key, key_len);
    it->value = it->data + key_len;
    it->expires_ms = expiry(ttl_ms, now);
    make_room(s, it->cost, NULL); /* in case malloc rounded past the estimate */
    HASH_ADD_KEYPTR(hh, c->items, it->data, key_len, it);
    lru_push_head(s, it);
    s->bytes += it->cost;
    s->items++;
    if (ret_it)
        *ret_it = it;
    return 0;
}

int store_coll_resize(store *s, store_item *it, uint64_t new_bytes)
{
    uint64_t old_bytes = it->coll->bytes;
    uint64_t cost = it->cost - old_bytes + new_bytes;
    if (s->max_bytes && cost > s->max_bytes)
        return STORE_TOO_BIG;
    s->bytes = s->bytes - it->cost + cost;
    it->cost = cost;
    it->coll->bytes = new_bytes;
    /* The item already counts in s->bytes, at its new cost: evict others
     * until the total fits again, never the collection being written. */
    make_room(s, it->cost, it);
    return 0;
}

void store_coll_refresh_ttl(store_item *it, uint64_t ttl_ms, bool refresh, int64_t now)
{
    if (refresh)
        it->expires_ms = expiry(ttl_ms, now);
}

void store_free_aside(store *s, store_coll *coll)
{
    if (coll->bytes < FREE_ASIDE_BYTES || !janitor_take(s, coll))
        coll->destroy(coll);
}

void store_remove(store *s, store_item *it)
{
    item_free(s, it);
}

uint64_t store_block_cost(const void *block)
{
    return malloc_usable_size((void *)block) + MALLOC_HEADER;
}

store_board *store_board_find(store_cache *c, const char *name, size_t len)
{
    store_board *b = NULL;
    HASH_FIND(hh, c->boards, name, len, b);
    return b;
}

int store_board_add(store *s, store_cache *c, const char *name, size_t len, store_coll *coll)
{
    store_board *b = malloc(sizeof(*b) + len + 1);
    if (!b)
        return STORE_NO_MEMORY;
    b->own = store_block_cost(b) + STORE_ITEM_OVERHEAD;
    if (store_charge(s, b->own + coll->bytes) != 0) {
        free(b);
        return STORE_NO_MEMORY;
    }
    b->coll = coll;
    b->name_len = len;
    memcpy(b->name, name, len);
    b->name[len] = '\0';
    HASH_ADD_KEYPTR(hh, c->boards, b->name, len, b);
    return 0;
}

int store_board_resize(store *s, store_board *b, uint64_t bytes)
{
    if (bytes > b->coll->bytes) {
        if (store_charge(s, bytes - b->coll->bytes) != 0)
            return STORE_NO_MEMORY;
    } else {
        store_uncharge(s, b->coll->bytes - bytes);
    }
    b->coll->bytes = bytes;
    return 0;
}

void store_board_delete(store *s, store_cache *c, store_board *b)
{
    HASH_DELETE(hh, c->boards, b);
    store_uncharge(s, b->own + b->coll->bytes);
    store_free_aside(s, b->coll);
    free(b);
}

void store_set_reclaim(store *s, store_reclaim_fn fn, void *ctx)
{
    s->reclaim = fn;
    s->reclaim_ctx = ctx;
}

int store_charge(store *s, uint64_t bytes)
{
    make_room(s, bytes, NULL);
    if (s->max_bytes && !fits(s, bytes, 0))
        return STORE_NO_MEMORY;
    s->outside += bytes;
    return 0;
}

void store_uncharge(store *s, uint64_t bytes)
{
    s->outside -= bytes;
    s->freed += bytes;
}

uint64_t store_alloc_cost(size_t n)
{
    if (n + MALLOC_HEADER >= MAPPED_MIN)
        return mapped_bytes((uint64_t)n + 2 * MALLOC_HEADER);
    uint64_t mem = round_up((uint64_t)n + MALLOC_HEADER, MALLOC_ALIGN);
    return mem < MALLOC_MIN_CHUNK ? MALLOC_MIN_CHUNK : mem;
}

size_t store_sweep(store *s, int64_t now, size_t budget)
{
    /* Walk from the cold end: idle items are the likeliest to have expired,
     * and the walk is bounded so a huge store never stalls the server. */
    size_t freed = 0, seen = 0;
    store_item *it = s->sweep_at ? s->sweep_at : s->lru_tail;
    while (it && seen < budget) {
        store_item *prev = it->lru_prev;
        if (expired(it, now) && !(s->pins && item_pinned(it))) {
            item_free(s, it);
            freed++;
        }
        seen++;
        it = prev;
    }
    s->sweep_at = it;
#ifdef __GLIBC__
    /* Freed small blocks stay resident in the heap until trimmed; trimming
     * also releases the whole free pages inside it, not only its top. On
     * the janitor's thread: trimming a big heap takes milliseconds. */
    if (s->freed >= TRIM_AFTER_BYTES) {
        if (!janitor_take(s, NULL))
            malloc_trim(0);
        s->freed = 0;
    }
#endif
    return freed;
}

/* ---- Pins ---- */

store_pinned_key *store_pin(store *s, store_cache *c, const uint8_t *key, size_t len)
{
    store_pinned_key *p = NULL;
    HASH_FIND(hh, c->pins, key, len, p);
    if (!p) {
        p = malloc(sizeof(*p) + len + 1);
        if (!p)
            return NULL;
        p->count = 0;
        p->len = len;
        if (len)
            memcpy(p->key, key, len);
        HASH_ADD_KEYPTR(hh, c->pins, p->key, len, p);
    }
    p->count++;
    c->pinned++;
    s->pins++;
    return p;
}

void store_unpin(store *s, store_cache *c, store_pinned_key *p)
{
    c->pinned--;
    s->pins--;
    if (--p->count == 0) {
        HASH_DELETE(hh, c->pins, p);
        free(p);
    }
}

bool store_pinned(const store_cache *c, const uint8_t *key, size_t len)
{
    store_pinned_key *p = NULL;
    if (!c->pinned)
        return false;
    HASH_FIND(hh, c->pins, key, len, p);
    return p != NULL;
}

void store_pin_cache(store_cache *c)
{
    c->whole = true;
}

void store_unpin_cache(store_cache *c)
{
    c->whole = false;
}

void store_set_yield(store *s, void (*yield)(void))
{
    s->yield = yield;
}
