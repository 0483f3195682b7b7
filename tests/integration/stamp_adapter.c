/* SPDX-License-Identifier: MIT */
/* The STAMP adapter (bench/stamp/stm.h, tm.h) without STAMP: a small
 * program written the way STAMP's applications are, through the TM_*
 * macros only, checked against what must hold after it ran.
 *
 *   stamp_adapter [-t THREADS] [-n TRANSACTIONS_PER_THREAD]
 *
 * Each thread, between TM_THREAD_ENTER and TM_THREAD_EXIT:
 * - moves 1.0 between two of NACC adjacent float balances
 *   (TM_SHARED_READ_F / TM_SHARED_WRITE_F) and counts the move in its own
 *   float tally next to the other threads' tallies and in a long total
 *   (TM_SHARED_READ / TM_SHARED_WRITE): the balances must sum to their
 *   initial total and each tally must equal the thread's count, which a
 *   float accessed as a wider word would break (its neighbour's update
 *   lost to a stale write-back);
 * - pushes a node (TM_MALLOC) onto a shared stack (TM_SHARED_READ_P /
 *   TM_SHARED_WRITE_P) every 4th transaction and pops and frees one
 *   (TM_FREE) every 8th: the stack's length and the sum of its values must
 *   match the pushes and pops;
 * - every 16th transaction, restarts its attempt twice (TM_RESTART) after
 *   writing shared data and a thread-private iterator with TM_LOCAL_WRITE_P
 *   (and locals of a function it calls, whose frame is dead at the
 *   restart): the shared writes of the restarted attempts must vanish, the
 *   local write must be seen at once by plain reads in its attempt and be
 *   undone by each restart.
 * Prints "verification passed" and exits 0, or says what failed and exits
 * 1. Environment as for any schedstm program (SCHEDSTM_CM, ...). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tm.h"

#define NACC 16
#define MAXT 64
#define START 100.0f

typedef struct node {
  long value;
  struct node *next;
} node_t;

static struct {
  float balance[NACC];
  float tally[MAXT]; /* one per thread, adjacent */
  long moves;
  long restarted_writes; /* only restarted attempts write it: must stay 0 */
  node_t *top;
  long length;
} shared;

/* thread-private, written with TM_LOCAL_WRITE_P */
typedef struct {
  node_t *cur;
  long steps;
} iter_t;

static long per_thread = 2000;
static long failures;
static pthread_mutex_t fail_lock = PTHREAD_MUTEX_INITIALIZER;

static void fail(const char *what, long a, long b) {
  pthread_mutex_lock(&fail_lock);
  fprintf(stderr, "stamp_adapter: %s (%ld, expected %ld)\n", what, a, b);
  failures++;
  pthread_mutex_unlock(&fail_lock);
}

static void move(TM_ARGDECL long k, unsigned *seed) {
  long from = rand_r(seed) % NACC, to = (from + 1 + rand_r(seed) % (NACC - 1)) % NACC;
  TM_BEGIN();
  float a = TM_SHARED_READ_F(shared.balance[from]);
  float b = TM_SHARED_READ_F(shared.balance[to]);
  TM_SHARED_WRITE_F(shared.balance[from], a - 1.0f);
  TM_SHARED_WRITE_F(shared.balance[to], b + 1.0f);
  TM_SHARED_WRITE_F(shared.tally[k], TM_SHARED_READ_F(shared.tally[k]) + 1.0f);
  TM_SHARED_WRITE(shared.moves, (long)TM_SHARED_READ(shared.moves) + 1);
  TM_END();
}

static void push(TM_ARGDECL long value) {
  TM_BEGIN();
  node_t *n = (node_t *)TM_MALLOC(sizeof *n);
  n->value = value; /* private until linked */
  n->next = (node_t *)TM_SHARED_READ_P(shared.top);
  TM_SHARED_WRITE_P(shared.top, n);
  TM_SHARED_WRITE(shared.length, (long)TM_SHARED_READ(shared.length) + 1);
  TM_END();
}

