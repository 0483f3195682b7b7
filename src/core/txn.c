/* SPDX-License-Identifier: MIT */
/* The life of a transaction: begin (sstm__begin, the start of each
 * attempt), commit (sstm_commit), rollback and restart (sstm_restart,
 * sstm_cancel, the abort of a lost conflict), sstm_run, and the user's
 * commit and abort actions (sstm_on_commit, sstm_on_abort).
 *
 * An attempt publishes ACTIVE with a full barrier before it reads the clock
 * (docs/design/core.md (5.1)); an update commit follows (4.1)-(4.8); a
 * read-only one ends with one store. A rollback releases the attempt's
 * locks by CAS (6.5), forgets its frees, releases its allocations (after
 * the user's abort actions when it has some, which may use them), and
 * ends it; the hooks, the user's abort actions and the policy then learn
 * of the abort, in that order, and the next attempt starts from the
 * checkpoint.
 */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdlib.h>

#include "core/tx_internal.h"
#include "iface/libc_services.h"

/* A restart abandons the frames between the checkpoint and the abort. In a
 * process with AddressSanitizer their redzones must be unpoisoned first,
 * whether or not the library itself is instrumented: the user's code may
 * be (its barrier calls are ordinary calls, so the compiler does not do it
 * for them), and an instrumented policy callback would later trip over a
 * stale redzone. Weak: NULL without the ASan runtime, and then nothing is
 * called. Only on the abort path. */
extern void __asan_handle_no_return(void) __attribute__((weak));
#define SSTM_ASAN_NO_RETURN()                                                                      \
  do {                                                                                             \
    if (__asan_handle_no_return) __asan_handle_no_return();                                        \
  } while (0)

/* The test seam (engine.h); only debug builds call it. */
_Atomic(void (*)(sstm_seam_t, const void *)) sstm__test_seam;

/* ------------------------------------------------------------------------ */
/* Begin, commit, rollback. */

static void release_locks_abort(struct sstm_desc *tx) {
  for (uint32_t i = 0; i < tx->ls.n; i++) {
    uint64_t expect = tx->owner_lw;
    /* (6.5) CAS, not store: a killed attempt's lock may have been taken
     * over. release: see steal() (conflict.c); restoring the old version keeps readers that
     * saw it valid. */
    atomic_compare_exchange_strong_explicit(tx->ls.e[i].lock, &expect, tx->ls.e[i].old,
                                            memory_order_release, memory_order_relaxed);
  }
  tx->ls.n = 0;
}

/* The state of a transaction's retries, which the begin does not clear:
 * every end of a transaction leaves it so (commit_tail for a transaction
 * that retried or was marked to restart irrevocable, whose commit
 * SSTM_SLOW_RETRIED sends there; the cancel and the abandon, after the
 * policy has seen the abort), and a descriptor starts with it clear. Any
 * of these fields set outside an abort sets SSTM_SLOW_RETRIED with it
 * (sstm_cm_next_irrevocable). */
SSTM_INLINE void retry_state_clear(struct sstm_desc *tx) {
  tx->retries = 0;
  tx->conflicts = 0;
  tx->irrev_sticky = false;
  tx->ro_nolog_failed = false;
}

/* User actions run outside the transaction and may run transactions of
 * their own on this descriptor. Those reuse the action array and, after an
 * abort, would overwrite what the restart and the policy still need (the
 * checkpoint, the attributes, the retry count, the policy's view of the
 * attempt that ended). So the array is taken out of the descriptor while it
 * runs (actions_take, actions_put_back), and after an abort those fields
 * are put back. */
struct taken_actions {
  sstm_action_t *a;
  uint32_t n, cap;
};

/* Takes the action array out of tx, which is then in a callback with no
 * actions, for the actions' own transactions. */
SSTM_INLINE struct taken_actions actions_take(struct sstm_desc *tx) {
  struct taken_actions t = {tx->actions, tx->nactions, tx->actions_cap};
  tx->in_callback++;
  tx->nactions = 0;
  tx->actions = NULL;
  tx->actions_cap = 0;
  return t;
}

/* Puts the array that actions_take took back, empty, and leaves the
 * callback. A call of free() only when the actions' own transactions grew
 * an array of their own. */
SSTM_INLINE void actions_put_back(struct sstm_desc *tx, struct taken_actions t) {
  if (SSTM_UNLIKELY(tx->actions != NULL)) free(tx->actions);
  tx->actions = t.a;
  tx->actions_cap = t.cap;
  tx->nactions = 0;
  tx->in_callback--;
}

/* Run action a if it runs after a commit (committed) or after a rollback
 * (!committed): with the outcome for sstm__on_end's, else without. */
SSTM_INLINE void action_run(const sstm_action_t *a, bool committed) {
  if (!(a->when & (committed ? SSTM_ACT_COMMIT : SSTM_ACT_ABORT))) return;
  if (a->when & SSTM_ACT_END)
    a->end(a->arg, committed);
  else
    a->fn(a->arg);
}

/* After a commit: the on_commit actions, in registration order. Apart
 * from the loop, a few stores. */
static void run_actions_committed(struct sstm_desc *tx) {
  struct taken_actions t = actions_take(tx);
  for (uint32_t i = 0; i < t.n; i++)
    action_run(&t.a[i], true);
  actions_put_back(tx, t);
}

/* After a rollback: the on_abort actions, with what the restart and the
 * policy need put back afterwards. */
static SSTM_NOINLINE void run_abort_actions(struct sstm_desc *tx) {
  struct taken_actions t = actions_take(tx);
  /* The blocks the attempt allocated, which rollback kept for the actions
   * (an action's argument may be one, as with libitm's undo actions): out
   * of the descriptor while the actions' own transactions use its log,
   * given back after them. No other attempt can reach them (its writes
   * never left the redo log, or were undone). */
  sstm_ptrvec_t allocs = tx->allocs;
  tx->allocs = (sstm_ptrvec_t){0};
  {
    /* what the restart and the policy still need (see above) */
    sstm_ckpt_t ckpt = tx->ckpt;
    sstm_attr_t attr = tx->attr; /* put back field by field below */
    sstm_cm_ctx_t ctx = tx->cm_ctx;
    sstm_abort_info_t last = tx->last_abort;
    uint32_t retries = tx->retries, conflicts = tx->conflicts;
    bool sticky = tx->irrev_sticky, ro_failed = tx->ro_nolog_failed;
    uint8_t slow = tx->slow; /* SSTM_SLOW_RETRIED, which their commits clear */
    uint64_t birth = tx->birth, start = tx->start;
    /* The actions' transactions begin as every transaction does, on the
     * state that the end of one leaves (retry_state_clear below): the
     * retry state and an empty redo log (this attempt's, rolled back, is
     * needed no more: the policy's view was taken before the actions). */
    retry_state_clear(tx);
    if (tx->ws.n) sstm_wset_reset(&tx->ws);
    for (uint32_t i = 0; i < t.n; i++)
      action_run(&t.a[i], false);
    tx->ckpt = ckpt;
    tx->attr.read_only = attr.read_only;
    tx->attr.irrevocable = attr.irrevocable;
    tx->attr.tag = attr.tag;
    /* relaxed: published for other threads' policies, as in sstm__begin */
    __atomic_store_n(&tx->attr.priority, attr.priority, __ATOMIC_RELAXED);
    tx->cm_ctx = ctx;
    tx->last_abort = last;
    tx->retries = retries;
    tx->conflicts = conflicts;
    tx->irrev_sticky = sticky;
    tx->ro_nolog_failed = ro_failed;
    tx->slow = slow;
    __atomic_store_n(&tx->birth, birth, __ATOMIC_RELAXED);
    __atomic_store_n(&tx->start, start, __ATOMIC_RELAXED);
  }
  free(tx->allocs.p); /* grown by the actions' transactions, or NULL */
  tx->allocs = allocs;
  sstm__reclaim_abort(tx);
  actions_put_back(tx, t);
}

bool sstm__desc_slow_begin(const struct sstm_desc *d) {
  return sstm__g.cfg.sample_period || d->cm->on_begin || d->cm_admit_fn || d->stt ||
         sstm__g.cfg.ro_log != SSTM_RO_LOG_OFF || sstm__random_delay;
}

void sstm__desc_set_slow(struct sstm_desc *d) {
  unsigned s = 0;
  if (sstm__desc_slow_begin(d)) s |= SSTM_SLOW_BEGIN;
  if (d->cm->on_commit || d->stt || sstm__g.cfg.stats == SSTM_STATS_DETAILED) s |= SSTM_SLOW_COMMIT;
  d->slow_begin = (uint8_t)(s & SSTM_SLOW_BEGIN);
  d->slow = (uint8_t)(s & ~SSTM_SLOW_BEGIN);
  d->first_variant[0] = d->design;
  d->first_variant[1] = SSTM_V_RO;
}

/* Begin work of the features in SSTM_SLOW_BEGIN. */
static SSTM_NOINLINE void begin_slow(struct sstm_desc *tx) {
  if (tx->cm->on_begin) {
    tx->in_hook++;
    tx->cm->on_begin(cm_ctx(tx));
    tx->in_hook--;
  }
  if (tx->stt) sstm__stt_begin(tx);
}

/* An attempt that was to run irrevocable was killed before it became so
 * (only sstm_desc_kill can: policies kill lock holders): it ends, never
 * having run a line of the transaction, and the next serial takes its
 * place. It is not counted as an abort (no retry follows it; the statistics'
 * retries match their aborts), nor reported to the policy or the hooks,
 * which saw no attempt begin. Returns the new serial. */
