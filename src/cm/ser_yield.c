/* SPDX-License-Identifier: MIT */
/* ser-yield: the loser aborts and calls sched_yield() until the winner's
 * transaction has ended, so the CPU goes to the other runnable threads (the
 * winner, if it was preempted, among them) without a futex sleep and
 * wake-up. Between ser-spin and ser-block; what TinySTM's [Felber08] CM_DELAY does
 * when built with WAIT_YIELD (it waits for the lock, we for the winner's
 * attempt), the strongest TinySTM configuration when threads outnumber CPUs
 * (docs/benchmarks.md). The wait, its bound and the deadlock rule:
 * cm/ser.c. */
#include "cm/common.h"

static void ser_yield_abort(sstm_cm_ctx_t *ctx, const sstm_abort_info_t *info) {
  sstm__cm_ser_wait(ctx, info, SSTM_WAIT_YIELD);
}

const sstm_cm_ops_t sstm__cm_ser_yield = {
    .name = "ser-yield",
    .description = "abort, then yield the CPU until the winner's transaction ends",
    .on_conflict = sstm__cm_abort_self,
    .on_abort = ser_yield_abort,
    .stat_names = {"ser_waits", "ser_timeouts"},
};
