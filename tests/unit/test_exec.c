/* SPDX-License-Identifier: MIT */
/* The executor's API (include/schedstm/exec.h): lifecycle, results by
 * future and callback, backpressure, drain at destroy, priority order,
 * the configuration and its environment, statistics, and every misuse
 * error. Preemption itself is tests/integration/exec_preempt.c. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exec_cfg.h"
#include "runner.h"

static void init_lib(void) {
  sstm_config_t cfg;
  sstm_test_config(&cfg);
  CHECK_OK(sstm_init(&cfg));
}

/* A test configuration: no environment, small, the given workers. */
static sstm_exec_config_t xcfg(unsigned workers, unsigned contexts, sstm_exec_preempt_t m) {
  return sstm_test_exec_config(workers, contexts, 0, m);
}

static uint64_t counter;

static void incr(void *arg) {
  uint64_t by = (uint64_t)(uintptr_t)arg;
  sstm_store_u64(&counter, sstm_load_u64(&counter) + by);
}

TEST(create_destroy) {
  init_lib();
  sstm_exec_config_t c = xcfg(2, 8, SSTM_EXEC_PREEMPT_SIGNAL);
  sstm_exec_t *ex = NULL;
  CHECK_OK(sstm_exec_create(&c, &ex));
  CHECK_NOT_NULL(ex);
  char buf[512];
  int n = sstm_exec_describe(ex, buf, sizeof buf);
  CHECK_GT_I(n, 0);
  CHECK_CONTAINS(buf, "workers=2");
  CHECK_CONTAINS(buf, "preempt=signal");
  /* the library outlives its executors; the refusal says why */
  CHECK_RC(sstm_shutdown(), SSTM_EBUSY);
  CHECK_CONTAINS(sstm_last_error(), "sstm_exec_destroy");
  CHECK_OK(sstm_exec_destroy(ex));
  /* defaults: one worker per allowed CPU */
  c = xcfg(0, 4, SSTM_EXEC_PREEMPT_NONE);
  CHECK_OK(sstm_exec_create(&c, &ex));
  CHECK_OK(sstm_exec_destroy(ex));
  CHECK_OK(sstm_shutdown());
}

TEST(misuse_errors) {
  sstm_exec_t *ex = (sstm_exec_t *)&ex;
  sstm_exec_config_t c = xcfg(1, 4, SSTM_EXEC_PREEMPT_NONE);
  CHECK_RC(sstm_exec_create(&c, &ex), SSTM_ESTATE); /* before sstm_init */
  CHECK_NULL(ex);
  CHECK_CONTAINS(sstm_last_error(), "sstm_init");
  init_lib();
  CHECK_RC(sstm_exec_create(&c, NULL), SSTM_EINVAL);
  CHECK_RC(sstm_exec_config_default_sized(&c, 3), SSTM_EINVAL);
  CHECK_RC(sstm_exec_config_default_sized(NULL, sizeof c), SSTM_EINVAL);
  sstm_exec_config_t bad = c;
  bad.size = 12;
  CHECK_RC(sstm_exec_create(&bad, &ex), SSTM_EINVAL);
  CHECK_CONTAINS(sstm_last_error(), "size");
  bad = c;
  bad.levels = 0;
  CHECK_RC(sstm_exec_create(&bad, &ex), SSTM_EINVAL);
  CHECK_CONTAINS(sstm_last_error(), "levels");
  bad = c;
  bad.levels = 65;
  CHECK_RC(sstm_exec_create(&bad, &ex), SSTM_EINVAL);
  bad = c;
  bad.contexts = 0;
  CHECK_RC(sstm_exec_create(&bad, &ex), SSTM_EINVAL);
  CHECK_CONTAINS(sstm_last_error(), "contexts");
  bad = c;
  bad.preempt = (sstm_exec_preempt_t)7;
  CHECK_RC(sstm_exec_create(&bad, &ex), SSTM_EINVAL);
  CHECK_CONTAINS(sstm_last_error(), "preempt");
  bad = c;
  bad.tick_us = 5;
  CHECK_RC(sstm_exec_create(&bad, &ex), SSTM_EINVAL);
  CHECK_CONTAINS(sstm_last_error(), "tick_us");
  bad = c; /* ticks without preemption, without ticks */
  bad.preempt = SSTM_EXEC_PREEMPT_CHECK_ONLY;
  bad.tick_us = 0;
  CHECK_RC(sstm_exec_create(&bad, &ex), SSTM_EINVAL);
  CHECK_CONTAINS(sstm_last_error(), "check-only needs a periodic tick");
  CHECK_NULL(ex);
  bad = c;
  bad.stack_kb = 1;
  CHECK_RC(sstm_exec_create(&bad, &ex), SSTM_EINVAL);
  CHECK_RC(sstm_exec_destroy(NULL), SSTM_EINVAL);

  CHECK_OK(sstm_exec_create(&c, &ex));
  sstm_exec_req_t r = {.fn = incr, .arg = (void *)1, .priority = c.levels};
  CHECK_RC(sstm_exec_submit(ex, &r), SSTM_EINVAL);
  CHECK_CONTAINS(sstm_last_error(), "priority");
  CHECK_RC(sstm_exec_try_submit(ex, &r), SSTM_EINVAL);
  r.priority = 0;
  r.fn = NULL;
  CHECK_RC(sstm_exec_submit(ex, &r), SSTM_EINVAL);
  CHECK_CONTAINS(sstm_last_error(), "fn");
  CHECK_RC(sstm_exec_submit(NULL, &r), SSTM_EINVAL);
  CHECK_RC(sstm_exec_submit(ex, NULL), SSTM_EINVAL);
  sstm_exec_future_t f;
  memset(&f, 0, sizeof f);
  CHECK_RC(sstm_exec_wait(&f), SSTM_EINVAL); /* never submitted */
  CHECK_FALSE(sstm_exec_done(&f));           /* nor ended */
  CHECK_RC(sstm_exec_wait(NULL), SSTM_EINVAL);
  CHECK_FALSE(sstm_exec_done(NULL));
  sstm_exec_level_stats_t st;
  CHECK_RC(sstm_exec_stats(ex, c.levels, &st), SSTM_EINVAL);
  CHECK_RC(sstm_exec_stats(NULL, 0, &st), SSTM_EINVAL);
  CHECK_RC(sstm_exec_stats_sized(ex, 0, &st, 4), SSTM_EINVAL);
  CHECK_RC(sstm_exec_describe(NULL, NULL, 0), SSTM_EINVAL);
  CHECK_EQ_STR(sstm_exec_preempt_name((sstm_exec_preempt_t)9), "?");
  CHECK_EQ_STR(sstm_exec_preempt_name(SSTM_EXEC_PREEMPT_POLL), "poll");
  CHECK_EQ_STR(sstm_exec_preempt_name(SSTM_EXEC_PREEMPT_CHECK_ONLY), "check-only");
  /* outside a body the regions do nothing */
  CHECK_OK(sstm_exec_nopreempt_begin());
  CHECK_OK(sstm_exec_nopreempt_end());
  CHECK_OK(sstm_exec_destroy(ex));
  /* not enough descriptors */
  CHECK_OK(sstm_shutdown());
  sstm_config_t lc;
  sstm_test_config(&lc);
  lc.max_threads = 4;
  CHECK_OK(sstm_init(&lc));
  c.contexts = 8;
  CHECK_RC(sstm_exec_create(&c, &ex), SSTM_ELIMIT);
  CHECK_NULL(ex);
  /* the message says that the contexts took the slots */
  CHECK_CONTAINS(sstm_last_error(), "sstm_exec_create: no descriptor for context");
  CHECK_CONTAINS(sstm_last_error(), "of 8");
  CHECK_OK(sstm_shutdown()); /* nothing was left behind */
}

