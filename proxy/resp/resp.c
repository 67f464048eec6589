/* RESP2: the protocol's feed (parse, look up, run), the command table,
 * the connection-level commands (PING, ECHO, QUIT, SELECT, COMMAND, INFO,
 * CLIENT, HELLO, AUTH) and transactions (MULTI, EXEC, DISCARD, WATCH,
 * UNWATCH). */
#include "resp/resp.h"
#include "auth.h"
#include "metrics.h"
#include "resp/resp_parse.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- the command table ---- */

static const resp_cmd *const families[] = {
    resp_server_cmds, resp_string_cmds, resp_keys_cmds, resp_hash_cmds,
    resp_list_cmds,   resp_set_cmds,    resp_zset_cmds, resp_pubsub_cmds,
};

#define TABLE_SIZE 512 /* a power of two, over twice the commands */
static const resp_cmd *table[TABLE_SIZE];
static bool small_reply[TABLE_SIZE]; /* table[i]'s reply is small */
static size_t command_count;

/* Commands whose reply is a status, a number or an error whatever the
 * data: they take next to nothing of a connection's
 * reply budget (px_reply_small(); conn.h). The others answer values, or
 * arrays of them, of a size known only once Momento answers. SET is here
 * and asks for its budget itself when it has GET (run_command()). */
static const char *const small_replies[] = {
    "ping", "quit", "select", "client", "hello", "set", "setnx", "setex", "psetex", "mset",
    "del", "unlink", "exists", "type", "expire", "pexpire", "ttl", "pttl", "persist", "incr",
    "incrby", "decr", "decrby", "hset", "hmset", "hsetnx", "hdel", "hincrby", "hlen",
    "hexists", "hstrlen", "lpush", "rpush", "llen", "sadd", "srem", "sismember",
    "scard", "sinterstore", "sunionstore", "sdiffstore", "zadd", "zrem", "zscore", "zincrby",
    "zrank", "zrevrank", "zcard", "zcount", "zunionstore", "publish", "auth", "multi",
    "discard", "watch", "unwatch", NULL};

static unsigned name_hash(const char *s, size_t n)
{
    unsigned h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)tolower((unsigned char)s[i])) * 16777619u;
    return h;
}

static void table_build(void)
{
    for (size_t f = 0; f < sizeof(families) / sizeof(families[0]); f++)
        for (const resp_cmd *c = families[f]; c->name; c++) {
            unsigned i = name_hash(c->name, strlen(c->name)) & (TABLE_SIZE - 1);
            while (table[i])
                i = (i + 1) & (TABLE_SIZE - 1);
            table[i] = c;
            for (int k = 0; small_replies[k]; k++)
                if (strcmp(c->name, small_replies[k]) == 0)
                    small_reply[i] = true;
            command_count++;
        }
}

/* The table slot of a command, or -1. */
static int lookup_slot(const char *name, size_t n)
{
    if (!command_count)
        table_build();
    if (n == 0 || n > 32)
        return -1;
    unsigned i = name_hash(name, n) & (TABLE_SIZE - 1);
    for (; table[i]; i = (i + 1) & (TABLE_SIZE - 1)) {
        const char *t = table[i]->name;
        if (strlen(t) == n) {
            size_t k = 0;
            while (k < n && tolower((unsigned char)name[k]) == t[k])
                k++;
            if (k == n)
                return (int)i;
        }
    }
    return -1;
}

const resp_cmd *resp_lookup(const char *name, size_t n)
{
    int i = lookup_slot(name, n);
    return i < 0 ? NULL : table[i];
}

/* SET ... GET answers the old value. */
static bool set_with_get(int argc, const px_str *argv)
{
    for (int i = 3; i < argc; i++)
        if (argv[i].n == 3 && strncasecmp(argv[i].p, "get", 3) == 0)
            return true;
    return false;
}

size_t resp_command_count(void)
{
    if (!command_count)
        table_build();
    return command_count;
}

/* ---- the feed ---- */

/* What Redis allows a RESP2 connection with subscriptions. */
static bool allowed_subscribed(const resp_cmd *cmd)
{
    static const char *const ok[] = {"subscribe", "unsubscribe", "psubscribe", "punsubscribe",
                                     "ping", "quit", "reset", NULL};
    for (int i = 0; ok[i]; i++)
        if (strcmp(cmd->name, ok[i]) == 0)
            return true;
    return false;
}

/* Redis 7's "unknown command 'NAME', with args beginning with: 'a' 'b' ",
 * the arguments until 128 bytes of them are listed, into out. */
