/* SPDX-License-Identifier: MIT */
/* bench/tm/tm.h: a thin transactional-access layer for the benchmarks.
 *
 * Exactly one back-end is selected by a compile definition:
 *   TM_BACKEND_SCHEDSTM  schedstm (word-based STM, explicit barriers; with
 *                        SSTM_INLINE_BARRIERS also defined, the library's
 *                        inline read fast path: back-end "schedstm-inline")
 *   TM_BACKEND_ITM       GCC libitm (-fgnu-tm; the compiler instruments the
 *                        plain accesses inside __transaction_atomic)
 *   TM_BACKEND_TINYSTM   TinySTM [Felber08] through its public C API (stm.h,
 *                        mod_mem.h, wrappers.h), so that the same structure
 *                        source runs on both engines; built only when the
 *                        user names a TinySTM tree (-DSCHEDSTM_TINYSTM_DIR,
 *                        bench/README.md); nothing of TinySTM is in the tree
 *   TM_BACKEND_SEQ       no instrumentation at all; single thread only
 *
 * Writing a transactional operation:
 *
 *   TM_SAFE static long helper(node_t *n) { return TM_LOAD_LONG(&n->key); }
 *
 *   int op(set_t *s, long key) {
 *     TM_VOLATILE int res;
 *     TM_ATOMIC_BEGIN(0)            // 1 = read-only hint
 *       long k = helper(TM_LOAD_PTR(&s->head));  // locals declared inside
 *       res = (k == key);           // are re-initialised on a restart
 *     TM_ATOMIC_END();
 *     return res;                   // never return from inside the block
 *   }
 *
 * Rules (they follow from schedstm's inline form and from libitm):
 *  - the whole body of a transaction sits in ONE lexical block between
 *    TM_ATOMIC_BEGIN and TM_ATOMIC_END; no return/break/goto out of it;
 *  - a local declared outside the block, assigned inside and read after it
 *    must be TM_VOLATILE (volatile for schedstm's restart, which behaves as
 *    longjmp; libitm rejects volatile inside transactions, so it is empty
 *    there);
 *  - every function called inside the block is TM_SAFE (or TM_PURE: not
 *    instrumented, for code that touches no shared data, e.g. fatal errors);
 *  - shared memory is read and written only through TM_LOAD_x/TM_STORE_x;
 *    TM_INIT_x is for memory that is still private (a node allocated by the
 *    current transaction and not yet published);
 *  - memory is obtained with TM_MALLOC and released with TM_FREE inside the
 *    transaction that unlinks it (schedstm defers the release until no
 *    concurrent transaction can still read it).
 *
 * Process set-up (tm_sys_init) and statistics are in tm_runtime.h; threads
 * register with TM_THREAD_ENTER() / TM_THREAD_EXIT().
 */
#ifndef BENCH_TM_H
#define BENCH_TM_H

#include <stdint.h>
#include <stdlib.h>

#if (defined(TM_BACKEND_SCHEDSTM) + defined(TM_BACKEND_ITM) + defined(TM_BACKEND_TINYSTM) +        \
     defined(TM_BACKEND_SEQ)) != 1
#error                                                                                             \
    "define exactly one of TM_BACKEND_SCHEDSTM, TM_BACKEND_ITM, TM_BACKEND_TINYSTM, TM_BACKEND_SEQ"
#endif

_Static_assert(sizeof(long) == 8, "the benchmarks assume LP64");

/* ---------------------------------------------------------------- schedstm */
#if defined(TM_BACKEND_SCHEDSTM)
#include <schedstm/schedstm.h>

/* Allocator variants of this back-end, for the allocation benchmark
 * ([Smiljkovic13]'s red-black tree figure; bench/harness/alloc_sweep.py):
 *   (default)             the library's transactional allocator,
 *                         sstm_malloc/sstm_free (<schedstm/alloc.h>);
 *   TM_ALLOC_GLIBC_LOCK   what a TM without a TM-aware allocator offers:
 *                         glibc malloc/free, each call under one process-wide
 *                         lock (the lock-based allocator of a C library), an
 *                         abort action that frees what the attempt allocated
 *                         and a commit action that retires what it freed; the
 *                         retired blocks are freed after sstm_quiesce(), the
 *                         only grace period such a TM exposes (tm_runtime.c);
 *   TM_ALLOC_IRREVOCABLE  serial-irrevocable: a transaction that allocates or
 *                         frees first becomes irrevocable, as a TM must do
 *                         with a library call it cannot roll back. */
