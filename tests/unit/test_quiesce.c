/* SPDX-License-Identifier: MIT */
/* Unit tests: sstm_quiesce(), the privatization barrier. Its errors, and
 * what it waits for, driven deterministically: a waiter thread calls it
 * while attempts are held running, and must stay blocked until each of
 * them has ended, however it ends (commit, read-only commit, cancel, kill
 * and rollback), but not for attempts that began after the call. The
 * attempts are held suspended on detached descriptors, or, for a
 * committing one, in its commit-time locking (CTL) by a policy that
 * answers only when told. The race the barrier closes is exercised by
 * tests/integration/privatize.c.
 *
 * "Blocked" is observed, not assumed from elapsed time: a waiter held by a
 * suspended attempt is seen asleep in the futex system call, then seen to
 * go back to sleep after being woken twice (its sleeps are sliced, and the
 * test wakes it too: spurious wake-ups), so it has looked at the attempts
 * again and found one still running; a waiter held by a committing attempt
 * sleeps likewise (membarrier) or spins and yields, and this binary
 * interposes sched_yield() to count the
 * waiter's calls (the shared library's calls bind to it). Once the
 * attempts have ended the waiter is just joined: a hang is the watchdog's.
 */
#define _GNU_SOURCE
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../common/txhelp.h"

/* in stripes of their own: holders of one never conflict with the other's */
static uint64_t x __attribute__((aligned(64))), y __attribute__((aligned(64)));
static int nmisuse;
static void record_misuse(const char *msg) {
  (void)msg;
  nmisuse++;
}

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

/* ---- errors ---------------------------------------------------------------- */

static void quiesce_in_body(void *arg) {
  int *rc = arg;
  *rc = sstm_quiesce();
  sstm_store_u64(&y, 2);
}

static void *unregistered_quiesce(void *arg) {
  CHECK_NULL(sstm_self());
  *(int *)arg = sstm_quiesce();
  return NULL;
}

TEST(errors) {
  CHECK_RC(sstm_quiesce(), SSTM_ESTATE); /* before sstm_init */
  CHECK_CONTAINS(sstm_last_error(), "not initialised");
  sstm_test_init();
  bool debug = txh_debug_build();
  sstm_set_misuse_handler(record_misuse);
  CHECK_OK(sstm_quiesce()); /* nothing runs: returns at once */

  /* inside a transaction: it would wait for itself */
  nmisuse = 0;
  SSTM_ATOMIC_BEGIN(NULL)
    sstm_store_u64(&x, 1);
    CHECK_RC(sstm_quiesce(), SSTM_EBUSY);
    CHECK_CONTAINS(sstm_last_error(), "inside a transaction");
    CHECK_TRUE(sstm_in_tx()); /* the transaction goes on */
  SSTM_ATOMIC_END();
  CHECK_EQ_I(nmisuse, debug ? 1 : 0);
  CHECK_EQ_U(x, 1);
  int rc = 12345;
  CHECK_OK(sstm_run(NULL, quiesce_in_body, &rc));
  CHECK_RC(rc, SSTM_EBUSY);
  CHECK_EQ_U(y, 2);
  sstm_attr_t irrev = {.irrevocable = true};
  rc = 12345;
  CHECK_OK(sstm_run(&irrev, quiesce_in_body, &rc));
  CHECK_RC(rc, SSTM_EBUSY);
  CHECK_EQ_I(nmisuse, debug ? 3 : 0);
  CHECK_OK(sstm_quiesce()); /* and works again outside */

  /* an unregistered thread needs no descriptor */
  pthread_t th;
  rc = 12345;
  CHECK_EQ_I(pthread_create(&th, NULL, unregistered_quiesce, &rc), 0);
  CHECK_EQ_I(pthread_join(th, NULL), 0);
  CHECK_OK(rc);
  sstm_test_fini();
  CHECK_RC(sstm_quiesce(), SSTM_ESTATE); /* after sstm_shutdown */
}

/* ---- a waiter held by suspended attempts --------------------------------------- */

