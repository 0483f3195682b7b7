/* SPDX-License-Identifier: MIT */
/* Unit tests: read sets in the first attempt of declared read-only
 * transactions (cfg.ro_log, src/core/txn.c).
 *
 * An "interfered" read-only transaction reads a, then, in its first attempt
 * only, another descriptor commits b, then it reads b: b's version is newer
 * than its snapshot. Without a read set the attempt aborts (ro-extend) and
 * the retry keeps one; with a read set it extends (a is unchanged) and
 * commits at once. A "quiet" read-only transaction reads a and b with
 * nothing in between. The statistics tell the cases apart: ro-extend
 * aborts, extensions, and ro_logged (first attempts with a read set).
 */
#define _GNU_SOURCE
#include "../common/txhelp.h"

static uint64_t words[2][512] __attribute__((aligned(4096)));
#define A (&words[0][0])
#define B (&words[1][0])

static void init_ro_log(sstm_ro_log_t mode) {
  sstm_config_t c;
  sstm_test_config(&c);
  c.ro_log = mode;
  CHECK_OK(sstm_init(&c));
  CHECK_OK(sstm_thread_init());
}

static void bump_b(void *arg) {
  (void)arg;
  sstm_store_u64(B, sstm_load_u64(B) + 1);
}

static int attempts;
static void interfered(void *arg) {
  (void)arg;
  (void)sstm_load_u64(A);
  if (++attempts == 1) CHECK_OK(run_other(NULL, bump_b, NULL));
  (void)sstm_load_u64(B);
}

static void quiet(void *arg) {
  (void)arg;
  (void)sstm_load_u64(A);
  (void)sstm_load_u64(B);
}

static const sstm_attr_t RO = {.read_only = true};

static void run_ro(bool interfere) {
  attempts = 0;
  CHECK_OK(sstm_run(&RO, interfere ? interfered : quiet, NULL));
}

static sstm_stats_t my_stats(void) {
  sstm_stats_t s;
  CHECK_OK(sstm_stats_get(sstm_self(), &s));
  return s;
}

static uint64_t ro_extend_aborts(void) { return my_stats().aborts[SSTM_ABORT_RO_EXTEND]; }

static void fini(void) {
  txh_cleanup();
  sstm_test_fini();
}

TEST(off_is_the_default_and_never_keeps_a_read_set) {
  sstm_config_t c;
  sstm_config_default(&c);
  CHECK_EQ_I(c.ro_log, SSTM_RO_LOG_OFF);
  init_ro_log(SSTM_RO_LOG_OFF);
  for (int i = 0; i < 200; i++) {
    run_ro(true);
    CHECK_EQ_I(attempts, 2);
  }
  sstm_stats_t s = my_stats();
  CHECK_EQ_U(s.aborts[SSTM_ABORT_RO_EXTEND], 200);
  CHECK_EQ_U(s.ro_logged, 0);
  fini();
}

TEST(on_keeps_a_read_set_from_the_first_attempt) {
  init_ro_log(SSTM_RO_LOG_ON);
  for (int i = 0; i < 100; i++) {
    run_ro(true);
    CHECK_EQ_I(attempts, 1);
  }
  run_ro(false);
  sstm_stats_t s = my_stats();
  CHECK_EQ_U(s.aborts_total, 0);
  CHECK_EQ_U(s.extensions, 100);
  CHECK_EQ_U(s.ro_logged, 101);
  fini();
}

/* auto: a window in which read-only transactions keep needing an
 * extension turns read sets on; after that they stop aborting. */
TEST(auto_turns_read_sets_on_after_a_window_of_extensions) {
  init_ro_log(SSTM_RO_LOG_AUTO);
  for (int i = 0; i < 64; i++)
    run_ro(true);
  uint64_t learnt = ro_extend_aborts();
  CHECK_GE_U(learnt, 2);
  CHECK_LE_U(learnt, 64);
  for (int i = 0; i < 200; i++) {
    run_ro(true);
    CHECK_EQ_I(attempts, 1);
  }
  CHECK_EQ_U(ro_extend_aborts(), learnt);
  CHECK_GE_U(my_stats().ro_logged, 200);
  fini();
}

