/* SPDX-License-Identifier: MIT */
/* Internal tests: the engine's services to an executor
 * (src/iface/exec_services.h) and the paused-holder protocol, argument (9)
 * of docs/design/core.md, on one thread or two, deterministically:
 *  - polled preemption: a request calls the hook at the next barrier, at
 *    an update commit, between a rolled-back attempt and its retry; not in
 *    an irrevocable attempt; a non-preemptible region keeps it standing and
 *    replays it when it ends; the signal handler's test;
 *  - a hook that switches the transaction to another thread (user-level
 *    contexts; not under TSan, whose runtime does not follow swapcontext);
 *  - a paused holder (detached, or marked) is taken over whatever the
 *    policy, all its locks at once, and rolls back when resumed; the
 *    WAIT_HIGHER rule offers the worker to the executor once first; the
 *    versions the reaper releases with (the displaced ones at a polled
 *    point, one fresh one elsewhere); a lock taken over from the holder
 *    while it ran stays the thief's through the reap and the rollback; an
 *    attempt switched out while blocked on a paused one, taken over
 *    meanwhile, stops at the kill when it resumes;
 *  - an attempt waiting outside the barriers (9.7): marked only when it is
 *    revocable and holds locks; taken over whatever the policy, with the
 *    displaced versions; not offered to the executor; not named as the
 *    killer of another;
 *  - the errors of the interface.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>

#include "../common/txhelp.h"
#include "core/engine.h"
#include "iface/exec_services.h"
#include "iface/libc_services.h"

static uint64_t w[64] __attribute__((aligned(64)));

/* ---- a recording hook ---- */

static struct {
  int calls;
  sstm_exec_point_t where[8];
  sstm_desc_t *self[8], *blocker[8];
} hk;

static void rec_hook(sstm_desc_t *self, sstm_exec_point_t where, sstm_desc_t *blocker) {
  if (hk.calls < 8) {
    hk.where[hk.calls] = where;
    hk.self[hk.calls] = self;
    hk.blocker[hk.calls] = blocker;
  }
  hk.calls++;
}

static void setup(void) {
  sstm_test_init();
  hk.calls = 0;
  CHECK_OK(sstm__exec_set_hook(rec_hook));
}

/* The block ran twice and the hook was called once, at the restart point
 * (a request served there). */
static void served_once_at_the_restart(int attempts) {
  CHECK_EQ_I(attempts, 2);
  CHECK_EQ_I(hk.calls, 1);
  CHECK_EQ_I(hk.where[0], SSTM_EXEC_AT_RESTART);
}

/* me's statistics count one abort, and it was a kill. */
static void killed_once(sstm_desc_t *me) {
  sstm_stats_t s;
  CHECK_OK(sstm_stats_get(me, &s));
  CHECK_EQ_U(s.aborts[SSTM_ABORT_KILLED], 1);
}

static void teardown(void) {
  CHECK_OK(sstm__exec_set_hook(NULL));
  CHECK_OK(sstm__exec_set_paused_rule(SSTM_EXEC_PAUSED_TAKEOVER));
  txh_cleanup();
  sstm_test_fini();
}

/* ---- (a) polled preemption ---- */

TEST(request_calls_the_hook_at_the_next_barrier) {
  setup();
  sstm_desc_t *me = sstm_self();
  SSTM_ATOMIC_BEGIN(NULL)
    (void)sstm_load_u64(&w[0]);
    CHECK_EQ_I(hk.calls, 0);
    sstm__exec_request(me);
    CHECK_TRUE(sstm__exec_pending(me));
    (void)sstm_load_u64(&w[8]);
    CHECK_EQ_I(hk.calls, 1);
    CHECK_EQ_I(hk.where[0], SSTM_EXEC_AT_BARRIER);
    CHECK_EQ_PTR(hk.self[0], me);
    CHECK_NULL(hk.blocker[0]);
    CHECK_FALSE(sstm__exec_pending(me)); /* consumed */
    sstm__exec_request(me);
    sstm_store_u64(&w[16], 3); /* a store is a point too */
    CHECK_EQ_I(hk.calls, 2);
    (void)sstm_load_u64(&w[24]);
    CHECK_EQ_I(hk.calls, 2);
  SSTM_ATOMIC_END();
  CHECK_EQ_U(w[16], 3);
  teardown();
}

TEST(no_hook_no_call_and_the_access_goes_on) {
  sstm_test_init();
  sstm_desc_t *me = sstm_self();
  SSTM_ATOMIC_BEGIN(NULL)
    sstm__exec_request(me);
    sstm_store_u64(&w[0], 5);
    CHECK_EQ_U(sstm_load_u64(&w[0]), 5);
  SSTM_ATOMIC_END();
  CHECK_EQ_U(w[0], 5);
  sstm_test_fini();
}

TEST(region_keeps_a_standing_request_and_replays_it_at_its_end) {
  setup();
  sstm_desc_t *me = sstm_self();
  SSTM_ATOMIC_BEGIN(NULL)
    sstm__exec_nopreempt_enter();
    sstm__exec_nopreempt_enter(); /* nested */
    sstm__exec_request(me);
    (void)sstm_load_u64(&w[0]);
    CHECK_EQ_I(hk.calls, 0);
    CHECK_TRUE(sstm__exec_pending(me)); /* standing */
    CHECK_OK(sstm__exec_nopreempt_leave());
    CHECK_EQ_I(hk.calls, 0); /* still inside the outer region */
    CHECK_OK(sstm__exec_nopreempt_leave());
    CHECK_EQ_I(hk.calls, 1);
    CHECK_EQ_I(hk.where[0], SSTM_EXEC_AT_REGION_END);
    CHECK_FALSE(sstm__exec_pending(me));
  SSTM_ATOMIC_END();
  CHECK_RC(sstm__exec_nopreempt_leave(), SSTM_ESTATE);
  CHECK_CONTAINS(sstm_last_error(), "no non-preemptible region");
  teardown();
}

TEST(cancel_drops_flag_and_standing_request) {
  setup();
  sstm_desc_t *me = sstm_self();
  SSTM_ATOMIC_BEGIN(NULL)
    sstm__exec_nopreempt_enter();
    sstm__exec_request(me);
    (void)sstm_load_u64(&w[0]);
    sstm__exec_request(me);
    CHECK_TRUE(sstm__exec_pending(me));
    sstm__exec_cancel(me);
    CHECK_FALSE(sstm__exec_pending(me));
    CHECK_OK(sstm__exec_nopreempt_leave());
    (void)sstm_load_u64(&w[8]);
  SSTM_ATOMIC_END();
  CHECK_EQ_I(hk.calls, 0);
  teardown();
}

