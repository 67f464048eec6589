/* Result accessors, and owned copies for blocking calls and
 * momento_result_dup(). A copy is one allocation holding the struct and every
 * string and buffer it points to, so freeing it is a single free(). */
#include "model/result.h"

#include "base/alloc.h"

#include "momento/webhooks.h"

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

const char *momento_outcome_name(momento_outcome o)
{
    /* Indexed by value, so a value added to the enum without a name here
     * reads as unrecognised rather than as a neighbour's name. */
    static const char *const names[] = {
        [MOMENTO_OUTCOME_ERROR] = "ERROR",
        [MOMENTO_OUTCOME_SUCCESS] = "SUCCESS",
        [MOMENTO_OUTCOME_HIT] = "HIT",
        [MOMENTO_OUTCOME_MISS] = "MISS",
        [MOMENTO_OUTCOME_CREATED] = "CREATED",
        [MOMENTO_OUTCOME_ALREADY_EXISTS] = "ALREADY_EXISTS",
        [MOMENTO_OUTCOME_STORED] = "STORED",
        [MOMENTO_OUTCOME_NOT_STORED] = "NOT_STORED",
        [MOMENTO_OUTCOME_TTL_UPDATED] = "TTL_UPDATED",
        [MOMENTO_OUTCOME_TTL_NOT_UPDATED] = "TTL_NOT_UPDATED",
    };
    /* Compared as unsigned: a negative value cast to the enum is out of
     * range too. */
    if ((unsigned)o < sizeof(names) / sizeof(names[0]) && names[o])
        return names[o];
    return "UNRECOGNISED";
}

int momento_result_grpc_status(const momento_result *r)
{
    return r ? r->grpc_status : -1;
}

const char *momento_result_message(const momento_result *r)
{
    return r && r->message ? r->message : "";
}

