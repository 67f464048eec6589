/* A topic publish on the wire (publish.h). */
#include "topics/publish.h"

#include "base/alloc.h"
#include "codec/unpack.h"

#include "cachepubsub.pb-c.h"

#include <stdlib.h>

/* Named by the RPC table (ops/decode.h declares every RPC's decoder). */
MOMENTO__DECODER(topic_publish);
MOMENTO__EMPTY_DECODER(topic_publish, MOMENTO_OUTCOME_SUCCESS)

int momento__topic_publish_send(momento_client *c, const char *cache, const char *topic,
                                const void *value, size_t value_len, bool text,
                                const momento__call_opts *co, momento_callback cb,
                                void *userdata)
{
    /* Packed as bytes either way (protobuf-c would strlen() a string: one
     * pass more over the value); a text then has its field tag changed
     * below, as a string and bytes share the wire type. */
    CacheClient__Pubsub__TopicValue v = CACHE_CLIENT__PUBSUB____TOPIC_VALUE__INIT;
    v.kind_case = CACHE_CLIENT__PUBSUB____TOPIC_VALUE__KIND_BINARY;
    v.binary = (ProtobufCBinaryData){.len = value_len, .data = (uint8_t *)(value_len ? value : "")};
    CacheClient__Pubsub__PublishRequest req = CACHE_CLIENT__PUBSUB____PUBLISH_REQUEST__INIT;
    req.cache_name = (char *)cache;
    req.topic = (char *)topic;
    req.value = &v;
    if (!text)
        return momento__call_start_with(c, MOMENTO__RPC_TOPIC_PUBLISH, momento__decode_topic_publish,
                                        NULL, &req.base, co, cb, userdata);

    /* Text: send the request packed here, the value as field 1. */
    size_t vsize = protobuf_c_message_get_packed_size(&v.base);
    uint8_t *packed = momento__malloc(protobuf_c_message_get_packed_size(&req.base) + 1);
    if (!packed)
        return MOMENTO_ERR_NO_MEMORY;
    size_t len = protobuf_c_message_pack(&req.base, packed);
    /* The value's first byte is its field tag: binary (2 << 3 | 2) becomes
     * text (1 << 3 | 2). It sits at the end of the request, the value
     * being its last field. */
    packed[len - vsize] = (1 << 3) | 2;
    momento__call_opts with = *co;
    with.packed = packed;
    with.packed_len = len;
    int rc = momento__call_start_with(c, MOMENTO__RPC_TOPIC_PUBLISH, momento__decode_topic_publish,
                                      NULL, NULL, &with, cb, userdata);
    free(packed);
    return rc;
}
