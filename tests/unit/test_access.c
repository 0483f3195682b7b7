/* SPDX-License-Identifier: MIT */
/* Unit tests: typed transactional loads and stores (8/16/32/64 bits,
 * pointers, bit-exact floats and doubles), sub-word stores sharing a word,
 * unaligned accesses crossing 8-byte boundaries, bulk copies. Every check is
 * made inside the transaction (read-your-own-writes), after commit (plain
 * memory), and in a later transaction. page_edges: accesses of every size
 * and alignment, typed and bulk, flush against an inaccessible page on
 * either side, so a load or store that touches a byte outside what it was
 * asked for faults. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../common/txhelp.h"

static uint32_t fbits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
static float bitsf(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static uint64_t dbits(double d) {
  uint64_t u;
  memcpy(&u, &d, 8);
  return u;
}
static double bitsd(uint64_t u) {
  double d;
  memcpy(&d, &u, 8);
  return d;
}

static struct {
  uint8_t u8;
  uint16_t u16;
  uint32_t u32;
  uint64_t u64;
  void *ptr;
  float f;
  double d;
  int8_t i8;
  int16_t i16;
  int32_t i32;
  int64_t i64;
} S;

TEST(typed_roundtrip) {
  sstm_test_init();
  static int target;
  memset(&S, 0, sizeof S);
  SSTM_ATOMIC_BEGIN(NULL)
    sstm_store_u8(&S.u8, 0xAB);
    sstm_store_u16(&S.u16, 0xBEEF);
    sstm_store_u32(&S.u32, 0xDEADBEEFu);
    sstm_store_u64(&S.u64, 0x0123456789ABCDEFull);
    sstm_store_ptr(&S.ptr, &target);
    sstm_store_float(&S.f, 1.5f);
    sstm_store_double(&S.d, -2.25);
    sstm_store_i8(&S.i8, -5);
    sstm_store_i16(&S.i16, -30000);
    sstm_store_i32(&S.i32, -2000000000);
    sstm_store_i64(&S.i64, -9000000000000000000ll);
    CHECK_EQ_X(sstm_load_u8(&S.u8), 0xAB);
    CHECK_EQ_X(sstm_load_u16(&S.u16), 0xBEEF);
    CHECK_EQ_X(sstm_load_u32(&S.u32), 0xDEADBEEFu);
    CHECK_EQ_X(sstm_load_u64(&S.u64), 0x0123456789ABCDEFull);
    CHECK_EQ_PTR(sstm_load_ptr(&S.ptr), &target);
    CHECK_EQ_X(fbits(sstm_load_float(&S.f)), fbits(1.5f));
    CHECK_EQ_X(dbits(sstm_load_double(&S.d)), dbits(-2.25));
    CHECK_EQ_I(sstm_load_i8(&S.i8), -5);
    CHECK_EQ_I(sstm_load_i16(&S.i16), -30000);
    CHECK_EQ_I(sstm_load_i32(&S.i32), -2000000000);
    CHECK_EQ_I(sstm_load_i64(&S.i64), -9000000000000000000ll);
    /* nothing reaches memory before commit (redo log) */
    CHECK_EQ_U(S.u64, 0);
    CHECK_EQ_U(S.u8, 0);
    CHECK_NULL(S.ptr);
  SSTM_ATOMIC_END();
  CHECK_EQ_X(S.u8, 0xAB);
  CHECK_EQ_X(S.u16, 0xBEEF);
  CHECK_EQ_X(S.u32, 0xDEADBEEFu);
  CHECK_EQ_X(S.u64, 0x0123456789ABCDEFull);
  CHECK_EQ_PTR(S.ptr, &target);
  CHECK_EQ_X(fbits(S.f), fbits(1.5f));
  CHECK_EQ_X(dbits(S.d), dbits(-2.25));
  CHECK_EQ_I(S.i8, -5);
  CHECK_EQ_I(S.i16, -30000);
  CHECK_EQ_I(S.i32, -2000000000);
  CHECK_EQ_I(S.i64, -9000000000000000000ll);
  /* and from committed memory in a new transaction */
  SSTM_ATOMIC_BEGIN(NULL)
    CHECK_EQ_X(sstm_load_u16(&S.u16), 0xBEEF);
    CHECK_EQ_X(sstm_load_u32(&S.u32), 0xDEADBEEFu);
    CHECK_EQ_PTR(sstm_load_ptr(&S.ptr), &target);
    CHECK_EQ_I(sstm_load_i8(&S.i8), -5);
  SSTM_ATOMIC_END();
  sstm_test_fini();
}

