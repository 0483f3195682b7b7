/* SPDX-License-Identifier: MIT */
/* yield ([Maldonado10], Algorithm 4): the loser aborts and gives up the CPU with
 * sched_yield() before it restarts. Cheap when the winner is shorter than a
 * time slice; on a busy CPU the yielding thread may lose a whole tick. */
#include <sched.h>

#include "cm/common.h"

static void yield_abort(sstm_cm_ctx_t *ctx, const sstm_abort_info_t *info) {
  sstm__cm_bound_retries(ctx, info);
  if (!sstm__cm_conflict_abort(info->reason)) return;
  sstm_cm_note(ctx, SSTM_ACT_YIELD);
  sstm_cm_count(ctx, 0, 1);
  sched_yield();
  sstm_cm_note(ctx, SSTM_ACT_NONE);
}

const sstm_cm_ops_t sstm__cm_yield = {
    .name = "yield",
    .description = "abort, then sched_yield() before the restart",
    .on_conflict = sstm__cm_abort_self,
    .on_abort = yield_abort,
    .stat_names = {"yields"},
};
