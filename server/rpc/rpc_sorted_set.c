/* The sorted set RPCs, on the skiplist and hash table of zset.h. Momento's
 * rules, as its SDKs' integration tests show them:
 * - order by score, ties by the value's bytes; DESCENDING is the exact
 *   reverse, for fetches and ranks alike;
 * - a fetch by rank takes a python-like slice [start, end) of the requested
 *   order, and one that selects nothing is a Hit with no elements (the JS
 *   SDK's "should return an empty list if start rank is out of bounds");
 * - a fetch by score takes inclusive or exclusive bounds, then skips
 *   `offset` matches and returns `count` of them (negative: all);
 * - GetRank on a missing set or value, GetScore on a missing set, Fetch
 *   and Length on a missing set: Missing; Remove on one succeeds;
 * - a set whose last element goes is deleted;
 * - CollectionTtl as for every collection (rpc_list.c);
 * - UnionStore with no source is INVALID_ARGUMENT (the JS SDK's "errors
 *   when no source is provided" passes an empty array its own validation
 *   lets through).
 * NaN is refused wherever a score enters (INVALID_ARGUMENT): it has no
 * place in the order. */
#include "rpc/srv_rpc.h"

#include "core/srv_server.h"
#include "data/zset.h"

#include "cacheclient.pb-c.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>

typedef struct zset_coll {
    store_coll hdr;
    zset z;
} zset_coll;

/* The structure, the skiplist's sentinel and the item's share, beside the
 * elements. */
#define ZSET_BASE_BYTES \
    ((uint64_t)sizeof(zset_coll) + sizeof(zset_node) + ZSET_MAX_HEIGHT * sizeof(zset_link) + 32)

static void zcoll_destroy(store_coll *coll)
{
    zset_coll *zc = (zset_coll *)coll;
    zset_destroy(&zc->z);
    free(zc);
}

/* An empty set not yet in the store, or NULL when out of memory. */
static zset_coll *zcoll_new(void)
{
    zset_coll *zc = calloc(1, sizeof(*zc));
    if (!zc)
        return NULL;
    zc->hdr.destroy = zcoll_destroy;
    if (zset_init(&zc->z) != 0) {
        free(zc);
        return NULL;
    }
    return zc;
}

static zset *set_of(store_item *it)
{
    return &((zset_coll *)it->coll)->z;
}

static uint64_t set_bytes(const zset *z)
{
    return ZSET_BASE_BYTES + z->bytes;
}

/* The sorted set at `key` in *ret (NULL when absent). false, with the
 * reply set, for an empty key or a key of another kind. */
static bool find_set(momento_local *s, store_cache *c, srv_reply *r,
                     const ProtobufCBinaryData *key, int64_t now, store_item **ret)
{
    if (!srv_check_key(r, key))
        return false;
    int rc = store_coll_find(&s->store, c, key->data, key->len, STORE_SORTED_SET, now, ret);
    if (rc != 0) {
        srv_reply_store_error(s, r, rc, 0);
        return false;
    }
    return true;
}

static bool check_score(srv_reply *r, double score, const char *what)
{
    if (isnan(score)) {
        srv_reply_error(r, GRPC_STATUS_INVALID_ARGUMENT, NULL, "%s must not be NaN", what);
        return false;
    }
    return true;
}

/* After removals: the smaller cost, or the item gone with its last
 * element. Shrinking never fails. */
static void after_removal(momento_local *s, store_item *it)
{
    zset *z = set_of(it);
    if (z->len == 0)
        store_remove(&s->store, it);
    else
        store_coll_resize(&s->store, it, set_bytes(z));
}

/* ---- Writing scores ---- */

typedef struct zpair {
    ProtobufCBinaryData value;
    double score;
} zpair;

typedef struct zwrite {
    const ProtobufCBinaryData *key;
    const zpair *pairs; /* a value repeated: the last pair wins */
    size_t n;
    uint64_t ttl_ms;
    bool refresh_ttl;
} zwrite;

static void free_nodes(zset_node **nodes, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        zset_node_free(nodes[i]);
        srv_yield();
    }
    free(nodes);
}

/* Nodes for the values not yet in `z` (NULL for the others), with room in
 * its table for them; NULL when out of memory. What they add to its cost
 * and to its wire size in *cost and *wire (both over-estimates only when
 * the write repeats a new value). */
