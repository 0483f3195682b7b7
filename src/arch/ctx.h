/* SPDX-License-Identifier: MIT */
/* User-level contexts and the signal-to-thread-context redirect (x86-64
 * SysV, Linux): the low-level machinery of the preemptive executor
 * (docs/design/executor.md, "Contexts" and "The signal-to-thread-context
 * protocol"). Plain facilities: no engine type, no configuration, no error
 * message; errors are returned as errno values. Implemented in
 * arch/x86_64-ctx.S (the register work) and arch/ctx.c (the C side and the
 * sanitizer annotations); stacks with a guard page come from src/os
 * (sstm__stack_alloc, os/os.h).
 *
 * ---- Contexts ----
 * A context is a stack plus the registers a function call must preserve. A
 * switch saves the running code's callee-saved registers (rbx, rbp,
 * r12-r15), its stack pointer, MXCSR and the x87 control word on its own
 * stack, stores the stack pointer in `save`, and resumes `load` where it
 * was saved (or at its entry function, for a context that never ran). No
 * system call: the signal mask is not touched (swapcontext saves and
 * restores it with sigprocmask), so a context keeps the mask of whichever
 * thread runs it. The caller-saved registers are not preserved: a switch is
 * a function call.
 *
 * The caller's obligations:
 * - A context runs on one thread at a time. A context saved by a switch on
 *   thread A may be loaded on thread B only after A's switch has saved it:
 *   publish it from the code that runs after the switch on A (in the loaded
 *   context), with a release store that B's load acquires. Its stack
 *   pointer is written by A's switch and read by B's.
 * - The thread's own stack is a context too (the one a worker starts and
 *   ends on): initialize it with sstm__ctx_init_thread() on that thread
 *   before the first switch from it; it can only be resumed on its thread.
 * - Code that runs in a context that may move between threads must not
 *   keep the address of a thread-local variable, or anything derived from
 *   the thread (pthread_self(), errno's address), across a switch: the
 *   compiler may compute such an address once per function (glibc declares
 *   pthread_self and __errno_location `const`), and after the switch it
 *   names the previous thread's variable. Re-read it through a function the
 *   compiler cannot see into.
 * - A context must not be switched from while it is inside a switch: do not
 *   redirect a thread (below) whose interrupted code is in sstm__ctx_*.
 * - An entry function must not return: a context ends by switching away
 *   for good (sstm__ctx_leave). A return traps: the process aborts with a
 *   message naming the context.
 *
 * Sanitizers (automatic: the wrappers below make the calls, the caller does
 * nothing more than the above). Under AddressSanitizer every switch tells
 * ASan which stack it moves to (__sanitizer_start_switch_fiber /
 * __sanitizer_finish_switch_fiber), sstm__ctx_leave lets ASan free the
 * leaving context's fake stack, and sstm__ctx_init/reset unpoison the stack.
 * Under ThreadSanitizer every context is a TSan fiber (__tsan_create_fiber;
 * the thread's context is its current fiber), every switch is
 * __tsan_switch_to_fiber with synchronization (the switch orders the two
 * sides, as it does), and sstm__ctx_destroy/reset free the fiber.
 *
 * ---- The signal-to-thread-context redirect ----
 * sstm__redirect() is called from a signal handler with the handler's
 * ucontext. It rewrites the interrupted thread's saved registers so that,
 * when the handler returns (and the kernel's sigreturn has restored every
 * register and the signal mask), the thread enters sstm__preempt_tramp
 * instead of the interrupted instruction. The trampoline saves every
 * register (all general registers, RFLAGS, the whole FP/SIMD state with
 * XSAVE, FXSAVE where XSAVE is off), calls fn(arg) on a 16-byte aligned
 * stack in ordinary thread context, restores everything and returns to the
 * interrupted instruction with the interrupted stack pointer. fn may switch
 * contexts and return much later, on another thread.
 *
 * The handler must run on an alternate signal stack (sigaltstack, e.g.
 * sstm__altstack_install in os/os.h, and SA_ONSTACK): otherwise the
 * kernel's signal frame lies right below the interrupted red zone, where
 * the redirect writes (sstm__redirect checks and refuses).
 *
 * Why it is safe: the handler only writes the interrupted stack below its
 * 128-byte red zone (which a leaf function may use without moving rsp),
 * where nothing lives while the signal frame is on the alternate stack, and
 * edits the ucontext, both async-signal-safe; fn runs after sigreturn, with
 * the mask the thread had before the signal, so it may take locks, allocate
 * and switch contexts, under the caller's rule for where a redirect may
 * land (not inside the code fn calls, not inside a switch, not where the
 * caller keeps its own invariants: the executor's preemptibility rule). The
 * redirect itself refuses a thread already inside the trampoline.
 *
 * Stack use: a redirect needs sstm__preempt_frame_size() bytes below the
 * interrupted stack pointer, plus what fn uses.
 */
