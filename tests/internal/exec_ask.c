/* SPDX-License-Identifier: MIT */
/* The executor: an urgent request that arrives while a worker has taken
 * a low-priority context from the queue but not started it yet
 * (src/exec/exec.c, took() and reask()). The worker is held in that window
 * by the test seam sstm__x_test_taken; the urgent request is submitted
 * then. The submitter must choose that worker (its priority is published
 * when the context is taken, under the queue lock), and the ask must
 * survive the window: the signal finds no running context and a polled
 * flag would be overwritten by the attempt's begin, so the context re-asks
 * itself once its attempt runs. The low request then switches out at its
 * first transactional read and the urgent one runs before it ends.
 *
 * Before the fix the worker was invisible to the victim choice in that
 * window (its priority was published only when the context started) and
 * the ask was lost: the low request ran to its end first, 2 ms in the
 * preemption-latency benchmark (docs/benchmarks.md). Here the low request
 * reads until the urgent one has run or a count of reads is done, and the
 * test checks which came first: an order, not a time. The polled mode's
 * fallback signal is set to its maximum (1 s) so that it cannot stand in
 * for the re-ask.
 *
 * Linked statically (the seam is internal), so no signal redirects
 * (docs/design/executor.md): in both modes the switch happens at a polled
 * point, which is what the re-ask sets up.
 *
 * The second case (kicked_victim_is_asked_again_*, below): a request whose
 * every lower worker was asked already for an earlier one. */
#define _GNU_SOURCE
#include <limits.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

#include <schedstm/exec.h>

#include "cm/common.h" /* sstm__ser_wait_max_ns */
#include "exec/exec_internal.h"
#include "exec_cfg.h"
#include "iface/exec_services.h"
#include "runner.h"

/* The seam's handshake: 1 armed, 2 the worker is in the window, 3 go on. */
static _Atomic int stage;
static uint64_t cell;
static _Atomic int urgent_ran;

static void held(void) {
  int one = 1;
  /* acq_rel: the worker's "in the window" is seen after the pop; its
   * acquire of 3 sees the main thread's submission of the urgent request. */
  if (!atomic_compare_exchange_strong_explicit(&stage, &one, 2, memory_order_acq_rel,
                                               memory_order_relaxed))
    return; /* not armed, or a later pop: go on */
  while (atomic_load_explicit(&stage, memory_order_acquire) != 3)
    sched_yield();
}

/* Reads until the urgent request has run, at most `reads` of them; its
 * result says whether the urgent one ran first. */
typedef struct low {
  unsigned reads;
  int saw_urgent;
} low_t;

static void low_body(void *a) {
  low_t *l = a;
  l->saw_urgent = 0;
  for (unsigned i = 0; i < l->reads; i++) {
    (void)sstm_load_u64(&cell);
    if (atomic_load_explicit(&urgent_ran, memory_order_acquire)) {
      l->saw_urgent = 1;
      return;
    }
  }
}

static void urgent_body(void *a) {
  (void)a;
  (void)sstm_load_u64(&cell);
  atomic_store_explicit(&urgent_ran, 1, memory_order_release);
}

static void run_case(sstm_exec_preempt_t m) {
  sstm_config_t cfg;
  sstm_test_config(&cfg);
  CHECK_OK(sstm_init(&cfg));
  sstm_exec_config_t c = sstm_test_exec_config(1, 8, 8, m);
  c.poll_fallback_us = 1000000;
  sstm_exec_t *ex;
  CHECK_OK(sstm_exec_create(&c, &ex));
  unsigned rounds = (unsigned)sstm_test_scaled(20, 5);
  for (unsigned r = 0; r < rounds; r++) {
    atomic_store_explicit(&urgent_ran, 0, memory_order_relaxed);
    atomic_store_explicit(&stage, 1, memory_order_relaxed);
    atomic_store_explicit(&sstm__x_test_taken, held, memory_order_relaxed);
    low_t low = {.reads = 200000};
    sstm_exec_future_t fl, fu;
    sstm_exec_req_t ql = {.fn = low_body, .arg = &low, .priority = 0, .future = &fl};
    CHECK_OK(sstm_exec_submit(ex, &ql));
    /* The worker has taken the low context and waits in the seam. */
    while (atomic_load_explicit(&stage, memory_order_acquire) != 2)
      sched_yield();
    sstm_exec_req_t qu = {.fn = urgent_body, .priority = 7, .future = &fu};
    CHECK_OK(sstm_exec_submit(ex, &qu));
    /* release: the urgent request is queued and its ask recorded. */
    atomic_store_explicit(&stage, 3, memory_order_release);
    CHECK_OK(sstm_exec_wait(&fl));
    CHECK_OK(sstm_exec_wait(&fu));
    atomic_store_explicit(&sstm__x_test_taken, NULL, memory_order_relaxed);
    CHECK_EQ_I(low.saw_urgent, 1);
    sstm_exec_level_stats_t s;
    CHECK_OK(sstm_exec_stats(ex, 0, &s));
    CHECK_EQ_U(s.preemptions, r + 1);
  }
  CHECK_OK(sstm_exec_destroy(ex));
  sstm_shutdown();
}

/* ---- a request whose every lower worker has been asked already ----
 *
 * Two workers: X runs `stuck` (priority 0) inside a no-preemption region,
 * Y runs `other` (priority 1). A request `top` (priority 3) picks X as
 * its victim (the lowest priority; X's `kicked` is set, its ask stands in
 * the region) and nudges Y, which takes `top` at its next read. Then
 * `mid` (priority 2) is submitted: X is below it but still marked kicked,
 * Y runs `top`. The submitter must still ask X for `mid` (its `want`
 * lowered to 2 and its polled flag set): X's check, when the region ends,
 * was asked for `top` only, and finds `mid` on top of the queue. Before
 * the fix the victim choice skipped the kicked X and nobody else was
 * asked, so the check at the region's end declined `mid` (below the
 * `want` of 3) and `stuck` ran its reads to the end first, with `mid`
 * waiting behind a priority-0 transaction (and `top`, which waits for
 * `mid`, with it). An order, not a time: `stuck` reads until `mid` has
 * run or a count of reads is done. */

static _Atomic int k_stage; /* 1 stuck in its region, 2 other runs, 3 top runs, 4 leave */
static _Atomic int mid_ran;

typedef struct stuck {
  unsigned reads;
  int saw_mid;
} stuck_t;

