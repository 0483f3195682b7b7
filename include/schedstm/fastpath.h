/* SPDX-License-Identifier: MIT */
/** @file
 * The barriers' fast paths and the descriptor prefix they read, shared by
 * the library's own barriers and by the inline barriers of
 * <schedstm/inline.h>. Not an interface to call: every name here is
 * internal (sstm__*), and the layouts are part of the binary interface
 * between inlined code and the library (SSTM__INLINE_ABI below). Include
 * <schedstm/schedstm.h>, which brings it in.
 *
 * The read fast path is the seqlock read of argument (1) in
 * docs/design/core.md: lock word (acquire), data (relaxed), acquire fence,
 * lock word again (relaxed); accept if unchanged, unlocked, and version <=
 * snapshot end. The lock bit is the word's top bit (the library's lock
 * word layout), so "unlocked and version <= end" is one unsigned
 * comparison with `end`. The read after write (a stripe the attempt
 * holds) is argument (3).
 *
 * Nothing here calls into the library: what the fast paths refuse, their
 * callers send to the slow paths (the library's barriers, or the calls
 * that <schedstm/inline.h> adds).
 */
#ifndef SCHEDSTM_FASTPATH_H
#define SCHEDSTM_FASTPATH_H

#include <schedstm/common.h>

/* The generation of the inline binary interface: the layouts that inlined
 * code reads directly (sstm__fast_t and the redo log's index below). The
 * thread-local pointer every inlined access starts from carries it in its
 * exported name, so an object compiled against one generation fails to
 * load against a library of another ("undefined symbol
 * sstm__fast_cur_abiN") instead of reading the wrong fields and losing
 * updates in silence. Change both lines, and the name in
 * src/schedstm.map, whenever those layouts change. */
#define SSTM__INLINE_ABI 2
#define sstm__fast_cur sstm__fast_cur_abi2

SSTM_EXTERN_C_BEGIN
SSTM__CXX_CASTS_BEGIN

struct sstm_desc;

/* A read-set entry. At file scope, not inside sstm__fast: C++ would make it
 * a nested type there, and the fast path below could not name it. */
struct sstm__rentry {
  uint64_t *lock;
};

/* The redo log as the read-after-write path reads it (src/core/rwset.h
 * owns it; the library checks this layout against its own): entries, and
 * an open-addressing index from word address to entry whose slots count as
 * empty unless they carry the current attempt's stamp. */
struct sstm__wentry {
  uintptr_t word; /* 8-byte aligned address */
  uint64_t value; /* buffered bytes, in memory order */
  uint64_t bmask; /* 0xff per buffered byte */
};
struct sstm__wslot {
  uintptr_t word;
  uint32_t idx;
  uint32_t stamp;
};
struct sstm__wlog {
  struct sstm__wentry *e;
  uint32_t n, cap;
  struct sstm__wslot *idx;
  uint32_t idx_mask;
  uint32_t stamp;
  uint64_t bloom;
};

/* The redo log index's hash of a word address. */
static inline uint32_t sstm__word_hash(uintptr_t word) {
  return (uint32_t)(((uint64_t)word >> 3) * 0x9E3779B97F4A7C15ull >> 32);
}

/* The first cache line of every descriptor (checked against the internal
 * layout by static assertions in the library). */
typedef struct sstm__fast {
  uint8_t variant; /* 0: ETL, 1: CTL, 2: read-only, 3: irrevocable,
                      | 4: sampling, | 0x40: killed; 0x80: no
                      transaction (atomic inside the library) */
  uint8_t stripe_shift;
  uint16_t sample_cd; /* sampled attempts: accesses left before the sampling
                         hook must look (owner-only) */
  uint16_t depth;
  uint8_t in_hook_, slow_begin_; /* library-internal */
  uint64_t end;                  /* snapshot upper bound */
  uint64_t owner_lw;
  uint64_t *locks;
  uint64_t lock_mask;
  struct {
    struct sstm__rentry *e, *top, *lim; /* entries [e, top); top is read by other threads */
  } rs;
  /* Second cache line: touched only by a read of a stripe the attempt has
   * locked (sstm__load_own). */
  uint64_t status_, lock_end_; /* library-internal */
  struct sstm__wlog ws;        /* the redo log (owner-only) */
} sstm__fast_t;

#define SSTM__V_ETL 0
#define SSTM__V_RO 2
#define SSTM__V_SAMPLE 4
#define SSTM__V_NONE 0x80

/* The stripe's lock word of addr for `f`. */
static inline __attribute__((always_inline)) uint64_t *sstm__lock_of(const sstm__fast_t *f,
                                                                     const void *addr) {
  return &f->locks[((uintptr_t)addr >> f->stripe_shift) & f->lock_mask];
}