static void unknown_command(char *out, size_t size, int argc, const px_str *argv)
{
    char args[512];
    size_t len = 0;
    args[0] = '\0';
    for (int i = 1; i < argc && len < 128; i++) {
        int room = 128 - (int)len;
        int n = snprintf(args + len, sizeof(args) - len, "'%.*s' ",
                         (int)(argv[i].n < (size_t)room ? argv[i].n : (size_t)room), argv[i].p);
        if (n < 0)
            break;
        len += (size_t)n;
        if (len >= sizeof(args))
            len = sizeof(args) - 1;
    }
    snprintf(out, size, "ERR unknown command '%.*s', with args beginning with: %s",
             (int)(argv[0].n < 128 ? argv[0].n : 128), argv[0].p, args);
}

static bool name_in(const char *name, const char *const *list)
{
    for (int i = 0; list[i]; i++)
        if (strcmp(name, list[i]) == 0)
            return true;
    return false;
}

/* Which arguments of a command are keys (every `step`-th from `first`,
 * `n` strings in all) and whether it writes them: what orders it against
 * the connection's commands in flight (conn.h). Unknown commands and
 * commands without keys touch none. */
static void command_keys(const resp_cmd *cmd, int argc, int *first, int *n, int *step,
                         bool *write)
{
    static const char *const keyless[] = {
        "ping", "echo", "quit", "select", "command", "info", "client", "hello",
        "publish", "subscribe", "unsubscribe", "auth", "multi", "exec", "discard", "watch",
        "unwatch", NULL};
    static const char *const reads[] = {
        "get", "mget", "exists", "type", "ttl", "pttl", "hget", "hmget", "hgetall", "hlen",
        "hkeys", "hvals", "hexists", "hstrlen", "lrange", "llen", "lindex", "smembers",
        "sismember", "smismember", "scard", "srandmember", "sinter", "sunion", "sdiff",
        "zscore", "zmscore", "zrank",
        "zrevrank", "zrange", "zrangebyscore", "zrevrange", "zrevrangebyscore", "zcard",
        "zcount", NULL};
    /* Every argument a key (or, for ZUNIONSTORE, possibly one: a number
     * hashed as a key only makes a command wait). */
    static const char *const all_keys[] = {"mget", "exists", "del", "unlink", "zunionstore",
                                           "sinter", "sunion", "sdiff", "sinterstore",
                                           "sunionstore", "sdiffstore", NULL};
    *first = 1;
    *n = argc > 1 ? 1 : 0;
    *step = 1;
    *write = !name_in(cmd->name, reads);
    if (!cmd || name_in(cmd->name, keyless)) {
        *n = 0;
    } else if (name_in(cmd->name, all_keys)) {
        *n = argc - 1;
    } else if (strcmp(cmd->name, "mset") == 0) {
        *n = argc - 1;
        *step = 2;
    }
}

/* Whether a command names the empty key. Momento refuses an empty key
 * (INVALID_ARGUMENT), so no such key can be written or exist: every
 * command naming one, read or write, gets one error saying so before any
 * call (docs/proxy.md "The empty key"). Keys as command_keys gives them,
 * but ZUNIONSTORE's exactly: its destination and its numkeys sources. */
static bool names_empty_key(const resp_cmd *cmd, int argc, const px_str *argv, int first,
                            int nkeys, int step)
{
    if (strcmp(cmd->name, "zunionstore") == 0) {
        long long n;
        if (argv[1].n == 0)
            return true;
        if (!resp_arg_ll(&argv[2], &n) || n < 1 || n > argc - 3)
            return false;
        nkeys = (int)n;
        first = 3;
    }
    for (int i = 0; i < nkeys; i += step)
        if (first + i < argc && argv[first + i].n == 0)
            return true;
    return false;
}

/* Starts a command that passed run_command()'s checks, in its turn among
 * the connection's commands on its keys (conn.h): false when it must wait
 * for an earlier one (px_conn_wait() is called; ask again with the same
 * command). A queued command of a transaction starts here too, at EXEC. */
