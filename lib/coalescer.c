/* Request coalescing. One uthash table, keyed by (cache name, key), holds a
 * key_state per key with requests in flight. A key_state names the get that
 * newcomers may still join (open_get) and the latest write issued
 * (last_write); each in-flight RPC is an `inflight` carrying its waiters.
 *
 * Identity is (operation, cache, key) and, for sets, value bytes and
 * effective TTL: a get joins open_get; a set joins last_write only when that
 * is a set of the same bytes and TTL; a delete joins last_write only when it
 * is a delete. Issuing a write clears open_get (read-your-writes) and
 * becomes last_write, so nothing joins a write that a later write has
 * overtaken.
 *
 * The lock is held while the leader's RPC is submitted, so no request can
 * join an RPC that is then refused, and it is never held while user
 * callbacks run. */
#include "momento/coalescer.h"

#include "alloc.h"
#include "op.h"

#include <stdlib.h>
#include <string.h>
#include <uthash.h>

typedef enum { CO_GET, CO_SET, CO_DELETE } co_op;

typedef struct waiter {
    momento_callback cb;
    void *userdata;
    struct waiter *next;
} waiter;

typedef struct key_state key_state;

typedef struct inflight {
    momento_coalescer *co;
    key_state *ks;
    co_op op;
    uint64_t ttl_ms;        /* sets: effective TTL */
    size_t value_len;       /* sets: the value, kept to compare joiners */
    uint8_t *value;
    size_t n_waiters;
    bool embedded;          /* lives inside its key_state's allocation */
    waiter first;           /* the leader, inline: most RPCs have no joiner */
    waiter *more_head;      /* joiners, in arrival order */
    waiter **more_tail;
} inflight;

/* A key with requests in flight. The first RPC of a key (with a set's value)
 * is allocated in the same block, after the id: with unique keys - nothing to
 * coalesce - each request then costs one allocation, not three. */
struct key_state {
    UT_hash_handle hh;
    inflight *open_get;
    inflight *last_write;
    size_t refs;            /* in-flight RPCs of this key */
    size_t id_len;
    uint8_t id[];           /* cache name, NUL, key bytes; then the embedded inflight */
};

#define ALIGN_UP(n) (((n) + 15u) & ~(size_t)15u)

struct momento_coalescer {
    momento_client *client;
    pthread_mutex_t lock;   /* guards everything below */
    key_state *table;
    bool closed;
    momento_coalescer_counters counters;
};

int momento_coalescer_new(momento_coalescer **ret, momento_client *client)
{
    if (!ret || !client)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    momento_coalescer *co = momento__calloc(1, sizeof(*co));
    if (!co)
        return MOMENTO_ERR_NO_MEMORY;
    co->client = client;
    pthread_mutex_init(&co->lock, NULL);
    *ret = co;
    return MOMENTO_OK;
}

static void destroy(momento_coalescer *co)
{
    pthread_mutex_destroy(&co->lock);
    free(co);
}

void momento_coalescer_free(momento_coalescer *co)
{
    if (!co)
        return;
    pthread_mutex_lock(&co->lock);
    co->closed = true;
    bool drained = co->counters.keys_in_flight == 0;
    pthread_mutex_unlock(&co->lock);
    /* Otherwise the last completion releases it (see on_done). */
    if (drained)
        destroy(co);
}

int momento_coalescer_stats(const momento_coalescer *co, momento_coalescer_counters *ret,
                            size_t size)
{
    if (!co || !ret)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    momento_coalescer *mco = (momento_coalescer *)co; /* the lock is not part of the value */
    pthread_mutex_lock(&mco->lock);
    momento_coalescer_counters snapshot = co->counters;
    pthread_mutex_unlock(&mco->lock);
    memcpy(ret, &snapshot, size < sizeof(snapshot) ? size : sizeof(snapshot));
    return MOMENTO_OK;
}

/* Completion of a shared RPC: detach it, then call every waiter back with
 * the one result. */
static void on_done(const momento_result *r, void *userdata)
{
    inflight *e = userdata;
    momento_coalescer *co = e->co;
    key_state *ks = e->ks;

    pthread_mutex_lock(&co->lock);
    if (ks->open_get == e)
        ks->open_get = NULL;
    if (ks->last_write == e)
        ks->last_write = NULL;
    bool free_ks = --ks->refs == 0;
    if (free_ks)
        HASH_DELETE(hh, co->table, ks);
    co->counters.keys_in_flight--;
    bool release = co->closed && co->counters.keys_in_flight == 0;
    pthread_mutex_unlock(&co->lock);

    /* No lock held: a callback may submit again (a fresh RPC, since the
     * entry has left the table) or free the coalescer. */
    e->first.cb(r, e->first.userdata);
    for (waiter *w = e->more_head, *next; w; w = next) {
        next = w->next;
        w->cb(r, w->userdata);
        free(w);
    }
    /* An embedded inflight goes with its key_state: only when the key has
     * nothing left in flight (and so after this, its last callback). */
    if (!e->embedded)
        free(e);
    if (free_ks)
        free(ks);
    if (release)
        destroy(co);
}

