/* Driver for bench/leaderboard.sh: fills one leaderboard of `--size`
 * elements (raw gRPC, UpsertElements of 8192 at a time; the library's
 * leaderboard calls are not needed for it), then runs queries of one kind
 * on it in phases, one call at a time, and checks every answer.
 *
 *   lb_driver --endpoint HOST:PORT --op OP [--size 1000]
 *             --phases N,N,... [--callgrind-pid PID] [--no-fill]
 *
 * --no-fill: the leaderboard is there already (an earlier run filled it);
 * only the queries are sent.
 *
 * With --callgrind-pid (the server under callgrind started with
 * --instr-atstart=no) the driver turns the server's instrumentation on
 * after the fill (`callgrind_control -i on PID`) and has it dump its
 * counters after each phase (`callgrind_control -d PID`), so that each
 * dump holds one phase and the fill is in none.
 *
 * The leaderboard is "lb" in cache "bench". Element i (0 <= i < size) has
 * id i * 2654435761 (mod 2^32: distinct, spread over the ids) and score i,
 * so its ascending rank is i. Every query names or returns 10 elements, at
 * a position that moves across the whole leaderboard from one query to
 * the next:
 *
 *   get_rank               10 ids, ascending ranks
 *   get_by_rank            ranks [p, p + 10), descending
 *   get_by_score           scores [p, p + 10), limit 10, ascending
 *   get_competition_rank   10 ids, descending (the default)
 *
 * Prints one line, `requests=N`; exits 1 if any answer is not the
 * expected one. Loopback only. */
#include "common.pb-c.h"
#include "leaderboard.pb-c.h"

#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/time.h>

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LB "/leaderboard.Leaderboard/"
#define NAME "lb"
#define K 10
#define PAGE 8192

static void die(const char *what)
{
    fprintf(stderr, "lb_driver: %s\n", what);
    exit(1);
}

static grpc_channel *ch;
static grpc_completion_queue *cq;

