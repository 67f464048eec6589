/* momento-proxy --config FILE (docs/proxy.md, "Config file").
 *
 * libyaml composes the whole file into a document first (a syntax error
 * anywhere is refused before any option is set); then each top-level key
 * is set through px_option_set(), the command line's own checks, so a value
 * the command line refuses the file refuses too, with the file and line in
 * place of the option's name. Only what the command line cannot say is
 * read here: `listeners:` (several caches on several ports) and `headers:`
 * as a mapping. The schema is two levels deep and every level is checked
 * for its kind before it is walked, so aliases (which libyaml resolves to
 * shared nodes) cannot make the walk larger than the file's own lists,
 * each of which is bounded (listeners, headers) or ends at its first
 * unknown key. */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <yaml.h>

static const char *const prog = "momento-proxy";

/* Larger than any config file, small enough that a wrong path (a log, a
 * disk image) is refused before libyaml holds it in memory. */
#define CONFIG_MAX_BYTES (1u << 20)
/* Longer than any option's name: a longer key is unknown. */
#define KEY_MAX 64
/* More distinct top-level keys than there are options: the walk stops at
 * the first unknown or repeated key, so this only bounds the array. */
#define KEYS_MAX 256

/* ---- the strings handed to px_options ---- */

/* px_options borrows its strings (options.h); the document is freed once
 * read, so each value set is copied here and kept until px_config_free().
 * A list, so that the copies stay reachable (a leak check at exit sees
 * them as held, not lost) and can all be freed. */
typedef struct kept {
    struct kept *next;
    char s[];
} kept;

static kept *kept_strings;

static const char *keep(const char *s, size_t n)
{
    kept *k = malloc(sizeof(*k) + n + 1);
    if (!k)
        return NULL;
    memcpy(k->s, s, n);
    k->s[n] = '\0';
    k->next = kept_strings;
    kept_strings = k;
    return k->s;
}

void px_config_free(void)
{
    while (kept_strings) {
        kept *next = kept_strings->next;
        free(kept_strings);
        kept_strings = next;
    }
}

/* ---- reading ---- */

typedef struct reader {
    FILE *f;
    size_t total;
    int err;       /* errno of a failed read */
    bool too_big;
} reader;

static int read_some(void *data, unsigned char *buf, size_t size, size_t *got)
{
    reader *r = data;
    size_t n = fread(buf, 1, size, r->f);
    if (n == 0 && ferror(r->f)) {
        r->err = errno ? errno : EIO;
        return 0;
    }
    r->total += n;
    if (r->total > CONFIG_MAX_BYTES) {
        r->too_big = true;
        return 0;
    }
    *got = n;
    return 1;
}

/* What went wrong in libyaml's reading or parsing, said once. Returns the
 * exit status. */
static int parse_failed(const char *path, const yaml_parser_t *p, const reader *r)
{
    if (r->too_big) {
        fprintf(stderr, "%s: %s: over %u bytes: too large for a config file\n", prog, path,
                CONFIG_MAX_BYTES);
        return 2;
    }
    if (r->err) {
        fprintf(stderr, "%s: %s: %s\n", prog, path, strerror(r->err));
        return 2;
    }
    switch (p->error) {
    case YAML_MEMORY_ERROR:
        fprintf(stderr, "%s: %s: out of memory\n", prog, path);
        return 1;
    case YAML_READER_ERROR:
        /* Not text libyaml reads (UTF-8 or UTF-16): there are no lines. */
        fprintf(stderr, "%s: %s: byte %zu: not YAML text: %s\n", prog, path, p->problem_offset,
                p->problem ? p->problem : "unreadable");
        return 2;
    default:
        fprintf(stderr, "%s: %s:%zu: YAML syntax: %s", prog, path, p->problem_mark.line + 1,
                p->problem ? p->problem : "not YAML");
        if (p->context)
            fprintf(stderr, " (%s at line %zu)", p->context, p->context_mark.line + 1);
        fputc('\n', stderr);
        return 2;
    }
}

