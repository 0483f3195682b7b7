/* SPDX-License-Identifier: MIT */
/* Unit tests: transactional allocation and deferred reclamation.
 *
 * In normal builds malloc is interposed (malloc_count.c) and blocks of a
 * distinctive size are tracked, so the tests check exactly when the library
 * releases them. Under ASan the same scenarios run (LeakSanitizer catches a
 * block an aborted transaction leaked; a premature free shows up as a
 * use-after-free in the reader that is still running). */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "../common/malloc_count.h"
#include "../common/txhelp.h"

/* a size nobody else uses; the library may add a header */
#define TSIZE 77777
#define MASK ((uintptr_t)0x5a5a5a5a5a5a5a5aull)

static void setup(void) {
  mc_track_sizes(TSIZE, TSIZE + 512);
  sstm_test_init();
}

#define CHECK_LIVE(n)                                                                              \
  do {                                                                                             \
    if (mc_available()) CHECK_EQ_I(mc_live(), (n));                                                \
  } while (0)

static volatile int attempts;

/* sstm_reclaim() on this thread's descriptor and on the second one. */
static void reclaim_everywhere(void) {
  sstm_reclaim();
  sstm_desc_t *me = sstm_desc_detach();
  CHECK_OK(sstm_desc_attach(txh_other_desc()));
  sstm_reclaim();
  sstm_desc_detach();
  CHECK_OK(sstm_desc_attach(me));
}
static volatile uintptr_t hidden1, hidden2; /* masked: invisible to LSan */

TEST(malloc_in_aborted_tx_is_freed) {
  setup();
  attempts = 0;
  SSTM_ATOMIC_BEGIN(NULL)
    attempts++;
    char *p = sstm_malloc(TSIZE);
    CHECK_NOT_NULL(p);
    memset(p, 0x11, TSIZE); /* private until commit: plain writes are fine */
    if (attempts == 1) {
      hidden1 = (uintptr_t)p ^ MASK;
      sstm_restart();
    }
    hidden2 = (uintptr_t)p ^ MASK;
    sstm_cancel();
  SSTM_ATOMIC_END();
  CHECK_EQ_I(attempts, 2);
  sstm_reclaim();
  if (mc_available()) CHECK_EQ_I(mc_tracked_total(), 2);
  CHECK_LIVE(0);
  /* calloc too, and the counts are not disturbed by committed work */
  attempts = 0;
  SSTM_ATOMIC_BEGIN(NULL)
    attempts++;
    uint64_t *q = sstm_calloc(TSIZE / 8, 8);
    CHECK_NOT_NULL(q);
    for (size_t i = 0; i < TSIZE / 8; i += 97)
      CHECK_EQ_U(q[i], 0);
    if (attempts < 3) sstm_restart();
    sstm_cancel();
  SSTM_ATOMIC_END();
  sstm_reclaim();
  CHECK_LIVE(0);
  sstm_test_fini();
  CHECK_LIVE(0);
}

static void *volatile slot;

TEST(committed_malloc_then_free) {
  setup();
  SSTM_ATOMIC_BEGIN(NULL)
    uint64_t *p = sstm_malloc(TSIZE);
    CHECK_NOT_NULL(p);
    p[0] = 1234; /* initialise before publishing */
    sstm_store_ptr((void **)&slot, p);
  SSTM_ATOMIC_END();
  sstm_reclaim();
  CHECK_LIVE(1);
  CHECK_EQ_U(((uint64_t *)slot)[0], 1234);
  SSTM_ATOMIC_BEGIN(NULL)
    void *p = sstm_load_ptr((void *const *)&slot);
    sstm_store_ptr((void **)&slot, NULL);
    sstm_free(p);
    sstm_free(NULL);
  SSTM_ATOMIC_END();
  /* no transaction is running: the grace period is over */
  size_t n = sstm_reclaim();
  if (mc_available()) {
    CHECK_GE_U(n, 1);
    CHECK_LIVE(0);
  }
  sstm_test_fini();
}

