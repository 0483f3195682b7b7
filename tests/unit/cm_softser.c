/* SPDX-License-Identifier: MIT */
/* Unit tests: softser gives the OS priority back on every path.
 *
 * A loser L conflicts with a running winner W (W holds a write lock, L
 * writes the same word): L registers on W (sstm_party_watch) and its OS
 * priority is lowered with the lever sstm_describe reports (cm-info=
 * lever=...). L's retry then waits inside its transaction, away from the
 * conflict, while the test ends the conflict one way or another and reads
 * L's scheduling parameters (sched_getattr, getpriority) from outside:
 *   W commits / is killed / restarts / cancels  -> L restored,
 *   L commits first / L's thread unregisters    -> L restored,
 *   a winner of L's earlier transaction ends    -> L stays lowered,
 * and they stay restored once everything has ended. ctest runs every case
 * once per lever (SCHEDSTM_SOFTSER_LEVER=auto|nice|idle|batch|slice); a
 * lever the machine refuses is skipped (exit 77).
 */
#define _GNU_SOURCE
#include <stdlib.h>

#include "cm_duo.h"

static uint64_t words[4][512] __attribute__((aligned(4096)));
#define X (&words[0][0])
#define Y (&words[1][0])
#define Z (&words[2][0])

enum { SS_PRIO_CHANGES = 0, SS_REGISTRATIONS = 1, SS_FAILED_CHANGES = 2 };

enum wend { W_COMMIT, W_KILL, W_RESTART, W_CANCEL, W_COMMIT_NESTED };
enum lend { L_AFTER_W, L_COMMIT_FIRST, L_EXIT, L_ACTION_AFTER_W, L_CANCEL, L_DETACH };

static struct {
  int wend, lend;
  bool ext;  /* run softser+ext (ext forced to its EEVDF slice) */
  bool none; /* SCHEDSTM_SOFTSER_LEVER=none, whatever the entry says */
  char lever[32];
  sstm_desc_t *wdesc;
  _Atomic uint64_t wtxid;
  _Atomic int ltid;
  int wattempts, lattempts;
  sstm_stats_t wstats, lstats;
  duo_view_t before;
  _Atomic int w_holding, l_waiting, w_go, l_go, w_done, l_done, finish;
  /* L_DETACH */
  sstm_desc_t *ldesc;
  duo_view_t att_lowered, att_after;
  _Atomic int l_detached, l_reattach;
} S;

/* ---- levers -------------------------------------------------------------- */

/* Try the lever on a scratch thread: can it be applied and undone here? */
static void *lever_try(void *arg) {
  const char *l = arg;
  int tid = duo_gettid();
  struct duo_sched_attr a, b;
  memset(&a, 0, sizeof a);
  if (syscall(SYS_sched_getattr, tid, &a, (unsigned)sizeof a, 0u) != 0)
    return (void *)"sched_getattr";
  b = a;
  b.sched_flags = 0;
  if (strcmp(l, "none") == 0) return NULL; /* nothing to apply */
  if (strcmp(l, "nice") == 0) {
    if (setpriority(PRIO_PROCESS, (id_t)tid, 19) != 0 ||
        setpriority(PRIO_PROCESS, (id_t)tid, a.sched_nice) != 0)
      return (void *)"setpriority";
    return NULL;
  }
  if (strcmp(l, "idle") == 0)
    b.sched_policy = SCHED_IDLE;
  else if (strcmp(l, "batch") == 0)
    b.sched_policy = SCHED_BATCH;
  else if (strcmp(l, "slice") == 0)
    b.sched_runtime = 100000;
  else
    return (void *)"unknown lever";
  if (duo_setattr(tid, &b) != 0) return (void *)"sched_setattr (lower)";
  a.sched_flags = 0;
  if (duo_setattr(tid, &a) != 0) return (void *)"sched_setattr (restore)";
  return NULL;
}