TEST(futures_and_callbacks) {
  init_lib();
  sstm_exec_config_t c = xcfg(2, 16, SSTM_EXEC_PREEMPT_SIGNAL);
  sstm_exec_t *ex;
  CHECK_OK(sstm_exec_create(&c, &ex));
  enum { N = 400 };
  static sstm_exec_future_t f[N];
  counter = 0;
  for (unsigned i = 0; i < N; i++) {
    sstm_exec_req_t r = {
        .fn = incr, .arg = (void *)(uintptr_t)(i + 1), .priority = i % c.levels, .future = &f[i]};
    CHECK_OK(sstm_exec_submit(ex, &r));
  }
  for (unsigned i = 0; i < N; i++)
    CHECK_OK(sstm_exec_wait(&f[i]));
  for (unsigned i = 0; i < N; i++)
    CHECK_TRUE(sstm_exec_done(&f[i]));
  CHECK_EQ_U(counter, (uint64_t)N * (N + 1) / 2);
  sstm_exec_future_t g;
  CHECK_OK(sstm_exec_wait(&f[0])); /* again: the same result */
  sstm_exec_req_t r = {.fn = incr, .arg = (void *)5, .future = &g};
  CHECK_OK(sstm_exec_submit(ex, &r));
  CHECK_OK(sstm_exec_wait(&g));
  CHECK_EQ_U(counter, (uint64_t)N * (N + 1) / 2 + 5);
  CHECK_OK(sstm_exec_destroy(ex));
  CHECK_OK(sstm_shutdown());
}

/* The calls that wait for requests refuse where the request may wait for
 * the caller. Inside a transaction: the request may meet the caller's
 * locks and wait for its end (a ser-* loser), abort and retry until it
 * ends (suicide), or wait at its begin while the caller is irrevocable,
 * and the caller would wait for the request; no policy breaks that cycle,
 * since the caller is not at a barrier. On a worker (a done callback): the
 * request may need that worker, and a request's own future is set after
 * its callback returns. A future whose request has ended is read anywhere;
 * the non-blocking submission stays usable; outside, the wait waits. */
static uint64_t other;
static atomic_int held_release;
static void held(void *arg) { /* runs until the test releases it */
  (void)arg;
  while (!atomic_load_explicit(&held_release, memory_order_acquire))
    sched_yield();
  sstm_store_u64(&other, sstm_load_u64(&other) + 1);
}
static sstm_exec_future_t own_f, ended_f;
static int own_wait_rc = 99, ended_wait_rc = 99;
static void wait_in_callback(void *arg, int rc) {
  (void)arg;
  (void)rc;
  own_wait_rc = sstm_exec_wait(&own_f);     /* set after this callback: refused */
  ended_wait_rc = sstm_exec_wait(&ended_f); /* ended: its result */
}
static void nop(void *arg) { (void)arg; }

TEST(calls_that_wait_for_requests_refuse_where_the_request_may_wait_for_them) {
  init_lib();
  CHECK_OK(sstm_thread_init());
  sstm_exec_config_t c = xcfg(1, 4, SSTM_EXEC_PREEMPT_NONE);
  sstm_exec_t *ex;
  CHECK_OK(sstm_exec_create(&c, &ex));
  static sstm_exec_future_t f, g;
  other = 0;
  atomic_store_explicit(&held_release, 0, memory_order_relaxed);
  sstm_exec_req_t e = {.fn = nop, .future = &g};
  CHECK_OK(sstm_exec_submit(ex, &e));
  CHECK_OK(sstm_exec_wait(&g));
  volatile int waited = 99, waited_ended = 99, submitted = 99, destroyed = 99, tried = 99,
               created = 99, created_none = 0;
  SSTM_ATOMIC_BEGIN(NULL)
    sstm_store_u64(&counter, 1);
    sstm_exec_req_t r = {.fn = held, .future = &f};
    tried = sstm_exec_try_submit(ex, &r);
    waited = sstm_exec_wait(&f);
    waited_ended = sstm_exec_wait(&g);
    sstm_exec_req_t q = {.fn = nop};
    submitted = sstm_exec_submit(ex, &q);
    destroyed = sstm_exec_destroy(ex);
    sstm_exec_t *ex2 = NULL;
    created = sstm_exec_create(&c, &ex2);
    created_none = ex2 == NULL;
  SSTM_ATOMIC_END();
  CHECK_RC(created, SSTM_EBUSY); /* an abort would not undo it */
  CHECK_TRUE(created_none);
  CHECK_OK(tried);
  CHECK_RC(waited, SSTM_EBUSY);
  CHECK_OK(waited_ended);
  CHECK_RC(submitted, SSTM_EBUSY);
  CHECK_RC(destroyed, SSTM_EBUSY);
  atomic_store_explicit(&held_release, 1, memory_order_release);
  CHECK_OK(sstm_exec_wait(&f)); /* outside: waits */
  CHECK_EQ_U(other, 1);
  /* a done callback */
  sstm_exec_req_t d = {.fn = nop, .future = &ended_f};
  CHECK_OK(sstm_exec_submit(ex, &d));
  CHECK_OK(sstm_exec_wait(&ended_f));
  sstm_exec_req_t w = {.fn = nop, .done = wait_in_callback, .future = &own_f};
  CHECK_OK(sstm_exec_submit(ex, &w));
  CHECK_OK(sstm_exec_wait(&own_f));
  CHECK_RC(own_wait_rc, SSTM_EBUSY);
  CHECK_OK(ended_wait_rc);
  CHECK_OK(sstm_exec_destroy(ex));
  CHECK_OK(sstm_thread_exit());
  CHECK_OK(sstm_shutdown());
}

/* A no-preemption region lasts as long as the code that opened it: an
 * attempt that restarts or is cancelled inside one discards it (the body
 * runs again from its begin), and a request that ends with one open does
 * not pass it on to the next request on its context, which would then
 * never be preempted. One context, so that every request runs on the same
 * descriptor; a probe request finds no region open (SSTM_ESTATE). */
