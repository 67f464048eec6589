/* Just enough of the protobuf wire format to read replies without
 * allocating (wire.c). */
#ifndef MOMENTO_WIRE_H
#define MOMENTO_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Read a varint; skip a field of a wire type. Both advance *p and return
 * false on malformed input. */
bool momento__wire_varint(const uint8_t **p, const uint8_t *end, uint64_t *ret);
bool momento__wire_skip(const uint8_t **p, const uint8_t *end, unsigned wire_type);
/* Read a field's tag: its number and wire type. Advances *p; false on
 * malformed input. */
bool momento__wire_tag(const uint8_t **p, const uint8_t *end, unsigned *field, unsigned *type);
/* Read the length-delimited field's bytes (wire type 2) at *p, borrowed
 * from the message: *out, *len. Advances *p past them; false on malformed
 * input. */
bool momento__wire_bytes(const uint8_t **p, const uint8_t *end, const uint8_t **out, size_t *len);
/* Whether n bytes at p are a well-formed message (every field parses). */
bool momento__wire_valid(const uint8_t *p, size_t n);

#endif
