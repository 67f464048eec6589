/* Result accessors, and owned copies for blocking calls and
 * momento_result_dup(). A copy is one allocation holding the struct and every
 * string and buffer it points to, so freeing it is a single free(). */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

void momento__result_local_error(momento_result *r, int err, const char *message)
{
    memset(r, 0, sizeof(*r));
    r->error = err;
    r->grpc_status = -1;
    r->outcome = MOMENTO_OUTCOME_ERROR;
    r->message = message ? message : "";
}

int momento_result_error(const momento_result *r)
{
    return r ? r->error : MOMENTO_ERR_INVALID_ARGUMENT;
}

momento_outcome momento_result_outcome(const momento_result *r)
{
    return r ? r->outcome : MOMENTO_OUTCOME_ERROR;
}

int momento_result_grpc_status(const momento_result *r)
{
    return r ? r->grpc_status : -1;
}

const char *momento_result_message(const momento_result *r)
{
    return r && r->message ? r->message : "";
}

const char *momento_result_error_detail(const momento_result *r)
{
    return r ? r->error_detail : NULL;
}

int momento_result_is_hit(const momento_result *r)
{
    return r && r->outcome == MOMENTO_OUTCOME_HIT;
}

const void *momento_result_value(const momento_result *r, size_t *ret_len)
{
    if (!r || r->outcome != MOMENTO_OUTCOME_HIT) {
        if (ret_len)
            *ret_len = 0;
        return NULL;
    }
    if (ret_len)
        *ret_len = r->value_len;
    /* A hit with an empty value still returns a non-NULL pointer so callers
     * can tell "empty" from "no value". */
    return r->value ? (const void *)r->value : (const void *)"";
}

size_t momento_result_cache_count(const momento_result *r)
{
    return r ? r->n_caches : 0;
}

const char *momento_result_cache_name(const momento_result *r, size_t i)
{
    if (!r || i >= r->n_caches)
        return NULL;
    return r->caches[i];
}

static size_t str_size(const char *s)
{
    return s ? strlen(s) + 1 : 0;
}

int momento_result_dup(const momento_result *r, momento_result **ret)
{
    if (!r || !ret)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    size_t size = sizeof(momento_result);
    size += r->n_caches * sizeof(char *);
    for (size_t i = 0; i < r->n_caches; i++)
        size += str_size(r->caches[i]);
    size += str_size(r->message) + str_size(r->error_detail) + r->value_len + 1;

    momento_result *d = malloc(size);
    if (!d)
        return MOMENTO_ERR_NO_MEMORY;
    *d = *r;
    char *p = (char *)(d + 1);
    const char **names = (const char **)p;
    p += r->n_caches * sizeof(char *);
    for (size_t i = 0; i < r->n_caches; i++) {
        size_t n = str_size(r->caches[i]);
        memcpy(p, r->caches[i], n);
        names[i] = p;
        p += n;
    }
    d->caches = r->n_caches ? names : NULL;
    if (r->message) {
        size_t n = str_size(r->message);
        memcpy(p, r->message, n);
        d->message = p;
        p += n;
    }
    if (r->error_detail) {
        size_t n = str_size(r->error_detail);
        memcpy(p, r->error_detail, n);
        d->error_detail = p;
        p += n;
    }
    if (r->value_len)
        memcpy(p, r->value, r->value_len);
    d->value = r->value ? (const uint8_t *)p : NULL;
    d->next_token = NULL;
    *ret = d;
    return MOMENTO_OK;
}

void momento_result_free(momento_result *r)
{
    free(r);
}