TEST(free_in_aborted_tx_is_forgotten) {
  setup();
  uint64_t *p = sstm_malloc(TSIZE); /* outside a tx: plain malloc */
  CHECK_NOT_NULL(p);
  p[0] = 99;
  CHECK_LIVE(1);
  attempts = 0;
  SSTM_ATOMIC_BEGIN(NULL)
    attempts++;
    sstm_free(p);
    if (attempts == 1) sstm_restart();
    sstm_cancel();
  SSTM_ATOMIC_END();
  CHECK_EQ_I(attempts, 2);
  sstm_reclaim();
  CHECK_LIVE(1);
  CHECK_EQ_U(p[0], 99); /* still ours (ASan: no use-after-free) */
  free(p);              /* memory from sstm_malloc outside a tx is plain */
  CHECK_LIVE(0);
  sstm_test_fini();
}

/* Hooks allocate and free as outside a transaction, also tx_begin, which
 * runs within the attempt (alloc.h): its block survives the attempt's
 * abort, and its sstm_free is not forgotten when the attempt aborts. */
static volatile uintptr_t hook_block; /* masked: invisible to LSan */
static long hook_live_seen;
static volatile int hook_armed;
static void h_begin(void *arg, uint64_t txid) {
  (void)arg, (void)txid;
  if (!hook_armed) return;
  if (hook_block == 0) {
    uint64_t *b = sstm_malloc(TSIZE);
    b[0] = 5;
    hook_block = (uintptr_t)b ^ MASK;
    return;
  }
  hook_live_seen = mc_available() ? mc_live() : 1;
  uint64_t *b = (uint64_t *)(hook_block ^ MASK);
  b[0]++; /* ASan: use-after-free if the abort freed it */
  sstm_free(b);
}

TEST(blocks_of_a_begin_hook_belong_to_the_hook) {
  setup();
  static const sstm_hooks_t h = {.tx_begin = h_begin};
  int handle = sstm_hooks_add(&h, NULL);
  CHECK_GE_I(handle, 0);
  hook_block = 0;
  hook_live_seen = -1;
  attempts = 0;
  hook_armed = 1;
  SSTM_ATOMIC_BEGIN(NULL)
    attempts++;
    if (attempts == 1) sstm_restart();
    sstm_cancel(); /* an attempt that aborts: its own frees are forgotten */
  SSTM_ATOMIC_END();
  hook_armed = 0;
  CHECK_OK(sstm_hooks_remove(handle));
  CHECK_EQ_I(attempts, 2);
  CHECK_EQ_I(hook_live_seen, 1); /* alive when the second attempt began */
  reclaim_everywhere();
  CHECK_LIVE(0); /* the hook's sstm_free was retired, not forgotten */
  txh_cleanup();
  sstm_test_fini();
}

/* The sampling callback allocates as a hook does: it runs during an access
 * of the attempt, and its block survives that attempt's abort. */
static void sample_alloc(void *arg, const void *addr, bool is_write) {
  (void)arg, (void)addr, (void)is_write;
  if (hook_block != 0) return;
  uint64_t *b = sstm_malloc(TSIZE);
  b[0] = 6;
  hook_block = (uintptr_t)b ^ MASK;
}
static uint64_t sample_word;
TEST(blocks_of_the_sampling_callback_belong_to_it) {
  mc_track_sizes(TSIZE, TSIZE + 512);
  sstm_test_init_sampling(1, sample_alloc, NULL);
  hook_block = 0;
  attempts = 0;
  SSTM_ATOMIC_BEGIN(NULL)
    attempts++;
    (void)sstm_load_u64(&sample_word); /* the first access calls back */
    if (attempts == 1) sstm_restart();
  SSTM_ATOMIC_END();
  CHECK_EQ_I(attempts, 2);
  CHECK_TRUE(hook_block != 0);
  sstm_reclaim();
  CHECK_LIVE(1); /* not released by the abort */
  uint64_t *b = (uint64_t *)(hook_block ^ MASK);
  CHECK_EQ_U(b[0], 6); /* ASan: use-after-free if the abort freed it */
  sstm_free(b);        /* outside a transaction: retired at once */
  hook_block = 0;
  reclaim_everywhere();
  CHECK_LIVE(0);
  txh_cleanup();
  sstm_test_fini();
}

/* A hook's sstm_free retires the block at once, as outside a transaction
 * (alloc.h), and the grace period that the retirement may start waits for
 * every attempt that may still read the block: the attempt the hook runs
 * in too. Here the sampling callback of an attempt that holds a pointer to
 * a node frees the node, which another transaction unlinked after the
 * attempt read it, and that free fills the thread's batch (its blocks reach
 * 256 KiB), which closes it. No other attempt runs, so a grace period that
 * left out the callback's own attempt would be over at once, and the sweep
 * would free the node under the attempt (the CHECK_LIVE inside it fails;
 * under ASan the read after it is a use-after-free). */
