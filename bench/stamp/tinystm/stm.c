/* SPDX-License-Identifier: MIT */
/* The TinySTM STAMP adapter's functions (bench/stamp/tinystm/stm.h):
 * startup and shutdown, thread entry and exit, the commit and abort counts
 * that SSTM_STAMP_STATS dumps, and the undo log of STM_LOCAL_WRITE.
 * Compiled into every STAMP application that bench/stamp/build.sh builds
 * with --tinystm-dir. */
#define _GNU_SOURCE /* pthread_getattr_np */
#include "stm.h"

#include "../stats_out.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* TinySTM's abort reasons (stm.h): STM_ABORT_EXPLICIT, or
 * STM_ABORT_IMPLICIT with a detail in bits 8-11. Names for the dump. */
enum { N_IMPLICIT = 16 };
static const char *const implicit_name[N_IMPLICIT] = {
    "implicit",  "rr-conflict", "rw-conflict", "wr-conflict", "ww-conflict", "val-read",
    "val-write", "validate",    "other",       "irrevocable", "killed",      "signal",
    "extend-ws", "other",       "other",       "other"};

/* Per thread; added to the totals when the thread exits (and the calling
 * thread's at shutdown). */
__thread uint64_t sstm_tiny_commits;
__thread size_t sstm_tiny_local_n;
__thread uintptr_t sstm_tiny_begin_sp;
static __thread uint64_t aborts_implicit[N_IMPLICIT], aborts_explicit, aborts_unknown;

/* Relaxed: each thread adds once at its exit, and the totals are read at
 * STM_SHUTDOWN, after STAMP has joined every thread (the join orders the
 * additions before the read). */
static _Atomic uint64_t total_commits, total_implicit[N_IMPLICIT], total_explicit, total_unknown;

static void die(const char *what) {
  fprintf(stderr, "TinySTM STAMP adapter: %s failed\n", what);
  exit(1);
}

static void local_undo(void *arg);
static void note_stack(void);

void sstm_tiny_startup(void) {
  stm_init();
  /* The undo of local writes is a global abort callback registered before
   * mod_mem's, so that it runs first (TinySTM calls them in registration
   * order): mod_mem's returns the blocks the attempt allocated to malloc,
   * and a local write may have gone into one of them. A per-transaction
   * callback (stm_on_abort) would run after the frees of the blocks
   * allocated after it was registered, and its undo would write into
   * freed memory. */
  if (!stm_register(NULL, NULL, NULL, NULL, NULL, local_undo, NULL))
    die("stm_register (STM_LOCAL_WRITE's undo)");
  mod_mem_init(0); /* mod_mem and the per-transaction callbacks of mod_cb */
  note_stack();    /* the main thread's, in case it writes locally without entering */
}

void sstm_tiny_aborted(int reason) {
  if ((reason & STM_ABORT_EXPLICIT) == STM_ABORT_EXPLICIT)
    aborts_explicit++;
  else if ((reason & STM_ABORT_IMPLICIT) == STM_ABORT_IMPLICIT)
    aborts_implicit[(reason >> 8) & (N_IMPLICIT - 1)]++;
  else
    aborts_unknown++;
}

static void flush_counts(void) {
  atomic_fetch_add_explicit(&total_commits, sstm_tiny_commits, memory_order_relaxed);
  for (int i = 0; i < N_IMPLICIT; i++)
    atomic_fetch_add_explicit(&total_implicit[i], aborts_implicit[i], memory_order_relaxed);
  atomic_fetch_add_explicit(&total_explicit, aborts_explicit, memory_order_relaxed);
  atomic_fetch_add_explicit(&total_unknown, aborts_unknown, memory_order_relaxed);
  sstm_tiny_commits = aborts_explicit = aborts_unknown = 0;
  memset(aborts_implicit, 0, sizeof aborts_implicit);
}

/* The dump in the format of sstm_stats_dump()'s "total" entry, which the
 * harness (bench/harness/stamp.py, parse_stats) reads. */
