/* SPDX-License-Identifier: MIT */
/* The restart checkpoint's restore through the C library's longjmp, used by
 * ThreadSanitizer builds, which must observe every non-local jump; their
 * save is _setjmp (schedstm/tx.h). The fast path is arch/x86_64-ckpt.S. */
#include <setjmp.h>

#include "arch/ckpt.h"

_Static_assert(sizeof(sstm_ckpt_t) >= sizeof(jmp_buf), "sstm_ckpt_t too small for jmp_buf");

void sstm__ckpt_restore(sstm_ckpt_t *c, int val) { longjmp(*(jmp_buf *)(void *)c, val); }
