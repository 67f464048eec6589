/* Deadline lateness (issue 14): how long after its own deadline a request
 * that times out is called back. Requests get deadlines spread uniformly
 * over [--min-ms, --max-ms] while momento-local holds every Get for
 * --delay-ms, longer than any deadline, so every request must time out;
 * for each, lateness = callback time - (submit time + its deadline).
 *
 *   lateness [--endpoint HOST:PORT] [--mode plain|coalesce|both]
 *            [--requests 2000] [--rate 500] [--min-ms 20] [--max-ms 2000]
 *            [--delay-ms 3000] [--keys 4] [--seed 1]
 *
 * plain: momento_get. coalesce: momento_coalescing_get on --keys hot keys,
 * so waiters with different deadlines share RPCs, and an RPC ends at the
 * deadline of the waiter that issued it while the others still have time.
 * Requests are submitted open loop at --rate per second from this thread;
 * the callbacks run on the client's completion thread.
 *
 * Without --endpoint the server runs in-process on a free loopback port;
 * with it (bench/lateness.sh) it must be loopback. The delay is asked for
 * with momento-local's fault headers (delay-ms, delay-rpcs get), which the
 * public API cannot send: this links the static library for the test-only
 * momento__client_add_header(), as the fault tests do.
 *
 * Prints one line of key=value per mode (times in ms, over the requests that
 * timed out; negative lateness = called back early), and a "note:" line with the earliest early callback's
 * error and message (which tells whether the client or the server gave up). Exits 1 if a request was not called back within
 * --max-ms + 10 s of the last submission, or did not time out. Bounded:
 * --requests per mode, then that wait. */
#include "engine/client.h"
#include "momento/coalescer.h"
#include "momento/local.h"
#include "momento/momento.h"

#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CACHE "bench"

typedef struct run run;

typedef struct request {
    run *rn;
    int64_t submit_ns;   /* read just before the call: the deadline's origin */
    int64_t deadline_ns; /* its own timeout */
    int64_t done_ns;     /* when its callback ran; 0 = not yet */
    int err;
    char why[96];        /* an early callback's message, to tell who gave up */
} request;

struct run {
    request *reqs;
    size_t n;
    atomic_size_t done;
    pthread_mutex_t lock;
    pthread_cond_t all_done;
};

typedef struct settings {
    const char *endpoint;
    size_t requests;
    double rate;
    uint32_t min_ms, max_ms, delay_ms;
    int keys;
    uint64_t seed;
} settings;

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void sleep_until(int64_t t_ns)
{
    struct timespec ts = {(time_t)(t_ns / 1000000000), (long)(t_ns % 1000000000)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
    }
}

