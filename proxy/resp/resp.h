/* The RESP2 side of the proxy: the protocol (resp_proto, for a listening
 * port) and the command table; resp_cmd.h has what every command uses.
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

#include "resp/resp_cmd.h"

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
extern const resp_cmd resp_server_cmds[];  /* resp.c: PING ... HELLO, AUTH, MULTI ... UNWATCH */
extern const resp_cmd resp_string_cmds[];  /* resp_string.c */
extern const resp_cmd resp_keys_cmds[];    /* resp_keys.c: DEL, EXISTS, TYPE, TTL family, INCR family */
extern const resp_cmd resp_hash_cmds[];    /* resp_hash.c */
extern const resp_cmd resp_list_cmds[];    /* resp_list.c */
extern const resp_cmd resp_set_cmds[];     /* resp_set.c */
extern const resp_cmd resp_zset_cmds[];    /* resp_zset.c */
extern const resp_cmd resp_pubsub_cmds[];  /* resp_pubsub.c */

/* ---- pub/sub (resp_pubsub.c), for the feed ---- */
/* Channels the connection is subscribed to: while not 0, only the
 * commands of the subscribed context run (Redis's rule). */
int resp_pubsub_count(const resp_pubsub *ps);
/* The connection is closed: every subscription is ended. */
void resp_pubsub_closed(resp_pubsub *ps);

/* The whole table, for COMMAND and the fuzzer. */
const resp_cmd *resp_lookup(const char *name, size_t n);
size_t resp_command_count(void);

#endif
