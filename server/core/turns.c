/* Taking turns (srv_turns.h): a FIFO lock for the server's state, the
 * poller's role passed from thread to thread, and the long request's
 * slices, pins and hand-overs. */
#include "clock.h"
#include "core/srv_turns.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static _Thread_local bool t_polling;
static _Thread_local srv_work *t_work;

int srv_turns_init(srv_turns *t, void *(*body)(void *), void *arg)
{
    memset(t, 0, sizeof(*t));
    t->body = body;
    t->arg = arg;
    if (pthread_mutex_init(&t->mu, NULL) != 0)
        return -1;
    if (pthread_cond_init(&t->cv, NULL) != 0) {
        pthread_mutex_destroy(&t->mu);
        return -1;
    }
    if (pthread_cond_init(&t->role_cv, NULL) != 0) {
        pthread_cond_destroy(&t->cv);
        pthread_mutex_destroy(&t->mu);
        return -1;
    }
    return 0;
}

/* Under mu. */
static int start_thread(srv_turns *t)
{
    unsigned n = atomic_load(&t->n_threads);
    if (n == SRV_MAX_THREADS || pthread_create(&t->threads[n], NULL, t->body, t->arg) != 0)
        return -1;
    /* Named, so that the server's threads can be told from gRPC's (in a
     * debugger, and by tests/lib/test_threads.c): the first one
     * before momento_local_start() returns. */
    char name[16] = "momento-srv";
    if (n > 0) /* n < SRV_MAX_THREADS: one digit */
        snprintf(name, sizeof(name), "momento-srv-%c", (char)('0' + n % 10));
    pthread_setname_np(t->threads[n], name);
    atomic_store(&t->n_threads, n + 1);
    return 0;
}

int srv_turns_start(srv_turns *t)
{
    pthread_mutex_lock(&t->mu);
    int rc = start_thread(t);
    pthread_mutex_unlock(&t->mu);
    return rc;
}

void srv_turns_join(srv_turns *t)
{
    pthread_mutex_lock(&t->mu);
    t->quit = true;
    pthread_cond_broadcast(&t->role_cv);
    pthread_mutex_unlock(&t->mu);
    /* No thread starts once quitting: a long request hands the role on
     * only while the server runs, and the last of them is done by now. */
    unsigned n = atomic_load(&t->n_threads);
    for (unsigned i = 0; i < n; i++)
        pthread_join(t->threads[i], NULL);
}

void srv_turns_destroy(srv_turns *t)
{
    pthread_cond_destroy(&t->role_cv);
    pthread_cond_destroy(&t->cv);
    pthread_mutex_destroy(&t->mu);
}

void srv_turn_take(srv_turns *t)
{
    pthread_mutex_lock(&t->mu);
    uint64_t mine = t->next_ticket++;
    if (mine != t->serving) {
        atomic_fetch_add_explicit(&t->waiting, 1, memory_order_relaxed);
        while (mine != t->serving)
            pthread_cond_wait(&t->cv, &t->mu);
        atomic_fetch_sub_explicit(&t->waiting, 1, memory_order_relaxed);
    }
    pthread_mutex_unlock(&t->mu);
}

void srv_turn_give(srv_turns *t)
{
    pthread_mutex_lock(&t->mu);
    t->serving++;
    /* Wakes the next ticket's holder (with the others: they are few). */
    if (t->next_ticket != t->serving)
        pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
}

bool srv_turn_wanted(srv_turns *t)
{
    return atomic_load_explicit(&t->waiting, memory_order_relaxed) != 0;
}

bool srv_turns_poll(srv_turns *t)
{
    if (t_polling)
        return true;
    pthread_mutex_lock(&t->mu);
    t->idle++;
    while (t->poller_busy && !t->quit)
        pthread_cond_wait(&t->role_cv, &t->mu);
    t->idle--;
    /* A free role is taken even while quitting: a long request may have
     * handed it on just before the stop, and the queue still needs its
     * poller to drain it. Quitting sends away only the threads waiting
     * while another polls. */
    bool go = !t->poller_busy;
    if (go)
        t->poller_busy = t_polling = true;
    pthread_mutex_unlock(&t->mu);
    return go;
}

bool srv_turns_polling(void)
{
    return t_polling;
}

/* Gives the poller's role to a thread waiting for it, or to one started
 * for it. False when none can take it (every thread busy, none can be
 * started, or the server is quitting): the caller keeps polling. */
