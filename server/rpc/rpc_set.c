/* The set RPCs: SetUnion, SetDifference, SetFetch, SetSample, SetContains,
 * SetLength and SetPop.
 *
 * A set is a store collection (store.h) holding its elements in a dense
 * array, so that SetSample and SetPop can pick elements at random in
 * O(count) with a partial Fisher-Yates shuffle, and indexing them with an
 * open-addressing table, so that adding, removing and testing an element
 * costs O(1). Its slots hold part of each element's hash and its place in
 * the array: a probe reads no element unless the hashes agree, so a
 * SetUnion of 1,000,000 new elements (a 5 MB request) holds the server
 * thread about 0.4 s where uthash's chains, an element's memory per link,
 * held it 1.0 s and made other clients' 1 s deadlines pass. Momento's
 * rules, from its SDKs' integration tests:
 * - a missing set is Missing to every read, and SetUnion creates it with
 *   the request's TTL; a union into an existing set resets its TTL only
 *   with refresh_ttl (CollectionTtl);
 * - removing (or popping) the last element deletes the set;
 * - a set RPC on a key of another kind is the type mismatch
 *   (FAILED_PRECONDITION);
 * - elements may be empty bytes (the Go SDK's tests store "" in a set);
 * - SetSample of 0 is a Hit with no elements; SetPop needs a count of at
 *   least 1. */
#include "rpc/srv_rpc.h"

#include "core/srv_server.h"

#include "cacheclient.pb-c.h"

#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

typedef struct set_elem {
    uint64_t hash;
    uint64_t cost;  /* what it adds to the set's coll.bytes */
    size_t index;   /* its place in the set's array */
    size_t len;
    uint8_t data[];
} set_elem;

/* A table slot: the high half of an element's hash and its place in the
 * array plus one (0: the slot is empty). */
typedef struct set_slot {
    uint32_t tag;
    uint32_t pos;
} set_slot;

typedef struct set {
    store_coll coll;  /* first: the store frees and counts it through this */
    set_elem **elems; /* the elements, densely, in no particular order */
    size_t n, cap;
    set_slot *table;  /* linear probing, at most 3/4 full */
    size_t table_cap; /* 0 or a power of two */
    uint64_t wire;    /* the elements as SetFetch carries them (srv_field_bytes), summed */
} set;

/* At most this many elements: a slot holds a place in 32 bits. */
#define SET_MAX_ELEMS (UINT32_MAX - 1u)

/* protobuf-c leaves the data of empty bytes NULL; the hash functions and
 * memcpy want a pointer all the same. */
static const uint8_t *bytes_of(const ProtobufCBinaryData *b)
{
    return b->len ? b->data : (const uint8_t *)"";
}

static void set_destroy(store_coll *coll)
{
    set *st = (set *)coll;
    for (size_t i = 0; i < st->n; i++)
        free(st->elems[i]);
    free(st->elems);
    free(st->table);
    free(st);
}

/* The set's own block. Its array and table are left out of coll.bytes:
 * each element's STORE_ITEM_OVERHEAD covers its slot in the array (8
 * bytes, at most twice over after doubling) and its share of the table
 * (8-byte slots, 3/8 to 3/4 full), about 32 bytes. */
static set *set_new(void)
{
    set *st = calloc(1, sizeof(*st));
    if (st) {
        st->coll.destroy = set_destroy;
        st->coll.bytes = store_block_cost(st);
    }
    return st;
}

/* FNV-1a, as the sorted sets hash their values (zset.c). */
static uint64_t hash_bytes(const uint8_t *p, size_t len)
{
    uint64_t h = 0xcbf29ce484222325u;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3u;
    }
    return h;
}

static uint32_t tag_of(uint64_t hash)
{
    return (uint32_t)(hash >> 32);
}

static void slot_put(set_slot *table, size_t cap, uint64_t hash, size_t index)
{
    size_t i = hash & (cap - 1);
    while (table[i].pos)
        i = (i + 1) & (cap - 1);
    table[i] = (set_slot){tag_of(hash), (uint32_t)(index + 1)};
}