TEST(restart_point_between_a_rollback_and_the_retry) {
  setup();
  sstm_desc_t *me = sstm_self();
  static volatile int attempts;
  attempts = 0;
  SSTM_ATOMIC_BEGIN(NULL)
    attempts++;
    sstm_store_u64(&w[0], (uint64_t)attempts);
    if (attempts == 1) {
      sstm__exec_request(me);
      CHECK_EQ_I(hk.calls, 0);
      sstm_restart(); /* the flag survives the rollback */
    }
  SSTM_ATOMIC_END();
  served_once_at_the_restart(attempts);
  CHECK_EQ_U(w[0], 2);
  teardown();
}

/* A barrier that finds both a kill and a request aborts the attempt and
 * keeps the request for the restart point (9.6): the barrier clears the
 * kill's flag before it looks at the status ((6.3)), but the request's
 * only once it has found the attempt alive. */
TEST(a_killed_attempts_request_is_served_at_the_restart) {
  setup();
  sstm_desc_t *me = sstm_self();
  static volatile int attempts;
  attempts = 0;
  SSTM_ATOMIC_BEGIN(NULL)
    attempts++;
    if (attempts == 1) {
      CHECK_OK(sstm_desc_kill(me, sstm_txid()));
      sstm__exec_request(me);
      (void)sstm_load_u64(&w[0]); /* both flags: aborts */
      FAIL("a killed attempt went on past a barrier");
    }
  SSTM_ATOMIC_END();
  served_once_at_the_restart(attempts);
  killed_once(me);
  teardown();
}

/* The same at the commit point: an update attempt killed before it
 * commits, with a request pending, meets the request before the
 * COMMITTING CAS (preempt_point), where the hook refuses a killed attempt
 * (exec.c, may_switch); the request, made while the attempt ran, is kept
 * for the restart point as at a barrier, not dropped with the flag that
 * preempt_point consumed. */
TEST(a_killed_attempts_request_at_its_commit_is_served_at_the_restart) {
  setup();
  sstm_desc_t *me = sstm_self();
  static volatile int attempts;
  attempts = 0;
  SSTM_ATOMIC_BEGIN(NULL)
    attempts++;
    sstm_store_u64(&w[0], (uint64_t)attempts);
    if (attempts == 1) {
      CHECK_OK(sstm_desc_kill(me, sstm_txid()));
      sstm__exec_request(me); /* no barrier follows: the commit aborts */
    }
  SSTM_ATOMIC_END();
  served_once_at_the_restart(attempts);
  CHECK_FALSE(sstm__exec_pending(me));
  CHECK_EQ_U(w[0], 2);
  killed_once(me);
  teardown();
}

/* And at the end of a non-preemptible region, which replays a request
 * that came after the region's last polled point: for a killed attempt
 * the request is kept, and served once the next barrier has rolled the
 * attempt back. */
TEST(a_killed_attempts_request_at_a_regions_end_is_served_at_the_restart) {
  setup();
  sstm_desc_t *me = sstm_self();
  static volatile int attempts;
  attempts = 0;
  SSTM_ATOMIC_BEGIN(NULL)
    attempts++;
    if (attempts == 1) {
      sstm__exec_nopreempt_enter();
      CHECK_OK(sstm_desc_kill(me, sstm_txid()));
      sstm__exec_request(me);
      CHECK_OK(sstm__exec_nopreempt_leave()); /* refused: killed */
      CHECK_EQ_I(hk.calls, 0);
      (void)sstm_load_u64(&w[0]); /* the kill rolls it back */
      FAIL("a killed attempt went on past a barrier");
    }
  SSTM_ATOMIC_END();
  served_once_at_the_restart(attempts);
  CHECK_FALSE(sstm__exec_pending(me));
  teardown();
}

/* An attempt that aborts inside a region leaves the region with its
 * frames (sstm__abort_tx): the retry starts with none open, and a request
 * the region kept standing is served at the restart point, as its end
 * would have served it. */
TEST(an_abort_closes_the_region_and_serves_its_standing_request_at_the_restart) {
  setup();
  sstm_desc_t *me = sstm_self();
  static volatile int attempts;
  attempts = 0;
  SSTM_ATOMIC_BEGIN(NULL)
    attempts++;
    if (attempts == 1) {
      sstm__exec_nopreempt_enter();
      sstm__exec_request(me);
      (void)sstm_load_u64(&w[0]);
      CHECK_EQ_I(hk.calls, 0);
      CHECK_TRUE(sstm__exec_pending(me)); /* standing */
      sstm_restart();
    }
    CHECK_RC(sstm__exec_nopreempt_leave(), SSTM_ESTATE); /* none open */
  SSTM_ATOMIC_END();
  served_once_at_the_restart(attempts);
  CHECK_FALSE(sstm__exec_pending(me));
  teardown();
}

TEST(commit_point_before_an_update_commit) {
  setup();
  sstm_desc_t *me = sstm_self();
  SSTM_ATOMIC_BEGIN(NULL)
    sstm_store_u64(&w[0], 9);
    sstm__exec_request(me);
  SSTM_ATOMIC_END();
  CHECK_EQ_I(hk.calls, 1);
  CHECK_EQ_I(hk.where[0], SSTM_EXEC_AT_COMMIT);
  CHECK_EQ_U(w[0], 9);
  teardown();
}

TEST(irrevocable_attempt_is_not_preempted) {
  setup();
  sstm_desc_t *me = sstm_self();
  sstm_attr_t a = {.irrevocable = true};
  SSTM_ATOMIC_BEGIN(&a)
    sstm__exec_request(me);
    sstm_store_u64(&w[0], 4);
    (void)sstm_load_u64(&w[8]);
  SSTM_ATOMIC_END();
  CHECK_EQ_I(hk.calls, 0);
  teardown();
}