static bool pass_poller(srv_turns *t)
{
    pthread_mutex_lock(&t->mu);
    bool ok = !t->quit && (t->idle > 0 || start_thread(t) == 0);
    if (ok) {
        t->poller_busy = t_polling = false;
        pthread_cond_signal(&t->role_cv);
    }
    pthread_mutex_unlock(&t->mu);
    return ok;
}

/* ---- works --------------------------------------------------------- */

void srv_work_begin(srv_work *w, srv_turns *t, store *st)
{
    memset(w, 0, sizeof(*w));
    w->turns = t;
    w->store = st;
    w->outer = t_work;
    w->slice_start_ns = momento__mono_ns();
    t_work = w;
}

void srv_work_request(store_cache *c, const ProtobufCMessage *req,
                      const ProtobufCMessageDescriptor *desc, const uint8_t *body, size_t len)
{
    srv_work *w = t_work;
    if (!w)
        return;
    w->cache = c;
    w->req = req;
    w->desc = desc;
    w->body = body;
    w->len = len;
}

/* The fields that name a key: Momento's requests call them so (the
 * scalar RPCs' cache_key, KeysExist's cache_keys, each collection
 * family's name of its collection). */
static bool names_a_key(const char *field)
{
    return !strcmp(field, "cache_key") || !strcmp(field, "cache_keys") ||
           !strcmp(field, "set_name") || !strcmp(field, "list_name") ||
           !strcmp(field, "dictionary_name");
}

/* A leaderboard's name, a string field of every leaderboard request. A
 * leaderboard is no item (its names are apart from the cache's keys,
 * store.h), but it is pinned as a key of those bytes would be: a long
 * request on it holds back the calls on it, and those on an item of the
 * same name, which only wait. */
static bool names_a_board(const ProtobufCFieldDescriptor *f)
{
    return f->type == PROTOBUF_C_TYPE_STRING && f->label != PROTOBUF_C_LABEL_REPEATED &&
           !strcmp(f->name, "leaderboard");
}

typedef int key_fn(void *arg, const ProtobufCBinaryData *key);

/* Calls `fn` for every key the message names, at its top level or in its
 * message fields (SortedSetUnionStore's sources, the batches' items), to
 * `depth` levels; stops at and returns fn's first nonzero. */
static int each_key(const ProtobufCMessage *m, int depth, key_fn *fn, void *arg)
{
    const ProtobufCMessageDescriptor *d = m->descriptor;
    for (unsigned i = 0; i < d->n_fields; i++) {
        const ProtobufCFieldDescriptor *f = &d->fields[i];
        const char *base = (const char *)m;
        if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
            if (*(const uint32_t *)(base + f->quantifier_offset) != f->id)
                continue;
        }
        bool repeated = f->label == PROTOBUF_C_LABEL_REPEATED;
        size_t n = repeated ? *(const size_t *)(base + f->quantifier_offset) : 1;
        if (names_a_board(f)) {
            const char *name = *(const char *const *)(base + f->offset);
            ProtobufCBinaryData v = {name ? strlen(name) : 0, (uint8_t *)name};
            int rc = v.len ? fn(arg, &v) : 0;
            if (rc)
                return rc;
        } else if (f->type == PROTOBUF_C_TYPE_BYTES && names_a_key(f->name)) {
            const ProtobufCBinaryData *v =
                repeated ? *(ProtobufCBinaryData *const *)(base + f->offset)
                         : (const ProtobufCBinaryData *)(base + f->offset);
            for (size_t k = 0; k < n; k++) {
                int rc = fn(arg, &v[k]);
                if (rc)
                    return rc;
            }
        } else if (f->type == PROTOBUF_C_TYPE_MESSAGE && depth > 0) {
            const ProtobufCMessage *const *v =
                repeated ? *(const ProtobufCMessage *const *const *)(base + f->offset)
                         : (const ProtobufCMessage *const *)(base + f->offset);
            for (size_t k = 0; k < n; k++) {
                if (!v[k])
                    continue;
                int rc = each_key(v[k], depth - 1, fn, arg);
                if (rc)
                    return rc;
            }
        }
    }
    return 0;
}

/* The work's request, decoded: the one dispatch.c decoded, or one decoded
 * here from the wire bytes of a request read in place. NULL when there is
 * none (a cache-wide RPC, or no memory). */
static const ProtobufCMessage *work_request(srv_work *w)
{
    if (w->req)
        return w->req;
    if (!w->unpacked && w->desc && w->body)
        w->unpacked = protobuf_c_message_unpack(w->desc, NULL, w->len, w->body);
    return w->unpacked;
}

static int key_blocked(void *arg, const ProtobufCBinaryData *key)
{
    return store_pinned(arg, key->data, key->len);
}

