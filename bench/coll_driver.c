/* Driver for bench/collections.sh: fills one collection of `--size`
 * elements, then runs `--ops` operations of one kind on it with
 * `--in-flight` requests in flight (each slot sends its next request from
 * the callback of the last) and checks every answer. The fill and the
 * choice of elements depend only on the size and the operation's number.
 *
 *   coll_driver --endpoint HOST:PORT --op OP [--size 1000] [--ops 1000]
 *               [--in-flight 10] [--phases N,N,... --dump-pid PID]
 *
 * With --phases (instead of --ops) the operations run in phases of the
 * given counts, one after the other, and the driver has callgrind dump the
 * server's counters (`callgrind_control -d PID`, PID the server under
 * callgrind) after the fill and after each phase, once the phase's last
 * answer came: each dump then holds one phase, the fill and start-up
 * kept out of them.
 *
 * The collection is "coll" in cache "bench". Elements are "e" and seven
 * digits, i = 0..size-1: a dictionary's fields (each with a 16-byte value),
 * a set's elements, a list's values in order, a sorted set's values with
 * score i. Every operation names, or returns, a fixed number of elements:
 *
 *   dictionary_get_field      one existing field
 *   dictionary_set_field      a new value for one existing field
 *   dictionary_get_fields     10 existing fields
 *   dictionary_length
 *   set_contains              one existing element
 *   set_add_remove            add a new element, then remove it (one op)
 *   set_sample                10 elements
 *   set_length
 *   list_push_pop             push_front, then pop_back (one op)
 *   list_fetch                the slice [size/2, size/2 + 10)
 *   list_length
 *   sorted_set_put            an existing element to a new score elsewhere
 *                             in the order (it moves)
 *   sorted_set_fetch_by_rank  ranks [size/2, size/2 + 10)
 *   sorted_set_fetch_by_score scores [size/2, size/2 + 9]: 10 elements
 *   sorted_set_get_rank       one existing element
 *   sorted_set_length_by_score scores [size/4, 3*size/4]
 *   sorted_set_increment      one existing element by size/2 + 0.5 (it moves)
 *
 * Prints one line of key=value results; exits 1 if any request failed or
 * answered other than expected. Loopback only: the endpoint must be
 * 127.0.0.1, localhost or [::1]. */
#include "momento/collections.h"
#include "momento/momento.h"

#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#define CACHE "bench"
#define NAME "coll"
#define NAME_LEN 4
#define ELEM_LEN 8   /* "e" + 7 digits */
#define VALUE_LEN 16 /* a dictionary field's value */
#define WINDOW 10    /* elements a multi-element op names or returns */
#define FILL_CHUNK 1000
#define MAX_PHASES 8

enum fam { F_DICT, F_SET, F_LIST, F_ZSET };

enum op {
    DICT_GET_FIELD,
    DICT_SET_FIELD,
    DICT_GET_FIELDS,
    DICT_LENGTH,
    SET_CONTAINS,
    SET_ADD_REMOVE,
    SET_SAMPLE,
    SET_LENGTH,
    LIST_PUSH_POP,
    LIST_FETCH,
    LIST_LENGTH,
    ZSET_PUT,
    ZSET_FETCH_BY_RANK,
    ZSET_FETCH_BY_SCORE,
    ZSET_GET_RANK,
    ZSET_LENGTH_BY_SCORE,
    ZSET_INCREMENT,
    OP_COUNT
};

static const struct {
    const char *name;
    enum fam fam;
    bool pair; /* two requests per op */
} ops[OP_COUNT] = {
    [DICT_GET_FIELD] = {"dictionary_get_field", F_DICT, false},
    [DICT_SET_FIELD] = {"dictionary_set_field", F_DICT, false},
    [DICT_GET_FIELDS] = {"dictionary_get_fields", F_DICT, false},
    [DICT_LENGTH] = {"dictionary_length", F_DICT, false},
    [SET_CONTAINS] = {"set_contains", F_SET, false},
    [SET_ADD_REMOVE] = {"set_add_remove", F_SET, true},
    [SET_SAMPLE] = {"set_sample", F_SET, false},
    [SET_LENGTH] = {"set_length", F_SET, false},
    [LIST_PUSH_POP] = {"list_push_pop", F_LIST, true},
    [LIST_FETCH] = {"list_fetch", F_LIST, false},
    [LIST_LENGTH] = {"list_length", F_LIST, false},
    [ZSET_PUT] = {"sorted_set_put", F_ZSET, false},
    [ZSET_FETCH_BY_RANK] = {"sorted_set_fetch_by_rank", F_ZSET, false},
    [ZSET_FETCH_BY_SCORE] = {"sorted_set_fetch_by_score", F_ZSET, false},
    [ZSET_GET_RANK] = {"sorted_set_get_rank", F_ZSET, false},
    [ZSET_LENGTH_BY_SCORE] = {"sorted_set_length_by_score", F_ZSET, false},
    [ZSET_INCREMENT] = {"sorted_set_increment", F_ZSET, false},
};

