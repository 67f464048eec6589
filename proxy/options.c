/* momento-proxy's options (options.h): one table of names, one setter, so
 * that a value the command line refuses the config file refuses too, with
 * the same words. */
#include "options.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const prog = "momento-proxy";

/* What an option takes. */
enum { FLAG, VALUE };

typedef struct option_def {
    const char *name;
    int arg;
    int target; /* an EX_TARGET_LONGOPTS code, or 0 */
} option_def;

static const option_def defs[] = {
    {"endpoint", VALUE, EX_OPT_ENDPOINT},
    {"insecure", FLAG, EX_OPT_INSECURE},
    {"tls-roots", VALUE, EX_OPT_TLS_ROOTS},
    {"transport", VALUE, EX_OPT_TRANSPORT},
    {"protosocket-endpoint", VALUE, EX_OPT_PS_ENDPOINT},
    {"config", VALUE, 0},
    {"cache", VALUE, 0},
    {"bind", VALUE, 0},
    {"reuseport", FLAG, 0},
    {"resp-port", VALUE, 0},
    {"memcache-port", VALUE, 0},
    {"default-ttl", VALUE, 0},
    {"timeout-ms", VALUE, 0},
    {"batch", VALUE, 0},
    {"batch-keys", VALUE, 0},
    {"no-coalesce", FLAG, 0},
    {"near-cache-bytes", VALUE, 0},
    {"near-cache-staleness-ms", VALUE, 0},
    {"near-cache-topic", VALUE, 0},
    {"near-cache-topic-cache", VALUE, 0},
    {"max-connections", VALUE, 0},
    {"max-request-bytes", VALUE, 0},
    {"max-in-flight", VALUE, 0},
    {"drain-seconds", VALUE, 0},
    {"header", VALUE, 0},
    {"requirepass", VALUE, 0},
    {"tls-cert", VALUE, 0},
    {"tls-key", VALUE, 0},
    {"tls-ca", VALUE, 0},
    {"metrics", VALUE, 0},
    {"metrics-port", VALUE, 0},
    {"help", FLAG, 0},
};
#define NDEFS (sizeof(defs) / sizeof(defs[0]))

