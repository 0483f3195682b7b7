/* SPDX-License-Identifier: MIT */
/* Internal tests: the admit policy (src/cm/admit.c).
 *  - Its decision, window by window, on constructed counts (the test seam
 *    sstm__admit_decide: no threads, no clock): the gate turns on only
 *    with more threads than its limit, enough events and aborts per commit
 *    at ADMIT_ON_APC or above; it stays on through windows at or above
 *    ADMIT_OFF_APC and windows too calm for fewer than ADMIT_OFF_WINDOWS in
 *    a row, and turns off after ADMIT_OFF_WINDOWS calm ones or as soon as
 *    the threads fall to the limit.
 *  - Its gate, pinned on with one place (sstm__admit_pin), under
 *    admit-slice with a slice that never ends: a thread keeps its place
 *    across transactions while a second and a third sleep at the begin
 *    of their first transaction (before their attempt: never inside one);
 *    they are admitted one at a time, in order, as the threads before
 *    them give their place back (here: by leaving).
 *  - The same gate under admit: the place is the transaction's, given
 *    back at its commit, so a thread that begins while another's
 *    transaction runs sleeps until that commit, and none after it.
 *  - Places belong to threads that run transactions: a descriptor
 *    detached with a place gives it back at once; a thread that stops
 *    beginning transactions loses its place to a waiter once its slice
 *    is over (a reclaim), and queues at its next begin. With no bound on
 *    the gate's progress, a place kept by either would leave the waiter
 *    asleep for ever (the watchdog fails the test); the counts show that
 *    no wait ended by the bound.
 *  - The executor, whose workers run many descriptors in turn (one per
 *    context), detaching each at every pause and request end: with the
 *    gate pinned on, as many places as workers, a slice that never ends
 *    and no bound, no context ever waits (a place kept by a context that
 *    left its worker would make a later one wait for ever).
 *  - The bound: a holder that gives nothing back (a slice that never
 *    ends) costs a waiter the bound on the gate's progress, then the
 *    waiter runs (one timeout counted).
 *  - The mechanism, through the library: threads that conflict under
 *    "admit" and "admit-slice" on a shared counter all commit and the
 *    counter is exact; the policy reports its gate in sstm_describe. Which
 *    windows turn the gate on depends on timing, so nothing here asserts
 *    that it did.
 * Every expectation follows from the rules at the top of admit.c; no
 * step waits for time, only for events.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include <schedstm/exec.h>

#include "../common/exec_cfg.h"
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

/* A window check whose clock reading is older than the start of the
 * window another thread just opened (it read the clock, then that thread
 * closed the window with a later reading, then it loaded the start) closes
 * nothing. now - start wrapped to a huge "window", and the thread closed
 * a window of an instant, in which few threads' counters moved: the gate
 * turned off. */
