/* SPDX-License-Identifier: MIT */
/* Integration: the adaptive policy (src/cm/adaptive.c) under an
 * oversubscribed, contended bank.
 *
 * sstm_describe starts with cm-info=current=... reason=start (a choice from
 * the threads registered so far). Many threads (32 on 2 CPUs) transfer
 * between a few accounts with audits. The threads do their quota and go on
 * until adaptive has judged a few windows (a policy that never evaluates
 * hangs and fails under the watchdog); its reason then names the regime.
 * With more threads than CPUs and short transactions it must have switched
 * (its probe starts with yield, the registration-time choice is ser-block).
 * Audits check the total inside every transaction, and the totals,
 * transactional counters and statistics must agree afterwards, across the
 * switches, and the policy's counters count its own decisions (switches <=
 * evaluations). adaptive has no commit hook (its commit path is suicide's).
 *
 * Non-determinism: with --nondet every attempt of a transfer draws its pair
 * of accounts anew, so retries take other paths, and adaptive must say so
 * (a reason with "nondet-tx") at some point of the run: the run goes on
 * until it does, since the retries it judges from come from conflicts,
 * whose number per window depends on how the threads are scheduled (a
 * bound of 40 windows was often too few on a loaded machine). A detector
 * that never says so hangs, and the watchdog fails the test.
 * Without --nondet the transfers retry on the same path and it must never
 * say so.
 *
 * usage: cm_adaptive DESIGN THREADS [--policy adaptive|adaptive+ext] [--ops N] [--accounts A]
 *                    [--nondet]
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdatomic.h>

#include "common_int.h"

#define MAXT 64
#define INITIAL 1000
/* adaptive's own counters, found by name in the policy's stat_names (the
 * low slots belong to its sub-policies). */
static unsigned stat_index(const char *name) {
  const sstm_cm_ops_t *cm = sstm_cm_current();
  for (unsigned i = 0; cm && i < SSTM_CM_NSTATS; i++)
    if (cm->stat_names[i] && strcmp(cm->stat_names[i], name) == 0) return i;
  fprintf(stderr, "policy has no counter named %s\n", name);
  abort();
}
#define A_SWITCHES stat_index("switches")
#define A_EVALUATIONS stat_index("evaluations")

/* One account per cache line: each has its own lock stripe, so a different
 * account is a different read path. */
static struct { _Alignas(64) int64_t v; } accounts[64];
static long naccounts, ops;
static uint64_t counter[MAXT][8];
static uint64_t xfers_local[MAXT], audits_local[MAXT];
static _Atomic int judged, seen_nondet;
static uint64_t judged_at; /* adaptive's evaluations when thread 0 set `judged` */
static bool nondet;

struct xfer {
  long a, b;
  unsigned t, dawdle;
  sstm_rng_t draw; /* --nondet: the attempts draw the pair from it */
};

static void xfer_fn(void *p) {
  struct xfer *x = p;
  if (nondet) { /* thread-private state, advanced by every attempt */
    uint64_t r = sstm_rng_next(&x->draw);
    x->a = (long)(r % (uint64_t)naccounts);
    x->b = (x->a + 1 + (long)((r >> 32) % (uint64_t)(naccounts - 1))) % naccounts;
  }
  int64_t va = sstm_load_i64(&accounts[x->a].v);
  for (unsigned i = 0; i < x->dawdle; i++)
    __builtin_ia32_pause();
  int64_t vb = sstm_load_i64(&accounts[x->b].v);
  sstm_store_i64(&accounts[x->a].v, va - 1);
  sstm_store_i64(&accounts[x->b].v, vb + 1);
  sstm_store_u64(&counter[x->t][0], sstm_load_u64(&counter[x->t][0]) + 1);
}

static void audit_fn(void *p) {
  (void)p;
  int64_t sum = 0;
  for (long i = 0; i < naccounts; i++)
    sum += sstm_load_i64(&accounts[i].v);
  CHECK_EQ_I(sum, (int64_t)naccounts * INITIAL);
}

