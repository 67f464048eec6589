/* The memcached framing's cost does not grow with how a command is split
 * across reads (issue 47): proxy/memcache/mc_parse.c is built here with
 * MC_PARSE_COUNT, which counts every byte its passes look at, and each
 * command is parsed once whole and once fed as the proxy's feed gives it
 * its reads - the same first bytes, more after them, an mc_resume kept
 * between calls - in pieces of 1 to 64 bytes. Split, a command may cost
 * the whole parse plus one more pass over its bytes (the search for the
 * end of its line as it arrives), never a pass per read: a parser that
 * starts again from the first byte on every read costs its line (text) or
 * its header (binary) times the number of reads, here hundreds of
 * thousands of times over. Counted, not timed: no assertion depends on
 * the machine's speed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The parser itself, built into this test with its counter on (before
 * cmocka.h, whose fail() macro would rename the parser's fail()). */
#define MC_PARSE_COUNT
#include "../../proxy/memcache/mc_parse.c"

#include <cmocka.h>

#define BIG (8u * 1000u * 1000u) /* an 8 MB command, as the issue's */
#define MAX_ITEM (16u << 20)     /* so that it is awaited, not refused */

typedef struct cost {
    ssize_t k;        /* what the last call returned */
    size_t examined;  /* bytes looked at over every call */
    size_t calls;
} cost;

static cost text_whole(const char *p, size_t n, mc_text_cmd *cmd)
{
    mc_parse_examined = 0;
    cost c = {mc_text_parse(p, n, MAX_ITEM, cmd, NULL), 0, 1};
    c.examined = mc_parse_examined;
    return c;
}

/* Feeds p[0, n) as growing prefixes, `step` more bytes each time, to one
 * of the two parsers (out: its mc_text_cmd or mc_bin_req). */
static cost split(const char *p, size_t n, size_t step, bool binary, void *out)
{
    mc_resume rs = {0, 0};
    cost c = {0, 0, 0};
    mc_parse_examined = 0;
    for (size_t m = step; ; m += step) {
        if (m > n)
            m = n;
        c.k = binary ? mc_bin_parse(p, m, MAX_ITEM, out, &rs)
                     : mc_text_parse(p, m, MAX_ITEM, out, &rs);
        c.calls++;
        if (c.k != 0 || m == n)
            break;
    }
    c.examined = mc_parse_examined;
    return c;
}

static cost text_split(const char *p, size_t n, size_t step, mc_text_cmd *cmd)
{
    return split(p, n, step, false, cmd);
}

static cost bin_split(const char *p, size_t n, size_t step, mc_bin_req *req)
{
    return split(p, n, step, true, req);
}

/* `set k 0 0 8000000` and its data, one byte a read: the data block is
 * not looked at until it is all there, and the line is not read again
 * for every byte of it. */
static void test_set_data_block_one_byte_a_read(void **state)
{
    (void)state;
    const char *line = "set k 0 0 8000000\r\n";
    size_t ln = strlen(line), n = ln + BIG + 2;
    char *p = malloc(n);
    assert_non_null(p);
    memcpy(p, line, ln);
    memset(p + ln, 'v', BIG);
    memcpy(p + ln + BIG, "\r\n", 2);

    mc_text_cmd cmd = {0};
    cost whole = text_whole(p, n, &cmd);
    assert_int_equal(whole.k, (ssize_t)n);
    assert_int_equal(cmd.kind, MC_T_SET);
    assert_int_equal(cmd.data.n, BIG);

    mc_text_cmd cmd2 = {0};
    cost split = text_split(p, n, 1, &cmd2);
    assert_int_equal(split.k, (ssize_t)n);
    assert_int_equal(split.calls, n);
    assert_int_equal(cmd2.kind, MC_T_SET);
    assert_int_equal(cmd2.data.n, BIG);
    assert_ptr_equal(cmd2.data.p, p + ln);
    /* The whole parse, plus one pass over the line as it arrived, plus
     * the line's tokens read once when the data was found missing. */
    printf("# set of 8 MB: whole %zu bytes looked at, split in %zu reads %zu\n", whole.examined,
           split.calls, split.examined);
    assert_true(split.examined <= 2 * whole.examined);
    assert_true(split.examined <= 2 * n);
    mc_text_cmd_free(&cmd);
    mc_text_cmd_free(&cmd2);
    free(p);
}

/* A multi-get line of 2 MB (memcached lets only a get's line go past
 * 2048 bytes without its newline) in 64-byte reads: the search for the
 * newline goes on where the last one stopped. */
