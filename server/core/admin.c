/* The test admin: a tiny HTTP/1.0 server on a loopback port of its own,
 * one connection at a time on its own thread, so that nothing it does can
 * hold up a call. `GET /block` cuts the data port (srv_admin_block(), also
 * momento_local_block():
 * every call from then on is answered UNAVAILABLE and every open
 * subscription stream ends UNAVAILABLE, as a port that stops answering
 * looks to a gRPC client); `GET /unblock` gives it back. Each answer is 200
 * with a one-line body; any other path is 404. A request must arrive
 * within a second and fit in 2 KiB. */
#include "core/srv_admin.h"

#include "core/srv_listen.h"
#include "core/srv_server.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#define REQUEST_MAX 2048

static void answer(int fd, const char *status, const char *body)
{
    char out[256];
    int n = snprintf(out, sizeof(out),
                     "HTTP/1.0 %s\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n"
                     "Connection: close\r\n\r\n%s",
                     status, strlen(body), body);
    /* Best effort: a client that went away gets nothing. */
    ssize_t w = send(fd, out, (size_t)n, MSG_NOSIGNAL);
    (void)w;
}

static void serve(momento_local *s, int fd)
{
    struct timeval tv = {1, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    char req[REQUEST_MAX + 1];
    size_t len = 0;
    /* The request line is all that matters; read up to the end of the
     * headers (or the limit, or the timeout). */
    while (len < REQUEST_MAX) {
        ssize_t n = recv(fd, req + len, REQUEST_MAX - len, 0);
        if (n <= 0)
            break;
        len += (size_t)n;
        req[len] = '\0';
        if (strstr(req, "\r\n\r\n") || strstr(req, "\n\n"))
            break;
    }
    req[len] = '\0';
    char method[8], path[64];
    if (sscanf(req, "%7s %63s", method, path) != 2) {
        answer(fd, "400 Bad Request", "bad request\n");
    } else if (strcmp(path, "/block") == 0) {
        srv_admin_block(s, true);
        answer(fd, "200 OK", "blocked\n");
    } else if (strcmp(path, "/unblock") == 0) {
        srv_admin_block(s, false);
        answer(fd, "200 OK", "unblocked\n");
    } else {
        answer(fd, "404 Not Found", "not found: /block and /unblock only\n");
    }
}

void srv_admin_block(momento_local *s, bool blocked)
{
    atomic_store(&s->blocked, blocked);
}

static void *admin_loop(void *arg)
{
    momento_local *s = arg;
    struct pollfd p[2] = {{s->admin.fd, POLLIN, 0}, {s->admin.wake[0], POLLIN, 0}};
    for (;;) {
        if (poll(p, 2, -1) < 0 && errno != EINTR)
            break;
        if (p[1].revents)
            break;
        if (!(p[0].revents & POLLIN))
            continue;
        int fd = accept(s->admin.fd, NULL, NULL);
        if (fd < 0)
            continue;
        serve(s, fd);
        close(fd);
    }
    return NULL;
}

int srv_admin_start(momento_local *s)
{
    srv_admin *a = &s->admin;
    a->fd = -1;
    a->wake[0] = a->wake[1] = -1;
    if (s->opts.test_admin_port < 0)
        return 0;
    a->fd = srv_listen(s->opts.bind, s->opts.test_admin_port, false, 16, &a->port);
    if (a->fd < 0 || pipe2(a->wake, O_CLOEXEC) < 0) {
        srv_admin_stop(s);
        return -1;
    }
    if (pthread_create(&a->thread, NULL, admin_loop, s) != 0) {
        srv_admin_stop(s);
        return -1;
    }
    a->running = true;
    return 0;
}

void srv_admin_stop(momento_local *s)
{
    srv_admin *a = &s->admin;
    if (a->running) {
        ssize_t w = write(a->wake[1], "x", 1);
        (void)w;
        pthread_join(a->thread, NULL);
        a->running = false;
    }
    if (a->fd >= 0)
        close(a->fd);
    for (int i = 0; i < 2; i++)
        if (a->wake[i] >= 0)
            close(a->wake[i]);
    a->fd = a->wake[0] = a->wake[1] = -1;
    a->port = 0;
}