static void init_softser(void) {
  if (S.none) setenv("SCHEDSTM_SOFTSER_LEVER", "none", 1);
  const char *want = getenv("SCHEDSTM_SOFTSER_LEVER");
  sstm_config_t cfg;
  sstm_test_config(&cfg);
  cfg.cm = "softser";
  if (S.ext) {
    cfg.cm = "softser+ext";
    cfg.ext_mode = SSTM_EXT_FACILITY_SLICE;
    cfg.ext_slice_us = 2500;
  }
  int rc = sstm_init(&cfg);
  /* "none" changes nothing, so it can never be refused */
  if (rc == SSTM_EPERM && want && strcmp(want, "auto") != 0 && strcmp(want, "none") != 0) {
    char msg[160];
    snprintf(msg, sizeof msg, "lever %s refused by the kernel (%s)", want, sstm_last_error());
    sstm_test_skip(msg);
  }
  CHECK_OK(rc);
  if (S.ext) { /* ext keeps its probed facility where custom slices fail */
    char d[1024];
    CHECK_GT_I(sstm_describe(d, sizeof d), 0);
    if (strstr(d, "ext=slice(2500us)") == NULL) {
      CHECK_OK(sstm_shutdown());
      sstm_test_skip("no EEVDF custom slices for ext here");
    }
  }
  duo_describe_value("lever=", S.lever, sizeof S.lever);
  if (want && *want && strcmp(want, "auto") != 0) CHECK_EQ_STR(S.lever, want);
  if (strcmp(S.lever, "none") == 0 && !S.none) {
    CHECK_OK(sstm_shutdown());
    sstm_test_skip("no priority lever works for this process");
  }
  pthread_t t;
  CHECK_EQ_I(pthread_create(&t, NULL, lever_try, S.lever), 0);
  void *why;
  CHECK_EQ_I(pthread_join(t, &why), 0);
  if (why) {
    CHECK_OK(sstm_shutdown());
    char msg[128];
    snprintf(msg, sizeof msg, "lever %s refused by the kernel (%s)", S.lever, (char *)why);
    sstm_test_skip(msg);
  }
  printf("lever=%s\n", S.lever);
}

static void check_lowered(duo_view_t v) {
  if (strcmp(S.lever, "none") == 0) {
    CHECK_VIEW_EQ(v, S.before);
  } else if (strcmp(S.lever, "nice") == 0) {
    CHECK_EQ_I(v.nice, 19);
    CHECK_EQ_I(v.getpriority, 19);
  } else if (strcmp(S.lever, "idle") == 0) {
    CHECK_EQ_I(v.policy, SCHED_IDLE);
  } else if (strcmp(S.lever, "batch") == 0) {
    CHECK_EQ_I(v.policy, SCHED_BATCH);
  } else if (strcmp(S.lever, "slice") == 0) {
    CHECK_EQ_U(v.runtime, 100000);
  } else {
    FAIL("unexpected lever %s", S.lever);
  }
}

/* ---- the two threads ------------------------------------------------------- */

static void z_body(void *arg) {
  (void)arg;
  sstm_store_u64(Z, sstm_load_u64(Z) + 1);
}
/* W's on_commit action runs a transaction of its own on W's descriptor. */
static void nested_action(void *arg) {
  (void)arg;
  CHECK_OK(sstm_run(NULL, z_body, NULL));
}

static void w_body(void *arg) {
  (void)arg;
  int k = ++S.wattempts;
  sstm_store_u64(X, (uint64_t)k); /* ETL: W holds X's lock from here */
  if (k > 1) return;
  if (S.wend == W_COMMIT_NESTED) CHECK_OK(sstm_on_commit(nested_action, NULL));
  atomic_store_explicit(&S.wtxid, sstm_txid(), memory_order_seq_cst);
  atomic_store_explicit(&S.w_holding, 1, memory_order_release);
  duo_wait_flag(&S.w_go, 1);
  switch (S.wend) {
  case W_RESTART: sstm_restart();
  case W_CANCEL: sstm_cancel();
  default: return; /* W_COMMIT; W_KILL: killed meanwhile, the commit aborts */
  }
}

