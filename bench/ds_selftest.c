/* SPDX-License-Identifier: MIT */
/* bench/ds_selftest.c: correctness self-test of the intset structures on
 * one back-end (ds-selftest-schedstm, -itm, -seq).
 *
 * Phase 1, one thread: random add/remove/contains checked against a
 * reference bitmap, with the structure invariants validated periodically.
 * Phase 2, n threads (TM back-ends): each thread owns the keys congruent to
 * its id, so every result is still checked exactly against a private
 * reference while the threads conflict on shared nodes.
 * Exit status 0 when every check passed, 1 otherwise, 2 on bad usage. */
#define _GNU_SOURCE
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_report.h"
#include "bench_util.h"
#include "intset.h"
#include "tm.h"
#include "tm_runtime.h"

typedef struct options {
  long threads, ops, range;
  uint64_t seed;
  int only_kind; /* -1: all */
} options_t;

/* A worker of phase 2. */
typedef struct worker {
  intset_t *set;
  const options_t *opt;
  bench_gate_t *gate;
  unsigned id;
  unsigned char *ref; /* ref[key]: key present (own keys only) */
  long mismatches;
  long first_bad_key;
} worker_t;

static void usage(FILE *f) {
  fprintf(f,
          "usage: ds-selftest-%s [-n|--threads N] [-o|--ops N] [-r|--range N] [-s|--seed SEED]\n"
          "                      [-S|--structure ll|sl|rb|hs|rb-aw|sl-aw] [-h|--help]\n",
          tm_backend_name());
}

static void parse_options(int argc, char **argv, options_t *o) {
  *o = (options_t){.threads = 2, .ops = 20000, .range = 512, .seed = 1, .only_kind = -1};
  static const struct option longopts[] = {{"threads", required_argument, NULL, 'n'},
                                           {"ops", required_argument, NULL, 'o'},
                                           {"range", required_argument, NULL, 'r'},
                                           {"seed", required_argument, NULL, 's'},
                                           {"structure", required_argument, NULL, 'S'},
                                           {"help", no_argument, NULL, 'h'},
                                           {NULL, 0, NULL, 0}};
  int c;
  intset_kind_t k;
  while ((c = getopt_long(argc, argv, "n:o:r:s:S:h", longopts, NULL)) != -1) {
    switch (c) {
    case 'n': o->threads = bench_parse_long(optarg, "-n/--threads", 1, 64); break;
    case 'o': o->ops = bench_parse_long(optarg, "-o/--ops", 1, 1L << 30); break;
    case 'r': o->range = bench_parse_long(optarg, "-r/--range", 2, 1L << 24); break;
    case 's': o->seed = (uint64_t)bench_parse_long(optarg, "-s/--seed", 0, __LONG_MAX__); break;
    case 'S':
      if (intset_kind_parse(optarg, &k) != 0)
        bench_die(BENCH_EXIT_USAGE, "option -S/--structure: unknown structure '%s'", optarg);
      o->only_kind = (int)k;
      break;
    case 'h': usage(stdout); exit(0);
    default: usage(stderr); exit(BENCH_EXIT_USAGE);
    }
  }
  if (!tm_multi_threaded()) o->threads = 1;
}

/* One random operation on key, checked against ref; returns 0 if the set
 * answered as the reference says. */
static int checked_op(intset_t *set, unsigned char *ref, long key, uint64_t dice) {
  bool got, want;
  if (dice < 40) {
    got = intset_add(set, key);
    want = !ref[key];
    ref[key] = 1;
  } else if (dice < 80) {
    got = intset_remove(set, key);
    want = ref[key];
    ref[key] = 0;
  } else {
    got = intset_contains(set, key);
    want = ref[key];
  }
  return got == want ? 0 : -1;
}

static long ref_count(const unsigned char *ref, long range) {
  long n = 0;
  for (long k = 0; k <= range; k++)
    n += ref[k];
  return n;
}

