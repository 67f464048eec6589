/* Helpers shared by the test suites: an in-process server on a free
 * loopback port, clients pointed at it, callback counters, and raw gRPC calls
 * that bypass the library to exercise the server directly. */
#ifndef MOMENTO_TESTUTIL_H
#define MOMENTO_TESTUTIL_H

#include "momento/coalescer.h"
#include "momento/local.h"
#include "momento/momento.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Whether this run's clients send get, set and delete over protosocket:
 * MOMENTO_TEST_TRANSPORT=protosocket in the environment (tests/meson.build
 * runs the suites of those calls a second time so). Then tu_server() opens
 * the server's protosocket port too and tu_client() points its clients at
 * it; everything else is as on gRPC. */
bool tu_protosocket(void);

/* Starts a server (NULL opts = defaults) on 127.0.0.1, port 0; aborts the
 * test on failure. With tu_protosocket(), also a protosocket port, port 0
 * (set on `opts` itself when given). */
momento_local *tu_server(const momento_local_options *opts);
/* A server as tu_server() with one cache, `cache`. */
momento_local *tu_server_with_cache(const char *cache);
/* New server options, asserting success, with cache `cache` (NULL: none).
 * The caller sets more on them, then starts a server with tu_start(). */
momento_local_options *tu_options(const char *cache);
/* A server (tu_server()) started with `o`, which it frees. */
momento_local *tu_start(momento_local_options *o);
/* A server with cache "c" whose only key is `token`
 * (momento_local_options_set_auth_token()). */
momento_local *tu_server_with_token(const char *token);
/* A client for `s` with `cfg` (NULL = defaults; with tu_protosocket(), the
 * transport and endpoint are set on `cfg` itself when given). */
momento_client *tu_client(momento_local *s, const momento_config *cfg);

/* A client with `cfg` (NULL: defaults) of the plaintext server at
 * `endpoint` ("host:port", local credentials), asserting success: for fakes
 * and servers tu_client() does not know (it never switches the transport). */
momento_client *tu_client_at(const char *endpoint, const momento_config *cfg);
/* The same with the credentials momento_credentials_with_endpoints() makes
 * of `token` and the two endpoints: for TLS servers and named endpoints. */
momento_client *tu_client_with_endpoints(const char *token, const char *cache_endpoint,
                                         const char *control_endpoint, const momento_config *cfg);
/* A client of `s` (defaults, gRPC) that sends `key` as its API key
 * (momento_credentials_local_with_key()): for tests of keys and tokens. */
momento_client *tu_client_with_key(momento_local *s, const char *key);

/* A fault-injection header for `c`'s calls (momento__client_add_header()):
 * request-id, delay-rpcs, delay-ms, delay-count, return-error, error-rpcs,
 * error-count. Protosocket has no headers: with tu_protosocket() the
 * headers so far for `c` are also made momento-local's protosocket fault
 * rule (momento_local_protosocket_fault()) for get, set and delete, as near
 * as one rule comes - the delay and the error together, for error-count
 * calls when an error is asked, else delay-count - and that rule holds for
 * every client of `s`, not `c` alone. Call before `c` is used. */
void tu_header(momento_local *s, momento_client *c, const char *key, const char *value);
/* Its protosocket half (testutil.c), for tu_header.c. */
void tu__ps_fault_header(momento_local *s, const momento_client *c, const char *key,
                         const char *value);
/* For the dispatch tests (a client with a dispatch queue and batching,
 * `keys` distinct keys and one hot key's RPC offered to its batcher, every
 * answer on its way to the queue): waits until every queued request left
 * in a batch or alone and the queue holds an entry per RPC, or 20 s
 * (scaled) passed. Sets *ret_stats to the batcher's last counters and
 * returns the RPCs they make: (keys + 1 - queued) sent as they came, plus
 * the batches, plus those sent alone. The caller asserts what it waited
 * for. Reaches the library's test hooks (tu_header.c). */
size_t tu_wait_dispatched(momento_client *c, size_t keys, momento_client_batching_stats *ret_stats);
/* Creates `cache` through `c`, asserting success. */
void tu_create_cache(momento_client *c, const char *cache);

/* The usual integration fixture: a server with cache "c" and a client of
 * it. For cmocka setup/teardown: *state points to tu_fx, the running
 * test's fixture, which a file's helpers may also reach by that name (tests
 * run one at a time in a process). */
