/* topics-fanout: one topic, P publishers, S subscribers - how many
 * deliveries a second, how late, and was anything lost.
 *
 * Every subscriber subscribes (momento_topic_subscribe_sync) before the
 * first publish. Then --publishers threads publish --rate messages a second
 * between them, paced (each publish has its time on a fixed schedule, not a
 * tight loop), asynchronously with at most --in-flight publishes outstanding
 * per publisher, for --duration seconds. Each message's first 8 bytes are
 * its send time (CLOCK_MONOTONIC, ns), so a subscriber measures the delivery
 * latency as its receive time minus that: publisher and subscribers are in
 * this one process, on the same clock. After the last publish's callback
 * the program waits for the deliveries still on their way (until none has
 * come for 2 s, at most 10 s), then counts: each successful publish should
 * reach every subscriber once.
 *
 * Subscribers are spread over --clients libmomento clients, round robin.
 * A client runs all its subscriptions' events on its one completion
 * thread, so more clients use more cores; the publishers share one client
 * of their own. Where the requests go is shared with the other examples
 * (common/target.h): --endpoint HOST:PORT [--insecure | --tls-roots FILE],
 * MOMENTO_API_KEY, or a local server started in-process, whose CPU time
 * the report separates from the client's (momento_local_cpu_seconds()).
 *
 * The exit status is 1 when a publish failed, when a subscriber got fewer
 * items than were published with no discontinuity or connection loss to
 * say so (a silent loss), when an item was malformed, when a
 * subscription ended before the run did, or when an unsubscribe brought no
 * END with error 0; 2 for a bad option. Run with
 * --help for the options. */
#include "common/histogram.h"
#include "common/target.h"
#include "momento/topics.h"

#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static const char *const prog = "topics-fanout";

/* A message starts with its send time and its publisher's index; the rest
 * of --payload-bytes is filler. */
#define HEADER_BYTES 16
#define MAX_PAYLOAD (1024 * 1024)

/* After the last publish's callback, the deliveries still on their way
 * are waited for until all are in, or none has come for DRAIN_IDLE_NS, or
 * DRAIN_MAX_NS have passed (a backlog still arriving: reported as such). */
#define DRAIN_IDLE_NS (2 * 1000000000LL)
#define DRAIN_MAX_NS (10 * 1000000000LL)

typedef struct options {
    ex_target_options target; /* --endpoint, --insecure, --tls-roots */
    const char *cache;
    const char *topic;
    int publishers;
    int subscribers;
    int clients;
    int rate;          /* messages per second, all publishers together */
    int payload;       /* bytes per message, >= HEADER_BYTES */
    int in_flight;     /* publishes outstanding per publisher, at most */
    double duration_s;
    const char *json_path;
    bool quiet;
    bool own_streams;  /* MOMENTO_SUBSCRIBE_OWN_STREAM: one server stream each */
} options;

static void usage(void)
{
    printf("Usage: %s [OPTION]...\n"
           "Fan-out over Momento Topics: P publishers and S subscribers on one topic. Reports\n"
           "publishes, publish and end-to-end delivery latency, deliveries per second,\n"
           "what was lost, and the CPU time each delivery cost.\n\n" EX_TARGET_HELP "\n"
           "Fan-out:\n"
           "  --cache NAME           cache to use, created if missing (default topics-fanout)\n"
           "  --topic NAME           topic to publish to (default fanout)\n"
           "  --publishers N         publishing threads, 1 to 64 (default 1)\n"
           "  --subscribers N        subscriptions, 1 to 10000 (default 10)\n"
           "  --clients N            libmomento clients the subscribers are spread over, one\n"
           "                         completion thread each, 1 to 64 (default 1); the\n"
           "                         publishers share one more client of their own\n"
           "  --rate N               messages per second, all publishers together, paced,\n"
           "                         1 to 1000000 (default 100)\n"
           "  --payload-bytes N      message size, 16 to 1048576; the first 16 bytes carry\n"
           "                         the send time and the publisher (default 64)\n"
           "  --in-flight N          publishes outstanding per publisher, 1 to 10000\n"
           "                         (default 32)\n"
           "  --duration S           seconds of publishing, 0.1 to 3600 (default 10)\n"
           "  --own-streams          one server stream per subscription; by default the\n"
           "                         subscriptions of one client share one (docs/topics.md)\n"
           "  --json FILE            write the results as JSON too\n"
           "  --quiet                no per-second progress lines\n"
           "  --help                 this text\n\n"
           "Exit status: 0; 1 when a publish failed, a subscriber missed items with no\n"
           "discontinuity or connection loss reported (a silent loss), an item was malformed\n"
           "or a subscription ended early; 2 for a bad option.\n",
           prog);
}

static bool parse_secs(const char *s, double lo, double hi, double *out)
{
    char *end;
    if (!*s)
        return false;
    errno = 0;
    double v = strtod(s, &end);
    if (*end || errno || !(v >= lo && v <= hi))
        return false;
    *out = v;
    return true;
}

