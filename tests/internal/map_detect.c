/* SPDX-License-Identifier: MIT */
/* Internal tests: the detection of [Pasqualin20] (src/map/detect.c), driven
 * by access streams of the test's own, without the engine:
 *  - the address table and matrix against a reference model of Algorithm 1
 *    (a plain array of per-address sharers, written from the paper's
 *    pseudo-code line by line) on random streams over several address
 *    ranges and thread counts: every matrix entry and the event total equal;
 *  - the patterns whose matrices are known by hand (a ring of neighbours,
 *    pairs, one thread alone, repeated accesses by one thread);
 *  - several threads at once on disjoint addresses: each thread's events
 *    exactly as alone; on shared addresses: the matrix stays symmetric, the
 *    events total what the entries sum to;
 *  - a full table: the addresses that find no slot count nothing and are
 *    reported as dropped; the heuristic then distrusts the count;
 *  - Equation 1 on constructed inputs, and a newcomer's cleared row.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "../common/runner.h"
#include "map/detect.h"

/* ---- the reference: Algorithm 1 as printed ---- */

typedef struct ref_elem {
  unsigned accesses; /* 0, 1 or 2 */
  unsigned t1, t2;
} ref_elem_t;

typedef struct ref {
  unsigned naddr, order;
  ref_elem_t *e;
  uint64_t *m; /* order x order, symmetric */
  uint64_t events;
} ref_t;

static void update_comm_matrix(ref_t *r, unsigned a, unsigned b) {
  r->m[a * r->order + b]++;
  r->m[b * r->order + a]++;
  r->events++;
}

static void ref_access(ref_t *r, unsigned addr, unsigned tid) {
  ref_elem_t *elem = &r->e[addr];     /* 1: getAddressInfo */
  unsigned accesses = elem->accesses; /* 2 */
  if (accesses == 0) {                /* 3 */
    elem->t1 = tid;                   /* 4 */
    elem->accesses = 1;
  }
  if (accesses == 1) {                      /* 6 */
    if (elem->t1 != tid) {                  /* 7 */
      update_comm_matrix(r, tid, elem->t1); /* 8 */
      elem->t2 = elem->t1;                  /* 9 */
      elem->t1 = tid;                       /* 10 */
      elem->accesses = 2;
    }
  }
  if (accesses == 2) {                        /* 13 */
    if (elem->t1 != tid && elem->t2 != tid) { /* 14 */
      update_comm_matrix(r, tid, elem->t1);   /* 15 */
      update_comm_matrix(r, tid, elem->t2);   /* 16 */
      elem->t2 = elem->t1;                    /* 17 */
      elem->t1 = tid;                         /* 18 */
    } else if (elem->t1 == tid) {             /* 19 */
      update_comm_matrix(r, tid, elem->t2);   /* 20 */
    } else if (elem->t2 == tid) {             /* 21 */
      update_comm_matrix(r, tid, elem->t1);   /* 22 */
      elem->t2 = elem->t1;                    /* 23 */
      elem->t1 = tid;                         /* 24 */
    }
  }
}

static void ref_init(ref_t *r, unsigned naddr, unsigned order) {
  r->naddr = naddr;
  r->order = order;
  r->e = calloc(naddr, sizeof *r->e);
  r->m = calloc((size_t)order * order, sizeof *r->m);
  r->events = 0;
  CHECK(r->e && r->m);
}

static void ref_fini(ref_t *r) {
  free(r->e);
  free(r->m);
}

/* Word-aligned addresses of a buffer, addr i at base + 8 i. */
static uint64_t space[1 << 16];
#define ADDR(i) ((const void *)&space[(i)])

static void check_same(const sstm_map_detect_t *d, const ref_t *r) {
  for (unsigned i = 0; i < r->order; i++)
    for (unsigned j = 0; j < r->order; j++) {
      uint64_t want = i == j ? 0 : r->m[i * r->order + j];
      uint64_t got = sstm__map_matrix_get(d, i, j);
      CHECK_MSG(got == want, "matrix[%u][%u] = %llu, the reference says %llu", i, j,
                (unsigned long long)got, (unsigned long long)want);
    }
  CHECK_EQ_U(sstm__map_events(d), r->events);
}

