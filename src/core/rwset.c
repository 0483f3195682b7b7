/* SPDX-License-Identifier: MIT */
/* Growth of the transaction logs (the slow path of core/rwset.h). */
#include <stdlib.h>
#include <string.h>

#include "core/rwset.h"

#define RSET_INIT 1024
#define WSET_INIT 256
#define LSET_INIT 256
/* Entry counts are 32-bit and the write set's index has 4 slots per entry:
 * a log never grows past 2^28 entries (gigabytes of log), so no capacity
 * computation wraps; growing beyond fails like an allocation does. */
#define SET_MAX (1u << 28)

bool sstm__rset_grow(sstm_rset_t *rs) {
  /* Sizes as integers, taken before the realloc. */
  uintptr_t base = (uintptr_t)rs->e;
  size_t n = ((uintptr_t)rs->top - base) / sizeof *rs->e;
  size_t cap = base ? ((uintptr_t)rs->lim - base) / sizeof *rs->e * 2 : RSET_INIT;
  if (cap > SET_MAX) return false;
  sstm_r_entry_t *e = realloc(rs->e, cap * sizeof *e);
  if (e == NULL) return false;
  /* relaxed stores: other threads read e and top as a hint only
   * (sstm_rset_count_remote). */
  __atomic_store_n(&rs->e, e, __ATOMIC_RELAXED);
  __atomic_store_n(&rs->top, e + n, __ATOMIC_RELAXED);
  __atomic_store_n(&rs->lim, e + cap, __ATOMIC_RELAXED);
  return true;
}

bool sstm__lset_grow(sstm_lset_t *ls) {
  if (ls->cap >= SET_MAX) return false;
  uint32_t cap = ls->cap ? ls->cap * 2 : LSET_INIT;
  sstm_l_entry_t *e = realloc(ls->e, (size_t)cap * sizeof *e);
  if (e == NULL) return false;
  ls->e = e;
  ls->cap = cap;
  return true;
}

/* Double the entries and rebuild the index (kept at >= 2x entries). */
bool sstm__wset_grow(sstm_wset_t *ws) {
  if (ws->cap >= SET_MAX) return false;
  uint32_t cap = ws->cap ? ws->cap * 2 : WSET_INIT;
  sstm_w_entry_t *e = realloc(ws->e, (size_t)cap * sizeof *e);
  if (e == NULL) return false;
  ws->e = e;
  uint32_t slots = cap * 4;
  sstm_w_slot_t *idx = calloc(slots, sizeof *idx);
  if (idx == NULL) return false; /* entries grew, cap unchanged: still consistent */
  free(ws->idx);
  ws->idx = idx;
  ws->idx_mask = slots - 1;
  ws->cap = cap;
  if (ws->stamp == 0) ws->stamp = 1;
  for (uint32_t i = 0; i < ws->n; i++) {
    uint32_t h = sstm_word_hash(e[i].word) & ws->idx_mask;
    while (idx[h].stamp == ws->stamp)
      h = (h + 1) & ws->idx_mask;
    idx[h] = (sstm_w_slot_t){.word = e[i].word, .idx = i, .stamp = ws->stamp};
  }
  return true;
}

bool sstm__sets_init(sstm_rset_t *rs, sstm_wset_t *ws, sstm_lset_t *ls) {
  memset(rs, 0, sizeof *rs);
  memset(ws, 0, sizeof *ws);
  memset(ls, 0, sizeof *ls);
  if (sstm__rset_grow(rs) && sstm__wset_grow(ws) && sstm__lset_grow(ls)) return true;
  sstm__sets_fini(rs, ws, ls);
  return false;
}

void sstm__sets_fini(sstm_rset_t *rs, sstm_wset_t *ws, sstm_lset_t *ls) {
  free(rs->e);
  free(ws->e);
  free(ws->idx);
  free(ls->e);
  memset(rs, 0, sizeof *rs);
  memset(ws, 0, sizeof *ws);
  memset(ls, 0, sizeof *ls);
}