static SSTM_NOINLINE uint64_t irrev_killed_at_start(struct sstm_desc *tx) {
  uint64_t serial = sstm__serial(tx) + 1;
  tx->owner_lw = sstm_lw_make_owner(tx->slot, serial);
  sstm__set_variant(tx, SSTM_V_NONE | (sstm__variant(tx) & SSTM_V_SAMPLE));
  /* seq_cst exchange and fence: the full barrier of a published ACTIVE in
   * either begin-fence mode (5.1); it returns the killed attempt's flags,
   * whose sleepers are woken as at any attempt's end. */
  attempt_ended(tx, atomic_exchange_explicit(&tx->status, sstm_st_make(serial, SSTM_ST_ACTIVE),
                                             memory_order_seq_cst));
  /* seq_cst fence: as in attempt_start's fallback (the exchange alone does
   * not order the later loads in C11); a cold path, so in both modes. */
  sstm__full_fence();
  return serial;
}

/* Publish the attempt's ACTIVE status st (5.1), with the full barrier
 * that must come before its later loads of the clock and shared data.
 * With membarrier the reclaimer supplies it: its expedited membarrier runs
 * a full barrier on every CPU running one of our threads, so a compiler
 * barrier suffices here (the asymmetric fence of liburcu's membarrier
 * flavour). Without it, the full barrier itself: a seq_cst fence after
 * the store, pairing with the reclaimer's seq_cst fence (the
 * store-buffering shape: each side stores, fences, then loads what the
 * other stored). A C11 seq_cst exchange alone would not do: C11 does not
 * order the later acquire and relaxed loads after it against the
 * reclaimer's fence. sstm__store_full_fence is the store and that fence;
 * on x86-64 one xchg instruction, which the hardware makes a full barrier
 * (engine.h), whatever the compiler. release (the store): the variant,
 * set before, lands before a killer's flag for this attempt
 * (registry.c). */
SSTM_INLINE void publish_active(struct sstm_desc *tx, uint64_t st) {
  if (SSTM_LIKELY(sstm__g.membarrier)) {
    atomic_store_explicit(&tx->status, st, memory_order_release);
    atomic_signal_fence(memory_order_seq_cst);
  } else {
    sstm__store_full_fence(&tx->status, st);
  }
}

/* Start an attempt; `first` is true for the first attempt of a
 * transaction, whose restart flags are still clear. Every case: restarts,
 * and the begins that attempt_start_fast does not cover. */
static SSTM_NOINLINE void attempt_start(struct sstm_desc *tx, bool first) {
  if (SSTM_UNLIKELY(tx->cm_admit_fn)) {
    /* The policy's admission (sstm__cm_admit_hook): first, while no
     * attempt of tx runs and nothing of this one is published, so that a
     * thread asleep in it holds no lock, holds back no grace period of
     * reclamation (its status is not ACTIVE) and takes its snapshot after
     * it wakes; and after the previous transaction's commit actions, or
     * this one's rollback and abort actions. A hook, for begin_in_hook. */
    tx->in_hook++;
    tx->cm_admit_fn(cm_ctx(tx));
    tx->in_hook--;
  }
  uint64_t serial = sstm__serial(tx) + 1; /* the status word's (engine.h) */
  tx->owner_lw = sstm_lw_make_owner(tx->slot, serial);
  sstm_rset_clear(&tx->rs);
  /* An attempt that wrote nothing left nothing in the write set's index
   * (it holds only entries stamped by attempts that wrote). */
  if (tx->ws.n) sstm_wset_reset(&tx->ws);
  tx->ls.n = 0;
  tx->allocs.n = 0;
  tx->frees.n = 0;
  tx->nactions = 0;
  tx->cm_ctx.watched = false;
  unsigned sample = tx->slow_begin && sstm__g.cfg.sample_period ? SSTM_V_SAMPLE : 0;
  bool irrev = (!first && tx->irrev_sticky) || tx->attr.irrevocable;
  bool nolog = tx->attr.read_only && !tx->ro_log && (first || !tx->ro_nolog_failed);
  unsigned v = irrev ? SSTM_V_NONE : nolog ? SSTM_V_RO : tx->design;
  /* The variant is set before ACTIVE is published (release below), so that
   * a killer's flag for this attempt lands after it (registry.c). */
  sstm__set_variant(tx, v | sample);
  publish_active(tx, sstm_st_make(serial, SSTM_ST_ACTIVE));
  DELAY_POINT(tx); /* published ACTIVE, clock not yet read */
  uint64_t start;
  if (SSTM_UNLIKELY(irrev)) {
    while (!sstm__irrev_enter(tx))
      serial = irrev_killed_at_start(tx);
    start = tx->start;
  } else {
    /* acquire: pairs with committers' release fetch_add (4.3, 2). */
    uint64_t c = atomic_load_explicit(&sstm__g.clock, memory_order_acquire);
    if (SSTM_UNLIKELY(sstm_clock_irrevocable(c))) c = sstm__wait_irrevocable();
    start = sstm_clock_time(c);
    __atomic_store_n(&tx->start, start, __ATOMIC_RELAXED);
    tx->end = start;
  }
  if (first || tx->retries == 0) __atomic_store_n(&tx->birth, start, __ATOMIC_RELAXED);
  if (SSTM_UNLIKELY(tx->slow_begin)) begin_slow(tx);
  if (SSTM_UNLIKELY(atomic_load_explicit(&sstm__g.nhooks, memory_order_relaxed))) {
    tx->in_hook++;
    sstm__hooks_begin(serial);
    tx->in_hook--;
  }
}

/* The first attempt of a transaction in the common case, variant v (ETL,
 * CTL or RO): a descriptor without begin-time features (SSTM_SLOW_BEGIN
 * clear: no sampling, no policy on_begin, no state table, cfg.ro_log off,
 * either begin fence), an attempt that is not to run irrevocable,
 * and no hook registered. It does what attempt_start does in that case and
 * nothing else. What attempt_start clears besides (the redo log, the lock,
 * allocation and free logs, the actions) is empty here: every end of an
 * attempt leaves them so (commit_update and commit_slow, commit_ended,
 * commit_tail, rollback, the cancel), and every end of a transaction
 * leaves retries, conflicts and the restart flags at zero
 * (retry_state_clear). */
/* The end of attempt_start_fast when the clock carries the irrevocable
 * flag: wait until it is clear (7.2), then take the snapshot. Out of line,
 * as a tail call, so that the common begin needs no stack frame. */
static SSTM_NOINLINE int attempt_start_fast_irrev(struct sstm_desc *tx) {
  uint64_t start = sstm_clock_time(sstm__wait_irrevocable());
  __atomic_store_n(&tx->start, start, __ATOMIC_RELAXED);
  __atomic_store_n(&tx->birth, start, __ATOMIC_RELAXED);
  tx->end = start;
  return SSTM__CKPT_START;
}

SSTM_INLINE int attempt_start_fast(struct sstm_desc *tx, unsigned v) {
  /* relaxed: only the owner changes the serial part (engine.h,
   * sstm__serial), and an IDLE status is the owner's alone; the new status
   * is the next serial, ACTIVE. */
  uint64_t idle = atomic_load_explicit(&tx->status, memory_order_relaxed);
  if (sstm__debug && idle != sstm_st_make(sstm_st_serial(idle), SSTM_ST_IDLE))
    sstm__fatal("begin: status %#llx is not IDLE without flags", (unsigned long long)idle);
  uint64_t st = sstm_st_next_active(idle);
  /* owner_lw is not renewed here: the attempt's first lock does it
   * (sstm__owner_ready, engine.h). */
  sstm_rset_clear(&tx->rs);
  /* The redo log needs no reset: every end of an attempt leaves it empty
   * (commit_ended, commit_tail, the restart's attempt_start, the cancel
   * and the abandon). cm_ctx.watched needs no clearing: only a policy's
   * on_commit or on_abort reads it, and every way there sets it
   * (attempt_ended, commit_tail_unwatched). */
  /* Before ACTIVE is published, as in attempt_start. */
  sstm__set_variant(tx, v);
  /* sstm__g.membarrier, which publish_active tests, shares its line with
   * nhooks, which the caller has just loaded (begin_outer). */
  publish_active(tx, st);
  /* acquire: pairs with committers' release fetch_add (4.3, 2). */
  uint64_t c = atomic_load_explicit(&sstm__g.clock, memory_order_acquire);
  if (SSTM_UNLIKELY(sstm_clock_irrevocable(c))) return attempt_start_fast_irrev(tx);
  uint64_t start = sstm_clock_time(c);
  /* start and birth are read by other threads' policies (relaxed) */
  __atomic_store_n(&tx->start, start, __ATOMIC_RELAXED);
  __atomic_store_n(&tx->birth, start, __ATOMIC_RELAXED);
  tx->end = start;
  return SSTM__CKPT_START;
}

/* cfg.ro_log: which first attempts of declared read-only transactions keep
 * a read set. Without one an attempt reads for less (no log, and a commit
 * with nothing to validate), but the first stripe newer than its snapshot
 * aborts it (ro-extend) and its retry keeps one: the traversal done so far
 * is lost. In SSTM_RO_LOG_AUTO each descriptor counts, over windows of
 * RO_WINDOW read-only transactions, those that needed an extension (with a
 * read set: an extension; without: the ro-extend abort), and keeps read
 * sets from the first attempt while RO_LOG_ON of a window did, until a
 * window in which none did. On the linked lists a few per cent of the
 * lookups need one: with read sets they stop aborting, but the read sets
 * cost more than the aborted traversals did, so OFF is the default
 * (docs/benchmarks.md, "Figures behind the design"). */