/* Finds the key_state of (cache, key), or makes one with room for an
 * embedded inflight carrying `value_len` value bytes; *fresh says which. The
 * caller holds the lock. The id is hashed once for both lookup and insert. */
static key_state *state_for(momento_coalescer *co, const char *cache, size_t cache_len,
                            const void *key, size_t key_len, size_t value_len, bool *fresh,
                            int *err)
{
    size_t id_len = cache_len + 1 + key_len;
    uint8_t stack_id[512];
    uint8_t *id = id_len <= sizeof(stack_id) ? stack_id : momento__malloc(id_len);
    if (!id) {
        *err = MOMENTO_ERR_NO_MEMORY;
        return NULL;
    }
    memcpy(id, cache, cache_len + 1);
    memcpy(id + cache_len + 1, key, key_len);

    unsigned hv;
    HASH_VALUE(id, id_len, hv);
    key_state *ks = NULL;
    HASH_FIND_BYHASHVALUE(hh, co->table, id, id_len, hv, ks);
    *fresh = ks == NULL;
    if (!ks) {
        size_t at = ALIGN_UP(sizeof(*ks) + id_len);
        ks = momento__malloc(at + sizeof(inflight) + value_len);
        if (ks) {
            memset(ks, 0, sizeof(*ks));
            ks->id_len = id_len;
            memcpy(ks->id, id, id_len);
            HASH_ADD_KEYPTR_BYHASHVALUE(hh, co->table, ks->id, ks->id_len, hv, ks);
        } else {
            *err = MOMENTO_ERR_NO_MEMORY;
        }
    }
    if (id != stack_id)
        free(id);
    return ks;
}

static inflight *embedded_inflight(key_state *ks)
{
    return (inflight *)((uint8_t *)ks + ALIGN_UP(sizeof(*ks) + ks->id_len));
}

static int join(momento_coalescer *co, inflight *e, momento_callback cb, void *userdata)
{
    waiter *w = momento__malloc(sizeof(*w));
    if (!w)
        return MOMENTO_ERR_NO_MEMORY;
    w->cb = cb;
    w->userdata = userdata;
    w->next = NULL;
    *e->more_tail = w;
    e->more_tail = &w->next;
    if (++e->n_waiters > co->counters.peak_waiters)
        co->counters.peak_waiters = e->n_waiters;
    return MOMENTO_OK;
}

static bool same_set(const inflight *e, const void *value, size_t value_len, uint64_t ttl_ms)
{
    return e->op == CO_SET && e->ttl_ms == ttl_ms && e->value_len == value_len &&
           (value_len == 0 || memcmp(e->value, value, value_len) == 0);
}

