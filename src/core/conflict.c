/* SPDX-License-Identifier: MIT */
/* Validation, snapshot extension and conflicts: what an attempt does when
 * a read or a write meets a newer version or a lock it does not hold.
 *
 * An extension reads the clock, validates the read set and moves the
 * snapshot's end (docs/design/core.md (2)); validation accepts a stripe
 * unchanged since it was read, locked by the attempt itself, or locked by a
 * running writer whose locks displaced only covered versions (8.5). A lock
 * held by another attempt goes to the contention manager (resolve), whose
 * answer is carried out here: wait (bounded by cfg.wait_max), abort self,
 * or kill the holder and take its lock over (6.1, 6.4). A conflict that no
 * policy can resolve (a failed validation, a kill, an irrevocable attempt
 * in the way) is reported to the policy and aborts (conflict_abort), naming
 * the other party when it is known (6, "Who killed it", "Who invalidated
 * it").
 */
#define _GNU_SOURCE
#include <sched.h>

#include "core/tx_internal.h"

/* Lock word l (locked, not ours) belongs to an attempt that is running and
 * has not started to commit, and every version its locks displaced is
 * <= end: the memory under l still holds data our snapshot covers
 * (8.5). Only for attempts that pass running writers. */
SSTM_NOINLINE bool sstm__held_by_running_writer(const struct sstm_desc *tx, uint64_t l) {
  if (!passes_running_writers(tx) || !sstm_lw_locked(l)) return false;
  /* acquire fence: the caller's relaxed load of l read the owner's lock
   * CAS (release), so its lock_end store is visible to the load below. */
  atomic_thread_fence(memory_order_acquire);
  /* relaxed: ordered after the clock access that gave (or gives) `end` by
   * program order; (8) says why that suffices. */
  uint64_t st;
  const struct sstm_desc *o = running_owner(tx, l, &st);
  return o != NULL && atomic_load_explicit(&o->lock_end, memory_order_relaxed) <= tx->end;
}

/* Every read-set entry is unlocked with a version <= end, i.e. unchanged
 * since it was read (2.2), or is now locked by this attempt (locked only
 * with a version <= end, (2.4)), or by a writer that has not started to
 * commit and displaced only versions <= end (8.5). Called before end
 * moves. Relaxed loads suffice: every caller has just performed an acquire
 * on the clock (extension, (2.1)) or an acq_rel fetch_add on it (commit,
 * (4.3)), which orders these loads after it and makes the locks of every
 * commit counted by that clock value visible (2). */
SSTM_NOINLINE bool sstm__validate(const struct sstm_desc *tx) {
  const sstm_r_entry_t *r = tx->rs.e, *end = tx->rs.top;
  for (; r < end; r++) {
    uint64_t l = atomic_load_explicit(r->lock, memory_order_relaxed);
    if (l > tx->end && l != tx->owner_lw && !sstm__held_by_running_writer(tx, l)) return false;
  }
  return true;
}

SSTM_NOINLINE void sstm__check_killed(struct sstm_desc *tx) {
  /* Relaxed: the callers ordered this after an acquire (6.6). Only the
   * owner moves KILLED on, so a stale ACTIVE here is caught at commit. */
  uint64_t st = atomic_load_explicit(&tx->status, memory_order_relaxed);
  if (SSTM_UNLIKELY(sstm_st_state(st) == SSTM_ST_KILLED))
    sstm__conflict_abort(tx, SSTM_CONFLICT_KILLED, SSTM_ABORT_KILLED, NULL);
}

/* Extend the snapshot to the current clock (2.1-2.3). False if the read set is no
 * longer valid. Does not return if the attempt was killed. */
SSTM_NOINLINE bool sstm__extend(struct sstm_desc *tx) {
  /* acquire: pairs with the release fetch_add of committers (4.3)
   * and of thieves (6.4): the validation below sees their locks (2). */
  uint64_t now = sstm_clock_time(atomic_load_explicit(&sstm__g.clock, memory_order_acquire));
  sstm__check_killed(tx);
  if (!sstm__validate(tx)) return false;
  tx->end = now;
  sstm__ctr_add(&tx->ctr.extensions, 1);
  if (tx->attr.read_only) ro_needed_extension(tx);
  return true;
}

/* ------------------------------------------------------------------------ */
/* Conflicts. */

