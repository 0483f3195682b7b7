/* SPDX-License-Identifier: MIT */
/* The STAMP [Minh08] adapter for TinySTM [Felber08]: the STM_* interface
 * that STAMP 0.9.10's lib/tm.h expects when an application is built with
 * -DSTM, on TinySTM's public C API (stm.h, wrappers.h, mod_mem.h), so
 * that STAMP runs on TinySTM and on schedstm from the same sources and the
 * same adapter semantics (bench/stamp/stm.h is schedstm's).
 * TinySTM is not part of this repository: bench/stamp/build.sh --tinystm-dir
 * builds a copy of the tree the user names and compiles STAMP against this
 * header (docs/stamp.md). This file is found as <stm.h> by STAMP's tm.h and
 * includes TinySTM's own stm.h with #include_next (GCC and clang).
 *
 * The mapping, differences from bench/stamp/stm.h noted:
 *   STM_STARTUP / STM_SHUTDOWN    stm_init() + mod_mem_init(0) / stm_exit(),
 *                                 after the adapter's statistics dump when
 *                                 SSTM_STAMP_STATS is set (the same variable
 *                                 and format as schedstm's adapter: a
 *                                 "total commits= aborts=" line and the
 *                                 aborts by TinySTM's reason; TinySTM's
 *                                 own counters are compiled out of its
 *                                 default build, so the adapter counts)
 *   STM_NEW_THREAD / STM_FREE_THREAD
 *                                 stm_init_thread() / stm_exit_thread()
 *   STM_BEGIN_WR / STM_BEGIN_RD / STM_END
 *                                 stm_start() (read only: the read_only
 *                                 hint; a write restarts the attempt as an
 *                                 update) and sigsetjmp on the environment
 *                                 it returns / stm_commit()
 *   STM_RESTART                   stm_abort(0): an explicit abort, retried
 *   STM_READ, STM_WRITE, _P, _F   by the width of the lvalue's own type, as
 *                                 schedstm's SSTM_LOAD/SSTM_STORE: 8-byte
 *                                 integers and pointers are TinySTM's word
 *                                 (stm_load/stm_store), 4-, 2- and 1-byte
 *                                 integers its sub-word wrappers, float and
 *                                 double stm_load_float/_double
 *   STM_LOCAL_WRITE / _P / _F     as in schedstm's adapter: a plain store,
 *                                 the old bytes logged and put back by an
 *                                 abort callback (stm_register, run before
 *                                 mod_mem frees the attempt's blocks),
 *                                 except in frames below the begin's stack
 *                                 pointer
 *   STM_MALLOC / STM_FREE         stm_malloc() (released on abort) /
 *                                 stm_free(p, malloc_usable_size(p)): the
 *                                 block is freed at commit, and, since the
 *                                 default build has no epoch collector,
 *                                 its words are write-locked first, so that
 *                                 a transaction still reading the block
 *                                 aborts instead of reading memory that
 *                                 malloc hands out again (mod_mem.h's
 *                                 documented use of the size argument)
 */
#ifndef SSTM_STAMP_TINYSTM_STM_H
#define SSTM_STAMP_TINYSTM_STM_H

#include <malloc.h>
#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>

#include_next <stm.h>

#include <mod_mem.h>
#include <wrappers.h>

#if !defined(__x86_64__)
#error "bench/stamp/tinystm/stm.h: x86-64 only (the stack pointer of TM_BEGIN)"
#endif
_Static_assert(sizeof(stm_word_t) == 8, "TinySTM's word must be 8 bytes");

/* The adapter's functions (bench/stamp/tinystm/stm.c). Each ends the
 * process with a message on stderr if TinySTM refuses. */
void sstm_tiny_startup(void);
void sstm_tiny_shutdown(void);
void *sstm_tiny_thread_enter(void);
void sstm_tiny_thread_exit(void);
/* The restart after an abort: count it under TinySTM's reason (the value
 * sigsetjmp returns, reason | path bits). */
void sstm_tiny_aborted(int reason);
/* Log the `size` bytes at `addr` (thread-private memory about to be written
 * in place) so that an abort of the current attempt puts them back. */
void sstm_tiny_local_log(void *addr, size_t size);

