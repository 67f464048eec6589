/* What a reply may carry besides its messages: an *attachment*, an object
 * that goes on answering after the handler returns, which the call loop
 * (calls.c) turns into a server stream. Subscribe's subscription
 * (topics.c) is the one kind today. The reply (reply.c) only holds it and
 * frees it if nobody takes it; the stream drives it through its ops and
 * knows no more of what it is. This header is below both, so that neither
 * the reply nor the loop depends on topics.
 *
 * Thread rules: every op runs on the server thread that holds the turn
 * (srv_turns.h). */
#ifndef MOMENTO_LOCAL_SRV_ATTACH_H
#define MOMENTO_LOCAL_SRV_ATTACH_H

#include <grpc/grpc.h>
#include <stdbool.h>

/* What runs when an attachment has news: a message ready, or its end. It
 * runs inside the attachment's own code (a publish, a tick, an end), on
 * the thread that holds the turn. It may take messages, end the
 * attachment (whose own wake is then the callback's to ignore) and, should
 * its stream be broken, free it: an attachment touches itself no more
 * after a wake. */
typedef void srv_wake_fn(void *arg);

typedef struct srv_attachment_ops {
    /* Whom to tell of news: `wake(arg)` from now on, until it is freed or
     * set again (NULL: nobody). */
    void (*set_wake)(void *obj, srv_wake_fn *wake, void *arg);
    /* The next message to send, a reference handed to the caller; false
     * when none is ready. *more: another one is ready after it. */
    bool (*next)(void *obj, grpc_slice *ret_msg, bool *more);
    /* Whether it has ended; then *status and *details (owned by the
     * attachment, valid until it is freed) say how the stream ends. */
    bool (*ended)(const void *obj, grpc_status_code *status, const char **details);
    /* Ends it with `status` (a second end is ignored) and wakes. */
    void (*end)(void *obj, grpc_status_code status, const char *details);
    /* Frees it, ended or not. */
    void (*free)(void *obj);
} srv_attachment_ops;

/* An attachment by value: `ops` NULL for none. Whoever holds it (a reply,
 * then the stream that takes it) owns `obj` and frees it with
 * ops->free. */
typedef struct srv_attachment {
    const srv_attachment_ops *ops;
    void *obj;
} srv_attachment;

#endif
