/* SPDX-License-Identifier: MIT */
/* Integration: preemption in the executor (include/schedstm/exec.h). The
 * preemption mode comes from SCHEDSTM_EXEC_PREEMPT (signal or poll; the
 * ctest entries run each case under both).
 *
 *   preempts       one worker runs a low-priority transaction that can only
 *                  end after a high-priority one has run: without
 *                  preemption it never ends (the watchdog fails the test).
 *   bank           two workers, a stream of transfers at random priorities
 *                  with a periodic tick at a high rate as well: thousands
 *                  of preemptions at random points of the transactions,
 *                  resumed on the other worker as often as not. The total
 *                  stays right (audits inside transactions at the top
 *                  priority, and at the end); every transfer's FP/SIMD and
 *                  general registers, kept live across the preemptions,
 *                  come out as computed beforehand. Goes on until enough
 *                  preemptions and migrations were seen. The submitter
 *                  polls for a context instead of blocking (bank_submit
 *                  says why).
 *   engine_storm   a 50 us tick and a flood of higher-priority requests
 *                  while the bodies spend most of their time inside the
 *                  library (allocation, loads, stores, commits): a switch
 *                  inside the library would corrupt it (the bank total,
 *                  the allocator); signals that land there are refused
 *                  (counted) and served at the next barrier.
 *   engine_storm_adaptive   the same under the default policy (adaptive),
 *                  whose admission gate gives a context's place back
 *                  when it leaves its worker: a place kept would stall
 *                  the other contexts.
 *   standing       a request to preempt that arrives inside a
 *                  sstm_exec_nopreempt_begin/_end region stands, and is
 *                  replayed at the region's end: the high-priority request
 *                  runs before the low one ends, though the low one makes
 *                  no transactional access after the region.
 *   standing_after_last_access
 *                  the same with the request arriving after the region's
 *                  last transactional access: no barrier sees it, and the
 *                  region's end must still replay it.
 *   nudge          the worker told to preempt cannot (its transaction is in
 *                  a no-preemption region, as a worker off its CPU would be
 *                  for a scheduler slice), while the other worker runs a
 *                  lower priority than the urgent request: that one takes
 *                  it at its next barrier, before the first leaves its
 *                  region; without the polled request every other worker
 *                  gets, the urgent one waits for the region's end (the
 *                  watchdog fails the test).
 *   promoted_handover / promoted_takeover / promoted_inherit
 *                  a paused transaction promoted above a running one that
 *                  then meets its lock, built step by step: the running one
 *                  gives its worker to the paused one and resumes after it
 *                  (hand-over, and INHERIT, which gives it to a paused one
 *                  of higher priority whatever the run times), or kills it
 *                  and takes its lock over (take-over); nobody waits on the
 *                  paused one, and the counts and the data come out exactly.
 *                  (INHERIT against a paused holder of lower priority
 *                  depends on run times: tests/internal/exec_inherit_run.c.)
 *   c_max_promotes_to_the_top
 *                  with c_max 1 a preempted transaction goes to the top
 *                  level, where it resumes at once and ends before the
 *                  request it was preempted for starts.
 *   errno_kept     a body stopped by a redirect between setting errno and
 *                  reading it, while the urgent request sets errno on the
 *                  same thread, reads its own value.
 *   errno_moves    the same, resumed on the other worker.
 *   errno_kept_polled
 *                  errno_kept for a body switched out at a polled point
 *                  (its region's end): errno as it left it.
 *   deep_stack     the signal comes while the body runs within 512 bytes
 *                  of its stack's bottom: the handler refuses the redirect
 *                  (no room for the trampoline's frame) and the body's next
 *                  read takes the request; before, SIGSEGV in the
 *                  trampoline.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "exec_cfg.h"
#include "runner.h"

static sstm_exec_preempt_t mode(void) {
  sstm_exec_config_t c;
  sstm_exec_config_default(&c);
  CHECK_OK(sstm_exec_config_from_env(&c)); /* SCHEDSTM_EXEC_PREEMPT from the ctest entry */
  return c.preempt == SSTM_EXEC_PREEMPT_NONE ? SSTM_EXEC_PREEMPT_SIGNAL : c.preempt;
}

/* The library with the tests' policy, or with `cm` if not NULL. */
static void init_lib_cm(const char *cm) {
  sstm_config_t cfg;
  sstm_test_config(&cfg);
  if (cm) cfg.cm = cm;
  CHECK_OK(sstm_init(&cfg));
}

static void init_lib(void) { init_lib_cm(NULL); }

static sstm_exec_config_t xcfg(unsigned workers, unsigned levels) {
  sstm_exec_config_t c = sstm_test_exec_config(workers, 64, levels, mode());
  c.poll_fallback_us = 200;
  return c;
}

static const char *described_text(sstm_exec_t *ex) {
  static char buf[1024];
  sstm_exec_describe(ex, buf, sizeof buf);
  return buf;
}

static int tid(void) { return (int)syscall(SYS_gettid); }

/* ---- preempts ---- */

static uint64_t flag;
static _Atomic int high_ran;

static _Atomic int low_started;

static void low_waits_for_high(void *a) {
  (void)a;
  atomic_store_explicit(&low_started, 1, memory_order_seq_cst);
  /* user code between reads: the signal lands here (redirect) or the next
   * read picks the request up (poll) */
  while (sstm_load_u64(&flag) == 0) {
    for (volatile int i = 0; i < 2000; i++) {
    }
  }
}
static void high_sets_flag(void *a) {
  (void)a;
  sstm_store_u64(&flag, 1);
  atomic_store_explicit(&high_ran, 1, memory_order_seq_cst);
}

TEST(preempts) {
  init_lib();
  sstm_exec_config_t c = xcfg(1, 4);
  sstm_exec_t *ex;
  CHECK_OK(sstm_exec_create(&c, &ex));
  flag = 0;
  sstm_exec_future_t lf, hf;
  sstm_exec_req_t lo = {.fn = low_waits_for_high, .priority = 0, .future = &lf};
  CHECK_OK(sstm_exec_submit(ex, &lo));
  while (!atomic_load_explicit(&low_started, memory_order_seq_cst)) /* until the worker runs it */
    usleep(1000);
  sstm_exec_req_t hi = {.fn = high_sets_flag, .priority = 3, .future = &hf};
  CHECK_OK(sstm_exec_submit(ex, &hi));
  CHECK_OK(sstm_exec_wait(&hf));
  CHECK_OK(sstm_exec_wait(&lf));
  sstm_exec_level_stats_t st;
  do /* the statistics are summed just after the future is set */
    CHECK_OK(sstm_exec_stats(ex, 0, &st));
  while (st.completed == 0 && (usleep(1000), 1));
  CHECK_GE_U(st.preemptions, 1);
  CHECK_EQ_U(st.completed, 1);
  CHECK_GE_U(sstm_test_exec_counter(ex, "switches"), 1);
  CHECK_OK(sstm_exec_destroy(ex));
  CHECK_OK(sstm_shutdown());
}

/* ---- ticks without preemption ---- */

static _Atomic int release_low, order;
static int low_end, high_end;

static void low_until_released(void *a) {
  (void)a;
  atomic_store_explicit(&low_started, 1, memory_order_seq_cst);
  while (!atomic_load_explicit(&release_low, memory_order_seq_cst)) {
    (void)sstm_load_u64(&flag); /* a polled point, where a refused tick stands */
    for (volatile int i = 0; i < 2000; i++) {
    }
  }
  low_end = atomic_fetch_add_explicit(&order, 1, memory_order_seq_cst);
}
static void high_marks(void *a) {
  (void)a;
  sstm_store_u64(&flag, sstm_load_u64(&flag) + 1);
  high_end = atomic_fetch_add_explicit(&order, 1, memory_order_seq_cst);
}

/* SSTM_EXEC_PREEMPT_CHECK_ONLY: the ticks reach the check, which finds the
 * high request waiting and declines, again and again; the low one is never
 * switched out and ends first, the high one after it. */
