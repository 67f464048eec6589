#include "testutil.h"
#include "tu_deadline.h"
#include "tu_raw_conn.h"

#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/time.h>
#include <protobuf-c/protobuf-c.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

/* gRPC reports a failed assertion in its log just before it aborts the
 * process, and the library hands its log to a callback only (it never
 * prints): with none the abort is silent, as a CI run once showed. Every
 * test prints the errors, so that a crash says why; a test that sets its
 * own callback replaces this one. */
static void tu_log_errors(momento_log_level level, const char *message, void *userdata)
{
    (void)userdata;
    if (level == MOMENTO_LOG_ERROR)
        fprintf(stderr, "log: %s\n", message);
}

__attribute__((constructor)) static void tu_log_install(void)
{
    momento_set_log_callback(tu_log_errors, NULL);
}

int64_t tu_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void tu_wait_pause(int n)
{
    int ms = n < 10 ? 1 : n < 100 ? 2 : 10;
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, NULL);
}

int tu_time_scale(void)
{
    const char *v = getenv("MOMENTO_TEST_TIME_SCALE");
    int n = v ? atoi(v) : 1;
    return n >= 1 ? n : 1;
}

static void tu_header_forget(const momento_client *c);

bool tu_protosocket(void)
{
    const char *v = getenv("MOMENTO_TEST_TRANSPORT");
    return v && strcmp(v, "protosocket") == 0;
}

momento_local *tu_server(const momento_local_options *opts)
{
    momento_local_options *own = NULL;
    if (tu_protosocket()) {
        if (!opts) {
            assert_int_equal(momento_local_options_new(&own), MOMENTO_OK);
            opts = own;
        }
        /* The caller's options are its own to change: tests make them for
         * one server. */
        assert_int_equal(
            momento_local_options_set_protosocket_port((momento_local_options *)opts, 0),
            MOMENTO_OK);
    }
    momento_local *s = NULL;
    assert_int_equal(momento_local_start(&s, opts), MOMENTO_OK);
    momento_local_options_free(own);
    assert_true(momento_local_port(s) > 0);
    if (tu_protosocket())
        assert_true(momento_local_protosocket_port(s) > 0);
    return s;
}

momento_client *tu_client(momento_local *s, const momento_config *cfg)
{
    momento_config *own = NULL;
    if (tu_protosocket()) {
        if (!cfg) {
            assert_int_equal(momento_config_new(&own), MOMENTO_OK);
            cfg = own;
        }
        momento_config *w = (momento_config *)cfg; /* as in tu_server() */
        char ep[64];
        snprintf(ep, sizeof(ep), "127.0.0.1:%d", momento_local_protosocket_port(s));
        assert_int_equal(momento_config_set_transport(w, MOMENTO_TRANSPORT_PROTOSOCKET),
                         MOMENTO_OK);
        assert_int_equal(momento_config_set_protosocket_endpoint(w, ep), MOMENTO_OK);
    }
    momento_client *c = tu_client_at(momento_local_endpoint(s), cfg);
    momento_config_free(own);
    tu_header_forget(c);
    /* The rerun must really be on protosocket: its I/O thread is up. */
    if (tu_protosocket())
        assert_true(tu_threads_named("momento-ps") > 0);
    return c;
}

/* ---- Fault headers, and their protosocket rule. */

/* What tu_header() has been told for one client. */
typedef struct tu_faults {
    const momento_client *client;
    char delay_rpcs[128], error_rpcs[128], error[32];
    long long delay_ms, delay_count, error_count;
} tu_faults;

static tu_faults tu_fault_table[32];
static pthread_mutex_t tu_fault_lock = PTHREAD_MUTEX_INITIALIZER;