TEST(matches_reference_on_random_streams) {
  sstm_rng_t rng;
  sstm_rng_seed(&rng, sstm_test_seed());
  static const unsigned naddrs[] = {1, 2, 7, 64, 1000, 20000};
  static const unsigned orders[] = {2, 3, 5, 16, 64};
  for (size_t a = 0; a < sizeof naddrs / sizeof naddrs[0]; a++)
    for (size_t o = 0; o < sizeof orders / sizeof orders[0]; o++) {
      sstm_map_detect_t d;
      CHECK_EQ_I(sstm__map_detect_init(&d, 16, orders[o]), 0);
      ref_t r;
      ref_init(&r, naddrs[a], orders[o]);
      /* Skewed streams: runs of one thread, then switches, so that every
       * branch of Algorithm 1 is taken many times. */
      unsigned n = (unsigned)sstm_test_scaled(50000, 5000), tid = 0;
      for (unsigned k = 0; k < n; k++) {
        if (sstm_rng_below(&rng, 4) == 0) tid = (unsigned)sstm_rng_below(&rng, orders[o]);
        unsigned addr = (unsigned)sstm_rng_below(&rng, naddrs[a]);
        ref_access(&r, addr, tid);
        sstm__map_detect_access(&d, ADDR(addr), tid);
      }
      check_same(&d, &r);
      unsigned distinct = 0;
      for (unsigned i = 0; i < naddrs[a]; i++)
        distinct += r.e[i].accesses > 0;
      CHECK_EQ_U(sstm__map_table_used(&d), distinct);
      CHECK_EQ_U(sstm__map_table_dropped(&d), 0);
      ref_fini(&r);
      sstm__map_detect_fini(&d);
    }
}

TEST(known_patterns) {
  sstm_map_detect_t d;
  CHECK_EQ_I(sstm__map_detect_init(&d, 12, 8), 0);
  /* One thread alone, any number of times: no event. */
  for (int k = 0; k < 10; k++)
    sstm__map_detect_access(&d, ADDR(0), 3);
  CHECK_EQ_U(sstm__map_events(&d), 0);
  /* Neighbours in a ring: thread t and t+1 share address t (t, then t+1,
   * each once): one event per neighbour pair. */
  for (unsigned t = 0; t < 8; t++) {
    sstm__map_detect_access(&d, ADDR(100 + t), t);
    sstm__map_detect_access(&d, ADDR(100 + t), (t + 1) % 8);
  }
  for (unsigned i = 0; i < 8; i++)
    for (unsigned j = 0; j < 8; j++) {
      bool nb = (j == (i + 1) % 8) || (i == (j + 1) % 8);
      CHECK_EQ_U(sstm__map_matrix_get(&d, i, j), nb ? 1 : 0);
    }
  /* A, B, A, A: B-A (line 8), A-B (line 22), then A is t1: A-B again
   * (line 20) at every repeated access of A. */
  sstm__map_detect_access(&d, ADDR(200), 0);
  sstm__map_detect_access(&d, ADDR(200), 4);
  sstm__map_detect_access(&d, ADDR(200), 0);
  sstm__map_detect_access(&d, ADDR(200), 0);
  sstm__map_detect_access(&d, ADDR(200), 0);
  CHECK_EQ_U(sstm__map_matrix_get(&d, 0, 4), 4);
  CHECK_EQ_U(sstm__map_matrix_get(&d, 4, 0), 4);
  /* A third thread: events with both sharers (lines 15-16). */
  sstm__map_detect_access(&d, ADDR(200), 6);
  CHECK_EQ_U(sstm__map_matrix_get(&d, 6, 0), 1);
  CHECK_EQ_U(sstm__map_matrix_get(&d, 6, 4), 1);
  /* Threads past the matrix's order count nothing. */
  uint64_t ev = sstm__map_events(&d);
  sstm__map_detect_access(&d, ADDR(200), 8);
  sstm__map_detect_access(&d, ADDR(200), 1000);
  CHECK_EQ_U(sstm__map_events(&d), ev);
  /* Bytes of one word are one address; the next word is another. */
  sstm__map_detect_access(&d, (const char *)ADDR(300) + 1, 5);
  sstm__map_detect_access(&d, (const char *)ADDR(300) + 7, 7);
  sstm__map_detect_access(&d, ADDR(301), 2);
  CHECK_EQ_U(sstm__map_matrix_get(&d, 5, 7), 1);
  CHECK_EQ_U(sstm__map_matrix_get(&d, 7, 2), 0);
  /* A newcomer in slot 0 starts clean; the others keep their entries.
   * The clear goes up to the bound it is given: with 5, the pair (0, 6)
   * keeps its count, with 8 (the order) nothing of 0's is left. */
  CHECK_EQ_U(sstm__map_matrix_get(&d, 0, 6), 1);
  sstm__map_matrix_clear(&d, 0, 5);
  for (unsigned j = 0; j < 5; j++)
    CHECK_EQ_U(sstm__map_matrix_get(&d, 0, j), 0);
  CHECK_EQ_U(sstm__map_matrix_get(&d, 0, 6), 1);
  sstm__map_matrix_clear(&d, 0, 99); /* beyond the order: up to it */
  for (unsigned j = 0; j < 8; j++)
    CHECK_EQ_U(sstm__map_matrix_get(&d, 0, j), 0);
  CHECK_EQ_U(sstm__map_matrix_get(&d, 4, 6), 1);
  sstm__map_detect_fini(&d);
}