static void worker(sstm_tt_t *t) {
  for (long n = 0;; n++) {
    if (t->idx == 0 && n % 16 == 0) {
      char d[1024];
      if (sstm_describe(d, sizeof d) > 0 && strstr(d, "nondet-tx") != NULL)
        atomic_store_explicit(&seen_nondet, 1, memory_order_seq_cst);
    }
    if (n >= ops) {
      if (atomic_load_explicit(&judged, memory_order_relaxed)) break;
      if (t->idx == 0 && n % 16 == 0) {
        sstm_stats_t s;
        CHECK_OK(sstm_stats_aggregate(&s));
        /* --nondet: until adaptive has said so, however many windows
         * that takes (their events depend on how the threads are
         * scheduled): one that never says so hangs, and the watchdog
         * fails the test. */
        if (s.cm_stats[A_EVALUATIONS] >= 3 &&
            (!nondet || atomic_load_explicit(&seen_nondet, memory_order_seq_cst))) {
          judged_at = s.cm_stats[A_EVALUATIONS];
          atomic_store_explicit(&judged, 1, memory_order_seq_cst);
        }
      }
    }
    uint64_t r = sstm_rng_next(&t->rng);
    if (r % 8 == 0) {
      CHECK_OK(sstm_run(NULL, audit_fn, NULL));
      audits_local[t->idx]++;
      continue;
    }
    struct xfer x = {.t = t->idx};
    x.a = (long)sstm_rng_below(&t->rng, (uint64_t)naccounts);
    x.b = (long)sstm_rng_below(&t->rng, (uint64_t)naccounts - 1);
    if (x.b >= x.a) x.b++;
    x.dawdle = (unsigned)sstm_rng_below(&t->rng, 500);
    sstm_rng_seed(&x.draw, sstm_rng_next(&t->rng));
    CHECK_OK(sstm_run(NULL, xfer_fn, &x));
    xfers_local[t->idx]++;
  }
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s DESIGN THREADS [--policy P] [--ops N] [--accounts A]\n", argv[0]);
    return 2;
  }
  const char *policy = int_opt_str(argc, argv, "--policy", "adaptive");
  nondet = int_flag(argc, argv, "--nondet"); /* before the name, which says it */
  char name[128];
  snprintf(name, sizeof name, "cm_adaptive.%s.%s.%s%s", argv[1], policy, argv[2],
           nondet ? ".nondet" : "");
  sstm_test_setup(name, argc, argv);
  sstm_design_t design = int_parse_design(argv[1]);
  unsigned threads = sstm_test_threads((unsigned)atoi(argv[2]));
  CHECK_GT_U(threads, 1);
  CHECK_LE_U(threads, MAXT);
  ops = int_opt(argc, argv, "--ops", (long)sstm_test_scaled(2000, 100));
  naccounts = int_opt(argc, argv, "--accounts", 4);
  CHECK_GE_I(naccounts, 2);
  CHECK_LE_I(naccounts, 64);
  for (long i = 0; i < naccounts; i++)
    accounts[i].v = INITIAL;
  int_init(design, policy);
  char desc[1024];
  CHECK_GT_I(sstm_describe(desc, sizeof desc), 0);
  printf("start: %s\n", desc);
  CHECK_CONTAINS(desc, " cm-info=current=");
  CHECK_CONTAINS(desc, " reason=start");
  CHECK_MSG(sstm_cm_find("adaptive")->on_commit == NULL, "adaptive has a commit hook");
  if (strstr(policy, "+ext")) CHECK_CONTAINS(desc, "ext=");

  sstm_test_run_threads(threads, true, worker, NULL);

  CHECK_GT_I(sstm_describe(desc, sizeof desc), 0);
  printf("end: %s\n", desc);
  CHECK_CONTAINS(desc, " cm-info=current=");
  CHECK_CONTAINS(desc, " reason=");
  const char *cur = strstr(desc, "current=") + strlen("current=");
  static const char *const names[] = {"yield ", "ser-kill ", "ser-block ", "os_prio "};
  bool known = false;
  for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++)
    known = known || strncmp(cur, names[i], strlen(names[i])) == 0;
  CHECK_MSG(known, "unknown current policy in \"%s\"", cur);

  int64_t total = 0;
  for (long i = 0; i < naccounts; i++)
    total += accounts[i].v;
  CHECK_EQ_I(total, (int64_t)naccounts * INITIAL);
  uint64_t xfers = 0, audits = 0;
  for (unsigned t = 0; t < threads; t++) {
    CHECK_GE_U(xfers_local[t] + audits_local[t], (uint64_t)ops);
    CHECK_EQ_U(counter[t][0], xfers_local[t]);
    xfers += xfers_local[t];
    audits += audits_local[t];
  }
  sstm_stats_t s;
  CHECK_OK(sstm_stats_aggregate(&s));
  CHECK_EQ_U(s.commits_update, xfers);
  CHECK_EQ_U(s.commits_ro, audits);
  printf("%llu transfers, %llu audits, %llu aborts, switches %llu, evaluations %llu (%llu when "
         "judged)\n",
         (unsigned long long)xfers, (unsigned long long)audits, (unsigned long long)s.aborts_total,
         (unsigned long long)s.cm_stats[A_SWITCHES], (unsigned long long)s.cm_stats[A_EVALUATIONS],
         (unsigned long long)judged_at);
  CHECK_GE_U(s.cm_stats[A_EVALUATIONS], 3);
  CHECK_MSG(strstr(desc, "reason=start") == NULL, "no window judged: %s", desc);
  if (strstr(desc, "over threads=") && strstr(desc, "short-tx="))
    CHECK_GT_U(s.cm_stats[A_SWITCHES], 0);
  /* The choice at registration (the workers: this thread is not
   * registered) is ser-block with more threads than CPUs, ser-kill
   * otherwise: any other current policy was reached by a counted switch. */
  cpu_set_t cpus;
  CHECK_EQ_I(sched_getaffinity(0, sizeof cpus, &cpus), 0);
  const char *initial = threads > (unsigned)CPU_COUNT(&cpus) ? "ser-block " : "ser-kill ";
  if (strncmp(cur, initial, strlen(initial)) != 0)
    CHECK_MSG(s.cm_stats[A_SWITCHES] > 0, "current policy changed without a switch: %s", desc);
  /* at most one switch per evaluation: the counters are adaptive's own
   * (its sub-policies must not count into them) */
  CHECK_LE_U(s.cm_stats[A_SWITCHES], s.cm_stats[A_EVALUATIONS]);
  if (nondet)
    CHECK_MSG(atomic_load_explicit(&seen_nondet, memory_order_seq_cst),
              "retries on other paths never judged non-deterministic");
  else
    CHECK_MSG(!atomic_load_explicit(&seen_nondet, memory_order_seq_cst),
              "retries on the same path judged non-deterministic");
  CHECK_OK(sstm_shutdown());
  printf("PASS %s\n", name);
  return 0;
}
