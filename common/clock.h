/* Nanoseconds of a monotonic clock, the one form in which the library and
 * momento-local compare times (timers, deadlines, slices, waits).
 *
 * Two clocks, not mixed: the library's is gRPC's monotonic clock
 * (gpr_now(GPR_CLOCK_MONOTONIC)), because its deadlines are gpr_timespecs
 * handed to gRPC and compared with its timers; momento-local's store and
 * loop read CLOCK_MONOTONIC directly. Header-only: called on every
 * request's path. */
#ifndef MOMENTO_CLOCK_H
#define MOMENTO_CLOCK_H

#include <grpc/support/time.h>
#include <stdint.h>
#include <time.h>

/* A gpr_timespec (of any clock, or a span) in nanoseconds. */
static inline int64_t momento__gpr_ns(gpr_timespec t)
{
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* The library's now: gRPC's monotonic clock. */
static inline int64_t momento__now_ns(void)
{
    return momento__gpr_ns(gpr_now(GPR_CLOCK_MONOTONIC));
}

/* `ns` (of gRPC's monotonic clock) as the gpr_timespec gRPC takes. */
static inline gpr_timespec momento__ns_gpr(int64_t ns)
{
    gpr_timespec t = {ns / 1000000000, (int32_t)(ns % 1000000000), GPR_CLOCK_MONOTONIC};
    return t;
}

/* A struct timespec in nanoseconds. */
static inline int64_t momento__timespec_ns(struct timespec ts)
{
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* momento-local's now: CLOCK_MONOTONIC (store_now_ms()'s clock). */
static inline int64_t momento__mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return momento__timespec_ns(ts);
}

#endif