static void *w_main(void *arg) {
  (void)arg;
  CHECK_OK(sstm_thread_init());
  S.wdesc = sstm_self();
  CHECK_RC(sstm_run(NULL, w_body, NULL), S.wend == W_CANCEL ? SSTM_ECANCELED : SSTM_OK);
  CHECK_EQ_I(S.wattempts, S.wend == W_KILL || S.wend == W_RESTART ? 2 : 1);
  S.wstats = duo_stats(sstm_self());
  atomic_store_explicit(&S.w_done, 1, memory_order_seq_cst);
  duo_wait_flag(&S.finish, 1);
  CHECK_OK(sstm_thread_exit());
  return NULL;
}

static void l_body(void *arg) {
  (void)arg;
  int k = ++S.lattempts;
  if (k == 1) {
    if (S.lend == L_ACTION_AFTER_W) /* an abort action that runs a transaction */
      CHECK_OK(sstm_on_abort(nested_action, NULL));
    sstm_store_u64(X, 100); /* W holds X: conflict, L aborts and registers */
    FAIL("the loser's write did not conflict with the winner");
  }
  atomic_store_explicit(&S.l_waiting, 1, memory_order_release);
  duo_wait_flag(&S.l_go, 1);
  if (S.lend == L_DETACH) { /* suspend the lowered attempt, resume it later */
    S.ldesc = sstm_desc_detach();
    CHECK_NOT_NULL(S.ldesc);
    atomic_store_explicit(&S.l_detached, 1, memory_order_seq_cst);
    duo_wait_flag(&S.l_reattach, 1);
    CHECK_OK(sstm_desc_attach(S.ldesc));
  }
  if (S.lend == L_EXIT || S.lend == L_CANCEL || S.lend == L_DETACH) sstm_cancel();
  sstm_store_u64(Y, (uint64_t)k);
}

static void *l_main(void *arg) {
  (void)arg;
  CHECK_OK(sstm_thread_init());
  atomic_store_explicit(&S.ltid, duo_gettid(), memory_order_seq_cst);
  duo_wait_flag(&S.w_holding, 1);
  CHECK_RC(sstm_run(NULL, l_body, NULL),
           S.lend == L_EXIT || S.lend == L_CANCEL || S.lend == L_DETACH ? SSTM_ECANCELED : SSTM_OK);
  CHECK_EQ_I(S.lattempts, 2);
  S.lstats = duo_stats(sstm_self());
  if (S.lend == L_EXIT)
    CHECK_OK(sstm_thread_exit()); /* the thread stays alive: its tid is checked */
  atomic_store_explicit(&S.l_done, 1, memory_order_seq_cst);
  duo_wait_flag(&S.finish, 1);
  if (S.lend != L_EXIT) CHECK_OK(sstm_thread_exit());
  return NULL;
}

/* L_DETACH: another thread attaches the suspended loser's descriptor while
 * its row is not empty, and detaches it again. */
static void *att_main(void *arg) {
  (void)arg;
  CHECK_OK(sstm_desc_attach(S.ldesc));
  S.att_lowered = duo_view_of(duo_gettid());
  CHECK_TRUE(sstm_desc_detach() == S.ldesc);
  S.att_after = duo_view_of(duo_gettid());
  return NULL;
}

static void end_winner(void) {
  if (S.wend == W_KILL)
    CHECK_OK(sstm_desc_kill(S.wdesc, atomic_load_explicit(&S.wtxid, memory_order_seq_cst)));
  atomic_store_explicit(&S.w_go, 1, memory_order_seq_cst);
  duo_wait_flag(&S.w_done, 1);
}