bool srv_work_blocked(void)
{
    srv_work *w = t_work;
    if (!w || !w->store->pins || !w->cache || !w->cache->pinned)
        return w && w->cache && w->cache->whole;
    const ProtobufCMessage *req = work_request(w);
    /* Without its keys (no memory to decode them) it waits, to be safe. */
    return !req || each_key(req, 2, key_blocked, w->cache) != 0;
}

static void unpin_all(srv_work *w)
{
    for (size_t i = 0; i < w->n_pins; i++)
        store_unpin(w->store, w->pin_cache, w->pins[i]);
    free(w->pins);
    w->pins = NULL;
    w->n_pins = w->cap_pins = 0;
}

/* Pins one key, recording its pin (a key named twice is pinned twice). */
static int key_pin(void *arg, const ProtobufCBinaryData *key)
{
    srv_work *w = arg;
    if (w->n_pins == w->cap_pins) {
        size_t cap = w->cap_pins ? 2 * w->cap_pins : 8;
        store_pinned_key **p = realloc(w->pins, cap * sizeof(*p));
        if (!p)
            return 1;
        w->pins = p;
        w->cap_pins = cap;
    }
    store_pinned_key *p = store_pin(w->store, w->pin_cache, key->data, key->len);
    if (!p)
        return 1;
    w->pins[w->n_pins++] = p;
    return 0;
}

/* Pins the work's keys, so that it may give its turn away. A work that
 * names no cache pins nothing (its request reads nothing of the store). */
static bool pin(srv_work *w)
{
    if (w->pinned)
        return true;
    /* Not decoded yet: it has touched nothing of the store, and holds
     * nothing to pin. */
    if (!w->req && !w->desc)
        return true;
    if (w->cache) {
        const ProtobufCMessage *req = work_request(w);
        if (!req)
            return false;
        w->pin_cache = w->cache;
        if (each_key(req, 2, key_pin, w) != 0) {
            unpin_all(w); /* out of memory part way */
            return false;
        }
        w->released = true;
    }
    w->pinned = true;
    return true;
}

/* Makes the work long: its keys pinned, the poller's role handed on. */
static bool go_long(srv_work *w)
{
    if (w->stuck)
        return false;
    if (!pin(w)) {
        w->stuck = true;
        return false;
    }
    if (!w->passed) {
        if (t_polling && !pass_poller(w->turns)) {
            w->stuck = true;
            return false;
        }
        w->passed = true;
    }
    if (w->pinned && !w->counted) {
        w->counted = true;
        atomic_fetch_add(&w->turns->long_now, 1);
    }
    return true;
}

void srv_work_request_done(void)
{
    srv_work *w = t_work;
    if (!w)
        return;
    if (w->unpacked) {
        protobuf_c_message_free_unpacked(w->unpacked, NULL);
        w->unpacked = NULL;
    }
    w->req = NULL;
    w->desc = NULL;
    w->body = NULL;
}

bool srv_work_end(srv_work *w)
{
    if (w->counted)
        atomic_fetch_sub(&w->turns->long_now, 1);
    srv_work_request_done();
    unpin_all(w);
    t_work = w->outer;
    return w->released;
}

bool srv_work_pin_cache(store_cache *c)
{
    srv_work *w = t_work;
    if (store_cache_busy(c))
        return false;
    store_pin_cache(c);
    if (w)
        w->released = true;
    return true;
}

void srv_work_unpin_cache(store_cache *c)
{
    store_unpin_cache(c);
}

bool srv_work_long(void)
{
    srv_work *w = t_work;
    return w && w->pinned && w->passed;
}

void srv_yield(void)
{
    srv_work *w = t_work;
    if (!w || ++w->ticks < SRV_YIELD_EVERY)
        return;
    w->ticks = 0;
    int64_t now = momento__mono_ns();
    if (now - w->slice_start_ns < SRV_SLICE_NS)
        return;
    if (!go_long(w)) {
        w->slice_start_ns = now;
        return;
    }
    if (srv_turn_wanted(w->turns)) {
        srv_turn_give(w->turns);
        srv_turn_take(w->turns);
    }
    w->slice_start_ns = momento__mono_ns();
}

bool srv_let_go(void)
{
    srv_work *w = t_work;
    if (!w || !go_long(w))
        return false;
    srv_turn_give(w->turns);
    return true;
}

void srv_take_back(void)
{
    srv_work *w = t_work;
    srv_turn_take(w->turns);
    w->slice_start_ns = momento__mono_ns();
}
