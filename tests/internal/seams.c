/* SPDX-License-Identifier: MIT */
/* Internal tests through the engine's test seams (debug builds only; see
 * sstm__seam in src/core/engine.h, registered by tests/internal/CMakeLists
 * when SCHEDSTM_DEBUG is on).
 *
 * The read barrier's seqlock read (argument 1 of docs/design/core.md) loads the
 * lock word, then the data, then the lock word again. A commit between the
 * first load and the data load is caught only by the re-check. Threaded
 * tests hit that window by chance, and in the library's slow read path
 * practically never (tests/README.md, the mutation check). Here another
 * descriptor commits inside the window, on the same thread, from the seam:
 * the interleaving is exact. A barrier without its re-check then hands the
 * transaction a value newer than its snapshot, which these tests see inside
 * the transaction (an opacity violation), before any commit-time validation
 * could hide it by aborting. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>

#include "core/engine.h"
#include "iface/exec_services.h"

#include "../common/txhelp.h"

/* Three words in three different stripes (x[0] and x[1] share one), and a
 * 16-byte pair in one. */
static uint64_t w[64] __attribute__((aligned(4096)));
#define X (&w[0])
#define Y (&w[16])
#define Z (&w[32])
#define PAIR (&w[48])

static void init_16_byte_stripes(void) {
  sstm_config_t c;
  sstm_test_config(&c);
  c.stripe_shift = 4;
  CHECK_OK(sstm_init(&c));
  CHECK_OK(sstm_thread_init());
  CHECK_NE_PTR(sstm__lock_for(sstm_self(), X), sstm__lock_for(sstm_self(), Y));
  CHECK_NE_PTR(sstm__lock_for(sstm_self(), X), sstm__lock_for(sstm_self(), Z));
  CHECK_NE_PTR(sstm__lock_for(sstm_self(), Y), sstm__lock_for(sstm_self(), Z));
  CHECK_EQ_PTR(sstm__lock_for(sstm_self(), PAIR), sstm__lock_for(sstm_self(), PAIR + 1));
  CHECK_NE_PTR(sstm__lock_for(sstm_self(), PAIR), sstm__lock_for(sstm_self(), Z));
}

static uint64_t version_of(const void *addr) {
  return sstm_lw_version(
      atomic_load_explicit(sstm__lock_for(sstm_self(), addr), memory_order_acquire));
}

/* What the seam does, and what it saw. */
static struct {
  sstm_seam_t where;
  const void *addr;
  void (*commit)(void *); /* run on the second descriptor, once */
  bool kill;              /* kill this attempt first (its locks become stealable) */
  bool any_version;       /* fire at the first call, whatever the version */
  bool armed;
  int calls, fired;
} seam;

static void seam_fn(sstm_seam_t where, const void *addr) {
  if (!seam.armed || where != seam.where || addr != seam.addr) return;
  seam.calls++;
  uint64_t l = atomic_load_explicit(sstm__lock_for(sstm_self(), addr), memory_order_acquire);
  if (where == SSTM_SEAM_OWN_READ_DATA) {
    /* The stripe is this attempt's own (the caller checked as much). */
    CHECK_EQ_X(l, sstm_self()->owner_lw);
  } else if (!seam.any_version && (sstm_lw_locked(l) || sstm_lw_version(l) > sstm_self()->end)) {
    /* Only where the barrier is about to accept the word: unlocked, and a
     * version this snapshot covers (the fast path's own condition). */
    return;
  }
  seam.armed = false;
  seam.fired++;
  if (!seam.kill) {
    CHECK_OK(run_other(NULL, seam.commit, NULL));
    return;
  }
  /* Kill this attempt from the second descriptor, then commit there: its
   * writes take the killed attempt's locks over (argument 6). */
  sstm_desc_t *victim = sstm_desc_detach();
  uint64_t txid = sstm_desc_txid(victim);
  CHECK_OK(sstm_desc_attach(txh_other_desc()));
  CHECK_OK(sstm_desc_kill(victim, txid));
  CHECK_OK(sstm_run(NULL, seam.commit, NULL));
  CHECK_EQ_PTR(sstm_desc_detach(), txh_other_desc());
  CHECK_OK(sstm_desc_attach(victim));
}

static void arm(sstm_seam_t where, const void *addr, void (*commit)(void *)) {
  seam.where = where;
  seam.addr = addr;
  seam.commit = commit;
  seam.kill = where == SSTM_SEAM_OWN_READ_DATA;
  seam.any_version = false;
  seam.armed = true;
  atomic_store_explicit(&sstm__test_seam, seam_fn, memory_order_relaxed);
}

