/* SPDX-License-Identifier: MIT */
/* Unit tests: reading past the lock of a running writer (cfg.read_past,
 * argument (8) of docs/design/core.md), with deterministic interleavings of two
 * real threads (cm_duo.h): a writer W that holds encounter-time locks and
 * waits inside its transaction, and the main thread, which reads.
 *
 *  - a read of a stripe W holds returns the committed value, without a
 *    conflict, and is counted in reads_past; with read_past off it is a
 *    read-locked conflict, as before;
 *  - a reader that passed W's lock serialises before W: once W has
 *    committed, the reader cannot also see W's other writes (it aborts);
 *  - the bound on the displaced version (lock_end) is honoured: a lock
 *    that displaced a version newer than the reader's snapshot is passed
 *    only after an extension (or, for a declared read-only attempt, not at
 *    all), so the reader never pairs that version with an older read;
 *  - validation accepts a stripe locked by W after the reader read it
 *    (W not committing, nothing committed in between), and refuses one
 *    whose lock displaced a version committed after the reader's read.
 * Each "torn" check is what a mutant of the barrier or of validation
 * produces. Encounter-time locking only: under commit-time locking a lock
 * holder is always committing.
 */
#define _GNU_SOURCE
#include "cm_duo.h"

static uint64_t words[4][512] __attribute__((aligned(4096)));
#define X (&words[0][0])
#define Y (&words[1][0])
#define Z (&words[2][0])

static void init_read_past_log(sstm_read_past_t mode, sstm_ro_log_t ro_log) {
  sstm_config_t c;
  sstm_test_config(&c);
  c.cm = "suicide";
  c.read_past = mode;
  c.ro_log = ro_log;
  CHECK_OK(sstm_init(&c));
  CHECK_OK(sstm_thread_init());
}

static void init_read_past(sstm_read_past_t mode) { init_read_past_log(mode, SSTM_RO_LOG_OFF); }

static sstm_stats_t my_stats(void) {
  sstm_stats_t s;
  CHECK_OK(sstm_stats_get(sstm_self(), &s));
  return s;
}

/* ---- the writer thread ---------------------------------------------------- */

/* W begins once the phase reaches `begin_at`, writes `val` to each of its
 * words (locking their stripes), sets the phase to `locked`, waits for
 * `commit_at`, commits, and sets the phase to `done`. */
static struct {
  uint64_t *w[2];
  uint64_t val;
  int begin_at, locked, commit_at, done;
  int attempts;
} W;

static void w_body(void *arg) {
  (void)arg;
  W.attempts++;
  for (int i = 0; i < 2 && W.w[i]; i++)
    sstm_store_u64(W.w[i], W.val);
  duo_set(W.locked);
  duo_wait(W.commit_at);
}

/* The writer thread: registers, waits for `begin_at`, runs `body` (a
 * transaction that locks and waits for `commit_at`), sets `done`. */
static void *w_thread(void *body) {
  CHECK_OK(sstm_thread_init());
  duo_wait(W.begin_at);
  CHECK_OK(sstm_run(NULL, (void (*)(void *))body, NULL));
  duo_set(W.done);
  CHECK_OK(sstm_thread_exit());
  return NULL;
}

static pthread_t start_writer(uint64_t *a, uint64_t *b, uint64_t val, int begin_at) {
  W.w[0] = a, W.w[1] = b, W.val = val;
  W.begin_at = begin_at;
  W.locked = begin_at + 1;
  W.commit_at = begin_at + 2;
  W.done = begin_at + 3;
  return duo_spawn(w_thread, (void *)w_body);
}

/* What the reader saw. */
static struct {
  int attempts, torn;
  uint64_t x, y;
} R;

static void finish(pthread_t w) {
  duo_join(w);
  CHECK_EQ_I(W.attempts, 1); /* readers never make the writer abort */
  txh_cleanup();
  sstm_test_fini();
}

/* ---- passing a running writer -------------------------------------------- */

static void read_x(void *arg) {
  (void)arg;
  R.attempts++;
  R.x = sstm_load_u64(X);
}

