/* Priority-based contention managers: the requester compares itself with
 * the lock owner and either aborts the owner (remote abort: the engine kills
 * it and takes its lock over) or aborts itself.
 *
 *  os_prio    (paper 4, TxLinux): the conflict priority comes from the
 *             thread's OS scheduling policy and nice value (RT > OTHER >
 *             BATCH > IDLE, then priority); ties go to the larger read+write
 *             set, then to the older transaction (smaller birth timestamp),
 *             then to the lower descriptor slot. The OS priority is cached
 *             per descriptor and refreshed at most once per scheduling
 *             quantum (4 ms) on the conflict path, by one thread (the one
 *             that moves the stamp on), or at once after the application
 *             changes it through sstm_sched_set() or the descriptor moves
 *             to another thread (sstm_desc_attach).
 *  timestamp  the classic comparison: the older transaction wins.
 *
 * Livelock freedom. The tuple (priority, size, age, slot) is a total order
 * at every decision, so of two conflicting transactions exactly one gives
 * way; the oldest transaction of the highest OS priority class only gives
 * way to larger ones, whose sizes are bounded. What a total order on lock
 * conflicts cannot prevent is starvation by failed validations (invisible
 * readers are invalidated by committers they never met at a lock). Hence
 * the guarantee: a transaction that has lost SCHEDSTM_PRIO_ESCALATE
 * conflicts (default 32; ctx->conflicts, without the user's own restarts)
 * restarts irrevocable, and an irrevocable transaction never aborts by a
 * conflict, so every transaction that does not restart itself commits
 * within that many attempts plus one. Tested by
 * tests/integration/cm_livelock.c.
 */
#include <stdatomic.h>

#include "cm/common.h"
#include "core/engine.h"
#include "os/sched.h"

#define QUANTUM_NS 4000000ull

/* P_KILLS counts decisions to abort the other party; the engine's cm_kills
 * (sstm_stats_t) counts the kills that took effect (a party that was
 * already committing, or whose attempt had ended, is waited for instead). */
enum { P_KILLS, P_SELF_ABORTS, P_PRIO_CHANGES, P_ESCALATIONS };

typedef struct prio_state {
  _Atomic int cprio;         /* cached conflict priority */
  _Atomic uint64_t stamp_ns; /* when it was computed, 0 = never */
  _Atomic uint32_t gen;      /* sstm_sched_set generation it saw */
} prio_state_t;

static unsigned escalate_after = SSTM_PRIO_ESCALATE_DEFAULT;

/* SCHEDSTM_PRIO_ESCALATE, strictly (os/sched.h): read again at every
 * sstm_init, the default without it. */
static int prio_init(const sstm_config_t *cfg) {
  (void)cfg;
  unsigned after;
  int rc = sstm__env_prio_escalate(&after);
  if (rc != 0) return rc;
  escalate_after = after;
  return 0;
}

/* Conflict priority of descriptor d, refreshed when stale. Any thread may
 * refresh another's cache: all compute the same value, relaxed stores. Of
 * the threads that find it a quantum old, the one whose CAS moves the stamp
 * on makes the system call; the others use the cached value until it has
 * stored the new one (one quantum older at most, as before the refresh). A
 * first computation and a generation change are not skipped so. */
static int cprio(sstm_cm_ctx_t *self, sstm_desc_t *d) {
  prio_state_t *s = sstm__cm_peer_state(self, d);
  uint64_t now = sstm__now_ns();
  uint32_t gen = atomic_load_explicit(&d->os_prio_gen, memory_order_relaxed);
  uint64_t stamp = atomic_load_explicit(&s->stamp_ns, memory_order_relaxed);
  bool gen_moved = atomic_load_explicit(&s->gen, memory_order_relaxed) != gen;
  if (stamp == 0 || now - stamp > QUANTUM_NS || gen_moved) {
    /* relaxed CAS: it elects a refresher, it publishes nothing (the value
     * is stored below, and a reader accepts any recent value). */
    if (stamp != 0 && !gen_moved &&
        !atomic_compare_exchange_strong_explicit(&s->stamp_ns, &stamp, now, memory_order_relaxed,
                                                 memory_order_relaxed))
      return atomic_load_explicit(&s->cprio, memory_order_relaxed);
    int policy, nice;
    int p = sstm__conflict_prio_of(sstm_desc_tid(d), &policy, &nice);
    if (stamp != 0 && p != atomic_load_explicit(&s->cprio, memory_order_relaxed))
      sstm_cm_count(self, P_PRIO_CHANGES, 1);
    atomic_store_explicit(&s->cprio, p, memory_order_relaxed);
    atomic_store_explicit(&s->gen, gen, memory_order_relaxed);
    atomic_store_explicit(&s->stamp_ns, now, memory_order_relaxed);
    if (d == self->desc) sstm__stt_prio(d, policy, nice);
    return p;
  }
  return atomic_load_explicit(&s->cprio, memory_order_relaxed);
}