typedef struct tu_fixture {
    momento_local *server;
    momento_client *client;     /* NULL after tu_fixture_setup_server() */
    const char *target;         /* the server's "127.0.0.1:port", for tu_raw_call() */
    struct tu_raw_reply *reply; /* a raw call's reply, off the stack (it is large) */
} tu_fixture;
extern tu_fixture tu_fx;
int tu_fixture_setup(void **state);
/* The same server without a client: for tests that make their own clients
 * or call the server raw. */
int tu_fixture_setup_server(void **state);
/* Frees the client (if any) and stops the server, after either setup. */
int tu_fixture_teardown(void **state);
/* A cmocka test with a fixture of its own (tu_fixture_setup()). */
#define tu_fixture_test(f) cmocka_unit_test_setup_teardown(f, tu_fixture_setup, tu_fixture_teardown)

/* New client options, asserting success: the caller sets more on them,
 * hands them to a client and frees them. */
momento_config *tu_config(void);

/* A coalescer of `c` (momento_coalescer_new()), asserting success. */
momento_coalescer *tu_coalescer(momento_client *c);
/* `co`'s counters now (momento_coalescer_stats_get()), asserting success. */
momento_coalescer_stats tu_coalescer_stats(momento_coalescer *co);

/* A client for `s` with a `timeout_ms` deadline and keepalive, both scaled
 * by tu_time_scale(): gRPC sets TCP_USER_TIMEOUT from the keepalive timeout,
 * and under a slow wrapper the in-process server can stall past 1 s with the
 * connection's window full. For tests with many requests in flight. */
momento_client *tu_patient_client(momento_local *s, uint32_t timeout_ms);

/* Counts callbacks by error kind; wait() blocks until `n` arrived or the
 * timeout passed, and returns how many arrived. */
typedef struct tu_counter {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    size_t total;
    size_t ok;
    size_t by_error[64]; /* index -error */
    size_t hits;
    size_t bad_values;   /* hits whose bytes differed from `expect` */
    const void *expect;
    size_t expect_len;
} tu_counter;

void tu_counter_init(tu_counter *k);
void tu_counter_destroy(tu_counter *k);
void tu_count_cb(const momento_result *r, void *userdata);
size_t tu_counter_wait(tu_counter *k, size_t n, int timeout_ms);
size_t tu_counter_errors(tu_counter *k, int err);

/* What one request's callback said, recorded by tu_rec_cb() (userdata: a
 * zeroed tu_rec): for tests that look at each request's answer, where a
 * tu_counter counts answers by kind. Every tu_rec is written under one lock
 * of testutil's: read `calls` with tu_rec_calls() or tu_rec_wait() while a
 * callback may still come, and the rest once they say it came. */
typedef struct tu_rec {
    int calls;
    int error;
    momento_outcome outcome;
    int attempts;
    char value[64];   /* the result's value, cut to fit, NUL-terminated */
    size_t value_len; /* of `value` */
    int64_t at_ms;    /* tu_now_ms() when the callback ran */
    int seq;          /* its place among every tu_rec_cb() call: order, not time */
    char thread[16];  /* the name of the thread it ran on ("momento-cq": a client's) */
} tu_rec;
void tu_rec_cb(const momento_result *r, void *userdata);
int tu_rec_calls(const tu_rec *x);
/* Waits until `x` was called back or `timeout_ms` (scaled by
 * tu_time_scale()) passed; returns its calls. */
int tu_rec_wait(const tu_rec *x, int timeout_ms);

/* An async call's result kept past its callback: tu_keep_cb() (userdata:
 * a tu_kept whose `k` is initialised) sets `copy` to a copy of the result
 * (momento_result_dup(); NULL if that failed), then counts the callback in
 * `k`. The copy is the test's to free; read it once `k` says the callback
 * came. For tests that a result outlives its callback. */
typedef struct tu_kept {
    tu_counter k;
    momento_result *copy;
} tu_kept;
void tu_keep_cb(const momento_result *r, void *userdata);

/* Frees a client from inside its own callback: tu_free_client_cb()
 * (userdata: a tu_freer) frees `client` the first time it runs and sets it
 * to NULL (a free from a callback is deferred until the callback returns),
 * then counts the callback in `k`, last: the test may drop the tu_freer
 * once `k` has counted every callback. */
typedef struct tu_freer {
    momento_client *client;
    tu_counter k;
} tu_freer;
void tu_free_client_cb(const momento_result *r, void *userdata);

/* For a request that must be refused at submit: fails the test if it is
 * ever called back. */
