/* A request answered without an RPC (answer.h). Its answer waits on a
 * client timer fired at once: the completion thread calls it back (or
 * queues it for dispatch), as every other request's, so a callback never
 * runs inside the call that made its request, and the client's free finds
 * it tracked like any other (its sweep fires the timer: the answer is
 * delivered, it is already known). */
#include "engine/answer.h"

#include "base/alloc.h"
#include "engine/client.h"
#include "engine/respond.h"
#include "engine/timer.h"
#include "model/metrics.h"
#include "model/result.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

typedef struct answer {
    momento__tracked track;
    momento__timer timer;
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

/* Completion thread: the callback, then the request is over. */
static void fire(momento__timer *t)
{
    answer *a = (answer *)((char *)t - offsetof(answer, timer));
    momento_client *c = a->c;
    /* Nothing fires it again: a cancel or a free after this finds no wake. */
    momento__timer_disarm(c, momento__client_unwake(c, &a->track));
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
    a->track.wake = &a->timer;
    int rc = momento__client_accept(c, &a->track, NULL);
    if (rc != MOMENTO_OK) {
        free(a);
        return rc;
    }
    /* Not an RPC: it must not count towards batching's threshold. */
    momento__client_answered(c, &a->track);
    a->group = group; /* referenced while counted (model/group.h) */
    momento__request_accepted(c, group);
    momento__timer_fire_soon(c, &a->timer);
    return MOMENTO_OK;
}