#define RO_WINDOW 64
#define RO_LOG_ON 2

static SSTM_NOINLINE void ro_decide(struct sstm_desc *tx) {
  if (sstm__g.cfg.ro_log == SSTM_RO_LOG_AUTO) {
    if (tx->ro_win_ext >= RO_LOG_ON)
      tx->ro_log = true;
    else if (tx->ro_win_ext == 0)
      tx->ro_log = false;
  }
  tx->ro_win_n = 0;
  tx->ro_win_ext = 0;
}

/* A declared read-only transaction begins (first attempt). */
static void ro_window(struct sstm_desc *tx) {
  tx->ro_ext_seen = false;
  if (SSTM_UNLIKELY(++tx->ro_win_n == RO_WINDOW)) ro_decide(tx);
  /* after the decision, which this transaction's first attempt follows; an
   * irrevocable attempt keeps no read set */
  if (SSTM_UNLIKELY(tx->ro_log) && !tx->attr.irrevocable) sstm__ctr_add(&tx->ctr.ro_logged, 1);
}

/* A begin at depth UINT16_MAX: misuse (a runaway recursion of atomic
 * blocks), which cannot be returned. */
static SSTM_COLD __attribute__((noreturn)) void begin_too_deep(void) {
  sstm__misuse("transaction nesting deeper than %u levels", (unsigned)UINT16_MAX);
  sstm__fatal("transaction nesting deeper than %u levels (the misuse handler returned)",
              (unsigned)UINT16_MAX);
}

/* One more level of a flat-nested block on tx (depth > 0). */
static inline void depth_nest(struct sstm_desc *tx) {
  if (SSTM_UNLIKELY(tx->depth == UINT16_MAX)) begin_too_deep();
  tx->depth++;
}

/* A begin inside a hook or a policy's callback, which must not start a
 * transaction: the hook's one would overwrite the checkpoint, attributes and
 * actions of the attempt the hook runs for (whose restart then jumps into a
 * dead frame). Reported; if the misuse handler returns, the block runs as
 * an unregistered thread's would (its accesses reported, its commit
 * SSTM_ENOTX), or, in a callback of a running attempt (on_begin,
 * on_conflict), as a flat-nested block of that attempt, whose depth its
 * commit then balances. */
static SSTM_COLD sstm_ckpt_t *begin_in_hook(struct sstm_desc *tx) {
  sstm__misuse("transaction begin inside a hook or a contention manager's callback (they must "
               "not start transactions: hooks.h, cm.h)");
  if (tx->depth > 0) depth_nest(tx);
  return NULL;
}

/* The first attempt in every case that attempt_start_fast does not
 * cover (the attributes already copied: read_only from there, so that the
 * common begin keeps nothing for this call). */
static SSTM_NOINLINE int begin_outer_slow(struct sstm_desc *tx) {
  if (tx->attr.read_only) ro_window(tx);
  attempt_start(tx, true);
  return SSTM__CKPT_START;
}

/* The outermost begin of a transaction on tx (depth already 1): the
 * attributes, the per-transaction state, the first attempt. Returns
 * SSTM__CKPT_START; every call in it is a tail call, so that the common
 * begin (sstm__begin_top) needs no stack frame. `gated`: the caller has
 * seen slow_begin clear (the assembly begin's gate word). */
SSTM_INLINE int begin_outer(struct sstm_desc *tx, const sstm_attr_t *attr, bool gated) {
  bool ro = false, irrev = false;
  unsigned v; /* the first attempt's variant (in the common case) */
  if (attr) {
    /* Field by field, not as one block: callers build the attribute on the
     * stack just before the call, one store per field (sstm_attr_t's
     * members have different widths), and a wider load spanning several
     * recent stores cannot be forwarded from the store buffer: a stall of
     * about a dozen cycles per transaction, a third of this function's time
     * in a profile of rb16k. */
    tx->attr.read_only = ro = attr->read_only;
    /* Looked up at once: read_only's register is its index. */
    v = tx->first_variant[ro];
    tx->attr.irrevocable = irrev = attr->irrevocable;
    /* relaxed: read by other threads' policies as a hint (registry.c,
     * the party snapshot; engine.h). */
    __atomic_store_n(&tx->attr.priority, attr->priority, __ATOMIC_RELAXED);
    tx->attr.tag = attr->tag;
  } else {
    tx->attr.read_only = false;
    tx->attr.irrevocable = false;
    __atomic_store_n(&tx->attr.priority, 0, __ATOMIC_RELAXED); /* relaxed: as above */
    tx->attr.tag = 0;
    v = tx->first_variant[0];
  }
  /* retries, conflicts and the restart flags are clear here
   * (retry_state_clear). */
  /* One test for everything the common begin does not do (SSTM_SLOW_BEGIN
   * covers the descriptor's features, cfg.ro_log among them: with it off a
   * declared read-only transaction starts without a read set; the gate
   * word has tested it already when `gated`). */
  unsigned slow = (unsigned)irrev | atomic_load_explicit(&sstm__g.nhooks, memory_order_relaxed);
  if (!gated) slow |= tx->slow_begin;
  if (SSTM_LIKELY(slow == 0)) return attempt_start_fast(tx, v);
  return begin_outer_slow(tx);
}

SSTM_API sstm_ckpt_t *sstm__begin(const sstm_attr_t *attr) {
  struct sstm_desc *tx = sstm__cur;
  if (SSTM_UNLIKELY(tx == NULL)) {
    sstm__misuse("transaction begin on a thread that is not registered (sstm_thread_init)");
    return NULL;
  }
  if (SSTM_UNLIKELY(tx->in_hook)) return begin_in_hook(tx);
  if (tx->depth > 0) { /* flat nesting */
    depth_nest(tx);
    /* An inner block that asks to be irrevocable may do what cannot be
     * undone: the transaction becomes irrevocable (restarting from the
     * outermost begin if it must, tx.h), instead of the request being lost
     * with the inner block's other attributes. */
    if (SSTM_UNLIKELY(attr != NULL && attr->irrevocable)) (void)sstm_become_irrevocable();
    return NULL;
  }
  tx->depth = 1;
  tx->begin_sp = sstm__stack_pointer(); /* for sstm__begin_sp (engine.h) */
  (void)begin_outer(tx, attr, false);
  return &tx->ckpt;
}

/* The C halves of sstm__begin_ckpt (core/begin_x86_64.S), which has saved
 * the checkpoint into tx->ckpt when tx is outside a transaction and not in
 * a callback (begin_top when the descriptor has no begin-time feature,
 * begin_top_slow when it has), and saved nothing otherwise (begin_other: a
 * nested begin, an unregistered thread, a begin inside a hook, for each of
 * which sstm__begin returns NULL). All return SSTM__CKPT_START, which the
 * assembly returns to the caller. */
__attribute__((visibility("hidden"))) int sstm__begin_top(struct sstm_desc *tx,
                                                          const sstm_attr_t *attr);
__attribute__((visibility("hidden"))) int sstm__begin_top_slow(struct sstm_desc *tx,
                                                               const sstm_attr_t *attr);
__attribute__((visibility("hidden"))) int sstm__begin_other(const sstm_attr_t *attr);

int sstm__begin_top(struct sstm_desc *tx, const sstm_attr_t *attr) {
  /* The gate word was zero: depth 1 with in_hook and slow_begin still
   * zero, as one store. */
  tx->gate = 1;
  return begin_outer(tx, attr, true);
}

int sstm__begin_top_slow(struct sstm_desc *tx, const sstm_attr_t *attr) {
  tx->depth = 1;
  return begin_outer(tx, attr, false);
}

int sstm__begin_other(const sstm_attr_t *attr) {
  (void)sstm__begin(attr); /* NULL in each of those cases */
  return SSTM__CKPT_START;
}

#include "core/desc_offsets.h"
_Static_assert(offsetof(struct sstm_desc, gate) == SSTM_DESC_OFF_GATE &&
                   offsetof(struct sstm_desc, depth) == SSTM_DESC_OFF_GATE &&
                   offsetof(struct sstm_desc, in_hook) == SSTM_DESC_OFF_GATE + 2 &&
                   offsetof(struct sstm_desc, slow_begin) == SSTM_DESC_OFF_GATE + 3,
               "desc_offsets.h: the gate word is depth, in_hook, slow_begin");
_Static_assert(sizeof(((struct sstm_desc *)0)->depth) == 2 &&
                   sizeof(((struct sstm_desc *)0)->in_hook) == 1 &&
                   sizeof(((struct sstm_desc *)0)->slow_begin) == 1 &&
                   sizeof(((struct sstm_desc *)0)->gate) == 4,
               "desc_offsets.h: the assembly reads the gate as 4 bytes");
_Static_assert(offsetof(struct sstm_desc, ckpt) == SSTM_DESC_OFF_CKPT, "desc_offsets.h: ckpt");
#if SSTM_DESC_INLINE_ABI != SSTM__INLINE_ABI
#error "desc_offsets.h: SSTM_DESC_FAST_CUR names another inline generation's sstm__fast_cur"
#endif

/* No attempt runs (the variant says so), but an executor's preemption
 * request that arrived during the attempt is kept, for the restart point
 * (9.6). relaxed: as every change of the variant byte (engine.h). The loop
 * only retries when a requester sets the flag meanwhile. */
static void variant_none_keep_request(struct sstm_desc *tx) {
  uint8_t v = atomic_load_explicit(&tx->variant, memory_order_relaxed);
  while (!atomic_compare_exchange_weak_explicit(&tx->variant, &v,
                                                (uint8_t)(SSTM_V_NONE | (v & SSTM_V_PREEMPTFLAG)),
                                                memory_order_relaxed, memory_order_relaxed))
    ;
}

