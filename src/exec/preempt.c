/* SPDX-License-Identifier: MIT */
/* The executor's signal side (docs/design/executor.md, "Preemption"):
 * the preemption signal's handler, the code where it refuses to preempt,
 * the per-worker timers (periodic ticks, the polled mode's fallback) and
 * how a submitter asks a worker to preempt.
 *
 * The handler runs on the interrupted worker, in signal context. It only
 * reads (the worker's current context, the queue's bitmap, the
 * interrupted instruction's address, the descriptor's preemptibility) and
 * then either
 *   - returns (nothing outranks the running transaction),
 *   - leaves a standing request on the descriptor (the engine's polled
 *     preemption bit: the next barrier, begin or commit point runs the
 *     preemption check through the hook) when the interrupted code may not
 *     be preempted: the library's own code, the C library, the dynamic
 *     linker, a sanitizer runtime, an irrevocable transaction or a
 *     user-marked region; or
 *   - redirects the thread (arch's trampoline) into the preemption check,
 *     which then runs in thread context with every register saved and
 *     returns to the interrupted instruction.
 * Everything it touches is async-signal-safe: atomics, the text ranges
 * computed once at the first executor's creation, errno saved around.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <gnu/libc-version.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "exec/exec_internal.h"
#include "iface/exec_services.h"

/* The preemption signal. SIGURG: ignored by default, so a stray one
 * (socket out-of-band data) harms nobody; a handler the program had
 * installed is called for signals that are not ours. */
#define XP_SIGNAL SIGURG

#if defined(__SANITIZE_THREAD__)
#define XP_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define XP_TSAN 1
#endif
#endif
#ifndef XP_TSAN
#define XP_TSAN 0
#endif

static __thread sstm_xworker_t *self __attribute__((tls_model("initial-exec")));

sstm_xworker_t *sstm__xp_self(void) { return self; }
void sstm__xp_set_self(sstm_xworker_t *w) { self = w; }

/* ---- code that is never preempted ---- */

#define XP_MAX_RANGES 32
static struct { uintptr_t lo, hi; } ranges[XP_MAX_RANGES];
static unsigned nranges;

struct find_arg {
  uintptr_t addr; /* the object that holds this address */
  uintptr_t base; /* or, if not 0, the object loaded at this base */
  bool first;     /* the next object is the first, the program */
};

/* Add every executable segment of the object that contains a->addr,
 * unless it is the program itself (the first object): a program that
 * calls memcpy without PIC has a canonical PLT entry for it, and the
 * address a library takes of memcpy is then that entry, in the program's
 * code, which is the user's code. */
static int add_object(struct dl_phdr_info *info, size_t size, void *p) {
  (void)size;
  struct find_arg *a = p;
  if (a->first) {
    a->first = false;
    return 0;
  }
  bool mine = a->base && info->dlpi_addr == a->base;
  for (int i = 0; i < info->dlpi_phnum && !a->base; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X)) continue;
    uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
    if (a->addr >= lo && a->addr < lo + ph->p_memsz) mine = true;
  }
  if (!mine) return 0;
  for (int i = 0; i < info->dlpi_phnum && nranges < XP_MAX_RANGES; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X)) continue;
    uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
    bool dup = false;
    for (unsigned j = 0; j < nranges; j++)
      dup |= ranges[j].lo == lo && ranges[j].hi == hi;
    if (!dup) {
      ranges[nranges].lo = lo;
      ranges[nranges].hi = hi;
      nranges++;
    }
  }
  return 1;
}

extern void *__tls_get_addr(void *);
/* The sanitizer runtimes' fiber switches (weak: absent without them). A
 * redirect inside one, in the middle of a context switch, would start a
 * second switch before the first has finished. */
extern void __sanitizer_start_switch_fiber(void **, const void *, size_t) __attribute__((weak));
extern void __tsan_switch_to_fiber(void *, unsigned) __attribute__((weak));

/* The start of the program's first executable segment: when the engine is
 * linked statically, the engine's code range holds it too. */
static uintptr_t prog_pc;

static int find_prog(struct dl_phdr_info *info, size_t size, void *p) {
  (void)size;
  (void)p;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
      prog_pc = info->dlpi_addr + ph->p_vaddr;
      break;
    }
  }
  return 1; /* the first object is the program */
}

