/* SPDX-License-Identifier: MIT */
/* Asymmetric fences through membarrier(2) (Linux >= 4.14), detected at run
 * time (os/os.h). When available, a transaction begin needs only a compiler
 * barrier and the (rare) reclaimer pays for the full barrier on every
 * running thread with MEMBARRIER_CMD_PRIVATE_EXPEDITED; the engine decides
 * whether to use it and what to do without it (core/os_glue.c). */
#define _GNU_SOURCE
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "os.h" /* os/os.h */

static int membarrier(int cmd, unsigned flags) {
  return (int)syscall(SYS_membarrier, cmd, flags, 0);
}

bool sstm__membarrier_register(void) {
  int cmds = membarrier(MEMBARRIER_CMD_QUERY, 0);
  if (cmds < 0 || !(cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) ||
      !(cmds & MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED))
    return false;
  return membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0) == 0;
}

/* Our own prior stores are ordered by the system call; the other running
 * threads execute a full barrier before it returns. */
bool sstm__membarrier_fence(void) { return membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0) == 0; }