static int parse_options(int argc, char **argv, options *o)
{
    static const struct option longopts[] = {
        EX_TARGET_LONGOPTS,
        {"cache", required_argument, NULL, 'C'},       {"topic", required_argument, NULL, 't'},
        {"publishers", required_argument, NULL, 'P'},
        {"subscribers", required_argument, NULL, 'S'},
        {"clients", required_argument, NULL, 'c'},     {"rate", required_argument, NULL, 'r'},
        {"payload-bytes", required_argument, NULL, 'p'},
        {"in-flight", required_argument, NULL, 'f'},
        {"duration", required_argument, NULL, 'd'},    {"json", required_argument, NULL, 'j'},
        {"quiet", no_argument, NULL, 'q'},             {"help", no_argument, NULL, 'h'},
        {"own-streams", no_argument, NULL, 'O'},
        {NULL, 0, NULL, 0},
    };
    memset(o, 0, sizeof(*o));
    o->cache = "topics-fanout";
    o->topic = "fanout";
    o->publishers = 1;
    o->subscribers = 10;
    o->clients = 1;
    o->rate = 100;
    o->payload = 64;
    o->in_flight = 32;
    o->duration_s = 10;
    int ch;
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
        case 'O': o->own_streams = true; break;
        case 'C':
            if (ex_cache_option(prog, optarg, &o->cache))
                return 2;
            break;
        case 't':
            if (!*optarg)
                return ex_bad_option(prog, "--topic", optarg, "must not be empty");
            o->topic = optarg;
            break;
        case 'P':
            if (!ex_parse_int(optarg, 1, 64, &o->publishers))
                return ex_bad_option(prog, "--publishers", optarg, "must be 1 to 64");
            break;
        case 'S':
            if (!ex_parse_int(optarg, 1, 10000, &o->subscribers))
                return ex_bad_option(prog, "--subscribers", optarg, "must be 1 to 10000");
            break;
        case 'c':
            if (!ex_parse_int(optarg, 1, 64, &o->clients))
                return ex_bad_option(prog, "--clients", optarg, "must be 1 to 64");
            break;
        case 'r':
            if (!ex_parse_int(optarg, 1, 1000000, &o->rate))
                return ex_bad_option(prog, "--rate", optarg, "must be 1 to 1000000");
            break;
        case 'p':
            if (!ex_parse_int(optarg, HEADER_BYTES, MAX_PAYLOAD, &o->payload))
                return ex_bad_option(prog, "--payload-bytes", optarg, "must be 16 to 1048576");
            break;
        case 'f':
            if (!ex_parse_int(optarg, 1, 10000, &o->in_flight))
                return ex_bad_option(prog, "--in-flight", optarg, "must be 1 to 10000");
            break;
        case 'd':
            if (!parse_secs(optarg, 0.1, 3600, &o->duration_s))
                return ex_bad_option(prog, "--duration", optarg, "must be 0.1 to 3600 seconds");
            break;
        case 'j': o->json_path = optarg; break;
        case 'q': o->quiet = true; break;
        case 'h': usage(); return 1;
        default: return 2;
        }
    }
    if (optind < argc)
        return ex_bad_option(prog, "argument", argv[optind], "no positional arguments are taken");
    return ex_check_target(prog, &o->target);
}

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void sleep_until(int64_t t_ns)
{
    struct timespec ts = {.tv_sec = t_ns / 1000000000, .tv_nsec = t_ns % 1000000000};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
    }
}

/* An absolute CLOCK_REALTIME deadline `ns_from_now` ahead, for
 * pthread_cond_timedwait. */
static struct timespec realtime_in(int64_t ns_from_now)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t t = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec + ns_from_now;
    ts.tv_sec = t / 1000000000;
    ts.tv_nsec = t % 1000000000;
    return ts;
}

static void put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_u64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static double cpu_seconds(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0)
        return 0;
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

typedef struct fanout fanout;

/* ------------------------------------------------------------ subscribers */

/* A subscriber client: its subscriptions' events all run on its completion
 * thread; `lock` is for the main thread, which reads the counts while they
 * grow. */
typedef struct sub_client {
    momento_client *client;
    pthread_mutex_t lock;
    histogram delivery;       /* receive time - send time, us */
    uint64_t delivered;       /* well-formed items */
    uint64_t malformed;       /* items not of this run's form */
    int64_t last_delivery_ns;
} sub_client;

typedef struct subscriber {
    fanout *app;
    sub_client *sc;
    int index;
    momento_subscription *sub;
    /* Events, counted on the completion thread (under sc->lock). */
    uint64_t items;
    uint64_t connects;
    uint64_t discontinuities;
    uint64_t connection_losses;
    bool ended;
    bool ended_early;         /* an END while the run was still on */
    int end_error;
    char end_message[160];
} subscriber;

/* ------------------------------------------------------------- publishers */

/* One publish in flight: what its callback needs. */
typedef struct publish_slot {
    struct publisher *p;
    int64_t sent_ns;
    struct publish_slot *next_free;
} publish_slot;

typedef struct publisher {
    fanout *app;
    int index;
    pthread_t thread;
    uint64_t planned;         /* publishes it is to make */
    uint8_t *payload;
    publish_slot *slots;
    /* The rest under `lock`: the callbacks run on the publisher client's
     * completion thread. */
    pthread_mutex_t lock;
    pthread_cond_t cond;      /* a slot came free */
    publish_slot *free_slots;
    int in_flight;
    uint64_t attempted;       /* accepted by momento_topic_publish() */
    uint64_t refused;         /* momento_topic_publish() returned an error */
    uint64_t succeeded, failed;
    histogram latency;        /* us */
    int first_error;
    char first_message[160];
} publisher;