static void scenario(int wend, int lend) {
  S.wend = wend;
  S.lend = lend;
  init_softser();
  S.before = duo_view_of(duo_gettid()); /* threads inherit the main thread's */
  pthread_t w = duo_spawn(w_main, NULL);
  pthread_t l = duo_spawn(l_main, NULL);
  duo_wait_flag(&S.l_waiting, 1);
  int ltid = atomic_load_explicit(&S.ltid, memory_order_seq_cst);
  /* L is registered on W's running attempt, lowered */
  duo_view_t lowered = duo_view_of(ltid);
  check_lowered(lowered);
  if (lend == L_DETACH) {
    atomic_store_explicit(&S.l_go, 1, memory_order_seq_cst);
    duo_wait_flag(&S.l_detached, 1);
    CHECK_VIEW_EQ(duo_view_of(ltid), S.before); /* the detach gave the thread back */
    duo_join(duo_spawn(att_main, NULL));
    check_lowered(S.att_lowered); /* the row is the transaction's */
    CHECK_VIEW_EQ(S.att_after, S.before);
    atomic_store_explicit(&S.l_reattach, 1,
                          memory_order_seq_cst); /* lowered again, then the cancel */
    duo_wait_flag(&S.l_done, 1);
    CHECK_VIEW_EQ(duo_view_of(ltid), S.before);
    end_winner();
  } else if (lend == L_AFTER_W || lend == L_ACTION_AFTER_W) {
    end_winner();
    CHECK_VIEW_EQ(duo_view_of(ltid), S.before); /* (a)/(b): the winner's end */
    atomic_store_explicit(&S.l_go, 1, memory_order_seq_cst);
    duo_wait_flag(&S.l_done, 1);
  } else {
    atomic_store_explicit(&S.l_go, 1, memory_order_seq_cst);
    duo_wait_flag(&S.l_done, 1);
    CHECK_VIEW_EQ(duo_view_of(ltid), S.before); /* (c)/(d): the loser's end */
    end_winner();
  }
  CHECK_VIEW_EQ(duo_view_of(ltid), S.before); /* and it stays so */
  atomic_store_explicit(&S.finish, 1, memory_order_seq_cst);
  duo_join(w);
  duo_join(l);
  /* accounting: one registration, no failed change */
  CHECK_EQ_U(S.lstats.cm_stats[SS_REGISTRATIONS], 1);
  CHECK_EQ_U(S.lstats.cm_stats[SS_FAILED_CHANGES], 0);
  CHECK_EQ_U(S.wstats.cm_stats[SS_FAILED_CHANGES], 0);
  CHECK_EQ_U(S.wstats.cm_stats[SS_REGISTRATIONS], 0);
  if (lend != L_DETACH) CHECK_EQ_U(S.lstats.cm_actions[SSTM_ACT_LOWERED], S.none ? 0 : 1);
  CHECK_EQ_U(S.lstats.aborts[SSTM_ABORT_WRITE_LOCKED], 1);
  if (S.none)
    CHECK_EQ_U(S.wstats.cm_stats[SS_PRIO_CHANGES] + S.lstats.cm_stats[SS_PRIO_CHANGES], 0);
  else if (lend == L_AFTER_W)
    CHECK_EQ_U(S.wstats.cm_stats[SS_PRIO_CHANGES] + S.lstats.cm_stats[SS_PRIO_CHANGES], 2);
  CHECK_OK(sstm_shutdown());
}

TEST(winner_commit_restores) { scenario(W_COMMIT, L_AFTER_W); }
TEST(winner_killed_restores) { scenario(W_KILL, L_AFTER_W); }
TEST(winner_restart_restores) { scenario(W_RESTART, L_AFTER_W); }
TEST(winner_cancel_restores) { scenario(W_CANCEL, L_AFTER_W); }
/* The policy heard of W's commit after the action's transaction had
 * rewritten the descriptor's attempt state: L stayed lowered. */
TEST(winner_commit_with_transactional_action_restores) { scenario(W_COMMIT_NESTED, L_AFTER_W); }
TEST(loser_commit_first_restores) { scenario(W_COMMIT, L_COMMIT_FIRST); }
/* The loser's abort action runs a transaction that commits on its
 * descriptor: the retry still runs lowered (the action used to run after
 * softser had lowered the thread, and its commit restored it). */
