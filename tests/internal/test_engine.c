/* SPDX-License-Identifier: MIT */
/* Internal unit tests: the global clock, the lock table and the descriptor
 * status word as the engine maintains them (src/core/engine.h). Single
 * threaded and deterministic, but for the CPU-clock case (one helper
 * thread). */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/engine.h"

#include "../common/txhelp.h"

static uint64_t clock_time(void) {
  return sstm_clock_time(atomic_load_explicit(&sstm__g.clock, memory_order_acquire));
}
static uint64_t lock_of(const void *addr) {
  return atomic_load_explicit(sstm__lock_for(sstm_self(), addr), memory_order_acquire);
}

static uint64_t words[64] __attribute__((aligned(4096)));

static void init_geometry(unsigned bits, unsigned shift) {
  sstm_config_t c;
  sstm_test_config(&c);
  c.lock_bits = bits;
  c.stripe_shift = shift;
  CHECK_OK(sstm_init(&c));
  CHECK_OK(sstm_thread_init());
}

TEST(lock_table_geometry) {
  init_geometry(12, 4);
  CHECK_EQ_U(sstm__g.lock_mask, (1u << 12) - 1);
  CHECK_EQ_U(sstm__g.stripe_shift, 4);
  for (uint64_t i = 0; i <= sstm__g.lock_mask; i++)
    CHECK_FALSE(sstm_lw_locked(atomic_load_explicit(&sstm__g.locks[i], memory_order_seq_cst)));
  uintptr_t base = (uintptr_t)words;
#define AT(off) ((const void *)(base + (off)))
  /* one lock per 16-byte stripe, distinct for neighbouring stripes */
  CHECK_EQ_PTR(sstm__lock_for(sstm_self(), AT(0)), sstm__lock_for(sstm_self(), AT(15)));
  CHECK_NE_PTR(sstm__lock_for(sstm_self(), AT(0)), sstm__lock_for(sstm_self(), AT(16)));
  /* the table wraps: addresses 2^(12+4) bytes apart share a lock */
  CHECK_EQ_PTR(sstm__lock_for(sstm_self(), AT(0)), sstm__lock_for(sstm_self(), AT(1u << 16)));
  /* every lock pointer is inside the table */
  for (uintptr_t a = 0; a < 1u << 18; a += 8) {
    _Atomic uint64_t *l = sstm__lock_for(sstm_self(), AT(a));
    CHECK_TRUE(l >= sstm__g.locks && l <= sstm__g.locks + sstm__g.lock_mask);
  }
  sstm_test_fini();
}

TEST(clock_advances_once_per_update_commit) {
  sstm_test_init();
  CHECK_FALSE(sstm_clock_irrevocable(atomic_load_explicit(&sstm__g.clock, memory_order_seq_cst)));
  uint64_t t0 = clock_time();
  for (int i = 1; i <= 10; i++) {
    tx_store_u64(&words[0], (uint64_t)i);
    CHECK_EQ_U(clock_time(), t0 + (uint64_t)i);
    uint64_t l = lock_of(&words[0]);
    CHECK_FALSE(sstm_lw_locked(l));
    CHECK_EQ_U(sstm_lw_version(l), t0 + (uint64_t)i); /* version = commit time */
  }
  /* read-only transactions do not touch the clock */
  uint64_t t1 = clock_time();
  for (int i = 0; i < 5; i++)
    CHECK_EQ_U(tx_load_u64(&words[0]), 10);
  CHECK_EQ_U(clock_time(), t1);
  /* a cancelled update leaves clock and lock alone */
  uint64_t before = lock_of(&words[0]);
  SSTM_ATOMIC_BEGIN(NULL)
    sstm_store_u64(&words[0], 99);
    sstm_cancel();
  SSTM_ATOMIC_END();
  CHECK_EQ_U(clock_time(), t1);
  CHECK_EQ_X(lock_of(&words[0]), before);
  sstm_test_fini();
}

static volatile int attempts;

