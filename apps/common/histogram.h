/* A log-linear latency histogram in the manner of HdrHistogram: values in
 * microseconds, exact below 256, and above that 128 sub-buckets per power of
 * two, so any recorded value is reported within 1/128 (< 0.8%) of itself.
 * Fixed size (no allocation), mergeable exactly by adding counts. Not
 * thread-safe: callers lock. */
#ifndef LG_HISTOGRAM_H
#define LG_HISTOGRAM_H

#include <stddef.h>
#include <stdint.h>

#define HIST_LINEAR 256u      /* values below this have their own bucket */
#define HIST_SUB 128u         /* sub-buckets per power of two above it */
#define HIST_MAX_SHIFT 40u    /* covers values up to 2^47 us (> 4 years) */
#define HIST_BUCKETS (HIST_LINEAR + HIST_MAX_SHIFT * HIST_SUB)

typedef struct histogram {
    uint64_t count;
    uint64_t min, max;
    uint64_t sum;             /* of the values recorded, for the mean */
    uint64_t buckets[HIST_BUCKETS];
} histogram;

void hist_init(histogram *h);
void hist_record(histogram *h, uint64_t value_us);
/* Adds every count of `src` into `dst`: the result is what recording both
 * streams into one histogram would have given. */
void hist_merge(histogram *dst, const histogram *src);
/* The value at quantile q in [0, 1]: the highest value equivalent to the
 * bucket holding the ceil(q * count)-th smallest recording, clamped to
 * [min, max]. 0 when empty. */
uint64_t hist_quantile(const histogram *h, double q);
/* Whether quantile q says more than the maximum: at least 1 / (1 - q)
 * recordings (100 for p99, 1000 for p99.9). A report prints "-" for one
 * that does not. */
int hist_has_quantile(const histogram *h, double q);
/* hist_quantile() as text into buf ("-" when !hist_has_quantile());
 * `scale` divides the value (1000 for microseconds shown as ms, printed
 * with three decimals; 1 for whole units). Returns buf. */
const char *hist_quantile_str(const histogram *h, double q, double scale, char *buf, size_t n);

/* Bucket index and the value range a bucket stands for: the bucket's
 * [low, high] is what load-gen's JSON writes, so a reader rebuilds the
 * histogram exactly (hist_index(low) is the bucket again). */
uint32_t hist_index(uint64_t value);
uint64_t hist_bucket_low(uint32_t index);
uint64_t hist_bucket_high(uint32_t index);

#endif
