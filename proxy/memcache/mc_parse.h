/* memcached's framing, without I/O or state between calls, so that the
 * fuzzer (fuzz/fuzz_memcache.c) drives exactly what the proxy runs:
 *
 *  - the text protocol's command lines and data blocks, with memcached
 *    1.6's answers for malformed ones (proto_text.c: the same tokens, the
 *    same number rules, the same error lines, the same bytes consumed);
 *  - the binary protocol's 24-byte request header and its checks;
 *  - how a value and its 32-bit client flags are kept in one Momento
 *    value, how a cas unique is made from Momento's hash of a value, the
 *    counter rules of incr/decr, and memcached's exptime. */
#ifndef PX_MC_PARSE_H
#define PX_MC_PARSE_H

#include "px.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define MC_KEY_MAX 250   /* memcached's KEY_MAX_LENGTH */
#define MC_LINE_MAX 2048 /* a line without a newline past which memcached hangs up */
#define MC_READ_BUF 16384 /* memcached 1.6's read buffer: a longer line (not a
                             get's) never has its newline in it, so always a hang-up */
#define MC_FLAGS_BYTES 4 /* the client flags before the data, big-endian */
#define MC_MAXDELTA (60 * 60 * 24 * 30) /* exptime above it is a unix time */
#define MC_COUNTER_MAX 20 /* digits of the largest 64-bit counter */

/* Where a parse that answered "not whole yet" stopped looking, so that the
 * next call over the same command - the same first bytes, more after them -
 * goes on from there instead of from its first byte: a command costs about
 * its bytes however its reads split it, not its bytes times its reads.
 * The caller keeps one per connection, zeroed at first; the parsers zero
 * it when they take a command (or fail), and it must be zeroed by the
 * caller too if it ever hands them other first bytes. NULL: no memory
 * between calls (every call starts from the first byte). */
typedef struct mc_resume {
    size_t scanned; /* text: bytes searched for the line's newline */
    size_t need;    /* the command is not looked at again below this many
                       bytes: its data block's or binary body's end */
} mc_resume;

#ifdef MC_PARSE_COUNT
/* Bytes the parsers have looked at (each pass over a byte counts), for a
 * test that the cost of a command does not grow with its reads. Built in
 * only where MC_PARSE_COUNT is defined (the unit test), not in the proxy. */
extern size_t mc_parse_examined;
#endif

/* ---- the text protocol ---- */

typedef enum mc_text_kind {
    MC_T_ERROR = 0, /* nothing to run: answer `reply` (if not NULL) */
    MC_T_GET,
    MC_T_GETS,
    MC_T_GAT,
    MC_T_GATS,
    MC_T_SET,
    MC_T_ADD,
    MC_T_REPLACE,
    MC_T_APPEND,
    MC_T_PREPEND,
    MC_T_CAS,
    MC_T_DELETE,
    MC_T_INCR,
    MC_T_DECR,
    MC_T_TOUCH,
    MC_T_VERSION,
    MC_T_STATS,
    MC_T_QUIT,
    MC_T_VERBOSITY,
    MC_T_FLUSH_ALL,
} mc_text_kind;

/* One parsed command. Strings point into the input; `keys` is the
 * caller's, grown as needed, and kept between calls. */
typedef struct mc_text_cmd {
    mc_text_kind kind;
    /* MC_T_ERROR: the line to answer without "\r\n" ("ERROR",
     * "CLIENT_ERROR bad data chunk", ...), or NULL for no answer (noreply,
     * or a connection closed without one). */
    const char *reply;
    bool close;         /* close the connection (after `reply`) */
    bool noreply;       /* the command ends in "noreply": answer nothing */
    bool too_large;     /* a storage command whose data is over max_item:
                           answer "SERVER_ERROR object too large for cache";
                           its data is not consumed: skip `swallow` bytes */
    size_t swallow;
    px_str key;         /* storage, delete, incr/decr, touch */
    px_str *keys;       /* get, gets, gat, gats: in request order */
    bool bad_key;       /* gat, gats: a key after `keys` is too long; the
                           keys are touched and the answer is "CLIENT_ERROR
                           bad command line format", as memcached does */
    size_t nkeys;
    size_t keys_cap;
    uint32_t flags;     /* storage */
    int32_t exptime;    /* storage, touch, gat, gats; flush_all's delay */
    uint64_t cas;       /* cas: the unique */
    uint64_t delta;     /* incr, decr */
    px_str data;        /* storage: the data block, without its "\r\n" */
    px_str arg;         /* stats: the first argument ("" for none) */
} mc_text_cmd;

