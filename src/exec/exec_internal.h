/* SPDX-License-Identifier: MIT */
/* The executor's internal structures (include/schedstm/exec.h; design in
 * docs/design/executor.md). Shared by exec.c (lifecycle, submission,
 * workers) and preempt.c (signals, ticks, the preemption check). */
#ifndef SSTM_EXEC_INTERNAL_H
#define SSTM_EXEC_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include <schedstm/exec.h>
#include <schedstm/thread.h>

#include "arch/ctx.h"
#include "exec/queue.h"
#include "iface/error.h" /* sstm__set_error */
#include "os/os.h"

/* A context's state (ctx->state; written by the worker that runs it or
 * under the queue lock, read by the same). */
enum { XC_FREE = 0, XC_COLD, XC_RUNNING, XC_PAUSED, XC_DONE };

struct sstm_xworker;

/* A transaction context ([Silvestri17]'s transaction_context): a stack,
 * a descriptor, and the request it runs. */
typedef struct sstm_xctx {
  sstm_xq_node_t node; /* queue or free-list link (first member) */
  struct sstm_exec *ex;
  sstm_desc_t *desc;           /* its own, from sstm_desc_create() */
  sstm__stack_t stack;         /* the stack, a guard page below it */
  sstm__ctx_t regs;            /* its saved registers while switched out */
  bool ran;                    /* regs ran a request before: reset, not init */
  struct sstm_xworker *worker; /* the worker running it (valid while RUNNING) */
  int state;
  bool started;
  sstm_exec_req_t req;
  unsigned birth;    /* submitted priority: the statistics' level */
  unsigned prio;     /* current priority (promotions raise it) */
  unsigned preempts; /* C_T */
  uint64_t attempts;
  int rc;
  uint64_t t_submit, t_run, t_pause; /* ns, sstm__now_ns() */
  uint64_t run_ns, paused_ns;
  /* run_ns when the current attempt began (body()): the attempt's work so
   * far is run_ns (plus the time since t_run, while it runs) minus this */
  uint64_t attempt_run0;
} sstm_xctx_t;

/* A worker thread. The fields the signal handler and the submitters read
 * are atomics. */
