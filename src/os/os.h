/* SPDX-License-Identifier: MIT */
/* The plain OS facilities of the bottom layer (src/os): monotonic time,
 * thread ids and CPU clocks, futexes, asymmetric fences, and the random
 * delays of the race-widening build. They take plain arguments and know
 * nothing of the engine (no descriptor, no configuration, no error
 * message): src/os compiles without src/core on its include path
 * (src/CMakeLists.txt), and the engine adapts them (src/core/os_glue.c).
 * The scheduling facilities are in os/sched.h. */
#ifndef SSTM_OS_OS_H
#define SSTM_OS_OS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* ---- pseudo-random numbers ---- */
/* xorshift64*: the engine's and the policies' generator (a per-descriptor
 * or per-policy state, no shared word). *s must not be 0. */
static inline uint64_t sstm__rand(uint64_t *s) {
  uint64_t x = *s;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *s = x;
  return x * 0x2545F4914F6CDD1Dull;
}

/* ---- os/time.c ---- */
/* CLOCK_MONOTONIC in ns (vDSO: no system call). */
uint64_t sstm__now_ns(void);
/* The calling thread's kernel thread id. */
int sstm__gettid(void);
/* The CPU time thread `tid` of this process has used, in ns (a system
 * call: not for the hot path). False if the thread is gone or tid <= 0. */
bool sstm__thread_cpu_ns(int tid, uint64_t *ns);
/* One delay point of the race-widening build (SCHEDSTM_RANDOM_DELAY), from
 * a random number r: yields the CPU at one point in 2^shift, sleeps up to
 * 50 us at one in 2^(shift+5). */
void sstm__os_random_delay(uint64_t r, unsigned shift);

/* ---- os/futex.c ---- */
/* Private futexes on the low 32 bits of a 64-bit word (x86-64 is little
 * endian: they sit at the word's address). The wait returns when woken,
 * when the low half is no longer expect_low, on a signal, or after
 * timeout_ns (0: no timeout); the caller re-checks in every case. */
void sstm__futex_wait(_Atomic uint64_t *word, uint32_t expect_low, uint64_t timeout_ns);
void sstm__futex_wake_all(_Atomic uint64_t *word);

/* ---- os/membarrier.c ---- */
/* Register the process for MEMBARRIER_CMD_PRIVATE_EXPEDITED (Linux >=
 * 4.14); false if the kernel lacks it or refuses. */
bool sstm__membarrier_register(void);
/* A full barrier on every running thread of the process, after
 * sstm__membarrier_register() succeeded; false if the system call failed. */
bool sstm__membarrier_fence(void);

#endif /* SSTM_OS_OS_H */
