/* SPDX-License-Identifier: MIT */
/* Internal tests: ser-kill's decisions (src/cm/ser_kill.c), round by round,
 * without threads or clocks. The test seam sstm__ser_kill_decide answers a
 * constructed conflict given the watch of the earlier rounds; each
 * expectation follows from the rules at the top of ser_kill.c:
 *  - a failed validation, a kill, an irrevocable transaction: abort self,
 *    and no sleep behind the other party afterwards;
 *  - a committing holder: wait, and sleep behind it if the engine's bound
 *    on waits runs out;
 *  - a new holder (first round, another attempt, another slot): watch it;
 *  - a holder whose sets do not grow for two rounds in a row: kill it
 *    (one stalled round and then growth starts the count again);
 *  - a holder that keeps growing for 30 us of rounds: abort self and sleep
 *    behind it;
 *  - a stalled holder that ser-kill has killed 3 times: spared (abort self
 *    and sleep behind it); 2 times: killed.
 * And with real threads (ETL, a running holder kept in the middle of its
 * attempt): a holder that stops is killed and the requester's access goes
 * on without an abort; the victim aborts with reason "killed".
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "../common/runner.h"
#include "cm/common.h"

/* A conflict on a lock held by `slot`'s attempt `txid`, whose sets have
 * the given sizes, at `attempt` consecutive waits of this access. */
static sstm_conflict_t lock_conflict(unsigned slot, uint64_t txid, uint32_t reads, uint32_t writes,
                                     unsigned attempt) {
  return (sstm_conflict_t){.kind = SSTM_CONFLICT_READ_LOCKED,
                           .has_other = true,
                           .attempt = attempt,
                           .other = {.slot = slot, .txid = txid, .reads = reads, .writes = writes}};
}

static sstm_cm_action_t decide(sstm__ser_kill_watch_t *w, sstm_conflict_t c, unsigned kills,
                               uint64_t *wait) {
  *wait = 0;
  return sstm__ser_kill_decide(w, &c, kills, wait);
}

TEST(undecidable_conflicts_abort_self_without_sleep) {
  static const sstm_conflict_kind_t kinds[] = {SSTM_CONFLICT_VALIDATION, SSTM_CONFLICT_KILLED,
                                               SSTM_CONFLICT_IRREVOCABLE};
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
    sstm__ser_kill_watch_t w = {.serialize = true};
    sstm_conflict_t c = lock_conflict(3, 10, 5, 1, 0);
    c.kind = kinds[i];
    uint64_t wait;
    CHECK_EQ_I(decide(&w, c, 0, &wait), SSTM_CM_ABORT_SELF);
    CHECK(!w.serialize);
  }
  /* a lock conflict without a known holder is not decidable either */
  sstm__ser_kill_watch_t w = {0};
  sstm_conflict_t c = lock_conflict(3, 10, 5, 1, 0);
  c.has_other = false;
  uint64_t wait;
  CHECK_EQ_I(decide(&w, c, 0, &wait), SSTM_CM_ABORT_SELF);
}

TEST(committing_holder_is_waited_for) {
  sstm__ser_kill_watch_t w = {0};
  uint64_t wait;
  for (unsigned a = 0; a < 10; a++) {
    sstm_conflict_t c = lock_conflict(3, 10, 5, 1, a);
    c.other.committing = true; /* never grows: still never killed */
    CHECK_EQ_I(decide(&w, c, 0, &wait), SSTM_CM_WAIT);
    CHECK_GT_U(wait, 0);
    CHECK(w.serialize); /* the engine's bound, if it runs out, sleeps behind it */
  }
}

TEST(stalled_holder_is_killed_after_two_still_rounds) {
  sstm__ser_kill_watch_t w = {0};
  uint64_t wait;
  CHECK_EQ_I(decide(&w, lock_conflict(3, 10, 5, 1, 0), 0, &wait), SSTM_CM_WAIT);
  CHECK_GT_U(wait, 0);
  CHECK_EQ_I(decide(&w, lock_conflict(3, 10, 5, 1, 1), 0, &wait), SSTM_CM_WAIT);
  CHECK_EQ_I(decide(&w, lock_conflict(3, 10, 5, 1, 2), 0, &wait), SSTM_CM_ABORT_OTHER);
  CHECK(!w.serialize);
}