/* gRPC's status for a `return-error` name (faults.c's names), or -1. */
static int tu_status_named(const char *name)
{
    static const struct {
        const char *name;
        int status;
    } names[] = {{"cancelled", 1},          {"unknown", 2},
                 {"invalid-argument", 3},   {"deadline-exceeded", 4},
                 {"not-found", 5},          {"already-exists", 6},
                 {"permission-denied", 7},  {"resource-exhausted", 8},
                 {"failed-precondition", 9}, {"internal", 13},
                 {"unavailable", 14},       {"unauthenticated", 16}};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (strcmp(names[i].name, name) == 0)
            return names[i].status;
    return -1;
}

/* Whether `word` is in the space-separated `list` ("" = every RPC). */
static bool tu_listed(const char *list, const char *word)
{
    if (!*list)
        return true;
    size_t n = strlen(word);
    for (const char *p = list; (p = strstr(p, word)) != NULL; p += n)
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
            return true;
    return false;
}

static void tu_apply_ps_rule(momento_local *s, const tu_faults *f)
{
    static const char *const scalar[] = {"get", "set", "delete"};
    char rpcs[32] = "";
    bool erring = f->error[0] != '\0';
    for (int i = 0; i < 3; i++) {
        bool delayed = f->delay_ms > 0 && tu_listed(f->delay_rpcs, scalar[i]);
        bool failed = erring && tu_listed(f->error_rpcs, scalar[i]);
        if (delayed || failed) {
            strcat(rpcs, rpcs[0] ? " " : "");
            strcat(rpcs, scalar[i]);
        }
    }
    if (!rpcs[0])
        return;
    long long count = erring ? f->error_count : f->delay_count;
    assert_int_equal(momento_local_protosocket_fault(
                         s, rpcs, erring ? tu_status_named(f->error) : -1,
                         (uint32_t)(f->delay_ms > 0 ? f->delay_ms : 0),
                         count < 0 || count > UINT32_MAX ? UINT32_MAX : (uint32_t)count),
                     MOMENTO_OK);
}

/* A new client may have a freed one's address: it starts with no faults. */
static void tu_header_forget(const momento_client *c)
{
    pthread_mutex_lock(&tu_fault_lock);
    for (size_t i = 0; i < sizeof(tu_fault_table) / sizeof(tu_fault_table[0]); i++)
        if (tu_fault_table[i].client == c)
            memset(&tu_fault_table[i], 0, sizeof(tu_fault_table[i]));
    pthread_mutex_unlock(&tu_fault_lock);
}

/* tu_header()'s protosocket half: in this file, which names nothing of the
 * library's internals (test_adapters links libmomento's public symbols
 * only); tu_header.c adds the header itself. */
void tu__ps_fault_header(momento_local *s, const momento_client *c, const char *key,
                         const char *value)
{
    if (!tu_protosocket())
        return;
    pthread_mutex_lock(&tu_fault_lock);
    tu_faults *f = NULL;
    for (size_t i = 0; i < sizeof(tu_fault_table) / sizeof(tu_fault_table[0]) && !f; i++)
        if (tu_fault_table[i].client == c || !tu_fault_table[i].client)
            f = &tu_fault_table[i];
    assert_non_null(f);
    if (f->client != c) {
        memset(f, 0, sizeof(*f));
        f->client = c;
        f->delay_count = f->error_count = -1; /* no count: every call */
    }
    if (strcmp(key, "delay-rpcs") == 0)
        snprintf(f->delay_rpcs, sizeof(f->delay_rpcs), "%s", value);
    else if (strcmp(key, "error-rpcs") == 0)
        snprintf(f->error_rpcs, sizeof(f->error_rpcs), "%s", value);
    else if (strcmp(key, "return-error") == 0)
        snprintf(f->error, sizeof(f->error), "%s", value);
    else if (strcmp(key, "delay-ms") == 0)
        f->delay_ms = atoll(value);
    else if (strcmp(key, "delay-count") == 0)
        f->delay_count = atoll(value);
    else if (strcmp(key, "error-count") == 0)
        f->error_count = atoll(value);
    tu_apply_ps_rule(s, f);
    pthread_mutex_unlock(&tu_fault_lock);
}

tu_fixture tu_fx;

