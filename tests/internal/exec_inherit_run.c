/* SPDX-License-Identifier: MIT */
/* The executor's INHERIT rule for a conflict with a paused transaction
 * (src/exec/exec.c, yield_decide; include/schedstm/exec.h,
 * SSTM_EXEC_PAUSED_CONFLICT_INHERIT), end to end on one worker, with the
 * rule's inputs chosen by the test (a seam, sstm__x_test_inherit_in)
 * instead of made with wall-clock margins: a worker stalled for any time
 * anywhere changes nothing below. The rule on numbers alone is
 * tests/internal/exec_inherit.c.
 *
 * A low request (priority 0) writes `held` (encounter-time locking: its
 * lock is taken then, and kept while it is paused) and then reads another
 * word until released. A high request (2) preempts it and meets the lock.
 * The seam checks that the rule is asked about these two (the paused low
 * one as h, the high one as c, with their priorities), then sets the run
 * times:
 *   the holder did more   e_h 1 s, e_c 0, no level average: the high one
 *                         gives its worker to the low one, which resumes
 *                         with the high one's priority (inherited: it is
 *                         not preempted back), ends without an abort, and
 *                         the high one then goes on and commits;
 *   the holder did less   e_h 0, e_c 1 s: the high one keeps its worker,
 *                         the engine takes the low one over (its write is
 *                         rolled back), the high one commits first, the low
 *                         one retries when resumed.
 * Either way `held` ends at 1 + 10. Each case runs under both ways of
 * preempting (signal, poll); in this statically linked test the signal's
 * redirect refuses and leaves a standing request, so both switch at the
 * low one's next read. */
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <schedstm/exec.h>

#include "exec/exec_internal.h"
#include "exec_cfg.h"
#include "exec_sum.h"
#include "runner.h"

/* Apart, under different locks: a read of a word under a lock the
 * transaction owns is not a polled point. */
static uint64_t held __attribute__((aligned(128))), other __attribute__((aligned(128)));
static _Atomic int low_started, high_started, release;

static void low(void *a) {
  (void)a;
  sstm_store_u64(&held, sstm_load_u64(&held) + 1);
  atomic_store_explicit(&low_started, 1, memory_order_seq_cst);
  while (!atomic_load_explicit(&release, memory_order_seq_cst))
    (void)sstm_load_u64(&other); /* a polled point */
}

static void high(void *a) {
  (void)a;
  atomic_store_explicit(&high_started, 1, memory_order_seq_cst);
  sstm_store_u64(&held, sstm_load_u64(&held) + 10); /* meets the paused one's lock */
}

/* What the seam saw and what it sets. */
static bool holder_did_more;
static _Atomic int seam_calls, seam_bad;

static void seam(sstm_x_inherit_in_t *in) {
  atomic_fetch_add_explicit(&seam_calls, 1, memory_order_relaxed);
  if (in->h_req->fn != low || in->c_req->fn != high || in->h_prio != 0 || in->c_prio != 2)
    atomic_store_explicit(&seam_bad, 1, memory_order_relaxed);
  in->e_h = holder_did_more ? 1000000000u : 0;
  in->e_c = holder_did_more ? 0 : 1000000000u;
  in->avg_h = 0;
}

