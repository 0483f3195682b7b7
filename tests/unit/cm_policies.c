/* SPDX-License-Identifier: MIT */
/* Unit tests: the decisions of the scheduling policies, through
 * deterministic conflicts between real threads (cm_duo.h).
 *
 *  os_prio    a thread at a lower OS priority (sstm_sched_set(SCHED_OTHER,
 *             base + 10)) loses against a thread at the base nice value
 *             whatever their ages and sizes: the higher one requesting a
 *             lock the lower one holds
 *             kills it (the victim aborts with reason "killed"), the lower
 *             one requesting a lock the higher one holds aborts itself; at
 *             the same priority the larger read+write set wins, and at the
 *             same size the older transaction;
 *  timestamp  the older transaction wins, both ways;
 *  escalation os_prio and timestamp restart a transaction irrevocable once
 *             it has aborted SCHEDSTM_PRIO_ESCALATE times (default 32);
 *  retry bound ser-*, yield and softser do so after SSTM_CM_RETRY_BOUND
 *             aborts (256), user restarts included, without waiting or
 *             yielding for those; a ser-* loser whose abort names no other
 *             party (a kill by an unregistered thread) does not wait;
 *  ser-block  a chain (A loses to B, B loses to C, C commits) completes:
 *             losers wait only after rolling back, holding nothing, and
 *             each waits for its winner (the ser-* wait bound is lifted
 *             through a test seam, so that load cannot time a wait out:
 *             the exact commit order is asserted, a lost wake-up hangs).
 * Nice values are relative to the base one (nice_base: 0 when the process
 * may set it, else the inherited one), so that the suite can run under
 * `nice`. Conflicts with a running lock holder need encounter-time locking:
 * the duel and chain tests are TEST_ETL (a CTL lock holder is committing,
 * and cannot be killed), registered for etl only.
 */
#define _GNU_SOURCE
#include <stdlib.h>

#include "cm/common.h" /* sstm__ser_wait_max_ns (a test seam; linked STATIC) */
#include "cm_duo.h"
#include "core/engine.h" /* sstm__wait_slice_ns (likewise) */

static uint64_t words[6][512] __attribute__((aligned(4096)));
#define X (&words[0][0])
#define Y (&words[1][0])
#define Z (&words[2][0])
#define Z2 (&words[3][0])

enum { P_KILLS = 0, P_SELF_ABORTS = 1, P_ESCALATIONS = 3 };
enum { SER_WAITS = 0, SER_TIMEOUTS = 1 };

static void init_cm(const char *cm) {
  sstm_config_t cfg;
  sstm_test_config(&cfg);
  cfg.cm = cm;
  CHECK_OK(sstm_init(&cfg));
}

/* ---- duel: holder H holds X's lock, requester R writes X ------------------ */

/* The nice value the test's threads start from. The process may run under
 * `nice` (threads inherit their creator's value, and an unprivileged one
 * cannot go back below it): the calling (main) thread moves to SCHED_OTHER
 * at nice 0 when it may, else to SCHED_OTHER at its own nice value, and the
 * threads it creates afterwards inherit that. The tests then compare
 * against this base only. */
static int nice_base(void) {
  int rc = sstm_sched_set(SCHED_OTHER, 0);
  if (rc == 0) {
    duo_view_t v = duo_view_of(duo_gettid());
    CHECK_EQ_I(v.policy, SCHED_OTHER);
    CHECK_EQ_I(v.nice, 0);
    return 0;
  }
  CHECK_RC(rc, SSTM_EPERM);
  int base = duo_view_of(duo_gettid()).nice;
  rc = sstm_sched_set(SCHED_OTHER, base);
  if (rc == SSTM_EPERM)
    sstm_test_skip("the main thread cannot run under SCHED_OTHER at its nice value");
  CHECK_OK(rc);
  duo_view_t v = duo_view_of(duo_gettid());
  CHECK_EQ_I(v.policy, SCHED_OTHER);
  CHECK_EQ_I(v.nice, base);
  return base;
}

/* A nice value above the base (a lower OS priority) that every thread may
 * take: base + d, at most 19. Skips when there is none (base 19). */
static int nice_below(int base, int d) {
  int n = base + d > 19 ? 19 : base + d;
  if (n <= base) sstm_test_skip("inherited nice 19: no lower OS priority left to test with");
  return n;
}

static struct {
  bool h_lower, r_lower; /* runs at D.low_nice, else at the base nice */
  int low_nice;
  bool r_begins_first; /* R's transaction is older */
  bool r_same_size;    /* R writes Y before X: one write, as H has */
  bool expect_r_wins;
  sstm_desc_t *h, *r;
  int h_attempts, r_attempts;
  sstm_stats_t hs, rs;
  int h_cprio, r_cprio;
  _Atomic int r_begun, h_holding, r_in_retry, h_go, r_go, h_done, r_done, finish;
} D;

static void set_nice(bool lower) {
  if (lower) {
    int rc = sstm_sched_set(SCHED_OTHER, D.low_nice);
    if (rc == SSTM_EPERM) sstm_test_skip("sstm_sched_set refused");
    CHECK_OK(rc);
  }
}

static void h_body(void *arg) {
  (void)arg;
  int k = ++D.h_attempts;
  sstm_store_u64(X, 10 * (uint64_t)k);
  if (k > 1) return;
  atomic_store_explicit(&D.h_holding, 1, memory_order_seq_cst);
  duo_wait_flag(&D.h_go, 1);
}

static void *h_main(void *arg) {
  (void)arg;
  CHECK_OK(sstm_thread_init());
  D.h = sstm_self();
  set_nice(D.h_lower);
  if (D.r_begins_first) {
    duo_wait_flag(&D.r_begun, 1);
    tx_store_u64(Z, 1); /* the clock moves on: H's transaction is younger */
  }
  CHECK_OK(sstm_run(NULL, h_body, NULL));
  D.hs = duo_stats(sstm_self());
  atomic_store_explicit(&D.h_done, 1, memory_order_seq_cst);
  duo_wait_flag(&D.finish, 1);
  CHECK_OK(sstm_thread_exit());
  return NULL;
}

