/* SPDX-License-Identifier: MIT */
/* The executor's raise of preempted lock holders
 * (sstm_exec_config_t::holder_level; src/exec/exec.c, the preemption
 * check): a transaction that holds write locks when it is preempted is
 * queued at holder_level, hot, and resumed before the requests at that
 * level and below that have not started; a request at or below that level
 * does not preempt it at all. One worker, priorities 0..4, holder_level 2;
 * every step waits for an event (a body's mark, a counter), none for a
 * time. The order in which the bodies start and end is recorded:
 *   L / l   the low transaction (priority 0) starts / ends
 *   U       the urgent request (4) starts
 *   3 2 1   requests at 3, 2 and 1 start
 * Each case runs under both ways of preempting; in this statically linked
 * test the signal's redirect refuses and leaves a standing request, so
 * both switch at the low transaction's next read. */
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <schedstm/exec.h>

#include "exec/exec_internal.h"
#include "exec_cfg.h"
#include "exec_sum.h"
#include "runner.h"

static uint64_t held __attribute__((aligned(128))), other __attribute__((aligned(128)));
static _Atomic int release, go_urgent, go_3, low_in;
static char seq[16];
static _Atomic unsigned nseq;

static void mark(char ch) {
  unsigned i = atomic_fetch_add_explicit(&nseq, 1, memory_order_seq_cst);
  if (i < sizeof seq - 1) seq[i] = ch;
}

/* Reads `other` (a polled point each time) until released; with `arg`
 * it first writes `held`, whose lock (encounter-time locking) it then
 * holds. Marks once per request, whatever its attempts. */
static void low(void *arg) {
  if (arg) sstm_store_u64(&held, sstm_load_u64(&held) + 1);
  if (!atomic_exchange_explicit(&low_in, 1, memory_order_seq_cst)) mark('L');
  while (!atomic_load_explicit(&release, memory_order_seq_cst))
    (void)sstm_load_u64(&other);
  mark('l');
}

static void wait_flag(_Atomic int *f) {
  while (!atomic_load_explicit(f, memory_order_seq_cst))
    sched_yield();
}

static void urgent(void *a) {
  (void)a;
  mark('U');
  wait_flag(&go_urgent);
}
static void at3(void *a) {
  (void)a;
  mark('3');
  wait_flag(&go_3);
}
static void at2(void *a) {
  (void)a;
  mark('2');
}
static void at1(void *a) {
  (void)a;
  mark('1');
}

static sstm_exec_t *start(sstm_exec_preempt_t mode) {
  sstm_config_t cfg;
  sstm_test_config(&cfg);
  cfg.design = SSTM_DESIGN_ETL; /* the lock is held before the commit */
  CHECK_OK(sstm_init(&cfg));
  sstm_exec_config_t c = sstm_test_exec_config(1, 16, 5, mode);
  c.poll_fallback_us = 200;
  c.c_max = 0;
  c.holder_level = 2;
  sstm_exec_t *ex;
  CHECK_OK(sstm_exec_create(&c, &ex));
  char d[1024];
  CHECK(sstm_exec_describe(ex, d, sizeof d) > 0);
  CHECK_CONTAINS(d, "holder-level=2");
  held = other = 0;
  memset(seq, 0, sizeof seq);
  atomic_store_explicit(&nseq, 0, memory_order_seq_cst);
  atomic_store_explicit(&release, 0, memory_order_seq_cst);
  atomic_store_explicit(&go_urgent, 0, memory_order_seq_cst);
  atomic_store_explicit(&go_3, 1, memory_order_seq_cst);
  atomic_store_explicit(&low_in, 0, memory_order_seq_cst);
  return ex;
}

static void submit(sstm_exec_t *ex, void (*fn)(void *), void *arg, unsigned prio,
                   sstm_exec_future_t *f) {
  sstm_exec_req_t q = {.fn = fn, .arg = arg, .priority = prio, .future = f};
  CHECK_OK(sstm_exec_submit(ex, &q));
}

static void wait_seq(unsigned n) {
  while (atomic_load_explicit(&nseq, memory_order_seq_cst) < n)
    sched_yield();
}

static void finish(sstm_exec_t *ex, unsigned level0_preemptions) {
  sstm_exec_level_stats_t st;
  do
    CHECK_OK(sstm_exec_stats(ex, 0, &st));
  while (st.completed == 0 && (sched_yield(), 1));
  CHECK_EQ_U(st.preemptions, level0_preemptions);
  CHECK_EQ_U(st.promotions, 0); /* a raise is not a promotion */
  CHECK_EQ_U(st.aborts, 0);
  CHECK_OK(sstm_exec_destroy(ex));
  CHECK_OK(sstm_shutdown());
}

