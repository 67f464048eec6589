/* What the operation files (op_*.c, one per RPC family) share. */
#ifndef MOMENTO_OP_H
#define MOMENTO_OP_H

#include "codec/compress.h"
#include "engine/blocking.h"
#include "engine/call.h"
#include "engine/client.h"
#include "engine/respond.h"
#include "layers/kv_send.h"
#include "model/metrics.h"
#include "model/validate.h"
#include "ops/decode.h"

#include <protobuf-c/protobuf-c.h>

/* An operation the library answers once after RPCs of its own (a delete
 * batch's deletes, a cache listing's pages): whom to answer, and the
 * options all its RPCs share (one deadline, one cancel token). To the
 * application it is one request: momento__compound_begin() counts it (its
 * RPCs are not counted or reported: no_metrics), momento__compound_answer()
 * reports and answers it, and momento__compound_refused() takes it back
 * when not one of its RPCs could start (no callback then). Embedded in the
 * operation's own state. */
typedef struct momento__compound {
    momento_client *client;
    momento_callback cb;
    void *userdata;
    momento__call_opts opts;
} momento__compound;

static inline void momento__compound_begin(momento__compound *op, momento_client *c,
                                           const momento_request_options *opts,
                                           momento_callback cb, void *userdata)
{
    op->client = c;
    op->cb = cb;
    op->userdata = userdata;
    momento__call_opts_from(c, opts, &op->opts);
    op->opts.no_metrics = true;
    momento__request_accepted(c, op->opts.group);
}

static inline void momento__compound_refused(momento__compound *op)
{
    momento__request_done(op->client, op->opts.group);
}

/* One metrics report, under RPC `rpc`'s name, and the one callback. */
static inline void momento__compound_answer(momento__compound *op, momento__rpc_id rpc,
                                            const momento_result *out)
{
    if (momento__metrics_on(&op->client->cfg))
        momento__metrics_shared(&op->client->cfg, momento__rpcs[rpc].name, NULL,
                                op->opts.submitted_ns, 0, out);
    momento__respond(op->client, op->opts.group, op->cb, out, op->userdata, false);
}

/* Most reads answer in a oneof of found (with a message) or missing, and
 * every decoder of one reads it by the same rule, written once here:
 * missing is a MISS and the decoding is done (MOMENTO_OK); found with its
 * message is MOMENTO__FOUND, for the decoder to read `found`; anything else
 * (an unset oneof, found without its message) is MOMENTO_ERR_BAD_RESPONSE.
 * `which` is the reply's oneof case, `found_case` and `missing_case` the
 * two it may be. */
#define MOMENTO__FOUND 1

static inline int momento__found_or_miss(momento_result *r, int which, int found_case,
                                         int missing_case, const void *found)
{
    if (which == missing_case) {
        r->outcome = MOMENTO_OUTCOME_MISS;
        return MOMENTO_OK;
    }
    return which == found_case && found ? MOMENTO__FOUND : MOMENTO_ERR_BAD_RESPONSE;
}

/* The opening of a decoder's body for such a reply, the one message of RPC
 * ID: MOMENTO__UNPACK_ONE, then momento__found_or_miss() on the oneof case
 * member `which`, whose cases are PREFIX##_FOUND and PREFIX##_MISSING and
 * whose found message is `found`. The decoder returns there on a miss or a
 * bad reply, and goes on with `m->found` to read. */
#define MOMENTO__UNPACK_FOUND(Type, ID, which, PREFIX)                                             \
    MOMENTO__UNPACK_ONE(Type, ID);                                                                 \
    int found_rc_ =                                                                                \
        momento__found_or_miss(r, m->which, PREFIX##_FOUND, PREFIX##_MISSING, m->found);           \
    if (found_rc_ != MOMENTO__FOUND)                                                               \
        return found_rc_

/* Defines the decoder of an RPC whose reply is one number (an increment's
 * new value, a list's length after a push, a leaderboard's length, ...):
 * outcome SUCCESS, the reply's `field` as the result's `dst` (int_value,
 * which momento_result_int() reads, or score). The decoder table names one
 * decoder per RPC; these are all this one body. */
#define MOMENTO__NUMBER_DECODER(fn, ID, Type, dst, field)                                          \
    MOMENTO__DECODER(fn)                                                                           \
    {                                                                                              \
        MOMENTO__UNPACK_ONE(Type, ID);                                                             \
        r->dst = m->field;                                                                         \
        r->outcome = MOMENTO_OUTCOME_SUCCESS;                                                      \
        return MOMENTO_OK;                                                                         \
    }

/* The same for a read whose reply is found, carrying one number, or
 * missing (MOMENTO__UNPACK_FOUND): found is `found_outcome` with the found
 * message's `field` as the result's `dst`, missing is a MISS. */
#define MOMENTO__FOUND_NUMBER_DECODER(fn, ID, Type, which, PREFIX, found_outcome, dst, field)      \
    MOMENTO__DECODER(fn)                                                                           \
    {                                                                                              \
        MOMENTO__UNPACK_FOUND(Type, ID, which, PREFIX);                                            \
        r->outcome = (found_outcome);                                                              \
        r->dst = m->found->field;                                                                  \
        return MOMENTO_OK;                                                                         \
    }

#endif
