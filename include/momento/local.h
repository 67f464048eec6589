/*
 * momento-local: a Momento-compatible cache server, in-memory, for tests,
 * examples and benchmarks. The `momento-local` binary is a thin wrapper
 * around this API; a program can embed the same server in-process.
 *
 * Conventions are those of momento.h: opaque handles, inputs copied, 0 or a
 * negative momento_error returned, *ret untouched on failure, NULL-safe
 * frees. Every function may be called from any thread; the server answers
 * calls on its own threads (docs/server.md "Long requests").
 */
#ifndef MOMENTO_LOCAL_H
#define MOMENTO_LOCAL_H

#include "momento/momento.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct momento_local_options momento_local_options;
typedef struct momento_local momento_local;

/*
 * Defaults: bind 127.0.0.1, port 0 (the system picks a free port; read it
 * with momento_local_port()), any token accepted, no memory limit, 5 MiB
 * item limit (a topic publish's value too), no rate limit, plaintext;
 * topics: heartbeats after 1 s idle, 4096 items kept per topic, 10,000
 * subscribers per topic, a topic without subscribers forgotten after 5
 * minutes without a publish, 1 MiB queued per subscriber and 64 MiB for
 * all of them.
 */
MOMENTO_EXPORT int momento_local_options_new(momento_local_options **ret);
MOMENTO_EXPORT void momento_local_options_free(momento_local_options *o);
/* A numeric IPv4 or IPv6 address; hostnames are refused. */
MOMENTO_EXPORT int momento_local_options_set_bind(momento_local_options *o, const char *addr);
/* The port to listen on, 0 .. 65535; 0 picks a free port. */
MOMENTO_EXPORT int momento_local_options_set_port(momento_local_options *o, int port);
/* Require `authorization: token` on every call but Ping (UNAUTHENTICATED
 * otherwise). Fault-injection headers then apply only to calls carrying
 * the token: a Ping without it is answered at once, whatever it asks.
 * NULL restores the default of accepting any token. */
MOMENTO_EXPORT int momento_local_options_set_auth_token(momento_local_options *o,
                                                       const char *token);
/* Evict least recently used items beyond this many bytes; 0 = no limit.
 * Items count their allocated size plus overhead; an item larger than the
 * limit is refused (RESOURCE_EXHAUSTED, err item_size_limit_exceeded).
 * Topics count too (names, resume buffers, subscriptions and their
 * queues): topics without subscribers and resume buffers give way before
 * any item (docs/server.md "Memory"). */
MOMENTO_EXPORT int momento_local_options_set_max_memory(momento_local_options *o, uint64_t bytes);
/* Key + value limit per item (RESOURCE_EXHAUSTED, err item_size_limit_exceeded).
 * A request larger than this or 5 MiB, whichever is more, plus 1 KiB is
 * refused whole first (RESOURCE_EXHAUSTED, err request_size_limit_exceeded). */
MOMENTO_EXPORT int momento_local_options_set_max_item_bytes(momento_local_options *o,
                                                           uint64_t bytes);
/* Beyond this many calls in one second, answer RESOURCE_EXHAUSTED with
 * err operations_rate_limit_exceeded; 0 = unlimited. */
MOMENTO_EXPORT int momento_local_options_set_max_rps(momento_local_options *o, uint32_t rps);
/* Answer ListCaches in pages of at most n caches, in name order, each page
 * but the last with a next_token (the last name it lists); 0 (the default)
 * lists every cache in one page. Lets clients' paging be tested. */
MOMENTO_EXPORT int momento_local_options_set_list_page_size(momento_local_options *o,
                                                           uint32_t n);
/*
 * Topic heartbeats (docs/server.md "Topics"): a subscription that has had no
 * message for `ms` milliseconds gets a heartbeat; 10 .. 3,600,000, default 1000
 * (the official SDKs' tests expect one within about a second).
 */
MOMENTO_EXPORT int momento_local_options_set_heartbeat_ms(momento_local_options *o, uint32_t ms);
/* The most recent items each topic keeps for subscribers resuming at an
 * earlier sequence number; 0 .. 1,000,000, default 4096; 0 keeps none (a
 * resume then gets a discontinuity). A topic also keeps at most 64 MiB. */
