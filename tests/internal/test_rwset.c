/* SPDX-License-Identifier: MIT */
/* Internal unit tests: read set, write set (redo log with byte masks and an
 * address index stamped per attempt) and lock set (src/core/rwset.h). The
 * write set is checked against a simple model under random merges, growth
 * and resets, including the wrap of the attempt stamp. */
#define _GNU_SOURCE
#include <stdlib.h>

#include "core/rwset.h"

#include "../common/runner.h"

/* model: word -> (value, bmask), words drawn from a small universe */
#define UNIVERSE 4096
static uint64_t m_val[UNIVERSE], m_mask[UNIVERSE];
static bool m_present[UNIVERSE];
static unsigned m_n;
static const uintptr_t BASE = 0x10000000;

static uintptr_t word_of(unsigned i) { return BASE + (uintptr_t)i * 8; }

static void model_reset(void) {
  memset(m_present, 0, sizeof m_present);
  m_n = 0;
}

static void check_against_model(const sstm_wset_t *ws) {
  CHECK_EQ_U(ws->n, m_n);
  for (unsigned i = 0; i < UNIVERSE; i++) {
    const sstm_w_entry_t *e = sstm_wset_find(ws, word_of(i));
    if (!m_present[i]) {
      CHECK_MSG(e == NULL, "word %u found but never written in this attempt", i);
      continue;
    }
    CHECK_MSG(e != NULL, "word %u written but not found", i);
    CHECK_EQ_X(e->word, word_of(i));
    CHECK_EQ_X(e->bmask, m_mask[i]);
    CHECK_EQ_X(e->value, m_val[i]);
    CHECK_EQ_X(e->value & ~e->bmask, 0); /* no stray bytes outside the mask */
    CHECK_MSG(ws->bloom & sstm_bloom_bit(word_of(i)), "bloom bit of word %u missing", i);
  }
  /* the entries are exactly the present words, each once */
  for (uint32_t k = 0; k < ws->n; k++) {
    unsigned i = (unsigned)((ws->e[k].word - BASE) / 8);
    CHECK_LT_U(i, UNIVERSE);
    CHECK_TRUE(m_present[i]);
  }
}

static uint64_t random_mask(sstm_rng_t *r) {
  /* byte masks like the barriers produce: 1, 2, 4, 8 contiguous bytes or
   * any byte subset (bulk copies) */
  unsigned kind = (unsigned)sstm_rng_below(r, 5);
  if (kind == 4) {
    uint64_t m = 0;
    unsigned bits = (unsigned)sstm_rng_next(r) & 0xff;
    if (!bits) bits = 1;
    for (int b = 0; b < 8; b++)
      if (bits & (1u << b)) m |= 0xffull << (8 * b);
    return m;
  }
  unsigned size = 1u << kind; /* 1..8 */
  if (size > 8) size = 8;
  unsigned off = (unsigned)sstm_rng_below(r, 9 - size);
  uint64_t m = size == 8 ? ~0ull : (((1ull << (8 * size)) - 1) << (8 * off));
  return m;
}

TEST(wset_model_random) {
  sstm_rset_t rs;
  sstm_wset_t ws;
  sstm_lset_t ls;
  CHECK_TRUE(sstm__sets_init(&rs, &ws, &ls));
  sstm_wset_reset(&ws);
  model_reset();
  sstm_rng_t r;
  sstm_rng_seed(&r, sstm_test_seed());
  for (int round = 0; round < 60; round++) {
    /* attempts of growing and shrinking sizes: growth happens mid-attempt */
    unsigned nputs = (unsigned)sstm_rng_below(&r, round % 10 == 9 ? 20000 : 600);
    unsigned range = round % 3 == 0 ? 64 : UNIVERSE;
    for (unsigned k = 0; k < nputs; k++) {
      unsigned i = (unsigned)sstm_rng_below(&r, range);
      uint64_t mask = random_mask(&r);
      uint64_t v = sstm_rng_next(&r);
      CHECK_TRUE(sstm_wset_put(&ws, word_of(i), v, mask));
      if (!m_present[i]) {
        m_present[i] = true;
        m_mask[i] = 0;
        m_val[i] = 0;
        m_n++;
      }
      m_val[i] = (m_val[i] & ~mask) | (v & mask);
      m_mask[i] |= mask;
    }
    check_against_model(&ws);
    /* new attempt: everything forgotten in O(1) */
    sstm_wset_reset(&ws);
    model_reset();
    check_against_model(&ws);
    CHECK_EQ_X(ws.bloom, 0);
  }
  sstm__sets_fini(&rs, &ws, &ls);
}