TEST(bad_arguments) {
  sstm_map_detect_t d;
  CHECK_EQ_I(sstm__map_detect_init(&d, 3, 4), -1);
  CHECK_EQ_I(sstm__map_detect_init(&d, 31, 4), -1);
  CHECK_EQ_I(sstm__map_detect_init(&d, 10, 0), -1);
  CHECK_EQ_I(sstm__map_detect_init(&d, 10, SSTM_MAP_TID_MAX + 2), -1);
  CHECK_EQ_I(sstm__map_detect_init(&d, 10, 4), 0);
  CHECK_EQ_U(sstm__map_matrix_get(&d, 1, 1), 0);
  CHECK_EQ_U(sstm__map_matrix_get(&d, 1, 9), 0);
  sstm__map_detect_fini(&d);
  sstm__map_detect_fini(&d); /* twice: nothing */
}

/* The process's address space in KiB (VmSize). */
static long vm_kib(void) {
  FILE *f = fopen("/proc/self/status", "r");
  CHECK_NOT_NULL(f);
  char line[256];
  long kib = -1;
  while (kib < 0 && fgets(line, sizeof line, f))
    if (sscanf(line, "VmSize: %ld kB", &kib) != 1) kib = -1;
  fclose(f);
  CHECK_GE_I(kib, 0);
  return kib;
}

/* An init that fails midway (the matrix cannot be mapped: an address-space
 * limit, as `ulimit -v` sets) unmaps the table it had mapped: a caller that
 * retries with a smaller order has the whole limit for it. The table's two
 * arrays took 256 MiB here; the failed init unmapped a page of each. */
