/* libmomento's own threads, by name: a client's completion thread
 * ("momento-cq") and momento-local's server thread ("momento-srv") can be
 * seen in /proc/self/task while their owner is alive, and none is left once
 * momento_client_free() and momento_local_stop() have returned (or, for a
 * client freed from its own callback, once that thread has released it).
 *
 * valgrind/libmomento.supp hides the "possibly lost" DTV of a thread
 * still running at exit (glibc-dtv-of-a-thread-alive-at-exit): glibc hands
 * a joined thread's stack and DTV to the next thread created, so a gRPC
 * thread still tearing down shows up charged to momento_client_new(). This
 * test is what shows that the thread is never one of libmomento's. */
#include "testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include <time.h>

#define CQ_THREAD "momento-cq"
#define SERVER_THREAD "momento-srv"

/* Waits until `want` threads are named `name` (or, prefix, start with it),
 * within a bound long enough that only a count that really stays wrong can
 * exceed it, and fails listing every thread's name otherwise. Not a single
 * look: pthread_join() returns once the kernel has cleared the thread's id,
 * a moment before the task leaves /proc/self/task, and a thread gRPC starts
 * from one of ours begins with our thread's name and takes its own (gRPC
 * names all of its threads) a moment later. */
static void wait_threads(const char *name, bool prefix, int want)
{
    char names[2048];
    int n;
    tu_wait_until((n = tu_count_threads(name, prefix, names, sizeof names)) == want, 5000);
    if (n != want)
        fail_msg("%d threads named %s%s, expected %d (threads: %s)", n, name, prefix ? "*" : "",
                 want, names);
}

static void set_ok(momento_client *c)
{
    momento_result *r = NULL;
    assert_int_equal(momento_set_sync(c, "c", "k", 1, "v", 1, 0, NULL, &r), MOMENTO_OK);
    momento_result_free(r);
}

/* Each client has its one named thread while it lives, and it is gone once
 * momento_client_free() has returned; the server's likewise with
 * momento_local_stop(). Nothing named momento-* outlives them. */
static void test_threads_named_while_alive_gone_after_free(void **state)
{
    (void)state;
    wait_threads(CQ_THREAD, false, 0);
    wait_threads(SERVER_THREAD, false, 0);

    momento_local *server = tu_server_with_cache("c");
    wait_threads(SERVER_THREAD, false, 1);
    momento_client *a = tu_client(server, NULL);
    wait_threads(CQ_THREAD, false, 1);
    momento_client *b = tu_client(server, NULL);
    wait_threads(CQ_THREAD, false, 2);
    set_ok(a);
    set_ok(b);
    /* Threads gRPC started meanwhile (some from the completion thread)
     * carry gRPC's names, not these. */
    wait_threads(CQ_THREAD, false, 2);
    wait_threads(SERVER_THREAD, false, 1);

    momento_client_free(a);
    wait_threads(CQ_THREAD, false, 1);
    momento_client_free(b);
    wait_threads(CQ_THREAD, false, 0);
    wait_threads(SERVER_THREAD, false, 1);

    momento_local_stop(server);
    wait_threads(SERVER_THREAD, false, 0);
    wait_threads("momento-", true, 0);
}

/* Freed from its own callback, the client is released by its completion
 * thread, which nobody joins: that thread too ends by itself. */
static void test_thread_freed_from_its_callback_ends(void **state)
{
    (void)state;
    momento_local *server = tu_server_with_cache("c");
    tu_freer f;
    tu_counter_init(&f.k);
    f.client = tu_client(server, NULL);
    wait_threads(CQ_THREAD, false, 1);
    assert_int_equal(momento_get(f.client, "c", "k", 1, NULL, tu_free_client_cb, &f), MOMENTO_OK);
    assert_int_equal(tu_counter_wait(&f.k, 1, (int)TU_MS(10000)), 1);
    wait_threads(CQ_THREAD, false, 0);
    tu_counter_destroy(&f.k);
    momento_local_stop(server);
    wait_threads("momento-", true, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_threads_named_while_alive_gone_after_free),
        cmocka_unit_test(test_thread_freed_from_its_callback_ends),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