/* The data read of the seqlock read ((1.2) in docs/design/core.md): a
 * naturally aligned relaxed load of `size` bytes (1, 2, 4 or 8), so that a
 * small access never touches the bytes beside it. Relaxed: the acquire
 * fence after it and the lock word's re-check order it ((1.3)). */
static inline __attribute__((always_inline)) uint64_t sstm__mem_load(const void *addr,
                                                                     unsigned size) {
  switch (size) {
  case 1: return __atomic_load_n((const uint8_t *)addr, __ATOMIC_RELAXED);
  case 2: return __atomic_load_n((const uint16_t *)addr, __ATOMIC_RELAXED);
  case 4: return __atomic_load_n((const uint32_t *)addr, __ATOMIC_RELAXED);
  default: return __atomic_load_n((const uint64_t *)addr, __ATOMIC_RELAXED);
  }
}

/* Read after write: a naturally aligned read of `size` bytes from a stripe
 * this attempt has locked (lock word lk). The bytes its redo log holds are
 * its own writes, which nobody else can change: they need no re-check
 * (argument (3) in docs/design/core.md). The others come from memory, which
 * holds the data of the version the attempt's lock displaced (<= end,
 * (2.4)), with the seqlock's second half against the attempt's own lock
 * word: acquire fence, lock word again; if the lock was taken over (a kill,
 * (6.4)) the read goes to the slow path, which aborts the attempt.
 * One straight line for every case ((3.1)-(3.3) in docs/design/core.md):
 * the word is loaded from memory and re-checked first, whatever the log
 * holds, and the log's bytes, if any, are laid over it; a read whose bytes
 * are all in the log thus pays a load and a re-check it could skip, and
 * every other read (the common one: code that reads a field, then writes
 * it, reads each field before its word has an entry, or with only the
 * neighbouring bytes in it) skips the test and the branch of "all in the
 * log". */
static inline __attribute__((always_inline)) bool sstm__load_own(const sstm__fast_t *f,
                                                                 const uint64_t *lk,
                                                                 const void *addr, unsigned size,
                                                                 uint64_t *out) {
  uintptr_t w = (uintptr_t)addr & ~(uintptr_t)7;
  uint32_t mask = f->ws.idx_mask, i = sstm__word_hash(w) & mask;
  uint64_t v = sstm__mem_load(addr, size);
  /* acquire fence: the re-check cannot see a lock word older than the data
   * (as in sstm__load_fast, (1.3)). */
  __atomic_thread_fence(__ATOMIC_ACQUIRE);
  if (__atomic_load_n(lk, __ATOMIC_RELAXED) != f->owner_lw) return false;
  /* The log: an entry for the word lies on its probe sequence, before the
   * first slot without the attempt's stamp ((3.2)); most often at its hash
   * slot, or that slot is free. */
  const struct sstm__wslot *s = &f->ws.idx[i];
  while (s->stamp == f->ws.stamp) {
    if (s->word == w) { /* its bytes in the log win (3.3) */
      const struct sstm__wentry *e = &f->ws.e[s->idx];
      /* an 8-byte access is the whole word (aligned) */
      unsigned sh = size == 8 ? 0 : ((unsigned)(uintptr_t)addr & 7) * 8;
      v ^= (v ^ (e->value >> sh)) & (e->bmask >> sh);
      break;
    }
    i = (i + 1) & mask;
    s = &f->ws.idx[i];
  }
  *out = size == 8 ? v : v & ((1ull << (size * 8)) - 1);
  return true;
}

/* The first step of every read that sstm__load_fast refused: a naturally
 * aligned read, by an ETL attempt (the variant byte exactly: not killed,
 * not asked to yield to the executor, not sampled), of a stripe whose lock word (loaded as the fast
 * path loads it, (1.1)) is this attempt's own, answered from the redo log (sstm__load_own; the
 * bytes not in the log from memory, re-checked). It runs in the caller's cold path, not in the
 * inlined fast path, so that the code every read inlines does not grow; it makes a read after write
 * cost about a first read and a local call, with no call into the library. False: the library's
 * slow path (sstm__load_slow). */
static inline __attribute__((always_inline)) bool
sstm__load_own_try(const sstm__fast_t *f, const void *addr, unsigned size, uint64_t *out) {
  /* relaxed: as in sstm__load_try (a kill flag fails the test) */
  if (__atomic_load_n(&f->variant, __ATOMIC_RELAXED) != SSTM__V_ETL ||
      ((uintptr_t)addr & (size - 1)) != 0)
    return false;
  const uint64_t *lk = sstm__lock_of(f, addr);
  /* acquire: as in sstm__load_fast (1.1) */
  if (__atomic_load_n(lk, __ATOMIC_ACQUIRE) != f->owner_lw) return false;
  return sstm__load_own(f, lk, addr, size, out);
}

