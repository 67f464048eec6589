/*
 * Differential property test (issue 46): shared work never changes an
 * answer. Seeded random mixes of requests are sent through a plain client
 * (the reference) and through the same requests' shared paths - adaptive
 * batching (min_in_flight 1 and 2), the coalescer, the coalescer over a
 * batching client - and again over protosocket; every request's outcome
 * must equal the reference's, every callback must come exactly once, and
 * the cache must end in the same state.
 *
 * Reproducing a run: it prints "seed N" to stderr before anything else.
 *   MOMENTO_DIFF_SEED=N build/tests/test_differential
 * runs the same rounds again (each round's requests are a function of the
 * seed and the round's number only). MOMENTO_DIFF_ROUNDS bounds the rounds
 * (default 30, about 25 s on an idle machine; 2 when MOMENTO_TEST_TIME_SCALE
 * is over 1, as under valgrind, which checks the paths rather than many
 * seeds), MOMENTO_DIFF_SECONDS the time (default 60: no round starts after
 * it). A mismatch prints the seed, the round, the configuration, the
 * request and both outcomes, and the run stops after that round.
 *
 * One round:
 *  - A plan from the seed: 16 to 32 keys (printable and binary names) set
 *    up as strings (empty to 50 KB), dictionaries, lists, sets, sorted sets
 *    or left absent; each key is read-only in the round (1 to 3 reads, often
 *    the same read several times, so that the coalescer merges them),
 *    written (one write, sometimes repeated identically) or untouched.
 *    Reads: get, dictionary get-field / fetch, list / set / sorted-set
 *    fetch, of any key - so misses, and keys of the wrong type both ways.
 *    Writes: set (over a collection too), delete, dictionary set-field,
 *    list push, set add, sorted-set put. Bad arguments: an empty or
 *    oversized key, an oversized value, a NULL callback, an empty list
 *    slice, a token already cancelled: only the submit's return code is
 *    compared, and that no callback comes.
 *  - Every configuration gets its own cache, emptied and set up alike by
 *    blocking calls of a separate client; then all the round's requests
 *    are submitted at once. No key is both written and read, nor written
 *    two different ways, in a round, so no outcome depends on the order in
 *    which requests meet at the server. Then every key is read back by the
 *    separate client and compared.
 *  - Faults, on gRPC: some keys are momento-local's `error-keys` with one
 *    status per round (internal, failed-precondition, invalid-argument,
 *    permission-denied, resource-exhausted, not-found, unknown,
 *    already-exists) and some are `delay-keys` (held DELAY_MS), set as
 *    client-wide headers on every client of every configuration, so all
 *    see the same faults per key. A call naming such a key fails or waits
 *    whole, a batch with it among its items too: what the batcher must not
 *    let spill onto the batch's other requests. Left out by design: the
 *    statuses that end every request of a client alike (unavailable,
 *    unauthenticated, cancelled, deadline-exceeded), which no client can
 *    isolate per key, and so batching does not try to (docs/batching.md
 *    "One key's failure"). Protosocket carries no headers: its
 *    configurations run without faults, delays and post-submit cancels
 *    (and batching steps aside there: their batching configurations check
 *    that it changes nothing).
 *  - Deadlines and cancels are given so that their outcome does not depend
 *    on timing: a short deadline (10 to 100 ms) only to requests on delayed
 *    keys (the server holds them past it, and caps the delay at the
 *    deadline: TIMEOUT), long ones (20 to 40 s, or the client's 60 s) to
 *    every other; a cancel after submit only to requests on delayed keys,
 *    sent at once after the round's submissions (CANCELLED). The documented
 *    timing outcome - a request whose deadline is shorter than another
 *    key's server delay may end TIMEOUT when it shares a batch with that
 *    key (docs/batching.md) - is avoided by that rule, not excused. A
 *    cancel that came later than half the delay after its submit (the
 *    test's thread was descheduled) is reported and that request's outcome
 *    not compared.
 *  - Final state: a write that ended CANCELLED or TIMEOUT may or may not
 *    have landed, on any client (a cancelled member of a batch still sent
 *    stays in it; a plain call held by the server is dropped): a key whose
 *    every write was such is not compared after the round.
 */
#include "momento/coalescer.h"
#include "momento/collections.h"
#include "momento/local.h"
#include "momento/momento.h"
#include "testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum {
    MAX_KEYS = 40,
    MAX_OPS = 200,
    MAX_ELEMS = 4,
    DEFAULT_ROUNDS = 30,
    DEFAULT_SECONDS = 60,
    MAX_PRINTED = 40, /* mismatches printed per run; all are counted */
};

/* How long momento-local holds a call naming a delay key. Short deadlines
 * are at most a third of it, and cancels come within half of it. */
#define DELAY_MS ((uint32_t)TU_MS(300))

/* ------------------------------------------------------------ randomness */

/* splitmix64: small, and its stream is the same on every platform, so a
 * seed means the same rounds everywhere. */
