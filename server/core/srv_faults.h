/* Fault injection (faults.c): what the request headers of Momento's local
 * test server ask of one call (docs/protocol.md "Fault injection"). */
#ifndef MOMENTO_LOCAL_SRV_FAULTS_H
#define MOMENTO_LOCAL_SRV_FAULTS_H

#include "methods.h"

#include <grpc/grpc.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The calls of one `request-id` so far: a hash table, NULL when empty. */
typedef struct fault_session fault_session;

/* Given each key a request names; returns true to stop at it. */
typedef bool srv_key_fn(const uint8_t *key, size_t len, void *ctx);
/* Gives `each` every key that the request `body` of RPC `m` names (a
 * batch's items' keys, a data request's key or a collection's name), until
 * it returns true; returns whether it did. The RPC layer's reader
 * (rpc/rpc_batch.c, srv_request_keys()): the core knows it only as this,
 * which server.c sets in momento_local.request_keys, as it hands the core
 * the dispatcher. */
typedef bool srv_keys_fn(momento__rpc_id m, const uint8_t *body, size_t len, srv_key_fn *each,
                         void *ctx);

/* What `error-keys` and `delay-keys` are matched against: the request of
 * one call, read only when one of them is sent. */
typedef struct fault_request {
    srv_keys_fn *keys; /* NULL: the request names no key */
    momento__rpc_id m;
    const uint8_t *body;
    size_t len;
} fault_request;

/* The most keys `error-keys` or `delay-keys` may list, and their longest
 * value: a client's header values are limited (libmomento's to 1024
 * bytes, momento_config_add_header()). */
#define FAULT_KEYS_MAX 64
#define FAULT_KEYS_MAX_BYTES 1024

typedef struct fault_plan {
    int error_status;       /* gRPC status to return, or -1 */
    uint32_t delay_ms;      /* 0 = none */
    const char *bad_header; /* a fault header the server could not use */
    /* A subscription stream to end with this gRPC status (-1: none) once
     * it has sent stream_error_after messages (`stream-error`). */
    int stream_error_status;
    uint32_t stream_error_after;
    /* A subscription stream's first items to drop unseen, as a lost
     * message would be (`stream-drop-items`): no discontinuity is sent
     * for them, the next item's number shows the gap. */
    uint32_t stream_drop_items;
    uint32_t stream_drop_after; /* ...once this many items went out (`stream-drop-after`) */
} fault_plan;

/* Whether `md` asks for any fault (an error, a delay, a stream error or
 * dropped items),
 * well-formed or not: calls.c checks who is asking only then. */
bool faults_requested(const grpc_metadata_array *md);

/* Decides what faults apply to one call of `rpc` (named in the headers by
 * its fault_name or its fault_alias) with request metadata `md`, counting
 * against the call's request-id session. `req` (NULL: none) is its request,
 * whose keys `error-keys` and `delay-keys` are matched against; a call
 * naming no key matches neither. */
void faults_plan_request(fault_session **sessions, const grpc_metadata_array *md,
                         const momento__rpc *rpc, const fault_request *req, fault_plan *out);
/* The same for a call whose request names no key. */
void faults_plan(fault_session **sessions, const grpc_metadata_array *md, const momento__rpc *rpc,
                 fault_plan *out);
/* The same for a Subscribe stream, the only kind of call the stream-error
 * headers apply to. */
void faults_plan_subscription(fault_session **sessions, const grpc_metadata_array *md,
                              const momento__rpc *rpc, fault_plan *out);
void faults_clear(fault_session **sessions);

#endif
