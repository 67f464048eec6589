/* The near cache's eviction policy, chosen by measurement (issue 50): LRU
 * (a uthash table and a recency list, a hit moved to the front under the
 * cache's lock) against CLOCK (what lib/layers/near.c does: the same
 * table, entries on a ring with a reference bit a hit sets; the hand
 * clears bits until it finds an entry without one to evict) and against
 * CLOCK with a frequency sketch deciding admission (TinyLFU: a count-min
 * sketch of 4-bit counters, halved every 10 x capacity accesses; a miss
 * on a full cache replaces the entry CLOCK would evict only if the sketch
 * has seen the newcomer more often). All hold entries of the same size
 * under one mutex, as the near cache does, and see the same key trace:
 * reads of keys drawn from a Zipf distribution over KEYS keys, a share
 * SCAN of them keys read once and never again (the unique keys a
 * load-gen-like workload mixes in), a miss inserting the key (as a fill
 * does). Printed per policy: the hit ratio, and the operations per second
 * of THREADS threads sharing the one lock.
 *
 *   bench/near_policy [--keys N] [--capacity C] [--zipf S] [--scan F] [--ops N] [--threads T]
 *
 * No network, no library: the policies alone, bounded by --ops. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <uthash.h>
#include <utlist.h>

typedef struct entry {
    UT_hash_handle hh;
    struct entry *prev, *next; /* LRU */
    uint32_t key;
    uint32_t slot;             /* CLOCK: its place on the ring */
    uint8_t ref;               /* CLOCK: used since the hand last passed */
    char value[100];
} entry;

enum { LRU, CLOCK, CLOCK_TINYLFU };
static const char *const policy_names[] = {"lru", "clock", "clock+tinylfu"};

#define SKETCH_ROWS 4
typedef struct cache {
    pthread_mutex_t lock;
    entry *table, *mru;
    entry **ring; /* CLOCK */
    uint32_t hand, n, cap;
    int clock;    /* CLOCK or CLOCK_TINYLFU */
    int policy;
    /* TinyLFU: counters 0..15, SKETCH_ROWS rows of `width` (a power of 2) */
    uint8_t *sketch;
    uint32_t width;
    uint64_t added, reset_at;
    uint64_t hits, misses, rejected;
} cache;

static uint32_t row_hash(uint32_t key, int row)
{
    uint64_t h = (uint64_t)key * 0x9E3779B97F4A7C15ull + (uint64_t)(row + 1) * 0xBF58476D1CE4E5B9ull;
    h ^= h >> 31;
    h *= 0x94D049BB133111EBull;
    h ^= h >> 29;
    return (uint32_t)h;
}

static unsigned estimate(const cache *c, uint32_t key)
{
    unsigned m = 15;
    for (int r = 0; r < SKETCH_ROWS; r++) {
        unsigned v = c->sketch[(size_t)r * c->width + (row_hash(key, r) & (c->width - 1))];
        m = v < m ? v : m;
    }
    return m;
}

/* Counts an access; every reset_at accesses all counters halve, so the
 * sketch follows a popularity that changes. */
static void count_access(cache *c, uint32_t key)
{
    for (int r = 0; r < SKETCH_ROWS; r++) {
        uint8_t *v = &c->sketch[(size_t)r * c->width + (row_hash(key, r) & (c->width - 1))];
        if (*v < 15)
            (*v)++;
    }
    if (++c->added >= c->reset_at) {
        for (size_t i = 0; i < (size_t)SKETCH_ROWS * c->width; i++)
            c->sketch[i] >>= 1;
        c->added = 0;
    }
}

/* CLOCK's next victim, its mark cleared on the way, left on the ring. */
static entry *clock_victim(cache *c)
{
    for (;;) {
        entry *v = c->ring[c->hand];
        if (!v->ref)
            return v;
        v->ref = 0;
        c->hand = (c->hand + 1) % c->cap;
    }
}

static void evict_one(cache *c)
{
    entry *victim;
    if (c->clock) {
        victim = clock_victim(c);
    } else {
        victim = c->mru->prev; /* the tail */
        DL_DELETE(c->mru, victim);
    }
    HASH_DEL(c->table, victim);
    c->n--;
    if (c->clock)
        c->ring[victim->slot] = NULL;
    free(victim);
}

static void access_key(cache *c, uint32_t key)
{
    pthread_mutex_lock(&c->lock);
    if (c->policy == CLOCK_TINYLFU)
        count_access(c, key);
    entry *e = NULL;
    HASH_FIND(hh, c->table, &key, sizeof(key), e);
    if (e) {
        c->hits++;
        if (c->clock) {
            e->ref = 1;
        } else {
            DL_DELETE(c->mru, e);
            DL_PREPEND(c->mru, e);
        }
        pthread_mutex_unlock(&c->lock);
        return;
    }
    c->misses++;
    if (c->n == c->cap && c->policy == CLOCK_TINYLFU &&
        estimate(c, key) <= estimate(c, clock_victim(c)->key)) {
        c->rejected++; /* seen less often than what it would replace */
        pthread_mutex_unlock(&c->lock);
        return;
    }
    if (c->n == c->cap)
        evict_one(c);
    e = calloc(1, sizeof(*e));
    if (!e) {
        pthread_mutex_unlock(&c->lock);
        return;
    }
    e->key = key;
    HASH_ADD(hh, c->table, key, sizeof(key), e);
    if (c->clock) {
        /* The slot the hand freed (or, filling up, the next empty one). */
        uint32_t s = c->hand;
        while (c->ring[s])
            s = (s + 1) % c->cap;
        e->slot = s;
        c->ring[s] = e;
        c->hand = (s + 1) % c->cap; /* a new entry is looked at last */
    } else {
        DL_PREPEND(c->mru, e);
    }
    c->n++;
    pthread_mutex_unlock(&c->lock);
}