static int region_attempts;
static void region_restart(void *arg) {
  (void)arg;
  CHECK_OK(sstm_exec_nopreempt_begin());
  if (region_attempts++ == 0) sstm_restart();
  CHECK_OK(sstm_exec_nopreempt_end());
}
static void region_cancel(void *arg) {
  (void)arg;
  CHECK_OK(sstm_exec_nopreempt_begin());
  sstm_cancel();
}
static void region_left_open(void *arg) {
  (void)arg;
  CHECK_OK(sstm_exec_nopreempt_begin());
}
static int region_probe_rc;
static void region_probe(void *arg) {
  (void)arg;
  region_probe_rc = sstm_exec_nopreempt_end();
}

TEST(no_preemption_regions_end_with_their_attempt_and_request) {
  init_lib();
  sstm_exec_config_t c = xcfg(1, 1, SSTM_EXEC_PREEMPT_NONE);
  sstm_exec_t *ex;
  CHECK_OK(sstm_exec_create(&c, &ex));
  void (*const opener[3])(void *) = {region_restart, region_cancel, region_left_open};
  const int want[3] = {0, SSTM_ECANCELED, 0};
  for (int i = 0; i < 3; i++) {
    region_attempts = 0;
    sstm_exec_future_t f;
    sstm_exec_req_t r = {.fn = opener[i], .future = &f};
    CHECK_OK(sstm_exec_submit(ex, &r));
    CHECK_RC(sstm_exec_wait(&f), want[i]);
    region_probe_rc = 1;
    sstm_exec_req_t q = {.fn = region_probe, .future = &f};
    CHECK_OK(sstm_exec_submit(ex, &q));
    CHECK_OK(sstm_exec_wait(&f));
    CHECK_MSG(region_probe_rc == SSTM_ESTATE, "after opener %d: a region is still open (%d)", i,
              region_probe_rc);
  }
  CHECK_OK(sstm_exec_destroy(ex));
  CHECK_OK(sstm_shutdown());
}

static _Atomic unsigned done_calls;
static _Atomic int done_rc_sum;
static void on_done(void *a, int rc) {
  CHECK_EQ_PTR(a, &done_calls);
  atomic_fetch_add_explicit(&done_calls, 1, memory_order_seq_cst);
  atomic_fetch_add_explicit(&done_rc_sum, rc, memory_order_seq_cst);
  CHECK_FALSE(sstm_in_tx());
}

static void cancel_body(void *a) {
  (void)a;
  sstm_store_u64(&counter, 12345);
  sstm_cancel();
}

TEST(callback_and_cancel) {
  init_lib();
  sstm_exec_config_t c = xcfg(2, 8, SSTM_EXEC_PREEMPT_SIGNAL);
  sstm_exec_t *ex;
  CHECK_OK(sstm_exec_create(&c, &ex));
  counter = 0;
  enum { N = 100 };
  for (unsigned i = 0; i < N; i++) {
    sstm_exec_req_t r = {.fn = incr, .arg = (void *)1, .done = on_done, .done_arg = &done_calls};
    CHECK_OK(sstm_exec_submit(ex, &r));
  }
  sstm_exec_future_t f;
  sstm_exec_req_t r = {.fn = cancel_body, .done = on_done, .done_arg = &done_calls, .future = &f};
  CHECK_OK(sstm_exec_submit(ex, &r));
  CHECK_RC(sstm_exec_wait(&f), SSTM_ECANCELED);
  CHECK_OK(sstm_exec_destroy(ex)); /* drains the rest */
  CHECK_EQ_U(atomic_load_explicit(&done_calls, memory_order_seq_cst), N + 1);
  CHECK_EQ_I(atomic_load_explicit(&done_rc_sum, memory_order_seq_cst), SSTM_ECANCELED);
  CHECK_EQ_U(counter, N); /* the cancelled write is not there */
  CHECK_OK(sstm_shutdown());
}

/* A body that waits (outside the engine, non-transactionally) for a gate;
 * gate_entered says a worker runs it. */
static _Atomic int gate, gate_entered;
static void gated(void *a) {
  (void)a;
  atomic_store_explicit(&gate_entered, 1, memory_order_seq_cst);
  while (!atomic_load_explicit(&gate, memory_order_acquire))
    usleep(100);
  incr((void *)1);
}

struct sub_arg {
  sstm_exec_t *ex;
  _Atomic int tid;
  int rc;
};
static void *blocking_submitter(void *p) {
  struct sub_arg *a = p;
  atomic_store_explicit(&a->tid, (int)gettid(), memory_order_seq_cst);
  sstm_exec_req_t r = {.fn = incr, .arg = (void *)1};
  a->rc = sstm_exec_submit(a->ex, &r);
  return NULL;
}

TEST(backpressure) {
  init_lib();
  sstm_exec_config_t c = xcfg(1, 2, SSTM_EXEC_PREEMPT_NONE);
  sstm_exec_t *ex;
  CHECK_OK(sstm_exec_create(&c, &ex));
  counter = 0;
  atomic_store_explicit(&gate, 0, memory_order_seq_cst);
  sstm_exec_req_t r = {.fn = gated};
  CHECK_OK(sstm_exec_try_submit(ex, &r));
  CHECK_OK(sstm_exec_try_submit(ex, &r));
  CHECK_RC(sstm_exec_try_submit(ex, &r), SSTM_EAGAIN); /* both contexts taken */
  CHECK_CONTAINS(sstm_last_error(), "no free context");
  sstm_exec_future_t nf;
  memset(&nf, 0, sizeof nf);
  sstm_exec_req_t rf = {.fn = gated, .future = &nf};
  CHECK_RC(sstm_exec_try_submit(ex, &rf), SSTM_EAGAIN);
  CHECK_RC(sstm_exec_wait(&nf), SSTM_EINVAL); /* not set up: no wait for good */
  struct sub_arg a = {.ex = ex};
  pthread_t t;
  CHECK_EQ_I(pthread_create(&t, NULL, blocking_submitter, &a), 0);
  while (!atomic_load_explicit(&a.tid, memory_order_seq_cst) ||
         !sstm_test_in_futex(atomic_load_explicit(&a.tid, memory_order_seq_cst)))
    usleep(1000);
  CHECK_EQ_U(counter, 0); /* nothing has run past the gate */
  atomic_store_explicit(&gate, 1, memory_order_release);
  CHECK_EQ_I(pthread_join(t, NULL), 0);
  CHECK_OK(a.rc);
  CHECK_OK(sstm_exec_destroy(ex));
  CHECK_EQ_U(counter, 3);
  CHECK_OK(sstm_shutdown());
}

/* A future still pending belongs to a request in flight: a submission
 * that names it again is refused, which leaves it to that request (whose
 * end it then reports); once it has ended the future may be set up again. */
