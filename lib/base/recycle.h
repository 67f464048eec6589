/* A bounded free list of equal-sized blocks, for objects that one thread
 * allocates and another frees (the dispatch queue's entries: made on the
 * completion thread, freed on the application's). glibc's malloc gives
 * each thread an arena: a chunk freed by another thread goes back to its
 * own arena under that arena's lock, so a steady flow from one thread to
 * the other has both of them sleeping on it. Handing the blocks back
 * through a list the owner already guards with its own lock costs no
 * more locking than the owner does anyway.
 *
 * Not thread-safe by itself: the owner's lock guards every call but
 * momento__recycler_drain(). At most `max` blocks are held, so an idle
 * owner keeps at most max * block bytes. */
#ifndef MOMENTO_RECYCLE_H
#define MOMENTO_RECYCLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>

typedef struct momento__recycler {
    void *head;     /* held blocks, linked through their first word */
    size_t n;       /* held now */
    size_t max;     /* held at most */
    size_t block;   /* bytes of every block */
} momento__recycler;

static inline void momento__recycler_init(momento__recycler *r, size_t block, size_t max)
{
    r->head = NULL;
    r->n = 0;
    r->max = max;
    r->block = block < sizeof(void *) ? sizeof(void *) : block;
}

/* A held block (r->block bytes), or NULL when none is held. */
static inline void *momento__recycler_take(momento__recycler *r)
{
    void *b = r->head;
    if (b) {
        r->head = *(void **)b;
        r->n--;
    }
    return b;
}

/* Keeps block `b` (one of r->block bytes from malloc()); false when the
 * list is full: then the caller frees it. */
static inline bool momento__recycler_give(momento__recycler *r, void *b)
{
    if (r->n >= r->max)
        return false;
    *(void **)b = r->head;
    r->head = b;
    r->n++;
    return true;
}

/* Frees every held block. */
static inline void momento__recycler_drain(momento__recycler *r)
{
    for (void *b; (b = momento__recycler_take(r));)
        free(b);
}

#endif
