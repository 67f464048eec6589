/* momento-local: the local Momento-compatible server as a program. It serves
 * until SIGINT or SIGTERM, then prints its RPC counters as JSON (and writes
 * them to --stats-json) and exits cleanly. */
#include "momento/local.h"

#include <getopt.h>
#include <malloc.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: momento-local [OPTION]...\n"
            "A Momento-compatible cache server in memory, for tests and development.\n"
            "\n"
            "  --bind ADDR           numeric address to listen on (default 127.0.0.1)\n"
            "  --port N              port, 0 = any free port (default 8080)\n"
            "  --auth-token T        require `authorization: T` (default: accept any)\n"
            "  --max-memory BYTES    evict least recently used items past this (default 0 = no limit)\n"
            "  --max-item-bytes N    key+value limit per item (default 5242880)\n"
            "  --max-rps N           RESOURCE_EXHAUSTED past N calls per second (default 0 = none)\n"
            "  --list-page-size N    ListCaches pages of N caches (default 0 = one page)\n"
            "  --heartbeat-ms N      topic heartbeat after N ms idle (default 1000)\n"
            "  --topic-buffer-items N  items kept per topic for resuming subscribers\n"
            "                        (default 4096; 0 = none)\n"
            "  --max-subscribers N   subscriptions per topic (default 10000; 0 = no limit)\n"
            "  --max-streams-per-connection N  concurrent calls one connection may hold\n"
            "                        (default 100, as Momento; 1 .. 100000)\n"
            "  --enable-test-admin   serve the SDKs' test admin (GET /block, /unblock cut and\n"
            "                        restore the data port) on 127.0.0.1 or --bind\n"
            "  --test-admin-port N   its port (default 9090; 0 = any free port)\n"
            "  --topic-idle-ms N     forget a topic without subscribers or publishes for N ms\n"
            "                        (default 300000)\n"
            "  --subscriber-queue-bytes N  what one subscription may have queued (default\n"
            "                        1048576; past it the oldest items go, with a discontinuity)\n"
            "  --max-queued-bytes N  the same for all subscriptions together, shared out evenly\n"
            "                        (default 67108864; 0 = no such bound)\n"
            "  --protosocket-port N  also serve Momento's protosocket protocol (Get, Set,\n"
            "                        Delete) on port N of the bind address, 0 = any free port\n"
            "                        (default: off); TLS with --tls-cert, as the gRPC port\n"
            "  --webhook-timeout-ms N  a webhook delivery not answered within N ms is dropped\n"
            "                        (default 5000, as Momento)\n"
            "  --webhook-queue-items N  webhook deliveries that may wait, per webhook (default\n"
            "                        1024; past it a publish's delivery is dropped and counted)\n"
            "  --tls-cert FILE       serve TLS with this PEM certificate chain (needs --tls-key)\n"
            "  --tls-key FILE        private key for --tls-cert\n"
            "  --cache NAME          create this cache at start (repeatable; 1-255 bytes of\n"
            "                        UTF-8 without control characters)\n"
            "  --stats-json PATH     also write the RPC counters here on exit\n"
            "  --help                show this text\n"
            "\n"
            "Prints 'listening on HOST:PORT' once serving (then 'protosocket listening on\n"
            "HOST:PORT' with --protosocket-port). Fault injection headers\n"
            "(return-error, error-rpcs, error-count, delay-ms, delay-rpcs, delay-count,\n"
            "stream-error, stream-error-rpcs, stream-error-message-limit, request-id)\n"
            "work as in Momento's local test server; see docs/server.md.\n");
}

static int parse_u64(const char *s, uint64_t *out)
{
    char *end;
    if (!s || !*s || *s == '-')
        return -1;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end)
        return -1;
    *out = v;
    return 0;
}

static int bad(const char *opt, const char *value)
{
    fprintf(stderr, "momento-local: invalid value for %s: '%s' (try --help)\n", opt, value);
    return 2;
}

/* A refused --cache name, its bytes outside printable ASCII escaped so that
 * the message itself stays printable. */