/* The slot holding the element at `index` of hash `hash`. */
static size_t slot_of(const set *st, uint64_t hash, size_t index)
{
    size_t i = hash & (st->table_cap - 1);
    while (st->table[i].pos != index + 1)
        i = (i + 1) & (st->table_cap - 1);
    return i;
}

static set_elem *elem_find(const set *st, const ProtobufCBinaryData *e)
{
    if (!st->table_cap)
        return NULL;
    uint64_t h = hash_bytes(bytes_of(e), e->len);
    uint32_t tag = tag_of(h);
    size_t mask = st->table_cap - 1;
    for (size_t i = h & mask; st->table[i].pos; i = (i + 1) & mask) {
        if (st->table[i].tag != tag)
            continue;
        set_elem *el = st->elems[st->table[i].pos - 1];
        if (el->hash == h && el->len == e->len && memcmp(el->data, bytes_of(e), e->len) == 0)
            return el;
    }
    return NULL;
}

/* A table of `cap` slots (a power of two) holding every element. */
static bool rehash(set *st, size_t cap)
{
    set_slot *t = calloc(cap, sizeof(*t));
    if (!t)
        return false;
    for (size_t i = 0; i < st->n; i++) {
        slot_put(t, cap, st->elems[i]->hash, i);
        srv_yield();
    }
    free(st->table);
    st->table = t;
    st->table_cap = cap;
    return true;
}

/* Room in the array and the table for `more` elements; false when out of
 * memory or past SET_MAX_ELEMS (the set unchanged). */
static bool reserve(set *st, size_t more)
{
    if (more > SET_MAX_ELEMS - st->n)
        return false;
    size_t want = st->n + more;
    if (want > st->cap) {
        size_t cap = st->cap * 2 > want ? st->cap * 2 : want;
        set_elem **grown = realloc(st->elems, cap * sizeof(*grown));
        if (!grown)
            return false;
        st->elems = grown;
        st->cap = cap;
    }
    if (want * 4 <= st->table_cap * 3)
        return true;
    size_t cap = st->table_cap ? st->table_cap : 8;
    while (cap * 3 < want * 4)
        cap *= 2;
    return rehash(st, cap);
}

/* Linear probing's deletion without tombstones (zset.c's): the entries
 * after the hole that would no longer be reachable from their home slot
 * move back into it. */
static void slot_delete(set *st, size_t j)
{
    size_t mask = st->table_cap - 1;
    st->table[j].pos = 0;
    for (size_t i = (j + 1) & mask; st->table[i].pos; i = (i + 1) & mask) {
        size_t home = st->elems[st->table[i].pos - 1]->hash & mask;
        bool stays = j < i ? (home > j && home <= i) : (home > j || home <= i);
        if (!stays) {
            st->table[j] = st->table[i];
            st->table[i].pos = 0;
            j = i;
        }
    }
}

/* A table seven eighths empty is rebuilt smaller; a failure keeps the
 * larger one, which still works. */
static void table_shrink(set *st)
{
    if (st->n == 0) {
        free(st->table);
        st->table = NULL;
        st->table_cap = 0;
        return;
    }
    if (st->table_cap <= 8 || st->n * 8 > st->table_cap)
        return;
    size_t cap = 8;
    while (cap * 3 < st->n * 8)
        cap *= 2;
    rehash(st, cap);
}

/* Adds `e` unless present (the array has room): its cost, or 0 when it
 * was there already; UINT64_MAX when out of memory. */
static uint64_t elem_add(set *st, const ProtobufCBinaryData *e)
{
    if (elem_find(st, e))
        return 0;
    set_elem *el = malloc(sizeof(*el) + e->len);
    if (!el)
        return UINT64_MAX;
    memset(el, 0, sizeof(*el));
    el->len = e->len;
    memcpy(el->data, bytes_of(e), e->len);
    el->hash = hash_bytes(el->data, el->len);
    el->cost = store_block_cost(el) + STORE_ITEM_OVERHEAD;
    el->index = st->n;
    st->elems[st->n++] = el;
    st->wire += srv_field_bytes(el->len);
    slot_put(st->table, st->table_cap, el->hash, el->index);
    return el->cost;
}

