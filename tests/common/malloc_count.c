/* SPDX-License-Identifier: MIT */
/* schedstm tests: counting malloc interposition (see malloc_count.h). */
#define _GNU_SOURCE
#include "malloc_count.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int enabled;
static uint64_t nalloc, nfree;
static size_t track_lo, track_hi;

#define TRACK_SLOTS 4096
static void *tracked[TRACK_SLOTS];
static long live, total;
static int track_lock;

static void lock(void) {
  while (__atomic_exchange_n(&track_lock, 1, __ATOMIC_ACQUIRE))
    while (__atomic_load_n(&track_lock, __ATOMIC_RELAXED))
      __builtin_ia32_pause();
}
static void unlock(void) { __atomic_store_n(&track_lock, 0, __ATOMIC_RELEASE); }

bool mc_available(void) { return true; }
void mc_enable(bool on) { __atomic_store_n(&enabled, on, __ATOMIC_SEQ_CST); }
uint64_t mc_allocs(void) { return __atomic_load_n(&nalloc, __ATOMIC_SEQ_CST); }
uint64_t mc_frees(void) { return __atomic_load_n(&nfree, __ATOMIC_SEQ_CST); }
void mc_reset(void) {
  __atomic_store_n(&nalloc, 0, __ATOMIC_SEQ_CST);
  __atomic_store_n(&nfree, 0, __ATOMIC_SEQ_CST);
}
void mc_track_sizes(size_t lo, size_t hi) {
  lock();
  track_lo = lo;
  track_hi = hi;
  unlock();
}
long mc_live(void) {
  lock();
  long l = live;
  unlock();
  return l;
}
long mc_tracked_total(void) {
  lock();
  long t = total;
  unlock();
  return t;
}

static void on_alloc(void *p, size_t n) {
  if (__atomic_load_n(&enabled, __ATOMIC_RELAXED)) __atomic_add_fetch(&nalloc, 1, __ATOMIC_RELAXED);
  if (p && n >= __atomic_load_n(&track_lo, __ATOMIC_RELAXED) &&
      n < __atomic_load_n(&track_hi, __ATOMIC_RELAXED)) {
    lock();
    for (int i = 0; i < TRACK_SLOTS; i++)
      if (!tracked[i]) {
        tracked[i] = p;
        live++;
        total++;
        break;
      }
    unlock();
  }
}

static void on_free(void *p) {
  if (!p) return;
  if (__atomic_load_n(&enabled, __ATOMIC_RELAXED)) __atomic_add_fetch(&nfree, 1, __ATOMIC_RELAXED);
  if (__atomic_load_n(&track_hi, __ATOMIC_RELAXED)) {
    lock();
    for (int i = 0; i < TRACK_SLOTS; i++)
      if (tracked[i] == p) {
        tracked[i] = NULL;
        live--;
        break;
      }
    unlock();
  }
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)

/* The sanitizer owns malloc: its allocator calls these hooks for every
 * allocation and free of the program (sanitizer_common's
 * __sanitizer_install_malloc_and_free_hooks, in GCC's and LLVM's ASan and
 * TSan), installed before main. realloc runs both. */
int __sanitizer_install_malloc_and_free_hooks(void (*malloc_hook)(const volatile void *, size_t),
                                              void (*free_hook)(const volatile void *));
static void san_malloc_hook(const volatile void *p, size_t n) { on_alloc((void *)p, n); }
static void san_free_hook(const volatile void *p) { on_free((void *)p); }
__attribute__((constructor)) static void install_hooks(void) {
  if (!__sanitizer_install_malloc_and_free_hooks(san_malloc_hook, san_free_hook)) abort();
}

#else

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

void *malloc(size_t n) {
  void *p = __libc_malloc(n);
  on_alloc(p, n);
  return p;
}
void *calloc(size_t a, size_t b) {
  void *p = __libc_calloc(a, b);
  on_alloc(p, a * b);
  return p;
}
void *realloc(void *old, size_t n) {
  on_free(old);
  void *p = __libc_realloc(old, n);
  on_alloc(p, n);
  return p;
}
void free(void *p) {
  on_free(p);
  __libc_free(p);
}
void *memalign(size_t al, size_t n) {
  void *p = __libc_memalign(al, n);
  on_alloc(p, n);
  return p;
}
void *aligned_alloc(size_t al, size_t n) { return memalign(al, n); }
int posix_memalign(void **out, size_t al, size_t n) {
  if (al < sizeof(void *) || (al & (al - 1))) return EINVAL;
  void *p = memalign(al, n);
  if (!p) return ENOMEM;
  *out = p;
  return 0;
}
void *valloc(size_t n) { return memalign(4096, n); }
void *pvalloc(size_t n) { return memalign(4096, (n + 4095) & ~(size_t)4095); }

#endif
