/* The proxy's RESP2 request framing (proxy/resp/resp_parse.c) fed the way a
 * connection feeds it: the unconsumed input grows by one read at a time,
 * may move between reads (proxy/conn.c compacts and reallocates its
 * buffer), and only whole commands are consumed. Whatever the split, the
 * commands and the error must be those of the input parsed in one piece,
 * the bytes the parser looks at must stay linear in the input (issue 47
 * item 4: an unfinished command was parsed again from its first byte on
 * every read), and an unfinished command must not cost a record per
 * argument (item 5). */
#include "../../proxy/resp/resp_parse.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_BULK (8u << 20)

/* An authenticated connection's limits (or one on a port without a
 * password), and one that has still to AUTH. */
static const resp_limits LIM = {MAX_BULK, false};
static const resp_limits UNAUTH = {MAX_BULK, true};

/* A growable byte string. */
typedef struct text {
    char *p;
    size_t n, cap;
} text;

static void put(text *t, const void *p, size_t n)
{
    if (t->n + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 256;
        while (cap < t->n + n + 1)
            cap *= 2;
        t->p = realloc(t->p, cap);
        assert_non_null(t->p);
        t->cap = cap;
    }
    memcpy(t->p + t->n, p, n);
    t->n += n;
    t->p[t->n] = '\0';
}

