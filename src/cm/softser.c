/* SPDX-License-Identifier: MIT */
/* softser ([Maldonado10], Algorithm 5): while a thread is in conflict with running
 * transactions, its OS priority is lowered; it keeps running (a retry may
 * take another path: non-deterministic transactions) but the scheduler
 * prefers the others.
 *
 * The paper's conflict matrix C is kept as one list per winner (the losers
 * that conflicted with its current attempt, C[.][w]) and a counter per loser
 * (the number of running winners it conflicts with, its row count).
 *
 * Cheap commit path: [Maldonado10] found its user-level version too slow because
 * every commit scanned the matrix. Here a loser registers on a winner by
 * also setting the watched flag on the winner's status word (one CAS, only
 * while the winner's attempt runs); the winner learns at no cost whether
 * anyone registered (ctx->watched, read by the atomic operation that ends its
 * attempt anyway) and only then takes its list lock. A commit with no
 * conflict costs one predictable branch and a relaxed load of the thread's
 * own counter. One exception: a read-only winner ends with a plain store on
 * the engine's fast commit path (sstm_commit in core/txn.c), so a loser
 * that registers in the instant between that commit's status check and its
 * store is not seen, and stays lowered until its own transaction commits or
 * is cancelled (which clears its row). Lock conflicts never name a
 * read-only winner (it holds no lock); only a kill record can.
 *
 * Priority comes back on every path: when the count reaches zero as winners
 * end (commit or abort), when the loser commits (Algorithm 5 clears its row)
 * or cancels its transaction (no retry follows), when the loser's thread
 * leaves, and when it detaches the descriptor (the
 * next thread to attach it is lowered in its place while the row is not
 * empty). The lever is probed once at init (the
 * first of nice, SCHED_IDLE, SCHED_BATCH, short custom slice that can be
 * undone; SCHEDSTM_SOFTSER_LEVER forces one) and reported by sstm_describe.
 *
 * A winner's list holds at most SOFTSER_MAX_LOSERS (64) losers per attempt:
 * a 65th loser of the same attempt is not registered and retries at its
 * normal priority, as under suicide (the list is per descriptor, fixed, so
 * that registering never allocates).
 *
 * Locks (slow path only): a winner's list lock, then a loser's priority lock.
 * No thread lowers itself while it holds either: the scheduler may preempt
 * it as the system call returns, and a winner ending then (column_clear,
 * row_dec) would wait for the lowered thread, the inversion softser exists
 * to avoid (winners' commits waited milliseconds each: docs/benchmarks.md,
 * "Figures behind the design"). A loser registers under the locks and marks
 * itself `lowering`, lowers itself after releasing them, and then settles
 * under its priority lock: if the winners all ended meanwhile (they left the
 * restore to it), it restores itself there, when no winner needs that lock.
 * Only the loser's own thread lowers it; restores run on the winners'
 * threads (a raise, not an inversion), the loser's (commit, cancel, exit,
 * detach) or both, always under the priority lock and only while `lowered`.
 *
 * Knob: cfg.softser_lever (SCHEDSTM_SOFTSER_LEVER), auto | none | nice | idle | batch | slice,
 * default auto (the probe above); a forced lever that cannot be undone
 * here fails sstm_init with SSTM_EPERM. Taken at every sstm_init
 * (iface/cm_services.h, sstm__cm_knob_softser_lever).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm/common.h"
#include "iface/cm_services.h"
#include "os/sched.h"

#define SOFTSER_MAX_LOSERS 64

enum { SS_PRIO_CHANGES, SS_REGISTRATIONS, SS_FAILED_CHANGES };

typedef struct softser_state {
  /* as a winner */
  pthread_mutex_t wlock;
  uint32_t nlosers;
  struct {
    sstm_desc_t *d;
    uint32_t gen;
  } losers[SOFTSER_MAX_LOSERS];
  /* as a loser */
  pthread_mutex_t plock;
  _Atomic uint32_t conflicts; /* row count; peeked relaxed at commit */
  _Atomic bool lowered;
  bool lowering;      /* plock: the owner is lowering itself, outside the locks */
  uint32_t gen;       /* bumps when the row is cleared wholesale */
  bool noted_lowered; /* owner-only: state table shows "lowered" */
  sstm_prio_saved_t saved;
  bool inited; /* mutexes initialised (state outlives threads) */
} softser_state_t;

