/* SPDX-License-Identifier: MIT */
/* Unit tests: sstm_realloc, large blocks and irrevocability-free
 * allocation inside transactions (<schedstm/alloc.h>).
 *
 * Blocks of distinctive sizes are tracked by the counting allocator
 * (malloc_count.c; the sanitizers' hooks under ASan/TSan), so the tests
 * check exactly which blocks are live after a commit, an abort and the
 * grace period. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../common/lock_count.h"
#include "../common/malloc_count.h"
#include "../common/syscall_count.h"
#include "../common/txhelp.h"

#define OLD 77777 /* sizes nobody else uses */
#define NEW (OLD + 300)
#define MASK ((uintptr_t)0x5a5a5a5a5a5a5a5aull)

static void setup(size_t lo, size_t hi) {
  mc_track_sizes(lo, hi);
  sstm_test_init();
}

#define CHECK_LIVE(n)                                                                              \
  do {                                                                                             \
    if (mc_available()) CHECK_EQ_I(mc_live(), (n));                                                \
  } while (0)

static unsigned char *volatile shared; /* the block transactions read */
static volatile int attempts;

static unsigned char *fresh_block(size_t n) {
  unsigned char *p = malloc(n);
  CHECK_NOT_NULL(p);
  for (size_t i = 0; i < n; i++)
    p[i] = (unsigned char)(i * 7 + 1);
  return p;
}

/* Grow inside a transaction: a new block holding the old bytes as this
 * transaction sees them (its own earlier write included); the old block
 * lives until commit and the grace period. */
TEST(grow_copies_through_the_transaction) {
  setup(OLD, NEW + 1);
  shared = fresh_block(OLD);
  SSTM_ATOMIC_BEGIN(NULL)
    unsigned char *p = sstm_load_ptr((void *const *)&shared);
    sstm_store_u8(&p[5], 0xee); /* buffered: visible only through the transaction */
    unsigned char *q = sstm_realloc(p, NEW);
    CHECK_NOT_NULL(q);
    CHECK_NE_PTR(q, p);
    CHECK_EQ_U(q[5], 0xee);
    CHECK_EQ_U(q[OLD - 1], (unsigned char)((OLD - 1) * 7 + 1));
    memset(q + OLD, 0x42, NEW - OLD); /* private until commit */
    sstm_store_ptr((void **)&shared, q);
  SSTM_ATOMIC_END();
  sstm_reclaim();
  CHECK_LIVE(1); /* the old block went at commit + grace period */
  CHECK_EQ_U(shared[5], 0xee);
  CHECK_EQ_U(shared[NEW - 1], 0x42);
  free(shared);
  CHECK_LIVE(0);
  sstm_test_fini();
}

/* An aborted realloc releases the new block and leaves the old one live
 * and unchanged. */
TEST(aborted_realloc_leaves_the_old_block) {
  setup(OLD, NEW + 1);
  shared = fresh_block(OLD);
  attempts = 0;
  SSTM_ATOMIC_BEGIN(NULL)
    attempts++;
    unsigned char *q = sstm_realloc((void *)shared, NEW);
    CHECK_NOT_NULL(q);
    if (attempts == 1) sstm_restart();
    sstm_cancel();
  SSTM_ATOMIC_END();
  CHECK_EQ_I(attempts, 2);
  sstm_reclaim();
  CHECK_LIVE(1);
  for (size_t i = 0; i < OLD; i += 997)
    CHECK_EQ_U(shared[i], (unsigned char)(i * 7 + 1)); /* ASan: not freed */
  free(shared);
  sstm_test_fini();
}

/* A block with room to spare is kept (nothing to undo); one that would
 * waste more than half of itself is replaced. */
TEST(shrink_keeps_or_replaces) {
  setup(OLD, NEW + 1);
  shared = fresh_block(OLD);
  SSTM_ATOMIC_BEGIN(NULL)
    unsigned char *p = (unsigned char *)shared;
    CHECK_EQ_PTR(sstm_realloc(p, OLD - 8), p);
    unsigned char *q = sstm_realloc(p, 100);
    CHECK_NE_PTR(q, p);
    CHECK_EQ_MEM(q, p, 100);
    sstm_store_ptr((void **)&shared, q);
  SSTM_ATOMIC_END();
  sstm_reclaim();
  CHECK_LIVE(0); /* the 100-byte block is not tracked */
  CHECK_EQ_U(shared[99], (unsigned char)(99 * 7 + 1));
  free(shared);
  sstm_test_fini();
}