static uint64_t rnd(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint32_t below(uint64_t *s, uint32_t n)
{
    return (uint32_t)(rnd(s) % n);
}

static bool chance(uint64_t *s, uint32_t percent)
{
    return below(s, 100) < percent;
}

/* ------------------------------------------------------------------ bytes */

typedef struct bytes {
    uint8_t *p;
    size_t n;
} bytes;

static bytes b_rand(uint64_t *s, size_t n, bool printable)
{
    static const char alnum[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-";
    bytes b = {malloc(n + 1), n};
    assert_non_null(b.p);
    for (size_t i = 0; i < n; i++)
        b.p[i] = printable ? (uint8_t)alnum[below(s, sizeof(alnum) - 1)] : (uint8_t)below(s, 256);
    b.p[n] = 0; /* names go into header values as strings */
    return b;
}

static bytes b_str(const char *fmt, ...)
{
    char tmp[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    bytes b = {malloc((size_t)n + 1), (size_t)n};
    assert_non_null(b.p);
    memcpy(b.p, tmp, (size_t)n + 1);
    return b;
}

static bytes b_cat(bytes a, bytes b)
{
    bytes c = {malloc(a.n + b.n + 1), a.n + b.n};
    assert_non_null(c.p);
    memcpy(c.p, a.p, a.n);
    memcpy(c.p + a.n, b.p, b.n);
    c.p[c.n] = 0;
    free(a.p);
    free(b.p);
    return c;
}

static bytes b_dup(bytes a)
{
    bytes c = {malloc(a.n + 1), a.n};
    assert_non_null(c.p);
    memcpy(c.p, a.p, a.n);
    c.p[c.n] = 0;
    return c;
}

/* Up to `max` - 1 bytes, printable or not. Each draw is its own statement
 * (C leaves the order of a call's arguments open): a seed must mean the
 * same bytes with every compiler. */
static bytes b_some(uint64_t *s, uint32_t max)
{
    size_t n = below(s, max);
    bool printable = chance(s, 70);
    return b_rand(s, n, printable);
}

/* A value: mostly short, some empty, some of several KB and a few of
 * tens of KB (so that batches split at max_bytes). */
static bytes b_value(uint64_t *s)
{
    uint32_t r = below(s, 100);
    size_t n = r < 8 ? 0 : r < 80 ? 1 + below(s, 64) : r < 95 ? 1000 + below(s, 4000)
                                                             : 30000 + below(s, 20000);
    bool printable = chance(s, 50);
    return b_rand(s, n, printable);
}

/* ------------------------------------------------------- text of results */

typedef struct sb {
    char *p;
    size_t n, cap;
} sb;

static void sb_printf(sb *b, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->p ? b->p + b->n : NULL, b->p ? b->cap - b->n : 0, fmt, ap);
        va_end(ap);
        if (b->p && (size_t)n < b->cap - b->n) {
            b->n += (size_t)n;
            return;
        }
        size_t cap = (b->cap + (size_t)n + 64) * 2;
        char *p = realloc(b->p, cap);
        if (!p)
            abort(); /* the test's own memory: nothing to compare without it */
        b->p = p;
        b->cap = cap;
    }
}

/* Bytes as their length, a 64-bit FNV-1a hash and the first 12 in hex:
 * equal texts mean equal bytes (up to a 64-bit hash's collisions), and a
 * long value prints short. */
static void sb_bytes(sb *b, const char *tag, const void *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    const uint8_t *u = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ u[i]) * 0x100000001b3ull;
    sb_printf(b, " %s=%zu:%016" PRIx64 ":", tag, n, h);
    for (size_t i = 0; i < n && i < 12; i++)
        sb_printf(b, "%02x", u[i]);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The part of a result the comparison covers: error and outcome, value,
 * field, integer, score, and the items (sorted where the API promises no
 * order: a set's elements, a dictionary's entries). Not the message, the
 * attempts or the trailers, which differ between a plain call and a batch
 * by design. Returns a string to free(). */
static char *describe(const momento_result *r, bool unordered)
{
    sb b = {0};
    sb_printf(&b, "%s/%s", momento_error_name(momento_result_error(r)),
              momento_outcome_name(momento_result_outcome(r)));
    size_t len = 0;
    const void *v = momento_result_value(r, &len);
    if (v)
        sb_bytes(&b, "value", v, len);
    const void *f = momento_result_field(r, &len);
    if (f)
        sb_bytes(&b, "field", f, len);
    if (momento_result_int(r))
        sb_printf(&b, " int=%" PRId64, momento_result_int(r));
    if (momento_result_score(r) != 0.0)
        sb_printf(&b, " score=%.17g", momento_result_score(r));
    size_t n = momento_result_item_count(r);
    if (n) {
        char **items = calloc(n, sizeof(*items));
        if (!items)
            abort(); /* on the completion thread: no cmocka assertion there */
        for (size_t i = 0; i < n; i++)
            items[i] = describe(momento_result_item(r, i), false);
        if (unordered)
            qsort(items, n, sizeof(*items), cmp_str);
        sb_printf(&b, " items=%zu[", n);
        for (size_t i = 0; i < n; i++) {
            sb_printf(&b, "%s%s", i ? "; " : "", items[i]);
            free(items[i]);
        }
        sb_printf(&b, "]");
        free(items);
    }
    return b.p;
}

/* ------------------------------------------------------------------ plans */

typedef enum ktype { K_ABSENT, K_STRING, K_DICT, K_LIST, K_SET, K_ZSET } ktype;
static const char *const ktype_names[] = {"absent", "string", "dictionary", "list", "set",
                                          "sorted-set"};

typedef enum role { R_NONE, R_READ, R_WRITE } role;

typedef struct dkey {
    bytes name;
    bool printable; /* may be named in a fault header */
    ktype type;     /* as set up */
    bytes value;    /* a string's */
    int n;          /* a collection's elements */
    bytes field[MAX_ELEMS], elem[MAX_ELEMS];
    double score[MAX_ELEMS];
    role role;
    bool error_key, delay_key;
    bool unsure; /* every write of it may or may not land: state not compared */
} dkey;

typedef enum op_kind {
    OP_GET,
    OP_SET,
    OP_DELETE,
    OP_DICT_GET_FIELD,
    OP_DICT_FETCH,
    OP_LIST_FETCH,
    OP_SET_FETCH,
    OP_ZSET_FETCH,
    OP_DICT_SET_FIELD,
    OP_LIST_PUSH,
    OP_SET_ADD,
    OP_ZSET_PUT,
} op_kind;
static const char *const op_names[] = {"get",        "set",          "delete",
                                       "dict-get-field", "dict-fetch", "list-fetch",
                                       "set-fetch",  "zset-fetch",   "dict-set-field",
                                       "list-push",  "set-add",      "zset-put"};

static bool is_write(op_kind k)
{
    return k == OP_SET || k == OP_DELETE || k >= OP_DICT_SET_FIELD;
}

/* What is wrong with a request refused at submit. */
typedef enum bad_kind {
    BAD_NONE,
    BAD_EMPTY_KEY,
    BAD_BIG_KEY,
    BAD_BIG_VALUE,
    BAD_NULL_CB,
    BAD_EMPTY_SLICE,
    BAD_PRECANCELLED,
} bad_kind;
static const char *const bad_names[] = {"",          "empty key",   "oversized key",
                                        "oversized value", "NULL callback", "empty slice",
                                        "token already cancelled"};

typedef struct op {
    op_kind kind;
    int key;       /* index in the plan's keys; -1: `own_key` */
    bytes own_key; /* a bad request's key (`big` not owned) */
    bad_kind bad;
    bytes a, b;    /* value; field and value; element */
    double score;
    uint64_t ttl_ms;
    int32_t start, end;
    momento_order order;
    uint32_t timeout_ms; /* 0: the client's */
    bool short_deadline, cancel_after, via_coalescer;
} op;

typedef struct plan {
    int round;
    bool grpc; /* faults, delays and post-submit cancels only there */
    const char *status; /* `return-error` for the error keys, or NULL */
    int n_keys, n_ops;
    dkey keys[MAX_KEYS];
    op ops[MAX_OPS];
    char error_keys[1100], delay_keys[1100];
} plan;

/* Statuses an injected error may take: those a batch may owe to one key
 * (not the transport's, the credentials', a cancel's or a deadline's). */
static const char *const statuses[] = {"internal",           "failed-precondition",
                                       "invalid-argument",   "permission-denied",
                                       "resource-exhausted", "not-found",
                                       "unknown",            "already-exists"};

static uint8_t *big; /* MOMENTO_MAX_ITEM_BYTES + 1 bytes: over every limit */

static const uint8_t *key_of(const plan *p, const op *o, size_t *len)
{
    const bytes *k = o->key >= 0 ? &p->keys[o->key].name : &o->own_key;
    *len = k->n;
    return k->p;
}

/* A long deadline (or the client's) for a request on a key nobody delays:
 * many times any delay, so that it never decides an outcome. */
static uint32_t long_timeout(uint64_t *s)
{
    return chance(s, 50) ? 0 : (uint32_t)TU_MS(20000 + below(s, 20000));
}

/* The options of one request on key `k`: on a delayed key a short
 * deadline, a cancel after submit, or a long deadline; elsewhere a long
 * one; anywhere, rarely, a token cancelled before the submit. */
static void pick_options(uint64_t *s, const dkey *k, op *o)
{
    o->timeout_ms = long_timeout(s);
    if (chance(s, 4)) {
        o->bad = BAD_PRECANCELLED;
        return;
    }
    if (!k || !k->delay_key)
        return;
    uint32_t r = below(s, 100);
    if (r < 30) {
        o->short_deadline = true;
        o->timeout_ms = 10 + below(s, 91);
    } else if (r < 55) {
        o->cancel_after = true;
    }
}

static op *new_op(plan *p, op_kind kind, int key)
{
    assert_true(p->n_ops < MAX_OPS);
    op *o = &p->ops[p->n_ops++];
    memset(o, 0, sizeof(*o));
    o->kind = kind;
    o->key = key;
    o->end = MOMENTO_END;
    return o;
}

static void make_key(plan *p, uint64_t *s, int i)
{
    dkey *k = &p->keys[i];
    memset(k, 0, sizeof(*k));
    uint32_t r = below(s, 100);
    if (r < 75) { /* a printable name a fault header may list */
        k->printable = true;
        k->name = b_cat(b_str("r%d%c%d-", p->round, p->grpc ? 'g' : 'p', i),
                        b_rand(s, 1 + below(s, 12), true));
    } else if (r < 95) { /* any bytes: NUL, space, 0xff... */
        k->name = b_cat(b_str("r%d%c%d-", p->round, p->grpc ? 'g' : 'p', i),
                        b_rand(s, 1 + below(s, 16), false));
    } else { /* a long name */
        k->name = b_cat(b_str("r%d%c%d-", p->round, p->grpc ? 'g' : 'p', i),
                        b_rand(s, 200 + below(s, 2000), true));
    }
    r = below(s, 100);
    k->type = r < 20 ? K_ABSENT : r < 55 ? K_STRING : (ktype)(K_DICT + below(s, 4));
    if (k->type == K_STRING)
        k->value = b_value(s);
    if (k->type >= K_DICT) {
        k->n = 1 + (int)below(s, MAX_ELEMS);
        for (int e = 0; e < k->n; e++) {
            /* Distinct by their prefix: a set's elements, a dictionary's
             * fields, a sorted set's values. */
            k->field[e] = b_cat(b_str("f%d", e), b_some(s, 6));
            k->elem[e] = b_cat(b_str("e%d", e), b_some(s, 40));
            k->score[e] = (double)below(s, 5) * 0.5 - 1.0; /* ties too */
        }
    }
    r = below(s, 100);
    k->role = r < 55 ? R_READ : r < 85 ? R_WRITE : R_NONE;
}

static void add_reads(plan *p, uint64_t *s, int i)
{
    const dkey *k = &p->keys[i];
    int n = 1 + (int)below(s, 3);
    op proto;
    memset(&proto, 0, sizeof(proto));
    for (int j = 0; j < n; j++) {
        /* Often the same read again, for the coalescer to merge. */
        if (j == 0 || chance(s, 40)) {
            /* Mostly the read that fits the key's type, else any: a
             * wrong type either way round. */
            static const op_kind fits[] = {OP_GET, OP_GET, OP_DICT_FETCH, OP_LIST_FETCH,
                                           OP_SET_FETCH, OP_ZSET_FETCH};
            uint32_t r = below(s, 100);
            if (r < 50 && k->type != K_ABSENT)
                proto.kind = k->type == K_DICT && chance(s, 50) ? OP_DICT_GET_FIELD
                                                                : fits[k->type];
            else
                proto.kind = r < 75 ? OP_GET : (op_kind)(OP_DICT_GET_FIELD + below(s, 5));
            proto.start = 0;
            proto.end = MOMENTO_END;
            proto.order = MOMENTO_ASCENDING;
            if (proto.kind == OP_LIST_FETCH && chance(s, 40)) {
                proto.start = chance(s, 50) ? 1 : -2;
                proto.end = proto.start == 1 ? 3 : MOMENTO_END;
            }
            if (proto.kind == OP_ZSET_FETCH && chance(s, 40))
                proto.order = MOMENTO_DESCENDING;
            proto.a.n = 0;
            if (proto.kind == OP_DICT_GET_FIELD)
                proto.a = k->type == K_DICT && chance(s, 70) ? k->field[below(s, (uint32_t)k->n)]
                                                             : (bytes){(uint8_t *)"nofield", 7};
        }
        op *o = new_op(p, proto.kind, i);
        o->start = proto.start;
        o->end = proto.end;
        o->order = proto.order;
        if (proto.kind == OP_DICT_GET_FIELD)
            o->a = b_dup(proto.a);
        o->via_coalescer = chance(s, 75);
        pick_options(s, k, o);
    }
}

static void add_writes(plan *p, uint64_t *s, int i)
{
    dkey *k = &p->keys[i];
    uint32_t r = below(s, 100);
    op_kind kind = r < 40   ? OP_SET
                   : r < 55 ? OP_DELETE
                            : (op_kind)(OP_DICT_SET_FIELD + below(s, 4));
    /* Repeated writes are identical, so the state they leave does not
     * depend on their order; a push's result (the new length) would, so
     * it is never repeated. */
    int n = kind == OP_LIST_PUSH ? 1 : 1 + (int)below(s, 3);
    bytes a = {0}, b = {0};
    double score = 0;
    uint64_t ttl = chance(s, 50) ? 0 : 300000;
    switch (kind) {
    case OP_SET:
        a = b_value(s);
        break;
    case OP_DICT_SET_FIELD:
        a = k->type == K_DICT && chance(s, 50) ? b_dup(k->field[below(s, (uint32_t)k->n)])
                                               : b_str("fnew%u", below(s, 100));
        b = b_some(s, 30);
        break;
    case OP_LIST_PUSH:
        a = b_some(s, 30);
        break;
    case OP_SET_ADD:
    case OP_ZSET_PUT:
        a = k->type >= K_DICT && chance(s, 50) ? b_dup(k->elem[below(s, (uint32_t)k->n)])
                                               : b_str("enew%u", below(s, 100));
        score = (double)below(s, 7) * 0.75 - 2.0;
        break;
    default:
        break;
    }
    bool sure = false, unsure = false;
    for (int j = 0; j < n; j++) {
        op *o = new_op(p, kind, i);
        o->a = a.p ? b_dup(a) : a;
        o->b = b.p ? b_dup(b) : b;
        o->score = score;
        o->ttl_ms = ttl;
        o->via_coalescer = chance(s, 75);
        pick_options(s, k, o);
        if (o->bad == BAD_NONE && (o->cancel_after || o->short_deadline))
            unsure = true;
        else if (o->bad == BAD_NONE)
            sure = true;
    }
    k->unsure = unsure && !sure;
    free(a.p);
    free(b.p);
}

/* A request every client refuses at submit, on a key of its own. */
static void add_bad(plan *p, uint64_t *s)
{
    static const struct {
        bad_kind bad;
        op_kind kind;
    } bads[] = {
        {BAD_EMPTY_KEY, OP_GET},        {BAD_EMPTY_KEY, OP_SET},
        {BAD_EMPTY_KEY, OP_DELETE},     {BAD_EMPTY_KEY, OP_DICT_FETCH},
        {BAD_EMPTY_KEY, OP_LIST_PUSH},  {BAD_BIG_KEY, OP_GET},
        {BAD_BIG_KEY, OP_DELETE},       {BAD_BIG_VALUE, OP_SET},
        {BAD_NULL_CB, OP_GET},          {BAD_NULL_CB, OP_SET},
        {BAD_NULL_CB, OP_DICT_FETCH},   {BAD_EMPTY_SLICE, OP_LIST_FETCH},
    };
    uint32_t w = below(s, sizeof(bads) / sizeof(bads[0]));
    op *o = new_op(p, bads[w].kind, -1);
    o->bad = bads[w].bad;
    o->via_coalescer = chance(s, 75);
    o->timeout_ms = long_timeout(s);
    if (o->bad == BAD_EMPTY_KEY)
        o->own_key = (bytes){(uint8_t *)"", 0};
    else if (o->bad == BAD_BIG_KEY)
        o->own_key = (bytes){big, MOMENTO_MAX_ITEM_BYTES + 1};
    else
        o->own_key = b_str("r%dbad%d", p->round, p->n_ops);
    if (o->bad == BAD_BIG_VALUE)
        o->a = (bytes){big, MOMENTO_MAX_ITEM_BYTES};
    else if (o->kind == OP_SET || o->kind == OP_LIST_PUSH)
        o->a = b_str("v");
    if (o->bad == BAD_EMPTY_SLICE) {
        o->start = 0;
        o->end = 0;
    }
}

static bool owns_key(const op *o)
{
    return o->key < 0 && o->bad != BAD_EMPTY_KEY && o->bad != BAD_BIG_KEY;
}

static void plan_free(plan *p)
{
    for (int i = 0; i < p->n_keys; i++) {
        dkey *k = &p->keys[i];
        free(k->name.p);
        free(k->value.p);
        for (int e = 0; e < k->n; e++) {
            free(k->field[e].p);
            free(k->elem[e].p);
        }
    }
    for (int i = 0; i < p->n_ops; i++) {
        op *o = &p->ops[i];
        if (owns_key(o))
            free(o->own_key.p);
        if (o->a.p != big)
            free(o->a.p);
        free(o->b.p);
    }
}

/* The round's plan: a function of (seed, round, grpc) only. */
static void plan_make(plan *p, uint64_t seed, int round, bool grpc)
{
    memset(p, 0, sizeof(*p));
    p->round = round;
    p->grpc = grpc;
    uint64_t s = seed ^ (0x51ed270b2b0a5f4dull * (uint64_t)(2 * round + (grpc ? 1 : 0) + 1));
    rnd(&s);
    p->n_keys = 16 + (int)below(&s, 17);
    bool errors = grpc && chance(&s, 70);
    bool delays = grpc && chance(&s, 50);
    if (errors)
        p->status = statuses[below(&s, sizeof(statuses) / sizeof(statuses[0]))];
    for (int i = 0; i < p->n_keys; i++)
        make_key(p, &s, i);
    /* Fault keys, listed in header values: apart by spaces, at most 64
     * keys and 1024 bytes (listable names are at most 40). At least one
     * of each kind when the round has the kind, at most 8. */
    size_t n_err = 0, n_delay = 0; /* bytes of each value so far */
    int keys_err = 0, keys_delay = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < p->n_keys; i++) {
            dkey *k = &p->keys[i];
            if (!k->printable || k->name.n > 40 || k->error_key || k->delay_key)
                continue;
            bool err = errors && keys_err < 8 && (pass ? keys_err == 0 : chance(&s, 20));
            bool delay = !err && delays && keys_delay < 8 &&
                         (pass ? keys_delay == 0 : chance(&s, 20));
            if (err) {
                k->error_key = true;
                keys_err++;
                n_err += (size_t)snprintf(p->error_keys + n_err, sizeof(p->error_keys) - n_err,
                                          "%s%s", n_err ? " " : "", (const char *)k->name.p);
            } else if (delay) {
                k->delay_key = true;
                keys_delay++;
                n_delay +=
                    (size_t)snprintf(p->delay_keys + n_delay, sizeof(p->delay_keys) - n_delay,
                                     "%s%s", n_delay ? " " : "", (const char *)k->name.p);
            }
        }
    }
    for (int i = 0; i < p->n_keys; i++) {
        if (p->keys[i].role == R_READ)
            add_reads(p, &s, i);
        else if (p->keys[i].role == R_WRITE)
            add_writes(p, &s, i);
    }
    int n_bad = (int)below(&s, 4);
    for (int i = 0; i < n_bad; i++)
        add_bad(p, &s);
    for (int i = p->n_ops - 1; i > 0; i--) { /* submitted in a random order */
        int j = (int)below(&s, (uint32_t)i + 1);
        op t = p->ops[i];
        p->ops[i] = p->ops[j];
        p->ops[j] = t;
    }
}

