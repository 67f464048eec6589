/* Momento Leaderboards (leaderboard.Leaderboard), on the skiplist and hash
 * table of zset.h: an element's id is its value, as 4 big-endian bytes, so
 * that the set's order (score, then value bytes) is score, then id.
 *
 * What Momento's protos and SDKs' integration tests show (docs/server.md
 * "Leaderboards" has the rest, and what is inferred):
 * - ids are uint32, scores doubles (the SDKs' "double precision" tests get
 *   27.004309862363737 and 16777217 back exactly); NaN and infinite scores
 *   are refused (the protos: "Momento does not support NaN or Inf");
 * - ranks are 0-based, ascending unless DESCENDING; a rank range is
 *   half-open, non-empty and spans at most 8192 ranks (0..0 and 0..8193
 *   are errors); a score range is [min, max), min above max an error;
 * - a missing leaderboard is an empty one: length 0, fetches and ranks
 *   Found with no elements, RemoveElements and DeleteLeaderboard OK;
 * - GetRank and GetCompetitionRank answer in the order of the ids asked
 *   for, leaving out the absent ones (the Java SDK's superset tests);
 *   competition ranks count the elements strictly ahead, so equal scores
 *   share a rank, descending unless asked otherwise.
 * Ties in ordinal order go by id, ascending, and DESCENDING is the exact
 * reverse (inferred: no SDK test ties two scores there). */
#include "rpc/srv_rpc.h"

#include "core/srv_server.h"
#include "data/zset.h"

#include "common.pb-c.h"
#include "leaderboard.pb-c.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Momento's limit on the elements one call names or returns. */
#define LB_MAX_ELEMENTS 8192u

typedef struct board_coll {
    store_coll hdr;
    zset z;
} board_coll;

/* The structure and the skiplist's sentinel, beside the elements. */
#define BOARD_BASE_BYTES \
    ((uint64_t)sizeof(board_coll) + sizeof(zset_node) + ZSET_MAX_HEIGHT * sizeof(zset_link))

static void board_destroy(store_coll *coll)
{
    board_coll *bc = (board_coll *)coll;
    zset_destroy(&bc->z);
    free(bc);
}

static board_coll *board_new(void)
{
    board_coll *bc = calloc(1, sizeof(*bc));
    if (!bc)
        return NULL;
    bc->hdr.destroy = board_destroy;
    if (zset_init(&bc->z) != 0) {
        free(bc);
        return NULL;
    }
    return bc;
}

static zset *board_set(store_board *b)
{
    return &((board_coll *)b->coll)->z;
}

static uint64_t board_bytes(const zset *z)
{
    return BOARD_BASE_BYTES + z->bytes;
}

static void id_bytes(uint32_t id, uint8_t out[4])
{
    out[0] = (uint8_t)(id >> 24);
    out[1] = (uint8_t)(id >> 16);
    out[2] = (uint8_t)(id >> 8);
    out[3] = (uint8_t)id;
}

static uint32_t node_id(const zset_node *n)
{
    const uint8_t *v = zset_value(n);
    return (uint32_t)v[0] << 24 | (uint32_t)v[1] << 16 | (uint32_t)v[2] << 8 | v[3];
}

static zset_node *find_id(const zset *z, uint32_t id)
{
    uint8_t v[4];
    id_bytes(id, v);
    return zset_find(z, v, sizeof(v));
}

static bool invalid(srv_reply *r, const char *msg)
{
    srv_reply_error(r, GRPC_STATUS_INVALID_ARGUMENT, NULL, "%s", msg);
    return false;
}

/* A name with something in it but blanks (the SDKs refuse an empty or
 * blank one; the server does too, for a client that does not). */
static bool check_name(srv_reply *r, const char *name)
{
    for (const char *p = name ? name : ""; *p; p++)
        if (!isspace((unsigned char)*p))
            return true;
    return invalid(r, "leaderboard name must not be empty");
}

/* The leaderboard a request names, NULL when there is none (an empty one),
 * after the name's check (false, reply set, when it fails). */