static void r_body(void *arg) {
  (void)arg;
  int k = ++D.r_attempts;
  if (k == 1) {
    atomic_store_explicit(&D.r_begun, 1, memory_order_seq_cst);
    duo_wait_flag(&D.h_holding, 1);
    if (D.r_same_size) sstm_store_u64(Y, 1);
    sstm_store_u64(X, 1000); /* conflict: kill H, or abort self */
    return;
  }
  atomic_store_explicit(&D.r_in_retry, 1, memory_order_seq_cst);
  duo_wait_flag(&D.r_go, 1);
  sstm_store_u64(X, 1000 + (uint64_t)k);
}

static void *r_main(void *arg) {
  (void)arg;
  CHECK_OK(sstm_thread_init());
  D.r = sstm_self();
  set_nice(D.r_lower);
  if (!D.r_begins_first) {
    duo_wait_flag(&D.h_holding, 1);
    tx_store_u64(Z2, 1); /* the clock moves on: R's transaction is younger */
  }
  CHECK_OK(sstm_run(NULL, r_body, NULL));
  D.rs = duo_stats(sstm_self());
  atomic_store_explicit(&D.r_done, 1, memory_order_seq_cst);
  duo_wait_flag(&D.finish, 1);
  CHECK_OK(sstm_thread_exit());
  return NULL;
}

static void duel(const char *cm) {
  int base = nice_base(); /* before the threads: they inherit it */
  if (D.h_lower || D.r_lower) D.low_nice = nice_below(base, 10);
  init_cm(cm);
  pthread_t h = duo_spawn(h_main, NULL), r = duo_spawn(r_main, NULL);
  duo_wait_flag(&D.h_holding, 1);
  D.h_cprio = sstm_sched_conflict_priority(D.h);
  /* R either won at once (committed its first attempt) or lost (retrying) */
  while (!atomic_load_explicit(&D.r_done, memory_order_seq_cst) &&
         !atomic_load_explicit(&D.r_in_retry, memory_order_seq_cst))
    sched_yield();
  D.r_cprio = sstm_sched_conflict_priority(D.r);
  if (D.expect_r_wins)
    CHECK_MSG(atomic_load_explicit(&D.r_done, memory_order_seq_cst),
              "%s: the requester lost, expected it to win", cm);
  else
    CHECK_MSG(atomic_load_explicit(&D.r_in_retry, memory_order_seq_cst),
              "%s: the requester won, expected it to lose", cm);
  atomic_store_explicit(&D.h_go, 1, memory_order_seq_cst);
  duo_wait_flag(&D.h_done, 1);
  atomic_store_explicit(&D.r_go, 1, memory_order_seq_cst);
  duo_wait_flag(&D.r_done, 1);
  atomic_store_explicit(&D.finish, 1, memory_order_seq_cst);
  duo_join(h);
  duo_join(r);
  printf("%s: holder cprio %d, requester cprio %d\n", cm, D.h_cprio, D.r_cprio);
  if (D.expect_r_wins) {
    CHECK_EQ_I(D.r_attempts, 1);
    CHECK_EQ_U(D.rs.aborts_total, 0);
    CHECK_EQ_U(D.rs.cm_kills, 1);
    CHECK_EQ_U(D.rs.cm_stats[P_KILLS], 1);
    CHECK_EQ_U(D.rs.locks_stolen, 1);
    CHECK_EQ_I(D.h_attempts, 2);
    CHECK_EQ_U(D.hs.aborts[SSTM_ABORT_KILLED], 1);
    CHECK_EQ_U(D.hs.aborts_total, 1);
    /* the victim decided nothing: a kill is not the victim's conflict to
     * resolve (cm/common.h, sstm__cm_decidable), so it counts neither a
     * kill nor an abort of its own */
    CHECK_EQ_U(D.hs.cm_stats[P_KILLS], 0);
    CHECK_EQ_U(D.hs.cm_stats[P_SELF_ABORTS], 0);
    CHECK_EQ_U(D.hs.cm_actions[SSTM_ACT_KILL], 0);
    CHECK_EQ_U(words[0][0], 20); /* H's retry committed last */
  } else {
    CHECK_EQ_I(D.h_attempts, 1);
    CHECK_EQ_U(D.hs.aborts_total, 0);
    CHECK_EQ_I(D.r_attempts, 2);
    CHECK_EQ_U(D.rs.aborts[SSTM_ABORT_WRITE_LOCKED], 1);
    CHECK_EQ_U(D.rs.aborts_total, 1);
    CHECK_EQ_U(D.rs.cm_kills, 0);
    CHECK_EQ_U(D.rs.cm_stats[P_SELF_ABORTS], 1);
    CHECK_EQ_U(words[0][0], 1002);
  }
  CHECK_OK(sstm_shutdown());
}

TEST_ETL(os_prio_higher_kills_lower) {
  /* H: base + 10, older and larger; R: base nice, younger, empty. */
  D.h_lower = true;
  D.r_begins_first = false;
  D.expect_r_wins = true;
  duel("os_prio");
  CHECK_LT_I(D.h_cprio, D.r_cprio);
}

TEST_ETL(os_prio_lower_aborts_itself) {
  /* H: base nice; R: base + 10 but older: age alone would let R win. */
  D.r_lower = true;
  D.r_begins_first = true;
  D.expect_r_wins = false;
  duel("os_prio");
  CHECK_GT_I(D.h_cprio, D.r_cprio);
}

TEST_ETL(os_prio_equal_priority_larger_wins) {
  /* same priority: H holds a write (larger), R is empty: R aborts */
  D.r_begins_first = true;
  D.expect_r_wins = false;
  duel("os_prio");
  CHECK_EQ_I(D.h_cprio, D.r_cprio);
}

/* Same priority and the same size (one write each): age decides, the older
 * transaction wins. */
TEST_ETL(os_prio_equal_priority_and_size_older_wins) {
  D.r_same_size = true;
  D.r_begins_first = true;
  D.expect_r_wins = true;
  duel("os_prio");
  CHECK_EQ_I(D.h_cprio, D.r_cprio);
}