static const momento_collection_ttl ttl = {3600000, 1};

typedef struct driver {
    momento_client *client;
    enum op op;
    uint32_t size;
    uint64_t ops;              /* the end of the current phase */
    atomic_uint_fast64_t next; /* ops handed out so far */
    atomic_uint_fast64_t done, failed, requests;
    atomic_int active;
    pthread_mutex_t lock;
    pthread_cond_t idle;
} driver;

typedef struct slot {
    driver *d;
    uint64_t k;     /* the op in progress */
    int phase;      /* 0, or 1 for the second request of a pair */
    char buf[WINDOW][ELEM_LEN + 1];
    const void *items[WINDOW];
    size_t lens[WINDOW];
} slot;

static char value16[VALUE_LEN];

static void elem(char *out, char prefix, uint64_t i)
{
    snprintf(out, ELEM_LEN + 1, "%c%07llu", prefix, (unsigned long long)(i % 10000000));
}

/* splitmix64: the op's pseudo-random element, the same in every run. */
static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15u;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
    return x ^ (x >> 31);
}

static void on_result(const momento_result *r, void *ud);

static void retire(driver *d)
{
    if (atomic_fetch_sub(&d->active, 1) == 1) {
        pthread_mutex_lock(&d->lock);
        pthread_cond_signal(&d->idle);
        pthread_mutex_unlock(&d->lock);
    }
}

/* Sends the slot's request for op s->k, phase s->phase. */
static int send_request(slot *s)
{
    driver *d = s->d;
    momento_client *c = d->client;
    uint64_t k = s->k;
    uint32_t n = d->size;
    uint64_t j = mix(k) % n; /* an existing element */
    char *e = s->buf[0];
    elem(e, 'e', j);
    switch (d->op) {
    case DICT_GET_FIELD:
        return momento_dictionary_get_field(c, CACHE, NAME, NAME_LEN, e, ELEM_LEN, NULL,
                                            on_result, s);
    case DICT_SET_FIELD:
        return momento_dictionary_set_field(c, CACHE, NAME, NAME_LEN, e, ELEM_LEN, value16,
                                            VALUE_LEN, &ttl, NULL, on_result, s);
    case DICT_GET_FIELDS:
        for (int i = 0; i < WINDOW; i++) {
            elem(s->buf[i], 'e', mix(k * WINDOW + (uint64_t)i) % n);
            s->items[i] = s->buf[i];
            s->lens[i] = ELEM_LEN;
        }
        return momento_dictionary_get_fields(c, CACHE, NAME, NAME_LEN, s->items, s->lens, WINDOW,
                                             NULL, on_result, s);
    case DICT_LENGTH:
        return momento_dictionary_length(c, CACHE, NAME, NAME_LEN, NULL, on_result, s);
    case SET_CONTAINS:
        s->items[0] = e;
        s->lens[0] = ELEM_LEN;
        return momento_set_contains_elements(c, CACHE, NAME, NAME_LEN, s->items, s->lens, 1,
                                             NULL, on_result, s);
    case SET_ADD_REMOVE:
        elem(e, 'n', k); /* a new element, distinct per op */
        return s->phase == 0 ? momento_set_add_element(c, CACHE, NAME, NAME_LEN, e, ELEM_LEN,
                                                       &ttl, NULL, on_result, s)
                             : momento_set_remove_element(c, CACHE, NAME, NAME_LEN, e, ELEM_LEN,
                                                          NULL, on_result, s);
    case SET_SAMPLE:
        return momento_set_sample(c, CACHE, NAME, NAME_LEN, WINDOW, NULL, on_result, s);
    case SET_LENGTH:
        return momento_set_length(c, CACHE, NAME, NAME_LEN, NULL, on_result, s);
    case LIST_PUSH_POP:
        elem(e, 'n', k);
        return s->phase == 0 ? momento_list_push_front(c, CACHE, NAME, NAME_LEN, e, ELEM_LEN, 0,
                                                       &ttl, NULL, on_result, s)
                             : momento_list_pop_back(c, CACHE, NAME, NAME_LEN, NULL, on_result, s);
    case LIST_FETCH:
        return momento_list_fetch(c, CACHE, NAME, NAME_LEN, (int32_t)(n / 2),
                                  (int32_t)(n / 2 + WINDOW), NULL, on_result, s);
    case LIST_LENGTH:
        return momento_list_length(c, CACHE, NAME, NAME_LEN, NULL, on_result, s);
    case ZSET_PUT:
        return momento_sorted_set_put_element(c, CACHE, NAME, NAME_LEN, e, ELEM_LEN,
                                              (double)(mix(~k) % n) + 0.5, &ttl, NULL, on_result,
                                              s);
    case ZSET_FETCH_BY_RANK:
        return momento_sorted_set_fetch_by_rank(c, CACHE, NAME, NAME_LEN, (int32_t)(n / 2),
                                                (int32_t)(n / 2 + WINDOW), MOMENTO_ASCENDING, NULL,
                                                on_result, s);
    case ZSET_FETCH_BY_SCORE:
        return momento_sorted_set_fetch_by_score(c, CACHE, NAME, NAME_LEN, (double)(n / 2),
                                                 (double)(n / 2 + WINDOW - 1), MOMENTO_ASCENDING,
                                                 0, 0, NULL, on_result, s);
    case ZSET_GET_RANK:
        return momento_sorted_set_get_rank(c, CACHE, NAME, NAME_LEN, e, ELEM_LEN,
                                           MOMENTO_ASCENDING, NULL, on_result, s);
    case ZSET_LENGTH_BY_SCORE:
        return momento_sorted_set_length_by_score(c, CACHE, NAME, NAME_LEN, (double)(n / 4),
                                                  (double)(3 * (n / 4)), NULL, on_result, s);
    case ZSET_INCREMENT:
        return momento_sorted_set_increment_score(c, CACHE, NAME, NAME_LEN, e, ELEM_LEN,
                                                  (double)(n / 2) + 0.5, &ttl, NULL, on_result, s);
    default:
        return MOMENTO_ERR_INVALID_ARGUMENT;
    }
}

