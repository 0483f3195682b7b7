/* SPDX-License-Identifier: MIT */
/* admit, admit-slice: admission control when threads outnumber CPUs,
 * [Maldonado10]'s serialisation generalised from the loser of one
 * conflict to every thread. While the threads that run transactions
 * outnumber the CPUs and conflicts are frequent, at most ADMIT_PER_CPU
 * threads per CPU hold a place; the others sleep on a futex at the begin
 * of their transaction and are admitted in FIFO order as places are given
 * back. Conflicts among the admitted are resolved as ser-block resolves
 * them (abort, then sleep until the winner's attempt ends: cm/ser.c).
 * adaptive (cm/adaptive.c) runs the same gate, admit-slice's, in its
 * oversubscribed regime.
 *
 * The two policies share the gate and differ in how long a thread keeps
 * its place:
 *   admit        one transaction: taken at its begin, kept across its
 *                retries, given back at its commit (or cancel). Each
 *                hand-over puts a thread to sleep and wakes another: a
 *                context switch per transaction, several times what a short
 *                transaction costs (docs/benchmarks.md);
 *   admit-slice  a time slice, ADMIT_SLICE_NS of wall time from its
 *                admission: the thread runs transaction after transaction
 *                (and its code between them) and gives the place back at
 *                its first begin after the slice has passed, so hand-overs
 *                happen at the rate of the scheduler's own preemptions,
 *                not of transactions. Oversubscribed, the threads that run
 *                are then about as many as the CPUs, and the kernel rarely
 *                takes one off its CPU inside a transaction: the others
 *                sleep at the gate, not in the run queue. [Maldonado10]'s
 *                time-slice extension (EXT) aims at the same from the other
 *                side.
 *
 * Why: with 32 threads per CPU and short transactions, many of the threads
 * that hold locks or have read stripes at a given moment are not running:
 * the scheduler took them off their CPU mid-transaction
 * (docs/benchmarks-history.md, "Why lock holders are descheduled in their
 * commit"), and every running thread that meets their stripes waits a
 * scheduling round or aborts. With admission, the threads that run
 * transactions are about as many as the CPUs.
 *
 * Where a thread waits: at the start of an attempt, in the engine's
 * admission hook (sstm__cm_admit_hook, iface/cm_services.h), which runs
 * before anything of the attempt is published: the previous attempt has
 * ended, its commit actions (or this transaction's rollback and abort
 * actions) have run, the thread holds no lock and its status is not
 * ACTIVE. So a sleeper holds back no grace period of reclamation, takes
 * its snapshot when it wakes, and never sleeps with a commit action not
 * yet run that another thread may be waiting for (a transactional
 * stream's new version, an executor's completion). Nothing waits in a
 * commit: admit-slice has no commit hook at all, admit's only gives the
 * place back.
 *
 * Whose a place is (docs/design/admission.md): a place belongs to a
 * thread that runs transactions now, never to a descriptor's history. It
 * is given back
 *   - at the thread's first begin after its slice (admit-slice), or at the
 *     commit or cancel of its transaction (admit);
 *   - when the descriptor is detached (sstm_desc_detach, sstm_thread_exit:
 *     on_detach; an executor detaches a context at every pause and at the
 *     end of every request) or released (desc_fini);
 *   - lazily, when the thread stops beginning transactions: once a place's
 *     slice is over, a waiting thread may reclaim it (below), and the
 *     thread that held it queues again at its next begin.
 * So a place is held only by an attached thread within its slice, or by
 * one past its slice that no waiter has needed yet; a waiter waits for a
 * stale place at most until that place's slice ends, never for the bound
 * below.
 *
 * Mechanism, a ticket gate (no lock, FIFO): a thread takes ticket
 * t = tickets++ (one fetch_add) and may run once t < exits + limit,
 * where `exits` counts the places given back. A thread beyond the limit
 * marks the ring entry of its ticket as sleeping, re-reads `exits` and
 * sleeps on that entry's futex. Giving a place back increments `exits`,
 * which admits exactly ticket exits + limit - 1, and wakes that ticket's
 * entry only if it is marked: one wake-up per hand-over, no thundering
 * herd. The mark and the increment are seq_cst on both sides (the
 * store-buffering shape), so either the sleeper sees the new `exits` or
 * the thread giving its place back sees the mark. Waiting tickets are the
 * contiguous range [exits + limit, tickets), at most one per descriptor,
 * and the ring has a power of two >= cfg.max_threads entries, so two
 * sleepers never share an entry.
 *
 * Places and their reclaim: a thread that leaves the wait (admitted, or
 * by the bound, or because the gate turned off) holds its ticket, and
 * publishes it in its state's `own` (ticket + 1) with the time of its
 * admission (`since`). A ticket is given back by one compare-and-swap of
 * `own` from ticket + 1 to 0, whoever does it: the holder (at its begin,
 * detach, release) or a waiter that found the place's slice over
 * (reclaim); the one whose swap succeeds increments `exits`, so every
 * ticket is given back exactly once and the count of places taken stays
 * exact. A holder that finds its `own` cleared has lost its place and
 * queues at this begin. Waiters find places through a table of every
 * descriptor's gate state (registered once, at its first desc_init;
 * states live as long as their descriptor). The waiter at the head of the
 * queue (the next ticket to admit) sleeps at most until the earliest end
 * of a held slice and then reclaims what is over; every admission under
 * admit-slice wakes the new head so that it takes up that watch. Under
 * admit nothing is reclaimed: its places are given back at each commit,
 * and one held longer belongs to a transaction still running.
 *
 * Bounded: a thread waiting for admission gives up when no place has been
 * given back (`exits` has not moved) for ADMIT_WAIT_MAX_NS; it then runs
 * anyway (counted as admit_timeouts). The bound is on the gate's progress,
 * not on the wait: under admit-slice a thread waits its turn behind
 * threads / limit slices, longer than any fixed bound that still catches
 * a stuck holder. It is left for holders that reclaim cannot take over:
 * under admit, a transaction blocked in the application or descheduled
 * by other programs; under admit-slice the slice (4 ms) ends before the
 * bound (16 ms) and the head reclaims first. The gate can never deadlock:
 * it is a throttle, not a lock. A thread asleep in the gate runs again
 * only in its turn (or after a reclaim or the bound), also when the
 * program is stopping its threads: while the gate is on they leave one
 * hand-over at a time; the gate turns off once the threads that run no
 * longer outnumber the places, and that wakes them all.
 *
 * When (the decision, sstm__admit_decide, a pure function tested on
 * constructed inputs): every ADMIT_WINDOW_NS, the thread that notices the
 * window's end (at an abort, or at one begin in 64) sums the engine's
 * per-thread counters (as adaptive does) and judges the window: the gate
 * turns on when threads that ran transactions outnumber the limit and the
 * window had at least ADMIT_ON_APC aborts per commit; it turns off when
 * threads fall to the limit, or (admit only) after ADMIT_OFF_WINDOWS
 * windows in a row under ADMIT_OFF_APC (the lower bound: the gate itself
 * makes conflicts rarer). admit-slice does not turn off on calm windows:
 * under its gate conflicts are those of `limit` threads, so calm windows
 * say that the gate works, and keeping it costs a hand-over per slice.
 *
 * Cost: the admission hook on every begin (the engine's slow begin, for
 * both policies always, for adaptive only while it wants the gate): a
 * relaxed load of the gate's flag and a per-descriptor counter, a load of
 * the thread's own `own` while it holds a place. While the gate is on,
 * admit makes two shared atomic operations and a sleep per transaction;
 * admit-slice two per slice, and a clock read (vDSO, no system call)
 * every ADMIT_SLICE_CLOCK_EVERY begins.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cm/common.h"
#include "iface/cm_services.h"

/* Transactions in flight per CPU while the gate is on. */
#define ADMIT_PER_CPU 1
/* The longest a waiter waits while no place is given back: four 4 ms
 * ticks. */