/* One line naming a request, for a mismatch's report (`coalescer`: in a
 * configuration with one). */
static void op_text(const plan *p, const op *o, bool coalescer, char *out, size_t size)
{
    sb b = {0};
    sb_printf(&b, "%s", op_names[o->kind]);
    size_t kl;
    const uint8_t *k = key_of(p, o, &kl);
    if (o->key >= 0) {
        const dkey *d = &p->keys[o->key];
        if (d->printable && kl <= 60)
            sb_printf(&b, " key \"%.*s\"", (int)kl, (const char *)k);
        else
            sb_bytes(&b, "key", k, kl);
        sb_printf(&b, " (%s%s%s%s%s)", ktype_names[d->type], d->error_key ? ", error-key " : "",
                  d->error_key ? p->status : "", d->delay_key ? ", delay-key" : "",
                  d->unsure ? ", unsure" : "");
    } else {
        sb_printf(&b, " bad: %s", bad_names[o->bad]);
    }
    if (o->a.n || o->kind == OP_SET)
        sb_bytes(&b, o->kind == OP_DICT_GET_FIELD || o->kind == OP_DICT_SET_FIELD ? "field" : "arg",
                 o->a.p, o->a.n);
    if (o->b.n)
        sb_bytes(&b, "value", o->b.p, o->b.n);
    if (o->kind == OP_LIST_FETCH || o->kind == OP_ZSET_FETCH)
        sb_printf(&b, " [%d,%d)%s", o->start, o->end,
                  o->order == MOMENTO_DESCENDING ? " desc" : "");
    if (o->timeout_ms)
        sb_printf(&b, " timeout %ums%s", o->timeout_ms, o->short_deadline ? " (short)" : "");
    if (o->cancel_after)
        sb_printf(&b, " cancelled after submit");
    if (o->bad == BAD_PRECANCELLED)
        sb_printf(&b, " token already cancelled");
    if (coalescer && o->via_coalescer)
        sb_printf(&b, " via the coalescer");
    snprintf(out, size, "%s", b.p);
    free(b.p);
}

