/* SPDX-License-Identifier: MIT */
/* The engine's side of the contention-management interface
 * (include/schedstm/cm.h): the policy a descriptor runs (its state and its
 * per-descriptor and per-thread hooks), the services a policy calls on a
 * party (running, watch, wait) or on its own descriptor (counters, actions,
 * irrevocable restart), and the selection of the configured policy, which
 * the policy layer's catalogue makes (src/iface/cm_catalog.h). The
 * catalogue of names itself is the policy layer's: src/cm/registry.c.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdlib.h>

#include "core/engine.h"
#include "iface/cm_catalog.h"

/* ---- selection and the policy of each descriptor ---- */

SSTM_API const sstm_cm_ops_t *sstm_cm_current(void) {
  return atomic_load_explicit(&sstm__g.initialized, memory_order_acquire) ? sstm__g.cm : NULL;
}

int sstm__cm_select(const char *name, const sstm_cm_ops_t **out) {
  return sstm__cm_catalog.select(name, out);
}

int sstm__cm_list(char *buf, size_t len) { return sstm__cm_catalog.list(buf, len); }

/* The policy state is allocated (zeroed) once per descriptor and kept when
 * the descriptor is reused: other threads may still hold it through
 * sstm_cm_state_of(). Freed at shutdown with the descriptor. */
int sstm__cm_desc_init(struct sstm_desc *d) {
  const sstm_cm_ops_t *o = d->cm;
  if (d->cm_state == NULL && o->state_size) {
    d->cm_state = calloc(1, o->state_size);
    if (d->cm_state == NULL) {
      sstm__set_error("out of memory for the state of policy '%s' (%zu bytes)", o->name,
                      o->state_size);
      return SSTM_ENOMEM;
    }
  }
  d->cm_ctx = (sstm_cm_ctx_t){.state = d->cm_state, .desc = d};
  if (o->desc_init) o->desc_init(&d->cm_ctx);
  return 0;
}

void sstm__cm_desc_fini(struct sstm_desc *d) {
  if (d->cm && d->cm->desc_fini) d->cm->desc_fini(&d->cm_ctx);
}

/* on_attach / on_detach run on the thread concerned with d attached to
 * it; no transaction may begin in them (in_hook, txn.c). */
void sstm__cm_attach(struct sstm_desc *d) {
  if (!d->cm || !d->cm->on_attach) return;
  d->in_hook++;
  d->cm->on_attach(&d->cm_ctx);
  d->in_hook--;
}

void sstm__cm_detach(struct sstm_desc *d) {
  if (!d->cm || !d->cm->on_detach) return;
  d->in_hook++;
  d->cm->on_detach(&d->cm_ctx);
  d->in_hook--;
}

/* ---- services on a party and on the caller's own descriptor ---- */

SSTM_API bool sstm_party_running(const sstm_party_t *p) {
  if (p == NULL || p->desc == NULL) return false;
  /* acquire: a policy that sees the attempt ended also sees its lock
   * releases (they precede the IDLE store, which is a release). */
  uint64_t st = atomic_load_explicit(&p->desc->status, memory_order_acquire);
  return sstm_st_serial(st) == p->txid && sstm_st_state(st) != SSTM_ST_IDLE;
}

_Atomic uint64_t sstm__wait_slice_ns = 1000000;

/* How far sstm_party_wait's sleep slice grows. When threads far outnumber
 * CPUs a ser-block loser can wait behind a preempted winner for a whole
 * scheduling round: a fixed 1 ms slice re-checks many times over, and
 * slices that grow to 16 ms made far fewer futex calls (docs/benchmarks.md,
 * "Figures behind the design"). */
#define WAIT_SLICE_GROWTH 16

SSTM_API bool sstm_party_watch(const sstm_party_t *p) {
  if (p == NULL || p->desc == NULL) return false;
  _Atomic uint64_t *w = &p->desc->status;
  uint64_t st = atomic_load_explicit(w, memory_order_acquire);
  for (;;) {
    enum sstm_state s = sstm_st_state(st);
    if (sstm_st_serial(st) != p->txid ||
        (s != SSTM_ST_ACTIVE && s != SSTM_ST_KILLED && s != SSTM_ST_IRREVOCABLE))
      return false;
    if (st & SSTM_ST_WATCHED) return true;
    /* acq_rel: our writes before the watch (a policy's bookkeeping) are
     * visible to the owner's RMW that reads the flag at the attempt's end. */
    if (atomic_compare_exchange_weak_explicit(w, &st, st | SSTM_ST_WATCHED, memory_order_acq_rel,
                                              memory_order_acquire))
      return true;
  }
}

