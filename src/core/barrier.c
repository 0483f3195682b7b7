/* SPDX-License-Identifier: MIT */
/* The read and write barriers of the engine and its bulk copies
 * (sstm_load_*, sstm_store_*, sstm_load_bytes, sstm_store_bytes), and the
 * thread-local state their fast path reads.
 *
 * A read is the seqlock read of docs/design/core.md (1): lock word, data,
 * acquire fence, lock word again, accepted if unchanged, unlocked and
 * covered by the snapshot (1.1-1.4). Its common case is the leaf function
 * sstm__load_fast of <schedstm/fastpath.h>; everything else starts over in
 * load_slow here: a newer version extends the snapshot (2), a lock held by
 * this attempt reads the redo log with the memory re-checked (3; this case
 * is tested first, in sstm__load_slow, as the read after write), a lock of
 * a running writer may be passed (8), any other lock goes to the contention
 * manager (conflict.c). A write under ETL locks its stripe at once, only on
 * a version the snapshot covers (2.4), and buffers the bytes in the redo
 * log; under CTL it only buffers them (the commit locks, txn.c, (4.2)). The
 * irrevocable variants read memory directly and write in place
 * (irrevocable.c, (7.4)).
 *
 * One template per operation (tx_load, tx_store), specialised per variant
 * (ETL, CTL, declared read-only, irrevocable, each with or without
 * sampling): the public barriers dispatch once per access on the variant
 * byte of the attempt, so no design test runs inside them.
 */
#define _GNU_SOURCE
#include <stddef.h>
#include <string.h>

#include "core/tx_internal.h"

/* The thread-local state of the engine (with the last error message of
 * core/error.c): the current descriptor, and the same
 * pointer as the inline fast path's prefix (schedstm/fastpath.h), which is
 * never NULL, so the barrier needs no NULL test: without a descriptor it
 * points at a static prefix whose variant sends every access to the slow
 * path. Both change together, in sstm__set_cur only. */
__thread struct sstm_desc *sstm__cur __attribute__((tls_model("initial-exec")));
/* The static prefix's lock table: one word (lock_mask 0), never locked. */
static uint64_t no_desc_lock;
/* Aligned as a descriptor: sstm_commit reads the gate word of whatever
 * sstm__fast_cur points at through a struct sstm_desc pointer, a 64-byte
 * aligned type (UBSan reports a misaligned member access otherwise). Its
 * in_hook byte is set, so that the assembly begin (core/begin_x86_64.S),
 * which starts from this pointer and tests no NULL, sends a begin on a
 * thread without a descriptor to sstm__begin_other, as it does a begin
 * inside a hook; sstm_commit sees a gate word other than 1 and add_action
 * a depth of 0, as for depth 0 alone. Its lock table is readable: the
 * inlined read loads the stripe's lock word before its variant test
 * (schedstm/inline.h). */
static _Alignas(64) sstm__fast_t no_desc = {
    .variant = SSTM__V_NONE, .in_hook_ = 1, .locks = &no_desc_lock};
SSTM_API __thread sstm__fast_t *sstm__fast_cur __attribute__((tls_model("initial-exec"))) =
    &no_desc;

void sstm__set_cur(struct sstm_desc *d) {
  sstm__cur = d;
  sstm__fast_cur = d ? (sstm__fast_t *)(void *)d : &no_desc;
}

SSTM_INLINE unsigned off_in_word(const void *addr) { return (unsigned)((uintptr_t)addr & 7); }

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
/* Barriers. One template per operation, specialised per variant V. */

/* The sampling countdown. Every sample_period-th access of a thread calls
 * the sampling hook: the period - 1 accesses in between only count down,
 * most of them in the fast paths (sstm__load_try_sampled, dispatch_store),
 * which take an access while the prefix's 16-bit sample_cd is not 0 and
 * count it on success; the rest of a longer period waits in sample_rest.
 * Arm the countdown for n accesses before the next sampled one. */
static void sample_arm(struct sstm_desc *tx, uint64_t n) {
  uint64_t cd = n < UINT16_MAX ? n : UINT16_MAX;
  tx->sample_cd = (uint16_t)cd;
  tx->sample_rest = n - cd;
}

void sstm__sample_init(struct sstm_desc *d) {
  uint64_t p = sstm__g.cfg.sample_period;
  sample_arm(d, p > 0 ? p - 1 : 0);
}

