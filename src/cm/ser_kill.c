/* SPDX-License-Identifier: MIT */
/* ser-kill: serialisation ([Maldonado10], section 3) that tells a lock
 * holder which is running from one that is not.
 *
 * When threads outnumber CPUs, or other programs take the CPUs, many lock
 * holders a transaction meets are descheduled in the middle of their
 * attempt: [Maldonado10] (section 2.2) notes that a preemption stretches a
 * transaction by a whole time slice. Waiting behind such a holder costs the
 * loser a scheduling round (tens of milliseconds with 64 threads on 2
 * CPUs, beyond the ser-* policies' 20 ms bound), and aborting against it
 * again and again (suicide) costs the CPU. Its locks protect memory that it has not changed (writes
 * are buffered), so the engine can kill it and take them over at once
 * (docs/design/core.md, (6)): the holder loses the few microseconds of work
 * it did, and rolls back when it runs again. Whether a holder runs is not
 * visible from user space without a system call, but its progress is: a
 * running attempt grows its read or write set every few tens of
 * nanoseconds. So, on a lock conflict:
 *
 *   1. a committing (or irrevocable) holder is waited for (SSTM_CM_WAIT):
 *      nobody can abort it, and its end is imminent unless it was
 *      descheduled in its commit; when the engine's bound on consecutive
 *      waits (cfg.wait_max) runs out, the loser aborts and waits as in 4;
 *   2. otherwise the loser watches the holder, SSTM_CM_WAIT in rounds of
 *      PEEK_NS, keeping the lock it met (the engine re-reads the lock and
 *      gives a fresh snapshot of the holder at every round);
 *   3. a holder whose read and write sets did not grow for STALL_ROUNDS
 *      rounds in a row is stalled (descheduled, or itself blocked): it is
 *      killed (SSTM_CM_ABORT_OTHER) and the loser goes on with its access,
 *      without an abort;
 *   4. a holder that keeps growing for LONG_NS is a running long
 *      transaction: the loser aborts and sleeps until the holder's attempt
 *      ends (as ser-block: futex on its status word, bounded by
 *      SSTM_SER_WAIT_MAX_NS);
 *   5. a holder whose transaction this policy has already killed KILL_MAX
 *      times is not killed again: the loser aborts and sleeps as in 4. A
 *      transaction is therefore killed at most KILL_MAX times by ser-kill,
 *      and the progress bound (SSTM_CM_RETRY_BOUND, cm/common.h) covers
 *      the rest.
 *
 * Other conflicts (a failed validation, a kill, an irrevocable transaction
 * running) abort whatever the policy answers. After a failed validation the
 * loser spins for at most STALL_ROUNDS x PEEK_NS for the writer it names,
 * then restarts: if that writer still holds the stripe, the restart meets
 * its lock and the rules above decide, with its progress in view. A killed
 * transaction restarts at once: its killer found it stalled, and has long
 * moved on when it runs again.
 *
 * Deadlock: the only waits with a bound longer than a few microseconds are
 * those of on_abort, after the loser's attempt rolled back (the rule of the
 * ser-* policies, cm/ser.c). Two attempts that watch each other see no
 * progress on either side and the first to decide kills the other; the
 * engine bounds the consecutive waits of one access by cfg.wait_max.
 *
 * Cost: no hook on begin or commit; a conflict-free attempt pays nothing.
 * Counters: kills (rule 3) and sleeps (the aborts of rules 1, 4 and 5,
 * each followed by a sleep behind the holder).
 */
#include "cm/common.h"
#include "iface/cm_services.h"

/* A round of watching: a running short attempt (an intset operation is
 * 0.3-2 us) grows its sets many times within it. */
#define PEEK_NS 1000ull
/* Rounds without progress that make a holder stalled. */
#define STALL_ROUNDS 2u
/* A holder that keeps running this long is a long transaction, waited for
 * asleep rather than spun for. */
#define LONG_NS 30000ull
/* Kills of one transaction after which ser-kill spares it. */
#define KILL_MAX 3u

/* Counters: the slots adaptive gives its sub-policies' kills (0) and
 * self-aborts (1), so that under adaptive they add to the same columns. */
enum { SK_KILLS = 0, SK_SLEEPS = 1 };

/* Per-descriptor state. The watch fields are the owner's own; the victim
 * fields are written by the owner (in on_abort) and read by killers. */
typedef struct ser_kill_state {
  sstm__ser_kill_watch_t w;
  /* The transaction (birth) this descriptor runs that ser-kill has killed,
   * and how many times. relaxed: a hint for the killer's choice, read
   * without synchronisation; a stale value spares one kill too few or too
   * many, and the progress bound holds either way. */
  _Atomic uint64_t killed_birth;
  _Atomic uint32_t killed_n;
} ser_kill_state_t;

