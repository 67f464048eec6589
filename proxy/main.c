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
#include "config.h"
#include "conn.h"
#include "http.h"
#include "memcache/memcache.h"
#include "metrics.h"
#include "options.h"
#include "px.h"
#include "resp/resp.h"
#include "tls.h"

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
/* --metrics: the listening socket, until serve() hands it to http.c. */
static int metrics_fd = -1;

/* ---- listening ---- */

typedef struct listener {
    px_watch watch; /* first: epoll's data.ptr */
    int fd;
    const px_proto *proto;
    px_backend b; /* its cache; the client, the limits and the counters shared */
    px_tls *tls;  /* its clients speak TLS (--tls-cert); NULL: plaintext */
    void *channels; /* b.channels of every listener of its cache points here
                       (the first such listener's) */
} listener;

/* Binds `addr`:`port` (port 0: any), prints "NAME listening on HOST:PORT".
 * With `reuseport`, other sockets with SO_REUSEPORT (other proxies started
 * with --reuseport, of the same user) may bind the same port, and the
 * kernel spreads new connections among them. Returns the socket or -1
 * after printing why. */
static int listen_on(const char *addr, int port, const char *name, const char *cache,
                     bool reuseport)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *ai = NULL;
    char ps[8];
    snprintf(ps, sizeof(ps), "%d", port);
    int gai = getaddrinfo(addr, ps, &hints, &ai);
    if (gai != 0) {
        fprintf(stderr, "%s: %s address %s: %s\n", prog, name, addr, gai_strerror(gai));
        return -1;
    }
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
        (reuseport && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) != 0) ||
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
    /* "resp listening on 127.0.0.1:6379", then " cache NAME" when a config
     * file's listeners serve several caches. */
    printf(strchr(host, ':') ? "%s listening on [%s]:%d" : "%s listening on %s:%d", name, host,
           bound);
    if (cache)
        printf(" cache %s", cache);
    printf("\n");
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
        px_conns_accept(conns, fd, l->proto, &l->b, l->tls);
    }
}

