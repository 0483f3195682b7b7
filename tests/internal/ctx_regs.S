/* SPDX-License-Identifier: MIT */
/* Register-level helpers of tests/internal/ctx.c: code that keeps known
 * values in registers across a context switch or a signal redirect, and
 * checks them (x86-64 SysV, AVX for the YMM part). */
        .text

/* void sstm_test_switch_regs(sstm__ctx_t *save, const sstm__ctx_t *load,
 *                            const uint64_t in[8], uint64_t out[8])
 * Loads rbx, rbp, r12-r15 from in[0..5], MXCSR from in[6] and the x87
 * control word from in[7], calls sstm__ctx_switch(save, load), and when it
 * returns stores the same registers into out[0..7]. The caller's own
 * registers, MXCSR and control word are restored before returning. */
        .globl  sstm_test_switch_regs
        .type   sstm_test_switch_regs, @function
        .p2align 4
sstm_test_switch_regs:
        pushq   %rbp
        pushq   %rbx
        pushq   %r12
        pushq   %r13
        pushq   %r14
        pushq   %r15
        subq    $40, %rsp               /* 8 + 48 + 40: rsp 16-byte aligned */
        stmxcsr 0(%rsp)
        fnstcw  4(%rsp)
        movq    %rcx, 8(%rsp)           /* out */
        ldmxcsr 48(%rdx)
        fldcw   56(%rdx)
        movq    0(%rdx), %rbx
        movq    8(%rdx), %rbp
        movq    16(%rdx), %r12
        movq    24(%rdx), %r13
        movq    32(%rdx), %r14
        movq    40(%rdx), %r15
        call    sstm__ctx_switch
        movq    8(%rsp), %rax
        movq    %rbx, 0(%rax)
        movq    %rbp, 8(%rax)
        movq    %r12, 16(%rax)
        movq    %r13, 24(%rax)
        movq    %r14, 32(%rax)
        movq    %r15, 40(%rax)
        movq    $0, 48(%rax)
        movq    $0, 56(%rax)
        stmxcsr 48(%rax)
        fnstcw  56(%rax)
        ldmxcsr 0(%rsp)
        fldcw   4(%rsp)
        addq    $40, %rsp
        popq    %r15
        popq    %r14
        popq    %r13
        popq    %r12
        popq    %rbx
        popq    %rbp
        ret
        .size   sstm_test_switch_regs, .-sstm_test_switch_regs

/* int sstm_test_regloop(uint64_t iters, const uint64_t init[90],
 *                       uint64_t progress[3])
 * A leaf function (needs AVX) that keeps values in every general register
 * but rsp (init[0..14]: rax rbx rcx rdx rsi rdi rbp r8-r15), in YMM0-14
 * (init[15..74], four words each), in RFLAGS (CF PF AF ZF SF DF OF, two
 * patterns in turn), in MXCSR (round toward zero, flush to zero), in the
 * x87 control word (53-bit precision, round up) and two x87 registers
 * (1.0 and pi), and in 15 words of its red zone below rsp (init[75..89]),
 * changes them every iteration (but the x87 ones), and checks them all
 * every iteration, with a window of nops between setting the flags and
 * checking them. Increments progress[0] once per iteration; stores the
 * x87 registers as doubles at the end, 1.0 in progress[1] and pi in
 * progress[2]. Returns 0, or what it found wrong: 1 + the register's index
 * above for a general register, 16 flags, 17 MXCSR, 18 the x87 control
 * word, 19 the red zone, 20 + n YMMn. Restores the caller's MXCSR and x87
 * control word. */
#define EXP_GPR  0                      /* 15 words */
#define EXP_FLAGS 120
#define ITER     128
#define PROG     136
#define SPILL    144
#define CODE     152
#define MX_EXP   160
#define MX_TMP   164
#define MX_ORIG  168
#define FCW_EXP  172
#define FCW_TMP  174
#define FCW_ORIG 176
#define EXP_Y    192                    /* 15 x 32 bytes */
#define EXP_RZ   672                    /* 15 words */
#define FRAME    800