static bool start_command(px_conn *c, int slot, int argc, const px_str *argv)
{
    const resp_cmd *cmd = table[slot];
    int first = 1, nkeys = 0, step = 1;
    bool write = false;
    command_keys(cmd, argc, &first, &nkeys, &step, &write);
    if (nkeys > 0 && !px_conn_keys_free(c, argv + first, (size_t)nkeys, (size_t)step, write)) {
        px_conn_wait(c);
        return false;
    }
    px_reply *r = px_reply_begin(c);
    if (!r)
        return true;
    if (nkeys > 0)
        px_reply_claim(r, argv + first, (size_t)nkeys, (size_t)step, write);
    if (small_reply[slot] && !(strcmp(cmd->name, "set") == 0 && set_with_get(argc, argv)))
        px_reply_small(r);
    px_conn_backend(c)->stats->commands++;
    px_reply_command(r, px_metrics_resp_command(slot, cmd->name));
    if (nkeys > 0 && names_empty_key(cmd, argc, argv, first, nkeys, step)) {
        resp_end_error(r, "ERR momento-proxy: Momento does not allow an empty key");
        return true;
    }
    cmd->run(r, argc, argv);
    return true;
}

/* ---- transactions ---- */

/* What one MULTI may queue. Past either bound the command is refused and
 * the transaction is discarded at EXEC, as Redis discards one with a
 * command refused while queueing, and the queue is freed at once: a client
 * that sends MULTI and then commands forever holds no more than this. The
 * bytes are the arguments plus what keeping them costs (QUEUED_COST a
 * command, a px_str an argument), bounded by --max-request-bytes: the
 * transaction is held as one request would be. */
#define MULTI_MAX_COMMANDS 100000
#define QUEUED_COST 64

typedef struct queued {
    int slot;     /* the command's table slot */
    int argc;
    px_str *argv; /* the arguments' bytes follow them: one allocation */
} queued;

struct resp_multi {
    queued *cmds;
    size_t n, cap;
    size_t bytes;  /* what the queue holds, as counted above */
    bool dirty;    /* a command was refused while queueing: EXEC aborts */
    bool running;  /* EXEC answered its array's header and is starting the
                      commands, one after another */
    size_t next;   /* the next of them to start */
};

static void queue_clear(resp_multi *m)
{
    for (size_t i = 0; i < m->n; i++)
        free(m->cmds[i].argv);
    free(m->cmds);
    m->cmds = NULL;
    m->n = m->cap = m->bytes = 0;
}

static void multi_end(resp_state *st)
{
    if (st->multi) {
        queue_clear(st->multi);
        free(st->multi);
        st->multi = NULL;
    }
}

/* A command refused while queueing: EXEC will abort, so nothing queued is
 * kept from now on. */
static void multi_flag(resp_multi *m)
{
    m->dirty = true;
    queue_clear(m);
}

/* Queues a copy of the command; writes why not into err (and the
 * transaction is then flagged) when it is over the bounds or out of
 * memory. */
static bool multi_queue(resp_multi *m, const px_limits *l, int slot, int argc, const px_str *argv,
                        char *err, size_t size)
{
    if (m->dirty)
        return true; /* answered QUEUED, as Redis does, and kept nowhere */
    size_t data = 0;
    for (int i = 0; i < argc; i++)
        data += argv[i].n;
    size_t cost = QUEUED_COST + (size_t)argc * sizeof(px_str) + data;
    if (m->n >= MULTI_MAX_COMMANDS || m->bytes + cost > l->max_request_bytes) {
        snprintf(err, size,
                 "ERR momento-proxy: a transaction queues at most %d commands and "
                 "--max-request-bytes (%zu) of arguments; this one will be discarded at EXEC",
                 MULTI_MAX_COMMANDS, l->max_request_bytes);
        multi_flag(m);
        return false;
    }
    queued *cmds = px_grow(m->cmds, m->n, &m->cap, sizeof(*cmds), 16);
    if (!cmds)
        goto no_memory;
    m->cmds = cmds;
    px_str *v = malloc((size_t)argc * sizeof(px_str) + data + 1);
    if (!v)
        goto no_memory;
    char *p = (char *)(v + argc);
    for (int i = 0; i < argc; i++) {
        if (argv[i].n)
            memcpy(p, argv[i].p, argv[i].n);
        v[i] = (px_str){p, argv[i].n};
        p += argv[i].n;
    }
    m->cmds[m->n++] = (queued){slot, argc, v};
    m->bytes += cost;
    return true;
no_memory:
    snprintf(err, size, "ERR momento-proxy: out of memory queueing the command; the "
                        "transaction will be discarded at EXEC");
    multi_flag(m);
    return false;
}

/* EXEC's commands, from the next one not started: each in its turn, as if
 * the client had pipelined them (within the connection's limits, after
 * the earlier commands on its keys). False when one must wait: the feed
 * stops at the EXEC, which it runs again later, and this goes on where it
 * stopped. Their replies are the elements of EXEC's array, whose header
 * went first: the connection writes replies in order. */