#if defined(TM_ALLOC_GLIBC_LOCK) && defined(TM_ALLOC_IRREVOCABLE)
#error "define at most one of TM_ALLOC_GLIBC_LOCK, TM_ALLOC_IRREVOCABLE"
#endif
#if defined(TM_ALLOC_GLIBC_LOCK)
#define TM_BACKEND_NAME "schedstm-glibc-lock"
#elif defined(TM_ALLOC_IRREVOCABLE)
#define TM_BACKEND_NAME "schedstm-irrevocable"
#elif defined(SSTM_INLINE_BARRIERS)
#define TM_BACKEND_NAME "schedstm-inline"
#else
#define TM_BACKEND_NAME "schedstm"
#endif
#define TM_MULTI_THREADED 1
#define TM_SAFE
#define TM_PURE
#define TM_VOLATILE volatile

#define TM_ATOMIC_BEGIN(ro)                                                                        \
  {                                                                                                \
    const sstm_attr_t tm_attr_ = {.read_only = (ro)};                                              \
    SSTM_ATOMIC_BEGIN(&tm_attr_)
#define TM_ATOMIC_END()                                                                            \
  SSTM_ATOMIC_END                                                                                  \
  ()                                                                                               \
  }

#define TM_LOAD_PTR(a) sstm_load_ptr((void *const *)(a))
#define TM_STORE_PTR(a, v) sstm_store_ptr((void **)(a), (void *)(v))
#define TM_LOAD_LONG(a) ((long)sstm_load_i64((const int64_t *)(a)))
#define TM_STORE_LONG(a, v) sstm_store_i64((int64_t *)(a), (int64_t)(v))
#define TM_LOAD_INT(a) ((int)sstm_load_i32((const int32_t *)(a)))
#define TM_STORE_INT(a, v) sstm_store_i32((int32_t *)(a), (int32_t)(v))

#if defined(TM_ALLOC_GLIBC_LOCK)
void *tm_glock_malloc(size_t size); /* tm_runtime.c */
void tm_glock_free(void *p);
#define TM_MALLOC(size) tm_glock_malloc(size)
#define TM_FREE(p) tm_glock_free(p)
#elif defined(TM_ALLOC_IRREVOCABLE)
/* Outside a transaction sstm_become_irrevocable() only returns SSTM_ENOTX;
 * inside, it returns once the transaction is irrevocable (after a restart
 * if it had already accessed memory: then this call is reached again, in
 * irrevocable mode). */
static inline void *tm_irrevocable_malloc(size_t size) {
  (void)sstm_become_irrevocable();
  return sstm_malloc(size);
}
static inline void tm_irrevocable_free(void *p) {
  (void)sstm_become_irrevocable();
  sstm_free(p);
}
#define TM_MALLOC(size) tm_irrevocable_malloc(size)
#define TM_FREE(p) tm_irrevocable_free(p)
#else
#define TM_MALLOC(size) sstm_malloc(size)
#define TM_FREE(p) sstm_free(p)
#endif

/* ------------------------------------------------------------------ libitm */
#elif defined(TM_BACKEND_ITM)

/* TM_ITM_SCHEDSTM: the same compiled code linked with libschedstm-itm (the
 * gcc -fgnu-tm ABI on schedstm) instead of libitm. */
#if defined(TM_ITM_SCHEDSTM)
#define TM_BACKEND_NAME "schedstm-itm"
#else
#define TM_BACKEND_NAME "itm"
#endif
#define TM_MULTI_THREADED 1
#define TM_SAFE __attribute__((transaction_safe))
#define TM_PURE __attribute__((transaction_pure))
#define TM_VOLATILE

#define TM_ATOMIC_BEGIN(ro) __transaction_atomic {
#define TM_ATOMIC_END() }

#define TM_LOAD_PTR(a) (*(a))
#define TM_STORE_PTR(a, v) (*(a) = (v))
#define TM_LOAD_LONG(a) (*(a))
#define TM_STORE_LONG(a, v) (*(a) = (v))
#define TM_LOAD_INT(a) (*(a))
#define TM_STORE_INT(a, v) (*(a) = (v))

/* GCC maps malloc/free inside a transaction to _ITM_malloc/_ITM_free. */
#define TM_MALLOC(size) malloc(size)
#define TM_FREE(p) free(p)

/* ----------------------------------------------------------------- TinySTM */
#elif defined(TM_BACKEND_TINYSTM)
#include <malloc.h> /* malloc_usable_size */
#include <mod_mem.h>
#include <setjmp.h>
#include <stm.h>
#include <wrappers.h>

_Static_assert(sizeof(stm_word_t) == sizeof(long) && sizeof(stm_word_t) == sizeof(void *),
               "TinySTM's word must hold a long and a pointer");

#define TM_BACKEND_NAME "tinystm-same"
#define TM_MULTI_THREADED 1
#define TM_SAFE
#define TM_PURE
/* stm_start() hands back the environment an abort restarts from with
 * siglongjmp, so a local assigned inside the block must be volatile, as
 * for schedstm. */
#define TM_VOLATILE volatile

/* TinySTM leaves the sigsetjmp to the caller (stm.h: stm_start); it returns
 * NULL for a nested start, which the benchmarks never make. The attribute
 * union is zeroed first so that only read_only is set. */