/* Phase 1: one thread, exact results, invariants every 997 operations. */
static int phase_single(intset_kind_t kind, const options_t *o, long range) {
  intset_params_t p = {.buckets = 64, .range_hint = range};
  intset_t *set = intset_create(kind, &p);
  unsigned char *ref = calloc((size_t)range + 1, 1);
  bench_rng_t rng;
  bench_rng_seed(&rng, o->seed, 1000 + (uint64_t)kind);
  char err[256];
  int rc = 0;
  for (long i = 0; i < o->ops && rc == 0; i++) {
    long key = 1 + (long)bench_rng_below(&rng, (uint64_t)range);
    if (checked_op(set, ref, key, bench_rng_below(&rng, 100)) != 0) {
      fprintf(stderr, "%s: wrong answer for key %ld at op %ld\n", intset_kind_name(kind), key, i);
      rc = -1;
    } else if (i % 997 == 0 && intset_check(set, err, sizeof err) != 0) {
      fprintf(stderr, "%s: invariant broken at op %ld: %s\n", intset_kind_name(kind), i, err);
      rc = -1;
    }
  }
  if (rc == 0 && intset_check(set, err, sizeof err) != 0) {
    fprintf(stderr, "%s: invariant broken at the end: %s\n", intset_kind_name(kind), err);
    rc = -1;
  }
  if (rc == 0 && (long)intset_size(set) != ref_count(ref, range)) {
    fprintf(stderr, "%s: size %zu, reference %ld\n", intset_kind_name(kind), intset_size(set),
            ref_count(ref, range));
    rc = -1;
  }
  free(ref);
  intset_destroy(set);
  return rc;
}

static void *worker_main(void *arg) {
  worker_t *w = arg;
  const options_t *o = w->opt;
  long n = o->threads;
  bench_rng_t rng;
  bench_rng_seed(&rng, o->seed, 7 + w->id);
  TM_THREAD_ENTER();
  bench_gate_wait(w->gate);
  for (long i = 0; i < o->ops; i++) {
    /* a key this thread owns: key % n == id */
    long key = w->id + n * (1 + (long)bench_rng_below(&rng, (uint64_t)(o->range / n)));
    if (checked_op(w->set, w->ref, key, bench_rng_below(&rng, 100)) != 0 && w->mismatches++ == 0)
      w->first_bad_key = key;
  }
  TM_THREAD_EXIT();
  return NULL;
}

/* Phase 2: threads on interleaved key partitions of one shared set. */
static int phase_concurrent(intset_kind_t kind, const options_t *o) {
  long n = o->threads, range = o->range + n * 2;
  intset_params_t p = {.buckets = 64, .range_hint = range};
  intset_t *set = intset_create(kind, &p);
  worker_t *w = calloc((size_t)n, sizeof *w);
  bench_gate_t gate;
  bench_gate_init(&gate);
  for (long i = 0; i < n; i++)
    w[i] = (worker_t){.set = set,
                      .opt = o,
                      .gate = &gate,
                      .id = (unsigned)i,
                      .ref = calloc((size_t)range + 1, 1)};
  /* duration 1 ms: the workers finish their fixed op count regardless */
  bench_run_workers((unsigned)n, worker_main, w, sizeof *w, &gate, 1);
  int rc = 0;
  long expected = 0;
  for (long i = 0; i < n; i++) {
    if (w[i].mismatches != 0) {
      fprintf(stderr, "%s: thread %ld got %ld wrong answers (first key %ld)\n",
              intset_kind_name(kind), i, w[i].mismatches, w[i].first_bad_key);
      rc = -1;
    }
    expected += ref_count(w[i].ref, range);
    free(w[i].ref);
  }
  char err[256];
  if (intset_check(set, err, sizeof err) != 0) {
    fprintf(stderr, "%s: invariant broken after the concurrent phase: %s\n", intset_kind_name(kind),
            err);
    rc = -1;
  } else if ((long)intset_size(set) != expected) {
    fprintf(stderr, "%s: size %zu after the concurrent phase, expected %ld\n",
            intset_kind_name(kind), intset_size(set), expected);
    rc = -1;
  }
  free(w);
  intset_destroy(set);
  return rc;
}

int main(int argc, char **argv) {
  options_t o;
  bench_set_prog(argv[0]);
  parse_options(argc, argv, &o);
  char err[512];
  if (tm_sys_init(&(tm_sys_options_t){0}, err, sizeof err) != 0)
    bench_die(BENCH_EXIT_FAIL, "%s", err);
  tm_thread_enter();
  int passed = 0, failed = 0;
  for (int k = 0; k < INTSET_KIND_COUNT; k++) {
    if (o.only_kind >= 0 && k != o.only_kind) continue;
    const long ranges[] = {16, o.range};
    for (size_t r = 0; r < 2; r++) {
      int rc = phase_single((intset_kind_t)k, &o, ranges[r]);
      rc == 0 ? passed++ : failed++;
    }
    if (o.threads > 1) {
      int rc = phase_concurrent((intset_kind_t)k, &o);
      rc == 0 ? passed++ : failed++;
    }
    fprintf(stderr, "ds-selftest-%s: %s done\n", tm_backend_name(),
            intset_kind_name((intset_kind_t)k));
  }
  tm_thread_exit();
  tm_sys_fini();
  printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : BENCH_EXIT_FAIL;
}