static bool find_board(store_cache *c, srv_reply *r, const char *name, store_board **ret)
{
    if (!check_name(r, name))
        return false;
    *ret = store_board_find(c, name, strlen(name));
    return true;
}

static bool check_count(srv_reply *r, size_t n, bool may_be_empty, const char *what)
{
    if (n == 0 && !may_be_empty) {
        srv_reply_error(r, GRPC_STATUS_INVALID_ARGUMENT, NULL, "must provide at least one %s",
                        what);
        return false;
    }
    if (n > LB_MAX_ELEMENTS) {
        srv_reply_error(r, GRPC_STATUS_INVALID_ARGUMENT, NULL,
                        "a leaderboard call takes at most %u %ss, not %zu", LB_MAX_ELEMENTS,
                        what, n);
        return false;
    }
    return true;
}

/* The order a request asks for: 0 or 1, anything else refused. */
static bool check_order(srv_reply *r, int order, bool *descending)
{
    if (order != LEADERBOARD____ORDER__ASCENDING && order != LEADERBOARD____ORDER__DESCENDING)
        return invalid(r, "order must be ASCENDING or DESCENDING");
    *descending = order == LEADERBOARD____ORDER__DESCENDING;
    return true;
}

static void reply_empty(srv_reply *r)
{
    Common__Empty resp = COMMON____EMPTY__INIT;
    srv_reply_add(r, &resp.base);
}

/* ---- Ranked answers ---- */

/* Up to LB_MAX_ELEMENTS ranked elements, packed as one response message
 * whose only field is them (every ranked answer of the service is one). */
typedef struct ranked {
    Leaderboard__RankedElement *el;
    Leaderboard__RankedElement **ptrs;
    size_t n;
} ranked;

static bool ranked_init(ranked *out, size_t cap, srv_reply *r)
{
    out->n = 0;
    out->el = calloc(cap ? cap : 1, sizeof(*out->el));
    out->ptrs = calloc(cap ? cap : 1, sizeof(*out->ptrs));
    if (!out->el || !out->ptrs) {
        free(out->el);
        free(out->ptrs);
        srv_reply_no_memory(r);
        return false;
    }
    return true;
}

static void ranked_push(ranked *out, const zset_node *n, size_t rank)
{
    Leaderboard__RankedElement *e = &out->el[out->n];
    leaderboard____ranked_element__init(e);
    e->id = node_id(n);
    e->score = n->score;
    e->rank = (uint32_t)rank;
    out->ptrs[out->n++] = e;
}

/* Adds the response (`m` is any of the ranked responses, whose field 1 is
 * the elements) and frees the arrays. */
static void ranked_reply(ranked *out, ProtobufCMessage *m, size_t *n_field,
                         Leaderboard__RankedElement ***field, srv_reply *r)
{
    *n_field = out->n;
    *field = out->ptrs;
    srv_reply_add(r, m);
    free(out->el);
    free(out->ptrs);
}

/* ---- Writes ---- */

void srv_delete_leaderboard(momento_local *s, store_cache *c, const ProtobufCMessage *msg,
                            srv_reply *r)
{
    const Leaderboard__DeleteLeaderboardRequest *req =
        (const Leaderboard__DeleteLeaderboardRequest *)msg;
    store_board *b;
    if (!find_board(c, r, req->leaderboard, &b))
        return;
    if (b)
        store_board_delete(&s->store, c, b);
    reply_empty(r);
}

static void free_nodes(zset_node **nodes, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        zset_node_free(nodes[i]);
        srv_yield();
    }
    free(nodes);
}

/* Nodes for the ids not yet in `z` (NULL for the others) and room in its
 * table for them, their cost in *cost; NULL when out of memory. */