#define ADMIT_WAIT_MAX_NS 16000000ull
/* admit-slice: how long an admitted thread keeps its place, one 4 ms
 * tick (at HZ=250; a few times EEVDF's default slice): long enough that a
 * hand-over (a futex wake-up and a context switch) is a small part of the
 * slice, short enough that a waiter's turn comes within a few ticks
 * (docs/benchmarks-history.md, "Oversubscribed: admission by time slice",
 * compares 1, 4 and 16 ms). */
#define ADMIT_SLICE_NS 4000000ull
/* ... and begins between two looks at the clock while it holds one: a
 * slice ends at most this many begins late (a waiter may reclaim it from
 * its end on). */
#define ADMIT_SLICE_CLOCK_EVERY 16
/* A window of the decision. */
#define ADMIT_WINDOW_NS 20000000ull
/* Begins between two looks at the clock, per descriptor. */
#define ADMIT_CLOCK_EVERY 64

enum {
  C_SER_WAITS,
  C_SER_TIMEOUTS,
  C_ADMIT_WAITS,
  C_ADMIT_TIMEOUTS,
  C_ADMIT_SWITCHES,
  C_ADMIT_RECLAIMS
};

typedef struct admit_state {
  /* Shared with waiters that reclaim (file comment): ticket + 1 while
   * this descriptor holds that ticket's place, 0 otherwise; set by the
   * owner, cleared by whoever gives the place back (one CAS). */
  _Atomic uint64_t own;
  _Atomic uint64_t since; /* ... admitted at this time (written before own) */
  bool held;              /* owner-only: it took ticket `ticket` (own may have been reclaimed) */
  bool listed;            /* registered in G.states (kept with the state) */
  uint64_t ticket;        /* ... that one */
  uint32_t to_clock;      /* begins until the next look at the clock */
} admit_state_t;