/* The objects besides the library (whose code the engine's own test
 * refuses, sstm__exec_preemptible_now) whose code is never preempted: the
 * C library, where malloc and the mutexes come from (a sanitizer runtime
 * interposes them), the dynamic linker (lazy binding, TLS). A signal
 * there leaves the request standing for the next barrier. */
static void find_ranges(void) {
  const void *addrs[] = {
      (const void *)(uintptr_t)&gnu_get_libc_version,
      (const void *)(uintptr_t)&malloc,
      (const void *)(uintptr_t)&memcpy,
      (const void *)(uintptr_t)&pthread_mutex_lock,
      (const void *)(uintptr_t)&__tls_get_addr,
  };
  for (size_t i = 0; i < sizeof addrs / sizeof addrs[0]; i++) {
    struct find_arg a = {(uintptr_t)addrs[i], 0, true};
    dl_iterate_phdr(add_object, &a);
  }
  const void *weak[] = {(const void *)(uintptr_t)&__sanitizer_start_switch_fiber,
                        (const void *)(uintptr_t)&__tsan_switch_to_fiber};
  for (size_t i = 0; i < sizeof weak / sizeof weak[0]; i++) {
    if (!weak[i]) continue;
    struct find_arg a = {(uintptr_t)weak[i], 0, true};
    dl_iterate_phdr(add_object, &a);
  }
  /* The dynamic linker by its load base: a sanitizer runtime interposes
   * __tls_get_addr, whose address is then the runtime's. */
  struct find_arg ld = {0, (uintptr_t)getauxval(AT_BASE), true};
  if (ld.base) dl_iterate_phdr(add_object, &ld);
  dl_iterate_phdr(find_prog, NULL);
}

static bool refused_pc(uintptr_t pc) {
  for (unsigned i = 0; i < nranges; i++)
    if (pc >= ranges[i].lo && pc < ranges[i].hi) return true;
  return false;
}

/* ---- the handler ---- */

/* errno's location on the calling thread, looked up afresh: glibc
 * declares __errno_location const, so the compiler may reuse one call's
 * result across a call that switches and resumes on another thread
 * (arch/ctx.h, the caller's obligations). */
static int *errno_here(void) {
  int *(*volatile loc)(void) = __errno_location;
  return loc();
}

/* The engine's hook (iface/exec_services.h): a polled preemption point
 * (a barrier, an update commit, a retry, the end of a region) or a
 * conflict with a paused transaction of higher priority. errno goes with
 * the context here as at a redirect (`redirected`, below): the body called
 * the library between a call that set errno and its read of it, and while
 * it is switched out its worker's thread runs other requests (and the
 * check its own system calls: the queue lock's futex, the fallback's
 * timer); read first, stored back last, on the thread that resumes it. */
static void hook(sstm_desc_t *self_desc, sstm_exec_point_t where, sstm_desc_t *blocker) {
  (void)self_desc;
  int e = *errno_here();
  if (where == SSTM_EXEC_AT_BLOCKED)
    sstm__x_yield_to_paused(blocker);
  else
    sstm__x_preemption_check();
  *errno_here() = e;
}

/* The polled mode's fallback timer state (sstm_xworker_t::fb_state). */
enum { XP_FB_IDLE = 0, XP_FB_ARMING, XP_FB_ARMED };
/* sigev_value of the fallback timer's signals, to tell them from the
 * periodic tick's (0) in the handler. */
#define XP_SIGV_FALLBACK 1

static struct sigaction old_action;
static pthread_mutex_t global_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned users;

/* The redirect's function, in thread context on the context's stack. The
 * interrupted code may be between a call that set errno and its read of
 * it: errno is its state as much as the registers the trampoline keeps,
 * and the worker's thread runs other requests (which set errno) before it
 * resumes this one, on this thread or another. So errno goes with the
 * context: read here, put back on the thread that resumes it. */
static void redirected(void *arg) {
  (void)arg;
  int e = *errno_here();
  sstm__x_preemption_check();
  *errno_here() = e;
}

/* Stack that `redirected` may use below the redirect's own frame: the
 * preemption check and what it calls (the queue lock, the fallback's
 * timer_settime, the switch), with room to spare for sanitizer builds,
 * whose frames are larger. A bound, not a measure: those frames take a
 * small part of it. */
#define XP_CHECK_STACK 4096u