TEST_ETL(os_prio_equal_priority_and_size_younger_aborts_itself) {
  D.r_same_size = true;
  D.r_begins_first = false;
  D.expect_r_wins = false;
  duel("os_prio");
  CHECK_EQ_I(D.h_cprio, D.r_cprio);
}

TEST_ETL(timestamp_older_kills_younger) {
  D.r_begins_first = true;
  D.expect_r_wins = true;
  duel("timestamp");
}

TEST_ETL(timestamp_younger_aborts_itself) {
  D.r_begins_first = false;
  D.expect_r_wins = false;
  duel("timestamp");
}

/* ---- backoff ---------------------------------------------------------------- */

/* backoff waits only after aborts that a conflict caused (not after a user
 * retry or cancel), and every wait it draws is below
 * min(backoff_min_ns * 2^conflicts, backoff_max_ns), conflicts counting
 * the abort being handled (lost conflicts only, not user retries). Its
 * counters say how many waits and the sum of the times drawn (not
 * measured; backoff_waits_grow_with_conflicts_and_take_their_time, further
 * down, also checks the time spent). */
enum { BO_WAITS = 0, BO_WAIT_NS = 1 };
static int bo_attempts;

/* The library with backoff between min_ns and max_ns, this thread registered. */
static void backoff_init(uint64_t min_ns, uint64_t max_ns) {
  sstm_config_t cfg;
  sstm_test_config(&cfg);
  cfg.cm = "backoff";
  cfg.backoff_min_ns = min_ns;
  cfg.backoff_max_ns = max_ns;
  CHECK_OK(sstm_init(&cfg));
  CHECK_OK(sstm_thread_init());
}

static void bo_bump_x(void *arg) {
  (void)arg;
  sstm_store_u64(X, sstm_load_u64(X) + 1);
}

static void bo_conflicting(void *arg) {
  (void)arg;
  uint64_t v = sstm_load_u64(X);
  if (++bo_attempts <= 15) CHECK_OK(run_other(NULL, bo_bump_x, NULL)); /* x changes under us */
  sstm_store_u64(Y, v);
}

static void bo_user_retries(void *arg) {
  (void)arg;
  if (++bo_attempts <= 10) sstm_restart();
}

static void bo_cancel(void *arg) {
  (void)arg;
  sstm_cancel();
}

TEST(backoff_waits_after_conflicts_only_within_its_bounds) {
  backoff_init(1000, 2000);
  bo_attempts = 0;
  CHECK_OK(sstm_run(NULL, bo_user_retries, NULL));
  CHECK_EQ_I(bo_attempts, 11);
  sstm_stats_t s = duo_stats(sstm_self());
  CHECK_EQ_U(s.aborts[SSTM_ABORT_USER_RETRY], 10);
  CHECK_EQ_U(s.cm_stats[BO_WAITS], 0); /* a user retry restarts at once */
  CHECK_RC(sstm_run(NULL, bo_cancel, NULL), SSTM_ECANCELED);
  s = duo_stats(sstm_self());
  CHECK_EQ_U(s.aborts[SSTM_ABORT_USER_CANCEL], 1);
  CHECK_EQ_U(s.cm_stats[BO_WAITS], 0); /* nor does a cancel wait */
  bo_attempts = 0;
  CHECK_OK(sstm_run(NULL, bo_conflicting, NULL));
  CHECK_EQ_I(bo_attempts, 16);
  s = duo_stats(sstm_self());
  CHECK_EQ_U(s.cm_stats[BO_WAITS], 15);
  /* each wait is published as the backoff action (it never was) */
  CHECK_EQ_U(s.cm_actions[SSTM_ACT_BACKOFF], 15);
  /* retries >= 1 at every wait: each bound is 1000 << retries, capped at
   * 2000, so each draw is at most 1999 ns */
  CHECK_LE_U(s.cm_stats[BO_WAIT_NS], 15 * 1999);
  txh_cleanup();
  CHECK_OK(sstm_thread_exit());
  CHECK_OK(sstm_shutdown());
}

static struct { int base, low; } SS;

static void *sched_set_thread(void *arg) {
  (void)arg;
  CHECK_OK(sstm_thread_init());
  sstm_desc_t *me = sstm_self();
  CHECK_EQ_I(duo_view_of(duo_gettid()).nice, SS.base); /* inherited */
  int p0 = sstm_sched_conflict_priority(me);
  CHECK_OK(sstm_sched_set(SCHED_OTHER, SS.low));
  int p1 = sstm_sched_conflict_priority(me);
  CHECK_OK(sstm_sched_set(SCHED_BATCH, SS.low));
  int p2 = sstm_sched_conflict_priority(me);
  CHECK_OK(sstm_sched_set(SCHED_IDLE, SS.low));
  int p3 = sstm_sched_conflict_priority(me);
  printf("conflict priorities: OTHER/%d %d, OTHER/%d %d, BATCH/%d %d, IDLE %d\n", SS.base, p0,
         SS.low, p1, SS.low, p2, p3);
  CHECK_GT_I(p0, p1);
  CHECK_GT_I(p1, p2);
  CHECK_GT_I(p2, p3);
  duo_view_t v = duo_view_of(duo_gettid());
  CHECK_EQ_I(v.policy, SCHED_IDLE);
  CHECK_OK(sstm_thread_exit());
  return NULL;
}

TEST(sched_set_orders_conflict_priorities) {
  SS.base = nice_base(); /* before the thread: it inherits the base */
  SS.low = nice_below(SS.base, 5);
  init_cm("os_prio");
  CHECK_RC(sstm_sched_set(SCHED_OTHER, 20), SSTM_EINVAL);
  CHECK_RC(sstm_sched_set(SCHED_OTHER, -21), SSTM_EINVAL);
  CHECK_RC(sstm_sched_set(SCHED_FIFO, 0), SSTM_EINVAL);
  CHECK_RC(sstm_sched_set(12345, 0), SSTM_EINVAL);
  CHECK_EQ_I(sstm_sched_conflict_priority(NULL), -1);
  duo_join(duo_spawn(sched_set_thread, NULL)); /* not the main thread: others inherit it */
  CHECK_OK(sstm_shutdown());
}