TEST(loser_abort_action_with_a_transaction_keeps_it_lowered) {
  scenario(W_COMMIT, L_ACTION_AFTER_W);
}
TEST(loser_thread_exit_restores) { scenario(W_COMMIT, L_EXIT); }
/* The loser cancels its transaction while the winner still runs: no retry
 * follows, so it is in conflict with nobody (it stayed lowered until the
 * winner ended). */
TEST(loser_cancel_restores) { scenario(W_COMMIT, L_CANCEL); }
/* With the lever none the loser is registered but nothing is changed: no
 * failed change counted and no "lowered" action shown (every registration
 * was counted as a failure, and the state table showed "lowered"). */
TEST(lever_none_changes_nothing_and_fails_nothing) {
  S.none = true;
  scenario(W_COMMIT, L_AFTER_W);
}
/* Under softser+ext both change the thread's slice (with the slice lever):
 * ext sets its own at attach, softser lowers on top of it. Leaving while
 * lowered, each must put back what it found, softser first: the thread
 * ends with the slice it had before it registered. */
TEST(loser_thread_exit_restores_under_ext) {
  S.ext = true;
  scenario(W_COMMIT, L_EXIT);
}
TEST(loser_exit_then_winner_killed) { scenario(W_KILL, L_EXIT); }
/* The priority is the thread's, the conflicts the transaction's: a loser
 * that detaches its descriptor mid-transaction (on_detach, also the path of
 * a thread's exit) gets its priority back while the row stays; a thread
 * that attaches the descriptor meanwhile is lowered until it detaches. */
TEST(loser_detach_restores_and_attach_lowers) { scenario(W_COMMIT, L_DETACH); }

/* ---- no conflict, no change ------------------------------------------------- */

static void upd(void *arg) {
  uint64_t i = *(uint64_t *)arg;
  sstm_store_u64(&words[2][i % 8], sstm_load_u64(&words[2][i % 8]) + 1);
}
static void rd(void *arg) {
  (void)arg;
  (void)sstm_load_u64(&words[3][0]);
}

static void *quiet_main(void *arg) {
  (void)arg;
  CHECK_OK(sstm_thread_init());
  duo_view_t v0 = duo_view_of(duo_gettid());
  for (uint64_t i = 0; i < 20000; i++) {
    CHECK_OK(sstm_run(NULL, upd, &i));
    CHECK_OK(sstm_run(NULL, rd, NULL));
  }
  sstm_stats_t s = duo_stats(sstm_self());
  CHECK_EQ_U(s.commits_update, 20000);
  for (int i = 0; i < SSTM_CM_NSTATS; i++)
    CHECK_EQ_U(s.cm_stats[i], 0);
  for (int i = 0; i < 8; i++)
    CHECK_EQ_U(s.cm_actions[i], 0);
  CHECK_EQ_U(s.aborts_total, 0);
  CHECK_VIEW_EQ(duo_view_of(duo_gettid()), v0);
  CHECK_OK(sstm_thread_exit());
  CHECK_VIEW_EQ(duo_view_of(duo_gettid()), v0);
  return NULL;
}

TEST(commit_without_conflict_changes_nothing) {
  init_softser();
  duo_join(duo_spawn(quiet_main, NULL));
  sstm_stats_t a;
  CHECK_OK(sstm_stats_aggregate(&a));
  for (int i = 0; i < SSTM_CM_NSTATS; i++)
    CHECK_EQ_U(a.cm_stats[i], 0);
  CHECK_OK(sstm_shutdown());
}

/* ---- two winners: the row count ---------------------------------------------- */

/* L conflicts with W1 (on X), then with W2 (on Y): it stays lowered while
 * either runs, and gets its priority back when the second one ends. */
