/* Just enough of the protobuf wire format to decode the hottest response,
 * _GetResponse (kv_send.c), and a subscription's messages
 * (subscription.c) without an allocation or a copy, and to check that an
 * empty reply is well-formed. Everything else uses protobuf-c. */
#include "base/wire.h"

bool momento__wire_varint(const uint8_t **p, const uint8_t *end, uint64_t *ret)
{
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 64 && *p < end; shift += 7) {
        uint8_t b = *(*p)++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *ret = v;
            return true;
        }
    }
    return false; /* truncated, or longer than ten bytes */
}

bool momento__wire_skip(const uint8_t **p, const uint8_t *end, unsigned wire_type)
{
    uint64_t v;
    switch (wire_type) {
    case 0:
        return momento__wire_varint(p, end, &v);
    case 1:
        if (end - *p < 8)
            return false;
        *p += 8;
        return true;
    case 2:
        if (!momento__wire_varint(p, end, &v) || v > (uint64_t)(end - *p))
            return false;
        *p += v;
        return true;
    case 5:
        if (end - *p < 4)
            return false;
        *p += 4;
        return true;
    default:
        return false; /* groups are not used by Momento's protocol */
    }
}

bool momento__wire_tag(const uint8_t **p, const uint8_t *end, unsigned *field, unsigned *type)
{
    uint64_t tag;
    if (!momento__wire_varint(p, end, &tag))
        return false;
    *field = (unsigned)(tag >> 3);
    *type = (unsigned)(tag & 7);
    return true;
}

bool momento__wire_bytes(const uint8_t **p, const uint8_t *end, const uint8_t **out, size_t *len)
{
    uint64_t n;
    if (!momento__wire_varint(p, end, &n) || n > (uint64_t)(end - *p))
        return false;
    *out = *p;
    *len = (size_t)n;
    *p += n;
    return true;
}

bool momento__wire_valid(const uint8_t *p, size_t n)
{
    const uint8_t *end = p + n;
    while (p < end) {
        unsigned field, type;
        if (!momento__wire_tag(&p, end, &field, &type) || field == 0 ||
            !momento__wire_skip(&p, end, type))
            return false;
    }
    return true;
}
