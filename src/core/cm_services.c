/* SPDX-License-Identifier: MIT */
/* The engine's services to the built-in policies (src/iface/cm_services.h):
 * the descriptor facts and engine facilities they use instead of the
 * engine's internals. */
#include "core/engine.h"
/* after engine.h, whose SSTM_QUOTE it then leaves as it is */
#include "iface/cm_services.h"

const sstm_cm_ops_t *sstm__cm_selected(void) { return sstm__g.cm; }

/* ---- counter snapshots ---- */

unsigned sstm__cm_slots(void) {
  /* acquire: pairs with the release that publishes hiwater after the
   * descriptor (registry.c, slot_alloc). */
  return atomic_load_explicit(&sstm__g.hiwater, memory_order_acquire);
}

bool sstm__cm_counts(unsigned slot, sstm_cm_counts_t *out) {
  if (slot >= sstm__g.cfg.max_threads) return false;
  struct sstm_desc *d = sstm__desc_at(slot);
  if (d == NULL) return false;
  /* Owner-written counters (sstm__ctr_add): relaxed loads, each whole. */
  uint64_t u = sstm__ctr_get(&d->ctr.commits_update);
  uint64_t a = 0;
  for (int r = 0; r < SSTM_ABORT_REASON_COUNT; r++)
    a += sstm__ctr_get(&d->ctr.aborts[r]);
  *out = (sstm_cm_counts_t){
      .commits = sstm__ctr_get(&d->ctr.commits_ro) + u,
      .updates = u,
      .aborts = a,
      /* relaxed: facts for a decision; the tid is 0 once the descriptor
       * is released (registry.c, desc_release) */
      .tid = atomic_load_explicit(&d->tid, memory_order_relaxed),
      .attached = atomic_load_explicit(&d->attached, memory_order_relaxed),
  };
  return true;
}

/* ---- the read set of the attempt that just ended ---- */

bool sstm__cm_prev_reads(const sstm_cm_ctx_t *ctx, const void **path, uint32_t max, uint32_t *n) {
  const struct sstm_desc *d = ctx->desc;
  *n = 0;
  /* Owner-only fields: on_abort runs on the descriptor's thread. */
  if (sstm__serial(d) != ctx->txid) return false;
  uint32_t k = sstm_rset_count(&d->rs);
  if (k > max) k = max;
  for (uint32_t i = 0; i < k; i++)
    path[i] = d->rs.e[i].lock;
  *n = k;
  return true;
}

/* ---- an admission hook switched at run time ---- */

void sstm__cm_admit_hook(sstm_cm_ctx_t *ctx, void (*fn)(sstm_cm_ctx_t *ctx)) {
  struct sstm_desc *d = ctx->desc;
  /* Owner-only, like the slow bytes: the hooks run on the descriptor's
   * thread (desc_init before any thread runs it). */
  d->cm_admit_fn = fn;
  d->slow_begin = sstm__desc_slow_begin(d) ? SSTM_SLOW_BEGIN : 0;
}

bool sstm__cm_admit_hook_on(const sstm_desc_t *d) { return d->cm_admit_fn != NULL; }

/* ---- OS priority generation ---- */

uint32_t sstm__cm_prio_gen(sstm_desc_t *d) {
  return atomic_load_explicit(&d->os_prio_gen, memory_order_relaxed);
}

/* ---- notes for the state table ---- */

void sstm__cm_stt_action(sstm_cm_ctx_t *ctx, sstm_cm_act_t act) {
  if (ctx->desc->stt) sstm__stt_action(ctx->desc, act);
}

void sstm__cm_stt_prio(sstm_desc_t *d, int policy, int nice) { sstm__stt_prio(d, policy, nice); }

void sstm__cm_stt_prio_refresh(sstm_desc_t *d) { sstm__stt_prio_refresh(d); }

/* ---- typed knobs ----
 * From the configuration sstm_init() is applying (sstm__g.cfg is set before
 * the policy's init hook runs), which core/config.c read and checked. */

int sstm__cm_knob_softser_lever(sstm_lever_t *lever, bool *probe) {
  sstm_softser_lever_t l = sstm__g.cfg.softser_lever;
  *probe = l == SSTM_SOFTSER_LEVER_AUTO;
  /* after AUTO, the levers in sstm_lever_t's order (asserted in config.c) */
  *lever = *probe ? SSTM_LEVER_NONE : (sstm_lever_t)(l - 1);
  return 0;
}

int sstm__cm_knob_ext(sstm_ext_force_t *force, uint64_t *slice_us) {
  *force = (sstm_ext_force_t)sstm__g.cfg.ext_mode; /* the same values (config.c) */
  *slice_us = sstm__g.cfg.ext_slice_us;
  return 0;
}

int sstm__cm_knob_prio_escalate(unsigned *after) {
  *after = sstm__g.cfg.prio_escalate;
  return 0;
}

/* ---- test seams ---- */

void sstm__cm_seam_softser_lower(sstm_desc_t *d) { sstm__seam(SSTM_SEAM_SOFTSER_LOWER, d); }
