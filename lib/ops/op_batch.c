/* Get and set batches over Momento's server-streaming RPCs: one request
 * carrying every key, one response message per key, in order, gathered into
 * a single result whose items are the per-key results (built, sent and
 * decoded by kv_send.c, which the batcher's batches go through too); and
 * delete batches, one Delete per key. */
#include "layers/write.h"
#include "ops/op.h"

#include "base/alloc.h"
#include "engine/respond.h"
#include "model/metrics.h"
#include "model/result.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* The caller's arrays, as momento__send_batch() reads them. */
typedef struct batch_arrays {
    const void *const *keys;
    const size_t *key_lens;
    const void *const *values; /* a set's; NULL for a get */
    const size_t *value_lens;
    uint64_t ttl_ms;
} batch_arrays;

static void array_at(const void *src, size_t i, momento__batch_item *out)
{
    const batch_arrays *a = src;
    out->key = a->keys[i];
    out->key_len = a->key_lens[i];
    out->value = a->values ? a->values[i] : NULL;
    out->value_len = a->values ? a->value_lens[i] : 0;
    out->ttl_ms = a->ttl_ms;
}

int momento_get_batch(momento_client *c, const char *cache, const void *const *keys,
                      const size_t *key_lens, size_t n, const momento_request_options *opts,
                      momento_callback cb, void *userdata)
{
    MOMENTO__CHECK(momento__check_keys_request(c, cache, keys, key_lens, NULL, NULL, n, opts, cb));
    batch_arrays a = {.keys = keys, .key_lens = key_lens};
    momento__call_opts resolved;
    momento__call_opts_from(c, opts, &resolved);
    return momento__send_batch(c, false, cache, n, array_at, &a, &resolved, cb, userdata);
}

int momento_get_batch_sync(momento_client *c, const char *cache, const void *const *keys,
                           const size_t *key_lens, size_t n, const momento_request_options *opts,
                           momento_result **ret)
{
    MOMENTO__SYNC(momento_get_batch(c, cache, keys, key_lens, n, opts, MOMENTO__SYNC_CB));
}

int momento_set_batch(momento_client *c, const char *cache, const void *const *keys,
                      const size_t *key_lens, const void *const *values, const size_t *value_lens,
                      size_t n, uint64_t ttl_ms, const momento_request_options *opts,
                      momento_callback cb, void *userdata)
{
    /* Prepared once (write.c): compressed, checked, coalescers told. */
    momento__writes w;
    MOMENTO__CHECK(momento__writes_begin(&w, c, cache, keys, key_lens, values, value_lens, n,
                                         ttl_ms, opts, cb));
    /* The values as prepared (compressed), with the effective TTL. */
    batch_arrays a = {keys, key_lens, w.values, w.value_lens, w.ttl_ms};
    momento__call_opts resolved;
    momento__call_opts_from(c, opts, &resolved);
    int rc = momento__send_batch(c, true, cache, n, array_at, &a, &resolved, cb, userdata);
    momento__writes_end(&w); /* packed at submit */
    return rc;
}

int momento_set_batch_sync(momento_client *c, const char *cache, const void *const *keys,
                           const size_t *key_lens, const void *const *values,
                           const size_t *value_lens, size_t n, uint64_t ttl_ms,
                           const momento_request_options *opts, momento_result **ret)
{
    MOMENTO__SYNC(momento_set_batch(c, cache, keys, key_lens, values, value_lens, n, ttl_ms, opts,
                                    MOMENTO__SYNC_CB));
}

/* A batch delete: n Delete calls of the library's own (no_metrics, not
 * counted: the batch is the one request), each writing its own slot;
 * whoever brings `pending` to 0 - the last delete's callback, or the
 * submitter after its last send - answers. */
typedef struct delete_batch {
    momento__compound op; /* one deadline and token for every key */
    atomic_size_t pending;
    size_t n;
    momento_result *items;
    struct delete_slot {
        struct delete_batch *batch;
        size_t i;
    } *slots;
} delete_batch;

/* Frees a batch and its arrays (either may be NULL: an allocation that
 * failed); the one place that knows what a batch owns. */
static void delete_batch_free(delete_batch *b)
{
    free(b->items);
    free(b->slots);
    free(b);
}