/* Looks at a COMMITTING party's status, pausing between looks, before a
 * BLOCK waiter goes to sleep on it: a commit that runs on another CPU ends
 * within this (a few microseconds), and the sleep costs a membarrier and
 * two futex calls. */
#define COMMIT_SPINS 128

/* sstm_party_wait's sleep behind a COMMITTING attempt ((4.8) in
 * docs/design/core.md): registered in the party's commit_sleepers, which
 * the commit's end reads after its IDLE store. */
typedef struct commit_sleep {
  _Atomic uint32_t *count; /* the party's commit_sleepers, once registered */
} commit_sleep_t;

static void commit_sleep_leave(commit_sleep_t *cs) {
  /* relaxed: the count only decides whether a commit's end calls
   * FUTEX_WAKE; a stale non-zero costs one spurious wake. */
  if (cs->count) atomic_fetch_sub_explicit(cs->count, 1, memory_order_relaxed);
  cs->count = NULL;
}

/* The slice of one futex sleep, and whether the deadline has passed. */
static bool sleep_slice(uint64_t now0, uint64_t deadline, uint64_t slice_min, uint64_t *left_out) {
  uint64_t now = sstm__now_ns();
  if (now >= deadline) return false;
  /* Sliced sleeps: the only end that wakes nobody is that of an
   * attempt holding no lock whose flag was set by hand in its commit's
   * last instant (see sstm_commit); the slice bounds that case. A slice
   * lasts as long as the wait so far, at least sstm__wait_slice_ns
   * (1 ms) and at most WAIT_SLICE_GROWTH times that: a waiter notices
   * such an end at most 1 ms, or as long as it had already waited,
   * late, and a long wait re-checks once per doubling of its length,
   * not once per millisecond. */
  const uint64_t slice_max = slice_min * WAIT_SLICE_GROWTH;
  uint64_t waited = now - now0;
  uint64_t slice = waited < slice_min ? slice_min : waited < slice_max ? waited : slice_max;
  uint64_t left = deadline == UINT64_MAX ? 0 : deadline - now; /* 0: no timeout */
  if (slice != 0 && (left == 0 || left > slice)) left = slice;
  *left_out = left;
  return true;
}