struct fanout {
    const options *o;
    ex_target *t;
    momento_client *pub_client;
    sub_client *clients;
    subscriber *subs;
    publisher *pubs;
    /* The first publish's due time; atomic because the subscriptions'
     * callbacks read it (a stray item could arrive before it is set). */
    _Atomic int64_t start_ns;
    int64_t stop_ns;          /* publishers give up what is still to do */
    atomic_bool stopping;     /* unsubscribing: an END is expected now */
};

static void on_event(momento_subscription *sub, const momento_topic_event *ev, void *userdata)
{
    (void)sub;
    subscriber *s = userdata;
    sub_client *sc = s->sc;
    if (ev->kind == MOMENTO_TOPIC_ITEM) {
        int64_t now = now_ns();
        /* An item of this run: the size asked for, bytes, a publisher that
         * exists, sent after the run began and not in the future. */
        bool ok = !ev->is_text && ev->value_len == (size_t)s->app->o->payload;
        int64_t sent = 0;
        if (ok) {
            sent = (int64_t)get_u64(ev->value);
            uint64_t who = get_u64(ev->value + 8);
            int64_t start = atomic_load_explicit(&s->app->start_ns, memory_order_relaxed);
            ok = who < (uint64_t)s->app->o->publishers && start > 0 &&
                 sent >= start - 1000000000LL && sent <= now;
        }
        pthread_mutex_lock(&sc->lock);
        s->items++;
        if (ok) {
            sc->delivered++;
            hist_record(&sc->delivery, (uint64_t)(now - sent) / 1000);
            sc->last_delivery_ns = now;
        } else {
            sc->malformed++;
        }
        pthread_mutex_unlock(&sc->lock);
        return;
    }
    pthread_mutex_lock(&sc->lock);
    switch (ev->kind) {
    case MOMENTO_TOPIC_CONNECTED: s->connects++; break;
    case MOMENTO_TOPIC_DISCONTINUITY:
        s->discontinuities++;
        fprintf(stderr,
                "%s: subscriber %d: discontinuity after #%llu, next #%llu of page %llu "
                "(%s)\n",
                prog,
                s->index, (unsigned long long)ev->last_sequence_number,
                (unsigned long long)ev->new_sequence_number,
                (unsigned long long)ev->new_sequence_page,
                ev->from_server ? "from the server" : "found by the library");
        break;
    case MOMENTO_TOPIC_CONNECTION_LOST:
        s->connection_losses++;
        fprintf(stderr, "%s: subscriber %d: connection lost: %s%s%s\n", prog, s->index,
                momento_error_name(ev->error), *ev->message ? ": " : "", ev->message);
        break;
    case MOMENTO_TOPIC_END:
        s->ended = true;
        s->end_error = ev->error;
        snprintf(s->end_message, sizeof(s->end_message), "%s", ev->message ? ev->message : "");
        /* The END of an unsubscribe at the run's end is expected; any other
         * is an error (momento_topic_subscribe_sync() reports a first
         * stream's failure itself). */
        if (!atomic_load(&s->app->stopping))
            s->ended_early = true;
        break;
    default: break;
    }
    pthread_mutex_unlock(&sc->lock);
}

static void on_published(const momento_result *r, void *userdata)
{
    publish_slot *slot = userdata;
    publisher *p = slot->p;
    int64_t now = now_ns();
    int err = momento_result_error(r);
    pthread_mutex_lock(&p->lock);
    hist_record(&p->latency, (uint64_t)(now - slot->sent_ns) / 1000);
    if (err == MOMENTO_OK) {
        p->succeeded++;
    } else {
        if (p->failed++ == 0) {
            p->first_error = err;
            snprintf(p->first_message, sizeof(p->first_message), "%s", momento_result_message(r));
        }
    }
    slot->next_free = p->free_slots;
    p->free_slots = slot;
    p->in_flight--;
    pthread_cond_signal(&p->cond);
    pthread_mutex_unlock(&p->lock);
}

/* A publisher's thread: publish k of every publisher is due at
 * start + (k * P + index) / rate, so the publishers together keep an even
 * pace. A publish waits for a free slot when --in-flight are outstanding;
 * what is not sent by stop_ns is given up (the report's "not sent"). */
static void *publisher_main(void *arg)
{
    publisher *p = arg;
    fanout *a = p->app;
    const options *o = a->o;
    double step_ns = 1e9 / o->rate;
    for (uint64_t k = 0; k < p->planned; k++) {
        uint64_t slot_no = k * (uint64_t)o->publishers + (uint64_t)p->index;
        int64_t due = a->start_ns + (int64_t)((double)slot_no * step_ns);
        if (due >= a->stop_ns)
            break;
        sleep_until(due);
        pthread_mutex_lock(&p->lock);
        while (!p->free_slots && now_ns() < a->stop_ns) {
            struct timespec until = realtime_in(10 * 1000000LL);
            pthread_cond_timedwait(&p->cond, &p->lock, &until);
        }
        publish_slot *slot = p->free_slots;
        if (slot) {
            p->free_slots = slot->next_free;
            p->in_flight++;
        }
        pthread_mutex_unlock(&p->lock);
        if (!slot)
            break;
        slot->sent_ns = now_ns();
        put_u64(p->payload, (uint64_t)slot->sent_ns);
        /* The value is copied before the call returns: the buffer is
         * reused for the next publish. */
        int rc = momento_topic_publish(a->pub_client, o->cache, o->topic, p->payload,
                                       (size_t)o->payload, NULL, on_published, slot);
        pthread_mutex_lock(&p->lock);
        if (rc == MOMENTO_OK) {
            p->attempted++;
        } else {
            /* Refused: no callback will come. */
            if (p->refused++ == 0 && p->failed == 0) {
                p->first_error = rc;
                snprintf(p->first_message, sizeof(p->first_message), "refused at submit");
            }
            slot->next_free = p->free_slots;
            p->free_slots = slot;
            p->in_flight--;
        }
        pthread_mutex_unlock(&p->lock);
    }
    return NULL;
}

