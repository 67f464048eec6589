/* libFuzzer target: the protosocket commands a server reads
 * (common/ps_wire.h). The input is a byte stream from a client: it is cut
 * into frames as a server's read loop cuts it, each body decoded as a
 * CacheCommand. Whatever the bytes, nothing may read outside the input
 * (ASan), a frame found must lie inside it and within the limit, a frame
 * found in a stream must be "need more" in the stream cut one byte short,
 * and a command that decodes must encode and decode back to the same
 * fields with its bytes pointing into the body. */
#include "ps_wire.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int same_bytes(ps_bytes a, ps_bytes b)
{
    return a.len == b.len && (!a.len || memcmp(a.data, b.data, a.len) == 0);
}

static void inside(ps_bytes b, const uint8_t *body, size_t len)
{
    if (b.len && (b.data < body || b.data + b.len > body + len))
        abort();
}

static void check_body(const uint8_t *body, size_t len)
{
    ps_command c;
    if (ps_command_decode(body, len, &c) != 0)
        return;
    inside(c.token, body, len);
    inside(c.ns, body, len);
    inside(c.key, body, len);
    inside(c.value, body, len);
    size_t n = ps_command_frame_size(&c);
    uint8_t *out = malloc(n);
    if (!out)
        return;
    if (ps_command_encode(&c, out) != n)
        abort();
    size_t off, blen;
    ps_command back;
    if (ps_frame_next(out, n, SIZE_MAX, &off, &blen) != 1 || off + blen != n ||
        ps_command_decode(out + off, blen, &back) != 0)
        abort();
    if (back.id != c.id || back.control != c.control || back.kind != c.kind ||
        back.ttl_ms != c.ttl_ms || !same_bytes(back.token, c.token) ||
        !same_bytes(back.ns, c.ns) || !same_bytes(back.key, c.key) ||
        !same_bytes(back.value, c.value))
        abort();
    free(out);
}

/* The stream as a reader with a frame limit of `max` takes it. */
static void read_stream(const uint8_t *data, size_t size, size_t max)
{
    size_t at = 0, off, len;
    while (ps_frame_next(data + at, size - at, max, &off, &len) == 1) {
        if (off + len > size - at || off + len > max || off == 0)
            abort();
        if (ps_frame_next(data + at, off + len - 1, max, &off, &len) == 1)
            abort(); /* a frame cannot be whole one byte short */
        ps_frame_next(data + at, size - at, max, &off, &len);
        check_body(data + at + off, len);
        at += off + len;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    read_stream(data, size, PS_MAX_FRAME);
    read_stream(data, size, 64); /* a small limit reaches its checks */
    return 0;
}
