/* Header lookup in a call's request metadata. A call carries a handful of
 * headers, so a linear scan is the cheapest lookup there is. */
#include "core/srv_metadata.h"

#include <grpc/slice.h>

const grpc_slice *srv_header(const grpc_metadata_array *md, const char *key)
{
    for (size_t i = 0; i < md->count; i++)
        if (grpc_slice_str_cmp(md->metadata[i].key, key) == 0)
            return &md->metadata[i].value;
    return NULL;
}