static zset_node **prepare_nodes(zset *z, const zwrite *w, uint64_t *cost, uint64_t *wire)
{
    zset_node **nodes = calloc(w->n ? w->n : 1, sizeof(*nodes));
    if (!nodes)
        return NULL;
    size_t fresh = 0;
    *cost = 0;
    *wire = 0;
    for (size_t i = 0; i < w->n; i++) {
        srv_yield();
        const ProtobufCBinaryData *v = &w->pairs[i].value;
        if (zset_find(z, v->data, v->len))
            continue;
        nodes[i] = zset_node_new(z, v->data, v->len, w->pairs[i].score);
        if (!nodes[i]) {
            free_nodes(nodes, w->n);
            return NULL;
        }
        *cost += zset_node_cost(nodes[i]);
        *wire += zset_elem_wire(v->len);
        fresh++;
    }
    if (zset_reserve(z, fresh) != 0) {
        free_nodes(nodes, w->n);
        return NULL;
    }
    return nodes;
}

/* Cannot fail: every node and table slot was made beforehand. */
static void commit_pairs(zset *z, const zwrite *w, zset_node **nodes)
{
    for (size_t i = 0; i < w->n; i++) {
        srv_yield();
        const zpair *p = &w->pairs[i];
        zset_node *n = zset_find(z, p->value.data, p->value.len);
        if (n) {
            zset_rescore(z, n, p->score);
            zset_node_free(nodes[i]); /* a repeat of a value new in this write */
        } else {
            zset_insert(z, nodes[i]);
        }
    }
    free(nodes);
}

/* Puts the pairs into the set at w->key, creating it. The check against
 * --max-memory comes before any change, with the cost of every new node
 * counted (an over-estimate only when the write repeats a new value); the
 * exact cost is recorded after. Returns false with the reply set. */
static bool write_pairs(momento_local *s, store_cache *c, srv_reply *r, store_item *it,
                        const zwrite *w, int64_t now)
{
    zset_coll *fresh = it ? NULL : zcoll_new();
    zset *z = it ? set_of(it) : fresh ? &fresh->z : NULL;
    uint64_t cost = 0, wire = 0;
    zset_node **nodes = z ? prepare_nodes(z, w, &cost, &wire) : NULL;
    if (!nodes) {
        if (fresh)
            zcoll_destroy(&fresh->hdr);
        srv_reply_no_memory(r);
        return false;
    }
    if (!srv_check_collection_size(s, r, w->key->len, z->wire + wire)) {
        free_nodes(nodes, w->n);
        if (fresh)
            zcoll_destroy(&fresh->hdr);
        return false;
    }
    if (it) {
        int rc = store_coll_resize(&s->store, it, set_bytes(z) + cost);
        if (rc != 0) {
            free_nodes(nodes, w->n);
            srv_reply_store_error(s, r, rc, w->key->len + z->payload);
            return false;
        }
        commit_pairs(z, w, nodes);
        store_coll_resize(&s->store, it, set_bytes(z));
        store_coll_refresh_ttl(it, w->ttl_ms, w->refresh_ttl, now);
        return true;
    }
    commit_pairs(z, w, nodes);
    if (z->len == 0) {
        zcoll_destroy(&fresh->hdr); /* nothing to put: no set */
        return true;
    }
    fresh->hdr.bytes = set_bytes(z);
    int rc = store_coll_add(&s->store, c, w->key->data, w->key->len, STORE_SORTED_SET,
                            &fresh->hdr, w->ttl_ms, now, NULL);
    if (rc != 0) {
        size_t item_len = w->key->len + z->payload;
        zcoll_destroy(&fresh->hdr);
        srv_reply_store_error(s, r, rc, item_len);
        return false;
    }
    return true;
}

void srv_sorted_set_put(momento_local *s, store_cache *c, const ProtobufCMessage *msg,
                        srv_reply *r)
{
    const CacheClient__SortedSetPutRequest *req = (const CacheClient__SortedSetPutRequest *)msg;
    int64_t now = store_now_ms();
    store_item *it;
    if (!find_set(s, c, r, &req->set_name, now, &it))
        return;
    zpair *pairs = calloc(req->n_elements ? req->n_elements : 1, sizeof(*pairs));
    if (!pairs) {
        srv_reply_no_memory(r);
        return;
    }
    bool ok = true;
    for (size_t i = 0; ok && i < req->n_elements; i++) {
        pairs[i].value = req->elements[i]->value;
        pairs[i].score = req->elements[i]->score;
        ok = srv_check_element(r, pairs[i].value.len) && check_score(r, pairs[i].score, "score");
        srv_yield();
    }
    zwrite w = {&req->set_name, pairs, req->n_elements, req->ttl_milliseconds, req->refresh_ttl};
    if (ok && write_pairs(s, c, r, it, &w, now)) {
        CacheClient__SortedSetPutResponse resp = CACHE_CLIENT____SORTED_SET_PUT_RESPONSE__INIT;
        srv_reply_add(r, &resp.base);
    }
    free(pairs);
}

