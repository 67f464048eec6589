/* Value compression (lib/codec/compress.c) against the local server: round trips
 * with gzip and zstd through every write and read path (set, set_if, set
 * and get batches, the coalescer, the batcher), the per-request override,
 * the stored bytes as a client that does not decompress sees them, values
 * that are not compressed, values with the magic bytes and garbage after
 * them, decompression bombs, and the setters' ranges. */
#include "base/alloc.h"
#include "codec/compress.h"
#include "testutil.h"

#include "momento/coalescer.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

/* A client that compresses with `algo` at `level`; decompression as
 * `decompress` says (-1: left at its default). */
static momento_client *compressing(int algo, int level, int decompress, size_t max_bytes)
{
    momento_config *cfg = tu_config();
    assert_int_equal(momento_config_set_compression(cfg, algo, level), MOMENTO_OK);
    if (decompress >= 0)
        assert_int_equal(momento_config_set_decompression(cfg, decompress, max_bytes), MOMENTO_OK);
    momento_client *c = tu_client(tu_fx.server, cfg);
    momento_config_free(cfg);
    return c;
}

/* A compressible value of `n` bytes (text that repeats with variation),
 * on the heap: tests keep large arrays off the stack for valgrind. */
static char *text(size_t n)
{
    char *p = malloc(n + 1);
    assert_non_null(p);
    for (size_t i = 0; i < n; i++)
        p[i] = "the quick brown fox jumps over the lazy dog "[i % 44] + (char)(i % 997 == 0);
    p[n] = '\0';
    return p;
}

/* The value `c` reads for `key`: a hit, returned as a malloc'd copy. */
static uint8_t *get_value(momento_client *c, const char *key, size_t *len)
{
    momento_result *r;
    assert_int_equal(momento_get_sync(c, "c", key, strlen(key), NULL, &r), MOMENTO_OK);
    assert_int_equal(momento_result_error(r), MOMENTO_OK);
    assert_true(momento_result_is_hit(r));
    const void *v = momento_result_value(r, len);
    uint8_t *copy = malloc(*len + 1);
    assert_non_null(copy);
    memcpy(copy, v, *len);
    momento_result_free(r);
    return copy;
}

static void assert_reads(momento_client *c, const char *key, const void *want, size_t want_len)
{
    size_t len;
    uint8_t *v = get_value(c, key, &len);
    assert_int_equal(len, want_len);
    assert_memory_equal(v, want, len);
    free(v);
}

/* What `plain` sees for `key` is `want` compressed with `algo`: the magic
 * bytes, fewer bytes than the value, and the value once decompressed. */
static void assert_stored_compressed(const char *key, momento_compression algo, const void *want,
                                     size_t want_len)
{
    size_t len;
    uint8_t *v = get_value(tu_fx.client, key, &len);
    assert_int_equal(momento__compression_detect(v, len), algo);
    assert_true(len < want_len);
    uint8_t *out;
    size_t out_len;
    const char *why;
    assert_int_equal(momento__decompress(algo, v, len, want_len, &out, &out_len, &why),
                     MOMENTO_OK);
    assert_int_equal(out_len, want_len);
    assert_memory_equal(out, want, want_len);
    free(out);
    free(v);
}

static void put(momento_client *c, const char *key, const void *value, size_t len,
                const momento_request_options *opts)
{
    momento_result *r;
    assert_int_equal(momento_set_sync(c, "c", key, strlen(key), value, len, 0, opts, &r),
                     MOMENTO_OK);
    assert_int_equal(momento_result_error(r), MOMENTO_OK);
    momento_result_free(r);
}

/* The error `c` gets reading `key`, with the message checked to contain
 * `says`. */
static void assert_read_fails(momento_client *c, const char *key, const char *says)
{
    momento_result *r;
    /* A blocking call returns its result's error, and the result. */
    assert_int_equal(momento_get_sync(c, "c", key, strlen(key), NULL, &r),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_result_error(r), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_result_outcome(r), MOMENTO_OUTCOME_ERROR);
    assert_non_null(strstr(momento_result_message(r), says));
    assert_null(momento_result_value(r, NULL));
    momento_result_free(r);
}

