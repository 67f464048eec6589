/* libFuzzer target: the proxy's RESP2 request framing (proxy/resp/resp_parse.c)
 * on arbitrary bytes, as a client's stream. Besides memory errors it checks
 * what the connection relies on: a command's size never exceeds the input,
 * every argument lies inside the input or the scratch buffer, a whole
 * command cut short by one byte reads as incomplete, and the same bytes
 * arriving in pieces - split at points drawn from the input itself, the
 * buffer moving between reads as proxy/conn.c's does - give the same
 * commands and the same error as in one piece (the parser resumes where a
 * read left it). Odd-sized inputs are parsed with the bounds of a
 * connection that has not authenticated yet. */
#include "resp/resp_parse.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_BULK (1u << 20)
#define MAX_CMDS 10000

static void check_args(const resp_args *a, const char *p, size_t n)
{
    for (int i = 0; i < a->argc; i++) {
        const char *s = a->argv[i].p;
        bool in_input = s >= p && s + a->argv[i].n <= p + n;
        bool in_scratch = a->scratch && s >= a->scratch &&
                          s + a->argv[i].n <= a->scratch + a->scratch_cap;
        if (!in_input && !in_scratch)
            abort();
    }
}

/* What a parse made of the input: a hash of its commands, their number,
 * the bytes consumed and the error, if any. */
typedef struct outcome {
    uint64_t hash;
    size_t cmds, used;
    ssize_t last; /* how the parse ended: 0 (all consumed, or incomplete), -1, -2 */
    const char *err;
} outcome;

static void hash_bytes(uint64_t *h, const void *p, size_t n)
{
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++)
        *h = (*h ^ s[i]) * 1099511628211ull;
}

static void record(outcome *o, const resp_args *a)
{
    hash_bytes(&o->hash, &a->argc, sizeof(a->argc));
    for (int i = 0; i < a->argc; i++) {
        hash_bytes(&o->hash, &a->argv[i].n, sizeof(a->argv[i].n));
        hash_bytes(&o->hash, a->argv[i].p, a->argv[i].n);
    }
    o->cmds++;
}

/* The input in one piece, with the per-command checks. */
/* o->err points into the parser's resp_args, gone with it: copy it to a
 * buffer of the caller's own (one per parse, as the two outcomes are
 * compared). */
static void keep_err(outcome *o, char copy[64])
{
    if (o->err) {
        strncpy(copy, o->err, 63);
        copy[63] = '\0';
        o->err = copy;
    }
}

static void parse_whole(const char *p, size_t size, const resp_limits *lim, outcome *o)
{
    resp_args a = {0}, b = {0};
    *o = (outcome){.hash = 14695981039346656037ull};
    size_t off = 0;
    while (off < size && o->cmds < MAX_CMDS) {
        const char *err = NULL;
        ssize_t n = resp_parse(p + off, size - off, lim, &a, &err);
        if (n == 0)
            break;
        if (n < 0) {
            o->last = n;
            if (n == -1 && !err)
                abort(); /* a protocol error always says why */
            o->err = err;
            break;
        }
        if ((size_t)n > size - off)
            abort();
        check_args(&a, p + off, (size_t)n);
        record(o, &a);
        if ((size_t)n <= RESP_MAX_INLINE) {
            const char *err2 = NULL;
            if (resp_parse(p + off, (size_t)n - 1, lim, &b, &err2) > 0)
                abort(); /* a shorter input cannot hold the same command */
            resp_args_free(&b); /* b's parse is of another input next time */
        }
        /* Asked again before it is consumed (a command that waits): the
         * same command, at the same place. */
        int argc = a.argc;
        const char *first = argc ? a.argv[0].p : NULL;
        if (resp_parse(p + off, size - off, lim, &a, &err) != n || a.argc != argc ||
            (argc && a.argv[0].p != first))
            abort();
        resp_parse_done(&a);
        off += (size_t)n;
    }
    o->used = off;
    /* The error's text lives in a's errbuf for "expected '$'": keep a copy. */
    static char errcopy[64];
    keep_err(o, errcopy);
    resp_args_free(&a);
    resp_args_free(&b);
}

static uint64_t next_rand(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* The input as a connection reads it: pieces of random sizes appended to
 * a buffer that loses its consumed commands and sometimes moves. */
static void parse_split(const char *p, size_t size, const resp_limits *lim, uint64_t seed,
                        outcome *o)
{
    resp_args a = {0};
    *o = (outcome){.hash = 14695981039346656037ull};
    char *buf = malloc(size + 1);
    if (!buf)
        abort();
    size_t off = 0, avail = 0; /* p[off, avail) is in buf, unconsumed */
    uint64_t s = seed | 1;
    while (avail < size && o->cmds < MAX_CMDS && o->last >= 0) {
        uint64_t r = next_rand(&s);
        /* Mostly short reads, sometimes long ones. */
        size_t piece = r % 4 ? 1 + (r >> 8) % 8 : 1 + (r >> 8) % (size / 2 + 1);
        if (piece > size - avail)
            piece = size - avail;
        if ((r >> 40) % 5 == 0) {
            /* The buffer moves: the old one is freed. */
            char *moved = malloc(size + 1);
            if (!moved)
                abort();
            memcpy(moved, buf, avail - off);
            free(buf);
            buf = moved;
        }
        memcpy(buf + (avail - off), p + avail, piece);
        avail += piece;
        size_t used = 0;
        while (o->cmds < MAX_CMDS) {
            const char *err = NULL;
            ssize_t n = resp_parse(buf + used, avail - off - used, lim, &a, &err);
            if (n == 0)
                break;
            if (n < 0) {
                o->last = n;
                o->err = err;
                break;
            }
            if ((size_t)n > avail - off - used)
                abort();
            check_args(&a, buf + used, (size_t)n);
            record(o, &a);
            resp_parse_done(&a);
            used += (size_t)n;
        }
        memmove(buf, buf + used, avail - off - used);
        off += used;
    }
    o->used = off;
    static char errcopy[64];
    keep_err(o, errcopy);
    resp_args_free(&a);
    free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *)data;
    resp_limits lim = {MAX_BULK, size % 2 == 1};
    outcome whole;
    parse_whole(p, size, &lim, &whole);
    /* Over 64 KiB buffered a line not yet ended is "too big": where that
     * happens depends on the reads, as in Redis. Below, nothing does. */
    if (size == 0 || size > RESP_MAX_INLINE || whole.cmds >= MAX_CMDS)
        return 0;
    char errwhole[64] = "";
    if (whole.err)
        strcpy(errwhole, whole.err);
    uint64_t seed = 14695981039346656037ull;
    hash_bytes(&seed, p, size);
    for (int round = 0; round < 2; round++) {
        outcome split;
        parse_split(p, size, &lim, seed + (uint64_t)round, &split);
        if (split.hash != whole.hash || split.cmds != whole.cmds || split.used != whole.used ||
            split.last != whole.last || (whole.err == NULL) != (split.err == NULL) ||
            (whole.err && strcmp(errwhole, split.err) != 0))
            abort();
    }
    return 0;
}