/* Parses the first command of p[0, n). Returns the bytes it takes (> 0),
 * 0 when it is not whole yet (a line without its newline, or a storage
 * command's data not all here), or -1 when out of memory. A data block is
 * awaited only up to max_item: the key, the flags and the data together
 * (MC_FLAGS_BYTES + key + data) over it make `too_large`, answered as soon
 * as the line is here. `rs`: see mc_resume. */
ssize_t mc_text_parse(const char *p, size_t n, size_t max_item, mc_text_cmd *cmd, mc_resume *rs);
void mc_text_cmd_free(mc_text_cmd *cmd);

/* ---- the binary protocol ---- */

#define MC_BIN_HEADER 24
#define MC_BIN_REQ 0x80
#define MC_BIN_RES 0x81

enum {
    MC_OP_GET = 0x00, MC_OP_SET = 0x01, MC_OP_ADD = 0x02, MC_OP_REPLACE = 0x03,
    MC_OP_DELETE = 0x04, MC_OP_INCREMENT = 0x05, MC_OP_DECREMENT = 0x06, MC_OP_QUIT = 0x07,
    MC_OP_FLUSH = 0x08, MC_OP_GETQ = 0x09, MC_OP_NOOP = 0x0a, MC_OP_VERSION = 0x0b,
    MC_OP_GETK = 0x0c, MC_OP_GETKQ = 0x0d, MC_OP_APPEND = 0x0e, MC_OP_PREPEND = 0x0f,
    MC_OP_STAT = 0x10, MC_OP_SETQ = 0x11, MC_OP_ADDQ = 0x12, MC_OP_REPLACEQ = 0x13,
    MC_OP_DELETEQ = 0x14, MC_OP_INCREMENTQ = 0x15, MC_OP_DECREMENTQ = 0x16, MC_OP_QUITQ = 0x17,
    MC_OP_FLUSHQ = 0x18, MC_OP_APPENDQ = 0x19, MC_OP_PREPENDQ = 0x1a, MC_OP_VERBOSITY = 0x1b,
    MC_OP_TOUCH = 0x1c, MC_OP_GAT = 0x1d, MC_OP_GATQ = 0x1e, MC_OP_SASL_LIST_MECHS = 0x20,
    MC_OP_SASL_AUTH = 0x21, MC_OP_SASL_STEP = 0x22, MC_OP_GATK = 0x23, MC_OP_GATKQ = 0x24,
};

enum {
    MC_ST_OK = 0x0000,
    MC_ST_KEY_ENOENT = 0x0001,
    MC_ST_KEY_EEXISTS = 0x0002,
    MC_ST_E2BIG = 0x0003,
    MC_ST_EINVAL = 0x0004,
    MC_ST_NOT_STORED = 0x0005,
    MC_ST_DELTA_BADVAL = 0x0006,
    MC_ST_AUTH_ERROR = 0x0020,
    MC_ST_AUTH_CONTINUE = 0x0021,
    MC_ST_UNKNOWN_COMMAND = 0x0081,
    MC_ST_ENOMEM = 0x0082,
    MC_ST_EINTERNAL = 0x0084,
    MC_ST_ETMPFAIL = 0x0086,
};

/* What a binary request asks; the operation with its quiet form and
 * its key / value returned or not folded into a few fields. */
