/* The set RPCs. Not served yet: each answers UNIMPLEMENTED, as
 * momento-local did before the RPC was in the table. */
#include "srv_rpc.h"

#include <grpc/status.h>

void srv_set_fetch(momento_local *s, store_cache *c, const ProtobufCMessage *msg, srv_reply *r)
{
    (void)s;
    (void)c;
    (void)msg;
    srv_reply_error(r, GRPC_STATUS_UNIMPLEMENTED, NULL, "SetFetch is not served by momento-local yet");
}

void srv_set_sample(momento_local *s, store_cache *c, const ProtobufCMessage *msg, srv_reply *r)
{
    (void)s;
    (void)c;
    (void)msg;
    srv_reply_error(r, GRPC_STATUS_UNIMPLEMENTED, NULL, "SetSample is not served by momento-local yet");
}

void srv_set_union(momento_local *s, store_cache *c, const ProtobufCMessage *msg, srv_reply *r)
{
    (void)s;
    (void)c;
    (void)msg;
    srv_reply_error(r, GRPC_STATUS_UNIMPLEMENTED, NULL, "SetUnion is not served by momento-local yet");
}

void srv_set_difference(momento_local *s, store_cache *c, const ProtobufCMessage *msg, srv_reply *r)
{
    (void)s;
    (void)c;
    (void)msg;
    srv_reply_error(r, GRPC_STATUS_UNIMPLEMENTED, NULL, "SetDifference is not served by momento-local yet");
}

void srv_set_contains(momento_local *s, store_cache *c, const ProtobufCMessage *msg, srv_reply *r)
{
    (void)s;
    (void)c;
    (void)msg;
    srv_reply_error(r, GRPC_STATUS_UNIMPLEMENTED, NULL, "SetContains is not served by momento-local yet");
}

void srv_set_length(momento_local *s, store_cache *c, const ProtobufCMessage *msg, srv_reply *r)
{
    (void)s;
    (void)c;
    (void)msg;
    srv_reply_error(r, GRPC_STATUS_UNIMPLEMENTED, NULL, "SetLength is not served by momento-local yet");
}

void srv_set_pop(momento_local *s, store_cache *c, const ProtobufCMessage *msg, srv_reply *r)
{
    (void)s;
    (void)c;
    (void)msg;
    srv_reply_error(r, GRPC_STATUS_UNIMPLEMENTED, NULL, "SetPop is not served by momento-local yet");
}
