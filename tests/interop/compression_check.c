/* The library's half of the compression cross-check with the Node SDK
 * (compression.js), run by compression.sh:
 *   compression_check write HOST:PORT  stores values compressed with gzip
 *                                      and zstd at each of the SDK's levels
 *   compression_check read  HOST:PORT  reads what compression.js write
 *                                      stored, compressed by the Node SDK
 * One line per check, then "N passed, M failed". */
#include "interop_check.h"
#include "momento/momento.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CACHE "compression"

/* The value both sides store under `tag` (compression.js valueFor): the tag,
 * ':', "compressible text, " 2000 times, then the bytes 0 .. 255. */
static unsigned char *value_for(const char *tag, size_t *len)
{
    static const char unit[] = "compressible text, ";
    size_t tag_len = strlen(tag), unit_len = sizeof(unit) - 1;
    size_t n = tag_len + 1 + 2000 * unit_len + 256;
    unsigned char *v = malloc(n);
    if (!v)
        exit(1);
    memcpy(v, tag, tag_len);
    v[tag_len] = ':';
    for (size_t i = 0; i < 2000; i++)
        memcpy(v + tag_len + 1 + i * unit_len, unit, unit_len);
    for (size_t i = 0; i < 256; i++)
        v[n - 256 + i] = (unsigned char)i;
    *len = n;
    return v;
}

static momento_client *client(const char *endpoint, int algo, int level, int decompress)
{
    momento_config *cfg;
    momento_credentials *creds;
    momento_client *c = NULL;
    if (momento_config_new(&cfg) != MOMENTO_OK)
        exit(1);
    if (algo)
        momento_config_set_compression(cfg, algo, level);
    if (decompress >= 0)
        momento_config_set_decompression(cfg, decompress, 0);
    if (momento_credentials_local(&creds, endpoint) != MOMENTO_OK ||
        momento_client_new(&c, cfg, creds) != MOMENTO_OK)
        exit(1);
    momento_credentials_free(creds);
    momento_config_free(cfg);
    return c;
}

/* Whether `c` reads `key` as exactly `want`. */
static int reads(momento_client *c, const char *key, const void *want, size_t want_len)
{
    return value_is(c, CACHE, key, want, want_len);
}

/* Whether what `c` (not decompressing) reads for `key` starts with `magic`
 * and is shorter than `than`. */
static int stored_with(momento_client *c, const char *key, const char *magic, size_t than)
{
    momento_result *r;
    const void *v;
    size_t len;
    int ok = get_hit(c, CACHE, key, &r, &v, &len) && len < than && len >= strlen(magic) &&
             memcmp(v, magic, strlen(magic)) == 0;
    momento_result_free(r);
    return ok;
}

static const char *const algo_names[] = {"gzip", "zstd"};
static const int algos[] = {MOMENTO_COMPRESS_GZIP, MOMENTO_COMPRESS_ZSTD};
static const char *const magics[] = {"\x1f\x8b", "\x28\xb5\x2f\xfd"};
static const char *const level_names[] = {"fastest", "balanced", "smallest"};
static const int levels[] = {MOMENTO_COMPRESS_LEVEL_FASTEST, MOMENTO_COMPRESS_LEVEL_BALANCED,
                             MOMENTO_COMPRESS_LEVEL_SMALLEST};