/* Take over lock lk, held (value l) by a killed attempt: give it a fresh
 * version so that the victim cannot use it without an extension that would
 * see its KILLED status (6.4, 6.6). */
static bool steal(struct sstm_desc *tx, _Atomic uint64_t *lk, uint64_t l) {
  /* acq_rel: release publishes the victim's KILLED status (set before) to
   * whoever reads this clock value; acquire is not needed but harmless. */
  uint64_t c = atomic_fetch_add_explicit(&sstm__g.clock, SSTM_CLOCK_TICK, memory_order_acq_rel);
  uint64_t v = sstm_lw_make_version(sstm_clock_time(c) + 1);
  DELAY_POINT(tx);
  /* release: a reader that sees version v must see the (unmodified) data
   * that the lock protected; our RMW continues the release sequence of the
   * last committer's store, so this is for clarity more than need. */
  if (atomic_compare_exchange_strong_explicit(lk, &l, v, memory_order_release,
                                              memory_order_relaxed)) {
    sstm__ctr_add(&tx->ctr.locks_stolen, 1);
    return true;
  }
  return false;
}

/* (9.2-9.5) Take over every lock of o's attempt `serial`, which is paused
 * (its descriptor detached inside the transaction, or marked by an
 * executor) and ACTIVE or KILLED: kill it if it still runs, release all its
 * locks, and let it roll back when it is resumed. True if this thread did
 * it (or found the attempt not paused any more: the caller looks at the
 * lock again); false if another thread is at it (the caller waits a little
 * and looks again). */
static bool reap_paused(struct sstm_desc *tx, struct sstm_desc *o, uint64_t serial) {
  uint32_t p = atomic_load_explicit(&o->pause, memory_order_relaxed);
  do {
    if (!(p & SSTM_PAUSE_HELD)) return true; /* resumed meanwhile */
    if (p & SSTM_PAUSE_REAPING) return false;
    /* (9.2) acquire: pairs with the release that paused o (detach, mark),
     * so o's lock set and serial are as its last thread left them, and
     * they stay so: nobody clears a pause bit while REAPING is set (9.5). */
  } while (!atomic_compare_exchange_weak_explicit(&o->pause, &p, p | SSTM_PAUSE_REAPING,
                                                  memory_order_acquire, memory_order_relaxed));
  /* (9.3) ACTIVE -> KILLED as any kill (6.1-6.3); a lost race to another
   * killer is as good. */
  if (sstm__kill(o, serial, tx)) sstm__ctr_add(&tx->ctr.cm_kills, 1);
  /* acquire: when our kill lost to another killer's, that killer's CAS
   * then happens before the clock fetch_add below, whose release is to
   * carry the KILLED status (9.4), as resolve's acquire status load does
   * for steal(); after our own kill, the load reads our CAS. */
  uint64_t st = atomic_load_explicit(&o->status, memory_order_acquire);
  if (sstm_st_serial(st) == serial && sstm_st_state(st) == SSTM_ST_KILLED) {
    /* (9.4) An attempt paused at a polled point resumes where its kill is
     * checked first (9.6), or one waiting outside the barriers, which
     * checks it first when its wait ends (9.7): its locks get their old
     * versions back, as its
     * own rollback would (6.5), and readers that read those versions stay
     * valid. Any other may resume at any instruction of its body (a
     * signal-driven switch), even half-way through an inline read: its
     * locks get one fresh version, as steal() gives each (6.4), which no
     * read of its snapshot accepts. acq_rel fetch_add: the release
     * publishes the KILLED status to whoever reads this clock value. */
    bool restore = (p & (SSTM_PAUSE_POLLED | SSTM_PAUSE_WAITING)) != 0;
    uint64_t v = 0;
    if (!restore)
      v = sstm_lw_make_version(sstm_clock_time(atomic_fetch_add_explicit(
                                   &sstm__g.clock, SSTM_CLOCK_TICK, memory_order_acq_rel)) +
                               1);
    uint64_t own = sstm_lw_make_owner(o->slot, serial), n = 0;
    for (uint32_t i = 0; i < o->ls.n; i++) {
      uint64_t expect = own;
      DELAY_POINT(tx);
      /* CAS from the owner word: a lock already taken over is left alone.
       * release: see steal() */
      if (atomic_compare_exchange_strong_explicit(o->ls.e[i].lock, &expect,
                                                  restore ? o->ls.e[i].old : v,
                                                  memory_order_release, memory_order_relaxed))
        n++;
    }
    sstm__ctr_add(&tx->ctr.locks_stolen, n);
    /* The flag whatever killed it: the resumed attempt sees it (9.5)
     * before its next access, even if its killer has not set it yet. */
    atomic_fetch_or_explicit(&o->variant, SSTM_V_KILLFLAG, memory_order_relaxed);
  }
  /* (9.5) release: the resumer's acquire (sstm__pause_clear) sees the
   * KILLED status, the kill flag and the releases above; only then may it
   * clear its bit and run the attempt, which then rolls back. */
  atomic_fetch_and_explicit(&o->pause, ~(uint32_t)SSTM_PAUSE_REAPING, memory_order_release);
  return true;
}

