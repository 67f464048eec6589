/* The dictionary RPCs. Not served yet: each answers UNIMPLEMENTED, as
 * momento-local did before the RPC was in the table. */
#include "srv_rpc.h"

#include <grpc/status.h>

void srv_dictionary_get(momento_local *s, store_cache *c, const ProtobufCMessage *msg, srv_reply *r)
{
    (void)s;
    (void)c;
    (void)msg;
    srv_reply_error(r, GRPC_STATUS_UNIMPLEMENTED, NULL, "DictionaryGet is not served by momento-local yet");
}

void srv_dictionary_fetch(momento_local *s, store_cache *c, const ProtobufCMessage *msg, srv_reply *r)
{
    (void)s;
    (void)c;
    (void)msg;
    srv_reply_error(r, GRPC_STATUS_UNIMPLEMENTED, NULL, "DictionaryFetch is not served by momento-local yet");
}

void srv_dictionary_set(momento_local *s, store_cache *c, const ProtobufCMessage *msg, srv_reply *r)
{
    (void)s;
    (void)c;
    (void)msg;
    srv_reply_error(r, GRPC_STATUS_UNIMPLEMENTED, NULL, "DictionarySet is not served by momento-local yet");
}

void srv_dictionary_increment(momento_local *s, store_cache *c, const ProtobufCMessage *msg, srv_reply *r)
{
    (void)s;
    (void)c;
    (void)msg;
    srv_reply_error(r, GRPC_STATUS_UNIMPLEMENTED, NULL, "DictionaryIncrement is not served by momento-local yet");
}

void srv_dictionary_delete(momento_local *s, store_cache *c, const ProtobufCMessage *msg, srv_reply *r)
{
    (void)s;
    (void)c;
    (void)msg;
    srv_reply_error(r, GRPC_STATUS_UNIMPLEMENTED, NULL, "DictionaryDelete is not served by momento-local yet");
}

void srv_dictionary_length(momento_local *s, store_cache *c, const ProtobufCMessage *msg, srv_reply *r)
{
    (void)s;
    (void)c;
    (void)msg;
    srv_reply_error(r, GRPC_STATUS_UNIMPLEMENTED, NULL, "DictionaryLength is not served by momento-local yet");
}