/* A missing value (or set) starts from 0. A sum that is NaN (+inf plus
 * -inf) is refused like a NaN amount. */
void srv_sorted_set_increment(momento_local *s, store_cache *c, const ProtobufCMessage *msg,
                              srv_reply *r)
{
    const CacheClient__SortedSetIncrementRequest *req =
        (const CacheClient__SortedSetIncrementRequest *)msg;
    int64_t now = store_now_ms();
    store_item *it;
    if (!find_set(s, c, r, &req->set_name, now, &it) || !srv_check_element(r, req->value.len) ||
        !check_score(r, req->amount, "amount"))
        return;
    const zset_node *n = it ? zset_find(set_of(it), req->value.data, req->value.len) : NULL;
    zpair p = {req->value, (n ? n->score : 0) + req->amount};
    if (!check_score(r, p.score, "the incremented score"))
        return;
    zwrite w = {&req->set_name, &p, 1, req->ttl_milliseconds, req->refresh_ttl};
    if (!write_pairs(s, c, r, it, &w, now))
        return;
    CacheClient__SortedSetIncrementResponse resp = CACHE_CLIENT____SORTED_SET_INCREMENT_RESPONSE__INIT;
    resp.score = p.score;
    srv_reply_add(r, &resp.base);
}

/* ---- Fetching ---- */

/* What a fetch returns: k elements from ascending rank `first`, walking
 * up (ascending) or down (descending). */
typedef struct zwindow {
    size_t first;
    size_t k;
    bool down;
} zwindow;

/* A python-like slice [start, end) of the requested order (rpc_list.c's
 * rule), turned into ascending ranks. */
static zwindow window_by_index(size_t len, const CacheClient__SortedSetFetchRequest__ByIndex *bi,
                               bool descending)
{
    int64_t n = (int64_t)len;
    int64_t b = 0, e = n;
    if (bi && bi->start_case ==
                  CACHE_CLIENT____SORTED_SET_FETCH_REQUEST____BY_INDEX__START_INCLUSIVE_START_INDEX)
        b = bi->inclusive_start_index;
    if (bi && bi->end_case ==
                  CACHE_CLIENT____SORTED_SET_FETCH_REQUEST____BY_INDEX__END_EXCLUSIVE_END_INDEX)
        e = bi->exclusive_end_index;
    if (b < 0)
        b += n;
    if (e < 0)
        e += n;
    b = b < 0 ? 0 : b > n ? n : b;
    e = e < 0 ? 0 : e > n ? n : e;
    zwindow w = {(size_t)b, e > b ? (size_t)(e - b) : 0, descending};
    if (descending && w.k)
        w.first = len - 1 - (size_t)b;
    return w;
}

/* The ranks [*lo, *hi) whose scores lie within the bounds. false (reply
 * set) for a NaN bound. */
static bool score_ranks(const zset *z, srv_reply *r,
                        const CacheClient__SortedSetFetchRequest__ByScore *bs, size_t *lo,
                        size_t *hi)
{
    *lo = 0;
    *hi = z->len;
    if (bs->min_case == CACHE_CLIENT____SORTED_SET_FETCH_REQUEST____BY_SCORE__MIN_MIN_SCORE) {
        if (!check_score(r, bs->min_score->score, "min_score"))
            return false;
        *lo = zset_count_below(z, bs->min_score->score, bs->min_score->exclusive);
    }
    if (bs->max_case == CACHE_CLIENT____SORTED_SET_FETCH_REQUEST____BY_SCORE__MAX_MAX_SCORE) {
        if (!check_score(r, bs->max_score->score, "max_score"))
            return false;
        *hi = zset_count_below(z, bs->max_score->score, !bs->max_score->exclusive);
    }
    if (*hi < *lo)
        *hi = *lo;
    return true;
}

static bool window_by_score(const zset *z, srv_reply *r,
                            const CacheClient__SortedSetFetchRequest__ByScore *bs, bool descending,
                            zwindow *w)
{
    size_t lo, hi;
    if (!score_ranks(z, r, bs, &lo, &hi))
        return false;
    size_t matched = hi - lo;
    size_t skip = bs->offset < matched ? bs->offset : matched;
    size_t k = matched - skip;
    if (bs->count >= 0 && (size_t)bs->count < k)
        k = (size_t)bs->count;
    w->k = k;
    w->down = descending;
    w->first = descending ? (k ? hi - 1 - skip : 0) : lo + skip;
    return true;
}

/* Replies Found with the window's elements, borrowed from the set (the
 * reply is packed before anything can change it). */
