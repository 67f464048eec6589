/* libFuzzer target: the proxy's memcached framing (proxy/memcache/mc_parse.c). The
 * input is a byte stream from a client, cut into commands as the
 * memcached port's feed cuts it - once as the text protocol, once as the
 * binary one - skipping what a refused command asks to skip. Whatever the
 * bytes, nothing may read outside the input (ASan); a command never takes
 * more than the input; every key, data block and extras lies inside the
 * command it came from; a command that is whole reads as incomplete when
 * cut one byte short (what lets the feed wait for more); the same command
 * fed in growing pieces with an mc_resume, as the feed gives it its reads,
 * parses as it does whole; and the value, counter and exptime helpers keep
 * their round trips. */
#include "memcache/mc_parse.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Small, so that the fuzzer reaches the too-large paths. */
#define MAX_ITEM 4096

static void inside(px_str s, const char *p, size_t n)
{
    if (s.n && (s.p < p || s.p + s.n > p + n))
        abort();
}

static bool same_str(px_str a, px_str b, const char *pa, const char *pb)
{
    return a.n == b.n && (a.n == 0 || a.p - pa == b.p - pb);
}

/* q[0, k) is one command whose whole parse gave *want: fed again in
 * pieces that grow by `step`, remembering where each look stopped, it
 * waits (0) until all k bytes are there and then parses the same - or is
 * hung up on as an endless line, as a one-byte-short cut may be. */
static void text_pieces(const char *q, size_t k, size_t step, const mc_text_cmd *want)
{
    mc_text_cmd got = {0};
    mc_resume rs = {0, 0};
    for (size_t m = step < k ? step : k;; m = m + step < k ? m + step : k) {
        ssize_t j = mc_text_parse(q, m, MAX_ITEM, &got, &rs);
        if (j < 0)
            break; /* out of memory */
        if (m < k) {
            if (j > 0 && got.close)
                break;
            if (j != 0)
                abort();
            continue;
        }
        if ((size_t)j != k || got.kind != want->kind || got.close != want->close ||
            got.noreply != want->noreply || got.too_large != want->too_large ||
            got.swallow != want->swallow || got.nkeys != want->nkeys ||
            got.exptime != want->exptime || got.flags != want->flags ||
            !same_str(got.key, want->key, q, q) || !same_str(got.data, want->data, q, q) ||
            (got.reply == NULL) != (want->reply == NULL) ||
            (got.reply && strcmp(got.reply, want->reply) != 0) || rs.scanned || rs.need)
            abort();
        for (size_t i = 0; i < got.nkeys; i++)
            if (!same_str(got.keys[i], want->keys[i], q, q))
                abort();
        break;
    }
    mc_text_cmd_free(&got);
}

static void text_stream(const char *p, size_t n, mc_text_cmd *cmd)
{
    size_t off = 0, swallow = 0;
    while (off < n) {
        if (swallow) {
            size_t k = n - off < swallow ? n - off : swallow;
            swallow -= k;
            off += k;
            continue;
        }
        const char *q = p + off;
        size_t left = n - off;
        ssize_t k = mc_text_parse(q, left, MAX_ITEM, cmd, NULL);
        if (k < 0)
            return; /* out of memory */
        if (k == 0)
            return;
        if ((size_t)k > left)
            abort();
        if (cmd->kind != MC_T_ERROR && !cmd->too_large) {
            inside(cmd->key, q, (size_t)k);
            inside(cmd->data, q, (size_t)k);
            inside(cmd->arg, q, (size_t)k);
            for (size_t i = 0; i < cmd->nkeys; i++) {
                inside(cmd->keys[i], q, (size_t)k);
                if (cmd->keys[i].n > MC_KEY_MAX)
                    abort();
            }
            if (cmd->key.n > MC_KEY_MAX)
                abort();
        }
        if (cmd->too_large && cmd->swallow == 0)
            abort();
        bool close = cmd->close;
        swallow = cmd->too_large ? cmd->swallow : 0;
        /* One byte short: incomplete (or, for an endless line, a hang-up). */
        if (!close) {
            mc_text_cmd again = {0};
            ssize_t j = mc_text_parse(q, (size_t)k - 1, MAX_ITEM, &again, NULL);
            if (j != 0 && !(j > 0 && again.close))
                abort();
            mc_text_cmd_free(&again);
            text_pieces(q, (size_t)k, 1 + (unsigned char)q[0] % 8, cmd);
        }
        off += (size_t)k;
        if (close)
            return;
    }
}