TEST(a_failed_init_leaves_nothing_mapped) {
  struct rlimit old;
  CHECK_EQ_I(getrlimit(RLIMIT_AS, &old), 0);
  long before = vm_kib();
  /* room for the table (2 x 2^24 slots of 8 bytes), not for the matrix of
   * 2^16 x 2^16 cells (32 GiB) */
  struct rlimit lim = {.rlim_cur = (rlim_t)before * 1024 + (512ul << 20), .rlim_max = old.rlim_max};
  if (old.rlim_cur != RLIM_INFINITY && old.rlim_cur < lim.rlim_cur)
    sstm_test_skip("an address-space limit is already set");
  CHECK_EQ_I(setrlimit(RLIMIT_AS, &lim), 0);
  sstm_map_detect_t d;
  int rc = sstm__map_detect_init(&d, 24, SSTM_MAP_TID_MAX + 1);
  int err = errno;
  CHECK_EQ_I(setrlimit(RLIMIT_AS, &old), 0);
  CHECK_EQ_I(rc, -1);
  CHECK_EQ_I(err, ENOMEM);
  CHECK_NULL(d.keys);
  CHECK_LT_I(vm_kib() - before, 64 * 1024); /* not the table's 256 MiB */
  sstm__map_detect_fini(&d);                /* nothing left: a no-op */
}

TEST(full_table_drops_and_counts_nothing) {
  sstm_map_detect_t d;
  CHECK_EQ_I(sstm__map_detect_init(&d, 4, 4), 0); /* 16 slots */
  for (unsigned a = 0; a < 200; a++) {
    sstm__map_detect_access(&d, ADDR(a), 0);
    sstm__map_detect_access(&d, ADDR(a), 1);
  }
  uint64_t used = sstm__map_table_used(&d);
  CHECK_EQ_U(used, 16);
  CHECK_GT_U(sstm__map_table_dropped(&d), 0);
  /* Each address that got a slot counted one 1-0 event; the others none. */
  CHECK_EQ_U(sstm__map_matrix_get(&d, 0, 1), used);
  CHECK_EQ_U(sstm__map_table_dropped(&d), 2 * (200 - used));
  /* Equation 1 with a lower bound of distinct addresses: not trusted
   * under the threshold, so the ratios decide. */
  CHECK_FALSE(sstm__map_enable(used, false, 10000, 1, 5));
  CHECK_TRUE(sstm__map_enable(used, false, 10000, 6, 5));
  CHECK_TRUE(sstm__map_enable(used, true, 10000, 1, 5));
  sstm__map_detect_fini(&d);
}

TEST(equation_1_on_constructed_inputs) {
  /* da < threshold: on, whatever the ratios. */
  CHECK_TRUE(sstm__map_enable(0, true, 10000, 0, 0));
  CHECK_TRUE(sstm__map_enable(9999, true, 10000, 0, 1000000));
  /* da >= threshold: on only when the abort ratio exceeds the commit ratio. */
  CHECK_FALSE(sstm__map_enable(10000, true, 10000, 0, 1000000));
  CHECK_FALSE(sstm__map_enable(10000, true, 10000, 500, 500)); /* cr >= ar: off */
  CHECK_TRUE(sstm__map_enable(10000, true, 10000, 501, 500));
  CHECK_FALSE(sstm__map_enable(50000, true, 10000, 0, 0)); /* an empty window */
  CHECK_TRUE(sstm__map_enable(50000, true, 10000, 1, 0));
  /* A threshold of 0: never on by the count. */
  CHECK_FALSE(sstm__map_enable(0, true, 0, 3, 4));
  CHECK_TRUE(sstm__map_enable(0, true, 0, 5, 4));
}

/* ---- several threads at once ---- */

typedef struct worker {
  sstm_map_detect_t *d;
  unsigned tid, base, naddr, n, partner;
  uint64_t seed;
} worker_t;

/* Pairs (2k, 2k+1) share a private range of addresses: the pair's events
 * depend only on the interleaving of the two, which the reference cannot
 * know; what it can know: no event crosses pairs. */
static void *pair_worker(void *p) {
  worker_t *w = p;
  sstm_rng_t rng;
  sstm_rng_seed(&rng, w->seed);
  for (unsigned k = 0; k < w->n; k++)
    sstm__map_detect_access(w->d, ADDR(w->base + sstm_rng_below(&rng, w->naddr)), w->tid);
  return NULL;
}

