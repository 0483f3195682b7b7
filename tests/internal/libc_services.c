/* SPDX-License-Identifier: MIT */
/* The engine's end-of-attempt action for the transactional stdio
 * (src/iface/libc_services.h, sstm__on_end): one registration that runs
 * after a commit with committed true and after a rollback with committed
 * false, in registration order with the sstm_on_commit() and
 * sstm_on_abort() actions, and is discarded with its attempt. */
#include <string.h>

#include "iface/libc_services.h"
#include "runner.h"

/* What ran, in order: 'C' an on_commit action, 'A' an on_abort action,
 * 'E' / 'e' the end action told committed / rolled back, each followed by
 * its argument's digit. */
static char trace[256];
static size_t ntrace;

static void note(char what, void *arg) {
  CHECK_LT_U(ntrace + 2, sizeof trace);
  trace[ntrace++] = what;
  trace[ntrace++] = (char)('0' + (int)(intptr_t)arg);
  trace[ntrace] = '\0';
}

static void on_commit_fn(void *arg) { note('C', arg); }
static void on_abort_fn(void *arg) { note('A', arg); }
static void on_end_fn(void *arg, bool committed) { note(committed ? 'E' : 'e', arg); }

static int attempts;

/* Registers an abort action, the end action and a commit action, in that
 * order; the first attempt restarts after them. */
static void body(void *arg) {
  (void)arg;
  int a = ++attempts;
  CHECK_OK(sstm_on_abort(on_abort_fn, (void *)(intptr_t)a));
  CHECK_OK(sstm__on_end(on_end_fn, (void *)(intptr_t)a));
  CHECK_OK(sstm_on_commit(on_commit_fn, (void *)(intptr_t)a));
  if (a == 1) sstm_restart();
}

TEST(the_end_action_runs_once_per_attempt_in_order_with_the_others) {
  sstm_test_init();
  ntrace = 0, trace[0] = '\0', attempts = 0;
  CHECK_OK(sstm_run(NULL, body, NULL));
  CHECK_EQ_I(attempts, 2);
  /* attempt 1 rolled back: its abort action, then its end action told
   * so, not its commit action; attempt 2 committed: its end action told
   * so, then its commit action, not its abort action. */
  CHECK_EQ_STR(trace, "A1e1E2C2");
  sstm_test_fini();
}

static unsigned ends_committed, ends_rolled_back;
static void count_end(void *arg, bool committed) {
  (void)arg;
  if (committed)
    ends_committed++;
  else
    ends_rolled_back++;
}

enum { MANY = 37 }; /* more than the array's first 8 entries and its doublings */

static void many_body(void *arg) {
  int *round = arg;
  for (int i = 0; i < MANY; i++)
    CHECK_OK(sstm__on_end(count_end, NULL));
  if ((*round)++ == 0) sstm_restart();
}

TEST(many_end_actions_grow_the_array_and_each_runs_once) {
  sstm_test_init();
  int round = 0;
  ends_committed = ends_rolled_back = 0;
  CHECK_OK(sstm_run(NULL, many_body, &round));
  CHECK_EQ_U(ends_rolled_back, MANY);
  CHECK_EQ_U(ends_committed, MANY);
  /* the next transaction starts with no action left over */
  ends_committed = ends_rolled_back = 0;
  round = 1;
  CHECK_OK(sstm_run(NULL, many_body, &round));
  CHECK_EQ_U(ends_committed, MANY);
  CHECK_EQ_U(ends_rolled_back, 0);
  sstm_test_fini();
}

static void null_body(void *arg) {
  (void)arg;
  CHECK_EQ_I(sstm__on_end(NULL, NULL), SSTM_EINVAL);
  CHECK_TRUE(strstr(sstm_last_error(), "sstm__on_end") != NULL);
}

TEST(bad_calls_are_refused_with_a_message) {
  sstm_test_init();
  ends_committed = ends_rolled_back = 0;
  CHECK_EQ_I(sstm__on_end(count_end, NULL), SSTM_ENOTX);
  CHECK_TRUE(strstr(sstm_last_error(), "sstm__on_end") != NULL);
  CHECK_OK(sstm_run(NULL, null_body, NULL));
  CHECK_EQ_U(ends_committed + ends_rolled_back, 0);
  sstm_test_fini();
}

/* A transaction whose only commit-time work is one action takes the
 * engine's short tail (txn.c, commit_actions), which runs a copy of the
 * action with the array left empty in the descriptor: the action's own
 * transactions register theirs there. Each runs once, in order, and
 * nothing is left over for the next transaction. */
