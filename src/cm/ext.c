/* SPDX-License-Identifier: MIT */
/* ext ([Maldonado10], section 4, Algorithm 6): make it less likely that a thread
 * is preempted inside a transaction, and give the CPU back after the commit
 * if it was granted extra time. A modifier: "P+ext" runs policy P with ext
 * around it (for example "ser-block+ext"); "ext" alone is "suicide+ext".
 *
 * The facility is chosen once at init (os/sched.h), and reported by
 * sstm_describe ("ext=..."):
 *  rseq   Linux >= 7.0 with CONFIG_RSEQ_SLICE_EXTENSION: at begin set the
 *         request byte of the thread's rseq slice control (a plain store);
 *         the kernel may then defer a preemption and set `granted`; at the
 *         end clear the request and, if granted, call rseq_slice_yield().
 *  slice  Linux >= 6.12: a longer EEVDF custom slice for threads that run
 *         transactions (sched_setattr sched_runtime, unprivileged, set once
 *         per thread when a descriptor is attached to it and put back when
 *         it is detached: SCHEDSTM_EXT_SLICE_US, default 4000). Coarser: the
 *         thread is preempted less often whether in a transaction or not,
 *         and nothing tells it that it was granted time, so it never yields.
 *  none   neither is available: a documented no-op.
 * A thread may get less than the probe found (its rseq area cannot enable
 * the extension: the slice instead; its slice cannot be set: nothing).
 * sstm_describe then says so after the mode: "ext=rseq,ext-fallback=
 * slice:N,none:M" counts the attachments that got each lesser facility.
 * In rseq mode the request is up from the base policy's on_begin to its
 * on_commit (ext enters first and leaves last). An aborted attempt keeps it
 * through its rollback, the abort hooks and the user's abort actions (the
 * policy interface has no earlier call), and withdraws it, giving a grant
 * back, before the base's on_abort, which may wait or sleep. A transaction
 * detached inside an attempt gives a grant back on the thread it leaves and
 * asks again on the thread that resumes it. Kernels before 7.0 have no
 * rseq extension: tests run this mode on a simulated kernel
 * (sstm__ext_sim, os/sched.h).
 *
 * Knobs, taken at every sstm_init (iface/cm_services.h, sstm__cm_knob_ext):
 * cfg.ext_slice_us (SCHEDSTM_EXT_SLICE_US), the custom slice of slice mode, 100..100000 us,
 * default 4000; cfg.ext_mode (SCHEDSTM_EXT_MODE), auto (default: the probe decides), none
 * or slice (forces that facility, slice only where the kernel has it; for
 * tests).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm/common.h"
#include "iface/cm_services.h"
#include "os/sched.h"

/* The last policy counter slot: "P+ext" is refused for a P that uses it
 * (include/schedstm/cm.h). */
#define EXT_STAT_YIELDS (SSTM_CM_NSTATS - 1)

typedef struct ext_state {
  sstm_slice_ctrl_t *ctrl; /* rseq mode: this thread's control bytes */
  uint64_t slice_prev;     /* slice mode: the thread's slice before (0: default) */
  bool slice_set;
  bool inside; /* rseq mode: between ext_begin and ext_end, on whichever thread */
} ext_state_t;

static sstm_ext_probe_t probe;
static uint64_t slice_ns = SSTM_EXT_SLICE_US_DEFAULT * 1000ull;
/* The kernel's default slice (sstm__sched_default_slice_ns), probed at init:
 * a thread found with it gets the default back (0), any other slice its own
 * custom one, even when sstm_init's thread had a custom slice. */
static uint64_t default_slice_ns;

/* Attachments that got a lesser facility than probe.mode, by the one they
 * got (SSTM_EXT_NONE, SSTM_EXT_SLICE); reset at init. relaxed: counters,
 * read only for sstm_describe. */
static _Atomic unsigned fallbacks[SSTM_EXT_SLICE + 1];

/* cfg.ext_slice_us, SCHEDSTM_EXT_SLICE_US (the custom slice of slice
 * mode, 100..100000 us, default 4000) and cfg.ext_mode, SCHEDSTM_EXT_MODE (auto | none | slice,
 * default auto: the probe decides; for tests), taken again at every sstm_init. */
