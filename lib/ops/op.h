/* What the operation files (op_*.c, one per RPC family) share. */
#ifndef MOMENTO_OP_H
#define MOMENTO_OP_H

#include "codec/compress.h"
#include "engine/blocking.h"
#include "engine/call.h"
#include "engine/client.h"
#include "layers/kv_send.h"
#include "model/validate.h"
#include "ops/decode.h"

#include <protobuf-c/protobuf-c.h>

#endif