/* Whether the answer is the one expected (the set and list writes of a
 * pair, the others' outcome and element counts). */
static bool expected(const slot *s, const momento_result *r)
{
    const driver *d = s->d;
    uint32_t n = d->size;
    momento_outcome o = momento_result_outcome(r);
    size_t len;
    const void *v;
    char want[ELEM_LEN + 1];
    switch (d->op) {
    case DICT_GET_FIELD:
        v = momento_result_value(r, &len);
        return o == MOMENTO_OUTCOME_HIT && len == VALUE_LEN && memcmp(v, value16, len) == 0;
    case DICT_GET_FIELDS:
        if (o != MOMENTO_OUTCOME_HIT || momento_result_item_count(r) != WINDOW)
            return false;
        for (size_t i = 0; i < WINDOW; i++)
            if (momento_result_outcome(momento_result_item(r, i)) != MOMENTO_OUTCOME_HIT)
                return false;
        return true;
    case DICT_LENGTH:
    case SET_LENGTH:
    case LIST_LENGTH:
        return o == MOMENTO_OUTCOME_HIT && momento_result_int(r) == (int64_t)n;
    case SET_CONTAINS:
        return o == MOMENTO_OUTCOME_HIT && momento_result_exists_count(r) == 1 &&
               momento_result_exists(r, 0) == 1;
    case SET_SAMPLE:
        return o == MOMENTO_OUTCOME_HIT && momento_result_item_count(r) == WINDOW;
    case LIST_PUSH_POP:
        return s->phase == 0 ? o == MOMENTO_OUTCOME_SUCCESS : o == MOMENTO_OUTCOME_HIT;
    case LIST_FETCH:
    case ZSET_FETCH_BY_RANK:
    case ZSET_FETCH_BY_SCORE:
        if (o != MOMENTO_OUTCOME_HIT || momento_result_item_count(r) != WINDOW)
            return false;
        elem(want, 'e', n / 2);
        v = momento_result_value(momento_result_item(r, 0), &len);
        return len == ELEM_LEN && memcmp(v, want, len) == 0;
    case ZSET_GET_RANK:
        return o == MOMENTO_OUTCOME_HIT && momento_result_int(r) == (int64_t)(mix(s->k) % n);
    case ZSET_LENGTH_BY_SCORE:
        return o == MOMENTO_OUTCOME_HIT &&
               momento_result_int(r) == (int64_t)(3 * (n / 4) - n / 4 + 1);
    default: /* the writes */
        return o == MOMENTO_OUTCOME_SUCCESS;
    }
}

/* Starts the slot's next op, or retires it once every op of the phase was
 * handed out. */