/* ------------------------------------------------------------------ run */

static int fail(const char *what, int rc, momento_result *r)
{
    const char *msg = r ? momento_result_message(r) : "";
    fprintf(stderr, "%s: %s failed: %s (%s)%s%s\n", prog, what, momento_error_name(rc),
            momento_strerror(rc), *msg ? ": " : "", msg);
    momento_result_free(r);
    return 1;
}

typedef struct report {
    uint64_t planned, attempted, refused, succeeded, failed, not_sent;
    int first_error;
    char first_message[160];
    histogram publish, delivery;
    uint64_t expected, delivered, malformed, lost, extra;
    uint64_t discontinuities, connection_losses, reconnects, duplicates_dropped;
    uint64_t ended_early, connects;
    uint64_t stats_mismatches;      /* subscriptions whose library stats disagree with the events */
    double publish_s;               /* first due publish to the last publish's callback */
    double delivery_s;              /* first due publish to the last delivery */
    double wall_s;
    double client_cpu_s, server_cpu_s;
    bool server_known;
    bool still_arriving;            /* counting stopped with deliveries still coming */
    bool silent_loss;
} report;

static uint64_t delivered_now(fanout *a)
{
    uint64_t n = 0;
    for (int i = 0; i < a->o->clients; i++) {
        pthread_mutex_lock(&a->clients[i].lock);
        n += a->clients[i].delivered + a->clients[i].malformed;
        pthread_mutex_unlock(&a->clients[i].lock);
    }
    return n;
}

static uint64_t published_now(fanout *a, int *in_flight)
{
    uint64_t n = 0;
    *in_flight = 0;
    for (int i = 0; i < a->o->publishers; i++) {
        pthread_mutex_lock(&a->pubs[i].lock);
        n += a->pubs[i].succeeded;
        *in_flight += a->pubs[i].in_flight;
        pthread_mutex_unlock(&a->pubs[i].lock);
    }
    return n;
}

static int subscribe_all(fanout *a)
{
    const options *o = a->o;
    momento_subscribe_options so = MOMENTO_SUBSCRIBE_OPTIONS_INIT;
    if (o->own_streams)
        so.flags |= MOMENTO_SUBSCRIBE_OWN_STREAM;
    int64_t t0 = now_ns();
    for (int i = 0; i < o->subscribers; i++) {
        subscriber *s = &a->subs[i];
        int rc = momento_topic_subscribe_sync(s->sc->client, o->cache, o->topic, &so, on_event, s,
                                              &s->sub);
        if (rc != MOMENTO_OK) {
            fprintf(stderr, "%s: subscriber %d: subscribe failed: %s (%s)%s%s\n", prog, i,
                    momento_error_name(rc), momento_strerror(rc), *s->end_message ? ": " : "",
                    s->end_message);
            return 1;
        }
    }
    printf("subscribed: %d subscriptions on %d client%s in %.3f s\n", o->subscribers, o->clients,
           o->clients == 1 ? "" : "s", (double)(now_ns() - t0) / 1e9);
    return 0;
}

/* Publishes for --duration, printing progress each second; then waits for
 * the last publish callbacks and for the deliveries on their way. */
