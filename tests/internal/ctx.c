/* SPDX-License-Identifier: MIT */
/* User-level contexts, stacks with guard pages and the signal-to-thread-
 * context redirect (src/arch/ctx.h, src/os/os.h): switches between many
 * contexts, registers across a switch, a redirect at random points of a
 * loop that checks every register and its red zone (also when the
 * redirected code switches contexts, and when it is resumed on another
 * thread), the guard page, and the trap of an entry function that
 * returns. The register-level helpers are in ctx_regs.S. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "arch/ctx.h"
#include "os/os.h"
#include "runner.h"

#if defined(__SANITIZE_THREAD__)
#define TEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TEST_TSAN 1
#endif
#endif
#ifndef TEST_TSAN
#define TEST_TSAN 0
#endif

/* ctx_regs.S */
void sstm_test_switch_regs(sstm__ctx_t *save, const sstm__ctx_t *load, const uint64_t in[8],
                           uint64_t out[8]);
int sstm_test_regloop(uint64_t iters, const uint64_t init[90], uint64_t progress[3]);
void sstm_test_clobber(uint64_t seed);
extern const char sstm_test_regloop_end[];

#define STACK_SIZE (256u * 1024u)

static int tid(void) { return (int)syscall(SYS_gettid); }

static void stack_new(sstm__stack_t *s) { CHECK_EQ_I(sstm__stack_alloc(s, STACK_SIZE, 0), 0); }

/* ---- ping-pong ---- */

static sstm__ctx_t pp_main, pp_ctx;
static unsigned long pp_count;

static void pp_entry(void *arg) {
  unsigned long n = *(unsigned long *)arg;
  volatile unsigned long mine = 0x5eed; /* a local of this stack */
  for (unsigned long i = 0; i < n; i++) {
    pp_count++;
    CHECK_EQ_U(mine, 0x5eed + i);
    mine++;
    sstm__ctx_switch(&pp_ctx, &pp_main);
  }
  sstm__ctx_leave(&pp_ctx, &pp_main);
}

TEST(ping_pong) {
  sstm__stack_t s;
  stack_new(&s);
  unsigned long n = sstm_test_scaled(100000, 1000);
  CHECK_EQ_I(sstm__ctx_init_thread(&pp_main), 0);
  CHECK_EQ_I(sstm__ctx_init(&pp_ctx, s.lo, s.size, pp_entry, &n), 0);
  volatile unsigned long here = 77;
  for (unsigned long i = 0; i < n; i++) {
    sstm__ctx_switch(&pp_main, &pp_ctx);
    CHECK_EQ_U(pp_count, i + 1);
    CHECK_EQ_U(here, 77 + i);
    here++;
  }
  sstm__ctx_switch(&pp_main, &pp_ctx); /* the context leaves */
  CHECK_EQ_U(pp_count, n);
  /* Reset: the same context runs its entry afresh. */
  pp_count = 0;
  unsigned long one = 1;
  CHECK_EQ_I(sstm__ctx_reset(&pp_ctx, pp_entry, &one), 0);
  sstm__ctx_switch(&pp_main, &pp_ctx);
  sstm__ctx_switch(&pp_main, &pp_ctx);
  CHECK_EQ_U(pp_count, 1);
  sstm__ctx_destroy(&pp_ctx);
  sstm__ctx_destroy(&pp_main);
  sstm__stack_free(&s);
}

/* ---- many contexts, round robin ---- */

enum { RR_N = 64 };
static sstm__ctx_t rr_main, rr_ctx[RR_N];
static int *rr_log;
static size_t rr_pos;
static unsigned rr_rounds;

static void rr_entry(void *arg) {
  int i = (int)(intptr_t)arg;
  int next = (i + 1) % RR_N;
  volatile uint64_t mark[4] = {(uint64_t)i, (uint64_t)i * 3, (uint64_t)i * 5, ~(uint64_t)i};
  for (unsigned r = 0; r < rr_rounds; r++) {
    rr_log[rr_pos++] = i;
    sstm__ctx_switch(&rr_ctx[i], &rr_ctx[next]);
    CHECK_EQ_U(mark[0] + mark[1] + mark[2], (uint64_t)i * 9);
    CHECK_EQ_X(mark[3], ~(uint64_t)i);
  }
  sstm__ctx_leave(&rr_ctx[i], i == RR_N - 1 ? &rr_main : &rr_ctx[next]);
}