static void reply_window(const zset *z, srv_reply *r, const zwindow *w, bool with_scores)
{
    CacheClient__SortedSetFetchResponse resp = CACHE_CLIENT____SORTED_SET_FETCH_RESPONSE__INIT;
    CacheClient__SortedSetFetchResponse__Found found =
        CACHE_CLIENT____SORTED_SET_FETCH_RESPONSE____FOUND__INIT;
    CacheClient__SortedSetFetchResponse__Found__ValuesWithScores vws =
        CACHE_CLIENT____SORTED_SET_FETCH_RESPONSE____FOUND____VALUES_WITH_SCORES__INIT;
    CacheClient__SortedSetFetchResponse__Found__Values vals =
        CACHE_CLIENT____SORTED_SET_FETCH_RESPONSE____FOUND____VALUES__INIT;
    size_t k = w->k ? w->k : 1;
    CacheClient__SortedSetElement *elems = with_scores ? malloc(k * sizeof(*elems)) : NULL;
    CacheClient__SortedSetElement **ptrs = with_scores ? malloc(k * sizeof(*ptrs)) : NULL;
    ProtobufCBinaryData *values = with_scores ? NULL : malloc(k * sizeof(*values));
    if (with_scores ? !elems || !ptrs : !values) {
        free(elems);
        free(ptrs);
        srv_reply_no_memory(r);
        return;
    }
    const zset_node *n = w->k ? zset_at(z, w->first) : NULL;
    for (size_t i = 0; i < w->k; i++, n = w->down ? zset_prev(n) : zset_next(n)) {
        ProtobufCBinaryData v = {n->len, (uint8_t *)zset_value(n)};
        if (with_scores) {
            elems[i] = (CacheClient__SortedSetElement)CACHE_CLIENT____SORTED_SET_ELEMENT__INIT;
            elems[i].value = v;
            elems[i].score = n->score;
            ptrs[i] = &elems[i];
        } else {
            values[i] = v;
        }
        srv_yield();
    }
    if (with_scores) {
        vws.n_elements = w->k;
        vws.elements = ptrs;
        found.elements_case =
            CACHE_CLIENT____SORTED_SET_FETCH_RESPONSE____FOUND__ELEMENTS_VALUES_WITH_SCORES;
        found.values_with_scores = &vws;
    } else {
        vals.n_values = w->k;
        vals.values = values;
        found.elements_case = CACHE_CLIENT____SORTED_SET_FETCH_RESPONSE____FOUND__ELEMENTS_VALUES;
        found.values = &vals;
    }
    resp.sorted_set_case = CACHE_CLIENT____SORTED_SET_FETCH_RESPONSE__SORTED_SET_FOUND;
    resp.found = &found;
    srv_reply_add(r, &resp.base);
    free(elems);
    free(ptrs);
    free(values);
}

void srv_sorted_set_fetch(momento_local *s, store_cache *c, const ProtobufCMessage *msg,
                          srv_reply *r)
{
    const CacheClient__SortedSetFetchRequest *req = (const CacheClient__SortedSetFetchRequest *)msg;
    store_item *it;
    if (!find_set(s, c, r, &req->set_name, store_now_ms(), &it))
        return;
    if (!it) {
        CacheClient__SortedSetFetchResponse resp = CACHE_CLIENT____SORTED_SET_FETCH_RESPONSE__INIT;
        CacheClient__SortedSetFetchResponse__Missing missing =
            CACHE_CLIENT____SORTED_SET_FETCH_RESPONSE____MISSING__INIT;
        resp.sorted_set_case = CACHE_CLIENT____SORTED_SET_FETCH_RESPONSE__SORTED_SET_MISSING;
        resp.missing = &missing;
        srv_reply_add(r, &resp.base);
        return;
    }
    const zset *z = set_of(it);
    bool descending = req->order == CACHE_CLIENT____SORTED_SET_FETCH_REQUEST__ORDER__DESCENDING;
    zwindow w;
    /* No range at all reads the whole set, as an unbounded one does. */
    if (req->range_case == CACHE_CLIENT____SORTED_SET_FETCH_REQUEST__RANGE_BY_SCORE) {
        if (!window_by_score(z, r, req->by_score, descending, &w))
            return;
    } else {
        w = window_by_index(z->len,
                            req->range_case == CACHE_CLIENT____SORTED_SET_FETCH_REQUEST__RANGE_BY_INDEX
                                ? req->by_index
                                : NULL,
                            descending);
    }
    reply_window(z, r, &w, req->with_scores);
}

/* ---- Point reads ---- */