TEST(ticks_never_switch) {
  init_lib();
  sstm_exec_config_t c = xcfg(1, 4);
  c.preempt = SSTM_EXEC_PREEMPT_CHECK_ONLY;
  c.tick_us = 50;
  sstm_exec_t *ex;
  CHECK_OK(sstm_exec_create(&c, &ex));
  CHECK_CONTAINS(described_text(ex), "preempt=check-only");
  atomic_store_explicit(&low_started, 0, memory_order_seq_cst);
  atomic_store_explicit(&release_low, 0, memory_order_seq_cst);
  atomic_store_explicit(&order, 0, memory_order_seq_cst);
  sstm_exec_future_t lf, hf;
  sstm_exec_req_t lo = {.fn = low_until_released, .priority = 0, .future = &lf};
  CHECK_OK(sstm_exec_submit(ex, &lo));
  while (!atomic_load_explicit(&low_started, memory_order_seq_cst))
    usleep(1000);
  sstm_exec_req_t hi = {.fn = high_marks, .priority = 3, .future = &hf};
  CHECK_OK(sstm_exec_submit(ex, &hi));
  /* Until three ticks found the high one waiting and did not switch: an
   * event, whatever the time it takes. */
  while (sstm_test_exec_counter(ex, "declined") < 3)
    usleep(1000);
  CHECK_FALSE(sstm_exec_done(&hf)); /* it waits behind the low one */
  atomic_store_explicit(&release_low, 1, memory_order_seq_cst);
  CHECK_OK(sstm_exec_wait(&lf));
  CHECK_OK(sstm_exec_wait(&hf));
  CHECK_EQ_I(low_end, 0);
  CHECK_EQ_I(high_end, 1);
  CHECK_EQ_U(sstm_test_exec_counter(ex, "switches"), 0);
  CHECK_GE_U(sstm_test_exec_counter(ex, "checks"), 3);
  sstm_exec_level_stats_t st;
  do
    CHECK_OK(sstm_exec_stats(ex, 0, &st));
  while (st.completed == 0 && (usleep(1000), 1));
  CHECK_EQ_U(st.preemptions, 0);
  CHECK_EQ_U(st.paused_ns, 0);
  CHECK_OK(sstm_exec_destroy(ex));
  CHECK_OK(sstm_shutdown());
}

/* ---- conflicts with a paused transaction of higher priority ---- */

/* Apart, under different locks: a read of a word under a lock the
 * transaction owns is not a polled point. */
static uint64_t held __attribute__((aligned(128))), other __attribute__((aligned(128)));
static _Atomic int pc_low_started, pc_high_started, pc_release;

/* Writes `held` first (encounter-time locking: its lock is taken now and
 * kept while the transaction is paused), then reads until released. */
static void pc_low(void *a) {
  (void)a;
  sstm_store_u64(&held, sstm_load_u64(&held) + 1);
  atomic_store_explicit(&pc_low_started, 1, memory_order_seq_cst);
  while (!atomic_load_explicit(&pc_release, memory_order_seq_cst)) {
    (void)sstm_load_u64(&other); /* a polled point */
    for (volatile int i = 0; i < 2000; i++) {
    }
  }
}
static void pc_high(void *a) {
  (void)a;
  atomic_store_explicit(&pc_high_started, 1, memory_order_seq_cst);
  sstm_store_u64(&held, sstm_load_u64(&held) + 10); /* meets the paused one's lock */
}

/* One worker, no promotion: the low request (0) is preempted by the high
 * one (2) while it holds `held`, and the high one meets that lock. The
 * paused holder has the lower priority, so under both rules it is killed
 * (an aborted attempt, retried on resume) and its lock taken over: the
 * high one never waits for a paused transaction, and hands its worker over
 * only to a paused one of higher priority (that case is the engine's
 * tests/internal/exec_services.c; in an executor it arises only when
 * promotions leave several paused transactions above a running one).
 * Both commit once: held ends at 11. */
static void paused_conflict(sstm_exec_paused_conflict_t rule) {
  sstm_config_t cfg;
  sstm_test_config(&cfg);
  cfg.design = SSTM_DESIGN_ETL; /* the lock is held before the commit */
  CHECK_OK(sstm_init(&cfg));
  sstm_exec_config_t c = xcfg(1, 4);
  c.c_max = 0;
  c.paused_conflict = rule;
  sstm_exec_t *ex;
  CHECK_OK(sstm_exec_create(&c, &ex));
  CHECK_CONTAINS(described_text(ex), rule == SSTM_EXEC_PAUSED_CONFLICT_HANDOVER
                                         ? "paused-conflict=handover"
                                         : "paused-conflict=takeover");
  held = 0;
  atomic_store_explicit(&pc_low_started, 0, memory_order_seq_cst);
  atomic_store_explicit(&pc_high_started, 0, memory_order_seq_cst);
  atomic_store_explicit(&pc_release, 0, memory_order_seq_cst);
  sstm_exec_future_t lf, hf;
  sstm_exec_req_t lo = {.fn = pc_low, .priority = 0, .future = &lf};
  CHECK_OK(sstm_exec_submit(ex, &lo));
  while (!atomic_load_explicit(&pc_low_started, memory_order_seq_cst))
    usleep(1000);
  sstm_exec_req_t hi = {.fn = pc_high, .priority = 2, .future = &hf};
  CHECK_OK(sstm_exec_submit(ex, &hi));
  while (!atomic_load_explicit(&pc_high_started,
                               memory_order_seq_cst)) /* the low one was paused for it */
    usleep(1000);
  CHECK_OK(sstm_exec_wait(&hf)); /* it took the lock over: it ends with the low one paused */
  atomic_store_explicit(&pc_release, 1, memory_order_seq_cst);
  CHECK_OK(sstm_exec_wait(&lf));
  CHECK_OK(sstm_exec_wait(&hf));
  CHECK_EQ_U(held, 11);
  sstm_exec_level_stats_t st;
  do
    CHECK_OK(sstm_exec_stats(ex, 0, &st));
  while (st.completed == 0 && (usleep(1000), 1));
  CHECK_EQ_U(st.preemptions, 1);
  CHECK_EQ_U(st.promotions, 0);
  CHECK_EQ_U(sstm_test_exec_counter(ex, "handovers"), 0);
  CHECK_GE_U(st.aborts, 1); /* killed while paused, retried on resume */
  CHECK_OK(sstm_exec_destroy(ex));
  CHECK_OK(sstm_shutdown());
}

TEST(paused_conflict_takeover) { paused_conflict(SSTM_EXEC_PAUSED_CONFLICT_TAKEOVER); }
TEST(paused_conflict_handover) { paused_conflict(SSTM_EXEC_PAUSED_CONFLICT_HANDOVER); }

/* INHERIT's choice between a paused lock holder of lower priority and the
 * transaction it blocks depends on their attempts' run times: its two
 * outcomes are tests/internal/exec_inherit_run.c, which sets those times
 * through a test seam instead of making them with wall-clock margins. A
 * paused holder of higher priority gets the worker whatever the times:
 * promoted_inherit below. */
/* ---- a promoted paused transaction above a running one, end to end ---- */

/* Two transactions of the same priority run on the two workers, each
 * holding the lock of its own cell. A more urgent request preempts one of
 * them (the worker of lowest index: the submitter's tie rule); lazy
 * promotion puts the paused one (P) one level above the other (R), which
 * keeps running, while the urgent request keeps the worker it took. Then R
 * meets P's lock: the situation that only promotions create in an
 * executor. Every step waits for an event (a flag a body sets, a counter
 * of the executor), none for a time. Which of the two is P is learnt, not
 * assumed: P last ran on the worker the urgent request now runs on. */
static struct {
  _Alignas(128) uint64_t v;
} pr_cell[3]; /* cells 0 and 1: one per transaction; 2: where they poll */
static _Atomic int pr_started[2], pr_go[2], pr_h_started, pr_h_go;
static _Atomic int pr_tid[2], pr_end_tid[2], pr_h_tid;
static _Atomic uint64_t pr_attempts[2];
enum { PR_WAIT = 0, PR_FINISH = 1, PR_WRITE_OTHER = 2 };