static void stuck_body(void *a) {
  stuck_t *s = a;
  s->saw_mid = 0;
  CHECK_OK(sstm_exec_nopreempt_begin());
  int z = 0;
  /* release: the main thread submits `other` once this runs */
  atomic_compare_exchange_strong_explicit(&k_stage, &z, 1, memory_order_release,
                                          memory_order_relaxed);
  while (atomic_load_explicit(&k_stage, memory_order_acquire) != 4)
    sched_yield();
  CHECK_OK(sstm_exec_nopreempt_end());
  for (unsigned i = 0; i < s->reads; i++) {
    (void)sstm_load_u64(&cell);
    if (atomic_load_explicit(&mid_ran, memory_order_acquire)) {
      s->saw_mid = 1;
      return;
    }
  }
}

static void other_body(void *a) {
  (void)a;
  int one = 1;
  atomic_compare_exchange_strong_explicit(&k_stage, &one, 2, memory_order_release,
                                          memory_order_relaxed);
  /* preempted by `top` at a read; resumed after `mid` has run */
  while (!atomic_load_explicit(&mid_ran, memory_order_acquire))
    (void)sstm_load_u64(&cell);
}

static void top_body(void *a) {
  (void)a;
  int two = 2;
  atomic_compare_exchange_strong_explicit(&k_stage, &two, 3, memory_order_release,
                                          memory_order_relaxed);
  /* holds Y until `mid` has run, so that `mid` cannot simply take Y */
  while (!atomic_load_explicit(&mid_ran, memory_order_acquire))
    sched_yield();
}

static void mid_body(void *a) {
  (void)a;
  (void)sstm_load_u64(&cell);
  atomic_store_explicit(&mid_ran, 1, memory_order_release);
}

static void wait_stage(int s) {
  while (atomic_load_explicit(&k_stage, memory_order_acquire) != s)
    sched_yield();
}

static void run_kicked(sstm_exec_preempt_t m) {
  sstm_config_t cfg;
  sstm_test_config(&cfg);
  CHECK_OK(sstm_init(&cfg));
  sstm_exec_config_t c = sstm_test_exec_config(2, 8, 8, m);
  c.poll_fallback_us = 1000000; /* the fallback signal must not stand in for the ask */
  c.c_max = 0;                  /* no promotion: `other` stays at 1 */
  sstm_exec_t *ex;
  CHECK_OK(sstm_exec_create(&c, &ex));
  unsigned rounds = (unsigned)sstm_test_scaled(10, 3);
  for (unsigned r = 0; r < rounds; r++) {
    atomic_store_explicit(&k_stage, 0, memory_order_relaxed);
    atomic_store_explicit(&mid_ran, 0, memory_order_relaxed);
    stuck_t st = {.reads = 200000};
    sstm_exec_future_t fs, fo, ft, fm;
    sstm_exec_req_t qs = {.fn = stuck_body, .arg = &st, .priority = 0, .future = &fs};
    CHECK_OK(sstm_exec_submit(ex, &qs));
    wait_stage(1);
    sstm_exec_req_t qo = {.fn = other_body, .priority = 1, .future = &fo};
    CHECK_OK(sstm_exec_submit(ex, &qo));
    wait_stage(2);
    sstm_exec_req_t qt = {.fn = top_body, .priority = 3, .future = &ft};
    CHECK_OK(sstm_exec_submit(ex, &qt));
    wait_stage(3);
    sstm_exec_req_t qm = {.fn = mid_body, .priority = 2, .future = &fm};
    CHECK_OK(sstm_exec_submit(ex, &qm));
    /* release: `mid` is queued and its asks are made */
    atomic_store_explicit(&k_stage, 4, memory_order_release);
    CHECK_OK(sstm_exec_wait(&fs));
    CHECK_OK(sstm_exec_wait(&fo));
    CHECK_OK(sstm_exec_wait(&ft));
    CHECK_OK(sstm_exec_wait(&fm));
    CHECK_EQ_I(st.saw_mid, 1);
  }
  CHECK_OK(sstm_exec_destroy(ex));
  sstm_shutdown();
}

/* ---- two submissions and one sleeper ----
 *
 * Two workers: Y runs `low` (priority 0), X sleeps in its wait for work.
 * Request A is submitted and wakes X; X is held by the seam
 * sstm__x_test_idle_woken after its wait returned and before it takes the
 * queue lock again, so that it still counts as idle. Then request B is
 * submitted. X, let go, pops the higher of the two and holds its worker
 * until the other one has run (or `low` is done); only Y can run the other
 * one, by switching `low` out. So B must ask Y although a worker is idle:
 * that idle worker is claimed by A already. And Y's check, asked for B,
 * must switch for the request that is left, whichever X took: when A is
 * the lower one (a_prio 1, b_prio 2) Y was asked for B's 2 and finds A's
 * 1 on top. `low` starts reading only once X has taken its request, so
 * that the order is fixed: X pops first, Y's check comes after.
 *
 * Before the fix B found the sleeper idle, woke it again and asked nobody;
 * `low` read to its end and the request that X did not take waited behind
 * a priority-0 transaction. An order, not a time: `low` reads until the
 * second request has run or a count of reads is done. */

static _Atomic int s_stage;  /* 1 armed, 2 X held in the seam, 3 let go */
static _Atomic int low_go;   /* `low` may read */
static _Atomic int pair_run; /* of A and B, how many have started */
static _Atomic int second_ran, low_done;
static _Atomic(sstm_xworker_t *) low_worker;

static void idle_held(void) {
  int one = 1;
  /* acq_rel, acquire: as in held() */
  if (!atomic_compare_exchange_strong_explicit(&s_stage, &one, 2, memory_order_acq_rel,
                                               memory_order_relaxed))
    return;
  while (atomic_load_explicit(&s_stage, memory_order_acquire) != 3)
    sched_yield();
}

typedef struct sleeper_low {
  unsigned reads;
  int saw_second;
} sleeper_low_t;

static void sleeper_low_body(void *a) {
  sleeper_low_t *l = a;
  l->saw_second = 0;
  /* release: the main thread reads which worker this is */
  atomic_store_explicit(&low_worker, sstm__xp_self(), memory_order_release);
  while (!atomic_load_explicit(&low_go, memory_order_acquire))
    sched_yield();
  for (unsigned i = 0; i < l->reads; i++) {
    (void)sstm_load_u64(&cell);
    if (atomic_load_explicit(&second_ran, memory_order_acquire)) {
      l->saw_second = 1;
      return;
    }
  }
  atomic_store_explicit(&low_done, 1, memory_order_release);
}

