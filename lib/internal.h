/* Declarations shared by the library's modules. Nothing here is exported:
 * the shared library is built with hidden visibility and only MOMENTO_EXPORT
 * names (include/momento/) leave it. */
#ifndef MOMENTO_INTERNAL_H
#define MOMENTO_INTERNAL_H

#include "momento/momento.h"

#include <grpc/grpc.h>
#include <grpc/support/time.h>
#include <protobuf-c/protobuf-c.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

/* gRPC message limits: room for a 5 MiB item plus framing, as the official
 * SDKs allow; requests beyond MOMENTO__MAX_REQUEST_BYTES are refused before
 * sending. */
#define MOMENTO__MAX_MESSAGE_BYTES (10 * 1024 * 1024)
#define MOMENTO__MAX_REQUEST_BYTES (MOMENTO__MAX_MESSAGE_BYTES - 64 * 1024)

/* Allocation with failure injection (alloc.c). momento__alloc_countdown: -1
 * off; N >= 0 makes the allocation N allocations from now fail (then -1). */
extern atomic_int momento__alloc_countdown;
void *momento__malloc(size_t n);
void *momento__calloc(size_t count, size_t size);
void *momento__realloc(void *p, size_t n);

/* Returns from the enclosing function when `expr` is a negative error. */
#define MOMENTO__CHECK(expr)                                                                       \
    do {                                                                                           \
        int rc_ = (expr);                                                                          \
        if (rc_ < 0)                                                                               \
            return rc_;                                                                            \
    } while (0)

/* ---------------------------------------------------------------- config */

struct momento_config {
    uint32_t timeout_ms;
    uint64_t default_ttl_ms;
    uint32_t num_channels;
    uint32_t keepalive_ms;
    uint32_t keepalive_timeout_ms;
    uint32_t eager_connect_ms;
    char *tls_roots_pem; /* NULL = system roots */
    uint32_t retry_max_attempts;     /* 1 = no retries */
    uint32_t retry_attempt_timeout_ms; /* 0 = each attempt may use the whole deadline */
    uint32_t retry_delay_ms;         /* between attempts, +/-10% */
};

void momento__config_defaults(momento_config *cfg);
/* Deep copy into *dst (overwritten). Returns 0 or NO_MEMORY. */
int momento__config_copy(momento_config *dst, const momento_config *src);
void momento__config_clear(momento_config *cfg);

/* ----------------------------------------------------------- credentials */

struct momento_credentials {
    char *token;            /* sent as `authorization`; "" for local servers */
    char *cache_endpoint;   /* gRPC target "host:port" */
    char *control_endpoint;
    int tls;
};

/* Deep copy into *dst (which is overwritten). Returns 0 or NO_MEMORY. */
int momento__credentials_copy(momento_credentials *dst, const momento_credentials *src);
void momento__credentials_clear(momento_credentials *c);

/* Checks "host:port": host non-empty (brackets for IPv6), port 1..65535.
 * Returns NULL when valid, else a static reason. */
const char *momento__check_host_port(const char *s);

/* base64 (standard or URL alphabet, padding optional) → newly malloc'd bytes
 * plus a NUL. Returns 0, or -1 for malformed input, -2 for no memory. */
int momento__base64_decode(const char *in, size_t in_len, unsigned char **ret, size_t *ret_len);

/* Finds the string member `name` at the top level of the JSON object in
 * `json`. Returns 1 and a malloc'd, unescaped copy in *ret; 0 when the member
 * is absent or not a string; -1 when the text is not a JSON object; -2 for no
 * memory. */
int momento__json_get_string(const char *json, size_t len, const char *name, char **ret);

/* Routes gRPC core's log to momento_set_log_callback() (log.c). Idempotent. */
void momento__log_install(void);

/* ---------------------------------------------------------------- result */

struct momento_result {
    int error;
    int grpc_status;
    momento_outcome outcome;
    const char *message;      /* never NULL */
    const char *error_detail; /* `err` trailer or NULL */
    const uint8_t *value;
    size_t value_len;
    int attempts;             /* how many tries it took */
    int64_t int_value;        /* increment */
    uint64_t ttl_ms;          /* item_get_ttl */
    size_t n_caches;
    const char *const *caches;
    size_t n_exists;          /* keys_exist / key_exists */
    const uint8_t *exists;
    size_t n_items;           /* get_batch / set_batch, in request order */
    const momento_result *items;
    const char *next_token;   /* ListCaches paging; NULL or "" on the last page */
};

