/* The load engine shared by the examples.
 *
 * Each --threads group owns a client (and a coalescer, when coalescing), its
 * share of the workers, a timer heap of workers waiting for their next
 * request, and its statistics. A worker sets a key, then gets it, then moves
 * to the next key, as in Momento's Node.js load-gen; like it, every request
 * is paced: the next one starts concurrency*1000/rps ms after this one did.
 * Completions run on the client's completion thread and start the next
 * request themselves when it is due at once; otherwise the group's own
 * thread starts it when its time comes. */
#include "loadgen.h"

#include "heap.h"

#include <getopt.h>
#include <malloc.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------- process */

void lg_tune_process(void)
{
    /* glibc gives every thread that allocates its own arena, and each keeps
     * the memory freed into it. gRPC runs several threads of its own, so at
     * 1000 requests in flight the arenas held peak RSS at 34-40 MB; with one
     * arena it is 27-28 MB, with no measurable loss of throughput
     * (docs/performance.md). This is an application's choice, so the library
     * does not make it; a user's MALLOC_ARENA_MAX wins. */
    if (!getenv("MALLOC_ARENA_MAX"))
        mallopt(M_ARENA_MAX, 1);
}

/* ------------------------------------------------------------ options */

static void usage(FILE *f, const char *prog, bool coalescing)
{
    fprintf(f,
            "Usage: %s [OPTION]...\n"
            "%s\n\n"
            EX_TARGET_HELP "\n"
            "Load:\n"
            "  --cache NAME           cache to use, created if missing (default %s)\n"
            "  --concurrency N        workers, each one request in flight (default 10)\n"
            "  --rps N                max requests per second, 0 = unlimited (default 100)\n"
            "  --duration S           seconds to run%s (default 60)\n"
            "  --payload-bytes N      value size (default 100)\n"
            "  --timeout-ms A[:B]     each request's own deadline in ms, counted from its\n"
            "                         submission; A:B draws one per request uniformly from\n"
            "                         A to B, N means N:N (default 15000)\n"
            "  --keys N               key space; 0 = a fresh key per set (default %d)\n"
            "  --distribution D       uniform or zipf key choice (default uniform)\n"
            "  --open-loop            start requests on a fixed schedule at --rps and count\n"
            "                         latency from the scheduled start (needs --rps > 0)\n"
            "  --threads N            client threads, each with its own client (default 1)\n"
            "  --batch [N[:L[:M[:B[:W]]]]]  adaptive batching (default off): with N RPCs in\n"
            "                         flight, new gets and sets queue and leave as GetBatch /\n"
            "                         SetBatch RPCs when one completes (or after L us, and at\n"
            "                         the latest W us), at most M keys and B bytes each;\n"
            "                         W 0 = no bound; --batch alone is %u:0:%u:%u:%u\n"
            "  --io-callbacks         with --transport protosocket: callbacks (and the next\n"
            "                         request) on protosocket's I/O thread, not the client's\n"
            "                         completion thread: one thread wake-up less per request\n"
            "  --dispatch             dispatch mode: each thread runs its client's callbacks\n"
            "                         (and the next request) in its own loop; with\n"
            "                         --transport protosocket that loop also reads and writes\n"
            "                         the connections (no I/O thread)\n"
            "%s"
            "  --get-ratio R          share of requests that are gets, 0.5 to 0.999 (default\n"
            "                         0.5: set a key, get it, next key); above 0.5 a worker\n"
            "                         follows each set and its get with gets of keys chosen\n"
            "                         as --keys and --distribution choose them (with --keys\n"
            "                         0: the key just set) until R of its requests are gets;\n"
            "                         0.9 is one set, then nine gets\n\n"
            "Output:\n"
            "  --stats-interval S     print cumulative stats every S seconds (default 5)\n"
            "  --json PATH            write the results as JSON, latency histograms included\n"
            "  --plot PATH.svg        latency-by-percentile chart (ms)%s\n"
            "  --plot-log             draw the chart's latency axis on a log scale\n"
            "%s"
            "  --quiet                print only the final summary\n"
            "  --help                 this text\n\n"
            "%s"
            "%s"
            "Each worker sets a key, gets it, and moves on to the next key (more gets\n"
            "follow with --get-ratio above 0.5). Without --open-loop a worker waits\n"
            "concurrency*1000/rps ms minus a request's latency before its next request,\n"
            "like Momento's Node.js example.\n\n"
            "Every value set carries its key, so each get's value is checked; the report\n"
            "counts wrong results (a bug; expect 0) and misses, and the RPCs sent.\n\n"
            "Timeouts are counted, and so are EARLY ones: a timeout reported before the\n"
            "request's own deadline had elapsed since its submission (a bug; expect 0).\n"
            "Example, deadlines spread over 50 ms to 2 s, and an overload of the local\n"
            "server under which short deadlines expire (momento-local's delay-ms header\n"
            "would do it too, but a request with headers of its own is never coalesced\n"
            "or batched, which is what these tools measure):\n"
            "  %s --timeout-ms 50:2000\n"
            "  %s --rps 0 --concurrency 1000 --timeout-ms 5:100\n",
            prog,
            coalescing ? "Runs the same load three times, each on a fresh connection, and compares\n"
                         "them: without request coalescing, with it, and with it and a near cache."
                       : "Generates set-then-get load against Momento or a compatible server.",
            coalescing ? "request-coalescing" : "load-gen", coalescing ? " per phase" : "",
            coalescing ? 10 : 0, MOMENTO_BATCH_DEFAULT_MIN_IN_FLIGHT, MOMENTO_BATCH_DEFAULT_MAX_KEYS,
            MOMENTO_BATCH_DEFAULT_MAX_BYTES, MOMENTO_BATCH_DEFAULT_MAX_WAIT_US,
            coalescing
                ? "  --near-cache-bytes N   phase 3's near cache: N bytes (4096 to 2147483647;\n"
                  "                         default 16777216); gets of keys read or written\n"
                  "  --near-cache-staleness-ms M  less than M ms ago (1 to 3600000; default 100)\n"
                  "                         are answered in the process\n"
                : "  --near-cache-bytes N   a near cache of N bytes (4096 to 2147483647; default 0,\n"
                  "                         off): gets of keys read or written less than\n"
                  "  --near-cache-staleness-ms M  M ms ago (1 to 3600000; default 1000) are\n"
                  "                         answered in the process\n",
            coalescing ? ", by phase" : ", get and set",
            coalescing ? ""
                       : "  --samples PATH         write every latency recorded, one per line\n"
                         "                         (\"set 412\": the operation and microseconds)\n",
            coalescing ? ""
                       : "Merging runs (load-gen --merge FILE... [--json PATH] [--plot PATH.svg]):\n"
                         "  --merge                read the --json files of runs made at the same\n"
                         "                         time (processes, machines) and print one report:\n"
                         "                         percentiles of all their requests (exact: the\n"
                         "                         histograms are added), errors and requests summed,\n"
                         "                         throughput over the span the runs covered\n\n",
            coalescing ? "Phases 1 and 2 have no near cache; phase 3 is phase 2's load on a client\n"
                         "with one (docs/near-cache.md): a get of a key read or written less than the\n"
                         "staleness bound ago is answered in the process, with no RPC.\n\n"
                       : "",
            prog, prog);
}

/* "A:B" with lo <= A <= B <= hi, or "N" for N:N. */
static bool parse_range(const char *s, long lo, long hi, int *a, int *b)
{
    char *end;
    if (!s || !*s)
        return false;
    long x = strtol(s, &end, 10), y = x;
    if (*end == ':') {
        const char *t = end + 1;
        if (!*t)
            return false;
        y = strtol(t, &end, 10);
    }
    if (*end || x < lo || y > hi || x > y)
        return false;
    *a = (int)x;
    *b = (int)y;
    return true;
}

static bool parse_secs(const char *s, double lo, double hi, double *out)
{
    char *end;
    if (!s || !*s)
        return false;
    double v = strtod(s, &end);
    if (*end || !(v >= lo && v <= hi))
        return false;
    *out = v;
    return true;
}

/* --batch's "N[:L[:M[:B[:W]]]]": the fields given replace the defaults
 * already in `o`. Ranges as momento_config_set_batching() and
 * momento_config_set_batching_max_wait() take them, except that N = 0
 * (batching off) is allowed. */