TEST(a_future_in_flight_is_not_set_up_again) {
  init_lib();
  sstm_exec_config_t c = xcfg(2, 4, SSTM_EXEC_PREEMPT_NONE);
  sstm_exec_t *ex;
  CHECK_OK(sstm_exec_create(&c, &ex));
  counter = 0;
  atomic_store_explicit(&gate, 0, memory_order_seq_cst);
  sstm_exec_future_t f;
  memset(&f, 0, sizeof f);
  sstm_exec_req_t r = {.fn = gated, .future = &f};
  CHECK_OK(sstm_exec_submit(ex, &r));
  sstm_exec_req_t q = {.fn = incr, .arg = (void *)10, .future = &f};
  CHECK_RC(sstm_exec_submit(ex, &q), SSTM_EBUSY);
  CHECK_CONTAINS(sstm_last_error(), "in flight");
  CHECK_RC(sstm_exec_try_submit(ex, &q), SSTM_EBUSY);
  CHECK_FALSE(sstm_exec_done(&f)); /* the gated request holds it */
  CHECK_EQ_U(counter, 0);
  atomic_store_explicit(&gate, 1, memory_order_release);
  CHECK_OK(sstm_exec_wait(&f));
  CHECK_EQ_U(counter, 1);
  CHECK_OK(sstm_exec_submit(ex, &q)); /* ended: the future may be reused */
  CHECK_OK(sstm_exec_wait(&f));
  CHECK_EQ_U(counter, 11);
  CHECK_OK(sstm_exec_destroy(ex));
  CHECK_OK(sstm_shutdown());
}

/* Request code must leave its context's descriptor attached (exec.h). A
 * done callback that detached it (sstm_thread_exit() detaches a descriptor
 * of sstm_desc_create()) got the process aborted at the worker's next
 * switch, without a word; the executor now puts the descriptor back and
 * goes on. (A body that detached it inside its transaction: the next
 * test.) */
static int done_exit_rc = 1;
static void done_detaches(void *arg, int rc) {
  (void)arg;
  (void)rc;
  done_exit_rc = sstm_thread_exit();
}

TEST(a_done_callback_that_detaches_the_descriptor_leaves_the_executor_working) {
  init_lib();
  sstm_exec_config_t c = xcfg(1, 1, SSTM_EXEC_PREEMPT_NONE);
  sstm_exec_t *ex;
  CHECK_OK(sstm_exec_create(&c, &ex));
  counter = 0;
  sstm_exec_future_t f;
  sstm_exec_req_t r = {.fn = incr, .arg = (void *)1, .done = done_detaches, .future = &f};
  CHECK_OK(sstm_exec_submit(ex, &r));
  CHECK_OK(sstm_exec_wait(&f));
  CHECK_OK(done_exit_rc); /* it did detach the context's descriptor */
  sstm_exec_req_t q = {.fn = incr, .arg = (void *)2, .future = &f};
  for (int i = 0; i < 3; i++) { /* the one context again */
    CHECK_OK(sstm_exec_submit(ex, &q));
    CHECK_OK(sstm_exec_wait(&f));
  }
  CHECK_EQ_U(counter, 7);
  CHECK_OK(sstm_exec_destroy(ex));
  CHECK_OK(sstm_shutdown());
}

/* A body that detaches the context's descriptor inside its transaction
 * and returns: sstm_run() returns SSTM_ENOTHREAD with the transaction
 * suspended, its restart point in sstm_run()'s returned frame. The
 * executor stopped the process (abort, with a message); it now ends that
 * transaction as a thread's end would (cancelled: rolled back, its abort
 * actions run) and reports SSTM_ENOTHREAD on the future and to the done
 * callback, and the context serves later requests. */
static int detach_aborts, detach_done_rc = 1;
static void detach_on_abort(void *arg) {
  (void)arg;
  detach_aborts++;
}
static void body_detaches(void *arg) {
  (void)arg;
  incr((void *)1);
  CHECK_OK(sstm_on_abort(detach_on_abort, NULL));
  (void)sstm_desc_detach();
}
static void detach_done(void *arg, int rc) {
  (void)arg;
  detach_done_rc = rc;
  CHECK_FALSE(sstm_in_tx());
}
static void ignore_misuse(const char *msg) { (void)msg; }

TEST(a_body_that_detaches_the_descriptor_gets_an_error_and_its_transaction_cancelled) {
  init_lib();
  /* debug builds report the commit that finds no transaction first */
  sstm_set_misuse_handler(ignore_misuse);
  sstm_exec_config_t c = xcfg(1, 1, SSTM_EXEC_PREEMPT_NONE);
  sstm_exec_t *ex;
  CHECK_OK(sstm_exec_create(&c, &ex));
  counter = 0;
  detach_aborts = 0;
  sstm_exec_future_t f;
  sstm_exec_req_t r = {.fn = body_detaches, .done = detach_done, .future = &f};
  CHECK_OK(sstm_exec_submit(ex, &r));
  CHECK_RC(sstm_exec_wait(&f), SSTM_ENOTHREAD);
  CHECK_RC(detach_done_rc, SSTM_ENOTHREAD);
  CHECK_EQ_I(detach_aborts, 1); /* rolled back, not left suspended */
  CHECK_EQ_U(counter, 0);
  sstm_exec_req_t q = {.fn = incr, .arg = (void *)2, .future = &f};
  for (int i = 0; i < 3; i++) { /* the one context again, its descriptor free */
    CHECK_OK(sstm_exec_submit(ex, &q));
    CHECK_OK(sstm_exec_wait(&f));
  }
  CHECK_EQ_U(counter, 6);
  CHECK_OK(sstm_exec_destroy(ex));
  sstm_set_misuse_handler(NULL);
  CHECK_OK(sstm_shutdown());
}

/* A done callback may put a descriptor of its own in its context's place
 * (exec.h: it gets the context's back when it returns) and run a
 * transaction on it. The executor can switch out only the context's own
 * transaction: a request to preempt that came meanwhile (the kick's
 * signal, or the polled mode's fallback) was taken as one for the
 * callback's transaction, which the engine found running and preemptible,
 * and the check switched the context out with that foreign descriptor
 * attached; the worker's detach then returned it, not the context's, and
 * the process stopped (abort). Now the request waits: the handler, the
 * preemption check and the hand-over at a paused lock look at whether the
 * context's descriptor is the one attached. One worker: the urgent request
 * runs once the callback has returned. */
static sstm_desc_t *foreign;
static _Atomic int fg_stage; /* 1: the foreign transaction runs; 2: let it end */
static _Atomic int fg_urgent_ran, fg_saw_urgent;
static uint64_t fg_cell;

