/* What every RESP command's handler uses (resp_cmd.h): the reply
 * encoders, the argument readers, the connection's state. */
#include "resp/resp_cmd.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- replies ---- */

void resp_ok(px_reply *r)
{
    px_reply_put(r, "+OK\r\n", 5);
}

void resp_simple(px_reply *r, const char *s)
{
    px_reply_put(r, "+", 1);
    px_reply_puts(r, s);
    px_reply_put(r, "\r\n", 2);
}

/* Redis replaces newlines in an error with spaces: an error is one line. */
void resp_error(px_reply *r, const char *msg)
{
    px_reply_put(r, "-", 1);
    for (const char *p = msg; *p;) {
        size_t n = strcspn(p, "\r\n");
        px_reply_put(r, p, n);
        p += n;
        if (*p) {
            px_reply_put(r, " ", 1);
            p++;
        }
    }
    px_reply_put(r, "\r\n", 2);
}

void resp_errorf(px_reply *r, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    resp_error(r, buf);
}

void resp_int(px_reply *r, long long v)
{
    char buf[32];
    int n = snprintf(buf, sizeof(buf), ":%lld\r\n", v);
    px_reply_put(r, buf, (size_t)n);
}

void resp_bulk(px_reply *r, const void *p, size_t n)
{
    char buf[32];
    int h = snprintf(buf, sizeof(buf), "$%zu\r\n", n);
    px_reply_put(r, buf, (size_t)h);
    px_reply_put(r, p, n);
    px_reply_put(r, "\r\n", 2);
}

void resp_bulk_str(px_reply *r, const char *s)
{
    resp_bulk(r, s, strlen(s));
}

void resp_nil(px_reply *r)
{
    px_reply_put(r, "$-1\r\n", 5);
}

void resp_array(px_reply *r, long long n)
{
    char buf[32];
    int h = snprintf(buf, sizeof(buf), "*%lld\r\n", n);
    px_reply_put(r, buf, (size_t)h);
}

void resp_nil_array(px_reply *r)
{
    px_reply_put(r, "*-1\r\n", 5);
}

void resp_format_double(double d, char *buf, size_t size)
{
    /* Redis 7.0's addReplyDouble: "%.17g", and inf / -inf (7.2 prints
     * the shortest form instead; Debian 12 ships 7.0). */
    if (isinf(d))
        snprintf(buf, size, "%s", d > 0 ? "inf" : "-inf");
    else
        snprintf(buf, size, "%.17g", d);
}

void resp_double(px_reply *r, double d)
{
    char buf[64];
    resp_format_double(d, buf, sizeof(buf));
    resp_bulk_str(r, buf);
}

void resp_momento_error(px_reply *r, int rc, const momento_result *res)
{
    px_backend *b = px_conn_backend(px_reply_conn(r));
    b->stats->backend_errors++;
    if (rc == MOMENTO_OK)
        rc = momento_result_error(res);
    const char *msg = res ? momento_result_message(res) : NULL;
    if (!msg || !*msg)
        msg = momento_strerror(rc);
    resp_errorf(r, "ERR momento %s: %s", momento_error_name(rc), msg);
    px_reply_end(r);
}

void resp_end_error(px_reply *r, const char *msg)
{
    resp_error(r, msg);
    px_reply_end(r);
}

void *resp_ctx_new(px_reply *r, size_t size)
{
    void *ctx = calloc(1, size);
    if (!ctx)
        resp_end_error(r, "ERR out of memory");
    return ctx;
}

void resp_end_wrongtype(px_reply *r)
{
    resp_end_error(r, "WRONGTYPE Operation against a key holding the wrong kind of value");
}

void resp_end_syntax(px_reply *r)
{
    resp_end_error(r, "ERR syntax error");
}

void resp_end_not_integer(px_reply *r)
{
    resp_end_error(r, "ERR value is not an integer or out of range");
}

bool resp_submitted(px_reply *r, int rc)
{
    if (rc == MOMENTO_OK) {
        px_conn_backend(px_reply_conn(r))->stats->backend_calls++;
        return true;
    }
    resp_momento_error(r, rc, NULL);
    return false;
}

