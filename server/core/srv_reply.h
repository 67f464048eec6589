/* A handler's answer (reply.c): an error status, or OK with the packed
 * response message(s), and the checks and store writes every handler family
 * shares, each answering with the status Momento uses
 * (docs/protocol.md "Errors momento-local returns"). Server thread only. */
#ifndef MOMENTO_LOCAL_SRV_REPLY_H
#define MOMENTO_LOCAL_SRV_REPLY_H

#include "core/srv_attach.h"
#include "data/store.h"
#include "momento/local.h"

#include <grpc/grpc.h>
#include <protobuf-c/protobuf-c.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct srv_reply {
    grpc_status_code status;
    char details[192];
    const char *err;     /* `err` trailer, static, or NULL */
    size_t n_msgs;
    size_t cap;          /* room in msgs */
    grpc_slice *msgs;    /* the packed messages: `one`, or a malloc'd array */
    /* A unary reply's message lives here, so that it needs no array. */
    grpc_slice one;
    /* What goes on answering after the handler (srv_attach.h; Subscribe's
     * subscription), which calls.c turns into a stream; the reply owns it
     * until taken (srv_reply_take_attachment()) and frees it if nobody
     * does. ops NULL: none. */
    srv_attachment attached;
    /* srv_reply_block()'s memory, which its messages are slices of. */
    grpc_slice block;
    size_t block_used;
    /* The messages' bytes so far (a block's counted whole), held within
     * SRV_MAX_REPLY_BYTES. */
    uint64_t bytes;
    /* Not answered: a long request holds a key the call names, or its
     * cache (srv_turns.h). calls.c holds the call back and answers it
     * again once that request is done. */
    bool deferred;
} srv_reply;