static zset_node **prepare_nodes(zset *z, Leaderboard__Element *const *els, size_t n,
                                 uint64_t *cost)
{
    zset_node **nodes = calloc(n, sizeof(*nodes));
    if (!nodes)
        return NULL;
    size_t fresh = 0;
    *cost = 0;
    for (size_t i = 0; i < n; i++) {
        srv_yield();
        if (find_id(z, els[i]->id))
            continue;
        uint8_t v[4];
        id_bytes(els[i]->id, v);
        if (!(nodes[i] = zset_node_new(z, v, sizeof(v), els[i]->score))) {
            free_nodes(nodes, n);
            return NULL;
        }
        *cost += zset_node_cost(nodes[i]);
        fresh++;
    }
    if (zset_reserve(z, fresh) != 0) {
        free_nodes(nodes, n);
        return NULL;
    }
    return nodes;
}

/* Cannot fail: every node and table slot was made beforehand. An id named
 * twice takes the last score. */
static void commit_nodes(zset *z, Leaderboard__Element *const *els, size_t n, zset_node **nodes)
{
    for (size_t i = 0; i < n; i++) {
        srv_yield();
        zset_node *have = find_id(z, els[i]->id);
        if (have) {
            zset_rescore(z, have, els[i]->score);
            zset_node_free(nodes[i]); /* a repeat of an id new in this call */
        } else {
            zset_insert(z, nodes[i]);
        }
    }
    free(nodes);
}

/* All or nothing: every score is checked and every node made, and the
 * memory charged, before the leaderboard changes. */
void srv_upsert_elements(momento_local *s, store_cache *c, const ProtobufCMessage *msg,
                         srv_reply *r)
{
    const Leaderboard__UpsertElementsRequest *req =
        (const Leaderboard__UpsertElementsRequest *)msg;
    store_board *b;
    if (!find_board(c, r, req->leaderboard, &b) ||
        !check_count(r, req->n_elements, false, "element"))
        return;
    for (size_t i = 0; i < req->n_elements; i++) {
        srv_yield();
        if (!isfinite(req->elements[i]->score)) {
            invalid(r, "a leaderboard score must be a finite number (not NaN or infinite)");
            return;
        }
    }
    board_coll *fresh = b ? NULL : board_new();
    zset *z = b ? board_set(b) : fresh ? &fresh->z : NULL;
    uint64_t cost = 0;
    zset_node **nodes = z ? prepare_nodes(z, req->elements, req->n_elements, &cost) : NULL;
    if (!nodes) {
        if (fresh)
            board_destroy(&fresh->hdr);
        srv_reply_no_memory(r);
        return;
    }
    if (b) {
        if (store_board_resize(&s->store, b, board_bytes(z) + cost) != 0) {
            free_nodes(nodes, req->n_elements);
            srv_reply_no_memory(r);
            return;
        }
        commit_nodes(z, req->elements, req->n_elements, nodes);
        store_board_resize(&s->store, b, board_bytes(z)); /* exact; never more */
    } else {
        commit_nodes(z, req->elements, req->n_elements, nodes);
        fresh->hdr.bytes = board_bytes(z);
        const char *name = req->leaderboard;
        if (store_board_add(&s->store, c, name, strlen(name), &fresh->hdr) != 0) {
            board_destroy(&fresh->hdr);
            srv_reply_no_memory(r);
            return;
        }
    }
    reply_empty(r);
}

/* Ids that are not there are skipped; a leaderboard left empty goes. */
void srv_remove_elements(momento_local *s, store_cache *c, const ProtobufCMessage *msg,
                         srv_reply *r)
{
    const Leaderboard__RemoveElementsRequest *req =
        (const Leaderboard__RemoveElementsRequest *)msg;
    store_board *b;
    if (!find_board(c, r, req->leaderboard, &b) || !check_count(r, req->n_ids, false, "id"))
        return;
    if (b) {
        zset *z = board_set(b);
        for (size_t i = 0; i < req->n_ids; i++) {
            srv_yield();
            zset_node *n = find_id(z, req->ids[i]);
            if (n)
                zset_remove(z, n);
        }
        if (z->len == 0)
            store_board_delete(&s->store, c, b);
        else
            store_board_resize(&s->store, b, board_bytes(z)); /* smaller: cannot fail */
    }
    reply_empty(r);
}