static const uint32_t FLOAT_PATTERNS[] = {
    0x7fc00000u, /* quiet NaN */
    0x7fc12345u, /* quiet NaN with payload */
    0x7f800001u, /* signalling NaN, smallest payload */
    0x7fa5a5a5u, /* signalling NaN with payload */
    0xffc0beefu, /* negative quiet NaN with payload */
    0xff812345u, /* negative signalling NaN */
    0x80000000u, /* -0.0 */
    0x00000000u, /* +0.0 */
    0x00000001u, /* smallest denormal */
    0x807fffffu, /* largest negative denormal */
    0x7f800000u, /* +inf */
    0xff800000u, /* -inf */
};
static const uint64_t DOUBLE_PATTERNS[] = {
    0x7ff8000000000000ull, 0x7ff8deadbeef1234ull, 0x7ff0000000000001ull, 0x7ff4000000000123ull,
    0xfff8000000000042ull, 0xfff0000000000007ull, 0x8000000000000000ull, 0x0000000000000000ull,
    0x0000000000000001ull, 0x800fffffffffffffull, 0x7ff0000000000000ull, 0xfff0000000000000ull,
};
#define NF (sizeof FLOAT_PATTERNS / sizeof FLOAT_PATTERNS[0])
#define ND (sizeof DOUBLE_PATTERNS / sizeof DOUBLE_PATTERNS[0])
static float fa[NF];
static double da[ND];

TEST(float_double_bit_exact) {
  sstm_test_init();
  for (size_t i = 0; i < NF; i++)
    fa[i] = 3.0f;
  for (size_t i = 0; i < ND; i++)
    da[i] = 3.0;
  SSTM_ATOMIC_BEGIN(NULL)
    for (size_t i = 0; i < NF; i++)
      sstm_store_float(&fa[i], bitsf(FLOAT_PATTERNS[i]));
    for (size_t i = 0; i < ND; i++)
      sstm_store_double(&da[i], bitsd(DOUBLE_PATTERNS[i]));
    for (size_t i = 0; i < NF; i++)
      CHECK_EQ_X(fbits(sstm_load_float(&fa[i])), FLOAT_PATTERNS[i]);
    for (size_t i = 0; i < ND; i++)
      CHECK_EQ_X(dbits(sstm_load_double(&da[i])), DOUBLE_PATTERNS[i]);
  SSTM_ATOMIC_END();
  for (size_t i = 0; i < NF; i++)
    CHECK_EQ_X(fbits(fa[i]), FLOAT_PATTERNS[i]);
  for (size_t i = 0; i < ND; i++)
    CHECK_EQ_X(dbits(da[i]), DOUBLE_PATTERNS[i]);
  /* load committed NaNs/-0.0 in a fresh transaction (not from the log) */
  SSTM_ATOMIC_BEGIN(NULL)
    for (size_t i = 0; i < NF; i++)
      CHECK_EQ_X(fbits(sstm_load_float(&fa[i])), FLOAT_PATTERNS[i]);
    for (size_t i = 0; i < ND; i++)
      CHECK_EQ_X(dbits(sstm_load_double(&da[i])), DOUBLE_PATTERNS[i]);
  SSTM_ATOMIC_END();
  /* float next to float in one word: neighbours keep their bits */
  static float pair[2] __attribute__((aligned(8)));
  pair[0] = bitsf(0x7fa00001u);
  pair[1] = bitsf(0x80000000u);
  SSTM_ATOMIC_BEGIN(NULL)
    sstm_store_float(&pair[1], bitsf(0xffc00002u));
    CHECK_EQ_X(fbits(sstm_load_float(&pair[0])), 0x7fa00001u);
    CHECK_EQ_X(sstm_load_u64((const uint64_t *)(void *)pair),
               (0xffc00002ull << 32) | 0x7fa00001ull);
  SSTM_ATOMIC_END();
  CHECK_EQ_X(fbits(pair[0]), 0x7fa00001u);
  CHECK_EQ_X(fbits(pair[1]), 0xffc00002u);
  sstm_test_fini();
}

static unsigned char buf[256] __attribute__((aligned(64)));

static void fill_pattern(unsigned char *p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++)
    p[i] = (unsigned char)(seed * 31 + i * 7 + 1);
}

static uint64_t le_bytes(const unsigned char *p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; i--)
    v = (v << 8) | p[i];
  return v;
}