static bool parse_batch(const char *s, lg_options *o)
{
    static const unsigned long lo[5] = {0, 0, 2, 1024, 0};
    static const unsigned long hi[5] = {100000, MOMENTO_MAX_BATCH_LINGER_US, 10000,
                                        MOMENTO_MAX_BATCH_BYTES, MOMENTO_MAX_BATCH_LINGER_US};
    uint32_t *field[5] = {&o->batch_min_in_flight, &o->batch_linger_us, &o->batch_max_keys,
                          &o->batch_max_bytes, &o->batch_max_wait_us};
    for (int i = 0; i < 5; i++) {
        char *end;
        if (*s < '0' || *s > '9')
            return false;
        unsigned long v = strtoul(s, &end, 10);
        if (v < lo[i] || v > hi[i] || (*end && *end != ':'))
            return false;
        *field[i] = (uint32_t)v;
        if (!*end)
            return true;
        s = end + 1;
    }
    return false; /* a sixth field */
}

int lg_parse_options(int argc, char **argv, bool coalescing, lg_options *o)
{
    static const struct option longopts[] = {
        EX_TARGET_LONGOPTS,
        {"cache", required_argument, NULL, 'C'},         {"concurrency", required_argument, NULL, 'c'},
        {"rps", required_argument, NULL, 'r'},           {"duration", required_argument, NULL, 'd'},
        {"payload-bytes", required_argument, NULL, 'p'}, {"timeout-ms", required_argument, NULL, 't'},
        {"stats-interval", required_argument, NULL, 's'}, {"keys", required_argument, NULL, 'k'},
        {"distribution", required_argument, NULL, 'D'},  {"open-loop", no_argument, NULL, 'o'},
        {"threads", required_argument, NULL, 'T'},       {"json", required_argument, NULL, 'j'},
        {"plot", required_argument, NULL, 'P'},          {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},                {"batch", optional_argument, NULL, 'B'},
        {"plot-log", no_argument, NULL, 'L'},            {"samples", required_argument, NULL, 'S'},
        {"merge", no_argument, NULL, 'M'},               {"io-callbacks", no_argument, NULL, 'I'},
        {"near-cache-bytes", required_argument, NULL, 'N'},
        {"near-cache-staleness-ms", required_argument, NULL, 'W'},
        {"get-ratio", required_argument, NULL, 'G'},
        {"dispatch", no_argument, NULL, 'X'},
        {NULL, 0, NULL, 0},
    };
    const char *prog = coalescing ? "request-coalescing" : "load-gen";
    memset(o, 0, sizeof(*o));
    o->prog = prog;
    o->cache = coalescing ? "request-coalescing" : "load-gen";
    o->concurrency = 10;
    o->rps = 100;
    o->duration_s = 60;
    o->payload_bytes = 100;
    o->timeout_min_ms = o->timeout_ms = 15000;
    o->stats_interval_s = 5;
    o->keys = coalescing ? 10 : 0;
    o->threads = 1;
    /* request-coalescing's phase 3 always has a near cache (the docs'
     * example size, a bound short enough for most reads); load-gen's is
     * off unless asked for. */
    o->near_bytes = coalescing ? 16 << 20 : 0;
    o->near_staleness_ms = coalescing ? 100 : 1000;
    o->get_ratio = 0.5;
    o->batch_min_in_flight = MOMENTO_BATCH_DEFAULT_MIN_IN_FLIGHT;
    o->batch_max_keys = MOMENTO_BATCH_DEFAULT_MAX_KEYS;
    o->batch_max_bytes = MOMENTO_BATCH_DEFAULT_MAX_BYTES;
    o->batch_max_wait_us = MOMENTO_BATCH_DEFAULT_MAX_WAIT_US;
    optind = 1;
    int ch;
    bool merge = false;
    char load_option[40] = ""; /* one that shapes load, which --merge has none of */
    int idx = -1;
    while ((ch = getopt_long(argc, argv, "", longopts, &idx)) != -1) {
        /* Every long option but --json, --plot, --plot-log, --quiet, --help
         * and --merge itself shapes the load or picks the target. */
        if (idx >= 0 && (ch > 255 || !strchr("jPLqhM", ch)))
            snprintf(load_option, sizeof(load_option), "--%s", longopts[idx].name);
        idx = -1;
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
        case 'c':
            if (!ex_parse_int(optarg, 1, 100000, &o->concurrency))
                return ex_bad_option(prog, "--concurrency", optarg, "must be 1 to 100000");
            break;
        case 'r':
            if (!ex_parse_int(optarg, 0, 10000000, &o->rps))
                return ex_bad_option(prog, "--rps", optarg, "must be 0 (unlimited) to 10000000");
            break;
        case 'd':
            if (!parse_secs(optarg, 0.1, 86400, &o->duration_s))
                return ex_bad_option(prog, "--duration", optarg, "must be 0.1 to 86400 seconds");
            break;
        case 'p':
            if (!ex_parse_int(optarg, 0, (long)MOMENTO_MAX_ITEM_BYTES - 64, &o->payload_bytes))
                return ex_bad_option(prog, "--payload-bytes", optarg,
                                     "must be 0 to 5 MiB less 64");
            break;
        case 't':
            if (!parse_range(optarg, 1, 3600000, &o->timeout_min_ms, &o->timeout_ms))
                return ex_bad_option(prog, "--timeout-ms", optarg,
                                     "must be N or A:B with 1 <= A <= B <= 3600000");
            break;
        case 's':
            if (!parse_secs(optarg, 0.1, 86400, &o->stats_interval_s))
                return ex_bad_option(prog, "--stats-interval", optarg,
                                     "must be 0.1 to 86400 seconds");
            break;
        case 'k':
            if (!ex_parse_int(optarg, 0, 100000000, &o->keys))
                return ex_bad_option(prog, "--keys", optarg, "must be 0 to 100000000");
            break;
        case 'D':
            if (strcmp(optarg, "uniform") == 0)
                o->zipf = false;
            else if (strcmp(optarg, "zipf") == 0)
                o->zipf = true;
            else
                return ex_bad_option(prog, "--distribution", optarg, "must be uniform or zipf");
            break;
        case 'o': o->open_loop = true; break;
        case 'T':
            if (!ex_parse_int(optarg, 1, 64, &o->threads))
                return ex_bad_option(prog, "--threads", optarg, "must be 1 to 64");
            break;
        case 'j': o->json_path = optarg; break;
        case 'P': o->plot_path = optarg; break;
        case 'L': o->plot_log = true; break;
        case 'S':
            if (coalescing)
                return ex_bad_option(prog, "option", "--samples", "only load-gen writes samples");
            o->samples_path = optarg;
            break;
        case 'M':
            if (coalescing)
                return ex_bad_option(prog, "option", "--merge", "only load-gen merges runs");
            merge = true;
            break;
        case 'q': o->quiet = true; break;
        case 'I': o->io_callbacks = true; break;
        case 'X': o->dispatch = true; break;
        case 'N':
            if (!ex_parse_int(optarg, 4096, 2147483647L, &o->near_bytes))
                return ex_bad_option(prog, "--near-cache-bytes", optarg,
                                     "must be 4096 to 2147483647");
            break;
        case 'W':
            if (!ex_parse_int(optarg, 1, 3600000, &o->near_staleness_ms))
                return ex_bad_option(prog, "--near-cache-staleness-ms", optarg,
                                     "must be 1 to 3600000");
            break;
        case 'G':
            if (!parse_secs(optarg, 0.5, 0.999, &o->get_ratio))
                return ex_bad_option(prog, "--get-ratio", optarg, "must be 0.5 to 0.999");
            break;
        case 'B': {
            /* The value may follow as "--batch=16:0:64" or as the next
             * argument when that starts with a digit ("--batch 16"). */
            const char *spec = optarg;
            if (!spec && optind < argc && argv[optind][0] >= '0' && argv[optind][0] <= '9')
                spec = argv[optind++];
            if (spec && !parse_batch(spec, o))
                return ex_bad_option(prog, "--batch", spec,
                                     "must be N[:L[:M[:B]]] with N 0 to 100000 (0 = off), L 0 "
                                     "to 100000 us, M 2 to 10000 keys, B 1024 to 4194304 bytes");
            o->batch = o->batch_min_in_flight > 0;
            break;
        }
        case 'h': usage(stdout, prog, coalescing); return 1;
        default: return 2;
        }
    }
    if (merge) {
        /* Only output options go with --merge: there is no load to shape. */
        if (*load_option)
            return ex_bad_option(prog, "option", load_option, "does not go with --merge");
        if (optind >= argc)
            return ex_bad_option(prog, "option", "--merge", "needs the --json files of runs");
        o->merge_files = argv + optind;
        o->n_merge = argc - optind;
        return 0;
    }
    if (optind < argc)
        return ex_bad_option(prog, "argument", argv[optind],
                             coalescing ? "no positional arguments are taken"
                                        : "files to merge follow --merge");
    if (o->plot_log && !o->plot_path)
        return ex_bad_option(prog, "option", "--plot-log", "goes with --plot");
    if (ex_check_target(prog, &o->target))
        return 2;
    if (o->open_loop && o->rps == 0)
        return ex_bad_option(prog, "option", "--open-loop", "needs a request rate (--rps > 0)");
    if (o->zipf && o->keys == 0)
        return ex_bad_option(prog, "option", "--distribution zipf",
                             "needs a key space (--keys > 0)");
    if (o->threads > o->concurrency)
        return ex_bad_option(prog, "option", "--threads", "must not exceed --concurrency");
    if (o->dispatch && o->io_callbacks)
        return ex_bad_option(prog, "option", "--io-callbacks",
                             "does not go with --dispatch (callbacks run on the dispatching thread)");
    return 0;
}

