/* RESP: the list commands - LPUSH, RPUSH, LPOP, RPOP (with a count),
 * LRANGE, LLEN, LINDEX - on Momento's lists.
 *
 * Redis's ranges are inclusive ([start, stop], negatives from the back);
 * Momento's are slices ([start, end), as in Python), which clamp the same
 * way, so stop becomes end = stop + 1, and a stop of -1 "through the last"
 * (MOMENTO_END). A slice that is empty whatever the list's length is
 * refused by Momento; the proxy answers it itself, after asking the
 * list's length only to answer WRONGTYPE as Redis does. */
#include "resp/resp.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int32_t clamp32(long long v)
{
    return v < INT32_MIN ? INT32_MIN : v > INT32_MAX ? INT32_MAX : (int32_t)v;
}

/* Redis's [start, stop] as Momento's [*s, *e); false when that slice is
 * empty for any list (Momento refuses it). */
static bool to_slice(long long start, long long stop, int32_t *s, int32_t *e)
{
    *s = clamp32(start);
    *e = stop == -1 ? MOMENTO_END : clamp32(stop >= INT32_MAX ? INT32_MAX : stop + 1);
    return !((*e >= 0 && *s >= *e) || (*s < 0 && *e <= *s));
}

/* ---- LLEN, and the empty answers that need only the type ---- */

/* LPOP key 0: an empty array for a list, a nil array for none. */
static void on_type_then_pop0(const momento_result *res, void *ud)
{
    px_reply *r = ud;
    if (resp_end_if_failed(r, res))
        return;
    if (momento_result_is_hit(res))
        resp_array(r, 0);
    else
        resp_nil_array(r);
    px_reply_end(r);
}

static void cmd_llen(px_reply *r, int argc, const px_str *argv)
{
    resp_length(r, &argv[1], MOMENTO_ITEM_TYPE_LIST, resp_on_length);
}

/* ---- LPUSH, RPUSH ---- */

static void on_pushed(const momento_result *res, void *ud)
{
    px_reply *r = ud;
    if (resp_end_if_failed(r, res))
        return;
    resp_end_int(r, (long long)momento_result_int(res));
}

static void push(px_reply *r, int argc, const px_str *argv, bool front)
{
    px_backend *b = px_conn_backend(px_reply_conn(r));
    size_t n = (size_t)argc - 2;
    const void **values;
    size_t *lens;
    if (!resp_arrays_new(n, &values, &lens)) {
        resp_end_error(r, "ERR out of memory");
        return;
    }
    /* LPUSH a b c pushes a, then b, then c at the front: c b a. Momento's
     * concatenation keeps its values' order, so they go in reversed. */
    for (size_t i = 0; i < n; i++) {
        const px_str *v = &argv[front ? argc - 1 - (int)i : 2 + (int)i];
        values[i] = v->p;
        lens[i] = v->n;
    }
    momento_collection_ttl t;
    resp_keep_ttl(r, &t);
    const void *const *vs = (const void *const *)values;
    int rc = front ? momento_list_concatenate_front(b->client, b->cache, argv[1].p, argv[1].n, vs,
                                                    lens, n, 0, &t, NULL, on_pushed, r)
                   : momento_list_concatenate_back(b->client, b->cache, argv[1].p, argv[1].n, vs,
                                                   lens, n, 0, &t, NULL, on_pushed, r);
    free(values);
    free(lens);
    resp_submitted(r, rc);
}

static void cmd_lpush(px_reply *r, int argc, const px_str *argv)
{
    push(r, argc, argv, true);
}

static void cmd_rpush(px_reply *r, int argc, const px_str *argv)
{
    push(r, argc, argv, false);
}

/* ---- LPOP, RPOP ---- */

static void on_pop1(const momento_result *res, void *ud)
{
    px_reply *r = ud;
    if (resp_end_if_failed(r, res))
        return;
    if (momento_result_is_hit(res))
        resp_bulk_value(r, res);
    else
        resp_nil(r);
    px_reply_end(r);
}

/* LPOP key count: Momento pops one value a call, so the pops are chained
 * until `count` or an empty list. Each pop is atomic, but a client popping
 * the same list meanwhile can take values from between ours. */
typedef struct pop_req {
    px_reply *r;
    bool front;
    long long want;
    size_t n, cap;
    char **vals;
    size_t *lens;
    size_t key_len;
    char key[];
} pop_req;

static void pop_req_free(pop_req *q)
{
    for (size_t i = 0; i < q->n; i++)
        free(q->vals[i]);
    free(q->vals);
    free(q->lens);
    free(q);
}

static void pop_reply(pop_req *q)
{
    if (q->n == 0) {
        resp_nil_array(q->r);
    } else {
        resp_array(q->r, (long long)q->n);
        for (size_t i = 0; i < q->n; i++)
            resp_bulk(q->r, q->vals[i], q->lens[i]);
    }
    px_reply_end(q->r);
    pop_req_free(q);
}

static void pop_next(pop_req *q);

