/* Every allocation of the library, so that the allocation-failure tests can
 * walk each path allocation by allocation: a countdown, off by default,
 * makes the N-th allocation fail. The check is one relaxed atomic load when
 * off. (gRPC's and protobuf-c's own allocations are outside its reach.) */
#include "base/alloc.h"

#include <stdbool.h>
#include <stdlib.h>

atomic_int momento__alloc_countdown = -1;

static bool fail_now(void)
{
    if (atomic_load_explicit(&momento__alloc_countdown, memory_order_relaxed) < 0)
        return false;
    return atomic_fetch_sub(&momento__alloc_countdown, 1) == 0;
}

void *momento__malloc(size_t n)
{
    return fail_now() ? NULL : malloc(n);
}

void *momento__calloc(size_t count, size_t size)
{
    return fail_now() ? NULL : calloc(count, size);
}

void *momento__realloc(void *p, size_t n)
{
    return fail_now() ? NULL : realloc(p, n);
}