/* ------------------------------------------------------------- target */

int lg_target_open(lg_target *t, const lg_options *o)
{
    return ex_target_open(t, o->prog, &o->target);
}

void lg_target_close(lg_target *t)
{
    ex_target_close(t);
}

/* -------------------------------------------------------------- stats */

void lg_stats_init(lg_stats *s)
{
    s->requests = s->success = s->refused = 0;
    s->first_refusal = 0;
    memset(s->errors, 0, sizeof(s->errors));
    hist_init(&s->set);
    hist_init(&s->get);
    s->timed_out = s->timed_out_early = s->early_max_us = 0;
    hist_init(&s->late);
    s->get_hits = s->get_misses = s->wrong_results = 0;
}

void lg_stats_merge(lg_stats *dst, const lg_stats *src)
{
    dst->requests += src->requests;
    dst->success += src->success;
    dst->refused += src->refused;
    if (!dst->first_refusal)
        dst->first_refusal = src->first_refusal;
    for (int i = 0; i < LG_ERR_COUNT; i++)
        dst->errors[i] += src->errors[i];
    hist_merge(&dst->set, &src->set);
    hist_merge(&dst->get, &src->get);
    dst->timed_out += src->timed_out;
    dst->timed_out_early += src->timed_out_early;
    if (src->early_max_us > dst->early_max_us)
        dst->early_max_us = src->early_max_us;
    hist_merge(&dst->late, &src->late);
    dst->get_hits += src->get_hits;
    dst->get_misses += src->get_misses;
    dst->wrong_results += src->wrong_results;
}

static lg_error_kind classify(int err)
{
    switch (err) {
    case MOMENTO_ERR_SERVER_UNAVAILABLE: return LG_ERR_UNAVAILABLE;
    case MOMENTO_ERR_TIMEOUT: return LG_ERR_DEADLINE;
    case MOMENTO_ERR_LIMIT_EXCEEDED: return LG_ERR_RESOURCE_EXHAUSTED;
    case MOMENTO_ERR_INTERNAL_SERVER: return LG_ERR_RST_STREAM;
    case MOMENTO_ERR_CANCELLED: return LG_ERR_CANCELLED;
    default: return LG_ERR_OTHER;
    }
}

static const char *const error_names[LG_ERR_COUNT] = {
    "unavailable", "deadline_exceeded", "resource_exhausted", "rst_stream", "cancelled", "other",
};

/* ------------------------------------------------------------- engine */

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

typedef struct run_state run_state;
typedef struct group group;
#define LG_VALUE_BUFFERS 4

typedef struct worker {
    group *g;
    int id;
    int phase;           /* 0: the next/current request is the set, 1: the get */
    uint64_t n;          /* keys done */
    int64_t sched_ns;    /* when the current request was due (open loop: its latency origin) */
    int64_t start_ns;    /* when the current request was sent */
    int64_t deadline_ns; /* its own deadline, counted from start_ns */
    uint64_t rng;        /* key choice */
    uint64_t deadline_rng; /* deadline draws, apart so keys stay as without a spread */
    char key[64];
    size_t key_len;
    /* With --get-ratio above 0.5: the worker's sets and gets so far, and
     * whether the current get is one of the extra ones, whose key is
     * chosen afresh (next_phase). */
    uint64_t sets, gets;
    bool extra_get;
} worker;

struct group {
    run_state *run;
    momento_client *client;
    momento_coalescer *co;
    worker *workers;
    int n_workers;
    /* A set's value, written per request: the key, then 'x's. [0] for the
     * group's own thread; the others for the threads that call back and
     * start the next request there (callback_value): the client's
     * completion thread, with --io-callbacks also protosocket's I/O thread,
     * and rarely the group's thread (a submit that ends at once). The
     * library copies it at submit. */
    char *value[LG_VALUE_BUFFERS];
    int n_claimed;         /* of value[1..]: claimed by a calling-back thread */
    unsigned gen;          /* its run's, for callback_value's claims */
    pthread_mutex_t lock;  /* guards what follows */
    pthread_cond_t cond;
    /* Idle workers by sched_ns, with room reserved for all of them, so a
     * push never fails. */
    momento__heap heap;
    int active;            /* workers not yet retired */
    lg_stats stats;
    pthread_t thread;
};

/* This thread's value buffer for the requests its callbacks start, claimed
 * from its group (`gen` tells a claim of an earlier run's group that had
 * the same address). */
static _Thread_local struct {
    const group *g;
    unsigned gen;
    char *value;
} claimed;
static atomic_uint run_gens;

struct run_state {
    const lg_options *o;
    int64_t end_ns;
    int64_t interval_ns;   /* per worker between request starts; 0 = none */
    atomic_bool stop;
    double *zipf_cdf;
    FILE *samples;         /* --samples, or NULL */
    uint32_t key_tag;      /* this process's, in fresh keys (choose_key) */
    int64_t get_ratio_ppm; /* --get-ratio in millionths: 500000 is set-then-get */
};

/* Earlier schedule first: the group's thread starts the most overdue
 * worker next. */
static bool sched_before(const void *a, const void *b)
{
    return ((const worker *)a)->sched_ns < ((const worker *)b)->sched_ns;
}

static uint64_t next_rand(worker *w)
{
    w->rng ^= w->rng << 13;
    w->rng ^= w->rng >> 7;
    w->rng ^= w->rng << 17;
    return w->rng;
}

static void choose_key(worker *w)
{
    const lg_options *o = w->g->run->o;
    uint64_t k;
    if (o->keys == 0) {
        /* The process's tag keeps runs made at the same time against one
         * cache (load-gen --merge's use) off each other's keys. */
        w->key_len = (size_t)snprintf(w->key, sizeof(w->key), "lg-%08x-%d-%llu",
                                      w->g->run->key_tag, w->id,
                                      (unsigned long long)w->n);
        return;
    }
    if (o->zipf) {
        double u = (double)(next_rand(w) >> 11) / 9007199254740992.0;
        const double *cdf = w->g->run->zipf_cdf;
        size_t lo = 0, hi = (size_t)o->keys - 1;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (cdf[mid] < u)
                lo = mid + 1;
            else
                hi = mid;
        }
        k = lo;
    } else {
        k = next_rand(w) % (uint64_t)o->keys;
    }
    w->key_len = (size_t)snprintf(w->key, sizeof(w->key), "key-%llu", (unsigned long long)k);
}

static void retire(group *g)
{
    pthread_mutex_lock(&g->lock);
    g->active--;
    pthread_cond_signal(&g->cond);
    pthread_mutex_unlock(&g->lock);
}

/* The bytes of `w`'s current key's value that are checked: the key (cut to
 * the payload), then 'x's up to the key buffer's size (or the payload). */
static size_t value_head(const worker *w, size_t payload, size_t *key_part)
{
    *key_part = w->key_len < payload ? w->key_len : payload;
    return sizeof(w->key) < payload ? sizeof(w->key) : payload;
}