/* The low transaction holds a lock when the urgent request preempts it:
 * raised to 2, it resumes after the request at 3 and before those at 2
 * and 1 that were waiting (without the raise: after all of them). */
static void resumes_first(bool holds, sstm_exec_preempt_t mode) {
  sstm_exec_t *ex = start(mode);
  sstm_exec_future_t fl, fu, f3, f2, f1;
  submit(ex, low, holds ? &held : NULL, 0, &fl);
  wait_seq(1);
  submit(ex, urgent, NULL, 4, &fu);
  wait_seq(2); /* the urgent one runs: the low one is paused */
  CHECK_EQ_U(SUM(ex, holder_raises), holds ? 1 : 0);
  /* Queued behind the urgent one (it runs above them: nobody to preempt) */
  submit(ex, at1, NULL, 1, &f1);
  submit(ex, at2, NULL, 2, &f2);
  submit(ex, at3, NULL, 3, &f3);
  atomic_store_explicit(&release, 1, memory_order_seq_cst); /* seen when resumed */
  atomic_store_explicit(&go_urgent, 1, memory_order_seq_cst);
  CHECK_OK(sstm_exec_wait(&fl));
  CHECK_OK(sstm_exec_wait(&f1));
  CHECK_OK(sstm_exec_wait(&f2));
  CHECK_OK(sstm_exec_wait(&f3));
  CHECK_OK(sstm_exec_wait(&fu));
  CHECK_EQ_STR(seq, holds ? "LU3l21" : "LU321l");
  CHECK_EQ_U(SUM(ex, holder_kept), 0);
  finish(ex, 1);
}

TEST(a_lock_holder_resumes_before_waiting_requests_at_its_level) {
  resumes_first(true, SSTM_EXEC_PREEMPT_SIGNAL);
  resumes_first(true, SSTM_EXEC_PREEMPT_POLL);
}

TEST(a_transaction_without_locks_keeps_its_level) {
  resumes_first(false, SSTM_EXEC_PREEMPT_SIGNAL);
  resumes_first(false, SSTM_EXEC_PREEMPT_POLL);
}

/* A request at 2 asks the worker to preempt the low lock holder: kept
 * running, at 2 from then on. A request at 3 then preempts it (above its
 * level), and it resumes before the request at 2, which started last. */
static void kept(sstm_exec_preempt_t mode) {
  sstm_exec_t *ex = start(mode);
  atomic_store_explicit(&go_3, 0, memory_order_seq_cst);
  sstm_exec_future_t fl, f3, f2;
  submit(ex, low, &held, 0, &fl);
  wait_seq(1);
  submit(ex, at2, NULL, 2, &f2);
  while (SUM(ex, holder_kept) == 0) {
    /* the request at 2 waits (were it to preempt, it would run: fail then) */
    CHECK_EQ_U(atomic_load_explicit(&nseq, memory_order_seq_cst), 1);
    sched_yield();
  }
  CHECK_EQ_U(atomic_load_explicit(&nseq, memory_order_seq_cst), 1);
  submit(ex, at3, NULL, 3, &f3);
  wait_seq(2); /* the request at 3 runs: the low one is paused */
  atomic_store_explicit(&release, 1, memory_order_seq_cst);
  atomic_store_explicit(&go_3, 1, memory_order_seq_cst);
  CHECK_OK(sstm_exec_wait(&fl));
  CHECK_OK(sstm_exec_wait(&f2));
  CHECK_OK(sstm_exec_wait(&f3));
  CHECK_EQ_STR(seq, "L3l2");
  CHECK_EQ_U(SUM(ex, holder_kept), 1);
  CHECK_EQ_U(SUM(ex, holder_raises), 0); /* paused at 2 already: nothing to raise */
  finish(ex, 1);
}

TEST(a_lock_holder_is_not_preempted_at_or_below_its_level) {
  kept(SSTM_EXEC_PREEMPT_SIGNAL);
  kept(SSTM_EXEC_PREEMPT_POLL);
}

/* holder_level must name a level (0 = off). */
TEST(holder_level_out_of_range) {
  sstm_config_t cfg;
  sstm_test_config(&cfg);
  CHECK_OK(sstm_init(&cfg));
  sstm_exec_config_t c = sstm_test_exec_config(1, 4, 5, SSTM_EXEC_PREEMPT_SIGNAL);
  c.holder_level = 5;
  sstm_exec_t *ex = NULL;
  CHECK_EQ_I(sstm_exec_create(&c, &ex), SSTM_EINVAL);
  CHECK(ex == NULL);
  CHECK_CONTAINS(sstm_last_error(), "holder_level 5");
  c.holder_level = 4;
  CHECK_OK(sstm_exec_create(&c, &ex));
  CHECK_OK(sstm_exec_destroy(ex));
  CHECK_OK(sstm_shutdown());
}

SSTM_TEST_MAIN()
