/* Building a handler's reply, and the checks every handler family makes
 * before it touches the store, with the exact statuses, messages and `err`
 * trailers Momento answers
 * (docs/protocol.md "Errors momento-local returns", "Limits"). */
#include "core/srv_reply.h"
#include "core/srv_turns.h"

#include "core/srv_server.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void srv_reply_error(srv_reply *r, grpc_status_code status, const char *err, const char *fmt, ...)
{
    srv_reply_clear(r);
    r->status = status;
    r->err = err;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->details, sizeof(r->details), fmt, ap);
    va_end(ap);
}

void srv_reply_no_memory(srv_reply *r)
{
    srv_reply_error(r, GRPC_STATUS_RESOURCE_EXHAUSTED, NULL, "server out of memory");
}

void srv_reply_undecodable(srv_reply *r)
{
    srv_reply_error(r, GRPC_STATUS_INVALID_ARGUMENT, NULL, "request could not be decoded");
}

int srv_reply_reserve(srv_reply *r, size_t n)
{
    if (n <= r->cap - r->n_msgs)
        return 0;
    /* A unary reply (the common case) keeps its one message in the reply
     * itself: no allocation beyond the message's own. */
    if (r->cap == 0 && n == 1) {
        r->msgs = &r->one;
        r->cap = 1;
        return 0;
    }
    size_t want = r->n_msgs + n;
    if (want < n || want > SIZE_MAX / sizeof(grpc_slice) / 2) {
        srv_reply_no_memory(r);
        return -1;
    }
    /* Doubling, so adding one message at a time stays linear. */
    size_t cap = r->cap * 2 > want ? r->cap * 2 : want;
    grpc_slice *grown = malloc(cap * sizeof(*grown));
    if (!grown) {
        srv_reply_no_memory(r);
        return -1;
    }
    if (r->n_msgs)
        memcpy(grown, r->msgs, r->n_msgs * sizeof(*grown));
    if (r->msgs != &r->one)
        free(r->msgs);
    r->msgs = grown;
    r->cap = cap;
    return 0;
}

int srv_reply_add(srv_reply *r, const ProtobufCMessage *m)
{
    /* A long request's reply holds its pinned keys' data (a fetch of a
     * whole collection): sized and packed without the turn, which would
     * otherwise be held for the whole pack. */
    bool let = srv_work_long() && srv_let_go();
    int rc = -1;
    size_t size = protobuf_c_message_get_packed_size(m);
    if (srv_check_reply_size(r, r->bytes + size) && srv_reply_reserve(r, 1) == 0) {
        grpc_slice s = grpc_slice_malloc(size);
        protobuf_c_message_pack(m, GRPC_SLICE_START_PTR(s));
        r->msgs[r->n_msgs++] = s;
        r->bytes += size;
        rc = 0;
    }
    if (let)
        srv_take_back();
    return rc;
}

int srv_reply_add_static(srv_reply *r, const uint8_t *bytes, size_t len)
{
    if (srv_reply_reserve(r, 1) != 0)
        return -1;
    /* No copy and no reference count: gRPC sends the constant itself. */
    r->msgs[r->n_msgs++] = grpc_slice_from_static_buffer(bytes, len);
    r->bytes += len;
    return 0;
}

/* Above this a reply's block comes from malloc(), which can fail, rather
 * than grpc_slice_malloc(), which aborts: a GetBatch naming one big item
 * many times asks for far more than the request's own size. */
#define BLOCK_FROM_GRPC_MAX (1u << 20)

static void free_block(void *p, size_t len)
{
    (void)len;
    free(p);
}

uint8_t *srv_reply_block(srv_reply *r, size_t n, size_t bytes)
{
    if (!srv_check_reply_size(r, r->bytes + bytes) || srv_reply_reserve(r, n) != 0)
        return NULL;
    r->bytes += bytes;
    grpc_slice_unref(r->block);
    r->block = grpc_empty_slice();
    r->block_used = 0;
    if (bytes <= BLOCK_FROM_GRPC_MAX) {
        /* The reference count and the bytes in one allocation. */
        r->block = grpc_slice_malloc(bytes);
    } else {
        void *p = malloc(bytes);
        if (!p) {
            srv_reply_no_memory(r);
            return NULL;
        }
        r->block = grpc_slice_new_with_len(p, bytes, free_block);
    }
    return GRPC_SLICE_START_PTR(r->block);
}

