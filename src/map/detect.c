/* SPDX-License-Identifier: MIT */
/* The address table and the communication matrix of [Pasqualin20]'s
 * detection (detect.h). */
#define _GNU_SOURCE
#include "map/detect.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>

/* The state word of a slot: how many sharers it has seen (0, 1 or 2, as
 * Algorithm 1's getAccesses), the most recent one (t1) and the one before
 * (t2):
 *   bits 0..1    count, at most 2
 *   bits 16..31  t1
 *   bits 32..47  t2
 * One word, so that one compare-and-swap moves an address from one
 * Algorithm 1 state to the next. */
#define ST_COUNT(s) ((unsigned)((s)&3u))
#define ST_T1(s) ((unsigned)(((s) >> 16) & 0xffffu))
#define ST_T2(s) ((unsigned)(((s) >> 32) & 0xffffu))
#define ST_MAKE(n, t1, t2) ((uint64_t)(n) | ((uint64_t)(t1) << 16) | ((uint64_t)(t2) << 32))

static void *zmap(size_t bytes) {
  void *m =
      mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return m == MAP_FAILED ? NULL : m;
}

int sstm__map_detect_init(sstm_map_detect_t *d, unsigned bits, unsigned order) {
  memset(d, 0, sizeof *d);
  if (bits < 4 || bits > 30 || order < 1 || order > SSTM_MAP_TID_MAX + 1u) {
    errno = EINVAL;
    return -1;
  }
  size_t slots = (size_t)1 << bits;
  /* The sizes first: a failed mapping's fini unmaps the others whole. */
  d->mask = slots - 1;
  d->order = order;
  d->keys = zmap(slots * sizeof *d->keys);
  d->state = zmap(slots * sizeof *d->state);
  d->matrix = zmap((size_t)order * order * sizeof *d->matrix);
  if (d->keys == NULL || d->state == NULL || d->matrix == NULL) {
    sstm__map_detect_fini(d);
    errno = ENOMEM;
    return -1;
  }
  /* Zero pages are zero atomics (lock-free 64-bit): no initialising store. */
  return 0;
}

void sstm__map_detect_fini(sstm_map_detect_t *d) {
  size_t slots = d->keys || d->state ? (size_t)d->mask + 1 : 0;
  if (d->keys) munmap((void *)d->keys, slots * sizeof *d->keys);
  if (d->state) munmap((void *)d->state, slots * sizeof *d->state);
  if (d->matrix) munmap((void *)d->matrix, (size_t)d->order * d->order * sizeof *d->matrix);
  memset(d, 0, sizeof *d);
}

/* A 64-bit mix (the finaliser of MurmurHash3): neighbouring words land on
 * unrelated slots, so a structure's consecutive fields do not form the
 * long runs that linear probing handles worst. */
static inline uint64_t mix(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdull;
  k ^= k >> 33;
  k *= 0xc4ceb9fe1a85ec53ull;
  k ^= k >> 33;
  return k;
}

/* The slot of key k (nonzero), claiming a free one; NULL when none is free
 * within SSTM_MAP_PROBE probes. Relaxed throughout: a key is written once
 * (0 -> k) and is the only thing a slot's claim publishes; its state word
 * starts at 0 whoever claims it, and all of an address's sharer facts live
 * in that one word, updated by its own read-modify-writes, which every
 * thread sees in one modification order whatever the orders. */
static _Atomic uint64_t *slot_of(sstm_map_detect_t *d, uint64_t k) {
  uint64_t i = mix(k) & d->mask;
  for (unsigned p = 0; p < SSTM_MAP_PROBE; p++, i = (i + 1) & d->mask) {
    uint64_t cur = atomic_load_explicit(&d->keys[i], memory_order_relaxed);
    if (cur == 0) {
      uint64_t zero = 0;
      if (atomic_compare_exchange_strong_explicit(&d->keys[i], &zero, k, memory_order_relaxed,
                                                  memory_order_relaxed)) {
        atomic_fetch_add_explicit(&d->used, 1, memory_order_relaxed);
        return &d->state[i];
      }
      cur = zero; /* another thread claimed it first: with our key? */
    }
    if (cur == k) return &d->state[i];
  }
  return NULL;
}