TEST(wset_stamp_wrap) {
  sstm_rset_t rs;
  sstm_wset_t ws;
  sstm_lset_t ls;
  CHECK_TRUE(sstm__sets_init(&rs, &ws, &ls));
  sstm_wset_reset(&ws);
  /* fill the index under the last stamp before the wrap */
  ws.stamp = UINT32_MAX;
  for (unsigned i = 0; i < 100; i++)
    CHECK_TRUE(sstm_wset_put(&ws, word_of(i), i, ~0ull));
  CHECK_NOT_NULL(sstm_wset_find(&ws, word_of(5)));
  sstm_wset_reset(&ws); /* ++stamp wraps to 0: the index must be cleared */
  CHECK_NE_U(ws.stamp, 0);
  for (unsigned i = 0; i < 100; i++)
    CHECK_MSG(sstm_wset_find(&ws, word_of(i)) == NULL, "word %u survived the stamp wrap", i);
  /* and slots left with stamp 1 from long ago must not come back either:
   * write under stamp 1, move on 2^32 - 1 attempts (simulated), wrap */
  model_reset();
  for (unsigned i = 0; i < 50; i++)
    CHECK_TRUE(sstm_wset_put(&ws, word_of(i + 1000), i, 0xff));
  ws.stamp = UINT32_MAX;
  sstm_wset_reset(&ws);
  CHECK_EQ_U(ws.stamp, 1);
  for (unsigned i = 0; i < 50; i++)
    CHECK_MSG(sstm_wset_find(&ws, word_of(i + 1000)) == NULL,
              "stale slot of word %u reappeared after the wrap", i + 1000);
  sstm__sets_fini(&rs, &ws, &ls);
}

TEST(wset_value_kept_in_memory_order) {
  sstm_rset_t rs;
  sstm_wset_t ws;
  sstm_lset_t ls;
  CHECK_TRUE(sstm__sets_init(&rs, &ws, &ls));
  sstm_wset_reset(&ws);
  uintptr_t w = word_of(3);
  CHECK_TRUE(sstm_wset_put(&ws, w, 0x00000000000000AAull, 0xffull));     /* byte 0 */
  CHECK_TRUE(sstm_wset_put(&ws, w, 0x0000000000BB0000ull, 0xff0000ull)); /* byte 2 */
  CHECK_TRUE(sstm_wset_put(&ws, w, 0xCCDD000000000000ull, 0xffff000000000000ull));
  CHECK_TRUE(sstm_wset_put(&ws, w, 0x00000000000000EEull, 0xffull)); /* overwrite 0 */
  sstm_w_entry_t *e = sstm_wset_find(&ws, w);
  CHECK_NOT_NULL(e);
  CHECK_EQ_X(e->bmask, 0xffff000000ff00ffull);
  CHECK_EQ_X(e->value, 0xCCDD000000BB00EEull);
  CHECK_EQ_U(ws.n, 1);
  sstm__sets_fini(&rs, &ws, &ls);
}

TEST(rset_lset_growth_keeps_entries) {
  sstm_rset_t rs;
  sstm_wset_t ws;
  sstm_lset_t ls;
  CHECK_TRUE(sstm__sets_init(&rs, &ws, &ls));
  enum { N = 100000 };
  static _Atomic uint64_t locks[N];
  for (uint32_t i = 0; i < N; i++) {
    CHECK_TRUE(sstm_rset_add(&rs, &locks[(i * 7919u) % N]));
    CHECK_TRUE(sstm_lset_add(&ls, &locks[(i * 7) % 97], i));
  }
  CHECK_EQ_U(sstm_rset_count(&rs), N);
  CHECK_EQ_U(sstm_rset_count_remote(&rs), N);
  CHECK_EQ_U(ls.n, N);
  CHECK_GE_U((uint64_t)(rs.lim - rs.e), N);
  CHECK_GE_U(ls.cap, N);
  for (uint32_t i = 0; i < N; i++) {
    CHECK_EQ_PTR(rs.e[i].lock, &locks[(i * 7919u) % N]);
    CHECK_EQ_PTR(ls.e[i].lock, &locks[(i * 7) % 97]);
    CHECK_EQ_U(ls.e[i].old, i);
  }
  sstm__sets_fini(&rs, &ws, &ls);
  CHECK_NULL(rs.e);
  CHECK_NULL(rs.top);
}

TEST(word_hash_spreads_adjacent_words) {
  /* adjacent words must not pile into one index run */
  enum { SLOTS = 1024 };
  static unsigned hits[SLOTS];
  for (unsigned i = 0; i < SLOTS / 4; i++)
    hits[sstm_word_hash(BASE + (uintptr_t)i * 8) & (SLOTS - 1)]++;
  unsigned maxh = 0;
  for (unsigned i = 0; i < SLOTS; i++)
    maxh = hits[i] > maxh ? hits[i] : maxh;
  CHECK_LE_U(maxh, 4);
}

SSTM_TEST_MAIN()