/* ---------------------------------------------------------- configurations */

typedef struct config_def {
    const char *name;
    bool ps;                   /* get, set and delete over protosocket */
    uint32_t min_in_flight;    /* 0: no batching */
    uint32_t max_keys, max_bytes;
    bool coalescer;
    int reference;             /* index of the configuration compared with */
} config_def;

static const config_def configs[] = {
    {"plain", false, 0, 0, 0, false, 0},
    {"batching(1)", false, 1, 64, 1024 * 1024, false, 0},
    {"batching(2, 4 keys, 64 KiB)", false, 2, 4, 64 * 1024, false, 0},
    {"coalescer", false, 0, 0, 0, true, 0},
    {"coalescer+batching(1, 8 keys)", false, 1, 8, 256 * 1024, true, 0},
    /* Batching steps aside on protosocket (its pipelined commands share
     * writes and reads as a batch would; transports.c, momento__transports_open()):
     * these two check that a batching configuration there changes no
     * answer either. */
    {"ps plain", true, 0, 0, 0, false, 5},
    {"ps batching(1)", true, 1, 64, 1024 * 1024, false, 5},
    {"ps coalescer", true, 0, 0, 0, true, 5},
    {"ps coalescer+batching(1, 8 keys)", true, 1, 8, 256 * 1024, true, 5},
};
enum { N_CONFIGS = sizeof(configs) / sizeof(configs[0]) };