/* tu_fx around `s`, for both setups; *state points to it. */
static void fixture_begin(void **state, momento_local *s)
{
    tu_fx.server = s;
    tu_fx.target = momento_local_endpoint(s);
    tu_fx.reply = calloc(1, sizeof(*tu_fx.reply));
    assert_non_null(tu_fx.reply);
    *state = &tu_fx;
}

int tu_fixture_setup(void **state)
{
    fixture_begin(state, tu_server(NULL));
    tu_fx.client = tu_client(tu_fx.server, NULL);
    tu_create_cache(tu_fx.client, "c");
    return 0;
}

int tu_fixture_setup_server(void **state)
{
    fixture_begin(state, tu_server_with_cache("c"));
    return 0;
}

int tu_fixture_teardown(void **state)
{
    (void)state;
    momento_client_free(tu_fx.client);
    momento_local_stop(tu_fx.server);
    tu_raw_reply_free(tu_fx.reply);
    free(tu_fx.reply);
    memset(&tu_fx, 0, sizeof(tu_fx));
    return 0;
}

momento_config *tu_config(void)
{
    momento_config *cfg = NULL;
    assert_int_equal(momento_config_new(&cfg), MOMENTO_OK);
    return cfg;
}

momento_coalescer *tu_coalescer(momento_client *c)
{
    momento_coalescer *co = NULL;
    assert_int_equal(momento_coalescer_new(&co, c), MOMENTO_OK);
    return co;
}

momento_coalescer_stats tu_coalescer_stats(momento_coalescer *co)
{
    momento_coalescer_stats k;
    assert_int_equal(momento_coalescer_stats_get(co, &k, sizeof(k)), MOMENTO_OK);
    return k;
}

momento_client *tu_patient_client(momento_local *s, uint32_t timeout_ms)
{
    momento_config *cfg = tu_config();
    assert_int_equal(momento_config_set_timeout_ms(cfg, (uint32_t)TU_MS(timeout_ms)), MOMENTO_OK);
    assert_int_equal(momento_config_set_keepalive(cfg, (uint32_t)TU_MS(5000), (uint32_t)TU_MS(1000)),
                     MOMENTO_OK);
    momento_client *c = tu_client(s, cfg);
    momento_config_free(cfg);
    return c;
}

/* Both: a client of `creds`, which it frees. */
static momento_client *client_of(momento_credentials *creds, const momento_config *cfg)
{
    momento_client *c = NULL;
    assert_int_equal(momento_client_new(&c, cfg, creds), MOMENTO_OK);
    momento_credentials_free(creds);
    return c;
}

momento_client *tu_client_at(const char *endpoint, const momento_config *cfg)
{
    momento_credentials *creds = NULL;
    assert_int_equal(momento_credentials_local(&creds, endpoint), MOMENTO_OK);
    return client_of(creds, cfg);
}

momento_client *tu_client_with_key(momento_local *s, const char *key)
{
    momento_credentials *creds = NULL;
    assert_int_equal(momento_credentials_local_with_key(&creds, momento_local_endpoint(s), key),
                     MOMENTO_OK);
    return client_of(creds, NULL);
}

momento_client *tu_client_with_endpoints(const char *token, const char *cache_endpoint,
                                         const char *control_endpoint, const momento_config *cfg)
{
    momento_credentials *creds = NULL;
    assert_int_equal(
        momento_credentials_with_endpoints(&creds, token, cache_endpoint, control_endpoint),
        MOMENTO_OK);
    return client_of(creds, cfg);
}

void tu_create_cache(momento_client *c, const char *cache)
{
    momento_result *r = NULL;
    assert_int_equal(momento_create_cache_sync(c, cache, NULL, &r), MOMENTO_OK);
    assert_int_equal(momento_result_outcome(r), MOMENTO_OUTCOME_CREATED);
    momento_result_free(r);
}

void tu_counter_init(tu_counter *k)
{
    memset(k, 0, sizeof(*k));
    pthread_mutex_init(&k->lock, NULL);
    pthread_cond_init(&k->cond, NULL);
}