static void putf(text *t, const char *fmt, ...)
{
    char s[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(s, sizeof(s), fmt, ap);
    va_end(ap);
    assert_true(n >= 0 && (size_t)n < sizeof(s));
    put(t, s, (size_t)n);
}

/* A multibulk command of `argc` arguments, their lengths varied. */
static void big_command(text *t, int argc)
{
    putf(t, "*%d\r\n", argc);
    for (int i = 0; i < argc; i++) {
        char arg[64];
        int n = snprintf(arg, sizeof(arg), "arg%d-%.*s", i, i % 23, "xxxxxxxxxxxxxxxxxxxxxxxxx");
        putf(t, "$%d\r\n", n);
        put(t, arg, (size_t)n);
        put(t, "\r\n", 2);
    }
}

/* What a feed makes of `in`: each command as argc and its arguments, then
 * the error or what was left unconsumed. The input reaches the parser in
 * pieces of `piece` bytes (every length in `pieces`, cycled, when given),
 * like a connection that reads that much at a time; every `move_every`
 * reads the unconsumed bytes move to another buffer, the old one
 * overwritten. */
typedef struct outcome {
    text log;
    size_t scanned; /* the parser's counter at the end */
    size_t max_argv_bytes_unfinished;
} outcome;

static void feed(const char *in, size_t len, const size_t *pieces, size_t npieces,
                 int move_every, outcome *o)
{
    resp_args a = {0};
    char *bufs[2] = {malloc(len + 1), malloc(len + 1)};
    assert_non_null(bufs[0]);
    assert_non_null(bufs[1]);
    int cur = 0;
    size_t off = 0, avail = 0; /* in[off, avail) is buffered, unconsumed */
    memset(o, 0, sizeof(*o));
    for (size_t reads = 0; avail < len; reads++) {
        size_t piece = pieces[reads % npieces];
        size_t before = avail - off;
        avail = avail + piece < len ? avail + piece : len;
        if (move_every && reads % (size_t)move_every == 0) {
            /* The buffer moved: the bytes are the same, the addresses not. */
            cur ^= 1;
            memset(bufs[cur] + before, 0x5a, len + 1 - before);
            memcpy(bufs[cur], in + off, before);
            memset(bufs[cur ^ 1], 0xa5, before);
        }
        memcpy(bufs[cur] + before, in + off + before, avail - off - before);
        size_t used = 0;
        for (;;) {
            const char *err = NULL;
            const char *p = bufs[cur] + used;
            ssize_t n = resp_parse(p, avail - off - used, &LIM, &a, &err);
            if (n < 0) {
                assert_int_equal(n, -1);
                putf(&o->log, "error: %s\n", err);
                o->scanned = a.scanned;
                resp_args_free(&a);
                free(bufs[0]);
                free(bufs[1]);
                return;
            }
            if (n == 0) {
                size_t argv_bytes = (size_t)a.cap * sizeof(*a.argv);
                if (argv_bytes > o->max_argv_bytes_unfinished)
                    o->max_argv_bytes_unfinished = argv_bytes;
                break;
            }
            assert_true((size_t)n <= avail - off - used);
            putf(&o->log, "%d:", a.argc);
            for (int i = 0; i < a.argc; i++) {
                putf(&o->log, " %zu=", a.argv[i].n);
                put(&o->log, a.argv[i].p, a.argv[i].n);
            }
            put(&o->log, "\n", 1);
            resp_parse_done(&a);
            used += (size_t)n;
        }
        /* The connection drops what was consumed; the rest stays at the
         * start of its buffer. */
        memmove(bufs[cur], bufs[cur] + used, avail - off - used);
        off += used;
    }
    putf(&o->log, "left: %zu\n", len - off);
    o->scanned = a.scanned;
    resp_args_free(&a);
    free(bufs[0]);
    free(bufs[1]);
}

static void feed_whole(const char *in, size_t len, outcome *o)
{
    size_t all = len ? len : 1;
    feed(in, len, &all, 1, 0, o);
}

/* One large command and a small one after it, read 1, 7, 64 or 4096
 * bytes at a time, or 200 arguments at a time (issue 47's measure): the
 * same commands as in one piece, with the parser looking at each byte at
 * most about twice. */
static void test_large_command_in_pieces(void **state)
{
    (void)state;
    text in = {0};
    big_command(&in, 20000);
    put(&in, "*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\n", 22);
    outcome whole;
    feed_whole(in.p, in.n, &whole);
    assert_true(whole.scanned <= 2 * in.n + 64);
    assert_non_null(strstr(whole.log.p, "\n2: 4=ECHO 2=hi\nleft: 0\n"));

    size_t avg_arg = in.n / 20000;
    const size_t sizes[] = {1, 7, 64, 4096, 200 * avg_arg};
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        outcome split;
        /* About 40 moves in all: each costs the test a copy of the input. */
        feed(in.p, in.n, &sizes[s], 1, (int)(in.n / sizes[s] / 40 + 1), &split);
        assert_string_equal(split.log.p, whole.log.p);
        /* Each byte once where lines are searched and once more where the
         * whole command's arguments are listed: linear, whatever the reads. */
        if (split.scanned > 2 * in.n + 64)
            fail_msg("read %zu bytes at a time: the parser looked at %zu bytes of %zu", sizes[s],
                     split.scanned, in.n);
        /* Nothing recorded per argument before the command is whole. */
        if (split.max_argv_bytes_unfinished > 16 * sizeof(px_str))
            fail_msg("read %zu bytes at a time: %zu bytes of argv for an unfinished command",
                     sizes[s], split.max_argv_bytes_unfinished);
        free(split.log.p);
    }
    free(whole.log.p);
    free(in.p);
}

/* Pipelined commands, inline ones among them, and inputs that end in each
 * of the protocol errors, split at every byte and in irregular pieces:
 * the same commands and the same error as in one piece. */
