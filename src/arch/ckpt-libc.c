/* SPDX-License-Identifier: MIT */
/* Transaction checkpoint through the C library's _setjmp/longjmp, used by
 * ThreadSanitizer builds, which must observe every non-local jump. The fast
 * path is arch/x86_64-ckpt.S. */
#include <setjmp.h>

#include "core/engine.h"

_Static_assert(sizeof(sstm_ckpt_t) >= sizeof(jmp_buf), "sstm_ckpt_t too small for jmp_buf");

void sstm__ckpt_restore(sstm_ckpt_t *c, int val) { longjmp(*(jmp_buf *)(void *)c, val); }
