/* SPDX-License-Identifier: MIT */
/* Priority-based contention management, the mechanism shared by os_prio
 * (os_prio.c) and timestamp (timestamp.c): the requester compares itself
 * with the lock owner by the policy's order and either aborts the owner
 * (remote abort: the engine kills it and takes its lock over) or aborts
 * itself; ties of the policy's order go to the lower descriptor slot.
 *
 * Livelock freedom. The policy's order with the slot last (os_prio:
 * priority, size, age, slot; timestamp: age, slot) is a total order at
 * every decision, so of two conflicting transactions exactly one gives way;
 * under os_prio the oldest transaction of the highest OS priority class
 * only gives way to larger ones, whose sizes are bounded, and under
 * timestamp the oldest transaction gives way to none. What a total order on lock
 * conflicts cannot prevent is starvation by failed validations (invisible
 * readers are invalidated by committers they never met at a lock). Hence
 * the guarantee: a transaction that has lost SCHEDSTM_PRIO_ESCALATE
 * conflicts (default 32; ctx->conflicts, without the user's own restarts)
 * restarts irrevocable, and an irrevocable transaction never aborts by a
 * conflict, so every transaction that does not restart itself commits
 * within that many attempts plus one. Tested by
 * tests/integration/cm_livelock.c.
 *
 * Knob: cfg.prio_escalate (SCHEDSTM_PRIO_ESCALATE), the lost conflicts before the irrevocable
 * restart, 0..SSTM_PRIO_ESCALATE_MAX (1000000), 0 = never (then only the
 * lock-conflict half of the argument holds), default 32; taken at every
 * sstm_init (iface/cm_services.h, sstm__cm_knob_prio_escalate).
 */
#include "cm/prio.h"
#include "iface/cm_services.h"

static unsigned escalate_after = SSTM_PRIO_ESCALATE_DEFAULT;

/* cfg.prio_escalate, SCHEDSTM_PRIO_ESCALATE (iface/cm_services.h): taken
 * again at every sstm_init. */
int sstm__prio_init(const sstm_config_t *cfg) {
  (void)cfg;
  unsigned after;
  int rc = sstm__cm_knob_prio_escalate(&after);
  if (rc != 0) return rc;
  escalate_after = after;
  return 0;
}

sstm_cm_action_t sstm__prio_decide(sstm_cm_ctx_t *ctx, const sstm_conflict_t *c, uint64_t *wait_ns,
                                   int order) {
  if (!sstm__cm_decidable(c)) return SSTM_CM_ABORT_SELF;
  if (c->other.committing) {
    *wait_ns = 2000; /* its end is imminent; the engine bounds the waits */
    return SSTM_CM_WAIT;
  }
  if (order == 0) order = (int)sstm_desc_slot(ctx->desc) < (int)c->other.slot ? 1 : -1;
  if (order > 0) {
    sstm_cm_count(ctx, P_KILLS, 1);
    sstm_cm_note(ctx, SSTM_ACT_KILL); /* counted in the statistics */
    /* A kill is an instant, not a state: the killer runs on, and nothing
     * else would put its state-table action back before its next abort (a
     * killer that then commits and goes quiet showed "kill" for good). */
    sstm__cm_stt_action(ctx, SSTM_ACT_NONE);
    return SSTM_CM_ABORT_OTHER;
  }
  sstm_cm_count(ctx, P_SELF_ABORTS, 1);
  return SSTM_CM_ABORT_SELF;
}

/* After rollback: escalate to irrevocability (livelock argument above). */
void sstm__prio_abort(sstm_cm_ctx_t *ctx, const sstm_abort_info_t *info) {
  sstm_cm_note(ctx, SSTM_ACT_NONE);
  if (SSTM_UNLIKELY(escalate_after && sstm__cm_escalates(ctx, info, escalate_after))) {
    sstm_cm_count(ctx, P_ESCALATIONS, 1);
    sstm_cm_next_irrevocable(ctx);
  }
}
