/* SPDX-License-Identifier: MIT */
/* Internal tests: the admit policy (src/cm/admit.c).
 *  - Its decision, window by window, on constructed counts (the test seam
 *    sstm__admit_decide: no threads, no clock): the gate turns on only
 *    with more threads than its limit, enough events and aborts per commit
 *    at ADMIT_ON_APC or above; it stays on through windows at or above
 *    ADMIT_OFF_APC and windows too calm for fewer than ADMIT_OFF_WINDOWS in
 *    a row, and turns off after ADMIT_OFF_WINDOWS calm ones or as soon as
 *    the threads fall to the limit.
 *  - Its gate, pinned on with a limit of one (sstm__admit_pin): a second
 *    and a third transaction sleep at their begin while the first is in
 *    flight and are admitted one at a time, in order, as the ones before
 *    them commit.
 *  - Its mechanism, through the library: threads that conflict under
 *    "admit" on a shared counter all commit and the counter is exact; the
 *    policy reports its gate in sstm_describe. Which windows turn the gate
 *    on depends on timing, so nothing here asserts that it did.
 * Every expectation follows from the rules at the top of admit.c.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "../common/runner.h"
#include "../common/txhelp.h"
#include "cm/common.h"
#include "os/os.h"

/* counts with exactly `apc` aborts per commit over `commits` commits */
static bool feed(sstm__admit_judge_t *j, uint64_t commits, double apc, unsigned threads,
                 uint64_t limit) {
  return sstm__admit_decide(j, commits, (uint64_t)(apc * (double)commits + 0.5), threads, limit);
}

TEST(off_at_or_below_the_limit) {
  sstm__admit_judge_t j = {0};
  /* many conflicts, but no more threads than transactions allowed in flight */
  CHECK_FALSE(feed(&j, 100000, 0.5, 2, 2));
  CHECK_FALSE(feed(&j, 100000, 0.5, 1, 2));
  CHECK_FALSE(j.on);
  CHECK_TRUE(feed(&j, 100000, 0.5, 3, 2));  /* one more thread: on */
  CHECK_FALSE(feed(&j, 100000, 0.5, 2, 2)); /* back to the limit: off at once */
  CHECK_EQ_U(j.calm, 0);
}

TEST(on_needs_the_rate_and_enough_events) {
  sstm__admit_judge_t j = {0};
  /* just under the rate: stays off, window after window */
  for (int i = 0; i < 10; i++)
    CHECK_FALSE(sstm__admit_decide(&j, 4097 * 4, 3, 64, 2));
  /* exactly the rate: on */
  CHECK_TRUE(sstm__admit_decide(&j, 4096 * 4, 4, 64, 2));
  /* too few events to judge, however many aborts */
  sstm__admit_judge_t k = {0};
  CHECK_FALSE(sstm__admit_decide(&k, 10, ADMIT_MIN_EVENTS - 11, 64, 2));
  CHECK_TRUE(sstm__admit_decide(&k, 10, ADMIT_MIN_EVENTS - 10, 64, 2));
  /* no commit at all, only aborts: on (the rate is aborts per commit) */
  sstm__admit_judge_t z = {0};
  CHECK_TRUE(sstm__admit_decide(&z, 0, 100, 64, 2));
}

TEST(off_after_calm_windows_in_a_row) {
  sstm__admit_judge_t j = {0};
  CHECK_TRUE(feed(&j, 100000, 0.01, 64, 2));
  /* between the two rates: on, calm count 0 */
  CHECK_TRUE(feed(&j, 1000000, 2.0 / 32768, 64, 2));
  CHECK_EQ_U(j.calm, 0);
  /* calm windows: on until ADMIT_OFF_WINDOWS of them in a row */
  for (unsigned i = 1; i < ADMIT_OFF_WINDOWS; i++) {
    CHECK_TRUE(feed(&j, 1000000, 0.0, 64, 2));
    CHECK_EQ_U(j.calm, i);
  }
  /* one busier window restarts the count */
  CHECK_TRUE(feed(&j, 1000000, 0.001, 64, 2));
  CHECK_EQ_U(j.calm, 0);
  for (unsigned i = 1; i < ADMIT_OFF_WINDOWS; i++)
    CHECK_TRUE(feed(&j, 1000000, 0.0, 64, 2));
  CHECK_FALSE(feed(&j, 1000000, 0.0, 64, 2)); /* the last calm one: off */
  CHECK_EQ_U(j.calm, 0);
  /* off, a rate between the two does not turn it on again */
  CHECK_FALSE(feed(&j, 1000000, 2.0 / 32768, 64, 2));
  /* an empty window while on counts as calm (nothing happened) */
  CHECK_TRUE(feed(&j, 100000, 0.01, 64, 2));
  CHECK_TRUE(sstm__admit_decide(&j, 0, 0, 64, 2));
  CHECK_EQ_U(j.calm, 1);
}

/* ---- the mechanism: conflicting threads under admit ---- */

#define ADM_THREADS 16
#define ADM_TX 3000
static uint64_t counter __attribute__((aligned(64)));

static void bump(void *arg) {
  (void)arg;
  uint64_t v = sstm_load_u64(&counter);
  for (volatile int i = 0; i < 50; i++) { /* widen the conflict window */
  }
  sstm_store_u64(&counter, v + 1);
}

static void adm_thread(sstm_tt_t *t) {
  (void)t;
  for (int i = 0; i < ADM_TX; i++)
    CHECK_OK(sstm_run(NULL, bump, NULL));
}