/* Writes `w`'s current key's value into buf (payload bytes, all 'x' beyond
 * what value_head() covers). */
static void fill_value(const worker *w, char *buf, size_t payload)
{
    size_t key_part, head = value_head(w, payload, &key_part);
    memcpy(buf, w->key, key_part);
    memset(buf + key_part, 'x', head - key_part);
}

typedef enum { CHECK_OK, CHECK_MISS, CHECK_WRONG } check_outcome;

/* Whether a successful result is what `w`'s request should get: a set's
 * SUCCESS; a get's HIT with the key's own value, or a MISS. */
static check_outcome check_result(const worker *w, const momento_result *r, size_t payload)
{
    momento_outcome oc = momento_result_outcome(r);
    if (w->phase == 0)
        return oc == MOMENTO_OUTCOME_SUCCESS ? CHECK_OK : CHECK_WRONG;
    if (oc == MOMENTO_OUTCOME_MISS)
        return CHECK_MISS;
    if (oc != MOMENTO_OUTCOME_HIT)
        return CHECK_WRONG;
    size_t len;
    const char *v = momento_result_value(r, &len);
    size_t key_part, head = value_head(w, payload, &key_part);
    if (len != payload || (len && !v) || (key_part && memcmp(v, w->key, key_part) != 0))
        return CHECK_WRONG;
    for (size_t i = key_part; i < head; i++)
        if (v[i] != 'x')
            return CHECK_WRONG;
    return CHECK_OK;
}

/* `overdue_ns`: callback time minus the request's own deadline (submission
 * + its timeout); negative when the callback came before the deadline. */
static void record(group *g, const worker *w, const momento_result *r, uint64_t latency_us,
                   int64_t overdue_ns)
{
    int err = momento_result_error(r);
    histogram *h = w->phase == 0 ? &g->stats.set : &g->stats.get;
    check_outcome chk =
        err == MOMENTO_OK ? check_result(w, r, (size_t)g->run->o->payload_bytes) : CHECK_OK;
    pthread_mutex_lock(&g->lock);
    g->stats.requests++;
    if (err == MOMENTO_OK) {
        g->stats.success++;
        hist_record(h, latency_us);
        if (chk == CHECK_WRONG)
            g->stats.wrong_results++;
        else if (w->phase == 1 && chk == CHECK_MISS)
            g->stats.get_misses++;
        else if (w->phase == 1)
            g->stats.get_hits++;
    } else {
        g->stats.errors[classify(err)]++;
    }
    if (err == MOMENTO_ERR_TIMEOUT) {
        g->stats.timed_out++;
        if (overdue_ns < 0) {
            /* Early by any amount counts: the start time was read before the
             * call, so the library's own clock started no earlier, and a
             * correct deadline cannot fire before start + timeout. */
            g->stats.timed_out_early++;
            uint64_t early_us = (uint64_t)(-overdue_ns + 999) / 1000;
            if (early_us > g->stats.early_max_us)
                g->stats.early_max_us = early_us;
        } else {
            hist_record(&g->stats.late, (uint64_t)overdue_ns / 1000);
        }
    }
    pthread_mutex_unlock(&g->lock);
    /* Each line is one fprintf, which stdio writes whole under its own
     * lock, so the groups' threads need no other. */
    FILE *samples = g->run->samples;
    if (samples && err == MOMENTO_OK)
        fprintf(samples, "%s %llu\n", w->phase == 0 ? "set" : "get", (unsigned long long)latency_us);
    else if (samples && err == MOMENTO_ERR_TIMEOUT && overdue_ns >= 0)
        fprintf(samples, "late %llu\n", (unsigned long long)overdue_ns / 1000);
}

/* This request's deadline: uniform over [timeout_min_ms, timeout_ms]. */
static uint32_t draw_deadline_ms(worker *w)
{
    const lg_options *o = w->g->run->o;
    uint64_t span = (uint64_t)(o->timeout_ms - o->timeout_min_ms) + 1;
    if (span == 1)
        return (uint32_t)o->timeout_ms;
    w->deadline_rng ^= w->deadline_rng << 13;
    w->deadline_rng ^= w->deadline_rng >> 7;
    w->deadline_rng ^= w->deadline_rng << 17;
    return (uint32_t)(o->timeout_min_ms + (int)(w->deadline_rng % span));
}

static void on_done(const momento_result *r, void *ud);

/* --get-ratio above 0.5: what follows the request just done. A set is
 * followed by a get of its key (as at 0.5), a get by another get - an
 * extra one, of a key chosen as a set's is (with --keys 0 the key just
 * set) - until the worker's gets reach the ratio, then by the next set.
 * Integer arithmetic, so 0.9 is exactly one set and nine gets. Every
 * value written for a key is the same bytes whoever wrote it
 * (fill_value), so an extra get's HIT is checked as the first get's is. */
static void next_phase(worker *w, int64_t ppm)
{
    if (w->phase == 0) {
        w->sets++;
        w->phase = 1;
        w->extra_get = false;
        return;
    }
    w->gets++;
    if ((int64_t)w->gets * 1000000 >= ppm * (int64_t)(w->sets + w->gets)) {
        w->n++;
        w->phase = 0;
        w->extra_get = false;
    } else {
        w->extra_get = true;
    }
}

/* The value buffer of the calling-back thread: its own, claimed from `g`
 * on its first callback, since the callbacks of one client may run on two
 * threads at once (--io-callbacks). NULL when every buffer is claimed,
 * which three threads cannot do. */
static char *callback_value(group *g)
{
    if (claimed.g == g && claimed.gen == g->gen)
        return claimed.value;
    pthread_mutex_lock(&g->lock);
    char *v = g->n_claimed < LG_VALUE_BUFFERS - 1 ? g->value[1 + g->n_claimed++] : NULL;
    pthread_mutex_unlock(&g->lock);
    if (v) {
        claimed.g = g;
        claimed.gen = g->gen;
        claimed.value = v;
    }
    return v;
}

/* `from_callback`: called from a callback (else from the group's thread);
 * picks the value buffer. */
static void start_request(worker *w, bool from_callback)
{
    group *g = w->g;
    run_state *run = g->run;
    const lg_options *o = run->o;
    if (w->phase == 0 || (w->extra_get && o->keys))
        choose_key(w);
    /* Every request carries its own deadline, so coalesced waiters with
     * different deadlines share RPCs (the case issue 14 is about). */
    momento_request_options ro = MOMENTO_REQUEST_OPTIONS_INIT;
    ro.timeout_ms = draw_deadline_ms(w);
    w->deadline_ns = (int64_t)ro.timeout_ms * 1000000;
    /* Read before the call: the deadline counts from submission, so a
     * callback earlier than start_ns + deadline_ns is early without doubt. */
    w->start_ns = now_ns();
    int rc;
    if (w->phase == 0) {
        char *value = from_callback ? callback_value(g) : g->value[0];
        if (!value) { /* not reached: see callback_value */
            retire(g);
            return;
        }
        fill_value(w, value, (size_t)o->payload_bytes);
        rc = g->co ? momento_coalescing_set(g->co, o->cache, w->key, w->key_len, value,
                                            (size_t)o->payload_bytes, 0, &ro, on_done, w)
                   : momento_set(g->client, o->cache, w->key, w->key_len, value,
                                 (size_t)o->payload_bytes, 0, &ro, on_done, w);
    }
    else
        rc = g->co ? momento_coalescing_get(g->co, o->cache, w->key, w->key_len, &ro, on_done, w)
                   : momento_get(g->client, o->cache, w->key, w->key_len, &ro, on_done, w);
    if (rc != MOMENTO_OK) {
        /* Refused at submit (a bad argument, a client being freed): no
         * callback will come, so the worker stops here, and the refusal is
         * reported rather than lost. */
        pthread_mutex_lock(&g->lock);
        g->stats.refused++;
        if (!g->stats.first_refusal)
            g->stats.first_refusal = rc;
        pthread_mutex_unlock(&g->lock);
        retire(g);
    }
}