TEST(round_robin_of_many_contexts) {
  static sstm__stack_t st[RR_N];
  rr_rounds = (unsigned)sstm_test_scaled(500, 20);
  rr_log = calloc((size_t)RR_N * rr_rounds, sizeof *rr_log);
  CHECK_NOT_NULL(rr_log);
  CHECK_EQ_I(sstm__ctx_init_thread(&rr_main), 0);
  for (int i = 0; i < RR_N; i++) {
    CHECK_EQ_I(sstm__stack_alloc(&st[i], 64 * 1024, 0), 0);
    CHECK_EQ_I(sstm__ctx_init(&rr_ctx[i], st[i].lo, st[i].size, rr_entry, (void *)(intptr_t)i), 0);
  }
  sstm__ctx_switch(&rr_main, &rr_ctx[0]);
  CHECK_EQ_U(rr_pos, (size_t)RR_N * rr_rounds);
  for (size_t k = 0; k < rr_pos; k++)
    CHECK_EQ_I(rr_log[k], (int)(k % RR_N));
  for (int i = 0; i < RR_N; i++) {
    sstm__ctx_destroy(&rr_ctx[i]);
    sstm__stack_free(&st[i]);
  }
  sstm__ctx_destroy(&rr_main);
  free(rr_log);
}

/* ---- callee-saved registers, MXCSR and the x87 control word ---- */

static sstm__ctx_t cs_main, cs_ctx;
static uint64_t cs_in_main[8], cs_in_ctx[8], cs_out_ctx[8];

static void cs_fill(uint64_t in[8], uint64_t seed, uint32_t mxcsr, uint16_t fcw) {
  for (int i = 0; i < 6; i++)
    in[i] = sstm__rand(&seed);
  in[6] = mxcsr;
  in[7] = fcw;
}

static void cs_entry(void *arg) {
  (void)arg;
  /* Different values in every callee-saved register, round-down MXCSR,
   * and 53-bit precision rounding up in the x87 control word. */
  sstm_test_switch_regs(&cs_ctx, &cs_main, cs_in_ctx, cs_out_ctx);
  sstm__ctx_leave(&cs_ctx, &cs_main);
}

TEST(callee_saved_registers_and_fp_control_survive_a_switch) {
  sstm__stack_t s;
  stack_new(&s);
  uint64_t out[8];
  uint64_t seed = sstm_test_seed() | 1;
  for (int round = 0; round < 50; round++) {
    cs_fill(cs_in_main, seed + 2u * (uint64_t)round, 0x7f80, 0x0f7f);
    cs_fill(cs_in_ctx, ~seed + 2u * (uint64_t)round, 0x3f80 | 0x8000, 0x0a7f);
    CHECK_EQ_I(sstm__ctx_init_thread(&cs_main), 0);
    if (round == 0)
      CHECK_EQ_I(sstm__ctx_init(&cs_ctx, s.lo, s.size, cs_entry, NULL), 0);
    else
      CHECK_EQ_I(sstm__ctx_reset(&cs_ctx, cs_entry, NULL), 0);
    /* main -> ctx (which loads its own values and switches back) -> main */
    sstm_test_switch_regs(&cs_main, &cs_ctx, cs_in_main, out);
    for (int i = 0; i < 8; i++)
      CHECK_EQ_X(out[i], cs_in_main[i]);
    /* main -> ctx: the context sees its values again, then leaves */
    sstm__ctx_switch(&cs_main, &cs_ctx);
    for (int i = 0; i < 8; i++)
      CHECK_EQ_X(cs_out_ctx[i], cs_in_ctx[i]);
  }
  sstm__ctx_destroy(&cs_ctx);
  sstm__stack_free(&s);
}

/* ---- a context resumed by one thread, then another (voluntary) ---- */

static sstm__ctx_t mig_ctx;
static sstm__ctx_t mig_worker[2];
static _Atomic(sstm__ctx_t *) mig_cur; /* the worker context C returns to */
static _Atomic uint64_t mig_turn;      /* whose turn to run C: 0, 1; 2 = done (a futex) */
static _Atomic int mig_running_tid;    /* the thread that runs C now, 0 = none */
static _Atomic int mig_preemptible;    /* the looping code runs its own code (rd_handler) */
static _Atomic unsigned long mig_handoffs;
static unsigned long mig_target;
static int mig_threads_seen[2];
static int mig_result;
static bool mig_done; /* C ended: written by C, read by the worker it left to */

/* C gives its thread back: to whichever worker runs it now. */
static void mig_yield(void) {
  sstm__ctx_t *w = atomic_load_explicit(&mig_cur, memory_order_relaxed);
  sstm__ctx_switch(&mig_ctx, w);
}

static void mig_voluntary_entry(void *arg) {
  (void)arg;
  volatile uint64_t local = 0xabcdef;
  int last = 0;
  while (atomic_load_explicit(&mig_handoffs, memory_order_relaxed) < mig_target) {
    int t = tid();
    if (t != last) {
      last = t;
      if (mig_threads_seen[0] == 0 || mig_threads_seen[0] == t)
        mig_threads_seen[0] = t;
      else
        mig_threads_seen[1] = t;
    }
    local += 1;
    mig_yield();
  }
  mig_result = local > 0xabcdef ? 0 : 1;
  mig_done = true;
  sstm__ctx_leave(&mig_ctx, atomic_load_explicit(&mig_cur, memory_order_relaxed));
}