typedef struct run {
    cache *c;
    const uint32_t *trace;
    size_t n;
} run;

static void *worker(void *arg)
{
    run *r = arg;
    for (size_t i = 0; i < r->n; i++)
        access_key(r->c, r->trace[i]);
    return NULL;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Keys 0..keys-1 with P(k) proportional to 1/(k+1)^s, from a fixed seed;
 * a share `scan` of the accesses instead read a key no other access reads
 * (from `*fresh`, counting up past every Zipf key). */
static uint32_t *zipf_trace(uint32_t keys, double s, double scan, uint32_t *fresh, size_t n,
                            uint64_t seed)
{
    double *cdf = malloc(sizeof(double) * keys);
    uint32_t *t = malloc(sizeof(uint32_t) * n);
    if (!cdf || !t)
        exit(2);
    double sum = 0;
    for (uint32_t k = 0; k < keys; k++)
        cdf[k] = (sum += 1.0 / pow(k + 1.0, s));
    for (size_t i = 0; i < n; i++) {
        seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
        if ((double)(seed >> 11) / 9007199254740992.0 < scan) {
            t[i] = (*fresh)++ * 2654435761u;
            continue;
        }
        seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
        double u = (double)(seed >> 11) / 9007199254740992.0 * sum;
        uint32_t lo = 0, hi = keys - 1;
        while (lo < hi) {
            uint32_t mid = (lo + hi) / 2;
            if (cdf[mid] < u)
                lo = mid + 1;
            else
                hi = mid;
        }
        /* Scattered, so that hot keys are not neighbours in the table. */
        t[i] = lo * 2654435761u;
    }
    free(cdf);
    return t;
}

int main(int argc, char **argv)
{
    uint32_t keys = 100000, cap = 5000, threads = 2;
    double s = 0.99, scan = 0;
    size_t ops = 4000000;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--keys"))
            keys = (uint32_t)strtoul(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--capacity"))
            cap = (uint32_t)strtoul(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--zipf"))
            s = strtod(argv[i + 1], NULL);
        else if (!strcmp(argv[i], "--scan"))
            scan = strtod(argv[i + 1], NULL);
        else if (!strcmp(argv[i], "--ops"))
            ops = strtoul(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--threads"))
            threads = (uint32_t)strtoul(argv[i + 1], NULL, 10);
    }
    if (keys < 1 || cap < 1 || threads < 1 || threads > 64 || ops < threads || scan < 0 ||
        scan >= 1) {
        fprintf(stderr, "near_policy: bad arguments\n");
        return 2;
    }
    size_t per = ops / threads;
    uint32_t *traces[64];
    uint32_t fresh = keys;
    for (uint32_t t = 0; t < threads; t++)
        traces[t] = zipf_trace(keys, s, scan, &fresh, per, 0x9E3779B97F4A7C15ull + t);
    for (int policy = LRU; policy <= CLOCK_TINYLFU; policy++) {
        cache c;
        memset(&c, 0, sizeof(c));
        pthread_mutex_init(&c.lock, NULL);
        c.cap = cap;
        c.policy = policy;
        c.clock = policy != LRU;
        c.ring = calloc(cap, sizeof(entry *));
        c.width = 1;
        while (c.width < 4 * cap)
            c.width *= 2;
        c.sketch = calloc((size_t)SKETCH_ROWS * c.width, 1);
        c.reset_at = 10ull * cap;
        if (!c.ring || !c.sketch)
            return 2;
        pthread_t th[64];
        run r[64];
        double t0 = now_s();
        for (uint32_t t = 0; t < threads; t++) {
            r[t] = (run){.c = &c, .trace = traces[t], .n = per};
            pthread_create(&th[t], NULL, worker, &r[t]);
        }
        for (uint32_t t = 0; t < threads; t++)
            pthread_join(th[t], NULL);
        double dt = now_s() - t0;
        printf("RESULT near_policy policy=%s keys=%u capacity=%u zipf=%.2f scan=%.2f threads=%u "
               "ops=%zu hit_ratio=%.4f mops_per_s=%.2f\n",
               policy_names[policy], keys, cap, s, scan, threads, per * threads,
               (double)c.hits / (double)(c.hits + c.misses), (double)(per * threads) / dt / 1e6);
        for (entry *e = c.table, *next; e; e = next) {
            next = e->hh.next;
            HASH_DEL(c.table, e);
            free(e);
        }
        free(c.ring);
        free(c.sketch);
        pthread_mutex_destroy(&c.lock);
    }
    for (uint32_t t = 0; t < threads; t++)
        free(traces[t]);
    return 0;
}
