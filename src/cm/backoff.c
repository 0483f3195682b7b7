/* SPDX-License-Identifier: MIT */
/* backoff: abort self on conflict, then wait a random time drawn uniformly
 * from [0, min(backoff_min_ns * 2^conflicts, backoff_max_ns)) before the
 * restart (randomised exponential backoff; ctx->conflicts counts the lost
 * conflicts of the transaction, the one being handled included, so the
 * first wait is below 2 * backoff_min_ns; user restarts do not count). The wait spins on the vDSO
 * clock: no system call, the thread keeps its CPU. Aborts that no conflict
 * caused (user retry and cancel, read-only restarts, the switch to
 * irrevocable) do not wait. Counters: the waits, and the sum of the times drawn.
 * Knobs: the configuration's backoff_min_ns and backoff_max_ns
 * (SCHEDSTM_BACKOFF_MIN_NS, SCHEDSTM_BACKOFF_MAX_NS: include/schedstm/config.h). */
#include "cm/common.h"

enum { BO_WAITS, BO_WAIT_NS }; /* its counters (stat_names) */

typedef struct backoff_state {
  uint64_t rng;
} backoff_state_t;

static uint64_t min_ns, max_ns;

static int backoff_init(const sstm_config_t *cfg) {
  min_ns = cfg->backoff_min_ns;
  max_ns = cfg->backoff_max_ns;
  return 0;
}

static void backoff_desc_init(sstm_cm_ctx_t *ctx) {
  backoff_state_t *s = ctx->state;
  s->rng =
      0x853C49E6748FEA9Bull ^ ((uint64_t)sstm_desc_slot(ctx->desc) + 1) * 0x9E3779B97F4A7C15ull;
}

static sstm_cm_action_t backoff_conflict(sstm_cm_ctx_t *ctx, const sstm_conflict_t *c,
                                         uint64_t *wait_ns) {
  (void)ctx, (void)c, (void)wait_ns;
  return SSTM_CM_ABORT_SELF;
}

static void backoff_abort(sstm_cm_ctx_t *ctx, const sstm_abort_info_t *info) {
  if (!sstm__cm_conflict_abort(info->reason)) return;
  backoff_state_t *s = ctx->state;
  /* conflicts, not retries: the user's restarts do not lengthen the wait */
  unsigned shift = ctx->conflicts < 30 ? ctx->conflicts : 30;
  uint64_t bound = min_ns << shift;
  if (bound > max_ns || bound < min_ns) bound = max_ns;
  uint64_t ns = sstm__rand(&s->rng) % bound;
  sstm_cm_count(ctx, BO_WAITS, 1);
  sstm_cm_count(ctx, BO_WAIT_NS, ns); /* drawn, not measured */
  sstm_cm_note(ctx, SSTM_ACT_BACKOFF);
  sstm_spin_ns(ns);
  sstm_cm_note(ctx, SSTM_ACT_NONE);
}

const sstm_cm_ops_t sstm__cm_backoff = {
    .name = "backoff",
    .description = "abort self, then randomised exponential backoff before restart",
    .state_size = sizeof(backoff_state_t),
    .init = backoff_init,
    .desc_init = backoff_desc_init,
    .on_conflict = backoff_conflict,
    .on_abort = backoff_abort,
    .stat_names = {"backoffs", "backoff_drawn_ns"},
};