/* ---- escalation to irrevocability ------------------------------------------ */

static struct { int attempts; } E;

/* In a body: read X, let another descriptor change it, then write Y: the
 * commit (or, under ETL, the write) fails its validation against a commit
 * that has ended, a conflict lost with nobody to wait for. */
static void lose_a_conflict(uint64_t k) {
  (void)sstm_load_u64(X);
  struct txh_store s = {X, k};
  CHECK_OK(run_other(NULL, txh_store_fn, &s)); /* X changes under us */
  sstm_store_u64(Y, k);                        /* validation fails */
}

static void esc_body(void *arg) {
  (void)arg;
  int k = ++E.attempts;
  CHECK_MSG(k <= 40, "no escalation to irrevocability after %d aborts", k - 1);
  if (sstm_is_irrevocable()) {
    sstm_store_u64(Y, (uint64_t)k);
    return;
  }
  lose_a_conflict((uint64_t)k);
}

static void escalation(const char *cm, const char *env, unsigned expect) {
  if (env)
    setenv("SCHEDSTM_PRIO_ESCALATE", env, 1);
  else
    unsetenv("SCHEDSTM_PRIO_ESCALATE");
  init_cm(cm);
  CHECK_OK(sstm_thread_init());
  CHECK_OK(sstm_run(NULL, esc_body, NULL));
  CHECK_EQ_I(E.attempts, (int)expect + 1);
  sstm_stats_t s = duo_stats(sstm_self());
  CHECK_EQ_U(s.max_retries, expect);
  CHECK_EQ_U(s.aborts[SSTM_ABORT_VALIDATE_COMMIT], expect);
  CHECK_EQ_U(s.commits_irrevocable, 1);
  CHECK_EQ_U(s.cm_stats[P_ESCALATIONS], 1);
  CHECK_EQ_U(tx_load_u64(Y), expect + 1);
  txh_cleanup();
  sstm_test_fini();
}

TEST(os_prio_escalates_after_4) { escalation("os_prio", "4", 4); }

/* After os_prio's escalation the irrevocable attempt restarts itself twice
 * (waiting for a condition): those attempts run revocable, and only one
 * escalation is counted. */
static void esc_wait_body(void *arg) {
  (void)arg;
  int k = ++E.attempts;
  CHECK_MSG(k <= 10, "attempt %d", k);
  if (k <= 2) {
    lose_a_conflict((uint64_t)k);
    return;
  }
  if (k == 3) {
    CHECK_TRUE(sstm_is_irrevocable()); /* escalated after 2 */
    sstm_restart();
  }
  CHECK_MSG(!sstm_is_irrevocable(), "attempt %d: a user restart escalated again", k);
  if (k == 4) sstm_restart();
  sstm_store_u64(Y, (uint64_t)k);
}

TEST(os_prio_restart_after_escalation_runs_revocable) {
  setenv("SCHEDSTM_PRIO_ESCALATE", "2", 1);
  init_cm("os_prio");
  CHECK_OK(sstm_thread_init());
  E.attempts = 0;
  CHECK_OK(sstm_run(NULL, esc_wait_body, NULL));
  CHECK_EQ_I(E.attempts, 5);
  sstm_stats_t s = duo_stats(sstm_self());
  CHECK_EQ_U(s.cm_stats[P_ESCALATIONS], 1);
  CHECK_EQ_U(s.commits_irrevocable, 0);
  CHECK_EQ_U(s.aborts[SSTM_ABORT_USER_RETRY], 2);
  CHECK_EQ_U(tx_load_u64(Y), 5);
  txh_cleanup();
  sstm_test_fini();
}
TEST(os_prio_escalates_after_default_32) { escalation("os_prio", NULL, 32); }
TEST(timestamp_escalates_after_4) { escalation("timestamp", "4", 4); }
TEST(os_prio_ext_escalates_after_4) { escalation("os_prio+ext", "4", 4); }

/* The setting is read at every sstm_init: without the variable the next
 * initialisation is back to the default. */
TEST(prio_escalate_default_after_reinit) {
  setenv("SCHEDSTM_PRIO_ESCALATE", "4", 1);
  init_cm("os_prio");
  CHECK_OK(sstm_shutdown());
  escalation("os_prio", NULL, 32);
}

TEST(prio_escalate_env_validated) {
  setenv("SCHEDSTM_PRIO_ESCALATE", "many", 1);
  sstm_config_t cfg;
  sstm_config_default(&cfg); /* use_env: the library reads the variable */
  cfg.design = sstm_test_design();
  cfg.cm = "os_prio";
  CHECK_RC(sstm_init(&cfg), SSTM_EINVAL);
  CHECK_CONTAINS(sstm_last_error(), "SCHEDSTM_PRIO_ESCALATE");
  CHECK_FALSE(sstm_initialized());
}

/* ---- ser-block: a chain of waits completes ---------------------------------- */

static struct {
  sstm_desc_t *a, *b, *c;
  int a_att, b_att, c_att;
  sstm_stats_t as, bs, cs;
  _Atomic int c_holding, b_holding, a_done, b_done, c_done, finish;
} C;

static uint64_t aborts_of(sstm_desc_t **d) {
  sstm_desc_t *x = __atomic_load_n(d, __ATOMIC_ACQUIRE);
  return x ? duo_stats(x).aborts_total : 0;
}

static void c_body(void *arg) {
  (void)arg;
  int k = ++C.c_att;
  sstm_store_u64(X, 300 + (uint64_t)k);
  if (k == 1) {
    atomic_store_explicit(&C.c_holding, 1, memory_order_seq_cst);
    /* B lost to us and waits (it rolled back first), A committed */
    while (aborts_of(&C.b) < 1)
      sched_yield();
    duo_wait_flag(&C.a_done, 1);
  }
  /* the word B held when it lost: free, B holds nothing while it waits */
  sstm_store_u64(Y, 300 + (uint64_t)k);
}

