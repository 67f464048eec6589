/* What one running momento-local is, and what its modules share: the
 * state of the lifecycle (server.c), of the network front ends (front/:
 * the gRPC call layer, the protosocket port) and the counters (stats.c).
 * Handlers read `opts` and `store` from here too. */
#ifndef MOMENTO_LOCAL_SRV_SERVER_H
#define MOMENTO_LOCAL_SRV_SERVER_H

#include "core/srv_admin.h"
#include "core/srv_faults.h"
#include "core/srv_options.h"
#include "core/srv_reply.h"
#include "core/srv_topics.h"
#include "core/srv_turns.h"
#include "data/store.h"
#include "heap.h"
#include "methods.h"
#include "momento/local.h"

#include <grpc/grpc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* Any path outside the RPC table: answered UNIMPLEMENTED, counted in the
 * stats as "Unimplemented". Per-method arrays have SRV_METHOD_COUNT slots. */
#define SRV_UNKNOWN MOMENTO__RPC_COUNT
#define SRV_METHOD_COUNT (MOMENTO__RPC_COUNT + 1)
#define SRV_STATUS_COUNT 17 /* gRPC status codes 0 (OK) .. 16 (UNAUTHENTICATED) */
#define SRV_COUNTED_HEADERS 5

/* The front end a call came by (front/), for the stats' count of each
 * RPC by transport. */
typedef enum { SRV_VIA_GRPC, SRV_VIA_PROTOSOCKET, SRV_TRANSPORT_COUNT } srv_transport;

/* HTTP/2 streams (calls in progress) one connection may hold
 * (momento_local_options.max_streams, default 100 as Momento): gRPC core
 * advertises it in SETTINGS_MAX_CONCURRENT_STREAMS and refuses streams
 * beyond it; a well-behaved client (gRPC, h2load) queues the rest itself.
 * Without a limit one connection could open 50,000 streams, and since
 * gRPC core hands new calls to the server thread first come first served
 * across connections, every other client's calls waited behind them (1 s
 * deadlines timed out). With it, a call waits behind at most this many
 * calls per other connection. */

/* Runs one call of RPC `m` that passed a front end's checks (front/):
 * `cache` is its `cache` header's bytes (NULL when absent), `body` its
 * request, `r` its reply. The front ends know the RPC layer only as this
 * function, which server.c hands to srv_calls_start(): rpc/dispatch.c's
 * srv_dispatch(). So the loops run every handler knowing none of them,
 * and neither front/ nor rpc/ includes the other. */
typedef void srv_dispatch_fn(momento_local *s, momento__rpc_id m, const char *cache,
                             size_t cache_len, const uint8_t *body, size_t len, srv_reply *r);

struct momento_local {
    momento_local_options opts;
    grpc_server *server;
    grpc_completion_queue *cq;
    void *registered[MOMENTO__RPC_COUNT]; /* grpc_server_register_method's handles */
    srv_dispatch_fn *dispatch;            /* srv_calls_start()'s */
    srv_keys_fn *request_keys;            /* rpc/'s reader of a request's keys (faults) */
    /* The server's threads (srv_turns.h): one polls, the others carry
     * long requests; the state below is theirs, one at a time. */
    srv_turns turns;
    atomic_bool stopping;
    int port;
    char endpoint[80];