TEST(growth_restarts_the_stall_count) {
  sstm__ser_kill_watch_t w = {0};
  uint64_t wait;
  CHECK_EQ_I(decide(&w, lock_conflict(3, 10, 5, 1, 0), 0, &wait), SSTM_CM_WAIT);
  CHECK_EQ_I(decide(&w, lock_conflict(3, 10, 5, 1, 1), 0, &wait), SSTM_CM_WAIT); /* still */
  CHECK_EQ_I(decide(&w, lock_conflict(3, 10, 6, 1, 2), 0, &wait), SSTM_CM_WAIT); /* reads */
  CHECK_EQ_I(decide(&w, lock_conflict(3, 10, 6, 1, 3), 0, &wait), SSTM_CM_WAIT); /* still */
  CHECK_EQ_I(decide(&w, lock_conflict(3, 10, 6, 2, 4), 0, &wait), SSTM_CM_WAIT); /* writes */
  CHECK_EQ_I(decide(&w, lock_conflict(3, 10, 6, 2, 5), 0, &wait), SSTM_CM_WAIT); /* still */
  CHECK_EQ_I(decide(&w, lock_conflict(3, 10, 6, 2, 6), 0, &wait), SSTM_CM_ABORT_OTHER);
}

TEST(new_holder_is_watched_from_scratch) {
  sstm__ser_kill_watch_t w = {0};
  uint64_t wait;
  CHECK_EQ_I(decide(&w, lock_conflict(3, 10, 5, 1, 0), 0, &wait), SSTM_CM_WAIT);
  CHECK_EQ_I(decide(&w, lock_conflict(3, 10, 5, 1, 1), 0, &wait), SSTM_CM_WAIT);
  /* the holder's attempt ended and another attempt (same slot) holds the
   * lock now: one still round of the old one does not count */
  CHECK_EQ_I(decide(&w, lock_conflict(3, 11, 5, 1, 2), 0, &wait), SSTM_CM_WAIT);
  CHECK_EQ_I(decide(&w, lock_conflict(3, 11, 5, 1, 3), 0, &wait), SSTM_CM_WAIT);
  CHECK_EQ_I(decide(&w, lock_conflict(3, 11, 5, 1, 4), 0, &wait), SSTM_CM_ABORT_OTHER);
  /* another slot with the same serial is another holder */
  CHECK_EQ_I(decide(&w, lock_conflict(4, 11, 5, 1, 5), 0, &wait), SSTM_CM_WAIT);
  CHECK_EQ_I(decide(&w, lock_conflict(4, 11, 5, 1, 6), 0, &wait), SSTM_CM_WAIT);
  CHECK_EQ_I(decide(&w, lock_conflict(4, 11, 5, 1, 7), 0, &wait), SSTM_CM_ABORT_OTHER);
  /* a new access (attempt 0) watches again, even the same holder */
  CHECK_EQ_I(decide(&w, lock_conflict(4, 11, 5, 1, 0), 0, &wait), SSTM_CM_WAIT);
  CHECK_EQ_I(decide(&w, lock_conflict(4, 11, 5, 1, 1), 0, &wait), SSTM_CM_WAIT);
}

TEST(long_running_holder_is_slept_behind) {
  sstm__ser_kill_watch_t w = {0};
  uint64_t wait, waited = 0;
  CHECK_EQ_I(decide(&w, lock_conflict(3, 10, 0, 1, 0), 0, &wait), SSTM_CM_WAIT);
  /* growing at every round: waited for, round after round, up to 30 us */
  unsigned a = 1;
  sstm_cm_action_t act;
  while ((act = decide(&w, lock_conflict(3, 10, a, 1, a), 0, &wait)) == SSTM_CM_WAIT) {
    waited += wait;
    a++;
    CHECK_LT_U(a, 100);
  }
  CHECK_EQ_I(act, SSTM_CM_ABORT_SELF);
  CHECK(w.serialize);
  CHECK_GE_U(waited + wait, 29000); /* the rounds before add up to about 30 us */
  CHECK_LE_U(waited, 30000);
}