void tu_counter_destroy(tu_counter *k)
{
    pthread_mutex_destroy(&k->lock);
    pthread_cond_destroy(&k->cond);
}

void tu_count_cb(const momento_result *r, void *userdata)
{
    tu_counter *k = userdata;
    int err = momento_result_error(r);
    pthread_mutex_lock(&k->lock);
    k->total++;
    if (err == MOMENTO_OK)
        k->ok++;
    else if (-err < 64) {
        if (getenv("TU_DEBUG") && k->by_error[-err] == 0) /* first of each kind */
            fprintf(stderr, "tu: first %s: %s\n", momento_error_name(err),
                    momento_result_message(r));
        k->by_error[-err]++;
    }
    if (momento_result_is_hit(r)) {
        k->hits++;
        size_t len;
        const void *v = momento_result_value(r, &len);
        if (k->expect && (len != k->expect_len || memcmp(v, k->expect, len) != 0))
            k->bad_values++;
    }
    pthread_cond_broadcast(&k->cond);
    pthread_mutex_unlock(&k->lock);
}

void tu_cond_wait_ms(pthread_cond_t *cv, pthread_mutex_t *mu, int ms)
{
    struct timespec until = tu_deadline_ms(ms);
    pthread_cond_timedwait(cv, mu, &until);
}

void tu_assert_get(momento_client *c, const char *cache, const void *key, size_t key_len,
                   const void *want, size_t want_len)
{
    momento_result *r = NULL;
    assert_int_equal(momento_get_sync(c, cache, key, key_len, NULL, &r), MOMENTO_OK);
    if (want) {
        size_t len = 0;
        const void *v = momento_result_value(r, &len);
        assert_true(momento_result_is_hit(r));
        assert_int_equal(len, want_len);
        assert_memory_equal(v, want, len);
    } else {
        assert_int_equal(momento_result_outcome(r), MOMENTO_OUTCOME_MISS);
    }
    momento_result_free(r);
}

void tu_assert_get_str(momento_client *c, const char *cache, const char *key, const char *want)
{
    tu_assert_get(c, cache, key, strlen(key), want, want ? strlen(want) : 0);
}

static pthread_mutex_t tu_rec_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t tu_rec_cond = PTHREAD_COND_INITIALIZER;
static int tu_rec_seq;

void tu_rec_cb(const momento_result *r, void *userdata)
{
    tu_rec *x = userdata;
    char name[16] = "";
    pthread_getname_np(pthread_self(), name, sizeof(name));
    size_t len = 0;
    const void *v = momento_result_value(r, &len);
    pthread_mutex_lock(&tu_rec_lock);
    x->calls++;
    x->error = momento_result_error(r);
    x->outcome = momento_result_outcome(r);
    x->attempts = momento_result_attempts(r);
    x->value_len = v ? (len < sizeof(x->value) ? len : sizeof(x->value) - 1) : 0;
    if (x->value_len)
        memcpy(x->value, v, x->value_len);
    x->value[x->value_len] = 0;
    x->at_ms = tu_now_ms();
    x->seq = ++tu_rec_seq;
    memcpy(x->thread, name, sizeof(x->thread));
    pthread_cond_broadcast(&tu_rec_cond);
    pthread_mutex_unlock(&tu_rec_lock);
}

int tu_rec_calls(const tu_rec *x)
{
    pthread_mutex_lock(&tu_rec_lock);
    int n = x->calls;
    pthread_mutex_unlock(&tu_rec_lock);
    return n;
}

int tu_rec_wait(const tu_rec *x, int timeout_ms)
{
    int64_t until = tu_now_ms() + TU_MS(timeout_ms);
    pthread_mutex_lock(&tu_rec_lock);
    while (x->calls == 0 && tu_now_ms() < until)
        tu_cond_wait_ms(&tu_rec_cond, &tu_rec_lock, 5);
    int n = x->calls;
    pthread_mutex_unlock(&tu_rec_lock);
    return n;
}