static void usage(void)
{
    printf("Usage: %s [OPTION]...\n"
           "Serves Redis (RESP2) and memcached (text and binary) clients from a Momento\n"
           "cache: every command becomes Momento calls through libmomento, pipelined,\n"
           "batched and coalesced. Prints \"PROTOCOL listening on HOST:PORT\" for each port\n"
           "once it serves; SIGTERM or SIGINT drains the commands in flight, then exits.\n\n"
           EX_TARGET_HELP "\n"
           "  --config FILE          read these options from a YAML file first (the\n"
           "                         command line overrides it); its `listeners:` list\n"
           "                         serves several caches on several ports (docs/proxy.md)\n\n"
           "Ports (at least one):\n"
           "  --resp-port N          serve Redis clients on port N (0: any free port)\n"
           "  --memcache-port N      serve memcached clients, text and binary protocol,\n"
           "                         on port N (0: any free port)\n"
           "  --bind ADDR            the address to listen on (default 127.0.0.1)\n"
           "  --reuseport            share the Redis and memcached ports with other\n"
           "                         momento-proxy processes started with it\n"
           "                         (SO_REUSEPORT): the kernel spreads new connections\n"
           "                         among them\n"
           "  --metrics-port N       serve Prometheus metrics at /metrics on port N of\n"
           "                         127.0.0.1 (0: any free port)\n"
           "  --metrics HOST:PORT    the same on another address\n\n"
           "Clients:\n"
           "  --requirepass PASS     clients must authenticate: Redis AUTH or HELLO AUTH,\n"
           "                         memcached binary SASL PLAIN (text is refused)\n"
           "  --tls-cert FILE        serve TLS with this PEM certificate (chain) and\n"
           "  --tls-key FILE         this PEM private key; SIGHUP reads both again\n"
           "  --tls-ca FILE          and require client certificates this CA signed\n\n"
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
           "  --near-cache-bytes N   keep up to N bytes of the values read and written in\n"
           "                         the proxy to answer GET and memcached get from, 4096\n"
           "                         to 2147483647 (default: none; docs/proxy.md, \"The\n"
           "                         near cache\")\n"
           "  --near-cache-staleness-ms M\n"
           "                         how old its answers may be, 1 to 3600000 ms (needed\n"
           "                         with --near-cache-bytes): other clients' writes show\n"
           "                         up to M ms late; this proxy's own writes, and SET ...\n"
           "                         GET, GETDEL, gets, gat and cas, are current at once\n"
           "  --near-cache-topic TOPIC\n"
           "                         publish the keys this proxy writes to the Momento\n"
           "                         topic TOPIC, and drop the near cache's entries for\n"
           "                         the keys other proxies (and libmomento clients) so\n"
           "                         configured publish there: their writes show within\n"
           "                         milliseconds, M ms at worst; without\n"
           "                         --near-cache-bytes it only publishes\n"
           "  --near-cache-topic-cache NAME\n"
           "                         the cache TOPIC is in (default: --cache), created\n"
           "                         if missing\n"
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
           "  --help                 print this help and exit\n\n"
           "SIGTERM or SIGINT: stop taking connections, answer the commands in flight,\n"
           "exit. SIGHUP: read --tls-cert and --tls-key again (new connections use them).\n\n"
           "A password given as --requirepass is visible to every user of the machine in\n"
           "the process's command line; give it in a --config file only its owner can\n"
           "read. The config file is YAML: its keys are the long options above (timeout-ms\n"
           "or timeout_ms), and its listeners serve several caches on several ports:\n"
           "  requirepass: \"a long secret\"\n"
           "  metrics: 127.0.0.1:9121\n"
           "  listeners:\n"
           "    - {cache: sessions, resp: 127.0.0.1:6379}\n"
           "    - {cache: pages, memcache: 127.0.0.1:11211}\n\n"
           "docs/proxy.md has the whole example, every command served, the metrics, and\n"
           "where the answers differ from Redis's and memcached's, and why.\n",
           prog, MOMENTO_MAX_CLIENT_HEADERS);
}

void px_options_init(px_options *o)
{
    memset(o, 0, sizeof(*o));
    o->cache = "cache";
    o->bind = "127.0.0.1";
    o->resp_port = o->memcache_port = -1;
    o->metrics_port = -1;
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
}

/* Prints why `value` is refused. The command line keeps the words every
 * example uses; the config file's `where` is "FILE:LINE: key". */
static int bad(const char *where, const char *value, const char *why)
{
    if (strncmp(where, "--", 2) == 0)
        return ex_bad_option(prog, where, value, why);
    fprintf(stderr, "%s: %s: '%s' %s\n", prog, where, value, why);
    return 2;
}

/* *out = v, a whole number from lo to hi; refused in the words every
 * range uses ("must be LO to HI"). */
static int set_int(const char *where, const char *v, long lo, long hi, int *out)
{
    if (v && ex_parse_int(v, lo, hi, out))
        return 0;
    char why[64];
    snprintf(why, sizeof(why), "must be %ld to %ld", lo, hi);
    return bad(where, v ? v : "", why);
}

/* The options that are an int of px_options and nothing more: the range
 * each takes and where it goes. */
static const struct int_option {
    const char *name;
    long lo, hi;
    size_t at; /* offsetof(px_options, the field) */
} int_options[] = {
    {"resp-port", 0, 65535, offsetof(px_options, resp_port)},
    {"memcache-port", 0, 65535, offsetof(px_options, memcache_port)},
    {"default-ttl", 1, 4294967, offsetof(px_options, default_ttl_s)},
    {"timeout-ms", 1, 300000, offsetof(px_options, timeout_ms)},
    {"batch", 0, 100000, offsetof(px_options, batch_min_in_flight)},
    {"batch-keys", 2, 10000, offsetof(px_options, batch_max_keys)},
    {"drain-seconds", 0, 3600, offsetof(px_options, drain_s)},
    /* The library takes up to 1 TiB; an int is what every option here
     * parses, and 2 GiB of near cache is more than a proxy's hot keys. */
    {"near-cache-bytes", 4096, 2147483647L, offsetof(px_options, near_cache_bytes)},
    {"near-cache-staleness-ms", 1, 3600000, offsetof(px_options, near_cache_staleness_ms)},
};