bool resp_is_wrongtype(const momento_result *res)
{
    return momento_result_error(res) == MOMENTO_ERR_FAILED_PRECONDITION;
}

void resp_end_failure(px_reply *r, const momento_result *res)
{
    if (resp_is_wrongtype(res))
        resp_end_wrongtype(r);
    else
        resp_momento_error(r, 0, res);
}

/* The answers a length call decides (resp_cmd.h). */
void resp_on_length(const momento_result *res, void *ud)
{
    px_reply *r = ud;
    if (resp_end_if_failed(r, res))
        return;
    resp_end_int(r, momento_result_is_hit(res) ? (long long)momento_result_int(res) : 0);
}

void resp_on_type_then_empty(const momento_result *res, void *ud)
{
    px_reply *r = ud;
    if (resp_end_if_failed(r, res))
        return;
    resp_array(r, 0);
    px_reply_end(r);
}

void resp_on_type_then_nil(const momento_result *res, void *ud)
{
    px_reply *r = ud;
    if (resp_end_if_failed(r, res))
        return;
    resp_nil(r);
    px_reply_end(r);
}

void resp_on_type_then_zero(const momento_result *res, void *ud)
{
    px_reply *r = ud;
    if (resp_end_if_failed(r, res))
        return;
    resp_end_int(r, 0);
}

void resp_length(px_reply *r, const px_str *key, momento_item_type type, momento_callback cb)
{
    px_backend *b = px_conn_backend(px_reply_conn(r));
    momento_coalescer *co = b->co;
    int rc;
    switch (type) {
    case MOMENTO_ITEM_TYPE_SET:
        rc = co ? momento_coalescing_set_length(co, b->cache, key->p, key->n, NULL, cb, r)
                : momento_set_length(b->client, b->cache, key->p, key->n, NULL, cb, r);
        break;
    case MOMENTO_ITEM_TYPE_SORTED_SET:
        rc = co ? momento_coalescing_sorted_set_length(co, b->cache, key->p, key->n, NULL, cb, r)
                : momento_sorted_set_length(b->client, b->cache, key->p, key->n, NULL, cb, r);
        break;
    case MOMENTO_ITEM_TYPE_LIST:
        rc = co ? momento_coalescing_list_length(co, b->cache, key->p, key->n, NULL, cb, r)
                : momento_list_length(b->client, b->cache, key->p, key->n, NULL, cb, r);
        break;
    default: /* MOMENTO_ITEM_TYPE_DICTIONARY */
        rc = co ? momento_coalescing_dictionary_length(co, b->cache, key->p, key->n, NULL, cb, r)
                : momento_dictionary_length(b->client, b->cache, key->p, key->n, NULL, cb, r);
        break;
    }
    resp_submitted(r, rc);
}

/* ---- answering a result ---- */

bool resp_end_if_failed(px_reply *r, const momento_result *res)
{
    if (momento_result_error(res) == MOMENTO_OK)
        return false;
    resp_end_failure(r, res);
    return true;
}

bool resp_end_if_error(px_reply *r, const momento_result *res)
{
    if (momento_result_error(res) == MOMENTO_OK)
        return false;
    resp_momento_error(r, 0, res);
    return true;
}

void resp_end_int(px_reply *r, long long v)
{
    resp_int(r, v);
    px_reply_end(r);
}

void resp_end_ok(px_reply *r)
{
    resp_ok(r);
    px_reply_end(r);
}

void resp_end_int_or_failure(px_reply *r, const momento_result *res, long long v)
{
    if (!resp_end_if_failed(r, res))
        resp_end_int(r, v);
}

void resp_end_int_or_error(px_reply *r, const momento_result *res, long long v)
{
    if (!resp_end_if_error(r, res))
        resp_end_int(r, v);
}

size_t resp_count_hits(const momento_result *res)
{
    size_t hits = 0;
    if (momento_result_is_hit(res))
        for (size_t i = 0; i < momento_result_item_count(res); i++)
            if (momento_result_is_hit(momento_result_item(res, i)))
                hits++;
    return hits;
}

void resp_count_read(px_reply *r, bool hit)
{
    px_backend *b = px_conn_backend(px_reply_conn(r));
    if (hit)
        b->stats->hits++;
    else
        b->stats->misses++;
}