int momento_result_attempts(const momento_result *r)
{
    return r ? r->attempts : 0;
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

const void *momento_result_hash(const momento_result *r, size_t *ret_len)
{
    /* Only the outcomes that carry one: a stale pointer can never leak out
     * of a result whose outcome says there is no hash. */
    int has = r && r->hash &&
           (r->outcome == MOMENTO_OUTCOME_HIT || r->outcome == MOMENTO_OUTCOME_STORED);
    if (ret_len)
        *ret_len = has ? r->hash_len : 0;
    return has ? (const void *)r->hash : NULL;
}

int64_t momento_result_int(const momento_result *r)
{
    return r ? r->int_value : 0;
}

uint64_t momento_result_ttl_ms(const momento_result *r)
{
    return r && r->outcome == MOMENTO_OUTCOME_HIT ? r->ttl_ms : 0;
}

momento_item_type momento_result_item_type(const momento_result *r)
{
    return r && r->outcome == MOMENTO_OUTCOME_HIT ? r->item_type : MOMENTO_ITEM_TYPE_NONE;
}

const void *momento_result_field(const momento_result *r, size_t *ret_len)
{
    if (ret_len)
        *ret_len = r && r->field ? r->field_len : 0;
    return r ? r->field : NULL;
}

double momento_result_score(const momento_result *r)
{
    return r ? r->score : 0.0;
}

size_t momento_result_exists_count(const momento_result *r)
{
    return r ? r->n_exists : 0;
}

int momento_result_exists(const momento_result *r, size_t i)
{
    if (!r || i >= r->n_exists)
        return -1;
    return r->exists[i];
}

size_t momento_result_item_count(const momento_result *r)
{
    return r ? r->n_items : 0;
}

const momento_result *momento_result_item(const momento_result *r, size_t i)
{
    if (!r || i >= r->n_items)
        return NULL;
    return &r->items[i];
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

const momento_cache_limits *momento_result_cache_limits(const momento_result *r, size_t i)
{
    if (!r || i >= r->n_caches || !r->cache_limits)
        return NULL;
    return &r->cache_limits[i];
}

size_t momento_result_trailer_count(const momento_result *r)
{
    return r ? r->n_trailers : 0;
}

const momento_metadata *momento_result_trailer(const momento_result *r, size_t i)
{
    if (!r || i >= r->n_trailers)
        return NULL;
    return &r->trailers[i];
}

static size_t str_size(const char *s)
{
    return s ? strlen(s) + 1 : 0;
}

/* A copy is laid out as: the struct, its items' structs, the cache-name
 * pointer array, the caches' limits, the trailers, then every byte string (names, message, detail, value,
 * items' values, exists flags, hash, an API key's refresh token, a webhook's secret); a
 * listing's webhooks sit after the trailers, their strings among the bytes. Items are one level deep: an item has no
 * items of its own. */
size_t momento__result_copy_size(const momento_result *r)
{
    size_t size = sizeof(momento_result) + r->n_items * sizeof(momento_result);
    size += r->n_caches * sizeof(char *);
    if (r->cache_limits)
        size += r->n_caches * sizeof(momento_cache_limits);
    size += r->n_trailers * sizeof(momento_metadata);
    for (size_t i = 0; i < r->n_trailers; i++)
        size += r->trailers[i].name_len + 1 + r->trailers[i].value_len + 1;
    for (size_t i = 0; i < r->n_caches; i++)
        size += str_size(r->caches[i]);
    size += str_size(r->message) + str_size(r->error_detail) + r->value_len + 1;
    for (size_t i = 0; i < r->n_items; i++)
        size += r->items[i].value_len + 1 + r->items[i].field_len + 1 +
                str_size(r->items[i].message);
    size += r->field_len + 1;
    size += r->hash_len;
    size += str_size(r->refresh_token);
    size += str_size(r->webhook_secret);
    size += r->n_webhooks * sizeof(momento_webhook);
    for (size_t i = 0; i < r->n_webhooks; i++)
        size += str_size(r->webhooks[i].cache) + str_size(r->webhooks[i].name) +
                str_size(r->webhooks[i].topic) + str_size(r->webhooks[i].url);
    return size + r->n_exists;
}

static char *put_bytes(char **p, const void *src, size_t n)
{
    char *at = *p;
    if (n)
        memcpy(at, src, n);
    *p += n;
    return at;
}

int momento_result_dup(const momento_result *r, momento_result **ret)
{
    if (!r || !ret)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    void *mem = momento__malloc(momento__result_copy_size(r));
    if (!mem)
        return MOMENTO_ERR_NO_MEMORY;
    *ret = momento__result_copy_into(r, mem);
    return MOMENTO_OK;
}

momento_result *momento__result_copy_into(const momento_result *r, void *mem)
{
    momento_result *d = mem;
    *d = *r;
    momento_result *items = d + 1;
    const char **names = (const char **)(items + r->n_items);
    /* Pointers and the limits' uint64_t share an alignment: no padding. */
    momento_cache_limits *limits = (momento_cache_limits *)(names + r->n_caches);
    momento_metadata *trailers =
        (momento_metadata *)(r->cache_limits ? limits + r->n_caches : limits);
    /* A listing's webhooks: four pointers each, after the trailers (whose
     * alignment is a pointer's too). */
    momento_webhook *webhooks = (momento_webhook *)(trailers + r->n_trailers);
    char *p = (char *)(webhooks + r->n_webhooks);
    for (size_t i = 0; i < r->n_webhooks; i++) {
        webhooks[i].cache = put_bytes(&p, r->webhooks[i].cache, str_size(r->webhooks[i].cache));
        webhooks[i].name = put_bytes(&p, r->webhooks[i].name, str_size(r->webhooks[i].name));
        webhooks[i].topic = put_bytes(&p, r->webhooks[i].topic, str_size(r->webhooks[i].topic));
        webhooks[i].url = put_bytes(&p, r->webhooks[i].url, str_size(r->webhooks[i].url));
    }
    d->webhooks = r->n_webhooks ? webhooks : NULL;
    if (r->cache_limits && r->n_caches)
        memcpy(limits, r->cache_limits, r->n_caches * sizeof(*limits));
    d->cache_limits = r->cache_limits && r->n_caches ? limits : NULL;
    /* Each trailer's name and value NUL-terminated, for the reader's ease
     * (the lengths stay the truth: a binary value may hold NULs). */
    for (size_t i = 0; i < r->n_trailers; i++) {
        trailers[i].name = put_bytes(&p, r->trailers[i].name, r->trailers[i].name_len);
        trailers[i].name_len = r->trailers[i].name_len;
        *p++ = '\0';
        trailers[i].value =
            (const uint8_t *)put_bytes(&p, r->trailers[i].value, r->trailers[i].value_len);
        trailers[i].value_len = r->trailers[i].value_len;
        *p++ = '\0';
    }
    d->trailers = r->n_trailers ? trailers : NULL;

    for (size_t i = 0; i < r->n_caches; i++)
        names[i] = put_bytes(&p, r->caches[i], str_size(r->caches[i]));
    d->caches = r->n_caches ? names : NULL;
    if (r->message)
        d->message = put_bytes(&p, r->message, str_size(r->message));
    if (r->error_detail)
        d->error_detail = put_bytes(&p, r->error_detail, str_size(r->error_detail));
    d->value = r->value ? (const uint8_t *)put_bytes(&p, r->value, r->value_len) : NULL;
    *p++ = '\0';
    d->field = r->field ? (const uint8_t *)put_bytes(&p, r->field, r->field_len) : NULL;
    *p++ = '\0';
    for (size_t i = 0; i < r->n_items; i++) {
        items[i] = r->items[i];
        /* An item's message explains its own error (a batch item's value
         * that did not decompress); most are empty. */
        items[i].message = r->items[i].message
                               ? put_bytes(&p, r->items[i].message, str_size(r->items[i].message))
                               : "";
        items[i].error_detail = NULL;
        items[i].value = r->items[i].value
                             ? (const uint8_t *)put_bytes(&p, r->items[i].value, r->items[i].value_len)
                             : NULL;
        *p++ = '\0';
        items[i].field = r->items[i].field
                             ? (const uint8_t *)put_bytes(&p, r->items[i].field, r->items[i].field_len)
                             : NULL;
        *p++ = '\0';
        items[i].items = NULL;
        items[i].n_items = 0;
        items[i].trailers = NULL; /* the reply's are the result's own */
        items[i].n_trailers = 0;
    }
    d->items = r->n_items ? items : NULL;
    d->exists = r->n_exists ? (const uint8_t *)put_bytes(&p, r->exists, r->n_exists) : NULL;
    d->hash = r->hash ? (const uint8_t *)put_bytes(&p, r->hash, r->hash_len) : NULL;
    d->next_token = NULL;
    d->refresh_token =
        r->refresh_token ? put_bytes(&p, r->refresh_token, strlen(r->refresh_token) + 1) : NULL;
    d->webhook_secret =
        r->webhook_secret ? put_bytes(&p, r->webhook_secret, strlen(r->webhook_secret) + 1) : NULL;
    return d;
}

void momento_result_free(momento_result *r)
{
    free(r);
}
