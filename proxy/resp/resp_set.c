/* RESP: the set commands - SADD, SREM, SMEMBERS, SISMEMBER, SMISMEMBER,
 * SCARD, SPOP and SRANDMEMBER (with their counts), SINTER, SUNION, SDIFF
 * and their STORE forms - on Momento's sets.
 *
 * Momento's set writes do not say how many elements they added or
 * removed, and SADD and SREM answer that: they ask which elements are
 * members first, then write. Two calls, not one atomic step: a writer in
 * between can make the count stale (never the set).
 *
 * Momento has no set algebra: SINTER, SUNION and SDIFF read their sources
 * (SetFetch) and compute the answer here; the STORE forms then replace the
 * destination (a delete, then one SetUnion of the answer). */
#include "resp/resp.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int cmp_str(const void *a, const void *b)
{
    const px_str *x = a, *y = b;
    size_t n = x->n < y->n ? x->n : y->n;
    int c = n ? memcmp(x->p, y->p, n) : 0;
    if (c)
        return c;
    return x->n < y->n ? -1 : x->n > y->n ? 1 : 0;
}

/* A command's key and its distinct elements (SADD s a a adds one),
 * copied for the call after the first. */
typedef struct sreq {
    px_reply *r;
    const char *key;
    size_t key_len;
    size_t n;
    const void **els;
    size_t *lens;
    long long count;
} sreq;

static sreq *sreq_new(px_reply *r, int argc, const px_str *argv)
{
    size_t m = (size_t)argc - 2;
    px_str *sorted = malloc(m * sizeof(*sorted));
    if (!sorted)
        return NULL;
    memcpy(sorted, argv + 2, m * sizeof(*sorted));
    qsort(sorted, m, sizeof(*sorted), cmp_str);
    size_t n = 0, bytes = argv[1].n;
    for (size_t i = 0; i < m; i++) {
        if (n > 0 && cmp_str(&sorted[n - 1], &sorted[i]) == 0)
            continue;
        sorted[n++] = sorted[i];
        bytes += sorted[i].n;
    }
    sreq *q = calloc(1, sizeof(*q) + n * (sizeof(void *) + sizeof(size_t)) + bytes + 1);
    if (!q) {
        free(sorted);
        return NULL;
    }
    q->r = r;
    q->n = n;
    q->els = (const void **)(q + 1);
    q->lens = (size_t *)(q->els + n);
    char *p = (char *)(q->lens + n);
    memcpy(p, argv[1].p, argv[1].n);
    q->key = p;
    q->key_len = argv[1].n;
    p += argv[1].n;
    for (size_t i = 0; i < n; i++) {
        memcpy(p, sorted[i].p, sorted[i].n);
        q->els[i] = p;
        q->lens[i] = sorted[i].n;
        p += sorted[i].n;
    }
    free(sorted);
    return q;
}

/* ---- SADD, SREM ---- */

static void on_written(const momento_result *res, void *ud)
{
    sreq *q = ud;
    resp_end_int_or_failure(q->r, res, q->count);
    free(q);
}

/* Which elements are members: SADD counts the others, SREM these. */
static void on_members_read(const momento_result *res, bool add, sreq *q)
{
    if (resp_end_if_failed(q->r, res)) {
        free(q);
        return;
    }
    long long members = 0;
    if (momento_result_is_hit(res))
        for (size_t i = 0; i < q->n; i++)
            if (momento_result_exists(res, i) == 1)
                members++;
    q->count = add ? (long long)q->n - members : members;
    if (q->count == 0) {
        /* Nothing changes, as in Redis, which writes nothing either. */
        resp_end_int(q->r, 0);
        free(q);
        return;
    }
    px_backend *b = px_conn_backend(px_reply_conn(q->r));
    const void *const *els = (const void *const *)q->els;
    momento_collection_ttl t;
    resp_keep_ttl(q->r, &t);
    int rc = add ? momento_set_add_elements(b->client, b->cache, q->key, q->key_len, els, q->lens,
                                            q->n, &t, NULL, on_written, q)
                 : momento_set_remove_elements(b->client, b->cache, q->key, q->key_len, els,
                                               q->lens, q->n, NULL, on_written, q);
    if (!resp_submitted(q->r, rc))
        free(q);
}