TEST_ETL(passes_a_running_writer) {
  init_read_past(SSTM_READ_PAST_ALL);
  pthread_t w = start_writer(X, NULL, 5, 0);
  duo_wait(W.locked);
  CHECK_OK(sstm_run(NULL, read_x, NULL));
  CHECK_EQ_I(R.attempts, 1);
  CHECK_EQ_U(R.x, 0); /* the committed value, not W's buffered 5 */
  sstm_stats_t s = my_stats();
  CHECK_EQ_U(s.reads_past, 1);
  CHECK_EQ_U(s.aborts_total, 0);
  /* a declared read-only attempt passes it too */
  sstm_attr_t ro = {.read_only = true};
  CHECK_OK(sstm_run(&ro, read_x, NULL));
  CHECK_EQ_I(R.attempts, 2);
  CHECK_EQ_U(R.x, 0);
  CHECK_EQ_U(my_stats().reads_past, 2);
  duo_set(W.commit_at);
  duo_wait(W.done);
  CHECK_EQ_U(tx_load_u64(X), 5);
  finish(w);
}

/* With read_past off the same read is a read-locked conflict: suicide
 * aborts the reader, whose retry lets W commit first. */
static bool write_z_first; /* the reader writes z before it reads x */
static void read_x_release_on_retry(void *arg) {
  (void)arg;
  if (++R.attempts > 1 && duo_phase() < W.commit_at) {
    duo_set(W.commit_at);
    duo_wait(W.done);
  }
  if (write_z_first) sstm_store_u64(Z, 1);
  R.x = sstm_load_u64(X);
}

/* W holds x locked: a transaction of `attr` that does not pass the lock
 * meets a read-locked conflict, then reads W's x = 5 in its second attempt;
 * the thread has read past `reads_past` locks in all. */
static void expect_read_locked_retry(const sstm_attr_t *attr, uint64_t reads_past) {
  R.attempts = 0;
  CHECK_OK(sstm_run(attr, read_x_release_on_retry, NULL));
  CHECK_EQ_I(R.attempts, 2);
  CHECK_EQ_U(R.x, 5);
  sstm_stats_t s = my_stats();
  CHECK_EQ_U(s.reads_past, reads_past);
  CHECK_EQ_U(s.aborts[SSTM_ABORT_READ_LOCKED], 1);
}

TEST_ETL(off_is_a_read_locked_conflict) {
  init_read_past(SSTM_READ_PAST_OFF);
  pthread_t w = start_writer(X, NULL, 5, 0);
  duo_wait(W.locked);
  expect_read_locked_retry(NULL, 0);
  finish(w);
}

/* The default, SSTM_READ_PAST_RO: a declared read-only attempt passes W's
 * lock; an update attempt meets a read-locked conflict, as with the path
 * off (an update attempt that passed locks would go on to take its own and
 * abort with them on a write conflict: docs/benchmarks.md). */
/* Under SSTM_READ_PAST_RO with `ro_log`: W locks x, and a declared
 * read-only transaction reads it, passing W's lock. Returns W. */
static pthread_t read_only_passes(sstm_ro_log_t ro_log) {
  init_read_past_log(SSTM_READ_PAST_RO, ro_log);
  pthread_t w = start_writer(X, NULL, 5, 0);
  duo_wait(W.locked);
  sstm_attr_t ro = {.read_only = true};
  CHECK_OK(sstm_run(&ro, read_x, NULL));
  CHECK_EQ_I(R.attempts, 1);
  CHECK_EQ_U(R.x, 0);
  sstm_stats_t s = my_stats();
  CHECK_EQ_U(s.reads_past, 1);
  CHECK_EQ_U(s.ro_logged, ro_log == SSTM_RO_LOG_ON ? 1 : 0);
  return w;
}

TEST_ETL(ro_mode_passes_for_read_only_attempts_only) {
  sstm_config_t c;
  sstm_config_default(&c);
  CHECK_EQ_I(c.read_past, SSTM_READ_PAST_RO);
  pthread_t w = read_only_passes(SSTM_RO_LOG_OFF);
  expect_read_locked_retry(NULL, 1);
  finish(w);
}

/* The same with read sets in read-only first attempts (cfg.ro_log): what
 * passes is the transaction's declaration, not the absence of a log. */