TEST(signal_handler_test) {
  setup();
  sstm_desc_t *me = sstm_self();
  int on_stack = 0;
  uintptr_t user_pc = (uintptr_t)(void *)&on_stack; /* in no executable segment */
  CHECK_FALSE(sstm__exec_pc_in_engine(user_pc));
  CHECK_TRUE(sstm__exec_pc_in_engine((uintptr_t)(void *)&sstm_load_u64));
  CHECK_FALSE(sstm__exec_preemptible_now(user_pc)); /* no transaction */
  SSTM_ATOMIC_BEGIN(NULL)
    CHECK_TRUE(sstm__exec_preemptible_now(user_pc));
    CHECK_FALSE(sstm__exec_pending(me));
    /* in the engine's code: not now, and the polled points take over */
    CHECK_FALSE(sstm__exec_preemptible_now((uintptr_t)(void *)&sstm_load_u64));
    CHECK_TRUE(sstm__exec_pending(me));
    sstm__exec_cancel(me);
    sstm__exec_nopreempt_enter();
    CHECK_FALSE(sstm__exec_preemptible_now(user_pc));
    CHECK_TRUE(sstm__exec_pending(me)); /* set by the test: no standing one yet */
    /* no polled point after it in the region: the region's end replays
     * the flag, and consumes it */
    CHECK_OK(sstm__exec_nopreempt_leave());
    CHECK_EQ_I(hk.calls, 1);
    CHECK_FALSE(sstm__exec_pending(me));
    (void)sstm_load_u64(&w[0]); /* nothing left for the next polled point */
    CHECK_EQ_I(hk.calls, 1);
  SSTM_ATOMIC_END();
  sstm_attr_t a = {.irrevocable = true};
  SSTM_ATOMIC_BEGIN(&a)
    CHECK_FALSE(sstm__exec_preemptible_now(user_pc));
    sstm__exec_cancel(me);
  SSTM_ATOMIC_END();
  teardown();
}

static void other_hook(sstm_desc_t *self, sstm_exec_point_t where, sstm_desc_t *blocker) {
  (void)self, (void)where, (void)blocker;
}

TEST(interface_errors) {
  setup();
  CHECK_RC(sstm__exec_set_hook(other_hook), SSTM_EBUSY);
  CHECK_CONTAINS(sstm_last_error(), "another executor's hook");
  CHECK_OK(sstm__exec_set_hook(rec_hook)); /* the same one again */
  CHECK_RC(sstm__exec_set_paused_rule((sstm_exec_paused_rule_t)7), SSTM_EINVAL);
  CHECK_CONTAINS(sstm_last_error(), "7 is not a rule");
  CHECK_RC(sstm__exec_mark_paused(NULL, true), SSTM_EINVAL);
  sstm_desc_t *me = sstm_self();
  sstm__exec_set_priority(me, 4);
  CHECK_EQ_I(sstm__exec_priority(me), 4);
  teardown();
}

/* ---- a hook that switches the transaction to another thread ---- */

static struct {
  ucontext_t worker_a, worker_b, tx;
  sstm_desc_t *d;
  _Atomic int phase; /* 1: switched out on A, 2: resumed on B, 3: done */
  int tid_begin, tid_commit;
} sw;

static void switch_hook(sstm_desc_t *self, sstm_exec_point_t where, sstm_desc_t *blocker) {
  (void)blocker;
  CHECK_EQ_I(where, SSTM_EXEC_AT_BARRIER);
  CHECK_EQ_PTR(sstm_desc_detach(), self);
  CHECK_TRUE(sstm__exec_is_paused(self));
  CHECK_EQ_I(swapcontext(&sw.tx, &sw.worker_a), 0); /* back on A's own stack */
  /* on B now, which attached the descriptor */
  CHECK_EQ_PTR(sstm_self(), self);
  CHECK_FALSE(sstm__exec_is_paused(self));
}

static void sw_body(void) {
  SSTM_ATOMIC_BEGIN(NULL)
    sw.tid_begin = (int)gettid();
    sstm_store_u64(&w[0], 1);
    sstm__exec_request(sw.d);
    uint64_t v = sstm_load_u64(&w[8]); /* switched out here, goes on on B */
    sstm_store_u64(&w[16], v + 1);
    sw.tid_commit = (int)gettid();
  SSTM_ATOMIC_END();
  CHECK_EQ_PTR(sstm_desc_detach(), sw.d);
  atomic_store_explicit(&sw.phase, 3, memory_order_seq_cst);
  /* returns to uc_link: worker B's context */
}

static void *worker_a(void *arg) {
  (void)arg;
  static char stack[256 * 1024] __attribute__((aligned(64)));
  CHECK_OK(sstm_desc_attach(sw.d));
  CHECK_EQ_I(getcontext(&sw.tx), 0);
  sw.tx.uc_stack.ss_sp = stack;
  sw.tx.uc_stack.ss_size = sizeof stack;
  sw.tx.uc_link = &sw.worker_b;
  makecontext(&sw.tx, sw_body, 0);
  CHECK_EQ_I(swapcontext(&sw.worker_a, &sw.tx), 0);
  CHECK_NULL(sstm_self()); /* the hook detached it */
  atomic_store_explicit(&sw.phase, 1, memory_order_seq_cst);
  return NULL;
}

static void *worker_b(void *arg) {
  (void)arg;
  while (atomic_load_explicit(&sw.phase, memory_order_seq_cst) != 1)
    sstm_test_relax();
  CHECK_OK(sstm_desc_attach(sw.d));
  CHECK_EQ_I(swapcontext(&sw.worker_b, &sw.tx), 0);
  CHECK_EQ_I(atomic_load_explicit(&sw.phase, memory_order_seq_cst), 3);
  return NULL;
}

TEST(hook_switches_the_transaction_to_another_thread) {
#ifdef SSTM__TSAN
  sstm_test_skip("TSan's runtime does not follow swapcontext");
#endif
  sstm_test_init();
  CHECK_OK(sstm__exec_set_hook(switch_hook));
  CHECK_OK(sstm_desc_create(&sw.d));
  w[8] = 41;
  pthread_t a, b;
  CHECK_EQ_I(pthread_create(&b, NULL, worker_b, NULL), 0);
  CHECK_EQ_I(pthread_create(&a, NULL, worker_a, NULL), 0);
  CHECK_EQ_I(pthread_join(a, NULL), 0);
  CHECK_EQ_I(pthread_join(b, NULL), 0);
  CHECK_NE_I(sw.tid_begin, sw.tid_commit);
  CHECK_EQ_U(w[0], 1);
  CHECK_EQ_U(w[16], 42);
  sstm_stats_t s;
  CHECK_OK(sstm_stats_get(sw.d, &s));
  CHECK_EQ_U(s.commits_update, 1);
  CHECK_OK(sstm_desc_destroy(sw.d));
  CHECK_OK(sstm__exec_set_hook(NULL));
  sstm_test_fini();
}

/* ---- (c) paused holders ---- */

static void write_w0_w8(void *arg) {
  (void)arg;
  sstm_store_u64(&w[0], sstm_load_u64(&w[0]) + 100);
}

/* suicide (the default) used to abort the writer for ever against a
 * suspended holder: run_other never returned. */