static void disarm(void) {
  atomic_store_explicit(&sstm__test_seam, NULL, memory_order_relaxed);
  seam.armed = false;
}

static void skip_unless_debug(void) {
  if (!txh_debug_build()) sstm_test_skip("the seams exist in SCHEDSTM_DEBUG builds only");
}

static void store_x_zero(void *arg) {
  (void)arg;
  sstm_store_u64(X, 0); /* same value, new version */
}
static void store_xy_one(void *arg) {
  (void)arg;
  sstm_store_u64(X, 1);
  sstm_store_u64(Y, 1);
}
static void store_z_pair_one(void *arg) {
  (void)arg;
  sstm_store_u64(Z, 1);
  sstm_store_u64(PAIR, 1);
  sstm_store_u64(PAIR + 1, 1);
}

/* What the transaction under test saw. */
static struct {
  int attempts, torn, early_returns;
  uint64_t x, y;
} seen;

/* Reads y, then x, whose version is newer than the snapshot (another
 * descriptor committed x after this attempt began): the fast path refuses
 * it, the slow path extends the snapshot (y is unchanged, so it may) and
 * loads x again. The seam commits x = y = 1 just before that data load. */
static void read_y_then_x(void *arg) {
  (void)arg;
  int a = ++seen.attempts;
  uint64_t y = sstm_load_u64(Y);
  if (a == 1) {
    CHECK_OK(run_other(NULL, store_x_zero, NULL));
    CHECK_GT_U(version_of(X), sstm_self()->end); /* x now needs the slow path */
    arm(SSTM_SEAM_SLOW_READ_DATA, X, store_xy_one);
  }
  uint64_t x = sstm_load_u64(X);
  if (a == 1) seen.early_returns++; /* the first attempt's load must not return */
  if (x != y) seen.torn++;
  seen.x = x, seen.y = y;
}

static uint64_t aborts_for(sstm_abort_reason_t r) {
  sstm_stats_t st;
  CHECK_OK(sstm_stats_get(sstm_self(), &st));
  return st.aborts[r];
}

/* The outcome every window test expects: the seam fired once, the first
 * attempt aborted inside the barrier (for reason r; `before` is the count
 * of r before the run) without ever returning a value from beyond its
 * snapshot, and the one retry read the committed x = y = 1. */
static void check_one_retry(sstm_abort_reason_t r, uint64_t before) {
  CHECK_EQ_I(seam.fired, 1);
  CHECK_EQ_I(seen.torn, 0);
  CHECK_EQ_I(seen.early_returns, 0);
  CHECK_EQ_I(seen.attempts, 2);
  CHECK_EQ_U(seen.x, 1);
  CHECK_EQ_U(seen.y, 1);
  CHECK_EQ_U(aborts_for(r) - before, 1);
}

/* load_slow's re-check (argument 1): after the commit in the window the
 * lock word differs, so the barrier reads again, finds a version past the
 * snapshot, cannot extend (y changed) and aborts. Without the re-check it
 * would return x = 1 to an attempt that read y = 0. */
TEST(slow_read_rechecks_the_lock_after_a_commit_in_its_window) {
  init_16_byte_stripes();
  skip_unless_debug();
  uint64_t before = aborts_for(SSTM_ABORT_VALIDATE_READ);
  CHECK_OK(sstm_run(NULL, read_y_then_x, NULL));
  disarm();
  CHECK_GE_I(seam.calls, 2); /* once before the extension, once after */
  check_one_retry(SSTM_ABORT_VALIDATE_READ, before);
  txh_cleanup();
  sstm_test_fini();
}

/* Reads z, then the 16-byte pair in one bulk read: one seqlock read of the
 * pair's stripe (load_stripe). The seam commits z = pair = 1 after the lock
 * word was read and before the data loads. */
static void read_z_then_pair(void *arg) {
  (void)arg;
  int a = ++seen.attempts;
  uint64_t z = sstm_load_u64(Z);
  if (a == 1) arm(SSTM_SEAM_STRIPE_READ_DATA, PAIR, store_z_pair_one);
  uint64_t p[2];
  sstm_load_bytes(p, PAIR, sizeof p);
  if (a == 1) seen.early_returns++;
  if (p[0] != z || p[1] != z) seen.torn++;
  seen.x = p[0], seen.y = p[1];
}