static sstm_cm_action_t decide(sstm_cm_ctx_t *ctx, const sstm_conflict_t *c, uint64_t *wait_ns,
                               int order) {
  if (!sstm__cm_decidable(c)) return SSTM_CM_ABORT_SELF;
  if (c->other.committing) {
    *wait_ns = 2000; /* its end is imminent; the engine bounds the waits */
    return SSTM_CM_WAIT;
  }
  if (order == 0) order = (int)sstm_desc_slot(ctx->desc) < (int)c->other.slot ? 1 : -1;
  if (order > 0) {
    sstm_cm_count(ctx, P_KILLS, 1);
    sstm_cm_note(ctx, SSTM_ACT_KILL); /* counted in the statistics */
    /* A kill is an instant, not a state: the killer runs on, and nothing
     * else would put its state-table action back before its next abort (a
     * killer that then commits and goes quiet showed "kill" for good). */
    if (ctx->desc->stt) sstm__stt_action(ctx->desc, SSTM_ACT_NONE);
    return SSTM_CM_ABORT_OTHER;
  }
  sstm_cm_count(ctx, P_SELF_ABORTS, 1);
  return SSTM_CM_ABORT_SELF;
}

static int cmp_u64_older(uint64_t mine, uint64_t theirs) {
  return mine < theirs ? 1 : mine > theirs ? -1 : 0;
}

static sstm_cm_action_t os_prio_conflict(sstm_cm_ctx_t *ctx, const sstm_conflict_t *c,
                                         uint64_t *wait_ns) {
  if (!sstm__cm_decidable(c)) return SSTM_CM_ABORT_SELF;
  int mine = cprio(ctx, ctx->desc), theirs = cprio(ctx, c->other.desc);
  int order = mine > theirs ? 1 : mine < theirs ? -1 : 0;
  if (order == 0) {
    uint64_t ms = (uint64_t)ctx->reads + ctx->writes,
             ts = (uint64_t)c->other.reads + c->other.writes;
    order = ms > ts ? 1 : ms < ts ? -1 : 0;
  }
  if (order == 0) order = cmp_u64_older(ctx->birth, c->other.birth);
  return decide(ctx, c, wait_ns, order);
}

static sstm_cm_action_t timestamp_conflict(sstm_cm_ctx_t *ctx, const sstm_conflict_t *c,
                                           uint64_t *wait_ns) {
  if (!sstm__cm_decidable(c)) return SSTM_CM_ABORT_SELF;
  return decide(ctx, c, wait_ns, cmp_u64_older(ctx->birth, c->other.birth));
}

static void prio_desc_init(sstm_cm_ctx_t *ctx) {
  prio_state_t *s = ctx->state;
  atomic_store_explicit(&s->stamp_ns, 0, memory_order_relaxed);
}

/* After rollback: escalate to irrevocability (livelock argument above). */
static void prio_abort(sstm_cm_ctx_t *ctx, const sstm_abort_info_t *info) {
  sstm_cm_note(ctx, SSTM_ACT_NONE);
  if (SSTM_UNLIKELY(escalate_after && sstm__cm_escalates(ctx, info, escalate_after))) {
    sstm_cm_count(ctx, P_ESCALATIONS, 1);
    sstm_cm_next_irrevocable(ctx);
  }
}

const sstm_cm_ops_t sstm__cm_os_prio = {
    .name = "os_prio",
    .description = "OS scheduling priority, then read/write-set size, then age (TxLinux)",
    .state_size = sizeof(prio_state_t),
    .init = prio_init,
    .desc_init = prio_desc_init,
    .on_conflict = os_prio_conflict,
    .on_abort = prio_abort,
    .stat_names = {"kills", "self_aborts", "prio_changes", "escalations"},
};

const sstm_cm_ops_t sstm__cm_timestamp = {
    .name = "timestamp",
    .description = "the older transaction wins (aborts the younger)",
    .state_size = sizeof(prio_state_t),
    .init = prio_init,
    .on_conflict = timestamp_conflict,
    .on_abort = prio_abort,
    .stat_names = {"kills", "self_aborts", "", "escalations"},
};