/* Per thread: commits, and the number of entries in the local-write log
 * (0 at the start of every attempt: emptied by the commit below and by the
 * abort callback that replays it). */
extern __thread uint64_t sstm_tiny_commits;
extern __thread size_t sstm_tiny_local_n;
extern __thread uintptr_t sstm_tiny_begin_sp;

#define STM_THREAD_T void
#define STM_SELF sstm_tiny_self

#define STM_STARTUP() sstm_tiny_startup()
#define STM_SHUTDOWN() sstm_tiny_shutdown()
#define STM_NEW_THREAD() sstm_tiny_thread_enter()
#define STM_INIT_THREAD(self, id) ((void)(self), (void)(id))
#define STM_FREE_THREAD(self) ((void)(self), sstm_tiny_thread_exit())

/* stm_start() returns NULL for a nested begin (flat nesting; STAMP never
 * nests): only the outermost begin sets the restart point and marks the
 * stack pointer. The value of sigsetjmp is the abort's reason, as TinySTM's
 * own tests read it (test/regression). */
#define SSTM_TINY_BEGIN(ro)                                                                        \
  do {                                                                                             \
    stm_tx_attr_t sstm_tiny_attr_;                                                                 \
    sstm_tiny_attr_.attrs = 0;                                                                     \
    sstm_tiny_attr_.read_only = (ro);                                                              \
    sigjmp_buf *sstm_tiny_env_ = stm_start(sstm_tiny_attr_);                                       \
    if (sstm_tiny_env_ != NULL) {                                                                  \
      uintptr_t sstm_tiny_sp_;                                                                     \
      __asm__ volatile("mov %%rsp, %0" : "=r"(sstm_tiny_sp_));                                     \
      sstm_tiny_begin_sp = sstm_tiny_sp_;                                                          \
      int sstm_tiny_reason_ = sigsetjmp(*sstm_tiny_env_, 0);                                       \
      if (sstm_tiny_reason_ != 0) sstm_tiny_aborted(sstm_tiny_reason_);                            \
    }                                                                                              \
  } while (0)

#define STM_BEGIN_WR() SSTM_TINY_BEGIN(0)
#define STM_BEGIN_RD() SSTM_TINY_BEGIN(1)
#define STM_END()                                                                                  \
  do {                                                                                             \
    stm_commit();                                                                                  \
    sstm_tiny_commits++;                                                                           \
    sstm_tiny_local_n = 0;                                                                         \
  } while (0)
#define STM_RESTART() stm_abort(0)

/* One load and one store per supported type, by the width of the type. */
#define SSTM_TINY_INT(T, name)                                                                     \
  static inline T sstm_tiny_ld_##name(T *a) {                                                      \
    void *p = a;                                                                                   \
    if (sizeof(T) == 1) return (T)stm_load_u8((volatile uint8_t *)p);                              \
    if (sizeof(T) == 2) return (T)stm_load_u16((volatile uint16_t *)p);                            \
    if (sizeof(T) == 4) return (T)stm_load_u32((volatile uint32_t *)p);                            \
    return (T)stm_load((volatile stm_word_t *)p);                                                  \
  }                                                                                                \
  static inline void sstm_tiny_st_##name(T *a, T v) {                                              \
    void *p = a;                                                                                   \
    if (sizeof(T) == 1)                                                                            \
      stm_store_u8((volatile uint8_t *)p, (uint8_t)v);                                             \
    else if (sizeof(T) == 2)                                                                       \
      stm_store_u16((volatile uint16_t *)p, (uint16_t)v);                                          \
    else if (sizeof(T) == 4)                                                                       \
      stm_store_u32((volatile uint32_t *)p, (uint32_t)v);                                          \
    else                                                                                           \
      stm_store((volatile stm_word_t *)p, (stm_word_t)v);                                          \
  }
