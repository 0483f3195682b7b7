/* SPDX-License-Identifier: MIT */
/* The two functions of bench/stamp/tm_itm.h (STAMP through `gcc -fgnu-tm`):
 * TM_SHUTDOWN's statistics and TM_RESTART's end of the process. Compiled
 * into every application of build.sh's itm variant, once, and linked with
 * each runtime of the ABI; it must not need any of them. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "stats_out.h"

/* libschedstm's statistics, when the runtime is libschedstm-itm (which
 * needs libschedstm); a null address on libitm and TinySTM's runtime. */
extern int sstm_stats_dump(FILE *f) __attribute__((weak));

static void dump(FILE *f) { (void)sstm_stats_dump(f); }

void sstm_stamp_itm_shutdown(void) {
  if (sstm_stats_dump != NULL) sstm_stamp_stats_out(dump);
}

/* Declared transaction_pure in tm_itm.h: it runs inside the transaction,
 * uninstrumented, and does not return. */
void sstm_stamp_itm_restart(const char *file, int line) {
  fflush(stdout);
  fprintf(stderr,
          "STAMP through -fgnu-tm: TM_RESTART at %s:%d: the compiler ABI has no retry "
          "(docs/stamp.md, \"Through the compiler ABI\"); the run cannot go on\n",
          file, line);
  _exit(1);
}