/* The waiter thread: calls sstm_quiesce and reports. */
static struct {
  bool registered;
  _Atomic int tid;
  _Atomic int returned;
  _Atomic long yields; /* its sched_yield calls inside sstm_quiesce */
  int rc;
  uint64_t seen_x; /* plain load of x after the barrier */
  bool read_x;
} qw;

static __thread bool in_quiesce; /* the calling thread is the waiter, in sstm_quiesce */

/* Replaces the C library's sched_yield for this executable (the library's
 * calls bind to it): counts the waiter's calls inside sstm_quiesce, which
 * yields only while it spins on a committing attempt. */
int sched_yield(void) {
  if (in_quiesce) atomic_fetch_add_explicit(&qw.yields, 1, memory_order_seq_cst);
  return (int)syscall(SYS_sched_yield);
}

static void *waiter(void *arg) {
  (void)arg;
  if (qw.registered) CHECK_OK(sstm_thread_init());
  /* this thread's malloc arena exists before it is watched: from then on
   * its only futex is the sleep on an attempt's status word */
  free(malloc(64));
  atomic_store_explicit(&qw.tid, (int)syscall(SYS_gettid), memory_order_seq_cst);
  in_quiesce = true;
  qw.rc = sstm_quiesce();
  in_quiesce = false;
  if (qw.read_x) qw.seen_x = x; /* plain: the barrier ordered the write-back before this */
  /* release: rc and seen_x are visible to whoever sees returned */
  atomic_store_explicit(&qw.returned, 1, memory_order_release);
  if (qw.registered) CHECK_OK(sstm_thread_exit());
  return NULL;
}

static void check_not_returned(const char *what) {
  CHECK_MSG(!atomic_load_explicit(&qw.returned, memory_order_acquire),
            "sstm_quiesce returned while %s", what);
}

/* Wait until thread tid is asleep in the futex. The waiter's only futex is
 * the sleep on an attempt's status word, entered after it has recorded the
 * running attempts. */
static void await_in_futex(int tid, const char *what) {
  while (!sstm_test_in_futex(tid)) {
    check_not_returned(what);
    sched_yield();
  }
}

/* The voluntary context switches of thread tid: one per sleep (a futex
 * wait that found the word changed, or was woken before it slept, makes
 * none; yields count as involuntary). */
static long voluntary_switches(int tid) {
  char path[64], line[128];
  snprintf(path, sizeof path, "/proc/self/task/%d/status", tid);
  FILE *f = fopen(path, "r");
  CHECK_NOT_NULL(f);
  long n = -1;
  while (n < 0 && fgets(line, sizeof line, f))
    if (strncmp(line, "voluntary_ctxt_switches:", 24) == 0) n = strtol(line + 24, NULL, 10);
  fclose(f);
  CHECK_GE_I(n, 0);
  return n;
}

/* Wake thread tid if it is in a futex wait: a spurious wake-up of the
 * word it sleeps on (its address and operation, from /proc). */
static void wake_if_in_futex(int tid) {
  char path[64], buf[256];
  snprintf(path, sizeof path, "/proc/self/task/%d/syscall", tid);
  FILE *f = fopen(path, "r");
  CHECK_NOT_NULL(f);
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  long nr;
  unsigned long addr, op;
  if (sscanf(buf, "%ld %lx %lx", &nr, &addr, &op) != 3 || nr != SYS_futex) return;
  int cmd = (int)op & FUTEX_CMD_MASK;
  if (cmd != FUTEX_WAIT && cmd != FUTEX_WAIT_BITSET) return;
  (void)syscall(SYS_futex, (void *)addr, FUTEX_WAKE | ((int)op & FUTEX_PRIVATE_FLAG), INT_MAX, NULL,
                NULL, 0);
}

/* The waiter (asleep in the futex) is woken, by its 1 ms slices and by
 * this test, and must go back to sleep without returning. Two new sleeps
 * are awaited: the first may have been entered on a status read before
 * this call (before the event the caller checks, such as a kill); the
 * second was entered after a fresh look at the attempts, taken once the
 * first sleep had begun, so after this call. */