TEST_ETL(paused_holder_is_taken_over_and_rolls_back_on_resume) {
  sstm_test_init();
  sstm_desc_t *me = sstm_self();
  static volatile int attempts;
  attempts = 0;
  w[0] = 1;
  SSTM_ATOMIC_BEGIN(NULL)
    attempts++;
    sstm_store_u64(&w[0], sstm_load_u64(&w[0]) + 1);
    sstm_store_u64(&w[8], 7);
    sstm_store_u64(&w[16], 7);
    if (attempts == 1) {
      CHECK_OK(run_other(NULL, write_w0_w8, NULL)); /* we are paused meanwhile */
      CHECK_EQ_U(w[0], 101);
      /* all three locks were released at once, none is held any more */
      sstm_stats_t so;
      CHECK_OK(sstm_stats_get(txh_other_desc(), &so));
      CHECK_EQ_U(so.locks_stolen, 3);
      CHECK_EQ_U(so.cm_kills, 1);
      CHECK_EQ_U(so.commits_update, 1);
      (void)sstm_load_u64(&w[24]); /* the kill is noticed here: restart */
      FAIL("a killed attempt went on past a barrier");
    }
  SSTM_ATOMIC_END();
  CHECK_EQ_I(attempts, 2);
  CHECK_EQ_U(w[0], 102);
  killed_once(me);
  txh_cleanup();
  sstm_test_fini();
}

TEST_ETL(marked_holder_is_taken_over_and_unmark_waits_for_it) {
  sstm_test_init();
  sstm_desc_t *me = sstm_self();
  static volatile int attempts;
  attempts = 0;
  w[0] = 1;
  SSTM_ATOMIC_BEGIN(NULL)
    attempts++;
    sstm_store_u64(&w[0], 5);
    if (attempts == 1) {
      CHECK_OK(sstm__exec_mark_paused(me, true));
      CHECK_TRUE(sstm__exec_is_paused(me));
      CHECK_OK(run_other_attached(NULL, write_w0_w8, NULL)); /* attached, but marked */
      CHECK_OK(sstm__exec_mark_paused(me, false));
      CHECK_FALSE(sstm__exec_is_paused(me));
      CHECK_EQ_U(w[0], 101);
      sstm_store_u64(&w[8], 1); /* the kill is noticed here: restart */
      FAIL("a killed attempt went on past a barrier");
    }
  SSTM_ATOMIC_END();
  CHECK_EQ_I(attempts, 2);
  CHECK_EQ_U(w[0], 5);
  txh_cleanup();
  sstm_test_fini();
}

/* Paused at a polled point: the reaper puts the old versions back (9.4),
 * and the attempt, resumed where its kill is checked first, restarts. */
static uint64_t pp_old16, pp_seen16;
static void pp_hook(sstm_desc_t *self, sstm_exec_point_t where, sstm_desc_t *blocker) {
  (void)where, (void)blocker;
  CHECK_EQ_PTR(sstm_desc_detach(), self);
  CHECK_OK(sstm_desc_attach(txh_other_desc()));
  CHECK_OK(sstm_run(NULL, write_w0_w8, NULL)); /* takes self's locks over */
  pp_seen16 = atomic_load_explicit(sstm__lock_for(self, &w[16]), memory_order_seq_cst);
  CHECK_EQ_PTR(sstm_desc_detach(), txh_other_desc());
  CHECK_OK(sstm_desc_attach(self));
}

TEST_ETL(polled_pause_gets_the_old_versions_back) {
  sstm_test_init();
  CHECK_OK(sstm__exec_set_hook(pp_hook));
  sstm_desc_t *me = sstm_self();
  tx_store_u64(&w[16], 3); /* a version of its own */
  pp_old16 = atomic_load_explicit(sstm__lock_for(me, &w[16]), memory_order_seq_cst);
  static volatile int attempts;
  attempts = 0;
  SSTM_ATOMIC_BEGIN(NULL)
    attempts++;
    sstm_store_u64(&w[16], 4);
    sstm_store_u64(&w[0], 4);
    if (attempts == 1) {
      sstm__exec_request(me);
      (void)sstm_load_u64(&w[24]); /* switched out, taken over, restarts */
      FAIL("a killed attempt went on past a barrier");
    }
  SSTM_ATOMIC_END();
  CHECK_EQ_I(attempts, 2);
  CHECK_EQ_X(pp_seen16, pp_old16);
  CHECK_EQ_U(w[0], 4);
  killed_once(me);
  CHECK_OK(sstm__exec_set_hook(NULL));
  txh_cleanup();
  sstm_test_fini();
}

/* Paused anywhere but at a polled point (here a detach in the body; a
 * signal-driven switch may resume even half-way through the inline read,
 * after its variant test): the reaper gives every lock of the attempt one
 * fresh version from the clock (9.4), which no read of its snapshot
 * accepts. With the displaced versions put back, as at a polled point, the
 * read fast path that the inline read runs once its variant test has
 * passed (sstm__load_fast) accepted the memory under a stripe the attempt
 * had written: the value before its own write, which its redo log holds. */
static void read_w16(void *arg) {
  (void)arg;
  CHECK_EQ_U(sstm_load_u64(&w[16]), 3);
}

TEST_ETL(a_pause_elsewhere_gets_one_fresh_version) {
  sstm_test_init();
  sstm_desc_t *me = sstm_self();
  sstm__fast_t *f = (sstm__fast_t *)(void *)me;
  _Atomic uint64_t *lk = sstm__lock_for(me, &w[16]);
  tx_store_u64(&w[16], 3); /* a version of its own */
  uint64_t old16 = atomic_load_explicit(lk, memory_order_seq_cst);
  static volatile int attempts;
  attempts = 0;
  SSTM_ATOMIC_BEGIN(NULL)
    attempts++;
    sstm_store_u64(&w[16], 4);
    if (attempts == 1) {
      CHECK_EQ_X(atomic_load_explicit(lk, memory_order_seq_cst), me->owner_lw);
      /* detached (paused, not at a polled point); a reader takes it over */
      CHECK_OK(run_other(NULL, read_w16, NULL));
      uint64_t l = atomic_load_explicit(lk, memory_order_seq_cst);
      CHECK_FALSE(sstm_lw_locked(l));
      CHECK_GT_U(l, old16);
      CHECK_GT_U(l, me->end);
      /* as the inline read resumed after its variant test would */
      uint64_t v = 0;
      CHECK_FALSE(sstm__load_fast(f, &w[16], 8, true, &v));
      (void)sstm_load_u64(&w[16]); /* the kill is noticed here: restart */
      FAIL("a killed attempt went on past a barrier");
    }
  SSTM_ATOMIC_END();
  CHECK_EQ_I(attempts, 2);
  CHECK_EQ_U(w[16], 4);
  killed_once(me);
  txh_cleanup();
  sstm_test_fini();
}

