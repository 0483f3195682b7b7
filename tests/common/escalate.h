/* SPDX-License-Identifier: MIT */
/* schedstm tests: a policy that makes every restart irrevocable, a user's
 * restart too (which the built-in policies never escalate), so that the
 * fuzzers' escalated attempts meet every kind of access and then commit,
 * restart or cancel. A conflict aborts the attempt itself; a user's cancel
 * is not retried, so it is not escalated. escalations counts the restarts
 * escalated; register escalate_ops once per process (sstm_cm_register)
 * and name it in sstm_config_t::cm. */
#ifndef SSTM_TEST_ESCALATE_H
#define SSTM_TEST_ESCALATE_H

#include <schedstm/cm.h>

static unsigned escalations;

static sstm_cm_action_t escalate_conflict(sstm_cm_ctx_t *ctx, const sstm_conflict_t *c,
                                          uint64_t *wait_ns) {
  (void)ctx, (void)c, (void)wait_ns;
  return SSTM_CM_ABORT_SELF;
}

static void escalate_abort(sstm_cm_ctx_t *ctx, const sstm_abort_info_t *info) {
  if (info->reason == SSTM_ABORT_USER_CANCEL) return; /* no restart */
  sstm_cm_next_irrevocable(ctx);
  escalations++;
}

static const sstm_cm_ops_t escalate_ops = {
    .name = "test-escalate",
    .description = "every restart irrevocable (tests)",
    .on_conflict = escalate_conflict,
    .on_abort = escalate_abort,
};

#endif /* SSTM_TEST_ESCALATE_H */
