/* The list RPCs, on the ring buffer of coll_list.h. Momento's rules, as its
 * SDKs' integration tests show them:
 * - pushes and concatenations create the list, answer its length after the
 *   write, and cap it at truncate_*_to_size (0: no cap) by dropping from the
 *   other end, the new values included when there are more of them than
 *   the cap;
 * - a missing list reads as Missing, and so does a fetch whose slice holds
 *   nothing (the Go SDK's "provides no start and 0 as end yields no result");
 * - a list whose last element goes is deleted;
 * - CollectionTtl: a write that creates the list gives it ttl_milliseconds,
 *   a write to an existing one resets its TTL only with refresh_ttl.
 * A write is checked against --max-memory before it changes anything, so a
 * refused one leaves the list as it was. */
#include "rpc/srv_rpc.h"

#include "core/srv_server.h"
#include "data/coll_list.h"

#include "cacheclient.pb-c.h"

#include <stdlib.h>

typedef struct list_coll {
    store_coll hdr;
    clist l;
} list_coll;

/* The structure itself and its share of the item, beside its elements. */
#define LIST_BASE_BYTES ((uint64_t)sizeof(list_coll) + 16)

static void list_destroy(store_coll *coll)
{
    list_coll *lc = (list_coll *)coll;
    clist_destroy(&lc->l);
    free(lc);
}

static clist *list_of(store_item *it)
{
    return &((list_coll *)it->coll)->l;
}

/* The list at `key` in *ret (NULL when absent). false, with the reply set,
 * for an empty key or a key of another kind. */
static bool find_list(momento_local *s, store_cache *c, srv_reply *r,
                      const ProtobufCBinaryData *key, int64_t now, store_item **ret)
{
    if (!srv_check_key(r, key))
        return false;
    int rc = store_coll_find(&s->store, c, key->data, key->len, STORE_LIST, now, ret);
    if (rc != 0) {
        srv_reply_store_error(s, r, rc, 0);
        return false;
    }
    return true;
}

/* After a removal: the smaller cost, or the item gone with its last
 * element. Shrinking never fails. */
static void after_removal(momento_local *s, store_item *it)
{
    clist *l = list_of(it);
    if (l->len == 0)
        store_remove(&s->store, it);
    else
        store_coll_resize(&s->store, it, LIST_BASE_BYTES + l->bytes);
}

/* ---- Adding values ---- */

typedef struct list_add {
    const ProtobufCBinaryData *key;
    const ProtobufCBinaryData *values;
    size_t n;
    bool front;         /* at the front, keeping the values' order; else at the back */
    uint32_t truncate;  /* keep at most this many, dropping from the other end; 0: no cap */
    uint64_t ttl_ms;
    bool refresh_ttl;
} list_add;

static void free_elems(clist_elem **elems, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++) {
        clist_elem_free(elems[i]);
        srv_yield();
    }
}

/* Copies the values; NULL when out of memory. */
static clist_elem **copy_values(const list_add *a)
{
    clist_elem **elems = calloc(a->n ? a->n : 1, sizeof(*elems));
    if (!elems)
        return NULL;
    for (size_t i = 0; i < a->n; i++) {
        srv_yield();
        elems[i] = clist_elem_new(a->values[i].data, a->values[i].len);
        if (!elems[i]) {
            free_elems(elems, 0, i);
            free(elems);
            return NULL;
        }
    }
    return elems;
}

/* How many of the n new values a truncation drops, and how many of the old
 * ones: the old go first, as they are further from the end written. */
static void plan_truncation(const list_add *a, size_t old_len, size_t *drop_old, size_t *drop_new)
{
    size_t total = old_len + a->n, drop = 0;
    if (a->truncate && total > a->truncate)
        drop = total - a->truncate;
    *drop_old = drop < old_len ? drop : old_len;
    *drop_new = drop - *drop_old;
}

/* The new values kept: [*from, *to) of the request's. Pushed at the front,
 * the ones dropped are the last of them (nearest the back); at the back,
 * the first. */
static void kept_range(const list_add *a, size_t drop_new, size_t *from, size_t *to)
{
    *from = a->front ? 0 : drop_new;
    *to = a->front ? a->n - drop_new : a->n;
}

/* Pushes before dropping: the room reserved is for the pushes, and a drop
 * may give ring memory back. */