/* A lock taken over while its owner ran is the thief's: neither the
 * reaper that later takes the paused owner's other locks over (9.4) nor
 * the owner's own rollback (6.5) may touch it, which both make sure of by
 * releasing with a CAS from the owner's word. The owner A writes w[0] and
 * w[8]; a thread B kills it (A is attached, not paused) and takes w[0]
 * over by writing it, and holds it running; A is then detached, and a
 * reader of w[8] on a third descriptor reaps it. With a plain store, the
 * reaper gave w[0] a version, unlocked, under B's running attempt, which
 * another writer could then lock and commit before B wrote back over it;
 * and once B has committed, A's rollback put w[0]'s version before B's
 * back, so that a snapshot older than B's commit read B's value. */
static _Atomic int tk_phase; /* 1: B holds w[0]; 2: B may commit; 3: committed */
static uint64_t tk_a_txid, tk_b_owner, tk_b_version;
static sstm_desc_t *tk_b;
static void *tk_thief(void *arg) {
  sstm_desc_t *a = arg;
  CHECK_OK(sstm_desc_attach(tk_b));
  SSTM_ATOMIC_BEGIN(NULL)
    CHECK_OK(sstm_desc_kill(a, tk_a_txid)); /* A runs, attached: a kill, no reap */
    sstm_store_u64(&w[0], 50);              /* takes A's lock over (6.4) */
    tk_b_owner = tk_b->owner_lw;
    atomic_store_explicit(&tk_phase, 1, memory_order_release);
    while (atomic_load_explicit(&tk_phase, memory_order_acquire) != 2)
      sched_yield();
  SSTM_ATOMIC_END();
  tk_b_version = atomic_load_explicit(sstm__lock_for(tk_b, &w[0]), memory_order_seq_cst);
  atomic_store_explicit(&tk_phase, 3, memory_order_release);
  CHECK_EQ_PTR(sstm_desc_detach(), tk_b);
  return NULL;
}
static void read_w8(void *arg) {
  (void)arg;
  CHECK_EQ_U(sstm_load_u64(&w[8]), 0);
}

TEST_ETL(a_lock_taken_over_before_the_pause_stays_the_thiefs) {
  sstm_test_init();
  sstm_desc_t *me = sstm_self();
  CHECK_OK(sstm_desc_create(&tk_b));
  _Atomic uint64_t *lk0 = sstm__lock_for(me, &w[0]);
  w[0] = w[8] = 0;
  atomic_store_explicit(&tk_phase, 0, memory_order_relaxed);
  static volatile int attempts;
  attempts = 0;
  pthread_t th;
  SSTM_ATOMIC_BEGIN(NULL)
    attempts++;
    if (attempts == 2) {
      /* A's rollback left w[0] to B's commit */
      CHECK_EQ_X(atomic_load_explicit(lk0, memory_order_seq_cst), tk_b_version);
    }
    sstm_store_u64(&w[0], 60);
    sstm_store_u64(&w[8], 60);
    if (attempts == 1) {
      tk_a_txid = sstm_txid();
      CHECK_EQ_I(pthread_create(&th, NULL, tk_thief, me), 0);
      while (atomic_load_explicit(&tk_phase, memory_order_acquire) != 1)
        sched_yield();
      CHECK_EQ_X(atomic_load_explicit(lk0, memory_order_seq_cst), tk_b_owner);
      /* paused now, and killed: the reader takes w[8] over, and all of A's
       * locks with it, but w[0] is no longer A's */
      CHECK_OK(run_other(NULL, read_w8, NULL));
      CHECK_EQ_X(atomic_load_explicit(lk0, memory_order_seq_cst), tk_b_owner);
      CHECK_FALSE(
          sstm_lw_locked(atomic_load_explicit(sstm__lock_for(me, &w[8]), memory_order_seq_cst)));
      atomic_store_explicit(&tk_phase, 2, memory_order_release);
      while (atomic_load_explicit(&tk_phase, memory_order_acquire) != 3)
        sched_yield();
      CHECK_EQ_I(pthread_join(th, NULL), 0);
      (void)sstm_load_u64(&w[16]); /* the kill is noticed here: restart */
      FAIL("a killed attempt went on past a barrier");
    }
  SSTM_ATOMIC_END();
  CHECK_EQ_I(attempts, 2);
  CHECK_EQ_U(w[0], 60);
  CHECK_EQ_U(w[8], 60);
  killed_once(me);
  sstm_stats_t s;
  CHECK_OK(sstm_stats_get(tk_b, &s));
  CHECK_EQ_U(s.locks_stolen, 1);
  CHECK_OK(sstm_stats_get(txh_other_desc(), &s));
  CHECK_EQ_U(s.locks_stolen, 1); /* w[8] alone */
  CHECK_OK(sstm_desc_destroy(tk_b));
  txh_cleanup();
  sstm_test_fini();
}

/* An attempt switched out at SSTM_EXEC_AT_BLOCKED (offered to the
 * executor in resolve, under SSTM_EXEC_PAUSED_ASK) is paused at a polled
 * point: a reaper puts its locks' displaced versions back (9.4), and
 * resolve checks the kill before anything else once the hook returns
 * (9.6), whatever became of the lock it was blocked on. Three descriptors
 * on one thread: M writes w[0] and is switched out at a barrier (the
 * hook, for M, runs B); B writes w[8], meets M's lock on w[0] and is
 * switched out there (the hook, for B, runs C); C reads w[8] and w[0] and
 * so takes both paused attempts over, each with its old versions. B then
 * resumes and finds w[0] free, at a version its snapshot covers: it used
 * to return to its store, lock w[0] and go on with its body, killed. */
static struct {
  sstm_desc_t *m, *b, *c;
  uint64_t x_old, y_old, x_seen, y_seen;
  int m_attempts, b_attempts, b_past, c_runs;
} bk;
static void bk_c_body(void *arg) {
  (void)arg;
  bk.c_runs++;
  CHECK_EQ_U(sstm_load_u64(&w[8]), 1); /* takes B over */
  CHECK_EQ_U(sstm_load_u64(&w[0]), 1); /* takes M over */
}
static void bk_b_body(void *arg) {
  (void)arg;
  bk.b_attempts++;
  sstm_store_u64(&w[8], 30);
  sstm_store_u64(&w[0], 30); /* M's lock: offered to the executor */
  if (bk.b_attempts == 1) bk.b_past++;
}
static void bk_hook(sstm_desc_t *self, sstm_exec_point_t where, sstm_desc_t *blocker) {
  if (self == bk.m && where == SSTM_EXEC_AT_BARRIER) {
    CHECK_EQ_PTR(sstm_desc_detach(), bk.m);
    CHECK_OK(sstm_desc_attach(bk.b));
    CHECK_OK(sstm_run(NULL, bk_b_body, NULL));
    CHECK_EQ_PTR(sstm_desc_detach(), bk.b);
    CHECK_OK(sstm_desc_attach(bk.m));
  } else if (self == bk.b && where == SSTM_EXEC_AT_BLOCKED && bk.c_runs == 0) {
    CHECK_EQ_PTR(blocker, bk.m);
    CHECK_EQ_PTR(sstm_desc_detach(), bk.b);
    CHECK_OK(sstm_desc_attach(bk.c));
    CHECK_OK(sstm_run(NULL, bk_c_body, NULL));
    bk.x_seen = atomic_load_explicit(sstm__lock_for(bk.c, &w[0]), memory_order_seq_cst);
    bk.y_seen = atomic_load_explicit(sstm__lock_for(bk.c, &w[8]), memory_order_seq_cst);
    CHECK_EQ_PTR(sstm_desc_detach(), bk.c);
    CHECK_OK(sstm_desc_attach(bk.b));
  } /* else (C blocked on B and on M, B's retry on M): not switched */
}

