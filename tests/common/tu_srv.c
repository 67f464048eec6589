/* momento-local's own state in-process (tu_srv.h). */
#include "tu_srv.h"

#include "cacheclient.pb-c.h"
#include "rpc/srv_rpc.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

momento_local *tu_bare_server(const char *cache, uint64_t max_item_bytes)
{
    momento_local *s = calloc(1, sizeof(*s));
    assert_non_null(s);
    store_init(&s->store, 0);
    s->opts.max_item_bytes = max_item_bytes;
    assert_int_equal(store_create_cache(&s->store, cache), 0);
    return s;
}

void tu_bare_server_free(momento_local *s)
{
    store_destroy(&s->store);
    free(s);
}

bool tu_batch_both_paths(momento_local *in_place, momento_local *unpacked, bool set,
                         const uint8_t *body, size_t len, srv_reply *ret_in_place,
                         srv_reply *ret_unpacked)
{
    srv_dispatch(in_place, set ? MOMENTO__RPC_SET_BATCH : MOMENTO__RPC_GET_BATCH, "c", 1, body,
                 len, ret_in_place);
    const ProtobufCMessageDescriptor *d = set ? &cache_client____set_batch_request__descriptor
                                              : &cache_client____get_batch_request__descriptor;
    ProtobufCMessage *req = protobuf_c_message_unpack(d, NULL, len, body);
    if (!req) {
        srv_reply_undecodable(ret_unpacked);
        return false;
    }
    (set ? srv_set_batch : srv_get_batch)(unpacked, store_find_cache(&unpacked->store, "c", 1), req,
                                          ret_unpacked);
    protobuf_c_message_free_unpacked(req, NULL);
    return true;
}

void tu_assert_same_reply(const srv_reply *a, const srv_reply *b)
{
    assert_int_equal(a->status, b->status);
    assert_string_equal(a->details, b->details);
    assert_true(a->err == b->err || (a->err && b->err && strcmp(a->err, b->err) == 0));
    assert_int_equal(a->n_msgs, b->n_msgs);
    for (size_t i = 0; i < a->n_msgs; i++) {
        assert_int_equal(GRPC_SLICE_LENGTH(a->msgs[i]), GRPC_SLICE_LENGTH(b->msgs[i]));
        assert_memory_equal(GRPC_SLICE_START_PTR(a->msgs[i]), GRPC_SLICE_START_PTR(b->msgs[i]),
                            GRPC_SLICE_LENGTH(a->msgs[i]));
    }
}