static void pr_body(void *a) {
  unsigned i = (unsigned)(uintptr_t)a;
  atomic_fetch_add_explicit(&pr_attempts[i], 1, memory_order_seq_cst);
  /* encounter-time locking: the lock of cell i is taken here and kept
   * while the transaction is paused */
  sstm_store_u64(&pr_cell[i].v, sstm_load_u64(&pr_cell[i].v) + 1);
  if (!atomic_load_explicit(&pr_started[i],
                            memory_order_seq_cst)) { /* a retry keeps the first worker's id */
    atomic_store_explicit(&pr_tid[i], tid(), memory_order_seq_cst);
    atomic_store_explicit(&pr_started[i], 1, memory_order_seq_cst);
  }
  int g;
  while ((g = atomic_load_explicit(&pr_go[i], memory_order_seq_cst)) == PR_WAIT) {
    (void)sstm_load_u64(&pr_cell[2].v); /* a polled point */
    for (volatile int k = 0; k < 500; k++) {
    }
  }
  if (g == PR_WRITE_OTHER) { /* meets the lock of the paused one */
    unsigned j = 1 - i;
    sstm_store_u64(&pr_cell[j].v, sstm_load_u64(&pr_cell[j].v) + 10);
  }
  atomic_store_explicit(&pr_end_tid[i], tid(), memory_order_seq_cst);
}

/* The urgent request: keeps its worker until released (no transactional
 * access: nothing outranks it anyway). */
static void pr_urgent(void *a) {
  (void)a;
  atomic_store_explicit(&pr_h_tid, tid(), memory_order_seq_cst);
  atomic_store_explicit(&pr_h_started, 1, memory_order_seq_cst);
  while (!atomic_load_explicit(&pr_h_go, memory_order_seq_cst))
    sched_yield();
}

static void wait_flag(_Atomic int *f) {
  while (!atomic_load_explicit(f, memory_order_seq_cst))
    sched_yield();
}

static void promoted_paused(sstm_exec_paused_conflict_t rule) {
  sstm_config_t cfg;
  sstm_test_config(&cfg);
  cfg.design = SSTM_DESIGN_ETL; /* the lock is held before the commit */
  CHECK_OK(sstm_init(&cfg));
  sstm_exec_config_t c = xcfg(2, 4);
  c.c_max = 0;              /* never to the top at once ... */
  c.lazy_promotion = true;  /* ... but one level per preemption */
  c.paused_conflict = rule; /* 1 -> 2, above R (1), below the urgent one (3) */
  sstm_exec_t *ex;
  CHECK_OK(sstm_exec_create(&c, &ex));
  for (int i = 0; i < 3; i++)
    pr_cell[i].v = 0;
  for (int i = 0; i < 2; i++) {
    atomic_store_explicit(&pr_started[i], 0, memory_order_seq_cst);
    atomic_store_explicit(&pr_go[i], PR_WAIT, memory_order_seq_cst);
    atomic_store_explicit(&pr_tid[i], 0, memory_order_seq_cst);
    atomic_store_explicit(&pr_end_tid[i], 0, memory_order_seq_cst);
    atomic_store_explicit(&pr_attempts[i], 0, memory_order_seq_cst);
  }
  atomic_store_explicit(&pr_h_started, 0, memory_order_seq_cst);
  atomic_store_explicit(&pr_h_go, 0, memory_order_seq_cst);
  sstm_exec_future_t f[2], hf;
  /* One after the other, so that each takes a worker of its own: the
   * first one's worker never becomes free while it waits. */
  for (unsigned i = 0; i < 2; i++) {
    sstm_exec_req_t q = {
        .fn = pr_body, .arg = (void *)(uintptr_t)i, .priority = 1, .future = &f[i]};
    CHECK_OK(sstm_exec_submit(ex, &q));
    wait_flag(&pr_started[i]);
  }
  CHECK_NE_I(atomic_load_explicit(&pr_tid[0], memory_order_seq_cst),
             atomic_load_explicit(&pr_tid[1], memory_order_seq_cst));
  sstm_exec_req_t h = {.fn = pr_urgent, .priority = 3, .future = &hf};
  CHECK_OK(sstm_exec_submit(ex, &h));
  /* The urgent one runs only on a worker whose transaction was paused. */
  wait_flag(&pr_h_started);
  int ht = atomic_load_explicit(&pr_h_tid, memory_order_seq_cst);
  CHECK_TRUE((atomic_load_explicit(&pr_tid[0], memory_order_seq_cst) == ht) !=
             (atomic_load_explicit(&pr_tid[1], memory_order_seq_cst) == ht));
  unsigned p = atomic_load_explicit(&pr_tid[0], memory_order_seq_cst) == ht ? 0 : 1, r = 1 - p;
  int r_tid = atomic_load_explicit(&pr_tid[r], memory_order_seq_cst);
  /* P is paused at level 2 holding its cell's lock, R runs at 1. */
  atomic_store_explicit(&pr_go[r], PR_WRITE_OTHER, memory_order_seq_cst);
  bool handover = rule != SSTM_EXEC_PAUSED_CONFLICT_TAKEOVER;
  if (handover) {
    /* R gives its worker to P (the only free one: the urgent request holds
     * the other) and waits in the hot list below it. Under INHERIT P, of
     * the higher priority, gets it whatever the two have run, and keeps
     * its own priority (2, above R's). */
    while (sstm_test_exec_counter(ex, "handovers") == 0 && !sstm_exec_done(&f[r]))
      sched_yield();
    CHECK_EQ_U(sstm_test_exec_counter(ex, "handovers"), 1);
    CHECK_FALSE(sstm_exec_done(&f[r]));
    atomic_store_explicit(&pr_go[p], PR_FINISH, memory_order_seq_cst);
    CHECK_OK(sstm_exec_wait(&f[p]));
    CHECK_OK(sstm_exec_wait(&f[r]));
    /* P finished on R's worker, and R after it, on the same worker. */
    CHECK_EQ_I(atomic_load_explicit(&pr_end_tid[p], memory_order_seq_cst), r_tid);
    CHECK_EQ_I(atomic_load_explicit(&pr_end_tid[r], memory_order_seq_cst), r_tid);
    /* P's write was there when R read the cell: nobody rolled back. */
    CHECK_EQ_U(pr_cell[p].v, 11);
  } else {
    /* R kills P, takes the lock over and ends without giving its worker
     * up; P rolls back when it is resumed (on that worker, the urgent
     * request still holds the other) and retries. */
    CHECK_OK(sstm_exec_wait(&f[r]));
    CHECK_EQ_I(atomic_load_explicit(&pr_end_tid[r], memory_order_seq_cst), r_tid);
    CHECK_EQ_I(atomic_load_explicit(&pr_end_tid[p], memory_order_seq_cst), 0); /* P has not ended */
    atomic_store_explicit(&pr_go[p], PR_FINISH, memory_order_seq_cst);
    CHECK_OK(sstm_exec_wait(&f[p]));
    CHECK_EQ_I(atomic_load_explicit(&pr_end_tid[p], memory_order_seq_cst), r_tid);
    CHECK_EQ_U(pr_cell[p].v, 11); /* R's 10 on the rolled-back 0, then P's retry */
  }
  CHECK_EQ_U(pr_cell[r].v, 1);
  atomic_store_explicit(&pr_h_go, 1, memory_order_seq_cst);
  CHECK_OK(sstm_exec_wait(&hf));
  CHECK_EQ_U(atomic_load_explicit(&pr_attempts[r], memory_order_seq_cst), 1);
  CHECK_EQ_U(atomic_load_explicit(&pr_attempts[p], memory_order_seq_cst), handover ? 1 : 2);
  sstm_exec_level_stats_t s1, s3;
  do { /* the statistics are summed just after the future is set */
    CHECK_OK(sstm_exec_stats(ex, 1, &s1));
    CHECK_OK(sstm_exec_stats(ex, 3, &s3));
  } while ((s1.completed < 2 || s3.completed < 1) && (sched_yield(), 1));
  CHECK_EQ_U(s1.completed, 2);
  CHECK_EQ_U(s1.preemptions, 1); /* P's; a hand-over is not a preemption */
  CHECK_EQ_U(s1.promotions, 1);
  CHECK_EQ_U(s1.aborts, handover ? 0 : 1);
  CHECK_EQ_U(s3.completed, 1);
  CHECK_EQ_U(sstm_test_exec_counter(ex, "handovers"), handover ? 1 : 0);
  CHECK_EQ_U(sstm_test_exec_counter(ex, "inherits"), 0); /* nothing to inherit from R */
  CHECK_EQ_U(sstm_test_exec_counter(ex, "passed"), 0);
  CHECK_OK(sstm_exec_destroy(ex));
  /* Nobody waited on the paused transaction: no wait of a policy, and the
   * only abort is the take-over's. */
  sstm_stats_t st;
  CHECK_OK(sstm_stats_aggregate(&st));
  CHECK_EQ_U(st.cm_waits, 0);
  CHECK_EQ_U(st.aborts_total, handover ? 0 : 1);
  CHECK_OK(sstm_shutdown());
}

