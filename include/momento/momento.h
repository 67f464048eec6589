/*
 * libmomento: a C client for the Momento serverless cache.
 *
 * Conventions that hold for every function in this header:
 *
 * - Handles are opaque. `momento_X_new()` creates one and returns 0 or a
 *   negative `momento_error`; on failure `*ret` is left untouched.
 *   `momento_X_free()` accepts NULL.
 * - Inputs (names, keys, values, options) are copied before a function
 *   returns: the caller may free or reuse them at once.
 * - Async operations return 0 when the request was accepted; exactly one
 *   callback then follows, on success, error, timeout, cancellation and client
 *   shutdown alike. A non-zero return means the request was refused and the
 *   callback is never called.
 * - A `momento_result` handed to a callback, and every buffer reachable from
 *   it, is borrowed until the callback returns. Copy what you keep, or take an
 *   owned copy with momento_result_dup().
 * - Callbacks run on the client's completion thread (one per client). They may
 *   submit new async requests and may free the client; a blocking call made
 *   from that thread on the same client returns MOMENTO_ERR_WOULD_DEADLOCK.
 *   See docs/threading.md.
 * - All functions may be called from any thread unless their comment says
 *   otherwise. Configuration and credential handles are not locked: do not
 *   modify one from two threads at once.
 * - Statistics: an object's counters are a struct `momento_X_stats`, read
 *   with `momento_X_stats_get(obj, &stats, sizeof(stats))` (the client's
 *   batching, a coalescer's, a subscription's). Their fields are only
 *   appended, so `size` tells which ones the program knows.
 * - The library never prints and never logs an API key.
 */
#ifndef MOMENTO_MOMENTO_H
#define MOMENTO_MOMENTO_H

#include <stddef.h>
#include <stdint.h>
#include <string.h> /* MOMENTO_STR's strlen */

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define MOMENTO_EXPORT __attribute__((visibility("default")))
#else
#define MOMENTO_EXPORT
#endif

/* The version of this header, semantic versioning (CHANGELOG.md): while
 * the major number is 0, a minor release may break the API, and every ABI
 * break raises the shared library's soname (libmomento.so.N). */
#define MOMENTO_VERSION_MAJOR 0
#define MOMENTO_VERSION_MINOR 2
#define MOMENTO_VERSION_PATCH 0
#define MOMENTO_VERSION_STRING "0.2.0"
/* One number to compare at compile time: 0x000200 for 0.2.0. */
#define MOMENTO_VERSION_NUM                                                                   \
    ((MOMENTO_VERSION_MAJOR << 16) | (MOMENTO_VERSION_MINOR << 8) | MOMENTO_VERSION_PATCH)

/*
 * A NUL-terminated string as the (pointer, length) pair that keys, values,
 * fields and names take: momento_get(c, "cache", MOMENTO_STR("key"), NULL,
 * cb, ud). Evaluates `s` twice: pass a name, not an expression with side
 * effects. Keys are bytes; the terminating NUL is not part of them.
 */
#define MOMENTO_STR(s) (s), strlen(s)

/* ------------------------------------------------------------------ errors */

/*
 * One error enum for the whole library. The first block mirrors the error
 * codes of Momento's official SDKs (see momento_error_name()); the second is
 * local conditions that never reach the network.
 */
typedef enum momento_error {
    MOMENTO_OK = 0,
    MOMENTO_ERR_INVALID_ARGUMENT = -1,   /* INVALID_ARGUMENT_ERROR */
    MOMENTO_ERR_BAD_REQUEST = -2,        /* BAD_REQUEST_ERROR */
    MOMENTO_ERR_FAILED_PRECONDITION = -3, /* FAILED_PRECONDITION_ERROR */
    MOMENTO_ERR_CANCELLED = -4,          /* CANCELLED_ERROR */
    MOMENTO_ERR_TIMEOUT = -5,            /* TIMEOUT_ERROR */
    MOMENTO_ERR_PERMISSION = -6,         /* PERMISSION_ERROR */
    MOMENTO_ERR_AUTHENTICATION = -7,     /* AUTHENTICATION_ERROR */
    MOMENTO_ERR_LIMIT_EXCEEDED = -8,     /* LIMIT_EXCEEDED_ERROR */
    MOMENTO_ERR_CACHE_NOT_FOUND = -9,    /* CACHE_NOT_FOUND_ERROR */
    MOMENTO_ERR_ALREADY_EXISTS = -10,    /* ALREADY_EXISTS_ERROR */
    MOMENTO_ERR_UNKNOWN_SERVICE = -11,   /* UNKNOWN_SERVICE_ERROR */
    MOMENTO_ERR_INTERNAL_SERVER = -12,   /* INTERNAL_SERVER_ERROR */
    MOMENTO_ERR_SERVER_UNAVAILABLE = -13, /* SERVER_UNAVAILABLE */
    MOMENTO_ERR_UNKNOWN = -14,           /* UNKNOWN_ERROR */
    /* momento_client_new() could not connect within the eager-connect
     * timeout (momento_config_set_eager_connect()), where official SDKs
     * fail their eager connection. A connection refused or lost under a
     * request is UNAVAILABLE, MOMENTO_ERR_SERVER_UNAVAILABLE, as in every
     * SDK. */
    MOMENTO_ERR_CONNECTION = -15,        /* CONNECTION_ERROR */
    /* RESOURCE_EXHAUSTED that this client produced, not the service: it
     * could not hold a response (out of memory, or larger than gRPC's 10 MiB
     * receive limit) or refused to send a request larger than its send
     * limit. The service's limits are MOMENTO_ERR_LIMIT_EXCEEDED. */
    MOMENTO_ERR_CLIENT_RESOURCE_EXHAUSTED = -16, /* CLIENT_RESOURCE_EXHAUSTED */
    /* NOT_FOUND naming something other than a cache: the `err` trailer says
     * `item_not_found` or `store_not_found` (the SDKs'
     * STORE_ITEM_NOT_FOUND_ERROR / STORE_NOT_FOUND_ERROR; the cause stays in
     * momento_result_error_detail()). A plain NOT_FOUND is
     * MOMENTO_ERR_CACHE_NOT_FOUND. */
    MOMENTO_ERR_NOT_FOUND = -17,         /* NOT_FOUND_ERROR */

    MOMENTO_ERR_NO_MEMORY = -30,         /* an allocation failed */
    MOMENTO_ERR_WOULD_DEADLOCK = -31,    /* blocking call on the callback thread */
    MOMENTO_ERR_CLOSED = -32,            /* the client is being freed */
    MOMENTO_ERR_BAD_RESPONSE = -33       /* the server's reply did not decode */
} momento_error;

/* A static, human-readable description of `err`. Never NULL. */
MOMENTO_EXPORT const char *momento_strerror(int err);

/*
 * The version of the library running ("0.2.0"), which may differ from the
 * MOMENTO_VERSION_STRING a program was compiled with (a newer shared
 * library of the same soname). Static, never NULL; any thread.
 */
MOMENTO_EXPORT const char *momento_version(void);

/*
 * The name official Momento SDKs give `err` ("TIMEOUT_ERROR", ...), or a
 * libmomento name for local errors. Static, never NULL.
 */
MOMENTO_EXPORT const char *momento_error_name(int err);

/*
 * Why the last call on this thread that returned an error without sending
 * anything was refused, naming what was wrong ("the cache name has a
 * control character (0x09) at byte 2", "key + value are 5242881 bytes,
 * over Momento's item limit ..."), or "" when there is no more to say than
 * momento_strerror(). Thread-local, like errno: valid until the next
 * libmomento call on this thread. Blocking calls need not ask: a refused
 * one returns this text in the error result it sets *ret to.
 *
 * Too big: an argument over a protocol limit that no server would accept
 * (MOMENTO_MAX_ITEM_BYTES, MOMENTO_MAX_CACHE_NAME_BYTES) is refused here
 * with MOMENTO_ERR_INVALID_ARGUMENT and nothing is sent; a server's own,
 * possibly lower, limits (an account's, momento-local's --max-item-bytes)
 * answer MOMENTO_ERR_LIMIT_EXCEEDED with momento_result_limit_kind(). The
 * two stay apart on purpose: the first is a bug in the calling code, found
 * without a round trip; the second depends on the server and its account.
 */
MOMENTO_EXPORT const char *momento_refusal_reason(void);

/*
 * The error kind for a raw gRPC status code (0..16), as official SDKs map it.
 * 0 (OK) maps to MOMENTO_OK; codes outside 0..16 to MOMENTO_ERR_UNKNOWN.
 * The status alone: a result's error can be finer (MOMENTO_ERR_NOT_FOUND,
 * MOMENTO_ERR_CLIENT_RESOURCE_EXHAUSTED), read from the reply's `err`
 * trailer and message as the SDKs do.
 */
MOMENTO_EXPORT int momento_error_from_grpc_status(int grpc_status);

/*
 * Which limit a MOMENTO_ERR_LIMIT_EXCEEDED result hit, as official SDKs tell
 * it (their LimitExceededError message): from the `err` trailer
 * ("request_size_limit_exceeded", ...; a cause it does not know is
 * MOMENTO_LIMIT_UNKNOWN), else from words of the server's message
 * ("subscribers", "operations", "throughput", "request limit", "item size",
 * "element size", in that order), else MOMENTO_LIMIT_UNKNOWN. See
 * momento_result_limit_kind().
 */
typedef enum momento_limit_kind {
    MOMENTO_LIMIT_NONE = 0,                /* not a MOMENTO_ERR_LIMIT_EXCEEDED result */
    MOMENTO_LIMIT_UNKNOWN = 1,             /* a limit the reply does not name */
    MOMENTO_LIMIT_OPERATIONS_RATE = 2,     /* operations_rate_limit_exceeded */
    MOMENTO_LIMIT_THROUGHPUT_RATE = 3,     /* throughput_rate_limit_exceeded */
    MOMENTO_LIMIT_REQUEST_SIZE = 4,        /* request_size_limit_exceeded */
    MOMENTO_LIMIT_ITEM_SIZE = 5,           /* item_size_limit_exceeded */
    MOMENTO_LIMIT_ELEMENT_SIZE = 6,        /* element_size_limit_exceeded */
    MOMENTO_LIMIT_TOPIC_SUBSCRIPTIONS = 7  /* topic_subscriptions_limit_exceeded */
} momento_limit_kind;

/*
 * The sentence official SDKs use for `kind` ("Request size limit exceeded
 * for this account", ...); "" for MOMENTO_LIMIT_NONE and for values outside
 * the enum. Static, never NULL.
 */
MOMENTO_EXPORT const char *momento_limit_kind_text(momento_limit_kind kind);

/* ---------------------------------------------------------------- logging */

typedef enum momento_log_level {
    MOMENTO_LOG_DEBUG = 0,
    MOMENTO_LOG_INFO = 1,
    MOMENTO_LOG_ERROR = 2
} momento_log_level;

typedef void (*momento_log_fn)(momento_log_level level, const char *message, void *userdata);

/*
 * Sets where the library's diagnostics go: it prints nothing.
 * Diagnostics, including those of the gRPC core it runs on (failed TLS
 * handshakes, lost connections), go to this callback
 * when one is set and are dropped otherwise. Messages never contain an API
 * key or token: the token of every client that exists is replaced by
 * "[token]" in every message, including gRPC's traces of request headers
 * (GRPC_TRACE=http), and a message that held one but could not be cleaned
 * (out of memory) is dropped. `fn` may be called from any thread, including
 * gRPC's own, and must not call back into libmomento. NULL removes the
 * callback.
 *
 * gRPC core's log sink is process-wide: once a client exists, libmomento owns
 * it. A program that also uses gRPC directly and wants gRPC's messages gets
 * them through this callback.
 *
 * gRPC core reports a failed internal assertion here, at
 * MOMENTO_LOG_ERROR, just before it aborts the process: without a callback
 * that abort says nothing. Programs that want a crash to say why keep one
 * that writes errors somewhere durable (libmomento's own tests print them).
 */
MOMENTO_EXPORT void momento_set_log_callback(momento_log_fn fn, void *userdata);

/* Limits checked before a request is sent. */
#define MOMENTO_MAX_ITEM_BYTES (5u * 1024u * 1024u) /* key + value */
#define MOMENTO_MAX_CACHE_NAME_BYTES 255u
#define MOMENTO_MAX_TTL_MS ((uint64_t)INT64_MAX)

/* ------------------------------------------------------------------ config */

typedef struct momento_config momento_config;

/*
 * A configuration with the defaults of Momento's "laptop" profile: 5000 ms
 * client timeout, 60 s default TTL, 1 channel, keepalive every 5 s with a 1 s
 * timeout, lazy connection, the system's TLS roots, up to 3 attempts for
 * idempotent requests. Returns 0, MOMENTO_ERR_INVALID_ARGUMENT (ret NULL)
 * or MOMENTO_ERR_NO_MEMORY.
 */
MOMENTO_EXPORT int momento_config_new(momento_config **ret);
MOMENTO_EXPORT void momento_config_free(momento_config *cfg);

