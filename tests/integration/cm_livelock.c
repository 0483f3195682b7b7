/* SPDX-License-Identifier: MIT */
/* Integration: livelock freedom of the priority policies (os_prio,
 * timestamp), src/cm/prio.c.
 *
 * Sustained contention: every transaction reads all of a few hot words and
 * a cold array, dawdles, and moves one unit between two hot words (the sum
 * is checked inside every transaction). Requirements:
 *  - every thread completes its quota (a livelock hangs: the watchdog
 *    fails the test);
 *  - no transaction aborts more than SCHEDSTM_PRIO_ESCALATE times (default
 *    32) plus one: after that many aborts it restarts irrevocable, and an
 *    irrevocable transaction never aborts (aggregated max_retries);
 *  - with --expect-escalations the escalation counter (policy counter 3)
 *    becomes non-zero: the threads go on past their quota until it does
 *    (with SCHEDSTM_PRIO_ESCALATE=4 this is quick; a policy that never
 *    escalates hangs and fails);
 *  - sums, per-thread transactional counters and statistics agree.
 *
 * usage: cm_livelock DESIGN POLICY THREADS [--ops N] [--hot H] [--expect-escalations]
 *   --ops: transactions per thread (default 1500 * SSTM_TEST_SCALE)
 */
#define _GNU_SOURCE
#include <stdatomic.h>

#include "common_int.h"

#define MAXT 64
#define MAXH 16
#define COLD 32
#define P_ESCALATIONS 3

struct cell {
  _Alignas(64) uint64_t v;
};
static struct cell hot[MAXH];
static uint64_t cold[COLD];
static long nhot, ops;
static uint64_t counter[MAXT][8];
static long done_local[MAXT];
static bool expect_escalations;
static long escalate = 32;
static _Atomic int escalated;

struct mv {
  long from, to;
  unsigned t, dawdle;
};

static void mv_fn(void *p) {
  struct mv *m = p;
  uint64_t sum = 0;
  for (long i = 0; i < nhot; i++)
    sum += sstm_load_u64(&hot[i].v);
  CHECK_EQ_U(sum, (uint64_t)nhot * 1000);
  uint64_t c = 0;
  for (int i = 0; i < COLD; i++)
    c += sstm_load_u64(&cold[i]);
  CHECK_EQ_U(c, COLD);
  for (unsigned i = 0; i < m->dawdle; i++)
    __builtin_ia32_pause();
  uint64_t f = sstm_load_u64(&hot[m->from].v);
  if (f > 0) {
    sstm_store_u64(&hot[m->from].v, f - 1);
    sstm_store_u64(&hot[m->to].v, sstm_load_u64(&hot[m->to].v) + 1);
  }
  sstm_store_u64(&counter[m->t][0], sstm_load_u64(&counter[m->t][0]) + 1);
}

static void worker(sstm_tt_t *t) {
  for (long n = 0;; n++) {
    if (n >= ops) {
      if (!expect_escalations || atomic_load_explicit(&escalated, memory_order_relaxed)) break;
      if (t->idx == 0 && n % 16 == 0) {
        sstm_stats_t s;
        CHECK_OK(sstm_stats_aggregate(&s));
        CHECK_LE_U(s.max_retries, (uint64_t)escalate + 1); /* fail early, not by hanging */
        if (s.cm_stats[P_ESCALATIONS] > 0)
          atomic_store_explicit(&escalated, 1, memory_order_seq_cst);
      }
    }
    struct mv m = {.t = t->idx};
    m.from = (long)sstm_rng_below(&t->rng, (uint64_t)nhot);
    m.to = (long)sstm_rng_below(&t->rng, (uint64_t)nhot - 1);
    if (m.to >= m.from) m.to++;
    m.dawdle = (unsigned)sstm_rng_below(&t->rng, 2000);
    CHECK_OK(sstm_run(NULL, mv_fn, &m));
    done_local[t->idx]++;
  }
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s DESIGN POLICY THREADS [--ops N] [--hot H] [--expect-escalations]\n",
            argv[0]);
    return 2;
  }
  char name[128];
  snprintf(name, sizeof name, "cm_livelock.%s.%s.%s", argv[1], argv[2], argv[3]);
  expect_escalations = int_flag(argc, argv, "--expect-escalations");
  if (expect_escalations) snprintf(name + strlen(name), sizeof name - strlen(name), ".escalate");
  sstm_test_setup(name, argc, argv);
  sstm_design_t design = int_parse_design(argv[1]);
  unsigned threads = sstm_test_threads((unsigned)atoi(argv[3]));
  CHECK_GT_U(threads, 1);
  CHECK_LE_U(threads, MAXT);
  ops = int_opt(argc, argv, "--ops", (long)sstm_test_scaled(1500, 100));
  nhot = int_opt(argc, argv, "--hot", 4);
  CHECK_GE_I(nhot, 2);
  CHECK_LE_I(nhot, MAXH);
  const char *e = getenv("SCHEDSTM_PRIO_ESCALATE");
  if (e && *e) escalate = strtol(e, NULL, 10);
  CHECK_GT_I(escalate, 0); /* 0 = never: nothing bounds the retries */
  for (long i = 0; i < nhot; i++)
    hot[i].v = 1000;
  for (int i = 0; i < COLD; i++)
    cold[i] = 1;
  int_init(design, argv[2]);
  char desc[512];
  sstm_describe(desc, sizeof desc);
  printf("%s, escalate after %ld\n", desc, escalate);
  sstm_test_run_threads(threads, true, worker, NULL);

  uint64_t sum = 0;
  for (long i = 0; i < nhot; i++)
    sum += hot[i].v;
  CHECK_EQ_U(sum, (uint64_t)nhot * 1000);
  uint64_t total = 0;
  for (unsigned t = 0; t < threads; t++) {
    CHECK_GE_I(done_local[t], ops); /* every quota */
    CHECK_EQ_U(counter[t][0], (uint64_t)done_local[t]);
    total += (uint64_t)done_local[t];
  }
  sstm_stats_t s;
  CHECK_OK(sstm_stats_aggregate(&s));
  CHECK_EQ_U(s.commits_update, total);
  printf("%llu transactions, %llu aborts (killed %llu, validation %llu), max retries %llu, "
         "kills %llu, self aborts %llu, escalations %llu, irrevocable commits %llu\n",
         (unsigned long long)total, (unsigned long long)s.aborts_total,
         (unsigned long long)s.aborts[SSTM_ABORT_KILLED],
         (unsigned long long)(s.aborts[SSTM_ABORT_VALIDATE_READ] +
                              s.aborts[SSTM_ABORT_VALIDATE_WRITE] +
                              s.aborts[SSTM_ABORT_VALIDATE_COMMIT]),
         (unsigned long long)s.max_retries, (unsigned long long)s.cm_stats[0],
         (unsigned long long)s.cm_stats[1], (unsigned long long)s.cm_stats[P_ESCALATIONS],
         (unsigned long long)s.commits_irrevocable);
  CHECK_LE_U(s.max_retries, (uint64_t)escalate + 1);
  CHECK_LE_U(s.commits_irrevocable, s.cm_stats[P_ESCALATIONS]);
  if (expect_escalations) {
    CHECK_GT_U(s.cm_stats[P_ESCALATIONS], 0);
    CHECK_GT_U(s.commits_irrevocable, 0);
  }
  CHECK_OK(sstm_shutdown());
  printf("PASS %s\n", name);
  return 0;
}