static void write_values(const char *endpoint)
{
    momento_client *plain = client(endpoint, 0, 0, -1);
    momento_create_cache_sync(plain, CACHE, NULL, NULL);
    char key[64], name[160];
    for (int a = 0; a < 2; a++) {
        for (int l = 0; l < 3; l++) {
            momento_client *c = client(endpoint, algos[a], levels[l], -1);
            snprintf(key, sizeof(key), "c-%s-%s", algo_names[a], level_names[l]);
            size_t len;
            unsigned char *v = value_for(key, &len);
            snprintf(name, sizeof(name), "C sets %s compressed with %s", key, algo_names[a]);
            check(name, momento_set_sync(c, CACHE, key, strlen(key), v, len, 0, NULL, NULL) ==
                            MOMENTO_OK);
            snprintf(name, sizeof(name), "C reads its own %s back decompressed", key);
            check(name, reads(c, key, v, len));
            free(v);
            momento_client_free(c);
        }
        /* A set batch, compressed per value. */
        momento_client *c = client(endpoint, algos[a], MOMENTO_COMPRESS_LEVEL_BALANCED, -1);
        char keys[3][64];
        const void *kp[3], *vp[3];
        size_t kl[3], vl[3];
        for (int i = 0; i < 3; i++) {
            snprintf(keys[i], sizeof(keys[i]), "c-%s-batch%d", algo_names[a], i);
            kp[i] = keys[i];
            kl[i] = strlen(keys[i]);
            vp[i] = value_for(keys[i], &vl[i]);
        }
        snprintf(name, sizeof(name), "C setBatch of 3 values compressed with %s", algo_names[a]);
        check(name, momento_set_batch_sync(c, CACHE, kp, kl, vp, vl, 3, 0, NULL, NULL) ==
                        MOMENTO_OK);
        for (int i = 0; i < 3; i++)
            free((void *)vp[i]);
        momento_client_free(c);
    }
    momento_client_free(plain);
}

static void read_values(const char *endpoint)
{
    /* Decompression on (the default of a client that compresses), and off. */
    momento_client *reader = client(endpoint, MOMENTO_COMPRESS_GZIP, 0, -1);
    momento_client *plain = client(endpoint, 0, 0, -1);
    char key[64], name[160];
    for (int a = 0; a < 2; a++) {
        for (int l = 0; l < 3; l++) {
            snprintf(key, sizeof(key), "node-%s-%s", algo_names[a], level_names[l]);
            size_t len;
            unsigned char *v = value_for(key, &len);
            snprintf(name, sizeof(name), "Node stored %s with %s's magic bytes", key,
                     algo_names[a]);
            check(name, stored_with(plain, key, magics[a], len));
            snprintf(name, sizeof(name), "C decompresses the Node SDK's %s", key);
            check(name, reads(reader, key, v, len));
            free(v);
        }
        snprintf(key, sizeof(key), "node-%s-if", algo_names[a]);
        size_t len;
        unsigned char *v = value_for(key, &len);
        snprintf(name, sizeof(name), "C decompresses the Node SDK's setIfAbsent %s", key);
        check(name, reads(reader, key, v, len));
        free(v);

        /* A get batch over the Node SDK's values, each item decompressed. */
        const void *kp[3];
        size_t kl[3];
        char keys[3][64];
        for (int l = 0; l < 3; l++) {
            snprintf(keys[l], sizeof(keys[l]), "node-%s-%s", algo_names[a], level_names[l]);
            kp[l] = keys[l];
            kl[l] = strlen(keys[l]);
        }
        momento_result *r;
        int ok = momento_get_batch_sync(reader, CACHE, kp, kl, 3, NULL, &r) == MOMENTO_OK;
        for (int l = 0; ok && l < 3; l++) {
            unsigned char *want = value_for(keys[l], &len);
            size_t got_len;
            const void *got = momento_result_value(momento_result_item(r, (size_t)l), &got_len);
            ok = got && got_len == len && memcmp(got, want, len) == 0;
            free(want);
        }
        momento_result_free(r);
        snprintf(name, sizeof(name), "C getBatch decompresses the Node SDK's %s values",
                 algo_names[a]);
        check(name, ok);
    }
    size_t len;
    unsigned char *v = value_for("node-plain", &len);
    check("C returns the Node SDK's uncompressed value as stored", reads(reader, "node-plain", v, len));
    free(v);
    momento_client_free(plain);
    momento_client_free(reader);
}

int main(int argc, char **argv)
{
    if (argc != 3 || (strcmp(argv[1], "write") != 0 && strcmp(argv[1], "read") != 0)) {
        fprintf(stderr, "usage: compression_check write|read HOST:PORT\n");
        return 2;
    }
    if (strcmp(argv[1], "write") == 0)
        write_values(argv[2]);
    else
        read_values(argv[2]);
    return summary();
}