/* An executor asked for the attempt to be switched out, and it is at a
 * point where nothing is held across the hook (9.6): before an update
 * commit begins (`where` SSTM_EXEC_AT_COMMIT; depth is raised for the
 * call, so that a detach there marks the attempt paused), or between a
 * rolled-back attempt and its retry (SSTM_EXEC_AT_RESTART; depth 0, holds
 * nothing). The flag is consumed here, as at a barrier. */
static SSTM_NOINLINE void preempt_point(struct sstm_desc *tx, int where) {
  /* acquire: pairs with the requester's release fetch_or (exec.c) */
  atomic_fetch_and_explicit(&tx->variant, (uint8_t)~SSTM_V_PREEMPTFLAG, memory_order_acquire);
  uint32_t depth = tx->depth;
  if (where == SSTM_EXEC_AT_COMMIT) tx->depth = 1;
  (void)sstm__exec_point(tx, where, NULL);
  tx->depth = depth;
}

/* The attempt has ended (committed: after its commit, before its commit
 * actions; else after its rollback, before its abort actions): store the
 * end mark's value for that outcome, if it has one (sstm__end_mark,
 * src/iface/libc_services.h). release: pairs with the acquire load of a
 * thread that waits for the mark, so that what this attempt did (its
 * commit, or its rollback, and the caller's plain stores before the end)
 * happens before what that thread does once it sees the value. */
SSTM_INLINE void mark_fire(struct sstm_desc *tx, bool committed) {
  _Atomic uint64_t *w = tx->end_mark;
  if (w == NULL) return;
  tx->end_mark = NULL;
  atomic_store_explicit(w, tx->end_mark_v[committed], memory_order_release);
}

/* Roll the attempt back: locks, allocations, frees, callbacks. */
/* Returns the reason counted: r, or SSTM_ABORT_KILLED for an attempt that
 * was killed while it was already aborting on a conflict (6.6): the kill
 * took effect (the killer counted it, and may have taken a lock over), so
 * it is counted as one. User restarts and cancels keep their reason. */
static sstm_abort_reason_t rollback(struct sstm_desc *tx, sstm_abort_reason_t r) {
  bool irrev = sstm__kind(tx) == SSTM_V_IRREV; /* escalated: sstm_restart/cancel */
  DELAY_POINT(tx);
  if (SSTM_UNLIKELY(irrev))
    sstm__irrev_undo(tx);
  else
    release_locks_abort(tx);
  sstm__seam(SSTM_SEAM_ROLLBACK_LOCKS_RELEASED, NULL);
  DELAY_POINT(tx);
  /* The attempt's blocks are given back here, or, when it registered abort
   * actions, after them (run_abort_actions), which may still use them. */
  if (SSTM_LIKELY(tx->nactions == 0))
    sstm__reclaim_abort(tx);
  else
    tx->frees.n = 0;
  /* (5.3) acq_rel exchange: release so that readers of our status (reclaimers,
   * waiting policies) see our accesses and lock releases done; the exchange
   * returns the flags watchers set (lockword.h). */
  uint64_t old = atomic_exchange_explicit(&tx->status, sstm_st_make(sstm__serial(tx), SSTM_ST_IDLE),
                                          memory_order_acq_rel);
  attempt_ended(tx, old);
  /* (4.8) a commit that failed its validation ends here */
  if (SSTM_UNLIKELY(sstm_st_state(old) == SSTM_ST_COMMITTING)) committing_ended(tx);
  if (SSTM_UNLIKELY(tx->end_mark != NULL)) mark_fire(tx, false);
  if (SSTM_UNLIKELY(sstm_st_state(old) == SSTM_ST_KILLED) && r != SSTM_ABORT_USER_RETRY &&
      r != SSTM_ABORT_USER_CANCEL)
    r = SSTM_ABORT_KILLED;
  if (SSTM_UNLIKELY(irrev)) sstm__irrev_release(tx);
  sstm__ctr_add(&tx->ctr.aborts[r], 1);
  if (sstm__g.cfg.stats == SSTM_STATS_DETAILED && tx->attr.tag < SSTM_MAX_TAGS)
    sstm__ctr_add(&tx->ctr.tag_aborts[tx->attr.tag], 1);
  /* Outside the transaction now (abort_tx runs the user's abort actions
   * and the policy); the restart (or the cancel) sets depth and variant
   * again. A preemption request is kept for the restart point (9.6). */
  tx->depth = 0;
  variant_none_keep_request(tx);
  return r;
}

/* After the rollback: record the abort, then the hooks, the user's abort
 * actions and the policy, in that order. */
static void abort_notify(struct sstm_desc *tx, sstm_abort_reason_t r, const sstm_party_t *other) {
  tx->last_abort.reason = r;
  tx->last_abort.has_other = other != NULL;
  if (other) tx->last_abort.other = *other;
  /* Published before the policy acts on it (a kernel-side scheduler reading
   * the table sees the conflict while the loser waits). */
  if (SSTM_UNLIKELY(tx->stt)) sstm__stt_abort(tx, r, other);
  tx->in_callback++;
  if (SSTM_UNLIKELY(atomic_load_explicit(&sstm__g.nhooks, memory_order_relaxed))) {
    tx->in_hook++;
    sstm__hooks_abort(sstm__serial(tx), r);
    tx->in_hook--;
  }
  if (r != SSTM_ABORT_USER_CANCEL) {
    tx->slow |= SSTM_SLOW_RETRIED; /* the commit records max_retries */
    tx->retries++;
    sstm__ctr_add(&tx->ctr.retries, 1);
  }
  /* The policy's view of the attempt that ended, taken now: the user's
   * abort actions run next, and one may run a transaction on this
   * descriptor, which rewrites the serial and set sizes cm_ctx() reads
   * (run_abort_actions puts cm_ctx and last_abort back as they were). The
   * actions run before the policy acts, not after: what the policy does
   * for the retry (softser lowers the thread's priority) must not be
   * undone by the commit of an action's transaction. */
  sstm_cm_ctx_t *ctx = cm_ctx(tx);
  if (SSTM_UNLIKELY(tx->nactions)) run_abort_actions(tx);
  /* The policy learns of every ended attempt, cancelled ones included (a
   * watched attempt's end must reach it). */
  if (tx->cm->on_abort) {
    uint64_t t0 = sstm__now_ns();
    tx->in_hook++;
    tx->cm->on_abort(ctx, &tx->last_abort);
    tx->in_hook--;
    sstm__ctr_add(&tx->ctr.cm_wait_ns, sstm__now_ns() - t0);
  }
  tx->in_callback--;
  /* A transaction that gives up after retries counts as one that retried
   * (the commit path records the others). */
  if (r == SSTM_ABORT_USER_CANCEL && tx->retries) sstm__ctr_max(&tx->ctr.max_retries, tx->retries);
}

/* A transaction ended by its cancel, once the policy has seen the abort:
 * it leaves what every end of a transaction leaves (attempt_start_fast). */
static void transaction_abandoned(struct sstm_desc *tx) {
  retry_state_clear(tx);
  if (tx->ws.n) sstm_wset_reset(&tx->ws);
}

__attribute__((noreturn)) void sstm__abort_tx(struct sstm_desc *tx, sstm_abort_reason_t r,
                                              const sstm_party_t *other) {
  /* The jump below discards every frame above the checkpoint, among them
   * any callback of this attempt that was running (the sampling callback or
   * a begin hook whose barrier lost a conflict): its in_hook decrement would
   * never run. Nothing outside the attempt runs with in_hook set. The same
   * for the executor's no-preemption regions (exec.h), which only a
   * request's body opens: the body runs again from its begin, or not at
   * all after a cancel. relaxed: owner-only, as in
   * sstm__exec_nopreempt_enter. */
  tx->in_hook = 0;
  atomic_store_explicit(&tx->nopreempt, 0, memory_order_relaxed);
  /* A request that a region of the attempt kept standing would have been
   * served at the region's end, which will not come: the restart point
   * serves it instead. relaxed: owner-only, as nopreempt. */
  bool standing = atomic_load_explicit(&tx->preempt_standing, memory_order_relaxed);
  sstm_party_t killer;
  if (rollback(tx, r) != r) { /* killed meanwhile: name the killer if recorded */
    r = SSTM_ABORT_KILLED;
    if (sstm__killer_of(tx, &killer)) other = &killer;
  }
  abort_notify(tx, r, other);
  if (r == SSTM_ABORT_USER_CANCEL) {
    transaction_abandoned(tx);
    SSTM_ASAN_NO_RETURN();
    sstm__ckpt_restore(&tx->ckpt, SSTM__CKPT_CANCEL);
  }
  if (SSTM_UNLIKELY((sstm__variant(tx) & SSTM_V_PREEMPTFLAG) || standing))
    preempt_point(tx, SSTM_EXEC_AT_RESTART);
  tx->depth = 1; /* flat nesting: the restart resumes the outermost block */
  attempt_start(tx, false);
  SSTM_ASAN_NO_RETURN();
  sstm__ckpt_restore(&tx->ckpt, SSTM__CKPT_RESTART);
}

