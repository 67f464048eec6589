/* A small JSON reader (jread.h): recursive descent over the whole file. */
#include "jread.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 64          /* load-gen's files nest 4 deep */
#define MAX_FILE (256u << 20) /* a histogram is at most ~5,400 buckets */

typedef struct reader {
    const char *p, *end;
    int depth;
    char *err;
    size_t errlen;
    bool failed;
} reader;

static bool fail(reader *r, const char *fmt, ...)
{
    if (!r->failed) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(r->err, r->errlen, fmt, ap);
        va_end(ap);
        r->failed = true;
    }
    return false;
}

static void skip_ws(reader *r)
{
    while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r'))
        r->p++;
}

static bool literal(reader *r, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(r->end - r->p) < n || memcmp(r->p, word, n) != 0)
        return fail(r, "unexpected text");
    r->p += n;
    return true;
}

static bool put_utf8(char **buf, size_t *len, size_t *cap, uint32_t c)
{
    if (*len + 5 > *cap) {
        size_t ncap = *cap ? *cap * 2 : 32;
        char *nb = realloc(*buf, ncap);
        if (!nb)
            return false;
        *buf = nb;
        *cap = ncap;
    }
    char *o = *buf + *len;
    if (c < 0x80) {
        o[0] = (char)c;
        *len += 1;
    } else if (c < 0x800) {
        o[0] = (char)(0xC0 | (c >> 6));
        o[1] = (char)(0x80 | (c & 0x3F));
        *len += 2;
    } else if (c < 0x10000) {
        o[0] = (char)(0xE0 | (c >> 12));
        o[1] = (char)(0x80 | ((c >> 6) & 0x3F));
        o[2] = (char)(0x80 | (c & 0x3F));
        *len += 3;
    } else {
        o[0] = (char)(0xF0 | (c >> 18));
        o[1] = (char)(0x80 | ((c >> 12) & 0x3F));
        o[2] = (char)(0x80 | ((c >> 6) & 0x3F));
        o[3] = (char)(0x80 | (c & 0x3F));
        *len += 4;
    }
    return true;
}

static bool hex4(reader *r, uint32_t *out)
{
    if (r->end - r->p < 4)
        return fail(r, "short \\u escape");
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        char c = *r->p++;
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (uint32_t)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v |= (uint32_t)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v |= (uint32_t)(c - 'A' + 10);
        else
            return fail(r, "bad \\u escape");
    }
    *out = v;
    return true;
}

/* At the opening quote. */
static bool string(reader *r, char **out)
{
    char *buf = NULL;
    size_t len = 0, cap = 0;
    r->p++;
    for (;;) {
        if (r->p >= r->end) {
            free(buf);
            return fail(r, "unterminated string");
        }
        unsigned char c = (unsigned char)*r->p++;
        uint32_t cp = c;
        if (c == '"')
            break;
        if (c < 0x20) {
            free(buf);
            return fail(r, "control character in a string");
        }
        if (c == '\\') {
            if (r->p >= r->end) {
                free(buf);
                return fail(r, "unterminated string");
            }
            char e = *r->p++;
            switch (e) {
            case '"': cp = '"'; break;
            case '\\': cp = '\\'; break;
            case '/': cp = '/'; break;
            case 'b': cp = '\b'; break;
            case 'f': cp = '\f'; break;
            case 'n': cp = '\n'; break;
            case 'r': cp = '\r'; break;
            case 't': cp = '\t'; break;
            case 'u': {
                uint32_t lo;
                if (!hex4(r, &cp)) {
                    free(buf);
                    return false;
                }
                /* A surrogate pair is one character. */
                if (cp >= 0xD800 && cp < 0xDC00 && r->end - r->p >= 6 && r->p[0] == '\\' &&
                    r->p[1] == 'u') {
                    r->p += 2;
                    if (!hex4(r, &lo)) {
                        free(buf);
                        return false;
                    }
                    if (lo >= 0xDC00 && lo < 0xE000)
                        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                }
                if (cp == 0) {
                    free(buf);
                    return fail(r, "NUL in a string");
                }
                break;
            }
            default: free(buf); return fail(r, "bad escape");
            }
            if (!put_utf8(&buf, &len, &cap, cp)) {
                free(buf);
                return fail(r, "out of memory");
            }
            continue;
        }
        /* Other bytes (UTF-8 included) are copied as they are. */
        if (len + 2 > cap) {
            size_t ncap = cap ? cap * 2 : 32;
            char *nb = realloc(buf, ncap);
            if (!nb) {
                free(buf);
                return fail(r, "out of memory");
            }
            buf = nb;
            cap = ncap;
        }
        buf[len++] = (char)c;
    }
    if (!buf && !(buf = malloc(1)))
        return fail(r, "out of memory");
    if (len + 1 > cap) {
        char *nb = realloc(buf, len + 1);
        if (!nb) {
            free(buf);
            return fail(r, "out of memory");
        }
        buf = nb;
    }
    buf[len] = '\0';
    *out = buf;
    return true;
}

