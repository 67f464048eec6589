/* session-store: web sessions in Momento dictionaries, one per session.
 *
 * Each session is a dictionary under the key "session:N" with the fields a
 * web application keeps: user, cart, last_seen, and a page_views counter.
 * The program creates --sessions sessions, reads one field and several,
 * counts page views, fetches a whole session, removes a field, shows what
 * a write does to the session's TTL with and without refresh, deletes one
 * session, lets the others expire, and looks at every session one last time.
 *
 * Both styles of call are used:
 *  - blocking (_sync) calls, which return the result to the caller: it owns
 *    it, failures included, and frees it with momento_result_free();
 *  - async calls, for creating every session and for the last look at all
 *    of them: each accepted call gets exactly one callback, on the client's
 *    completion thread, with a result that is only *borrowed* until the
 *    callback returns. A callback that wants to keep the result takes an
 *    owned copy with momento_result_dup(), as on_fetched() does; one that
 *    needs only a part copies that part, as on_created() does.
 *
 * Where the requests go is shared with the other examples (common/target.h).
 * Run with --help for the options. */
#include "common/target.h"

#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *const prog = "session-store";

typedef struct options {
    ex_target_options target; /* --endpoint, --insecure, --tls-roots */
    const char *cache;
    int sessions;
    int views;
    int ttl_ms;
} options;

static void usage(void)
{
    printf("Usage: %s [OPTION]...\n"
           "Web sessions in Momento dictionaries, one per session: fields, a counter,\n"
           "the session TTL (refreshed or not by a write), deletion and expiry, with\n"
           "blocking calls and async calls with callbacks.\n\n" EX_TARGET_HELP "\n"
           "Sessions:\n"
           "  --cache NAME           cache to use, created if missing (default session-store)\n"
           "  --sessions N           sessions to create, 3 to 100 (default 3)\n"
           "  --views N              page views to count on session:1, 1 to 1000 (default 3)\n"
           "  --ttl-ms MS            session TTL, 1000 to 60000 ms (default 3000); the run\n"
           "                         waits about this long for sessions to expire\n"
           "  --help                 this text\n",
           prog);
}

static int parse_options(int argc, char **argv, options *o)
{
    static const struct option longopts[] = {
        EX_TARGET_LONGOPTS,
        {"cache", required_argument, NULL, 'C'},    {"sessions", required_argument, NULL, 'n'},
        {"views", required_argument, NULL, 'v'},    {"ttl-ms", required_argument, NULL, 't'},
        {"help", no_argument, NULL, 'h'},           {NULL, 0, NULL, 0},
    };
    memset(o, 0, sizeof(*o));
    o->cache = "session-store";
    o->sessions = 3;
    o->views = 3;
    o->ttl_ms = 3000;
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
        case 'C':
            if (ex_cache_option(prog, optarg, &o->cache))
                return 2;
            break;
        case 'n':
            /* At least 3: session:2 is deleted and session:3 left to expire. */
            if (!ex_parse_int(optarg, 3, 100, &o->sessions))
                return ex_bad_option(prog, "--sessions", optarg, "must be 3 to 100");
            break;
        case 'v':
            if (!ex_parse_int(optarg, 1, 1000, &o->views))
                return ex_bad_option(prog, "--views", optarg, "must be 1 to 1000");
            break;
        case 't':
            if (!ex_parse_int(optarg, 1000, 60000, &o->ttl_ms))
                return ex_bad_option(prog, "--ttl-ms", optarg, "must be 1000 to 60000");
            break;
        case 'h': usage(); return 1;
        default: return 2;
        }
    }
    if (optind < argc)
        return ex_bad_option(prog, "argument", argv[optind], "no positional arguments are taken");
    return ex_check_target(prog, &o->target);
}

/* Reports a failed call; returns 1, the exit status. `rc` is what the call
 * returned (or its result's error), `msg` the server's message or "". */
static int report(const char *what, int rc, const char *msg)
{
    fprintf(stderr, "%s: %s failed: %s (%s)%s%s\n", prog, what, momento_error_name(rc),
            momento_strerror(rc), *msg ? ": " : "", msg);
    return 1;
}

