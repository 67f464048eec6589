/* momento-proxy: Redis (RESP2) and memcached clients on Momento, through
 * libmomento (docs/proxy.md).
 *
 * One thread runs everything the proxy does: an epoll loop over the
 * listening ports, the client connections, the signals and the library's
 * dispatch fd. The library runs in dispatch mode, so a command's callback
 * runs on this thread too, between two epoll waits: no locks, and a reply
 * is written into its connection's order directly (conn.h). The library's
 * own threads carry the RPCs. Commands are pipelined without limit but
 * --max-in-flight per connection; distinct gets and sets in flight share
 * GetBatch / SetBatch RPCs (adaptive batching), and duplicate reads in
 * flight, from any connections, share one RPC (the coalescer).
 *
 * The proxy keeps no state of its own beyond connections: any number of
 * proxies can serve one cache behind a load balancer. */
#include "target.h"
#include "conn.h"
#include "memcache.h"
#include "px.h"
#include "resp.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static const char *const prog = "momento-proxy";

typedef struct options {
    ex_target_options target;
    const char *cache;
    const char *bind;
    int resp_port;      /* -1: off */
    int memcache_port;  /* -1: off */
    int default_ttl_s;
    int timeout_ms;
    int batch_min_in_flight;
    int batch_max_keys;
    bool coalesce;
    int drain_s;
    px_limits limits;
    const char *headers[MOMENTO_MAX_CLIENT_HEADERS]; /* "name=value" */
    int nheaders;
} options;

static void usage(void)
{
    printf("Usage: %s [OPTION]...\n"
           "Serves Redis (RESP2) and memcached (text and binary) clients from a Momento\n"
           "cache: every command becomes Momento calls through libmomento, pipelined,\n"
           "batched and coalesced. Prints \"PROTOCOL listening on HOST:PORT\" for each port\n"
           "once it serves; SIGTERM or SIGINT drains the commands in flight, then exits.\n\n"
           EX_TARGET_HELP "\n"
           "Ports (at least one):\n"
           "  --resp-port N          serve Redis clients on port N (0: any free port)\n"
           "  --memcache-port N      serve memcached clients, text and binary protocol,\n"
           "                         on port N (0: any free port)\n"
           "  --bind ADDR            the address to listen on (default 127.0.0.1)\n\n"
           "Momento:\n"
           "  --cache NAME           cache to serve, created if missing (default cache)\n"
           "  --default-ttl SECONDS  TTL of a write that gives none, as Momento keeps no\n"
           "                         item forever: 1 to 4294967 (default 900)\n"
           "  --timeout-ms N         deadline of each Momento call, 1 to 300000\n"
           "                         (default 5000); a call past it answers an error\n"
           "  --batch N              with N calls in flight, gets and sets wait to share\n"
           "                         GetBatch / SetBatch calls; 0: never (default 2)\n"
           "  --batch-keys M         at most M keys in one of those calls, 2 to 10000\n"
           "                         (default 128)\n"
           "  --no-coalesce          give duplicate reads in flight a call each\n"
           "  --header NAME=VALUE    send this header with every Momento call (up to %d):\n"
           "                         routing or tracing ids, momento-local's fault\n"
           "                         injection (docs/server.md)\n\n"
           "Limits:\n"
           "  --max-connections N    client connections at once, 1 to 1000000 (default\n"
           "                         10000); one more is answered an error and closed\n"
           "  --max-request-bytes N  one command with its data, 1024 to 536870912\n"
           "                         (default 8388608)\n"
           "  --max-in-flight N      commands of one connection awaiting replies, 1 to\n"
           "                         100000 (default 1024); more are read once replies drain\n"
           "  --drain-seconds N      at SIGTERM, wait up to N s for commands in flight\n"
           "                         (default 10)\n\n"
           "  --help                 print this help and exit\n",
           prog, MOMENTO_MAX_CLIENT_HEADERS);
}

