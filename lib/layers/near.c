/* The near cache (near.h): the coalescer removes duplicate reads in
 * flight, this removes them over time. Entries are keyed by cache name and
 * key in one uthash table, each holding what a read found (a value, or a
 * MISS) or what this client's set wrote, with the time that read or write
 * was sent: an entry answers only while younger than the bound (and, for
 * a value written with a TTL, before that TTL ends), so a slow reply
 * cannot stretch the bound. Entries make room by CLOCK with a frequency
 * sketch deciding admission (TinyLFU), chosen over LRU and plain CLOCK by
 * measurement (bench/near_policy.c, docs/performance.md): a hit only marks
 * its entry, and the hand evicts the first it finds unmarked since it last
 * passed - but once the cache is full, a newcomer takes that entry's place
 * only if the sketch has seen it read more often, so a run of keys read
 * once (a scan, unique keys) cannot push out the hot ones. Keys, values,
 * each entry's bookkeeping and the sketch count against max_bytes.
 *
 * Writes through the client drop the key's entry as they are submitted
 * (the client's write observer). A read or set sent before such a write
 * must not store its answer after it: each key hashes to one of GENS
 * counters, which every write submitted bumps; an answer is kept only if
 * its key's counter is what it was when its request was sent (a
 * collision of two keys only costs an answer not kept). */
#include "layers/near.h"

#include "base/alloc.h"
#include "base/recycle.h"
#include "clock.h"
#include "engine/answer.h"
#include "engine/blocking.h"
#include "engine/call.h"
#include "engine/client.h"
#include "layers/kv_send.h"
#include "model/result.h"
#include "model/validate.h"

#include <malloc.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>
#include <utlist.h>

#define GENS 4096
/* A value larger than this share of max_bytes is not kept: one entry must
 * not empty the cache of everything else. */
#define MAX_SHARE 8
/* A get's fill record that fits in FILL_BLOCK bytes (168 for the cache
 * name and key) is recycled; an idle near cache holds at most FILL_POOL of
 * them (64 KiB). */
#define FILL_BLOCK 256
#define FILL_POOL 256

typedef struct entry {
    UT_hash_handle hh;
    struct entry *prev, *next; /* the clock's ring */
    int64_t fetched_ns;        /* when the read or write that brought it was sent */
    int64_t expires_ns;        /* its TTL's end, when this client wrote it; else INT64_MAX */
    size_t bytes;              /* what it counts against max_bytes */
    size_t klen;               /* of data's "cache\0key" */
    uint64_t hash;             /* of the key: its write counter, its sketch counters */
    size_t vlen;
    bool miss;
    bool used;                 /* answered since the hand last passed it */
    bool refreshing;           /* its refresh is on its way (refresh_ahead) */
    char data[]; /* "cache\0key", then the value */
} entry;

struct momento__near {
    momento__part part; /* the client's hold on it */
    momento__write_observer obs;
    momento_client *client;
    pthread_mutex_t lock;
    entry *table; /* hashed by table_hash(), not uthash's own: HASH_FIND would miss */
    entry *hand; /* the clock's hand on the ring of entries; NULL when empty */
    size_t max_bytes, bytes;
    int64_t staleness_ns;
    int64_t refresh_ns; /* an entry read at this age is fetched again ahead (3/4 of the bound) */
    bool detached; /* the client's free took the observer off its list */
    momento_near_cache_stats st;
    /* The frequency sketch (TinyLFU): SKETCH_ROWS rows of `width` counters
     * of 0..15, made when the cache first fills (a cache that never fills
     * needs none); each look counts its key, and all halve every
     * 10 x width looks, so that it follows what is read now. */
    uint8_t *sketch;
    size_t width;
    uint64_t looks;
    bool no_sketch; /* no memory for it: plain CLOCK */
    uint64_t gens[GENS];
    /* Entries added, per write counter's slot: a get that found no entry
     * remembers its slot's count, and if no entry of that slot was added
     * by the time its answer is kept, none of its key can be there, so
     * store() skips the second walk of the bucket's chain (the cost of a
     * key read once). 32 bits: only a wrap by exactly 2^32 adds to one
     * slot within one request's flight could fool it. */
    uint32_t adds[GENS];
    /* Fill records of FILL_BLOCK bytes, handed back under the lock the
     * answer's store() takes anyway: a get of a key read once costs no
     * malloc() and free() for it, nor, when the application's thread
     * sends and the completion thread answers, a free() into another
     * thread's arena. */
    momento__recycler fills;
};

