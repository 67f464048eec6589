/* The reference point for the client benchmarks: gRPC C core used directly,
 * no libmomento. One thread drives its own completion queue with N requests
 * in flight; each slot alternates a Set and a Get of its own key (or does
 * only one of them), with the same request bytes and headers the library
 * sends. It measures what the library can at best approach.
 *
 *   raw_client --endpoint HOST:PORT [--inflight 100] [--seconds 10]
 *              [--ops N] [--op both|get|set] [--payload 100]
 *
 * Prints one line of key=value results. Loopback endpoints only. */
#include "histogram.h"

#include <grpc/byte_buffer.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/time.h>

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

typedef struct slot {
    grpc_call *call;
    int is_set;
    uint64_t n;
    int64_t start_ns;
    grpc_byte_buffer *send, *recv;
    grpc_metadata_array init_md, trail_md;
    grpc_status_code status;
    grpc_slice details;
    grpc_slice key;
} slot;

static grpc_channel *channel;
static grpc_completion_queue *cq;
static void *reg_get, *reg_set;
static grpc_metadata md[2];
static int payload_bytes = 100;

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Hand-encoded _SetRequest{1: key, 2: value, 3: ttl} / _GetRequest{1: key}. */
static grpc_byte_buffer *encode(const slot *s)
{
    size_t klen = GRPC_SLICE_LENGTH(s->key);
    uint8_t buf[256];
    size_t n = 0;
    buf[n++] = 0x0a;
    buf[n++] = (uint8_t)klen;
    memcpy(buf + n, GRPC_SLICE_START_PTR(s->key), klen);
    n += klen;
    if (s->is_set) {
        buf[n++] = 0x12;
        buf[n++] = (uint8_t)payload_bytes;
        memset(buf + n, 'x', (size_t)payload_bytes);
        n += (size_t)payload_bytes;
        buf[n++] = 0x18; /* ttl 60000 ms, varint */
        buf[n++] = 0xe0;
        buf[n++] = 0xd4;
        buf[n++] = 0x03;
    }
    grpc_slice sl = grpc_slice_from_copied_buffer((const char *)buf, n);
    grpc_byte_buffer *bb = grpc_raw_byte_buffer_create(&sl, 1);
    grpc_slice_unref(sl);
    return bb;
}

static void start(slot *s)
{
    char key[48];
    int klen = snprintf(key, sizeof(key), "raw-%p-%llu", (void *)s, (unsigned long long)s->n);
    if (s->is_set || GRPC_SLICE_LENGTH(s->key) == 0) {
        grpc_slice_unref(s->key);
        s->key = grpc_slice_from_copied_buffer(key, (size_t)klen);
    }
    gpr_timespec deadline = gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC), gpr_time_from_millis(15000, GPR_TIMESPAN));
    s->call = grpc_channel_create_registered_call(channel, NULL, GRPC_PROPAGATE_DEFAULTS, cq,
                                                  s->is_set ? reg_set : reg_get, deadline, NULL);
    s->send = encode(s);
    s->recv = NULL;
    grpc_metadata_array_init(&s->init_md);
    grpc_metadata_array_init(&s->trail_md);
    grpc_op ops[6];
    memset(ops, 0, sizeof(ops));
    ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
    ops[0].data.send_initial_metadata.count = 2;
    ops[0].data.send_initial_metadata.metadata = md;
    ops[1].op = GRPC_OP_SEND_MESSAGE;
    ops[1].data.send_message.send_message = s->send;
    ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
    ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
    ops[3].data.recv_initial_metadata.recv_initial_metadata = &s->init_md;
    ops[4].op = GRPC_OP_RECV_MESSAGE;
    ops[4].data.recv_message.recv_message = &s->recv;
    ops[5].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
    ops[5].data.recv_status_on_client.trailing_metadata = &s->trail_md;
    ops[5].data.recv_status_on_client.status = &s->status;
    ops[5].data.recv_status_on_client.status_details = &s->details;
    s->start_ns = now_ns();
    grpc_call_start_batch(s->call, ops, 6, s, NULL);
}

static void finish(slot *s)
{
    grpc_byte_buffer_destroy(s->send);
    if (s->recv)
        grpc_byte_buffer_destroy(s->recv);
    grpc_metadata_array_destroy(&s->init_md);
    grpc_metadata_array_destroy(&s->trail_md);
    grpc_slice_unref(s->details);
    grpc_call_unref(s->call);
}

