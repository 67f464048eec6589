/* A client connection and the order of its replies.
 *
 * Commands are pipelined: a protocol module parses every whole command in
 * the input (px_proto.feed), and each takes a place in the reply order with
 * px_reply_begin() before it is sent to Momento. Its reply is written into
 * that place, at once or from a library callback, and closed with
 * px_reply_end(); the connection writes replies strictly in that order,
 * whichever finishes first. Until a reply reaches the head of the order its
 * bytes are held in the reply; at the head they go straight to the
 * connection's output.
 *
 * A connection that is closed (the client went away, a protocol error)
 * while replies are still pending keeps its memory until the last of them
 * ends: their bytes are dropped. So a callback may always write into its
 * reply and end it.
 *
 * Everything here runs on the proxy's one thread. */
#ifndef PX_CONN_H
#define PX_CONN_H

#include "px.h"
#include "tls.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct px_conn px_conn;
typedef struct px_reply px_reply;

/* What a listening port speaks. */
typedef struct px_proto {
    const char *name; /* "resp", "memcache": the "NAME listening on" line */
    /* Parses and starts every whole command in data[0, len), stopping early
     * when px_conn_can_start() turns false or the connection is closing.
     * Returns the bytes consumed (whole commands only). A protocol error
     * is answered and the connection closed with px_conn_close_after() or
     * px_conn_abort(). */
    size_t (*feed)(px_conn *c, const char *data, size_t len);
    /* Written to a connection refused for --max-connections, then closed. */
    const char *refused;
    /* Frees the protocol's per-connection state (px_conn_state()); the
     * connection's replies may still be pending. NULL: none. */
    void (*closed)(px_conn *c);
} px_proto;

/* The next place in c's reply order. NULL only when out of memory: the
 * connection is then being closed and the command must not be started. */
px_reply *px_reply_begin(px_conn *c);
/* Appends bytes to the reply. Out of memory closes the connection (its
 * pending replies still end normally). */
