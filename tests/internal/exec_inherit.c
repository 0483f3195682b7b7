/* SPDX-License-Identifier: MIT */
/* The executor's INHERIT rule for conflicts with paused transactions
 * (src/exec/exec.c, yield_decide; include/schedstm/exec.h,
 * SSTM_EXEC_PAUSED_CONFLICT_INHERIT), on numbers, and the queue operations
 * the hand-over uses (src/exec/queue.h: the level of a hot entry, the
 * removal of an entry from the middle of its list). No threads, no clock.
 * The executor's path itself runs in
 * tests/internal/exec_inherit_run.c and
 * integration.exec_preempt.promoted_inherit. */
#include <stdbool.h>
#include <stdint.h>

#include "exec/exec_internal.h"
#include "exec/queue.h"
#include "runner.h"

#define US 1000ull

TEST(decide) {
  /* A paused transaction of higher priority always gets the worker. */
  CHECK(sstm__x_inherit_decide(3, 0, 0, 2, 1000 * US));
  /* Same priority: whoever has run longer keeps it; a tie goes to the
   * running one, so the reverse conflict cannot hand it back. */
  CHECK(sstm__x_inherit_decide(1, 500 * US, 0, 1, 100 * US));
  CHECK(!sstm__x_inherit_decide(1, 100 * US, 0, 1, 500 * US));
  CHECK(!sstm__x_inherit_decide(1, 100 * US, 0, 1, 100 * US));
  for (uint64_t a = 1; a < 4000; a += 37)
    for (uint64_t b = 1; b < 4000; b += 41)
      CHECK(!(sstm__x_inherit_decide(2, a, 0, 2, b) && sstm__x_inherit_decide(2, b, 0, 2, a)));
  /* Lower priority: it must have run longer than the blocked one and be
   * at least half-way through its level's average attempt. */
  CHECK(!sstm__x_inherit_decide(0, 10 * US, 0, 4, 20 * US));          /* ran less */
  CHECK(!sstm__x_inherit_decide(0, 2000 * US, 5000 * US, 4, 5 * US)); /* 3 ms left */
  CHECK(sstm__x_inherit_decide(0, 2500 * US, 5000 * US, 4, 5 * US));  /* half-way */
  CHECK(sstm__x_inherit_decide(0, 4000 * US, 5000 * US, 4, 5 * US));
  CHECK(sstm__x_inherit_decide(0, 6000 * US, 5000 * US, 4, 5 * US)); /* past the average */
  CHECK(sstm__x_inherit_decide(0, 1 * US, 0, 4, 0)); /* no average yet: nothing left known */
}

TEST(queue_remove) {
  sstm_xq_t q;
  CHECK_OK(sstm__xq_init(&q, 8));
  sstm_xq_node_t n[6];
  sstm__xq_lock(&q);
  sstm__xq_push(&q, &n[0], 2, true);
  sstm__xq_push(&q, &n[1], 2, true);
  sstm__xq_push(&q, &n[2], 2, true);
  sstm__xq_push(&q, &n[3], 5, true);
  sstm__xq_push(&q, &n[4], 5, false);
  CHECK_EQ_I(sstm__xq_hot_level(&q, &n[1]), 2);
  CHECK_EQ_I(sstm__xq_hot_level(&q, &n[3]), 5);
  CHECK_EQ_I(sstm__xq_hot_level(&q, &n[4]), -1); /* cold */
  CHECK_EQ_I(sstm__xq_hot_level(&q, &n[5]), -1); /* not queued */
  /* The middle, then the tail (a push after it must still append). */
  CHECK(sstm__xq_remove(&q, &n[1], 2, true));
  CHECK(!sstm__xq_remove(&q, &n[1], 2, true));
  CHECK(sstm__xq_remove(&q, &n[2], 2, true));
  sstm__xq_push(&q, &n[5], 2, true);
  /* The last of level 5's hot list: level 5 keeps its cold entry. */
  CHECK(sstm__xq_remove(&q, &n[3], 5, true));
  CHECK_EQ_I(sstm__xq_top(&q), 5);
  CHECK(sstm__xq_pop(&q, NULL, NULL) == &n[4]);
  CHECK_EQ_I(sstm__xq_top(&q), 2);
  CHECK(sstm__xq_pop(&q, NULL, NULL) == &n[0]);
  CHECK(sstm__xq_pop(&q, NULL, NULL) == &n[5]);
  CHECK_EQ_I(sstm__xq_top(&q), -1);
  CHECK(sstm__xq_pop(&q, NULL, NULL) == NULL);
  /* A level emptied by a removal leaves the bitmap. */
  sstm__xq_push(&q, &n[0], 3, true);
  CHECK(sstm__xq_remove(&q, &n[0], 3, true));
  CHECK_EQ_I(sstm__xq_top(&q), -1);
  CHECK_EQ_U(q.count, 0);
  sstm__xq_unlock(&q);
  sstm__xq_destroy(&q);
}

SSTM_TEST_MAIN()