TEST(write_lock_ownership_and_release) {
  sstm_test_init();
  sstm_desc_t *me = sstm_self();
  uint64_t before = lock_of(&words[8]);
  CHECK_FALSE(sstm_lw_locked(before));
  attempts = 0;
  SSTM_ATOMIC_BEGIN(NULL)
    attempts++;
    CHECK_EQ_I(sstm_st_state(atomic_load_explicit(&me->status, memory_order_seq_cst)),
               SSTM_ST_ACTIVE);
    CHECK_EQ_U(sstm_st_serial(atomic_load_explicit(&me->status, memory_order_seq_cst)),
               sstm_txid());
    sstm_store_u64(&words[8], 1);
    uint64_t l = lock_of(&words[8]);
    if (sstm_test_design() == SSTM_DESIGN_ETL) {
      /* encounter-time: locked by this attempt at the first write */
      CHECK_TRUE(sstm_lw_locked(l));
      CHECK_EQ_U(sstm_lw_slot(l), sstm_desc_slot(me));
      CHECK_EQ_X(sstm_lw_serial(l), sstm_txid() & SSTM_LW_SERIAL_MASK);
      CHECK_TRUE(sstm_st_owns(atomic_load_explicit(&me->status, memory_order_seq_cst), l));
    } else {
      CHECK_EQ_X(l, before); /* commit-time: untouched until commit */
    }
    if (attempts == 1) sstm_restart();
  SSTM_ATOMIC_END();
  CHECK_EQ_I(attempts, 2);
  uint64_t after = lock_of(&words[8]);
  CHECK_FALSE(sstm_lw_locked(after));
  CHECK_EQ_U(sstm_lw_version(after), clock_time());
  CHECK_EQ_I(sstm_st_state(atomic_load_explicit(&me->status, memory_order_seq_cst)), SSTM_ST_IDLE);
  /* the rollback restored the old version (checked on a fresh word) */
  uint64_t b2 = lock_of(&words[16]);
  SSTM_ATOMIC_BEGIN(NULL)
    sstm_store_u64(&words[16], 1);
    sstm_cancel();
  SSTM_ATOMIC_END();
  CHECK_EQ_X(lock_of(&words[16]), b2);
  sstm_test_fini();
}

/* The common begin does not renew the owner word: the attempt's first
 * lock does (sstm__owner_ready, engine.h). Transactions in a row, first
 * attempts all (the common begin), each lock with their own serial, see
 * their own writes, and a later one that only reads sees the stripe as
 * any committed version. */
static uint64_t owner_round;
static void owner_write(void *arg) {
  sstm_desc_t *me = arg;
  CHECK_EQ_U(sstm_load_u64(&words[24]), owner_round - 1);
  sstm_store_u64(&words[24], owner_round);
  sstm_store_u64(&words[32], owner_round); /* a second stripe: the word is current */
  CHECK_EQ_U(sstm_load_u64(&words[24]), owner_round);
  if (sstm_test_design() == SSTM_DESIGN_ETL) {
    uint64_t l = lock_of(&words[24]);
    CHECK_EQ_X(l, sstm_lw_make_owner(sstm_desc_slot(me), sstm_txid()));
    CHECK_EQ_X(lock_of(&words[32]), l);
    CHECK_EQ_X(me->owner_lw, l);
  }
}
static void owner_read(void *arg) {
  (void)arg;
  CHECK_EQ_U(sstm_load_u64(&words[24]), owner_round);
  CHECK_EQ_U(sstm_load_u64(&words[32]), owner_round);
}
TEST(each_first_attempt_locks_with_its_own_serial) {
  sstm_test_init();
  for (owner_round = 1; owner_round <= 4; owner_round++) {
    CHECK_OK(sstm_run(NULL, owner_write, sstm_self()));
    CHECK_FALSE(sstm_lw_locked(lock_of(&words[24])));
    CHECK_OK(sstm_run(NULL, owner_read, NULL)); /* read only: takes no lock */
  }
  CHECK_EQ_U(words[24], 4);
  CHECK_EQ_U(words[32], 4);
  sstm_test_fini();
}

