/* SPDX-License-Identifier: MIT */
/* The restart checkpoint for x86-64 SysV (arch/ckpt.h states the
 * contract and the layout of sstm_ckpt_t.regs):
 *   0 rip   8 rsp   16 rbx   24 rbp   32 r12   40 r13   48 r14   56 r15
 * (no floating-point control state: see arch/ckpt.h)
 * Plain register save and restore: the engine's one-call begin, which
 * saves into the descriptor with the same macro, is core/begin_x86_64.S.
 */
#include "arch/ckpt.h"

        .text

        /* int sstm__ckpt_save(sstm_ckpt_t *c) -- returns twice */
        .globl  sstm__ckpt_save
        .type   sstm__ckpt_save, @function
        .p2align 4
sstm__ckpt_save:
        .cfi_startproc
        SSTM_CKPT_SAVE 0, %rdi
        xorl    %eax, %eax
        ret
        .cfi_endproc
        .size   sstm__ckpt_save, .-sstm__ckpt_save

        /* void sstm__ckpt_restore(sstm_ckpt_t *c, int val) -- noreturn */
        .globl  sstm__ckpt_restore
        .hidden sstm__ckpt_restore
        .type   sstm__ckpt_restore, @function
        .p2align 4
sstm__ckpt_restore:
        .cfi_startproc
        SSTM_CKPT_RESTORE %rdi, %esi
        .cfi_endproc
        .size   sstm__ckpt_restore, .-sstm__ckpt_restore

        .section .note.GNU-stack,"",@progbits
