/* SPDX-License-Identifier: MIT */
/* The preemptive priority executor (include/schedstm/exec.h): lifecycle,
 * submission with backpressure, the workers' scheduling loop, the request
 * lifecycle on its context, the preemption check and dynamic priority
 * ([Silvestri17], Sections III-A and III-C). The signal side is preempt.c;
 * the design and its safety argument are docs/design/executor.md.
 *
 * Locking: one mutex (the queue's, q.lock) guards the queue, the free
 * contexts, the counts of waiters and sleepers, `pending` and `stopping`.
 * A submission takes it once (a context and its queueing), a worker once
 * per pop and once per release. Nothing else blocks but the futex waits
 * of submitters without a free context and of workers without work.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <schedstm/config.h>
#include <schedstm/statetab.h>
#include <schedstm/tx.h>

#include "exec/exec_internal.h"
#include "iface/exec_services.h"
#include "os/os.h"

/* The levels' statistics live in the state table when it is published
 * (sstm_xlevel_t): the same fields at the same places. */
#define SAME_FIELD(f)                                                                              \
  _Static_assert(offsetof(sstm_xlevel_t, f) == offsetof(sstm_stt_exec_level_t, f) &&               \
                     sizeof(((sstm_xlevel_t *)0)->f) == sizeof(((sstm_stt_exec_level_t *)0)->f),   \
                 "sstm_xlevel_t." #f " as in the state table")
SAME_FIELD(submitted);
SAME_FIELD(completed);
SAME_FIELD(preemptions);
SAME_FIELD(promotions);
SAME_FIELD(aborts);
SAME_FIELD(queue_ns);
SAME_FIELD(run_ns);
SAME_FIELD(paused_ns);
SAME_FIELD(turnaround_ns);
SAME_FIELD(turnaround_max_ns);
SAME_FIELD(in_flight);
#undef SAME_FIELD
_Static_assert(sizeof(sstm_xlevel_t) == sizeof(sstm_stt_exec_level_t) &&
                   _Alignof(_Atomic uint64_t) == _Alignof(uint64_t),
               "sstm_xlevel_t is the state table's level");
_Static_assert(SSTM_STT_EXEC_LEVELS == SSTM_EXEC_MAX_LEVELS, "a table slot per level");

/* Relaxed stores into the state table: readers get per-field values
 * (schedstm/statetab.h, "Writing"). */
#define STT_PUT(field, v) __atomic_store_n(&(field), (v), __ATOMIC_RELAXED)

/* ---- futexes on the low half of a 64-bit generation word ---- */

static void fx_wait(_Atomic uint64_t *w, uint64_t seen) { sstm__futex_wait(w, (uint32_t)seen, 0); }
static void fx_wake(_Atomic uint64_t *w, int n) {
  syscall(SYS_futex, (uint32_t *)w, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}
/* Under the lock: a new generation, so that a waiter that read the old one
 * before it dropped the lock does not sleep (the kernel compares the low
 * half). release: pairs with the waiter's acquire load, so that what was
 * changed under the lock is visible to a waiter that re-reads without it
 * (it re-takes the lock anyway; this only keeps the word's history sane). */
static void gen_bump(_Atomic uint64_t *w) { atomic_fetch_add_explicit(w, 1, memory_order_release); }
static uint64_t gen_read(_Atomic uint64_t *w) {
  return atomic_load_explicit(w, memory_order_acquire);
}

/* Under the lock, after a push: whether an idle worker is left that no
 * other push has woken (ex->waking); if so it is claimed for this push and
 * the work generation bumped, and the caller wakes one sleeper after its
 * unlock. A worker woken but not yet back at the lock still counts as idle;
 * it pops one entry when it is back, so a second push that found it idle
 * and woke it again would be served by nobody until some worker ends or
 * pauses its transaction. Claimed, it is not counted twice: the second
 * push asks a running worker instead (submit). A worker that comes back
 * from its wait for another reason (another wake, the drain, a spurious
 * return) drops a claim too: it pops as well.
 * A claim stands for an entry still queued: a running worker that pops (at
 * its request's end, or in a preemption check) may take the entry a
 * sleeper was claimed for, and that sleeper then comes back to find the
 * queue one entry shorter. So the claims beyond the entries queued before
 * this push are dropped first: the sleepers they name are on their way
 * back with nothing left for them but this entry, and this push claims one
 * of them again instead of asking a running worker to pause for it
 * (executor.md, "Two submissions and one sleeper"). Dropping one too many
 * costs a wake at most (the old double wake), never an entry unserved. */
static bool claim_sleeper(struct sstm_exec *ex) {
  uint64_t older = ex->q.count - 1; /* this push's entry is counted */
  if (ex->waking > older) ex->waking = (unsigned)older;
  if (ex->idle <= ex->waking) return false;
  ex->waking++;
  gen_bump(&ex->work_gen);
  return true;
}

/* ---- configuration ---- */

int sstm_exec_config_default_sized(sstm_exec_config_t *cfg, size_t size) {
  if (!cfg || size != sizeof(sstm_exec_config_t)) {
    sstm__set_error("sstm_exec_config_default_sized: %s",
                    cfg ? "unknown size of sstm_exec_config_t" : "cfg is NULL");
    return SSTM_EINVAL;
  }
  memset(cfg, 0, size);
  cfg->size = size;
  cfg->workers = 0;
  cfg->contexts = SSTM_EXEC_CONTEXTS_DEFAULT;
  cfg->stack_kb = SSTM_EXEC_STACK_KB_DEFAULT;
  cfg->levels = SSTM_EXEC_LEVELS_DEFAULT;
  cfg->preempt = SSTM_EXEC_PREEMPT_SIGNAL;
  cfg->poll_fallback_us = SSTM_EXEC_POLL_FALLBACK_US_DEFAULT;
  cfg->tick_us = 0;
  cfg->c_max = SSTM_EXEC_CMAX_DEFAULT;
  cfg->lazy_promotion = false;
  cfg->use_env = true;
  cfg->paused_conflict = SSTM_EXEC_PAUSED_CONFLICT_TAKEOVER;
  cfg->reserve_pct = SSTM_EXEC_RESERVE_PCT_DEFAULT;
  cfg->holder_level = SSTM_EXEC_HOLDER_LEVEL_DEFAULT;
  cfg->waiter_first = SSTM_EXEC_WAITER_FIRST_DEFAULT;
  return 0;
}

const char *sstm_exec_preempt_name(sstm_exec_preempt_t m) {
  switch (m) {
  case SSTM_EXEC_PREEMPT_NONE: return "none";
  case SSTM_EXEC_PREEMPT_SIGNAL: return "signal";
  case SSTM_EXEC_PREEMPT_POLL: return "poll";
  case SSTM_EXEC_PREEMPT_CHECK_ONLY: return "check-only";
  }
  return "?";
}

static int check_cfg(const sstm_exec_config_t *c) {
#define RANGE(f, lo, hi)                                                                           \
  if (c->f < (lo) || c->f > (hi)) {                                                                \
    sstm__set_error("sstm_exec_create: " #f " %u out of range %u..%u", (unsigned)c->f,             \
                    (unsigned)(lo), (unsigned)(hi));                                               \
    return SSTM_EINVAL;                                                                            \
  }
  if (c->workers > SSTM_EXEC_MAX_WORKERS) {
    sstm__set_error("sstm_exec_create: workers %u out of range 0..%u", c->workers,
                    SSTM_EXEC_MAX_WORKERS);
    return SSTM_EINVAL;
  }
  RANGE(contexts, 1u, SSTM_EXEC_MAX_CONTEXTS);
  RANGE(stack_kb, 16u, 65536u);
  RANGE(levels, 1u, SSTM_EXEC_MAX_LEVELS);
  RANGE(poll_fallback_us, 1u, 1000000u);
  if (c->reserve_pct > SSTM_EXEC_RESERVE_PCT_MAX) {
    sstm__set_error("sstm_exec_create: reserve_pct %u out of range 0..%u", c->reserve_pct,
                    SSTM_EXEC_RESERVE_PCT_MAX);
    return SSTM_EINVAL;
  }
  if (c->holder_level != 0 && c->holder_level >= c->levels) {
    sstm__set_error("sstm_exec_create: holder_level %u: 0 (off) or a level 1..%u (levels %u)",
                    c->holder_level, c->levels - 1, c->levels);
    return SSTM_EINVAL;
  }
  if (c->c_max > 1000000u) {
    sstm__set_error("sstm_exec_create: c_max %u out of range 0..1000000", c->c_max);
    return SSTM_EINVAL;
  }
#undef RANGE
  if ((unsigned)c->preempt > SSTM_EXEC_PREEMPT_CHECK_ONLY) {
    sstm__set_error("sstm_exec_create: preempt %d: valid values are SSTM_EXEC_PREEMPT_NONE, "
                    "_SIGNAL, _POLL and _CHECK_ONLY",
                    (int)c->preempt);
    return SSTM_EINVAL;
  }
  if ((unsigned)c->paused_conflict > SSTM_EXEC_PAUSED_CONFLICT_INHERIT) {
    sstm__set_error("sstm_exec_create: paused_conflict %d: valid values are "
                    "SSTM_EXEC_PAUSED_CONFLICT_TAKEOVER, _HANDOVER and _INHERIT",
                    (int)c->paused_conflict);
    return SSTM_EINVAL;
  }
  if (c->preempt == SSTM_EXEC_PREEMPT_CHECK_ONLY && c->tick_us == 0) {
    sstm__set_error("sstm_exec_create: preempt check-only needs a periodic tick (tick_us "
                    "10..1000000): without one nothing is ever checked");
    return SSTM_EINVAL;
  }
  if (c->tick_us != 0 && (c->tick_us < 10 || c->tick_us > 1000000)) {
    sstm__set_error("sstm_exec_create: tick_us %u: 0 (off) or 10..1000000", c->tick_us);
    return SSTM_EINVAL;
  }
  return 0;
}

/* ---- the request on its context ---- */

_Atomic(void (*)(void)) sstm__x_test_taken;
_Atomic(void (*)(void)) sstm__x_test_woken;
_Atomic(void (*)(void)) sstm__x_test_queued;
_Atomic(void (*)(void)) sstm__x_test_idle_woken;
_Atomic(void (*)(void)) sstm__x_test_paused;

/* An ask (a kick or a nudge, recorded in w->want) may reach a worker
 * after it took its context under the queue lock and before the
 * context's attempt runs: the signal then finds no running context, and
 * a polled flag set on the descriptor is overwritten when the attempt
 * begins (exec_services.h: a request between attempts may be dropped).
 * The submitter chose this worker under the lock after it took the
 * context (cur_prio), so the ask is in `want`; here, with the attempt
 * running, the context sets its own polled flag when a request above its
 * priority still waits, and its next preemption point checks. On the
 * worker's thread. */
static void reask(sstm_xworker_t *w, sstm_xctx_t *c) {
  /* acquire: pairs with sstm__xp_want's release, as in the check. An ask
   * whose `want` store this load misses came after the attempt began (the
   * submitter stores want before it signals or flags, and the attempt's
   * begin precedes this load): its signal or flag then finds the attempt
   * running; the polled mode's fallback signal covers a flag that the
   * begin's store overtook. */
  int want = atomic_load_explicit(&w->want, memory_order_acquire);
  if (want != INT_MAX && sstm__xq_top(&c->ex->q) > (int)c->prio) sstm__exec_request(c->desc);
}

/* The transaction body: counts the attempt (context memory, not
 * transactional: an aborted attempt's count stays), re-asks a missed
 * preemption, then runs the user's. */
static void body(void *p) {
  sstm_xctx_t *c = p;
  c->attempts++;
  /* The attempt's work is measured from here (INHERIT's comparison). On
   * the worker that runs c: run_ns and t_run are its own. */
  c->attempt_run0 = c->run_ns + (sstm__now_ns() - c->t_run);
  reask(c->worker, c);
  c->req.fn(c->req.arg);
}

/* Under the queue lock: worker w has taken context c (not yet running).
 * Publish its priority for the submitters' victim choice and forget the
 * asks of what it ran before. relaxed: the lock orders these against the
 * submitters, which read cur_prio and kicked under it and store want
 * after it. */
static void took(sstm_xworker_t *w, const sstm_xctx_t *c) {
  atomic_store_explicit(&w->kicked, 0, memory_order_relaxed);
  atomic_store_explicit(&w->want, INT_MAX, memory_order_relaxed);
  atomic_store_explicit(&w->cur_prio, (int)c->prio, memory_order_relaxed);
}

/* Future words: a tag in the high half says a submission set it up. */
#define FUT_TAG 0x5e7ec000ull
#define FUT_PENDING (FUT_TAG << 32)
#define FUT_DONE ((FUT_TAG << 32) | 1u)

static _Atomic uint64_t *fut_state(const sstm_exec_future_t *f) {
  return (_Atomic uint64_t *)(uintptr_t)&f->opaque[0];
}

/* The request's code (its body, its done callback) must leave the
 * context's descriptor attached: the worker detaches it when the context
 * switches out. A callback that detached it (sstm_thread_exit() detaches a
 * descriptor of sstm_desc_create(), sstm_desc_detach()) or put another
 * one in its place gets the context's back: that descriptor is then left
 * detached, and the executor goes on. A body that detached it inside its
 * transaction and returned (sstm_run() gave SSTM_ENOTHREAD, which the
 * request reports) left that transaction suspended with its restart point
 * in sstm_run()'s frame, which has returned: it is ended here without that
 * jump, as at a thread's end (sstm__exec_end_left_tx: cancelled, or
 * committed if it asked to be irrevocable). Only a descriptor that another
 * thread holds cannot be had back: the process stops with a message. */
static void keep_desc(sstm_xctx_t *c, const char *who) {
  if (sstm_self() == c->desc) return;
  if (sstm_self() != NULL) (void)sstm_desc_detach();
  if (sstm_desc_attach(c->desc) == 0) {
    if (sstm_in_tx()) (void)sstm__exec_end_left_tx();
    if (!sstm_in_tx()) return;
  }
  fprintf(stderr,
          "schedstm: sstm_exec: a request's %s detached its context's descriptor "
          "(sstm_desc_detach, sstm_thread_exit)%s; the executor cannot go on\n",
          who,
          sstm_self() == c->desc ? " inside its transaction" : " and gave it to another thread");
  abort();
}

/* A context's entry: runs its request to the end (preempted and resumed
 * on any worker meanwhile), reports the result, and hands the context
 * back to the worker that runs it then. Never returns. */
static void ctx_main(void *p) {
  sstm_xctx_t *c = p;
  sstm_attr_t a = {.priority = (int)c->birth, .tag = c->req.tag, .read_only = c->req.read_only};
  sstm__exec_nopreempt_clear(); /* none left open by the context's last request */
  int rc = sstm_run(&a, body, c);
  keep_desc(c, "body");
  c->rc = rc;
  if (c->req.done) {
    c->req.done(c->req.done_arg, rc);
    keep_desc(c, "done callback");
  }
  if (c->req.future) {
    sstm_exec_future_t *f = c->req.future;
    f->opaque[1] = (uint64_t)(int64_t)rc;
    /* release: the result (and the body's effects) before the state the
     * waiter acquires. */
    atomic_store_explicit(fut_state(f), FUT_DONE, memory_order_release);
    fx_wake(fut_state(f), INT_MAX);
  }
  c->state = XC_DONE;
  /* c->worker is the worker running the context now, whichever it is. */
  sstm__ctx_leave(&c->regs, &c->worker->sched);
}

/* ---- the preemption check ([Silvestri17]'s preemption_check) ---- */

/* Switch the running context c out to w's scheduler, which queues it hot
 * at c->prio; returns when a worker resumes it. */
static void pause_current(sstm_xworker_t *w, sstm_xctx_t *c) {
  atomic_fetch_add_explicit(&w->switches, 1, memory_order_relaxed);
  c->state = XC_PAUSED;
  sstm__ctx_switch(&c->regs, &w->sched);
  /* Resumed by c->worker (maybe another thread): back to the interrupted
   * code. w is stale from here on. */
}

/* Under the lock, for a check whose transaction runs at prio with top
 * (above prio) the queue's highest level: whether it switches. A check
 * from a tick alone (want INT_MAX) switches for anything above it. A check
 * asked for by requests (want their lowest priority) switches for one of
 * them or a higher one, and for any request still waiting (a cold entry)
 * above its transaction; it declines only when what waits above it is
 * paused transactions below `want` (promoted while paused, say, when
 * another worker took the request that asked: switching to one would only
 * pause this one as well). Why not `want` alone: the request this worker
 * was asked for is not always the one left for it. A sleeper woken for
 * request A and claimed by it pops the higher of A and a request B that
 * asked this worker (claim_sleeper); when A is the lower one, B is gone and
 * A waits, below `want`. A check that loaded `want` before a nudge lowered
 * it finds the nudge's request here all the same (executor.md, "Two
 * submissions and one sleeper"). */
static bool asked_for(const sstm_xq_t *q, int top, int want, int prio) {
  return want == INT_MAX || top >= want || sstm__xq_top_cold(q) > prio;
}

void sstm__x_preemption_check(void) {
  sstm_xworker_t *w = sstm__xp_self();
  if (!w) return;
  sstm_xctx_t *c = atomic_load_explicit(&w->cur, memory_order_acquire);
  /* This check looks at the queue: an armed fallback signal is not needed
   * any more. Before `kicked` is cleared (preempt.c, W1). */
  sstm__xp_fallback_cancel(w);
  atomic_store_explicit(&w->kicked, 0, memory_order_relaxed);
  /* acquire: pairs with sstm__xp_want's release, so the queue entry of
   * the request that asked is visible to the peek below. Not cleared here:
   * a later check of the same transaction (the poll mode's fallback
   * signal, a standing request) was asked for by the same requests; it is
   * cleared when the worker starts another context. */
  int want = atomic_load_explicit(&w->want, memory_order_acquire);
  if (!c) return;
  /* Only the context's own transaction can be switched out: the worker
   * detaches the context's descriptor when the switch returns. A request
   * code that put a descriptor of its own in its place (a callback may,
   * exec.h) and reached a preemption point of its transaction there is
   * not paused (the worker would detach that descriptor and stop the
   * process); the request stays on the context's descriptor for when it
   * is attached again. */
  if (sstm_self() != c->desc) {
    sstm__exec_request(c->desc);
    return;
  }
  struct sstm_exec *ex = w->ex;
  atomic_fetch_add_explicit(&w->checks, 1, memory_order_relaxed);
  int top = sstm__xq_top(&ex->q);
  if (top <= (int)c->prio) return;
  if (ex->cfg.preempt == SSTM_EXEC_PREEMPT_CHECK_ONLY) {
    /* Ticks without preemption: everything up to here ran as it would
     * have to switch; the switch alone is left out. (Nobody asks in this
     * mode, so `want` is INT_MAX and the tick's check would switch.) */
    atomic_fetch_add_explicit(&w->declined, 1, memory_order_relaxed);
    return;
  }
  /* Pause. Dynamic priority ([Silvestri17], (1)): C_T counts the
   * preemptions; at c_max the transaction goes to the top level, and
   * before that lazy promotion raises it by one. */
  unsigned pmax = ex->cfg.levels - 1, p = c->prio;
  if (ex->cfg.c_max && c->preempts + 1 >= ex->cfg.c_max)
    p = pmax;
  else if (ex->cfg.lazy_promotion && p < pmax)
    p++;
  /* A lock holder is raised to holder_level (its conflicts kill it while
   * it is paused: resumed sooner, it is exposed for less). */
  const bool promoted = p != c->prio;
  bool raised = false;
  if (ex->cfg.holder_level > p && sstm__exec_holds_locks(c->desc)) {
    p = ex->cfg.holder_level;
    raised = true;
  }
  /* Decide under the lock and take the entry this worker switches for:
   * several workers may be asked for one request, and the peeks above
   * may all have seen it; only the one that takes it switches. The
   * others find the level empty here and go on. Where the promotion puts
   * this transaction at the front of the queue ([Silvestri17]'s
   * flattening with a small c_max: above the top entry, or at its level
   * with no hot entry there), nothing is taken: the scheduler pops as
   * before, which resumes this transaction at once. */
  sstm__xq_lock(&ex->q);
  top = sstm__xq_top(&ex->q);
  if (top <= (int)c->prio || !asked_for(&ex->q, top, want, (int)c->prio)) {
    sstm__xq_unlock(&ex->q);
    return;
  }
  /* Raised to or above what waits (and no transaction paused at that
   * level would go first): it would be resumed at once, so it is not
   * paused at all; it runs on at the raised level, where the submitters
   * (cur_prio, under this lock) no longer ask it for requests at or below
   * it. The request waits for a worker. */
  if (raised && ((int)p > top || ((int)p == top && !sstm__xq_has_hot(&ex->q, (unsigned)top)))) {
    c->prio = p;
    atomic_store_explicit(&w->cur_prio, (int)p, memory_order_relaxed);
    sstm__xq_unlock(&ex->q);
    sstm__exec_set_priority(c->desc, (int)p);
    atomic_fetch_add_explicit(&w->holder_kept, 1, memory_order_relaxed);
    return;
  }
  sstm_xq_node_t *next = NULL;
  if ((int)p < top || ((int)p == top && sstm__xq_has_hot(&ex->q, (unsigned)top))) {
    next = sstm__xq_pop(&ex->q, NULL, NULL);
    took(w, (sstm_xctx_t *)next);
  }
  sstm__xq_unlock(&ex->q);
  w->next = next;
  c->preempts++;
  sstm_xlevel_t *lv = &ex->lv[c->birth];
  if (promoted) atomic_fetch_add_explicit(&lv->promotions, 1, memory_order_relaxed);
  if (raised) atomic_fetch_add_explicit(&w->holder_raises, 1, memory_order_relaxed);
  if (p != c->prio) {
    c->prio = p;
    sstm__exec_set_priority(c->desc, (int)p);
  }
  atomic_fetch_add_explicit(&lv->preemptions, 1, memory_order_relaxed);
  pause_current(w, c);
}

/* INHERIT's decision, under the queue lock, for the running context c
 * (its attempt's work so far e_c) blocked by the paused context h: whether
 * c gives its worker to h. Whoever has done more work keeps it, so that a
 * kill throws away the smaller of the two attempts: h's work is lost if it
 * is taken over, c's wait is what h has left. A paused transaction of
 * higher priority always gets the worker (as HANDOVER). At the same
 * priority, h gets it if its attempt has run longer than c's (so that the
 * reverse conflict, h resumed and meeting c's lock, is decided the other
 * way and the two cannot hand the worker back and forth). At a lower
 * priority, c is the more urgent one and waits for h only if h has run
 * longer and is at least half-way through: its run so far at least what
 * remains of its level's average committed attempt, so c waits at most
 * as long as h's kill would cost h again. The wait is bounded anyway:
 * c is resumed when h ends or is paused again, and then takes h over
 * (the engine offers a conflict once). */
bool sstm__x_inherit_decide(unsigned h_prio, uint64_t e_h, uint64_t avg_h, unsigned c_prio,
                            uint64_t e_c) {
  if (h_prio > c_prio) return true;
  if (e_h <= e_c) return false;
  if (h_prio == c_prio) return true;
  uint64_t left = avg_h > e_h ? avg_h - e_h : 0;
  return left <= e_h;
}

_Atomic(void (*)(sstm_x_inherit_in_t *)) sstm__x_test_inherit_in;

static bool yield_decide(struct sstm_exec *ex, const sstm_xctx_t *c, uint64_t e_c,
                         const sstm_xctx_t *h) {
  sstm_x_inherit_in_t in = {
      .h_req = &h->req,
      .c_req = &c->req,
      .h_prio = h->prio,
      .c_prio = c->prio,
      .e_h = h->run_ns - h->attempt_run0,
      .avg_h = atomic_load_explicit(&ex->attempt_avg_ns[h->birth], memory_order_relaxed),
      .e_c = e_c,
  };
  void (*seam)(sstm_x_inherit_in_t *) =
      atomic_load_explicit(&sstm__x_test_inherit_in, memory_order_relaxed);
  if (seam) seam(&in);
  return sstm__x_inherit_decide(in.h_prio, in.e_h, in.avg_h, in.c_prio, in.e_c);
}

/* The running transaction met the lock of a paused one (the engine's
 * SSTM_EXEC_AT_BLOCKED): under HANDOVER, where the engine asks only when
 * the paused one has the higher priority, give the worker up, so that the
 * paused one (queued hot, above this one) can run and release it. Under
 * INHERIT, decide (yield_decide) and take the paused one from the queue
 * for this worker to run next, with this one's priority if that is
 * higher: priority inheritance, so that this one, queued hot at its
 * level, does not preempt it back. Not a preemption for the statistics
 * and the promotions: nothing more urgent arrived. */
void sstm__x_yield_to_paused(sstm_desc_t *blocker) {
  sstm_xworker_t *w = sstm__xp_self();
  sstm_xctx_t *c = w ? atomic_load_explicit(&w->cur, memory_order_acquire) : NULL;
  /* Not a transaction of the context's own descriptor (as in the check):
   * the engine takes the paused one over. */
  if (!c || sstm_self() != c->desc) return;
  struct sstm_exec *ex = w->ex;
  if (ex->cfg.paused_conflict != SSTM_EXEC_PAUSED_CONFLICT_INHERIT) {
    atomic_fetch_add_explicit(&w->handovers, 1, memory_order_relaxed);
    pause_current(w, c);
    return;
  }
  /* The blocker's context, if it is one of this executor's (else a
   * transaction paused elsewhere: the engine takes it over). A scan, on a
   * conflict only; contexts and their descriptors never change. */
  sstm_xctx_t *h = NULL;
  for (unsigned i = 0; i < ex->ncontexts && !h; i++)
    if (ex->contexts[i].desc == blocker) h = &ex->contexts[i];
  uint64_t e_c = c->run_ns + (sstm__now_ns() - c->t_run) - c->attempt_run0;
  bool yield = false;
  unsigned was = 0;
  if (h) {
    sstm__xq_lock(&ex->q);
    /* Only an h in a hot list is ours to decide: its fields were written
     * by the worker that paused it, before it pushed h under this lock,
     * and nobody writes them while it is there. An h not there runs
     * again, or is between its pause and its push: its fields are not
     * read (the engine looks at the lock again). */
    int lv = sstm__xq_hot_level(&ex->q, &h->node);
    if (lv >= 0 && yield_decide(ex, c, e_c, h) &&
        sstm__xq_remove(&ex->q, &h->node, (unsigned)lv, true)) {
      yield = true;
      was = h->prio;
      if (c->prio > h->prio) h->prio = c->prio;
      /* Not took(): the asks this worker has (want, kicked) are for
       * requests above c, and h, resumed, re-asks from them (run_ctx). */
      atomic_store_explicit(&w->cur_prio, (int)h->prio, memory_order_relaxed);
    }
    sstm__xq_unlock(&ex->q);
  }
  if (!yield) {
    atomic_fetch_add_explicit(&w->passed, 1, memory_order_relaxed);
    return;
  }
  /* h is detached and taken: nobody else touches it until it runs. */
  if (h->prio != was) {
    sstm__exec_set_priority(h->desc, (int)h->prio);
    atomic_fetch_add_explicit(&w->inherits, 1, memory_order_relaxed);
  }
  atomic_fetch_add_explicit(&w->handovers, 1, memory_order_relaxed);
  w->next = &h->node;
  pause_current(w, c);
}

/* ---- workers ---- */

static void release_ctx(struct sstm_exec *ex, sstm_xctx_t *c) {
  uint64_t now = sstm__now_ns();
  sstm_xlevel_t *lv = &ex->lv[c->birth];
  uint64_t ta = now - c->t_submit;
  if (c->attempts) {
    /* The last attempt's run time into the level's average (weight 1/8). */
    uint64_t last = c->run_ns - c->attempt_run0;
    _Atomic uint64_t *avg = &ex->attempt_avg_ns[c->birth];
    uint64_t a = atomic_load_explicit(avg, memory_order_relaxed);
    atomic_store_explicit(avg, a ? a - a / 8 + last / 8 : last, memory_order_relaxed);
  }
  atomic_fetch_sub_explicit(&lv->in_flight, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&lv->aborts, c->attempts ? c->attempts - 1 : 0, memory_order_relaxed);
  atomic_fetch_add_explicit(&lv->run_ns, c->run_ns, memory_order_relaxed);
  atomic_fetch_add_explicit(&lv->paused_ns, c->paused_ns, memory_order_relaxed);
  atomic_fetch_add_explicit(&lv->turnaround_ns, ta, memory_order_relaxed);
  uint64_t mx = atomic_load_explicit(&lv->turnaround_max_ns, memory_order_relaxed);
  while (ta > mx &&
         !atomic_compare_exchange_weak_explicit(&lv->turnaround_max_ns, &mx, ta,
                                                memory_order_relaxed, memory_order_relaxed)) {
  }
  sstm__xq_lock(&ex->q);
  c->state = XC_FREE;
  c->node.next = ex->free;
  ex->free = &c->node;
  ex->nfree++;
  ex->pending--;
  if (ex->stt) STT_PUT(ex->stt->contexts_busy, ex->ncontexts - ex->nfree);
  bool wake_sub = ex->free_waiters > 0, drained = ex->stopping && ex->pending == 0;
  if (wake_sub) gen_bump(&ex->free_gen);
  if (drained) gen_bump(&ex->work_gen);
  sstm__xq_unlock(&ex->q);
  /* With graded admission the one waiter woken could be a low-priority
   * submitter that still may not take the context while a higher one could:
   * wake them all, each looks again under the lock. */
  if (wake_sub) fx_wake(&ex->free_gen, ex->hold[0] ? INT_MAX : 1);
  if (drained) fx_wake(&ex->work_gen, INT_MAX);
  /* Last, release: pairs with the acquire load of `completed` in
   * sstm_exec_stats_sized(), so a reader that counts this request as ended
   * also sees everything its end changed: its aborts and times in the sums,
   * and the busy contexts of the state table, stored under the lock above.
   * Relaxed, or an increment before the lock, would let a reader see
   * completed == n with the n-th request's aborts missing or its context
   * still counted busy. (Nothing here waits for `completed`: a drain waits
   * for `pending`, a submitter for a free context.) */
  atomic_fetch_add_explicit(&lv->completed, 1, memory_order_release);
}

/* Run context c on worker w until it ends or is preempted. */
static void run_ctx(sstm_xworker_t *w, sstm_xctx_t *c) {
  struct sstm_exec *ex = w->ex;
  uint64_t now = sstm__now_ns();
  const bool resumed = c->started;
  if (!resumed) {
    c->started = true;
    atomic_fetch_add_explicit(&ex->lv[c->birth].queue_ns, now - c->t_submit, memory_order_relaxed);
    if (c->ran) {
      if (sstm__ctx_reset(&c->regs, ctx_main, c) != 0) abort();
    } else if (sstm__ctx_init(&c->regs, c->stack.lo, c->stack.size, ctx_main, c) != 0) {
      abort(); /* a stack of at least 16 KiB and our own entry: cannot fail */
    }
    c->ran = true;
  } else {
    c->paused_ns += now - c->t_pause;
  }
  c->t_run = now;
  c->state = XC_RUNNING;
  c->worker = w;
  if (sstm_desc_attach(c->desc) != 0) abort(); /* detached by us; cannot fail */
  /* cur_prio was published when the context was taken (took()).
   * release: the handler and the submitters that read cur see the
   * context's fields set above. */
  atomic_store_explicit(&w->cur, c, memory_order_release);
  /* A paused transaction resumes inside its attempt, where body() does not
   * run again: re-ask here (a cold one re-asks in body()). */
  if (resumed) reask(w, c);
  sstm__ctx_switch(&w->sched, &c->regs);
  atomic_store_explicit(&w->cur, NULL, memory_order_relaxed);
  /* A check that switched for an entry it took has published that entry's
   * priority already (took()), and disarmed the fallback before. Else the
   * worker pops next, which looks at the queue: the fallback signal of a
   * kick that came meanwhile is not needed (preempt.c, W1; before took()
   * clears `kicked`). */
  if (!w->next) {
    atomic_store_explicit(&w->cur_prio, -1, memory_order_relaxed);
    sstm__xp_fallback_cancel(w);
  }
  now = sstm__now_ns();
  c->run_ns += now - c->t_run;
  sstm_desc_t *d = sstm_desc_detach();
  if (d != c->desc) abort();
  if (c->state == XC_PAUSED) {
    /* Detached inside its transaction: the engine treats it as paused
     * (a conflict with it is decided against it, iface/exec_services.h).
     * A request left on it is stale now. */
    sstm__exec_cancel(d);
    c->t_pause = now;
    void (*seam)(void) = atomic_load_explicit(&sstm__x_test_paused, memory_order_relaxed);
    if (seam) seam();
    sstm__xq_lock(&ex->q);
    sstm__xq_push(&ex->q, &c->node, c->prio, true);
    bool wake = claim_sleeper(ex);
    sstm__xq_unlock(&ex->q);
    if (wake) fx_wake(&ex->work_gen, 1);
  } else {
    release_ctx(ex, c);
  }
}

static void *worker_main(void *p) {
  sstm_xworker_t *w = p;
  struct sstm_exec *ex = w->ex;
  sstm__xp_set_self(w);
  w->tid = sstm__gettid();
  sstm__ctx_init_thread(&w->sched);
  if (sstm__xp_worker_init(w) != 0) w->has_tick = w->has_fallback = false;
  atomic_fetch_add_explicit(&ex->started, 1, memory_order_release);
  fx_wake((_Atomic uint64_t *)&ex->started, 1);
  for (;;) {
    sstm__xq_lock(&ex->q);
    sstm_xq_node_t *n;
    /* Back from a wait, the worker pops in the same critical section in
     * which it stops counting as idle (and drops a claim): no submitter
     * finds it neither idle nor with a context. */
    while (!(n = sstm__xq_pop(&ex->q, NULL, NULL))) {
      if (ex->stopping && ex->pending == 0) break;
      ex->idle++;
      uint64_t g = gen_read(&ex->work_gen);
      sstm__xq_unlock(&ex->q);
      fx_wait(&ex->work_gen, g);
      void (*seam)(void) = atomic_load_explicit(&sstm__x_test_idle_woken, memory_order_relaxed);
      if (seam) seam();
      sstm__xq_lock(&ex->q);
      ex->idle--;
      /* No decision depends on this decrement: without it `waking` would
       * also count workers that are back, and no push would decide
       * otherwise. The claims keep waking >= min(idle, queued): every push
       * (a submission's, a pause's) lowers waking to at most the entries
       * queued before it and then claims one sleeper if idle > waking; a
       * worker goes idle only with the queue empty; one back from its wait
       * pops an entry in this critical section (or finds none and is idle
       * again); other pops only lower `queued`. So a push with fewer
       * entries queued before it than idle workers claims with or without
       * the excess (it lowers the count below idle either way), and one
       * with at least as many finds waking >= idle without the excess, and
       * so with it, and claims nobody. Kept so that `waking` counts the
       * workers claimed and not yet back, which is what it says. */
      if (ex->waking) ex->waking--;
    }
    if (!n) {
      sstm__xq_unlock(&ex->q);
      break;
    }
    took(w, (sstm_xctx_t *)n);
    sstm__xq_unlock(&ex->q);
    void (*seam)(void) = atomic_load_explicit(&sstm__x_test_taken, memory_order_relaxed);
    if (seam) seam();
    run_ctx(w, (sstm_xctx_t *)n);
    /* A preemption check that took the entry it switched for (and
     * published it with took()): run it next (run_ctx has queued the
     * paused context meanwhile). */
    while (w->next) {
      n = w->next;
      w->next = NULL;
      run_ctx(w, (sstm_xctx_t *)n);
    }
  }
  sstm__xp_worker_fini(w);
  sstm__xp_set_self(NULL);
  return NULL;
}

/* ---- create / destroy ---- */

/* Publish the executor in the state table's area when the table is on and
 * no other executor holds it (schedstm/statetab.h, sstm_stt_exec_t): the
 * configuration, zeroed levels, then in_use with release order. Before the
 * workers start, so nothing counts yet; from here on ex->lv is the
 * table's. */
static void stt_publish(struct sstm_exec *ex) {
  sstm_stt_exec_t *a = sstm__exec_stt_claim();
  if (!a) return;
  const sstm_exec_config_t *c = &ex->cfg;
  STT_PUT(a->in_use, 0); /* a holder that ended without unpublishing: not ours */
  for (unsigned l = 0; l < SSTM_STT_EXEC_LEVELS; l++) {
    uint64_t *w = (uint64_t *)(void *)&a->level[l];
    for (size_t i = 0; i < sizeof a->level[l] / sizeof *w; i++)
      STT_PUT(w[i], 0);
  }
  STT_PUT(a->levels, c->levels);
  STT_PUT(a->workers, ex->nworkers);
  STT_PUT(a->contexts, ex->ncontexts);
  STT_PUT(a->contexts_busy, 0);
  STT_PUT(a->preempt, (uint32_t)c->preempt);
  STT_PUT(a->tick_us, c->tick_us);
  STT_PUT(a->c_max, c->c_max);
  STT_PUT(a->lazy, c->lazy_promotion ? 1u : 0u);
  STT_PUT(a->pad0, 0);
  char name[sizeof a->preempt_name] = {0};
  snprintf(name, sizeof name, "%s", sstm_exec_preempt_name(c->preempt));
  for (size_t i = 0; i < sizeof name; i++)
    STT_PUT(a->preempt_name[i], name[i]);
  STT_PUT(a->generation, __atomic_load_n(&a->generation, __ATOMIC_RELAXED) + 1);
  /* release: a reader that loads in_use with acquire and finds 1 sees the
   * fields above (schedstm/statetab.h). */
  __atomic_store_n(&a->in_use, 1u, __ATOMIC_RELEASE);
  ex->stt = a;
  ex->lv = (sstm_xlevel_t *)(void *)a->level;
}

/* After the workers are joined: the counters stay, in_use goes to 0. */
static void stt_unpublish(struct sstm_exec *ex) {
  if (!ex->stt) return;
  STT_PUT(ex->stt->contexts_busy, 0);
  __atomic_store_n(&ex->stt->in_use, 0u, __ATOMIC_RELEASE);
  sstm__exec_stt_release(ex->stt);
  ex->stt = NULL;
  ex->lv = ex->lv_own;
}

static void teardown(struct sstm_exec *ex, unsigned nthreads) {
  sstm__xq_lock(&ex->q);
  ex->stopping = true;
  gen_bump(&ex->work_gen);
  gen_bump(&ex->free_gen);
  sstm__xq_unlock(&ex->q);
  fx_wake(&ex->work_gen, INT_MAX);
  fx_wake(&ex->free_gen, INT_MAX);
  /* The submitters that waited for a context were woken above, but a
   * woken one may not have run since: each takes the lock once more, finds
   * `stopping` and leaves. One that took a context before `stopping` may
   * still be on its way out (it asks the workers to preempt after its
   * unlock). The last of them wakes this wait under the lock, so the
   * executor is not freed under one; before the join, so that the workers
   * they ask are still there. */
  sstm__xq_lock(&ex->q);
  while (ex->free_waiters > 0 || ex->free_leaving > 0) {
    uint64_t g = gen_read(&ex->free_gen);
    sstm__xq_unlock(&ex->q);
    fx_wait(&ex->free_gen, g);
    sstm__xq_lock(&ex->q);
  }
  sstm__xq_unlock(&ex->q);
  for (unsigned i = 0; i < nthreads; i++)
    pthread_join(ex->workers[i].thread, NULL);
  for (unsigned i = 0; i < ex->ncontexts; i++) {
    sstm_xctx_t *c = &ex->contexts[i];
    if (c->desc) sstm_desc_destroy(c->desc);
    if (c->ran) sstm__ctx_destroy(&c->regs);
    sstm__stack_free(&c->stack);
  }
  stt_unpublish(ex);
  sstm__xq_destroy(&ex->q);
  free(ex->contexts);
  free(ex->workers);
  free(ex);
  sstm__xp_global_fini();
}

int sstm_exec_create(const sstm_exec_config_t *cfg, sstm_exec_t **out) {
  if (!out) {
    sstm__set_error("sstm_exec_create: out is NULL");
    return SSTM_EINVAL;
  }
  *out = NULL;
  if (!sstm_initialized()) {
    sstm__set_error("sstm_exec_create: the library is not initialised (sstm_init)");
    return SSTM_ESTATE;
  }
  if (sstm_in_tx()) {
    /* The body may run again, and an abort would not undo the creation:
     * every attempt would leave an executor (threads, stacks, descriptors)
     * behind. */
    sstm__set_error("sstm_exec_create: called inside a transaction, whose attempts would each "
                    "leave an executor behind (create it before the transaction)");
    return SSTM_EBUSY;
  }
  sstm_exec_config_t c;
  if (cfg) {
    if (cfg->size != sizeof c) {
      sstm__set_error("sstm_exec_create: cfg->size %zu is not a known sstm_exec_config_t size "
                      "(fill it with sstm_exec_config_default)",
                      cfg->size);
      return SSTM_EINVAL;
    }
    c = *cfg;
  } else {
    sstm_exec_config_default(&c);
  }
  int rc;
  if (c.use_env && (rc = sstm_exec_config_from_env(&c)) != 0) return rc;
  if ((rc = check_cfg(&c)) != 0) return rc;
  if (c.workers == 0) {
    c.workers = sstm__cpus_allowed();
    if (c.workers > SSTM_EXEC_MAX_WORKERS) c.workers = SSTM_EXEC_MAX_WORKERS;
  }
  struct sstm_exec *ex = calloc(1, sizeof *ex);
  if (!ex) goto nomem0;
  ex->cfg = c;
  ex->lv = ex->lv_own;
  ex->workers = calloc(c.workers, sizeof *ex->workers);
  ex->contexts = calloc(c.contexts, sizeof *ex->contexts);
  if (!ex->workers || !ex->contexts || sstm__xq_init(&ex->q, c.levels) != 0) {
    free(ex->workers);
    free(ex->contexts);
    free(ex);
    goto nomem0;
  }
  if ((rc = sstm__xp_global_init(c.paused_conflict)) != 0) {
    sstm__xq_destroy(&ex->q);
    free(ex->workers);
    free(ex->contexts);
    free(ex);
    return rc;
  }
  ex->ncontexts = c.contexts;
  for (unsigned i = 0; i < c.contexts; i++) {
    sstm_xctx_t *x = &ex->contexts[i];
    x->ex = ex;
    if ((rc = sstm_desc_create(&x->desc)) != 0) {
      /* sstm_desc_create's message (ELIMIT, ENOMEM) counts the slots this
       * call had taken, which teardown gives back: say so. */
      char why[256];
      snprintf(why, sizeof why, "%s", sstm_last_error());
      x->desc = NULL;
      teardown(ex, 0);
      sstm__set_error("sstm_exec_create: no descriptor for context %u of %u (each context takes "
                      "one, besides the registered threads): %s",
                      i + 1, c.contexts, why);
      return rc;
    }
    int e = sstm__stack_alloc(&x->stack, (size_t)c.stack_kb << 10, 0);
    if (e != 0) {
      teardown(ex, 0);
      sstm__set_error("sstm_exec_create: cannot map the stack of context %u (%u KiB): %s", i,
                      c.stack_kb, strerror(e));
      return SSTM_ENOMEM;
    }
    x->node.next = ex->free;
    ex->free = &x->node;
  }
  ex->nfree = c.contexts;
  /* Graded admission: the lowest level leaves `r` contexts free, the top
   * none. r <= 0.9 * contexts < contexts, so every level can be admitted
   * into an idle pool. */
  unsigned top = c.levels - 1, r = (unsigned)((uint64_t)c.contexts * c.reserve_pct / 100u);
  for (unsigned p = 0; p < c.levels; p++)
    ex->hold[p] = top ? (unsigned)((uint64_t)r * (top - p) / top) : 0u;
  ex->nworkers = c.workers;
  stt_publish(ex);
  for (unsigned i = 0; i < c.workers; i++) {
    sstm_xworker_t *w = &ex->workers[i];
    w->ex = ex;
    w->idx = i;
    atomic_init(&w->cur, NULL);
    atomic_init(&w->cur_prio, -1);
    atomic_init(&w->want, INT_MAX);
    int e = pthread_create(&w->thread, NULL, worker_main, w);
    if (e) {
      teardown(ex, i);
      sstm__set_error("sstm_exec_create: cannot start worker %u: %s", i, strerror(e));
      return SSTM_ENOMEM;
    }
  }
  /* Wait until every worker has its tid (the submitters signal by tid). */
  for (;;) {
    uint64_t s = atomic_load_explicit(&ex->started, memory_order_acquire);
    if (s >= c.workers) break;
    sstm__futex_wait((_Atomic uint64_t *)&ex->started, (uint32_t)s, 0);
  }
  *out = ex;
  return 0;
nomem0:
  sstm__set_error("sstm_exec_create: out of memory");
  return SSTM_ENOMEM;
}

/* A call that waits for requests, made inside a transaction: a request
 * that meets the caller's locks waits for, or retries until, the end of
 * the caller's transaction (and every request waits at its begin while
 * the caller is irrevocable), which would wait for the request. No policy
 * can break that cycle: the caller is not at a barrier. */
static int in_tx_refused(const char *who) {
  sstm__set_error("%s: called inside a transaction, which a request may wait for (call it after "
                  "the commit; sstm_exec_try_submit does not wait)",
                  who);
  return SSTM_EBUSY;
}

int sstm_exec_destroy(sstm_exec_t *ex) {
  if (!ex) {
    sstm__set_error("sstm_exec_destroy: ex is NULL");
    return SSTM_EINVAL;
  }
  sstm_xworker_t *self = sstm__xp_self();
  if (self && self->ex == ex) {
    sstm__set_error("sstm_exec_destroy: called from one of the executor's own requests");
    return SSTM_EBUSY;
  }
  if (sstm_in_tx()) return in_tx_refused("sstm_exec_destroy");
  teardown(ex, ex->nworkers);
  return 0;
}

/* ---- submission ---- */

/* Whether worker w's transaction waits in its policy between two attempts
 * (sstm__exec_in_cm_wait): a hint, read without the worker's cooperation.
 * acquire: pairs with run_ctx's release store of cur, so the context's
 * descriptor is the one set up before it ran; the context (pool memory)
 * outlives the read whatever the worker does meanwhile. */
static bool waiting(sstm_xworker_t *w) {
  sstm_xctx_t *c = atomic_load_explicit(&w->cur, memory_order_acquire);
  return c && sstm__exec_in_cm_wait(c->desc);
}

/* Choose the worker to preempt for a request of priority prio: the one
 * that runs the lowest-priority transaction, if it is below prio and not
 * already asked; with cfg.waiter_first, one whose transaction waits in its
 * policy first (the lowest such), whatever the others run (*was_waiting
 * says so). Under the lock (so two submitters do not pick the same worker
 * for one switch). NULL: nobody to preempt. */
static sstm_xworker_t *victim(struct sstm_exec *ex, unsigned prio, bool *was_waiting) {
  sstm_xworker_t *best = NULL, *bw = NULL;
  int bp = (int)prio, bwp = (int)prio;
  for (unsigned i = 0; i < ex->nworkers; i++) {
    sstm_xworker_t *w = &ex->workers[i];
    int p = atomic_load_explicit(&w->cur_prio, memory_order_relaxed);
    if (p < 0 || p >= (int)prio || atomic_load_explicit(&w->kicked, memory_order_relaxed)) continue;
    if (p < bp) {
      best = w;
      bp = p;
    }
    if (ex->cfg.waiter_first && p < bwp && waiting(w)) {
      bw = w;
      bwp = p;
    }
  }
  *was_waiting = bw != NULL;
  if (bw) {
    best = bw;
    atomic_fetch_add_explicit(&bw->waiter_picks, 1, memory_order_relaxed);
  }
  if (best) atomic_store_explicit(&best->kicked, 1, memory_order_relaxed);
  return best;
}

/* Under the lock, with `stopping` set: the last submitter out of those
 * that waited for a context (free_waiters, free_leaving) wakes the destroy
 * that waits for them (teardown); the executor is freed only after the
 * caller's unlock. */
static void last_out_wakes_destroy(struct sstm_exec *ex) {
  if (ex->free_waiters != 0 || ex->free_leaving != 0) return;
  gen_bump(&ex->free_gen);
  fx_wake(&ex->free_gen, INT_MAX);
}

static int submit(struct sstm_exec *ex, const sstm_exec_req_t *req, bool wait, const char *who) {
  if (!ex || !req || !req->fn) {
    sstm__set_error("%s: %s is NULL", who, !ex ? "ex" : !req ? "req" : "req->fn");
    return SSTM_EINVAL;
  }
  if (req->priority >= ex->cfg.levels) {
    sstm__set_error("%s: priority %u out of range 0..%u", who, req->priority, ex->cfg.levels - 1);
    return SSTM_EINVAL;
  }
  /* acquire: pairs with ctx_main's release of FUT_DONE, so that a future
   * whose request ended may be set up again. A future still pending
   * belongs to a request in flight: setting it up again would mark the
   * second request's end as the first's (sstm_exec_wait returns early),
   * and the first one's end would then write into a future its caller may
   * have reused or freed. Not checked against a concurrent submission with
   * the same future. */
  if (req->future &&
      atomic_load_explicit(fut_state(req->future), memory_order_acquire) == FUT_PENDING) {
    sstm__set_error("%s: req->future belongs to a request still in flight (sstm_exec_wait for it "
                    "first)",
                    who);
    return SSTM_EBUSY;
  }
  if (wait) {
    sstm_xworker_t *self = sstm__xp_self();
    if (self && self->ex == ex) {
      sstm__set_error("%s: called from one of the executor's own requests (it could wait for "
                      "itself): use sstm_exec_try_submit",
                      who);
      return SSTM_EBUSY;
    }
    if (sstm_in_tx()) return in_tx_refused(who);
  }
  uint64_t t0 = sstm__now_ns();
  bool waited = false; /* this call waited for a context */
  sstm__xq_lock(&ex->q);
  for (;;) {
    if (ex->stopping) {
      sstm__xq_unlock(&ex->q);
      sstm__set_error("%s: the executor is being destroyed", who);
      return SSTM_ESTATE;
    }
    if (ex->nfree > ex->hold[req->priority]) break;
    if (!wait) {
      unsigned nfree = ex->nfree;
      sstm__xq_unlock(&ex->q);
      if (nfree == 0)
        sstm__set_error("%s: no free context (%u in use)", who, ex->ncontexts);
      else
        sstm__set_error("%s: no free context for priority %u (%u free, held back for higher "
                        "priorities: reserve_pct)",
                        who, req->priority, nfree);
      return SSTM_EAGAIN;
    }
    ex->free_waiters++;
    waited = true;
    uint64_t g = gen_read(&ex->free_gen);
    sstm__xq_unlock(&ex->q);
    fx_wait(&ex->free_gen, g);
    void (*seam)(void) = atomic_load_explicit(&sstm__x_test_woken, memory_order_relaxed);
    if (seam) seam();
    sstm__xq_lock(&ex->q);
    ex->free_waiters--;
    if (ex->stopping) last_out_wakes_destroy(ex);
  }
  sstm_xctx_t *c = (sstm_xctx_t *)ex->free;
  ex->free = c->node.next;
  ex->nfree--;
  ex->pending++;
  if (waited) ex->free_leaving++; /* until its return (below) */
  if (ex->stt) STT_PUT(ex->stt->contexts_busy, ex->ncontexts - ex->nfree);
  c->req = *req;
  c->birth = c->prio = req->priority;
  c->preempts = 0;
  c->attempts = 0;
  c->started = false;
  c->run_ns = c->paused_ns = 0;
  c->t_submit = t0;
  c->state = XC_COLD;
  if (req->future)
    /* relaxed: the unlock below publishes it to the worker that pops c;
     * set only for an accepted request, so that a failed submission
     * leaves the caller's future as it was. */
    atomic_store_explicit(fut_state(req->future), FUT_PENDING, memory_order_relaxed);
  /* Counted before the push, under the lock: the worker that pops it
   * counts its end after this (the lock orders them), so in_flight never
   * goes below zero. */
  atomic_fetch_add_explicit(&ex->lv[req->priority].submitted, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&ex->lv[req->priority].in_flight, 1, memory_order_relaxed);
  /* The priority as submitted, kept for after the unlock: from then on
   * `c` belongs to the worker that pops it, which can run it to its end
   * and put it back on the free list for another submission to reuse. */
  const int prio = (int)c->prio;
  sstm__xq_push(&ex->q, &c->node, c->prio, false);
  /* A sleeper that another push has woken already is that push's: it pops
   * one entry, the higher of the two, and this request then needs a
   * running worker like any other (claim_sleeper). */
  bool wake = claim_sleeper(ex);
  sstm_xworker_t *v = NULL;
  bool v_waits = false, ask = false;
  if (!wake &&
      (ex->cfg.preempt == SSTM_EXEC_PREEMPT_SIGNAL || ex->cfg.preempt == SSTM_EXEC_PREEMPT_POLL)) {
    ask = true;
    v = victim(ex, c->prio, &v_waits);
  }
  sstm__xq_unlock(&ex->q);
  if (waited) {
    void (*seam)(void) = atomic_load_explicit(&sstm__x_test_queued, memory_order_relaxed);
    if (seam) seam();
  }
  if (wake) fx_wake(&ex->work_gen, 1);
  if (v && v_waits) {
    /* A waiter (cfg.waiter_first): told to end its wait
     * (sstm__exec_end_cm_wait; a wait that has ended meanwhile is a retry
     * running, which the kick preempts as any other), the kick's signal
     * (or, polled, the fallback's) interrupts its sleep, and its retry's
     * first polled point switches (reask sets the request for the new
     * attempt). Nobody else is asked: the point is to leave the running
     * transactions alone. */
    sstm__xp_want(v, prio);
    sstm_xctx_t *vc = atomic_load_explicit(&v->cur, memory_order_acquire);
    if (vc) (void)sstm__exec_end_cm_wait(vc->desc);
    sstm__xp_kick(v);
  } else if (ask) {
    if (v) {
      sstm__xp_want(v, prio);
      sstm__xp_kick(v);
    }
    /* Every other worker that runs a lower priority gets the polled
     * request too: the victim may be off its CPU (runnable, waiting for
     * the host's other threads) for a whole scheduler slice, and a signal
     * pending on it helps nobody meanwhile. Whichever worker reaches a
     * preemption point first takes the request; the others' checks then
     * find nothing they were asked for and return. A hint: cur_prio is
     * read without the lock, and a request that lands on a descriptor that
     * has just switched costs one needless check.
     * Also when there is no victim because every worker below the
     * request is `kicked` already: a kicked worker's check is pending for
     * an earlier request, and its lock-free peek may have missed this
     * push (asked_for decides under the lock, where this request is seen
     * whatever the check's `want`), unless it is asked again: the release
     * in sstm__xp_want orders the lowered `want` before the nudge's
     * release flag, so the check that consumes the flag (acquire) sees it
     * and this push, and the flag stays in the variant byte until a check
     * that comes after it. */
    for (unsigned i = 0; i < ex->nworkers; i++) {
      sstm_xworker_t *o = &ex->workers[i];
      int p = atomic_load_explicit(&o->cur_prio, memory_order_relaxed);
      if (o != v && p >= 0 && p < prio) {
        sstm__xp_want(o, prio);
        sstm__xp_nudge(o);
      }
    }
  }
  if (waited) {
    sstm__xq_lock(&ex->q);
    ex->free_leaving--;
    if (ex->stopping) last_out_wakes_destroy(ex);
    sstm__xq_unlock(&ex->q);
  }
  return 0;
}

int sstm_exec_submit(sstm_exec_t *ex, const sstm_exec_req_t *req) {
  return submit(ex, req, true, "sstm_exec_submit");
}

int sstm_exec_try_submit(sstm_exec_t *ex, const sstm_exec_req_t *req) {
  return submit(ex, req, false, "sstm_exec_try_submit");
}

int sstm_exec_wait(sstm_exec_future_t *f) {
  if (!f) {
    sstm__set_error("sstm_exec_wait: f is NULL");
    return SSTM_EINVAL;
  }
  for (bool first = true;; first = false) {
    /* acquire: pairs with ctx_main's release; the result and the body's
     * effects are visible after. */
    uint64_t s = atomic_load_explicit(fut_state(f), memory_order_acquire);
    if (s == FUT_DONE) return (int)(int64_t)f->opaque[1];
    if (s != FUT_PENDING) {
      sstm__set_error("sstm_exec_wait: not a future of a submitted request");
      return SSTM_EINVAL;
    }
    if (first) { /* it would wait: not where the request may wait for the caller */
      if (sstm_in_tx()) return in_tx_refused("sstm_exec_wait");
      if (sstm__xp_self()) {
        sstm__set_error("sstm_exec_wait: called on an executor's worker (a request's body, done "
                        "callback or action), which the request may need: its own future is "
                        "set after its callback returns (wait outside the executor, or test "
                        "sstm_exec_done)");
        return SSTM_EBUSY;
      }
    }
    sstm__futex_wait(fut_state(f), (uint32_t)s, 0);
  }
}

bool sstm_exec_done(const sstm_exec_future_t *f) {
  return f && atomic_load_explicit(fut_state(f), memory_order_acquire) == FUT_DONE;
}

/* ---- user-marked regions ---- */

int sstm_exec_nopreempt_begin(void) {
  sstm_xworker_t *w = sstm__xp_self();
  sstm_xctx_t *c = w ? atomic_load_explicit(&w->cur, memory_order_relaxed) : NULL;
  if (c) sstm__exec_nopreempt_enter();
  return 0;
}

int sstm_exec_nopreempt_end(void) {
  sstm_xworker_t *w = sstm__xp_self();
  sstm_xctx_t *c = w ? atomic_load_explicit(&w->cur, memory_order_relaxed) : NULL;
  if (!c) return 0;
  if (sstm__exec_nopreempt_leave() != 0) {
    sstm__set_error("sstm_exec_nopreempt_end: no matching sstm_exec_nopreempt_begin");
    return SSTM_ESTATE;
  }
  return 0;
}

/* ---- statistics and description ---- */

int sstm_exec_stats_sized(sstm_exec_t *ex, unsigned level, sstm_exec_level_stats_t *out,
                          size_t size) {
  if (!ex || !out || size < sizeof(sstm_exec_level_stats_t) || level >= ex->cfg.levels) {
    sstm__set_error("sstm_exec_stats: %s", !ex || !out ? "NULL argument"
                                           : size < sizeof(sstm_exec_level_stats_t)
                                               ? "size smaller than any sstm_exec_level_stats_t"
                                               : "level out of range");
    return SSTM_EINVAL;
  }
  sstm_xlevel_t *l = &ex->lv[level];
  sstm_exec_level_stats_t s = {.size = sizeof s};
  /* First, acquire: pairs with the release increment in release_ctx(), so
   * the sums read below cover at least the requests counted here. */
  s.completed = atomic_load_explicit(&l->completed, memory_order_acquire);
#define RD(f) s.f = atomic_load_explicit(&l->f, memory_order_relaxed)
  RD(submitted);
  RD(preemptions);
  RD(promotions);
  RD(aborts);
  RD(queue_ns);
  RD(run_ns);
  RD(paused_ns);
  RD(turnaround_ns);
  RD(turnaround_max_ns);
#undef RD
  memcpy(out, &s, sizeof s);
  /* A newer caller's fields that this library does not know read 0 (as
   * sstm_stats_get_sized); s.size says how much was filled. */
  if (size > sizeof s) memset((char *)out + sizeof s, 0, size - sizeof s);
  return 0;
}

int sstm_exec_describe(sstm_exec_t *ex, char *buf, size_t len) {
  if (!ex) {
    sstm__set_error("sstm_exec_describe: ex is NULL");
    return SSTM_EINVAL;
  }
  uint64_t sig = 0, ref = 0, chk = 0, sw = 0, dec = 0, ho = 0, inh = 0, pas = 0, fb = 0, fbd = 0,
           fbf = 0, hr = 0, hk = 0, wp = 0;
  for (unsigned i = 0; i < ex->nworkers; i++) {
    sig += atomic_load_explicit(&ex->workers[i].signals, memory_order_relaxed);
    ref += atomic_load_explicit(&ex->workers[i].refused, memory_order_relaxed);
    chk += atomic_load_explicit(&ex->workers[i].checks, memory_order_relaxed);
    sw += atomic_load_explicit(&ex->workers[i].switches, memory_order_relaxed);
    dec += atomic_load_explicit(&ex->workers[i].declined, memory_order_relaxed);
    ho += atomic_load_explicit(&ex->workers[i].handovers, memory_order_relaxed);
    inh += atomic_load_explicit(&ex->workers[i].inherits, memory_order_relaxed);
    pas += atomic_load_explicit(&ex->workers[i].passed, memory_order_relaxed);
    fb += atomic_load_explicit(&ex->workers[i].fallbacks, memory_order_relaxed);
    fbd += atomic_load_explicit(&ex->workers[i].fallbacks_disarmed, memory_order_relaxed);
    fbf += atomic_load_explicit(&ex->workers[i].fallbacks_fired, memory_order_relaxed);
    hr += atomic_load_explicit(&ex->workers[i].holder_raises, memory_order_relaxed);
    hk += atomic_load_explicit(&ex->workers[i].holder_kept, memory_order_relaxed);
    wp += atomic_load_explicit(&ex->workers[i].waiter_picks, memory_order_relaxed);
  }
  const sstm_exec_config_t *c = &ex->cfg;
  char cmax[16];
  if (c->c_max)
    snprintf(cmax, sizeof cmax, "%u", c->c_max);
  else
    snprintf(cmax, sizeof cmax, "inf");
  int n = snprintf(
      buf, buf ? len : 0,
      "exec workers=%u contexts=%u stack=%uKiB levels=%u preempt=%s "
      "poll-fallback=%uus tick=%uus c_max=%s lazy=%d paused-conflict=%s facility=%s "
      "table=%s signals=%llu refused=%llu checks=%llu switches=%llu declined=%llu "
      "handovers=%llu inherits=%llu passed=%llu reserve=%u%% fallbacks=%llu "
      "fallbacks-disarmed=%llu "
      "fallbacks-fired=%llu holder-level=%u holder-raises=%llu holder-kept=%llu "
      "waiter-first=%d waiter-picks=%llu",
      ex->nworkers, c->contexts, c->stack_kb, c->levels, sstm_exec_preempt_name(c->preempt),
      c->poll_fallback_us, c->tick_us, cmax, (int)c->lazy_promotion,
      c->paused_conflict == SSTM_EXEC_PAUSED_CONFLICT_HANDOVER  ? "handover"
      : c->paused_conflict == SSTM_EXEC_PAUSED_CONFLICT_INHERIT ? "inherit"
                                                                : "takeover",
      sstm__xp_facility(ex), ex->stt ? "yes" : "no", (unsigned long long)sig,
      (unsigned long long)ref, (unsigned long long)chk, (unsigned long long)sw,
      (unsigned long long)dec, (unsigned long long)ho, (unsigned long long)inh,
      (unsigned long long)pas, c->reserve_pct, (unsigned long long)fb, (unsigned long long)fbd,
      (unsigned long long)fbf, c->holder_level, (unsigned long long)hr, (unsigned long long)hk,
      (int)c->waiter_first, (unsigned long long)wp);
  return n;
}