/* A or B: the first to start holds its worker until the second has run or
 * `low` is done; the second says it ran. */
static void pair_body(void *a) {
  (void)a;
  (void)sstm_load_u64(&cell);
  if (atomic_fetch_add_explicit(&pair_run, 1, memory_order_acq_rel) == 0) {
    while (!atomic_load_explicit(&second_ran, memory_order_acquire) &&
           !atomic_load_explicit(&low_done, memory_order_acquire))
      sched_yield();
  } else {
    atomic_store_explicit(&second_ran, 1, memory_order_release);
  }
}

/* Whether thread tid is blocked in a futex call on the word at addr (the
 * first argument in /proc/self/task/TID/syscall). */
static bool in_futex_on(int tid, const void *addr) {
  char path[64], buf[128];
  snprintf(path, sizeof path, "/proc/self/task/%d/syscall", tid);
  FILE *f = fopen(path, "r");
  CHECK_NOT_NULL(f);
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  char *end;
  long nr = strtol(buf, &end, 10);
  if (buf[0] == '-' || nr != SYS_futex) return false;
  return strtoull(end, NULL, 16) == (unsigned long long)(uintptr_t)addr;
}

static void run_sleeper(sstm_exec_preempt_t m, unsigned a_prio, unsigned b_prio) {
  sstm_config_t cfg;
  sstm_test_config(&cfg);
  CHECK_OK(sstm_init(&cfg));
  sstm_exec_config_t c = sstm_test_exec_config(2, 8, 8, m);
  c.poll_fallback_us = 1000000; /* the fallback signal must not stand in for the ask */
  c.c_max = 0;                  /* no promotion: `low` stays at 0 */
  sstm_exec_t *ex;
  CHECK_OK(sstm_exec_create(&c, &ex));
  unsigned rounds = (unsigned)sstm_test_scaled(10, 3);
  for (unsigned r = 0; r < rounds; r++) {
    atomic_store_explicit(&low_go, 0, memory_order_relaxed);
    atomic_store_explicit(&pair_run, 0, memory_order_relaxed);
    atomic_store_explicit(&second_ran, 0, memory_order_relaxed);
    atomic_store_explicit(&low_done, 0, memory_order_relaxed);
    atomic_store_explicit(&low_worker, NULL, memory_order_relaxed);
    sleeper_low_t low = {.reads = 200000};
    sstm_exec_future_t fl, fa, fb;
    sstm_exec_req_t ql = {.fn = sleeper_low_body, .arg = &low, .priority = 0, .future = &fl};
    CHECK_OK(sstm_exec_submit(ex, &ql));
    sstm_xworker_t *y;
    while (!(y = atomic_load_explicit(&low_worker, memory_order_acquire)))
      sched_yield();
    sstm_xworker_t *x = &ex->workers[y == &ex->workers[0] ? 1 : 0];
    /* X sleeps in its wait for work: from here on only a wake returns it,
     * and it then meets the seam first. */
    while (!in_futex_on(x->tid, &ex->work_gen))
      sched_yield();
    atomic_store_explicit(&s_stage, 1, memory_order_relaxed);
    atomic_store_explicit(&sstm__x_test_idle_woken, idle_held, memory_order_release);
    sstm_exec_req_t qa = {.fn = pair_body, .priority = a_prio, .future = &fa};
    CHECK_OK(sstm_exec_submit(ex, &qa));
    while (atomic_load_explicit(&s_stage, memory_order_acquire) != 2)
      sched_yield();
    sstm_exec_req_t qb = {.fn = pair_body, .priority = b_prio, .future = &fb};
    CHECK_OK(sstm_exec_submit(ex, &qb));
    atomic_store_explicit(&sstm__x_test_idle_woken, NULL, memory_order_relaxed);
    /* release: B is queued and its asks are made */
    atomic_store_explicit(&s_stage, 3, memory_order_release);
    /* X has taken the higher request; then `low` reads */
    while (atomic_load_explicit(&pair_run, memory_order_acquire) < 1)
      sched_yield();
    atomic_store_explicit(&low_go, 1, memory_order_release);
    CHECK_OK(sstm_exec_wait(&fl));
    CHECK_OK(sstm_exec_wait(&fa));
    CHECK_OK(sstm_exec_wait(&fb));
    CHECK_EQ_I(low.saw_second, 1);
  }
  CHECK_OK(sstm_exec_destroy(ex));
  sstm_shutdown();
}

/* ---- an asked check and a request at its own level ----
 *
 * Two workers: W runs `low` (priority 1), Z runs `mid` (priority 3); C
 * (priority 1) waits in the queue, not started, for lack of a worker. U
 * (priority 6) then asks both (one kicked, the other nudged, each with
 * want 6). Z switches `mid` out first and runs U, so `mid` waits paused
 * (hot) at 3; only then does `low` reach a preemption point. W's check,
 * under the lock, finds 3 on top: below its `want`, and what waits above
 * `low` is a paused transaction, not a request not yet started (C is at
 * `low`'s own level, not above it). So it declines (exec.c, asked_for):
 * switching would only pause `low` as well (executor.md, "Two submissions
 * and one sleeper"). Kills the mutation `sstm__xq_top_cold(q) > prio` ->
 * `>= prio` in asked_for, under which W pauses `low` and runs `mid`.
 *
 * Ordered, not timed: `low` reads until its worker's check has run (the
 * check decides within the read that made it), or a count of reads is
 * done; U holds Z until then, or
 * until `mid` runs on W (the mutation; U must then let go, or `mid`, which
 * waits for U, and U would wait for each other). */

static _Atomic int e_low_go, e_u_started, e_u_submitted, e_u_ran, e_low_done;
static _Atomic(sstm_xworker_t *) e_low_worker, e_mid_worker;
static _Atomic(sstm_xworker_t *) e_mid_first;