static struct {
  _Alignas(64) _Atomic bool on; /* read by every begin: apart from the counters */
  _Alignas(64) _Atomic uint64_t tickets;
  _Alignas(64) _Atomic uint64_t exits;
  _Alignas(64) _Atomic uint64_t window_start;
  _Atomic uint64_t *ring; /* ring_mask + 1 futex words: (ticket << 1) | 1 while it sleeps */
  uint64_t ring_mask;
  uint64_t limit;       /* transactions in flight while on */
  uint64_t wait_max_ns; /* ADMIT_WAIT_MAX_NS; 0: no bound (sstm__admit_pin) */
  uint64_t hold_ns;     /* admit-slice: the slice; 0: admit (one transaction) */
  _Atomic bool pinned;  /* sstm__admit_pin, sstm__admit_drive: the windows decide nothing */
  bool count;           /* count waits and timeouts (not as adaptive's part: its counter
                           slots are its own); set at init, before any thread */
  unsigned ncpu;
  /* every descriptor's gate state, for reclaims: appended under lock */
  _Atomic(admit_state_t *) *states;
  _Atomic unsigned nstates;
  /* process-wide counts (sstm__admit_gate_counts) */
  _Atomic uint64_t n_waits, n_timeouts, n_reclaims;
  /* the decision's state, under lock */
  pthread_mutex_t lock;
  sstm__admit_judge_t judge;
  unsigned nslots;
  uint64_t *seen_c, *seen_a; /* per slot: commits, aborts at the last window */
} G = {.lock = PTHREAD_MUTEX_INITIALIZER};

#define RLX memory_order_relaxed

/* ---- the decision ---- */

bool sstm__admit_decide(sstm__admit_judge_t *j, uint64_t commits, uint64_t aborts, unsigned threads,
                        uint64_t limit) {
  if (threads <= limit) { /* nothing to gate */
    j->on = false;
    j->calm = 0;
    return false;
  }
  double apc = (double)aborts / (double)(commits ? commits : 1);
  if (!j->on) {
    j->calm = 0;
    j->on = commits + aborts >= ADMIT_MIN_EVENTS && apc >= ADMIT_ON_APC;
  } else if (j->sticky) {
    j->calm = 0; /* admit-slice: calm windows keep it on (file comment) */
  } else if (apc < ADMIT_OFF_APC) {
    if (++j->calm >= ADMIT_OFF_WINDOWS) {
      j->on = false;
      j->calm = 0;
    }
  } else {
    j->calm = 0;
  }
  return j->on;
}

/* ---- the gate ---- */

static void count(sstm_cm_ctx_t *ctx, _Atomic uint64_t *n, unsigned idx) {
  /* relaxed: a statistic, read by tests after joining the threads */
  atomic_fetch_add_explicit(n, 1, RLX);
  if (G.count) sstm_cm_count(ctx, idx, 1);
}

/* Give ticket t's place back if `own` still holds it (o == t + 1):
 * admit the next ticket. The caller is the holder or a reclaiming waiter;
 * the CAS makes one of them the one that counts it. */
