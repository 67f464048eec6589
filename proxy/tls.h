/* TLS to the proxy's clients (--tls-cert, --tls-key, --tls-ca;
 * docs/proxy.md "TLS"): the server's OpenSSL context, read from its files
 * at start and again at SIGHUP, and the non-blocking steps of one
 * connection's session, which conn.c drives from the event loop.
 *
 * A reload builds a new context; connections accepted after it use the
 * new one, connections already open keep theirs (OpenSSL counts each
 * session's reference to its context, so the old one is freed with its
 * last session). Everything here runs on the proxy's one thread. */
#ifndef PX_TLS_H
#define PX_TLS_H

#include <openssl/types.h>

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct px_tls px_tls;

/* Reads the PEM certificate chain `cert`, its private key `key` and, when
 * `ca` is not NULL, the CA whose signature every client certificate must
 * carry (a client without one is refused). The paths are borrowed: they
 * are read again at px_tls_reload(), so they must outlive the px_tls.
 * Returns NULL after printing "PROG: TLS: why" on stderr. */
px_tls *px_tls_new(const char *prog, const char *cert, const char *key, const char *ca);
/* Reads the files again into a new context that connections accepted from
 * now on use. Prints on stderr what it did: the files reloaded, or why
 * not, in which case the current context stays. Returns 0 or -1. */
int px_tls_reload(px_tls *t);
/* NULL-safe. Sessions still open keep their own reference to the context
 * they were made with. */
void px_tls_free(px_tls *t);

/* ---- one connection's session (conn.c) ---- */

/* What a step of a session came to, when it moved no bytes. */
enum {
    PX_TLS_WANT_READ = -1,  /* call again once the socket is readable */
    PX_TLS_WANT_WRITE = -2, /* call again once the socket is writable */
    PX_TLS_CLOSED = -3,     /* the client's close_notify, or the end of its stream */
    PX_TLS_FAILED = -4,     /* a TLS or socket error: the session is unusable */
};

/* A server session on the accepted socket `fd` (not taken: the caller
 * still closes it), with the context current now. NULL: out of memory. */
SSL *px_tls_session(px_tls *t, int fd);
/* The handshake's next step: 1 once it is complete, or a PX_TLS_ status. */
int px_tls_handshake(SSL *ssl);
/* Reads decrypted bytes into p[0, n): returns how many (> 0) or a status. */
ssize_t px_tls_read(SSL *ssl, void *p, size_t n);
/* Writes from p[0, n): returns how many were taken (> 0; one TLS record's
 * worth or less) or a status. After PX_TLS_WANT_*, the next call must
 * offer at least those same n bytes (they may have moved in memory). */
ssize_t px_tls_write(SSL *ssl, const void *p, size_t n);
/* Whether the session holds bytes read from the socket and not yet
 * returned by px_tls_read(): epoll does not report those. */
bool px_tls_buffered(const SSL *ssl);
/* Sends close_notify if the session is sound and has not sent it: best
 * effort, it never waits. */
void px_tls_close_notify(SSL *ssl);
/* NULL-safe. Closes nothing but the session. */
void px_tls_session_free(SSL *ssl);

#endif