static bool number(reader *r, jv *v)
{
    const char *s = r->p;
    bool integer = true;
    if (r->p < r->end && *r->p == '-') {
        integer = false;
        r->p++;
    }
    const char *digits = r->p;
    while (r->p < r->end && *r->p >= '0' && *r->p <= '9')
        r->p++;
    if (r->p == digits)
        return fail(r, "bad number");
    if (r->p < r->end && (*r->p == '.' || *r->p == 'e' || *r->p == 'E')) {
        integer = false;
        while (r->p < r->end && strchr("0123456789.eE+-", *r->p))
            r->p++;
    }
    char tmp[64];
    size_t n = (size_t)(r->p - s);
    if (n >= sizeof(tmp))
        return fail(r, "number too long");
    memcpy(tmp, s, n);
    tmp[n] = '\0';
    char *end;
    v->kind = JV_NUM;
    v->num = strtod(tmp, &end);
    if (*end)
        return fail(r, "bad number");
    if (integer) {
        errno = 0;
        v->u = strtoull(tmp, &end, 10);
        v->is_uint = errno == 0 && !*end;
    }
    return true;
}

static bool value(reader *r, jv *v);

/* At '[' or '{'. */
static bool container(reader *r, jv *v, bool object)
{
    if (++r->depth > MAX_DEPTH)
        return fail(r, "nested too deep");
    v->kind = object ? JV_OBJ : JV_ARR;
    char close = object ? '}' : ']';
    size_t cap = 0;
    r->p++;
    skip_ws(r);
    if (r->p < r->end && *r->p == close) {
        r->p++;
        r->depth--;
        return true;
    }
    for (;;) {
        if (v->n == cap) {
            cap = cap ? cap * 2 : 8;
            jv *ni = realloc(v->items, cap * sizeof(*ni));
            if (!ni)
                return fail(r, "out of memory");
            v->items = ni;
            if (object) {
                char **nk = realloc(v->keys, cap * sizeof(*nk));
                if (!nk)
                    return fail(r, "out of memory");
                v->keys = nk;
            }
        }
        jv *item = &v->items[v->n];
        memset(item, 0, sizeof(*item));
        if (object) {
            skip_ws(r);
            if (r->p >= r->end || *r->p != '"')
                return fail(r, "expected a key");
            if (!string(r, &v->keys[v->n]))
                return false;
            skip_ws(r);
            if (r->p >= r->end || *r->p != ':') {
                free(v->keys[v->n]);
                return fail(r, "expected ':'");
            }
            r->p++;
        }
        v->n++; /* counted now, so jv_free frees a half-read item too */
        if (!value(r, item))
            return false;
        skip_ws(r);
        if (r->p < r->end && *r->p == ',') {
            r->p++;
            continue;
        }
        if (r->p < r->end && *r->p == close) {
            r->p++;
            r->depth--;
            return true;
        }
        return fail(r, "expected ',' or '%c'", close);
    }
}

static bool value(reader *r, jv *v)
{
    skip_ws(r);
    if (r->p >= r->end)
        return fail(r, "unexpected end");
    switch (*r->p) {
    case '{': return container(r, v, true);
    case '[': return container(r, v, false);
    case '"': v->kind = JV_STR; return string(r, &v->str);
    case 't': v->kind = JV_BOOL; v->b = true; return literal(r, "true");
    case 'f': v->kind = JV_BOOL; return literal(r, "false");
    case 'n': v->kind = JV_NULL; return literal(r, "null");
    default: return number(r, v);
    }
}

static void free_inner(jv *v)
{
    free(v->str);
    for (size_t i = 0; i < v->n; i++) {
        free_inner(&v->items[i]);
        if (v->keys)
            free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
}

void jv_free(jv *v)
{
    if (!v)
        return;
    free_inner(v);
    free(v);
}

jv *jv_parse_file(const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "cannot open: %s", strerror(errno));
        return NULL;
    }
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len == cap) {
            cap = cap ? cap * 2 : 65536;
            char *nb = cap <= MAX_FILE ? realloc(buf, cap) : NULL;
            if (!nb) {
                snprintf(err, errlen, "too large or out of memory");
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = nb;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0)
            break;
    }
    bool read_error = ferror(f);
    fclose(f);
    if (read_error) {
        snprintf(err, errlen, "read error");
        free(buf);
        return NULL;
    }
    jv *root = calloc(1, sizeof(*root));
    reader r = {.p = buf, .end = buf + len, .err = err, .errlen = errlen};
    bool ok = root && value(&r, root);
    if (ok) {
        skip_ws(&r);
        if (r.p != r.end)
            ok = fail(&r, "text after the value");
    }
    if (!ok) {
        if (!root)
            snprintf(err, errlen, "out of memory");
        else {
            size_t at = (size_t)(r.p - buf);
            size_t n = strlen(err);
            snprintf(err + n, errlen > n ? errlen - n : 0, " at byte %zu", at);
        }
        jv_free(root);
        root = NULL;
    }
    free(buf);
    return root;
}

const jv *jv_get(const jv *obj, const char *key)
{
    if (!obj || obj->kind != JV_OBJ)
        return NULL;
    for (size_t i = 0; i < obj->n; i++)
        if (strcmp(obj->keys[i], key) == 0)
            return &obj->items[i];
    return NULL;
}

bool jv_uint(const jv *v, uint64_t *out)
{
    if (!v || v->kind != JV_NUM || !v->is_uint)
        return false;
    *out = v->u;
    return true;
}

bool jv_num(const jv *v, double *out)
{
    if (!v || v->kind != JV_NUM)
        return false;
    *out = v->num;
    return true;
}