static void test_every_split_same_outcome(void **state)
{
    (void)state;
    static const char *const inputs[] = {
        "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nv\r\n\r\n\r\nPING\r\n*0\r\n*-1\r\nECHO \"a b\" 'c'\n",
        "*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nECHO\r\n$x\r\n",
        "*2\r\n$4\r\nECHO\r\n#1\r\n",
        "*2\r\n$4\r\nECHO\r\n$-1\r\n",
        "*abc\r\n",
        "*1048577\r\n$4\r\nPING\r\n",
        "PING\r\nECHO \"unbalanced\r\n",
        "*1\r\n$4\r\nPING\r\nGET \"a\\x41\\n\" x\r\n*1\r\n$3\r\nGET\r\nZ",
        "*2\r\n$0\r\n\r\n$3\r\na\r\n\r\n*1\r\n$",
    };
    for (size_t i = 0; i < sizeof(inputs) / sizeof(inputs[0]); i++) {
        size_t len = strlen(inputs[i]);
        outcome whole;
        feed_whole(inputs[i], len, &whole);
        const size_t irregular[] = {3, 1, 5, 2, 8, 1, 1, 13};
        for (size_t piece = 1; piece <= len; piece++) {
            outcome split;
            feed(inputs[i], len, &piece, 1, 3, &split);
            assert_string_equal(split.log.p, whole.log.p);
            free(split.log.p);
        }
        outcome split;
        feed(inputs[i], len, irregular, sizeof(irregular) / sizeof(irregular[0]), 2, &split);
        assert_string_equal(split.log.p, whole.log.p);
        free(split.log.p);
        free(whole.log.p);
    }
}

/* Redis's answers for the same bytes: a count over 1024*1024 arguments is
 * refused (RESP_MAX_MULTIBULK); a line is searched as a C string, so a NUL
 * byte before its end leaves it unfinished, as redis-server does (and it
 * fails as too long once 64 KiB are buffered). */
static void test_redis_limits(void **state)
{
    (void)state;
    resp_args a = {0};
    const char *err = NULL;
    const char *max = "*1048576\r\n$4\r\nPING\r\n";
    assert_int_equal(resp_parse(max, strlen(max), &LIM, &a, &err), 0);
    resp_args_free(&a);
    const char *over = "*1048577\r\n";
    assert_int_equal(resp_parse(over, strlen(over), &LIM, &a, &err), -1);
    assert_string_equal(err, "Protocol error: invalid multibulk length");
    resp_args_free(&a);

    const char nul_count[] = "*1\0\r\n$4\r\nPING\r\n";
    assert_int_equal(resp_parse(nul_count, sizeof(nul_count) - 1, &LIM, &a, &err), 0);
    resp_args_free(&a);
    const char nul_inline[] = "PI\0NG\r\n";
    assert_int_equal(resp_parse(nul_inline, sizeof(nul_inline) - 1, &LIM, &a, &err), 0);
    resp_args_free(&a);
    char *big = calloc(1, RESP_MAX_INLINE + 16);
    assert_non_null(big);
    memcpy(big, "PING", 4);
    assert_int_equal(resp_parse(big, RESP_MAX_INLINE + 16, &LIM, &a, &err), -1);
    assert_string_equal(err, "Protocol error: too big inline request");
    resp_args_free(&a);
    free(big);
    /* A NUL inside an argument's data is data. */
    const char nul_data[] = "*1\r\n$3\r\na\0b\r\n";
    assert_int_equal(resp_parse(nul_data, sizeof(nul_data) - 1, &LIM, &a, &err),
                     (ssize_t)sizeof(nul_data) - 1);
    assert_int_equal(a.argc, 1);
    assert_memory_equal(a.argv[0].p, "a\0b", 3);
    resp_args_free(&a);
}

/* Before AUTH, Redis 7's bounds (redis-server --requirepass answers the
 * same bytes the same way; tests/proxy/auth.py compares them): refused at
 * the line that announces too much, with only that line in, so nothing
 * past it is awaited; the proto-max-bulk-len check comes first, as in
 * Redis. Authenticated, the same lines are taken. */
