/* The near cache's two promises as properties (issue 50), against the
 * local server on either transport:
 *
 * - Staleness: a writer without a near cache races readers with one, and
 *   no read returns a value overwritten more than the bound before the
 *   read began, nor one never written. Checked on every read, after the
 *   run, from monotonic times the threads recorded; nothing here asserts
 *   how long anything took.
 * - Memory: a million distinct keys read through a near cache of 1 MiB
 *   never make it hold more than 1 MiB.
 *
 * test_near_cache.c tests each behaviour once, by construction; these
 * tests load the client with many requests and check the promises hold on
 * every one of them. */
#include "testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIB (1024u * 1024u)

static momento_near_cache_stats stats(const momento_client *c)
{
    momento_near_cache_stats s;
    memset(&s, 0, sizeof(s));
    assert_int_equal(momento_client_near_cache_stats_get(c, &s, sizeof(s)), MOMENTO_OK);
    return s;
}

/* A client of the fixture's server with a near cache of `max_bytes` and
 * `staleness_ms`, a deadline and keepalive as tu_patient_client()'s: its
 * tests keep many requests in flight. */
static momento_client *near_client(size_t max_bytes, uint32_t staleness_ms)
{
    momento_config *cfg = tu_config();
    assert_int_equal(momento_config_set_near_cache(cfg, max_bytes, staleness_ms), MOMENTO_OK);
    assert_int_equal(momento_config_set_timeout_ms(cfg, (uint32_t)TU_MS(20000)), MOMENTO_OK);
    assert_int_equal(momento_config_set_keepalive(cfg, (uint32_t)TU_MS(5000), (uint32_t)TU_MS(1000)),
                     MOMENTO_OK);
    momento_client *c = tu_client(tu_fx.server, cfg);
    momento_config_free(cfg);
    return c;
}

/* ------------------------------------------------------------ staleness
 *
 * B, the fixture's client, has no near cache (so no invalidation of its own
 * helps A) and writes versions 1, 2, ... of a few hot keys, each value
 * naming its key and version, and records when each set was acknowledged
 * (its blocking call returned). Readers on A, with a near cache bounded at
 * BOUND_MS, read the keys over and over and record when each read began
 * (before the call) and what it returned; a MISS counts as version 0.
 *
 * The property, for a read that began at t and returned version k of a key:
 * version k+1, if it was written, was acknowledged at or after t - bound.
 * Why it must hold, whatever the scheduling: a near-cache entry's age
 * counts from when the read that brought it was sent (docs/near-cache.md),
 * and it answers only while younger than the bound; the server read
 * version k after that send, and before it applied version k+1, which it
 * did before acknowledging it. So an answer from memory at time n >= t
 * comes from a read sent at s > n - bound >= t - bound, and ack(k+1) > s.
 * A read answered by Momento itself has ack(k+1) > t. Every time here is
 * CLOCK_MONOTONIC; the library's clock is gRPC's monotonic one, the same
 * clock, and the bound is a difference of two of its readings. Recording
 * a time late (an ack, after the call returned) or early (a read's begin,
 * before the call) only loosens the check, never makes it fail. */

#define HOT_KEYS 4
#define BOUND_MS 30
#define MAX_VERSIONS 20000 /* per key: the writer stops there ... */
#define WRITE_MS 1000      /* ... or after this long, whichever comes first */
#define MAX_READS 200000   /* per reader: it stops there, or when the writer has */
#define SYNC_READERS 2
#define ASYNC_WINDOW 8     /* the async reader's gets in flight */

enum { R_PENDING, R_HIT, R_MISS, R_ERROR, R_BAD_VALUE };

typedef struct read_rec {
    int64_t begin_ns;   /* before the call */
    uint32_t version;   /* 0: a MISS */
    uint32_t submitted; /* the key's last version whose set had begun when the answer came */
    int error;
    uint8_t key;
    uint8_t what;
} read_rec;

typedef struct reader {
    pthread_t thread;
    bool async;
    int id;
    read_rec *recs;
    size_t n;             /* records made */
    /* The async reader's callbacks: */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    size_t done;          /* callbacks come */
} reader;

