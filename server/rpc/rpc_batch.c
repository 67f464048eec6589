/* The batch RPCs, answered as server streams: GetBatch (one _GetResponse
 * per key, in order) and SetBatch (one _SetResponse per item). A batch with
 * one bad item is rejected whole, before anything is stored or sent
 * (docs/protocol.md "Errors momento-local returns"): the items are checked
 * first, which reads only the request, and then the store is visited once
 * per key. Everything a reply needs is allocated before the store is
 * touched or in one piece after it, and calls.c sends the messages
 * buffered, in as few writes as gRPC allows.
 *
 * A key holding a collection is not a bad item: like a Get of it alone, it
 * is that key's own failure, answered in its place in the stream as a
 * _GetResponse{result: Invalid, message} while the other keys are answered
 * as usual (docs/protocol.md "Batch items": the official SDKs read such a
 * response as that item's error; which failures Momento answers so is
 * inferred).
 *
 * The dispatcher hands these two RPCs their request's wire bytes
 * (srv_get_batch_wire, srv_set_batch_wire), read here in place: protobuf-c
 * would allocate every item and copy every key and value (two allocations
 * a key, about a tenth of what a key of a batch cost the server). The
 * table's handlers (srv_get_batch, srv_set_batch), which take protobuf-c's
 * unpacked request, run the same code; tests compare the two. The same
 * reader gives fault injection the keys of any data request
 * (srv_request_keys()). */
#include "rpc/srv_rpc.h"

#include "core/srv_server.h"

#include "cacheclient.pb-c.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* Batches up to this many keys keep the items found on the stack. */
#define FOUND_ON_STACK 64

/* The answer for a key of another type: _GetResponse{result: Invalid,
 * message}, packed as protobuf-c packs it (proto3 leaves the zero `result`
 * out: field 3, length, the text). The text is the single Get's
 * FAILED_PRECONDITION message (srv_reply_wrong_type(), reply.c); a test
 * holds the two together. */
#define WRONG_TYPE_TEXT "The stored type for this key is not compatible with this operation"
#define WRONG_TYPE_LEN (sizeof(WRONG_TYPE_TEXT) - 1)
_Static_assert(WRONG_TYPE_LEN < 0x80, "the length is one varint byte");
#define WRONG_TYPE_SIZE (2 + WRONG_TYPE_LEN)

static uint8_t *pack_wrong_type(uint8_t *p)
{
    *p++ = 0x1a;
    *p++ = (uint8_t)WRONG_TYPE_LEN;
    memcpy(p, WRONG_TYPE_TEXT, WRONG_TYPE_LEN);
    return p + WRONG_TYPE_LEN;
}

/* ---- reading the items ---------------------------------------------- */

typedef struct batch_item {
    ProtobufCBinaryData key, value;
    uint64_t ttl_ms;
} batch_item;

/* A batch's items, in order: from wire bytes (`body` set) or from an
 * unpacked request's item array. */
typedef struct batch_items {
    bool set;                 /* _SetRequest items, else _GetRequest */
    bool wire;                /* read from body..end */
    const uint8_t *body, *end;
    const uint8_t *p;         /* wire: where the next field starts */
    void *const *unpacked;    /* unpacked: the item pointers */
    size_t n, i;
} batch_items;

/* The wire format read with protobuf-c's limits (protobuf-c.c 1.4), so that
 * both accept and refuse the same bytes: a tag of at most 5 bytes whose
 * first byte names a field, its number cut to 32 bits; a length of at most
 * 5 bytes and INT_MAX; a varint of at most 10 bytes, bits past 64 dropped;
 * no groups. Returns false when the bytes run out or break a limit. */
static bool wire_varint(const uint8_t **p, const uint8_t *end, unsigned max_bytes, uint64_t *out)
{
    uint64_t v = 0;
    unsigned shift = 0;
    for (unsigned i = 0; i < max_bytes && *p < end; i++, shift += 7) {
        uint8_t b = *(*p)++;
        if (shift < 64)
            v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return true;
        }
    }
    return false;
}

typedef struct wire_field {
    uint32_t number;
    unsigned type;            /* 0 varint, 1 fixed64, 2 length-prefixed, 5 fixed32 */
    uint64_t varint;          /* type 0 */
    const uint8_t *data;      /* type 2 */
    size_t len;
} wire_field;