static void *volatile hf_node;
static volatile int hf_armed;
static void sample_free(void *arg, const void *addr, bool is_write) {
  (void)arg, (void)addr, (void)is_write;
  if (!hf_armed) return;
  hf_armed = 0;
  sstm_free(hf_node);
}
static void unlink_slot(void *arg) {
  (void)arg;
  sstm_store_ptr((void **)&slot, NULL);
}
static void *hf_blocks[64];
TEST(a_hooks_free_waits_for_the_attempt_it_runs_in) {
  mc_track_sizes(TSIZE, TSIZE + 512);
  sstm_test_init_sampling(1, sample_free, NULL);
  for (int i = 0; i < 64; i++)
    hf_blocks[i] = malloc(TSIZE);
  size_t u = malloc_usable_size(hf_blocks[0]), k = (256 * 1024 + u - 1) / u;
  CHECK(k >= 2 && k <= 64);
  uint64_t *node = sstm_malloc(TSIZE); /* outside a transaction: malloc's */
  node[0] = 4242;
  slot = node;
  for (size_t i = 0; i + 1 < k; i++)
    sstm_free(hf_blocks[i]);
  CHECK_LIVE(65); /* k - 1 blocks wait in the open batch */
  hf_armed = 0;
  attempts = 0;
  SSTM_ATOMIC_BEGIN(NULL)
    attempts++;
    uint64_t *n = sstm_load_ptr((void *const *)&slot);
    if (attempts == 1) {
      CHECK_EQ_PTR(n, node);
      CHECK_OK(run_other(NULL, unlink_slot, NULL)); /* unlinked, committed */
      hf_node = node;
      hf_armed = 1;
      (void)sstm_load_u64(&sample_word); /* the callback frees the node */
      CHECK_FALSE(hf_armed);
      CHECK_LIVE(65); /* the closed batch waits for this attempt */
      CHECK_EQ_U(sstm_load_u64(&n[0]), 4242);
    }
  SSTM_ATOMIC_END();
  CHECK_EQ_I(attempts, 1); /* read-only, serialised before the unlink */
  CHECK_NULL(slot);
  sstm_reclaim();
  CHECK_LIVE(65 - (int)k); /* released once the attempt ended */
  for (size_t i = k - 1; i < 64; i++)
    sstm_free(hf_blocks[i]);
  reclaim_everywhere();
  CHECK_LIVE(0);
  txh_cleanup();
  sstm_test_fini();
}

/* A hook's sstm_free of a block that the attempt it runs in allocated
 * retires the block at once, and the attempt's abort leaves it alone
 * (alloc.h). Here the sampling callback frees the attempt's block, then
 * the attempt restarts: its rollback released the block too, so the
 * reclamation below released it a second time (the counting allocator's
 * live count goes below zero; glibc may stop the process). */
static void *volatile ha_block;
static void sample_free_attempts_block(void *arg, const void *addr, bool is_write) {
  (void)arg, (void)addr, (void)is_write;
  void *b = ha_block;
  if (b == NULL) return;
  ha_block = NULL;
  sstm_free(b);
}
TEST(a_hooks_free_of_the_attempts_block_is_the_only_release) {
  mc_track_sizes(TSIZE, TSIZE + 512);
  sstm_test_init_sampling(1, sample_free_attempts_block, NULL);
  ha_block = NULL;
  attempts = 0;
  SSTM_ATOMIC_BEGIN(NULL)
    attempts++;
    if (attempts == 1) {
      uint64_t *b = sstm_malloc(TSIZE);
      CHECK_NOT_NULL(b);
      CHECK_LIVE(1);
      ha_block = b;
      (void)sstm_load_u64(&sample_word); /* the callback frees it */
      CHECK_NULL(ha_block);
      sstm_restart();
    }
  SSTM_ATOMIC_END();
  CHECK_EQ_I(attempts, 2);
  reclaim_everywhere();
  CHECK_LIVE(0);
  txh_cleanup();
  sstm_test_fini();
}