static bool place_give(admit_state_t *s, uint64_t o) {
  /* relaxed: the CAS only decides who gives the ticket back (atomicity
   * alone); what the next ticket may see is published by the seq_cst
   * increment of exits below. */
  if (!atomic_compare_exchange_strong_explicit(&s->own, &o, 0, RLX, RLX)) return false;
  /* seq_cst: the store-buffering pair with gate_enter's mark */
  uint64_t e = atomic_fetch_add_explicit(&G.exits, 1, memory_order_seq_cst) + 1;
  uint64_t next = e + G.limit - 1; /* the ticket this exit admits */
  _Atomic uint64_t *w = &G.ring[next & G.ring_mask];
  if (atomic_load_explicit(w, memory_order_seq_cst) == ((next << 1) | 1)) sstm__futex_wake_all(w);
  return true;
}

/* The holder gives its place back, if a waiter has not reclaimed it. */
static void gate_exit(admit_state_t *s) {
  if (!s->held) return;
  s->held = false;
  if (G.ring == NULL) return; /* a descriptor released after the policy's fini */
  place_give(s, s->ticket + 1);
}

/* Wake the waiter at the head of the queue, if it sleeps, so that it
 * watches the held slices for reclaim (file comment). */
static void wake_head(void) {
  /* seq_cst fence: the store-buffering pair with the head, which marks
   * its entry (seq_cst) and then loads each place's own (seq_cst, in
   * reclaim). Either the head sees this thread's own, whose slice end it
   * then sleeps to, or this sees the head's mark below and wakes it.
   * Without the fence the caller's release store of own may pass the load
   * of the mark (a store buffer does that): both miss, and the head
   * sleeps to the wait bound instead of the slice's end. */
  atomic_thread_fence(memory_order_seq_cst);
  uint64_t h = atomic_load_explicit(&G.exits, memory_order_seq_cst) + G.limit;
  _Atomic uint64_t *w = &G.ring[h & G.ring_mask];
  if (atomic_load_explicit(w, memory_order_seq_cst) == ((h << 1) | 1)) sstm__futex_wake_all(w);
}

/* A waiter: give back every held place whose slice ended by `now` (its
 * holder has not begun a transaction since: it would have given it back);
 * return how many, and in *next the earliest end of a slice still held
 * (UINT64_MAX: none). */
static unsigned reclaim(uint64_t now, uint64_t *next) {
  unsigned n = atomic_load_explicit(&G.nstates, memory_order_acquire), got = 0;
  *next = UINT64_MAX;
  for (unsigned i = 0; i < n; i++) {
    admit_state_t *h = atomic_load_explicit(&G.states[i], memory_order_acquire);
    if (h == NULL) continue;
    /* acquire: pairs with the holder's release store of own, so that
     * `since` is at least that admission's (a later one only makes the
     * place look younger: no wrong reclaim). seq_cst, too: the
     * store-buffering pair with wake_head's fence (the head's mark, then
     * this load; the holder's own, the fence, then its load of the mark). */
    uint64_t o = atomic_load_explicit(&h->own, memory_order_seq_cst);
    if (o == 0) continue;
    uint64_t end = atomic_load_explicit(&h->since, RLX) + G.hold_ns;
    if (end < G.hold_ns) end = UINT64_MAX; /* a slice that never ends (tests) */
    if (now >= end) {
      got += place_give(h, o);
    } else if (end < *next) {
      *next = end;
    }
  }
  return got;
}

/* The calling thread takes a ticket and waits until it is admitted, a
 * place is reclaimed for it, no place has been given back for
 * G.wait_max_ns, or the gate turned off; it then holds the ticket. */