MOMENTO_EXPORT int momento_local_options_set_topic_buffer_items(momento_local_options *o,
                                                               uint32_t n);
/* Subscriptions one topic may have at once, default 10,000; past it
 * Subscribe fails RESOURCE_EXHAUSTED with err
 * topic_subscriptions_limit_exceeded. 0 = no limit. */
MOMENTO_EXPORT int momento_local_options_set_max_subscribers(momento_local_options *o,
                                                            uint32_t n);
/* Concurrent calls (HTTP/2 streams) one connection may hold, announced in
 * SETTINGS_MAX_CONCURRENT_STREAMS: 1 .. 100,000, default 100, Momento's
 * own limit. A gRPC client queues calls past it until one ends (so a
 * client that needs more opens more connections, as against Momento); the
 * library keeps topic subscriptions on channels of their own for this
 * reason (momento_config_set_stream_channels()). */
MOMENTO_EXPORT int momento_local_options_set_max_streams_per_connection(momento_local_options *o,
                                                                       uint32_t n);
/* The test admin the official SDKs' suites use (their TEST_ADMIN_PORT,
 * 9090 by default there): an HTTP port on the bind address answering
 * `GET /block` and `GET /unblock` as momento_local_block() does. -1 = off
 * (the default), 0 = any free port (momento_local_test_admin_port()),
 * else 1 .. 65535. momento_local_start() fails (SERVER_UNAVAILABLE) when
 * the port cannot be bound. For tests: it has no authentication. */
MOMENTO_EXPORT int momento_local_options_set_test_admin_port(momento_local_options *o, int port);
/* A topic without subscribers that nobody publishes to for `ms`
 * milliseconds is forgotten, its resume buffer with it: used again, it is
 * numbered from 1 on a new sequence page, so a subscriber resuming from
 * the old one gets a discontinuity. 10 .. 86,400,000, default 300,000. */
MOMENTO_EXPORT int momento_local_options_set_topic_idle_ms(momento_local_options *o, uint32_t ms);
/* What one subscription may have queued and not yet taken by gRPC: its
 * messages, each counted whole, and its queue's slots (24 bytes each).
 * Past it the oldest go, and the subscriber gets a discontinuity before
 * its next item. 1024 .. 1 GiB, default 1 MiB. */
MOMENTO_EXPORT int momento_local_options_set_subscriber_queue_bytes(momento_local_options *o,
                                                                   uint64_t bytes);
/* The same for every subscription together: each may hold at most this
 * divided by the number of subscriptions (or its own bound, if less), and
 * always its newest message. 0 = no such bound; else at least 1024;
 * default 64 MiB. */
MOMENTO_EXPORT int momento_local_options_set_max_queued_bytes(momento_local_options *o,
                                                             uint64_t bytes);
/* How long a webhook delivery waits for its receiver's answer (looking its
 * host up, connecting, sending and the status line together) before it
 * counts as timed out: 10 .. 600,000 ms, default 5000, Momento's
 * documented 5 s. Tests set less. */
MOMENTO_EXPORT int momento_local_options_set_webhook_timeout_ms(momento_local_options *o,
                                                               uint32_t ms);
/* How many deliveries each webhook may have waiting (it sends one at a
 * time, webhooks concurrently): 1 .. 1,000,000, default 1024; they may also
 * hold at most 8 MiB (always one, whatever its size), and all webhooks'
 * 64 MiB together, or a quarter of --max-memory if less (docs/server.md
 * "Webhooks"). A publish that finds no room drops a delivery and counts it
 * (momento_local_webhook_stats_get()); it never waits. */
MOMENTO_EXPORT int momento_local_options_set_webhook_queue_items(momento_local_options *o,
                                                                uint32_t n);
/* Serve TLS with this PEM certificate chain and private key (files are read
 * by momento_local_start()). NULL, NULL returns to plaintext. */
MOMENTO_EXPORT int momento_local_options_set_tls(momento_local_options *o, const char *cert_file,
                                                const char *key_file);