TEST(promoted_handover) { promoted_paused(SSTM_EXEC_PAUSED_CONFLICT_HANDOVER); }
TEST(promoted_takeover) { promoted_paused(SSTM_EXEC_PAUSED_CONFLICT_TAKEOVER); }
TEST(promoted_inherit) { promoted_paused(SSTM_EXEC_PAUSED_CONFLICT_INHERIT); }

/* ---- c_max: the top level at the c_max-th preemption ---- */

/* One worker, levels 0..3, c_max 1 and no lazy promotion: the first
 * preemption of a transaction sends it to the top level ([Silvestri17],
 * (1)). The low transaction L (0) is preempted for U (3): promoted to 3
 * and hot, it goes before U, which has not started, and resumes at once;
 * at the top level nothing preempts it again, so L ends before U starts.
 * Without the promotion L would stay paused at 0 while U runs. Every step
 * waits for an event (a mark, a counter), none for a time. */
static char cm_seq[8];
static _Atomic unsigned cm_nseq;
static _Atomic int cm_low_in, cm_release;
static uint64_t cm_cell;

static void cm_mark(char ch) {
  unsigned i = atomic_fetch_add_explicit(&cm_nseq, 1, memory_order_seq_cst);
  if (i < sizeof cm_seq - 1) cm_seq[i] = ch;
}

static void cm_low(void *a) {
  (void)a;
  if (!atomic_exchange_explicit(&cm_low_in, 1, memory_order_seq_cst)) cm_mark('L');
  while (!atomic_load_explicit(&cm_release, memory_order_seq_cst)) {
    (void)sstm_load_u64(&cm_cell); /* a polled point */
    for (volatile int i = 0; i < 500; i++) {
    }
  }
  cm_mark('l');
}

static void cm_urgent(void *a) {
  (void)a;
  cm_mark('U');
}

TEST(c_max_promotes_to_the_top) {
  init_lib();
  sstm_exec_config_t c = xcfg(1, 4);
  c.c_max = 1;
  c.lazy_promotion = false;
  c.holder_level = 0; /* L holds no lock: no raise either way */
  sstm_exec_t *ex;
  CHECK_OK(sstm_exec_create(&c, &ex));
  sstm_exec_future_t lf, uf;
  sstm_exec_req_t lo = {.fn = cm_low, .priority = 0, .future = &lf};
  CHECK_OK(sstm_exec_submit(ex, &lo));
  while (atomic_load_explicit(&cm_nseq, memory_order_seq_cst) < 1)
    sched_yield();
  sstm_exec_req_t u = {.fn = cm_urgent, .priority = 3, .future = &uf};
  CHECK_OK(sstm_exec_submit(ex, &u));
  sstm_exec_level_stats_t st;
  do /* until L's preemption check has decided */
    CHECK_OK(sstm_exec_stats(ex, 0, &st));
  while (st.preemptions == 0 && (sched_yield(), 1));
  atomic_store_explicit(&cm_release, 1, memory_order_seq_cst);
  CHECK_OK(sstm_exec_wait(&lf));
  CHECK_OK(sstm_exec_wait(&uf));
  CHECK_EQ_STR(cm_seq, "LlU");
  do /* the statistics are summed just after the future is set */
    CHECK_OK(sstm_exec_stats(ex, 0, &st));
  while (st.completed == 0 && (sched_yield(), 1));
  CHECK_EQ_U(st.preemptions, 1);
  CHECK_EQ_U(st.promotions, 1);
  CHECK_OK(sstm_exec_destroy(ex));
  CHECK_OK(sstm_shutdown());
}

/* ---- bank ---- */

#define NACC 64
#define INITIAL 1000
static int64_t accounts[NACC];
static _Atomic uint64_t migrated, fp_checked;

typedef double v2d __attribute__((vector_size(16)));

typedef struct xfer {
  unsigned a, b;
  int64_t amt;
  unsigned spin; /* work between the accesses */
  double want;   /* the FP result, computed beforehand */
  uint64_t iwant;
} xfer_t;

/* The same computation in the body and beforehand: doubles and a vector,
 * live in registers across the loop (where the preemptions land), and an
 * integer hash in general registers. */
static inline __attribute__((always_inline)) void mix(unsigned n, double *d, uint64_t *h) {
  v2d v = {1.0, 0.5};
  double s = 0.25;
  uint64_t x = 0x9e3779b97f4a7c15ull;
  for (unsigned i = 0; i < n; i++) {
    v = v * (v2d){1.0000001, 0.9999999} + (v2d){1e-9, 2e-9};
    s = s * 1.0000003 + (double)(i & 7) * 1e-7;
    x = (x ^ (x >> 29)) * 0xbf58476d1ce4e5b9ull + i;
  }
  *d = s + v[0] - v[1];
  *h = x;
}

static void xfer_body(void *p) {
  xfer_t *x = p;
  int t0 = tid();
  int64_t va = sstm_load_i64(&accounts[x->a]);
  double d;
  uint64_t h;
  mix(x->spin, &d, &h);
  int64_t vb = sstm_load_i64(&accounts[x->b]);
  sstm_store_i64(&accounts[x->a], va - x->amt);
  sstm_store_i64(&accounts[x->b], vb + x->amt);
  /* non-transactional checks of this attempt's registers */
  CHECK_MSG(d == x->want && h == x->iwant,
            "registers changed across a preemption: %.17g/%llx "
            "instead of %.17g/%llx",
            d, (unsigned long long)h, x->want, (unsigned long long)x->iwant);
  atomic_fetch_add_explicit(&fp_checked, 1, memory_order_relaxed);
  if (tid() != t0) atomic_fetch_add_explicit(&migrated, 1, memory_order_relaxed);
}

static void audit_body(void *p) {
  (void)p;
  int64_t sum = 0;
  for (int i = 0; i < NACC; i++)
    sum += sstm_load_i64(&accounts[i]);
  CHECK_EQ_I(sum, (int64_t)NACC * INITIAL);
}

static _Atomic uint64_t bank_done;

static void xfer_done(void *a, int rc) {
  CHECK_OK(rc);
  free(a);
  atomic_fetch_add_explicit(&bank_done, 1, memory_order_relaxed);
}

static uint64_t total_preemptions(sstm_exec_t *ex, unsigned levels) {
  uint64_t p = 0;
  for (unsigned l = 0; l < levels; l++) {
    sstm_exec_level_stats_t st;
    CHECK_OK(sstm_exec_stats(ex, l, &st));
    p += st.preemptions;
  }
  return p;
}

/* Submit q, waiting for a free context by polling sstm_exec_try_submit
 * with short sleeps. A submitter blocked in sstm_exec_submit would be
 * woken by a request's end; whenever the CPUs are busier than the test
 * (one CPU, or other processes beside it), it then runs while the worker
 * that ended that request stands at its boundary, and that worker takes
 * the new request from the queue before a busy one can be preempted for
 * it: one preemption in hundreds to thousands of requests. A timer's
 * wake-up lands while both workers are inside requests, as with a
 * submitter on a CPU of its own. */
static void bank_submit(sstm_exec_t *ex, const sstm_exec_req_t *q) {
  int rc;
  while ((rc = sstm_exec_try_submit(ex, q)) == SSTM_EAGAIN)
    nanosleep(&(struct timespec){.tv_nsec = 50 * 1000}, NULL);
  CHECK_OK(rc);
}