static int depth_left;
static void nesting_end(void *arg, bool committed);

/* Registers nesting_end; at depth 1 the first attempt restarts after it
 * (a retry: that commit takes the general tail). */
static void inner_body(void *arg) {
  int *tries = arg;
  int d = depth_left;
  CHECK_OK(sstm__on_end(nesting_end, (void *)(intptr_t)d));
  if (d == 1 && (*tries)++ == 0) sstm_restart();
}

/* Notes itself; after a commit, while depth_left > 0, runs a transaction
 * one level deeper from inside this action. */
static void nesting_end(void *arg, bool committed) {
  note(committed ? 'E' : 'e', arg);
  if (!committed || depth_left == 0) return;
  depth_left--;
  int tries = 0;
  CHECK_OK(sstm_run(NULL, inner_body, &tries));
}

static void one_end_body(void *arg) { CHECK_OK(sstm__on_end(nesting_end, arg)); }
static void one_commit_body(void *arg) { CHECK_OK(sstm_on_commit(on_commit_fn, arg)); }

TEST(a_single_action_that_runs_transactions_runs_once_in_order) {
  sstm_test_init();
  ntrace = 0, trace[0] = '\0';
  depth_left = 2;
  CHECK_OK(sstm_run(NULL, one_end_body, (void *)(intptr_t)9));
  /* the outer action (E9) runs a transaction of depth 1: its first
   * attempt's action told rolled back (e1), its commit's (E1), which runs
   * one of depth 0, one action and no retry (the short tail again): E0. */
  CHECK_EQ_STR(trace, "E9e1E1E0");
  ntrace = 0, trace[0] = '\0';
  CHECK_OK(sstm_run(NULL, one_commit_body, (void *)(intptr_t)4));
  CHECK_OK(sstm_run(NULL, one_commit_body, (void *)(intptr_t)5));
  CHECK_EQ_STR(trace, "C4C5");
  ends_committed = ends_rolled_back = 0;
  int round = 1;
  CHECK_OK(sstm_run(NULL, many_body, &round)); /* many: the general tail */
  CHECK_EQ_U(ends_committed, MANY);
  CHECK_EQ_U(ends_rolled_back, 0);
  ntrace = 0, trace[0] = '\0';
  depth_left = 0;
  CHECK_OK(sstm_run(NULL, one_end_body, (void *)(intptr_t)3));
  CHECK_EQ_STR(trace, "E3"); /* no action left over from the others */
  sstm_test_fini();
}

/* ---- the end mark (sstm__end_mark) ---- */

/* A registration inside a transaction returns the attempt's id. */
#define CHECK_MARK(...) CHECK_EQ_U(sstm__end_mark(__VA_ARGS__), sstm_txid())

static _Atomic uint64_t mark_word;
static uint64_t seen_in_action; /* the mark's word when an action ran */
static void mark_commit_action(void *arg) {
  (void)arg;
  seen_in_action = atomic_load_explicit(&mark_word, memory_order_relaxed);
}

/* The first attempt marks 11/12 and restarts; the second marks 21/22 and
 * commits. The abort and commit actions see the mark stored already. */
static void mark_body(void *arg) {
  int a = ++attempts;
  (void)arg;
  CHECK_OK(sstm_on_abort(mark_commit_action, NULL));
  CHECK_OK(sstm_on_commit(mark_commit_action, NULL));
  CHECK_MARK(&mark_word, a == 1 ? 11 : 21, a == 1 ? 12 : 22);
  /* not yet: 0, or the rolled-back attempt's 12 */
  CHECK_EQ_U(atomic_load_explicit(&mark_word, memory_order_relaxed), a == 1 ? 0 : 12);
  if (a == 1) {
    sstm_restart();
  }
}

TEST(the_end_mark_is_stored_once_per_attempt_before_the_actions) {
  sstm_test_init();
  atomic_store_explicit(&mark_word, 0, memory_order_relaxed);
  attempts = 0;
  CHECK_OK(sstm_run(NULL, mark_body, NULL));
  CHECK_EQ_I(attempts, 2);
  CHECK_EQ_U(atomic_load_explicit(&mark_word, memory_order_relaxed), 21);
  CHECK_EQ_U(seen_in_action, 21);
  /* Stored once: a later transaction without a mark leaves the word. */
  atomic_store_explicit(&mark_word, 5, memory_order_relaxed);
  attempts = 1;
  CHECK_OK(sstm_run(NULL, body, NULL)); /* actions, no mark; commits at once */
  CHECK_EQ_U(atomic_load_explicit(&mark_word, memory_order_relaxed), 5);
  sstm_test_fini();
}

