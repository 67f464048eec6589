/* The list RPCs. Not served yet: each answers UNIMPLEMENTED, as
 * momento-local did before the RPC was in the table. */
#include "srv_rpc.h"

#include <grpc/status.h>

void srv_list_push_front(momento_local *s, store_cache *c, const ProtobufCMessage *msg, srv_reply *r)
{
    (void)s;
    (void)c;
    (void)msg;
    srv_reply_error(r, GRPC_STATUS_UNIMPLEMENTED, NULL, "ListPushFront is not served by momento-local yet");
}

void srv_list_push_back(momento_local *s, store_cache *c, const ProtobufCMessage *msg, srv_reply *r)
{
    (void)s;
    (void)c;
    (void)msg;
    srv_reply_error(r, GRPC_STATUS_UNIMPLEMENTED, NULL, "ListPushBack is not served by momento-local yet");
}

void srv_list_pop_front(momento_local *s, store_cache *c, const ProtobufCMessage *msg, srv_reply *r)
{
    (void)s;
    (void)c;
    (void)msg;
    srv_reply_error(r, GRPC_STATUS_UNIMPLEMENTED, NULL, "ListPopFront is not served by momento-local yet");
}

void srv_list_pop_back(momento_local *s, store_cache *c, const ProtobufCMessage *msg, srv_reply *r)
{
    (void)s;
    (void)c;
    (void)msg;
    srv_reply_error(r, GRPC_STATUS_UNIMPLEMENTED, NULL, "ListPopBack is not served by momento-local yet");
}

void srv_list_erase(momento_local *s, store_cache *c, const ProtobufCMessage *msg, srv_reply *r)
{
    (void)s;
    (void)c;
    (void)msg;
    srv_reply_error(r, GRPC_STATUS_UNIMPLEMENTED, NULL, "ListErase is not served by momento-local yet");
}

void srv_list_remove(momento_local *s, store_cache *c, const ProtobufCMessage *msg, srv_reply *r)
{
    (void)s;
    (void)c;
    (void)msg;
    srv_reply_error(r, GRPC_STATUS_UNIMPLEMENTED, NULL, "ListRemove is not served by momento-local yet");
}

void srv_list_fetch(momento_local *s, store_cache *c, const ProtobufCMessage *msg, srv_reply *r)
{
    (void)s;
    (void)c;
    (void)msg;
    srv_reply_error(r, GRPC_STATUS_UNIMPLEMENTED, NULL, "ListFetch is not served by momento-local yet");
}

void srv_list_length(momento_local *s, store_cache *c, const ProtobufCMessage *msg, srv_reply *r)
{
    (void)s;
    (void)c;
    (void)msg;
    srv_reply_error(r, GRPC_STATUS_UNIMPLEMENTED, NULL, "ListLength is not served by momento-local yet");
}

void srv_list_concatenate_front(momento_local *s, store_cache *c, const ProtobufCMessage *msg, srv_reply *r)
{
    (void)s;
    (void)c;
    (void)msg;
    srv_reply_error(r, GRPC_STATUS_UNIMPLEMENTED, NULL, "ListConcatenateFront is not served by momento-local yet");
}

void srv_list_concatenate_back(momento_local *s, store_cache *c, const ProtobufCMessage *msg, srv_reply *r)
{
    (void)s;
    (void)c;
    (void)msg;
    srv_reply_error(r, GRPC_STATUS_UNIMPLEMENTED, NULL, "ListConcatenateBack is not served by momento-local yet");
}

void srv_list_retain(momento_local *s, store_cache *c, const ProtobufCMessage *msg, srv_reply *r)
{
    (void)s;
    (void)c;
    (void)msg;
    srv_reply_error(r, GRPC_STATUS_UNIMPLEMENTED, NULL, "ListRetain is not served by momento-local yet");
}