/*
 * Momento's protosocket protocol (docs/server.md "Protosocket port"): a
 * second port, beside the gRPC one, answering Authenticate, Get, Set and
 * Delete framed as Momento's Rust SDK sends them, on the same store, with
 * the same checks, errors and counters as the gRPC port. -1 = off (the
 * default), 0 = any free port (read it with
 * momento_local_protosocket_port()), else 1 .. 65535; anything else is
 * MOMENTO_ERR_INVALID_ARGUMENT. It binds the address the gRPC port binds
 * and serves TLS with its certificate when momento_local_options_set_tls()
 * is set, plaintext otherwise. momento_local_start() fails
 * (SERVER_UNAVAILABLE) when the port cannot be bound.
 */
MOMENTO_EXPORT int momento_local_options_set_protosocket_port(momento_local_options *o,
                                                             int port);
/* A cache that exists from the start (may be called several times; a name
 * given twice is one cache). MOMENTO_ERR_INVALID_ARGUMENT unless `name` is 1
 * to 255 bytes of UTF-8 without control characters. */
MOMENTO_EXPORT int momento_local_options_add_cache(momento_local_options *o, const char *name);

/*
 * A server's handle and the running server are one lifetime:
 * momento_local_start() is the handle's `_new` (it creates the handle and
 * binds the port, so every failure - a port in use, a bad TLS file - is
 * reported where the handle would be made) and momento_local_stop() its
 * `_free` (NULL-safe, as every `_free`). A `_new` / `_start` / `_stop` /
 * `_free` split would add a handle that exists but serves nothing, which
 * no caller has a use for; the names say what the calls do to the port.
 * The options are an ordinary handle, momento_local_options_new() / _free().
 *
 * Starts a server (NULL opts = defaults). Returns 0, MOMENTO_ERR_INVALID_ARGUMENT
 * (bad options, unreadable TLS files), MOMENTO_ERR_SERVER_UNAVAILABLE (the
 * address could not be bound) or MOMENTO_ERR_NO_MEMORY (also when a cache
 * from momento_local_options_add_cache() could not be created; nothing is
 * left running).
 */
MOMENTO_EXPORT int momento_local_start(momento_local **ret, const momento_local_options *opts);

/* Stops serving, fails calls still waiting on injected delays with
 * UNAVAILABLE, ends every topic subscription with UNAVAILABLE ("server
 * stopping", so that clients resubscribe; it waits up to 1 s for those
 * statuses to be sent), and frees everything. NULL-safe. */
MOMENTO_EXPORT void momento_local_stop(momento_local *s);

/* The bound port, and "host:port" for momento_credentials_local(). */
MOMENTO_EXPORT int momento_local_port(const momento_local *s);
MOMENTO_EXPORT const char *momento_local_endpoint(const momento_local *s);
/* The protosocket port bound, or -1 when it is off (or `s` is NULL). */
MOMENTO_EXPORT int momento_local_protosocket_port(const momento_local *s);
/*
 * The fault headers' equivalent for the protosocket port, which has no
 * headers: the next `count` commands whose RPC's fault name (docs/server.md
 * "Fault injection": "get", "set", "delete") is in the space-separated
 * `rpcs` ("" = every RPC) are held `delay_ms` milliseconds (0 = not at
 * all) and then answered with a CommandError of code `grpc_status`
 * (0 .. 16; -1 = no error: answered as usual after the delay). One rule
 * per server, for every connection; a new call replaces the rule, and
 * `rpcs` NULL clears it. A held command holds nothing else up: the
 * connection's other commands and other connections are answered
 * meanwhile; a cancel frame for it drops it unanswered (counted as a
 * client's cancel, momento_local_cancelled_calls()), as does its
 * connection closing; one still held when the server stops is answered
 * UNAVAILABLE.
 *
 * Returns MOMENTO_OK; MOMENTO_ERR_INVALID_ARGUMENT for a NULL server, a
 * status outside -1 .. 16 or a name that is not an RPC's fault name (the
 * rule is then unchanged). On a server without a protosocket port the rule
 * has nothing to apply to. Any thread; the rule applies to the commands
 * that arrive after it returns.
 */