void srv_reply_carve(srv_reply *r, size_t len)
{
    /* A slice of the block shares its reference count (a message of up to
     * 23 bytes is copied into the slice instead): one allocation serves
     * every message, and it is freed when gRPC and the reply are done with
     * the last. */
    r->msgs[r->n_msgs++] = grpc_slice_sub(r->block, r->block_used, r->block_used + len);
    r->block_used += len;
}

void srv_reply_attach(srv_reply *r, srv_attachment a)
{
    srv_attachment old = srv_reply_take_attachment(r);
    if (old.ops) /* not expected: one per reply */
        old.ops->free(old.obj);
    r->attached = a;
}

srv_attachment srv_reply_take_attachment(srv_reply *r)
{
    srv_attachment a = r->attached;
    r->attached = (srv_attachment){0};
    return a;
}

void srv_reply_clear(srv_reply *r)
{
    srv_attachment a = srv_reply_take_attachment(r);
    if (a.ops)
        a.ops->free(a.obj);
    for (size_t i = 0; i < r->n_msgs; i++)
        grpc_slice_unref(r->msgs[i]);
    if (r->msgs != &r->one)
        free(r->msgs);
    grpc_slice_unref(r->block);
    r->block = grpc_empty_slice();
    r->block_used = 0;
    r->msgs = NULL;
    r->n_msgs = 0;
    r->cap = 0;
    r->bytes = 0;
    r->status = GRPC_STATUS_OK;
    r->details[0] = '\0';
    r->err = NULL;
}

bool srv_check_key(srv_reply *r, const ProtobufCBinaryData *key)
{
    if (key->len == 0) {
        srv_reply_error(r, GRPC_STATUS_INVALID_ARGUMENT, NULL, "key must not be empty");
        return false;
    }
    return true;
}

/* An item bigger than the whole of --max-memory could only be stored by
 * evicting everything and still overrunning the limit: refused with the
 * answer Momento gives an item over its size limit. */
static void reply_too_big(const momento_local *s, srv_reply *r, size_t item_len)
{
    srv_reply_error(r, GRPC_STATUS_RESOURCE_EXHAUSTED, "item_size_limit_exceeded",
                    "item size %zu bytes exceeds what the server's memory limit of %" PRIu64
                    " bytes can hold",
                    item_len, s->store.max_bytes);
}

bool srv_check_item(const momento_local *s, srv_reply *r, const ProtobufCBinaryData *key,
                    size_t value_len)
{
    if (!srv_check_key(r, key))
        return false;
    if (key->len + value_len > s->opts.max_item_bytes) {
        srv_reply_error(r, GRPC_STATUS_RESOURCE_EXHAUSTED, "item_size_limit_exceeded",
                        "item size %zu bytes exceeds the limit of %" PRIu64 " bytes",
                        key->len + value_len, s->opts.max_item_bytes);
        return false;
    }
    if (!store_item_fits(&s->store, key->len, value_len)) {
        reply_too_big(s, r, key->len + value_len);
        return false;
    }
    return true;
}

uint64_t srv_request_limit(const momento_local *s)
{
    uint64_t base = 5u * 1024u * 1024u;
    if (s->opts.max_item_bytes > base)
        base = s->opts.max_item_bytes;
    return base + SRV_REQUEST_FRAMING_BYTES;
}

bool srv_check_request_size(const momento_local *s, srv_reply *r, size_t len)
{
    uint64_t limit = srv_request_limit(s);
    if (len > limit) {
        /* The words "request limit" are what official SDKs look for in the
         * message when they do not read the `err` trailer (the Node.js SDK
         * does not: it decides before it has the trailer). */
        srv_reply_error(r, GRPC_STATUS_RESOURCE_EXHAUSTED, "request_size_limit_exceeded",
                        "request size %zu bytes exceeds the request limit of %" PRIu64 " bytes",
                        len, limit);
        return false;
    }
    return true;
}

bool srv_check_cache_name(srv_reply *r, const char *name, size_t len)
{
    const char *why = momento__local_cache_name_problem(name, len);
    if (why) {
        srv_reply_error(r, GRPC_STATUS_INVALID_ARGUMENT, NULL, "%s", why);
        return false;
    }
    return true;
}

/* Reads a base-128 varint at *p (< end); false when it runs out or is too
 * long. */
static bool read_varint(const uint8_t **p, const uint8_t *end, uint64_t *out)
{
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 64 && *p < end; shift += 7) {
        uint8_t b = *(*p)++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return true;
        }
    }
    return false;
}

/* How deep srv_check_strings() follows message fields: a topic's value
 * (_PublishRequest.value.text) is one level down. */
