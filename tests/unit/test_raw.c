/* SPDX-License-Identifier: MIT */
/* Unit tests: the read after write (a read of a stripe the attempt has
 * locked; docs/design/core.md (3.1)-(3.4)), built twice: with the exported
 * loads (the library's cold path tries sstm__load_own_try) and with the
 * inline barriers (the inlined read sends a refused read, an own lock word
 * among them, to sstm__load_refused<N>). Every case compares the value
 * read with a byte model of the memory as the attempt must see it:
 * - every width and offset of a read against a word that has no entry
 *   (the stripe held through its neighbour), and against every single
 *   earlier store of every width and offset into the word (the read's
 *   bytes all in the log, some of them, none of them);
 * - words whose index slots collide and a log that grows while the
 *   attempt reads its words back (probe sequences, rebuilt index);
 * - a restart: the new attempt reads memory, not the old attempt's log;
 * - flat nesting: the inner block's writes are the outer's;
 * - a store after the read merges with what the read saw. */
#include <string.h>

#include "../common/txhelp.h"

/* Two stripes of at least 32 bytes: the words under test are word 1..3 of
 * each; word 0 is the neighbour whose store locks the stripe. */
static uint64_t mem[64] __attribute__((aligned(4096)));

/* 32-byte stripes whatever the environment's knobs say: mem's words 0-3
 * share a lock, as do 4-7. */
static void raw_init(void) {
  sstm_config_t cfg;
  sstm_test_config(&cfg);
  cfg.stripe_shift = 5;
  CHECK_OK(sstm_init(&cfg));
  CHECK_OK(sstm_thread_init());
}

static uint64_t pattern(unsigned i) {
  return 0x1122334455667788ull * (i + 1) ^ 0xA5A5A5A5A5A5A5A5ull;
}

static void reset_mem(void) {
  for (unsigned i = 0; i < 64; i++)
    mem[i] = pattern(i);
}

/* A store of `size` bytes of v at byte offset off of word w, through the
 * typed store of that width. */
static void store_w(uint64_t *w, unsigned off, unsigned size, uint64_t v) {
  unsigned char *p = (unsigned char *)w + off;
  switch (size) {
  case 1: sstm_store_u8((uint8_t *)p, (uint8_t)v); break;
  case 2: sstm_store_u16((uint16_t *)(void *)p, (uint16_t)v); break;
  case 4: sstm_store_u32((uint32_t *)(void *)p, (uint32_t)v); break;
  default: sstm_store_u64((uint64_t *)(void *)p, v); break;
  }
}
static uint64_t load_w(const uint64_t *w, unsigned off, unsigned size) {
  const unsigned char *p = (const unsigned char *)w + off;
  switch (size) {
  case 1: return sstm_load_u8(p);
  case 2: return sstm_load_u16((const uint16_t *)(const void *)p);
  case 4: return sstm_load_u32((const uint32_t *)(const void *)p);
  default: return sstm_load_u64((const uint64_t *)(const void *)p);
  }
}
/* The model's bytes [off, off + size) of word m, little endian. */
static uint64_t bytes_of(uint64_t m, unsigned off, unsigned size) {
  uint64_t v = m >> (off * 8);
  return size == 8 ? v : v & ((1ull << (size * 8)) - 1);
}
static uint64_t with_bytes(uint64_t m, unsigned off, unsigned size, uint64_t v) {
  uint64_t bm = (size == 8 ? ~0ull : (1ull << (size * 8)) - 1) << (off * 8);
  return (m & ~bm) | ((v << (off * 8)) & bm);
}

static const unsigned sizes[] = {1, 2, 4, 8};

/* The case under test, for the transaction body. */
static struct {
  unsigned word;          /* index into mem */
  int s_off, s_size;      /* the earlier store into the word (s_size 0: none) */
  unsigned r_off, r_size; /* the read */
  uint64_t got, want;
  volatile int attempts;
} c;