#define FLAGS_A  0x447                  /* CF PF ZF DF (+ bit 1) */
#define FLAGS_B  0x892                  /* AF SF OF (+ bit 1) */
#define FLAGS_MASK 0xcd7
#define MXCSR_TEST 0xff80               /* masked, round toward zero, FTZ */
#define FCW_TEST 0x0a7f                 /* masked, 53-bit precision, round up */

        .macro  forgpr op
        \op     %rax, 0
        \op     %rbx, 1
        \op     %rcx, 2
        \op     %rdx, 3
        \op     %rsi, 4
        \op     %rdi, 5
        \op     %rbp, 6
        \op     %r8, 7
        \op     %r9, 8
        \op     %r10, 9
        \op     %r11, 10
        \op     %r12, 11
        \op     %r13, 12
        \op     %r14, 13
        \op     %r15, 14
        .endm
        .macro  forymm op
        \op     %ymm0, 0
        \op     %ymm1, 1
        \op     %ymm2, 2
        \op     %ymm3, 3
        \op     %ymm4, 4
        \op     %ymm5, 5
        \op     %ymm6, 6
        \op     %ymm7, 7
        \op     %ymm8, 8
        \op     %ymm9, 9
        \op     %ymm10, 10
        \op     %ymm11, 11
        \op     %ymm12, 12
        \op     %ymm13, 13
        \op     %ymm14, 14
        .endm

        .macro  gpr_copy reg, i
        movq    8*\i(%rsi), %rax
        movq    %rax, EXP_GPR+8*\i(%rsp)
        .endm
        .macro  gpr_load reg, i
        movq    EXP_GPR+8*\i(%rsp), \reg
        .endm
        .macro  gpr_step reg, i
        addq    $(0x01010101 * (\i + 1) + 7), \reg
        addq    $(0x01010101 * (\i + 1) + 7), EXP_GPR+8*\i(%rsp)
        .endm
        .macro  gpr_check reg, i
        cmpq    EXP_GPR+8*\i(%rsp), \reg
        je      1f
        movl    $(\i + 1), CODE(%rsp)
        jmp     .Lfail
1:
        .endm
        .macro  y_copy reg, i
        vmovdqu 120+32*\i(%rsi), %ymm15
        vmovdqu %ymm15, EXP_Y+32*\i(%rsp)
        .endm
        .macro  y_load reg, i
        vmovdqu EXP_Y+32*\i(%rsp), \reg
        .endm
        .macro  y_step reg, i
        vpaddq  .Ldelta_y(%rip), \reg, \reg
        vmovdqu EXP_Y+32*\i(%rsp), %ymm15
        vpaddq  .Ldelta_y(%rip), %ymm15, %ymm15
        vmovdqu %ymm15, EXP_Y+32*\i(%rsp)
        .endm
        .macro  y_check reg, i
        vpcmpeqq EXP_Y+32*\i(%rsp), \reg, %ymm15
        vpmovmskb %ymm15, %eax
        cmpl    $-1, %eax
        je      1f
        movl    $(20 + \i), CODE(%rsp)
        jmp     .Lfail
1:
        .endm
        .macro  rz_copy k
        movq    600+8*\k(%rsi), %rax
        movq    %rax, EXP_RZ+8*\k(%rsp)
        movq    %rax, -16-8*\k(%rsp)
        .endm
        .macro  rz_step k
        addq    $(0x00100101 * (\k + 3)), -16-8*\k(%rsp)
        addq    $(0x00100101 * (\k + 3)), EXP_RZ+8*\k(%rsp)
        .endm
        .macro  rz_check k
        movq    -16-8*\k(%rsp), %rax
        cmpq    EXP_RZ+8*\k(%rsp), %rax
        je      1f
        movl    $19, CODE(%rsp)
        jmp     .Lfail
1:
        .endm

        .globl  sstm_test_regloop
        .globl  sstm_test_regloop_end
        .type   sstm_test_regloop, @function
        .p2align 4
sstm_test_regloop:
        pushq   %rbp
        pushq   %rbx
        pushq   %r12
        pushq   %r13
        pushq   %r14
        pushq   %r15
        subq    $FRAME, %rsp
        movq    %rdi, ITER(%rsp)
        movq    %rdx, PROG(%rsp)
        movl    $0, CODE(%rsp)
        forgpr  gpr_copy
        forymm  y_copy
        .irp    k, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14
        rz_copy \k
        .endr
        movq    $FLAGS_A, EXP_FLAGS(%rsp)
        stmxcsr MX_ORIG(%rsp)
        movl    $MXCSR_TEST, MX_EXP(%rsp)
        ldmxcsr MX_EXP(%rsp)
        fnstcw  FCW_ORIG(%rsp)
        movw    $FCW_TEST, FCW_EXP(%rsp)
        fldcw   FCW_EXP(%rsp)
        fldpi                           /* two x87 registers in use */
        fld1
        forymm  y_load
        forgpr  gpr_load
        testq   $-1, ITER(%rsp)
        jz      .Ldone