static int parse_options(int argc, char **argv, options *o)
{
    static const struct option longopts[] = {
        EX_TARGET_LONGOPTS,
        {"cache", required_argument, NULL, 'C'},
        {"bind", required_argument, NULL, 'b'},
        {"resp-port", required_argument, NULL, 'r'},
        {"memcache-port", required_argument, NULL, 'm'},
        {"default-ttl", required_argument, NULL, 't'},
        {"timeout-ms", required_argument, NULL, 'T'},
        {"batch", required_argument, NULL, 'B'},
        {"batch-keys", required_argument, NULL, 'K'},
        {"no-coalesce", no_argument, NULL, 'N'},
        {"max-connections", required_argument, NULL, 'c'},
        {"max-request-bytes", required_argument, NULL, 'q'},
        {"max-in-flight", required_argument, NULL, 'i'},
        {"drain-seconds", required_argument, NULL, 'd'},
        {"header", required_argument, NULL, 'H'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    memset(o, 0, sizeof(*o));
    o->cache = "cache";
    o->bind = "127.0.0.1";
    o->resp_port = o->memcache_port = -1;
    o->default_ttl_s = 900;
    o->timeout_ms = 5000;
    /* Not the library's 16: a pipelining client's commands arrive as a
     * burst on one thread, and queuing from 2 RPCs in flight makes fewer,
     * fuller GetBatches (docs/performance.md, "Shared answers
     * delivered whole": +15 % -P 16 GETs). One request in flight
     * still goes at once. */
    o->batch_min_in_flight = 2;
    /* Not the library's 64 either: fewer, fuller calls cost the proxy and
     * the server less per key; 128 and 256 measured alike, above 64 by
     * a tenth (docs/performance.md, "Shared answers delivered whole"). */
    o->batch_max_keys = 128;
    o->coalesce = true;
    o->drain_s = 10;
    o->limits.max_connections = 10000;
    o->limits.max_request_bytes = 8u << 20;
    o->limits.max_in_flight = 1024;
    o->limits.max_output_bytes = 4u << 20;
    int ch, v;
    while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (ch) {
        case EX_OPT_ENDPOINT:
        case EX_OPT_INSECURE:
        case EX_OPT_TLS_ROOTS:
        case EX_OPT_TRANSPORT:
        case EX_OPT_PS_ENDPOINT:
            if (ex_target_option(prog, ch, optarg, &o->target))
                return 2;
            break;
        case 'C':
            if (ex_cache_option(prog, optarg, &o->cache))
                return 2;
            break;
        case 'b':
            if (!*optarg)
                return ex_bad_option(prog, "--bind", optarg, "must be an address");
            o->bind = optarg;
            break;
        case 'r':
            if (!ex_parse_int(optarg, 0, 65535, &o->resp_port))
                return ex_bad_option(prog, "--resp-port", optarg, "must be 0 to 65535");
            break;
        case 'm':
            if (!ex_parse_int(optarg, 0, 65535, &o->memcache_port))
                return ex_bad_option(prog, "--memcache-port", optarg, "must be 0 to 65535");
            break;
        case 't':
            if (!ex_parse_int(optarg, 1, 4294967, &o->default_ttl_s))
                return ex_bad_option(prog, "--default-ttl", optarg, "must be 1 to 4294967");
            break;
        case 'T':
            if (!ex_parse_int(optarg, 1, 300000, &o->timeout_ms))
                return ex_bad_option(prog, "--timeout-ms", optarg, "must be 1 to 300000");
            break;
        case 'B':
            if (!ex_parse_int(optarg, 0, 100000, &o->batch_min_in_flight))
                return ex_bad_option(prog, "--batch", optarg, "must be 0 to 100000");
            break;
        case 'K':
            if (!ex_parse_int(optarg, 2, 10000, &o->batch_max_keys))
                return ex_bad_option(prog, "--batch-keys", optarg, "must be 2 to 10000");
            break;
        case 'N': o->coalesce = false; break;
        case 'c':
            if (!ex_parse_int(optarg, 1, 1000000, &v))
                return ex_bad_option(prog, "--max-connections", optarg, "must be 1 to 1000000");
            o->limits.max_connections = (uint32_t)v;
            break;
        case 'q':
            if (!ex_parse_int(optarg, 1024, 536870912, &v))
                return ex_bad_option(prog, "--max-request-bytes", optarg,
                                     "must be 1024 to 536870912");
            o->limits.max_request_bytes = (size_t)v;
            break;
        case 'i':
            if (!ex_parse_int(optarg, 1, 100000, &v))
                return ex_bad_option(prog, "--max-in-flight", optarg, "must be 1 to 100000");
            o->limits.max_in_flight = (uint32_t)v;
            break;
        case 'd':
            if (!ex_parse_int(optarg, 0, 3600, &o->drain_s))
                return ex_bad_option(prog, "--drain-seconds", optarg, "must be 0 to 3600");
            break;
        case 'H':
            if (!strchr(optarg, '=') || optarg[0] == '=')
                return ex_bad_option(prog, "--header", optarg, "must be NAME=VALUE");
            if (o->nheaders == MOMENTO_MAX_CLIENT_HEADERS)
                return ex_bad_option(prog, "--header", optarg, "too many headers");
            o->headers[o->nheaders++] = optarg;
            break;
        case 'h': usage(); return 1;
        default: return 2;
        }
    }
    if (optind < argc)
        return ex_bad_option(prog, "argument", argv[optind], "takes no arguments");
    if (o->resp_port < 0 && o->memcache_port < 0)
        return ex_bad_option(prog, "ports", "none",
                             "give --resp-port, --memcache-port or both");
    return ex_check_target(prog, &o->target);
}

/* ---- listening ---- */

typedef struct listener {
    px_watch watch; /* first: epoll's data.ptr */
    int fd;
    const px_proto *proto;
} listener;

/* Binds `addr`:`port` (port 0: any), prints "NAME listening on HOST:PORT".
 * Returns the socket or -1 after printing why. */
static int listen_on(const char *addr, int port, const char *name)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *ai = NULL;
    char ps[8];
    snprintf(ps, sizeof(ps), "%d", port);
    int gai = getaddrinfo(addr, ps, &hints, &ai);
    if (gai != 0) {
        fprintf(stderr, "%s: --bind %s: %s\n", prog, addr, gai_strerror(gai));
        return -1;
    }
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
        bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 1024) != 0) {
        fprintf(stderr, "%s: %s port %s:%d: %s\n", prog, name, addr, port, strerror(errno));
        if (fd >= 0)
            close(fd);
        freeaddrinfo(ai);
        return -1;
    }
    freeaddrinfo(ai);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    char host[INET6_ADDRSTRLEN] = "?";
    int bound = port;
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0) {
        if (ss.ss_family == AF_INET6) {
            struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
            inet_ntop(AF_INET6, &s6->sin6_addr, host, sizeof(host));
            bound = ntohs(s6->sin6_port);
        } else {
            struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
            inet_ntop(AF_INET, &s4->sin_addr, host, sizeof(host));
            bound = ntohs(s4->sin_port);
        }
    }
    printf(strchr(host, ':') ? "%s listening on [%s]:%d\n" : "%s listening on %s:%d\n", name,
           host, bound);
    fflush(stdout);
    return fd;
}

