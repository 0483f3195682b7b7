/* SPDX-License-Identifier: MIT */
/* The transactional engine: begin, read and write barriers, validation and
 * snapshot extension, commit, rollback and restart, irrevocability, lock
 * take-over from killed transactions.
 *
 * Design: word-based, time-based STM in the LSA/TL2/TinySTM family. A
 * global version clock; a table of ownership records ("locks") indexed by
 * address; invisible reads recorded in a read set; writes buffered in a redo
 * log and written back at commit. Two write strategies: encounter-time
 * locking (ETL, the default: a write locks its stripe at once) and
 * commit-time locking (CTL: stripes are locked while committing). Lock-word
 * layout: core/lockword.h.
 *
 * ---------------------------------------------------------------------------
 * Correctness argument
 *
 * (1) Snapshot. An attempt owns an interval [start, end] of clock times at
 * which all its reads are known valid. A read of stripe s loads the lock
 * word (acquire), the data (relaxed), an acquire fence, and the lock word
 * again (relaxed); it accepts the data only if both lock words are equal and
 * unlocked with version v <= end. The pattern is a seqlock read [Boehm,
 * MSPC'12]: the committer writes back under the lock after a release fence
 * (commit_update), so if the data load saw a value written back by a commit,
 * the fence-fence synchronisation makes the second lock load see that
 * commit's lock or a later value, and the read retries. The data may be any
 * number of loads between the two lock loads: a bulk read copies all the
 * bytes a stripe's lock covers under one such read (load_stripe).
 *
 * (2) Extension. When a read meets v > end, the attempt reads the clock
 * (acquire) as `now`, checks that every read-set entry is unchanged since it
 * was read (or is locked by the attempt itself), and sets end = now. Why this
 * is enough: a committer takes all its locks before it increments the clock
 * (release), so an extension that reads clock >= ts sees the locks of every
 * commit with timestamp <= ts still held or released with their new version;
 * a read-set entry unchanged at that point is valid at `now`, and any later
 * change gets a timestamp > now.
 * "Unchanged" is tested as "unlocked with a version <= end" (the end before
 * the extension), so the read set keeps only the lock, not the version seen
 * (as TL2's does). The memory under a stripe changes only by the write-back
 * (or irrevocable in-place write) of an owner that locked the stripe first
 * and then took its ts from the clock by an acq_rel fetch_add, the version
 * it releases with. If that change follows our read, ts > end: were
 * ts <= end, the clock load that gave `end` (acquire) read that fetch_add
 * or a later RMW of its release sequence, so the owner's lock happens before
 * our read, which would have seen it locked or later (coherence). That
 * clock load was made before the read when `end` dates from begin or from
 * an extension before the read; when it dates from a later extension, that
 * extension's validation load of the stripe came after it and plays the
 * read's role (by induction, the stripe was unchanged up to that load). The other moves of a lock
 * word leave the memory as it was: a rollback puts the old version back, and a take-over (6) gives
 * the stripe of a killed writer, whose writes were buffered, a fresh version (which fails
 * validation, spuriously, as the recorded-version test did).
 *
 * (3) Opacity. Every value an attempt returns is valid at its current `end`
 * and all earlier reads were validated at `end` (by the last extension, or
 * by the start snapshot), so the values an attempt has seen always form a
 * consistent snapshot: a doomed attempt never sees a state that no serial
 * execution produces. Reads of stripes the attempt has locked itself return
 * buffered bytes, and memory bytes re-checked against the lock (load_own),
 * so a lock taken over after a kill (6) is noticed before its data is used.
 *
 * (4) Commit order. An update commit moves the status ACTIVE -> COMMITTING
 * (CAS: after this no kill can succeed), holds all its write locks (ETL:
 * already; CTL: acquired now; a lock whose version is > end forces an
 * extension first, so a held lock always covers a version the read set
 * agrees with), takes ts = clock + 1 by fetch_add, validates the read set if
 * another commit happened since end (ts != end + 1), writes back after a
 * release fence, and releases the locks with version ts (release stores).
 * Commits are thus serialised in ts order; read-only attempts serialise at
 * their `end` and need no clock access at all.
 *
 * (5) Reclamation and privatization. Each attempt publishes its status
 * word (new serial, ACTIVE) with a full barrier before it reads the clock or
 * shared data: a store and a seq_cst fence (sstm__full_fence, one locked
 * instruction on x86-64), or, where the kernel offers expedited
 * membarrier(2), a plain store whose barrier the reclaimer forces on every
 * running thread (asymmetric fence). A grace period (reclaim.c) issues the
 * matching fence (seq_cst fence, or the membarrier call) and records the
 * status of every running attempt; it is over once each recorded attempt
 * has ended (its status changed serial or became IDLE; acquire, pairing
 * with the release that ended it). Store-buffering is excluded on both
 * sides, so an attempt that did not get recorded started after the fence
 * and sees every store that precedes it. A suspended (detached) attempt
 * keeps its status and is waited for like any other. Reclamation: a block
 * retired by a commit is released after a grace period started after that
 * commit, so no attempt can still reach it. Privatization: sstm_quiesce()
 * starts a grace period and waits for it to be over. A thread that commits
 * a privatizing transaction (unlinks data, sets an owner flag) and then
 * calls it may access the data with plain accesses: every attempt that may
 * have seen the data shared was running at the fence and has ended, and
 * every later attempt sees the privatizing commit. A doomed reader has
 * stopped reading the data. A writer whose ts precedes the privatizer's
 * set COMMITTING before its clock fetch_add, which the privatizer's
 * fetch_add read (acq_rel), so the scan sees it COMMITTING or ended: its
 * write-back is over and visible (the acquire above). Without the barrier,
 * plain accesses after commit race with both. See docs/design/core.md.
 *
 * (6) Remote abort. A killer moves the victim's status ACTIVE -> KILLED by
 * CAS; from then on the victim's commit CAS fails. Because writes are
 * buffered, the memory under a killed attempt's locks is unmodified, so any
 * thread may take such a lock over (steal): it takes a fresh timestamp from
 * the clock and CASes the lock word from the victim's owner value to that
 * version. A descheduled victim therefore blocks nobody: the bound on the
 * time others wait for it is the killer's own CAS, not the victim's
 * scheduling. The victim notices at its next barrier: the killer also sets
 * a flag in the victim's variant byte, which every barrier already tests to
 * dispatch (zero cost on the fast path). Correctness does not depend on
 * that promptness: a stolen lock carries
 * a version newer than the victim's snapshot, so the victim must extend
 * before using it, and the extension reads the clock (acquire) past the
 * thief's fetch_add and then its own status, which the thief set before.
 *
 * (7) Irrevocability. One token; its holder sets the clock's irrevocable
 * flag, waits until no attempt is COMMITTING, and then runs with direct
 * reads and in-place writes under stripe locks (release fence between lock
 * and data, as in (1)). Update commits that increment the clock and see the
 * flag abort instead of writing back; new attempts wait at begin. The
 * irrevocable attempt never aborts: on a lock held by a killable attempt it
 * kills and steals, on one held by a committing attempt it waits (that
 * attempt either finished its write-back before the flag or aborts at its
 * fetch_add). Only the user can end it early, and only when a policy made it
 * irrevocable (its progress bound): sstm_restart or sstm_cancel then undo
 * its in-place writes from an undo log and release its locks with a fresh
 * version (irrev_undo).
 *
 * (8) Reading past a running writer (cfg.read_past: SSTM_READ_PAST_RO, the
 * default, in the attempts of declared read-only transactions, with a read
 * set or without; SSTM_READ_PAST_ALL in every attempt; the validation rule
 * below holds for the attempts that pass; OFF never). Under
 * ETL a writer holds its locks from its first write to its commit; a
 * reader that waited for each of them would wait for the writer's whole
 * attempt, and a writer preempted on an oversubscribed machine holds them
 * for its time off the CPU. But while the owner's status is ACTIVE its
 * writes are buffered: the memory under its locks is the committed data of
 * the version each lock displaced. So a reader that meets such a lock
 * (read_past) loads the owner's status (ACTIVE, the serial of the lock
 * word), a bound on the displaced version, the data, and after an acquire
 * fence the status and the lock word again; it accepts the data if both
 * are unchanged and the bound is <= end (otherwise it extends first; a
 * read-only attempt without a read set, which cannot extend, waits as
 * before).
 *  - The bound: before each lock CAS the owner stores its `end` in
 *    lock_end; it locks only versions <= end, and end only grows, so
 *    lock_end >= every version its locks displaced. The lock CAS is a
 *    release and the reader's load of the lock word an acquire, so the
 *    reader sees that store (or a later, larger one). Every CAS that
 *    installs an owner word is a release (ETL write, CTL commit,
 *    irrevocable write), so a reader that sees the word also sees the
 *    owner's state before it: a CTL or irrevocable owner is never seen
 *    ACTIVE through its own lock. lock_end is one bound for all of an
 *    attempt's locks, so a writer that extended and locked more stripes
 *    can fail a reader's validation without having changed its stripe
 *    (spurious, and then it is not named as the other party).
 *  - The data is that version's: the reader's acquire of the lock word
 *    saw the owner's CAS, which (acquire) read the version it displaced,
 *    released by its committer after the write-back. Nothing else writes
 *    the stripe while the lock is held except the owner's own write-back
 *    (or in-place writes if it were irrevocable), which follows its
 *    COMMITTING CAS and a release fence; a data load that saw any of it
 *    makes the status re-check after the acquire fence see COMMITTING or
 *    later (fence-fence synchronisation), and the read is refused. A kill
 *    and take-over changes the status and the lock word. An owner that
 *    aborts itself puts the old versions back before its status leaves
 *    ACTIVE (rollback): another writer can then lock, commit and write
 *    back the stripe while the status re-check still passes; the lock-word
 *    re-check refuses that read.
 *  - The owner serialises after us. The reader's `end` came from a clock
 *    load (acquire) sequenced before its status load. Had the owner's
 *    fetch_add (release) preceded that load in the clock's modification
 *    order, its COMMITTING CAS, sequenced before the fetch_add, would
 *    happen before the status load, which would not see ACTIVE. So the
 *    owner's ts > end: the value read is the one valid at end, and the
 *    owner's new value is not in the snapshot.
 * The read-set entry is the lock, as for any read. Validation (2) accepts
 * an entry locked by another attempt if that attempt is ACTIVE and its
 * lock_end <= end (held_by_running_writer): no commit changed the stripe
 * between our read and its lock (such a commit would have a ts > end, (2),
 * and the lock would displace it, so lock_end >= ts), the owner has not
 * written it, and by the same clock argument, with the extension's clock
 * load (or the commit's fetch_add) in place of the begin's, the owner's ts
 * is later than the time we extend or commit at. An owner that commits
 * later leaves a version past our end, which fails the next validation;
 * one that aborts puts the old version back. Reads of a committing owner's
 * stripes still go to the policy (resolve): its write-back may be under
 * way. In OFF and RO modes, validation requires "unlocked, <= end" as
 * before, and in OFF every locked stripe goes to the policy. Why update
 * attempts do not pass locks by default: under oversubscription with
 * suicide, an update attempt that passed its reads went on to lock a
 * stripe and then aborted on a write conflict, so that preempted attempts
 * in their abort loops held most locks (a 32-account bank at 32 threads
 * fell from 346 k to 347 commits/s; docs/benchmarks.md).
 *
 * Torture tests: tests/integration/opacity.c (1-3, 8), bank and intset (4),
 * free_traversal and privatize (5), remote_abort (6), irrevocable (7);
 * tests/unit/test_read_past.c (8).
 * ---------------------------------------------------------------------------
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "core/engine.h"

/* A restart abandons the frames between the checkpoint and the abort. In a
 * process with AddressSanitizer their redzones must be unpoisoned first,
 * whether or not the library itself is instrumented: the user's code may
 * be (its barrier calls are ordinary calls, so the compiler does not do it
 * for them), and an instrumented policy callback would later trip over a
 * stale redzone. Weak: NULL without the ASan runtime, and then nothing is
 * called. Only on the abort path. */