static bool exec_run(px_conn *c, resp_state *st)
{
    resp_multi *m = st->multi;
    while (m->next < m->n) {
        if (!px_conn_can_start(c))
            return false;
        queued *q = &m->cmds[m->next];
        if (!start_command(c, q->slot, q->argc, q->argv))
            return false;
        if (px_conn_state(c) != st)
            return true; /* out of memory closed the connection: st is gone */
        free(q->argv);
        q->argv = NULL;
        m->next++;
    }
    multi_end(st);
    return true;
}

static void exec_start(px_conn *c, resp_state *st)
{
    px_reply *r = px_reply_begin(c);
    if (!r)
        return;
    px_reply_small(r);
    px_conn_backend(c)->stats->commands++;
    px_reply_command(r, px_metrics_resp_command(-1, "exec"));
    resp_multi *m = st->multi;
    if (!m) {
        resp_end_error(r, "ERR EXEC without MULTI");
        return;
    }
    if (m->dirty) {
        multi_end(st);
        resp_end_error(r, "EXECABORT Transaction discarded because of previous errors.");
        return;
    }
    resp_array(r, (long long)m->n);
    px_reply_end(r);
    m->running = true;
}

static void cmd_exec(px_reply *r, int argc, const px_str *argv);

/* What runs before AUTH (Redis 7's no-auth commands); HELLO answers NOAUTH
 * itself when its own AUTH option does not authenticate. */
static bool runs_unauthenticated(const resp_cmd *cmd)
{
    return strcmp(cmd->name, "auth") == 0 || strcmp(cmd->name, "hello") == 0 ||
           strcmp(cmd->name, "quit") == 0;
}

/* What runs at once inside MULTI; every other command is queued. */
static bool runs_in_multi(const resp_cmd *cmd)
{
    static const char *const now[] = {"exec", "discard", "multi", "watch", "quit", NULL};
    return name_in(cmd->name, now);
}

/* One command from the client: Redis 7's checks in Redis's order - the
 * name, the arity, authentication, the subscribed context - then queued
 * inside MULTI, or started. A refused command flags the transaction it
 * came in (EXEC then aborts), and EXEC refused discards it. False: the
 * command must wait (start_command(), exec_run()). */
static bool run_command(px_conn *c, int argc, const px_str *argv)
{
    px_backend *b = px_conn_backend(c);
    resp_state *st = px_conn_state(c);
    int slot = lookup_slot(argv[0].p, argv[0].n);
    const resp_cmd *cmd = slot < 0 ? NULL : table[slot];
    bool exec = cmd && cmd->run == cmd_exec;
    /* An EXEC that stopped for a command that had to wait goes on. */
    if (exec && st->multi && st->multi->running)
        return exec_run(c, st);
    char refusal[512]; /* the reason a command is refused, or "" */
    refusal[0] = '\0';
    if (!cmd)
        unknown_command(refusal, sizeof(refusal), argc, argv);
    else if ((cmd->arity > 0 && argc != cmd->arity) || (cmd->arity < 0 && argc < -cmd->arity))
        snprintf(refusal, sizeof(refusal), "ERR wrong number of arguments for '%s' command",
                 cmd->name);
    else if (b->requirepass && !st->authed && !runs_unauthenticated(cmd))
        snprintf(refusal, sizeof(refusal), "NOAUTH Authentication required.");
    else if (st->ps && resp_pubsub_count(st->ps) > 0 && !allowed_subscribed(cmd))
        snprintf(refusal, sizeof(refusal),
                 "ERR Can't execute '%s': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / "
                 "QUIT / RESET are allowed in this context",
                 cmd->name);
    bool queue = !refusal[0] && st->multi && !runs_in_multi(cmd);
    if (refusal[0] || queue) {
        px_reply *r = px_reply_begin(c);
        if (!r)
            return true;
        px_reply_small(r);
        if (queue) {
            if (multi_queue(st->multi, &b->limits, slot, argc, argv, refusal, sizeof(refusal)))
                resp_simple(r, "QUEUED");
            else
                resp_error(r, refusal);
            px_reply_end(r);
            return true;
        }
        b->stats->commands++;
        px_reply_command(r, px_metrics_resp_command(slot, cmd ? cmd->name : NULL));
        if (exec) {
            /* Redis: the reason, without its ERR, and no transaction. */
            resp_errorf(r, "EXECABORT Transaction discarded because of: %s",
                        strncmp(refusal, "ERR ", 4) == 0 ? refusal + 4 : refusal);
            multi_end(st);
        } else {
            if (st->multi)
                multi_flag(st->multi);
            resp_error(r, refusal);
        }
        px_reply_end(r);
        return true;
    }
    if (exec) {
        exec_start(c, st);
        if (px_conn_state(c) != st || !st->multi || !st->multi->running)
            return true;
        return exec_run(c, st);
    }
    return start_command(c, slot, argc, argv);
}