static void test_long_get_line_in_small_reads(void **state)
{
    (void)state;
    size_t keys = 2u * 1000u * 1000u / 8, n = 4 + keys * 8 + 2;
    char *p = malloc(n);
    assert_non_null(p);
    memcpy(p, "get ", 4);
    char *w = p + 4;
    for (size_t i = 0; i < keys; i++, w += 8) {
        char key[9];
        snprintf(key, sizeof(key), "k%06zu ", i % 1000000);
        memcpy(w, key, 8);
    }
    memcpy(w, "\r\n", 2);

    mc_text_cmd cmd = {0};
    cost whole = text_whole(p, n, &cmd);
    assert_int_equal(whole.k, (ssize_t)n);
    assert_int_equal(cmd.kind, MC_T_GET);
    assert_int_equal(cmd.nkeys, keys);

    mc_text_cmd cmd2 = {0};
    cost split = text_split(p, n, 64, &cmd2);
    assert_int_equal(split.k, (ssize_t)n);
    assert_int_equal(cmd2.kind, MC_T_GET);
    assert_int_equal(cmd2.nkeys, keys);
    assert_true(cmd2.keys[keys - 1].n == 7 && memcmp(cmd2.keys[keys - 1].p, "k", 1) == 0);
    printf("# get line of 2 MB: whole %zu bytes looked at, split in %zu reads %zu\n",
           whole.examined, split.calls, split.examined);
    /* The whole parse's three passes (newline, tokens, keys) plus one. */
    assert_true(split.examined <= whole.examined + n + 64);
    mc_text_cmd_free(&cmd);
    mc_text_cmd_free(&cmd2);
    free(p);
}

/* A short line split byte by byte, then another command after it in the
 * same reads: the resume state is the command's, cleared when it is
 * taken, so the next one parses from its own first byte. */
static void test_resume_cleared_between_commands(void **state)
{
    (void)state;
    const char *two = "set a 1 0 3\r\nxyz\r\nget a b\r\n";
    size_t n = strlen(two);
    mc_resume rs = {0, 0};
    mc_text_cmd cmd = {0};
    size_t off = 0, m = 1;
    int taken = 0;
    while (off < n) {
        ssize_t k = mc_text_parse(two + off, m, MAX_ITEM, &cmd, &rs);
        if (k == 0) {
            assert_true(m < n - off);
            m++;
            continue;
        }
        assert_true(k > 0);
        if (taken == 0) {
            assert_int_equal(cmd.kind, MC_T_SET);
            assert_int_equal(cmd.flags, 1);
            assert_int_equal(cmd.data.n, 3);
            assert_memory_equal(cmd.data.p, "xyz", 3);
        } else {
            assert_int_equal(cmd.kind, MC_T_GET);
            assert_int_equal(cmd.nkeys, 2);
        }
        assert_int_equal(rs.scanned, 0);
        assert_int_equal(rs.need, 0);
        taken++;
        off += (size_t)k;
        m = 1;
    }
    assert_int_equal(taken, 2);
    mc_text_cmd_free(&cmd);
}

/* A binary set with an 8 MB body, one byte a read: its header is read
 * once when it is whole and once when the body is, not once a read. */
static void test_binary_set_one_byte_a_read(void **state)
{
    (void)state;
    size_t keylen = 1, extlen = 8, body = extlen + keylen + BIG, n = MC_BIN_HEADER + body;
    unsigned char *p = calloc(1, n);
    assert_non_null(p);
    p[0] = MC_BIN_REQ;
    p[1] = MC_OP_SET;
    p[3] = (unsigned char)keylen;
    p[4] = (unsigned char)extlen;
    p[8] = (unsigned char)(body >> 24);
    p[9] = (unsigned char)(body >> 16);
    p[10] = (unsigned char)(body >> 8);
    p[11] = (unsigned char)body;
    p[MC_BIN_HEADER + extlen] = 'k';

    mc_bin_req req;
    mc_parse_examined = 0;
    ssize_t k = mc_bin_parse((const char *)p, n, MAX_ITEM, &req, NULL);
    size_t whole = mc_parse_examined;
    assert_int_equal(k, (ssize_t)n);
    assert_int_equal(req.kind, MC_B_SET);
    assert_int_equal(req.value.n, BIG);

    mc_bin_req req2;
    cost split = bin_split((const char *)p, n, 1, &req2);
    assert_int_equal(split.k, (ssize_t)n);
    assert_int_equal(req2.kind, MC_B_SET);
    assert_int_equal(req2.value.n, BIG);
    printf("# binary set of 8 MB: whole %zu bytes looked at, split in %zu reads %zu\n", whole,
           split.calls, split.examined);
    assert_true(split.examined <= 2 * whole);
    free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_set_data_block_one_byte_a_read),
        cmocka_unit_test(test_long_get_line_in_small_reads),
        cmocka_unit_test(test_resume_cleared_between_commands),
        cmocka_unit_test(test_binary_set_one_byte_a_read),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