static void on_done(const momento_result *r, void *ud)
{
    worker *w = ud;
    group *g = w->g;
    run_state *run = g->run;
    bool open_loop = run->o->open_loop;
    int64_t t = now_ns();
    /* Open loop: latency counts from when the request was due, so time spent
     * waiting behind a slow predecessor is not omitted (as wrk2 does). */
    int64_t origin = open_loop ? w->sched_ns : w->start_ns;
    record(g, w, r, (uint64_t)(t - origin) / 1000, t - (w->start_ns + w->deadline_ns));
    if (run->get_ratio_ppm == 500000) { /* set, get, next key */
        if (w->phase == 1)
            w->n++;
        w->phase ^= 1;
    } else {
        next_phase(w, run->get_ratio_ppm);
    }
    if (atomic_load(&run->stop) || t >= run->end_ns) {
        retire(g);
        return;
    }
    /* Closed loop: the next request is due one interval after this one
     * started (the seed's "interval minus latency"); a late one starts at
     * once and does not catch up. Open loop: the schedule stands. */
    int64_t next = (open_loop ? w->sched_ns : w->start_ns) + run->interval_ns;
    if (next <= t) {
        w->sched_ns = open_loop ? next : t;
        start_request(w, true);
        return;
    }
    w->sched_ns = next;
    pthread_mutex_lock(&g->lock);
    momento__heap_push(&g->heap, w);
    pthread_cond_signal(&g->cond);
    pthread_mutex_unlock(&g->lock);
}

/* Starts workers' requests when due; ends when all workers have retired. */
/* Waits (g->lock held) until the group is signalled or `wait_ns` (at most
 * 100 ms, so stop is re-checked) passes. With --dispatch the callbacks
 * that would signal run here: the wait is the client's dispatch fd, and
 * what it says is dispatched, without the lock (callbacks take it). */
static void group_wait(group *g, int64_t wait_ns)
{
    if (wait_ns > 100000000)
        wait_ns = 100000000;
    if (g->run->o->dispatch) {
        pthread_mutex_unlock(&g->lock);
        struct pollfd p = {.fd = momento_client_dispatch_fd(g->client), .events = POLLIN};
        if (poll(&p, 1, (int)((wait_ns + 999999) / 1000000)) > 0)
            momento_client_dispatch(g->client, 0);
        pthread_mutex_lock(&g->lock);
        return;
    }
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += (time_t)(wait_ns / 1000000000);
    until.tv_nsec += (long)(wait_ns % 1000000000);
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&g->cond, &g->lock, &until);
}

static void *group_loop(void *arg)
{
    group *g = arg;
    pthread_mutex_lock(&g->lock);
    while (g->active > 0) {
        if (atomic_load(&g->run->stop)) {
            while (momento__heap_pop(&g->heap)) /* idle workers retire at once */
                g->active--;
            if (g->active > 0)
                group_wait(g, 100000000);
            continue;
        }
        const worker *first = momento__heap_peek(&g->heap);
        if (!first) {
            group_wait(g, 100000000);
            continue;
        }
        int64_t due = first->sched_ns, t = now_ns();
        if (due <= t) {
            worker *w = momento__heap_pop(&g->heap);
            pthread_mutex_unlock(&g->lock);
            start_request(w, false);
            pthread_mutex_lock(&g->lock);
            continue;
        }
        group_wait(g, due - t);
    }
    pthread_mutex_unlock(&g->lock);
    return NULL;
}

static double process_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void snapshot(group *groups, int n, lg_stats *out)
{
    lg_stats_init(out);
    for (int i = 0; i < n; i++) {
        pthread_mutex_lock(&groups[i].lock);
        lg_stats_merge(out, &groups[i].stats);
        pthread_mutex_unlock(&groups[i].lock);
    }
}

static void ensure_cache(momento_client *c, const char *cache)
{
    momento_result *r = NULL;
    int rc = momento_create_cache_sync(c, cache, NULL, &r);
    if (rc != MOMENTO_OK)
        fprintf(stderr, "warning: create cache '%s': %s %s\n", cache, momento_error_name(rc),
                r ? momento_result_message(r) : "");
    momento_result_free(r);
}

