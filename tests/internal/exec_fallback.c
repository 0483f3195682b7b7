/* SPDX-License-Identifier: MIT */
/* The executor: the polled mode's fallback signal is disarmed once the
 * worker has looked at its queue for itself (src/exec/preempt.c, "the
 * fallback's disarming"). A submitter that asks a worker to preempt in
 * the polled mode sets the transaction's request and arms a one-shot
 * timer that would signal the worker after poll_fallback_us; the worker
 * takes the request at its next transactional read (or pops the urgent
 * request when its transaction ends) long before that, and the signal
 * would then only cost it a delivery and a handler.
 *
 * One worker, the fallback at its maximum (1 s). The urgent request asks
 * the kernel whether the worker's timer is still armed (a test seam,
 * timer_gettime) once the submission that kicked has returned, so in the
 * place that each case tests and before the other place could disarm it;
 * after each round every fallback armed must be accounted for as disarmed
 * or fired, and none armed. Without the disarming the timer is still armed
 * after each round (and fires a second later, a signal for nothing): the
 * check fails at the first round.
 *
 * Nothing here depends on a time. A host that stalls a round for over a
 * second lets its fallback fire first, and that only moves the round's
 * fallback from disarmed to fired, which the accounting allows: in this
 * statically linked test the signal's redirect refuses (the engine's code
 * range holds the program's, and under TSan it always refuses; the cases
 * check that the facility says so) and
 * leaves a standing request, which the next polled point takes: the read
 * the first case would have switched at anyway, and in the second case
 * none (a read-only commit is no polled point), so the outcome is the
 * same. The third case makes that happen on purpose: a 1 ms fallback, and
 * the round goes on only once it has fired.
 *
 * The cases, one per place where the worker disarms and one where it has
 * nothing left to disarm:
 *   disarmed_at_the_check   the preemption check at a read (the low
 *                           transaction reads until the urgent one has run);
 *   disarmed_when_the_transaction_ends
 *                           a transaction that ends without another
 *                           preemption point (it spins on a plain flag until
 *                           the urgent request is submitted, then commits
 *                           read-only, and the worker pops the urgent one);
 *   fired_is_counted_once   the same transaction, its fallback fired while it
 *                           spins: counted fired, not also disarmed when the
 *                           transaction ends (the handler takes ARMED back
 *                           to IDLE), and not armed afterwards;
 *   fired_inside_the_kick   the same, but the fallback fires inside the kick,
 *                           after the kicker armed the timer and before it
 *                           published ARMED (a test seam waits there for the
 *                           signal): the kicker then publishes ARMED over a
 *                           timer that has expired, and the worker's disarm
 *                           when the transaction ends must not count that
 *                           fallback a second time. A host that stalls the
 *                           kicker for the fallback's 1 ms between those two
 *                           steps did this by chance. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <schedstm/exec.h>

#include "exec/exec_internal.h"
#include "exec_cfg.h"
#include "runner.h"

static uint64_t cell;
static _Atomic int low_started, urgent_ran, go, submitted;
/* The worker under test, and whether its fallback timer was armed when the
 * urgent request ran (-1: not looked at). */
static sstm_xworker_t *worker;
static int armed_in_urgent;

/* Reads until the urgent request has run (a preemption at one of the
 * reads lets it run); the cap only ends a broken build's run. */
static void low_reads(void *a) {
  int *saw = a;
  *saw = 0;
  atomic_store_explicit(&low_started, 1, memory_order_release);
  for (unsigned long i = 0; i < 4000000000ul; i++) {
    (void)sstm_load_u64(&cell);
    if (atomic_load_explicit(&urgent_ran, memory_order_acquire)) {
      *saw = 1;
      return;
    }
  }
}

/* One read, then no preemption point until the urgent request has been
 * submitted (its kick armed the fallback); then ends, read-only. */
static void low_quiet(void *a) {
  int *saw = a;
  (void)sstm_load_u64(&cell);
  atomic_store_explicit(&low_started, 1, memory_order_release);
  while (!atomic_load_explicit(&go, memory_order_acquire))
    sched_yield();
  *saw = atomic_load_explicit(&urgent_ran, memory_order_acquire);
}

/* Looks at the timer once the submission that kicked has returned (the
 * kicker's steps are all done): the worker has disarmed it already, at
 * the check that switched to this request or when the low one ended,
 * before anything else could (the end of this request). */
static void urgent_body(void *a) {
  (void)a;
  while (!atomic_load_explicit(&submitted, memory_order_acquire))
    sched_yield();
  armed_in_urgent = sstm__xp_test_fallback_armed(worker);
  (void)sstm_load_u64(&cell);
  atomic_store_explicit(&urgent_ran, 1, memory_order_release);
}

static uint64_t ld(_Atomic uint64_t *v) { return atomic_load_explicit(v, memory_order_relaxed); }