static void foreign_body(void *a) {
  (void)a;
  atomic_store_explicit(&fg_stage, 1, memory_order_seq_cst);
  while (atomic_load_explicit(&fg_stage, memory_order_seq_cst) != 2) {
    (void)sstm_load_u64(&fg_cell);            /* a polled point */
    for (volatile int i = 0; i < 1000; i++) { /* its own code, where a signal redirects */
    }
  }
  /* a polled point after the signal, for a request it left standing */
  (void)sstm_load_u64(&fg_cell);
  if (atomic_load_explicit(&fg_urgent_ran, memory_order_seq_cst))
    atomic_store_explicit(&fg_saw_urgent, 1, memory_order_seq_cst);
}

static void done_runs_foreign(void *arg, int rc) {
  (void)arg;
  CHECK_OK(rc);
  CHECK_NOT_NULL(sstm_desc_detach()); /* the context's: it gets it back */
  CHECK_OK(sstm_desc_attach(foreign));
  CHECK_OK(sstm_run(NULL, foreign_body, NULL));
}

static void fg_urgent(void *a) {
  (void)a;
  (void)sstm_load_u64(&fg_cell);
  atomic_store_explicit(&fg_urgent_ran, 1, memory_order_seq_cst);
}

static void foreign_case(sstm_exec_preempt_t m) {
  init_lib();
  CHECK_OK(sstm_desc_create(&foreign));
  sstm_exec_config_t c = xcfg(1, 2, m);
  sstm_exec_t *ex;
  CHECK_OK(sstm_exec_create(&c, &ex));
  sstm_exec_future_t lf, uf;
  sstm_exec_req_t lo = {.fn = incr, .arg = (void *)1, .done = done_runs_foreign, .future = &lf};
  CHECK_OK(sstm_exec_submit(ex, &lo));
  while (atomic_load_explicit(&fg_stage, memory_order_seq_cst) != 1)
    usleep(1000);
  uint64_t signals = sstm_test_exec_counter(ex, "signals");
  sstm_exec_req_t hi = {.fn = fg_urgent, .priority = 3, .future = &uf};
  CHECK_OK(sstm_exec_submit(ex, &hi));
  /* the signal (the kick's, or the fallback's) has reached the worker, in
   * the foreign transaction */
  while (sstm_test_exec_counter(ex, "signals") == signals)
    usleep(1000);
  atomic_store_explicit(&fg_stage, 2, memory_order_seq_cst);
  CHECK_OK(sstm_exec_wait(&lf));
  CHECK_OK(sstm_exec_wait(&uf));
  CHECK_EQ_I(atomic_load_explicit(&fg_saw_urgent, memory_order_seq_cst), 0);
  CHECK_EQ_U(counter, 1);
  CHECK_OK(sstm_exec_destroy(ex));
  CHECK_OK(sstm_desc_destroy(foreign));
  CHECK_OK(sstm_shutdown());
}

TEST(a_callbacks_transaction_on_its_own_descriptor_is_not_switched_out_signal) {
  foreign_case(SSTM_EXEC_PREEMPT_SIGNAL);
}
TEST(a_callbacks_transaction_on_its_own_descriptor_is_not_switched_out_poll) {
  foreign_case(SSTM_EXEC_PREEMPT_POLL);
}

/* The same foreign transaction meeting the lock of a paused transaction of
 * the executor's: the engine offers the worker to the executor
 * (SSTM_EXEC_AT_BLOCKED; under INHERIT whatever the priorities), and a
 * hand-over would switch the context out with the foreign descriptor
 * attached (abort at the worker's detach). The executor must decline, and
 * the engine takes the paused one over. One worker: the low request
 * writes ho_cell and runs on until the foreign transaction has committed,
 * so it is paused, holding ho_cell's lock, while the urgent request's done
 * callback runs; it has run longer than the callback's transaction, so
 * INHERIT's rule would hand the worker to it. The guard in the hand-over
 * is the only one this case reaches: the handler and the check are not
 * asked for the foreign transaction here. */
static uint64_t ho_cell, ho_other;
static _Atomic int ho_stage; /* 1: the low body holds ho_cell; 2: the foreign one committed */

static void ho_low(void *a) {
  (void)a;
  sstm_store_u64(&ho_cell, 1);
  int zero = 0; /* not again in the attempt after the take-over */
  atomic_compare_exchange_strong_explicit(&ho_stage, &zero, 1, memory_order_seq_cst,
                                          memory_order_seq_cst);
  while (atomic_load_explicit(&ho_stage, memory_order_seq_cst) != 2) {
    (void)sstm_load_u64(&ho_other);           /* a polled point */
    for (volatile int i = 0; i < 1000; i++) { /* its own code, where a signal redirects */
    }
  }
}

static void ho_foreign_body(void *a) {
  (void)a;
  sstm_store_u64(&ho_cell, 2); /* the paused low transaction holds its lock */
}

static void ho_done(void *arg, int rc) {
  (void)arg;
  CHECK_OK(rc);
  CHECK_NOT_NULL(sstm_desc_detach()); /* the context's: it gets it back */
  CHECK_OK(sstm_desc_attach(foreign));
  CHECK_OK(sstm_run(NULL, ho_foreign_body, NULL));
  atomic_store_explicit(&ho_stage, 2, memory_order_seq_cst);
}

/* No access: its own transaction must not meet the paused one's lock (a
 * hand-over of its own, which would resume the low body before the
 * callback that ends its wait). */
static void ho_urgent(void *a) { (void)a; }

static void handover_case(sstm_exec_preempt_t m) {
  init_lib();
  CHECK_OK(sstm_desc_create(&foreign));
  sstm_exec_config_t c = xcfg(1, 2, m);
  c.paused_conflict = SSTM_EXEC_PAUSED_CONFLICT_INHERIT;
  c.c_max = 0;
  c.lazy_promotion = false;
  sstm_exec_t *ex;
  CHECK_OK(sstm_exec_create(&c, &ex));
  sstm_exec_future_t lf, uf;
  sstm_exec_req_t lo = {.fn = ho_low, .priority = 1, .future = &lf};
  CHECK_OK(sstm_exec_submit(ex, &lo));
  while (atomic_load_explicit(&ho_stage, memory_order_seq_cst) != 1)
    usleep(1000);
  sstm_exec_req_t hi = {.fn = ho_urgent, .priority = 3, .done = ho_done, .future = &uf};
  CHECK_OK(sstm_exec_submit(ex, &hi));
  CHECK_OK(sstm_exec_wait(&uf));
  CHECK_OK(sstm_exec_wait(&lf));
  /* the low transaction was taken over and ran again after the foreign one */
  CHECK_EQ_U(ho_cell, 1);
  CHECK_OK(sstm_exec_destroy(ex));
  CHECK_OK(sstm_desc_destroy(foreign));
  CHECK_OK(sstm_shutdown());
}