static int64_t now_ms(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- the loop ---- */

static int serve(px_backend *b, listener *ls, int nls, int drain_s, px_tls *tls)
{
    int epfd = epoll_create1(EPOLL_CLOEXEC);
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGHUP);
    int sfd = signalfd(-1, &sigs, SFD_NONBLOCK | SFD_CLOEXEC);
    px_conns *conns = epfd >= 0 ? px_conns_new(epfd, b) : NULL;
    if (epfd < 0 || sfd < 0 || !conns) {
        fprintf(stderr, "%s: event loop: %s\n", prog, strerror(errno));
        return 1;
    }
    /* Every command is counted, metrics port or not (INFO could show it);
     * a port only makes them readable. */
    px_conns_observe(conns, px_metrics_observe);
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
    px_metrics_source msrc = {.stats = b->stats, .limits = &b->limits, .client = b->client,
                              .co = b->co, .conns = conns, .started_ms = b->started_ms};
    px_http *http = metrics_fd >= 0 ? px_http_new(epfd, metrics_fd, px_metrics_render, &msrc)
                                    : NULL;
    metrics_fd = -1;

    int64_t drain_until = 0;
    struct epoll_event evs[256];
    for (;;) {
        if (drain_until) {
            if (px_conns_count(conns) == 0 || now_ms(CLOCK_MONOTONIC) >= drain_until)
                break;
        }
        int timeout = px_conns_timeout_ms(conns);
        int http_timeout = px_http_timeout_ms(http);
        if (http_timeout >= 0 && (timeout < 0 || http_timeout < timeout))
            timeout = http_timeout;
        if (drain_until && (timeout < 0 || timeout > 100))
            timeout = 100;
        int n = epoll_wait(epfd, evs, 256, timeout);
        px_conns_tick(conns); /* the start of the commands this pass reads */
        if (n < 0 && errno != EINTR) {
            fprintf(stderr, "%s: epoll_wait: %s\n", prog, strerror(errno));
            break;
        }
        bool dispatch = false;
        for (int i = 0; i < n; i++) {
            px_watch *w = evs[i].data.ptr;
            if (w == &sig_watch) {
                struct signalfd_siginfo si;
                bool stop = false;
                while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
                    /* SIGHUP: new connections get the certificate and key
                     * as the files now are; without TLS it does nothing,
                     * as redis-server ignores it. */
                    if (si.ssi_signo != SIGHUP)
                        stop = true;
                    else if (tls)
                        px_tls_reload(tls);
                }
                if (stop && !drain_until) {
                    /* Stop taking connections and commands; finish the rest. */
                    for (int k = 0; k < nls; k++) {
                        epoll_ctl(epfd, EPOLL_CTL_DEL, ls[k].fd, NULL);
                        close(ls[k].fd);
                        ls[k].fd = -1;
                    }
                    px_conns_drain(conns);
                    px_http_stop(http);
                    drain_until = now_ms(CLOCK_MONOTONIC) + (int64_t)drain_s * 1000;
                    if (drain_until == 0)
                        drain_until = 1;
                }
            } else if (w == &dispatch_watch) {
                dispatch = true;
            } else if (w->kind == PX_WATCH_HTTP) {
                px_http_event(http, w, evs[i].events);
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
        px_http_expire(http);
        px_conns_flush(conns);
    }
    /* The drain is over: the connections close first, so that nothing
     * buffered is fed to the client being freed (a paused connection would
     * be, at the next flush). Freeing the client then ends every request
     * still in flight (their callbacks run here and end their replies into
     * closed connections); then the connections go. */
    px_conns_close_all(conns);
    if (b->co)
        momento_coalescer_free(b->co);
    momento_client_free(b->client);
    b->client = NULL;
    px_conns_flush(conns);
    px_conns_free(conns);
    px_http_free(http);
    close(sfd);
    close(epfd);
    return 0;
}

/* Whether the listeners serve more than one cache: then each "listening
 * on" line names its cache. */
static bool several_caches(const px_options *o)
{
    for (int i = 1; i < o->nlisteners; i++)
        if (strcmp(o->listeners[i].cache, o->listeners[0].cache) != 0)
            return true;
    return false;
}

/* Creates each cache a listener serves, as the examples make theirs:
 * created if missing; and the invalidation topic's cache, without which
 * every publish fails and the subscription never comes up (the library
 * subscribes again each second, so one made now is found). Returns 0 or
 * 1 after printing why. */
static int create_caches(momento_client *client, const px_options *o, const char *where)
{
    for (int i = 0; i <= o->nlisteners; i++) {
        const char *cache = i < o->nlisteners ? o->listeners[i].cache : o->near_cache_topic_cache;
        bool done = cache == NULL;
        for (int k = 0; k < i && !done; k++)
            done = strcmp(o->listeners[k].cache, cache) == 0;
        if (done)
            continue;
        momento_result *res = NULL;
        int rc = momento_create_cache_sync(client, cache, NULL, &res);
        if (rc != MOMENTO_OK) {
            fprintf(stderr, "%s: create cache '%s': %s: %s\n", prog, cache,
                    momento_error_name(rc), momento_result_message(res));
            momento_result_free(res);
            return 1;
        }
        momento_result_free(res);
        fprintf(stderr, "%s: cache '%s' on %s\n", prog, cache, where);
    }
    return 0;
}

/* The library's client as the options configure it, in dispatch mode.
 * Returns 0, or 1 or 2 after printing why. */
static int client_new(const px_options *o, const ex_target *t, momento_client **client)
{
    momento_config *cfg = NULL;
    int rc = ex_target_config_new(t, &cfg);
    if (rc == MOMENTO_OK)
        rc = momento_config_set_timeout_ms(cfg, (uint32_t)o->timeout_ms);
    if (rc == MOMENTO_OK)
        rc = momento_config_set_default_ttl_ms(cfg, (uint64_t)o->default_ttl_s * 1000);
    if (rc == MOMENTO_OK && o->batch_min_in_flight > 0)
        rc = momento_config_set_batching(cfg, (uint32_t)o->batch_min_in_flight, 0,
                                         (uint32_t)o->batch_max_keys,
                                         MOMENTO_BATCH_DEFAULT_MAX_BYTES);
    /* GET, MGET's lone keys and memcached get answer from it; the
     * commands that must be current pass no_near_cache (px.h). */
    if (rc == MOMENTO_OK && o->near_cache_bytes > 0)
        rc = momento_config_set_near_cache(cfg, (size_t)o->near_cache_bytes,
                                           (uint32_t)o->near_cache_staleness_ms);
    /* Every write the client makes - from any port, any command - is
     * published; with a near cache, other proxies' keys drop its entries.
     * px_option_set() had the library check both names. */
    if (rc == MOMENTO_OK && o->near_cache_topic)
        rc = momento_config_set_near_cache_invalidation(cfg, o->near_cache_topic_cache,
                                                        o->near_cache_topic);
    for (int i = 0; rc == MOMENTO_OK && i < o->nheaders; i++) {
        char name[65]; /* px_option_set() refused longer names */
        const char *eq = strchr(o->headers[i], '=');
        size_t n = (size_t)(eq - o->headers[i]);
        memcpy(name, o->headers[i], n);
        name[n] = '\0';
        rc = momento_config_add_header(cfg, name, eq + 1);
        if (rc != MOMENTO_OK) {
            fprintf(stderr, "%s: invalid --header '%s': %s (see --help)\n", prog, o->headers[i],
                    momento_refusal_reason());
            momento_config_free(cfg);
            return 2;
        }
    }
    /* Momento's requests by method and outcome, for the metrics port. */
    if (rc == MOMENTO_OK && o->metrics_port >= 0)
        rc = momento_config_set_metrics(cfg, px_metrics_momento_hook, NULL);
    if (rc == MOMENTO_OK)
        rc = momento_config_set_dispatch(cfg, 1);
    /* Over protosocket this loop works the connections too: a GET crosses
     * no thread of the library's (docs/performance.md, "Protosocket on the
     * dispatching thread"). */
    if (rc == MOMENTO_OK)
        rc = momento_config_set_dispatch_io(cfg, 1);
    if (rc == MOMENTO_OK)
        rc = momento_client_new(client, cfg, t->creds);
    momento_config_free(cfg);
    if (rc != MOMENTO_OK) {
        fprintf(stderr, "%s: client: %s\n", prog, momento_strerror(rc));
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    px_options o;
    px_options_init(&o);
    int rc = px_options_parse(&o, argc, argv);
    /* --config FILE, wherever it stands: the file is read first, then the
     * command line again over it, so that the command line overrides it. */
    if (rc == 0 && o.config) {
        const char *config = o.config;
        px_options_init(&o);
        rc = px_config_load(&o, config);
        if (rc == 0)
            rc = px_options_parse(&o, argc, argv);
    }
    if (rc == 0)
        rc = px_options_finish(&o);
    if (rc)
        return rc == 1 ? 0 : rc;

    /* Signals arrive through the loop's signalfd; a client that closes
     * while we write is an EPIPE, not a SIGPIPE. */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);

    ex_target t;
    if (ex_target_open(&t, prog, &o.target) != MOMENTO_OK)
        return 1;

    px_counters stats = {0};
    px_backend base = {.default_ttl_ms = (uint64_t)o.default_ttl_s * 1000,
                       .requirepass = o.requirepass, .limits = o.limits, .stats = &stats,
                       .started_ms = now_ms(CLOCK_REALTIME), .near = o.near_cache_bytes > 0};
    rc = client_new(&o, &t, &base.client);
    if (rc) {
        ex_target_close(&t);
        return rc;
    }
    if (o.coalesce && momento_coalescer_new(&base.co, base.client) != MOMENTO_OK) {
        fprintf(stderr, "%s: coalescer: out of memory\n", prog);
        momento_client_free(base.client);
        ex_target_close(&t);
        return 1;
    }
    int status = create_caches(base.client, &o, t.description);
    /* Every listener speaks TLS when a certificate is given: its files
     * are read before any port opens, so a bad one stops the start. */
    px_tls *tls = NULL;
    if (status == 0 && o.tls_cert && !(tls = px_tls_new(prog, o.tls_cert, o.tls_key, o.tls_ca)))
        status = 1;

    listener *ls = calloc((size_t)o.nlisteners, sizeof(*ls));
    if (!ls && status == 0) {
        fprintf(stderr, "%s: out of memory\n", prog);
        status = 1;
    }
    int nls = 0;
    bool named = several_caches(&o);
    while (status == 0 && nls < o.nlisteners) {
        const px_listen_opt *lo = &o.listeners[nls];
        listener *l = &ls[nls++];
        l->watch.kind = PX_WATCH_LISTENER;
        l->proto = lo->kind == PX_LISTEN_RESP ? &resp_proto : &memcache_proto;
        l->b = base;
        l->b.cache = lo->cache;
        l->b.channels = &l->channels;
        for (int k = 0; k < nls - 1; k++)
            if (strcmp(ls[k].b.cache, lo->cache) == 0) {
                l->b.channels = ls[k].b.channels;
                break;
            }
        l->tls = tls;
        l->fd = listen_on(lo->host, lo->port, l->proto->name, named ? lo->cache : NULL,
                          o.reuseport);
        if (l->fd < 0)
            status = 1;
    }
    if (status == 0 && o.metrics_port >= 0 &&
        (metrics_fd = listen_on(o.metrics_host, o.metrics_port, "metrics", NULL, false)) < 0)
        status = 1;
    if (status == 0)
        status = serve(&base, ls, nls, o.drain_s, tls);
    for (int i = 0; i < nls; i++)
        if (ls[i].fd >= 0)
            close(ls[i].fd);
    free(ls);
    if (metrics_fd >= 0)
        close(metrics_fd); /* serve() did not run */
    px_tls_free(tls);
    if (base.client) {
        momento_coalescer_free(base.co);
        momento_client_free(base.client);
    }
    ex_target_close(&t);
    px_config_free();
    return status;
}
