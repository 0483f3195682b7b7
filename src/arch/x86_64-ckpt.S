/* SPDX-License-Identifier: MIT */
/* Transaction checkpoint for x86-64 SysV: a setjmp/longjmp pair that saves
 * only what a restart needs (callee-saved registers, stack pointer, return
 * address, MXCSR and the x87 control word) and never touches the signal
 * mask, so a transaction begin costs no system call.
 *
 * Layout of sstm_ckpt_t.regs (uint64_t slots):
 *   0 rip   1 rsp   2 rbx   3 rbp   4 r12   5 r13   6 r14   7 r15
 *   8 mxcsr (low 32 bits) | x87 control word (bits 32..47)
 */
        .text

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
