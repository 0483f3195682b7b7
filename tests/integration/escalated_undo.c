/* SPDX-License-Identifier: MIT */
/* Integration: the undo of a policy's escalation to irrevocability under
 * concurrency. A test policy escalates after every abort (as the progress
 * bounds of ser-*, softser, os_prio... do after many), so most retries run
 * irrevocable and write in place. Transfers among N counters then restart
 * themselves or cancel in that irrevocable attempt: its in-place writes are
 * undone from its undo log while other threads audit the counters. Checked:
 *   - inside every transaction, the sum is constant (a reader never sees a
 *     write that is being undone, nor a half-undone transfer: the locks are
 *     released with a fresh version, so a reader that loaded the data in
 *     between fails its re-check);
 *   - each thread's ledger (incremented inside each transfer) equals the
 *     transfers that returned 0: a cancelled transfer left nothing behind;
 *   - the counters' final sum.
 *
 * usage: escalated_undo DESIGN [--runs R] [--threads T] [--ops N]
 */
#define _GNU_SOURCE
#include "common_int.h"

#define NCOUNTERS 16
#define TOTAL 160000

static uint64_t counters[NCOUNTERS] __attribute__((aligned(64)));
static uint64_t ledger[256] __attribute__((aligned(64)));
static uint64_t committed[256];
static long ops_per_thread;

static sstm_cm_action_t esc_conflict(sstm_cm_ctx_t *ctx, const sstm_conflict_t *c, uint64_t *w) {
  (void)ctx, (void)c, (void)w;
  return SSTM_CM_ABORT_SELF;
}
static void esc_abort(sstm_cm_ctx_t *ctx, const sstm_abort_info_t *info) {
  (void)info;
  sstm_cm_next_irrevocable(ctx);
}
static const sstm_cm_ops_t escalate_all = {
    .name = "test-escalate-all",
    .description = "abort self, and run every retry irrevocable (tests)",
    .on_conflict = esc_conflict,
    .on_abort = esc_abort,
};

static void check_sum_tx(void) {
  uint64_t sum = 0;
  for (int i = 0; i < NCOUNTERS; i++)
    sum += sstm_load_u64(&counters[i]);
  CHECK_EQ_U(sum, TOTAL);
}

enum { PLAIN, RESTART_IN_IRREV, CANCEL_IN_IRREV, AUDIT };

struct op {
  unsigned t, a, b, kind, attempts;
  uint64_t amt;
};

static void op_fn(void *p) {
  struct op *o = p;
  unsigned k = ++o->attempts;
  check_sum_tx();
  if (o->kind == AUDIT) return;
  uint64_t va = sstm_load_u64(&counters[o->a]);
  uint64_t amt = va < o->amt ? va : o->amt;
  sstm_store_u64(&counters[o->a], va - amt);
  sstm_store_u64(&counters[o->b], sstm_load_u64(&counters[o->b]) + amt);
  sstm_store_u64(&ledger[o->t], sstm_load_u64(&ledger[o->t]) + 1);
  check_sum_tx();
  /* The first attempt restarts so that the policy escalates the next one;
   * that one (irrevocable) restarts again or cancels after its in-place
   * writes. A restart's next attempt is escalated again by this policy. */
  if (o->kind == RESTART_IN_IRREV && k <= 2) {
    if (k == 2) CHECK_TRUE(sstm_is_irrevocable());
    sstm_restart();
  }
  if (o->kind == CANCEL_IN_IRREV) {
    if (k == 1) sstm_restart();
    CHECK_TRUE(sstm_is_irrevocable());
    sstm_cancel();
  }
}

static void worker(sstm_tt_t *t) {
  for (long i = 0; i < ops_per_thread; i++) {
    uint64_t r = sstm_rng_next(&t->rng);
    struct op o = {.t = t->idx};
    o.a = (unsigned)(r % NCOUNTERS);
    o.b = (unsigned)((r >> 8) % NCOUNTERS);
    o.amt = (r >> 16) % 50;
    unsigned m = (unsigned)((r >> 32) % 8);
    o.kind = m == 0 ? RESTART_IN_IRREV : m == 1 ? CANCEL_IN_IRREV : m < 5 ? AUDIT : PLAIN;
    int rc = sstm_run(NULL, op_fn, &o);
    if (o.kind == CANCEL_IN_IRREV) {
      CHECK_EQ_I(rc, SSTM_ECANCELED);
    } else {
      CHECK_OK(rc);
      if (o.kind != AUDIT) committed[t->idx]++;
    }
  }
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s DESIGN [--runs R] [--threads T] [--ops N]\n", argv[0]);
    return 2;
  }
  char name[128];
  snprintf(name, sizeof name, "escalated_undo.%s", argv[1]);
  sstm_test_setup(name, argc, argv);
  sstm_design_t design = int_parse_design(argv[1]);
  long runs = int_opt(argc, argv, "--runs", (long)sstm_test_scaled(20, 2));
  unsigned threads = sstm_test_threads((unsigned)int_opt(argc, argv, "--threads", 4));
  CHECK_LE_U(threads, 256);
  ops_per_thread = int_opt(argc, argv, "--ops", (long)sstm_test_scaled(3000, 200));
  CHECK_OK(sstm_cm_register(&escalate_all));
  uint64_t undone = 0;
  for (long run = 0; run < runs; run++) {
    int_init(design, "test-escalate-all");
    for (int i = 0; i < NCOUNTERS; i++)
      counters[i] = TOTAL / NCOUNTERS;
    memset(ledger, 0, sizeof ledger);
    memset(committed, 0, sizeof committed);
    sstm_test_run_threads(threads, true, worker, NULL);
    uint64_t sum = 0;
    for (int i = 0; i < NCOUNTERS; i++)
      sum += counters[i];
    CHECK_EQ_U(sum, TOTAL);
    for (unsigned t = 0; t < threads; t++)
      CHECK_EQ_U(ledger[t], committed[t]);
    sstm_stats_t s;
    CHECK_OK(sstm_stats_aggregate(&s));
    CHECK_GT_U(s.aborts[SSTM_ABORT_USER_CANCEL], 0);
    undone += s.aborts[SSTM_ABORT_USER_CANCEL] + s.aborts[SSTM_ABORT_USER_RETRY];
    CHECK_OK(sstm_shutdown());
  }
  printf("escalated_undo: %ld runs, %llu user restarts and cancels\n", runs,
         (unsigned long long)undone);
  printf("PASS %s\n", name);
  return 0;
}
