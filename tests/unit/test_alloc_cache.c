/* SPDX-License-Identifier: MIT */
/* Unit tests: the block cache (cfg.alloc_cache, src/core/reclaim.c).
 *
 * A small block released by the library (grace period over, or allocated
 * by an aborted attempt) goes to the releasing thread's cache, and that
 * thread's sstm_malloc/sstm_calloc serve from it. The counting allocator
 * (malloc_count.c) tracks blocks of one request size, so the tests see
 * whether a release reached free() or the cache, and whether a block served
 * came from malloc(). Every test sets alloc_cache itself: the default is 0
 * under ASan. */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "../common/malloc_count.h"
#include "../common/txhelp.h"

#define BSIZE 200 /* tracked: nothing else in the test asks for 200 bytes */
#define NBLK 1024 /* one reclamation batch: its commit closes it */

static void *blocks[NBLK];

static void init_with_cache(size_t bytes) {
  if (!mc_available()) sstm_test_skip("needs the counting allocator");
  mc_track_sizes(BSIZE, BSIZE + 1);
  sstm_config_t c;
  sstm_test_config(&c);
  c.alloc_cache = bytes;
  CHECK_OK(sstm_init(&c));
  CHECK_OK(sstm_thread_init());
}

static void free_all_blocks(void *arg) {
  (void)arg;
  for (int i = 0; i < NBLK; i++)
    sstm_free(blocks[i]);
}

/* NBLK tracked blocks from malloc, then freed by one committed transaction:
 * its commit closes the batch, and with no other attempt running the
 * grace period is over at once, so the batch is released there. */
static void allocate_and_release_a_batch(void) {
  for (int i = 0; i < NBLK; i++) {
    blocks[i] = sstm_malloc(BSIZE);
    CHECK_NOT_NULL(blocks[i]);
    memset(blocks[i], 0xff, BSIZE);
  }
  CHECK_OK(sstm_run(NULL, free_all_blocks, NULL));
}

static bool was_released(const void *p) {
  for (int i = 0; i < NBLK; i++)
    if (blocks[i] == p) return true;
  return false;
}

/* What the cache counts for one block of BSIZE bytes. */
static size_t cached_bytes_per_block(void) {
  void *probe = malloc(BSIZE);
  size_t n = malloc_usable_size(probe) / 8 * 8;
  free(probe);
  return n;
}

/* Two rounds with a cache of exactly one batch: each time the whole batch
 * goes in and comes back out (a count that forgot the blocks taken out
 * would refuse the second round). */
TEST(released_blocks_serve_the_next_mallocs) {
  init_with_cache(NBLK * cached_bytes_per_block());
  allocate_and_release_a_batch();
  for (int round = 0; round < 2; round++) {
    CHECK_EQ_I(mc_live(), NBLK); /* in the cache, not freed */
    CHECK_EQ_I(mc_tracked_total(), NBLK);
    static void *again[NBLK];
    for (int i = 0; i < NBLK; i++) {
      again[i] = sstm_malloc(BSIZE);
      CHECK_MSG(was_released(again[i]), "block %d (%p) did not come from the cache", i, again[i]);
      for (int j = 0; j < i; j++)
        CHECK_MSG(again[j] != again[i], "block %p served twice", again[i]);
    }
    CHECK_EQ_I(mc_tracked_total(), NBLK); /* no malloc() so far */
    memcpy(blocks, again, sizeof blocks);
    CHECK_OK(sstm_run(NULL, free_all_blocks, NULL));
  }
  for (int i = 0; i < NBLK; i++)
    free(sstm_malloc(BSIZE));       /* plain malloc blocks, as the contract says */
  void *extra = sstm_malloc(BSIZE); /* the cache is empty now */
  CHECK_EQ_I(mc_tracked_total(), NBLK + 1);
  free(extra);
  CHECK_EQ_I(mc_live(), 0);
  sstm_test_fini();
}

TEST(with_the_cache_off_a_release_frees) {
  init_with_cache(0);
  allocate_and_release_a_batch();
  CHECK_EQ_I(mc_live(), 0);
  void *p = sstm_malloc(BSIZE);
  CHECK_EQ_I(mc_tracked_total(), NBLK + 1);
  free(p);
  sstm_test_fini();
}

