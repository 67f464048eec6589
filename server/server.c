/* Starting and stopping a momento-local: options copied, the `--cache`
 * caches created, credentials read, the gRPC server created with every
 * method of the RPC table registered and bound, and the server thread
 * (the gRPC call layer, front/calls.c) started with the rpc layer's
 * dispatcher (rpc/dispatch.c), then the protosocket port
 * (front/protosocket.c), which answers through the same dispatcher;
 * stopping undoes it all. The one file besides main.c above every folder:
 * it puts the layers together, and nothing in them calls it. */
#include "core/srv_server.h"
#include "core/srv_webhooks.h"
#include "front/srv_calls.h"
#include "front/srv_protosocket.h"

#include "grpc_util.h"
#include "rpc/srv_rpc.h"

#include <grpc/grpc_security.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (cap - len < 4096) {
            cap = cap ? cap * 2 : 8192;
            char *grown = realloc(buf, cap + 1);
            if (!grown) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = grown;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0)
            break;
    }
    fclose(f);
    buf[len] = '\0';
    return buf;
}

static grpc_server_credentials *server_credentials(const momento_local_options *o, int *err)
{
    *err = MOMENTO_OK;
    if (!o->tls_cert)
        return grpc_insecure_server_credentials_create();
    char *cert = read_file(o->tls_cert);
    char *key = read_file(o->tls_key);
    grpc_server_credentials *creds = NULL;
    if (cert && key) {
        grpc_ssl_pem_key_cert_pair pair = {key, cert};
        creds = grpc_ssl_server_credentials_create(NULL, &pair, 1, 0, NULL);
    }
    free(cert);
    free(key);
    if (!creds)
        *err = MOMENTO_ERR_INVALID_ARGUMENT;
    return creds;
}

/* The caches named in the options. A name listed twice is one cache. */
static int create_caches(momento_local *s)
{
    for (size_t i = 0; i < s->opts.n_caches; i++)
        if (store_create_cache(&s->store, s->opts.caches[i]) == STORE_NO_MEMORY)
            return MOMENTO_ERR_NO_MEMORY;
    return MOMENTO_OK;
}

static void destroy(momento_local *s)
{
    srv_webhooks_destroy(s);
    srv_topics_destroy(s);
    store_destroy(&s->store);
    faults_clear(&s->sessions);
    momento__heap_clear(&s->timers);
    momento__local_options_clear(&s->opts);
    pthread_mutex_destroy(&s->api_keys.mu);
    free(s->api_keys.revoked);
    free(s);
    grpc_shutdown();
}

