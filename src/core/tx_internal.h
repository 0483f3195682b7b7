/* SPDX-License-Identifier: MIT */
/* What the four files of the transactional engine share, and nothing else
 * includes:
 *   barrier.c      read and write barriers, bulk copies, the fast path's
 *                  thread-local state;
 *   conflict.c     validation and snapshot extension, conflicts: the
 *                  contention manager's call, kills and lock take-over;
 *   irrevocable.c  the irrevocability token, in-place writes and their undo;
 *   txn.c          begin, commit, rollback, restart, user actions.
 * The engine is a word-based, time-based STM of the LSA [Riegel06], TL2
 * [Dice06] and TinySTM [Felber08] family: a global version clock, a table
 * of versioned locks, invisible reads, a redo log. Its correctness argument
 * is docs/design/core.md; the code cites its arguments and their steps as
 * (n) and (n.m).
 *
 * What a barrier's fast path and a commit without conflict run is static
 * inline, here or in the file that runs it, as it was when the engine was
 * one file: the split added no call on those paths (the same instruction
 * counts, docs/benchmarks.md). What crosses files is a slow path that was
 * out of line already (SSTM_NOINLINE: validation, extension, conflicts,
 * irrevocability) or an abort, which does not return.
 */
#ifndef SSTM_CORE_TX_INTERNAL_H
#define SSTM_CORE_TX_INTERNAL_H

#include "core/engine.h"
#include "iface/exec_services.h" /* the preemption points (exec.c) */

/* SCHEDSTM_RANDOM_DELAY builds: a yield or a short sleep now and then
 * (os/time.c) between the steps of commit, rollback and lock take-over
 * (and, more often, at every barrier), to widen the windows the arguments
 * are about. sstm__random_delay is a compile-time constant: nothing in
 * other builds. */
#define DELAY_POINT(tx)                                                                            \
  do {                                                                                             \
    if (sstm__random_delay) sstm__random_delay_point(tx, 8);                                       \
  } while (0)

#define SSTM_IN_TX(tx) SSTM_LIKELY((tx) != NULL && (tx)->depth != 0)

/* The calling thread's descriptor as the inline read path's prefix
 * (barrier.c): never NULL, a static prefix with depth 0 and variant
 * SSTM_V_NONE when the thread has no descriptor; otherwise sstm__cur. */
extern __thread sstm__fast_t *sstm__fast_cur __attribute__((tls_model("initial-exec")));

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
 * naturally aligned access the mask allows (never touching other bytes):
 * the write-back (4.5) and the undo of in-place writes (7.6). A whole word,
 * the common case, is one store in line, and so is one naturally aligned
 * piece of 4, 2 or 1 bytes (a float, an int, a char written alone in its
 * word), so that small stores cost no more than the byte merge; any other
 * mask is a call (txn.c). */
void sstm__store_masked_part(uintptr_t word, uint64_t value, uint64_t bmask);
SSTM_INLINE void store_masked(uintptr_t word, uint64_t value, uint64_t bmask) {
  if (SSTM_LIKELY(bmask == ~0ull)) {
    mem_store((void *)word, value, 8);
    return;
  }
  if (SSTM_UNLIKELY(bmask == 0)) return; /* nothing buffered (and ctz needs a bit) */
  unsigned off = (unsigned)__builtin_ctzll(bmask) / 8;
  uint64_t piece = bmask >> (off * 8);
  if (piece == 0xffffffffull && off % 4 == 0)
    mem_store((void *)(word + off), value >> (off * 8), 4);
  else if (piece == 0xffffull && off % 2 == 0)
    mem_store((void *)(word + off), value >> (off * 8), 2);
  else if (piece == 0xffull)
    mem_store((void *)(word + off), value >> (off * 8), 1);
  else
    sstm__store_masked_part(word, value, bmask);
}

/* ------------------------------------------------------------------------ */
/* Small helpers of more than one file. */

/* The descriptor whose attempt holds lock word l (locked) and is running,
 * not committing (ACTIVE, the serial of l), with its status in *st; NULL
 * for any other owner, or for tx itself. Relaxed: callers order it (8). */