static void eq_low_body(void *a) {
  (void)a;
  sstm_xworker_t *w = sstm__xp_self();
  /* release: the main thread reads which worker this is */
  atomic_store_explicit(&e_low_worker, w, memory_order_release);
  while (!atomic_load_explicit(&e_low_go, memory_order_acquire))
    sched_yield();
  uint64_t c0 = atomic_load_explicit(&w->checks, memory_order_relaxed);
  /* The check asked for by U runs in one of these reads, and decides
   * there: a switch would return from the read only when resumed. A bound
   * on the reads: in the signal mode the kick's handler drops the ask when
   * it runs while nothing waits above `low` (after Z took U and before it
   * queued `mid` again), and no check comes then; the round passes without
   * a decision (the polled mode's kick sets the request itself, so there
   * the check always comes). */
  for (unsigned i = 0; i < 200000 && atomic_load_explicit(&w->checks, memory_order_relaxed) == c0;
       i++)
    (void)sstm_load_u64(&cell);
  atomic_store_explicit(&e_low_done, 1, memory_order_release);
}

static void eq_mid_body(void *a) {
  (void)a;
  sstm_xworker_t *first = sstm__xp_self(), *null = NULL;
  atomic_compare_exchange_strong_explicit(&e_mid_first, &null, first, memory_order_acq_rel,
                                          memory_order_relaxed);
  while (!atomic_load_explicit(&e_u_submitted, memory_order_acquire))
    sched_yield();
  /* Preemption points until U has run: Z switches at one of them. */
  while (!atomic_load_explicit(&e_u_ran, memory_order_acquire)) {
    (void)sstm_load_u64(&cell);
    /* release: U reads where `mid` runs now */
    atomic_store_explicit(&e_mid_worker, sstm__xp_self(), memory_order_release);
  }
}

static void eq_urgent_body(void *a) {
  (void)a;
  (void)sstm_load_u64(&cell);
  atomic_store_explicit(&e_u_started, 1, memory_order_release);
  sstm_xworker_t *w = atomic_load_explicit(&e_low_worker, memory_order_acquire);
  while (!atomic_load_explicit(&e_low_done, memory_order_acquire) &&
         atomic_load_explicit(&e_mid_worker, memory_order_acquire) != w)
    sched_yield();
  atomic_store_explicit(&e_u_ran, 1, memory_order_release);
}

static void run_own_level(sstm_exec_preempt_t m) {
  sstm_config_t cfg;
  sstm_test_config(&cfg);
  CHECK_OK(sstm_init(&cfg));
  sstm_exec_config_t c = sstm_test_exec_config(2, 8, 8, m);
  c.poll_fallback_us = 1000000; /* the fallback signal must not stand in for the ask */
  c.c_max = 0;                  /* no promotion: `mid` stays at 3, `low` at 1 */
  c.lazy_promotion = false;
  sstm_exec_t *ex;
  CHECK_OK(sstm_exec_create(&c, &ex));
  unsigned rounds = (unsigned)sstm_test_scaled(10, 3);
  for (unsigned r = 0; r < rounds; r++) {
    atomic_store_explicit(&e_low_go, 0, memory_order_relaxed);
    atomic_store_explicit(&e_u_started, 0, memory_order_relaxed);
    atomic_store_explicit(&e_u_submitted, 0, memory_order_relaxed);
    atomic_store_explicit(&e_u_ran, 0, memory_order_relaxed);
    atomic_store_explicit(&e_low_done, 0, memory_order_relaxed);
    atomic_store_explicit(&e_low_worker, NULL, memory_order_relaxed);
    atomic_store_explicit(&e_mid_worker, NULL, memory_order_relaxed);
    atomic_store_explicit(&e_mid_first, NULL, memory_order_relaxed);
    /* Both workers sleep in their wait for work: the last round's are done
     * with their ends, so each submission below wakes one and asks nobody
     * (a submission that found no worker idle would ask `low`'s worker for
     * its own level, and that ask would let it switch for `mid`). */
    for (unsigned i = 0; i < 2; i++)
      while (!in_futex_on(ex->workers[i].tid, &ex->work_gen))
        sched_yield();
    sstm_exec_level_stats_t s1, s3;
    CHECK_OK(sstm_exec_stats(ex, 1, &s1));
    CHECK_OK(sstm_exec_stats(ex, 3, &s3));
    sstm_exec_future_t fl, fm, fc, fu;
    sstm_exec_req_t ql = {.fn = eq_low_body, .priority = 1, .future = &fl};
    CHECK_OK(sstm_exec_submit(ex, &ql));
    sstm_xworker_t *w;
    while (!(w = atomic_load_explicit(&e_low_worker, memory_order_acquire)))
      sched_yield();
    sstm_exec_req_t qm = {.fn = eq_mid_body, .priority = 3, .future = &fm};
    CHECK_OK(sstm_exec_submit(ex, &qm));
    while (!atomic_load_explicit(&e_mid_first, memory_order_acquire))
      sched_yield();
    CHECK(atomic_load_explicit(&e_mid_first, memory_order_relaxed) != w);
    /* C: no worker is idle and none runs below it; it waits, cold, at 1 */
    sstm_exec_req_t qc = {.fn = urgent_body, .priority = 1, .future = &fc};
    CHECK_OK(sstm_exec_submit(ex, &qc));
    sstm_exec_req_t qu = {.fn = eq_urgent_body, .priority = 6, .future = &fu};
    CHECK_OK(sstm_exec_submit(ex, &qu));
    /* release: U is queued and both workers asked */
    atomic_store_explicit(&e_u_submitted, 1, memory_order_release);
    /* Z has switched `mid` out for U; then `low` reads */
    while (!atomic_load_explicit(&e_u_started, memory_order_acquire))
      sched_yield();
    atomic_store_explicit(&e_low_go, 1, memory_order_release);
    CHECK_OK(sstm_exec_wait(&fl));
    CHECK_OK(sstm_exec_wait(&fm));
    CHECK_OK(sstm_exec_wait(&fc));
    CHECK_OK(sstm_exec_wait(&fu));
    sstm_exec_level_stats_t t1, t3;
    CHECK_OK(sstm_exec_stats(ex, 1, &t1));
    CHECK_OK(sstm_exec_stats(ex, 3, &t3));
    CHECK_EQ_U(t3.preemptions - s3.preemptions, 1); /* `mid`, for U */
    CHECK_EQ_U(t1.preemptions - s1.preemptions, 0); /* `low` declined */
  }
  CHECK_OK(sstm_exec_destroy(ex));
  sstm_shutdown();
}