static sstm_lever_t lever;

/* cfg.softser_lever, SCHEDSTM_SOFTSER_LEVER (auto | none | nice | idle |
 * batch | slice; default auto: probe) picks the lever, taken again at
 * every sstm_init. A
 * forced lever is probed too: one that could not be undone would leave
 * threads lowered for good (nice or SCHED_IDLE without CAP_SYS_NICE), so it
 * is refused. */
static int softser_init(const sstm_config_t *cfg) {
  (void)cfg;
  bool probe;
  int rc = sstm__cm_knob_softser_lever(&lever, &probe);
  if (rc != 0) return rc;
  if (probe) lever = sstm__lever_probe();
  if (!probe && !sstm__lever_undoable(lever)) {
    sstm__set_error("softser: SCHEDSTM_SOFTSER_LEVER=%s (cfg.softser_lever) cannot be undone "
                    "here (nice and idle need CAP_SYS_NICE or a sufficient RLIMIT_NICE), or could "
                    "not be probed (no thread could be created); use auto",
                    sstm__lever_name(lever));
    return SSTM_EPERM;
  }
  return 0;
}

static int softser_describe(char *buf, size_t len) {
  return snprintf(buf, len, "lever=%s", sstm__lever_name(lever));
}

static void softser_desc_init(sstm_cm_ctx_t *ctx) {
  softser_state_t *s = ctx->state;
  if (!s->inited) {
    pthread_mutex_init(&s->wlock, NULL);
    pthread_mutex_init(&s->plock, NULL);
    s->inited = true;
  }
  pthread_mutex_lock(&s->plock);
  s->gen++; /* entries left by the previous user of the descriptor die */
  atomic_store_explicit(&s->conflicts, 0, memory_order_relaxed);
  atomic_store_explicit(&s->lowered, false, memory_order_relaxed);
  s->lowering = false;
  pthread_mutex_unlock(&s->plock);
  s->noted_lowered = false;
}

/* Restore loser d; plock held, d lowered. `lowered` follows what the
 * kernel did: a failed restore leaves it true (the next commit, winner's
 * end or thread exit tries again), so a thread is never left lowered with
 * nothing to bring it back. The state table shows the thread's policy and
 * nice as the kernel now has them. */
static void restore(sstm_cm_ctx_t *self, sstm_desc_t *d, softser_state_t *ls) {
  bool ok = sstm__lever_restore(lever, sstm_desc_tid(d), &ls->saved);
  if (ok) atomic_store_explicit(&ls->lowered, false, memory_order_relaxed);
  sstm_cm_count(self, ok ? SS_PRIO_CHANGES : SS_FAILED_CHANGES, 1);
  sstm__cm_stt_prio_refresh(d);
}

/* plock held: should the owner lower itself now? If so it is marked
 * `lowering` and must call lower_self() once it has released every lock. */
static bool lower_due(softser_state_t *ls) {
  if (lever == SSTM_LEVER_NONE || ls->lowering ||
      atomic_load_explicit(&ls->lowered, memory_order_relaxed) ||
      atomic_load_explicit(&ls->conflicts, memory_order_relaxed) == 0)
    return false;
  ls->lowering = true;
  return true;
}

/* The owner lowers its own thread, holding no lock (see the top), then
 * settles: a failed lowering leaves `lowered` false (the next conflict
 * tries again); a row emptied meanwhile is restored at once. */
