/* SPDX-License-Identifier: MIT */
/* The C side of user-level contexts and of the signal-to-thread-context
 * redirect (contracts: arch/ctx.h; the register work: arch/x86_64-ctx.S;
 * the protocol: docs/design/executor.md). The sanitizer annotations live
 * here, so that every user of the switch gets them. */
#define _GNU_SOURCE /* REG_RIP, REG_RSP, REG_RAX; pthread_getattr_np */
#include "arch/ctx.h"

#include <cpuid.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define SSTM_CTX_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SSTM_CTX_ASAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define SSTM_CTX_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SSTM_CTX_TSAN 1
#endif
#endif
#ifndef SSTM_CTX_ASAN
#define SSTM_CTX_ASAN 0
#endif
#ifndef SSTM_CTX_TSAN
#define SSTM_CTX_TSAN 0
#endif

#if SSTM_CTX_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#if SSTM_CTX_TSAN
#include <sanitizer/tsan_interface.h>
#endif

/* The switch's code (sstm__ctx_switch, sstm__ctx_leave, sstm__ctx_main
 * here; sstm__ctx_swap and sstm__ctx_boot in x86_64-ctx.S) lies in a
 * section of its own, whose bounds the linker provides, so that
 * sstm__redirect can refuse a thread interrupted inside a switch: fn
 * would switch again while the first switch is half done (the saved stack
 * pointer overwritten; under ASan, a fiber switch started twice). */
#define CTX_TEXT __attribute__((section("sstm_ctx_text"), noinline))
extern const char __start_sstm_ctx_text[] __attribute__((visibility("hidden")));
extern const char __stop_sstm_ctx_text[] __attribute__((visibility("hidden")));

/* arch/x86_64-ctx.S */
void sstm__ctx_boot(void);
void sstm__ctx_main(sstm__ctx_t *c);
extern const char sstm__preempt_tramp_end[];

/* ---- contexts ---- */

/* The frame a switch saves (x86_64-ctx.S), in 8-byte slots from the saved
 * stack pointer: MXCSR | x87 control word, r15, r14, r13, r12, rbx, rbp,
 * return address. A new context's frame returns into sstm__ctx_boot with
 * r12 = the context; above it two zero slots keep the boot's rsp 16-byte
 * aligned and end frame-pointer walks. */
enum { FRAME_FP = 0, FRAME_R12 = 4, FRAME_RBP = 6, FRAME_RET = 7, FRAME_SLOTS = 10 };

