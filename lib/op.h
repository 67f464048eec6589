/* What the operation files (op_*.c, one per RPC family) share. */
#ifndef MOMENTO_OP_H
#define MOMENTO_OP_H

#include "blocking.h"
#include "call.h"
#include "client.h"
#include "compress.h"
#include "decode.h"
#include "kv_send.h"
#include "validate.h"

#include <protobuf-c/protobuf-c.h>

#endif
