/* A listening TCP socket on the server's bind address (listen.c), for the
 * ports momento-local opens itself: the protosocket port and the test
 * admin's (gRPC core opens the gRPC port). */
#ifndef MOMENTO_LOCAL_SRV_LISTEN_H
#define MOMENTO_LOCAL_SRV_LISTEN_H

#include <stdbool.h>

/* Listens on `bind` (an IPv4 or IPv6 address, as the options hold it) and
 * `port` (0: any free one) with a queue of `backlog`, close-on-exec and
 * SO_REUSEADDR (a server restarted on its port binds it again at once,
 * past the old connections' TIME_WAIT; Linux still refuses a second
 * listener on it), non-blocking when `nonblock`. Returns the socket and
 * sets *ret_port to the port it has; or -1, when `bind` is no address or
 * the port could not be had, with nothing left open. */
int srv_listen(const char *bind, int port, bool nonblock, int backlog, int *ret_port);

#endif
