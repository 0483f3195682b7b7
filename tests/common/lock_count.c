/* SPDX-License-Identifier: MIT */
/* schedstm tests: counting pthread lock interposition (see lock_count.h). */
#define _GNU_SOURCE
#include "lock_count.h"

#include <dlfcn.h>
#include <pthread.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)

bool lc_available(void) { return false; }
void lc_enable(bool on) { (void)on; }
uint64_t lc_locks(void) { return 0; }
void lc_reset(void) {}

#else

/* glibc's entry points, found once at start-up (before any window, and
 * before any thread could call a wrapper). */
static int (*real_lock)(pthread_mutex_t *);
static int (*real_trylock)(pthread_mutex_t *);
__attribute__((constructor)) static void lc_resolve(void) {
  real_lock = (int (*)(pthread_mutex_t *))dlsym(RTLD_NEXT, "pthread_mutex_lock");
  real_trylock = (int (*)(pthread_mutex_t *))dlsym(RTLD_NEXT, "pthread_mutex_trylock");
}

static int enabled;
static uint64_t nlocks;

static void count(void) {
  if (__atomic_load_n(&enabled, __ATOMIC_RELAXED)) __atomic_fetch_add(&nlocks, 1, __ATOMIC_RELAXED);
}

bool lc_available(void) { return true; }
void lc_enable(bool on) { __atomic_store_n(&enabled, on, __ATOMIC_SEQ_CST); }
uint64_t lc_locks(void) { return __atomic_load_n(&nlocks, __ATOMIC_SEQ_CST); }
void lc_reset(void) { __atomic_store_n(&nlocks, 0, __ATOMIC_SEQ_CST); }

int pthread_mutex_lock(pthread_mutex_t *m) {
  count();
  if (real_lock == NULL) lc_resolve(); /* called before our constructor */
  return real_lock(m);
}
int pthread_mutex_trylock(pthread_mutex_t *m) {
  count();
  if (real_trylock == NULL) lc_resolve();
  return real_trylock(m);
}
/* A spin lock is one word: taken here, without glibc. */
int pthread_spin_lock(pthread_spinlock_t *l) {
  count();
  while (__atomic_exchange_n((volatile int *)l, 1, __ATOMIC_ACQUIRE))
    while (__atomic_load_n((volatile int *)l, __ATOMIC_RELAXED))
      __builtin_ia32_pause();
  return 0;
}

#endif