static void on_sadd_read(const momento_result *res, void *ud)
{
    on_members_read(res, true, ud);
}

static void on_srem_read(const momento_result *res, void *ud)
{
    on_members_read(res, false, ud);
}

static void add_or_remove(px_reply *r, int argc, const px_str *argv, momento_callback cb)
{
    sreq *q = sreq_new(r, argc, argv);
    if (!q) {
        resp_end_error(r, "ERR out of memory");
        return;
    }
    /* Not through the coalescer: a read that decides a write should not
     * share another command's answer. */
    px_backend *b = px_conn_backend(px_reply_conn(r));
    int rc = momento_set_contains_elements(b->client, b->cache, q->key, q->key_len,
                                           (const void *const *)q->els, q->lens, q->n, NULL, cb,
                                           q);
    if (!resp_submitted(r, rc))
        free(q);
}

static void cmd_sadd(px_reply *r, int argc, const px_str *argv)
{
    add_or_remove(r, argc, argv, on_sadd_read);
}

static void cmd_srem(px_reply *r, int argc, const px_str *argv)
{
    add_or_remove(r, argc, argv, on_srem_read);
}

/* ---- SISMEMBER, SMISMEMBER ---- */

static void ismember_each(px_reply *r, const momento_result *res, size_t i)
{
    resp_int(r, momento_result_is_hit(res) && momento_result_exists(res, i) == 1 ? 1 : 0);
}

static void cmd_sismember(px_reply *r, int argc, const px_str *argv)
{
    resp_read_many(r, argc, argv, MOMENTO_ITEM_TYPE_SET, false, ismember_each);
}

static void cmd_smismember(px_reply *r, int argc, const px_str *argv)
{
    resp_read_many(r, argc, argv, MOMENTO_ITEM_TYPE_SET, true, ismember_each);
}

/* ---- SMEMBERS, SCARD ---- */

static void cmd_smembers(px_reply *r, int argc, const px_str *argv)
{
    px_backend *b = px_conn_backend(px_reply_conn(r));
    int rc = b->co ? momento_coalescing_set_fetch(b->co, b->cache, argv[1].p, argv[1].n, NULL,
                                                  resp_on_values, r)
                   : momento_set_fetch(b->client, b->cache, argv[1].p, argv[1].n, NULL,
                                       resp_on_values, r);
    resp_submitted(r, rc);
}

static void cmd_scard(px_reply *r, int argc, const px_str *argv)
{
    resp_length(r, &argv[1], MOMENTO_ITEM_TYPE_SET, resp_on_length);
}

/* ---- SPOP, SRANDMEMBER ---- */

static void cmd_spop(px_reply *r, int argc, const px_str *argv)
{
    px_backend *b = px_conn_backend(px_reply_conn(r));
    if (argc > 3) {
        resp_end_syntax(r);
        return;
    }
    long long count = 1;
    if (argc == 3 &&
        !resp_pop_count(r, argv, MOMENTO_ITEM_TYPE_SET, resp_on_type_then_empty, &count))
        return;
    uint32_t n = count > UINT32_MAX ? UINT32_MAX : (uint32_t)count;
    int rc = momento_set_pop(b->client, b->cache, argv[1].p, argv[1].n, n, NULL,
                             argc == 3 ? resp_on_values : resp_on_first_or_nil, r);
    resp_submitted(r, rc);
}

/* SRANDMEMBER key -n: n elements that may repeat. Momento samples
 * distinct elements; the n picks are drawn, with repeats, from a sample of
 * n of them (the whole set when it is smaller), so each pick is any
 * element with equal chance, as in Redis, though picks are not
 * independent of each other in a set larger than n. */