static void run(bool did_more, sstm_exec_preempt_t mode) {
  sstm_config_t cfg;
  sstm_test_config(&cfg);
  cfg.design = SSTM_DESIGN_ETL; /* the lock is held before the commit */
  CHECK_OK(sstm_init(&cfg));
  sstm_exec_config_t c = sstm_test_exec_config(1, 64, 4, mode);
  c.poll_fallback_us = 200;
  c.c_max = 0;
  c.paused_conflict = SSTM_EXEC_PAUSED_CONFLICT_INHERIT;
  sstm_exec_t *ex;
  CHECK_OK(sstm_exec_create(&c, &ex));
  held = other = 0;
  atomic_store_explicit(&low_started, 0, memory_order_seq_cst);
  atomic_store_explicit(&high_started, 0, memory_order_seq_cst);
  atomic_store_explicit(&release, 0, memory_order_seq_cst);
  atomic_store_explicit(&seam_calls, 0, memory_order_seq_cst);
  atomic_store_explicit(&seam_bad, 0, memory_order_seq_cst);
  holder_did_more = did_more;
  atomic_store_explicit(&sstm__x_test_inherit_in, seam, memory_order_relaxed);
  sstm_exec_future_t lf, hf;
  sstm_exec_req_t lo = {.fn = low, .priority = 0, .future = &lf};
  sstm_exec_req_t hi = {.fn = high, .priority = 2, .future = &hf};
  CHECK_OK(sstm_exec_submit(ex, &lo));
  while (!atomic_load_explicit(&low_started, memory_order_seq_cst))
    sched_yield();
  CHECK_OK(sstm_exec_submit(ex, &hi));
  /* The high one runs only once the low one, holding its lock, is paused
   * (one worker); it meets the lock and the rule decides, once. */
  while (SUM(ex, handovers) + SUM(ex, passed) == 0)
    sched_yield();
  if (did_more) {
    /* The low one runs again, still in its first attempt: the high one
     * cannot end before it, whose lock it waits for. */
    CHECK_FALSE(sstm_exec_done(&hf));
    atomic_store_explicit(&release, 1, memory_order_seq_cst);
    CHECK_OK(sstm_exec_wait(&lf));
    CHECK_OK(sstm_exec_wait(&hf));
  } else {
    /* The high one took the lock over and ends with the low one paused. */
    CHECK_OK(sstm_exec_wait(&hf));
    CHECK_FALSE(sstm_exec_done(&lf));
    CHECK_EQ_U(held, 10); /* the low one's write rolled back */
    atomic_store_explicit(&release, 1, memory_order_seq_cst);
    CHECK_OK(sstm_exec_wait(&lf));
  }
  atomic_store_explicit(&sstm__x_test_inherit_in, NULL, memory_order_relaxed);
  CHECK_EQ_U(held, 11);
  CHECK_EQ_I(atomic_load_explicit(&seam_calls, memory_order_seq_cst), 1);
  CHECK_EQ_I(atomic_load_explicit(&seam_bad, memory_order_seq_cst), 0);
  sstm_exec_level_stats_t st;
  do
    CHECK_OK(sstm_exec_stats(ex, 0, &st));
  while (st.completed == 0 && (sched_yield(), 1));
  CHECK_EQ_U(st.preemptions, 1);
  CHECK_EQ_U(st.promotions, 0); /* an inherited priority is not a promotion */
  if (did_more) {
    CHECK_EQ_U(st.aborts, 0); /* not killed: it kept its work */
    CHECK_EQ_U(SUM(ex, handovers), 1);
    CHECK_EQ_U(SUM(ex, inherits), 1);
    CHECK_EQ_U(SUM(ex, passed), 0);
  } else {
    CHECK_EQ_U(st.aborts, 1); /* taken over while paused, retried on resume */
    CHECK_EQ_U(SUM(ex, handovers), 0);
    CHECK_EQ_U(SUM(ex, inherits), 0);
    CHECK_EQ_U(SUM(ex, passed), 1);
  }
  CHECK_OK(sstm_exec_destroy(ex));
  CHECK_OK(sstm_shutdown());
}

TEST(the_holder_that_did_more_keeps_its_work) {
  run(true, SSTM_EXEC_PREEMPT_SIGNAL);
  run(true, SSTM_EXEC_PREEMPT_POLL);
}

TEST(the_holder_that_did_less_is_taken_over) {
  run(false, SSTM_EXEC_PREEMPT_SIGNAL);
  run(false, SSTM_EXEC_PREEMPT_POLL);
}

SSTM_TEST_MAIN()
