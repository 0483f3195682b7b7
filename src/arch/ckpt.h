/* SPDX-License-Identifier: MIT */
/* The restart checkpoint (x86-64 SysV): a setjmp/longjmp pair that saves
 * only what a restart needs (callee-saved registers, stack pointer, return
 * address) and never touches the signal mask, so a save costs no system
 * call. Like _setjmp/longjmp, it does not save or restore the
 * floating-point control state (MXCSR, the x87 control word): a restart
 * runs with the control state the aborted attempt left, the contract that
 * <schedstm/tx.h> states for users. Plain facility: no engine type,
 * only the public sstm_ckpt_t (schedstm/tx.h) as the place to save into.
 *
 * sstm__ckpt_save(c) (declared by schedstm/tx.h, exported: the inline form
 * calls it) saves the caller's registers into *c and returns 0
 * (SSTM__CKPT_START). sstm__ckpt_restore(c, val) resumes the code that
 * saved *c as if that save returned val; val must not be 0, and the frame
 * that called the save must still be live. Implemented in
 * arch/x86_64-ckpt.S; in ThreadSanitizer builds, which must observe every
 * non-local jump, the save is the C library's _setjmp (schedstm/tx.h) and
 * the restore its longjmp (arch/ckpt-libc.c).
 *
 * This header is also included by assembly: there it gives the layout of
 * the saved registers in sstm_ckpt_t.regs (uint64_t slots) and the macro
 * SSTM_CKPT_SAVE that stores them, for engine code that saves a checkpoint
 * inside a call of its own (core/begin_x86_64.S), and SSTM_CKPT_RESTORE,
 * the resume of sstm__ckpt_restore, for code that resumes a checkpoint in
 * a library of its own (abi/itm_x86_64.S, whose library cannot call the
 * engine's hidden sstm__ckpt_restore). */
#ifndef SSTM_ARCH_CKPT_H
#define SSTM_ARCH_CKPT_H

/* Byte offsets of the slots in sstm_ckpt_t.regs. */
#define SSTM_CKPT_RIP 0  /* return address of the save */
#define SSTM_CKPT_RSP 8  /* the caller's rsp after that return */
#define SSTM_CKPT_RBX 16 /* rbx, rbp, r12-r15: 16..56 */

#ifdef __ASSEMBLER__
/* SSTM_CKPT_SAVE off, base: save the registers of the function that called
 * the current one into the checkpoint at off(base), as sstm__ckpt_save
 * does. Use it before the current function changes rsp or a callee-saved
 * register (the return address must be at (%rsp)); it clobbers rax. */
/* clang-format off */
        .macro SSTM_CKPT_SAVE off, base
        movq    (%rsp), %rax            /* return address */
        movq    %rax, \off+SSTM_CKPT_RIP(\base)
        leaq    8(%rsp), %rax           /* caller's rsp after return */
        movq    %rax, \off+SSTM_CKPT_RSP(\base)
        movq    %rbx, \off+SSTM_CKPT_RBX+0(\base)
        movq    %rbp, \off+SSTM_CKPT_RBX+8(\base)
        movq    %r12, \off+SSTM_CKPT_RBX+16(\base)
        movq    %r13, \off+SSTM_CKPT_RBX+24(\base)
        movq    %r14, \off+SSTM_CKPT_RBX+32(\base)
        movq    %r15, \off+SSTM_CKPT_RBX+40(\base)
        .endm

/* SSTM_CKPT_RESTORE base, val: resume the checkpoint at (base), as
 * sstm__ckpt_restore does: the callee-saved registers and the stack
 * pointer as saved, val (a 32-bit register) in eax as the save's return
 * value, then a jump to the saved return address. Does not return. */
        .macro SSTM_CKPT_RESTORE base, val
        movq    SSTM_CKPT_RBX+0(\base), %rbx
        movq    SSTM_CKPT_RBX+8(\base), %rbp
        movq    SSTM_CKPT_RBX+16(\base), %r12
        movq    SSTM_CKPT_RBX+24(\base), %r13
        movq    SSTM_CKPT_RBX+32(\base), %r14
        movq    SSTM_CKPT_RBX+40(\base), %r15
        movl    \val, %eax
        movq    SSTM_CKPT_RSP(\base), %rsp
        jmpq    *SSTM_CKPT_RIP(\base)
        .endm
/* clang-format on */
#else
#include <schedstm/tx.h>

/* Resume the code that saved c (see above); val != 0 is what its save
 * returns now. Does not return. */
__attribute__((noreturn)) void sstm__ckpt_restore(sstm_ckpt_t *c, int val);
#endif

#endif /* SSTM_ARCH_CKPT_H */