TEST_ETL(an_attempt_switched_out_while_blocked_is_taken_over_and_stops) {
  sstm_test_init();
  CHECK_OK(sstm__exec_set_hook(bk_hook));
  CHECK_OK(sstm__exec_set_paused_rule(SSTM_EXEC_PAUSED_ASK));
  memset(&bk, 0, sizeof bk);
  bk.m = sstm_self();
  bk.b = txh_other_desc();
  CHECK_OK(sstm_desc_create(&bk.c));
  tx_store_u64(&w[0], 1); /* versions of their own */
  tx_store_u64(&w[8], 1);
  bk.x_old = atomic_load_explicit(sstm__lock_for(bk.m, &w[0]), memory_order_seq_cst);
  bk.y_old = atomic_load_explicit(sstm__lock_for(bk.m, &w[8]), memory_order_seq_cst);
  SSTM_ATOMIC_BEGIN(NULL)
    bk.m_attempts++;
    sstm_store_u64(&w[0], 20);
    if (bk.m_attempts == 1) {
      sstm__exec_request(bk.m);
      (void)sstm_load_u64(&w[16]); /* switched out; B and C run; restarts */
      FAIL("a killed attempt went on past a barrier");
    }
  SSTM_ATOMIC_END();
  CHECK_EQ_I(bk.c_runs, 1);
  CHECK_EQ_X(bk.x_seen, bk.x_old); /* M's lock: paused at a barrier */
  CHECK_EQ_X(bk.y_seen, bk.y_old); /* B's lock: paused in resolve */
  CHECK_EQ_I(bk.b_past, 0);        /* B stopped in resolve */
  CHECK_EQ_I(bk.b_attempts, 2);
  CHECK_EQ_I(bk.m_attempts, 2);
  CHECK_EQ_U(w[0], 20);
  CHECK_EQ_U(w[8], 30);
  sstm_stats_t s;
  CHECK_OK(sstm_stats_get(bk.b, &s));
  CHECK_EQ_U(s.aborts[SSTM_ABORT_KILLED], 1);
  CHECK_EQ_U(s.commits_update, 1);
  CHECK_OK(sstm_stats_get(bk.m, &s));
  CHECK_EQ_U(s.aborts[SSTM_ABORT_KILLED], 1);
  CHECK_OK(sstm_stats_get(bk.c, &s));
  CHECK_EQ_U(s.locks_stolen, 2);
  CHECK_EQ_U(s.cm_kills, 2);
  CHECK_OK(sstm_desc_destroy(bk.c));
  teardown();
}

/* A holder that is running, not paused (its thread merely waits), still
 * goes to the policy: suicide makes the writer abort itself. */
static volatile int lw_attempts;
static void limited_writer(void *arg) {
  (void)arg;
  if (++lw_attempts > 3) sstm_cancel();
  sstm_store_u64(&w[0], 100);
}

TEST_ETL(running_holder_still_goes_to_the_policy) {
  sstm_test_init();
  lw_attempts = 0;
  SSTM_ATOMIC_BEGIN(NULL)
    sstm_store_u64(&w[0], 5);
    CHECK_RC(run_other_attached(NULL, limited_writer, NULL), SSTM_ECANCELED);
  SSTM_ATOMIC_END();
  CHECK_EQ_U(w[0], 5);
  txh_cleanup();
  sstm_test_fini();
}

TEST_ETL(wait_higher_offers_the_worker_once_then_takes_over) {
  setup();
  CHECK_OK(sstm__exec_set_paused_rule(SSTM_EXEC_PAUSED_WAIT_HIGHER));
  sstm_desc_t *me = sstm_self();
  static volatile int attempts;
  attempts = 0;
  sstm_attr_t hi = {.priority = 5}, lo = {.priority = 1};
  SSTM_ATOMIC_BEGIN(&hi)
    attempts++;
    sstm_store_u64(&w[0], 5);
    if (attempts == 1) {
      CHECK_OK(run_other(&lo, write_w0_w8, NULL));
      CHECK_EQ_I(hk.calls, 1);
      CHECK_EQ_I(hk.where[0], SSTM_EXEC_AT_BLOCKED);
      CHECK_EQ_PTR(hk.self[0], txh_other_desc());
      CHECK_EQ_PTR(hk.blocker[0], me);
      (void)sstm_load_u64(&w[8]);
      FAIL("a killed attempt went on past a barrier");
    }
  SSTM_ATOMIC_END();
  /* a lower-priority holder is taken over at once */
  hk.calls = 0;
  attempts = 0;
  SSTM_ATOMIC_BEGIN(&lo)
    attempts++;
    sstm_store_u64(&w[0], 6);
    if (attempts == 1) {
      CHECK_OK(run_other(&hi, write_w0_w8, NULL));
      CHECK_EQ_I(hk.calls, 0);
    }
  SSTM_ATOMIC_END();
  CHECK_EQ_I(attempts, 2);
  CHECK_EQ_U(w[0], 6);
  teardown();
}

/* SSTM_EXEC_PAUSED_ASK: the worker is offered once whatever the
 * priorities (the executor decides); a hook that returns with the holder
 * still paused lets the engine take it over. */