TEST(subword_stores_share_a_word) {
  sstm_test_init();
  unsigned char expect[16];
  fill_pattern(buf, 16, 1);
  memcpy(expect, buf, 16);
  SSTM_ATOMIC_BEGIN(NULL)
    sstm_store_u8(&buf[0], 0xA0);
    sstm_store_u8(&buf[1], 0xA1);
    sstm_store_u16((uint16_t *)(void *)&buf[2], 0xB3B2);
    sstm_store_u32((uint32_t *)(void *)&buf[4], 0xC7C6C5C4u);
    CHECK_EQ_X(sstm_load_u64((const uint64_t *)(void *)buf), 0xC7C6C5C4B3B2A1A0ull);
    CHECK_EQ_X(sstm_load_u8(&buf[1]), 0xA1);
    CHECK_EQ_X(sstm_load_u16((const uint16_t *)(void *)&buf[2]), 0xB3B2);
    /* second word: only bytes 9 and 14 are written; the rest must merge
     * with memory */
    sstm_store_u8(&buf[9], 0x99);
    sstm_store_u8(&buf[14], 0xEE);
    unsigned char w2[8];
    memcpy(w2, expect + 8, 8);
    w2[1] = 0x99;
    w2[6] = 0xEE;
    CHECK_EQ_X(sstm_load_u64((const uint64_t *)(void *)&buf[8]), le_bytes(w2, 8));
    CHECK_EQ_X(sstm_load_u32((const uint32_t *)(void *)&buf[12]), le_bytes(w2 + 4, 4));
  SSTM_ATOMIC_END();
  expect[0] = 0xA0;
  expect[1] = 0xA1;
  expect[2] = 0xB2;
  expect[3] = 0xB3;
  expect[4] = 0xC4;
  expect[5] = 0xC5;
  expect[6] = 0xC6;
  expect[7] = 0xC7;
  expect[9] = 0x99;
  expect[14] = 0xEE;
  CHECK_EQ_MEM(buf, expect, 16);

  /* full word then a byte inside it, and a byte then the full word */
  SSTM_ATOMIC_BEGIN(NULL)
    sstm_store_u64((uint64_t *)(void *)buf, 0x1111111111111111ull);
    sstm_store_u8(&buf[3], 0x33);
    CHECK_EQ_X(sstm_load_u64((const uint64_t *)(void *)buf), 0x1111111133111111ull);
    sstm_store_u8(&buf[8], 0x44);
    sstm_store_u64((uint64_t *)(void *)&buf[8], 0x2222222222222222ull);
    CHECK_EQ_X(sstm_load_u8(&buf[8]), 0x22);
    sstm_store_u16((uint16_t *)(void *)&buf[14], 0x5555);
    CHECK_EQ_X(sstm_load_u64((const uint64_t *)(void *)&buf[8]), 0x5555222222222222ull);
  SSTM_ATOMIC_END();
  CHECK_EQ_X(le_bytes(buf, 8), 0x1111111133111111ull);
  CHECK_EQ_X(le_bytes(buf + 8, 8), 0x5555222222222222ull);
  sstm_test_fini();
}

/* Read after write, every case of the owned-stripe path (the inline
 * barriers answer it in the caller, the others in the library): many words
 * written then read back (the redo log's index probes past collisions), an
 * unwritten word of a stripe the attempt holds (from memory), partial words
 * (log and memory merged), and the same after a restart, whose index must
 * not answer with the first attempt's entries. */