SSTM_API int sstm_party_wait(const sstm_party_t *p, sstm_wait_mode_t mode, uint64_t timeout_ns) {
  if (p == NULL || p->desc == NULL) {
    sstm__set_error("sstm_party_wait: %s is NULL",
                    p == NULL ? "the party" : "the party's descriptor");
    return SSTM_EINVAL;
  }
  if (mode != SSTM_WAIT_SPIN && mode != SSTM_WAIT_BLOCK && mode != SSTM_WAIT_YIELD) {
    sstm__set_error("sstm_party_wait: unknown wait mode %d", (int)mode);
    return SSTM_EINVAL;
  }
  _Atomic uint64_t *w = &p->desc->status;
  /* Saturating: a timeout past the end of the clock waits without bound. */
  uint64_t now0 = sstm__now_ns();
  uint64_t deadline = timeout_ns && timeout_ns < UINT64_MAX - now0 ? now0 + timeout_ns : UINT64_MAX;
  /* relaxed: a tuning value, set before the threads that use it. */
  const uint64_t slice_min = atomic_load_explicit(&sstm__wait_slice_ns, memory_order_relaxed);
  /* BLOCK sleeps behind a committing party only with the asymmetric fence
   * (4.8); without it, it spins and yields as the other modes do. */
  const bool commit_sleep = mode == SSTM_WAIT_BLOCK && sstm__g.membarrier;
  commit_sleep_t cs = {NULL};
  int rc = 0;
  uint64_t left;
  unsigned commit_looks = 0; /* looks at the party COMMITTING */
  /* The caller's own descriptor, when it has one: an executor may ask it
   * to give its worker up while it waits (its attempt has rolled back, so
   * pausing it costs nothing and nobody meets its locks). cm_wait tells
   * submitters so (exec.c, victim); the one that chooses this thread sets
   * LEAVE, which ends the wait, and signals it (which interrupts a futex
   * sleep, EINTR); the retry's first polled point then switches. Only
   * between attempts (a policy's on_abort: the attempt rolled back, its
   * status IDLE); a wait inside a running attempt (on_conflict) holds what
   * the attempt holds. relaxed: the owner's own status. */
  struct sstm_desc *self = sstm__cur;
  if (self &&
      sstm_st_state(atomic_load_explicit(&self->status, memory_order_relaxed)) != SSTM_ST_IDLE)
    self = NULL;
  if (self) atomic_store_explicit(&self->cm_wait, SSTM_CM_WAIT_WAITING, memory_order_relaxed);
  for (unsigned spins = 0;; spins++) {
    /* acquire: once the attempt is seen ended, its lock releases are
     * visible (they precede the release that ended it). */
    uint64_t st = atomic_load_explicit(w, memory_order_acquire);
    enum sstm_state s = sstm_st_state(st);
    if (sstm_st_serial(st) != p->txid || s == SSTM_ST_IDLE) break;
    /* relaxed: see cm_wait (engine.h) */
    if (self && atomic_load_explicit(&self->cm_wait, memory_order_relaxed) == SSTM_CM_WAIT_LEAVE)
      break;
    if (mode == SSTM_WAIT_BLOCK && s != SSTM_ST_COMMITTING) {
      if (!(st & SSTM_ST_SLEEPERS)) {
        uint64_t nst = st | SSTM_ST_SLEEPERS;
        /* acq_rel: pairs with the owner's RMW that reads the flag. */
        if (!atomic_compare_exchange_strong_explicit(w, &st, nst, memory_order_acq_rel,
                                                     memory_order_acquire))
          continue;
        st = nst;
      }
      if (!sleep_slice(now0, deadline, slice_min, &left)) {
        rc = SSTM_EBUSY;
        break;
      }
      /* Sleeps only while the low 32 bits still equal st's: any transition
       * of the attempt changes them, so an ended attempt is never slept on
       * and the owner's wake cannot be missed. */
      sstm__futex_wait(w, (uint32_t)st, left);
      continue;
    }
    if (commit_sleep && ++commit_looks > COMMIT_SPINS) { /* BLOCK, and s is COMMITTING */
      /* A committing party: its commit's end wakes us if it sees us
       * counted (4.8). The count first, then the fence, then the status
       * read above again (its re-read is the loop's next round); the
       * futex's value check then refuses to sleep on an ended commit. */
      if (cs.count == NULL) {
        cs.count = &p->desc->commit_sleepers;
        /* relaxed: the membarrier that follows orders it before our next
         * status read, against the committer's compiler-only fence. */
        atomic_fetch_add_explicit(cs.count, 1, memory_order_relaxed);
        sstm__heavy_fence();
        continue;
      }
      if (!sleep_slice(now0, deadline, slice_min, &left)) {
        rc = SSTM_EBUSY;
        break;
      }
      sstm__futex_wait(w, (uint32_t)st, left);
      continue;
    }
    if (mode == SSTM_WAIT_YIELD && s != SSTM_ST_COMMITTING) {
      if (sstm__now_ns() >= deadline) {
        rc = SSTM_EBUSY;
        break;
      }
      sched_yield();
      continue;
    }
    if ((spins & 63) == 63) {
      if (sstm__now_ns() >= deadline) {
        rc = SSTM_EBUSY;
        break;
      }
      /* A committing party may be descheduled: the modes that give up the
       * CPU anyway do so here too (SPIN keeps it, as asked). */
      if (mode != SSTM_WAIT_SPIN && !commit_sleep) sched_yield();
    }
    sstm__cpu_relax();
  }
  commit_sleep_leave(&cs);
  if (self) atomic_store_explicit(&self->cm_wait, SSTM_CM_WAIT_NONE, memory_order_relaxed);
  return rc;
}

SSTM_API void *sstm_cm_state_of(sstm_desc_t *d) { return d ? d->cm_state : NULL; }

SSTM_API void sstm_cm_count(sstm_cm_ctx_t *ctx, unsigned idx, uint64_t n) {
  if (ctx == NULL || ctx->desc == NULL || idx >= SSTM_CM_NSTATS) return;
  sstm__ctr_add(&ctx->desc->ctr.cm_stats[idx], n);
}

SSTM_API void sstm_cm_note(sstm_cm_ctx_t *ctx, sstm_cm_act_t act) {
  if (ctx == NULL || ctx->desc == NULL || (unsigned)act >= SSTM_ACT_COUNT) return;
  sstm__ctr_add(&ctx->desc->ctr.cm_actions[act], 1);
  if (ctx->desc->stt) sstm__stt_action(ctx->desc, act);
}

SSTM_API void sstm_cm_next_irrevocable(sstm_cm_ctx_t *ctx) {
  if (ctx && ctx->desc) {
    ctx->desc->irrev_sticky = true;
    /* the end of the transaction clears the mark (txn.c, retry_state_clear),
     * also when no abort follows */
    ctx->desc->slow |= SSTM_SLOW_RETRIED;
  }
}