/* A worker: waits for its turn, runs C until C gives the thread back, then
 * hands the turn to the other worker. The release store of the turn comes
 * after C was saved (C's switch returned here), which the other worker's
 * acquire load orders before its switch into C (arch/ctx.h). */
static void mig_worker_run(int me) {
  sstm__stack_t alt;
  CHECK_EQ_I(sstm__altstack_install(&alt), 0); /* for the redirect (arch/ctx.h) */
  CHECK_EQ_I(sstm__ctx_init_thread(&mig_worker[me]), 0);
  for (;;) {
    int t;
    /* Asleep until the turn changes (woken by the other worker's store):
     * a worker that spun on sched_yield here got the CPU back only after
     * whatever else ran there had used up its slice, one slice per
     * hand-over on a loaded host. */
    while ((t = (int)atomic_load_explicit(&mig_turn, memory_order_acquire)) != me && t != 2)
      sstm__futex_wait(&mig_turn, (uint32_t)t, 0);
    if (t == 2) break;
    atomic_store_explicit(&mig_cur, &mig_worker[me], memory_order_relaxed);
    atomic_store_explicit(&mig_running_tid, tid(), memory_order_relaxed);
    sstm__ctx_switch(&mig_worker[me], &mig_ctx);
    atomic_store_explicit(&mig_running_tid, 0, memory_order_relaxed);
    unsigned long h = atomic_fetch_add_explicit(&mig_handoffs, 1, memory_order_relaxed) + 1;
    if (mig_done || h > mig_target * 4 + 1000000) {
      atomic_store_explicit(&mig_turn, 2, memory_order_release);
      sstm__futex_wake_all(&mig_turn);
      break;
    }
    atomic_store_explicit(&mig_turn, (uint64_t)(1 - me), memory_order_release);
    sstm__futex_wake_all(&mig_turn);
  }
  sstm__ctx_destroy(&mig_worker[me]);
  sstm__altstack_remove(&alt);
}

static void *mig_thread(void *arg) {
  mig_worker_run((int)(intptr_t)arg);
  return NULL;
}

static void mig_setup(void (*entry)(void *), unsigned long target) {
  atomic_store_explicit(&mig_turn, 0, memory_order_relaxed);
  atomic_store_explicit(&mig_handoffs, 0, memory_order_relaxed);
  atomic_store_explicit(&mig_running_tid, 0, memory_order_relaxed);
  atomic_store_explicit(&mig_preemptible, 0, memory_order_relaxed);
  mig_target = target;
  mig_done = false;
  mig_result = -1;
  memset(mig_threads_seen, 0, sizeof mig_threads_seen);
  static sstm__stack_t s;
  if (s.lo == NULL) stack_new(&s);
  CHECK_EQ_I(sstm__ctx_init(&mig_ctx, s.lo, s.size, entry, NULL), 0);
}

TEST(context_moves_between_threads) {
  mig_setup(mig_voluntary_entry, sstm_test_scaled(20000, 500));
  pthread_t th[2];
  for (int i = 0; i < 2; i++)
    CHECK_EQ_I(pthread_create(&th[i], NULL, mig_thread, (void *)(intptr_t)i), 0);
  for (int i = 0; i < 2; i++)
    CHECK_EQ_I(pthread_join(th[i], NULL), 0);
  CHECK_EQ_I(mig_result, 0);
  CHECK_NE_I(mig_threads_seen[0], 0);
  CHECK_NE_I(mig_threads_seen[1], 0);
  CHECK_NE_I(mig_threads_seen[0], mig_threads_seen[1]);
  sstm__ctx_destroy(&mig_ctx);
}

/* ---- the redirect ---- */

static bool have_avx(void) {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2");
}

static void redirect_skip_if_unsupported(void) {
  if (TEST_TSAN)
    sstm_test_skip("ThreadSanitizer delivers asynchronous signals late, on a copy of the "
                   "ucontext: sstm__redirect refuses under TSan (src/arch/ctx.h)");
  if (!have_avx()) sstm_test_skip("the register loop (ctx_regs.S) needs AVX2");
}

static double as_double(uint64_t bits) {
  double d;
  memcpy(&d, &bits, sizeof d);
  return d;
}

/* The x87 registers the loop kept: 1.0 and pi (rounded to double). */
static bool x87_kept(const uint64_t progress[3]) {
  return as_double(progress[1]) == 1.0 && as_double(progress[2]) == 3.14159265358979311600;
}

/* The loop's initial values, from the test's seed. */
static void regloop_init(uint64_t init[90], uint64_t seed) {
  seed |= 1;
  for (int i = 0; i < 90; i++)
    init[i] = sstm__rand(&seed);
  init[2] = 0; /* one register at zero, one at all ones */
  init[3] = ~(uint64_t)0;
}