static struct {
    momento_client *a, *b;
    atomic_bool stop;     /* the readers' signal: the writer has ended */
    atomic_uint submitted[HOT_KEYS];
    uint32_t written[HOT_KEYS];   /* versions acknowledged, all keys in turn */
    int64_t *acks[HOT_KEYS];      /* [v]: when version v's set returned */
    int write_error;              /* the writer's first failure, if any */
    reader readers[SYNC_READERS + 1];
} S;

static void hot_key(char *buf, size_t cap, unsigned key)
{
    snprintf(buf, cap, "hot%u", key);
}

static int hot_value(char *buf, size_t cap, unsigned key, uint32_t version)
{
    return snprintf(buf, cap, "hot%u=v%u", key, (unsigned)version);
}

/* Fills `x` with what a get of x->key answered: a HIT must hold exactly a
 * value the writer makes for that key (any version). No assertion: this
 * runs on the readers' and the completion threads. */
static void record_answer(read_rec *x, int rc, const momento_result *r)
{
    if (rc != MOMENTO_OK || momento_result_error(r) != MOMENTO_OK) {
        x->error = rc != MOMENTO_OK ? rc : momento_result_error(r);
        x->what = R_ERROR;
        return;
    }
    x->submitted = atomic_load(&S.submitted[x->key]);
    momento_outcome o = momento_result_outcome(r);
    if (o == MOMENTO_OUTCOME_MISS) {
        x->version = 0;
        x->what = R_MISS;
        return;
    }
    x->what = R_BAD_VALUE;
    size_t len = 0;
    const char *v = momento_result_value(r, &len);
    char prefix[16], want[32];
    int plen = snprintf(prefix, sizeof(prefix), "hot%u=v", (unsigned)x->key);
    if (o != MOMENTO_OUTCOME_HIT || !v || len <= (size_t)plen || len >= 24 ||
        memcmp(v, prefix, (size_t)plen) != 0)
        return;
    char digits[24];
    memcpy(digits, v + plen, len - (size_t)plen);
    digits[len - (size_t)plen] = 0;
    char *end;
    unsigned long version = strtoul(digits, &end, 10);
    if (*end || version == 0 || version > MAX_VERSIONS)
        return;
    /* Exactly the bytes the writer made of that version. */
    int wlen = hot_value(want, sizeof(want), x->key, (uint32_t)version);
    if ((size_t)wlen != len || memcmp(want, v, len) != 0)
        return;
    x->version = (uint32_t)version;
    x->what = R_HIT;
}

static void *writer_main(void *arg)
{
    (void)arg;
    int64_t until = tu_now_ns() + (int64_t)WRITE_MS * 1000000;
    char key[16], value[32];
    for (uint32_t v = 1; v <= MAX_VERSIONS && tu_now_ns() < until; v++) {
        for (unsigned k = 0; k < HOT_KEYS; k++) {
            hot_key(key, sizeof(key), k);
            int len = hot_value(value, sizeof(value), k, v);
            /* Begun before it is sent: a reader that sees v finds it
             * counted here. */
            atomic_store(&S.submitted[k], v);
            momento_result *r = NULL;
            int rc = momento_set_sync(S.b, "c", key, strlen(key), value, (size_t)len, 0, NULL, &r);
            int64_t ack = tu_now_ns();
            int err = rc != MOMENTO_OK ? rc : momento_result_error(r);
            if (err == MOMENTO_OK && momento_result_outcome(r) != MOMENTO_OUTCOME_SUCCESS)
                err = MOMENTO_ERR_UNKNOWN;
            momento_result_free(r);
            if (err != MOMENTO_OK) {
                S.write_error = err;
                return NULL;
            }
            S.acks[k][v] = ack;
            S.written[k] = v;
        }
    }
    return NULL;
}

static void async_cb(const momento_result *r, void *userdata)
{
    read_rec *x = userdata;
    reader *rd = &S.readers[SYNC_READERS];
    record_answer(x, MOMENTO_OK, r);
    pthread_mutex_lock(&rd->lock);
    rd->done++;
    pthread_cond_broadcast(&rd->cond);
    pthread_mutex_unlock(&rd->lock);
}

