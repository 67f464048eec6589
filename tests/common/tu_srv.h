/* momento-local's own state in-process, without gRPC, for the tests that
 * call its dispatcher and handlers directly: a bare server (a store and
 * its options, nothing else), a batch request through both of its decode
 * paths, and two replies compared byte for byte.
 *
 * Apart from testutil.h because its types are the server's internals
 * (server/): only the tests that reach into them include it. */
#ifndef MOMENTO_TU_SRV_H
#define MOMENTO_TU_SRV_H

#include "core/srv_reply.h"
#include "core/srv_server.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A server's state without gRPC: a store with the one cache `cache`, items
 * of at most `max_item_bytes`. Free with tu_bare_server_free(). */
momento_local *tu_bare_server(const char *cache, uint64_t max_item_bytes);
void tu_bare_server_free(momento_local *s);

/* A GetBatch (`set` false) or SetBatch (`set` true) request's wire bytes
 * through both decode paths, into cache "c" of each server: read in place
 * by the dispatcher on `in_place`, into *ret_in_place; unpacked by
 * protobuf-c and given to the table's handler on `unpacked`, into
 * *ret_unpacked - or, when protobuf-c cannot unpack the bytes, the reply to
 * an undecodable request. The two may be one server. Returns whether
 * protobuf-c unpacked them. Clear both replies with srv_reply_clear(). */
bool tu_batch_both_paths(momento_local *in_place, momento_local *unpacked, bool set,
                         const uint8_t *body, size_t len, srv_reply *ret_in_place,
                         srv_reply *ret_unpacked);

/* `a` and `b` are the same reply: status, message, trailer and every
 * response message, byte for byte. */
void tu_assert_same_reply(const srv_reply *a, const srv_reply *b);

#endif
