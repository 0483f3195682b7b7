/* SPDX-License-Identifier: MIT */
/* Integration: the bench/ds integer sets (ll, sl, rb, hs) under concurrent
 * random operations, checked against sequential models.
 *
 * Keys [0, SHARED) are shared by all threads: every successful add/remove is
 * counted per thread and key; in the end, for each key,
 *   initial + successful adds - successful removes  is 0 or 1
 * and equals the final membership. Some operations are composite (a move:
 * remove a + add b in ONE enclosing transaction, flat nesting), and count
 * only if the whole transaction committed.
 * Keys [SHARED, SHARED + T*PRIVATE) are partitioned: thread t alone
 * touches its slice, so its sequential model replay predicts the result of
 * every single operation, which is checked immediately.
 * Finally intset_check() validates the structure's invariants and
 * intset_size() equals the model.
 *
 * usage: intset KIND DESIGN THREADS [--ops N | --scaled-ops N] [--policy NAME]
 */
#define _GNU_SOURCE
#include "intset.h"
#include "common_int.h"

#define SHARED 128
#define PRIVATE 64
#define MAXT 32

static intset_t *set;
static unsigned nthreads;
static long ops_per_thread;
static int32_t adds[MAXT][SHARED], removes[MAXT][SHARED];
static unsigned char initial[SHARED];

/* move k -> k2 atomically (both or neither), in one enclosing transaction */
static void do_move(unsigned t, long k, long k2) {
  volatile int removed = 0, added = 0;
  SSTM_ATOMIC_BEGIN(NULL)
    removed = 0;
    added = 0;
    if (k != k2 && intset_remove(set, k)) {
      removed = 1;
      if (intset_add(set, k2)) added = 1;
    }
  SSTM_ATOMIC_END();
  if (removed) removes[t][k]++;
  if (added) adds[t][k2]++;
}

static void worker(sstm_tt_t *t) {
  unsigned char model[PRIVATE];
  long base = SHARED + (long)t->idx * PRIVATE;
  for (int i = 0; i < PRIVATE; i++)
    model[i] = intset_contains(set, base + i);
  for (long i = 0; i < ops_per_thread; i++) {
    uint64_t r = sstm_rng_next(&t->rng);
    unsigned what = (unsigned)(r % 100);
    if ((r >> 40) % 3 == 0) {
      /* private slice: every result predicted */
      int k = (int)((r >> 8) % PRIVATE);
      bool res;
      if (what < 40) {
        res = intset_add(set, base + k);
        CHECK_MSG(res == !model[k], "add(%ld) = %d, model present = %d", base + k, res, model[k]);
        model[k] = 1;
      } else if (what < 80) {
        res = intset_remove(set, base + k);
        CHECK_MSG(res == model[k], "remove(%ld) = %d, model present = %d", base + k, res, model[k]);
        model[k] = 0;
      } else {
        res = intset_contains(set, base + k);
        CHECK_MSG(res == model[k], "contains(%ld) = %d, model present = %d", base + k, res,
                  model[k]);
      }
      continue;
    }
    long k = (long)((r >> 8) % SHARED);
    if (what < 35) {
      if (intset_add(set, k)) adds[t->idx][k]++;
    } else if (what < 70) {
      if (intset_remove(set, k)) removes[t->idx][k]++;
    } else if (what < 85) {
      (void)intset_contains(set, k);
    } else {
      do_move(t->idx, k, (long)((r >> 24) % SHARED));
    }
  }
  /* the private slice at the end */
  for (int i = 0; i < PRIVATE; i++)
    CHECK_MSG(intset_contains(set, base + i) == model[i], "private key %ld: final membership",
              base + i);
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s KIND DESIGN THREADS [--ops N | --scaled-ops N] [--policy NAME]\n",
            argv[0]);
    return 2;
  }
  const char *policy = int_opt_str(argc, argv, "--policy", NULL);
  char name[128];
  snprintf(name, sizeof name, "intset.%s.%s.%s", argv[1], argv[2], argv[3]);
  int_name_policy(name, sizeof name, policy);
  sstm_test_setup(name, argc, argv);
  intset_kind_t kind;
  if (intset_kind_parse(argv[1], &kind) != 0) {
    fprintf(stderr, "unknown kind %s\n", argv[1]);
    return 2;
  }
  sstm_design_t design = int_parse_design(argv[2]);
  nthreads = sstm_test_threads((unsigned)atoi(argv[3]));
  CHECK_GT_U(nthreads, 0);
  CHECK_LE_U(nthreads, MAXT);
  ops_per_thread =
      int_opt_ops(argc, argv, (long)sstm_test_scaled(500000, 2000), 2000) / (long)nthreads;

  int_init(design, policy);
  CHECK_OK(sstm_thread_init());
  intset_params_t params = {.buckets = 64, .levels = 0, .range_hint = SHARED + MAXT * PRIVATE};
  set = intset_create(kind, &params);
  CHECK_NOT_NULL(set);
  sstm_rng_t rng;
  sstm_rng_seed(&rng, sstm_test_seed());
  for (long k = 0; k < SHARED; k++)
    if (sstm_rng_below(&rng, 2)) {
      CHECK_TRUE(intset_add(set, k));
      initial[k] = 1;
    }
  for (long k = SHARED; k < SHARED + (long)nthreads * PRIVATE; k++)
    if (sstm_rng_below(&rng, 2)) CHECK_TRUE(intset_add(set, k));

  sstm_test_run_threads(nthreads, true, worker, NULL);

  char err[256] = "";
  CHECK_MSG(intset_check(set, err, sizeof err) == 0, "intset_check: %s", err);
  size_t members = 0;
  for (long k = 0; k < SHARED; k++) {
    long net = initial[k];
    for (unsigned t = 0; t < nthreads; t++)
      net += adds[t][k] - removes[t][k];
    CHECK_MSG(net == 0 || net == 1,
              "key %ld: initial %d + adds - removes = %ld (a lost or duplicated update)", k,
              initial[k], net);
    bool in = intset_contains(set, k);
    CHECK_MSG(in == (net == 1), "key %ld: membership %d, model says %ld", k, in, net);
    members += (size_t)in;
  }
  for (long k = SHARED; k < SHARED + (long)nthreads * PRIVATE; k++)
    members += intset_contains(set, k);
  CHECK_EQ_U(intset_size(set), members);
  sstm_stats_t s;
  CHECK_OK(sstm_stats_aggregate(&s));
  printf("intset %s: %zu members, %llu commits, %llu aborts\n", argv[1], members,
         (unsigned long long)(s.commits_update + s.commits_ro), (unsigned long long)s.aborts_total);
  intset_destroy(set);
  CHECK_OK(sstm_thread_exit());
  CHECK_OK(sstm_shutdown());
  printf("PASS %s\n", name);
  return 0;
}