TEST(concurrent_threads_pairs_stay_pairs) {
  enum { T = 8 };
  sstm_map_detect_t d;
  CHECK_EQ_I(sstm__map_detect_init(&d, 14, T), 0);
  pthread_t th[T];
  worker_t w[T];
  for (unsigned t = 0; t < T; t++) {
    w[t] = (worker_t){.d = &d,
                      .tid = t,
                      .base = (t / 2) * 512,
                      .naddr = 64,
                      .n = (unsigned)sstm_test_scaled(200000, 20000),
                      .seed = sstm_test_seed() + t};
    CHECK_EQ_I(pthread_create(&th[t], NULL, pair_worker, &w[t]), 0);
  }
  for (unsigned t = 0; t < T; t++)
    pthread_join(th[t], NULL);
  uint64_t sum = 0;
  for (unsigned i = 0; i < T; i++)
    for (unsigned j = i + 1; j < T; j++) {
      uint64_t v = sstm__map_matrix_get(&d, i, j);
      CHECK_EQ_U(v, sstm__map_matrix_get(&d, j, i));
      if (j != i + 1 || i % 2)
        CHECK_MSG(v == 0, "pairs (%u, %u) crossed: %llu", i, j, (unsigned long long)v);
      sum += v;
    }
  CHECK_EQ_U(sum, sstm__map_events(&d));
  CHECK_EQ_U(sstm__map_table_used(&d), 64 * T / 2);
  /* Sequential consistency per address: a pair's events lie between what
   * a perfectly alternating stream and a perfectly blocked one give; in
   * particular some were counted. */
  for (unsigned i = 0; i < T; i += 2)
    CHECK_GT_U(sstm__map_matrix_get(&d, i, i + 1), 0);
  sstm__map_detect_fini(&d);
}

/* Every thread alone on its own addresses, all at once: exactly what the
 * reference says each stream gives alone (here: none, one thread per
 * address), and the table holds every address once despite concurrent
 * claims of neighbouring slots. */
static void *solo_worker(void *p) {
  worker_t *w = p;
  for (unsigned k = 0; k < w->n; k++)
    sstm__map_detect_access(w->d, ADDR(w->base + k % w->naddr), w->tid);
  return NULL;
}

TEST(concurrent_claims_of_one_table) {
  enum { T = 4 };
  sstm_map_detect_t d;
  CHECK_EQ_I(sstm__map_detect_init(&d, 16, T), 0);
  pthread_t th[T];
  worker_t w[T];
  for (unsigned t = 0; t < T; t++) {
    w[t] = (worker_t){.d = &d, .tid = t, .base = t * 4096, .naddr = 4096, .n = 3 * 4096};
    CHECK_EQ_I(pthread_create(&th[t], NULL, solo_worker, &w[t]), 0);
  }
  for (unsigned t = 0; t < T; t++)
    pthread_join(th[t], NULL);
  CHECK_EQ_U(sstm__map_events(&d), 0);
  CHECK_EQ_U(sstm__map_table_used(&d), 4 * 4096);
  CHECK_EQ_U(sstm__map_table_dropped(&d), 0);
  /* Now all of them walk one shared range in turn: thread t after t-1,
   * one access each per address: 1 event for the second, 2 for each
   * later one (two distinct sharers before it). */
  for (unsigned t = 0; t < T; t++)
    for (unsigned a = 0; a < 100; a++)
      sstm__map_detect_access(&d, ADDR(20000 + a), t);
  CHECK_EQ_U(sstm__map_events(&d), 100 * (1 + 2 * (T - 2)));
  CHECK_EQ_U(sstm__map_matrix_get(&d, 0, 1), 100);
  CHECK_EQ_U(sstm__map_matrix_get(&d, 0, 2), 100);
  CHECK_EQ_U(sstm__map_matrix_get(&d, 0, 3), 0); /* 0 had left the last two */
  CHECK_EQ_U(sstm__map_matrix_get(&d, 2, 3), 100);
  sstm__map_detect_fini(&d);
}

SSTM_TEST_MAIN()