static void round_trip(int algo)
{
    momento_client *c = compressing(algo, MOMENTO_COMPRESS_LEVEL_BALANCED, -1, 0);
    size_t n = 100000;
    char *v = text(n);
    put(c, "rt", v, n, NULL);
    assert_reads(c, "rt", v, n);
    assert_stored_compressed("rt", (momento_compression)algo, v, n);

    /* The conditional sets compress too. */
    momento_result *r;
    assert_int_equal(momento_delete_sync(c, "c", "rt-if", 5, NULL, &r), MOMENTO_OK);
    momento_result_free(r);
    tu_expect(momento_set_if_absent_sync(c, "c", "rt-if", 5, v, n, 0, NULL, &r), r,
              MOMENTO_OUTCOME_STORED);
    assert_reads(c, "rt-if", v, n);
    assert_stored_compressed("rt-if", (momento_compression)algo, v, n);

    /* An empty value is compressed and read back empty, as the SDK does. */
    put(c, "rt-empty", "", 0, NULL);
    assert_reads(c, "rt-empty", "", 0);
    size_t len;
    uint8_t *raw = get_value(tu_fx.client, "rt-empty", &len);
    assert_int_equal(momento__compression_detect(raw, len), algo);
    free(raw);

    /* Batches: set compresses each value, get decompresses each item. */
    const void *keys[3] = {"b0", "b1", "b2"};
    size_t key_lens[3] = {2, 2, 2};
    const void *vals[3] = {v, v + 1000, "short"};
    size_t val_lens[3] = {n, 5000, 5};
    assert_int_equal(momento_set_batch_sync(c, "c", keys, key_lens, vals, val_lens, 3, 0, NULL, &r),
                     MOMENTO_OK);
    assert_int_equal(momento_result_error(r), MOMENTO_OK);
    momento_result_free(r);
    assert_stored_compressed("b0", (momento_compression)algo, v, n);
    assert_int_equal(momento_get_batch_sync(c, "c", keys, key_lens, 3, NULL, &r), MOMENTO_OK);
    assert_int_equal(momento_result_item_count(r), 3);
    for (size_t i = 0; i < 3; i++) {
        const void *iv = momento_result_value(momento_result_item(r, i), &len);
        assert_int_equal(len, val_lens[i]);
        assert_memory_equal(iv, vals[i], len);
    }
    momento_result_free(r);
    momento_client_free(c);
    free(v);
}

static void test_round_trip_gzip(void **state)
{
    (void)state;
    round_trip(MOMENTO_COMPRESS_GZIP);
}

static void test_round_trip_zstd(void **state)
{
    (void)state;
    round_trip(MOMENTO_COMPRESS_ZSTD);
}

/* The SDK's three levels map to different effort: SmallestSize is never
 * larger than Fastest; raw levels work. */
static void test_levels(void **state)
{
    (void)state;
    size_t n = 200000;
    char *v = text(n);
    static const int algos[2] = {MOMENTO_COMPRESS_GZIP, MOMENTO_COMPRESS_ZSTD};
    for (int a = 0; a < 2; a++) {
        size_t sizes[3];
        static const int levels[3] = {MOMENTO_COMPRESS_LEVEL_FASTEST,
                                      MOMENTO_COMPRESS_LEVEL_BALANCED,
                                      MOMENTO_COMPRESS_LEVEL_SMALLEST};
        for (int l = 0; l < 3; l++) {
            momento_client *c = compressing(algos[a], levels[l], -1, 0);
            put(c, "lv", v, n, NULL);
            assert_reads(c, "lv", v, n);
            uint8_t *raw = get_value(tu_fx.client, "lv", &sizes[l]);
            free(raw);
            momento_client_free(c);
        }
        assert_true(sizes[2] <= sizes[0]);
    }
    momento_client *c = compressing(MOMENTO_COMPRESS_ZSTD, 19, -1, 0);
    put(c, "lv19", v, n, NULL);
    assert_reads(c, "lv19", v, n);
    /* A raw zstd level above gzip's range is used as 9 when a request picks
     * gzip. */
    momento_request_options o = MOMENTO_REQUEST_OPTIONS_INIT;
    o.compression = MOMENTO_COMPRESS_GZIP;
    put(c, "lv19g", v, n, &o);
    assert_reads(c, "lv19g", v, n);
    assert_stored_compressed("lv19g", MOMENTO_COMPRESS_GZIP, v, n);
    momento_client_free(c);
    free(v);
}

static void test_setter_ranges(void **state)
{
    (void)state;
    momento_config *cfg = tu_config();
    assert_int_equal(momento_config_set_compression(NULL, MOMENTO_COMPRESS_GZIP, 0),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_config_set_compression(cfg, 4, 0), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_config_set_compression(cfg, -1, 0), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_config_set_compression(cfg, MOMENTO_COMPRESS_GZIP, 10),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_config_set_compression(cfg, MOMENTO_COMPRESS_GZIP, -3),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_config_set_compression(cfg, MOMENTO_COMPRESS_ZSTD, 23),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_config_set_compression(cfg, MOMENTO_COMPRESS_GZIP, 9), MOMENTO_OK);
    assert_int_equal(momento_config_set_compression(cfg, MOMENTO_COMPRESS_ZSTD, 22), MOMENTO_OK);
    assert_int_equal(momento_config_set_compression(cfg, MOMENTO_COMPRESS_ZSTD,
                                                    MOMENTO_COMPRESS_LEVEL_SMALLEST),
                     MOMENTO_OK);
    assert_int_equal(momento_config_set_compression(cfg, MOMENTO_COMPRESS_NONE, 99), MOMENTO_OK);
    assert_int_equal(momento_config_set_decompression(NULL, 1, 0), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_config_set_decompression(cfg, 2, 0), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_config_set_decompression(cfg, 1, MOMENTO_DECOMPRESS_MAX_BYTES + 1ul),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_config_set_decompression(cfg, 1, MOMENTO_DECOMPRESS_MAX_BYTES),
                     MOMENTO_OK);
    momento_config_free(cfg);

    /* A request's compression outside the enum is refused before sending. */
    momento_request_options o = MOMENTO_REQUEST_OPTIONS_INIT;
    o.compression = 4;
    assert_int_equal(momento_set(tu_fx.client, "c", "k", 1, "v", 1, 0, &o, tu_count_cb, NULL),
                     MOMENTO_ERR_INVALID_ARGUMENT);
}