/* A name for the invalidation topic (`topic`) or its cache, as the
 * library checks it: the setter refuses what a topic publish would, and
 * it is asked here, on a scratch config, so that a bad value is refused
 * where it was written (the config file's line) in the library's words. */
static int set_sync_name(const char *where, const char *v, bool topic, const char **out)
{
    momento_config *cfg = NULL;
    int rc = momento_config_new(&cfg);
    if (rc == MOMENTO_OK)
        rc = momento_config_set_near_cache_invalidation(cfg, topic ? "cache" : v,
                                                        topic ? v : "topic");
    char why[256];
    snprintf(why, sizeof(why), "%s",
             rc == MOMENTO_ERR_INVALID_ARGUMENT ? momento_refusal_reason() : "out of memory");
    momento_config_free(cfg);
    if (rc != MOMENTO_OK)
        return bad(where, v, why);
    *out = v;
    return 0;
}

/* A flag from the config file may say "true" or "false"; the command line
 * gives none. Returns 1 (on), 0 (off) or -1. */
static int flag_value(const char *v)
{
    if (!v || strcmp(v, "true") == 0 || strcmp(v, "yes") == 0 || strcmp(v, "on") == 0)
        return 1;
    if (strcmp(v, "false") == 0 || strcmp(v, "no") == 0 || strcmp(v, "off") == 0)
        return 0;
    return -1;
}

/* "HOST:PORT", "[V6]:PORT", or ":PORT" (host left as is); the host is
 * copied into buf. */
static int set_host_port(const char *where, const char *v, char *buf, size_t size,
                         const char **host, int *port)
{
    const char *colon = v ? strrchr(v, ':') : NULL;
    if (!colon || !ex_parse_int(colon + 1, 0, 65535, port))
        return bad(where, v ? v : "", "must be HOST:PORT, the port 0 to 65535");
    size_t hn = (size_t)(colon - v);
    if (hn == 0)
        return 0;
    if (v[0] == '[') {
        if (hn < 3 || v[hn - 1] != ']')
            return bad(where, v, "must be HOST:PORT ([ADDR]:PORT for IPv6)");
        v++;
        hn -= 2;
    }
    if (hn >= size)
        return bad(where, v, "has a host over 255 bytes");
    memcpy(buf, v, hn);
    buf[hn] = '\0';
    *host = buf;
    return 0;
}

bool px_option_known(const char *name)
{
    for (size_t i = 0; i < NDEFS; i++)
        if (strcmp(defs[i].name, name) == 0)
            return strcmp(name, "help") != 0;
    return false;
}