/*
 * Setters. Each returns 0, or MOMENTO_ERR_INVALID_ARGUMENT for a NULL `cfg`
 * or a value outside the range given below; a refused value leaves `cfg`
 * unchanged. The values are checked here, so momento_client_new() takes any
 * configuration these setters produced.
 */

/* Per-request deadline, 1 .. 86,400,000 ms (one day). It bounds the request
 * as a whole, retries included. */
MOMENTO_EXPORT int momento_config_set_timeout_ms(momento_config *cfg, uint32_t ms);
/* TTL used by writes that pass ttl_ms = 0; 1 .. MOMENTO_MAX_TTL_MS. */
MOMENTO_EXPORT int momento_config_set_default_ttl_ms(momento_config *cfg, uint64_t ms);
/* HTTP/2 connections to the data endpoint, 1 .. 64; requests rotate over
 * them. The control endpoint always gets one. */
MOMENTO_EXPORT int momento_config_set_num_channels(momento_config *cfg, uint32_t n);
/* HTTP/2 connections to the cache endpoint kept for topic subscriptions'
 * streams, 1 .. 64, default 4 (the JS SDK's): subscriptions never share a
 * connection with requests, so no request waits behind streams for one of
 * Momento's MOMENTO_STREAMS_PER_CONNECTION places. Each carries at most
 * that many streams; subscriptions sharing one stream (same topic, see
 * momento_topic_subscribe()) count once. A subscription that would need a
 * stream past n x MOMENTO_STREAMS_PER_CONNECTION is refused with
 * MOMENTO_ERR_LIMIT_EXCEEDED, as the SDKs refuse it. */
MOMENTO_EXPORT int momento_config_set_stream_channels(momento_config *cfg, uint32_t n);
/* Concurrent streams (calls) Momento allows on one HTTP/2 connection. */
#define MOMENTO_STREAMS_PER_CONNECTION 100u
/* Keepalive ping interval and ack timeout, each 0 .. 86,400,000 ms.
 * Interval 0 turns keepalive off (the timeout is then unused); with keepalive
 * on, a timeout of 0 is refused. */
MOMENTO_EXPORT int momento_config_set_keepalive(momento_config *cfg, uint32_t interval_ms,
                                                uint32_t timeout_ms);
/*
 * Connect each data-plane channel inside momento_client_new(), waiting at
 * most `timeout_ms` (0 .. 86,400,000) for each in turn; 0 (the default)
 * connects on the first request instead. The control channel always connects
 * on first use. A client whose eager connection fails is not created:
 * momento_client_new() returns MOMENTO_ERR_CONNECTION.
 */
MOMENTO_EXPORT int momento_config_set_eager_connect(momento_config *cfg, uint32_t timeout_ms);

/*
 * Trust only the PEM certificates in `path` (read now; the file may change or
 * go away afterwards) instead of the system's roots, for TLS endpoints behind
 * a private CA. NULL returns to the system's roots (returns 0). Returns 0,
 * MOMENTO_ERR_INVALID_ARGUMENT for a NULL `cfg` or when the file cannot be
 * opened, is larger than 16 MiB or lacks a "-----BEGIN CERTIFICATE-----"
 * marker (the only check made here: the PEM is not parsed), or
 * MOMENTO_ERR_NO_MEMORY. On failure the previous roots stay.
 */
MOMENTO_EXPORT int momento_config_set_tls_roots_file(momento_config *cfg, const char *path);
/*
 * Whether TLS checks the server's certificate (its chain to the roots, and
 * that it names the endpoint's host): 1, the default; 0 accepts any
 * certificate, for test setups only (anyone between can read and change
 * the traffic, the key included). Returns 0 or MOMENTO_ERR_INVALID_ARGUMENT
 * for a NULL `cfg`.
 */
MOMENTO_EXPORT int momento_config_set_tls_verify(momento_config *cfg, int verify);
/*
 * Connects every channel to `host_port` instead of each endpoint's own
 * address, while TLS still sends (SNI), names (:authority) and verifies the
 * endpoint's host from the credentials: a private endpoint (a VPC
 * endpoint, a load balancer's address) in front of Momento. NULL returns
 * to the endpoints. Returns 0, or MOMENTO_ERR_INVALID_ARGUMENT (NULL `cfg`;
 * not host:port with a port 1 .. 65535; longer than 300 bytes), with
 * momento_refusal_reason() saying which.
 */
MOMENTO_EXPORT int momento_config_set_connect_address(momento_config *cfg, const char *host_port);
/* Which protocol carries get, set and delete (momento_config_set_transport). */
typedef enum momento_transport {
    MOMENTO_TRANSPORT_GRPC = 0,       /* every RPC over gRPC (the default) */
    MOMENTO_TRANSPORT_PROTOSOCKET = 1 /* get, set, delete over protosocket */
} momento_transport;
/*
 * MOMENTO_TRANSPORT_PROTOSOCKET sends get, set and delete - plain,
 * coalesced, queued by batching (each as its own pipelined command: the
 * protocol has no batches), blocking - over Momento's protosocket protocol
 * (docs/transport.md "Protosocket"): protobuf frames straight on TCP or
 * TLS, pipelined and answered out of order, without HTTP/2. Every other
 * RPC stays on gRPC in the same client, and so does a get, set or delete
 * that protosocket cannot carry: one with its own headers
 * (momento_request_options.headers) or a consistent read. Client-wide
 * headers (momento_config_add_header()) are not sent on protosocket. Results, errors, deadlines, cancel
 * tokens, retries and the metrics hook are as on gRPC: an application
 * cannot tell the transports apart but by speed. Returns 0 or
 * MOMENTO_ERR_INVALID_ARGUMENT (NULL `cfg`, a value outside the enum).
 */
MOMENTO_EXPORT int momento_config_set_transport(momento_config *cfg, momento_transport t);
/*
 * Where protosocket connects: "host:port". Default: `cache.<endpoint>:9004`
 * for credentials from an API key (the Rust SDK's), TLS naming and
 * verifying `cache.<endpoint>` as gRPC does (momento_config_set_tls_verify(),
 * momento_config_set_tls_roots_file() apply; a connect address applies
 * when this is not set); credentials for a local server have no default
 * (momento_client_new() refuses them with MOMENTO_ERR_INVALID_ARGUMENT):
 * name momento-local's `--protosocket-port`. Plaintext exactly when the
 * credentials are (momento_credentials_local()). NULL returns to the
 * default. Returns 0, or MOMENTO_ERR_INVALID_ARGUMENT (NULL `cfg`, not
 * host:port, longer than 300 bytes).
 */
MOMENTO_EXPORT int momento_config_set_protosocket_endpoint(momento_config *cfg,
                                                           const char *host_port);
/* Protosocket connections, 1 .. 64; default: half the CPUs, 1 .. 16 (the
 * Rust SDK's). Requests go to the least loaded; each connection is made on
 * first use and made again, with backoff, after it fails. */
MOMENTO_EXPORT int momento_config_set_protosocket_connections(momento_config *cfg, uint32_t n);

/*
 * Retries, as the official SDKs do them (their "fixed count" strategy, the
 * default): only the RPCs the JS SDK lists as retryable (get, set, delete,
 * keys exist, item TTL and type, batches, and the idempotent collection
 * calls; never conditional sets, increments, pushes, TTL updates, ping or
 * control calls), only after UNAVAILABLE, INTERNAL or a CANCELLED the server
 * sent (never a cancel of this process's), immediately, and always within
 * the request's overall deadline (momento_config_set_timeout_ms).
 * `max_attempts` counts the first try: 1 .. 10, default 3; 1 turns retries
 * off. This also turns the other strategies below off.
 */
MOMENTO_EXPORT int momento_config_set_retries(momento_config *cfg, uint32_t max_attempts);
/*
 * The "fixed timeout" variant: each attempt gets `attempt_timeout_ms` (an
 * attempt that runs out of it is retried too, if the overall deadline allows),
 * and attempts are `delay_ms` apart, +/-10% jitter (the official SDKs use
 * 100 ms). Ranges: max_attempts 1 .. 10; attempt_timeout_ms 1 .. 86,400,000;
 * delay_ms 0 .. 60,000 (0 = retry at once). A retry is made only if the
 * delay ends before the overall deadline.
 */
MOMENTO_EXPORT int momento_config_set_retry_fixed_timeout(momento_config *cfg,
                                                          uint32_t max_attempts,
                                                          uint32_t attempt_timeout_ms,
                                                          uint32_t delay_ms);
/* The SDKs' "no retry" strategy: every request makes one attempt. Same as
 * momento_config_set_retries(cfg, 1). */
MOMENTO_EXPORT int momento_config_set_retry_none(momento_config *cfg);
/*
 * The SDKs' exponential backoff with decorrelated jitter: the same RPCs and
 * statuses as above; the n-th retry (n = 1, 2, ...) waits a random time in
 * [b, 1.5 b] where b = min(initial_delay_us * 2^(n-1), max_backoff_us). The
 * JS SDK's defaults are 500 us and 8,000 us. `max_attempts` counts the first
 * try, 0 .. 100; 0 = no count limit (the SDK's way: retry until the
 * deadline). Ranges: initial_delay_us >= 1, max_backoff_us from
 * initial_delay_us to 60,000,000. A retry is made only if its delay ends
 * before the overall deadline.
 */
#define MOMENTO_BACKOFF_DEFAULT_INITIAL_US 500u
#define MOMENTO_BACKOFF_DEFAULT_MAX_US 8000u
MOMENTO_EXPORT int momento_config_set_retry_exponential(momento_config *cfg,
                                                        uint32_t max_attempts,
                                                        uint32_t initial_delay_us,
                                                        uint32_t max_backoff_us);
/*
 * Opt-in, as in the Go SDK: also retry an idempotent request that a server
 * answered DEADLINE_EXCEEDED (its own timeout, a proxy's), under whichever
 * strategy is set, while the request's own deadline allows. Off by default
 * (the SDKs' rule), as a server that timed out once may well again. A
 * request whose own deadline passed is never retried. Returns 0, or
 * MOMENTO_ERR_INVALID_ARGUMENT for a NULL `cfg`.
 */
MOMENTO_EXPORT int momento_config_set_retry_deadline_exceeded(momento_config *cfg, int enabled);
/*
 * The largest gRPC message the client sends or accepts, in bytes (the JS
 * SDK's withMaxMessageLength): MOMENTO_MIN_MESSAGE_BYTES ..
 * MOMENTO_MAX_MESSAGE_BYTES, default the maximum. A request past it fails
 * with MOMENTO_ERR_CLIENT_RESOURCE_EXHAUSTED before it is sent, and so does
 * a reply past it; nothing else changes. Returns 0, or
 * MOMENTO_ERR_INVALID_ARGUMENT with momento_refusal_reason().
 */
/*
 * A header sent with every request of clients made with `cfg` - and their
 * batches, coalesced RPCs and subscriptions, unlike a request's own
 * (momento_request_options.headers), which keep a request out of them:
 * tracing ids, a proxy's routing, momento-local's fault injection. The
 * rules of a request's headers apply (name 1 .. 64 bytes of a-z 0-9 - _ .,
 * none the library or gRPC sends; value at most 1024 printable ASCII
 * bytes); both are copied. At most MOMENTO_MAX_CLIENT_HEADERS. Returns 0,
 * or MOMENTO_ERR_INVALID_ARGUMENT with momento_refusal_reason().
 */
#define MOMENTO_MAX_CLIENT_HEADERS 8
MOMENTO_EXPORT int momento_config_add_header(momento_config *cfg, const char *name,
                                             const char *value);
#define MOMENTO_MIN_MESSAGE_BYTES 4096u
#define MOMENTO_MAX_MESSAGE_BYTES (10u * 1024 * 1024)
MOMENTO_EXPORT int momento_config_set_max_message_bytes(momento_config *cfg, uint32_t bytes);

/* Read concern, as the official SDKs name it: BALANCED (Momento's default)
 * may read a replica a moment behind a write; CONSISTENT reads what was
 * written before (sent as the `read-concern: consistent` header). */
typedef enum momento_read_concern {
    MOMENTO_READ_CONCERN_DEFAULT = 0, /* per request: the client's */
    MOMENTO_READ_BALANCED = 1,
    MOMENTO_READ_CONSISTENT = 2
} momento_read_concern;
/* The client's read concern: MOMENTO_READ_BALANCED (the default) or
 * MOMENTO_READ_CONSISTENT; a request's options may override it. Returns 0,
 * or MOMENTO_ERR_INVALID_ARGUMENT for another value (DEFAULT included). */
MOMENTO_EXPORT int momento_config_set_read_concern(momento_config *cfg,
                                                   momento_read_concern concern);

/*
 * Connection lifetime, the SDKs' answer to load balancers and frozen
 * serverless functions that drop idle connections silently: a channel that
 * carried no call for `max_idle_ms` (default MOMENTO_DEFAULT_MAX_IDLE_MS,
 * 4 minutes, under AWS NLB's 350 s idle timeout), or was opened more than
 * `max_client_age_ms` ago, is replaced by a new one before the next call
 * (calls already on the old one finish there). 0 turns either off;
 * max_client_age_ms 0 or 1,000 .. 86,400,000, max_idle_ms at most
 * 86,400,000. Returns 0 or MOMENTO_ERR_INVALID_ARGUMENT.
 */