/* Takes `el` out of the table and the array (the last element fills its
 * place) and frees it; returns its cost. The table may shrink, which never
 * needs memory it does not have. */
static uint64_t elem_remove(set *st, set_elem *el)
{
    uint64_t cost = el->cost;
    slot_delete(st, slot_of(st, el->hash, el->index));
    set_elem *last = st->elems[--st->n];
    if (last != el) {
        st->table[slot_of(st, last->hash, last->index)].pos = (uint32_t)(el->index + 1);
        st->elems[el->index] = last;
        last->index = el->index;
    }
    st->wire -= srv_field_bytes(el->len);
    free(el);
    table_shrink(st);
    return cost;
}

/* Exchanges the elements at i and j, in the array and in their slots. */
static void swap(set *st, size_t i, size_t j)
{
    if (i == j)
        return;
    set_elem *a = st->elems[i], *b = st->elems[j];
    size_t sa = slot_of(st, a->hash, i), sb = slot_of(st, b->hash, j);
    st->table[sa].pos = (uint32_t)(j + 1);
    st->table[sb].pos = (uint32_t)(i + 1);
    st->elems[i] = b;
    st->elems[j] = a;
    b->index = i;
    a->index = j;
}

/* ---- Randomness --------------------------------------------------------- */

/* xorshift64*: fast, and plenty for choosing samples. Seeded once from the
 * kernel (or the clock, where getrandom() fails). */
static uint64_t next_random(void)
{
    static uint64_t state;
    if (!state) {
        if (getrandom(&state, sizeof(state), GRND_NONBLOCK) != (ssize_t)sizeof(state))
            state = (uint64_t)time(NULL) ^ (uint64_t)clock();
        state |= 1; /* never the all-zero state */
    }
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    return state * 0x2545F4914F6CDD1DULL;
}

/* Uniform in [0, n), n > 0 (Lemire's multiply-and-reject). */
static size_t random_below(size_t n)
{
    uint64_t bound = n;
    unsigned __int128 m = (unsigned __int128)next_random() * bound;
    if ((uint64_t)m < bound) {
        uint64_t threshold = -bound % bound;
        while ((uint64_t)m < threshold)
            m = (unsigned __int128)next_random() * bound;
    }
    return (size_t)(m >> 64);
}

/* ---- Finding the set ------------------------------------------------------ */

/* The set item at `key`: 0 with *ret_it (NULL when missing), or -1 with the
 * error reply set (an empty key, or another kind). */
static int find_set(momento_local *s, store_cache *c, srv_reply *r, const ProtobufCBinaryData *key,
                    int64_t now, store_item **ret_it)
{
    if (!srv_check_key(r, key))
        return -1;
    if (store_coll_find(&s->store, c, key->data, key->len, STORE_SET, now, ret_it) != 0) {
        srv_reply_wrong_type(r);
        return -1;
    }
    return 0;
}

/* After elements were removed from `it`'s set: the set goes when empty,
 * else its cost shrinks (which never needs room, so never fails). */
static void removed(momento_local *s, store_item *it, uint64_t freed)
{
    set *st = (set *)it->coll;
    if (st->n == 0)
        store_remove(&s->store, it);
    else
        store_coll_resize(&s->store, it, st->coll.bytes - freed);
}

/* A reply's elements: `n` borrowed views of the set's own bytes, valid
 * until the set changes. */
static ProtobufCBinaryData *views(set_elem *const *elems, size_t n)
{
    ProtobufCBinaryData *v = malloc((n ? n : 1) * sizeof(*v));
    if (v)
        for (size_t i = 0; i < n; i++) {
            v[i].data = elems[i]->data;
            v[i].len = elems[i]->len;
            srv_yield();
        }
    return v;
}

/* ---- The RPCs ------------------------------------------------------------- */

/* Adds the elements, creating the set when missing. All or nothing: out
 * of memory, or a set --max-memory cannot hold, leaves it as it was. */