static void *reader_main(void *arg)
{
    reader *rd = arg;
    char key[16];
    while (rd->n < MAX_READS && !atomic_load(&S.stop)) {
        read_rec *x = &rd->recs[rd->n];
        x->key = (uint8_t)((rd->n + (size_t)rd->id) % HOT_KEYS);
        hot_key(key, sizeof(key), x->key);
        if (rd->async) {
            /* At most ASYNC_WINDOW in flight (bounded: the wait gives up
             * after 20 s, and the test then fails on a pending record). */
            if (rd->n >= ASYNC_WINDOW &&
                tu_wait_count(&rd->lock, &rd->cond, &rd->done, rd->n - ASYNC_WINDOW + 1, 20000) <
                    rd->n - ASYNC_WINDOW + 1)
                break;
            x->begin_ns = tu_now_ns();
            int rc = momento_get(S.a, "c", key, strlen(key), NULL, async_cb, x);
            rd->n++;
            if (rc != MOMENTO_OK) {
                x->error = rc;
                x->what = R_ERROR;
                break; /* no callback will come for it */
            }
        } else {
            momento_result *r = NULL;
            x->begin_ns = tu_now_ns();
            int rc = momento_get_sync(S.a, "c", key, strlen(key), NULL, &r);
            record_answer(x, rc, r);
            momento_result_free(r);
            rd->n++;
        }
    }
    return NULL;
}

static void test_staleness_bound(void **state)
{
    (void)state;
    const int64_t bound_ns = TU_MS(BOUND_MS) * 1000000;
    memset(&S, 0, sizeof(S));
    S.b = tu_fx.client;
    S.a = near_client(MIB, (uint32_t)TU_MS(BOUND_MS));
    for (int k = 0; k < HOT_KEYS; k++) {
        S.acks[k] = calloc(MAX_VERSIONS + 2, sizeof(int64_t));
        assert_non_null(S.acks[k]);
    }
    size_t n_readers = SYNC_READERS + 1;
    for (size_t i = 0; i < n_readers; i++) {
        reader *rd = &S.readers[i];
        rd->id = (int)i;
        rd->async = i == SYNC_READERS;
        rd->recs = calloc(MAX_READS, sizeof(read_rec));
        assert_non_null(rd->recs);
        pthread_mutex_init(&rd->lock, NULL);
        pthread_cond_init(&rd->cond, NULL);
        assert_int_equal(pthread_create(&rd->thread, NULL, reader_main, rd), 0);
    }
    /* The readers go first, so that misses (version 0) are kept before
     * the first write and must expire too. */
    tu_wait_until(stats(S.a).miss_hits > 0, 5000);
    pthread_t w;
    assert_int_equal(pthread_create(&w, NULL, writer_main, NULL), 0);
    pthread_join(w, NULL);
    atomic_store(&S.stop, true);
    for (size_t i = 0; i < n_readers; i++)
        pthread_join(S.readers[i].thread, NULL);
    reader *ar = &S.readers[SYNC_READERS];
    /* The async reader's last gets may still be in flight. */
    assert_int_equal(tu_wait_count(&ar->lock, &ar->cond, &ar->done, ar->n, 20000), ar->n);
    momento_near_cache_stats s = stats(S.a);
    momento_client_free(S.a);

    assert_int_equal(S.write_error, MOMENTO_OK);
    for (int k = 0; k < HOT_KEYS; k++)
        assert_true(S.written[k] >= 1);

    size_t reads = 0, overwritten = 0, misses = 0;
    int64_t worst_ns = INT64_MIN; /* t - ack(k+1), the most a read lagged */
    for (size_t i = 0; i < n_readers; i++) {
        const reader *rd = &S.readers[i];
        for (size_t j = 0; j < rd->n; j++) {
            const read_rec *x = &rd->recs[j];
            reads++;
            if (x->what != R_HIT && x->what != R_MISS) {
                fail_msg("reader %zu read %zu of hot%u: %s (error %d)", i, j, (unsigned)x->key,
                         x->what == R_PENDING ? "never answered"
                         : x->what == R_ERROR ? "failed"
                                              : "a value the writer never wrote",
                         x->error);
            }
            /* Nothing never written: a version whose set had begun. */
            if (x->version > x->submitted)
                fail_msg("reader %zu read %zu of hot%u: version %u before its set began (%u)", i,
                         j, (unsigned)x->key, (unsigned)x->version, (unsigned)x->submitted);
            misses += x->what == R_MISS;
            uint32_t next = x->version + 1;
            if (next > S.written[x->key])
                continue; /* never overwritten (by an acknowledged set) */
            int64_t ack = S.acks[x->key][next];
            if (ack < x->begin_ns)
                overwritten++;
            if (x->begin_ns - ack > worst_ns)
                worst_ns = x->begin_ns - ack;
            if (ack < x->begin_ns - bound_ns)
                fail_msg("reader %zu read %zu of hot%u returned version %u, overwritten by "
                         "version %u %.3f ms before the read began (bound %d ms)",
                         i, j, (unsigned)x->key, (unsigned)x->version, (unsigned)next,
                         (double)(x->begin_ns - ack) / 1e6, (int)TU_MS(BOUND_MS));
        }
    }
    print_message("%zu reads (%zu misses), %u versions of each of %d keys; %zu reads returned a "
                  "version overwritten before they began, the most by %.3f ms (bound %d ms); "
                  "near cache: %llu hits, %llu miss hits, %llu misses, %llu fills, %llu stale, "
                  "%llu expired\n",
                  reads, misses, (unsigned)S.written[0], HOT_KEYS, overwritten,
                  worst_ns == INT64_MIN ? 0.0 : (double)worst_ns / 1e6, (int)TU_MS(BOUND_MS),
                  (unsigned long long)s.hits, (unsigned long long)s.miss_hits,
                  (unsigned long long)s.misses, (unsigned long long)s.fills,
                  (unsigned long long)s.stale, (unsigned long long)s.expired);
    /* Otherwise the near cache answered nothing, and the run tested
     * Momento alone. */
    assert_true(s.hits > 0);

    for (size_t i = 0; i < n_readers; i++) {
        free(S.readers[i].recs);
        pthread_mutex_destroy(&S.readers[i].lock);
        pthread_cond_destroy(&S.readers[i].cond);
    }
    for (int k = 0; k < HOT_KEYS; k++)
        free(S.acks[k]);
}