/* load_stripe's re-check: the changed lock word sends the stripe through
 * the per-word barriers, which find a version past the snapshot and abort:
 * an update attempt because it cannot extend (z changed), a declared
 * read-only one because it keeps no read set to extend with. Without the
 * re-check the bulk read would return the new pair to an attempt that read
 * z = 0. */
static void bulk_read_case(const sstm_attr_t *attr, sstm_abort_reason_t expect) {
  init_16_byte_stripes();
  skip_unless_debug();
  uint64_t before = aborts_for(expect);
  CHECK_OK(sstm_run(attr, read_z_then_pair, NULL));
  disarm();
  check_one_retry(expect, before);
  txh_cleanup();
  sstm_test_fini();
}

/* Commit-time locking reads a stripe in bulk only in declared read-only
 * attempts (below); encounter-time locking in update attempts too. */
TEST_ETL(bulk_read_rechecks_the_lock_after_a_commit_in_its_window) {
  bulk_read_case(NULL, SSTM_ABORT_VALIDATE_READ);
}

TEST(read_only_bulk_read_rechecks_the_lock_after_a_commit_in_its_window) {
  sstm_attr_t ro = {.read_only = true};
  bulk_read_case(&ro, SSTM_ABORT_RO_EXTEND);
}

/* A stripe this attempt has locked, read at a word it has not written:
 * load_own loads it from memory and re-checks that the lock is still its
 * own. The seam kills the attempt and commits x[1] = y = 1 from the second
 * descriptor, whose write takes the killed attempt's lock over (argument
 * 6). The re-check sees the lock gone and aborts; without it the attempt
 * would go on with x[1] = 1 next to the y = 0 it read. Encounter-time
 * locking only: under commit-time locking an attempt holds no lock before
 * its commit. */
static void store_x1_y_one(void *arg) {
  (void)arg;
  sstm_store_u64(X + 1, 1);
  sstm_store_u64(Y, 1);
}

static void write_x0_read_x1(void *arg) {
  (void)arg;
  int a = ++seen.attempts;
  uint64_t y = sstm_load_u64(Y);
  sstm_store_u64(X, 5); /* locks the stripe of x[0] and x[1] */
  if (a == 1) arm(SSTM_SEAM_OWN_READ_DATA, X + 1, store_x1_y_one);
  uint64_t x1 = sstm_load_u64(X + 1);
  if (a == 1) seen.early_returns++;
  if (x1 != y) seen.torn++;
  seen.x = x1, seen.y = y;
}

TEST_ETL(own_stripe_read_rechecks_the_lock_after_a_take_over_in_its_window) {
  init_16_byte_stripes();
  skip_unless_debug();
  CHECK_EQ_PTR(sstm__lock_for(sstm_self(), X), sstm__lock_for(sstm_self(), X + 1));
  uint64_t before = aborts_for(SSTM_ABORT_KILLED);
  CHECK_OK(sstm_run(NULL, write_x0_read_x1, NULL));
  disarm();
  check_one_retry(SSTM_ABORT_KILLED, before);
  /* the second descriptor took the lock over rather than waiting */
  sstm_stats_t other;
  CHECK_OK(sstm_stats_get(txh_other_desc(), &other));
  CHECK_EQ_U(other.locks_stolen, 1);
  CHECK_EQ_U(w[0], 5);
  CHECK_EQ_U(w[1], 1);
  txh_cleanup();
  sstm_test_fini();
}

/* Argument 6: a killed attempt whose lock was taken over must not extend
 * past the steal. The extension reads the clock past the thief's timestamp
 * and then checks the attempt's own status, which the kill set before. The
 * attempt has written x = 5 (ETL: x's stripe locked, the value buffered)
 * and reads z, whose version is newer than its snapshot. In the slow path,
 * before the extension, the seam kills it and a second descriptor commits
 * x = 7 over its lock. Were the extension to skip the status check, the
 * attempt would go on with a snapshot in which its own x is 7: a read of x
 * no longer finds its lock, so the buffered 5 is lost to it. */
static void store_x_seven(void *arg) {
  (void)arg;
  sstm_store_u64(X, 7);
}

static void bump_z(void *arg) {
  (void)arg;
  sstm_store_u64(Z, sstm_load_u64(Z) + 1);
}

