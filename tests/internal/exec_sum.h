/* SPDX-License-Identifier: MIT */
/* The internal executor tests' sum of one per-worker counter, and whether a
 * worker waits for work. Here and not in tests/common/exec_cfg.h: they read
 * the executor's internals, which the public tests that include exec_cfg.h
 * must not see. */
#ifndef SSTM_TEST_EXEC_SUM_H
#define SSTM_TEST_EXEC_SUM_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "exec/exec_internal.h"

/* The counter at byte offset off of every worker of ex, summed. relaxed:
 * a statistics counter; the tests read it after their own synchronisation
 * with the step it counts, or poll it until it moves. */
static inline uint64_t exec_sum(sstm_exec_t *ex, size_t off) {
  uint64_t n = 0;
  for (unsigned i = 0; i < ex->nworkers; i++)
    n += atomic_load_explicit((_Atomic uint64_t *)(void *)((char *)&ex->workers[i] + off),
                              memory_order_relaxed);
  return n;
}
#define SUM(ex, f) exec_sum(ex, offsetof(sstm_xworker_t, f))

/* Whether a worker of ex waits for work (the queue lock orders the read).
 * sstm_exec_create() returns once its workers have started, not once they
 * wait: a test whose next request must go to an idle worker, and not
 * preempt the lowest running priority, waits for this first. */
static inline bool exec_idle_worker(sstm_exec_t *ex) {
  sstm__xq_lock(&ex->q);
  bool idle = ex->idle > 0;
  sstm__xq_unlock(&ex->q);
  return idle;
}

#endif
