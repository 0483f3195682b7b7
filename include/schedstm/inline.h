/* SPDX-License-Identifier: MIT */
/** @file
 * The opt-in inline barriers: the typed loads and stores with their fast
 * paths (<schedstm/fastpath.h>, which the library's barriers share)
 * inlined into application code.
 *
 * Define SSTM_INLINE_BARRIERS before including <schedstm/schedstm.h> and the
 * typed loads (sstm_load_u8 ... sstm_load_double, sstm_load_ptr) become
 * static inline functions: the common case (an unlocked word whose version
 * the snapshot covers) runs inline, everything else calls into the library.
 * So do the typed stores (sstm_store_u8 ... sstm_store_double): a store to a
 * stripe the attempt has already locked merges into its redo log inline
 * (sstm__store_own), every other store calls the library.
 * This is the opt-in fast mode in the manner of liburcu's [Desnoyers12] _LGPL_SOURCE: the
 * descriptor prefix of <schedstm/fastpath.h> is then part of the binary
 * interface between your objects and the library, so rebuild them with
 * every new soname. Inside a development series the layout may change
 * too: see SSTM__INLINE_ABI there.
 * Without the macro the loads are ordinary calls, and this header adds
 * only the declarations of the library's two general entries.
 */
#ifndef SCHEDSTM_INLINE_H
#define SCHEDSTM_INLINE_H

#include <schedstm/fastpath.h>

SSTM_EXTERN_C_BEGIN
SSTM__CXX_CASTS_BEGIN

/* The general read (any variant, alignment, or misuse), exported. */
SSTM_API SSTM_NOPLT uint64_t sstm__load_slow(const void *addr, unsigned size);
/* The general store of the `size` (1, 2, 4 or 8) low bytes of v at addr:
 * what the exported typed store of that width does (any variant,
 * alignment, or misuse), exported for the inline stores. */
SSTM_API SSTM_NOPLT void sstm__store_slow(void *addr, uint64_t v, unsigned size);

#if defined(SSTM_INLINE_BARRIERS)
/* The calling thread's descriptor prefix, never NULL (see sstm__load_gate in
 * <schedstm/fastpath.h>). */
extern __thread sstm__fast_t *sstm__fast_cur __attribute__((tls_model("initial-exec")));

/* The slow path through a cold function: the compiler then moves it out of
 * line and the inlined fast path runs without a taken branch. A sampled
 * attempt's read takes its fast path here. One function per width, so that
 * the read after write (sstm__load_own) runs with its shifts and masks
 * folded to constants. */
static inline __attribute__((always_inline)) uint64_t sstm__load_general(const void *addr,
                                                                         unsigned size) {
  uint64_t v;
  if (sstm__load_own_try(sstm__fast_cur, addr, size, &v)) return v; /* read after write */
  if (sstm__load_try_sampled(sstm__fast_cur, addr, size, &v)) return v;
  return sstm__load_slow(addr, size);
}
#define SSTM__LOAD_GENERAL_W(size)                                                                 \
  static __attribute__((cold, noinline, unused))                                                   \
  uint64_t sstm__load_general##size(const void *addr) {                                            \
    return sstm__load_general(addr, size);                                                         \
  }
SSTM__LOAD_GENERAL_W(1)
SSTM__LOAD_GENERAL_W(2)
SSTM__LOAD_GENERAL_W(4)
SSTM__LOAD_GENERAL_W(8)
#undef SSTM__LOAD_GENERAL_W

/* Every read that the inlined path refused, with the stripe's lock word
 * lk and the value l its first load saw. A lock word that is the
 * attempt's own (owner_lw has the lock bit, so such an l is always
 * refused), in an ETL attempt (the variant byte exactly) at a naturally
 * aligned address, is a read after write: the conditions of
 * sstm__load_own_try, whose acquire load of the lock word ((1.1)) l is;
 * the read is sstm__load_own, and a lock lost meanwhile (a kill) goes to
 * the library's slow path. Anything else goes to
 * sstm__load_general<N>. Cold and per width, as that one (the read after
 * write then runs with its shifts and masks folded to constants). One call
 * site in the inlined read keeps the code every read inlines small, so that
 * a caller's search loop stays a candidate for inlining, as it is with the
 * call barriers. */