static void one_case(void *arg) {
  (void)arg;
  c.attempts++;
  uint64_t *stripe0 = &mem[c.word & ~3u];
  store_w(stripe0, 0, 8, 0xFEEDull); /* locks the stripe through word 0 */
  uint64_t model = mem[c.word];
  if (c.s_size) {
    uint64_t sv = 0xC3D2E1F0B4A59687ull ^ ((uint64_t)c.s_off << 40) ^ c.s_size;
    store_w(&mem[c.word], (unsigned)c.s_off, (unsigned)c.s_size, sv);
    model = with_bytes(model, (unsigned)c.s_off, (unsigned)c.s_size, sv);
  }
  c.got = load_w(&mem[c.word], c.r_off, c.r_size);
  c.want = bytes_of(model, c.r_off, c.r_size);
  sstm_cancel(); /* nothing is written back: memory stays the pattern */
}

TEST(every_width_and_offset_against_every_earlier_store) {
  raw_init();
  reset_mem();
  unsigned cases = 0;
  for (unsigned word = 1; word < 8; word += 2) /* words 1 and 3 of two stripes, 5 and 7 */
    for (int ss = -1; ss < 4; ss++)            /* -1: no earlier store into the word */
      for (unsigned so = 0; so < 8; so += ss < 0 ? 8 : sizes[ss])
        for (unsigned rs = 0; rs < 4; rs++)
          for (unsigned ro = 0; ro < 8; ro += sizes[rs]) {
            c.word = word;
            c.s_size = ss < 0 ? 0 : (int)sizes[ss];
            c.s_off = (int)so;
            c.r_off = ro;
            c.r_size = sizes[rs];
            c.attempts = 0;
            CHECK_EQ_I(sstm_run(NULL, one_case, NULL), SSTM_ECANCELED);
            CHECK_EQ_I(c.attempts, 1);
            CHECK_EQ_X(c.got, c.want);
            CHECK_EQ_X(mem[word], pattern(word));
            cases++;
          }
  /* 15 reads per word state: none, 8 x u8, 4 x u16, 2 x u32, 1 x u64 */
  CHECK_EQ_U(cases, 4u * 15u * 16u);
  txh_cleanup();
  sstm_test_fini();
}

/* Many words, each given its low half only: their index slots collide and
 * the log grows (its index is rebuilt) while the attempt reads them back,
 * before and after more stores. */
enum { MANY = 3000 };
static uint64_t many[MANY] __attribute__((aligned(64)));
static volatile int many_attempts;
static void many_words(void *arg) {
  (void)arg;
  many_attempts++;
  for (unsigned i = 0; i < MANY; i++) {
    sstm_store_u32((uint32_t *)(void *)&many[i], 0x40000000u + i);
    /* read back the word, its new half and the old half, at once */
    CHECK_EQ_X(sstm_load_u64(&many[i]), ((uint64_t)i << 32) | (0x40000000u + i));
    CHECK_EQ_X(sstm_load_u32((const uint32_t *)(const void *)&many[i] + 1), i);
  }
  for (unsigned i = 0; i < MANY; i++) {
    CHECK_EQ_X(sstm_load_u32((const uint32_t *)(const void *)&many[i]), 0x40000000u + i);
    CHECK_EQ_X(sstm_load_u16((const uint16_t *)(const void *)&many[i] + 3), 0);
    CHECK_EQ_X(sstm_load_u8((const uint8_t *)&many[i] + 4), i & 0xff);
  }
}
TEST(colliding_slots_and_a_growing_log) {
  raw_init();
  for (unsigned i = 0; i < MANY; i++)
    many[i] = (uint64_t)i << 32 | 0xDEADu;
  many_attempts = 0;
  CHECK_OK(sstm_run(NULL, many_words, NULL));
  CHECK_EQ_I(many_attempts, 1);
  for (unsigned i = 0; i < MANY; i++)
    CHECK_EQ_X(many[i], ((uint64_t)i << 32) | (0x40000000u + i));
  txh_cleanup();
  sstm_test_fini();
}