static const char *described_text(sstm_exec_t *ex) {
  static char buf[1024];
  CHECK(sstm_exec_describe(ex, buf, sizeof buf) > 0);
  return buf;
}

enum { AT_READ, AT_END, FIRED, FIRED_IN_KICK };

/* The seam between the kick's arming and its publishing: waits until the
 * worker's handler has taken this round's fallback signal. */
static _Atomic uint64_t fired_target;
static void wait_fired(sstm_xworker_t *w) {
  while (atomic_load_explicit(&w->fallbacks_fired, memory_order_relaxed) <
         atomic_load_explicit(&fired_target, memory_order_relaxed))
    sched_yield();
}

static void run_case(int kind) {
  const bool at_read = kind == AT_READ;
  sstm_config_t cfg;
  sstm_test_config(&cfg);
  CHECK_OK(sstm_init(&cfg));
  sstm_exec_config_t c = sstm_test_exec_config(1, 8, 8, SSTM_EXEC_PREEMPT_POLL);
  const bool fires = kind == FIRED || kind == FIRED_IN_KICK;
  c.poll_fallback_us = fires ? 1000 : 1000000;
  sstm_exec_t *ex;
  CHECK_OK(sstm_exec_create(&c, &ex));
  CHECK_CONTAINS(described_text(ex), "facility=poll-only("); /* static, or TSan */
  sstm_xworker_t *w = &ex->workers[0];
  worker = w;
  unsigned rounds = (unsigned)sstm_test_scaled(20, 5);
  for (unsigned r = 0; r < rounds; r++) {
    atomic_store_explicit(&low_started, 0, memory_order_relaxed);
    atomic_store_explicit(&urgent_ran, 0, memory_order_relaxed);
    atomic_store_explicit(&go, 0, memory_order_relaxed);
    atomic_store_explicit(&submitted, 0, memory_order_relaxed);
    armed_in_urgent = -1;
    int saw = -1;
    sstm_exec_future_t fl, fu;
    sstm_exec_req_t ql = {
        .fn = at_read ? low_reads : low_quiet, .arg = &saw, .priority = 0, .future = &fl};
    CHECK_OK(sstm_exec_submit(ex, &ql));
    while (!atomic_load_explicit(&low_started, memory_order_acquire))
      sched_yield();
    /* The worker runs the low transaction: this submission kicks it (the
     * polled request and the fallback timer) before it returns. */
    sstm_exec_req_t qu = {.fn = urgent_body, .priority = 7, .future = &fu};
    atomic_store_explicit(&fired_target, r + 1, memory_order_relaxed);
    /* relaxed: set and cleared on this thread, which is the kicker. */
    if (kind == FIRED_IN_KICK)
      atomic_store_explicit(&sstm__xp_test_armed, wait_fired, memory_order_relaxed);
    CHECK_OK(sstm_exec_submit(ex, &qu));
    atomic_store_explicit(&sstm__xp_test_armed, NULL, memory_order_relaxed);
    /* A stall of a second here, on purpose. */
    while (kind == FIRED && ld(&w->fallbacks_fired) < r + 1)
      sched_yield();
    atomic_store_explicit(&submitted, 1, memory_order_release);
    atomic_store_explicit(&go, 1, memory_order_release);
    CHECK_OK(sstm_exec_wait(&fl));
    CHECK_OK(sstm_exec_wait(&fu));
    /* At a read the urgent request preempted the low one; else the low
     * one ended first (nothing checked between the kick and its end). */
    CHECK_EQ_I(saw, at_read ? 1 : 0);
    sstm_exec_level_stats_t s;
    CHECK_OK(sstm_exec_stats(ex, 0, &s));
    CHECK_EQ_U(s.preemptions, at_read ? r + 1 : 0);
    /* Every kick armed the fallback; the kicker has returned and the
     * worker has run both requests, so each is disarmed or has fired. */
    CHECK_EQ_U(ld(&w->fallbacks), r + 1);
    CHECK_EQ_I(armed_in_urgent, 0); /* the future's wait orders the read */
    CHECK(!sstm__xp_test_fallback_armed(w));
    CHECK_EQ_U(ld(&w->fallbacks_disarmed) + ld(&w->fallbacks_fired), r + 1);
    if (fires) CHECK_EQ_U(ld(&w->fallbacks_fired), r + 1);
  }
  char buf[512];
  CHECK(sstm_exec_describe(ex, buf, sizeof buf) > 0);
  CHECK_CONTAINS(buf, "fallbacks=");
  CHECK_OK(sstm_exec_destroy(ex));
  sstm_shutdown();
}

TEST(disarmed_at_the_check) { run_case(AT_READ); }
TEST(disarmed_when_the_transaction_ends) { run_case(AT_END); }
TEST(fired_is_counted_once) { run_case(FIRED); }
TEST(fired_inside_the_kick) { run_case(FIRED_IN_KICK); }

SSTM_TEST_MAIN()