static struct {
  sstm_desc_t *w[2];
  int wattempts[2], lattempts;
  _Atomic int holding[2], go[2], done[2], l_waiting, l_go, l_done, finish, ltid;
  sstm_stats_t ls;
} T;

static void tw_body(void *arg) {
  int i = (int)(intptr_t)arg;
  int k = ++T.wattempts[i];
  sstm_store_u64(i == 0 ? X : Y, (uint64_t)k);
  if (k > 1) return;
  atomic_store_explicit(&T.holding[i], 1, memory_order_seq_cst);
  duo_wait_flag(&T.go[i], 1);
}

static void *tw_main(void *arg) {
  int i = (int)(intptr_t)arg;
  CHECK_OK(sstm_thread_init());
  T.w[i] = sstm_self();
  CHECK_OK(sstm_run(NULL, tw_body, arg));
  CHECK_EQ_I(T.wattempts[i], 1);
  atomic_store_explicit(&T.done[i], 1, memory_order_seq_cst);
  duo_wait_flag(&T.finish, 1);
  CHECK_OK(sstm_thread_exit());
  return NULL;
}

static void tl_body(void *arg) {
  (void)arg;
  int k = ++T.lattempts;
  if (k == 1) {
    sstm_store_u64(X, 100); /* W1 holds X */
    FAIL("no conflict with the first winner");
  }
  if (k == 2) {
    sstm_store_u64(Y, 100); /* W2 holds Y */
    FAIL("no conflict with the second winner");
  }
  atomic_store_explicit(&T.l_waiting, 1, memory_order_seq_cst);
  duo_wait_flag(&T.l_go, 1);
  sstm_store_u64(&words[2][0], (uint64_t)k);
}

static void *tl_main(void *arg) {
  (void)arg;
  CHECK_OK(sstm_thread_init());
  atomic_store_explicit(&T.ltid, duo_gettid(), memory_order_seq_cst);
  duo_wait_flag(&T.holding[0], 1);
  duo_wait_flag(&T.holding[1], 1);
  CHECK_OK(sstm_run(NULL, tl_body, NULL));
  CHECK_EQ_I(T.lattempts, 3);
  T.ls = duo_stats(sstm_self());
  atomic_store_explicit(&T.l_done, 1, memory_order_seq_cst);
  duo_wait_flag(&T.finish, 1);
  CHECK_OK(sstm_thread_exit());
  return NULL;
}

TEST(two_winners_restore_after_both) {
  init_softser();
  duo_view_t before = duo_view_of(duo_gettid());
  pthread_t w0 = duo_spawn(tw_main, (void *)(intptr_t)0);
  pthread_t w1 = duo_spawn(tw_main, (void *)(intptr_t)1);
  pthread_t l = duo_spawn(tl_main, NULL);
  duo_wait_flag(&T.l_waiting, 1);
  int ltid = atomic_load_explicit(&T.ltid, memory_order_seq_cst);
  check_lowered(duo_view_of(ltid));
  atomic_store_explicit(&T.go[0], 1,
                        memory_order_seq_cst); /* the first winner commits: one conflict left */
  duo_wait_flag(&T.done[0], 1);
  check_lowered(duo_view_of(ltid));
  atomic_store_explicit(&T.go[1], 1, memory_order_seq_cst); /* the second one too: none left */
  duo_wait_flag(&T.done[1], 1);
  CHECK_VIEW_EQ(duo_view_of(ltid), before);
  atomic_store_explicit(&T.l_go, 1, memory_order_seq_cst);
  duo_wait_flag(&T.l_done, 1);
  CHECK_VIEW_EQ(duo_view_of(ltid), before);
  atomic_store_explicit(&T.finish, 1, memory_order_seq_cst);
  duo_join(w0);
  duo_join(w1);
  duo_join(l);
  CHECK_EQ_U(T.ls.cm_stats[SS_REGISTRATIONS], 2);
  CHECK_EQ_U(T.ls.cm_stats[SS_FAILED_CHANGES], 0);
  CHECK_OK(sstm_shutdown());
}