static void b_body(void *arg) {
  (void)arg;
  int k = ++C.b_att;
  sstm_store_u64(Y, 200 + (uint64_t)k);
  if (k == 1) {
    atomic_store_explicit(&C.b_holding, 1, memory_order_seq_cst);
    while (aborts_of(&C.a) < 1) /* A lost to us */
      sched_yield();
  }
  sstm_store_u64(X, 200 + (uint64_t)k); /* k == 1: C holds X, we lose */
}

static void a_body(void *arg) {
  (void)arg;
  ++C.a_att;
  sstm_store_u64(Y, 100 + (uint64_t)C.a_att); /* B holds Y at first */
}

static void *chain_main(void *arg) {
  int who = (int)(intptr_t)arg;
  CHECK_OK(sstm_thread_init());
  sstm_desc_t *me = sstm_self();
  switch (who) {
  case 0: /* C */
    __atomic_store_n(&C.c, me, __ATOMIC_RELEASE);
    CHECK_OK(sstm_run(NULL, c_body, NULL));
    C.cs = duo_stats(me);
    atomic_store_explicit(&C.c_done, 1, memory_order_seq_cst);
    break;
  case 1: /* B */
    __atomic_store_n(&C.b, me, __ATOMIC_RELEASE);
    duo_wait_flag(&C.c_holding, 1);
    CHECK_OK(sstm_run(NULL, b_body, NULL));
    C.bs = duo_stats(me);
    atomic_store_explicit(&C.b_done, 1, memory_order_seq_cst);
    break;
  default: /* A */
    __atomic_store_n(&C.a, me, __ATOMIC_RELEASE);
    duo_wait_flag(&C.b_holding, 1);
    CHECK_OK(sstm_run(NULL, a_body, NULL));
    C.as = duo_stats(me);
    atomic_store_explicit(&C.a_done, 1, memory_order_seq_cst);
    break;
  }
  duo_wait_flag(&C.finish, 1);
  CHECK_OK(sstm_thread_exit());
  return NULL;
}

static void chain(const char *cm) {
  init_cm(cm);
  /* A loser waits for its winner however long it takes: under load the
   * 20 ms bound could end a wait early and change the outcome. Its sleeps
   * are unsliced too, so a lost wake-up hangs, and the watchdog fails the
   * test. */
  atomic_store_explicit(&sstm__ser_wait_max_ns, 0, memory_order_relaxed);
  atomic_store_explicit(&sstm__wait_slice_ns, 0, memory_order_relaxed);
  /* descriptors first (each thread publishes its own), then the run */
  pthread_t c = duo_spawn(chain_main, (void *)(intptr_t)0);
  pthread_t b = duo_spawn(chain_main, (void *)(intptr_t)1);
  pthread_t a = duo_spawn(chain_main, (void *)(intptr_t)2);
  duo_wait_flag(&C.a_done, 1);
  duo_wait_flag(&C.c_done, 1);
  duo_wait_flag(&C.b_done, 1);
  atomic_store_explicit(&C.finish, 1, memory_order_seq_cst);
  duo_join(a);
  duo_join(b);
  duo_join(c);
  uint64_t timeouts =
      C.as.cm_stats[SER_TIMEOUTS] + C.bs.cm_stats[SER_TIMEOUTS] + C.cs.cm_stats[SER_TIMEOUTS];
  printf("%s chain: attempts A %d B %d C %d, waits A %llu B %llu, timeouts %llu\n", cm, C.a_att,
         C.b_att, C.c_att, (unsigned long long)C.as.cm_stats[SER_WAITS],
         (unsigned long long)C.bs.cm_stats[SER_WAITS], (unsigned long long)timeouts);
  /* every wait ended with its winner: the exact chain */
  CHECK_EQ_U(timeouts, 0);
  CHECK_EQ_I(C.a_att, 2);
  CHECK_EQ_I(C.b_att, 2);
  CHECK_EQ_I(C.c_att, 1);
  CHECK_EQ_U(C.as.aborts[SSTM_ABORT_WRITE_LOCKED], 1);
  CHECK_EQ_U(C.as.aborts_total, 1);
  CHECK_EQ_U(C.as.cm_stats[SER_WAITS], 1);
  CHECK_EQ_U(C.bs.aborts[SSTM_ABORT_WRITE_LOCKED], 1);
  CHECK_EQ_U(C.bs.aborts_total, 1);
  CHECK_EQ_U(C.bs.cm_stats[SER_WAITS], 1);
  CHECK_EQ_U(C.cs.aborts_total, 0);
  CHECK_EQ_U(C.cs.cm_stats[SER_WAITS], 0);
  sstm_cm_act_t act = strncmp(cm, "ser-spin", 8) == 0    ? SSTM_ACT_SPIN
                      : strncmp(cm, "ser-yield", 9) == 0 ? SSTM_ACT_YIELD
                                                         : SSTM_ACT_BLOCK;
  CHECK_EQ_U(C.as.cm_actions[act], 1);
  CHECK_EQ_U(C.bs.cm_actions[act], 1);
  CHECK_EQ_U(words[0][0], 202); /* commit order A, C, B */
  CHECK_EQ_U(words[1][0], 202);
  CHECK_OK(sstm_shutdown());
}

/* ---- a suspended winner: the wait is bounded ------------------------------ */

/* The documented bound on a ser-* wait (SSTM_SER_WAIT_MAX_NS): a loser
 * whose winner is suspended (its descriptor detached mid-transaction, as an
 * executor does, or its thread descheduled) gives up waiting and restarts.
 * Here the winner is this thread's own transaction, suspended while the
 * loser runs on a second descriptor, so it cannot end before the loser
 * does: a wait without its bound never returns and the watchdog fails the
 * test. No timing is asserted, only that the wait ended without its winner
 * (one timeout) and that the loser then committed. */
static struct { int attempts; } SW;

static void sw_loser(void *arg) {
  (void)arg;
  if (++SW.attempts == 1) sstm_store_u64(X, 2); /* locked by the suspended winner */
  sstm_store_u64(Y, 7);
}

static void sw_winner(void *arg) {
  (void)arg;
  sstm_store_u64(X, 1); /* ETL: X's stripe is locked until our commit */
  CHECK_OK(run_other_attached(NULL, sw_loser, NULL));
}