static inline void count(sstm_map_detect_t *d, unsigned a, unsigned b) {
  unsigned i = a < b ? a : b, j = a < b ? b : a;
  /* relaxed: a counter; readers want values, not an order with anything */
  atomic_fetch_add_explicit(&d->matrix[(size_t)i * d->order + j], 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&d->events, 1, memory_order_relaxed);
}

void sstm__map_detect_access(sstm_map_detect_t *d, const void *addr, unsigned tid) {
  if (tid >= d->order) return;
  uint64_t k = ((uint64_t)(uintptr_t)addr >> 3) + 1; /* + 1: never 0 */
  _Atomic uint64_t *st = slot_of(d, k);
  if (st == NULL) {
    atomic_fetch_add_explicit(&d->dropped, 1, memory_order_relaxed);
    return;
  }
  uint64_t s = atomic_load_explicit(st, memory_order_relaxed);
  unsigned e1, e2; /* the partners of this access's events, d->order = none */
  for (;;) {
    uint64_t n = s;
    unsigned t1 = ST_T1(s), t2 = ST_T2(s);
    e1 = e2 = d->order;
    switch (ST_COUNT(s)) {
    case 0: /* Algorithm 1, lines 3-5: the first access */ n = ST_MAKE(1, tid, 0); break;
    case 1: /* lines 6-12 */
      if (t1 != tid) {
        e1 = t1;
        n = ST_MAKE(2, tid, t1);
      }
      break;
    default: /* lines 13-26 */
      if (t1 != tid && t2 != tid) {
        e1 = t1;
        e2 = t2;
        n = ST_MAKE(2, tid, t1);
      } else if (t1 == tid) {
        e1 = t2; /* line 20: an event, the sharers unchanged */
      } else {
        e1 = t1; /* lines 22-24 */
        n = ST_MAKE(2, tid, t1);
      }
      break;
    }
    /* relaxed: see slot_of. A failed exchange reloads s and redoes the
     * step from the state another thread's access left. */
    if (n == s || atomic_compare_exchange_weak_explicit(st, &s, n, memory_order_relaxed,
                                                        memory_order_relaxed))
      break;
  }
  if (e1 < d->order) count(d, tid, e1);
  if (e2 < d->order) count(d, tid, e2);
}

uint64_t sstm__map_matrix_get(const sstm_map_detect_t *d, unsigned i, unsigned j) {
  if (i == j || i >= d->order || j >= d->order) return 0;
  unsigned a = i < j ? i : j, b = i < j ? j : i;
  return atomic_load_explicit(&d->matrix[(size_t)a * d->order + b], memory_order_relaxed);
}

void sstm__map_matrix_clear(sstm_map_detect_t *d, unsigned t, unsigned n) {
  if (t >= d->order) return;
  /* Only up to n: the cells of t's column sit one row (order cells) apart,
   * so clearing all of them would touch a page per row of the anonymous
   * mapping, allocating zero pages for nothing. */
  if (n > d->order) n = d->order;
  for (unsigned o = 0; o < n; o++) {
    if (o == t) continue;
    unsigned a = o < t ? o : t, b = o < t ? t : o;
    atomic_store_explicit(&d->matrix[(size_t)a * d->order + b], 0, memory_order_relaxed);
  }
}

uint64_t sstm__map_table_used(const sstm_map_detect_t *d) {
  return atomic_load_explicit(&d->used, memory_order_relaxed);
}
uint64_t sstm__map_table_dropped(const sstm_map_detect_t *d) {
  return atomic_load_explicit(&d->dropped, memory_order_relaxed);
}
uint64_t sstm__map_events(const sstm_map_detect_t *d) {
  return atomic_load_explicit(&d->events, memory_order_relaxed);
}

bool sstm__map_enable(uint64_t da, bool da_exact, uint64_t threshold, uint64_t aborts,
                      uint64_t commits) {
  /* A table that dropped addresses knows only a lower bound: the count is
   * then not trusted to be under the threshold. */
  if (da_exact && da < threshold) return true;
  return aborts > commits; /* cr < ar: both ratios share the denominator */
}
