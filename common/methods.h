/* The RPC table shared by the library and momento-local, expanded from
 * methods.def: one enum value and one momento__rpc row per RPC. */
#ifndef MOMENTO_COMMON_METHODS_H
#define MOMENTO_COMMON_METHODS_H

#include <protobuf-c/protobuf-c.h>
#include <stdbool.h>

/* Which endpoint an RPC goes to, and with which headers
 * (docs/protocol.md "Headers"). */
typedef enum momento__plane {
    MOMENTO__PLANE_DATA,    /* cache endpoint; `authorization` and `cache` */
    MOMENTO__PLANE_CONTROL, /* control endpoint; `authorization` only */
    MOMENTO__PLANE_PING,    /* cache endpoint; no headers of ours, no token */
    MOMENTO__PLANE_TOPIC,   /* cache endpoint; `authorization` only, the cache
                             * named in the request body (topics) */
    MOMENTO__PLANE_TOKEN,   /* token endpoint; the caller's key travels in the
                             * request body (`auth_token`), which is what the
                             * token service reads */
    MOMENTO__PLANE_AUTH     /* control endpoint, but like the token service
                             * the caller's key travels in the body (API keys:
                             * `auth_token`, or the key being refreshed) */
} momento__plane;

/* What a disposable token's scope must grant for an RPC on the items (or
 * the topic) it names (momento-local's server/core/tokens.c). Momento grants a
 * write that reads (a condition, a returned value) only to CacheReadWrite:
 * its CacheWriteOnly "doesn't allow conditional write APIs". */
typedef enum momento__access {
    /* No disposable token may make it: the control plane, the token service
     * (and ping, which carries no token at all). What a row that leaves
     * `.access` out gets. */
    MOMENTO__ACCESS_NONE,
    MOMENTO__ACCESS_READ,      /* a read-only or read-write grant */
    MOMENTO__ACCESS_WRITE,     /* a write-only or read-write grant */
    MOMENTO__ACCESS_READ_WRITE /* a read-write grant alone */
} momento__access;

/* One row of the table: constant, built at compile time (methods.c), read
 * by any thread of either side. */
typedef struct momento__rpc {
    const char *path;       /* "/package.Service/Method" */
    const char *name;       /* "ItemGetTtl": momento-local's stats */
    const char *fault_name; /* "item-get-ttl": fault-injection headers */
    /* A second name the official clients' tests send for it, or NULL:
     * "list-remove" for ListErase, "set-if" for SetIfNotExists (the JS
     * SDK's momento-rpc-method.ts, Python's momento_rpc_method.py). */
    const char *fault_alias;
    momento__plane plane;
    momento__access access; /* what a disposable token must grant */
    /* Safe to repeat: official clients retry only these, and only after
     * UNAVAILABLE or INTERNAL (docs/protocol.md "Retries"). */
    bool idempotent;
    bool streaming;         /* server-streaming response */
    /* ALREADY_EXISTS is an outcome (CreateCache's AlreadyExists), not an
     * error. */
    bool already_exists_is_outcome;
    const ProtobufCMessageDescriptor *request;
    const ProtobufCMessageDescriptor *response; /* one stream message's type */
    /* A MOMENTO_RPC_SERVER_ONLY row: momento-local answers it, the library
     * never makes it (no decoder; its channels do not register it). Set by
     * the macro (methods.c), not written in the row. */
    bool server_only;
} momento__rpc;

typedef enum momento__rpc_id {
#define MOMENTO_RPC(ID, fn, ...) MOMENTO__RPC_##ID,
#define MOMENTO_RPC_SERVER_ONLY(ID, fn, ...) MOMENTO__RPC_##ID,
#include "methods.def"
#undef MOMENTO_RPC
#undef MOMENTO_RPC_SERVER_ONLY
    MOMENTO__RPC_COUNT
} momento__rpc_id;

/* Indexed by momento__rpc_id. */
extern const momento__rpc momento__rpcs[MOMENTO__RPC_COUNT];

#endif