typedef struct sstm_xworker {
  struct sstm_exec *ex;
  unsigned idx;
  pthread_t thread;
  int tid;           /* set before sstm_exec_create() returns */
  sstm__ctx_t sched; /* the scheduler loop's registers while a context runs */
  /* The context running now, NULL in the scheduler loop. Written by the
   * worker (release: the handler and the submitters read the context's
   * fields through it); read by its own signal handler and by submitters. */
  _Atomic(sstm_xctx_t *) cur;
  /* Priority of the context this worker runs or has taken to run next, -1
   * when none: the submitters' victim choice. Written under the queue lock
   * whenever the worker takes a context (the pop in its loop, the entry a
   * preemption check takes), so that a submitter, which chooses under the
   * same lock, never misses a worker that has taken a context but not
   * started it yet (and by a check that keeps a lock holder running at
   * cfg.holder_level, under the lock too); set to -1 without the lock when a context leaves the
   * worker and nothing is taken next (the worker then pops under the lock,
   * which serves whatever was pushed meanwhile). */
  _Atomic int cur_prio;
  /* A preemption was requested and not yet checked: keeps several
   * submitters from signalling the same worker for one switch. */
  _Atomic int kicked;
  /* The lowest priority of the requests that asked this worker to check
   * (a kick or a nudge) since it took its current context (reset under
   * the queue lock with cur_prio), INT_MAX for none. An ask that reached
   * the worker before its transaction's attempt ran (the signal found no
   * context, the polled flag was overwritten by the attempt's begin) is
   * not lost: the context re-asks itself from `want` once the attempt runs
   * (exec.c, reask). A check
   * asked for by requests switches for one of them or a higher one, or for
   * any request not yet started that waits above its transaction, not for
   * a transaction promoted while paused that the request's arrival has
   * nothing to do with (exec.c, asked_for). */
  _Atomic int want;
  /* The entry a preemption check took from the queue for this worker to
   * run after the paused context is queued; NULL otherwise. This worker's
   * thread only (the check runs on it, then its scheduler). */
  sstm_xq_node_t *next;
  timer_t tick_timer, fallback_timer;
  bool has_tick, has_fallback;
  /* The polled mode's fallback timer (preempt.c, "the fallback's
   * disarming"): XP_FB_IDLE, XP_FB_ARMING (a kicker is arming it) or
   * XP_FB_ARMED. The kicker moves it IDLE -> ARMING -> ARMED; the worker,
   * once it has looked at the queue for itself (a preemption check, a
   * context leaving it), exchanges it back to IDLE and disarms what was
   * armed; a kicker whose ARMING was taken back disarms its own timer. */
  _Atomic int fb_state;
  /* 1 while the last fallback armed is unresolved: neither counted fired
   * (its signal taken by the handler) nor disarmed (taken back before its
   * signal came). Whoever exchanges it from 1 to 0 counts that fallback,
   * once (preempt.c, "the fallback's accounting"). */
  _Atomic int fb_unresolved;
  sstm__stack_t altstack; /* the handler's stack (arch/ctx.h: the redirect needs one) */
  bool has_altstack;
  /* counters of this worker (relaxed; read by sstm_exec_describe) */
  /* declined: checks that found a higher priority waiting and did not
   * switch (SSTM_EXEC_PREEMPT_CHECK_ONLY) */
  _Atomic uint64_t signals, refused, checks, switches, declined;
  /* handovers: the worker given to a paused transaction of higher priority
   * (SSTM_EXEC_PAUSED_CONFLICT_HANDOVER) */
  _Atomic uint64_t handovers;
  /* inherits: of the handovers, those to a paused transaction of lower
   * priority, which ran with the yielding one's (INHERIT); passed: conflicts
   * with a paused transaction where INHERIT kept the worker (the engine
   * took the paused one over) */
  _Atomic uint64_t inherits, passed;
  /* fallbacks: the polled mode's fallback timer armed by a kick;
   * fallbacks_disarmed: of those, taken back before their signal reached
   * the worker's handler: disarmed by the worker (or by the kicker on the
   * worker's behalf) because the worker had already looked at the queue,
   * or re-armed by a later kick, so no signal was taken for nothing */
  _Atomic uint64_t fallbacks, fallbacks_disarmed;
  /* fallbacks_fired: of those, the ones whose signal the handler took (the
   * timer expired before it was disarmed: the worker reached no preemption
   * point in time, or reached one after the signal was sent).
   * fallbacks = disarmed + fired + fb_unresolved. */
  _Atomic uint64_t fallbacks_fired;
  /* holder_raises: transactions paused holding locks and raised to
   * cfg.holder_level; holder_kept: checks that kept such a transaction
   * running because nothing above that level waited */
  _Atomic uint64_t holder_raises, holder_kept;
  /* waiter_picks: times a submitter chose this worker as the victim
   * because its transaction waited in its policy (cfg.waiter_first). */
  _Atomic uint64_t waiter_picks;
} sstm_xworker_t;

/* Per birth level, summed at each request's end (relaxed atomics). The
 * layout is the state table's sstm_stt_exec_level_t (exec.c checks it):
 * when the executor publishes in the table, its levels live there. */
typedef struct sstm_xlevel {
  _Atomic uint64_t submitted, completed, preemptions, promotions, aborts;
  _Atomic uint64_t queue_ns, run_ns, paused_ns, turnaround_ns, turnaround_max_ns;
  _Atomic uint64_t in_flight; /* accepted and not ended */
  uint64_t pad;
} sstm_xlevel_t;

