/* SPDX-License-Identifier: MIT */
/* Read set, write set (redo log with an address index) and lock set of a
 * transaction descriptor. Private to the owning attempt: no atomics, except
 * the published sizes that contention managers of other threads read
 * (relaxed, see sstm_party_t).
 *
 * Write entries are 8-byte aligned words with a byte mask, so sub-word and
 * unaligned stores merge into the word that holds them; a float store is a
 * 4-byte entry in its word, never widened. The index maps a word address to
 * its entry: open addressing, tagged with the attempt stamp so it never needs
 * clearing between attempts.
 *
 * Growth allocates (the slow path); a warmed-up descriptor keeps its arrays,
 * so a transaction no larger than earlier ones allocates nothing.
 */
#ifndef SSTM_CORE_RWSET_H
#define SSTM_CORE_RWSET_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <schedstm/fastpath.h> /* sstm__word_hash, the entry layouts */

/* A read-set entry is the ownership record read, and nothing else: the
 * version seen need not be kept, because it was <= end when it was read and
 * any later change to the stripe carries a version > end (docs/design/core.md
 * (2)), so "unchanged" is "unlocked and <= end" (validate()). */
typedef struct sstm_r_entry {
  _Atomic uint64_t *lock;
} sstm_r_entry_t;

typedef struct sstm_w_entry {
  uintptr_t word; /* 8-byte aligned address */
  uint64_t value; /* buffered bytes, in memory order (little endian) */
  uint64_t bmask; /* bit mask of the buffered bytes (0xff per byte) */
} sstm_w_entry_t;

typedef struct sstm_l_entry {
  _Atomic uint64_t *lock; /* ownership record held */
  uint64_t old;           /* its value before we took it */
} sstm_l_entry_t;

typedef struct sstm_w_slot {
  uintptr_t word;
  uint32_t idx;   /* entry index */
  uint32_t stamp; /* attempt stamp; a slot with another stamp is empty */
} sstm_w_slot_t;

/* The read set is a bump array: entries [e, top), room up to lim. Appending
 * is a compare with lim, two stores and a pointer bump (no index scaling:
 * this is the read barrier's fast path). `top` is read by contention
 * managers of other threads (relaxed), and so is `e`, which only the owner
 * changes, when it grows the array (sstm_rset_count_remote). */
typedef struct sstm_rset {
  sstm_r_entry_t *e;
  sstm_r_entry_t *top;
  sstm_r_entry_t *lim;
} sstm_rset_t;

typedef struct sstm_wset {
  sstm_w_entry_t *e;
  uint32_t n, cap;
  sstm_w_slot_t *idx; /* index, 2*cap slots at least, power of two */
  uint32_t idx_mask;
  uint32_t stamp; /* current attempt stamp (never 0) */
  uint64_t bloom; /* one bit per hashed word, for the CTL read path */
} sstm_wset_t;

typedef struct sstm_lset {
  sstm_l_entry_t *e;
  uint32_t n, cap;
} sstm_lset_t;

/* All return false only on allocation failure. */
bool sstm__rset_grow(sstm_rset_t *rs);
bool sstm__wset_grow(sstm_wset_t *ws);
bool sstm__lset_grow(sstm_lset_t *ls);
bool sstm__sets_init(sstm_rset_t *rs, sstm_wset_t *ws, sstm_lset_t *ls);
void sstm__sets_fini(sstm_rset_t *rs, sstm_wset_t *ws, sstm_lset_t *ls);

/* The inline read-after-write path probes the index too
 * (<schedstm/fastpath.h>): one hash for both. */
static inline uint32_t sstm_word_hash(uintptr_t word) { return sstm__word_hash(word); }
static inline uint64_t sstm_bloom_bit(uintptr_t word) {
  return 1ull << (((uint64_t)word >> 3) & 63);
}

/* Start a new attempt: forget every entry in O(1). */
static inline void sstm_wset_reset(sstm_wset_t *ws) {
  __atomic_store_n(&ws->n, 0, __ATOMIC_RELAXED);
  ws->bloom = 0;
  if (++ws->stamp == 0) { /* wrapped: really clear the index once */
    for (uint32_t i = 0; i <= ws->idx_mask; i++)
      ws->idx[i].stamp = 0;
    ws->stamp = 1;
  }
}