TEST(a_callbacks_transaction_on_its_own_descriptor_takes_a_paused_lock_over_signal) {
  handover_case(SSTM_EXEC_PREEMPT_SIGNAL);
}
TEST(a_callbacks_transaction_on_its_own_descriptor_takes_a_paused_lock_over_poll) {
  handover_case(SSTM_EXEC_PREEMPT_POLL);
}

/* Bodies that wait for gate2 (non-transactionally, as gated). */
static _Atomic int gate2;
static void gated2(void *a) {
  (void)a;
  while (!atomic_load_explicit(&gate2, memory_order_acquire))
    usleep(100);
  incr((void *)1);
}

struct psub_arg {
  sstm_exec_t *ex;
  unsigned priority;
  _Atomic int tid, returned;
  int rc;
};
static void *prio_submitter(void *p) {
  struct psub_arg *a = p;
  atomic_store_explicit(&a->tid, (int)gettid(), memory_order_seq_cst);
  sstm_exec_req_t r = {.fn = gated2, .priority = a->priority};
  a->rc = sstm_exec_submit(a->ex, &r);
  atomic_store_explicit(&a->returned, 1, memory_order_seq_cst);
  return NULL;
}

/* Priority-graded admission (reserve_pct): 8 contexts, 4 levels, 50 %:
 * the lowest level leaves 4 contexts free, then 2, 1 and 0. One worker
 * is held by a gated request, so nothing ends until the test says. Then
 * a blocked low-priority submitter and a blocked top-priority one wait
 * for a context; one context is freed: the top one must get it (every
 * waiter is woken, each looks again), the low one waits on. */
TEST(graded_admission) {
  init_lib();
  sstm_exec_config_t c = xcfg(1, 8, SSTM_EXEC_PREEMPT_NONE);
  c.levels = 4;
  c.reserve_pct = 50;
  sstm_exec_t *ex;
  CHECK_OK(sstm_exec_create(&c, &ex));
  char buf[512];
  sstm_exec_describe(ex, buf, sizeof buf);
  CHECK_CONTAINS(buf, "reserve=50%");
  counter = 0;
  atomic_store_explicit(&gate, 0, memory_order_seq_cst);
  atomic_store_explicit(&gate2, 0, memory_order_seq_cst);
  atomic_store_explicit(&gate_entered, 0, memory_order_seq_cst);
  sstm_exec_req_t w = {.fn = gated, .priority = 0};
  CHECK_OK(sstm_exec_submit(ex, &w));
  while (!atomic_load_explicit(&gate_entered, memory_order_seq_cst))
    usleep(100);
  /* 7 free. Level 0 may take contexts while more than 4 are free. */
  static const struct { unsigned prio, accepted; } steps[] = {{0, 3}, {1, 2}, {2, 1}, {3, 1}};
  unsigned total = 1;
  for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
    sstm_exec_req_t r = {.fn = gated2, .priority = steps[i].prio};
    for (unsigned k = 0; k < steps[i].accepted; k++)
      CHECK_OK(sstm_exec_try_submit(ex, &r));
    total += steps[i].accepted;
    CHECK_RC(sstm_exec_try_submit(ex, &r), SSTM_EAGAIN);
    CHECK_CONTAINS(sstm_last_error(), "no free context");
    if (steps[i].prio < 3) {
      CHECK_CONTAINS(sstm_last_error(), "held back");
      /* every level above still gets in */
    }
  }
  CHECK_EQ_U(total, 8);
  /* Full. A low and a top submitter wait, the low one first. */
  struct psub_arg lo = {.ex = ex, .priority = 0}, hi = {.ex = ex, .priority = 3};
  pthread_t tlo, thi;
  CHECK_EQ_I(pthread_create(&tlo, NULL, prio_submitter, &lo), 0);
  while (!atomic_load_explicit(&lo.tid, memory_order_seq_cst) ||
         !sstm_test_in_futex(atomic_load_explicit(&lo.tid, memory_order_seq_cst)))
    usleep(1000);
  CHECK_EQ_I(pthread_create(&thi, NULL, prio_submitter, &hi), 0);
  while (!atomic_load_explicit(&hi.tid, memory_order_seq_cst) ||
         !sstm_test_in_futex(atomic_load_explicit(&hi.tid, memory_order_seq_cst)))
    usleep(1000);
  /* Free exactly one context: the worker ends the first request and takes
   * the highest queued one, a gated2 request, which holds it. */
  atomic_store_explicit(&gate, 1, memory_order_release);
  CHECK_EQ_I(pthread_join(thi, NULL), 0);
  CHECK_OK(hi.rc);
  CHECK_EQ_I(atomic_load_explicit(&lo.returned, memory_order_seq_cst),
             0); /* 1 free, level 0 needs 5 */
  atomic_store_explicit(&gate2, 1, memory_order_release);
  CHECK_EQ_I(pthread_join(tlo, NULL), 0);
  CHECK_OK(lo.rc);
  CHECK_OK(sstm_exec_destroy(ex));
  CHECK_EQ_U(counter, 10);
  /* Bad values are refused with the field named. */
  c.reserve_pct = SSTM_EXEC_RESERVE_PCT_MAX + 1;
  ex = NULL;
  CHECK_RC(sstm_exec_create(&c, &ex), SSTM_EINVAL);
  CHECK_CONTAINS(sstm_last_error(), "reserve_pct");
  CHECK_NULL(ex);
  CHECK_OK(sstm_shutdown());
}

static void *open_after(void *p) {
  pthread_join(*(pthread_t *)p, NULL);
  atomic_store_explicit(&gate, 1, memory_order_release);
  return NULL;
}

/* Destroy while a submitter waits for a context: it gets SSTM_ESTATE, and
 * every accepted request still runs. */
TEST(destroy_drains) {
  init_lib();
  sstm_exec_config_t c = xcfg(1, 4, SSTM_EXEC_PREEMPT_NONE);
  sstm_exec_t *ex;
  CHECK_OK(sstm_exec_create(&c, &ex));
  counter = 0;
  atomic_store_explicit(&gate, 0, memory_order_seq_cst);
  sstm_exec_req_t r = {.fn = gated};
  for (int i = 0; i < 4; i++)
    CHECK_OK(sstm_exec_submit(ex, &r));
  struct sub_arg a = {.ex = ex};
  pthread_t t;
  CHECK_EQ_I(pthread_create(&t, NULL, blocking_submitter, &a), 0);
  while (!atomic_load_explicit(&a.tid, memory_order_seq_cst) ||
         !sstm_test_in_futex(atomic_load_explicit(&a.tid, memory_order_seq_cst)))
    usleep(1000);
  /* The opener waits for the submitter to fail, then opens the gate:
   * destroy is waiting for the drain meanwhile. */
  pthread_t opener;
  CHECK_EQ_I(pthread_create(&opener, NULL, open_after, &t), 0);
  CHECK_OK(sstm_exec_destroy(ex));
  CHECK_EQ_I(pthread_join(opener, NULL), 0);
  CHECK_RC(a.rc, SSTM_ESTATE);
  CHECK_EQ_U(counter, 4);
  CHECK_RC(sstm_exec_try_submit(NULL, &r), SSTM_EINVAL);
  CHECK_OK(sstm_shutdown());
}

