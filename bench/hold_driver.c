/* How long one request holds momento-local's server thread, seen by another
 * client (issue 27 item 9). A victim thread sends a Get every 5 ms on its
 * own channel, 1 s deadline; the main thread prepares a scenario (not
 * measured), then sends its one heavy request and times it. For the Gets
 * sent while the heavy request was in progress the driver reports how
 * many there were, how many timed out and the slowest: a server thread
 * held for T delays a Get by up to T.
 *
 *   hold_driver --endpoint HOST:PORT [--server-pid PID] [--scenario NAME]...
 *
 * One line per scenario: `scenario=NAME status=S heavy_ms=T server_cpu_ms=C
 * victim_gets=N victim_timeouts=K victim_max_ms=M`. With --server-pid, C
 * is the CPU time the server's threads used while the heavy request was
 * in progress (each /proc/PID/task/TID/schedstat): what it held the
 * server thread for, near enough, whatever else the machine runs, where
 * the victim's times stretch with the machine's load. Scenarios (names in
 * `scenarios[]`): the issue's SortedSetUnionStore and the other requests whose work was
 * not bounded by their own size (ListErase over many ranges, GetBatch and
 * DictionaryGet naming one big value many times), and the largest
 * requests now allowed of each shape (a union of sources at the limit,
 * fetch / delete / scan of a collection at the item limit, a write at the
 * request limit, GetWithHash of the largest item). Raw gRPC (the library
 * does not send SortedSetUnionStore or ListErase); loopback only; every
 * heavy request has a 60 s deadline, every fill a fixed size. */
#include "cacheclient.pb-c.h"

#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/time.h>

#include <dirent.h>
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SCS "/cache_client.Scs/"
#define CACHE "bench"
#define VICTIM_EVERY_MS 5
#define VICTIM_MAX 100000 /* Gets recorded: over 8 minutes at one per 5 ms */

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void die(const char *what)
{
    fprintf(stderr, "hold_driver: %s\n", what);
    exit(1);
}

/* ---- One raw call ---- */

typedef struct conn {
    grpc_channel *ch;
    grpc_completion_queue *cq;
} conn;

static conn conn_open(const char *endpoint)
{
    /* Replies of any size: the scenarios' "before" answers are hundreds of
     * MB. */
    grpc_arg args[] = {
        {GRPC_ARG_INTEGER, (char *)GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH, {.integer = -1}},
        {GRPC_ARG_INTEGER, (char *)GRPC_ARG_MAX_SEND_MESSAGE_LENGTH, {.integer = -1}},
        {GRPC_ARG_INTEGER, (char *)GRPC_ARG_ENABLE_RETRIES, {.integer = 0}},
    };
    grpc_channel_args ca = {sizeof(args) / sizeof(args[0]), args};
    grpc_channel_credentials *creds = grpc_insecure_credentials_create();
    conn c = {grpc_channel_create(endpoint, creds, &ca), grpc_completion_queue_create_for_pluck(NULL)};
    grpc_channel_credentials_release(creds);
    return c;
}