#define MOMENTO_DEFAULT_MAX_IDLE_MS (4u * 60u * 1000u)
MOMENTO_EXPORT int momento_config_set_connection_lifetime(momento_config *cfg,
                                                          uint32_t max_idle_ms,
                                                          uint32_t max_client_age_ms);

/*
 * A cap on the requests a client has on the wire at once (the JS SDK's
 * maxConcurrentRequests): beyond it, requests wait in a queue, in order,
 * instead of failing; a queued request keeps its deadline, cancel token and
 * callback, and is called back MOMENTO_ERR_TIMEOUT / _CANCELLED / _CLOSED
 * if it ends before it leaves. Topic subscriptions do not count. 0 (the
 * default) = no cap; at most 1,000,000. Returns 0 or
 * MOMENTO_ERR_INVALID_ARGUMENT.
 */
MOMENTO_EXPORT int momento_config_set_max_concurrent_requests(momento_config *cfg, uint32_t max);

/*
 * The official SDKs' configuration presets (their "v1" values, which do not
 * change between releases; docs/api.md "Presets" lists every value):
 *  - LAPTOP: 5 s deadline, keepalive ping every 5 s (1 s to answer), 3
 *    attempts, 4 min max idle. The same as momento_config_new().
 *  - IN_REGION: as LAPTOP with a 1.1 s deadline.
 *  - IN_REGION_LOW_LATENCY: as LAPTOP with a 500 ms deadline.
 *  - LAMBDA: 1.1 s deadline, no keepalive pings (a frozen function cannot
 *    answer them), 4 min max idle.
 * Returns 0 with a new config in *ret (free it with momento_config_free()),
 * MOMENTO_ERR_INVALID_ARGUMENT (`ret` NULL or an unknown preset; *ret NULL)
 * or MOMENTO_ERR_NO_MEMORY. The config's setters may change it further.
 */
typedef enum momento_preset {
    MOMENTO_PRESET_LAPTOP = 1,
    MOMENTO_PRESET_IN_REGION = 2,
    MOMENTO_PRESET_IN_REGION_LOW_LATENCY = 3,
    MOMENTO_PRESET_LAMBDA = 4
} momento_preset;
MOMENTO_EXPORT int momento_config_new_preset(momento_config **ret, momento_preset preset);

/* Value compression, compatible with the JS SDK's compression extensions
 * (gzip and zstd streams, recognised on read by their magic bytes). */
typedef enum momento_compression {
    MOMENTO_COMPRESS_DEFAULT = 0, /* per request: the client's */
    MOMENTO_COMPRESS_NONE = 1,
    MOMENTO_COMPRESS_GZIP = 2,
    MOMENTO_COMPRESS_ZSTD = 3
} momento_compression;

/*
 * Value compression, in the formats of the JS SDK's compression extensions
 * (docs/api.md "Compression"). With `algo` MOMENTO_COMPRESS_GZIP or
 * MOMENTO_COMPRESS_ZSTD, every scalar write - set, the set_if family, set batches, a
 * coalescer's sets - sends its value compressed (a request's options may
 * choose another algorithm, or MOMENTO_COMPRESS_NONE for that request);
 * MOMENTO_COMPRESS_NONE (the default; DEFAULT means the same here) turns it
 * off. The item limits apply to the value as sent, compressed. `level` is
 * one of the JS SDK's three, mapped as it maps them (gzip / zstd):
 * MOMENTO_COMPRESS_LEVEL_BALANCED (6 / 3), _FASTEST (1 / 1), _SMALLEST
 * (9 / 9); or a raw level: gzip 1 .. 9, zstd 1 .. 22 (a raw level above
 * 9 is used as 9 when a request picks gzip). `level` is ignored with NONE.
 * Returns 0 or MOMENTO_ERR_INVALID_ARGUMENT.
 */
#define MOMENTO_COMPRESS_LEVEL_BALANCED 0
#define MOMENTO_COMPRESS_LEVEL_FASTEST (-1)
#define MOMENTO_COMPRESS_LEVEL_SMALLEST (-2)
MOMENTO_EXPORT int momento_config_set_compression(momento_config *cfg, momento_compression algo,
                                                  int level);
/*
 * Automatic decompression of read values: a get's, a get batch's (each
 * item) and a coalesced get's hit whose value starts with gzip's (1f 8b)
 * or zstd's (28 b5 2f fd) magic bytes is returned decompressed; other
 * values are returned as stored. A value with the magic bytes that does not
 * decompress, or would decompress to more than `max_bytes`, makes that
 * read (or batch item) MOMENTO_ERR_INVALID_ARGUMENT with a message saying
 * which. `max_bytes` also bounds one reply in total: the values of one get
 * batch (or of one GetBatch the adaptive batcher sent for many gets) are
 * decompressed in order until their sum would pass it, and each item after
 * that fails the same way ("... in total"). So no reply ever makes the
 * client allocate more than `max_bytes` for decompressed values (a `_sync`
 * call's copy of the result doubles that, while it is made). As in the JS
 * SDK, decompression is on by default exactly when the client compresses
 * (momento_config_set_compression()); this setter decides it explicitly.
 * `enabled` 0 or 1; `max_bytes` 1 .. MOMENTO_DECOMPRESS_MAX_BYTES, 0 =
 * MOMENTO_DECOMPRESS_DEFAULT_MAX_BYTES (the default). Decompression runs on
 * the completion thread. Returns 0 or MOMENTO_ERR_INVALID_ARGUMENT.
 */
#define MOMENTO_DECOMPRESS_DEFAULT_MAX_BYTES (64u * 1024 * 1024)
#define MOMENTO_DECOMPRESS_MAX_BYTES (1024u * 1024 * 1024)
MOMENTO_EXPORT int momento_config_set_decompression(momento_config *cfg, int enabled,
                                                    size_t max_bytes);

/*
 * Adaptive batching (docs/batching.md). Off by default (min_in_flight 0).
 * When on and the client already has `min_in_flight` RPCs in flight, new
 * gets and sets (plain and the coalescer's) wait in a queue instead of
 * starting their own RPC; when an RPC completes, or `linger_us` after the
 * first one queued if that comes first (0: no linger), and at the latest
 * the max wait after it (momento_config_set_batching_max_wait(), 1 ms by
 * default), the queued gets leave as GetBatch RPCs and the sets as
 * SetBatch RPCs, one per cache, at most `max_keys` keys and `max_bytes`
 * bytes of keys and values each. Below `min_in_flight` nothing changes:
 * plain Get and Set, no added latency. Each request keeps its own
 * callback, result, deadline and cancel token, and its own answer: one
 * whose batch answered it in a way that may be another key's doing (its
 * item failed, or the batch failed but for UNAVAILABLE, the credentials,
 * a cancel, the free or the deadline) is asked again alone, as a plain
 * call, and ends with that call's result (docs/batching.md "One key's
 * failure"). Ranges: min_in_flight 0 .. 100,000; linger_us 0 ..
 * MOMENTO_MAX_BATCH_LINGER_US; max_keys 2 .. 10,000; max_bytes 1024 ..
 * MOMENTO_MAX_BATCH_BYTES. Returns 0 or MOMENTO_ERR_INVALID_ARGUMENT.
 * A batch stays under Momento's 5 MiB request limit (a larger one is
 * refused with request_size_limit_exceeded): 4 MiB of keys and values
 * leaves room for the framing of 10,000 keys.
 */
#define MOMENTO_MAX_BATCH_LINGER_US 100000u
#define MOMENTO_MAX_BATCH_BYTES (4u * 1024 * 1024)
#define MOMENTO_BATCH_DEFAULT_MIN_IN_FLIGHT 16u
#define MOMENTO_BATCH_DEFAULT_MAX_KEYS 64u
#define MOMENTO_BATCH_DEFAULT_MAX_BYTES (1024u * 1024)
MOMENTO_EXPORT int momento_config_set_batching(momento_config *cfg, uint32_t min_in_flight,
                                               uint32_t linger_us, uint32_t max_keys,
                                               uint32_t max_bytes);
/*
 * The bound on a batched request's wait in the queue (docs/batching.md
 * "How long a request waits"): a request queued by adaptive batching
 * leaves, in a batch or alone, at most `max_wait_us` after the first
 * request of its queue was queued, however slow the RPCs in flight are -
 * they decide when the queue leaves only when they complete sooner. With
 * `linger_us` (momento_config_set_batching()) set too, the queue leaves at
 * the earlier of the two. 0 = no bound: the queue waits for a completion
 * or the linger (and each request at most for its deadline), as before
 * 0.3.0. At most MOMENTO_MAX_BATCH_LINGER_US; the default is
 * MOMENTO_BATCH_DEFAULT_MAX_WAIT_US, 1 ms. A request's own deadline still
 * ends it earlier if it comes first. Returns 0 or
 * MOMENTO_ERR_INVALID_ARGUMENT.
 */
#define MOMENTO_BATCH_DEFAULT_MAX_WAIT_US 1000u
MOMENTO_EXPORT int momento_config_set_batching_max_wait(momento_config *cfg,
                                                        uint32_t max_wait_us);

/*
 * Dispatch mode, for applications with an event loop of their own (libuv,
 * libevent, epoll; docs/threading.md): with momento_config_set_dispatch(cfg,
 * 1) the client's callbacks - requests', coalesced waiters', a listing's and
 * topic subscriptions' events - are not called on the client's completion
 * thread but queued, with their result or event copied, in the order they
 * completed, until the application calls momento_client_dispatch(). The
 * results they get are valid until they return, as in the default mode.
 * Blocking (_sync) calls work as always: they never wait for a dispatch.
 * Adapters: momento/adapters/libuv.h and libevent.h. Off by default.
 * Returns 0 or MOMENTO_ERR_INVALID_ARGUMENT.
 *
 * Every guarantee of the default mode holds: exactly one callback per
 * accepted request (with its error, a timeout, a cancellation or the
 * client's free), for every coalesced waiter too. Callbacks still queued
 * when momento_client_free() runs are run by it, on its thread, before it
 * returns; momento_client_free() may be called from a dispatched callback
 * (the dispatch running it releases the client when it returns: the
 * caller must not use the client after that dispatch). The metrics hook
 * (momento_config_set_metrics()) runs before each request's callback, one
 * call at a time per client (a lock of the client's keeps them apart), on
 * the completion thread when a request with an RPC of its own completes,
 * and on the dispatching thread, just before the callback, for the batched
 * and coalesced requests whose shared RPC's answer is delivered there
 * (momento/metrics.h says which runs where). If the library cannot
 * allocate the copy, it runs that callback on the completion thread
 * instead rather than lose it.
 */
MOMENTO_EXPORT int momento_config_set_dispatch(momento_config *cfg, int enabled);

/*
 * Callbacks on protosocket's I/O thread, for the lowest latency and CPU
 * per request when few are in flight: with
 * momento_config_set_io_thread_callbacks(cfg, 1), the callback of a get,
 * set or delete that protosocket carries (momento_config_set_transport())
 * runs on the transport's I/O thread ("momento-ps") as soon as its reply
 * is read, instead of on the completion thread after a hand-over: one
 * thread wake-up less per request (docs/performance.md). A request the
 * callback makes over protosocket is written by that thread at once.
 * Off by default; without protosocket it changes nothing. Returns 0 or
 * MOMENTO_ERR_INVALID_ARGUMENT.
 *
 * What the application gives up: the callbacks of one client no longer
 * run one at a time on one thread. Those of gRPC requests (every other
 * RPC, topic events, and those protosocket hands back to gRPC), of
 * requests ended by a client timer (a request delivered late at its
 * deadline, a coalesced waiter leaving at its own) and of requests
 * refused before reaching the wire still run on the completion thread,
 * and may run at the same time as a protosocket one: state the callbacks
 * share needs a lock. A slow callback holds up every protosocket reply of
 * the client. Everything else is as on the completion thread: exactly
 * one callback per accepted request; blocking calls of the same client
 * from a callback return MOMENTO_ERR_WOULD_DEADLOCK; momento_client_free()
 * may be called from one (the release finishes once the last request is
 * retired). The metrics hook runs just before each callback, on the same
 * thread, one call at a time per client (a lock of the client's keeps
 * them apart). In dispatch mode (momento_config_set_dispatch()) callbacks
 * run on the dispatching thread whatever this says: there protosocket's
 * I/O thread finishes its requests and queues their callbacks itself.
 */
MOMENTO_EXPORT int momento_config_set_io_thread_callbacks(momento_config *cfg, int enabled);

