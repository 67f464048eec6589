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

/* ---- arguments ---- */
/* Case-insensitive comparison with a lower-case word. */
bool resp_arg_is(const px_str *a, const char *lower);
/* A whole argument as Redis's string2ll reads it. */
bool resp_arg_ll(const px_str *a, long long *out);
/* A score or weight as Redis 7.0's getDoubleFromObject() reads one: no
 * leading space, the whole string (under 256 bytes), no NaN, and an
 * overflow or an underflow to zero refused. */
bool resp_arg_double(const px_str *a, double *out);
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