/* Whether a redirect of the thread interrupted with stack pointer sp in
 * context c leaves the trampoline's frame (sstm__preempt_frame_size: the
 * red zone, the saved registers, the XSAVE area) and the check's frames
 * on c's stack. The body may run near the bottom of its stack, which is
 * fine without a preemption: a redirect there would run into the guard
 * page (SIGSEGV in the trampoline). Refused, the request stands for the
 * next polled point, which runs after the body has come back up far
 * enough to call the library. An sp off c's stack (the body switched
 * stacks itself) is refused too. Async-signal-safe: arithmetic on fields
 * set before the worker started (the stack's bounds) and on the probed
 * frame size. */
static bool room_for_check(const sstm_xctx_t *c, uintptr_t sp) {
  uintptr_t lo = (uintptr_t)c->stack.lo, hi = lo + c->stack.size;
  return sp > lo && sp <= hi && sp - lo >= sstm__preempt_frame_size() + XP_CHECK_STACK;
}

static void on_signal(int sig, siginfo_t *si, void *ucv) {
  sstm_xworker_t *w = self;
  if (!w) {
    /* Not a worker: a signal of the program's own. */
    if (old_action.sa_flags & SA_SIGINFO) {
      if (old_action.sa_sigaction) old_action.sa_sigaction(sig, si, ucv);
    } else if (old_action.sa_handler != SIG_DFL && old_action.sa_handler != SIG_IGN) {
      old_action.sa_handler(sig);
    }
    return;
  }
  int saved_errno = errno;
  atomic_fetch_add_explicit(&w->signals, 1, memory_order_relaxed);
  if (si && si->si_code == SI_TIMER && si->si_value.sival_int == XP_SIGV_FALLBACK) {
    /* The fallback fired: nothing is armed any more. It is counted fired
     * if no disarm counted it first (F2). relaxed: the exchange is the
     * whole agreement. */
    if (atomic_exchange_explicit(&w->fb_unresolved, 0, memory_order_relaxed))
      atomic_fetch_add_explicit(&w->fallbacks_fired, 1, memory_order_relaxed);
    /* relaxed: a kicker's later ARMING is a plain store over it; the
     * worker's exchange finds IDLE and disarms nothing. */
    int armed = XP_FB_ARMED;
    atomic_compare_exchange_strong_explicit(&w->fb_state, &armed, XP_FB_IDLE, memory_order_relaxed,
                                            memory_order_relaxed);
  }
  /* acquire: pairs with run_ctx's release store of cur (same thread here,
   * but the context's fields were written by whoever queued it). */
  sstm_xctx_t *c = atomic_load_explicit(&w->cur, memory_order_acquire);
  if (!c || sstm__xq_top(&w->ex->q) <= (int)c->prio) {
    atomic_store_explicit(&w->kicked, 0, memory_order_relaxed);
    errno = saved_errno;
    return;
  }
  ucontext_t *uc = ucv;
  uintptr_t pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
  /* A descriptor other than the context's attached (request code may put
   * one of its own in its place, exec.h): its transaction is not the
   * context's and cannot be switched out with it (the check refuses it
   * too); nor is the engine's test, which reads the attached descriptor,
   * asked. The request waits on the context's descriptor. sstm_self: one
   * TLS load. */
  if (sstm_self() != c->desc) {
    atomic_fetch_add_explicit(&w->refused, 1, memory_order_relaxed);
    sstm__exec_request(c->desc);
    errno = saved_errno;
    return;
  }
  /* The engine's test first: it also leaves the request standing when it
   * says no (iface/exec_services.h). Then the C library and the others
   * found at start; then the room on the context's stack; then the
   * redirect, which refuses a thread inside its trampoline and every
   * thread under TSan. */
  if (!sstm__exec_preemptible_now(pc)) {
    atomic_fetch_add_explicit(&w->refused, 1, memory_order_relaxed);
  } else if (refused_pc(pc) || !room_for_check(c, (uintptr_t)uc->uc_mcontext.gregs[REG_RSP]) ||
             !sstm__redirect(uc, redirected, NULL)) {
    atomic_fetch_add_explicit(&w->refused, 1, memory_order_relaxed);
    sstm__exec_request(c->desc);
  }
  errno = saved_errno;
}

/* The engine's paused-conflict rule while users > 0 (under global_lock). */
static sstm_exec_paused_conflict_t users_rule;