/* ---- Reads ---- */

void srv_get_leaderboard_length(momento_local *s, store_cache *c, const ProtobufCMessage *msg,
                                srv_reply *r)
{
    const Leaderboard__GetLeaderboardLengthRequest *req =
        (const Leaderboard__GetLeaderboardLengthRequest *)msg;
    store_board *b;
    if (!find_board(c, r, req->leaderboard, &b))
        return;
    Leaderboard__GetLeaderboardLengthResponse resp =
        LEADERBOARD____GET_LEADERBOARD_LENGTH_RESPONSE__INIT;
    resp.count = b ? (uint32_t)board_set(b)->len : 0;
    srv_reply_add(r, &resp.base);
}

/* The `k` elements from ascending rank `first`, walking up, or down for a
 * descending answer (whose ranks count from the top). */
static void collect(const zset *z, size_t first, size_t k, bool descending, ranked *out)
{
    zset_node *n = k ? zset_at(z, first) : NULL;
    for (size_t i = 0; i < k && n; i++) {
        srv_yield();
        size_t asc = descending ? first - i : first + i;
        ranked_push(out, n, descending ? z->len - 1 - asc : asc);
        n = descending ? zset_prev(n) : zset_next(n);
    }
}

void srv_get_by_rank(momento_local *s, store_cache *c, const ProtobufCMessage *msg, srv_reply *r)
{
    const Leaderboard__GetByRankRequest *req = (const Leaderboard__GetByRankRequest *)msg;
    store_board *b;
    bool down;
    if (!find_board(c, r, req->leaderboard, &b) || !check_order(r, req->order, &down))
        return;
    const Leaderboard__RankRange *rr = req->rank_range;
    if (!rr || rr->start_inclusive >= rr->end_exclusive) {
        invalid(r, "the rank range must not be empty: start rank must be less than end rank");
        return;
    }
    if (rr->end_exclusive - rr->start_inclusive > LB_MAX_ELEMENTS) {
        srv_reply_error(r, GRPC_STATUS_INVALID_ARGUMENT, NULL,
                        "a rank range may span at most %u ranks, not %u", LB_MAX_ELEMENTS,
                        rr->end_exclusive - rr->start_inclusive);
        return;
    }
    const zset *z = b ? board_set(b) : NULL;
    size_t len = z ? z->len : 0;
    size_t start = rr->start_inclusive;
    size_t end = rr->end_exclusive < len ? rr->end_exclusive : len;
    size_t k = start < end ? end - start : 0;
    ranked out;
    if (!ranked_init(&out, k, r))
        return;
    if (k)
        collect(z, down ? len - 1 - start : start, k, down, &out);
    Leaderboard__GetByRankResponse resp = LEADERBOARD____GET_BY_RANK_RESPONSE__INIT;
    ranked_reply(&out, &resp.base, &resp.n_elements, &resp.elements, r);
}