#define SKETCH_ROWS 4
/* An entry's cost beyond malloc_usable_size(): the chunk header (8 bytes
 * on glibc, 16 for a conservative round figure) and its share of the
 * hash table's buckets. */
#define ENTRY_OVERHEAD 20

static void drop_locked(momento__near *n, entry *e);

/* CLOCK's next victim: the hand passes over entries answered since it
 * last came, clearing their mark, and stops at the first without one. */
static entry *clock_hand_locked(momento__near *n)
{
    while (n->hand->used) {
        n->hand->used = false;
        n->hand = n->hand->next;
    }
    return n->hand;
}

/* Evicts CLOCK's next victim (bench/near_policy.c measured CLOCK against
 * LRU). The cache holds at least one entry. */
static void evict_one_locked(momento__near *n)
{
    drop_locked(n, clock_hand_locked(n));
    n->st.evictions++;
}

/* A request's (cache, key), hashed once: the table, the write counters and
 * the sketch all use `h`, and nothing builds "cache\0key" to look it up. */
typedef struct nkey {
    const char *cache;
    size_t cache_len;
    const void *key;
    size_t key_len;
    uint64_t h;
} nkey;

static uint64_t key_hash(const char *cache, size_t cache_len, const void *key, size_t key_len)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < cache_len; i++)
        h = (h ^ (uint8_t)cache[i]) * 1099511628211ull;
    h = (h ^ 0) * 1099511628211ull;
    for (size_t i = 0; i < key_len; i++)
        h = (h ^ ((const uint8_t *)key)[i]) * 1099511628211ull;
    return h;
}

static nkey nkey_of(const char *cache, size_t cache_len, const void *key, size_t key_len)
{
    return (nkey){.cache = cache, .cache_len = cache_len, .key = key, .key_len = key_len,
                  .h = key_hash(cache, cache_len, key, key_len)};
}

/* The table's 32-bit hash of a key: FNV's high bits folded into the low
 * ones uthash picks its bucket with. */
static unsigned table_hash(uint64_t h)
{
    return (unsigned)(h ^ (h >> 32));
}

/* "cache\0key" into `buf` (the caller's, at least the returned size). */
static size_t lookup_key(char *buf, const nkey *k)
{
    memcpy(buf, k->cache, k->cache_len);
    buf[k->cache_len] = '\0';
    memcpy(buf + k->cache_len + 1, k->key, k->key_len);
    return k->cache_len + 1 + k->key_len;
}

/* The entry holding `k`, or NULL: its bucket's chain walked by hand, each
 * entry compared by hash, then by its cache name and key in place. */
static entry *lookup_locked(momento__near *n, const nkey *k)
{
    if (!n->table)
        return NULL;
    unsigned hv = table_hash(k->h);
    UT_hash_table *tbl = n->table->hh.tbl;
    size_t klen = k->cache_len + 1 + k->key_len;
    /* hh is the entry's first member: a chain's handle is its entry. */
    for (UT_hash_handle *hh = tbl->buckets[hv & (tbl->num_buckets - 1)].hh_head; hh;
         hh = hh->hh_next) {
        entry *e = (entry *)hh;
        if (hh->hashv == hv && e->hash == k->h && e->klen == klen &&
            e->data[k->cache_len] == '\0' && memcmp(e->data, k->cache, k->cache_len) == 0 &&
            memcmp(e->data + k->cache_len + 1, k->key, k->key_len) == 0)
            return e;
    }
    return NULL;
}

/* Row `row`'s counter of the key hashed `h`: the rows mix it apart. */
static uint8_t *counter(momento__near *n, uint64_t h, int row)
{
    h += (uint64_t)(row + 1) * 0x9E3779B97F4A7C15ull;
    h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9ull;
    h ^= h >> 31;
    return &n->sketch[(size_t)row * n->width + (size_t)(h & (n->width - 1))];
}