/* Words whose index slots collide for every index of up to 2^16 slots
 * (the low 16 bits of their hash are equal: sstm__word_hash, the index's
 * hash): each one's entry lies past the others' on the probe sequence
 * ((3.2)), and a word of the same sequence that was not written must be
 * read from memory past all of them. */
static uint64_t big[1 << 17] __attribute__((aligned(64)));
static uint64_t *coll[4];
static void colliding(void *arg) {
  (void)arg;
  for (unsigned k = 0; k < 3; k++)
    sstm_store_u32((uint32_t *)(void *)coll[k], 0x70000000u + k);
  /* coll[3]'s stripe locked through its neighbour word, coll[3] itself not written */
  uint64_t *nb = (uint64_t *)((uintptr_t)coll[3] ^ 8);
  sstm_store_u64(nb, 1);
  for (unsigned k = 3; k-- > 0;) {
    CHECK_EQ_X(sstm_load_u64(coll[k]), (*coll[k] & ~0xffffffffull) | (0x70000000u + k));
    CHECK_EQ_X(sstm_load_u32((const uint32_t *)(const void *)coll[k] + 1), *coll[k] >> 32);
    CHECK_EQ_X(sstm_load_u16((const uint16_t *)(const void *)coll[k]), k);
  }
  CHECK_EQ_X(sstm_load_u64(coll[3]), *coll[3]);
  CHECK_EQ_X(sstm_load_u8((const uint8_t *)coll[3] + 1), (*coll[3] >> 8) & 0xff);
  sstm_cancel();
}
TEST(words_past_colliding_slots) {
  raw_init();
  static uint8_t count[1 << 16];
  memset(count, 0, sizeof count);
  for (unsigned i = 0; i < (1u << 17); i++) {
    big[i] = pattern(i);
    count[sstm__word_hash((uintptr_t)&big[i]) & 0xffff]++;
  }
  unsigned b = 0;
  while (b < (1u << 16) && count[b] < 4)
    b++;
  CHECK_LT_U(b, 1u << 16); /* 2^17 words in 2^16 buckets: some bucket has 4 */
  unsigned n = 0;
  for (unsigned i = 0; i < (1u << 17) && n < 4; i++)
    if ((sstm__word_hash((uintptr_t)&big[i]) & 0xffff) == b) coll[n++] = &big[i];
  CHECK_EQ_U(n, 4);
  CHECK_EQ_I(sstm_run(NULL, colliding, NULL), SSTM_ECANCELED);
  txh_cleanup();
  sstm_test_fini();
}

/* The first attempt writes words 1-3 of a stripe and restarts; the second
 * locks the stripe through word 0 only and reads words 1-3: memory's
 * bytes, not the first attempt's log (its entries carry the old stamp). */
static volatile int rs_attempts;
static uint64_t rs_seen[3][2];
static void restart_body(void *arg) {
  (void)arg;
  int a = ++rs_attempts;
  if (a == 1) {
    for (unsigned i = 1; i < 4; i++)
      store_w(&mem[i], 0, 4, 0x11110000u + i);
    CHECK_EQ_X(load_w(&mem[2], 0, 8), (pattern(2) & ~0xffffffffull) | 0x11110002u);
    sstm_restart();
  }
  store_w(&mem[0], 0, 8, 77);
  for (unsigned i = 1; i < 4; i++) {
    rs_seen[i - 1][0] = load_w(&mem[i], 0, 4);
    rs_seen[i - 1][1] = load_w(&mem[i], 0, 8);
  }
}
TEST(a_restarted_attempt_reads_memory_not_the_old_log) {
  raw_init();
  reset_mem();
  rs_attempts = 0;
  CHECK_OK(sstm_run(NULL, restart_body, NULL));
  CHECK_EQ_I(rs_attempts, 2);
  for (unsigned i = 1; i < 4; i++) {
    CHECK_EQ_X(rs_seen[i - 1][0], pattern(i) & 0xffffffffu);
    CHECK_EQ_X(rs_seen[i - 1][1], pattern(i));
    CHECK_EQ_X(mem[i], pattern(i));
  }
  CHECK_EQ_X(mem[0], 77);
  txh_cleanup();
  sstm_test_fini();
}