static size_t resp_feed(px_conn *c, const char *data, size_t len)
{
    resp_state *st = px_conn_state_or_new(c, sizeof(*st));
    if (!st)
        return 0;
    px_backend *b = px_conn_backend(c);
    size_t used = 0;
    /* st->args holds the parse of the command at data[used]: an
     * unfinished one resumes where the last read left it, and one that
     * had to wait is returned again as it was (resp_parse.h). */
    while (used < len && px_conn_can_start(c)) {
        const char *err = NULL;
        /* Before AUTH, Redis's small bounds: an unauthenticated client is
         * refused at the line announcing more, before its data is held.
         * Read again for every command, as AUTH may have run. */
        resp_limits lim = {b->limits.max_request_bytes, b->requirepass && !st->authed};
        ssize_t n = resp_parse(data + used, len - used, &lim, &st->args, &err);
        if (n == 0)
            break;
        if (n < 0) {
            px_reply *r = px_reply_begin(c);
            if (r && n == -1) {
                b->stats->protocol_errors++;
                resp_errorf(r, "ERR %s", err);
            }
            if (r)
                px_reply_end(r);
            /* Redis answers a framing error and closes the connection. */
            px_conn_close_after(c);
            return len;
        }
        /* A command that must wait stays parsed until it may run. */
        if (st->args.argc > 0 && !run_command(c, st->args.argc, st->args.argv))
            break;
        /* Out of memory closes the connection, which frees st. */
        if (px_conn_state(c) != st)
            return used;
        resp_parse_done(&st->args);
        used += (size_t)n;
        if (px_conn_closing(c))
            break;
    }
    return used;
}

static void resp_closed(px_conn *c)
{
    resp_state *st = px_conn_state(c);
    if (st) {
        if (st->ps)
            resp_pubsub_closed(st->ps);
        multi_end(st);
        resp_args_free(&st->args);
        free(st);
    }
}

const px_proto resp_proto = {
    .name = "resp",
    .feed = resp_feed,
    .refused = "-ERR max number of clients reached\r\n",
    .closed = resp_closed,
};

/* ---- connection-level commands ---- */

static void cmd_ping(px_reply *r, int argc, const px_str *argv)
{
    if (argc > 2) {
        resp_end_error(r, "ERR wrong number of arguments for 'ping' command");
        return;
    }
    resp_pubsub **ps = resp_conn_pubsub(px_reply_conn(r));
    if (ps && *ps && resp_pubsub_count(*ps) > 0) {
        /* Subscribed, RESP2: ["pong", the argument or ""]. */
        resp_array(r, 2);
        resp_bulk_str(r, "pong");
        resp_bulk(r, argc == 2 ? argv[1].p : "", argc == 2 ? argv[1].n : 0);
    } else if (argc == 2) {
        resp_bulk(r, argv[1].p, argv[1].n);
    } else {
        resp_simple(r, "PONG");
    }
    px_reply_end(r);
}

static void cmd_echo(px_reply *r, int argc, const px_str *argv)
{
    resp_bulk(r, argv[1].p, argv[1].n);
    px_reply_end(r);
}

static void cmd_quit(px_reply *r, int argc, const px_str *argv)
{
    px_conn *c = px_reply_conn(r); /* the reply is gone once it ends */
    resp_end_ok(r);
    px_conn_close_after(c);
}

static void cmd_select(px_reply *r, int argc, const px_str *argv)
{
    long long db;
    if (!resp_arg_ll(&argv[1], &db)) {
        resp_end_not_integer(r);
        return;
    }
    /* Momento has one keyspace per cache: database 0 is the cache. */
    if (db != 0) {
        resp_end_error(r, "ERR DB index is out of range");
        return;
    }
    resp_end_ok(r);
}