static const char *rule_name(sstm_exec_paused_conflict_t r) {
  return r == SSTM_EXEC_PAUSED_CONFLICT_HANDOVER  ? "handover"
         : r == SSTM_EXEC_PAUSED_CONFLICT_INHERIT ? "inherit"
                                                  : "takeover";
}

int sstm__xp_global_init(sstm_exec_paused_conflict_t rule) {
  pthread_mutex_lock(&global_lock);
  int rc = 0;
  if (users && rule != users_rule) {
    pthread_mutex_unlock(&global_lock);
    sstm__set_error("sstm_exec_create: paused_conflict %s, but an executor alive uses %s (the "
                    "rule is process-wide)",
                    rule_name(rule), rule_name(users_rule));
    return SSTM_EBUSY;
  }
  if (users++ == 0) {
    if (!nranges) find_ranges();
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    /* SA_ONSTACK: the redirect writes below the interrupted stack pointer,
     * where the kernel's signal frame would otherwise be (arch/ctx.h). */
    sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    if (sigaction(XP_SIGNAL, &sa, &old_action) != 0) {
      users--;
      sstm__set_error("sstm_exec_create: sigaction(SIGURG): %s", strerror(errno));
      rc = SSTM_EINVAL;
    }
    if (rc == 0 && sstm__exec_set_hook(hook) != 0) {
      sigaction(XP_SIGNAL, &old_action, NULL);
      users--;
      sstm__set_error("sstm_exec_create: another preemption hook is registered in the engine");
      rc = SSTM_EBUSY;
    }
    if (rc == 0) {
      users_rule = rule;
      /* Cannot fail: every value is a rule. The executor decides under
       * INHERIT, so the engine asks it whatever the priorities. */
      (void)sstm__exec_set_paused_rule(
          rule == SSTM_EXEC_PAUSED_CONFLICT_HANDOVER  ? SSTM_EXEC_PAUSED_WAIT_HIGHER
          : rule == SSTM_EXEC_PAUSED_CONFLICT_INHERIT ? SSTM_EXEC_PAUSED_ASK
                                                      : SSTM_EXEC_PAUSED_TAKEOVER);
    }
  }
  pthread_mutex_unlock(&global_lock);
  return rc;
}

void sstm__xp_global_fini(void) {
  pthread_mutex_lock(&global_lock);
  if (users && --users == 0) {
    sigaction(XP_SIGNAL, &old_action, NULL);
    sstm__exec_set_hook(NULL);
    (void)sstm__exec_set_paused_rule(SSTM_EXEC_PAUSED_TAKEOVER); /* the engine's default */
  }
  pthread_mutex_unlock(&global_lock);
}

/* ---- timers ---- */

static int make_timer(sstm_xworker_t *w, timer_t *t, int value) {
  struct sigevent ev;
  memset(&ev, 0, sizeof ev);
  ev.sigev_notify = SIGEV_THREAD_ID;
  ev.sigev_signo = XP_SIGNAL;
  ev.sigev_value.sival_int = value;
  ev._sigev_un._tid = w->tid;
  return timer_create(CLOCK_MONOTONIC, &ev, t) == 0 ? 0 : SSTM_ENOMEM;
}

static void arm(timer_t t, uint64_t ns, bool periodic) {
  struct itimerspec its;
  memset(&its, 0, sizeof its);
  its.it_value.tv_sec = (time_t)(ns / 1000000000u);
  its.it_value.tv_nsec = (long)(ns % 1000000000u);
  if (periodic) its.it_interval = its.it_value;
  timer_settime(t, 0, &its, NULL);
}

int sstm__xp_worker_init(sstm_xworker_t *w) {
  /* The signal must reach the worker, whatever mask its creator had. */
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, XP_SIGNAL);
  pthread_sigmask(SIG_UNBLOCK, &s, NULL);
  const sstm_exec_config_t *c = &w->ex->cfg;
  /* Without an alternate stack the redirect refuses and every signal
   * becomes a standing request for the polled points: slower, still
   * correct. */
  w->has_altstack = sstm__altstack_install(&w->altstack) == 0;
  if (c->tick_us) {
    if (make_timer(w, &w->tick_timer, 0) != 0) return SSTM_ENOMEM;
    w->has_tick = true;
    arm(w->tick_timer, (uint64_t)c->tick_us * 1000u, true);
  }
  if (c->preempt == SSTM_EXEC_PREEMPT_POLL) {
    if (make_timer(w, &w->fallback_timer, XP_SIGV_FALLBACK) != 0) return SSTM_ENOMEM;
    w->has_fallback = true;
  }
  return 0;
}

