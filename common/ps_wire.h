/* Momento's protosocket wire (docs/protocol.md "Protosocket"): frames of
 * varint(length) || protobuf body, a CacheCommand from client to server and
 * a CacheResponse back. Shared by the library's protosocket transport,
 * momento-local's protosocket port, the tests' fake server and the fuzz
 * targets.
 *
 * Hand-coded rather than protobuf-c: the envelope is four fields deep and
 * the transport's point is to cost little per request, so encoding writes
 * straight into the caller's buffer and decoding borrows from the frame
 * without allocating. tests/lib/test_ps_wire.c checks both directions
 * against protobuf-c's code for the same messages (proto/pscache.proto).
 *
 * Decoders read proto3 as protobuf does: fields in any order, unknown
 * fields skipped, the last of a repeated field or oneof wins. They never
 * read outside [body, body + len) and never allocate; what they return
 * points into the body. */
#ifndef MOMENTO_COMMON_PS_WIRE_H
#define MOMENTO_COMMON_PS_WIRE_H

#include <stddef.h>
#include <stdint.h>

/* The largest frame either side accepts, prefix included: the Rust SDK's
 * limit (4 MiB). */
#define PS_MAX_FRAME (4u * 1024 * 1024)
/* The message id the Rust SDK authenticates with. */
#define PS_AUTH_ID 0xDEADBEEFu

/* What a command asks or a response answers. The values are ours; the
 * codec maps them to each envelope's field numbers. */
typedef enum ps_kind {
    PS_NONE = 0, /* no command / response body (a cancel, an unknown kind) */
    PS_AUTH,
    PS_GET,
    PS_SET,
    PS_DELETE,
    PS_ERROR /* responses only: common.CommandError */
} ps_kind;

/* protosocket-rpc's control codes. */
enum { PS_CONTROL_NORMAL = 0, PS_CONTROL_CANCEL = 1, PS_CONTROL_END = 2 };

typedef struct ps_bytes {
    const uint8_t *data;
    size_t len;
} ps_bytes;

/* A CacheCommand. `token` for AUTH; `ns` (the cache), `key` for GET,
 * SET, DELETE; `value` and `ttl_ms` for SET. */
typedef struct ps_command {
    uint64_t id;
    uint32_t control;
    ps_kind kind;
    ps_bytes token;
    ps_bytes ns;
    ps_bytes key;
    ps_bytes value;
    uint64_t ttl_ms;
} ps_command;

/* A CacheResponse. `code` (gRPC's status numbering) and `message` for
 * ERROR; `value` for GET. */
typedef struct ps_response {
    uint64_t id;
    uint32_t control;
    ps_kind kind;
    uint32_t code;
    ps_bytes message;
    ps_bytes value;
} ps_response;

/* Where the next frame of buf[0, len) is: 1 with its body at
 * buf[*body_off, *body_off + *body_len); 0 when more bytes are needed; -1
 * when the prefix is not a varint or the frame would exceed `max_frame`
 * bytes (prefix included) - the connection cannot go on. */
int ps_frame_next(const uint8_t *buf, size_t len, size_t max_frame, size_t *body_off,
                  size_t *body_len);

/* Bytes the whole frame of `c` / `r` takes (prefix included). */
size_t ps_command_frame_size(const ps_command *c);
size_t ps_response_frame_size(const ps_response *r);
/* Writes the frame into `out` (at least the _frame_size() bytes); returns
 * the bytes written. Fields at proto3's defaults are left out. */
size_t ps_command_encode(const ps_command *c, uint8_t *out);
size_t ps_response_encode(const ps_response *r, uint8_t *out);

/* Decodes one frame's body. 0, or -1 when it is not a well-formed message
 * (a truncated field, a wrong wire type for a known field, a bad varint).
 * A command or response of a kind this codec does not know decodes with
 * kind PS_NONE. */
int ps_command_decode(const uint8_t *body, size_t len, ps_command *out);
int ps_response_decode(const uint8_t *body, size_t len, ps_response *out);

/* The varint of `v` into out (at most 10 bytes); returns its length. */
size_t ps_varint_put(uint8_t *out, uint64_t v);
size_t ps_varint_size(uint64_t v);

#endif