int lg_run(const lg_options *o, const lg_target *t, bool coalesce, const char *label,
           lg_result *out)
{
    memset(out, 0, sizeof(*out));
    lg_stats_init(&out->stats);
    out->coalesced = coalesce;

    run_state run;
    memset(&run, 0, sizeof(run));
    run.o = o;
    run.get_ratio_ppm = (int64_t)llround(o->get_ratio * 1e6);
    run.interval_ns = o->rps ? (int64_t)((double)o->concurrency * 1e9 / o->rps) : 0;
    if (o->zipf) { /* s = 1: the i-th key is 1/i as popular as the first */
        run.zipf_cdf = malloc((size_t)o->keys * sizeof(double));
        double sum = 0;
        for (int i = 0; i < o->keys; i++)
            sum += 1.0 / (i + 1);
        double acc = 0;
        for (int i = 0; i < o->keys; i++) {
            acc += 1.0 / (i + 1) / sum;
            run.zipf_cdf[i] = acc;
        }
        run.zipf_cdf[o->keys - 1] = 1.0;
    }

    momento_config *cfg = NULL;
    int rc = ex_target_config_new(t, &cfg);
    /* The client's default deadline: what creating the cache uses. Load
     * requests each carry their own (start_request). */
    if (rc == MOMENTO_OK)
        momento_config_set_timeout_ms(cfg, (uint32_t)o->timeout_ms);
    if (rc == MOMENTO_OK && o->samples_path && !(run.samples = fopen(o->samples_path, "w"))) {
        fprintf(stderr, "%s: cannot write %s\n", o->prog, o->samples_path);
        rc = MOMENTO_ERR_INVALID_ARGUMENT;
    }
    if (rc == MOMENTO_OK && o->io_callbacks)
        rc = momento_config_set_io_thread_callbacks(cfg, 1);
    if (rc == MOMENTO_OK && o->dispatch)
        rc = momento_config_set_dispatch(cfg, 1);
    if (rc == MOMENTO_OK && o->dispatch)
        rc = momento_config_set_dispatch_io(cfg, 1);
    if (rc == MOMENTO_OK && o->near_bytes)
        rc = momento_config_set_near_cache(cfg, (size_t)o->near_bytes,
                                           (uint32_t)o->near_staleness_ms);
    if (rc == MOMENTO_OK && o->batch)
        rc = momento_config_set_batching(cfg, o->batch_min_in_flight, o->batch_linger_us,
                                         o->batch_max_keys, o->batch_max_bytes);
    if (rc == MOMENTO_OK && o->batch)
        rc = momento_config_set_batching_max_wait(cfg, o->batch_max_wait_us);
    out->batching = o->batch;
    out->near_cache = o->near_bytes > 0;
    group *groups = calloc((size_t)o->threads, sizeof(*groups));
    worker *workers = calloc((size_t)o->concurrency, sizeof(*workers));
    for (int i = 0; i < o->threads && rc == MOMENTO_OK; i++) {
        group *g = &groups[i];
        g->run = &run;
        pthread_mutex_init(&g->lock, NULL);
        pthread_cond_init(&g->cond, NULL);
        lg_stats_init(&g->stats);
        g->gen = atomic_fetch_add(&run_gens, 1) + 1;
        for (int v = 0; v < LG_VALUE_BUFFERS && rc == MOMENTO_OK; v++) {
            g->value[v] = malloc((size_t)o->payload_bytes + 1);
            if (g->value[v])
                memset(g->value[v], 'x', (size_t)o->payload_bytes);
            else
                rc = MOMENTO_ERR_NO_MEMORY;
        }
        if (rc != MOMENTO_OK)
            break;
        /* A fresh client per run and thread: its own connection, so a phase
         * is never flattered by another's warm-up. */
        rc = momento_client_new(&g->client, cfg, t->creds);
        if (rc == MOMENTO_OK && coalesce)
            rc = momento_coalescer_new(&g->co, g->client);
        int first = (int)((long)o->concurrency * i / o->threads);
        int last = (int)((long)o->concurrency * (i + 1) / o->threads);
        g->workers = workers + first;
        g->n_workers = last - first;
        momento__heap_init(&g->heap, sched_before, NULL);
        if (rc == MOMENTO_OK && momento__heap_reserve(&g->heap, (size_t)g->n_workers) < 0)
            rc = MOMENTO_ERR_NO_MEMORY;
    }
    momento_config_free(cfg);
    if (rc == MOMENTO_OK)
        ensure_cache(groups[0].client, o->cache);
    if (t->local)
        momento_local_reset_stats(t->local);

    int64_t t0 = now_ns();
    double cpu0 = process_cpu_s();
    /* The in-process server's CPU since it started: an earlier run's
     * (request-coalescing's earlier phases) is not this run's. */
    double server_cpu0 = t->local ? momento_local_cpu_seconds(t->local) : 0;
    struct timespec wall0;
    clock_gettime(CLOCK_REALTIME, &wall0);
    out->started_at = (double)wall0.tv_sec + (double)wall0.tv_nsec / 1e9;
    /* One tag per process (both of request-coalescing's phases use the same
     * keys, as before): the pid and the start time, mixed. */
    static uint32_t key_tag;
    if (!key_tag)
        key_tag = (uint32_t)(((uint64_t)getpid() << 32 ^ (uint64_t)wall0.tv_nsec ^
                              (uint64_t)wall0.tv_sec) * 0x9E3779B97F4A7C15ull >> 32) | 1;
    run.key_tag = key_tag;
    run.end_ns = t0 + (int64_t)(o->duration_s * 1e9);
    for (int i = 0; i < o->threads && rc == MOMENTO_OK; i++) {
        group *g = &groups[i];
        g->active = g->n_workers;
        for (int k = 0; k < g->n_workers; k++) {
            worker *w = &g->workers[k];
            w->g = g;
            w->id = (int)(w - workers);
            w->rng = 0x9E3779B97F4A7C15ull * (uint64_t)(w->id + 1);
            w->deadline_rng = 0xD1B54A32D192ED03ull * (uint64_t)(w->id + 1);
            /* Spread the first requests over one interval so the load starts
             * smooth rather than as one burst. */
            w->sched_ns = t0 + (o->rps ? run.interval_ns * k / g->n_workers : 0);
            momento__heap_push(&g->heap, w);
        }
        pthread_create(&g->thread, NULL, group_loop, g);
    }

    /* Report every interval until the end; every loop is bounded by it. */
    int64_t next_report = t0 + (int64_t)(o->stats_interval_s * 1e9);
    while (rc == MOMENTO_OK) {
        int64_t t1 = now_ns();
        if (t1 >= run.end_ns)
            break;
        int64_t until = next_report < run.end_ns ? next_report : run.end_ns;
        struct timespec d = {(time_t)((until - t1) / 1000000000), (long)((until - t1) % 1000000000)};
        nanosleep(&d, NULL);
        int64_t t2 = now_ns();
        if (t2 >= next_report && t2 < run.end_ns) {
            if (!o->quiet) {
                lg_stats s;
                snapshot(groups, o->threads, &s);
                lg_print_stats(stdout, label, &s, (double)(t2 - t0) / 1e9);
            }
            /* Advance even when quiet: a deadline left in the past would turn
             * this loop into a spin that takes a CPU from the client. */
            next_report += (int64_t)(o->stats_interval_s * 1e9);
        }
    }
    atomic_store(&run.stop, true);
    for (int i = 0; i < o->threads; i++) {
        group *g = &groups[i];
        if (!g->thread)
            continue;
        pthread_mutex_lock(&g->lock);
        pthread_cond_signal(&g->cond);
        pthread_mutex_unlock(&g->lock);
        pthread_join(g->thread, NULL);
    }
    out->wall_s = (double)(now_ns() - t0) / 1e9;
    out->cpu_s = process_cpu_s() - cpu0;
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0)
        out->max_rss_kb = ru.ru_maxrss;
    snapshot(groups, o->threads, &out->stats);

    /* Every worker has retired, so every request has been called back: the
     * requests that reached the clients are the ones counted, less those
     * a coalescer merged into an RPC in flight and those the near cache
     * answered. */
    uint64_t calls = out->stats.requests;
    for (int i = 0; i < o->threads; i++) {
        group *g = &groups[i];
        if (g->co) {
            momento_coalescer_stats k;
            momento_coalescer_stats_get(g->co, &k, sizeof(k));
            out->counters.get_requests += k.get_requests;
            out->counters.get_coalesced += k.get_coalesced;
            out->counters.set_requests += k.set_requests;
            out->counters.set_coalesced += k.set_coalesced;
            if (k.peak_waiters > out->counters.peak_waiters)
                out->counters.peak_waiters = k.peak_waiters;
            calls -= k.get_coalesced + k.set_coalesced;
        }
        if (g->client) {
            momento_client_batching_stats b;
            momento_client_batching_stats_get(g->client, &b, sizeof(b));
            momento_client_batching_stats *sum = &out->batch_counters;
            sum->queued += b.queued;
            sum->batches += b.batches;
            sum->batched_keys += b.batched_keys;
            sum->sent_alone += b.sent_alone;
            sum->left_queue += b.left_queue;
            for (int j = 0; j < 8; j++)
                sum->keys_per_batch[j] += b.keys_per_batch[j];
            sum->queued_ns_total += b.queued_ns_total;
            if (b.queued_ns_max > sum->queued_ns_max)
                sum->queued_ns_max = b.queued_ns_max;
            momento_near_cache_stats nc;
            momento_client_near_cache_stats_get(g->client, &nc, sizeof(nc));
            momento_near_cache_stats *ns = &out->near_counters;
            ns->hits += nc.hits;
            ns->miss_hits += nc.miss_hits;
            ns->misses += nc.misses;
            ns->fills += nc.fills;
            ns->stale += nc.stale;
            ns->dropped += nc.dropped;
            ns->evictions += nc.evictions;
            ns->refreshes += nc.refreshes;
            /* Answered from memory: no RPC, and never seen by a coalescer;
             * a refresh ahead of the bound is an RPC the near cache sent
             * of its own. */
            calls -= nc.hits + nc.miss_hits;
            calls += nc.refreshes;
        }
        momento_coalescer_free(g->co);
        momento_client_free(g->client);
        pthread_mutex_destroy(&g->lock);
        pthread_cond_destroy(&g->cond);
        momento__heap_clear(&g->heap);
        for (int v = 0; v < LG_VALUE_BUFFERS; v++)
            free(g->value[v]);
    }
    /* A request that queued either left in a batch, left alone as a plain
     * call, or never reached the wire (deadline or cancel while queued). */
    const momento_client_batching_stats *bc = &out->batch_counters;
    uint64_t sent = calls + bc->sent_alone + bc->batches;
    out->rpcs = sent > bc->queued ? sent - bc->queued : 0;
    if (t->local) {
        out->have_server = true;
        out->server_get_rpcs = momento_local_rpc_count(t->local, "Get", -1);
        out->server_set_rpcs = momento_local_rpc_count(t->local, "Set", -1);
        out->server_get_batch_rpcs = momento_local_rpc_count(t->local, "GetBatch", -1);
        out->server_set_batch_rpcs = momento_local_rpc_count(t->local, "SetBatch", -1);
        /* The in-process server's own thread is not client work. */
        out->cpu_s -= momento_local_cpu_seconds(t->local) - server_cpu0;
        if (out->cpu_s < 0)
            out->cpu_s = 0;
    }
    free(groups);
    free(workers);
    free(run.zipf_cdf);
    if (run.samples && fclose(run.samples) != 0 && rc == MOMENTO_OK) {
        fprintf(stderr, "%s: cannot write %s\n", o->prog, o->samples_path);
        rc = MOMENTO_ERR_INVALID_ARGUMENT;
    }
    return rc;
}

/* ------------------------------------------------------------- output */

const char *lg_describe_deadlines(const lg_options *o, char *buf, size_t len)
{
    if (o->timeout_min_ms == o->timeout_ms)
        snprintf(buf, len, "deadline %d ms", o->timeout_ms);
    else
        snprintf(buf, len, "deadlines %d to %d ms", o->timeout_min_ms, o->timeout_ms);
    return buf;
}

const char *lg_describe_batching(const lg_options *o, char *buf, size_t len)
{
    if (!o->batch)
        snprintf(buf, len, "%s", "");
    else
        snprintf(buf, len,
                 "; batching %u:%u:%u:%u:%u (queue at %u in flight, linger %u us, %u keys, "
                 "%u bytes, wait at most %u us)",
                 o->batch_min_in_flight, o->batch_linger_us, o->batch_max_keys, o->batch_max_bytes,
                 o->batch_max_wait_us, o->batch_min_in_flight, o->batch_linger_us,
                 o->batch_max_keys, o->batch_max_bytes, o->batch_max_wait_us);
    return buf;
}

