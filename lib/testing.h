/* The library's test hooks: what the tests (tests/, bench/) reach inside
 * libmomento, and nothing else, so that a test includes this instead of
 * the whole of client.h. Each declaration is the same prototype as the
 * module's own header, where it is defined; none is for applications. */
#ifndef MOMENTO_TESTING_H
#define MOMENTO_TESTING_H

#include "methods.h"
#include "momento/momento.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

/* client.c: adds a header sent with every later call of `c` (the fault
 * injection headers of momento-local: delay-ms, fail-rpcs, ...). Not
 * locked: call it before the client is used. Returns 0 or an error. */
int momento__client_add_header(momento_client *c, const char *key, const char *value);

/* client.c: sends the attempts of RPC `m` of `c` through transport `t`
 * (transport/transport.h), which must outlive the client and complete
 * them on a thread of its own through t->post, which this sets. Call it
 * before `c` makes a call of `m`. Returns 0, or MOMENTO_ERR_INVALID_ARGUMENT. */
struct momento__transport;
int momento__client_route(momento_client *c, momento__rpc_id m, struct momento__transport *t);
/* client.c: makes `t` the client's to shut down and close when it is
 * freed, after its last request (engine/client.h). Returns 0, or
 * MOMENTO_ERR_INVALID_ARGUMENT (then `t` is still the caller's). */
int momento__client_adopt(momento_client *c, struct momento__transport *t);

/* client.c: whether momento_client_free() of `c` has begun. */
bool momento__client_closing(momento_client *c);

/* client.c: callbacks of `c` queued for momento_client_dispatch() (or
 * being run by it) now. */
size_t momento__dispatch_queued(momento_client *c);

/* batcher.c: requests of `c` queued for a batch now. */
size_t momento__batcher_queued(momento_client *c);

/* alloc.c: -1, off; N >= 0, the allocation N allocations from now fails
 * (then -1). */
extern atomic_int momento__alloc_countdown;

#endif
