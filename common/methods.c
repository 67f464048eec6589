/* The RPC table (methods.def), built once for both sides. */
#include "methods.h"

#include "cacheclient.pb-c.h"
#include "cacheping.pb-c.h"
#include "cachepubsub.pb-c.h"
#include "controlclient.pb-c.h"
#include "token.pb-c.h"
#include "auth.pb-c.h"
#include "leaderboard.pb-c.h"
#include "webhook.pb-c.h"

const momento__rpc momento__rpcs[MOMENTO__RPC_COUNT] = {
#define MOMENTO_RPC(ID, fn, ...) [MOMENTO__RPC_##ID] = {__VA_ARGS__},
#define MOMENTO_RPC_SERVER_ONLY(ID, fn, ...)                                                       \
    [MOMENTO__RPC_##ID] = {__VA_ARGS__, .server_only = true},
#include "methods.def"
#undef MOMENTO_RPC
#undef MOMENTO_RPC_SERVER_ONLY
};
