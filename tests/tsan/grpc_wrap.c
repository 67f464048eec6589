/* Makes gRPC core's completion hand-off visible to ThreadSanitizer.
 *
 * gRPC core (Debian's libgrpc, not built with TSan, its mutexes absl's
 * futex-based ones) carries a batch from the thread that starts it to the
 * thread that takes its completion from the queue, through synchronisation
 * TSan cannot see. Without this, every field a submitting thread writes into
 * a call before grpc_call_start_batch() and the completion thread reads
 * afterwards would be reported as a race. The stress test is linked with
 *   -Wl,--wrap=grpc_call_start_batch -Wl,--wrap=grpc_completion_queue_next
 *   (and the other functions below that hand a tag to gRPC)
 * so that every such call in the test, in libmomento's static archive and in
 * momento-local's lands here: starting a batch releases its tag, and taking
 * a completed event acquires it. That is exactly gRPC's documented
 * guarantee (a completion "happens after" the batch that produced it), and
 * nothing more: memory handed over by any other route is still checked. */
#include <grpc/grpc.h>
#include <sanitizer/tsan_interface.h>

grpc_call_error __real_grpc_call_start_batch(grpc_call *call, const grpc_op *ops, size_t nops,
                                             void *tag, void *reserved);
grpc_call_error __wrap_grpc_call_start_batch(grpc_call *call, const grpc_op *ops, size_t nops,
                                             void *tag, void *reserved);
grpc_event __real_grpc_completion_queue_next(grpc_completion_queue *cq, gpr_timespec deadline,
                                             void *reserved);
grpc_event __wrap_grpc_completion_queue_next(grpc_completion_queue *cq, gpr_timespec deadline,
                                             void *reserved);
grpc_call_error __real_grpc_server_request_call(grpc_server *server, grpc_call **call,
                                                grpc_call_details *details,
                                                grpc_metadata_array *request_metadata,
                                                grpc_completion_queue *cq_bound_to_call,
                                                grpc_completion_queue *cq_for_notification,
                                                void *tag);
grpc_call_error __wrap_grpc_server_request_call(grpc_server *server, grpc_call **call,
                                                grpc_call_details *details,
                                                grpc_metadata_array *request_metadata,
                                                grpc_completion_queue *cq_bound_to_call,
                                                grpc_completion_queue *cq_for_notification,
                                                void *tag);
grpc_call_error __real_grpc_server_request_registered_call(
    grpc_server *server, void *registered_method, grpc_call **call, gpr_timespec *deadline,
    grpc_metadata_array *request_metadata, grpc_byte_buffer **optional_payload,
    grpc_completion_queue *cq_bound_to_call, grpc_completion_queue *cq_for_notification,
    void *tag_new);
grpc_call_error __wrap_grpc_server_request_registered_call(
    grpc_server *server, void *registered_method, grpc_call **call, gpr_timespec *deadline,
    grpc_metadata_array *request_metadata, grpc_byte_buffer **optional_payload,
    grpc_completion_queue *cq_bound_to_call, grpc_completion_queue *cq_for_notification,
    void *tag_new);
void __real_grpc_server_shutdown_and_notify(grpc_server *server, grpc_completion_queue *cq,
                                            void *tag);
void __wrap_grpc_server_shutdown_and_notify(grpc_server *server, grpc_completion_queue *cq,
                                            void *tag);

grpc_call_error __wrap_grpc_call_start_batch(grpc_call *call, const grpc_op *ops, size_t nops,
                                             void *tag, void *reserved)
{
    __tsan_release(tag);
    return __real_grpc_call_start_batch(call, ops, nops, tag, reserved);
}

grpc_event __wrap_grpc_completion_queue_next(grpc_completion_queue *cq, gpr_timespec deadline,
                                             void *reserved)
{
    grpc_event ev = __real_grpc_completion_queue_next(cq, deadline, reserved);
    if (ev.type == GRPC_OP_COMPLETE)
        __tsan_acquire(ev.tag);
    return ev;
}

/* momento-local's requested calls and its shutdown notification: tags too. */
grpc_call_error __wrap_grpc_server_request_call(grpc_server *server, grpc_call **call,
                                                grpc_call_details *details,
                                                grpc_metadata_array *request_metadata,
                                                grpc_completion_queue *cq_bound_to_call,
                                                grpc_completion_queue *cq_for_notification,
                                                void *tag)
{
    __tsan_release(tag);
    return __real_grpc_server_request_call(server, call, details, request_metadata,
                                           cq_bound_to_call, cq_for_notification, tag);
}

grpc_call_error __wrap_grpc_server_request_registered_call(
    grpc_server *server, void *registered_method, grpc_call **call, gpr_timespec *deadline,
    grpc_metadata_array *request_metadata, grpc_byte_buffer **optional_payload,
    grpc_completion_queue *cq_bound_to_call, grpc_completion_queue *cq_for_notification,
    void *tag_new)
{
    __tsan_release(tag_new);
    return __real_grpc_server_request_registered_call(server, registered_method, call, deadline,
                                                      request_metadata, optional_payload,
                                                      cq_bound_to_call, cq_for_notification,
                                                      tag_new);
}

void __wrap_grpc_server_shutdown_and_notify(grpc_server *server, grpc_completion_queue *cq,
                                            void *tag)
{
    __tsan_release(tag);
    __real_grpc_server_shutdown_and_notify(server, cq, tag);
}