/* A reader that started before the free committed keeps the block alive. */
TEST(free_deferred_while_reader_runs) {
  setup();
  uint64_t *node = sstm_malloc(TSIZE);
  node[0] = 4242;
  node[1] = 7;
  slot = node;
  attempts = 0;
  SSTM_ATOMIC_BEGIN(NULL)
    attempts++;
    uint64_t *n = sstm_load_ptr((void *const *)&slot);
    if (attempts == 1) {
      CHECK_EQ_PTR(n, node);
      /* another transaction unlinks and frees it, and commits */
      sstm_desc_t *me = sstm_desc_detach();
      CHECK_OK(sstm_desc_attach(txh_other_desc()));
      SSTM_ATOMIC_BEGIN(NULL)
        void *p = sstm_load_ptr((void *const *)&slot);
        sstm_store_ptr((void **)&slot, NULL);
        sstm_free(p);
      SSTM_ATOMIC_END();
      /* reclamation must wait for the suspended reader */
      sstm_reclaim();
      sstm_reclaim();
      CHECK_LIVE(1);
      sstm_desc_detach();
      CHECK_OK(sstm_desc_attach(me));
      /* the reader still dereferences the node: must not be freed memory
       * (if the engine aborts the reader here instead, the retry sees the
       * unlinked slot) */
      CHECK_EQ_U(sstm_load_u64(&n[0]), 4242);
      CHECK_EQ_U(sstm_load_u64(&n[1]), 7);
    } else {
      CHECK_NULL(n);
    }
  SSTM_ATOMIC_END();
  reclaim_everywhere();
  CHECK_LIVE(0);
  txh_cleanup();
  sstm_test_fini();
}

TEST(free_outside_tx_waits_for_grace_period) {
  setup();
  uint64_t *node = sstm_malloc(TSIZE);
  node[0] = 5;
  slot = node;
  attempts = 0;
  SSTM_ATOMIC_BEGIN(NULL)
    attempts++;
    uint64_t *n = sstm_load_ptr((void *const *)&slot);
    if (attempts == 1) {
      sstm_desc_t *me = sstm_desc_detach();
      CHECK_OK(sstm_desc_attach(txh_other_desc()));
      struct txh_store s = {(uint64_t *)(void *)&slot, 0};
      CHECK_OK(sstm_run(NULL, txh_store_fn, &s)); /* unlink */
      sstm_free(node);                            /* retire outside a transaction */
      sstm_reclaim();
      CHECK_LIVE(1);
      sstm_desc_detach();
      CHECK_OK(sstm_desc_attach(me));
      CHECK_EQ_U(sstm_load_u64(&n[0]), 5);
    }
  SSTM_ATOMIC_END();
  reclaim_everywhere();
  CHECK_LIVE(0);
  txh_cleanup();
  sstm_test_fini();
}

TEST(shutdown_releases_deferred) {
  setup();
  for (int i = 0; i < 10; i++) {
    void *p = sstm_malloc(TSIZE);
    SSTM_ATOMIC_BEGIN(NULL)
      sstm_free(p);
    SSTM_ATOMIC_END();
    sstm_free(sstm_malloc(TSIZE));
  }
  /* no sstm_reclaim(): shutdown must release everything */
  sstm_test_fini();
  CHECK_LIVE(0);
}

static void exiting_thread(sstm_tt_t *t) {
  (void)t;
  /* volatile: the counter lives across the blocks' setjmp. No restart
   * returns to a block after the counter changed, but GCC cannot tell
   * (-Wclobbered, at -O1), and the rule of tx.h is the safe habit. */
  for (volatile int i = 0; i < 5; i++) {
    SSTM_ATOMIC_BEGIN(NULL)
      void *p = sstm_malloc(TSIZE);
      sstm_free(p); /* allocated and freed in the same tx */
    SSTM_ATOMIC_END();
    SSTM_ATOMIC_BEGIN(NULL)
      void *p = sstm_malloc(TSIZE);
      CHECK_NOT_NULL(p);
      sstm_store_ptr((void **)&slot, p);
    SSTM_ATOMIC_END();
    SSTM_ATOMIC_BEGIN(NULL)
      sstm_free(sstm_load_ptr((void *const *)&slot));
      sstm_store_ptr((void **)&slot, NULL);
    SSTM_ATOMIC_END();
  }
}

TEST(thread_exit_hands_over_deferred_frees) {
  setup();
  slot = NULL;
  sstm_test_run_threads(1, true, exiting_thread, NULL);
  sstm_reclaim();
  CHECK_LIVE(0);
  sstm_test_fini();
}

