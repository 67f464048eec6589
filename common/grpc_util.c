#include "grpc_util.h"

#include <grpc/byte_buffer_reader.h>
#include <grpc/support/time.h>

grpc_arg momento__int_arg(const char *key, int value)
{
    grpc_arg a;
    a.type = GRPC_ARG_INTEGER;
    a.key = (char *)key;
    a.value.integer = value;
    return a;
}

void momento__cq_drain(grpc_completion_queue *cq, void (*on_tag)(void *tag, void *arg),
                       void *arg)
{
    grpc_completion_queue_shutdown(cq);
    for (;;) {
        grpc_event ev = grpc_completion_queue_next(cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL);
        if (ev.type == GRPC_QUEUE_SHUTDOWN)
            return;
        if (ev.type == GRPC_OP_COMPLETE && on_tag)
            on_tag(ev.tag, arg);
    }
}

grpc_slice momento__byte_buffer_slice(grpc_byte_buffer *bb)
{
    if (bb->type == GRPC_BB_RAW && bb->data.raw.compression == GRPC_COMPRESS_NONE &&
        bb->data.raw.slice_buffer.count == 1)
        return grpc_slice_ref(bb->data.raw.slice_buffer.slices[0]);
    grpc_slice body = grpc_empty_slice();
    grpc_byte_buffer_reader reader;
    if (grpc_byte_buffer_reader_init(&reader, bb)) {
        body = grpc_byte_buffer_reader_readall(&reader);
        grpc_byte_buffer_reader_destroy(&reader);
    }
    return body;
}