#define TM_ATOMIC_BEGIN(ro)                                                                        \
  {                                                                                                \
    stm_tx_attr_t tm_attr_;                                                                        \
    tm_attr_.attrs = 0;                                                                            \
    tm_attr_.read_only = (ro);                                                                     \
    sigjmp_buf *tm_env_ = stm_start(tm_attr_);                                                     \
    if (tm_env_ != NULL) sigsetjmp(*tm_env_, 0);
#define TM_ATOMIC_END()                                                                            \
  stm_commit();                                                                                    \
  }

/* Word accesses go straight to stm_load/stm_store (a long and a pointer are
 * one stm_word_t); an int goes through TinySTM's sub-word wrappers. */
#define TM_LOAD_PTR(a) ((void *)stm_load((volatile stm_word_t *)(void *)(a)))
#define TM_STORE_PTR(a, v) stm_store((volatile stm_word_t *)(void *)(a), (stm_word_t)(v))
#define TM_LOAD_LONG(a) ((long)stm_load((volatile stm_word_t *)(void *)(a)))
#define TM_STORE_LONG(a, v) stm_store((volatile stm_word_t *)(void *)(a), (stm_word_t)(long)(v))
#define TM_LOAD_INT(a) ((int)stm_load_int((volatile int *)(a)))
#define TM_STORE_INT(a, v) stm_store_int((volatile int *)(a), (int)(v))

/* mod_mem drops the allocation on abort and frees the block at commit:
 * at once, since TinySTM's default build has no epoch collector
 * (EPOCH_GC). A transaction that read the pointer before the unlink
 * committed can still read the block after the free, when malloc has
 * written its own words into it or handed it out again; only a newer
 * version on the block's locks makes that transaction abort. So the size
 * is the block's whole usable size: mod_mem write-locks every word of it
 * before the commit (mod_mem.h's documented use of the size argument; the
 * STAMP adapter does the same). With size 0 nothing marked the freed
 * block, and a read-only lookup could commit an answer read from freed
 * memory (ds-selftest: wrong answers and crashes with 4 threads). */
#define TM_MALLOC(size) stm_malloc(size)
#define TM_FREE(p) stm_free((p), malloc_usable_size(p))

/* -------------------------------------------------------------- sequential */
#else

#define TM_BACKEND_NAME "seq"
#define TM_MULTI_THREADED 0
#define TM_SAFE
#define TM_PURE
#define TM_VOLATILE

#define TM_ATOMIC_BEGIN(ro) {
#define TM_ATOMIC_END() }

#define TM_LOAD_PTR(a) (*(a))
#define TM_STORE_PTR(a, v) (*(a) = (v))
#define TM_LOAD_LONG(a) (*(a))
#define TM_STORE_LONG(a, v) (*(a) = (v))
#define TM_LOAD_INT(a) (*(a))
#define TM_STORE_INT(a, v) (*(a) = (v))

#define TM_MALLOC(size) malloc(size)
#define TM_FREE(p) free(p)

#endif

/* Initialise a field of memory that no other thread can see yet. */
#define TM_INIT_PTR(a, v) (*(a) = (v))
#define TM_INIT_LONG(a, v) (*(a) = (v))
#define TM_INIT_INT(a, v) (*(a) = (v))

/* Branch-free choice between two pointers already loaded: x < y ? a : b.
 *
 * Where a search picks one of two children by a key comparison, the
 * sequential back-end's compiler turns `key < k ? n->left : n->right` into
 * two plain loads and a conditional move. With barriers it cannot (a
 * barrier is not a plain load it may speculate), so it emits a branch on
 * the comparison, which a random key mispredicts at half the levels of a
 * tree. Loading both children (two barriers) and picking with
 * tm_pick_lt_ptr gives every back-end the same branch-free descent: the
 * sequential code keeps its conditional move, the instrumented ones stop
 * paying for the misprediction. TM_PURE: it touches no memory, only its
 * arguments. */
TM_PURE static inline void *tm_pick_lt_ptr(long x, long y, void *a, void *b) {
#if defined(__x86_64__)
  /* An asm statement, because the compiler is free to turn `x < y ? a : b`
   * back into a branch (GCC 12 does, for two loaded values). */
  __asm__("cmp %3, %2\n\tcmovl %1, %0" : "+r"(b) : "r"(a), "r"(x), "r"(y) : "cc");
  return b;
#else
  return x < y ? a : b;
#endif
}

/* STAMP-style aliases. */
#define TM_START(ro) TM_ATOMIC_BEGIN(ro)
#define TM_COMMIT TM_ATOMIC_END()

/* Thread registration (every thread that runs transactions, before its
 * first one / after its last one); see tm_runtime.h for process set-up. */
#include "tm_runtime.h"
#define TM_THREAD_ENTER() tm_thread_enter()
#define TM_THREAD_EXIT() tm_thread_exit()

#endif /* BENCH_TM_H */