static void suspended_winner(const char *cm, sstm_cm_act_t act) {
  init_cm(cm);
  CHECK_OK(sstm_thread_init());
  CHECK_OK(sstm_run(NULL, sw_winner, NULL));
  CHECK_EQ_I(SW.attempts, 2);
  sstm_stats_t s;
  CHECK_OK(sstm_stats_get(txh_other_desc(), &s));
  CHECK_EQ_U(s.aborts[SSTM_ABORT_WRITE_LOCKED], 1);
  CHECK_EQ_U(s.aborts_total, 1);
  CHECK_EQ_U(s.cm_stats[SER_WAITS], 1);
  CHECK_EQ_U(s.cm_stats[SER_TIMEOUTS], 1);
  CHECK_EQ_U(s.cm_actions[act], 1);
  CHECK_EQ_U(tx_load_u64(X), 1);
  CHECK_EQ_U(tx_load_u64(Y), 7);
  txh_cleanup();
  sstm_test_fini();
}

TEST_ETL(ser_block_wait_bounded_by_suspended_winner) {
  suspended_winner("ser-block", SSTM_ACT_BLOCK);
}
TEST_ETL(ser_spin_wait_bounded_by_suspended_winner) { suspended_winner("ser-spin", SSTM_ACT_SPIN); }
TEST_ETL(ser_yield_wait_bounded_by_suspended_winner) {
  suspended_winner("ser-yield", SSTM_ACT_YIELD);
}

TEST_ETL(ser_block_chain_completes) { chain("ser-block"); }
TEST_ETL(ser_block_ext_chain_completes) { chain("ser-block+ext"); }
TEST_ETL(ser_spin_chain_completes) { chain("ser-spin"); }
TEST_ETL(ser_yield_chain_completes) { chain("ser-yield"); }

/* ---- an abort with no other party: nothing to wait for ------------------- */

/* A conflict abort whose other party is unknown (here a kill requested by an
 * unregistered thread, cm.h) gives a ser-* policy nothing to wait for: it
 * restarts at once. The loser first loses to this thread's own suspended
 * transaction (one wait, ended by the bound), then is killed by an
 * unregistered thread: a policy that waited on the abort's `other` without
 * looking at has_other would wait again, on the stale party of the first
 * abort, still running (a second wait and a second timeout). */
static struct {
  int attempts;
  sstm_desc_t *victim;
  uint64_t txid;
} UK;

static void *uk_killer(void *arg) {
  (void)arg;
  CHECK_NULL(sstm_self()); /* unregistered: the kill names nobody */
  CHECK_OK(sstm_desc_kill(UK.victim, UK.txid));
  return NULL;
}

static void uk_loser(void *arg) {
  (void)arg;
  int k = ++UK.attempts;
  if (k == 1) sstm_store_u64(X, 2); /* locked by the suspended winner */
  if (k == 2) {
    UK.victim = sstm_self();
    UK.txid = sstm_txid();
    duo_join(duo_spawn(uk_killer, NULL));
    (void)sstm_load_u64(Z); /* the kill is noticed here */
  }
  sstm_store_u64(Y, 7);
}

static void uk_winner(void *arg) {
  (void)arg;
  sstm_store_u64(X, 1); /* ETL: X's stripe is locked until our commit */
  CHECK_OK(run_other_attached(NULL, uk_loser, NULL));
}

static void unknown_killer(const char *cm, sstm_cm_act_t act) {
  init_cm(cm);
  CHECK_OK(sstm_thread_init());
  CHECK_OK(sstm_run(NULL, uk_winner, NULL));
  CHECK_EQ_I(UK.attempts, 3);
  sstm_stats_t s;
  CHECK_OK(sstm_stats_get(txh_other_desc(), &s));
  CHECK_EQ_U(s.aborts[SSTM_ABORT_WRITE_LOCKED], 1);
  CHECK_EQ_U(s.aborts[SSTM_ABORT_KILLED], 1);
  CHECK_EQ_U(s.aborts_total, 2);
  CHECK_EQ_U(s.cm_stats[SER_WAITS], 1); /* the first abort's only */
  CHECK_EQ_U(s.cm_stats[SER_TIMEOUTS], 1);
  CHECK_EQ_U(s.cm_actions[act], 1);
  CHECK_EQ_U(tx_load_u64(Y), 7);
  txh_cleanup();
  sstm_test_fini();
}

TEST_ETL(ser_block_no_wait_without_other_party) { unknown_killer("ser-block", SSTM_ACT_BLOCK); }
TEST_ETL(ser_spin_no_wait_without_other_party) { unknown_killer("ser-spin", SSTM_ACT_SPIN); }
TEST_ETL(ser_yield_no_wait_without_other_party) { unknown_killer("ser-yield", SSTM_ACT_YIELD); }

/* ---- the retry bound of the waiting policies ------------------------------ */

/* SSTM_CM_RETRY_BOUND (cm/common.h): under the policies that wait or yield
 * instead of ordering transactions (ser-*, yield, softser), a transaction
 * that has aborted 256 times by conflicts restarts irrevocable. User
 * restarts do not count: one thread alternates conflicts (a commit-time
 * validation that fails, as in esc_body) with user restarts, and becomes
 * irrevocable after exactly 256 conflicts, whatever the restarts (a missing
 * bound stops at the test's own cap of 1000; a bound that counted the
 * restarts would come about 128 conflicts early). Then the irrevocable
 * attempt restarts itself, and the attempt after it must be revocable: a
 * user restart does not escalate again (conflicts stays at the bound). A failed validation
 * against a commit that has ended names no other party: the ser-* policies
 * and softser do not wait for it, and no policy waits or yields for a user
 * restart. */
static struct {
  unsigned attempts, restarts;
  bool irrev_restarted;
} RB;

/* Once escalated, the irrevocable attempt restarts itself (a body waiting
 * for a condition): the next attempt must run revocable, and commits. */