void resp_bulk_value(px_reply *r, const momento_result *it)
{
    size_t len;
    const void *v = momento_result_value(it, &len);
    resp_bulk(r, v, len);
}

void resp_read_value(px_reply *r, const momento_result *it, bool hit)
{
    resp_count_read(r, hit);
    if (hit)
        resp_bulk_value(r, it);
    else
        resp_nil(r);
}

void resp_on_values(const momento_result *res, void *ud)
{
    px_reply *r = ud;
    if (resp_end_if_failed(r, res))
        return;
    size_t n = momento_result_is_hit(res) ? momento_result_item_count(res) : 0;
    resp_array(r, (long long)n);
    for (size_t i = 0; i < n; i++)
        resp_bulk_value(r, momento_result_item(res, i));
    px_reply_end(r);
}

void resp_on_first_or_nil(const momento_result *res, void *ud)
{
    px_reply *r = ud;
    if (resp_end_if_failed(r, res))
        return;
    if (momento_result_is_hit(res) && momento_result_item_count(res) > 0)
        resp_bulk_value(r, momento_result_item(res, 0));
    else
        resp_nil(r);
    px_reply_end(r);
}

/* ---- multi-field reads and STORE writes ---- */

bool resp_arrays_new(size_t n, const void ***ret_ps, size_t **ret_lens)
{
    const void **ps = malloc(n * sizeof(*ps));
    size_t *lens = malloc(n * sizeof(*lens));
    if (!ps || !lens) {
        free(ps);
        free(lens);
        return false;
    }
    *ret_ps = ps;
    *ret_lens = lens;
    return true;
}

bool resp_str_arrays(const px_str *strs, size_t n, const void ***ret_ps, size_t **ret_lens)
{
    if (!resp_arrays_new(n, ret_ps, ret_lens))
        return false;
    for (size_t i = 0; i < n; i++) {
        (*ret_ps)[i] = strs[i].p;
        (*ret_lens)[i] = strs[i].n;
    }
    return true;
}

/* resp_read_many()'s call: what its callback needs to answer. */
typedef struct many_req {
    px_reply *r;
    size_t n;
    bool array;
    resp_each_fn each;
} many_req;

static void on_many(const momento_result *res, void *ud)
{
    many_req q = *(many_req *)ud;
    free(ud);
    if (resp_end_if_failed(q.r, res))
        return;
    if (q.array)
        resp_array(q.r, (long long)q.n);
    for (size_t i = 0; i < q.n; i++)
        q.each(q.r, res, i);
    px_reply_end(q.r);
}

/* The reads resp_read_many() makes, one pair per type: the coalesced
 * form and the direct one, which take the same arguments but the first. */
typedef int (*many_coalesced_fn)(momento_coalescer *co, const char *cache, const void *key,
                                 size_t key_len, const void *const *items,
                                 const size_t *item_lens, size_t n,
                                 const momento_request_options *opts, momento_callback cb,
                                 void *userdata);
typedef int (*many_direct_fn)(momento_client *c, const char *cache, const void *key,
                              size_t key_len, const void *const *items, const size_t *item_lens,
                              size_t n, const momento_request_options *opts, momento_callback cb,
                              void *userdata);

void resp_read_many(px_reply *r, int argc, const px_str *argv, momento_item_type type, bool array,
                    resp_each_fn each)
{
    px_backend *b = px_conn_backend(px_reply_conn(r));
    const px_str *key = &argv[1];
    size_t n = (size_t)argc - 2;
    many_req *q = malloc(sizeof(*q));
    const void **ps;
    size_t *lens;
    if (!q || !resp_str_arrays(argv + 2, n, &ps, &lens)) {
        free(q);
        resp_end_error(r, "ERR out of memory");
        return;
    }
    *q = (many_req){r, n, array, each};
    /* A dictionary's fields, else a set's elements or a sorted set's scores. */
    many_coalesced_fn coalesced = momento_coalescing_dictionary_get_fields;
    many_direct_fn direct = momento_dictionary_get_fields;
    if (type == MOMENTO_ITEM_TYPE_SET) {
        coalesced = momento_coalescing_set_contains_elements;
        direct = momento_set_contains_elements;
    } else if (type == MOMENTO_ITEM_TYPE_SORTED_SET) {
        coalesced = momento_coalescing_sorted_set_get_scores;
        direct = momento_sorted_set_get_scores;
    }
    const void *const *v = (const void *const *)ps;
    int rc = b->co ? coalesced(b->co, b->cache, key->p, key->n, v, lens, n, NULL, on_many, q)
                   : direct(b->client, b->cache, key->p, key->n, v, lens, n, NULL, on_many, q);
    free(ps);
    free(lens);
    if (!resp_submitted(r, rc))
        free(q);
}