static void next_op(slot *s)
{
    driver *d = s->d;
    for (;;) {
        uint64_t k = atomic_fetch_add(&d->next, 1);
        if (k >= d->ops) {
            retire(d);
            return;
        }
        s->k = k;
        s->phase = 0;
        atomic_fetch_add(&d->requests, 1);
        if (send_request(s) == MOMENTO_OK)
            return;
        atomic_fetch_add(&d->failed, 1);
        atomic_fetch_add(&d->done, 1);
    }
}

static void on_result(const momento_result *r, void *ud)
{
    slot *s = ud;
    driver *d = s->d;
    bool ok = expected(s, r);
    if (ok && ops[d->op].pair && s->phase == 0) {
        s->phase = 1;
        atomic_fetch_add(&d->requests, 1);
        if (send_request(s) == MOMENTO_OK)
            return;
        ok = false;
    }
    if (!ok) {
        if (atomic_fetch_add(&d->failed, 1) == 0)
            fprintf(stderr, "coll_driver: op %llu (phase %d): outcome %d, error %d %s\n",
                    (unsigned long long)s->k, s->phase, (int)momento_result_outcome(r),
                    momento_result_error(r),
                    momento_result_message(r) ? momento_result_message(r) : "");
    }
    atomic_fetch_add(&d->done, 1);
    next_op(s);
}

/* The collection, FILL_CHUNK elements per request, the same in every run. */
static int fill(driver *d)
{
    static char names[FILL_CHUNK][ELEM_LEN + 1];
    static const void *items[FILL_CHUNK], *values[FILL_CHUNK];
    static size_t lens[FILL_CHUNK], vlens[FILL_CHUNK];
    static double scores[FILL_CHUNK];
    for (uint32_t first = 0; first < d->size; first += FILL_CHUNK) {
        size_t m = d->size - first < FILL_CHUNK ? d->size - first : FILL_CHUNK;
        for (size_t i = 0; i < m; i++) {
            elem(names[i], 'e', first + i);
            items[i] = names[i];
            lens[i] = ELEM_LEN;
            values[i] = value16;
            vlens[i] = VALUE_LEN;
            scores[i] = (double)(first + i);
        }
        momento_result *r = NULL;
        int rc;
        momento_client *c = d->client;
        switch (ops[d->op].fam) {
        case F_DICT:
            rc = momento_dictionary_set_fields_sync(c, CACHE, NAME, NAME_LEN, items, lens, values,
                                                    vlens, m, &ttl, NULL, &r);
            break;
        case F_SET:
            rc = momento_set_add_elements_sync(c, CACHE, NAME, NAME_LEN, items, lens, m, &ttl,
                                               NULL, &r);
            break;
        case F_LIST:
            rc = momento_list_concatenate_back_sync(c, CACHE, NAME, NAME_LEN, items, lens, m, 0,
                                                    &ttl, NULL, &r);
            break;
        default:
            rc = momento_sorted_set_put_elements_sync(c, CACHE, NAME, NAME_LEN, items, lens,
                                                      scores, m, &ttl, NULL, &r);
            break;
        }
        int err = rc == MOMENTO_OK ? momento_result_error(r) : rc;
        momento_result_free(r);
        if (err != MOMENTO_OK) {
            fprintf(stderr, "coll_driver: filling the collection failed (%d)\n", err);
            return -1;
        }
    }
    return 0;
}

/* Has callgrind, running the server as `pid`, dump its counters so far
 * (and zero them). 0, or -1 when callgrind_control failed. */