static void commit(clist *l, const list_add *a, clist_elem **elems, size_t drop_old,
                   size_t drop_new)
{
    size_t from, to;
    kept_range(a, drop_new, &from, &to);
    if (a->front) {
        for (size_t i = to; i > from; i--) {
            clist_push_front(l, elems[i - 1]);
            srv_yield();
        }
        free_elems(elems, to, a->n);
        clist_drop_back(l, drop_old);
    } else {
        for (size_t i = from; i < to; i++) {
            clist_push_back(l, elems[i]);
            srv_yield();
        }
        free_elems(elems, 0, from);
        clist_drop_front(l, drop_old);
    }
}

/* Runs the write; returns the list's length after it, or -1 with the
 * reply set. */
static int64_t add_values(momento_local *s, store_cache *c, srv_reply *r, const list_add *a)
{
    int64_t now = store_now_ms();
    store_item *it;
    if (!find_list(s, c, r, a->key, now, &it))
        return -1;
    uint64_t payload = 0;
    for (size_t i = 0; i < a->n; i++) {
        if (!srv_check_element(r, a->values[i].len))
            return -1;
        payload += a->values[i].len;
        srv_yield();
    }
    list_coll *fresh = NULL;
    clist_elem **elems = copy_values(a);
    if (elems && !it) {
        fresh = calloc(1, sizeof(*fresh));
        if (fresh) {
            fresh->hdr.destroy = list_destroy;
            clist_init(&fresh->l);
        }
    }
    clist *l = it ? list_of(it) : fresh ? &fresh->l : NULL;
    if (!elems || !l || clist_reserve(l, a->n) != 0) {
        if (elems)
            free_elems(elems, 0, a->n);
        free(elems);
        if (fresh)
            list_destroy(&fresh->hdr);
        srv_reply_no_memory(r);
        return -1;
    }
    size_t drop_old, drop_new, from, to;
    plan_truncation(a, l->len, &drop_old, &drop_new);
    kept_range(a, drop_new, &from, &to);
    uint64_t bytes = LIST_BASE_BYTES + l->bytes -
                     (a->front ? clist_cost_back(l, drop_old) : clist_cost_front(l, drop_old));
    uint64_t wire = l->wire -
                    (a->front ? clist_wire_back(l, drop_old) : clist_wire_front(l, drop_old));
    for (size_t i = from; i < to; i++) {
        bytes += clist_elem_cost(a->values[i].len);
        wire += clist_elem_wire(a->values[i].len);
        srv_yield();
    }
    if (!srv_check_collection_size(s, r, a->key->len, wire)) {
        free_elems(elems, 0, a->n);
        free(elems);
        if (fresh)
            list_destroy(&fresh->hdr);
        return -1;
    }
    int rc = it ? store_coll_resize(&s->store, it, bytes) : 0;
    if (rc != 0) {
        free_elems(elems, 0, a->n);
        free(elems);
        srv_reply_store_error(s, r, rc, a->key->len + l->payload + payload);
        return -1;
    }
    commit(l, a, elems, drop_old, drop_new);
    free(elems);
    if (it) {
        store_coll_refresh_ttl(it, a->ttl_ms, a->refresh_ttl, now);
        return (int64_t)l->len;
    }
    if (l->len == 0) {
        /* Nothing to add to a list that does not exist: no list. */
        list_destroy(&fresh->hdr);
        return 0;
    }
    fresh->hdr.bytes = bytes;
    rc = store_coll_add(&s->store, c, a->key->data, a->key->len, STORE_LIST, &fresh->hdr,
                        a->ttl_ms, now, &it);
    if (rc != 0) {
        size_t item_len = a->key->len + fresh->l.payload;
        list_destroy(&fresh->hdr);
        srv_reply_store_error(s, r, rc, item_len);
        return -1;
    }
    return (int64_t)fresh->l.len;
}

void srv_list_push_front(momento_local *s, store_cache *c, const ProtobufCMessage *msg,
                         srv_reply *r)
{
    const CacheClient__ListPushFrontRequest *req = (const CacheClient__ListPushFrontRequest *)msg;
    list_add a = {&req->list_name, &req->value, 1, true, req->truncate_back_to_size,
                  req->ttl_milliseconds, req->refresh_ttl};
    int64_t len = add_values(s, c, r, &a);
    if (len < 0)
        return;
    CacheClient__ListPushFrontResponse resp = CACHE_CLIENT____LIST_PUSH_FRONT_RESPONSE__INIT;
    resp.list_length = (uint32_t)len;
    srv_reply_add(r, &resp.base);
}