static int publish_and_drain(fanout *a, report *rep)
{
    const options *o = a->o;
    uint64_t total = (uint64_t)(o->rate * o->duration_s + 0.5);
    if (total == 0)
        total = 1;
    a->start_ns = now_ns() + 20 * 1000000LL;
    /* A publisher that falls behind (its publishes slow to come back) gets
     * a second beyond the schedule, then gives up the rest. */
    a->stop_ns = a->start_ns + (int64_t)(o->duration_s * 1e9) + 1000000000LL;
    double cpu0 = cpu_seconds();
    double srv0 = a->t->local ? momento_local_cpu_seconds(a->t->local) : 0;
    int started = 0;
    for (int i = 0; i < o->publishers; i++) {
        publisher *p = &a->pubs[i];
        uint64_t np = (uint64_t)o->publishers;
        p->planned = total / np + ((uint64_t)i < total % np);
        if (pthread_create(&p->thread, NULL, publisher_main, p) != 0) {
            fprintf(stderr, "%s: cannot start publisher thread %d\n", prog, i);
            a->stop_ns = 0; /* the started ones stop at once */
            break;
        }
        started++;
    }
    /* Progress, once a second, until the schedule is over. */
    int64_t sched_end = a->start_ns + (int64_t)(o->duration_s * 1e9);
    uint64_t last_pub = 0, last_del = 0;
    for (int64_t tick = a->start_ns + 1000000000LL; started == o->publishers && tick <= sched_end;
         tick += 1000000000LL) {
        sleep_until(tick);
        int inf;
        uint64_t pub = published_now(a, &inf), del = delivered_now(a);
        if (!o->quiet)
            printf("  %4.0f s: published %llu/s, delivered %llu/s, %d publishes in flight\n",
                   (double)(tick - a->start_ns) / 1e9, (unsigned long long)(pub - last_pub),
                   (unsigned long long)(del - last_del), inf);
        last_pub = pub;
        last_del = del;
    }
    for (int i = 0; i < started; i++)
        pthread_join(a->pubs[i].thread, NULL);
    /* Every accepted publish calls back, at the latest at its deadline:
     * wait for them (bounded all the same). */
    int64_t give_up = now_ns() + 60 * 1000000000LL;
    int in_flight;
    for (;;) {
        published_now(a, &in_flight);
        if (in_flight == 0 || now_ns() > give_up)
            break;
        sleep_until(now_ns() + 1000000);
    }
    int64_t published_at = now_ns();
    uint64_t succeeded = published_now(a, &in_flight);
    uint64_t expected = succeeded * (uint64_t)o->subscribers;
    uint64_t seen = delivered_now(a);
    int64_t progress_at = published_at;
    while (seen < expected) {
        int64_t now = now_ns();
        if (now - progress_at > DRAIN_IDLE_NS)
            break;
        if (now - published_at > DRAIN_MAX_NS) {
            rep->still_arriving = true;
            break;
        }
        sleep_until(now + 2000000);
        uint64_t n = delivered_now(a);
        if (n != seen)
            progress_at = now_ns();
        seen = n;
    }
    int64_t end = now_ns();

    double srv1 = a->t->local ? momento_local_cpu_seconds(a->t->local) : 0;
    rep->server_known = a->t->local != NULL;
    rep->server_cpu_s = srv1 - srv0;
    rep->client_cpu_s = cpu_seconds() - cpu0 - rep->server_cpu_s;
    rep->publish_s = (double)(published_at - a->start_ns) / 1e9;
    rep->wall_s = (double)(end - a->start_ns) / 1e9;
    if (in_flight) {
        fprintf(stderr, "%s: %d publishes never called back (a library bug)\n", prog, in_flight);
        return 1;
    }
    return started == o->publishers ? 0 : 1;
}

static void collect(fanout *a, report *rep)
{
    const options *o = a->o;
    hist_init(&rep->publish);
    hist_init(&rep->delivery);
    rep->first_error = MOMENTO_OK;
    for (int i = 0; i < o->publishers; i++) {
        publisher *p = &a->pubs[i];
        pthread_mutex_lock(&p->lock);
        rep->planned += p->planned;
        rep->attempted += p->attempted;
        rep->refused += p->refused;
        rep->succeeded += p->succeeded;
        rep->failed += p->failed;
        hist_merge(&rep->publish, &p->latency);
        if (rep->first_error == MOMENTO_OK && p->first_error != MOMENTO_OK) {
            rep->first_error = p->first_error;
            snprintf(rep->first_message, sizeof(rep->first_message), "%s", p->first_message);
        }
        pthread_mutex_unlock(&p->lock);
    }
    rep->not_sent = rep->planned - rep->attempted - rep->refused;
    int64_t last = a->start_ns;
    for (int i = 0; i < o->clients; i++) {
        sub_client *sc = &a->clients[i];
        pthread_mutex_lock(&sc->lock);
        rep->delivered += sc->delivered;
        rep->malformed += sc->malformed;
        hist_merge(&rep->delivery, &sc->delivery);
        if (sc->last_delivery_ns > last)
            last = sc->last_delivery_ns;
        pthread_mutex_unlock(&sc->lock);
    }
    rep->delivery_s = (double)(last - a->start_ns) / 1e9;
    rep->expected = rep->succeeded * (uint64_t)o->subscribers;
    rep->lost = rep->delivered < rep->expected ? rep->expected - rep->delivered : 0;
    rep->extra = rep->delivered > rep->expected ? rep->delivered - rep->expected : 0;
    /* With every item in, nothing more arrives while the counters are
     * compared below; otherwise an item on its way could make them differ
     * for a moment, so they are compared only then. */
    bool quiescent = rep->lost == 0 && rep->extra == 0 && rep->malformed == 0;
    for (int i = 0; i < o->subscribers; i++) {
        subscriber *s = &a->subs[i];
        momento_subscription_stats st;
        memset(&st, 0, sizeof(st));
        int rc = momento_subscription_stats_get(s->sub, &st, sizeof(st));
        pthread_mutex_lock(&s->sc->lock);
        rep->discontinuities += s->discontinuities;
        rep->connection_losses += s->connection_losses;
        rep->connects += s->connects;
        rep->ended_early += s->ended_early;
        if (rc == MOMENTO_OK) {
            rep->reconnects += st.reconnects;
            rep->duplicates_dropped += st.duplicates_dropped;
            /* The library's counters and the events this program saw must
             * agree; a difference is reported, not smoothed over. */
            if (quiescent && (st.items != s->items || st.discontinuities != s->discontinuities ||
                              st.connection_losses != s->connection_losses)) {
                if (rep->stats_mismatches++ == 0)
                    fprintf(stderr,
                            "%s: subscriber %d: library stats (items %llu, discontinuities %llu, "
                            "connection losses %llu) differ from the events seen "
                            "(%llu, %llu, %llu)\n",
                            prog, i, (unsigned long long)st.items,
                            (unsigned long long)st.discontinuities,
                            (unsigned long long)st.connection_losses, (unsigned long long)s->items,
                            (unsigned long long)s->discontinuities,
                            (unsigned long long)s->connection_losses);
            }
        } else {
            rep->stats_mismatches++;
            fprintf(stderr, "%s: subscriber %d: momento_subscription_stats_get: %s\n", prog, i,
                    momento_error_name(rc));
        }
        if (s->ended_early)
            fprintf(stderr, "%s: subscriber %d ended before the run did: %s%s%s\n", prog, i,
                    momento_error_name(s->end_error), *s->end_message ? ": " : "", s->end_message);
        pthread_mutex_unlock(&s->sc->lock);
    }
    /* Missing items that nothing explains: no discontinuity, no broken
     * stream, and the deliveries had stopped coming. */
    rep->silent_loss = rep->lost > 0 && rep->discontinuities == 0 &&
                       rep->connection_losses == 0 && !rep->still_arriving;
}

