/* Fault injection driven by request metadata, with the header names and
 * values of Momento's local test server
 * (docs/protocol.md "Fault injection"). Counts are kept per `request-id` so
 * that concurrent tests do not disturb each other; the table of sessions is
 * bounded, and full it forgets the least recently used one, so that a flood
 * of new ids never resets the sessions still in use. */
#include "core/srv_faults.h"

#include "core/srv_metadata.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

struct fault_session {
    UT_hash_handle hh; /* the table's order is recency: oldest first */
    uint32_t errors;
    uint32_t delays;
    uint32_t stream_errors; /* subscription streams given a stream-error */
    uint32_t stream_drops;  /* ...and given stream-drop-items */
    char id[];
};

/* A runaway client must not grow the table forever. */
#define MAX_SESSIONS 100000

static const struct {
    const char *name;
    grpc_status_code status;
} error_names[] = {
    {"invalid-argument", GRPC_STATUS_INVALID_ARGUMENT},
    {"unknown", GRPC_STATUS_UNKNOWN},
    {"already-exists", GRPC_STATUS_ALREADY_EXISTS},
    {"not-found", GRPC_STATUS_NOT_FOUND},
    {"internal", GRPC_STATUS_INTERNAL},
    {"permission-denied", GRPC_STATUS_PERMISSION_DENIED},
    {"unauthenticated", GRPC_STATUS_UNAUTHENTICATED},
    {"cancelled", GRPC_STATUS_CANCELLED},
    {"resource-exhausted", GRPC_STATUS_RESOURCE_EXHAUSTED},
    {"deadline-exceeded", GRPC_STATUS_DEADLINE_EXCEEDED},
    {"unavailable", GRPC_STATUS_UNAVAILABLE},
    {"failed-precondition", GRPC_STATUS_FAILED_PRECONDITION},
};

static bool slice_is(const grpc_slice *v, const char *s)
{
    size_t n = strlen(s);
    return GRPC_SLICE_LENGTH(*v) == n && memcmp(GRPC_SLICE_START_PTR(*v), s, n) == 0;
}

/* Is `rpc` one of the space-separated names in `list`? No list = every RPC. */
static bool name_listed(const grpc_slice *list, const char *rpc)
{
    const char *p = (const char *)GRPC_SLICE_START_PTR(*list);
    const char *end = p + GRPC_SLICE_LENGTH(*list);
    size_t n = strlen(rpc);
    while (p < end) {
        while (p < end && (*p == ' ' || *p == ','))
            p++;
        const char *w = p;
        while (p < end && *p != ' ' && *p != ',')
            p++;
        if ((size_t)(p - w) == n && memcmp(w, rpc, n) == 0)
            return true;
    }
    return false;
}

/* A decimal count; absent = unlimited; malformed = -1. */
static int64_t count_of(const grpc_slice *v)
{
    if (!v)
        return INT64_MAX;
    size_t n = GRPC_SLICE_LENGTH(*v);
    const uint8_t *p = GRPC_SLICE_START_PTR(*v);
    if (n == 0 || n > 9)
        return -1;
    int64_t x = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return -1;
        x = x * 10 + (p[i] - '0');
    }
    return x;
}

/* The keys of `error-keys` or `delay-keys`: where each lies in the value. */
typedef struct key_list {
    size_t n;
    struct {
        const uint8_t *p;
        size_t len;
    } k[FAULT_KEYS_MAX];
} key_list;

/* Splits a keys header at its spaces: false when it is empty or only
 * spaces, longer than FAULT_KEYS_MAX_BYTES, lists more than
 * FAULT_KEYS_MAX keys, or holds a byte outside printable ASCII (which gRPC
 * does not let through anyway). A comma is a byte of a key here, unlike
 * in the RPC lists: keys are bytes as given. */
static bool parse_keys(const grpc_slice *v, key_list *out)
{
    const uint8_t *p = GRPC_SLICE_START_PTR(*v);
    const uint8_t *end = p + GRPC_SLICE_LENGTH(*v);
    out->n = 0;
    if (GRPC_SLICE_LENGTH(*v) > FAULT_KEYS_MAX_BYTES)
        return false;
    while (p < end) {
        if (*p == ' ') {
            p++;
            continue;
        }
        const uint8_t *w = p;
        while (p < end && *p != ' ') {
            if (*p < 0x21 || *p > 0x7e)
                return false;
            p++;
        }
        if (out->n == FAULT_KEYS_MAX)
            return false;
        out->k[out->n].p = w;
        out->k[out->n].len = (size_t)(p - w);
        out->n++;
    }
    return out->n > 0;
}