/* A request's compression overrides the client's: another algorithm, NONE,
 * or compression from a client that has none configured. */
static void test_per_request(void **state)
{
    (void)state;
    size_t n = 50000;
    char *v = text(n);
    momento_client *c = compressing(MOMENTO_COMPRESS_GZIP, MOMENTO_COMPRESS_LEVEL_BALANCED, -1, 0);
    momento_request_options o = MOMENTO_REQUEST_OPTIONS_INIT;

    o.compression = MOMENTO_COMPRESS_ZSTD;
    put(c, "pr-zstd", v, n, &o);
    assert_stored_compressed("pr-zstd", MOMENTO_COMPRESS_ZSTD, v, n);
    assert_reads(c, "pr-zstd", v, n); /* a read recognises either format */

    o.compression = MOMENTO_COMPRESS_NONE;
    put(c, "pr-none", v, n, &o);
    assert_reads(tu_fx.client, "pr-none", v, n); /* stored as given */
    assert_reads(c, "pr-none", v, n);

    o.compression = MOMENTO_COMPRESS_DEFAULT;
    put(c, "pr-default", v, n, &o);
    assert_stored_compressed("pr-default", MOMENTO_COMPRESS_GZIP, v, n);

    /* The client without compression compresses this one request; it does
     * not decompress (its default), so it reads the stored bytes. */
    o.compression = MOMENTO_COMPRESS_GZIP;
    put(tu_fx.client, "pr-plain", v, n, &o);
    assert_stored_compressed("pr-plain", MOMENTO_COMPRESS_GZIP, v, n);
    assert_reads(c, "pr-plain", v, n);

    /* A set_if with a per-request algorithm, and one with NONE. */
    momento_result *r;
    o.compression = MOMENTO_COMPRESS_ZSTD;
    tu_expect(momento_set_if_absent_sync(c, "c", "pr-if", 5, v, n, 0, &o, &r), r,
              MOMENTO_OUTCOME_STORED);
    assert_stored_compressed("pr-if", MOMENTO_COMPRESS_ZSTD, v, n);
    o.compression = MOMENTO_COMPRESS_NONE;
    tu_expect(momento_set_if_present_sync(c, "c", "pr-if", 5, v, n, 0, &o, &r), r,
              MOMENTO_OUTCOME_STORED);
    assert_reads(tu_fx.client, "pr-if", v, n);

    momento_client_free(c);
    free(v);
}

/* A value compressed by a client, read by a client that does not
 * decompress (switched off, or never on): the stored, compressed bytes. */
static void test_decompression_off(void **state)
{
    (void)state;
    size_t n = 30000;
    char *v = text(n);
    momento_client *off = compressing(MOMENTO_COMPRESS_ZSTD, MOMENTO_COMPRESS_LEVEL_BALANCED, 0, 0);
    put(off, "off", v, n, NULL);
    size_t len;
    uint8_t *raw = get_value(off, "off", &len);
    assert_int_equal(momento__compression_detect(raw, len), MOMENTO_COMPRESS_ZSTD);
    assert_true(len < n);
    free(raw);
    assert_stored_compressed("off", MOMENTO_COMPRESS_ZSTD, v, n);

    /* Decompression on without compression: reads decompress, writes do
     * not compress. */
    momento_client *on = compressing(MOMENTO_COMPRESS_NONE, 0, 1, 0);
    assert_reads(on, "off", v, n);
    put(on, "on-plain", v, n, NULL);
    assert_reads(tu_fx.client, "on-plain", v, n);
    momento_client_free(on);
    momento_client_free(off);
    free(v);
}

/* Values without the magic bytes are returned as stored, also when they
 * are shorter than the magic bytes. */
static void test_not_compressed(void **state)
{
    (void)state;
    momento_client *c = compressing(MOMENTO_COMPRESS_ZSTD, MOMENTO_COMPRESS_LEVEL_BALANCED, -1, 0);
    put(tu_fx.client, "nc", "hello", 5, NULL);
    assert_reads(c, "nc", "hello", 5);
    put(tu_fx.client, "nc1", "\x1f", 1, NULL);
    assert_reads(c, "nc1", "\x1f", 1);
    put(tu_fx.client, "nc3", "\x28\xb5\x2f", 3, NULL);
    assert_reads(c, "nc3", "\x28\xb5\x2f", 3);
    put(tu_fx.client, "nc0", "", 0, NULL);
    assert_reads(c, "nc0", "", 0);
    momento_client_free(c);
}

/* The magic bytes followed by garbage, or a stream cut short: the read
 * fails with MOMENTO_ERR_INVALID_ARGUMENT and a message naming the format,
 * as the SDK's read fails; a client that does not decompress reads the
 * bytes. In a get batch only that item fails. */