static void write_x_read_newer_z(void *arg) {
  (void)arg;
  int a = ++seen.attempts;
  sstm_store_u64(X, 5);
  if (a == 1) {
    CHECK_OK(run_other(NULL, bump_z, NULL)); /* z now needs an extension */
    arm(SSTM_SEAM_SLOW_READ_DATA, Z, store_x_seven);
    seam.kill = true;
    seam.any_version = true;
  }
  (void)sstm_load_u64(Z);
  if (a == 1) seen.early_returns++; /* killed before its extension */
  if (sstm_load_u64(X) != 5) seen.torn++;
}

TEST_ETL(killed_attempt_does_not_extend_past_the_take_over) {
  init_16_byte_stripes();
  skip_unless_debug();
  sstm_stats_t before, after;
  CHECK_OK(sstm_stats_get(sstm_self(), &before));
  CHECK_OK(sstm_run(NULL, write_x_read_newer_z, NULL));
  disarm();
  CHECK_OK(sstm_stats_get(sstm_self(), &after));
  CHECK_EQ_I(seam.fired, 1);
  CHECK_EQ_I(seen.early_returns, 0);
  CHECK_EQ_I(seen.torn, 0);
  CHECK_EQ_I(seen.attempts, 2);
  CHECK_EQ_U(after.aborts[SSTM_ABORT_KILLED] - before.aborts[SSTM_ABORT_KILLED], 1);
  CHECK_EQ_U(after.extensions, before.extensions); /* the retry starts after both commits */
  CHECK_EQ_U(w[0], 5);
  txh_cleanup();
  sstm_test_fini();
}

/* Mutation round 7: m07: irrev_undo releasing the locks with their old version
 * (release_locks_abort's rule) instead of a fresh one.
 *
 * The ABA of irrev_undo's comment, exactly: this thread's attempt loads
 * X's lock word (unlocked, old version), then (seam 1) a thread whose
 * transaction a policy escalated locks X and writes 1 in place; the data
 * load sees 1; then (seam 2) that transaction cancels, which puts 0 back
 * and releases the lock. With the old version the re-check passes and the
 * barrier returns 1, a value no commit ever wrote. The reader goes through
 * load_slow because its read set is exactly full (the fast path refuses
 * then, whatever the version). */

static uint64_t ab_w[64] __attribute__((aligned(4096)));
#define AB_X (&ab_w[0])
#define AB_Y (&ab_w[16])

/* began and step are a handshake between the two threads, in seq_cst: each
 * side waits for the other's store before its next step (release/acquire
 * would do; the test keeps the strongest order). */
static struct {
  _Atomic int began; /* the reader's attempt runs: the writer may begin */
  _Atomic int step;  /* 1 store now, 2 stored, 3 cancel now, 4 cancelled */
  pthread_t reader;
  bool armed;
  int fired;
  int attempts;
  uint64_t x;
} ab;

static void ab_seam(sstm_seam_t where, const void *addr) {
  if (!pthread_equal(pthread_self(), ab.reader) || !ab.armed || addr != AB_X) return;
  if (where == SSTM_SEAM_SLOW_READ_DATA &&
      atomic_load_explicit(&ab.step, memory_order_seq_cst) == 0) {
    uint64_t l = atomic_load_explicit(sstm__lock_for(sstm_self(), addr), memory_order_acquire);
    if (sstm_lw_locked(l)) return;
    atomic_store_explicit(&ab.step, 1, memory_order_seq_cst);
    while (atomic_load_explicit(&ab.step, memory_order_seq_cst) != 2)
      sched_yield();
  } else if (where == SSTM_SEAM_SLOW_READ_RECHECK &&
             atomic_load_explicit(&ab.step, memory_order_seq_cst) == 2) {
    ab.fired++;
    atomic_store_explicit(&ab.step, 3, memory_order_seq_cst);
    while (atomic_load_explicit(&ab.step, memory_order_seq_cst) != 4)
      sched_yield();
    ab.armed = false;
  }
}

static void ab_writer_body(void *arg) {
  (void)arg;
  if (!sstm_is_irrevocable()) sstm_restart(); /* the policy escalates the retry */
  while (atomic_load_explicit(&ab.step, memory_order_seq_cst) != 1)
    sched_yield();
  sstm_store_u64(AB_X, 1); /* in place, under X's lock */
  atomic_store_explicit(&ab.step, 2, memory_order_seq_cst);
  while (atomic_load_explicit(&ab.step, memory_order_seq_cst) != 3)
    sched_yield();
  sstm_cancel(); /* undo: X = 0 again, the lock released */
}

