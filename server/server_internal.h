/* Shared by the local server's modules. */
#ifndef MOMENTO_LOCAL_INTERNAL_H
#define MOMENTO_LOCAL_INTERNAL_H

#include "momento/local.h"
#include "store.h"

#include <grpc/grpc.h>
#include <protobuf-c/protobuf-c.h>
#include <pthread.h>
#include <stdatomic.h>

typedef enum srv_method {
    SRV_GET,
    SRV_SET,
    SRV_DELETE,
    SRV_SET_IF,
    SRV_SET_IF_NOT_EXISTS,
    SRV_INCREMENT,
    SRV_KEYS_EXIST,
    SRV_ITEM_GET_TTL,
    SRV_UPDATE_TTL,
    SRV_GET_BATCH,
    SRV_SET_BATCH,
    SRV_PING,
    SRV_CREATE_CACHE,
    SRV_DELETE_CACHE,
    SRV_LIST_CACHES,
    SRV_FLUSH_CACHE,
    SRV_UNKNOWN, /* any other path: UNIMPLEMENTED */
    SRV_METHOD_COUNT
} srv_method;

typedef struct srv_method_info {
    const char *path;
    const char *name;       /* in stats */
    const char *fault_name; /* in error-rpcs / delay-rpcs */
    bool data;              /* needs the `cache` header */
    bool streaming;         /* server-streaming response */
} srv_method_info;

extern const srv_method_info srv_methods[SRV_METHOD_COUNT];

#define GRPC_STATUS_COUNT 17

/* What a handler decided: a status, and for OK the packed response
 * message(s). */
typedef struct srv_reply {
    grpc_status_code status;
    char details[192];
    const char *err;     /* `err` trailer, static, or NULL */
    size_t n_msgs;
    grpc_slice *msgs;    /* malloc'd array of packed messages */
} srv_reply;

void srv_reply_error(srv_reply *r, grpc_status_code status, const char *err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Appends a packed copy of `m`; returns 0 or -1 (no memory, reply set). */
int srv_reply_add(srv_reply *r, const ProtobufCMessage *m);
void srv_reply_clear(srv_reply *r);

struct momento_local_options {
    char *bind;
    int port;
    char *auth_token;
    uint64_t max_memory;
    uint64_t max_item_bytes;
    uint32_t max_rps;
    uint32_t list_page_size; /* ListCaches entries per page; 0 = one page */
    char *tls_cert;
    char *tls_key;
    char **caches;
    size_t n_caches;
};

int momento__local_options_copy(momento_local_options *dst, const momento_local_options *src);
void momento__local_options_clear(momento_local_options *o);

typedef struct fault_session fault_session;

typedef struct fault_plan {
    int error_status;  /* gRPC status to return, or -1 */
    uint32_t delay_ms; /* 0 = none */
    const char *bad_header; /* a fault header the server could not use */
} fault_plan;

/* Decides what faults apply to one call of `rpc` with request metadata
 * `md`, counting against the call's request-id session. */
void faults_plan(fault_session **sessions, const grpc_metadata_array *md, const char *rpc,
                 fault_plan *out);
void faults_clear(fault_session **sessions);

typedef struct srv_call srv_call;

struct momento_local {
    momento_local_options opts;
    grpc_server *server;
    grpc_completion_queue *cq;
    void *registered[SRV_METHOD_COUNT];
    pthread_t thread;
    atomic_bool stopping;
    int port;
    char endpoint[80];

    /* Server-thread state. */
    store store;
    fault_session *sessions;
    srv_call **timers;         /* binary min-heap by due time */
    size_t n_timers, cap_timers;
    uint64_t timer_seq;
    int64_t rate_window_ms;
    uint32_t rate_count;
    int64_t next_sweep_ms;
    bool shut_down;            /* the shutdown tag arrived */

    atomic_uint_fast64_t stats[SRV_METHOD_COUNT][GRPC_STATUS_COUNT];
    atomic_uint_fast64_t header_counts[4]; /* see counted_headers in server.c */
};

/* Runs one data or control call whose checks have passed. `cache` is the
 * cache header (NULL when absent). */
void srv_handle(momento_local *s, srv_method m, const char *cache, size_t cache_len,
                const uint8_t *body, size_t len, srv_reply *r);

#endif