/* The fast path's steps after the first load of the stripe's lock word:
 * lk is the lock word, l the value that acquire load saw ((1.1)). */
static inline __attribute__((always_inline)) bool sstm__load_fast_at(sstm__fast_t *f, uint64_t *lk,
                                                                     uint64_t l, const void *addr,
                                                                     unsigned size, bool log,
                                                                     uint64_t *out) {
  /* Locked (top bit set), or a version newer than the snapshot. */
  if (__builtin_expect(l > f->end, 0)) return false;
  uint64_t v = sstm__mem_load(addr, size);
  /* acquire fence: the re-check cannot see a lock word older than the data
   * (pairs with the committer's release fence before write-back). */
  __atomic_thread_fence(__ATOMIC_ACQUIRE);
  if (__builtin_expect(__atomic_load_n(lk, __ATOMIC_RELAXED) != l, 0)) return false;
  if (log) {
    struct sstm__rentry *t = f->rs.top;
    if (__builtin_expect(t == f->rs.lim, 0)) return false;
    t->lock = lk;
    /* relaxed store: contention managers of other threads read top. */
    __atomic_store_n(&f->rs.top, t + 1, __ATOMIC_RELAXED);
  }
  *out = v;
  return true;
}

/* Fast path of a naturally aligned read of `size` bytes. Returns true and
 * stores the value in *out on success; false means "take the slow path"
 * (nothing was recorded). `log` says whether to append to the read set. */
static inline __attribute__((always_inline)) bool
sstm__load_fast(sstm__fast_t *f, const void *addr, unsigned size, bool log, uint64_t *out) {
  uint64_t *lk = sstm__lock_of(f, addr);
  /* acquire: pairs with the committer's release of the lock word. */
  return sstm__load_fast_at(f, lk, __atomic_load_n(lk, __ATOMIC_ACQUIRE), addr, size, log, out);
}

/* The first test of the fast path for the current descriptor prefix `f`
 * (never NULL: an unregistered thread has a static prefix whose variant is
 * SSTM__V_NONE): an ETL or declared read-only attempt and a naturally
 * aligned address. Outside a transaction the variant is SSTM__V_NONE too,
 * so misuse also takes the slow path. *var_out receives the variant byte
 * as loaded. */
static inline __attribute__((always_inline)) bool
sstm__load_gate(const sstm__fast_t *f, const void *addr, unsigned size, unsigned *var_out) {
  /* relaxed: killers set a flag bit in this byte, which fails both tests
   * below and sends a killed attempt to the slow path at once. */
  unsigned var = __atomic_load_n(&f->variant, __ATOMIC_RELAXED);
  *var_out = var;
  return ((uintptr_t)addr & (size - 1)) == 0 && (var == SSTM__V_ETL || var == SSTM__V_RO);
}

/* The fast path for `f`: sstm__load_gate's test, then sstm__load_fast's
 * conditions (reads of ETL attempts are logged). */
static inline __attribute__((always_inline)) bool sstm__load_try(sstm__fast_t *f, const void *addr,
                                                                 unsigned size, uint64_t *out) {
  unsigned var;
  return sstm__load_gate(f, addr, size, &var) &&
         sstm__load_fast(f, addr, size, var == SSTM__V_ETL, out);
}

/* The fast path of an attempt with the sampling hook on (SSTM__V_SAMPLE
 * with ETL or read-only, no other flag), tried where sstm__load_try failed,
 * out of line (so the common path's code stays what it is without
 * sampling): the same read while the countdown has not run out, counted
 * on success only, so that an access the slow path takes after all is
 * counted once, there. A countdown of 0 sends the access to the slow path,
 * which calls the hook (thread mapping's detection, [Pasqualin20]
 * Algorithm 2) or re-arms the countdown. */
static inline __attribute__((always_inline)) bool
sstm__load_try_sampled(sstm__fast_t *f, const void *addr, unsigned size, uint64_t *out) {
  /* relaxed, as in sstm__load_try: a flag bit fails the test. */
  unsigned var = __atomic_load_n(&f->variant, __ATOMIC_RELAXED);
  if ((var | SSTM__V_RO) != (SSTM__V_SAMPLE | SSTM__V_RO) || f->sample_cd == 0 ||
      ((uintptr_t)addr & (size - 1)) != 0)
    return false;
  if (!sstm__load_fast(f, addr, size, var == SSTM__V_SAMPLE, out)) return false;
  f->sample_cd--;
  return true;
}

SSTM__CXX_CASTS_END
SSTM_EXTERN_C_END

#endif /* SCHEDSTM_FASTPATH_H */