static void conn_close(conn *c)
{
    grpc_channel_destroy(c->ch);
    grpc_completion_queue_shutdown(c->cq);
    while (grpc_completion_queue_pluck(c->cq, NULL, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type !=
           GRPC_QUEUE_SHUTDOWN)
        ;
    grpc_completion_queue_destroy(c->cq);
}

static void run_batch(conn *c, grpc_call *call, const grpc_op *ops, size_t n, void *tag)
{
    if (grpc_call_start_batch(call, ops, n, tag, NULL) != GRPC_CALL_OK)
        die("grpc_call_start_batch failed");
    grpc_event ev = grpc_completion_queue_pluck(c->cq, tag, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
    if (ev.type != GRPC_OP_COMPLETE)
        die("the completion queue ended");
}

/* Calls `method` with `m` (unary or server-streaming: every message read
 * and dropped); returns the status, the reply's bytes in *reply_bytes. */
static int call(conn *c, const char *method, const ProtobufCMessage *m, int deadline_ms,
                size_t *reply_bytes)
{
    char path[96];
    snprintf(path, sizeof(path), SCS "%s", method);
    size_t len = protobuf_c_message_get_packed_size(m);
    grpc_slice body = grpc_slice_malloc(len);
    protobuf_c_message_pack(m, GRPC_SLICE_START_PTR(body));
    grpc_byte_buffer *send = grpc_raw_byte_buffer_create(&body, 1);
    grpc_slice_unref(body);
    grpc_slice method_slice = grpc_slice_from_copied_string(path);
    gpr_timespec deadline = gpr_time_add(gpr_now(GPR_CLOCK_REALTIME),
                                         gpr_time_from_millis(deadline_ms, GPR_TIMESPAN));
    grpc_call *call = grpc_channel_create_call(c->ch, NULL, GRPC_PROPAGATE_DEFAULTS, c->cq,
                                               method_slice, NULL, deadline, NULL);
    grpc_slice_unref(method_slice);
    grpc_metadata md;
    memset(&md, 0, sizeof(md));
    md.key = grpc_slice_from_static_string("cache");
    md.value = grpc_slice_from_static_string(CACHE);
    grpc_metadata_array init_md, trail_md;
    grpc_metadata_array_init(&init_md);
    grpc_metadata_array_init(&trail_md);
    grpc_status_code status = GRPC_STATUS_UNKNOWN;
    grpc_slice details = grpc_empty_slice();
    grpc_op ops[4];
    memset(ops, 0, sizeof(ops));
    ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
    ops[0].data.send_initial_metadata.count = 1;
    ops[0].data.send_initial_metadata.metadata = &md;
    ops[1].op = GRPC_OP_SEND_MESSAGE;
    ops[1].data.send_message.send_message = send;
    ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
    ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
    ops[3].data.recv_initial_metadata.recv_initial_metadata = &init_md;
    run_batch(c, call, ops, 4, (void *)1);
    grpc_byte_buffer_destroy(send);
    *reply_bytes = 0;
    for (;;) {
        grpc_byte_buffer *recv = NULL;
        grpc_op op;
        memset(&op, 0, sizeof(op));
        op.op = GRPC_OP_RECV_MESSAGE;
        op.data.recv_message.recv_message = &recv;
        run_batch(c, call, &op, 1, (void *)2);
        if (!recv)
            break;
        *reply_bytes += grpc_byte_buffer_length(recv);
        grpc_byte_buffer_destroy(recv);
    }
    grpc_op st;
    memset(&st, 0, sizeof(st));
    st.op = GRPC_OP_RECV_STATUS_ON_CLIENT;
    st.data.recv_status_on_client.trailing_metadata = &trail_md;
    st.data.recv_status_on_client.status = &status;
    st.data.recv_status_on_client.status_details = &details;
    run_batch(c, call, &st, 1, (void *)3);
    grpc_slice_unref(details);
    grpc_metadata_array_destroy(&init_md);
    grpc_metadata_array_destroy(&trail_md);
    grpc_call_unref(call);
    return (int)status;
}

/* A fill that must succeed. */
static void must(conn *c, const char *method, const ProtobufCMessage *m)
{
    size_t bytes;
    int st = call(c, method, m, 120000, &bytes);
    if (st != 0) {
        fprintf(stderr, "hold_driver: %s during a fill: status %d\n", method, st);
        exit(1);
    }
}

/* ---- The victim ---- */

typedef struct victim_get {
    int64_t start, end;
    int status;
} victim_get;

static victim_get gets[VICTIM_MAX];
static atomic_size_t n_gets;
static atomic_bool stopping;
static const char *endpoint;

static void *victim(void *arg)
{
    (void)arg;
    conn c = conn_open(endpoint);
    CacheClient__GetRequest g = CACHE_CLIENT____GET_REQUEST__INIT;
    g.cache_key = (ProtobufCBinaryData){6, (uint8_t *)"victim"};
    while (!atomic_load(&stopping) && atomic_load(&n_gets) < VICTIM_MAX) {
        int64_t t0 = now_ns();
        size_t bytes;
        int st = call(&c, "Get", &g.base, 1000, &bytes);
        size_t i = atomic_load(&n_gets);
        gets[i] = (victim_get){t0, now_ns(), st};
        atomic_store(&n_gets, i + 1);
        int64_t left = t0 + VICTIM_EVERY_MS * 1000000LL - now_ns();
        if (left > 0)
            usleep((useconds_t)(left / 1000));
    }
    conn_close(&c);
    return NULL;
}

/* ---- The server's CPU time ---- */

static int server_pid;

/* The server's threads' time on a CPU so far, in ns (0 without a pid). */
static int64_t server_cpu_ns(void)
{
    if (!server_pid)
        return 0;
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/task", server_pid);
    DIR *d = opendir(path);
    if (!d)
        die("cannot read the server's /proc/PID/task");
    int64_t sum = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char file[320];
        snprintf(file, sizeof(file), "/proc/%d/task/%s/schedstat", server_pid, e->d_name);
        FILE *f = fopen(file, "r");
        long long ns = 0;
        if (f && fscanf(f, "%lld", &ns) == 1)
            sum += ns;
        if (f)
            fclose(f);
    }
    closedir(d);
    return sum;
}

/* ---- Scenarios ---- */

/* n distinct byte strings of `len` bytes (len >= 3; the index in the first
 * bytes, big-endian), in one block: free(e[0].data), free(e). */
static ProtobufCBinaryData *elems(size_t n, size_t len)
{
    ProtobufCBinaryData *e = calloc(n ? n : 1, sizeof(*e));
    uint8_t *b = malloc(n * len + 1);
    if (!e || !b)
        die("out of memory");
    memset(b, 'e', n * len);
    for (size_t i = 0; i < n; i++) {
        uint8_t *p = b + i * len;
        size_t k = len < 4 ? len : 4;
        for (size_t j = 0; j < k; j++)
            p[j] = (uint8_t)(i >> (8 * (k - 1 - j)));
        e[i] = (ProtobufCBinaryData){len, p};
    }
    return e;
}

static void free_elems(ProtobufCBinaryData *e)
{
    free(e[0].data);
    free(e);
}

#define BIN(s) ((ProtobufCBinaryData){strlen(s), (uint8_t *)(s)})

static void zput(conn *c, const char *name, size_t n, size_t len)
{
    ProtobufCBinaryData *v = elems(n, len);
    size_t chunk = 50000;
    CacheClient__SortedSetElement *el = calloc(chunk, sizeof(*el));
    CacheClient__SortedSetElement **p = calloc(chunk, sizeof(*p));
    for (size_t base = 0; base < n; base += chunk) {
        size_t k = n - base < chunk ? n - base : chunk;
        for (size_t i = 0; i < k; i++) {
            el[i] = (CacheClient__SortedSetElement)CACHE_CLIENT____SORTED_SET_ELEMENT__INIT;
            el[i].value = v[base + i];
            el[i].score = (double)(base + i);
            p[i] = &el[i];
        }
        CacheClient__SortedSetPutRequest q = CACHE_CLIENT____SORTED_SET_PUT_REQUEST__INIT;
        q.set_name = BIN(name);
        q.elements = p;
        q.n_elements = k;
        must(c, "SortedSetPut", &q.base);
    }
    free(el);
    free(p);
    free_elems(v);
}

static void sadd(conn *c, const char *name, size_t n, size_t len)
{
    ProtobufCBinaryData *v = elems(n, len);
    size_t chunk = 200000;
    for (size_t base = 0; base < n; base += chunk) {
        CacheClient__SetUnionRequest q = CACHE_CLIENT____SET_UNION_REQUEST__INIT;
        q.set_name = BIN(name);
        q.elements = v + base;
        q.n_elements = n - base < chunk ? n - base : chunk;
        must(c, "SetUnion", &q.base);
    }
    free_elems(v);
}

static void lpush_empty(conn *c, const char *name, size_t n)
{
    ProtobufCBinaryData *v = calloc(n, sizeof(*v));
    size_t chunk = 500000;
    for (size_t base = 0; base < n; base += chunk) {
        CacheClient__ListConcatenateBackRequest q = CACHE_CLIENT____LIST_CONCATENATE_BACK_REQUEST__INIT;
        q.list_name = BIN(name);
        q.values = v + base;
        q.n_values = n - base < chunk ? n - base : chunk;
        must(c, "ListConcatenateBack", &q.base);
    }
    free(v);
}

static void dset(conn *c, const char *name, size_t n, size_t field_len, size_t value_len)
{
    ProtobufCBinaryData *f = elems(n, field_len);
    ProtobufCBinaryData *v = elems(1, value_len);
    size_t chunk = 50000;
    CacheClient__DictionaryFieldValuePair *pairs = calloc(chunk, sizeof(*pairs));
    CacheClient__DictionaryFieldValuePair **pp = calloc(chunk, sizeof(*pp));
    for (size_t base = 0; base < n; base += chunk) {
        size_t k = n - base < chunk ? n - base : chunk;
        for (size_t i = 0; i < k; i++) {
            pairs[i] = (CacheClient__DictionaryFieldValuePair)CACHE_CLIENT____DICTIONARY_FIELD_VALUE_PAIR__INIT;
            pairs[i].field = f[base + i];
            pairs[i].value = v[0];
            pp[i] = &pairs[i];
        }
        CacheClient__DictionarySetRequest q = CACHE_CLIENT____DICTIONARY_SET_REQUEST__INIT;
        q.dictionary_name = BIN(name);
        q.items = pp;
        q.n_items = k;
        must(c, "DictionarySet", &q.base);
    }
    free(pairs);
    free(pp);
    free_elems(f);
    free_elems(v);
}

static void set_scalar(conn *c, const char *key, size_t len)
{
    uint8_t *v = malloc(len ? len : 1);
    memset(v, 'v', len);
    CacheClient__SetRequest q = CACHE_CLIENT____SET_REQUEST__INIT;
    q.cache_key = BIN(key);
    q.cache_body = (ProtobufCBinaryData){len, v};
    q.ttl_milliseconds = 600000;
    must(c, "Set", &q.base);
    free(v);
}

static void del(conn *c, const char *key)
{
    CacheClient__DeleteRequest q = CACHE_CLIENT____DELETE_REQUEST__INIT;
    q.cache_key = BIN(key);
    must(c, "Delete", &q.base);
}

/* A heavy request, built by the scenario: method and message. */
typedef struct heavy {
    const char *method;
    ProtobufCMessage *msg;
} heavy;

/* Each scenario fills what it needs, builds its heavy request in *h (its
 * memory in the statics below), and `after` (may be NULL) cleans up. */
typedef struct scenario {
    const char *name;
    void (*prepare)(conn *c, heavy *h);
    void (*after)(conn *c);
} scenario;

static CacheClient__SortedSetUnionStoreRequest__Source union_src;
static CacheClient__SortedSetUnionStoreRequest__Source *union_ptrs[1000];
static CacheClient__SortedSetUnionStoreRequest union_req;

static void build_union(heavy *h, const char *source, size_t times)
{
    union_src = (CacheClient__SortedSetUnionStoreRequest__Source)
        CACHE_CLIENT____SORTED_SET_UNION_STORE_REQUEST____SOURCE__INIT;
    union_src.set_name = BIN(source);
    union_src.weight = 1;
    for (size_t i = 0; i < times; i++)
        union_ptrs[i] = &union_src;
    union_req = (CacheClient__SortedSetUnionStoreRequest)CACHE_CLIENT____SORTED_SET_UNION_STORE_REQUEST__INIT;
    union_req.set_name = BIN("zdest");
    union_req.sources = union_ptrs;
    union_req.n_sources = times;
    union_req.ttl_milliseconds = 600000;
    *h = (heavy){"SortedSetUnionStore", &union_req.base};
}

/* The issue's request: one 100,000-element set (8-byte values) named 1000
 * times. */
static void prep_union_issue(conn *c, heavy *h)
{
    zput(c, "z100k", 100000, 8);
    build_union(h, "z100k", 1000);
}

/* The largest union still allowed of that set: two of it (21 bytes an
 * element, 2.1 MB a source; three would pass the 5 MiB limit). */
static void prep_union_largest(conn *c, heavy *h)
{
    (void)c; /* z100k is still there */
    build_union(h, "z100k", 2);
}

static void after_union(conn *c)
{
    del(c, "zdest");
}

static CacheClient__ListRange erase_range;
static CacheClient__ListRange **erase_ptrs;
static CacheClient__ListEraseRequest__ListRanges erase_some;
static CacheClient__ListEraseRequest erase_req;

/* 500,000 ranges over a 1,000,000-element list (a 4 MB request). */
static void prep_erase(conn *c, heavy *h)
{
    enum { LEN = 1000000, RANGES = 500000 };
    lpush_empty(c, "l1m", LEN);
    erase_range = (CacheClient__ListRange)CACHE_CLIENT____LIST_RANGE__INIT;
    erase_range.begin_index = 1;
    erase_range.count = LEN;
    erase_ptrs = malloc(RANGES * sizeof(*erase_ptrs));
    for (size_t i = 0; i < RANGES; i++)
        erase_ptrs[i] = &erase_range;
    erase_some = (CacheClient__ListEraseRequest__ListRanges)CACHE_CLIENT____LIST_ERASE_REQUEST____LIST_RANGES__INIT;
    erase_some.ranges = erase_ptrs;
    erase_some.n_ranges = RANGES;
    erase_req = (CacheClient__ListEraseRequest)CACHE_CLIENT____LIST_ERASE_REQUEST__INIT;
    erase_req.list_name = BIN("l1m");
    erase_req.erase_case = CACHE_CLIENT____LIST_ERASE_REQUEST__ERASE_SOME;
    erase_req.some = &erase_some;
    *h = (heavy){"ListErase", &erase_req.base};
}

static void after_erase(conn *c)
{
    free(erase_ptrs);
    del(c, "l1m");
}

static CacheClient__GetRequest batch_get;
static CacheClient__GetRequest *batch_ptrs[200];
static CacheClient__GetBatchRequest batch_req;

/* GetBatch naming one 1 MiB item 200 times: 200 MB for 2 KB. */
static void prep_getbatch(conn *c, heavy *h)
{
    set_scalar(c, "i1m", 1 << 20);
    batch_get = (CacheClient__GetRequest)CACHE_CLIENT____GET_REQUEST__INIT;
    batch_get.cache_key = BIN("i1m");
    for (size_t i = 0; i < 200; i++)
        batch_ptrs[i] = &batch_get;
    batch_req = (CacheClient__GetBatchRequest)CACHE_CLIENT____GET_BATCH_REQUEST__INIT;
    batch_req.items = batch_ptrs;
    batch_req.n_items = 200;
    *h = (heavy){"GetBatch", &batch_req.base};
}

static ProtobufCBinaryData dget_fields[2000];
static CacheClient__DictionaryGetRequest dget_req;

/* DictionaryGet naming one 100 KiB field 2000 times: 200 MB. */
static void prep_dictget(conn *c, heavy *h)
{
    dset(c, "dbig", 1, 1, 100 * 1024);
    static uint8_t zero = 0; /* the field dset wrote: one byte, 0 */
    for (size_t i = 0; i < 2000; i++)
        dget_fields[i] = (ProtobufCBinaryData){1, &zero};
    dget_req = (CacheClient__DictionaryGetRequest)CACHE_CLIENT____DICTIONARY_GET_REQUEST__INIT;
    dget_req.dictionary_name = BIN("dbig");
    dget_req.fields = dget_fields;
    dget_req.n_fields = 2000;
    *h = (heavy){"DictionaryGet", &dget_req.base};
}

/* The largest collections of each family (within the 5 MiB item limit,
 * counted as their fetch carries them), of the smallest elements, which
 * cost the most per byte: 1,000,000 3-byte set elements (5 bytes each);
 * 2,600,000 empty list elements (2 each); 327,000 sorted-set elements of
 * 3 bytes (16 each, with the score); 520,000 dictionary fields of 3 bytes
 * with 1-byte values (10 each). */
static CacheClient__SetFetchRequest sfetch_req;
static void prep_set_fetch(conn *c, heavy *h)
{
    sadd(c, "smax", 1000000, 3);
    sfetch_req = (CacheClient__SetFetchRequest)CACHE_CLIENT____SET_FETCH_REQUEST__INIT;
    sfetch_req.set_name = BIN("smax");
    *h = (heavy){"SetFetch", &sfetch_req.base};
}

static CacheClient__DeleteRequest del_req;
static void build_delete(heavy *h, const char *key)
{
    del_req = (CacheClient__DeleteRequest)CACHE_CLIENT____DELETE_REQUEST__INIT;
    del_req.cache_key = BIN(key);
    *h = (heavy){"Delete", &del_req.base};
}

static void prep_set_delete(conn *c, heavy *h)
{
    (void)c; /* smax is still there */
    build_delete(h, "smax");
}

static CacheClient__ListFetchRequest lfetch_req;
static void prep_list_fetch(conn *c, heavy *h)
{
    lpush_empty(c, "lmax", 2600000);
    lfetch_req = (CacheClient__ListFetchRequest)CACHE_CLIENT____LIST_FETCH_REQUEST__INIT;
    lfetch_req.list_name = BIN("lmax");
    *h = (heavy){"ListFetch", &lfetch_req.base};
}

static CacheClient__ListRemoveRequest lremove_req;
static void prep_list_remove(conn *c, heavy *h)
{
    (void)c; /* a scan of lmax that removes nothing */
    cache_client____list_remove_request__init(&lremove_req);
    lremove_req.list_name = BIN("lmax");
    lremove_req.remove_case = CACHE_CLIENT____LIST_REMOVE_REQUEST__REMOVE_ALL_ELEMENTS_WITH_VALUE;
    lremove_req.all_elements_with_value = BIN("x");
    *h = (heavy){"ListRemove", &lremove_req.base};
}

static void prep_list_delete(conn *c, heavy *h)
{
    (void)c;
    build_delete(h, "lmax");
}

static CacheClient__SortedSetFetchRequest zfetch_req;
static void prep_zset_fetch(conn *c, heavy *h)
{
    zput(c, "zmax", 327000, 3);
    zfetch_req = (CacheClient__SortedSetFetchRequest)CACHE_CLIENT____SORTED_SET_FETCH_REQUEST__INIT;
    zfetch_req.set_name = BIN("zmax");
    zfetch_req.with_scores = 1;
    *h = (heavy){"SortedSetFetch", &zfetch_req.base};
}

static void prep_zset_union(conn *c, heavy *h)
{
    (void)c;
    build_union(h, "zmax", 1);
}

static void prep_zset_delete(conn *c, heavy *h)
{
    (void)c;
    build_delete(h, "zmax");
}

static CacheClient__DictionaryFetchRequest dfetch_req;
static void prep_dict_fetch(conn *c, heavy *h)
{
    dset(c, "dmax", 520000, 3, 1);
    dfetch_req = (CacheClient__DictionaryFetchRequest)CACHE_CLIENT____DICTIONARY_FETCH_REQUEST__INIT;
    dfetch_req.dictionary_name = BIN("dmax");
    *h = (heavy){"DictionaryFetch", &dfetch_req.base};
}

static void prep_dict_delete(conn *c, heavy *h)
{
    (void)c;
    build_delete(h, "dmax");
}

/* A write at the request limit: SetUnion of 1,000,000 new 3-byte
 * elements (5 MB), the server's work in proportion to its bytes. */
static ProtobufCBinaryData *write_vals;
static CacheClient__SetUnionRequest write_req;
static void prep_write_largest(conn *c, heavy *h)
{
    (void)c;
    write_vals = elems(1000000, 3);
    write_req = (CacheClient__SetUnionRequest)CACHE_CLIENT____SET_UNION_REQUEST__INIT;
    write_req.set_name = BIN("swrite");
    write_req.elements = write_vals;
    write_req.n_elements = 1000000;
    *h = (heavy){"SetUnion", &write_req.base};
}

static void after_write_largest(conn *c)
{
    free_elems(write_vals);
    del(c, "swrite");
}

/* GetWithHash of an item at the 5 MiB limit: SHA-256 of its value. */
static CacheClient__GetWithHashRequest hash_req;
static void prep_hash(conn *c, heavy *h)
{
    set_scalar(c, "i5m", (5u << 20) - 8);
    hash_req = (CacheClient__GetWithHashRequest)CACHE_CLIENT____GET_WITH_HASH_REQUEST__INIT;
    hash_req.cache_key = BIN("i5m");
    *h = (heavy){"GetWithHash", &hash_req.base};
}

static const scenario scenarios[] = {
    {"union_issue", prep_union_issue, after_union},
    {"union_largest", prep_union_largest, after_union},
    {"erase_ranges", prep_erase, after_erase},
    {"getbatch_repeat", prep_getbatch, NULL},
    {"dictget_repeat", prep_dictget, NULL},
    {"set_fetch_largest", prep_set_fetch, NULL},
    {"set_delete_largest", prep_set_delete, NULL},
    {"list_fetch_largest", prep_list_fetch, NULL},
    {"list_remove_largest", prep_list_remove, NULL},
    {"list_delete_largest", prep_list_delete, NULL},
    {"zset_fetch_largest", prep_zset_fetch, NULL},
    {"zset_union_largest", prep_zset_union, after_union},
    {"zset_delete_largest", prep_zset_delete, NULL},
    {"dict_fetch_largest", prep_dict_fetch, NULL},
    {"dict_delete_largest", prep_dict_delete, NULL},
    {"write_largest", prep_write_largest, after_write_largest},
    {"hash_largest", prep_hash, NULL},
};
#define N_SCENARIOS (sizeof(scenarios) / sizeof(scenarios[0]))

static void run(conn *c, const scenario *sc)
{
    heavy h;
    sc->prepare(c, &h);
    usleep(200 * 1000); /* the victim's Gets settle after the fill */
    int64_t cpu0 = server_cpu_ns();
    int64_t t0 = now_ns();
    size_t bytes;
    int st = call(c, h.method, h.msg, 60000, &bytes);
    int64_t t1 = now_ns();
    int64_t cpu1 = server_cpu_ns();
    usleep(200 * 1000);
    /* The Gets whose time in flight overlapped the heavy request's. */
    size_t n = atomic_load(&n_gets), during = 0, timeouts = 0;
    int64_t worst = 0;
    for (size_t i = 0; i < n; i++) {
        if (gets[i].end < t0 || gets[i].start > t1)
            continue;
        during++;
        if (gets[i].status == GRPC_STATUS_DEADLINE_EXCEEDED)
            timeouts++;
        if (gets[i].end - gets[i].start > worst)
            worst = gets[i].end - gets[i].start;
    }
    printf("scenario=%s status=%d heavy_ms=%.1f server_cpu_ms=%.1f reply_bytes=%zu victim_gets=%zu"
           " victim_timeouts=%zu victim_max_ms=%.1f\n",
           sc->name, st, (double)(t1 - t0) / 1e6, (double)(cpu1 - cpu0) / 1e6, bytes, during,
           timeouts, (double)worst / 1e6);
    fflush(stdout);
    if (sc->after)
        sc->after(c);
}

int main(int argc, char **argv)
{
    const char *only[N_SCENARIOS];
    size_t n_only = 0;
    static const struct option opts[] = {{"endpoint", required_argument, NULL, 'e'},
                                         {"scenario", required_argument, NULL, 's'},
                                         {"server-pid", required_argument, NULL, 'p'},
                                         {NULL, 0, NULL, 0}};
    int o;
    while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (o == 'e')
            endpoint = optarg;
        else if (o == 's' && n_only < N_SCENARIOS)
            only[n_only++] = optarg;
        else if (o == 'p')
            server_pid = atoi(optarg);
        else
            die("usage: hold_driver --endpoint HOST:PORT [--server-pid PID] [--scenario NAME]...");
    }
    if (!endpoint || (strncmp(endpoint, "127.0.0.1:", 10) != 0 && strncmp(endpoint, "localhost:", 10) != 0 &&
                      strncmp(endpoint, "[::1]:", 6) != 0))
        die("--endpoint must be a loopback HOST:PORT");
    grpc_init();
    conn c = conn_open(endpoint);
    set_scalar(&c, "victim", 100);
    pthread_t t;
    if (pthread_create(&t, NULL, victim, NULL) != 0)
        die("pthread_create failed");
    for (size_t i = 0; i < N_SCENARIOS; i++) {
        bool wanted = n_only == 0;
        for (size_t j = 0; j < n_only; j++)
            wanted = wanted || strcmp(only[j], scenarios[i].name) == 0;
        if (wanted)
            run(&c, &scenarios[i]);
    }
    atomic_store(&stopping, true);
    pthread_join(t, NULL);
    conn_close(&c);
    grpc_shutdown();
    return 0;
}
