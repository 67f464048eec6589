/* The sorted set structure (server/data/zset.c) against a naive model, a sorted
 * array, over random operations with a fixed seed: every query (find, rank,
 * element at a rank, count below a score, the neighbour links, the cost
 * accounting) must agree with the model after every write. Values are
 * drawn from a small alphabet that includes NUL and prefixes of each
 * other, and scores from a small set with infinities and repeats, so that
 * ties, prefix order and updates happen often. */
#include "data/zset.h"
#include "srv_rng.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct model_elem {
    double score;
    size_t len;
    uint8_t v[4];
} model_elem;

enum { MAX_ELEMS = 400 };

typedef struct model {
    model_elem e[MAX_ELEMS];
    size_t n;
} model;

static uint64_t rng = 0x1234567u;

static uint64_t next_rand(void)
{
    return srv_xorshift(&rng);
}

static int cmp_elem(const void *a, const void *b)
{
    const model_elem *x = a, *y = b;
    return zset_compare(x->score, x->v, x->len, y->score, y->v, y->len);
}

/* The reference order, written without zset_compare so that a wrong
 * comparison in zset.c cannot hide: score, then bytes, shorter first. */
static int ref_less(const model_elem *x, const model_elem *y)
{
    if (x->score != y->score)
        return x->score < y->score;
    size_t n = x->len < y->len ? x->len : y->len;
    for (size_t i = 0; i < n; i++)
        if (x->v[i] != y->v[i])
            return x->v[i] < y->v[i];
    return x->len < y->len;
}

static void random_value(model_elem *e)
{
    static const uint8_t alphabet[] = {0, 'a', 'b', 0xff};
    e->len = next_rand() % 4;
    for (size_t i = 0; i < e->len; i++)
        e->v[i] = alphabet[next_rand() % sizeof(alphabet)];
}

static double random_score(void)
{
    static const double scores[] = {-INFINITY, -2.5, -1, 0, 0.5, 1, 42, INFINITY};
    if (next_rand() % 4 == 0)
        return (double)(int)(next_rand() % 200) - 100;
    return scores[next_rand() % (sizeof(scores) / sizeof(scores[0]))];
}

static long model_find(const model *m, const model_elem *e)
{
    for (size_t i = 0; i < m->n; i++)
        if (m->e[i].len == e->len && memcmp(m->e[i].v, e->v, e->len) == 0)
            return (long)i;
    return -1;
}

static void check_against_model(const zset *z, const model *m)
{
    assert_int_equal(z->len, m->n);
    uint64_t payload = 0, bytes = 0;
    const zset_node *prev = NULL;
    for (size_t r = 0; r < m->n; r++) {
        const model_elem *e = &m->e[r];
        if (r > 0)
            assert_true(ref_less(&m->e[r - 1], e));
        zset_node *n = zset_at(z, r);
        assert_non_null(n);
        assert_true(n->score == e->score);
        assert_int_equal(n->len, e->len);
        if (e->len)
            assert_memory_equal(zset_value(n), e->v, e->len);
        assert_ptr_equal(zset_find(z, e->v, e->len), n);
        assert_int_equal(zset_rank(z, n), r);
        assert_ptr_equal(zset_prev(n), prev);
        if (prev)
            assert_ptr_equal(zset_next(prev), n);
        prev = n;
        payload += e->len;
        bytes += zset_node_cost(n);
    }
    assert_ptr_equal(z->tail, prev);
    if (prev)
        assert_null(zset_next(prev));
    assert_int_equal(z->payload, payload);
    assert_int_equal(z->bytes, bytes);
}

static void check_count_below(const zset *z, const model *m)
{
    double s = random_score();
    size_t below = 0, at_most = 0;
    for (size_t i = 0; i < m->n; i++) {
        below += m->e[i].score < s;
        at_most += m->e[i].score <= s;
    }
    assert_int_equal(zset_count_below(z, s, false), below);
    assert_int_equal(zset_count_below(z, s, true), at_most);
}

