/* The examples' latency histogram: bucket geometry, the 1% error bound,
 * quantiles against an exact sort, and exact merging. */
#include "histogram.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

static void test_buckets_tile_the_range(void **state)
{
    (void)state;
    /* Consecutive buckets meet exactly: no gap, no overlap. */
    for (uint32_t i = 0; i + 1 < HIST_BUCKETS; i++)
        assert_int_equal(hist_bucket_high(i) + 1, hist_bucket_low(i + 1));
    /* Every value lands in the bucket whose range holds it. */
    uint64_t probes[] = {0, 1, 255, 256, 257, 511, 512, 1000, 123456, 99999999, 1ull << 40};
    for (size_t k = 0; k < sizeof(probes) / sizeof(probes[0]); k++) {
        uint32_t i = hist_index(probes[k]);
        assert_true(hist_bucket_low(i) <= probes[k] && probes[k] <= hist_bucket_high(i));
    }
}

static void test_relative_error_under_one_percent(void **state)
{
    (void)state;
    for (uint64_t v = 1; v < (1ull << 36); v = v * 3 / 2 + 1) {
        uint32_t i = hist_index(v);
        uint64_t width = hist_bucket_high(i) - hist_bucket_low(i);
        assert_true((double)width <= 0.01 * (double)v);
    }
}

static int cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void test_quantiles_match_exact_within_bound(void **state)
{
    (void)state;
    enum { N = 20000 };
    static uint64_t values[N];
    histogram h;
    hist_init(&h);
    uint64_t seed = 42;
    for (int i = 0; i < N; i++) {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        values[i] = 50 + seed % 200000; /* 50 us .. 200 ms */
        hist_record(&h, values[i]);
    }
    qsort(values, N, sizeof(values[0]), cmp);
    double qs[] = {0.5, 0.9, 0.99, 0.999};
    for (size_t k = 0; k < 4; k++) {
        size_t rank = (size_t)(qs[k] * N + 0.999999);
        uint64_t exact = values[rank - 1];
        uint64_t got = hist_quantile(&h, qs[k]);
        assert_true(got >= exact);
        assert_true((double)(got - exact) <= 0.01 * (double)exact);
    }
    assert_int_equal(hist_quantile(&h, 0), values[0]);
    assert_int_equal(hist_quantile(&h, 1), values[N - 1]);
    assert_int_equal(h.min, values[0]);
    assert_int_equal(h.max, values[N - 1]);
}

static void test_merge_is_exact(void **state)
{
    (void)state;
    histogram a, b, both;
    hist_init(&a);
    hist_init(&b);
    hist_init(&both);
    for (uint64_t v = 1; v < 100000; v += 37) {
        hist_record((v % 3) ? &a : &b, v);
        hist_record(&both, v);
    }
    hist_merge(&a, &b);
    assert_memory_equal(&a, &both, sizeof(a));
    histogram empty;
    hist_init(&empty);
    hist_merge(&a, &empty);
    assert_memory_equal(&a, &both, sizeof(a));
    assert_int_equal(hist_quantile(&empty, 0.5), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_buckets_tile_the_range),
        cmocka_unit_test(test_relative_error_under_one_percent),
        cmocka_unit_test(test_quantiles_match_exact_within_bound),
        cmocka_unit_test(test_merge_is_exact),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