/* ---- the document ---- */

typedef struct loader {
    px_options *o;
    const char *path;
    yaml_document_t *doc;
    bool requirepass;             /* the file sets it: its mode matters */
    int first_listener;           /* o->listeners[] index of the file's first */
    int listener_line[PX_MAX_LISTENERS];
    char seen[KEYS_MAX][KEY_MAX]; /* top-level keys so far, as option names */
    int seen_line[KEYS_MAX];
    int nseen;
} loader;

static int line_of(const yaml_node_t *n)
{
    return (int)n->start_mark.line + 1;
}

/* Prints "momento-proxy: PATH:LINE: KEY: why" and returns 2. */
static int refuse(const loader *l, int line, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int refuse(const loader *l, int line, const char *key, const char *fmt, ...)
{
    char why[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s: %s:%d: %.*s: %s\n", prog, l->path, line, KEY_MAX, key, why);
    return 2;
}

static int out_of_memory(const loader *l)
{
    fprintf(stderr, "%s: %s: out of memory\n", prog, l->path);
    return 1;
}

static const char *kind_name(const yaml_node_t *n)
{
    switch (n->type) {
    case YAML_SEQUENCE_NODE: return "a list";
    case YAML_MAPPING_NODE: return "a mapping";
    default: return "a value";
    }
}

static const char *scalar(const yaml_node_t *n)
{
    return (const char *)n->data.scalar.value;
}

static yaml_node_t *node(const loader *l, int id)
{
    return yaml_document_get_node(l->doc, id);
}

/* A key as an option's name: `_` read as `-`, so that `timeout_ms` is
 * --timeout-ms. False when the key cannot be one (not a scalar, empty,
 * too long, a NUL inside). */
static bool option_name(const yaml_node_t *k, char out[KEY_MAX])
{
    if (k->type != YAML_SCALAR_NODE)
        return false;
    size_t n = k->data.scalar.length;
    if (n == 0 || n >= KEY_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = (char)k->data.scalar.value[i];
        if (c == '\0')
            return false;
        out[i] = c == '_' ? '-' : c;
    }
    out[n] = '\0';
    return true;
}

/* The key as written, for messages. */
static const char *key_text(const yaml_node_t *k)
{
    return k->type == YAML_SCALAR_NODE ? scalar(k) : "(key)";
}

/* Checks that `v`, the value of `key`, is one usable value: a scalar, not
 * a YAML null (`key:` alone, `~`, `null` would otherwise become the option's
 * value: a password "null"), no NUL byte (the option would read less than
 * the file says). Returns 0 or 2 after printing why. */
static int check_value(const loader *l, const yaml_node_t *v, const char *key)
{
    if (v->type != YAML_SCALAR_NODE)
        return refuse(l, line_of(v), key, "must be one value, not %s", kind_name(v));
    /* A tag would change what the text means (!!binary: base64) while the
     * option read the text as written: refused rather than misread. */
    const char *tag = (const char *)v->tag;
    if (tag && strcmp(tag, YAML_STR_TAG) != 0 && strcmp(tag, YAML_INT_TAG) != 0 &&
        strcmp(tag, YAML_BOOL_TAG) != 0)
        return refuse(l, line_of(v), key, "has a YAML tag (%s): give the value plain", tag);
    const char *s = scalar(v);
    if (v->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
        (!*s || !strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") ||
         !strcmp(s, "NULL")))
        return refuse(l, line_of(v), key,
                      "has no value: give one (quoted if it is the word null), or leave the "
                      "key out for its default");
    if (strlen(s) != v->data.scalar.length)
        return refuse(l, line_of(v), key, "holds a NUL byte");
    return 0;
}

/* The file's key `name` (an option's name) was not given before. */
static int note_key(loader *l, const yaml_node_t *k, const char *name)
{
    for (int i = 0; i < l->nseen; i++)
        if (!strcmp(l->seen[i], name))
            return refuse(l, line_of(k), key_text(k), "given twice (first at line %d)",
                          l->seen_line[i]);
    if (l->nseen == KEYS_MAX)
        return refuse(l, line_of(k), key_text(k), "more than %d keys", KEYS_MAX);
    snprintf(l->seen[l->nseen], KEY_MAX, "%s", name);
    l->seen_line[l->nseen++] = line_of(k);
    return 0;
}

/* Sets option `name` to the scalar `v` as the command line would. */
static int set_option(loader *l, const yaml_node_t *k, const char *name, const yaml_node_t *v)
{
    const char *key = key_text(k);
    /* A misspelt key is named as such, whatever its value. */
    if (!px_option_known(name))
        return refuse(l, line_of(k), key,
                      "unknown key (the keys are --help's long options, and listeners)");
    int rc = check_value(l, v, key);
    if (rc)
        return rc;
    const char *s = keep(scalar(v), v->data.scalar.length);
    if (!s)
        return out_of_memory(l);
    size_t wn = strlen(l->path) + KEY_MAX + 32;
    char *where = malloc(wn);
    if (!where)
        return out_of_memory(l);
    snprintf(where, wn, "%s:%d: %.*s", l->path, line_of(v), KEY_MAX, key);
    rc = px_option_set(l->o, name, s, where);
    free(where);
    if (rc < 0)
        return refuse(l, line_of(k), key,
                      "unknown key (the keys are --help's long options, and listeners)");
    if (rc == 0 && !strcmp(name, "requirepass"))
        l->requirepass = true;
    return rc;
}

/* ---- headers ---- */

static int set_header(loader *l, const yaml_node_t *at, const char *key, const char *nv)
{
    size_t wn = strlen(l->path) + KEY_MAX + 32;
    char *where = malloc(wn);
    if (!where)
        return out_of_memory(l);
    snprintf(where, wn, "%s:%d: %.*s", l->path, line_of(at), KEY_MAX, key);
    int rc = px_option_set(l->o, "header", nv, where);
    free(where);
    return rc < 0 ? refuse(l, line_of(at), key, "no header option in this build") : rc;
}

static int add_header(loader *l, const yaml_node_t *h, const char *key)
{
    int rc = check_value(l, h, key);
    if (rc)
        return rc;
    const char *s = keep(scalar(h), h->data.scalar.length);
    return s ? set_header(l, h, key, s) : out_of_memory(l);
}

/* `header:` / `headers:` as --header's NAME=VALUE, a list of them, or a
 * mapping NAME: VALUE. */
static int set_headers(loader *l, const yaml_node_t *k, const yaml_node_t *v)
{
    const char *key = key_text(k);
    int rc;
    if (v->type == YAML_SCALAR_NODE)
        return add_header(l, v, key);
    if (v->type == YAML_SEQUENCE_NODE) {
        for (const yaml_node_item_t *it = v->data.sequence.items.start;
             it < v->data.sequence.items.top; it++)
            if ((rc = add_header(l, node(l, *it), key)) != 0)
                return rc;
        return 0;
    }
    for (const yaml_node_pair_t *p = v->data.mapping.pairs.start; p < v->data.mapping.pairs.top;
         p++) {
        const yaml_node_t *hk = node(l, p->key), *hv = node(l, p->value);
        if (hk->type != YAML_SCALAR_NODE || !hk->data.scalar.length ||
            strlen(scalar(hk)) != hk->data.scalar.length || strchr(scalar(hk), '='))
            return refuse(l, line_of(hk), key, "a header's name must be a name, without '='");
        /* Header names are case-insensitive: two spellings are one header. */
        for (const yaml_node_pair_t *q = v->data.mapping.pairs.start; q < p; q++)
            if (!strcasecmp(scalar(node(l, q->key)), scalar(hk)))
                return refuse(l, line_of(hk), key, "%s given twice (first at line %d)",
                              scalar(hk), line_of(node(l, q->key)));
        if ((rc = check_value(l, hv, key)) != 0)
            return rc;
        size_t n = hk->data.scalar.length + 1 + hv->data.scalar.length;
        char *nv = malloc(n + 1);
        if (!nv)
            return out_of_memory(l);
        snprintf(nv, n + 1, "%s=%s", scalar(hk), scalar(hv));
        const char *s = keep(nv, n);
        free(nv);
        if (!s)
            return out_of_memory(l);
        if ((rc = set_header(l, hk, key, s)) != 0)
            return rc;
    }
    return 0;
}

/* ---- listeners ---- */

/* HOST:PORT, [IPV6]:PORT, or PORT alone (on --bind: *host NULL). Returns
 * NULL, or why not. */
static const char *parse_addr(const char *s, const char **host, size_t *hostn, int *port)
{
    static const char *const form = "must be HOST:PORT, [IPV6]:PORT or a PORT on --bind";
    const char *ps;
    *host = NULL;
    *hostn = 0;
    if (s[0] == '[') {
        const char *close = strchr(s, ']');
        if (!close || close[1] != ':' || close == s + 1)
            return form;
        *host = s + 1;
        *hostn = (size_t)(close - s - 1);
        ps = close + 2;
    } else if (strchr(s, ':')) {
        const char *colon = strrchr(s, ':');
        if (colon != strchr(s, ':'))
            return "an IPv6 address goes in brackets: [::1]:6379";
        if (colon == s)
            return form;
        *host = s;
        *hostn = (size_t)(colon - s);
        ps = colon + 1;
    } else {
        ps = s;
    }
    /* Digits only: no sign, no space, no hex. */
    long v = 0;
    if (!*ps || strlen(ps) > 5)
        return *host ? "the port must be 0 to 65535" : form;
    for (const char *c = ps; *c; c++) {
        if (*c < '0' || *c > '9')
            return *host ? "the port must be 0 to 65535" : form;
        v = v * 10 + (*c - '0');
    }
    if (v > 65535)
        return "the port must be 0 to 65535";
    *port = (int)v;
    if (*host) {
        /* A numeric address, or a name resolved when it is bound. Checked
         * here only for what no name holds, so that the file's line is
         * named; a name that does not resolve fails at the bind. */
        for (size_t i = 0; i < *hostn; i++) {
            char c = (*host)[i];
            if (!(c == '.' || c == '-' || c == ':' || c == '%' || c == '_' ||
                  (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')))
                return "the host must be an address or a host name";
        }
    }
    return NULL;
}

static const char *const listener_form =
    "must be a mapping {cache: NAME, resp: HOST:PORT} or {cache: NAME, memcache: HOST:PORT}";

static int add_listener(loader *l, const yaml_node_t *item, int index)
{
    char key[48], sub[48 + KEY_MAX + 2];
    snprintf(key, sizeof(key), "listeners[%d]", index);
    if (item->type != YAML_MAPPING_NODE)
        return refuse(l, line_of(item), key, "%s, not %s", listener_form, kind_name(item));
    px_options *o = l->o;
    if (o->nlisteners == PX_MAX_LISTENERS)
        return refuse(l, line_of(item), key, "more than %d listeners", PX_MAX_LISTENERS);
    px_listen_opt lo = {0};
    const yaml_node_t *cache_at = NULL, *port_at = NULL;
    int rc;
    for (const yaml_node_pair_t *p = item->data.mapping.pairs.start;
         p < item->data.mapping.pairs.top; p++) {
        const yaml_node_t *k = node(l, p->key), *v = node(l, p->value);
        char name[KEY_MAX];
        snprintf(sub, sizeof(sub), "%s.%.*s", key, KEY_MAX, key_text(k));
        bool known = option_name(k, name);
        if (known && !strcmp(name, "cache")) {
            if (cache_at)
                return refuse(l, line_of(k), sub, "given twice (first at line %d)",
                              line_of(cache_at));
            if ((rc = check_value(l, v, sub)) != 0)
                return rc;
            if (!v->data.scalar.length || v->data.scalar.length > MOMENTO_MAX_CACHE_NAME_BYTES)
                return refuse(l, line_of(v), sub, "must be 1 to %d bytes",
                              MOMENTO_MAX_CACHE_NAME_BYTES);
            if (!(lo.cache = keep(scalar(v), v->data.scalar.length)))
                return out_of_memory(l);
            cache_at = k;
        } else if (known && (!strcmp(name, "resp") || !strcmp(name, "memcache"))) {
            if (port_at)
                return refuse(l, line_of(k), sub,
                              "a listener has one port (line %d gave it): give another "
                              "listener for this one",
                              line_of(port_at));
            if ((rc = check_value(l, v, sub)) != 0)
                return rc;
            const char *host;
            size_t hostn;
            const char *why = parse_addr(scalar(v), &host, &hostn, &lo.port);
            if (why)
                return refuse(l, line_of(v), sub, "%s", why);
            if (host && !(lo.host = keep(host, hostn)))
                return out_of_memory(l);
            lo.kind = name[0] == 'r' ? PX_LISTEN_RESP : PX_LISTEN_MEMCACHE;
            port_at = k;
        } else {
            return refuse(l, line_of(k), sub,
                          "unknown key (a listener has cache and one of resp, memcache)");
        }
    }
    if (!port_at)
        return refuse(l, line_of(item), key, "needs resp: HOST:PORT or memcache: HOST:PORT");
    l->listener_line[o->nlisteners] = line_of(item);
    o->listeners[o->nlisteners++] = lo;
    return 0;
}

/* Two listeners on one address would fail at the second bind, and then
 * without the file's line: refused here, where both lines are known. A
 * bare port is on --bind as the file (or the default) gives it; a command
 * line --bind that makes two collide is caught by the bind itself, and so
 * are spellings of one address that differ (localhost, 127.0.0.1). */
static int check_clashes(const loader *l)
{
    const px_options *o = l->o;
    for (int i = l->first_listener; i < o->nlisteners; i++) {
        const px_listen_opt *a = &o->listeners[i];
        const char *ha = a->host ? a->host : o->bind;
        for (int j = l->first_listener; j < i && a->port != 0; j++) {
            const px_listen_opt *b = &o->listeners[j];
            const char *hb = b->host ? b->host : o->bind;
            if (b->port == a->port && ha && hb && !strcmp(ha, hb)) {
                char key[48];
                snprintf(key, sizeof(key), "listeners[%d]", i - l->first_listener);
                return refuse(l, l->listener_line[i], key,
                              strchr(ha, ':') ? "[%s]:%d is listeners[%d]'s too (line %d)"
                                              : "%s:%d is listeners[%d]'s too (line %d)",
                              ha, a->port, j - l->first_listener, l->listener_line[j]);
            }
        }
    }
    return 0;
}

static int set_listeners(loader *l, const yaml_node_t *k, const yaml_node_t *v)
{
    if (v->type != YAML_SEQUENCE_NODE || v->data.sequence.items.start == v->data.sequence.items.top)
        return refuse(l, line_of(v), key_text(k),
                      v->type == YAML_SEQUENCE_NODE
                          ? "an empty list: give at least one listener, or leave the key out"
                          : "must be a list of listeners, each {cache: NAME, resp: HOST:PORT} "
                            "or {cache: NAME, memcache: HOST:PORT}");
    int index = 0;
    for (const yaml_node_item_t *it = v->data.sequence.items.start;
         it < v->data.sequence.items.top; it++) {
        int rc = add_listener(l, node(l, *it), index++);
        if (rc)
            return rc;
    }
    return 0;
}

/* ---- the top level ---- */

static int load_root(loader *l, const yaml_node_t *root)
{
    if (root->type != YAML_MAPPING_NODE)
        return refuse(l, line_of(root), "(top level)",
                      "must be a mapping of options (key: value), not %s", kind_name(root));
    for (const yaml_node_pair_t *p = root->data.mapping.pairs.start;
         p < root->data.mapping.pairs.top; p++) {
        const yaml_node_t *k = node(l, p->key), *v = node(l, p->value);
        char name[KEY_MAX];
        if (!option_name(k, name)) {
            if (k->type != YAML_SCALAR_NODE)
                return refuse(l, line_of(k), "(key)", "a key must be a name, not %s",
                              kind_name(k));
            return refuse(l, line_of(k), key_text(k), "unknown key");
        }
        bool headers = !strcmp(name, "header") || !strcmp(name, "headers");
        int rc = note_key(l, k, headers ? "header" : name);
        if (rc)
            return rc;
        if (headers)
            rc = set_headers(l, k, v);
        else if (!strcmp(name, "listeners"))
            rc = set_listeners(l, k, v);
        else if (!strcmp(name, "config") || !strcmp(name, "help"))
            rc = refuse(l, line_of(k), key_text(k), "a command-line option only");
        else
            rc = set_option(l, k, name, v);
        if (rc)
            return rc;
    }
    return check_clashes(l);
}

int px_config_load(px_options *o, const char *path)
{
    FILE *f = fopen(path, "re");
    if (!f) {
        fprintf(stderr, "%s: --config %s: %s\n", prog, path, strerror(errno));
        return 2;
    }
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || S_ISDIR(st.st_mode)) {
        fprintf(stderr, "%s: --config %s: %s\n", prog, path,
                S_ISDIR(st.st_mode) ? strerror(EISDIR) : strerror(errno));
        fclose(f);
        return 2;
    }
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p)) {
        fclose(f);
        fprintf(stderr, "%s: %s: out of memory\n", prog, path);
        return 1;
    }
    reader r = {.f = f};
    yaml_parser_set_input(&p, read_some, &r);
    yaml_document_t doc, more;
    int rc = 0;
    /* The whole stream is parsed before anything is set: a syntax error
     * anywhere, or a second document, leaves the options untouched. */
    if (!yaml_parser_load(&p, &doc)) {
        rc = parse_failed(path, &p, &r);
    } else {
        if (!yaml_parser_load(&p, &more)) {
            rc = parse_failed(path, &p, &r);
        } else {
            yaml_node_t *second = yaml_document_get_root_node(&more);
            if (second) {
                fprintf(stderr,
                        "%s: %s:%d: a second YAML document: a config file holds one\n", prog,
                        path, line_of(second));
                rc = 2;
            }
            yaml_document_delete(&more);
        }
        /* No root: an empty file, or comments only, which sets nothing. */
        yaml_node_t *root = yaml_document_get_root_node(&doc);
        loader *l = rc == 0 && root ? calloc(1, sizeof(*l)) : NULL;
        if (rc == 0 && root && !l) {
            fprintf(stderr, "%s: %s: out of memory\n", prog, path);
            rc = 1;
        }
        if (l) {
            l->o = o;
            l->path = path;
            l->doc = &doc;
            l->first_listener = o->nlisteners;
            rc = load_root(l, root);
            if (rc == 0 && l->requirepass && (st.st_mode & S_IROTH))
                fprintf(stderr,
                        "%s: warning: %s holds requirepass and any user can read it (mode "
                        "%04o): chmod o-r %s\n",
                        prog, path, (unsigned)(st.st_mode & 07777), path);
            free(l);
        }
        yaml_document_delete(&doc);
    }
    yaml_parser_delete(&p);
    fclose(f);
    return rc;
}