static bool key_in_list(const uint8_t *key, size_t len, void *ctx)
{
    const key_list *l = ctx;
    for (size_t i = 0; i < l->n; i++)
        if (l->k[i].len == len && memcmp(l->k[i].p, key, len) == 0)
            return true;
    return false;
}

/* Whether the call's request names one of `keys`: its keys are read only
 * now, for a call that a key-scoped fault would otherwise apply to. */
static bool names_a_key(const fault_request *req, const key_list *keys)
{
    return req && req->keys && req->keys(req->m, req->body, req->len, key_in_list, (void *)keys);
}

/* Whether a fault whose keys header is `v` (NULL: not key-scoped) applies
 * to the call; *bad set when the header is malformed. */
static bool keys_match(const grpc_slice *v, const fault_request *req, bool *bad)
{
    if (!v)
        return true;
    key_list keys;
    if (!parse_keys(v, &keys)) {
        *bad = true;
        return false;
    }
    return names_a_key(req, &keys);
}

/* Marks `fs` the most recently used: uthash keeps its elements in the order
 * they were added, so re-adding one moves it to the end. */
static void touch(fault_session **sessions, fault_session *fs)
{
    UT_hash_table *tbl = (*sessions)->hh.tbl;
    if (ELMT_FROM_HH(tbl, tbl->tail) == fs)
        return;
    unsigned keylen = fs->hh.keylen;
    HASH_DELETE(hh, *sessions, fs);
    HASH_ADD_KEYPTR(hh, *sessions, fs->id, keylen, fs);
}

static fault_session *session(fault_session **sessions, const grpc_slice *id)
{
    const char *key = id ? (const char *)GRPC_SLICE_START_PTR(*id) : "";
    size_t len = id ? GRPC_SLICE_LENGTH(*id) : 0;
    fault_session *fs = NULL;
    HASH_FIND(hh, *sessions, key, len, fs);
    if (fs) {
        touch(sessions, fs);
        return fs;
    }
    /* Full: forget the least recently used session (the first). */
    if (HASH_COUNT(*sessions) >= MAX_SESSIONS) {
        fault_session *oldest = *sessions;
        HASH_DELETE(hh, *sessions, oldest);
        free(oldest);
    }
    fs = calloc(1, sizeof(*fs) + len + 1);
    if (!fs)
        return NULL;
    memcpy(fs->id, key, len);
    HASH_ADD_KEYPTR(hh, *sessions, fs->id, len, fs);
    return fs;
}

/* The gRPC status a `return-error` or `stream-error` value names, or -1. */
static int status_named(const grpc_slice *v)
{
    for (size_t i = 0; i < sizeof(error_names) / sizeof(error_names[0]); i++)
        if (slice_is(v, error_names[i].name))
            return (int)error_names[i].status;
    return -1;
}

bool faults_requested(const grpc_metadata_array *md)
{
    return srv_header(md, "return-error") || srv_header(md, "delay-ms") ||
           srv_header(md, "stream-error") || srv_header(md, "stream-drop-items");
}

/* ...by its name or its alias. */
static bool listed(const grpc_slice *list, const momento__rpc *rpc)
{
    return !list || name_listed(list, rpc->fault_name) ||
           (rpc->fault_alias && name_listed(list, rpc->fault_alias));
}

