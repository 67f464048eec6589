/* The error enum's names and texts, the gRPC status → error mapping that
 * official Momento SDKs use (docs/protocol.md "Status codes"), and the finer
 * reading of a reply they make from its `err` trailer and message: which
 * not-found, whose resource ran out, which limit was hit. */
#include "model/errors.h"

#include "model/result.h"

#include <stddef.h>
#include <string.h>

struct error_info {
    int code;
    const char *name;
    const char *text;
};

static const struct error_info errors[] = {
    {MOMENTO_OK, "OK", "success"},
    {MOMENTO_ERR_INVALID_ARGUMENT, "INVALID_ARGUMENT_ERROR", "invalid argument"},
    {MOMENTO_ERR_BAD_REQUEST, "BAD_REQUEST_ERROR", "the service rejected the request as malformed or unsupported"},
    {MOMENTO_ERR_FAILED_PRECONDITION, "FAILED_PRECONDITION_ERROR", "the item is not in a state the operation needs"},
    {MOMENTO_ERR_CANCELLED, "CANCELLED_ERROR", "the request was cancelled"},
    {MOMENTO_ERR_TIMEOUT, "TIMEOUT_ERROR", "the request's deadline passed"},
    {MOMENTO_ERR_PERMISSION, "PERMISSION_ERROR", "the credentials lack permission for this operation"},
    {MOMENTO_ERR_AUTHENTICATION, "AUTHENTICATION_ERROR", "the credentials were not accepted"},
    {MOMENTO_ERR_LIMIT_EXCEEDED, "LIMIT_EXCEEDED_ERROR", "a service limit was exceeded"},
    {MOMENTO_ERR_CACHE_NOT_FOUND, "CACHE_NOT_FOUND_ERROR", "the cache does not exist"},
    {MOMENTO_ERR_ALREADY_EXISTS, "ALREADY_EXISTS_ERROR", "the resource exists already"},
    {MOMENTO_ERR_UNKNOWN_SERVICE, "UNKNOWN_SERVICE_ERROR", "the service failed in an unknown way"},
    {MOMENTO_ERR_INTERNAL_SERVER, "INTERNAL_SERVER_ERROR", "the service had an internal error"},
    {MOMENTO_ERR_SERVER_UNAVAILABLE, "SERVER_UNAVAILABLE", "the service could not be reached"},
    {MOMENTO_ERR_UNKNOWN, "UNKNOWN_ERROR", "unknown error"},
    {MOMENTO_ERR_CONNECTION, "CONNECTION_ERROR", "could not connect to the service in time"},
    {MOMENTO_ERR_CLIENT_RESOURCE_EXHAUSTED, "CLIENT_RESOURCE_EXHAUSTED",
     "a resource of this client (memory, message size) was exhausted"},
    {MOMENTO_ERR_NOT_FOUND, "NOT_FOUND_ERROR", "the item or store does not exist"},
    {MOMENTO_ERR_NO_MEMORY, "NO_MEMORY", "out of memory"},
    {MOMENTO_ERR_WOULD_DEADLOCK, "WOULD_DEADLOCK",
     "a blocking call was made on the client's own callback thread"},
    {MOMENTO_ERR_CLOSED, "CLIENT_CLOSED", "the client is being freed"},
    {MOMENTO_ERR_BAD_RESPONSE, "BAD_RESPONSE", "the server's response could not be decoded"},
};

static const struct error_info *find(int err)
{
    for (size_t i = 0; i < sizeof(errors) / sizeof(errors[0]); i++)
        if (errors[i].code == err)
            return &errors[i];
    return NULL;
}

const char *momento_version(void)
{
    return MOMENTO_VERSION_STRING; /* this library's, compiled in */
}

const char *momento_strerror(int err)
{
    const struct error_info *e = find(err);
    return e ? e->text : "unrecognised error code";
}

const char *momento_error_name(int err)
{
    const struct error_info *e = find(err);
    return e ? e->name : "UNRECOGNISED";
}

int momento_error_from_grpc_status(int s)
{
    /* Indexed by gRPC status code 0..16. */
    static const int map[17] = {
        MOMENTO_OK,                      /* 0 OK */
        MOMENTO_ERR_CANCELLED,           /* 1 CANCELLED */
        MOMENTO_ERR_UNKNOWN_SERVICE,     /* 2 UNKNOWN */
        MOMENTO_ERR_INVALID_ARGUMENT,    /* 3 INVALID_ARGUMENT */
        MOMENTO_ERR_TIMEOUT,             /* 4 DEADLINE_EXCEEDED */
        MOMENTO_ERR_CACHE_NOT_FOUND,     /* 5 NOT_FOUND */
        MOMENTO_ERR_ALREADY_EXISTS,      /* 6 ALREADY_EXISTS */
        MOMENTO_ERR_PERMISSION,          /* 7 PERMISSION_DENIED */
        MOMENTO_ERR_LIMIT_EXCEEDED,      /* 8 RESOURCE_EXHAUSTED */
        MOMENTO_ERR_FAILED_PRECONDITION, /* 9 FAILED_PRECONDITION */
        MOMENTO_ERR_INTERNAL_SERVER,     /* 10 ABORTED */
        MOMENTO_ERR_BAD_REQUEST,         /* 11 OUT_OF_RANGE */
        MOMENTO_ERR_BAD_REQUEST,         /* 12 UNIMPLEMENTED */
        MOMENTO_ERR_INTERNAL_SERVER,     /* 13 INTERNAL */
        MOMENTO_ERR_SERVER_UNAVAILABLE,  /* 14 UNAVAILABLE */
        MOMENTO_ERR_INTERNAL_SERVER,     /* 15 DATA_LOSS */
        MOMENTO_ERR_AUTHENTICATION,      /* 16 UNAUTHENTICATED */
    };
    if (s < 0 || s > 16)
        return MOMENTO_ERR_UNKNOWN;
    return map[s];
}

