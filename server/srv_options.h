/* The options behind momento_local_options (options.c), and the deep copy a
 * server keeps of them so the caller may free its own at once. */
#ifndef MOMENTO_LOCAL_SRV_OPTIONS_H
#define MOMENTO_LOCAL_SRV_OPTIONS_H

#include "momento/local.h"

#include <stddef.h>
#include <stdint.h>

struct momento_local_options {
    char *bind;
    int port;
    char *auth_token;
    uint64_t max_memory;
    uint64_t max_item_bytes;
    uint32_t max_rps;
    uint32_t list_page_size; /* ListCaches entries per page; 0 = one page */
    char *tls_cert;
    char *tls_key;
    char **caches;
    size_t n_caches;
};

/* Copies `src` (NULL: the defaults) into `dst`, with bind defaulting to
 * 127.0.0.1. Returns MOMENTO_OK, or MOMENTO_ERR_NO_MEMORY with `dst` empty. */
int momento__local_options_copy(momento_local_options *dst, const momento_local_options *src);
/* Frees what `o` owns (not `o`) and zeroes it. */
void momento__local_options_clear(momento_local_options *o);

#endif