.Lloop:
        forgpr  gpr_step
        forymm  y_step
        .irp    k, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14
        rz_step \k
        .endr
        /* the flags: the other pattern, DF included, then a window */
        xorq    $(FLAGS_A ^ FLAGS_B), EXP_FLAGS(%rsp)
        pushq   EXP_FLAGS(%rsp)
        popfq
        .rept   96
        nop
        .endr
        pushfq                          /* at -8(%rsp): not a red-zone word we check */
        movq    %rax, SPILL+8(%rsp)
        movq    (%rsp), %rax
        andq    $FLAGS_MASK, %rax
        cmpq    EXP_FLAGS+8(%rsp), %rax
        movq    SPILL+8(%rsp), %rax     /* mov leaves the flags of the cmp */
        leaq    8(%rsp), %rsp
        cld
        je      1f
        movl    $16, CODE(%rsp)
        jmp     .Lfail
1:
        forgpr  gpr_check
        movq    %rax, SPILL(%rsp)
        stmxcsr MX_TMP(%rsp)
        movl    MX_TMP(%rsp), %eax
        cmpl    MX_EXP(%rsp), %eax
        je      1f
        movl    $17, CODE(%rsp)
        jmp     .Lfail
1:      fnstcw  FCW_TMP(%rsp)
        movw    FCW_TMP(%rsp), %ax
        cmpw    FCW_EXP(%rsp), %ax
        je      1f
        movl    $18, CODE(%rsp)
        jmp     .Lfail
1:
        forymm  y_check
        .irp    k, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14
        rz_check \k
        .endr
        movq    PROG(%rsp), %rax
        incq    (%rax)
        movq    SPILL(%rsp), %rax
        decq    ITER(%rsp)
        jnz     .Lloop
        jmp     .Ldone
.Lfail:
.Ldone:
        cld
        vzeroupper
        ldmxcsr MX_ORIG(%rsp)
        fldcw   FCW_ORIG(%rsp)
        movq    PROG(%rsp), %rax
        fstpl   8(%rax)                 /* 1.0, then pi: the x87 registers kept */
        fstpl   16(%rax)
        movl    CODE(%rsp), %eax
        addq    $FRAME, %rsp
        popq    %r15
        popq    %r14
        popq    %r13
        popq    %r12
        popq    %rbx
        popq    %rbp
        ret
sstm_test_regloop_end:
        .size   sstm_test_regloop, .-sstm_test_regloop

/* void sstm_test_clobber(uint64_t seed): writes seed-derived garbage into
 * every caller-saved general register and all sixteen YMM registers,
 * raises MXCSR's exception flags and leaves the flags changed (what a
 * function called by the trampoline may do under the ABI). Needs AVX. */
        .globl  sstm_test_clobber
        .type   sstm_test_clobber, @function
        .p2align 4
sstm_test_clobber:
        movq    %rdi, %rax
        vmovq   %rdi, %xmm0
        vpbroadcastq %xmm0, %ymm0
        .irp    r, %ymm1,%ymm2,%ymm3,%ymm4,%ymm5,%ymm6,%ymm7,%ymm8,%ymm9,%ymm10,%ymm11,%ymm12,%ymm13,%ymm14,%ymm15
        vpaddq  %ymm0, %ymm0, \r
        .endr
        /* 1.0 / 3.0: inexact, which sets MXCSR's PE flag */
        movl    $1, %ecx
        cvtsi2sdl %ecx, %xmm1
        movl    $3, %ecx
        cvtsi2sdl %ecx, %xmm2
        divsd   %xmm2, %xmm1
        movq    %rdi, %rcx
        notq    %rcx
        movq    %rcx, %rdx
        movq    %rcx, %rsi
        movq    %rcx, %r8
        movq    %rcx, %r9
        movq    %rcx, %r10
        movq    %rcx, %r11
        movq    %rcx, %rdi
        addq    %rcx, %rax              /* flags */
        ret
        .size   sstm_test_clobber, .-sstm_test_clobber

        .section .rodata
        .p2align 5
.Ldelta_y:
        .quad   1, 3, 5, 7

        .section .note.GNU-stack,"",@progbits
