/* The gRPC call layer (calls.c): the server's threads' loop over the
 * completion queue, from a call's arrival and its checks to its answer
 * (a unary reply, or a stream), handing each call that passes them to the
 * dispatcher server.c gives it (s->dispatch), so that the loop knows no
 * handler. The protosocket port (srv_protosocket.h) shares its rate limit
 * and its held-back calls through the two functions at the end. */
#ifndef MOMENTO_LOCAL_SRV_CALLS_H
#define MOMENTO_LOCAL_SRV_CALLS_H

#include "core/srv_server.h"

#include <stdbool.h>

/* After grpc_server_start(): requests every method's calls ahead of
 * arrival and starts the server's first thread, which hands each call
 * that passes its checks to `dispatch`. Returns 0, or -1 when the thread
 * could not be started; then the calls are cancelled and freed, and the
 * server and queue are left for the caller to destroy. */
int srv_calls_start(momento_local *s, srv_dispatch_fn *dispatch);
/* Shuts the server down, fails calls still delayed with UNAVAILABLE (counted
 * so, whether the stop's cancel or the UNAVAILABLE reply ends them) and
 * returns once the server thread has drained the queue. */
void srv_calls_stop(momento_local *s);
/* With the turn, from the protosocket port's thread: whether one more
 * operation would pass --max-rps in this second (and counts it), as for a
 * call; and answers again the calls held back behind pins that a command's
 * work has just released (srv_work_end() returned true). */
bool srv_calls_rate_limited(momento_local *s);
void srv_calls_redo(momento_local *s);

#endif
