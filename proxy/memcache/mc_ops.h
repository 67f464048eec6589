/* memcached's operations on Momento, shared by the text and the binary
 * protocol: each takes its arguments (copied), runs one or more libmomento
 * calls and reports one mc_result to `done`, exactly once - from a library
 * callback, or before it returns when nothing could be sent. Values are
 * kept as mc_value_encode() makes them (flags, then data).
 *
 * A cas unique is the proxy's own 64-bit hash of a value's stored bytes
 * (flags and data), never 0: a read computes it from the bytes it got, a
 * write from the bytes it sent, so neither needs Momento's hash of the
 * value - which only GetWithHash and SetWithHash answer, one call per key,
 * neither batched nor coalesced. Only the conditional writes read
 * Momento's hash, to condition their write on it.
 *
 * How memcached's semantics are built from Momento's calls:
 *  - set: Set; add: SetIf absent; replace: SetIf present.
 *  - cas: GetWithHash, then (when the unique is the unique of the bytes
 *    read) SetIfHash present-and-hash-equal with Momento's hash of those
 *    bytes; a write that loses a race starts again from the read.
 *  - incr, decr, append, prepend: GetWithHash and ItemGetTtl together,
 *    then SetIfHash present-and-hash-equal with the new value and the
 *    remaining TTL, again from the read when another writer came between
 *    (Momento's Increment cannot be used: the value starts with the flags).
 *  - delete: KeysExist then Delete (Momento's Delete does not say whether
 *    the key was there); when nobody reads the answer, Delete alone; with
 *    a unique, Get then (when it matches) Delete.
 *  - touch: UpdateTtl; gat: Get and UpdateTtl together.
 *  - exptime in the past, so that the answer is what memcached gives and
 *    the item is gone when it is given: set: Delete alone; add:
 *    KeyExists alone (nothing is written); replace, cas: the write with a
 *    TTL of 1 ms, then a Delete; touch: UpdateTtl
 *    to 1 ms, then a Delete when the key was there (noreply: the Delete
 *    alone); gat: the Get alone, then a Delete on a hit; a binary incr
 *    creating the key: nothing written (it would expire at once).
 *
 * Everything runs on the proxy's thread. */
#ifndef PX_MC_OPS_H
#define PX_MC_OPS_H

#include "memcache/mc_parse.h"
#include "px.h"

typedef enum mc_status {
    MC_STORED,
    MC_NOT_STORED,
    MC_EXISTS,
    MC_NOT_FOUND,
    MC_DELETED,
    MC_TOUCHED,
    MC_HIT,
    MC_MISS,
    MC_NUMBER,
    MC_NON_NUMERIC,
    MC_OK,
    MC_TOO_LARGE, /* Momento refused the item for its size */
    MC_FAILED,    /* a Momento error: `error` and `message` */
} mc_status;

typedef struct mc_result {
    mc_status status;
    uint32_t flags;      /* MC_HIT */
    const char *data;    /* MC_HIT: borrowed until `done` returns */
    size_t len;
    uint64_t cas;        /* MC_HIT, MC_STORED, MC_NUMBER: when asked for (want_cas), else 0 */
    uint64_t number;     /* MC_NUMBER */
    int error;           /* MC_FAILED: a momento_error */
    const char *message; /* MC_FAILED: the reason, never NULL */
} mc_result;

typedef void (*mc_done)(const mc_result *res, void *ud);

typedef enum mc_store_mode {
    MC_MODE_SET,
    MC_MODE_ADD,
    MC_MODE_REPLACE,
    MC_MODE_CAS,
    MC_MODE_APPEND,
    MC_MODE_PREPEND,
} mc_store_mode;

/* set / add / replace / cas (with `cas`) / append / prepend (which keep
 * the item's flags and TTL, as memcached's do). want_cas: the answer
 * carries the new value's unique (a binary reply does), computed from the
 * value sent; the calls are the same as without it. */
void mc_store(px_backend *b, mc_store_mode mode, px_str key, uint32_t flags, px_str data,
              mc_ttl ttl, uint64_t cas, bool want_cas, mc_done done, void *ud);

/* incr / decr by `delta` (decr stops at 0, incr wraps at 2^64, as
 * memcached's). A missing key: MC_NOT_FOUND, or with `initial` (the binary
 * protocol's) that value stored with `initial_ttl`. want_cas as for
 * mc_store(). */
void mc_arith(px_backend *b, px_str key, bool incr, uint64_t delta, bool has_initial,
              uint64_t initial, mc_ttl initial_ttl, bool want_cas, mc_done done, void *ud);

/* MC_DELETED or MC_NOT_FOUND; `cas` non-zero: MC_EXISTS unless it is the
 * value's unique. check: find out whether the key was there (otherwise
 * the answer is always MC_DELETED, for a caller that does not tell). */
void mc_delete(px_backend *b, px_str key, uint64_t cas, bool check, mc_done done, void *ud);

/* MC_TOUCHED or MC_NOT_FOUND. check: find out whether the key was there; without it (noreply) an
 * exptime already past is a Delete alone, answered MC_TOUCHED. */
void mc_touch(px_backend *b, px_str key, mc_ttl ttl, bool check, mc_done done, void *ud);

/* MC_HIT or MC_MISS; want_cas: the unique too (computed from the value:
 * the get is the same coalesced or batched Get). A key memcached cannot read - a value shorter
 * than the flags, a collection made through the RESP port - is a miss, as
 * it is to gat and to the text protocol's get of many keys. */
void mc_get(px_backend *b, px_str key, bool want_cas, mc_done done, void *ud);

/* mc_get's two halves, for a caller with a context of its own to pass
 * (the text protocol's one-key get): mc_get_send() submits a get
 * (coalesced when the backend has a coalescer; answered from the near
 * cache unless want_cas: a unique must be current) and returns as the
 * library's call, counted as a backend call when accepted; mc_get_result()
 * reads its answer into *out (MC_HIT, MC_MISS or a failure; out->data
 * borrows from `res`; with want_cas, out->cas the value's unique). */
int mc_get_send(px_backend *b, px_str key, bool want_cas, momento_callback cb, void *ud);
void mc_get_result(px_backend *b, const momento_result *res, bool want_cas, mc_result *out);

/* get and touch: MC_HIT (the value before the touch) or MC_MISS. */
void mc_gat(px_backend *b, px_str key, mc_ttl ttl, bool want_cas, mc_done done, void *ud);

/* flush_all: MC_OK. */
void mc_flush(px_backend *b, mc_done done, void *ud);

/* A Momento result as an mc_result: MC_FAILED (or MC_TOO_LARGE for an
 * item over Momento's size limit); counts the error. */
void mc_result_failed(px_backend *b, mc_result *out, int rc, const momento_result *res);

/* The default TTL for ttl.ms == 0. */
uint64_t mc_ttl_ms(const px_backend *b, mc_ttl ttl);

/* The most a value (with its key and flags) may take: the proxy's
 * request limit, within Momento's item limit. */
size_t mc_max_item(const px_backend *b);

/* Seconds since the epoch, for exptime. */
int64_t mc_now_s(void);

#endif