/* One worker, no preemption: while a gated request holds the worker,
 * requests of mixed priorities queue; they then run highest level first,
 * FIFO within a level. */
static unsigned order[64], norder;
static void record(void *a) {
  /* non-transactional: one worker, and each body runs one attempt here */
  order[norder++] = (unsigned)(uintptr_t)a;
}

TEST(priority_order) {
  init_lib();
  sstm_exec_config_t c = xcfg(1, 64, SSTM_EXEC_PREEMPT_NONE);
  c.levels = 4;
  sstm_exec_t *ex;
  CHECK_OK(sstm_exec_create(&c, &ex));
  atomic_store_explicit(&gate, 0, memory_order_seq_cst);
  atomic_store_explicit(&gate_entered, 0, memory_order_seq_cst);
  sstm_exec_future_t g;
  sstm_exec_req_t r = {.fn = gated, .priority = 0, .future = &g};
  CHECK_OK(sstm_exec_submit(ex, &r));
  /* Until the worker runs it: the requests below must all queue behind
   * it, or a worker still idle would take the first of them at once. */
  while (!atomic_load_explicit(&gate_entered, memory_order_seq_cst))
    usleep(100);
  /* id = level * 10 + sequence within the level */
  static const unsigned prios[] = {1, 3, 0, 3, 2, 1, 0, 2, 3, 1};
  unsigned seq[4] = {0};
  for (unsigned i = 0; i < sizeof prios / sizeof prios[0]; i++) {
    unsigned p = prios[i];
    sstm_exec_req_t q = {
        .fn = record, .arg = (void *)(uintptr_t)(p * 10 + seq[p]++), .priority = p};
    CHECK_OK(sstm_exec_submit(ex, &q));
  }
  atomic_store_explicit(&gate, 1, memory_order_release);
  CHECK_OK(sstm_exec_destroy(ex));
  static const unsigned want[] = {30, 31, 32, 20, 21, 10, 11, 12, 0, 1};
  CHECK_EQ_U(norder, sizeof want / sizeof want[0]);
  for (unsigned i = 0; i < norder; i++)
    CHECK_EQ_U(order[i], want[i]);
  CHECK_OK(sstm_shutdown());
}