/* What the handler does, per test. */
enum { MODE_CLOBBER, MODE_SWITCH, MODE_MIGRATE };
static int rd_mode;
static _Atomic int rd_target_tid;        /* MODE_CLOBBER/SWITCH: the looping thread */
static _Atomic unsigned long rd_count;   /* redirects set up */
static _Atomic unsigned long rd_in_loop; /* ... of which interrupted the register loop */
static _Atomic unsigned long rd_fn_runs;
static _Atomic unsigned long rd_refused;
static _Atomic bool rd_stop;
static sstm__ctx_t rd_thread_ctx, rd_other_ctx;

static void rd_fn(void *arg);

static void rd_handler(int sig, siginfo_t *si, void *ucv) {
  (void)sig;
  (void)si;
  ucontext_t *uc = ucv;
  int saved_errno = errno;
  int target = rd_mode == MODE_MIGRATE
                   ? atomic_load_explicit(&mig_running_tid, memory_order_relaxed)
                   : atomic_load_explicit(&rd_target_tid, memory_order_relaxed);
  if (target != tid()) {
    errno = saved_errno;
    return;
  }
  /* MODE_SWITCH, MODE_MIGRATE: only while the looping code runs its own
   * code (a PREEMPTABLE flag, [Silvestri17]): not in the worker's code, not
   * inside a switch or fn. Clearing the flag here keeps a second signal
   * out of fn until fn sets it again. MODE_CLOBBER lets redirects nest. */
  bool flagged = rd_mode != MODE_CLOBBER;
  if (flagged) {
    if (!atomic_load_explicit(&mig_preemptible, memory_order_relaxed)) {
      errno = saved_errno;
      return;
    }
    atomic_store_explicit(&mig_preemptible, 0, memory_order_relaxed);
  }
  uintptr_t pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
  if (sstm__redirect(uc, rd_fn, (void *)(uintptr_t)0x1234)) {
    atomic_fetch_add_explicit(&rd_count, 1, memory_order_relaxed);
    if (pc >= (uintptr_t)sstm_test_regloop && pc < (uintptr_t)sstm_test_regloop_end)
      atomic_fetch_add_explicit(&rd_in_loop, 1, memory_order_relaxed);
  } else {
    atomic_fetch_add_explicit(&rd_refused, 1, memory_order_relaxed);
    if (flagged) atomic_store_explicit(&mig_preemptible, 1, memory_order_relaxed);
  }
  errno = saved_errno;
}

/* The other context of MODE_SWITCH: clobbers everything, with its own
 * MXCSR (round up), and switches back. */
static void rd_other_entry(void *arg) {
  (void)arg;
  uint64_t seed = 99;
  for (;;) {
    __asm__ volatile("ldmxcsr %0" ::"m"((uint32_t){0x5f80}));
    sstm_test_clobber(sstm__rand(&seed));
    sstm__ctx_switch(&rd_other_ctx, &rd_thread_ctx);
  }
}

static void rd_fn(void *arg) {
  CHECK_EQ_X((uintptr_t)arg, 0x1234);
  atomic_fetch_add_explicit(&rd_fn_runs, 1, memory_order_relaxed);
  /* The trampoline gives fn a clean ABI state. */
  uint32_t mxcsr;
  __asm__ volatile("stmxcsr %0" : "=m"(mxcsr));
  CHECK_EQ_X(mxcsr & 0xffc0u, 0x1f80u);
  uint64_t rflags;
  __asm__ volatile("pushfq; popq %0" : "=r"(rflags));
  CHECK_EQ_X(rflags & 0x400u, 0); /* DF */
  /* x87: the default control word and an empty register stack (tag word
   * all ones), though the loop keeps two registers and its own word. */
  uint16_t env[14];
  __asm__ volatile("fnstenv %0" : "=m"(env));
  CHECK_EQ_X(env[0], 0x037f);
  CHECK_EQ_X(env[4], 0xffff);
  volatile char big[2048];
  memset((char *)big, 0x5a, sizeof big); /* the C library's SIMD copy */
  sstm_test_clobber((uint64_t)(uintptr_t)big);
  switch (rd_mode) {
  case MODE_CLOBBER: break;
  case MODE_SWITCH:
    sstm__ctx_switch(&rd_thread_ctx, &rd_other_ctx);
    atomic_store_explicit(&mig_preemptible, 1, memory_order_relaxed);
    break;
  case MODE_MIGRATE:
    mig_yield(); /* returns on whichever worker resumes C */
    atomic_store_explicit(&mig_preemptible, 1, memory_order_relaxed);
    break;
  }
}

static void rd_install(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = rd_handler;
  sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  CHECK_EQ_I(sigaction(SIGUSR1, &sa, NULL), 0);
}

/* The signaller: SIGUSR1 to the target at random intervals (a sleep of
 * 0-20 us, plus the timer slack) until told to stop. */