void srv_get_by_score(momento_local *s, store_cache *c, const ProtobufCMessage *msg, srv_reply *r)
{
    const Leaderboard__GetByScoreRequest *req = (const Leaderboard__GetByScoreRequest *)msg;
    store_board *b;
    bool down;
    if (!find_board(c, r, req->leaderboard, &b) || !check_order(r, req->order, &down))
        return;
    const Leaderboard__ScoreRange *sr = req->score_range;
    bool has_min = sr && sr->min_case == LEADERBOARD____SCORE_RANGE__MIN_MIN_INCLUSIVE;
    bool has_max = sr && sr->max_case == LEADERBOARD____SCORE_RANGE__MAX_MAX_EXCLUSIVE;
    if ((has_min && isnan(sr->min_inclusive)) || (has_max && isnan(sr->max_exclusive))) {
        invalid(r, "a score bound must not be NaN");
        return;
    }
    if (has_min && has_max && sr->min_inclusive > sr->max_exclusive) {
        invalid(r, "the minimum score must not be greater than the maximum score");
        return;
    }
    /* 0 is what a request without a limit carries (proto3): the most. */
    size_t limit = req->limit_elements ? req->limit_elements : LB_MAX_ELEMENTS;
    if (limit > LB_MAX_ELEMENTS) {
        srv_reply_error(r, GRPC_STATUS_INVALID_ARGUMENT, NULL,
                        "a score query returns at most %u elements, not %zu", LB_MAX_ELEMENTS,
                        limit);
        return;
    }
    const zset *z = b ? board_set(b) : NULL;
    /* The ascending ranks [lo, hi) whose scores are in [min, max). */
    size_t lo = 0, hi = 0;
    if (z) {
        lo = has_min ? zset_count_below(z, sr->min_inclusive, false) : 0;
        hi = has_max ? zset_count_below(z, sr->max_exclusive, false) : z->len;
    }
    size_t matches = hi > lo ? hi - lo : 0;
    size_t skip = req->offset < matches ? req->offset : matches;
    size_t k = matches - skip < limit ? matches - skip : limit;
    ranked out;
    if (!ranked_init(&out, k, r))
        return;
    if (k)
        collect(z, down ? hi - 1 - skip : lo + skip, k, down, &out);
    Leaderboard__GetByScoreResponse resp = LEADERBOARD____GET_BY_SCORE_RESPONSE__INIT;
    ranked_reply(&out, &resp.base, &resp.n_elements, &resp.elements, r);
}

/* GetRank and GetCompetitionRank: each id asked for that is there, in the
 * order asked, with its rank by `competition`'s rule. */
static void rank_ids(store_board *b, const uint32_t *ids, size_t n, bool down, bool competition,
                     ranked *out)
{
    const zset *z = b ? board_set(b) : NULL;
    for (size_t i = 0; z && i < n; i++) {
        srv_yield();
        const zset_node *node = find_id(z, ids[i]);
        if (!node)
            continue;
        size_t rank;
        if (competition)
            /* The elements strictly ahead: below it, or above it. */
            rank = down ? z->len - zset_count_below(z, node->score, true)
                        : zset_count_below(z, node->score, false);
        else
            rank = down ? z->len - 1 - zset_rank(z, node) : zset_rank(z, node);
        ranked_push(out, node, rank);
    }
}

void srv_get_rank(momento_local *s, store_cache *c, const ProtobufCMessage *msg, srv_reply *r)
{
    const Leaderboard__GetRankRequest *req = (const Leaderboard__GetRankRequest *)msg;
    store_board *b;
    bool down;
    ranked out;
    if (!find_board(c, r, req->leaderboard, &b) || !check_count(r, req->n_ids, true, "id") ||
        !check_order(r, req->order, &down) || !ranked_init(&out, req->n_ids, r))
        return;
    rank_ids(b, req->ids, req->n_ids, down, false, &out);
    Leaderboard__GetRankResponse resp = LEADERBOARD____GET_RANK_RESPONSE__INIT;
    ranked_reply(&out, &resp.base, &resp.n_elements, &resp.elements, r);
}

void srv_get_competition_rank(momento_local *s, store_cache *c, const ProtobufCMessage *msg,
                              srv_reply *r)
{
    const Leaderboard__GetCompetitionRankRequest *req =
        (const Leaderboard__GetCompetitionRankRequest *)msg;
    store_board *b;
    bool down = true; /* the proto's default */
    ranked out;
    if (!find_board(c, r, req->leaderboard, &b) || !check_count(r, req->n_ids, true, "id"))
        return;
    if (req->_order_case == LEADERBOARD____GET_COMPETITION_RANK_REQUEST___ORDER_ORDER &&
        !check_order(r, req->order, &down))
        return;
    if (!ranked_init(&out, req->n_ids, r))
        return;
    rank_ids(b, req->ids, req->n_ids, down, true, &out);
    Leaderboard__GetCompetitionRankResponse resp =
        LEADERBOARD____GET_COMPETITION_RANK_RESPONSE__INIT;
    ranked_reply(&out, &resp.base, &resp.n_elements, &resp.elements, r);
}
