/* The sorted set: a hash table by value beside a skiplist with spans
 * (zset.h). The skiplist keeps Pugh's layout: each element gets a random
 * height (each further level with probability 1/4), and link i of a node
 * points to the next node of height > i, recording in `span` how many
 * elements that link passes; summing spans along a search path gives ranks. */
#include "data/zset.h"

#include "data/srv_yield.h"

#include <stdlib.h>
#include <string.h>

#define MIN_TABLE 8u

/* FNV-1a: the values are arbitrary bytes chosen by clients, short as a
 * rule; this is a lookup structure, not a defence against chosen
 * collisions. */
static uint64_t hash_bytes(const uint8_t *p, size_t len)
{
    uint64_t h = 0xcbf29ce484222325u;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3u;
    }
    return h;
}

int zset_compare(double s1, const uint8_t *v1, size_t l1, double s2, const uint8_t *v2,
                 size_t l2)
{
    if (s1 < s2)
        return -1;
    if (s1 > s2)
        return 1;
    size_t n = l1 < l2 ? l1 : l2;
    int c = n ? memcmp(v1, v2, n) : 0;
    if (c)
        return c;
    return l1 < l2 ? -1 : l1 > l2;
}

static int cmp_nodes(const zset_node *a, const zset_node *b)
{
    return zset_compare(a->score, zset_value(a), a->len, b->score, zset_value(b), b->len);
}

int zset_init(zset *z)
{
    memset(z, 0, sizeof(*z));
    z->head = calloc(1, sizeof(zset_node) + ZSET_MAX_HEIGHT * sizeof(zset_link));
    if (!z->head)
        return -1;
    z->head->height = ZSET_MAX_HEIGHT;
    z->height = 1;
    /* Any odd-ish nonzero seed works; mixing in the address varies the
     * shapes between sets without making one set's behaviour depend on
     * anything but its own history. */
    z->rng = 0x9e3779b97f4a7c15u ^ (uint64_t)(uintptr_t)z;
    if (!z->rng)
        z->rng = 1;
    return 0;
}

void zset_destroy(zset *z)
{
    zset_node *n = z->head ? z->head->link[0].next : NULL;
    while (n) {
        zset_node *next = n->link[0].next;
        free(n);
        n = next;
    }
    free(z->head);
    free(z->table);
    memset(z, 0, sizeof(*z));
}

/* xorshift64*: fast, and good enough for coin flips. */
static uint64_t next_random(zset *z)
{
    z->rng ^= z->rng >> 12;
    z->rng ^= z->rng << 25;
    z->rng ^= z->rng >> 27;
    return z->rng * 0x2545f4914f6cdd1du;
}

static int random_height(zset *z)
{
    uint64_t r = next_random(z);
    int h = 1;
    while (h < ZSET_MAX_HEIGHT && (r & 3) == 0) {
        h++;
        r >>= 2;
    }
    return h;
}

zset_node *zset_node_new(zset *z, const uint8_t *v, size_t len, double score)
{
    int h = random_height(z);
    size_t head = sizeof(zset_node) + (size_t)h * sizeof(zset_link);
    if (len > SIZE_MAX - head)
        return NULL;
    zset_node *n = malloc(head + len);
    if (!n)
        return NULL;
    n->score = score;
    n->len = len;
    n->hash = hash_bytes(v, len);
    n->prev = NULL;
    n->height = h;
    memset(n->link, 0, (size_t)h * sizeof(zset_link));
    if (len)
        memcpy((uint8_t *)zset_value(n), v, len);
    return n;
}

void zset_node_free(zset_node *n)
{
    free(n);
}

uint64_t zset_node_cost(const zset_node *n)
{
    uint64_t size = sizeof(zset_node) + (uint64_t)n->height * sizeof(zset_link) + n->len;
    /* glibc's chunk (request + 8, rounded up to 16), and two table slots:
     * the table stays between 3/8 and 3/4 full. */
    uint64_t chunk = (size + 8 + 15) & ~(uint64_t)15;
    return chunk + 2 * sizeof(zset_node *);
}