TEST(the_cache_keeps_at_most_its_bytes) {
  enum { LIMIT = 4096 };
  init_with_cache(LIMIT);
  allocate_and_release_a_batch();
  CHECK_EQ_I(mc_live(), (long)(LIMIT / cached_bytes_per_block()));
  sstm_test_fini();
  CHECK_EQ_I(mc_live(), 0);
}

TEST(reclaim_empties_the_cache) {
  init_with_cache(SSTM_ALLOC_CACHE_DEFAULT);
  allocate_and_release_a_batch();
  CHECK_EQ_I(mc_live(), NBLK);
  sstm_reclaim();
  CHECK_EQ_I(mc_live(), 0);
  sstm_test_fini();
}

static void fill_cache_and_exit(sstm_tt_t *t) {
  (void)t;
  allocate_and_release_a_batch();
  CHECK_EQ_I(mc_live(), NBLK);
}

TEST(thread_exit_empties_the_cache) {
  init_with_cache(SSTM_ALLOC_CACHE_DEFAULT);
  sstm_test_run_threads(1, true, fill_cache_and_exit, NULL);
  CHECK_EQ_I(mc_live(), 0);
  sstm_test_fini();
}

TEST(shutdown_empties_the_cache) {
  init_with_cache(SSTM_ALLOC_CACHE_DEFAULT);
  allocate_and_release_a_batch();
  CHECK_EQ_I(mc_live(), NBLK);
  sstm_test_fini();
  CHECK_EQ_I(mc_live(), 0);
}

/* A block an aborted attempt allocated is released at the abort, into the
 * cache: the retry gets the same block without calling malloc(). */
static volatile int attempts;
static void *volatile first_try;
TEST(an_aborted_attempts_block_serves_its_retry) {
  init_with_cache(SSTM_ALLOC_CACHE_DEFAULT);
  attempts = 0;
  SSTM_ATOMIC_BEGIN(NULL)
    attempts++;
    void *p = sstm_malloc(BSIZE);
    CHECK_NOT_NULL(p);
    if (attempts == 1) {
      first_try = p;
      sstm_restart();
    }
    CHECK_EQ_PTR(p, first_try);
    sstm_free(p);
  SSTM_ATOMIC_END();
  CHECK_EQ_I(attempts, 2);
  CHECK_EQ_I(mc_tracked_total(), 1);
  sstm_test_fini();
  CHECK_EQ_I(mc_live(), 0);
}

/* The blocks an aborted attempt allocated go back after its abort actions,
 * which may still use them (an undo action of the compiler ABI may take
 * one as its argument, as with libitm). With the cache off a block given
 * back before the action would be free()'s: no longer counted live, and
 * its first bytes overwritten by the allocator's own links. Both ways an
 * attempt ends with actions: a restart and a cancel. */
static long live_in_action;
static bool intact_in_action;
static int actions_run;
static void use_block(void *arg) {
  unsigned char *b = arg;
  live_in_action = mc_live();
  intact_in_action = true;
  for (int i = 0; i < BSIZE; i++)
    if (b[i] != 0x5a) intact_in_action = false;
  memset(b, 0xa5, BSIZE); /* still the attempt's: writing is fine too */
  actions_run++;
}
TEST(abort_actions_run_before_the_attempts_blocks_go_back) {
  init_with_cache(0);
  for (int cancel = 0; cancel < 2; cancel++) {
    attempts = 0;
    actions_run = 0;
    live_in_action = -1;
    intact_in_action = false;
    volatile long live_in_retry = -1;
    SSTM_ATOMIC_BEGIN(NULL)
      attempts++;
      if (attempts == 1) {
        unsigned char *p = sstm_malloc(BSIZE);
        CHECK_NOT_NULL(p);
        memset(p, 0x5a, BSIZE); /* a fresh block is the attempt's own */
        CHECK_OK(sstm_on_abort(use_block, p));
        if (cancel)
          sstm_cancel();
        else
          sstm_restart();
      }
      live_in_retry = mc_live();
    SSTM_ATOMIC_END();
    CHECK_EQ_I(actions_run, 1);
    CHECK_EQ_I(live_in_action, 1);
    CHECK(intact_in_action);
    CHECK_EQ_I(attempts, cancel ? 1 : 2);
    if (!cancel) CHECK_EQ_I(live_in_retry, 0); /* given back before the retry */
    CHECK_EQ_I(mc_live(), 0);
  }
  sstm_test_fini();
}