#ifndef SSTM_ARCH_CTX_H
#define SSTM_ARCH_CTX_H

#include <stdbool.h>
#include <stddef.h>
#include <ucontext.h>

/* The smallest stack sstm__ctx_init accepts (the initial frame and a few
 * calls; a real context wants tens of KiB). */
#define SSTM__CTX_MIN_STACK 4096u

/* A context. `sp` is the saved stack pointer while the context is not
 * running (the assembly reads it at offset 0); the other fields belong to
 * the wrappers. Treat it as opaque. */
typedef struct sstm__ctx {
  void *sp;
  void *stack_lo; /* the stack: ASan needs its bounds (0 for a thread's stack under no ASan) */
  size_t stack_size;
  void (*entry)(void *);
  void *arg;
  void *asan_fake;   /* ASan: this context's fake stack while switched out */
  void *tsan_fiber;  /* TSan: this context's fiber */
  bool thread_stack; /* initialized by sstm__ctx_init_thread */
} sstm__ctx_t;

/* Prepare c to run entry(arg) on the stack [stack_lo, stack_lo + size) the
 * first time it is switched to. The new context starts with the calling
 * thread's MXCSR and x87 control word (as a new thread does). c's previous
 * contents are ignored: to re-arm a context that was initialized before,
 * use sstm__ctx_reset (under TSan, initializing it again leaks its fiber).
 * Returns 0, or EINVAL for a NULL c, stack_lo or entry, or a size below
 * SSTM__CTX_MIN_STACK. */
int sstm__ctx_init(sstm__ctx_t *c, void *stack_lo, size_t size, void (*entry)(void *), void *arg);

/* Re-arm an initialized context that is not running (it left, or never
 * ran) to start entry(arg) afresh on the same stack. Returns 0, or EINVAL
 * (NULL c or entry, a thread's context). */
int sstm__ctx_reset(sstm__ctx_t *c, void (*entry)(void *), void *arg);

/* Make c stand for the calling thread's own stack, so that a switch may
 * save into it and later resume it (on this thread only). Returns 0, or
 * EINVAL for a NULL c. */
int sstm__ctx_init_thread(sstm__ctx_t *c);

/* Save the running code into `save` and resume `load`; returns when
 * something switches back to `save`, possibly on another thread. No
 * system call, no lock. save and load must be distinct and initialized;
 * load must not be running (the caller's obligations above). */
void sstm__ctx_switch(sstm__ctx_t *save, const sstm__ctx_t *load);

/* Leave `self` (the running context) for good and resume `load`. self may
 * then be reset or destroyed, never resumed (a resume traps). */
__attribute__((noreturn)) void sstm__ctx_leave(sstm__ctx_t *self, const sstm__ctx_t *load);

/* Release what the wrappers hold for c (the TSan fiber); not its stack.
 * c must not be running. NULL is ignored. */
void sstm__ctx_destroy(sstm__ctx_t *c);

/* The assembly switch under the wrappers: saves into *save_sp, loads
 * load_sp. Sanitizer builds must go through sstm__ctx_switch. */
void sstm__ctx_swap(void **save_sp, void *load_sp);

/* ---- The redirect ---- */

/* From a signal handler: arrange for the interrupted code to call fn(arg)
 * in thread context once the handler returns, then continue exactly where
 * it was interrupted (above). Returns true if the redirect is set up;
 * false (the ucontext untouched) when uc or fn is NULL, when the handler
 * does not run on the thread's alternate signal stack or the interrupted
 * code ran on it (above), when the thread
 * was interrupted inside the trampoline (a redirect is already being
 * entered or left: the caller treats the signal as a standing one), inside
 * a context switch (sstm__ctx_switch, _leave, the first entry), or in a
 * system call the kernel will resume with restart_syscall, and
 * always under ThreadSanitizer, whose runtime delivers an asynchronous
 * signal late, at its next interceptor, on a copy of the ucontext whose
 * registers are stale (a rewrite would write into a live frame and then be
 * ignored). Async-signal-safe. The first call in the process reads the
 * CPU's XSAVE features (CPUID leaf 0xD). */
bool sstm__redirect(ucontext_t *uc, void (*fn)(void *), void *arg);

/* Bytes of stack below the interrupted stack pointer that a redirect uses
 * before fn's own frame: the red zone, the trampoline's saved registers,
 * the XSAVE area of the size CPUID leaf 0xD reports and its alignment. */
size_t sstm__preempt_frame_size(void);

/* The size of the FP/SIMD save area the trampoline uses (CPUID leaf 0xD
 * EBX: the XSAVE area for the features the OS enabled; 512 with FXSAVE). */
size_t sstm__preempt_xsave_size(void);

/* The trampoline: entered only through sstm__redirect, never called. */
void sstm__preempt_tramp(void);

#endif /* SSTM_ARCH_CTX_H */