void srv_sorted_set_get_score(momento_local *s, store_cache *c, const ProtobufCMessage *msg,
                              srv_reply *r)
{
    const CacheClient__SortedSetGetScoreRequest *req =
        (const CacheClient__SortedSetGetScoreRequest *)msg;
    store_item *it;
    if (!find_set(s, c, r, &req->set_name, store_now_ms(), &it))
        return;
    CacheClient__SortedSetGetScoreResponse resp = CACHE_CLIENT____SORTED_SET_GET_SCORE_RESPONSE__INIT;
    CacheClient__SortedSetGetScoreResponse__SortedSetFound found =
        CACHE_CLIENT____SORTED_SET_GET_SCORE_RESPONSE____SORTED_SET_FOUND__INIT;
    CacheClient__SortedSetGetScoreResponse__SortedSetMissing missing =
        CACHE_CLIENT____SORTED_SET_GET_SCORE_RESPONSE____SORTED_SET_MISSING__INIT;
    CacheClient__SortedSetGetScoreResponse__SortedSetGetScoreResponsePart *parts = NULL, **ptrs = NULL;
    if (it) {
        size_t n = req->n_values ? req->n_values : 1;
        parts = malloc(n * sizeof(*parts));
        ptrs = malloc(n * sizeof(*ptrs));
        if (!parts || !ptrs) {
            free(parts);
            free(ptrs);
            srv_reply_no_memory(r);
            return;
        }
        for (size_t i = 0; i < req->n_values; i++) {
            const zset_node *node = zset_find(set_of(it), req->values[i].data, req->values[i].len);
            parts[i] = (CacheClient__SortedSetGetScoreResponse__SortedSetGetScoreResponsePart)
                CACHE_CLIENT____SORTED_SET_GET_SCORE_RESPONSE____SORTED_SET_GET_SCORE_RESPONSE_PART__INIT;
            parts[i].result = node ? CACHE_CLIENT__ECACHE_RESULT__Hit : CACHE_CLIENT__ECACHE_RESULT__Miss;
            parts[i].score = node ? node->score : 0;
            ptrs[i] = &parts[i];
            srv_yield();
        }
        found.n_elements = req->n_values;
        found.elements = ptrs;
        resp.sorted_set_case = CACHE_CLIENT____SORTED_SET_GET_SCORE_RESPONSE__SORTED_SET_FOUND;
        resp.found = &found;
    } else {
        resp.sorted_set_case = CACHE_CLIENT____SORTED_SET_GET_SCORE_RESPONSE__SORTED_SET_MISSING;
        resp.missing = &missing;
    }
    srv_reply_add(r, &resp.base);
    free(parts);
    free(ptrs);
}

void srv_sorted_set_get_rank(momento_local *s, store_cache *c, const ProtobufCMessage *msg,
                             srv_reply *r)
{
    const CacheClient__SortedSetGetRankRequest *req = (const CacheClient__SortedSetGetRankRequest *)msg;
    store_item *it;
    if (!find_set(s, c, r, &req->set_name, store_now_ms(), &it))
        return;
    CacheClient__SortedSetGetRankResponse resp = CACHE_CLIENT____SORTED_SET_GET_RANK_RESPONSE__INIT;
    CacheClient__SortedSetGetRankResponse__RankResponsePart part =
        CACHE_CLIENT____SORTED_SET_GET_RANK_RESPONSE____RANK_RESPONSE_PART__INIT;
    CacheClient__SortedSetGetRankResponse__SortedSetMissing missing =
        CACHE_CLIENT____SORTED_SET_GET_RANK_RESPONSE____SORTED_SET_MISSING__INIT;
    if (it) {
        const zset *z = set_of(it);
        const zset_node *n = zset_find(z, req->value.data, req->value.len);
        part.result = n ? CACHE_CLIENT__ECACHE_RESULT__Hit : CACHE_CLIENT__ECACHE_RESULT__Miss;
        if (n) {
            size_t rank = zset_rank(z, n);
            if (req->order == CACHE_CLIENT____SORTED_SET_GET_RANK_REQUEST__ORDER__DESCENDING)
                rank = z->len - 1 - rank;
            part.rank = rank;
        }
        resp.rank_case = CACHE_CLIENT____SORTED_SET_GET_RANK_RESPONSE__RANK_ELEMENT_RANK;
        resp.element_rank = &part;
    } else {
        resp.rank_case = CACHE_CLIENT____SORTED_SET_GET_RANK_RESPONSE__RANK_MISSING;
        resp.missing = &missing;
    }
    srv_reply_add(r, &resp.base);
}

