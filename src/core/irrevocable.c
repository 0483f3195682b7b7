/* SPDX-License-Identifier: MIT */
/* Irrevocability (docs/design/core.md (7)): one token; its holder sets the
 * clock's irrevocable flag, waits until no attempt is committing, and runs
 * with direct reads and in-place writes under stripe locks, keeping an undo
 * log so that an attempt a policy made irrevocable can still be restarted
 * or cancelled by its body (7.6-7.8). sstm_become_irrevocable and
 * sstm_is_irrevocable.
 */
#define _GNU_SOURCE
#include <sched.h>

#include "core/tx_internal.h"

/* (7.3): wait until no other attempt is committing. */
static void wait_no_committing(struct sstm_desc *self) {
  unsigned hw = atomic_load_explicit(&sstm__g.hiwater, memory_order_acquire);
  for (unsigned i = 0; i < hw; i++) {
    struct sstm_desc *o = sstm__desc_at(i);
    if (o == NULL || o == self) continue;
    /* acquire: once we see it leave COMMITTING, its write-back is visible. */
    while (sstm_st_state(atomic_load_explicit(&o->status, memory_order_acquire)) ==
           SSTM_ST_COMMITTING)
      sched_yield();
  }
}

/* Take the token and make the current attempt irrevocable (7.1-7.4). False, with the
 * token given back, if the attempt was killed meanwhile (a kill that
 * returned 0 to its caller: that attempt must never commit; the caller
 * starts another). */
bool sstm__irrev_enter(struct sstm_desc *tx) {
  unsigned me = tx->slot + 1, free_ = 0;
  /* (7.1) acquire: the previous holder's in-place writes and lock releases. */
  while (!atomic_compare_exchange_weak_explicit(&sstm__g.irrev_owner, &free_, me,
                                                memory_order_acquire, memory_order_relaxed)) {
    free_ = 0;
    sched_yield();
  }
  tx->irrev_token = true;
  /* (7.2) acq_rel: the flag and the committers' fetch_add (4.3) are ordered in the
   * clock's modification order; either a committer sees the flag and aborts
   * or we see its COMMITTING status below (acquire half). */
  atomic_fetch_or_explicit(&sstm__g.clock, SSTM_CLOCK_IRREV, memory_order_acq_rel);
  wait_no_committing(tx);
  /* (7.4) ACTIVE -> IRREVOCABLE, keeping the watch flags (CAS loop). Only the
   * owner leaves ACTIVE except by a killer's CAS to KILLED; a kill that won
   * is honoured (no locks held yet, nothing to undo). */
  uint64_t st = atomic_load_explicit(&tx->status, memory_order_relaxed);
  do {
    if (sstm_st_state(st) != SSTM_ST_ACTIVE) {
      sstm__irrev_release(tx);
      return false;
    }
  } while (!atomic_compare_exchange_weak_explicit(
      &tx->status, &st, sstm_st_make(sstm__serial(tx), SSTM_ST_IRREVOCABLE) | (st & SSTM_ST_FLAGS),
      memory_order_acq_rel, memory_order_relaxed));
  sstm__set_variant(tx, SSTM_V_IRREV | (sstm__variant(tx) & SSTM_V_SAMPLE));
  return true;
}

void sstm__irrev_release(struct sstm_desc *tx) {
  /* release: our in-place writes happen before the flag is seen clear. */
  atomic_fetch_and_explicit(&sstm__g.clock, ~SSTM_CLOCK_IRREV, memory_order_release);
  atomic_store_explicit(&sstm__g.irrev_owner, 0, memory_order_release);
  tx->irrev_token = false;
  tx->irrev_plain = false;
}

/* For the compiler ABI (exported for libschedstm-itm only, src/schedstm.map):
 * the current attempt, irrevocable, runs code that writes shared memory
 * with plain stores, which its statistics cannot see; its commit is
 * counted as an update commit. Nothing happens outside an irrevocable
 * attempt. */
SSTM_API void sstm__irrev_plain_writes(void) {
  struct sstm_desc *tx = sstm__cur;
  if (SSTM_IN_TX(tx) && sstm__kind(tx) == SSTM_V_IRREV) tx->irrev_plain = true;
}

/* Release the locks of an irrevocable attempt, at its commit (7.5) or its
 * undo (7.7), with one fresh version taken from the clock after its
 * in-place writes. */
static void irrev_release_locks(struct sstm_desc *tx) {
  if (tx->ls.n == 0) return;
  /* acq_rel: as in commit_update; the irrevocable flag stays set meanwhile. */
  uint64_t c = atomic_fetch_add_explicit(&sstm__g.clock, SSTM_CLOCK_TICK, memory_order_acq_rel);
  uint64_t v = sstm_lw_make_version(sstm_clock_time(c) + 1);
  for (uint32_t i = 0; i < tx->ls.n; i++)
    /* release: a reader acquiring v sees the bytes written (or put back) */
    atomic_store_explicit(tx->ls.e[i].lock, v, memory_order_release);
}