TEST_ETL(ro_mode_passes_for_read_only_attempts_with_a_read_set) {
  pthread_t w = read_only_passes(SSTM_RO_LOG_ON);
  duo_set(W.commit_at);
  duo_wait(W.done);
  finish(w);
}

/* A declared read-only transaction whose attempt has a read set and has
 * written holds locks: from then on it does not pass W's lock (a
 * read-locked conflict; suicide retries it after W commits). */
TEST_ETL(ro_mode_a_read_only_attempt_that_wrote_does_not_pass) {
  init_read_past_log(SSTM_READ_PAST_RO, SSTM_RO_LOG_ON);
  pthread_t w = start_writer(X, NULL, 5, 0);
  duo_wait(W.locked);
  sstm_attr_t ro = {.read_only = true};
  write_z_first = true;
  expect_read_locked_retry(&ro, 0);
  finish(w);
}

/* ---- the reader serialises before the writer ------------------------------ */

/* Reads x past W, lets W commit x = y = 5, then reads y: that is W's new
 * version, past the snapshot; the extension finds x's stripe changed, so
 * the attempt aborts instead of returning y = 5 next to x = 0. */
static void read_x_commit_w_read_y(void *arg) {
  (void)arg;
  int a = ++R.attempts;
  uint64_t x = sstm_load_u64(X);
  if (a == 1) {
    duo_set(W.commit_at);
    duo_wait(W.done);
  }
  uint64_t y = sstm_load_u64(Y);
  if (x != y) R.torn++;
  R.x = x, R.y = y;
}

static void serialises_before_writer(const sstm_attr_t *attr, sstm_abort_reason_t why) {
  init_read_past(SSTM_READ_PAST_ALL);
  pthread_t w = start_writer(X, Y, 5, 0);
  duo_wait(W.locked);
  CHECK_OK(sstm_run(attr, read_x_commit_w_read_y, NULL));
  CHECK_EQ_I(R.torn, 0);
  CHECK_EQ_I(R.attempts, 2);
  CHECK_EQ_U(R.x, 5);
  CHECK_EQ_U(R.y, 5);
  sstm_stats_t s = my_stats();
  CHECK_EQ_U(s.reads_past, 1);
  CHECK_EQ_U(s.aborts[why], 1);
  CHECK_EQ_U(s.aborts_total, 1);
  finish(w);
}

TEST_ETL(reader_serialises_before_the_writer) {
  serialises_before_writer(NULL, SSTM_ABORT_VALIDATE_READ);
}

TEST_ETL(read_only_reader_serialises_before_the_writer) {
  sstm_attr_t ro = {.read_only = true};
  serialises_before_writer(&ro, SSTM_ABORT_RO_EXTEND);
}

/* ---- the bound on the displaced version ----------------------------------- */

static void commit_x_z_one(void *arg) {
  (void)arg;
  sstm_store_u64(X, 1);
  sstm_store_u64(Z, 1);
}

/* Reads z = 0; then, in the first attempt, another descriptor commits
 * x = z = 1 and only then does W begin and lock x: the version W's lock
 * displaced is newer than this snapshot. Memory under the lock holds x = 1,
 * which must not be returned next to z = 0: the barrier extends first (and
 * fails, z changed), or, read-only, cannot and leaves it to the policy. */
static void read_z_then_x_past_newer(void *arg) {
  (void)arg;
  int a = ++R.attempts;
  uint64_t z = sstm_load_u64(Z);
  if (a == 1) {
    CHECK_OK(run_other(NULL, commit_x_z_one, NULL));
    duo_set(W.begin_at);
    duo_wait(W.locked);
  }
  uint64_t x = sstm_load_u64(X);
  if (x != z) R.torn++;
  R.x = x, R.y = z;
}

static void bound_case(const sstm_attr_t *attr, sstm_abort_reason_t why) {
  init_read_past(SSTM_READ_PAST_ALL);
  pthread_t w = start_writer(X, NULL, 5, 1);
  CHECK_OK(sstm_run(attr, read_z_then_x_past_newer, NULL));
  CHECK_EQ_I(R.torn, 0);
  CHECK_EQ_I(R.attempts, 2);
  CHECK_EQ_U(R.x, 1); /* the retry passed W's lock: x = 1 committed, not W's 5 */
  sstm_stats_t s = my_stats();
  CHECK_EQ_U(s.aborts[why], 1);
  CHECK_EQ_U(s.aborts_total, 1);
  CHECK_EQ_U(s.reads_past, 1);
  duo_set(W.commit_at);
  duo_wait(W.done);
  finish(w);
}