/* The same for a blocking call, freeing its result: NULL when the request
 * was refused before it was sent, otherwise carrying the server's message. */
static int fail(const char *what, int rc, momento_result *r)
{
    report(what, rc, r ? momento_result_message(r) : "");
    momento_result_free(r);
    return 1;
}

static void sleep_ms(uint64_t ms)
{
    struct timespec d = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    while (nanosleep(&d, &d) != 0)
        ;
}

typedef struct app {
    momento_client *client;
    const options *o;
    /* Every write passes this CollectionTtl: a new session lives ttl_ms,
     * and each write resets that (refresh = 1), so a session expires
     * ttl_ms after its last activity. refresh = 0 is shown once, below. */
    momento_collection_ttl ttl;
} app;

static void session_key(char *buf, size_t size, int i)
{
    snprintf(buf, size, "session:%d", i);
}

/* ------------------------------------------------ waiting for callbacks */

/* Callbacks still to come. The main thread counts a request in before
 * submitting it and out again if the submit is refused (a refused request
 * never calls back); each callback counts itself out when it is done. */
typedef struct pending {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int left;
} pending;

static void pending_init(pending *p)
{
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    p->left = 0;
}

static void pending_add(pending *p, int n)
{
    pthread_mutex_lock(&p->mu);
    p->left += n;
    if (p->left == 0)
        pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

static void pending_wait_and_destroy(pending *p)
{
    pthread_mutex_lock(&p->mu);
    while (p->left > 0)
        pthread_cond_wait(&p->cv, &p->mu);
    pthread_mutex_unlock(&p->mu);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
}

/* -------------------------------------------------- create (async) */

/* What a creation callback keeps: the error and a copy of the server's
 * message, since the result itself is gone once the callback returns. */
typedef struct create_slot {
    pending *p;
    int error;
    char message[200];
} create_slot;

/* Runs on the client's completion thread. `r` is borrowed: read it here or
 * copy what is needed; do not keep the pointer. */
static void on_created(const momento_result *r, void *userdata)
{
    create_slot *s = userdata;
    s->error = momento_result_error(r);
    snprintf(s->message, sizeof(s->message), "%s", momento_result_message(r));
    pending_add(s->p, -1);
}

static const char *const users[] = {"alice", "bob", "carol", "dave", "erin", "frank", "grace"};

/* Creates every session at once: one async set_fields each, then waits for
 * all the callbacks. */
static int create_sessions(app *a)
{
    int n = a->o->sessions;
    create_slot *slots = calloc((size_t)n, sizeof(*slots));
    if (!slots)
        return fail("allocating", MOMENTO_ERR_NO_MEMORY, NULL);
    char last_seen[32];
    time_t now = time(NULL);
    struct tm tm;
    strftime(last_seen, sizeof(last_seen), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));

    printf("creating %d sessions, one async set_fields each (TTL %d ms, refreshed by every "
           "write):\n", n, a->o->ttl_ms);
    pending p;
    pending_init(&p);
    int rc = MOMENTO_OK, i;
    for (i = 0; i < n; i++) {
        char key[32], user[32], cart[64];
        session_key(key, sizeof(key), i + 1);
        if (i < (int)(sizeof(users) / sizeof(users[0])))
            snprintf(user, sizeof(user), "%s", users[i]);
        else
            snprintf(user, sizeof(user), "user-%d", i + 1);
        snprintf(cart, sizeof(cart), "sku-%d,sku-%d", 1000 + 7 * i, 2000 + 13 * i);
        const void *fields[3] = {"user", "cart", "last_seen"};
        const size_t field_lens[3] = {4, 4, 9};
        const void *values[3] = {user, cart, last_seen};
        const size_t value_lens[3] = {strlen(user), strlen(cart), strlen(last_seen)};
        printf("  %s: user=%s cart=%s last_seen=%s\n", key, user, cart, last_seen);

        slots[i].p = &p;
        pending_add(&p, 1);
        /* Everything is copied before the call returns, so the stack buffers
         * above may go at once; only `slots[i]` must outlive the callback. */
        rc = momento_dictionary_set_fields(a->client, a->o->cache, key, strlen(key), fields,
                                           field_lens, values, value_lens, 3, &a->ttl, NULL,
                                           on_created, &slots[i]);
        if (rc != MOMENTO_OK) {
            pending_add(&p, -1); /* refused: no callback will come */
            break;
        }
    }
    /* Even after a refusal, the requests already accepted will call back
     * into `slots`: wait for them before freeing it. */
    pending_wait_and_destroy(&p);
    int status = 0;
    if (rc != MOMENTO_OK)
        status = fail("set_fields (submit)", rc, NULL);
    for (int k = 0; k < i && !status; k++)
        if (slots[k].error != MOMENTO_OK)
            status = report("set_fields", slots[k].error, slots[k].message);
    if (!status)
        printf("created %d sessions (%d callbacks, each SUCCESS)\n", n, n);
    free(slots);
    return status;
}

