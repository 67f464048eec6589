/* What the library's halves of the interop cross-checks (crosscheck.c,
 * compression_check.c) share: one TAP-like line per check, the summary,
 * and reading a key back. Included once, by each program's only file. */
#ifndef INTEROP_CHECK_H
#define INTEROP_CHECK_H

#include "momento/momento.h"

#include <stdio.h>
#include <string.h>

static int passed, failed;

static void check(const char *name, int ok)
{
    printf("%s - %s\n", ok ? "ok" : "not ok", name);
    if (ok)
        passed++;
    else
        failed++;
}

/* "N passed, M failed"; the exit status: 1 when a check failed or none ran. */
static int summary(void)
{
    printf("%d passed, %d failed\n", passed, failed);
    return failed || !passed ? 1 : 0;
}

/* Whether `c` gets a hit for `key` in `cache`, its value then in *v, *len
 * until *r is freed (which the caller does either way). */
static int get_hit(momento_client *c, const char *cache, const char *key, momento_result **r,
                   const void **v, size_t *len)
{
    if (momento_get_sync(c, cache, key, strlen(key), NULL, r) != MOMENTO_OK || !momento_result_is_hit(*r))
        return 0;
    *v = momento_result_value(*r, len);
    return 1;
}

/* Whether `c` reads `key` in `cache` as exactly `want`. */
static int value_is(momento_client *c, const char *cache, const char *key, const void *want, size_t want_len)
{
    momento_result *r;
    const void *v;
    size_t len;
    int ok = get_hit(c, cache, key, &r, &v, &len) && len == want_len && memcmp(v, want, len) == 0;
    momento_result_free(r);
    return ok;
}

#endif