static void *ab_writer(void *arg) {
  (void)arg;
  CHECK_OK(sstm_thread_init());
  while (!atomic_load_explicit(
      &ab.began, memory_order_seq_cst)) /* else the reader would wait at begin behind us */
    sched_yield();
  CHECK_RC(sstm_run(NULL, ab_writer_body, NULL), SSTM_ECANCELED);
  CHECK_OK(sstm_thread_exit());
  atomic_store_explicit(&ab.step, 4, memory_order_seq_cst);
  return NULL;
}

static void ab_reader_body(void *arg) {
  (void)arg;
  ab.attempts++;
  atomic_store_explicit(&ab.began, 1, memory_order_seq_cst);
  sstm_desc_t *d = sstm_self();
  while (d->rs.top != d->rs.lim) /* fill the read set: X's read takes load_slow */
    (void)sstm_load_u64(AB_Y);
  ab.x = sstm_load_u64(AB_X);
  CHECK_MSG(ab.x == 0, "read X = %llu: bytes an undone irrevocable attempt had written",
            (unsigned long long)ab.x);
}

static void ab_escalate(sstm_cm_ctx_t *ctx, const sstm_abort_info_t *info) {
  if (info->reason == SSTM_ABORT_USER_RETRY) sstm_cm_next_irrevocable(ctx);
}
static sstm_cm_action_t ab_wait(sstm_cm_ctx_t *ctx, const sstm_conflict_t *c, uint64_t *ns) {
  (void)ctx, (void)c;
  *ns = 1000;
  return SSTM_CM_WAIT;
}
static const sstm_cm_ops_t ab_policy = {
    .name = "test-escalate-restarts",
    .description = "a user restart's retry is irrevocable (tests)",
    .on_conflict = ab_wait,
    .on_abort = ab_escalate,
};

TEST(undo_of_an_escalated_write_in_the_read_window_is_not_accepted) {
  CHECK_OK(sstm_cm_register(&ab_policy));
  sstm_config_t c;
  sstm_test_config(&c);
  c.stripe_shift = 4;
  c.cm = "test-escalate-restarts";
  CHECK_OK(sstm_init(&c));
  CHECK_OK(sstm_thread_init());
  skip_unless_debug();
  CHECK_NE_PTR(sstm__lock_for(sstm_self(), AB_X), sstm__lock_for(sstm_self(), AB_Y));
  ab.reader = pthread_self();
  ab.armed = true;
  atomic_store_explicit(&sstm__test_seam, ab_seam, memory_order_relaxed);
  pthread_t w;
  CHECK_EQ_I(pthread_create(&w, NULL, ab_writer, NULL), 0);
  CHECK_OK(sstm_run(NULL, ab_reader_body, NULL));
  CHECK_EQ_I(pthread_join(w, NULL), 0);
  atomic_store_explicit(&sstm__test_seam, NULL, memory_order_relaxed);
  CHECK_EQ_I(ab.fired, 1); /* the window was hit */
  CHECK_EQ_I(ab.attempts, 1);
  CHECK_EQ_U(ab.x, 0);
  CHECK_EQ_U(*AB_X, 0);
  sstm_test_fini();
}

/* ---- reading past a running writer: the read window (argument 8) ---------- */

/* A reader (the main thread) passes the lock of an owner (a second thread)
 * that it saw ACTIVE: it loads the data, and after an acquire fence the
 * owner's status and the lock word again. Each case below stops the owner
 * at a seam inside that window, in a state where the data is no longer the
 * committed value the lock covered, and only one of the two re-checks can
 * refuse it. The reader first reads y, then x past the owner's lock;
 * without the re-check it returns the x of a version past its snapshot
 * next to the y it read before ("torn"). The reader's policy (suicide)
 * aborts it; its retry lets the owner finish and reads x = y. */
static uint64_t pw[64] __attribute__((aligned(4096)));
#define PW_X (&pw[0])
#define PW_Y (&pw[16])

static struct {
  /* 1 owner locked x, 2 owner may go on, 3 owner stopped at its seam,
   * 4 owner may leave the seam, 5 owner done */
  _Atomic int step;
  pthread_t reader, owner;
  sstm_seam_t owner_seam;  /* where the owner stops (step 3 until 4) */
  void (*in_window)(void); /* what the reader's seam does once the owner stopped */
  int attempts, owner_attempts, torn, fired;
  uint64_t x, y;
} pw_s;