/* sstm_reclaim() releases the calling thread's own retired blocks once
 * their grace period is over (its pending batch is closed first), while the
 * thread stays registered; blocks of exited threads are released by any
 * thread's sstm_reclaim() (thread_exit_hands_over_deferred_frees). */
static void retire_then_reclaim(sstm_tt_t *t) {
  (void)t;
  SSTM_ATOMIC_BEGIN(NULL)
    sstm_free(sstm_load_ptr((void *const *)&slot));
    sstm_store_ptr((void **)&slot, NULL);
  SSTM_ATOMIC_END();
  size_t n = sstm_reclaim();
  CHECK_GE_U(n, 1);
  CHECK_EQ_I(mc_live(), 0);
}

TEST(reclaim_releases_own_retired_blocks) {
  if (!mc_available()) sstm_test_skip("needs the counting allocator");
  setup();
  slot = sstm_malloc(TSIZE);
  sstm_test_run_threads(1, true, retire_then_reclaim, NULL);
  sstm_test_fini();
}

/* Frees outside a transaction on a registered thread wait in its batch,
 * which closes at 1024 blocks and is swept at once: with no transaction
 * running, its grace period is over when it closes. No sstm_reclaim.
 * Blocks of SMALL bytes, so that 1024 of them stay under the batch's bound
 * in bytes (below), and no block cache, so that a released block reaches
 * free() where the counting allocator sees it. */
#define SMALL 200
static void *outside_blocks[1025];

/* The batch tests' set-up: the counting allocator tracking blocks of size
 * bytes (and size + 1), no block cache, this thread registered. */
static void counting_setup(size_t size) {
  if (!mc_available()) sstm_test_skip("needs the counting allocator");
  mc_track_sizes(size, size + 1);
  sstm_config_t c;
  sstm_test_config(&c);
  c.alloc_cache = 0;
  CHECK_OK(sstm_init(&c));
  CHECK_OK(sstm_thread_init());
}

TEST(frees_outside_tx_close_their_batch_at_1024) {
  counting_setup(SMALL);
  for (int i = 0; i < 1025; i++)
    outside_blocks[i] = malloc(SMALL);
  CHECK_LT_U(1024 * malloc_usable_size(outside_blocks[0]), 256 * 1024);
  CHECK_LIVE(1025);
  for (int i = 0; i < 1023; i++)
    sstm_free(outside_blocks[i]);
  CHECK_LIVE(1025); /* waiting in the open batch */
  sstm_free(outside_blocks[1023]);
  CHECK_LIVE(1); /* the 1024th closed the batch and the sweep released it */
  sstm_free(outside_blocks[1024]);
  CHECK_LIVE(1);
  CHECK_EQ_U(sstm_reclaim(), 1);
  CHECK_LIVE(0);
  sstm_test_fini();
}

#define TINY 16
static void *tiny_untracked[1023 + 8190];

/* counting_setup of TINY-byte blocks (every released block goes back to
 * malloc, where the allocator sees it), and another descriptor, created. */
static sstm_desc_t *tiny_setup(void) {
  counting_setup(TINY);
  sstm_desc_t *other = NULL;
  CHECK_OK(sstm_desc_create(&other));
  return other;
}

/* Two batches of TINY blocks, each of which must close at its 1024th
 * block (the two tests below): the counting allocator tracks the first
 * batch's last block and the second's. */
static void two_batches_close_at_1024(void) {
  void *first = malloc(TINY), *last = malloc(TINY);
  for (int i = 0; i < 1023 + 1023; i++)
    tiny_untracked[i] = malloc(TINY + 1);
  CHECK_LIVE(2);
  for (int i = 0; i < 1023; i++)
    sstm_free(tiny_untracked[i]);
  sstm_free(first);
  CHECK_LIVE(1); /* the first batch closed at 1024 and was released */
  for (int i = 1023; i < 1023 + 1023; i++)
    sstm_free(tiny_untracked[i]);
  CHECK_LIVE(1);
  sstm_free(last);
  CHECK_LIVE(0); /* the second closed at 1024 too */
}

/* Another descriptor that is registered but runs nothing (a program's
 * main thread waiting for its one worker) leaves the batches at 1024
 * blocks: a fence interrupts no CPU of its, and the longer batch would cost
 * the lone worker its warm reuse (src/core/reclaim.c). The second batch's
 * 1024th block closes it; with the idle descriptor counted as another
 * thread, it would wait for 8192 and the second CHECK_LIVE(0) fails. */
