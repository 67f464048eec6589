/* Intrusive doubly linked lists, written once for every list momento-local
 * keeps (the store's LRU order, the calls and commands held back behind
 * pins, topics' lists, webhooks' boxes, connections...). As BSD's
 * <sys/queue.h>: macros over the names of the node's two link fields, so
 * that a node may be on several lists at once, each with its own fields,
 * and the code that walks a list reads as before (`n = n->next`).
 *
 * A *list* is known by its first node; a *queue* by its first and its last
 * (for lists appended to, or walked from the end). `first` and `last` are
 * lvalues. Every argument is evaluated more than once: pass names, not
 * expressions with side effects. A node taken off has its links NULL. */
#ifndef MOMENTO_LOCAL_SRV_LIST_H
#define MOMENTO_LOCAL_SRV_LIST_H

#include <stddef.h>

/* `n` first in the list. */
#define SRV_LIST_PUSH(first, n, prev, next)                                    \
    do {                                                                       \
        (n)->prev = NULL;                                                      \
        (n)->next = (first);                                                   \
        if (first)                                                             \
            (first)->prev = (n);                                               \
        (first) = (n);                                                         \
    } while (0)

/* `n`, which is in the list, out of it. */
#define SRV_LIST_REMOVE(first, n, prev, next)                                  \
    do {                                                                       \
        if ((n)->prev)                                                         \
            (n)->prev->next = (n)->next;                                       \
        else                                                                   \
            (first) = (n)->next;                                               \
        if ((n)->next)                                                         \
            (n)->next->prev = (n)->prev;                                       \
        (n)->prev = (n)->next = NULL;                                          \
    } while (0)

/* `n` first in the queue. */
#define SRV_QUEUE_PREPEND(first, last, n, prev, next)                          \
    do {                                                                       \
        if (!(first))                                                          \
            (last) = (n);                                                      \
        SRV_LIST_PUSH(first, n, prev, next);                                   \
    } while (0)

/* `n` last in the queue. */
#define SRV_QUEUE_APPEND(first, last, n, prev, next)                           \
    do {                                                                       \
        (n)->next = NULL;                                                      \
        (n)->prev = (last);                                                    \
        if (last)                                                              \
            (last)->next = (n);                                                \
        else                                                                   \
            (first) = (n);                                                     \
        (last) = (n);                                                          \
    } while (0)

/* `n`, which is in the queue, out of it. */
#define SRV_QUEUE_REMOVE(first, last, n, prev, next)                           \
    do {                                                                       \
        if (!(n)->next)                                                        \
            (last) = (n)->prev;                                                \
        SRV_LIST_REMOVE(first, n, prev, next);                                 \
    } while (0)

#endif