static void accept_all(px_conns *conns, listener *l)
{
    for (int i = 0; i < 256; i++) { /* a bounded burst, then the others' turn */
        int fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return; /* EAGAIN, or a connection that died in the queue */
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        px_conns_accept(conns, fd, l->proto);
    }
}

static int64_t now_ms(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- the loop ---- */

static int serve(px_backend *b, listener *ls, int nls, int drain_s)
{
    int epfd = epoll_create1(EPOLL_CLOEXEC);
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    int sfd = signalfd(-1, &sigs, SFD_NONBLOCK | SFD_CLOEXEC);
    px_conns *conns = epfd >= 0 ? px_conns_new(epfd, b) : NULL;
    if (epfd < 0 || sfd < 0 || !conns) {
        fprintf(stderr, "%s: event loop: %s\n", prog, strerror(errno));
        return 1;
    }
    static px_watch sig_watch = {PX_WATCH_OTHER}, dispatch_watch = {PX_WATCH_OTHER};
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &sig_watch};
    epoll_ctl(epfd, EPOLL_CTL_ADD, sfd, &ev);
    int dfd = momento_client_dispatch_fd(b->client);
    ev.data.ptr = &dispatch_watch;
    epoll_ctl(epfd, EPOLL_CTL_ADD, dfd, &ev);
    for (int i = 0; i < nls; i++) {
        ev.data.ptr = &ls[i].watch;
        epoll_ctl(epfd, EPOLL_CTL_ADD, ls[i].fd, &ev);
    }

    int64_t drain_until = 0;
    struct epoll_event evs[256];
    for (;;) {
        if (drain_until) {
            if (px_conns_count(conns) == 0 || now_ms(CLOCK_MONOTONIC) >= drain_until)
                break;
        }
        int timeout = px_conns_timeout_ms(conns);
        if (drain_until && (timeout < 0 || timeout > 100))
            timeout = 100;
        int n = epoll_wait(epfd, evs, 256, timeout);
        if (n < 0 && errno != EINTR) {
            fprintf(stderr, "%s: epoll_wait: %s\n", prog, strerror(errno));
            break;
        }
        bool dispatch = false;
        for (int i = 0; i < n; i++) {
            px_watch *w = evs[i].data.ptr;
            if (w == &sig_watch) {
                struct signalfd_siginfo si;
                while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
                }
                if (!drain_until) {
                    /* Stop taking connections and commands; finish the rest. */
                    for (int k = 0; k < nls; k++) {
                        epoll_ctl(epfd, EPOLL_CTL_DEL, ls[k].fd, NULL);
                        close(ls[k].fd);
                        ls[k].fd = -1;
                    }
                    px_conns_drain(conns);
                    drain_until = now_ms(CLOCK_MONOTONIC) + (int64_t)drain_s * 1000;
                    if (drain_until == 0)
                        drain_until = 1;
                }
            } else if (w == &dispatch_watch) {
                dispatch = true;
            } else if (w->kind == PX_WATCH_LISTENER) {
                accept_all(conns, (listener *)w);
            } else {
                px_conns_event(conns, w, evs[i].events);
            }
        }
        /* Callbacks after reads: a read's commands are already in flight,
         * and replies that complete now are written in the same pass. A
         * bounded number per pass, so reading goes on under load. */
        if (dispatch)
            momento_client_dispatch(b->client, 4096);
        px_conns_expire(conns);
        px_conns_flush(conns);
    }
    /* Freeing the client ends every request still in flight (their
     * callbacks run here and end their replies); then the connections go. */
    if (b->co)
        momento_coalescer_free(b->co);
    momento_client_free(b->client);
    b->client = NULL;
    px_conns_flush(conns);
    px_conns_free(conns);
    close(sfd);
    close(epfd);
    return 0;
}