void lg_print_stats(FILE *f, const char *label, const lg_stats *s, double elapsed_s)
{
    fprintf(f, "%scumulative stats after %.1f s:\n", label, elapsed_s);
    /* Success is a share of every request tried, refused ones included:
     * nothing tried is 0 %, not 100 %. */
    uint64_t tried = s->requests + s->refused;
    fprintf(f, "  requests %llu (%.0f/s), success %llu (%.1f%%)",
            (unsigned long long)s->requests, elapsed_s > 0 ? (double)s->requests / elapsed_s : 0,
            (unsigned long long)s->success, tried ? 100.0 * (double)s->success / (double)tried : 0.0);
    for (int i = 0; i < LG_ERR_COUNT; i++)
        fprintf(f, ", %s %llu", error_names[i], (unsigned long long)s->errors[i]);
    if (s->refused)
        fprintf(f, ", refused %llu (%s)", (unsigned long long)s->refused,
                momento_strerror(s->first_refusal));
    fprintf(f, "\n");
    const histogram *hs[2] = {&s->set, &s->get};
    const char *names[2] = {"set", "get"};
    for (int i = 0; i < 2; i++) {
        const histogram *h = hs[i];
        /* p99 and p99.9 only where there are enough samples to tell them
         * from the maximum. */
        char p99[32], p999[32];
        fprintf(f,
                "  %s latency us: count %llu min %llu p50 %llu p90 %llu p99 %s p99.9 %s max %llu\n",
                names[i], (unsigned long long)h->count,
                (unsigned long long)(h->count ? h->min : 0),
                (unsigned long long)hist_quantile(h, 0.5), (unsigned long long)hist_quantile(h, 0.9),
                hist_quantile_str(h, 0.99, 1, p99, sizeof(p99)),
                hist_quantile_str(h, 0.999, 1, p999, sizeof(p999)), (unsigned long long)h->max);
    }
    /* Early timeouts are the bug this line exists to show: a request told
     * it ran out of time before the time it asked for had passed. */
    fprintf(f, "  timed out %llu, early %llu (before their own deadline)",
            (unsigned long long)s->timed_out, (unsigned long long)s->timed_out_early);
    if (s->timed_out_early)
        fprintf(f, ", earliest %llu us before it", (unsigned long long)s->early_max_us);
    if (s->late.count)
        fprintf(f, "; us after the deadline: p50 %llu p99 %llu max %llu",
                (unsigned long long)hist_quantile(&s->late, 0.5),
                (unsigned long long)hist_quantile(&s->late, 0.99),
                (unsigned long long)s->late.max);
    fprintf(f, "\n");
}

void lg_print_summary(FILE *f, const char *label, const lg_result *r)
{
    fprintf(f, "%sfinal:\n", label);
    lg_print_stats(f, "", &r->stats, r->wall_s);
    fprintf(f, "  throughput %.0f requests/s over %.2f s; client CPU %.2f s (%.1f us per request); "
               "peak RSS %.1f MB\n",
            r->wall_s > 0 ? (double)r->stats.requests / r->wall_s : 0, r->wall_s, r->cpu_s,
            r->stats.requests ? r->cpu_s * 1e6 / (double)r->stats.requests : 0,
            (double)r->max_rss_kb / 1024.0);
    if (r->coalesced) {
        uint64_t req = r->counters.get_requests + r->counters.set_requests;
        uint64_t co = r->counters.get_coalesced + r->counters.set_coalesced;
        fprintf(f, "  coalesced %llu of %llu requests (%.1f%%)\n", (unsigned long long)co,
                (unsigned long long)req, req ? 100.0 * (double)co / (double)req : 0);
    }
    fprintf(f, "  results checked: %llu gets found their key's value, %llu missed, %llu wrong\n",
            (unsigned long long)r->stats.get_hits, (unsigned long long)r->stats.get_misses,
            (unsigned long long)r->stats.wrong_results);
    fprintf(f, "  RPCs sent: %llu for %llu requests (%.3f per request)\n", (unsigned long long)r->rpcs,
            (unsigned long long)r->stats.requests,
            r->stats.requests ? (double)r->rpcs / (double)r->stats.requests : 0.0);
    if (r->batching)
        lg_print_batching(f, &r->batch_counters);
    if (r->near_cache) {
        const momento_near_cache_stats *k = &r->near_counters;
        uint64_t looked = k->hits + k->miss_hits + k->misses;
        fprintf(f, "  near cache: %llu of %llu gets answered from memory (%.1f%%: %llu hits, "
                   "%llu misses kept); %llu fills, %llu stale, %llu dropped, %llu evicted\n",
                (unsigned long long)(k->hits + k->miss_hits), (unsigned long long)looked,
                looked ? 100.0 * (double)(k->hits + k->miss_hits) / (double)looked : 0.0,
                (unsigned long long)k->hits, (unsigned long long)k->miss_hits,
                (unsigned long long)k->fills, (unsigned long long)k->stale,
                (unsigned long long)k->dropped, (unsigned long long)k->evictions);
    }
    if (r->have_server && r->batching)
        fprintf(f, "  server RPCs: %llu get, %llu set, %llu get batch, %llu set batch\n",
                (unsigned long long)r->server_get_rpcs, (unsigned long long)r->server_set_rpcs,
                (unsigned long long)r->server_get_batch_rpcs,
                (unsigned long long)r->server_set_batch_rpcs);
    else if (r->have_server)
        fprintf(f, "  server RPCs: %llu get, %llu set\n", (unsigned long long)r->server_get_rpcs,
                (unsigned long long)r->server_set_rpcs);
}

/* The histogram buckets of momento_client_batching_stats.keys_per_batch. */
static const char *const batch_buckets[8] = {"2", "3-4", "5-8", "9-16", "17-32", "33-64",
                                             "65-128", "129+"};

void lg_print_batching(FILE *f, const momento_client_batching_stats *k)
{
    fprintf(f, "  batching: %llu requests queued; %llu batches carried %llu of them (%.1f keys "
               "per batch), %llu left alone, %llu ended while queued; queued mean %.0f us, max "
               "%.0f us\n",
            (unsigned long long)k->queued, (unsigned long long)k->batches,
            (unsigned long long)k->batched_keys,
            k->batches ? (double)k->batched_keys / (double)k->batches : 0.0,
            (unsigned long long)k->sent_alone, (unsigned long long)k->left_queue,
            k->queued ? (double)k->queued_ns_total / 1e3 / (double)k->queued : 0.0,
            (double)k->queued_ns_max / 1e3);
    fprintf(f, "  keys per batch:");
    for (int i = 0; i < 8; i++)
        fprintf(f, " %s: %llu%s", batch_buckets[i], (unsigned long long)k->keys_per_batch[i],
                i < 7 ? "," : "\n");
}

/* The summary, then what rebuilds the histogram exactly (lg_merge reads
 * it back): the sum, and every non-empty bucket as [low, high, count], the
 * values it stands for in us, lowest first. */
static void json_hist(FILE *f, const char *name, const histogram *h, const char *pad)
{
    fprintf(f,
            "%s\"%s\": {\"count\": %llu, \"min_us\": %llu, \"p50_us\": %llu, \"p90_us\": %llu, "
            "\"p99_us\": %llu, \"p999_us\": %llu, \"max_us\": %llu, \"sum_us\": %llu, \"buckets\": [",
            pad, name, (unsigned long long)h->count, (unsigned long long)(h->count ? h->min : 0),
            (unsigned long long)hist_quantile(h, 0.5), (unsigned long long)hist_quantile(h, 0.9),
            (unsigned long long)hist_quantile(h, 0.99), (unsigned long long)hist_quantile(h, 0.999),
            (unsigned long long)h->max, (unsigned long long)h->sum);
    bool first = true;
    for (uint32_t i = 0; i < HIST_BUCKETS && h->count; i++) {
        if (!h->buckets[i])
            continue;
        fprintf(f, "%s[%llu, %llu, %llu]", first ? "" : ", ",
                (unsigned long long)hist_bucket_low(i), (unsigned long long)hist_bucket_high(i),
                (unsigned long long)h->buckets[i]);
        first = false;
    }
    fprintf(f, "]}");
}