TEST(irrevocable_flag_in_clock) {
  sstm_test_init();
  sstm_attr_t a = {.irrevocable = true};
  uint64_t t0 = clock_time();
  SSTM_ATOMIC_BEGIN(&a)
    CHECK_TRUE(sstm_clock_irrevocable(atomic_load_explicit(&sstm__g.clock, memory_order_seq_cst)));
    CHECK_EQ_I(sstm_st_state(atomic_load_explicit(&sstm_self()->status, memory_order_seq_cst)),
               SSTM_ST_IRREVOCABLE);
    sstm_store_u64(&words[24], 5);
  SSTM_ATOMIC_END();
  CHECK_FALSE(sstm_clock_irrevocable(atomic_load_explicit(&sstm__g.clock, memory_order_seq_cst)));
  CHECK_GE_U(clock_time(), t0 + 1);
  CHECK_FALSE(sstm_lw_locked(lock_of(&words[24])));
  CHECK_EQ_U(words[24], 5);
  sstm_test_fini();
}

TEST(kill_sets_status_killed) {
  sstm_test_init();
  sstm_desc_t *me = sstm_self();
  attempts = 0;
  SSTM_ATOMIC_BEGIN(NULL)
    attempts++;
    sstm_store_u64(&words[32], 1);
    if (attempts == 1) {
      uint64_t serial = sstm_txid();
      sstm_desc_detach();
      CHECK_OK(sstm_desc_attach(txh_other_desc()));
      CHECK_OK(sstm_desc_kill(me, serial));
      uint64_t st = atomic_load_explicit(&me->status, memory_order_seq_cst);
      CHECK_EQ_I(sstm_st_state(st), SSTM_ST_KILLED);
      CHECK_EQ_U(sstm_st_serial(st), serial);
      sstm_desc_detach();
      CHECK_OK(sstm_desc_attach(me));
    }
  SSTM_ATOMIC_END();
  CHECK_EQ_I(attempts, 2);
  CHECK_EQ_I(sstm_st_state(atomic_load_explicit(&me->status, memory_order_seq_cst)), SSTM_ST_IDLE);
  txh_cleanup();
  sstm_test_fini();
}

/* Argument 6: taking a killed attempt's lock over gives the stripe a fresh
 * version, a clock tick of the thief's own, newer than the victim's
 * snapshot: the victim cannot use the stripe again without an extension,
 * and an extension sees its KILLED status. (Reusing the current time would
 * let a victim that read its variant before the kill reach the stolen
 * stripe through the fast path and lose its buffered write.) */
TEST_ETL(take_over_gives_the_lock_a_fresh_version) {
  sstm_test_init();
  sstm_desc_t *me = sstm_self();
  attempts = 0;
  SSTM_ATOMIC_BEGIN(NULL)
    attempts++;
    sstm_store_u64(&words[40], 1);
    if (attempts == 1) {
      uint64_t serial = sstm_txid(), end = me->end, t0 = clock_time();
      sstm_desc_detach();
      CHECK_OK(sstm_desc_attach(txh_other_desc()));
      CHECK_OK(sstm_desc_kill(me, serial));
      CHECK_EQ_U(tx_load_u64(&words[40]), 0); /* the reader steals; memory is unmodified */
      sstm_stats_t st;
      CHECK_OK(sstm_stats_get(sstm_self(), &st));
      CHECK_EQ_U(st.locks_stolen, 1);
      CHECK_EQ_U(clock_time(), t0 + 1); /* one tick: the steal's own */
      uint64_t l = lock_of(&words[40]);
      CHECK_FALSE(sstm_lw_locked(l));
      CHECK_EQ_U(sstm_lw_version(l), t0 + 1);
      CHECK_GT_U(sstm_lw_version(l), end);
      sstm_desc_detach();
      CHECK_OK(sstm_desc_attach(me));
    }
  SSTM_ATOMIC_END();
  CHECK_EQ_I(attempts, 2);
  CHECK_EQ_U(words[40], 1);
  txh_cleanup();
  sstm_test_fini();
}

/* A barrier inside a transaction whose variant says no attempt runs ends
 * the process with a message (barrier.c, variant_broken), instead of running
 * past the variant switch (undefined behaviour). In a child process: the
 * load, then the store. */
static void barrier_without_attempt(bool store) {
  sstm_test_init();
  SSTM_ATOMIC_BEGIN(NULL)
    sstm__set_variant(sstm__cur, SSTM_V_NONE);
    if (store)
      sstm_store_u64(&words[0], 1);
    else
      (void)sstm_load_u64(&words[0]);
  SSTM_ATOMIC_END();
}
static void load_without_attempt(void) { barrier_without_attempt(false); }
static void store_without_attempt(void) { barrier_without_attempt(true); }