typedef struct rand_req {
    px_reply *r;
    size_t n;
} rand_req;

static uint64_t rand_state;

static uint64_t next_rand(void)
{
    if (rand_state == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        rand_state = ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)ts.tv_sec ^ (uint64_t)getpid();
        rand_state |= 1;
    }
    /* xorshift64*: enough for picking elements, and the proxy's only
     * thread owns it. */
    rand_state ^= rand_state >> 12;
    rand_state ^= rand_state << 25;
    rand_state ^= rand_state >> 27;
    return rand_state * 2685821657736338717ULL;
}

static void on_sample_repeats(const momento_result *res, void *ud)
{
    rand_req *q = ud;
    px_reply *r = q->r;
    size_t want = q->n;
    free(q);
    if (resp_end_if_failed(r, res))
        return;
    size_t have = momento_result_is_hit(res) ? momento_result_item_count(res) : 0;
    if (have == 0) {
        resp_array(r, 0);
        px_reply_end(r);
        return;
    }
    resp_array(r, (long long)want);
    for (size_t i = 0; i < want; i++)
        resp_bulk_value(r, momento_result_item(res, (size_t)(next_rand() % have)));
    px_reply_end(r);
}

static void cmd_srandmember(px_reply *r, int argc, const px_str *argv)
{
    px_backend *b = px_conn_backend(px_reply_conn(r));
    if (argc > 3) {
        resp_end_syntax(r);
        return;
    }
    if (argc == 2) {
        resp_submitted(r, momento_set_sample(b->client, b->cache, argv[1].p, argv[1].n, 1, NULL,
                                             resp_on_first_or_nil, r));
        return;
    }
    long long count;
    if (!resp_arg_ll(&argv[2], &count)) {
        resp_end_not_integer(r);
        return;
    }
    if (count == INT64_MIN) {
        resp_end_error(r, "ERR value is out of range, value must between -9223372036854775807 "
                          "and 9223372036854775807");
        return;
    }
    if (count == 0) {
        resp_length(r, &argv[1], MOMENTO_ITEM_TYPE_SET, resp_on_type_then_empty);
        return;
    }
    if (count > 0) {
        resp_submitted(r, momento_set_sample(b->client, b->cache, argv[1].p, argv[1].n,
                                             (uint64_t)count, NULL, resp_on_values, r));
        return;
    }
    rand_req *q = resp_ctx_new(r, sizeof(*q));
    if (!q)
        return;
    q->r = r;
    q->n = (size_t)-count;
    int rc = momento_set_sample(b->client, b->cache, argv[1].p, argv[1].n, (uint64_t)q->n, NULL,
                                on_sample_repeats, q);
    if (!resp_submitted(r, rc))
        free(q);
}

/* ---- SINTER, SUNION, SDIFF, SINTERSTORE, SUNIONSTORE, SDIFFSTORE ---- */

/* Redis looks every source up before it computes anything: a source of
 * another type is WRONGTYPE wherever it stands, also after a missing key
 * or once the answer is known to be empty, and a missing one is an empty
 * set. So every source is asked for: its elements (SetFetch) while they can
 * change the answer, its length alone (a type check) once the answer is
 * empty. At most ALG_WINDOW calls are in flight at a time, each folded
 * into the answer as it arrives (intersection and union do not depend on
 * the order; SDIFF's first source is read before the others).
 *
 * Bounds: a command reads at most ALG_READ_MAX of its sources' elements
 * (each counted with its bookkeeping), as ZUNIONSTORE's union with a
 * plain set does, so that one command over many large sets cannot grow the
 * proxy without bound; past it the remaining sources are only
 * type-checked and the command answers an error. A STORE whose answer is over Momento's item
 * limit is refused before the destination is touched. */