void srv_set_union(momento_local *s, store_cache *c, const ProtobufCMessage *msg, srv_reply *r)
{
    const CacheClient__SetUnionRequest *req = (const CacheClient__SetUnionRequest *)msg;
    if (!srv_check_item(s, r, &req->set_name, 0))
        return;
    for (size_t i = 0; i < req->n_elements; i++)
        if (!srv_check_element(r, req->elements[i].len))
            return;
    int64_t now = store_now_ms();
    store_item *it;
    if (find_set(s, c, r, &req->set_name, now, &it) != 0)
        return;
    CacheClient__SetUnionResponse resp = CACHE_CLIENT____SET_UNION_RESPONSE__INIT;
    if (!it && req->n_elements == 0) {
        srv_reply_add(r, &resp.base); /* an empty set does not exist */
        return;
    }
    bool existed = it != NULL;
    set *st = existed ? (set *)it->coll : set_new();
    if (!st || !reserve(st, req->n_elements)) {
        if (!existed && st)
            set_destroy(&st->coll);
        srv_reply_no_memory(r);
        return;
    }
    /* New elements go at the end of the array, so undoing the union is
     * removing from the end back to where it stood. */
    size_t before = st->n;
    uint64_t bytes = st->coll.bytes;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < req->n_elements; i++) {
        srv_yield();
        uint64_t cost = elem_add(st, &req->elements[i]);
        if (cost == UINT64_MAX)
            rc = STORE_NO_MEMORY;
        else
            bytes += cost;
    }
    bool fits = rc != 0 || srv_check_collection_size(s, r, req->set_name.len, st->wire);
    if (!fits) {
        while (st->n > before) {
            elem_remove(st, st->elems[st->n - 1]);
            srv_yield();
        }
        if (!existed)
            set_destroy(&st->coll);
        return;
    }
    if (rc == 0 && existed) {
        rc = store_coll_resize(&s->store, it, bytes);
    } else if (rc == 0) {
        st->coll.bytes = bytes;
        rc = store_coll_add(&s->store, c, req->set_name.data, req->set_name.len, STORE_SET,
                            &st->coll, req->ttl_milliseconds, now, &it);
    }
    if (rc != 0) {
        while (st->n > before) {
            elem_remove(st, st->elems[st->n - 1]);
            srv_yield();
        }
        if (!existed)
            set_destroy(&st->coll);
        srv_reply_store_error(s, r, rc, (size_t)bytes);
        return;
    }
    if (existed)
        store_coll_refresh_ttl(it, req->ttl_milliseconds, req->refresh_ttl, now);
    srv_reply_add(r, &resp.base);
}

/* Removes the elements; a missing element is no error. */
static uint64_t subtract(set *st, const ProtobufCBinaryData *elements, size_t n)
{
    uint64_t freed = 0;
    for (size_t i = 0; i < n && st->n; i++) {
        srv_yield();
        set_elem *el = elem_find(st, &elements[i]);
        if (el)
            freed += elem_remove(st, el);
    }
    return freed;
}

/* Exchanges two sets' elements (not their headers). */
static void swap_contents(set *a, set *b)
{
    set t = *a;
    a->table = b->table;
    a->table_cap = b->table_cap;
    a->elems = b->elems;
    a->n = b->n;
    a->cap = b->cap;
    a->wire = b->wire;
    b->table = t.table;
    b->table_cap = t.table_cap;
    b->elems = t.elems;
    b->n = t.n;
    b->cap = t.cap;
    b->wire = t.wire;
}

/* The minuend form (Momento's proto: "cache = request - stored"): the set
 * becomes the request's elements that it did not hold. Built aside and
 * then swapped in, so that running out of room leaves the set as it was.
 * Returns 0, or -1 with the error reply set. */