TEST(calloc_from_the_cache_is_zeroed) {
  init_with_cache(SSTM_ALLOC_CACHE_DEFAULT);
  allocate_and_release_a_batch(); /* blocks filled with 0xff */
  SSTM_ATOMIC_BEGIN(NULL)
    unsigned char *p = sstm_calloc(BSIZE / 8, 8);
    CHECK_TRUE(was_released(p));
    for (int i = 0; i < BSIZE; i++)
      CHECK_EQ_U(p[i], 0);
    sstm_free(p);
  SSTM_ATOMIC_END();
  CHECK_EQ_I(mc_tracked_total(), NBLK);
  /* an overflowing product is refused as calloc refuses it, cache or not */
  errno = 0;
  CHECK_NULL(sstm_calloc(SIZE_MAX / 2, 4));
  CHECK_EQ_I(errno, ENOMEM);
  /* one whose product wraps to BSIZE, the size the cache holds blocks of:
   * not a BSIZE block from the cache for a request of 2^64 + BSIZE bytes */
  errno = 0;
  CHECK_NULL(sstm_calloc(((size_t)1 << 61) + BSIZE / 8, 8));
  CHECK_EQ_I(errno, ENOMEM);
  sstm_test_fini();
}

/* Blocks of every small size go in; each request gets a block with at
 * least the bytes it asked for (under ASan a shorter one would show as an
 * overflow of the memset). */
static void *mixed[NBLK];
static void free_mixed(void *arg) {
  (void)arg;
  for (int i = 0; i < NBLK; i++)
    sstm_free(mixed[i]);
}

TEST(a_block_served_is_large_enough) {
  init_with_cache(SSTM_ALLOC_CACHE_DEFAULT);
  sstm_rng_t rng;
  sstm_rng_seed(&rng, sstm_test_seed());
  for (int i = 0; i < NBLK; i++)
    mixed[i] = sstm_malloc(1 + sstm_rng_below(&rng, 600));
  CHECK_OK(sstm_run(NULL, free_mixed, NULL));
  size_t hits = 0;
  for (size_t n = 0; n <= 600; n++) {
    unsigned char *p = sstm_malloc(n);
    CHECK_NOT_NULL(p);
    CHECK_GE_U(malloc_usable_size(p), n);
    memset(p, 0xab, n);
    for (int i = 0; i < NBLK; i++)
      if (mixed[i] == p) {
        hits++;
        break;
      }
    free(p);
  }
  CHECK_GT_U(hits, 100); /* the cache served most of the small ones */
  sstm_test_fini();
}

/* A reader that started before the free committed holds the block's grace
 * period: the freeing thread must not get the block back from its cache
 * meanwhile, however many blocks it asks for. */
static void *volatile slot;
TEST(a_block_is_not_served_while_a_reader_may_read_it) {
  init_with_cache(SSTM_ALLOC_CACHE_DEFAULT);
  uint64_t *node = sstm_malloc(BSIZE);
  node[0] = 4242;
  slot = node;
  for (int i = 1; i < NBLK; i++)
    blocks[i] = sstm_malloc(BSIZE);
  blocks[0] = node;
  attempts = 0;
  SSTM_ATOMIC_BEGIN(NULL)
    attempts++;
    uint64_t *n = sstm_load_ptr((void *const *)&slot);
    if (attempts == 1) {
      CHECK_EQ_PTR(n, node);
      sstm_desc_t *me = sstm_desc_detach();
      CHECK_OK(sstm_desc_attach(txh_other_desc()));
      SSTM_ATOMIC_BEGIN(NULL)
        sstm_store_ptr((void **)&slot, NULL);
        free_all_blocks(NULL); /* node among them: the batch closes */
      SSTM_ATOMIC_END();
      static void *got[NBLK + 1];
      for (int i = 0; i <= NBLK; i++) {
        got[i] = sstm_malloc(BSIZE);
        CHECK_MSG(!was_released(got[i]), "block %p served during its grace period", got[i]);
      }
      for (int i = 0; i <= NBLK; i++)
        free(got[i]);
      sstm_desc_detach();
      CHECK_OK(sstm_desc_attach(me));
      CHECK_EQ_U(sstm_load_u64(&n[0]), 4242);
    } else {
      CHECK_NULL(n);
    }
  SSTM_ATOMIC_END();
  txh_cleanup();
  sstm_test_fini();
  CHECK_EQ_I(mc_live(), 0);
}

SSTM_TEST_MAIN()
