/* The metrics port: `GET /metrics` over HTTP/1.x on the proxy's own epoll
 * loop (docs/proxy.md "Metrics"). One request per connection, answered
 * with Connection: close. Bounded whatever the client does:
 *  - a request head of at most 8 KiB (431 past it);
 *  - at most 4 connections at once (a fifth is answered 503 and closed);
 *  - 3 s from accept to a whole request head (408 and closed), 10 s from
 *    accept to closed, however slowly the client reads the answer or keeps
 *    sending (what it sends after its head is read and dropped, 256 KiB at
 *    most, so that its answer is not lost to a reset);
 *  - GET and HEAD answer 200 at /metrics (a query string ignored) and 404
 *    elsewhere; another method 405; a malformed request 400; a version
 *    other than HTTP/1.0 and 1.1 505.
 * Everything runs on the loop's thread: the scrape reads the counters the
 * loop writes without a lock. */
#ifndef PX_HTTP_H
#define PX_HTTP_H

#include "conn.h"

#include <stddef.h>
#include <stdint.h>

typedef struct px_http px_http;

/* Renders the answer's body: malloc'd, *len bytes; NULL when out of
 * memory (answered 500). */
typedef char *(*px_http_render_fn)(void *ud, size_t *len);

/* Serves on `listen_fd` (listening, non-blocking; the port owns it from
 * here and closes it), registering it with epfd. NULL when out of memory
 * (the socket is closed). */
px_http *px_http_new(int epfd, int listen_fd, px_http_render_fn render, void *ud);
/* An epoll event whose px_watch has kind PX_WATCH_HTTP. */
void px_http_event(px_http *h, px_watch *w, uint32_t events);
/* Milliseconds until px_http_expire() has work, or -1: none. */
int px_http_timeout_ms(const px_http *h);
/* Closes the connections whose time is up; call it each loop pass. */
void px_http_expire(px_http *h);
/* Stops accepting (SIGTERM); the connections open finish. */
void px_http_stop(px_http *h);
/* Closes everything. NULL-safe. */
void px_http_free(px_http *h);

#endif