static void await_back_asleep(int tid, const char *what) {
  long target = voluntary_switches(tid) + 2;
  while (voluntary_switches(tid) < target || !sstm_test_in_futex(tid)) {
    check_not_returned(what);
    wake_if_in_futex(tid);
    sched_yield();
  }
  check_not_returned(what);
}

/* Start the waiter; returns once it runs (its tid is known). */
static pthread_t start_waiter(bool registered, bool read_x) {
  memset(&qw, 0, sizeof qw);
  qw.registered = registered;
  qw.read_x = read_x;
  qw.rc = 12345;
  pthread_t th;
  CHECK_EQ_I(pthread_create(&th, NULL, waiter, NULL), 0);
  while (atomic_load_explicit(&qw.tid, memory_order_seq_cst) == 0)
    sched_yield();
  return th;
}

/* Start the waiter while suspended attempts run, and check that it is
 * blocked: asleep in the futex, and asleep again after being woken. */
static pthread_t start_blocked_waiter(bool registered, bool read_x) {
  pthread_t th = start_waiter(registered, read_x);
  const char *what = "an attempt it must wait for is suspended";
  await_in_futex(atomic_load_explicit(&qw.tid, memory_order_seq_cst), what);
  await_back_asleep(atomic_load_explicit(&qw.tid, memory_order_seq_cst), what);
  return th;
}

/* The waiter must return now: join it (a hang is the watchdog's). */
static void expect_waiter_returns(pthread_t th) {
  CHECK_EQ_I(pthread_join(th, NULL), 0);
  CHECK_TRUE(atomic_load_explicit(&qw.returned, memory_order_acquire));
  CHECK_OK(qw.rc);
}

/* ---- holders: threads whose transactions stay suspended ----------------------- */

/* How a held transaction ends once resumed. */
enum end_kind { END_COMMIT, END_COMMIT_RO, END_CANCEL, END_KILL };

/* A holder thread runs ntx transactions on its descriptor. Each one, at its
 * first run, writes (or reads) *addr, detaches the descriptor (the attempt
 * stays running with no thread: suspended), publishes its txid, and waits
 * until main resumes it; then it re-attaches and ends as `how` says. */
struct holder {
  pthread_t th;
  enum end_kind how;
  int ntx;
  uint64_t *addr;
  uint64_t val;
  sstm_desc_t *desc;
  _Atomic uint64_t txid; /* of the suspended attempt */
  _Atomic int suspended; /* transactions suspended so far */
  _Atomic int resumed;   /* transactions main has resumed */
  int runs;              /* body runs of the current transaction */
  int rc[4];             /* sstm_run results */
};

static void held_body(void *arg) {
  struct holder *h = arg;
  if (h->how == END_COMMIT_RO)
    (void)sstm_load_u64(h->addr);
  else
    sstm_store_u64(h->addr, h->val);
  if (h->runs++ > 0) return; /* a restart (after a kill) just commits */
  int k = atomic_load_explicit(&h->suspended, memory_order_seq_cst) + 1;
  atomic_store_explicit(&h->txid, sstm_txid(), memory_order_seq_cst);
  CHECK_EQ_PTR(sstm_desc_detach(), h->desc);
  atomic_store_explicit(&h->suspended, k, memory_order_release);
  while (atomic_load_explicit(&h->resumed, memory_order_acquire) < k)
    sleep_ms(1);
  CHECK_OK(sstm_desc_attach(h->desc));
  if (h->how == END_CANCEL) sstm_cancel();
}

static void *holder_main(void *arg) {
  struct holder *h = arg;
  CHECK_OK(sstm_thread_init());
  h->desc = sstm_self();
  sstm_attr_t ro = {.read_only = true};
  for (int i = 0; i < h->ntx; i++) {
    h->runs = 0;
    h->rc[i] = sstm_run(h->how == END_COMMIT_RO ? &ro : NULL, held_body, h);
  }
  CHECK_OK(sstm_thread_exit());
  return NULL;
}