TEST(frees_beside_an_idle_descriptor_close_their_batch_at_1024) {
  sstm_desc_t *other = tiny_setup();
  two_batches_close_at_1024();
  CHECK_OK(sstm_desc_destroy(other));
  sstm_test_fini();
}

/* A thread that holds an attempt open until told, then stays registered
 * and idle until told again (the batch test below). */
static _Atomic int holder_step; /* 1: in its attempt, 2: end it, 3: ended, 4: leave */
static void hold_attempt(void *arg) {
  (void)arg;
  atomic_store_explicit(&holder_step, 1, memory_order_release);
  while (atomic_load_explicit(&holder_step, memory_order_acquire) != 2)
    sched_yield();
}
static void *holder(void *arg) {
  (void)arg;
  CHECK_OK(sstm_thread_init());
  CHECK_OK(sstm_run(NULL, hold_attempt, NULL));
  atomic_store_explicit(&holder_step, 3, memory_order_release);
  while (atomic_load_explicit(&holder_step, memory_order_acquire) != 4)
    sched_yield();
  CHECK_OK(sstm_thread_exit());
  return NULL;
}

/* Once a close has recorded another thread's attempt running, closing a
 * batch interrupts that thread's CPU, and the batches after it are eight
 * times longer (BATCH_BLOCKS_SHARED, src/core/reclaim.c) for as long as
 * the other thread stays registered, running or not. The first batch
 * closes at 1024 blocks, as alone, and its scan records the holder's
 * attempt (so its release waits for that attempt's end); the next batch
 * holds 8192 and closes at its 8192nd, after the holder's attempt has
 * ended and it idles, and that close's sweep releases both. The counting
 * allocator tracks four of the blocks (TINY bytes; the others TINY + 1,
 * untracked): the first batch's first, the second batch's first and last,
 * and one after. Blocks this small keep 8192 under the batch's bound in
 * bytes. With batches of 1024 throughout, the second batch closes at its
 * 1024th block, its sweep releases the first two tracked blocks, and the
 * second CHECK_LIVE(4) fails. */
TEST(frees_beside_a_running_attempt_close_their_batch_at_8192) {
  counting_setup(TINY); /* no other descriptor: only the holder counts */
  void *first = malloc(TINY), *second = malloc(TINY), *last = malloc(TINY), *after = malloc(TINY);
  for (int i = 0; i < 1023 + 8190; i++)
    tiny_untracked[i] = malloc(TINY + 1);
  CHECK_LT_U(8192 * malloc_usable_size(tiny_untracked[0]), 256 * 1024);
  CHECK_LE_U(malloc_usable_size(first), malloc_usable_size(tiny_untracked[0]));
  pthread_t th;
  atomic_store_explicit(&holder_step, 0, memory_order_relaxed);
  CHECK_EQ_I(pthread_create(&th, NULL, holder, NULL), 0);
  while (atomic_load_explicit(&holder_step, memory_order_acquire) != 1)
    sched_yield();
  CHECK_LIVE(4);
  sstm_free(first);
  for (int i = 0; i < 1023; i++)
    sstm_free(tiny_untracked[i]);
  CHECK_LIVE(4); /* the first batch closed at 1024, waiting for the holder's attempt */
  atomic_store_explicit(&holder_step, 2, memory_order_release);
  while (atomic_load_explicit(&holder_step, memory_order_acquire) != 3)
    sched_yield();
  sstm_free(second);
  for (int i = 1023; i < 1023 + 8190; i++)
    sstm_free(tiny_untracked[i]);
  CHECK_LIVE(4); /* 8191 wait in the open batch */
  sstm_free(last);
  CHECK_LIVE(1); /* the 8192nd closed it and the sweep released both batches */
  atomic_store_explicit(&holder_step, 4, memory_order_release);
  CHECK_EQ_I(pthread_join(th, NULL), 0);
  sstm_free(after);
  CHECK_EQ_U(sstm_reclaim(), 1);
  CHECK_LIVE(0);
  sstm_test_fini();
}

/* A descriptor that was registered and is gone (destroyed, or a thread
 * that unregistered) keeps its slot but is no other thread: the batches
 * stay at 1024 blocks. The second batch's 1024th block closes it; with
 * the slot counted as another descriptor it would wait for 8192. */