static void on_pop_n(const momento_result *res, void *ud)
{
    pop_req *q = ud;
    if (momento_result_error(res) != MOMENTO_OK) {
        /* Values already popped are gone from the list: they are the
         * answer. Only a first pop's failure is the command's. */
        if (q->n == 0) {
            resp_end_failure(q->r, res);
            pop_req_free(q);
        } else {
            pop_reply(q);
        }
        return;
    }
    if (!momento_result_is_hit(res)) {
        pop_reply(q);
        return;
    }
    if (q->n == q->cap) {
        size_t cap = q->cap ? 2 * q->cap : 8;
        char **vals = realloc(q->vals, cap * sizeof(*vals));
        if (vals)
            q->vals = vals;
        size_t *lens = vals ? realloc(q->lens, cap * sizeof(*lens)) : NULL;
        if (lens)
            q->lens = lens;
        if (!vals || !lens) {
            resp_end_error(q->r, "ERR out of memory");
            pop_req_free(q);
            return;
        }
        q->cap = cap;
    }
    size_t n;
    const void *v = momento_result_value(res, &n);
    char *copy = malloc(n ? n : 1);
    if (!copy) {
        resp_end_error(q->r, "ERR out of memory");
        pop_req_free(q);
        return;
    }
    memcpy(copy, v, n);
    q->vals[q->n] = copy;
    q->lens[q->n++] = n;
    if ((long long)q->n >= q->want)
        pop_reply(q);
    else
        pop_next(q);
}

static void pop_next(pop_req *q)
{
    px_backend *b = px_conn_backend(px_reply_conn(q->r));
    int rc = q->front ? momento_list_pop_front(b->client, b->cache, q->key, q->key_len, NULL,
                                               on_pop_n, q)
                      : momento_list_pop_back(b->client, b->cache, q->key, q->key_len, NULL,
                                              on_pop_n, q);
    if (rc == MOMENTO_OK) {
        b->stats->backend_calls++;
    } else if (q->n == 0) {
        resp_submitted(q->r, rc);
        pop_req_free(q);
    } else {
        pop_reply(q);
    }
}

static void pop(px_reply *r, int argc, const px_str *argv, bool front)
{
    px_backend *b = px_conn_backend(px_reply_conn(r));
    if (argc == 2) {
        int rc = front ? momento_list_pop_front(b->client, b->cache, argv[1].p, argv[1].n, NULL,
                                                on_pop1, r)
                       : momento_list_pop_back(b->client, b->cache, argv[1].p, argv[1].n, NULL,
                                               on_pop1, r);
        resp_submitted(r, rc);
        return;
    }
    if (argc > 3) {
        resp_errorf(r, "ERR wrong number of arguments for '%s' command", front ? "lpop" : "rpop");
        px_reply_end(r);
        return;
    }
    long long count;
    if (!resp_pop_count(r, argv, MOMENTO_ITEM_TYPE_LIST, on_type_then_pop0, &count))
        return;
    pop_req *q = resp_ctx_new(r, sizeof(*q) + argv[1].n);
    if (!q)
        return;
    q->r = r;
    q->front = front;
    q->want = count;
    q->key_len = argv[1].n;
    memcpy(q->key, argv[1].p, argv[1].n);
    pop_next(q);
}

static void cmd_lpop(px_reply *r, int argc, const px_str *argv)
{
    pop(r, argc, argv, true);
}

static void cmd_rpop(px_reply *r, int argc, const px_str *argv)
{
    pop(r, argc, argv, false);
}

/* ---- LRANGE, LINDEX ---- */

static void fetch(px_reply *r, const px_str *key, int32_t s, int32_t e, momento_callback cb)
{
    px_backend *b = px_conn_backend(px_reply_conn(r));
    int rc = b->co ? momento_coalescing_list_fetch(b->co, b->cache, key->p, key->n, s, e, NULL, cb,
                                                   r)
                   : momento_list_fetch(b->client, b->cache, key->p, key->n, s, e, NULL, cb, r);
    resp_submitted(r, rc);
}

static void cmd_lrange(px_reply *r, int argc, const px_str *argv)
{
    long long start, stop;
    if (!resp_arg_ll(&argv[2], &start) || !resp_arg_ll(&argv[3], &stop)) {
        resp_end_not_integer(r);
        return;
    }
    int32_t s, e;
    /* A MISS is no list or nothing in the slice: an empty array both. */
    if (to_slice(start, stop, &s, &e))
        fetch(r, &argv[1], s, e, resp_on_values);
    else
        resp_length(r, &argv[1], MOMENTO_ITEM_TYPE_LIST, resp_on_type_then_empty);
}

/* LINDEX with an index that is not a number: Redis looks the key up
 * first, so a missing key answers nil and one of another type WRONGTYPE;
 * only a list gets the number's error. */
static void on_lindex_bad_index(const momento_result *res, void *ud)
{
    px_reply *r = ud;
    if (resp_end_if_failed(r, res))
        return;
    if (momento_result_is_hit(res)) {
        resp_end_not_integer(r);
        return;
    }
    resp_nil(r);
    px_reply_end(r);
}

static void cmd_lindex(px_reply *r, int argc, const px_str *argv)
{
    long long i;
    if (!resp_arg_ll(&argv[2], &i)) {
        resp_length(r, &argv[1], MOMENTO_ITEM_TYPE_LIST, on_lindex_bad_index);
        return;
    }
    int32_t s, e;
    /* An index past what a slice can name is past any list's end. */
    if (i >= INT32_MIN && i < INT32_MAX && to_slice(i, i, &s, &e))
        fetch(r, &argv[1], s, e, resp_on_first_or_nil);
    else
        resp_length(r, &argv[1], MOMENTO_ITEM_TYPE_LIST, resp_on_type_then_nil);
}

const resp_cmd resp_list_cmds[] = {
    {"lpush", -3, cmd_lpush},   {"rpush", -3, cmd_rpush},   {"lpop", -2, cmd_lpop},
    {"rpop", -2, cmd_rpop},     {"lrange", 4, cmd_lrange},  {"llen", 2, cmd_llen},
    {"lindex", 3, cmd_lindex},  {NULL, 0, NULL},
};