static void put(zset *z, model *m, const model_elem *e)
{
    assert_int_equal(zset_reserve(z, 1), 0);
    zset_node *n = zset_find(z, e->v, e->len);
    if (n)
        zset_rescore(z, n, e->score);
    else
        zset_insert(z, zset_node_new(z, e->v, e->len, e->score));
    long i = model_find(m, e);
    if (i >= 0) {
        m->e[i].score = e->score;
    } else {
        assert_true(m->n < MAX_ELEMS);
        m->e[m->n++] = *e;
    }
    qsort(m->e, m->n, sizeof(m->e[0]), cmp_elem);
}

static void remove_one(zset *z, model *m, const model_elem *e)
{
    zset_node *n = zset_find(z, e->v, e->len);
    long i = model_find(m, e);
    assert_int_equal(n != NULL, i >= 0);
    if (!n)
        return;
    zset_remove(z, n);
    memmove(&m->e[i], &m->e[i + 1], (m->n - (size_t)i - 1) * sizeof(m->e[0]));
    m->n--;
}

static void test_random_operations_match_model(void **state)
{
    (void)state;
    static model m;
    zset z;
    assert_int_equal(zset_init(&z), 0);
    for (int op = 0; op < 20000; op++) {
        model_elem e;
        random_value(&e);
        e.score = random_score();
        /* Phases that grow and then drain the set, so that both the table's
         * growth and its shrinking and the skiplist's height changes run. */
        int grow = (op / 2000) % 2 == 0;
        if (next_rand() % 10 < (grow ? 7u : 3u))
            put(&z, &m, &e);
        else
            remove_one(&z, &m, &e);
        check_against_model(&z, &m);
        check_count_below(&z, &m);
    }
    zset_destroy(&z);
}

/* Many distinct values: enough elements for tall towers and long spans. */
static void test_large_set_ranks(void **state)
{
    (void)state;
    enum { N = 5000 };
    zset z;
    assert_int_equal(zset_init(&z), 0);
    assert_int_equal(zset_reserve(&z, N), 0);
    for (uint32_t i = 0; i < N; i++) {
        uint32_t k = (i * 7919u) % N; /* a permutation */
        uint8_t v[4] = {(uint8_t)(k >> 24), (uint8_t)(k >> 16), (uint8_t)(k >> 8), (uint8_t)k};
        /* Scores in pairs, so that every other rank is decided by the value. */
        zset_insert(&z, zset_node_new(&z, v, 4, (double)(k / 2)));
    }
    assert_int_equal(z.len, N);
    for (uint32_t r = 0; r < N; r += 37) {
        zset_node *n = zset_at(&z, r);
        const uint8_t *v = zset_value(n);
        uint32_t k = (uint32_t)v[0] << 24 | (uint32_t)v[1] << 16 | (uint32_t)v[2] << 8 | v[3];
        assert_int_equal(k, r);
        assert_int_equal(zset_rank(&z, n), r);
        assert_int_equal(zset_count_below(&z, (double)(r / 2), false), r / 2 * 2);
        assert_int_equal(zset_count_below(&z, (double)(r / 2), true), r / 2 * 2 + 2);
    }
    /* Moving the lowest to the top by rescoring. */
    zset_node *first = zset_at(&z, 0);
    zset_rescore(&z, first, 1e9);
    assert_ptr_equal(zset_at(&z, N - 1), first);
    assert_ptr_equal(z.tail, first);
    assert_int_equal(zset_rank(&z, first), N - 1);
    zset_destroy(&z);
}

static void test_empty_value_and_order(void **state)
{
    (void)state;
    zset z;
    assert_int_equal(zset_init(&z), 0);
    assert_int_equal(zset_reserve(&z, 3), 0);
    zset_insert(&z, zset_node_new(&z, (const uint8_t *)"ab", 2, 1));
    zset_insert(&z, zset_node_new(&z, (const uint8_t *)"a", 1, 1));
    zset_insert(&z, zset_node_new(&z, NULL, 0, 1));
    /* Equal scores: "" < "a" < "ab". */
    assert_int_equal(zset_at(&z, 0)->len, 0);
    assert_int_equal(zset_at(&z, 1)->len, 1);
    assert_int_equal(zset_at(&z, 2)->len, 2);
    assert_non_null(zset_find(&z, NULL, 0));
    assert_null(zset_find(&z, (const uint8_t *)"b", 1));
    zset_destroy(&z);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_operations_match_model),
        cmocka_unit_test(test_large_set_ranks),
        cmocka_unit_test(test_empty_value_and_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