/* A look at the key hashed `h`: counted, once there is a sketch. */
static void sketch_count_locked(momento__near *n, uint64_t h)
{
    if (!n->sketch)
        return;
    for (int r = 0; r < SKETCH_ROWS; r++) {
        uint8_t *c = counter(n, h, r);
        if (*c < 15)
            (*c)++;
    }
    if (++n->looks >= 10 * (uint64_t)n->width) {
        for (size_t i = 0; i < SKETCH_ROWS * n->width; i++)
            n->sketch[i] >>= 1;
        n->looks = 0;
    }
}

/* How often the key hashed `h` was looked at lately (at least). */
static unsigned sketch_estimate(momento__near *n, uint64_t h)
{
    unsigned m = 15;
    for (int r = 0; r < SKETCH_ROWS; r++) {
        unsigned c = *counter(n, h, r);
        m = c < m ? c : m;
    }
    return m;
}

/* The cache is full for the first time: the sketch, a counter per row for
 * about each entry it holds, its bytes counted with the entries'. */
static void sketch_make_locked(momento__near *n)
{
    size_t width = 64;
    while (width < n->st.entries && width < ((size_t)1 << 24))
        width *= 2;
    n->sketch = momento__calloc(SKETCH_ROWS, width);
    if (!n->sketch) {
        n->no_sketch = true;
        return;
    }
    n->width = width;
    n->bytes += SKETCH_ROWS * width;
}

static void drop_locked(momento__near *n, entry *e)
{
    HASH_DEL(n->table, e);
    CDL_DELETE(n->hand, e);
    n->bytes -= e->bytes;
    n->st.entries--;
    free(e);
}

/* The entry of `k`, or NULL; one past its bound is dropped. */
static entry *find_locked(momento__near *n, const nkey *k, int64_t now)
{
    entry *e = lookup_locked(n, k);
    if (e && (now - e->fetched_ns >= n->staleness_ns || now >= e->expires_ns)) {
        drop_locked(n, e);
        n->st.expired++;
        e = NULL;
    }
    return e;
}

/* Keeps what a read or a set of `k` brought (`miss`, or `value`), sent at
 * `sent_ns` when the key's write counter was `gen`, at `now`. `absent_adds`,
 * when not NULL: the key had no entry when its slot's add counter read
 * that. */
static void store_locked(momento__near *n, const nkey *k, bool miss, const void *value,
                         size_t value_len, int64_t sent_ns, int64_t expires_ns, uint64_t gen,
                         const uint32_t *absent_adds, int64_t now)
{
    size_t klen = k->cache_len + 1 + k->key_len;
    size_t asked = sizeof(entry) + klen + (miss ? 0 : value_len);
    if (asked > n->max_bytes / MAX_SHARE)
        return;
    uint64_t h = k->h;
    if (now - sent_ns >= n->staleness_ns || now >= expires_ns || n->gens[h % GENS] != gen) {
        n->st.stale++;
        return;
    }
    /* The key's older entry goes (a newer one stays, and this is not
     * kept). */
    bool none = absent_adds && n->adds[h % GENS] == *absent_adds;
    entry *old = none ? NULL : lookup_locked(n, k);
    if (old) {
        if (old->fetched_ns > sent_ns) { /* a newer answer is kept already */
            return;
        }
        drop_locked(n, old);
    }
    /* What the entry will really take: malloc's rounding (an estimate
     * here, exact below) and its chunk's header, and the entry's share of
     * the table's buckets (uthash keeps chains near 10 long and doubles
     * the buckets: at most ~3 bytes an entry), so that the process's
     * memory, not only the bytes asked for, stays within max_bytes
     * (bench/near_cache.sh "rss"). */
    size_t bytes = ((asked + 15) & ~(size_t)15) + ENTRY_OVERHEAD;
    if (n->bytes + bytes > n->max_bytes && n->hand && !n->sketch && !n->no_sketch) {
        sketch_make_locked(n);
        while (n->bytes > n->max_bytes && n->hand) /* room for the sketch itself */
            evict_one_locked(n);
    }
    if (n->bytes + bytes > n->max_bytes && n->hand && n->sketch) {
        /* Full: the newcomer takes the place of the entry the hand would
         * evict only if it was read more often lately (TinyLFU), or that
         * entry is past its bound (it answers nothing any more). */
        entry *victim = clock_hand_locked(n);
        bool spent = now - victim->fetched_ns >= n->staleness_ns || now >= victim->expires_ns;
        if (!spent && sketch_estimate(n, h) <= sketch_estimate(n, victim->hash)) {
            n->st.rejected++;
            n->st.bytes = n->bytes;
            return;
        }
    }
    entry *e = momento__malloc(asked);
    if (!e) {
        n->st.bytes = n->bytes;
        return; /* not kept: the next read asks Momento */
    }
    bytes = malloc_usable_size(e) + ENTRY_OVERHEAD;
    *e = (entry){.fetched_ns = sent_ns, .expires_ns = expires_ns, .bytes = bytes,
                 .vlen = miss ? 0 : value_len, .miss = miss, .hash = h};
    e->klen = lookup_key(e->data, k);
    if (e->vlen)
        memcpy(e->data + klen, value, e->vlen);
    while (n->bytes + bytes > n->max_bytes && n->hand)
        evict_one_locked(n);
    /* Hashed as lookup_locked() finds it: by `h`, not uthash's own. */
    HASH_ADD_BYHASHVALUE(hh, n->table, data, klen, table_hash(h), e);
    n->adds[h % GENS]++;
    CDL_APPEND(n->hand, e); /* just behind the hand: looked at last */
    n->bytes += bytes;
    n->st.entries++;
    n->st.bytes = n->bytes;
    n->st.fills++;
}