/* Mostly long transfers at low priorities, and short ones and audits at
 * high priorities that preempt them; the submitter never waits but for a
 * context (backpressure), so the workers are always busy. */
static void run_bank(unsigned tick_us, uint64_t min_preempt, uint64_t min_migr) {
  init_lib();
  for (int i = 0; i < NACC; i++)
    accounts[i] = INITIAL;
  sstm_exec_config_t c = xcfg(2, 8);
  c.tick_us = tick_us;
  c.c_max = 8;
  c.contexts = 5; /* a short queue: the workers run low priorities most of the time */
  sstm_exec_t *ex;
  CHECK_OK(sstm_exec_create(&c, &ex));
  sstm_rng_t rng;
  sstm_rng_seed(&rng, sstm_test_seed());
  uint64_t n = 0, preempt = 0;
  atomic_store_explicit(&migrated, 0, memory_order_seq_cst);
  atomic_store_explicit(&fp_checked, 0, memory_order_seq_cst);
  atomic_store_explicit(&bank_done, 0, memory_order_seq_cst);
  uint64_t min_n = sstm_test_scaled(2000, 200);
  /* the expected register results of a few spin counts, computed once:
   * the submitter must outpace the workers */
  enum { NSPIN = 32 };
  static unsigned spins[NSPIN];
  static double dwant[NSPIN];
  static uint64_t iwant[NSPIN];
  for (unsigned i = 0; i < NSPIN; i++) {
    spins[i] = i < NSPIN / 4 ? 200 + i * 250 : 20000 + i * 2000;
    mix(spins[i], &dwant[i], &iwant[i]);
  }
  for (;; n++) {
    if (n >= min_n && n % 64 == 0) {
      preempt = total_preemptions(ex, c.levels);
      if (preempt >= min_preempt &&
          atomic_load_explicit(&migrated, memory_order_seq_cst) >= min_migr)
        break;
    }
    uint64_t r = sstm_rng_next(&rng);
    bool high = r % 8 == 0;
    sstm_exec_req_t q;
    if (high && (r >> 3) % 4 == 0) {
      q = (sstm_exec_req_t){.fn = audit_body, .priority = c.levels - 1};
    } else {
      xfer_t *x = malloc(sizeof *x);
      CHECK_NOT_NULL(x);
      x->a = (unsigned)((r >> 8) % NACC);
      x->b = (x->a + 1 + (unsigned)((r >> 16) % (NACC - 1))) % NACC; /* not a */
      x->amt = (int64_t)((r >> 24) % 100);
      unsigned k = high ? (unsigned)((r >> 32) % (NSPIN / 4))
                        : NSPIN / 4 + (unsigned)((r >> 32) % (NSPIN - NSPIN / 4));
      x->spin = spins[k];
      x->want = dwant[k];
      x->iwant = iwant[k];
      q = (sstm_exec_req_t){.fn = xfer_body,
                            .arg = x,
                            .priority =
                                high ? 4 + (unsigned)((r >> 40) % 3) : (unsigned)((r >> 40) % 4),
                            .done = xfer_done,
                            .done_arg = x};
    }
    bank_submit(ex, &q);
  }
  char buf[1024];
  sstm_exec_describe(ex, buf, sizeof buf);
  CHECK_OK(sstm_exec_destroy(ex)); /* drains */
  printf("bank: %llu requests, %llu preemptions, %llu migrated, %llu register checks; %s\n",
         (unsigned long long)n, (unsigned long long)preempt,
         (unsigned long long)atomic_load_explicit(&migrated, memory_order_seq_cst),
         (unsigned long long)atomic_load_explicit(&fp_checked, memory_order_seq_cst), buf);
  int64_t sum = 0;
  for (int i = 0; i < NACC; i++)
    sum += accounts[i];
  CHECK_EQ_I(sum, (int64_t)NACC * INITIAL);
  CHECK_OK(sstm_shutdown());
}

TEST(bank) { run_bank(0, sstm_test_scaled(2000, 200), sstm_test_scaled(100, 10)); }
TEST(bank_tick) { run_bank(100, sstm_test_scaled(2000, 200), sstm_test_scaled(100, 10)); }

/* ---- engine_storm ---- */

static void storm_body(void *p) {
  xfer_t *x = p;
  for (unsigned k = 0; k < 8; k++) {
    int64_t *tmp = sstm_malloc(64);
    CHECK_NOT_NULL(tmp);
    sstm_store_i64(tmp, k);
    int64_t va = sstm_load_i64(&accounts[(x->a + k) % NACC]);
    int64_t vb = sstm_load_i64(&accounts[(x->b + k) % NACC]);
    sstm_store_i64(&accounts[(x->a + k) % NACC], va - 1 + sstm_load_i64(tmp) - (int64_t)k);
    sstm_store_i64(&accounts[(x->b + k) % NACC], vb + 1);
    sstm_free(tmp);
  }
}

static void run_storm(const char *cm) {
  init_lib_cm(cm);
  for (int i = 0; i < NACC; i++)
    accounts[i] = INITIAL;
  sstm_exec_config_t c = xcfg(2, 8);
  /* A tick much shorter than a signal's delivery starves the workers: on a
   * virtual machine whose kernel spends several microseconds delivering one
   * signal, a 10 us tick left them almost no time to run (both CPUs in the
   * kernel's signal path, minutes per run). 50 us still lands ticks in the
   * engine's no-preemption regions thousands of times a run. */
  c.tick_us = 50;
  sstm_exec_t *ex;
  CHECK_OK(sstm_exec_create(&c, &ex));
  if (strstr(described_text(ex), "facility=poll-only(tsan)")) {
    /* ThreadSanitizer delivers each signal late, at its next interceptor,
     * and at a 50 us tick the workers do little else: a slower tick. */
    CHECK_OK(sstm_exec_destroy(ex));
    c.tick_us = 500;
    CHECK_OK(sstm_exec_create(&c, &ex));
  }
  sstm_rng_t rng;
  sstm_rng_seed(&rng, sstm_test_seed());
  enum { RING = 48 };
  static xfer_t xs[RING];
  static sstm_exec_future_t fs[RING];
  static bool used[RING];
  memset(used, 0, sizeof used);
  /* The storm runs until min_refused preemption requests have met a
   * no-preemption region, or for max_n requests: how often a tick lands in
   * one is the host's and, under ThreadSanitizer, which defers signals to
   * its own points, the sanitizer's choice (one such run had 94 refusals
   * after 280 000 requests, where about 100 take 2 000). Then
   * at least one must have been refused, so the regions were exercised. */
  uint64_t min_refused = sstm_test_scaled(1000, 100), min_n = sstm_test_scaled(4000, 400);
  uint64_t max_n = 50 * min_n;
  uint64_t n = 0;
  for (;; n++) {
    unsigned slot = (unsigned)(n % RING);
    if (used[slot]) CHECK_OK(sstm_exec_wait(&fs[slot]));
    if (n >= min_n && n % 64 == 0 &&
        (sstm_test_exec_counter(ex, "refused") >= min_refused || n >= max_n))
      break;
    uint64_t r = sstm_rng_next(&rng);
    xs[slot].a = (unsigned)(r % NACC);
    xs[slot].b =
        (xs[slot].a + 1 + (unsigned)((r >> 8) % (NACC - 9))) % NACC; /* the 8 pairs differ */
    sstm_exec_req_t q = {.fn = r % 8 == 0 ? audit_body : storm_body,
                         .arg = &xs[slot],
                         .priority = (unsigned)(n % c.levels),
                         .future = &fs[slot]};
    CHECK_OK(sstm_exec_submit(ex, &q));
    used[slot] = true;
  }
  for (unsigned i = 0; i < RING; i++)
    if (used[i]) CHECK_OK(sstm_exec_wait(&fs[i]));
  char buf[1024];
  sstm_exec_describe(ex, buf, sizeof buf);
  printf("engine_storm: %llu requests; %s\n", (unsigned long long)n, buf);
  /* After max_n requests without a single refusal no tick met a
   * no-preemption region: the regions were not exercised, a failure that
   * says so rather than a run that never ends. */
  CHECK_GE_U(sstm_test_exec_counter(ex, "refused"), 1);
  sstm_describe(buf, sizeof buf);
  printf("engine_storm: %s\n", buf);
  CHECK_OK(sstm_exec_destroy(ex));
  int64_t sum = 0;
  for (int i = 0; i < NACC; i++)
    sum += accounts[i];
  CHECK_EQ_I(sum, (int64_t)NACC * INITIAL);
  CHECK_OK(sstm_shutdown());
}