/* Start a holder and wait until its first transaction is suspended. */
static void holder_start(struct holder *h, enum end_kind how, int ntx, uint64_t *addr,
                         uint64_t val) {
  memset(h, 0, sizeof *h);
  h->how = how;
  h->ntx = ntx;
  h->addr = addr;
  h->val = val;
  CHECK_EQ_I(pthread_create(&h->th, NULL, holder_main, h), 0);
  while (atomic_load_explicit(&h->suspended, memory_order_acquire) < 1)
    sleep_ms(1);
}

/* Resume the k-th transaction; with `next`, wait until the (k+1)-th one is
 * suspended. */
static void holder_resume(struct holder *h, int k, bool next) {
  atomic_store_explicit(&h->resumed, k, memory_order_release);
  while (next && atomic_load_explicit(&h->suspended, memory_order_acquire) < k + 1)
    sleep_ms(1);
}

static void suspended_attempt(enum end_kind how, bool registered_waiter) {
  sstm_test_init();
  x = 0;
  struct holder *h = calloc(1, sizeof *h);
  CHECK_NOT_NULL(h);
  holder_start(h, how, 1, &x, 7);
  pthread_t th = start_blocked_waiter(registered_waiter, how == END_COMMIT);
  if (how == END_KILL) {
    /* killed but not rolled back: still running. The kill changes the
     * status word the waiter sleeps on: it must look again and go back to
     * sleep. */
    CHECK_OK(sstm_desc_kill(h->desc, atomic_load_explicit(&h->txid, memory_order_seq_cst)));
    await_back_asleep(atomic_load_explicit(&qw.tid, memory_order_seq_cst),
                      "a killed attempt is suspended (not rolled back)");
  }
  holder_resume(h, 1, false);
  CHECK_EQ_I(pthread_join(h->th, NULL), 0);
  expect_waiter_returns(th);
  CHECK_RC(h->rc[0], how == END_CANCEL ? SSTM_ECANCELED : SSTM_OK);
  CHECK_EQ_I(h->runs, how == END_KILL ? 2 : 1);
  if (how == END_COMMIT) CHECK_EQ_U(qw.seen_x, 7); /* the write-back happened before the return */
  CHECK_EQ_U(x, how == END_CANCEL || how == END_COMMIT_RO ? 0 : 7);
  free(h);
  sstm_test_fini();
}

TEST(waits_for_suspended_commit) { suspended_attempt(END_COMMIT, false); }
TEST(waits_for_suspended_commit_registered_waiter) { suspended_attempt(END_COMMIT, true); }
TEST(waits_for_suspended_read_only) { suspended_attempt(END_COMMIT_RO, false); }
TEST(waits_for_suspended_cancel) { suspended_attempt(END_CANCEL, true); }
TEST(waits_for_suspended_killed_until_rolled_back) { suspended_attempt(END_KILL, false); }

/* An attempt that ended and was followed by a new one of the same
 * descriptor counts as ended, and an attempt of another descriptor that
 * began after the call is not waited for: the waiter returns while both of
 * those stay suspended. */
TEST(later_attempts_not_waited_for) {
  sstm_test_init();
  struct holder *e = calloc(1, sizeof *e), *f = calloc(1, sizeof *f);
  CHECK_NOT_NULL(e);
  CHECK_NOT_NULL(f);
  holder_start(e, END_COMMIT, 2, &x, 1); /* T1 suspended */
  pthread_t th = start_blocked_waiter(false, false);
  holder_start(f, END_COMMIT, 1, &y, 3); /* T3 begins after the call */
  uint64_t t1 = atomic_load_explicit(&e->txid, memory_order_seq_cst);
  holder_resume(e, 1, true); /* T1 commits, T2 suspended */
  CHECK_GT_U(atomic_load_explicit(&e->txid, memory_order_seq_cst), t1);
  expect_waiter_returns(th);
  CHECK_EQ_I(atomic_load_explicit(&e->suspended, memory_order_seq_cst), 2); /* T2 still suspended */
  CHECK_EQ_I(atomic_load_explicit(&f->resumed, memory_order_seq_cst), 0);   /* T3 still suspended */
  holder_resume(e, 2, false);
  holder_resume(f, 1, false);
  CHECK_EQ_I(pthread_join(e->th, NULL), 0);
  CHECK_EQ_I(pthread_join(f->th, NULL), 0);
  CHECK_OK(e->rc[0]);
  CHECK_OK(e->rc[1]);
  CHECK_OK(f->rc[0]);
  CHECK_EQ_U(x, 1);
  CHECK_EQ_U(y, 3);
  free(e);
  free(f);
  sstm_test_fini();
}