/* --------------------------------------------------------------- memory
 *
 * A million gets of distinct keys, none of them on the server: each answer
 * is a MISS, which the near cache keeps (docs/near-cache.md), so each
 * is offered to the cache, and the server holds nothing. Every entry is the
 * same size asked of malloc (keys of one length, no value): its charge,
 * read off the stats before the cache first fills (then the frequency
 * sketch is made and counted too), says about how many fit. Once full, a key read no more
 * often than the entry it would replace is not kept (`rejected`). Each callback reads the stats, which the answer's entry was stored
 * in before it: the cache never held more than max_bytes at any of those
 * moments. A bound of 10 minutes: no answer is too old to keep. */

#define MEM_KEYS 1000000
#define MEM_WINDOW 1000 /* gets in flight */
#define MEM_MAX (1 * MIB)

static struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    size_t done;
    size_t errors, not_miss;
    int first_error;
    uint64_t max_bytes_seen, max_entries_seen;
    uint64_t entry_size; /* bytes / entries before anything left the cache (about one entry's charge) */
    size_t last; /* the key of the last callback */
    momento_client *a;
} M = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

static void mem_key(char *buf, size_t i)
{
    snprintf(buf, 16, "k%07zu", i); /* 8 bytes for every i < 10,000,000 */
}

static void mem_cb(const momento_result *r, void *userdata)
{
    momento_near_cache_stats s;
    memset(&s, 0, sizeof(s));
    momento_client_near_cache_stats_get(M.a, &s, sizeof(s));
    pthread_mutex_lock(&M.lock);
    if (momento_result_error(r) != MOMENTO_OK) {
        if (!M.errors++)
            M.first_error = momento_result_error(r);
    } else if (momento_result_outcome(r) != MOMENTO_OUTCOME_MISS) {
        M.not_miss++;
    }
    if (s.bytes > M.max_bytes_seen)
        M.max_bytes_seen = s.bytes;
    if (s.entries > M.max_entries_seen)
        M.max_entries_seen = s.entries;
    if (!M.entry_size && s.entries && !s.evictions && !s.rejected)
        M.entry_size = s.bytes / s.entries;
    M.last = (size_t)(uintptr_t)userdata;
    M.done++;
    pthread_cond_broadcast(&M.cond);
    pthread_mutex_unlock(&M.lock);
}

