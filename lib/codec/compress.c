/* Value compression compatible with the JS SDK's compression extensions
 * (@gomomento/sdk-nodejs-compression, gzip through Node's zlib, and
 * @gomomento/sdk-nodejs-compression-zstd): the same formats, the same
 * levels for Fastest / Balanced / SmallestSize, and values recognised on
 * read by the same magic bytes. Unlike the SDK, where a client holds one
 * compressor and recognises only its format, a read here recognises both.
 *
 * Reads run on the completion thread and decompress into memory bounded by
 * the client's limit (momento_config_set_decompression): a hostile value
 * (a "decompression bomb") ends as an error result, not as unbounded
 * allocation. */
#include "codec/compress.h"

#include "base/alloc.h"
#include "model/validate.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>
#include <zstd_errors.h>

momento_compression momento__compression_detect(const uint8_t *p, size_t n)
{
    if (n >= 2 && p[0] == 0x1f && p[1] == 0x8b)
        return MOMENTO_COMPRESS_GZIP;
    if (n >= 4 && p[0] == 0x28 && p[1] == 0xb5 && p[2] == 0x2f && p[3] == 0xfd)
        return MOMENTO_COMPRESS_ZSTD;
    return MOMENTO_COMPRESS_NONE;
}

/* zlib's allocations go through the library's allocator, so the
 * allocation-failure tests reach them. */
static voidpf z_alloc(voidpf opaque, uInt items, uInt size)
{
    (void)opaque;
    return momento__calloc(items, size);
}

static void z_free(voidpf opaque, voidpf p)
{
    (void)opaque;
    free(p);
}

/* The JS SDK's levels: Balanced is zlib's default (6) and zstd's 3,
 * Fastest 1, SmallestSize 9; raw levels are capped at the algorithm's
 * highest, so a client level set for zstd also serves a gzip request. */
static int effective_level(momento_compression algo, int level)
{
    int max = algo == MOMENTO_COMPRESS_GZIP ? Z_BEST_COMPRESSION : ZSTD_maxCLevel();
    switch (level) {
    case MOMENTO_COMPRESS_LEVEL_BALANCED:
        return algo == MOMENTO_COMPRESS_GZIP ? Z_DEFAULT_COMPRESSION : 3;
    case MOMENTO_COMPRESS_LEVEL_FASTEST:
        return 1;
    case MOMENTO_COMPRESS_LEVEL_SMALLEST:
        return 9;
    default:
        return level > max ? max : level;
    }
}