static void test_garbage_after_magic(void **state)
{
    (void)state;
    momento_client *c = compressing(MOMENTO_COMPRESS_GZIP, MOMENTO_COMPRESS_LEVEL_BALANCED, -1, 0);
    static const char gz_junk[] = "\x1f\x8bnot gzip at all, just text";
    static const char zs_junk[] = "\x28\xb5\x2f\xfdnot zstd either";
    put(tu_fx.client, "gz-junk", gz_junk, sizeof(gz_junk) - 1, NULL);
    put(tu_fx.client, "zs-junk", zs_junk, sizeof(zs_junk) - 1, NULL);
    assert_read_fails(c, "gz-junk", "gzip");
    assert_read_fails(c, "zs-junk", "zstd");
    assert_reads(tu_fx.client, "gz-junk", gz_junk, sizeof(gz_junk) - 1);

    /* Valid streams cut in half. */
    size_t n = 20000;
    char *v = text(n);
    for (int algo = MOMENTO_COMPRESS_GZIP; algo <= MOMENTO_COMPRESS_ZSTD; algo++) {
        uint8_t *z;
        size_t zlen;
        assert_int_equal(momento__compress(algo, 0, (const uint8_t *)v, n, &z, &zlen), MOMENTO_OK);
        put(tu_fx.client, "cut", z, zlen / 2, NULL);
        assert_read_fails(c, "cut", algo == MOMENTO_COMPRESS_GZIP ? "gzip" : "zstd");
        free(z);
    }

    /* A batch: the bad item fails with its message (kept by the blocking
     * copy), the others are read. */
    put(c, "good", v, n, NULL);
    const void *keys[3] = {"good", "gz-junk", "nc-missing"};
    size_t key_lens[3] = {4, 7, 10};
    momento_result *r;
    assert_int_equal(momento_get_batch_sync(c, "c", keys, key_lens, 3, NULL, &r), MOMENTO_OK);
    assert_int_equal(momento_result_error(r), MOMENTO_OK);
    size_t len;
    const momento_result *it = momento_result_item(r, 0);
    assert_true(momento_result_is_hit(it));
    assert_memory_equal(momento_result_value(it, &len), v, n);
    assert_int_equal(len, n);
    it = momento_result_item(r, 1);
    assert_int_equal(momento_result_error(it), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_result_outcome(it), MOMENTO_OUTCOME_ERROR);
    assert_non_null(strstr(momento_result_message(it), "gzip"));
    assert_int_equal(momento_result_outcome(momento_result_item(r, 2)), MOMENTO_OUTCOME_MISS);
    momento_result_free(r);
    momento_client_free(c);
    free(v);
}

/* A zstd frame without its content size, as the JS SDK's binding writes
 * them: the decoder cannot size its output in advance. */
static uint8_t *zstd_unsized(const void *in, size_t n, size_t *ret_len)
{
    ZSTD_CCtx *cc = ZSTD_createCCtx();
    assert_non_null(cc);
    assert_false(ZSTD_isError(ZSTD_CCtx_setParameter(cc, ZSTD_c_contentSizeFlag, 0)));
    size_t bound = ZSTD_compressBound(n);
    uint8_t *out = malloc(bound);
    assert_non_null(out);
    ZSTD_inBuffer ib = {in, n, 0};
    ZSTD_outBuffer ob = {out, bound, 0};
    assert_int_equal(ZSTD_compressStream2(cc, &ob, &ib, ZSTD_e_end), 0);
    ZSTD_freeCCtx(cc);
    *ret_len = ob.pos;
    return out;
}

/* Decompression bombs: a few kilobytes that expand past the limit end as
 * a clear error, whether the format declares the size (zstd with its
 * content size) or not (gzip, zstd without); a value of exactly the limit
 * is read. */
static void test_bomb_bounded(void **state)
{
    (void)state;
    size_t limit = 1024 * 1024;
    momento_client *c = compressing(MOMENTO_COMPRESS_GZIP, MOMENTO_COMPRESS_LEVEL_BALANCED, 1, limit);
    uint8_t *zeros = calloc(1, 4 * limit);
    assert_non_null(zeros);
    for (int algo = MOMENTO_COMPRESS_GZIP; algo <= MOMENTO_COMPRESS_ZSTD; algo++) {
        uint8_t *z;
        size_t zlen;
        assert_int_equal(momento__compress(algo, 0, zeros, 4 * limit, &z, &zlen), MOMENTO_OK);
        assert_true(zlen < 8192);
        put(tu_fx.client, "bomb", z, zlen, NULL);
        free(z);
        assert_read_fails(c, "bomb", "limit");
        assert_int_equal(momento__compress(algo, 0, zeros, limit, &z, &zlen), MOMENTO_OK);
        put(tu_fx.client, "at-limit", z, zlen, NULL);
        free(z);
        assert_reads(c, "at-limit", zeros, limit);
    }
    size_t zlen;
    uint8_t *z = zstd_unsized(zeros, 4 * limit, &zlen);
    assert_int_equal(ZSTD_getFrameContentSize(z, zlen), ZSTD_CONTENTSIZE_UNKNOWN);
    put(tu_fx.client, "bomb-unsized", z, zlen, NULL);
    free(z);
    assert_read_fails(c, "bomb-unsized", "limit");
    z = zstd_unsized(zeros, limit, &zlen);
    put(tu_fx.client, "unsized", z, zlen, NULL);
    free(z);
    assert_reads(c, "unsized", zeros, limit);
    momento_client_free(c);

    /* The default limit, MOMENTO_DECOMPRESS_DEFAULT_MAX_BYTES, with a
     * gzip stream that expands one byte past it. */
    c = compressing(MOMENTO_COMPRESS_GZIP, MOMENTO_COMPRESS_LEVEL_BALANCED, -1, 0);
    size_t big = (size_t)MOMENTO_DECOMPRESS_DEFAULT_MAX_BYTES + 1;
    uint8_t *many = calloc(1, big);
    assert_non_null(many);
    assert_int_equal(momento__compress(MOMENTO_COMPRESS_GZIP, MOMENTO_COMPRESS_LEVEL_FASTEST, many,
                                       big, &z, &zlen),
                     MOMENTO_OK);
    free(many);
    put(tu_fx.client, "bomb-default", z, zlen, NULL);
    free(z);
    assert_read_fails(c, "bomb-default", "limit");
    momento_client_free(c);
    free(zeros);
}

