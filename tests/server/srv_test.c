/* Helpers momento-local's tests share (srv_test.h). */
#include "srv_test.h"

#include "testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

momento_local_options *srv_options(const char *cache)
{
    momento_local_options *o = NULL;
    assert_int_equal(momento_local_options_new(&o), MOMENTO_OK);
    if (cache)
        assert_int_equal(momento_local_options_add_cache(o, cache), MOMENTO_OK);
    return o;
}

momento_local *srv_start(momento_local_options *o)
{
    momento_local *s = tu_server(o);
    momento_local_options_free(o);
    return s;
}
