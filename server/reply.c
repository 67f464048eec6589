/* Building a handler's reply, and the checks every handler family makes
 * before it touches the store, with the exact statuses, messages and `err`
 * trailers Momento answers
 * (docs/protocol.md "Errors momento-local returns", "Limits"). */
#include "srv_reply.h"

#include "srv_server.h"

#include <inttypes.h>
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

int srv_reply_add(srv_reply *r, const ProtobufCMessage *m)
{
    grpc_slice *grown = realloc(r->msgs, (r->n_msgs + 1) * sizeof(*grown));
    if (!grown) {
        srv_reply_no_memory(r);
        return -1;
    }
    r->msgs = grown;
    size_t size = protobuf_c_message_get_packed_size(m);
    grpc_slice s = grpc_slice_malloc(size);
    protobuf_c_message_pack(m, GRPC_SLICE_START_PTR(s));
    r->msgs[r->n_msgs++] = s;
    return 0;
}

void srv_reply_clear(srv_reply *r)
{
    for (size_t i = 0; i < r->n_msgs; i++)
        grpc_slice_unref(r->msgs[i]);
    free(r->msgs);
    r->msgs = NULL;
    r->n_msgs = 0;
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
    return true;
}

bool srv_check_cache_name(srv_reply *r, const char *name, size_t len)
{
    if (len == 0) {
        srv_reply_error(r, GRPC_STATUS_INVALID_ARGUMENT, NULL, "cache name must not be empty");
        return false;
    }
    if (len > MOMENTO_MAX_CACHE_NAME_BYTES) {
        srv_reply_error(r, GRPC_STATUS_INVALID_ARGUMENT, NULL,
                        "cache name must be at most %u bytes", MOMENTO_MAX_CACHE_NAME_BYTES);
        return false;
    }
    return true;
}

void srv_set_item(momento_local *s, store_cache *c, srv_reply *r, const ProtobufCBinaryData *key,
                  const ProtobufCBinaryData *value, uint64_t ttl_ms, int64_t now)
{
    if (!store_set(&s->store, c, key->data, key->len, value->data, value->len, ttl_ms, now))
        srv_reply_no_memory(r);
}

bool srv_same_value(const store_item *it, const ProtobufCBinaryData *v)
{
    return it->value_len == v->len && (v->len == 0 || memcmp(it->value, v->data, v->len) == 0);
}