static void gate_enter(sstm_cm_ctx_t *ctx, admit_state_t *s) {
  /* seq_cst: the ticket order is the admission order (a relaxed RMW would
   * do for that; seq_cst for uniformity with the exits it is compared to). */
  uint64_t t = atomic_fetch_add_explicit(&G.tickets, 1, memory_order_seq_cst);
  s->held = true;
  s->ticket = t;
  /* seq_cst: the store-buffering pair with place_give (file comment). */
  uint64_t e = atomic_load_explicit(&G.exits, memory_order_seq_cst);
  uint64_t now;
  if (t < e + G.limit) {
    now = sstm__now_ns();
    goto admitted;
  }
  count(ctx, &G.n_waits, C_ADMIT_WAITS);
  sstm_cm_note(ctx, SSTM_ACT_BLOCK);
  _Atomic uint64_t *w = &G.ring[t & G.ring_mask];
  uint64_t mark = (t << 1) | 1;
  uint64_t moved = sstm__now_ns(); /* when `exits` was last seen to move */
  for (;;) {
    /* seq_cst: the mark, then exits (file comment) */
    atomic_store_explicit(w, mark, memory_order_seq_cst);
    uint64_t e2 = atomic_load_explicit(&G.exits, memory_order_seq_cst);
    if (t < e2 + G.limit) break;
    if (!atomic_load_explicit(&G.on, RLX)) break;
    now = sstm__now_ns();
    if (e2 != e) { /* a place was given back: the gate is alive */
      e = e2;
      moved = now;
    }
    /* The head reclaims stale places before it looks at the bound: a
     * place admitted before it began to wait ends its slice within
     * hold_ns < wait_max_ns of that, so one that is reclaimable never
     * costs it the bound. */
    uint64_t next = UINT64_MAX;
    if (G.hold_ns && t == e2 + G.limit) {
      unsigned got = reclaim(now, &next);
      if (got) {
        for (unsigned k = 0; k < got; k++)
          count(ctx, &G.n_reclaims, C_ADMIT_RECLAIMS);
        continue; /* exits moved: admitted, or head of a shorter queue */
      }
    }
    if (G.wait_max_ns && now - moved >= G.wait_max_ns) {
      count(ctx, &G.n_timeouts, C_ADMIT_TIMEOUTS);
      break;
    }
    /* Returns at once if the entry no longer holds our mark; woken in our
     * turn, when we become the head (wake_head) or the gate turns off; at
     * the latest when the bound would pass or, at the head, when the first
     * held slice ends. */
    uint64_t sleep = G.wait_max_ns ? G.wait_max_ns - (now - moved) : 0;
    if (next != UINT64_MAX && (sleep == 0 || next - now < sleep)) sleep = next - now;
    sstm__futex_wait(w, (uint32_t)mark, sleep);
  }
  atomic_store_explicit(w, 0, RLX); /* no longer sleeping: a stale wake is harmless */
  sstm_cm_note(ctx, SSTM_ACT_NONE);
  now = sstm__now_ns();
admitted:
  atomic_store_explicit(&s->since, now, RLX);
  /* release: a reclaiming waiter that sees this ticket in own sees the
   * since stored above (reclaim) */
  atomic_store_explicit(&s->own, t + 1, memory_order_release);
  s->to_clock = G.hold_ns ? ADMIT_SLICE_CLOCK_EVERY : ADMIT_CLOCK_EVERY;
  if (G.hold_ns) wake_head();
}

/* ---- the window ---- */

/* Under G.lock: turn the gate on or off. Turned off, the sleepers need
 * not wait for their turn any more: each re-reads the flag when woken.
 * Relaxed both sides: one that marks its entry while this pass runs may
 * sleep on, until its turn, a reclaim or its bound (ADMIT_WAIT_MAX_NS). */
static void gate_set(bool on) {
  atomic_store_explicit(&G.on, on, RLX);
  for (uint64_t i = 0; !on && G.ring && i <= G.ring_mask; i++)
    if (atomic_load_explicit(&G.ring[i], RLX) & 1) sstm__futex_wake_all(&G.ring[i]);
}

/* Under G.lock: the counters since the last window, summed; the threads
 * whose counters moved. */
static void window_close(sstm_cm_ctx_t *ctx) {
  uint64_t c = 0, a = 0;
  unsigned threads = 0, n = sstm__cm_slots();
  if (n > G.nslots) n = G.nslots;
  for (unsigned i = 0; i < n; i++) {
    sstm_cm_counts_t k;
    if (!sstm__cm_counts(i, &k)) continue;
    /* a descriptor reused by another thread restarts its counts */
    uint64_t dc = k.commits >= G.seen_c[i] ? k.commits - G.seen_c[i] : k.commits;
    uint64_t da = k.aborts >= G.seen_a[i] ? k.aborts - G.seen_a[i] : k.aborts;
    G.seen_c[i] = k.commits;
    G.seen_a[i] = k.aborts;
    if (dc + da) threads++;
    c += dc;
    a += da;
  }
  bool was = G.judge.on;
  bool on = sstm__admit_decide(&G.judge, c, a, threads, G.limit);
  if (on != was) {
    gate_set(on);
    sstm_cm_count(ctx, C_ADMIT_SWITCHES, 1);
    sstm_cm_info_changed();
  }
}