static void test_memory_bound_million_keys(void **state)
{
    (void)state;
    /* Slower runs (valgrind: MOMENTO_TEST_TIME_SCALE=20) read fewer keys,
     * still many times what fits in 1 MiB. */
    size_t n = MEM_KEYS / (size_t)tu_time_scale();
    if (n < MEM_KEYS)
        print_message("%zu keys, the time scale being %d\n", n, tu_time_scale());
    M.done = M.errors = M.not_miss = 0;
    M.max_bytes_seen = M.max_entries_seen = M.entry_size = 0;
    M.a = near_client(MEM_MAX, 600000);
    uint64_t gets = momento_local_rpc_count(tu_fx.server, "Get", -1);
    char key[16];
    for (size_t i = 0; i < n; i++) {
        /* At most MEM_WINDOW in flight: at the window, wait for half of
         * it (20 s at most, then the test fails below). */
        if (i >= MEM_WINDOW) {
            size_t need = i - MEM_WINDOW / 2;
            pthread_mutex_lock(&M.lock);
            bool full = M.done <= i - MEM_WINDOW;
            pthread_mutex_unlock(&M.lock);
            if (full && tu_wait_count(&M.lock, &M.cond, &M.done, need, 20000) < need)
                fail_msg("gets stopped being answered: %zu of %zu", M.done, i);
        }
        mem_key(key, i);
        assert_int_equal(momento_get(M.a, "c", key, 8, NULL, mem_cb, (void *)(uintptr_t)i),
                         MOMENTO_OK);
    }
    assert_int_equal(tu_wait_count(&M.lock, &M.cond, &M.done, n, 20000), n);
    if (M.errors)
        fail_msg("%zu gets failed, the first with %d", M.errors, M.first_error);
    assert_int_equal(M.not_miss, 0);

    momento_near_cache_stats s = stats(M.a);
    print_message("%zu keys: %llu entries of %llu bytes held, %llu evictions; at most %llu bytes "
                  "and %llu entries seen\n",
                  n, (unsigned long long)s.entries, (unsigned long long)s.bytes,
                  (unsigned long long)s.evictions, (unsigned long long)M.max_bytes_seen,
                  (unsigned long long)M.max_entries_seen);
    /* The bound, at every callback and now. */
    assert_true(M.max_bytes_seen <= MEM_MAX);
    assert_true(s.bytes <= MEM_MAX);
    /* Every get looked, went to Momento, and had its answer kept or, the
     * cache full, refused by the sketch (A writes nothing, and no answer
     * is 10 minutes old); entries left only to make room. */
    assert_int_equal(s.misses, n);
    assert_int_equal(s.hits + s.miss_hits, 0);
    assert_int_equal(s.stale, 0);
    assert_int_equal(s.fills + s.rejected, n);
    assert_int_equal(s.dropped + s.expired, 0);
    /* And the server answered each (the server counts an answer before
     * sending it). */
    assert_int_equal(momento_local_rpc_count(tu_fx.server, "Get", -1) - gets, n);
    assert_true(s.evictions > 0);
    assert_int_equal(s.evictions, s.fills - s.entries);
    /* Each entry charged what malloc gave it (its usable size, which a
     * reused chunk can make a few bytes larger than the first ones'), its
     * bookkeeping beyond its key ("c", a NUL and 8 bytes of key): the
     * cache evicted no more than it had to (less than two entries' room
     * is left). */
    assert_true(s.entries > 0);
    uint64_t entry_size = M.entry_size;
    assert_true(entry_size > 10);
    assert_true(s.bytes + 2 * entry_size > MEM_MAX);

    /* Still answering: the last key, read again and again, is soon read
     * more often lately than the entry it would replace (the sketch's
     * counters of a million keys are far from empty: how many reads that
     * takes depends on their collisions, at most the counters' 15), then
     * kept, and its MISS answered from memory. */
    char last[16];
    mem_key(last, M.last);
    int from_memory = 0;
    for (int i = 0; i < 17 && !from_memory; i++) {
        momento_result *r = NULL;
        assert_int_equal(momento_get_sync(M.a, "c", last, 8, NULL, &r), MOMENTO_OK);
        momento_outcome o = momento_result_outcome(r);
        from_memory = momento_result_attempts(r) == 0;
        momento_result_free(r);
        assert_int_equal(o, MOMENTO_OUTCOME_MISS);
    }
    assert_true(from_memory);
    assert_true(stats(M.a).miss_hits >= 1);
    momento_client_free(M.a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        tu_fixture_test(test_staleness_bound),
        tu_fixture_test(test_memory_bound_million_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