static uint64_t raw_words[512] __attribute__((aligned(64)));
static volatile int raw_attempts;
TEST(read_after_write_owned_stripes) {
  sstm_test_init();
  for (unsigned i = 0; i < 512; i++)
    raw_words[i] = 1000 + i;
  raw_attempts = 0;
  SSTM_ATOMIC_BEGIN(NULL)
    int a = ++raw_attempts;
    /* every other word: the words between share the written words' stripes */
    for (unsigned i = 0; i < 512; i += 2)
      sstm_store_u64(&raw_words[i], (uint64_t)a * 100000 + i);
    for (unsigned i = 0; i < 512; i++)
      CHECK_EQ_U(sstm_load_u64(&raw_words[i]), i % 2 ? 1000 + i : (uint64_t)a * 100000 + i);
    /* a word of which only the low half was written */
    sstm_store_u32((uint32_t *)(void *)&raw_words[1], 0xABCDu);
    CHECK_EQ_X(sstm_load_u64(&raw_words[1]), (1001ull & 0xffffffff00000000ull) | 0xABCDu);
    CHECK_EQ_X(sstm_load_u32((const uint32_t *)(void *)&raw_words[1]), 0xABCDu);
    CHECK_EQ_X(sstm_load_u16((const uint16_t *)(void *)&raw_words[1]), 0xABCDu);
    CHECK_EQ_X(sstm_load_u32((const uint32_t *)(void *)&raw_words[1] + 1), 0u);
    if (a == 1) sstm_restart(); /* the second attempt writes other values */
  SSTM_ATOMIC_END();
  CHECK_EQ_I(raw_attempts, 2);
  for (unsigned i = 0; i < 512; i++)
    CHECK_EQ_U(raw_words[i], i == 1 ? 0xABCDu : i % 2 ? 1000 + i : 200000 + i);
  /* a new transaction reads memory, not the last attempt's log */
  SSTM_ATOMIC_BEGIN(NULL)
    CHECK_EQ_U(sstm_load_u64(&raw_words[2]), 200002);
    sstm_store_u64(&raw_words[3], 7);
    CHECK_EQ_U(sstm_load_u64(&raw_words[3]), 7);
    CHECK_EQ_U(sstm_load_u64(&raw_words[2]), 200002);
  SSTM_ATOMIC_END();
  sstm_test_fini();
}

/* A sub-word store must publish only its own bytes: a concurrent committed
 * store to another byte of the same word is not lost (CTL defers locking
 * to commit, so the write set must carry byte masks). */
static void store_byte1(void *arg) {
  (void)arg;
  sstm_store_u8(&buf[1], 0xBB);
}
TEST(subword_store_keeps_concurrent_neighbour) {
  sstm_test_init();
  memset(buf, 0, 16);
  if (sstm_test_design() == SSTM_DESIGN_ETL) {
    /* ETL: the suspended writer locks the word; the other one would conflict
     * forever. Commit the other one first instead and check the merge. */
    SSTM_ATOMIC_BEGIN(NULL)
      CHECK_OK(run_other(NULL, store_byte1, NULL));
      sstm_store_u8(&buf[0], 0xAA);
    SSTM_ATOMIC_END();
  } else {
    SSTM_ATOMIC_BEGIN(NULL)
      sstm_store_u8(&buf[0], 0xAA);
      CHECK_OK(run_other(NULL, store_byte1, NULL));
    SSTM_ATOMIC_END();
  }
  CHECK_EQ_X(buf[0], 0xAA);
  CHECK_EQ_X(buf[1], 0xBB);
  CHECK_EQ_X(le_bytes(buf, 8), 0xBBAA);
  txh_cleanup();
  sstm_test_fini();
}

static void unaligned_case(int n, int off) {
  unsigned char before[64];
  fill_pattern(buf, 64, (unsigned)(off + n));
  memcpy(before, buf, 64);
  uint64_t v = 0xF1E2D3C4B5A69788ull >> (8 * (8 - n));
  v ^= (uint64_t)off;
  void *p = &buf[off];
  unsigned char exp[64];
  memcpy(exp, before, 64);
  for (int i = 0; i < n; i++)
    exp[off + i] = (unsigned char)(v >> (8 * i));
  int w0 = off / 8 * 8;
  SSTM_ATOMIC_BEGIN(NULL)
    /* read first (committed bytes), then write, then read back */
    uint64_t old = n == 2 ? sstm_load_u16(p) : n == 4 ? sstm_load_u32(p) : sstm_load_u64(p);
    CHECK_EQ_X(old, le_bytes(before + off, n));
    if (n == 2)
      sstm_store_u16(p, (uint16_t)v);
    else if (n == 4)
      sstm_store_u32(p, (uint32_t)v);
    else
      sstm_store_u64(p, v);
    uint64_t got = n == 2 ? sstm_load_u16(p) : n == 4 ? sstm_load_u32(p) : sstm_load_u64(p);
    CHECK_EQ_X(got, v);
    /* the aligned words around it merge log and memory */
    CHECK_EQ_X(sstm_load_u64((const uint64_t *)(void *)&buf[w0]), le_bytes(exp + w0, 8));
    CHECK_EQ_X(sstm_load_u64((const uint64_t *)(void *)&buf[w0 + 8]), le_bytes(exp + w0 + 8, 8));
  SSTM_ATOMIC_END();
  if (memcmp(buf, exp, 64) != 0) FAIL("size %d offset %d: memory after commit differs", n, off);
}