#define SSTM__LOAD_REFUSED_W(size)                                                                 \
  static __attribute__((cold, noinline, unused)) uint64_t sstm__load_refused##size(                \
      const sstm__fast_t *f, const uint64_t *lk, const void *addr, uint64_t l) {                   \
    /* relaxed: as in sstm__load_try (a kill flag fails the test) */                               \
    if (l == f->owner_lw && __atomic_load_n(&f->variant, __ATOMIC_RELAXED) == SSTM__V_ETL &&       \
        ((uintptr_t)addr & (size - 1)) == 0) {                                                     \
      uint64_t v;                                                                                  \
      if (sstm__load_own(f, lk, addr, size, &v)) return v;                                         \
      return sstm__load_slow(addr, size);                                                          \
    }                                                                                              \
    return sstm__load_general##size(addr);                                                         \
  }
SSTM__LOAD_REFUSED_W(1)
SSTM__LOAD_REFUSED_W(2)
SSTM__LOAD_REFUSED_W(4)
SSTM__LOAD_REFUSED_W(8)
#undef SSTM__LOAD_REFUSED_W

/* The inlined read: the stripe's lock word first (the prefix's lock table
 * is never NULL: a thread without a descriptor has a static one), then
 * sstm__load_gate's test and sstm__load_fast's conditions; every refusal
 * goes to sstm__load_refused<N> with the lock word and its value. */
static inline __attribute__((always_inline)) uint64_t sstm__load_inline(const void *addr,
                                                                        unsigned size) {
  sstm__fast_t *f = sstm__fast_cur;
  uint64_t *lk = sstm__lock_of(f, addr);
  /* acquire: as in sstm__load_fast (1.1) */
  uint64_t l = __atomic_load_n(lk, __ATOMIC_ACQUIRE);
  uint64_t v;
  unsigned var;
  if (__builtin_expect(sstm__load_gate(f, addr, size, &var) &&
                           sstm__load_fast_at(f, lk, l, addr, size, var == SSTM__V_ETL, &v),
                       1))
    return v;
  switch (size) {
  case 1: return sstm__load_refused1(f, lk, addr, l);
  case 2: return sstm__load_refused2(f, lk, addr, l);
  case 4: return sstm__load_refused4(f, lk, addr, l);
  default: return sstm__load_refused8(f, lk, addr, l);
  }
}

/* The inline store's fast path: a naturally aligned store of `size` bytes
 * by an ETL attempt (the variant byte exactly, as in sstm__load_own_try) to
 * a stripe whose lock word is this attempt's own, whose word is in the redo
 * log's index at its hash or has a free slot there (no probing). The value
 * is merged into the word's entry, or a new entry is appended: the same
 * steps as the library's store for a stripe it already holds (step (2.4)
 * in docs/design/core.md needs no new lock and no new lock-log entry then;
 * the word set's Bloom filter is read by CTL attempts only). Only a killed
 * attempt can lose a lock it holds ((6): taken over once its status is
 * KILLED), and a killed attempt never writes its redo log back (its commit
 * CAS fails), so whatever this path adds to the log meanwhile is discarded
 * at its abort; a kill flag already set in the variant byte sends the store
 * to the library, which aborts the attempt. False: nothing was changed; the
 * caller calls the library's store, which takes every other case (the first
 * store to a stripe locks it there). */