/* Whether o's attempt is paused (9.1) or waits outside the barriers
 * (9.7). relaxed: a hint for the decision, which reap_paused makes again
 * under its acquire CAS. */
static inline bool is_paused(const struct sstm_desc *o) {
  return (atomic_load_explicit(&((struct sstm_desc *)o)->pause, memory_order_relaxed) &
          SSTM_PAUSE_HELD) != 0;
}

/* Whether o's attempt is paused by an executor (9.1), whose rule may offer
 * this worker to it (9.6); one that only waits outside the barriers (9.7)
 * is no executor's and is taken over at once. relaxed: a hint, as above. */
static inline bool exec_paused(const struct sstm_desc *o) {
  return (atomic_load_explicit(&((struct sstm_desc *)o)->pause, memory_order_relaxed) &
          SSTM_PAUSE_BY_EXEC) != 0;
}

static sstm_abort_reason_t reason_of(sstm_conflict_kind_t k) {
  switch (k) {
  case SSTM_CONFLICT_READ_LOCKED: return SSTM_ABORT_READ_LOCKED;
  case SSTM_CONFLICT_WRITE_LOCKED: return SSTM_ABORT_WRITE_LOCKED;
  case SSTM_CONFLICT_COMMIT_LOCKED: return SSTM_ABORT_COMMIT_LOCKED;
  case SSTM_CONFLICT_KILLED: return SSTM_ABORT_KILLED;
  case SSTM_CONFLICT_IRREVOCABLE: return SSTM_ABORT_IRREVOCABLE;
  default: return SSTM_ABORT_VALIDATE_READ;
  }
}

/* The attempt that holds locked the first stripe of the read set that
 * changed, if that is why validation failed: a writer that locked it after
 * we read it (encounter-time, still running; with cfg.read_past only one
 * that is committing, see below) or that is committing. False when the
 * first changed stripe is unlocked (a commit that has ended: no one to
 * name). Abort path only: scans the read set. */
static bool validation_party(struct sstm_desc *tx, sstm_party_t *out) {
  for (const sstm_r_entry_t *e = tx->rs.e; e < tx->rs.top; e++) {
    uint64_t l = atomic_load_explicit(e->lock, memory_order_relaxed);
    if (l <= tx->end || l == tx->owner_lw || sstm__held_by_running_writer(tx, l)) continue;
    if (!sstm_lw_locked(l)) return false;
    struct sstm_desc *o = sstm__desc_at(sstm_lw_slot(l));
    if (o == NULL || o == tx) return false;
    /* With read_past, a running (not committing) holder did not change the
     * stripe: a commit before its lock did (its lock_end is past our end),
     * and that commit has ended, or the holder merely extended past our
     * end since (lock_end is one bound for all its locks). Not named. */
    if (passes_running_writers(tx) &&
        sstm_st_state(atomic_load_explicit(&o->status, memory_order_relaxed)) == SSTM_ST_ACTIVE)
      continue;
    /* A paused holder is not named: a policy would serialise the retry
     * behind an attempt that only a resume can end; the retry meets the
     * lock instead and takes it over (9). */
    if (is_paused(o)) return false;
    sstm__party_snapshot(o, l, out);
    return true;
  }
  return false;
}

/* The policy's on_conflict returned a value that is no sstm_cm_action_t:
 * a policy bug, reported as misuse (the default handler ends the process).
 * If the handler returns, the attempt aborts itself, the one answer that is
 * always safe. Off the conflict path's common case. */