void tu_keep_cb(const momento_result *r, void *userdata)
{
    tu_kept *x = userdata;
    momento_result *copy = NULL;
    if (momento_result_dup(r, &copy) != MOMENTO_OK)
        copy = NULL;
    pthread_mutex_lock(&x->k.lock);
    x->copy = copy;
    pthread_mutex_unlock(&x->k.lock);
    tu_count_cb(r, &x->k);
}

void tu_never_cb(const momento_result *r, void *userdata)
{
    (void)r;
    (void)userdata;
    fail_msg("a refused request was called back");
}

void tu_free_client_cb(const momento_result *r, void *userdata)
{
    tu_freer *x = userdata;
    if (x->client) {
        momento_client *c = x->client;
        x->client = NULL;
        momento_client_free(c);
    }
    tu_count_cb(r, &x->k);
}

size_t tu_wait_count(pthread_mutex_t *mu, pthread_cond_t *cv, const size_t *count, size_t n,
                     int timeout_ms)
{
    /* Wake every 100 ms and check the clock: under valgrind a timed wait can
     * return early, and a lost wake-up must not end the wait either. */
    int64_t deadline = tu_now_ms() + TU_MS(timeout_ms);
    pthread_mutex_lock(mu);
    while (*count < n && tu_now_ms() < deadline)
        tu_cond_wait_ms(cv, mu, 100);
    size_t got = *count;
    pthread_mutex_unlock(mu);
    return got;
}

int tu_locked_int(pthread_mutex_t *mu, const int *v)
{
    pthread_mutex_lock(mu);
    int got = *v;
    pthread_mutex_unlock(mu);
    return got;
}

size_t tu_counter_wait(tu_counter *k, size_t n, int timeout_ms)
{
    return tu_wait_count(&k->lock, &k->cond, &k->total, n, timeout_ms);
}

size_t tu_counter_errors(tu_counter *k, int err)
{
    pthread_mutex_lock(&k->lock);
    size_t n = (err < 0 && -err < 64) ? k->by_error[-err] : 0;
    pthread_mutex_unlock(&k->lock);
    return n;
}

int tu_raw_call(const char *target, const char *path, const char *const *headers,
                size_t n_headers, const void *body, size_t len, tu_raw_reply *out)
{
    grpc_init();
    grpc_channel_credentials *creds = grpc_insecure_credentials_create();
    grpc_arg arg[2];
    arg[0].type = arg[1].type = GRPC_ARG_INTEGER;
    arg[0].key = (char *)GRPC_ARG_MAX_SEND_MESSAGE_LENGTH;
    arg[1].key = (char *)GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH;
    arg[0].value.integer = arg[1].value.integer = 64 * 1024 * 1024;
    grpc_channel_args args = {2, arg};
    grpc_channel *ch = grpc_channel_create(target, creds, &args);
    grpc_channel_credentials_release(creds);
    int status = tu_raw_call_on(ch, path, headers, n_headers, body, len, out);
    grpc_channel_destroy(ch);
    grpc_shutdown();
    return status;
}