void srv_list_push_back(momento_local *s, store_cache *c, const ProtobufCMessage *msg,
                        srv_reply *r)
{
    const CacheClient__ListPushBackRequest *req = (const CacheClient__ListPushBackRequest *)msg;
    list_add a = {&req->list_name, &req->value, 1, false, req->truncate_front_to_size,
                  req->ttl_milliseconds, req->refresh_ttl};
    int64_t len = add_values(s, c, r, &a);
    if (len < 0)
        return;
    CacheClient__ListPushBackResponse resp = CACHE_CLIENT____LIST_PUSH_BACK_RESPONSE__INIT;
    resp.list_length = (uint32_t)len;
    srv_reply_add(r, &resp.base);
}

void srv_list_concatenate_front(momento_local *s, store_cache *c, const ProtobufCMessage *msg,
                                srv_reply *r)
{
    const CacheClient__ListConcatenateFrontRequest *req =
        (const CacheClient__ListConcatenateFrontRequest *)msg;
    list_add a = {&req->list_name, req->values, req->n_values, true, req->truncate_back_to_size,
                  req->ttl_milliseconds, req->refresh_ttl};
    int64_t len = add_values(s, c, r, &a);
    if (len < 0)
        return;
    CacheClient__ListConcatenateFrontResponse resp =
        CACHE_CLIENT____LIST_CONCATENATE_FRONT_RESPONSE__INIT;
    resp.list_length = (uint32_t)len;
    srv_reply_add(r, &resp.base);
}

void srv_list_concatenate_back(momento_local *s, store_cache *c, const ProtobufCMessage *msg,
                               srv_reply *r)
{
    const CacheClient__ListConcatenateBackRequest *req =
        (const CacheClient__ListConcatenateBackRequest *)msg;
    list_add a = {&req->list_name, req->values, req->n_values, false, req->truncate_front_to_size,
                  req->ttl_milliseconds, req->refresh_ttl};
    int64_t len = add_values(s, c, r, &a);
    if (len < 0)
        return;
    CacheClient__ListConcatenateBackResponse resp =
        CACHE_CLIENT____LIST_CONCATENATE_BACK_RESPONSE__INIT;
    resp.list_length = (uint32_t)len;
    srv_reply_add(r, &resp.base);
}

/* ---- Pops ---- */

/* The popped element (the caller's) and the length left, or NULL for a
 * missing list; *ok false with the reply set on error. */
static clist_elem *pop(momento_local *s, store_cache *c, srv_reply *r,
                       const ProtobufCBinaryData *key, bool front, uint32_t *left, bool *ok)
{
    store_item *it;
    *ok = find_list(s, c, r, key, store_now_ms(), &it);
    if (!*ok || !it)
        return NULL;
    clist *l = list_of(it);
    clist_elem *e = front ? clist_pop_front(l) : clist_pop_back(l);
    *left = (uint32_t)l->len;
    after_removal(s, it);
    return e;
}

void srv_list_pop_front(momento_local *s, store_cache *c, const ProtobufCMessage *msg,
                        srv_reply *r)
{
    const CacheClient__ListPopFrontRequest *req = (const CacheClient__ListPopFrontRequest *)msg;
    uint32_t left = 0;
    bool ok;
    clist_elem *e = pop(s, c, r, &req->list_name, true, &left, &ok);
    if (!ok)
        return;
    CacheClient__ListPopFrontResponse resp = CACHE_CLIENT____LIST_POP_FRONT_RESPONSE__INIT;
    CacheClient__ListPopFrontResponse__Found found =
        CACHE_CLIENT____LIST_POP_FRONT_RESPONSE____FOUND__INIT;
    CacheClient__ListPopFrontResponse__Missing missing =
        CACHE_CLIENT____LIST_POP_FRONT_RESPONSE____MISSING__INIT;
    if (e) {
        found.front = (ProtobufCBinaryData){e->len, e->data};
        found.list_length = left;
        resp.list_case = CACHE_CLIENT____LIST_POP_FRONT_RESPONSE__LIST_FOUND;
        resp.found = &found;
    } else {
        resp.list_case = CACHE_CLIENT____LIST_POP_FRONT_RESPONSE__LIST_MISSING;
        resp.missing = &missing;
    }
    srv_reply_add(r, &resp.base);
    clist_elem_free(e);
}