/* ---- a claim whose entry a running worker took ----
 *
 * Three workers: Y runs `low` (priority 0), R runs `r` (priority 2), X
 * sleeps. A (priority 3) wakes and claims X, which the seam holds before it
 * takes the queue lock again. Then `r` ends and R, popping next, takes A:
 * X's claim stands for no entry any more, X will find the queue empty. B
 * (priority 1) is submitted then: X, on its way back, serves it, so it
 * must claim X again and ask nobody; `low` is not paused for it (level 0's
 * preemptions stay 0). Before the fix the stale claim made B ask Y, whose
 * next polled point paused `low` for B while X came back to nothing.
 * Poll mode: the ask is a flag that `low`'s first read after it consumes,
 * so `low`'s reads come after the ask whatever the timing. */

static _Atomic int c_r_end, c_a_ran, c_low_go, c_low_done;
static _Atomic(sstm_xworker_t *) c_low_worker, c_r_worker;

static void cl_low_body(void *a) {
  (void)a;
  /* release: the main thread reads which worker this is */
  atomic_store_explicit(&c_low_worker, sstm__xp_self(), memory_order_release);
  while (!atomic_load_explicit(&c_low_go, memory_order_acquire))
    sched_yield();
  for (unsigned i = 0; i < 1000; i++)
    (void)sstm_load_u64(&cell);
  atomic_store_explicit(&c_low_done, 1, memory_order_release);
}

static void cl_r_body(void *a) {
  (void)a;
  atomic_store_explicit(&c_r_worker, sstm__xp_self(), memory_order_release);
  while (!atomic_load_explicit(&c_r_end, memory_order_acquire))
    sched_yield();
}

static void cl_a_body(void *a) {
  (void)a;
  (void)sstm_load_u64(&cell);
  atomic_store_explicit(&c_a_ran, 1, memory_order_release);
  /* R stays busy until `low` is done: B finds X the only idle worker */
  while (!atomic_load_explicit(&c_low_done, memory_order_acquire))
    sched_yield();
}

TEST(a_claim_whose_entry_a_running_worker_took_is_not_counted) {
  sstm_config_t cfg;
  sstm_test_config(&cfg);
  CHECK_OK(sstm_init(&cfg));
  sstm_exec_config_t c = sstm_test_exec_config(3, 8, 8, SSTM_EXEC_PREEMPT_POLL);
  c.poll_fallback_us = 1000000; /* the fallback signal must not stand in for the ask */
  c.c_max = 0;
  sstm_exec_t *ex;
  CHECK_OK(sstm_exec_create(&c, &ex));
  unsigned rounds = (unsigned)sstm_test_scaled(10, 3);
  for (unsigned r = 0; r < rounds; r++) {
    atomic_store_explicit(&c_r_end, 0, memory_order_relaxed);
    atomic_store_explicit(&c_a_ran, 0, memory_order_relaxed);
    atomic_store_explicit(&c_low_go, 0, memory_order_relaxed);
    atomic_store_explicit(&c_low_done, 0, memory_order_relaxed);
    atomic_store_explicit(&c_low_worker, NULL, memory_order_relaxed);
    atomic_store_explicit(&c_r_worker, NULL, memory_order_relaxed);
    /* Every worker sleeps: the last round's are done with their ends (a
     * submission that found none idle would ask). */
    for (unsigned i = 0; i < 3; i++)
      while (!in_futex_on(ex->workers[i].tid, &ex->work_gen))
        sched_yield();
    sstm_exec_level_stats_t s0;
    CHECK_OK(sstm_exec_stats(ex, 0, &s0));
    sstm_exec_future_t fl, fr, fa, fb;
    sstm_exec_req_t ql = {.fn = cl_low_body, .priority = 0, .future = &fl};
    CHECK_OK(sstm_exec_submit(ex, &ql));
    sstm_xworker_t *y, *rw;
    while (!(y = atomic_load_explicit(&c_low_worker, memory_order_acquire)))
      sched_yield();
    sstm_exec_req_t qr = {.fn = cl_r_body, .priority = 2, .future = &fr};
    CHECK_OK(sstm_exec_submit(ex, &qr));
    while (!(rw = atomic_load_explicit(&c_r_worker, memory_order_acquire)))
      sched_yield();
    sstm_xworker_t *x = NULL;
    for (unsigned i = 0; i < 3; i++)
      if (&ex->workers[i] != y && &ex->workers[i] != rw) x = &ex->workers[i];
    CHECK_NOT_NULL(x);
    while (!in_futex_on(x->tid, &ex->work_gen))
      sched_yield();
    atomic_store_explicit(&s_stage, 1, memory_order_relaxed);
    atomic_store_explicit(&sstm__x_test_idle_woken, idle_held, memory_order_release);
    sstm_exec_req_t qa = {.fn = cl_a_body, .priority = 3, .future = &fa};
    CHECK_OK(sstm_exec_submit(ex, &qa));
    while (atomic_load_explicit(&s_stage, memory_order_acquire) != 2)
      sched_yield();
    /* X is held, claimed; R ends `r` and takes A */
    atomic_store_explicit(&c_r_end, 1, memory_order_release);
    while (!atomic_load_explicit(&c_a_ran, memory_order_acquire))
      sched_yield();
    sstm_exec_req_t qb = {.fn = urgent_body, .priority = 1, .future = &fb};
    CHECK_OK(sstm_exec_submit(ex, &qb));
    /* `low` reads after B's submission, and so after an ask if there was one */
    atomic_store_explicit(&c_low_go, 1, memory_order_release);
    while (!atomic_load_explicit(&c_low_done, memory_order_acquire))
      sched_yield();
    atomic_store_explicit(&sstm__x_test_idle_woken, NULL, memory_order_relaxed);
    atomic_store_explicit(&s_stage, 3, memory_order_release);
    CHECK_OK(sstm_exec_wait(&fl));
    CHECK_OK(sstm_exec_wait(&fr));
    CHECK_OK(sstm_exec_wait(&fa));
    CHECK_OK(sstm_exec_wait(&fb));
    sstm_exec_level_stats_t t0;
    CHECK_OK(sstm_exec_stats(ex, 0, &t0));
    CHECK_EQ_U(t0.preemptions - s0.preemptions, 0);
  }
  CHECK_OK(sstm_exec_destroy(ex));
  sstm_shutdown();
}