TEST(unaligned_crossing_words) {
  sstm_test_init();
  static const int sizes[] = {2, 4, 8};
  for (int si = 0; si < 3; si++)
    for (int off = 1; off < 24; off++)
      if (off % sizes[si] != 0) /* aligned: covered elsewhere */
        unaligned_case(sizes[si], off);
  sstm_test_fini();
}

TEST(unaligned_double_and_ptr) {
  sstm_test_init();
  memset(buf, 0, 64);
  double *dp = (double *)(void *)&buf[13];
  void **pp = (void **)(void *)&buf[29];
  float *fp = (float *)(void *)&buf[6];
  SSTM_ATOMIC_BEGIN(NULL)
    sstm_store_double(dp, bitsd(0x7ff4000000000123ull));
    sstm_store_ptr(pp, (void *)buf);
    sstm_store_float(fp, bitsf(0xff812345u));
    CHECK_EQ_X(dbits(sstm_load_double(dp)), 0x7ff4000000000123ull);
    CHECK_EQ_PTR(sstm_load_ptr(pp), buf);
    CHECK_EQ_X(fbits(sstm_load_float(fp)), 0xff812345u);
  SSTM_ATOMIC_END();
  uint64_t d;
  memcpy(&d, &buf[13], 8);
  CHECK_EQ_X(d, 0x7ff4000000000123ull);
  void *p;
  memcpy(&p, &buf[29], sizeof p);
  CHECK_EQ_PTR(p, buf);
  uint32_t f;
  memcpy(&f, &buf[6], 4);
  CHECK_EQ_X(f, 0xff812345u);
  sstm_test_fini();
}

/* One typed access of `size` bytes at p (float and double through their
 * own calls when fp: a float is a 4-byte access, a double an 8-byte one). */
struct edge {
  unsigned char *p;
  unsigned size;
  bool fp;
  uint64_t v, got;
};

static uint64_t edge_load(const struct edge *e) {
  switch (e->size) {
  case 1: return sstm_load_u8(e->p);
  case 2: return sstm_load_u16((uint16_t *)(void *)e->p);
  case 4:
    return e->fp ? fbits(sstm_load_float((float *)(void *)e->p))
                 : sstm_load_u32((uint32_t *)(void *)e->p);
  default:
    return e->fp ? dbits(sstm_load_double((double *)(void *)e->p))
                 : sstm_load_u64((uint64_t *)(void *)e->p);
  }
}

static void edge_store_load(void *arg) {
  struct edge *e = arg;
  switch (e->size) {
  case 1: sstm_store_u8(e->p, (uint8_t)e->v); break;
  case 2: sstm_store_u16((uint16_t *)(void *)e->p, (uint16_t)e->v); break;
  case 4:
    if (e->fp)
      sstm_store_float((float *)(void *)e->p, bitsf((uint32_t)e->v));
    else
      sstm_store_u32((uint32_t *)(void *)e->p, (uint32_t)e->v);
    break;
  default:
    if (e->fp)
      sstm_store_double((double *)(void *)e->p, bitsd(e->v));
    else
      sstm_store_u64((uint64_t *)(void *)e->p, e->v);
    break;
  }
  e->got = edge_load(e); /* its own write */
}

static void edge_read(void *arg) {
  struct edge *e = arg;
  e->got = edge_load(e);
}

/* Store, read back in the transaction, then in a declared and a detected
 * read-only one, and check memory. */
static void edge_case(unsigned char *p, unsigned size, bool fp, uint64_t v) {
  struct edge e = {.p = p, .size = size, .fp = fp, .v = v};
  uint64_t want = size == 8 ? v : v & ((1ull << (8 * size)) - 1);
  CHECK_OK(sstm_run(NULL, edge_store_load, &e));
  CHECK_EQ_X(e.got, want);
  uint64_t mem = 0;
  memcpy(&mem, p, size);
  CHECK_EQ_X(mem, want);
  for (int ro = 0; ro < 2; ro++) {
    sstm_attr_t a = {.read_only = ro};
    e.got = 0;
    CHECK_OK(sstm_run(&a, edge_read, &e));
    CHECK_EQ_X(e.got, want);
  }
}

struct edge_bulk {
  unsigned char *at;
  const unsigned char *src; /* NULL: read only */
  unsigned char *back;
  size_t n;
};

static void edge_bulk_fn(void *arg) {
  struct edge_bulk *b = arg;
  if (b->src) sstm_store_bytes(b->at, b->src, b->n);
  memset(b->back, 0, b->n);
  sstm_load_bytes(b->back, b->at, b->n);
}