void srv_list_pop_back(momento_local *s, store_cache *c, const ProtobufCMessage *msg,
                       srv_reply *r)
{
    const CacheClient__ListPopBackRequest *req = (const CacheClient__ListPopBackRequest *)msg;
    uint32_t left = 0;
    bool ok;
    clist_elem *e = pop(s, c, r, &req->list_name, false, &left, &ok);
    if (!ok)
        return;
    CacheClient__ListPopBackResponse resp = CACHE_CLIENT____LIST_POP_BACK_RESPONSE__INIT;
    CacheClient__ListPopBackResponse__Found found =
        CACHE_CLIENT____LIST_POP_BACK_RESPONSE____FOUND__INIT;
    CacheClient__ListPopBackResponse__Missing missing =
        CACHE_CLIENT____LIST_POP_BACK_RESPONSE____MISSING__INIT;
    if (e) {
        found.back = (ProtobufCBinaryData){e->len, e->data};
        found.list_length = left;
        resp.list_case = CACHE_CLIENT____LIST_POP_BACK_RESPONSE__LIST_FOUND;
        resp.found = &found;
    } else {
        resp.list_case = CACHE_CLIENT____LIST_POP_BACK_RESPONSE__LIST_MISSING;
        resp.missing = &missing;
    }
    srv_reply_add(r, &resp.base);
    clist_elem_free(e);
}

/* ---- Slices ---- */

/* A python-like slice of a list of `len`: a negative index counts from the
 * back, each end is clamped to [0, len], and an inverted slice is empty.
 * Sets [*from, *to). */
static void slice(size_t len, bool has_start, int32_t start, bool has_end, int32_t end,
                  size_t *from, size_t *to)
{
    int64_t n = (int64_t)len;
    int64_t b = has_start ? start : 0, e = has_end ? end : n;
    if (b < 0)
        b += n;
    if (e < 0)
        e += n;
    b = b < 0 ? 0 : b > n ? n : b;
    e = e < 0 ? 0 : e > n ? n : e;
    *from = (size_t)b;
    *to = (size_t)(e > b ? e : b);
}

void srv_list_fetch(momento_local *s, store_cache *c, const ProtobufCMessage *msg, srv_reply *r)
{
    const CacheClient__ListFetchRequest *req = (const CacheClient__ListFetchRequest *)msg;
    store_item *it;
    if (!find_list(s, c, r, &req->list_name, store_now_ms(), &it))
        return;
    CacheClient__ListFetchResponse resp = CACHE_CLIENT____LIST_FETCH_RESPONSE__INIT;
    CacheClient__ListFetchResponse__Found found = CACHE_CLIENT____LIST_FETCH_RESPONSE____FOUND__INIT;
    CacheClient__ListFetchResponse__Missing missing =
        CACHE_CLIENT____LIST_FETCH_RESPONSE____MISSING__INIT;
    size_t from = 0, to = 0;
    if (it)
        slice(list_of(it)->len,
              req->start_index_case == CACHE_CLIENT____LIST_FETCH_REQUEST__START_INDEX_INCLUSIVE_START,
              req->inclusive_start,
              req->end_index_case == CACHE_CLIENT____LIST_FETCH_REQUEST__END_INDEX_EXCLUSIVE_END,
              req->exclusive_end, &from, &to);
    ProtobufCBinaryData *values = NULL;
    if (from < to) {
        values = malloc((to - from) * sizeof(*values));
        if (!values) {
            srv_reply_no_memory(r);
            return;
        }
        /* Borrowed: the reply is packed before the list can change. */
        for (size_t i = from; i < to; i++) {
            const clist_elem *e = clist_at(list_of(it), i);
            values[i - from] = (ProtobufCBinaryData){e->len, (uint8_t *)e->data};
            srv_yield();
        }
        found.n_values = to - from;
        found.values = values;
        resp.list_case = CACHE_CLIENT____LIST_FETCH_RESPONSE__LIST_FOUND;
        resp.found = &found;
    } else {
        resp.list_case = CACHE_CLIENT____LIST_FETCH_RESPONSE__LIST_MISSING;
        resp.missing = &missing;
    }
    srv_reply_add(r, &resp.base);
    free(values);
}

