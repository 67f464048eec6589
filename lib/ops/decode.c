/* The decoder table, expanded from the RPC table (decode.h says what for). */
#include "ops/decode.h"

const momento__decode_fn momento__decoders[MOMENTO__RPC_COUNT] = {
#define MOMENTO_RPC(ID, fn, ...) [MOMENTO__RPC_##ID] = momento__decode_##fn,
#define MOMENTO_RPC_SERVER_ONLY(ID, fn, ...) [MOMENTO__RPC_##ID] = NULL,
#include "methods.def"
#undef MOMENTO_RPC
#undef MOMENTO_RPC_SERVER_ONLY
};