/* `now` is the caller's clock reading, taken before the window's start is
 * loaded: another thread may have closed the window in between with a
 * later reading, and now - start would then wrap to a huge "window" that
 * this thread would close again, judging the counts of an instant (few
 * threads moved: the gate turned off). Such a reading closes nothing.
 * Whether this call closed a window. */
static bool window_check(sstm_cm_ctx_t *ctx, uint64_t now) {
  if (atomic_load_explicit(&G.pinned, RLX)) return false;
  uint64_t ws = atomic_load_explicit(&G.window_start, RLX);
  if (now <= ws || now - ws < ADMIT_WINDOW_NS) return false;
  /* one thread closes the window: the one whose CAS moves its start */
  if (!atomic_compare_exchange_strong_explicit(&G.window_start, &ws, now, RLX, RLX)) return false;
  if (pthread_mutex_trylock(&G.lock) != 0) return false;
  window_close(ctx);
  pthread_mutex_unlock(&G.lock);
  return true;
}

bool sstm__admit_window_at(sstm_cm_ctx_t *ctx, uint64_t now) { return window_check(ctx, now); }

void sstm__admit_pin(bool on, uint64_t limit, uint64_t wait_max_ns, uint64_t hold_ns) {
  pthread_mutex_lock(&G.lock);
  atomic_store_explicit(&G.pinned, true, RLX);
  G.limit = limit;
  G.wait_max_ns = wait_max_ns;
  if (G.hold_ns && hold_ns) G.hold_ns = hold_ns;
  atomic_store_explicit(&G.on, on, RLX);
  pthread_mutex_unlock(&G.lock);
}

void sstm__admit_gate_counts(uint64_t *waits, uint64_t *timeouts, uint64_t *reclaims) {
  *waits = atomic_load_explicit(&G.n_waits, RLX);
  *timeouts = atomic_load_explicit(&G.n_timeouts, RLX);
  *reclaims = atomic_load_explicit(&G.n_reclaims, RLX);
}

/* ---- hooks ---- */

/* Both policies' init: hold_ns is the slice, 0 for admit. */
static int gate_init(const sstm_config_t *cfg, uint64_t hold_ns) {
  unsigned n = cfg->max_threads ? cfg->max_threads : 1;
  uint64_t r = 2;
  while (r < n)
    r *= 2;
  _Atomic uint64_t *ring = calloc(r, sizeof *ring);
  uint64_t *seen = calloc(2 * (size_t)n, sizeof *seen);
  _Atomic(admit_state_t *) *states = calloc(n, sizeof *states);
  if (ring == NULL || seen == NULL || states == NULL) {
    free(ring);
    free(seen);
    free(states);
    sstm__set_error("admit: out of memory for %u thread slots", n);
    return SSTM_ENOMEM;
  }
  pthread_mutex_lock(&G.lock);
  G.ring = ring;
  G.ring_mask = r - 1;
  G.ncpu = sstm__cpus_allowed();
  G.limit = (uint64_t)ADMIT_PER_CPU * G.ncpu;
  G.wait_max_ns = ADMIT_WAIT_MAX_NS;
  G.hold_ns = hold_ns;
  G.judge = (sstm__admit_judge_t){.sticky = hold_ns != 0};
  G.count = true;
  atomic_store_explicit(&G.pinned, false, RLX);
  G.nslots = n;
  G.seen_c = seen;
  G.seen_a = seen + n;
  G.states = states;
  atomic_store_explicit(&G.nstates, 0, RLX);
  pthread_mutex_unlock(&G.lock);
  atomic_store_explicit(&G.on, false, RLX);
  atomic_store_explicit(&G.tickets, 0, RLX);
  atomic_store_explicit(&G.exits, 0, RLX);
  atomic_store_explicit(&G.n_waits, 0, RLX);
  atomic_store_explicit(&G.n_timeouts, 0, RLX);
  atomic_store_explicit(&G.n_reclaims, 0, RLX);
  atomic_store_explicit(&G.window_start, sstm__now_ns(), RLX);
  return 0;
}

static int admit_init(const sstm_config_t *cfg) { return gate_init(cfg, 0); }
static int slice_init(const sstm_config_t *cfg) { return gate_init(cfg, ADMIT_SLICE_NS); }