int px_option_set(px_options *o, const char *name, const char *value, const char *where)
{
    const option_def *d = NULL;
    for (size_t i = 0; i < NDEFS; i++)
        if (strcmp(defs[i].name, name) == 0)
            d = &defs[i];
    if (!d || strcmp(name, "help") == 0)
        return -1;
    if (d->arg == VALUE && !value)
        return bad(where, "", "needs a value");
    if (d->target) {
        if (d->arg == FLAG) {
            int f = flag_value(value);
            if (f < 0)
                return bad(where, value, "must be true or false");
            if (!f) {
                if (d->target == EX_OPT_INSECURE)
                    o->target.insecure = false;
                return 0;
            }
        }
        /* The examples' target options print their own refusal after
         * `prog`: from the config file, "momento-proxy: FILE:LINE". */
        char p[512];
        const char *key = strncmp(where, "--", 2) == 0 ? NULL : strrchr(where, ' ');
        if (key && key - where >= 1 && key[-1] == ':')
            snprintf(p, sizeof(p), "%s: %.*s", prog, (int)(key - where - 1), where);
        else
            snprintf(p, sizeof(p), "%s", prog);
        return ex_target_option(p, d->target, value, &o->target) ? 2 : 0;
    }
    for (size_t i = 0; i < sizeof(int_options) / sizeof(int_options[0]); i++)
        if (strcmp(name, int_options[i].name) == 0)
            return set_int(where, value, int_options[i].lo, int_options[i].hi,
                           (int *)((char *)o + int_options[i].at));
    int v;
    if (strcmp(name, "config") == 0) {
        o->config = value;
    } else if (strcmp(name, "cache") == 0) {
        if (!*value || strlen(value) > MOMENTO_MAX_CACHE_NAME_BYTES)
            return bad(where, value, "must be 1 to 255 bytes");
        o->cache = value;
    } else if (strcmp(name, "near-cache-topic") == 0) {
        return set_sync_name(where, value, true, &o->near_cache_topic);
    } else if (strcmp(name, "near-cache-topic-cache") == 0) {
        return set_sync_name(where, value, false, &o->near_cache_topic_cache);
    } else if (strcmp(name, "bind") == 0) {
        if (!*value)
            return bad(where, value, "must be an address");
        o->bind = value;
    } else if (strcmp(name, "reuseport") == 0) {
        int f = flag_value(value);
        if (f < 0)
            return bad(where, value, "must be true or false");
        o->reuseport = f;
    } else if (strcmp(name, "no-coalesce") == 0) {
        int f = flag_value(value);
        if (f < 0)
            return bad(where, value, "must be true or false");
        o->coalesce = !f;
    } else if (strcmp(name, "max-connections") == 0) {
        if (set_int(where, value, 1, 1000000, &v))
            return 2;
        o->limits.max_connections = (uint32_t)v;
    } else if (strcmp(name, "max-request-bytes") == 0) {
        if (set_int(where, value, 1024, 536870912, &v))
            return 2;
        o->limits.max_request_bytes = (size_t)v;
    } else if (strcmp(name, "max-in-flight") == 0) {
        if (set_int(where, value, 1, 100000, &v))
            return 2;
        o->limits.max_in_flight = (uint32_t)v;
    } else if (strcmp(name, "header") == 0) {
        const char *eq = strchr(value, '=');
        if (!eq || value[0] == '=')
            return bad(where, value, "must be NAME=VALUE");
        if (eq - value > 64)
            return bad(where, value, "the name is over 64 bytes");
        if (o->nheaders == MOMENTO_MAX_CLIENT_HEADERS)
            return bad(where, value, "too many headers");
        o->headers[o->nheaders++] = value;
    } else if (strcmp(name, "requirepass") == 0) {
        /* Never echoed: a refusal names the option, not the secret. */
        if (!*value || strlen(value) > 512)
            return bad(where, "...", "must be 1 to 512 bytes");
        o->requirepass = value;
    } else if (strcmp(name, "tls-cert") == 0 || strcmp(name, "tls-key") == 0 ||
               strcmp(name, "tls-ca") == 0) {
        if (!*value)
            return bad(where, value, "must be a file");
        if (name[4] == 'c' && name[5] == 'e')
            o->tls_cert = value;
        else if (name[4] == 'k')
            o->tls_key = value;
        else
            o->tls_ca = value;
    } else if (strcmp(name, "metrics") == 0) {
        const char *host = "127.0.0.1";
        int port;
        if (set_host_port(where, value, o->metrics_host_buf, sizeof(o->metrics_host_buf), &host,
                          &port))
            return 2;
        o->metrics_host = host;
        o->metrics_port = port;
    } else if (strcmp(name, "metrics-port") == 0) {
        if (set_int(where, value, 0, 65535, &o->metrics_port))
            return 2;
        if (!o->metrics_host)
            o->metrics_host = "127.0.0.1";
    }
    return 0;
}