/* ------------------------------------------------------------------- runs */

/* One request's record in one configuration's run. */
typedef struct slot {
    int rc;           /* the submit's return */
    int calls;        /* callbacks so far (under `lock`) */
    int err;          /* the first callback's error */
    char *desc;       /* ...and describe() of its result */
    bool unordered;
    int64_t lag_ms;   /* a cancel after submit: how long after */
    momento_cancel_token *token;
} slot;

typedef struct run {
    slot slots[MAX_OPS];
    char *state[MAX_KEYS]; /* each key read back after the round */
    bool hung;             /* some callback had not come when the wait ended */
    momento_client_batching_stats batching;
    momento_coalescer_stats coalescing;
} run;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void on_result(const momento_result *r, void *userdata)
{
    slot *s = userdata;
    char *d = describe(r, s->unordered);
    pthread_mutex_lock(&lock);
    if (s->calls++ == 0) {
        s->desc = d;
        s->err = momento_result_error(r);
        d = NULL;
    }
    pthread_mutex_unlock(&lock);
    free(d);
}

static int calls_of(const slot *s)
{
    pthread_mutex_lock(&lock);
    int n = s->calls;
    pthread_mutex_unlock(&lock);
    return n;
}

static bool all_answered(const plan *p, const run *x)
{
    for (int i = 0; i < p->n_ops; i++)
        if (x->slots[i].rc == MOMENTO_OK && calls_of(&x->slots[i]) == 0)
            return false;
    return true;
}

typedef struct ctx {
    uint64_t seed;
    momento_local *server;
    momento_client *admin; /* setup and read-back: no faults, no batching */
    long mismatches, printed, compared, skipped;
    uint64_t batches[N_CONFIGS], coalesced[N_CONFIGS];
    long fault_ops, delay_ops;
    long outcomes[64]; /* the references' accepted requests, by -error */
} ctx;

/* A blocking setup call's end: `*r` is its result, freed here. (The
 * result is read after the call, not beside it in the same argument list,
 * whose order C leaves open.) */
static void check_ok(int rc, momento_result **r, const char *what)
{
    if (rc != MOMENTO_OK)
        fprintf(stderr, "setup: %s: %s (%s)\n", what, momento_error_name(rc),
                momento_result_message(*r));
    momento_result_free(*r);
    *r = NULL;
    assert_int_equal(rc, MOMENTO_OK);
}

/* Empties `cache` and sets the plan's keys up in it, by blocking calls
 * of the admin client: every configuration starts from the same state. */
static void set_up(ctx *t, const plan *p, const char *cache)
{
    momento_result *r = NULL;
    int rc = momento_flush_cache_sync(t->admin, cache, NULL, &r);
    check_ok(rc, &r, "flush");
    for (int i = 0; i < p->n_keys; i++) {
        const dkey *k = &p->keys[i];
        const void *f[MAX_ELEMS], *e[MAX_ELEMS];
        size_t fl[MAX_ELEMS], el[MAX_ELEMS];
        for (int j = 0; j < k->n; j++) {
            f[j] = k->field[j].p;
            fl[j] = k->field[j].n;
            e[j] = k->elem[j].p;
            el[j] = k->elem[j].n;
        }
        const uint8_t *nm = k->name.p;
        size_t nl = k->name.n;
        size_t n = (size_t)k->n;
        switch (k->type) {
        case K_ABSENT:
            continue;
        case K_STRING:
            rc = momento_set_sync(t->admin, cache, nm, nl, k->value.p, k->value.n, 0, NULL, &r);
            break;
        case K_DICT:
            rc = momento_dictionary_set_fields_sync(t->admin, cache, nm, nl, f, fl, e, el, n, NULL,
                                                    NULL, &r);
            break;
        case K_LIST:
            rc = momento_list_concatenate_back_sync(t->admin, cache, nm, nl, e, el, n, 0, NULL,
                                                    NULL, &r);
            break;
        case K_SET:
            rc = momento_set_add_elements_sync(t->admin, cache, nm, nl, e, el, n, NULL, NULL, &r);
            break;
        case K_ZSET:
            rc = momento_sorted_set_put_elements_sync(t->admin, cache, nm, nl, e, el, k->score, n,
                                                      NULL, NULL, &r);
            break;
        }
        check_ok(rc, &r, ktype_names[k->type]);
    }
}

/* What `k` holds after the round, as text: its type and contents. */
static char *read_back(ctx *t, const char *cache, const dkey *k)
{
    momento_result *r = NULL;
    const uint8_t *nm = k->name.p;
    size_t nl = k->name.n;
    int rc = momento_item_get_type_sync(t->admin, cache, nm, nl, NULL, &r);
    sb b = {0};
    if (rc != MOMENTO_OK || !momento_result_is_hit(r)) {
        sb_printf(&b, "type: %s/%s", momento_error_name(rc),
                  momento_outcome_name(momento_result_outcome(r)));
        momento_result_free(r);
        return b.p;
    }
    momento_item_type type = momento_result_item_type(r);
    momento_result_free(r);
    r = NULL;
    bool unordered = false;
    switch (type) {
    case MOMENTO_ITEM_TYPE_SCALAR:
        rc = momento_get_sync(t->admin, cache, nm, nl, NULL, &r);
        break;
    case MOMENTO_ITEM_TYPE_DICTIONARY:
        rc = momento_dictionary_fetch_sync(t->admin, cache, nm, nl, NULL, &r);
        unordered = true;
        break;
    case MOMENTO_ITEM_TYPE_LIST:
        rc = momento_list_fetch_sync(t->admin, cache, nm, nl, 0, MOMENTO_END, NULL, &r);
        break;
    case MOMENTO_ITEM_TYPE_SET:
        rc = momento_set_fetch_sync(t->admin, cache, nm, nl, NULL, &r);
        unordered = true;
        break;
    default:
        rc = momento_sorted_set_fetch_by_rank_sync(t->admin, cache, nm, nl, 0, MOMENTO_END,
                                                   MOMENTO_ASCENDING, NULL, &r);
        break;
    }
    char *d = describe(r, unordered);
    sb_printf(&b, "type %d: %s", (int)type, d);
    free(d);
    momento_result_free(r);
    return b.p;
}