static void admit_fini(void) {
  pthread_mutex_lock(&G.lock);
  atomic_store_explicit(&G.on, false, RLX);
  free(G.ring);
  free(G.seen_c);
  free((void *)G.states);
  G.ring = NULL;
  G.seen_c = G.seen_a = NULL;
  G.states = NULL;
  atomic_store_explicit(&G.nstates, 0, RLX);
  G.nslots = 0;
  pthread_mutex_unlock(&G.lock);
}

/* A descriptor's gate state, set up for a new thread: it holds no place
 * (its last holder gave it back at release, desc_fini). Listed for
 * reclaims the first time (the state outlives the thread: cm.h). */
static void gate_desc_init(admit_state_t *s) {
  s->held = false;
  atomic_store_explicit(&s->own, 0, RLX);
  s->to_clock = ADMIT_CLOCK_EVERY;
  pthread_mutex_lock(&G.lock);
  /* a state re-listed after an sstm_init that cleared the table */
  bool fresh = !s->listed;
  if (!fresh) {
    fresh = true;
    unsigned n = atomic_load_explicit(&G.nstates, RLX);
    for (unsigned i = 0; i < n && fresh; i++)
      fresh = atomic_load_explicit(&G.states[i], RLX) != s;
  }
  unsigned n = atomic_load_explicit(&G.nstates, RLX);
  if (fresh && G.states && n < G.nslots) {
    /* release: a waiter that loads the count (acquire) sees the entry */
    atomic_store_explicit(&G.states[n], s, memory_order_release);
    atomic_store_explicit(&G.nstates, n + 1, memory_order_release);
    s->listed = true;
  }
  pthread_mutex_unlock(&G.lock);
}

/* Give the place back if its time is over (admit-slice: the slice since
 * its admission) or a waiter took it, and, the gate being on, queue for
 * the next one: the admission hook, at the start of every attempt
 * (file comment). Under admit the place held is the transaction's, kept
 * across its retries. */
static void gate_begin(sstm_cm_ctx_t *ctx, admit_state_t *s) {
  if (s->held) {
    /* relaxed: own is cleared only by a reclaim; seeing it late runs one
     * more transaction as if admitted (a throttle, not a lock) */
    if (atomic_load_explicit(&s->own, RLX) != s->ticket + 1) {
      s->held = false; /* reclaimed while it ran no transaction */
    } else if (!G.hold_ns) {
      return;
    } else if (--s->to_clock != 0) {
      return; /* admit-slice: look at the clock now and then */
    } else {
      uint64_t now = sstm__now_ns();
      s->to_clock = ADMIT_SLICE_CLOCK_EVERY;
      window_check(ctx, now);
      if (now - atomic_load_explicit(&s->since, RLX) < G.hold_ns) return;
      gate_exit(s);
    }
  } else if (--s->to_clock == 0) {
    s->to_clock = ADMIT_CLOCK_EVERY;
    window_check(ctx, sstm__now_ns());
  }
  /* relaxed: a thread that sees the gate on one begin late runs one more
   * transaction unadmitted; one that sees it off late queues once more
   * and is woken (gate_set). */
  if (atomic_load_explicit(&G.on, RLX)) gate_enter(ctx, s);
}

static void admit_begin(sstm_cm_ctx_t *ctx) { gate_begin(ctx, ctx->state); }

static void admit_desc_init(sstm_cm_ctx_t *ctx) {
  gate_desc_init(ctx->state);
  /* both policies gate every begin (the hook also closes the windows) */
  sstm__cm_admit_hook(ctx, admit_begin);
}

/* A descriptor released with a place (its thread ended within it): the
 * place ends with it. */
static void admit_desc_fini(sstm_cm_ctx_t *ctx) { gate_exit(ctx->state); }

/* The place is the thread's: a thread that lets the descriptor go gives it
 * back (a transaction suspended with the descriptor goes on unadmitted
 * when it resumes, and queues at its next begin). */
static void admit_detach(sstm_cm_ctx_t *ctx) { gate_exit(ctx->state); }

/* admit: the transaction's place is given back at its commit (after the
 * attempt; nothing waits here: the next begin queues). */
static void admit_commit(sstm_cm_ctx_t *ctx) { gate_exit(ctx->state); }

