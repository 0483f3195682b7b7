/* SPDX-License-Identifier: MIT */
/* OS scheduling facilities used by the contention managers, each detected
 * at run time with a fallback (see the team's platform notes, outside this
 * repository):
 *
 *  - priority levers for softser: nice, SCHED_IDLE, SCHED_BATCH, a short
 *    EEVDF [Stoica95] custom slice; probed once for one that can be undone;
 *  - the OS conflict priority of a thread for os_prio (policy + nice);
 *  - time-slice extension for ext: the rseq slice extension (Linux >= 7.0),
 *    else a longer EEVDF custom slice (>= 6.12), else nothing.
 */
#ifndef SSTM_OS_SCHED_H
#define SSTM_OS_SCHED_H

#include <stdbool.h>
#include <stdint.h>

/* ---- priority levers (softser) ---- */
typedef enum sstm_lever {
  SSTM_LEVER_NONE = 0,
  SSTM_LEVER_NICE,  /* setpriority(tid, +19) and back */
  SSTM_LEVER_IDLE,  /* SCHED_IDLE and back to SCHED_OTHER */
  SSTM_LEVER_BATCH, /* SCHED_BATCH and back (reversible unprivileged) */
  SSTM_LEVER_SLICE, /* shortest custom slice (0.1 ms) and back */
} sstm_lever_t;

/* What a lowered thread had, to put it back. */
typedef struct sstm_prio_saved {
  int policy;
  int nice;
  uint64_t runtime;
} sstm_prio_saved_t;

/* Probe the levers in the order nice, idle, batch, slice, keeping the first
 * that can be applied AND undone, and that lowers the thread (nice does
 * not, for a program already at nice 19). The probe runs on a scratch thread with
 * the caller's attributes, so a one-way change (nice or SCHED_IDLE without
 * CAP_SYS_NICE) never sticks to the caller. Returns the lever (NONE if
 * nothing works). */
sstm_lever_t sstm__lever_probe(void);
/* Can lever l be applied and undone here (on a scratch thread)? */
bool sstm__lever_undoable(sstm_lever_t l);
const char *sstm__lever_name(sstm_lever_t l);
/* Lower thread tid's priority with lever l, saving what it had. */
bool sstm__lever_lower(sstm_lever_t l, int tid, sstm_prio_saved_t *saved);
/* Put it back, unless the thread's attributes are no longer what the
 * lever made them (changed since, by sstm_sched_set or anyone: the change
 * stands, and that counts as restored). */
bool sstm__lever_restore(sstm_lever_t l, int tid, const sstm_prio_saved_t *saved);

/* ---- OS conflict priority (os_prio) ---- */
/* Encode policy and nice (or RT priority) as one integer; larger means the
 * OS favours the thread more: RT > OTHER > BATCH > IDLE, then priority. */
int sstm__conflict_prio_encode(int policy, int nice, int rt_priority);
/* The current conflict priority of thread tid (system calls: cache it; their
 * cost: docs/benchmarks.md, "Figures behind the design"). */
int sstm__conflict_prio_of(int tid, int *policy, int *nice);

/* ---- time-slice extension (ext) ---- */
typedef enum sstm_ext_mode {
  SSTM_EXT_NONE = 0,
  SSTM_EXT_RSEQ,  /* rseq slice extension: request/granted bytes */
  SSTM_EXT_SLICE, /* per-thread EEVDF custom slice */
} sstm_ext_mode_t;

/* The two bytes of the rseq slice-extension control word that the STM
 * uses: the thread sets `request` while inside a transaction; when the
 * kernel defers a preemption it clears `request` and sets `granted`, and
 * then expects the thread to give the CPU back (rseq_slice_yield) as soon as
 * it leaves the critical section. `granted` is the kernel's: the yield
 * system call clears it (any system call ends a grant), and user space never
 * writes it (the kernel treats an inconsistent control word as a fault).
 * Abstracted so the protocol is testable on a simulated area. */
typedef struct sstm_slice_ctrl {
  uint8_t request;
  uint8_t granted;
} sstm_slice_ctrl_t;

typedef struct sstm_ext_probe {
  /* inputs (injectable for tests) */
  bool rseq_registered; /* glibc registered rseq for the thread */
  uint32_t rseq_flags;  /* rseq->flags of the thread */
  int prctl_rc;         /* result of PR_RSEQ_SLICE_EXTENSION enable */
  int setattr_rc;       /* result of a sched_setattr custom-slice test */
  /* output */
  sstm_ext_mode_t mode;
} sstm_ext_probe_t;