/* auto: after a window in which none needed one, the first attempts run
 * without a read set again. */
TEST(auto_turns_read_sets_off_after_a_quiet_window) {
  init_ro_log(SSTM_RO_LOG_AUTO);
  for (int i = 0; i < 128; i++)
    run_ro(true);
  uint64_t before = ro_extend_aborts();
  for (int i = 0; i < 200; i++) /* at least one whole quiet window */
    run_ro(false);
  uint64_t logged = my_stats().ro_logged;
  run_ro(true);
  CHECK_EQ_I(attempts, 2);
  CHECK_EQ_U(ro_extend_aborts(), before + 1);
  CHECK_EQ_U(my_stats().ro_logged, logged);
  fini();
}

/* auto: one transaction in 64 needing an extension keeps the current
 * choice, whichever it is: every window then holds exactly one. */
static void one_in_64(int windows) {
  for (int i = 0; i < 64 * windows; i++)
    run_ro(i % 64 == 17);
}

TEST(auto_keeps_its_choice_at_one_in_a_window) {
  init_ro_log(SSTM_RO_LOG_AUTO);
  /* off, stays off: each interfered transaction aborts once */
  uint64_t a0 = ro_extend_aborts();
  one_in_64(4);
  CHECK_EQ_U(ro_extend_aborts(), a0 + 4);
  CHECK_EQ_U(my_stats().ro_logged, 0);
  /* on (a window of interference), stays on: none aborts */
  for (int i = 0; i < 128; i++)
    run_ro(true);
  uint64_t a1 = ro_extend_aborts();
  uint64_t l1 = my_stats().ro_logged;
  one_in_64(4);
  CHECK_EQ_U(ro_extend_aborts(), a1);
  CHECK_EQ_U(my_stats().ro_logged, l1 + 64 * 4);
  fini();
}

/* Windows are per descriptor: interference on one thread's read-only
 * transactions does not change another's choice. */
static void quiet_thread(sstm_tt_t *t) {
  (void)t;
  for (int i = 0; i < 100; i++)
    run_ro(false);
  CHECK_EQ_U(my_stats().ro_logged, 0);
}

TEST(auto_learns_per_thread) {
  init_ro_log(SSTM_RO_LOG_AUTO);
  for (int i = 0; i < 128; i++)
    run_ro(true);
  CHECK_GT_U(my_stats().ro_logged, 0);
  sstm_test_run_threads(1, true, quiet_thread, NULL);
  fini();
}

/* ro_logged counts exactly the first attempts that keep a read set: the
 * window closes at the 64th begin, whose attempt follows the new choice. */
TEST(ro_logged_counts_the_first_attempts_with_a_read_set) {
  init_ro_log(SSTM_RO_LOG_AUTO);
  for (int i = 0; i < 64; i++)
    run_ro(true);
  sstm_stats_t s = my_stats();
  CHECK_EQ_U(s.aborts[SSTM_ABORT_RO_EXTEND], 63);
  CHECK_EQ_U(s.ro_logged, 1);
  CHECK_EQ_U(s.extensions, 1);
  fini();
}

/* With a read set, a declared read-only transaction that writes goes on as
 * an update (no ro-write restart) and commits its write. */
static void read_a_write_b(void *arg) {
  (void)arg;
  attempts++;
  sstm_store_u64(B, sstm_load_u64(A) + 7);
}

TEST(a_read_only_transaction_with_a_read_set_that_writes_commits_as_an_update) {
  init_ro_log(SSTM_RO_LOG_ON);
  attempts = 0;
  CHECK_OK(sstm_run(&RO, read_a_write_b, NULL));
  CHECK_EQ_I(attempts, 1);
  sstm_stats_t s = my_stats();
  CHECK_EQ_U(s.aborts_total, 0);
  CHECK_EQ_U(s.commits_update, 1);
  CHECK_EQ_U(tx_load_u64(B), 7);
  fini();
}

SSTM_TEST_MAIN()
