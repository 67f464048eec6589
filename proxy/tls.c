/* TLS to the proxy's clients: the context and one session's steps
 * (tls.h). */
#include "tls.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct px_tls {
    const char *prog;
    const char *cert, *key, *ca; /* borrowed: read again at each reload */
    SSL_CTX *ctx;                /* what new connections get */
};

/* The earliest error OpenSSL queued (the cause; later ones only say where
 * it surfaced), as text, and the queue emptied. */
static const char *ssl_why(char *buf, size_t n)
{
    unsigned long e = ERR_get_error();
    ERR_clear_error();
    if (e == 0)
        return "unknown error";
    /* A file that cannot be read is a system error, which OpenSSL 3
     * carries as errno and has no text for. */
    const char *r = ERR_SYSTEM_ERROR(e) ? strerror(ERR_GET_REASON(e)) : ERR_reason_error_string(e);
    if (r)
        snprintf(buf, n, "%s", r);
    else
        ERR_error_string_n(e, buf, n);
    return buf;
}

/* An encrypted key would make OpenSSL ask for its pass phrase on the
 * terminal, stopping the event loop at a SIGHUP: refuse it instead, and
 * note that it was asked for (`u`), to say so. */
static int no_pass_phrase(char *buf, int size, int rwflag, void *u)
{
    (void)buf, (void)size, (void)rwflag;
    if (u)
        *(bool *)u = true;
    return -1;
}

/* A context from the files, or NULL after printing "PROG: TLS: FILE: why". */
static SSL_CTX *ctx_new(const px_tls *t, const char *when)
{
    char why[256];
    const char *file = NULL;
    bool encrypted = false, mismatch = false;
    ERR_clear_error();
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx) {
        fprintf(stderr, "%s: TLS%s: %s\n", t->prog, when, ssl_why(why, sizeof(why)));
        return NULL;
    }
    /* TLS 1.2 and 1.3 only. No renegotiation: it is the one way a
     * client can make a read need a write (and a write a read) in the
     * middle of a session. A client that ends its stream without
     * close_notify is a client done sending, as on a plain port (redis-cli
     * and most clients just close); its replies are still written. */
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_IGNORE_UNEXPECTED_EOF |
                                 SSL_OP_NO_COMPRESSION);
    /* A write takes what fits one record and returns (conn.c keeps the
     * rest in its buffer, which may move as it grows); an idle
     * connection gives back OpenSSL's 34 KB of record buffers; a read
     * takes what the socket has, not one record header at a time. */
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                              SSL_MODE_RELEASE_BUFFERS);
    SSL_CTX_set_read_ahead(ctx, 1);
    SSL_CTX_set_default_passwd_cb(ctx, no_pass_phrase);
    SSL_CTX_set_default_passwd_cb_userdata(ctx, &encrypted);
    /* Sessions resumed (TLS 1.2 session ids) must have been made by this
     * proxy's verification settings: OpenSSL refuses to resume a verified
     * session without an id context. */
    static const unsigned char sid_ctx[] = "momento-proxy";
    SSL_CTX_set_session_id_context(ctx, sid_ctx, sizeof(sid_ctx) - 1);

    if (SSL_CTX_use_certificate_chain_file(ctx, t->cert) != 1) {
        file = t->cert;
    } else if (SSL_CTX_use_PrivateKey_file(ctx, t->key, SSL_FILETYPE_PEM) != 1) {
        file = t->key;
    } else if (SSL_CTX_check_private_key(ctx) != 1) {
        /* A key of another type than the certificate's lands in a slot of
         * its own, and OpenSSL then speaks of a missing certificate. */
        file = t->key;
        mismatch = true;
    } else if (t->ca) {
        STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(t->ca);
        if (!names || SSL_CTX_load_verify_locations(ctx, t->ca, NULL) != 1) {
            sk_X509_NAME_pop_free(names, X509_NAME_free);
            file = t->ca;
        } else {
            /* The CAs named to the client in the CertificateRequest. */
            SSL_CTX_set_client_CA_list(ctx, names);
            SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
        }
    }
    if (file) {
        if (encrypted) {
            ERR_clear_error();
            snprintf(why, sizeof(why), "the key is encrypted: give it unencrypted (chmod 600)");
        } else if (mismatch) {
            ERR_clear_error();
            snprintf(why, sizeof(why), "not the key of the certificate in %s", t->cert);
        } else {
            ssl_why(why, sizeof(why));
        }
        fprintf(stderr, "%s: TLS%s: %s: %s\n", t->prog, when, file, why);
        SSL_CTX_free(ctx);
        return NULL;
    }
    /* The flag lives on this stack: a later call of the callback (none
     * is expected) must not reach it. */
    SSL_CTX_set_default_passwd_cb_userdata(ctx, NULL);
    return ctx;
}