/* NULL and 0, inside and outside a transaction; outside, the old block
 * waits for the grace period like sstm_free's. */
TEST(null_zero_and_outside) {
  setup(OLD, NEW + 1);
  SSTM_ATOMIC_BEGIN(NULL)
    void *p = sstm_realloc(NULL, OLD); /* = sstm_malloc: released on abort */
    CHECK_NOT_NULL(p);
    CHECK_NULL(sstm_realloc(p, 0)); /* = sstm_free */
  SSTM_ATOMIC_END();
  sstm_reclaim();
  CHECK_LIVE(0);
  unsigned char *p = fresh_block(OLD);
  unsigned char *q = sstm_realloc(p, NEW);
  CHECK_NOT_NULL(q);
  CHECK_EQ_U(q[OLD - 1], (unsigned char)((OLD - 1) * 7 + 1));
  sstm_reclaim(); /* no transaction runs: the grace period is over */
  CHECK_LIVE(1);
  free(q);
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
  /* (the sanitizers' allocators end the process instead) */
  errno = 0;
  CHECK_NULL(sstm_realloc(NULL, SIZE_MAX / 2)); /* cannot be allocated */
  CHECK_EQ_I(errno, ENOMEM);
#endif
  sstm_test_fini();
}

/* Blocks far above the cache's size classes (1 MiB, 64 MiB: glibc maps
 * them) are released when the transaction aborts, and one freed by a
 * committed transaction goes after the grace period. */
static volatile uintptr_t big_hidden;
TEST(large_blocks_roll_back) {
  setup((size_t)1 << 20, ((size_t)64 << 20) + 1);
  attempts = 0;
  SSTM_ATOMIC_BEGIN(NULL)
    attempts++;
    char *a = sstm_malloc((size_t)1 << 20);
    char *b = sstm_calloc(1, (size_t)64 << 20);
    CHECK_NOT_NULL(a);
    CHECK_NOT_NULL(b);
    a[12345] = b[(size_t)40 << 20]; /* touched: they are real */
    big_hidden = (uintptr_t)b ^ MASK;
    if (attempts == 1) sstm_restart();
    sstm_free(a);
  SSTM_ATOMIC_END();
  CHECK_EQ_I(attempts, 2);
  sstm_reclaim();
  CHECK_LIVE(1); /* the second attempt's 64 MiB block */
  SSTM_ATOMIC_BEGIN(NULL)
    sstm_free((void *)(big_hidden ^ MASK));
  SSTM_ATOMIC_END();
  sstm_reclaim();
  CHECK_LIVE(0);
  sstm_test_fini();
}

/* Allocation never makes a transaction irrevocable: 20 000 blocks in one
 * transaction (the allocation log, 16 entries at first, doubles eleven
 * times), then as many small transactions that refill and drain the block
 * cache and close some forty reclamation batches (BATCH_BLOCKS frees each,
 * src/core/reclaim.c), ten times the batch pool. It had 100 000 blocks:
 * the same paths, five times the work, and on a loaded host it ran past
 * its watchdog. */
#define NBLOCKS 20000
static void *blocks[NBLOCKS];
static void free_and_churn(void *b) {
  sstm_free(b);
  void *c = sstm_malloc(48);
  CHECK_NOT_NULL(c);
  sstm_free(c);
}
TEST(allocation_is_never_irrevocable) {
  setup(OLD, OLD + 1);
  CHECK_OK(sstm_stats_reset());
  SSTM_ATOMIC_BEGIN(NULL)
    for (unsigned i = 0; i < NBLOCKS; i++) {
      blocks[i] = sstm_malloc(16 + i % 700);
      CHECK_NOT_NULL(blocks[i]);
    }
    blocks[0] = sstm_realloc(blocks[0], 5000);
    CHECK_NOT_NULL(blocks[0]);
  SSTM_ATOMIC_END();
  for (unsigned i = 0; i < NBLOCKS; i++)
    CHECK_OK(sstm_run(NULL, free_and_churn, blocks[i]));
  sstm_stats_t st;
  CHECK_OK(sstm_stats_aggregate(&st));
  CHECK_GE_U(st.commits_update + st.commits_ro, NBLOCKS + 1); /* no store: read-only commits */
  CHECK_EQ_U(st.commits_irrevocable, 0);
  CHECK_EQ_U(st.aborts[SSTM_ABORT_IRREVOCABLE], 0);
  sstm_reclaim();
  sstm_test_fini();
}