static momento_client *make_client(ctx *t, const plan *p, const config_def *cd)
{
    momento_config *cfg = tu_config();
    assert_int_equal(momento_config_set_timeout_ms(cfg, (uint32_t)TU_MS(60000)), MOMENTO_OK);
    /* No keepalive: a ping unanswered on a loaded machine would end the
     * connection, an outcome of the machine, not of the configuration. */
    assert_int_equal(momento_config_set_keepalive(cfg, 0, 0), MOMENTO_OK);
    if (cd->min_in_flight)
        assert_int_equal(momento_config_set_batching(cfg, cd->min_in_flight, 0, cd->max_keys,
                                                     cd->max_bytes),
                         MOMENTO_OK);
    if (cd->ps) {
        char ep[64];
        snprintf(ep, sizeof(ep), "127.0.0.1:%d", momento_local_protosocket_port(t->server));
        assert_int_equal(momento_config_set_transport(cfg, MOMENTO_TRANSPORT_PROTOSOCKET),
                         MOMENTO_OK);
        assert_int_equal(momento_config_set_protosocket_endpoint(cfg, ep), MOMENTO_OK);
    }
    /* The same faults on every client of every configuration: client-wide
     * headers, which batches and coalesced RPCs carry too. */
    if (p->error_keys[0]) {
        assert_int_equal(momento_config_add_header(cfg, "return-error", p->status), MOMENTO_OK);
        assert_int_equal(momento_config_add_header(cfg, "error-keys", p->error_keys), MOMENTO_OK);
    }
    if (p->delay_keys[0]) {
        char ms[16];
        snprintf(ms, sizeof(ms), "%u", DELAY_MS);
        assert_int_equal(momento_config_add_header(cfg, "delay-ms", ms), MOMENTO_OK);
        assert_int_equal(momento_config_add_header(cfg, "delay-keys", p->delay_keys), MOMENTO_OK);
    }
    momento_client *c = tu_client(t->server, cfg);
    momento_config_free(cfg);
    return c;
}

static int submit(momento_client *c, momento_coalescer *co, const char *cache, const plan *p,
                  const op *o, const momento_request_options *opts, slot *s)
{
    size_t kl;
    const uint8_t *k = key_of(p, o, &kl);
    momento_callback cb = o->bad == BAD_NULL_CB ? NULL : on_result;
    bool viaco = co && o->via_coalescer;
    switch (o->kind) {
    case OP_GET:
        return viaco ? momento_coalescing_get(co, cache, k, kl, opts, cb, s)
                     : momento_get(c, cache, k, kl, opts, cb, s);
    case OP_SET:
        return viaco ? momento_coalescing_set(co, cache, k, kl, o->a.p, o->a.n, o->ttl_ms, opts,
                                              cb, s)
                     : momento_set(c, cache, k, kl, o->a.p, o->a.n, o->ttl_ms, opts, cb, s);
    case OP_DELETE:
        return viaco ? momento_coalescing_delete(co, cache, k, kl, opts, cb, s)
                     : momento_delete(c, cache, k, kl, opts, cb, s);
    case OP_DICT_GET_FIELD:
        return viaco ? momento_coalescing_dictionary_get_field(co, cache, k, kl, o->a.p, o->a.n,
                                                               opts, cb, s)
                     : momento_dictionary_get_field(c, cache, k, kl, o->a.p, o->a.n, opts, cb, s);
    case OP_DICT_FETCH:
        return viaco ? momento_coalescing_dictionary_fetch(co, cache, k, kl, opts, cb, s)
                     : momento_dictionary_fetch(c, cache, k, kl, opts, cb, s);
    case OP_LIST_FETCH:
        return viaco ? momento_coalescing_list_fetch(co, cache, k, kl, o->start, o->end, opts, cb,
                                                     s)
                     : momento_list_fetch(c, cache, k, kl, o->start, o->end, opts, cb, s);
    case OP_SET_FETCH:
        return viaco ? momento_coalescing_set_fetch(co, cache, k, kl, opts, cb, s)
                     : momento_set_fetch(c, cache, k, kl, opts, cb, s);
    case OP_ZSET_FETCH:
        return viaco ? momento_coalescing_sorted_set_fetch_by_rank(co, cache, k, kl, o->start,
                                                                   o->end, o->order, opts, cb, s)
                     : momento_sorted_set_fetch_by_rank(c, cache, k, kl, o->start, o->end,
                                                        o->order, opts, cb, s);
    case OP_DICT_SET_FIELD:
        return momento_dictionary_set_field(c, cache, k, kl, o->a.p, o->a.n, o->b.p, o->b.n, NULL,
                                            opts, cb, s);
    case OP_LIST_PUSH:
        return momento_list_push_back(c, cache, k, kl, o->a.p, o->a.n, 0, NULL, opts, cb, s);
    case OP_SET_ADD:
        return momento_set_add_element(c, cache, k, kl, o->a.p, o->a.n, NULL, opts, cb, s);
    case OP_ZSET_PUT:
        return momento_sorted_set_put_element(c, cache, k, kl, o->a.p, o->a.n, o->score, NULL,
                                              opts, cb, s);
    }
    return MOMENTO_ERR_UNKNOWN;
}

/* Runs plan `p` in configuration `ci` into `x`: set up, submit every
 * request at once, cancel, wait, free the client, count callbacks, read
 * back. */