static void rb_body(void *arg) {
  (void)arg;
  unsigned k = ++RB.attempts;
  if (k >= 1000) return;
  if (RB.irrev_restarted) {
    CHECK_MSG(!sstm_is_irrevocable(), "the restart after the escalation ran irrevocable");
    return;
  }
  if (sstm_is_irrevocable()) {
    RB.irrev_restarted = true;
    sstm_restart();
  }
  if (k % 3 == 0) {
    RB.restarts++;
    sstm_restart();
  }
  lose_a_conflict(k);
}

static void retry_bound(const char *cm) {
  RB.attempts = RB.restarts = 0;
  RB.irrev_restarted = false;
  init_cm(cm);
  CHECK_OK(sstm_thread_init());
  CHECK_OK(sstm_run(NULL, rb_body, NULL));
  sstm_stats_t s = duo_stats(sstm_self());
  CHECK_TRUE(RB.irrev_restarted);
  CHECK_EQ_U(s.aborts[SSTM_ABORT_VALIDATE_COMMIT], SSTM_CM_RETRY_BOUND);
  CHECK_EQ_U(s.aborts[SSTM_ABORT_USER_RETRY], RB.restarts + 1);
  CHECK_GT_U(RB.restarts, SSTM_CM_RETRY_BOUND / 3);
  CHECK_EQ_U(RB.attempts, SSTM_CM_RETRY_BOUND + RB.restarts + 2);
  CHECK_EQ_U(s.aborts_total, SSTM_CM_RETRY_BOUND + RB.restarts + 1);
  CHECK_EQ_U(s.commits_irrevocable, 0);
  /* yield yields after every conflict (its counter 0), never for a user
   * restart; the others had nobody to wait for. */
  bool yields = strcmp(cm, "yield") == 0;
  for (int i = 0; i < SSTM_CM_NSTATS; i++)
    CHECK_EQ_U(s.cm_stats[i], yields && i == 0 ? SSTM_CM_RETRY_BOUND : 0);
  for (int a = SSTM_ACT_SPIN; a < SSTM_ACT_COUNT; a++)
    CHECK_EQ_U(s.cm_actions[a], yields && a == SSTM_ACT_YIELD ? SSTM_CM_RETRY_BOUND : 0);
  txh_cleanup();
  sstm_test_fini();
}

TEST(ser_block_retry_bound_makes_irrevocable) { retry_bound("ser-block"); }
TEST(ser_spin_retry_bound_makes_irrevocable) { retry_bound("ser-spin"); }
TEST(ser_yield_retry_bound_makes_irrevocable) { retry_bound("ser-yield"); }
TEST(yield_retry_bound_makes_irrevocable) { retry_bound("yield"); }
TEST(softser_retry_bound_makes_irrevocable) { retry_bound("softser"); }

/* A body that restarts itself many times (STAMP's TM_RESTART, or waiting
 * for a condition) is never made irrevocable by a policy's bound: before,
 * the 33rd restart under os_prio, or the 257th under the others, ran the
 * attempt irrevocable, and its next restart was misuse that ended the
 * process. */
static unsigned ur_attempts;

static void ur_body(void *arg) {
  (void)arg;
  CHECK_MSG(!sstm_is_irrevocable(), "attempt %u made irrevocable by user restarts alone",
            ur_attempts + 1);
  if (++ur_attempts <= 300) sstm_restart();
  sstm_store_u64(Y, ur_attempts);
}

static void user_restarts(const char *cm) {
  unsetenv("SCHEDSTM_PRIO_ESCALATE");
  init_cm(cm);
  CHECK_OK(sstm_thread_init());
  ur_attempts = 0;
  CHECK_OK(sstm_run(NULL, ur_body, NULL));
  CHECK_EQ_U(ur_attempts, 301);
  sstm_stats_t s = duo_stats(sstm_self());
  CHECK_EQ_U(s.aborts[SSTM_ABORT_USER_RETRY], 300);
  CHECK_EQ_U(s.commits_irrevocable, 0);
  CHECK_EQ_U(tx_load_u64(Y), 301);
  txh_cleanup();
  sstm_test_fini();
}

TEST(os_prio_user_restarts_do_not_escalate) { user_restarts("os_prio"); }
TEST(timestamp_user_restarts_do_not_escalate) { user_restarts("timestamp"); }
TEST(ser_block_user_restarts_do_not_escalate) { user_restarts("ser-block"); }
TEST(yield_user_restarts_do_not_escalate) { user_restarts("yield"); }
TEST(softser_user_restarts_do_not_escalate) { user_restarts("softser"); }
TEST(adaptive_user_restarts_do_not_escalate) { user_restarts("adaptive"); }

/* Mutation round 7: m14: sstm__cm_escalates (cm/common.h) without its
 * USER_CANCEL exclusion. For the policies using sstm__cm_bound_retries the
 * mutant is equivalent (the sticky flag it sets is cleared by the next
 * sstm__begin, nothing reads it in between), but os_prio and timestamp
 * count each escalation (policy counter 3, shown by sstm-top): a cancel
 * after the bound counted one that never happened. */
static void esc_cancel_body(void *arg) {
  (void)arg;
  int k = ++E.attempts;
  CHECK_MSG(k <= 4, "attempt %d: the cancel did not end the transaction", k);
  if (k <= 2) {
    lose_a_conflict((uint64_t)k);
    return;
  }
  if (k == 3) {
    CHECK_TRUE(sstm_is_irrevocable()); /* escalated after 2 */
    sstm_restart();                    /* undone; the next attempt runs revocable */
  }
  CHECK_FALSE(sstm_is_irrevocable());
  sstm_cancel(); /* conflicts is still 2, the bound: no retry, no escalation */
}

TEST(os_prio_cancel_after_escalation_is_not_an_escalation) {
  setenv("SCHEDSTM_PRIO_ESCALATE", "2", 1);
  init_cm("os_prio");
  CHECK_OK(sstm_thread_init());
  E.attempts = 0;
  CHECK_RC(sstm_run(NULL, esc_cancel_body, NULL), SSTM_ECANCELED);
  CHECK_EQ_I(E.attempts, 4);
  sstm_stats_t s = duo_stats(sstm_self());
  CHECK_EQ_U(s.cm_stats[P_ESCALATIONS], 1);
  CHECK_EQ_U(s.aborts[SSTM_ABORT_USER_CANCEL], 1);
  txh_cleanup();
  sstm_test_fini();
}