/* Entry for word, or NULL. */
static inline sstm_w_entry_t *sstm_wset_find(const sstm_wset_t *ws, uintptr_t word) {
  uint32_t i = sstm_word_hash(word) & ws->idx_mask;
  for (;;) {
    const sstm_w_slot_t *s = &ws->idx[i];
    if (s->stamp != ws->stamp) return NULL;
    if (s->word == word) return &ws->e[s->idx];
    i = (i + 1) & ws->idx_mask;
  }
}

/* Merge bytes (value already shifted into place, bmask its byte bits) into
 * the entry for word, creating it if needed. Returns false on allocation
 * failure (the set is unchanged). */
static inline bool sstm_wset_put(sstm_wset_t *ws, uintptr_t word, uint64_t value, uint64_t bmask) {
  uint32_t i = sstm_word_hash(word) & ws->idx_mask;
  for (;;) {
    sstm_w_slot_t *s = &ws->idx[i];
    if (s->stamp != ws->stamp) break;
    if (s->word == word) {
      sstm_w_entry_t *e = &ws->e[s->idx];
      e->value = (e->value & ~bmask) | (value & bmask);
      e->bmask |= bmask;
      return true;
    }
    i = (i + 1) & ws->idx_mask;
  }
  if (ws->n == ws->cap) {
    if (!sstm__wset_grow(ws)) return false;
    return sstm_wset_put(ws, word, value, bmask); /* index was rebuilt */
  }
  uint32_t n = ws->n;
  /* n is read by contention managers of other threads (relaxed). */
  __atomic_store_n(&ws->n, n + 1, __ATOMIC_RELAXED);
  ws->e[n] = (sstm_w_entry_t){.word = word, .value = value & bmask, .bmask = bmask};
  ws->idx[i] = (sstm_w_slot_t){.word = word, .idx = n, .stamp = ws->stamp};
  ws->bloom |= sstm_bloom_bit(word);
  return true;
}

/* The undo log of an irrevocable attempt (its write set, which it does not
 * otherwise use): keep the bytes a write is about to overwrite in place,
 * only for the bytes of the word not kept before, so each entry holds the
 * bytes the word had before the attempt. */
static inline bool sstm_wset_put_old(sstm_wset_t *ws, uintptr_t word, uint64_t old,
                                     uint64_t bmask) {
  sstm_w_entry_t *e = sstm_wset_find(ws, word);
  if (e == NULL) return sstm_wset_put(ws, word, old, bmask); /* a new word */
  uint64_t fresh = bmask & ~e->bmask;
  e->value |= old & fresh;
  e->bmask |= fresh;
  return true;
}

/* Entries recorded (owner only). */
static inline uint32_t sstm_rset_count(const sstm_rset_t *rs) {
  return (uint32_t)(rs->top - rs->e);
}

/* Entries recorded, read from another thread: a hint for contention
 * managers (os_prio's tie-break), never dereferenced. Relaxed loads of
 * fields the owner moves independently: loads that straddle a growth of
 * the array (rare: it never shrinks) may mix the old and the new array, so
 * the result is only kept within [0, capacity of the array seen]. */
static inline uint32_t sstm_rset_count_remote(const sstm_rset_t *rs) {
  uintptr_t e = (uintptr_t)__atomic_load_n(&rs->e, __ATOMIC_RELAXED);
  uintptr_t top = (uintptr_t)__atomic_load_n(&rs->top, __ATOMIC_RELAXED);
  uintptr_t lim = (uintptr_t)__atomic_load_n(&rs->lim, __ATOMIC_RELAXED);
  return top >= e && top <= lim ? (uint32_t)((top - e) / sizeof(sstm_r_entry_t)) : 0;
}

/* Forget every entry (start of an attempt). */
static inline void sstm_rset_clear(sstm_rset_t *rs) {
  __atomic_store_n(&rs->top, rs->e, __ATOMIC_RELAXED);
}

static inline bool sstm_rset_add(sstm_rset_t *rs, _Atomic uint64_t *lock) {
  if (__builtin_expect(rs->top == rs->lim, 0) && !sstm__rset_grow(rs)) return false;
  *rs->top = (sstm_r_entry_t){lock};
  /* relaxed: contention managers of other threads read top. */
  __atomic_store_n(&rs->top, rs->top + 1, __ATOMIC_RELAXED);
  return true;
}

static inline bool sstm_lset_add(sstm_lset_t *ls, _Atomic uint64_t *lock, uint64_t old) {
  if (__builtin_expect(ls->n == ls->cap, 0) && !sstm__lset_grow(ls)) return false;
  ls->e[ls->n++] = (sstm_l_entry_t){lock, old};
  return true;
}

#endif /* SSTM_CORE_RWSET_H */
