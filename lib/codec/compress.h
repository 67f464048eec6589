/* Value compression compatible with the JS SDK's compression extensions
 * (compress.c): gzip streams (zlib) and zstd frames (libzstd), recognised
 * on read by their magic bytes. Writes compress before packing; the get
 * decoders decompress what carries the magic bytes. */
#ifndef MOMENTO_COMPRESS_H
#define MOMENTO_COMPRESS_H

#include "codec/unpack.h"
#include "model/config.h"
#include "momento/momento.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* Values above this are sent as they are: the item check that follows
 * refuses them anyway, and zlib's counters are 32-bit. */
#define MOMENTO__COMPRESS_MAX_INPUT (1024u * 1024u * 1024u)

/* Which algorithm's magic bytes `p` starts with, as the JS SDK tests them:
 * 1f 8b (gzip), 28 b5 2f fd (zstd); MOMENTO_COMPRESS_NONE otherwise. */
momento_compression momento__compression_detect(const uint8_t *p, size_t n);

/* Compresses `n` bytes with `algo` (GZIP or ZSTD) at `level` (as
 * momento_config_set_compression() takes it). On success *ret is a malloc'd
 * buffer of *ret_len bytes. Returns MOMENTO_OK, MOMENTO_ERR_NO_MEMORY, or
 * MOMENTO_ERR_INVALID_ARGUMENT (an unknown algorithm, or more than
 * MOMENTO__COMPRESS_MAX_INPUT bytes). */
int momento__compress(momento_compression algo, int level, const uint8_t *in, size_t n,
                      uint8_t **ret, size_t *ret_len);

/* Decompresses a gzip stream (one or more members) or zstd frames into a
 * malloc'd *ret of *ret_len bytes, never producing (nor allocating for)
 * more than `max_out` bytes. Returns MOMENTO_OK, MOMENTO_ERR_NO_MEMORY, or
 * MOMENTO_ERR_INVALID_ARGUMENT with *why (a static sentence) when the input
 * does not decompress or its output would exceed `max_out`. */
int momento__decompress(momento_compression algo, const uint8_t *in, size_t n, size_t max_out,
                        uint8_t **ret, size_t *ret_len, const char **why);

/* The decompression limit a client's reads use: 0 when they do not
 * decompress. Automatic decompression follows the JS SDK: unless set
 * explicitly, it is on exactly when the client compresses. */
size_t momento__decompress_limit(const momento_config *cfg);

/* A hit's value as its read returns it: when the scratch asks for
 * decompression (decompress_max) and the value carries gzip's or zstd's
 * magic bytes, *value / *len are replaced by the decompressed bytes, which
 * live until the scratch is freed. Returns MOMENTO_OK (also when the value
 * is left as it is), MOMENTO_ERR_NO_MEMORY, or MOMENTO_ERR_INVALID_ARGUMENT
 * with *why set (it does not decompress, or is larger than the limit). */
int momento__decompress_hit(momento__scratch *s, const uint8_t **value, size_t *len,
                            const char **why);

/* Frees the decompressed values a scratch holds. */
void momento__decompressed_free(void *chain);

/* The value a scalar write sends: compressed as the request's options (or
 * else `cfg`, the client's configuration) ask. On return *value / *value_len are
 * what to send and *owned is NULL or the buffer they point into, to free()
 * once the request is packed. Arguments the following check will refuse (a
 * NULL configuration (no client), bad options, a NULL value with a length) are left alone.
 * Returns MOMENTO_OK or MOMENTO_ERR_NO_MEMORY. */
int momento__compress_write(const momento_config *cfg, const momento_request_options *opts,
                            const void **value, size_t *value_len, void **owned);

/* The same for the `n` values of a set batch: *ret_values / *ret_lens are
 * the arrays to send (the caller's when nothing is compressed), and *owned
 * is NULL or what momento__compressed_free() releases after packing. */
int momento__compress_writes(const momento_config *cfg, const momento_request_options *opts,
                             const void *const *values, const size_t *value_lens, size_t n,
                             const void *const **ret_values, const size_t **ret_lens,
                             void **owned);
void momento__compressed_free(void *owned);

#endif
