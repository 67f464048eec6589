/* The protosocket wire, encoded and decoded by hand (ps_wire.h says why).
 * Every tag here is below 128, so each takes one byte. */
#include "ps_wire.h"

#include <string.h>

/* Field numbers (Momento's protosocket cache.proto and common.proto). */
enum {
    CMD_MESSAGE_ID = 2,
    CMD_CONTROL = 3,
    CMD_UNARY = 10,
    UNARY_AUTH = 1,
    UNARY_GET = 2,
    UNARY_SET = 3,
    UNARY_DELETE = 4,
    RESP_MESSAGE_ID = 1,
    RESP_CONTROL = 2,
    RESP_ERROR = 9,
    RESP_AUTH = 10,
    RESP_GET = 11,
    RESP_SET = 12,
    RESP_DELETE = 13,
};

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_I32 = 5 };

#define TAG(field, wt) ((uint8_t)(((field) << 3) | (wt)))

size_t ps_varint_size(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

size_t ps_varint_put(uint8_t *out, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        out[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    out[n++] = (uint8_t)v;
    return n;
}

/* A varint from p[0, end): its length, or 0 when it is cut short or longer
 * than 10 bytes. */
static size_t varint_get(const uint8_t *p, const uint8_t *end, uint64_t *v)
{
    uint64_t r = 0;
    for (size_t i = 0; i < 10 && p + i < end; i++) {
        r |= (uint64_t)(p[i] & 0x7f) << (7 * i);
        if (!(p[i] & 0x80)) {
            *v = r;
            return i + 1;
        }
    }
    return 0;
}

int ps_frame_next(const uint8_t *buf, size_t len, size_t max_frame, size_t *body_off,
                  size_t *body_len)
{
    uint64_t n;
    size_t k = varint_get(buf, buf + len, &n);
    if (!k) /* cut short (wait), or over 10 bytes (never a frame of ours) */
        return len >= 10 ? -1 : 0;
    if (n > max_frame || n + k > max_frame)
        return -1;
    if (len - k < n)
        return 0;
    *body_off = k;
    *body_len = (size_t)n;
    return 1;
}

/* ---- encoding ---- */

static size_t varint_field_size(uint64_t v)
{
    return v ? 1 + ps_varint_size(v) : 0;
}

static size_t bytes_field_size(size_t len)
{
    return len ? 1 + ps_varint_size(len) + len : 0;
}

/* A sub-message is written even when empty (a oneof member's presence). */
static size_t message_field_size(size_t len)
{
    return 1 + ps_varint_size(len) + len;
}

static uint8_t *put_varint_field(uint8_t *p, uint8_t tag, uint64_t v)
{
    if (!v)
        return p;
    *p++ = tag;
    return p + ps_varint_put(p, v);
}

static uint8_t *put_bytes_field(uint8_t *p, uint8_t tag, ps_bytes b)
{
    if (!b.len)
        return p;
    *p++ = tag;
    p += ps_varint_put(p, b.len);
    memcpy(p, b.data, b.len);
    return p + b.len;
}

static uint8_t *put_message_head(uint8_t *p, uint8_t tag, size_t len)
{
    *p++ = tag;
    return p + ps_varint_put(p, len);
}

static int unary_field(ps_kind k)
{
    switch (k) {
    case PS_AUTH: return UNARY_AUTH;
    case PS_GET: return UNARY_GET;
    case PS_SET: return UNARY_SET;
    case PS_DELETE: return UNARY_DELETE;
    default: return 0;
    }
}

/* The inner command's (AuthenticateCommand, GetCommand, ...) size. */
static size_t command_inner_size(const ps_command *c)
{
    if (c->kind == PS_AUTH)
        return bytes_field_size(c->token.len);
    size_t n = bytes_field_size(c->ns.len) + bytes_field_size(c->key.len);
    if (c->kind == PS_SET)
        n += bytes_field_size(c->value.len) + varint_field_size(c->ttl_ms);
    return n;
}

static size_t command_body_size(const ps_command *c)
{
    size_t n = varint_field_size(c->id) + varint_field_size(c->control);
    if (unary_field(c->kind))
        n += message_field_size(message_field_size(command_inner_size(c)));
    return n;
}

size_t ps_command_frame_size(const ps_command *c)
{
    size_t body = command_body_size(c);
    return ps_varint_size(body) + body;
}

size_t ps_command_encode(const ps_command *c, uint8_t *out)
{
    uint8_t *p = out;
    p += ps_varint_put(p, command_body_size(c));
    p = put_varint_field(p, TAG(CMD_MESSAGE_ID, WT_VARINT), c->id);
    p = put_varint_field(p, TAG(CMD_CONTROL, WT_VARINT), c->control);
    int field = unary_field(c->kind);
    if (field) {
        size_t inner = command_inner_size(c);
        p = put_message_head(p, TAG(CMD_UNARY, WT_LEN), message_field_size(inner));
        p = put_message_head(p, TAG(field, WT_LEN), inner);
        if (c->kind == PS_AUTH) {
            p = put_bytes_field(p, TAG(1, WT_LEN), c->token);
        } else {
            p = put_bytes_field(p, TAG(1, WT_LEN), c->ns);
            p = put_bytes_field(p, TAG(2, WT_LEN), c->key);
            if (c->kind == PS_SET) {
                p = put_bytes_field(p, TAG(3, WT_LEN), c->value);
                p = put_varint_field(p, TAG(4, WT_VARINT), c->ttl_ms);
            }
        }
    }
    return (size_t)(p - out);
}

static int response_field(ps_kind k)
{
    switch (k) {
    case PS_ERROR: return RESP_ERROR;
    case PS_AUTH: return RESP_AUTH;
    case PS_GET: return RESP_GET;
    case PS_SET: return RESP_SET;
    case PS_DELETE: return RESP_DELETE;
    default: return 0;
    }
}

static size_t response_inner_size(const ps_response *r)
{
    if (r->kind == PS_ERROR)
        return varint_field_size(r->code) + bytes_field_size(r->message.len);
    if (r->kind == PS_GET)
        return bytes_field_size(r->value.len);
    return 0;
}

static size_t response_body_size(const ps_response *r)
{
    size_t n = varint_field_size(r->id) + varint_field_size(r->control);
    if (response_field(r->kind))
        n += message_field_size(response_inner_size(r));
    return n;
}

size_t ps_response_frame_size(const ps_response *r)
{
    size_t body = response_body_size(r);
    return ps_varint_size(body) + body;
}

size_t ps_response_encode(const ps_response *r, uint8_t *out)
{
    uint8_t *p = out;
    p += ps_varint_put(p, response_body_size(r));
    p = put_varint_field(p, TAG(RESP_MESSAGE_ID, WT_VARINT), r->id);
    p = put_varint_field(p, TAG(RESP_CONTROL, WT_VARINT), r->control);
    int field = response_field(r->kind);
    if (field) {
        p = put_message_head(p, TAG(field, WT_LEN), response_inner_size(r));
        if (r->kind == PS_ERROR) {
            p = put_varint_field(p, TAG(1, WT_VARINT), r->code);
            p = put_bytes_field(p, TAG(2, WT_LEN), r->message);
        } else if (r->kind == PS_GET) {
            p = put_bytes_field(p, TAG(1, WT_LEN), r->value);
        }
    }
    return (size_t)(p - out);
}

/* ---- decoding ---- */

/* One field of a message: its number, wire type, and its varint value or
 * its bytes. */
typedef struct field {
    uint32_t number;
    int wt;
    uint64_t v;
    ps_bytes b;
} field;

/* Reads the field at *p; 1 with it, 0 at the end, -1 malformed. Skips the
 * bodies of fixed-width fields (returned with wt set, nothing read). */
static int next_field(const uint8_t **p, const uint8_t *end, field *f)
{
    if (*p == end)
        return 0;
    uint64_t key;
    size_t k = varint_get(*p, end, &key);
    if (!k)
        return -1;
    *p += k;
    f->number = (uint32_t)(key >> 3);
    f->wt = (int)(key & 7);
    if (f->number == 0 || key >> 3 > 0x1fffffff)
        return -1;
    switch (f->wt) {
    case WT_VARINT:
        k = varint_get(*p, end, &f->v);
        if (!k)
            return -1;
        *p += k;
        return 1;
    case WT_I64:
        if (end - *p < 8)
            return -1;
        *p += 8;
        return 1;
    case WT_I32:
        if (end - *p < 4)
            return -1;
        *p += 4;
        return 1;
    case WT_LEN: {
        uint64_t n;
        k = varint_get(*p, end, &n);
        if (!k || n > (uint64_t)(end - *p - (ptrdiff_t)k))
            return -1;
        *p += k;
        f->b.data = *p;
        f->b.len = (size_t)n;
        *p += n;
        return 1;
    }
    default: /* groups (3, 4) and the unused 6, 7: never in these messages */
        return -1;
    }
}

/* A known field read with the wrong wire type is malformed, as protobuf's
 * parsers treat it. */
#define WANT(f, type)                                                                              \
    do {                                                                                           \
        if ((f).wt != (type))                                                                      \
            return -1;                                                                             \
    } while (0)

/* The fields of a Get/Set/Delete/Authenticate command into `out`. */
static int decode_inner_command(ps_bytes b, ps_kind kind, ps_command *out)
{
    const uint8_t *p = b.data, *end = b.data + b.len;
    field f;
    int rc;
    while ((rc = next_field(&p, end, &f)) > 0) {
        if (kind == PS_AUTH) {
            if (f.number == 1) {
                WANT(f, WT_LEN);
                out->token = f.b;
            }
            continue;
        }
        switch (f.number) {
        case 1: WANT(f, WT_LEN); out->ns = f.b; break;
        case 2: WANT(f, WT_LEN); out->key = f.b; break;
        case 3:
            if (kind == PS_SET) {
                WANT(f, WT_LEN);
                out->value = f.b;
            }
            break;
        case 4:
            if (kind == PS_SET) {
                WANT(f, WT_VARINT);
                out->ttl_ms = f.v;
            }
            break;
        default: break;
        }
    }
    return rc;
}

static int decode_unary(ps_bytes b, ps_command *out)
{
    const uint8_t *p = b.data, *end = b.data + b.len;
    field f;
    int rc;
    while ((rc = next_field(&p, end, &f)) > 0) {
        ps_kind kind = f.number == UNARY_AUTH     ? PS_AUTH
                       : f.number == UNARY_GET    ? PS_GET
                       : f.number == UNARY_SET    ? PS_SET
                       : f.number == UNARY_DELETE ? PS_DELETE
                                                  : PS_NONE;
        if (kind == PS_NONE)
            continue;
        WANT(f, WT_LEN);
        /* The last member of the oneof wins, as a fresh one. */
        out->kind = kind;
        out->token = out->ns = out->key = out->value = (ps_bytes){0};
        out->ttl_ms = 0;
        if (decode_inner_command(f.b, kind, out) < 0)
            return -1;
    }
    return rc;
}

int ps_command_decode(const uint8_t *body, size_t len, ps_command *out)
{
    memset(out, 0, sizeof(*out));
    const uint8_t *p = body, *end = body + len;
    field f;
    int rc;
    while ((rc = next_field(&p, end, &f)) > 0) {
        switch (f.number) {
        case CMD_MESSAGE_ID: WANT(f, WT_VARINT); out->id = f.v; break;
        case CMD_CONTROL: WANT(f, WT_VARINT); out->control = (uint32_t)f.v; break;
        case CMD_UNARY:
            WANT(f, WT_LEN);
            /* A new unary replaces the previous one whole (protobuf-c's
             * rule for a oneof member met again): its fields too, or an
             * empty one would leave a kind-less command with a token. */
            out->kind = PS_NONE;
            out->token = out->ns = out->key = out->value = (ps_bytes){0};
            out->ttl_ms = 0;
            if (decode_unary(f.b, out) < 0)
                return -1;
            break;
        default: break;
        }
    }
    return rc;
}

static int decode_inner_response(ps_bytes b, ps_kind kind, ps_response *out)
{
    const uint8_t *p = b.data, *end = b.data + b.len;
    field f;
    int rc;
    while ((rc = next_field(&p, end, &f)) > 0) {
        if (kind == PS_ERROR && f.number == 1) {
            WANT(f, WT_VARINT);
            out->code = (uint32_t)f.v;
        } else if (kind == PS_ERROR && f.number == 2) {
            WANT(f, WT_LEN);
            out->message = f.b;
        } else if (kind == PS_GET && f.number == 1) {
            WANT(f, WT_LEN);
            out->value = f.b;
        }
    }
    return rc;
}

int ps_response_decode(const uint8_t *body, size_t len, ps_response *out)
{
    memset(out, 0, sizeof(*out));
    const uint8_t *p = body, *end = body + len;
    field f;
    int rc;
    while ((rc = next_field(&p, end, &f)) > 0) {
        ps_kind kind = f.number == RESP_ERROR    ? PS_ERROR
                       : f.number == RESP_AUTH   ? PS_AUTH
                       : f.number == RESP_GET    ? PS_GET
                       : f.number == RESP_SET    ? PS_SET
                       : f.number == RESP_DELETE ? PS_DELETE
                                                 : PS_NONE;
        if (f.number == RESP_MESSAGE_ID) {
            WANT(f, WT_VARINT);
            out->id = f.v;
        } else if (f.number == RESP_CONTROL) {
            WANT(f, WT_VARINT);
            out->control = (uint32_t)f.v;
        } else if (kind != PS_NONE) {
            WANT(f, WT_LEN);
            out->kind = kind;
            out->code = 0;
            out->message = out->value = (ps_bytes){0};
            if (decode_inner_response(f.b, kind, out) < 0)
                return -1;
        }
    }
    return rc;
}