static int bad_cache(const char *name)
{
    fprintf(stderr, "momento-local: invalid value for --cache: '");
    for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
        if (*p >= 0x20 && *p < 0x7f && *p != '\\')
            fputc(*p, stderr);
        else
            fprintf(stderr, "\\x%02x", *p);
    }
    fprintf(stderr, "' (a cache name is 1 to %u bytes of valid UTF-8 without control "
                    "characters)\n",
            MOMENTO_MAX_CACHE_NAME_BYTES);
    return 2;
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"bind", required_argument, NULL, 'b'},       {"port", required_argument, NULL, 'p'},
        {"auth-token", required_argument, NULL, 'a'}, {"max-memory", required_argument, NULL, 'm'},
        {"max-item-bytes", required_argument, NULL, 'i'},
        {"max-rps", required_argument, NULL, 'r'},    {"tls-cert", required_argument, NULL, 'c'},
        {"list-page-size", required_argument, NULL, 'L'},
        {"heartbeat-ms", required_argument, NULL, 'H'},
        {"topic-buffer-items", required_argument, NULL, 'T'},
        {"max-subscribers", required_argument, NULL, 'S'},
        {"topic-idle-ms", required_argument, NULL, 'I'},
        {"max-streams-per-connection", required_argument, NULL, 'X'},
        {"enable-test-admin", no_argument, NULL, 'A'},
        {"test-admin-port", required_argument, NULL, 'P'},
        {"protosocket-port", required_argument, NULL, 'W'},
        {"subscriber-queue-bytes", required_argument, NULL, 'Q'},
        {"max-queued-bytes", required_argument, NULL, 'M'},
        {"webhook-timeout-ms", required_argument, NULL, 'w'},
        {"webhook-queue-items", required_argument, NULL, 'q'},
        {"tls-key", required_argument, NULL, 'k'},    {"cache", required_argument, NULL, 'C'},
        {"stats-json", required_argument, NULL, 's'}, {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    momento_local_options *o;
    if (momento_local_options_new(&o) != MOMENTO_OK)
        return 1;
    momento_local_options_set_port(o, 8080);
    const char *stats_path = NULL, *cert = NULL, *key = NULL;
    bool admin = false;
    int admin_port = 9090; /* the SDKs' TEST_ADMIN_PORT default */
    int ch, rc = 0;
    uint64_t v;
    while (rc == 0 && (ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (ch) {
        case 'b':
            if (momento_local_options_set_bind(o, optarg) < 0)
                rc = bad("--bind", optarg);
            break;
        case 'p':
            if (parse_u64(optarg, &v) < 0 || v > 65535 ||
                momento_local_options_set_port(o, (int)v) < 0)
                rc = bad("--port", optarg);
            break;
        case 'a':
            momento_local_options_set_auth_token(o, optarg);
            break;
        case 'm':
            if (parse_u64(optarg, &v) < 0 || momento_local_options_set_max_memory(o, v) < 0)
                rc = bad("--max-memory", optarg);
            break;
        case 'i':
            if (parse_u64(optarg, &v) < 0 || momento_local_options_set_max_item_bytes(o, v) < 0)
                rc = bad("--max-item-bytes", optarg);
            break;
        case 'r':
            if (parse_u64(optarg, &v) < 0 || v > UINT32_MAX ||
                momento_local_options_set_max_rps(o, (uint32_t)v) < 0)
                rc = bad("--max-rps", optarg);
            break;
        case 'L':
            if (parse_u64(optarg, &v) < 0 || v > UINT32_MAX ||
                momento_local_options_set_list_page_size(o, (uint32_t)v) < 0)
                rc = bad("--list-page-size", optarg);
            break;
        case 'H':
            if (parse_u64(optarg, &v) < 0 || v > UINT32_MAX ||
                momento_local_options_set_heartbeat_ms(o, (uint32_t)v) < 0)
                rc = bad("--heartbeat-ms", optarg);
            break;
        case 'T':
            if (parse_u64(optarg, &v) < 0 || v > UINT32_MAX ||
                momento_local_options_set_topic_buffer_items(o, (uint32_t)v) < 0)
                rc = bad("--topic-buffer-items", optarg);
            break;
        case 'S':
            if (parse_u64(optarg, &v) < 0 || v > UINT32_MAX ||
                momento_local_options_set_max_subscribers(o, (uint32_t)v) < 0)
                rc = bad("--max-subscribers", optarg);
            break;
        case 'A': admin = true; break;
        case 'P':
            if (parse_u64(optarg, &v) < 0 || v > 65535)
                rc = bad("--test-admin-port", optarg);
            else
                admin_port = (int)v;
            break;
        case 'W':
            if (parse_u64(optarg, &v) < 0 || v > 65535 ||
                momento_local_options_set_protosocket_port(o, (int)v) < 0)
                rc = bad("--protosocket-port", optarg);
            break;
        case 'X':
            if (parse_u64(optarg, &v) < 0 || v > UINT32_MAX ||
                momento_local_options_set_max_streams_per_connection(o, (uint32_t)v) < 0)
                rc = bad("--max-streams-per-connection", optarg);
            break;
        case 'I':
            if (parse_u64(optarg, &v) < 0 || v > UINT32_MAX ||
                momento_local_options_set_topic_idle_ms(o, (uint32_t)v) < 0)
                rc = bad("--topic-idle-ms", optarg);
            break;
        case 'Q':
            if (parse_u64(optarg, &v) < 0 ||
                momento_local_options_set_subscriber_queue_bytes(o, v) < 0)
                rc = bad("--subscriber-queue-bytes", optarg);
            break;
        case 'M':
            if (parse_u64(optarg, &v) < 0 || momento_local_options_set_max_queued_bytes(o, v) < 0)
                rc = bad("--max-queued-bytes", optarg);
            break;
        case 'w':
            if (parse_u64(optarg, &v) < 0 || v > UINT32_MAX ||
                momento_local_options_set_webhook_timeout_ms(o, (uint32_t)v) < 0)
                rc = bad("--webhook-timeout-ms", optarg);
            break;
        case 'q':
            if (parse_u64(optarg, &v) < 0 || v > UINT32_MAX ||
                momento_local_options_set_webhook_queue_items(o, (uint32_t)v) < 0)
                rc = bad("--webhook-queue-items", optarg);
            break;
        case 'c': cert = optarg; break;
        case 'k': key = optarg; break;
        case 'C':
            if ((rc = momento_local_options_add_cache(o, optarg)) < 0)
                rc = rc == MOMENTO_ERR_INVALID_ARGUMENT ? bad_cache(optarg)
                                                        : bad("--cache", optarg);
            break;
        case 's': stats_path = optarg; break;
        case 'h':
            usage(stdout);
            momento_local_options_free(o);
            return 0;
        default:
            rc = 2;
        }
    }
    if (rc == 0 && optind < argc) {
        fprintf(stderr, "momento-local: unexpected argument '%s' (try --help)\n", argv[optind]);
        rc = 2;
    }
    if (rc == 0 && (!cert) != (!key)) {
        fprintf(stderr, "momento-local: --tls-cert and --tls-key go together\n");
        rc = 2;
    }
    if (rc == 0 && cert)
        momento_local_options_set_tls(o, cert, key);
    if (rc == 0 && admin)
        momento_local_options_set_test_admin_port(o, admin_port);
    if (rc == 0 && !admin && admin_port != 9090) {
        fprintf(stderr, "momento-local: --test-admin-port needs --enable-test-admin\n");
        rc = 2;
    }
    if (rc != 0) {
        momento_local_options_free(o);
        return rc;
    }

#ifdef __GLIBC__
    /* Blocks of 64 KiB and more (requests in flight, their decoded values)
     * get mappings of their own, given back to the system when freed.
     * glibc's default threshold rises to the largest block freed (up to
     * 32 MiB), after which such buffers stay in the heap: with it the
     * process's RSS would outgrow --max-memory by several request sizes
     * (docs/server.md "Memory"). */
    mallopt(M_MMAP_THRESHOLD, 64 * 1024);
#endif
    /* Signals are taken synchronously by this thread, so the server's own
     * threads never see them. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);

    momento_local *s;
    rc = momento_local_start(&s, o);
    momento_local_options_free(o);
    if (rc != MOMENTO_OK) {
        fprintf(stderr, "momento-local: cannot start: %s\n",
                rc == MOMENTO_ERR_SERVER_UNAVAILABLE ? "the address could not be bound"
                : rc == MOMENTO_ERR_INVALID_ARGUMENT ? "the TLS certificate or key could not be used"
                                                     : "out of memory");
        return 1;
    }
    /* The gRPC line first: scripts read the first line for the endpoint. */
    printf("listening on %s\n", momento_local_endpoint(s));
    const char *ep = momento_local_endpoint(s);
    int host_len = (int)(strrchr(ep, ':') - ep); /* "[::1]" keeps its brackets */
    if (momento_local_protosocket_port(s) > 0)
        printf("protosocket listening on %.*s:%d\n", host_len, ep,
               momento_local_protosocket_port(s));
    if (momento_local_test_admin_port(s) > 0)
        printf("test admin listening on %.*s:%d\n", host_len, ep,
               momento_local_test_admin_port(s));
    fflush(stdout);

    int sig;
    sigwait(&set, &sig);

    char *json = momento_local_stats_json(s);
    if (json) {
        printf("%s\n", json);
        if (stats_path) {
            FILE *f = fopen(stats_path, "w");
            if (f) {
                fprintf(f, "%s\n", json);
                fclose(f);
            } else {
                fprintf(stderr, "momento-local: cannot write %s\n", stats_path);
            }
        }
        free(json);
    }
    momento_local_stop(s);
    return 0;
}
