/* SPDX-License-Identifier: MIT */
/* Integration test: user code built with AddressSanitizer against a library
 * built without it (the normal build only; tests.cmake).
 *
 * A restart jumps back to the transaction's checkpoint over the frames of
 * the aborted attempt. When only the user's code is instrumented, its
 * redzones in those frames stay poisoned unless the library unpoisons the
 * stack first (__asan_handle_no_return, weak, in core/txn.c): the compiler does
 * not do it, because the barrier that aborts is an ordinary call. Then a
 * later instrumented read of the library's stack data, here a policy's
 * on_conflict reading its conflict record, reported a false
 * stack-buffer-overflow. The first attempt aborts deep inside a function
 * with many small arrays (their redzones), the second meets a lock held by
 * a running attempt whose thread is blocked, so the instrumented policy runs on the same stack.
 * ASan makes the process fail on a report; success is exit status 0.
 */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#include <schedstm/schedstm.h>

static uint64_t x, y;
static volatile int attempt, conflicts;

static sstm_cm_action_t reading_policy(sstm_cm_ctx_t *ctx, const sstm_conflict_t *c,
                                       uint64_t *wait_ns) {
  (void)ctx;
  volatile int kind = c->kind; /* instrumented reads of the engine's stack */
  volatile uint64_t other = c->other.txid;
  (void)kind, (void)other;
  *wait_ns = 0;
  conflicts++;
  return SSTM_CM_ABORT_SELF;
}
static const sstm_cm_ops_t policy = {.name = "asan-reader", .on_conflict = reading_policy};

__attribute__((noinline)) static void sink(char *p) { __asm__ volatile("" ::"r"(p) : "memory"); }
#define A(n)                                                                                       \
  char a##n[1];                                                                                    \
  sink(a##n);
__attribute__((noinline)) static uint64_t deep(void) {
  /* clang-format off */
  A(0) A(1) A(2) A(3) A(4) A(5) A(6) A(7) A(8) A(9) A(10) A(11) A(12) A(13) A(14) A(15)
  A(16) A(17) A(18) A(19) A(20) A(21) A(22) A(23) A(24) A(25) A(26) A(27) A(28) A(29) A(30)
  A(31) A(32) A(33) A(34) A(35) A(36) A(37) A(38) A(39) A(40) A(41) A(42) A(43) A(44) A(45)
  A(46) A(47)
  sstm_desc_kill(sstm_self(), 0);
  /* clang-format on */
  return sstm_load_u64(&x); /* killed: the restart jumps over this frame */
}

static volatile int held;

/* Writes y and stays in the transaction, holding y's lock, until the
 * process ends. */
static void *holder(void *arg) {
  if (sstm_thread_init() != 0) _exit(2);
  SSTM_ATOMIC_BEGIN(NULL)
    sstm_store_u64(&y, 1);
    __atomic_store_n(&held, 1, __ATOMIC_RELEASE);
    for (;;)
      pause();
  SSTM_ATOMIC_END();
  return arg;
}

int main(void) {
  sstm_config_t cfg;
  sstm_config_default(&cfg);
  cfg.cm = "asan-reader";
  cfg.read_past = SSTM_READ_PAST_OFF; /* the read of y below must reach the policy */
  if (sstm_cm_register(&policy) != 0 || sstm_init(&cfg) != 0 || sstm_thread_init() != 0) {
    fprintf(stderr, "set-up failed: %s\n", sstm_last_error());
    return 2;
  }
  /* The holder runs on a thread of its own, which keeps it attached and
   * blocks inside its transaction: a running holder, whose conflicts go to
   * the policy (a suspended one, detached, would be taken over whatever the
   * policy: docs/design/core.md, (9)). */
  pthread_t th;
  if (pthread_create(&th, NULL, holder, NULL) != 0) return 2;
  while (!__atomic_load_n(&held, __ATOMIC_ACQUIRE))
    usleep(100);
  SSTM_ATOMIC_BEGIN(NULL)
    attempt++;
    if (attempt == 1) (void)deep();
    if (attempt == 2) (void)sstm_load_u64(&y); /* the policy runs */
  SSTM_ATOMIC_END();
  /* The loop ended on the third attempt (the policy aborted the second);
   * the holder's attempt stays blocked: leave without tearing down. */
  printf("attempts %d, conflicts seen by the policy %d\n", attempt, conflicts);
  fflush(stdout);
  _exit(attempt >= 3 && conflicts >= 1 ? 0 : 1);
  return 1;
}