/* Decide the mode from the probe inputs (pure: unit-tested). */
sstm_ext_mode_t sstm__ext_choose(const sstm_ext_probe_t *p);
/* Probe the running kernel (fills the inputs and the mode), on a scratch
 * thread: the caller's own attributes are left as they are. */
void sstm__ext_probe(sstm_ext_probe_t *p);
/* Enable the rseq slice extension for the calling thread (the kernel's
 * switch is per thread). */
bool sstm__ext_rseq_enable(void);
const char *sstm__ext_mode_name(sstm_ext_mode_t m);
/* The calling thread's rseq slice-control bytes, or NULL. */
sstm_slice_ctrl_t *sstm__ext_rseq_ctrl(void);
/* The calling thread's time slice (EEVDF: its custom slice, or the
 * default one the kernel reports), 0 if the kernel does not report it
 * (before 6.12, or not SCHED_OTHER/SCHED_BATCH). */
uint64_t sstm__sched_slice_ns(void);
/* The slice the kernel gives a SCHED_OTHER thread without a custom one (the
 * EEVDF base slice as sched_getattr reports it), probed on a scratch thread
 * once per call; 0 if unknown. A thread found with that slice is given the
 * default back (sched_runtime 0), not a custom slice of the same length. */
uint64_t sstm__sched_default_slice_ns(void);
/* Set the calling thread's EEVDF custom slice (0 = default). */
bool sstm__ext_set_slice(uint64_t ns);
/* Give back a granted extension (rseq_slice_yield, syscall 471). */
void sstm__ext_slice_yield(void);

/* Test seam (tests/internal/sched_ext.c): a simulated rseq slice extension,
 * so that "P+ext" in rseq mode runs on kernels without it. While it is set,
 * the probe finds the extension available and enabled, enabling it for a
 * thread succeeds, the thread's control word is what `ctrl` returns for the
 * calling thread, and `yield` stands for rseq_slice_yield() (it must clear
 * `granted`, as the kernel does). Set it before sstm_init and clear it after
 * sstm_shutdown, with no other thread of the library running: it is a plain
 * pointer, read without synchronisation. Never set by the library. */
typedef struct sstm_ext_sim {
  sstm_slice_ctrl_t *(*ctrl)(void);
  void (*yield)(void);
} sstm_ext_sim_t;
extern const sstm_ext_sim_t *sstm__ext_sim;

/* Protocol steps on a control word (pure, unit-tested): at transaction
 * begin, and at its end (returns true if the thread must yield now). The
 * request is withdrawn before `granted` is read: a grant that lands between
 * the two is then seen, and one after the withdrawal cannot happen.
 *
 * The kernel reads and writes these bytes only on this thread's own CPU,
 * at an interrupt or a preemption of this thread, as a signal handler
 * would: relaxed atomics (no tearing, no merged or elided accesses) with
 * signal fences (the compiler keeps them in program order; the CPU's own
 * interrupt sees its stores in order, so no hardware fence is needed). */
static inline void sstm__ext_enter(sstm_slice_ctrl_t *c) {
  /* signal fence: the request is up before the transaction's first access
   * (a preemption inside it finds the request). */
  __atomic_store_n(&c->request, 1, __ATOMIC_RELAXED);
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
}
static inline bool sstm__ext_leave(sstm_slice_ctrl_t *c) {
  /* signal fences: the withdrawal comes after the transaction's last
   * access, and before the read of `granted` (see above). */
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  __atomic_store_n(&c->request, 0, __ATOMIC_RELAXED);
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  /* the caller yields; the kernel clears granted */
  return __atomic_load_n(&c->granted, __ATOMIC_RELAXED) != 0;
}

/* The time-slice extension facility the ext modifier is told to use (the
 * values of the public sstm_ext_facility_t, cfg.ext_mode). */
typedef enum sstm_ext_force {
  SSTM_EXT_FORCE_AUTO = 0, /* the probe decides */
  SSTM_EXT_FORCE_NONE,     /* no facility */
  SSTM_EXT_FORCE_SLICE,    /* the custom slice, if the kernel has it */
} sstm_ext_force_t;

/* ---- the calling thread's policy (sstm_sched_set) ---- */
/* Set the calling thread's policy with its nice value (SCHED_OTHER,
 * SCHED_BATCH, SCHED_IDLE) or RT priority (SCHED_FIFO, SCHED_RR); what it
 * does not set (a custom slice) stays. The arguments are not checked (the
 * kernel refuses what it refuses). Returns 0 with *nice_out (may be NULL)
 * the nice value set, or the errno of sched_setattr. */
int sstm__sched_set_self(int policy, int nice, int rt_priority, int *nice_out);

#endif /* SSTM_OS_SCHED_H */
