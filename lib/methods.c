/* Every RPC the library makes: its path, plane, headers, retry class and
 * response decoder. The one place to read what goes on the wire for each. */
#include "internal.h"

#include <stdlib.h>

#define DATA false, true, true   /* data plane: cache + authorization headers */
#define CONTROL true, false, true /* control plane: authorization only */

const momento__method_info momento__methods[MOMENTO__M_COUNT] = {
    /* path, plane+headers, already_exists_ok, streaming, idempotent, decoder */
    [MOMENTO__M_GET] = {"/cache_client.Scs/Get", DATA, false, false, true, momento__decode_get},
    [MOMENTO__M_SET] = {"/cache_client.Scs/Set", DATA, false, false, true, momento__decode_set},
    [MOMENTO__M_DELETE] = {"/cache_client.Scs/Delete", DATA, false, false, true,
                           momento__decode_delete},
    [MOMENTO__M_SET_IF] = {"/cache_client.Scs/SetIf", DATA, false, false, false,
                           momento__decode_set_if},
    [MOMENTO__M_INCREMENT] = {"/cache_client.Scs/Increment", DATA, false, false, false,
                              momento__decode_increment},
    [MOMENTO__M_KEYS_EXIST] = {"/cache_client.Scs/KeysExist", DATA, false, false, true,
                               momento__decode_keys_exist},
    [MOMENTO__M_ITEM_GET_TTL] = {"/cache_client.Scs/ItemGetTtl", DATA, false, false, true,
                                 momento__decode_item_get_ttl},
    [MOMENTO__M_UPDATE_TTL] = {"/cache_client.Scs/UpdateTtl", DATA, false, false, false,
                               momento__decode_update_ttl},
    [MOMENTO__M_GET_BATCH] = {"/cache_client.Scs/GetBatch", DATA, false, true, true,
                              momento__decode_get_batch},
    [MOMENTO__M_SET_BATCH] = {"/cache_client.Scs/SetBatch", DATA, false, true, true,
                              momento__decode_set_batch},
    /* Official clients ping without a token; so do we. Not in the retried list. */
    [MOMENTO__M_PING] = {"/cache_client.Ping/Ping", false, false, false, false, false, false,
                         momento__decode_ping},
    [MOMENTO__M_CREATE_CACHE] = {"/control_client.ScsControl/CreateCache", CONTROL, true, false,
                                 false, momento__decode_create_cache},
    [MOMENTO__M_DELETE_CACHE] = {"/control_client.ScsControl/DeleteCache", CONTROL, false, false,
                                 false, momento__decode_delete_cache},
    [MOMENTO__M_LIST_CACHES] = {"/control_client.ScsControl/ListCaches", CONTROL, false, false,
                                false, momento__decode_list_caches},
    [MOMENTO__M_FLUSH_CACHE] = {"/control_client.ScsControl/FlushCache", CONTROL, false, false,
                                false, momento__decode_flush_cache},
};

void momento__scratch_free(momento__scratch *s)
{
    if (s->msg)
        protobuf_c_message_free_unpacked(s->msg, NULL);
    for (size_t i = 0; i < s->n_msgs; i++)
        protobuf_c_message_free_unpacked(s->msgs[i], NULL);
    free(s->msgs);
    free(s->mem);
}