static void test_unauthenticated_limits(void **state)
{
    (void)state;
    static const struct {
        const char *in;
        const char *err; /* NULL: accepted (a command, or more awaited) */
    } cases[] = {
        {"*10\r\n", NULL},
        {"*11\r\n", "Protocol error: unauthenticated multibulk length"},
        {"*2147483647\r\n", "Protocol error: unauthenticated multibulk length"},
        {"*2147483648\r\n", "Protocol error: invalid multibulk length"},
        {"*2\r\n$3\r\nGET\r\n$16384\r\n", NULL},
        {"*2\r\n$3\r\nGET\r\n$16385\r\n", "Protocol error: unauthenticated bulk length"},
        {"*1\r\n$8388000\r\n", "Protocol error: unauthenticated bulk length"},
        {"*1\r\n$8388609\r\n", "Protocol error: invalid bulk length"},
        {"*-1\r\n", NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        resp_args a = {0};
        const char *err = NULL;
        const char *in = cases[i].in;
        ssize_t n = resp_parse(in, strlen(in), &UNAUTH, &a, &err);
        if (cases[i].err) {
            assert_int_equal(n, -1);
            assert_string_equal(err, cases[i].err);
        } else {
            assert_true(n >= 0);
        }
        resp_args_free(&a);
        /* The unauthenticated bounds only: authenticated, the same
         * lines are taken (but for what is over proto-max-bulk-len). */
        bool over_max = cases[i].err && strstr(cases[i].err, "invalid");
        bool over_auth_max = strcmp(in, "*2147483647\r\n") == 0; /* RESP_MAX_MULTIBULK */
        if (!over_max && !over_auth_max)
            assert_true(resp_parse(in, strlen(in), &LIM, &a, &err) >= 0);
        resp_args_free(&a);
    }
    /* Ten arguments of 16384 bytes: a whole command before AUTH. */
    text t = {0};
    putf(&t, "*10\r\n");
    char *arg = malloc(RESP_UNAUTH_MAX_BULK);
    assert_non_null(arg);
    memset(arg, 'a', RESP_UNAUTH_MAX_BULK);
    for (int i = 0; i < 10; i++) {
        putf(&t, "$%d\r\n", RESP_UNAUTH_MAX_BULK);
        put(&t, arg, RESP_UNAUTH_MAX_BULK);
        put(&t, "\r\n", 2);
    }
    resp_args a = {0};
    const char *err = NULL;
    assert_int_equal(resp_parse(t.p, t.n, &UNAUTH, &a, &err), (ssize_t)t.n);
    assert_int_equal(a.argc, 10);
    resp_args_free(&a);
    free(arg);
    free(t.p);
}

/* A command that must wait (its keys are in use) is asked for again,
 * maybe after its bytes moved: the same command, not parsed again. */
static void test_waiting_command_not_parsed_again(void **state)
{
    (void)state;
    text in = {0};
    big_command(&in, 5000);
    resp_args a = {0};
    const char *err = NULL;
    ssize_t n = resp_parse(in.p, in.n, &LIM, &a, &err);
    assert_int_equal(n, (ssize_t)in.n);
    assert_int_equal(a.argc, 5000);
    size_t scanned = a.scanned;
    char *moved = malloc(in.n);
    assert_non_null(moved);
    memcpy(moved, in.p, in.n);
    memset(in.p, 0, in.n);
    for (int i = 0; i < 1000; i++) {
        const char *p = i % 2 ? moved : in.p;
        if (i % 2 == 0)
            memcpy(in.p, moved, in.n);
        else
            memset(in.p, 0, in.n);
        assert_int_equal(resp_parse(p, in.n, &LIM, &a, &err), (ssize_t)in.n);
        assert_int_equal(a.argc, 5000);
        assert_ptr_equal(a.argv[4999].p, p + in.n - 2 - a.argv[4999].n);
        assert_memory_equal(a.argv[4999].p, "arg4999-", 8);
    }
    assert_int_equal(a.scanned, scanned);
    resp_parse_done(&a);
    resp_args_free(&a);
    free(moved);
    free(in.p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_large_command_in_pieces),
        cmocka_unit_test(test_every_split_same_outcome),
        cmocka_unit_test(test_redis_limits),
        cmocka_unit_test(test_unauthenticated_limits),
        cmocka_unit_test(test_waiting_command_not_parsed_again),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