/* sample_cd ran out: this access is the sampled one, unless sample_rest
 * holds more of the period (then it is counted there and the countdown
 * re-armed). The sampling callback runs as a hook does (in_hook): a
 * transaction it begins is reported as misuse, and its sstm_malloc and
 * sstm_free act as outside a transaction, so an abort of the attempt it
 * interrupted neither frees its block nor forgets its free (reclaim.c,
 * in_attempt). */
static SSTM_NOINLINE void sample_due(struct sstm_desc *tx, const void *addr, bool is_write) {
  if (tx->sample_rest > 0) {
    sample_arm(tx, tx->sample_rest - 1);
    return;
  }
  sstm__sample_init(tx);
  if (tx->in_hook) return; /* an access of a callback, this one's included: not sampled */
  tx->in_hook++;
  sstm__g.cfg.sample_fn(sstm__g.cfg.sample_arg, addr, is_write);
  tx->in_hook--;
}

SSTM_INLINE void barrier_prologue(struct sstm_desc *tx, const void *addr, bool w, unsigned V) {
  if (V & SSTM_V_SAMPLE) {
    if (tx->sample_cd > 0)
      tx->sample_cd--;
    else
      sample_due(tx, addr, w);
  }
  if (sstm__random_delay) sstm__random_delay_point(tx, 5);
}

/* The part of load_own that reads memory: some bytes of the word are not
 * in the redo log (e NULL: none are). Memory bytes are re-checked against
 * the lock: if it was taken over after a kill they may be newer than the
 * snapshot (3; the take-over is (6.4)). */
static SSTM_NOINLINE uint64_t load_own_mem(struct sstm_desc *tx, const void *addr, unsigned size,
                                           _Atomic uint64_t *lk, const sstm_w_entry_t *e) {
  sstm__seam(SSTM_SEAM_OWN_READ_DATA, addr);
  uint64_t v = mem_load(addr, size);
  atomic_thread_fence(memory_order_acquire); /* (1.3): data before re-check */
  if (atomic_load_explicit(lk, memory_order_relaxed) != tx->owner_lw)
    sstm__conflict_abort(tx, SSTM_CONFLICT_KILLED, SSTM_ABORT_KILLED, addr);
  return e ? overlay(e, v, off_in_word(addr), size) : v;
}

/* Read of a stripe this attempt has locked (ETL, or irrevocable): the
 * bytes the redo log holds come from it with no memory access and no
 * re-check ((3): they are this attempt's own writes, which nobody else can
 * change), the rest from load_own_mem. Inline: this is the read-after-write
 * path, as common as a first read in code that updates what it read. */
SSTM_INLINE uint64_t load_own(struct sstm_desc *tx, const void *addr, unsigned size,
                              _Atomic uint64_t *lk) {
  uintptr_t a = (uintptr_t)addr;
  unsigned off = off_in_word(addr);
  const sstm_w_entry_t *e = sstm_wset_find(&tx->ws, a & ~(uintptr_t)7);
  if (SSTM_LIKELY(e != NULL) && entry_covers(e, off, size))
    return (e->value >> (off * 8)) & size_mask(size);
  return load_own_mem(tx, addr, size, lk, e);
}

static SSTM_NOINLINE __attribute__((noreturn)) void ro_abort(struct sstm_desc *tx,
                                                             sstm_abort_reason_t r) {
  if (r == SSTM_ABORT_RO_WRITE) {
    tx->attr.read_only = false;
  } else {
    tx->ro_nolog_failed = true;
    ro_needed_extension(tx);
  }
  sstm__abort_tx(tx, r, NULL);
}

SSTM_NOINLINE __attribute__((noreturn)) void sstm__oom(void) {
  sstm__fatal("out of memory growing a transaction log (or past its limit of 2^28 entries)");
}

