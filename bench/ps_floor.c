/* The floor of protosocket on this machine (bench/transport.sh): a minimal
 * client and server exchanging the frames libmomento and momento-local
 * exchange - the same codec (common/ps_wire), the same Set-then-Get
 * pattern with 100-byte values - and nothing else: no store, no ids to
 * look up, no threads but one per side, blocking sockets, one write per
 * round of replies. What a real client and server add is measured above it.
 *
 *   ps_floor --inflight N --seconds S [--payload 100]
 *
 * Forks: the child is the server (on a free 127.0.0.1 port), the parent the
 * client; each may be pinned with taskset by the caller (the child
 * inherits the mask, so pin the whole command and let the kernel place the
 * two, or not at all). Prints one RESULT line: ops/s, the client's and the
 * server's CPU per operation (getrusage of each process), and with
 * --inflight 1 the median and p99 round trip. Loopback only; bounded by
 * --seconds. */
#include "ps_wire.h"

#include <arpa/inet.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static double rusage_s(int who)
{
    struct rusage ru;
    getrusage(who, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec / 1e6;
}

static int send_all(int fd, const uint8_t *p, size_t n)
{
    while (n) {
        ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
        if (k <= 0)
            return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

/* Answers every whole command in each read with one write: set -> set OK,
 * get -> a hit with `payload` bytes, auth -> auth OK. */
static void serve(int lfd, size_t payload)
{
    int fd = accept(lfd, NULL, NULL);
    if (fd < 0)
        _exit(1);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    uint8_t *value = calloc(1, payload + 1);
    size_t cap = 1 << 20, len = 0, ocap = 1 << 20;
    uint8_t *buf = malloc(cap), *out = malloc(ocap);
    for (;;) {
        ssize_t k = recv(fd, buf + len, cap - len, 0);
        if (k <= 0)
            break;
        len += (size_t)k;
        size_t off = 0, olen = 0, bo, bl;
        while (ps_frame_next(buf + off, len - off, PS_MAX_FRAME, &bo, &bl) == 1) {
            ps_command c;
            if (ps_command_decode(buf + off + bo, bl, &c) != 0)
                _exit(1);
            off += bo + bl;
            ps_response r = {.id = c.id, .kind = c.kind};
            if (c.kind == PS_GET)
                r.value = (ps_bytes){value, payload};
            size_t need = ps_response_frame_size(&r);
            if (olen + need > ocap)
                out = realloc(out, ocap = (olen + need) * 2);
            olen += ps_response_encode(&r, out + olen);
        }
        memmove(buf, buf + off, len - off);
        len -= off;
        if (olen && send_all(fd, out, olen) != 0)
            break;
    }
    _exit(0);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* The client's pending writes. */
typedef struct outbuf {
    uint8_t *p;
    size_t len, cap;
} outbuf;

/* Slot `slot`'s command number `n`: even a set of its key n/2, odd a get
 * of it; the slot is the message id (+1: id 0 is proto3's default). */
static void queue_step(outbuf *ob, int slot, uint64_t n, const uint8_t *value, size_t payload)
{
    char key[32];
    int kl = snprintf(key, sizeof(key), "k%d-%llu", slot, (unsigned long long)(n / 2));
    ps_command c = {.id = (uint64_t)slot + 1,
                    .kind = (n & 1) ? PS_GET : PS_SET,
                    .ns = {(const uint8_t *)"load-gen", 8},
                    .key = {(const uint8_t *)key, (size_t)kl}};
    if (c.kind == PS_SET) {
        c.value = (ps_bytes){value, payload};
        c.ttl_ms = 60000;
    }
    size_t need = ps_command_frame_size(&c);
    if (ob->len + need > ob->cap)
        ob->p = realloc(ob->p, ob->cap = (ob->len + need) * 2);
    ob->len += ps_command_encode(&c, ob->p + ob->len);
}

int main(int argc, char **argv)
{
    int inflight = 1;
    const char *connect_to = NULL; /* 127.0.0.1:PORT: a real server, not ours */
    double seconds = 3;
    size_t payload = 100;
    static const struct option opts[] = {{"inflight", required_argument, NULL, 'n'},
                                         {"seconds", required_argument, NULL, 's'},
                                         {"payload", required_argument, NULL, 'p'},
                                         {"connect", required_argument, NULL, 'c'},
                                         {NULL, 0, NULL, 0}};
    for (int ch; (ch = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
        if (ch == 'n')
            inflight = atoi(optarg);
        else if (ch == 's')
            seconds = atof(optarg);
        else if (ch == 'p')
            payload = (size_t)atol(optarg);
        else if (ch == 'c')
            connect_to = optarg;
        else
            return 2;
    }
    if (inflight < 1 || inflight > 100000 || !(seconds > 0 && seconds <= 600) || payload > 1 << 20) {
        fprintf(stderr, "usage: ps_floor --inflight 1..100000 --seconds S (<= 600) [--payload N]\n");
        return 2;
    }

    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    pid_t child = -1;
    if (connect_to) {
        const char *colon = strrchr(connect_to, ':');
        if (!colon || strncmp(connect_to, "127.0.0.1:", 10) != 0) {
            fprintf(stderr, "ps_floor: --connect takes 127.0.0.1:PORT\n");
            return 2;
        }
        a.sin_port = htons((uint16_t)atoi(colon + 1));
    } else {
        int lfd = socket(AF_INET, SOCK_STREAM, 0);
        socklen_t alen = sizeof(a);
        if (bind(lfd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(lfd, 1) != 0 ||
            getsockname(lfd, (struct sockaddr *)&a, &alen) != 0)
            return 1;
        child = fork();
        if (child == 0)
            serve(lfd, payload);
        close(lfd);
    }

    int fd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0)
        return 1;

    if (connect_to) { /* a real server wants Authenticate first */
        uint8_t f[64], r[256];
        ps_command auth = {.id = PS_AUTH_ID, .kind = PS_AUTH, .token = {(const uint8_t *)"", 0}};
        size_t bo, bl, got = 0;
        if (send_all(fd, f, ps_command_encode(&auth, f)) != 0)
            return 1;
        while (ps_frame_next(r, got, sizeof(r), &bo, &bl) != 1) {
            ssize_t k = recv(fd, r + got, sizeof(r) - got, 0);
            if (k <= 0)
                return 1;
            got += (size_t)k;
        }
    }
    uint8_t *value = calloc(1, payload + 1);
    size_t cap = 1 << 20, len = 0;
    uint8_t *buf = malloc(cap);
    outbuf ob = {malloc(1 << 20), 0, 1 << 20};
    int64_t *sent_at = calloc((size_t)inflight, sizeof(int64_t));
    uint64_t *step = calloc((size_t)inflight, sizeof(uint64_t));
    size_t nlat = 0, latcap = 1 << 16;
    int64_t *lat = malloc(latcap * sizeof(int64_t));
    uint64_t done = 0;

    for (int s = 0; s < inflight; s++) {
        queue_step(&ob, s, 0, value, payload);
        sent_at[s] = now_ns();
    }
    double cpu0 = rusage_s(RUSAGE_SELF);
    int64_t t0 = now_ns(), end = t0 + (int64_t)(seconds * 1e9);
    if (send_all(fd, ob.p, ob.len) != 0)
        return 1;
    while (now_ns() < end) {
        ssize_t k = recv(fd, buf + len, cap - len, 0);
        if (k <= 0)
            return 1;
        len += (size_t)k;
        size_t off = 0, bo, bl;
        ob.len = 0;
        while (ps_frame_next(buf + off, len - off, PS_MAX_FRAME, &bo, &bl) == 1) {
            ps_response r;
            if (ps_response_decode(buf + off + bo, bl, &r) != 0)
                return 1;
            off += bo + bl;
            uint64_t slot = r.id - 1;
            if (r.id == 0 || slot >= (uint64_t)inflight)
                return 1;
            done++;
            int64_t t = now_ns();
            if (inflight == 1 && nlat < latcap)
                lat[nlat++] = t - sent_at[0];
            queue_step(&ob, (int)slot, ++step[slot], value, payload);
            sent_at[slot] = t;
        }
        memmove(buf, buf + off, len - off);
        len -= off;
        if (ob.len && send_all(fd, ob.p, ob.len) != 0)
            return 1;
    }
    double wall = (double)(now_ns() - t0) / 1e9;
    double cpu = rusage_s(RUSAGE_SELF) - cpu0;
    shutdown(fd, SHUT_RDWR);
    close(fd);
    int st;
    if (child > 0)
        waitpid(child, &st, 0);
    double scpu = child > 0 ? rusage_s(RUSAGE_CHILDREN) : 0;
    printf("RESULT ps_floor in_flight=%d ops=%llu ops_per_s=%.0f client_cpu_us_per_op=%.3f "
           "server_cpu_us_per_op=%.3f",
           inflight, (unsigned long long)done, (double)done / wall, cpu * 1e6 / (double)done,
           scpu * 1e6 / (double)done);
    if (nlat) {
        qsort(lat, nlat, sizeof(lat[0]), cmp_i64);
        printf(" p50_us=%.1f p99_us=%.1f", (double)lat[nlat / 2] / 1e3,
               (double)lat[nlat * 99 / 100] / 1e3);
    }
    printf("\n");
    return 0;
}