static void store(momento__near *n, const nkey *k, bool miss, const void *value,
                  size_t value_len, int64_t sent_ns, int64_t expires_ns, uint64_t gen)
{
    int64_t now = momento__now_ns();
    pthread_mutex_lock(&n->lock);
    store_locked(n, k, miss, value, value_len, sent_ns, expires_ns, gen, NULL, now);
    pthread_mutex_unlock(&n->lock);
}

/* Drops every entry, and makes every read or set sent before this keep
 * nothing: each key's counter moves. */
static void reset_locked(momento__near *n)
{
    for (entry *e = n->table, *next; e; e = next) {
        next = e->hh.next;
        drop_locked(n, e);
    }
    for (size_t i = 0; i < GENS; i++)
        n->gens[i]++;
    n->st.bytes = n->bytes;
}

/* A write of `k`: its entry goes, and a read or set sent before it keeps
 * nothing. Returns whether an entry went. */
static bool drop_key_locked(momento__near *n, const nkey *k)
{
    n->gens[k->h % GENS]++;
    entry *e = lookup_locked(n, k);
    if (e) {
        drop_locked(n, e);
        n->st.bytes = n->bytes;
    }
    return e != NULL;
}

/* The client's write observer: a write of (cache, key) is being submitted. */
static void written(momento__write_observer *o, const char *cache, size_t cache_len,
                    const void *key, size_t key_len)
{
    momento__near *n = (momento__near *)((char *)o - offsetof(momento__near, obs));
    pthread_mutex_lock(&n->lock);
    nkey k = nkey_of(cache, cache_len, key, key_len);
    if (drop_key_locked(n, &k))
        n->st.dropped++;
    pthread_mutex_unlock(&n->lock);
}

void momento__near_invalidate(momento__near *n, const char *cache, size_t cache_len,
                              const void *key, size_t key_len)
{
    if (!n)
        return;
    pthread_mutex_lock(&n->lock);
    nkey k = nkey_of(cache, cache_len, key, key_len);
    if (drop_key_locked(n, &k))
        n->st.invalidated++;
    pthread_mutex_unlock(&n->lock);
}

void momento__near_reset(momento__near *n)
{
    if (!n)
        return;
    pthread_mutex_lock(&n->lock);
    reset_locked(n);
    pthread_mutex_unlock(&n->lock);
}

momento__near *momento__near_made(momento_client *c)
{
    return c ? (momento__near *)atomic_load(&c->near) : NULL;
}

/* The client's write observer: the whole of `cache` is being flushed or
 * deleted. Its entries go, and no read sent before keeps its answer. */
static void flushed(momento__write_observer *o, const char *cache, size_t cache_len)
{
    momento__near *n = (momento__near *)((char *)o - offsetof(momento__near, obs));
    pthread_mutex_lock(&n->lock);
    for (entry *e = n->table, *next; e; e = next) {
        next = e->hh.next;
        if (e->klen > cache_len && e->data[cache_len] == '\0' &&
            memcmp(e->data, cache, cache_len) == 0) {
            drop_locked(n, e);
            n->st.dropped++;
        }
    }
    for (size_t i = 0; i < GENS; i++) /* keys of other caches too: rare, and safe */
        n->gens[i]++;
    n->st.bytes = n->bytes;
    pthread_mutex_unlock(&n->lock);
}

