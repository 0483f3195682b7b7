/* SPDX-License-Identifier: MIT */
/* The executor: sstm_exec_destroy while a submitter waits for a context
 * (src/exec/exec.c, teardown). Destroy wakes the waiting submitters, which
 * then return SSTM_ESTATE (include/schedstm/exec.h); but a woken one may
 * not run again before the drain is over and the workers have ended. The
 * test seam sstm__x_test_woken holds the submitter in that window, after
 * its wait and before it takes the queue lock again, until destroy has
 * returned or waits for it (its worker has ended and it sleeps in a
 * futex).
 *
 * Before the fix destroy returned there, which the case checks it has not
 * while the submitter is held, and the submitter then took the lock in
 * the freed executor (a heap use after free under ASan). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

#include <schedstm/exec.h>
#include <schedstm/tx.h>

#include "exec/exec_internal.h"
#include "exec_cfg.h"
#include "runner.h"

static _Atomic int gate, gated_worker, in_seam, let_go;

/* The request that holds the only context: waits for the gate (outside
 * the engine), having said which worker runs it. */
static void gated(void *a) {
  (void)a;
  atomic_store_explicit(&gated_worker, (int)gettid(), memory_order_seq_cst);
  while (!atomic_load_explicit(&gate, memory_order_seq_cst))
    usleep(100);
}

static void nothing(void *a) { (void)a; }

static void woken(void) {
  atomic_store_explicit(&in_seam, 1, memory_order_seq_cst);
  while (!atomic_load_explicit(&let_go, memory_order_seq_cst))
    usleep(100);
}

struct submitter {
  sstm_exec_t *ex;
  _Atomic int tid;
  int rc;
};
static void *submitter_main(void *p) {
  struct submitter *s = p;
  atomic_store_explicit(&s->tid, (int)gettid(), memory_order_seq_cst);
  sstm_exec_req_t r = {.fn = nothing};
  s->rc = sstm_exec_submit(s->ex, &r);
  return NULL;
}

struct destroyer {
  sstm_exec_t *ex;
  _Atomic int tid, done;
  int rc;
};
static void *destroyer_main(void *p) {
  struct destroyer *d = p;
  atomic_store_explicit(&d->tid, (int)gettid(), memory_order_seq_cst);
  d->rc = sstm_exec_destroy(d->ex);
  atomic_store_explicit(&d->done, 1, memory_order_seq_cst);
  return NULL;
}

static bool thread_gone(int tid) {
  char path[64];
  snprintf(path, sizeof path, "/proc/self/task/%d", tid);
  return access(path, F_OK) != 0;
}

TEST(destroy_waits_for_a_submitter_it_woke) {
  sstm_config_t cfg;
  sstm_test_config(&cfg);
  CHECK_OK(sstm_init(&cfg));
  sstm_exec_config_t c = sstm_test_exec_config(1, 1, 0, SSTM_EXEC_PREEMPT_NONE);
  sstm_exec_t *ex;
  CHECK_OK(sstm_exec_create(&c, &ex));
  sstm_exec_req_t r = {.fn = gated};
  CHECK_OK(sstm_exec_submit(ex, &r)); /* takes the only context */
  while (!atomic_load_explicit(&gated_worker, memory_order_seq_cst))
    usleep(1000);
  atomic_store_explicit(&sstm__x_test_woken, woken, memory_order_relaxed);
  struct submitter s = {.ex = ex};
  pthread_t st;
  CHECK_EQ_I(pthread_create(&st, NULL, submitter_main, &s), 0);
  while (!atomic_load_explicit(&s.tid, memory_order_seq_cst) ||
         !sstm_test_in_futex(atomic_load_explicit(&s.tid, memory_order_seq_cst)))
    usleep(1000);
  struct destroyer d = {.ex = ex};
  pthread_t dt;
  CHECK_EQ_I(pthread_create(&dt, NULL, destroyer_main, &d), 0);
  /* The submitter is out of its wait (woken by destroy, or earlier by
   * chance: it is counted as waiting all the same) and held. */
  while (!atomic_load_explicit(&in_seam, memory_order_seq_cst))
    usleep(1000);
  atomic_store_explicit(&gate, 1, memory_order_seq_cst);
  /* The drain is over and the worker has ended; destroy sleeps (waits for
   * the submitter) or has returned. */
  while (!atomic_load_explicit(&d.done, memory_order_seq_cst) &&
         !(thread_gone(atomic_load_explicit(&gated_worker, memory_order_seq_cst)) &&
           atomic_load_explicit(&d.tid, memory_order_seq_cst) &&
           sstm_test_in_futex(atomic_load_explicit(&d.tid, memory_order_seq_cst))))
    usleep(1000);
  bool returned_early = atomic_load_explicit(&d.done, memory_order_seq_cst);
  atomic_store_explicit(&let_go, 1, memory_order_seq_cst);
  CHECK_EQ_I(pthread_join(st, NULL), 0);
  CHECK_EQ_I(pthread_join(dt, NULL), 0);
  atomic_store_explicit(&sstm__x_test_woken, NULL, memory_order_relaxed);
  CHECK(!returned_early); /* destroy waited for the held submitter */
  CHECK_RC(s.rc, SSTM_ESTATE);
  CHECK_OK(d.rc);
  CHECK_OK(sstm_shutdown());
}

