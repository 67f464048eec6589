/* Helpers momento-local's tests share (srv_test.h). */
#include "srv_test.h"

#include "testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <grpc/byte_buffer.h>
#include <grpc/slice.h>
#include <protobuf-c/protobuf-c.h>

#include "cacheclient.pb-c.h"

void *srv_reply_msg(const tu_raw_reply *r, const ProtobufCMessageDescriptor *desc)
{
    assert_int_equal(r->n_msgs, 1);
    ProtobufCMessage *m = protobuf_c_message_unpack(desc, NULL, r->lens[0], r->msgs[0]);
    assert_non_null(m);
    return m;
}

void *srv_call(const char *target, const char *path, const char *const *headers,
               size_t n_headers, const struct ProtobufCMessage *req,
               const struct ProtobufCMessageDescriptor *desc, int *ret_status)
{
    tu_raw_reply *r = malloc(sizeof(*r)); /* large for a stack */
    assert_non_null(r);
    int st = tu_raw_call_msg(target, path, headers, n_headers, req, r);
    if (ret_status)
        *ret_status = st;
    else
        assert_int_equal(st, 0);
    void *m = st == 0 ? srv_reply_msg(r, desc) : NULL;
    tu_raw_reply_free(r);
    free(r);
    return m;
}

grpc_byte_buffer *srv_byte_buffer(const void *body, size_t len)
{
    grpc_slice s = grpc_slice_from_copied_buffer((const char *)body, len);
    grpc_byte_buffer *b = grpc_raw_byte_buffer_create(&s, 1);
    grpc_slice_unref(s);
    return b;
}

grpc_byte_buffer *srv_msg_buffer(const ProtobufCMessage *m)
{
    size_t len = protobuf_c_message_get_packed_size(m);
    uint8_t *buf = malloc(len + 1); /* + 1: an empty message is not a NULL buffer */
    assert_non_null(buf);
    protobuf_c_message_pack(m, buf);
    grpc_byte_buffer *b = srv_byte_buffer(buf, len);
    free(buf);
    return b;
}

void srv_token_request_init(srv_token_request *t, const char *caller_key, const char *cache,
                            PermissionMessages__CacheRole role, const char *item,
                            bool name_all_items, const char *token_id)
{
    permission_messages__permissions_type__cache_selector__init(&t->cache_sel);
    t->cache_sel.kind_case = PERMISSION_MESSAGES__PERMISSIONS_TYPE__CACHE_SELECTOR__KIND_CACHE_NAME;
    t->cache_sel.cache_name = (char *)cache;
    permission_messages__permissions_type__cache_permissions__init(&t->cache_perms);
    t->cache_perms.role = role;
    t->cache_perms.cache_case =
        PERMISSION_MESSAGES__PERMISSIONS_TYPE__CACHE_PERMISSIONS__CACHE_CACHE_SELECTOR;
    t->cache_perms.cache_selector = &t->cache_sel;
    if (item) {
        permission_messages__permissions_type__cache_item_selector__init(&t->item_sel);
        t->item_sel.kind_case =
            PERMISSION_MESSAGES__PERMISSIONS_TYPE__CACHE_ITEM_SELECTOR__KIND_KEY;
        t->item_sel.key = (ProtobufCBinaryData){strlen(item), (uint8_t *)item};
        t->cache_perms.cache_item_case =
            PERMISSION_MESSAGES__PERMISSIONS_TYPE__CACHE_PERMISSIONS__CACHE_ITEM_ITEM_SELECTOR;
        t->cache_perms.item_selector = &t->item_sel;
    } else if (name_all_items) {
        permission_messages__permissions_type__all__init(&t->all);
        t->cache_perms.cache_item_case =
            PERMISSION_MESSAGES__PERMISSIONS_TYPE__CACHE_PERMISSIONS__CACHE_ITEM_ALL_ITEMS;
        t->cache_perms.all_items = &t->all;
    }
    permission_messages__permissions_type__init(&t->type);
    t->type.kind_case = PERMISSION_MESSAGES__PERMISSIONS_TYPE__KIND_CACHE_PERMISSIONS;
    t->type.cache_permissions = &t->cache_perms;
    t->types[0] = &t->type;
    permission_messages__explicit_permissions__init(&t->explicit_);
    t->explicit_.n_permissions = 1;
    t->explicit_.permissions = t->types;
    permission_messages__permissions__init(&t->perms);
    t->perms.kind_case = PERMISSION_MESSAGES__PERMISSIONS__KIND_EXPLICIT;
    t->perms.explicit_ = &t->explicit_;
    token____generate_disposable_token_request__expires__init(&t->expires);
    t->expires.valid_for_seconds = 60;
    token____generate_disposable_token_request__init(&t->req);
    t->req.expires = &t->expires;
    t->req.auth_token = (char *)caller_key;
    t->req.permissions = &t->perms;
    if (token_id)
        t->req.token_id = (char *)token_id;
}

bool srv_item_ttl(const char *target, const char *key, uint64_t *ret_ms)
{
    static const char *const hdr[] = {"cache", "c"};
    CacheClient__ItemGetTtlRequest req = CACHE_CLIENT____ITEM_GET_TTL_REQUEST__INIT;
    req.cache_key = (ProtobufCBinaryData){strlen(key), (uint8_t *)key};
    CacheClient__ItemGetTtlResponse *resp =
        srv_call(target, "/cache_client.Scs/ItemGetTtl", hdr, 1, &req.base,
                 &cache_client____item_get_ttl_response__descriptor, NULL);
    bool found = resp->result_case == CACHE_CLIENT____ITEM_GET_TTL_RESPONSE__RESULT_FOUND;
    if (found)
        *ret_ms = resp->found->remaining_ttl_millis;
    else
        assert_int_equal(resp->result_case, CACHE_CLIENT____ITEM_GET_TTL_RESPONSE__RESULT_MISSING);
    protobuf_c_message_free_unpacked(&resp->base, NULL);
    return found;
}