static bool wire_field_next(const uint8_t **p, const uint8_t *end, wire_field *f)
{
    uint64_t tag;
    if ((**p & 0xf8) == 0 || !wire_varint(p, end, 5, &tag))
        return false;
    f->number = (uint32_t)(tag >> 3);
    f->type = (unsigned)(tag & 7);
    switch (f->type) {
    case 0:
        return wire_varint(p, end, 10, &f->varint);
    case 1:
    case 5: {
        size_t n = f->type == 1 ? 8 : 4;
        if ((size_t)(end - *p) < n)
            return false;
        *p += n;
        return true;
    }
    case 2: {
        uint64_t len;
        if (!wire_varint(p, end, 5, &len) || len > INT_MAX || len > (uint64_t)(end - *p))
            return false;
        f->data = *p;
        f->len = (size_t)len;
        *p += len;
        return true;
    }
    default:
        return false;
    }
}

/* One _GetRequest / _SetRequest: its known fields must have their wire
 * types, the last of a repeated one wins, unknown fields are skipped. */
static bool wire_item(const uint8_t *p, size_t len, bool set, batch_item *it)
{
    const uint8_t *end = p + len;
    *it = (batch_item){.key = {0, NULL}};
    while (p < end) {
        wire_field f;
        if (!wire_field_next(&p, end, &f))
            return false;
        if (f.number == 1 || (set && f.number == 2)) {
            if (f.type != 2)
                return false;
            ProtobufCBinaryData *d = f.number == 1 ? &it->key : &it->value;
            *d = (ProtobufCBinaryData){f.len, (uint8_t *)f.data};
        } else if (set && f.number == 3) {
            if (f.type != 0)
                return false;
            it->ttl_ms = f.varint;
        }
    }
    return true;
}

/* The next item: 1, 0 at the end, -1 when the wire bytes do not decode. */
static int items_next(batch_items *b, batch_item *it)
{
    if (!b->wire) {
        if (b->i == b->n)
            return 0;
        if (b->set) {
            const CacheClient__SetRequest *s = b->unpacked[b->i++];
            *it = (batch_item){s->cache_key, s->cache_body, s->ttl_milliseconds};
        } else {
            const CacheClient__GetRequest *g = b->unpacked[b->i++];
            *it = (batch_item){.key = g->cache_key};
        }
        return 1;
    }
    while (b->p < b->end) {
        wire_field f;
        if (!wire_field_next(&b->p, b->end, &f))
            return -1;
        if (f.number != 1)
            continue; /* unknown to _GetBatchRequest / _SetBatchRequest */
        if (f.type != 2 || !wire_item(f.data, f.len, b->set, it))
            return -1;
        return 1;
    }
    return 0;
}

static void items_rewind(batch_items *b)
{
    b->p = b->body;
    b->i = 0;
}

/* ---- the handlers ---------------------------------------------------- */

/* Reads every item and checks it (the first failing check is the reply):
 * the count, or -1 with the error reply set. Bytes that do not decode
 * are refused as the dispatcher refuses them, whatever the items read so
 * far held, as protobuf-c decodes the whole request first. */
static long long check_all(momento_local *s, batch_items *b, srv_reply *r)
{
    batch_item it;
    bool ok = true;
    long long n = 0;
    int rc;
    while ((rc = items_next(b, &it)) > 0) {
        if (ok)
            ok = b->set ? srv_check_item(s, r, &it.key, it.value.len) : srv_check_key(r, &it.key);
        n++;
        srv_yield();
    }
    if (rc < 0) {
        srv_reply_undecodable(r);
        return -1;
    }
    return ok ? n : -1;
}

static bool wrong_type(const store_item *it)
{
    return it && it->kind != STORE_SCALAR;
}

static void get_batch(momento_local *s, store_cache *c, batch_items *b, srv_reply *r)
{
    long long counted = check_all(s, b, r);
    if (counted <= 0)
        return;
    size_t n = (size_t)counted;
    /* The items found, between the lookups and the packing: a lookup
     * frees only the expired item of its own key (all of them judged at
     * the same `now`), and while other calls run between this one's slices
     * (srv_turns.h) its keys are pinned, so every pointer stays valid. */
    const store_item *on_stack[FOUND_ON_STACK];
    const store_item **found = n <= FOUND_ON_STACK ? on_stack : malloc(n * sizeof(*found));
    if (!found) {
        srv_reply_no_memory(r);
        return;
    }
    items_rewind(b);
    int64_t now = store_now_ms();
    size_t bytes = 0;
    batch_item it;
    for (size_t i = 0; i < n && items_next(b, &it) > 0; i++) {
        found[i] = store_get(&s->store, c, it.key.data, it.key.len, now);
        bytes += wrong_type(found[i]) ? WRONG_TYPE_SIZE : srv_get_response_size(found[i]);
        srv_yield();
    }
    /* Every response packed back to back into one allocation; a key of
     * another type is answered in its place, as a Get of it alone would
     * fail alone. */
    uint8_t *p = srv_reply_block(r, n, bytes);
    for (size_t i = 0; p && i < n; i++) {
        uint8_t *end = wrong_type(found[i]) ? pack_wrong_type(p)
                                            : srv_pack_get_response(p, found[i]);
        srv_reply_carve(r, (size_t)(end - p));
        p = end;
        srv_yield();
    }
    if (found != on_stack)
        free(found);
}

