/* SPDX-License-Identifier: MIT */
/* atomic_block: the inline form, SSTM_ATOMIC_BEGIN ... SSTM_ATOMIC_END().
 *
 * Two shared variables x and y must always satisfy x + y == 0. Writer
 * threads move a value from one to the other inside an inline atomic block;
 * a read-only block checks the invariant. Each thread also counts how many
 * times its blocks were (re)started. A restart jumps back to
 * SSTM_ATOMIC_BEGIN like longjmp, so locals modified inside a block and read
 * after it (attempts, sum) are declared volatile: the setjmp rule.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include <schedstm/schedstm.h>

#define NTHREADS 2
#define ITERS 100000

static int64_t x, y;
static uint64_t attempts_total, broken_total;

static void *worker(void *arg) {
  (void)arg;
  if (sstm_thread_init() != 0) abort();
  volatile uint64_t attempts = 0; /* modified in the block, read after it */
  uint64_t broken = 0;
  for (int i = 0; i < ITERS; i++) {
    SSTM_ATOMIC_BEGIN(NULL)
      attempts++;
      int64_t vx = sstm_load_i64(&x);
      int64_t vy = sstm_load_i64(&y);
      sstm_store_i64(&x, vx + 1);
      sstm_store_i64(&y, vy - 1);
    SSTM_ATOMIC_END();

    if (i % 64 == 0) {
      static const sstm_attr_t ro = {.read_only = true};
      volatile int64_t sum = 0; /* modified in the block, read after it */
      SSTM_ATOMIC_BEGIN(&ro)
        sum = sstm_load_i64(&x) + sstm_load_i64(&y);
      SSTM_ATOMIC_END();
      if (sum != 0) broken++;
    }
  }
  __atomic_fetch_add(&attempts_total, attempts, __ATOMIC_RELAXED);
  __atomic_fetch_add(&broken_total, broken, __ATOMIC_RELAXED);
  sstm_thread_exit();
  return NULL;
}

int main(void) {
  if (sstm_init(NULL) != 0) {
    fprintf(stderr, "sstm_init: %s\n", sstm_last_error());
    return 1;
  }
  pthread_t th[NTHREADS];
  for (int i = 0; i < NTHREADS; i++)
    pthread_create(&th[i], NULL, worker, NULL);
  for (int i = 0; i < NTHREADS; i++)
    pthread_join(th[i], NULL);
  sstm_shutdown();

  uint64_t blocks = (uint64_t)NTHREADS * ITERS;
  printf("atomic_block: x=%" PRId64 " y=%" PRId64 ", %" PRIu64 " blocks, %" PRIu64
         " attempts (%" PRIu64 " restarts), invariant broken %" PRIu64 " times\n",
         x, y, blocks, attempts_total, attempts_total - blocks, broken_total);
  int ok = x == (int64_t)blocks && y == -(int64_t)blocks && broken_total == 0;
  printf("atomic_block: %s\n", ok ? "OK" : "FAILED");
  return ok ? 0 : 1;
}
