/* event-loop: libmomento inside a libuv application.
 *
 * A program built on an event loop wants every result on the loop's own
 * thread, so its state needs no locks. With the client in dispatch mode
 * (momento_config_set_dispatch) and the libuv adapter attached
 * (momento/adapters/libuv.h), callbacks run inside uv_run(), like any
 * other libuv callback.
 *
 * Here a timer plays the application: every tick it handles a batch of
 * "incoming requests", each a cache lookup that on a miss stores the value
 * it computed (cache-aside), and counts the answers - in plain variables,
 * touched only by the loop's thread. It stops after --requests lookups or
 * --seconds, whichever comes first, then detaches and frees the client
 * from the last callback, which leaves the loop with nothing to do.
 *
 * With MOMENTO_API_KEY (and MOMENTO_ENDPOINT for current keys) it talks to
 * Momento; otherwise it starts the bundled local server in-process on a
 * free loopback port. */
#include "momento/adapters/libuv.h"
#include "momento/local.h"
#include "momento/momento.h"

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct app {
    momento_client *client;
    momento_uv adapter;
    uv_timer_t tick;
    const char *cache;
    long requests, per_tick, keys, seconds;
    uint64_t started_ms;
    long sent, answered, hits, misses, stores, errors;
    long in_flight;
    bool stopping;
} app;

/* Once stopping and everything has been answered: let go of the loop.
 * The free runs any callback still queued, then the dispatch running this
 * callback releases the client. */
static void maybe_finish(app *a)
{
    if (a->stopping && a->in_flight == 0 && a->client) {
        momento_uv_detach(&a->adapter, NULL);
        momento_client_free(a->client);
        a->client = NULL;
    }
}

static void on_stored(const momento_result *r, void *ud)
{
    app *a = ud;
    a->in_flight--;
    if (momento_result_error(r) == MOMENTO_OK)
        a->stores++;
    else
        a->errors++;
    maybe_finish(a);
}

/* A lookup's answer: a hit is served; a miss "computes" the value and
 * stores it, still from the loop's thread. */
static void on_lookup(const momento_result *r, void *ud)
{
    app *a = ud;
    a->in_flight--;
    a->answered++;
    if (momento_result_error(r) != MOMENTO_OK) {
        a->errors++;
    } else if (momento_result_is_hit(r)) {
        a->hits++;
    } else {
        a->misses++;
        char value[] = "computed";
        /* The key is not in the result; the application would keep it.
         * Here the value's key is derived again from the count. */
        char key[32];
        snprintf(key, sizeof(key), "item-%ld", a->misses % a->keys);
        if (!a->client) /* cannot happen while a lookup is in flight */
            a->errors++;
        else if (momento_set(a->client, a->cache, key, strlen(key), value, strlen(value), 60000,
                             NULL, on_stored, a) == MOMENTO_OK)
            a->in_flight++;
        else
            a->errors++;
    }
    maybe_finish(a);
}

static void stop(app *a)
{
    a->stopping = true;
    uv_timer_stop(&a->tick);
    uv_close((uv_handle_t *)&a->tick, NULL);
    maybe_finish(a);
}

static void on_tick(uv_timer_t *t)
{
    app *a = t->data;
    for (long i = 0; i < a->per_tick && a->sent < a->requests; i++) {
        char key[32];
        snprintf(key, sizeof(key), "item-%ld", a->sent % a->keys);
        if (momento_get(a->client, a->cache, key, strlen(key), NULL, on_lookup, a) ==
            MOMENTO_OK) {
            a->in_flight++;
            a->sent++;
        } else {
            a->errors++;
            a->sent++;
        }
    }
    if (a->sent >= a->requests || uv_now(t->loop) - a->started_ms >= (uint64_t)a->seconds * 1000)
        stop(a);
}

static int usage(const char *prog)
{
    fprintf(stderr,
            "usage: %s [--requests N] [--per-tick N] [--keys N] [--seconds S]\n"
            "  --requests N   lookups in all (default 10000)\n"
            "  --per-tick N   lookups started per 1 ms tick (default 50)\n"
            "  --keys N       distinct keys (default 100)\n"
            "  --seconds S    stop starting lookups after S seconds (default 10)\n",
            prog);
    return 2;
}