#define ALG_READ_MAX (64u << 20)
#define ALG_WINDOW 4

typedef enum { ALG_INTER, ALG_UNION, ALG_DIFF } alg_op;

/* One distinct element of the answer so far. `mark` says whether it is
 * still in it (alg_req.cur). */
typedef struct alg_elem {
    uint64_t h;
    const char *p;
    size_t n;
    uint32_t mark;
} alg_elem;

/* The element bytes, copied into blocks freed with the command. */
typedef struct alg_block {
    struct alg_block *next;
    size_t used, cap;
    char data[];
} alg_block;

/* An element's cost against ALG_READ_MAX besides its bytes: its entry and
 * about two slots of the table. */
#define ALG_ELEM_COST (sizeof(alg_elem) + 2 * sizeof(uint32_t))

typedef struct alg_req {
    px_reply *r;
    const char *name;    /* the command, for the bound's error */
    alg_op op;
    bool store;
    bool failed;         /* the reply ended with an error: calls in flight drain */
    bool empty;          /* the answer is empty whatever follows: type checks only */
    bool over;           /* past ALG_READ_MAX: type checks only, then the error */
    size_t n;            /* sources */
    const char **keys;
    size_t *lens;
    const char *dest;    /* the STORE forms' destination */
    size_t dest_len;
    size_t next;         /* the next source to ask for */
    size_t inflight;
    uint32_t arrivals;   /* sources folded in so far */
    /* An element is in the answer when its mark is cur. SUNION: every
     * element, mark 0. SDIFF: the first source's elements, marked 1 when a
     * later source has them. SINTER: the first source's elements, each
     * marked with the latest arrival that had it, so cur is the last. */
    uint32_t cur;
    size_t live;         /* elements in the answer */
    size_t read_bytes;
    alg_elem *el;
    size_t nel, cap;
    uint32_t *slot;      /* 1 + an index into el, 0 empty; nslot a power of 2 */
    size_t nslot;
    alg_block *mem;
} alg_req;

static void alg_free(alg_req *q)
{
    while (q->mem) {
        alg_block *b = q->mem;
        q->mem = b->next;
        free(b);
    }
    free(q->el);
    free(q->slot);
    free(q);
}

static uint64_t alg_seed;

/* 8 bytes at a step; seeded once per process so that which members
 * collide is not the same in every proxy. */
static uint64_t alg_hash(const void *p, size_t n)
{
    if (alg_seed == 0)
        alg_seed = next_rand() | 1;
    const unsigned char *s = p;
    uint64_t h = alg_seed ^ ((uint64_t)n * 0x9e3779b97f4a7c15ULL);
    for (; n >= 8; s += 8, n -= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdULL;
        h ^= h >> 32;
    }
    uint64_t w = 0;
    if (n)
        memcpy(&w, s, n);
    h = (h ^ w) * 0xc4ceb9fe1a85ec53ULL;
    return h ^ (h >> 29);
}

/* The element equal to (p, n), or NULL with *at the free slot for it. */
static alg_elem *alg_find(const alg_req *q, uint64_t h, const void *p, size_t n, size_t *at)
{
    if (q->nslot == 0)
        return NULL;
    size_t mask = q->nslot - 1;
    for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
        uint32_t s = q->slot[i];
        if (s == 0) {
            *at = i;
            return NULL;
        }
        alg_elem *e = &q->el[s - 1];
        if (e->h == h && e->n == n && (n == 0 || memcmp(e->p, p, n) == 0))
            return e;
    }
}