static int ext_init(void) {
  uint64_t us;
  sstm_ext_force_t force;
  int rc;
  if ((rc = sstm__cm_knob_ext(&force, &us)) != 0) return rc;
  slice_ns = us * 1000ull;
  for (int m = 0; m <= SSTM_EXT_SLICE; m++)
    atomic_store_explicit(&fallbacks[m], 0, memory_order_relaxed);
  default_slice_ns = sstm__sched_default_slice_ns();
  sstm__ext_probe(&probe);
  if (force == SSTM_EXT_FORCE_NONE)
    probe.mode = SSTM_EXT_NONE;
  else if (force == SSTM_EXT_FORCE_SLICE && probe.setattr_rc == 0)
    probe.mode = SSTM_EXT_SLICE;
  return 0;
}

/* Per-thread set-up, on the thread the descriptor is attached to (the
 * rseq area and the custom slice are the thread's, not the descriptor's).
 * The kernel's switch for the rseq extension is per thread too: each thread
 * enables it; one that cannot falls back to the custom slice. */
static void ext_attach(ext_state_t *s) {
  s->ctrl = NULL;
  s->slice_set = false;
  if (probe.mode == SSTM_EXT_RSEQ && sstm__ext_rseq_enable()) s->ctrl = sstm__ext_rseq_ctrl();
  /* A transaction detached inside an attempt and resumed here ([Silvestri17]'s
   * suspended requests): it asks this thread's kernel for the extension
   * as its begin asked the previous thread's. */
  if (s->ctrl && s->inside) sstm__ext_enter(s->ctrl);
  if (s->ctrl == NULL && probe.setattr_rc == 0 && probe.mode != SSTM_EXT_NONE) {
    uint64_t prev = sstm__sched_slice_ns();
    s->slice_prev = prev == default_slice_ns ? 0 : prev;
    s->slice_set = sstm__ext_set_slice(slice_ns);
  }
  sstm_ext_mode_t got = s->ctrl ? SSTM_EXT_RSEQ : s->slice_set ? SSTM_EXT_SLICE : SSTM_EXT_NONE;
  if (got != probe.mode) {
    atomic_fetch_add_explicit(&fallbacks[got], 1, memory_order_relaxed);
    sstm_cm_info_changed(); /* the state table's policy line says so too */
  }
}

/* Withdraw the request; if the kernel granted extra time, give the CPU
 * back: the system call ends the grant and clears `granted` (the kernel's
 * byte: we never write it). */
static void ext_give_back(sstm_cm_ctx_t *ctx, ext_state_t *s) {
  if (s->ctrl && sstm__ext_leave(s->ctrl)) {
    sstm_cm_count(ctx, EXT_STAT_YIELDS, 1);
    sstm__ext_slice_yield();
  }
}

/* Leaving the thread: no request left behind, and a grant made while the
 * transaction ran here is given back here (the thread that resumes it asks
 * its own kernel again, in ext_attach). */
static void ext_detach(sstm_cm_ctx_t *ctx, ext_state_t *s) {
  ext_give_back(ctx, s);
  if (s->slice_set) sstm__ext_set_slice(s->slice_prev); /* back to the thread's own */
  s->slice_set = false;
  s->ctrl = NULL;
}

static void ext_begin(ext_state_t *s) {
  s->inside = true;
  if (s->ctrl) sstm__ext_enter(s->ctrl);
}

static void ext_end(sstm_cm_ctx_t *ctx, ext_state_t *s) {
  s->inside = false;
  ext_give_back(ctx, s);
}

/* ---- composition "P+ext" ---- */

/* The base's state first, at offset 0 (sstm__cm_parts_layout), so that
 * its hooks can be called with the composite's own context (c_init); ext's
 * after it, at base_size. */
typedef struct composite {
  sstm_cm_ops_t ops;
  const sstm_cm_ops_t *base;
  size_t base_size; /* offset of the ext state */
  char name[64];
  char description[200];
} composite_t;

/* One composite per registered base, built under the catalogue's lock
 * (sstm__cm_ext_compose); each lives until exit. */
static composite_t pool[SSTM_CM_MAX_POLICIES];
static unsigned used;

/* The composite sstm_init selected, set by its init hook before any
 * descriptor exists (the hooks below run only for it: at most one policy
 * is in use at a time). A plain variable: other threads reach the hooks
 * only through a descriptor, which they get after sstm_init's release of
 * the library's initialised flag (their acquire), and so see it set. */
static composite_t *active;