/* The bytes of a partial redo-log entry (store_masked, tx_internal.h). */
void sstm__store_masked_part(uintptr_t word, uint64_t value, uint64_t bmask) {
  for (unsigned off = 0; off < 8;) {
    uint64_t m4 = 0xffffffffull << (off * 8), m2 = 0xffffull << (off * 8);
    if ((bmask & (0xffull << (off * 8))) == 0) {
      off++;
    } else if (off % 4 == 0 && (bmask & m4) == m4) {
      mem_store((void *)(word + off), value >> (off * 8), 4);
      off += 4;
    } else if (off % 2 == 0 && (bmask & m2) == m2) {
      mem_store((void *)(word + off), value >> (off * 8), 2);
      off += 2;
    } else {
      mem_store((void *)(word + off), value >> (off * 8), 1);
      off++;
    }
  }
}

/* CTL: lock the write set (4.2), only versions the snapshot covers
 * (2.4). */
static void lock_write_set(struct sstm_desc *tx) {
  sstm__owner_ready(tx);
  for (uint32_t i = 0; i < tx->ws.n; i++) {
    const void *addr = (const void *)tx->ws.e[i].word;
    _Atomic uint64_t *lk = sstm__lock_for(tx, addr);
    uint64_t l = atomic_load_explicit(lk, memory_order_acquire);
    for (;;) {
      if (l == tx->owner_lw) break;
      if (sstm_lw_locked(l)) {
        l = sstm__resolve(tx, SSTM_CONFLICT_COMMIT_LOCKED, addr, lk, l);
        continue;
      }
      if (sstm_lw_version(l) > tx->end) {
        if (!sstm__extend(tx))
          sstm__conflict_abort(tx, SSTM_CONFLICT_VALIDATION, SSTM_ABORT_VALIDATE_COMMIT, addr);
        l = atomic_load_explicit(lk, memory_order_acquire);
        continue;
      }
      /* acq_rel, as in the ETL write barrier: acquire for our reads of the
       * stripe; release, so that a reader that sees this lock word also
       * sees our COMMITTING status and does not pass it (8.1). */
      if (atomic_compare_exchange_weak_explicit(lk, &l, tx->owner_lw, memory_order_acq_rel,
                                                memory_order_acquire)) {
        if (!sstm_lset_add(&tx->ls, lk, l)) sstm__oom();
        break;
      }
    }
  }
}

/* (4.5)-(4.8) of an update commit, the write-back from entry `from` on
 * (the release fence already done), for an attempt whose running status
 * was `st` and whose timestamp is ts. */
SSTM_INLINE void commit_writeback_release(struct sstm_desc *tx, uint64_t st, uint64_t ts,
                                          uint32_t from) {
  for (uint32_t i = from; i < tx->ws.n; i++) {
    store_masked(tx->ws.e[i].word, tx->ws.e[i].value, tx->ws.e[i].bmask);
    if (i == 0) DELAY_POINT(tx); /* a write-back half done */
  }
  sstm__seam(SSTM_SEAM_COMMIT_WRITTEN_BACK, NULL);
  uint64_t v = sstm_lw_make_version(ts);
  for (uint32_t i = 0; i < tx->ls.n; i++) {
    /* (4.6) release: a reader acquiring version ts sees the write-back. */
    atomic_store_explicit(tx->ls.e[i].lock, v, memory_order_release);
    if (i == 0) DELAY_POINT(tx); /* some locks released, others not */
  }
  tx->ls.n = 0; /* every attempt ends with an empty lock log (attempt_start_fast) */
  /* (4.7) release: the attempt has ended with everything visible (5.3).
   * A plain store: flags cannot change while COMMITTING, so `st` has them. */
  atomic_store_explicit(&tx->status, sstm_st_make(sstm_st_serial(st), SSTM_ST_IDLE),
                        memory_order_release);
  attempt_ended(tx, st);
  committing_ended(tx); /* (4.8) */
}

/* (4.3)'s test of the irrevocable flag and (4.4)-(4.8), once the clock
 * word before our increment, c, is known. */
SSTM_INLINE void commit_after_clock(struct sstm_desc *tx, uint64_t st, uint64_t c) {
  if (SSTM_UNLIKELY(sstm_clock_irrevocable(c)))
    sstm__conflict_abort(tx, SSTM_CONFLICT_IRREVOCABLE, SSTM_ABORT_IRREVOCABLE, NULL);
  uint64_t ts = sstm_clock_time(c) + 1;
  DELAY_POINT(tx);
  if (ts != tx->end + 1 && !sstm__validate(tx)) /* (4.4) */
    sstm__conflict_abort(tx, SSTM_CONFLICT_VALIDATION, SSTM_ABORT_VALIDATE_COMMIT, NULL);
  /* (4.5) release fence: the write-back stores are not visible before our
   * locks (seqlock writer side, (1.5); pairs with the readers' acquire
   * fence, (1.3)). */
  atomic_thread_fence(memory_order_release);
  commit_writeback_release(tx, st, ts, 0);
}

/* An update commit, (4.1)-(4.8). */
static void commit_update(struct sstm_desc *tx) {
  uint64_t st = atomic_load_explicit(&tx->status, memory_order_relaxed);
  /* (4.1) acq_rel: after this no kill succeeds and no watch flag can be set;
   * acquire orders our later reads of lock words after any state change a
   * killer made. The loop only retries when a watcher set a flag. */
  do {
    if (sstm_st_state(st) != SSTM_ST_ACTIVE)
      sstm__conflict_abort(tx, SSTM_CONFLICT_KILLED, SSTM_ABORT_KILLED, NULL);
  } while (!atomic_compare_exchange_weak_explicit(&tx->status, &st,
                                                  sstm_st_with_state(st, SSTM_ST_COMMITTING),
                                                  memory_order_acq_rel, memory_order_relaxed));
  DELAY_POINT(tx);
  if (tx->design == SSTM_DESIGN_CTL) lock_write_set(tx); /* (4.2) */
  DELAY_POINT(tx);
  /* (4.3) acq_rel: release publishes our locks (and COMMITTING) to whoever reads
   * this clock value ((2), (7.2)); acquire makes the locks of commits
   * counted before us visible to validate(). */
  uint64_t c = atomic_fetch_add_explicit(&sstm__g.clock, SSTM_CLOCK_TICK, memory_order_acq_rel);
  commit_after_clock(tx, st, c);
}

/* The rest of a commit, once the attempt has ended: detailed statistics,
 * deferred frees, policy and state-table notification, hooks, then the
 * user's actions last: an action may run transactions on this descriptor,
 * which rewrite the attempt's state (serial, cm_ctx.watched), so whatever
 * reports this attempt must run before them (softser's winner cleared its
 * losers' conflict counts only if `watched` survived the actions). Only
 * what the attempt used costs anything. */
static SSTM_NOINLINE int commit_tail(struct sstm_desc *tx) {
  bool slow = tx->slow & SSTM_SLOW_COMMIT; /* the features it summarises */
  mark_fire(tx, true);                     /* first: what follows may wait for others */
  if (SSTM_UNLIKELY(tx->retries)) sstm__ctr_max(&tx->ctr.max_retries, tx->retries);
  /* Reached by every commit that allocated or freed (SSTM_SLOW_MEM). */
  if (slow && sstm__g.cfg.stats == SSTM_STATS_DETAILED) {
    sstm__ctr_add(&tx->ctr.reads_total, sstm_rset_count(&tx->rs));
    sstm__ctr_add(&tx->ctr.writes_total, tx->ws.n);
    sstm__ctr_max(&tx->ctr.reads_max, sstm_rset_count(&tx->rs));
    sstm__ctr_max(&tx->ctr.writes_max, tx->ws.n);
    if (tx->attr.tag < SSTM_MAX_TAGS) sstm__ctr_add(&tx->ctr.tag_commits[tx->attr.tag], 1);
  }
  if (SSTM_UNLIKELY(tx->frees.n)) sstm__reclaim_commit(tx);
  tx->allocs.n = 0;
  tx->in_callback++;
  tx->in_hook++;
  if (slow && tx->cm->on_commit) tx->cm->on_commit(cm_ctx(tx));
  if (slow && tx->stt) sstm__stt_commit(tx);
  if (SSTM_UNLIKELY(atomic_load_explicit(&sstm__g.nhooks, memory_order_relaxed)))
    sstm__hooks_commit(sstm__serial(tx));
  tx->in_hook--;
  tx->in_callback--;
  /* What every end of a transaction leaves, for the next begin and for the
   * actions' transactions below (attempt_start_fast). */
  retry_state_clear(tx);
  if (tx->ws.n) sstm_wset_reset(&tx->ws);
  /* The transaction's own reasons to come here are dealt with (the actions'
   * transactions, below, set their own). */
  tx->slow &= SSTM_SLOW_FIXED;
  if (SSTM_UNLIKELY(tx->nactions)) run_actions_committed(tx);
  return 0;
}

/* commit_tail when the only thing left is the allocation and free logs
 * (SSTM_SLOW_MEM alone, no hook): a transaction that allocated or freed
 * blocks and nothing else, common enough (every insertion of a linked
 * structure) to skip the rest of the tail. */
static SSTM_NOINLINE int commit_mem(struct sstm_desc *tx) {
  if (tx->frees.n) sstm__reclaim_commit(tx);
  tx->allocs.n = 0;
  tx->slow &= (uint8_t)~SSTM_SLOW_MEM;
  if (tx->ws.n) sstm_wset_reset(&tx->ws);
  return 0;
}

/* commit_tail when the only thing left is the user's actions
 * (SSTM_SLOW_ACTIONS alone, no hook): a transaction that registered
 * actions and did nothing else commit_tail deals with (no retry, so the
 * retry state is clear; no allocation or free; no commit-time feature), as
 * every transaction of one call of the transactional stdio does. What
 * commit_tail would leave, then the actions, last as there. */