TEST(page_edges) {
  sstm_test_init();
  size_t pg = (size_t)sysconf(_SC_PAGESIZE);
  unsigned char *m = mmap(NULL, 3 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK_TRUE(m != MAP_FAILED);
  CHECK_EQ_I(mprotect(m, pg, PROT_NONE), 0);
  CHECK_EQ_I(mprotect(m + 2 * pg, pg, PROT_NONE), 0);
  unsigned char *lo = m + pg, *hi = m + 2 * pg; /* [lo, hi) is accessible */
  static const unsigned sizes[] = {1, 2, 4, 8};
  uint64_t v = 0x8877665544332211ull;
  for (int si = 0; si < 4; si++) {
    unsigned size = sizes[si];
    for (unsigned k = 0; k < 9; k++) { /* aligned (k = 0, 8) and not */
      for (int fp = 0; fp <= (size >= 4); fp++) {
        v = v * 6364136223846793005ull + 1442695040888963407ull;
        edge_case(lo + k, size, fp, v);             /* the first bytes of the page */
        edge_case(hi - size - k, size, fp, v >> 3); /* the last bytes */
      }
    }
  }
  /* bulk copies that start or end exactly at the edges */
  unsigned char src[48], back[48];
  for (size_t n = 1; n <= sizeof src; n++) {
    fill_pattern(src, n, (unsigned)n);
    unsigned char *at[2] = {lo, hi - n};
    for (int e = 0; e < 2; e++) {
      struct edge_bulk b = {.at = at[e], .src = src, .back = back, .n = n};
      CHECK_OK(sstm_run(NULL, edge_bulk_fn, &b));
      CHECK_EQ_MEM(back, src, n);
      CHECK_EQ_MEM(at[e], src, n);
      b.src = NULL;
      sstm_attr_t ro = {.read_only = true};
      CHECK_OK(sstm_run(&ro, edge_bulk_fn, &b));
      CHECK_EQ_MEM(back, src, n);
    }
  }
  CHECK_EQ_I(munmap(m, 3 * pg), 0);
  sstm_test_fini();
}

static void bulk_case(size_t si, size_t n, size_t off) {
  unsigned char src[160], back[160], before[256];
  fill_pattern(buf, sizeof buf, (unsigned)(si * 16 + off));
  memcpy(before, buf, sizeof buf);
  fill_pattern(src, sizeof src, (unsigned)(1000 + si * 16 + off));
  memset(back, 0, sizeof back);
  size_t at = 40 + off;
  SSTM_ATOMIC_BEGIN(NULL)
    /* read the committed bytes first */
    sstm_load_bytes(back, &buf[at], n);
    CHECK_EQ_MEM(back, &before[at], n);
    sstm_store_bytes(&buf[at], src, n);
    memset(back, 0, sizeof back);
    sstm_load_bytes(back, &buf[at], n);
    CHECK_EQ_MEM(back, src, n);
    /* a wider read straddling both ends merges log and memory */
    unsigned char wide[180];
    sstm_load_bytes(wide, &buf[at - 3], n + 6);
    CHECK_EQ_MEM(wide, &before[at - 3], 3);
    CHECK_EQ_MEM(wide + 3, src, n);
    CHECK_EQ_MEM(wide + 3 + n, &before[at + n], 3);
    if (n > 0) CHECK_EQ_X(sstm_load_u8(&buf[at + n - 1]), src[n - 1]);
  SSTM_ATOMIC_END();
  unsigned char exp[256];
  memcpy(exp, before, sizeof exp);
  memcpy(exp + at, src, n);
  if (memcmp(buf, exp, sizeof buf) != 0)
    FAIL("bulk store of %zu bytes at offset %zu: memory differs", n, at);
}

TEST(bulk_copies_odd_sizes_offsets) {
  sstm_test_init();
  static const size_t sizes[] = {0,  1,  2,  3,  5,  7,  8,  9,  13,  15,
                                 16, 17, 24, 31, 33, 63, 64, 65, 100, 129};
  for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
    for (size_t off = 0; off < 10; off++)
      bulk_case(si, sizes[si], off);
  sstm_test_fini();
}

TEST(bulk_then_words_overlap) {
  sstm_test_init();
  fill_pattern(buf, 64, 9);
  unsigned char exp[64];
  memcpy(exp, buf, 64);
  unsigned char src[20];
  fill_pattern(src, 20, 77);
  SSTM_ATOMIC_BEGIN(NULL)
    sstm_store_bytes(&buf[5], src, 20);                                  /* bytes 5..24 */
    sstm_store_u64((uint64_t *)(void *)&buf[16], 0x0807060504030201ull); /* 16..23 */
    sstm_store_u8(&buf[4], 0xFE);
    unsigned char got[32];
    sstm_load_bytes(got, &buf[0], 32);
    unsigned char e[32];
    memcpy(e, exp, 32);
    memcpy(e + 5, src, 20);
    for (int i = 0; i < 8; i++)
      e[16 + i] = (unsigned char)(i + 1);
    e[4] = 0xFE;
    CHECK_EQ_MEM(got, e, 32);
  SSTM_ATOMIC_END();
  memcpy(exp + 5, src, 20);
  for (int i = 0; i < 8; i++)
    exp[16 + i] = (unsigned char)(i + 1);
  exp[4] = 0xFE;
  CHECK_EQ_MEM(buf, exp, 64);
  sstm_test_fini();
}

static volatile int attempts;
TEST(bulk_and_subword_rollback) {
  sstm_test_init();
  fill_pattern(buf, 64, 3);
  unsigned char exp[64];
  memcpy(exp, buf, 64);
  attempts = 0;
  SSTM_ATOMIC_BEGIN(NULL)
    attempts++;
    if (attempts == 1) {
      unsigned char junk[33];
      memset(junk, 0xCC, sizeof junk);
      sstm_store_bytes(&buf[3], junk, sizeof junk);
      sstm_store_u16((uint16_t *)(void *)&buf[47], 0xDDDD);
      sstm_restart();
    }
    unsigned char got[64];
    sstm_load_bytes(got, buf, 64);
    CHECK_EQ_MEM(got, exp, 64); /* the aborted attempt's log is gone */
  SSTM_ATOMIC_END();
  CHECK_EQ_I(attempts, 2);
  CHECK_EQ_MEM(buf, exp, 64);
  sstm_test_fini();
}

/* More reads than the read set's initial capacity (it grows twice while
 * the fast path appends), then a commit by another transaction changes the
 * last word read, which lives in the grown array. Reading a word newer
 * than the snapshot makes the attempt validate every entry: it must fail
 * on that last one and start over. */
enum { NBIG = 3 * 4096 };
static uint64_t big[NBIG + 1][4]; /* one word per 32-byte stripe */

static void bump_last_and_tail(void *p) {
  (void)p;
  sstm_store_u64(&big[NBIG - 1][0], sstm_load_u64(&big[NBIG - 1][0]) + 1);
  sstm_store_u64(&big[NBIG][0], 7);
}

/* Out of line: run_other's checks must not sit inside the atomic block. */
static __attribute__((noinline)) int bump_in_other(void) {
  return run_other(NULL, bump_last_and_tail, NULL);
}

static volatile int other_rc = -1;
static volatile uint64_t sum, tail; /* written inside the atomic block */
TEST(grown_read_set_is_validated) {
  sstm_test_init();
  for (uint64_t i = 0; i <= NBIG; i++)
    big[i][0] = i;
  attempts = 0;
  SSTM_ATOMIC_BEGIN(NULL)
    attempts++;
    uint64_t acc = 0;
    for (unsigned i = 0; i < NBIG; i++)
      acc += sstm_load_u64(&big[i][0]);
    sum = acc;
    if (attempts == 1) other_rc = bump_in_other();
    tail = sstm_load_u64(&big[NBIG][0]);
  SSTM_ATOMIC_END();
  CHECK_EQ_I(other_rc, 0);
  CHECK_EQ_I(attempts, 2);
  CHECK_EQ_U(tail, 7);
  CHECK_EQ_U(sum, (uint64_t)NBIG * (NBIG - 1) / 2 + 1);
  txh_cleanup();
  sstm_test_fini();
}

/* A bulk read takes one barrier per stripe when it can: the stripe it read
 * must still be in the read set. The copy spans two stripes; another
 * transaction then changes a word of the second, and a read newer than the
 * snapshot makes the attempt validate: it must start over and copy the new
 * value. */
static _Alignas(64) uint64_t blk[8];
static uint64_t blk_tail[4];

static void bump_blk(void *p) {
  (void)p;
  sstm_store_u64(&blk[5], sstm_load_u64(&blk[5]) + 100);
  sstm_store_u64(&blk_tail[0], 9);
}

static __attribute__((noinline)) int bump_blk_in_other(void) {
  return run_other(NULL, bump_blk, NULL);
}

static volatile uint64_t copy5, copy0, tail2;
TEST(bulk_read_is_validated_per_stripe) {
  sstm_test_init();
  for (unsigned i = 0; i < 8; i++)
    blk[i] = i;
  blk_tail[0] = 0;
  attempts = 0;
  other_rc = -1;
  SSTM_ATOMIC_BEGIN(NULL)
    attempts++;
    uint64_t c[8];
    sstm_load_bytes(c, blk, sizeof c);
    copy0 = c[0];
    copy5 = c[5];
    if (attempts == 1) other_rc = bump_blk_in_other();
    tail2 = sstm_load_u64(&blk_tail[0]);
  SSTM_ATOMIC_END();
  CHECK_EQ_I(other_rc, 0);
  CHECK_EQ_I(attempts, 2);
  CHECK_EQ_U(copy0, 0);
  CHECK_EQ_U(copy5, 105);
  CHECK_EQ_U(tail2, 9);
  txh_cleanup();
  sstm_test_fini();
}

/* Without a descriptor (detached, or never registered) a load is misuse,
 * reported once, through the fast path's static "no descriptor" prefix as
 * well as through the call. */
static int nmisuse;
static void count_misuse(const char *msg) {
  (void)msg;
  nmisuse++;
}

TEST(load_without_descriptor_is_misuse) {
  sstm_test_init();
  sstm_misuse_fn prev = sstm_set_misuse_handler(count_misuse);
  nmisuse = 0;
  S.u64 = 42;
  CHECK_EQ_U(sstm_load_u64(&S.u64), 0); /* registered, outside a transaction */
  CHECK_EQ_I(nmisuse, 1);
  sstm_desc_t *mine = sstm_desc_detach();
  CHECK_NOT_NULL(mine);
  CHECK_EQ_U(sstm_load_u64(&S.u64), 0);
  CHECK_NULL(sstm_load_ptr(&S.ptr));
  CHECK_EQ_I(nmisuse, 3);
  CHECK_OK(sstm_desc_attach(mine));
  CHECK_EQ_U(tx_load_u64(&S.u64), 42); /* and the fast path works again */
  CHECK_EQ_I(nmisuse, 3);
  sstm_set_misuse_handler(prev);
  sstm_test_fini();
}

/* Mutation round 7: m50: load_stripe accepting an unlocked stripe whose version
 * is newer than the snapshot (`if (sstm_lw_locked(l))` for `if (l > tx->end)`).
 * The bulk read then returns bytes from after the snapshot next to a value
 * read before it: an opacity violation inside the attempt, and for a
 * declared read-only transaction (no read set, it commits at `end`) a
 * committed inconsistent view. The seam tests cover a commit inside the
 * read's window, bulk_read_is_validated_per_stripe a change after the read;
 * nothing covered a stripe already newer when the bulk read starts. */
static uint64_t bn_z[8] __attribute__((aligned(64)));
static uint64_t bn_pair[2] __attribute__((aligned(64))); /* one stripe (>= 16 bytes) */
static int bn_attempts;

static void bn_commit(void *arg) {
  (void)arg;
  sstm_store_u64(&bn_z[0], 1);
  sstm_store_u64(&bn_pair[0], 1);
  sstm_store_u64(&bn_pair[1], 1);
}

static void bn_body(void *arg) {
  uint64_t *seen = arg;
  int k = ++bn_attempts;
  uint64_t z = sstm_load_u64(&bn_z[0]);
  if (k == 1) CHECK_OK(run_other(NULL, bn_commit, NULL)); /* z and the pair now newer */
  uint64_t p[2];
  sstm_load_bytes(p, bn_pair, sizeof p);
  CHECK_MSG(p[0] == z && p[1] == z, "attempt %d: z = %llu but the pair = {%llu, %llu}", k,
            (unsigned long long)z, (unsigned long long)p[0], (unsigned long long)p[1]);
  seen[0] = z, seen[1] = p[0];
}

TEST(bulk_read_of_a_newer_stripe_is_not_returned_stale_mix) {
  sstm_test_init();
  for (int ro = 0; ro < 2; ro++) {
    bn_z[0] = bn_pair[0] = bn_pair[1] = 0;
    bn_attempts = 0;
    uint64_t seen[2] = {9, 9};
    sstm_attr_t a = {.read_only = ro != 0};
    CHECK_OK(sstm_run(&a, bn_body, seen));
    CHECK_EQ_I(bn_attempts, 2); /* the first attempt cannot extend (z changed) */
    CHECK_EQ_U(seen[0], 1);
    CHECK_EQ_U(seen[1], 1);
  }
  txh_cleanup();
  sstm_test_fini();
}

SSTM_TEST_MAIN()
