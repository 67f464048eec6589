/* memcached framing (mc_parse.h), following memcached 1.6's proto_text.c
 * (tokenize_command, process_command_ascii and the process_*_command
 * functions), util.c (safe_strto*) and proto_bin.c (dispatch_bin_command):
 * the same answers for the same bytes. */
#include "memcache/mc_parse.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#ifdef MC_PARSE_COUNT
size_t mc_parse_examined;
#define EXAMINED(k) (mc_parse_examined += (size_t)(k))
#else
#define EXAMINED(k) ((void)0)
#endif

/* ---- numbers, as memcached's util.c reads them ---- */

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

/* strtoull's grammar over s[0, n): leading white space, a sign, digits.
 * Returns the index after the digits (0 when none: str == endptr), with
 * *overflow for ERANGE and the value negated for '-' as strtoull does. */
static size_t scan_ull(const char *s, size_t n, uint64_t *out, bool *overflow, bool *neg)
{
    size_t i = 0;
    while (i < n && is_space(s[i]))
        i++;
    *neg = false;
    if (i < n && (s[i] == '+' || s[i] == '-')) {
        *neg = s[i] == '-';
        i++;
    }
    size_t start = i;
    uint64_t v = 0;
    *overflow = false;
    for (; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
        unsigned d = (unsigned)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            *overflow = true;
        v = v * 10 + d;
    }
    if (i == start)
        return 0;
    *out = *neg ? (uint64_t)0 - v : v;
    return i;
}

/* After the number: the end of the token, or white space (memcached's
 * `xisspace(*endptr) || *endptr == '\0'`; a token ends where memcached
 * wrote its NUL). */
static bool number_ends(const char *s, size_t n, size_t end)
{
    return end == n || is_space(s[end]) || s[end] == '\0';
}

bool mc_strtoull(const char *s, size_t n, uint64_t *out)
{
    uint64_t v;
    bool overflow, neg;
    size_t end = scan_ull(s, n, &v, &overflow, &neg);
    if (end == 0 || overflow || !number_ends(s, n, end))
        return false;
    /* "-1" reads as a huge number: refused when it looks negative. */
    if ((int64_t)v < 0 && memchr(s, '-', end))
        return false;
    *out = v;
    return true;
}

bool mc_strtol32(const char *s, size_t n, int32_t *out)
{
    /* strtol: the same grammar, within long; then memcached 1.6.18 keeps
     * the low 32 bits (`*out = l`, no INT_MAX check): exptime 4102444800
     * is a negative time, expired at once; 4294967396 is 100 seconds;
     * flush_all 4294967296 is a flush now. */
    uint64_t v;
    bool overflow, neg;
    size_t end = scan_ull(s, n, &v, &overflow, &neg);
    if (end == 0 || !number_ends(s, n, end))
        return false;
    uint64_t mag = neg ? (uint64_t)0 - v : v;
    if (overflow || (!neg && mag > (uint64_t)LONG_MAX) || (neg && mag > (uint64_t)LONG_MAX + 1))
        return false; /* ERANGE */
    int64_t l = neg ? (int64_t)(0 - mag) : (int64_t)mag;
    *out = (int32_t)(uint32_t)(uint64_t)l;
    return true;
}

/* ---- the text protocol ---- */

#define MAX_TOKENS 8 /* more than any command but the gets takes */

typedef struct tokens {
    px_str t[MAX_TOKENS];
    size_t n;      /* tokens seen, even past MAX_TOKENS */
} tokens;

/* The next word of p[0..n) from *i on, words being separated by spaces
 * (only ' ', as memcached's tokenize_command has them): false when there
 * is none; else the word, *i then past it. A command line and a get's
 * keys are read alike. */
static bool next_word(const char *p, size_t n, size_t *i, px_str *word)
{
    while (*i < n && p[*i] == ' ')
        (*i)++;
    if (*i == n)
        return false;
    size_t s = *i;
    while (*i < n && p[*i] != ' ')
        (*i)++;
    *word = (px_str){p + s, *i - s};
    return true;
}

