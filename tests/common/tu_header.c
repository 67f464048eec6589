/* tu_header() and tu_headers() (testutil.h): apart from testutil.c because it calls the
 * library's test hook momento__client_add_header(), which only the static
 * library exports; a test linking the shared one never pulls this in. */
#include "testing.h"
#include "testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

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
