/* RESP2 request framing, following Redis 7's processMultibulkBuffer and
 * processInlineBuffer: the same errors for the same bytes. */
#include "resp/resp_parse.h"

#include <ctype.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
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

/* Where the line starting at p[from] ends: the index of its `c` in
 * p[scan, n), having searched p[from, scan) before. Redis searches its
 * buffer as a C string (strchr), so a NUL byte first leaves the line
 * unfinished for good: *scan stays at the NUL, and searching again costs
 * nothing. Returns n when not found; *scan is where to resume. */
static size_t find_end(const char *p, size_t *scan, size_t n, char c, resp_args *a)
{
    size_t from = *scan;
    if (from < n && p[from] == '\0')
        return n; /* parked at the NUL found before */
    const char *hit = memchr(p + from, c, n - from);
    size_t end = hit ? (size_t)(hit - p) : n;
    const char *nul = memchr(p + from, '\0', end - from);
    a->scanned += 2 * (end - from) + (hit ? 1 : 0);
    if (nul) {
        *scan = (size_t)(nul - p);
        return n;
    }
    *scan = end;
    return end;
}

/* Lists the arguments of the whole multibulk command at p, the `*N` line
 * included, in one pass over its `$` lines (already checked): nothing was
 * recorded for them as they arrived. */
static bool list_multibulk(const char *p, resp_args *a)
{
    if (!args_room(a, a->count))
        return false;
    const char *q = memchr(p, '\r', a->pos);
    a->scanned += (size_t)(q - p) + 1;
    q += 2;
    for (long long i = 0; i < a->count; i++) {
        const char *cr = memchr(q, '\r', a->pos - (size_t)(q - p));
        long long len = 0;
        a->scanned += (size_t)(cr - q) + 1;
        to_ll(q + 1, (size_t)(cr - q - 1), &len);
        a->argv[i].p = cr + 2;
        a->argv[i].n = (size_t)len;
        q = cr + 2 + len + 2;
    }
    a->argc = (int)a->count;
    return true;
}

/* From where the last call stopped (a->pos, a->scan), as Redis's
 * processMultibulkBuffer resumes from its client's multibulklen and
 * bulklen: the same checks in the same order, so the same error for the
 * same bytes. */
