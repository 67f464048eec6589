/* dispatch_bench: what dispatch mode costs per request (bench/dispatch.sh).
 *
 * Keeps --inflight gets in flight until --ops have completed (each
 * callback submits the next), against --endpoint (plaintext), in one of two
 * modes:
 *   callback  the default: callbacks on the client's completion thread;
 *             the main thread waits for the count.
 *   dispatch  momento_config_set_dispatch(): the main thread polls the
 *             client's eventfd and runs momento_client_dispatch(), as an
 *             event loop would.
 * Prints one RESULT line: ops, seconds, process CPU seconds and CPU
 * microseconds per request. Bounded by --ops and --seconds. Every get must
 * succeed (exit 1 otherwise). */
#include "momento/momento.h"

#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static momento_client *client;
static long ops = 100000, inflight = 100, seconds = 60;
static atomic_long submitted, completed, failed;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t all_done = PTHREAD_COND_INITIALIZER;
static volatile bool out_of_time;

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static double cpu_s(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)u.ru_utime.tv_sec + (double)u.ru_utime.tv_usec / 1e6 +
           (double)u.ru_stime.tv_sec + (double)u.ru_stime.tv_usec / 1e6;
}

static void on_get(const momento_result *r, void *ud);

static void submit(void)
{
    if (out_of_time || atomic_fetch_add(&submitted, 1) >= ops)
        return;
    if (momento_get(client, "bench", "k", 1, NULL, on_get, NULL) != MOMENTO_OK) {
        atomic_fetch_add(&failed, 1);
        atomic_fetch_add(&completed, 1);
    }
}

static void on_get(const momento_result *r, void *ud)
{
    (void)ud;
    if (momento_result_error(r) != MOMENTO_OK)
        atomic_fetch_add(&failed, 1);
    long done = atomic_fetch_add(&completed, 1) + 1;
    submit();
    if (done >= ops || (out_of_time && done >= atomic_load(&submitted))) {
        pthread_mutex_lock(&lock);
        pthread_cond_signal(&all_done);
        pthread_mutex_unlock(&lock);
    }
}

static bool finished(void)
{
    long done = atomic_load(&completed);
    return done >= ops || (out_of_time && done >= (atomic_load(&submitted) < ops
                                                       ? atomic_load(&submitted)
                                                       : ops));
}

int main(int argc, char **argv)
{
    const char *endpoint = NULL, *mode = "callback";
    static const struct option opts[] = {{"endpoint", required_argument, NULL, 'e'},
                                         {"mode", required_argument, NULL, 'm'},
                                         {"ops", required_argument, NULL, 'n'},
                                         {"inflight", required_argument, NULL, 'i'},
                                         {"seconds", required_argument, NULL, 's'},
                                         {NULL, 0, NULL, 0}};
    for (int ch; (ch = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
        if (ch == 'e')
            endpoint = optarg;
        else if (ch == 'm')
            mode = optarg;
        else if (ch == 'n')
            ops = atol(optarg);
        else if (ch == 'i')
            inflight = atol(optarg);
        else if (ch == 's')
            seconds = atol(optarg);
        else
            return 2;
    }
    bool dispatch = strcmp(mode, "dispatch") == 0;
    if (!endpoint || ops < 1 || inflight < 1 || seconds < 1 ||
        (!dispatch && strcmp(mode, "callback") != 0)) {
        fprintf(stderr, "usage: %s --endpoint HOST:PORT [--mode callback|dispatch] [--ops N] "
                        "[--inflight K] [--seconds S]\n", argv[0]);
        return 2;
    }
    momento_credentials *creds = NULL;
    momento_config *cfg = NULL;
    if (momento_credentials_local(&creds, endpoint) != MOMENTO_OK ||
        momento_config_new(&cfg) != MOMENTO_OK ||
        momento_config_set_dispatch(cfg, dispatch) != MOMENTO_OK ||
        momento_client_new(&client, cfg, creds) != MOMENTO_OK) {
        fprintf(stderr, "dispatch_bench: cannot create a client: %s\n", momento_refusal_reason());
        return 1;
    }
    momento_config_free(cfg);
    momento_credentials_free(creds);
    momento_set_sync(client, "bench", "k", 1, "value", 5, 0, NULL, NULL);

    double t0 = now_s(), c0 = cpu_s(), end = t0 + (double)seconds;
    for (long i = 0; i < inflight; i++)
        submit();
    if (dispatch) {
        struct pollfd p = {.fd = momento_client_dispatch_fd(client), .events = POLLIN};
        while (!finished()) {
            if (poll(&p, 1, 100) == 1)
                momento_client_dispatch(client, 0);
            if (now_s() > end)
                out_of_time = true;
        }
    } else {
        pthread_mutex_lock(&lock);
        while (!finished()) {
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_nsec += 100 * 1000000;
            if (until.tv_nsec >= 1000000000) {
                until.tv_sec++;
                until.tv_nsec -= 1000000000;
            }
            pthread_cond_timedwait(&all_done, &lock, &until);
            if (now_s() > end)
                out_of_time = true;
        }
        pthread_mutex_unlock(&lock);
    }
    double elapsed = now_s() - t0, cpu = cpu_s() - c0;
    long done = atomic_load(&completed);
    momento_client_free(client);
    printf("RESULT dispatch_bench mode=%s ops=%ld seconds=%.3f cpu_seconds=%.3f "
           "cpu_us_per_op=%.2f ops_per_s=%.0f failed=%ld\n",
           mode, done, elapsed, cpu, done ? cpu * 1e6 / (double)done : 0.0,
           elapsed > 0 ? (double)done / elapsed : 0.0, atomic_load(&failed));
    return atomic_load(&failed) == 0 && done >= ops ? 0 : 1;
}
