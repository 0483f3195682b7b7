/* Unit tests: the decisions of the scheduling policies, through
 * deterministic conflicts between real threads (cm_duo.h).
 *
 *  os_prio    a thread at a lower OS priority (sstm_sched_set(SCHED_OTHER,
 *             10)) loses against a nice-0 thread whatever their ages and
 *             sizes: the higher one requesting a lock the lower one holds
 *             kills it (the victim aborts with reason "killed"), the lower
 *             one requesting a lock the higher one holds aborts itself;
 *  timestamp  the older transaction wins, both ways;
 *  escalation os_prio and timestamp restart a transaction irrevocable once
 *             it has aborted SCHEDSTM_PRIO_ESCALATE times (default 32);
 *  ser-block  a chain (A loses to B, B loses to C, C commits) completes:
 *             losers wait only after rolling back, holding nothing.
 * Conflicts with a running lock holder need encounter-time locking: the
 * duel and chain tests skip under CTL (a CTL lock holder is committing).
 */
#define _GNU_SOURCE
#include <stdlib.h>

#include "cm_duo.h"

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

static struct {
  int h_nice, r_nice;
  bool r_begins_first; /* R's transaction is older */
  bool expect_r_wins;
  sstm_desc_t *h, *r;
  int h_attempts, r_attempts;
  sstm_stats_t hs, rs;
  int h_cprio, r_cprio;
  _Atomic int r_begun, h_holding, r_in_retry, h_go, r_go, h_done, r_done, finish;
} D;

static void set_nice(int nice) {
  if (nice) {
    int rc = sstm_sched_set(SCHED_OTHER, nice);
    if (rc == SSTM_EPERM)
      sstm_test_skip("sstm_sched_set refused");
    CHECK_OK(rc);
  }
}

static void h_body(void *arg) {
  (void)arg;
  int k = ++D.h_attempts;
  sstm_store_u64(X, 10 * (uint64_t)k);
  if (k > 1)
    return;
  atomic_store(&D.h_holding, 1);
  duo_wait_flag(&D.h_go, 1);
}

static void *h_main(void *arg) {
  (void)arg;
  CHECK_OK(sstm_thread_init());
  D.h = sstm_self();
  set_nice(D.h_nice);
  if (D.r_begins_first) {
    duo_wait_flag(&D.r_begun, 1);
    tx_store_u64(Z, 1); /* the clock moves on: H's transaction is younger */
  }
  CHECK_OK(sstm_run(NULL, h_body, NULL));
  D.hs = duo_stats(sstm_self());
  atomic_store(&D.h_done, 1);
  duo_wait_flag(&D.finish, 1);
  CHECK_OK(sstm_thread_exit());
  return NULL;
}

static void r_body(void *arg) {
  (void)arg;
  int k = ++D.r_attempts;
  if (k == 1) {
    atomic_store(&D.r_begun, 1);
    duo_wait_flag(&D.h_holding, 1);
    sstm_store_u64(X, 1000); /* conflict: kill H, or abort self */
    return;
  }
  atomic_store(&D.r_in_retry, 1);
  duo_wait_flag(&D.r_go, 1);
  sstm_store_u64(X, 1000 + (uint64_t)k);
}

static void *r_main(void *arg) {
  (void)arg;
  CHECK_OK(sstm_thread_init());
  D.r = sstm_self();
  set_nice(D.r_nice);
  if (!D.r_begins_first) {
    duo_wait_flag(&D.h_holding, 1);
    tx_store_u64(Z2, 1); /* the clock moves on: R's transaction is younger */
  }
  CHECK_OK(sstm_run(NULL, r_body, NULL));
  D.rs = duo_stats(sstm_self());
  atomic_store(&D.r_done, 1);
  duo_wait_flag(&D.finish, 1);
  CHECK_OK(sstm_thread_exit());
  return NULL;
}