TEST(barrier_with_no_running_attempt_is_fatal) {
  static const char want[] = "schedstm: fatal: transactional access at depth 1 with variant 0x80";
  sstm_test_expect_abort(load_without_attempt, "load", want);
  sstm_test_expect_abort(store_without_attempt, "store", want);
}

/* Flat nesting counts depth in 16 bits (the begin's gate word, engine.h):
 * the deepest level works and leaves as it came, one more is misuse that
 * ends the process (a runaway recursion of atomic blocks). The depth is
 * set directly: 65535 real nested begins would need as many frames. */
static volatile int nest_runs;
static void nest_inner(void *arg) {
  (void)arg;
  nest_runs++;
  CHECK_EQ_U(sstm_self()->depth, UINT16_MAX);
  sstm_store_u64(&words[1], 7);
}
TEST(nesting_reaches_the_deepest_level) {
  init_geometry(20, 5);
  words[1] = 0;
  nest_runs = 0;
  SSTM_ATOMIC_BEGIN(NULL)
    struct sstm_desc *d = sstm_self();
    d->depth = UINT16_MAX - 1;
    CHECK_OK(sstm_run(NULL, nest_inner, NULL));
    CHECK_EQ_U(d->depth, UINT16_MAX - 1);
    CHECK_EQ_U(d->in_hook, 0);
    d->depth = 1;
  SSTM_ATOMIC_END();
  CHECK_EQ_I(nest_runs, 1);
  CHECK_EQ_U(words[1], 7);
  CHECK_EQ_U(sstm_self()->gate, 0); /* depth, in_hook and slow_begin */
  sstm_test_fini();
}
static void nest_too_deep(void) {
  init_geometry(20, 5);
  SSTM_ATOMIC_BEGIN(NULL)
    sstm_self()->depth = UINT16_MAX;
    (void)sstm_run(NULL, nest_inner, NULL);
  SSTM_ATOMIC_END();
}
TEST(nesting_deeper_than_the_counter_is_misuse) {
  sstm_test_expect_abort(nest_too_deep, "nesting", "transaction nesting deeper than 65535 levels");
}

/* sstm__now_ns (os/time.c) reads CLOCK_MONOTONIC in nanoseconds: the wait
 * deadlines (sstm_party_wait, the ser-* bound) and the statistics'
 * durations (cm_wait_ns) subtract two of its readings, so a wrong unit
 * makes it jump back at every second. Bracketed by the clock itself: no
 * time is asserted. */
TEST(now_ns_is_the_monotonic_clock_in_ns) {
  for (int i = 0; i < 1000; i++) {
    struct timespec a, b;
    CHECK_EQ_I(clock_gettime(CLOCK_MONOTONIC, &a), 0);
    uint64_t n = sstm__now_ns();
    CHECK_EQ_I(clock_gettime(CLOCK_MONOTONIC, &b), 0);
    CHECK_LE_U((uint64_t)a.tv_sec * 1000000000ull + (uint64_t)a.tv_nsec, n);
    CHECK_LE_U(n, (uint64_t)b.tv_sec * 1000000000ull + (uint64_t)b.tv_nsec);
  }
}

/* sstm__thread_cpu_ns (adaptive's transaction length) reads the CPU clock
 * of a thread of this process by its tid, bracketed like the clock above by
 * the C library's clocks of the same thread; a thread that has ended, one
 * of another process and a bad tid are refused. */
static _Atomic int cpu_tid;
static sem_t cpu_ready, cpu_read, cpu_done; /* helper: ready; main: has read; helper: done */
static uint64_t cpu_before, cpu_after;      /* the helper's own clock around the read */

static uint64_t own_cpu_ns(void) {
  struct timespec t;
  CHECK_EQ_I(clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t), 0);
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* sem_wait, again when a signal interrupts it */
static void sem_wait_all(sem_t *s) {
  while (sem_wait(s) != 0)
    CHECK_EQ_I(errno, EINTR);
}

/* Reads its own clock before and after the main thread reads it by tid.
 * It waits blocked (semaphores), so its clock stays far below the main
 * thread's, which has run 20 ms first: the main thread's clock, returned
 * by mistake for the helper's, cannot fall in the helper's bracket however
 * the threads are scheduled. */
