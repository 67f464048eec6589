/* A read of many keys for a command that answers each key on its own
 * (RESP MGET, memcached's text get of several keys): one GetBatch, and
 * each key whose answer in it may be another key's doing asked again
 * alone, so that no key decides another key's answer (issue 46).
 *
 * Why a key is asked again: a key holding a collection fails a get with
 * FAILED_PRECONDITION, which MGET answers as nil and memcached as a miss.
 * Asked alone, a key says so. In a batch it may not: the library reports a
 * failed item with an error of its own, without the server's kind (the
 * batch's stream carries only a result and a message per item), and a
 * server may fail the whole batch for that one key (momento-local did).
 * So, each with a plain get (through the coalescer when the proxy has
 * one):
 *  - a key whose item failed, unless it failed FAILED_PRECONDITION
 *    already, is asked again;
 *  - when the whole batch failed FAILED_PRECONDITION - what only a key's
 *    type gives a get - every key is asked again.
 * A batch that failed otherwise (a timeout, the service unavailable...)
 * fails every key with its error: asking each key again would multiply the
 * calls to a failing service, and alone they would fail alike. A key asked
 * again has the proxy's --timeout-ms of its own.
 *
 * With a near cache (px_backend.near) no batch is sent: each key is asked
 * alone (through the coalescer when there is one), so that a key read
 * lately is answered from memory; the library's adaptive batching, when
 * on, still puts the others in batches of its own.
 *
 * Everything runs on the proxy's thread. */
#ifndef PX_MULTIGET_H
#define PX_MULTIGET_H

#include "px.h"

/* The answer: n results in the order of the keys, each a get's
 * (momento_result_error(), momento_result_is_hit(), momento_result_value()),
 * borrowed until the callback returns. A key whose batch failed as a whole
 * has the batch's result. NULL for a key that could not be asked at all
 * (only with a near cache, and only when its get alone was refused for
 * want of memory after others were sent): answer it as out of memory. */
typedef void (*px_multiget_done)(const momento_result *const *items, size_t n, void *ud);

/* Reads keys[0, n) (n >= 1; the keys are copied). Returns MOMENTO_OK, and
 * `done` is then called exactly once; or the library's refusal of the
 * batch, and `done` is never called. The caller counts the batch as a
 * backend call (with a near cache: the first key's get); the gets asked
 * again (the other keys') are counted here. */
int px_multiget(px_backend *b, const px_str *keys, size_t n, px_multiget_done done, void *ud);

#endif
