/* SPDX-License-Identifier: MIT */
/* User-level context switch and the preemption trampoline, x86-64 SysV
 * (arch/ctx.h states the contracts; docs/design/executor.md the protocol).
 *
 * A saved context is its stack pointer; the stack holds, from it upward:
 *   [sp+0]  MXCSR (32 bits) | x87 control word (16 bits) | pad
 *   [sp+8]  r15  [sp+16] r14  [sp+24] r13  [sp+32] r12  [sp+40] rbx
 *   [sp+48] rbp  [sp+56] return address
 * (SSTM__CTX_FRAME in arch/ctx.c builds the same frame for a new context,
 * whose return address is sstm__ctx_boot.)
 */
        /* The switch's code in the section sstm__redirect refuses
         * (arch/ctx.c, CTX_TEXT). */
        .section sstm_ctx_text,"ax",@progbits

/* void sstm__ctx_swap(void **save_sp, void *load_sp) */
        .globl  sstm__ctx_swap
        .hidden sstm__ctx_swap
        .type   sstm__ctx_swap, @function
        .p2align 4
sstm__ctx_swap:
        .cfi_startproc
        pushq   %rbp
        .cfi_adjust_cfa_offset 8
        .cfi_rel_offset %rbp, 0
        pushq   %rbx
        .cfi_adjust_cfa_offset 8
        .cfi_rel_offset %rbx, 0
        pushq   %r12
        .cfi_adjust_cfa_offset 8
        .cfi_rel_offset %r12, 0
        pushq   %r13
        .cfi_adjust_cfa_offset 8
        .cfi_rel_offset %r13, 0
        pushq   %r14
        .cfi_adjust_cfa_offset 8
        .cfi_rel_offset %r14, 0
        pushq   %r15
        .cfi_adjust_cfa_offset 8
        .cfi_rel_offset %r15, 0
        subq    $8, %rsp
        .cfi_adjust_cfa_offset 8
        stmxcsr (%rsp)
        fnstcw  4(%rsp)
        movq    %rsp, (%rdi)
        /* From here on the stack is load's, laid out alike: the unwind
         * rules above describe it as well. */
        movq    %rsi, %rsp
        ldmxcsr (%rsp)
        fldcw   4(%rsp)
        addq    $8, %rsp
        .cfi_adjust_cfa_offset -8
        popq    %r15
        .cfi_adjust_cfa_offset -8
        .cfi_restore %r15
        popq    %r14
        .cfi_adjust_cfa_offset -8
        .cfi_restore %r14
        popq    %r13
        .cfi_adjust_cfa_offset -8
        .cfi_restore %r13
        popq    %r12
        .cfi_adjust_cfa_offset -8
        .cfi_restore %r12
        popq    %rbx
        .cfi_adjust_cfa_offset -8
        .cfi_restore %rbx
        popq    %rbp
        .cfi_adjust_cfa_offset -8
        .cfi_restore %rbp
        ret
        .cfi_endproc
        .size   sstm__ctx_swap, .-sstm__ctx_swap

/* The first "return" of a new context lands here with rsp 16-byte aligned
 * and r12 = the context (arch/ctx.c builds that frame). sstm__ctx_main runs
 * the entry function and never returns (it traps if the entry returns). */
        .globl  sstm__ctx_boot
        .hidden sstm__ctx_boot
        .type   sstm__ctx_boot, @function
        .p2align 4
sstm__ctx_boot:
        .cfi_startproc
        .cfi_undefined %rip             /* the outermost frame of the context */
        movq    %r12, %rdi
        call    sstm__ctx_main
        ud2
        .cfi_endproc
        .size   sstm__ctx_boot, .-sstm__ctx_boot

        .text

/* The preemption trampoline. sstm__redirect (arch/ctx.c) made the
 * interrupted thread enter here with, for S = the interrupted rsp - 128
 * (its red zone) - 24:
 *   [S+0] arg   [S+8] fn   [S+16] the interrupted rip
 * and every other register as it was interrupted. It saves RFLAGS and the
 * fifteen general registers below S, the FP/SIMD state in a 64-byte
 * aligned area below those, calls fn(arg) with a clean ABI state (DF clear,
 * default MXCSR and x87 control word, an empty x87 stack, upper YMM halves
 * zeroed), restores all of it
 * and returns with `ret $128`: it pops the interrupted rip from S+16 and
 * steps over the red zone, so rsp is exactly the interrupted one and
 * nothing in the red zone was touched.
 *
 * rbx (the frame base) and r12 (the FP/SIMD save mode) are callee-saved:
 * fn keeps them even when it switches contexts and returns on another
 * thread. The mode is read once here, not at restore time, from the word
 * sstm__redirect set on this thread before rewriting its ucontext.
 */
#define TR_ARG   128
#define TR_FN    136
#define TR_CFA   280            /* the interrupted rsp, from rbx */

        .globl  sstm__preempt_tramp
        .hidden sstm__preempt_tramp
        .globl  sstm__preempt_tramp_end
        .hidden sstm__preempt_tramp_end
        .type   sstm__preempt_tramp, @function
        .p2align 4