/*
 * Protosocket without its I/O thread, for an application whose event loop
 * is the client's dispatcher (dispatch mode, momento_config_set_dispatch()):
 * with momento_config_set_dispatch_io(cfg, 1), the protosocket connections
 * (momento_config_set_transport()) are read and written by
 * momento_client_dispatch() on the dispatching thread, and
 * momento_client_dispatch_fd() becomes readable when a reply, a deadline or
 * a request sent from another thread waits for it too, not only a queued
 * callback. A get, set or delete then crosses no thread of the library's:
 * the loop that sends it reads its reply and runs its callback (docs/
 * performance.md, "Protosocket on the dispatching thread"). A request sent
 * while the loop is not dispatching is written at once when a connection is
 * idle, at the next dispatch otherwise.
 *
 * What the application promises: to call momento_client_dispatch() whenever
 * the fd is readable, as dispatch mode asks anyway - protosocket's requests,
 * their deadlines included, move only then. The client's free and blocking
 * (_sync) calls do not depend on it: they work the connections themselves
 * while they wait, from any thread. gRPC's requests are carried as before,
 * on the completion thread. Without dispatch mode or protosocket it changes
 * nothing. Off by default. Returns 0 or MOMENTO_ERR_INVALID_ARGUMENT.
 */
MOMENTO_EXPORT int momento_config_set_dispatch_io(momento_config *cfg, int enabled);

/*
 * The near cache (docs/near-cache.md): hot keys answered inside the
 * process, within a staleness bound the application chooses. With
 * `max_bytes` > 0, a get (momento_get(), its _sync form, and
 * momento_coalescing_get()) of a key whose value this client read from
 * Momento, or wrote to it with momento_set() or its _sync form, less than
 * `max_staleness_ms` ago is answered from memory: HIT with that value,
 * or MISS when the read found none (misses are kept too). The age counts
 * from when the read or the write was sent, so a slow reply cannot
 * stretch the bound, and a value this client wrote with a TTL is never
 * answered past that TTL. Otherwise the get goes to Momento (coalesced
 * when made through a coalescer) and its answer is kept.
 *
 * Writes made through this client - set, delete, the conditional sets,
 * increments, TTL updates, batches, the coalescer's sets; a flush or
 * delete of the cache for all its keys - drop the key's entry when they
 * are submitted, and a read sent before such a write
 * never stores its answer after it: a client reads its own writes. A
 * momento_set() that succeeds then stores the value it wrote. Writes by
 * other clients or processes are seen once the bound has passed (or
 * sooner: momento_config_set_near_cache_invalidation()).
 *
 * Memory: keys, values and bookkeeping together stay within `max_bytes`;
 * entries not used lately make room (CLOCK), and once it is full a key is
 * kept only if read more often lately than the entry it would replace (a
 * frequency sketch), so keys read once cannot push out hot ones (a value
 * larger than an eighth of `max_bytes` is not kept). A near-cache answer still gets its
 * callback as any request does - on the completion thread, or queued in
 * dispatch mode, never inside the call that made the request - and the
 * metrics hook sees it with MOMENTO_METRICS_NEAR_CACHE (momento/metrics.h).
 * momento_get_sync(), which has no callback, returns it at once from the
 * calling thread (through the completion thread, as above, when the
 * client has a metrics hook or the request a group).
 * momento_request_options.no_near_cache makes one get bypass it; a
 * consistent read (MOMENTO_READ_CONSISTENT) always does.
 *
 * `max_bytes`: 0 = off (the default), else 4096 .. 1 TiB;
 * `max_staleness_ms`: 1 .. 3,600,000 (ignored when off). Returns 0 or
 * MOMENTO_ERR_INVALID_ARGUMENT.
 */
MOMENTO_EXPORT int momento_config_set_near_cache(momento_config *cfg, size_t max_bytes,
                                                 uint32_t max_staleness_ms);

/*
 * Invalidation of near caches across clients (docs/near-cache.md): clients
 * made from `cfg` publish the keys they write or delete to `topic` of
 * `cache` (a Momento topic; the cache must exist), and drop their near
 * cache's entries for the keys other such clients publish, so that writes
 * through libmomento are typically seen elsewhere within milliseconds
 * instead of at the staleness bound. A client without a near cache only
 * publishes. Keys written while a publish is on its way go together in the
 * next one (one publish in flight per client).
 *
 * It narrows staleness, it does not replace the bound: a message lost, the
 * subscription down or reconnecting (every entry is then dropped, and
 * again when it is back), a writer that does not publish (another SDK, the
 * console): entries then live out `max_staleness_ms`. A key is published
 * as its write is submitted, so a reader that hears of it and reads again
 * before the write has reached Momento (a write retried, or slow) may keep
 * the old value, up to the bound. The subscription's events run on the
 * completion thread in dispatch mode too.
 *
 * `cache` and `topic` as momento_topic_publish() takes them, both NULL to
 * turn it off (the default). Returns 0 or MOMENTO_ERR_INVALID_ARGUMENT
 * (momento_refusal_reason() says which). Like every setter, it acts on
 * clients created afterwards.
 */
MOMENTO_EXPORT int momento_config_set_near_cache_invalidation(momento_config *cfg,
                                                              const char *cache,
                                                              const char *topic);

/*
 * The metrics hook (momento/metrics.h says what it promises and what the
 * record holds): clients made from `cfg` call `fn(m, userdata)` once for
 * each request they accept (NULL fn: no hook, the default). `userdata` must
 * stay valid until every such client's momento_client_free() has returned.
 * Returns 0, or MOMENTO_ERR_INVALID_ARGUMENT for a NULL cfg. Like every
 * setter, it acts on clients created afterwards.
 */
typedef struct momento_request_metrics momento_request_metrics;
typedef void (*momento_metrics_fn)(const momento_request_metrics *m, void *userdata);
MOMENTO_EXPORT int momento_config_set_metrics(momento_config *cfg, momento_metrics_fn fn,
                                              void *userdata);

/* Getters; each returns 0 for a NULL `cfg`. */
MOMENTO_EXPORT uint32_t momento_config_timeout_ms(const momento_config *cfg);
MOMENTO_EXPORT uint64_t momento_config_default_ttl_ms(const momento_config *cfg);
MOMENTO_EXPORT uint32_t momento_config_num_channels(const momento_config *cfg);
MOMENTO_EXPORT uint32_t momento_config_stream_channels(const momento_config *cfg);
MOMENTO_EXPORT uint32_t momento_config_keepalive_ms(const momento_config *cfg);
MOMENTO_EXPORT uint32_t momento_config_max_idle_ms(const momento_config *cfg);
/* The read concern set (MOMENTO_READ_BALANCED unless changed). */
MOMENTO_EXPORT momento_read_concern momento_config_read_concern(const momento_config *cfg);

/* ------------------------------------------------------------- credentials */

typedef struct momento_credentials momento_credentials;

/*
 * Credentials from an API key (docs/protocol.md "Credentials and key
 * formats"). Three forms are understood:
 *  - a current key (a JWT with claim "t":"g"): `endpoint` is required;
 *  - a v1 key: base64 of {"api_key": ..., "endpoint": ...};
 *  - a legacy token: a JWT whose claims "c" and "cp" name the cache and
 *    control hosts (reached at <c>:443 and <cp>:443).
 * A key with a '.' is read as a JWT, any other as a v1 key. The "t" claim is
 * not checked: any JWT without both "c" and "cp" needs `endpoint`.
 * A non-NULL `endpoint` (a base endpoint such as
 * "cell-4-us-west-2-1.prod.a.momentohq.com") overrides what the key carries;
 * data calls then go to cache.<endpoint>:443 and control calls to
 * control.<endpoint>:443, over TLS (the system's roots unless the config
 * names a roots file).
 *
 * Returns 0, MOMENTO_ERR_NO_MEMORY, or MOMENTO_ERR_INVALID_ARGUMENT when
 * `ret` or `api_key` is NULL, the key is empty or has whitespace, control or
 * non-ASCII characters, `endpoint` is not a bare host name (letters, digits,
 * '-' and '.', at most 253 bytes), the key does not parse as any of the three
 * forms or the host names it carries are invalid, a v1 key's "api_key"
 * holds a control or non-ASCII character (the token travels as a header),
 * or no endpoint can be found. On failure `*ret` is untouched and
 * momento_refusal_reason() names what is wrong (never with any part of the
 * key), as for every other refusal; after a success it is "".
 *
 * Not for a local server: `endpoint` is a host name without a port, and a
 * key that momento-local's token service issued names no Momento endpoint.
 * Use momento_credentials_local_with_key() (tokens.h) for those keys, or
 * momento_credentials_from_env() with MOMENTO_ENDPOINT=host:port.
 */
MOMENTO_EXPORT int momento_credentials_from_api_key(momento_credentials **ret, const char *api_key,
                                                    const char *endpoint);

/*
 * As momento_credentials_from_api_key() with the key from environment
 * variable MOMENTO_API_KEY and the endpoint from MOMENTO_ENDPOINT (optional
 * for keys that carry their endpoint; set but empty counts as unset).
 * Returns as momento_credentials_from_api_key(), and
 * MOMENTO_ERR_INVALID_ARGUMENT when MOMENTO_API_KEY is unset or empty.
 *
 * A local server: a MOMENTO_ENDPOINT of the form host:port on this machine
 * ("127.0.0.1:8080", "localhost:8080", "[::1]:8080") gives the credentials
 * of momento_credentials_local_with_key() for it (plaintext, both planes
 * there), sending MOMENTO_API_KEY's token if it is set (a server started
 * with --auth-token needs it) and none otherwise. A host:port elsewhere is
 * refused (MOMENTO_ERR_INVALID_ARGUMENT): Momento's endpoints are host names
 * without a port, and a plaintext key must not cross a network; use
 * momento_credentials_local() or _with_endpoints() in code for those.
 *
 * Reads the environment: not safe against concurrent setenv().
 */
MOMENTO_EXPORT int momento_credentials_from_env(momento_credentials **ret);

/*
 * Credentials for a local server: "host:port" ("[::1]:8080" for IPv6), both
 * planes at that address, plaintext HTTP/2, empty token. Returns 0,
 * MOMENTO_ERR_NO_MEMORY, or MOMENTO_ERR_INVALID_ARGUMENT when `ret` or
 * `host_port` is NULL or `host_port` is not host:port (empty host, a space or
 * '/' in it, an IPv6 address without brackets, a missing or non-numeric port,
 * a port outside 1 .. 65535). The host is not resolved here.
 * momento_refusal_reason() as for momento_credentials_from_api_key().
 */
MOMENTO_EXPORT int momento_credentials_local(momento_credentials **ret, const char *host_port);

/*
 * Credentials for explicit endpoints ("host:port" each), over TLS, sending
 * `token` (may be "") as the authorization header: for proxies, private
 * deployments and TLS tests. Returns 0, MOMENTO_ERR_NO_MEMORY, or
 * MOMENTO_ERR_INVALID_ARGUMENT when an argument is NULL, an endpoint is not
 * host:port (as for momento_credentials_local()), or `token` has a control or
 * non-ASCII character. momento_refusal_reason() as for
 * momento_credentials_from_api_key().
 */
MOMENTO_EXPORT int momento_credentials_with_endpoints(momento_credentials **ret, const char *token,
                                                      const char *cache_host_port,
                                                      const char *control_host_port);

MOMENTO_EXPORT void momento_credentials_free(momento_credentials *creds);

/*
 * Puts `prefix` before the endpoints made from a base endpoint (a v1 key's,
 * or the `endpoint` of momento_credentials_from_api_key()), as the SDKs'
 * endpointPrefix: <prefix>.cache.<base>:443, <prefix>.control.<base>:443
 * and <prefix>.token.<base>:443 (a private endpoint's names). Call it
 * before making a client with `creds`; a second call replaces the first.
 * Returns 0, or MOMENTO_ERR_INVALID_ARGUMENT (NULL; `prefix` not one DNS
 * label of 1 to 63 letters, digits or '-'; credentials whose endpoints were
 * named one by one: local, with_endpoints, legacy keys) or
 * MOMENTO_ERR_NO_MEMORY, with momento_refusal_reason(); `creds` is
 * unchanged then. Not thread-safe for the same `creds`.
 */
MOMENTO_EXPORT int momento_credentials_set_endpoint_prefix(momento_credentials *creds,
                                                           const char *prefix);

/* The gRPC targets these credentials lead to ("host:port"); never NULL
 * ("" for NULL `creds`). */
MOMENTO_EXPORT const char *momento_credentials_cache_endpoint(const momento_credentials *creds);
MOMENTO_EXPORT const char *momento_credentials_control_endpoint(const momento_credentials *creds);
/* 1 when calls use TLS, 0 for plaintext (local) endpoints and NULL. */
MOMENTO_EXPORT int momento_credentials_uses_tls(const momento_credentials *creds);

/* ------------------------------------------------------------------ result */

typedef struct momento_result momento_result;

/* What a successful (error == MOMENTO_OK) request found. */
typedef enum momento_outcome {
    MOMENTO_OUTCOME_ERROR = 0,     /* the request failed; see momento_result_error() */
    MOMENTO_OUTCOME_SUCCESS = 1,   /* set, delete, flush, delete cache, ping, list */
    MOMENTO_OUTCOME_HIT = 2,       /* get found the key */
    MOMENTO_OUTCOME_MISS = 3,      /* get did not */
    MOMENTO_OUTCOME_CREATED = 4,   /* create cache made a new cache */
    MOMENTO_OUTCOME_ALREADY_EXISTS = 5, /* create cache found it there already */
    MOMENTO_OUTCOME_STORED = 6,    /* a conditional set's condition held: written */
    MOMENTO_OUTCOME_NOT_STORED = 7, /* ...did not hold: nothing written */
    MOMENTO_OUTCOME_TTL_UPDATED = 8, /* a TTL update applied */
    MOMENTO_OUTCOME_TTL_NOT_UPDATED = 9 /* a TTL increase/decrease did not apply */
} momento_outcome;