static void run_config(ctx *t, const plan *p, int ci, run *x)
{
    const config_def *cd = &configs[ci];
    char cache[24];
    snprintf(cache, sizeof(cache), "diff-%d", ci);
    memset(x, 0, sizeof(*x));
    set_up(t, p, cache);
    momento_client *c = make_client(t, p, cd);
    momento_coalescer *co = NULL;
    if (cd->coalescer)
        assert_int_equal(momento_coalescer_new(&co, c), MOMENTO_OK);

    int64_t submitted[MAX_OPS];
    for (int i = 0; i < p->n_ops; i++) {
        const op *o = &p->ops[i];
        slot *s = &x->slots[i];
        s->unordered = o->kind == OP_DICT_FETCH || o->kind == OP_SET_FETCH;
        momento_request_options opts = MOMENTO_REQUEST_OPTIONS_INIT;
        opts.timeout_ms = o->timeout_ms;
        if (o->cancel_after || o->bad == BAD_PRECANCELLED) {
            assert_int_equal(momento_cancel_token_new(&s->token), MOMENTO_OK);
            if (o->bad == BAD_PRECANCELLED)
                momento_cancel(s->token);
            opts.cancel = s->token;
        }
        submitted[i] = tu_now_ms();
        s->rc = submit(c, co, cache, p, o, &opts, s);
    }
    /* Cancels only now, all submitted: each request on a key the server
     * holds DELAY_MS, so none can have been answered yet. */
    for (int i = 0; i < p->n_ops; i++) {
        if (!p->ops[i].cancel_after || x->slots[i].rc != MOMENTO_OK)
            continue;
        momento_cancel(x->slots[i].token);
        x->slots[i].lag_ms = tu_now_ms() - submitted[i];
    }
    /* Bounded: a missing callback is a failure, reported below. */
    tu_wait_until(all_answered(p, x), 120000);
    x->hung = !all_answered(p, x);
    momento_client_batching_stats_get(c, &x->batching, sizeof(x->batching));
    if (co) {
        momento_coalescer_stats_get(co, &x->coalescing, sizeof(x->coalescing));
        momento_coalescer_free(co);
    }
    /* It waits for every callback, so the counts after it are final: a
     * duplicate coming late is counted. */
    momento_client_free(c);
    for (int i = 0; i < p->n_ops; i++)
        momento_cancel_token_free(x->slots[i].token);
    /* Nothing of this run is left held by the server when the next starts. */
    tu_wait_until(momento_local_parked_calls(t->server) == 0, 10000);
    for (int i = 0; i < p->n_keys; i++)
        x->state[i] = read_back(t, cache, &p->keys[i]);
}

static void run_free(const plan *p, run *x)
{
    for (int i = 0; i < p->n_ops; i++)
        free(x->slots[i].desc);
    for (int i = 0; i < p->n_keys; i++)
        free(x->state[i]);
}

static void report(ctx *t, const plan *p, int ci, const char *what, int i, const char *ref,
                   const char *got)
{
    t->mismatches++;
    if (t->printed++ >= MAX_PRINTED)
        return;
    char text[600] = "", req[620] = "";
    if (i >= 0) {
        op_text(p, &p->ops[i], configs[ci].coalescer, text, sizeof(text));
        snprintf(req, sizeof(req), " request #%d %s", i, text);
    }
    fprintf(stderr,
            "MISMATCH seed %" PRIu64 " round %d config \"%s\" %s%s\n"
            "  reference (\"%s\"): %s\n"
            "  this configuration:  %s\n",
            t->seed, p->round, configs[ci].name, what, req, configs[configs[ci].reference].name,
            ref ? ref : "(none)", got ? got : "(none)");
}

/* Whether a cancel came too late to be sure of its outcome. */
static bool late_cancel(const slot *s)
{
    return s->lag_ms * 2 >= (int64_t)DELAY_MS;
}

/* The reference's outcomes that the plan makes certain: if one is not
 * what the plan says, the test is not testing what it claims. */
static void check_premises(ctx *t, const plan *p, const run *ref, int ci)
{
    for (int i = 0; i < p->n_ops; i++) {
        const op *o = &p->ops[i];
        const slot *s = &ref->slots[i];
        const dkey *k = o->key >= 0 ? &p->keys[o->key] : NULL;
        const char *want = NULL;
        if (o->bad != BAD_NONE && s->rc == MOMENTO_OK)
            want = "refused at submit";
        else if (o->bad == BAD_NONE && s->rc != MOMENTO_OK)
            want = "accepted";
        else if (o->bad != BAD_NONE)
            continue;
        else if (o->short_deadline && s->err != MOMENTO_ERR_TIMEOUT)
            want = "TIMEOUT (a short deadline on a delayed key)";
        else if (o->cancel_after && !late_cancel(s) && s->err != MOMENTO_ERR_CANCELLED)
            want = "CANCELLED (cancelled while the server held it)";
        else if (!o->short_deadline && !o->cancel_after && k->error_key &&
                 s->err == MOMENTO_OK)
            want = "an error (an error key)";
        else if (!k->error_key && o->kind == OP_GET && k->type >= K_DICT &&
                 s->err != MOMENTO_ERR_FAILED_PRECONDITION && !o->short_deadline &&
                 !o->cancel_after)
            want = "FAILED_PRECONDITION (a get of a collection)";
        if (want) {
            report(t, p, ci, "premise (the reference is not what the plan makes certain):", i,
                   want, s->rc != MOMENTO_OK ? momento_error_name(s->rc) : s->desc);
        }
    }
}

/* Every accepted request of run `x` called back exactly once, a refused
 * one never: counted after the client's free, which waits for every
 * callback, so a late duplicate is seen too. */
static void check_calls(ctx *t, const plan *p, int ci, const run *x)
{
    if (x->hung)
        report(t, p, ci, "a callback had not come 120 s after the submits:", -1, "", "");
    for (int i = 0; i < p->n_ops; i++) {
        const slot *b = &x->slots[i];
        int want = b->rc == MOMENTO_OK ? 1 : 0;
        if (calls_of(b) != want) {
            char n[64];
            snprintf(n, sizeof(n), "%d callbacks (want %d)", calls_of(b), want);
            report(t, p, ci, "callbacks:", i, "exactly one per accepted request", n);
        }
    }
}

/* Compares configuration `ci`'s run with its reference's: every request's
 * submit and outcome, every key's state. */
static void compare(ctx *t, const plan *p, int ci, const run *ref, const run *x)
{
    for (int i = 0; i < p->n_ops; i++) {
        const slot *a = &ref->slots[i], *b = &x->slots[i];
        if (a->rc != b->rc) {
            report(t, p, ci, "submit:", i, momento_error_name(a->rc), momento_error_name(b->rc));
            continue;
        }
        if (a->rc != MOMENTO_OK)
            continue;
        if (p->ops[i].cancel_after && (late_cancel(a) || late_cancel(b))) {
            fprintf(stderr,
                    "note: round %d config \"%s\" request #%d: a cancel came %" PRId64 " / %" PRId64
                    " ms after its submit (delay %u ms): its outcome is not compared\n",
                    p->round, configs[ci].name, i, a->lag_ms, b->lag_ms, DELAY_MS);
            t->skipped++;
            continue;
        }
        t->compared++;
        if (!a->desc || !b->desc || strcmp(a->desc, b->desc) != 0)
            report(t, p, ci, "outcome:", i, a->desc, b->desc);
    }
    for (int i = 0; i < p->n_keys; i++) {
        const dkey *k = &p->keys[i];
        bool unsure = k->unsure;
        /* A write whose cancel came late may have landed or not. */
        for (int j = 0; j < p->n_ops && !unsure; j++)
            unsure = p->ops[j].key == i && is_write(p->ops[j].kind) && p->ops[j].cancel_after &&
                     (late_cancel(&ref->slots[j]) || late_cancel(&x->slots[j]));
        if (unsure)
            continue;
        if (strcmp(ref->state[i], x->state[i]) != 0) {
            char what[700];
            sb b = {0};
            if (k->printable && k->name.n <= 60)
                sb_printf(&b, "\"%.*s\"", (int)k->name.n, (const char *)k->name.p);
            else
                sb_bytes(&b, "key", k->name.p, k->name.n);
            snprintf(what, sizeof(what), "state of key %s (%s, set up as %s) after the round:",
                     b.p, k->role == R_WRITE ? "written" : k->role == R_READ ? "read" : "untouched",
                     ktype_names[k->type]);
            free(b.p);
            report(t, p, ci, what, -1, ref->state[i], x->state[i]);
        }
    }
}

