/* SPDX-License-Identifier: MIT */
/* Privatization safety of the gcc -fgnu-tm ABI (docs/design/itm.md (I8),
 * cfg.itm_privatization): compiled with -fgnu-tm and linked with
 * libschedstm-itm, as test_itm.c.
 *
 * The race is made deterministic, not waited for. A reader's transaction
 * reads the list head (the node is linked), then is held in flight by a
 * transaction_pure call; the main thread unlinks the node in a
 * transaction of its own (the privatizing commit) and then writes the node
 * with plain stores, as code written for libitm may. The reader is let go
 * either when the main thread has made its plain write, or when the ABI
 * starts waiting for the grace period: this binary interposes
 * sstm_quiesce(), which the ABI calls for it (the library's calls bind to
 * the program's definition), to see that moment. So with the setting the
 * privatizing commit waits for the held reader, which reads the node's
 * value from before the privatization; without it the plain write comes
 * first and the reader, whose snapshot holds the node's unchanged lock
 * word, reads it: what the program has to prevent with sstm_quiesce()
 * when it turns the setting off. The counted calls also show which commits
 * wait: outermost commits that wrote, not read-only or nested ones. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "../common/runner.h"

void _ITM_addUserCommitAction(void (*fn)(void *), uint64_t tid, void *arg);
uint64_t _ITM_getTransactionId(void);

#define V(x) (*(volatile __typeof__(x) *)&(x))

/* ---- the interposed grace period -------------------------------------------- */

static _Atomic unsigned quiesce_calls;

/* The library's sstm_quiesce, counted. relaxed: the count is read by the
 * thread that made the calls, or by the held reader only to be let go
 * (what it then reads is ordered by the engine, not by this count). */
/* Called after the library's sstm_quiesce returns, when a test sets it. */
static void (*_Atomic after_quiesce)(void);

int sstm_quiesce(void) {
  static int (*real)(void);
  if (real == NULL) real = (int (*)(void))dlsym(RTLD_NEXT, "sstm_quiesce");
  CHECK_NOT_NULL((void *)real);
  atomic_fetch_add_explicit(&quiesce_calls, 1, memory_order_relaxed);
  int rc = real();
  void (*after)(void) = atomic_load_explicit(&after_quiesce, memory_order_relaxed);
  if (after != NULL) after();
  return rc;
}

static void init_with(bool priv) {
  sstm_config_t cfg;
  sstm_test_config(&cfg);
  cfg.itm_privatization = priv;
  CHECK_OK(sstm_init(&cfg));
  CHECK_OK(sstm_thread_init());
}

/* ---- a node privatized while a reader is in flight ---------------------------- */

typedef struct node {
  long data;
} node_t;

/* In stripes of their own: the reader's read of the node is not made
 * stale by the unlink itself. */
static node_t the_node __attribute__((aligned(64))) = {7};
static node_t *head __attribute__((aligned(64))) = &the_node;

static _Atomic int reader_in;       /* the reader read the head and is held */
static _Atomic int private_written; /* the main thread wrote the node plainly */
static long reader_saw, reader_linked;

/* Called inside the reader's transaction: say so, and wait until the node
 * was written privately or the privatizing commit waits for a grace
 * period. Pure: no barrier, and it does not make the transaction serial. */
__attribute__((transaction_pure)) static void hold_in_flight(void) {
  /* release/acquire: the main thread's unlink follows this store. */
  atomic_store_explicit(&reader_in, 1, memory_order_release);
  while (!atomic_load_explicit(&private_written, memory_order_acquire) &&
         atomic_load_explicit(&quiesce_calls, memory_order_relaxed) == 0)
    sched_yield();
}

static void *reader(void *arg) {
  (void)arg;
  long saw = 0, linked = 0;
  __transaction_atomic {
    node_t *n = head;
    linked = n != NULL;
    saw = 0;
    if (n != NULL) {
      hold_in_flight();
      saw = n->data;
    }
  }
  reader_saw = saw;
  reader_linked = linked;
  return NULL;
}

/* The private write, done plainly (not a barrier: outside any
 * transaction). */
__attribute__((transaction_pure)) static void write_privately(void *arg) {
  (void)arg;
  V(the_node.data) = -1;
  atomic_store_explicit(&private_written, 1, memory_order_release);
}

__attribute__((transaction_pure)) static void add_private_write_action(void) {
  _ITM_addUserCommitAction(write_privately, _ITM_getTransactionId(), NULL);
}

/* Run the scenario: the node unlinked, then written privately, after the
 * block or in its commit action. Returns what the reader read. */