static bool parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (!*s || *end || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

int main(int argc, char **argv)
{
    app a = {.cache = "event-loop", .requests = 10000, .per_tick = 50, .keys = 100,
             .seconds = 10};
    static const struct option opts[] = {{"requests", required_argument, NULL, 'n'},
                                         {"per-tick", required_argument, NULL, 'p'},
                                         {"keys", required_argument, NULL, 'k'},
                                         {"seconds", required_argument, NULL, 's'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    for (int ch; (ch = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
        bool ok = ch == 'n'   ? parse_long(optarg, 1, 100000000, &a.requests)
                  : ch == 'p' ? parse_long(optarg, 1, 100000, &a.per_tick)
                  : ch == 'k' ? parse_long(optarg, 1, 10000000, &a.keys)
                  : ch == 's' ? parse_long(optarg, 1, 86400, &a.seconds)
                              : false;
        if (!ok)
            return usage(argv[0]);
    }
    if (optind != argc)
        return usage(argv[0]);

    momento_local *local = NULL;
    momento_credentials *creds = NULL;
    int rc;
    if (getenv("MOMENTO_API_KEY")) {
        rc = momento_credentials_from_env(&creds);
    } else {
        momento_local_options *o = NULL;
        rc = momento_local_options_new(&o);
        if (rc == MOMENTO_OK)
            rc = momento_local_options_add_cache(o, a.cache);
        if (rc == MOMENTO_OK)
            rc = momento_local_start(&local, o);
        momento_local_options_free(o);
        if (rc == MOMENTO_OK)
            rc = momento_credentials_local(&creds, momento_local_endpoint(local));
    }
    if (rc != MOMENTO_OK) {
        fprintf(stderr, "event-loop: no target: %s %s\n", momento_strerror(rc),
                momento_refusal_reason());
        momento_local_stop(local);
        return 1;
    }

    momento_config *cfg = NULL;
    rc = momento_config_new(&cfg);
    if (rc == MOMENTO_OK)
        rc = momento_config_set_dispatch(cfg, 1);
    if (rc == MOMENTO_OK)
        rc = momento_client_new(&a.client, cfg, creds);
    momento_config_free(cfg);
    momento_credentials_free(creds);
    if (rc != MOMENTO_OK) {
        fprintf(stderr, "event-loop: cannot create the client: %s\n", momento_strerror(rc));
        momento_local_stop(local);
        return 1;
    }
    if (local == NULL) { /* Momento itself: the cache may not exist yet */
        momento_result *r = NULL;
        rc = momento_create_cache_sync(a.client, a.cache, NULL, &r);
        momento_result_free(r);
        if (rc != MOMENTO_OK) {
            fprintf(stderr, "event-loop: create cache: %s\n", momento_strerror(rc));
            momento_client_free(a.client);
            return 1;
        }
    }

    uv_loop_t *loop = uv_default_loop();
    rc = momento_uv_attach(&a.adapter, loop, a.client);
    if (rc != MOMENTO_OK) {
        fprintf(stderr, "event-loop: cannot attach to the loop: %s\n", momento_strerror(rc));
        momento_client_free(a.client);
        momento_local_stop(local);
        return 1;
    }
    uv_timer_init(loop, &a.tick);
    a.tick.data = &a;
    a.started_ms = uv_now(loop);
    uv_timer_start(&a.tick, on_tick, 0, 1);
    uv_run(loop, UV_RUN_DEFAULT); /* returns once the client is detached */
    uint64_t elapsed = uv_now(loop) - a.started_ms;
    uv_loop_close(loop);
    momento_local_stop(local);

    printf("lookups %ld answered %ld: %ld hits, %ld misses (%ld stored), %ld errors, "
           "%.0f lookups/s, all on the loop's thread\n",
           a.sent, a.answered, a.hits, a.misses, a.stores, a.errors,
           elapsed ? (double)a.answered * 1000.0 / (double)elapsed : 0.0);
    return a.errors == 0 && a.answered == a.sent ? 0 : 1;
}
