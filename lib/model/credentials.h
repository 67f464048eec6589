/* Credentials (credentials.c): the token to send and the endpoints to call. */
#ifndef MOMENTO_CREDENTIALS_H
#define MOMENTO_CREDENTIALS_H

#include "momento/momento.h"

struct momento_credentials {
    char *token;            /* sent as `authorization`; "" for local servers */
    char *cache_endpoint;   /* gRPC target "host:port" */
    char *control_endpoint;
    /* The token service (GenerateDisposableToken): token.<base> where the
     * control endpoint is control.<base>, else the control endpoint itself
     * (a local server answers every service on one port). */
    char *token_endpoint;
    /* The base endpoint the three were made from (cache.<base>, ...), for
     * an endpoint prefix; NULL when they were named one by one. */
    char *base;
    int tls;
};

/* Deep copy into *dst (which is overwritten). Returns 0 or NO_MEMORY. */
int momento__credentials_copy(momento_credentials *dst, const momento_credentials *src);
void momento__credentials_clear(momento_credentials *c);

/* Reads the token out of an API key in the v1 form (base64 of JSON whose
 * "api_key" is the token). Returns 1 with *ret the field (its own copy,
 * possibly empty), 0 when the key is not in that form (then it is the bare
 * token; *ret NULL), or -2 when out of memory. The decoded JSON is wiped
 * before it is freed: it holds the secret. */
int momento__key_field(const char *api_key, char **ret);

/* Checks "host:port": host non-empty (brackets for IPv6), port 1..65535.
 * Returns NULL when valid, else a static reason. */
const char *momento__check_host_port(const char *s);

#endif