static void *rd_signaller(void *arg) {
  (void)arg;
  uint64_t seed = sstm_test_seed() | 1;
  pid_t pid = getpid();
  while (!atomic_load_explicit(&rd_stop, memory_order_relaxed)) {
    int t = rd_mode == MODE_MIGRATE ? atomic_load_explicit(&mig_running_tid, memory_order_relaxed)
                                    : atomic_load_explicit(&rd_target_tid, memory_order_relaxed);
    if (t != 0) syscall(SYS_tgkill, pid, t, SIGUSR1);
    struct timespec ts = {0, (long)(sstm__rand(&seed) % 20000)};
    nanosleep(&ts, NULL);
  }
  return NULL;
}

static void rd_reset_counts(int mode) {
  rd_mode = mode;
  atomic_store_explicit(&rd_count, 0, memory_order_relaxed);
  atomic_store_explicit(&rd_in_loop, 0, memory_order_relaxed);
  atomic_store_explicit(&rd_fn_runs, 0, memory_order_relaxed);
  atomic_store_explicit(&rd_refused, 0, memory_order_relaxed);
  atomic_store_explicit(&rd_stop, false, memory_order_relaxed);
}

/* Runs the register loop on this thread in chunks until `want` redirects
 * have been set up, checking every chunk. */
static void rd_loop_until(unsigned long want) {
  uint64_t init[90];
  uint64_t progress[3] = {0, 0, 0};
  regloop_init(init, sstm_test_seed());
  unsigned long chunks = 0;
  while (atomic_load_explicit(&rd_count, memory_order_relaxed) < want) {
    int rc = sstm_test_regloop(2000, init, progress);
    CHECK_MSG(rc == 0, "register loop: check %d failed after %lu redirects", rc,
              atomic_load_explicit(&rd_count, memory_order_relaxed));
    CHECK_MSG(x87_kept(progress), "register loop: the x87 registers held %a and %a",
              as_double(progress[1]), as_double(progress[2]));
    init[0] += 1; /* a new start every chunk */
    chunks++;
  }
  CHECK_EQ_U(progress[0], chunks * 2000);
}

static void rd_run_on_this_thread(int mode) {
  redirect_skip_if_unsupported();
  rd_reset_counts(mode);
  atomic_store_explicit(&mig_preemptible, 1, memory_order_relaxed);
  rd_install();
  unsigned long want = sstm_test_scaled(10000, 1000);
  sstm__stack_t alt;
  CHECK_EQ_I(sstm__altstack_install(&alt), 0);
  atomic_store_explicit(&rd_target_tid, tid(), memory_order_relaxed);
  pthread_t sig;
  CHECK_EQ_I(pthread_create(&sig, NULL, rd_signaller, NULL), 0);
  rd_loop_until(want);
  atomic_store_explicit(&rd_target_tid, 0, memory_order_relaxed);
  atomic_store_explicit(&rd_stop, true, memory_order_relaxed);
  CHECK_EQ_I(pthread_join(sig, NULL), 0);
  sstm__altstack_remove(&alt);
  unsigned long n = atomic_load_explicit(&rd_count, memory_order_relaxed);
  CHECK_GE_U(n, want);
  CHECK_EQ_U(atomic_load_explicit(&rd_fn_runs, memory_order_relaxed), n);
  /* Most of the thread's time is in the loop: many redirects land there. */
  CHECK_GE_U(atomic_load_explicit(&rd_in_loop, memory_order_relaxed), n / 10);
}

TEST(redirect_keeps_every_register_and_the_red_zone) { rd_run_on_this_thread(MODE_CLOBBER); }

TEST(redirect_whose_fn_switches_contexts_keeps_every_register) {
  sstm__stack_t s;
  stack_new(&s);
  CHECK_EQ_I(sstm__ctx_init_thread(&rd_thread_ctx), 0);
  CHECK_EQ_I(sstm__ctx_init(&rd_other_ctx, s.lo, s.size, rd_other_entry, NULL), 0);
  rd_run_on_this_thread(MODE_SWITCH);
  sstm__ctx_destroy(&rd_other_ctx);
  sstm__stack_free(&s);
}

/* C runs the register loop; each redirect's fn gives the thread back, and
 * the other worker resumes C: the trampoline returns on another thread. */
static void mig_redirect_entry(void *arg) {
  (void)arg;
  atomic_store_explicit(&mig_preemptible, 1, memory_order_relaxed);
  uint64_t init[90];
  uint64_t progress[3] = {0, 0, 0};
  regloop_init(init, sstm_test_seed());
  unsigned long chunks = 0;
  int rc = 0;
  while (atomic_load_explicit(&mig_handoffs, memory_order_relaxed) < mig_target) {
    rc = sstm_test_regloop(2000, init, progress);
    if (rc == 0 && !x87_kept(progress)) rc = 101;
    if (rc != 0) break;
    init[0] += 1;
    chunks++;
  }
  atomic_store_explicit(&mig_preemptible, 0, memory_order_relaxed);
  mig_result = rc != 0 ? rc : progress[0] == chunks * 2000 ? 0 : 100;
  mig_done = true;
  sstm__ctx_leave(&mig_ctx, atomic_load_explicit(&mig_cur, memory_order_relaxed));
}

