/* RESP2 request framing, following Redis 7's processMultibulkBuffer and
 * processInlineBuffer: the same errors for the same bytes. */
#include "resp_parse.h"

#include <ctype.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Redis's string2ll: an optional '-', digits, no leading zeros (except
 * "0"), no '+', no spaces, within long long. */
static bool to_ll(const char *s, size_t n, long long *out)
{
    if (n == 0 || n > 20)
        return false;
    size_t i = 0;
    bool neg = false;
    if (s[0] == '-') {
        neg = true;
        i = 1;
        if (n == 1)
            return false;
    }
    if (s[i] == '0')
        return n == i + 1 && !neg ? (*out = 0, true) : false;
    unsigned long long v = 0;
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        unsigned d = (unsigned)(s[i] - '0');
        if (v > (ULLONG_MAX - d) / 10)
            return false;
        v = v * 10 + d;
    }
    if (neg) {
        if (v > (unsigned long long)LLONG_MAX + 1)
            return false;
        *out = v == (unsigned long long)LLONG_MAX + 1 ? LLONG_MIN : -(long long)v;
    } else {
        if (v > LLONG_MAX)
            return false;
        *out = (long long)v;
    }
    return true;
}

static bool args_room(resp_args *a, long long n)
{
    if (n <= a->cap)
        return true;
    int cap = a->cap ? a->cap : 8;
    while (cap < n)
        cap *= 2;
    px_str *v = realloc(a->argv, sizeof(*v) * (size_t)cap);
    if (!v)
        return false;
    a->argv = v;
    a->cap = cap;
    return true;
}

/* The line at p: where its '\r' is (Redis looks for '\r' and needs one
 * byte after it), or NULL when not all here. */
static const char *find_cr(const char *p, size_t n, resp_args *a)
{
    const char *cr = memchr(p, '\r', n);
    a->scanned += cr ? (size_t)(cr - p) + 1 : n;
    if (!cr || (size_t)(cr - p) + 2 > n)
        return NULL;
    return cr;
}

