/* libFuzzer target: the proxy's memcached framing (proxy/mc_parse.c). The
 * input is a byte stream from a client, cut into commands as the
 * memcached port's feed cuts it - once as the text protocol, once as the
 * binary one - skipping what a refused command asks to skip. Whatever the
 * bytes, nothing may read outside the input (ASan); a command never takes
 * more than the input; every key, data block and extras lies inside the
 * command it came from; a command that is whole reads as incomplete when
 * cut one byte short (what lets the feed wait for more); and the value,
 * counter and exptime helpers keep their round trips. */
#include "mc_parse.h"

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
        ssize_t k = mc_text_parse(q, left, MAX_ITEM, cmd);
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
            ssize_t j = mc_text_parse(q, (size_t)k - 1, MAX_ITEM, &again);
            if (j != 0 && !(j > 0 && again.close))
                abort();
            mc_text_cmd_free(&again);
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
        ssize_t k = mc_bin_parse(q, left, MAX_ITEM, &req);
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
        if (mc_bin_parse(q, (size_t)k - 1, MAX_ITEM, &again) != 0)
            abort();
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
    (void)mc_cas_from_hash(data, size);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static mc_text_cmd cmd; /* its key array grows once, as a connection's */
    text_stream((const char *)data, size, &cmd);
    bin_stream((const char *)data, size);
    helpers(data, size);
    return 0;
}