/* Replaces the reply with an error; its messages are dropped. */
void srv_reply_error(srv_reply *r, grpc_status_code status, const char *err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* RESOURCE_EXHAUSTED "server out of memory". */
void srv_reply_no_memory(srv_reply *r);
/* INVALID_ARGUMENT "request could not be decoded". */
void srv_reply_undecodable(srv_reply *r);
/* Appends a packed copy of `m`; returns 0, or -1 (no memory, or the
 * reply past SRV_MAX_REPLY_BYTES: reply set). */
int srv_reply_add(srv_reply *r, const ProtobufCMessage *m);
/* Makes room for `n` more messages, so that adding them allocates no array
 * on the way; returns 0, or -1 (no memory, reply set). */
int srv_reply_reserve(srv_reply *r, size_t n);
/* Appends a message of `len` bytes that outlive the reply (a constant);
 * returns 0, or -1 (no memory, reply set). */
int srv_reply_add_static(srv_reply *r, const uint8_t *bytes, size_t len);
/* For many messages packed into one allocation: room for `n` more messages
 * and `bytes` bytes for them all. Returns where to write them, or NULL (no
 * memory, or the reply past SRV_MAX_REPLY_BYTES: reply set). Once per
 * reply. Write them back to back, each
 * followed by srv_reply_carve() with its length. */
uint8_t *srv_reply_block(srv_reply *r, size_t n, size_t bytes);
/* Appends the next `len` bytes of the block as a message. */
void srv_reply_carve(srv_reply *r, size_t len);
/* Frees the messages (and an attachment nobody took) and resets the reply
 * to an empty OK. */
void srv_reply_clear(srv_reply *r);
/* Hands `a` to the reply, which owns it from here: an OK reply whose call
 * becomes a stream fed by it (docs/server.md "Topics"). One per reply; an
 * error set afterwards frees it. */
void srv_reply_attach(srv_reply *r, srv_attachment a);
/* The attachment, now the caller's; the reply holds none after. ops NULL
 * when there is none. */
srv_attachment srv_reply_take_attachment(srv_reply *r);

/* Each check returns true when it passes, else sets the error reply. */
/* Keys must be non-empty. */
bool srv_check_key(srv_reply *r, const ProtobufCBinaryData *key);
/* A key, key + value within the server's item limit, and an item that
 * --max-memory can hold at all (RESOURCE_EXHAUSTED, err
 * item_size_limit_exceeded, for either limit). */
bool srv_check_item(const momento_local *s, srv_reply *r, const ProtobufCBinaryData *key,
                    size_t value_len);
/* Momento's request size limit (5 MB, like its item limit), counted on the
 * request's wire bytes: the larger of 5 MiB and the server's item limit,
 * plus SRV_REQUEST_FRAMING_BYTES for the protobuf framing around one item
 * (key, TTL, condition), so that any item within the item limit can be
 * sent. */
#define SRV_REQUEST_FRAMING_BYTES 1024u
uint64_t srv_request_limit(const momento_local *s);
/* A request of `len` wire bytes within srv_request_limit()
 * (RESOURCE_EXHAUSTED, err request_size_limit_exceeded, as Momento answers
 * a Set of a value over 5 MB). */
bool srv_check_request_size(const momento_local *s, srv_reply *r, size_t len);
/* A cache name by momento__local_cache_name_problem()'s rule (srv_options.h):
 * 1 to MOMENTO_MAX_CACHE_NAME_BYTES bytes of UTF-8, no control characters. */
bool srv_check_cache_name(srv_reply *r, const char *name, size_t len);
/* The request's wire bytes, before protobuf-c unpacks them: no string field
 * of `desc` (at the top level, or in a message field up to three levels
 * down) may hold a NUL byte, which the unpacked C string would silently
 * end at ("ab\0cd" read as "ab"). Malformed bytes pass, for unpacking to
 * refuse. */
bool srv_check_strings(srv_reply *r, const ProtobufCMessageDescriptor *desc, const uint8_t *body,
                       size_t len);

/* Stores `value` under `key`; an item --max-memory cannot hold or out of
 * memory sets the error reply, and then any older value stays. */
void srv_set_item(momento_local *s, store_cache *c, srv_reply *r, const ProtobufCBinaryData *key,
                  const ProtobufCBinaryData *value, uint64_t ttl_ms, int64_t now);
bool srv_same_value(const store_item *it, const ProtobufCBinaryData *v);

/* ---- Collections: the answers every collection family shares. */

/* Momento's limit on one element of a collection (a dictionary's field and
 * value together, a set's or list's element): 128 KB (docs.momentohq.com
 * "Limits", "Collection element size"). */
#define SRV_MAX_ELEMENT_BYTES (128u * 1024u)
/* An element within SRV_MAX_ELEMENT_BYTES (RESOURCE_EXHAUSTED, err
 * element_size_limit_exceeded, as Momento answers). */
bool srv_check_element(srv_reply *r, size_t len);
/* The type mismatch: a collection RPC on a key of another kind, or a
 * scalar one on a collection. FAILED_PRECONDITION with the message
 * Momento's service gives. */
void srv_reply_wrong_type(srv_reply *r);
/* The reply for a store_coll_*() failure: STORE_WRONG_KIND,
 * STORE_TOO_BIG (as for a scalar item --max-memory cannot hold, with
 * `item_len` the bytes written) or STORE_NO_MEMORY. */
void srv_reply_store_error(const momento_local *s, srv_reply *r, int rc, size_t item_len);

/* ---- Per-request limits: what one request may make the server thread do
 * (docs/server.md "Per-request limits"). The server has one thread; the
 * work of a request is bounded by the bytes it carries (the request
 * limit), by the size of one collection, or refused here. */

/* The bytes a byte string of `len` takes as a length-delimited protobuf
 * field: its tag, its length and itself. */
static inline uint64_t srv_field_bytes(uint64_t len)
{
    uint64_t n = 2; /* the tag, and the length's first byte */
    for (uint64_t v = len; v >= 0x80; v >>= 7)
        n++;
    return n + len;
}
/* A collection is one item (Momento: "a grouping of related data into a
 * single item"), so the item limit bounds it as a whole: its key plus its
 * elements as a fetch of all of it carries them (each family's `wire`
 * count; inferred, docs/server.md). A write that would take it past the
 * limit is refused whole with RESOURCE_EXHAUSTED, err
 * item_size_limit_exceeded, the answer to an item over the limit. Being
 * bounded, no collection costs more than that to fetch, delete or scan. */
bool srv_check_collection_size(const momento_local *s, srv_reply *r, size_t key_len,
                               uint64_t wire);
/* SortedSetUnionStore names at most this many sources (INVALID_ARGUMENT;
 * momento-local's own limit: none is published). */
#define SRV_MAX_UNION_SOURCES 100u
/* The most one request's reply may hold in all (its messages summed): the
 * largest request the server receives. A GetBatch naming one big item
 * many times, or a DictionaryGet one big field, asks for more than its own
 * size many times over; beyond this it is refused (RESOURCE_EXHAUSTED)
 * before anything is copied. srv_reply_add() and srv_reply_block() hold
 * every reply to it. */
#define SRV_MAX_REPLY_BYTES (64u * 1024u * 1024u)
/* A reply of `bytes` in all within SRV_MAX_REPLY_BYTES. */
bool srv_check_reply_size(srv_reply *r, uint64_t bytes);

#endif