/* Flat nesting: what the inner block wrote is read by the outer after the
 * inner block's end, merged with memory's bytes of the same words. */
static void inner_writes(void *arg) {
  (void)arg;
  store_w(&mem[1], 2, 2, 0xBEEF);
  store_w(&mem[2], 4, 4, 0xCAFEF00Du);
}
static void outer(void *arg) {
  (void)arg;
  store_w(&mem[0], 0, 1, 0x5A);
  CHECK_OK(sstm_run(NULL, inner_writes, NULL));
  CHECK_EQ_X(load_w(&mem[1], 0, 8), with_bytes(pattern(1), 2, 2, 0xBEEF));
  CHECK_EQ_X(load_w(&mem[1], 2, 2), 0xBEEF);
  CHECK_EQ_X(load_w(&mem[1], 0, 4), bytes_of(with_bytes(pattern(1), 2, 2, 0xBEEF), 0, 4));
  CHECK_EQ_X(load_w(&mem[2], 0, 4), pattern(2) & 0xffffffffu);
  CHECK_EQ_X(load_w(&mem[2], 4, 4), 0xCAFEF00Du);
  CHECK_EQ_X(load_w(&mem[2], 0, 8), with_bytes(pattern(2), 4, 4, 0xCAFEF00Du));
}
TEST(flat_nesting_inner_writes_are_read_by_the_outer) {
  raw_init();
  reset_mem();
  CHECK_OK(sstm_run(NULL, outer, NULL));
  CHECK_EQ_X(mem[0], with_bytes(pattern(0), 0, 1, 0x5A));
  CHECK_EQ_X(mem[1], with_bytes(pattern(1), 2, 2, 0xBEEF));
  CHECK_EQ_X(mem[2], with_bytes(pattern(2), 4, 4, 0xCAFEF00Du));
  txh_cleanup();
  sstm_test_fini();
}

/* Read-modify-write of every float of two stripes, as STAMP's kmeans
 * updates its cluster centres: each read is a read after write of a held
 * stripe but the first of each stripe, each store merges or appends. */
static float centre[24] __attribute__((aligned(64)));
static uint32_t fbits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
static void rmw_floats(void *arg) {
  (void)arg;
  sstm_store_float(&centre[0], -1.0f); /* the first float: the lock */
  for (unsigned j = 1; j < 24; j++) {
    float x = sstm_load_float(&centre[j]);
    CHECK_EQ_X(fbits(x), fbits(0.5f * (float)j));
    sstm_store_float(&centre[j], x + (float)j);
    CHECK_EQ_X(fbits(sstm_load_float(&centre[j])), fbits(1.5f * (float)j));
    if (j % 2) /* the word's other float, written one step before */
      CHECK_EQ_X(fbits(sstm_load_float(&centre[j - 1])),
                 fbits(j == 1 ? -1.0f : 1.5f * (float)(j - 1)));
  }
}
TEST(float_read_modify_write_of_held_stripes) {
  raw_init();
  for (unsigned j = 0; j < 24; j++)
    centre[j] = 0.5f * (float)j;
  CHECK_OK(sstm_run(NULL, rmw_floats, NULL));
  CHECK_EQ_X(fbits(centre[0]), fbits(-1.0f));
  for (unsigned j = 1; j < 24; j++)
    CHECK_EQ_X(fbits(centre[j]), fbits(1.5f * (float)j));
  txh_cleanup();
  sstm_test_fini();
}

SSTM_TEST_MAIN()