px_tls *px_tls_new(const char *prog, const char *cert, const char *key, const char *ca)
{
    px_tls *t = calloc(1, sizeof(*t));
    if (!t) {
        fprintf(stderr, "%s: TLS: out of memory\n", prog);
        return NULL;
    }
    *t = (px_tls){.prog = prog, .cert = cert, .key = key, .ca = ca};
    t->ctx = ctx_new(t, "");
    if (!t->ctx) {
        free(t);
        return NULL;
    }
    return t;
}

/* The serial number of the context's certificate, in hex, so that an
 * operator sees which certificate a reload put in place. */
static void cert_serial(SSL_CTX *ctx, char *buf, size_t n)
{
    snprintf(buf, n, "?");
    X509 *x = SSL_CTX_get0_certificate(ctx);
    BIGNUM *bn = x ? ASN1_INTEGER_to_BN(X509_get0_serialNumber(x), NULL) : NULL;
    char *hex = bn ? BN_bn2hex(bn) : NULL;
    if (hex)
        snprintf(buf, n, "%s", hex);
    OPENSSL_free(hex);
    BN_free(bn);
    ERR_clear_error();
}

int px_tls_reload(px_tls *t)
{
    SSL_CTX *ctx = ctx_new(t, " reload failed, keeping the current certificate");
    if (!ctx)
        return -1;
    /* Sessions made with the old context hold their own reference. */
    SSL_CTX_free(t->ctx);
    t->ctx = ctx;
    char serial[128];
    cert_serial(ctx, serial, sizeof(serial));
    fprintf(stderr, "%s: TLS: reloaded %s (serial %s) and %s%s%s for new connections\n", t->prog,
            t->cert, serial, t->key, t->ca ? ", clients' CA " : "", t->ca ? t->ca : "");
    return 0;
}

void px_tls_free(px_tls *t)
{
    if (!t)
        return;
    SSL_CTX_free(t->ctx);
    free(t);
}

/* ---- one session ---- */

SSL *px_tls_session(px_tls *t, int fd)
{
    SSL *ssl = SSL_new(t->ctx);
    if (!ssl || SSL_set_fd(ssl, fd) != 1) {
        SSL_free(ssl);
        ERR_clear_error();
        return NULL;
    }
    SSL_set_accept_state(ssl);
    return ssl;
}

/* What a call that moved no bytes came to. OpenSSL reads the thread's
 * error queue to tell, so every call clears it first (the library's own
 * threads have their own queues). A failed session is made quiet: no
 * close_notify may follow a fatal error. */
static int step_status(SSL *ssl, int r)
{
    switch (SSL_get_error(ssl, r)) {
    case SSL_ERROR_WANT_READ: return PX_TLS_WANT_READ;
    case SSL_ERROR_WANT_WRITE: return PX_TLS_WANT_WRITE;
    case SSL_ERROR_ZERO_RETURN: return PX_TLS_CLOSED;
    default:
        ERR_clear_error();
        SSL_set_quiet_shutdown(ssl, 1);
        return PX_TLS_FAILED;
    }
}

int px_tls_handshake(SSL *ssl)
{
    ERR_clear_error();
    int r = SSL_do_handshake(ssl);
    return r == 1 ? 1 : step_status(ssl, r);
}

ssize_t px_tls_read(SSL *ssl, void *p, size_t n)
{
    ERR_clear_error();
    int r = SSL_read(ssl, p, n > INT_MAX ? INT_MAX : (int)n);
    return r > 0 ? r : step_status(ssl, r);
}

ssize_t px_tls_write(SSL *ssl, const void *p, size_t n)
{
    ERR_clear_error();
    /* The cap is constant, so a retry never offers fewer bytes than the
     * call it repeats, which OpenSSL refuses. */
    int r = SSL_write(ssl, p, n > INT_MAX ? INT_MAX : (int)n);
    return r > 0 ? r : step_status(ssl, r);
}

bool px_tls_buffered(const SSL *ssl)
{
    return SSL_has_pending(ssl) == 1;
}

void px_tls_close_notify(SSL *ssl)
{
    if (!SSL_is_init_finished(ssl) || SSL_get_quiet_shutdown(ssl) ||
        (SSL_get_shutdown(ssl) & SSL_SENT_SHUTDOWN))
        return;
    ERR_clear_error();
    /* One call writes close_notify, or as much as the socket takes; the
     * client's own close_notify is not waited for. */
    (void)SSL_shutdown(ssl);
    ERR_clear_error();
}

void px_tls_session_free(SSL *ssl)
{
    SSL_free(ssl);
}
