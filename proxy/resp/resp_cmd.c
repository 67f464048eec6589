/* What every RESP command's handler uses (resp_cmd.h): the reply
 * encoders, the argument readers, the connection's state. */
#include "resp/resp_cmd.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
static bool length_failed(px_reply *r, const momento_result *res)
{
    if (momento_result_error(res) == MOMENTO_OK)
        return false;
    resp_end_failure(r, res);
    return true;
}

void resp_on_length(const momento_result *res, void *ud)
{
    px_reply *r = ud;
    if (length_failed(r, res))
        return;
    resp_int(r, momento_result_is_hit(res) ? (long long)momento_result_int(res) : 0);
    px_reply_end(r);
}

void resp_on_type_then_empty(const momento_result *res, void *ud)
{
    px_reply *r = ud;
    if (length_failed(r, res))
        return;
    resp_array(r, 0);
    px_reply_end(r);
}

void resp_on_type_then_nil(const momento_result *res, void *ud)
{
    px_reply *r = ud;
    if (length_failed(r, res))
        return;
    resp_nil(r);
    px_reply_end(r);
}

void resp_on_type_then_zero(const momento_result *res, void *ud)
{
    px_reply *r = ud;
    if (length_failed(r, res))
        return;
    resp_int(r, 0);
    px_reply_end(r);
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