/* memcached's tokenize_command: the line's words. */
static void tokenize(const char *p, size_t n, tokens *tk)
{
    EXAMINED(n);
    tk->n = 0;
    size_t i = 0;
    px_str w;
    while (next_word(p, n, &i, &w)) {
        if (tk->n < MAX_TOKENS)
            tk->t[tk->n] = w;
        tk->n++;
    }
}

static bool tok_is(const px_str *t, const char *s)
{
    size_t n = strlen(s);
    return t->n == n && memcmp(t->p, s, n) == 0;
}

/* memcached's set_noreply_maybe: the last token is "noreply". */
static bool noreply_maybe(const tokens *tk)
{
    return tk->n > 1 && tk->n <= MAX_TOKENS && tok_is(&tk->t[tk->n - 1], "noreply");
}

static void fail(mc_text_cmd *cmd, const char *reply)
{
    cmd->kind = MC_T_ERROR;
    cmd->reply = cmd->noreply ? NULL : reply;
}

static bool keys_room(mc_text_cmd *cmd, size_t n)
{
    if (n <= cmd->keys_cap)
        return true;
    size_t cap = cmd->keys_cap ? cmd->keys_cap : 16;
    while (cap < n)
        cap *= 2;
    px_str *k = realloc(cmd->keys, cap * sizeof(*k));
    if (!k)
        return false;
    cmd->keys = k;
    cmd->keys_cap = cap;
    return true;
}

/* get, gets, gat, gats: every word after the command (after the exptime
 * for gat/gats) is a key; memcached reads any number of them. */
static bool parse_keys(const char *line, size_t n, size_t skip_words, mc_text_cmd *cmd)
{
    size_t i = 0, word = 0;
    cmd->nkeys = 0;
    EXAMINED(n);
    px_str w;
    while (next_word(line, n, &i, &w)) {
        if (word++ < skip_words)
            continue;
        if (w.n > MC_KEY_MAX) {
            if ((cmd->kind == MC_T_GAT || cmd->kind == MC_T_GATS) && cmd->nkeys > 0) {
                /* memcached has touched the keys before it when it finds
                 * it too long: they are touched, the answer the error. */
                cmd->bad_key = true;
                return true;
            }
            fail(cmd, "CLIENT_ERROR bad command line format");
            return true;
        }
        if (!keys_room(cmd, cmd->nkeys + 1))
            return false;
        cmd->keys[cmd->nkeys++] = w;
    }
    return true;
}

/* set, add, replace, append, prepend, cas: the line, then the data block
 * (process_update_command). Returns the bytes taken, 0 for more. */
static ssize_t parse_storage(const char *p, size_t n, size_t line_len, const tokens *tk,
                             size_t max_item, mc_text_cmd *cmd, mc_resume *rs)
{
    bool cas = cmd->kind == MC_T_CAS;
    cmd->noreply = noreply_maybe(tk);
    cmd->key = tk->t[1];
    if (cmd->key.n > MC_KEY_MAX) {
        fail(cmd, "CLIENT_ERROR bad command line format");
        return (ssize_t)line_len;
    }
    uint64_t flags;
    int32_t exptime, vlen;
    if (!mc_strtoull(tk->t[2].p, tk->t[2].n, &flags) ||
        !mc_strtol32(tk->t[3].p, tk->t[3].n, &exptime) ||
        !mc_strtol32(tk->t[4].p, tk->t[4].n, &vlen)) {
        fail(cmd, "CLIENT_ERROR bad command line format");
        return (ssize_t)line_len;
    }
    /* memcached keeps the flags in 32 bits, dropping the rest. */
    cmd->flags = (uint32_t)flags;
    cmd->exptime = exptime;
    if (cas && !mc_strtoull(tk->t[5].p, tk->t[5].n, &cmd->cas)) {
        fail(cmd, "CLIENT_ERROR bad command line format");
        return (ssize_t)line_len;
    }
    if (vlen < 0 || vlen > INT_MAX - 2) {
        fail(cmd, "CLIENT_ERROR bad command line format");
        return (ssize_t)line_len;
    }
    size_t need = (size_t)vlen + 2;
    if ((size_t)vlen > max_item || MC_FLAGS_BYTES + cmd->key.n + (size_t)vlen > max_item) {
        /* Answered now; the data is skipped as it comes. */
        cmd->too_large = true;
        cmd->swallow = need;
        return (ssize_t)line_len;
    }
    if (n - line_len < need) {
        /* Not looked at again until the data block is all here. */
        if (rs)
            rs->need = line_len + need;
        return 0;
    }
    EXAMINED(2);
    const char *d = p + line_len;
    if (d[vlen] != '\r' || d[vlen + 1] != '\n') {
        /* memcached reads exactly the announced bytes and then checks
         * their end; it goes on reading commands after them. */
        fail(cmd, "CLIENT_ERROR bad data chunk");
        return (ssize_t)(line_len + need);
    }
    cmd->data = (px_str){d, (size_t)vlen};
    return (ssize_t)(line_len + need);
}