/* ---- a pause's push claims the sleeper it wakes ----
 *
 * Three workers. X runs `xr` (priority 4), Y runs `p` (priority 2), W runs
 * `wr` (priority 5). E (priority 3) asks Y alone (the only worker below
 * it); Y's check takes E and pauses `p`, and the seam sstm__x_test_paused
 * holds Y before it queues `p` again. Meanwhile W ends `wr`, sleeps (the
 * queue is empty) and is woken by `w0` (priority 0), which it runs; then
 * X ends `xr` and sleeps. Let go, Y queues `p` (hot at 2) and wakes X:
 * that push claims X (run_ctx, claim_sleeper), and X is held by
 * sstm__x_test_idle_woken before it takes the queue lock again. B
 * (priority 1) is submitted then: X is claimed, so B must ask W, which
 * runs below it. X, let go, pops `p` (the higher), which holds X until B
 * has run or `w0` is done; E holds Y likewise. Only W can run B, by
 * switching `w0` out.
 *
 * The mutation that makes the pause's push wake without claiming (`bool
 * wake = ex->idle > 0` in run_ctx) leaves X unclaimed: B wakes X again
 * and asks nobody, and `w0` reads to its end with B waiting behind it. An
 * order, not a time: `w0` reads until B has run or a count of reads is
 * done, and starts reading only after B's submission. */

static _Atomic int pp_stage; /* 1 armed, 2 Y held in the seam, 3 let go */
static _Atomic int pp_xr_end, pp_wr_end, pp_p_go, pp_e_started, pp_b_ran, pp_w0_go, pp_w0_done;
static _Atomic(sstm_xworker_t *) pp_x, pp_y, pp_w, pp_w0_worker;

static void paused_held(void) {
  int one = 1;
  /* acq_rel, acquire: as in held() */
  if (!atomic_compare_exchange_strong_explicit(&pp_stage, &one, 2, memory_order_acq_rel,
                                               memory_order_relaxed))
    return;
  while (atomic_load_explicit(&pp_stage, memory_order_acquire) != 3)
    sched_yield();
}

/* `xr` and `wr`: hold their worker until told to end. */
static void pp_hold_body(void *a) {
  _Atomic int *end = a;
  /* release: the main thread reads which worker this is */
  atomic_store_explicit(end == &pp_xr_end ? &pp_x : &pp_w, sstm__xp_self(), memory_order_release);
  while (!atomic_load_explicit(end, memory_order_acquire))
    sched_yield();
}

/* Waits until B has run or `w0` is done. */
static void pp_wait_b(void) {
  while (!atomic_load_explicit(&pp_b_ran, memory_order_acquire) &&
         !atomic_load_explicit(&pp_w0_done, memory_order_acquire))
    sched_yield();
}

static void pp_p_body(void *a) {
  (void)a;
  atomic_store_explicit(&pp_y, sstm__xp_self(), memory_order_release);
  while (!atomic_load_explicit(&pp_p_go, memory_order_acquire))
    sched_yield();
  /* Y's check, asked for E, pauses `p` at one of these reads. */
  for (unsigned i = 0; i < 200000 && !atomic_load_explicit(&pp_e_started, memory_order_acquire);
       i++)
    (void)sstm_load_u64(&cell);
  pp_wait_b();
}

static void pp_e_body(void *a) {
  (void)a;
  (void)sstm_load_u64(&cell);
  atomic_store_explicit(&pp_e_started, 1, memory_order_release);
  pp_wait_b();
}

static void pp_b_body(void *a) {
  (void)a;
  (void)sstm_load_u64(&cell);
  atomic_store_explicit(&pp_b_ran, 1, memory_order_release);
}

typedef struct pp_w0 {
  unsigned reads;
  int saw_b;
} pp_w0_t;

static void pp_w0_body(void *a) {
  pp_w0_t *l = a;
  l->saw_b = 0;
  atomic_store_explicit(&pp_w0_worker, sstm__xp_self(), memory_order_release);
  while (!atomic_load_explicit(&pp_w0_go, memory_order_acquire))
    sched_yield();
  for (unsigned i = 0; i < l->reads; i++) {
    (void)sstm_load_u64(&cell);
    if (atomic_load_explicit(&pp_b_ran, memory_order_acquire)) {
      l->saw_b = 1;
      break;
    }
  }
  atomic_store_explicit(&pp_w0_done, 1, memory_order_release);
}

static void wait_started(_Atomic(sstm_xworker_t *) *who) {
  while (!atomic_load_explicit(who, memory_order_acquire))
    sched_yield();
}