/*
 * The getters below read a result, and each accepts NULL `r` (what a
 * blocking call leaves in `*ret` when it cannot even start: a NULL client,
 * a call from the client's own callback): it then answers as for a failed
 * request. For NULL: momento_result_error() gives
 * MOMENTO_ERR_INVALID_ARGUMENT, momento_result_outcome()
 * MOMENTO_OUTCOME_ERROR, momento_result_grpc_status() -1,
 * momento_result_message() "", momento_result_attempts() 0,
 * momento_result_error_detail() NULL, momento_result_limit_kind()
 * MOMENTO_LIMIT_NONE, momento_result_is_hit() 0, momento_result_value() and
 * momento_result_hash() NULL with *ret_len = 0, momento_result_int() and
 * momento_result_ttl_ms() 0, momento_result_item_type()
 * MOMENTO_ITEM_TYPE_NONE, the counts 0, momento_result_exists() -1, and
 * momento_result_item() and momento_result_cache_name() NULL.
 * momento_result_free(NULL) does nothing.
 */

/* MOMENTO_OK or the request's negative momento_error. */
MOMENTO_EXPORT int momento_result_error(const momento_result *r);
MOMENTO_EXPORT momento_outcome momento_result_outcome(const momento_result *r);
/* The outcome's name without its prefix ("HIT", "NOT_STORED", ...), for
 * logs and messages; "UNRECOGNISED" for a value outside the enum. Static,
 * never NULL; any thread. */
MOMENTO_EXPORT const char *momento_outcome_name(momento_outcome o);
/* The raw gRPC status code, or -1 when the request never reached gRPC. */
MOMENTO_EXPORT int momento_result_grpc_status(const momento_result *r);
/* The server's status message or a local explanation; "" when none. */
MOMENTO_EXPORT const char *momento_result_message(const momento_result *r);
/* How many attempts the request took (1 when not retried; 0 when it never
 * reached gRPC). */
MOMENTO_EXPORT int momento_result_attempts(const momento_result *r);
/* The server's `err` trailer (e.g. "item_size_limit_exceeded"), or NULL. */
MOMENTO_EXPORT const char *momento_result_error_detail(const momento_result *r);
/* One entry of a reply's metadata: bytes and lengths, since a binary
 * entry's value (a name ending in "-bin") may hold any byte; names are
 * lower case. Borrowed from the result it came from. */
typedef struct momento_metadata {
    const char *name;
    size_t name_len;
    const uint8_t *value;
    size_t value_len;
} momento_metadata;
/* The trailing metadata of the reply the result came from (its last
 * attempt's), as the SDKs' middleware sees it: how many entries, and the
 * i-th in the order they came (NULL when out of range). Every waiter of a
 * coalesced request and every item of a batch sees its shared RPC's.
 * None for a result that never reached the wire. momento_result_dup()
 * copies them. In the metrics hook, read them through its `result`. */
MOMENTO_EXPORT size_t momento_result_trailer_count(const momento_result *r);
MOMENTO_EXPORT const momento_metadata *momento_result_trailer(const momento_result *r, size_t i);
/* For a MOMENTO_ERR_LIMIT_EXCEEDED result, the limit it hit (from the `err`
 * trailer, else the message; see momento_limit_kind); MOMENTO_LIMIT_NONE for
 * any other result and for NULL. */
MOMENTO_EXPORT momento_limit_kind momento_result_limit_kind(const momento_result *r);
/* 1 when the outcome is HIT (a get, item get TTL or item get type that found
 * the key; a collection read that found the collection, collections.h),
 * else 0. Check it before momento_result_int() of a length or rank, which
 * is 0 for a MISS too. */
MOMENTO_EXPORT int momento_result_is_hit(const momento_result *r);
/*
 * The value of a get hit; any other HIT (item TTL, item type) gives an empty
 * value ("" with *ret_len = 0); any other outcome NULL with *ret_len = 0.
 * Borrowed from `r`: valid until the callback returns, or until
 * momento_result_free().
 */
MOMENTO_EXPORT const void *momento_result_value(const momento_result *r, size_t *ret_len);
/*
 * The server's hash of a value: of the value found by a get with hash (HIT),
 * or of the value just written by a set with hash or a hash-conditional set
 * (STORED). Opaque bytes (momento-local's are 32, a SHA-256 digest; Momento's
 * service may differ): compare them as bytes, or pass them back as the
 * `compare` of a hash condition. Any other result, and NULL `r`, gives NULL
 * with *ret_len = 0. `ret_len` may be NULL. Borrowed from `r` as
 * momento_result_value() is.
 */
MOMENTO_EXPORT const void *momento_result_hash(const momento_result *r, size_t *ret_len);
/* Increment: the value after the increment (0 for other results). */
MOMENTO_EXPORT int64_t momento_result_int(const momento_result *r);
/* Item get TTL: the remaining milliseconds of a HIT (0 otherwise). */
MOMENTO_EXPORT uint64_t momento_result_ttl_ms(const momento_result *r);
/* What an item get type found; the values are this library's own (the
 * wire numbers the types differently). */
typedef enum momento_item_type {
    MOMENTO_ITEM_TYPE_NONE = 0,       /* not a HIT of momento_item_get_type() */
    MOMENTO_ITEM_TYPE_SCALAR = 1,     /* a plain key/value item */
    MOMENTO_ITEM_TYPE_DICTIONARY = 2,
    MOMENTO_ITEM_TYPE_SET = 3,
    MOMENTO_ITEM_TYPE_LIST = 4,
    MOMENTO_ITEM_TYPE_SORTED_SET = 5
} momento_item_type;
/* Item get type: the type of a HIT (MOMENTO_ITEM_TYPE_NONE otherwise). */
MOMENTO_EXPORT momento_item_type momento_result_item_type(const momento_result *r);
/* Keys exist: how many answers (one per requested key, in order), and the
 * i-th: 1 exists, 0 does not, -1 when i is out of range. */
MOMENTO_EXPORT size_t momento_result_exists_count(const momento_result *r);
MOMENTO_EXPORT int momento_result_exists(const momento_result *r, size_t i);
/* Get/set batch: how many per-key results (in request order), and the i-th
 * (NULL when out of range). Each item has its own outcome (HIT/MISS for gets,
 * SUCCESS for sets) and value; it is part of `r` and shares its lifetime. */
MOMENTO_EXPORT size_t momento_result_item_count(const momento_result *r);
MOMENTO_EXPORT const momento_result *momento_result_item(const momento_result *r, size_t i);
/* List caches: how many names, and the i-th (NULL when i is out of range). */
MOMENTO_EXPORT size_t momento_result_cache_count(const momento_result *r);
MOMENTO_EXPORT const char *momento_result_cache_name(const momento_result *r, size_t i);
/* The limits ListCaches reports for a cache; a field is 0 when the server
 * did not report it. Fields are only ever appended. */
typedef struct momento_cache_limits {
    uint32_t max_traffic_rate;            /* operations per second */
    uint32_t max_throughput_kbps;         /* KiB per second */
    uint32_t max_item_size_kb;            /* KiB */
    uint64_t max_ttl_seconds;
    uint32_t max_publish_rate;            /* topic publishes per second */
    uint32_t max_subscription_count;      /* topic subscriptions at once */
    uint32_t max_publish_message_size_kb; /* KiB */
} momento_cache_limits;
/* The i-th cache's limits (the cache momento_result_cache_name() names at
 * i), part of `r` and sharing its lifetime; NULL when i is out of range. */
MOMENTO_EXPORT const momento_cache_limits *momento_result_cache_limits(const momento_result *r,
                                                                       size_t i);

/*
 * An owned deep copy of `r`, to keep beyond a callback. Returns 0,
 * MOMENTO_ERR_NO_MEMORY, or MOMENTO_ERR_INVALID_ARGUMENT when `r` or `ret` is
 * NULL.
 */
MOMENTO_EXPORT int momento_result_dup(const momento_result *r, momento_result **ret);
/* Frees a result returned by a blocking call or momento_result_dup(). */
MOMENTO_EXPORT void momento_result_free(momento_result *r);

/* ------------------------------------------------------------------ client */

typedef struct momento_client momento_client;

/*
 * Called exactly once per accepted request, on the client's completion
 * thread. `r` is borrowed until the function returns.
 */
typedef void (*momento_callback)(const momento_result *r, void *userdata);

/*
 * A client: channels to both planes and one completion thread. `cfg` and
 * `creds` are copied (NULL cfg = defaults). Returns 0,
 * MOMENTO_ERR_INVALID_ARGUMENT (`ret` or `creds` NULL), MOMENTO_ERR_NO_MEMORY
 * (also when gRPC could not create a channel or completion queue, or the
 * thread could not start), or MOMENTO_ERR_CONNECTION when an eager
 * connection failed (momento_config_set_eager_connect()).
 */
MOMENTO_EXPORT int momento_client_new(momento_client **ret, const momento_config *cfg,
                                      const momento_credentials *creds);

/*
 * Frees the client, waiting for every callback. From its start new requests
 * are refused with MOMENTO_ERR_CLOSED; every request in flight is cancelled
 * (retries waiting for their delay included), and each still gets its one
 * callback - with MOMENTO_ERR_CANCELLED, or with its real result if that had
 * already arrived. Only when the last callback has returned is the client
 * released and this function returns. Called from a callback of this client
 * it cannot wait: it returns at once, and the release is deferred until that
 * callback and the remaining ones have run. Callbacks still to run may use
 * the client (and get MOMENTO_ERR_CLOSED); nothing else may use it once this
 * is called. A second call while the first is under way is ignored.
 * NULL-safe.
 *
 * Compare momento_coalescer_free() (coalescer.h), which does not wait.
 */
MOMENTO_EXPORT void momento_client_free(momento_client *c);

/*
 * Adaptive batching's counters since the client was created
 * (momento_config_set_batching()). Fields are only appended: pass
 * sizeof(momento_client_batching_stats).
 */
typedef struct momento_client_batching_stats {
    uint64_t queued;            /* requests that waited in the queue */
    uint64_t batches;           /* GetBatch and SetBatch RPCs sent from it */
    uint64_t batched_keys;      /* requests that left in those */
    uint64_t sent_alone;        /* queued requests that left alone, as plain Get/Set */
    uint64_t left_queue;        /* called back while queued: deadline or cancel */
    uint64_t keys_per_batch[8]; /* histogram: 2, 3-4, 5-8, 9-16, 17-32, 33-64, 65-128, more */
    uint64_t queued_ns_total;   /* time spent queued, summed over requests that left it */
    uint64_t queued_ns_max;
    /* Appended in 0.3.0. Requests asked again alone, as plain calls,
     * because their batch's answer for them may have been another key's
     * doing (docs/batching.md "One key's failure"). */
    uint64_t asked_alone;
    /* Times the queue left because its oldest request had waited the
     * bound (momento_config_set_batching_max_wait()) with no RPC
     * completing: a sign the RPCs in flight are slow. */
    uint64_t wait_bound_reached;
} momento_client_batching_stats;
/* The client's batching counters: fills *ret (at most `size` bytes). Returns
 * 0, or MOMENTO_ERR_INVALID_ARGUMENT when `c` or `ret` is NULL. Any thread. */
MOMENTO_EXPORT int momento_client_batching_stats_get(const momento_client *c,
                                                     momento_client_batching_stats *ret,
                                                     size_t size);

/* The near cache's counters (momento_config_set_near_cache()); all 0 when
 * it is off. Fields are only appended: pass sizeof(momento_near_cache_stats). */
typedef struct momento_near_cache_stats {
    uint64_t hits;      /* gets answered from memory with a value */
    uint64_t miss_hits; /* gets answered from memory with a kept MISS */
    uint64_t misses;    /* gets that looked and went to Momento */
    uint64_t bypassed;  /* gets with no_near_cache */
    uint64_t fills;     /* entries stored from a read's answer or a set */
    uint64_t stale;     /* answers not stored: they came back past the bound,
                         * or a write of the key was submitted meanwhile */
    uint64_t dropped;   /* entries dropped by this client's writes */
    uint64_t expired;   /* entries found past their bound and dropped */
    uint64_t evictions; /* entries dropped to make room */
    uint64_t entries;   /* held now */
    uint64_t bytes;     /* held now: keys, values and bookkeeping */
    /* Invalidation across clients (momento_config_set_near_cache_
     * invalidation()); 0 without it. */
    uint64_t invalidated;    /* entries dropped on keys other clients published */
    uint64_t resets;         /* times every entry was dropped: the topic's stream
                              * connected, broke or skipped items, or a message
                              * on it was not one of ours */
    uint64_t keys_published; /* this client's written keys sent to the topic */
    uint64_t publishes;      /* messages sent: keys written while one is on
                              * its way go together in the next */
    uint64_t publish_errors; /* publishes that failed: their keys' entries in
                              * other clients live out their bound */
    uint64_t keys_heard;     /* keys other clients published, received */
    uint64_t subscribed;     /* 1 while the invalidation topic's stream is up */
    uint64_t rejected;       /* answers not kept: the cache full, and the key read
                              * no more often lately than the entry it would
                              * replace (the frequency sketch) */
    uint64_t refreshes;      /* entries read in the last quarter of their bound,
                              * fetched again in the background while they
                              * still answered (their readers never wait on
                              * the refill) */
} momento_near_cache_stats;
/* Fills *ret (at most `size` bytes). Returns 0, or
 * MOMENTO_ERR_INVALID_ARGUMENT when `c` or `ret` is NULL. Any thread. */
