/* A binary min-heap of pointers, ordered by a caller's "before" function:
 * the library's calls waiting to retry, momento-local's delayed calls and
 * load-gen's idle workers. Not locked: its owner serialises access.
 * An owner that must take items out of the middle (momento-local drops a
 * delayed call whose client went away) asks to be told each item's
 * position (momento__heap_track) and removes by it (momento__heap_remove). */
#ifndef MOMENTO_COMMON_HEAP_H
#define MOMENTO_COMMON_HEAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Whether `a` must leave the heap before `b`. */
typedef bool (*momento__heap_before_fn)(const void *a, const void *b);
/* realloc()'s contract; the library passes its failure-injectable one. */
typedef void *(*momento__heap_realloc_fn)(void *p, size_t n);
/* Told `item`'s position each time it enters or moves, and
 * MOMENTO__HEAP_GONE when it leaves (popped, removed). */
typedef void (*momento__heap_index_fn)(void *item, size_t index);
#define MOMENTO__HEAP_GONE SIZE_MAX

typedef struct momento__heap {
    void **items;
    size_t n, cap;
    momento__heap_before_fn before;
    momento__heap_realloc_fn grow; /* NULL: realloc() */
    momento__heap_index_fn moved;  /* NULL: positions are not tracked */
} momento__heap;

/* An empty heap; allocates nothing; positions not tracked. */
void momento__heap_init(momento__heap *h, momento__heap_before_fn before,
                        momento__heap_realloc_fn grow);
/* From now on, tells every item its position through `moved` (call it on
 * an empty heap, right after init). */
void momento__heap_track(momento__heap *h, momento__heap_index_fn moved);
/* Makes room for `cap` items, so that pushes up to it cannot fail.
 * Returns 0, or -1 when out of memory (the heap is unchanged). */
int momento__heap_reserve(momento__heap *h, size_t cap);
/* Returns 0, or -1 when out of memory (the heap is unchanged). */
int momento__heap_push(momento__heap *h, void *item);
/* The first item, or NULL when empty. */
void *momento__heap_peek(const momento__heap *h);
/* Removes and returns the first item, or NULL when empty. */
void *momento__heap_pop(momento__heap *h);
/* Removes and returns the item at `index` (the position `moved` last told
 * it), or NULL when there is none there. O(log n). */
void *momento__heap_remove(momento__heap *h, size_t index);
/* Frees the array (not the items); the heap is left empty and usable. */
void momento__heap_clear(momento__heap *h);

#endif
