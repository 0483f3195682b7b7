/* SPDX-License-Identifier: MIT */
/* Integration: deadlock freedom of the waiting policies (ser-block, its ext
 * form, ser-spin, softser) when winners themselves lose and wait.
 *
 * Many threads (64 on 2 CPUs: most of them are descheduled at any time,
 * often inside a transaction) transfer between a few hot accounts, each in
 * its own lock stripe: a thread holding one account's lock meets another
 * thread holding the next one, loses, rolls back and waits, and the thread
 * it waits for has often lost to a third. Every thread must complete its
 * quota of transactions (the watchdog fails a hang); the totals, the
 * per-thread transactional counters and the statistics must agree.
 * Some transfers touch three accounts and dawdle inside the transaction so
 * that preemption inside transactions is common.
 *
 * With the ser-* policies' 20 ms wait bound in place, a deadlock would only
 * make the run slow: every wait in a cycle would time out and the losers
 * would go on. --unbounded lifts the bound (sstm__ser_wait_max_ns = 0, the
 * test seam of src/cm/common.h; the binary links the static library), so
 * that a wait-for cycle hangs and the watchdog fails the test, and then
 * also requires that no wait timed out (the policy's ser_timeouts).
 *
 * usage: cm_deadlock DESIGN POLICY THREADS [--ops N] [--accounts A] [--unbounded]
 *   --ops: transactions per thread (default 400 * SSTM_TEST_SCALE)
 */
#define _GNU_SOURCE
#include "cm/common.h" /* sstm__ser_wait_max_ns */
#include "common_int.h"
#include "core/engine.h" /* sstm__wait_slice_ns */

#define MAXT 128
#define MAXA 16
#define INITIAL 1000

struct acct {
  _Alignas(64) int64_t v; /* one account per 64 bytes: its own stripe */
};
static struct acct acc[MAXA];
static long naccounts, ops;
static uint64_t counter[MAXT][8]; /* [t][0]: transactional count */
static uint64_t done_local[MAXT], audits_local[MAXT];

struct xfer {
  long a, b, c;
  int64_t amt;
  unsigned t;
  unsigned dawdle;
};

static void xfer_fn(void *p) {
  struct xfer *x = p;
  int64_t va = sstm_load_i64(&acc[x->a].v);
  sstm_store_i64(&acc[x->a].v, va - x->amt);
  for (unsigned i = 0; i < x->dawdle; i++)
    __builtin_ia32_pause();
  int64_t vb = sstm_load_i64(&acc[x->b].v);
  sstm_store_i64(&acc[x->b].v, vb + x->amt);
  if (x->c >= 0) { /* three accounts: b -> c as well */
    int64_t vb2 = sstm_load_i64(&acc[x->b].v);
    int64_t vc = sstm_load_i64(&acc[x->c].v);
    sstm_store_i64(&acc[x->b].v, vb2 - 1);
    sstm_store_i64(&acc[x->c].v, vc + 1);
  }
  sstm_store_u64(&counter[x->t][0], sstm_load_u64(&counter[x->t][0]) + 1);
}

static void audit_fn(void *p) {
  (void)p;
  int64_t sum = 0;
  for (long i = 0; i < naccounts; i++)
    sum += sstm_load_i64(&acc[i].v);
  CHECK_EQ_I(sum, (int64_t)naccounts * INITIAL);
}