static void detached(momento__write_observer *o)
{
    momento__near *n = (momento__near *)((char *)o - offsetof(momento__near, obs));
    n->detached = true;
}

static void release(momento__part *p)
{
    momento__near *n = (momento__near *)p;
    if (!n->detached)
        momento__client_unobserve_writes(n->client, &n->obs);
    for (entry *e = n->table, *next; e; e = next) {
        next = e->hh.next;
        HASH_DEL(n->table, e);
        free(e);
    }
    pthread_mutex_destroy(&n->lock);
    momento__recycler_drain(&n->fills);
    free(n->sketch);
    free(n);
}

momento__near *momento__near_of(momento_client *c)
{
    if (!c || c->cfg.near_max_bytes == 0)
        return NULL;
    momento__part *p = atomic_load(&c->near);
    if (p)
        return (momento__near *)p;
    momento__near *n = momento__calloc(1, sizeof(*n));
    if (!n)
        return NULL;
    n->part.release = release;
    n->client = c;
    n->max_bytes = c->cfg.near_max_bytes;
    n->staleness_ns = (int64_t)c->cfg.near_staleness_ms * 1000000;
    n->refresh_ns = n->staleness_ns / 4 * 3;
    pthread_mutex_init(&n->lock, NULL);
    momento__recycler_init(&n->fills, FILL_BLOCK, FILL_POOL);
    n->obs.written = written;
    n->obs.flushed = flushed;
    n->obs.detached = detached;
    momento__client_observe_writes(c, &n->obs);
    p = momento__client_install_near(c, &n->part);
    if (p != &n->part) /* another thread made one first */
        release(&n->part);
    return (momento__near *)p;
}

momento__near *momento__near_for_get(momento_client *c, const momento_request_options *opts,
                                     bool count)
{
    momento__near *n = momento__near_of(c);
    if (!n)
        return NULL;
    int concern = MOMENTO__OPT(opts, read_concern);
    if ((concern ? concern : c->cfg.read_concern) == MOMENTO_READ_CONSISTENT)
        return NULL;
    if (MOMENTO__OPT(opts, no_near_cache)) {
        if (!count)
            return NULL;
        pthread_mutex_lock(&n->lock);
        n->st.bypassed++;
        pthread_mutex_unlock(&n->lock);
        return NULL;
    }
    return n;
}

/* A get's wait for Momento's answer, to keep it. */
typedef struct fill {
    momento__near *n;
    momento_callback cb;
    void *userdata;
    int64_t sent_ns;
    int64_t expires_ns; /* a set's: its TTL's end; a refresh's: its entry's */
    uint64_t gen;
    bool set;           /* a set's: keep `value` on success */
    bool refresh;       /* the library's own read ahead of the bound: no callback */
    bool pooled;        /* FILL_BLOCK bytes: back to n->fills */
    bool absent;        /* a get's that found no entry when its slot had had `adds` */
    uint32_t adds;
    uint64_t h;         /* the key's hash, computed when the request was made */
    size_t cache_len, key_len, value_len;
    char buf[]; /* the cache name, its NUL, the key, then a set's value */
} fill;

static bool fill_fits(const nkey *k, size_t value_len)
{
    return sizeof(fill) + k->cache_len + 1 + k->key_len + value_len <= FILL_BLOCK;
}

/* A fill record in `block` (one of n->fills', or NULL: a new one). */
static fill *fill_new(momento__near *n, void *block, momento_callback cb, void *userdata,
                      const nkey *k, const void *value, size_t value_len)
{
    bool pooled = fill_fits(k, value_len);
    fill *f = block ? block
                    : momento__malloc(pooled ? FILL_BLOCK
                                             : sizeof(*f) + k->cache_len + 1 + k->key_len +
                                                   value_len);
    if (!f)
        return NULL;
    *f = (fill){.n = n, .cb = cb, .userdata = userdata, .h = k->h, .cache_len = k->cache_len,
                .key_len = k->key_len, .value_len = value_len, .pooled = pooled};
    char *p = f->buf + lookup_key(f->buf, k);
    if (value_len)
        memcpy(p, value, value_len);
    return f;
}

