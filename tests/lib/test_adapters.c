/* The event-loop adapters (momento/adapters/libuv.h, libevent.h) with real
 * loops against the local server: every callback runs on the loop's thread
 * inside the loop, requests submitted from callbacks keep the loop going,
 * and the last callback can detach and free the client, which ends the
 * loop. */
#include "momento/adapters/libevent.h"
#include "momento/adapters/libuv.h"
#include "momento/coalescer.h"
#include "testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <string.h>

static momento_client *dispatch_client(void)
{
    momento_config *cfg = tu_config();
    momento_config_set_dispatch(cfg, 1);
    momento_config_set_timeout_ms(cfg, (uint32_t)TU_MS(5000));
    momento_client *c = tu_client(tu_fx.server, cfg);
    momento_config_free(cfg);
    return c;
}

/* A chain of requests driven from callbacks: each set's callback issues a
 * get, each get's the next set, until `total` requests have completed;
 * then the last callback detaches and frees the client. */
typedef struct chain {
    momento_client *client;
    momento_coalescer *co;
    pthread_t loop_thread;
    int total, done, hits, errors, late;
    bool wrong_thread, in_loop, outside_loop, finished;
    void (*detach)(struct chain *);
    momento_uv uv;
    momento_libevent ev;
} chain;

static void step(const momento_result *r, void *ud);

static void next(chain *k)
{
    char key[16];
    snprintf(key, sizeof(key), "k%d", k->done / 2);
    int rc = k->done % 2 == 0
                 ? momento_set(k->client, "c", key, strlen(key), "v", 1, 0, NULL, step, k)
                 : momento_coalescing_get(k->co, "c", key, strlen(key), NULL, step, k);
    if (rc != MOMENTO_OK)
        k->errors++;
}

static void step(const momento_result *r, void *ud)
{
    chain *k = ud;
    if (!pthread_equal(pthread_self(), k->loop_thread))
        k->wrong_thread = true;
    if (!k->in_loop)
        k->outside_loop = true;
    if (k->finished) {
        /* The other chains' last requests: answered already and queued,
         * or ended by the free; either way called back once, here. */
        k->late++;
        return;
    }
    if (momento_result_error(r) != MOMENTO_OK)
        k->errors++;
    k->hits += momento_result_is_hit(r);
    if (++k->done < k->total) {
        next(k);
        return;
    }
    /* The last one: the loop has nothing left once the client is gone. */
    k->finished = true;
    k->detach(k);
    momento_coalescer_free(k->co);
    momento_client_free(k->client);
}

static void uv_detach(chain *k)
{
    momento_uv_detach(&k->uv, NULL);
}

static void test_libuv_loop(void **state)
{
    (void)state;
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    chain k = {.client = dispatch_client(), .total = 200, .detach = uv_detach,
               .loop_thread = pthread_self()};
    assert_int_equal(momento_coalescer_new(&k.co, k.client), MOMENTO_OK);
    assert_int_equal(momento_uv_attach(&k.uv, &loop, k.client), MOMENTO_OK);
    for (int i = 0; i < 4; i++) /* four chains interleaved */
        next(&k);
    k.done = 0;
    k.total = 200;
    k.in_loop = true;
    /* Runs until the handle is closed: the last callback detaches. */
    assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
    k.in_loop = false;
    assert_int_equal(k.done, 200);
    assert_int_equal(k.errors, 0);
    assert_true(k.hits >= 90);
    assert_int_equal(k.late, 3); /* each of the other chains' one in flight */
    assert_false(k.wrong_thread);
    assert_false(k.outside_loop);
    assert_int_equal(uv_loop_close(&loop), 0);

    /* A client not in dispatch mode cannot be attached. */
    momento_client *plain = tu_client(tu_fx.server, NULL);
    momento_uv a;
    uv_loop_init(&loop);
    assert_int_equal(momento_uv_attach(&a, &loop, plain), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_uv_attach(NULL, &loop, plain), MOMENTO_ERR_INVALID_ARGUMENT);
    uv_loop_close(&loop);
    momento_client_free(plain);
}

static void ev_detach(chain *k)
{
    momento_libevent_detach(&k->ev);
}

static void test_libevent_loop(void **state)
{
    (void)state;
    struct event_base *base = event_base_new();
    assert_non_null(base);
    chain k = {.client = dispatch_client(), .total = 200, .detach = ev_detach,
               .loop_thread = pthread_self()};
    assert_int_equal(momento_coalescer_new(&k.co, k.client), MOMENTO_OK);
    assert_int_equal(momento_libevent_attach(&k.ev, base, k.client), MOMENTO_OK);
    for (int i = 0; i < 4; i++)
        next(&k);
    k.done = 0;
    k.in_loop = true;
    /* Returns 1 when no events are left: the last callback deleted ours. */
    assert_int_equal(event_base_dispatch(base), 1);
    k.in_loop = false;
    assert_int_equal(k.done, 200);
    assert_int_equal(k.errors, 0);
    assert_true(k.hits >= 90);
    assert_int_equal(k.late, 3);
    assert_false(k.wrong_thread);
    assert_false(k.outside_loop);
    event_base_free(base);

    momento_client *plain = tu_client(tu_fx.server, NULL);
    momento_libevent a;
    base = event_base_new();
    assert_int_equal(momento_libevent_attach(&a, base, plain), MOMENTO_ERR_INVALID_ARGUMENT);
    event_base_free(base);
    momento_client_free(plain);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_libuv_loop),
        cmocka_unit_test(test_libevent_loop),
    };
    return cmocka_run_group_tests(tests, tu_fixture_setup_server, tu_fixture_teardown);
}