void sstm__xp_worker_fini(sstm_xworker_t *w) {
  if (w->has_tick) timer_delete(w->tick_timer);
  if (w->has_fallback) timer_delete(w->fallback_timer);
  w->has_tick = w->has_fallback = false;
  if (w->has_altstack) sstm__altstack_remove(&w->altstack);
  w->has_altstack = false;
}

/* The fallback's accounting. Each fallback armed is counted once, as fired
 * or as disarmed, whoever resolves it first: the timer's expiry and a
 * disarm cannot tell by themselves which came first to the worker. The
 * kernel delivers an expired timer's signal later, when the worker next
 * returns to user mode; a timer_settime in between drops that signal
 * (Linux drops the pending signal of a timer re-armed or disarmed since it
 * was queued), and a signal dequeued just before the disarm still reaches
 * the handler after it. So:
 *
 *   (F1) the kick sets fb_unresolved to 1 before it arms the timer (K3); if
 *        it was 1 already, the fallback armed before is replaced without
 *        its signal: counted disarmed;
 *   (F2) the handler, taking a fallback signal, exchanges fb_unresolved to
 *        0 and counts fired if it was 1;
 *   (F3) a disarm (K5, W2) exchanges it to 0 after its timer_settime and
 *        counts disarmed if it was 1.
 *
 * Relaxed throughout: only the exchanges' atomicity matters, each 1 -> 0
 * counted once, so fallbacks = disarmed + fired + fb_unresolved at rest.
 * No signal of an arming reaches F2 before that arming's F1: F1 comes
 * before K3 in the kicker's program order, and the kernel's locks order
 * K3's arming before the expiry and the expiry before the delivery.
 * Which of F2 and F3 wins when a signal and a disarm cross is not fixed (a
 * signal dequeued before the disarm is counted disarmed, its handler then
 * counting nothing), nor, when two kicks overlap, which arming a count
 * goes to: the counts add up, their split between fired and disarmed is
 * that close. */

/* (F3), after the disarm's timer_settime. */
static void count_disarmed(sstm_xworker_t *w) {
  if (atomic_exchange_explicit(&w->fb_unresolved, 0, memory_order_relaxed))
    atomic_fetch_add_explicit(&w->fallbacks_disarmed, 1, memory_order_relaxed);
}

_Atomic(void (*)(sstm_xworker_t *w)) sstm__xp_test_armed;

/* The fallback's disarming. A polled request is taken at the victim's
 * next preemption point, usually long before poll_fallback_us; the signal
 * that the timer then sends finds nothing to do but costs the worker a few
 * microseconds (a signal delivery, the handler). So the worker disarms the
 * timer once it has looked at the queue for itself: at the preemption
 * check, and when a context leaves it (it pops next). A kick and a cancel
 * may overlap (the check may run between the kick's flag and its
 * timer_settime), hence fb_state:
 *
 *   kicker:  (K1) store ARMING, release   (K2) set the polled flag
 *            (K3) timer_settime            (K4) CAS ARMING -> ARMED, acq_rel
 *            failing on IDLE: (K5) disarm its own timer
 *   worker:  (W1) exchange -> IDLE, acq_rel; found ARMED: (W2) disarm
 *            then look at the queue; then clear `kicked`
 *
 * K1 is ordered after the push of the request's entry (the queue lock's
 * unlock, then the store) and W1's acquire pairs with K1's release: a
 * worker that takes a kick's ARMING or ARMED back looks at the queue after
 * it and finds that entry, so that kick's signal is not needed. If W1
 * comes between K1 and K4, K4 fails on IDLE and the kicker disarms (K5);
 * if W1 comes after K4, it found ARMED, and K3 came before it (K4's
 * release), so W2's disarm is the later timer_settime and wins. If W1
 * comes before K1, it took back nothing of this kick, which then stands.
 * One kick at a time per worker: a submitter kicks only a worker whose
 * `kicked` it set under the queue lock, and the worker clears `kicked`
 * only after W1. (A fallback that fired already moves ARMED to IDLE in the
 * handler; a tick or a fallback that finds nothing clears `kicked` without
 * W1, and a K4 that then fails on another kicker's ARMED leaves the timer
 * armed: it is that kick's fallback too.) */
