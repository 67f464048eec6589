#include "heap.h"

#include <stdlib.h>

void momento__heap_init(momento__heap *h, momento__heap_before_fn before,
                        momento__heap_realloc_fn grow)
{
    h->items = NULL;
    h->n = h->cap = 0;
    h->before = before;
    h->grow = grow ? grow : realloc;
}

int momento__heap_reserve(momento__heap *h, size_t cap)
{
    if (cap <= h->cap)
        return 0;
    void **grown = h->grow(h->items, cap * sizeof(*grown));
    if (!grown)
        return -1;
    h->items = grown;
    h->cap = cap;
    return 0;
}

static void swap(void **items, size_t a, size_t b)
{
    void *t = items[a];
    items[a] = items[b];
    items[b] = t;
}

int momento__heap_push(momento__heap *h, void *item)
{
    if (h->n == h->cap && momento__heap_reserve(h, h->cap ? h->cap * 2 : 16) < 0)
        return -1;
    size_t i = h->n++;
    h->items[i] = item;
    while (i > 0 && h->before(h->items[i], h->items[(i - 1) / 2])) {
        swap(h->items, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
    return 0;
}

void *momento__heap_peek(const momento__heap *h)
{
    return h->n ? h->items[0] : NULL;
}

void *momento__heap_pop(momento__heap *h)
{
    if (h->n == 0)
        return NULL;
    void **items = h->items;
    void *top = items[0];
    items[0] = items[--h->n];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < h->n && h->before(items[l], items[m]))
            m = l;
        if (r < h->n && h->before(items[r], items[m]))
            m = r;
        if (m == i)
            break;
        swap(items, i, m);
        i = m;
    }
    return top;
}

void momento__heap_clear(momento__heap *h)
{
    free(h->items);
    h->items = NULL;
    h->n = h->cap = 0;
}