static void delete_batch_finish(delete_batch *b)
{
    momento_result out;
    memset(&out, 0, sizeof(out));
    out.outcome = MOMENTO_OUTCOME_SUCCESS;
    out.message = "";
    out.attempts = 1;
    out.items = b->items;
    out.n_items = b->n;
    /* Every delete goes the same way: the first that reached the wire
     * says which. */
    for (size_t i = 0; i < b->n && !out.transport; i++)
        out.transport = b->items[i].transport;
    momento__compound_answer(&b->op, MOMENTO__RPC_DELETE, &out);
    delete_batch_free(b);
}

static void delete_batch_one(delete_batch *b, size_t i, int err, int status, int attempts,
                             int transport)
{
    momento_result *it = &b->items[i];
    it->error = err;
    it->grpc_status = status;
    it->outcome = err == MOMENTO_OK ? MOMENTO_OUTCOME_SUCCESS : MOMENTO_OUTCOME_ERROR;
    it->message = err == MOMENTO_OK ? "" : momento_strerror(err); /* static */
    it->attempts = attempts;
    it->transport = transport;
    if (atomic_fetch_sub_explicit(&b->pending, 1, memory_order_acq_rel) == 1)
        delete_batch_finish(b);
}

static void delete_batch_done(const momento_result *r, void *userdata)
{
    struct delete_slot *s = userdata;
    delete_batch_one(s->batch, s->i, r->error, r->grpc_status, r->attempts, r->transport);
}

int momento_delete_batch(momento_client *c, const char *cache, const void *const *keys,
                         const size_t *key_lens, size_t n, const momento_request_options *opts,
                         momento_callback cb, void *userdata)
{
    MOMENTO__CHECK(momento__check_keys_request(c, cache, keys, key_lens, NULL, NULL, n, opts, cb));
    /* Each key is a write, as momento_delete()'s is: the near cache drops
     * its entry (read-your-writes) and invalidation publishes it. Its
     * deletes go to momento__send_delete(), below the notice
     * momento_delete() gives. Noted before a refusal of no memory too:
     * an entry dropped for nothing costs one read. */
    for (size_t i = 0; i < n; i++)
        momento__client_note_write(c, NULL, cache, keys[i], key_lens[i]);
    delete_batch *b = momento__calloc(1, sizeof(*b));
    if (!b)
        return MOMENTO_ERR_NO_MEMORY;
    b->items = momento__calloc(n, sizeof(*b->items));
    b->slots = b->items ? momento__malloc(n * sizeof(*b->slots)) : NULL;
    if (!b->slots) {
        delete_batch_free(b);
        return MOMENTO_ERR_NO_MEMORY;
    }
    b->n = n;
    momento__compound_begin(&b->op, c, opts, cb, userdata);
    b->op.opts.unbatched = true;
    /* The submitter's hold: no answer before every key is sent or refused. */
    atomic_init(&b->pending, n + 1);
    for (size_t i = 0; i < n; i++) {
        b->slots[i].batch = b;
        b->slots[i].i = i;
        int rc = momento__send_delete(c, cache, keys[i], key_lens[i], &b->op.opts,
                                      delete_batch_done, &b->slots[i]);
        if (rc == MOMENTO_OK)
            continue;
        if (i == 0) {
            /* Nothing went out: refused whole, no callback. */
            momento__compound_refused(&b->op);
            delete_batch_free(b);
            return rc;
        }
        /* Some went: the rest end with this refusal (a client being freed,
         * no memory), reported in their items. */
        for (size_t k = i; k < n; k++)
            delete_batch_one(b, k, rc, -1, 0, MOMENTO_METRICS_TRANSPORT_NONE);
        break;
    }
    if (atomic_fetch_sub_explicit(&b->pending, 1, memory_order_acq_rel) == 1)
        delete_batch_finish(b);
    return MOMENTO_OK;
}

int momento_delete_batch_sync(momento_client *c, const char *cache, const void *const *keys,
                              const size_t *key_lens, size_t n,
                              const momento_request_options *opts, momento_result **ret)
{
    MOMENTO__SYNC(momento_delete_batch(c, cache, keys, key_lens, n, opts, MOMENTO__SYNC_CB));
}
