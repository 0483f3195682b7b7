/* SPDX-License-Identifier: MIT */
/* Serialisation ([Maldonado10], section 3, Algorithm 1), the mechanism shared by
 * the ser-* policies (ser_spin.c, ser_yield.c, ser_block.c): the loser of a
 * conflict aborts and does not restart until the winner's current
 * transaction has ended (committed or aborted). The policies differ only in
 * how the loser waits (sstm_wait_mode_t: spin, yield, futex sleep).
 *
 * Deadlock rule (the paper blocks only when the winner is runnable; ours is
 * structural): a loser waits only from on_abort, i.e. after its own attempt
 * rolled back, so a waiting thread holds no lock and runs no attempt. Every
 * wait-for edge goes from a thread with no attempt to a running attempt, so
 * the graph has no cycle, even when winners themselves lose and wait. A
 * winner that stays descheduled (or blocked in the application) is waited
 * for at most SSTM_SER_WAIT_MAX_NS (sstm__ser_wait_max_ns, a test seam); the
 * wait also ends when the winner is killed and rolls back. Tested by
 * tests/integration/cm_*.c (cm_deadlock --unbounded lifts the bound: a
 * cycle would hang there) and tests/unit/cm_policies.c.
 *
 * Progress: after SSTM_CM_RETRY_BOUND aborts a transaction restarts
 * irrevocable (cm/common.h), as yield and softser do.
 */
#include "cm/common.h"

_Atomic uint64_t sstm__ser_wait_max_ns = SSTM_SER_WAIT_MAX_NS;

void sstm__cm_ser_wait(sstm_cm_ctx_t *ctx, const sstm_abort_info_t *info, sstm_wait_mode_t mode) {
  sstm__cm_bound_retries(ctx, info);
  if (!info->has_other || !sstm__cm_conflict_abort(info->reason)) return;
  sstm_cm_note(ctx, mode == SSTM_WAIT_BLOCK   ? SSTM_ACT_BLOCK
                    : mode == SSTM_WAIT_YIELD ? SSTM_ACT_YIELD
                                              : SSTM_ACT_SPIN);
  sstm_cm_count(ctx, SSTM_SER_WAITS, 1);
  uint64_t bound = atomic_load_explicit(&sstm__ser_wait_max_ns, memory_order_relaxed);
  if (sstm_party_wait(&info->other, mode, bound) != 0) sstm_cm_count(ctx, SSTM_SER_TIMEOUTS, 1);
  sstm_cm_note(ctx, SSTM_ACT_NONE);
}
