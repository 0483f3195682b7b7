/* SPDX-License-Identifier: MIT */
/* The compiler side of the transactional-memory ABI that `gcc -fgnu-tm`
 * emits calls to ([IntelTMABI]; the names and values below are that
 * interface's, as GCC's code generation uses them): the properties a
 * compiled transaction passes to _ITM_beginTransaction, the actions the
 * runtime answers with, and the few other enumerations of the entry points.
 * Written from the ABI's text for abi/itm.c; nothing of any runtime's
 * source is in it. */
#ifndef SSTM_ABI_ITM_ABI_H
#define SSTM_ABI_ITM_ABI_H

#include <stddef.h>
#include <stdint.h>

/* Properties of a compiled transaction (the argument of
 * _ITM_beginTransaction). */
enum {
  itm_pr_instrumentedCode = 0x0001,   /* an instrumented code path exists */
  itm_pr_uninstrumentedCode = 0x0002, /* an uninstrumented code path exists */
  itm_pr_hasNoAbort = 0x0008,         /* no __transaction_cancel in it */
  itm_pr_hasNoIrrevocable = 0x0020,   /* it never goes irrevocable */
  itm_pr_doesGoIrrevocable = 0x0040,  /* it goes irrevocable on every path */
  itm_pr_readOnly = 0x4000,           /* it writes no shared memory */
};

/* Actions: what _ITM_beginTransaction tells the compiled code to do. */
enum {
  itm_a_runInstrumentedCode = 0x01,
  itm_a_runUninstrumentedCode = 0x02,
  itm_a_saveLiveVariables = 0x04,
  itm_a_restoreLiveVariables = 0x08,
  itm_a_abortTransaction = 0x10,
};

/* _ITM_abortTransaction's reasons (a bit set). */
enum {
  itm_userAbort = 1,   /* __transaction_cancel */
  itm_userRetry = 2,   /* not emitted by GCC */
  itm_TMConflict = 4,  /* not emitted by GCC */
  itm_outerAbort = 16, /* __transaction_cancel [[outer]] */
};

/* _ITM_changeTransactionMode's one mode. */
enum { itm_modeSerialIrrevocable = 0 };

/* _ITM_inTransaction's answers. */
enum {
  itm_outsideTransaction = 0,
  itm_inRetryableTransaction = 1,
  itm_inIrrevocableTransaction = 2
};

/* _ITM_getTransactionId outside a transaction. */
#define ITM_NO_TRANSACTION_ID 1u

/* The ABI's version number, which a program passes to
 * _ITM_versionCompatible (the number in GCC's header for the ABI). */
#define ITM_VERSION_NO 90

/* A source location, _ITM_error's first argument: psource is the text
 * ";file;function;line;column;;" when the compiler fills it in. */
typedef struct itm_src_location {
  uint32_t reserved_1;
  uint32_t flags;
  uint32_t reserved_2;
  uint32_t reserved_3;
  const char *psource;
} itm_src_location_t;

#endif /* SSTM_ABI_ITM_ABI_H */