struct sstm_exec {
  sstm_exec_config_t cfg; /* effective */
  unsigned nworkers, ncontexts;
  sstm_xworker_t *workers;
  sstm_xctx_t *contexts;
  sstm_xq_t q;           /* its lock guards the fields marked (q) */
  sstm_xq_node_t *free;  /* (q) free contexts */
  unsigned nfree;        /* (q) */
  unsigned free_waiters; /* (q) submitters waiting for a context */
  unsigned free_leaving; /* (q) submitters that waited, took a context, not yet returned */
  /* Priority-graded admission (cfg.reserve_pct): a request of priority p
   * is admitted only while nfree > hold[p]; hold[levels - 1] is 0 and hold
   * does not increase with p. Set at creation, read under (q). */
  unsigned hold[SSTM_EXEC_MAX_LEVELS];
  unsigned idle; /* (q) workers asleep or about to sleep */
  /* (q) Of the idle workers, those claimed: woken for an entry queued
   * (a submission, a paused context) and not yet back at the queue lock,
   * where each pops. A push wakes a worker only while idle > waking;
   * otherwise a submission asks a running worker (executor.md, "two
   * submissions and one sleeper"). waking <= idle. */
  unsigned waking;
  uint64_t pending; /* (q) accepted and not ended */
  bool stopping;    /* (q) sstm_exec_destroy() has begun */
  /* Futex words, bumped under the lock by whoever changes what a waiter
   * waits for (a context freed / work queued or the drain over). */
  _Atomic uint64_t free_gen, work_gen;
  /* The levels' statistics: the state table's (stt->level) when this
   * executor publishes there, else lv_own. */
  sstm_xlevel_t *lv;
  sstm_xlevel_t lv_own[SSTM_EXEC_MAX_LEVELS];
  struct sstm_stt_exec *stt; /* the table's executor area, or NULL */
  _Atomic unsigned started;  /* workers that have set their tid */
  /* Per birth level, a moving average of the run time of the last attempt
   * of each request that ended (its committed attempt, almost always):
   * INHERIT's estimate of what a paused attempt has left. Relaxed loads
   * and stores, no read-modify-write: concurrent ends may lose an update,
   * which an estimate can afford. */
  _Atomic uint64_t attempt_avg_ns[SSTM_EXEC_MAX_LEVELS];
};

/* ---- preempt.c ---- */
/* Install the process's preemption signal handler (once, shared by every
 * executor), find the code where preemption is refused and set the
 * engine's paused-conflict rule, which executors alive together share. 0
 * or an SSTM_E* code with sstm_last_error set (SSTM_EBUSY: another rule in
 * use). */
int sstm__xp_global_init(sstm_exec_paused_conflict_t rule);
void sstm__xp_global_fini(void);
/* On a worker at its start: create its timers (tick, fallback) as the
 * configuration asks. 0 or SSTM_ENOMEM. */
int sstm__xp_worker_init(sstm_xworker_t *w);
void sstm__xp_worker_fini(sstm_xworker_t *w);
/* Ask worker w to preempt its transaction (the mode of w->ex). Called by a
 * submitter after it set w->kicked, without the queue lock. */
void sstm__xp_kick(sstm_xworker_t *w);
/* Set the polled preemption request of the transaction w runs, if any,
 * whatever w's mode: w switches at its next preemption point if a request
 * above its transaction still waits then. Any thread, lock-free. */
void sstm__xp_nudge(sstm_xworker_t *w);
/* On worker w's own thread, before it looks at the queue for itself (the
 * preemption check, a context leaving the worker) and before it clears
 * w->kicked: the fallback signal of an earlier kick is no longer needed;
 * disarm it if it is armed (a timer_settime, only when it is). */
void sstm__xp_fallback_cancel(sstm_xworker_t *w);
/* Test seam (tests/internal/exec_fallback.c): whether w's fallback timer
 * is armed now, as the kernel says (timer_gettime). Any thread; false for
 * a worker without one. */
bool sstm__xp_test_fallback_armed(sstm_xworker_t *w);
/* Test seam (tests/internal/exec_fallback.c): when set, a polled kick calls
 * it on the kicking thread once it has armed w's fallback timer and before
 * it publishes ARMED (between (K3) and (K4), preempt.c), so that a test can
 * let the timer fire inside that window. Set and cleared while no kick
 * runs. */
