/* SPDX-License-Identifier: MIT */
/* schedstm tests: helpers for deterministic conflicts between real threads
 * (contention managers read OS thread ids, priorities and ages, so the two
 * parties of a conflict must be distinct threads).
 *
 * A scenario is a sequence of numbered phases: each thread waits for the
 * phase it needs (spinning with sched_yield), does its step, and advances
 * the phase. Nothing is asserted about time; a lost step hangs and the
 * watchdog fails the test.
 */
#ifndef SSTM_TEST_CM_DUO_H
#define SSTM_TEST_CM_DUO_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../common/txhelp.h"

/* TEST_ETL(name): a case that needs encounter-time locking (txhelp.h). */

static _Atomic int duo_phase_;

static inline void duo_reset(void) { atomic_store_explicit(&duo_phase_, 0, memory_order_seq_cst); }
static inline int duo_phase(void) {
  return atomic_load_explicit(&duo_phase_, memory_order_acquire);
}
static inline void duo_set(int p) { atomic_store_explicit(&duo_phase_, p, memory_order_release); }
/* Wait until the phase is at least p. Usable inside transactions. */
static inline void duo_wait(int p) {
  for (unsigned i = 0; duo_phase() < p; i++)
    if ((i & 15) == 15)
      sched_yield();
    else
      __builtin_ia32_pause();
}
static inline void duo_wait_flag(_Atomic int *f, int v) {
  for (unsigned i = 0; atomic_load_explicit(f, memory_order_acquire) < v; i++)
    if ((i & 15) == 15)
      sched_yield();
    else
      __builtin_ia32_pause();
}

static inline pthread_t duo_spawn(void *(*fn)(void *), void *arg) {
  pthread_t t;
  int rc = pthread_create(&t, NULL, fn, arg);
  CHECK_MSG(rc == 0, "pthread_create: %s", strerror(rc));
  return t;
}
static inline void duo_join(pthread_t t) { CHECK_EQ_I(pthread_join(t, NULL), 0); }

static inline int duo_gettid(void) { return (int)syscall(SYS_gettid); }

/* A thread's scheduling parameters, as sched_getattr reports them. */
struct duo_sched_attr {
  uint32_t size, sched_policy;
  uint64_t sched_flags;
  int32_t sched_nice;
  uint32_t sched_priority;
  uint64_t sched_runtime, sched_deadline, sched_period;
  uint32_t sched_util_min, sched_util_max;
};

typedef struct duo_view {
  int policy;
  int nice;
  uint64_t runtime;
  int getpriority; /* getpriority(PRIO_PROCESS, tid) */
} duo_view_t;

static inline duo_view_t duo_view_of(int tid) {
  struct duo_sched_attr a;
  memset(&a, 0, sizeof a);
  long rc = syscall(SYS_sched_getattr, tid, &a, (unsigned)sizeof a, 0u);
  CHECK_MSG(rc == 0, "sched_getattr(%d): %s", tid, strerror(errno));
  duo_view_t v = {(int)a.sched_policy, a.sched_nice, a.sched_runtime, 0};
  errno = 0;
  v.getpriority = getpriority(PRIO_PROCESS, (id_t)tid);
  CHECK_MSG(errno == 0, "getpriority(%d): %s", tid, strerror(errno));
  return v;
}

static inline int duo_setattr(int tid, struct duo_sched_attr *a) {
  a->size = sizeof *a;
  return (int)syscall(SYS_sched_setattr, tid, a, 0u);
}

#define CHECK_VIEW_EQ(a, b)                                                                        \
  do {                                                                                             \
    duo_view_t va_ = (a), vb_ = (b);                                                               \
    if (va_.policy != vb_.policy || va_.nice != vb_.nice || va_.runtime != vb_.runtime ||          \
        va_.getpriority != vb_.getpriority)                                                        \
      FAIL("scheduling parameters %s = {policy %d, nice %d, runtime %llu, "                        \
           "getpriority %d}, expected %s = {policy %d, nice %d, runtime "                          \
           "%llu, getpriority %d}",                                                                \
           #a, va_.policy, va_.nice, (unsigned long long)va_.runtime, va_.getpriority, #b,         \
           vb_.policy, vb_.nice, (unsigned long long)vb_.runtime, vb_.getpriority);                \
  } while (0)

static inline sstm_stats_t duo_stats(sstm_desc_t *d) {
  sstm_stats_t s;
  CHECK_OK(sstm_stats_get(d, &s));
  return s;
}

/* The value of "key=" in sstm_describe() (up to a space or comma). */
static inline void duo_describe_value(const char *key, char *out, size_t len) {
  char buf[1024];
  CHECK_GT_I(sstm_describe(buf, sizeof buf), 0);
  const char *p = strstr(buf, key);
  CHECK_MSG(p != NULL, "\"%s\" not in sstm_describe(): %s", key, buf);
  p += strlen(key);
  size_t n = strcspn(p, " ,");
  if (n >= len) n = len - 1;
  memcpy(out, p, n);
  out[n] = 0;
}

#endif /* SSTM_TEST_CM_DUO_H */