void srv_sorted_set_length(momento_local *s, store_cache *c, const ProtobufCMessage *msg,
                           srv_reply *r)
{
    const CacheClient__SortedSetLengthRequest *req = (const CacheClient__SortedSetLengthRequest *)msg;
    store_item *it;
    if (!find_set(s, c, r, &req->set_name, store_now_ms(), &it))
        return;
    CacheClient__SortedSetLengthResponse resp = CACHE_CLIENT____SORTED_SET_LENGTH_RESPONSE__INIT;
    CacheClient__SortedSetLengthResponse__Found found =
        CACHE_CLIENT____SORTED_SET_LENGTH_RESPONSE____FOUND__INIT;
    CacheClient__SortedSetLengthResponse__Missing missing =
        CACHE_CLIENT____SORTED_SET_LENGTH_RESPONSE____MISSING__INIT;
    if (it) {
        found.length = (uint32_t)set_of(it)->len;
        resp.sorted_set_case = CACHE_CLIENT____SORTED_SET_LENGTH_RESPONSE__SORTED_SET_FOUND;
        resp.found = &found;
    } else {
        resp.sorted_set_case = CACHE_CLIENT____SORTED_SET_LENGTH_RESPONSE__SORTED_SET_MISSING;
        resp.missing = &missing;
    }
    srv_reply_add(r, &resp.base);
}

/* Elements with min <= score <= max, either bound exclusive or absent: two
 * rank lookups, O(log n). */
void srv_sorted_set_length_by_score(momento_local *s, store_cache *c, const ProtobufCMessage *msg,
                                    srv_reply *r)
{
    const CacheClient__SortedSetLengthByScoreRequest *req =
        (const CacheClient__SortedSetLengthByScoreRequest *)msg;
    bool min_bounded =
        req->min_case == CACHE_CLIENT____SORTED_SET_LENGTH_BY_SCORE_REQUEST__MIN_INCLUSIVE_MIN ||
        req->min_case == CACHE_CLIENT____SORTED_SET_LENGTH_BY_SCORE_REQUEST__MIN_EXCLUSIVE_MIN;
    bool max_bounded =
        req->max_case == CACHE_CLIENT____SORTED_SET_LENGTH_BY_SCORE_REQUEST__MAX_INCLUSIVE_MAX ||
        req->max_case == CACHE_CLIENT____SORTED_SET_LENGTH_BY_SCORE_REQUEST__MAX_EXCLUSIVE_MAX;
    /* inclusive_min and exclusive_min share the union, as do the maxima. */
    if ((min_bounded && !check_score(r, req->inclusive_min, "min")) ||
        (max_bounded && !check_score(r, req->inclusive_max, "max")))
        return;
    store_item *it;
    if (!find_set(s, c, r, &req->set_name, store_now_ms(), &it))
        return;
    CacheClient__SortedSetLengthByScoreResponse resp =
        CACHE_CLIENT____SORTED_SET_LENGTH_BY_SCORE_RESPONSE__INIT;
    CacheClient__SortedSetLengthByScoreResponse__Found found =
        CACHE_CLIENT____SORTED_SET_LENGTH_BY_SCORE_RESPONSE____FOUND__INIT;
    CacheClient__SortedSetLengthByScoreResponse__Missing missing =
        CACHE_CLIENT____SORTED_SET_LENGTH_BY_SCORE_RESPONSE____MISSING__INIT;
    if (it) {
        const zset *z = set_of(it);
        size_t lo = 0, hi = z->len;
        if (min_bounded)
            lo = zset_count_below(
                z, req->inclusive_min,
                req->min_case == CACHE_CLIENT____SORTED_SET_LENGTH_BY_SCORE_REQUEST__MIN_EXCLUSIVE_MIN);
        if (max_bounded)
            hi = zset_count_below(
                z, req->inclusive_max,
                req->max_case == CACHE_CLIENT____SORTED_SET_LENGTH_BY_SCORE_REQUEST__MAX_INCLUSIVE_MAX);
        found.length = (uint32_t)(hi > lo ? hi - lo : 0);
        resp.sorted_set_case = CACHE_CLIENT____SORTED_SET_LENGTH_BY_SCORE_RESPONSE__SORTED_SET_FOUND;
        resp.found = &found;
    } else {
        resp.sorted_set_case = CACHE_CLIENT____SORTED_SET_LENGTH_BY_SCORE_RESPONSE__SORTED_SET_MISSING;
        resp.missing = &missing;
    }
    srv_reply_add(r, &resp.base);
}

/* ---- Removing ---- */