int momento_local_start(momento_local **ret, const momento_local_options *opts)
{
    if (!ret)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    momento_local *s = calloc(1, sizeof(*s));
    if (!s)
        return MOMENTO_ERR_NO_MEMORY;
    if (pthread_mutex_init(&s->api_keys.mu, NULL) != 0) {
        free(s);
        return MOMENTO_ERR_NO_MEMORY;
    }
    s->admin.fd = s->admin.wake[0] = s->admin.wake[1] = -1;
    grpc_init();
    int rc = momento__local_options_copy(&s->opts, opts);
    if (rc != MOMENTO_OK) {
        pthread_mutex_destroy(&s->api_keys.mu);
        free(s);
        grpc_shutdown();
        return rc;
    }
    store_init(&s->store, s->opts.max_memory);
    rc = srv_webhooks_init(s) < 0 ? MOMENTO_ERR_NO_MEMORY : create_caches(s);
    grpc_server_credentials *creds = rc == MOMENTO_OK ? server_credentials(&s->opts, &rc) : NULL;
    if (!creds) {
        destroy(s);
        return rc;
    }
    /* Accept messages well past the item limit, so an oversized item is
     * answered with Momento's RESOURCE_EXHAUSTED rather than gRPC's own
     * message-size error (docs/protocol.md "Limits"); tolerate clients' 5 s
     * keepalive pings; bound the streams of one connection. */
    grpc_arg args[] = {
        momento__int_arg(GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH, 64 * 1024 * 1024),
        momento__int_arg(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 1000),
        momento__int_arg(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 0),
        /* Without this a second server could bind the same port and the two
         * would split clients between them. */
        momento__int_arg(GRPC_ARG_ALLOW_REUSEPORT, 0),
        /* One connection cannot starve the others (srv_server.h). */
        momento__int_arg(GRPC_ARG_MAX_CONCURRENT_STREAMS, (int)s->opts.max_streams),
        /* No server-side deadline timer of gRPC's own: its view of a
         * deadline can fall before the client's, and under CPU load it
         * ended calls DEADLINE_EXCEEDED 1-24 ms before their clients'
         * deadline (test_server.c, test_delay_never_ends_before_deadline).
         * The client ends a call at its deadline; a delayed one the server
         * answers 1 s after it, if the client has not (calls.c). */
        momento__int_arg(GRPC_ARG_ENABLE_DEADLINE_CHECKS, 0),
    };
    grpc_channel_args ch_args = {sizeof(args) / sizeof(args[0]), args};
    s->server = grpc_server_create(&ch_args, NULL);
    s->cq = grpc_completion_queue_create_for_next(NULL);
    grpc_server_register_completion_queue(s->server, s->cq, NULL);
    for (int m = 0; m < MOMENTO__RPC_COUNT; m++)
        s->registered[m] = grpc_server_register_method(
            s->server, momento__rpcs[m].path, NULL, GRPC_SRM_PAYLOAD_READ_INITIAL_BYTE_BUFFER, 0);

    char addr[96];
    bool v6 = strchr(s->opts.bind, ':') != NULL;
    snprintf(addr, sizeof(addr), v6 ? "[%s]:%d" : "%s:%d", s->opts.bind, s->opts.port);
    s->port = grpc_server_add_http2_port(s->server, addr, creds);
    grpc_server_credentials_release(creds);
    rc = MOMENTO_OK;
    if (s->port <= 0) {
        grpc_server_destroy(s->server);
        momento__cq_drain(s->cq, NULL, NULL);
        rc = MOMENTO_ERR_SERVER_UNAVAILABLE;
    } else {
        snprintf(s->endpoint, sizeof(s->endpoint), v6 ? "[%s]:%d" : "%s:%d", s->opts.bind,
                 s->port);
        grpc_server_start(s->server);
        s->request_keys = srv_request_keys; /* for faults scoped to keys */
        if (srv_calls_start(s, srv_dispatch) < 0) {
            grpc_server_destroy(s->server);
            rc = MOMENTO_ERR_NO_MEMORY;
        } else if (srv_admin_start(s) < 0) {
            srv_webhooks_stop(s); /* a PutWebhook may have come in already */
            srv_calls_stop(s);
            grpc_server_destroy(s->server);
            rc = MOMENTO_ERR_SERVER_UNAVAILABLE;
        } else if ((rc = srv_protosocket_start(s)) != MOMENTO_OK) {
            srv_admin_stop(s);
            srv_webhooks_stop(s);
            srv_calls_stop(s);
            grpc_server_destroy(s->server);
        }
    }
    if (rc != MOMENTO_OK) {
        grpc_completion_queue_destroy(s->cq);
        destroy(s);
        return rc;
    }
    *ret = s;
    return MOMENTO_OK;
}

void momento_local_stop(momento_local *s)
{
    if (!s)
        return;
    /* Before the server's threads stop: the delivery thread takes their
     * turn to give memory back. */
    srv_webhooks_stop(s);
    /* First, while the calls it hands gRPC calls' pins to still run. */
    srv_protosocket_stop(s);
    srv_admin_stop(s); /* no block or unblock from here on */
    srv_calls_stop(s);
    grpc_server_destroy(s->server);
    grpc_completion_queue_destroy(s->cq);
    destroy(s);
}

int momento_local_port(const momento_local *s)
{
    return s ? s->port : -1;
}

const char *momento_local_endpoint(const momento_local *s)
{
    return s ? s->endpoint : "";
}

int momento_local_test_admin_port(const momento_local *s)
{
    return s ? s->admin.port : 0;
}

void momento_local_block(momento_local *s, int blocked)
{
    if (s)
        srv_admin_block(s, blocked != 0);
}