void srv_list_retain(momento_local *s, store_cache *c, const ProtobufCMessage *msg, srv_reply *r)
{
    const CacheClient__ListRetainRequest *req = (const CacheClient__ListRetainRequest *)msg;
    int64_t now = store_now_ms();
    store_item *it;
    if (!find_list(s, c, r, &req->list_name, now, &it))
        return;
    CacheClient__ListRetainResponse resp = CACHE_CLIENT____LIST_RETAIN_RESPONSE__INIT;
    CacheClient__ListRetainResponse__Found found =
        CACHE_CLIENT____LIST_RETAIN_RESPONSE____FOUND__INIT;
    CacheClient__ListRetainResponse__Missing missing =
        CACHE_CLIENT____LIST_RETAIN_RESPONSE____MISSING__INIT;
    if (it) {
        clist *l = list_of(it);
        size_t from, to;
        slice(l->len,
              req->start_index_case == CACHE_CLIENT____LIST_RETAIN_REQUEST__START_INDEX_INCLUSIVE_START,
              req->inclusive_start,
              req->end_index_case == CACHE_CLIENT____LIST_RETAIN_REQUEST__END_INDEX_EXCLUSIVE_END,
              req->exclusive_end, &from, &to);
        clist_drop_back(l, l->len - to);
        clist_drop_front(l, from);
        found.list_length = (uint32_t)l->len;
        if (l->len)
            store_coll_refresh_ttl(it, req->ttl_milliseconds, req->refresh_ttl, now);
        after_removal(s, it);
        resp.list_case = CACHE_CLIENT____LIST_RETAIN_RESPONSE__LIST_FOUND;
        resp.found = &found;
    } else {
        resp.list_case = CACHE_CLIENT____LIST_RETAIN_RESPONSE__LIST_MISSING;
        resp.missing = &missing;
    }
    srv_reply_add(r, &resp.base);
}

/* ---- Removals ---- */

void srv_list_remove(momento_local *s, store_cache *c, const ProtobufCMessage *msg, srv_reply *r)
{
    const CacheClient__ListRemoveRequest *req = (const CacheClient__ListRemoveRequest *)msg;
    if (req->remove_case != CACHE_CLIENT____LIST_REMOVE_REQUEST__REMOVE_ALL_ELEMENTS_WITH_VALUE) {
        srv_reply_error(r, GRPC_STATUS_INVALID_ARGUMENT, NULL,
                        "ListRemove needs all_elements_with_value");
        return;
    }
    store_item *it;
    if (!find_list(s, c, r, &req->list_name, store_now_ms(), &it))
        return;
    CacheClient__ListRemoveResponse resp = CACHE_CLIENT____LIST_REMOVE_RESPONSE__INIT;
    CacheClient__ListRemoveResponse__Found found =
        CACHE_CLIENT____LIST_REMOVE_RESPONSE____FOUND__INIT;
    CacheClient__ListRemoveResponse__Missing missing =
        CACHE_CLIENT____LIST_REMOVE_RESPONSE____MISSING__INIT;
    if (it) {
        clist *l = list_of(it);
        clist_remove_value(l, req->all_elements_with_value.data, req->all_elements_with_value.len);
        found.list_length = (uint32_t)l->len;
        after_removal(s, it);
        resp.list_case = CACHE_CLIENT____LIST_REMOVE_RESPONSE__LIST_FOUND;
        resp.found = &found;
    } else {
        resp.list_case = CACHE_CLIENT____LIST_REMOVE_RESPONSE__LIST_MISSING;
        resp.missing = &missing;
    }
    srv_reply_add(r, &resp.base);
}

/* Erases the ranges, each [begin_index, begin_index + count) of the list
 * as it was before the call (overlaps allowed, past the end ignored).
 * false when out of memory.
 *
 * O(ranges + length), whatever the ranges: each records only where it
 * ends, at the index where it begins, and one pass carries the furthest
 * end reached so far. Marking every range's elements one by one cost
 * ranges x length, and a 5 MB request of 650,000 ranges over a long list
 * held the server thread for minutes. */