static bool want(const tokens *tk, size_t a, size_t b)
{
    return tk->n == a || tk->n == b;
}

/* incr, decr and touch: `<command> <key> <number> [noreply]`, refused as
 * memcached refuses them. False when the line has failed (cmd says how);
 * true when the number, tk->t[2], is the command's to read. */
static bool key_number_line(const tokens *tk, mc_text_cmd *cmd)
{
    if (!want(tk, 3, 4)) {
        fail(cmd, "ERROR");
        return false;
    }
    cmd->noreply = noreply_maybe(tk);
    cmd->key = tk->t[1];
    if (cmd->key.n > MC_KEY_MAX) {
        fail(cmd, "CLIENT_ERROR bad command line format");
        return false;
    }
    return true;
}

/* Whether memcached lets a line run past MC_LINE_MAX: only a get or gets
 * (after at most 100 spaces) may. */
static bool long_line_allowed(const char *p, size_t n)
{
    size_t s = 0;
    while (s < n && p[s] == ' ')
        s++;
    EXAMINED(s + 5);
    return s <= 100 && ((n - s >= 4 && memcmp(p + s, "get ", 4) == 0) ||
                        (n - s >= 5 && memcmp(p + s, "gets ", 5) == 0));
}

static ssize_t text_parse(const char *p, size_t n, size_t max_item, mc_text_cmd *cmd,
                          mc_resume *rs)
{
    cmd->kind = MC_T_ERROR;
    cmd->reply = NULL;
    cmd->close = cmd->noreply = cmd->too_large = cmd->bad_key = false;
    cmd->swallow = 0;
    cmd->nkeys = 0;
    cmd->key = cmd->data = cmd->arg = (px_str){"", 0};
    cmd->flags = 0;
    cmd->exptime = 0;
    cmd->cas = cmd->delta = 0;

    if (rs && n < rs->need)
        return 0;
    /* The bytes searched before hold no newline: search on after them. */
    size_t from = rs && rs->scanned <= n ? rs->scanned : 0;
    const char *nl = memchr(p + from, '\n', n - from);
    EXAMINED(nl ? (size_t)(nl - p) + 1 - from : n - from);
    if (!nl) {
        /* A line already let past MC_LINE_MAX is a multi-get's. */
        bool let_past = rs && rs->scanned > MC_LINE_MAX;
        if (n > MC_LINE_MAX && !let_past && !long_line_allowed(p, n)) {
            /* memcached allows an endless line only to a multi-get; any
             * other it hangs up on, without an answer. */
            cmd->close = true;
            return (ssize_t)n;
        }
        if (rs)
            rs->scanned = n;
        return 0;
    }
    size_t line_len = (size_t)(nl - p) + 1;
    if (line_len > MC_READ_BUF && !long_line_allowed(p, line_len)) {
        /* Whole, but longer than memcached's read buffer: memcached never
         * sees its newline, so it hangs up whatever the reads (a shorter
         * line past MC_LINE_MAX it serves when it comes in one read). */
        cmd->close = true;
        return (ssize_t)line_len;
    }
    size_t len = line_len - 1;
    if (len > 0 && p[len - 1] == '\r')
        len--;

    tokens tk;
    tokenize(p, len, &tk);
    if (tk.n == 0) {
        fail(cmd, "ERROR");
        return (ssize_t)line_len;
    }
    const px_str *c = &tk.t[0];

    /* The get family: memcached's dispatch wants a key (or gat's exptime). */
    if (c->n > 0 && c->p[0] == 'g') {
        bool get = tok_is(c, "get"), gets = tok_is(c, "gets");
        bool gat = tok_is(c, "gat"), gats = tok_is(c, "gats");
        if (tk.n < 2 || !(get || gets || gat || gats)) {
            fail(cmd, "ERROR");
            return (ssize_t)line_len;
        }
        cmd->kind = get ? MC_T_GET : gets ? MC_T_GETS : gat ? MC_T_GAT : MC_T_GATS;
        if ((gat || gats) && !mc_strtol32(tk.t[1].p, tk.t[1].n, &cmd->exptime)) {
            fail(cmd, "CLIENT_ERROR invalid exptime argument");
            return (ssize_t)line_len;
        }
        if (!parse_keys(p, len, (gat || gats) ? 2 : 1, cmd))
            return -1;
        return (ssize_t)line_len;
    }

    static const struct {
        const char *name;
        mc_text_kind kind;
    } storage[] = {
        {"set", MC_T_SET},         {"add", MC_T_ADD},         {"replace", MC_T_REPLACE},
        {"append", MC_T_APPEND},   {"prepend", MC_T_PREPEND}, {"cas", MC_T_CAS},
    };
    for (size_t i = 0; i < sizeof(storage) / sizeof(storage[0]); i++) {
        if (!tok_is(c, storage[i].name))
            continue;
        cmd->kind = storage[i].kind;
        if (cmd->kind == MC_T_CAS ? !want(&tk, 6, 7) : !want(&tk, 5, 6)) {
            fail(cmd, "ERROR");
            return (ssize_t)line_len;
        }
        return parse_storage(p, n, line_len, &tk, max_item, cmd, rs);
    }

    if (tok_is(c, "incr") || tok_is(c, "decr")) {
        cmd->kind = c->p[0] == 'i' ? MC_T_INCR : MC_T_DECR;
        if (key_number_line(&tk, cmd) && !mc_strtoull(tk.t[2].p, tk.t[2].n, &cmd->delta))
            fail(cmd, "CLIENT_ERROR invalid numeric delta argument");
        return (ssize_t)line_len;
    }
    if (tok_is(c, "delete")) {
        cmd->kind = MC_T_DELETE;
        if (tk.n < 2 || tk.n > 4) {
            fail(cmd, "ERROR");
            return (ssize_t)line_len;
        }
        if (tk.n > 2) {
            /* "delete <key> 0" is an old form memcached still takes. */
            bool hold_zero = tok_is(&tk.t[2], "0");
            cmd->noreply = noreply_maybe(&tk);
            bool valid = (tk.n == 3 && (hold_zero || cmd->noreply)) ||
                         (tk.n == 4 && hold_zero && cmd->noreply);
            if (!valid) {
                fail(cmd, "CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]");
                return (ssize_t)line_len;
            }
        }
        cmd->key = tk.t[1];
        if (cmd->key.n > MC_KEY_MAX)
            fail(cmd, "CLIENT_ERROR bad command line format");
        return (ssize_t)line_len;
    }
    if (tok_is(c, "touch")) {
        cmd->kind = MC_T_TOUCH;
        if (key_number_line(&tk, cmd) && !mc_strtol32(tk.t[2].p, tk.t[2].n, &cmd->exptime))
            fail(cmd, "CLIENT_ERROR invalid exptime argument");
        return (ssize_t)line_len;
    }
    if (tok_is(c, "version")) {
        cmd->kind = MC_T_VERSION;
        return (ssize_t)line_len;
    }
    if (tok_is(c, "quit")) {
        cmd->kind = MC_T_QUIT;
        return (ssize_t)line_len;
    }
    if (tok_is(c, "stats")) {
        cmd->kind = MC_T_STATS;
        if (tk.n > 1)
            cmd->arg = tk.t[1];
        return (ssize_t)line_len;
    }
    if (tok_is(c, "verbosity")) {
        cmd->kind = MC_T_VERBOSITY;
        if (!want(&tk, 2, 3)) {
            fail(cmd, "ERROR");
            return (ssize_t)line_len;
        }
        cmd->noreply = noreply_maybe(&tk);
        uint64_t level;
        if (!mc_strtoull(tk.t[1].p, tk.t[1].n, &level))
            fail(cmd, "CLIENT_ERROR bad command line format");
        return (ssize_t)line_len;
    }
    if (tok_is(c, "flush_all")) {
        cmd->kind = MC_T_FLUSH_ALL;
        if (tk.n > 3) {
            fail(cmd, "ERROR");
            return (ssize_t)line_len;
        }
        cmd->noreply = noreply_maybe(&tk);
        if (tk.n != (cmd->noreply ? 2u : 1u) &&
            !mc_strtol32(tk.t[1].p, tk.t[1].n, &cmd->exptime))
            fail(cmd, "CLIENT_ERROR invalid exptime argument");
        return (ssize_t)line_len;
    }
    /* memcached hangs up on what looks like an HTTP request. */
    if (tk.n <= MAX_TOKENS && tk.t[tk.n - 1].n >= 5 && memcmp(tk.t[tk.n - 1].p, "HTTP/", 5) == 0) {
        cmd->close = true;
        return (ssize_t)line_len;
    }
    fail(cmd, "ERROR");
    return (ssize_t)line_len;
}