static SSTM_NOINLINE int commit_actions(struct sstm_desc *tx) {
  tx->slow = 0; /* SSTM_SLOW_ACTIONS alone: no fixed bit either */
  if (tx->ws.n) sstm_wset_reset(&tx->ws);
  if (tx->nactions != 1) {
    run_actions_committed(tx);
    return 0;
  }
  /* One action: a copy of it, instead of taking the array out
   * (actions_take): the action's own transactions may register theirs in
   * the array, now empty, without overwriting it. */
  sstm_action_t a = tx->actions[0];
  tx->nactions = 0;
  tx->in_callback++;
  action_run(&a, true);
  tx->in_callback--;
  return 0;
}

/* commit_tail when the only thing left is the end mark (SSTM_SLOW_MARK
 * alone, no hook): the transactional stdio's transactions of a stream that
 * one thread uses alone (src/libc/stdio.c, "solo"). */
static SSTM_NOINLINE int commit_mark(struct sstm_desc *tx) {
  tx->slow = 0; /* SSTM_SLOW_MARK alone: no fixed bit either */
  mark_fire(tx, true);
  if (tx->ws.n) sstm_wset_reset(&tx->ws);
  return 0;
}

/* commit_tail for a commit whose status had no flags, so that its attempt
 * was not watched: the fast paths, which do not store `watched` when no
 * policy reads it. */
static SSTM_NOINLINE int commit_tail_unwatched(struct sstm_desc *tx) {
  uint8_t slow = tx->slow;
  /* One test per short tail, the allocations' first (every insertion or
   * removal of a linked structure comes here). */
  if (!atomic_load_explicit(&sstm__g.nhooks, memory_order_relaxed)) {
    if (slow == SSTM_SLOW_MEM) return commit_mem(tx);
    if (slow == SSTM_SLOW_MARK) return commit_mark(tx);
    if (slow == SSTM_SLOW_ACTIONS) return commit_actions(tx);
  }
  tx->cm_ctx.watched = false;
  return commit_tail(tx);
}

/* What every commit does once its attempt has ended (depth 0): the
 * variant, the count, the redo log emptied, and commit_tail when something
 * is left to do. The test is the one of sstm_commit's read-only path: most
 * commits have no reason to enter commit_tail (allocations and frees set
 * SSTM_SLOW_MEM). `unwatched`: the attempt's status had no flags and
 * attempt_ended was not called (the frameless update commit). */
SSTM_INLINE int commit_ended(struct sstm_desc *tx, bool update, bool unwatched) {
  sstm__set_variant(tx, SSTM_V_NONE);
  sstm__ctr_add(update ? &tx->ctr.commits_update : &tx->ctr.commits_ro, 1);
  if (SSTM_UNLIKELY(tx->slow | atomic_load_explicit(&sstm__g.nhooks, memory_order_relaxed)))
    return unwatched ? commit_tail_unwatched(tx) : commit_tail(tx);
  if (update || tx->ws.n) sstm_wset_reset(&tx->ws); /* irrevocable: its undo log */
  return 0;
}

/* Update, irrevocable, killed or watched attempts. */
static SSTM_NOINLINE int commit_slow(struct sstm_desc *tx) {
  unsigned var = sstm__variant(tx), kind = var & 3;
  /* An irrevocable attempt's ws is its undo log; one that wrote with plain
   * stores (sstm__irrev_plain_writes) logged nothing of them. */
  bool update = tx->ws.n != 0 || (kind == SSTM_V_IRREV && tx->irrev_plain);
  if (SSTM_UNLIKELY(var & SSTM_V_PREEMPTFLAG) && update && kind != SSTM_V_IRREV) {
    preempt_point(tx, SSTM_EXEC_AT_COMMIT);
  }
  if (kind == SSTM_V_IRREV) {
    sstm__commit_irrevocable(tx);
    tx->ls.n = 0; /* as commit_update */
    sstm__ctr_add(&tx->ctr.commits_irrevocable, 1);
  } else if (update) {
    tx->depth = 1; /* an abort inside commit restarts the block */
    commit_update(tx);
    tx->depth = 0;
  } else {
    /* Read-only, killed or watched. A kill requested before this point is
     * honoured (relaxed: best effort, the attempt's snapshot was consistent
     * either way). */
    uint64_t st = atomic_load_explicit(&tx->status, memory_order_relaxed);
    if (SSTM_UNLIKELY(sstm_st_state(st) == SSTM_ST_KILLED)) {
      tx->depth = 1;
      sstm__conflict_abort(tx, SSTM_CONFLICT_KILLED, SSTM_ABORT_KILLED, NULL);
    }
    /* acq_rel exchange: as in rollback; returns the watchers' flags. */
    attempt_ended(tx, atomic_exchange_explicit(&tx->status,
                                               sstm_st_make(sstm__serial(tx), SSTM_ST_IDLE),
                                               memory_order_acq_rel));
  }
  return commit_ended(tx, update, false);
}

/* The general path of an update commit, entered by the frameless one
 * (sstm_commit) once the clock was incremented: its word before, c, is
 * irrevocable or shows that another commit happened since `end` (4.4). */
static SSTM_NOINLINE int commit_fast_validate(struct sstm_desc *tx, uint64_t st, uint64_t c) {
  tx->depth = 1; /* an abort inside commit restarts the block */
  commit_after_clock(tx, st, c);
  tx->depth = 0;
  return commit_ended(tx, true, false);
}

/* The same from entry i of the write-back on, which is not a whole word
 * (store_masked's rarer cases may call). */
static SSTM_NOINLINE int commit_fast_partial(struct sstm_desc *tx, uint64_t st, uint64_t ts,
                                             uint32_t i) {
  commit_writeback_release(tx, st, ts, i);
  return commit_ended(tx, true, false);
}

/* The end of the frameless update commit when threads sleep until its
 * COMMITTING attempt ends (4.8): wake them. */
static SSTM_NOINLINE int commit_fast_wake(struct sstm_desc *tx) {
  sstm__futex_wake_all(&tx->status);
  return commit_ended(tx, true, true);
}

/* The common update commit, (4.1) and (4.3)-(4.8) as commit_update does
 * them, without a stack frame: an ETL attempt whose variant byte carries
 * no flag (not killed, no preemption request, no sampling, not
 * irrevocable), whose status `st` (depth already 0) is ACTIVE without
 * flags, so that nobody sleeps on it or watches it, whose snapshot needs
 * no validation at commit, and whose redo-log entries are whole words.
 * Anything else leaves for commit_slow before (4.1), or for the general
 * code at the step where it left (commit_fast_validate,
 * commit_fast_partial), so that no call in the common case needs a frame
 * here. Inlined into commit_outermost as the branch its write-set test
 * jumps to, so that an update commit takes one taken branch (that jump)
 * and a read-only commit none. As a function of its own, entered by a tail
 * call, the read-only commit jumped over the call (one taken branch) and
 * the update commit took the call's jump; inlined, the compiler computes
 * the CAS's address before the write-set test, one more instruction on
 * every read-only commit (docs/benchmarks-history.md, "The read-only
 * commit's taken branch"). The variant is tested here, after the
 * write-set test, so that the read-only commit does not load it. */
SSTM_INLINE int commit_update_fast(struct sstm_desc *tx, uint64_t st) {
  /* relaxed: as every read of the variant byte (engine.h) */
  if (SSTM_UNLIKELY(atomic_load_explicit(&tx->variant, memory_order_relaxed) != SSTM_V_ETL))
    return commit_slow(tx);
  /* (4.1) acq_rel, as in commit_update. A weak CAS: a spurious failure, or
   * a flag set meanwhile, takes the general path, which starts over. */
  if (SSTM_UNLIKELY(!atomic_compare_exchange_weak_explicit(
          &tx->status, &st, sstm_st_with_state(st, SSTM_ST_COMMITTING), memory_order_acq_rel,
          memory_order_relaxed)))
    return commit_slow(tx);
  DELAY_POINT(tx);
  /* (4.3) acq_rel, as in commit_update. */
  uint64_t c = atomic_fetch_add_explicit(&sstm__g.clock, SSTM_CLOCK_TICK, memory_order_acq_rel);
  /* Not irrevocable and ts == end + 1 (4.4): one comparison, since the
   * flag is the clock word's low bit and end is a time. */
  if (SSTM_UNLIKELY(c != tx->end << 1)) return commit_fast_validate(tx, st, c);
  uint64_t ts = tx->end + 1;
  DELAY_POINT(tx);
  /* (4.5) release fence, as in commit_after_clock. */
  atomic_thread_fence(memory_order_release);
  const sstm_w_entry_t *e = tx->ws.e, *we = e + tx->ws.n;
  for (; e != we; e++) {
    if (SSTM_UNLIKELY(e->bmask != ~0ull))
      return commit_fast_partial(tx, st, ts, (uint32_t)(e - tx->ws.e));
    mem_store((void *)e->word, e->value, 8);
    DELAY_POINT(tx); /* a write-back half done */
  }
  sstm__seam(SSTM_SEAM_COMMIT_WRITTEN_BACK, NULL);
  uint64_t v = sstm_lw_make_version(ts);
  const sstm_l_entry_t *l = tx->ls.e, *le = l + tx->ls.n;
  for (; l != le; l++) {
    /* (4.6) release, as in commit_writeback_release. */
    atomic_store_explicit(l->lock, v, memory_order_release);
    DELAY_POINT(tx); /* some locks released, others not */
  }
  tx->ls.n = 0;
  /* (4.7) release, a plain store as in commit_writeback_release; `st` had
   * no flags (the CAS compared them), so there is nobody to wake and the
   * attempt was not watched (attempt_ended). */
  atomic_store_explicit(&tx->status, sstm_st_with_state(st, SSTM_ST_IDLE), memory_order_release);
  /* (4.8) as committing_ended does it, with the wake-up as a tail call:
   * the compiler-only fence, then the sleepers' count. */
  atomic_signal_fence(memory_order_seq_cst);
  if (SSTM_UNLIKELY(atomic_load_explicit(&tx->commit_sleepers, memory_order_relaxed)))
    return commit_fast_wake(tx);
  return commit_ended(tx, true, true);
}