static bool erase_ranges(clist *l, const CacheClient__ListEraseRequest__ListRanges *some)
{
    size_t n = l->len;
    size_t *reach = calloc(n ? n : 1, sizeof(*reach)); /* reach[b]: the furthest end from b */
    uint8_t *marks = calloc(n ? n : 1, 1);
    if (!reach || !marks) {
        free(reach);
        free(marks);
        return false;
    }
    for (size_t k = 0; k < some->n_ranges; k++) {
        uint64_t b = some->ranges[k]->begin_index;
        uint64_t e = b + some->ranges[k]->count; /* a uint32 count: no overflow */
        if (b >= n || e == b)
            continue;
        size_t end = e < n ? (size_t)e : n;
        if (end > reach[b])
            reach[b] = end;
        srv_yield();
    }
    size_t cover = 0; /* elements below this index are in some range */
    for (size_t i = 0; i < n; i++) {
        if (reach[i] > cover)
            cover = reach[i];
        marks[i] = i < cover;
        srv_yield();
    }
    free(reach);
    clist_remove_marked(l, marks);
    free(marks);
    return true;
}

void srv_list_erase(momento_local *s, store_cache *c, const ProtobufCMessage *msg, srv_reply *r)
{
    const CacheClient__ListEraseRequest *req = (const CacheClient__ListEraseRequest *)msg;
    if (req->erase_case != CACHE_CLIENT____LIST_ERASE_REQUEST__ERASE_SOME &&
        req->erase_case != CACHE_CLIENT____LIST_ERASE_REQUEST__ERASE_ALL) {
        srv_reply_error(r, GRPC_STATUS_INVALID_ARGUMENT, NULL, "ListErase needs some or all");
        return;
    }
    store_item *it;
    if (!find_list(s, c, r, &req->list_name, store_now_ms(), &it))
        return;
    CacheClient__ListEraseResponse resp = CACHE_CLIENT____LIST_ERASE_RESPONSE__INIT;
    CacheClient__ListEraseResponse__Found found = CACHE_CLIENT____LIST_ERASE_RESPONSE____FOUND__INIT;
    CacheClient__ListEraseResponse__Missing missing =
        CACHE_CLIENT____LIST_ERASE_RESPONSE____MISSING__INIT;
    if (it) {
        clist *l = list_of(it);
        if (req->erase_case == CACHE_CLIENT____LIST_ERASE_REQUEST__ERASE_ALL)
            clist_drop_front(l, l->len);
        else if (!erase_ranges(l, req->some)) {
            srv_reply_no_memory(r);
            return;
        }
        found.list_length = (uint32_t)l->len;
        after_removal(s, it);
        resp.list_case = CACHE_CLIENT____LIST_ERASE_RESPONSE__LIST_FOUND;
        resp.found = &found;
    } else {
        resp.list_case = CACHE_CLIENT____LIST_ERASE_RESPONSE__LIST_MISSING;
        resp.missing = &missing;
    }
    srv_reply_add(r, &resp.base);
}

void srv_list_length(momento_local *s, store_cache *c, const ProtobufCMessage *msg, srv_reply *r)
{
    const CacheClient__ListLengthRequest *req = (const CacheClient__ListLengthRequest *)msg;
    store_item *it;
    if (!find_list(s, c, r, &req->list_name, store_now_ms(), &it))
        return;
    CacheClient__ListLengthResponse resp = CACHE_CLIENT____LIST_LENGTH_RESPONSE__INIT;
    CacheClient__ListLengthResponse__Found found = CACHE_CLIENT____LIST_LENGTH_RESPONSE____FOUND__INIT;
    CacheClient__ListLengthResponse__Missing missing =
        CACHE_CLIENT____LIST_LENGTH_RESPONSE____MISSING__INIT;
    if (it) {
        found.length = (uint32_t)list_of(it)->len;
        resp.list_case = CACHE_CLIENT____LIST_LENGTH_RESPONSE__LIST_FOUND;
        resp.found = &found;
    } else {
        resp.list_case = CACHE_CLIENT____LIST_LENGTH_RESPONSE__LIST_MISSING;
        resp.missing = &missing;
    }
    srv_reply_add(r, &resp.base);
}