sstm_cm_action_t sstm__ser_kill_decide(sstm__ser_kill_watch_t *w, const sstm_conflict_t *c,
                                       unsigned victim_kills, uint64_t *wait_ns) {
  if (!sstm__cm_decidable(c)) {
    w->serialize = false;
    return SSTM_CM_ABORT_SELF;
  }
  const sstm_party_t *o = &c->other;
  if (o->committing) {
    w->serialize = true; /* if the engine's wait bound runs out, sleep behind it */
    *wait_ns = PEEK_NS;
    return SSTM_CM_WAIT;
  }
  if (c->attempt == 0 || w->slot != o->slot || w->txid != o->txid) {
    /* A new holder (or a new access): start watching it. */
    *w = (sstm__ser_kill_watch_t){
        .slot = o->slot, .txid = o->txid, .reads = o->reads, .writes = o->writes};
    *wait_ns = PEEK_NS;
    return SSTM_CM_WAIT;
  }
  bool progressed = o->reads != w->reads || o->writes != w->writes;
  w->reads = o->reads;
  w->writes = o->writes;
  w->rounds++;
  if (progressed) {
    w->stalls = 0;
    if ((uint64_t)w->rounds * PEEK_NS >= LONG_NS) {
      w->serialize = true; /* rule 4 */
      return SSTM_CM_ABORT_SELF;
    }
    *wait_ns = PEEK_NS;
    return SSTM_CM_WAIT;
  }
  if (++w->stalls < STALL_ROUNDS) {
    *wait_ns = PEEK_NS;
    return SSTM_CM_WAIT;
  }
  if (victim_kills >= KILL_MAX) {
    w->serialize = true; /* rule 5 */
    w->spared = true;
    return SSTM_CM_ABORT_SELF;
  }
  w->serialize = false;
  return SSTM_CM_ABORT_OTHER; /* rule 3 */
}

/* How many times ser-kill has killed the holder's current transaction. */
static unsigned victim_kills(sstm_cm_ctx_t *ctx, const sstm_party_t *o) {
  if (o->desc == NULL) return 0;
  ser_kill_state_t *v = sstm__cm_peer_state(ctx, o->desc);
  if (atomic_load_explicit(&v->killed_birth, memory_order_relaxed) != o->birth) return 0;
  return atomic_load_explicit(&v->killed_n, memory_order_relaxed);
}

static sstm_cm_action_t ser_kill_conflict(sstm_cm_ctx_t *ctx, const sstm_conflict_t *c,
                                          uint64_t *wait_ns) {
  ser_kill_state_t *s = ctx->state;
  unsigned vk = c->has_other ? victim_kills(ctx, &c->other) : 0;
  sstm_cm_action_t a = sstm__ser_kill_decide(&s->w, c, vk, wait_ns);
  if (a == SSTM_CM_ABORT_OTHER) {
    sstm_cm_count(ctx, SK_KILLS, 1);
    sstm_cm_note(ctx, SSTM_ACT_KILL); /* counted in the statistics */
    /* An instant, not a state (as cm/prio.c): the state table shows the
     * killer running again. */
    sstm__cm_stt_action(ctx, SSTM_ACT_NONE);
  }
  s->w.spared = false;
  return a;
}

static void ser_kill_abort(sstm_cm_ctx_t *ctx, const sstm_abort_info_t *info) {
  ser_kill_state_t *s = ctx->state;
  bool serialize = s->w.serialize;
  s->w.serialize = false;
  if (info->reason == SSTM_ABORT_KILLED) {
    /* Remember the kill for the killers' rule 5; the birth tells this
     * transaction from the next one. Only this thread writes these. */
    uint64_t n = atomic_load_explicit(&s->killed_birth, memory_order_relaxed) == ctx->birth
                     ? atomic_load_explicit(&s->killed_n, memory_order_relaxed) + 1
                     : 1;
    atomic_store_explicit(&s->killed_birth, ctx->birth, memory_order_relaxed);
    atomic_store_explicit(&s->killed_n, (uint32_t)n, memory_order_relaxed);
    sstm__cm_bound_retries(ctx, info);
    return; /* restart at once */
  }
  switch (info->reason) {
  case SSTM_ABORT_READ_LOCKED:
  case SSTM_ABORT_WRITE_LOCKED:
  case SSTM_ABORT_COMMIT_LOCKED:
    if (serialize && info->has_other) {
      /* rules 1, 4 and 5: sleep until the holder's attempt ends (a
       * committing one is spun for, with yields: cm.h) */
      sstm__cm_bound_retries(ctx, info);
      sstm_cm_note(ctx, SSTM_ACT_BLOCK);
      sstm_cm_count(ctx, SK_SLEEPS, 1);
      (void)sstm_party_wait(&info->other, SSTM_WAIT_BLOCK,
                            atomic_load_explicit(&sstm__ser_wait_max_ns, memory_order_relaxed));
      sstm_cm_note(ctx, SSTM_ACT_NONE);
      return;
    }
    break;
  default: break;
  }
  sstm__cm_bound_retries(ctx, info);
  if (!info->has_other || !sstm__cm_conflict_abort(info->reason)) return;
  /* A failed validation: a short look at the writer it names, then the
   * restart, whose reads meet its lock if it still holds it. */
  (void)sstm_party_wait(&info->other, SSTM_WAIT_SPIN, STALL_ROUNDS * PEEK_NS);
}

const sstm_cm_ops_t sstm__cm_ser_kill = {
    .name = "ser-kill",
    .description = "wait for a running lock holder, kill a stalled (descheduled) one, sleep "
                   "behind a long one",
    .state_size = sizeof(ser_kill_state_t),
    .on_conflict = ser_kill_conflict,
    .on_abort = ser_kill_abort,
    .stat_names = {"kills", "sleeps"},
};