static int gzip_compress(int level, const uint8_t *in, size_t n, uint8_t **ret, size_t *ret_len)
{
    z_stream z;
    memset(&z, 0, sizeof(z));
    z.zalloc = z_alloc;
    z.zfree = z_free;
    /* 16 + MAX_WBITS: a gzip header and trailer, as Node's zlib.gzip()
     * writes them (zlib's OS code for Unix, no name, mtime 0). */
    int zrc = deflateInit2(&z, level, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
    if (zrc != Z_OK)
        return zrc == Z_MEM_ERROR ? MOMENTO_ERR_NO_MEMORY : MOMENTO_ERR_INVALID_ARGUMENT;
    size_t bound = deflateBound(&z, (uLong)n);
    uint8_t *out = momento__malloc(bound);
    if (!out) {
        deflateEnd(&z);
        return MOMENTO_ERR_NO_MEMORY;
    }
    /* The input fits in one uInt (MOMENTO__COMPRESS_MAX_INPUT) and the
     * output in deflateBound(), so one call finishes the stream. */
    z.next_in = (Bytef *)in;
    z.avail_in = (uInt)n;
    z.next_out = out;
    z.avail_out = (uInt)bound;
    zrc = deflate(&z, Z_FINISH);
    size_t len = z.total_out;
    deflateEnd(&z);
    if (zrc != Z_STREAM_END) {
        free(out);
        return MOMENTO_ERR_NO_MEMORY; /* only an allocation inside zlib can fail here */
    }
    *ret = out;
    *ret_len = len;
    return MOMENTO_OK;
}

static int zstd_compress(int level, const uint8_t *in, size_t n, uint8_t **ret, size_t *ret_len)
{
    size_t bound = ZSTD_compressBound(n);
    uint8_t *out = momento__malloc(bound ? bound : 1);
    if (!out)
        return MOMENTO_ERR_NO_MEMORY;
    /* One frame with its content size, as the SDK's zstd binding writes. */
    size_t len = ZSTD_compress(out, bound, in, n, level);
    if (ZSTD_isError(len)) {
        free(out);
        return MOMENTO_ERR_NO_MEMORY; /* the bound always suffices: only memory can fail */
    }
    *ret = out;
    *ret_len = len;
    return MOMENTO_OK;
}

int momento__compress(momento_compression algo, int level, const uint8_t *in, size_t n,
                      uint8_t **ret, size_t *ret_len)
{
    if (n > MOMENTO__COMPRESS_MAX_INPUT || (!in && n))
        return MOMENTO_ERR_INVALID_ARGUMENT;
    if (!in)
        in = (const uint8_t *)"";
    if (algo == MOMENTO_COMPRESS_GZIP)
        return gzip_compress(effective_level(algo, level), in, n, ret, ret_len);
    if (algo == MOMENTO_COMPRESS_ZSTD)
        return zstd_compress(effective_level(algo, level), in, n, ret, ret_len);
    return MOMENTO_ERR_INVALID_ARGUMENT;
}

/* An output buffer that grows by doubling up to one byte past the limit:
 * filling that byte is how an oversized output is noticed without
 * allocating for it. */
typedef struct outbuf {
    uint8_t *base; /* the allocation: `head` bytes for the caller, then the output */
    uint8_t *p;    /* the output */
    size_t head, cap, max;
} outbuf;

static int outbuf_init(outbuf *o, size_t hint, size_t max_out)
{
    o->max = max_out;
    o->cap = hint < 64 ? 64 : hint;
    if (o->cap > max_out + 1)
        o->cap = max_out + 1;
    o->base = momento__malloc(o->head + o->cap);
    o->p = o->base ? o->base + o->head : NULL;
    return o->base ? MOMENTO_OK : MOMENTO_ERR_NO_MEMORY;
}

/* Returns MOMENTO_OK, NO_MEMORY, or 1 when the buffer is already past the
 * limit. */
static int outbuf_grow(outbuf *o)
{
    if (o->cap > o->max)
        return 1;
    size_t cap = o->cap > (o->max + 1) / 2 ? o->max + 1 : o->cap * 2;
    uint8_t *base = momento__realloc(o->base, o->head + cap);
    if (!base)
        return MOMENTO_ERR_NO_MEMORY;
    o->base = base;
    o->p = base + o->head;
    o->cap = cap;
    return MOMENTO_OK;
}

static const char too_large[] =
    "the decompressed value would exceed the client's decompression limit "
    "(momento_config_set_decompression)";
static const char reply_too_large[] =
    "the reply's decompressed values would exceed the client's decompression limit "
    "(momento_config_set_decompression) in total";
static const char bad_gzip[] =
    "the value starts with gzip's magic bytes (1f 8b) but is not a valid gzip stream";
static const char bad_zstd[] =
    "the value starts with zstd's magic bytes (28 b5 2f fd) but is not a valid zstd frame";

static int gzip_decompress(const uint8_t *in, size_t n, size_t max_out, outbuf *o, size_t *len,
                           const char **why)
{
    /* The trailer's ISIZE (the size mod 2^32) sizes the first buffer; a
     * lying one costs at most deflate's largest ratio (1032:1) or the
     * limit, whichever is smaller. */
    size_t hint = n * 4;
    if (n >= 18) {
        const uint8_t *t = in + n - 4;
        size_t isize = (size_t)t[0] | (size_t)t[1] << 8 | (size_t)t[2] << 16 | (size_t)t[3] << 24;
        size_t most = n * 1032 + 64;
        hint = isize < most ? isize : most;
    }
    int rc = outbuf_init(o, hint, max_out);
    if (rc != MOMENTO_OK)
        return rc;
    z_stream z;
    memset(&z, 0, sizeof(z));
    z.zalloc = z_alloc;
    z.zfree = z_free;
    z.next_in = (Bytef *)in;
    z.avail_in = (uInt)n; /* n <= MOMENTO__MAX_MESSAGE_BYTES, read off one reply */
    int zrc = inflateInit2(&z, 16 + MAX_WBITS);
    if (zrc != Z_OK)
        return zrc == Z_MEM_ERROR ? MOMENTO_ERR_NO_MEMORY : MOMENTO_ERR_INVALID_ARGUMENT;
    size_t done = 0;
    for (;;) {
        if (done == o->cap) { /* full after a member: room before the next */
            int g = outbuf_grow(o);
            if (g != 0) {
                rc = g == 1 ? MOMENTO_ERR_INVALID_ARGUMENT : g;
                *why = too_large;
                break;
            }
        }
        z.next_out = o->p + done;
        z.avail_out = (uInt)(o->cap - done);
        zrc = inflate(&z, Z_NO_FLUSH);
        done = o->cap - z.avail_out;
        if (done > max_out) {
            rc = MOMENTO_ERR_INVALID_ARGUMENT;
            *why = too_large;
            break;
        }
        if (zrc == Z_STREAM_END) {
            /* Further members follow as Node's gunzip reads them; anything
             * else after a member is ignored, as Node does. */
            if (momento__compression_detect(z.next_in, z.avail_in) == MOMENTO_COMPRESS_GZIP &&
                inflateReset(&z) == Z_OK)
                continue;
            rc = MOMENTO_OK;
            break;
        }
        if (zrc == Z_MEM_ERROR) {
            rc = MOMENTO_ERR_NO_MEMORY;
            break;
        }
        if (zrc == Z_OK && z.avail_out == 0) {
            int g = outbuf_grow(o);
            if (g == 0)
                continue;
            rc = g == 1 ? MOMENTO_ERR_INVALID_ARGUMENT : g;
            *why = too_large;
            break;
        }
        /* A data error, a dictionary we cannot have, or input that ends
         * before the stream does (Z_BUF_ERROR, or Z_OK with room left). */
        rc = MOMENTO_ERR_INVALID_ARGUMENT;
        *why = bad_gzip;
        break;
    }
    inflateEnd(&z);
    *len = done;
    return rc;
}

/* zstd's window limit: a frame that asks for a larger window than its
 * output may reach is refused before its window is allocated. At least
 * 8 MiB, since frames written without a content size (the JS SDK's zstd
 * binding writes them so) ask for their level's window whatever their
 * size, up to 8 MiB for levels 1 .. 19; at most zstd's default limit
 * (ZSTD_WINDOWLOG_LIMIT_DEFAULT, 27, which zstd.h declares only for static
 * linking). */
static int window_log_max(size_t max_out)
{
    int log = 23;
    while (log < 27 && ((size_t)1 << log) < max_out)
        log++;
    return log;
}

static int zstd_decompress(const uint8_t *in, size_t n, size_t max_out, outbuf *o, size_t *len,
                           const char **why)
{
    unsigned long long size = ZSTD_getFrameContentSize(in, n);
    if (size == ZSTD_CONTENTSIZE_ERROR) {
        *why = bad_zstd;
        return MOMENTO_ERR_INVALID_ARGUMENT;
    }
    if (size != ZSTD_CONTENTSIZE_UNKNOWN && size > max_out) {
        *why = too_large;
        return MOMENTO_ERR_INVALID_ARGUMENT;
    }
    /* A declared size is trusted only up to the limit; + 1 leaves room to
     * see the frame end (or a second frame start) without growing. */
    int rc = outbuf_init(o, size == ZSTD_CONTENTSIZE_UNKNOWN ? n * 4 : (size_t)size + 1, max_out);
    if (rc != MOMENTO_OK)
        return rc;
    ZSTD_DCtx *d = ZSTD_createDCtx();
    if (!d)
        return MOMENTO_ERR_NO_MEMORY;
    if (ZSTD_isError(ZSTD_DCtx_setParameter(d, ZSTD_d_windowLogMax, window_log_max(max_out)))) {
        ZSTD_freeDCtx(d);
        return MOMENTO_ERR_NO_MEMORY;
    }
    ZSTD_inBuffer ib = {in, n, 0};
    ZSTD_outBuffer ob = {o->p, o->cap, 0};
    for (;;) {
        size_t zr = ZSTD_decompressStream(d, &ob, &ib);
        if (ob.pos > max_out) {
            rc = MOMENTO_ERR_INVALID_ARGUMENT;
            *why = too_large;
            break;
        }
        if (ZSTD_isError(zr)) {
            rc = ZSTD_getErrorCode(zr) == ZSTD_error_memory_allocation
                     ? MOMENTO_ERR_NO_MEMORY
                     : MOMENTO_ERR_INVALID_ARGUMENT;
            *why = ZSTD_getErrorCode(zr) == ZSTD_error_frameParameter_windowTooLarge
                       ? too_large
                       : bad_zstd;
            break;
        }
        if (zr == 0 && ib.pos == ib.size) { /* the last frame ended with the input */
            rc = MOMENTO_OK;
            break;
        }
        if (ob.pos == ob.size) {
            int g = outbuf_grow(o);
            if (g != 0) {
                rc = g == 1 ? MOMENTO_ERR_INVALID_ARGUMENT : g;
                *why = too_large;
                break;
            }
            ob.dst = o->p;
            ob.size = o->cap;
            continue;
        }
        if (ib.pos == ib.size) { /* room left, input gone, frame unfinished */
            rc = MOMENTO_ERR_INVALID_ARGUMENT;
            *why = bad_zstd;
            break;
        }
    }
    ZSTD_freeDCtx(d);
    *len = ob.pos;
    return rc;
}

/* momento__decompress(), leaving `head` bytes before the output: *ret is
 * the allocation, the output starts at *ret + head. */
static int decompress_after(momento_compression algo, const uint8_t *in, size_t n,
                            size_t max_out, size_t head, uint8_t **ret, size_t *ret_len,
                            const char **why)
{
    static const char unknown[] = "the value is not compressed in a known format";
    outbuf o = {NULL, NULL, head, 0, 0};
    size_t len = 0;
    int rc;
    *why = NULL;
    if (algo == MOMENTO_COMPRESS_GZIP && n <= UINT_MAX) {
        rc = gzip_decompress(in, n, max_out, &o, &len, why);
    } else if (algo == MOMENTO_COMPRESS_ZSTD) {
        rc = zstd_decompress(in, n, max_out, &o, &len, why);
    } else {
        *why = unknown;
        return MOMENTO_ERR_INVALID_ARGUMENT;
    }
    if (rc != MOMENTO_OK) {
        free(o.base);
        if (rc == MOMENTO_ERR_NO_MEMORY)
            *why = NULL;
        return rc;
    }
    *ret = o.base;
    *ret_len = len;
    return MOMENTO_OK;
}

int momento__decompress(momento_compression algo, const uint8_t *in, size_t n, size_t max_out,
                        uint8_t **ret, size_t *ret_len, const char **why)
{
    return decompress_after(algo, in, n, max_out, 0, ret, ret_len, why);
}

size_t momento__decompress_limit(const momento_config *cfg)
{
    int on = cfg->decompress < 0 ? cfg->compression == MOMENTO_COMPRESS_GZIP ||
                                       cfg->compression == MOMENTO_COMPRESS_ZSTD
                                 : cfg->decompress;
    return on ? cfg->decompress_max_bytes : 0;
}

/* Decompressed values hang off the scratch in a chain of blocks, each its
 * link followed by the bytes. */
typedef struct dblock {
    struct dblock *next;
} dblock;

int momento__decompress_hit(momento__scratch *s, const uint8_t **value, size_t *len,
                            const char **why)
{
    if (!s->decompress_max || !*value)
        return MOMENTO_OK;
    momento_compression algo = momento__compression_detect(*value, *len);
    if (algo == MOMENTO_COMPRESS_NONE)
        return MOMENTO_OK; /* stored as is: returned as is, as the SDK does */
    /* What is left of the reply's budget bounds this value, so a batch of
     * bombs inflates no more than one value may. */
    size_t left = s->decompress_max - s->decompressed_bytes;
    uint8_t *out;
    size_t out_len;
    int rc = decompress_after(algo, *value, *len, left, sizeof(dblock), &out, &out_len, why);
    if (rc != MOMENTO_OK) {
        if (*why == too_large && left < s->decompress_max)
            *why = reply_too_large;
        return rc;
    }
    s->decompressed_bytes += out_len;
    dblock *b = (dblock *)(void *)out;
    b->next = s->decompressed;
    s->decompressed = b;
    *value = (const uint8_t *)(b + 1);
    *len = out_len;
    return MOMENTO_OK;
}

void momento__decompressed_free(void *chain)
{
    for (dblock *b = chain, *next; b; b = next) {
        next = b->next;
        free(b);
    }
}

/* The algorithm a write uses: the request's, else the client's; NONE or
 * DEFAULT mean none. */
static momento_compression write_algo(const momento_config *cfg, const momento_request_options *opts)
{
    int algo = MOMENTO__OPT(opts, compression);
    if (algo == MOMENTO_COMPRESS_DEFAULT)
        algo = cfg->compression;
    return algo == MOMENTO_COMPRESS_GZIP || algo == MOMENTO_COMPRESS_ZSTD
               ? (momento_compression)algo
               : MOMENTO_COMPRESS_NONE;
}

int momento__compress_write(const momento_config *cfg, const momento_request_options *opts,
                            const void **value, size_t *value_len, void **owned)
{
    *owned = NULL;
    /* The usual case, first: nothing asks for compression. */
    if (!cfg || (!opts && cfg->compression == MOMENTO_COMPRESS_NONE))
        return MOMENTO_OK;
    if (momento__check_options(opts) != 0 || (!*value && *value_len) ||
        *value_len > MOMENTO__COMPRESS_MAX_INPUT)
        return MOMENTO_OK; /* the argument check refuses these */
    momento_compression algo = write_algo(cfg, opts);
    if (algo == MOMENTO_COMPRESS_NONE)
        return MOMENTO_OK;
    uint8_t *out;
    size_t out_len;
    int rc = momento__compress(algo, cfg->compression_level, *value, *value_len, &out, &out_len);
    if (rc != MOMENTO_OK)
        return rc;
    *value = out;
    *value_len = out_len;
    *owned = out;
    return MOMENTO_OK;
}

/* A set batch's compressed values: the arrays sent, and each buffer. */
typedef struct compressed_batch {
    size_t n;
    const void **values;
    size_t *lens;
    void **bufs;
} compressed_batch;

int momento__compress_writes(const momento_config *cfg, const momento_request_options *opts,
                             const void *const *values, const size_t *value_lens, size_t n,
                             const void *const **ret_values, const size_t **ret_lens,
                             void **owned)
{
    *ret_values = values;
    *ret_lens = value_lens;
    *owned = NULL;
    if (!cfg || !values || !value_lens || n == 0 || n > MOMENTO__MAX_REQUEST_BYTES / 4 ||
        momento__check_options(opts) != 0 || write_algo(cfg, opts) == MOMENTO_COMPRESS_NONE)
        return MOMENTO_OK; /* nothing to compress, or the argument check refuses it */
    compressed_batch *cb = momento__malloc(sizeof(*cb));
    if (!cb)
        return MOMENTO_ERR_NO_MEMORY;
    cb->n = n;
    cb->values = momento__calloc(n, sizeof(*cb->values));
    cb->lens = momento__calloc(n, sizeof(*cb->lens));
    cb->bufs = momento__calloc(n, sizeof(*cb->bufs));
    if (!cb->values || !cb->lens || !cb->bufs) {
        momento__compressed_free(cb);
        return MOMENTO_ERR_NO_MEMORY;
    }
    for (size_t i = 0; i < n; i++) {
        cb->values[i] = values[i];
        cb->lens[i] = value_lens[i];
        int rc = momento__compress_write(cfg, opts, &cb->values[i], &cb->lens[i], &cb->bufs[i]);
        if (rc != MOMENTO_OK) {
            momento__compressed_free(cb);
            return rc;
        }
    }
    *ret_values = cb->values;
    *ret_lens = cb->lens;
    *owned = cb;
    return MOMENTO_OK;
}

void momento__compressed_free(void *owned)
{
    compressed_batch *cb = owned;
    if (!cb)
        return;
    for (size_t i = 0; cb->bufs && i < cb->n; i++)
        free(cb->bufs[i]);
    free(cb->values);
    free(cb->lens);
    free(cb->bufs);
    free(cb);
}
