/* The RESP2 side of the proxy: the protocol (resp_proto, for a listening
 * port), the reply encoders every command uses, and the command table.
 *
 * A command is a resp_cmd: its name, Redis's arity, and a handler. The
 * handler is given its reply's place (px_reply, conn.h) and the arguments,
 * borrowed for the call; it either writes the reply and ends it at once or
 * starts Momento calls whose callbacks do (userdata: the reply, or a
 * context that holds it). Each family of commands lives in a file of its
 * own (resp_string.c, resp_hash.c, ...), listing its table; resp.c joins
 * them. */
#ifndef PX_RESP_H
#define PX_RESP_H

#include "conn.h"

#include <stdbool.h>
#include <stdint.h>

extern const px_proto resp_proto;

typedef void (*resp_handler)(px_reply *r, int argc, const px_str *argv);

typedef struct resp_cmd {
    const char *name;    /* lower case */
    int arity;           /* Redis's: n exactly, -n at least n (the name counts) */
    resp_handler run;
} resp_cmd;

/* The families' tables, each ended by a {NULL} entry. */
extern const resp_cmd resp_server_cmds[];  /* resp.c: PING, ECHO, QUIT, SELECT, COMMAND, INFO */
extern const resp_cmd resp_string_cmds[];  /* resp_string.c */
extern const resp_cmd resp_keys_cmds[];    /* resp_keys.c: DEL, EXISTS, TYPE, TTL family, INCR family */
extern const resp_cmd resp_hash_cmds[];    /* resp_hash.c */
extern const resp_cmd resp_list_cmds[];    /* resp_list.c */
extern const resp_cmd resp_set_cmds[];     /* resp_set.c */
extern const resp_cmd resp_zset_cmds[];    /* resp_zset.c */
extern const resp_cmd resp_pubsub_cmds[];  /* resp_pubsub.c */

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
/* A whole argument as Redis's string2ll / string2ld read it. */
bool resp_arg_ll(const px_str *a, long long *out);
bool resp_arg_double(const px_str *a, double *out);
/* Momento's TTL for a write that gives none: the proxy's default. */
uint64_t resp_default_ttl(const px_reply *r);

/* The outcome of a Momento result in Redis terms. */
bool resp_is_wrongtype(const momento_result *res);

/* ---- pub/sub (resp_pubsub.c) ---- */
/* A connection's subscriptions, or NULL: resp.c keeps the pointer in its
 * per-connection state and calls the two functions below. */
typedef struct resp_pubsub resp_pubsub;
resp_pubsub **resp_conn_pubsub(px_conn *c);
/* Channels the connection is subscribed to: while not 0, only the
 * commands of the subscribed context run (Redis's rule). */
int resp_pubsub_count(const resp_pubsub *ps);
/* The connection is closed: every subscription is ended. */
void resp_pubsub_closed(resp_pubsub *ps);

/* The whole table, for COMMAND and the fuzzer. */
const resp_cmd *resp_lookup(const char *name, size_t n);
size_t resp_command_count(void);

#endif
