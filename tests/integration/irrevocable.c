/* SPDX-License-Identifier: MIT */
/* Integration: irrevocable and normal transactions mixed, with an invariant
 * (constant sum over N counters) checked inside every transaction.
 * Irrevocable transactions additionally:
 *   - read the counters with PLAIN loads and check the invariant (no other
 *     transaction may commit an update while one is irrevocable, and
 *     in-flight commits have finished);
 *   - increment a plain, non-atomic counter (a side effect that must happen
 *     exactly once: an irrevocable transaction never aborts, and only one
 *     runs at a time, so there is no race: TSan checks that too);
 *   - half start irrevocable (attr), half call sstm_become_irrevocable()
 *     after some accesses.
 * A run = threads started, work, joined, library shut down; repeated.
 *
 * usage: irrevocable DESIGN [--runs R] [--threads T] [--ops N]
 *   default runs: 300 * SSTM_TEST_SCALE (a few seconds); torture: 1000.
 */
#define _GNU_SOURCE
#include "common_int.h"

#define NCOUNTERS 16
#define TOTAL 100000

static uint64_t counters[NCOUNTERS] __attribute__((aligned(64)));
static uint64_t side_effects; /* plain: written only by irrevocable txs */
static uint64_t irrevocable_done[256];
static long ops_per_thread;

static void check_sum_tx(void) {
  uint64_t sum = 0;
  for (int i = 0; i < NCOUNTERS; i++)
    sum += sstm_load_u64(&counters[i]);
  CHECK_EQ_U(sum, TOTAL);
}

static void check_sum_plain(void) {
  uint64_t sum = 0;
  for (int i = 0; i < NCOUNTERS; i++)
    sum += counters[i]; /* plain on purpose: TSan checks the exclusion */
  CHECK_EQ_U(sum, TOTAL);
}

struct op {
  unsigned a, b;
  uint64_t amt;
  int mode; /* 0 normal, 1 irrevocable attr, 2 become irrevocable */
};

static void op_fn(void *p) {
  struct op *o = p;
  check_sum_tx();
  uint64_t va = sstm_load_u64(&counters[o->a]);
  if (o->mode == 2) {
    CHECK_OK(sstm_become_irrevocable());
    va = sstm_load_u64(&counters[o->a]); /* after a possible restart */
  }
  if (o->mode != 0) {
    CHECK_TRUE(sstm_is_irrevocable());
    check_sum_plain();
    side_effects++; /* exactly once per irrevocable transaction */
  } else {
    CHECK_FALSE(sstm_is_irrevocable());
  }
  uint64_t amt = va < o->amt ? va : o->amt;
  sstm_store_u64(&counters[o->a], va - amt);
  sstm_store_u64(&counters[o->b], sstm_load_u64(&counters[o->b]) + amt);
  check_sum_tx();
  if (o->mode != 0) check_sum_plain(); /* our own in-place writes are done: consistent */
}

static void worker(sstm_tt_t *t) {
  for (long i = 0; i < ops_per_thread; i++) {
    uint64_t r = sstm_rng_next(&t->rng);
    struct op o;
    o.a = (unsigned)(r % NCOUNTERS);
    o.b = (unsigned)((r >> 8) % NCOUNTERS);
    o.amt = (r >> 16) % 50;
    unsigned m = (unsigned)((r >> 32) % 20);
    o.mode = m == 0 ? 1 : m == 1 ? 2 : 0;
    if (o.mode == 1) {
      sstm_attr_t a = {.irrevocable = true};
      CHECK_OK(sstm_run(&a, op_fn, &o));
    } else {
      CHECK_OK(sstm_run(NULL, op_fn, &o));
    }
    if (o.mode != 0) irrevocable_done[t->idx]++;
  }
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s DESIGN [--runs R] [--threads T] [--ops N]\n", argv[0]);
    return 2;
  }
  char name[128];
  snprintf(name, sizeof name, "irrevocable.%s", argv[1]);
  sstm_test_setup(name, argc, argv);
  sstm_design_t design = int_parse_design(argv[1]);
  long runs = int_opt(argc, argv, "--runs", (long)sstm_test_scaled(300, 3));
  unsigned threads = sstm_test_threads((unsigned)int_opt(argc, argv, "--threads", 4));
  CHECK_LE_U(threads, 256);
  ops_per_thread = int_opt(argc, argv, "--ops", (long)sstm_test_scaled(5000, 200));
  uint64_t total_irrevocable = 0;
  for (long run = 0; run < runs; run++) {
    int_init(design, run % 2 ? "backoff" : "suicide");
    for (int i = 0; i < NCOUNTERS; i++)
      counters[i] = TOTAL / NCOUNTERS;
    side_effects = 0;
    memset(irrevocable_done, 0, sizeof irrevocable_done);
    sstm_test_run_threads(threads, true, worker, NULL);
    uint64_t irr = 0;
    for (unsigned t = 0; t < threads; t++)
      irr += irrevocable_done[t];
    CHECK_EQ_U(side_effects, irr);
    check_sum_plain();
    sstm_stats_t s;
    CHECK_OK(sstm_stats_aggregate(&s));
    CHECK_EQ_U(s.commits_irrevocable, irr);
    /* stats.h: an irrevocable commit is also counted as an update or a
     * read-only commit, so every operation is counted there exactly once */
    uint64_t ops = (uint64_t)ops_per_thread * threads;
    CHECK_MSG(s.commits_update + s.commits_ro == ops,
              "commit counters: update %llu + ro %llu != %llu operations (irrevocable %llu)",
              (unsigned long long)s.commits_update, (unsigned long long)s.commits_ro,
              (unsigned long long)ops, (unsigned long long)s.commits_irrevocable);
    total_irrevocable += irr;
    CHECK_OK(sstm_shutdown());
  }
  printf("irrevocable: %ld runs, %llu irrevocable transactions\n", runs,
         (unsigned long long)total_irrevocable);
  printf("PASS %s\n", name);
  return 0;
}
