/* The decoder table (decode.c): each RPC's decoder, named by the RPC table
 * (common/methods.def) as momento__decode_<fn> and defined in the op file
 * of its family, which hands it to the call it starts. The table itself is
 * what proves, at link time and in tests/lib/test_methods.c, that every
 * RPC the library makes has one; nothing on a request's path reads it, so
 * the engine knows no operation. */
#ifndef MOMENTO_DECODE_H
#define MOMENTO_DECODE_H

#include "codec/unpack.h"

#define MOMENTO_RPC(ID, fn, ...) MOMENTO__DECODER(fn);
#define MOMENTO_RPC_SERVER_ONLY(ID, fn, ...)
#include "methods.def"
#undef MOMENTO_RPC
#undef MOMENTO_RPC_SERVER_ONLY

/* Indexed by momento__rpc_id; NULL for RPCs the library never makes (the
 * table's `server_only` rows). Constant; any thread. */
extern const momento__decode_fn momento__decoders[MOMENTO__RPC_COUNT];

#endif