    /* Server-thread state. */
    store store;
    fault_session *sessions;
    /* Delayed calls and the streams of disposable tokens (until their
     * expiry): due time, then arrival order. */
    momento__heap timers;
    atomic_uint_fast64_t parked; /* the delayed calls, for momento_local_parked_calls() */
    uint64_t timer_seq;
    int64_t rate_window_ms;
    uint32_t rate_count;
    int64_t next_sweep_ms;
    bool shut_down;            /* the shutdown tag arrived */
    bool queue_shut;           /* grpc_completion_queue_shutdown() called */
    bool queue_done;           /* the completion queue is shut down and drained */
    /* Calls held back behind a long request's pins (front/calls.c), in
     * arrival order; `redo` those being answered again once it is done. */
    struct srv_call_list {
        struct srv_call *head, *tail;
    } deferred, redo;
    atomic_uint_fast64_t waiting_calls; /* deferred, for momento_local_waiting_calls() */
    /* Tests only (srv_test_hold_new_calls()): new calls kept unhandled
     * until the queue is shut, and how many are. */
    atomic_bool test_hold_new_calls;
    struct srv_call_list test_held;
    atomic_uint_fast64_t test_n_held;
    uint64_t arrivals;
    srv_topics topics;
    struct srv_webhooks *webhooks; /* webhooks.c: the registry, the delivery queue */
    bool streams_ended;        /* srv_topics_end_all() ran for the stop */
    /* Disposable tokens' signing key (tokens.c), drawn at first use. */
    bool token_key_set;
    unsigned char token_key[32];
    /* API keys (tokens.c): the next id to issue, and the keys refreshed
     * away (by id, each until its expiry, past which it fails anyway).
     * Their own lock: the protosocket thread checks keys too. */
    struct srv_api_keys {
        pthread_mutex_t mu;
        uint64_t next_id;
        struct srv_revoked {
            uint64_t id, valid_until;
        } *revoked;
        size_t n_revoked, cap;
    } api_keys;

    /* momento_local_stop() asks the server thread to end every
     * subscription stream with UNAVAILABLE (clients resubscribe; a
     * CANCELLED from grpc_server_cancel_all_calls() would make official
     * SDKs give up) and waits until `open_streams` is 0. */
    atomic_bool ending_streams;
    atomic_uint_fast64_t open_streams;  /* subscription streams not yet freed */
    /* momento_local_block(): calls are refused and streams ended while set
     * (front/calls.c); `block_applied` is the server thread's: the open streams
     * were ended for the current block. */
    atomic_bool blocked;
    bool block_applied;
    srv_admin admin;
    /* The protosocket port (front/protosocket.c), NULL when off. */
    struct srv_protosocket *protosocket;
    atomic_uint_fast64_t subscriptions; /* subscriptions in a topic */
    atomic_uint_fast64_t topic_deliveries;
    atomic_uint_fast64_t topic_heartbeats;

    atomic_uint_fast64_t stats[SRV_METHOD_COUNT][SRV_STATUS_COUNT];
    /* The same calls again, by the front end they came by (all statuses):
     * for each method the transports' counts add up to its total. */
    atomic_uint_fast64_t by_transport[SRV_TRANSPORT_COUNT][SRV_METHOD_COUNT];
    /* Calls per method that their client cancelled (or left) before the
     * server had sent their status; each is in `stats` as well. */
    atomic_uint_fast64_t client_cancels[SRV_METHOD_COUNT];
    atomic_uint_fast64_t header_counts[SRV_COUNTED_HEADERS];
};

/* Tests only, defined by the gRPC call layer (front/calls.c; its other
 * functions are in front/srv_calls.h): from now on each new call gRPC
 * hands over is kept, not handled, until the completion queue is shut,
 * and handled then: the order in which gRPC can deliver a call it matched
 * before the stop (on_new_call()), forced. srv_test_held_calls() counts
 * those kept. Declared here, where the tests already look for the
 * server's insides; nothing below the front ends calls them. */
void srv_test_hold_new_calls(momento_local *s);
uint64_t srv_test_held_calls(const momento_local *s);

/* stats.c. Written by the front ends' threads and read from any thread
 * (relaxed atomics). A call of `m` that came by `via`, answered with
 * `status`. */
void srv_stats_count(momento_local *s, srv_transport via, momento__rpc_id m,
                     grpc_status_code status);
/* A call of `m` its client cancelled before its status was sent. */
void srv_stats_count_client_cancel(momento_local *s, momento__rpc_id m);
void srv_stats_count_headers(momento_local *s, const grpc_metadata_array *md);

#endif