static void pw_wait(int step) {
  while (atomic_load_explicit(&pw_s.step, memory_order_acquire) < step)
    sched_yield();
}
static void pw_set(int step) { atomic_store_explicit(&pw_s.step, step, memory_order_release); }

static void pw_seam(sstm_seam_t where, const void *addr) {
  if (where == SSTM_SEAM_PAST_READ_DATA && addr == PW_X &&
      pthread_equal(pthread_self(), pw_s.reader) && pw_s.attempts == 1) {
    pw_s.fired++;
    pw_set(2);
    pw_wait(3);
    if (pw_s.in_window) pw_s.in_window();
  } else if (where == pw_s.owner_seam && pthread_equal(pthread_self(), pw_s.owner) &&
             pw_s.owner_attempts == 1) {
    pw_set(3);
    pw_wait(4);
  }
}

static void *pw_owner(void *body) {
  CHECK_OK(sstm_thread_init());
  CHECK_OK(sstm_run(NULL, (void (*)(void *))body, NULL));
  pw_set(5);
  CHECK_OK(sstm_thread_exit());
  return NULL;
}

static void pw_reader_body(void *arg) {
  (void)arg;
  if (++pw_s.attempts > 1) {
    pw_set(4);
    pw_wait(5);
  }
  uint64_t y = sstm_load_u64(PW_Y);
  uint64_t x = sstm_load_u64(PW_X);
  if (x != y) pw_s.torn++;
  pw_s.x = x, pw_s.y = y;
}

/* Runs the case: the owner thread runs owner_body (which locks x and sets
 * step 1), the reader reads; checks what every case expects. */
static void pw_run(void (*owner_body)(void *)) {
  sstm_config_t c;
  sstm_test_config(&c);
  c.read_past = SSTM_READ_PAST_ALL;
  c.cm = "suicide";
  CHECK_OK(sstm_init(&c));
  CHECK_OK(sstm_thread_init());
  skip_unless_debug();
  CHECK_NE_PTR(sstm__lock_for(sstm_self(), PW_X), sstm__lock_for(sstm_self(), PW_Y));
  pw_s.reader = pthread_self();
  CHECK_EQ_I(pthread_create(&pw_s.owner, NULL, pw_owner, (void *)owner_body), 0);
  pw_wait(1);
  atomic_store_explicit(&sstm__test_seam, pw_seam, memory_order_seq_cst);
  CHECK_OK(sstm_run(NULL, pw_reader_body, NULL));
  if (atomic_load_explicit(&pw_s.step, memory_order_seq_cst) < 4)
    pw_set(4); /* a reader that never retried */
  CHECK_EQ_I(pthread_join(pw_s.owner, NULL), 0);
  atomic_store_explicit(&sstm__test_seam, NULL, memory_order_relaxed);
  CHECK_EQ_I(pw_s.fired, 1);
  CHECK_EQ_I(pw_s.torn, 0);
  CHECK_EQ_I(pw_s.attempts, 2);
  CHECK_EQ_U(pw_s.x, pw_s.y);
}

static uint64_t pw_aborts(sstm_abort_reason_t r, uint64_t *reads_past) {
  sstm_stats_t st;
  CHECK_OK(sstm_stats_get(sstm_self(), &st));
  *reads_past = st.reads_past;
  return st.aborts[r];
}

/* The owner commits: it stops after its write-back, its locks still held.
 * The lock word is unchanged and memory holds x = 5: only the status
 * re-check (COMMITTING) refuses the data. */
static void pw_committing_owner(void *arg) {
  (void)arg;
  pw_s.owner_attempts++;
  sstm_store_u64(PW_X, 5);
  sstm_store_u64(PW_Y, 5);
  pw_set(1);
  pw_wait(2);
}

TEST_ETL(a_read_past_a_writer_that_wrote_back_is_refused) {
  pw_s.owner_seam = SSTM_SEAM_COMMIT_WRITTEN_BACK;
  pw_run(pw_committing_owner);
  CHECK_EQ_U(pw_s.x, 5);
  uint64_t past;
  CHECK_EQ_U(pw_aborts(SSTM_ABORT_READ_LOCKED, &past), 1); /* then a committing owner */
  CHECK_EQ_U(past, 1);                                     /* y in the first attempt; x refused */
  sstm_test_fini();
}