void srv_sorted_set_remove(momento_local *s, store_cache *c, const ProtobufCMessage *msg,
                           srv_reply *r)
{
    const CacheClient__SortedSetRemoveRequest *req = (const CacheClient__SortedSetRemoveRequest *)msg;
    if (req->remove_elements_case != CACHE_CLIENT____SORTED_SET_REMOVE_REQUEST__REMOVE_ELEMENTS_ALL &&
        req->remove_elements_case != CACHE_CLIENT____SORTED_SET_REMOVE_REQUEST__REMOVE_ELEMENTS_SOME) {
        srv_reply_error(r, GRPC_STATUS_INVALID_ARGUMENT, NULL, "SortedSetRemove needs all or some");
        return;
    }
    store_item *it;
    if (!find_set(s, c, r, &req->set_name, store_now_ms(), &it))
        return;
    if (it && req->remove_elements_case == CACHE_CLIENT____SORTED_SET_REMOVE_REQUEST__REMOVE_ELEMENTS_ALL) {
        store_remove(&s->store, it);
    } else if (it) {
        zset *z = set_of(it);
        for (size_t i = 0; i < req->some->n_values; i++) {
            zset_node *n = zset_find(z, req->some->values[i].data, req->some->values[i].len);
            if (n)
                zset_remove(z, n);
            srv_yield();
        }
        after_removal(s, it);
    }
    CacheClient__SortedSetRemoveResponse resp = CACHE_CLIENT____SORTED_SET_REMOVE_RESPONSE__INIT;
    srv_reply_add(r, &resp.base);
}

/* ---- UnionStore ---- */

/* Combines two weighted scores. Infinities of opposite signs (a sum, or a
 * zero weight times an infinite score) make NaN, which no score may be:
 * they count as 0, as Redis's ZUNIONSTORE counts them. */
static double combine(CacheClient__SortedSetUnionStoreRequest__AggregateFunction agg, double a,
                      double b)
{
    double v;
    if (agg == CACHE_CLIENT____SORTED_SET_UNION_STORE_REQUEST__AGGREGATE_FUNCTION__MIN)
        v = a < b ? a : b;
    else if (agg == CACHE_CLIENT____SORTED_SET_UNION_STORE_REQUEST__AGGREGATE_FUNCTION__MAX)
        v = a > b ? a : b;
    else
        v = a + b;
    return isnan(v) ? 0 : v;
}

static bool check_union(srv_reply *r, const CacheClient__SortedSetUnionStoreRequest *req)
{
    if (!srv_check_key(r, &req->set_name))
        return false;
    if (req->n_sources == 0) {
        srv_reply_error(r, GRPC_STATUS_INVALID_ARGUMENT, NULL,
                        "SortedSetUnionStore needs at least one source");
        return false;
    }
    if (req->n_sources > SRV_MAX_UNION_SOURCES) {
        srv_reply_error(r, GRPC_STATUS_INVALID_ARGUMENT, NULL,
                        "SortedSetUnionStore takes at most %u sources, not %zu",
                        SRV_MAX_UNION_SOURCES, req->n_sources);
        return false;
    }
    if (req->aggregate != CACHE_CLIENT____SORTED_SET_UNION_STORE_REQUEST__AGGREGATE_FUNCTION__SUM &&
        req->aggregate != CACHE_CLIENT____SORTED_SET_UNION_STORE_REQUEST__AGGREGATE_FUNCTION__MIN &&
        req->aggregate != CACHE_CLIENT____SORTED_SET_UNION_STORE_REQUEST__AGGREGATE_FUNCTION__MAX) {
        srv_reply_error(r, GRPC_STATUS_INVALID_ARGUMENT, NULL, "unknown aggregate function");
        return false;
    }
    for (size_t i = 0; i < req->n_sources; i++) {
        if (!srv_check_key(r, &req->sources[i]->set_name))
            return false;
        if (!isfinite(req->sources[i]->weight)) {
            srv_reply_error(r, GRPC_STATUS_INVALID_ARGUMENT, NULL, "weight must be a finite number");
            return false;
        }
    }
    return true;
}

/* Adds source `src`, weighted, into `out`. false when out of memory. */
static bool merge_source(zset *out, const zset *src, double weight,
                         CacheClient__SortedSetUnionStoreRequest__AggregateFunction agg)
{
    if (zset_reserve(out, src->len) != 0)
        return false;
    for (const zset_node *n = src->len ? zset_at(src, 0) : NULL; n; n = zset_next(n)) {
        srv_yield();
        double v = weight * n->score;
        if (isnan(v))
            v = 0;
        zset_node *have = zset_find(out, zset_value(n), n->len);
        if (have) {
            zset_rescore(out, have, combine(agg, have->score, v));
            continue;
        }
        zset_node *fresh = zset_node_new(out, zset_value(n), n->len, v);
        if (!fresh)
            return false;
        zset_insert(out, fresh);
    }
    return true;
}