/* Issue 27 item 4: the decompression limit bounds what one reply inflates
 * in total, not only each value. A get batch of 40 bombs (each 4 MiB of
 * zeros, a few KB compressed, each within the limit) decompresses the
 * first and fails the rest; values that fit together all decompress. The
 * batcher's GetBatch is one reply too. */
static void test_bombs_bounded_per_reply(void **state)
{
    (void)state;
    size_t limit = 4 * 1024 * 1024;
    momento_client *c = compressing(MOMENTO_COMPRESS_GZIP, MOMENTO_COMPRESS_LEVEL_BALANCED, 1, limit);
    uint8_t *zeros = calloc(1, limit);
    assert_non_null(zeros);
    uint8_t *z;
    size_t zlen;
    assert_int_equal(momento__compress(MOMENTO_COMPRESS_GZIP, 0, zeros, limit, &z, &zlen),
                     MOMENTO_OK);
    assert_true(zlen < 16384);
    enum { N = 40 };
    char names[N][12];
    const void *keys[N];
    size_t key_lens[N];
    for (int i = 0; i < N; i++) {
        snprintf(names[i], sizeof(names[i]), "bomb%d", i);
        keys[i] = names[i];
        key_lens[i] = strlen(names[i]);
        put(tu_fx.client, names[i], z, zlen, NULL);
    }
    free(z);
    momento_result *r;
    assert_int_equal(momento_get_batch_sync(c, "c", keys, key_lens, N, NULL, &r), MOMENTO_OK);
    assert_int_equal(momento_result_item_count(r), N);
    size_t len;
    const void *v = momento_result_value(momento_result_item(r, 0), &len);
    assert_int_equal(len, limit);
    assert_memory_equal(v, zeros, limit);
    for (int i = 1; i < N; i++) {
        const momento_result *item = momento_result_item(r, (size_t)i);
        assert_int_equal(momento_result_error(item), MOMENTO_ERR_INVALID_ARGUMENT);
        assert_non_null(strstr(momento_result_message(item), "in total"));
        assert_null(momento_result_value(item, NULL));
    }
    momento_result_free(r);

    /* Four values of a quarter of the limit fit in one reply together. */
    assert_int_equal(momento__compress(MOMENTO_COMPRESS_GZIP, 0, zeros, limit / 4, &z, &zlen),
                     MOMENTO_OK);
    for (int i = 0; i < 5; i++)
        put(tu_fx.client, names[i], z, zlen, NULL);
    free(z);
    assert_int_equal(momento_get_batch_sync(c, "c", keys, key_lens, 5, NULL, &r), MOMENTO_OK);
    for (int i = 0; i < 4; i++) {
        v = momento_result_value(momento_result_item(r, (size_t)i), &len);
        assert_int_equal(len, limit / 4);
    }
    assert_non_null(strstr(momento_result_message(momento_result_item(r, 4)), "in total"));
    momento_result_free(r);
    momento_client_free(c);

    /* The batcher: gets queued behind one RPC in flight leave as one
     * GetBatch, whose items share the bound; but an item past it was not
     * too large alone, so it is asked again alone (docs/batching.md "One
     * key's failure") and every get ends with its value, as unbatched. */
    momento_config *cfg = tu_config();
    assert_int_equal(momento_config_set_decompression(cfg, 1, limit), MOMENTO_OK);
    assert_int_equal(momento_config_set_batching(cfg, 1, 0, 64, 1024 * 1024), MOMENTO_OK);
    /* Completions only: the gets provably share batches. */
    assert_int_equal(momento_config_set_batching_max_wait(cfg, 0), MOMENTO_OK);
    c = tu_client(tu_fx.server, cfg);
    momento_config_free(cfg);
    tu_counter k;
    tu_counter_init(&k);
    for (int i = 5; i < N; i++)
        assert_int_equal(momento_get(c, "c", keys[i], key_lens[i], NULL, tu_count_cb, &k),
                         MOMENTO_OK);
    assert_int_equal(tu_counter_wait(&k, N - 5, (int)TU_MS(20000)), N - 5);
    assert_int_equal(k.hits, N - 5);
    momento_client_batching_stats bs;
    assert_int_equal(momento_client_batching_stats_get(c, &bs, sizeof(bs)), MOMENTO_OK);
    assert_true(bs.batches >= 1);
    /* At most one value fits a reply: the others of each batch were asked
     * again alone. */
    assert_true(bs.asked_alone >= bs.batched_keys - bs.batches);
    tu_counter_destroy(&k);
    momento_client_free(c);
    free(zeros);
}

