/* The random numbers of momento-local's data-structure tests (zset, clist),
 * which link no test library: hence a header alone. */
#ifndef MOMENTO_SRV_RNG_H
#define MOMENTO_SRV_RNG_H

#include <stdint.h>

/* One xorshift64 step of `*state`, which must not be 0: the data-structure
 * tests' random numbers, a fixed sequence from each test's own seed, so that
 * a failure replays. */
static inline uint64_t srv_xorshift(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *state = x;
}

#endif