TEST(redirect_resumed_on_another_thread_keeps_every_register) {
  redirect_skip_if_unsupported();
  rd_reset_counts(MODE_MIGRATE);
  rd_install();
  mig_setup(mig_redirect_entry, sstm_test_scaled(5000, 500));
  pthread_t th[2], sig;
  for (int i = 0; i < 2; i++)
    CHECK_EQ_I(pthread_create(&th[i], NULL, mig_thread, (void *)(intptr_t)i), 0);
  CHECK_EQ_I(pthread_create(&sig, NULL, rd_signaller, NULL), 0);
  for (int i = 0; i < 2; i++)
    CHECK_EQ_I(pthread_join(th[i], NULL), 0);
  atomic_store_explicit(&rd_stop, true, memory_order_relaxed);
  CHECK_EQ_I(pthread_join(sig, NULL), 0);
  CHECK_MSG(mig_result == 0, "register loop in the migrating context: result %d after %lu handoffs",
            mig_result, atomic_load_explicit(&mig_handoffs, memory_order_relaxed));
  CHECK_GE_U(atomic_load_explicit(&mig_handoffs, memory_order_relaxed), mig_target);
  CHECK_GE_U(atomic_load_explicit(&rd_count, memory_order_relaxed), mig_target - 1);
  sstm__ctx_destroy(&mig_ctx);
}

/* The redirect refuses what it must. */
TEST(redirect_refuses_bad_arguments_and_the_trampoline) {
  static struct {
    char below[64];
    ucontext_t uc; /* as on an alternate stack */
    char above[64];
  } alt;
  memset(&alt, 0, sizeof alt);
  CHECK_FALSE(sstm__redirect(NULL, rd_fn, NULL));
  CHECK_FALSE(sstm__redirect(&alt.uc, NULL, NULL));
  alt.uc.uc_mcontext.gregs[REG_RIP] = (greg_t)(uintptr_t)sstm__preempt_tramp + 4;
  CHECK_FALSE(sstm__redirect(&alt.uc, rd_fn, NULL));
  CHECK_GE_U(sstm__preempt_xsave_size(), 512);
  CHECK_GT_U(sstm__preempt_frame_size(), sstm__preempt_xsave_size() + 128);
  /* The frame it builds: below the 128-byte red zone, arg, fn and the
   * interrupted rip; rsp and rip rewritten. (Under TSan: refused.) The
   * ucontext must lie on the alternate stack, the interrupted rsp off it. */
  uint64_t stackbuf[64];
  memset(stackbuf, 0, sizeof stackbuf);
  alt.uc.uc_mcontext.gregs[REG_RIP] = 0x1000;
  alt.uc.uc_mcontext.gregs[REG_RSP] = (greg_t)(uintptr_t)&stackbuf[63];
  alt.uc.uc_stack.ss_flags = SS_DISABLE;
  alt.uc.uc_stack.ss_sp = &alt;
  alt.uc.uc_stack.ss_size = sizeof alt;
  CHECK_FALSE(sstm__redirect(&alt.uc, rd_fn, (void *)(uintptr_t)7)); /* no alternate stack */
  alt.uc.uc_stack.ss_flags = 0;
  alt.uc.uc_stack.ss_sp = (char *)&stackbuf[0];
  alt.uc.uc_stack.ss_size = sizeof stackbuf;
  CHECK_FALSE(sstm__redirect(&alt.uc, rd_fn, (void *)(uintptr_t)7)); /* frame not on it */
  alt.uc.uc_stack.ss_sp = &alt;
  alt.uc.uc_stack.ss_size = sizeof alt;
  alt.uc.uc_mcontext.gregs[REG_RSP] = (greg_t)(uintptr_t)&alt.above[8];
  CHECK_FALSE(sstm__redirect(&alt.uc, rd_fn, (void *)(uintptr_t)7)); /* interrupted on it */
  alt.uc.uc_mcontext.gregs[REG_RSP] = (greg_t)(uintptr_t)&stackbuf[63];
  for (int i = 0; i < 64; i++)
    CHECK_EQ_X(stackbuf[i], 0);
  alt.uc.uc_mcontext.gregs[REG_RAX] = SYS_restart_syscall;
  CHECK_FALSE(sstm__redirect(&alt.uc, rd_fn, (void *)(uintptr_t)7));
  alt.uc.uc_mcontext.gregs[REG_RAX] = 0;
  if (TEST_TSAN) {
    CHECK_FALSE(sstm__redirect(&alt.uc, rd_fn, (void *)(uintptr_t)7));
    return;
  }
  /* inside a switch: the assembly, and the C wrapper */
  alt.uc.uc_mcontext.gregs[REG_RIP] = (greg_t)(uintptr_t)sstm__ctx_swap + 8;
  CHECK_FALSE(sstm__redirect(&alt.uc, rd_fn, (void *)(uintptr_t)7));
  alt.uc.uc_mcontext.gregs[REG_RIP] = (greg_t)(uintptr_t)sstm__ctx_switch + 1;
  CHECK_FALSE(sstm__redirect(&alt.uc, rd_fn, (void *)(uintptr_t)7));
  alt.uc.uc_mcontext.gregs[REG_RIP] = 0x1000;
  for (int i = 0; i < 64; i++)
    CHECK_EQ_X(stackbuf[i], 0);
  CHECK_TRUE(sstm__redirect(&alt.uc, rd_fn, (void *)(uintptr_t)7));
  CHECK_EQ_PTR((void *)(uintptr_t)alt.uc.uc_mcontext.gregs[REG_RSP], &stackbuf[63 - 19]);
  CHECK_EQ_PTR((void *)(uintptr_t)alt.uc.uc_mcontext.gregs[REG_RIP], (void *)sstm__preempt_tramp);
  CHECK_EQ_X(stackbuf[44], 7);
  CHECK_EQ_X(stackbuf[45], (uint64_t)(uintptr_t)rd_fn);
  CHECK_EQ_X(stackbuf[46], 0x1000);
  for (int i = 47; i < 63; i++)
    CHECK_EQ_X(stackbuf[i], 0); /* the red zone is not written */
}