/* Room for one more element: the table at most half full. */
static bool alg_reserve(alg_req *q)
{
    alg_elem *el = px_grow(q->el, q->nel, &q->cap, sizeof(*el), 64);
    if (!el)
        return false;
    q->el = el;
    if ((q->nel + 1) * 2 <= q->nslot)
        return true;
    size_t nslot = q->nslot ? q->nslot * 2 : 128;
    uint32_t *slot = calloc(nslot, sizeof(*slot));
    if (!slot)
        return false;
    for (size_t k = 0; k < q->nel; k++) {
        size_t i = (size_t)q->el[k].h & (nslot - 1);
        while (slot[i])
            i = (i + 1) & (nslot - 1);
        slot[i] = (uint32_t)k + 1;
    }
    free(q->slot);
    q->slot = slot;
    q->nslot = nslot;
    return true;
}

static const char *alg_copy(alg_req *q, const void *p, size_t n)
{
    alg_block *b = q->mem;
    if (!b || b->cap - b->used < n) {
        /* Small for a small answer, doubling up to 1 MiB a block. */
        size_t cap = b ? b->cap * 2 : 1024;
        if (cap > (1u << 20))
            cap = 1u << 20;
        if (cap < n)
            cap = n;
        b = malloc(sizeof(*b) + cap);
        if (!b)
            return NULL;
        b->used = 0;
        b->cap = cap;
        b->next = q->mem;
        q->mem = b;
    }
    char *c = b->data + b->used;
    if (n)
        memcpy(c, p, n);
    b->used += n;
    return c;
}

/* Adds (p, n) with mark 0 if it is not there; false out of memory. */
static bool alg_insert(alg_req *q, uint64_t h, const void *p, size_t n)
{
    size_t at;
    if (!alg_reserve(q))
        return false;
    if (alg_find(q, h, p, n, &at))
        return true;
    const char *c = alg_copy(q, p, n);
    if (!c)
        return false;
    q->el[q->nel] = (alg_elem){h, c, n, 0};
    q->slot[at] = (uint32_t)++q->nel;
    q->live++;
    return true;
}

/* Folds a source's elements (none for a MISS) into the answer: 0, or -1
 * out of memory. Past ALG_READ_MAX it stops and sets q->over. */
static int alg_take(alg_req *q, const momento_result *res)
{
    size_t count = momento_result_is_hit(res) ? momento_result_item_count(res) : 0;
    uint32_t g = q->arrivals++;
    if (q->op == ALG_INTER && g > 0) {
        q->cur = g;
        q->live = 0;
    }
    for (size_t k = 0; k < count; k++) {
        size_t n;
        const void *p = momento_result_value(momento_result_item(res, k), &n);
        q->read_bytes += n + ALG_ELEM_COST;
        if (q->read_bytes > ALG_READ_MAX) {
            q->over = true;
            return 0;
        }
        uint64_t h = alg_hash(p, n);
        size_t at;
        alg_elem *e;
        if (q->op == ALG_UNION || g == 0) {
            if (!alg_insert(q, h, p, n))
                return -1;
        } else if ((e = alg_find(q, h, p, n, &at)) == NULL) {
            continue;
        } else if (q->op == ALG_DIFF && e->mark == 0) {
            e->mark = 1;
            q->live--;
        } else if (q->op == ALG_INTER && e->mark == g - 1) {
            e->mark = g;
            q->live++;
        }
    }
    if (q->op != ALG_UNION && q->live == 0)
        q->empty = true;
    return 0;
}

static void alg_pump(alg_req *q);

static void alg_fail(alg_req *q, const momento_result *res)
{
    resp_end_failure(q->r, res);
    q->failed = true;
}

static void alg_on_fetch(const momento_result *res, void *ud)
{
    alg_req *q = ud;
    q->inflight--;
    if (q->failed) {
        /* The reply has ended: nothing more to do but drain. */
    } else if (momento_result_error(res) != MOMENTO_OK) {
        alg_fail(q, res);
    } else if (!q->empty && !q->over && alg_take(q, res) < 0) {
        resp_end_error(q->r, "ERR out of memory");
        q->failed = true;
    }
    alg_pump(q);
}

static void alg_on_length(const momento_result *res, void *ud)
{
    alg_req *q = ud;
    q->inflight--;
    if (!q->failed && momento_result_error(res) != MOMENTO_OK)
        alg_fail(q, res);
    alg_pump(q);
}