void tu_never_cb(const momento_result *r, void *userdata);

/* Waits on `cv` until *count, which `mu` guards and whose every change is
 * broadcast on `cv`, is at least `n`, or `timeout_ms` (scaled by
 * tu_time_scale()) has passed; returns *count as last seen. For callbacks
 * and threads that count what they saw (tu_counter_wait() is one). */
size_t tu_wait_count(pthread_mutex_t *mu, pthread_cond_t *cv, const size_t *count, size_t n,
                     int timeout_ms);

/* *v read under `mu`: for a count a callback or thread writes under that
 * lock while the test polls it. */
int tu_locked_int(pthread_mutex_t *mu, const int *v);

/* One pthread_cond_timedwait() on `cv` (with `mu` held) of at most `ms`
 * milliseconds, unscaled: the slice of a wait loop that looks at its own
 * condition and clock between two slices, so that neither an early return
 * nor a lost wake-up ends the wait. */
void tu_cond_wait_ms(pthread_cond_t *cv, pthread_mutex_t *mu, int ms);

/* Gets `key` (key_len bytes) from `cache` through `c`, asserting that the
 * call succeeded and was a hit holding exactly the `want_len` bytes at
 * `want` or, with `want` NULL, a miss. The one read-back check that most
 * tests end a write with. */
void tu_assert_get(momento_client *c, const char *cache, const void *key, size_t key_len,
                   const void *want, size_t want_len);
/* The same with a string key and value (`want` NULL: a miss). */
void tu_assert_get_str(momento_client *c, const char *cache, const char *key, const char *want);

/* Adds fault headers to `c` (tu_header()): "request-id" `request_id`, then
 * `n` pairs of key, value from `headers`. A fresh request-id puts the
 * client's calls in a fault session of their own on the server. */
void tu_headers(momento_local *s, momento_client *c, const char *request_id,
                const char *const *headers, size_t n);

/* A raw unary or server-streaming call. Sends `body` to `path` with the
 * given headers (pairs of key, value; n_headers pairs) and collects up to
 * `max_msgs` response messages. Returns the gRPC status. */
typedef struct tu_raw_reply {
    int status;
    char details[256];
    char err[128];      /* `err` trailer or "" */
    size_t n_msgs;
    uint8_t *msgs[2048];
    size_t lens[2048];
} tu_raw_reply;

int tu_raw_call(const char *target, const char *path, const char *const *headers,
                size_t n_headers, const void *body, size_t len, tu_raw_reply *out);
void tu_raw_reply_free(tu_raw_reply *r);
/* tu_raw_call() with the body packed from the protobuf-c message `m` (the
 * `base` of a request). `out` NULL: the reply is dropped; otherwise it is
 * the caller's to free with tu_raw_reply_free(). Returns the gRPC status. */
struct ProtobufCMessage;
int tu_raw_call_msg(const char *target, const char *path, const char *const *headers,
                    size_t n_headers, const struct ProtobufCMessage *m, tu_raw_reply *out);

int64_t tu_now_ms(void);

/* Asserts that the blocking call `call`, which sets the result `r`,
 * returned MOMENTO_OK with outcome `outcome`; then frees `r` and sets it to
 * NULL. A macro, so that a failure names the test's line. */
#define tu_expect(call, r, outcome)                                                                \
    do {                                                                                           \
        assert_int_equal((call), MOMENTO_OK);                                                      \
        assert_int_equal(momento_result_outcome(r), (int)(outcome));                               \
        momento_result_free(r);                                                                    \
        (r) = NULL;                                                                                \
    } while (0)

/* Asserts that a blocking call returned MOMENTO_OK (`rc`) and returns the
 * outcome of its result *r, which it frees and sets to NULL: for helpers
 * that hand an outcome back to the test (tu_expect() checks a known one).
 * `r` goes by address, so that it is read after the call that sets it
 * (C evaluates a function's arguments in no set order). */
momento_outcome tu_outcome(int rc, momento_result **r);

/* A blocking call refused before sending set *r to an error result whose
 * message says why (more than momento_strerror() says): asserts that, for
 * error `err`, then frees it and sets *r to NULL. */
void tu_assert_refusal(momento_result **r, int err);
/* How much slower than native the tests run: MOMENTO_TEST_TIME_SCALE
 * (default 1; the valgrind run sets it). Waits and bounds on how long a
 * behaviour may take (a deadline firing, a failure coming fast) scale by it;
 * performance is never asserted in tests. */
