/* A request answered without an RPC (answer.c): accepted into the client
 * like any request and called back as any is - on the completion thread, or
 * queued in dispatch mode - never inside the call that made it. The near
 * cache's answers (layers/near.c) go this way. */
#ifndef MOMENTO_ANSWER_H
#define MOMENTO_ANSWER_H

#include "momento/momento.h"

#include <stddef.h>
#include <stdint.h>

/* Accepts a request of `method` (the RPC's name, for the metrics hook)
 * already answered with `outcome` and `value` (copied; NULL for none),
 * counted in `group` (NULL: none) and reported to the metrics hook with
 * `metrics_flags`; `submitted_ns` is momento__now_ns() at its submission.
 * Returns 0 - then `cb` follows exactly once, HIT or MISS as given (or, if
 * the client is freed first, still that answer) - or MOMENTO_ERR_NO_MEMORY,
 * MOMENTO_ERR_CLOSED (the client is being freed): no callback. Any thread. */
int momento__answer_soon(momento_client *c, momento_request_group *group, const char *method,
                         const char *cache, int64_t submitted_ns, uint32_t metrics_flags,
                         momento_outcome outcome, const void *value, size_t value_len,
                         momento_callback cb, void *userdata);

#endif
