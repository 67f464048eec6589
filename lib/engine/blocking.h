/* Blocking calls as an async call plus a wait (blocking.c), the way
 * libcurl's easy interface is its multi interface run to completion:
 *
 *     momento__blocking b;
 *     MOMENTO__CHECK(momento__blocking_begin(&b, c, ret));
 *     return momento__blocking_wait(&b, momento_get(c, ..., momento__blocking_done, &b), ret);
 *
 * The caller always gets a result to free: the request's, or - when it was
 * refused before it was sent - an error result whose message says why
 * (momento_refusal_reason()). `*ret` stays NULL only when momento__blocking_begin
 * fails (a NULL client, a call from the client's own callback, no memory). */
#ifndef MOMENTO_BLOCKING_H
#define MOMENTO_BLOCKING_H

#include "momento/momento.h"

#include <pthread.h>
#include <stdbool.h>

typedef struct momento__blocking {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool done;
    int error;
    momento_result *result;
    momento_result *spare; /* handed out if the result cannot be copied */
    momento_client *owner; /* whose connections the wait works, when it must */
} momento__blocking;

/* Prepares `b` for one request of client `owner`, and sets *ret (when not
 * NULL) to NULL. Returns 0; MOMENTO_ERR_INVALID_ARGUMENT when `owner` is
 * NULL; MOMENTO_ERR_WOULD_DEADLOCK on the owner's own completion thread;
 * MOMENTO_ERR_NO_MEMORY. On error `b` needs no cleanup. */
int momento__blocking_begin(momento__blocking *b, const momento_client *owner,
                            momento_result **ret);
/* The callback to submit with `b` as userdata: copies the result out. */
void momento__blocking_done(const momento_result *r, void *b);
/* Given what the submitting call returned: waits for the callback when it
 * was accepted, hands over the result, and releases `b`. Returns the
 * request's error, or `submitted` when it was refused. */
int momento__blocking_wait(momento__blocking *b, int submitted, momento_result **ret);
/* Releases `b` when its call was answered without a request (a near-cache
 * answer on the calling thread): nothing was submitted, nothing waited. */
void momento__blocking_end(momento__blocking *b);
/* Whether a request called back with `cb` must not share an RPC whose
 * answer is delivered late (call.h `late`: a batch, a coalesced read): a
 * blocking call on a dispatch-mode client, whose waiting thread may be the
 * dispatching one. */
bool momento__blocking_goes_alone(const momento_client *c, momento_callback cb);

/* The whole body of a blocking function whose client is `c` and whose
 * result pointer is `ret`: `call` is its async call, with MOMENTO__SYNC_CB in
 * place of the callback and its userdata. */
#define MOMENTO__SYNC_CB momento__blocking_done, &b_
#define MOMENTO__SYNC(call)                                                                        \
    do {                                                                                           \
        momento__blocking b_;                                                                      \
        MOMENTO__CHECK(momento__blocking_begin(&b_, c, ret));                                      \
        return momento__blocking_wait(&b_, (call), ret);                                           \
    } while (0)

#endif
