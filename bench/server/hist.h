/* SPDX-License-Identifier: MIT */
/* bench/server/hist.h: a log-linear latency histogram (the layout of
 * HdrHistogram: each power of two split into HIST_SUB linear buckets, so
 * every recorded value is kept to within 1/HIST_SUB = 3.1 % of itself, from
 * 1 ns to 2^64 ns, in a fixed 15 KiB). Not thread-safe: one writer. */
#ifndef SSTM_BENCH_HIST_H
#define SSTM_BENCH_HIST_H

#include <stdint.h>

#define HIST_SUB_BITS 5
#define HIST_SUB (1u << HIST_SUB_BITS)
#define HIST_BUCKETS ((64 - HIST_SUB_BITS + 1) * HIST_SUB)

typedef struct hist {
  uint64_t count, max, min;
  double sum; /* for the mean; a double holds 2^53 ns = 104 days exactly */
  uint64_t bucket[HIST_BUCKETS];
} hist_t;

void hist_init(hist_t *h);
void hist_record(hist_t *h, uint64_t v);
/* Adds every value of src to dst. */
void hist_merge(hist_t *dst, const hist_t *src);
/* The value at quantile q in [0, 1]: the upper bound of the bucket that
 * holds the ceil(q * count)-th smallest value, capped at the maximum
 * (an over-estimate by at most one bucket width). 0 when empty. */
uint64_t hist_quantile(const hist_t *h, double q);
double hist_mean(const hist_t *h);

/* Bucket index of v, and the smallest and largest value of a bucket
 * (exposed for the tests). */
unsigned hist_index(uint64_t v);
uint64_t hist_bucket_low(unsigned idx);
uint64_t hist_bucket_high(unsigned idx);

#endif /* SSTM_BENCH_HIST_H */
