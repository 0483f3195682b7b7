/* SPDX-License-Identifier: MIT */
/* The engine's services to an executor (src/iface/exec_services.h):
 * polled preemption through the variant byte, non-preemptible regions with
 * a standing request, the signal handler's "may I switch now", and the
 * pause mark with its state protocol against a concurrent take-over
 * (docs/design/core.md (9)). The take-over itself is in conflict.c
 * (sstm__reap_paused), where conflicts are decided.
 */
#define _GNU_SOURCE
#include <link.h>
#include <sched.h>

#include "core/tx_internal.h"
#include "iface/exec_services.h"

/* The hook: written by sstm__exec_set_hook, read at every preemption point
 * that finds a request. acquire/release: the executor's state that the
 * hook uses is set up before it registers it. */
static _Atomic(sstm_exec_hook_t) exec_hook;
static _Atomic int paused_rule; /* sstm_exec_paused_rule_t */
/* The executable segment that holds the engine (sstm__exec_pc_in_engine):
 * written once, at the first registration, before the hook is published
 * (release), read by signal handlers (relaxed: a handler that reads 0..0
 * before the first registration answers "not in the engine", and then
 * also finds no hook, so nothing switches). */
static _Atomic uintptr_t text_lo, text_hi;

/* ---- (a) polled preemption ---- */

static int find_text(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  uintptr_t a = *(uintptr_t *)arg;
  for (unsigned i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X)) continue;
    uintptr_t lo = (uintptr_t)info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
    if (a >= lo && a < hi) {
      atomic_store_explicit(&text_lo, lo, memory_order_relaxed);
      atomic_store_explicit(&text_hi, hi, memory_order_relaxed);
      return 1;
    }
  }
  return 0;
}

int sstm__exec_set_hook(sstm_exec_hook_t fn) {
  if (fn != NULL && atomic_load_explicit(&text_hi, memory_order_relaxed) == 0) {
    uintptr_t self = (uintptr_t)(void *)&sstm__exec_set_hook;
    dl_iterate_phdr(find_text, &self);
  }
  sstm_exec_hook_t cur = atomic_load_explicit(&exec_hook, memory_order_relaxed);
  if (fn != NULL && cur != NULL && cur != fn) {
    sstm__set_error("sstm__exec_set_hook: another executor's hook is registered");
    return SSTM_EBUSY;
  }
  /* release: see exec_hook */
  atomic_store_explicit(&exec_hook, fn, memory_order_release);
  return 0;
}

void sstm__exec_request(sstm_desc_t *d) {
  /* release: pairs with the acquire fence of the barrier that sees the
   * flag (barrier.c, flags_seen), so the hook sees what the requester did
   * before. One lock-free RMW: async-signal-safe. */
  atomic_fetch_or_explicit(&d->variant, SSTM_V_PREEMPTFLAG, memory_order_release);
}

void sstm__exec_cancel(sstm_desc_t *d) {
  atomic_fetch_and_explicit(&d->variant, (uint8_t)~SSTM_V_PREEMPTFLAG, memory_order_relaxed);
  atomic_store_explicit(&d->preempt_standing, false, memory_order_relaxed);
}

bool sstm__exec_pending(const sstm_desc_t *d) {
  sstm_desc_t *m = (sstm_desc_t *)d;
  return (atomic_load_explicit(&m->variant, memory_order_relaxed) & SSTM_V_PREEMPTFLAG) ||
         atomic_load_explicit(&m->preempt_standing, memory_order_relaxed);
}

/* Whether tx's transaction may be switched out at an engine preemption
 * point `where`: no callback of the engine runs on its behalf (a policy,
 * a hook, the sampling callback, an action), and either it is between
 * attempts at a restart (holds nothing), or its attempt runs, is
 * revocable and not killed. The non-preemptible depth is tested by the
 * caller (a standing request). */
static bool may_switch(struct sstm_desc *tx, int where) {
  if (tx->in_hook || tx->in_callback) return false;
  if (where == SSTM_EXEC_AT_RESTART) return true;
  if (tx->depth == 0 || sstm__kind(tx) == SSTM_V_IRREV) return false;
  uint64_t st = atomic_load_explicit(&tx->status, memory_order_relaxed);
  return sstm_st_state(st) == SSTM_ST_ACTIVE && sstm_st_serial(st) == sstm__serial(tx);
}