static void worker(sstm_tt_t *t) {
  for (long n = 0; n < ops; n++) {
    uint64_t r = sstm_rng_next(&t->rng);
    if (r % 10 == 0) {
      sstm_attr_t ro = {.read_only = (r >> 8) & 1};
      CHECK_OK(sstm_run(&ro, audit_fn, NULL));
      audits_local[t->idx]++;
      continue;
    }
    struct xfer x = {.t = t->idx, .c = -1};
    x.a = (long)sstm_rng_below(&t->rng, (uint64_t)naccounts);
    x.b = (long)sstm_rng_below(&t->rng, (uint64_t)naccounts - 1);
    if (x.b >= x.a) x.b++;
    x.amt = (int64_t)sstm_rng_below(&t->rng, 50) + 1;
    if (r % 10 == 1 && naccounts >= 3) {
      do
        x.c = (long)sstm_rng_below(&t->rng, (uint64_t)naccounts);
      while (x.c == x.a || x.c == x.b);
      x.dawdle = (unsigned)sstm_rng_below(&t->rng, 4000);
    }
    CHECK_OK(sstm_run(NULL, xfer_fn, &x));
    done_local[t->idx]++;
  }
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s DESIGN POLICY THREADS [--ops N] [--accounts A] [--unbounded]\n",
            argv[0]);
    return 2;
  }
  bool unbounded = int_flag(argc, argv, "--unbounded");
  char name[128];
  snprintf(name, sizeof name, "cm_deadlock.%s.%s.%s%s", argv[1], argv[2], argv[3],
           unbounded ? ".unbounded" : "");
  sstm_test_setup(name, argc, argv);
  sstm_design_t design = int_parse_design(argv[1]);
  unsigned threads = sstm_test_threads((unsigned)atoi(argv[3]));
  CHECK_GT_U(threads, 1);
  CHECK_LE_U(threads, MAXT);
  ops = int_opt(argc, argv, "--ops", (long)sstm_test_scaled(400, 50));
  naccounts = int_opt(argc, argv, "--accounts", 3);
  CHECK_GE_I(naccounts, 2);
  CHECK_LE_I(naccounts, MAXA);
  for (long i = 0; i < naccounts; i++)
    acc[i].v = INITIAL;
  int_init(design, argv[2]);
  if (unbounded) {
    /* only the ser-* policies wait with this bound, and count timeouts in
     * their second counter */
    CHECK_MSG(strncmp(argv[2], "ser-", 4) == 0, "--unbounded is for the ser-* policies");
    atomic_store_explicit(&sstm__ser_wait_max_ns, 0, memory_order_relaxed);
    /* unsliced sleeps: a lost wake-up hangs ser-block (the watchdog) */
    atomic_store_explicit(&sstm__wait_slice_ns, 0, memory_order_relaxed);
  }
  char desc[512];
  sstm_describe(desc, sizeof desc);
  printf("%s\n", desc);
  sstm_test_run_threads(threads, true, worker, NULL);

  int64_t total = 0;
  for (long i = 0; i < naccounts; i++)
    total += acc[i].v;
  CHECK_EQ_I(total, (int64_t)naccounts * INITIAL);
  uint64_t xfers = 0, audits = 0;
  for (unsigned t = 0; t < threads; t++) {
    CHECK_EQ_U(done_local[t] + audits_local[t], (uint64_t)ops); /* every quota */
    CHECK_EQ_U(counter[t][0], done_local[t]);
    xfers += done_local[t];
    audits += audits_local[t];
  }
  sstm_stats_t s;
  CHECK_OK(sstm_stats_aggregate(&s));
  CHECK_EQ_U(s.commits_update, xfers);
  CHECK_EQ_U(s.commits_ro, audits);
  printf("%llu transfers, %llu audits, %llu aborts, max retries %llu, policy counters "
         "%llu %llu %llu %llu, waits %llu ms\n",
         (unsigned long long)xfers, (unsigned long long)audits, (unsigned long long)s.aborts_total,
         (unsigned long long)s.max_retries, (unsigned long long)s.cm_stats[0],
         (unsigned long long)s.cm_stats[1], (unsigned long long)s.cm_stats[2],
         (unsigned long long)s.cm_stats[3], (unsigned long long)(s.cm_wait_ns / 1000000));
  if (unbounded) CHECK_EQ_U(s.cm_stats[1], 0); /* ser_timeouts: every wait saw its winner end */
  CHECK_OK(sstm_shutdown());
  printf("PASS %s\n", name);
  return 0;
}