static void command_entry(px_reply *r, const resp_cmd *c)
{
    resp_array(r, 10);
    resp_bulk_str(r, c->name);
    resp_int(r, c->arity);
    resp_array(r, 0); /* flags */
    /* Key positions: most commands take one key, at 1. */
    bool keyless = c->arity == 1 || strcmp(c->name, "ping") == 0 || strcmp(c->name, "echo") == 0 ||
                   strcmp(c->name, "select") == 0 || strcmp(c->name, "command") == 0 ||
                   strcmp(c->name, "info") == 0 || strcmp(c->name, "client") == 0 ||
                   strcmp(c->name, "hello") == 0 || strcmp(c->name, "publish") == 0 ||
                   strcmp(c->name, "auth") == 0 ||
                   strcmp(c->name, "subscribe") == 0 || strcmp(c->name, "unsubscribe") == 0;
    resp_int(r, keyless ? 0 : 1);
    resp_int(r, keyless ? 0 : 1);
    resp_int(r, keyless ? 0 : 1);
    resp_array(r, 0); /* ACL categories */
    resp_array(r, 0); /* tips */
    resp_array(r, 0); /* key specs */
    resp_array(r, 0); /* subcommands */
}

/* Redis 7's answer to a known subcommand given the wrong number of
 * arguments: the arity is the subcommand's own. */
static bool subcommand_arity(px_reply *r, const char *cmd, const char *sub, int argc, int arity)
{
    if (argc == arity)
        return true;
    resp_errorf(r, "ERR wrong number of arguments for '%s|%s' command", cmd, sub);
    return false;
}

static void cmd_command(px_reply *r, int argc, const px_str *argv)
{
    if (argc == 1) {
        resp_array(r, (long long)resp_command_count());
        for (unsigned i = 0; i < TABLE_SIZE; i++)
            if (table[i])
                command_entry(r, table[i]);
    } else if (resp_arg_is(&argv[1], "count")) {
        if (subcommand_arity(r, "command", "count", argc, 2))
            resp_int(r, (long long)resp_command_count());
    } else if (resp_arg_is(&argv[1], "info")) {
        resp_array(r, argc - 2);
        for (int i = 2; i < argc; i++) {
            const resp_cmd *c = resp_lookup(argv[i].p, argv[i].n);
            if (c)
                command_entry(r, c);
            else
                resp_nil_array(r);
        }
    } else if (resp_arg_is(&argv[1], "docs")) {
        /* redis-cli asks for docs to draw hints; none is an answer. */
        resp_array(r, 0);
    } else {
        resp_errorf(r, "ERR unknown subcommand '%.*s'. Try COMMAND HELP.",
                    (int)(argv[1].n < 128 ? argv[1].n : 128), argv[1].p);
    }
    px_reply_end(r);
}

static void cmd_info(px_reply *r, int argc, const px_str *argv)
{
    px_backend *b = px_conn_backend(px_reply_conn(r));
    const px_counters *s = b->stats;
    long long now_ms = resp_now_ms();
    /* How the library shared the calls: zeros when batching or coalescing
     * is off (--batch 0, --no-coalesce). */
    momento_client_batching_stats bs = {0};
    momento_client_batching_stats_get(b->client, &bs, sizeof(bs));
    momento_coalescer_stats cs = {0};
    if (b->co)
        momento_coalescer_stats_get(b->co, &cs, sizeof(cs));
    char buf[2048];
    int n = snprintf(buf, sizeof(buf),
                     "# Server\r\n"
                     "redis_version:7.0.0\r\n"
                     "momento_proxy_version:%s\r\n"
                     "uptime_in_seconds:%lld\r\n"
                     "momento_cache:%s\r\n"
                     "\r\n# Clients\r\n"
                     "connected_clients:%u\r\n"
                     "maxclients:%u\r\n"
                     "\r\n# Stats\r\n"
                     "total_connections_received:%llu\r\n"
                     "rejected_connections:%llu\r\n"
                     "total_commands_processed:%llu\r\n"
                     "total_net_input_bytes:%llu\r\n"
                     "total_net_output_bytes:%llu\r\n"
                     "keyspace_hits:%llu\r\n"
                     "keyspace_misses:%llu\r\n"
                     "momento_calls:%llu\r\n"
                     "momento_errors:%llu\r\n"
                     "momento_in_flight:%zu\r\n"
                     "protocol_errors:%llu\r\n"
                     "momento_batches:%llu\r\n"
                     "momento_batched_keys:%llu\r\n"
                     "momento_coalesced_gets:%llu\r\n",
                     momento_version(), (now_ms - b->started_ms) / 1000, b->cache,
                     s->connections, b->limits.max_connections,
                     (unsigned long long)s->connections_total,
                     (unsigned long long)s->connections_rejected,
                     (unsigned long long)s->commands, (unsigned long long)s->bytes_in,
                     (unsigned long long)s->bytes_out, (unsigned long long)s->hits,
                     (unsigned long long)s->misses, (unsigned long long)s->backend_calls,
                     (unsigned long long)s->backend_errors, momento_client_in_flight(b->client),
                     (unsigned long long)s->protocol_errors, (unsigned long long)bs.batches,
                     (unsigned long long)bs.batched_keys, (unsigned long long)cs.get_coalesced);
    resp_bulk(r, buf, (size_t)n);
    px_reply_end(r);
}