static SSTM_COLD __attribute__((noreturn)) void hook_broke(struct sstm_desc *tx) {
  sstm__fatal("the executor's preemption hook returned with descriptor %u not attached to the "
              "calling thread (exec_services.h: it must attach it again before returning)",
              tx->slot);
}

bool sstm__exec_point(struct sstm_desc *tx, int where, struct sstm_desc *blocker) {
  /* acquire: see exec_hook */
  sstm_exec_hook_t fn = atomic_load_explicit(&exec_hook, memory_order_acquire);
  if (fn == NULL) return false; /* no executor: nothing to switch to */
  if (atomic_load_explicit(&tx->nopreempt, memory_order_relaxed) != 0) {
    /* STANDING_TICK of [Silvestri17]: replayed when the region ends */
    atomic_store_explicit(&tx->preempt_standing, true, memory_order_relaxed);
    return false;
  }
  if (!may_switch(tx, where)) {
    /* Dropped (exec_services.h), but for a killed attempt at a request's
     * point: the caller has consumed the request's flag, and the kill
     * rolls the attempt back at its next barrier or at the commit's CAS,
     * without calling the hook; the request was made while the attempt
     * ran, and is to be seen, so its flag goes back into the variant byte,
     * where the rollback keeps it for the restart point (9.6). The offer
     * at SSTM_EXEC_AT_BLOCKED is no request. relaxed: the owner's own
     * flag and status (may_switch read KILLED, which only the owner moves
     * on); the requester's release was acquired where the flag was
     * consumed, before this call. */
    if (where != SSTM_EXEC_AT_BLOCKED && where != SSTM_EXEC_AT_RESTART &&
        sstm_st_state(atomic_load_explicit(&tx->status, memory_order_relaxed)) == SSTM_ST_KILLED)
      atomic_fetch_or_explicit(&tx->variant, SSTM_V_PREEMPTFLAG, memory_order_relaxed);
    return false;
  }
  atomic_store_explicit(&tx->preempt_standing, false, memory_order_relaxed);
  /* (9.6) Switched out here, the attempt resumes here, where the kill is
   * checked before anything else: a reaper may put the old versions back.
   * relaxed: the detach's release fetch_or, which follows, publishes it
   * with the pause itself. */
  atomic_fetch_or_explicit(&tx->pause, SSTM_PAUSE_POLLED, memory_order_relaxed);
  fn(tx, (sstm_exec_point_t)where, blocker);
  if (SSTM_UNLIKELY(sstm__cur != tx)) hook_broke(tx);
  /* after the attach (or the unmark), which waited out any reaper */
  atomic_fetch_and_explicit(&tx->pause, ~(uint32_t)SSTM_PAUSE_POLLED, memory_order_relaxed);
  return true;
}

/* ---- (b) where preemption may not happen ---- */

/* The depth is owner-only; a signal handler on the same thread reads it.
 * Relaxed atomics (one instruction each, so a handler sees the old or the
 * new value) with a compiler-only fence on the side that matters: the
 * depth is raised before the region's code and lowered after it. */
void sstm__exec_nopreempt_enter(void) {
  struct sstm_desc *d = sstm__cur;
  if (d == NULL) return;
  atomic_store_explicit(&d->nopreempt,
                        atomic_load_explicit(&d->nopreempt, memory_order_relaxed) + 1,
                        memory_order_relaxed);
  atomic_signal_fence(memory_order_seq_cst);
}

void sstm__exec_nopreempt_clear(void) {
  struct sstm_desc *d = sstm__cur;
  if (d == NULL) return;
  /* relaxed: owner-only, as above; a request standing for the previous
   * request's regions is stale */
  atomic_store_explicit(&d->nopreempt, 0, memory_order_relaxed);
  atomic_store_explicit(&d->preempt_standing, false, memory_order_relaxed);
}