TEST(conflicting_threads_all_commit) {
  sstm_config_t cfg;
  sstm_test_config(&cfg);
  cfg.cm = "admit";
  CHECK_OK(sstm_init(&cfg));
  CHECK_OK(sstm_thread_init());
  counter = 0;
  unsigned n = sstm_test_threads(ADM_THREADS);
  sstm_test_run_threads(n, true, adm_thread, NULL);
  CHECK_EQ_U(tx_load_u64(&counter), (uint64_t)n * ADM_TX);
  char buf[2048];
  CHECK_GT_I(sstm_describe(buf, sizeof buf), 0);
  CHECK_MSG(strstr(buf, "gate=") != NULL, "no gate in: %s", buf);
  sstm_stats_t st;
  CHECK_OK(sstm_stats_aggregate(&st));
  CHECK_GE_U(st.commits_update, (uint64_t)n * ADM_TX);
  printf("admit: %llu update commits, %llu aborts, admission waits %llu, timeouts %llu, "
         "switches %llu\n",
         (unsigned long long)st.commits_update, (unsigned long long)st.aborts_total,
         (unsigned long long)st.cm_stats[2], (unsigned long long)st.cm_stats[3],
         (unsigned long long)st.cm_stats[4]);
  sstm_test_fini();
}

/* ---- the gate, pinned on with a limit of 1 and no wait bound ---- */

/* A holds a transaction in flight; B, then C begin and must sleep at their
 * begin (seen in FUTEX_WAIT); A's commit admits B alone (C still asleep
 * while B is in flight: the limit, and FIFO order); B's commit admits C.
 * Each step waits for an event, none for time. A lost hand-over leaves a
 * thread asleep for ever (no bound): the watchdog fails the test. */
enum { G_A, G_B, G_C, G_N };
static struct {
  _Atomic int tid[G_N];
  _Atomic int in_body[G_N]; /* inside its transaction's body (admitted) */
  _Atomic int may_end[G_N];
  _Atomic int done[G_N];
} g;
static uint64_t gword[G_N];

static void g_body(void *arg) {
  int i = (int)(intptr_t)arg;
  sstm_store_u64(&gword[i], sstm_load_u64(&gword[i]) + 1);
  atomic_store(&g.in_body[i], 1);
  while (!atomic_load(&g.may_end[i]))
    sched_yield();
}

static void *g_thread(void *arg) {
  int i = (int)(intptr_t)arg;
  atomic_store(&g.tid[i], sstm__gettid());
  CHECK_OK(sstm_thread_init());
  CHECK_OK(sstm_run(NULL, g_body, arg));
  atomic_store(&g.done[i], 1);
  CHECK_OK(sstm_thread_exit());
  return NULL;
}

static void await_asleep(int i) {
  while (atomic_load(&g.tid[i]) == 0 || !sstm_test_in_futex(atomic_load(&g.tid[i])))
    sched_yield();
}

TEST(gate_admits_in_order_one_at_a_time) {
  sstm_config_t cfg;
  sstm_test_config(&cfg);
  cfg.cm = "admit";
  CHECK_OK(sstm_init(&cfg));
  CHECK_OK(sstm_thread_init());
  sstm__admit_pin(true, 1, 0);
  memset(&g, 0, sizeof g);
  memset(gword, 0, sizeof gword);
  pthread_t th[G_N];
  CHECK_EQ_I(pthread_create(&th[G_A], NULL, g_thread, (void *)(intptr_t)G_A), 0);
  while (!atomic_load(&g.in_body[G_A])) /* A admitted: the gate was free */
    sched_yield();
  CHECK_EQ_I(pthread_create(&th[G_B], NULL, g_thread, (void *)(intptr_t)G_B), 0);
  await_asleep(G_B); /* B sleeps behind A (ticket 1) */
  CHECK_EQ_I(pthread_create(&th[G_C], NULL, g_thread, (void *)(intptr_t)G_C), 0);
  await_asleep(G_C); /* C behind B (ticket 2) */
  CHECK_FALSE(atomic_load(&g.in_body[G_B]));
  CHECK_FALSE(atomic_load(&g.in_body[G_C]));
  atomic_store(&g.may_end[G_A], 1);
  while (!atomic_load(&g.in_body[G_B])) /* A's commit admits B ... */
    sched_yield();
  CHECK_EQ_I(pthread_join(th[G_A], NULL), 0);
  /* ... and not C: B is in flight, the limit is 1 (C may be between two
   * sleeps, never in its body) */
  for (int k = 0; k < 3; k++) {
    await_asleep(G_C);
    CHECK_FALSE(atomic_load(&g.in_body[G_C]));
    sched_yield();
  }
  atomic_store(&g.may_end[G_B], 1);
  atomic_store(&g.may_end[G_C], 1);
  CHECK_EQ_I(pthread_join(th[G_B], NULL), 0);
  CHECK_EQ_I(pthread_join(th[G_C], NULL), 0);
  for (int i = 0; i < G_N; i++)
    CHECK_EQ_U(tx_load_u64(&gword[i]), 1);
  sstm_stats_t st;
  CHECK_OK(sstm_stats_aggregate(&st));
  CHECK_EQ_U(st.cm_stats[2], 2); /* admission waits: B and C */
  CHECK_EQ_U(st.cm_stats[3], 0); /* no timeouts (no bound) */
  sstm_test_fini();
}

SSTM_TEST_MAIN()