static void *cpu_thread(void *arg) {
  (void)arg;
  atomic_store_explicit(&cpu_tid, sstm__gettid(), memory_order_relaxed);
  cpu_before = own_cpu_ns();
  CHECK_EQ_I(sem_post(&cpu_ready), 0);
  sem_wait_all(&cpu_read);
  cpu_after = own_cpu_ns();
  CHECK_EQ_I(sem_post(&cpu_done), 0);
  return NULL;
}

TEST(thread_cpu_time_is_the_threads_cpu_clock) {
  for (int i = 0; i < 100; i++) {
    struct timespec a, b;
    uint64_t n;
    CHECK_EQ_I(clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a), 0);
    CHECK_TRUE(sstm__thread_cpu_ns(sstm__gettid(), &n));
    CHECK_EQ_I(clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b), 0);
    CHECK_LE_U((uint64_t)a.tv_sec * 1000000000ull + (uint64_t)a.tv_nsec, n);
    CHECK_LE_U(n, (uint64_t)b.tv_sec * 1000000000ull + (uint64_t)b.tv_nsec);
  }
  /* 20 ms of CPU here first (see cpu_thread) */
  for (uint64_t t0 = own_cpu_ns(); own_cpu_ns() - t0 < 20000000;)
    sstm__cpu_relax();
  CHECK_EQ_I(sem_init(&cpu_ready, 0, 0), 0);
  CHECK_EQ_I(sem_init(&cpu_read, 0, 0), 0);
  CHECK_EQ_I(sem_init(&cpu_done, 0, 0), 0);
  pthread_t th;
  CHECK_EQ_I(pthread_create(&th, NULL, cpu_thread, NULL), 0);
  sem_wait_all(&cpu_ready); /* acquire: the helper's tid and cpu_before */
  int tid = atomic_load_explicit(&cpu_tid, memory_order_relaxed);
  uint64_t mine = own_cpu_ns();
  uint64_t n;
  CHECK_TRUE(sstm__thread_cpu_ns(tid, &n));
  CHECK_EQ_I(sem_post(&cpu_read), 0);
  sem_wait_all(&cpu_done);
  /* the helper's clock, read by tid, lies between its own two readings;
   * with the bracket below this thread's clock (the case unless the
   * helper was charged 20 ms, e.g. by a slow emulator), this thread's
   * clock could not pass for it */
  CHECK_LE_U(cpu_before, n);
  CHECK_LE_U(n, cpu_after);
  if (cpu_after >= mine) printf("note: the helper's bracket reaches this thread's clock\n");
  CHECK_EQ_I(pthread_join(th, NULL), 0);
  sem_destroy(&cpu_ready);
  sem_destroy(&cpu_read);
  sem_destroy(&cpu_done);
  /* ended: pthread_join returns once the kernel clears the thread's tid
   * word, a moment before the thread leaves the kernel's tables, so this
   * polls (a clock that stayed readable would hang: the ctest timeout) */
  while (sstm__thread_cpu_ns(tid, &n))
    sched_yield();
  CHECK_FALSE(sstm__thread_cpu_ns(getppid(), &n)); /* another process */
  CHECK_FALSE(sstm__thread_cpu_ns(0, &n));
  CHECK_FALSE(sstm__thread_cpu_ns(-1, &n));
}

/* sstm__cpus_idle_ns (adaptive's judgement of the gate's idle CPUs) sums
 * /proc/stat's idle and iowait ticks of the CPUs the calling thread may run
 * on: bracketed by two of its readings, the test's own parse of the file
 * (sscanf, another code) lies between them, for every allowed CPU and for
 * one CPU alone (its affinity narrowed, then restored). */
static bool stat_idle_ns(const cpu_set_t *set, uint64_t *ns, unsigned *n) {
  FILE *f = fopen("/proc/stat", "r");
  CHECK_NOT_NULL(f);
  char line[512];
  uint64_t ticks = 0;
  *n = 0;
  while (fgets(line, sizeof line, f)) {
    unsigned cpu;
    unsigned long long user, nice, sys, idle, iowait;
    if (sscanf(line, "cpu%u %llu %llu %llu %llu %llu", &cpu, &user, &nice, &sys, &idle, &iowait) !=
        6)
      continue;
    if (cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, set)) continue;
    ticks += idle + iowait;
    (*n)++;
  }
  fclose(f);
  *ns = ticks * (1000000000ull / (uint64_t)sysconf(_SC_CLK_TCK));
  return *n > 0;
}

