#include "grpc_util.h"

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