TEST_ETL(a_lock_over_a_newer_version_needs_an_extension) {
  bound_case(NULL, SSTM_ABORT_VALIDATE_READ);
}

TEST_ETL(read_only_does_not_pass_a_lock_over_a_newer_version) {
  sstm_attr_t ro = {.read_only = true};
  bound_case(&ro, SSTM_ABORT_READ_LOCKED);
}

/* ---- validation ----------------------------------------------------------- */

static void commit_y_one(void *arg) {
  (void)arg;
  sstm_store_u64(Y, 1);
}

static void commit_x_y_one(void *arg) {
  (void)arg;
  sstm_store_u64(X, 1);
  sstm_store_u64(Y, 1);
}

/* W began before this attempt, which reads x (unlocked); W then locks x;
 * another descriptor commits y, so reading y extends the snapshot, whose
 * validation finds x locked by W. W displaced a version this snapshot
 * covers and has not written x: the entry is valid. */
static void read_x_w_locks_read_y(void *arg) {
  (void)arg;
  int a = ++R.attempts;
  if (a > 1 && duo_phase() < W.commit_at) { /* read_past off: let W finish */
    duo_set(W.commit_at);
    duo_wait(W.done);
  }
  uint64_t x = sstm_load_u64(X);
  if (a == 1) {
    duo_set(W.begin_at + 100); /* W may lock x now */
    duo_wait(W.locked);
    CHECK_OK(run_other(NULL, commit_y_one, NULL));
  }
  R.y = sstm_load_u64(Y);
  R.x = x;
}

static void w_late_body(void *arg) {
  (void)arg;
  W.attempts++;
  duo_set(W.begin_at + 1); /* begun */
  duo_wait(W.begin_at + 100);
  sstm_store_u64(X, 5);
  duo_set(W.locked);
  duo_wait(W.commit_at);
}

/* `on`: the attempt passes running writers, under `mode`; `attr` is the
 * transaction's (a declared read-only one keeps a read set from its first
 * attempt: SSTM_RO_LOG_ON). */
static void validation_case_in(sstm_read_past_t mode, const sstm_attr_t *attr, bool on) {
  init_read_past_log(mode, SSTM_RO_LOG_ON);
  W.begin_at = 0;
  W.locked = 102, W.commit_at = 103, W.done = 104;
  pthread_t w = duo_spawn(w_thread, (void *)w_late_body);
  duo_wait(W.begin_at + 1);
  CHECK_OK(sstm_run(attr, read_x_w_locks_read_y, NULL));
  CHECK_EQ_U(R.y, 1);
  sstm_stats_t s = my_stats();
  if (on) {
    CHECK_EQ_I(R.attempts, 1);
    CHECK_EQ_U(R.x, 0);
    CHECK_EQ_U(s.aborts_total, 0);
    CHECK_EQ_U(s.extensions, 1);
    duo_set(W.commit_at);
  } else {
    CHECK_EQ_I(R.attempts, 2);
    CHECK_EQ_U(R.x, 5);
    CHECK_EQ_U(s.aborts[SSTM_ABORT_VALIDATE_READ], 1);
  }
  duo_wait(W.done);
  finish(w);
}

static void validation_case(bool on) {
  validation_case_in(on ? SSTM_READ_PAST_ALL : SSTM_READ_PAST_OFF, NULL, on);
}

TEST_ETL(validation_accepts_a_stripe_a_running_writer_locked) { validation_case(true); }
TEST_ETL(off_validation_refuses_a_locked_stripe) { validation_case(false); }

/* SSTM_READ_PAST_RO: the validation of a declared read-only transaction's
 * attempt with a read set accepts the stripe too; an update attempt's
 * refuses it. */