static long privatize_under_a_reader(bool in_commit_action) {
  pthread_t th;
  CHECK_EQ_I(pthread_create(&th, NULL, reader, NULL), 0);
  while (!atomic_load_explicit(&reader_in, memory_order_acquire))
    sched_yield();
  __transaction_atomic {
    head = NULL;
    if (in_commit_action) add_private_write_action();
  }
  if (!in_commit_action) write_privately(NULL);
  CHECK_EQ_I(pthread_join(th, NULL), 0);
  CHECK_EQ_I(reader_linked, 1); /* the reader read the head before the unlink */
  return reader_saw;
}

TEST(a_privatizing_commit_waits_for_the_reader_in_flight) {
  init_with(true);
  CHECK_EQ_I(privatize_under_a_reader(false), 7); /* the value from before */
  CHECK_EQ_I(V(the_node.data), -1);
  CHECK_EQ_U(atomic_load_explicit(&quiesce_calls, memory_order_relaxed),
             1); /* the privatizing commit's */
  sstm_test_fini();
}

/* libitm runs the commit actions once privatization safety holds: an
 * action that writes the privatized data plainly is not seen either. */
TEST(commit_actions_run_after_the_grace_period) {
  init_with(true);
  CHECK_EQ_I(privatize_under_a_reader(true), 7);
  CHECK_EQ_I(V(the_node.data), -1);
  CHECK_EQ_U(atomic_load_explicit(&quiesce_calls, memory_order_relaxed),
             1); /* before the action, not again after it */
  sstm_test_fini();
}

/* The setting off: the commit does not wait, and the reader sees the
 * private write (why the program then calls sstm_quiesce() itself). */
TEST(without_the_setting_the_reader_sees_the_private_write) {
  init_with(false);
  CHECK_EQ_I(privatize_under_a_reader(false), -1);
  CHECK_EQ_U(atomic_load_explicit(&quiesce_calls, memory_order_relaxed), 0);
  sstm_test_fini();
}

/* ---- which commits wait ---------------------------------------------------- */

static long cell __attribute__((aligned(64)));
static long other __attribute__((aligned(64)));

static unsigned calls_of(void (*fn)(void)) {
  unsigned before = atomic_load_explicit(&quiesce_calls, memory_order_relaxed);
  fn();
  return atomic_load_explicit(&quiesce_calls, memory_order_relaxed) - before;
}

static void read_only(void) {
  long v;
  __transaction_atomic { v = cell; }
  V(other) = v;
}
static void update(void) {
  __transaction_atomic { cell += 1; }
}
/* A nested block that may cancel itself: GCC emits a nested begin and
 * commit for it (test_itm.c). */
static void nested_update(void) {
  __transaction_atomic {
    cell += 1;
    __transaction_atomic {
      other += 1;
      if (other < 0) __transaction_cancel;
    }
  }
}
static void nested_read_only(void) {
  long v = 0;
  __transaction_atomic {
    v = cell;
    __transaction_atomic {
      v += other;
      if (v < 0) __transaction_cancel;
    }
  }
  V(other) = V(other) + (v < 0);
}
/* A write to memory the transaction alone can reach (its own frame,
 * written in place, I6) is no write to shared memory. */
__attribute__((noinline)) static long local_sum(long v) {
  long buf[4];
  for (int i = 0; i < 4; i++)
    buf[i] = v + i;
  return buf[0] + buf[3];
}
static void private_only(void) {
  long v;
  __transaction_atomic { v = local_sum(cell); }
  V(other) = V(other) + (v == -1);
}

TEST(only_outermost_commits_that_wrote_wait) {
  init_with(true);
  CHECK_EQ_U(calls_of(read_only), 0);
  CHECK_EQ_U(calls_of(update), 1);
  CHECK_EQ_U(calls_of(nested_update), 1); /* the outermost commit's, none for the nested one */
  CHECK_EQ_U(calls_of(nested_read_only), 0);
  CHECK_EQ_U(calls_of(private_only), 0);
  CHECK_EQ_I(V(cell), 2);
  sstm_test_fini();
}

TEST(without_the_setting_no_commit_waits) {
  init_with(false);
  CHECK_EQ_U(calls_of(read_only), 0);
  CHECK_EQ_U(calls_of(update), 0);
  CHECK_EQ_U(calls_of(nested_update), 0);
  CHECK_EQ_I(V(cell), 2);
  sstm_test_fini();
}

/* ---- serial commits (I8.4) ----------------------------------------------------- */