int main(int argc, char **argv)
{
    const char *endpoint = NULL, *op = "both";
    int inflight = 100;
    double seconds = 10;
    unsigned long long max_ops = 0;
    static const struct option opts[] = {
        {"endpoint", required_argument, NULL, 'e'}, {"inflight", required_argument, NULL, 'i'},
        {"seconds", required_argument, NULL, 's'},  {"ops", required_argument, NULL, 'o'},
        {"op", required_argument, NULL, 'p'},       {"payload", required_argument, NULL, 'b'},
        {NULL, 0, NULL, 0},
    };
    int ch;
    while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (ch) {
        case 'e': endpoint = optarg; break;
        case 'i': inflight = atoi(optarg); break;
        case 's': seconds = atof(optarg); break;
        case 'o': max_ops = strtoull(optarg, NULL, 10); break;
        case 'p': op = optarg; break;
        case 'b': payload_bytes = atoi(optarg); break;
        default: return 2;
        }
    }
    if (!endpoint || inflight < 1 || seconds <= 0 || seconds > 600 || payload_bytes < 0 || payload_bytes > 120 ||
        (strcmp(op, "both") && strcmp(op, "get") && strcmp(op, "set")) ||
        (strncmp(endpoint, "127.", 4) && strncmp(endpoint, "[::1]:", 6))) {
        fprintf(stderr, "usage: raw_client --endpoint 127.x.x.x:PORT [--inflight N] [--seconds S<=600] "
                        "[--ops N] [--op both|get|set] [--payload B<=120]\n");
        return 2;
    }
    grpc_init();
    grpc_arg arg = {GRPC_ARG_INTEGER, (char *)GRPC_ARG_ENABLE_RETRIES, {.integer = 0}};
    grpc_channel_args args = {1, &arg};
    grpc_channel_credentials *creds = grpc_insecure_credentials_create();
    channel = grpc_channel_create(endpoint, creds, &args);
    grpc_channel_credentials_release(creds);
    cq = grpc_completion_queue_create_for_next(NULL);
    reg_get = grpc_channel_register_call(channel, "/cache_client.Scs/Get", NULL, NULL);
    reg_set = grpc_channel_register_call(channel, "/cache_client.Scs/Set", NULL, NULL);
    md[0].key = grpc_slice_from_static_string("authorization");
    md[0].value = grpc_slice_from_static_string("");
    md[1].key = grpc_slice_from_static_string("cache");
    md[1].value = grpc_slice_from_static_string("bench");

    static histogram hset, hget;
    hist_init(&hset);
    hist_init(&hget);
    slot *slots = calloc((size_t)inflight, sizeof(*slots));
    int64_t t0 = now_ns(), end = t0 + (int64_t)(seconds * 1e9);
    for (int i = 0; i < inflight; i++) {
        slots[i].is_set = strcmp(op, "get") != 0;
        start(&slots[i]);
    }
    unsigned long long ops = 0, errors = 0;
    int active = inflight;
    while (active > 0) {
        grpc_event ev = grpc_completion_queue_next(cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL);
        if (ev.type != GRPC_OP_COMPLETE)
            break;
        slot *s = ev.tag;
        int64_t t = now_ns();
        if (s->status == GRPC_STATUS_OK)
            hist_record(s->is_set ? &hset : &hget, (uint64_t)(t - s->start_ns) / 1000);
        else
            errors++;
        finish(s);
        ops++;
        if (t >= end || (max_ops && ops + (unsigned long long)active > max_ops)) {
            active--;
            continue;
        }
        if (strcmp(op, "both") == 0) {
            if (!s->is_set)
                s->n++;
            s->is_set = !s->is_set;
        } else {
            s->n++;
        }
        start(s);
    }
    double wall = (double)(now_ns() - t0) / 1e9;
    histogram all = hset;
    hist_merge(&all, &hget);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("client=raw inflight=%d op=%s ops=%llu errors=%llu wall_s=%.2f ops_per_s=%.0f p50_us=%llu "
           "p99_us=%llu p999_us=%llu max_rss_kb=%ld cpu_us_per_op=%.1f\n",
           inflight, op, ops, errors, wall, (double)ops / wall, (unsigned long long)hist_quantile(&all, 0.5),
           (unsigned long long)hist_quantile(&all, 0.99), (unsigned long long)hist_quantile(&all, 0.999),
           ru.ru_maxrss,
           ops ? ((double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
                  ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) / 1e6) * 1e6 / (double)ops
               : 0.0);
    for (int i = 0; i < inflight; i++)
        grpc_slice_unref(slots[i].key);
    free(slots);
    grpc_channel_destroy(channel);
    grpc_completion_queue_shutdown(cq);
    while (grpc_completion_queue_next(cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL).type != GRPC_QUEUE_SHUTDOWN)
        ;
    grpc_completion_queue_destroy(cq);
    grpc_shutdown();
    return 0;
}