TEST(engine_storm) { run_storm(NULL); }
/* The same under the library's default policy, adaptive, whose admission
 * gate (in its oversubscribed regime) must not hold a place for a context
 * that left its worker (docs/design/admission.md). */
TEST(engine_storm_adaptive) { run_storm("adaptive"); }

/* ---- standing ---- */

static _Atomic int in_region, may_leave, low_done, high_saw_low_done = -1;
static uint64_t cell;

static void low_region(void *a) {
  (void)a;
  (void)sstm_load_u64(&cell);
  CHECK_OK(sstm_exec_nopreempt_begin());
  atomic_store_explicit(&in_region, 1, memory_order_seq_cst);
  while (!atomic_load_explicit(&may_leave, memory_order_seq_cst)) {
    for (volatile int i = 0; i < 1000; i++) {
    }
    (void)sstm_load_u64(&cell); /* a barrier inside the region: no switch here */
  }
  CHECK_OK(sstm_exec_nopreempt_end()); /* the standing request is served here */
  atomic_store_explicit(&low_done, 1,
                        memory_order_seq_cst); /* and no transactional access after it */
}

static void high_checks(void *a) {
  (void)a;
  atomic_store_explicit(&high_saw_low_done, atomic_load_explicit(&low_done, memory_order_seq_cst),
                        memory_order_seq_cst);
}

TEST(standing) {
  init_lib();
  sstm_exec_config_t c = xcfg(1, 4);
  sstm_exec_t *ex;
  CHECK_OK(sstm_exec_create(&c, &ex));
  sstm_exec_future_t lf, hf;
  sstm_exec_req_t lo = {.fn = low_region, .priority = 0, .future = &lf};
  CHECK_OK(sstm_exec_submit(ex, &lo));
  while (!atomic_load_explicit(&in_region, memory_order_seq_cst))
    usleep(1000);
  sstm_exec_req_t hi = {.fn = high_checks, .priority = 2, .future = &hf};
  CHECK_OK(sstm_exec_submit(ex, &hi));
  /* the request must have reached the worker and been refused (signal),
   * or been left on the descriptor (poll, seen by the barrier in the
   * region, which keeps it standing) */
  usleep(50000);
  CHECK_FALSE(sstm_exec_done(&hf));
  atomic_store_explicit(&may_leave, 1, memory_order_seq_cst);
  CHECK_OK(sstm_exec_wait(&hf));
  CHECK_OK(sstm_exec_wait(&lf));
  CHECK_EQ_I(atomic_load_explicit(&high_saw_low_done, memory_order_seq_cst), 0);
  sstm_exec_level_stats_t st;
  CHECK_OK(sstm_exec_stats(ex, 0, &st));
  CHECK_EQ_U(st.preemptions, 1);
  CHECK_OK(sstm_exec_destroy(ex));
  CHECK_OK(sstm_shutdown());
}

/* ---- standing_after_last_access ---- */

/* The request reaches the worker inside the region but after its last
 * polled point: no barrier turns the polled flag into a standing request
 * (standing, above, has one), and no transactional access follows the
 * region. The region's end must replay it all the same. Deterministic:
 * the region waits, without a barrier, until the request was refused
 * (signal: the handler ran and counted it; poll: submit left it on the
 * descriptor before returning). */
static _Atomic int la_in_region, la_may_leave, la_low_done, la_high_saw_low_done = -1;
static uint64_t la_cell;

static void la_low(void *a) {
  (void)a;
  (void)sstm_load_u64(&la_cell);
  CHECK_OK(sstm_exec_nopreempt_begin());
  atomic_store_explicit(&la_in_region, 1, memory_order_seq_cst);
  while (!atomic_load_explicit(&la_may_leave, memory_order_seq_cst)) {
    for (volatile int i = 0; i < 1000; i++) {
    }
  }
  CHECK_OK(sstm_exec_nopreempt_end()); /* the request is served here */
  atomic_store_explicit(&la_low_done, 1,
                        memory_order_seq_cst); /* and no transactional access after it */
}

static void la_high(void *a) {
  (void)a;
  atomic_store_explicit(&la_high_saw_low_done,
                        atomic_load_explicit(&la_low_done, memory_order_seq_cst),
                        memory_order_seq_cst);
}

TEST(standing_after_last_access) {
  init_lib();
  sstm_exec_config_t c = xcfg(1, 4);
  sstm_exec_t *ex;
  CHECK_OK(sstm_exec_create(&c, &ex));
  sstm_exec_future_t lf, hf;
  sstm_exec_req_t lo = {.fn = la_low, .priority = 0, .future = &lf};
  CHECK_OK(sstm_exec_submit(ex, &lo));
  while (!atomic_load_explicit(&la_in_region, memory_order_seq_cst))
    usleep(1000);
  sstm_exec_req_t hi = {.fn = la_high, .priority = 2, .future = &hf};
  CHECK_OK(sstm_exec_submit(ex, &hi));
  if (c.preempt == SSTM_EXEC_PREEMPT_SIGNAL)
    while (sstm_test_exec_counter(ex, "refused") == 0) /* the handler ran in the region */
      usleep(1000);
  CHECK_FALSE(sstm_exec_done(&hf));
  atomic_store_explicit(&la_may_leave, 1, memory_order_seq_cst);
  CHECK_OK(sstm_exec_wait(&hf));
  CHECK_OK(sstm_exec_wait(&lf));
  int saw_low_done = atomic_load_explicit(&la_high_saw_low_done, memory_order_seq_cst);
  CHECK_EQ_I(saw_low_done, 0); /* the high request ran before the low one ended */
  sstm_exec_level_stats_t st;
  CHECK_OK(sstm_exec_stats(ex, 0, &st));
  CHECK_EQ_U(st.preemptions, 1);
  CHECK_OK(sstm_exec_destroy(ex));
  CHECK_OK(sstm_shutdown());
}

/* ---- nudge ---- */

static _Atomic int nd_a_in, nd_a_leave, nd_b_in, nd_a_tid, nd_urgent_tid, nd_a_left_first;
static uint64_t nd_cell, nd_flag;

static void nd_stuck(void *a) {
  (void)a;
  (void)sstm_load_u64(&nd_cell);
  CHECK_OK(sstm_exec_nopreempt_begin());
  atomic_store_explicit(&nd_a_tid, tid(), memory_order_seq_cst);
  atomic_store_explicit(&nd_a_in, 1, memory_order_seq_cst);
  while (!atomic_load_explicit(&nd_a_leave, memory_order_seq_cst)) {
    for (volatile int i = 0; i < 1000; i++) {
    }
    (void)sstm_load_u64(&nd_cell); /* a barrier in the region: the request stands */
  }
  CHECK_OK(sstm_exec_nopreempt_end());
}

static void nd_loop(void *a) {
  (void)a;
  atomic_store_explicit(&nd_b_in, 1, memory_order_seq_cst);
  while (sstm_load_u64(&nd_flag) == 0) {
    for (volatile int i = 0; i < 1000; i++) {
    }
  }
}

static void nd_urgent(void *a) {
  (void)a;
  atomic_store_explicit(&nd_urgent_tid, tid(), memory_order_seq_cst);
  atomic_store_explicit(&nd_a_left_first, atomic_load_explicit(&nd_a_leave, memory_order_seq_cst),
                        memory_order_seq_cst);
  sstm_store_u64(&nd_flag, 1);
}

