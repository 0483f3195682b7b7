/* SPDX-License-Identifier: MIT */
/* STAMP through gcc -fgnu-tm (bench/stamp/tm_itm.h) without STAMP: a small
 * program written the way STAMP's applications are, through the TM_*
 * macros only, compiled as bench/stamp/build.sh compiles them (-fgnu-tm,
 * tm_itm.h force-included, a "tm.h" that is STAMP's stand-in and must
 * come out empty) and linked with libschedstm-itm.
 *
 *   stamp_itm [-t THREADS] [-n TRANSACTIONS_PER_THREAD]
 *
 * Each thread, in transactions (TM_BEGIN / TM_END):
 * - moves 1.0 between two of NACC adjacent float balances through a
 *   TM_CALLABLE function (TM_SHARED_READ_F / TM_SHARED_WRITE_F), with an
 *   assert() inside it, and counts the move in a long total;
 * - pushes a node (TM_MALLOC) onto a shared stack every 4th transaction
 *   and pops and frees one (TM_FREE) every 8th;
 * - every 16th transaction, sums the balances in a TM_BEGIN_RO block: the
 *   sum must be the initial total in every transaction (a consistent
 *   snapshot; the values stay small integers, so float sums are exact).
 * The threads start together (a barrier), so that their transactions
 * overlap where the host runs them in parallel. The test is first one of
 * the header: that STAMP-style code compiles through it (the mapping of
 * every TM_* macro the program uses, TM_CALLABLE, assert() in a
 * transaction, STAMP's tm.h emptied), and that its transactions keep the
 * invariants on libschedstm-itm. After the threads: the balances sum to
 * their initial total, the moves to the threads' counts, the stack's
 * length and values to the pushes and pops. Prints "verification passed"
 * and exits 0, or says what failed and exits 1. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tm.h" /* tests/integration/stamp_itm/tm.h: empty once tm_itm.h came first */

#if !defined(SSTM_STAMP_TM_ITM_H) || !defined(SSTM_STAMP_ITM_TEST_THREAD_H)
#error "bench/stamp/tm_itm.h was not force-included, or it did not include thread.h"
#endif

#define NACC 16
#define MAXT 64
#define START 100.0f

typedef struct node {
  long value;
  struct node *next;
} node_t;

static struct {
  float balance[NACC];
  long moves;
  node_t *top;
  long length;
  long sum_values;
  long bad_snapshots;
} shared;

static long per_thread = 2000;
/* the threads start together, so that their transactions overlap */
static pthread_barrier_t start;

TM_CALLABLE static void move(TM_ARGDECL long from, long to);

TM_CALLABLE static void move(TM_ARGDECL long from, long to) {
  assert(from != to);
  float a = TM_SHARED_READ_F(shared.balance[from]);
  float b = TM_SHARED_READ_F(shared.balance[to]);
  TM_SHARED_WRITE_F(shared.balance[from], a - 1.0f);
  TM_SHARED_WRITE_F(shared.balance[to], b + 1.0f);
}

static void *worker(void *arg) {
  long id = (long)arg;
  unsigned seed = (unsigned)(id * 2654435761u + 1);
  TM_THREAD_ENTER();
  pthread_barrier_wait(&start);
  for (long i = 0; i < per_thread; i++) {
    long from = rand_r(&seed) % NACC;
    long to = (from + 1 + rand_r(&seed) % (NACC - 1)) % NACC;
    node_t *fresh = NULL;
    TM_BEGIN();
    move(TM_ARG from, to);
    TM_SHARED_WRITE(shared.moves, TM_SHARED_READ(shared.moves) + 1);
    if (i % 4 == 0) {
      fresh = (node_t *)TM_MALLOC(sizeof *fresh);
      fresh->value = id * per_thread + i;
      fresh->next = (node_t *)TM_SHARED_READ_P(shared.top);
      TM_SHARED_WRITE_P(shared.top, fresh);
      TM_SHARED_WRITE(shared.length, TM_SHARED_READ(shared.length) + 1);
      TM_SHARED_WRITE(shared.sum_values, TM_SHARED_READ(shared.sum_values) + fresh->value);
    }
    if (i % 8 == 7) {
      node_t *n = (node_t *)TM_SHARED_READ_P(shared.top);
      if (n != NULL) {
        TM_SHARED_WRITE_P(shared.top, n->next);
        TM_SHARED_WRITE(shared.length, TM_SHARED_READ(shared.length) - 1);
        TM_SHARED_WRITE(shared.sum_values, TM_SHARED_READ(shared.sum_values) - n->value);
        TM_FREE(n);
      }
    }
    TM_END();
    if (i % 16 == 15) {
      float sum = 0;
      TM_BEGIN_RO();
      sum = 0;
      for (int k = 0; k < NACC; k++)
        sum += TM_SHARED_READ_F(shared.balance[k]);
      TM_END();
      if (sum != NACC * START) __atomic_add_fetch(&shared.bad_snapshots, 1, __ATOMIC_RELAXED);
    }
  }
  TM_THREAD_EXIT();
  return NULL;
}

int main(int argc, char **argv) {
  long nthreads = 2;
  int opt;
  while ((opt = getopt(argc, argv, "t:n:")) != -1) {
    if (opt == 't')
      nthreads = strtol(optarg, NULL, 10);
    else if (opt == 'n')
      per_thread = strtol(optarg, NULL, 10);
    else {
      fprintf(stderr, "usage: %s [-t THREADS] [-n TRANSACTIONS_PER_THREAD]\n", argv[0]);
      return 2;
    }
  }
  if (nthreads < 1 || nthreads > MAXT || per_thread < 1) {
    fprintf(stderr, "stamp_itm: -t must be 1..%d and -n positive\n", MAXT);
    return 2;
  }
  for (int k = 0; k < NACC; k++)
    shared.balance[k] = START;
  TM_STARTUP(nthreads);
  pthread_barrier_init(&start, NULL, (unsigned)nthreads);
  pthread_t th[MAXT];
  for (long t = 0; t < nthreads; t++) {
    int rc = pthread_create(&th[t], NULL, worker, (void *)t);
    if (rc != 0) {
      fprintf(stderr, "stamp_itm: pthread_create: %s\n", strerror(rc));
      return 1;
    }
  }
  for (long t = 0; t < nthreads; t++)
    pthread_join(th[t], NULL);
  pthread_barrier_destroy(&start);
  TM_SHUTDOWN();

  int ok = 1;
  float sum = 0;
  for (int k = 0; k < NACC; k++)
    sum += shared.balance[k];
  if (sum != NACC * START) {
    printf("FAIL: the balances sum to %g, not %g\n", (double)sum, (double)(NACC * START));
    ok = 0;
  }
  if (shared.moves != nthreads * per_thread) {
    printf("FAIL: %ld moves counted, %ld made\n", shared.moves, nthreads * per_thread);
    ok = 0;
  }
  long length = 0, values = 0;
  for (node_t *n = shared.top; n != NULL; n = n->next) {
    length++;
    values += n->value;
  }
  if (length != shared.length || values != shared.sum_values) {
    printf("FAIL: the stack has %ld nodes summing to %ld; the counts say %ld and %ld\n", length,
           values, shared.length, shared.sum_values);
    ok = 0;
  }
  if (shared.bad_snapshots != 0) {
    printf("FAIL: %ld read-only transactions saw balances that did not sum to the total\n",
           shared.bad_snapshots);
    ok = 0;
  }
  while (shared.top != NULL) {
    node_t *n = shared.top;
    shared.top = n->next;
    free(n);
  }
  if (!ok) return 1;
  printf("verification passed\n");
  return 0;
}
