/* A request answered without an RPC (answer.h). Its answer waits on a
 * client timer fired at once: the completion thread calls it back (or
 * queues it for dispatch), as every other request's, so a callback never
 * runs inside the call that made its request, and the client's free finds
 * it tracked like any other (it waits for the timer, already queued: the
 * answer is delivered, it is already known).
 *
 * Most answers are made on the completion thread itself - a callback asking
 * again, a busy client's closed loop - and those of one turn of its loop
 * share one timer: each costs no timer of its own to queue and take off
 * (two of the client's lock sections of the six an answer took). */
#include "engine/answer.h"

#include "base/alloc.h"
#include "engine/client.h"
#include "engine/completion.h"
#include "engine/respond.h"
#include "engine/timer.h"
#include "model/metrics.h"
#include "model/result.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

typedef struct answer {
    momento__tracked track;
    momento__timer timer; /* a batch's first answer's fires the batch */
    struct answer *next;  /* the batch's next answer */
    momento_client *c;
    momento_request_group *group;
    const char *method;
    char *cache; /* in value's allocation, after the value */
    int64_t submitted_ns;
    uint32_t flags;
    momento_outcome outcome;
    momento_callback cb;
    void *userdata;
    size_t value_len;
    uint8_t value[]; /* then the cache name */
} answer;

static void no_cancel(void *call, const char *why)
{
    (void)call;
    (void)why;
}

/* The completion thread's open batch: the answers made on it since the
 * batch's timer was queued, in order. Only that thread touches it, so it
 * needs no lock; `c` names the client whose completion thread this is. */
static _Thread_local struct {
    momento_client *c;
    answer *head, *tail;
} batch;

/* The callback, then the request is over. */
static void deliver(momento_client *c, answer *a)
{
    momento_result r;
    memset(&r, 0, sizeof(r));
    r.error = MOMENTO_OK;
    r.grpc_status = -1;
    r.outcome = a->outcome;
    r.message = "";
    if (a->outcome == MOMENTO_OUTCOME_HIT) {
        r.value = a->value;
        r.value_len = a->value_len;
    }
    if (momento__metrics_on(&c->cfg))
        momento__metrics_shared(&c->cfg, a->method, a->cache, a->submitted_ns, a->flags, &r);
    momento__respond(c, a->group, a->cb, &r, a->userdata, false);
    momento__client_retire(c, &a->track);
}

/* Completion thread: a batch's answers (or one made on another thread),
 * in the order they were made. */
static void fire(momento__timer *t)
{
    answer *a = (answer *)((char *)t - offsetof(answer, timer));
    momento_client *c = a->c;
    /* Closed before any callback runs: answers those callbacks make start
     * the next batch, behind a timer of its own that fires after this one
     * has returned, never inside the callback that made them. */
    if (batch.head == a)
        batch.c = NULL, batch.head = batch.tail = NULL;
    answer *rest = a->next;
    deliver(c, a);
    for (answer *next; rest; rest = next) {
        next = rest->next;
        deliver(c, rest);
        free(rest);
    }
    momento__timer_settle(c, &a->timer);
    free(a);
}

int momento__answer_soon(momento_client *c, momento_request_group *group, const char *method,
                         const char *cache, int64_t submitted_ns, uint32_t metrics_flags,
                         momento_outcome outcome, const void *value, size_t value_len,
                         momento_callback cb, void *userdata)
{
    size_t cache_len = cache ? strlen(cache) + 1 : 0;
    answer *a = momento__malloc(sizeof(*a) + value_len + cache_len);
    if (!a)
        return MOMENTO_ERR_NO_MEMORY;
    *a = (answer){.c = c, .method = method, .submitted_ns = submitted_ns, .flags = metrics_flags,
                  .outcome = outcome, .cb = cb, .userdata = userdata, .value_len = value_len};
    if (value_len)
        memcpy(a->value, value, value_len);
    if (cache) {
        a->cache = (char *)a->value + value_len;
        memcpy(a->cache, cache, cache_len);
    }
    momento__timer_init(&a->timer, fire);
    a->track.cancel = no_cancel;
    /* No wake: a cancel or the client's free would only move its timer,
     * already queued, and the answer stays what it is. Without one, its
     * fire has no wake to take back under the client's lock. */
    a->track.wake = NULL;
    int rc = momento__client_accept(c, &a->track, NULL);
    if (rc != MOMENTO_OK) {
        free(a);
        return rc;
    }
    /* Not an RPC: it must not count towards batching's threshold. */
    momento__client_answered(c, &a->track);
    a->group = group; /* referenced while counted (model/group.h) */
    momento__request_accepted(c, group);
    if (momento__current_client == c) {
        /* The completion thread: its loop runs its timers again before it
         * sleeps, so an open batch's timer is on its way. */
        if (batch.c == c && batch.head) {
            batch.tail->next = a;
            batch.tail = a;
            return MOMENTO_OK;
        }
        batch.c = c;
        batch.head = batch.tail = a;
    }
    momento__timer_fire_soon(c, &a->timer);
    return MOMENTO_OK;
}