/* Hands `f` back (n's lock held); true when the caller must free() it,
 * after unlocking. */
static bool fill_recycle_locked(momento__near *n, fill *f)
{
    return !f->pooled || !momento__recycler_give(&n->fills, f);
}

/* A fill whose request was not accepted. */
static void fill_drop(momento__near *n, fill *f)
{
    pthread_mutex_lock(&n->lock);
    bool done = fill_recycle_locked(n, f);
    pthread_mutex_unlock(&n->lock);
    if (done)
        free(f);
}

/* The request's callback, wherever it runs (the completion thread, or
 * the dispatching one): the answer is kept first, then handed on. */
static void filled(const momento_result *r, void *userdata)
{
    fill *f = userdata;
    momento__near *n = f->n;
    bool ok = momento_result_error(r) == MOMENTO_OK;
    momento_outcome o = ok ? momento_result_outcome(r) : MOMENTO_OUTCOME_ERROR;
    bool keep = ok && (f->set || o == MOMENTO_OUTCOME_HIT || o == MOMENTO_OUTCOME_MISS);
    int64_t now = keep ? momento__now_ns() : 0;
    /* One lock for the answer kept and the record handed back. */
    pthread_mutex_lock(&n->lock);
    if (keep) {
        nkey k = {.cache = f->buf, .cache_len = f->cache_len,
                  .key = f->buf + f->cache_len + 1, .key_len = f->key_len, .h = f->h};
        if (f->set) {
            store_locked(n, &k, false, f->buf + f->cache_len + 1 + f->key_len, f->value_len,
                         f->sent_ns, f->expires_ns, f->gen, NULL, now);
        } else {
            size_t len = 0;
            const void *v = momento_result_value(r, &len);
            /* A refresh keeps the TTL its entry knew: the value read again
             * is the one this client wrote, or a later one. */
            store_locked(n, &k, o == MOMENTO_OUTCOME_MISS, v, len, f->sent_ns,
                         f->refresh ? f->expires_ns : INT64_MAX, f->gen,
                         f->absent ? &f->adds : NULL, now);
        }
    }
    momento_callback cb = f->cb;
    void *ud = f->userdata;
    bool done = fill_recycle_locked(n, f);
    pthread_mutex_unlock(&n->lock);
    if (done)
        free(f);
    if (cb)
        cb(r, ud);
}

/* Refreshing ahead: a hot key's entry read in the last quarter of its
 * bound is fetched again in the background while it still answers, so
 * that the next reads find a younger one instead of all waiting on the
 * refill when it expires (at a round trip of 5 ms, with 1000 readers on
 * 10 keys, those waits were most of the time: docs/performance.md). The
 * refreshed answer obeys every rule a read's does - aged from its send,
 * not kept after a write of the key - so the bound holds. One refresh at
 * a time per entry; it is the library's own request (not counted, not
 * reported, never batched). Under the lock: whether `e`, just answered,
 * is due one; the fill to send after the lock is let go, or NULL. */
static fill *refresh_due_locked(momento__near *n, entry *e, const nkey *k, int64_t now)
{
    if (e->refreshing || now - e->fetched_ns < n->refresh_ns)
        return NULL;
    void *block = fill_fits(k, 0) ? momento__recycler_take(&n->fills) : NULL;
    fill *f = fill_new(n, block, NULL, NULL, k, NULL, 0);
    if (!f)
        return NULL;
    e->refreshing = true;
    f->refresh = true;
    f->sent_ns = now;
    f->expires_ns = e->expires_ns;
    f->gen = n->gens[k->h % GENS];
    n->st.refreshes++;
    return f;
}

static void refresh_send(momento__near *n, momento_client *c, fill *f)
{
    momento__call_opts co;
    momento__call_opts_from(c, NULL, &co);
    co.no_metrics = true; /* the library's own: not the application's request */
    co.unbatched = true;
    if (momento__send_get(c, f->buf, f->buf + f->cache_len + 1, f->key_len, &co, filled, f) ==
        MOMENTO_OK)
        return;
    /* The client closing, or no memory: the entry lives out its bound. */
    pthread_mutex_lock(&n->lock);
    n->st.refreshes--;
    pthread_mutex_unlock(&n->lock);
    fill_drop(n, f);
}