/* Mutation round 7: m28: adaptive's sub-policy for threads <= CPUs (then
 * ser-spin-block, now ser-kill: cm/ser_kill.c) without
 * sstm__cm_bound_retries. On one
 * thread adaptive starts with ser-kill (threads <= CPUs), and every
 * sub-policy it may switch to has a bound (yield and ser-block 256, os_prio
 * 32), so a transaction that keeps losing conflicts must become
 * irrevocable after at most SSTM_CM_RETRY_BOUND of them; retry_bound()
 * covers the built-in policies, not this one. */
static unsigned ad_attempts;
static void ad_body(void *arg) {
  (void)arg;
  unsigned k = ++ad_attempts;
  CHECK_MSG(k <= SSTM_CM_RETRY_BOUND + 1, "attempt %u: still revocable after %u lost conflicts", k,
            k - 1);
  if (sstm_is_irrevocable()) return;
  lose_a_conflict(k);
}

TEST(adaptive_retry_bound_makes_irrevocable) {
  unsetenv("SCHEDSTM_PRIO_ESCALATE");
  init_cm("adaptive");
  CHECK_OK(sstm_thread_init());
  ad_attempts = 0;
  CHECK_OK(sstm_run(NULL, ad_body, NULL));
  sstm_stats_t s = duo_stats(sstm_self());
  CHECK_EQ_U(s.commits_irrevocable, 1);
  CHECK_EQ_U(s.aborts[SSTM_ABORT_VALIDATE_COMMIT], ad_attempts - 1);
  txh_cleanup();
  sstm_test_fini();
}

/* Mutation round 7: m45: backoff's exponent taken from ctx->retries instead of
 * ctx->conflicts (cm/backoff.c). The existing case cannot tell them apart:
 * its max (2000 ns) is reached at the first conflict either way. Here 20
 * user restarts precede the one conflict: its bound must be
 * min << 1 = 2000 ns, not min << 21 capped at max (4 ms). The draw comes
 * from the descriptor's deterministic generator, so the outcome is fixed
 * (with the mutant a draw below 2000 ns has probability 1/2000). */
static int bu_attempts;
static void bu_body(void *arg) {
  (void)arg;
  int k = ++bu_attempts;
  if (k <= 20) sstm_restart();
  uint64_t v = sstm_load_u64(X);
  if (k == 21) CHECK_OK(run_other(NULL, bo_bump_x, NULL)); /* x changes under us */
  sstm_store_u64(Y, v);
}

TEST(backoff_bound_ignores_user_restarts) {
  backoff_init(1000, 4000000);
  bu_attempts = 0;
  CHECK_OK(sstm_run(NULL, bu_body, NULL));
  CHECK_EQ_I(bu_attempts, 22);
  sstm_stats_t s = duo_stats(sstm_self());
  CHECK_EQ_U(s.aborts[SSTM_ABORT_USER_RETRY], 20);
  CHECK_EQ_U(s.cm_stats[BO_WAITS], 1);
  CHECK_LT_U(s.cm_stats[BO_WAIT_NS], 2000); /* below min << conflicts (1) */
  txh_cleanup();
  CHECK_OK(sstm_thread_exit());
  CHECK_OK(sstm_shutdown());
}

/* backoff's waits grow with the conflicts, and each takes the time drawn.
 * 15 lost conflicts with min 1 us and a cap far above: the bounds go 2 us,
 * 4 us, ... 32 ms. A bound that did not grow (2 us each) would keep the
 * sum of the draws under 15 * 2 us; the draws come from the descriptor's
 * deterministic generator, so the sum is fixed. The transaction must
 * last at least that sum: spinning, not just counting (a lower bound, which
 * a loaded machine cannot break). */
TEST(backoff_waits_grow_with_conflicts_and_take_their_time) {
  backoff_init(1000, 1000000000);
  bo_attempts = 0;
  uint64_t t0 = txh_now_ns();
  CHECK_OK(sstm_run(NULL, bo_conflicting, NULL));
  uint64_t took = txh_now_ns() - t0;
  CHECK_EQ_I(bo_attempts, 16);
  sstm_stats_t s = duo_stats(sstm_self());
  CHECK_EQ_U(s.cm_stats[BO_WAITS], 15);
  CHECK_GT_U(s.cm_stats[BO_WAIT_NS], 15 * 1999); /* the bounds grew */
  CHECK_GE_U(took, s.cm_stats[BO_WAIT_NS]);      /* and the waits took it */
  CHECK_GE_U(s.cm_wait_ns, s.cm_stats[BO_WAIT_NS]);
  txh_cleanup();
  CHECK_OK(sstm_thread_exit());
  CHECK_OK(sstm_shutdown());
}

/* Mutation round 7: m46: prio_abort without its `escalate_after &&` (README:
 * SCHEDSTM_PRIO_ESCALATE "0 = never"); with it, 0 escalated after every
 * lost conflict. No test set 0. */
static void esc_never_body(void *arg) {
  (void)arg;
  int k = ++E.attempts;
  CHECK_MSG(!sstm_is_irrevocable(), "attempt %d escalated with SCHEDSTM_PRIO_ESCALATE=0", k);
  if (k <= 40) lose_a_conflict((uint64_t)k);
}

TEST(os_prio_escalate_zero_never_escalates) {
  setenv("SCHEDSTM_PRIO_ESCALATE", "0", 1);
  init_cm("os_prio");
  CHECK_OK(sstm_thread_init());
  E.attempts = 0;
  CHECK_OK(sstm_run(NULL, esc_never_body, NULL));
  CHECK_EQ_I(E.attempts, 41);
  sstm_stats_t s = duo_stats(sstm_self());
  CHECK_EQ_U(s.cm_stats[P_ESCALATIONS], 0);
  CHECK_EQ_U(s.commits_irrevocable, 0);
  txh_cleanup();
  sstm_test_fini();
}

SSTM_TEST_MAIN()