static ssize_t parse_multibulk(const char *p, size_t n, const resp_limits *lim, resp_args *a,
                               const char **err)
{
    if (a->count == 0) {
        size_t cr = find_end(p, &a->scan, n, '\r', a);
        if (cr == n) {
            if (n > RESP_MAX_INLINE) {
                *err = "Protocol error: too big mbulk count string";
                return -1;
            }
            return 0;
        }
        /* A line needs a byte after its '\r' (Redis's check for the '\n'). */
        if (cr + 2 > n)
            return 0;
        long long count;
        /* Redis 7 takes up to INT_MAX arguments; Redis 6 took 1024*1024,
         * the bound kept here: with it, listing a whole command's argv
         * costs at most 16 MiB, whatever max_bulk allows. Before AUTH,
         * Redis 7's own order: over INT_MAX is invalid, over its
         * unauthenticated bound is that. */
        bool ok = to_ll(p + 1, cr - 1, &count);
        if (!ok || count > (lim->unauthenticated ? INT_MAX : RESP_MAX_MULTIBULK)) {
            *err = "Protocol error: invalid multibulk length";
            return -1;
        }
        if (lim->unauthenticated && count > RESP_UNAUTH_MAX_MULTIBULK) {
            *err = "Protocol error: unauthenticated multibulk length";
            return -1;
        }
        if (count <= 0)
            return (ssize_t)(cr + 2); /* an empty command */
        a->count = count;
        a->seen = 0;
        a->bulk = -1;
        a->pos = a->scan = cr + 2;
    }
    while (a->seen < a->count) {
        if (a->bulk < 0) {
            if (a->pos >= n)
                return 0;
            if (a->scan < a->pos)
                a->scan = a->pos;
            size_t cr = find_end(p, &a->scan, n, '\r', a);
            if (cr == n) {
                if (n - a->pos > RESP_MAX_INLINE) {
                    *err = "Protocol error: too big bulk count string";
                    return -1;
                }
                return 0;
            }
            if (cr + 2 > n)
                return 0;
            const char *q = p + a->pos;
            if (q[0] != '$') {
                snprintf(a->errbuf, sizeof(a->errbuf), "Protocol error: expected '$', got '%c'",
                         q[0]);
                *err = a->errbuf;
                return -1;
            }
            long long len;
            if (!to_ll(q + 1, cr - a->pos - 1, &len) || len < 0 ||
                (unsigned long long)len > lim->max_bulk) {
                *err = "Protocol error: invalid bulk length";
                return -1;
            }
            if (lim->unauthenticated && len > RESP_UNAUTH_MAX_BULK) {
                *err = "Protocol error: unauthenticated bulk length";
                return -1;
            }
            a->bulk = len;
            a->pos = cr + 2;
        }
        /* The data and the two bytes after it, which Redis skips unread. */
        if (n - a->pos < (size_t)a->bulk + 2)
            return 0;
        a->pos += (size_t)a->bulk + 2;
        a->bulk = -1;
        a->seen++;
    }
    if (!list_multibulk(p, a))
        return -2;
    return (ssize_t)a->pos;
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
        /* The quote the token is inside ('"' or '\''), 0 outside one. */
        char quote = 0;
        bool done = false;
        while (!done) {
            if (quote) {
                if (i >= n)
                    return -1;
                if (quote == '"' && line[i] == '\\' && i + 3 < n && line[i + 1] == 'x' &&
                    hexval((unsigned char)line[i + 2]) >= 0 &&
                    hexval((unsigned char)line[i + 3]) >= 0) {
                    *out++ = (char)(hexval((unsigned char)line[i + 2]) * 16 +
                                    hexval((unsigned char)line[i + 3]));
                    i += 4;
                } else if (quote == '"' && line[i] == '\\' && i + 1 < n) {
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
                } else if (quote == '\'' && line[i] == '\\' && i + 1 < n && line[i + 1] == '\'') {
                    *out++ = '\'';
                    i += 2;
                } else if (line[i] == quote) {
                    /* A closing quote must be followed by a space or the end. */
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
                } else if (line[i] == '"' || line[i] == '\'') {
                    quote = line[i++];
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

/* Redis's processInlineBuffer: the line up to '\n' (a '\r' before it
 * dropped), split into words. Its search resumes where the last call's
 * stopped. */
static ssize_t parse_inline(const char *p, size_t n, resp_args *a, const char **err)
{
    size_t nl = find_end(p, &a->scan, n, '\n', a);
    if (nl == n) {
        if (n > RESP_MAX_INLINE) {
            *err = "Protocol error: too big inline request";
            return -1;
        }
        return 0;
    }
    size_t len = nl;
    if (len > 0 && p[len - 1] == '\r')
        len--;
    a->scanned += len;
    int rc = split_inline(p, len, a);
    if (rc == -2)
        return -2;
    if (rc < 0) {
        *err = "Protocol error: unbalanced quotes in request";
        return -1;
    }
    a->whole_inline = true;
    return (ssize_t)nl + 1;
}

/* Back to the start of a command. */
static void reset(resp_args *a)
{
    a->count = a->seen = 0;
    a->bulk = -1;
    a->pos = a->scan = 0;
    a->whole = 0;
    a->base = NULL;
    a->whole_inline = false;
}

ssize_t resp_parse(const char *p, size_t n, const resp_limits *lim, resp_args *a,
                   const char **err)
{
    if (a->whole && n >= a->whole) {
        /* Asked again for the command it returned (it had to wait): the
         * same arguments, where the input is now. */
        if (!a->whole_inline && p != a->base)
            for (int i = 0; i < a->argc; i++)
                a->argv[i].p = p + ((uintptr_t)a->argv[i].p - (uintptr_t)a->base);
        a->base = p;
        return (ssize_t)a->whole;
    }
    if (a->whole)
        reset(a); /* not the input it was: start again */
    a->argc = 0;
    if (n == 0)
        return 0;
    ssize_t r = p[0] == '*' ? parse_multibulk(p, n, lim, a, err) : parse_inline(p, n, a, err);
    if (r > 0) {
        a->whole = (size_t)r;
        a->base = p;
    } else if (r < 0) {
        reset(a);
    }
    return r;
}

void resp_parse_done(resp_args *a)
{
    reset(a);
    a->argc = 0;
    /* One large command must not keep its argv (16 bytes an argument) or
     * its words for the connection's life. */
    if (a->cap > 1024) {
        free(a->argv);
        a->argv = NULL;
        a->cap = 0;
    }
    if (a->scratch_cap > 4096) {
        free(a->scratch);
        a->scratch = NULL;
        a->scratch_cap = 0;
    }
}

void resp_args_free(resp_args *a)
{
    free(a->argv);
    free(a->scratch);
    *a = (resp_args){0};
}
