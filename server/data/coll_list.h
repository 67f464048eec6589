/* A list's elements (rpc_list.c): a growable ring buffer of pointers to
 * byte strings. Pushing or popping at either end costs O(1) (amortized over
 * the ring's doublings), reading k elements from any position O(k), and
 * every other operation in proportion to the elements it visits.
 *
 * Writes that may run out of memory are split in two: what can fail
 * (clist_elem_new(), clist_reserve()) comes first and leaves the list as it
 * was, and the change itself (pushes, drops) cannot fail, so that a caller
 * can check a write against the server's memory limit before it makes it.
 * No store dependency: the unit test drives it alone. */
#ifndef MOMENTO_LOCAL_COLL_LIST_H
#define MOMENTO_LOCAL_COLL_LIST_H

#include <stddef.h>
#include <stdint.h>

typedef struct clist_elem {
    size_t len;
    uint8_t data[];
} clist_elem;

typedef struct clist {
    clist_elem **ring; /* cap slots; the elements are ring[(head + i) & (cap - 1)] */
    size_t cap;        /* 0 or a power of two */
    size_t head;
    size_t len;
    uint64_t payload;  /* the elements' lengths, summed */
    uint64_t bytes;    /* the elements' clist_elem_cost(), summed */
    uint64_t wire;     /* the elements' clist_elem_wire(), summed */
} clist;

/* An empty list; allocates nothing. */
void clist_init(clist *l);
/* Frees every element and the ring. */
void clist_destroy(clist *l);

/* A copy of `len` bytes at `p` (p may be NULL when len is 0), not yet in
 * any list; NULL when out of memory. Free with clist_elem_free(). */
clist_elem *clist_elem_new(const uint8_t *p, size_t len);
void clist_elem_free(clist_elem *e);
/* What an element of `len` bytes costs against the server's memory limit:
 * its block as malloc rounds it, and its share of the ring (two slots: the
 * ring doubles when full and halves when three quarters empty). */
uint64_t clist_elem_cost(size_t len);

/* What an element of `len` bytes takes in a ListFetch's reply: a repeated
 * bytes field's tag, its length and its bytes. The server bounds a list by
 * this sum (srv_check_collection_size()). */
uint64_t clist_elem_wire(size_t len);

/* Room for `more` pushes beyond the current length. 0, or -1 when out of
 * memory (the list unchanged). */
int clist_reserve(clist *l, size_t more);

/* Pushes take ownership of `e` and need room (clist_reserve()). A removal
 * may give ring memory back, and with it the room: push first, then drop
 * what the same write drops. */
void clist_push_front(clist *l, clist_elem *e);
void clist_push_back(clist *l, clist_elem *e);
/* The element removed, now the caller's, or NULL when the list is empty. */
clist_elem *clist_pop_front(clist *l);
clist_elem *clist_pop_back(clist *l);

/* The element at `i` (< len), borrowed. */
const clist_elem *clist_at(const clist *l, size_t i);

/* Removals give the ring's memory back once it is three quarters empty;
 * removing nothing changes nothing. */
/* Frees the first or last `n` elements (at most len). */
void clist_drop_front(clist *l, size_t n);
void clist_drop_back(clist *l, size_t n);
/* What the first or last `n` elements cost (clist_elem_cost), summed. */
uint64_t clist_cost_front(const clist *l, size_t n);
uint64_t clist_cost_back(const clist *l, size_t n);
/* Their clist_elem_wire(), summed. */
uint64_t clist_wire_front(const clist *l, size_t n);
uint64_t clist_wire_back(const clist *l, size_t n);

/* Frees every element equal to the `len` bytes at `p`, keeping the order of
 * the others; returns how many went. O(len). */
size_t clist_remove_value(clist *l, const uint8_t *p, size_t len);
/* Frees the elements whose `marks[i]` is nonzero (marks has len entries),
 * keeping the order of the others. O(len). */
void clist_remove_marked(clist *l, const uint8_t *marks);

#endif