extern _Atomic(void (*)(sstm_xworker_t *w)) sstm__xp_test_armed;
/* Lower w->want to prio (an atomic minimum). Any thread. */
void sstm__xp_want(sstm_xworker_t *w, int prio);
/* The calling worker's record, NULL on other threads. */
sstm_xworker_t *sstm__xp_self(void);
void sstm__xp_set_self(sstm_xworker_t *w);
/* Where the signal handler refuses: a short text for sstm_exec_describe. */
const char *sstm__xp_facility(const struct sstm_exec *ex);

/* ---- exec.c ---- */
/* Test seam (tests/internal/exec_ask.c): when not NULL, called by a worker
 * right after it took a context from the queue and released the queue
 * lock, before it starts the context. relaxed: set and cleared while the
 * executor under test is idle; the test synchronizes with its own calls. */
extern _Atomic(void (*)(void)) sstm__x_test_taken;
/* Test seam (tests/internal/exec_destroy.c): when not NULL, called by a
 * submitter that waited for a context, right after its futex wait
 * returned and before it takes the queue lock again. relaxed, as above. */
extern _Atomic(void (*)(void)) sstm__x_test_woken;
/* Test seam (tests/internal/exec_ask.c): when not NULL, called by a worker
 * whose futex wait for work returned, before it takes the queue lock again
 * (it still counts as idle). relaxed, as above. */
extern _Atomic(void (*)(void)) sstm__x_test_idle_woken;
/* Test seam (tests/internal/exec_ask.c): when not NULL, called by a worker
 * whose context has just paused (its check took the entry it switched
 * for), before it takes the queue lock to queue the paused context again
 * (run_ctx). relaxed, as above. */
extern _Atomic(void (*)(void)) sstm__x_test_paused;
/* Test seam (tests/internal/exec_destroy.c): when not NULL, called by a
 * submitter that waited for a context and took one, right after it dropped
 * the queue lock and before it asks a worker to preempt. relaxed, as
 * above. */
extern _Atomic(void (*)(void)) sstm__x_test_queued;
/* The preemption check: on a worker, in thread context, on the running
 * context's stack. Pauses the running transaction if a higher priority
 * waits, returns when it is resumed (maybe on another worker) or at once. */
void sstm__x_preemption_check(void);
/* The engine's SSTM_EXEC_AT_BLOCKED: the running transaction met a lock of
 * the paused one on `blocker`. Under HANDOVER (the engine asks only for a
 * blocker of higher priority) switch it out, unconditionally, so the
 * paused one, queued above it, can run. Under INHERIT decide (exec.c,
 * yield_decide) and, if so, switch it out with the paused one taken from
 * the queue to run next on this worker; else return at once (the engine
 * takes the paused one over). */
void sstm__x_yield_to_paused(sstm_desc_t *blocker);
/* INHERIT's rule (exec.c, yield_decide), on numbers: does a running
 * transaction of priority c_prio whose attempt has run e_c ns give its
 * worker to a paused one of priority h_prio whose attempt ran e_h ns, its
 * level's committed attempts averaging avg_h ns? Pure; for the tests. */
bool sstm__x_inherit_decide(unsigned h_prio, uint64_t e_h, uint64_t avg_h, unsigned c_prio,
                            uint64_t e_c);
/* INHERIT's inputs, as yield_decide gathers them for a running context c
 * blocked by a paused context h: their requests (which is which, for a
 * test), their current priorities, the run time of h's attempt when it was
 * paused (e_h), its level's average committed attempt (avg_h), and the run
 * time of c's attempt so far (e_c), in ns. */
typedef struct sstm_x_inherit_in {
  const sstm_exec_req_t *h_req, *c_req;
  unsigned h_prio, c_prio;
  uint64_t e_h, avg_h, e_c;
} sstm_x_inherit_in_t;
/* Test seam (tests/internal/exec_inherit_run.c): when not NULL, called by
 * yield_decide with its inputs, which it may replace, before the rule
 * decides on them; so that a test chooses the run times instead of making
 * them with wall-clock margins. Called under the queue lock, on the worker:
 * it must not call into the executor. relaxed: set and cleared while the
 * executor under test is idle; the test synchronizes with its own calls. */
extern _Atomic(void (*)(sstm_x_inherit_in_t *)) sstm__x_test_inherit_in;

#endif /* SSTM_EXEC_INTERNAL_H */