/* The outermost commit of tx (depth already 0), every case: one test
 * sends everything but the common read-only and update commits to
 * commit_slow. The read-only commit runs straight through to its return
 * (no taken branch); the update commit is out of line
 * (commit_update_fast). */
SSTM_INLINE int commit_outermost(struct sstm_desc *tx) {
  /* relaxed: only the owner leaves ACTIVE except by a killer's CAS, and a
   * kill that this load misses came too late to matter (the attempt's
   * snapshot was consistent at `end`). */
  uint64_t st = atomic_load_explicit(&tx->status, memory_order_relaxed);
  /* The low byte alone: the serial part is this attempt's (only the owner
   * starts attempts); killers change the state and watchers the flags, all
   * in the low byte (lockword.h). */
  if (SSTM_UNLIKELY((st & 0xff) != SSTM_ST_ACTIVE)) return commit_slow(tx);
  if (tx->ws.n != 0) return commit_update_fast(tx, st);
  /* Read-only, running, not killed, no watch flags: valid at `end`, nothing
   * to publish. release: see rollback. A plain store, not the exchange of
   * the slow path (a full barrier on every read-only commit): a flag set in
   * the window between the load above and this store is lost. Lock
   * conflicts never name a read-only attempt (it holds no lock), but three
   * waiters can meet one: a victim waiting behind the attempt that killed it
   * (the kill record names killers with empty write sets too), a grace
   * period of reclamation, and a party built by hand. A lost SLEEPERS flag
   * costs such a waiter at most one sleep slice (sstm_party_wait re-reads
   * the status after each, as long as its wait so far, 1 to 16 ms); a lost
   * WATCHED flag leaves a softser loser lowered until its own attempt
   * ends. The redo log is empty: nothing to reset. */
  atomic_store_explicit(&tx->status, sstm_st_with_state(st, SSTM_ST_IDLE), memory_order_release);
  sstm__set_variant(tx, SSTM_V_NONE);
  sstm__ctr_add(&tx->ctr.commits_ro, 1);
  /* Statistics, retries, actions, allocations and frees (the slow byte:
   * SSTM_SLOW_COMMIT and the per-transaction bits), hooks. */
  if (SSTM_UNLIKELY(tx->slow | atomic_load_explicit(&sstm__g.nhooks, memory_order_relaxed))) {
    /* The end mark alone (commit_mark's case, a transaction of the
     * transactional stdio on a stream its thread keeps): stored here,
     * without the calls to the tail. The test above's values again (the
     * compiler would otherwise copy one on the common path). */
    if (((tx->slow ^ SSTM_SLOW_MARK) |
         atomic_load_explicit(&sstm__g.nhooks, memory_order_relaxed)) == 0) {
      tx->slow = 0;
      mark_fire(tx, true);
      return 0;
    }
    return commit_tail_unwatched(tx);
  }
  return 0;
}

/* sstm_commit from a hook, a policy's callback or the sampling callback
 * running within the attempt (in_hook at depth 1): ending the attempt
 * there would leave the body running outside any transaction, its writes
 * dropped. Misuse, refused; the attempt goes on. */
static SSTM_COLD int commit_in_hook(void) {
  sstm__misuse("sstm_commit inside a hook, a contention manager's callback or the sampling "
               "callback of the attempt (they must not end it: hooks.h, cm.h)");
  sstm__set_error("sstm_commit: called from a callback running within the attempt");
  return SSTM_ESTATE;
}

/* sstm_commit when the gate word is not 1: a commit at a depth other
 * than 1 leaves one level of a flat-nested block; a commit outside any
 * transaction (on a thread without a descriptor too: its prefix has depth
 * 0) is misuse, and so is one that would end the attempt from a callback
 * running within it; an outermost one in an action (a transaction of its
 * own) or on a descriptor with begin-time features commits as any other. */
static SSTM_NOINLINE int commit_general(void) {
  struct sstm_desc *tx = sstm__cur;
  if (tx == NULL || tx->depth == 0) {
    if (sstm__debug) sstm__misuse("sstm_commit without a transaction");
    sstm__set_error("sstm_commit: no active transaction");
    return SSTM_ENOTX;
  }
  if (tx->depth > 1) {
    tx->depth--;
    return 0;
  }
  if (SSTM_UNLIKELY(tx->in_hook)) return commit_in_hook();
  tx->depth = 0;
  return commit_outermost(tx);
}

SSTM_API int sstm_commit(void) {
  /* The thread's prefix, which is never NULL (a thread without a
   * descriptor has one whose gate word is 0). The gate word (engine.h) is
   * 1 exactly when depth is 1, outside any callback, on a descriptor
   * without begin-time features: one comparison, and one store leaves
   * depth 0 with the other two bytes as they were. */
  struct sstm_desc *tx = (struct sstm_desc *)(void *)sstm__fast_cur;
  if (SSTM_UNLIKELY(tx->gate != 1)) return commit_general();
  tx->gate = 0;
  return commit_outermost(tx);
}

/* ------------------------------------------------------------------------ */
/* Public control API. */

/* The end of a block (sstm_run, SSTM_ATOMIC_END_RC) found no transaction
 * to commit and the thread has no descriptor: it was never registered, or
 * the body detached its descriptor (sstm_desc_detach), whose transaction
 * is then suspended, not committed. */
static SSTM_COLD int ended_without_descriptor(const char *who) {
  sstm__set_error("%s: the thread has no descriptor at the end of the block (not registered, or "
                  "the body detached it: its transaction is suspended, not committed)",
                  who);
  return SSTM_ENOTHREAD;
}

/* sstm_run's body returned and there was no transaction to commit. A body
 * that detached its descriptor: SSTM_ENOTHREAD rather than 0 as for a
 * commit. A body that committed the transaction itself (sstm_commit) did
 * commit; what it ran after that ran outside any transaction (each access
 * there was reported as misuse). */
static SSTM_COLD int run_nothing_to_commit(void) {
  return sstm__cur == NULL ? ended_without_descriptor("sstm_run") : 0;
}

SSTM_API int sstm_run(const sstm_attr_t *attr, void (*fn)(void *arg), void *arg) {
  if (fn == NULL) {
    sstm__set_error("sstm_run: fn is NULL");
    return SSTM_EINVAL;
  }
  struct sstm_desc *tx = sstm__cur;
  if (tx == NULL) {
    sstm__set_error("sstm_run: calling thread is not registered (sstm_thread_init)");
    return SSTM_ENOTHREAD;
  }
  if (tx->in_hook) {
    sstm__set_error("sstm_run: called from a hook or a contention manager's callback, which must "
                    "not start transactions");
    return SSTM_ESTATE;
  }
#if defined(SSTM_CKPT_USES_LIBC)
  sstm_ckpt_t *c = sstm__begin(attr);
  if (c != NULL && sstm__ckpt_save(c) == SSTM__CKPT_CANCEL) return SSTM_ECANCELED;
#else
  if (sstm__begin_ckpt(attr) == SSTM__CKPT_CANCEL) return SSTM_ECANCELED;
#endif
  fn(arg);
  if (__builtin_expect(sstm_commit() != 0, 0)) return run_nothing_to_commit();
  return 0;
}

/* SSTM_ATOMIC_END_RC's commit found no transaction (tx.h): a thread
 * without a descriptor (never registered, or the body detached it and its
 * transaction is suspended) gets sstm_run()'s SSTM_ENOTHREAD; otherwise
 * the commit's SSTM_ENOTX and its message stand. */
SSTM_API int sstm__atomic_end_error(int rc) {
  if (rc == SSTM_ENOTX && sstm__cur == NULL) return ended_without_descriptor("SSTM_ATOMIC_END_RC");
  return rc;
}

/* Misuse of a call that cannot return: report it, and if the handler
 * returns, end the process (there is no state to return to). */
static SSTM_COLD __attribute__((noreturn)) void misuse_noreturn(const char *msg) {
  sstm__misuse("%s", msg);
  sstm__fatal("%s (the misuse handler returned)", msg);
}

/* A restart or cancel in an irrevocable attempt is misuse when the user
 * asked for irrevocability (attr.irrevocable, which sstm_become_irrevocable
 * also sets): the body may have done what cannot be undone. An attempt that
 * a policy made irrevocable (its progress bound) is rolled back with its
 * undo log, and a restart runs the next attempt revocable again: a body that
 * restarts until another thread changes something must not hold the
 * serial mode while it waits. */
static void user_abort_check(struct sstm_desc *tx, const char *what) {
  if (sstm__kind(tx) != SSTM_V_IRREV) return;
  if (tx->attr.irrevocable) misuse_noreturn(what);
  tx->irrev_sticky = false;
}

SSTM_API void sstm_restart(void) {
  struct sstm_desc *tx = sstm__cur;
  if (!SSTM_IN_TX(tx)) misuse_noreturn("sstm_restart outside a transaction");
  if (tx->in_hook) misuse_noreturn("sstm_restart in a hook or a callback (policy, sampling)");
  user_abort_check(tx, "sstm_restart in a transaction that asked to be irrevocable");
  sstm__abort_tx(tx, SSTM_ABORT_USER_RETRY, NULL);
}

