/* The test admin (admin.c): the HTTP port the official SDKs' test suites
 * use to cut the data port and give it back (`GET /block`, `GET
 * /unblock`, momento-local's --enable-test-admin). Off unless asked for. */
#ifndef MOMENTO_LOCAL_SRV_ADMIN_H
#define MOMENTO_LOCAL_SRV_ADMIN_H

#include <pthread.h>
#include <stdbool.h>

struct momento_local;

typedef struct srv_admin {
    int fd;          /* the listening socket, -1 when off */
    int wake[2];     /* a pipe that ends the thread */
    pthread_t thread;
    bool running;
    int port;
} srv_admin;

/* Listens on the server's bind address and the options' admin port (0: any
 * free one), and answers on a thread of its own. Returns 0, or -1 (the
 * port could not be bound; nothing is left open). Nothing happens when the
 * options leave the admin off. */
int srv_admin_start(struct momento_local *s);
/* Cuts the data port (`blocked`) or gives it back: calls.c refuses calls
 * and ends streams while it is cut. Any thread. */
void srv_admin_block(struct momento_local *s, bool blocked);
/* Stops and closes it; harmless when it never started. */
void srv_admin_stop(struct momento_local *s);

#endif
