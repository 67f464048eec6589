/* What every RESP command's handler uses: the reply encoders (RESP2),
 * the argument readers as Redis reads them, Momento results in Redis terms,
 * and the connection's state (resp_cmd.c). */
#ifndef PX_RESP_CMD_H
#define PX_RESP_CMD_H

#include "conn.h"
#include "momento/collections.h"
#include "resp/resp_parse.h"

#include <stdbool.h>
#include <stdint.h>

/* ---- replies (RESP2) ---- */
void resp_ok(px_reply *r);                                /* +OK */
void resp_simple(px_reply *r, const char *s);             /* +s */
/* -msg: msg starts with its code word ("ERR ...", "WRONGTYPE ..."). */
void resp_error(px_reply *r, const char *msg);
void resp_errorf(px_reply *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void resp_int(px_reply *r, long long v);                  /* :v */
void resp_bulk(px_reply *r, const void *p, size_t n);     /* $n data */
void resp_bulk_str(px_reply *r, const char *s);
void resp_nil(px_reply *r);                               /* $-1 */
void resp_array(px_reply *r, long long n);                /* *n, then n values */
void resp_nil_array(px_reply *r);                         /* *-1 */
/* A double as Redis 7.0 prints a score ("%.17g": "1.5", "3",
 * "0.10000000000000001"; "inf", "-inf"), as a bulk string. */
void resp_double(px_reply *r, double d);
void resp_format_double(double d, char *buf, size_t size);

/* Ends r with an error for a failed Momento call (rc the submit's code, or
 * the result's error when rc is MOMENTO_OK): "-ERR momento NAME: message".
 * The reason reaches the client; a failure is never turned into a miss. */
void resp_momento_error(px_reply *r, int rc, const momento_result *res);
/* Common answers. Each writes the error and ends r. */
void resp_end_error(px_reply *r, const char *msg);
void resp_end_wrongtype(px_reply *r);  /* WRONGTYPE Operation against a key ... */
void resp_end_syntax(px_reply *r);     /* ERR syntax error */
void resp_end_not_integer(px_reply *r); /* ERR value is not an integer or out of range */

/* A command's momento_callback gets its px_reply as userdata; if the call
 * is refused at submit, the handler ends the reply with this. Returns
 * true when rc is MOMENTO_OK (the callback will end r). */
bool resp_submitted(px_reply *r, int rc);

/* A command's context (what its callbacks need), `size` bytes zeroed; NULL
 * out of memory, r then answered "ERR out of memory" and ended, so the
 * handler just returns. */
void *resp_ctx_new(px_reply *r, size_t size);

/* ---- arguments ---- */
/* Case-insensitive comparison with a lower-case word. */
bool resp_arg_is(const px_str *a, const char *lower);
/* A whole argument as Redis's string2ll reads it. */
bool resp_arg_ll(const px_str *a, long long *out);
/* A score or weight as Redis 7.0's getDoubleFromObject() reads one: no
 * leading space, the whole string (under 256 bytes), no NaN, and an
 * overflow or an underflow to zero refused. */
bool resp_arg_double(const px_str *a, double *out);
/* The count of a pop (LPOP, RPOP, SPOP key count: argv[1] the key, argv[2]
 * the count) as Redis reads it: true with *count > 0 for the pop to go on.
 * False when r is answered here: a count that is not a number >= 0 is
 * refused, and a count of 0 pops nothing, `zero` answering once the key's
 * type is checked (resp_length() of `type`). */
bool resp_pop_count(px_reply *r, const px_str *argv, momento_item_type type, momento_callback zero,
                    long long *count);
/* The time now, as the milliseconds of CLOCK_REALTIME: the clock of
 * Redis's absolute expiry times (EXAT, PXAT) and of px_backend.started_ms. */
int64_t resp_now_ms(void);
/* Momento's TTL for a write that gives none: the proxy's default. */
uint64_t resp_default_ttl(const px_reply *r);
/* A collection write's TTL as Redis keeps it: a write that creates the
 * key gives it the default TTL (Redis: none, which Momento does not have);
 * a write to an existing key leaves its TTL alone (refresh off), as every
 * Redis write but a replacing one does. Fills *t and returns it. */
const momento_collection_ttl *resp_keep_ttl(const px_reply *r, momento_collection_ttl *t);

/* The outcome of a Momento result in Redis terms. */
bool resp_is_wrongtype(const momento_result *res);
/* Ends r for a failed call on a collection: WRONGTYPE for a key of another
 * type (Momento's FAILED_PRECONDITION there), Momento's error otherwise. */
void resp_end_failure(px_reply *r, const momento_result *res);

/* momento_callbacks whose userdata is the px_reply they end, for answers
 * that a length call decides: a failure as resp_end_failure(); on success
 * resp_on_length answers the length (:0 for no key), and the others a fixed
 * reply - the call is there only so that a key of another type answers
 * WRONGTYPE, as Redis does, when the range or count asked for holds
 * nothing in any collection. */
void resp_on_length(const momento_result *res, void *ud);
void resp_on_type_then_empty(const momento_result *res, void *ud); /* *0 */
void resp_on_type_then_nil(const momento_result *res, void *ud);   /* $-1 */
void resp_on_type_then_zero(const momento_result *res, void *ud);  /* :0 */
/* The length of the collection at key, of the given type (a set, a sorted
 * set, a list or a dictionary), through the coalescer when there is one:
 * cb gets r as userdata. Every family asks it, for its own length command
 * and for the answers above. */
void resp_length(px_reply *r, const px_str *key, momento_item_type type, momento_callback cb);

/* ---- answering a result ----
 * What most callbacks say once their call is back, written once. */
/* When res failed, ends r as resp_end_failure() and returns true: the
 * first line of a collection command's callback. */
bool resp_end_if_failed(px_reply *r, const momento_result *res);
/* The same for a command on keys of any type, where no failure is
 * WRONGTYPE: Momento's error as it is (resp_momento_error()). */
bool resp_end_if_error(px_reply *r, const momento_result *res);
void resp_end_int(px_reply *r, long long v);  /* :v, and r ends */
void resp_end_ok(px_reply *r);                /* +OK, and r ends */
/* A write whose answer was decided before it was made (SADD's count, a
 * STORE's size, DEL's count): :v once it succeeded, else the failure as
 * resp_end_if_failed() (resp_end_int_or_error: as resp_end_if_error()). */
void resp_end_int_or_failure(px_reply *r, const momento_result *res, long long v);
void resp_end_int_or_error(px_reply *r, const momento_result *res, long long v);
/* The items of a HIT that are hits themselves: of the fields or members a
 * read named, those that exist (what HSET does not add, what HDEL and ZREM
 * remove); 0 for a MISS. */
size_t resp_count_hits(const momento_result *res);
/* A read's hit or miss, for INFO's keyspace_hits and keyspace_misses. */
void resp_count_read(px_reply *r, bool hit);
/* The bulk string of a result's value (a scalar's, a field's, an
 * element's). */
void resp_bulk_value(px_reply *r, const momento_result *it);
/* One value read for a client (GET, HGET, each of HMGET's and MGET's):
 * the value of `it` when hit, else nil, counted as a hit or a miss. */
void resp_read_value(px_reply *r, const momento_result *it, bool hit);
/* momento_callbacks whose userdata is the px_reply they end, after
 * resp_end_if_failed(): resp_on_values answers the values of a HIT as an
 * array (SMEMBERS, LRANGE; none for a MISS), resp_on_first_or_nil the
 * first of them, or nil for none (SPOP and LINDEX's one value). */
void resp_on_values(const momento_result *res, void *ud);
void resp_on_first_or_nil(const momento_result *res, void *ud);

/* ---- multi-field reads and STORE writes ---- */
/* Momento's arrays for n strings, (*ret_ps)[i] and (*ret_lens)[i] being
 * strs[i]'s: true, the caller then freeing both; false out of memory, with
 * nothing to free. resp_arrays_new() only allocates them. */
bool resp_arrays_new(size_t n, const void ***ret_ps, size_t **ret_lens);
bool resp_str_arrays(const px_str *strs, size_t n, const void ***ret_ps, size_t **ret_lens);
/* Writes the answer about the i-th field or member a read asked for, from
 * the read's result (a HIT of the collection, or a MISS: there is none). */
typedef void (*resp_each_fn)(px_reply *r, const momento_result *res, size_t i);
/* A read of the fields or members argv[2..argc) of the key argv[1], for
 * an answer about each of them, through the coalescer when there is one:
 * the values of a dictionary's fields (type MOMENTO_ITEM_TYPE_DICTIONARY:
 * HMGET), the scores of a sorted set's members (SORTED_SET: ZMSCORE),
 * whether a set holds the elements (SET: SISMEMBER, SMISMEMBER). `each`
 * writes the answers, as an array or, when `array` is false, the one
 * answer alone (SISMEMBER). A failure ends r as resp_end_failure(); out of
 * memory, or refused at submit, r ends here. */
void resp_read_many(px_reply *r, int argc, const px_str *argv, momento_item_type type, bool array,
                    resp_each_fn each);
/* A STORE command's answer, `bytes` long as Momento counts an item, is
 * refused before its destination is touched when Momento would not store
 * it: false then, r ended with Momento's LIMIT_EXCEEDED error naming the
 * answer (`what`: "set", "union"); true when it fits. */
bool resp_store_fits(px_reply *r, const char *what, size_t bytes);
/* A STORE command (SINTERSTORE and its family, ZUNIONSTORE computed here)
 * has deleted its destination (res) to write its answer of n elements in
 * its place: true when the caller writes them; false when r has ended, the
 * delete having failed or the answer being empty (Redis deletes the
 * destination of an empty answer and answers 0). */
bool resp_store_cleared(px_reply *r, const momento_result *res, size_t n);

/* ---- the connection's state ---- */
/* A RESP connection's px_conn_state: the command being parsed (resp.c's
 * feed), the subscriptions (resp_pubsub.c), whether it has authenticated
 * and its transaction (resp.c). */
typedef struct resp_pubsub resp_pubsub;
typedef struct resp_multi resp_multi;
typedef struct resp_state {
    resp_args args;
    resp_pubsub *ps;
    /* AUTH or HELLO AUTH gave px_backend.requirepass (meaningless when
     * there is none): until then only AUTH, HELLO and QUIT run. */
    bool authed;
    /* Between MULTI and EXEC / DISCARD: the commands queued; NULL outside
     * a transaction. */
    resp_multi *multi;
} resp_state;
/* The connection's subscriptions' slot; NULL before its first command. */
resp_pubsub **resp_conn_pubsub(px_conn *c);

#endif
