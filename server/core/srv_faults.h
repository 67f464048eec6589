/* Fault injection (faults.c): what the request headers of Momento's local
 * test server ask of one call (docs/protocol.md "Fault injection"). */
#ifndef MOMENTO_LOCAL_SRV_FAULTS_H
#define MOMENTO_LOCAL_SRV_FAULTS_H

#include "methods.h"

#include <grpc/grpc.h>
#include <stdbool.h>
#include <stdint.h>

/* The calls of one `request-id` so far: a hash table, NULL when empty. */
typedef struct fault_session fault_session;

typedef struct fault_plan {
    int error_status;       /* gRPC status to return, or -1 */
    uint32_t delay_ms;      /* 0 = none */
    const char *bad_header; /* a fault header the server could not use */
    /* A subscription stream to end with this gRPC status (-1: none) once
     * it has sent stream_error_after messages (`stream-error`). */
    int stream_error_status;
    uint32_t stream_error_after;
} fault_plan;

/* Whether `md` asks for any fault (an error, a delay or a stream error),
 * well-formed or not: calls.c checks who is asking only then. */
bool faults_requested(const grpc_metadata_array *md);

/* Decides what faults apply to one call of `rpc` (named in the headers by
 * its fault_name or its fault_alias) with request metadata `md`, counting
 * against the call's request-id session. */
void faults_plan(fault_session **sessions, const grpc_metadata_array *md, const momento__rpc *rpc,
                 fault_plan *out);
/* The same for a Subscribe stream, the only kind of call the stream-error
 * headers apply to. */
void faults_plan_subscription(fault_session **sessions, const grpc_metadata_array *md,
                              const momento__rpc *rpc, fault_plan *out);
void faults_clear(fault_session **sessions);

#endif
