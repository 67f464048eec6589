/* The error enum's names and texts, and the gRPC status → error mapping that
 * official Momento SDKs use (docs/protocol.md "Status codes"). */
#include "momento/momento.h"

#include <stddef.h>

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