static void run_pause_claims(sstm_exec_preempt_t m) {
  sstm_config_t cfg;
  sstm_test_config(&cfg);
  CHECK_OK(sstm_init(&cfg));
  sstm_exec_config_t c = sstm_test_exec_config(3, 8, 8, m);
  c.poll_fallback_us = 1000000; /* the fallback signal must not stand in for the ask */
  c.c_max = 0;                  /* no promotion: `p` stays at 2 */
  c.lazy_promotion = false;
  sstm_exec_t *ex;
  CHECK_OK(sstm_exec_create(&c, &ex));
  unsigned rounds = (unsigned)sstm_test_scaled(10, 3);
  for (unsigned r = 0; r < rounds; r++) {
    _Atomic int *flags[] = {&pp_xr_end, &pp_wr_end, &pp_p_go,   &pp_e_started,
                            &pp_b_ran,  &pp_w0_go,  &pp_w0_done};
    for (unsigned i = 0; i < sizeof flags / sizeof flags[0]; i++)
      atomic_store_explicit(flags[i], 0, memory_order_relaxed);
    _Atomic(sstm_xworker_t *) *who[] = {&pp_x, &pp_y, &pp_w, &pp_w0_worker};
    for (unsigned i = 0; i < sizeof who / sizeof who[0]; i++)
      atomic_store_explicit(who[i], NULL, memory_order_relaxed);
    /* Every worker sleeps: each submission below wakes one, asks nobody. */
    for (unsigned i = 0; i < 3; i++)
      while (!in_futex_on(ex->workers[i].tid, &ex->work_gen))
        sched_yield();
    sstm_exec_future_t fx, fp, fw, fe, fw0, fb;
    sstm_exec_req_t qx = {.fn = pp_hold_body, .arg = &pp_xr_end, .priority = 4, .future = &fx};
    CHECK_OK(sstm_exec_submit(ex, &qx));
    wait_started(&pp_x);
    sstm_exec_req_t qp = {.fn = pp_p_body, .priority = 2, .future = &fp};
    CHECK_OK(sstm_exec_submit(ex, &qp));
    wait_started(&pp_y);
    sstm_exec_req_t qw = {.fn = pp_hold_body, .arg = &pp_wr_end, .priority = 5, .future = &fw};
    CHECK_OK(sstm_exec_submit(ex, &qw));
    wait_started(&pp_w);
    sstm_xworker_t *x = atomic_load_explicit(&pp_x, memory_order_relaxed);
    sstm_xworker_t *w = atomic_load_explicit(&pp_w, memory_order_relaxed);
    /* E asks Y; Y pauses `p` and is held before it queues it again */
    atomic_store_explicit(&pp_stage, 1, memory_order_relaxed);
    atomic_store_explicit(&sstm__x_test_paused, paused_held, memory_order_release);
    sstm_exec_req_t qe = {.fn = pp_e_body, .priority = 3, .future = &fe};
    CHECK_OK(sstm_exec_submit(ex, &qe));
    atomic_store_explicit(&pp_p_go, 1, memory_order_release);
    while (atomic_load_explicit(&pp_stage, memory_order_acquire) != 2)
      sched_yield();
    atomic_store_explicit(&sstm__x_test_paused, NULL, memory_order_relaxed);
    /* W ends `wr`, finds the queue empty and sleeps; `w0` wakes it */
    atomic_store_explicit(&pp_wr_end, 1, memory_order_release);
    while (!in_futex_on(w->tid, &ex->work_gen))
      sched_yield();
    pp_w0_t w0 = {.reads = 200000};
    sstm_exec_req_t qw0 = {.fn = pp_w0_body, .arg = &w0, .priority = 0, .future = &fw0};
    CHECK_OK(sstm_exec_submit(ex, &qw0));
    wait_started(&pp_w0_worker);
    CHECK(atomic_load_explicit(&pp_w0_worker, memory_order_relaxed) == w);
    /* X ends `xr` and sleeps */
    atomic_store_explicit(&pp_xr_end, 1, memory_order_release);
    while (!in_futex_on(x->tid, &ex->work_gen))
      sched_yield();
    /* Y queues `p` and wakes X, which the seam holds */
    atomic_store_explicit(&s_stage, 1, memory_order_relaxed);
    atomic_store_explicit(&sstm__x_test_idle_woken, idle_held, memory_order_release);
    atomic_store_explicit(&pp_stage, 3, memory_order_release);
    while (atomic_load_explicit(&s_stage, memory_order_acquire) != 2)
      sched_yield();
    sstm_exec_req_t qb = {.fn = pp_b_body, .priority = 1, .future = &fb};
    CHECK_OK(sstm_exec_submit(ex, &qb));
    atomic_store_explicit(&sstm__x_test_idle_woken, NULL, memory_order_relaxed);
    /* release: B is queued and its asks are made */
    atomic_store_explicit(&s_stage, 3, memory_order_release);
    atomic_store_explicit(&pp_w0_go, 1, memory_order_release);
    CHECK_OK(sstm_exec_wait(&fx));
    CHECK_OK(sstm_exec_wait(&fp));
    CHECK_OK(sstm_exec_wait(&fw));
    CHECK_OK(sstm_exec_wait(&fe));
    CHECK_OK(sstm_exec_wait(&fw0));
    CHECK_OK(sstm_exec_wait(&fb));
    CHECK_EQ_I(w0.saw_b, 1);
  }
  CHECK_OK(sstm_exec_destroy(ex));
  sstm_shutdown();
}

/* ---- waiter_first: a waiter victim is asked alone ----
 *
 * Three workers, ser-block, waiter_first. L runs `hl` (priority 0): it
 * writes `wf_held` (encounter-time locking: it holds the lock) and reads
 * until released. V runs `hv` (priority 1), which writes `wf_held`, loses
 * to `hl` and waits in its policy. X sleeps. A1 (priority 1) wakes and
 * claims X, which sstm__x_test_idle_woken holds before it takes the queue
 * lock again; then B2 (priority 2) finds no sleeper left and asks a
 * running worker: V, the waiter, and V alone (executor.md, "Two
 * submissions and one sleeper"): L, which runs below both requests, is
 * neither kicked nor nudged. X pops B2 and then A1, which waited for X
 * (or V's check takes one of them); `hl` is never paused.
 *
 * Caught: the waiter asked like any victim, with the others nudged too:
 * L's `want` is lowered to 2 (both modes), and in the polled mode `hl` is
 * paused at its next read, for a request not yet started above it. Every
 * step waits for an event. */

static uint64_t wf_held __attribute__((aligned(128))), wf_other __attribute__((aligned(128)));
static _Atomic int wf_release, wf_l_in, wf_v_in;
static _Atomic(sstm_xworker_t *) wf_l, wf_v;

static void wf_l_body(void *a) {
  (void)a;
  sstm_store_u64(&wf_held, sstm_load_u64(&wf_held) + 1);
  atomic_store_explicit(&wf_l, sstm__xp_self(), memory_order_release);
  atomic_store_explicit(&wf_l_in, 1, memory_order_release);
  while (!atomic_load_explicit(&wf_release, memory_order_acquire))
    (void)sstm_load_u64(&wf_other);
}

static void wf_v_body(void *a) {
  (void)a;
  atomic_store_explicit(&wf_v, sstm__xp_self(), memory_order_release);
  atomic_store_explicit(&wf_v_in, 1, memory_order_release);
  sstm_store_u64(&wf_held, sstm_load_u64(&wf_held) + 10);
}

static void wf_quick_body(void *a) {
  (void)a;
  (void)sstm_load_u64(&wf_other);
}