/* The owner aborts itself (sstm_restart): rollback puts the old versions
 * back before the status leaves ACTIVE, and the owner stops there, while
 * a second descriptor of the reader's thread commits x = y = 1. The status
 * is the ACTIVE one the reader saw: only the lock-word re-check refuses
 * x = 1. */
static void pw_restarting_owner(void *arg) {
  (void)arg;
  if (++pw_s.owner_attempts > 1) return; /* the retry writes nothing */
  sstm_store_u64(PW_X, 7);
  pw_set(1);
  pw_wait(2);
  sstm_restart();
}

static void pw_commit_xy(void *arg) {
  (void)arg;
  sstm_store_u64(PW_X, 1);
  sstm_store_u64(PW_Y, 1);
}

static void pw_commit_xy_other(void) { CHECK_OK(run_other(NULL, pw_commit_xy, NULL)); }

TEST_ETL(a_read_past_an_owner_that_rolled_back_is_refused) {
  pw_s.owner_seam = SSTM_SEAM_ROLLBACK_LOCKS_RELEASED;
  pw_s.in_window = pw_commit_xy_other;
  pw_run(pw_restarting_owner);
  CHECK_EQ_I(pw_s.owner_attempts, 2);
  CHECK_EQ_U(pw_s.x, 1);
  uint64_t past;
  CHECK_EQ_U(pw_aborts(SSTM_ABORT_VALIDATE_READ, &past), 1);
  CHECK_EQ_U(past, 0); /* the one pass was refused */
  txh_cleanup();
  sstm_test_fini();
}

/* A kill that lands while the attempt is already rolling back from a
 * conflict (its locks released, its status still ACTIVE) took effect: the
 * killer's CAS succeeded, it counts a kill and may take a lock over. The
 * abort counts as killed, as a kill noticed before the abort does
 * (core.md (6.6)); it used to count under the conflict. */
static int rk_attempts, rk_kills;
static void rk_seam(sstm_seam_t where, const void *addr) {
  (void)addr;
  if (where != SSTM_SEAM_ROLLBACK_LOCKS_RELEASED || rk_kills > 0) return;
  rk_kills++;
  CHECK_OK(sstm_desc_kill(sstm_self(), 0)); /* its own thread: no killer recorded */
}
static void rk_commit(void *arg) {
  (void)arg;
  sstm_store_u64(X, sstm_load_u64(X) + 1);
  sstm_store_u64(Y, sstm_load_u64(Y) + 1);
}
static void rk_body(void *arg) {
  (void)arg;
  rk_attempts++;
  (void)sstm_load_u64(X);
  if (rk_attempts == 1) CHECK_OK(run_other(NULL, rk_commit, NULL));
  (void)sstm_load_u64(Y); /* newer: the extension finds X changed */
}

TEST(a_kill_during_the_rollback_of_a_conflict_counts_as_killed) {
  init_16_byte_stripes();
  atomic_store_explicit(&sstm__test_seam, rk_seam, memory_order_relaxed);
  CHECK_OK(sstm_run(NULL, rk_body, NULL));
  atomic_store_explicit(&sstm__test_seam, NULL, memory_order_relaxed);
  CHECK_EQ_I(rk_attempts, 2);
  CHECK_EQ_I(rk_kills, 1);
  sstm_stats_t s;
  CHECK_OK(sstm_stats_get(sstm_self(), &s));
  CHECK_EQ_U(s.aborts[SSTM_ABORT_KILLED], 1);
  CHECK_EQ_U(s.aborts[SSTM_ABORT_VALIDATE_READ], 0);
  CHECK_EQ_U(s.aborts_total, 1);
  txh_cleanup();
  sstm_test_fini();
}

/* Kill the calling thread's running attempt from the second descriptor
 * (attached for the kill, then detached again), as another thread would. */
static void kill_own_attempt_from_the_other(void) {
  sstm_desc_t *victim = sstm_desc_detach();
  uint64_t txid = sstm_desc_txid(victim);
  CHECK_OK(sstm_desc_attach(txh_other_desc()));
  CHECK_OK(sstm_desc_kill(victim, txid));
  CHECK_EQ_PTR(sstm_desc_detach(), txh_other_desc());
  CHECK_OK(sstm_desc_attach(victim));
}

/* A kill that lands while the victim's barrier looks at its variant byte
 * for another flag (here an executor's preemption request), after that
 * look's kill check, must not lose its own flag there: the victim then
 * sees the kill at its next barrier ((6.3), "Prompt notice"). The seam
 * kills the attempt from the second descriptor right after the check.
 * When the barrier cleared the flags after checking the kill, it cleared
 * the kill's flag too, and the next read ran the fast path as if nothing
 * had happened (until an extension or the commit found the status). */