/* ---- a commit held in write-back position ---------------------------------- */

/* A committing attempt is waited for too. Commit-time locking gives a way to
 * hold one: C's commit (status COMMITTING) meets a lock held by an
 * irrevocable transaction H and asks the policy, which this test's policy
 * answers only when told to. The waiter must stay blocked after H has ended,
 * until C has written back. It sleeps in the futex while it waits for H.
 * While it waits for C (committing: its end is imminent, as far as the
 * barrier knows) it sleeps in the futex too, woken by the end of C's commit
 * ((4.8) in docs/design/core.md), where the library has the asymmetric
 * fence (membarrier); without it (cfg.no_membarrier) it spins and yields,
 * and it yields for nothing else. Both are run. */
static struct { _Atomic int c_began, h_has_x, h_may_end, c_held, c_may_go; } hc;

static sstm_cm_action_t hold_on_conflict(sstm_cm_ctx_t *ctx, const sstm_conflict_t *c,
                                         uint64_t *wait_ns) {
  (void)ctx;
  (void)wait_ns;
  if (c->kind != SSTM_CONFLICT_COMMIT_LOCKED) return SSTM_CM_ABORT_SELF;
  CHECK_TRUE(c->other.committing); /* the irrevocable owner */
  atomic_store_explicit(&hc.c_held, 1, memory_order_seq_cst);
  while (!atomic_load_explicit(&hc.c_may_go, memory_order_seq_cst))
    sleep_ms(1);
  return SSTM_CM_WAIT; /* H has ended: the lock is free on the retry */
}

static const sstm_cm_ops_t hold_policy = {
    .name = "test-hold-commit",
    .description = "holds a commit that meets a lock until told (tests)",
    .on_conflict = hold_on_conflict,
};

static void c_body(void *arg) {
  (void)arg;
  sstm_store_u64(&x, 7); /* buffered (CTL): no lock until commit */
  atomic_store_explicit(&hc.c_began, 1, memory_order_seq_cst);
  while (!atomic_load_explicit(&hc.h_has_x, memory_order_seq_cst))
    sleep_ms(1);
}

static void *c_thread(void *arg) {
  (void)arg;
  CHECK_OK(sstm_thread_init());
  CHECK_OK(sstm_run(NULL, c_body, NULL));
  CHECK_OK(sstm_thread_exit());
  return NULL;
}

static void h_body(void *arg) {
  (void)arg;
  CHECK_TRUE(sstm_is_irrevocable());
  sstm_store_u64(&x, 5); /* in place, under x's lock */
  atomic_store_explicit(&hc.h_has_x, 1, memory_order_seq_cst);
  while (!atomic_load_explicit(&hc.h_may_end, memory_order_seq_cst))
    sleep_ms(1);
}

static void *h_thread(void *arg) {
  (void)arg;
  CHECK_OK(sstm_thread_init());
  sstm_attr_t irrev = {.irrevocable = true};
  CHECK_OK(sstm_run(&irrev, h_body, NULL));
  CHECK_OK(sstm_thread_exit());
  return NULL;
}

/* Does the library run with the asymmetric fence (sstm_describe says)? */
static bool has_membarrier(void) {
  char buf[2048];
  CHECK_GT_I(sstm_describe(buf, sizeof buf), 0);
  return strstr(buf, "begin-fence=membarrier") != NULL;
}

