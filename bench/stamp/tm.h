/* SPDX-License-Identifier: MIT */
/* A TM_* layer for STAMP-style programs that do not come with STAMP's own
 * lib/tm.h (our tests, small ports): the transactional-memory interface that
 * STAMP 0.9.10 documents (TM_STARTUP ... TM_SHARED_WRITE_F, P_MALLOC, MAIN,
 * TM_PRINTF), in its non-simulator STM configuration, over the STM_* macros
 * of bench/stamp/stm.h. STAMP's applications themselves are built with
 * STAMP's own lib/tm.h and -DSTM (bench/stamp/build.sh), which maps the
 * same TM_* names onto the same STM_* ones.
 *
 * Usage, as in STAMP:
 *
 *   MAIN(argc, argv) {
 *     TM_STARTUP(nthreads);
 *     ... threads that each run TM_THREAD_ENTER(); work(TM_ARG_ALONE);
 *         TM_THREAD_EXIT(); ...
 *     TM_SHUTDOWN();
 *     MAIN_RETURN(0);
 *   }
 *   void work(TM_ARGDECL_ALONE) {
 *     TM_BEGIN();
 *     long v = (long)TM_SHARED_READ(counter);
 *     TM_SHARED_WRITE(counter, v + 1);
 *     TM_END();
 *   }
 *
 * TM_BEGIN and TM_END must be in the same block (they open and close one),
 * locals modified inside and read after a restart must be volatile (the
 * rule of SSTM_ATOMIC_BEGIN), and the block must be left only through
 * TM_END or TM_RESTART.
 */
#ifndef SSTM_STAMP_TM_H
#define SSTM_STAMP_TM_H

#include <stdio.h>
#include <stdlib.h>

#include "stm.h"

/* The program's entry point and the simulator switches (no simulator). */
#define MAIN(argc, argv) int main(int argc, char **argv)
#define MAIN_RETURN(val) return val
#define GOTO_SIM()  /* nothing */
#define GOTO_REAL() /* nothing */
#define IS_IN_SIM() (0)
#define SIM_GET_NUM_CPU(var) /* nothing */
#define TM_PRINTF printf
#define TM_PRINT0 printf
#define TM_PRINT1 printf
#define TM_PRINT2 printf
#define TM_PRINT3 printf
#define P_MEMORY_STARTUP(numThread) /* nothing */
#define P_MEMORY_SHUTDOWN()         /* nothing */

/* The thread's descriptor, passed along as STAMP does (unused: schedstm
 * keeps it in thread-local storage). */
#define TM_ARG STM_SELF,
#define TM_ARG_ALONE STM_SELF
#define TM_ARGDECL STM_THREAD_T *STM_SELF __attribute__((unused)),
#define TM_ARGDECL_ALONE STM_THREAD_T *STM_SELF __attribute__((unused))
#define TM_CALLABLE /* nothing */

#define TM_STARTUP(numThread) ((void)(numThread), STM_STARTUP())
#define TM_SHUTDOWN() STM_SHUTDOWN()
#define TM_THREAD_ENTER()                                                                          \
  TM_ARGDECL_ALONE = STM_NEW_THREAD();                                                             \
  (void)TM_ARG_ALONE
#define TM_THREAD_EXIT() STM_FREE_THREAD(TM_ARG_ALONE)

#define P_MALLOC(size) malloc(size)
#define P_FREE(ptr) free(ptr)
#define TM_MALLOC(size) STM_MALLOC(size)
#define TM_FREE(ptr) STM_FREE(ptr)

#define TM_BEGIN() STM_BEGIN_WR()
#define TM_BEGIN_RO() STM_BEGIN_RD()
#define TM_END() STM_END()
#define TM_RESTART() STM_RESTART()
#define TM_EARLY_RELEASE(var) /* nothing: schedstm has no early release */

#define TM_SHARED_READ(var) STM_READ(var)
#define TM_SHARED_READ_P(var) STM_READ_P(var)
#define TM_SHARED_READ_F(var) STM_READ_F(var)
#define TM_SHARED_WRITE(var, val) STM_WRITE(var, val)
#define TM_SHARED_WRITE_P(var, val) STM_WRITE_P(var, val)
#define TM_SHARED_WRITE_F(var, val) STM_WRITE_F(var, val)
#define TM_LOCAL_WRITE(var, val) STM_LOCAL_WRITE(var, val)
#define TM_LOCAL_WRITE_P(var, val) STM_LOCAL_WRITE_P(var, val)
#define TM_LOCAL_WRITE_F(var, val) STM_LOCAL_WRITE_F(var, val)

#endif /* SSTM_STAMP_TM_H */