void px_reply_put(px_reply *r, const void *p, size_t n);
void px_reply_puts(px_reply *r, const char *s);
void px_reply_printf(px_reply *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The reply will be a status, a number or an error: small whatever the
 * data, so it takes next to nothing of the connection's reply budget
 * (px_conn_can_start()). A reply not so marked is expected to be as large
 * as the connection's recent replies. Call it at most once, before the
 * reply ends. */
void px_reply_small(px_reply *r);
/* The reply is complete: it is written once every reply before it is.
 * `r` must not be used after. */
void px_reply_end(px_reply *r);
/* The connection a reply belongs to (it may be closed meanwhile). */
px_conn *px_reply_conn(const px_reply *r);
/* The command the reply answers, for the metrics (metrics.h): call it once
 * per command, after px_reply_begin(), with the protocol's counters of that
 * command (px_metrics_resp_command(), ...). When the reply ends it is
 * counted, timed from the loop pass that began it, and counted as an error
 * when its first bytes are the protocol's error. A reply not tagged is not
 * counted. */
typedef struct px_cmd_metrics px_cmd_metrics;
void px_reply_command(px_reply *r, px_cmd_metrics *m);

/* The backend and limits of every connection. */
px_backend *px_conn_backend(const px_conn *c);
/* Whether another command may start now: not closing, below
 * --max-in-flight, and its reply fits the connection's reply budget
 * (limits.max_output_bytes) beside the replies the client has not read,
 * those finished behind an open one, and those still open (each expected
 * as large as the recent replies, at least 1/16 of the budget, unless
 * px_reply_small()). With nothing in flight a command may always start. A
 * feed that sees false stops; the connection feeds it the rest when
 * replies drain. */
bool px_conn_can_start(const px_conn *c);
/* Reply bytes written by the proxy and not yet taken by the client. */
size_t px_conn_output_bytes(const px_conn *c);
/* Those and the bytes of finished replies waiting behind an open one. */
size_t px_conn_held_bytes(const px_conn *c);
/* Replies begun and not yet ended. */
unsigned px_conn_pending(const px_conn *c);
/* Closes the connection once every reply begun so far is written (QUIT,
 * an error after which the protocol closes). Nothing more is read. */
void px_conn_close_after(px_conn *c);
/* Closes the connection now, dropping what is pending. */
void px_conn_abort(px_conn *c);
bool px_conn_closing(const px_conn *c);

/* Order between a connection's commands. Redis and memcached run a
 * connection's commands one after another; the proxy has many in flight
 * at once, and Momento may apply them in any order. So a command that
 * touches a key an earlier command still in flight touches, where either
 * writes it, must wait for that one: the feed asks px_conn_keys_free()
 * before starting it and, on false, calls px_conn_wait() and stops there;
 * the connection feeds the rest once a reply ends. A started command
 * records its keys with px_reply_claim(); they are released when its
 * reply ends. Keys are compared by a 64-bit hash: a collision only makes
 * a command wait. `keys` is every `step`-th of n strings. The check costs
 * about (keys + claims in flight) log keys, and a command asked again
 * after a wait (the feed must ask for the same command first) costs
 * nothing more: each ending reply takes its own claims off. */
bool px_conn_keys_free(px_conn *c, const px_str *keys, size_t n, size_t step, bool write);
void px_reply_claim(px_reply *r, const px_str *keys, size_t n, size_t step, bool write);
void px_conn_wait(px_conn *c);

/* The protocol's per-connection state, freed by px_proto.closed. */
void *px_conn_state(const px_conn *c);
/* The state, made (size bytes, zeroed) at the connection's first feed,
 * as each protocol's feed starts; NULL out of memory, the connection
 * then aborted. */
void *px_conn_state_or_new(px_conn *c, size_t size);
/* A number unique to the connection for the proxy's life (CLIENT ID). */
uint64_t px_conn_id(const px_conn *c);
/* What the connection speaks (its listener's protocol). */
const px_proto *px_conn_proto(const px_conn *c);


/* ---- for the event loop (main.c) ---- */

/* What epoll's data.ptr points at: a listener or a connection. */
typedef enum {
    PX_WATCH_LISTENER = 1,
    PX_WATCH_CONN,
    PX_WATCH_OTHER,
    PX_WATCH_HTTP, /* the metrics port and its connections (http.h) */
} px_watch_kind;
typedef struct px_watch {
    px_watch_kind kind;
} px_watch;

/* Every connection of one proxy. */
typedef struct px_conns px_conns;
/* Calls fn for each open connection: a metrics scrape's walk (the held
 * bytes and connections per protocol cost nothing per command this way). */
void px_conns_each(const px_conns *s, void (*fn)(const px_conn *c, void *ud), void *ud);

/* The start of a loop pass (CLOCK_MONOTONIC, read here): every reply
 * begun until the next pass is timed from it, so the metrics cost one
 * clock read per command (its end). The loop calls it after each wait. */
void px_conns_tick(px_conns *s);
/* Told of each tagged reply (px_reply_command()) as it ends: its command,
 * its first min(size, 8) bytes (which tell an error), its size, the pass
 * that began it. metrics.c's px_metrics_observe(); NULL: none. A hook, so
 * that conn.c, below the metrics, never calls up into them. */
typedef void (*px_reply_observer)(px_cmd_metrics *m, const unsigned char *lead, size_t size,
                                  int64_t began_ns);
void px_conns_observe(px_conns *s, px_reply_observer fn);

/* `b` gives the limits and the counters, which every listener's backend
 * shares (px_backend.stats points to one px_counters). */
px_conns *px_conns_new(int epfd, px_backend *b);
/* Takes an accepted, non-blocking socket: a new connection speaking `p` to
 * the cache of `b` (its listener's backend), or, over --max-connections,
 * p->refused written and the socket closed. With `tls` (tls.h; NULL:
 * plaintext) the connection speaks TLS with the context current now: its
 * handshake first, closed unanswered if it fails or is not done within
 * 10 s; a refused one is closed without a word. */
void px_conns_accept(px_conns *s, int fd, const px_proto *p, px_backend *b, px_tls *tls);
/* An epoll event of a connection (its px_watch). */
void px_conns_event(px_conns *s, px_watch *w, uint32_t events);
/* After events and callbacks: writes what replies produced, feeds
 * connections whose replies drained, frees closed ones. */
void px_conns_flush(px_conns *s);
/* How long the loop may wait for events before px_conns_expire() has work:
 * -1 (no limit) unless a closed connection lingers (conn.c conn_finish()),
 * a TLS handshake is under way, or a TLS session holds bytes the socket no
 * longer shows (0). */
int px_conns_timeout_ms(const px_conns *s);
/* Reads the TLS bytes epoll does not report, closes the lingering
 * connections and the TLS handshakes whose time is up; call it each pass,
 * before px_conns_flush(). */
void px_conns_expire(px_conns *s);
/* SIGTERM: nothing more is read anywhere; each connection closes once its
 * pending replies are written. */
void px_conns_drain(px_conns *s);
/* Connections not yet freed (closed ones awaiting callbacks count). */
unsigned px_conns_count(const px_conns *s);
/* Closes every connection now: nothing more is read, fed or written; a
 * connection with replies pending keeps its memory until they end. Call it
 * before freeing the client, whose free ends them: a connection still open
 * then would feed its buffered commands to a freed client. */
void px_conns_close_all(px_conns *s);
/* Closes every connection; those with pending replies are freed when the
 * last reply ends, so free the client (which ends them) before this. */
void px_conns_free(px_conns *s);

#endif