static SSTM_COLD sstm_cm_action_t bad_action(const struct sstm_desc *tx, sstm_cm_action_t act) {
  sstm__misuse("contention manager '%s': on_conflict returned %d, which is not an "
               "sstm_cm_action_t (SSTM_CM_ABORT_SELF, SSTM_CM_ABORT_OTHER or SSTM_CM_WAIT); "
               "the attempt aborts itself",
               tx->cm->name, (int)act);
  return SSTM_CM_ABORT_SELF;
}

/* Whether act is one of the actions of sstm_cm_action_t. */
static inline bool action_valid(sstm_cm_action_t act) {
  return act == SSTM_CM_ABORT_SELF || act == SSTM_CM_ABORT_OTHER || act == SSTM_CM_WAIT;
}

/* Report a conflict the policy cannot resolve (validation, kill,
 * irrevocable) and abort. The other party is named when known: for a
 * failed validation the writer that holds the changed stripe locked, so
 * that a policy can serialise the retry behind it; for a kill the killer,
 * when recorded (sstm__kill). */
SSTM_NOINLINE __attribute__((noreturn)) void sstm__conflict_abort(struct sstm_desc *tx,
                                                                  sstm_conflict_kind_t kind,
                                                                  sstm_abort_reason_t r,
                                                                  const void *addr) {
  sstm_conflict_t c = {.kind = kind, .addr = addr};
  if (kind == SSTM_CONFLICT_VALIDATION) c.has_other = validation_party(tx, &c.other);
  if (kind == SSTM_CONFLICT_KILLED) c.has_other = sstm__killer_of(tx, &c.other);
  uint64_t wait_ns = 0;
  tx->in_hook++;
  sstm_cm_action_t act = tx->cm->on_conflict(cm_ctx(tx), &c, &wait_ns);
  tx->in_hook--;
  /* The answer does not matter here (the attempt aborts), but a value
   * outside the enum is a bug of the policy all the same. */
  if (SSTM_UNLIKELY(!action_valid(act))) (void)bad_action(tx, act);
  sstm__lost_abort(tx, r, c.has_other ? &c.other : NULL);
}

/* The attempt met lock lk held by someone else (value l). Resolve it as the
 * contention manager decides; return a fresh lock word once the lock is
 * free or ours, or do not return (abort). Bounded: after cfg.wait_max
 * consecutive waits the attempt aborts itself (an irrevocable attempt waits
 * instead, which terminates because only committing attempts can make it
 * wait, (7.3)). */