TEST(holder_killed_three_times_is_spared) {
  for (unsigned kills = 0; kills <= 4; kills++) {
    sstm__ser_kill_watch_t w = {0};
    uint64_t wait;
    CHECK_EQ_I(decide(&w, lock_conflict(3, 10, 5, 1, 0), kills, &wait), SSTM_CM_WAIT);
    CHECK_EQ_I(decide(&w, lock_conflict(3, 10, 5, 1, 1), kills, &wait), SSTM_CM_WAIT);
    sstm_cm_action_t act = decide(&w, lock_conflict(3, 10, 5, 1, 2), kills, &wait);
    if (kills < 3) {
      CHECK_EQ_I(act, SSTM_CM_ABORT_OTHER);
      CHECK(!w.serialize);
    } else {
      CHECK_EQ_I(act, SSTM_CM_ABORT_SELF);
      CHECK(w.serialize);
      CHECK(w.spared);
    }
  }
}

/* ---- with threads: a stalled holder is killed ---- */

static _Alignas(64) uint64_t word;
static atomic_int phase;

/* The holder: writes `word` (ETL: takes its lock), then stops inside its
 * attempt until the requester is done. */
static void holder_body(void *arg) {
  (void)arg;
  sstm_store_u64(&word, sstm_load_u64(&word) + 1);
  if (atomic_load_explicit(&phase, memory_order_seq_cst) == 0) {
    atomic_store_explicit(&phase, 1, memory_order_seq_cst);
    while (atomic_load_explicit(&phase, memory_order_seq_cst) == 1)
      __builtin_ia32_pause();
  }
}

static void *holder(void *arg) {
  (void)arg;
  CHECK_OK(sstm_thread_init());
  CHECK_OK(sstm_run(NULL, holder_body, NULL));
  CHECK_OK(sstm_thread_exit());
  return NULL;
}

static void requester_body(void *arg) {
  (void)arg;
  sstm_store_u64(&word, sstm_load_u64(&word) + 10);
}

TEST(stalled_holder_killed_requester_goes_on) {
  sstm_config_t cfg;
  sstm_config_default(&cfg);
  cfg.use_env = false;
  cfg.cm = "ser-kill";
  cfg.design = SSTM_DESIGN_ETL;
  CHECK_OK(sstm_init(&cfg));
  CHECK_OK(sstm_thread_init());
  word = 0;
  atomic_store_explicit(&phase, 0, memory_order_seq_cst);
  pthread_t t;
  CHECK_EQ_I(pthread_create(&t, NULL, holder, NULL), 0);
  while (atomic_load_explicit(&phase, memory_order_seq_cst) != 1)
    __builtin_ia32_pause();
  /* The holder sits in its attempt with the lock and grows nothing: the
   * requester watches it for two rounds, kills it, takes the lock over and
   * commits without aborting. */
  CHECK_OK(sstm_run(NULL, requester_body, NULL));
  sstm_stats_t st;
  CHECK_OK(sstm_stats_get(sstm_self(), &st));
  CHECK_EQ_U(st.aborts[SSTM_ABORT_READ_LOCKED] + st.aborts[SSTM_ABORT_WRITE_LOCKED], 0);
  CHECK_EQ_U(st.cm_stats[0], 1); /* kills */
  atomic_store_explicit(
      &phase, 2, memory_order_seq_cst); /* the victim finds its kill, rolls back, and retries */
  CHECK_EQ_I(pthread_join(t, NULL), 0);
  CHECK_EQ_U(word, 11); /* ours, then the holder's retry: nothing lost */
  sstm_stats_t all;
  CHECK_OK(sstm_stats_aggregate(&all));
  CHECK_EQ_U(all.aborts[SSTM_ABORT_KILLED], 1);
  CHECK_OK(sstm_thread_exit());
  CHECK_OK(sstm_shutdown());
}

SSTM_TEST_MAIN()
