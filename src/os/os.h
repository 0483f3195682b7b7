/* SPDX-License-Identifier: MIT */
/* The plain OS facilities of the bottom layer (src/os): monotonic time,
 * thread ids and CPU clocks, futexes, asymmetric fences, and the random
 * delays of the race-widening build. They take plain arguments and know
 * nothing of the engine (no descriptor, no configuration, no error
 * message): src/os compiles without src/core on its include path
 * (src/CMakeLists.txt), and the engine adapts them (src/core/os_glue.c).
 * Stacks with guard pages for user-level contexts are here too (os/stack.c).
 * The scheduling facilities are in os/sched.h. */
#ifndef SSTM_OS_OS_H
#define SSTM_OS_OS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
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

/* The number of CPUs this process may run on (its affinity mask; the
 * online CPUs if that cannot be read), at least 1. A system call: not for
 * hot paths. */
unsigned sstm__cpus_allowed(void);
/* The idle time, in ns, summed over the CPUs this process may run on (its
 * affinity mask), since boot: the kernel's idle and iowait counts of each
 * such CPU in /proc/stat (time in which the CPU ran nothing; kept in
 * clock ticks, 10 ms by default, so only differences over many ticks
 * mean much). *ncpu gets the number of CPUs summed. False if the file
 * cannot be read or lists none of them. Opens and reads a file: not for
 * hot paths. */
bool sstm__cpus_idle_ns(uint64_t *ns, unsigned *ncpu);
/* The same over a file in /proc/stat's format at `path`, for the CPUs of
 * `mask` (a cpu_set_t; NULL: every CPU the file lists): a test seam, for
 * the files of hosts this one is not. */
bool sstm__cpus_idle_ns_in(const char *path, const void *mask, uint64_t *ns, unsigned *ncpu);
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

/* ---- os/stack.c ---- */
/* A stack for a user-level context (arch/ctx.h): [lo, lo + size) is
 * readable and writable, and the `guard` bytes below lo are PROT_NONE, so
 * that an overflow faults (SIGSEGV) instead of writing below the stack. */
typedef struct sstm__stack {
  void *lo;    /* the usable stack's lowest address */
  size_t size; /* its size (a multiple of the page size) */
  void *map;   /* the whole mapping, guard included (for the free) */
  size_t map_size;
} sstm__stack_t;
/* The system's page size. */
size_t sstm__page_size(void);
/* Map a stack of at least `size` bytes (rounded up to pages) with a guard
 * of at least `guard` bytes below it (0: one page). Returns 0, EINVAL (s
 * NULL, size 0, sizes that overflow), or mmap's/mprotect's errno (ENOMEM).
 * *s is zeroed on failure. A system call: not for a hot path. */
int sstm__stack_alloc(sstm__stack_t *s, size_t size, size_t guard);
/* Unmap a stack from sstm__stack_alloc and zero *s; NULL or a zeroed *s is
 * ignored. No context may still run on it. */
void sstm__stack_free(sstm__stack_t *s);

/* Give the calling thread an alternate signal stack (sigaltstack) from
 * sstm__stack_alloc, large enough for a handler and the kernel's signal
 * frame with the whole XSAVE state (MINSIGSTKSZ as the kernel reports it,
 * AT_MINSIGSTKSZ, plus 64 KiB). Handlers installed with SA_ONSTACK then
 * run on it. Returns 0 or an errno value (EPERM: the thread already runs
 * on an alternate stack). */
int sstm__altstack_install(sstm__stack_t *s);
/* Disable the calling thread's alternate signal stack if it is s, and free
 * s (not while a handler runs on it: then nothing is done). */
void sstm__altstack_remove(sstm__stack_t *s);

#endif /* SSTM_OS_OS_H */