ssize_t mc_text_parse(const char *p, size_t n, size_t max_item, mc_text_cmd *cmd, mc_resume *rs)
{
    ssize_t k = text_parse(p, n, max_item, cmd, rs);
    if (k != 0 && rs)
        *rs = (mc_resume){0, 0}; /* the next call starts a new command */
    return k;
}

void mc_text_cmd_free(mc_text_cmd *cmd)
{
    free(cmd->keys);
    cmd->keys = NULL;
    cmd->keys_cap = cmd->nkeys = 0;
}

/* ---- the binary protocol ---- */

static uint16_t be16(const unsigned char *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint64_t be64(const unsigned char *p)
{
    return (uint64_t)be32(p) << 32 | be32(p + 4);
}

static ssize_t bin_parse(const char *p, size_t n, size_t max_body, mc_bin_req *req,
                         mc_resume *rs)
{
    memset(req, 0, sizeof(*req));
    if (rs && n < rs->need)
        return 0;
    /* memcached looks at the magic once a whole header is in. */
    if (n < MC_BIN_HEADER) {
        if (rs)
            rs->need = MC_BIN_HEADER;
        return 0;
    }
    EXAMINED(MC_BIN_HEADER);
    const unsigned char *h = (const unsigned char *)p;
    if (h[0] != MC_BIN_REQ)
        return -1;
    req->opcode = h[1];
    uint16_t keylen = be16(h + 2);
    uint8_t extlen = h[4];
    uint32_t bodylen = be32(h + 8);
    req->opaque = be32(h + 12);
    req->cas = be64(h + 16);

    /* memcached: a key and extras longer than the body is a request it
     * cannot frame; it answers UNKNOWN_COMMAND and hangs up. */
    if ((uint64_t)keylen + extlen > bodylen) {
        req->kind = MC_B_UNKNOWN;
        req->hangup = true;
        return MC_BIN_HEADER;
    }
    size_t vlen = bodylen - keylen - extlen;

    /* Each request's extras, key and value lengths as memcached checks
     * them; a request out of shape is answered EINVAL (MC_B_INVALID). */
    uint8_t op = req->opcode;
    bool valid;
    switch (op) {
    case MC_OP_GET: case MC_OP_GETQ: case MC_OP_GETK: case MC_OP_GETKQ:
        req->kind = MC_B_GET;
        req->quiet = op == MC_OP_GETQ || op == MC_OP_GETKQ;
        req->with_key = op == MC_OP_GETK || op == MC_OP_GETKQ;
        valid = extlen == 0 && keylen != 0 && vlen == 0;
        break;
    case MC_OP_TOUCH: case MC_OP_GAT: case MC_OP_GATQ: case MC_OP_GATK: case MC_OP_GATKQ:
        req->kind = MC_B_GAT;
        req->quiet = op == MC_OP_GATQ || op == MC_OP_GATKQ;
        req->with_key = op == MC_OP_GATK || op == MC_OP_GATKQ;
        valid = extlen == 4 && keylen != 0 && vlen == 0;
        break;
    case MC_OP_SET: case MC_OP_ADD: case MC_OP_REPLACE:
    case MC_OP_SETQ: case MC_OP_ADDQ: case MC_OP_REPLACEQ:
        req->kind = MC_B_SET;
        req->quiet = op >= MC_OP_SETQ;
        valid = extlen == 8 && keylen != 0;
        break;
    case MC_OP_APPEND: case MC_OP_PREPEND: case MC_OP_APPENDQ: case MC_OP_PREPENDQ:
        req->kind = MC_B_APPEND;
        req->quiet = op >= MC_OP_APPENDQ;
        valid = extlen == 0 && keylen != 0;
        break;
    case MC_OP_DELETE: case MC_OP_DELETEQ:
        req->kind = MC_B_DELETE;
        req->quiet = op == MC_OP_DELETEQ;
        valid = extlen == 0 && keylen != 0 && vlen == 0;
        break;
    case MC_OP_INCREMENT: case MC_OP_DECREMENT: case MC_OP_INCREMENTQ: case MC_OP_DECREMENTQ:
        req->kind = MC_B_ARITH;
        req->quiet = op >= MC_OP_INCREMENTQ;
        valid = extlen == 20 && keylen != 0 && vlen == 0;
        break;
    case MC_OP_QUIT: case MC_OP_QUITQ:
        req->kind = MC_B_QUIT;
        req->quiet = op == MC_OP_QUITQ;
        valid = bodylen == 0;
        break;
    case MC_OP_FLUSH: case MC_OP_FLUSHQ:
        req->kind = MC_B_FLUSH;
        req->quiet = op == MC_OP_FLUSHQ;
        valid = (extlen == 0 || extlen == 4) && keylen == 0 && vlen == 0;
        break;
    case MC_OP_NOOP:
        req->kind = MC_B_NOOP;
        valid = bodylen == 0;
        break;
    case MC_OP_VERSION:
        req->kind = MC_B_VERSION;
        valid = bodylen == 0;
        break;
    case MC_OP_STAT:
        req->kind = MC_B_STAT;
        valid = extlen == 0 && vlen == 0;
        break;
    case MC_OP_VERBOSITY:
        req->kind = MC_B_VERBOSITY;
        valid = extlen == 4 && keylen == 0 && vlen == 0;
        break;
    case MC_OP_SASL_LIST_MECHS:
        req->kind = MC_B_SASL_LIST;
        valid = bodylen == 0;
        break;
    case MC_OP_SASL_AUTH: case MC_OP_SASL_STEP:
        req->kind = MC_B_SASL_AUTH;
        valid = extlen == 0 && keylen != 0;
        break;
    default:
        /* memcached answers and skips the body. */
        req->kind = MC_B_UNKNOWN;
        req->swallow = bodylen;
        return MC_BIN_HEADER;
    }
    if (!valid || keylen > MC_KEY_MAX) {
        req->kind = MC_B_INVALID;
        return MC_BIN_HEADER;
    }
    if (bodylen > max_body) {
        /* memcached refuses an item over its size limit with E2BIG and
         * reads on past its body. The key is awaited (a set drops the
         * old value), the rest skipped as it comes. */
        size_t head = MC_BIN_HEADER + extlen + keylen;
        if (n < head) {
            if (rs)
                rs->need = head;
            return 0;
        }
        req->too_large = true;
        req->key = (px_str){p + MC_BIN_HEADER + extlen, keylen};
        req->swallow = bodylen - extlen - keylen;
        return (ssize_t)head;
    }
    if (n - MC_BIN_HEADER < bodylen) {
        /* The header is not read again until the body is all here. */
        if (rs)
            rs->need = MC_BIN_HEADER + (size_t)bodylen;
        return 0;
    }
    EXAMINED(extlen);
    const unsigned char *b = h + MC_BIN_HEADER;
    req->extras = (px_str){(const char *)b, extlen};
    req->key = (px_str){(const char *)b + extlen, keylen};
    req->value = (px_str){(const char *)b + extlen + keylen, vlen};
    if (req->kind == MC_B_SET) {
        req->flags = be32(b);
        req->exptime = be32(b + 4);
    } else if (req->kind == MC_B_ARITH) {
        req->delta = be64(b);
        req->initial = be64(b + 8);
        req->exptime = be32(b + 16);
    } else if (req->kind == MC_B_GAT || (req->kind == MC_B_FLUSH && extlen == 4)) {
        req->exptime = be32(b);
    }
    return (ssize_t)(MC_BIN_HEADER + bodylen);
}

ssize_t mc_bin_parse(const char *p, size_t n, size_t max_body, mc_bin_req *req, mc_resume *rs)
{
    ssize_t k = bin_parse(p, n, max_body, req, rs);
    if (k != 0 && rs)
        *rs = (mc_resume){0, 0};
    return k;
}

/* ---- values, cas uniques, counters, exptime ---- */

void mc_value_encode(uint32_t flags, const void *data, size_t n, char *out)
{
    out[0] = (char)(flags >> 24);
    out[1] = (char)(flags >> 16);
    out[2] = (char)(flags >> 8);
    out[3] = (char)flags;
    if (n)
        memcpy(out + MC_FLAGS_BYTES, data, n);
}

bool mc_value_decode(const void *v, size_t n, uint32_t *flags, const char **data, size_t *len)
{
    if (n < MC_FLAGS_BYTES || !v)
        return false;
    *flags = be32(v);
    *data = (const char *)v + MC_FLAGS_BYTES;
    *len = n - MC_FLAGS_BYTES;
    return true;
}

bool mc_counter_parse(const char *data, size_t n, uint64_t *out)
{
    /* memcached refuses an empty value, then runs safe_strtoull over the
     * data followed by its "\r\n". */
    if (n == 0)
        return false;
    return mc_strtoull(data, n, out);
}

size_t mc_counter_format(uint64_t v, size_t old_len, char *out)
{
    char tmp[MC_COUNTER_MAX + 1];
    size_t k = 0;
    do {
        tmp[k++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (size_t i = 0; i < k; i++)
        out[i] = tmp[k - 1 - i];
    if (k >= old_len)
        return k;
    memset(out + k, ' ', old_len - k);
    return old_len;
}

mc_ttl mc_exptime(int64_t exptime, int64_t now_s)
{
    mc_ttl t = {0, false};
    if (exptime == 0)
        return t;
    if (exptime < 0) {
        t.expired = true;
        return t;
    }
    if (exptime > MC_MAXDELTA) {
        if (exptime <= now_s) {
            t.expired = true;
            return t;
        }
        t.ms = (uint64_t)(exptime - now_s) * 1000;
        return t;
    }
    t.ms = (uint64_t)exptime * 1000;
    return t;
}
