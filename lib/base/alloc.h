/* Every allocation the library makes goes through these, so that the
 * allocation-failure tests can fail any one of them (alloc.c). */
#ifndef MOMENTO_ALLOC_H
#define MOMENTO_ALLOC_H

#include <stdatomic.h>
#include <stddef.h>

/* -1: off. N >= 0: the allocation N allocations from now fails (then -1).
 * For tests only. */
extern atomic_int momento__alloc_countdown;

void *momento__malloc(size_t n);
void *momento__calloc(size_t count, size_t size);
void *momento__realloc(void *p, size_t n);

#endif