/* One unary call; returns the status, the reply (malloc'd) in *out. */
static int call(const char *method, const ProtobufCMessage *m, uint8_t **out, size_t *out_len)
{
    char path[96];
    snprintf(path, sizeof(path), LB "%s", method);
    size_t len = protobuf_c_message_get_packed_size(m);
    grpc_slice body = grpc_slice_malloc(len);
    protobuf_c_message_pack(m, GRPC_SLICE_START_PTR(body));
    grpc_byte_buffer *send = grpc_raw_byte_buffer_create(&body, 1);
    grpc_slice_unref(body);
    grpc_slice method_slice = grpc_slice_from_copied_string(path);
    gpr_timespec deadline =
        gpr_time_add(gpr_now(GPR_CLOCK_REALTIME), gpr_time_from_millis(120000, GPR_TIMESPAN));
    grpc_call *c = grpc_channel_create_call(ch, NULL, GRPC_PROPAGATE_DEFAULTS, cq, method_slice,
                                            NULL, deadline, NULL);
    grpc_slice_unref(method_slice);
    grpc_metadata md;
    memset(&md, 0, sizeof(md));
    md.key = grpc_slice_from_static_string("cache");
    md.value = grpc_slice_from_static_string("bench");
    grpc_metadata_array init_md, trail_md;
    grpc_metadata_array_init(&init_md);
    grpc_metadata_array_init(&trail_md);
    grpc_status_code status = GRPC_STATUS_UNKNOWN;
    grpc_slice details = grpc_empty_slice();
    grpc_byte_buffer *recv = NULL;
    grpc_op ops[6];
    memset(ops, 0, sizeof(ops));
    ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
    ops[0].data.send_initial_metadata.count = 1;
    ops[0].data.send_initial_metadata.metadata = &md;
    ops[1].op = GRPC_OP_SEND_MESSAGE;
    ops[1].data.send_message.send_message = send;
    ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
    ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
    ops[3].data.recv_initial_metadata.recv_initial_metadata = &init_md;
    ops[4].op = GRPC_OP_RECV_MESSAGE;
    ops[4].data.recv_message.recv_message = &recv;
    ops[5].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
    ops[5].data.recv_status_on_client.trailing_metadata = &trail_md;
    ops[5].data.recv_status_on_client.status = &status;
    ops[5].data.recv_status_on_client.status_details = &details;
    if (grpc_call_start_batch(c, ops, 6, c, NULL) != GRPC_CALL_OK)
        die("grpc_call_start_batch failed");
    grpc_event ev = grpc_completion_queue_pluck(cq, c, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
    if (ev.type != GRPC_OP_COMPLETE)
        die("the completion queue ended");
    *out = NULL;
    *out_len = 0;
    if (recv) {
        grpc_byte_buffer_reader rd;
        grpc_byte_buffer_reader_init(&rd, recv);
        grpc_slice all = grpc_byte_buffer_reader_readall(&rd);
        grpc_byte_buffer_reader_destroy(&rd);
        *out_len = GRPC_SLICE_LENGTH(all);
        *out = malloc(*out_len + 1);
        if (!*out)
            die("out of memory");
        memcpy(*out, GRPC_SLICE_START_PTR(all), *out_len);
        grpc_slice_unref(all);
        grpc_byte_buffer_destroy(recv);
    }
    grpc_byte_buffer_destroy(send);
    grpc_slice_unref(details);
    grpc_metadata_array_destroy(&init_md);
    grpc_metadata_array_destroy(&trail_md);
    grpc_call_unref(c);
    return status;
}

static uint32_t id_of(uint32_t i)
{
    return i * 2654435761u;
}

static void fill(uint32_t size)
{
    static Leaderboard__Element el[PAGE];
    static Leaderboard__Element *ptr[PAGE];
    for (uint32_t at = 0; at < size; at += PAGE) {
        uint32_t n = size - at < PAGE ? size - at : PAGE;
        for (uint32_t i = 0; i < n; i++) {
            leaderboard____element__init(&el[i]);
            el[i].id = id_of(at + i);
            el[i].score = at + i;
            ptr[i] = &el[i];
        }
        Leaderboard__UpsertElementsRequest req = LEADERBOARD____UPSERT_ELEMENTS_REQUEST__INIT;
        req.leaderboard = NAME;
        req.n_elements = n;
        req.elements = ptr;
        uint8_t *out;
        size_t len;
        if (call("UpsertElements", &req.base, &out, &len) != GRPC_STATUS_OK)
            die("the fill failed");
        free(out);
    }
}

/* Query number q of op on a leaderboard of `size`: sends it and checks the
 * answer. */
static void query(const char *op, uint32_t size, uint64_t q)
{
    /* A position that visits the whole leaderboard, K from the end. */
    uint32_t p = (uint32_t)((q * 2654435761u) % (size - K));
    uint32_t ids[K];
    for (uint32_t j = 0; j < K; j++)
        ids[j] = id_of((p + j * (size / K)) % size);
    uint8_t *out;
    size_t len;
    int st;
    /* Each expected rank, for the K answers in order. */
    uint32_t want[K];
    if (!strcmp(op, "get_rank")) {
        Leaderboard__GetRankRequest req = LEADERBOARD____GET_RANK_REQUEST__INIT;
        req.leaderboard = NAME;
        req.n_ids = K;
        req.ids = ids;
        st = call("GetRank", &req.base, &out, &len);
        for (uint32_t j = 0; j < K; j++)
            want[j] = (p + j * (size / K)) % size;
    } else if (!strcmp(op, "get_competition_rank")) {
        Leaderboard__GetCompetitionRankRequest req =
            LEADERBOARD____GET_COMPETITION_RANK_REQUEST__INIT;
        req.leaderboard = NAME;
        req.n_ids = K;
        req.ids = ids;
        st = call("GetCompetitionRank", &req.base, &out, &len);
        for (uint32_t j = 0; j < K; j++)
            want[j] = size - 1 - (p + j * (size / K)) % size;
    } else if (!strcmp(op, "get_by_rank")) {
        Leaderboard__RankRange rr = LEADERBOARD____RANK_RANGE__INIT;
        rr.start_inclusive = p;
        rr.end_exclusive = p + K;
        Leaderboard__GetByRankRequest req = LEADERBOARD____GET_BY_RANK_REQUEST__INIT;
        req.leaderboard = NAME;
        req.rank_range = &rr;
        req.order = LEADERBOARD____ORDER__DESCENDING;
        st = call("GetByRank", &req.base, &out, &len);
        for (uint32_t j = 0; j < K; j++)
            want[j] = p + j;
    } else if (!strcmp(op, "get_by_score")) {
        Leaderboard__ScoreRange sr = LEADERBOARD____SCORE_RANGE__INIT;
        sr.min_case = LEADERBOARD____SCORE_RANGE__MIN_MIN_INCLUSIVE;
        sr.min_inclusive = p;
        sr.max_case = LEADERBOARD____SCORE_RANGE__MAX_MAX_EXCLUSIVE;
        sr.max_exclusive = p + K;
        Leaderboard__GetByScoreRequest req = LEADERBOARD____GET_BY_SCORE_REQUEST__INIT;
        req.leaderboard = NAME;
        req.score_range = &sr;
        req.limit_elements = K;
        st = call("GetByScore", &req.base, &out, &len);
        for (uint32_t j = 0; j < K; j++)
            want[j] = p + j;
    } else {
        die("unknown --op");
    }
    if (st != GRPC_STATUS_OK)
        die("a query failed");
    /* Every ranked response is field 1, repeated _RankedElement. */
    Leaderboard__GetRankResponse *resp = leaderboard____get_rank_response__unpack(NULL, len, out);
    if (!resp || resp->n_elements != K)
        die("an answer without its 10 elements");
    for (uint32_t j = 0; j < K; j++)
        if (resp->elements[j]->rank != want[j])
            die("an answer with a wrong rank");
    leaderboard____get_rank_response__free_unpacked(resp, NULL);
    free(out);
}

static void callgrind(const char *what, long pid)
{
    char cmd[96];
    snprintf(cmd, sizeof(cmd), "callgrind_control %s %ld >/dev/null", what, pid);
    if (system(cmd) != 0)
        die("callgrind_control failed");
}

int main(int argc, char **argv)
{
    const char *endpoint = NULL, *op = NULL, *phases = NULL;
    uint32_t size = 1000;
    long cg_pid = 0;
    bool no_fill = false;
    static const struct option longopts[] = {
        {"endpoint", required_argument, NULL, 'e'}, {"op", required_argument, NULL, 'o'},
        {"size", required_argument, NULL, 's'},     {"phases", required_argument, NULL, 'p'},
        {"callgrind-pid", required_argument, NULL, 'c'}, {"no-fill", no_argument, NULL, 'n'},
        {NULL, 0, NULL, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (c) {
        case 'e': endpoint = optarg; break;
        case 'o': op = optarg; break;
        case 's': size = (uint32_t)strtoul(optarg, NULL, 10); break;
        case 'p': phases = optarg; break;
        case 'c': cg_pid = strtol(optarg, NULL, 10); break;
        case 'n': no_fill = true; break;
        default: return 2;
        }
    }
    if (!endpoint || !op || !phases || size < 100)
        die("usage: lb_driver --endpoint HOST:PORT --op OP [--size N >= 100] --phases N,N,... "
            "[--callgrind-pid PID]");
    if (strncmp(endpoint, "127.0.0.1:", 10) && strncmp(endpoint, "localhost:", 10) &&
        strncmp(endpoint, "[::1]:", 6))
        die("loopback endpoints only");
    grpc_init();
    grpc_channel_credentials *creds = grpc_insecure_credentials_create();
    ch = grpc_channel_create(endpoint, creds, NULL);
    grpc_channel_credentials_release(creds);
    cq = grpc_completion_queue_create_for_pluck(NULL);
    if (!no_fill)
        fill(size);
    if (cg_pid)
        callgrind("-i on", cg_pid);
    uint64_t q = 0;
    for (const char *s = phases; *s;) {
        char *end;
        unsigned long n = strtoul(s, &end, 10);
        if (end == s)
            die("bad --phases");
        for (unsigned long i = 0; i < n; i++)
            query(op, size, q++);
        if (cg_pid)
            callgrind("-d", cg_pid);
        s = *end == ',' ? end + 1 : end;
    }
    printf("requests=%llu\n", (unsigned long long)q);
    grpc_channel_destroy(ch);
    grpc_completion_queue_shutdown(cq);
    while (grpc_completion_queue_pluck(cq, NULL, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type !=
           GRPC_QUEUE_SHUTDOWN)
        ;
    grpc_completion_queue_destroy(cq);
    grpc_shutdown();
    return 0;
}