int momento__near_get(momento__near *n, momento_client *c, void *target, momento__near_send send,
                      bool keep, const char *cache, const void *key, size_t key_len,
                      const momento_request_options *opts, momento_callback cb, void *userdata)
{
    int64_t now = momento__now_ns();
    nkey k = nkey_of(cache, strlen(cache), key, key_len);
    pthread_mutex_lock(&n->lock);
    sketch_count_locked(n, k.h);
    entry *e = find_locked(n, &k, now);
    if (e) {
        e->used = true; /* a hit only marks it: no list moved under the lock */
        fill *ahead = refresh_due_locked(n, e, &k, now);
        momento_request_group *group = MOMENTO__OPT(opts, group);
        int rc = momento__answer_soon(c, group, "Get", cache, now, MOMENTO_METRICS_NEAR_CACHE,
                                      e->miss ? MOMENTO_OUTCOME_MISS : MOMENTO_OUTCOME_HIT,
                                      e->data + e->klen, e->vlen, cb, userdata);
        if (rc == MOMENTO_OK) {
            if (e->miss)
                n->st.miss_hits++;
            else
                n->st.hits++;
        }
        n->st.bytes = n->bytes;
        pthread_mutex_unlock(&n->lock);
        if (ahead)
            refresh_send(n, c, ahead);
        return rc;
    }
    n->st.misses++;
    n->st.bytes = n->bytes;
    uint64_t gen = n->gens[k.h % GENS];
    uint32_t adds = n->adds[k.h % GENS];
    bool wrap = keep && cb != momento__blocking_done; /* else kept by `send`, or momento__near_keep() */
    void *block = wrap && fill_fits(&k, 0) ? momento__recycler_take(&n->fills) : NULL;
    pthread_mutex_unlock(&n->lock);
    if (!wrap)
        return send(target, cache, key, key_len, opts, cb, userdata);
    fill *f = fill_new(n, block, cb, userdata, &k, NULL, 0);
    if (!f) /* not kept: asked as if there were no near cache */
        return send(target, cache, key, key_len, opts, cb, userdata);
    f->sent_ns = now;
    f->gen = gen;
    f->absent = true;
    f->adds = adds;
    int rc = send(target, cache, key, key_len, opts, filled, f);
    if (rc != MOMENTO_OK)
        fill_drop(n, f);
    return rc;
}

bool momento__near_get_here(momento__near *n, momento_client *c, const char *cache,
                            const void *key, size_t key_len, const momento_request_options *opts,
                            momento_result **ret)
{
    /* The metrics hook is promised its calls on the library's threads,
     * and a request group counts its requests as they are accepted: such
     * a get goes the common way, answered through the completion thread. */
    if (c->cfg.metrics_fn || MOMENTO__OPT(opts, group))
        return false;
    int64_t now = momento__now_ns();
    nkey k = nkey_of(cache, strlen(cache), key, key_len);
    pthread_mutex_lock(&n->lock);
    sketch_count_locked(n, k.h);
    entry *e = find_locked(n, &k, now);
    momento_result *r = e ? momento__malloc(sizeof(*r) + e->vlen) : NULL;
    if (!r) { /* not here (the look is counted by the call that follows) */
        pthread_mutex_unlock(&n->lock);
        return false;
    }
    e->used = true;
    fill *ahead = refresh_due_locked(n, e, &k, now);
    memset(r, 0, sizeof(*r));
    r->error = MOMENTO_OK;
    r->grpc_status = -1;
    r->message = "";
    r->outcome = e->miss ? MOMENTO_OUTCOME_MISS : MOMENTO_OUTCOME_HIT;
    if (!e->miss) {
        memcpy(r + 1, e->data + e->klen, e->vlen);
        r->value = (const uint8_t *)(r + 1);
        r->value_len = e->vlen;
        n->st.hits++;
    } else {
        n->st.miss_hits++;
    }
    n->st.bytes = n->bytes;
    pthread_mutex_unlock(&n->lock);
    if (ahead)
        refresh_send(n, c, ahead);
    *ret = r;
    return true;
}