/* A real signal whose handler runs on the interrupted stack: refused. */
TEST(redirect_refuses_a_handler_on_the_interrupted_stack) {
  if (TEST_TSAN) sstm_test_skip("sstm__redirect refuses everything under TSan (src/arch/ctx.h)");
  rd_reset_counts(MODE_CLOBBER);
  rd_install(); /* SA_ONSTACK, but this thread has no alternate stack */
  /* ASan gives threads an alternate stack of its own: set it aside. */
  stack_t old, off = {.ss_sp = NULL, .ss_size = 0, .ss_flags = SS_DISABLE};
  CHECK_EQ_I(sigaltstack(&off, &old), 0);
  atomic_store_explicit(&rd_target_tid, tid(), memory_order_relaxed);
  for (int i = 0; i < 10; i++)
    CHECK_EQ_I(raise(SIGUSR1), 0);
  atomic_store_explicit(&rd_target_tid, 0, memory_order_relaxed);
  if (!(old.ss_flags & SS_DISABLE)) CHECK_EQ_I(sigaltstack(&old, NULL), 0);
  CHECK_EQ_U(atomic_load_explicit(&rd_count, memory_order_relaxed), 0);
  CHECK_EQ_U(atomic_load_explicit(&rd_refused, memory_order_relaxed), 10);
  CHECK_EQ_U(atomic_load_explicit(&rd_fn_runs, memory_order_relaxed), 0);
}

/* ---- bad input ---- */

static void nop_entry(void *arg) { (void)arg; }

TEST(init_and_stack_reject_bad_input) {
  sstm__ctx_t c;
  char buf[8192];
  CHECK_EQ_I(sstm__ctx_init(NULL, buf, sizeof buf, nop_entry, NULL), EINVAL);
  CHECK_EQ_I(sstm__ctx_init(&c, NULL, sizeof buf, nop_entry, NULL), EINVAL);
  CHECK_EQ_I(sstm__ctx_init(&c, buf, sizeof buf, NULL, NULL), EINVAL);
  CHECK_EQ_I(sstm__ctx_init(&c, buf, SSTM__CTX_MIN_STACK - 1, nop_entry, NULL), EINVAL);
  CHECK_EQ_I(sstm__ctx_init_thread(NULL), EINVAL);
  CHECK_EQ_I(sstm__ctx_init_thread(&c), 0);
  CHECK_EQ_I(sstm__ctx_reset(&c, nop_entry, NULL), EINVAL); /* a thread's context */
  CHECK_EQ_I(sstm__ctx_reset(NULL, nop_entry, NULL), EINVAL);
  sstm__ctx_destroy(&c);
  sstm__ctx_destroy(NULL);
  sstm__stack_t s;
  CHECK_EQ_I(sstm__stack_alloc(NULL, 4096, 0), EINVAL);
  CHECK_EQ_I(sstm__stack_alloc(&s, 0, 0), EINVAL);
  CHECK_NULL(s.lo);
  CHECK_EQ_I(sstm__stack_alloc(&s, SIZE_MAX, 0), EINVAL);
  CHECK_EQ_I(sstm__stack_alloc(&s, 1, 3 * 4096 + 1), 0);
  CHECK_EQ_U(s.size, sstm__page_size());
  CHECK_EQ_U(s.map_size, s.size + 4 * sstm__page_size());
  CHECK_EQ_PTR((char *)s.map + 4 * sstm__page_size(), s.lo);
  memset(s.lo, 1, s.size);
  sstm__stack_free(&s);
  CHECK_NULL(s.map);
  sstm__stack_free(&s);
  sstm__stack_free(NULL);
}

