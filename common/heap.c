#include "heap.h"

#include <stdlib.h>

void momento__heap_init(momento__heap *h, momento__heap_before_fn before,
                        momento__heap_realloc_fn grow)
{
    h->items = NULL;
    h->n = h->cap = 0;
    h->before = before;
    h->grow = grow ? grow : realloc;
    h->moved = NULL;
}

void momento__heap_track(momento__heap *h, momento__heap_index_fn moved)
{
    h->moved = moved;
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

/* Puts `item` at `i` and tells it so. */
static void place(momento__heap *h, size_t i, void *item)
{
    h->items[i] = item;
    if (h->moved)
        h->moved(item, i);
}

/* Moves the item at `i` towards the root while it must leave before its
 * parent; returns where it ended. */
static size_t sift_up(momento__heap *h, size_t i)
{
    void *item = h->items[i];
    while (i > 0 && h->before(item, h->items[(i - 1) / 2])) {
        place(h, i, h->items[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    place(h, i, item);
    return i;
}

/* Moves the item at `i` towards the leaves while a child must leave
 * before it. */
static void sift_down(momento__heap *h, size_t i)
{
    void **items = h->items;
    void *item = items[i];
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        const void *first = item;
        if (l < h->n && h->before(items[l], first)) {
            m = l;
            first = items[l];
        }
        if (r < h->n && h->before(items[r], first))
            m = r;
        if (m == i)
            break;
        place(h, i, items[m]);
        i = m;
    }
    place(h, i, item);
}

int momento__heap_push(momento__heap *h, void *item)
{
    if (h->n == h->cap && momento__heap_reserve(h, h->cap ? h->cap * 2 : 16) < 0)
        return -1;
    h->items[h->n++] = item;
    sift_up(h, h->n - 1);
    return 0;
}

void *momento__heap_peek(const momento__heap *h)
{
    return h->n ? h->items[0] : NULL;
}

void *momento__heap_remove(momento__heap *h, size_t index)
{
    if (index >= h->n)
        return NULL;
    void *gone = h->items[index];
    void *last = h->items[--h->n];
    if (index < h->n) {
        /* The last item fills the hole, then moves up or down to where it
         * belongs. */
        h->items[index] = last;
        if (sift_up(h, index) == index)
            sift_down(h, index);
    }
    if (h->moved)
        h->moved(gone, MOMENTO__HEAP_GONE);
    return gone;
}

void *momento__heap_pop(momento__heap *h)
{
    return momento__heap_remove(h, 0);
}

void momento__heap_clear(momento__heap *h)
{
    free(h->items);
    h->items = NULL;
    h->n = h->cap = 0;
}