/* --------------------------------------------------- blocking calls */

/* Prints a dictionary's entries as "field=value, ...". */
static void print_fields(const momento_result *r)
{
    size_t n = momento_result_item_count(r);
    for (size_t i = 0; i < n; i++) {
        const momento_result *item = momento_result_item(r, i);
        size_t flen, vlen;
        const char *field = momento_result_field(item, &flen);
        const char *value = momento_result_value(item, &vlen);
        printf("%s%.*s=%.*s", i ? ", " : "", (int)flen, field, (int)vlen, value);
    }
}

static int read_one_field(app *a, const char *key, const char *field)
{
    momento_result *r;
    int rc = momento_dictionary_get_field_sync(a->client, a->o->cache, key, strlen(key), field,
                                               strlen(field), NULL, &r);
    if (rc != MOMENTO_OK)
        return fail("get_field", rc, r);
    size_t len;
    const char *value = momento_result_value(r, &len);
    if (momento_result_is_hit(r))
        printf("%s %s = %.*s (get_field)\n", key, field, (int)len, value);
    else
        printf("%s %s: no such field (get_field missed)\n", key, field);
    momento_result_free(r);
    return 0;
}

static int read_fields(app *a, const char *key)
{
    /* "coupon" was never set: its item is a MISS. */
    const void *fields[3] = {"user", "cart", "coupon"};
    const size_t lens[3] = {4, 4, 6};
    momento_result *r;
    int rc = momento_dictionary_get_fields_sync(a->client, a->o->cache, key, strlen(key), fields,
                                                lens, 3, NULL, &r);
    if (rc != MOMENTO_OK)
        return fail("get_fields", rc, r);
    printf("%s, three fields at once (get_fields):\n", key);
    if (!momento_result_is_hit(r))
        printf("  no such session\n");
    /* One item per field asked for, in the same order, so item i answers
     * fields[i]. */
    for (size_t i = 0; i < momento_result_item_count(r) && i < 3; i++) {
        const momento_result *item = momento_result_item(r, i);
        size_t vlen;
        const char *value = momento_result_value(item, &vlen);
        if (momento_result_is_hit(item))
            printf("  %s = %.*s\n", (const char *)fields[i], (int)vlen, value);
        else
            printf("  %s: no such field\n", (const char *)fields[i]);
    }
    momento_result_free(r);
    return 0;
}

static int count_views(app *a, const char *key)
{
    /* A missing field counts as 0, so the first increment creates it. */
    for (int i = 0; i < a->o->views; i++) {
        momento_result *r;
        int rc = momento_dictionary_increment_sync(a->client, a->o->cache, key, strlen(key),
                                                   "page_views", 10, 1, &a->ttl, NULL, &r);
        if (rc != MOMENTO_OK)
            return fail("increment", rc, r);
        printf("%s page_views -> %lld (increment)\n", key, (long long)momento_result_int(r));
        momento_result_free(r);
    }
    return 0;
}

static int fetch_session(app *a, const char *key)
{
    momento_result *r;
    int rc = momento_dictionary_fetch_sync(a->client, a->o->cache, key, strlen(key), NULL, &r);
    if (rc != MOMENTO_OK)
        return fail("fetch", rc, r);
    if (momento_result_is_hit(r)) {
        printf("%s, the whole session (fetch): ", key);
        print_fields(r);
        printf("\n");
    } else {
        printf("%s: no such session (fetch missed)\n", key);
    }
    momento_result_free(r);
    return 0;
}