static const composite_t *comp_of(sstm_cm_ctx_t *ctx) {
  (void)ctx;
  return active;
}
static ext_state_t *ext_of(sstm_cm_ctx_t *ctx) {
  return (ext_state_t *)(void *)((char *)ctx->state + comp_of(ctx)->base_size);
}

/* The pool entry whose ops are `o`, or NULL: found by address, not by
 * `used`, which a concurrent sstm_cm_find may be moving on. */
static composite_t *comp_find(const sstm_cm_ops_t *o) {
  uintptr_t p = (uintptr_t)o, lo = (uintptr_t)pool;
  if (p < lo || p >= lo + sizeof pool || (p - lo) % sizeof pool[0] != offsetof(composite_t, ops))
    return NULL;
  return &pool[(p - lo) / sizeof pool[0]];
}

static void c_begin(sstm_cm_ctx_t *ctx);
static void c_commit(sstm_cm_ctx_t *ctx);
static void c_abort(sstm_cm_ctx_t *ctx, const sstm_abort_info_t *info);

static int c_init(const sstm_config_t *cfg) {
  composite_t *c = comp_find(sstm__cm_selected());
  if (c == NULL) {
    /* Its init, fini and describe hooks have no context to say which
     * composite they belong to: only the selected policy's are known. */
    sstm__set_error("a \"P+ext\" policy runs only as the policy sstm_init selects, not "
                    "inside another policy (here '%s')",
                    sstm__cm_selected() ? sstm__cm_selected()->name : "none");
    return SSTM_EINVAL;
  }
  active = c;
  int rc = c->base->init ? c->base->init(cfg) : 0;
  if (rc == 0 && (rc = ext_init()) != 0 && c->base->fini) c->base->fini(); /* undo the base */
  if (rc == 0 && probe.mode != SSTM_EXT_RSEQ) {
    /* Without the rseq protocol ext does nothing per transaction: call the
     * base policy's hooks directly (its state is first, at offset 0), so
     * that "P+ext" costs exactly P on the transaction paths. No descriptor
     * exists yet, so nobody is reading these fields. */
    c->ops.on_begin = c->base->on_begin;
    c->ops.on_commit = c->base->on_commit;
    c->ops.on_abort = c->base->on_abort;
  } else {
    c->ops.on_begin = c_begin;
    c->ops.on_commit = c_commit;
    c->ops.on_abort = c_abort;
  }
  return rc;
}
static void c_fini(void) {
  if (active->base->fini) active->base->fini();
}
static void c_desc_init(sstm_cm_ctx_t *ctx) {
  if (comp_of(ctx)->base->desc_init) comp_of(ctx)->base->desc_init(ctx);
  *ext_of(ctx) = (ext_state_t){0}; /* not attached to a thread yet */
}
static void c_desc_fini(sstm_cm_ctx_t *ctx) {
  if (comp_of(ctx)->base->desc_fini) comp_of(ctx)->base->desc_fini(ctx);
}
/* ext first, the base after it, and detach in the reverse order: a base
 * that changes the same setting when it attaches (softser's slice lever
 * lowering a thread with pending conflicts) stacks on top of ext's slice,
 * ext records the thread's own slice, and each puts back what it found. */
static void c_attach(sstm_cm_ctx_t *ctx) {
  ext_attach(ext_of(ctx));
  if (comp_of(ctx)->base->on_attach) comp_of(ctx)->base->on_attach(ctx);
}
static void c_detach(sstm_cm_ctx_t *ctx) {
  if (comp_of(ctx)->base->on_detach) comp_of(ctx)->base->on_detach(ctx);
  ext_detach(ctx, ext_of(ctx));
}
static void c_begin(sstm_cm_ctx_t *ctx) {
  ext_begin(ext_of(ctx));
  if (comp_of(ctx)->base->on_begin) comp_of(ctx)->base->on_begin(ctx);
}
static void c_commit(sstm_cm_ctx_t *ctx) {
  if (comp_of(ctx)->base->on_commit) comp_of(ctx)->base->on_commit(ctx);
  ext_end(ctx, ext_of(ctx));
}
static sstm_cm_action_t c_conflict(sstm_cm_ctx_t *ctx, const sstm_conflict_t *cf, uint64_t *w) {
  return comp_of(ctx)->base->on_conflict(ctx, cf, w);
}
static void c_abort(sstm_cm_ctx_t *ctx, const sstm_abort_info_t *info) {
  ext_end(ctx, ext_of(ctx));
  if (comp_of(ctx)->base->on_abort) comp_of(ctx)->base->on_abort(ctx, info);
}
/* The base's line, then ext's, written straight into buf (snprintf-style:
 * returns the whole length, so a caller sees when its buffer was short; an
 * intermediate buffer cut adaptive's long line into plausible numbers). */