int tu_raw_call_on(grpc_channel *ch, const char *path, const char *const *headers,
                   size_t n_headers, const void *body, size_t len, tu_raw_reply *out)
{
    memset(out, 0, sizeof(*out));
    grpc_completion_queue *cq = grpc_completion_queue_create_for_pluck(NULL);
    gpr_timespec deadline = gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
                                         gpr_time_from_millis(TU_MS(10000), GPR_TIMESPAN));
    grpc_slice method = grpc_slice_from_copied_string(path);
    grpc_call *call = grpc_channel_create_call(ch, NULL, GRPC_PROPAGATE_DEFAULTS, cq, method, NULL,
                                               deadline, NULL);
    grpc_slice_unref(method);

    grpc_metadata md[16];
    for (size_t i = 0; i < n_headers && i < 16; i++) {
        md[i].key = grpc_slice_from_copied_string(headers[2 * i]);
        md[i].value = grpc_slice_from_copied_string(headers[2 * i + 1]);
    }
    grpc_slice s = grpc_slice_from_copied_buffer(body, len);
    grpc_byte_buffer *send = grpc_raw_byte_buffer_create(&s, 1);
    grpc_slice_unref(s);
    grpc_metadata_array init_md, trailing;
    grpc_metadata_array_init(&init_md);
    grpc_metadata_array_init(&trailing);
    grpc_status_code status;
    grpc_slice details;

    grpc_op ops[4];
    memset(ops, 0, sizeof(ops));
    tu_request_ops(ops, md, n_headers, send);
    ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
    ops[3].data.recv_initial_metadata.recv_initial_metadata = &init_md;
    assert_int_equal(grpc_call_start_batch(call, ops, 4, (void *)1, NULL), GRPC_CALL_OK);
    grpc_completion_queue_pluck(cq, (void *)1, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);

    /* Read messages until the stream ends. */
    for (;;) {
        grpc_byte_buffer *recv = NULL;
        grpc_op op;
        memset(&op, 0, sizeof(op));
        op.op = GRPC_OP_RECV_MESSAGE;
        op.data.recv_message.recv_message = &recv;
        assert_int_equal(grpc_call_start_batch(call, &op, 1, (void *)2, NULL), GRPC_CALL_OK);
        grpc_completion_queue_pluck(cq, (void *)2, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
        if (!recv)
            break;
        grpc_byte_buffer_reader reader;
        grpc_byte_buffer_reader_init(&reader, recv);
        grpc_slice all = grpc_byte_buffer_reader_readall(&reader);
        grpc_byte_buffer_reader_destroy(&reader);
        grpc_byte_buffer_destroy(recv);
        if (out->n_msgs < 2048) {
            size_t n = GRPC_SLICE_LENGTH(all);
            out->msgs[out->n_msgs] = malloc(n + 1);
            memcpy(out->msgs[out->n_msgs], GRPC_SLICE_START_PTR(all), n);
            out->lens[out->n_msgs++] = n;
        }
        grpc_slice_unref(all);
    }
    grpc_op st;
    memset(&st, 0, sizeof(st));
    st.op = GRPC_OP_RECV_STATUS_ON_CLIENT;
    st.data.recv_status_on_client.trailing_metadata = &trailing;
    st.data.recv_status_on_client.status = &status;
    st.data.recv_status_on_client.status_details = &details;
    assert_int_equal(grpc_call_start_batch(call, &st, 1, (void *)3, NULL), GRPC_CALL_OK);
    grpc_completion_queue_pluck(cq, (void *)3, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);

    out->status = (int)status;
    size_t dl = GRPC_SLICE_LENGTH(details);
    if (dl >= sizeof(out->details))
        dl = sizeof(out->details) - 1;
    memcpy(out->details, GRPC_SLICE_START_PTR(details), dl);
    for (size_t i = 0; i < trailing.count; i++) {
        if (grpc_slice_str_cmp(trailing.metadata[i].key, "err") == 0) {
            size_t n = GRPC_SLICE_LENGTH(trailing.metadata[i].value);
            if (n >= sizeof(out->err))
                n = sizeof(out->err) - 1;
            memcpy(out->err, GRPC_SLICE_START_PTR(trailing.metadata[i].value), n);
        }
    }

    grpc_slice_unref(details);
    grpc_metadata_array_destroy(&init_md);
    grpc_metadata_array_destroy(&trailing);
    grpc_byte_buffer_destroy(send);
    for (size_t i = 0; i < n_headers && i < 16; i++) {
        grpc_slice_unref(md[i].key);
        grpc_slice_unref(md[i].value);
    }
    grpc_call_unref(call);
    grpc_completion_queue_shutdown(cq);
    grpc_completion_queue_destroy(cq);
    return out->status;
}