static void committing_write_back(bool no_membarrier) { /* a commit that meets a lock */
  int rc = sstm_cm_register(&hold_policy);
  CHECK_TRUE(rc == 0 || rc == SSTM_EBUSY); /* registered once per process */
  sstm_config_t cfg;
  sstm_test_config(&cfg);
  cfg.cm = hold_policy.name;
  cfg.no_membarrier = no_membarrier;
  CHECK_OK(sstm_init(&cfg));
  bool sleeps = has_membarrier(); /* on C too, or spinning and yielding */
  CHECK_TRUE(!sleeps || !no_membarrier);
  CHECK_OK(sstm_thread_init());
  x = 0;
  memset(&hc, 0, sizeof hc);
  pthread_t c, h;
  CHECK_EQ_I(pthread_create(&c, NULL, c_thread, NULL), 0);
  /* C is running before H takes the irrevocability token (an attempt that
   * began later would wait for H at its begin) */
  while (!atomic_load_explicit(&hc.c_began, memory_order_seq_cst))
    sleep_ms(1);
  CHECK_EQ_I(pthread_create(&h, NULL, h_thread, NULL), 0);
  while (!atomic_load_explicit(&hc.c_held, memory_order_seq_cst))
    sleep_ms(1);
  /* C is COMMITTING, H IRREVOCABLE. The waiter is inside sstm_quiesce,
   * held by one of them: asleep in the futex (H) or yielding (C). */
  pthread_t th = start_waiter(false, true);
  int tid = atomic_load_explicit(&qw.tid, memory_order_seq_cst);
  while (atomic_load_explicit(&qw.yields, memory_order_seq_cst) == 0 && !sstm_test_in_futex(tid)) {
    check_not_returned("an attempt is committing and an irrevocable one runs");
    sched_yield();
  }
  atomic_store_explicit(&hc.h_may_end, 1, memory_order_seq_cst);
  CHECK_EQ_I(pthread_join(h, NULL), 0);
  /* H has ended: the waiter must be waiting for C now, and stay: asleep in
   * the futex and asleep again after being woken (the membarrier fence), or
   * spinning and yielding */
  if (sleeps) {
    await_back_asleep(tid, "an attempt is committing");
  } else {
    long y0 = atomic_load_explicit(&qw.yields, memory_order_seq_cst);
    while (atomic_load_explicit(&qw.yields, memory_order_seq_cst) <= y0) {
      check_not_returned("an attempt is committing");
      sched_yield();
    }
  }
  check_not_returned("an attempt is committing");
  atomic_store_explicit(&hc.c_may_go, 1, memory_order_seq_cst);
  CHECK_EQ_I(pthread_join(c, NULL), 0);
  expect_waiter_returns(th);
  CHECK_EQ_U(qw.seen_x, 7); /* C's write-back, after H's 5 */
  sstm_test_fini();
}

TEST_CTL(waits_for_committing_write_back) { committing_write_back(false); }

TEST_CTL(waits_for_committing_write_back_spinning) { committing_write_back(true); }

/* The barrier skips the caller's own idle descriptor, and a quiesce with
 * other threads running short transactions returns (each of their attempts
 * ends). */
static _Atomic int stop_workers;
static void bump(void *arg) {
  (void)arg;
  sstm_store_u64(&x, sstm_load_u64(&x) + 1);
}
static void worker(sstm_tt_t *t) {
  if (t->idx == 0) {
    while (tx_load_u64(&x) < 100) /* the others are running */
      sched_yield();
    for (int i = 0; i < 200; i++)
      CHECK_OK(sstm_quiesce());
    atomic_store_explicit(&stop_workers, 1, memory_order_seq_cst);
    return;
  }
  while (!atomic_load_explicit(&stop_workers, memory_order_seq_cst))
    CHECK_OK(sstm_run(NULL, bump, NULL));
}

TEST(returns_under_load) {
  sstm_test_init();
  x = 0;
  atomic_store_explicit(&stop_workers, 0, memory_order_seq_cst);
  sstm_test_run_threads(4, true, worker, NULL);
  CHECK_GE_U(x, 100);
  sstm_test_fini();
}

SSTM_TEST_MAIN()