/* A submitter that waited for a context and took one (the context its
 * wait was woken for, before destroy began) may still be on its way out
 * (it asks the workers to preempt after it dropped the lock) when destroy
 * is called; destroy waits for it too (include/schedstm/exec.h: "every
 * submission that waited has returned"). The test seam
 * sstm__x_test_queued holds it there until destroy has returned or waits
 * for it, which it must: before, it returned (and freed the executor).
 * The held submission's request runs in the drain. */
static _Atomic int q_gate, q_worker, q_in_seam, q_let_go, q_ran;

static void q_gated(void *a) {
  (void)a;
  atomic_store_explicit(&q_worker, (int)gettid(), memory_order_seq_cst);
  while (!atomic_load_explicit(&q_gate, memory_order_seq_cst))
    usleep(100);
}

static void q_counted(void *a) {
  (void)a;
  atomic_fetch_add_explicit(&q_ran, 1, memory_order_seq_cst);
}

static void queued(void) {
  atomic_store_explicit(&q_in_seam, 1, memory_order_seq_cst);
  while (!atomic_load_explicit(&q_let_go, memory_order_seq_cst))
    usleep(100);
}

static void *q_submitter_main(void *p) {
  struct submitter *s = p;
  atomic_store_explicit(&s->tid, (int)gettid(), memory_order_seq_cst);
  sstm_exec_req_t r = {.fn = q_counted};
  s->rc = sstm_exec_submit(s->ex, &r);
  return NULL;
}

TEST(destroy_waits_for_a_submitter_that_waited_and_took_a_context) {
  sstm_config_t cfg;
  sstm_test_config(&cfg);
  CHECK_OK(sstm_init(&cfg));
  sstm_exec_config_t c = sstm_test_exec_config(1, 1, 0, SSTM_EXEC_PREEMPT_NONE);
  sstm_exec_t *ex;
  CHECK_OK(sstm_exec_create(&c, &ex));
  sstm_exec_req_t r = {.fn = q_gated};
  CHECK_OK(sstm_exec_submit(ex, &r)); /* takes the only context */
  while (!atomic_load_explicit(&q_worker, memory_order_seq_cst))
    usleep(1000);
  atomic_store_explicit(&sstm__x_test_queued, queued, memory_order_relaxed);
  struct submitter s = {.ex = ex, .rc = -1};
  pthread_t st;
  CHECK_EQ_I(pthread_create(&st, NULL, q_submitter_main, &s), 0);
  while (!atomic_load_explicit(&s.tid, memory_order_seq_cst) ||
         !sstm_test_in_futex(atomic_load_explicit(&s.tid, memory_order_seq_cst)))
    usleep(1000);
  /* The gated request ends and gives its context to the waiter, which
   * takes it and is held after its unlock. */
  atomic_store_explicit(&q_gate, 1, memory_order_seq_cst);
  while (!atomic_load_explicit(&q_in_seam, memory_order_seq_cst))
    usleep(1000);
  struct destroyer d = {.ex = ex};
  pthread_t dt;
  CHECK_EQ_I(pthread_create(&dt, NULL, destroyer_main, &d), 0);
  /* The drain runs the held submission's request, the worker ends; then
   * destroy sleeps (waits for the submitter) or has returned. */
  while (!atomic_load_explicit(&d.done, memory_order_seq_cst) &&
         !(thread_gone(atomic_load_explicit(&q_worker, memory_order_seq_cst)) &&
           atomic_load_explicit(&d.tid, memory_order_seq_cst) &&
           sstm_test_in_futex(atomic_load_explicit(&d.tid, memory_order_seq_cst))))
    usleep(1000);
  bool returned_early = atomic_load_explicit(&d.done, memory_order_seq_cst);
  atomic_store_explicit(&q_let_go, 1, memory_order_seq_cst);
  CHECK_EQ_I(pthread_join(st, NULL), 0);
  CHECK_EQ_I(pthread_join(dt, NULL), 0);
  atomic_store_explicit(&sstm__x_test_queued, NULL, memory_order_relaxed);
  CHECK(!returned_early); /* destroy waited for the held submitter */
  CHECK_OK(s.rc);         /* its request was accepted */
  CHECK_EQ_I(atomic_load_explicit(&q_ran, memory_order_seq_cst), 1); /* and ran */
  CHECK_OK(d.rc);
  CHECK_OK(sstm_shutdown());
}

SSTM_TEST_MAIN()