int tu_raw_call_msg(const char *target, const char *path, const char *const *headers,
                    size_t n_headers, const ProtobufCMessage *m, tu_raw_reply *out)
{
    size_t len = protobuf_c_message_get_packed_size(m);
    uint8_t *buf = malloc(len + 1); /* + 1: an empty message is not a NULL buffer */
    assert_non_null(buf);
    protobuf_c_message_pack(m, buf);
    tu_raw_reply *dropped = out ? NULL : malloc(sizeof(*dropped));
    if (!out)
        assert_non_null(dropped);
    int st = tu_raw_call(target, path, headers, n_headers, buf, len, out ? out : dropped);
    free(buf);
    if (dropped) {
        tu_raw_reply_free(dropped);
        free(dropped);
    }
    return st;
}

void tu_raw_reply_free(tu_raw_reply *r)
{
    for (size_t i = 0; i < r->n_msgs; i++)
        free(r->msgs[i]);
    r->n_msgs = 0;
}

momento_outcome tu_outcome(int rc, momento_result **r)
{
    assert_int_equal(rc, MOMENTO_OK);
    momento_outcome o = momento_result_outcome(*r);
    momento_result_free(*r);
    *r = NULL;
    return o;
}

void tu_assert_refusal(momento_result **r, int err)
{
    assert_non_null(*r);
    assert_int_equal(momento_result_error(*r), err);
    assert_int_equal(momento_result_outcome(*r), MOMENTO_OUTCOME_ERROR);
    const char *why = momento_result_message(*r);
    assert_true(strlen(why) > 0);
    assert_string_not_equal(why, momento_strerror(err));
    assert_string_equal(why, momento_refusal_reason());
    momento_result_free(*r);
    *r = NULL;
}

momento_local_options *tu_options(const char *cache)
{
    momento_local_options *o = NULL;
    assert_int_equal(momento_local_options_new(&o), MOMENTO_OK);
    if (cache)
        assert_int_equal(momento_local_options_add_cache(o, cache), MOMENTO_OK);
    return o;
}

momento_local *tu_start(momento_local_options *o)
{
    momento_local *s = tu_server(o);
    momento_local_options_free(o);
    return s;
}

momento_local *tu_server_with_token(const char *token)
{
    momento_local_options *o = tu_options("c");
    assert_int_equal(momento_local_options_set_auth_token(o, token), MOMENTO_OK);
    return tu_start(o);
}

momento_local *tu_server_with_cache(const char *cache)
{
    return tu_start(tu_options(cache));
}

/* ---- A server that never answers. */

struct tu_silent {
    int listen_fd;
    int wake[2];           /* a byte here ends the thread */
    pthread_t thread;
    char endpoint[32];
};

enum { SILENT_MAX_CONNS = 64 };

static void *silent_loop(void *arg)
{
    tu_silent *s = arg;
    struct pollfd fds[2 + SILENT_MAX_CONNS];
    size_t n_conns = 0;
    fds[0] = (struct pollfd){.fd = s->listen_fd, .events = POLLIN};
    fds[1] = (struct pollfd){.fd = s->wake[0], .events = POLLIN};
    for (;;) {
        if (poll(fds, 2 + n_conns, -1) < 0)
            continue;
        if (fds[1].revents)
            break;
        if (fds[0].revents & POLLIN) {
            int fd = accept(s->listen_fd, NULL, NULL);
            if (fd >= 0 && n_conns < SILENT_MAX_CONNS)
                fds[2 + n_conns++] = (struct pollfd){.fd = fd, .events = POLLIN};
            else if (fd >= 0)
                close(fd);
        }
        for (size_t i = 0; i < n_conns; i++) {
            if (!fds[2 + i].revents)
                continue;
            char buf[4096];
            if (read(fds[2 + i].fd, buf, sizeof(buf)) <= 0) { /* gone: forget it */
                close(fds[2 + i].fd);
                fds[2 + i] = fds[2 + --n_conns];
                i--;
            }
        }
    }
    for (size_t i = 0; i < n_conns; i++)
        close(fds[2 + i].fd);
    return NULL;
}

int tu_listen_loopback(int backlog, char *endpoint, size_t size)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(fd, backlog), 0);
    socklen_t len = sizeof(a);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    snprintf(endpoint, size, "127.0.0.1:%u", (unsigned)ntohs(a.sin_port));
    return fd;
}