/* Redis's check of a client name (CLIENT SETNAME, HELLO SETNAME): only
 * '!' to '~', so that CLIENT LIST stays one line per client; empty is
 * allowed (it clears the name). */
static bool client_name_ok(const px_str *a)
{
    for (size_t i = 0; i < a->n; i++)
        if ((unsigned char)a->p[i] < '!' || (unsigned char)a->p[i] > '~')
            return false;
    return true;
}

static const char bad_client_name[] =
    "ERR Client names cannot contain spaces, newlines or special characters.";

static void cmd_client(px_reply *r, int argc, const px_str *argv)
{
    /* What client libraries send on connecting: answered, not acted on. */
    if (resp_arg_is(&argv[1], "id")) {
        if (subcommand_arity(r, "client", "id", argc, 2))
            resp_int(r, (long long)px_conn_id(px_reply_conn(r)));
    } else if (resp_arg_is(&argv[1], "getname")) {
        if (subcommand_arity(r, "client", "getname", argc, 2))
            resp_nil(r);
    } else if (resp_arg_is(&argv[1], "setname")) {
        if (subcommand_arity(r, "client", "setname", argc, 3)) {
            if (client_name_ok(&argv[2]))
                resp_ok(r);
            else
                resp_error(r, bad_client_name);
        }
    } else if (resp_arg_is(&argv[1], "setinfo") && argc == 4)
        /* Redis 7.2's (what redis-py sends on connecting); 7.0 has none. */
        resp_ok(r);
    else
        resp_errorf(r, "ERR unknown subcommand '%.*s'. Try CLIENT HELP.",
                    (int)(argv[1].n < 128 ? argv[1].n : 128), argv[1].p);
    px_reply_end(r);
}

/* ---- authentication ---- */

static const char wrongpass[] = "WRONGPASS invalid username-password pair or user is disabled.";

/* Redis's check of a user and a password: the proxy's one user is
 * "default", whose password is --requirepass; without one, any password
 * is the default user's (Redis's "nopass"). */
static bool auth_ok(const px_backend *b, const px_str *user, const px_str *pass)
{
    if (user->n != 7 || memcmp(user->p, "default", 7) != 0)
        return false;
    return !b->requirepass || px_secret_equal(b->requirepass, pass);
}

static void cmd_auth(px_reply *r, int argc, const px_str *argv)
{
    px_conn *c = px_reply_conn(r);
    px_backend *b = px_conn_backend(c);
    resp_state *st = px_conn_state(c);
    if (argc > 3) {
        resp_end_syntax(r);
        return;
    }
    if (argc == 2 && !b->requirepass) {
        resp_end_error(r, "ERR AUTH <password> called without any password configured for the "
                          "default user. Are you sure your configuration is correct?");
        return;
    }
    static const px_str default_user = {"default", 7};
    /* A failed AUTH leaves the connection as it was, as in Redis. */
    if (!auth_ok(b, argc == 3 ? &argv[1] : &default_user, &argv[argc - 1])) {
        resp_end_error(r, wrongpass);
        return;
    }
    st->authed = true;
    resp_end_ok(r);
}

/* ---- transactions' commands (run_command() starts EXEC's) ---- */

static void cmd_multi(px_reply *r, int argc, const px_str *argv)
{
    resp_state *st = px_conn_state(px_reply_conn(r));
    if (st->multi) {
        /* Answered, and the transaction goes on, as in Redis. */
        resp_end_error(r, "ERR MULTI calls can not be nested");
        return;
    }
    st->multi = calloc(1, sizeof(*st->multi));
    if (!st->multi) {
        resp_end_error(r, "ERR momento-proxy: out of memory");
        return;
    }
    resp_end_ok(r);
}

static void cmd_exec(px_reply *r, int argc, const px_str *argv)
{
    /* Never called: run_command() runs EXEC (its commands may wait). */
    resp_end_error(r, "ERR EXEC without MULTI");
}

static void cmd_discard(px_reply *r, int argc, const px_str *argv)
{
    resp_state *st = px_conn_state(px_reply_conn(r));
    if (!st->multi) {
        resp_end_error(r, "ERR DISCARD without MULTI");
        return;
    }
    multi_end(st);
    resp_end_ok(r);
}