SSTM_API void sstm_cancel(void) {
  struct sstm_desc *tx = sstm__cur;
  if (!SSTM_IN_TX(tx)) misuse_noreturn("sstm_cancel outside a transaction");
  if (tx->in_hook) misuse_noreturn("sstm_cancel in a hook or a callback (policy, sampling)");
  user_abort_check(tx, "sstm_cancel in a transaction that asked to be irrevocable");
  sstm__abort_tx(tx, SSTM_ABORT_USER_CANCEL, NULL);
}

/* The thread running tx's transaction ends inside it (the registry's
 * thread-exit destructor; tx is the thread's current descriptor, outside
 * any callback). Nobody can resume the attempt: its checkpoint is in the
 * stack that is going away. A revocable attempt is cancelled as by
 * sstm_cancel (rolled back, abort actions and policy run), without the
 * jump back, and so is one that a policy made irrevocable (its undo log
 * puts its in-place writes back; the user never asked for it, so what
 * happens must not depend on the policy's private decision). One that
 * asked to be irrevocable may have done what cannot be undone: it is
 * committed, as a mutex is best released, not held for ever, by a thread
 * that ends in its critical section. */
void sstm__abandon(struct sstm_desc *tx) {
  if (sstm__kind(tx) == SSTM_V_IRREV && tx->attr.irrevocable) {
    tx->depth = 1;
    (void)sstm_commit();
    return;
  }
  (void)rollback(tx, SSTM_ABORT_USER_CANCEL);
  abort_notify(tx, SSTM_ABORT_USER_CANCEL, NULL);
  transaction_abandoned(tx);
}

SSTM_API bool sstm_in_tx(void) {
  struct sstm_desc *tx = sstm__cur;
  return tx != NULL && tx->depth != 0;
}

SSTM_API uint64_t sstm_txid(void) {
  struct sstm_desc *tx = sstm__cur;
  return (tx != NULL && tx->depth != 0) ? sstm__serial(tx) : 0;
}

/* Append an action to the array, which has room: fn (SSTM_ACT_END clear
 * in when) or end (set). Scalars, not a structure, so that the callers
 * need no stack frame. */
SSTM_INLINE int action_append(struct sstm_desc *tx, void (*fn)(void *), void (*end)(void *, bool),
                              void *arg, uint8_t when) {
  sstm_action_t *a = &tx->actions[tx->nactions++];
  if (when & SSTM_ACT_END)
    a->end = end;
  else
    a->fn = fn;
  a->arg = arg;
  a->when = when;
  tx->slow |= SSTM_SLOW_ACTIONS; /* the commit runs them */
  return 0;
}

/* The registering function's name, for the error messages. */
static const char *action_api(uint8_t when) {
  return when & SSTM_ACT_END       ? "sstm__on_end"
         : when == SSTM_ACT_COMMIT ? "sstm_on_commit"
                                   : "sstm_on_abort";
}

/* A registration that is not the common case: an error, or an array
 * without room, which doubles (8 entries the first time). Out of line, so
 * that a registration into room the descriptor already has is a leaf
 * function with no stack frame: the array is kept across transactions
 * (run_actions_committed), so a descriptor allocates only until its
 * transactions' largest number of actions is reached. */
static SSTM_NOINLINE int add_action_slow(struct sstm_desc *tx, void (*fn)(void *),
                                         void (*end)(void *, bool), void *arg, uint8_t when) {
  if (!SSTM_IN_TX(tx)) {
    sstm__set_error("%s: no active transaction", action_api(when));
    return SSTM_ENOTX;
  }
  if (fn == NULL && end == NULL) {
    sstm__set_error("%s: fn is NULL", action_api(when));
    return SSTM_EINVAL;
  }
  uint32_t cap = tx->actions_cap ? tx->actions_cap * 2 : 8;
  sstm_action_t *a = realloc(tx->actions, cap * sizeof *a);
  if (a == NULL) {
    sstm__set_error("%s: out of memory for %u actions", action_api(when), cap);
    return SSTM_ENOMEM;
  }
  tx->actions = a;
  tx->actions_cap = cap;
  return action_append(tx, fn, end, arg, when);
}

/* Register fn or end (the other NULL) with when's SSTM_ACT_* bits. */
SSTM_INLINE int add_action(void (*fn)(void *), void (*end)(void *, bool), void *arg, uint8_t when) {
  /* The never-NULL prefix (as in sstm_commit): depth 0 also on a thread
   * without a descriptor, which add_action_slow tells apart. */
  struct sstm_desc *tx = (struct sstm_desc *)(void *)sstm__fast_cur;
  if (SSTM_UNLIKELY(tx->depth == 0 || (fn == NULL && end == NULL) ||
                    tx->nactions == tx->actions_cap))
    return add_action_slow(sstm__cur, fn, end, arg, when);
  return action_append(tx, fn, end, arg, when);
}

SSTM_API int sstm_on_commit(void (*fn)(void *), void *arg) {
  return add_action(fn, NULL, arg, SSTM_ACT_COMMIT);
}
SSTM_API int sstm_on_abort(void (*fn)(void *), void *arg) {
  return add_action(fn, NULL, arg, SSTM_ACT_ABORT);
}
/* (src/iface/libc_services.h) One entry that both loops run: one
 * registration instead of two for a caller that needs both. */
int sstm__on_end(void (*fn)(void *arg, bool committed), void *arg) {
  return add_action(NULL, fn, arg, SSTM_ACT_COMMIT | SSTM_ACT_ABORT | SSTM_ACT_END);
}

/* (src/iface/libc_services.h) Three stores and the slow bit; the
 * read-only commit (commit_outermost), the commit's tail (commit_mark,
 * commit_tail) or the rollback stores the value. Returns the attempt's id
 * as sstm_txid() does, so that the caller needs no call for it. */
uint64_t sstm__end_mark(_Atomic uint64_t *word, uint64_t on_commit, uint64_t on_abort) {
  /* The never-NULL prefix, as in add_action. */
  struct sstm_desc *tx = (struct sstm_desc *)(void *)sstm__fast_cur;
  if (SSTM_UNLIKELY(tx->depth == 0)) return 0; /* no error recorded: a query as well */
  tx->end_mark = word;
  tx->end_mark_v[0] = on_abort;
  tx->end_mark_v[1] = on_commit;
  tx->slow |= SSTM_SLOW_MARK; /* a NULL word left behind costs one slow commit */
  return sstm__serial(tx);
}

/* (src/iface/libc_services.h) A descriptor of sstm_desc_create() may be
 * detached inside its transaction and attached again later
 * (registry.c, sstm_desc_detach); one of sstm_thread_init() may not. The
 * descriptor's kind, not the depth: the stdio layer also asks from the
 * actions of a commit (its installation), where depth is 0 already. */
bool sstm__attempt_suspendable(void) {
  const struct sstm_desc *tx = sstm__cur;
  return tx != NULL && !tx->thread_owned;
}

/* (src/iface/libc_services.h) A wait outside the barriers (the stdio
 * layer's for a byte stream's data) looks for what would roll the attempt
 * back at its next barrier: a kill (flags_seen, sstm__resolve), so that it
 * releases what it holds to the attempt that killed it, or a read that a
 * commit made stale (2.1-2.3: the snapshot is extended, as a barrier
 * does when it meets a newer version), which commit-time locking, where
 * nobody meets the waiter's buffered writes, would otherwise find only
 * when the wait is over. An irrevocable attempt is never killed and its
 * reads stay valid. */
void sstm__attempt_check(void) {
  struct sstm_desc *tx = sstm__cur;
  if (tx == NULL || tx->depth == 0 || sstm__kind(tx) == SSTM_V_IRREV) return;
  /* acquire fence: as flags_seen's, so that check_killed's relaxed load
   * of status follows whatever this thread saw before the call; a kill it
   * misses is seen at the next check, or at the commit */
  atomic_thread_fence(memory_order_acquire);
  sstm__check_killed(tx);
  /* A declared read-only attempt without a read set cannot be validated:
   * an extension would pass over an empty set and let it read newer data
   * beside older. It keeps its snapshot, and its next read of a newer
   * stripe aborts it (SSTM_ABORT_RO_EXTEND), as any of its barriers does. */
  if (sstm__kind(tx) == SSTM_V_RO) return;
  if (!sstm__extend(tx))
    sstm__conflict_abort(tx, SSTM_CONFLICT_VALIDATION, SSTM_ABORT_VALIDATE_READ, NULL);
}

/* (9.7) src/iface/libc_services.h. Only an attempt that holds locks is
 * marked: one without any (commit-time locking, or nothing written yet)
 * is met by nobody. */
bool sstm__attempt_wait_begin(void) {
  struct sstm_desc *tx = sstm__cur;
  if (tx == NULL || tx->depth == 0 || sstm__kind(tx) == SSTM_V_IRREV || tx->ls.n == 0) return false;
  /* (9.1) release: a reaper whose acquire CAS sees the mark sees the lock
   * set as this thread left it; the thread changes it no more until end. */
  atomic_fetch_or_explicit(&tx->pause, SSTM_PAUSE_WAITING, memory_order_release);
  return true;
}

void sstm__attempt_wait_end(bool marked) {
  /* (9.5) acquire, waiting out a reaper: the caller's check then sees the
   * KILLED status and the releases before it. */
  if (marked) sstm__pause_clear(sstm__cur, SSTM_PAUSE_WAITING);
}