static void alg_on_stored(const momento_result *res, void *ud)
{
    alg_req *q = ud;
    resp_end_int_or_failure(q->r, res, (long long)q->live);
    alg_free(q);
}

/* The destination is gone: the answer goes in its place, as a new set
 * with the default TTL (Redis's has none). */
static void alg_on_cleared(const momento_result *res, void *ud)
{
    alg_req *q = ud;
    if (!resp_store_cleared(q->r, res, q->live)) {
        alg_free(q);
        return;
    }
    const void **values = NULL;
    size_t *lens = NULL;
    int rc = MOMENTO_ERR_NO_MEMORY;
    if (resp_arrays_new(q->live, &values, &lens)) {
        size_t m = 0;
        for (size_t k = 0; k < q->nel; k++)
            if (q->el[k].mark == q->cur) {
                values[m] = q->el[k].p;
                lens[m++] = q->el[k].n;
            }
        px_backend *b = px_conn_backend(px_reply_conn(q->r));
        momento_collection_ttl t = {resp_default_ttl(q->r), 1};
        /* The call copies its arguments before it returns. */
        rc = momento_set_add_elements(b->client, b->cache, q->dest, q->dest_len,
                                      (const void *const *)values, lens, m, &t, NULL,
                                      alg_on_stored, q);
    }
    free(values);
    free(lens);
    if (!resp_submitted(q->r, rc))
        alg_free(q);
}

/* Every source is read: the answer, or for a STORE form the destination
 * replaced by it. */
static void alg_finish(alg_req *q)
{
    if (q->over) {
        resp_errorf(q->r, "ERR momento-proxy: %s reads at most %u MiB of its sources", q->name,
                    ALG_READ_MAX >> 20);
        px_reply_end(q->r);
        alg_free(q);
        return;
    }
    if (!q->store) {
        resp_array(q->r, (long long)q->live);
        for (size_t k = 0; k < q->nel; k++)
            if (q->el[k].mark == q->cur)
                resp_bulk(q->r, q->el[k].p, q->el[k].n);
        px_reply_end(q->r);
        alg_free(q);
        return;
    }
    /* Refused before anything is deleted: a set Momento would not store
     * (its item limit, counted as SetFetch carries the elements). */
    size_t bytes = q->dest_len;
    for (size_t k = 0; k < q->nel; k++)
        if (q->el[k].mark == q->cur) {
            size_t n = q->el[k].n;
            bytes += 2 + n;
            for (size_t v = n; v >= 0x80; v >>= 7)
                bytes++;
        }
    if (q->live > 0 && !resp_store_fits(q->r, "set", bytes)) {
        alg_free(q);
        return;
    }
    px_backend *b = px_conn_backend(px_reply_conn(q->r));
    int rc = momento_delete(b->client, b->cache, q->dest, q->dest_len, NULL, alg_on_cleared, q);
    if (!resp_submitted(q->r, rc))
        alg_free(q);
}

/* Asks for the next sources, up to ALG_WINDOW in flight; finishes once
 * none is. Callbacks run from the event loop (dispatch mode), never from
 * within a submit, so this never runs inside itself. */
