/* The fake server (fake_server.h): one thread, one call at a time, each
 * step waited for on the thread's own completion queue. */
#include "fake_server.h"

#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/time.h>

#include <setjmp.h>
#include <stdarg.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct tu_fake {
    grpc_server *server;
    grpc_completion_queue *cq;
    pthread_t thread;
    tu_fake_msg_fn fn;
    void *arg;
    int delay_ms;
    atomic_bool stopping;
    atomic_size_t calls, messages;
    atomic_size_t hold_from; /* SIZE_MAX: no hold */
    atomic_bool released;
    char endpoint[64];
};

static char batch_tag, request_tag, shutdown_tag;

/* Waits for the event of `tag` (the shutdown notification may come first:
 * it is skipped). Returns its success. */
static bool wait_for(tu_fake *f, void *tag)
{
    for (;;) {
        grpc_event ev = grpc_completion_queue_next(f->cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL);
        if (ev.type == GRPC_OP_COMPLETE && ev.tag == tag)
            return ev.success;
        if (ev.type == GRPC_QUEUE_SHUTDOWN)
            return false;
    }
}

/* Runs one batch and waits for it; false when it failed. */
static bool run(tu_fake *f, grpc_call *call, const grpc_op *ops, size_t n)
{
    if (grpc_call_start_batch(call, ops, n, &batch_tag, NULL) != GRPC_CALL_OK)
        return false;
    return wait_for(f, &batch_tag);
}

static void answer(tu_fake *f, grpc_call *call, size_t index)
{
    for (int waited = 0; waited < f->delay_ms && !atomic_load(&f->stopping); waited += 10)
        usleep(10 * 1000);
    while (index >= atomic_load(&f->hold_from) && !atomic_load(&f->released) &&
           !atomic_load(&f->stopping))
        usleep(1000);
    grpc_op op;
    memset(&op, 0, sizeof(op));
    op.op = GRPC_OP_SEND_INITIAL_METADATA;
    bool ok = run(f, call, &op, 1);
    grpc_slice msg;
    for (size_t i = 0; ok && !atomic_load(&f->stopping) && f->fn(f->arg, index, i, &msg); i++) {
        grpc_byte_buffer *bb = grpc_raw_byte_buffer_create(&msg, 1);
        grpc_slice_unref(msg);
        memset(&op, 0, sizeof(op));
        op.op = GRPC_OP_SEND_MESSAGE;
        op.data.send_message.send_message = bb;
        ok = run(f, call, &op, 1); /* fails once the client has gone */
        grpc_byte_buffer_destroy(bb);
        if (ok)
            atomic_fetch_add(&f->messages, 1);
    }
    int cancelled = 0;
    grpc_op fin[2];
    memset(fin, 0, sizeof(fin));
    grpc_slice details = grpc_empty_slice();
    fin[0].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
    fin[0].data.send_status_from_server.status = GRPC_STATUS_OK;
    fin[0].data.send_status_from_server.status_details = &details;
    /* Trailers on every reply, for the tests of a reply's metadata: the
     * call's index in text, and binary bytes (a NUL among them). */
    char index_text[32];
    snprintf(index_text, sizeof(index_text), "%zu", index);
    static const uint8_t bin[] = {0x00, 0xff, 'x'};
    grpc_metadata trailers[2];
    memset(trailers, 0, sizeof(trailers));
    trailers[0].key = grpc_slice_from_static_string("fake-call");
    trailers[0].value = grpc_slice_from_copied_string(index_text);
    trailers[1].key = grpc_slice_from_static_string("fake-trailer-bin");
    trailers[1].value = grpc_slice_from_static_buffer(bin, sizeof(bin));
    fin[0].data.send_status_from_server.trailing_metadata_count = 2;
    fin[0].data.send_status_from_server.trailing_metadata = trailers;
    fin[1].op = GRPC_OP_RECV_CLOSE_ON_SERVER;
    fin[1].data.recv_close_on_server.cancelled = &cancelled;
    if (!run(f, call, fin, 2))
        grpc_call_cancel(call, NULL);
    grpc_slice_unref(trailers[1].value);
    grpc_slice_unref(trailers[0].value);
}

static void *loop(void *arg)
{
    tu_fake *f = arg;
    for (size_t index = 0;; index++) {
        grpc_call *call = NULL;
        grpc_call_details details;
        grpc_metadata_array md;
        grpc_call_details_init(&details);
        grpc_metadata_array_init(&md);
        bool got = grpc_server_request_call(f->server, &call, &details, &md, f->cq, f->cq,
                                            &request_tag) == GRPC_CALL_OK &&
                   wait_for(f, &request_tag) && call;
        if (got) {
            atomic_fetch_add(&f->calls, 1);
            answer(f, call, index);
        }
        if (call)
            grpc_call_unref(call);
        grpc_call_details_destroy(&details);
        grpc_metadata_array_destroy(&md);
        if (!got)
            return NULL; /* shutting down */
    }
}

tu_fake *tu_fake_start(tu_fake_msg_fn fn, void *arg, int delay_ms)
{
    grpc_init();
    tu_fake *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    f->fn = fn;
    f->arg = arg;
    f->delay_ms = delay_ms;
    atomic_store(&f->hold_from, SIZE_MAX);
    f->server = grpc_server_create(NULL, NULL);
    f->cq = grpc_completion_queue_create_for_next(NULL);
    grpc_server_register_completion_queue(f->server, f->cq, NULL);
    grpc_server_credentials *creds = grpc_insecure_server_credentials_create();
    int port = grpc_server_add_http2_port(f->server, "127.0.0.1:0", creds);
    grpc_server_credentials_release(creds);
    assert_true(port > 0);
    snprintf(f->endpoint, sizeof(f->endpoint), "127.0.0.1:%d", port);
    grpc_server_start(f->server);
    assert_int_equal(pthread_create(&f->thread, NULL, loop, f), 0);
    return f;
}

const char *tu_fake_endpoint(const tu_fake *f)
{
    return f->endpoint;
}

void tu_fake_hold_from(tu_fake *f, size_t call)
{
    atomic_store(&f->released, false);
    atomic_store(&f->hold_from, call);
}

void tu_fake_release(tu_fake *f)
{
    atomic_store(&f->released, true);
}

size_t tu_fake_calls(tu_fake *f)
{
    return atomic_load(&f->calls);
}

size_t tu_fake_messages(tu_fake *f)
{
    return atomic_load(&f->messages);
}

void tu_fake_stop(tu_fake *f)
{
    atomic_store(&f->stopping, true);
    grpc_server_shutdown_and_notify(f->server, f->cq, &shutdown_tag);
    grpc_server_cancel_all_calls(f->server);
    pthread_join(f->thread, NULL);
    /* The shutdown notification, and anything else left. */
    grpc_completion_queue_shutdown(f->cq);
    while (grpc_completion_queue_next(f->cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL).type !=
           GRPC_QUEUE_SHUTDOWN)
        ;
    grpc_server_destroy(f->server);
    grpc_completion_queue_destroy(f->cq);
    free(f);
    grpc_shutdown();
}