/* A result that failed before reaching gRPC. */
void momento__result_local_error(momento_result *r, int err, const char *message);

/* --------------------------------------------------------------- methods */

typedef enum momento__method {
    MOMENTO__M_GET,
    MOMENTO__M_SET,
    MOMENTO__M_DELETE,
    MOMENTO__M_SET_IF,
    MOMENTO__M_INCREMENT,
    MOMENTO__M_KEYS_EXIST,
    MOMENTO__M_ITEM_GET_TTL,
    MOMENTO__M_UPDATE_TTL,
    MOMENTO__M_GET_BATCH,
    MOMENTO__M_SET_BATCH,
    MOMENTO__M_PING,
    MOMENTO__M_CREATE_CACHE,
    MOMENTO__M_DELETE_CACHE,
    MOMENTO__M_LIST_CACHES,
    MOMENTO__M_FLUSH_CACHE,
    MOMENTO__M_COUNT
} momento__method;

/* What a decoder leaves to free once the callback has run. */
typedef struct momento__scratch {
    ProtobufCMessage *msg;    /* a unary response */
    ProtobufCMessage **msgs;  /* a stream's responses (array malloc'd) */
    size_t n_msgs;
    void *mem;                /* one more malloc'd block (arrays the result points into) */
} momento__scratch;

void momento__scratch_free(momento__scratch *s);

/* Fills `r` from the response message(s): one for unary methods, any number
 * (in order) for streaming ones. Returns MOMENTO_OK or an error. */
typedef int (*momento__decode_fn)(momento_result *r, const grpc_slice *msgs, size_t n_msgs,
                                  momento__scratch *scratch);

typedef struct momento__method_info {
    const char *path;
    bool control;           /* control-plane channel */
    bool cache_header;      /* sends `cache` */
    bool auth_header;       /* sends `authorization` */
    bool already_exists_ok; /* ALREADY_EXISTS is an outcome, not an error */
    bool streaming;         /* server-streaming response */
    /* Safe to repeat (PROTOCOL.md "Retries"): official clients retry only
     * these, on UNAVAILABLE and INTERNAL. Recorded here for the retry layer. */
    bool idempotent;
    momento__decode_fn decode;
} momento__method_info;

extern const momento__method_info momento__methods[MOMENTO__M_COUNT];

/* Protobuf wire helpers (wire.c): read a varint, skip a field of a wire
 * type. Both advance *p and return false on malformed input. */
bool momento__wire_varint(const uint8_t **p, const uint8_t *end, uint64_t *ret);
bool momento__wire_skip(const uint8_t **p, const uint8_t *end, unsigned wire_type);
/* Whether n bytes at p are a well-formed message (every field parses). */
bool momento__wire_valid(const uint8_t *p, size_t n);

/* The decoders (wire.c for get, ops.c, scalar.c, batch.c). */
#define MOMENTO__DECODER(name)                                                                     \
    int momento__decode_##name(momento_result *r, const grpc_slice *msgs, size_t n_msgs,          \
                               momento__scratch *scratch)
MOMENTO__DECODER(get);
MOMENTO__DECODER(set);
MOMENTO__DECODER(delete);
MOMENTO__DECODER(set_if);
MOMENTO__DECODER(increment);
MOMENTO__DECODER(keys_exist);
MOMENTO__DECODER(item_get_ttl);
MOMENTO__DECODER(update_ttl);
MOMENTO__DECODER(get_batch);
MOMENTO__DECODER(set_batch);
MOMENTO__DECODER(ping);
MOMENTO__DECODER(create_cache);
MOMENTO__DECODER(delete_cache);
MOMENTO__DECODER(list_caches);
MOMENTO__DECODER(flush_cache);

/* ---------------------------------------------------------------- client */

typedef struct momento__channel {
    grpc_channel *channel;
    void *registered[MOMENTO__M_COUNT]; /* NULL for methods of the other plane */
} momento__channel;

typedef struct momento__call momento__call;

#define MOMENTO__MAX_EXTRA_HEADERS 8

struct momento_client {
    momento_config cfg;
    momento_credentials creds;
    grpc_completion_queue *cq;
    pthread_t thread;

