/* SPDX-License-Identifier: MIT */
/* The transactional stdio's seqlock reader (docs/design/tm-libc.md (S2)),
 * through a test seam that exists in SCHEDSTM_DEBUG builds only
 * (sstm__stdio_snapshot_hook, src/libc/esc.h): an attempt that copies the
 * installed state of a stream has found the version it wants installed;
 * before it copies, another thread commits and installs the next version.
 * The copy is then the newer version's state, which the attempt must not
 * use: its second test of the installed version restarts it.
 *
 * Under commit-time locking nothing stops that commit (the attempt's write
 * of the stream's word is not locked before its own commit); under
 * encounter-time locking the other thread would wait for that lock, so the
 * test runs in the ctl variant only. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "libc/esc.h"
#include "runner.h"

static char path[64];
static sstm_file_t *g_f;
static uint64_t g_gen; /* transactional: the other thread's commits */
static atomic_int hook_calls;
/* changed inside the attempts: volatile, as a restart returns through a
 * setjmp checkpoint */
static volatile int attempts, mixed;

static void *move_to_50(void *arg) {
  (void)arg;
  CHECK_OK(sstm_thread_init());
  SSTM_ATOMIC_BEGIN(NULL)
    CHECK_EQ_I(sstm_fseek(g_f, 50, SEEK_SET), 0);
    sstm_store_u64(&g_gen, sstm_load_u64(&g_gen) + 1);
  SSTM_ATOMIC_END();
  CHECK_OK(sstm_thread_exit());
  return NULL;
}

/* The first snapshot only: the other thread's whole transaction runs and
 * installs its version here. */
static void commit_elsewhere(const struct sstm_file *f) {
  (void)f;
  if (atomic_fetch_add_explicit(&hook_calls, 1, memory_order_seq_cst) != 0) return;
  pthread_t t;
  CHECK_EQ_I(pthread_create(&t, NULL, move_to_50, NULL), 0);
  CHECK_EQ_I(pthread_join(t, NULL), 0);
}

TEST(a_copy_of_the_state_that_a_newer_installation_overtook_restarts) {
  if (sstm_test_design() != SSTM_DESIGN_CTL)
    sstm_test_skip("encounter-time locking: the other thread waits for this attempt's lock");
  sstm_test_init();
  sstm_test_tmp_file(path, sizeof path, "seams");
  int fd = open(path, O_WRONLY | O_TRUNC);
  CHECK_GE_I(fd, 0);
  static char a[100];
  memset(a, 'A', sizeof a);
  CHECK_EQ_I(write(fd, a, sizeof a), (int)sizeof a);
  close(fd);
  g_f = sstm_fopen(path, "r+");
  CHECK_NOT_NULL(g_f);
  g_gen = 0;
  atomic_store_explicit(&hook_calls, 0, memory_order_seq_cst);
  sstm__stdio_snapshot_hook = commit_elsewhere;
  attempts = 0, mixed = 0;
  SSTM_ATOMIC_BEGIN(NULL)
    attempts++;
    uint64_t gen = sstm_load_u64(&g_gen);
    /* acquires the stream: its snapshot copies the installed state */
    CHECK_EQ_I(sstm_fseek(g_f, 0, SEEK_CUR), 0);
    long pos = sstm_ftell(g_f);
    /* a position the other thread's commit made, with a counter read
     * before that commit: a state no serial order has */
    if (gen == 0 && pos != 0) mixed++;
  SSTM_ATOMIC_END();
  sstm__stdio_snapshot_hook = NULL;
  CHECK_GE_I(atomic_load_explicit(&hook_calls, memory_order_seq_cst), 1);
  CHECK_EQ_I(mixed, 0);
  CHECK_GE_I(attempts, 2); /* the first copy was refused */
  CHECK_EQ_I(sstm_ftell(g_f), 50);
  CHECK_OK(sstm_fclose(g_f));
  unlink(path);
  sstm_test_fini();
}

SSTM_TEST_MAIN()