void sstm__xp_kick(sstm_xworker_t *w) {
  const sstm_exec_config_t *c = &w->ex->cfg;
  if (c->preempt == SSTM_EXEC_PREEMPT_POLL) {
    /* (K1) release: pairs with W1's acquire (above). */
    if (w->has_fallback) atomic_store_explicit(&w->fb_state, XP_FB_ARMING, memory_order_release);
    sstm_xctx_t *cur = atomic_load_explicit(&w->cur, memory_order_acquire);
    if (cur) sstm__exec_request(cur->desc); /* (K2) */
    if (!w->has_fallback) return;
    /* (F1) */
    atomic_fetch_add_explicit(&w->fallbacks, 1, memory_order_relaxed);
    if (atomic_exchange_explicit(&w->fb_unresolved, 1, memory_order_relaxed))
      atomic_fetch_add_explicit(&w->fallbacks_disarmed, 1, memory_order_relaxed);
    arm(w->fallback_timer, (uint64_t)c->poll_fallback_us * 1000u, false); /* (K3) */
    /* relaxed: set while no kick runs (exec_internal.h). */
    void (*seam)(sstm_xworker_t *) =
        atomic_load_explicit(&sstm__xp_test_armed, memory_order_relaxed);
    if (seam) seam(w);
    int expect = XP_FB_ARMING;
    /* (K4) acq_rel: the release orders K3 before a W1 that finds ARMED;
     * the acquire on failure orders K5 after the W1 that found ARMING. */
    if (!atomic_compare_exchange_strong_explicit(&w->fb_state, &expect, XP_FB_ARMED,
                                                 memory_order_acq_rel, memory_order_acquire) &&
        expect == XP_FB_IDLE) {
      arm(w->fallback_timer, 0, false); /* (K5) it_value 0 disarms */
      count_disarmed(w);                /* (F3) */
    }
  } else {
    syscall(SYS_tgkill, getpid(), w->tid, XP_SIGNAL);
  }
}

void sstm__xp_fallback_cancel(sstm_xworker_t *w) {
  if (!w->has_fallback) return;
  /* (W1) One relaxed load first: IDLE is the common case (no kick since
   * the last cancel), and then there is nothing to take back. A K1 this
   * load misses is not this cancel's to take back either (it came after
   * the load, so the kick's entry may come after the look at the queue). */
  if (atomic_load_explicit(&w->fb_state, memory_order_relaxed) == XP_FB_IDLE) return;
  /* acq_rel: the acquire pairs with K1's release (the kick's queue entry
   * is visible to the look at the queue that follows); the release with
   * K4's acquire on failure (K5 comes after this). */
  int was = atomic_exchange_explicit(&w->fb_state, XP_FB_IDLE, memory_order_acq_rel);
  if (was == XP_FB_ARMED) {
    arm(w->fallback_timer, 0, false); /* (W2) */
    count_disarmed(w);                /* (F3) */
  }
}

bool sstm__xp_test_fallback_armed(sstm_xworker_t *w) {
  struct itimerspec its;
  if (!w->has_fallback || timer_gettime(w->fallback_timer, &its) != 0) return false;
  return its.it_value.tv_sec != 0 || its.it_value.tv_nsec != 0;
}

void sstm__xp_want(sstm_xworker_t *w, int prio) {
  /* release: pairs with the check's acquire exchange (the request's queue
   * entry, pushed before, is visible to the check's peek). */
  int cur = atomic_load_explicit(&w->want, memory_order_relaxed);
  while (prio < cur && !atomic_compare_exchange_weak_explicit(
                           &w->want, &cur, prio, memory_order_release, memory_order_relaxed)) {
  }
}

void sstm__xp_nudge(sstm_xworker_t *w) {
  /* acquire: pairs with run_ctx's release store of cur, so the context's
   * descriptor is the one set up before it ran. */
  sstm_xctx_t *cur = atomic_load_explicit(&w->cur, memory_order_acquire);
  if (cur) sstm__exec_request(cur->desc);
}

const char *sstm__xp_facility(const struct sstm_exec *ex) {
  (void)ex;
  return XP_TSAN                                       ? "poll-only(tsan)"
         : prog_pc && sstm__exec_pc_in_engine(prog_pc) ? "poll-only(static)"
                                                       : "redirect";
}
