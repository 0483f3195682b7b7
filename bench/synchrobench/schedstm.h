/* SPDX-License-Identifier: MIT */
/* The synchrobench [Gramoli15] adapter: the TX_* / TM_* / MALLOC / FREE
 * macros that synchrobench's C STM benchmarks (c-cpp/src, built with
 * STM=...) expect of the header that c-cpp/include/tm.h selects, given on
 * schedstm's public API the way synchrobench's own tinystm.h gives them on
 * TinySTM [Felber08]. Synchrobench is not part of this repository:
 * bench/synchrobench/build.sh compiles a tree the user provides against
 * this header (found as "tm.h" through bench/synchrobench/tm.h, ahead of
 * the tree's own) and the library (bench/synchrobench/README.md).
 *
 * The mapping, differences from synchrobench's tinystm.h noted:
 *   TM_STARTUP() / TM_SHUTDOWN()  sstm_init(NULL) (SCHEDSTM_* environment
 *                                 applies, SCHEDSTM_CM among it) /
 *                                 sstm_shutdown()
 *   TM_THREAD_ENTER()             sstm_thread_init()
 *   TM_THREAD_EXIT()              the thread's aborts and longest retry
 *                                 run into the benchmark's per-thread
 *                                 counters d->nb_aborts and d->max_retries
 *                                 (what tinystm.h asks TinySTM's statistics
 *                                 for; the abort breakdown by TinySTM's
 *                                 reasons stays 0), then sstm_thread_exit()
 *   TX_START(type) / TX_END       SSTM_ATOMIC_BEGIN(NULL) / SSTM_ATOMIC_END()
 *                                 (one block, as tinystm.h's braces). The
 *                                 type is ignored: an elastic transaction
 *                                 (EL) is an ordinary one, as on TinySTM,
 *                                 whose 1.0 mapping ignores it too (only
 *                                 E-STM runs EL elastically). No read-only
 *                                 hint: tinystm.h gives none either
 *   TX_LOAD(addr) / TX_STORE(addr, val)
 *                                 word accesses, sstm_load_u64 /
 *                                 sstm_store_u64, as tinystm.h's
 *                                 stm_load/stm_store of a stm_word_t: calls
 *                                 into the library, or <schedstm/inline.h>'s
 *                                 inline barriers when SSTM_INLINE_BARRIERS
 *                                 is defined (build.sh's schedstm-inline)
 *   MALLOC(size) / FREE(addr, size)
 *                                 sstm_malloc() (released on abort) /
 *                                 sstm_free() (deferred past the grace
 *                                 period; the size is not needed)
 *   TM_CALLABLE, TM_ARG*          nothing (the descriptor is thread-local)
 * Not given: TX_UNIT_LOAD and TX_UNIT_LOAD_TS (TinySTM's unit loads, a
 * TinySTM extension with no counterpart here). Of the benchmarks build.sh
 * builds only the speculation-friendly tree names them, and its Makefile's
 * NO_UNITLOADS makes them TX_LOAD.
 *
 * Errors: a library call that fails at startup, thread entry or exit, or
 * shutdown ends the process with a message on stderr and status 1: the
 * benchmark cannot go on without it.
 *
 * Synchrobench compiles some benchmarks with -std=gnu89: this header and the
 * public headers it includes stay within what GCC accepts there. */
#ifndef SSTM_SYNCHROBENCH_SCHEDSTM_H
#define SSTM_SYNCHROBENCH_SCHEDSTM_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <schedstm/schedstm.h>

#if UINTPTR_MAX != UINT64_MAX
#error "bench/synchrobench/schedstm.h: TX_LOAD and TX_STORE are 8-byte word accesses"
#endif

static __inline__ void sstm_sb_check(const char *what, int rc) {
  if (rc != 0) {
    fprintf(stderr, "schedstm synchrobench adapter: %s: %s (%s)\n", what, sstm_strerror(rc),
            sstm_last_error());
    exit(1);
  }
}

static __inline__ void sstm_sb_thread_exit(unsigned long *aborts, unsigned long *max_retries) {
  sstm_stats_t s;
  sstm_sb_check("sstm_stats_get", sstm_stats_get(sstm_self(), &s));
  *aborts = (unsigned long)s.aborts_total;
  *max_retries = (unsigned long)s.max_retries;
  sstm_sb_check("sstm_thread_exit", sstm_thread_exit());
}

#define NL 1
#define EL 0

#define TM_STARTUP() sstm_sb_check("sstm_init", sstm_init(NULL))
#define TM_SHUTDOWN() sstm_sb_check("sstm_shutdown", sstm_shutdown())
#define TM_THREAD_ENTER() sstm_sb_check("sstm_thread_init", sstm_thread_init())
/* d: the benchmark's per-thread data, in scope wherever it calls this (as
 * tinystm.h's TM_THREAD_EXIT requires too) */
#define TM_THREAD_EXIT() sstm_sb_thread_exit(&d->nb_aborts, &d->max_retries)

#define TX_START(type) SSTM_ATOMIC_BEGIN(NULL)
#define TX_END                                                                                     \
  SSTM_ATOMIC_END                                                                                  \
  ()
#define TX_LOAD(addr) sstm_load_u64((const uint64_t *)(addr))
#define TX_STORE(addr, val) sstm_store_u64((uint64_t *)(addr), (uint64_t)(val))

#define MALLOC(size) sstm_malloc(size)
#define FREE(addr, size) sstm_free(addr)

#define TM_CALLABLE      /* nothing */
#define TM_ARGDECL_ALONE /* nothing */
#define TM_ARGDECL       /* nothing */
#define TM_ARG           /* nothing */
#define TM_ARG_LAST      /* nothing */
#define TM_ARG_ALONE     /* nothing */

#endif /* SSTM_SYNCHROBENCH_SCHEDSTM_H */