static uint64_t next_rand(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void on_done(const momento_result *r, void *ud)
{
    /* The clock first: whatever this callback does after it is not lateness. */
    int64_t t = now_ns();
    request *q = ud;
    run *rn = q->rn;
    q->done_ns = t;
    q->err = momento_result_error(r);
    if (q->err == MOMENTO_ERR_TIMEOUT && t < q->submit_ns + q->deadline_ns) {
        const char *m = momento_result_message(r);
        snprintf(q->why, sizeof(q->why), "%s", m ? m : "");
    }
    if (atomic_fetch_add(&rn->done, 1) + 1 == rn->n) {
        pthread_mutex_lock(&rn->lock);
        pthread_cond_signal(&rn->all_done);
        pthread_mutex_unlock(&rn->lock);
    }
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Nearest rank: the smallest value with at least q of the sample at or below it. */
static int64_t quantile(const int64_t *sorted, size_t n, double q)
{
    size_t rank = (size_t)(q * (double)n + 0.999999);
    if (rank < 1)
        rank = 1;
    if (rank > n)
        rank = n;
    return sorted[rank - 1];
}

static int run_mode(const settings *st, const momento_credentials *creds, momento_local *local,
                    bool coalesce)
{
    const char *mode = coalesce ? "coalesce" : "plain";
    momento_config *cfg;
    momento_client *c;
    momento_coalescer *co = NULL;
    momento_config_new(&cfg);
    /* Only the cache creation uses the client's deadline; each Get has its own. */
    momento_config_set_timeout_ms(cfg, 5000);
    int rc = momento_client_new(&c, cfg, creds);
    momento_config_free(cfg);
    if (rc != MOMENTO_OK) {
        fprintf(stderr, "lateness: client: %s\n", momento_strerror(rc));
        return 1;
    }
    char delay[16];
    snprintf(delay, sizeof(delay), "%u", st->delay_ms);
    /* Every Get is held by the server past any deadline; other RPCs are not. */
    if (momento__client_add_header(c, "delay-ms", delay) != MOMENTO_OK ||
        momento__client_add_header(c, "delay-rpcs", "get") != MOMENTO_OK) {
        fprintf(stderr, "lateness: cannot add the fault headers\n");
        momento_client_free(c);
        return 1;
    }
    momento_result *cr = NULL;
    rc = momento_create_cache_sync(c, CACHE, NULL, &cr);
    momento_result_free(cr);
    if (rc != MOMENTO_OK && rc != MOMENTO_ERR_ALREADY_EXISTS) {
        fprintf(stderr, "lateness: create cache: %s\n", momento_strerror(rc));
        momento_client_free(c);
        return 1;
    }
    if (coalesce && momento_coalescer_new(&co, c) != MOMENTO_OK) {
        momento_client_free(c);
        return 1;
    }
    if (local)
        momento_local_reset_stats(local);

    run rn;
    memset(&rn, 0, sizeof(rn));
    rn.n = st->requests;
    rn.reqs = calloc(rn.n, sizeof(request));
    pthread_mutex_init(&rn.lock, NULL);
    pthread_cond_init(&rn.all_done, NULL);

    uint64_t rng = st->seed * 0x9E3779B97F4A7C15ull + 1;
    uint64_t span = (uint64_t)(st->max_ms - st->min_ms) + 1;
    size_t refused = 0;
    int64_t t0 = now_ns(), last_submit = t0;
    for (size_t i = 0; i < rn.n; i++) {
        sleep_until(t0 + (int64_t)((double)i * 1e9 / st->rate));
        request *q = &rn.reqs[i];
        q->rn = &rn;
        momento_request_options ro = MOMENTO_REQUEST_OPTIONS_INIT;
        ro.timeout_ms = st->min_ms + (uint32_t)(next_rand(&rng) % span);
        q->deadline_ns = (int64_t)ro.timeout_ms * 1000000;
        char key[32];
        int key_len = snprintf(key, sizeof(key), "hot-%d", (int)(i % (size_t)st->keys));
        /* Read before the call: the library's deadline starts no earlier. */
        q->submit_ns = last_submit = now_ns();
        int r = coalesce ? momento_coalescing_get(co, CACHE, key, (size_t)key_len, &ro,
                                                  on_done, q)
                         : momento_get(c, CACHE, key, (size_t)key_len, &ro, on_done, q);
        if (r != MOMENTO_OK) {
            /* No callback will come: count it as done so the wait ends. */
            q->err = r;
            q->done_ns = -1;
            refused++;
            atomic_fetch_add(&rn.done, 1);
        }
    }
    /* Bounded wait: every callback is due by the last deadline. */
    int64_t give_up = last_submit + (int64_t)st->max_ms * 1000000 + 10000000000LL;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    int64_t wait_ns = give_up - now_ns();
    until.tv_sec += (time_t)(wait_ns / 1000000000);
    until.tv_nsec += (long)(wait_ns % 1000000000);
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&rn.lock);
    while (atomic_load(&rn.done) < rn.n) {
        if (pthread_cond_timedwait(&rn.all_done, &rn.lock, &until) == ETIMEDOUT)
            break;
    }
    pthread_mutex_unlock(&rn.lock);
    double wall_s = (double)(now_ns() - t0) / 1e9;

    momento_coalescer_stats k;
    memset(&k, 0, sizeof(k));
    if (co)
        momento_coalescer_stats_get(co, &k, sizeof(k));
    uint64_t server_gets = local ? momento_local_rpc_count(local, "Get", -1) : 0;
    /* Missing callbacks are counted first; the client's free then cancels
     * what is left and waits for those callbacks (they still count, as the
     * late outliers they are), so none touches rn after it returns. */
    size_t missing = rn.n - atomic_load(&rn.done);
    momento_coalescer_free(co);
    momento_client_free(c);

    int64_t *late = malloc(rn.n * sizeof(int64_t));
    size_t m = 0, timed_out = 0, other = 0, early = 0;
    const request *earliest = NULL;
    for (size_t i = 0; i < rn.n; i++) {
        const request *q = &rn.reqs[i];
        if (q->done_ns <= 0)
            continue;
        if (q->err != MOMENTO_ERR_TIMEOUT) {
            other++; /* answered, or another error: no deadline to be late for */
            continue;
        }
        timed_out++;
        late[m] = q->done_ns - (q->submit_ns + q->deadline_ns);
        if (late[m] < 0) {
            early++;
            if (!earliest || late[m] < earliest->done_ns - (earliest->submit_ns + earliest->deadline_ns))
                earliest = q;
        }
        m++;
    }
    qsort(late, m, sizeof(int64_t), cmp_i64);
    printf("mode=%s requests=%zu timed_out=%zu other=%zu refused=%zu missing=%zu early=%zu",
           mode, rn.n, timed_out, other, refused, missing, early);
    if (m)
        printf(" min_ms=%.3f p50_ms=%.3f p90_ms=%.3f p99_ms=%.3f max_ms=%.3f",
               (double)late[0] / 1e6, (double)quantile(late, m, 0.5) / 1e6,
               (double)quantile(late, m, 0.9) / 1e6, (double)quantile(late, m, 0.99) / 1e6,
               (double)late[m - 1] / 1e6);
    if (coalesce)
        printf(" coalesced=%llu peak_waiters=%llu", (unsigned long long)k.get_coalesced,
               (unsigned long long)k.peak_waiters);
    if (local)
        printf(" server_gets=%llu", (unsigned long long)server_gets);
    printf(" wall_s=%.2f\n", wall_s);
    if (earliest)
        printf("note: %s: the earliest callback came %.3f ms before its deadline of %lld ms: %s: "
               "\"%s\"\n",
               mode, (double)(earliest->submit_ns + earliest->deadline_ns - earliest->done_ns) / 1e6,
               (long long)(earliest->deadline_ns / 1000000), momento_error_name(earliest->err),
               earliest->why);
    fflush(stdout);
    if (other)
        fprintf(stderr, "lateness: %zu requests did not time out: is the server delaying Gets?\n",
                other);

    free(late);
    free(rn.reqs);
    pthread_mutex_destroy(&rn.lock);
    pthread_cond_destroy(&rn.all_done);
    return missing || other || refused ? 1 : 0;
}

static bool parse_u(const char *s, unsigned long lo, unsigned long hi, unsigned long *out)
{
    char *end;
    if (!s || !*s || *s == '-')
        return false;
    unsigned long v = strtoul(s, &end, 10);
    if (*end || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

static int usage(void)
{
    fprintf(stderr, "usage: lateness [--endpoint HOST:PORT] [--mode plain|coalesce|both] "
                    "[--requests 1..1000000] [--rate 1..100000] [--min-ms N] [--max-ms N<=600000] "
                    "[--delay-ms N] [--keys N] [--seed N]\n");
    return 2;
}

int main(int argc, char **argv)
{
    settings st = {NULL, 2000, 500, 20, 2000, 3000, 4, 1};
    const char *mode = "both";
    static const struct option opts[] = {
        {"endpoint", required_argument, NULL, 'e'}, {"mode", required_argument, NULL, 'm'},
        {"requests", required_argument, NULL, 'n'}, {"rate", required_argument, NULL, 'r'},
        {"min-ms", required_argument, NULL, 'a'},   {"max-ms", required_argument, NULL, 'b'},
        {"delay-ms", required_argument, NULL, 'd'}, {"keys", required_argument, NULL, 'k'},
        {"seed", required_argument, NULL, 's'},     {NULL, 0, NULL, 0},
    };
    int ch;
    unsigned long v;
    while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (ch) {
        case 'e': st.endpoint = optarg; break;
        case 'm': mode = optarg; break;
        case 'n': if (!parse_u(optarg, 1, 1000000, &v)) return usage(); st.requests = v; break;
        case 'r': if (!parse_u(optarg, 1, 100000, &v)) return usage(); st.rate = (double)v; break;
        case 'a': if (!parse_u(optarg, 1, 600000, &v)) return usage(); st.min_ms = (uint32_t)v; break;
        case 'b': if (!parse_u(optarg, 1, 600000, &v)) return usage(); st.max_ms = (uint32_t)v; break;
        case 'd': if (!parse_u(optarg, 1, 999999999, &v)) return usage(); st.delay_ms = (uint32_t)v; break;
        case 'k': if (!parse_u(optarg, 1, 1000000, &v)) return usage(); st.keys = (int)v; break;
        case 's': if (!parse_u(optarg, 0, ~0ul, &v)) return usage(); st.seed = v; break;
        default: return usage();
        }
    }
    bool plain = strcmp(mode, "plain") == 0 || strcmp(mode, "both") == 0;
    bool coal = strcmp(mode, "coalesce") == 0 || strcmp(mode, "both") == 0;
    if (optind < argc || (!plain && !coal) || st.min_ms > st.max_ms)
        return usage();
    if (st.delay_ms <= st.max_ms)
        fprintf(stderr, "lateness: warning: --delay-ms %u does not exceed --max-ms %u: some "
                        "requests will be answered instead of timing out\n",
                st.delay_ms, st.max_ms);
    if (st.endpoint && strncmp(st.endpoint, "127.", 4) != 0 &&
        strncmp(st.endpoint, "localhost:", 10) != 0 && strncmp(st.endpoint, "[::1]:", 6) != 0) {
        fprintf(stderr, "lateness: loopback endpoints only\n");
        return 2;
    }

    momento_local *local = NULL;
    momento_local_options *lo = NULL;
    if (!st.endpoint) {
        if (momento_local_options_new(&lo) != MOMENTO_OK ||
            momento_local_options_add_cache(lo, CACHE) != MOMENTO_OK ||
            momento_local_start(&local, lo) != MOMENTO_OK) {
            fprintf(stderr, "lateness: cannot start momento-local\n");
            return 1;
        }
        momento_local_options_free(lo);
    }
    momento_credentials *creds;
    if (momento_credentials_local(&creds, st.endpoint ? st.endpoint : momento_local_endpoint(local)) != MOMENTO_OK) {
        fprintf(stderr, "lateness: %s\n", momento_refusal_reason());
        momento_local_stop(local);
        return 2;
    }
    printf("lateness: %zu requests per mode at %.0f/s, deadlines %u..%u ms, server delay %u ms, "
           "%d hot keys, server %s\n",
           st.requests, st.rate, st.min_ms, st.max_ms, st.delay_ms, st.keys,
           st.endpoint ? st.endpoint : "in-process");
    int rc = 0;
    if (plain)
        rc |= run_mode(&st, creds, local, false);
    if (coal)
        rc |= run_mode(&st, creds, local, true);
    momento_credentials_free(creds);
    momento_local_stop(local);
    return rc;
}