/* A mark alone (no action, nothing written: the read-only commit's own
 * path), and with a read of a transactional word. */
static uint64_t mark_data;
static void mark_only_body(void *arg) {
  CHECK_MARK(&mark_word, 31, 32);
  if (arg != NULL) CHECK_EQ_U(sstm_load_u64(&mark_data), 7);
}

TEST(a_read_only_commit_with_only_a_mark_stores_it) {
  sstm_test_init();
  mark_data = 7;
  for (int reads = 0; reads < 2; reads++) {
    atomic_store_explicit(&mark_word, 0, memory_order_relaxed);
    CHECK_OK(sstm_run(NULL, mark_only_body, reads ? &mark_data : NULL));
    CHECK_EQ_U(atomic_load_explicit(&mark_word, memory_order_relaxed), 31);
    /* stored once: the next transaction without a mark leaves the word */
    atomic_store_explicit(&mark_word, 5, memory_order_relaxed);
    attempts = 1;
    CHECK_OK(sstm_run(NULL, body, NULL));
    CHECK_EQ_U(atomic_load_explicit(&mark_word, memory_order_relaxed), 5);
  }
  sstm_test_fini();
}

static void mark_abort_body(void *arg) {
  (void)arg;
  attempts++;
  CHECK_OK(sstm_on_abort(mark_commit_action, NULL));
  CHECK_MARK(&mark_word, 1, 2);
  sstm_cancel();
}

static void mark_drop_body(void *arg) {
  (void)arg;
  CHECK_MARK(&mark_word, 1, 2);
  CHECK_MARK(&mark_word, 3, 4);        /* replaces */
  if (++attempts == 1) sstm_restart(); /* stores 4 */
  CHECK_MARK(NULL, 0, 0);              /* drops it: the commit stores nothing */
}

TEST(a_rolled_back_attempt_stores_its_abort_value_and_a_dropped_mark_nothing) {
  sstm_test_init();
  atomic_store_explicit(&mark_word, 0, memory_order_relaxed);
  attempts = 0;
  seen_in_action = 0;
  CHECK_EQ_I(sstm_run(NULL, mark_abort_body, NULL), SSTM_ECANCELED);
  CHECK_EQ_U(atomic_load_explicit(&mark_word, memory_order_relaxed), 2);
  CHECK_EQ_U(seen_in_action, 2); /* before the abort action */
  attempts = 0;
  CHECK_OK(sstm_run(NULL, mark_drop_body, NULL));
  CHECK_EQ_I(attempts, 2);
  CHECK_EQ_U(atomic_load_explicit(&mark_word, memory_order_relaxed), 4);
  /* Outside a transaction: 0, nothing registered, no error recorded. */
  CHECK_TRUE(sstm_run(NULL, NULL, NULL) != 0); /* an error to keep */
  CHECK_TRUE(strstr(sstm_last_error(), "sstm_run") != NULL);
  CHECK_EQ_U(sstm__end_mark(&mark_word, 1, 2), 0);
  CHECK_TRUE(strstr(sstm_last_error(), "sstm_run") != NULL);
  attempts = 1;
  CHECK_OK(sstm_run(NULL, body, NULL)); /* commits at once: nothing stored */
  CHECK_EQ_U(atomic_load_explicit(&mark_word, memory_order_relaxed), 4);
  sstm_test_fini();
}

/* An attempt with a mark that asks to become irrevocable, having read
 * and written nothing, is rolled back first (its mark stored) instead of
 * switching in place: whoever waits for the mark may hold the token. */
static void mark_irrev_body(void *arg) {
  (void)arg;
  int a = ++attempts;
  if (a == 1) CHECK_MARK(&mark_word, 1, 2);
  CHECK_OK(sstm_become_irrevocable());
  CHECK_TRUE(sstm_is_irrevocable());
}

TEST(an_attempt_with_a_mark_does_not_become_irrevocable_in_place) {
  sstm_test_init();
  atomic_store_explicit(&mark_word, 0, memory_order_relaxed);
  attempts = 0;
  CHECK_OK(sstm_run(NULL, mark_irrev_body, NULL));
  CHECK_EQ_I(attempts, 2);
  CHECK_EQ_U(atomic_load_explicit(&mark_word, memory_order_relaxed), 2);
  sstm_test_fini();
}

SSTM_TEST_MAIN()