MOMENTO_EXPORT int momento_local_protosocket_fault(momento_local *s, const char *rpcs,
                                                  int grpc_status, uint32_t delay_ms,
                                                  uint32_t count);
/* The test admin's port, or 0 when it is off (or `s` is NULL). */
MOMENTO_EXPORT int momento_local_test_admin_port(const momento_local *s);
/* `blocked` non-zero cuts the data port as a network fault would, for
 * tests: every call is answered UNAVAILABLE ("the data port is blocked")
 * and every open subscription stream ends UNAVAILABLE, so clients see a
 * lost connection and retry; 0 gives it back. Connections themselves stay
 * open, and calls already being answered finish. Any thread; NULL-safe. */
MOMENTO_EXPORT void momento_local_block(momento_local *s, int blocked);

/*
 * Calls answered so far for `method` ("Get", "Set", "CreateCache", ...;
 * NULL = every method) with gRPC status `grpc_status` (-1 = any status).
 * A call held by an injected delay is counted when it leaves: with its
 * answer's status, CANCELLED when its client cancelled or disconnected
 * first, DEADLINE_EXCEEDED when its deadline came first, UNAVAILABLE when
 * the server stopped.
 */
MOMENTO_EXPORT uint64_t momento_local_rpc_count(const momento_local *s, const char *method,
                                               int grpc_status);
/*
 * Calls for `method` (named as for momento_local_rpc_count(); NULL = every
 * method) that their client cancelled, or whose client disconnected,
 * before the server had sent their status: parked by an injected delay or
 * not (a call cancelled before its request was all in, or while it waited
 * for the server thread; a stream between its messages).
 * The server learns it from gRPC (RECV_CLOSE_ON_SERVER's `cancelled`).
 * Not counted: a call the server answered, with any status (an injected
 * `return-error: cancelled` too), whatever its client does afterwards; a
 * call ended by its deadline (its client going away within 50 ms of it
 * counts as that) or by the server stopping. Each call counted here is
 * also counted once by momento_local_rpc_count(): CANCELLED if it was
 * parked, else under the status the server was answering with.
 *
 * Returns the count; 0 for a NULL server or an unknown method. Any thread
 * (atomic counters, like momento_local_rpc_count()); the server counts a
 * cancel on its own thread when gRPC reports it, a moment after the
 * client's, so a test waits for the count rather than reading it once.
 */
MOMENTO_EXPORT uint64_t momento_local_cancelled_calls(const momento_local *s, const char *method);
/*
 * How many calls so far carried request header `name`: one of
 * "authorization", "cache", "agent", "runtime-version", "read-concern"
 * (others: 0). Lets
 * tests check what a client sends.
 */
MOMENTO_EXPORT uint64_t momento_local_header_count(const momento_local *s, const char *name);

/*
 * Calls held right now by an injected delay (`delay-ms`). A held call
 * leaves when its delay ends; at its deadline if that comes first (its
 * client ends it then, counted DEADLINE_EXCEEDED; the server answers
 * DEADLINE_EXCEEDED itself 1 s later if the client has not); or as soon
 * as its client cancels or
 * disconnects (freed; counted CANCELLED, or DEADLINE_EXCEEDED when that
 * happens within 50 ms of its deadline). Lets tests see that nothing
 * stays parked.
 */
MOMENTO_EXPORT uint64_t momento_local_parked_calls(const momento_local *s);

/*
 * Long requests: a request whose work runs past a slice (1 ms) on the
 * server thread goes on in slices, other calls answered between them, so
 * that no request holds the others up (docs/server.md "Long requests").
 * momento_local_long_requests() counts those running so right now;
 * momento_local_waiting_calls() the calls waiting for one to be done
 * because they name one of its keys, or a cache a flush or deletion is
 * emptying. Any thread (atomic counters); 0 for a NULL server.
 */
MOMENTO_EXPORT uint64_t momento_local_long_requests(const momento_local *s);
MOMENTO_EXPORT uint64_t momento_local_waiting_calls(const momento_local *s);

