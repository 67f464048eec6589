/*
 * libmomento on a libuv loop: a client in dispatch mode
 * (momento_config_set_dispatch()) has its callbacks run by the loop's
 * thread, from a uv_poll_t on the client's eventfd. Header-only, like
 * hiredis's adapters: include it in the one file that owns the loop and
 * link libuv yourself: there is no adapter library, only the loop's own
 * package, `cc app.c $(pkg-config --cflags --libs momento libuv)`.
 *
 *     momento_uv a;
 *     momento_uv_attach(&a, uv_default_loop(), client);
 *     momento_get(client, ...);          // its callback runs in uv_run()
 *     ...
 *     momento_uv_detach(&a, NULL);       // before momento_client_free()
 *
 * Thread rules: attach and detach on the loop's thread. Detach before the
 * client is freed (also when freeing it from one of its callbacks: detach,
 * then free); the handle belongs to libuv until its close callback. The
 * momento_uv struct must stay where it is until then.
 */
#ifndef MOMENTO_ADAPTERS_LIBUV_H
#define MOMENTO_ADAPTERS_LIBUV_H

#include "momento/momento.h"

#include <uv.h>

typedef struct momento_uv {
    uv_poll_t poll;          /* poll.data points back here */
    momento_client *client;
} momento_uv;

static void momento_uv__readable(uv_poll_t *handle, int status, int events)
{
    momento_uv *a = (momento_uv *)handle->data;
    (void)events;
    /* An error from the poll still means: look at the queue. */
    (void)status;
    momento_client_dispatch(a->client, 0);
}

/*
 * Starts running `c`'s callbacks on `loop`. Returns 0,
 * MOMENTO_ERR_INVALID_ARGUMENT (a NULL argument, or `c` not in dispatch
 * mode), or MOMENTO_ERR_UNKNOWN when libuv refused the handle (nothing to
 * detach then).
 */
static inline int momento_uv_attach(momento_uv *a, uv_loop_t *loop, momento_client *c)
{
    if (!a || !loop || !c)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    int fd = momento_client_dispatch_fd(c);
    if (fd < 0)
        return fd;
    a->client = c;
    if (uv_poll_init(loop, &a->poll, fd) != 0)
        return MOMENTO_ERR_UNKNOWN;
    a->poll.data = a;
    if (uv_poll_start(&a->poll, UV_READABLE, momento_uv__readable) != 0) {
        uv_close((uv_handle_t *)&a->poll, NULL);
        return MOMENTO_ERR_UNKNOWN;
    }
    return MOMENTO_OK;
}

/* Stops watching the client and closes the handle; `on_closed` (may be
 * NULL) runs when libuv has let go of it. Callbacks still queued then are
 * run by momento_client_free(). */
static inline void momento_uv_detach(momento_uv *a, uv_close_cb on_closed)
{
    uv_poll_stop(&a->poll);
    uv_close((uv_handle_t *)&a->poll, on_closed);
}

#endif