static long pop(TM_ARGDECL_ALONE) {
  volatile long v = -1; /* assigned in the block, read after it */
  TM_BEGIN();
  node_t *n = (node_t *)TM_SHARED_READ_P(shared.top);
  if (n != NULL) {
    TM_SHARED_WRITE_P(shared.top, (node_t *)TM_SHARED_READ_P(n->next));
    TM_SHARED_WRITE(shared.length, (long)TM_SHARED_READ(shared.length) - 1);
    v = (long)TM_SHARED_READ(n->value);
    TM_FREE(n);
  } else {
    v = -1;
  }
  TM_END();
  return v;
}

/* A list-iterator-like local of a function the transaction calls, written
 * with TM_LOCAL_WRITE: its frame is dead when the attempt restarts, and by
 * then other frames live there, so its undo must not write there.
 * restart_from_callee's array covers where callee_local's slots were (the
 * test checks that it does, and counts the restarts where it did); it
 * restarts the attempt after registering an abort action that runs after
 * the adapter's undo and checks that the undo left its array alone. */
#define NSLOTS 8
static __thread uintptr_t callee_slots; /* an address only: the frame is gone */
static __thread long undo_hits;
static long layout_matches; /* restarts whose slots lay where callee_local's were */

static __attribute__((noinline)) long callee_local(TM_ARGDECL long n) {
  long slots[NSLOTS] = {0};
  callee_slots = (uintptr_t)slots;
  for (long i = 0; i < n; i++)
    TM_LOCAL_WRITE(slots[i % NSLOTS], (long)TM_SHARED_READ(shared.moves) * 0 + 7);
  return slots[0] == 7 ? n : -1;
}

#define NCOVER 64 /* restart_from_callee's array: covers callee_local's slots */

static void check_slots(void *arg) {
  volatile long *cover = arg;
  for (int i = 0; i < NCOVER; i++)
    if (cover[i] != 1000 + i) undo_hits++;
}

static __attribute__((noinline)) void restart_from_callee(TM_ARGDECL volatile int *restarts) {
  volatile long cover[NCOVER];
  for (int i = 0; i < NCOVER; i++)
    cover[i] = 1000 + i;
  if (callee_slots >= (uintptr_t)cover &&
      callee_slots + sizeof(long[NSLOTS]) <= (uintptr_t)(cover + NCOVER)) {
    __atomic_fetch_add(&layout_matches, 1, __ATOMIC_RELAXED);
    if (sstm_on_abort(check_slots, (void *)cover) != 0) fail("sstm_on_abort", 1, 0);
  }
  (*restarts)++;
  TM_RESTART();
}

/* Two user restarts, then a commit (conflicts may add attempts). `tries`
 * and `restarts` are modified inside the block and read after a restart,
 * hence volatile (the rule of SSTM_ATOMIC_BEGIN). */
static void restart_twice(TM_ARGDECL iter_t *it) {
  volatile int tries = 0, restarts = 0;
  node_t sentinel = {0, NULL};
  it->cur = NULL;
  it->steps = 0;
  TM_BEGIN();
  tries++;
  /* the local writes of the attempts that ended were undone */
  if (it->cur != NULL || it->steps != 0) fail("TM_LOCAL_WRITE not undone by an abort", 1, 0);
  TM_LOCAL_WRITE_P(it->cur, &sentinel);
  TM_LOCAL_WRITE(it->steps, it->steps + tries);
  /* seen at once by plain reads in the same attempt */
  if (it->cur != &sentinel || it->steps != tries)
    fail("TM_LOCAL_WRITE not visible in its attempt", it->steps, tries);
  if (callee_local(TM_ARG 4) != 4) fail("TM_LOCAL_WRITE in a callee", 0, 4);
  if (restarts < 2) {
    TM_SHARED_WRITE(shared.restarted_writes, (long)TM_SHARED_READ(shared.restarted_writes) + 1);
    restart_from_callee(TM_ARG & restarts);
  }
  TM_END();
  if (restarts != 2 || tries < 3) fail("TM_RESTART: restarts", restarts, 2);
  if (undo_hits != 0) fail("TM_LOCAL_WRITE undone into a dead frame", undo_hits, 0);
  if (it->cur != &sentinel || it->steps != tries)
    fail("TM_LOCAL_WRITE after commit", it->steps, tries);
}