MOMENTO_EXPORT int momento_client_near_cache_stats_get(const momento_client *c,
                                                       momento_near_cache_stats *ret, size_t size);

/*
 * The application's requests accepted and not yet finished: each is counted
 * from the moment its call returns 0 until its callback has returned (a
 * blocking call: until it has its result, before it returns) - so a
 * callback sees its own request counted, and once the last callback has
 * returned the count is 0, exactly. One per
 * request: each coalesced waiter, each request in the batching queue, each
 * callback queued for dispatch counts once; the RPCs the library makes for
 * them (a shared RPC, a batch, a listing's pages) and topic subscriptions
 * do not. 0 for NULL. Any thread. To count only some requests (a thread's
 * own), see momento_request_group_new().
 */
MOMENTO_EXPORT size_t momento_client_in_flight(const momento_client *c);
/*
 * Waits until momento_client_in_flight(c) is 0 - every request accepted so
 * far, its coalescers' included, has had its callback return - or
 * `timeout_ms` (at most 86,400,000) has passed. Requests submitted meanwhile
 * (from callbacks too) are waited for as well. In dispatch mode it runs the
 * queued callbacks on the calling thread while it waits (as
 * momento_client_dispatch() does; none of them may free the client).
 * Returns 0, MOMENTO_ERR_TIMEOUT, MOMENTO_ERR_INVALID_ARGUMENT (NULL,
 * timeout out of range) or MOMENTO_ERR_WOULD_DEADLOCK from one of the
 * client's callbacks (the requests it would wait for include its own).
 */
MOMENTO_EXPORT int momento_client_wait_idle(momento_client *c, uint32_t timeout_ms);

/*
 * The client's eventfd (Linux), in dispatch mode (momento_config_set_dispatch()
 * above says what it changes): readable while callbacks wait for
 * momento_client_dispatch(). With momento_config_set_dispatch_io() and
 * protosocket it is an epoll descriptor instead, readable also while
 * protosocket's connections have work for the dispatch. Watch it for
 * reading in your loop; do not read, write or close it. MOMENTO_ERR_INVALID_ARGUMENT for NULL or a client not
 * in dispatch mode.
 */
MOMENTO_EXPORT int momento_client_dispatch_fd(const momento_client *c);
/*
 * Runs queued callbacks on the calling thread, oldest first: at most `max`
 * (0 = until the queue is empty, including callbacks queued meanwhile).
 * Returns how many ran, or MOMENTO_ERR_INVALID_ARGUMENT (NULL, or not in
 * dispatch mode). Any thread, one at a time per client, and never
 * concurrently with momento_client_free() from another thread; it may be
 * called from a dispatched callback. When it stops at `max` with more
 * queued, the fd stays readable. When a callback it runs frees the client,
 * it runs every callback still queued (past `max`), releases the client
 * and counts them all.
 */
MOMENTO_EXPORT int momento_client_dispatch(momento_client *c, size_t max);

/* ------------------------------------------------------ per-request options */

/*
 * A cancel token, in the style of JS's AbortSignal or Go's context: the
 * application creates one, gives it to any number of requests (on any
 * clients and coalescers), and cancels them all with one momento_cancel().
 *
 * Lifetime: reference counted. momento_cancel_token_new() returns the
 * caller's reference; every request accepted with the token holds its own
 * until its callback has returned. The caller may therefore drop its
 * reference (momento_cancel_token_free()) as soon as it has submitted, or
 * keep it to cancel later; momento_cancel_token_ref() takes another one
 * (for a second thread that may cancel). All of these, and momento_cancel(),
 * may be called from any thread, including from inside a callback.
 */
typedef struct momento_cancel_token momento_cancel_token;

/* Returns 0, MOMENTO_ERR_INVALID_ARGUMENT (`ret` NULL) or
 * MOMENTO_ERR_NO_MEMORY. */
MOMENTO_EXPORT int momento_cancel_token_new(momento_cancel_token **ret);
/* Takes one more reference and returns `t` (NULL-safe). */
MOMENTO_EXPORT momento_cancel_token *momento_cancel_token_ref(momento_cancel_token *t);
/* Drops one reference; the token is freed with the last. NULL-safe. */
MOMENTO_EXPORT void momento_cancel_token_free(momento_cancel_token *t);
/*
 * Cancels the token, once and for good (later calls do nothing). Every
 * request holding it that has not completed gets its one callback with
 * MOMENTO_ERR_CANCELLED promptly (its gRPC call is cancelled on the wire; a
 * coalesced waiter leaves its shared RPC, docs/coalescing.md), unless its
 * result had already arrived: then it gets that result - never both, never
 * neither. A cancelled request is not retried. A request submitted with a
 * token already cancelled is refused: MOMENTO_ERR_CANCELLED, no callback.
 * The caller must hold a reference. NULL-safe.
 */
MOMENTO_EXPORT void momento_cancel(momento_cancel_token *t);
/* 1 once momento_cancel() has been called on `t`, else 0 (also for NULL). */
MOMENTO_EXPORT int momento_cancel_token_is_cancelled(const momento_cancel_token *t);

/* A request group (below): a count of some of the application's requests. */
typedef struct momento_request_group momento_request_group;

/*
 * Request groups: waiting for some of the application's requests - a
 * thread's own, one job's - where momento_client_wait_idle() waits for
 * every request of the client, other threads' included (libcurl's multi
 * handle plays this part for curl). A request joins the group its options
 * name (momento_request_options.group, below) and is counted exactly as
 * momento_client_in_flight() counts it: from the moment its call returns 0
 * until its callback has returned (a blocking call: until it has its
 * result), once per request - a coalesced waiter, a request in the
 * batching queue or behind momento_config_set_max_concurrent_requests()'s
 * cap, a callback queued for dispatch each count once, a listing once
 * however many pages it takes; the RPCs the library makes for them do not.
 * A group belongs to the client it was made for, and to that client's
 * coalescers: a request of another client naming it is refused with
 * MOMENTO_ERR_INVALID_ARGUMENT and a momento_refusal_reason().
 *
 * momento_request_group_new() creates an empty group of `c`'s requests.
 * `c` is not copied: the group may be waited on only while `c` exists
 * (freed and read with _in_flight() also after). Returns 0,
 * MOMENTO_ERR_INVALID_ARGUMENT (`c` or `ret` NULL; *ret untouched) or
 * MOMENTO_ERR_NO_MEMORY.
 *
 * momento_request_group_free() drops the caller's reference. Groups are
 * reference counted, as cancel tokens are: each request counted holds a
 * reference until its callback has returned, so the group may be freed
 * with requests still in flight (their callbacks still run; it goes with
 * the last). NULL-safe.
 *
 * momento_request_group_in_flight() returns the group's requests accepted
 * and not yet finished; 0 for NULL.
 *
 * momento_request_group_wait() waits until that count is 0 - every request
 * of the group accepted so far has finished - or `timeout_ms` (at most
 * 86,400,000) has passed; the client's other requests are not waited for.
 * Requests added to the group meanwhile (from callbacks too) are waited
 * for as well. As momento_client_wait_idle(), which it mirrors, in
 * dispatch mode it runs the client's queued callbacks on the calling
 * thread while it waits - every group's, in order, as
 * momento_client_dispatch() does (so one thread at a time per client, and
 * none of them may free the client). Returns 0, MOMENTO_ERR_TIMEOUT,
 * MOMENTO_ERR_INVALID_ARGUMENT (NULL, timeout out of range) or
 * MOMENTO_ERR_WOULD_DEADLOCK from one of the client's callbacks (their
 * thread is the one that ends the group's requests).
 *
 * Each may be called from any thread.
 */
MOMENTO_EXPORT int momento_request_group_new(momento_client *c, momento_request_group **ret);
MOMENTO_EXPORT void momento_request_group_free(momento_request_group *g);
MOMENTO_EXPORT size_t momento_request_group_in_flight(const momento_request_group *g);
MOMENTO_EXPORT int momento_request_group_wait(momento_request_group *g, uint32_t timeout_ms);

/*
 * Options for one request, the last argument before the callback of every
 * async call (before `ret` in blocking calls). NULL means the client's
 * defaults. The struct is read during the call and not kept (the token is
 * referenced, see above), so it may live on the stack and be reused.
 *
 * Initialise it with MOMENTO_REQUEST_OPTIONS_INIT or take a pointer from
 * MOMENTO_REQUEST_OPTIONS(...) (both below): `size` tells the library
 * which fields the program knows, so fields can be appended without breaking
 * programs built against an older header (the openat2() rule). A `size`
 * below that of the first version, or a larger one whose unknown tail is not
 * all zero, is refused with MOMENTO_ERR_INVALID_ARGUMENT.
 */
typedef struct momento_request_options {
    size_t size;            /* sizeof(momento_request_options) */
    /* The request's deadline, counted from the call: the whole request,
     * retries included, ends by then (MOMENTO_ERR_TIMEOUT). 0 = the
     * client's (momento_config_set_timeout_ms()); at most 86,400,000. */
    uint32_t timeout_ms;
    /* Cancels the request when cancelled; NULL = none. */
    momento_cancel_token *cancel;
    /* Appended after the first version: a smaller `size` leaves them 0. */
    /* Reads: MOMENTO_READ_CONCERN_DEFAULT (0) = the client's
     * (momento_config_set_read_concern()). Other requests ignore it. Like
     * every momento enum, an int in size under the platform's C ABI (it
     * was declared `int` before 0.2.0's release: the layout is the same). */
    momento_read_concern read_concern;
    /* Scalar writes (set, set_if and its named forms, set_with_hash, set
     * batches, the coalescer's sets): MOMENTO_COMPRESS_DEFAULT (0) = the
     * client's (momento_config_set_compression()). Reads ignore it: whether
     * they decompress is the client's setting. int-sized, as read_concern. */
    momento_compression compression;
    /* Extra request headers (gRPC metadata) sent with this request and its
     * retries: tracing ids, or momento-local's fault injection
     * (docs/server.md). `n_headers` at most MOMENTO_MAX_REQUEST_HEADERS;
     * each name 1 .. 64 bytes of a-z 0-9 - _ . and not one the library
     * sends itself (authorization, cache, agent, runtime-version,
     * read-concern) nor gRPC's (grpc-*, content-type, te, user-agent,
     * host); each value at most 1024 printable ASCII bytes. Copied at the
     * call. A request with headers is never batched nor coalesced (others'
     * requests would not carry them). */
    const struct momento_header *headers;
    size_t n_headers;
    /* Counts the request in this group (momento_request_group_new(), of the
     * same client); NULL = none. Referenced, as the token is. */
    momento_request_group *group;
    /* Gets: 1 = neither answered from nor stored in the near cache
     * (momento_config_set_near_cache()); 0 = the client's. */
    int no_near_cache;
} momento_request_options;

/* One request header (momento_request_options.headers): both strings are
 * NUL-terminated and read only during the call that takes them. */
typedef struct momento_header {
    const char *name;
    const char *value;
} momento_header;
#define MOMENTO_MAX_REQUEST_HEADERS 16

/*
 * Initialisers that name only `size`, so they never change as fields are
 * appended: every other field starts 0 (NULL), its default.
 *
 *   momento_request_options o = MOMENTO_REQUEST_OPTIONS_INIT;
 *   o.timeout_ms = 500;
 *
 * or, for one call, a pointer to options living until the end of the
 * enclosing block (a C99 compound literal; the arguments are designated
 * initializers):
 *
 *   momento_get(c, "cache", MOMENTO_STR("k"),
 *               MOMENTO_REQUEST_OPTIONS(.timeout_ms = 500, .cancel = tok), cb, ud);
 *
 * Both are C (designated initializers are C++20's; in older C++ zero the
 * struct and set `size`). Do not name `size` among the arguments.
 */
#define MOMENTO_REQUEST_OPTIONS_INIT {.size = sizeof(momento_request_options)}
#define MOMENTO_REQUEST_OPTIONS(...)                                                              \
    (&(const momento_request_options){.size = sizeof(momento_request_options), __VA_ARGS__})