/* (7.6, 7.7) Roll back an irrevocable attempt that a policy escalated (the user's
 * sstm_restart or sstm_cancel in it): put back the bytes it wrote in place
 * (its undo log, irrev_store), then release its locks as its commit would,
 * with a fresh version. Not the old one: a reader that loaded the old lock
 * word before we locked the stripe and the data while we wrote it would
 * then pass its re-check (ABA); with a fresh version it fails it and
 * retries, and a reader that acquires the new version sees the restored
 * bytes (release stores after them). The caller gives the token back once
 * the attempt has ended. */
void sstm__irrev_undo(struct sstm_desc *tx) {
  for (uint32_t i = 0; i < tx->ws.n; i++)
    store_masked(tx->ws.e[i].word, tx->ws.e[i].value, tx->ws.e[i].bmask);
  irrev_release_locks(tx);
  tx->ls.n = 0;
}

/* (7.2): new attempts wait at begin while the flag is set. */
SSTM_NOINLINE uint64_t sstm__wait_irrevocable(void) {
  uint64_t c;
  do {
    sched_yield();
    c = atomic_load_explicit(&sstm__g.clock, memory_order_acquire);
  } while (sstm_clock_irrevocable(c));
  return c;
}

/* The write barrier of an irrevocable attempt (7.4): lock the stripe, log
 * the bytes it overwrites, write in place. */
SSTM_NOINLINE void sstm__irrev_store(struct sstm_desc *tx, void *addr, uint64_t val,
                                     unsigned size) {
  _Atomic uint64_t *lk = sstm__lock_for(tx, addr);
  uint64_t l = atomic_load_explicit(lk, memory_order_acquire);
  sstm__owner_ready(tx);
  while (l != tx->owner_lw) {
    if (sstm_lw_locked(l)) {
      l = sstm__resolve(tx, SSTM_CONFLICT_WRITE_LOCKED, addr, lk, l);
      continue;
    }
    /* acq_rel: release, so that a reader that sees this lock word also
     * sees our IRREVOCABLE status and does not pass it (8.1). */
    if (atomic_compare_exchange_weak_explicit(lk, &l, tx->owner_lw, memory_order_acq_rel,
                                              memory_order_acquire)) {
      if (!sstm_lset_add(&tx->ls, lk, l)) sstm__oom();
      /* release fence: the in-place data stores below must not become
       * visible before the lock (seqlock writer side, 1.5). */
      atomic_thread_fence(memory_order_release);
      break;
    }
  }
  /* Undo log: the bytes this store overwrites, the first time (a policy's
   * escalation to irrevocability can be rolled back by sstm_restart or
   * sstm_cancel: irrev_undo). */
  unsigned off = (uintptr_t)addr & 7;
  if (SSTM_UNLIKELY(!sstm_wset_put_old(&tx->ws, (uintptr_t)addr & ~(uintptr_t)7,
                                       mem_load(addr, size) << (off * 8),
                                       size_mask(size) << (off * 8))))
    sstm__oom();
  mem_store(addr, val, size);
}

/* (7.5) The caller counts the commit. */
void sstm__commit_irrevocable(struct sstm_desc *tx) {
  irrev_release_locks(tx);
  /* acq_rel exchange: as in rollback (txn.c). */
  attempt_ended(tx,
                atomic_exchange_explicit(&tx->status, sstm_st_make(sstm__serial(tx), SSTM_ST_IDLE),
                                         memory_order_acq_rel));
  sstm__irrev_release(tx);
}

SSTM_API int sstm_become_irrevocable(void) {
  struct sstm_desc *tx = sstm__cur;
  if (!SSTM_IN_TX(tx)) {
    sstm__set_error("sstm_become_irrevocable: no active transaction");
    return SSTM_ENOTX;
  }
  /* The user asked: from now on this transaction must not be restarted or
   * cancelled (sstm_restart), although a policy may have made it
   * irrevocable already. */
  tx->attr.irrevocable = true;
  unsigned kind = sstm__kind(tx);
  if (kind == SSTM_V_IRREV) return 0;
  if (kind != SSTM_V_RO && tx->rs.top == tx->rs.e && tx->ws.n == 0 && tx->end_mark == NULL) {
    /* nothing read or written yet: switch in place, unless killed. Not
     * with an end mark (src/iface/libc_services.h): a thread that waits
     * for the mark may hold the token, so the attempt ends first. */
    if (sstm__irrev_enter(tx)) return 0;
    tx->irrev_sticky = true;
    sstm__conflict_abort(tx, SSTM_CONFLICT_KILLED, SSTM_ABORT_KILLED, NULL);
  }
  tx->irrev_sticky = true;
  sstm__abort_tx(tx, SSTM_ABORT_IRREVOCABLE, NULL);
}

SSTM_API bool sstm_is_irrevocable(void) {
  struct sstm_desc *tx = sstm__cur;
  return tx != NULL && tx->depth != 0 && sstm__kind(tx) == SSTM_V_IRREV;
}