static inline struct sstm_desc *running_owner(const struct sstm_desc *tx, uint64_t l,
                                              uint64_t *st) {
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

/* A declared read-only transaction needed an extension: the first time in
 * the transaction, it counts in the window of cfg.ro_log (txn.c,
 * ro_window). */
static inline void ro_needed_extension(struct sstm_desc *tx) {
  /* Only the AUTO window counts (ro_window runs only with cfg.ro_log on). */
  if (tx->ro_ext_seen || sstm__g.cfg.ro_log != SSTM_RO_LOG_AUTO) return;
  tx->ro_ext_seen = true;
  tx->ro_win_ext++; /* <= RO_WINDOW < 255: the window closes first */
}

/* The policy's view of the attempt (sstm_cm_ctx_t), brought up to date. */
static inline sstm_cm_ctx_t *cm_ctx(struct sstm_desc *tx) {
  sstm_cm_ctx_t *c = &tx->cm_ctx;
  c->retries = tx->retries;
  c->conflicts = tx->conflicts;
  c->txid = sstm__serial(tx);
  c->start = tx->start;
  c->birth = tx->birth;
  c->reads = sstm_rset_count(&tx->rs);
  c->writes = tx->ws.n;
  c->priority = tx->attr.priority;
  return c;
}

/* An attempt has ended; `old` is its last running status, read by the RMW
 * that ended it as a running attempt (after which nobody can set flags).
 * Wake futex sleepers and tell the policy whether it was watched. */
static inline void attempt_ended(struct sstm_desc *tx, uint64_t old) {
  tx->cm_ctx.watched = (old & SSTM_ST_WATCHED) != 0;
  if (SSTM_UNLIKELY(old & SSTM_ST_SLEEPERS)) sstm__futex_wake_all(&tx->status);
}

/* An attempt that may have been COMMITTING has ended (its IDLE status is
 * stored): wake the threads that sleep until then ((4.8)). The sleepers set
 * commit_sleepers and then run sstm__heavy_fence() (a membarrier) before
 * they read the status and sleep; that fence makes this compiler-only
 * fence a full one whenever it matters, so either this load sees their
 * count or their status read sees our IDLE store (and the futex's value
 * check refuses to sleep). Without the asymmetric fence nobody sleeps
 * behind a committing attempt (cm_api.c), and the count stays 0. A load
 * and a branch on a commit that nobody waits for, no system call. */
static inline void committing_ended(struct sstm_desc *tx) {
  atomic_signal_fence(memory_order_seq_cst);
  if (SSTM_UNLIKELY(atomic_load_explicit(&tx->commit_sleepers, memory_order_relaxed)))
    sstm__futex_wake_all(&tx->status);
}

/* ------------------------------------------------------------------------ */
/* conflict.c: validation, extension, conflicts. */

/* Lock word l (locked, not ours) belongs to an attempt that is running and
 * has not started to commit, and every version its locks displaced is
 * <= end (8.5). Only for attempts that pass running writers. */
SSTM_NOINLINE bool sstm__held_by_running_writer(const struct sstm_desc *tx, uint64_t l);

/* Every read-set entry is unlocked with a version <= end, i.e. unchanged
 * since it was read (2.2), or is locked by this attempt or by a running
 * writer that displaced only versions <= end (8.5). Called before end moves,
 * right after an acquire on the clock (extension, (2.1)) or the commit's
 * fetch_add (4.3). Out of line: a single-threaded update commit never calls
 * it, and inlined it would cost that commit registers. */
SSTM_NOINLINE bool sstm__validate(const struct sstm_desc *tx);

/* Abort if the attempt was killed (6.6). */
SSTM_NOINLINE void sstm__check_killed(struct sstm_desc *tx);
/* Extend the snapshot to the current clock (2). False if the read set is
 * no longer valid. Does not return if the attempt was killed. */
SSTM_NOINLINE bool sstm__extend(struct sstm_desc *tx);
/* Report a conflict the policy cannot resolve (validation, kill,
 * irrevocable) and abort. */
SSTM_NOINLINE __attribute__((noreturn)) void sstm__conflict_abort(struct sstm_desc *tx,
                                                                  sstm_conflict_kind_t kind,
                                                                  sstm_abort_reason_t r,
                                                                  const void *addr);
/* The attempt met lock lk held by someone else (value l): resolve it as
 * the contention manager decides; returns a fresh lock word once the lock
 * is free or ours, or does not return (abort). */
SSTM_NOINLINE uint64_t sstm__resolve(struct sstm_desc *tx, sstm_conflict_kind_t kind,
                                     const void *addr, _Atomic uint64_t *lk, uint64_t l);
/* An abort by a conflict with another transaction (counted in
 * `conflicts`). */
__attribute__((noreturn)) void sstm__lost_abort(struct sstm_desc *tx, sstm_abort_reason_t r,
                                                const sstm_party_t *other);

/* ------------------------------------------------------------------------ */
/* barrier.c */

/* A transaction log could not grow: the process ends with a message. */
SSTM_NOINLINE __attribute__((noreturn)) void sstm__oom(void);

/* ------------------------------------------------------------------------ */
/* irrevocable.c (7) */

/* Take the token and make the current attempt irrevocable (7.1-7.4).
 * False, with the token given back, if the attempt was killed meanwhile. */
bool sstm__irrev_enter(struct sstm_desc *tx);
/* Give the token back and clear the clock's flag. */
void sstm__irrev_release(struct sstm_desc *tx);
/* The irrevocable write barrier: lock, log the old bytes, write in place
 * (7.4). */
SSTM_NOINLINE void sstm__irrev_store(struct sstm_desc *tx, void *addr, uint64_t val, unsigned size);
/* Put back what an escalated irrevocable attempt wrote and release its
 * locks with a fresh version (7.6, 7.7). */
void sstm__irrev_undo(struct sstm_desc *tx);
/* Commit an irrevocable attempt (7.5). */
void sstm__commit_irrevocable(struct sstm_desc *tx);
/* Wait at begin while an irrevocable attempt runs (7.2); returns the clock
 * word seen without the flag. */
SSTM_NOINLINE uint64_t sstm__wait_irrevocable(void);

/* ------------------------------------------------------------------------ */
/* txn.c */

/* Roll the attempt back, notify, and restart it (or leave the block, for
 * SSTM_ABORT_USER_CANCEL). */
__attribute__((noreturn)) void sstm__abort_tx(struct sstm_desc *tx, sstm_abort_reason_t r,
                                              const sstm_party_t *other);

#endif /* SSTM_CORE_TX_INTERNAL_H */