static void idle_bracket(unsigned want_cpus) {
  cpu_set_t set;
  CHECK_EQ_I(sched_getaffinity(0, sizeof set, &set), 0);
  uint64_t a, b, t;
  unsigned na, nb, nt;
  CHECK_TRUE(sstm__cpus_idle_ns(&a, &na));
  CHECK_TRUE(stat_idle_ns(&set, &t, &nt));
  CHECK_TRUE(sstm__cpus_idle_ns(&b, &nb));
  CHECK_EQ_U(na, want_cpus);
  CHECK_EQ_U(nb, want_cpus);
  CHECK_EQ_U(nt, want_cpus);
  CHECK_LE_U(a, t);
  CHECK_LE_U(t, b);
}

TEST(cpus_idle_time_sums_the_allowed_cpus_of_proc_stat) {
  cpu_set_t all, one;
  CHECK_EQ_I(sched_getaffinity(0, sizeof all, &all), 0);
  for (int i = 0; i < 20; i++)
    idle_bracket(sstm__cpus_allowed());
  int first = 0;
  while (!CPU_ISSET(first, &all))
    first++;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  CHECK_EQ_I(sched_setaffinity(0, sizeof one, &one), 0);
  for (int i = 0; i < 20; i++)
    idle_bracket(1);
  CHECK_EQ_I(sched_setaffinity(0, sizeof all, &all), 0);
}

/* A host of many CPUs: /proc/stat's CPU lines run past the first 16 KiB
 * (here 600 CPUs of long-running counters, then an intr line of 4000
 * interrupts). Every CPU is summed, each with its whole counts. The reader
 * took the first 16 KiB and summed the CPUs whose lines it found there,
 * the last one with its iowait cut to the digits that fit, while adaptive
 * divides the sum by the CPUs of the affinity mask: the idle share of the
 * gate's verdict came out at about half. */
TEST(cpus_idle_time_of_a_host_of_many_cpus) {
  char path[64];
  sstm_test_tmp_file(path, sizeof path, "stat");
  FILE *f = fopen(path, "w");
  CHECK_NOT_NULL(f);
  enum { NCPU = 600 };
  const uint64_t idle0 = 123456789012ull, iowait0 = 98765432ull;
  fprintf(f, "cpu  1 2 3 4 5 6 7 8 9 10\n");
  uint64_t ticks = 0;
  for (unsigned c = 0; c < NCPU; c++) {
    uint64_t idle = idle0 + c, iowait = iowait0 + 7 * c;
    fprintf(f, "cpu%u 1234567890 12345 987654321 %llu %llu 0 765432 0 0 0\n", c,
            (unsigned long long)idle, (unsigned long long)iowait);
    ticks += idle + iowait;
  }
  fprintf(f, "intr 123456789");
  for (unsigned i = 0; i < 4000; i++)
    fprintf(f, " %u", i);
  fprintf(f, "\nctxt 1234567\nbtime 1700000000\n");
  CHECK_EQ_I(fclose(f), 0);
  uint64_t ns;
  unsigned n;
  CHECK_TRUE(sstm__cpus_idle_ns_in(path, NULL, &ns, &n));
  CHECK_EQ_U(n, NCPU);
  CHECK_EQ_U(ns, ticks * (1000000000ull / (uint64_t)sysconf(_SC_CLK_TCK)));
  /* a mask of two CPUs past the first 16 KiB */
  cpu_set_t two;
  CPU_ZERO(&two);
  CPU_SET(500, &two);
  CPU_SET(599, &two);
  CHECK_TRUE(sstm__cpus_idle_ns_in(path, &two, &ns, &n));
  CHECK_EQ_U(n, 2);
  CHECK_EQ_U(ns, (2 * idle0 + 500 + 599 + 2 * iowait0 + 7 * (500 + 599)) *
                     (1000000000ull / (uint64_t)sysconf(_SC_CLK_TCK)));
  unlink(path);
}

SSTM_TEST_MAIN()