static void duel(const char *cm) {
  skip_unless_etl();
  init_cm(cm);
  pthread_t h = duo_spawn(h_main, NULL), r = duo_spawn(r_main, NULL);
  duo_wait_flag(&D.h_holding, 1);
  D.h_cprio = sstm_sched_conflict_priority(D.h);
  /* R either won at once (committed its first attempt) or lost (retrying) */
  for (unsigned i = 0; !atomic_load(&D.r_done) && !atomic_load(&D.r_in_retry); i++)
    sched_yield();
  D.r_cprio = sstm_sched_conflict_priority(D.r);
  if (D.expect_r_wins)
    CHECK_MSG(atomic_load(&D.r_done), "%s: the requester lost, expected it to win", cm);
  else
    CHECK_MSG(atomic_load(&D.r_in_retry), "%s: the requester won, expected it to lose", cm);
  atomic_store(&D.h_go, 1);
  duo_wait_flag(&D.h_done, 1);
  atomic_store(&D.r_go, 1);
  duo_wait_flag(&D.r_done, 1);
  atomic_store(&D.finish, 1);
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

TEST(os_prio_higher_kills_lower) {
  /* H: nice 10, older and larger; R: nice 0, younger, empty. */
  D.h_nice = 10;
  D.r_begins_first = false;
  D.expect_r_wins = true;
  duel("os_prio");
  CHECK_LT_I(D.h_cprio, D.r_cprio);
}

TEST(os_prio_lower_aborts_itself) {
  /* H: nice 0; R: nice 10 but older: age alone would let R win. */
  D.r_nice = 10;
  D.r_begins_first = true;
  D.expect_r_wins = false;
  duel("os_prio");
  CHECK_GT_I(D.h_cprio, D.r_cprio);
}

TEST(os_prio_equal_priority_larger_wins) {
  /* same priority: H holds a write (larger), R is empty: R aborts */
  D.r_begins_first = true;
  D.expect_r_wins = false;
  duel("os_prio");
  CHECK_EQ_I(D.h_cprio, D.r_cprio);
}

TEST(timestamp_older_kills_younger) {
  D.r_begins_first = true;
  D.expect_r_wins = true;
  duel("timestamp");
}

TEST(timestamp_younger_aborts_itself) {
  D.r_begins_first = false;
  D.expect_r_wins = false;
  duel("timestamp");
}

static void *sched_set_thread(void *arg) {
  (void)arg;
  CHECK_OK(sstm_thread_init());
  sstm_desc_t *me = sstm_self();
  int p0 = sstm_sched_conflict_priority(me);
  CHECK_OK(sstm_sched_set(SCHED_OTHER, 5));
  int p1 = sstm_sched_conflict_priority(me);
  CHECK_OK(sstm_sched_set(SCHED_BATCH, 5));
  int p2 = sstm_sched_conflict_priority(me);
  CHECK_OK(sstm_sched_set(SCHED_IDLE, 5));
  int p3 = sstm_sched_conflict_priority(me);
  printf("conflict priorities: OTHER/0 %d, OTHER/5 %d, BATCH/5 %d, IDLE %d\n", p0, p1, p2, p3);
  CHECK_GT_I(p0, p1);
  CHECK_GT_I(p1, p2);
  CHECK_GT_I(p2, p3);
  duo_view_t v = duo_view_of(duo_gettid());
  CHECK_EQ_I(v.policy, SCHED_IDLE);
  CHECK_OK(sstm_thread_exit());
  return NULL;
}

TEST(sched_set_orders_conflict_priorities) {
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

static struct {
  int attempts;
} E;

static void esc_body(void *arg) {
  (void)arg;
  int k = ++E.attempts;
  CHECK_MSG(k <= 40, "no escalation to irrevocability after %d aborts", k - 1);
  if (sstm_is_irrevocable()) {
    sstm_store_u64(Y, (uint64_t)k);
    return;
  }
  (void)sstm_load_u64(X);
  struct txh_store s = {X, (uint64_t)k};
  CHECK_OK(run_other(NULL, txh_store_fn, &s)); /* X changes under us */
  sstm_store_u64(Y, (uint64_t)k);              /* commit-time validation fails */
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
  sstm_test_config(&cfg);
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
    atomic_store(&C.c_holding, 1);
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
    atomic_store(&C.b_holding, 1);
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
    atomic_store(&C.c_done, 1);
    break;
  case 1: /* B */
    __atomic_store_n(&C.b, me, __ATOMIC_RELEASE);
    duo_wait_flag(&C.c_holding, 1);
    CHECK_OK(sstm_run(NULL, b_body, NULL));
    C.bs = duo_stats(me);
    atomic_store(&C.b_done, 1);
    break;
  default: /* A */
    __atomic_store_n(&C.a, me, __ATOMIC_RELEASE);
    duo_wait_flag(&C.b_holding, 1);
    CHECK_OK(sstm_run(NULL, a_body, NULL));
    C.as = duo_stats(me);
    atomic_store(&C.a_done, 1);
    break;
  }
  duo_wait_flag(&C.finish, 1);
  CHECK_OK(sstm_thread_exit());
  return NULL;
}

static void chain(const char *cm) {
  skip_unless_etl();
  init_cm(cm);
  /* descriptors first (each thread publishes its own), then the run */
  pthread_t c = duo_spawn(chain_main, (void *)(intptr_t)0);
  pthread_t b = duo_spawn(chain_main, (void *)(intptr_t)1);
  pthread_t a = duo_spawn(chain_main, (void *)(intptr_t)2);
  duo_wait_flag(&C.a_done, 1);
  duo_wait_flag(&C.c_done, 1);
  duo_wait_flag(&C.b_done, 1);
  atomic_store(&C.finish, 1);
  duo_join(a);
  duo_join(b);
  duo_join(c);
  uint64_t timeouts = C.as.cm_stats[SER_TIMEOUTS] + C.bs.cm_stats[SER_TIMEOUTS] +
                      C.cs.cm_stats[SER_TIMEOUTS];
  printf("%s chain: attempts A %d B %d C %d, waits A %llu B %llu, timeouts %llu\n", cm,
         C.a_att, C.b_att, C.c_att, (unsigned long long)C.as.cm_stats[SER_WAITS],
         (unsigned long long)C.bs.cm_stats[SER_WAITS], (unsigned long long)timeouts);
  CHECK_GE_U(C.as.aborts[SSTM_ABORT_WRITE_LOCKED], 1);
  CHECK_GE_U(C.as.cm_stats[SER_WAITS], 1);
  CHECK_GE_U(C.bs.aborts[SSTM_ABORT_WRITE_LOCKED], 1);
  CHECK_GE_U(C.bs.cm_stats[SER_WAITS], 1);
  sstm_cm_act_t act = strncmp(cm, "ser-spin", 8) == 0    ? SSTM_ACT_SPIN
                      : strncmp(cm, "ser-yield", 9) == 0 ? SSTM_ACT_YIELD
                                                         : SSTM_ACT_BLOCK;
  CHECK_GE_U(C.as.cm_actions[act], 1);
  CHECK_GE_U(C.bs.cm_actions[act], 1);
  if (timeouts == 0) {
    /* every wait ended with its winner: the exact chain */
    CHECK_EQ_U(C.as.aborts_total, 1);
    CHECK_EQ_U(C.bs.aborts_total, 1);
    CHECK_EQ_U(C.cs.aborts_total, 0);
    CHECK_EQ_U(words[0][0], 202); /* commit order A, C, B */
    CHECK_EQ_U(words[1][0], 202);
  }
  CHECK_OK(sstm_shutdown());
}

TEST(ser_block_chain_completes) { chain("ser-block"); }
TEST(ser_block_ext_chain_completes) { chain("ser-block+ext"); }
TEST(ser_spin_chain_completes) { chain("ser-spin"); }
TEST(ser_yield_chain_completes) { chain("ser-yield"); }

SSTM_TEST_MAIN()