TEST_ETL(ask_offers_the_worker_once_whatever_the_priorities) {
  setup();
  CHECK_OK(sstm__exec_set_paused_rule(SSTM_EXEC_PAUSED_ASK));
  sstm_desc_t *me = sstm_self();
  static volatile int attempts;
  sstm_attr_t hi = {.priority = 5}, lo = {.priority = 1};
  for (int round = 0; round < 2; round++) {
    /* round 0: the paused holder has the lower priority; 1: the higher */
    hk.calls = 0;
    attempts = 0;
    SSTM_ATOMIC_BEGIN(round == 0 ? &lo : &hi)
      attempts++;
      sstm_store_u64(&w[0], 7);
      if (attempts == 1) {
        CHECK_OK(run_other(round == 0 ? &hi : &lo, write_w0_w8, NULL));
        CHECK_EQ_I(hk.calls, 1);
        CHECK_EQ_I(hk.where[0], SSTM_EXEC_AT_BLOCKED);
        CHECK_EQ_PTR(hk.self[0], txh_other_desc());
        CHECK_EQ_PTR(hk.blocker[0], me);
        (void)sstm_load_u64(&w[8]);
        FAIL("a killed attempt went on past a barrier");
      }
    SSTM_ATOMIC_END();
    CHECK_EQ_I(attempts, 2);
    CHECK_EQ_U(w[0], 7);
  }
  CHECK_RC(sstm__exec_set_paused_rule((sstm_exec_paused_rule_t)3), SSTM_EINVAL);
  teardown();
}

/* ---- (d) waiting outside the barriers (9.7) ---- */

/* Only a revocable attempt that holds locks is marked: outside a
 * transaction, before its first write, under commit-time locking (whose
 * lock set is empty during the body) and in an irrevocable attempt, begin
 * returns false and sets nothing. Kills a begin that marks without looking
 * at the lock set, the depth or the kind. */
static void wait_begin_marks(void *arg) {
  sstm_desc_t *me = sstm_self();
  bool etl = *(bool *)arg;
  CHECK_FALSE(sstm__attempt_wait_begin()); /* nothing written yet */
  (void)sstm_load_u64(&w[0]);
  CHECK_FALSE(sstm__attempt_wait_begin()); /* a read holds no lock */
  sstm_store_u64(&w[0], 1);
  bool marked = sstm__attempt_wait_begin();
  CHECK_EQ_I(marked, etl);
  CHECK_EQ_I((atomic_load_explicit(&me->pause, memory_order_seq_cst) & SSTM_PAUSE_WAITING) != 0,
             etl);
  /* a waiting attempt is no executor's: not shown as paused by one */
  CHECK_FALSE(sstm__exec_is_paused(me));
  sstm__attempt_wait_end(marked);
  CHECK_EQ_U(atomic_load_explicit(&me->pause, memory_order_seq_cst), 0);
  sstm__attempt_check(); /* nobody killed it: goes on */
}
static void wait_begin_irrev(void *arg) {
  (void)arg;
  sstm_store_u64(&w[0], 2);
  CHECK_FALSE(sstm__attempt_wait_begin());
}
static void wait_begin_is_for_lock_holders(bool etl) {
  sstm_test_init();
  CHECK_FALSE(sstm__attempt_wait_begin()); /* outside a transaction */
  sstm__attempt_wait_end(false);
  CHECK_OK(sstm_run(NULL, wait_begin_marks, &etl));
  sstm_attr_t irrev = {.irrevocable = true};
  CHECK_OK(sstm_run(&irrev, wait_begin_irrev, NULL));
  CHECK_EQ_U(w[0], 2);
  sstm_test_fini();
}
TEST_ETL(a_wait_marks_an_attempt_holding_locks_only) { wait_begin_is_for_lock_holders(true); }
TEST_CTL(a_wait_under_commit_time_locking_is_not_marked) { wait_begin_is_for_lock_holders(false); }

/* The check after a wait keeps the snapshot of a declared read-only
 * attempt without a read set (SSTM_V_RO), which it cannot validate: its
 * next read of data committed meanwhile aborts it (SSTM_ABORT_RO_EXTEND),
 * as a barrier would, and its retry, with a read set, reads both words of
 * one commit. Kills a check that extends such an attempt over its empty
 * read set (it read the new w[8] beside the old w[0]). */
static void bump_w0_w8(void *arg) {
  (void)arg;
  sstm_store_u64(&w[0], sstm_load_u64(&w[0]) + 1);
  sstm_store_u64(&w[8], sstm_load_u64(&w[8]) + 1);
}
static void ro_check_keeps_the_snapshot(void) {
  sstm_test_init(); /* cfg.ro_log off: a first read-only attempt has no read set */
  w[0] = w[8] = 0;
  static volatile int attempts;
  static uint64_t seen0, seen8;
  attempts = 0;
  sstm_attr_t ro = {.read_only = true};
  SSTM_ATOMIC_BEGIN(&ro)
    attempts++;
    uint64_t x = sstm_load_u64(&w[0]);
    if (attempts == 1) {
      CHECK_OK(run_other_attached(NULL, bump_w0_w8, NULL));
      sstm__attempt_check();
    }
    uint64_t y = sstm_load_u64(&w[8]);
    seen0 = x, seen8 = y;
  SSTM_ATOMIC_END();
  CHECK_EQ_U(seen0, seen8);
  CHECK_EQ_I(attempts, 2);
  sstm_stats_t st;
  CHECK_OK(sstm_stats_get(sstm_self(), &st));
  CHECK_EQ_U(st.aborts[SSTM_ABORT_RO_EXTEND], 1);
  txh_cleanup();
  sstm_test_fini();
}
TEST_ETL(a_wait_check_keeps_the_snapshot_of_a_read_only_attempt_etl) {
  ro_check_keeps_the_snapshot();
}
TEST_CTL(a_wait_check_keeps_the_snapshot_of_a_read_only_attempt_ctl) {
  ro_check_keeps_the_snapshot();
}

/* A holder waiting outside the barriers is taken over under suicide (a
 * policy that never kills a holder), its locks released with the versions
 * they displaced, as at a polled point (9.4): it resumes at the end of its
 * wait, whose check comes first and rolls it back. Kills: a reaper that
 * gives a waiter's locks a fresh version (restore from POLLED alone; the
 * lock word check), is_paused without WAITING (run_other_attached then
 * restarts for ever: the watchdog), an end that does not wait out the
 * reaper or a check that misses the kill (the FAIL). */
TEST_ETL(a_waiting_holder_is_taken_over_with_the_displaced_versions) {
  sstm_test_init();
  sstm_desc_t *me = sstm_self();
  _Atomic uint64_t *lk = sstm__lock_for(me, &w[16]);
  tx_store_u64(&w[16], 3); /* a version of its own */
  uint64_t old16 = atomic_load_explicit(lk, memory_order_seq_cst);
  w[0] = 1;
  static volatile int attempts;
  attempts = 0;
  SSTM_ATOMIC_BEGIN(NULL)
    attempts++;
    sstm_store_u64(&w[16], 4);
    sstm_store_u64(&w[0], 5);
    if (attempts == 1) {
      bool marked = sstm__attempt_wait_begin();
      CHECK_TRUE(marked);
      /* attached, waiting; another thread meets w[0]'s lock */
      CHECK_OK(run_other_attached(NULL, write_w0_w8, NULL));
      CHECK_EQ_X(atomic_load_explicit(lk, memory_order_seq_cst), old16);
      CHECK_EQ_U(w[0], 101);
      sstm_stats_t so;
      CHECK_OK(sstm_stats_get(txh_other_desc(), &so));
      CHECK_EQ_U(so.locks_stolen, 2);
      CHECK_EQ_U(so.cm_kills, 1);
      CHECK_EQ_U(so.commits_update, 1);
      CHECK_EQ_U(so.aborts_total, 0);
      sstm__attempt_wait_end(marked);
      sstm__attempt_check(); /* the kill is noticed here: restart */
      FAIL("a killed waiter went on past its check");
    }
  SSTM_ATOMIC_END();
  CHECK_EQ_I(attempts, 2);
  CHECK_EQ_U(w[0], 5);
  CHECK_EQ_U(w[16], 4);
  killed_once(me);
  txh_cleanup();
  sstm_test_fini();
}