/* A thread that allocates and frees in every transaction reaches a steady
 * state without malloc or locks: blocks come back through the grace period
 * into its block cache, and its reclamation batches are recycled with
 * their vectors. */
static void *volatile node;
static void replace_node(void *arg) {
  (void)arg;
  void *old = sstm_load_ptr((void *const *)&node);
  uint64_t *n = sstm_malloc(48);
  CHECK_NOT_NULL(n);
  n[0] = (uintptr_t)old;
  sstm_store_ptr((void **)&node, n);
  sstm_free(old);
}
TEST(allocating_commits_reach_a_steady_state) {
  if (!mc_available()) sstm_test_skip("needs the counting allocator");
  mc_track_sizes(OLD, OLD + 1);
  sstm_config_t c;
  sstm_test_config(&c);
  c.alloc_cache = 64 << 10; /* set here: the ASan build's default is 0 */
  CHECK_OK(sstm_init(&c));
  CHECK_OK(sstm_thread_init());
  for (unsigned i = 0; i < 5000; i++) /* warm-up: cache, logs, batch pool */
    CHECK_OK(sstm_run(NULL, replace_node, NULL));
  mc_reset();
  lc_reset();
  mc_enable(true);
  lc_enable(true);
  for (unsigned i = 0; i < 20000; i++)
    CHECK_OK(sstm_run(NULL, replace_node, NULL));
  mc_enable(false);
  lc_enable(false);
  if (mc_available()) CHECK_EQ_U(mc_allocs(), 0);
  if (lc_available()) CHECK_EQ_U(lc_locks(), 0);
  sstm_free((void *)node);
  sstm_test_fini();
}

/* The same steady state makes no system call on its commits but the heavy
 * fence (membarrier) that closes a reclamation batch, at most once per 1024
 * freed blocks: the seccomp supervisor of syscall_count.c sees every call the
 * thread makes in the window, and lets it run (the fence must happen;
 * tests/integration/syscalls.c traps calls instead, for commits that free
 * nothing). A deliberate getpid() in the window checks the counting. */
static void *steady_thread(void *arg) {
  bool *attached = arg;
  CHECK_OK(sstm_thread_init());
  for (unsigned i = 0; i < 5000; i++) /* warm-up, as above */
    CHECK_OK(sstm_run(NULL, replace_node, NULL));
  *attached = sc_attach();
  sc_enable(true);
  syscall(SYS_getpid);
  for (unsigned i = 0; i < 20000; i++)
    CHECK_OK(sstm_run(NULL, replace_node, NULL));
  sc_enable(false);
  sstm_free((void *)node);
  node = NULL;
  CHECK_OK(sstm_thread_exit());
  return NULL;
}
TEST(allocating_commits_make_no_system_call) {
#ifdef SSTM_TEST_RANDOM_DELAY
  sstm_test_skip("the random-delay build sleeps and yields inside the engine");
#endif
  sstm_config_t c;
  sstm_test_config(&c);
  c.alloc_cache = 64 << 10;
  CHECK_OK(sstm_init(&c));
  sc_start();
  bool attached = false;
  pthread_t t;
  CHECK_EQ_I(pthread_create(&t, NULL, steady_thread, &attached), 0);
  CHECK_EQ_I(pthread_join(t, NULL), 0);
  sc_stop();
  if (!attached) sstm_test_skip("the kernel refused a seccomp user-notification filter");
  uint64_t fences = sc_calls_of(SYS_membarrier);
  CHECK_EQ_U(sc_calls_of(SYS_getpid), 1);
  CHECK_EQ_U(sc_calls() - fences - 1, 0);
  CHECK_LE_U(fences, 20000 / 1024 + 1);
  CHECK_OK(sstm_shutdown());
}

SSTM_TEST_MAIN()
