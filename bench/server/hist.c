/* SPDX-License-Identifier: MIT */
/* bench/server/hist.c: the log-linear histogram (hist.h). */
#include "hist.h"

#include <string.h>

void hist_init(hist_t *h) {
  memset(h, 0, sizeof *h);
  h->min = UINT64_MAX;
}

/* Values below HIST_SUB have a bucket each; above, the value's most
 * significant bit m selects a group of HIST_SUB buckets and the next
 * HIST_SUB_BITS bits the bucket in it. The groups follow each other, so the
 * index grows with the value. */
unsigned hist_index(uint64_t v) {
  if (v < HIST_SUB) return (unsigned)v;
  unsigned msb = 63u - (unsigned)__builtin_clzll(v);
  unsigned shift = msb - HIST_SUB_BITS;
  return (shift + 1) * HIST_SUB + (unsigned)((v >> shift) - HIST_SUB);
}

uint64_t hist_bucket_low(unsigned idx) {
  if (idx < HIST_SUB) return idx;
  unsigned shift = idx / HIST_SUB - 1;
  return ((uint64_t)HIST_SUB + idx % HIST_SUB) << shift;
}

uint64_t hist_bucket_high(unsigned idx) {
  if (idx < HIST_SUB) return idx;
  unsigned shift = idx / HIST_SUB - 1;
  return hist_bucket_low(idx) + ((uint64_t)1 << shift) - 1;
}

void hist_record(hist_t *h, uint64_t v) {
  h->bucket[hist_index(v)]++;
  h->count++;
  h->sum += (double)v;
  if (v > h->max) h->max = v;
  if (v < h->min) h->min = v;
}

void hist_merge(hist_t *dst, const hist_t *src) {
  for (unsigned i = 0; i < HIST_BUCKETS; i++)
    dst->bucket[i] += src->bucket[i];
  dst->count += src->count;
  dst->sum += src->sum;
  if (src->max > dst->max) dst->max = src->max;
  if (src->min < dst->min) dst->min = src->min;
}

uint64_t hist_quantile(const hist_t *h, double q) {
  if (h->count == 0) return 0;
  if (q < 0) q = 0;
  if (q > 1) q = 1;
  uint64_t rank = (uint64_t)(q * (double)h->count + 0.999999999);
  if (rank < 1) rank = 1;
  if (rank > h->count) rank = h->count;
  uint64_t seen = 0;
  for (unsigned i = 0; i < HIST_BUCKETS; i++) {
    seen += h->bucket[i];
    if (seen >= rank) {
      uint64_t hi = hist_bucket_high(i);
      if (hi > h->max) hi = h->max;
      if (hi < h->min) hi = h->min;
      return hi;
    }
  }
  return h->max;
}

double hist_mean(const hist_t *h) { return h->count ? h->sum / (double)h->count : 0.0; }