SSTM_TINY_INT(_Bool, bool)
SSTM_TINY_INT(char, char)
SSTM_TINY_INT(signed char, schar)
SSTM_TINY_INT(unsigned char, uchar)
SSTM_TINY_INT(short, short)
SSTM_TINY_INT(unsigned short, ushort)
SSTM_TINY_INT(int, int)
SSTM_TINY_INT(unsigned int, uint)
SSTM_TINY_INT(long, long)
SSTM_TINY_INT(unsigned long, ulong)
SSTM_TINY_INT(long long, llong)
SSTM_TINY_INT(unsigned long long, ullong)
#undef SSTM_TINY_INT
static inline float sstm_tiny_ld_float(float *a) { return stm_load_float(a); }
static inline void sstm_tiny_st_float(float *a, float v) { stm_store_float(a, v); }
static inline double sstm_tiny_ld_double(double *a) { return stm_load_double(a); }
static inline void sstm_tiny_st_double(double *a, double v) { stm_store_double(a, v); }
static inline void *sstm_tiny_ld_ptr(void *a) { return (void *)stm_load((volatile stm_word_t *)a); }
static inline void sstm_tiny_st_ptr(void *a, const void *v) {
  stm_store((volatile stm_word_t *)a, (stm_word_t)v);
}

/* clang-format off */
#define SSTM_TINY_FN(op, lv)                                                                       \
  _Generic((lv),                                                                                   \
      _Bool: sstm_tiny_##op##_bool,                                                                \
      char: sstm_tiny_##op##_char,                                                                 \
      signed char: sstm_tiny_##op##_schar,                                                         \
      unsigned char: sstm_tiny_##op##_uchar,                                                       \
      short: sstm_tiny_##op##_short,                                                               \
      unsigned short: sstm_tiny_##op##_ushort,                                                     \
      int: sstm_tiny_##op##_int,                                                                   \
      unsigned int: sstm_tiny_##op##_uint,                                                         \
      long: sstm_tiny_##op##_long,                                                                 \
      unsigned long: sstm_tiny_##op##_ulong,                                                       \
      long long: sstm_tiny_##op##_llong,                                                           \
      unsigned long long: sstm_tiny_##op##_ullong,                                                 \
      float: sstm_tiny_##op##_float,                                                               \
      double: sstm_tiny_##op##_double,                                                             \
      default: sstm_tiny_##op##_ptr)
/* clang-format on */

/* Anything not listed must be an object pointer (STAMP accesses nothing
 * else through these macros). */
#define SSTM_TINY_CHECK(lv)                                                                        \
  ((void)sizeof(struct {                                                                           \
    _Static_assert(sizeof(lv) <= 8, "STM_READ/STM_WRITE: at most 8 bytes");                        \
    int sstm_tiny_unused;                                                                          \
  }))

#define SSTM_TINY_LOAD(lv)                                                                         \
  (SSTM_TINY_CHECK(lv), (__typeof__(lv))SSTM_TINY_FN(ld, lv)((void *)&(lv)))
#define SSTM_TINY_STORE(lv, val)                                                                   \
  (SSTM_TINY_CHECK(lv), (void)sizeof((lv) = (val)), SSTM_TINY_FN(st, lv)(&(lv), (val)))

#define STM_READ(var) SSTM_TINY_LOAD(var)
#define STM_READ_P(var) SSTM_TINY_LOAD(var)
#define STM_READ_F(var) SSTM_TINY_LOAD(var)

#define STM_WRITE(var, val) SSTM_TINY_STORE(var, val)
#define STM_WRITE_P(var, val) SSTM_TINY_STORE(var, val)
#define STM_WRITE_F(var, val) SSTM_TINY_STORE(var, val)

#define STM_LOCAL_WRITE(var, val)                                                                  \
  ((void)sizeof(struct {                                                                           \
     _Static_assert(sizeof(var) <= 16, "STM_LOCAL_WRITE: at most 16 bytes");                       \
     int sstm_tiny_unused;                                                                         \
   }),                                                                                             \
   sstm_tiny_local_log(&(var), sizeof(var)), (void)((var) = (val)))
#define STM_LOCAL_WRITE_P(var, val) STM_LOCAL_WRITE(var, val)
#define STM_LOCAL_WRITE_F(var, val) STM_LOCAL_WRITE(var, val)

#define STM_MALLOC(size) stm_malloc(size)
#define STM_FREE(ptr) stm_free((ptr), malloc_usable_size(ptr))

#endif /* SSTM_STAMP_TINYSTM_STM_H */