    momento__channel *data;
    uint32_t n_data;
    momento__channel control;
    atomic_uint next_channel;
    atomic_bool agent_sent;
    grpc_slice auth_value;

    /* Extra request headers for tests (fault injection); set before the
     * first call, see momento__client_add_header(). */
    grpc_metadata extra_md[MOMENTO__MAX_EXTRA_HEADERS];
    size_t n_extra_md;

    pthread_mutex_t lock;        /* guards everything below */
    pthread_cond_t drained;
    momento__call *in_flight;    /* doubly linked, for cancellation at free */
    size_t n_in_flight;
    momento__call **retry_heap;  /* calls waiting to retry, by due time */
    size_t n_retry, cap_retry;
    uint64_t jitter_state;
    bool closing;                /* momento_client_free() has begun */
    bool free_deferred;          /* ...from the completion thread itself */
};

/* The client whose completion thread is running this code, or NULL. */
extern _Thread_local const momento_client *momento__current_client;

/* Adds a header sent with every later call of `c`. For tests only: it is not
 * locked, so call it before the client is used. Returns 0 or an error. */
int momento__client_add_header(momento_client *c, const char *key, const char *value);

/* Channel setup (channel.c). */
int momento__channels_open(momento_client *c);
void momento__channels_close(momento_client *c);

/* Starts one unary RPC (call.c). `req` is packed at once; `cache` may be NULL
 * for methods without a cache header. Returns 0 when accepted (one callback
 * follows) or a negative momento_error (no callback). */
int momento__call_start(momento_client *c, momento__method m, const char *cache,
                        const ProtobufCMessage *req, momento_callback cb, void *userdata);
/* Runs on the completion thread for each completion-queue event of a call
 * (a call has a second tag, for stream messages). */
void momento__call_event(void *tag, int success);
/* Cancels every call in flight; the caller holds c->lock. Each still
 * completes, with CANCELLED, through its callback; calls waiting to retry
 * are finished by the next momento__run_retries(). */
void momento__calls_cancel_all(momento_client *c);
/* On the completion thread: starts the retries that are due (or, once the
 * client is closing, finishes every waiting call as cancelled), and returns
 * when the next one is due (gpr_inf_future when none waits). */
gpr_timespec momento__run_retries(momento_client *c);

/* Blocking calls (blocking.c): submit(target, args, cb, w) starts an async
 * request whose callback must be `cb` with userdata `w`; the runner waits for
 * it and hands the caller an owned copy of the result. `owner` is the client
 * whose completion thread would deadlock on the wait. */
typedef struct momento__op_args {
    const char *cache;
    const void *key;
    size_t key_len;
    const void *value;
    size_t value_len;
    uint64_t ttl_ms;
} momento__op_args;
typedef int (*momento__submit_fn)(void *target, const void *args, momento_callback cb, void *w);
int momento__run_blocking(const momento_client *owner, momento__submit_fn submit, void *target,
                          const void *args, momento_result **ret);

/* Data-plane operations split into their argument checks and their sending
 * (ops.c), so the coalescer validates once. Checks return 0 or
 * MOMENTO_ERR_INVALID_ARGUMENT; senders are as the public calls. */
int momento__check_get(const momento_client *c, const char *cache, const void *key,
                       size_t key_len, momento_callback cb);
int momento__check_set(const momento_client *c, const char *cache, const void *key,
                       size_t key_len, const void *value, size_t value_len, uint64_t ttl_ms,
                       momento_callback cb);
int momento__send_get(momento_client *c, const char *cache, const void *key, size_t key_len,
                      momento_callback cb, void *userdata);
int momento__send_set(momento_client *c, const char *cache, const void *key, size_t key_len,
                      const void *value, size_t value_len, uint64_t ttl_ms, momento_callback cb,
                      void *userdata);
int momento__send_delete(momento_client *c, const char *cache, const void *key, size_t key_len,
                         momento_callback cb, void *userdata);

/* Argument checks shared by the operations (validate.c). Each returns 0 or
 * MOMENTO_ERR_INVALID_ARGUMENT. */
int momento__check_cache_name(const char *cache);
int momento__check_key(const void *key, size_t key_len);
int momento__check_item(const void *key, size_t key_len, const void *value, size_t value_len);

#endif
