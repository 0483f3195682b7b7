/* SPDX-License-Identifier: MIT */
/* Integration: sub-word and unaligned stores from different threads into
 * the same words. Each thread owns a lane (some bytes) of every word of a
 * small array and increments its lane transactionally; lanes of different
 * threads share words (and lock stripes), so a commit that wrote back a
 * whole word, or merged bytes wrongly, loses another thread's increments.
 *   u8     8 threads, lane = byte t of each 8-byte word
 *   u16    4 threads, lane = halfword t
 *   bytes  8 threads, lane = 3 bytes at offset 3t + 1 of a 32-byte group,
 *          crossing 8-byte boundaries, accessed with load/store_bytes
 * Some transactions also read whole words (mixing granularities).
 *
 * usage: lanes DESIGN MODE [--ops N]
 */
#define _GNU_SOURCE
#include "common_int.h"

#define NWORDS 16
static unsigned char area[NWORDS * 32] __attribute__((aligned(64)));
static uint32_t counts[8][NWORDS]; /* per thread, per word: increments */
static long ops_per_thread;
static int mode; /* 0 u8, 1 u16, 2 bytes */

struct inc {
  unsigned t, w;
  bool wide;
};

static void inc_fn(void *p) {
  struct inc *x = p;
  if (x->wide) /* read the whole word(s) first: mixes granularities */
    for (unsigned i = 0; i < (mode == 2 ? 4u : 1u); i++)
      (void)sstm_load_u64((const uint64_t *)(void *)&area[x->w * (mode == 2 ? 32 : 8) + 8 * i]);
  if (mode == 0) {
    uint8_t *a = &area[x->w * 8 + x->t];
    sstm_store_u8(a, (uint8_t)(sstm_load_u8(a) + 1));
  } else if (mode == 1) {
    uint16_t *a = (uint16_t *)(void *)&area[x->w * 8 + 2 * x->t];
    sstm_store_u16(a, (uint16_t)(sstm_load_u16(a) + 1));
  } else {
    unsigned char *a = &area[x->w * 32 + 3 * x->t + 1];
    unsigned char v[3];
    sstm_load_bytes(v, a, 3);
    uint32_t n = (uint32_t)v[0] | (uint32_t)v[1] << 8 | (uint32_t)v[2] << 16;
    n++;
    v[0] = (unsigned char)n;
    v[1] = (unsigned char)(n >> 8);
    v[2] = (unsigned char)(n >> 16);
    sstm_store_bytes(a, v, 3);
  }
}

static void worker(sstm_tt_t *t) {
  for (long i = 0; i < ops_per_thread; i++) {
    uint64_t r = sstm_rng_next(&t->rng);
    struct inc x = {t->idx, (unsigned)(r % NWORDS), (r >> 32) % 4 == 0};
    CHECK_OK(sstm_run(NULL, inc_fn, &x));
    counts[t->idx][x.w]++;
  }
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s DESIGN u8|u16|bytes [--ops N]\n", argv[0]);
    return 2;
  }
  char name[128];
  snprintf(name, sizeof name, "lanes.%s.%s", argv[1], argv[2]);
  sstm_test_setup(name, argc, argv);
  sstm_design_t design = int_parse_design(argv[1]);
  unsigned threads;
  if (strcmp(argv[2], "u8") == 0) {
    mode = 0;
    threads = 8;
  } else if (strcmp(argv[2], "u16") == 0) {
    mode = 1;
    threads = 4;
  } else if (strcmp(argv[2], "bytes") == 0) {
    mode = 2;
    threads = 8;
  } else {
    fprintf(stderr, "bad mode\n");
    return 2;
  }
  ops_per_thread =
      int_opt(argc, argv, "--ops", (long)sstm_test_scaled(500000, 2000)) / (long)threads;
  /* guard bytes: everything outside the lanes must stay 0xA5 */
  memset(area, 0xA5, sizeof area);
  for (unsigned w = 0; w < NWORDS; w++)
    for (unsigned t = 0; t < threads; t++) {
      if (mode == 0)
        area[w * 8 + t] = 0;
      else if (mode == 1)
        area[w * 8 + 2 * t] = area[w * 8 + 2 * t + 1] = 0;
      else
        memset(&area[w * 32 + 3 * t + 1], 0, 3);
    }
  int_init(design, NULL);
  sstm_test_run_threads(threads, true, worker, NULL);
  for (unsigned w = 0; w < NWORDS; w++) {
    for (unsigned t = 0; t < threads; t++) {
      uint32_t got, want = counts[t][w];
      if (mode == 0) {
        got = area[w * 8 + t];
        want &= 0xff;
      } else if (mode == 1) {
        got = (uint32_t)area[w * 8 + 2 * t] | (uint32_t)area[w * 8 + 2 * t + 1] << 8;
        want &= 0xffff;
      } else {
        const unsigned char *a = &area[w * 32 + 3 * t + 1];
        got = (uint32_t)a[0] | (uint32_t)a[1] << 8 | (uint32_t)a[2] << 16;
        want &= 0xffffff;
      }
      CHECK_MSG(got == want, "word %u lane %u: %u increments, memory says %u", w, t, want, got);
    }
    if (mode == 2) {
      CHECK_EQ_X(area[w * 32], 0xA5);
      for (unsigned i = 3 * threads + 1; i < 32; i++)
        CHECK_EQ_X(area[w * 32 + i], 0xA5);
    }
  }
  CHECK_OK(sstm_shutdown());
  printf("PASS %s\n", name);
  return 0;
}