static int env_int(const char *name, int dflt)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return dflt;
    char *end;
    long n = strtol(v, &end, 10);
    return *end || n < 0 || n > 1000000 ? dflt : (int)n;
}

static uint64_t the_seed;

/* One group of configurations (gRPC, or protosocket) on one round's plan:
 * the reference first, then each other, compared with it. */
static void run_group(ctx *t, const plan *p, int first, int last)
{
    static run ref, x;
    run_config(t, p, first, &ref);
    check_premises(t, p, &ref, first);
    for (int i = 0; i < p->n_ops; i++) {
        const op *o = &p->ops[i];
        if (o->key >= 0 && p->keys[o->key].error_key)
            t->fault_ops++;
        if (o->key >= 0 && p->keys[o->key].delay_key)
            t->delay_ops++;
    }
    check_calls(t, p, first, &ref);
    for (int i = 0; i < p->n_ops; i++)
        if (ref.slots[i].rc == MOMENTO_OK && ref.slots[i].calls && -ref.slots[i].err < 64)
            t->outcomes[-ref.slots[i].err]++;
    for (int ci = first + 1; ci <= last; ci++) {
        run_config(t, p, ci, &x);
        check_calls(t, p, ci, &x);
        compare(t, p, ci, &ref, &x);
        t->batches[ci] += x.batching.batches;
        t->coalesced[ci] += x.coalescing.get_coalesced + x.coalescing.set_coalesced +
                            x.coalescing.delete_coalesced + x.coalescing.read_coalesced;
        run_free(p, &x);
    }
    run_free(p, &ref);
}

static void test_shared_work_never_changes_an_answer(void **state)
{
    (void)state;
    ctx t;
    memset(&t, 0, sizeof(t));
    t.seed = the_seed;
    int rounds = env_int("MOMENTO_DIFF_ROUNDS", tu_time_scale() > 1 ? 2 : DEFAULT_ROUNDS);
    int seconds = env_int("MOMENTO_DIFF_SECONDS", DEFAULT_SECONDS);
    big = malloc(MOMENTO_MAX_ITEM_BYTES + 1);
    assert_non_null(big);
    memset(big, 'x', MOMENTO_MAX_ITEM_BYTES + 1);

    momento_local_options *o = tu_options(NULL);
    assert_int_equal(momento_local_options_set_protosocket_port(o, 0), MOMENTO_OK);
    for (int i = 0; i < N_CONFIGS; i++) {
        char name[24];
        snprintf(name, sizeof(name), "diff-%d", i);
        assert_int_equal(momento_local_options_add_cache(o, name), MOMENTO_OK);
    }
    t.server = tu_server(o);
    momento_local_options_free(o);
    momento_config *cfg = tu_config();
    assert_int_equal(momento_config_set_timeout_ms(cfg, (uint32_t)TU_MS(60000)), MOMENTO_OK);
    assert_int_equal(momento_config_set_keepalive(cfg, 0, 0), MOMENTO_OK);
    t.admin = tu_client(t.server, cfg);
    momento_config_free(cfg);

    static plan p;
    int64_t start = tu_now_ms();
    int done = 0;
    for (int round = 0; round < rounds && t.mismatches == 0; round++) {
        if (tu_now_ms() - start >= (int64_t)seconds * 1000) {
            fprintf(stderr, "MOMENTO_DIFF_SECONDS (%d) reached: %d of %d rounds run\n", seconds,
                    done, rounds);
            break;
        }
        int64_t t0 = tu_now_ms();
        plan_make(&p, t.seed, round, true);
        fprintf(stderr,
                "round %d: gRPC: %d keys, %d requests, error-keys [%s]%s%s, delay-keys [%s]\n",
                round, p.n_keys, p.n_ops, p.error_keys, p.status ? " " : "",
                p.status ? p.status : "", p.delay_keys);
        run_group(&t, &p, 0, 4);
        plan_free(&p);
        int64_t t1 = tu_now_ms();
        plan_make(&p, t.seed, round, false);
        run_group(&t, &p, 5, N_CONFIGS - 1);
        fprintf(stderr,
                "round %d: protosocket: %d keys, %d requests; %" PRId64 " + %" PRId64 " ms\n",
                round, p.n_keys, p.n_ops, t1 - t0, tu_now_ms() - t1);
        plan_free(&p);
        done++;
    }
    momento_client_free(t.admin);
    momento_local_stop(t.server);
    free(big);

    fprintf(stderr,
            "seed %" PRIu64 ": %d rounds, %ld outcomes compared, %ld not (late cancels), "
            "%ld requests on error keys, %ld on delayed keys, %ld mismatches\n",
            t.seed, done, t.compared, t.skipped, t.fault_ops, t.delay_ops, t.mismatches);
    fprintf(stderr, "  the references' outcomes:");
    for (int e = 0; e < 64; e++)
        if (t.outcomes[e])
            fprintf(stderr, " %s %ld", momento_error_name(-e), t.outcomes[e]);
    fprintf(stderr, "\n");
    for (int i = 0; i < N_CONFIGS; i++)
        if (t.batches[i] || t.coalesced[i])
            fprintf(stderr, "  %s: %" PRIu64 " batches, %" PRIu64 " coalesced\n", configs[i].name,
                    t.batches[i], t.coalesced[i]);
    if (t.mismatches)
        fprintf(stderr, "reproduce: MOMENTO_DIFF_SEED=%" PRIu64 " (the failing round first "
                        "runs after the rounds before it)\n", t.seed);
    assert_int_equal(t.mismatches, 0);
    /* The premise: the shared paths were taken. */
    if (done > 0) {
        for (int i = 0; i < N_CONFIGS; i++) {
            if (configs[i].min_in_flight && !configs[i].ps)
                assert_true(t.batches[i] > 0);
            if (configs[i].coalescer)
                assert_true(t.coalesced[i] > 0);
        }
    }
}

int main(void)
{
    const char *v = getenv("MOMENTO_DIFF_SEED");
    char *end = NULL;
    if (v && *v) {
        the_seed = strtoull(v, &end, 10);
        if (*end) {
            fprintf(stderr, "MOMENTO_DIFF_SEED=%s is not a decimal number\n", v);
            return 1;
        }
    } else {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        the_seed = ((uint64_t)ts.tv_sec * 1000003u) ^ (uint64_t)ts.tv_nsec ^
                   ((uint64_t)getpid() << 20);
        the_seed %= 10000000000000ull; /* short enough to copy */
    }
    fprintf(stderr, "seed %" PRIu64 "\n", the_seed);
    fflush(stderr);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shared_work_never_changes_an_answer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
