/* What decoders share (unpack.h): scratch memory, unpacking, the empty
 * reply. */
#include "codec/unpack.h"

#include "base/wire.h"
#include "codec/compress.h"

#include <stdlib.h>

void momento__scratch_free(momento__scratch *s)
{
    if (s->msg)
        protobuf_c_message_free_unpacked(s->msg, NULL);
    for (size_t i = 0; i < s->n_msgs; i++)
        protobuf_c_message_free_unpacked(s->msgs[i], NULL);
    free(s->msgs);
    free(s->mem);
    momento__decompressed_free(s->decompressed);
}

void *momento__unpack_reply(momento__rpc_id m, const grpc_slice *msg, momento__scratch *scratch)
{
    scratch->msg = protobuf_c_message_unpack(momento__rpcs[m].response, NULL,
                                             GRPC_SLICE_LENGTH(*msg), GRPC_SLICE_START_PTR(*msg));
    return scratch->msg;
}

int momento__decode_empty(momento_result *r, const grpc_slice *msg, momento_outcome outcome)
{
    if (!momento__wire_valid(GRPC_SLICE_START_PTR(*msg), GRPC_SLICE_LENGTH(*msg)))
        return MOMENTO_ERR_BAD_RESPONSE;
    r->outcome = outcome;
    return MOMENTO_OK;
}