static int fk_attempts, fk_fired, fk_past;
static void fk_seam(sstm_seam_t where, const void *addr) {
  (void)addr;
  if (where != SSTM_SEAM_FLAGS_CHECKED || fk_fired) return;
  fk_fired++;
  kill_own_attempt_from_the_other();
}
static void fk_body(void *arg) {
  (void)arg;
  if (++fk_attempts != 1) return;
  sstm__exec_request(sstm_self()); /* the next access looks at its flags */
  (void)sstm_load_u64(X);          /* the seam kills the attempt there */
  (void)sstm_load_u64(Y);          /* the kill's flag: restart */
  fk_past++;
}

TEST(a_kill_after_a_barriers_kill_check_is_seen_at_the_next_barrier) {
  init_16_byte_stripes();
  skip_unless_debug();
  fk_attempts = fk_fired = fk_past = 0;
  atomic_store_explicit(&sstm__test_seam, fk_seam, memory_order_relaxed);
  CHECK_OK(sstm_run(NULL, fk_body, NULL));
  atomic_store_explicit(&sstm__test_seam, NULL, memory_order_relaxed);
  CHECK_EQ_I(fk_fired, 1);
  CHECK_EQ_I(fk_past, 0);
  CHECK_EQ_I(fk_attempts, 2);
  sstm_stats_t s;
  CHECK_OK(sstm_stats_get(sstm_self(), &s));
  CHECK_EQ_U(s.aborts[SSTM_ABORT_KILLED], 1);
  CHECK_EQ_U(s.aborts_total, 1);
  /* noticed through the flag, after the record: the killer is named */
  CHECK_EQ_I(sstm_self()->last_abort.reason, SSTM_ABORT_KILLED);
  CHECK_TRUE(sstm_self()->last_abort.has_other);
  CHECK_EQ_PTR(sstm_self()->last_abort.other.desc, txh_other_desc());
  txh_cleanup();
  sstm_test_fini();
}

/* A kill that lands after a barrier's kill check, while the barrier
 * serves an executor's request: the hook is not called for the killed
 * attempt (exec.c, may_switch), and the request, which the barrier had
 * consumed, goes back into the variant byte for the restart point (9.6),
 * where the hook is called once the kill's flag has rolled the attempt
 * back at the next barrier. It was dropped there. */
static int kr_attempts, kr_fired, kr_calls, kr_where;
static void kr_hook(sstm_desc_t *self, sstm_exec_point_t where, sstm_desc_t *blocker) {
  (void)self, (void)blocker;
  kr_calls++;
  kr_where = (int)where;
}
static void kr_seam(sstm_seam_t where, const void *addr) {
  (void)addr;
  if (where != SSTM_SEAM_FLAGS_CHECKED || kr_fired) return;
  kr_fired++;
  kill_own_attempt_from_the_other();
}
static void kr_body(void *arg) {
  (void)arg;
  if (++kr_attempts != 1) return;
  sstm__exec_request(sstm_self());
  (void)sstm_load_u64(X); /* the seam kills the attempt after the check */
  CHECK_EQ_I(kr_calls, 0);
  (void)sstm_load_u64(Y); /* the kill's flag: restart */
  FAIL("a killed attempt went on past a barrier");
}

TEST(a_kill_after_a_barriers_check_keeps_the_request_for_the_restart) {
  init_16_byte_stripes();
  skip_unless_debug();
  kr_attempts = kr_fired = kr_calls = kr_where = 0;
  CHECK_OK(sstm__exec_set_hook(kr_hook));
  atomic_store_explicit(&sstm__test_seam, kr_seam, memory_order_relaxed);
  CHECK_OK(sstm_run(NULL, kr_body, NULL));
  atomic_store_explicit(&sstm__test_seam, NULL, memory_order_relaxed);
  CHECK_OK(sstm__exec_set_hook(NULL));
  CHECK_EQ_I(kr_fired, 1);
  CHECK_EQ_I(kr_attempts, 2);
  CHECK_EQ_I(kr_calls, 1);
  CHECK_EQ_I(kr_where, SSTM_EXEC_AT_RESTART);
  txh_cleanup();
  sstm_test_fini();
}

SSTM_TEST_MAIN()
