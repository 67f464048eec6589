/* The list's ring buffer (server/data/coll_list.c) against a naive model, a
 * plain array, over random operations with a fixed seed: pushes and pops at
 * both ends, drops, removal by value and by mark, with the ring growing,
 * wrapping around and shrinking; contents, length and cost accounting must
 * agree after every step. */
#include "data/coll_list.h"
#include "srv_rng.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

enum { MAX_ELEMS = 600 };

typedef struct model {
    uint8_t v[MAX_ELEMS]; /* each element is one byte long, or empty (0xff) */
    size_t n;
} model;

static uint64_t rng = 0xabcdefu;

static uint64_t next_rand(void)
{
    return srv_xorshift(&rng);
}

/* Model byte 0xff stands for the empty element, the others for themselves. */
static size_t elem_len(uint8_t b)
{
    return b == 0xff ? 0 : 1;
}

static clist_elem *make(uint8_t b)
{
    clist_elem *e = clist_elem_new(&b, elem_len(b));
    assert_non_null(e);
    return e;
}

static void check(const clist *l, const model *m)
{
    assert_int_equal(l->len, m->n);
    assert_true(l->len <= l->cap);
    uint64_t payload = 0, bytes = 0;
    for (size_t i = 0; i < m->n; i++) {
        const clist_elem *e = clist_at(l, i);
        assert_int_equal(e->len, elem_len(m->v[i]));
        if (e->len)
            assert_int_equal(e->data[0], m->v[i]);
        payload += e->len;
        bytes += clist_elem_cost(e->len);
    }
    assert_int_equal(l->payload, payload);
    assert_int_equal(l->bytes, bytes);
    /* A ring far bigger than its list was given back. */
    if (l->cap > 8)
        assert_true(l->len * 4 > l->cap || l->len == 0);
}

static void check_popped(clist_elem *e, uint8_t want)
{
    assert_non_null(e);
    assert_int_equal(e->len, elem_len(want));
    if (e->len)
        assert_int_equal(e->data[0], want);
    clist_elem_free(e);
}

static void one_step(clist *l, model *m, int grow)
{
    uint8_t b = (uint8_t)(next_rand() % 5 == 0 ? 0xff : 'a' + next_rand() % 4);
    unsigned op = (unsigned)(next_rand() % 100);
    unsigned push = grow ? 60 : 35;
    if (op < push && m->n < MAX_ELEMS) {
        assert_int_equal(clist_reserve(l, 1), 0);
        if (op % 2) {
            clist_push_front(l, make(b));
            memmove(m->v + 1, m->v, m->n);
            m->v[0] = b;
        } else {
            clist_push_back(l, make(b));
            m->v[m->n] = b;
        }
        m->n++;
    } else if (op < push + 15) {
        if (m->n == 0) {
            assert_null(clist_pop_front(l));
            return;
        }
        if (op % 2) {
            check_popped(clist_pop_front(l), m->v[0]);
            memmove(m->v, m->v + 1, m->n - 1);
        } else {
            check_popped(clist_pop_back(l), m->v[m->n - 1]);
        }
        m->n--;
    } else if (op < push + 25) {
        size_t k = next_rand() % 6;
        if (k > m->n)
            k = m->n;
        if (op % 2) {
            uint64_t sum = 0;
            for (size_t i = 0; i < k; i++)
                sum += clist_elem_cost(elem_len(m->v[i]));
            assert_int_equal(clist_cost_front(l, k), sum);
            clist_drop_front(l, k);
            memmove(m->v, m->v + k, m->n - k);
        } else {
            uint64_t sum = 0;
            for (size_t i = 0; i < k; i++)
                sum += clist_elem_cost(elem_len(m->v[m->n - 1 - i]));
            assert_int_equal(clist_cost_back(l, k), sum);
            clist_drop_back(l, k);
        }
        m->n -= k;
    } else if (op < push + 30) {
        size_t kept = 0, gone = 0;
        for (size_t i = 0; i < m->n; i++) {
            if (m->v[i] == b)
                gone++;
            else
                m->v[kept++] = m->v[i];
        }
        assert_int_equal(clist_remove_value(l, &b, elem_len(b)), gone);
        m->n = kept;
    } else if (op < push + 33) {
        uint8_t marks[MAX_ELEMS];
        size_t kept = 0;
        for (size_t i = 0; i < m->n; i++) {
            marks[i] = next_rand() % 3 == 0;
            if (!marks[i])
                m->v[kept++] = m->v[i];
        }
        clist_remove_marked(l, marks);
        m->n = kept;
    } else {
        /* Several at once, as a concatenation does after one reserve. */
        size_t k = next_rand() % 8;
        if (m->n + k > MAX_ELEMS)
            return;
        size_t cap_before = l->cap;
        assert_int_equal(clist_reserve(l, k), 0);
        if (cap_before >= l->len + k)
            assert_int_equal(l->cap, cap_before); /* no growth when there was room */
        for (size_t i = 0; i < k; i++) {
            clist_push_back(l, make(b));
            m->v[m->n++] = b;
        }
    }
}

static void test_random_operations_match_model(void **state)
{
    (void)state;
    static model m;
    clist l;
    clist_init(&l);
    for (int i = 0; i < 40000; i++) {
        /* Alternate growing and draining phases: the ring doubles, wraps
         * and halves many times. */
        one_step(&l, &m, (i / 3000) % 2 == 0);
        check(&l, &m);
    }
    clist_destroy(&l);
    assert_int_equal(l.len, 0);
    assert_null(l.ring);
}

static void test_costs_and_empty_elements(void **state)
{
    (void)state;
    /* Costs grow with the length and are never below the smallest chunk. */
    assert_true(clist_elem_cost(0) >= 32);
    assert_true(clist_elem_cost(1000) > clist_elem_cost(10));
    clist l;
    clist_init(&l);
    assert_int_equal(clist_reserve(&l, 2), 0);
    /* Dropping nothing keeps the room reserved. */
    clist_drop_front(&l, 0);
    clist_drop_back(&l, 0);
    assert_int_equal(clist_remove_value(&l, (const uint8_t *)"q", 1), 0);
    assert_true(l.cap >= 2);
    clist_push_back(&l, clist_elem_new(NULL, 0));
    clist_push_front(&l, clist_elem_new((const uint8_t *)"x", 1));
    assert_int_equal(clist_remove_value(&l, NULL, 0), 1);
    assert_int_equal(l.len, 1);
    assert_int_equal(l.payload, 1);
    clist_destroy(&l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_operations_match_model),
        cmocka_unit_test(test_costs_and_empty_elements),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