/*
 * Data plane, async. Arguments: `cache` is a NUL-terminated name of 1..255
 * bytes of valid UTF-8 without control characters; keys are non-NULL and 1+
 * bytes; key + value at most MOMENTO_MAX_ITEM_BYTES; a value may be NULL only
 * with length 0; ttl_ms at most MOMENTO_MAX_TTL_MS, 0 = the config's default;
 * `opts` is NULL or as momento_request_options says.
 *
 * Every async call in this header (data and control plane) returns one of:
 *  - MOMENTO_OK: accepted; exactly one callback follows.
 *  - MOMENTO_ERR_INVALID_ARGUMENT: bad arguments - a NULL client or callback,
 *    a bad cache name, a NULL, empty or oversized key, a value too big, a TTL
 *    over MOMENTO_MAX_TTL_MS, bad request options, and the reasons listed
 *    by each function. Arguments are checked first, so this comes before
 *    the codes below.
 *  - MOMENTO_ERR_CANCELLED: the options' cancel token is already cancelled.
 *  - MOMENTO_ERR_CLOSED: the client is being freed (momento_client_free()).
 *  - MOMENTO_ERR_NO_MEMORY: an allocation failed, or gRPC could not create
 *    the call.
 *  - MOMENTO_ERR_UNKNOWN: gRPC refused to start the call: an internal
 *    failure, not a server answer.
 * A non-zero return means nothing was sent and the callback is never called.
 * Errors after acceptance (server statuses, timeouts, cancellation) arrive in
 * the callback's result instead.
 */
/* Reads the value stored at `key` in `cache`. Outcome HIT (value via
 * momento_result_value()) or MISS. */
MOMENTO_EXPORT int momento_get(momento_client *c, const char *cache, const void *key,
                               size_t key_len, const momento_request_options *opts,
                               momento_callback cb, void *userdata);
/* Stores `value` at `key` in `cache` for `ttl_ms` (0: the config's default
 * TTL). Outcome SUCCESS. */
MOMENTO_EXPORT int momento_set(momento_client *c, const char *cache, const void *key,
                               size_t key_len, const void *value, size_t value_len, uint64_t ttl_ms,
                               const momento_request_options *opts, momento_callback cb,
                               void *userdata);
/* Deletes `key` from `cache`. Arguments as momento_get(). Outcome SUCCESS;
 * deleting a missing key succeeds. */
MOMENTO_EXPORT int momento_delete(momento_client *c, const char *cache, const void *key,
                                  size_t key_len, const momento_request_options *opts,
                                  momento_callback cb, void *userdata);

/* Conditional writes, in official SDK terms. `compare` is the value the
 * condition tests against (ignored for ABSENT and PRESENT), or for the HASH
 * conditions the hash of a value, as momento_result_hash() gave it (the
 * server compares it with its hash of the stored value: the caller need not
 * hold the value itself). Outcome STORED or NOT_STORED; a STORED under a
 * hash condition also carries the new value's hash (momento_result_hash()).
 * A condition on the value or hash of a key that holds a collection fails
 * with MOMENTO_ERR_FAILED_PRECONDITION. Not retried on failure: a
 * conditional write is not idempotent. */
typedef enum momento_condition {
    MOMENTO_IF_ABSENT = 1,                 /* setIfAbsent, setIfNotExists */
    MOMENTO_IF_PRESENT = 2,                /* setIfPresent */
    MOMENTO_IF_EQUAL = 3,                  /* setIfEqual */
    MOMENTO_IF_NOT_EQUAL = 4,              /* setIfNotEqual (absent counts as not equal) */
    MOMENTO_IF_PRESENT_AND_NOT_EQUAL = 5,  /* setIfPresentAndNotEqual */
    MOMENTO_IF_ABSENT_OR_EQUAL = 6,        /* setIfAbsentOrEqual */
    MOMENTO_IF_PRESENT_AND_HASH_EQUAL = 7, /* setIfPresentAndHashEqual */
    MOMENTO_IF_PRESENT_AND_HASH_NOT_EQUAL = 8, /* setIfPresentAndHashNotEqual */
    MOMENTO_IF_ABSENT_OR_HASH_EQUAL = 9,   /* setIfAbsentOrHashEqual */
    MOMENTO_IF_ABSENT_OR_HASH_NOT_EQUAL = 10 /* setIfAbsentOrHashNotEqual */
} momento_condition;

/* Arguments as momento_set(), and MOMENTO_ERR_INVALID_ARGUMENT also for a
 * `condition` outside the enum and, for the conditions that compare (EQUAL,
 * NOT_EQUAL, PRESENT_AND_NOT_EQUAL, ABSENT_OR_EQUAL, the HASH ones), a NULL
 * `compare` with non-zero `compare_len` or a `compare_len` over
 * MOMENTO_MAX_ITEM_BYTES; for the HASH conditions also an empty `compare`
 * (no hash is empty). For the value conditions NULL with length 0 compares
 * against the empty value. The value conditions send SetIf, the hash ones
 * SetIfHash. */
MOMENTO_EXPORT int momento_set_if(momento_client *c, const char *cache, const void *key,
                                  size_t key_len, const void *value, size_t value_len,
                                  uint64_t ttl_ms, momento_condition condition, const void *compare,
                                  size_t compare_len, const momento_request_options *opts,
                                  momento_callback cb, void *userdata);
/* The same, one name per condition, as the official SDKs spell them; codes as
 * momento_set_if(), with `equal_to` / `not_equal_to` as its `compare`. */
MOMENTO_EXPORT int momento_set_if_absent(momento_client *c, const char *cache, const void *key,
                                         size_t key_len, const void *value, size_t value_len,
                                         uint64_t ttl_ms, const momento_request_options *opts,
                                         momento_callback cb, void *userdata);
/* Identical to momento_set_if_absent (official clients send SetIf + absent). */
MOMENTO_EXPORT int momento_set_if_not_exists(momento_client *c, const char *cache, const void *key,
                                             size_t key_len, const void *value, size_t value_len,
                                             uint64_t ttl_ms, const momento_request_options *opts,
                                             momento_callback cb, void *userdata);
MOMENTO_EXPORT int momento_set_if_present(momento_client *c, const char *cache, const void *key,
                                          size_t key_len, const void *value, size_t value_len,
                                          uint64_t ttl_ms, const momento_request_options *opts,
                                          momento_callback cb, void *userdata);
MOMENTO_EXPORT int momento_set_if_equal(momento_client *c, const char *cache, const void *key,
                                        size_t key_len, const void *value, size_t value_len,
                                        uint64_t ttl_ms, const void *equal_to, size_t equal_len,
                                        const momento_request_options *opts, momento_callback cb,
                                        void *userdata);
MOMENTO_EXPORT int momento_set_if_not_equal(momento_client *c, const char *cache, const void *key,
                                            size_t key_len, const void *value, size_t value_len,
                                            uint64_t ttl_ms, const void *not_equal_to,
                                            size_t not_equal_len,
                                            const momento_request_options *opts,
                                            momento_callback cb, void *userdata);
MOMENTO_EXPORT int momento_set_if_present_and_not_equal(
    momento_client *c, const char *cache, const void *key, size_t key_len, const void *value,
    size_t value_len, uint64_t ttl_ms, const void *not_equal_to, size_t not_equal_len,
    const momento_request_options *opts, momento_callback cb, void *userdata);
MOMENTO_EXPORT int momento_set_if_absent_or_equal(
    momento_client *c, const char *cache, const void *key, size_t key_len, const void *value,
    size_t value_len, uint64_t ttl_ms, const void *equal_to, size_t equal_len,
    const momento_request_options *opts, momento_callback cb, void *userdata);
/* The hash conditions by name; `hash` is momento_set_if()'s `compare`. */
MOMENTO_EXPORT int momento_set_if_present_and_hash_equal(
    momento_client *c, const char *cache, const void *key, size_t key_len, const void *value,
    size_t value_len, uint64_t ttl_ms, const void *hash, size_t hash_len,
    const momento_request_options *opts, momento_callback cb, void *userdata);
MOMENTO_EXPORT int momento_set_if_present_and_hash_not_equal(
    momento_client *c, const char *cache, const void *key, size_t key_len, const void *value,
    size_t value_len, uint64_t ttl_ms, const void *hash, size_t hash_len,
    const momento_request_options *opts, momento_callback cb, void *userdata);
MOMENTO_EXPORT int momento_set_if_absent_or_hash_equal(
    momento_client *c, const char *cache, const void *key, size_t key_len, const void *value,
    size_t value_len, uint64_t ttl_ms, const void *hash, size_t hash_len,
    const momento_request_options *opts, momento_callback cb, void *userdata);
MOMENTO_EXPORT int momento_set_if_absent_or_hash_not_equal(
    momento_client *c, const char *cache, const void *key, size_t key_len, const void *value,
    size_t value_len, uint64_t ttl_ms, const void *hash, size_t hash_len,
    const momento_request_options *opts, momento_callback cb, void *userdata);

/* The SDKs' setWithHash: a set that always writes (SetIfHash with no
 * condition) and answers STORED with the new value's hash
 * (momento_result_hash()), ready for a later hash condition. Arguments and
 * return codes as momento_set(), compression included (the hash is then
 * the compressed bytes'). Unlike a set, not retried: it goes out as a
 * conditional write, which official clients never retry. */
MOMENTO_EXPORT int momento_set_with_hash(momento_client *c, const char *cache, const void *key,
                                         size_t key_len, const void *value, size_t value_len,
                                         uint64_t ttl_ms, const momento_request_options *opts,
                                         momento_callback cb, void *userdata);
/* Arguments as momento_get(). Outcome HIT with the value
 * (momento_result_value(), decompressed as a get's is) and the server's hash
 * of the bytes stored (momento_result_hash()), or MISS. A key holding a collection fails with
 * MOMENTO_ERR_FAILED_PRECONDITION. Idempotent: retried as a get is. Never
 * shared with other requests by a coalescer or batcher (their reply has no
 * hash). */
MOMENTO_EXPORT int momento_get_with_hash(momento_client *c, const char *cache, const void *key,
                                         size_t key_len, const momento_request_options *opts,
                                         momento_callback cb, void *userdata);

/* Blocking forms of the conditional writes and of the get with hash: each
 * is its async function plus a wait, with the return codes and the
 * ownership of `*ret` that the blocking variants below describe
 * (momento_get_sync(), ...). */
MOMENTO_EXPORT int momento_get_with_hash_sync(momento_client *c, const char *cache,
                                              const void *key, size_t key_len,
                                              const momento_request_options *opts,
                                              momento_result **ret);
MOMENTO_EXPORT int momento_set_with_hash_sync(momento_client *c, const char *cache,
                                              const void *key, size_t key_len, const void *value,
                                              size_t value_len, uint64_t ttl_ms,
                                              const momento_request_options *opts,
                                              momento_result **ret);
MOMENTO_EXPORT int momento_set_if_absent_sync(momento_client *c, const char *cache,
                                              const void *key, size_t key_len, const void *value,
                                              size_t value_len, uint64_t ttl_ms,
                                              const momento_request_options *opts,
                                              momento_result **ret);
MOMENTO_EXPORT int momento_set_if_not_exists_sync(momento_client *c, const char *cache,
                                                  const void *key, size_t key_len,
                                                  const void *value, size_t value_len,
                                                  uint64_t ttl_ms,
                                                  const momento_request_options *opts,
                                                  momento_result **ret);
MOMENTO_EXPORT int momento_set_if_present_sync(momento_client *c, const char *cache,
                                               const void *key, size_t key_len, const void *value,
                                               size_t value_len, uint64_t ttl_ms,
                                               const momento_request_options *opts,
                                               momento_result **ret);
MOMENTO_EXPORT int momento_set_if_equal_sync(momento_client *c, const char *cache, const void *key,
                                             size_t key_len, const void *value, size_t value_len,
                                             uint64_t ttl_ms, const void *equal_to,
                                             size_t equal_len, const momento_request_options *opts,
                                             momento_result **ret);
MOMENTO_EXPORT int momento_set_if_not_equal_sync(momento_client *c, const char *cache,
                                                 const void *key, size_t key_len,
                                                 const void *value, size_t value_len,
                                                 uint64_t ttl_ms, const void *not_equal_to,
                                                 size_t not_equal_len,
                                                 const momento_request_options *opts,
                                                 momento_result **ret);
MOMENTO_EXPORT int momento_set_if_present_and_not_equal_sync(
    momento_client *c, const char *cache, const void *key, size_t key_len, const void *value,
    size_t value_len, uint64_t ttl_ms, const void *not_equal_to, size_t not_equal_len,
    const momento_request_options *opts, momento_result **ret);
MOMENTO_EXPORT int momento_set_if_absent_or_equal_sync(
    momento_client *c, const char *cache, const void *key, size_t key_len, const void *value,
    size_t value_len, uint64_t ttl_ms, const void *equal_to, size_t equal_len,
    const momento_request_options *opts, momento_result **ret);
MOMENTO_EXPORT int momento_set_if_present_and_hash_equal_sync(
    momento_client *c, const char *cache, const void *key, size_t key_len, const void *value,
    size_t value_len, uint64_t ttl_ms, const void *hash, size_t hash_len,
    const momento_request_options *opts, momento_result **ret);
MOMENTO_EXPORT int momento_set_if_present_and_hash_not_equal_sync(
    momento_client *c, const char *cache, const void *key, size_t key_len, const void *value,
    size_t value_len, uint64_t ttl_ms, const void *hash, size_t hash_len,
    const momento_request_options *opts, momento_result **ret);
