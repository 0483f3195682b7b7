/* SPDX-License-Identifier: MIT */
/* The STAMP [Minh08] adapter: the STM_* interface that STAMP 0.9.10's lib/tm.h
 * expects of an STM when an application is built with -DSTM (it includes
 * <stm.h> and maps its TM_* macros onto these), implemented on schedstm's
 * public API. STAMP itself is not part of this repository: the user
 * provides a tree and bench/stamp/build.sh compiles it against this header
 * and the library (docs/stamp.md). Programs without STAMP's tm.h use
 * bench/stamp/tm.h, our own TM_* layer over the same macros.
 *
 * The mapping:
 *   STM_STARTUP / STM_SHUTDOWN    sstm_init(NULL) (SCHEDSTM_* environment
 *                                 applies) / sstm_shutdown(), after a
 *                                 statistics dump when SSTM_STAMP_STATS is
 *                                 set (below)
 *   STM_NEW_THREAD / STM_FREE_THREAD
 *                                 sstm_thread_init() / sstm_thread_exit();
 *                                 STAMP calls them at the start and end of
 *                                 every parallel region
 *   STM_BEGIN_WR / STM_BEGIN_RD / STM_END
 *                                 SSTM_ATOMIC_BEGIN / SSTM_ATOMIC_END (read
 *                                 only: attr.read_only); STAMP opens and
 *                                 closes every transaction in one block, as
 *                                 the inline form requires
 *   STM_RESTART                   sstm_restart()
 *   STM_READ / _P / _F            SSTM_LOAD: the width of the lvalue's own
 *   STM_WRITE / _P / _F           type and SSTM_STORE (<schedstm/generic.h>),
 *                                 so a float field is a 4-byte access and an
 *                                 int an int, whatever the suffix says
 *   STM_LOCAL_WRITE / _P / _F     a plain store into thread-private memory,
 *                                 undone if the attempt aborts (the old
 *                                 bytes are logged and put back by an
 *                                 sstm_on_abort action), as STAMP expects of
 *                                 its iterators and flags: later plain reads
 *                                 in the same attempt see the new value.
 *                                 A write into the stack of a function the
 *                                 transaction called is not put back: that
 *                                 frame is dead at the restart
 *   STM_MALLOC / STM_FREE         sstm_malloc() / sstm_free() (released on
 *                                 abort / deferred past the grace period;
 *                                 both are malloc blocks, so memory from
 *                                 P_MALLOC may be freed transactionally)
 * STAMP's TM_EARLY_RELEASE is empty in its STM configuration: schedstm has
 * no early release either.
 *
 * The descriptor lives in thread-local storage, so STM_SELF (which STAMP
 * passes around as TM_ARG) is only the thread's descriptor, never used.
 *
 * SSTM_STAMP_STATS=1 (or `stderr`) makes STM_SHUTDOWN write
 * sstm_stats_dump() to stderr, SSTM_STAMP_STATS=PATH to the file PATH; the
 * benchmark harness reads aborts by reason from it.
 */
#ifndef SSTM_STAMP_STM_H
#define SSTM_STAMP_STM_H

#include <stddef.h>

#include <schedstm/schedstm.h>

/* The adapter's few functions (bench/stamp/stm.c). Each ends the process
 * with a message on stderr if the library refuses (initialisation,
 * registration, shutdown): a STAMP run cannot go on without them. */
void sstm_stamp_startup(void);
void sstm_stamp_shutdown(void);
sstm_desc_t *sstm_stamp_thread_enter(void);
void sstm_stamp_thread_exit(void);
/* Log the `size` bytes at `addr` (thread-private memory about to be written
 * in place) so that an abort of the current attempt puts them back. */
void sstm_stamp_local_log(void *addr, size_t size);

extern const sstm_attr_t sstm_stamp_ro_attr;

#define STM_THREAD_T sstm_desc_t
#define STM_SELF sstm_stamp_self

#define STM_STARTUP() sstm_stamp_startup()
#define STM_SHUTDOWN() sstm_stamp_shutdown()
#define STM_NEW_THREAD() sstm_stamp_thread_enter()
#define STM_INIT_THREAD(self, id) ((void)(self), (void)(id))
#define STM_FREE_THREAD(self) ((void)(self), sstm_stamp_thread_exit())

/* The stack pointer of the function that begins the outermost transaction,
 * taken before the begin: a local write below it (in a function the
 * transaction called, such as a list iterator's) is dead once the attempt
 * restarts, and its undo would overwrite whatever lives there by then (the
 * library's own frames). x86-64 only, as the library's checkpoint is. */
#if !defined(__x86_64__)
#error "bench/stamp/stm.h: x86-64 only (the stack pointer of TM_BEGIN)"
#endif
extern __thread uintptr_t sstm_stamp_begin_sp;
#define SSTM_STAMP_MARK_SP()                                                                       \
  do {                                                                                             \
    if (!sstm_in_tx()) {                                                                           \
      uintptr_t sstm_stamp_sp_;                                                                    \
      __asm__ volatile("mov %%rsp, %0" : "=r"(sstm_stamp_sp_));                                    \
      sstm_stamp_begin_sp = sstm_stamp_sp_;                                                        \
    }                                                                                              \
  } while (0)

#define STM_BEGIN_WR()                                                                             \
  SSTM_STAMP_MARK_SP();                                                                            \
  SSTM_ATOMIC_BEGIN(NULL)
#define STM_BEGIN_RD()                                                                             \
  SSTM_STAMP_MARK_SP();                                                                            \
  SSTM_ATOMIC_BEGIN(&sstm_stamp_ro_attr)
#define STM_END()                                                                                  \
  SSTM_ATOMIC_END                                                                                  \
  ()
#define STM_RESTART() sstm_restart()

#define STM_READ(var) SSTM_LOAD(var)
#define STM_READ_P(var) SSTM_LOAD(var)
#define STM_READ_F(var) SSTM_LOAD(var)

#define STM_WRITE(var, val) SSTM_STORE(var, val)
#define STM_WRITE_P(var, val) SSTM_STORE(var, val)
#define STM_WRITE_F(var, val) SSTM_STORE(var, val)

/* At most 16 bytes per local write (STAMP writes scalars and pointers). */
#define STM_LOCAL_WRITE(var, val)                                                                  \
  ((void)sizeof(struct {                                                                           \
     _Static_assert(sizeof(var) <= 16, "STM_LOCAL_WRITE: at most 16 bytes");                       \
     int sstm_stamp_unused;                                                                        \
   }),                                                                                             \
   sstm_stamp_local_log(&(var), sizeof(var)), (void)((var) = (val)))
#define STM_LOCAL_WRITE_P(var, val) STM_LOCAL_WRITE(var, val)
#define STM_LOCAL_WRITE_F(var, val) STM_LOCAL_WRITE(var, val)

#define STM_MALLOC(size) sstm_malloc(size)
#define STM_FREE(ptr) sstm_free(ptr)

#endif /* SSTM_STAMP_STM_H */