static void admit_abort(sstm_cm_ctx_t *ctx, const sstm_abort_info_t *info) {
  admit_state_t *s = ctx->state;
  window_check(ctx, sstm__now_ns());
  /* A cancel ends the transaction: admit's place goes with it (admit-
   * slice keeps its slice). The restart of any other abort queues, if it
   * has to, at its begin. */
  if (info->reason == SSTM_ABORT_USER_CANCEL) {
    if (!G.hold_ns) gate_exit(s);
    return;
  }
  sstm__cm_ser_wait(ctx, info, SSTM_WAIT_BLOCK);
}

/* ---- the gate as a part of another policy (adaptive) ---- */

int sstm__admit_gate_init(const sstm_config_t *cfg) {
  int rc = slice_init(cfg);
  if (rc != 0) return rc;
  pthread_mutex_lock(&G.lock);
  G.count = false; /* before any thread runs: read without the lock */
  pthread_mutex_unlock(&G.lock);
  sstm__admit_drive(false);
  return 0;
}

void sstm__admit_gate_fini(void) { admit_fini(); }

void sstm__admit_drive(bool on) {
  pthread_mutex_lock(&G.lock);
  atomic_store_explicit(&G.pinned, true, RLX);
  G.judge.on = on;
  if (on != atomic_load_explicit(&G.on, RLX)) gate_set(on);
  pthread_mutex_unlock(&G.lock);
}

bool sstm__admit_gate_on(void) { return atomic_load_explicit(&G.on, RLX); }

size_t sstm__admit_gate_state_size(void) { return sizeof(admit_state_t); }

void sstm__admit_gate_desc_init(sstm_cm_ctx_t *ctx) { gate_desc_init(ctx->state); }

void sstm__admit_gate_begin(sstm_cm_ctx_t *ctx) { gate_begin(ctx, ctx->state); }

void sstm__admit_gate_leave(sstm_cm_ctx_t *ctx) { gate_exit(ctx->state); }

bool sstm__admit_gate_holds(const sstm_cm_ctx_t *ctx) {
  const admit_state_t *s = ctx->state;
  return s->held && atomic_load_explicit(&s->own, RLX) == s->ticket + 1;
}

bool sstm__admit_gate_peer_holds(sstm_cm_ctx_t *ctx, sstm_desc_t *d) {
  if (d == NULL) return false;
  admit_state_t *p = sstm__cm_peer_state(ctx, d);
  /* relaxed: a hint for the caller's choice (common.h), read once; it
   * orders nothing the caller then reads */
  return atomic_load_explicit(&p->own, RLX) != 0;
}

static int admit_describe(char *buf, size_t len) {
  int n = snprintf(buf, len, "gate=%s limit=%llu", atomic_load_explicit(&G.on, RLX) ? "on" : "off",
                   (unsigned long long)G.limit);
  if (G.hold_ns && n >= 0)
    n += snprintf(buf + ((size_t)n < len ? (size_t)n : len), (size_t)n < len ? len - (size_t)n : 0,
                  " slice=%lluus", (unsigned long long)(G.hold_ns / 1000));
  return n;
}

/* The two policies differ only in their name, description, init (the
 * slice) and admit's commit hook, which gives the place back; everything
 * else is the same gate. */
#define ADMIT_OPS(NAME, DESCRIPTION, INIT, COMMIT)                                                 \
  {                                                                                                \
    .name = NAME, .description = DESCRIPTION, .state_size = sizeof(admit_state_t), .init = INIT,   \
    .fini = admit_fini, .desc_init = admit_desc_init, .desc_fini = admit_desc_fini,                \
    .on_commit = COMMIT, .on_conflict = sstm__cm_abort_self, .on_abort = admit_abort,              \
    .stat_names = {"ser_waits",      "ser_timeouts",   "admit_waits",                              \
                   "admit_timeouts", "admit_switches", "admit_reclaims"},                          \
    .describe = admit_describe, .on_detach = admit_detach,                                         \
  }

const sstm_cm_ops_t sstm__cm_admit =
    ADMIT_OPS("admit",
              "ser-block, and at most one transaction in flight per CPU while threads "
              "outnumber CPUs and conflicts are frequent (FIFO admission)",
              admit_init, admit_commit);

const sstm_cm_ops_t sstm__cm_admit_slice =
    ADMIT_OPS("admit-slice",
              "ser-block, and at most one thread per CPU runs transactions while threads "
              "outnumber CPUs and conflicts are frequent, each for a time slice (FIFO)",
              slice_init, NULL);
