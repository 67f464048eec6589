/* The helpers of testutil.h that call the library's test hooks
 * (momento__client_add_header(), momento__dispatch_queued()): apart from
 * testutil.c because only the static library exports those; a test
 * linking the shared one never pulls this in. */
#include "testing.h"
#include "testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <string.h>
#include <unistd.h>

void tu_header(momento_local *s, momento_client *c, const char *key, const char *value)
{
    assert_int_equal(momento__client_add_header(c, key, value), MOMENTO_OK);
    tu__ps_fault_header(s, c, key, value);
}

void tu_headers(momento_local *s, momento_client *c, const char *request_id,
                const char *const *headers, size_t n)
{
    tu_header(s, c, "request-id", request_id);
    for (size_t i = 0; i < n; i++)
        tu_header(s, c, headers[2 * i], headers[2 * i + 1]);
}

size_t tu_wait_dispatched(momento_client *c, size_t keys, momento_client_batching_stats *ret_stats)
{
    momento_client_batching_stats bs;
    memset(&bs, 0, sizeof(bs));
    size_t rpcs = 0;
    int64_t until = tu_now_ms() + TU_MS(20000);
    while (tu_now_ms() < until) {
        assert_int_equal(momento_client_batching_stats_get(c, &bs, sizeof(bs)), MOMENTO_OK);
        rpcs = (keys + 1 - (size_t)bs.queued) + (size_t)bs.batches + (size_t)bs.sent_alone;
        if (bs.batched_keys + bs.sent_alone == bs.queued && momento__dispatch_queued(c) >= rpcs)
            break;
        usleep(1000);
    }
    *ret_stats = bs;
    return rpcs;
}
