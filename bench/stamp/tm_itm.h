/* SPDX-License-Identifier: MIT */
/* STAMP 0.9.10 [Minh08] through GCC's transactional-memory language
 * extension (`gcc -fgnu-tm`) instead of an STM's call API: the TM_* macros
 * of STAMP's lib/tm.h, for compiled transactions. A transaction is a
 * `__transaction_atomic` block, a shared access plain C, which the compiler
 * instruments with calls of the Intel TM ABI [IntelTMABI]; the program is
 * then linked with any runtime of that ABI (GCC's libitm [libitm],
 * libschedstm-itm, TinySTM's GCC-ABI library) and runs the same object
 * code on each. bench/stamp/build.sh's `itm` variant builds it
 * (docs/stamp.md, "Through the compiler ABI").
 *
 * This header replaces STAMP's lib/tm.h without changing a STAMP file:
 * build.sh force-includes it (`-include`) into every file, and it defines
 * STAMP's include guard TM_H, so lib/tm.h, which every file still includes,
 * expands to nothing. (A plain -I would not do: lib/'s own files find
 * lib/tm.h first, in their own directory.)
 *
 * The mapping:
 *   TM_BEGIN, TM_BEGIN_RO / TM_END
 *                    `__transaction_atomic {` / `}` (STAMP opens and closes
 *                    every transaction in one block, as bench/stamp/stm.h
 *                    needs too). The read-only hint has no spelling in the
 *                    language: the compiler finds read-only blocks itself
 *   TM_CALLABLE      `transaction_safe`: STAMP marks with it the functions
 *                    that its transactions call
 *   TM_RESTART       a call that ends the process with a message. Neither
 *                    the language nor libitm's ABI has a retry: libitm's
 *                    _ITM_abortTransaction accepts only userAbort (a
 *                    cancel, which does not run the block again), and the
 *                    language's cancel, `__transaction_cancel [[outer]]`
 *                    in a function that a transaction calls (where all of
 *                    STAMP's TM_RESTARTs are), needs the function to be
 *                    `transaction_may_cancel_outer`, which may then be
 *                    called only from `[[outer]]` transactions, and STAMP
 *                    calls its TM_CALLABLE functions outside transactions
 *                    too. vacation's and yada's TM_RESTARTs check for an
 *                    inconsistent snapshot, which none of the three
 *                    runtimes lets a transaction see; labyrinth's is a
 *                    real retry
 *   TM_SHARED_READ*, TM_SHARED_WRITE*, TM_LOCAL_WRITE*
 *                    plain reads and assignments: the compiler instruments
 *                    them (and logs the thread-private ones it must put
 *                    back at a restart)
 *   TM_MALLOC / TM_FREE, P_MALLOC / P_FREE
 *                    malloc / free (the compiler turns the first two into
 *                    the ABI's _ITM_malloc / _ITM_free in a transaction)
 *   TM_STARTUP / TM_SHUTDOWN, TM_THREAD_ENTER / TM_THREAD_EXIT
 *                    nothing for the runtime, which initialises itself at a
 *                    thread's first transaction; TM_SHUTDOWN writes
 *                    schedstm's statistics when the runtime is
 *                    libschedstm-itm and SSTM_STAMP_STATS asks for them
 *                    (bench/stamp/stm_itm.c)
 *   TM_EARLY_RELEASE nothing, as in STAMP's own STM configuration
 *   assert()         glibc's __assert_fail declared transaction_pure: it
 *                    ends the process, which needs no instrumentation
 *
 * GCC rejects, in an atomic transaction or a transaction_safe function, a
 * call of a function that is not transaction_safe (STAMP's TM_CALLABLE
 * functions whose definition lacks TM_CALLABLE get a conflicting type, the
 * attribute being part of the type) and a call through a function pointer
 * whose type is not transaction_safe (STAMP's containers' comparison
 * functions). The applications that do either cannot be built in this
 * mode without editing STAMP (docs/stamp.md lists them).
 *
 * With SSTM_STAMP_ITM_RELAXED (build.sh --itm-relaxed) a transaction is a
 * `__transaction_relaxed` block and TM_CALLABLE `transaction_callable` (a
 * declaration's attribute, not the type's): every application compiles,
 * and a transaction that calls an unsafe function, directly or through a
 * pointer, becomes serial and irrevocable at that call, on every runtime.
 */
#ifndef SSTM_STAMP_TM_ITM_H
#define SSTM_STAMP_TM_ITM_H

#if !defined(__GNUC__) || defined(__clang__)
#error "bench/stamp/tm_itm.h: GCC's -fgnu-tm is needed (clang has no transactional memory)"
#endif

/* STAMP's lib/tm.h guard: that header is empty from here on. */
#define TM_H 1

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* No descriptor is passed around: the runtime keeps its own per thread. */
#define TM_ARG           /* nothing */
#define TM_ARG_ALONE     /* nothing */
#define TM_ARGDECL       /* nothing */
#define TM_ARGDECL_ALONE /* nothing */
#ifdef SSTM_STAMP_ITM_RELAXED
#define TM_CALLABLE __attribute__((transaction_callable))
#else
#define TM_CALLABLE __attribute__((transaction_safe))
#endif

/* The statistics at shutdown, and TM_RESTART's end of the process
 * (bench/stamp/stm_itm.c). */
void sstm_stamp_itm_shutdown(void);
__attribute__((transaction_pure, noreturn)) void sstm_stamp_itm_restart(const char *file, int line);

/* assert() in a transaction: its failure path ends the process, which needs
 * no instrumentation (glibc does not mark it). */
#include <assert.h>
extern void __assert_fail(const char *assertion, const char *file, unsigned int line,
                          const char *function) __attribute__((transaction_pure));

#define TM_STARTUP(numThread) ((void)(numThread))
#define TM_SHUTDOWN() sstm_stamp_itm_shutdown()
#define TM_THREAD_ENTER() /* nothing */
#define TM_THREAD_EXIT()  /* nothing */

#define P_MALLOC(size) malloc(size)
#define P_FREE(ptr) free(ptr)
#define TM_MALLOC(size) malloc(size)
#define TM_FREE(ptr) free(ptr)

#ifdef SSTM_STAMP_ITM_RELAXED
#define TM_BEGIN() __transaction_relaxed {
#else
#define TM_BEGIN() __transaction_atomic {
#endif
#define TM_BEGIN_RO() TM_BEGIN()
#define TM_END() }
#define TM_RESTART() sstm_stamp_itm_restart(__FILE__, __LINE__)
#define TM_EARLY_RELEASE(var) /* nothing */

#define TM_SHARED_READ(var) (var)
#define TM_SHARED_READ_P(var) (var)
#define TM_SHARED_READ_F(var) (var)
#define TM_SHARED_WRITE(var, val) ((var) = (val))
#define TM_SHARED_WRITE_P(var, val) ((var) = (val))
#define TM_SHARED_WRITE_F(var, val) ((var) = (val))
#define TM_LOCAL_WRITE(var, val) ((var) = (val))
#define TM_LOCAL_WRITE_P(var, val) ((var) = (val))
#define TM_LOCAL_WRITE_F(var, val) ((var) = (val))

/* What lib/tm.h includes in STAMP's STM configuration, after the macros
 * (thread.h includes tm.h, which the guard above now empties). */
#include "thread.h"

#endif /* SSTM_STAMP_TM_ITM_H */