static int checkout(app *a, const char *key)
{
    momento_result *r;
    int rc = momento_dictionary_remove_field_sync(a->client, a->o->cache, key, strlen(key), "cart",
                                                  4, NULL, &r);
    if (rc != MOMENTO_OK)
        return fail("remove_field", rc, r);
    momento_result_free(r);
    rc = momento_dictionary_length_sync(a->client, a->o->cache, key, strlen(key), NULL, &r);
    if (rc != MOMENTO_OK)
        return fail("length", rc, r);
    printf("%s checked out: cart removed (remove_field), %lld fields left (length)\n", key,
           momento_result_is_hit(r) ? (long long)momento_result_int(r) : 0LL);
    momento_result_free(r);
    return read_one_field(a, key, "cart");
}

/* The time the session has left, in ms; 0 when it is gone. */
static int ttl_left(app *a, const char *key, uint64_t *ret_ms)
{
    momento_result *r;
    int rc = momento_item_get_ttl_sync(a->client, a->o->cache, key, strlen(key), NULL, &r);
    if (rc != MOMENTO_OK)
        return fail("item_get_ttl", rc, r);
    *ret_ms = momento_result_is_hit(r) ? momento_result_ttl_ms(r) : 0;
    momento_result_free(r);
    return 0;
}

static int touch(app *a, const char *key, int refresh)
{
    char now[32];
    time_t t = time(NULL);
    struct tm tm;
    strftime(now, sizeof(now), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
    momento_collection_ttl ttl = {(uint64_t)a->o->ttl_ms, refresh};
    momento_result *r;
    int rc = momento_dictionary_set_field_sync(a->client, a->o->cache, key, strlen(key),
                                               "last_seen", 9, now, strlen(now), &ttl, NULL, &r);
    if (rc != MOMENTO_OK)
        return fail("set_field", rc, r);
    momento_result_free(r);
    return 0;
}

/* What a write does to the session's TTL: with refresh = 0 the TTL runs
 * on; with refresh = 1 it starts again from ttl_ms. */
static int show_ttl_refresh(app *a, const char *key)
{
    uint64_t wait = (uint64_t)a->o->ttl_ms / 3, left;
    printf("waiting %llu ms\n", (unsigned long long)wait);
    sleep_ms(wait);
    if (ttl_left(a, key, &left))
        return 1;
    printf("%s TTL left: %llu ms (item_get_ttl)\n", key, (unsigned long long)left);
    if (touch(a, key, 0) || ttl_left(a, key, &left))
        return 1;
    printf("%s TTL after a write with refresh 0: %llu ms (runs on)\n", key,
           (unsigned long long)left);
    if (touch(a, key, 1) || ttl_left(a, key, &left))
        return 1;
    printf("%s TTL after a write with refresh 1: %llu ms (reset to %d)\n", key,
           (unsigned long long)left, a->o->ttl_ms);
    return 0;
}

static int logout(app *a, const char *key)
{
    /* A dictionary is one cache item: delete removes the whole session. */
    momento_result *r;
    int rc = momento_delete_sync(a->client, a->o->cache, key, strlen(key), NULL, &r);
    if (rc != MOMENTO_OK)
        return fail("delete", rc, r);
    momento_result_free(r);
    printf("%s deleted (delete)\n", key);
    return 0;
}

/* Waits until `key`, untouched since it was created, has expired. */
static int wait_for_expiry(app *a, const char *key)
{
    uint64_t left;
    if (ttl_left(a, key, &left))
        return 1;
    printf("waiting %llu ms for %s to expire\n", (unsigned long long)left + 100, key);
    sleep_ms(left + 100);
    return 0;
}

/* ---------------------------------------------- fetch all (async) */

typedef struct fetch_slot {
    pending *p;
    int error;            /* of the dup, when it fails */
    momento_result *kept; /* owned: freed by the main thread */
} fetch_slot;

/* Runs on the client's completion thread. The main thread prints every
 * session after all the callbacks, so each callback keeps its whole
 * result: momento_result_dup() makes an owned deep copy of `r`, items and
 * values included, which outlives this callback. */
static void on_fetched(const momento_result *r, void *userdata)
{
    fetch_slot *s = userdata;
    s->error = momento_result_dup(r, &s->kept);
    pending_add(s->p, -1);
}

static int show_all_sessions(app *a)
{
    int n = a->o->sessions;
    fetch_slot *slots = calloc((size_t)n, sizeof(*slots));
    if (!slots)
        return fail("allocating", MOMENTO_ERR_NO_MEMORY, NULL);
    pending p;
    pending_init(&p);
    int rc = MOMENTO_OK, i;
    for (i = 0; i < n; i++) {
        char key[32];
        session_key(key, sizeof(key), i + 1);
        slots[i].p = &p;
        pending_add(&p, 1);
        rc = momento_dictionary_fetch(a->client, a->o->cache, key, strlen(key), NULL, on_fetched,
                                      &slots[i]);
        if (rc != MOMENTO_OK) {
            pending_add(&p, -1); /* refused: no callback will come */
            break;
        }
    }
    pending_wait_and_destroy(&p);

    int status = rc != MOMENTO_OK ? fail("fetch (submit)", rc, NULL) : 0;
    if (!status)
        printf("every session now (%d async fetches, results kept with momento_result_dup):\n", n);
    for (int k = 0; k < i; k++) {
        /* After a failure, only free what the callbacks kept. */
        const momento_result *r = slots[k].kept;
        if (!status && !r) {
            status = report("momento_result_dup", slots[k].error, "");
        } else if (!status && momento_result_error(r) != MOMENTO_OK) {
            status = report("fetch", momento_result_error(r), momento_result_message(r));
        } else if (!status) {
            printf("  session:%d: ", k + 1);
            if (momento_result_is_hit(r))
                print_fields(r);
            else
                printf("gone");
            printf("\n");
        }
        momento_result_free(slots[k].kept);
    }
    free(slots);
    return status;
}

static int ensure_cache(app *a)
{
    momento_result *r;
    int rc = momento_create_cache_sync(a->client, a->o->cache, NULL, &r);
    if (rc != MOMENTO_OK)
        return fail("create_cache", rc, r);
    printf("cache '%s': %s\n", a->o->cache,
           momento_result_outcome(r) == MOMENTO_OUTCOME_CREATED ? "created" : "already exists");
    momento_result_free(r);
    return 0;
}

/* A fresh start: sessions left by an earlier run would keep their
 * page_views. */
static int clear_sessions(app *a)
{
    for (int i = 1; i <= a->o->sessions; i++) {
        char key[32];
        session_key(key, sizeof(key), i);
        momento_result *r;
        int rc = momento_delete_sync(a->client, a->o->cache, key, strlen(key), NULL, &r);
        if (rc != MOMENTO_OK)
            return fail("delete", rc, r);
        momento_result_free(r);
    }
    return 0;
}

static int run(app *a)
{
    const char *s1 = "session:1", *s2 = "session:2", *s3 = "session:3";
    if (ensure_cache(a) || clear_sessions(a) || create_sessions(a) ||
        read_one_field(a, s1, "user") || read_fields(a, s1) || count_views(a, s1) ||
        fetch_session(a, s1) || checkout(a, s1) || show_ttl_refresh(a, s1) || logout(a, s2) ||
        wait_for_expiry(a, s3) || show_all_sessions(a))
        return 1;
    /* session:1 would expire by itself; a logout ends it now. */
    return logout(a, s1);
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
    printf("%s: target %s; %d sessions, TTL %d ms\n", prog, t.description, o.sessions, o.ttl_ms);

    app a = {.o = &o, .ttl = {(uint64_t)o.ttl_ms, 1}};
    rc = ex_target_client_new(&t, &a.client);
    int status = rc != MOMENTO_OK ? fail("client_new", rc, NULL) : run(&a);
    /* Frees the client once its last callback has returned. */
    momento_client_free(a.client);
    ex_target_close(&t);
    return status;
}
