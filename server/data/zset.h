/* A sorted set's elements (rpc_sorted_set.c): distinct byte-string values,
 * each with a double score, ordered by score and then by value (memcmp
 * order, a shorter value first when one is a prefix of the other).
 *
 * Two structures share the nodes: a hash table by value, for finding a
 * value in O(1), and a skiplist whose links record how many elements they
 * jump over, so that an element's rank, the element at a rank and the
 * number of elements below a score all cost O(log n) (expected), and
 * walking k neighbours from there O(k).
 *
 * As for lists (coll_list.h), what can fail comes first and leaves the set
 * as it was (zset_node_new(), zset_reserve()); inserting, rescoring and
 * removing cannot fail. Scores are never NaN (callers refuse them). No
 * store dependency. */
#ifndef MOMENTO_LOCAL_ZSET_H
#define MOMENTO_LOCAL_ZSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ZSET_MAX_HEIGHT 32

typedef struct zset_node zset_node;

typedef struct zset_link {
    zset_node *next;
    size_t span; /* how many elements this link moves forward */
} zset_link;

struct zset_node {
    double score;
    size_t len;         /* the value's length; its bytes follow link[] */
    uint64_t hash;
    zset_node *prev;    /* the element before, NULL for the first */
    int height;
    zset_link link[];
};

typedef struct zset {
    zset_node *head;    /* a sentinel of ZSET_MAX_HEIGHT links before the first element */
    zset_node *tail;
    int height;         /* the tallest element's height, at least 1 */
    size_t len;
    zset_node **table;  /* open addressing by value, linear probing */
    size_t table_cap;   /* 0 or a power of two */
    uint64_t rng;       /* for the elements' heights */
    uint64_t payload;   /* the values' lengths, summed */
    uint64_t bytes;     /* what the nodes cost (zset_node_cost), summed */
    uint64_t wire;      /* the elements' zset_elem_wire(), summed */
} zset;

/* An empty set. 0, or -1 when out of memory. */
int zset_init(zset *z);
/* Frees every node, the table and the sentinel. */
void zset_destroy(zset *z);

static inline const uint8_t *zset_value(const zset_node *n)
{
    return (const uint8_t *)&n->link[n->height];
}

/* A node for the `len` bytes at `v` (NULL allowed when len is 0) with
 * `score`, not yet in the set; NULL when out of memory. Its height is drawn
 * from z's generator. Free one that never went in with zset_node_free(). */
zset_node *zset_node_new(zset *z, const uint8_t *v, size_t len, double score);
void zset_node_free(zset_node *n);
/* What a node costs against the server's memory limit: its block as malloc
 * rounds it, and its share of the hash table. */
uint64_t zset_node_cost(const zset_node *n);

/* What an element of a `len`-byte value takes in a fetch's reply with
 * scores: a repeated message field holding the value and the score, each
 * counted as if present (proto3 leaves out an empty value and a zero
 * score). The server bounds a set by this sum (srv_check_collection_size()). */
uint64_t zset_elem_wire(size_t len);

/* Room in the hash table for `more` new values. 0, or -1 when out of
 * memory (the set unchanged). */
int zset_reserve(zset *z, size_t more);

/* The node holding the value, or NULL. */
zset_node *zset_find(const zset *z, const uint8_t *v, size_t len);
/* Adds `n`, whose value must be absent, with room reserved. */
void zset_insert(zset *z, zset_node *n);
/* Moves `n` (in the set) to its place for `score`. */
void zset_rescore(zset *z, zset_node *n, double score);
/* Takes `n` out of the set and frees it. */
void zset_remove(zset *z, zset_node *n);

/* In ascending order, 0 for the lowest. */
size_t zset_rank(const zset *z, const zset_node *n);
/* The node at rank `r` (< len). */
zset_node *zset_at(const zset *z, size_t r);
/* How many elements score below `score`, or at most `score` when
 * `inclusive`: the rank where the elements above that bound begin. */
size_t zset_count_below(const zset *z, double score, bool inclusive);

static inline zset_node *zset_next(const zset_node *n)
{
    return n->link[0].next;
}

static inline zset_node *zset_prev(const zset_node *n)
{
    return n->prev;
}

/* <0, 0, >0 as (s1, v1) orders before, with or after (s2, v2). */
int zset_compare(double s1, const uint8_t *v1, size_t l1, double s2, const uint8_t *v2,
                 size_t l2);

#endif
