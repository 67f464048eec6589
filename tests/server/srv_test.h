/* Helpers momento-local's tests share (tests/server/ only; tests/common
 * holds those of every suite). */
#ifndef MOMENTO_SRV_TEST_H
#define MOMENTO_SRV_TEST_H

#include "momento/local.h"

#include <stdint.h>

/* One xorshift64 step of `*state`, which must not be 0: the data-structure
 * tests' random numbers, a fixed sequence from each test's own seed, so that
 * a failure replays. Inline, as those tests link no test library. */
static inline uint64_t srv_xorshift(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *state = x;
}

/* New server options, asserting success, with cache `cache` (NULL: none).
 * The caller sets more on them, then starts a server with srv_start(). */
momento_local_options *srv_options(const char *cache);
/* A server (tu_server()) started with `o`, which it frees. */
momento_local *srv_start(momento_local_options *o);

#endif
