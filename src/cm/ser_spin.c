/* SPDX-License-Identifier: MIT */
/* ser-spin ([Maldonado10], SER-u spin): the loser aborts and spins (a pause
 * loop) until the winner's transaction has ended. Right when threads <=
 * CPUs; wastes the loser's time slice otherwise. The wait, its bound and
 * the deadlock rule: cm/ser.c. */
#include "cm/common.h"

static void ser_spin_abort(sstm_cm_ctx_t *ctx, const sstm_abort_info_t *info) {
  sstm__cm_ser_wait(ctx, info, SSTM_WAIT_SPIN);
}

const sstm_cm_ops_t sstm__cm_ser_spin = {
    .name = "ser-spin",
    .description = "abort, then spin until the winner's transaction ends (SER-u spin)",
    .on_conflict = sstm__cm_abort_self,
    .on_abort = ser_spin_abort,
    .stat_names = {"ser_waits", "ser_timeouts"},
};