static int minuend(momento_local *s, store_item *it, const ProtobufCBinaryData *elements, size_t n,
                   srv_reply *r)
{
    set *st = (set *)it->coll;
    set *next = set_new();
    if (!next || !reserve(next, n)) {
        if (next)
            set_destroy(&next->coll);
        srv_reply_no_memory(r);
        return -1;
    }
    /* Both headers are alike, so the set's cost becomes next's. */
    uint64_t bytes = next->coll.bytes;
    for (size_t i = 0; i < n; i++) {
        srv_yield();
        uint64_t cost = elem_find(st, &elements[i]) ? 0 : elem_add(next, &elements[i]);
        if (cost == UINT64_MAX) {
            set_destroy(&next->coll);
            srv_reply_no_memory(r);
            return -1;
        }
        bytes += cost;
    }
    if (!srv_check_collection_size(s, r, it->key_len, next->wire)) {
        set_destroy(&next->coll);
        return -1;
    }
    int rc = next->n ? store_coll_resize(&s->store, it, bytes) : 0;
    if (rc != 0) {
        set_destroy(&next->coll);
        srv_reply_store_error(s, r, rc, (size_t)bytes);
        return -1;
    }
    swap_contents(st, next);
    set_destroy(&next->coll); /* the old elements */
    if (st->n == 0)
        store_remove(&s->store, it);
    return 0;
}

void srv_set_difference(momento_local *s, store_cache *c, const ProtobufCMessage *msg,
                        srv_reply *r)
{
    const CacheClient__SetDifferenceRequest *req = (const CacheClient__SetDifferenceRequest *)msg;
    const CacheClient__SetDifferenceRequest__Subtrahend *sub = req->subtrahend;
    bool is_minuend = req->difference_case == CACHE_CLIENT____SET_DIFFERENCE_REQUEST__DIFFERENCE_MINUEND;
    bool is_set = req->difference_case == CACHE_CLIENT____SET_DIFFERENCE_REQUEST__DIFFERENCE_SUBTRAHEND &&
                  sub->subtrahend_set_case ==
                      CACHE_CLIENT____SET_DIFFERENCE_REQUEST____SUBTRAHEND__SUBTRAHEND_SET_SET;
    bool is_identity =
        req->difference_case == CACHE_CLIENT____SET_DIFFERENCE_REQUEST__DIFFERENCE_SUBTRAHEND &&
        sub->subtrahend_set_case ==
            CACHE_CLIENT____SET_DIFFERENCE_REQUEST____SUBTRAHEND__SUBTRAHEND_SET_IDENTITY;
    if (!is_minuend && !is_set && !is_identity) {
        srv_reply_error(r, GRPC_STATUS_INVALID_ARGUMENT, NULL,
                        "SetDifference needs a minuend or a subtrahend");
        return;
    }
    store_item *it;
    if (find_set(s, c, r, &req->set_name, store_now_ms(), &it) != 0)
        return;
    CacheClient__SetDifferenceResponse resp = CACHE_CLIENT____SET_DIFFERENCE_RESPONSE__INIT;
    CacheClient__SetDifferenceResponse__Found found =
        CACHE_CLIENT____SET_DIFFERENCE_RESPONSE____FOUND__INIT;
    CacheClient__SetDifferenceResponse__Missing missing =
        CACHE_CLIENT____SET_DIFFERENCE_RESPONSE____MISSING__INIT;
    if (it && is_identity) {
        store_remove(&s->store, it);
    } else if (it && is_set) {
        removed(s, it, subtract((set *)it->coll, sub->set->elements, sub->set->n_elements));
    } else if (it && minuend(s, it, req->minuend->elements, req->minuend->n_elements, r) != 0) {
        return;
    }
    if (it) {
        resp.set_case = CACHE_CLIENT____SET_DIFFERENCE_RESPONSE__SET_FOUND;
        resp.found = &found;
    } else {
        resp.set_case = CACHE_CLIENT____SET_DIFFERENCE_RESPONSE__SET_MISSING;
        resp.missing = &missing;
    }
    srv_reply_add(r, &resp.base);
}