/* A varint's length. */
static uint64_t varint_bytes(uint64_t v)
{
    uint64_t n = 1;
    for (; v >= 0x80; v >>= 7)
        n++;
    return n;
}

uint64_t zset_elem_wire(size_t len)
{
    /* value: tag, length, bytes; score: tag, 8 bytes. */
    uint64_t m = 1 + varint_bytes(len) + len + 9;
    return 1 + varint_bytes(m) + m;
}

/* ---- The hash table ---- */

static void table_put(zset_node **table, size_t cap, zset_node *n)
{
    size_t i = n->hash & (cap - 1);
    while (table[i])
        i = (i + 1) & (cap - 1);
    table[i] = n;
}

static int rehash(zset *z, size_t cap)
{
    zset_node **t = calloc(cap, sizeof(*t));
    if (!t)
        return -1;
    for (size_t i = 0; i < z->table_cap; i++) {
        if (z->table[i])
            table_put(t, cap, z->table[i]);
        srv_yield();
    }
    free(z->table);
    z->table = t;
    z->table_cap = cap;
    return 0;
}

int zset_reserve(zset *z, size_t more)
{
    if (more > SIZE_MAX / 8 - z->len)
        return -1;
    size_t need = z->len + more;
    if (need * 4 <= z->table_cap * 3 && z->table_cap)
        return 0;
    size_t cap = z->table_cap ? z->table_cap : MIN_TABLE;
    while (cap * 3 < need * 4)
        cap *= 2;
    if (cap > SIZE_MAX / sizeof(zset_node *))
        return -1;
    return rehash(z, cap);
}

zset_node *zset_find(const zset *z, const uint8_t *v, size_t len)
{
    if (!z->table_cap)
        return NULL;
    uint64_t h = hash_bytes(v, len);
    for (size_t i = h & (z->table_cap - 1); z->table[i]; i = (i + 1) & (z->table_cap - 1)) {
        const zset_node *n = z->table[i];
        if (n->hash == h && n->len == len && (len == 0 || memcmp(zset_value(n), v, len) == 0))
            return (zset_node *)n;
    }
    return NULL;
}

/* Linear probing's deletion without tombstones: the entries after the
 * hole that would no longer be reachable from their home slot move back
 * into it. */
static void table_delete(zset *z, const zset_node *n)
{
    size_t mask = z->table_cap - 1;
    size_t j = n->hash & mask;
    while (z->table[j] != n)
        j = (j + 1) & mask;
    z->table[j] = NULL;
    for (size_t i = (j + 1) & mask; z->table[i]; i = (i + 1) & mask) {
        size_t home = z->table[i]->hash & mask;
        /* The entry at i may stay only if its home lies cyclically in
         * (j, i]. */
        bool stays = j < i ? (home > j && home <= i) : (home > j || home <= i);
        if (!stays) {
            z->table[j] = z->table[i];
            z->table[i] = NULL;
            j = i;
        }
    }
}

/* A table seven eighths empty is rebuilt smaller; a failure keeps the
 * larger one, which still works. */
static void table_shrink(zset *z)
{
    if (z->len == 0) {
        free(z->table);
        z->table = NULL;
        z->table_cap = 0;
        return;
    }
    if (z->table_cap <= MIN_TABLE || z->len * 8 > z->table_cap)
        return;
    size_t cap = MIN_TABLE;
    while (cap * 3 < z->len * 8)
        cap *= 2;
    rehash(z, cap);
}

/* ---- The skiplist ---- */

