/* A TLS 1.3 client for tests/proxy/tls.py (Python's ssl module cannot
 * send a KeyUpdate): SETs a value of VALUE bytes, pipelines N GETs of it
 * without reading, and once the proxy has stopped being able to write (its
 * socket full: this client reads nothing) sends K KeyUpdates that ask the
 * proxy to update its keys too, each followed by a PING. Then it reads
 * every reply: N values and K PONGs. The proxy's answer to a KeyUpdate is
 * a write it makes while reading; with a reply record still half written,
 * OpenSSL failed that write and the session (issue 48's review).
 *
 * When the proxy is blocked: the client polls its own receive queue
 * (SIOCINQ) until it stops growing (the proxy wrote all the socket
 * takes); after the KeyUpdates, until its send queue is empty.
 *
 * Usage: tls_keyupdate PORT N K VALUE
 * Prints "all BYTES bytes" and exits 0, or says what failed and exits 1. */
#include <arpa/inet.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static int fail(const char *what)
{
    printf("failed: %s\n", what);
    ERR_print_errors_fp(stdout);
    return 1;
}

/* Bytes waiting in the socket's receive queue. */
static int queued(int fd)
{
    int n = 0;
    return ioctl(fd, SIOCINQ, &n) == 0 ? n : -1;
}

static void nap_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

static int write_all(SSL *s, const void *p, size_t n)
{
    return SSL_write(s, p, (int)n) == (int)n ? 0 : -1;
}

int main(int argc, char **argv)
{
    if (argc != 5)
        return fail("usage: tls_keyupdate PORT N K VALUE");
    int port = atoi(argv[1]), n = atoi(argv[2]), k = atoi(argv[3]), vsz = atoi(argv[4]);
    if (port <= 0 || n <= 0 || k < 0 || vsz <= 0)
        return fail("bad arguments");
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (!ctx || !SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION))
        return fail("context");
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0)
        return fail("connect");
    struct timeval tv = {30, 0}; /* a watchdog: only a hang reaches it */
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    SSL *s = SSL_new(ctx);
    SSL_set_fd(s, fd);
    if (SSL_connect(s) != 1)
        return fail("handshake");

    char *v = malloc((size_t)vsz);
    char hdr[64], buf[1 << 16];
    if (!v)
        return fail("memory");
    memset(v, 'x', (size_t)vsz);
    int hl = snprintf(hdr, sizeof(hdr), "*3\r\n$3\r\nSET\r\n$2\r\nku\r\n$%d\r\n", vsz);
    if (write_all(s, hdr, (size_t)hl) || write_all(s, v, (size_t)vsz) || write_all(s, "\r\n", 2))
        return fail("SET");
    int r = SSL_read(s, buf, sizeof(buf));
    if (r != 5 || memcmp(buf, "+OK\r\n", 5) != 0)
        return fail("SET's answer");

    static const char get[] = "*2\r\n$3\r\nGET\r\n$2\r\nku\r\n";
    size_t gl = sizeof(get) - 1;
    char *cmds = malloc(gl * (size_t)n);
    if (!cmds)
        return fail("memory");
    for (int i = 0; i < n; i++)
        memcpy(cmds + (size_t)i * gl, get, gl);
    if (write_all(s, cmds, gl * (size_t)n))
        return fail("the GETs");
    /* Until the receive queue stops growing: the proxy cannot write more. */
    int last = -1, same = 0;
    for (int i = 0; i < 3000 && same < 20; i++) {
        nap_ms(5);
        int q = queued(fd);
        same = q == last && q > 0 ? same + 1 : 0;
        last = q;
    }
    for (int i = 0; i < k; i++) {
        if (SSL_key_update(s, SSL_KEY_UPDATE_REQUESTED) != 1)
            return fail("SSL_key_update");
        if (write_all(s, "*1\r\n$4\r\nPING\r\n", 14))
            return fail("PING");
    }
    /* Until the proxy's side has taken them (our send queue empty), and a
     * moment for its loop to read them while its write is still blocked:
     * this client reads nothing yet. A setup step, not a check: were the
     * moment too short, the case would not arise and the run pass. */
    for (int i = 0; i < 400; i++) {
        int unsent = 0;
        if (ioctl(fd, SIOCOUTQ, &unsent) != 0 || unsent == 0)
            break;
        nap_ms(5);
    }
    nap_ms(500);
    int vl = snprintf(hdr, sizeof(hdr), "$%d\r\n", vsz);
    size_t want = (size_t)n * ((size_t)vl + (size_t)vsz + 2) + 7 * (size_t)k, got = 0;
    while (got < want) {
        r = SSL_read(s, buf, sizeof(buf));
        if (r <= 0) {
            printf("failed: read stopped (SSL error %d) after %zu of %zu bytes\n",
                   SSL_get_error(s, r), got, want);
            ERR_print_errors_fp(stdout);
            return 1;
        }
        got += (size_t)r;
    }
    printf("all %zu bytes\n", got);
    SSL_shutdown(s);
    SSL_free(s);
    SSL_CTX_free(ctx);
    close(fd);
    free(v);
    free(cmds);
    return 0;
}