tu_silent *tu_silent_start(void)
{
    tu_silent *s = calloc(1, sizeof(*s));
    assert_non_null(s);
    s->listen_fd = tu_listen_loopback(64, s->endpoint, sizeof(s->endpoint));
    assert_int_equal(pipe(s->wake), 0);
    assert_int_equal(pthread_create(&s->thread, NULL, silent_loop, s), 0);
    return s;
}

const char *tu_silent_endpoint(const tu_silent *s)
{
    return s->endpoint;
}

void tu_silent_stop(tu_silent *s)
{
    if (!s)
        return;
    assert_int_equal(write(s->wake[1], "x", 1), 1);
    pthread_join(s->thread, NULL);
    close(s->listen_fd);
    close(s->wake[0]);
    close(s->wake[1]);
    free(s);
}

momento_client *tu_silent_client(const tu_silent *s, const momento_config *cfg)
{
    return tu_client_at(s->endpoint, cfg);
}

int64_t tu_now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

bool tu_topic_seq_jump(tu_topic_seq *q, uint64_t seq, uint64_t page, bool known)
{
    bool moved = q->known && page != q->page;
    q->last = seq;
    q->page = page;
    q->known = known;
    return moved;
}

void tu_topic_seq_item(tu_topic_seq *q, uint64_t seq, uint64_t page)
{
    if (q->known && (page != q->page || seq != q->last + 1))
        fail_msg("item %llu of page %llu after %llu of page %llu with no discontinuity",
                 (unsigned long long)seq, (unsigned long long)page, (unsigned long long)q->last,
                 (unsigned long long)q->page);
    tu_topic_seq_jump(q, seq, page, true);
}

uint64_t tu_rng(void)
{
    static uint64_t state = 0x9e3779b97f4a7c15ull;
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
}

int tu_count_threads(const char *name, bool prefix, char *names, size_t names_size)
{
    DIR *d = opendir("/proc/self/task");
    assert_non_null(d);
    int n = 0;
    size_t used = 0;
    if (names_size)
        names[0] = '\0';
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char path[300];
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue; /* the thread ended since readdir() saw it */
        char comm[32] = "";
        if (!fgets(comm, sizeof comm, f))
            comm[0] = '\0';
        fclose(f);
        comm[strcspn(comm, "\n")] = '\0';
        if (prefix ? strncmp(comm, name, strlen(name)) == 0 : strcmp(comm, name) == 0)
            n++;
        if (used < names_size) {
            int w = snprintf(names + used, names_size - used, "%s%s", used ? ", " : "", comm);
            if (w > 0)
                used += (size_t)w;
        }
    }
    closedir(d);
    return n;
}

int tu_threads_named(const char *name)
{
    return tu_count_threads(name, false, NULL, 0);
}

struct tu_gate {
    atomic_int state; /* 1 while the callback holds the thread, 2 once it left */
    atomic_int open;
};

static void gate_cb(const momento_result *r, void *ud)
{
    (void)r;
    tu_gate *g = ud;
    atomic_store(&g->state, 1);
    tu_wait_until(atomic_load(&g->open), 60000);
    atomic_store(&g->state, 2);
}

tu_gate *tu_gate_close(momento_client *c)
{
    tu_gate *g = calloc(1, sizeof(*g));
    assert_non_null(g);
    atomic_init(&g->state, 0);
    atomic_init(&g->open, 0);
    assert_int_equal(momento_item_get_type(c, "c", "gate", 4, NULL, gate_cb, g), MOMENTO_OK);
    tu_wait_until(atomic_load(&g->state) == 1, 20000);
    assert_int_equal(atomic_load(&g->state), 1);
    return g;
}

void tu_gate_open(tu_gate *g)
{
    atomic_store(&g->open, 1);
    tu_wait_until(atomic_load(&g->state) == 2, 20000);
    assert_int_equal(atomic_load(&g->state), 2);
    free(g);
}