static void plan(fault_session **sessions, const grpc_metadata_array *md, const momento__rpc *rpc,
                 bool subscription, const fault_request *req, fault_plan *out)
{
    out->error_status = -1;
    out->delay_ms = 0;
    out->bad_header = NULL;
    out->stream_error_status = -1;
    out->stream_error_after = 0;
    out->stream_drop_items = 0;
    out->stream_drop_after = 0;

    const grpc_slice *ret_err = srv_header(md, "return-error");
    const grpc_slice *delay = srv_header(md, "delay-ms");
    const grpc_slice *stream_err = subscription ? srv_header(md, "stream-error") : NULL;
    const grpc_slice *drop = subscription ? srv_header(md, "stream-drop-items") : NULL;
    if (!ret_err && !delay && !stream_err && !drop)
        return; /* the common case: no faults asked for */

    const grpc_slice *id = srv_header(md, "request-id");
    fault_session *fs = session(sessions, id);
    if (!fs)
        return;

    /* A key-scoped fault (error-keys, delay-keys) applies to the calls
     * whose request names one of its keys, whichever RPC carries them, and
     * only those count against error-count / delay-count. A batch naming
     * one fails (or waits) whole. */
    if (ret_err && listed(srv_header(md, "error-rpcs"), rpc)) {
        int status = status_named(ret_err);
        int64_t limit = count_of(srv_header(md, "error-count"));
        bool bad_keys = false;
        bool keyed = status >= 0 && limit >= 0 &&
                     keys_match(srv_header(md, "error-keys"), req, &bad_keys);
        if (status < 0)
            out->bad_header = "return-error names no known error";
        else if (limit < 0)
            out->bad_header = "error-count is not a number";
        else if (bad_keys)
            out->bad_header = "error-keys is not 1 to 64 space-separated keys of printable "
                              "ASCII, at most 1024 bytes";
        else if (keyed && fs->errors < limit) {
            fs->errors++;
            out->error_status = status;
        }
    }
    if (delay && listed(srv_header(md, "delay-rpcs"), rpc)) {
        int64_t ms = count_of(delay);
        int64_t limit = count_of(srv_header(md, "delay-count"));
        bool bad_keys = false;
        bool keyed = ms >= 0 && ms != INT64_MAX && limit >= 0 &&
                     keys_match(srv_header(md, "delay-keys"), req, &bad_keys);
        if (ms < 0 || ms == INT64_MAX)
            out->bad_header = "delay-ms is not a number of milliseconds";
        else if (limit < 0)
            out->bad_header = "delay-count is not a number";
        else if (bad_keys)
            out->bad_header = "delay-keys is not 1 to 64 space-separated keys of printable "
                              "ASCII, at most 1024 bytes";
        else if (keyed && ms > 0 && fs->delays < limit) {
            fs->delays++;
            out->delay_ms = (uint32_t)ms;
        }
    }
    /* A stream error ends the stream after its first N messages (its
     * heartbeats included). Within a request-id session it is given to the
     * first matching stream only: the SDKs' tests expect the stream their
     * client opens again after the error to stay up. Without a request-id
     * every matching stream gets it. */
    if (stream_err && listed(srv_header(md, "stream-error-rpcs"), rpc)) {
        int status = status_named(stream_err);
        int64_t after = count_of(srv_header(md, "stream-error-message-limit"));
        if (after == INT64_MAX)
            after = 0; /* no limit given: at once, before any message */
        if (status < 0)
            out->bad_header = "stream-error names no known error";
        else if (after < 0)
            out->bad_header = "stream-error-message-limit is not a number";
        else if (!id || fs->stream_errors == 0) {
            fs->stream_errors++;
            out->stream_error_status = status;
            out->stream_error_after = (uint32_t)after;
        }
    }
    /* Items dropped unseen: lost messages, for a subscriber's gap
     * handling. Given as a stream error is: the first matching stream of
     * a request-id session, every one without. */
    if (drop && listed(srv_header(md, "stream-error-rpcs"), rpc)) {
        int64_t n = count_of(drop);
        int64_t after = count_of(srv_header(md, "stream-drop-after"));
        if (after == INT64_MAX)
            after = 0; /* none given: from the first item */
        if (n < 0)
            out->bad_header = "stream-drop-items is not a number of items";
        else if (after < 0)
            out->bad_header = "stream-drop-after is not a number of items";
        else if (!id || fs->stream_drops == 0) {
            fs->stream_drops++;
            out->stream_drop_items = (uint32_t)n;
            out->stream_drop_after = (uint32_t)after;
        }
    }
}

void faults_plan_request(fault_session **sessions, const grpc_metadata_array *md,
                         const momento__rpc *rpc, const fault_request *req, fault_plan *out)
{
    plan(sessions, md, rpc, false, req, out);
}

void faults_plan(fault_session **sessions, const grpc_metadata_array *md, const momento__rpc *rpc,
                 fault_plan *out)
{
    plan(sessions, md, rpc, false, NULL, out);
}

/* A Subscribe names a topic, no key. */
void faults_plan_subscription(fault_session **sessions, const grpc_metadata_array *md,
                              const momento__rpc *rpc, fault_plan *out)
{
    plan(sessions, md, rpc, true, NULL, out);
}

void faults_clear(fault_session **sessions)
{
    fault_session *fs, *tmp;
    HASH_ITER(hh, *sessions, fs, tmp)
    {
        HASH_DELETE(hh, *sessions, fs);
        free(fs);
    }
}