static void bin_stream(const char *p, size_t n)
{
    size_t off = 0, swallow = 0;
    while (off < n) {
        if (swallow) {
            size_t k = n - off < swallow ? n - off : swallow;
            swallow -= k;
            off += k;
            continue;
        }
        const char *q = p + off;
        size_t left = n - off;
        mc_bin_req req;
        ssize_t k = mc_bin_parse(q, left, MAX_ITEM, &req, NULL);
        if (k <= 0)
            return;
        if ((size_t)k > left || (size_t)k < MC_BIN_HEADER)
            abort();
        inside(req.key, q, (size_t)k);
        inside(req.value, q, (size_t)k);
        inside(req.extras, q, (size_t)k);
        if (req.key.n > MC_KEY_MAX)
            abort();
        mc_bin_req again;
        if (mc_bin_parse(q, (size_t)k - 1, MAX_ITEM, &again, NULL) != 0)
            abort();
        /* In growing pieces, remembering where each look stopped: waits
         * until all k bytes are there, then parses the same. */
        mc_resume rs = {0, 0};
        size_t step = 1 + (unsigned char)q[1] % 8;
        for (size_t m = step < (size_t)k ? step : (size_t)k;; m += step) {
            if (m > (size_t)k)
                m = (size_t)k;
            ssize_t j = mc_bin_parse(q, m, MAX_ITEM, &again, &rs);
            if (m < (size_t)k) {
                if (j != 0)
                    abort();
                continue;
            }
            if (j != k || again.kind != req.kind || again.opcode != req.opcode ||
                again.swallow != req.swallow || again.too_large != req.too_large ||
                !same_str(again.key, req.key, q, q) || !same_str(again.value, req.value, q, q) ||
                !same_str(again.extras, req.extras, q, q) || rs.need || rs.scanned)
                abort();
            break;
        }
        if (req.kind == MC_B_INVALID || req.hangup)
            return; /* the connection is closed */
        swallow = req.swallow;
        off += (size_t)k;
    }
}

static void helpers(const uint8_t *data, size_t size)
{
    /* Flags and data survive a value's round trip. */
    uint32_t flags = 0;
    if (size >= 4)
        memcpy(&flags, data, 4);
    char *v = malloc(MC_FLAGS_BYTES + size);
    if (!v)
        return;
    mc_value_encode(flags, data, size, v);
    uint32_t f2;
    const char *d;
    size_t dn;
    if (!mc_value_decode(v, MC_FLAGS_BYTES + size, &f2, &d, &dn) || f2 != flags || dn != size ||
        (size && memcmp(d, data, size) != 0))
        abort();
    free(v);
    /* A counter written is read back the same, padded or not. */
    uint64_t c = 0;
    for (size_t i = 0; i < size && i < 8; i++)
        c = c << 8 | data[i];
    char buf[MC_COUNTER_MAX + 64];
    size_t old = size % 40;
    size_t n = mc_counter_format(c, old, buf);
    uint64_t back;
    if (n > sizeof(buf) || !mc_counter_parse(buf, n, &back) || back != c)
        abort();
    /* Whatever the counter text, parsing it is defined. */
    (void)mc_counter_parse((const char *)data, size, &back);
    int32_t e32;
    if (mc_strtol32((const char *)data, size, &e32)) {
        mc_ttl t = mc_exptime(e32, 1700000000);
        if (t.expired && t.ms)
            abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static mc_text_cmd cmd; /* its key array grows once, as a connection's */
    text_stream((const char *)data, size, &cmd);
    bin_stream((const char *)data, size);
    helpers(data, size);
    return 0;
}
