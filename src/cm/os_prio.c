/* SPDX-License-Identifier: MIT */
/* os_prio ([Rossbach07], TxLinux): the conflict priority comes from the thread's
 * OS scheduling policy and nice value (RT > OTHER > BATCH > IDLE, then
 * priority); ties go to the larger read+write set, then to the older
 * transaction (smaller birth timestamp), then to the lower descriptor slot.
 * The winner aborts the loser remotely, or the loser aborts itself
 * (cm/prio.c, which also gives the livelock argument and the progress
 * bound). The OS priority is cached per descriptor and refreshed at most
 * once per scheduling quantum (4 ms, sstm__os_prio_quantum_ns) on the conflict path, by one thread
 * (the one that moves the stamp on), or at once after the application
 * changes it through sstm_sched_set() or the descriptor moves to another
 * thread (sstm_desc_attach).
 */
#include <stdatomic.h>

#include "cm/prio.h"
#include "iface/cm_services.h"
#include "os/sched.h"

/* The refresh period: one scheduling quantum. A test seam (cm/common.h):
 * the tests of the at-once refreshes set it to "never", so that they fail
 * without those refreshes however slowly they run. */
_Atomic uint64_t sstm__os_prio_quantum_ns = 4000000;

typedef struct prio_state {
  _Atomic int cprio;         /* cached conflict priority */
  _Atomic uint64_t stamp_ns; /* when it was computed, 0 = never */
  _Atomic uint32_t gen;      /* os_prio_gen it saw (sstm_sched_set, attach) */
} prio_state_t;

/* Conflict priority of descriptor d, refreshed when stale. Any thread may
 * refresh another's cache: all compute the same value, relaxed stores. Of
 * the threads that find it a quantum old, the one whose CAS moves the stamp
 * on makes the system call; the others use the cached value until it has
 * stored the new one (one quantum older at most, as before the refresh). A
 * first computation and a generation change are not skipped so. */
static int cprio(sstm_cm_ctx_t *self, sstm_desc_t *d) {
  prio_state_t *s = sstm__cm_peer_state(self, d);
  uint64_t now = sstm__now_ns();
  uint32_t gen = sstm__cm_prio_gen(d);
  uint64_t stamp = atomic_load_explicit(&s->stamp_ns, memory_order_relaxed);
  /* acquire: pairs with the refresher's release store of gen below, so a
   * reader that sees the new generation also sees the value computed for
   * it; relaxed would let it take the old value as current for a quantum
   * (after sstm_sched_set, which promises the change at once). */
  bool gen_moved = atomic_load_explicit(&s->gen, memory_order_acquire) != gen;
  /* now > stamp: a stamp stored by another refresher after our clock read
   * is fresh, not 2^64 ns old. */
  uint64_t quantum = atomic_load_explicit(&sstm__os_prio_quantum_ns, memory_order_relaxed);
  if (stamp == 0 || (now > stamp && now - stamp > quantum) || gen_moved) {
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
    /* release: publishes cprio with the generation it was computed for
     * (the acquire load above). */
    atomic_store_explicit(&s->gen, gen, memory_order_release);
    atomic_store_explicit(&s->stamp_ns, now, memory_order_relaxed);
    if (d == self->desc) sstm__cm_stt_prio(d, policy, nice);
    return p;
  }
  return atomic_load_explicit(&s->cprio, memory_order_relaxed);
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
  if (order == 0) order = sstm__prio_older(ctx->birth, c->other.birth);
  return sstm__prio_decide(ctx, c, wait_ns, order);
}

static void prio_desc_init(sstm_cm_ctx_t *ctx) {
  prio_state_t *s = ctx->state;
  atomic_store_explicit(&s->stamp_ns, 0, memory_order_relaxed);
}

const sstm_cm_ops_t sstm__cm_os_prio = {
    .name = "os_prio",
    .description = "OS scheduling priority, then read/write-set size, then age (TxLinux)",
    .state_size = sizeof(prio_state_t),
    .init = sstm__prio_init,
    .desc_init = prio_desc_init,
    .on_conflict = os_prio_conflict,
    .on_abort = sstm__prio_abort,
    .stat_names = {"kills", "self_aborts", "prio_changes", "escalations"},
};