bool resp_store_fits(px_reply *r, const char *what, size_t bytes)
{
    if (bytes <= MOMENTO_MAX_ITEM_BYTES)
        return true;
    resp_errorf(r, "ERR momento %s: the %s (%zu bytes) is over Momento's item limit of %u bytes",
                momento_error_name(MOMENTO_ERR_LIMIT_EXCEEDED), what, bytes,
                (unsigned)MOMENTO_MAX_ITEM_BYTES);
    px_reply_end(r);
    return false;
}

bool resp_store_cleared(px_reply *r, const momento_result *res, size_t n)
{
    if (resp_end_if_failed(r, res))
        return false;
    if (n > 0)
        return true;
    resp_end_int(r, 0); /* Redis deletes the destination of an empty answer */
    return false;
}

/* ---- arguments ---- */

bool resp_arg_is(const px_str *a, const char *lower)
{
    size_t n = strlen(lower);
    if (a->n != n)
        return false;
    for (size_t i = 0; i < n; i++)
        if (tolower((unsigned char)a->p[i]) != lower[i])
            return false;
    return true;
}

bool resp_arg_ll(const px_str *a, long long *out)
{
    char buf[32];
    if (a->n == 0 || a->n >= sizeof(buf))
        return false;
    memcpy(buf, a->p, a->n);
    buf[a->n] = '\0';
    /* Redis's string2ll: no spaces, no '+', no leading zeros. */
    if (buf[0] == '+' || isspace((unsigned char)buf[0]))
        return false;
    const char *digits = buf[0] == '-' ? buf + 1 : buf;
    if (!*digits || (digits[0] == '0' && digits[1]))
        return false;
    if (buf[0] == '-' && digits[0] == '0')
        return false;
    char *end;
    errno = 0;
    long long v = strtoll(buf, &end, 10);
    if (errno || *end)
        return false;
    *out = v;
    return true;
}

bool resp_arg_double(const px_str *a, double *out)
{
    char buf[256];
    if (a->n == 0 || a->n >= sizeof(buf))
        return false;
    memcpy(buf, a->p, a->n);
    buf[a->n] = '\0';
    if (isspace((unsigned char)buf[0]))
        return false;
    char *end;
    errno = 0;
    double d = strtod(buf, &end);
    /* As Redis's string2ld: an overflow (inf from finite text) or an
     * underflow to 0 is not a float; a subnormal is. */
    if (*end || isnan(d) || (errno == ERANGE && (isinf(d) || d == 0)))
        return false;
    *out = d;
    return true;
}

bool resp_pop_count(px_reply *r, const px_str *argv, momento_item_type type, momento_callback zero,
                    long long *count)
{
    if (!resp_arg_ll(&argv[2], count) || *count < 0) {
        resp_end_error(r, "ERR value is out of range, must be positive");
        return false;
    }
    if (*count == 0) {
        resp_length(r, &argv[1], type, zero);
        return false;
    }
    return true;
}

int64_t resp_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

uint64_t resp_default_ttl(const px_reply *r)
{
    return px_conn_backend(px_reply_conn(r))->default_ttl_ms;
}

const momento_collection_ttl *resp_keep_ttl(const px_reply *r, momento_collection_ttl *t)
{
    t->ttl_ms = resp_default_ttl(r);
    t->refresh = 0;
    return t;
}

/* ---- the connection's state ---- */

resp_pubsub **resp_conn_pubsub(px_conn *c)
{
    resp_state *st = px_conn_state(c);
    return st ? &st->ps : NULL;
}
