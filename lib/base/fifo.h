/* A queue of structures linked through a member of their own, with head
 * and tail pointers: appended in O(1) at the tail, taken from the head.
 * utlist (which the library uses for its doubly linked lists) has no tail
 * pointer for a singly linked list, and its LL_APPEND walks the list; the
 * FIFO queues that stand on hot paths (the cap's waiting calls, posted
 * attempts, the dispatch queue, protosocket's launched attempts) append
 * through this one macro instead of each spelling it out. */
#ifndef MOMENTO_FIFO_H
#define MOMENTO_FIFO_H

/* Appends `item` to the queue `head` .. `tail` (lvalues, both NULL when it
 * is empty) through its member `next`, which it clears. No lock: the
 * caller holds the queue's. */
#define MOMENTO__FIFO_APPEND(head, tail, item, next)                                               \
    do {                                                                                           \
        (item)->next = NULL;                                                                       \
        if (tail)                                                                                  \
            (tail)->next = (item);                                                                 \
        else                                                                                       \
            (head) = (item);                                                                       \
        (tail) = (item);                                                                           \
    } while (0)

#endif
