/*
 * libmomento on a libevent loop: a client in dispatch mode
 * (momento_config_set_dispatch()) has its callbacks run by the loop's
 * thread, from a persistent read event on the client's eventfd.
 * Header-only, like hiredis's adapters: include it in the one file that
 * owns the event base and link libevent yourself: there is no adapter
 * library, only the loop's own package,
 * `cc app.c $(pkg-config --cflags --libs momento libevent)`.
 *
 *     momento_libevent a;
 *     momento_libevent_attach(&a, base, client);
 *     momento_get(client, ...);          // its callback runs in the loop
 *     ...
 *     momento_libevent_detach(&a);       // before momento_client_free()
 *
 * Thread rules: attach and detach on the loop's thread. Detach before the
 * client is freed (also when freeing it from one of its callbacks: detach,
 * then free).
 */
#ifndef MOMENTO_ADAPTERS_LIBEVENT_H
#define MOMENTO_ADAPTERS_LIBEVENT_H

#include "momento/momento.h"

#include <event2/event.h>

typedef struct momento_libevent {
    struct event *ev;
    momento_client *client;
} momento_libevent;

static void momento_libevent__readable(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    momento_client_dispatch(((momento_libevent *)arg)->client, 0);
}

/*
 * Starts running `c`'s callbacks on `base`. Returns 0,
 * MOMENTO_ERR_INVALID_ARGUMENT (a NULL argument, or `c` not in dispatch
 * mode) or MOMENTO_ERR_NO_MEMORY (libevent could not make the event).
 */
static inline int momento_libevent_attach(momento_libevent *a, struct event_base *base,
                                          momento_client *c)
{
    if (!a || !base || !c)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    int fd = momento_client_dispatch_fd(c);
    if (fd < 0)
        return fd;
    a->client = c;
    a->ev = event_new(base, fd, EV_READ | EV_PERSIST, momento_libevent__readable, a);
    if (!a->ev)
        return MOMENTO_ERR_NO_MEMORY;
    if (event_add(a->ev, NULL) != 0) {
        event_free(a->ev);
        a->ev = NULL;
        return MOMENTO_ERR_NO_MEMORY;
    }
    return MOMENTO_OK;
}

/* Stops watching the client. Callbacks still queued then are run by
 * momento_client_free(). */
static inline void momento_libevent_detach(momento_libevent *a)
{
    if (a->ev) {
        event_del(a->ev);
        event_free(a->ev);
        a->ev = NULL;
    }
}

#endif
