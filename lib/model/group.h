/* Request groups (group.c): a count of the application's own requests,
 * for momento_request_group_wait(). The client counts a request in its
 * group exactly where it counts it in its own n_requests
 * (momento__request_accepted / _done, engine/client.c), so the two agree;
 * each request counted holds a reference, so the application may free
 * its group with requests still in flight.
 *
 * Lock order: a group's lock is taken alone (the client never holds one
 * of its own while it takes it). */
#ifndef MOMENTO_GROUP_H
#define MOMENTO_GROUP_H

#include "momento/momento.h"

#include <pthread.h>
#include <stdatomic.h>

struct momento_request_group {
    /* The client it counts for: only compared (validate.c) and handed to
     * the wait (client.c), never read after the client is freed. */
    momento_client *client;
    atomic_size_t refs;       /* the application's one, plus one per request counted */
    atomic_size_t n;          /* requests accepted whose callback has not returned */
    pthread_mutex_t lock;     /* `zero` is broadcast under it when `n` drops to 0 */
    pthread_cond_t zero;
};

/* A request of the group was accepted: counted, and holding a reference,
 * until momento__group_done(). NULL-safe. Any thread. */
void momento__group_add(momento_request_group *g);
/* Its callback has returned (or it was refused after all): the count and
 * the reference go back; the last reference frees the group. NULL-safe. */
void momento__group_done(momento_request_group *g);

#endif