void srv_set_fetch(momento_local *s, store_cache *c, const ProtobufCMessage *msg, srv_reply *r)
{
    const CacheClient__SetFetchRequest *req = (const CacheClient__SetFetchRequest *)msg;
    store_item *it;
    if (find_set(s, c, r, &req->set_name, store_now_ms(), &it) != 0)
        return;
    CacheClient__SetFetchResponse resp = CACHE_CLIENT____SET_FETCH_RESPONSE__INIT;
    CacheClient__SetFetchResponse__Found found = CACHE_CLIENT____SET_FETCH_RESPONSE____FOUND__INIT;
    CacheClient__SetFetchResponse__Missing missing =
        CACHE_CLIENT____SET_FETCH_RESPONSE____MISSING__INIT;
    if (!it) {
        resp.set_case = CACHE_CLIENT____SET_FETCH_RESPONSE__SET_MISSING;
        resp.missing = &missing;
        srv_reply_add(r, &resp.base);
        return;
    }
    const set *st = (const set *)it->coll;
    if (!(found.elements = views(st->elems, st->n))) {
        srv_reply_no_memory(r);
        return;
    }
    found.n_elements = st->n;
    resp.set_case = CACHE_CLIENT____SET_FETCH_RESPONSE__SET_FOUND;
    resp.found = &found;
    srv_reply_add(r, &resp.base);
    free(found.elements);
}

/* min(limit, n) distinct elements, uniformly at random: a partial
 * Fisher-Yates shuffle of the array's first `k` slots, O(k). Reordering
 * the array changes nothing a client can see. */
void srv_set_sample(momento_local *s, store_cache *c, const ProtobufCMessage *msg, srv_reply *r)
{
    const CacheClient__SetSampleRequest *req = (const CacheClient__SetSampleRequest *)msg;
    store_item *it;
    if (find_set(s, c, r, &req->set_name, store_now_ms(), &it) != 0)
        return;
    CacheClient__SetSampleResponse resp = CACHE_CLIENT____SET_SAMPLE_RESPONSE__INIT;
    CacheClient__SetSampleResponse__Found found = CACHE_CLIENT____SET_SAMPLE_RESPONSE____FOUND__INIT;
    CacheClient__SetSampleResponse__Missing missing =
        CACHE_CLIENT____SET_SAMPLE_RESPONSE____MISSING__INIT;
    if (!it) {
        resp.set_case = CACHE_CLIENT____SET_SAMPLE_RESPONSE__SET_MISSING;
        resp.missing = &missing;
        srv_reply_add(r, &resp.base);
        return;
    }
    set *st = (set *)it->coll;
    size_t k = req->limit < st->n ? (size_t)req->limit : st->n;
    for (size_t i = 0; i < k; i++) {
        swap(st, i, i + random_below(st->n - i));
        srv_yield();
    }
    if (!(found.elements = views(st->elems, k))) {
        srv_reply_no_memory(r);
        return;
    }
    found.n_elements = k;
    resp.set_case = CACHE_CLIENT____SET_SAMPLE_RESPONSE__SET_FOUND;
    resp.found = &found;
    srv_reply_add(r, &resp.base);
    free(found.elements);
}

/* Removes and answers min(count, n) elements chosen at random: the same
 * partial shuffle, into the array's last slots, which then come off the
 * end. The reply is packed before they are freed. */