static inline __attribute__((always_inline)) bool sstm__store_own(sstm__fast_t *f, void *addr,
                                                                  uint64_t val, unsigned size) {
  /* relaxed: as in sstm__load_try (a kill flag fails the test) */
  if (__atomic_load_n(&f->variant, __ATOMIC_RELAXED) != SSTM__V_ETL ||
      ((uintptr_t)addr & (size - 1)) != 0)
    return false;
  const uint64_t *lk = sstm__lock_of(f, addr);
  /* relaxed: this attempt stored its own lock word itself (its CAS comes
   * before in this thread), and nothing is read under the lock's protection
   * here: a stale "ours" is only possible for a killed attempt (above). */
  if (__atomic_load_n(lk, __ATOMIC_RELAXED) != f->owner_lw) return false;
  uintptr_t w = (uintptr_t)addr & ~(uintptr_t)7;
  unsigned sh = ((unsigned)(uintptr_t)addr & 7) * 8;
  uint64_t bm = (size == 8 ? ~0ull : (1ull << (size * 8)) - 1) << sh;
  struct sstm__wlog *ws = &f->ws;
  struct sstm__wslot *s = &ws->idx[sstm__word_hash(w) & ws->idx_mask];
  if (s->stamp == ws->stamp) {
    if (s->word != w) return false; /* a collision: the library probes */
    struct sstm__wentry *e = &ws->e[s->idx];
    e->value = (e->value & ~bm) | ((val << sh) & bm);
    e->bmask |= bm;
    return true;
  }
  uint32_t n = ws->n;
  if (n == ws->cap) return false; /* the library grows the log */
  struct sstm__wentry *e = &ws->e[n];
  e->word = w;
  e->value = (val << sh) & bm;
  e->bmask = bm;
  s->word = w;
  s->idx = n;
  s->stamp = ws->stamp;
  /* relaxed: contention managers of other threads read n, as a count only
   * (never the entries), so it may follow the entry; last, so that the
   * compiler keeps the stamp and the entries' base in registers across it. */
  __atomic_store_n(&ws->n, n + 1, __ATOMIC_RELAXED);
  return true;
}

/* The typed loads of <schedstm/access.h> (the contract stated there), inline:
 * sstm__load_inline. */
static inline uint8_t sstm_load_u8(const uint8_t *a) { return (uint8_t)sstm__load_inline(a, 1); }
static inline uint16_t sstm_load_u16(const uint16_t *a) {
  return (uint16_t)sstm__load_inline(a, 2);
}
static inline uint32_t sstm_load_u32(const uint32_t *a) {
  return (uint32_t)sstm__load_inline(a, 4);
}
static inline uint64_t sstm_load_u64(const uint64_t *a) { return sstm__load_inline(a, 8); }
static inline void *sstm_load_ptr(void *const *a) {
  return (void *)(uintptr_t)sstm__load_inline(a, 8);
}
static inline float sstm_load_float(const float *a) {
  uint32_t b = (uint32_t)sstm__load_inline(a, 4);
  float f;
  __builtin_memcpy(&f, &b, 4);
  return f;
}
static inline double sstm_load_double(const double *a) {
  uint64_t b = sstm__load_inline(a, 8);
  double d;
  __builtin_memcpy(&d, &b, 8);
  return d;
}

/* The typed stores of <schedstm/access.h>, inline: sstm__store_own for a
 * stripe the attempt already holds; every other store goes to the
 * library's general entry, sstm__store_slow. */
#define SSTM__STORE_INLINE(T, bits)                                                                \
  static inline void sstm_store_u##bits(T *a, T v) {                                               \
    if (__builtin_expect(!sstm__store_own(sstm__fast_cur, a, v, sizeof(T)), 0))                    \
      sstm__store_slow(a, v, sizeof(T));                                                           \
  }
SSTM__STORE_INLINE(uint8_t, 8)
SSTM__STORE_INLINE(uint16_t, 16)
SSTM__STORE_INLINE(uint32_t, 32)
SSTM__STORE_INLINE(uint64_t, 64)
#undef SSTM__STORE_INLINE
static inline void sstm_store_ptr(void **a, void *v) {
  sstm_store_u64((uint64_t *)(void *)a, (uint64_t)(uintptr_t)v);
}
static inline void sstm_store_float(float *a, float v) {
  uint32_t b;
  __builtin_memcpy(&b, &v, 4);
  sstm_store_u32((uint32_t *)(void *)a, b);
}
static inline void sstm_store_double(double *a, double v) {
  uint64_t b;
  __builtin_memcpy(&b, &v, 8);
  sstm_store_u64((uint64_t *)(void *)a, b);
}
#endif

SSTM__CXX_CASTS_END
SSTM_EXTERN_C_END

#endif /* SCHEDSTM_INLINE_H */