TEST(altstack_install_and_remove) {
  CHECK_EQ_I(sstm__altstack_install(NULL), EINVAL);
  stack_t old, cur, off = {.ss_sp = NULL, .ss_size = 0, .ss_flags = SS_DISABLE};
  CHECK_EQ_I(sigaltstack(&off, &old), 0); /* ASan may have given us one */
  sstm__stack_t alt;
  CHECK_EQ_I(sstm__altstack_install(&alt), 0);
  CHECK_EQ_I(sigaltstack(NULL, &cur), 0);
  CHECK_EQ_PTR(cur.ss_sp, alt.lo);
  CHECK_EQ_U(cur.ss_size, alt.size);
  CHECK_GE_U(alt.size, 64 * 1024);
  CHECK_EQ_I(cur.ss_flags & SS_DISABLE, 0);
  sstm__altstack_remove(&alt);
  CHECK_NULL(alt.map);
  CHECK_EQ_I(sigaltstack(NULL, &cur), 0);
  CHECK_NE_I(cur.ss_flags & SS_DISABLE, 0);
  sstm__altstack_remove(&alt); /* a freed one: nothing */
  sstm__altstack_remove(NULL);
  if (!(old.ss_flags & SS_DISABLE)) CHECK_EQ_I(sigaltstack(&old, NULL), 0);
}

/* ---- the guard page ---- */

static sstm__stack_t ov_stack;
static sstm__ctx_t ov_main, ov_ctx;

static void ov_segv(int sig, siginfo_t *si, void *uc) {
  (void)sig;
  (void)uc;
  uintptr_t a = (uintptr_t)si->si_addr;
  uintptr_t lo = (uintptr_t)ov_stack.map, hi = (uintptr_t)ov_stack.lo;
  _exit(a >= lo && a < hi ? 42 : 43);
}

static volatile unsigned long ov_limit = ~0ul; /* never reached: the guard is */

static unsigned long ov_recurse(unsigned long n) {
  volatile char frame[512];
  if (n == ov_limit) return 0;
  frame[0] = (char)n;
  frame[511] = (char)n;
  return ov_recurse(n + 1) + frame[0] + frame[511]; /* not a tail call */
}

static void ov_entry(void *arg) {
  (void)arg;
  ov_recurse(0);
}

TEST(stack_overflow_hits_the_guard_page) {
  pid_t pid = sstm_test_fork();
  CHECK_GE_I(pid, 0);
  if (pid == 0) {
    static char altstack[64 * 1024];
    stack_t ss = {.ss_sp = altstack, .ss_size = sizeof altstack, .ss_flags = 0};
    if (sigaltstack(&ss, NULL) != 0) _exit(44);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = ov_segv;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGSEGV, &sa, NULL) != 0) _exit(45);
    if (sstm__stack_alloc(&ov_stack, 64 * 1024, 0) != 0) _exit(46);
    sstm__ctx_init_thread(&ov_main);
    sstm__ctx_init(&ov_ctx, ov_stack.lo, ov_stack.size, ov_entry, NULL);
    sstm__ctx_switch(&ov_main, &ov_ctx);
    _exit(47);
  }
  int st;
  CHECK_EQ_I(waitpid(pid, &st, 0), pid);
  CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 42,
            "the overflow should fault inside the guard page (exit 42), got status 0x%x", st);
}

/* ---- an entry function that returns ---- */

static void returning_entry(void *arg) { (void)arg; }

static void entry_returns(void) {
  static sstm__stack_t s;
  static sstm__ctx_t m, c;
  if (sstm__stack_alloc(&s, STACK_SIZE, 0) != 0) return;
  sstm__ctx_init_thread(&m);
  sstm__ctx_init(&c, s.lo, s.size, returning_entry, NULL);
  sstm__ctx_switch(&m, &c);
}

TEST(entry_that_returns_traps) {
  sstm_test_expect_abort(entry_returns, "an entry function that returns",
                         "returned from its entry function");
}

static sstm__ctx_t lv_main, lv_ctx;
static void leaving_entry(void *arg) {
  (void)arg;
  sstm__ctx_leave(&lv_ctx, &lv_main);
}

static void resume_after_leave(void) {
  static sstm__stack_t s;
  if (sstm__stack_alloc(&s, STACK_SIZE, 0) != 0) return;
  sstm__ctx_init_thread(&lv_main);
  sstm__ctx_init(&lv_ctx, s.lo, s.size, leaving_entry, NULL);
  sstm__ctx_switch(&lv_main, &lv_ctx);
  sstm__ctx_switch(&lv_main, &lv_ctx); /* resumes a context that left */
}

TEST(resuming_a_context_that_left_traps) {
  sstm_test_expect_abort(resume_after_leave, "a context resumed after it left",
                         "was resumed after sstm__ctx_leave");
}

SSTM_TEST_MAIN()