TEST(environment) {
  init_lib();
  sstm_exec_config_t c;
  sstm_exec_config_default(&c);
  CHECK_EQ_U(c.size, sizeof c);
  CHECK_TRUE(c.use_env);
  CHECK_EQ_U(c.levels, SSTM_EXEC_LEVELS_DEFAULT);
  setenv("SCHEDSTM_EXEC_LEVELS", "3", 1);
  setenv("SCHEDSTM_EXEC_PREEMPT", "poll", 1);
  setenv("SCHEDSTM_EXEC_CMAX", "0", 1);
  setenv("SCHEDSTM_EXEC_LAZY", "1", 1);
  setenv("SCHEDSTM_EXEC_WORKERS", "1", 1);
  setenv("SCHEDSTM_EXEC_CONTEXTS", "5", 1);
  setenv("SCHEDSTM_EXEC_STACK_KB", "32", 1);
  setenv("SCHEDSTM_EXEC_TICK_US", "0", 1);
  setenv("SCHEDSTM_EXEC_POLL_FALLBACK_US", "70", 1);
  CHECK_EQ_U(c.reserve_pct, SSTM_EXEC_RESERVE_PCT_DEFAULT);
  setenv("SCHEDSTM_EXEC_RESERVE_PCT", "0", 1);
  CHECK_EQ_U(c.holder_level, SSTM_EXEC_HOLDER_LEVEL_DEFAULT);
  setenv("SCHEDSTM_EXEC_HOLDER_LEVEL", "2", 1);
  CHECK_OK(sstm_exec_config_from_env(&c));
  CHECK_EQ_U(c.reserve_pct, 0);
  CHECK_EQ_U(c.holder_level, 2);
  CHECK_EQ_U(c.levels, 3);
  CHECK_EQ_I(c.preempt, SSTM_EXEC_PREEMPT_POLL);
  CHECK_EQ_U(c.c_max, 0);
  CHECK_TRUE(c.lazy_promotion);
  CHECK_EQ_U(c.poll_fallback_us, 70);
  sstm_exec_t *ex;
  sstm_exec_config_default(&c); /* use_env: create reads them */
  CHECK_OK(sstm_exec_create(&c, &ex));
  char buf[1024];
  sstm_exec_describe(ex, buf, sizeof buf);
  CHECK_CONTAINS(buf, "workers=1 contexts=5 stack=32KiB levels=3 preempt=poll");
  CHECK_CONTAINS(buf, "c_max=inf lazy=1");
  CHECK_CONTAINS(buf, "reserve=0%");
  CHECK_CONTAINS(buf, "holder-level=2");
  CHECK_OK(sstm_exec_destroy(ex));
  unsetenv("SCHEDSTM_EXEC_RESERVE_PCT");
  /* A level above the executor's (levels 3: 0..2) is refused at creation */
  setenv("SCHEDSTM_EXEC_HOLDER_LEVEL", "3", 1);
  sstm_exec_config_default(&c);
  CHECK_RC(sstm_exec_create(&c, &ex), SSTM_EINVAL);
  CHECK_CONTAINS(sstm_last_error(), "holder_level 3");
  unsetenv("SCHEDSTM_EXEC_HOLDER_LEVEL");
  setenv("SCHEDSTM_EXEC_PREEMPT", "check-only", 1);
  setenv("SCHEDSTM_EXEC_TICK_US", "200", 1);
  sstm_exec_config_default(&c);
  CHECK_OK(sstm_exec_config_from_env(&c));
  CHECK_EQ_I(c.preempt, SSTM_EXEC_PREEMPT_CHECK_ONLY);
  CHECK_EQ_U(c.tick_us, 200);
  CHECK_OK(sstm_exec_create(&c, &ex));
  sstm_exec_describe(ex, buf, sizeof buf);
  CHECK_CONTAINS(buf, "preempt=check-only poll-fallback=70us tick=200us");
  CHECK_OK(sstm_exec_destroy(ex));
  setenv("SCHEDSTM_EXEC_TICK_US", "0", 1); /* check-only without a tick: refused by create */
  sstm_exec_config_default(&c);
  CHECK_RC(sstm_exec_create(&c, &ex), SSTM_EINVAL);
  CHECK_CONTAINS(sstm_last_error(), "check-only");
  setenv("SCHEDSTM_EXEC_PREEMPT", "poll", 1);
  /* the paused-conflict rule: from the environment, and one per process */
  setenv("SCHEDSTM_EXEC_PAUSED_CONFLICT", "handover", 1);
  sstm_exec_config_default(&c);
  CHECK_OK(sstm_exec_config_from_env(&c));
  CHECK_EQ_I(c.paused_conflict, SSTM_EXEC_PAUSED_CONFLICT_HANDOVER);
  CHECK_OK(sstm_exec_create(&c, &ex));
  sstm_exec_describe(ex, buf, sizeof buf);
  CHECK_CONTAINS(buf, "paused-conflict=handover");
  sstm_exec_config_t other;
  sstm_exec_config_default(&other);
  other.use_env = false;
  other.workers = 1;
  other.contexts = 2;
  other.paused_conflict = SSTM_EXEC_PAUSED_CONFLICT_TAKEOVER;
  sstm_exec_t *ex2 = (sstm_exec_t *)&ex2;
  CHECK_RC(sstm_exec_create(&other, &ex2), SSTM_EBUSY);
  CHECK_CONTAINS(sstm_last_error(), "process-wide");
  CHECK_NULL(ex2);
  other.paused_conflict = SSTM_EXEC_PAUSED_CONFLICT_HANDOVER; /* the same rule: fine */
  CHECK_OK(sstm_exec_create(&other, &ex2));
  CHECK_OK(sstm_exec_destroy(ex2));
  CHECK_OK(sstm_exec_destroy(ex));
  other.paused_conflict = SSTM_EXEC_PAUSED_CONFLICT_TAKEOVER; /* nobody alive: any rule */
  CHECK_OK(sstm_exec_create(&other, &ex2));
  CHECK_OK(sstm_exec_destroy(ex2));
  other.paused_conflict = (sstm_exec_paused_conflict_t)5;
  CHECK_RC(sstm_exec_create(&other, &ex2), SSTM_EINVAL);
  CHECK_CONTAINS(sstm_last_error(), "paused_conflict");
  unsetenv("SCHEDSTM_EXEC_PAUSED_CONFLICT");
  static const char *const bad[][2] = {
      {"SCHEDSTM_EXEC_PREEMPT", "tick"},   {"SCHEDSTM_EXEC_LEVELS", "65"},
      {"SCHEDSTM_EXEC_LEVELS", " 3"},      {"SCHEDSTM_EXEC_TICK_US", "5"},
      {"SCHEDSTM_EXEC_LAZY", "yes"},       {"SCHEDSTM_EXEC_CONTEXTS", "0"},
      {"SCHEDSTM_EXEC_WORKERS", "-1"},     {"SCHEDSTM_EXEC_PAUSED_CONFLICT", "wait"},
      {"SCHEDSTM_EXEC_RESERVE_PCT", "91"}, {"SCHEDSTM_EXEC_HOLDER_LEVEL", "64"},
      {"SCHEDSTM_EXEC_WAITER_FIRST", "2"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    sstm_exec_config_t d;
    sstm_exec_config_default(&d);
    const char *old = getenv(bad[i][0]);
    char keep[64];
    snprintf(keep, sizeof keep, "%s", old ? old : "");
    setenv(bad[i][0], bad[i][1], 1);
    sstm_exec_config_t before = d;
    CHECK_RC(sstm_exec_config_from_env(&d), SSTM_EINVAL);
    CHECK_CONTAINS(sstm_last_error(), bad[i][0]);
    CHECK_EQ_MEM(&d, &before, sizeof d); /* unchanged */
    CHECK_RC(sstm_exec_create(&d, &ex), SSTM_EINVAL);
    if (old)
      setenv(bad[i][0], keep, 1);
    else
      unsetenv(bad[i][0]); /* "" would be malformed for the next entries */
  }
  CHECK_OK(sstm_shutdown());
}

TEST(statistics) {
  init_lib();
  sstm_exec_config_t c = xcfg(2, 8, SSTM_EXEC_PREEMPT_SIGNAL);
  c.levels = 3;
  sstm_exec_t *ex;
  CHECK_OK(sstm_exec_create(&c, &ex));
  for (unsigned i = 0; i < 30; i++) {
    sstm_exec_req_t r = {.fn = incr, .arg = (void *)1, .priority = i % 3 == 2 ? 2 : 0};
    CHECK_OK(sstm_exec_submit(ex, &r));
  }
  CHECK_OK(sstm_exec_destroy(ex));
  CHECK_OK(sstm_shutdown());
  /* read after destroy is not allowed: check before, with a fresh one */
  init_lib();
  CHECK_OK(sstm_exec_create(&c, &ex));
  sstm_exec_future_t f[30];
  for (unsigned i = 0; i < 30; i++) {
    sstm_exec_req_t r = {
        .fn = incr, .arg = (void *)1, .priority = i % 3 == 2 ? 2 : 0, .future = &f[i]};
    CHECK_OK(sstm_exec_submit(ex, &r));
  }
  for (unsigned i = 0; i < 30; i++)
    CHECK_OK(sstm_exec_wait(&f[i]));
  sstm_exec_level_stats_t s0, s1, s2;
  /* the statistics are summed just after the future is set: wait for them */
  do {
    CHECK_OK(sstm_exec_stats(ex, 0, &s0));
    CHECK_OK(sstm_exec_stats(ex, 2, &s2));
  } while (s0.completed + s2.completed < 30 && (usleep(1000), 1));
  CHECK_OK(sstm_exec_stats(ex, 1, &s1));
  CHECK_EQ_U(s0.size, sizeof s0);
  CHECK_EQ_U(s0.submitted, 20);
  CHECK_EQ_U(s2.submitted, 10);
  CHECK_EQ_U(s0.completed, 20);
  CHECK_EQ_U(s2.completed, 10);
  CHECK_EQ_U(s1.submitted, 0);
  CHECK_GE_U(s0.turnaround_ns, s0.run_ns);
  CHECK_GE_U(s0.turnaround_max_ns * 20, s0.turnaround_ns);
  CHECK_GT_U(s0.turnaround_max_ns, 0);
  /* A caller built against a newer, larger struct: the library fills its
   * own fields, says how many bytes in size, and zeroes the rest (as
   * sstm_stats_get_sized does), never leaving the caller's garbage there. */
  union {
    sstm_exec_level_stats_t s;
    unsigned char b[sizeof(sstm_exec_level_stats_t) + 64];
  } big;
  memset(&big, 0xab, sizeof big);
  CHECK_OK(sstm_exec_stats_sized(ex, 0, &big.s, sizeof big));
  CHECK_EQ_U(big.s.size, sizeof big.s);
  CHECK_EQ_U(big.s.submitted, 20);
  for (size_t i = sizeof big.s; i < sizeof big; i++)
    CHECK_EQ_U(big.b[i], 0);
  CHECK_OK(sstm_exec_destroy(ex));
  CHECK_OK(sstm_shutdown());
}

SSTM_TEST_MAIN()
