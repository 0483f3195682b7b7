/* SPDX-License-Identifier: MIT */
/* softser lowers a loser's thread holding no lock (src/cm/softser.c, the
 * top comment), through the SSTM_SEAM_SOFTSER_LOWER seam (debug builds
 * only).
 *
 * A loser that lowered itself while holding the winner's list lock or its
 * own priority lock could be preempted as the system call returned, and the
 * winner's commit (column_clear, row_dec) then waited for the lowered thread:
 * a priority inversion that cost commits milliseconds each (docs/benchmarks.md,
 * "Figures behind the design"). Here the
 * winner commits on another thread from inside the seam, just before the
 * loser's lowering call; with a lock still held the commit cannot finish,
 * the seam waits for it forever, and the runner's watchdog fails the test. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "core/engine.h"

#include "../common/txhelp.h"

static uint64_t x;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int stage; /* 1: winner holds x; 2: commit now; 3: winner committed */
static int seam_calls;
static const void *loser;

static void set_stage(int s) {
  pthread_mutex_lock(&mu);
  if (s > stage) stage = s; /* stages only advance */
  pthread_cond_broadcast(&cv);
  pthread_mutex_unlock(&mu);
}

/* Wait for stage s, without a time limit: a wait that never ends is a
 * deadlock, which the runner's watchdog (SSTM_TEST_WATCHDOG) turns into a
 * failure; no verdict here depends on how fast the machine is. */
static void wait_stage(int s) {
  pthread_mutex_lock(&mu);
  while (stage < s)
    pthread_cond_wait(&cv, &mu);
  pthread_mutex_unlock(&mu);
}

static void winner_body(void *arg) {
  (void)arg;
  sstm_store_u64(&x, 1); /* ETL: x's stripe is locked from here */
  set_stage(1);
  /* Commit only when the loser, in the seam, says so (the watchdog of the
   * runner ends a test whose seam never fires). */
  wait_stage(2);
}

static void *winner(void *arg) {
  (void)arg;
  CHECK_OK(sstm_thread_init());
  CHECK_OK(sstm_run(NULL, winner_body, NULL));
  set_stage(3);
  CHECK_OK(sstm_thread_exit());
  return NULL;
}

static void seam_fn(sstm_seam_t where, const void *addr) {
  if (where != SSTM_SEAM_SOFTSER_LOWER || addr != loser) return;
  if (++seam_calls > 1) return; /* counted: the test fails on it below */
  set_stage(2);
  /* The winner's commit clears its column of the conflict matrix: it takes
   * its list lock and our priority lock. Both must be free now: if the
   * loser held one here, the two threads would wait for each other until
   * the watchdog fails the test. */
  wait_stage(3);
}

static int loser_attempts;
static void loser_body(void *arg) {
  (void)arg;
  loser_attempts++;
  sstm_store_u64(&x, 2); /* the first attempt meets the winner's lock */
}

TEST_ETL(loser_lowers_itself_holding_no_lock) {
  sstm_config_t c;
  sstm_test_config(&c);
  c.cm = "softser";
  CHECK_OK(sstm_init(&c));
  CHECK_OK(sstm_thread_init());
  if (!txh_debug_build()) {
    sstm_test_fini();
    sstm_test_skip("the seams exist in SCHEDSTM_DEBUG builds only");
  }
  char d[512];
  sstm_describe(d, sizeof d);
  if (strstr(d, "lever=none")) {
    sstm_test_fini();
    sstm_test_skip("no softser lever can be undone here");
  }
  loser = sstm_self();
  atomic_store_explicit(&sstm__test_seam, seam_fn, memory_order_relaxed);
  pthread_t th;
  CHECK_EQ_I(pthread_create(&th, NULL, winner, NULL), 0);
  wait_stage(1);
  CHECK_OK(sstm_run(NULL, loser_body, NULL));
  CHECK_EQ_I(pthread_join(th, NULL), 0);
  atomic_store_explicit(&sstm__test_seam, NULL, memory_order_relaxed);
  CHECK_EQ_I(seam_calls, 1);
  CHECK_GE_I(loser_attempts, 2);
  CHECK_EQ_U(tx_load_u64(&x), 2);
  /* the winner ended before the lowering settled: the loser restored
   * itself at once (lower_self), and its commit left nothing lowered */
  sstm_stats_t st;
  CHECK_OK(sstm_stats_get(sstm_self(), &st));
  CHECK_EQ_U(st.cm_stats[2], 0); /* prio_failures */
  CHECK_EQ_U(st.cm_stats[0], 2); /* prio_changes: lowered, then restored by itself */
  sstm_test_fini();
}

SSTM_TEST_MAIN()