static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; s && *s; s++) {
        if (*s == '"' || *s == '\\')
            fprintf(f, "\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            fprintf(f, "\\u%04x", *s);
        else
            fputc(*s, f);
    }
    fputc('"', f);
}

void lg_json_config(FILE *f, const lg_options *o, int indent)
{
    fprintf(f, "%*s\"config\": {\"endpoint\": ", indent, "");
    if (o->target.endpoint)
        json_string(f, o->target.endpoint);
    else
        fprintf(f, "null");
    fprintf(f, ", \"transport\": \"%s\", \"io_callbacks\": %s, \"dispatch\": %s, \"cache\": ",
            o->target.protosocket ? "protosocket" : "grpc", o->io_callbacks ? "true" : "false",
            o->dispatch ? "true" : "false");
    json_string(f, o->cache);
    fprintf(f,
            ", \"concurrency\": %d, \"rps\": %d, \"duration_s\": %g, \"payload_bytes\": %d, "
            "\"timeout_ms\": %d, \"keys\": %d, \"distribution\": \"%s\", \"open_loop\": %s, "
            "\"threads\": %d, \"timeout_min_ms\": %d, \"timeout_max_ms\": %d, \"get_ratio\": %g, "
            "\"batch\": ",
            o->concurrency, o->rps, o->duration_s, o->payload_bytes, o->timeout_ms, o->keys,
            o->zipf ? "zipf" : "uniform", o->open_loop ? "true" : "false", o->threads,
            o->timeout_min_ms, o->timeout_ms, o->get_ratio);
    if (o->batch)
        fprintf(f,
                "{\"min_in_flight\": %u, \"linger_us\": %u, \"max_keys\": %u, \"max_bytes\": %u, "
                "\"max_wait_us\": %u}}",
                o->batch_min_in_flight, o->batch_linger_us, o->batch_max_keys, o->batch_max_bytes,
                o->batch_max_wait_us);
    else
        fprintf(f, "null}");
}

void lg_json_run(FILE *f, const lg_options *o, const lg_result *r, int indent)
{
    char pad[32];
    snprintf(pad, sizeof(pad), "%*s", indent + 2, "");
    fprintf(f, "{\n");
    lg_json_config(f, o, indent + 2);
    fprintf(f, ",\n%s\"requests\": %llu,\n%s\"success\": %llu,\n%s\"refused\": %llu,\n%s\"errors\": {",
            pad, (unsigned long long)r->stats.requests, pad, (unsigned long long)r->stats.success,
            pad, (unsigned long long)r->stats.refused, pad);
    for (int i = 0; i < LG_ERR_COUNT; i++)
        fprintf(f, "%s\"%s\": %llu", i ? ", " : "", error_names[i],
                (unsigned long long)r->stats.errors[i]);
    fprintf(f, "},\n%s\"ops_per_sec\": %.1f,\n", pad,
            r->wall_s > 0 ? (double)r->stats.requests / r->wall_s : 0);
    json_hist(f, "set", &r->stats.set, pad);
    fprintf(f, ",\n");
    json_hist(f, "get", &r->stats.get, pad);
    /* To the nanosecond: a merge of one run prints the run's own report. */
    fprintf(f, ",\n%s\"client_cpu_s\": %.9f,\n%s\"wall_s\": %.9f,\n%s\"max_rss_kb\": %ld", pad,
            r->cpu_s, pad, r->wall_s, pad, r->max_rss_kb);
    if (r->have_server)
        fprintf(f,
                ",\n%s\"server\": {\"Get\": %llu, \"Set\": %llu, \"total\": %llu, \"GetBatch\": %llu, "
                "\"SetBatch\": %llu}",
                pad, (unsigned long long)r->server_get_rpcs, (unsigned long long)r->server_set_rpcs,
                (unsigned long long)(r->server_get_rpcs + r->server_set_rpcs +
                                     r->server_get_batch_rpcs + r->server_set_batch_rpcs),
                (unsigned long long)r->server_get_batch_rpcs,
                (unsigned long long)r->server_set_batch_rpcs);
    else
        fprintf(f, ",\n%s\"server\": null", pad);
    if (r->coalesced) {
        const momento_coalescer_stats *k = &r->counters;
        uint64_t req = k->get_requests + k->set_requests;
        fprintf(f,
                ",\n%s\"coalesced\": {\"get\": %llu, \"set\": %llu, \"get_pct\": %.2f, "
                "\"set_pct\": %.2f, \"pct_of_all\": %.2f}",
                pad, (unsigned long long)k->get_coalesced, (unsigned long long)k->set_coalesced,
                k->get_requests ? 100.0 * (double)k->get_coalesced / (double)k->get_requests : 0.0,
                k->set_requests ? 100.0 * (double)k->set_coalesced / (double)k->set_requests : 0.0,
                req ? 100.0 * (double)(k->get_coalesced + k->set_coalesced) / (double)req : 0.0);
    }
    fprintf(f, ",\n%s\"timed_out\": %llu,\n%s\"timed_out_early\": %llu,\n%s\"timed_out_early_max_us\": %llu,\n",
            pad, (unsigned long long)r->stats.timed_out, pad,
            (unsigned long long)r->stats.timed_out_early, pad,
            (unsigned long long)r->stats.early_max_us);
    json_hist(f, "timeout_late", &r->stats.late, pad);
    fprintf(f,
            ",\n%s\"get_hits\": %llu,\n%s\"get_misses\": %llu,\n%s\"wrong_results\": %llu,\n"
            "%s\"rpcs\": %llu,\n%s\"rpcs_per_request\": %.4f",
            pad, (unsigned long long)r->stats.get_hits, pad, (unsigned long long)r->stats.get_misses,
            pad, (unsigned long long)r->stats.wrong_results, pad, (unsigned long long)r->rpcs, pad,
            r->stats.requests ? (double)r->rpcs / (double)r->stats.requests : 0.0);
    if (r->batching) {
        const momento_client_batching_stats *k = &r->batch_counters;
        fprintf(f,
                ",\n%s\"batching\": {\"queued\": %llu, \"batches\": %llu, \"batched_keys\": %llu, "
                "\"sent_alone\": %llu, \"left_queue\": %llu, \"queued_us_total\": %.1f, "
                "\"queued_us_max\": %.1f, \"keys_per_batch\": {",
                pad, (unsigned long long)k->queued, (unsigned long long)k->batches,
                (unsigned long long)k->batched_keys, (unsigned long long)k->sent_alone,
                (unsigned long long)k->left_queue, (double)k->queued_ns_total / 1e3,
                (double)k->queued_ns_max / 1e3);
        for (int i = 0; i < 8; i++)
            fprintf(f, "%s\"%s\": %llu", i ? ", " : "", batch_buckets[i],
                    (unsigned long long)k->keys_per_batch[i]);
        fprintf(f, "}}");
    } else {
        fprintf(f, ",\n%s\"batching\": null", pad);
    }
    if (o->near_bytes) {
        const momento_near_cache_stats *k = &r->near_counters;
        fprintf(f,
                ",\n%s\"near_cache\": {\"bytes\": %d, \"staleness_ms\": %d, \"hits\": %llu, "
                "\"miss_hits\": %llu, \"misses\": %llu, \"fills\": %llu, \"stale\": %llu, "
                "\"dropped\": %llu, \"evictions\": %llu, \"refreshes\": %llu}",
                pad, o->near_bytes, o->near_staleness_ms,
                (unsigned long long)k->hits, (unsigned long long)k->miss_hits,
                (unsigned long long)k->misses, (unsigned long long)k->fills,
                (unsigned long long)k->stale, (unsigned long long)k->dropped,
                (unsigned long long)k->evictions, (unsigned long long)k->refreshes);
    } else {
        fprintf(f, ",\n%s\"near_cache\": null", pad);
    }
    fprintf(f, ",\n%s\"first_refusal\": ", pad);
    if (r->stats.first_refusal)
        json_string(f, momento_error_name(r->stats.first_refusal));
    else
        fprintf(f, "null");
    fprintf(f, ",\n%s\"started_at\": %.6f,\n%s\"merged\": ", pad, r->started_at, pad);
    if (r->merged_runs)
        fprintf(f, "{\"runs\": %d, \"start_spread_s\": %.6f}", r->merged_runs, r->start_spread_s);
    else
        fprintf(f, "null");
    fprintf(f, "\n%*s}", indent, "");
}