TEST(frees_after_another_descriptor_left_close_their_batch_at_1024) {
  sstm_desc_t *other = tiny_setup();
  CHECK_OK(sstm_desc_destroy(other));
  two_batches_close_at_1024();
  sstm_test_fini();
}

/* A batch also closes once its blocks hold 256 KiB (<schedstm/alloc.h>),
 * so that large blocks do not wait 1024 at a time: 1024 of TSIZE bytes
 * would be 76 MiB. With k the first count whose bytes reach the bound, k - 1
 * blocks freed in transactions wait, the k-th commit closes the batch and
 * releases them all (no other attempt runs: the grace period is over at
 * once). Then the same again, with the frees outside transactions. */
static void *large_blocks[64];
static void free_large(void *arg) { sstm_free(arg); }

TEST(large_blocks_close_their_batch_at_256_kib) {
  if (!mc_available()) sstm_test_skip("needs the counting allocator");
  setup();
  for (int i = 0; i < 64; i++)
    large_blocks[i] = malloc(TSIZE);
  size_t u = malloc_usable_size(large_blocks[0]), k = (256 * 1024 + u - 1) / u;
  CHECK(k >= 2 && 2 * k <= 64);
  CHECK_LIVE(64);
  for (size_t i = 0; i + 1 < k; i++)
    CHECK_OK(sstm_run(NULL, free_large, large_blocks[i]));
  CHECK_LIVE(64); /* k - 1 committed frees wait in the open batch */
  CHECK_OK(sstm_run(NULL, free_large, large_blocks[k - 1]));
  CHECK_LIVE(64 - (int)k); /* the k-th closed the batch and the sweep released it */
  for (size_t i = k; i + 1 < 2 * k; i++)
    sstm_free(large_blocks[i]);
  CHECK_LIVE(64 - (int)k);
  sstm_free(large_blocks[2 * k - 1]);
  CHECK_LIVE(64 - 2 * (int)k);
  for (size_t i = 2 * k; i < 64; i++)
    sstm_free(large_blocks[i]);
  sstm_reclaim();
  CHECK_LIVE(0);
  sstm_test_fini();
}

/* A thread that never registers: each sstm_free is a one-block batch on
 * the orphan list, and every one of them is released by a later
 * sstm_reclaim() (the second must join the first on the list, not replace
 * it). */
static void *unreg_blocks[3];
static void *free_unregistered(void *arg) {
  (void)arg;
  CHECK_NULL(sstm_self());
  for (int i = 0; i < 3; i++)
    sstm_free(unreg_blocks[i]);
  return NULL;
}

TEST(frees_of_an_unregistered_thread_are_all_released) {
  if (!mc_available()) sstm_test_skip("needs the counting allocator");
  setup();
  for (int i = 0; i < 3; i++)
    unreg_blocks[i] = malloc(TSIZE);
  CHECK_LIVE(3);
  pthread_t th;
  CHECK_EQ_I(pthread_create(&th, NULL, free_unregistered, NULL), 0);
  CHECK_EQ_I(pthread_join(th, NULL), 0);
  CHECK_LIVE(3); /* retired, not freed: no sweep yet */
  CHECK_GE_U(sstm_reclaim(), 3);
  CHECK_LIVE(0);
  sstm_test_fini();
}

/* Before sstm_init (and after sstm_shutdown) sstm_free frees at once. */
TEST(free_without_the_library_frees_at_once) {
  if (!mc_available()) sstm_test_skip("needs the counting allocator");
  mc_track_sizes(TSIZE, TSIZE + 512);
  CHECK_FALSE(sstm_initialized());
  sstm_free(malloc(TSIZE));
  CHECK_LIVE(0);
  sstm_test_init();
  sstm_test_fini();
  sstm_free(malloc(TSIZE));
  CHECK_LIVE(0);
}

/* Batches left by exiting threads (orphans) are released by the commits of
 * the threads that remain, with no sstm_reclaim() call: a commit that
 * closes a batch of its own (1024 blocks) also sweeps the orphan list. Two
 * threads exit while this thread's attempt is suspended (so their batches
 * cannot be released at exit): the second one's batch must join the first
 * one's on the list, not replace it. */
static void *free_one_and_exit(void *arg) {
  void *p = arg;
  CHECK_OK(sstm_thread_init());
  SSTM_ATOMIC_BEGIN(NULL)
    sstm_free(p);
  SSTM_ATOMIC_END();
  CHECK_OK(sstm_thread_exit());
  return NULL;
}

