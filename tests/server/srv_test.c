/* Helpers momento-local's tests share (srv_test.h). */
#include "srv_test.h"

#include "testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>

#include <cmocka.h>

#include <grpc/byte_buffer.h>
#include <grpc/slice.h>
#include <protobuf-c/protobuf-c.h>

momento_local_options *srv_options(const char *cache)
{
    momento_local_options *o = NULL;
    assert_int_equal(momento_local_options_new(&o), MOMENTO_OK);
    if (cache)
        assert_int_equal(momento_local_options_add_cache(o, cache), MOMENTO_OK);
    return o;
}

momento_local *srv_start(momento_local_options *o)
{
    momento_local *s = tu_server(o);
    momento_local_options_free(o);
    return s;
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
    ProtobufCMessage *m = NULL;
    if (st == 0) {
        assert_int_equal(r->n_msgs, 1);
        m = protobuf_c_message_unpack(desc, NULL, r->lens[0], r->msgs[0]);
        assert_non_null(m);
    }
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
