/* SPDX-License-Identifier: MIT */
/* Asymmetric fences through membarrier(2) (Linux >= 4.14), detected at run
 * time. When available, a transaction begin needs only a compiler barrier
 * and the (rare) reclaimer pays for the full barrier on every running
 * thread with MEMBARRIER_CMD_PRIVATE_EXPEDITED. Fallback: a store and a seq_cst
 * fence at begin and a seq_cst fence in the reclaimer. SCHEDSTM_NO_MEMBARRIER=1
 * forces the fallback (for tests of both paths). */
#define _GNU_SOURCE
#include <linux/membarrier.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/engine.h"

static int membarrier(int cmd, unsigned flags) {
  return (int)syscall(SYS_membarrier, cmd, flags, 0);
}

bool sstm__membarrier_init(void) {
  const char *off = getenv("SCHEDSTM_NO_MEMBARRIER");
  if (off && strcmp(off, "1") == 0) return false; /* config.c rejects other values */
  int cmds = membarrier(MEMBARRIER_CMD_QUERY, 0);
  if (cmds < 0 || !(cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) ||
      !(cmds & MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED))
    return false;
  return membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0) == 0;
}

void sstm__heavy_fence(void) {
  if (sstm__g.membarrier) {
    /* Our own prior stores are ordered by the syscall; the other running
     * threads execute a full barrier before it returns. */
    if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0) == 0) return;
    sstm__fatal("membarrier(PRIVATE_EXPEDITED) failed after registration");
  }
  sstm__full_fence();
}