static ssize_t parse_multibulk(const char *p, size_t n, size_t max_bulk, resp_args *a,
                               const char **err)
{
    const char *cr = find_cr(p, n, a);
    if (!cr) {
        if (n > RESP_MAX_INLINE) {
            *err = "Protocol error: too big mbulk count string";
            return -1;
        }
        return 0;
    }
    long long count;
    if (!to_ll(p + 1, (size_t)(cr - p - 1), &count) || count > INT_MAX) {
        *err = "Protocol error: invalid multibulk length";
        return -1;
    }
    size_t pos = (size_t)(cr - p) + 2;
    a->argc = 0;
    if (count <= 0)
        return (ssize_t)pos;
    /* The array grows as arguments arrive, so a large announced count
     * costs nothing until its arguments are sent. */
    for (long long i = 0; i < count; i++) {
        if (pos >= n)
            return 0;
        const char *q = p + pos;
        cr = find_cr(q, n - pos, a);
        if (!cr) {
            if (n - pos > RESP_MAX_INLINE) {
                *err = "Protocol error: too big bulk count string";
                return -1;
            }
            return 0;
        }
        if (q[0] != '$') {
            snprintf(a->errbuf, sizeof(a->errbuf), "Protocol error: expected '$', got '%c'",
                     q[0]);
            *err = a->errbuf;
            return -1;
        }
        long long len;
        if (!to_ll(q + 1, (size_t)(cr - q - 1), &len) || len < 0 ||
            (unsigned long long)len > max_bulk) {
            *err = "Protocol error: invalid bulk length";
            return -1;
        }
        pos += (size_t)(cr - q) + 2;
        /* The data and the two bytes after it, which Redis skips unread. */
        if (n - pos < (size_t)len + 2)
            return 0;
        if (!args_room(a, a->argc + 1))
            return -2;
        a->argv[a->argc].p = p + pos;
        a->argv[a->argc].n = (size_t)len;
        a->argc++;
        pos += (size_t)len + 2;
    }
    return (ssize_t)pos;
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c = tolower(c);
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* Redis's sdssplitargs over line[0, n): words, "double quoted" with
 * escapes, 'single quoted'. Unescaped words are copied to scratch so that
 * every argument is one contiguous string. false: unbalanced quotes. */
static int split_inline(const char *line, size_t n, resp_args *a)
{
    if (a->scratch_cap < n + 1) {
        char *s = realloc(a->scratch, n + 1);
        if (!s)
            return -2;
        a->scratch = s;
        a->scratch_cap = n + 1;
    }
    char *out = a->scratch;
    size_t i = 0;
    a->argc = 0;
    for (;;) {
        while (i < n && isspace((unsigned char)line[i]))
            i++;
        if (i >= n)
            return 0;
        char *start = out;
        bool inq = false, insq = false, done = false;
        while (!done) {
            if (inq) {
                if (i >= n)
                    return -1;
                if (line[i] == '\\' && i + 3 < n && line[i + 1] == 'x' &&
                    hexval((unsigned char)line[i + 2]) >= 0 &&
                    hexval((unsigned char)line[i + 3]) >= 0) {
                    *out++ = (char)(hexval((unsigned char)line[i + 2]) * 16 +
                                    hexval((unsigned char)line[i + 3]));
                    i += 4;
                } else if (line[i] == '\\' && i + 1 < n) {
                    char c;
                    i++;
                    switch (line[i]) {
                    case 'n': c = '\n'; break;
                    case 'r': c = '\r'; break;
                    case 't': c = '\t'; break;
                    case 'b': c = '\b'; break;
                    case 'a': c = '\a'; break;
                    default: c = line[i]; break;
                    }
                    *out++ = c;
                    i++;
                } else if (line[i] == '"') {
                    /* A closing quote must be followed by a space or the end. */
                    if (i + 1 < n && !isspace((unsigned char)line[i + 1]))
                        return -1;
                    done = true;
                    i++;
                } else {
                    *out++ = line[i++];
                }
            } else if (insq) {
                if (i >= n)
                    return -1;
                if (line[i] == '\\' && i + 1 < n && line[i + 1] == '\'') {
                    *out++ = '\'';
                    i += 2;
                } else if (line[i] == '\'') {
                    if (i + 1 < n && !isspace((unsigned char)line[i + 1]))
                        return -1;
                    done = true;
                    i++;
                } else {
                    *out++ = line[i++];
                }
            } else {
                if (i >= n) {
                    done = true;
                } else if (isspace((unsigned char)line[i])) {
                    done = true;
                } else if (line[i] == '"') {
                    inq = true;
                    i++;
                } else if (line[i] == '\'') {
                    insq = true;
                    i++;
                } else {
                    *out++ = line[i++];
                }
            }
        }
        if (!args_room(a, a->argc + 1))
            return -2;
        a->argv[a->argc].p = start;
        a->argv[a->argc].n = (size_t)(out - start);
        a->argc++;
    }
}

static ssize_t parse_inline(const char *p, size_t n, resp_args *a, const char **err)
{
    const char *nl = memchr(p, '\n', n);
    a->scanned += nl ? (size_t)(nl - p) + 1 : n;
    if (!nl) {
        if (n > RESP_MAX_INLINE) {
            *err = "Protocol error: too big inline request";
            return -1;
        }
        return 0;
    }
    size_t len = (size_t)(nl - p);
    if (len > 0 && p[len - 1] == '\r')
        len--;
    int rc = split_inline(p, len, a);
    if (rc == -2)
        return -2;
    if (rc < 0) {
        *err = "Protocol error: unbalanced quotes in request";
        return -1;
    }
    return (ssize_t)(nl - p) + 1;
}

ssize_t resp_parse(const char *p, size_t n, size_t max_bulk, resp_args *a, const char **err)
{
    a->argc = 0;
    if (n == 0)
        return 0;
    if (p[0] == '*')
        return parse_multibulk(p, n, max_bulk, a, err);
    return parse_inline(p, n, a, err);
}

void resp_args_free(resp_args *a)
{
    free(a->argv);
    free(a->scratch);
    *a = (resp_args){0};
}