/*
 * Topics: the subscriptions open right now (in a topic: a subscription
 * whose client cancelled or left, or that ended, no longer counts); the
 * items delivered to subscribers so far (one per subscriber an item is
 * handed to gRPC for, replays included); the heartbeats sent so far.
 * Any thread (atomic counters). The last two are zeroed by
 * momento_local_reset_stats(). 0 for a NULL server.
 */
MOMENTO_EXPORT uint64_t momento_local_subscriptions(const momento_local *s);
MOMENTO_EXPORT uint64_t momento_local_topic_deliveries(const momento_local *s);
MOMENTO_EXPORT uint64_t momento_local_topic_heartbeats(const momento_local *s);
/*
 * Webhook deliveries (docs/server.md "Webhooks") since the server started:
 * `queued` counts every delivery a publish made (one per webhook on the
 * topic), and each ends as exactly one of `delivered` (answered 2xx),
 * `rejected` (answered another status), `timed_out` (no answer within the
 * timeout), `failed` (no connection, an unknown host, a connection closed
 * without an answer) or `dropped` (before it was sent: no room), unless it
 * is still `pending` (waiting or being sent), or its webhook or cache was
 * deleted first, or the server stopped. `dropped` is the sum of
 * `dropped_full` (its webhook's queue was full: the new delivery),
 * `dropped_global` (all webhooks' deliveries held their bound, 64 MiB or a
 * quarter of --max-memory: the oldest waiting delivery of the webhook with
 * the most bytes waiting, or the new one when that is its own webhook) and
 * `dropped_memory` (the same when the rest of --max-memory could not make
 * room, or out of memory). Right now: `sending` of the pending are being
 * sent, and `bytes` is what webhooks' deliveries count against
 * --max-memory. Fields are only ever appended.
 */
typedef struct momento_local_webhook_stats {
    uint64_t queued, delivered, rejected, timed_out, failed, dropped, pending;
    uint64_t dropped_full, dropped_global, dropped_memory, sending, bytes;
} momento_local_webhook_stats;
/* Fills *ret (all 0 for a NULL server; nothing for a NULL `ret`). Any
 * thread. */
MOMENTO_EXPORT void momento_local_webhook_stats_get(const momento_local *s,
                                                    momento_local_webhook_stats *ret);
/*
 * Topics' memory right now: the bytes topics hold and count against
 * --max-memory (topics, resume buffers, messages, subscriptions and their
 * queues; a message once, however many hold it); the topics that exist
 * (a topic forgotten, idle or flushed, no longer counts); and what the
 * subscriptions' queues count against their bounds (each message whole
 * in each queue). Any thread (atomic counters); 0 for a NULL server.
 */
MOMENTO_EXPORT uint64_t momento_local_topic_bytes(const momento_local *s);
MOMENTO_EXPORT uint64_t momento_local_topic_count(const momento_local *s);
MOMENTO_EXPORT uint64_t momento_local_queued_bytes(const momento_local *s);

/* CPU seconds the server's own threads have used (the one that answers
 * calls and those that carry long requests; not gRPC's, nor the one that
 * frees big collections), so an embedding program can tell its own CPU
 * time from the server's. Any thread. */
MOMENTO_EXPORT double momento_local_cpu_seconds(const momento_local *s);

/* Zeroes the counters, momento_local_cancelled_calls()'s and the topic
 * deliveries and heartbeats among them. */
MOMENTO_EXPORT void momento_local_reset_stats(momento_local *s);
/*
 * The counters as JSON: {"total": N, "methods": {"Get": {"total": N,
 * "OK": n, "NOT_FOUND": m, ..., "cancelled_by_client": c}, ...},
 * "cancelled_by_client": C}. A method lists only the statuses it has
 * counts for, and "cancelled_by_client" only when it is not 0; the total
 * "cancelled_by_client" (momento_local_cancelled_calls(s, NULL)) is always
 * there. Returns a string to free() or NULL (NULL server, out of memory).
 */
MOMENTO_EXPORT char *momento_local_stats_json(const momento_local *s);

#ifdef __cplusplus
}
#endif

#endif /* MOMENTO_LOCAL_H */