int main(int argc, char **argv)
{
    options o;
    int rc = parse_options(argc, argv, &o);
    if (rc)
        return rc == 1 ? 0 : rc;

    /* Signals arrive through the loop's signalfd; a client that closes
     * while we write is an EPIPE, not a SIGPIPE. */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);

    ex_target t;
    if (ex_target_open(&t, prog, &o.target) != MOMENTO_OK)
        return 1;

    px_backend b = {.cache = o.cache, .default_ttl_ms = (uint64_t)o.default_ttl_s * 1000,
                    .limits = o.limits, .started_ms = now_ms(CLOCK_REALTIME)};
    momento_config *cfg = NULL;
    rc = ex_target_config_new(&t, &cfg);
    if (rc == MOMENTO_OK)
        rc = momento_config_set_timeout_ms(cfg, (uint32_t)o.timeout_ms);
    if (rc == MOMENTO_OK)
        rc = momento_config_set_default_ttl_ms(cfg, b.default_ttl_ms);
    if (rc == MOMENTO_OK && o.batch_min_in_flight > 0)
        rc = momento_config_set_batching(cfg, (uint32_t)o.batch_min_in_flight, 0,
                                         (uint32_t)o.batch_max_keys,
                                         MOMENTO_BATCH_DEFAULT_MAX_BYTES);
    for (int i = 0; rc == MOMENTO_OK && i < o.nheaders; i++) {
        char name[65];
        const char *eq = strchr(o.headers[i], '=');
        size_t n = (size_t)(eq - o.headers[i]);
        if (n >= sizeof(name)) {
            rc = ex_bad_option(prog, "--header", o.headers[i], "the name is over 64 bytes");
            momento_config_free(cfg);
            ex_target_close(&t);
            return rc;
        }
        memcpy(name, o.headers[i], n);
        name[n] = '\0';
        rc = momento_config_add_header(cfg, name, eq + 1);
        if (rc != MOMENTO_OK) {
            fprintf(stderr, "%s: invalid --header '%s': %s (see --help)\n", prog, o.headers[i],
                    momento_refusal_reason());
            momento_config_free(cfg);
            ex_target_close(&t);
            return 2;
        }
    }
    if (rc == MOMENTO_OK)
        rc = momento_config_set_dispatch(cfg, 1);
    if (rc == MOMENTO_OK)
        rc = momento_client_new(&b.client, cfg, t.creds);
    momento_config_free(cfg);
    if (rc != MOMENTO_OK) {
        fprintf(stderr, "%s: client: %s\n", prog, momento_strerror(rc));
        ex_target_close(&t);
        return 1;
    }
    if (o.coalesce && momento_coalescer_new(&b.co, b.client) != MOMENTO_OK) {
        fprintf(stderr, "%s: coalescer: out of memory\n", prog);
        momento_client_free(b.client);
        ex_target_close(&t);
        return 1;
    }

    /* The cache, as the examples make theirs: created if missing. */
    momento_result *res = NULL;
    rc = momento_create_cache_sync(b.client, o.cache, NULL, &res);
    if (rc != MOMENTO_OK) {
        fprintf(stderr, "%s: create cache '%s': %s: %s\n", prog, o.cache, momento_error_name(rc),
                momento_result_message(res));
        momento_result_free(res);
        momento_coalescer_free(b.co);
        momento_client_free(b.client);
        ex_target_close(&t);
        return 1;
    }
    momento_result_free(res);
    fprintf(stderr, "%s: cache '%s' on %s\n", prog, o.cache, t.description);

    listener ls[2];
    int nls = 0;
    if (o.resp_port >= 0)
        ls[nls++] = (listener){{PX_WATCH_LISTENER}, listen_on(o.bind, o.resp_port, "resp"),
                               &resp_proto};
    if (o.memcache_port >= 0 && (nls == 0 || ls[0].fd >= 0))
        ls[nls++] = (listener){{PX_WATCH_LISTENER},
                               listen_on(o.bind, o.memcache_port, "memcache"), &memcache_proto};
    int status = 0;
    for (int i = 0; i < nls; i++)
        if (ls[i].fd < 0)
            status = 1;
    if (status == 0)
        status = serve(&b, ls, nls, o.drain_s);
    for (int i = 0; i < nls; i++)
        if (ls[i].fd >= 0)
            close(ls[i].fd);
    if (b.client) {
        momento_coalescer_free(b.co);
        momento_client_free(b.client);
    }
    ex_target_close(&t);
    return status;
}
