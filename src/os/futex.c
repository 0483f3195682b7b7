/* SPDX-License-Identifier: MIT */
/* Futex wait/wake on the low 32 bits of a 64-bit status word (os/os.h).
 * Private futexes: waiters and wakers are threads of one process. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "os.h" /* os/os.h: src/os includes only its own headers */

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "futex on the low half needs LE");

void sstm__futex_wait(_Atomic uint64_t *word, uint32_t expect_low, uint64_t timeout_ns) {
  struct timespec ts, *tsp = NULL;
  if (timeout_ns) {
    ts.tv_sec = (time_t)(timeout_ns / 1000000000ull);
    ts.tv_nsec = (long)(timeout_ns % 1000000000ull);
    tsp = &ts;
  }
  /* EAGAIN (value changed), EINTR, ETIMEDOUT: the caller re-checks. */
  syscall(SYS_futex, (uint32_t *)(void *)word, FUTEX_WAIT_PRIVATE, expect_low, tsp, NULL, 0);
}

void sstm__futex_wake_all(_Atomic uint64_t *word) {
  syscall(SYS_futex, (uint32_t *)(void *)word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}
