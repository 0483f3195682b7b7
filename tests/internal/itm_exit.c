/* SPDX-License-Identifier: MIT */
/* A thread that ends inside a transaction of the gcc -fgnu-tm ABI
 * (src/abi/itm.c, docs/design/itm.md (I1), (I5), (I7)): the count of open
 * closed scopes and exception objects of all threads (slow_live), which
 * sends every transactional write of the process to the barriers' slow
 * path while it is not zero, goes back to what it was before the thread's
 * transaction. Compiled with -fgnu-tm and linked with the static
 * libschedstm-itm, whose hidden sstm__itm_slow_live() reads the count.
 * Each case runs in a process of its own, so the count starts at zero. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../common/malloc_count.h"
#include "../common/runner.h"

uint32_t sstm__itm_slow_live(void);

#define V(x) (*(volatile __typeof__(x) *)&(x))

static long x, y, z, serial_runs;
/* 0, but not static: the compiler must take the cancels and exits below
 * for possible (it drops a cancel that it can prove never happens, and
 * then opens no closed scope; one variable per scope, since it would also
 * prove the inner test false where the outer one was). */
int itm_exit_never, itm_exit_never_inner;
static uint32_t live_inside;

__attribute__((transaction_pure)) static void note_live_and_exit(void) {
  live_inside = sstm__itm_slow_live();
  pthread_exit(NULL);
}

/* Two closed scopes open (the nested blocks may cancel alone, I5) when
 * the thread ends. */
static void *exit_in_two_scopes(void *arg) {
  (void)arg;
  __transaction_atomic {
    x += 1;
    __transaction_atomic {
      y += 1;
      if (itm_exit_never) __transaction_cancel;
      __transaction_atomic {
        z += 1;
        if (itm_exit_never_inner) __transaction_cancel;
        if (!itm_exit_never) note_live_and_exit();
        z += 1;
      }
    }
  }
  return NULL;
}

TEST(a_thread_that_ends_in_closed_scopes_gives_their_count_back) {
  sstm_test_init();
  CHECK_EQ_U(sstm__itm_slow_live(), 0);
  pthread_t th;
  CHECK_EQ_I(pthread_create(&th, NULL, exit_in_two_scopes, NULL), 0);
  CHECK_EQ_I(pthread_join(th, NULL), 0);
  CHECK_EQ_U(V(live_inside), 2); /* the test sees the two scopes */
  CHECK_EQ_U(sstm__itm_slow_live(), 0);
  /* The engine cancelled the revocable transaction: nothing was written. */
  CHECK_EQ_I(V(x), 0);
  CHECK_EQ_I(V(y), 0);
  CHECK_EQ_I(V(z), 0);
  /* The ABI goes on: a scope opens and closes on this thread. */
  __transaction_atomic {
    x += 1;
    __transaction_atomic {
      y += 1;
      if (itm_exit_never) __transaction_cancel;
    }
  }
  CHECK_EQ_I(V(x), 1);
  CHECK_EQ_I(V(y), 1);
  CHECK_EQ_U(sstm__itm_slow_live(), 0);
  sstm_test_fini();
}

/* ---- exception objects (I7): the C++ runtime's entry points, from C ------ */

#if SSTM_TEST_STDCXX
void *_ITM_cxa_allocate_exception(size_t size);
void __cxa_free_exception(void *obj);

static void *exc_obj;
/* The object's size: the runtime allocates it from malloc with its header
 * before it (libstdc++'s is 128 bytes on x86-64); the tests count the
 * blocks of that size that live. An odd size, which nothing else asks
 * for. */
#define EXC_SIZE 4011
#define EXC_TRACK() mc_track_sizes(EXC_SIZE + 128, EXC_SIZE + 129)

__attribute__((transaction_pure)) static void allocate_and_exit(void) {
  exc_obj = _ITM_cxa_allocate_exception(EXC_SIZE);
  live_inside = sstm__itm_slow_live();
  pthread_exit(NULL);
}

/* Not transaction_safe (sched_yield): the block runs serial (I3), and the
 * engine commits a transaction that asked to be irrevocable when its
 * thread ends in it, so no rollback frees the object or drops its record. */
__attribute__((noinline)) void unsafe_allocate_and_exit(void) {
  sched_yield();
  allocate_and_exit();
}

static void *exit_serial_with_exception(void *arg) {
  (void)arg;
  __transaction_relaxed {
    serial_runs += 1;
    unsafe_allocate_and_exit();
  }
  return NULL;
}

static void *exit_revocable_with_exception(void *arg) {
  (void)arg;
  __transaction_atomic {
    x += 1;
    if (!itm_exit_never) allocate_and_exit();
    x += 1;
  }
  return NULL;
}
#endif

