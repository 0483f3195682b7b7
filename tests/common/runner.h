/* SPDX-License-Identifier: MIT */
/* schedstm tests: a tiny runner.
 *
 * - Test registration: TEST(name) { ... } in a file that ends with
 *   SSTM_TEST_MAIN(). The binary runs one test per process:
 *     ./bin NAME      run test NAME
 *     ./bin --list    list the tests (CMake scans the sources for TEST(...))
 *     ./bin --help    the usage and the variables below
 *     ./bin           run every test, each in a forked child
 * - Seeds: every test has a deterministic seed derived from its name (and
 *   parameters), overridable with SSTM_TEST_SEED=<n> (decimal or 0x hex;
 *   anything else stops the run); it is printed with every
 *   failure, together with the command to reproduce.
 * - Threads: sstm_test_run_threads() starts n threads that register with
 *   schedstm (optionally), wait at a barrier so that they really start
 *   together, run fn, unregister, and are joined.
 * - Scale: SSTM_TEST_SCALE (a positive real, default 1) multiplies iteration
 *   counts; sanitizer builds run with a scale below 1.
 * - Watchdog: SSTM_TEST_WATCHDOG=<seconds> (set by CMake a little below the
 *   ctest TIMEOUT) makes a hung test print its name and seed and exit 124.
 * - Design: SSTM_TEST_DESIGN=etl|ctl selects the design used by
 *   sstm_test_init() (default etl), so that one binary covers both.
 *
 * No test asserts anything about time.
 */
#ifndef SSTM_TEST_RUNNER_H
#define SSTM_TEST_RUNNER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <schedstm/schedstm.h>

#include "check.h"

/* Exit code that ctest treats as "skipped" (SKIP_RETURN_CODE). */
#define SSTM_TEST_SKIP 77

typedef void (*sstm_test_fn)(void);
void sstm_test_register(const char *name, sstm_test_fn fn);

#define TEST(name)                                                                                 \
  static void sstm_test_##name(void);                                                              \
  __attribute__((constructor)) static void sstm_test_reg_##name(void) {                            \
    sstm_test_register(#name, sstm_test_##name);                                                   \
  }                                                                                                \
  static void sstm_test_##name(void)

int sstm_test_main(int argc, char **argv);
#define SSTM_TEST_MAIN()                                                                           \
  int main(int argc, char **argv) { return sstm_test_main(argc, argv); }

/* For binaries with their own main (parameterised tests): names the run for
 * failure messages, derives the seed from the name, arms the watchdog. */
void sstm_test_setup(const char *name, int argc, char **argv);

/* fork() for a test's helper process: the child is killed (SIGKILL) when
 * the thread that forked it ends, so a child left behind by a failed or
 * timed-out test (the watchdog's _exit) does not keep running and load the
 * machine. Call it from the thread that outlives the child (the test's
 * main thread). Returns as fork(). */
pid_t sstm_test_fork(void);
/* In a child of sstm_test_fork(), after it changed its user or group IDs
 * (the kernel then clears the parent-death signal, prctl(2)): arm it again.
 * Ends the child (status 125) if its parent has ended meanwhile.
 * Async-signal-safe. */
void sstm_test_child_rearm(void);
/* Run fn in a child (sstm_test_fork) with its stderr captured, and check
 * that it dies by SIGABRT having written to stderr, and that what it wrote
 * contains want (when not NULL). what names the case in the failure
 * message. */
void sstm_test_expect_abort(void (*fn)(void), const char *what, const char *want);

/* Leave with "skipped" (ctest SKIP_RETURN_CODE 77). */
__attribute__((noreturn)) void sstm_test_skip(const char *why);

const char *sstm_test_name(void);
uint64_t sstm_test_seed(void);
double sstm_test_scale(void);
/* n * scale, at least lo. */
uint64_t sstm_test_scaled(uint64_t n, uint64_t lo);
/* Threads: min(n, max(lo, n * scale)) unless SSTM_TEST_SCALE_THREADS=0. */
unsigned sstm_test_threads(unsigned n);
/* Environment helpers. */
long sstm_test_env_long(const char *var, long dflt);
bool sstm_test_long_mode(void); /* SSTM_TEST_LONG=1 (torture runs) */