TEST_ETL(ro_mode_validation_accepts_for_a_read_only_attempt_with_a_read_set) {
  sstm_attr_t ro = {.read_only = true};
  validation_case_in(SSTM_READ_PAST_RO, &ro, true);
}
TEST_ETL(ro_mode_validation_refuses_for_an_update_attempt) {
  validation_case_in(SSTM_READ_PAST_RO, NULL, false);
}

/* This attempt reads x = 0; another descriptor commits x = y = 1; W begins
 * after that and locks x (displacing the new version). Reading y (= 1,
 * past the snapshot) extends: x is locked by a running writer, but its
 * lock displaced a version committed after our read, so the entry is not
 * valid and the attempt aborts rather than pair y = 1 with x = 0. */
static void read_x_commit_w_locks_read_y(void *arg) {
  (void)arg;
  int a = ++R.attempts;
  uint64_t x = sstm_load_u64(X);
  if (a == 1) {
    CHECK_OK(run_other(NULL, commit_x_y_one, NULL));
    duo_set(W.begin_at);
    duo_wait(W.locked);
  }
  uint64_t y = sstm_load_u64(Y);
  if (x != y) R.torn++;
  R.x = x, R.y = y;
}

TEST_ETL(validation_refuses_a_lock_over_a_version_newer_than_the_read) {
  init_read_past(SSTM_READ_PAST_ALL);
  pthread_t w = start_writer(X, NULL, 5, 1);
  CHECK_OK(sstm_run(NULL, read_x_commit_w_locks_read_y, NULL));
  CHECK_EQ_I(R.torn, 0);
  CHECK_EQ_I(R.attempts, 2);
  CHECK_EQ_U(R.x, 1);
  CHECK_EQ_U(R.y, 1);
  sstm_stats_t s = my_stats();
  CHECK_EQ_U(s.aborts[SSTM_ABORT_VALIDATE_READ], 1);
  CHECK_EQ_U(s.aborts_total, 1);
  duo_set(W.commit_at);
  duo_wait(W.done);
  finish(w);
}

/* lock_end is the owner's end when it takes each lock, not its start: W
 * began with this attempt and locked y; another descriptor then committed
 * x = z = 1, and W's write of x extended its snapshot before locking x.
 * This attempt read z = 0: the lock on x displaced a version newer than
 * its snapshot, so it extends (and fails) instead of returning x = 1. */
static void w_extends_body(void *arg) {
  (void)arg;
  W.attempts++;
  sstm_store_u64(Y, 5);
  duo_set(W.begin_at + 1); /* begun, y locked */
  duo_wait(W.begin_at + 2);
  sstm_store_u64(X, 5); /* x's version is past W's end: W extends first */
  duo_set(W.locked);
  duo_wait(W.commit_at);
}

static void read_z_commit_w_extends_read_x(void *arg) {
  (void)arg;
  int a = ++R.attempts;
  uint64_t z = sstm_load_u64(Z);
  if (a == 1) {
    CHECK_OK(run_other(NULL, commit_x_z_one, NULL));
    duo_set(W.begin_at + 2);
    duo_wait(W.locked);
  }
  uint64_t x = sstm_load_u64(X);
  if (x != z) R.torn++;
  R.x = x, R.y = z;
}

TEST_ETL(the_bound_is_the_end_at_the_lock_not_the_start) {
  init_read_past(SSTM_READ_PAST_ALL);
  W.begin_at = 0;
  W.locked = 3, W.commit_at = 4, W.done = 5;
  pthread_t w = duo_spawn(w_thread, (void *)w_extends_body);
  duo_wait(W.begin_at + 1);
  CHECK_OK(sstm_run(NULL, read_z_commit_w_extends_read_x, NULL));
  CHECK_EQ_I(R.torn, 0);
  CHECK_EQ_I(R.attempts, 2);
  CHECK_EQ_U(R.x, 1);
  sstm_stats_t s = my_stats();
  CHECK_EQ_U(s.aborts[SSTM_ABORT_VALIDATE_READ], 1);
  CHECK_EQ_U(s.aborts_total, 1);
  CHECK_EQ_U(s.reads_past, 1);
  duo_set(W.commit_at);
  duo_wait(W.done);
  finish(w);
}

SSTM_TEST_MAIN()
