/* momento-proxy's settings: every long option by name, so that the command
 * line and the config file (config.c) set them through one function and
 * one set of checks. */
#ifndef PX_OPTIONS_H
#define PX_OPTIONS_H

#include "px.h"
#include "target.h"

#include <stdbool.h>
#include <stddef.h>

#define PX_MAX_LISTENERS 64

/* What a listening port speaks. */
typedef enum { PX_LISTEN_RESP, PX_LISTEN_MEMCACHE } px_listen_kind;

/* One listening port and the cache it serves. */
typedef struct px_listen_opt {
    px_listen_kind kind;
    const char *cache;
    const char *host;
    int port; /* 0: any free port */
} px_listen_opt;

typedef struct px_options {
    ex_target_options target; /* --endpoint, --insecure, --tls-roots, ... */
    const char *cache;        /* --cache: the cache of --resp-port / --memcache-port */
    const char *bind;
    int resp_port;            /* -1: off */
    int memcache_port;        /* -1: off */
    int default_ttl_s;
    int timeout_ms;
    int batch_min_in_flight;
    int batch_max_keys;
    bool coalesce;
    /* --near-cache-bytes, --near-cache-staleness-ms
     * (momento_config_set_near_cache()); both 0: off, else both set. */
    int near_cache_bytes;
    int near_cache_staleness_ms;
    /* --near-cache-topic, --near-cache-topic-cache
     * (momento_config_set_near_cache_invalidation()): the topic this
     * proxy's written keys are published to and other clients' keys heard
     * from, and the cache it is in (--cache unless given; set by
     * px_options_finish()). Topic NULL: off. */
    const char *near_cache_topic;
    const char *near_cache_topic_cache;
    bool reuseport; /* SO_REUSEPORT on the data ports: N processes share them */
    int drain_s;
    px_limits limits;
    const char *headers[MOMENTO_MAX_CLIENT_HEADERS]; /* "name=value" */
    int nheaders;
    const char *requirepass;  /* NULL: no auth */
    const char *tls_cert;     /* PEM files; cert and key together or neither */
    const char *tls_key;
    const char *tls_ca;       /* clients must present a certificate it signed */
    const char *metrics_host; /* --metrics HOST:PORT or --metrics-port N */
    int metrics_port;         /* -1: off */
    char metrics_host_buf[256]; /* --metrics's host, cut from its value */
    const char *config;       /* --config FILE, read before the command line */
    /* The config file's `listeners:`; with none, --resp-port and
     * --memcache-port on --bind serve --cache. */
    px_listen_opt listeners[PX_MAX_LISTENERS];
    int nlisteners;
} px_options;

/* The defaults. */
void px_options_init(px_options *o);

/* Sets the option NAME (a long option's name without its dashes, as the
 * config file's keys are) to VALUE (NULL or "true"/"false" for a flag such
 * as "insecure"). `where` names the source in an error: "--timeout-ms" on
 * the command line, "proxy.yaml:7: timeout_ms" in the config file. Values
 * are borrowed: they must outlive `o`.
 * Returns 0 when set, 2 after printing "momento-proxy: WHERE: why" on
 * stderr for a bad value, -1 for a name that is no option (nothing
 * printed: the caller says it its way). */
int px_option_set(px_options *o, const char *name, const char *value, const char *where);

/* Whether NAME is an option px_option_set() takes (not "help"). */
bool px_option_known(const char *name);

/* Parses argv (after --config FILE has been applied, whatever its place).
 * Returns 0 to run, 1 after --help, 2 after printing an error. */
int px_options_parse(px_options *o, int argc, char **argv);

/* The listeners to open: o->listeners, or those the ports options give.
 * Returns 0, or 2 after printing why there are none. */
int px_options_finish(px_options *o);

#endif
