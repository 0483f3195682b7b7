/* SPDX-License-Identifier: MIT */
/* _ITM_beginTransaction for x86-64 SysV ([IntelTMABI]; abi/itm.c,
 * docs/design/itm.md (I2)). It returns twice, as setjmp does: once now,
 * with the action for the compiled code, and again at every restart or
 * cancel of the transaction, with the action for that. The restart
 * checkpoint is the engine's (arch/ckpt.h: sstm_ckpt_t's slots); its
 * return address is this file's resume point, which asks the C half for
 * the action and for the compiled code's return address and then returns
 * there, so the compiled code sees only the ABI's action codes. Not in
 * ThreadSanitizer builds, whose checkpoint is the C library's jmp_buf. */
#include "arch/ckpt.h"

#define ITM_BACK_OUT 0x80000000

        .text

        /* uint32_t _ITM_beginTransaction(uint32_t properties, ...) */
        .globl  _ITM_beginTransaction
        .type   _ITM_beginTransaction, @function
        .p2align 4
_ITM_beginTransaction:
        .cfi_startproc
        /* sstm__itm_begin(props, return address, the caller's rsp after
         * the return) -> rax: the checkpoint to save (NULL: nested), rdx:
         * the action. It preserves the callee-saved registers: they are
         * still the caller's below. */
        movq    (%rsp), %rsi
        leaq    8(%rsp), %rdx
        subq    $8, %rsp
        .cfi_adjust_cfa_offset 8
        call    sstm__itm_begin
        addq    $8, %rsp
        .cfi_adjust_cfa_offset -8
        /* From here the stack is as at entry: the return address at (%rsp). */
.Lsave:
        testq   %rax, %rax
        jz      .Lret
        leaq    8(%rsp), %rcx                  /* the caller's rsp after return */
        movq    %rcx, SSTM_CKPT_RSP(%rax)
        leaq    .Lresume(%rip), %rcx           /* restores come back here */
        movq    %rcx, SSTM_CKPT_RIP(%rax)
        movq    %rbx, SSTM_CKPT_RBX+0(%rax)
        movq    %rbp, SSTM_CKPT_RBX+8(%rax)
        movq    %r12, SSTM_CKPT_RBX+16(%rax)
        movq    %r13, SSTM_CKPT_RBX+24(%rax)
        movq    %r14, SSTM_CKPT_RBX+32(%rax)
        movq    %r15, SSTM_CKPT_RBX+40(%rax)
        testl   $ITM_BACK_OUT, %edx
        jnz     .Lback_out
.Lret:
        movl    %edx, %eax
        ret
.Lback_out:
        /* The attempt leaves before its body (I3.3): sstm__itm_back_out
         * cancels it, and the cancel comes back to .Lresume. */
        subq    $8, %rsp
        .cfi_adjust_cfa_offset 8
        call    sstm__itm_back_out
        ud2
        .cfi_adjust_cfa_offset -8

        /* The checkpoint's restore: rsp is the caller's after the return
         * of _ITM_beginTransaction, the callee-saved registers are as
         * saved, eax is SSTM__CKPT_RESTART or SSTM__CKPT_CANCEL. Make the
         * frame of a call again (the compiled code's return address at
         * (%rsp), written by the C half) and go on as the begin does. */
.Lresume:
        .cfi_adjust_cfa_offset -8
        subq    $16, %rsp
        .cfi_adjust_cfa_offset 16
        movl    %eax, %edi
        leaq    8(%rsp), %rsi
        call    sstm__itm_resumed
        addq    $8, %rsp
        .cfi_adjust_cfa_offset -8
        jmp     .Lsave
        .cfi_endproc
        .size   _ITM_beginTransaction, .-_ITM_beginTransaction

        /* void sstm__itm_jump(sstm_ckpt_t *c, int val): resume the
         * begin that saved c (a closed scope's, I5) at its resume point
         * with val in eax, as the engine's restore does: the callee-saved
         * registers and the stack pointer as saved, then the saved
         * return address, which is .Lresume. */
        .globl  sstm__itm_jump
        .hidden sstm__itm_jump
        .type   sstm__itm_jump, @function
        .p2align 4
sstm__itm_jump:
        .cfi_startproc
        SSTM_CKPT_RESTORE %rdi, %esi
        .cfi_endproc
        .size   sstm__itm_jump, .-sstm__itm_jump

        .section .note.GNU-stack,"",@progbits