static void lower_self(sstm_cm_ctx_t *ctx) {
  softser_state_t *ls = ctx->state;
  sstm_prio_saved_t saved;
  sstm__cm_seam_softser_lower(ctx->desc);
  bool ok = sstm__lever_lower(lever, sstm__gettid(), &saved);
  sstm_cm_count(ctx, ok ? SS_PRIO_CHANGES : SS_FAILED_CHANGES, 1);
  pthread_mutex_lock(&ls->plock);
  ls->lowering = false;
  if (ok) {
    ls->saved = saved;
    atomic_store_explicit(&ls->lowered, true, memory_order_relaxed);
    /* The winners that ended meanwhile saw `lowered` false and left it to
     * us; none needs plock now that the row is empty. */
    if (atomic_load_explicit(&ls->conflicts, memory_order_relaxed) == 0)
      restore(ctx, ctx->desc, ls);
  }
  pthread_mutex_unlock(&ls->plock);
  sstm__cm_stt_prio_refresh(ctx->desc);
}

/* The row of loser d loses one conflict (a winner ended). plock taken. */
static void row_dec(sstm_cm_ctx_t *self, sstm_desc_t *d, uint32_t gen) {
  softser_state_t *ls = sstm__cm_peer_state(self, d);
  pthread_mutex_lock(&ls->plock);
  uint32_t n = atomic_load_explicit(&ls->conflicts, memory_order_relaxed);
  if (ls->gen == gen && n > 0) {
    atomic_store_explicit(&ls->conflicts, n - 1, memory_order_relaxed);
    if (n == 1 && atomic_load_explicit(&ls->lowered, memory_order_relaxed)) restore(self, d, ls);
  }
  pthread_mutex_unlock(&ls->plock);
}

/* Clear the whole row of our own descriptor: we committed or leave. */
static void row_clear(sstm_cm_ctx_t *ctx) {
  softser_state_t *ls = ctx->state;
  pthread_mutex_lock(&ls->plock);
  ls->gen++;
  atomic_store_explicit(&ls->conflicts, 0, memory_order_relaxed);
  if (atomic_load_explicit(&ls->lowered, memory_order_relaxed)) restore(ctx, ctx->desc, ls);
  pthread_mutex_unlock(&ls->plock);
}

/* Our attempt ended and losers registered on it: clear our column. */
static void column_clear(sstm_cm_ctx_t *ctx) {
  softser_state_t *ws = ctx->state;
  pthread_mutex_lock(&ws->wlock);
  for (uint32_t i = 0; i < ws->nlosers; i++)
    row_dec(ctx, ws->losers[i].d, ws->losers[i].gen);
  ws->nlosers = 0;
  pthread_mutex_unlock(&ws->wlock);
}

/* Our transaction has ended (committed, or cancelled: no retry follows):
 * Algorithm 5 clears our row, and our priority comes back. */
static void loser_ended(sstm_cm_ctx_t *ctx) {
  softser_state_t *ls = ctx->state;
  if (SSTM_LIKELY(atomic_load_explicit(&ls->conflicts, memory_order_relaxed) == 0 &&
                  !atomic_load_explicit(&ls->lowered, memory_order_relaxed))) {
    if (SSTM_UNLIKELY(ls->noted_lowered)) {
      ls->noted_lowered = false;
      sstm_cm_note(ctx, SSTM_ACT_NONE);
    }
    return;
  }
  row_clear(ctx);
  ls->noted_lowered = false;
  sstm_cm_note(ctx, SSTM_ACT_NONE);
}

static void softser_commit(sstm_cm_ctx_t *ctx) {
  if (SSTM_UNLIKELY(ctx->watched)) column_clear(ctx);
  loser_ended(ctx);
}