static double ms(uint64_t us) { return (double)us / 1000.0; }

static double per_s(uint64_t n, double s) { return s > 0 ? (double)n / s : 0; }

static double us_per(double cpu_s, uint64_t n) { return n ? cpu_s * 1e6 / (double)n : 0; }

static void print_hist(const char *name, const histogram *h)
{
    /* p99 and p999 only where there are enough samples to tell them from
     * the maximum ("-" otherwise; the JSON has them all). */
    char p99[32], p999[32];
    printf("%s (ms): p50 %.3f  p90 %.3f  p99 %s  p999 %s  max %.3f  (%llu samples)\n", name,
           ms(hist_quantile(h, 0.5)), ms(hist_quantile(h, 0.9)),
           hist_quantile_str(h, 0.99, 1000, p99, sizeof(p99)),
           hist_quantile_str(h, 0.999, 1000, p999, sizeof(p999)), ms(h->count ? h->max : 0),
           (unsigned long long)h->count);
}

static void print_report(const options *o, const report *r)
{
    printf("publishes: %llu planned, %llu attempted, %llu succeeded, %llu failed",
           (unsigned long long)r->planned, (unsigned long long)r->attempted,
           (unsigned long long)r->succeeded, (unsigned long long)r->failed);
    if (r->refused)
        printf(", %llu refused at submit", (unsigned long long)r->refused);
    if (r->not_sent)
        printf(", %llu not sent (behind schedule)", (unsigned long long)r->not_sent);
    printf("; %.0f/s\n", per_s(r->succeeded, r->publish_s));
    if (r->first_error != MOMENTO_OK)
        printf("  first publish error: %s%s%s\n", momento_error_name(r->first_error),
               *r->first_message ? ": " : "", r->first_message);
    print_hist("publish latency", &r->publish);
    printf("delivered %llu of %llu expected (%llu publishes x %d subscribers), lost %llu",
           (unsigned long long)r->delivered, (unsigned long long)r->expected,
           (unsigned long long)r->succeeded, o->subscribers, (unsigned long long)r->lost);
    if (r->extra)
        printf(", %llu more than expected", (unsigned long long)r->extra);
    if (r->malformed)
        printf(", %llu malformed", (unsigned long long)r->malformed);
    printf("; %.0f deliveries/s\n", per_s(r->delivered, r->delivery_s));
    if (r->still_arriving)
        printf("  deliveries were still arriving %.0f s after the last publish: a backlog, counted "
               "as lost\n",
               DRAIN_MAX_NS / 1e9);
    print_hist("delivery latency", &r->delivery);
    printf("subscriptions: %llu discontinuities, %llu connection losses, %llu reconnects, "
           "%llu duplicates dropped, %llu ended early\n",
           (unsigned long long)r->discontinuities, (unsigned long long)r->connection_losses,
           (unsigned long long)r->reconnects, (unsigned long long)r->duplicates_dropped,
           (unsigned long long)r->ended_early);
    printf("CPU: client %.2f s (%.2f us per delivery)", r->client_cpu_s,
           us_per(r->client_cpu_s, r->delivered));
    if (r->server_known)
        printf(", server %.2f s (%.2f us per delivery)", r->server_cpu_s,
               us_per(r->server_cpu_s, r->delivered));
    printf(" over %.2f s\n", r->wall_s);
    if (r->silent_loss)
        printf("LOST IN SILENCE: %llu deliveries missing with no discontinuity or connection loss "
               "reported\n",
               (unsigned long long)r->lost);
}

static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fprintf(f, "\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            fprintf(f, "\\u%04x", *s);
        else
            fputc(*s, f);
    }
    fputc('"', f);
}

static void json_hist(FILE *f, const char *name, const histogram *h)
{
    fprintf(f,
            "  \"%s\": {\"count\": %llu, \"p50\": %.3f, \"p90\": %.3f, \"p99\": %.3f, "
            "\"p999\": %.3f, \"max\": %.3f},\n",
            name, (unsigned long long)h->count, ms(hist_quantile(h, 0.5)),
            ms(hist_quantile(h, 0.9)), ms(hist_quantile(h, 0.99)), ms(hist_quantile(h, 0.999)),
            ms(h->count ? h->max : 0));
}

