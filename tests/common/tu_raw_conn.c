/* Raw gRPC calls left open on a connection of the test's own
 * (tu_raw_conn.h). */
#include "tu_raw_conn.h"

#include "testutil.h"

#include <grpc/byte_buffer.h>
#include <grpc/grpc_security.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <string.h>

size_t tu_request_ops(grpc_op *ops, grpc_metadata *md, size_t n, grpc_byte_buffer *send)
{
    memset(ops, 0, 3 * sizeof(*ops));
    ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
    ops[0].data.send_initial_metadata.count = n;
    ops[0].data.send_initial_metadata.metadata = md;
    ops[1].op = GRPC_OP_SEND_MESSAGE;
    ops[1].data.send_message.send_message = send;
    ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
    return 3;
}

void tu_raw_conn_open_bdp(tu_raw_conn *k, const char *target, int bdp)
{
    grpc_init();
    grpc_channel_credentials *creds = grpc_insecure_credentials_create();
    grpc_arg arg[3];
    arg[0].type = arg[1].type = arg[2].type = GRPC_ARG_INTEGER;
    arg[0].key = (char *)GRPC_ARG_MAX_SEND_MESSAGE_LENGTH;
    arg[1].key = (char *)GRPC_ARG_ENABLE_RETRIES;
    arg[2].key = (char *)GRPC_ARG_HTTP2_BDP_PROBE;
    arg[0].value.integer = 64 * 1024 * 1024;
    arg[1].value.integer = 0;
    arg[2].value.integer = bdp;
    grpc_channel_args args = {3, arg};
    k->ch = grpc_channel_create(target, creds, &args);
    grpc_channel_credentials_release(creds);
    k->cq = grpc_completion_queue_create_for_next(NULL);
}

void tu_raw_conn_open(tu_raw_conn *k, const char *target)
{
    tu_raw_conn_open_bdp(k, target, 1);
}

void tu_raw_conn_close(tu_raw_conn *k)
{
    grpc_channel_destroy(k->ch);
    grpc_completion_queue_shutdown(k->cq);
    while (grpc_completion_queue_next(k->cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL).type !=
           GRPC_QUEUE_SHUTDOWN)
        ;
    grpc_completion_queue_destroy(k->cq);
    grpc_shutdown();
}

void tu_open_call_start(tu_raw_conn *k, tu_open_call *oc, const char *path,
                        const char *const *hdrs, size_t n, const void *body, size_t len,
                        int64_t deadline_ms)
{
    memset(oc, 0, sizeof(*oc));
    gpr_timespec deadline = deadline_ms ? gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
                                                       gpr_time_from_millis(deadline_ms, GPR_TIMESPAN))
                                        : gpr_inf_future(GPR_CLOCK_MONOTONIC);
    grpc_slice method = grpc_slice_from_copied_string(path);
    oc->deadline = deadline;
    oc->call = grpc_channel_create_call(k->ch, NULL, GRPC_PROPAGATE_DEFAULTS, k->cq, method, NULL,
                                        deadline, NULL);
    grpc_slice_unref(method);
    assert_true(n <= 8);
    oc->n_md = n;
    for (size_t i = 0; i < n; i++) {
        oc->md[i].key = grpc_slice_from_copied_string(hdrs[2 * i]);
        oc->md[i].value = grpc_slice_from_copied_string(hdrs[2 * i + 1]);
    }
    grpc_slice sl = grpc_slice_from_copied_buffer(body, len);
    oc->send = grpc_raw_byte_buffer_create(&sl, 1);
    grpc_slice_unref(sl);
    grpc_metadata_array_init(&oc->init_md);
    grpc_metadata_array_init(&oc->trailing);
    grpc_op ops[6];
    memset(ops, 0, sizeof(ops));
    tu_request_ops(ops, oc->md, n, oc->send);
    ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
    ops[3].data.recv_initial_metadata.recv_initial_metadata = &oc->init_md;
    ops[4].op = GRPC_OP_RECV_MESSAGE;
    ops[4].data.recv_message.recv_message = &oc->recv;
    ops[5].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
    ops[5].data.recv_status_on_client.trailing_metadata = &oc->trailing;
    ops[5].data.recv_status_on_client.status = &oc->status;
    ops[5].data.recv_status_on_client.status_details = &oc->details;
    assert_int_equal(grpc_call_start_batch(oc->call, ops, 6, oc, NULL), GRPC_CALL_OK);
}

void tu_open_call_close(tu_open_call *oc)
{
    grpc_byte_buffer_destroy(oc->send);
    if (oc->recv)
        grpc_byte_buffer_destroy(oc->recv);
    grpc_metadata_array_destroy(&oc->init_md);
    grpc_metadata_array_destroy(&oc->trailing);
    grpc_slice_unref(oc->details);
    for (size_t i = 0; i < oc->n_md; i++) {
        grpc_slice_unref(oc->md[i].key);
        grpc_slice_unref(oc->md[i].value);
    }
    grpc_call_unref(oc->call);
}

tu_open_call *tu_raw_conn_next(tu_raw_conn *k, int64_t timeout_ms)
{
    gpr_timespec until = gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
                                      gpr_time_from_millis(timeout_ms, GPR_TIMESPAN));
    grpc_event ev = grpc_completion_queue_next(k->cq, until, NULL);
    if (ev.type != GRPC_OP_COMPLETE)
        return NULL;
    tu_open_call *oc = ev.tag;
    oc->done = true;
    return oc;
}

uint64_t tu_wait_parked(momento_local *s, uint64_t want, int64_t timeout_ms)
{
    uint64_t n;
    tu_wait_until((n = momento_local_parked_calls(s)) == want, timeout_ms);
    return n;
}