__attribute__((noreturn)) static void ctx_trap(const sstm__ctx_t *c, const char *what) {
  char msg[256];
  int n = snprintf(msg, sizeof msg, "schedstm: context %p %s\n", (const void *)c, what);
  if (n > 0) {
    ssize_t w = write(STDERR_FILENO, msg, (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1);
    (void)w;
  }
  abort();
}

/* Lay out the first frame of c at the top of its stack. */
static void ctx_arm(sstm__ctx_t *c, void (*entry)(void *), void *arg) {
  uintptr_t top = ((uintptr_t)c->stack_lo + c->stack_size) & ~(uintptr_t)15;
  uint64_t *f = (uint64_t *)(top - FRAME_SLOTS * sizeof(uint64_t));
#if SSTM_CTX_ASAN
  /* Frames of an earlier incarnation that never returned left their
   * redzones poisoned. */
  __asan_unpoison_memory_region(c->stack_lo, c->stack_size);
#endif
  uint32_t mxcsr;
  uint16_t fcw;
  __asm__ volatile("stmxcsr %0" : "=m"(mxcsr));
  __asm__ volatile("fnstcw %0" : "=m"(fcw));
  memset(f, 0, FRAME_SLOTS * sizeof(uint64_t));
  f[FRAME_FP] = (uint64_t)mxcsr | (uint64_t)fcw << 32;
  f[FRAME_R12] = (uint64_t)(uintptr_t)c;
  f[FRAME_RBP] = 0;
  f[FRAME_RET] = (uint64_t)(uintptr_t)sstm__ctx_boot;
  c->sp = f;
  c->entry = entry;
  c->arg = arg;
  c->asan_fake = NULL;
#if SSTM_CTX_TSAN
  c->tsan_fiber = __tsan_create_fiber(0);
#endif
}

int sstm__ctx_init(sstm__ctx_t *c, void *stack_lo, size_t size, void (*entry)(void *), void *arg) {
  if (c == NULL || stack_lo == NULL || entry == NULL || size < SSTM__CTX_MIN_STACK) return EINVAL;
  memset(c, 0, sizeof *c);
  c->stack_lo = stack_lo;
  c->stack_size = size;
  ctx_arm(c, entry, arg);
  return 0;
}

int sstm__ctx_reset(sstm__ctx_t *c, void (*entry)(void *), void *arg) {
  if (c == NULL || entry == NULL || c->thread_stack || c->stack_lo == NULL) return EINVAL;
#if SSTM_CTX_TSAN
  if (c->tsan_fiber != NULL) __tsan_destroy_fiber(c->tsan_fiber);
  c->tsan_fiber = NULL;
#endif
  ctx_arm(c, entry, arg);
  return 0;
}

int sstm__ctx_init_thread(sstm__ctx_t *c) {
  if (c == NULL) return EINVAL;
  memset(c, 0, sizeof *c);
  c->thread_stack = true;
#if SSTM_CTX_ASAN
  /* ASan must be told the bounds of the stack a switch moves to. */
  pthread_attr_t a;
  if (pthread_getattr_np(pthread_self(), &a) == 0) {
    void *lo;
    size_t sz;
    if (pthread_attr_getstack(&a, &lo, &sz) == 0) {
      c->stack_lo = lo;
      c->stack_size = sz;
    }
    pthread_attr_destroy(&a);
  }
#endif
#if SSTM_CTX_TSAN
  c->tsan_fiber = __tsan_get_current_fiber();
#endif
  return 0;
}

CTX_TEXT void sstm__ctx_switch(sstm__ctx_t *save, const sstm__ctx_t *load) {
#if SSTM_CTX_ASAN
  __sanitizer_start_switch_fiber(&save->asan_fake, load->stack_lo, load->stack_size);
#endif
#if SSTM_CTX_TSAN
  /* flags 0: the switch synchronizes the two sides, as it does. */
  __tsan_switch_to_fiber(load->tsan_fiber, 0);
#endif
  sstm__ctx_swap(&save->sp, load->sp);
#if SSTM_CTX_ASAN
  /* Back in `save`, resumed by a switch that named its stack. */
  __sanitizer_finish_switch_fiber(save->asan_fake, NULL, NULL);
#endif
}

CTX_TEXT void sstm__ctx_leave(sstm__ctx_t *self, const sstm__ctx_t *load) {
#if SSTM_CTX_ASAN
  /* NULL: self's fake stack is freed (it is never resumed). */
  __sanitizer_start_switch_fiber(NULL, load->stack_lo, load->stack_size);
#endif
#if SSTM_CTX_TSAN
  __tsan_switch_to_fiber(load->tsan_fiber, 0);
#endif
  sstm__ctx_swap(&self->sp, load->sp);
  ctx_trap(self, "was resumed after sstm__ctx_leave (reset it first)");
}

void sstm__ctx_destroy(sstm__ctx_t *c) {
  if (c == NULL) return;
#if SSTM_CTX_TSAN
  if (!c->thread_stack && c->tsan_fiber != NULL) __tsan_destroy_fiber(c->tsan_fiber);
#endif
  c->tsan_fiber = NULL;
}

/* The first code of every context (called from sstm__ctx_boot). */
CTX_TEXT void sstm__ctx_main(sstm__ctx_t *c) {
#if SSTM_CTX_ASAN
  /* The first arrival on this stack: no fake stack to restore. */
  __sanitizer_finish_switch_fiber(NULL, NULL, NULL);
#endif
  c->entry(c->arg);
  ctx_trap(c, "returned from its entry function (a context must end with sstm__ctx_leave)");
}

/* ---- the redirect ---- */

/* What the trampoline reads (x86_64-ctx.S), set once per process by
 * preempt_probe(): the XSAVE area size (0: use FXSAVE), and whether the
 * OS enabled the AVX state (then the trampoline clears the upper YMM
 * halves before calling fn, so that fn's SSE code pays no transition). The
 * trampoline reads them with plain 32-bit loads, which are single-copy
 * atomic on x86-64; an _Atomic uint32_t has the layout of a uint32_t. */
_Atomic uint32_t sstm__tramp_xsave_size __attribute__((visibility("hidden")));
_Atomic uint32_t sstm__tramp_vzeroupper __attribute__((visibility("hidden")));
static _Atomic uint32_t tramp_probed;

/* Reads CPUID once per process (CPUID is a VM exit under virtualization:
 * microseconds, not for every signal). Async-signal-safe. Release on
 * tramp_probed pairs with the acquire below: a thread that sees the probe
 * done also sees its results, which its trampoline then reads in program
 * order after its own handler's call. Two threads may probe at once; they
 * store the same values. */
static void preempt_probe(void) {
  if (atomic_load_explicit(&tramp_probed, memory_order_acquire)) return;
  unsigned a, b, c, d;
  uint32_t size = 0, vz = 0;
  if (__get_cpuid(1, &a, &b, &c, &d) && (c & bit_XSAVE) && (c & bit_OSXSAVE)) {
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    /* EBX of leaf 0xD, sub-leaf 0: the standard-form XSAVE area for the
     * components XCR0 enables now (legacy 512 + header 64 at least). */
    if (__get_cpuid_count(0xD, 0, &a, &b, &c, &d) && b >= 576) {
      size = b;
      vz = (lo & 4u) != 0; /* XCR0 bit 2: AVX (upper YMM) state */
    }
    (void)hi;
  }
  atomic_store_explicit(&sstm__tramp_xsave_size, size, memory_order_relaxed);
  atomic_store_explicit(&sstm__tramp_vzeroupper, vz, memory_order_relaxed);
  atomic_store_explicit(&tramp_probed, 1, memory_order_release);
}

size_t sstm__preempt_xsave_size(void) {
  preempt_probe();
  uint32_t s = atomic_load_explicit(&sstm__tramp_xsave_size, memory_order_relaxed);
  return s ? s : 512;
}

size_t sstm__preempt_frame_size(void) {
  /* red zone + arg, fn, rip + RFLAGS and 15 registers + the area and its
   * 64-byte alignment */
  return 128 + 24 + 128 + sstm__preempt_xsave_size() + 63;
}

/* no_sanitize_address: the stores go below the interrupted rsp, where
 * ASan's shadow may still hold a dead frame's redzones. */
__attribute__((no_sanitize_address)) bool sstm__redirect(ucontext_t *uc, void (*fn)(void *),
                                                         void *arg) {
#if SSTM_CTX_TSAN
  (void)uc;
  (void)fn;
  (void)arg;
  return false;
#else
  if (uc == NULL || fn == NULL) return false;
  greg_t *g = uc->uc_mcontext.gregs;
  uintptr_t pc = (uintptr_t)g[REG_RIP];
  uintptr_t sp = (uintptr_t)g[REG_RSP];
  /* The kernel put the signal frame (this ucontext and the saved FP/SIMD
   * state, whose end marker sigreturn checks) right below the interrupted
   * red zone unless the handler runs on an alternate stack: the words
   * written below would then overwrite it (sigreturn restores a legacy
   * FXSAVE image and the upper YMM halves are lost). Require the frame on
   * the alternate stack and the interrupted code off it (uc_stack holds the
   * thread's sigaltstack at delivery). */
  uintptr_t alo = (uintptr_t)uc->uc_stack.ss_sp, ahi = alo + uc->uc_stack.ss_size;
  if ((uc->uc_stack.ss_flags & SS_DISABLE) || (uintptr_t)uc < alo || (uintptr_t)uc >= ahi ||
      (sp > alo && sp <= ahi))
    return false;
  if (pc >= (uintptr_t)sstm__preempt_tramp && pc < (uintptr_t)sstm__preempt_tramp_end) return false;
  if (pc >= (uintptr_t)__start_sstm_ctx_text && pc < (uintptr_t)__stop_sstm_ctx_text)
    return false; /* inside a switch */
  /* A system call interrupted by the signal and to be resumed through
   * restart_syscall (nanosleep, poll with a timeout, ...) continues from
   * the thread's kernel restart block: fn may make its own such call or
   * move the code to another thread, and the restart would then resume the
   * wrong call. The kernel set rax to that call's number: refuse (a user
   * value equal to it only delays the redirect to the next signal). An
   * ordinary restart (rax = the original number) re-issues the call and
   * is safe. */
  if (g[REG_RAX] == (greg_t)SYS_restart_syscall) return false;
  preempt_probe();
  uintptr_t s = sp - 128 - 24;
  uint64_t *p = (uint64_t *)s;
  p[0] = (uint64_t)(uintptr_t)arg;
  p[1] = (uint64_t)(uintptr_t)fn;
  p[2] = (uint64_t)pc;
  g[REG_RSP] = (greg_t)s;
  g[REG_RIP] = (greg_t)(uintptr_t)sstm__preempt_tramp;
  return true;
#endif
}
