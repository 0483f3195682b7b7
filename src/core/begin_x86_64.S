/* SPDX-License-Identifier: MIT */
/* The engine's one-call begin for x86-64 SysV: sstm__begin and, for the
 * outermost begin, the checkpoint save of sstm__ckpt_save (arch/ckpt.h) in
 * one call, so that a transaction costs one call and one descriptor lookup
 * to open instead of two. It reads and writes descriptor fields at the
 * offsets of core/desc_offsets.h, which txn.c checks against struct
 * sstm_desc. Not in ThreadSanitizer builds: there the inline form calls
 * sstm__begin and the C library's _setjmp (schedstm/tx.h).
 */
#include "arch/ckpt.h"
#include "core/desc_offsets.h"

        .text

        /* int sstm__begin_ckpt(const sstm_attr_t *attr) -- returns twice.
         * The outermost begin of SSTM_ATOMIC_BEGIN in one call. The
         * thread's never-NULL prefix pointer (SSTM_DESC_FAST_CUR) names the
         * descriptor. One comparison of its gate word with zero (no
         * transaction, no callback running, no begin-time feature) selects
         * the common begin: save the caller's checkpoint straight into the
         * descriptor (SSTM_CKPT_SAVE, as sstm__ckpt_save does: its saved
         * stack pointer is the descriptor's begin_sp, engine.h), and go on in
         * sstm__begin_top(tx, attr) (txn.c). A descriptor with begin-time
         * features saves the same way and goes on in
         * sstm__begin_top_slow(tx, attr); every other begin (nested,
         * unregistered thread, inside a hook) saves nothing and goes to
         * sstm__begin_other(attr). All return SSTM__CKPT_START; a restart
         * returns here again with its code, as from sstm__ckpt_save. The
         * callee-saved registers saved are the caller's: nothing before the
         * save changes them. */
        .globl  sstm__begin_ckpt
        .type   sstm__begin_ckpt, @function
        .p2align 4
sstm__begin_ckpt:
        .cfi_startproc
        movq    %rdi, %rsi              /* attr: the C halves' second argument */
        movq    SSTM_DESC_FAST_CUR@gottpoff(%rip), %rax
        /* the thread's descriptor, or the static prefix of a thread
         * without one, whose gate word sends it to 2 below */
        movq    %fs:(%rax), %rdi
        cmpl    $0, SSTM_DESC_OFF_GATE(%rdi)
        jne     1f
        SSTM_CKPT_SAVE SSTM_DESC_OFF_CKPT, %rdi
        jmp     sstm__begin_top
1:      testl   $SSTM_DESC_GATE_NESTED, SSTM_DESC_OFF_GATE(%rdi)
        jnz     2f
        SSTM_CKPT_SAVE SSTM_DESC_OFF_CKPT, %rdi
        jmp     sstm__begin_top_slow
2:      movq    %rsi, %rdi
        jmp     sstm__begin_other
        .cfi_endproc
        .size   sstm__begin_ckpt, .-sstm__begin_ckpt

        .section .note.GNU-stack,"",@progbits