/* Read past lock lk, held (value l) by another attempt: if that attempt is
 * running and has not started to commit, the memory under its lock is the
 * committed data of a version <= its lock_end (writes are buffered), so
 * the read returns that data (8.1-8.3) instead of asking the policy.
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
  /* running_owner's status load (8.1): (8) orders it after the clock load that
   * gave `end`. */
  uint64_t st;
  struct sstm_desc *o = running_owner(tx, l, &st);
  if (o == NULL) return false;
  /* relaxed: after the acquire of l, which the lock_end store precedes;
   * later stores only grow it. */
  uint64_t bound = atomic_load_explicit(&o->lock_end, memory_order_relaxed);
  if (bound > tx->end) {
    if (kind == SSTM_V_RO) return false;
    if (!sstm__extend(tx))
      sstm__conflict_abort(tx, SSTM_CONFLICT_VALIDATION, SSTM_ABORT_VALIDATE_READ, addr);
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
   * data load below sees at least the data of version l (1.1). */
  uint64_t l = atomic_load_explicit(lk, memory_order_acquire);
  for (;;) {
    if (SSTM_UNLIKELY(sstm_lw_locked(l))) {
      if (kind == SSTM_V_ETL && l == tx->owner_lw) return load_own(tx, addr, size, lk);
      uint64_t v;
      if (passes_running_writers(tx) && read_past(tx, addr, size, lk, l, kind, &v)) {
        if (kind != SSTM_V_RO && SSTM_UNLIKELY(!sstm_rset_add(&tx->rs, lk))) sstm__oom();
        return e ? overlay(e, v, off, size) : v;
      }
      l = atomic_load_explicit(lk, memory_order_acquire);
      if (!sstm_lw_locked(l) || l == tx->owner_lw) continue;
      l = sstm__resolve(tx, SSTM_CONFLICT_READ_LOCKED, addr, lk, l);
      continue;
    }
    sstm__seam(SSTM_SEAM_SLOW_READ_DATA, addr);
    uint64_t v = mem_load(addr, size);
    /* acquire fence: the re-check below cannot be satisfied by a lock word
     * older than the data just loaded (seqlock, 1.3). */
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
      if (!sstm__extend(tx))
        sstm__conflict_abort(tx, SSTM_CONFLICT_VALIDATION, SSTM_ABORT_VALIDATE_READ, addr);
      l = atomic_load_explicit(lk, memory_order_acquire); /* re-read at the new end */
      continue;
    }
    if (kind != SSTM_V_RO && SSTM_UNLIKELY(!sstm_rset_add(&tx->rs, lk))) sstm__oom();
    return e ? overlay(e, v, off, size) : v;
  }
}

/* The read barrier: the leaf fast path of <schedstm/fastpath.h> (an unlocked
 * stripe whose version the snapshot covers; the same seqlock read as
 * load_slow, (1.1-1.4)); anything else starts over in load_slow. */
SSTM_INLINE uint64_t tx_load(struct sstm_desc *tx, const void *addr, unsigned size, unsigned V) {
  const unsigned kind = V & 3;
  barrier_prologue(tx, addr, false, V);
  if (kind == SSTM_V_IRREV) return mem_load(addr, size); /* nobody else commits (7.2, 7.3) */
  if (kind == SSTM_V_CTL && (tx->ws.bloom & sstm_bloom_bit((uintptr_t)addr & ~(uintptr_t)7)))
    return load_slow(tx, addr, size, kind);
  uint64_t v;
  if (SSTM_LIKELY(sstm__load_fast((sstm__fast_t *)(void *)tx, addr, size, kind != SSTM_V_RO, &v)))
    return v;
  return load_slow(tx, addr, size, kind);
}

