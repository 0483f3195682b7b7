/* SPDX-License-Identifier: MIT */
/* suicide: the attempt that detects a conflict aborts itself and restarts at
 * once. TinySTM's default [Felber08]; no hook on the hot path. */
#include "cm/common.h"

static sstm_cm_action_t suicide_conflict(sstm_cm_ctx_t *ctx, const sstm_conflict_t *c,
                                         uint64_t *wait_ns) {
  (void)ctx, (void)c, (void)wait_ns;
  return SSTM_CM_ABORT_SELF;
}

const sstm_cm_ops_t sstm__cm_suicide = {
    .name = "suicide",
    .description = "abort self on every conflict, restart immediately",
    .on_conflict = suicide_conflict,
};
