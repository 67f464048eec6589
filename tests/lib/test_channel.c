/* channel.c: a channel replaced while a thread is between its load of the
 * slot's current channel and its reference on it is not destroyed under
 * that thread. No server: gRPC channels connect lazily, and none is used
 * for a call here. */
#include "transport/grpc/channel.h"
#include "momento/momento.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

static momento__channels chans;
static pthread_t paused_thread;
static atomic_int loaded;   /* the paused thread has loaded the channel */
static atomic_int replaced; /* the main thread has replaced it twice */

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

/* The test hook: the paused thread alone waits in the window, until the
 * main thread has replaced its channel (or 5 s, so that a channel.c that
 * blocks renewals in the window fails by its assertion, not a hang). */
static void pause_in_window(void)
{
    if (!pthread_equal(pthread_self(), paused_thread))
        return;
    atomic_store(&loaded, 1);
    for (int i = 0; i < 500 && !atomic_load(&replaced); i++)
        sleep_ms(10);
}

static void *take_paused(void *arg)
{
    (void)arg;
    return momento__channels_take(&chans, MOMENTO__PLANE_DATA);
}

/* Whether `mc` is still a channel of `chans`: the slot's current one or a
 * replaced one not yet destroyed. */
static bool alive(const momento__channel *mc)
{
    if (atomic_load(&chans.data[0].current) == mc)
        return true;
    bool found = false;
    pthread_mutex_lock(&chans.lock);
    for (const momento__channel *r = chans.retired; r; r = r->next_retired)
        found = found || r == mc;
    pthread_mutex_unlock(&chans.lock);
    return found;
}

/* The old momento__channels_take() loaded `slot->current`, then took its
 * reference, and the sweep destroyed a replaced channel without references
 * once 10 s had passed since the swap: a thread stopped longer than that
 * between the load and the reference (SIGSTOP, a VM or Lambda freeze)
 * incremented a freed channel and made its call on it. Here the pause is
 * the hook's and the replacements follow a 50 ms maximum age; the old code
 * (its grace made 0) failed the assertion on `got` below, and under ASan
 * with a use after free in momento__channels_take(). */
static void test_replaced_in_the_window(void **state)
{
    (void)state;
    momento_config *cfg;
    momento_credentials *creds;
    grpc_init();
    assert_int_equal(momento_config_new(&cfg), 0);
    assert_int_equal(momento_credentials_local(&creds, "127.0.0.1:9"), 0);
    assert_int_equal(momento__channels_open(&chans, cfg, creds), 0);
    chans.max_age_ns = 50 * 1000000ll; /* the config's least is 1 s */
    momento__channel_take_pause = pause_in_window;

    momento__channel *first = atomic_load(&chans.data[0].current);
    assert_int_equal(pthread_create(&paused_thread, NULL, take_paused, NULL), 0);
    while (!atomic_load(&loaded))
        sleep_ms(1);
    /* Two replacements: the second's sweep is the one that may destroy the
     * first channel, replaced by then and without references. */
    for (int i = 0; i < 2; i++) {
        momento__channel *before = atomic_load(&chans.data[0].current);
        sleep_ms(60);
        momento__channel *mine = momento__channels_take(&chans, MOMENTO__PLANE_DATA);
        assert_ptr_not_equal(mine, before);
        momento__channel_put(mine);
    }
    atomic_store(&replaced, 1);
    void *got;
    assert_int_equal(pthread_join(paused_thread, &got), 0);
    /* It loaded `first`; what it holds now must be a channel not destroyed
     * (the first, or the current one had it renewed on the way). */
    assert_true(alive(got));
    momento__channel_put(got);
    assert_ptr_not_equal(first, atomic_load(&chans.data[0].current));

    momento__channel_take_pause = NULL;
    momento__channels_close(&chans);
    momento_credentials_free(creds);
    momento_config_free(cfg);
    grpc_shutdown();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_replaced_in_the_window),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