static int write_json(const char *path, const options *o, const report *r, bool ok)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "%s: cannot write %s\n", prog, path);
        return 1;
    }
    fprintf(f, "{\n  \"config\": {\"endpoint\": ");
    if (o->target.endpoint)
        json_string(f, o->target.endpoint);
    else
        fprintf(f, "null");
    fprintf(f, ", \"cache\": ");
    json_string(f, o->cache);
    fprintf(f, ", \"topic\": ");
    json_string(f, o->topic);
    fprintf(f,
            ", \"publishers\": %d, \"subscribers\": %d, \"clients\": %d, \"rate\": %d, "
            "\"payload_bytes\": %d, \"in_flight\": %d, \"duration_s\": %.3f, "
            "\"own_streams\": %s},\n",
            o->publishers, o->subscribers, o->clients, o->rate, o->payload, o->in_flight,
            o->duration_s, o->own_streams ? "true" : "false");
    fprintf(f,
            "  \"publishes\": {\"planned\": %llu, \"attempted\": %llu, \"succeeded\": %llu, "
            "\"failed\": %llu, \"refused\": %llu, \"not_sent\": %llu, \"per_sec\": %.1f, "
            "\"first_error\": ",
            (unsigned long long)r->planned, (unsigned long long)r->attempted,
            (unsigned long long)r->succeeded, (unsigned long long)r->failed,
            (unsigned long long)r->refused, (unsigned long long)r->not_sent,
            per_s(r->succeeded, r->publish_s));
    if (r->first_error != MOMENTO_OK)
        json_string(f, momento_error_name(r->first_error));
    else
        fprintf(f, "null");
    fprintf(f, "},\n");
    json_hist(f, "publish_latency_ms", &r->publish);
    json_hist(f, "delivery_latency_ms", &r->delivery);
    fprintf(f,
            "  \"expected\": %llu,\n  \"delivered\": %llu,\n  \"lost\": %llu,\n  \"extra\": %llu,\n"
            "  \"malformed\": %llu,\n  \"deliveries_per_sec\": %.1f,\n"
            "  \"discontinuities\": %llu,\n  \"connection_losses\": %llu,\n"
            "  \"reconnects\": %llu,\n  \"duplicates_dropped\": %llu,\n"
            "  \"ended_early\": %llu,\n  \"stats_mismatches\": %llu,\n"
            "  \"still_arriving\": %s,\n  \"silent_loss\": %s,\n",
            (unsigned long long)r->expected, (unsigned long long)r->delivered,
            (unsigned long long)r->lost, (unsigned long long)r->extra,
            (unsigned long long)r->malformed, per_s(r->delivered, r->delivery_s),
            (unsigned long long)r->discontinuities, (unsigned long long)r->connection_losses,
            (unsigned long long)r->reconnects, (unsigned long long)r->duplicates_dropped,
            (unsigned long long)r->ended_early, (unsigned long long)r->stats_mismatches,
            r->still_arriving ? "true" : "false", r->silent_loss ? "true" : "false");
    fprintf(f, "  \"client_cpu_s\": %.3f,\n  \"client_cpu_us_per_delivery\": %.3f,\n",
            r->client_cpu_s, us_per(r->client_cpu_s, r->delivered));
    if (r->server_known)
        fprintf(f, "  \"server_cpu_s\": %.3f,\n  \"server_cpu_us_per_delivery\": %.3f,\n",
                r->server_cpu_s, us_per(r->server_cpu_s, r->delivered));
    else
        fprintf(f, "  \"server_cpu_s\": null,\n  \"server_cpu_us_per_delivery\": null,\n");
    fprintf(f, "  \"publish_s\": %.3f,\n  \"wall_s\": %.3f,\n  \"ok\": %s\n}\n", r->publish_s,
            r->wall_s, ok ? "true" : "false");
    if (fclose(f) != 0) {
        fprintf(stderr, "%s: cannot write %s\n", prog, path);
        return 1;
    }
    return 0;
}

static int ensure_cache(momento_client *c, const char *cache)
{
    momento_result *r;
    int rc = momento_create_cache_sync(c, cache, NULL, &r);
    if (rc != MOMENTO_OK)
        return fail("create_cache", rc, r);
    momento_result_free(r);
    return 0;
}

/* One publish to another topic, so the publishers' first measured publish
 * does not carry the connection's set-up; nobody subscribes to it. */
static int warm_up(fanout *a)
{
    momento_result *r;
    char topic[64];
    snprintf(topic, sizeof(topic), "%s-warm-up", prog);
    int rc = momento_topic_publish_sync(a->pub_client, a->o->cache, topic, "x", 1, NULL, &r);
    if (rc != MOMENTO_OK)
        return fail("warm-up publish", rc, r);
    momento_result_free(r);
    return 0;
}

static int run(fanout *a, report *rep)
{
    const options *o = a->o;
    int rc = ex_target_client_new(a->t, &a->pub_client);
    if (rc != MOMENTO_OK)
        return fail("client_new", rc, NULL);
    for (int i = 0; i < o->clients; i++) {
        rc = ex_target_client_new(a->t, &a->clients[i].client);
        if (rc != MOMENTO_OK)
            return fail("client_new", rc, NULL);
    }
    if (ensure_cache(a->pub_client, o->cache) || warm_up(a) || subscribe_all(a))
        return 1;
    int status = publish_and_drain(a, rep);
    collect(a, rep);
    return status;
}