SSTM_NOINLINE uint64_t sstm__resolve(struct sstm_desc *tx, sstm_conflict_kind_t kind,
                                     const void *addr, _Atomic uint64_t *lk, uint64_t l) {
  bool irrev = sstm__kind(tx) == SSTM_V_IRREV;
  bool blocked_offered = false; /* SSTM_EXEC_AT_BLOCKED offered once per conflict */
  unsigned attempt = 0;
  for (;;) {
    if (!irrev) sstm__check_killed(tx);
    struct sstm_desc *o = sstm__desc_at(sstm_lw_slot(l));
    /* acquire: if we see the owner's IDLE/next status, its lock release
     * (sequenced before) is visible to our reload below. */
    uint64_t ost = atomic_load_explicit(&o->status, memory_order_acquire);
    bool owner_running = sstm_st_owns(ost, l) && sstm_st_state(ost) != SSTM_ST_IDLE;
    enum sstm_state ostate = sstm_st_state(ost);
    if (owner_running && (ostate == SSTM_ST_ACTIVE || ostate == SSTM_ST_KILLED) && is_paused(o)) {
      /* (9) A paused holder: decided against it whatever the policy, or,
       * under SSTM_EXEC_PAUSED_WAIT_HIGHER, this worker is offered to the
       * executor once when the holder carries a higher priority, under
       * SSTM_EXEC_PAUSED_ASK once whatever the priorities (the executor
       * decides). */
      int rule = sstm__exec_paused_rule();
      if (!irrev && !blocked_offered && ostate == SSTM_ST_ACTIVE && exec_paused(o) &&
          (rule == SSTM_EXEC_PAUSED_ASK ||
           (rule == SSTM_EXEC_PAUSED_WAIT_HIGHER &&
            __atomic_load_n(&o->attr.priority, __ATOMIC_RELAXED) > tx->attr.priority))) {
        blocked_offered = true;
        /* (9.6) Switched out and resumed, the attempt may have been taken
         * over meanwhile, with its displaced versions put back (9.4): the
         * kill first, before the lock is looked at again, which may be
         * free by now. relaxed: the resume's acquire (sstm__pause_clear)
         * ordered this load after the reaper's kill. */
        if (sstm__exec_point(tx, SSTM_EXEC_AT_BLOCKED, o)) sstm__check_killed(tx);
      } else if (!reap_paused(tx, o, sstm_st_serial(ost))) {
        sstm__cpu_relax(); /* another thread takes the locks over */
      }
    } else if (owner_running && ostate == SSTM_ST_KILLED) {
      steal(tx, lk, l);
    } else if (owner_running) {
      sstm_conflict_t c = {.kind = kind, .addr = addr, .has_other = true, .attempt = attempt};
      sstm__party_snapshot(o, l, &c.other);
      uint64_t wait_ns = 0;
      sstm_cm_action_t act;
      if (irrev)
        act = c.other.committing ? SSTM_CM_WAIT : SSTM_CM_ABORT_OTHER;
      else {
        tx->in_hook++;
        act = tx->cm->on_conflict(cm_ctx(tx), &c, &wait_ns);
        tx->in_hook--;
        if (SSTM_UNLIKELY(!action_valid(act))) act = bad_action(tx, act);
      }
      if (act == SSTM_CM_ABORT_OTHER && !c.other.committing) {
        if (sstm__kill(o, sstm_st_serial(ost), tx)) { /* (6.1-6.3) */
          sstm__ctr_add(&tx->ctr.cm_kills, 1);
          steal(tx, lk, l);
        }
      } else if (act == SSTM_CM_WAIT || act == SSTM_CM_ABORT_OTHER) {
        if (!irrev && attempt >= sstm__g.cfg.wait_max)
          sstm__lost_abort(tx, reason_of(kind), &c.other);
        attempt++;
        sstm__ctr_add(&tx->ctr.cm_waits, 1);
        uint64_t t0 = sstm__now_ns();
        if (irrev)
          sched_yield();
        else
          sstm_spin_ns(wait_ns < 1000000 ? wait_ns : 1000000);
        sstm__ctr_add(&tx->ctr.cm_wait_ns, sstm__now_ns() - t0);
      } else {
        sstm__lost_abort(tx, reason_of(kind), &c.other);
      }
    } else {
      sstm__cpu_relax(); /* owner's attempt ended; its release is imminent */
    }
    /* acquire: a lock word we go on to use must carry its data (1.1). */
    l = atomic_load_explicit(lk, memory_order_acquire);
    if (!sstm_lw_locked(l) || l == tx->owner_lw) return l;
  }
}

/* An abort by a conflict with another transaction (a lock, a failed
 * validation, a kill, an irrevocable transaction in the way): counted in
 * `conflicts`, which the policies' progress bounds count. User restarts and
 * cancels, a wrong read-only hint and sstm_become_irrevocable's restart are
 * not conflicts.
 *
 * An attempt that was killed while it was losing another conflict (its
 * policy deciding on a lock, its validation failing on a stripe the killer
 * took over) aborts as killed (6.6): the kill took effect, whichever
 * conflict the attempt noticed first, and aborts[SSTM_ABORT_KILLED] must
 * count every kill that did. The other party is then the killer when it was
 * recorded (sstm__kill), else the party of the conflict noticed. */
__attribute__((noreturn)) void sstm__lost_abort(struct sstm_desc *tx, sstm_abort_reason_t r,
                                                const sstm_party_t *other) {
  tx->conflicts++;
  sstm_party_t killer;
  /* relaxed: only the owner moves KILLED on; a kill that this load misses
   * came after the abort was decided and ends with the attempt. */
  if (r != SSTM_ABORT_KILLED &&
      sstm_st_state(atomic_load_explicit(&tx->status, memory_order_relaxed)) == SSTM_ST_KILLED) {
    r = SSTM_ABORT_KILLED;
    if (sstm__killer_of(tx, &killer)) other = &killer;
  }
  sstm__abort_tx(tx, r, other);
}
