/* Just enough JSON to read API keys: validate an object and pull one
 * top-level string member out of it. Nesting is bounded so hostile input
 * cannot exhaust the stack. */
#include "base/json.h"

#include "base/alloc.h"

#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 32

typedef struct {
    const char *p;
    const char *end;
} cursor;

static void skip_ws(cursor *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
        c->p++;
}

static int hex4(const char *p, unsigned *ret)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char ch = p[i];
        v <<= 4;
        if (ch >= '0' && ch <= '9')
            v |= (unsigned)(ch - '0');
        else if (ch >= 'a' && ch <= 'f')
            v |= (unsigned)(ch - 'a' + 10);
        else if (ch >= 'A' && ch <= 'F')
            v |= (unsigned)(ch - 'A' + 10);
        else
            return -1;
    }
    *ret = v;
    return 0;
}

static size_t put_utf8(char *out, unsigned cp)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Parses a string at c->p (which is at the opening quote). With `out`
 * non-NULL the unescaped text is written there (it needs at most the
 * escaped length + 1 bytes). Returns 0 or -1. */
static int parse_string(cursor *c, char *out)
{
    size_t o = 0;
    c->p++; /* opening quote */
    while (c->p < c->end) {
        unsigned char ch = (unsigned char)*c->p++;
        if (ch == '"') {
            if (out)
                out[o] = '\0';
            return 0;
        }
        if (ch < 0x20)
            return -1;
        if (ch != '\\') {
            if (out)
                out[o++] = (char)ch;
            continue;
        }
        if (c->p >= c->end)
            return -1;
        char e = *c->p++;
        unsigned cp;
        switch (e) {
        case '"': cp = '"'; break;
        case '\\': cp = '\\'; break;
        case '/': cp = '/'; break;
        case 'b': cp = '\b'; break;
        case 'f': cp = '\f'; break;
        case 'n': cp = '\n'; break;
        case 'r': cp = '\r'; break;
        case 't': cp = '\t'; break;
        case 'u':
            if (c->end - c->p < 4 || hex4(c->p, &cp) < 0)
                return -1;
            c->p += 4;
            if (cp >= 0xD800 && cp < 0xDC00) { /* surrogate pair */
                unsigned lo;
                if (c->end - c->p < 6 || c->p[0] != '\\' || c->p[1] != 'u' ||
                    hex4(c->p + 2, &lo) < 0 || lo < 0xDC00 || lo > 0xDFFF)
                    return -1;
                c->p += 6;
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                return -1;
            } else if (cp == 0) {
                return -1; /* a C string would end there: "a\u0000b" is not "a" */
            }
            break;
        default:
            return -1;
        }
        if (out)
            o += put_utf8(out + o, cp);
    }
    return -1;
}

static int skip_value(cursor *c, int depth);

static int skip_literal(cursor *c, const char *lit)
{
    size_t n = strlen(lit);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, lit, n) != 0)
        return -1;
    c->p += n;
    return 0;
}

static int skip_number(cursor *c)
{
    const char *start = c->p;
    if (c->p < c->end && *c->p == '-')
        c->p++;
    int digits = 0;
    while (c->p < c->end && ((*c->p >= '0' && *c->p <= '9') || *c->p == '.' || *c->p == 'e' ||
                             *c->p == 'E' || *c->p == '+' || *c->p == '-')) {
        if (*c->p >= '0' && *c->p <= '9')
            digits++;
        c->p++;
    }
    return (digits > 0 && c->p > start) ? 0 : -1;
}

static int skip_container(cursor *c, int depth, char close, int keyed)
{
    if (depth > MAX_DEPTH)
        return -1;
    c->p++;
    skip_ws(c);
    if (c->p < c->end && *c->p == close) {
        c->p++;
        return 0;
    }
    for (;;) {
        skip_ws(c);
        if (keyed) {
            if (c->p >= c->end || *c->p != '"' || parse_string(c, NULL) < 0)
                return -1;
            skip_ws(c);
            if (c->p >= c->end || *c->p++ != ':')
                return -1;
            skip_ws(c);
        }
        if (skip_value(c, depth + 1) < 0)
            return -1;
        skip_ws(c);
        if (c->p >= c->end)
            return -1;
        char ch = *c->p++;
        if (ch == close)
            return 0;
        if (ch != ',')
            return -1;
    }
}

static int skip_value(cursor *c, int depth)
{
    if (c->p >= c->end)
        return -1;
    switch (*c->p) {
    case '"': return parse_string(c, NULL);
    case '{': return skip_container(c, depth, '}', 1);
    case '[': return skip_container(c, depth, ']', 0);
    case 't': return skip_literal(c, "true");
    case 'f': return skip_literal(c, "false");
    case 'n': return skip_literal(c, "null");
    default: return skip_number(c);
    }
}

int momento__json_get_string(const char *json, size_t len, const char *name, char **ret)
{
    cursor c = {json, json + len};
    skip_ws(&c);
    if (c.p >= c.end || *c.p != '{')
        return -1;
    /* Validate the whole document first, so a match in a broken document is
     * never returned. */
    cursor v = c;
    if (skip_value(&v, 0) < 0)
        return -1;
    skip_ws(&v);
    if (v.p != v.end)
        return -1;

    c.p++;
    skip_ws(&c);
    if (*c.p == '}')
        return 0;
    for (;;) {
        skip_ws(&c);
        char *key = momento__malloc((size_t)(c.end - c.p) + 1);
        if (!key)
            return -2;
        parse_string(&c, key);
        int match = strcmp(key, name) == 0;
        free(key);
        skip_ws(&c);
        c.p++; /* ':' */
        skip_ws(&c);
        if (match) {
            if (*c.p != '"')
                return 0;
            char *out = momento__malloc((size_t)(c.end - c.p) + 1);
            if (!out)
                return -2;
            parse_string(&c, out);
            *ret = out;
            return 1;
        }
        skip_value(&c, 1);
        skip_ws(&c);
        if (*c.p++ == '}')
            return 0;
    }
}
