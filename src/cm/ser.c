/* Serialisation (paper 1, section 3, Algorithm 1): the loser of a conflict
 * aborts and does not restart until the winner's current transaction has
 * ended (committed or aborted).
 *
 *  ser-spin   SER-u (spin): wait in a pause loop. Right when threads <=
 *             CPUs; wastes the loser's time slice otherwise.
 *  ser-yield  between the two: call sched_yield() until the winner's
 *             transaction has ended, so the CPU goes to the other runnable
 *             threads (the winner, if it was preempted, among them) without
 *             a futex sleep and wake-up. What TinySTM's CM_DELAY does when
 *             built with WAIT_YIELD (it waits for the lock, we for the
 *             winner's attempt); the strongest TinySTM configuration when
 *             threads outnumber CPUs (docs/benchmarks.md).
 *  ser-block  SER-u (cond), and the role SER-k plays in the paper: sleep on
 *             a futex on the winner's status word. The winner's end wakes
 *             sleepers only if the sleepers flag is set, so a commit that
 *             nobody waits for makes no system call; the kernel checks the
 *             word before sleeping, so an ended winner is never slept on and
 *             no wake-up is missed, except at a read-only commit: it ends
 *             with a plain IDLE store, which drops a sleepers flag set in
 *             its last instant, and that costs the waiter at most one 1 ms
 *             sleep slice (sstm_party_wait in cm.h, sstm_commit in stm.c).
 *
 * Deadlock rule (the paper blocks only when the winner is runnable; ours is
 * structural): a loser waits only from on_abort, i.e. after its own attempt
 * rolled back, so a waiting thread holds no lock and runs no attempt. Every
 * wait-for edge goes from a thread with no attempt to a running attempt, so
 * the graph has no cycle, even when winners themselves lose and wait. A
 * winner that stays descheduled (or blocked in the application) is waited
 * for at most SSTM_SER_WAIT_MAX_NS (sstm__ser_wait_max_ns, a test seam); the
 * wait also ends when the winner is killed and rolls back. Tested by
 * tests/integration/cm_*.c and tests/unit/cm_policies.c.
 *
 * Progress: after SSTM_CM_RETRY_BOUND aborts a transaction restarts
 * irrevocable (cm/common.h), as yield and softser do.
 */
#include "cm/common.h"

enum { SER_WAITS, SER_TIMEOUTS };

_Atomic uint64_t sstm__ser_wait_max_ns = SSTM_SER_WAIT_MAX_NS;

static void ser_wait(sstm_cm_ctx_t *ctx, const sstm_abort_info_t *info, sstm_wait_mode_t mode) {
  sstm__cm_bound_retries(ctx, info);
  if (!info->has_other || !sstm__cm_conflict_abort(info->reason)) return;
  sstm_cm_note(ctx, mode == SSTM_WAIT_BLOCK   ? SSTM_ACT_BLOCK
                    : mode == SSTM_WAIT_YIELD ? SSTM_ACT_YIELD
                                              : SSTM_ACT_SPIN);
  sstm_cm_count(ctx, SER_WAITS, 1);
  uint64_t bound = atomic_load_explicit(&sstm__ser_wait_max_ns, memory_order_relaxed);
  if (sstm_party_wait(&info->other, mode, bound) != 0) sstm_cm_count(ctx, SER_TIMEOUTS, 1);
  sstm_cm_note(ctx, SSTM_ACT_NONE);
}

static void ser_spin_abort(sstm_cm_ctx_t *ctx, const sstm_abort_info_t *info) {
  ser_wait(ctx, info, SSTM_WAIT_SPIN);
}

static void ser_yield_abort(sstm_cm_ctx_t *ctx, const sstm_abort_info_t *info) {
  ser_wait(ctx, info, SSTM_WAIT_YIELD);
}

static void ser_block_abort(sstm_cm_ctx_t *ctx, const sstm_abort_info_t *info) {
  ser_wait(ctx, info, SSTM_WAIT_BLOCK);
}

const sstm_cm_ops_t sstm__cm_ser_spin = {
    .name = "ser-spin",
    .description = "abort, then spin until the winner's transaction ends (SER-u spin)",
    .on_conflict = sstm__cm_abort_self,
    .on_abort = ser_spin_abort,
    .stat_names = {"ser_waits", "ser_timeouts"},
};

const sstm_cm_ops_t sstm__cm_ser_yield = {
    .name = "ser-yield",
    .description = "abort, then yield the CPU until the winner's transaction ends",
    .on_conflict = sstm__cm_abort_self,
    .on_abort = ser_yield_abort,
    .stat_names = {"ser_waits", "ser_timeouts"},
};

const sstm_cm_ops_t sstm__cm_ser_block = {
    .name = "ser-block",
    .description = "abort, then sleep on a futex until the winner's transaction ends",
    .on_conflict = sstm__cm_abort_self,
    .on_abort = ser_block_abort,
    .stat_names = {"ser_waits", "ser_timeouts"},
};