extern void __asan_handle_no_return(void) __attribute__((weak));
#define SSTM_ASAN_NO_RETURN()                                                                      \
  do {                                                                                             \
    if (__asan_handle_no_return) __asan_handle_no_return();                                        \
  } while (0)

/* The thread-local state of the engine (with the last error message of
 * core/error.c): the current descriptor, and the same
 * pointer as the inline fast path's prefix (schedstm/inline.h), which is
 * never NULL, so the barrier needs no NULL test: without a descriptor it
 * points at a static prefix whose variant sends every access to the slow
 * path. Both change together, in sstm__set_cur only. */
__thread struct sstm_desc *sstm__cur __attribute__((tls_model("initial-exec")));
static sstm__fast_t no_desc = {.variant = SSTM__V_NONE};
SSTM_API __thread sstm__fast_t *sstm__fast_cur __attribute__((tls_model("initial-exec"))) =
    &no_desc;

/* The test seam (engine.h); only debug builds call it. */
_Atomic(void (*)(sstm_seam_t, const void *)) sstm__test_seam;

void sstm__set_cur(struct sstm_desc *d) {
  sstm__cur = d;
  sstm__fast_cur = d ? (sstm__fast_t *)(void *)d : &no_desc;
}

static __attribute__((noreturn)) void abort_tx(struct sstm_desc *tx, sstm_abort_reason_t r,
                                               const sstm_party_t *other);

/* An abort by a conflict with another transaction (a lock, a failed
 * validation, a kill, an irrevocable transaction in the way): counted in
 * `conflicts`, which the policies' progress bounds count. User restarts and
 * cancels, a wrong read-only hint and sstm_become_irrevocable's restart are
 * not conflicts. */
static __attribute__((noreturn)) void lost_abort(struct sstm_desc *tx, sstm_abort_reason_t r,
                                                 const sstm_party_t *other) {
  tx->conflicts++;
  abort_tx(tx, r, other);
}

/* SCHEDSTM_RANDOM_DELAY builds: a yield or a short sleep now and then
 * (os/time.c) between the steps of commit, rollback and lock take-over
 * (and, more often, at every barrier), to widen the windows the arguments
 * above are about.
 * sstm__random_delay is a compile-time constant: nothing in other builds. */
#define DELAY_POINT(tx)                                                                            \
  do {                                                                                             \
    if (sstm__random_delay) sstm__random_delay_point(tx, 8);                                       \
  } while (0)

/* ------------------------------------------------------------------------ */
/* Memory accesses of exactly the requested size. Relaxed atomics: the
 * speculative reads race with commits by design, and C11 makes that
 * well-defined only for atomic accesses (free on x86). */

SSTM_INLINE uint64_t mem_load(const void *a, unsigned size) {
  switch (size) {
  case 1: return __atomic_load_n((const uint8_t *)a, __ATOMIC_RELAXED);
  case 2: return __atomic_load_n((const uint16_t *)a, __ATOMIC_RELAXED);
  case 4: return __atomic_load_n((const uint32_t *)a, __ATOMIC_RELAXED);
  default: return __atomic_load_n((const uint64_t *)a, __ATOMIC_RELAXED);
  }
}

SSTM_INLINE void mem_store(void *a, uint64_t v, unsigned size) {
  switch (size) {
  case 1: __atomic_store_n((uint8_t *)a, (uint8_t)v, __ATOMIC_RELAXED); break;
  case 2: __atomic_store_n((uint16_t *)a, (uint16_t)v, __ATOMIC_RELAXED); break;
  case 4: __atomic_store_n((uint32_t *)a, (uint32_t)v, __ATOMIC_RELAXED); break;
  default: __atomic_store_n((uint64_t *)a, v, __ATOMIC_RELAXED); break;
  }
}

SSTM_INLINE uint64_t size_mask(unsigned size) {
  return size == 8 ? ~0ull : ((1ull << (size * 8)) - 1);
}

/* Write the buffered bytes of one redo-log entry, each in the widest
 * naturally aligned access the mask allows (never touching other bytes). */
static void store_masked(uintptr_t word, uint64_t value, uint64_t bmask) {
  if (bmask == ~0ull) {
    mem_store((void *)word, value, 8);
    return;
  }
  for (unsigned off = 0; off < 8;) {
    uint64_t m4 = 0xffffffffull << (off * 8), m2 = 0xffffull << (off * 8);
    if ((bmask & (0xffull << (off * 8))) == 0) {
      off++;
    } else if (off % 4 == 0 && (bmask & m4) == m4) {
      mem_store((void *)(word + off), value >> (off * 8), 4);
      off += 4;
    } else if (off % 2 == 0 && (bmask & m2) == m2) {
      mem_store((void *)(word + off), value >> (off * 8), 2);
      off += 2;
    } else {
      mem_store((void *)(word + off), value >> (off * 8), 1);
      off++;
    }
  }
}

/* Bytes [off, off+size) of a word: buffered ones from e, the rest from mem
 * (already loaded, size bytes). */
SSTM_INLINE uint64_t overlay(const sstm_w_entry_t *e, uint64_t mem, unsigned off, unsigned size) {
  uint64_t w = mem << (off * 8);
  w = (w & ~e->bmask) | (e->value & e->bmask);
  return (w >> (off * 8)) & size_mask(size);
}

SSTM_INLINE bool entry_covers(const sstm_w_entry_t *e, unsigned off, unsigned size) {
  uint64_t m = size_mask(size) << (off * 8);
  return (e->bmask & m) == m;
}

/* ------------------------------------------------------------------------ */
/* Validation and extension. */

/* The descriptor whose attempt holds lock word l (locked) and is running,
 * not committing (ACTIVE, the serial of l), with its status in *st; NULL
 * for any other owner, or for tx itself. Relaxed: callers order it (8). */
static struct sstm_desc *running_owner(const struct sstm_desc *tx, uint64_t l, uint64_t *st) {
  struct sstm_desc *o = sstm__desc_at(sstm_lw_slot(l));
  if (o == NULL || o == tx) return NULL;
  *st = atomic_load_explicit(&o->status, memory_order_relaxed);
  return sstm_st_owns(*st, l) && sstm_st_state(*st) == SSTM_ST_ACTIVE ? o : NULL;
}

/* Whether tx reads past running writers and validates as (8) says: every
 * attempt with SSTM_READ_PAST_ALL; with SSTM_READ_PAST_RO the attempts of
 * declared read-only transactions, with a read set or without. */
static inline bool passes_running_writers(const struct sstm_desc *tx) {
  sstm_read_past_t rp = sstm__g.cfg.read_past;
  /* ws.n == 0: an attempt of a declared read-only transaction that has a
   * read set can write (it then goes on as an update, without the ro-write
   * restart); from its first write it holds locks, and under
   * SSTM_READ_PAST_RO it then neither passes nor validates past a running
   * writer, as any update attempt. */
  return rp == SSTM_READ_PAST_ALL ||
         (rp == SSTM_READ_PAST_RO && tx->attr.read_only && tx->ws.n == 0);
}

/* Lock word l (locked, not ours) belongs to an attempt that is running and
 * has not started to commit, and every version its locks displaced is
 * <= end: the memory under l still holds data our snapshot covers
 * (argument (8)). Only for attempts that pass running writers. */
static SSTM_NOINLINE bool held_by_running_writer(const struct sstm_desc *tx, uint64_t l) {
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
 * since it was read (argument (2)), or is now locked by this attempt (locked
 * only with a version <= end, see (4)), or by a writer that has not started
 * to commit and displaced only versions <= end (8). Called before end
 * moves. Relaxed loads suffice: every caller has just performed an acquire
 * on the clock (extension) or an acq_rel fetch_add on it (commit), which
 * orders these loads after it and makes the locks of every commit counted
 * by that clock value visible (argument (2)). */
static bool validate(const struct sstm_desc *tx) {
  const sstm_r_entry_t *r = tx->rs.e, *end = tx->rs.top;
  for (; r < end; r++) {
    uint64_t l = atomic_load_explicit(r->lock, memory_order_relaxed);
    if (l > tx->end && l != tx->owner_lw && !held_by_running_writer(tx, l)) return false;
  }
  return true;
}

static __attribute__((noreturn)) void conflict_abort(struct sstm_desc *tx,
                                                     sstm_conflict_kind_t kind,
                                                     sstm_abort_reason_t r, const void *addr);

static SSTM_NOINLINE void check_killed(struct sstm_desc *tx) {
  /* Relaxed: the callers ordered this after an acquire (see (6)). Only the
   * owner moves KILLED on, so a stale ACTIVE here is caught at commit. */
  uint64_t st = atomic_load_explicit(&tx->status, memory_order_relaxed);
  if (SSTM_UNLIKELY(sstm_st_state(st) == SSTM_ST_KILLED))
    conflict_abort(tx, SSTM_CONFLICT_KILLED, SSTM_ABORT_KILLED, NULL);
}

/* A declared read-only transaction needed an extension: the first time in
 * the transaction, it counts in the window of cfg.ro_log (ro_window). */
static inline void ro_needed_extension(struct sstm_desc *tx) {
  if (tx->ro_ext_seen) return;
  tx->ro_ext_seen = true;
  tx->ro_win_ext++; /* <= RO_WINDOW < 255: the window closes first */
}

/* Extend the snapshot to the current clock. False if the read set is no
 * longer valid. Does not return if the attempt was killed. */
static SSTM_NOINLINE bool extend(struct sstm_desc *tx) {
  /* acquire: pairs with the release fetch_add of committers (argument 2)
   * and of thieves (argument 6). */
  uint64_t now = sstm_clock_time(atomic_load_explicit(&sstm__g.clock, memory_order_acquire));
  check_killed(tx);
  if (!validate(tx)) return false;
  tx->end = now;
  sstm__ctr_add(&tx->ctr.extensions, 1);
  if (tx->attr.read_only) ro_needed_extension(tx);
  return true;
}

/* ------------------------------------------------------------------------ */
/* Conflicts. */

/* Take over lock lk, held (value l) by a killed attempt: give it a fresh
 * version so that the victim cannot use it without an extension that would
 * see its KILLED status (argument 6). */
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

static sstm_cm_ctx_t *cm_ctx(struct sstm_desc *tx) {
  sstm_cm_ctx_t *c = &tx->cm_ctx;
  c->retries = tx->retries;
  c->conflicts = tx->conflicts;
  c->txid = tx->serial;
  c->start = tx->start;
  c->birth = tx->birth;
  c->reads = sstm_rset_count(&tx->rs);
  c->writes = tx->ws.n;
  c->priority = tx->attr.priority;
  return c;
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
    if (l <= tx->end || l == tx->owner_lw || held_by_running_writer(tx, l)) continue;
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
    sstm__party_snapshot(o, l, out);
    return true;
  }
  return false;
}

