/* SPDX-License-Identifier: MIT */
/* Where the STAMP adapters (bench/stamp/stm.c on schedstm,
 * bench/stamp/tinystm/stm.c on TinySTM) write their statistics at the end
 * of a run, for bench/harness/stamp.py: one rule for both, so that the
 * harness finds either's the same way. */
#ifndef SSTM_STAMP_STATS_OUT_H
#define SSTM_STAMP_STATS_OUT_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Calls dump with the stream that SSTM_STAMP_STATS names: unset or empty,
 * none (dump is not called); "1" or "stderr", stderr; anything else, the
 * file of that name, created or truncated. A file that cannot be opened or
 * written ends the process with status 1 and the file's name and error on
 * stderr. */
static inline void sstm_stamp_stats_out(void (*dump)(FILE *f)) {
  const char *where = getenv("SSTM_STAMP_STATS");
  if (where == NULL || where[0] == '\0') return;
  if (strcmp(where, "1") == 0 || strcmp(where, "stderr") == 0) {
    dump(stderr);
    return;
  }
  FILE *f = fopen(where, "w");
  if (f == NULL) {
    perror(where);
    exit(1);
  }
  dump(f);
  if (fclose(f) != 0) {
    perror(where);
    exit(1);
  }
}

#endif /* SSTM_STAMP_STATS_OUT_H */