TEST(a_thread_that_ends_serial_with_an_exception_object_gives_its_count_back) {
#if SSTM_TEST_STDCXX
  sstm_test_init();
  EXC_TRACK();
  pthread_t th;
  CHECK_EQ_I(pthread_create(&th, NULL, exit_serial_with_exception, NULL), 0);
  CHECK_EQ_I(pthread_join(th, NULL), 0);
  CHECK_EQ_U(V(live_inside), 1);
  CHECK_EQ_U(sstm__itm_slow_live(), 0);
  CHECK_EQ_I(V(serial_runs), 1); /* committed */
  CHECK_EQ_I(mc_live(), 1);
  __cxa_free_exception(exc_obj); /* nobody else frees it */
  CHECK_EQ_I(mc_live(), 0);
  sstm_test_fini();
#else
  sstm_test_skip("built without libstdc++");
#endif
}

TEST(a_thread_that_ends_revocable_with_an_exception_object_gives_its_count_back) {
#if SSTM_TEST_STDCXX
  sstm_test_init();
  EXC_TRACK();
  pthread_t th;
  CHECK_EQ_I(pthread_create(&th, NULL, exit_revocable_with_exception, NULL), 0);
  CHECK_EQ_I(pthread_join(th, NULL), 0);
  CHECK_EQ_U(V(live_inside), 1);
  CHECK_EQ_U(sstm__itm_slow_live(), 0);
  CHECK_EQ_I(V(x), 0);      /* cancelled, */
  CHECK_EQ_I(mc_live(), 0); /* and the object freed by its rollback (eh_rollback) */
  sstm_test_fini();
#else
  sstm_test_skip("built without libstdc++");
#endif
}

/* POSIX leaves the order of the thread-specific-data destructors open;
 * glibc calls them in the keys' order, and a key takes the lowest free
 * slot. A slot freed below the engine's key before the ABI's is made
 * puts the ABI's destructor first: it must then wait for the engine's,
 * whose rollback frees the exception object and drops its record, rather
 * than drop the record itself (the object would never be freed). */
TEST(the_abi_destructor_before_the_engines_still_lets_the_rollback_free_the_exception_object) {
#if SSTM_TEST_STDCXX
  pthread_key_t hole, after;
  CHECK_EQ_I(pthread_key_create(&hole, NULL), 0);
  sstm_test_init(); /* the engine's key, above the hole */
  CHECK_EQ_I(pthread_key_delete(hole), 0);
  __transaction_atomic { y += 1; } /* the ABI initialises: its key takes the hole */
  CHECK_EQ_I(pthread_key_create(&after, NULL), 0);
  CHECK_NE_U(after, hole); /* the hole is taken */
  EXC_TRACK();
  pthread_t th;
  CHECK_EQ_I(pthread_create(&th, NULL, exit_revocable_with_exception, NULL), 0);
  CHECK_EQ_I(pthread_join(th, NULL), 0);
  CHECK_EQ_U(V(live_inside), 1);
  CHECK_EQ_U(sstm__itm_slow_live(), 0);
  CHECK_EQ_I(V(x), 0);
  CHECK_EQ_I(mc_live(), 0);
  CHECK_EQ_I(pthread_key_delete(after), 0);
  sstm_test_fini();
#else
  sstm_test_skip("built without libstdc++");
#endif
}

/* ---- a serial transaction's commit actions at the thread's end (I1, I3) ---- */

/* The engine commits a transaction that asked to be irrevocable when its
 * thread ends in it, and its commit runs the commit actions, which may run
 * transactions of their own: those must not wait for the serial
 * transaction, which holds the others back until the ABI lets them in. */
__attribute__((transaction_pure)) void _ITM_addUserCommitAction(void (*fn)(void *), uint64_t tid,
                                                                void *arg);
static long action_runs;

static void commit_action_with_a_transaction(void *arg) {
  (void)arg;
  __transaction_atomic { action_runs += 1; }
}

__attribute__((transaction_pure)) static void add_action_and_exit(void) {
  _ITM_addUserCommitAction(commit_action_with_a_transaction, 0, NULL);
  pthread_exit(NULL);
}

__attribute__((noinline)) void unsafe_add_action_and_exit(void) {
  sched_yield();
  add_action_and_exit();
}

static void *exit_serial_with_a_commit_action(void *arg) {
  (void)arg;
  __transaction_relaxed {
    serial_runs += 1;
    unsafe_add_action_and_exit();
  }
  return NULL;
}

TEST(a_thread_that_ends_serial_runs_commit_actions_that_run_transactions) {
  sstm_test_init();
  pthread_t th;
  CHECK_EQ_I(pthread_create(&th, NULL, exit_serial_with_a_commit_action, NULL), 0);
  CHECK_EQ_I(pthread_join(th, NULL), 0);
  CHECK_EQ_I(V(serial_runs), 1);   /* committed, */
  CHECK_EQ_I(V(action_runs), 1);   /* and its action's transaction ran */
  __transaction_atomic { x += 1; } /* the others are let in */
  CHECK_EQ_I(V(x), 1);
  sstm_test_fini();
}

/* ---- the thread's buffers (I1) ------------------------------------------- */

/* The ABI's log of private memory (_ITM_L*, I6), with one record of
 * LOG_BYTES old bytes and its address and two lengths: a buffer of 8192
 * bytes (it doubles from 256), a size that nothing else on the thread's
 * way asks for once its descriptor exists. */
