/* SPDX-License-Identifier: MIT */
/* bench/ds/intset_impl.h: the per-structure operation table behind
 * intset.h (internal to bench/ds). */
#ifndef BENCH_INTSET_IMPL_H
#define BENCH_INTSET_IMPL_H

#include <stdint.h>

#include "intset.h"
#include "tm.h"

typedef struct intset_ops {
  const char *name; /* the kind's name (-S), kept with its functions */
  void *(*create)(const intset_params_t *p);
  void (*destroy)(void *impl);
  bool (*add)(void *impl, long key);
  bool (*remove)(void *impl, long key);
  bool (*contains)(void *impl, long key);
  size_t (*size)(const void *impl);
  int (*check)(const void *impl, char *err, size_t errlen);
} intset_ops_t;

extern const intset_ops_t intset_ll_ops;
extern const intset_ops_t intset_sl_ops;
extern const intset_ops_t intset_rb_ops;
extern const intset_ops_t intset_hs_ops;
extern const intset_ops_t intset_rb_aw_ops;
extern const intset_ops_t intset_sl_aw_ops;

/* Out of memory inside a transaction: print a message and abort the
 * process (a benchmark has nothing better to do). */
TM_PURE void intset_out_of_memory(void) __attribute__((noreturn));

/* 64-bit mixer (murmur3 finaliser): spreads neighbouring keys. */
static inline uint64_t intset_mix(long key) {
  uint64_t x = (uint64_t)key;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

#endif /* BENCH_INTSET_IMPL_H */