/* The union of the sources in a new set not yet in the store; NULL with
 * the reply set.
 *
 * Its work is every element of every source, so the sources are all
 * looked up and measured before any is read: together they may hold at
 * most what one collection may (the item limit, counted as
 * srv_check_collection_size() counts a set), so a union costs about what
 * writing one of the largest sets costs. Unbounded, a 9 KB request naming
 * one 100,000-element set 1000 times held the server thread 22 s. The
 * lookups find every source at the same `now` and change nothing but the
 * LRU order, so the items stay valid until the merge. */
static zset_coll *build_union(momento_local *s, store_cache *c, srv_reply *r,
                              const CacheClient__SortedSetUnionStoreRequest *req, int64_t now)
{
    const zset *srcs[SRV_MAX_UNION_SOURCES];
    uint64_t wire = 0;
    for (size_t i = 0; i < req->n_sources; i++) {
        store_item *src;
        if (!find_set(s, c, r, &req->sources[i]->set_name, now, &src))
            return NULL;
        srcs[i] = src ? set_of(src) : NULL;
        wire += srcs[i] ? srcs[i]->wire : 0;
    }
    if (wire > s->opts.max_item_bytes) {
        srv_reply_error(r, GRPC_STATUS_RESOURCE_EXHAUSTED, NULL,
                        "SortedSetUnionStore's sources hold %" PRIu64
                        " bytes, more than the item limit of %" PRIu64
                        " bytes one union may read",
                        wire, s->opts.max_item_bytes);
        return NULL;
    }
    zset_coll *out = zcoll_new();
    if (!out) {
        srv_reply_no_memory(r);
        return NULL;
    }
    for (size_t i = 0; i < req->n_sources; i++) {
        if (srcs[i] && !merge_source(&out->z, srcs[i], req->sources[i]->weight, req->aggregate)) {
            zcoll_destroy(&out->hdr);
            srv_reply_no_memory(r);
            return NULL;
        }
    }
    return out;
}

/* Replaces the set at `dest` (an existing sorted set) with `out`'s
 * elements by swapping their contents, so that a refusal from --max-memory
 * leaves dest as it was. Consumes `out`. false with the reply set. */
static bool replace_set(momento_local *s, srv_reply *r, store_item *dest, zset_coll *out,
                        size_t key_len)
{
    int rc = store_coll_resize(&s->store, dest, set_bytes(&out->z));
    if (rc != 0) {
        srv_reply_store_error(s, r, rc, key_len + out->z.payload);
        zcoll_destroy(&out->hdr);
        return false;
    }
    zset old = *set_of(dest);
    *set_of(dest) = out->z;
    out->z = old;
    out->hdr.bytes = set_bytes(&out->z); /* what is freed: the old elements */
    store_free_aside(&s->store, &out->hdr);
    return true;
}

/* The destination gets the union and the request's TTL, whatever it held
 * before if it was a sorted set; a key of another kind is the type
 * mismatch. An empty union deletes it. */
void srv_sorted_set_union_store(momento_local *s, store_cache *c, const ProtobufCMessage *msg,
                                srv_reply *r)
{
    const CacheClient__SortedSetUnionStoreRequest *req =
        (const CacheClient__SortedSetUnionStoreRequest *)msg;
    if (!check_union(r, req))
        return;
    int64_t now = store_now_ms();
    store_item *dest;
    if (!find_set(s, c, r, &req->set_name, now, &dest))
        return;
    zset_coll *out = build_union(s, c, r, req, now);
    if (!out)
        return;
    if (!srv_check_collection_size(s, r, req->set_name.len, out->z.wire)) {
        zcoll_destroy(&out->hdr);
        return;
    }
    size_t len = out->z.len;
    if (len == 0) {
        zcoll_destroy(&out->hdr);
        if (dest)
            store_remove(&s->store, dest);
    } else if (dest) {
        if (!replace_set(s, r, dest, out, req->set_name.len))
            return;
        store_coll_refresh_ttl(dest, req->ttl_milliseconds, true, now);
    } else {
        out->hdr.bytes = set_bytes(&out->z);
        int rc = store_coll_add(&s->store, c, req->set_name.data, req->set_name.len,
                                STORE_SORTED_SET, &out->hdr, req->ttl_milliseconds, now, NULL);
        if (rc != 0) {
            size_t item_len = req->set_name.len + out->z.payload;
            zcoll_destroy(&out->hdr);
            srv_reply_store_error(s, r, rc, item_len);
            return;
        }
    }
    CacheClient__SortedSetUnionStoreResponse resp =
        CACHE_CLIENT____SORTED_SET_UNION_STORE_RESPONSE__INIT;
    resp.length = (uint32_t)len;
    srv_reply_add(r, &resp.base);
}
