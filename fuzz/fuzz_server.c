/* libFuzzer target: the local server's request decoding and handling. The
 * first byte picks the RPC and whether a `cache` header names a cache that
 * exists, one that does not, or none; the rest is the request body. Every
 * input must be answered (OK with messages, or an error status) without a
 * crash, against a store that persists across inputs, with a small memory
 * limit so eviction runs too. */
#include "core/srv_server.h"
#include "core/srv_webhooks.h"
#include "rpc/srv_rpc.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The first byte is the RPC's index in common/methods.def (mod 64) plus 64
 * times the header choice, so that a seed keeps its meaning as rows are
 * appended to the table (the committed seeds, fuzz/corpus/server, all have
 * header choice 0). Bytes 192-255, which would choose header 0 again, pick
 * rows 64-127 instead (with header 0), so that the table can grow past 64
 * rows without any seed changing its meaning. Indices past the table are
 * skipped. */
#define CHOICES 64

static momento_local *server;

static void setup(void)
{
    server = calloc(1, sizeof(*server));
    store_init(&server->store, 1u << 20);
    server->opts.max_item_bytes = 64 * 1024;
    /* Webhooks as the real server has them, with a queue of no room: a
     * publish to a topic with a webhook is dropped, never delivered, so no
     * input makes the fuzzer dial the URL it chose. */
    server->opts.webhook_queue_items = 0;
    server->opts.webhook_timeout_ms = 1;
    if (srv_webhooks_init(server) != 0)
        abort();
    store_create_cache(&server->store, "c");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!server)
        setup();
    if (size < 1)
        return 0;
    int choice = data[0] % CHOICES;
    int header = (data[0] / CHOICES) % 3;
    if (data[0] >= 3 * CHOICES) {
        choice = CHOICES + data[0] % CHOICES;
        header = 0;
    }
    if (choice >= MOMENTO__RPC_COUNT)
        return 0;
    momento__rpc_id m = (momento__rpc_id)choice;
    const char *cache = header == 0 ? "c" : header == 1 ? "nope" : NULL;

    srv_reply r;
    memset(&r, 0, sizeof(r));
    srv_dispatch(server, m, cache, cache ? strlen(cache) : 0, data + 1, size - 1, &r);
    if (r.status == GRPC_STATUS_OK && !momento__rpcs[m].streaming && r.n_msgs != 1)
        abort(); /* a unary success carries exactly one message */
    if (r.status != GRPC_STATUS_OK && r.n_msgs != 0)
        abort(); /* an error carries none */
    srv_reply_clear(&r);
    store_sweep(&server->store, store_now_ms(), 64);
    return 0;
}
