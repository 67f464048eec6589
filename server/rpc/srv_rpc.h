/* The RPC handlers, one per row of common/methods.def, declared from the
 * table so that a row and its handler cannot drift apart, and the
 * dispatcher that calls them (dispatch.c).
 *
 * A handler is `srv_<fn>` for the row's second column, in the file of its
 * family (rpc_kv.c, rpc_conditional.c, rpc_ttl.c, rpc_batch.c,
 * rpc_control.c, the collection families, rpc_topics.c). It gets the decoded request (momento__rpcs[].request's
 * type; borrowed, freed by the dispatcher), the cache the `cache` header
 * names for a data-plane RPC or the request's `cache_name` for a topic RPC
 * (NULL for the others), and fills `r`: one message for a unary OK, any
 * number for a stream, none with an error; Subscribe leaves a subscription
 * in r->sub instead (rpc_topics.c).
 * Server thread only. */
#ifndef MOMENTO_LOCAL_SRV_RPC_H
#define MOMENTO_LOCAL_SRV_RPC_H

#include "core/srv_reply.h"
#include "core/srv_server.h"
#include "data/srv_yield.h"
#include "data/store.h"
#include "methods.h"

#include <protobuf-c/protobuf-c.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef void srv_handler(momento_local *s, store_cache *c, const ProtobufCMessage *req,
                         srv_reply *r);

#define MOMENTO_RPC(ID, fn, ...) srv_handler srv_##fn;
#define MOMENTO_RPC_SERVER_ONLY(ID, fn, ...) srv_handler srv_##fn;
#include "methods.def"
#undef MOMENTO_RPC
#undef MOMENTO_RPC_SERVER_ONLY

/* Runs one call of RPC `m` whose auth, rate and fault checks have passed:
 * finds the cache a data-plane RPC names in `cache` (the header's bytes,
 * NULL when absent), decodes `body`, calls the handler. The core's loop
 * calls it as the srv_dispatch_fn server.c gives it (core/srv_server.h). */
srv_dispatch_fn srv_dispatch;

/* rpc_batch.c: GetBatch and SetBatch reading their request's wire bytes
 * in place, as the table's srv_get_batch / srv_set_batch do the unpacked
 * request, with the same replies (an undecodable body included); the
 * dispatcher calls these. */
void srv_get_batch_wire(momento_local *s, store_cache *c, const uint8_t *body, size_t len,
                        srv_reply *r);
void srv_set_batch_wire(momento_local *s, store_cache *c, const uint8_t *body, size_t len,
                        srv_reply *r);

/* rpc_batch.c: the keys a request of RPC `m` names (`body` its wire
 * bytes), each given to `each` until it returns true; whether it did. The
 * core's fault injection reads them through momento_local.request_keys
 * (srv_keys_fn, core/srv_faults.h), which server.c sets to this. */
srv_keys_fn srv_request_keys;

/* rpc_kv.c, for GetBatch and SetBatch too. */
/* Adds the _GetResponse for `it` (NULL: a miss). Returns 0, or -1 (no
 * memory, reply set). */
int srv_reply_get(srv_reply *r, const store_item *it);
/* A _GetResponse packed by hand, byte for byte what protobuf-c packs (its
 * generic packer costs a few hundred instructions a message): its size,
 * and writing it at `p`, returning the end. */
size_t srv_get_response_size(const store_item *it);
uint8_t *srv_pack_get_response(uint8_t *p, const store_item *it);
/* Adds a _SetResponse{result: Ok}. Returns 0, or -1 (no memory, reply
 * set); never fails with room reserved (srv_reply_reserve()). */
int srv_reply_set_ok(srv_reply *r);
/* Parses `n` bytes as Momento's increments read a stored number: base-10
 * int64 text, an optional '-' and digits only. false when they are not
 * one. For DictionaryIncrement too. */
bool srv_parse_int64(const uint8_t *p, size_t n, int64_t *out);

/* rpc_topics.c, for PutWebhook's topic too (rpc_webhook.c): whether
 * `topic` (NULL or "" when absent) is a topic name Publish and Subscribe
 * take; false with INVALID_ARGUMENT set in `r` when it is not. */
bool srv_check_topic(srv_reply *r, const char *topic);

#endif
