/* Reading a call's request metadata (metadata.c): the call loop's `cache`
 * and `authorization`, fault injection's headers. */
#ifndef MOMENTO_LOCAL_SRV_METADATA_H
#define MOMENTO_LOCAL_SRV_METADATA_H

#include <grpc/grpc.h>

/* The value of the first header named `key` (lower case, as gRPC delivers
 * keys), or NULL when there is none. Borrowed from `md`. */
const grpc_slice *srv_header(const grpc_metadata_array *md, const char *key);

#endif
