/* The sorted set RPCs. Not served yet: each answers UNIMPLEMENTED, as
 * momento-local did before the RPC was in the table. */
#include "srv_rpc.h"

#include <grpc/status.h>

void srv_sorted_set_put(momento_local *s, store_cache *c, const ProtobufCMessage *msg, srv_reply *r)
{
    (void)s;
    (void)c;
    (void)msg;
    srv_reply_error(r, GRPC_STATUS_UNIMPLEMENTED, NULL, "SortedSetPut is not served by momento-local yet");
}

void srv_sorted_set_fetch(momento_local *s, store_cache *c, const ProtobufCMessage *msg, srv_reply *r)
{
    (void)s;
    (void)c;
    (void)msg;
    srv_reply_error(r, GRPC_STATUS_UNIMPLEMENTED, NULL, "SortedSetFetch is not served by momento-local yet");
}

void srv_sorted_set_get_score(momento_local *s, store_cache *c, const ProtobufCMessage *msg, srv_reply *r)
{
    (void)s;
    (void)c;
    (void)msg;
    srv_reply_error(r, GRPC_STATUS_UNIMPLEMENTED, NULL, "SortedSetGetScore is not served by momento-local yet");
}

void srv_sorted_set_remove(momento_local *s, store_cache *c, const ProtobufCMessage *msg, srv_reply *r)
{
    (void)s;
    (void)c;
    (void)msg;
    srv_reply_error(r, GRPC_STATUS_UNIMPLEMENTED, NULL, "SortedSetRemove is not served by momento-local yet");
}

void srv_sorted_set_increment(momento_local *s, store_cache *c, const ProtobufCMessage *msg, srv_reply *r)
{
    (void)s;
    (void)c;
    (void)msg;
    srv_reply_error(r, GRPC_STATUS_UNIMPLEMENTED, NULL, "SortedSetIncrement is not served by momento-local yet");
}

void srv_sorted_set_get_rank(momento_local *s, store_cache *c, const ProtobufCMessage *msg, srv_reply *r)
{
    (void)s;
    (void)c;
    (void)msg;
    srv_reply_error(r, GRPC_STATUS_UNIMPLEMENTED, NULL, "SortedSetGetRank is not served by momento-local yet");
}

void srv_sorted_set_length(momento_local *s, store_cache *c, const ProtobufCMessage *msg, srv_reply *r)
{
    (void)s;
    (void)c;
    (void)msg;
    srv_reply_error(r, GRPC_STATUS_UNIMPLEMENTED, NULL, "SortedSetLength is not served by momento-local yet");
}

void srv_sorted_set_length_by_score(momento_local *s, store_cache *c, const ProtobufCMessage *msg, srv_reply *r)
{
    (void)s;
    (void)c;
    (void)msg;
    srv_reply_error(r, GRPC_STATUS_UNIMPLEMENTED, NULL, "SortedSetLengthByScore is not served by momento-local yet");
}

void srv_sorted_set_union_store(momento_local *s, store_cache *c, const ProtobufCMessage *msg, srv_reply *r)
{
    (void)s;
    (void)c;
    (void)msg;
    srv_reply_error(r, GRPC_STATUS_UNIMPLEMENTED, NULL, "SortedSetUnionStore is not served by momento-local yet");
}