int tu_time_scale(void);
#define TU_MS(ms) ((int64_t)(ms) * tu_time_scale())

/* Evaluates `cond` until it holds or `timeout_ms` (scaled by
 * tu_time_scale()) has passed, sleeping a millisecond or so between two
 * looks. For what there is no callback or condition variable to wait on:
 * a server's counters, a client's requests in flight, another thread's
 * flag. A statement, not a check: the test asserts what it waits for after
 * it, so that a timeout fails there and the message shows the value. */
#define tu_wait_until(cond, timeout_ms)                                        \
    do {                                                                       \
        int64_t tu_until_ = tu_now_ms() + TU_MS(timeout_ms);                   \
        for (int tu_look_ = 0; !(cond) && tu_now_ms() < tu_until_; tu_look_++) \
            tu_wait_pause(tu_look_);                                           \
    } while (0)
/* tu_wait_until()'s sleep before look `n` + 1: 1 ms, up to 10 ms as the
 * wait goes on (a long wait polls less). */
void tu_wait_pause(int n);

/* A TCP socket listening on 127.0.0.1 at a port the kernel picked, with
 * `backlog`: returns the socket (close-on-exec), and writes
 * "127.0.0.1:port" to `endpoint` (size bytes). Aborts the test on failure.
 * For the fake servers that stand in for momento-local. */
int tu_listen_loopback(int backlog, char *endpoint, size_t size);

/* A server that accepts TCP connections on 127.0.0.1 and never answers:
 * it reads and drops what arrives, so every call on it runs to its
 * deadline (or its cancel). Aborts the test on failure. */
typedef struct tu_silent tu_silent;
tu_silent *tu_silent_start(void);
/* "127.0.0.1:port", for momento_credentials_local(). */
const char *tu_silent_endpoint(const tu_silent *s);
void tu_silent_stop(tu_silent *s);
/* A client of a tu_silent server, with `cfg` (NULL: defaults). */
momento_client *tu_silent_client(const tu_silent *s, const momento_config *cfg);

/* How many threads of this process are named `name` now (their
 * /proc/self/task/N/comm): "momento-cq" counts the clients' completion
 * threads. */
int tu_threads_named(const char *name);
/* The same for names that start with `name` when `prefix`; `names`
 * (names_size bytes, 0: none) gets every thread's name, for a failure
 * message. */
int tu_count_threads(const char *name, bool prefix, char *names, size_t names_size);

/* CLOCK_MONOTONIC in nanoseconds (the clock gRPC's deadlines run on). */
int64_t tu_now_ns(void);

/* The order a topic subscription's items keep: each ITEM is the next
 * sequence number, on the same page, after the ITEM or DISCONTINUITY
 * before it. Zeroed: nothing known yet, so the first item may be any. */
typedef struct tu_topic_seq {
    uint64_t last, page;
    bool known;
} tu_topic_seq;
/* A discontinuity: the next item is `seq` + 1 of `page` (when `known`;
 * otherwise any). Returns whether it moved to another page than the one
 * known before. */
bool tu_topic_seq_jump(tu_topic_seq *q, uint64_t seq, uint64_t page, bool known);
/* An item: fails the test unless it is the next one, when that is known. */
void tu_topic_seq_item(tu_topic_seq *q, uint64_t seq, uint64_t page);

/* Random numbers for randomised tests: xorshift64 from a fixed seed, the
 * same sequence every run of a test binary, so that a failure replays. */
uint64_t tu_rng(void);

/* A gate on a client's completion thread: a request (an ItemGetType of
 * "gate" in cache "c", which no test's fault headers touch) whose callback
 * keeps that thread until tu_gate_open(). Every completion of the client
 * runs on that thread - the coalescer's, which takes an RPC out of its
 * table, a retry's scheduling, protosocket's posted replies - so an RPC
 * started while the gate is closed is still in flight, joinable, when the
 * test has submitted everything else, and a cancel made meanwhile always
 * comes before the RPC's end. Blocking calls on the client wait for that
 * thread: none while it is closed. The callback gives up after 60 s
 * (scaled), so a failing test ends; the gate is on the heap, freed by
 * tu_gate_open(), so a test failing while it is closed leaves the
 * callback nothing freed to read. */
typedef struct tu_gate tu_gate;
/* Closes a gate on `c`: returns once its callback holds the thread. */
tu_gate *tu_gate_close(momento_client *c);
/* Opens it, waits until its callback has left, and frees it. */
void tu_gate_open(tu_gate *g);

#endif
