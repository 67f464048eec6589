/* A read of many keys: one GetBatch, and the keys whose answers may be
 * another key's doing asked again alone (multiget.h). One allocation per
 * read holds the copied keys and the tables the answer is assembled in. */
#include "multiget.h"

#include <stdlib.h>
#include <string.h>

typedef struct multiget multiget;

/* What a get asked again alone passes its callback. */
typedef struct alone_ref {
    multiget *g;
    size_t i;
} alone_ref;

struct multiget {
    px_backend *b;
    px_multiget_done done;
    void *ud;
    size_t n;
    size_t pending;               /* gets asked again still out (+1 while they are sent) */
    momento_result *batch;        /* the batch's answer, kept while keys are asked again */
    momento_result **alone;       /* [n] a key's own answer, or NULL: the batch's */
    const momento_result **view;  /* [n] what `done` is given */
    alone_ref *refs;              /* [n] */
    px_str *keys;                 /* [n], their bytes after them */
    char mem[];                   /* the tables above, then the keys' bytes */
};

static multiget *multiget_new(px_backend *b, const px_str *keys, size_t n, px_multiget_done done,
                              void *ud)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += keys[i].n;
    /* The struct ends at a pointer's alignment, every table's entries are
     * pointers and sizes, and the key bytes come last: nothing needs
     * padding. */
    size_t tables = n * (sizeof(momento_result *) + sizeof(const momento_result *) +
                         sizeof(alone_ref) + sizeof(px_str));
    multiget *g = malloc(sizeof(*g) + total + tables);
    if (!g)
        return NULL;
    char *p = g->mem;
    g->alone = (momento_result **)p;
    p += n * sizeof(*g->alone);
    g->view = (const momento_result **)p;
    p += n * sizeof(*g->view);
    g->refs = (alone_ref *)p;
    p += n * sizeof(*g->refs);
    g->keys = (px_str *)p;
    p += n * sizeof(*g->keys);
    for (size_t i = 0; i < n; i++) {
        memcpy(p, keys[i].p, keys[i].n);
        g->keys[i] = (px_str){p, keys[i].n};
        p += keys[i].n;
        g->alone[i] = NULL;
    }
    g->b = b;
    g->done = done;
    g->ud = ud;
    g->n = n;
    g->pending = 0;
    g->batch = NULL;
    return g;
}

/* Key i's answer in the batch's reply `res`: its item, or the batch's
 * result when the batch failed as a whole. */
static const momento_result *batch_answer(const momento_result *res, size_t i)
{
    const momento_result *it =
        momento_result_error(res) == MOMENTO_OK ? momento_result_item(res, i) : NULL;
    return it ? it : res;
}

/* Whether key i is asked again alone (multiget.h). */
static bool ask_again(const momento_result *res, size_t i, size_t n)
{
    int err = momento_result_error(res);
    if (err == MOMENTO_OK) {
        int own = momento_result_error(batch_answer(res, i));
        return own != MOMENTO_OK && own != MOMENTO_ERR_FAILED_PRECONDITION;
    }
    return err == MOMENTO_ERR_FAILED_PRECONDITION && n > 1;
}

/* Every key's answer to `done`, then the read is over. */
static void finish(multiget *g, const momento_result *res)
{
    for (size_t i = 0; i < g->n; i++)
        g->view[i] = g->alone[i] ? g->alone[i] : res ? batch_answer(res, i) : NULL;
    g->done(g->view, g->n, g->ud);
    for (size_t i = 0; i < g->n; i++)
        momento_result_free(g->alone[i]);
    momento_result_free(g->batch);
    free(g);
}

static void on_alone(const momento_result *res, void *ud)
{
    alone_ref *ref = ud;
    multiget *g = ref->g;
    /* Without the memory to keep it, the key keeps its batch answer (the
     * failure it had there). */
    if (momento_result_dup(res, &g->alone[ref->i]) != MOMENTO_OK)
        g->alone[ref->i] = NULL;
    if (--g->pending == 0)
        finish(g, g->batch);
}

static void on_batch(const momento_result *res, void *ud)
{
    multiget *g = ud;
    size_t again = 0;
    for (size_t i = 0; i < g->n; i++)
        again += ask_again(res, i, g->n);
    /* Nothing to ask again, or no memory to keep the batch's answer
     * while asking: the batch's answer it is. */
    if (again == 0 || momento_result_dup(res, &g->batch) != MOMENTO_OK) {
        finish(g, res);
        return;
    }
    px_backend *b = g->b;
    g->pending = 1; /* held until every get is sent */
    for (size_t i = 0; i < g->n; i++) {
        if (!ask_again(g->batch, i, g->n))
            continue;
        g->refs[i] = (alone_ref){g, i};
        const px_str *k = &g->keys[i];
        int rc = b->co ? momento_coalescing_get(b->co, b->cache, k->p, k->n, NULL, on_alone,
                                                &g->refs[i])
                       : momento_get(b->client, b->cache, k->p, k->n, NULL, on_alone, &g->refs[i]);
        /* A get refused (no memory, the client closing): the key keeps
         * its batch answer. */
        if (rc == MOMENTO_OK) {
            b->stats->backend_calls++;
            g->pending++;
        }
    }
    if (--g->pending == 0)
        finish(g, g->batch);
}

/* With a near cache: every key alone, each maybe from memory. */
static int ask_each(multiget *g)
{
    px_backend *b = g->b;
    g->pending = 1; /* held until every get is sent */
    for (size_t i = 0; i < g->n; i++) {
        g->refs[i] = (alone_ref){g, i};
        const px_str *k = &g->keys[i];
        int rc = b->co ? momento_coalescing_get(b->co, b->cache, k->p, k->n, NULL, on_alone,
                                                &g->refs[i])
                       : momento_get(b->client, b->cache, k->p, k->n, NULL, on_alone, &g->refs[i]);
        if (rc != MOMENTO_OK) {
            if (i == 0) { /* nothing asked: the read is refused whole */
                free(g);
                return rc;
            }
            continue; /* the key's answer: NULL (multiget.h) */
        }
        if (i > 0) /* the caller counts one, as for a batch */
            b->stats->backend_calls++;
        g->pending++;
    }
    if (--g->pending == 0)
        finish(g, NULL);
    return MOMENTO_OK;
}

int px_multiget(px_backend *b, const px_str *keys, size_t n, px_multiget_done done, void *ud)
{
    multiget *g = multiget_new(b, keys, n, done, ud);
    if (!g)
        return MOMENTO_ERR_NO_MEMORY;
    if (b->near)
        return ask_each(g);
    /* The batch's key table: the copied keys, in place. */
    const void **ptrs = malloc(n * sizeof(*ptrs));
    size_t *lens = malloc(n * sizeof(*lens));
    int rc = MOMENTO_ERR_NO_MEMORY;
    if (ptrs && lens) {
        for (size_t i = 0; i < n; i++) {
            ptrs[i] = g->keys[i].p;
            lens[i] = g->keys[i].n;
        }
        rc = momento_get_batch(b->client, b->cache, (const void *const *)ptrs, lens, n, NULL,
                               on_batch, g);
    }
    free(ptrs);
    free(lens);
    if (rc != MOMENTO_OK)
        free(g);
    return rc;
}
