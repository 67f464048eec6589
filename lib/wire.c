/* Just enough of the protobuf wire format to decode the hottest response,
 * _GetResponse, without an allocation or a copy: the value a callback sees
 * points into the received message. Everything else uses protobuf-c. */
#include "internal.h"

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

bool momento__wire_valid(const uint8_t *p, size_t n)
{
    const uint8_t *end = p + n;
    while (p < end) {
        uint64_t tag;
        if (!momento__wire_varint(&p, end, &tag) || (tag >> 3) == 0 ||
            !momento__wire_skip(&p, end, (unsigned)(tag & 7)))
            return false;
    }
    return true;
}

int momento__decode_get(momento_result *r, const grpc_slice *msgs, size_t n,
                        momento__scratch *scratch)
{
    (void)n;
    (void)scratch;
    const uint8_t *p = GRPC_SLICE_START_PTR(msgs[0]);
    const uint8_t *end = p + GRPC_SLICE_LENGTH(msgs[0]);
    uint64_t result = 0;
    const uint8_t *body = NULL;
    size_t body_len = 0;
    while (p < end) {
        uint64_t tag, v;
        if (!momento__wire_varint(&p, end, &tag))
            return MOMENTO_ERR_BAD_RESPONSE;
        unsigned field = (unsigned)(tag >> 3), type = (unsigned)(tag & 7);
        if (field == 1 && type == 0) { /* ECacheResult result */
            if (!momento__wire_varint(&p, end, &result))
                return MOMENTO_ERR_BAD_RESPONSE;
        } else if (field == 2 && type == 2) { /* bytes cache_body: last one wins */
            if (!momento__wire_varint(&p, end, &v) || v > (uint64_t)(end - p))
                return MOMENTO_ERR_BAD_RESPONSE;
            body = p;
            body_len = (size_t)v;
            p += v;
        } else if (field == 0 || !momento__wire_skip(&p, end, type)) {
            return MOMENTO_ERR_BAD_RESPONSE;
        }
    }
    if (result == 2) { /* Hit */
        r->outcome = MOMENTO_OUTCOME_HIT;
        r->value = body ? body : (const uint8_t *)"";
        r->value_len = body_len;
    } else if (result == 3) { /* Miss */
        r->outcome = MOMENTO_OUTCOME_MISS;
    } else {
        return MOMENTO_ERR_BAD_RESPONSE;
    }
    return MOMENTO_OK;
}
