/* Momento Leaderboards (leaderboard.Leaderboard). Not answered yet: every
 * call is UNIMPLEMENTED, as before the service had rows in the table. */
#include "rpc/srv_rpc.h"

static void unimplemented(srv_reply *r)
{
    srv_reply_error(r, GRPC_STATUS_UNIMPLEMENTED, NULL, "leaderboards are not served yet");
}

void srv_delete_leaderboard(momento_local *s, store_cache *c, const ProtobufCMessage *m,
                            srv_reply *r)
{
    unimplemented(r);
}

void srv_upsert_elements(momento_local *s, store_cache *c, const ProtobufCMessage *m, srv_reply *r)
{
    unimplemented(r);
}

void srv_remove_elements(momento_local *s, store_cache *c, const ProtobufCMessage *m, srv_reply *r)
{
    unimplemented(r);
}

void srv_get_leaderboard_length(momento_local *s, store_cache *c, const ProtobufCMessage *m,
                                srv_reply *r)
{
    unimplemented(r);
}

void srv_get_by_rank(momento_local *s, store_cache *c, const ProtobufCMessage *m, srv_reply *r)
{
    unimplemented(r);
}

void srv_get_rank(momento_local *s, store_cache *c, const ProtobufCMessage *m, srv_reply *r)
{
    unimplemented(r);
}

void srv_get_by_score(momento_local *s, store_cache *c, const ProtobufCMessage *m, srv_reply *r)
{
    unimplemented(r);
}

void srv_get_competition_rank(momento_local *s, store_cache *c, const ProtobufCMessage *m,
                              srv_reply *r)
{
    unimplemented(r);
}