MOMENTO_EXPORT int momento_set_if_absent_or_hash_equal_sync(
    momento_client *c, const char *cache, const void *key, size_t key_len, const void *value,
    size_t value_len, uint64_t ttl_ms, const void *hash, size_t hash_len,
    const momento_request_options *opts, momento_result **ret);
MOMENTO_EXPORT int momento_set_if_absent_or_hash_not_equal_sync(
    momento_client *c, const char *cache, const void *key, size_t key_len, const void *value,
    size_t value_len, uint64_t ttl_ms, const void *hash, size_t hash_len,
    const momento_request_options *opts, momento_result **ret);

/* Adds `amount` to the base-10 integer stored at `key` (a missing key counts
 * as 0) and stores the result as text with `ttl_ms` (0 = default): every
 * increment sets the TTL anew, as Momento's does - an existing key's
 * remaining TTL is not kept. Outcome
 * SUCCESS, value via momento_result_int(). A value that is not an integer:
 * MOMENTO_ERR_FAILED_PRECONDITION in the callback. Not idempotent: never
 * retried. Arguments as momento_get(), plus the TTL limit. */
MOMENTO_EXPORT int momento_increment(momento_client *c, const char *cache, const void *key,
                                     size_t key_len, int64_t amount, uint64_t ttl_ms,
                                     const momento_request_options *opts, momento_callback cb,
                                     void *userdata);

/* Asks whether `key` exists: momento_keys_exist() with one key. Outcome
 * SUCCESS; the answer is momento_result_exists(r, 0). */
MOMENTO_EXPORT int momento_key_exists(momento_client *c, const char *cache, const void *key,
                                      size_t key_len, const momento_request_options *opts,
                                      momento_callback cb, void *userdata);
/* Asks which of n keys exist: `keys[i]` of `key_lens[i]` bytes. Outcome
 * SUCCESS, answers (momento_result_exists()) in request order.
 * MOMENTO_ERR_INVALID_ARGUMENT also for NULL `keys` or `key_lens`, n == 0,
 * any bad key, or more keys than fit one request (about 10 MiB). */
MOMENTO_EXPORT int momento_keys_exist(momento_client *c, const char *cache, const void *const *keys,
                                      const size_t *key_lens, size_t n,
                                      const momento_request_options *opts, momento_callback cb,
                                      void *userdata);

/* Reads what `key` holds. Arguments as momento_get(). Outcome HIT with
 * momento_result_item_type()
 * (a scalar, or one of the collection types), or MISS. Idempotent: retried
 * as a get is. */
MOMENTO_EXPORT int momento_item_get_type(momento_client *c, const char *cache, const void *key,
                                         size_t key_len, const momento_request_options *opts,
                                         momento_callback cb, void *userdata);

/* Reads the remaining TTL of `key`. Arguments as momento_get(). Outcome HIT
 * with momento_result_ttl_ms(), or MISS. */
MOMENTO_EXPORT int momento_item_get_ttl(momento_client *c, const char *cache, const void *key,
                                        size_t key_len, const momento_request_options *opts,
                                        momento_callback cb, void *userdata);
/* Set the TTL to `ttl_ms` (1 .. MOMENTO_MAX_TTL_MS): always (update), only if
 * longer than what is left (increase), or only if shorter (decrease).
 * Outcome TTL_UPDATED, TTL_NOT_UPDATED, or MISS when the key is absent.
 * Unlike writes, ttl_ms 0 does not mean the default: it is refused with
 * MOMENTO_ERR_INVALID_ARGUMENT. Otherwise arguments as momento_get(). */
MOMENTO_EXPORT int momento_update_ttl(momento_client *c, const char *cache, const void *key,
                                      size_t key_len, uint64_t ttl_ms,
                                      const momento_request_options *opts, momento_callback cb,
                                      void *userdata);
MOMENTO_EXPORT int momento_increase_ttl(momento_client *c, const char *cache, const void *key,
                                        size_t key_len, uint64_t ttl_ms,
                                        const momento_request_options *opts, momento_callback cb,
                                        void *userdata);
MOMENTO_EXPORT int momento_decrease_ttl(momento_client *c, const char *cache, const void *key,
                                        size_t key_len, uint64_t ttl_ms,
                                        const momento_request_options *opts, momento_callback cb,
                                        void *userdata);

/* Batches over the server-streaming RPCs: one callback for the whole batch,
 * with one item per key in request order (momento_result_item()); a set
 * batch's `ttl_ms` applies to every item (0 = default).
 * MOMENTO_ERR_INVALID_ARGUMENT also for NULL `keys` or `key_lens` (set: NULL
 * `values` or `value_lens`), n == 0, any key or item its single-key call would
 * refuse, or a batch too large for one request (about 10 MiB in all). */
MOMENTO_EXPORT int momento_get_batch(momento_client *c, const char *cache, const void *const *keys,
                                     const size_t *key_lens, size_t n,
                                     const momento_request_options *opts, momento_callback cb,
                                     void *userdata);
MOMENTO_EXPORT int momento_set_batch(momento_client *c, const char *cache, const void *const *keys,
                                     const size_t *key_lens, const void *const *values,
                                     const size_t *value_lens, size_t n, uint64_t ttl_ms,
                                     const momento_request_options *opts, momento_callback cb,
                                     void *userdata);
/* Deletes n keys (the SDKs' batchDelete helper: Momento has no DeleteBatch
 * RPC): one Delete per key, all sent at once, sharing the request's
 * deadline and cancel token; one callback when the last is over, outcome
 * SUCCESS, with one item per key in request order whose error says how
 * that key's delete ended (0, or its error). The keys are copied. Refused
 * as momento_get_batch() is. One request for momento_client_in_flight()
 * and the metrics hook (method "Delete"), however many keys. */
MOMENTO_EXPORT int momento_delete_batch(momento_client *c, const char *cache,
                                        const void *const *keys, const size_t *key_lens, size_t n,
                                        const momento_request_options *opts, momento_callback cb,
                                        void *userdata);

/* Control plane, async: return codes as above, `cache` checked as for the
 * data plane. Never retried. */
/* Outcome CREATED, or ALREADY_EXISTS (with error MOMENTO_OK) when it exists. */
MOMENTO_EXPORT int momento_create_cache(momento_client *c, const char *cache,
                                        const momento_request_options *opts, momento_callback cb,
                                        void *userdata);
/* Outcome SUCCESS; a missing cache fails with MOMENTO_ERR_CACHE_NOT_FOUND. */
MOMENTO_EXPORT int momento_delete_cache(momento_client *c, const char *cache,
                                        const momento_request_options *opts, momento_callback cb,
                                        void *userdata);
/* Every page of ListCaches, joined into one callback; read with
 * momento_result_cache_name(). A failed page fails the whole call. Only a
 * NULL client or callback is refused as a bad argument. */
MOMENTO_EXPORT int momento_list_caches(momento_client *c, const momento_request_options *opts,
                                       momento_callback cb, void *userdata);
/* Removes every item of `cache`. Outcome SUCCESS. */
MOMENTO_EXPORT int momento_flush_cache(momento_client *c, const char *cache,
                                       const momento_request_options *opts, momento_callback cb,
                                       void *userdata);
/* Calls the Ping service of the data endpoint (no token sent). Outcome
 * SUCCESS. Only a NULL client or callback is refused as a bad argument. */
MOMENTO_EXPORT int momento_ping(momento_client *c, const momento_request_options *opts,
                                momento_callback cb, void *userdata);

/*
 * Blocking variants. Each submits its async function, waits for the outcome
 * and returns momento_result_error() of it. `ret` may be NULL when only the
 * code matters; otherwise `*ret` is always written, with a result the
 * caller owns and frees with momento_result_free(), failures included:
 *  - Refused before it was sent: an error result (outcome ERROR) whose
 *    error is the code its async function returned
 *    (MOMENTO_ERR_INVALID_ARGUMENT, MOMENTO_ERR_CANCELLED, MOMENTO_ERR_CLOSED,
 *    MOMENTO_ERR_NO_MEMORY, MOMENTO_ERR_UNKNOWN) and whose message says
 *    what was wrong (momento_refusal_reason()). *ret is NULL only for a
 *    NULL client, MOMENTO_ERR_WOULD_DEADLOCK (called on this client's
 *    completion thread, from one of its callbacks), or when not even that
 *    result could be allocated; momento_refusal_reason() then says why.
 *  - Sent: the request's result. If copying it failed, a result whose
 *    error (and the return) is MOMENTO_ERR_NO_MEMORY.
 */
MOMENTO_EXPORT int momento_get_sync(momento_client *c, const char *cache, const void *key,
                                    size_t key_len, const momento_request_options *opts,
                                    momento_result **ret);
MOMENTO_EXPORT int momento_set_sync(momento_client *c, const char *cache, const void *key,
                                    size_t key_len, const void *value, size_t value_len,
                                    uint64_t ttl_ms, const momento_request_options *opts,
                                    momento_result **ret);
MOMENTO_EXPORT int momento_delete_sync(momento_client *c, const char *cache, const void *key,
                                       size_t key_len, const momento_request_options *opts,
                                       momento_result **ret);
MOMENTO_EXPORT int momento_create_cache_sync(momento_client *c, const char *cache,
                                             const momento_request_options *opts,
                                             momento_result **ret);
MOMENTO_EXPORT int momento_delete_cache_sync(momento_client *c, const char *cache,
                                             const momento_request_options *opts,
                                             momento_result **ret);
MOMENTO_EXPORT int momento_list_caches_sync(momento_client *c, const momento_request_options *opts,
                                            momento_result **ret);
MOMENTO_EXPORT int momento_flush_cache_sync(momento_client *c, const char *cache,
                                            const momento_request_options *opts,
                                            momento_result **ret);
MOMENTO_EXPORT int momento_ping_sync(momento_client *c, const momento_request_options *opts,
                                     momento_result **ret);
MOMENTO_EXPORT int momento_set_if_sync(momento_client *c, const char *cache, const void *key,
                                       size_t key_len, const void *value, size_t value_len,
                                       uint64_t ttl_ms, momento_condition condition,
                                       const void *compare, size_t compare_len,
                                       const momento_request_options *opts, momento_result **ret);
MOMENTO_EXPORT int momento_increment_sync(momento_client *c, const char *cache, const void *key,
                                          size_t key_len, int64_t amount, uint64_t ttl_ms,
                                          const momento_request_options *opts,
                                          momento_result **ret);
MOMENTO_EXPORT int momento_key_exists_sync(momento_client *c, const char *cache, const void *key,
                                           size_t key_len, const momento_request_options *opts,
                                           momento_result **ret);
MOMENTO_EXPORT int momento_keys_exist_sync(momento_client *c, const char *cache,
                                           const void *const *keys, const size_t *key_lens,
                                           size_t n, const momento_request_options *opts,
                                           momento_result **ret);
MOMENTO_EXPORT int momento_item_get_type_sync(momento_client *c, const char *cache, const void *key,
                                              size_t key_len, const momento_request_options *opts,
                                              momento_result **ret);
MOMENTO_EXPORT int momento_item_get_ttl_sync(momento_client *c, const char *cache, const void *key,
                                             size_t key_len, const momento_request_options *opts,
                                             momento_result **ret);
MOMENTO_EXPORT int momento_update_ttl_sync(momento_client *c, const char *cache, const void *key,
                                           size_t key_len, uint64_t ttl_ms,
                                           const momento_request_options *opts,
                                           momento_result **ret);
MOMENTO_EXPORT int momento_increase_ttl_sync(momento_client *c, const char *cache, const void *key,
                                             size_t key_len, uint64_t ttl_ms,
                                             const momento_request_options *opts,
                                             momento_result **ret);
MOMENTO_EXPORT int momento_decrease_ttl_sync(momento_client *c, const char *cache, const void *key,
                                             size_t key_len, uint64_t ttl_ms,
                                             const momento_request_options *opts,
                                             momento_result **ret);
MOMENTO_EXPORT int momento_get_batch_sync(momento_client *c, const char *cache,
                                          const void *const *keys, const size_t *key_lens, size_t n,
                                          const momento_request_options *opts,
                                          momento_result **ret);
MOMENTO_EXPORT int momento_delete_batch_sync(momento_client *c, const char *cache,
                                             const void *const *keys, const size_t *key_lens,
                                             size_t n, const momento_request_options *opts,
                                             momento_result **ret);
MOMENTO_EXPORT int momento_set_batch_sync(momento_client *c, const char *cache,
                                          const void *const *keys, const size_t *key_lens,
                                          const void *const *values, const size_t *value_lens,
                                          size_t n, uint64_t ttl_ms,
                                          const momento_request_options *opts,
                                          momento_result **ret);

#ifdef __cplusplus
}
#endif

/* Dictionaries, sets, lists and sorted sets; topics; the metrics hook. */
#include "momento/collections.h"
#include "momento/topics.h"
#include "momento/metrics.h"
/* Disposable tokens: scoped, short-lived keys. */
#include "momento/tokens.h"
/* Webhooks: topics' items POSTed to a URL, signed. */
#include "momento/webhooks.h"

#endif /* MOMENTO_MOMENTO_H */
