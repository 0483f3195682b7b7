/* SPDX-License-Identifier: MIT */
/* Stacks for user-level contexts (arch/ctx.h): anonymous mappings with
 * PROT_NONE guard pages below them, so that an overflow faults on the
 * guard instead of running into the memory below. */
#define _GNU_SOURCE /* MAP_ANONYMOUS, MAP_STACK */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include "os.h"

size_t sstm__page_size(void) {
  long p = sysconf(_SC_PAGESIZE);
  return p > 0 ? (size_t)p : 4096u;
}

int sstm__stack_alloc(sstm__stack_t *s, size_t size, size_t guard) {
  if (s == NULL) return EINVAL;
  memset(s, 0, sizeof *s);
  size_t page = sstm__page_size();
  if (size == 0 || size > SIZE_MAX / 4 || guard > SIZE_MAX / 4) return EINVAL;
  size = (size + page - 1) / page * page;
  guard = guard == 0 ? page : (guard + page - 1) / page * page;
  /* Map everything inaccessible first, then open the usable part: there
   * is no moment at which the guard is accessible. MAP_STACK: no huge
   * pages for it (Linux >= 6.7), and a hint elsewhere. */
  void *map = mmap(NULL, guard + size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (map == MAP_FAILED) return errno;
  if (mprotect((char *)map + guard, size, PROT_READ | PROT_WRITE) != 0) {
    int e = errno;
    munmap(map, guard + size);
    return e;
  }
  s->lo = (char *)map + guard;
  s->size = size;
  s->map = map;
  s->map_size = guard + size;
  return 0;
}

void sstm__stack_free(sstm__stack_t *s) {
  if (s == NULL || s->map == NULL) return;
  munmap(s->map, s->map_size);
  memset(s, 0, sizeof *s);
}

int sstm__altstack_install(sstm__stack_t *s) {
  if (s == NULL) return EINVAL;
  /* The kernel's minimum for this CPU's signal frame (it grows with the
   * XSAVE state: AVX-512, AMX), where the kernel reports it. */
  unsigned long min = getauxval(AT_MINSIGSTKSZ);
  if (min < 2048) /* the historical MINSIGSTKSZ */
    min = 2048;
  int e = sstm__stack_alloc(s, (size_t)min + 64 * 1024, 0);
  if (e != 0) return e;
  stack_t ss = {.ss_sp = s->lo, .ss_size = s->size, .ss_flags = 0};
  if (sigaltstack(&ss, NULL) != 0) {
    e = errno;
    sstm__stack_free(s);
    return e;
  }
  return 0;
}

void sstm__altstack_remove(sstm__stack_t *s) {
  if (s == NULL || s->map == NULL) return;
  stack_t cur;
  if (sigaltstack(NULL, &cur) == 0 && cur.ss_sp == s->lo && !(cur.ss_flags & SS_DISABLE)) {
    if (cur.ss_flags & SS_ONSTACK) return; /* a handler runs on it: keep it */
    stack_t off = {.ss_sp = NULL, .ss_size = 0, .ss_flags = SS_DISABLE};
    sigaltstack(&off, NULL);
  }
  sstm__stack_free(s);
}