int px_options_parse(px_options *o, int argc, char **argv)
{
    struct option longopts[NDEFS + 1];
    for (size_t i = 0; i < NDEFS; i++)
        longopts[i] = (struct option){defs[i].name,
                                      defs[i].arg == VALUE ? required_argument : no_argument,
                                      NULL, (int)i};
    longopts[NDEFS] = (struct option){NULL, 0, NULL, 0};
    optind = 1;
    int ch;
    while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        if (ch < 0 || (size_t)ch >= NDEFS)
            return 2; /* getopt said why */
        if (strcmp(defs[ch].name, "help") == 0) {
            usage();
            return 1;
        }
        char where[64];
        snprintf(where, sizeof(where), "--%s", defs[ch].name);
        if (px_option_set(o, defs[ch].name, optarg, where))
            return 2;
    }
    if (optind < argc)
        return ex_bad_option(prog, "argument", argv[optind], "takes no arguments");
    return 0;
}

int px_options_finish(px_options *o)
{
    if ((o->tls_cert == NULL) != (o->tls_key == NULL))
        return ex_bad_option(prog, o->tls_cert ? "--tls-cert" : "--tls-key",
                             o->tls_cert ? o->tls_cert : o->tls_key,
                             "needs --tls-key and --tls-cert together");
    if (o->tls_ca && !o->tls_cert)
        return ex_bad_option(prog, "--tls-ca", o->tls_ca, "needs --tls-cert and --tls-key");
    /* No default bound: how stale an answer may be is the application's
     * to choose (docs/near-cache.md), so the two come together. */
    if ((o->near_cache_bytes == 0) != (o->near_cache_staleness_ms == 0)) {
        char v[16];
        bool bytes = o->near_cache_bytes != 0;
        snprintf(v, sizeof(v), "%d", bytes ? o->near_cache_bytes : o->near_cache_staleness_ms);
        return ex_bad_option(prog, bytes ? "--near-cache-bytes" : "--near-cache-staleness-ms", v,
                             bytes ? "needs --near-cache-staleness-ms"
                                   : "needs --near-cache-bytes");
    }
    /* The topic's cache alone would do nothing: it is a mistake (the
     * topic's key misspelt, or left out), not a setting. */
    if (o->near_cache_topic_cache && !o->near_cache_topic)
        return ex_bad_option(prog, "--near-cache-topic-cache", o->near_cache_topic_cache,
                             "needs --near-cache-topic");
    if (o->near_cache_topic && !o->near_cache_topic_cache)
        o->near_cache_topic_cache = o->cache;
    /* A config file's listener that names no cache serves --cache, and
     * one given as a bare port listens on --bind, whether the file or the
     * command line gave them (config.h). */
    for (int i = 0; i < o->nlisteners; i++) {
        if (!o->listeners[i].cache)
            o->listeners[i].cache = o->cache;
        if (!o->listeners[i].host)
            o->listeners[i].host = o->bind;
    }
    /* The ports options add to the config file's listeners: a command
     * line can add a port to a file's set. */
    int more = (o->resp_port >= 0) + (o->memcache_port >= 0);
    if (o->nlisteners + more > PX_MAX_LISTENERS) {
        char port[16];
        snprintf(port, sizeof(port), "%d", o->resp_port >= 0 ? o->resp_port : o->memcache_port);
        return ex_bad_option(prog, o->resp_port >= 0 ? "--resp-port" : "--memcache-port", port,
                             "beside the config file's listeners makes over 64");
    }
    if (o->resp_port >= 0)
        o->listeners[o->nlisteners++] =
            (px_listen_opt){PX_LISTEN_RESP, o->cache, o->bind, o->resp_port};
    if (o->memcache_port >= 0)
        o->listeners[o->nlisteners++] =
            (px_listen_opt){PX_LISTEN_MEMCACHE, o->cache, o->bind, o->memcache_port};
    if (o->nlisteners == 0)
        return ex_bad_option(prog, "ports", "none",
                             "give --resp-port, --memcache-port or both, or listeners "
                             "in --config");
    return ex_check_target(prog, &o->target);
}