static void *worker(void *arg) {
  long k = (long)arg;
  unsigned seed = (unsigned)(k * 7919 + 1);
  iter_t *it = (iter_t *)P_MALLOC(sizeof *it);
  long pushed = 0, popped = 0, sum = 0;
  TM_THREAD_ENTER();
  for (long i = 1; i <= per_thread; i++) {
    move(TM_ARG k, &seed);
    if (i % 4 == 0) {
      push(TM_ARG i);
      pushed++;
      sum += i;
    }
    if (i % 8 == 0) {
      long v = pop(TM_ARG_ALONE);
      if (v >= 0) {
        popped++;
        sum -= v;
      }
    }
    if (i % 16 == 0) restart_twice(TM_ARG it);
  }
  TM_THREAD_EXIT();
  P_FREE(it);
  long *res = (long *)P_MALLOC(3 * sizeof *res);
  res[0] = pushed;
  res[1] = popped;
  res[2] = sum;
  return res;
}

MAIN(argc, argv) {
  long nthreads = 4;
  int c;
  while ((c = getopt(argc, argv, "t:n:")) != -1) {
    if (c == 't')
      nthreads = atol(optarg);
    else if (c == 'n')
      per_thread = atol(optarg);
    else {
      fprintf(stderr, "usage: %s [-t THREADS] [-n TRANSACTIONS]\n", argv[0]);
      MAIN_RETURN(2);
    }
  }
  if (nthreads < 1 || nthreads > MAXT || per_thread < 16) {
    fprintf(stderr, "stamp_adapter: -t 1..%d, -n at least 16\n", MAXT);
    MAIN_RETURN(2);
  }
  for (int i = 0; i < NACC; i++)
    shared.balance[i] = START;
  TM_STARTUP(nthreads);
  pthread_t th[MAXT];
  for (long k = 0; k < nthreads; k++)
    if (pthread_create(&th[k], NULL, worker, (void *)k) != 0) {
      perror("pthread_create");
      MAIN_RETURN(1);
    }
  long pushed = 0, popped = 0, sum = 0;
  for (long k = 0; k < nthreads; k++) {
    long *res;
    pthread_join(th[k], (void **)&res);
    pushed += res[0];
    popped += res[1];
    sum += res[2];
    free(res);
  }
  /* After the parallel region: plain reads, as STAMP's checks do. */
  float total = 0;
  for (int i = 0; i < NACC; i++)
    total += shared.balance[i];
  if (total != START * NACC) fail("sum of the float balances", (long)total, (long)(START * NACC));
  for (long k = 0; k < nthreads; k++)
    if (shared.tally[k] != (float)per_thread)
      fail("a thread's float tally", (long)shared.tally[k], per_thread);
  if (shared.moves != nthreads * per_thread) fail("moves", shared.moves, nthreads * per_thread);
  if (shared.restarted_writes != 0)
    fail("writes of restarted attempts", shared.restarted_writes, 0);
  long length = 0, stack_sum = 0;
  for (node_t *n = shared.top; n != NULL; n = n->next) {
    length++;
    stack_sum += n->value;
  }
  if (length != shared.length || length != pushed - popped)
    fail("stack length", length, pushed - popped);
  if (stack_sum != sum) fail("sum of the stack", stack_sum, sum);
  while (shared.top != NULL) {
    node_t *n = shared.top;
    shared.top = n->next;
    free(n);
  }
  TM_SHUTDOWN();
  if (failures != 0) {
    fprintf(stderr, "stamp_adapter: %ld check(s) failed\n", failures);
    MAIN_RETURN(1);
  }
  printf("verification passed (%ld threads x %ld transactions; dead-frame undo checked on %ld "
         "restarts)\n",
         nthreads, per_thread, layout_matches);
  MAIN_RETURN(0);
}