TEST(a_clock_reading_older_than_the_window_start_closes_no_window) {
  sstm_config_t cfg;
  sstm_test_config(&cfg);
  cfg.cm = "admit-slice";
  CHECK_OK(sstm_init(&cfg));
  CHECK_OK(sstm_thread_init());
  sstm_cm_ctx_t ctx = {.state = sstm_cm_state_of(sstm_self()), .desc = sstm_self()};
  uint64_t t = sstm__now_ns() + 1000000000ull; /* past the window sstm_init opened */
  CHECK_TRUE(sstm__admit_window_at(&ctx, t));
  CHECK_FALSE(sstm__admit_window_at(&ctx, t - 1)); /* read before that close */
  CHECK_FALSE(sstm__admit_window_at(&ctx, t + 1)); /* inside the new window */
  CHECK_TRUE(sstm__admit_window_at(&ctx, t + 1000000000ull));
  sstm_test_fini();
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

static void conflicting_threads(const char *cm) {
  sstm_config_t cfg;
  sstm_test_config(&cfg);
  cfg.cm = cm;
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
  printf("%s: %llu update commits, %llu aborts, admission waits %llu, timeouts %llu, "
         "switches %llu\n",
         cm, (unsigned long long)st.commits_update, (unsigned long long)st.aborts_total,
         (unsigned long long)st.cm_stats[2], (unsigned long long)st.cm_stats[3],
         (unsigned long long)st.cm_stats[4]);
  sstm_test_fini();
}

TEST(conflicting_threads_all_commit) { conflicting_threads("admit"); }
TEST(conflicting_threads_all_commit_slice) { conflicting_threads("admit-slice"); }

/* ---- the gate, pinned on with one place and no wait bound ----
 * Each thread runs its transactions when told to (`go` counts the ones it
 * may run), and says after each how many have returned. A thread sleeps
 * at the gate inside sstm_run (at the begin of the transaction that found
 * the gate on, before its attempt), seen in FUTEX_WAIT. A lost hand-over
 * leaves a thread asleep for ever (no bound): the watchdog fails the
 * test. */
enum { G_A, G_B, G_C, G_N };
static struct {
  _Atomic int tid[G_N];
  _Atomic int go[G_N];        /* transactions it may run */
  _Atomic int returned[G_N];  /* transactions whose sstm_run returned */
  _Atomic int leave[G_N];     /* unregister and end */
  _Atomic int hold[G_N];      /* its transaction waits inside until cleared */
  _Atomic int inside[G_N];    /* ... and says it is there */
  _Atomic int cancel[G_N];    /* its transactions cancel (sstm_cancel) instead of committing */
  _Atomic int cancelled[G_N]; /* transactions whose sstm_run returned SSTM_ECANCELED */
} g;
static uint64_t gword[G_N];

static void g_body(void *arg) {
  int i = (int)(intptr_t)arg;
  sstm_store_u64(&gword[i], sstm_load_u64(&gword[i]) + 1);
  if (atomic_load_explicit(&g.hold[i],
                           memory_order_seq_cst)) { /* an admitted transaction that runs on */
    atomic_store_explicit(&g.inside[i], 1, memory_order_seq_cst);
    while (atomic_load_explicit(&g.hold[i], memory_order_seq_cst))
      sched_yield();
  }
  if (atomic_load_explicit(&g.cancel[i], memory_order_seq_cst)) sstm_cancel();
}

static void *g_thread(void *arg) {
  int i = (int)(intptr_t)arg;
  atomic_store_explicit(&g.tid[i], sstm__gettid(), memory_order_seq_cst);
  CHECK_OK(sstm_thread_init());
  for (;;) {
    if (atomic_load_explicit(&g.returned[i], memory_order_seq_cst) <
        atomic_load_explicit(&g.go[i], memory_order_seq_cst)) {
      int rc = sstm_run(NULL, g_body, arg);
      if (rc == SSTM_ECANCELED && atomic_load_explicit(&g.cancel[i], memory_order_seq_cst))
        atomic_fetch_add_explicit(&g.cancelled[i], 1, memory_order_seq_cst);
      else
        CHECK_OK(rc);
      atomic_fetch_add_explicit(&g.returned[i], 1, memory_order_seq_cst);
    } else if (atomic_load_explicit(&g.leave[i], memory_order_seq_cst)) {
      break;
    } else {
      sched_yield();
    }
  }
  CHECK_OK(sstm_thread_exit()); /* gives the place back, if it holds one */
  return NULL;
}

static void await_asleep(int i) {
  while (atomic_load_explicit(&g.tid[i], memory_order_seq_cst) == 0 ||
         !sstm_test_in_futex(atomic_load_explicit(&g.tid[i], memory_order_seq_cst)))
    sched_yield();
}

static void await_returned(int i, int n) {
  while (atomic_load_explicit(&g.returned[i], memory_order_seq_cst) < n)
    sched_yield();
}

static void g_start(pthread_t *th, int i, int txs) {
  atomic_store_explicit(&g.go[i], txs, memory_order_seq_cst);
  CHECK_EQ_I(pthread_create(th, NULL, g_thread, (void *)(intptr_t)i), 0);
}

static void g_setup_bounded(const char *cm, uint64_t hold_ns, uint64_t wait_max_ns) {
  sstm_config_t cfg;
  sstm_test_config(&cfg);
  cfg.cm = cm;
  CHECK_OK(sstm_init(&cfg));
  CHECK_OK(sstm_thread_init());
  sstm__admit_pin(true, 1, wait_max_ns, hold_ns);
  memset(&g, 0, sizeof g);
  memset(gword, 0, sizeof gword);
}

static void g_setup(const char *cm, uint64_t hold_ns) { g_setup_bounded(cm, hold_ns, 0); }

static void g_end_counted(pthread_t *th, uint64_t waits, uint64_t timeouts) {
  for (int i = 0; i < G_N; i++)
    atomic_store_explicit(&g.leave[i], 1, memory_order_seq_cst);
  for (int i = 0; i < G_N; i++)
    CHECK_EQ_I(pthread_join(th[i], NULL), 0);
  for (int i = 0; i < G_N; i++)
    CHECK_EQ_U(tx_load_u64(&gword[i]),
               (uint64_t)(atomic_load_explicit(&g.returned[i], memory_order_seq_cst) -
                          atomic_load_explicit(&g.cancelled[i], memory_order_seq_cst)));
  sstm_stats_t st;
  CHECK_OK(sstm_stats_aggregate(&st));
  CHECK_EQ_U(st.cm_stats[2], waits);    /* admission waits */
  CHECK_EQ_U(st.cm_stats[3], timeouts); /* admission timeouts */
  sstm_test_fini();
}

static void g_end(pthread_t *th, uint64_t waits) { g_end_counted(th, waits, 0); }

TEST(slice_keeps_the_place_and_admits_in_order) {
  g_setup("admit-slice", UINT64_MAX); /* a slice that never ends */
  pthread_t th[G_N];
  /* A's first commit takes ticket 0, admitted at once (one place) */
  g_start(&th[G_A], G_A, 1);
  await_returned(G_A, 1);
  /* B and C: the commit of their first transaction takes tickets 1 and 2
   * and sleeps there */
  g_start(&th[G_B], G_B, 1);
  await_asleep(G_B);
  g_start(&th[G_C], G_C, 1);
  await_asleep(G_C);
  /* A keeps its place across transactions: were it given back at a
   * commit, A would sleep behind C and never return */
  atomic_store_explicit(&g.go[G_A], 200, memory_order_seq_cst);
  await_returned(G_A, 200);
  CHECK_EQ_I(atomic_load_explicit(&g.returned[G_B], memory_order_seq_cst), 0);
  CHECK_EQ_I(atomic_load_explicit(&g.returned[G_C], memory_order_seq_cst), 0);
  /* A leaves: its place goes to B alone (C is next, the limit is 1) */
  atomic_store_explicit(&g.leave[G_A], 1, memory_order_seq_cst);
  CHECK_EQ_I(pthread_join(th[G_A], NULL), 0);
  await_returned(G_B, 1);
  atomic_store_explicit(&g.go[G_B], 50, memory_order_seq_cst); /* B too keeps the place */
  await_returned(G_B, 50);
  for (int k = 0; k < 3; k++) { /* C may be between two sleeps, never past them */
    await_asleep(G_C);
    CHECK_EQ_I(atomic_load_explicit(&g.returned[G_C], memory_order_seq_cst), 0);
    sched_yield();
  }
  /* B leaves: C is admitted */
  atomic_store_explicit(&g.leave[G_B], 1, memory_order_seq_cst);
  await_returned(G_C, 1);
  atomic_store_explicit(&g.leave[G_C], 1, memory_order_seq_cst);
  CHECK_EQ_I(pthread_join(th[G_B], NULL), 0);
  CHECK_EQ_I(pthread_join(th[G_C], NULL), 0);
  CHECK_EQ_U(tx_load_u64(&gword[G_A]), 200);
  CHECK_EQ_U(tx_load_u64(&gword[G_B]), 50);
  CHECK_EQ_U(tx_load_u64(&gword[G_C]), 1);
  sstm_stats_t st;
  CHECK_OK(sstm_stats_aggregate(&st));
  CHECK_EQ_U(st.cm_stats[2], 2); /* admission waits: B and C */
  CHECK_EQ_U(st.cm_stats[3], 0); /* no timeouts (no bound) */
  sstm_test_fini();
}

TEST(admit_holds_the_place_for_one_transaction) {
  g_setup("admit", 0);
  pthread_t th[G_N];
  /* A's transaction is admitted at its begin and runs on */
  atomic_store_explicit(&g.hold[G_A], 1, memory_order_seq_cst);
  g_start(&th[G_A], G_A, 1);
  while (!atomic_load_explicit(&g.inside[G_A], memory_order_seq_cst))
    sched_yield();
  /* B begins meanwhile: asleep at its begin, before its attempt */
  g_start(&th[G_B], G_B, 1);
  await_asleep(G_B);
  CHECK_EQ_I(atomic_load_explicit(&g.returned[G_B], memory_order_seq_cst), 0);
  /* A's commit gives the place back: B runs */
  atomic_store_explicit(&g.hold[G_A], 0, memory_order_seq_cst);
  await_returned(G_B, 1);
  /* B's commit gave it back too: A and B, one after the other, never wait
   * again (an idle thread holds no place under admit) */
  atomic_store_explicit(&g.go[G_A], 5, memory_order_seq_cst);
  await_returned(G_A, 5);
  atomic_store_explicit(&g.go[G_B], 5, memory_order_seq_cst);
  await_returned(G_B, 5);
  g_start(&th[G_C], G_C, 0);
  g_end(th, 1); /* waits: B's first begin */
}

/* admit: the place is the transaction's, and a cancel ends the
 * transaction as a commit does: it gives the place back (admit_abort). No
 * bound: a place kept by the cancelled transaction leaves the waiter
 * asleep for ever, and the watchdog fails the test (the mutation: no
 * gate_exit on SSTM_ABORT_USER_CANCEL). */
TEST(admit_gives_the_place_back_when_the_transaction_is_cancelled) {
  g_setup("admit", 0);
  pthread_t th[G_N];
  /* A's transaction is admitted at its begin, runs on, then cancels */
  atomic_store_explicit(&g.hold[G_A], 1, memory_order_seq_cst);
  atomic_store_explicit(&g.cancel[G_A], 1, memory_order_seq_cst);
  g_start(&th[G_A], G_A, 1);
  while (!atomic_load_explicit(&g.inside[G_A], memory_order_seq_cst))
    sched_yield();
  /* B begins meanwhile: asleep at its begin */
  g_start(&th[G_B], G_B, 1);
  await_asleep(G_B);
  CHECK_EQ_I(atomic_load_explicit(&g.returned[G_B], memory_order_seq_cst), 0);
  /* A's cancel gives the place back: B runs */
  atomic_store_explicit(&g.hold[G_A], 0, memory_order_seq_cst);
  await_returned(G_B, 1);
  /* The place goes back inside A's sstm_run, before it returns and A's
   * thread counts the cancel: B may return first. So A's return is
   * awaited before its count is read (and before its cancel is cleared,
   * which A's thread reads after the return to tell a cancel it asked
   * for from an error). */
  await_returned(G_A, 1);
  CHECK_EQ_I(atomic_load_explicit(&g.cancelled[G_A], memory_order_seq_cst), 1);
  /* A, its cancels done, commits again without waiting: no place left
   * held by anyone */
  atomic_store_explicit(&g.cancel[G_A], 0, memory_order_seq_cst);
  atomic_store_explicit(&g.go[G_A], 3, memory_order_seq_cst);
  await_returned(G_A, 3);
  g_start(&th[G_C], G_C, 0);
  g_end(th, 1); /* waits: B's first begin */
}

/* A thread that holds a place and stops beginning transactions (idle,
 * still registered) keeps it only until its slice is over: the waiter at
 * the head of the queue reclaims it then, and the thread that lost it
 * queues at its next begin. No bound: a place that could not be
 * reclaimed would leave the waiter asleep for ever. */
TEST(an_idle_holder_loses_its_place_to_a_waiter_after_its_slice) {
  g_setup("admit-slice", 1000000ull); /* 1 ms slices, no bound */
  pthread_t th[G_N];
  g_start(&th[G_A], G_A, 1);
  await_returned(G_A, 1); /* A holds the place, and idles */
  g_start(&th[G_B], G_B, 1);
  await_returned(G_B, 1); /* B waited, and reclaimed A's place */
  uint64_t w, t, r;
  sstm__admit_gate_counts(&w, &t, &r);
  CHECK_EQ_U(w, 1);
  CHECK_EQ_U(r, 1);
  /* A begins again: its place is gone, it queues behind B, which idles in
   * turn and loses its place to A the same way */
  atomic_store_explicit(&g.go[G_A], 2, memory_order_seq_cst);
  await_returned(G_A, 2);
  g_start(&th[G_C], G_C, 0);
  g_end_counted(th, 2, 0); /* waits: B's first begin, A's second; no bound */
  sstm__admit_gate_counts(&w, &t, &r);
  CHECK_EQ_U(w, 2);
  CHECK_EQ_U(t, 0);
  CHECK_EQ_U(r, 2);
}

/* A descriptor detached with a place (an executor pauses a context, or
 * its request ends) gives the place back at once: a thread that begins
 * next is admitted without waiting. The slice never ends and there is no
 * bound, so a place kept by the detached descriptor would leave it asleep
 * for ever. */
static sstm_desc_t *detached_desc;
static void *detach_holder(void *arg) {
  (void)arg;
  CHECK_OK(sstm_desc_attach(detached_desc));
  CHECK_OK(sstm_run(NULL, g_body, (void *)(intptr_t)G_C)); /* admitted: the place */
  CHECK_TRUE(sstm_desc_detach() == detached_desc);
  return NULL;
}

TEST(a_detached_holder_gives_its_place_back_at_once) {
  g_setup("admit-slice", UINT64_MAX);
  CHECK_OK(sstm_desc_create(&detached_desc));
  pthread_t th[G_N], x;
  CHECK_EQ_I(pthread_create(&x, NULL, detach_holder, NULL), 0);
  CHECK_EQ_I(pthread_join(x, NULL), 0);
  g_start(&th[G_A], G_A, 3);
  await_returned(G_A, 3); /* admitted at once */
  uint64_t w, t, r;
  sstm__admit_gate_counts(&w, &t, &r);
  CHECK_EQ_U(w, 0);
  /* and the detached descriptor, attached again, queues like any thread:
   * A leaves (its place goes back), then it runs */
  atomic_store_explicit(&g.leave[G_A], 1, memory_order_seq_cst);
  CHECK_EQ_I(pthread_join(th[G_A], NULL), 0);
  CHECK_EQ_I(pthread_create(&x, NULL, detach_holder, NULL), 0);
  CHECK_EQ_I(pthread_join(x, NULL), 0);
  CHECK_EQ_U(tx_load_u64(&gword[G_C]), 2);
  CHECK_OK(sstm_desc_destroy(detached_desc));
  sstm__admit_gate_counts(&w, &t, &r);
  CHECK_EQ_U(w, 0);
  CHECK_EQ_U(t, 0);
  CHECK_EQ_U(r, 0);
  sstm_test_fini();
}

/* The executor (src/exec) attaches a context's descriptor to a worker to
 * run it and detaches it at every pause (a preemption by a request of
 * higher priority) and at the end of every request. Places are held only
 * by attached descriptors, so with as many places as workers nobody ever
 * waits: counted, not timed. A place kept by a detached context would
 * leave the next context on its worker asleep for ever (no bound, a slice
 * that never ends): the watchdog fails the test. */
static uint64_t xacc[16];
static void x_body(void *arg) {
  unsigned a = (unsigned)(uintptr_t)arg % 16, b = (a + 7) % 16;
  for (int k = 0; k < 2000; k++) { /* long enough to be preempted now and then */
    uint64_t va = sstm_load_u64(&xacc[a]), vb = sstm_load_u64(&xacc[b]);
    sstm_store_u64(&xacc[a], va - 1);
    sstm_store_u64(&xacc[b], vb + 1);
  }
}

TEST(the_executors_contexts_never_wait_with_a_place_per_worker) {
  g_setup("admit-slice", UINT64_MAX);
  sstm__admit_pin(true, 2, 0, UINT64_MAX); /* a place per worker */
  memset(xacc, 0, sizeof xacc);
  sstm_exec_config_t c = sstm_test_exec_config(2, 64, 4, SSTM_EXEC_PREEMPT_SIGNAL);
  c.tick_us = 200;
  sstm_exec_t *ex;
  CHECK_OK(sstm_exec_create(&c, &ex));
  enum { RING = 48 };
  static sstm_exec_future_t fs[RING];
  static bool used[RING];
  memset(used, 0, sizeof used);
  unsigned n = (unsigned)sstm_test_scaled(4000, 400);
  for (unsigned i = 0; i < n; i++) {
    unsigned slot = i % RING;
    if (used[slot]) CHECK_OK(sstm_exec_wait(&fs[slot]));
    sstm_exec_req_t q = {
        .fn = x_body, .arg = (void *)(uintptr_t)i, .priority = i % 4, .future = &fs[slot]};
    CHECK_OK(sstm_exec_submit(ex, &q));
    used[slot] = true;
  }
  for (unsigned i = 0; i < RING; i++)
    if (used[i]) CHECK_OK(sstm_exec_wait(&fs[i]));
  char d[1024];
  sstm_exec_describe(ex, d, sizeof d);
  printf("%u requests; %s\n", n, d);
  CHECK_OK(sstm_exec_destroy(ex));
  int64_t sum = 0;
  for (int i = 0; i < 16; i++)
    sum += (int64_t)tx_load_u64(&xacc[i]);
  CHECK_EQ_I((int)sum, 0);
  uint64_t w, t, r;
  sstm__admit_gate_counts(&w, &t, &r);
  CHECK_EQ_U(w, 0);
  CHECK_EQ_U(t, 0);
  CHECK_EQ_U(r, 0);
  sstm_test_fini();
}

/* The bound is on the gate's progress: a holder that keeps its place and
 * runs no transaction (blocked in the application) gives nothing back, so
 * a waiter runs anyway once nothing has been given back for the bound. It
 * must: with the bound lifted, as in the tests above, it would sleep for
 * ever and the watchdog would fail the test. How long it waited is not
 * checked (no timing in tests), only that it returned, timed out once,
 * and left the holder's place alone. */
TEST(a_holder_that_gives_nothing_back_costs_a_waiter_the_bound) {
  g_setup_bounded("admit-slice", UINT64_MAX, 20000000ull);
  pthread_t th[G_N];
  g_start(&th[G_A], G_A, 1);
  await_returned(G_A, 1); /* A holds the place, and idles */
  g_start(&th[G_B], G_B, 1);
  await_returned(G_B, 1); /* B waited at its first begin, then ran anyway */
  g_start(&th[G_C], G_C, 0);
  /* B still holds its ticket (not admitted): C would queue behind it; A,
   * still admitted, runs on without waiting */
  atomic_store_explicit(&g.go[G_A], 20, memory_order_seq_cst);
  await_returned(G_A, 20);
  g_end_counted(th, 1, 1);
}

SSTM_TEST_MAIN()