/* Not transaction_safe: a block that calls it runs serial (I3). */
__attribute__((noinline)) void serial_touch(void) { V(other) = V(other) + 1; }
static void serial_update(void) {
  __transaction_relaxed {
    serial_touch();
    cell += 1;
  }
}

/* The serial transaction's begin waits for a grace period (I3.2); its
 * commit, which wrote, does not wait for another. */
TEST(a_serial_commit_does_not_wait) {
  init_with(true);
  CHECK_EQ_U(calls_of(serial_update), 1); /* the begin's */
  CHECK_EQ_U(calls_of(update), 1);        /* a revocable update still waits */
  CHECK_EQ_I(V(cell), 2);
  CHECK_EQ_I(V(other), 1);
  sstm_test_fini();
}

/* The node unlinked by a serial block while the reader is held in flight:
 * the reader is let go when the serial begin starts its wait (the
 * interposed sstm_quiesce), which then waits for it, so it reads the value
 * from before, and the plain write after the block, with no grace period
 * of the commit's, comes after its end. Without the begin's wait the
 * plain write would let it go and it would read -1. */
__attribute__((noinline)) void serial_unlink(void) { V(head) = NULL; }
TEST(a_serial_privatizing_commit_keeps_the_reader_out) {
  init_with(true);
  pthread_t th;
  CHECK_EQ_I(pthread_create(&th, NULL, reader, NULL), 0);
  while (!atomic_load_explicit(&reader_in, memory_order_acquire))
    sched_yield();
  __transaction_relaxed { serial_unlink(); }
  write_privately(NULL);
  CHECK_EQ_I(pthread_join(th, NULL), 0);
  CHECK_EQ_I(reader_linked, 1);
  CHECK_EQ_I(reader_saw, 7);
  CHECK_EQ_I(V(the_node.data), -1);
  CHECK_EQ_U(atomic_load_explicit(&quiesce_calls, memory_order_relaxed), 1); /* the begin's */
  sstm_test_fini();
}

/* ---- a restart while a serial transaction waits (I3.1) ----------------------- */

/* An attempt that restarts after a serial transaction has raised its flag
 * leaves at once (the back-out of sstm__itm_resumed) and waits for the
 * serial one to end: the serial transaction's wait (its sstm_quiesce)
 * covered the attempt that restarted, not the new one, which would
 * otherwise run beside the serial block's plain accesses. The same
 * interposed sstm_quiesce shows the moment the serial transaction waits:
 * the held attempt restarts then (sstm_restart from a pure function). The
 * serial transaction, once its wait is over and before its own begin
 * (which would hold a new attempt back at the engine's begin), waits in
 * the interposer until the new attempt has either left (its cancel is
 * counted) or run into its body (it must not); the body then waits until
 * the serial block's body is running or over, and records it if it was
 * running. Kills the mutant without the restart's back-out: its new
 * attempt sees the serial body running, or, when the serial transaction's
 * wait began after the restart and so waits for the new attempt, the two
 * wait for each other until the watchdog. */
static long sw __attribute__((aligned(64)));
static _Atomic int sr_held, sr_retry_in_body, sr_in_body, sr_body_over, sr_checked, sr_overlap;
static sstm_desc_t *_Atomic sr_desc;
static int sr_attempts;
static unsigned sr_quiesce_before;

__attribute__((transaction_pure)) static void sr_step(void) {
  if (++sr_attempts == 1) {
    atomic_store_explicit(&sr_desc, sstm_self(), memory_order_relaxed);
    atomic_store_explicit(&sr_held, 1, memory_order_release);
    while (atomic_load_explicit(&quiesce_calls, memory_order_relaxed) == sr_quiesce_before)
      sched_yield();
    sstm_restart(); /* the serial transaction waits for this attempt now */
  }
  atomic_store_explicit(&sr_retry_in_body, 1, memory_order_release);
  while (!atomic_load_explicit(&sr_in_body, memory_order_acquire) &&
         !atomic_load_explicit(&sr_body_over, memory_order_acquire))
    sched_yield();
  /* sticky: a later attempt (this one may still be rolled back) must not
   * clear what this one saw */
  if (atomic_load_explicit(&sr_in_body, memory_order_acquire))
    atomic_store_explicit(&sr_overlap, 1, memory_order_relaxed);
  atomic_store_explicit(&sr_checked, 1, memory_order_release);
}

static void *sr_restarter(void *arg) {
  (void)arg;
  __transaction_atomic {
    long v = sw;
    sr_step();
    sw = v + 1;
  }
  return NULL;
}

