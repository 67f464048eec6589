/* The client's timers (timer.h): arming, disarming and firing at once, on
 * one heap by due time and one list of timers due now, both under the
 * client's lock. The completion thread (completion.c) takes them off and
 * fires them; this file only keeps the structure and wakes that thread
 * when a change means it must look sooner than it would. */
#include "engine/timer.h"

#include "base/alloc.h"
#include "engine/client.h"
#include "engine/completion.h"

#include <sched.h>
#include <string.h>
#include <utlist.h>

static bool due_before(const void *a, const void *b)
{
    return ((const momento__timer *)a)->due_ns < ((const momento__timer *)b)->due_ns;
}

static void timer_moved(void *item, size_t index)
{
    ((momento__timer *)item)->index = index;
}

void momento__timers_init(momento_client *c)
{
    momento__heap_init(&c->timers, due_before, momento__realloc);
    momento__heap_track(&c->timers, timer_moved);
    atomic_init(&c->any_timer, false);
}

void momento__timers_clear(momento_client *c)
{
    momento__heap_clear(&c->timers);
}

void momento__timer_init(momento__timer *t, void (*fire)(momento__timer *t))
{
    memset(t, 0, sizeof(*t));
    t->index = MOMENTO__HEAP_GONE;
    t->fire = fire;
}

/* With the lock held: off the heap and the soon list. */
static void timer_unlink(momento_client *c, momento__timer *t)
{
    if (t->index != MOMENTO__HEAP_GONE)
        momento__heap_remove(&c->timers, t->index);
    if (t->soon) {
        DL_DELETE(c->soon, t);
        t->soon = false;
    }
    momento__completion_timers_changed_locked(c);
}

void momento__timer_fire_soon_locked(momento_client *c, momento__timer *t)
{
    timer_unlink(c, t);
    DL_APPEND(c->soon, t);
    t->soon = true;
    atomic_store_explicit(&c->any_timer, true, memory_order_release);
}

void momento__timer_fire_soon(momento_client *c, momento__timer *t)
{
    pthread_mutex_lock(&c->lock);
    momento__timer_fire_soon_locked(c, t);
    pthread_mutex_unlock(&c->lock);
    if (momento__current_client != c)
        momento__completion_kick(c);
}

int momento__timer_arm(momento_client *c, momento__timer *t, int64_t due_ns, bool wake)
{
    pthread_mutex_lock(&c->lock);
    timer_unlink(c, t);
    t->due_ns = due_ns;
    int rc = momento__heap_push(&c->timers, t) == 0 ? MOMENTO_OK : MOMENTO_ERR_NO_MEMORY;
    bool first = rc == MOMENTO_OK && t->index == 0;
    if (rc == MOMENTO_OK) /* timer_unlink() looked already, before the push */
        atomic_store_explicit(&c->any_timer, true, memory_order_release);
    pthread_mutex_unlock(&c->lock);
    if (wake && first && momento__current_client != c)
        momento__completion_kick(c); /* the loop may be asleep until later than this */
    return rc;
}

void momento__timer_disarm(momento_client *c, momento__timer *t)
{
    pthread_mutex_lock(&c->lock);
    timer_unlink(c, t);
    pthread_mutex_unlock(&c->lock);
}

void momento__timer_settle(momento_client *c, momento__timer *t)
{
    if (momento__current_client == c)
        return; /* the completion thread: no other fire runs */
    /* The fire only finds its owner's state done and returns: short. */
    while (atomic_load_explicit(&c->firing, memory_order_acquire) == t)
        sched_yield();
}