sstm__preempt_tramp:
        .cfi_startproc
        .cfi_signal_frame               /* the caller's rip has not executed yet */
        .cfi_def_cfa %rsp, 152
        .cfi_offset %rip, -136
        pushfq
        .cfi_adjust_cfa_offset 8
        pushq   %rax
        .cfi_adjust_cfa_offset 8
        .cfi_rel_offset %rax, 0
        pushq   %rbx
        .cfi_adjust_cfa_offset 8
        .cfi_rel_offset %rbx, 0
        pushq   %rcx
        .cfi_adjust_cfa_offset 8
        .cfi_rel_offset %rcx, 0
        pushq   %rdx
        .cfi_adjust_cfa_offset 8
        .cfi_rel_offset %rdx, 0
        pushq   %rsi
        .cfi_adjust_cfa_offset 8
        .cfi_rel_offset %rsi, 0
        pushq   %rdi
        .cfi_adjust_cfa_offset 8
        .cfi_rel_offset %rdi, 0
        pushq   %rbp
        .cfi_adjust_cfa_offset 8
        .cfi_rel_offset %rbp, 0
        pushq   %r8
        .cfi_adjust_cfa_offset 8
        .cfi_rel_offset %r8, 0
        pushq   %r9
        .cfi_adjust_cfa_offset 8
        .cfi_rel_offset %r9, 0
        pushq   %r10
        .cfi_adjust_cfa_offset 8
        .cfi_rel_offset %r10, 0
        pushq   %r11
        .cfi_adjust_cfa_offset 8
        .cfi_rel_offset %r11, 0
        pushq   %r12
        .cfi_adjust_cfa_offset 8
        .cfi_rel_offset %r12, 0
        pushq   %r13
        .cfi_adjust_cfa_offset 8
        .cfi_rel_offset %r13, 0
        pushq   %r14
        .cfi_adjust_cfa_offset 8
        .cfi_rel_offset %r14, 0
        pushq   %r15
        .cfi_adjust_cfa_offset 8
        .cfi_rel_offset %r15, 0
        movq    %rsp, %rbx
        .cfi_def_cfa_register %rbx
        /* r12 = XSAVE area size, 0 for FXSAVE (arch/ctx.c). */
        movl    sstm__tramp_xsave_size(%rip), %r12d
        movl    $512, %eax
        testl   %r12d, %r12d
        cmovnzl %r12d, %eax
        subq    %rax, %rsp
        andq    $-64, %rsp
        cld
        testl   %r12d, %r12d
        jz      1f
        /* XSAVE (standard form): the header (bytes 512-575) must be zero
         * for XRSTOR, and XSAVE writes only its first word. */
        xorl    %eax, %eax
        movq    %rax, 512(%rsp)
        movq    %rax, 520(%rsp)
        movq    %rax, 528(%rsp)
        movq    %rax, 536(%rsp)
        movq    %rax, 544(%rsp)
        movq    %rax, 552(%rsp)
        movq    %rax, 560(%rsp)
        movq    %rax, 568(%rsp)
        movl    $-1, %eax               /* every component XCR0 enables */
        movl    $-1, %edx
        xsave64 (%rsp)
        testl   $1, sstm__tramp_vzeroupper(%rip)
        jz      2f
        vzeroupper
        jmp     2f
1:      fxsave64 (%rsp)
        /* The x87 state fn may assume (SysV): an empty register stack and
         * the default control word. emms empties every tag and fldcw sets
         * the word; fninit would do both at about 15 times the cost. */
2:      emms
        fldcw   .Lfcw_default(%rip)
        ldmxcsr .Lmxcsr_default(%rip)
        movq    TR_ARG(%rbx), %rdi
        call    *TR_FN(%rbx)
        testl   %r12d, %r12d
        jz      3f
        movl    $-1, %eax
        movl    $-1, %edx
        xrstor64 (%rsp)
        jmp     4f
3:      fxrstor64 (%rsp)
4:      movq    %rbx, %rsp
        .cfi_def_cfa_register %rsp
        popq    %r15
        .cfi_adjust_cfa_offset -8
        .cfi_restore %r15
        popq    %r14
        .cfi_adjust_cfa_offset -8
        .cfi_restore %r14
        popq    %r13
        .cfi_adjust_cfa_offset -8
        .cfi_restore %r13
        popq    %r12
        .cfi_adjust_cfa_offset -8
        .cfi_restore %r12
        popq    %r11
        .cfi_adjust_cfa_offset -8
        .cfi_restore %r11
        popq    %r10
        .cfi_adjust_cfa_offset -8
        .cfi_restore %r10
        popq    %r9
        .cfi_adjust_cfa_offset -8
        .cfi_restore %r9
        popq    %r8
        .cfi_adjust_cfa_offset -8
        .cfi_restore %r8
        popq    %rbp
        .cfi_adjust_cfa_offset -8
        .cfi_restore %rbp
        popq    %rdi
        .cfi_adjust_cfa_offset -8
        .cfi_restore %rdi
        popq    %rsi
        .cfi_adjust_cfa_offset -8
        .cfi_restore %rsi
        popq    %rdx
        .cfi_adjust_cfa_offset -8
        .cfi_restore %rdx
        popq    %rcx
        .cfi_adjust_cfa_offset -8
        .cfi_restore %rcx
        popq    %rbx
        .cfi_adjust_cfa_offset -8
        .cfi_restore %rbx
        popq    %rax
        .cfi_adjust_cfa_offset -8
        .cfi_restore %rax
        popfq                           /* after the last flag-changing instruction */
        .cfi_adjust_cfa_offset -8
        leaq    16(%rsp), %rsp          /* over arg and fn; lea leaves the flags alone */
        .cfi_adjust_cfa_offset -16
        ret     $128
        .cfi_endproc
sstm__preempt_tramp_end:
        .size   sstm__preempt_tramp, .-sstm__preempt_tramp

        .section .rodata
        .p2align 2
.Lmxcsr_default:
        .long   0x1f80                  /* all exceptions masked, round to nearest */
.Lfcw_default:
        .short  0x037f                  /* all masked, 64-bit precision, round to nearest */

        .section .note.GNU-stack,"",@progbits