/* A waiting holder is no executor's: under SSTM_EXEC_PAUSED_ASK (which
 * offers the worker for any holder an executor paused) the thread that
 * meets its lock takes it over without offering the worker (9.7). Kills
 * resolve's offer made on is_paused instead of exec_paused. */
TEST_ETL(a_waiting_holder_is_not_offered_to_the_executor) {
  setup();
  CHECK_OK(sstm__exec_set_paused_rule(SSTM_EXEC_PAUSED_ASK));
  static volatile int attempts;
  attempts = 0;
  SSTM_ATOMIC_BEGIN(NULL)
    attempts++;
    sstm_store_u64(&w[0], 7);
    if (attempts == 1) {
      bool marked = sstm__attempt_wait_begin();
      CHECK_TRUE(marked);
      CHECK_OK(run_other_attached(NULL, write_w0_w8, NULL));
      CHECK_EQ_I(hk.calls, 0);
      sstm__attempt_wait_end(marked);
      sstm__attempt_check();
      FAIL("a killed waiter went on past its check");
    }
  SSTM_ATOMIC_END();
  CHECK_EQ_I(attempts, 2);
  CHECK_EQ_U(w[0], 7);
  teardown();
}

/* Nor is a waiting attempt named to a policy as the killer of another
 * (9.7, as (9) for a paused one): a policy that serialises its retry
 * behind the killer (ser-*, softser) would wait, up to its bound, for an
 * attempt that waits for something outside the memory, perhaps for what
 * that very retry would send. K kills V's attempt, then waits holding a
 * lock; V notices the kill while K waits. Kills sstm__killer_of ignoring
 * DETACHED and MARKED killers only (V's policy was told K). */
/* seq_cst throughout: the handshakes of a test, nothing rests on a weaker
 * order. */
static _Atomic int wk_phase; /* 1: V holds w[8]; 2: V may look; 3: V done */
static _Atomic int wk_named; /* V's KILLED conflict named a party: 0/1; -1 none */
static sstm_desc_t *_Atomic wk_v;
static _Atomic uint64_t wk_vtxid;
static sstm_cm_action_t wk_on_conflict(sstm_cm_ctx_t *ctx, const sstm_conflict_t *c,
                                       uint64_t *wait_ns) {
  (void)wait_ns;
  if (c->kind == SSTM_CONFLICT_KILLED &&
      ctx->desc == atomic_load_explicit(&wk_v, memory_order_seq_cst))
    atomic_store_explicit(&wk_named, c->has_other ? 1 : 0, memory_order_seq_cst);
  return SSTM_CM_ABORT_SELF;
}
static const sstm_cm_ops_t wk_policy = {
    .name = "test-waiting-killer",
    .description = "records whether a kill named its killer (tests)",
    .on_conflict = wk_on_conflict,
};
static void wk_victim_body(void *arg) {
  (void)arg;
  sstm_store_u64(&w[8], 1);
  if (atomic_load_explicit(&wk_phase, memory_order_seq_cst) == 0) {
    atomic_store_explicit(&wk_vtxid, sstm_txid(), memory_order_seq_cst);
    atomic_store_explicit(&wk_phase, 1, memory_order_seq_cst);
    while (atomic_load_explicit(&wk_phase, memory_order_seq_cst) != 2)
      sched_yield();
    (void)sstm_load_u64(&w[24]); /* the kill is noticed here: restart */
    FAIL("a killed attempt went on past a barrier");
  }
}
static void *wk_victim(void *arg) {
  (void)arg;
  CHECK_OK(sstm_thread_init());
  atomic_store_explicit(&wk_v, sstm_self(), memory_order_seq_cst);
  CHECK_OK(sstm_run(NULL, wk_victim_body, NULL));
  sstm_thread_exit();
  atomic_store_explicit(&wk_phase, 3, memory_order_seq_cst);
  return NULL;
}
TEST_ETL(a_waiting_killer_is_not_named_to_its_victim) {
  if (sstm_cm_find(wk_policy.name) == NULL) CHECK_OK(sstm_cm_register(&wk_policy));
  sstm_config_t cfg;
  sstm_test_config(&cfg);
  cfg.cm = wk_policy.name;
  CHECK_OK(sstm_init(&cfg));
  CHECK_OK(sstm_thread_init());
  atomic_store_explicit(&wk_phase, 0, memory_order_seq_cst);
  atomic_store_explicit(&wk_named, -1, memory_order_seq_cst);
  pthread_t th;
  CHECK_EQ_I(pthread_create(&th, NULL, wk_victim, NULL), 0);
  while (atomic_load_explicit(&wk_phase, memory_order_seq_cst) != 1)
    sched_yield();
  SSTM_ATOMIC_BEGIN(NULL)
    sstm_store_u64(&w[0], 1); /* a lock: the wait is marked */
    if (atomic_load_explicit(&wk_phase, memory_order_seq_cst) == 1) {
      CHECK_OK(sstm_desc_kill(atomic_load_explicit(&wk_v, memory_order_seq_cst),
                              atomic_load_explicit(&wk_vtxid, memory_order_seq_cst)));
      bool marked = sstm__attempt_wait_begin();
      CHECK_TRUE(marked);
      atomic_store_explicit(&wk_phase, 2, memory_order_seq_cst);
      while (atomic_load_explicit(&wk_phase, memory_order_seq_cst) != 3)
        sched_yield();
      sstm__attempt_wait_end(marked);
      sstm__attempt_check(); /* nobody met its lock: goes on */
    }
  SSTM_ATOMIC_END();
  CHECK_EQ_I(pthread_join(th, NULL), 0);
  CHECK_EQ_I(atomic_load_explicit(&wk_named, memory_order_seq_cst), 0);
  CHECK_EQ_U(w[8], 1);
  sstm_test_fini();
}

SSTM_TEST_MAIN()
