/* SPDX-License-Identifier: MIT */
/* OS facilities used by the engine (os/os.h): monotonic time (vDSO, no
 * system call), thread ids and CPU clocks, and the random-delay points of
 * the race-widening build. */
#define _GNU_SOURCE
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include "os.h" /* os/os.h */

static uint64_t ts_ns(const struct timespec *ts) {
  return (uint64_t)ts->tv_sec * 1000000000ull + (uint64_t)ts->tv_nsec;
}

uint64_t sstm__now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts_ns(&ts);
}

int sstm__gettid(void) { return (int)gettid(); }

/* The kernel's clock id of a thread's CPU-time clock (what glibc's
 * pthread_getcpuclockid builds, from the thread id instead of a pthread_t):
 * (~tid << 3) | CPUCLOCK_PERTHREAD_MASK (4) | CPUCLOCK_SCHED (2). A thread
 * of another process is refused by the kernel (EINVAL). */
bool sstm__thread_cpu_ns(int tid, uint64_t *ns) {
  if (tid <= 0) return false;
  clockid_t id = (clockid_t)((~(unsigned)tid << 3) | 6u);
  struct timespec ts;
  if (clock_gettime(id, &ts) != 0) return false;
  *ns = ts_ns(&ts);
  return true;
}

/* SCHEDSTM_RANDOM_DELAY builds: at one delay point in 2^shift yield the
 * CPU, at one in 2^(shift+5) sleep up to 50 us, to widen the windows
 * between the steps of the protocols. Barriers use shift 5; the steps of
 * commit, rollback and take-over, where locks are held and waiters may
 * spin, shift 8 (core/engine.h, sstm__random_delay_point). */
void sstm__os_random_delay(uint64_t r, unsigned shift) {
  uint64_t m = (1ull << shift) - 1;
  if ((r & m) == 0) sched_yield();
  if ((r & ((m << 5) | 31)) == 1) {
    struct timespec ts = {0, (long)((r >> 20) % 50000)};
    nanosleep(&ts, NULL);
  }
}