static void alg_pump(alg_req *q)
{
    /* Once failed, the reply has ended and q->r must not be used. */
    while (!q->failed && q->inflight < ALG_WINDOW && q->next < q->n) {
        /* SDIFF subtracts from its first source: that one first. */
        if (q->op == ALG_DIFF && q->next > 0 && q->arrivals == 0 && !q->empty)
            break;
        px_backend *b = px_conn_backend(px_reply_conn(q->r));
        /* A STORE's reads decide a write: not shared with another command's. */
        momento_coalescer *co = q->store ? NULL : b->co;
        const char *k = q->keys[q->next];
        size_t len = q->lens[q->next];
        int rc;
        if (q->empty || q->over)
            rc = co ? momento_coalescing_set_length(co, b->cache, k, len, NULL, alg_on_length, q)
                    : momento_set_length(b->client, b->cache, k, len, NULL, alg_on_length, q);
        else
            rc = co ? momento_coalescing_set_fetch(co, b->cache, k, len, NULL, alg_on_fetch, q)
                    : momento_set_fetch(b->client, b->cache, k, len, NULL, alg_on_fetch, q);
        if (!resp_submitted(q->r, rc)) {
            q->failed = true;
            break;
        }
        q->next++;
        q->inflight++;
    }
    if (q->inflight > 0)
        return;
    if (q->failed)
        alg_free(q);
    else
        alg_finish(q);
}

/* argv[first..argc) are the sources; a STORE form's destination is
 * argv[1]. */
static void set_algebra(px_reply *r, int argc, const px_str *argv, alg_op op, bool store,
                        const char *name)
{
    int first = store ? 2 : 1;
    size_t n = (size_t)(argc - first), bytes = store ? argv[1].n : 0;
    for (size_t i = 0; i < n; i++)
        bytes += argv[first + i].n;
    alg_req *q = resp_ctx_new(r, sizeof(*q) + n * (sizeof(char *) + sizeof(size_t)) + bytes + 1);
    if (!q)
        return;
    q->r = r;
    q->name = name;
    q->op = op;
    q->store = store;
    q->n = n;
    q->keys = (const char **)(q + 1);
    q->lens = (size_t *)(q->keys + n);
    char *p = (char *)(q->lens + n);
    if (store) {
        memcpy(p, argv[1].p, argv[1].n);
        q->dest = p;
        q->dest_len = argv[1].n;
        p += argv[1].n;
    }
    for (size_t i = 0; i < n; i++) {
        memcpy(p, argv[first + i].p, argv[first + i].n);
        q->keys[i] = p;
        q->lens[i] = argv[first + i].n;
        p += argv[first + i].n;
    }
    alg_pump(q);
}

static void cmd_sinter(px_reply *r, int argc, const px_str *argv)
{
    set_algebra(r, argc, argv, ALG_INTER, false, "SINTER");
}

static void cmd_sunion(px_reply *r, int argc, const px_str *argv)
{
    set_algebra(r, argc, argv, ALG_UNION, false, "SUNION");
}

static void cmd_sdiff(px_reply *r, int argc, const px_str *argv)
{
    set_algebra(r, argc, argv, ALG_DIFF, false, "SDIFF");
}

static void cmd_sinterstore(px_reply *r, int argc, const px_str *argv)
{
    set_algebra(r, argc, argv, ALG_INTER, true, "SINTERSTORE");
}

static void cmd_sunionstore(px_reply *r, int argc, const px_str *argv)
{
    set_algebra(r, argc, argv, ALG_UNION, true, "SUNIONSTORE");
}

static void cmd_sdiffstore(px_reply *r, int argc, const px_str *argv)
{
    set_algebra(r, argc, argv, ALG_DIFF, true, "SDIFFSTORE");
}

const resp_cmd resp_set_cmds[] = {
    {"sadd", -3, cmd_sadd},
    {"srem", -3, cmd_srem},
    {"smembers", 2, cmd_smembers},
    {"sismember", 3, cmd_sismember},
    {"smismember", -3, cmd_smismember},
    {"scard", 2, cmd_scard},
    {"spop", -2, cmd_spop},
    {"srandmember", -2, cmd_srandmember},
    {"sinter", -2, cmd_sinter},
    {"sunion", -2, cmd_sunion},
    {"sdiff", -2, cmd_sdiff},
    {"sinterstore", -3, cmd_sinterstore},
    {"sunionstore", -3, cmd_sunionstore},
    {"sdiffstore", -3, cmd_sdiffstore},
    {NULL, 0, NULL},
};