/* Whether `hay` contains `needle` (lower-case ASCII), ignoring ASCII case:
 * the SDKs match the lower-cased message. */
static int contains_nocase(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (; *hay; hay++) {
        size_t i = 0;
        while (i < n && hay[i]) {
            char c = hay[i];
            if (c >= 'A' && c <= 'Z')
                c = (char)(c - 'A' + 'a');
            if (c != needle[i])
                break;
            i++;
        }
        if (i == n)
            return 1;
    }
    return 0;
}

static int starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

int momento__error_from_reply(int grpc_status, const char *err_cause, const char *message)
{
    int err = momento_error_from_grpc_status(grpc_status);
    if (err == MOMENTO_ERR_CACHE_NOT_FOUND) {
        /* The SDKs' only not-founds that are not a cache: an item or a store
         * (Momento Storage). Without the trailer they recognise a store by
         * the service's message. */
        if (err_cause && *err_cause)
            return strcmp(err_cause, "item_not_found") == 0 ||
                           strcmp(err_cause, "store_not_found") == 0
                       ? MOMENTO_ERR_NOT_FOUND
                       : err;
        if (message && contains_nocase(message, "store with name:") &&
            contains_nocase(message, "doesn't exist"))
            return MOMENTO_ERR_NOT_FOUND;
    } else if (err == MOMENTO_ERR_LIMIT_EXCEEDED && !err_cause && message) {
        /* gRPC core's own refusals of a message over this client's send or
         * receive limit (10 MiB). The service names its limits in the `err`
         * trailer, and a server's gRPC refusing a request larger than it
         * takes cannot happen below the client's own send limit. */
        if (starts_with(message, "Received message larger than max") ||
            starts_with(message, "Sent message larger than max"))
            return MOMENTO_ERR_CLIENT_RESOURCE_EXHAUSTED;
    }
    return err;
}

static const struct {
    momento_limit_kind kind;
    const char *cause; /* the `err` trailer */
    const char *word;  /* the SDKs' fallback: a word of the message */
    const char *text;  /* the SDKs' LimitExceededError message */
} limits[] = {
    /* In the order the SDKs try the words. */
    {MOMENTO_LIMIT_TOPIC_SUBSCRIPTIONS, "topic_subscriptions_limit_exceeded", "subscribers",
     "Topic subscriptions limit exceeded for this account"},
    {MOMENTO_LIMIT_OPERATIONS_RATE, "operations_rate_limit_exceeded", "operations",
     "Request rate limit exceeded for this account"},
    {MOMENTO_LIMIT_THROUGHPUT_RATE, "throughput_rate_limit_exceeded", "throughput",
     "Bandwidth limit exceeded for this account"},
    {MOMENTO_LIMIT_REQUEST_SIZE, "request_size_limit_exceeded", "request limit",
     "Request size limit exceeded for this account"},
    {MOMENTO_LIMIT_ITEM_SIZE, "item_size_limit_exceeded", "item size",
     "Item size limit exceeded for this account"},
    {MOMENTO_LIMIT_ELEMENT_SIZE, "element_size_limit_exceeded", "element size",
     "Element size limit exceeded for this account"},
};
#define N_LIMITS (sizeof(limits) / sizeof(limits[0]))

momento_limit_kind momento__limit_kind(const char *err_cause, const char *message)
{
    if (err_cause) {
        /* A trailer the SDKs do not know is an unknown limit: they do not
         * fall back to the message then. */
        for (size_t i = 0; i < N_LIMITS; i++)
            if (strcmp(err_cause, limits[i].cause) == 0)
                return limits[i].kind;
        return MOMENTO_LIMIT_UNKNOWN;
    }
    if (message)
        for (size_t i = 0; i < N_LIMITS; i++)
            if (contains_nocase(message, limits[i].word))
                return limits[i].kind;
    return MOMENTO_LIMIT_UNKNOWN;
}

const char *momento_limit_kind_text(momento_limit_kind kind)
{
    if (kind == MOMENTO_LIMIT_UNKNOWN)
        return "Limit exceeded for this account";
    for (size_t i = 0; i < N_LIMITS; i++)
        if (limits[i].kind == kind)
            return limits[i].text;
    return "";
}

momento_limit_kind momento_result_limit_kind(const momento_result *r)
{
    if (!r || r->error != MOMENTO_ERR_LIMIT_EXCEEDED)
        return MOMENTO_LIMIT_NONE;
    return momento__limit_kind(r->error_detail, r->message);
}