int sstm__exec_nopreempt_leave(void) {
  struct sstm_desc *d = sstm__cur;
  uint32_t n = d ? atomic_load_explicit(&d->nopreempt, memory_order_relaxed) : 0;
  if (n == 0) {
    sstm__set_error("sstm__exec_nopreempt_leave: no non-preemptible region is open");
    return SSTM_ESTATE;
  }
  atomic_signal_fence(memory_order_seq_cst);
  atomic_store_explicit(&d->nopreempt, n - 1, memory_order_relaxed);
  if (n != 1) return 0;
  /* A request stands when a polled point inside the region saw it. One
   * that came after the region's last polled point (the handler refused
   * it, or a submitter set it) is still only the polled flag, and no
   * polled point may follow before the attempt ends: replay it here too,
   * consuming the flag as a barrier would (preempt_point in txn.c). */
  /* relaxed: only a test; the fetch_and below is what consumes the flag
   * and acquires the requester's stores. */
  bool flagged =
      (atomic_load_explicit(&d->variant, memory_order_relaxed) & SSTM_V_PREEMPTFLAG) != 0;
  if (flagged || atomic_load_explicit(&d->preempt_standing, memory_order_relaxed)) {
    atomic_store_explicit(&d->preempt_standing, false, memory_order_relaxed);
    /* acquire: pairs with the requester's release fetch_or
     * (sstm__exec_request), as at a barrier */
    if (flagged)
      atomic_fetch_and_explicit(&d->variant, (uint8_t)~SSTM_V_PREEMPTFLAG, memory_order_acquire);
    (void)sstm__exec_point(d, SSTM_EXEC_AT_REGION_END, NULL);
  }
  return 0;
}

bool sstm__exec_pc_in_engine(uintptr_t pc) {
  return pc >= atomic_load_explicit(&text_lo, memory_order_relaxed) &&
         pc < atomic_load_explicit(&text_hi, memory_order_relaxed);
}

bool sstm__exec_preemptible_now(uintptr_t pc) {
  struct sstm_desc *d = sstm__cur; /* initial-exec TLS: one load */
  if (d == NULL || d->depth == 0) return false;
  /* The engine's code first: outside it, every store the engine made on
   * this thread is complete (no engine function is part-way, the user's
   * own code runs: the body, or the inline read fast path, whose steps
   * hold nothing), so the plain owner-only fields below read as the engine
   * left them. */
  bool in_engine = sstm__exec_pc_in_engine(pc);
  uint64_t st = atomic_load_explicit(&d->status, memory_order_relaxed);
  bool running = sstm_st_state(st) == SSTM_ST_ACTIVE;
  if (!in_engine && running && !d->in_hook && !d->in_callback && sstm__kind(d) != SSTM_V_IRREV &&
      atomic_load_explicit(&d->nopreempt, memory_order_relaxed) == 0)
    return true;
  if (running) sstm__exec_request(d); /* picked up at the next polled point */
  return false;
}

/* ---- (c) paused transactions and priorities ---- */

void sstm__pause_clear(struct sstm_desc *d, uint32_t bit) {
  /* acquire: pairs with the reaper's release that clears REAPING (9.5). */
  uint32_t p = atomic_load_explicit(&d->pause, memory_order_acquire);
  for (unsigned spins = 0;;) {
    if (!(p & bit)) return;
    if (p & SSTM_PAUSE_REAPING) {
      /* a reaper releases the attempt's locks: a short loop, unless it was
       * descheduled in it */
      if (++spins < 64)
        sstm__cpu_relax();
      else
        sched_yield();
      p = atomic_load_explicit(&d->pause, memory_order_acquire);
      continue;
    }
    /* acq_rel: the release half is for the next reaper's acquire CAS (it
     * must not see the bit cleared and then the attempt's logs as they
     * were); acquire as above. */
    if (atomic_compare_exchange_weak_explicit(&d->pause, &p, p & ~bit, memory_order_acq_rel,
                                              memory_order_acquire))
      return;
  }
}

