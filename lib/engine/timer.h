/* The client's timers (timer.c; completion.c fires them): things its completion thread does at a
 * given time - a call's next attempt (a retry), a coalesced waiter's or a
 * queued request's deadline, a batch's linger, a subscription's resubscribe
 * or idle check - or at once, from another thread (a cancel, the client's
 * free). One structure for every wait of that thread. */
#ifndef MOMENTO_TIMER_H
#define MOMENTO_TIMER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct momento_client;

/* Embedded in its owner. */
typedef struct momento__timer {
    int64_t due_ns;                         /* monotonic */
    size_t index;                           /* in the heap; MOMENTO__HEAP_GONE when not armed */
    void (*fire)(struct momento__timer *t); /* on the completion thread, no lock held */
    bool soon;                              /* on the list of timers due at once */
    struct momento__timer *prev, *next;     /* ...that list */
} momento__timer;

/* Timers, run by the completion thread. Arm (or re-arm) `t` to fire at
 * `due_ns`, from any thread; returns 0 or MOMENTO_ERR_NO_MEMORY. `wake`:
 * the completion thread may be asleep past `due_ns` and must be woken if
 * this is now the first timer; false when something else is sure to wake
 * it by then (a call whose own deadline is no later), which saves a
 * wake-up per request. Disarming an unarmed timer does nothing; a timer that has fired is unarmed. A fire
 * may run just after a disarm made by another thread than the completion
 * thread: owners disarm under their own lock and check their state in fire. */
void momento__timer_init(momento__timer *t, void (*fire)(momento__timer *t));
int momento__timer_arm(struct momento_client *c, momento__timer *t, int64_t due_ns, bool wake);
/* Makes `t` fire as soon as the completion thread can, armed or not, from
 * any thread; unlike arming it needs no memory and cannot fail (a cancel). */
void momento__timer_fire_soon(struct momento_client *c, momento__timer *t);
/* The same with the client's lock held (client.c's cancels and free),
 * without the wake-up: the caller kicks the completion thread
 * (momento__completion_kick) once it has let the lock go. */
void momento__timer_fire_soon_locked(struct momento_client *c, momento__timer *t);
void momento__timer_disarm(struct momento_client *c, momento__timer *t);
/* Before the memory holding `t` is freed: on another thread than the
 * completion thread, waits until a fire of `t` already under way has
 * returned (its owner's state told it there was nothing to do). Call with
 * no lock held that the fire takes, once `t` is disarmed: a fire taken
 * before the disarm may still be about to take the owner's lock. Costs one
 * atomic load when no such fire runs, the usual case. */
void momento__timer_settle(struct momento_client *c, momento__timer *t);

/* The client's heap of timers, made and given back with the client. */
void momento__timers_init(struct momento_client *c);
void momento__timers_clear(struct momento_client *c);

#ifdef MOMENTO__TSAN
#include <stdatomic.h>
/* Race-check builds only: microseconds each fire waits before it runs
 * (completion.c, which fires). */
extern atomic_int momento__tsan_fire_delay_us;
#endif

#endif