/* Report a conflict the policy cannot resolve (validation, kill,
 * irrevocable) and abort. The other party is named when known: for a
 * failed validation the writer that holds the changed stripe locked, so
 * that a policy can serialise the retry behind it; for a kill the killer,
 * when recorded (sstm__kill). */
static SSTM_NOINLINE __attribute__((noreturn)) void conflict_abort(struct sstm_desc *tx,
                                                                   sstm_conflict_kind_t kind,
                                                                   sstm_abort_reason_t r,
                                                                   const void *addr) {
  sstm_conflict_t c = {.kind = kind, .addr = addr};
  if (kind == SSTM_CONFLICT_VALIDATION) c.has_other = validation_party(tx, &c.other);
  if (kind == SSTM_CONFLICT_KILLED) c.has_other = sstm__killer_of(tx, &c.other);
  uint64_t wait_ns = 0;
  tx->in_hook++;
  (void)tx->cm->on_conflict(cm_ctx(tx), &c, &wait_ns);
  tx->in_hook--;
  lost_abort(tx, r, c.has_other ? &c.other : NULL);
}

/* The attempt met lock lk held by someone else (value l). Resolve it as the
 * contention manager decides; return a fresh lock word once the lock is
 * free or ours, or do not return (abort). Bounded: after cfg.wait_max
 * consecutive waits the attempt aborts itself (an irrevocable attempt waits
 * instead, which terminates because only committing attempts can make it
 * wait, see (7)). */
static SSTM_NOINLINE uint64_t resolve(struct sstm_desc *tx, sstm_conflict_kind_t kind,
                                      const void *addr, _Atomic uint64_t *lk, uint64_t l) {
  bool irrev = sstm__kind(tx) == SSTM_V_IRREV;
  unsigned attempt = 0;
  for (;;) {
    if (!irrev) check_killed(tx);
    struct sstm_desc *o = sstm__desc_at(sstm_lw_slot(l));
    /* acquire: if we see the owner's IDLE/next status, its lock release
     * (sequenced before) is visible to our reload below. */
    uint64_t ost = atomic_load_explicit(&o->status, memory_order_acquire);
    bool owner_running = sstm_st_owns(ost, l) && sstm_st_state(ost) != SSTM_ST_IDLE;
    if (owner_running && sstm_st_state(ost) == SSTM_ST_KILLED) {
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
      }
      if (act == SSTM_CM_ABORT_OTHER && !c.other.committing) {
        if (sstm__kill(o, sstm_st_serial(ost), tx)) {
          sstm__ctr_add(&tx->ctr.cm_kills, 1);
          steal(tx, lk, l);
        }
      } else if (act == SSTM_CM_WAIT || act == SSTM_CM_ABORT_OTHER) {
        if (!irrev && attempt >= sstm__g.cfg.wait_max) lost_abort(tx, reason_of(kind), &c.other);
        attempt++;
        sstm__ctr_add(&tx->ctr.cm_waits, 1);
        uint64_t t0 = sstm__now_ns();
        if (irrev)
          sched_yield();
        else
          sstm_spin_ns(wait_ns < 1000000 ? wait_ns : 1000000);
        sstm__ctr_add(&tx->ctr.cm_wait_ns, sstm__now_ns() - t0);
      } else {
        lost_abort(tx, reason_of(kind), &c.other);
      }
    } else {
      sstm__cpu_relax(); /* owner's attempt ended; its release is imminent */
    }
    /* acquire: a lock word we go on to use must carry its data (1). */
    l = atomic_load_explicit(lk, memory_order_acquire);
    if (!sstm_lw_locked(l) || l == tx->owner_lw) return l;
  }
}

/* ------------------------------------------------------------------------ */
/* Barriers. One template per operation, specialised per variant V. */

/* The sampling callback runs as a hook does (in_hook): a transaction it
 * begins is reported as misuse, and its sstm_malloc/sstm_free act as outside
 * a transaction, so an abort of the attempt it interrupted neither frees its
 * block nor forgets its free (reclaim.c, in_attempt). */
static SSTM_NOINLINE void sample_fire(struct sstm_desc *tx, const void *addr, bool is_write) {
  tx->sample_left = sstm__g.cfg.sample_period;
  if (tx->in_hook) return; /* an access of a callback, this one's included: not sampled */
  tx->in_hook++;
  sstm__g.cfg.sample_fn(sstm__g.cfg.sample_arg, addr, is_write);
  tx->in_hook--;
}

SSTM_INLINE void barrier_prologue(struct sstm_desc *tx, const void *addr, bool w, unsigned V) {
  if (V & SSTM_V_SAMPLE) {
    if (--tx->sample_left <= 0) sample_fire(tx, addr, w);
  }
  if (sstm__random_delay) sstm__random_delay_point(tx, 5);
}

/* Read of a stripe this attempt has locked (ETL, or irrevocable). Memory
 * bytes are re-checked against the lock: if it was taken over after a kill
 * they may be newer than the snapshot (argument 3). */
static SSTM_NOINLINE uint64_t load_own(struct sstm_desc *tx, const void *addr, unsigned size,
                                       _Atomic uint64_t *lk) {
  uintptr_t a = (uintptr_t)addr;
  unsigned off = a & 7;
  const sstm_w_entry_t *e = sstm_wset_find(&tx->ws, a & ~(uintptr_t)7);
  if (e && entry_covers(e, off, size)) return (e->value >> (off * 8)) & size_mask(size);
  sstm__seam(SSTM_SEAM_OWN_READ_DATA, addr);
  uint64_t v = mem_load(addr, size);
  atomic_thread_fence(memory_order_acquire); /* as in (1): data before re-check */
  if (atomic_load_explicit(lk, memory_order_relaxed) != tx->owner_lw)
    conflict_abort(tx, SSTM_CONFLICT_KILLED, SSTM_ABORT_KILLED, addr);
  return e ? overlay(e, v, off, size) : v;
}

static SSTM_NOINLINE __attribute__((noreturn)) void ro_abort(struct sstm_desc *tx,
                                                             sstm_abort_reason_t r) {
  if (r == SSTM_ABORT_RO_WRITE) {
    tx->attr.read_only = false;
  } else {
    tx->ro_nolog_failed = true;
    ro_needed_extension(tx);
  }
  abort_tx(tx, r, NULL);
}

static SSTM_NOINLINE __attribute__((noreturn)) void oom(void) {
  sstm__fatal("out of memory growing a transaction log (or past its limit of 2^28 entries)");
}

/* Read past lock lk, held (value l) by another attempt: if that attempt is
 * running and has not started to commit, the memory under its lock is the
 * committed data of a version <= its lock_end (writes are buffered), so
 * the read returns that data (argument (8)) instead of asking the policy.
 * True with the bytes in *out; false when the owner is committing, killed,
 * irrevocable or gone, when the lock moved, or when a declared read-only
 * attempt's snapshot does not cover lock_end (it cannot extend): the caller
 * then reloads the lock word and goes on as before. Slow path only; the
 * caller records the read-set entry. */
static SSTM_NOINLINE bool read_past(struct sstm_desc *tx, const void *addr, unsigned size,
                                    _Atomic uint64_t *lk, uint64_t l, unsigned kind,
                                    uint64_t *out) {
  /* l was loaded with acquire (every path of load_slow, and resolve's
   * reload): it read the owner's lock CAS (release), so the owner's status
   * and lock_end stores before it, and the displaced version's data, are
   * visible here. */
  /* running_owner's status load: (8) orders it after the clock load that
   * gave `end`. */
  uint64_t st;
  struct sstm_desc *o = running_owner(tx, l, &st);
  if (o == NULL) return false;
  /* relaxed: after the acquire of l, which the lock_end store precedes;
   * later stores only grow it. */
  uint64_t bound = atomic_load_explicit(&o->lock_end, memory_order_relaxed);
  if (bound > tx->end) {
    if (kind == SSTM_V_RO) return false;
    if (!extend(tx)) conflict_abort(tx, SSTM_CONFLICT_VALIDATION, SSTM_ABORT_VALIDATE_READ, addr);
    if (bound > tx->end) return false;
  }
  sstm__seam(SSTM_SEAM_PAST_READ_DATA, addr);
  uint64_t v = mem_load(addr, size);
  /* acquire fence: pairs with the owner's release fence between its
   * COMMITTING CAS and its write-back (commit_update): data written back
   * makes the status re-check below see COMMITTING or later. */
  atomic_thread_fence(memory_order_acquire);
  uint64_t st2 = atomic_load_explicit(&o->status, memory_order_relaxed);
  if ((st2 ^ st) & ~SSTM_ST_FLAGS) return false; /* same attempt, still ACTIVE */
  if (atomic_load_explicit(lk, memory_order_relaxed) != l) return false;
  sstm__ctr_add(&tx->ctr.reads_past, 1);
  *out = v;
  return true;
}

/* The general read: every case, any variant (runtime kind). */
static SSTM_NOINLINE uint64_t load_slow(struct sstm_desc *tx, const void *addr, unsigned size,
                                        unsigned kind) {
  const sstm_w_entry_t *e = NULL;
  unsigned off = (uintptr_t)addr & 7;
  if (kind == SSTM_V_CTL && (tx->ws.bloom & sstm_bloom_bit((uintptr_t)addr & ~(uintptr_t)7))) {
    e = sstm_wset_find(&tx->ws, (uintptr_t)addr & ~(uintptr_t)7);
    if (e && entry_covers(e, off, size)) return (e->value >> (off * 8)) & size_mask(size);
  }
  _Atomic uint64_t *lk = sstm__lock_for(tx, addr);
  /* acquire: pairs with the committer's release of this lock word, so the
   * data load below sees at least the data of version l (argument 1). */
  uint64_t l = atomic_load_explicit(lk, memory_order_acquire);
  for (;;) {
    if (SSTM_UNLIKELY(sstm_lw_locked(l))) {
      if (kind == SSTM_V_ETL && l == tx->owner_lw) return load_own(tx, addr, size, lk);
      uint64_t v;
      if (passes_running_writers(tx) && read_past(tx, addr, size, lk, l, kind, &v)) {
        if (kind != SSTM_V_RO && SSTM_UNLIKELY(!sstm_rset_add(&tx->rs, lk))) oom();
        return e ? overlay(e, v, off, size) : v;
      }
      l = atomic_load_explicit(lk, memory_order_acquire);
      if (!sstm_lw_locked(l) || l == tx->owner_lw) continue;
      l = resolve(tx, SSTM_CONFLICT_READ_LOCKED, addr, lk, l);
      continue;
    }
    sstm__seam(SSTM_SEAM_SLOW_READ_DATA, addr);
    uint64_t v = mem_load(addr, size);
    /* acquire fence: the re-check below cannot be satisfied by a lock word
     * older than the data just loaded (seqlock, argument 1). */
    atomic_thread_fence(memory_order_acquire);
    sstm__seam(SSTM_SEAM_SLOW_READ_RECHECK, addr);
    uint64_t l2 = atomic_load_explicit(lk, memory_order_relaxed);
    if (SSTM_UNLIKELY(l2 != l)) {
      /* acquire, not l2: the next round's data load must see the data of
       * the word it goes on with, and the fence above precedes l2's load. */
      l = atomic_load_explicit(lk, memory_order_acquire);
      continue;
    }
    if (SSTM_UNLIKELY(sstm_lw_version(l) > tx->end)) {
      if (kind == SSTM_V_RO) ro_abort(tx, SSTM_ABORT_RO_EXTEND);
      if (!extend(tx)) conflict_abort(tx, SSTM_CONFLICT_VALIDATION, SSTM_ABORT_VALIDATE_READ, addr);
      l = atomic_load_explicit(lk, memory_order_acquire); /* re-read at the new end */
      continue;
    }
    if (kind != SSTM_V_RO && SSTM_UNLIKELY(!sstm_rset_add(&tx->rs, lk))) oom();
    return e ? overlay(e, v, off, size) : v;
  }
}