static uint64_t sr_cancels(void) {
  sstm_stats_t st;
  CHECK_OK(sstm_stats_get(atomic_load_explicit(&sr_desc, memory_order_relaxed), &st));
  return st.aborts[SSTM_ABORT_USER_CANCEL];
}

/* After the serial transaction's wait: the restarted attempt has left or
 * is in its body. */
static void sr_after_quiesce(void) {
  while (sr_cancels() == 0 && !atomic_load_explicit(&sr_retry_in_body, memory_order_acquire))
    sched_yield();
}

/* Not transaction_safe: the block that calls it runs serial. */
__attribute__((noinline)) void sr_serial_body(void) {
  atomic_store_explicit(&sr_in_body, 1, memory_order_release);
  while (!atomic_load_explicit(&sr_checked, memory_order_acquire) && sr_cancels() == 0)
    sched_yield();
  atomic_store_explicit(&sr_in_body, 0, memory_order_release);
  atomic_store_explicit(&sr_body_over, 1, memory_order_release);
  sw += 10;
}

TEST(an_attempt_restarted_while_a_serial_transaction_waits_leaves_until_it_ends) {
  init_with(false); /* the serial transaction's wait is the only sstm_quiesce */
  sr_quiesce_before = atomic_load_explicit(&quiesce_calls, memory_order_relaxed);
  pthread_t th;
  CHECK_EQ_I(pthread_create(&th, NULL, sr_restarter, NULL), 0);
  while (!atomic_load_explicit(&sr_held, memory_order_acquire))
    sched_yield();
  atomic_store_explicit(&after_quiesce, sr_after_quiesce, memory_order_relaxed);
  __transaction_relaxed { sr_serial_body(); }
  atomic_store_explicit(&after_quiesce, NULL, memory_order_relaxed);
  CHECK_EQ_I(pthread_join(th, NULL), 0);
  CHECK_EQ_I(atomic_load_explicit(&sr_overlap, memory_order_relaxed), 0);
  CHECK_GE_I(sr_attempts, 2);
  CHECK_EQ_I(V(sw), 11);
  sstm_test_fini();
}

/* ---- the ABI's own initialisation ------------------------------------------ */

/* A program that does not initialise the library: its first transaction
 * does (I1), from the environment. With privatization safety the begins
 * fence (no_membarrier), so that a grace period's heavy fence is a plain
 * fence rather than a membarrier system call, unless the environment
 * says otherwise. The design as the other cases' (SSTM_TEST_DESIGN). */
static void first_transaction_from(const char *priv, const char *nomb, sstm_config_t *got) {
  unsetenv("SCHEDSTM_ITM_PRIVATIZATION");
  unsetenv("SCHEDSTM_NO_MEMBARRIER");
  if (priv) setenv("SCHEDSTM_ITM_PRIVATIZATION", priv, 1);
  if (nomb) setenv("SCHEDSTM_NO_MEMBARRIER", nomb, 1);
  setenv("SCHEDSTM_DESIGN", sstm_design_name(sstm_test_design()), 1);
  CHECK_FALSE(sstm_initialized());
  update();
  CHECK_TRUE(sstm_initialized());
  CHECK_OK(sstm_config_get(got));
}

TEST(the_abi_initialises_with_fencing_begins_when_commits_wait) {
  sstm_config_t got;
  first_transaction_from(NULL, NULL, &got);
  CHECK_TRUE(got.itm_privatization);
  CHECK_TRUE(got.no_membarrier);
  CHECK_EQ_U(atomic_load_explicit(&quiesce_calls, memory_order_relaxed), 1);
  char d[1024];
  CHECK_GT_I(sstm_describe(d, sizeof d), 0);
  CHECK_CONTAINS(d, "begin-fence=fence");
}
TEST(the_abi_keeps_membarrier_begins_when_told) {
  sstm_config_t got;
  first_transaction_from("1", "0", &got);
  CHECK_TRUE(got.itm_privatization);
  CHECK_FALSE(got.no_membarrier);
  CHECK_EQ_U(atomic_load_explicit(&quiesce_calls, memory_order_relaxed), 1);
}
TEST(the_abi_keeps_membarrier_begins_without_the_setting) {
  sstm_config_t got;
  first_transaction_from("0", NULL, &got);
  CHECK_FALSE(got.itm_privatization);
  CHECK_FALSE(got.no_membarrier);
  CHECK_EQ_U(atomic_load_explicit(&quiesce_calls, memory_order_relaxed), 0);
}

SSTM_TEST_MAIN()