void srv_set_pop(momento_local *s, store_cache *c, const ProtobufCMessage *msg, srv_reply *r)
{
    const CacheClient__SetPopRequest *req = (const CacheClient__SetPopRequest *)msg;
    if (req->count == 0) {
        srv_reply_error(r, GRPC_STATUS_INVALID_ARGUMENT, NULL, "count must be positive (> 0)");
        return;
    }
    store_item *it;
    if (find_set(s, c, r, &req->set_name, store_now_ms(), &it) != 0)
        return;
    CacheClient__SetPopResponse resp = CACHE_CLIENT____SET_POP_RESPONSE__INIT;
    CacheClient__SetPopResponse__Found found = CACHE_CLIENT____SET_POP_RESPONSE____FOUND__INIT;
    CacheClient__SetPopResponse__Missing missing = CACHE_CLIENT____SET_POP_RESPONSE____MISSING__INIT;
    if (!it) {
        resp.set_case = CACHE_CLIENT____SET_POP_RESPONSE__SET_MISSING;
        resp.missing = &missing;
        srv_reply_add(r, &resp.base);
        return;
    }
    set *st = (set *)it->coll;
    size_t k = req->count < st->n ? req->count : st->n;
    for (size_t i = 0; i < k; i++) {
        swap(st, st->n - 1 - i, random_below(st->n - i));
        srv_yield();
    }
    if (!(found.elements = views(st->elems + st->n - k, k))) {
        srv_reply_no_memory(r);
        return;
    }
    found.n_elements = k;
    resp.set_case = CACHE_CLIENT____SET_POP_RESPONSE__SET_FOUND;
    resp.found = &found;
    int added = srv_reply_add(r, &resp.base);
    free(found.elements);
    if (added != 0)
        return; /* nothing sent, so nothing popped */
    uint64_t freed = 0;
    for (size_t i = 0; i < k; i++) {
        freed += elem_remove(st, st->elems[st->n - 1]);
        srv_yield();
    }
    removed(s, it, freed);
}

void srv_set_contains(momento_local *s, store_cache *c, const ProtobufCMessage *msg, srv_reply *r)
{
    const CacheClient__SetContainsRequest *req = (const CacheClient__SetContainsRequest *)msg;
    store_item *it;
    if (find_set(s, c, r, &req->set_name, store_now_ms(), &it) != 0)
        return;
    CacheClient__SetContainsResponse resp = CACHE_CLIENT____SET_CONTAINS_RESPONSE__INIT;
    CacheClient__SetContainsResponse__Found found =
        CACHE_CLIENT____SET_CONTAINS_RESPONSE____FOUND__INIT;
    CacheClient__SetContainsResponse__Missing missing =
        CACHE_CLIENT____SET_CONTAINS_RESPONSE____MISSING__INIT;
    if (!it) {
        resp.set_case = CACHE_CLIENT____SET_CONTAINS_RESPONSE__SET_MISSING;
        resp.missing = &missing;
        srv_reply_add(r, &resp.base);
        return;
    }
    /* One answer per requested element, in the request's order. */
    size_t n = req->n_elements;
    protobuf_c_boolean *contains = malloc((n ? n : 1) * sizeof(*contains));
    if (!contains) {
        srv_reply_no_memory(r);
        return;
    }
    const set *st = (const set *)it->coll;
    for (size_t i = 0; i < n; i++) {
        contains[i] = elem_find(st, &req->elements[i]) != NULL;
        srv_yield();
    }
    found.n_contains = n;
    found.contains = contains;
    resp.set_case = CACHE_CLIENT____SET_CONTAINS_RESPONSE__SET_FOUND;
    resp.found = &found;
    srv_reply_add(r, &resp.base);
    free(contains);
}

void srv_set_length(momento_local *s, store_cache *c, const ProtobufCMessage *msg, srv_reply *r)
{
    const CacheClient__SetLengthRequest *req = (const CacheClient__SetLengthRequest *)msg;
    store_item *it;
    if (find_set(s, c, r, &req->set_name, store_now_ms(), &it) != 0)
        return;
    CacheClient__SetLengthResponse resp = CACHE_CLIENT____SET_LENGTH_RESPONSE__INIT;
    CacheClient__SetLengthResponse__Found found = CACHE_CLIENT____SET_LENGTH_RESPONSE____FOUND__INIT;
    CacheClient__SetLengthResponse__Missing missing =
        CACHE_CLIENT____SET_LENGTH_RESPONSE____MISSING__INIT;
    if (it) {
        size_t n = ((const set *)it->coll)->n;
        found.length = n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
        resp.set_case = CACHE_CLIENT____SET_LENGTH_RESPONSE__SET_FOUND;
        resp.found = &found;
    } else {
        resp.set_case = CACHE_CLIENT____SET_LENGTH_RESPONSE__SET_MISSING;
        resp.missing = &missing;
    }
    srv_reply_add(r, &resp.base);
}