static void cmd_watch(px_reply *r, int argc, const px_str *argv)
{
    /* Inside MULTI, Redis's own refusal. Outside, refused rather than
     * answered OK: EXEC could never abort when a watched key changed, so a
     * client's check-and-set would silently lose updates. */
    resp_state *st = px_conn_state(px_reply_conn(r));
    resp_end_error(r, st->multi ? "ERR WATCH inside MULTI is not allowed"
                                : "ERR momento-proxy: WATCH is not supported: Momento has no "
                                  "optimistic locking (no version of a key to check at EXEC), so "
                                  "the proxy could not abort a transaction whose watched key "
                                  "changed");
}

static void cmd_unwatch(px_reply *r, int argc, const px_str *argv)
{
    /* Nothing is ever watched (WATCH is refused), so there is nothing to
     * forget: Redis's answer. Clients send it when they clean up. */
    resp_end_ok(r);
}

static void cmd_hello(px_reply *r, int argc, const px_str *argv)
{
    /* Redis 7.0's order: the version (2 or 3), then each option as it
     * comes - AUTH user pass, SETNAME name - the first bad one answered;
     * an AUTH before it has authenticated all the same. */
    px_conn *c = px_reply_conn(r);
    px_backend *b = px_conn_backend(c);
    resp_state *st = px_conn_state(c);
    long long ver = 2;
    if (argc >= 2) {
        if (!resp_arg_ll(&argv[1], &ver)) {
            resp_end_error(r, "ERR Protocol version is not an integer or out of range");
            return;
        }
        if (ver < 2 || ver > 3) {
            resp_end_error(r, "NOPROTO unsupported protocol version");
            return;
        }
    }
    for (int i = 2; i < argc; i++) {
        int more = argc - 1 - i;
        if (resp_arg_is(&argv[i], "auth") && more >= 2) {
            if (!auth_ok(b, &argv[i + 1], &argv[i + 2])) {
                resp_end_error(r, wrongpass);
                return;
            }
            st->authed = true;
            i += 2;
        } else if (resp_arg_is(&argv[i], "setname") && more >= 1) {
            if (!client_name_ok(&argv[i + 1])) {
                resp_end_error(r, bad_client_name);
                return;
            }
            i++;
        } else {
            resp_errorf(r, "ERR Syntax error in HELLO option '%.*s'",
                        (int)(argv[i].n < 400 ? argv[i].n : 400), argv[i].p);
            px_reply_end(r);
            return;
        }
    }
    if (b->requirepass && !st->authed) {
        resp_end_error(r, "NOAUTH HELLO must be called with the client already authenticated, "
                          "otherwise the HELLO AUTH <user> <pass> option can be used to "
                          "authenticate the client and select the RESP protocol version at the "
                          "same time");
        return;
    }
    /* RESP3 is not served: a client asking for it falls back to RESP2 on
     * this answer, as it does with a Redis older than 6 (an AUTH option
     * has authenticated, so the AUTH such a client sends next succeeds). */
    if (ver != 2) {
        resp_end_error(r, "NOPROTO unsupported protocol version");
        return;
    }
    resp_array(r, 14);
    resp_bulk_str(r, "server");
    resp_bulk_str(r, "redis");
    resp_bulk_str(r, "version");
    resp_bulk_str(r, "7.0.0");
    resp_bulk_str(r, "proto");
    resp_int(r, 2);
    resp_bulk_str(r, "id");
    resp_int(r, (long long)px_conn_id(c));
    resp_bulk_str(r, "mode");
    resp_bulk_str(r, "standalone");
    resp_bulk_str(r, "role");
    resp_bulk_str(r, "master");
    resp_bulk_str(r, "modules");
    resp_array(r, 0);
    px_reply_end(r);
}

const resp_cmd resp_server_cmds[] = {
    {"ping", -1, cmd_ping},       {"echo", 2, cmd_echo},     {"quit", -1, cmd_quit},
    {"select", 2, cmd_select},    {"command", -1, cmd_command}, {"info", -1, cmd_info},
    {"client", -2, cmd_client},   {"hello", -1, cmd_hello},  {"auth", -2, cmd_auth},
    {"multi", 1, cmd_multi},      {"exec", 1, cmd_exec},     {"discard", 1, cmd_discard},
    {"watch", -2, cmd_watch},     {"unwatch", 1, cmd_unwatch}, {NULL, 0, NULL},
};