static void dump(FILE *f) {
  uint64_t a[N_IMPLICIT], ex = atomic_load_explicit(&total_explicit, memory_order_relaxed),
                          un = atomic_load_explicit(&total_unknown, memory_order_relaxed);
  uint64_t sum = ex + un;
  for (int i = 0; i < N_IMPLICIT; i++) {
    a[i] = atomic_load_explicit(&total_implicit[i], memory_order_relaxed);
    sum += a[i];
  }
  fprintf(f, "TinySTM, counted by the STAMP adapter (bench/stamp/tinystm)\n");
  fprintf(f, "total commits=%llu aborts=%llu\n",
          (unsigned long long)atomic_load_explicit(&total_commits, memory_order_relaxed),
          (unsigned long long)sum);
  fprintf(f, "  aborts:");
  for (int i = 0; i < N_IMPLICIT; i++)
    if (a[i]) fprintf(f, " %s=%llu", implicit_name[i], (unsigned long long)a[i]);
  if (ex) fprintf(f, " explicit=%llu", (unsigned long long)ex);
  if (un) fprintf(f, " unknown=%llu", (unsigned long long)un);
  fprintf(f, "\n");
}

void sstm_tiny_shutdown(void) {
  flush_counts();
  sstm_stamp_stats_out(dump);
  stm_exit();
}

void *sstm_tiny_thread_enter(void) {
  stm_init_thread();
  note_stack();
  return NULL;
}

/* ---- the undo log of STM_LOCAL_WRITE (as bench/stamp/stm.c's) ----------
 * One per thread, empty at the start of every attempt: STM_END and the
 * abort callback (registered at startup, called for every abort of every
 * thread, in the aborting thread) empty it. */
struct local_entry {
  void *addr;
  size_t size;
  unsigned char old[16];
};

static __thread struct {
  size_t cap;
  struct local_entry *e;
} local_log;

/* The lowest address of this thread's stack, set when the thread enters. */
static __thread uintptr_t stack_lo;

static void note_stack(void) {
  pthread_attr_t attr;
  void *addr;
  size_t size;
  if (pthread_getattr_np(pthread_self(), &attr) != 0) die("pthread_getattr_np");
  int rc = pthread_attr_getstack(&attr, &addr, &size);
  pthread_attr_destroy(&attr);
  if (rc != 0) die("pthread_attr_getstack");
  stack_lo = (uintptr_t)addr;
}

/* The abort callback: put the old bytes back, newest first, except those
 * in the stack below the begin's stack pointer: every frame there belongs
 * to a function the attempt called, dead at the restart, or to the abort
 * path that runs this callback, which may lie where the dead frames were,
 * this function's own frame included (writing there crashed yada). Nothing
 * to do when the attempt wrote nothing locally. */
static void local_undo(void *arg) {
  (void)arg;
  uintptr_t lo = stack_lo, hi = sstm_tiny_begin_sp;
  for (size_t i = sstm_tiny_local_n; i-- > 0;) {
    uintptr_t a = (uintptr_t)local_log.e[i].addr;
    if (a >= lo && a < hi) continue;
    memcpy(local_log.e[i].addr, local_log.e[i].old, local_log.e[i].size);
  }
  sstm_tiny_local_n = 0;
}

void sstm_tiny_local_log(void *addr, size_t size) {
  if (!stm_active()) return;       /* outside a transaction: a plain store */
  if (stack_lo == 0) note_stack(); /* a thread that never entered */
  if (sstm_tiny_local_n == local_log.cap) {
    size_t cap = local_log.cap ? 2 * local_log.cap : 64;
    struct local_entry *e = realloc(local_log.e, cap * sizeof *e);
    if (e == NULL) {
      fprintf(stderr, "TinySTM STAMP adapter: out of memory for the STM_LOCAL_WRITE log\n");
      exit(1);
    }
    local_log.e = e;
    local_log.cap = cap;
  }
  struct local_entry *en = &local_log.e[sstm_tiny_local_n++];
  en->addr = addr;
  en->size = size;
  memcpy(en->old, addr, size);
}

void sstm_tiny_thread_exit(void) {
  flush_counts();
  stm_exit_thread();
  free(local_log.e);
  local_log.e = NULL;
  local_log.cap = 0;
  sstm_tiny_local_n = 0;
}