static void softser_abort(sstm_cm_ctx_t *ctx, const sstm_abort_info_t *info) {
  softser_state_t *ls = ctx->state;
  if (ctx->watched) column_clear(ctx); /* our own attempt ended too */
  if (info->reason == SSTM_ABORT_USER_CANCEL) {
    loser_ended(ctx);
    return;
  }
  /* Restored meanwhile by the winners' ends (row_dec, on their threads):
   * the state table's action follows at our next event. */
  if (ls->noted_lowered && !atomic_load_explicit(&ls->lowered, memory_order_relaxed)) {
    ls->noted_lowered = false;
    sstm_cm_note(ctx, SSTM_ACT_NONE);
  }
  sstm__cm_bound_retries(ctx, info);
  if (!info->has_other || !sstm__cm_conflict_abort(info->reason) || info->other.desc == ctx->desc)
    return;
  sstm_desc_t *w = info->other.desc;
  softser_state_t *ws = sstm__cm_peer_state(ctx, w);
  bool lower = false;
  pthread_mutex_lock(&ws->wlock);
  uint32_t gen;
  pthread_mutex_lock(&ls->plock);
  gen = ls->gen;
  pthread_mutex_unlock(&ls->plock);
  bool known = false;
  for (uint32_t i = 0; i < ws->nlosers && !known; i++)
    known = ws->losers[i].d == ctx->desc && ws->losers[i].gen == gen;
  /* C[us][w] is set only while w's attempt runs: the watch flag makes its
   * end call column_clear, which needs wlock, which we hold. */
  if (!known && ws->nlosers < SOFTSER_MAX_LOSERS && sstm_party_watch(&info->other)) {
    ws->losers[ws->nlosers].d = ctx->desc;
    ws->losers[ws->nlosers].gen = gen;
    ws->nlosers++;
    sstm_cm_count(ctx, SS_REGISTRATIONS, 1);
    pthread_mutex_lock(&ls->plock);
    uint32_t n = atomic_load_explicit(&ls->conflicts, memory_order_relaxed);
    atomic_store_explicit(&ls->conflicts, n + 1, memory_order_relaxed);
    lower = lower_due(ls);
    pthread_mutex_unlock(&ls->plock);
  }
  pthread_mutex_unlock(&ws->wlock);
  if (lower) lower_self(ctx);
  /* "lowered" only when it is (not with lever none, nor when the kernel
   * refused: prio_failures counts that). */
  if (!ls->noted_lowered && atomic_load_explicit(&ls->lowered, memory_order_relaxed)) {
    ls->noted_lowered = true;
    sstm_cm_note(ctx, SSTM_ACT_LOWERED);
  }
}

static void softser_desc_fini(sstm_cm_ctx_t *ctx) {
  row_clear(ctx);
  softser_state_t *s = ctx->state;
  s->noted_lowered = false;
}

/* The priority is the thread's, the conflicts are the transaction's: a
 * descriptor detached while in conflict gives its thread's priority back
 * (its row stays), and the thread that attaches it next is lowered until
 * the row empties. */
static void softser_detach(sstm_cm_ctx_t *ctx) {
  softser_state_t *ls = ctx->state;
  pthread_mutex_lock(&ls->plock);
  if (atomic_load_explicit(&ls->lowered, memory_order_relaxed)) restore(ctx, ctx->desc, ls);
  pthread_mutex_unlock(&ls->plock);
}

static void softser_attach(sstm_cm_ctx_t *ctx) {
  softser_state_t *ls = ctx->state;
  pthread_mutex_lock(&ls->plock);
  bool lower = lower_due(ls);
  pthread_mutex_unlock(&ls->plock);
  if (lower) lower_self(ctx);
}

const sstm_cm_ops_t sstm__cm_softser = {
    .name = "softser",
    .description = "abort; lower the OS priority while in conflict with running transactions",
    .state_size = sizeof(softser_state_t),
    .init = softser_init,
    .desc_init = softser_desc_init,
    .desc_fini = softser_desc_fini,
    .on_conflict = sstm__cm_abort_self,
    .on_commit = softser_commit,
    .on_abort = softser_abort,
    .stat_names = {"prio_changes", "registrations", "prio_failures"},
    .describe = softser_describe,
    .on_attach = softser_attach,
    .on_detach = softser_detach,
};