static int dump(long pid)
{
    char arg[32];
    snprintf(arg, sizeof(arg), "%ld", pid);
    fflush(stdout);
    pid_t child = fork();
    if (child < 0)
        return -1;
    if (child == 0) {
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0) {
            dup2(null, STDOUT_FILENO);
            dup2(null, STDERR_FILENO);
        }
        execlp("callgrind_control", "callgrind_control", "-d", arg, (char *)NULL);
        _exit(127);
    }
    int status;
    if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "coll_driver: callgrind_control -d %ld failed\n", pid);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *endpoint = NULL, *op = NULL;
    long size = 1000, in_flight = 10;
    unsigned long long nops = 1000;
    unsigned long long phase[MAX_PHASES];
    int phases = 0;
    long dump_pid = 0;
    char *rest;
    static const struct option opts[] = {
        {"endpoint", required_argument, NULL, 'e'}, {"op", required_argument, NULL, 'o'},
        {"size", required_argument, NULL, 's'},     {"ops", required_argument, NULL, 'k'},
        {"in-flight", required_argument, NULL, 'i'}, {"phases", required_argument, NULL, 'p'},
        {"dump-pid", required_argument, NULL, 'd'}, {NULL, 0, NULL, 0},
    };
    int ch;
    while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (ch) {
        case 'e': endpoint = optarg; break;
        case 'o': op = optarg; break;
        case 's': size = atol(optarg); break;
        case 'k': nops = strtoull(optarg, NULL, 10); break;
        case 'i': in_flight = atol(optarg); break;
        case 'd': dump_pid = atol(optarg); break;
        case 'p':
            phases = 0;
            for (rest = optarg; *rest && phases < MAX_PHASES; rest += *rest == ',') {
                phase[phases++] = strtoull(rest, &rest, 10);
                if (*rest && *rest != ',')
                    break;
            }
            if (*rest)
                phases = -1;
            break;
        default: return 2;
        }
    }
    int which = -1;
    for (int i = 0; op && i < OP_COUNT; i++)
        if (strcmp(op, ops[i].name) == 0)
            which = i;
    if (phases == 0)
        phase[phases++] = nops;
    bool phases_ok = phases > 0 && (phases == 1 || dump_pid > 0);
    nops = 0;
    for (int i = 0; phases_ok && i < phases; i++) {
        phases_ok = phase[i] >= 1 && phase[i] <= 1000000;
        nops += phase[i];
    }
    /* Bounded: at most 1 million elements and ops, 100 requests in flight. */
    if (!endpoint || which < 0 || size < 4 * WINDOW || size > 1000000 || !phases_ok ||
        nops > 1000000 || in_flight < 1 || in_flight > 100) {
        fprintf(stderr, "usage: coll_driver --endpoint HOST:PORT --op OP [--size 40..1000000] "
                        "[--ops 1..1000000 | --phases N,N,... (up to %d) --dump-pid PID] "
                        "[--in-flight 1..100]\nOP:", MAX_PHASES);
        for (int i = 0; i < OP_COUNT; i++)
            fprintf(stderr, " %s", ops[i].name);
        fprintf(stderr, "\n");
        return 2;
    }
    if (strncmp(endpoint, "127.", 4) != 0 && strncmp(endpoint, "localhost:", 10) != 0 &&
        strncmp(endpoint, "[::1]:", 6) != 0) {
        fprintf(stderr, "coll_driver: loopback endpoints only\n");
        return 2;
    }
    memset(value16, 'v', sizeof(value16));

    driver d;
    memset(&d, 0, sizeof(d));
    d.op = (enum op)which;
    d.size = (uint32_t)size;
    pthread_mutex_init(&d.lock, NULL);
    pthread_cond_init(&d.idle, NULL);

    momento_credentials *creds;
    momento_config *cfg;
    momento_config_new(&cfg);
    momento_config_set_timeout_ms(cfg, 60000); /* callgrind slows the server ~50x */
    if (momento_credentials_local(&creds, endpoint) != MOMENTO_OK ||
        momento_client_new(&d.client, cfg, creds) != MOMENTO_OK) {
        fprintf(stderr, "coll_driver: cannot make a client for %s\n", endpoint);
        return 1;
    }
    momento_config_free(cfg);
    momento_credentials_free(creds);

    if (fill(&d) != 0)
        return 1;

    slot *slots = calloc((size_t)in_flight, sizeof(*slots));
    if (!slots)
        return 1;
    if (dump_pid > 0 && dump(dump_pid) != 0)
        return 1;
    for (int p = 0; p < phases; p++) {
        /* Every slot retired: no callback runs while the phase is set up. */
        atomic_store(&d.next, d.ops);
        d.ops += phase[p];
        atomic_store(&d.active, (int)in_flight);
        for (long i = 0; i < in_flight; i++) {
            slots[i].d = &d;
            next_op(&slots[i]);
        }
        pthread_mutex_lock(&d.lock);
        while (atomic_load(&d.active) > 0)
            pthread_cond_wait(&d.idle, &d.lock);
        pthread_mutex_unlock(&d.lock);
        if (dump_pid > 0 && dump(dump_pid) != 0)
            return 1;
    }

    unsigned long long failed = atomic_load(&d.failed);
    printf("op=%s size=%ld ops=%llu requests=%llu done=%llu failed=%llu\n", ops[d.op].name, size,
           nops, (unsigned long long)atomic_load(&d.requests),
           (unsigned long long)atomic_load(&d.done), failed);
    momento_client_free(d.client);
    free(slots);
    return failed || atomic_load(&d.done) != nops ? 1 : 0;
}