TEST(nudge) {
  init_lib();
  sstm_exec_config_t c = xcfg(2, 4);
  sstm_exec_t *ex;
  CHECK_OK(sstm_exec_create(&c, &ex));
  sstm_exec_future_t af, bf, uf;
  sstm_exec_req_t ra = {.fn = nd_stuck, .priority = 0, .future = &af};
  CHECK_OK(sstm_exec_submit(ex, &ra));
  while (!atomic_load_explicit(&nd_a_in, memory_order_seq_cst))
    usleep(1000);
  sstm_exec_req_t rb = {.fn = nd_loop, .priority = 1, .future = &bf};
  CHECK_OK(sstm_exec_submit(ex, &rb));
  while (!atomic_load_explicit(&nd_b_in, memory_order_seq_cst))
    usleep(1000);
  /* The victim is the worker of the lowest priority, the stuck one. */
  sstm_exec_req_t ru = {.fn = nd_urgent, .priority = 3, .future = &uf};
  CHECK_OK(sstm_exec_submit(ex, &ru));
  CHECK_OK(sstm_exec_wait(&uf)); /* only the nudged worker can run it now */
  CHECK_EQ_I(atomic_load_explicit(&nd_a_left_first, memory_order_seq_cst), 0);
  CHECK_NE_I(atomic_load_explicit(&nd_urgent_tid, memory_order_seq_cst),
             atomic_load_explicit(&nd_a_tid, memory_order_seq_cst));
  atomic_store_explicit(&nd_a_leave, 1, memory_order_seq_cst);
  CHECK_OK(sstm_exec_wait(&af));
  CHECK_OK(sstm_exec_wait(&bf));
  sstm_exec_level_stats_t st;
  CHECK_OK(sstm_exec_stats(ex, 1, &st));
  CHECK_EQ_U(st.preemptions, 1); /* the nudged transaction, once */
  CHECK_OK(sstm_exec_destroy(ex));
  CHECK_OK(sstm_shutdown());
}

/* ---- deep_stack ---- */

/* A body that runs near the bottom of its context's stack when the signal
 * comes: a redirect there needs the trampoline's frame (the saved
 * registers and the XSAVE area, sstm__preempt_frame_size) and the check's
 * own frames below the interrupted stack pointer, which would run into
 * the guard page: the handler must refuse it (leaving the request for the
 * next polled point) instead of faulting. The body finds its stack's
 * lowest address in /proc/self/maps (the mapping that holds its frame;
 * the guard page below is a mapping of its own), calls itself until less
 * than DS_LEFT bytes are left, and spins there in its own code, with no
 * barrier, until the main thread has seen the signal handled; back up, its
 * first read takes the standing request. Before the handler's check, the
 * process died of SIGSEGV in the trampoline. */

#define DS_LEFT 512u /* below any redirect's frame: 128 + 24 + 128 + 512 */

static _Atomic int ds_stage; /* 1: at the bottom; 2: go back up */
static _Atomic int ds_high_ran, ds_low_saw_high;
static uint64_t ds_cell;

static uintptr_t ds_mapping_lo(uintptr_t addr) {
  FILE *f = fopen("/proc/self/maps", "r");
  CHECK_NOT_NULL(f);
  unsigned long lo = 0, hi = 0, found = 0;
  char line[512];
  while (!found && fgets(line, sizeof line, f))
    if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && addr >= lo && addr < hi) found = lo;
  fclose(f);
  CHECK_NE_U(found, 0);
  return (uintptr_t)found;
}

/* At the bottom: stage 1, then spin until stage 2. Only inline atomics
 * below the frames of ds_dig (no call: a call's lazy binding alone saves
 * the XSAVE state on the stack). */
static inline __attribute__((always_inline)) void ds_wait(void) {
  atomic_store_explicit(&ds_stage, 1, memory_order_seq_cst);
  while (atomic_load_explicit(&ds_stage, memory_order_seq_cst) != 2) {
  }
}

static __attribute__((noinline)) void ds_dig(uintptr_t lo) {
  volatile char pad[128];
  pad[0] = 1;
  /* the frame's address, on the context's stack even where ASan keeps
   * the locals on a fake stack */
  if ((uintptr_t)__builtin_frame_address(0) - lo > DS_LEFT) {
    ds_dig(lo);
    pad[1] = pad[0]; /* not a tail call: this frame stays */
    return;
  }
  ds_wait();
}

/* a = 1: dig (the handler can redirect); 0: wait where the body is (no
 * redirect anywhere, and under TSan the atomics are calls into its
 * runtime, which the bottom of the stack has no room for). */
static void ds_low(void *a) {
  /* a retry (none is expected: nobody writes ds_cell) has nothing to
   * wait for */
  if (atomic_load_explicit(&ds_stage, memory_order_seq_cst) == 0) {
    if (*(const int *)a)
      ds_dig(ds_mapping_lo((uintptr_t)__builtin_frame_address(0)));
    else
      ds_wait();
  }
  for (unsigned i = 0; i < 1000000; i++) {
    (void)sstm_load_u64(&ds_cell);
    if (atomic_load_explicit(&ds_high_ran, memory_order_seq_cst)) {
      atomic_store_explicit(&ds_low_saw_high, 1, memory_order_seq_cst);
      return;
    }
  }
}

static void ds_high(void *a) {
  (void)a;
  (void)sstm_load_u64(&ds_cell);
  atomic_store_explicit(&ds_high_ran, 1, memory_order_seq_cst);
}

TEST(deep_stack) {
  init_lib();
  sstm_exec_config_t c = xcfg(1, 4);
  sstm_exec_t *ex;
  CHECK_OK(sstm_exec_create(&c, &ex));
  sstm_exec_future_t lf, hf;
  /* Where nothing is ever redirected (TSan; and TSan would also deliver
   * the signal only at its next interceptor, none of which the spin
   * calls) there is nothing to dig for nor to wait for. */
  int dig = strstr(described_text(ex), "facility=redirect") != NULL;
  sstm_exec_req_t lo = {.fn = ds_low, .arg = &dig, .priority = 0, .future = &lf};
  CHECK_OK(sstm_exec_submit(ex, &lo));
  while (atomic_load_explicit(&ds_stage, memory_order_seq_cst) != 1)
    usleep(1000);
  uint64_t refused = sstm_test_exec_counter(ex, "refused");
  sstm_exec_req_t hi = {.fn = ds_high, .priority = 3, .future = &hf};
  CHECK_OK(sstm_exec_submit(ex, &hi));
  /* the kick's signal (signal mode) or the fallback's (poll mode), refused
   * at the bottom of the stack */
  if (dig)
    while (sstm_test_exec_counter(ex, "refused") == refused)
      usleep(1000);
  atomic_store_explicit(&ds_stage, 2, memory_order_seq_cst);
  CHECK_OK(sstm_exec_wait(&hf));
  CHECK_OK(sstm_exec_wait(&lf));
  CHECK_EQ_I(atomic_load_explicit(&ds_low_saw_high, memory_order_seq_cst), 1);
  CHECK_OK(sstm_exec_destroy(ex));
  CHECK_OK(sstm_shutdown());
}

/* ---- errno_kept ---- */

/* A redirect may stop a body between any two instructions, also between
 * the call that set errno and the body's read of it; the thread then runs
 * other requests (here the urgent one, which sets errno) before it resumes
 * the body. The interrupted code's errno must be the value it left: the
 * redirect is a preemption the body cannot see, as a signal handler that
 * saves errno. One worker (so no migration), the low body sets errno and
 * spins in its own code until the urgent request has run. Before, it read
 * the urgent body's EBADF. */

static _Atomic int ek_stage, ek_high_ran;
static int ek_seen;

/* errno's location, looked up afresh (glibc declares __errno_location
 * const: the compiler may keep one call's result) */
static int *ek_errno(void) {
  int *(*volatile f)(void) = __errno_location;
  return f();
}

static void ek_low(void *a) {
  const int wait = *(const int *)a;
  *ek_errno() = 4242;
  atomic_store_explicit(&ek_stage, 1, memory_order_seq_cst);
  while (wait && !atomic_load_explicit(&ek_high_ran, memory_order_seq_cst)) {
  }
  ek_seen = *ek_errno();
}

static void ek_high(void *a) {
  (void)a;
  CHECK_EQ_I(close(-1), -1); /* EBADF, on the worker's thread */
  atomic_store_explicit(&ek_high_ran, 1, memory_order_seq_cst);
}