momento__near_read momento__near_begin(momento__near *n, const char *cache, const void *key,
                                       size_t key_len)
{
    momento__near_read rd = {.sent_ns = momento__now_ns()};
    uint64_t h = key_hash(cache, strlen(cache), key, key_len);
    pthread_mutex_lock(&n->lock);
    rd.gen = n->gens[h % GENS];
    pthread_mutex_unlock(&n->lock);
    return rd;
}

void momento__near_keep(momento__near *n, momento__near_read rd, const char *cache,
                        const void *key, size_t key_len, const momento_result *r)
{
    /* An answer from memory has no attempt: it is kept already. */
    if (!r || momento_result_error(r) != MOMENTO_OK || momento_result_attempts(r) == 0)
        return;
    momento_outcome o = momento_result_outcome(r);
    if (o != MOMENTO_OUTCOME_HIT && o != MOMENTO_OUTCOME_MISS)
        return;
    size_t len = 0;
    const void *v = momento_result_value(r, &len);
    nkey k = nkey_of(cache, strlen(cache), key, key_len);
    store(n, &k, o == MOMENTO_OUTCOME_MISS, v, len, rd.sent_ns, INT64_MAX, rd.gen);
}

momento__near_read momento__near_write_begin(momento__near *n, const char *cache,
                                             const void *key, size_t key_len)
{
    /* The set's own write bumps the key's counter once as it is
     * submitted: kept only if nothing else moved it meanwhile. */
    momento__near_read rd = momento__near_begin(n, cache, key, key_len);
    rd.gen++;
    return rd;
}

/* When a set sent at `sent_ns` with `ttl_ms` in effect ends. */
static int64_t write_expiry(int64_t sent_ns, uint64_t ttl_ms)
{
    return ttl_ms > (uint64_t)(INT64_MAX - sent_ns) / 1000000 ? INT64_MAX
                                                             : sent_ns + (int64_t)ttl_ms * 1000000;
}

void momento__near_keep_write(momento__near *n, momento__near_read rd, const char *cache,
                              const void *key, size_t key_len, const void *value,
                              size_t value_len, uint64_t ttl_in_effect_ms)
{
    nkey k = nkey_of(cache, strlen(cache), key, key_len);
    store(n, &k, false, value, value_len, rd.sent_ns, write_expiry(rd.sent_ns, ttl_in_effect_ms),
          rd.gen);
}

int momento__near_set(momento__near *n, momento_client *c, void *target,
                      momento__near_send_set send, const char *cache, const void *key,
                      size_t key_len, const void *value, size_t value_len, uint64_t ttl_ms,
                      uint64_t ttl_in_effect_ms, const momento_request_options *opts,
                      momento_callback cb, void *userdata)
{
    (void)c;
    size_t cache_len = strlen(cache);
    bool keep = cb != momento__blocking_done &&
                sizeof(entry) + cache_len + 1 + key_len + value_len <= n->max_bytes / MAX_SHARE;
    if (!keep)
        return send(target, cache, key, key_len, value, value_len, ttl_ms, opts, cb, userdata);
    nkey k = nkey_of(cache, cache_len, key, key_len);
    /* Its own write bumps the key's counter once as it is submitted; kept
     * only if nothing else moved it (another write, whose order against
     * this one is unknown) by the time its answer comes. */
    pthread_mutex_lock(&n->lock);
    uint64_t gen = n->gens[k.h % GENS] + 1;
    void *block = fill_fits(&k, value_len) ? momento__recycler_take(&n->fills) : NULL;
    pthread_mutex_unlock(&n->lock);
    fill *f = fill_new(n, block, cb, userdata, &k, value, value_len);
    if (!f)
        return send(target, cache, key, key_len, value, value_len, ttl_ms, opts, cb, userdata);
    f->set = true;
    f->gen = gen;
    f->sent_ns = momento__now_ns();
    f->expires_ns = write_expiry(f->sent_ns, ttl_in_effect_ms);
    int rc = send(target, cache, key, key_len, value, value_len, ttl_ms, opts, filled, f);
    if (rc != MOMENTO_OK)
        fill_drop(n, f);
    return rc;
}

void momento__near_stats(momento__near *n, momento_near_cache_stats *out)
{
    memset(out, 0, sizeof(*out));
    if (!n)
        return;
    pthread_mutex_lock(&n->lock);
    *out = n->st;
    out->bytes = n->bytes;
    pthread_mutex_unlock(&n->lock);
}
