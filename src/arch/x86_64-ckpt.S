/* SPDX-License-Identifier: MIT */
/* Transaction checkpoint for x86-64 SysV: a setjmp/longjmp pair that saves
 * only what a restart needs (callee-saved registers, stack pointer, return
 * address, MXCSR and the x87 control word) and never touches the signal
 * mask, so a transaction begin costs no system call.
 *
 * sstm__begin_ckpt is the outermost begin and this save in one call.
 *
 * Layout of sstm_ckpt_t.regs (uint64_t slots):
 *   0 rip   1 rsp   2 rbx   3 rbp   4 r12   5 r13   6 r14   7 r15
 *   8 mxcsr (low 32 bits) | x87 control word (bits 32..47)
 */
#include "core/desc_offsets.h"

        .text

        /* int sstm__begin_ckpt(const sstm_attr_t *attr) -- returns twice.
         * The outermost begin of SSTM_ATOMIC_BEGIN in one call: when the
         * thread has a descriptor that is outside a transaction and not in
         * a callback, save the caller's checkpoint straight into the
         * descriptor (the layout of sstm__ckpt_save below) and go on in
         * sstm__begin_top (txn.c) with the descriptor as second argument;
         * every other begin (nested, unregistered thread, inside a hook)
         * saves nothing and goes to sstm__begin_other. Both return
         * SSTM__CKPT_START; a restart returns here again with its code, as
         * from sstm__ckpt_save. The callee-saved registers saved are the
         * caller's: nothing before the save changes them. */
        .globl  sstm__begin_ckpt
        .type   sstm__begin_ckpt, @function
        .p2align 4
sstm__begin_ckpt:
        .cfi_startproc
        movq    sstm__cur@gottpoff(%rip), %rax
        movq    %fs:(%rax), %rsi        /* the thread's descriptor, or NULL */
        testq   %rsi, %rsi
        jz      1f
        cmpl    $0, SSTM_DESC_OFF_DEPTH(%rsi)
        jne     1f
        cmpb    $0, SSTM_DESC_OFF_IN_HOOK(%rsi)
        jne     1f
        movq    (%rsp), %rax            /* return address */
        movq    %rax, SSTM_DESC_OFF_CKPT+0(%rsi)
        leaq    8(%rsp), %rax           /* caller's rsp after return */
        movq    %rax, SSTM_DESC_OFF_CKPT+8(%rsi)
        movq    %rbx, SSTM_DESC_OFF_CKPT+16(%rsi)
        movq    %rbp, SSTM_DESC_OFF_CKPT+24(%rsi)
        movq    %r12, SSTM_DESC_OFF_CKPT+32(%rsi)
        movq    %r13, SSTM_DESC_OFF_CKPT+40(%rsi)
        movq    %r14, SSTM_DESC_OFF_CKPT+48(%rsi)
        movq    %r15, SSTM_DESC_OFF_CKPT+56(%rsi)
        stmxcsr SSTM_DESC_OFF_CKPT+64(%rsi)
        fnstcw  SSTM_DESC_OFF_CKPT+68(%rsi)
        jmp     sstm__begin_top
1:      jmp     sstm__begin_other
        .cfi_endproc
        .size   sstm__begin_ckpt, .-sstm__begin_ckpt

        .globl  sstm__ckpt_save
        .type   sstm__ckpt_save, @function
        .p2align 4
sstm__ckpt_save:
        .cfi_startproc
        movq    (%rsp), %rax            /* return address */
        movq    %rax, 0(%rdi)
        leaq    8(%rsp), %rax           /* caller's rsp after return */
        movq    %rax, 8(%rdi)
        movq    %rbx, 16(%rdi)
        movq    %rbp, 24(%rdi)
        movq    %r12, 32(%rdi)
        movq    %r13, 40(%rdi)
        movq    %r14, 48(%rdi)
        movq    %r15, 56(%rdi)
        stmxcsr 64(%rdi)
        fnstcw  68(%rdi)
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
        movq    16(%rdi), %rbx
        movq    24(%rdi), %rbp
        movq    32(%rdi), %r12
        movq    40(%rdi), %r13
        movq    48(%rdi), %r14
        movq    56(%rdi), %r15
        ldmxcsr 64(%rdi)
        fldcw   68(%rdi)
        movl    %esi, %eax
        movq    8(%rdi), %rsp
        jmpq    *0(%rdi)
        .cfi_endproc
        .size   sstm__ckpt_restore, .-sstm__ckpt_restore

        .section .note.GNU-stack,"",@progbits
