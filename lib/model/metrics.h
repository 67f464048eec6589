/* The metrics hook (metrics.c; momento/metrics.h): builds a request's
 * record and calls the application's hook. Each place that calls a
 * request's callback back calls one of these first: call.c for a request
 * with an RPC of its own, coalescer.c and batcher.c for their waiters and
 * members, op_control.c for a paged listing. Requests whose callback is
 * one of those internal ones are marked `no_metrics` (call.h), so each
 * accepted request is reported once. Where the config has a metrics_lock
 * (config.h: dispatch mode, whose hook calls come from two threads), each
 * call holds it. */
#ifndef MOMENTO_METRICS_INTERNAL_H
#define MOMENTO_METRICS_INTERNAL_H

#include "methods.h"
#include "model/config.h"
#include "momento/metrics.h"

#include <grpc/slice.h>
#include <stdbool.h>
#include <stdint.h>

/* Whether `cfg` has a hook: the one branch a request pays when it has none. */
static inline bool momento__metrics_on(const momento_config *cfg)
{
    return __builtin_expect(cfg->metrics_fn != NULL, 0);
}

/* Whether this thread is inside a hook call of `cfg` that holds its
 * metrics_lock: a blocking call of its client made there would wait for
 * the completion thread, which may be waiting for that lock to report the
 * very answer (blocking.c refuses it). */
bool momento__metrics_hook_running(const momento_config *cfg);

/* A request that had an RPC of its own: `cache` is its `cache` header's
 * value (empty for other planes), `request` the packed request, `msgs` the
 * reply's messages. `submitted_ns`: momento__now_ns() at submission. */
void momento__metrics_rpc(const momento_config *cfg, momento__rpc_id m, grpc_slice cache,
                          int64_t submitted_ns, grpc_slice request, const grpc_slice *msgs,
                          size_t n_msgs, const momento_result *r);

/* A request answered without an RPC of its own (a coalescer's waiter, a
 * batcher's member, a paged listing): no byte counts. `cache` may be NULL. */
void momento__metrics_shared(const momento_config *cfg, const char *method, const char *cache,
                             int64_t submitted_ns, uint32_t flags, const momento_result *r);

#endif
