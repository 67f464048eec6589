/* The error a failed reply maps to, past its bare status (errors.c). */
#ifndef MOMENTO_ERRORS_H
#define MOMENTO_ERRORS_H

#include "momento/momento.h"

/*
 * The momento_error of a reply that ended with `grpc_status` (non-OK),
 * refined as official SDKs refine it: NOT_FOUND whose `err` trailer names an
 * item or store (or, without a trailer, whose message names a store) is
 * MOMENTO_ERR_NOT_FOUND; RESOURCE_EXHAUSTED without a trailer whose message
 * is gRPC's own message-size refusal is
 * MOMENTO_ERR_CLIENT_RESOURCE_EXHAUSTED. `err_cause` and `message` may be
 * NULL. A status the library set itself for a reason of its own (out of
 * memory for a response) is mapped by the caller, not here.
 */
int momento__error_from_reply(int grpc_status, const char *err_cause, const char *message);

/* The limit a RESOURCE_EXHAUSTED reply names: by its `err` trailer when it
 * has one, else by its message's words; MOMENTO_LIMIT_UNKNOWN when neither
 * says. Either may be NULL. */
momento_limit_kind momento__limit_kind(const char *err_cause, const char *message);

#endif
