/* SPDX-License-Identifier: MIT */
/* timestamp: the classic comparison, the older transaction (smaller birth
 * timestamp: its first attempt's start) wins and aborts the younger; equal
 * ages go to the lower descriptor slot. The mechanism, the livelock
 * argument and the progress bound: cm/prio.c. */
#include "cm/prio.h"

static sstm_cm_action_t timestamp_conflict(sstm_cm_ctx_t *ctx, const sstm_conflict_t *c,
                                           uint64_t *wait_ns) {
  if (!sstm__cm_decidable(c)) return SSTM_CM_ABORT_SELF;
  return sstm__prio_decide(ctx, c, wait_ns, sstm__prio_older(ctx->birth, c->other.birth));
}

const sstm_cm_ops_t sstm__cm_timestamp = {
    .name = "timestamp",
    .description = "the older transaction wins (aborts the younger)",
    .init = sstm__prio_init,
    .on_conflict = timestamp_conflict,
    .on_abort = sstm__prio_abort,
    .stat_names = {"kills", "self_aborts", "", "escalations"},
};