/* The one path for all three operations. */
static int submit(momento_coalescer *co, co_op op, const char *cache, const void *key,
                  size_t key_len, const void *value, size_t value_len, uint64_t ttl_ms,
                  const momento_request_options *opts, momento_callback cb, void *userdata)
{
    if (!co)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    int rc = op == CO_SET ? momento__check_item_request(co->client, cache, key, key_len, value,
                                                        value_len, ttl_ms, opts, cb)
                          : momento__check_key_request(co->client, cache, key, key_len, opts, cb);
    if (rc != MOMENTO_OK)
        return rc;
    if (op == CO_SET) /* identity is the effective TTL */
        ttl_ms = momento__effective_ttl(&co->client->cfg, ttl_ms);
    if (op != CO_SET)
        value_len = 0;
    size_t cache_len = strlen(cache);

    uint64_t *requests = op == CO_GET   ? &co->counters.get_requests
                         : op == CO_SET ? &co->counters.set_requests
                                        : &co->counters.delete_requests;
    uint64_t *coalesced = op == CO_GET   ? &co->counters.get_coalesced
                          : op == CO_SET ? &co->counters.set_coalesced
                                         : &co->counters.delete_coalesced;

    pthread_mutex_lock(&co->lock);
    if (co->closed) {
        pthread_mutex_unlock(&co->lock);
        return MOMENTO_ERR_CLOSED;
    }
    bool fresh;
    key_state *ks = state_for(co, cache, cache_len, key, key_len, value_len, &fresh, &rc);
    if (!ks) {
        pthread_mutex_unlock(&co->lock);
        return rc;
    }

    inflight *target = NULL;
    if (op == CO_GET)
        target = ks->open_get;
    else if (ks->last_write && (op == CO_SET ? same_set(ks->last_write, value, value_len, ttl_ms)
                                             : ks->last_write->op == CO_DELETE))
        target = ks->last_write;
    if (target) {
        rc = join(co, target, cb, userdata);
        if (rc == MOMENTO_OK) {
            (*requests)++;
            (*coalesced)++;
        }
        pthread_mutex_unlock(&co->lock);
        return rc;
    }

    inflight *e = fresh ? embedded_inflight(ks) : momento__malloc(sizeof(*e) + value_len);
    if (!e) {
        pthread_mutex_unlock(&co->lock);
        return MOMENTO_ERR_NO_MEMORY;
    }
    e->co = co;
    e->ks = ks;
    e->op = op;
    e->ttl_ms = ttl_ms;
    e->value_len = value_len;
    e->value = (uint8_t *)(e + 1);
    if (value_len)
        memcpy(e->value, value, value_len);
    e->n_waiters = 1;
    e->embedded = fresh;
    e->first.cb = cb;
    e->first.userdata = userdata;
    e->first.next = NULL;
    e->more_head = NULL;
    e->more_tail = &e->more_head;

    /* Submitted under the lock: on_done cannot run before we return, and
     * nobody joins an RPC that ends up refused. */
    momento__call_opts resolved;
    momento__call_opts_from(co->client, opts, &resolved);
    if (op == CO_GET)
        rc = momento__send_get(co->client, cache, key, key_len, &resolved, on_done, e);
    else if (op == CO_SET)
        rc = momento__send_set(co->client, cache, key, key_len, value, value_len, ttl_ms,
                               &resolved, on_done, e);
    else
        rc = momento__send_delete(co->client, cache, key, key_len, &resolved, on_done, e);

    if (rc != MOMENTO_OK) {
        if (!fresh)
            free(e);
        if (ks->refs == 0) {
            HASH_DELETE(hh, co->table, ks);
            free(ks);
        }
        pthread_mutex_unlock(&co->lock);
        return rc;
    }
    ks->refs++;
    if (op == CO_GET) {
        ks->open_get = e;
    } else {
        ks->open_get = NULL; /* later gets must observe this write */
        ks->last_write = e;
    }
    (*requests)++;
    co->counters.keys_in_flight++;
    if (co->counters.peak_waiters == 0)
        co->counters.peak_waiters = 1;
    pthread_mutex_unlock(&co->lock);
    return MOMENTO_OK;
}

int momento_coalescing_get(momento_coalescer *co, const char *cache, const void *key,
                           size_t key_len, const momento_request_options *opts, momento_callback cb,
                           void *userdata)
{
    return submit(co, CO_GET, cache, key, key_len, NULL, 0, 0, opts, cb, userdata);
}

int momento_coalescing_set(momento_coalescer *co, const char *cache, const void *key,
                           size_t key_len, const void *value, size_t value_len, uint64_t ttl_ms,
                           const momento_request_options *opts, momento_callback cb, void *userdata)
{
    return submit(co, CO_SET, cache, key, key_len, value, value_len, ttl_ms, opts, cb, userdata);
}

int momento_coalescing_delete(momento_coalescer *co, const char *cache, const void *key,
                              size_t key_len, const momento_request_options *opts,
                              momento_callback cb, void *userdata)
{
    return submit(co, CO_DELETE, cache, key, key_len, NULL, 0, 0, opts, cb, userdata);
}

/* Blocking variants: the coalescing call plus a wait, as for the client's. */
int momento_coalescing_get_sync(momento_coalescer *co, const char *cache, const void *key,
                                size_t key_len, const momento_request_options *opts,
                                momento_result **ret)
{
    momento__blocking b;
    MOMENTO__CHECK(momento__blocking_begin(&b, co ? co->client : NULL, ret));
    return momento__blocking_wait(
        &b, momento_coalescing_get(co, cache, key, key_len, opts, momento__blocking_done, &b), ret);
}

int momento_coalescing_set_sync(momento_coalescer *co, const char *cache, const void *key,
                                size_t key_len, const void *value, size_t value_len,
                                uint64_t ttl_ms, const momento_request_options *opts,
                                momento_result **ret)
{
    momento__blocking b;
    MOMENTO__CHECK(momento__blocking_begin(&b, co ? co->client : NULL, ret));
    return momento__blocking_wait(&b,
                                  momento_coalescing_set(co, cache, key, key_len, value, value_len,
                                                         ttl_ms, opts, momento__blocking_done, &b),
                                  ret);
}

int momento_coalescing_delete_sync(momento_coalescer *co, const char *cache, const void *key,
                                   size_t key_len, const momento_request_options *opts,
                                   momento_result **ret)
{
    momento__blocking b;
    MOMENTO__CHECK(momento__blocking_begin(&b, co ? co->client : NULL, ret));
    return momento__blocking_wait(
        &b, momento_coalescing_delete(co, cache, key, key_len, opts, momento__blocking_done, &b), ret);
}