#define STRINGS_MAX_DEPTH 3

static bool check_strings(srv_reply *r, const ProtobufCMessageDescriptor *desc,
                          const uint8_t *body, size_t len, int depth)
{
    const uint8_t *p = body, *end = body + len;
    while (p < end) {
        uint64_t tag, n;
        if (!read_varint(&p, end, &tag))
            return true; /* malformed: unpacking will say so */
        switch (tag & 7) {
        case 0:
            if (!read_varint(&p, end, &n))
                return true;
            break;
        case 1:
            if (end - p < 8)
                return true;
            p += 8;
            break;
        case 5:
            if (end - p < 4)
                return true;
            p += 4;
            break;
        case 2: {
            if (!read_varint(&p, end, &n) || n > (uint64_t)(end - p))
                return true;
            const ProtobufCFieldDescriptor *f =
                tag >> 3 <= UINT32_MAX
                    ? protobuf_c_message_descriptor_get_field(desc, (unsigned)(tag >> 3))
                    : NULL;
            if (f && f->type == PROTOBUF_C_TYPE_STRING && memchr(p, 0, (size_t)n)) {
                srv_reply_error(r, GRPC_STATUS_INVALID_ARGUMENT, NULL,
                                "%s must not contain a NUL byte", f->name);
                return false;
            }
            if (f && f->type == PROTOBUF_C_TYPE_MESSAGE && depth < STRINGS_MAX_DEPTH &&
                !check_strings(r, f->descriptor, p, (size_t)n, depth + 1))
                return false;
            p += n;
            break;
        }
        default:
            return true; /* groups, or not protobuf: left to unpacking */
        }
    }
    return true;
}

bool srv_check_strings(srv_reply *r, const ProtobufCMessageDescriptor *desc, const uint8_t *body,
                       size_t len)
{
    return check_strings(r, desc, body, len, 0);
}

void srv_set_item(momento_local *s, store_cache *c, srv_reply *r, const ProtobufCBinaryData *key,
                  const ProtobufCBinaryData *value, uint64_t ttl_ms, int64_t now)
{
    int rc = store_set(&s->store, c, key->data, key->len, value->data, value->len, ttl_ms, now);
    if (rc == STORE_TOO_BIG)
        reply_too_big(s, r, key->len + value->len);
    else if (rc < 0)
        srv_reply_no_memory(r);
}

bool srv_same_value(const store_item *it, const ProtobufCBinaryData *v)
{
    return it->value_len == v->len && (v->len == 0 || memcmp(it->value, v->data, v->len) == 0);
}

bool srv_check_element(srv_reply *r, size_t len)
{
    if (len > SRV_MAX_ELEMENT_BYTES) {
        srv_reply_error(r, GRPC_STATUS_RESOURCE_EXHAUSTED, "element_size_limit_exceeded",
                        "element size %zu bytes exceeds the limit of %u bytes", len,
                        SRV_MAX_ELEMENT_BYTES);
        return false;
    }
    return true;
}

void srv_reply_wrong_type(srv_reply *r)
{
    srv_reply_error(r, GRPC_STATUS_FAILED_PRECONDITION, NULL,
                    "The stored type for this key is not compatible with this operation");
}

void srv_reply_store_error(const momento_local *s, srv_reply *r, int rc, size_t item_len)
{
    if (rc == STORE_WRONG_KIND)
        srv_reply_wrong_type(r);
    else if (rc == STORE_TOO_BIG)
        reply_too_big(s, r, item_len);
    else
        srv_reply_no_memory(r);
}

bool srv_check_collection_size(const momento_local *s, srv_reply *r, size_t key_len,
                               uint64_t wire)
{
    uint64_t size = key_len + wire;
    if (size > s->opts.max_item_bytes) {
        srv_reply_error(r, GRPC_STATUS_RESOURCE_EXHAUSTED, "item_size_limit_exceeded",
                        "item size %" PRIu64 " bytes exceeds the limit of %" PRIu64
                        " bytes (a collection is one item)",
                        size, s->opts.max_item_bytes);
        return false;
    }
    return true;
}

bool srv_check_reply_size(srv_reply *r, uint64_t bytes)
{
    if (bytes > SRV_MAX_REPLY_BYTES) {
        srv_reply_error(r, GRPC_STATUS_RESOURCE_EXHAUSTED, NULL,
                        "the reply would hold %" PRIu64 " bytes, more than the %u one request"
                        " may return",
                        bytes, SRV_MAX_REPLY_BYTES);
        return false;
    }
    return true;
}