TEST(errno_kept) {
  init_lib();
  sstm_exec_config_t c = xcfg(1, 4);
  sstm_exec_t *ex;
  CHECK_OK(sstm_exec_create(&c, &ex));
  /* Where nothing is redirected (TSan, a static link) the low body cannot
   * be preempted in its spin: it does not wait then. */
  int wait = strstr(described_text(ex), "facility=redirect") != NULL;
  sstm_exec_future_t lf, hf;
  sstm_exec_req_t lo = {.fn = ek_low, .arg = &wait, .priority = 0, .future = &lf};
  CHECK_OK(sstm_exec_submit(ex, &lo));
  while (atomic_load_explicit(&ek_stage, memory_order_seq_cst) != 1)
    usleep(1000);
  sstm_exec_req_t hi = {.fn = ek_high, .priority = 3, .future = &hf};
  CHECK_OK(sstm_exec_submit(ex, &hi));
  CHECK_OK(sstm_exec_wait(&hf));
  CHECK_OK(sstm_exec_wait(&lf));
  CHECK_EQ_I(ek_seen, 4242);
  CHECK_OK(sstm_exec_destroy(ex));
  CHECK_OK(sstm_shutdown());
}

/* errno_moves: the same across threads. Two workers; `low` (priority 0)
 * sets errno and spins on W0, `mid` (1) holds W1 until `high` (3), which
 * preempts `low` on W0, has started; `mid` then sets errno on W1 and
 * ends, and W1 resumes `low` while `high` still holds W0 (until `low` has
 * ended). `low` resumed on another thread must read its own errno there:
 * the value goes with it, stored on the resuming thread (a restore
 * through the errno address taken before the switch would write the
 * first thread's). */

static _Atomic int em_stage, em_high_in, em_low_done, em_low_tid0, em_low_tid1;
static int em_seen;

static void em_low(void *a) {
  const int wait = *(const int *)a;
  atomic_store_explicit(&em_low_tid0, tid(), memory_order_seq_cst);
  *ek_errno() = 4243;
  atomic_store_explicit(&em_stage, 1, memory_order_seq_cst);
  while (wait && !atomic_load_explicit(&em_high_in, memory_order_seq_cst)) {
  }
  em_seen = *ek_errno();
  atomic_store_explicit(&em_low_tid1, tid(), memory_order_seq_cst);
  atomic_store_explicit(&em_low_done, 1, memory_order_seq_cst);
}

static void em_mid(void *a) {
  const int wait = *(const int *)a;
  atomic_store_explicit(&em_stage, 2, memory_order_seq_cst);
  while (wait && !atomic_load_explicit(&em_high_in, memory_order_seq_cst))
    usleep(100);
  CHECK_EQ_I(close(-1), -1); /* EBADF, on W1 */
}

static void em_high(void *a) {
  const int wait = *(const int *)a;
  atomic_store_explicit(&em_high_in, 1, memory_order_seq_cst);
  while (wait && !atomic_load_explicit(&em_low_done, memory_order_seq_cst))
    usleep(100);
}

TEST(errno_moves) {
  init_lib();
  sstm_exec_config_t c = xcfg(2, 4);
  sstm_exec_t *ex;
  CHECK_OK(sstm_exec_create(&c, &ex));
  int wait = strstr(described_text(ex), "facility=redirect") != NULL;
  sstm_exec_future_t lf, mf, hf;
  sstm_exec_req_t lo = {.fn = em_low, .arg = &wait, .priority = 0, .future = &lf};
  CHECK_OK(sstm_exec_submit(ex, &lo));
  while (atomic_load_explicit(&em_stage, memory_order_seq_cst) != 1)
    usleep(1000);
  sstm_exec_req_t mi = {.fn = em_mid, .arg = &wait, .priority = 1, .future = &mf};
  CHECK_OK(sstm_exec_submit(ex, &mi));
  while (atomic_load_explicit(&em_stage, memory_order_seq_cst) != 2)
    usleep(1000);
  sstm_exec_req_t hi = {.fn = em_high, .arg = &wait, .priority = 3, .future = &hf};
  CHECK_OK(sstm_exec_submit(ex, &hi));
  CHECK_OK(sstm_exec_wait(&hf));
  CHECK_OK(sstm_exec_wait(&mf));
  CHECK_OK(sstm_exec_wait(&lf));
  CHECK_EQ_I(em_seen, 4243);
  if (wait) /* it did move */
    CHECK_NE_I(atomic_load_explicit(&em_low_tid0, memory_order_seq_cst),
               atomic_load_explicit(&em_low_tid1, memory_order_seq_cst));
  CHECK_OK(sstm_exec_destroy(ex));
  CHECK_OK(sstm_shutdown());
}

/* ---- errno_kept_polled ----
 *
 * errno_kept at a polled point: the body is switched out inside a library
 * call (here the end of its no-preemption region, which serves the
 * request that stood while it ran; a barrier does the same), and errno
 * must come back as the body left it, not as the urgent request (or the
 * check's own system calls) left it on the thread. One worker; an order,
 * not a time: the region holds the body until the urgent request is
 * queued and its signal handled, and the switch happens at the region's
 * end in every mode and facility. */

static _Atomic int ekp_stage; /* 1 in the region; 2 the urgent request is queued */
static int ekp_seen, ekp_high_ran;

static void ekp_low(void *a) {
  (void)a;
  CHECK_OK(sstm_exec_nopreempt_begin());
  atomic_store_explicit(&ekp_stage, 1, memory_order_seq_cst);
  while (atomic_load_explicit(&ekp_stage, memory_order_seq_cst) != 2)
    sched_yield();
  *ek_errno() = 4242;
  CHECK_OK(sstm_exec_nopreempt_end()); /* switched out here, resumed after the urgent one */
  ekp_seen = *ek_errno();
  ekp_high_ran = atomic_load_explicit(&ek_high_ran, memory_order_seq_cst);
}

TEST(errno_kept_polled) {
  init_lib();
  atomic_store_explicit(&ek_high_ran, 0, memory_order_seq_cst);
  sstm_exec_config_t c = xcfg(1, 4);
  sstm_exec_t *ex;
  CHECK_OK(sstm_exec_create(&c, &ex));
  sstm_exec_future_t lf, hf;
  sstm_exec_req_t lo = {.fn = ekp_low, .priority = 0, .future = &lf};
  CHECK_OK(sstm_exec_submit(ex, &lo));
  while (atomic_load_explicit(&ekp_stage, memory_order_seq_cst) != 1)
    usleep(1000);
  uint64_t signals = sstm_test_exec_counter(ex, "signals");
  sstm_exec_req_t hi = {.fn = ek_high, .priority = 3, .future = &hf};
  CHECK_OK(sstm_exec_submit(ex, &hi));
  /* The request stands in the region when the signal (the kick's, or the
   * polled mode's fallback) has been handled there: a signal delivered
   * after the region's end would find the body past its polled point. */
  while (sstm_test_exec_counter(ex, "signals") == signals)
    usleep(1000);
  atomic_store_explicit(&ekp_stage, 2, memory_order_seq_cst);
  CHECK_OK(sstm_exec_wait(&hf));
  CHECK_OK(sstm_exec_wait(&lf));
  CHECK_EQ_I(ekp_high_ran, 1); /* the switch happened at the region's end */
  CHECK_EQ_I(ekp_seen, 4242);
  CHECK_OK(sstm_exec_destroy(ex));
  CHECK_OK(sstm_shutdown());
}

static void unbalanced(void *a) {
  int *rc = a;
  *rc = sstm_exec_nopreempt_end();
}

TEST(region_misuse) {
  init_lib();
  sstm_exec_config_t c = xcfg(1, 2);
  sstm_exec_t *ex;
  CHECK_OK(sstm_exec_create(&c, &ex));
  int rc = 1;
  sstm_exec_future_t f;
  sstm_exec_req_t q = {.fn = unbalanced, .arg = &rc, .future = &f};
  CHECK_OK(sstm_exec_submit(ex, &q));
  CHECK_OK(sstm_exec_wait(&f));
  CHECK_RC(rc, SSTM_ESTATE);
  CHECK_OK(sstm_exec_destroy(ex));
  CHECK_OK(sstm_shutdown());
}

SSTM_TEST_MAIN()
