/* The list's ring buffer (coll_list.h). */
#include "data/coll_list.h"

#include "data/srv_yield.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* The smallest ring allocated: small lists do not reallocate on every
 * push. */
#define MIN_CAP 8u

void clist_init(clist *l)
{
    memset(l, 0, sizeof(*l));
}

static size_t slot(const clist *l, size_t i)
{
    return (l->head + i) & (l->cap - 1);
}

void clist_destroy(clist *l)
{
    for (size_t i = 0; i < l->len; i++)
        free(l->ring[slot(l, i)]);
    free(l->ring);
    clist_init(l);
}

clist_elem *clist_elem_new(const uint8_t *p, size_t len)
{
    if (len > SIZE_MAX - sizeof(clist_elem))
        return NULL;
    clist_elem *e = malloc(sizeof(*e) + len);
    if (!e)
        return NULL;
    e->len = len;
    if (len)
        memcpy(e->data, p, len);
    return e;
}

void clist_elem_free(clist_elem *e)
{
    free(e);
}

uint64_t clist_elem_cost(size_t len)
{
    /* glibc's chunk: the request plus an 8-byte header, rounded up to 16,
     * at least 32. */
    uint64_t chunk = ((uint64_t)sizeof(clist_elem) + len + 8 + 15) & ~(uint64_t)15;
    if (chunk < 32)
        chunk = 32;
    return chunk + 2 * sizeof(clist_elem *);
}

uint64_t clist_elem_wire(size_t len)
{
    uint64_t n = 2; /* the tag, and the length's first byte */
    for (uint64_t v = len; v >= 0x80; v >>= 7)
        n++;
    return n + len;
}

/* Moves the elements, in order, to a new ring of `cap` slots (a power of
 * two, at least len; 0 only for an empty list). */
static int resize_ring(clist *l, size_t cap)
{
    clist_elem **ring = NULL;
    if (cap) {
        ring = malloc(cap * sizeof(*ring));
        if (!ring)
            return -1;
        for (size_t i = 0; i < l->len; i++) {
            ring[i] = l->ring[slot(l, i)];
            srv_yield();
        }
    }
    free(l->ring);
    l->ring = ring;
    l->cap = cap;
    l->head = 0;
    return 0;
}

int clist_reserve(clist *l, size_t more)
{
    if (more > SIZE_MAX / 4 - l->len)
        return -1;
    size_t need = l->len + more;
    if (need <= l->cap)
        return 0;
    size_t cap = l->cap ? l->cap : MIN_CAP;
    while (cap < need)
        cap *= 2;
    if (cap > SIZE_MAX / sizeof(clist_elem *))
        return -1;
    return resize_ring(l, cap);
}

/* After a removal: a ring three quarters empty is halved (or more) so that
 * a list that grew and shrank does not keep its peak. A failed
 * reallocation keeps the larger ring, which still works. */
static void shrink(clist *l)
{
    if (l->len == 0) {
        resize_ring(l, 0);
        return;
    }
    if (l->cap <= MIN_CAP || l->len * 4 > l->cap)
        return;
    size_t cap = MIN_CAP;
    while (cap < l->len * 2)
        cap *= 2;
    resize_ring(l, cap);
}

static void count_in(clist *l, const clist_elem *e)
{
    l->len++;
    l->payload += e->len;
    l->bytes += clist_elem_cost(e->len);
    l->wire += clist_elem_wire(e->len);
}

static void count_out(clist *l, const clist_elem *e)
{
    l->len--;
    l->payload -= e->len;
    l->bytes -= clist_elem_cost(e->len);
    l->wire -= clist_elem_wire(e->len);
}

void clist_push_front(clist *l, clist_elem *e)
{
    l->head = (l->head - 1) & (l->cap - 1);
    l->ring[l->head] = e;
    count_in(l, e);
}

void clist_push_back(clist *l, clist_elem *e)
{
    l->ring[slot(l, l->len)] = e;
    count_in(l, e);
}

/* Takes the first element out without shrinking the ring. */
static clist_elem *take_front(clist *l)
{
    clist_elem *e = l->ring[l->head];
    l->head = (l->head + 1) & (l->cap - 1);
    count_out(l, e);
    return e;
}

static clist_elem *take_back(clist *l)
{
    clist_elem *e = l->ring[slot(l, l->len - 1)];
    count_out(l, e);
    return e;
}

clist_elem *clist_pop_front(clist *l)
{
    if (l->len == 0)
        return NULL;
    clist_elem *e = take_front(l);
    shrink(l);
    return e;
}

clist_elem *clist_pop_back(clist *l)
{
    if (l->len == 0)
        return NULL;
    clist_elem *e = take_back(l);
    shrink(l);
    return e;
}

const clist_elem *clist_at(const clist *l, size_t i)
{
    return l->ring[slot(l, i)];
}

void clist_drop_front(clist *l, size_t n)
{
    if (n == 0)
        return;
    for (size_t i = 0; i < n && l->len; i++) {
        free(take_front(l));
        srv_yield();
    }
    shrink(l);
}

void clist_drop_back(clist *l, size_t n)
{
    if (n == 0)
        return;
    for (size_t i = 0; i < n && l->len; i++) {
        free(take_back(l));
        srv_yield();
    }
    shrink(l);
}

uint64_t clist_cost_front(const clist *l, size_t n)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < n && i < l->len; i++) {
        sum += clist_elem_cost(clist_at(l, i)->len);
        srv_yield();
    }
    return sum;
}

uint64_t clist_cost_back(const clist *l, size_t n)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < n && i < l->len; i++) {
        sum += clist_elem_cost(clist_at(l, l->len - 1 - i)->len);
        srv_yield();
    }
    return sum;
}

uint64_t clist_wire_front(const clist *l, size_t n)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < n && i < l->len; i++) {
        sum += clist_elem_wire(clist_at(l, i)->len);
        srv_yield();
    }
    return sum;
}

uint64_t clist_wire_back(const clist *l, size_t n)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < n && i < l->len; i++) {
        sum += clist_elem_wire(clist_at(l, l->len - 1 - i)->len);
        srv_yield();
    }
    return sum;
}

/* Keeps the elements for which `drop` says false, in order, compacting
 * them to the front of the ring's logical order; frees the others. */
static size_t filter(clist *l, bool (*drop)(const clist_elem *e, size_t i, const void *arg),
                     const void *arg)
{
    size_t kept = 0, n = l->len, gone = 0;
    for (size_t i = 0; i < n; i++) {
        clist_elem *e = l->ring[slot(l, i)];
        if (drop(e, i, arg)) {
            l->payload -= e->len;
            l->bytes -= clist_elem_cost(e->len);
            l->wire -= clist_elem_wire(e->len);
            free(e);
            gone++;
        } else {
            l->ring[slot(l, kept++)] = e;
        }
        srv_yield();
    }
    l->len = kept;
    if (gone)
        shrink(l);
    return gone;
}

typedef struct value_arg {
    const uint8_t *p;
    size_t len;
} value_arg;

static bool equal_value(const clist_elem *e, size_t i, const void *arg)
{
    (void)i;
    const value_arg *v = arg;
    return e->len == v->len && (v->len == 0 || memcmp(e->data, v->p, v->len) == 0);
}

size_t clist_remove_value(clist *l, const uint8_t *p, size_t len)
{
    value_arg v = {p, len};
    return filter(l, equal_value, &v);
}

static bool marked(const clist_elem *e, size_t i, const void *arg)
{
    (void)e;
    return ((const uint8_t *)arg)[i] != 0;
}

void clist_remove_marked(clist *l, const uint8_t *marks)
{
    filter(l, marked, marks);
}