/* Links `n` (not in the list) at its place. */
static void link_node(zset *z, zset_node *n)
{
    zset_node *update[ZSET_MAX_HEIGHT];
    size_t rank[ZSET_MAX_HEIGHT];
    zset_node *x = z->head;
    for (int i = z->height - 1; i >= 0; i--) {
        rank[i] = i == z->height - 1 ? 0 : rank[i + 1];
        while (x->link[i].next && cmp_nodes(x->link[i].next, n) < 0) {
            rank[i] += x->link[i].span;
            x = x->link[i].next;
        }
        update[i] = x;
    }
    if (n->height > z->height) {
        for (int i = z->height; i < n->height; i++) {
            rank[i] = 0;
            update[i] = z->head;
            z->head->link[i].span = z->len;
        }
        z->height = n->height;
    }
    for (int i = 0; i < n->height; i++) {
        n->link[i].next = update[i]->link[i].next;
        update[i]->link[i].next = n;
        /* update[i] sits at rank[i], n lands at rank[0] + 1. */
        n->link[i].span = update[i]->link[i].span - (rank[0] - rank[i]);
        update[i]->link[i].span = rank[0] - rank[i] + 1;
    }
    for (int i = n->height; i < z->height; i++)
        update[i]->link[i].span++;
    n->prev = update[0] == z->head ? NULL : update[0];
    if (n->link[0].next)
        n->link[0].next->prev = n;
    else
        z->tail = n;
    z->len++;
}

/* Unlinks `n` (in the list); its memory stays. */
static void unlink_node(zset *z, zset_node *n)
{
    zset_node *update[ZSET_MAX_HEIGHT];
    zset_node *x = z->head;
    for (int i = z->height - 1; i >= 0; i--) {
        while (x->link[i].next && cmp_nodes(x->link[i].next, n) < 0)
            x = x->link[i].next;
        update[i] = x;
    }
    for (int i = 0; i < z->height; i++) {
        if (update[i]->link[i].next == n) {
            update[i]->link[i].span += n->link[i].span - 1;
            update[i]->link[i].next = n->link[i].next;
        } else {
            update[i]->link[i].span--;
        }
    }
    if (n->link[0].next)
        n->link[0].next->prev = n->prev;
    else
        z->tail = n->prev;
    while (z->height > 1 && !z->head->link[z->height - 1].next)
        z->height--;
    z->len--;
}

void zset_insert(zset *z, zset_node *n)
{
    table_put(z->table, z->table_cap, n);
    link_node(z, n);
    z->payload += n->len;
    z->bytes += zset_node_cost(n);
    z->wire += zset_elem_wire(n->len);
}

void zset_rescore(zset *z, zset_node *n, double score)
{
    const uint8_t *v = zset_value(n);
    const zset_node *p = n->prev, *q = n->link[0].next;
    /* Still between its neighbours: the links stay as they are. */
    if ((!p || zset_compare(p->score, zset_value(p), p->len, score, v, n->len) < 0) &&
        (!q || zset_compare(score, v, n->len, q->score, zset_value(q), q->len) < 0)) {
        n->score = score;
        return;
    }
    unlink_node(z, n);
    n->score = score;
    link_node(z, n);
}

void zset_remove(zset *z, zset_node *n)
{
    unlink_node(z, n);
    table_delete(z, n);
    z->payload -= n->len;
    z->bytes -= zset_node_cost(n);
    z->wire -= zset_elem_wire(n->len);
    free(n);
    table_shrink(z);
}

size_t zset_rank(const zset *z, const zset_node *n)
{
    const zset_node *x = z->head;
    size_t r = 0;
    for (int i = z->height - 1; i >= 0; i--) {
        while (x->link[i].next && cmp_nodes(x->link[i].next, n) <= 0) {
            r += x->link[i].span;
            x = x->link[i].next;
        }
        if (x == n)
            return r - 1;
    }
    return r - 1; /* not reached for a node in the set */
}

zset_node *zset_at(const zset *z, size_t r)
{
    zset_node *x = z->head;
    size_t target = r + 1, at = 0;
    for (int i = z->height - 1; i >= 0; i--) {
        while (x->link[i].next && at + x->link[i].span <= target) {
            at += x->link[i].span;
            x = x->link[i].next;
        }
        if (at == target)
            return x;
    }
    return NULL;
}

size_t zset_count_below(const zset *z, double score, bool inclusive)
{
    const zset_node *x = z->head;
    size_t r = 0;
    for (int i = z->height - 1; i >= 0; i--) {
        const zset_node *next;
        while ((next = x->link[i].next) &&
               (next->score < score || (inclusive && next->score == score))) {
            r += x->link[i].span;
            x = next;
        }
    }
    return r;
}