typedef enum mc_bin_kind {
    MC_B_INVALID = 0, /* answer EINVAL "Invalid arguments" and close */
    MC_B_UNKNOWN,     /* answer UNKNOWN_COMMAND and go on (body skipped) */
    MC_B_GET,         /* get, getq, getk, getkq */
    MC_B_GAT,         /* touch, gat, gatq, gatk, gatkq */
    MC_B_SET,         /* set, add, replace and their quiet forms */
    MC_B_APPEND,      /* append, prepend and their quiet forms */
    MC_B_DELETE,
    MC_B_ARITH,       /* increment, decrement and their quiet forms */
    MC_B_QUIT,
    MC_B_FLUSH,
    MC_B_NOOP,
    MC_B_VERSION,
    MC_B_STAT,
    MC_B_VERBOSITY,
    MC_B_SASL_LIST,   /* SASL list mechanisms */
    MC_B_SASL_AUTH,   /* SASL auth and SASL step: the mechanism is the key,
                         the client's data the value */
} mc_bin_kind;

typedef struct mc_bin_req {
    mc_bin_kind kind;
    uint8_t opcode;
    bool quiet;        /* answer only errors (get: only hits) */
    bool with_key;     /* getk, getkq, gatk, gatkq: the key in the answer */
    uint32_t opaque;
    uint64_t cas;
    px_str key;
    px_str value;
    px_str extras;
    uint32_t flags;    /* set family */
    uint32_t exptime;  /* set family, arith, touch/gat, flush */
    uint64_t delta;    /* arith */
    uint64_t initial;  /* arith */
    bool hangup;       /* MC_B_UNKNOWN for a key and extras longer than the
                          body: memcached answers, then hangs up */
    bool too_large;    /* a body over max_body: E2BIG, the body skipped */
    size_t swallow;    /* too_large / MC_B_UNKNOWN: body bytes not consumed */
} mc_bin_req;

/* Parses the first request of p[0, n). Returns its bytes (> 0; the header
 * alone for an unknown request, the header, extras and key for a
 * too_large one: the caller skips `swallow` more bytes),
 * 0 when it is not whole yet, or -1 for a header memcached hangs up on
 * without an answer (a magic other than 0x80). A body over max_body is
 * not awaited. */
ssize_t mc_bin_parse(const char *p, size_t n, size_t max_body, mc_bin_req *req, mc_resume *rs);

/* ---- values, cas uniques, counters, exptime ---- */

/* The Momento value for data with flags: MC_FLAGS_BYTES of flags
 * (big-endian) then the data, as momentohq/momento-proxy stores them.
 * `out` has room for MC_FLAGS_BYTES + n. */
void mc_value_encode(uint32_t flags, const void *data, size_t n, char *out);
/* The flags and data of a Momento value; false when it is too short to
 * hold flags (not written by a memcached client): a miss. */
bool mc_value_decode(const void *v, size_t n, uint32_t *flags, const char **data, size_t *len);

/* The counter in a value's data, as memcached's incr reads it
 * (strtoull: leading spaces, digits, then the end, a space or a NUL). */
bool mc_counter_parse(const char *data, size_t n, uint64_t *out);
/* The data after incr/decr: the number in decimal, padded with spaces to
 * the old length when shorter, as memcached rewrites it in place. Returns
 * its length; `out` has room for max(MC_COUNTER_MAX, old_len). */
size_t mc_counter_format(uint64_t v, size_t old_len, char *out);

/* What a memcached exptime asks of Momento's TTL. */
typedef struct mc_ttl {
    uint64_t ms;   /* 0: the proxy's default TTL */
    bool expired;  /* expired at once (negative, or a unix time past) */
} mc_ttl;
/* exptime 0 is no expiry (the default TTL); up to MC_MAXDELTA seconds
 * is relative; above it a unix time, compared with now_s. */
mc_ttl mc_exptime(int64_t exptime, int64_t now_s);

/* memcached's safe_strtoull / safe_strtoul / safe_strtol over a token. */
bool mc_strtoull(const char *s, size_t n, uint64_t *out);
bool mc_strtol32(const char *s, size_t n, int32_t *out);

#endif
