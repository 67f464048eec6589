#include "histogram.h"

#include <stdio.h>

#include <string.h>

void hist_init(histogram *h)
{
    memset(h, 0, sizeof(*h));
    h->min = UINT64_MAX;
}

/* Above HIST_LINEAR, a value v with highest set bit b (b >= 8) falls into
 * group b - 7, and its top 8 bits pick one of 128 sub-buckets there. */
uint32_t hist_index(uint64_t v)
{
    if (v < HIST_LINEAR)
        return (uint32_t)v;
    unsigned shift = (unsigned)(63 - __builtin_clzll(v)) - 7; /* v >> shift in [128, 256) */
    if (shift > HIST_MAX_SHIFT)
        return HIST_BUCKETS - 1;
    return HIST_LINEAR + (shift - 1) * HIST_SUB + (uint32_t)((v >> shift) - HIST_SUB);
}

uint64_t hist_bucket_low(uint32_t i)
{
    if (i < HIST_LINEAR)
        return i;
    uint32_t shift = (i - HIST_LINEAR) / HIST_SUB + 1;
    uint64_t sub = (i - HIST_LINEAR) % HIST_SUB + HIST_SUB;
    return sub << shift;
}

uint64_t hist_bucket_high(uint32_t i)
{
    if (i < HIST_LINEAR)
        return i;
    uint32_t shift = (i - HIST_LINEAR) / HIST_SUB + 1;
    return hist_bucket_low(i) + (1ull << shift) - 1;
}

void hist_record(histogram *h, uint64_t v)
{
    h->buckets[hist_index(v)]++;
    h->count++;
    h->sum += v;
    if (v < h->min)
        h->min = v;
    if (v > h->max)
        h->max = v;
}

void hist_merge(histogram *dst, const histogram *src)
{
    if (!src->count)
        return;
    for (uint32_t i = 0; i < HIST_BUCKETS; i++)
        dst->buckets[i] += src->buckets[i];
    dst->count += src->count;
    dst->sum += src->sum;
    if (src->min < dst->min)
        dst->min = src->min;
    if (src->max > dst->max)
        dst->max = src->max;
}

uint64_t hist_quantile(const histogram *h, double q)
{
    if (!h->count)
        return 0;
    if (q <= 0)
        return h->min;
    if (q >= 1)
        return h->max;
    uint64_t rank = (uint64_t)(q * (double)h->count);
    if ((double)rank < q * (double)h->count)
        rank++; /* ceil */
    if (rank == 0)
        rank = 1;
    uint64_t seen = 0;
    for (uint32_t i = 0; i < HIST_BUCKETS; i++) {
        seen += h->buckets[i];
        if (seen >= rank) {
            uint64_t v = hist_bucket_high(i);
            if (v > h->max)
                v = h->max;
            if (v < h->min)
                v = h->min;
            return v;
        }
    }
    return h->max;
}

int hist_has_quantile(const histogram *h, double q)
{
    return q < 1 && (double)h->count * (1 - q) >= 1 - 1e-9;
}

const char *hist_quantile_str(const histogram *h, double q, double scale, char *buf, size_t n)
{
    if (!hist_has_quantile(h, q))
        snprintf(buf, n, "-");
    else if (scale == 1)
        snprintf(buf, n, "%llu", (unsigned long long)hist_quantile(h, q));
    else
        snprintf(buf, n, "%.3f", (double)hist_quantile(h, q) / scale);
    return buf;
}