static void *orphan_blocks[2];
static void suspend_while_two_threads_exit(void *arg) {
  (void)arg;
  sstm_desc_t *me = sstm_desc_detach();
  for (int i = 0; i < 2; i++) {
    pthread_t t;
    CHECK_EQ_I(pthread_create(&t, NULL, free_one_and_exit, orphan_blocks[i]), 0);
    CHECK_EQ_I(pthread_join(t, NULL), 0);
  }
  CHECK_OK(sstm_desc_attach(me));
}

static void *frees_1024[1024];
static void free_1024(void *arg) {
  (void)arg;
  for (int i = 0; i < 1024; i++)
    sstm_free(frees_1024[i]);
}

TEST(commits_release_orphaned_batches) {
  if (!mc_available()) sstm_test_skip("needs the counting allocator");
  setup();
  for (int i = 0; i < 2; i++)
    orphan_blocks[i] = sstm_malloc(TSIZE);
  CHECK_LIVE(2);
  CHECK_OK(sstm_run(NULL, suspend_while_two_threads_exit, NULL));
  CHECK_LIVE(2); /* retired, not yet released: this attempt was running */
  for (int i = 0; i < 1024; i++)
    frees_1024[i] = sstm_malloc(64);         /* not tracked */
  CHECK_OK(sstm_run(NULL, free_1024, NULL)); /* closes a batch: sweeps the orphans */
  CHECK_LIVE(0);
  sstm_test_fini();
}

SSTM_TEST_MAIN()

/* ---- frees that cannot be right (debug builds) ---------------------------- */

/* A debug build reports at the call what a release build hands to free()
 * only after the grace period, where glibc aborts far from the cause: a
 * pointer that cannot be a malloc block (on the stack, in static data,
 * misaligned) and a second free of one block in a transaction. The free is
 * then ignored, so reclamation and shutdown run clean. */
static int fm_n;
static char fm_msg[512];
static void fm_record(const char *msg) {
  fm_n++;
  snprintf(fm_msg, sizeof fm_msg, "%s", msg);
}
static uint64_t fm_static[4];

static void fm_require_debug(void) {
  if (!txh_debug_build()) {
    sstm_test_fini();
    sstm_test_skip("sstm_free's checks are in debug builds (SCHEDSTM_DEBUG)");
  }
}

TEST(bad_free_is_misuse_in_debug_builds) {
  sstm_test_init();
  fm_require_debug();
  sstm_misuse_fn prev = sstm_set_misuse_handler(fm_record);
  uint64_t on_stack[2] = {1, 2};
  SSTM_ATOMIC_BEGIN(NULL)
    sstm_free(on_stack);
  SSTM_ATOMIC_END();
  CHECK_EQ_I(fm_n, 1);
  CHECK_CONTAINS(fm_msg, "stack");
  sstm_free(&fm_static[1]); /* outside a transaction too */
  CHECK_EQ_I(fm_n, 2);
  CHECK_CONTAINS(fm_msg, "static data");
  char *m = malloc(64);
  CHECK_NOT_NULL(m);
  sstm_free(m + 1);
  CHECK_EQ_I(fm_n, 3);
  CHECK_CONTAINS(fm_msg, "aligned");
  void *p = sstm_malloc(48);
  CHECK_NOT_NULL(p);
  SSTM_ATOMIC_BEGIN(NULL)
    sstm_free(p);
    sstm_free(p);
  SSTM_ATOMIC_END();
  CHECK_EQ_I(fm_n, 4);
  CHECK_CONTAINS(fm_msg, "already freed in this transaction");
  /* the ignored frees reach neither free() nor the block cache */
  (void)sstm_reclaim();
  free(m);
  CHECK_EQ_U(on_stack[0] + on_stack[1], 3);
  sstm_set_misuse_handler(prev);
  sstm_test_fini();
}

static void fm_child(void) {
  uint64_t on_stack[2];
  SSTM_ATOMIC_BEGIN(NULL)
    sstm_free(on_stack);
  SSTM_ATOMIC_END();
}

TEST(bad_free_aborts_at_the_call_in_debug_builds) {
  sstm_test_init();
  fm_require_debug();
  sstm_test_expect_abort(fm_child, "sstm_free of a stack address", "API misuse: sstm_free");
  sstm_test_fini();
}