/* The module itself: several gzip members read as one value, as Node's
 * gunzip reads them; bytes after the last member are ignored, as Node
 * does; zstd frames in a row; an unknown format. */
static void test_formats(void **state)
{
    (void)state;
    uint8_t *a, *b, *out;
    size_t alen, blen, out_len;
    const char *why;
    for (int algo = MOMENTO_COMPRESS_GZIP; algo <= MOMENTO_COMPRESS_ZSTD; algo++) {
        assert_int_equal(momento__compress(algo, 0, (const uint8_t *)"hello ", 6, &a, &alen),
                         MOMENTO_OK);
        assert_int_equal(momento__compress(algo, 0, (const uint8_t *)"world", 5, &b, &blen),
                         MOMENTO_OK);
        uint8_t *both = malloc(alen + blen + 4);
        assert_non_null(both);
        memcpy(both, a, alen);
        memcpy(both + alen, b, blen);
        assert_int_equal(momento__decompress(algo, both, alen + blen, 100, &out, &out_len, &why),
                         MOMENTO_OK);
        assert_int_equal(out_len, 11);
        assert_memory_equal(out, "hello world", 11);
        free(out);
        memcpy(both + alen + blen, "junk", 4);
        int rc = momento__decompress(algo, both, alen + blen + 4, 100, &out, &out_len, &why);
        if (algo == MOMENTO_COMPRESS_GZIP) {
            assert_int_equal(rc, MOMENTO_OK);
            assert_int_equal(out_len, 11);
            free(out);
        } else {
            assert_int_equal(rc, MOMENTO_ERR_INVALID_ARGUMENT);
            assert_non_null(strstr(why, "zstd"));
        }
        /* A limit one byte short of the output. */
        assert_int_equal(momento__decompress(algo, both, alen + blen, 10, &out, &out_len, &why),
                         MOMENTO_ERR_INVALID_ARGUMENT);
        assert_non_null(strstr(why, "limit"));
        free(both);
        free(a);
        free(b);
    }
    /* Two gzip members of 64 bytes: the first fills the buffer sized by
     * the last's trailer (64) exactly, so the second needs room first. */
    uint8_t sixty_four[64];
    memset(sixty_four, 'a', sizeof(sixty_four));
    assert_int_equal(momento__compress(MOMENTO_COMPRESS_GZIP, 0, sixty_four, 64, &a, &alen),
                     MOMENTO_OK);
    uint8_t *twice = malloc(2 * alen);
    assert_non_null(twice);
    memcpy(twice, a, alen);
    memcpy(twice + alen, a, alen);
    assert_int_equal(momento__decompress(MOMENTO_COMPRESS_GZIP, twice, 2 * alen, 1000, &out,
                                         &out_len, &why),
                     MOMENTO_OK);
    assert_int_equal(out_len, 128);
    free(out);
    free(twice);
    free(a);

    assert_int_equal(momento__decompress(MOMENTO_COMPRESS_NONE, (const uint8_t *)"x", 1, 10, &out,
                                         &out_len, &why),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento__compress(MOMENTO_COMPRESS_NONE, 0, (const uint8_t *)"x", 1, &out,
                                       &out_len),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    /* The gzip header as Node's zlib.gzip() writes it: no name, mtime 0,
     * Unix. */
    assert_int_equal(momento__compress(MOMENTO_COMPRESS_GZIP, 0, (const uint8_t *)"x", 1, &out,
                                       &out_len),
                     MOMENTO_OK);
    assert_memory_equal(out, "\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03", 10);
    free(out);
}

/* The coalescer's sets compress once and its gets share one decompressed
 * value. */
static void test_coalescer(void **state)
{
    (void)state;
    size_t n = 40000;
    char *v = text(n);
    momento_client *c = compressing(MOMENTO_COMPRESS_ZSTD, MOMENTO_COMPRESS_LEVEL_BALANCED, -1, 0);
    momento_coalescer *co = tu_coalescer(c);
    momento_result *r;
    assert_int_equal(momento_coalescing_set_sync(co, "c", "co", 2, v, n, 0, NULL, &r), MOMENTO_OK);
    assert_int_equal(momento_result_error(r), MOMENTO_OK);
    momento_result_free(r);
    assert_stored_compressed("co", MOMENTO_COMPRESS_ZSTD, v, n);

    tu_counter k;
    tu_counter_init(&k);
    k.expect = v;
    k.expect_len = n;
    for (int i = 0; i < 20; i++)
        assert_int_equal(momento_coalescing_get(co, "c", "co", 2, NULL, tu_count_cb, &k),
                         MOMENTO_OK);
    assert_int_equal(tu_counter_wait(&k, 20, (int)TU_MS(10000)), 20);
    assert_int_equal(k.hits, 20);
    assert_int_equal(k.bad_values, 0);
    tu_counter_destroy(&k);
    momento_coalescer_free(co);
    momento_client_free(c);
    free(v);
}

/* With adaptive batching on, queued sets leave compressed in SetBatch and
 * queued gets come back decompressed from GetBatch. */
static void test_batcher(void **state)
{
    (void)state;
    size_t n = 20000;
    char *v = text(n);
    momento_config *cfg = tu_config();
    assert_int_equal(momento_config_set_compression(cfg, MOMENTO_COMPRESS_GZIP, 0), MOMENTO_OK);
    assert_int_equal(momento_config_set_batching(cfg, 1, 2000, 64, 1024 * 1024), MOMENTO_OK);
    momento_client *c = tu_client(tu_fx.server, cfg);
    momento_config_free(cfg);

    enum { N = 64 };
    char keys[N][8];
    tu_counter k;
    tu_counter_init(&k);
    for (int i = 0; i < N; i++) {
        snprintf(keys[i], sizeof(keys[i]), "bt%d", i);
        assert_int_equal(momento_set(c, "c", keys[i], strlen(keys[i]), v, n, 0, NULL, tu_count_cb,
                                     &k),
                         MOMENTO_OK);
    }
    assert_int_equal(tu_counter_wait(&k, N, (int)TU_MS(10000)), N);
    assert_int_equal(k.ok, N);
    tu_counter_destroy(&k);
    for (int i = 0; i < N; i += 9)
        assert_stored_compressed(keys[i], MOMENTO_COMPRESS_GZIP, v, n);

    tu_counter_init(&k);
    k.expect = v;
    k.expect_len = n;
    for (int i = 0; i < N; i++)
        assert_int_equal(momento_get(c, "c", keys[i], strlen(keys[i]), NULL, tu_count_cb, &k),
                         MOMENTO_OK);
    assert_int_equal(tu_counter_wait(&k, N, (int)TU_MS(10000)), N);
    assert_int_equal(k.hits, N);
    assert_int_equal(k.bad_values, 0);
    tu_counter_destroy(&k);
    momento_client_free(c);
    free(v);
}

/* Every scalar write path compresses a value exactly once (issue 27 item
 * 1): plain, with headers or another read concern (which the coalescer
 * sends alone), coalesced, batched, and every conditional form. A value
 * compressed twice reads back through a decompressing client as the inner
 * gzip stream, not the value. */
static void test_every_write_path_compresses_once(void **state)
{
    (void)state;
    size_t n = 2000;
    char *v = text(n);
    momento_config *cfg = tu_config();
    assert_int_equal(momento_config_set_compression(cfg, MOMENTO_COMPRESS_GZIP, 0), MOMENTO_OK);
    momento_client *c = tu_client(tu_fx.server, cfg);
    /* The same with adaptive batching: its sets leave in SetBatch. */
    assert_int_equal(momento_config_set_batching(cfg, 1, 2000, 64, 1024 * 1024), MOMENTO_OK);
    momento_client *batching = tu_client(tu_fx.server, cfg);
    momento_config_free(cfg);
    momento_coalescer *co, *bco;
    assert_int_equal(momento_coalescer_new(&co, c), MOMENTO_OK);
    assert_int_equal(momento_coalescer_new(&bco, batching), MOMENTO_OK);

    momento_header trace = {"x-trace-id", "abc"};
    momento_request_options with_header = MOMENTO_REQUEST_OPTIONS_INIT;
    with_header.headers = &trace;
    with_header.n_headers = 1;
    momento_request_options consistent = MOMENTO_REQUEST_OPTIONS_INIT;
    consistent.read_concern = MOMENTO_READ_CONSISTENT;
    const momento_request_options *variants[] = {NULL, &with_header, &consistent};

    momento_result *r;
    char key[32];
    for (size_t i = 0; i < sizeof(variants) / sizeof(variants[0]); i++) {
        const momento_request_options *o = variants[i];
        snprintf(key, sizeof(key), "once-set-%zu", i);
        put(c, key, v, n, o);
        assert_reads(c, key, v, n);
        assert_stored_compressed(key, MOMENTO_COMPRESS_GZIP, v, n);

        momento_client *clients[] = {c, batching};
        momento_coalescer *coalescers[] = {co, bco};
        for (int b = 0; b < 2; b++) {
            snprintf(key, sizeof(key), "once-co-%zu-%d", i, b);
            assert_int_equal(
                momento_coalescing_set_sync(coalescers[b], "c", key, strlen(key), v, n, 0, o, &r),
                MOMENTO_OK);
            assert_int_equal(momento_result_error(r), MOMENTO_OK);
            momento_result_free(r);
            assert_reads(clients[b], key, v, n);
            assert_stored_compressed(key, MOMENTO_COMPRESS_GZIP, v, n);

            snprintf(key, sizeof(key), "once-bt-%zu-%d", i, b);
            assert_int_equal(
                momento_set_sync(clients[b], "c", key, strlen(key), v, n, 0, o, &r), MOMENTO_OK);
            momento_result_free(r);
            assert_stored_compressed(key, MOMENTO_COMPRESS_GZIP, v, n);
        }

        snprintf(key, sizeof(key), "once-if-%zu", i);
        tu_expect(momento_set_if_absent_sync(c, "c", key, strlen(key), v, n, 0, o, &r), r,
                  MOMENTO_OUTCOME_STORED);
        assert_stored_compressed(key, MOMENTO_COMPRESS_GZIP, v, n);
        tu_expect(momento_set_if_present_and_not_equal_sync(c, "c", key, strlen(key), v, n, 0, "x",
                                                            1, o, &r),
                  r, MOMENTO_OUTCOME_STORED);
        assert_stored_compressed(key, MOMENTO_COMPRESS_GZIP, v, n);

        snprintf(key, sizeof(key), "once-hash-%zu", i);
        assert_int_equal(momento_set_with_hash_sync(c, "c", key, strlen(key), v, n, 0, o, &r),
                         MOMENTO_OK);
        assert_int_equal(momento_result_error(r), MOMENTO_OK);
        momento_result_free(r);
        assert_stored_compressed(key, MOMENTO_COMPRESS_GZIP, v, n);
        tu_expect(momento_set_if_absent_or_hash_not_equal_sync(c, "c", key, strlen(key), v, n, 0,
                                                               "h", 1, o, &r),
                  r, MOMENTO_OUTCOME_STORED);
        assert_stored_compressed(key, MOMENTO_COMPRESS_GZIP, v, n);

        snprintf(key, sizeof(key), "once-batch-%zu", i);
        const void *keys[1] = {key};
        size_t key_lens[1] = {strlen(key)};
        const void *vals[1] = {v};
        size_t val_lens[1] = {n};
        assert_int_equal(
            momento_set_batch_sync(c, "c", keys, key_lens, vals, val_lens, 1, 0, o, &r),
            MOMENTO_OK);
        momento_result_free(r);
        assert_stored_compressed(key, MOMENTO_COMPRESS_GZIP, v, n);
    }
    momento_coalescer_free(co);
    momento_coalescer_free(bco);
    momento_client_free(c);
    momento_client_free(batching);
    free(v);
}

/* A value larger than the item limit that compresses below it is accepted:
 * the limit applies to what is sent. */
static void test_limit_applies_to_compressed(void **state)
{
    (void)state;
    size_t n = MOMENTO_MAX_ITEM_BYTES + 1024 * 1024;
    char *v = text(n);
    momento_client *c = compressing(MOMENTO_COMPRESS_ZSTD, MOMENTO_COMPRESS_LEVEL_BALANCED, -1, 0);
    put(c, "big", v, n, NULL);
    assert_reads(c, "big", v, n);
    momento_request_options o = MOMENTO_REQUEST_OPTIONS_INIT;
    o.compression = MOMENTO_COMPRESS_NONE;
    assert_int_equal(momento_set(c, "c", "big", 3, v, n, 0, &o, tu_count_cb, NULL),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    momento_client_free(c);
    free(v);
}

/* Every allocation of a compressed set and of a decompressing get, failed
 * in turn: the call returns MOMENTO_ERR_NO_MEMORY, or its result says so,
 * and nothing leaks (the valgrind run checks that); once no allocation
 * fails, the value reads back. zlib's allocations go through the
 * library's allocator, so they are among those failed. */
static void test_allocation_failures(void **state)
{
    (void)state;
    size_t n = 20000;
    char *v = text(n);
    momento_client *c = compressing(MOMENTO_COMPRESS_GZIP, MOMENTO_COMPRESS_LEVEL_BALANCED, -1, 0);
    put(c, "af", v, n, NULL);
    for (int op = 0; op < 2; op++) {
        int n_tried = 0;
        for (int i = 0; i < 200; i++, n_tried++) {
            momento_result *r = NULL;
            atomic_store(&momento__alloc_countdown, i);
            int rc = op == 0 ? momento_set_sync(c, "c", "af", 2, v, n, 0, NULL, &r)
                             : momento_get_sync(c, "c", "af", 2, NULL, &r);
            int reached = atomic_load(&momento__alloc_countdown) < 0;
            atomic_store(&momento__alloc_countdown, -1);
            momento_result_free(r);
            if (!reached) {
                assert_int_equal(rc, MOMENTO_OK);
                break;
            }
            if (rc != MOMENTO_OK)
                assert_int_equal(rc, MOMENTO_ERR_NO_MEMORY);
        }
        assert_true(n_tried > 3 && n_tried < 200);
        assert_reads(c, "af", v, n);
    }
    momento_client_free(c);
    free(v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_gzip),
        cmocka_unit_test(test_round_trip_zstd),
        cmocka_unit_test(test_levels),
        cmocka_unit_test(test_setter_ranges),
        cmocka_unit_test(test_per_request),
        cmocka_unit_test(test_decompression_off),
        cmocka_unit_test(test_not_compressed),
        cmocka_unit_test(test_garbage_after_magic),
        cmocka_unit_test(test_bomb_bounded),
        cmocka_unit_test(test_bombs_bounded_per_reply),
        cmocka_unit_test(test_formats),
        cmocka_unit_test(test_coalescer),
        cmocka_unit_test(test_batcher),
        cmocka_unit_test(test_every_write_path_compresses_once),
        cmocka_unit_test(test_limit_applies_to_compressed),
        cmocka_unit_test(test_allocation_failures),
    };
    /* tu_fx.client compresses nothing, so decompresses nothing: it sees the
     * stored bytes. */
    return cmocka_run_group_tests(tests, tu_fixture_setup, tu_fixture_teardown);
}
