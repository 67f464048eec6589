/* The absolute time pthread_cond_timedwait() takes, `ms` from now. A
 * header of its own, without cmocka, so that interop/crosscheck.c (no
 * test binary, no testutil) shares it with testutil.c. */
#ifndef MOMENTO_TU_DEADLINE_H
#define MOMENTO_TU_DEADLINE_H

#include <time.h>

/* CLOCK_REALTIME (a condition variable's default clock) plus `ms`. */
static inline struct timespec tu_deadline_ms(int ms)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += ms / 1000;
    until.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    return until;
}

#endif