static void run_waiter_alone(sstm_exec_preempt_t m) {
  sstm_config_t cfg;
  sstm_test_config(&cfg);
  cfg.design = SSTM_DESIGN_ETL; /* `hl`'s lock is held before its commit */
  cfg.cm = "ser-block";
  CHECK_OK(sstm_init(&cfg));
  /* V must be in its policy's wait when B2 is submitted: with the bound
   * (SSTM_SER_WAIT_MAX_NS) it retries between waits, and a host that
   * deschedules the test between the check below and the submission could
   * let B2 find it running; without a bound it sleeps until `hl` ends.
   * relaxed: set before the workers run transactions. */
  uint64_t bound = atomic_load_explicit(&sstm__ser_wait_max_ns, memory_order_relaxed);
  atomic_store_explicit(&sstm__ser_wait_max_ns, 0, memory_order_relaxed);
  sstm_exec_config_t c = sstm_test_exec_config(3, 16, 5, m);
  c.poll_fallback_us = 1000000;
  c.c_max = 0;
  c.waiter_first = true;
  sstm_exec_t *ex;
  CHECK_OK(sstm_exec_create(&c, &ex));
  wf_held = wf_other = 0;
  atomic_store_explicit(&wf_release, 0, memory_order_relaxed);
  atomic_store_explicit(&wf_l_in, 0, memory_order_relaxed);
  atomic_store_explicit(&wf_v_in, 0, memory_order_relaxed);
  /* Every worker sleeps: each submission below wakes one, asks nobody. */
  for (unsigned i = 0; i < 3; i++)
    while (!in_futex_on(ex->workers[i].tid, &ex->work_gen))
      sched_yield();
  sstm_exec_future_t fl, fv, fa, fb;
  sstm_exec_req_t ql = {.fn = wf_l_body, .priority = 0, .future = &fl};
  CHECK_OK(sstm_exec_submit(ex, &ql));
  while (!atomic_load_explicit(&wf_l_in, memory_order_acquire))
    sched_yield();
  sstm_exec_req_t qv = {.fn = wf_v_body, .priority = 1, .future = &fv};
  CHECK_OK(sstm_exec_submit(ex, &qv));
  while (!atomic_load_explicit(&wf_v_in, memory_order_acquire))
    sched_yield();
  sstm_xworker_t *l = atomic_load_explicit(&wf_l, memory_order_acquire);
  sstm_xworker_t *v = atomic_load_explicit(&wf_v, memory_order_acquire);
  CHECK(l != v);
  sstm_xworker_t *x = NULL;
  for (unsigned i = 0; i < 3; i++)
    if (&ex->workers[i] != l && &ex->workers[i] != v) x = &ex->workers[i];
  /* V waits in its policy; X sleeps */
  for (;;) {
    sstm_xctx_t *vc = atomic_load_explicit(&v->cur, memory_order_acquire);
    if (vc && sstm__exec_in_cm_wait(vc->desc)) break;
    sched_yield();
  }
  while (!in_futex_on(x->tid, &ex->work_gen))
    sched_yield();
  atomic_store_explicit(&s_stage, 1, memory_order_relaxed);
  atomic_store_explicit(&sstm__x_test_idle_woken, idle_held, memory_order_release);
  sstm_exec_req_t qa = {.fn = wf_quick_body, .priority = 1, .future = &fa};
  CHECK_OK(sstm_exec_submit(ex, &qa));
  while (atomic_load_explicit(&s_stage, memory_order_acquire) != 2)
    sched_yield();
  sstm_exec_req_t qb = {.fn = wf_quick_body, .priority = 2, .future = &fb};
  CHECK_OK(sstm_exec_submit(ex, &qb));
  atomic_store_explicit(&sstm__x_test_idle_woken, NULL, memory_order_relaxed);
  /* Asked by B2's submission, which has returned: V alone, as a waiter.
   * (L's `want` is reset only when it starts another context; `hl` runs
   * on. V's is not read: its check may have taken B2 already.) */
  CHECK_EQ_U(atomic_load_explicit(&v->waiter_picks, memory_order_relaxed), 1);
  CHECK_EQ_I(atomic_load_explicit(&l->want, memory_order_acquire), INT_MAX);
  atomic_store_explicit(&s_stage, 3, memory_order_release);
  CHECK_OK(sstm_exec_wait(&fb));
  CHECK_OK(sstm_exec_wait(&fa));
  atomic_store_explicit(&wf_release, 1, memory_order_release);
  CHECK_OK(sstm_exec_wait(&fl));
  CHECK_OK(sstm_exec_wait(&fv));
  CHECK_EQ_U(wf_held, 11);
  sstm_exec_level_stats_t s0;
  CHECK_OK(sstm_exec_stats(ex, 0, &s0));
  CHECK_EQ_U(s0.preemptions, 0); /* `hl` was never paused */
  CHECK_OK(sstm_exec_destroy(ex));
  sstm_shutdown();
  atomic_store_explicit(&sstm__ser_wait_max_ns, bound, memory_order_relaxed);
}

TEST(signal) { run_case(SSTM_EXEC_PREEMPT_SIGNAL); }
TEST(poll) { run_case(SSTM_EXEC_PREEMPT_POLL); }

TEST(kicked_victim_is_asked_again_signal) { run_kicked(SSTM_EXEC_PREEMPT_SIGNAL); }
TEST(kicked_victim_is_asked_again_poll) { run_kicked(SSTM_EXEC_PREEMPT_POLL); }

TEST(second_submission_to_a_woken_sleeper_asks_a_victim_signal) {
  run_sleeper(SSTM_EXEC_PREEMPT_SIGNAL, 2, 1);
}
TEST(second_submission_to_a_woken_sleeper_asks_a_victim_poll) {
  run_sleeper(SSTM_EXEC_PREEMPT_POLL, 2, 1);
}
TEST(second_submission_to_a_woken_sleeper_the_victim_takes_the_first_signal) {
  run_sleeper(SSTM_EXEC_PREEMPT_SIGNAL, 1, 2);
}
TEST(second_submission_to_a_woken_sleeper_the_victim_takes_the_first_poll) {
  run_sleeper(SSTM_EXEC_PREEMPT_POLL, 1, 2);
}

TEST(an_asked_check_declines_for_a_request_at_its_own_level_signal) {
  run_own_level(SSTM_EXEC_PREEMPT_SIGNAL);
}
TEST(an_asked_check_declines_for_a_request_at_its_own_level_poll) {
  run_own_level(SSTM_EXEC_PREEMPT_POLL);
}

TEST(a_pause_claims_the_sleeper_it_wakes_signal) { run_pause_claims(SSTM_EXEC_PREEMPT_SIGNAL); }
TEST(a_pause_claims_the_sleeper_it_wakes_poll) { run_pause_claims(SSTM_EXEC_PREEMPT_POLL); }

TEST(waiter_first_a_waiter_victim_is_asked_alone_signal) {
  run_waiter_alone(SSTM_EXEC_PREEMPT_SIGNAL);
}
TEST(waiter_first_a_waiter_victim_is_asked_alone_poll) { run_waiter_alone(SSTM_EXEC_PREEMPT_POLL); }

SSTM_TEST_MAIN()