static int c_describe(char *buf, size_t len) {
  const composite_t *c = active;
  int n = 0;
  if (c->base->describe) n = c->base->describe(buf, len);
  if (n < 0) n = 0;
  if (n == 0 && len > 0) buf[0] = '\0';
  char ext[96];
  _Static_assert(SSTM_EXT_SLICE_US_MAX <= 100000u && sizeof ext >= sizeof SSTM__CM_EXT_LONGEST,
                 "SSTM__CM_EXT_LONGEST is the longest part written here");
  if (probe.mode == SSTM_EXT_SLICE)
    snprintf(ext, sizeof ext, "ext=slice(%lluus)", (unsigned long long)(slice_ns / 1000));
  else
    snprintf(ext, sizeof ext, "ext=%s", sstm__ext_mode_name(probe.mode));
  unsigned fb_slice = atomic_load_explicit(&fallbacks[SSTM_EXT_SLICE], memory_order_relaxed);
  unsigned fb_none = atomic_load_explicit(&fallbacks[SSTM_EXT_NONE], memory_order_relaxed);
  if (fb_slice || fb_none) {
    size_t l = strlen(ext);
    snprintf(ext + l, sizeof ext - l, ",ext-fallback=slice:%u,none:%u", fb_slice, fb_none);
  }
  size_t at = (size_t)n < len ? (size_t)n : len;
  int m = snprintf(at < len ? buf + at : NULL, len - at, "%s%s", n ? "," : "", ext);
  return n + m;
}

/* Build "base+ext", or return the one built before: one composite per
 * registered base (the registry calls this under its lock, and only for a
 * registered base), so the pool never runs out. The result lives until exit.
 * NULL, with the reason in sstm_last_error(), for a base that uses the last
 * counter slot (ext's), or one whose state is out of bounds. */
const sstm_cm_ops_t *sstm__cm_ext_compose(const sstm_cm_ops_t *base) {
  for (unsigned i = 0; i < used; i++)
    if (pool[i].base == base) return &pool[i].ops;
  if (base->stat_names[EXT_STAT_YIELDS] != NULL) {
    sstm__set_error("contention manager '%s+ext': policy '%s' uses all %d policy counters, and "
                    "+ext needs the last one (ext_yields): a policy composable with +ext may "
                    "use at most %d",
                    base->name, base->name, SSTM_CM_NSTATS, SSTM_CM_NSTATS - 1);
    return NULL;
  }
  if (base->state_size > SSTM_CM_STATE_MAX) {
    sstm__set_error("contention manager '%s+ext': state_size %zu of '%s' is out of bounds",
                    base->name, base->state_size, base->name);
    return NULL;
  }
  if (used == SSTM_CM_MAX_POLICIES) {
    sstm__set_error("contention manager '%s+ext': no room for another composite", base->name);
    return NULL;
  }
  composite_t *c = &pool[used];
  c->base = base;
  size_t off;
  c->base_size = sstm__cm_parts_layout(0, &base, 1, &off);
  snprintf(c->name, sizeof c->name, "%s+ext", base->name);
  snprintf(c->description, sizeof c->description, "%s; with time-slice extension",
           base->description ? base->description : base->name);
  c->ops = (sstm_cm_ops_t){
      .name = c->name,
      .description = c->description,
      .state_size = c->base_size + sizeof(ext_state_t),
      .init = c_init,
      .fini = c_fini,
      .desc_init = c_desc_init,
      .desc_fini = c_desc_fini,
      .on_begin = c_begin,
      .on_commit = c_commit,
      .on_conflict = c_conflict,
      .on_abort = c_abort,
      .describe = c_describe,
      .on_attach = c_attach,
      .on_detach = c_detach,
  };
  for (int i = 0; i < SSTM_CM_NSTATS - 1; i++)
    c->ops.stat_names[i] = base->stat_names[i];
  c->ops.stat_names[EXT_STAT_YIELDS] = "ext_yields";
  used++;
  return &c->ops;
}