#define LOG_BYTES 6000
#define LOG_TRACK() mc_track_sizes(8192, 8193)
__attribute__((transaction_pure)) void _ITM_LB(const void *addr, size_t n);
static unsigned char priv[LOG_BYTES];

__attribute__((transaction_pure)) static void log_and_exit(void) {
  _ITM_LB(priv, sizeof priv);
  memset(priv, 0xee, sizeof priv); /* the plain write that the log undoes */
  pthread_exit(NULL);
}

static void *exit_with_a_log(void *arg) {
  (void)arg;
  __transaction_atomic {
    x += 1;
    if (!itm_exit_never) log_and_exit();
    x += 1;
  }
  return NULL;
}

/* Once the engine's destructor has ended the transaction (its rollback
 * restored the log), nothing reads the thread's buffers: they are freed,
 * whichever destructor runs first. The first thread makes the descriptor
 * that the second one reuses. */
static void exit_with_a_log_twice(void) {
  memset(priv, 0x11, sizeof priv);
  for (int i = 0; i < 2; i++) {
    if (i == 1) LOG_TRACK();
    pthread_t th;
    CHECK_EQ_I(pthread_create(&th, NULL, exit_with_a_log, NULL), 0);
    CHECK_EQ_I(pthread_join(th, NULL), 0);
    CHECK_EQ_I(V(x), 0);          /* cancelled, */
    CHECK_EQ_I(V(priv[0]), 0x11); /* and the log restored by its rollback */
    CHECK_EQ_I(V(priv[LOG_BYTES - 1]), 0x11);
  }
  CHECK_EQ_I(mc_tracked_total(), 1); /* the log was tracked, */
  CHECK_EQ_I(mc_live(), 0);          /* and freed at the thread's end */
  CHECK_EQ_U(sstm__itm_slow_live(), 0);
}

TEST(a_thread_that_ends_in_a_transaction_frees_its_buffers) {
  sstm_test_init();
  exit_with_a_log_twice();
  sstm_test_fini();
}

TEST(a_thread_that_ends_in_a_transaction_frees_its_buffers_abi_destructor_first) {
  pthread_key_t hole, after; /* as in the exception object's case above */
  CHECK_EQ_I(pthread_key_create(&hole, NULL), 0);
  sstm_test_init();
  CHECK_EQ_I(pthread_key_delete(hole), 0);
  __transaction_atomic { y += 1; }
  CHECK_EQ_I(pthread_key_create(&after, NULL), 0);
  CHECK_NE_U(after, hole);
  exit_with_a_log_twice();
  CHECK_EQ_I(pthread_key_delete(after), 0);
  sstm_test_fini();
}

/* A thread that ends inside a user commit action: the state of the
 * transaction whose action it ran was saved (action_enter) with its
 * buffers, among them its log of private memory, and nothing puts it back
 * any more; its buffers go at the thread's end with the thread's own. */
static void end_the_thread(void *arg) {
  (void)arg;
  pthread_exit(NULL);
}

/* A log of BIG_LOG_BYTES: a buffer of 32768 bytes, a size that a new
 * descriptor (the ended thread keeps its own) does not ask for. */
#define BIG_LOG_BYTES 24000
static unsigned char priv2[BIG_LOG_BYTES];

__attribute__((transaction_pure)) static void log_and_register_the_end(void) {
  _ITM_LB(priv2, sizeof priv2);
  memset(priv2, 0x22, sizeof priv2); /* kept: the transaction commits */
  _ITM_addUserCommitAction(end_the_thread, 1 /* _ITM_noTransactionId */, NULL);
}

static void *commit_then_end_in_its_action(void *arg) {
  (void)arg;
  __transaction_atomic {
    x += 1;
    if (!itm_exit_never) log_and_register_the_end();
  }
  return NULL;
}

TEST(a_thread_that_ends_in_a_commit_action_frees_the_saved_buffers) {
  sstm_test_init();
  x = 0;
  for (int i = 0; i < 2; i++) {
    if (i == 1) mc_track_sizes(32768, 32769); /* the second thread's alone */
    pthread_t th;
    CHECK_EQ_I(pthread_create(&th, NULL, commit_then_end_in_its_action, NULL), 0);
    CHECK_EQ_I(pthread_join(th, NULL), 0);
    CHECK_EQ_I(V(x), i + 1); /* committed, */
    CHECK_EQ_I(V(priv2[0]), 0x22);
  }
  CHECK_EQ_I(mc_tracked_total(), 1); /* the log was tracked, */
  CHECK_EQ_I(mc_live(), 0);          /* and freed at the thread's end */
  CHECK_EQ_U(sstm__itm_slow_live(), 0);
  /* No sstm_shutdown: a thread that ends inside a user action leaves its
   * descriptor registered for good (the engine cannot end the callback it
   * is in), and shutdown refuses while one is (SSTM_EBUSY). The case runs
   * in a process of its own. */
}

SSTM_TEST_MAIN()