/* The read barrier: the leaf fast path of <schedstm/inline.h> (an unlocked
 * stripe whose version the snapshot covers; the same seqlock read as
 * load_slow, argument 1); anything else starts over in load_slow. */
SSTM_INLINE uint64_t tx_load(struct sstm_desc *tx, const void *addr, unsigned size, unsigned V) {
  const unsigned kind = V & 3;
  barrier_prologue(tx, addr, false, V);
  if (kind == SSTM_V_IRREV) return mem_load(addr, size); /* nobody else commits (7) */
  if (kind == SSTM_V_CTL && (tx->ws.bloom & sstm_bloom_bit((uintptr_t)addr & ~(uintptr_t)7)))
    return load_slow(tx, addr, size, kind);
  uint64_t v;
  if (SSTM_LIKELY(sstm__load_fast((sstm__fast_t *)(void *)tx, addr, size, kind != SSTM_V_RO, &v)))
    return v;
  return load_slow(tx, addr, size, kind);
}

static SSTM_NOINLINE void irrev_store(struct sstm_desc *tx, void *addr, uint64_t val,
                                      unsigned size) {
  _Atomic uint64_t *lk = sstm__lock_for(tx, addr);
  uint64_t l = atomic_load_explicit(lk, memory_order_acquire);
  while (l != tx->owner_lw) {
    if (sstm_lw_locked(l)) {
      l = resolve(tx, SSTM_CONFLICT_WRITE_LOCKED, addr, lk, l);
      continue;
    }
    /* acq_rel: release, so that a reader that sees this lock word also
     * sees our IRREVOCABLE status and does not pass it (8). */
    if (atomic_compare_exchange_weak_explicit(lk, &l, tx->owner_lw, memory_order_acq_rel,
                                              memory_order_acquire)) {
      if (!sstm_lset_add(&tx->ls, lk, l)) oom();
      /* release fence: the in-place data stores below must not become
       * visible before the lock (seqlock writer side, argument 1). */
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
    oom();
  mem_store(addr, val, size);
}

SSTM_INLINE void tx_store(struct sstm_desc *tx, void *addr, uint64_t val, unsigned size,
                          unsigned V) {
  const unsigned kind = V & 3;
  barrier_prologue(tx, addr, true, V);
  if (kind == SSTM_V_RO) ro_abort(tx, SSTM_ABORT_RO_WRITE);
  if (kind == SSTM_V_IRREV) {
    irrev_store(tx, addr, val, size);
    return;
  }
  uintptr_t word = (uintptr_t)addr & ~(uintptr_t)7;
  unsigned off = (uintptr_t)addr & 7;
  uint64_t wv = val << (off * 8), bm = size_mask(size) << (off * 8);
  if (kind == SSTM_V_CTL) {
    if (SSTM_UNLIKELY(!sstm_wset_put(&tx->ws, word, wv, bm))) oom();
    return;
  }
  _Atomic uint64_t *lk = sstm__lock_for(tx, addr);
  uint64_t l = atomic_load_explicit(lk, memory_order_acquire);
  for (;;) {
    if (SSTM_UNLIKELY(sstm_lw_locked(l))) {
      if (l == tx->owner_lw) break;
      l = resolve(tx, SSTM_CONFLICT_WRITE_LOCKED, addr, lk, l);
      continue;
    }
    if (SSTM_UNLIKELY(sstm_lw_version(l) > tx->end)) {
      /* Lock only versions the snapshot covers (argument 4). */
      if (!extend(tx))
        conflict_abort(tx, SSTM_CONFLICT_VALIDATION, SSTM_ABORT_VALIDATE_WRITE, addr);
      l = atomic_load_explicit(lk, memory_order_acquire);
      continue;
    }
    /* lock_end first, so that a reader that sees our lock sees a bound of
     * the version we displace (argument (8)); relaxed: the CAS publishes it. */
    atomic_store_explicit(&tx->lock_end, tx->end, memory_order_relaxed);
    /* acq_rel: acquire, so that later reads of this stripe (load_own) see
     * the data of the version we displace; release, so that a reader that
     * passes our lock (8) sees lock_end and that data (the memory is not
     * written until commit, which has its own release fence). */
    if (atomic_compare_exchange_weak_explicit(lk, &l, tx->owner_lw, memory_order_acq_rel,
                                              memory_order_acquire)) {
      if (SSTM_UNLIKELY(!sstm_lset_add(&tx->ls, lk, l))) oom();
      break;
    }
  }
  if (SSTM_UNLIKELY(!sstm_wset_put(&tx->ws, word, wv, bm))) oom();
}

/* Dispatch once per access on the attempt's variant. ETL (the default) and
 * declared read-only attempts are tested first; the others go through a
 * jump table. */
/* A list, not code: clang-format has no stable layout for it. */
/* clang-format off */
#define SSTM_VARIANTS(X)                                                                           \
  X(SSTM_V_ETL) X(SSTM_V_CTL)                                                                      \
  X(SSTM_V_RO) X(SSTM_V_IRREV) X(SSTM_V_ETL | SSTM_V_SAMPLE) X(SSTM_V_CTL | SSTM_V_SAMPLE)         \
  X(SSTM_V_RO | SSTM_V_SAMPLE) X(SSTM_V_IRREV | SSTM_V_SAMPLE)
/* clang-format on */

/* The kill flag was seen in the variant byte: abort if the attempt was
 * killed, otherwise (a late flag meant for an earlier attempt) clear it and
 * return the real variant. */
static SSTM_NOINLINE unsigned kill_flag_seen(struct sstm_desc *tx) {
  /* acquire fence: pairs with the killer's release fetch_or; the KILLED
   * status it wrote before is visible to check_killed's load. */
  atomic_thread_fence(memory_order_acquire);
  check_killed(tx);
  return atomic_fetch_and_explicit(&tx->variant, (uint8_t)~SSTM_V_KILLFLAG, memory_order_relaxed) &
         ~SSTM_V_KILLFLAG;
}

/* A barrier inside a transaction (depth > 0) found no attempt running (the
 * variant says none): no sequence of API calls should lead here, so the
 * process ends with the evidence rather than run an access with no
 * variant's rules. Off the barriers' fast paths. */
static SSTM_COLD __attribute__((noreturn)) void variant_broken(const struct sstm_desc *tx,
                                                               unsigned var) {
  sstm__fatal("transactional access at depth %u with variant 0x%x (no running attempt)", tx->depth,
              var);
}

SSTM_INLINE uint64_t dispatch_load(struct sstm_desc *tx, const void *addr, unsigned size) {
  unsigned var = sstm__variant(tx);
  if (SSTM_LIKELY(var == SSTM_V_ETL)) return tx_load(tx, addr, size, SSTM_V_ETL);
  if (SSTM_LIKELY(var == SSTM_V_RO)) return tx_load(tx, addr, size, SSTM_V_RO);
  if (SSTM_UNLIKELY(var & SSTM_V_KILLFLAG)) var = kill_flag_seen(tx);
  switch (var) {
#define X(v)                                                                                       \
  case v: return tx_load(tx, addr, size, v);
    SSTM_VARIANTS(X)
#undef X
  }
  variant_broken(tx, var);
}

SSTM_INLINE void dispatch_store(struct sstm_desc *tx, void *addr, uint64_t val, unsigned size) {
  unsigned var = sstm__variant(tx);
  if (SSTM_LIKELY(var == SSTM_V_ETL)) {
    tx_store(tx, addr, val, size, SSTM_V_ETL);
    return;
  }
  if (SSTM_UNLIKELY(var & SSTM_V_KILLFLAG)) var = kill_flag_seen(tx);
  switch (var) {
#define X(v)                                                                                       \
  case v: tx_store(tx, addr, val, size, v); return;
    SSTM_VARIANTS(X)
#undef X
  }
  variant_broken(tx, var);
}

static SSTM_COLD uint64_t misuse_access(const char *what) {
  sstm__misuse("%s outside a transaction (or on an unregistered thread)", what);
  return 0;
}

/* Bulk and unaligned accesses: split into the widest naturally aligned
 * pieces (8, 4, 2 or 1 bytes), each a full barrier. */
static unsigned chunk(uintptr_t a, size_t n) {
  return (n >= 8 && a % 8 == 0) ? 8 : (n >= 4 && a % 4 == 0) ? 4 : (n >= 2 && a % 2 == 0) ? 2 : 1;
}

/* n bytes, each naturally aligned piece a full barrier. */
static void load_pieces(struct sstm_desc *tx, unsigned char *d, const unsigned char *s, size_t n) {
  while (n > 0) {
    unsigned k = chunk((uintptr_t)s, n);
    uint64_t v = dispatch_load(tx, s, k);
    memcpy(d, &v, k); /* little endian: low bytes first */
    d += k, s += k, n -= k;
  }
}

/* The bytes [s, s+n) of one stripe under one seqlock read of its lock word
 * (argument 1 covers every byte the stripe's lock protects, not one word):
 * the fast path of a bulk read for an ETL or declared read-only attempt
 * whose stripe is unlocked and covered by the snapshot, with one read-set
 * entry for the whole piece. False (nothing recorded, d may hold garbage)
 * sends the piece through the per-word barriers, which handle everything
 * else: a lock held by this attempt or another, a newer version, sampling,
 * a kill flag, the random-delay build. */
static bool load_stripe(struct sstm_desc *tx, unsigned char *d, const unsigned char *s, size_t n) {
  unsigned var = sstm__variant(tx);
  if ((var != SSTM_V_ETL && var != SSTM_V_RO) || sstm__random_delay) return false;
  _Atomic uint64_t *lk = sstm__lock_for(tx, s);
  /* acquire: pairs with the committer's release of the lock word. */
  uint64_t l = atomic_load_explicit(lk, memory_order_acquire);
  if (l > tx->end) return false; /* locked (top bit), or newer than the snapshot */
  sstm__seam(SSTM_SEAM_STRIPE_READ_DATA, s);
  if ((((uintptr_t)s | n) & 7) == 0) { /* whole words, the common case */
    for (size_t i = 0; i < n; i += 8) {
      uint64_t v = __atomic_load_n((const uint64_t *)(const void *)(s + i), __ATOMIC_RELAXED);
      memcpy(d + i, &v, 8);
    }
  } else {
    for (size_t i = 0; i < n;) {
      unsigned k = chunk((uintptr_t)(s + i), n - i);
      uint64_t v = mem_load(s + i, k); /* relaxed atomic loads */
      memcpy(d + i, &v, k);
      i += k;
    }
  }
  /* acquire fence: the re-check cannot see a lock word older than the data
   * (pairs with the committer's release fence before write-back). */
  atomic_thread_fence(memory_order_acquire);
  if (atomic_load_explicit(lk, memory_order_relaxed) != l) return false;
  if (var == SSTM_V_ETL && SSTM_UNLIKELY(!sstm_rset_add(&tx->rs, lk))) oom();
  return true;
}

/* A bulk read, stripe by stripe: one barrier per stripe touched when it is
 * unlocked and covered by the snapshot, one per piece otherwise. */
static SSTM_NOINLINE void load_bytes(struct sstm_desc *tx, void *dst, const void *src, size_t n) {
  unsigned char *d = dst;
  const unsigned char *s = src;
  const uintptr_t stripe = (uintptr_t)1 << tx->stripe_shift;
  while (n > 0) {
    size_t k = stripe - ((uintptr_t)s & (stripe - 1));
    if (k > n) k = n;
    if (!load_stripe(tx, d, s, k)) load_pieces(tx, d, s, k);
    d += k, s += k, n -= k;
  }
}

static SSTM_NOINLINE void store_bytes(struct sstm_desc *tx, void *dst, const void *src, size_t n) {
  unsigned char *d = dst;
  const unsigned char *s = src;
  while (n > 0) {
    unsigned k = chunk((uintptr_t)d, n);
    uint64_t v = 0;
    memcpy(&v, s, k);
    dispatch_store(tx, d, v, k);
    d += k, s += k, n -= k;
  }
}

#define SSTM_IN_TX(tx) SSTM_LIKELY((tx) != NULL && (tx)->depth != 0)

/* The general read entry: misuse, alignment, variant dispatch. The public
 * loads and the inline fast path of <schedstm/inline.h> end up here. */
SSTM_API uint64_t sstm__load_slow(const void *addr, unsigned size) {
  struct sstm_desc *tx = sstm__cur;
  if (!SSTM_IN_TX(tx)) return misuse_access("transactional load");
  if (SSTM_UNLIKELY((uintptr_t)addr & (size - 1))) {
    uint64_t v = 0;
    load_bytes(tx, &v, addr, size);
    return v;
  }
  switch (size) {
  case 1: return dispatch_load(tx, addr, 1);
  case 2: return dispatch_load(tx, addr, 2);
  case 4: return dispatch_load(tx, addr, 4);
  default: return dispatch_load(tx, addr, 8);
  }
}

/* The exported loads: the inline fast path as a leaf (no stack frame),
 * else the general entry. The latter is reached through a cold function so
 * the compiler moves it out of line and the fast path runs straight through
 * without a taken branch (on this VM's CPU that decided more than the
 * instruction count did). The random-delay build always takes the general
 * entry (its barriers have delay points). */
static SSTM_COLD uint64_t load_general(const void *addr, unsigned size) {
  return sstm__load_slow(addr, size);
}

SSTM_INLINE uint64_t load_entry(const void *addr, unsigned size) {
  uint64_t v;
  if (!sstm__random_delay && SSTM_LIKELY(sstm__load_try(sstm__fast_cur, addr, size, &v))) return v;
  return load_general(addr, size);
}

#define DEFINE_INT_BARRIERS(T, S, suffix)                                                          \
  SSTM_API T sstm_load_##suffix(const T *addr) { return (T)load_entry(addr, S); }                  \
  SSTM_API void sstm_store_##suffix(T *addr, T v) {                                                \
    struct sstm_desc *tx = sstm__cur;                                                              \
    if (!SSTM_IN_TX(tx)) {                                                                         \
      misuse_access("sstm_store_" #suffix);                                                        \
      return;                                                                                      \
    }                                                                                              \
    if (SSTM_UNLIKELY((uintptr_t)addr & (S - 1))) {                                                \
      store_bytes(tx, addr, &v, S);                                                                \
      return;                                                                                      \
    }                                                                                              \
    dispatch_store(tx, addr, (uint64_t)v, S);                                                      \
  }

DEFINE_INT_BARRIERS(uint8_t, 1, u8)
DEFINE_INT_BARRIERS(uint16_t, 2, u16)
DEFINE_INT_BARRIERS(uint32_t, 4, u32)
DEFINE_INT_BARRIERS(uint64_t, 8, u64)

SSTM_API void *sstm_load_ptr(void *const *addr) { return (void *)(uintptr_t)load_entry(addr, 8); }
SSTM_API void sstm_store_ptr(void **addr, void *v) {
  sstm_store_u64((uint64_t *)(void *)addr, (uint64_t)(uintptr_t)v);
}
SSTM_API float sstm_load_float(const float *addr) {
  uint32_t b = (uint32_t)load_entry(addr, 4);
  float f;
  memcpy(&f, &b, 4);
  return f;
}
SSTM_API void sstm_store_float(float *addr, float v) {
  uint32_t b;
  memcpy(&b, &v, 4);
  sstm_store_u32((uint32_t *)(void *)addr, b);
}
SSTM_API double sstm_load_double(const double *addr) {
  uint64_t b = load_entry(addr, 8);
  double d;
  memcpy(&d, &b, 8);
  return d;
}
SSTM_API void sstm_store_double(double *addr, double v) {
  uint64_t b;
  memcpy(&b, &v, 8);
  sstm_store_u64((uint64_t *)(void *)addr, b);
}

SSTM_API void sstm_load_bytes(void *dst, const void *src, size_t n) {
  struct sstm_desc *tx = sstm__cur;
  if (!SSTM_IN_TX(tx)) {
    misuse_access("sstm_load_bytes");
    if (dst != NULL && n != 0) memset(dst, 0, n);
    return;
  }
  load_bytes(tx, dst, src, n);
}

SSTM_API void sstm_store_bytes(void *dst, const void *src, size_t n) {
  struct sstm_desc *tx = sstm__cur;
  if (!SSTM_IN_TX(tx)) {
    misuse_access("sstm_store_bytes");
    return;
  }
  store_bytes(tx, dst, src, n);
}

/* ------------------------------------------------------------------------ */
/* Irrevocability (argument 7). */

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

static void irrev_release(struct sstm_desc *tx);

/* Take the token and make the current attempt irrevocable. False, with the
 * token given back, if the attempt was killed meanwhile (a kill that
 * returned 0 to its caller: that attempt must never commit; the caller
 * starts another). */
static bool irrev_enter(struct sstm_desc *tx) {
  unsigned me = tx->slot + 1, free_ = 0;
  /* acquire: the previous holder's in-place writes and lock releases. */
  while (!atomic_compare_exchange_weak_explicit(&sstm__g.irrev_owner, &free_, me,
                                                memory_order_acquire, memory_order_relaxed)) {
    free_ = 0;
    sched_yield();
  }
  tx->irrev_token = true;
  /* acq_rel: the flag and the committers' fetch_add are ordered in the
   * clock's modification order; either a committer sees the flag and aborts
   * or we see its COMMITTING status below (acquire half). */
  atomic_fetch_or_explicit(&sstm__g.clock, SSTM_CLOCK_IRREV, memory_order_acq_rel);
  wait_no_committing(tx);
  /* ACTIVE -> IRREVOCABLE, keeping the watch flags (CAS loop). Only the
   * owner leaves ACTIVE except by a killer's CAS to KILLED; a kill that won
   * is honoured (no locks held yet, nothing to undo). */
  uint64_t st = atomic_load_explicit(&tx->status, memory_order_relaxed);
  do {
    if (sstm_st_state(st) != SSTM_ST_ACTIVE) {
      irrev_release(tx);
      return false;
    }
  } while (!atomic_compare_exchange_weak_explicit(
      &tx->status, &st, sstm_st_make(tx->serial, SSTM_ST_IRREVOCABLE) | (st & SSTM_ST_FLAGS),
      memory_order_acq_rel, memory_order_relaxed));
  sstm__set_variant(tx, SSTM_V_IRREV | (sstm__variant(tx) & SSTM_V_SAMPLE));
  return true;
}

static void irrev_release(struct sstm_desc *tx) {
  /* release: our in-place writes happen before the flag is seen clear. */
  atomic_fetch_and_explicit(&sstm__g.clock, ~SSTM_CLOCK_IRREV, memory_order_release);
  atomic_store_explicit(&sstm__g.irrev_owner, 0, memory_order_release);
  tx->irrev_token = false;
}

/* Release the locks of an irrevocable attempt, at its commit or its undo,
 * with one fresh version taken from the clock after its in-place writes. */
static void irrev_release_locks(struct sstm_desc *tx) {
  if (tx->ls.n == 0) return;
  /* acq_rel: as in commit_update; the irrevocable flag stays set meanwhile. */
  uint64_t c = atomic_fetch_add_explicit(&sstm__g.clock, SSTM_CLOCK_TICK, memory_order_acq_rel);
  uint64_t v = sstm_lw_make_version(sstm_clock_time(c) + 1);
  for (uint32_t i = 0; i < tx->ls.n; i++)
    /* release: a reader acquiring v sees the bytes written (or put back) */
    atomic_store_explicit(tx->ls.e[i].lock, v, memory_order_release);
}

/* Roll back an irrevocable attempt that a policy escalated (the user's
 * sstm_restart or sstm_cancel in it): put back the bytes it wrote in place
 * (its undo log, irrev_store), then release its locks as its commit would,
 * with a fresh version. Not the old one: a reader that loaded the old lock
 * word before we locked the stripe and the data while we wrote it would
 * then pass its re-check (ABA); with a fresh version it fails it and
 * retries, and a reader that acquires the new version sees the restored
 * bytes (release stores after them). The caller gives the token back once
 * the attempt has ended. */
static void irrev_undo(struct sstm_desc *tx) {
  for (uint32_t i = 0; i < tx->ws.n; i++)
    store_masked(tx->ws.e[i].word, tx->ws.e[i].value, tx->ws.e[i].bmask);
  irrev_release_locks(tx);
  tx->ls.n = 0;
}

static SSTM_NOINLINE uint64_t wait_irrevocable(void) {
  uint64_t c;
  do {
    sched_yield();
    c = atomic_load_explicit(&sstm__g.clock, memory_order_acquire);
  } while (sstm_clock_irrevocable(c));
  return c;
}

/* ------------------------------------------------------------------------ */
/* Begin, commit, rollback. */

/* An attempt has ended; `old` is its last running status, read by the RMW
 * that ended it as a running attempt (after which nobody can set flags).
 * Wake futex sleepers and tell the policy whether it was watched. */
static void attempt_ended(struct sstm_desc *tx, uint64_t old) {
  tx->cm_ctx.watched = (old & SSTM_ST_WATCHED) != 0;
  if (SSTM_UNLIKELY(old & SSTM_ST_SLEEPERS)) sstm__futex_wake_all(&tx->status);
}

static void release_locks_abort(struct sstm_desc *tx) {
  for (uint32_t i = 0; i < tx->ls.n; i++) {
    uint64_t expect = tx->owner_lw;
    /* CAS, not store: a killed attempt's lock may have been taken over.
     * release: see steal(); restoring the old version keeps readers that
     * saw it valid. */
    atomic_compare_exchange_strong_explicit(tx->ls.e[i].lock, &expect, tx->ls.e[i].old,
                                            memory_order_release, memory_order_relaxed);
  }
  tx->ls.n = 0;
}

/* User actions run outside the transaction and may run transactions of
 * their own on this descriptor. Those reuse the action array and, after an
 * abort, would overwrite what the restart and the policy still need (the
 * checkpoint, the attributes, the retry count, the policy's view of the
 * attempt that ended). So the array is taken out of the descriptor while it
 * runs, and after an abort those fields are put back. */
static void run_actions(struct sstm_desc *tx, bool committed) {
  tx->in_callback++;
  uint32_t n = tx->nactions, cap = tx->actions_cap;
  sstm_action_t *a = tx->actions;
  tx->nactions = 0;
  tx->actions = NULL;
  tx->actions_cap = 0;
  if (committed) {
    for (uint32_t i = 0; i < n; i++)
      if (a[i].on_commit) a[i].fn(a[i].arg);
  } else {
    sstm_ckpt_t ckpt = tx->ckpt;
    sstm_attr_t attr = tx->attr;
    sstm_cm_ctx_t ctx = tx->cm_ctx;
    sstm_abort_info_t last = tx->last_abort;
    uint32_t retries = tx->retries, conflicts = tx->conflicts;
    bool sticky = tx->irrev_sticky, ro_failed = tx->ro_nolog_failed;
    uint64_t birth = tx->birth, start = tx->start;
    int prio = atomic_load_explicit(&tx->pub_priority, memory_order_relaxed);
    for (uint32_t i = 0; i < n; i++)
      if (!a[i].on_commit) a[i].fn(a[i].arg);
    tx->ckpt = ckpt;
    tx->attr = attr;
    tx->cm_ctx = ctx;
    tx->last_abort = last;
    tx->retries = retries;
    tx->conflicts = conflicts;
    tx->irrev_sticky = sticky;
    tx->ro_nolog_failed = ro_failed;
    __atomic_store_n(&tx->birth, birth, __ATOMIC_RELAXED);
    __atomic_store_n(&tx->start, start, __ATOMIC_RELAXED);
    /* relaxed: published for other threads' policies, as in sstm__begin */
    atomic_store_explicit(&tx->pub_priority, prio, memory_order_relaxed);
  }
  free(tx->actions); /* what the actions' own transactions grew, if anything */
  tx->actions = a;
  tx->actions_cap = cap;
  tx->nactions = 0;
  tx->in_callback--;
}

void sstm__desc_set_slow(struct sstm_desc *d) {
  unsigned s = 0;
  if (sstm__g.cfg.sample_period || d->cm->on_begin || d->stt) s |= SSTM_SLOW_BEGIN;
  if (d->cm->on_commit || d->stt || sstm__g.cfg.stats == SSTM_STATS_DETAILED) s |= SSTM_SLOW_COMMIT;
  d->slow = (uint8_t)s;
}

/* Begin work of the features in SSTM_SLOW_BEGIN. */
static SSTM_NOINLINE void begin_slow(struct sstm_desc *tx) {
  if (tx->cm->on_begin) {
    tx->in_hook++;
    tx->cm->on_begin(cm_ctx(tx));
    tx->in_hook--;
  }
  if (tx->stt) sstm__stt_begin(tx);
}

/* An attempt that was to run irrevocable was killed before it became so
 * (only sstm_desc_kill can: policies kill lock holders): it ends, never
 * having run a line of the transaction, and the next serial takes its
 * place. It is not counted as an abort (no retry follows it; the statistics'
 * retries match their aborts), nor reported to the policy or the hooks,
 * which saw no attempt begin. Returns the new serial. */
static SSTM_NOINLINE uint64_t irrev_killed_at_start(struct sstm_desc *tx) {
  uint64_t serial = ++tx->serial;
  tx->owner_lw = sstm_lw_make_owner(tx->slot, serial);
  sstm__set_variant(tx, SSTM_V_NONE | (sstm__variant(tx) & SSTM_V_SAMPLE));
  /* seq_cst exchange and fence: the full barrier of a published ACTIVE in
   * either begin-fence mode (argument 5); it returns the killed attempt's flags,
   * whose sleepers are woken as at any attempt's end. */
  attempt_ended(tx, atomic_exchange_explicit(&tx->status, sstm_st_make(serial, SSTM_ST_ACTIVE),
                                             memory_order_seq_cst));
  /* seq_cst fence: as in attempt_start's fallback (the exchange alone does
   * not order the later loads in C11); a cold path, so in both modes. */
  sstm__full_fence();
  return serial;
}

/* Start an attempt; `first` (a constant at each call site) is true for the
 * first attempt of a transaction, whose restart flags are still clear. */
SSTM_INLINE void attempt_start(struct sstm_desc *tx, bool first) {
  uint64_t serial = ++tx->serial;
  tx->owner_lw = sstm_lw_make_owner(tx->slot, serial);
  sstm_rset_clear(&tx->rs);
  /* An attempt that wrote nothing left nothing in the write set's index
   * (it holds only entries stamped by attempts that wrote). */
  if (tx->ws.n) sstm_wset_reset(&tx->ws);
  tx->ls.n = 0;
  tx->allocs.n = 0;
  tx->frees.n = 0;
  tx->nactions = 0;
  tx->cm_ctx.watched = false;
  unsigned sample = (tx->slow & SSTM_SLOW_BEGIN) && sstm__g.cfg.sample_period ? SSTM_V_SAMPLE : 0;
  bool irrev = (!first && tx->irrev_sticky) || tx->attr.irrevocable;
  bool nolog = tx->attr.read_only && !tx->ro_log && (first || !tx->ro_nolog_failed);
  unsigned v = irrev ? SSTM_V_NONE : nolog ? SSTM_V_RO : tx->design;
  /* The variant is set before ACTIVE is published (release below), so that
   * a killer's flag for this attempt lands after it (registry.c). */
  sstm__set_variant(tx, v | sample);
  if (SSTM_LIKELY(sstm__g.membarrier)) {
    /* Publishing ACTIVE needs a full barrier before the later loads of the
     * clock and shared data (argument 5). With membarrier the reclaimer
     * supplies it: its expedited membarrier runs a full barrier on every
     * CPU running one of our threads, so a compiler barrier suffices here
     * (the asymmetric fence of liburcu's membarrier flavour). release: see
     * the variant above. */
    atomic_store_explicit(&tx->status, sstm_st_make(serial, SSTM_ST_ACTIVE), memory_order_release);
    atomic_signal_fence(memory_order_seq_cst);
  } else {
    /* The full barrier itself: a seq_cst fence after the store, pairing
     * with the reclaimer's seq_cst fence (the store-buffering shape: each
     * side stores, fences, then loads what the other stored). A seq_cst
     * exchange alone would do on x86 (a locked instruction), but C11 does
     * not order the later acquire and relaxed loads after it against the
     * reclaimer's fence. sstm__full_fence is that fence as one locked
     * instruction, whatever the compiler (engine.h). */
    atomic_store_explicit(&tx->status, sstm_st_make(serial, SSTM_ST_ACTIVE), memory_order_release);
    sstm__full_fence();
  }
  DELAY_POINT(tx); /* published ACTIVE, clock not yet read */
  uint64_t start;
  if (SSTM_UNLIKELY(irrev)) {
    while (!irrev_enter(tx))
      serial = irrev_killed_at_start(tx);
    start = tx->start;
  } else {
    /* acquire: pairs with committers' release fetch_add (argument 2). */
    uint64_t c = atomic_load_explicit(&sstm__g.clock, memory_order_acquire);
    if (SSTM_UNLIKELY(sstm_clock_irrevocable(c))) c = wait_irrevocable();
    start = sstm_clock_time(c);
    __atomic_store_n(&tx->start, start, __ATOMIC_RELAXED);
    tx->end = start;
  }
  if (first || tx->retries == 0) __atomic_store_n(&tx->birth, start, __ATOMIC_RELAXED);
  if (SSTM_UNLIKELY(tx->slow & SSTM_SLOW_BEGIN)) begin_slow(tx);
  if (SSTM_UNLIKELY(atomic_load_explicit(&sstm__g.nhooks, memory_order_relaxed))) {
    tx->in_hook++;
    sstm__hooks_begin(serial);
    tx->in_hook--;
  }
}

/* cfg.ro_log: which first attempts of declared read-only transactions keep
 * a read set. Without one an attempt reads for less (no log, and a commit
 * with nothing to validate), but the first stripe newer than its snapshot
 * aborts it (ro-extend) and its retry keeps one: the traversal done so far
 * is lost. In SSTM_RO_LOG_AUTO each descriptor counts, over windows of
 * RO_WINDOW read-only transactions, those that needed an extension (with a
 * read set: an extension; without: the ro-extend abort), and keeps read
 * sets from the first attempt while RO_LOG_ON of a window did, until a
 * window in which none did. On ll1k at 8-32 threads about 4 % of the
 * lookups need one: with read sets they stop aborting (ser-block's aborts
 * per commit fall from 0.04 to 0.012), but the read sets cost more than
 * the aborted traversals did (0.86x-1.10x of the throughput in pairs,
 * median 0.97x), so OFF is the default (docs/benchmarks.md, "Read sets in
 * read-only transactions"). */
#define RO_WINDOW 64
#define RO_LOG_ON 2

static SSTM_NOINLINE void ro_decide(struct sstm_desc *tx) {
  if (sstm__g.cfg.ro_log == SSTM_RO_LOG_AUTO) {
    if (tx->ro_win_ext >= RO_LOG_ON)
      tx->ro_log = true;
    else if (tx->ro_win_ext == 0)
      tx->ro_log = false;
  }
  tx->ro_win_n = 0;
  tx->ro_win_ext = 0;
}

/* A declared read-only transaction begins (first attempt). */
SSTM_INLINE void ro_window(struct sstm_desc *tx) {
  tx->ro_ext_seen = false;
  if (SSTM_UNLIKELY(++tx->ro_win_n == RO_WINDOW)) ro_decide(tx);
  /* after the decision, which this transaction's first attempt follows; an
   * irrevocable attempt keeps no read set */
  if (SSTM_UNLIKELY(tx->ro_log) && !tx->attr.irrevocable) sstm__ctr_add(&tx->ctr.ro_logged, 1);
}

/* A begin inside a hook or a policy's callback, which must not start a
 * transaction: the hook's one would overwrite the checkpoint, attributes and
 * actions of the attempt the hook runs for (whose restart then jumps into a
 * dead frame). Reported; if the misuse handler returns, the block runs as
 * an unregistered thread's would (its accesses reported, its commit
 * SSTM_ENOTX), or, in a callback of a running attempt (on_begin,
 * on_conflict), as a flat-nested block of that attempt, whose depth its
 * commit then balances. */
static SSTM_COLD sstm_ckpt_t *begin_in_hook(struct sstm_desc *tx) {
  sstm__misuse("transaction begin inside a hook or a contention manager's callback (they must "
               "not start transactions: hooks.h, cm.h)");
  if (tx->depth > 0) tx->depth++;
  return NULL;
}

SSTM_API sstm_ckpt_t *sstm__begin(const sstm_attr_t *attr) {
  struct sstm_desc *tx = sstm__cur;
  if (SSTM_UNLIKELY(tx == NULL)) {
    sstm__misuse("transaction begin on a thread that is not registered (sstm_thread_init)");
    return NULL;
  }
  if (SSTM_UNLIKELY(tx->in_hook)) return begin_in_hook(tx);
  if (tx->depth++ > 0) return NULL; /* flat nesting */
  tx->begin_sp = sstm__stack_pointer();
  if (attr) {
    /* Field by field, not as one block: callers build the attribute on the
     * stack just before the call, one store per field (sstm_attr_t's
     * members have different widths), and a wider load spanning several
     * recent stores cannot be forwarded from the store buffer: a stall of
     * about a dozen cycles per transaction, a third of this function's time
     * in a profile of rb16k. */
    tx->attr.read_only = attr->read_only;
    tx->attr.irrevocable = attr->irrevocable;
    tx->attr.priority = attr->priority;
    tx->attr.tag = attr->tag;
    if (attr->read_only) ro_window(tx);
  } else {
    tx->attr = (sstm_attr_t){0};
  }
  if (SSTM_UNLIKELY(tx->attr.priority !=
                    atomic_load_explicit(&tx->pub_priority, memory_order_relaxed)))
    atomic_store_explicit(&tx->pub_priority, tx->attr.priority, memory_order_relaxed);
  tx->retries = 0;
  tx->conflicts = 0;
  tx->irrev_sticky = false;
  tx->ro_nolog_failed = false;
  attempt_start(tx, true);
  return &tx->ckpt;
}

/* Roll the attempt back: locks, allocations, frees, callbacks. */
static void rollback(struct sstm_desc *tx, sstm_abort_reason_t r) {
  bool irrev = sstm__kind(tx) == SSTM_V_IRREV; /* escalated: sstm_restart/cancel */
  DELAY_POINT(tx);
  if (SSTM_UNLIKELY(irrev))
    irrev_undo(tx);
  else
    release_locks_abort(tx);
  sstm__seam(SSTM_SEAM_ROLLBACK_LOCKS_RELEASED, NULL);
  DELAY_POINT(tx);
  sstm__reclaim_abort(tx);
  /* acq_rel exchange: release so that readers of our status (reclaimers,
   * waiting policies) see our accesses and lock releases done; the exchange
   * returns the flags watchers set (lockword.h). */
  attempt_ended(tx, atomic_exchange_explicit(&tx->status, sstm_st_make(tx->serial, SSTM_ST_IDLE),
                                             memory_order_acq_rel));
  if (SSTM_UNLIKELY(irrev)) irrev_release(tx);
  sstm__ctr_add(&tx->ctr.aborts[r], 1);
  if (sstm__g.cfg.stats == SSTM_STATS_DETAILED && tx->attr.tag < SSTM_MAX_TAGS)
    sstm__ctr_add(&tx->ctr.tag_aborts[tx->attr.tag], 1);
  /* Outside the transaction now (abort_tx runs the user's abort actions
   * and the policy); the restart (or the cancel) sets depth and variant
   * again. */
  tx->depth = 0;
  sstm__set_variant(tx, SSTM_V_NONE);
}

/* After the rollback: record the abort, then the hooks, the user's abort
 * actions and the policy, in that order. */
static void abort_notify(struct sstm_desc *tx, sstm_abort_reason_t r, const sstm_party_t *other) {
  tx->last_abort.reason = r;
  tx->last_abort.has_other = other != NULL;
  if (other) tx->last_abort.other = *other;
  /* Published before the policy acts on it (a kernel-side scheduler reading
   * the table sees the conflict while the loser waits). */
  if (SSTM_UNLIKELY(tx->stt)) sstm__stt_abort(tx, r, other);
  tx->in_callback++;
  if (SSTM_UNLIKELY(atomic_load_explicit(&sstm__g.nhooks, memory_order_relaxed))) {
    tx->in_hook++;
    sstm__hooks_abort(tx->serial, r);
    tx->in_hook--;
  }
  if (r != SSTM_ABORT_USER_CANCEL) {
    tx->retries++;
    sstm__ctr_add(&tx->ctr.retries, 1);
  }
  /* The policy's view of the attempt that ended, taken now: the user's
   * abort actions run next, and one may run a transaction on this
   * descriptor, which rewrites the serial and set sizes cm_ctx() reads
   * (run_actions puts cm_ctx and last_abort back as they were). The
   * actions run before the policy acts, not after: what the policy does
   * for the retry (softser lowers the thread's priority) must not be
   * undone by the commit of an action's transaction. */
  sstm_cm_ctx_t *ctx = cm_ctx(tx);
  if (SSTM_UNLIKELY(tx->nactions)) run_actions(tx, false);
  /* The policy learns of every ended attempt, cancelled ones included (a
   * watched attempt's end must reach it). */
  if (tx->cm->on_abort) {
    uint64_t t0 = sstm__now_ns();
    tx->in_hook++;
    tx->cm->on_abort(ctx, &tx->last_abort);
    tx->in_hook--;
    sstm__ctr_add(&tx->ctr.cm_wait_ns, sstm__now_ns() - t0);
  }
  tx->in_callback--;
  /* A transaction that gives up after retries counts as one that retried
   * (the commit path records the others). */
  if (r == SSTM_ABORT_USER_CANCEL && tx->retries) sstm__ctr_max(&tx->ctr.max_retries, tx->retries);
}

static __attribute__((noreturn)) void abort_tx(struct sstm_desc *tx, sstm_abort_reason_t r,
                                               const sstm_party_t *other) {
  /* The jump below discards every frame above the checkpoint, among them
   * any callback of this attempt that was running (the sampling callback or
   * a begin hook whose barrier lost a conflict): its in_hook decrement would
   * never run. Nothing outside the attempt runs with in_hook set. */
  tx->in_hook = 0;
  rollback(tx, r);
  abort_notify(tx, r, other);
  if (r == SSTM_ABORT_USER_CANCEL) {
    SSTM_ASAN_NO_RETURN();
    sstm__ckpt_restore(&tx->ckpt, SSTM__CKPT_CANCEL);
  }
  tx->depth = 1; /* flat nesting: the restart resumes the outermost block */
  attempt_start(tx, false);
  SSTM_ASAN_NO_RETURN();
  sstm__ckpt_restore(&tx->ckpt, SSTM__CKPT_RESTART);
}

/* CTL: lock the write set (argument 4). */
static void lock_write_set(struct sstm_desc *tx) {
  for (uint32_t i = 0; i < tx->ws.n; i++) {
    const void *addr = (const void *)tx->ws.e[i].word;
    _Atomic uint64_t *lk = sstm__lock_for(tx, addr);
    uint64_t l = atomic_load_explicit(lk, memory_order_acquire);
    for (;;) {
      if (l == tx->owner_lw) break;
      if (sstm_lw_locked(l)) {
        l = resolve(tx, SSTM_CONFLICT_COMMIT_LOCKED, addr, lk, l);
        continue;
      }
      if (sstm_lw_version(l) > tx->end) {
        if (!extend(tx))
          conflict_abort(tx, SSTM_CONFLICT_VALIDATION, SSTM_ABORT_VALIDATE_COMMIT, addr);
        l = atomic_load_explicit(lk, memory_order_acquire);
        continue;
      }
      /* acq_rel, as in the ETL write barrier: acquire for our reads of the
       * stripe; release, so that a reader that sees this lock word also
       * sees our COMMITTING status and does not pass it (8). */
      if (atomic_compare_exchange_weak_explicit(lk, &l, tx->owner_lw, memory_order_acq_rel,
                                                memory_order_acquire)) {
        if (!sstm_lset_add(&tx->ls, lk, l)) oom();
        break;
      }
    }
  }
}

static void commit_update(struct sstm_desc *tx) {
  uint64_t st = atomic_load_explicit(&tx->status, memory_order_relaxed);
  /* acq_rel: after this no kill succeeds and no watch flag can be set;
   * acquire orders our later reads of lock words after any state change a
   * killer made. The loop only retries when a watcher set a flag. */
  do {
    if (sstm_st_state(st) != SSTM_ST_ACTIVE)
      conflict_abort(tx, SSTM_CONFLICT_KILLED, SSTM_ABORT_KILLED, NULL);
  } while (!atomic_compare_exchange_weak_explicit(&tx->status, &st,
                                                  sstm_st_with_state(st, SSTM_ST_COMMITTING),
                                                  memory_order_acq_rel, memory_order_relaxed));
  DELAY_POINT(tx);
  if (tx->design == SSTM_DESIGN_CTL) lock_write_set(tx);
  DELAY_POINT(tx);
  /* acq_rel: release publishes our locks (and COMMITTING) to whoever reads
   * this clock value (arguments 2, 7); acquire makes the locks of commits
   * counted before us visible to validate(). */
  uint64_t c = atomic_fetch_add_explicit(&sstm__g.clock, SSTM_CLOCK_TICK, memory_order_acq_rel);
  if (SSTM_UNLIKELY(sstm_clock_irrevocable(c)))
    conflict_abort(tx, SSTM_CONFLICT_IRREVOCABLE, SSTM_ABORT_IRREVOCABLE, NULL);
  uint64_t ts = sstm_clock_time(c) + 1;
  DELAY_POINT(tx);
  if (ts != tx->end + 1 && !validate(tx))
    conflict_abort(tx, SSTM_CONFLICT_VALIDATION, SSTM_ABORT_VALIDATE_COMMIT, NULL);
  /* release fence: the write-back stores are not visible before our locks
   * (seqlock writer side; pairs with the readers' acquire fence, arg. 1). */
  atomic_thread_fence(memory_order_release);
  for (uint32_t i = 0; i < tx->ws.n; i++) {
    store_masked(tx->ws.e[i].word, tx->ws.e[i].value, tx->ws.e[i].bmask);
    if (i == 0) DELAY_POINT(tx); /* a write-back half done */
  }
  sstm__seam(SSTM_SEAM_COMMIT_WRITTEN_BACK, NULL);
  uint64_t v = sstm_lw_make_version(ts);
  for (uint32_t i = 0; i < tx->ls.n; i++) {
    /* release: a reader acquiring version ts sees the write-back. */
    atomic_store_explicit(tx->ls.e[i].lock, v, memory_order_release);
    if (i == 0) DELAY_POINT(tx); /* some locks released, others not */
  }
  /* release: the attempt has ended with everything visible (argument 5).
   * A plain store: flags cannot change while COMMITTING, so `st` has them. */
  atomic_store_explicit(&tx->status, sstm_st_make(tx->serial, SSTM_ST_IDLE), memory_order_release);
  attempt_ended(tx, st);
}

static void commit_irrevocable(struct sstm_desc *tx) {
  irrev_release_locks(tx);
  /* acq_rel exchange: as in rollback. */
  attempt_ended(tx, atomic_exchange_explicit(&tx->status, sstm_st_make(tx->serial, SSTM_ST_IDLE),
                                             memory_order_acq_rel));
  irrev_release(tx);
}

/* The rest of a commit, once the attempt has ended: detailed statistics,
 * deferred frees, policy and state-table notification, hooks, then the
 * user's actions last: an action may run transactions on this descriptor,
 * which rewrite the attempt's state (serial, cm_ctx.watched), so whatever
 * reports this attempt must run before them (softser's winner cleared its
 * losers' conflict counts only if `watched` survived the actions). Only
 * what the attempt used costs anything. */
static SSTM_NOINLINE int commit_tail(struct sstm_desc *tx) {
  bool slow = tx->slow & SSTM_SLOW_COMMIT; /* the features it summarises */
  if (SSTM_UNLIKELY(tx->retries)) sstm__ctr_max(&tx->ctr.max_retries, tx->retries);
  if (slow && sstm__g.cfg.stats == SSTM_STATS_DETAILED) {
    sstm__ctr_add(&tx->ctr.reads_total, sstm_rset_count(&tx->rs));
    sstm__ctr_add(&tx->ctr.writes_total, tx->ws.n);
    sstm__ctr_max(&tx->ctr.reads_max, sstm_rset_count(&tx->rs));
    sstm__ctr_max(&tx->ctr.writes_max, tx->ws.n);
    if (tx->attr.tag < SSTM_MAX_TAGS) sstm__ctr_add(&tx->ctr.tag_commits[tx->attr.tag], 1);
  }
  if (SSTM_UNLIKELY(tx->frees.n)) sstm__reclaim_commit(tx);
  tx->allocs.n = 0;
  tx->in_callback++;
  tx->in_hook++;
  if (slow && tx->cm->on_commit) tx->cm->on_commit(cm_ctx(tx));
  if (slow && tx->stt) sstm__stt_commit(tx);
  if (SSTM_UNLIKELY(atomic_load_explicit(&sstm__g.nhooks, memory_order_relaxed)))
    sstm__hooks_commit(tx->serial);
  tx->in_hook--;
  tx->in_callback--;
  if (SSTM_UNLIKELY(tx->nactions)) run_actions(tx, true);
  return 0;
}

/* Update, irrevocable, killed or watched attempts. */
static SSTM_NOINLINE int commit_slow(struct sstm_desc *tx) {
  bool update = tx->ws.n != 0;
  unsigned kind = sstm__kind(tx);
  if (kind == SSTM_V_IRREV) {
    commit_irrevocable(tx);
    sstm__ctr_add(&tx->ctr.commits_irrevocable, 1);
  } else if (update) {
    tx->depth = 1; /* an abort inside commit restarts the block */
    commit_update(tx);
    tx->depth = 0;
  } else {
    /* Read-only, killed or watched. A kill requested before this point is
     * honoured (relaxed: best effort, the attempt's snapshot was consistent
     * either way). */
    uint64_t st = atomic_load_explicit(&tx->status, memory_order_relaxed);
    if (SSTM_UNLIKELY(sstm_st_state(st) == SSTM_ST_KILLED)) {
      tx->depth = 1;
      conflict_abort(tx, SSTM_CONFLICT_KILLED, SSTM_ABORT_KILLED, NULL);
    }
    /* acq_rel exchange: as in rollback; returns the watchers' flags. */
    attempt_ended(tx, atomic_exchange_explicit(&tx->status, sstm_st_make(tx->serial, SSTM_ST_IDLE),
                                               memory_order_acq_rel));
  }
  sstm__set_variant(tx, SSTM_V_NONE);
  sstm__ctr_add(update ? &tx->ctr.commits_update : &tx->ctr.commits_ro, 1);
  return commit_tail(tx);
}

SSTM_API int sstm_commit(void) {
  struct sstm_desc *tx = sstm__cur;
  if (SSTM_UNLIKELY(tx == NULL || tx->depth == 0)) {
    if (sstm__debug) sstm__misuse("sstm_commit without a transaction");
    sstm__set_error("sstm_commit: no active transaction");
    return SSTM_ENOTX;
  }
  if (--tx->depth > 0) return 0;
  /* relaxed: only the owner leaves ACTIVE except by a killer's CAS, and a
   * kill that this load misses came too late to matter (the attempt's
   * snapshot was consistent at `end`). */
  uint64_t st = atomic_load_explicit(&tx->status, memory_order_relaxed);
  if (SSTM_UNLIKELY(tx->ws.n != 0 || st != sstm_st_make(tx->serial, SSTM_ST_ACTIVE)))
    return commit_slow(tx);
  /* Read-only, running, not killed, no watch flags: valid at `end`, nothing
   * to publish. release: see rollback. A plain store, not the exchange of
   * the slow path (a full barrier on every read-only commit): a flag set in
   * the window between the load above and this store is lost. Lock
   * conflicts never name a read-only attempt (it holds no lock), but three
   * waiters can meet one: a victim waiting behind the attempt that killed it
   * (the kill record names killers with empty write sets too), a grace
   * period of reclamation, and a party built by hand. A lost SLEEPERS flag
   * costs such a waiter at most one sleep slice (sstm_party_wait re-reads
   * the status after each, as long as its wait so far, 1 to 16 ms); a lost
   * WATCHED flag leaves a softser loser lowered until its own attempt
   * ends. */
  tx->cm_ctx.watched = false;
  atomic_store_explicit(&tx->status, sstm_st_make(tx->serial, SSTM_ST_IDLE), memory_order_release);
  sstm__set_variant(tx, SSTM_V_NONE);
  sstm__ctr_add(&tx->ctr.commits_ro, 1);
  tx->allocs.n = 0;
  if (SSTM_UNLIKELY((tx->slow & SSTM_SLOW_COMMIT) | tx->retries | tx->frees.n | tx->nactions |
                    atomic_load_explicit(&sstm__g.nhooks, memory_order_relaxed)))
    return commit_tail(tx);
  return 0;
}

/* ------------------------------------------------------------------------ */
/* Public control API. */

SSTM_API int sstm_run(const sstm_attr_t *attr, void (*fn)(void *arg), void *arg) {
  if (fn == NULL) {
    sstm__set_error("sstm_run: fn is NULL");
    return SSTM_EINVAL;
  }
  struct sstm_desc *tx = sstm__cur;
  if (tx == NULL) {
    sstm__set_error("sstm_run: calling thread is not registered (sstm_thread_init)");
    return SSTM_ENOTHREAD;
  }
  if (tx->in_hook) {
    sstm__set_error("sstm_run: called from a hook or a contention manager's callback, which must "
                    "not start transactions");
    return SSTM_ESTATE;
  }
  sstm_ckpt_t *c = sstm__begin(attr);
  if (c != NULL && sstm__ckpt_save(c) == SSTM__CKPT_CANCEL) return SSTM_ECANCELED;
  fn(arg);
  sstm_commit();
  return 0;
}

/* Misuse of a call that cannot return: report it, and if the handler
 * returns, end the process (there is no state to return to). */
static SSTM_COLD __attribute__((noreturn)) void misuse_noreturn(const char *msg) {
  sstm__misuse("%s", msg);
  sstm__fatal("%s (the misuse handler returned)", msg);
}

/* A restart or cancel in an irrevocable attempt is misuse when the user
 * asked for irrevocability (attr.irrevocable, which sstm_become_irrevocable
 * also sets): the body may have done what cannot be undone. An attempt that
 * a policy made irrevocable (its progress bound) is rolled back with its
 * undo log, and a restart runs the next attempt revocable again: a body that
 * restarts until another thread changes something must not hold the
 * serial mode while it waits. */
static void user_abort_check(struct sstm_desc *tx, const char *what) {
  if (sstm__kind(tx) != SSTM_V_IRREV) return;
  if (tx->attr.irrevocable) misuse_noreturn(what);
  tx->irrev_sticky = false;
}

SSTM_API void sstm_restart(void) {
  struct sstm_desc *tx = sstm__cur;
  if (!SSTM_IN_TX(tx)) misuse_noreturn("sstm_restart outside a transaction");
  if (tx->in_hook) misuse_noreturn("sstm_restart in a hook or a callback (policy, sampling)");
  user_abort_check(tx, "sstm_restart in a transaction that asked to be irrevocable");
  abort_tx(tx, SSTM_ABORT_USER_RETRY, NULL);
}

SSTM_API void sstm_cancel(void) {
  struct sstm_desc *tx = sstm__cur;
  if (!SSTM_IN_TX(tx)) misuse_noreturn("sstm_cancel outside a transaction");
  if (tx->in_hook) misuse_noreturn("sstm_cancel in a hook or a callback (policy, sampling)");
  user_abort_check(tx, "sstm_cancel in a transaction that asked to be irrevocable");
  abort_tx(tx, SSTM_ABORT_USER_CANCEL, NULL);
}

/* The thread running tx's transaction ends inside it (the registry's
 * thread-exit destructor; tx is the thread's current descriptor, outside
 * any callback). Nobody can resume the attempt: its checkpoint is in the
 * stack that is going away. A revocable attempt is cancelled as by
 * sstm_cancel (rolled back, abort actions and policy run), without the
 * jump back, and so is one that a policy made irrevocable (its undo log
 * puts its in-place writes back; the user never asked for it, so what
 * happens must not depend on the policy's private decision). One that
 * asked to be irrevocable may have done what cannot be undone: it is
 * committed, as a mutex is best released, not held for ever, by a thread
 * that ends in its critical section. */
void sstm__abandon(struct sstm_desc *tx) {
  if (sstm__kind(tx) == SSTM_V_IRREV && tx->attr.irrevocable) {
    tx->depth = 1;
    (void)sstm_commit();
    return;
  }
  rollback(tx, SSTM_ABORT_USER_CANCEL);
  abort_notify(tx, SSTM_ABORT_USER_CANCEL, NULL);
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
  if (kind != SSTM_V_RO && tx->rs.top == tx->rs.e && tx->ws.n == 0) {
    /* nothing read or written yet: switch in place, unless killed */
    if (irrev_enter(tx)) return 0;
    tx->irrev_sticky = true;
    conflict_abort(tx, SSTM_CONFLICT_KILLED, SSTM_ABORT_KILLED, NULL);
  }
  tx->irrev_sticky = true;
  abort_tx(tx, SSTM_ABORT_IRREVOCABLE, NULL);
}

SSTM_API bool sstm_in_tx(void) {
  struct sstm_desc *tx = sstm__cur;
  return tx != NULL && tx->depth != 0;
}

SSTM_API bool sstm_is_irrevocable(void) {
  struct sstm_desc *tx = sstm__cur;
  return tx != NULL && tx->depth != 0 && sstm__kind(tx) == SSTM_V_IRREV;
}

SSTM_API uint64_t sstm_txid(void) {
  struct sstm_desc *tx = sstm__cur;
  return (tx != NULL && tx->depth != 0) ? tx->serial : 0;
}

static int add_action(void (*fn)(void *), void *arg, bool on_commit) {
  struct sstm_desc *tx = sstm__cur;
  if (!SSTM_IN_TX(tx)) {
    sstm__set_error("sstm_on_%s: no active transaction", on_commit ? "commit" : "abort");
    return SSTM_ENOTX;
  }
  if (fn == NULL) {
    sstm__set_error("sstm_on_%s: fn is NULL", on_commit ? "commit" : "abort");
    return SSTM_EINVAL;
  }
  if (tx->nactions == tx->actions_cap) {
    uint32_t cap = tx->actions_cap ? tx->actions_cap * 2 : 8;
    sstm_action_t *a = realloc(tx->actions, cap * sizeof *a);
    if (a == NULL) {
      sstm__set_error("sstm_on_%s: out of memory for %u actions", on_commit ? "commit" : "abort",
                      cap);
      return SSTM_ENOMEM;
    }
    tx->actions = a;
    tx->actions_cap = cap;
  }
  tx->actions[tx->nactions++] = (sstm_action_t){fn, arg, on_commit};
  return 0;
}

SSTM_API int sstm_on_commit(void (*fn)(void *), void *arg) { return add_action(fn, arg, true); }
SSTM_API int sstm_on_abort(void (*fn)(void *), void *arg) { return add_action(fn, arg, false); }

/* The descriptor prefix read by the inline fast path (<schedstm/inline.h>). */
#define SSTM_SAME_FIELD(f)                                                                         \
  _Static_assert(offsetof(struct sstm_desc, f) == offsetof(sstm__fast_t, f), "fast layout: " #f)
SSTM_SAME_FIELD(variant);
SSTM_SAME_FIELD(stripe_shift);
SSTM_SAME_FIELD(depth);
SSTM_SAME_FIELD(end);
SSTM_SAME_FIELD(locks);
SSTM_SAME_FIELD(lock_mask);
SSTM_SAME_FIELD(rs.e);
SSTM_SAME_FIELD(rs.top);
SSTM_SAME_FIELD(rs.lim);
_Static_assert(sizeof(sstm_r_entry_t) == sizeof(struct sstm__rentry), "read entry layout");
_Static_assert(SSTM_V_ETL == SSTM__V_ETL && SSTM_V_RO == SSTM__V_RO, "variant numbering");
_Static_assert(sizeof(sstm__fast_t) <= SSTM_CACHELINE,
               "the read fast path must touch one descriptor cache line");