int sstm__exec_mark_paused(sstm_desc_t *d, bool paused) {
  if (d == NULL) {
    sstm__set_error("sstm__exec_mark_paused: the descriptor is NULL");
    return SSTM_EINVAL;
  }
  if (paused)
    /* (9.1) release: a reaper that sees the mark (acquire CAS) sees the
     * attempt's lock set as it stands */
    atomic_fetch_or_explicit(&d->pause, SSTM_PAUSE_MARKED, memory_order_release);
  else
    sstm__pause_clear(d, SSTM_PAUSE_MARKED);
  return 0;
}

bool sstm__exec_is_paused(const sstm_desc_t *d) {
  return (atomic_load_explicit(&((sstm_desc_t *)d)->pause, memory_order_relaxed) &
          SSTM_PAUSE_BY_EXEC) != 0;
}

bool sstm__exec_holds_locks(const sstm_desc_t *d) { return d->ls.n != 0; }

bool sstm__exec_in_cm_wait(const sstm_desc_t *d) {
  return atomic_load_explicit(&((sstm_desc_t *)d)->cm_wait, memory_order_relaxed) ==
         SSTM_CM_WAIT_WAITING;
}

bool sstm__exec_end_cm_wait(sstm_desc_t *d) {
  uint8_t w = SSTM_CM_WAIT_WAITING;
  /* relaxed: see cm_wait (engine.h) */
  return atomic_compare_exchange_strong_explicit(&d->cm_wait, &w, SSTM_CM_WAIT_LEAVE,
                                                 memory_order_relaxed, memory_order_relaxed);
}

void sstm__exec_set_priority(sstm_desc_t *d, int priority) {
  /* relaxed: published for other threads' decisions, as in sstm__begin */
  __atomic_store_n(&d->attr.priority, priority, __ATOMIC_RELAXED);
}

int sstm__exec_priority(const sstm_desc_t *d) {
  return __atomic_load_n(&d->attr.priority, __ATOMIC_RELAXED);
}

int sstm__exec_set_paused_rule(sstm_exec_paused_rule_t rule) {
  if (rule != SSTM_EXEC_PAUSED_TAKEOVER && rule != SSTM_EXEC_PAUSED_WAIT_HIGHER &&
      rule != SSTM_EXEC_PAUSED_ASK) {
    sstm__set_error("sstm__exec_set_paused_rule: %d is not a rule (SSTM_EXEC_PAUSED_TAKEOVER, "
                    "SSTM_EXEC_PAUSED_WAIT_HIGHER, SSTM_EXEC_PAUSED_ASK)",
                    (int)rule);
    return SSTM_EINVAL;
  }
  atomic_store_explicit(&paused_rule, (int)rule, memory_order_relaxed);
  return 0;
}

int sstm__exec_paused_rule(void) {
  return atomic_load_explicit(&paused_rule, memory_order_relaxed);
}

/* ---- (d) the state table's executor area ---- */

/* Whether an executor holds the area. The table exists from sstm_init to
 * sstm_shutdown and executors live inside that span, so the area of the
 * table a holder claimed is the one it releases. */
static atomic_bool stt_exec_claimed;

struct sstm_stt_exec *sstm__exec_stt_claim(void) {
  struct sstm_stt_exec *a = sstm__stt_exec_area();
  if (a == NULL) return NULL;
  bool expect = false;
  /* acquire: a later holder sees nothing of the previous one's writes it
   * could confuse with its own (it rewrites every field anyway); relaxed
   * would do for the flag alone, the pair keeps the hand-over plain. */
  if (!atomic_compare_exchange_strong_explicit(&stt_exec_claimed, &expect, true,
                                               memory_order_acquire, memory_order_relaxed))
    return NULL;
  return a;
}

void sstm__exec_stt_release(struct sstm_stt_exec *area) {
  /* release: pairs with the next claim's acquire. */
  if (area) atomic_store_explicit(&stt_exec_claimed, false, memory_order_release);
}

/* ---- (e) a transaction left behind ---- */

int sstm__exec_end_left_tx(void) {
  struct sstm_desc *tx = sstm__cur;
  if (tx == NULL || tx->depth == 0 || tx->in_callback) return SSTM_ENOTX;
  sstm__abandon(tx);
  return 0;
}
