/* SPDX-License-Identifier: MIT */
/* ser-block ([Maldonado10], SER-u cond, and the role SER-k plays in the paper):
 * the loser aborts and sleeps on a futex on the winner's status word until
 * the winner's transaction has ended. The winner's end wakes sleepers only
 * if the sleepers flag is set, so a commit that nobody waits for makes no
 * system call; the kernel checks the word before sleeping, so an ended
 * winner is never slept on and no wake-up is missed, except at a read-only
 * commit: it ends with a plain IDLE store, which drops a sleepers flag set
 * in its last instant, and that costs the waiter at most one 1 ms sleep
 * slice (sstm_party_wait in cm.h, sstm_commit in core/txn.c). The wait, its
 * bound and the deadlock rule: cm/ser.c. */
#include "cm/common.h"

static void ser_block_abort(sstm_cm_ctx_t *ctx, const sstm_abort_info_t *info) {
  sstm__cm_ser_wait(ctx, info, SSTM_WAIT_BLOCK);
}

const sstm_cm_ops_t sstm__cm_ser_block = {
    .name = "ser-block",
    .description = "abort, then sleep on a futex until the winner's transaction ends",
    .on_conflict = sstm__cm_abort_self,
    .on_abort = ser_block_abort,
    .stat_names = {"ser_waits", "ser_timeouts"},
};