/* Is thread `tid` of this process blocked in a futex system call right
 * now? (The first field of /proc/self/task/TID/syscall is the number of the
 * call it is blocked in.) Tests poll it to know that a waiter is asleep, so
 * that from then on only a FUTEX_WAKE (or its timeout) can release it. */
bool sstm_test_in_futex(int tid);

/* Deterministic random numbers (splitmix64 seeding, xoshiro-ish stepping). */
typedef struct sstm_rng {
  uint64_t s;
} sstm_rng_t;
void sstm_rng_seed(sstm_rng_t *r, uint64_t seed);
uint64_t sstm_rng_next(sstm_rng_t *r);
static inline uint64_t sstm_rng_below(sstm_rng_t *r, uint64_t n) {
  return n ? sstm_rng_next(r) % n : 0;
}

/* ---- library setup ----------------------------------------------------- */

/* The design selected by SSTM_TEST_DESIGN (default etl). */
sstm_design_t sstm_test_design(void);
/* Defaults with use_env = false, the test design and the policy suicide
 * (not the library's default, adaptive), plus the policies' knobs and the
 * begin-fence switch from the environment (sstm_test_env_knobs). */
void sstm_test_config(sstm_config_t *cfg);
/* The ctest entries pass the policies' knobs (SCHEDSTM_SOFTSER_LEVER,
 * SCHEDSTM_EXT_MODE, SCHEDSTM_EXT_SLICE_US, SCHEDSTM_PRIO_ESCALATE,
 * SCHEDSTM_BACKOFF_MIN_NS, SCHEDSTM_BACKOFF_MAX_NS) and
 * SCHEDSTM_NO_MEMBARRIER in the environment; the library reads it only
 * with use_env, which the tests leave off so that the rest of a
 * developer's SCHEDSTM_* environment does not change a test. Copies those
 * fields into *cfg from sstm_config_from_env() on the defaults; a
 * malformed SCHEDSTM_* value fails the test. */
void sstm_test_env_knobs(sstm_config_t *cfg);
/* sstm_init(cfg from sstm_test_config) + sstm_thread_init(); checked. */
void sstm_test_init(void);
/* The same with sampling on: cfg.sample_period, sample_fn, sample_arg. */
void sstm_test_init_sampling(unsigned period, sstm_sample_fn fn, void *arg);
/* sstm_thread_exit() + sstm_shutdown(); checked. */
void sstm_test_fini(void);
/* Create an empty file /tmp/sstm-<tag>-XXXXXX (mkstemp) and write its
 * name into path (cap bytes, enough for the name); checked. The caller
 * unlinks it. */
void sstm_test_tmp_file(char *path, size_t cap, const char *tag);

/* ---- threads ----------------------------------------------------------- */

typedef struct sstm_tt {
  unsigned idx;   /* 0..n-1 */
  unsigned n;     /* number of threads */
  uint64_t seed;  /* per-thread seed, derived from the test seed */
  sstm_rng_t rng; /* seeded with seed */
  void *arg;      /* the arg passed to sstm_test_run_threads */
} sstm_tt_t;

/* Run fn on n new threads started together. With register_thread, each
 * thread calls sstm_thread_init() before the barrier and sstm_thread_exit()
 * after fn (both checked). Returns after joining them all. */
void sstm_test_run_threads(unsigned n, bool register_thread, void (*fn)(sstm_tt_t *t), void *arg);

/* Index of the calling test thread (for messages), -1 for the main thread. */
int sstm_test_thread_index(void);

/* A reusable spinning barrier for tests (no system calls). */
typedef struct sstm_test_barrier {
  unsigned n;
  unsigned count;      /* accessed with __atomic builtins */
  unsigned generation; /* accessed with __atomic builtins */
} sstm_test_barrier_t;
void sstm_test_barrier_init(sstm_test_barrier_t *b, unsigned n);
void sstm_test_barrier_wait(sstm_test_barrier_t *b);

/* Yield the CPU a little (sched_yield; a system call). */
void sstm_test_relax(void);

#endif /* SSTM_TEST_RUNNER_H */