static int setup(fanout *a, const options *o)
{
    a->clients = calloc((size_t)o->clients, sizeof(*a->clients));
    a->subs = calloc((size_t)o->subscribers, sizeof(*a->subs));
    a->pubs = calloc((size_t)o->publishers, sizeof(*a->pubs));
    if (!a->clients || !a->subs || !a->pubs)
        return -1;
    for (int i = 0; i < o->clients; i++) {
        pthread_mutex_init(&a->clients[i].lock, NULL);
        hist_init(&a->clients[i].delivery);
    }
    for (int i = 0; i < o->subscribers; i++)
        a->subs[i] = (subscriber){.app = a, .sc = &a->clients[i % o->clients], .index = i};
    for (int i = 0; i < o->publishers; i++) {
        publisher *p = &a->pubs[i];
        p->app = a;
        p->index = i;
        p->first_error = MOMENTO_OK;
        pthread_mutex_init(&p->lock, NULL);
        pthread_cond_init(&p->cond, NULL);
        hist_init(&p->latency);
        p->payload = malloc((size_t)o->payload);
        p->slots = calloc((size_t)o->in_flight, sizeof(*p->slots));
        if (!p->payload || !p->slots)
            return -1;
        memset(p->payload, 'x', (size_t)o->payload);
        put_u64(p->payload + 8, (uint64_t)i);
        for (int k = 0; k < o->in_flight; k++) {
            p->slots[k].p = p;
            p->slots[k].next_free = p->free_slots;
            p->free_slots = &p->slots[k];
        }
    }
    return 0;
}

/* How long teardown waits for the END events of the unsubscribes. */
#define END_WAIT_NS (5 * 1000000000LL)

/* Ends the run: unsubscribes everyone (the END events are expected now,
 * with error 0), waits for those ENDs, frees the clients - each after its
 * last callback, so the structures the callbacks write to outlive them -
 * and only then gives up the subscription references. Freeing a
 * subscription right after unsubscribing it, while its stream is being
 * cancelled on the completion thread, crashed the library intermittently
 * (a race between momento_topic_unsubscribe() and the subscription's end,
 * reported with the topics work); a subscription that has ended is freed
 * without touching its client. Returns how many subscriptions sent no END
 * in time or one with an error. */
static int teardown(fanout *a, const options *o)
{
    int missing = 0;
    atomic_store(&a->stopping, true);
    for (int i = 0; a->subs && i < o->subscribers; i++)
        momento_topic_unsubscribe(a->subs[i].sub);
    int64_t give_up = now_ns() + END_WAIT_NS;
    for (int i = 0; a->subs && i < o->subscribers; i++) {
        subscriber *s = &a->subs[i];
        if (!s->sub)
            continue;
        for (;;) {
            pthread_mutex_lock(&s->sc->lock);
            bool ended = s->ended;
            pthread_mutex_unlock(&s->sc->lock);
            if (ended) {
                /* An unsubscribe's END carries error 0. */
                if (s->end_error != MOMENTO_OK && !s->ended_early) {
                    fprintf(stderr, "%s: subscriber %d: END after unsubscribing: %s%s%s\n", prog,
                            i, momento_error_name(s->end_error), *s->end_message ? ": " : "",
                            s->end_message);
                    missing++;
                }
                break;
            }
            if (now_ns() > give_up) {
                missing++;
                break;
            }
            sleep_until(now_ns() + 1000000);
        }
    }
    if (missing)
        fprintf(stderr, "%s: %d subscriptions sent no END within %.0f s of unsubscribing\n", prog,
                missing, END_WAIT_NS / 1e9);
    for (int i = 0; a->clients && i < o->clients; i++)
        momento_client_free(a->clients[i].client);
    momento_client_free(a->pub_client);
    for (int i = 0; a->subs && i < o->subscribers; i++)
        momento_subscription_free(a->subs[i].sub);
    for (int i = 0; a->clients && i < o->clients; i++)
        pthread_mutex_destroy(&a->clients[i].lock);
    for (int i = 0; a->pubs && i < o->publishers; i++) {
        pthread_mutex_destroy(&a->pubs[i].lock);
        pthread_cond_destroy(&a->pubs[i].cond);
        free(a->pubs[i].payload);
        free(a->pubs[i].slots);
    }
    free(a->clients);
    free(a->subs);
    free(a->pubs);
    return missing;
}

int main(int argc, char **argv)
{
    options o;
    int rc = parse_options(argc, argv, &o);
    if (rc)
        return rc == 1 ? 0 : rc;

    ex_target t;
    if (ex_target_open(&t, prog, &o.target) != MOMENTO_OK)
        return 1;
    printf("%s: target %s; %d publisher%s, %d subscriber%s on %d client%s, %d messages/s for "
           "%.1f s, %d-byte messages, topic '%s'\n",
           prog, t.description, o.publishers, o.publishers == 1 ? "" : "s", o.subscribers,
           o.subscribers == 1 ? "" : "s", o.clients, o.clients == 1 ? "" : "s", o.rate,
           o.duration_s, o.payload, o.topic);

    fanout a;
    memset(&a, 0, sizeof(a));
    a.o = &o;
    a.t = &t;
    atomic_init(&a.stopping, false);
    report rep;
    memset(&rep, 0, sizeof(rep));
    int status;
    if (setup(&a, &o) != 0) {
        fprintf(stderr, "%s: out of memory\n", prog);
        status = 1;
    } else {
        status = run(&a, &rep);
    }
    /* run() filled the report only once publishing began. */
    bool reported = rep.planned > 0;
    int no_end = teardown(&a, &o);
    ex_target_close(&t);
    if (!reported)
        return 1;

    print_report(&o, &rep);
    bool ok = status == 0 && no_end == 0 && rep.failed == 0 && rep.refused == 0 &&
              !rep.silent_loss && rep.malformed == 0 && rep.ended_early == 0 &&
              rep.stats_mismatches == 0;
    if (o.json_path && write_json(o.json_path, &o, &rep, ok))
        return 1;
    return ok ? 0 : 1;
}