static void set_batch(momento_local *s, store_cache *c, batch_items *b, srv_reply *r)
{
    long long counted = check_all(s, b, r);
    if (counted <= 0)
        return;
    /* Room for every response before the first store: running out of
     * memory half-way would leave a batch half stored. */
    if (srv_reply_reserve(r, (size_t)counted) != 0)
        return;
    items_rewind(b);
    int64_t now = store_now_ms();
    batch_item it;
    while (items_next(b, &it) > 0) {
        srv_set_item(s, c, r, &it.key, &it.value, it.ttl_ms, now);
        if (r->status != GRPC_STATUS_OK)
            return;
        srv_reply_set_ok(r); /* cannot fail: the room is reserved */
        srv_yield();
    }
}

void srv_get_batch(momento_local *s, store_cache *c, const ProtobufCMessage *msg, srv_reply *r)
{
    const CacheClient__GetBatchRequest *req = (const CacheClient__GetBatchRequest *)msg;
    batch_items b = {.unpacked = (void *const *)req->items, .n = req->n_items};
    get_batch(s, c, &b, r);
}

void srv_set_batch(momento_local *s, store_cache *c, const ProtobufCMessage *msg, srv_reply *r)
{
    const CacheClient__SetBatchRequest *req = (const CacheClient__SetBatchRequest *)msg;
    batch_items b = {.set = true, .unpacked = (void *const *)req->items, .n = req->n_items};
    set_batch(s, c, &b, r);
}

void srv_get_batch_wire(momento_local *s, store_cache *c, const uint8_t *body, size_t len,
                        srv_reply *r)
{
    batch_items b = {.wire = true, .body = body, .end = body + len, .p = body};
    get_batch(s, c, &b, r);
}

void srv_set_batch_wire(momento_local *s, store_cache *c, const uint8_t *body, size_t len,
                        srv_reply *r)
{
    batch_items b = {.set = true, .wire = true, .body = body, .end = body + len, .p = body};
    set_batch(s, c, &b, r);
}

/* ---- the keys a request names, for fault injection -------------------- */

/* A batch's keys are its items' (read as the handlers read them); any other
 * data request's is its field 1 when that is bytes: every scalar and
 * collection RPC names its key (a collection's name) there, KeysExist all
 * of its keys, SortedSetUnionStore its destination. A leaderboard's name
 * is no key (its field 1 is absent or a string), nor is anything the other
 * planes name. Every occurrence counts, though protobuf reads the last of
 * a single field: a request that repeats its key is not one a client
 * sends. Bytes that do not decode end the reading; the dispatcher refuses
 * them later unless an injected fault answers first. */
bool srv_request_keys(momento__rpc_id m, const uint8_t *body, size_t len, srv_key_fn *each,
                      void *ctx)
{
    if (m == MOMENTO__RPC_GET_BATCH || m == MOMENTO__RPC_SET_BATCH) {
        batch_items b = {.set = m == MOMENTO__RPC_SET_BATCH, .wire = true, .body = body,
                         .end = body + len, .p = body};
        batch_item it;
        while (items_next(&b, &it) > 0)
            if (each(it.key.data, it.key.len, ctx))
                return true;
        return false;
    }
    const momento__rpc *rpc = &momento__rpcs[m];
    const ProtobufCFieldDescriptor *key =
        rpc->plane == MOMENTO__PLANE_DATA ? protobuf_c_message_descriptor_get_field(rpc->request, 1)
                                          : NULL;
    if (!key || key->type != PROTOBUF_C_TYPE_BYTES)
        return false;
    const uint8_t *p = body, *end = body + len;
    wire_field f;
    while (p < end && wire_field_next(&p, end, &f))
        if (f.number == 1 && f.type == 2 && each(f.data, f.len, ctx))
            return true;
    return false;
}