/* ---- a registration left by an earlier transaction ----------------------- */

/* L's first transaction conflicts with W1 (on X) and then commits while W1
 * still runs: the commit clears L's row and restores it, and W1's list
 * still names L (from that earlier transaction). L's second transaction
 * conflicts with W2 (on Y). When W1 ends, its stale entry must not count
 * against the new row: L stays lowered until W2 ends. */
static struct {
  int first_attempts, second_attempts;
  duo_view_t after_first;
} U;

static void ul_first(void *arg) {
  (void)arg;
  if (++U.first_attempts == 1) {
    sstm_store_u64(X, 100); /* W1 holds X */
    FAIL("no conflict with the first winner");
  }
  sstm_store_u64(Z, 1); /* commits, W1 still running */
}

static void ul_second(void *arg) {
  (void)arg;
  int k = ++U.second_attempts;
  if (k == 1) {
    sstm_store_u64(Y, 100); /* W2 holds Y */
    FAIL("no conflict with the second winner");
  }
  atomic_store_explicit(&T.l_waiting, 1, memory_order_seq_cst);
  duo_wait_flag(&T.l_go, 1);
  sstm_store_u64(&words[3][0], (uint64_t)k);
}

static void *ul_main(void *arg) {
  (void)arg;
  CHECK_OK(sstm_thread_init());
  atomic_store_explicit(&T.ltid, duo_gettid(), memory_order_seq_cst);
  duo_wait_flag(&T.holding[0], 1);
  duo_wait_flag(&T.holding[1], 1);
  CHECK_OK(sstm_run(NULL, ul_first, NULL));
  U.after_first = duo_view_of(duo_gettid());
  CHECK_OK(sstm_run(NULL, ul_second, NULL));
  CHECK_EQ_I(U.first_attempts, 2);
  CHECK_EQ_I(U.second_attempts, 2);
  T.ls = duo_stats(sstm_self());
  atomic_store_explicit(&T.l_done, 1, memory_order_seq_cst);
  duo_wait_flag(&T.finish, 1);
  CHECK_OK(sstm_thread_exit());
  return NULL;
}

TEST(earlier_registration_does_not_restore) {
  init_softser();
  duo_view_t before = duo_view_of(duo_gettid());
  pthread_t w0 = duo_spawn(tw_main, (void *)(intptr_t)0);
  pthread_t w1 = duo_spawn(tw_main, (void *)(intptr_t)1);
  pthread_t l = duo_spawn(ul_main, NULL);
  duo_wait_flag(&T.l_waiting, 1);
  int ltid = atomic_load_explicit(&T.ltid, memory_order_seq_cst);
  CHECK_VIEW_EQ(U.after_first, before);                     /* the first commit restored it */
  check_lowered(duo_view_of(ltid));                         /* lowered again, for W2 */
  atomic_store_explicit(&T.go[0], 1, memory_order_seq_cst); /* W1 ends: its entry is stale */
  duo_wait_flag(&T.done[0], 1);
  check_lowered(duo_view_of(ltid));
  atomic_store_explicit(&T.go[1], 1, memory_order_seq_cst); /* W2 ends: nothing left */
  duo_wait_flag(&T.done[1], 1);
  CHECK_VIEW_EQ(duo_view_of(ltid), before);
  atomic_store_explicit(&T.l_go, 1, memory_order_seq_cst);
  duo_wait_flag(&T.l_done, 1);
  CHECK_VIEW_EQ(duo_view_of(ltid), before);
  atomic_store_explicit(&T.finish, 1, memory_order_seq_cst);
  duo_join(w0);
  duo_join(w1);
  duo_join(l);
  CHECK_EQ_U(T.ls.cm_stats[SS_REGISTRATIONS], 2);
  CHECK_EQ_U(T.ls.cm_stats[SS_FAILED_CHANGES], 0);
  CHECK_OK(sstm_shutdown());
}

SSTM_TEST_MAIN()