SSTM_INLINE void tx_store(struct sstm_desc *tx, void *addr, uint64_t val, unsigned size,
                          unsigned V) {
  const unsigned kind = V & 3;
  barrier_prologue(tx, addr, true, V);
  if (kind == SSTM_V_RO) ro_abort(tx, SSTM_ABORT_RO_WRITE);
  if (kind == SSTM_V_IRREV) {
    sstm__irrev_store(tx, addr, val, size);
    return;
  }
  uintptr_t word = (uintptr_t)addr & ~(uintptr_t)7;
  unsigned off = (uintptr_t)addr & 7;
  uint64_t wv = val << (off * 8), bm = size_mask(size) << (off * 8);
  if (kind == SSTM_V_CTL) {
    if (SSTM_UNLIKELY(!sstm_wset_put(&tx->ws, word, wv, bm))) sstm__oom();
    return;
  }
  _Atomic uint64_t *lk = sstm__lock_for(tx, addr);
  uint64_t l = atomic_load_explicit(lk, memory_order_acquire);
  for (;;) {
    if (SSTM_UNLIKELY(sstm_lw_locked(l))) {
      if (l == tx->owner_lw) break;
      l = sstm__resolve(tx, SSTM_CONFLICT_WRITE_LOCKED, addr, lk, l);
      continue;
    }
    if (SSTM_UNLIKELY(sstm_lw_version(l) > tx->end)) {
      /* Lock only versions the snapshot covers (2.4). */
      if (!sstm__extend(tx))
        sstm__conflict_abort(tx, SSTM_CONFLICT_VALIDATION, SSTM_ABORT_VALIDATE_WRITE, addr);
      l = atomic_load_explicit(lk, memory_order_acquire);
      continue;
    }
    sstm__owner_ready(tx);
    /* lock_end first, so that a reader that sees our lock sees a bound of
     * the version we displace (8.4); relaxed: the CAS publishes it. */
    atomic_store_explicit(&tx->lock_end, tx->end, memory_order_relaxed);
    /* acq_rel: acquire, so that later reads of this stripe (load_own) see
     * the data of the version we displace; release, so that a reader that
     * passes our lock (8.1) sees lock_end and that data (the memory is not
     * written until commit, which has its own release fence). */
    if (atomic_compare_exchange_weak_explicit(lk, &l, tx->owner_lw, memory_order_acq_rel,
                                              memory_order_acquire)) {
      if (SSTM_UNLIKELY(!sstm_lset_add(&tx->ls, lk, l))) sstm__oom();
      break;
    }
  }
  if (SSTM_UNLIKELY(!sstm_wset_put(&tx->ws, word, wv, bm))) sstm__oom();
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

/* A flag was seen in the variant byte. The kill flag: abort if the attempt
 * was killed, otherwise (a late flag meant for an earlier attempt) clear
 * it. The preemption flag (exec.c): call the executor's hook if the
 * attempt may be switched out here, before the access touches anything
 * (9.6); when it returns, on whatever thread attached the descriptor
 * again, look again, since a kill may have landed meanwhile. Returns the
 * real variant. */
static SSTM_NOINLINE unsigned flags_seen(struct sstm_desc *tx) {
  for (;;) {
    /* The kill's flag is cleared first and the kill checked after: a kill
     * whose flag this clears is seen below, and one whose flag comes later
     * stays flagged for the next barrier ((6.3); checking first and
     * clearing after lost the flag of a kill that landed in between). The
     * RMW is relaxed, the acquire fence after it pairs with the release
     * fetch_or of every killer (and requester) whose flag it, or the
     * dispatch's load before it, read: the KILLED status written before
     * that flag is visible to check_killed's load. */
    unsigned old =
        atomic_fetch_and_explicit(&tx->variant, (uint8_t)~SSTM_V_KILLFLAG, memory_order_relaxed);
    atomic_thread_fence(memory_order_acquire);
    /* A killed attempt aborts with the request's flag still set: its
     * rollback keeps it for the restart point (9.6). */
    sstm__check_killed(tx);
    sstm__seam(SSTM_SEAM_FLAGS_CHECKED, NULL);
    if (!(old & SSTM_V_PREEMPTFLAG)) return old & ~(unsigned)SSTM_V_KILLFLAG;
    /* The request is consumed here, the attempt being alive. acquire:
     * pairs with the requester's release fetch_or (exec.c), so that the
     * hook sees what the requester did before. */
    atomic_fetch_and_explicit(&tx->variant, (uint8_t)~SSTM_V_PREEMPTFLAG, memory_order_acquire);
    if (!sstm__exec_point(tx, SSTM_EXEC_AT_BARRIER, NULL))
      return old & ~(unsigned)(SSTM_V_KILLFLAG | SSTM_V_PREEMPTFLAG);
  }
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
  if (SSTM_UNLIKELY(var & (SSTM_V_KILLFLAG | SSTM_V_PREEMPTFLAG))) var = flags_seen(tx);
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
  /* A sampled ETL attempt whose countdown runs: the store of ETL, counted
   * (the loads' sstm__load_try_sampled; a store has no path that fails
   * back to the prologue, so it counts first). */
  if (var == (SSTM_V_ETL | SSTM_V_SAMPLE) && tx->sample_cd > 0) {
    tx->sample_cd--;
    tx_store(tx, addr, val, size, SSTM_V_ETL);
    return;
  }
  if (SSTM_UNLIKELY(var & (SSTM_V_KILLFLAG | SSTM_V_PREEMPTFLAG))) var = flags_seen(tx);
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

/* n bytes, each naturally aligned piece a full barrier: the general read
 * entry's, whose first test is the read after write (a stripe this
 * attempt holds, which load_stripe refuses). */
static void load_pieces(unsigned char *d, const unsigned char *s, size_t n) {
  while (n > 0) {
    unsigned k = chunk((uintptr_t)s, n);
    uint64_t v = sstm__load_slow(s, k);
    memcpy(d, &v, k); /* little endian: low bytes first */
    d += k, s += k, n -= k;
  }
}

/* The bytes [s, s+n) of one stripe under one seqlock read of its lock word
 * ((1.2): the seqlock read covers every byte the stripe's lock protects):
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
  if (var == SSTM_V_ETL && SSTM_UNLIKELY(!sstm_rset_add(&tx->rs, lk))) sstm__oom();
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
    if (!load_stripe(tx, d, s, k)) load_pieces(d, s, k);
    d += k, s += k, n -= k;
  }
}

/* A bulk write: each naturally aligned piece through the typed stores'
 * entry (sstm__store_slow: the exported store's fast path, then the
 * general one), as a store of that width would go. */
static SSTM_NOINLINE void store_bytes(void *dst, const void *src, size_t n) {
  unsigned char *d = dst;
  const unsigned char *s = src;
  while (n > 0) {
    unsigned k = chunk((uintptr_t)d, n);
    uint64_t v = 0;
    memcpy(&v, s, k);
    sstm__store_slow(d, v, k);
    d += k, s += k, n -= k;
  }
}

/* The general read entry: misuse, alignment, variant dispatch. The public
 * loads and the inline fast path of <schedstm/inline.h> end up here. */
SSTM_API uint64_t sstm__load_slow(const void *addr, unsigned size) {
  struct sstm_desc *tx = sstm__cur;
  if (!SSTM_IN_TX(tx)) return misuse_access("transactional load");
  /* Read after write under ETL: the fast path failed because the stripe is
   * locked, most often by this attempt. Test that case first, before the
   * variant dispatch, so that it costs a lock load and a redo-log lookup
   * (load_own) and not a second run of the fast path and load_slow. The
   * same test as load_slow's, on a word loaded the same way (acquire,
   * (1.1)); any other word goes on below exactly as before. The exact
   * variant byte excludes a pending kill flag, which dispatch_load
   * handles; the random-delay build keeps its delay points. A sampled ETL
   * attempt whose countdown has not run out (thread mapping's detection
   * between two samples) takes the same test and counts the access, as
   * barrier_prologue would before the same load_own: its reads after
   * writes otherwise went through the whole variant dispatch. */
  unsigned var = sstm__variant(tx);
  bool counted = var == (SSTM_V_ETL | SSTM_V_SAMPLE) && tx->sample_cd > 0;
  if ((var == SSTM_V_ETL || counted) && ((uintptr_t)addr & (size - 1)) == 0 &&
      !sstm__random_delay) {
    _Atomic uint64_t *lk = sstm__lock_for(tx, addr);
    if (atomic_load_explicit(lk, memory_order_acquire) == tx->owner_lw) {
      if (counted) tx->sample_cd--;
      return load_own(tx, addr, size, lk);
    }
  }
  if (SSTM_UNLIKELY((uintptr_t)addr & (size - 1))) {
    uint64_t v = 0;
    load_bytes(tx, &v, addr, size);
    return v;
  }
  /* An irrevocable attempt's read (the variant byte exactly: no flag, not
   * sampled) is the plain load ((7.4): nobody else commits while it runs),
   * here, before the dispatch's jump table and tx_load; the random-delay
   * build keeps its delay point there. Not in the exported loads' fast
   * path (load_entry), whose two copies' layout matters, nor in their
   * cold path (load_general), whose size moves the code of a program
   * linked statically after it: an irrevocable attempt is rare. */
  if (var == SSTM_V_IRREV && !sstm__random_delay) return mem_load(addr, size);
  switch (size) {
  case 1: return dispatch_load(tx, addr, 1);
  case 2: return dispatch_load(tx, addr, 2);
  case 4: return dispatch_load(tx, addr, 4);
  default: return dispatch_load(tx, addr, 8);
  }
}

/* Every read the exported loads' fast path (load_entry) refused. Cold, so
 * that the compiler moves it out of line and the fast path runs straight
 * through without a taken branch, which can matter more than the
 * instruction count (docs/benchmarks-history.md, "Taken branches count more
 * than instructions"), and one call, so that the fast path's copies end in
 * returns of their own (see load_entry). First a sampled attempt's own
 * fast path (sstm__load_try_sampled; the inline mode tries it in its cold
 * function too, to keep the code inlined into the caller as it was), then
 * the read after write (<schedstm/fastpath.h>), then the general entry. The
 * random-delay build takes the general entry at once, keeping the delay
 * points of the slow path, and the debug build skips the read after write
 * here, keeping its test seam in load_own_mem. */
static SSTM_COLD uint64_t load_general(const void *addr, unsigned size) {
  uint64_t v;
  if (!sstm__random_delay && sstm__load_try_sampled(sstm__fast_cur, addr, size, &v)) return v;
  if (!sstm__random_delay && !sstm__debug && sstm__load_own_try(sstm__fast_cur, addr, size, &v))
    return v;
  return sstm__load_slow(addr, size);
}

/* The exported loads' fast path, a leaf (no stack frame): sstm__load_try's
 * test and sstm__load_fast's conditions ((1.1)-(1.4)) in two copies, one
 * per variant that has a fast path: ETL first (its reads logged; update
 * attempts are the most frequent, and the only kind a program that
 * declares nothing runs), then the declared read-only attempt (not
 * logged). The variant is tested once, and each copy returns on its own.
 * The layout is the point: the ETL copy runs with no taken branch, the
 * read-only copy, placed after the ETL copy's return, with one (the jump
 * to it). When the copies shared one return, a read-only read took three
 * taken branches and cost TinySTM's time for fewer instructions
 * (docs/benchmarks-history.md, "The read-only read's taken branches").
 * Everything else goes to load_general; the random-delay build always
 * does (its barriers have delay points). */
SSTM_INLINE uint64_t load_entry(const void *addr, unsigned size) {
  uint64_t v;
  sstm__fast_t *f = sstm__fast_cur;
  /* relaxed: as in sstm__load_try (a flag bit fails both tests). */
  unsigned var = __atomic_load_n(&f->variant, __ATOMIC_RELAXED);
  if (!sstm__random_delay && SSTM_LIKELY(((uintptr_t)addr & (size - 1)) == 0)) {
    /* Likely, not certain: with the probability of SSTM_LIKELY the
     * compiler also merges the read-only copy's return into the ETL
     * copy's (a second taken branch); at 3/4 it keeps both. */
    if (__builtin_expect_with_probability(var == SSTM__V_ETL, 1, 0.75)) {
      if (SSTM_LIKELY(sstm__load_fast(f, addr, size, true, &v))) return v;
    } else if (SSTM_LIKELY(var == SSTM__V_RO)) {
      if (SSTM_LIKELY(sstm__load_fast(f, addr, size, false, &v))) return v;
    }
  }
  return load_general(addr, size);
}

/* The common case of a store: a naturally aligned store by an ETL attempt
 * (the variant byte exactly: not killed, not asked to yield, not sampled)
 * to a stripe that is either this attempt's already or unlocked with a
 * version its snapshot covers, whose word is in the redo log's index or
 * has a free slot at its hash. The same steps as tx_store's ETL case ((2.4):
 * lock only a covered version; lock_end before the CAS, (8.4)), written as
 * one straight line with no loop and no call, so that the exported store
 * needs no stack frame. False sends the store to the general path, which
 * starts it over: the lock this function may already have taken and
 * logged is then seen as the attempt's own (tx_store's owner test), so
 * nothing is done twice. It does not set the write set's Bloom filter,
 * which only CTL attempts read (load_slow, tx_load). */
SSTM_INLINE bool store_etl_fast(struct sstm_desc *tx, void *addr, uint64_t val, unsigned size) {
  uintptr_t word = (uintptr_t)addr & ~(uintptr_t)7;
  unsigned sh = off_in_word(addr) * 8;
  uint64_t bm = size_mask(size) << sh;
  _Atomic uint64_t *lk = sstm__lock_for(tx, addr);
  /* acquire: as in tx_store (our later reads of the stripe, load_own). */
  uint64_t l = atomic_load_explicit(lk, memory_order_acquire);
  if (l != tx->owner_lw) {
    /* Locked (top bit) or a version newer than the snapshot: one unsigned
     * comparison with end, as in the read fast path (lockword.h). */
    if (SSTM_UNLIKELY(l > tx->end || tx->ls.n == tx->ls.cap)) return false;
    sstm__owner_ready(tx);
    /* relaxed, then acq_rel CAS: as in tx_store (8.4). A failed CAS leaves
     * lock_end raised to a bound that is still true. */
    atomic_store_explicit(&tx->lock_end, tx->end, memory_order_relaxed);
    if (SSTM_UNLIKELY(!atomic_compare_exchange_strong_explicit(
            lk, &l, tx->owner_lw, memory_order_acq_rel, memory_order_relaxed)))
      return false;
    tx->ls.e[tx->ls.n++] = (sstm_l_entry_t){lk, l};
  }
  sstm_wset_t *ws = &tx->ws;
  sstm_w_slot_t *s = &ws->idx[sstm_word_hash(word) & ws->idx_mask];
  if (s->stamp == ws->stamp) {
    if (SSTM_UNLIKELY(s->word != word)) return false; /* a collision: sstm_wset_put probes */
    sstm_w_entry_t *e = &ws->e[s->idx];
    e->value = (e->value & ~bm) | ((val << sh) & bm);
    e->bmask |= bm;
    return true;
  }
  uint32_t n = ws->n;
  if (SSTM_UNLIKELY(n == ws->cap)) return false;
  /* n is read by contention managers of other threads (relaxed). */
  __atomic_store_n(&ws->n, n + 1, __ATOMIC_RELAXED);
  ws->e[n] = (sstm_w_entry_t){.word = word, .value = (val << sh) & bm, .bmask = bm};
  *s = (sstm_w_slot_t){.word = word, .idx = n, .stamp = ws->stamp};
  return true;
}

/* Every other store: misuse, alignment, variant dispatch. */
static SSTM_NOINLINE void store_general(void *addr, uint64_t v, unsigned size) {
  struct sstm_desc *tx = sstm__cur;
  if (!SSTM_IN_TX(tx)) {
    misuse_access("transactional store");
    return;
  }
  if (SSTM_UNLIKELY((uintptr_t)addr & (size - 1))) {
    store_bytes(addr, &v, size); /* little endian: the low bytes are v's */
    return;
  }
  /* A sampled ETL attempt whose countdown has not run out (thread
   * mapping's detection between two samples): the exported store's fast
   * path, counted on success, as dispatch_store's sampled case does with
   * tx_store; a failure goes on to that case, which counts it once. */
  if (sstm__variant(tx) == (SSTM_V_ETL | SSTM_V_SAMPLE) && tx->sample_cd > 0 &&
      !sstm__random_delay && store_etl_fast(tx, addr, v, size)) {
    tx->sample_cd--;
    return;
  }
  switch (size) {
  case 1: dispatch_store(tx, addr, v, 1); return;
  case 2: dispatch_store(tx, addr, v, 2); return;
  case 4: dispatch_store(tx, addr, v, 4); return;
  default: dispatch_store(tx, addr, v, 8); return;
  }
}

/* The exported stores: store_etl_fast as a leaf, else the general path
 * (also for the random-delay build, whose barriers have delay points). */
SSTM_INLINE void store_entry(void *addr, uint64_t v, unsigned size) {
  sstm__fast_t *f = sstm__fast_cur;
  /* relaxed: as in sstm__load_try (a flag bit fails the test). The prefix
   * of a thread without a descriptor has variant SSTM__V_NONE, and so has
   * a descriptor outside a transaction: both take the general path. */
  if (!sstm__random_delay &&
      SSTM_LIKELY(__atomic_load_n(&f->variant, __ATOMIC_RELAXED) == SSTM__V_ETL) &&
      SSTM_LIKELY(((uintptr_t)addr & (size - 1)) == 0) &&
      SSTM_LIKELY(store_etl_fast((struct sstm_desc *)(void *)f, addr, v, size)))
    return;
  store_general(addr, v, size);
}

#define DEFINE_INT_BARRIERS(T, S, suffix)                                                          \
  SSTM_API T sstm_load_##suffix(const T *addr) { return (T)load_entry(addr, S); }                  \
  SSTM_API void sstm_store_##suffix(T *addr, T v) { store_entry(addr, (uint64_t)v, S); }

DEFINE_INT_BARRIERS(uint8_t, 1, u8)
DEFINE_INT_BARRIERS(uint16_t, 2, u16)
DEFINE_INT_BARRIERS(uint32_t, 4, u32)
DEFINE_INT_BARRIERS(uint64_t, 8, u64)

/* The inline stores' call (<schedstm/inline.h>): the typed store of the
 * width, with the width a constant in each case. */
SSTM_API void sstm__store_slow(void *addr, uint64_t v, unsigned size) {
  switch (size) {
  case 1: store_entry(addr, v, 1); return;
  case 2: store_entry(addr, v, 2); return;
  case 4: store_entry(addr, v, 4); return;
  default: store_entry(addr, v, 8); return;
  }
}

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
  store_bytes(dst, src, n);
}

/* The descriptor prefix read by the fast paths (<schedstm/fastpath.h>). */
#define SSTM_SAME_FIELD(f)                                                                         \
  _Static_assert(offsetof(struct sstm_desc, f) == offsetof(sstm__fast_t, f), "fast layout: " #f)
SSTM_SAME_FIELD(variant);
SSTM_SAME_FIELD(stripe_shift);
SSTM_SAME_FIELD(sample_cd);
SSTM_SAME_FIELD(depth);
SSTM_SAME_FIELD(end);
SSTM_SAME_FIELD(locks);
SSTM_SAME_FIELD(lock_mask);
SSTM_SAME_FIELD(rs.e);
SSTM_SAME_FIELD(rs.top);
SSTM_SAME_FIELD(rs.lim);
SSTM_SAME_FIELD(owner_lw);
SSTM_SAME_FIELD(ws.e);
SSTM_SAME_FIELD(ws.n); /* the inline store appends (sstm__store_own) */
SSTM_SAME_FIELD(ws.cap);
SSTM_SAME_FIELD(ws.idx);
SSTM_SAME_FIELD(ws.idx_mask);
SSTM_SAME_FIELD(ws.stamp);
#define SSTM_SAME_MEMBER(T1, T2, f)                                                                \
  _Static_assert(offsetof(T1, f) == offsetof(T2, f) &&                                             \
                     sizeof(((T1 *)0)->f) == sizeof(((T2 *)0)->f),                                 \
                 "redo log layout: " #f)
SSTM_SAME_MEMBER(sstm_w_entry_t, struct sstm__wentry, word);
SSTM_SAME_MEMBER(sstm_w_entry_t, struct sstm__wentry, value);
SSTM_SAME_MEMBER(sstm_w_entry_t, struct sstm__wentry, bmask);
SSTM_SAME_MEMBER(sstm_w_slot_t, struct sstm__wslot, word);
SSTM_SAME_MEMBER(sstm_w_slot_t, struct sstm__wslot, idx);
SSTM_SAME_MEMBER(sstm_w_slot_t, struct sstm__wslot, stamp);
SSTM_SAME_MEMBER(sstm_wset_t, struct sstm__wlog, idx_mask);
SSTM_SAME_MEMBER(sstm_wset_t, struct sstm__wlog, stamp);
_Static_assert(sizeof(sstm_w_entry_t) == sizeof(struct sstm__wentry), "redo log entry size");
_Static_assert(sizeof(sstm_w_slot_t) == sizeof(struct sstm__wslot), "redo log slot size");
_Static_assert(sizeof(sstm_wset_t) == sizeof(struct sstm__wlog), "redo log size");
_Static_assert(sizeof(sstm_r_entry_t) == sizeof(struct sstm__rentry), "read entry layout");
_Static_assert(SSTM_V_ETL == SSTM__V_ETL && SSTM_V_RO == SSTM__V_RO &&
                   SSTM_V_SAMPLE == SSTM__V_SAMPLE,
               "variant numbering");
_Static_assert(sizeof(((struct sstm_desc *)0)->sample_cd) == sizeof(((sstm__fast_t *)0)->sample_cd),
               "fast layout: sample_cd width");
_Static_assert(offsetof(sstm__fast_t, status_) <= SSTM_CACHELINE,
               "a first read must touch one descriptor cache line");
