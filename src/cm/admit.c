/* SPDX-License-Identifier: MIT */
/* admit: admission control when threads outnumber CPUs, [Maldonado10]'s
 * serialisation generalised from the loser of one conflict to every
 * transaction. While the threads that run transactions outnumber the CPUs
 * and conflicts are frequent, at most ADMIT_PER_CPU transactions per CPU
 * are in flight; a thread whose transaction begins beyond that sleeps on a
 * futex and is admitted in FIFO order as transactions in flight commit.
 * Conflicts among the admitted are resolved as ser-block resolves them
 * (abort, then sleep until the winner's attempt ends: cm/ser.c).
 *
 * Why: with 32 threads per CPU and short transactions, most of the threads
 * that hold locks or have read stripes at a given moment are not running:
 * the scheduler took them off their CPU mid-transaction (docs/benchmarks.md,
 * "Why lock holders are descheduled in their commit"), and every running
 * thread that meets their stripes waits a scheduling round or aborts. With
 * admission, the transactions in flight are about as many as the CPUs, so
 * a thread that runs is mostly one whose transaction is in flight.
 *
 * Mechanism, a ticket gate (no lock, FIFO): a transaction's first attempt
 * takes ticket t = tickets++ (one fetch_add) and may run once t < exits +
 * limit, where `exits` counts the admitted transactions that have ended
 * (committed or cancelled); it then holds the ticket across its retries.
 * A thread beyond the limit marks the ring entry of its ticket as
 * sleeping, re-reads `exits` and sleeps on that entry's futex. The end of
 * an admitted transaction increments `exits`, which admits exactly ticket
 * exits + limit - 1, and wakes that ticket's entry only if it is marked:
 * one wake-up per hand-over, no thundering herd. The mark and the
 * increment are seq_cst on both sides (the store-buffering shape), so
 * either the sleeper sees the new `exits` or the ending transaction sees
 * the mark. The ring has a power of two >= cfg.max_threads entries:
 * tickets not yet ended are at most one per thread, so two of them never
 * share an entry.
 *
 * Bounded: no thread waits for admission longer than ADMIT_WAIT_MAX_NS; it
 * then runs anyway (counted as admit_timeouts). A transaction held up
 * where no commit can come (paused by an executor, blocked in the
 * application between its begin and its commit) thus costs the others at
 * most that delay, and the gate can never deadlock: it is a throttle, not
 * a lock. A thread admitted late still ends its ticket, so the count of
 * tickets in flight stays exact.
 *
 * When (the decision, sstm__admit_decide, a pure function tested on
 * constructed inputs): every ADMIT_WINDOW_NS, the thread that notices the
 * window's end (at an abort, or at one commit in 64) sums the engine's
 * per-thread counters (as adaptive does) and judges the window: the gate
 * turns on when threads that ran transactions outnumber the limit and the
 * window had at least ADMIT_ON_APC aborts per commit; it turns off when
 * threads fall to the limit, or after ADMIT_OFF_WINDOWS windows in a row
 * under ADMIT_OFF_APC (the lower bound: the gate itself makes conflicts
 * rarer). The on_begin hook reads one flag while the gate is off.
 *
 * Cost: on_begin and on_commit hooks on every transaction (a relaxed load
 * and a per-descriptor counter while the gate is off); two shared atomic
 * operations per transaction while it is on.
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
/* The longest wait for admission: four 4 ms ticks. */
#define ADMIT_WAIT_MAX_NS 16000000ull
/* A window of the decision. */
#define ADMIT_WINDOW_NS 20000000ull
/* Commits between two looks at the clock, per descriptor. */
#define ADMIT_CLOCK_EVERY 64

enum { C_SER_WAITS, C_SER_TIMEOUTS, C_ADMIT_WAITS, C_ADMIT_TIMEOUTS, C_ADMIT_SWITCHES };

typedef struct admit_state {
  bool held;         /* owner-only: this transaction holds a ticket */
  uint64_t ticket;   /* ... that one */
  uint32_t to_clock; /* commits until the next look at the clock */
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
  _Atomic bool pinned;  /* sstm__admit_pin: the windows decide nothing */
  unsigned ncpu;
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

/* The calling thread's transaction takes a ticket and waits until it is
 * admitted (or ADMIT_WAIT_MAX_NS has passed, or the gate turned off). */
static void gate_enter(sstm_cm_ctx_t *ctx, admit_state_t *s) {
  /* seq_cst: the ticket order is the admission order (a relaxed RMW would
   * do for that; seq_cst for uniformity with the exits it is compared to). */
  uint64_t t = atomic_fetch_add_explicit(&G.tickets, 1, memory_order_seq_cst);
  s->held = true;
  s->ticket = t;
  /* seq_cst: the store-buffering pair with gate_exit (file comment). */
  if (t < atomic_load_explicit(&G.exits, memory_order_seq_cst) + G.limit) return;
  sstm_cm_count(ctx, C_ADMIT_WAITS, 1);
  sstm_cm_note(ctx, SSTM_ACT_BLOCK);
  _Atomic uint64_t *w = &G.ring[t & G.ring_mask];
  uint64_t mark = (t << 1) | 1;
  uint64_t t0 = sstm__now_ns();
  for (;;) {
    /* seq_cst: the mark, then exits (file comment) */
    atomic_store_explicit(w, mark, memory_order_seq_cst);
    if (t < atomic_load_explicit(&G.exits, memory_order_seq_cst) + G.limit) break;
    if (!atomic_load_explicit(&G.on, RLX)) break;
    uint64_t now = sstm__now_ns();
    if (G.wait_max_ns && now - t0 >= G.wait_max_ns) {
      sstm_cm_count(ctx, C_ADMIT_TIMEOUTS, 1);
      break;
    }
    /* returns at once if the entry no longer holds our mark */
    sstm__futex_wait(w, (uint32_t)mark, G.wait_max_ns ? G.wait_max_ns - (now - t0) : 0);
  }
  atomic_store_explicit(w, 0, RLX); /* no longer sleeping: a stale wake is harmless */
  sstm_cm_note(ctx, SSTM_ACT_NONE);
}

/* The transaction holding a ticket has ended: admit the next one. */
static void gate_exit(admit_state_t *s) {
  if (!s->held) return;
  s->held = false;
  if (G.ring == NULL) return; /* a descriptor released after the policy's fini */
  /* seq_cst: the store-buffering pair with gate_enter's mark */
  uint64_t e = atomic_fetch_add_explicit(&G.exits, 1, memory_order_seq_cst) + 1;
  uint64_t next = e + G.limit - 1; /* the ticket this exit admits */
  _Atomic uint64_t *w = &G.ring[next & G.ring_mask];
  if (atomic_load_explicit(w, memory_order_seq_cst) == ((next << 1) | 1)) sstm__futex_wake_all(w);
}

/* ---- the window ---- */

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
    atomic_store_explicit(&G.on, on, RLX);
    /* Turned off: the sleepers need not wait for their turn any more.
     * Each re-reads the flag when woken. Relaxed both sides: one that
     * marks its entry while this pass runs may sleep on, until its turn
     * or its bound (ADMIT_WAIT_MAX_NS). */
    for (uint64_t i = 0; !on && i <= G.ring_mask; i++)
      if (atomic_load_explicit(&G.ring[i], RLX) & 1) sstm__futex_wake_all(&G.ring[i]);
    sstm_cm_count(ctx, C_ADMIT_SWITCHES, 1);
    sstm_cm_info_changed();
  }
}

static void window_check(sstm_cm_ctx_t *ctx) {
  if (atomic_load_explicit(&G.pinned, RLX)) return;
  uint64_t now = sstm__now_ns();
  uint64_t ws = atomic_load_explicit(&G.window_start, RLX);
  if (now - ws < ADMIT_WINDOW_NS) return;
  /* one thread closes the window: the one whose CAS moves its start */
  if (!atomic_compare_exchange_strong_explicit(&G.window_start, &ws, now, RLX, RLX)) return;
  if (pthread_mutex_trylock(&G.lock) != 0) return;
  window_close(ctx);
  pthread_mutex_unlock(&G.lock);
}

void sstm__admit_pin(bool on, uint64_t limit, uint64_t wait_max_ns) {
  pthread_mutex_lock(&G.lock);
  atomic_store_explicit(&G.pinned, true, RLX);
  G.limit = limit;
  G.wait_max_ns = wait_max_ns;
  atomic_store_explicit(&G.on, on, RLX);
  pthread_mutex_unlock(&G.lock);
}

/* ---- hooks ---- */

static int admit_init(const sstm_config_t *cfg) {
  unsigned n = cfg->max_threads ? cfg->max_threads : 1;
  uint64_t r = 2;
  while (r < n)
    r *= 2;
  _Atomic uint64_t *ring = calloc(r, sizeof *ring);
  uint64_t *seen = calloc(2 * (size_t)n, sizeof *seen);
  if (ring == NULL || seen == NULL) {
    free(ring);
    free(seen);
    sstm__set_error("admit: out of memory for %u thread slots", n);
    return SSTM_ENOMEM;
  }
  pthread_mutex_lock(&G.lock);
  G.ring = ring;
  G.ring_mask = r - 1;
  G.ncpu = sstm__cpus_allowed();
  G.limit = (uint64_t)ADMIT_PER_CPU * G.ncpu;
  G.wait_max_ns = ADMIT_WAIT_MAX_NS;
  atomic_store_explicit(&G.pinned, false, RLX);
  G.nslots = n;
  G.seen_c = seen;
  G.seen_a = seen + n;
  G.judge = (sstm__admit_judge_t){0};
  pthread_mutex_unlock(&G.lock);
  atomic_store_explicit(&G.on, false, RLX);
  atomic_store_explicit(&G.tickets, 0, RLX);
  atomic_store_explicit(&G.exits, 0, RLX);
  atomic_store_explicit(&G.window_start, sstm__now_ns(), RLX);
  return 0;
}

static void admit_fini(void) {
  pthread_mutex_lock(&G.lock);
  atomic_store_explicit(&G.on, false, RLX);
  free(G.ring);
  free(G.seen_c);
  G.ring = NULL;
  G.seen_c = G.seen_a = NULL;
  G.nslots = 0;
  pthread_mutex_unlock(&G.lock);
}

static void admit_desc_init(sstm_cm_ctx_t *ctx) {
  admit_state_t *s = ctx->state;
  s->held = false;
  s->to_clock = ADMIT_CLOCK_EVERY;
}

/* A descriptor released with its transaction's ticket (a thread that ended
 * inside a transaction): the ticket ends with it. */
static void admit_desc_fini(sstm_cm_ctx_t *ctx) { gate_exit(ctx->state); }

static void admit_begin(sstm_cm_ctx_t *ctx) {
  admit_state_t *s = ctx->state;
  if (s->held || !atomic_load_explicit(&G.on, RLX)) return;
  gate_enter(ctx, s);
}

static void admit_commit(sstm_cm_ctx_t *ctx) {
  admit_state_t *s = ctx->state;
  gate_exit(s);
  if (--s->to_clock == 0) {
    s->to_clock = ADMIT_CLOCK_EVERY;
    window_check(ctx);
  }
}

static void admit_abort(sstm_cm_ctx_t *ctx, const sstm_abort_info_t *info) {
  admit_state_t *s = ctx->state;
  if (info->reason == SSTM_ABORT_USER_CANCEL) { /* no restart: the transaction has ended */
    gate_exit(s);
    return;
  }
  window_check(ctx);
  sstm__cm_ser_wait(ctx, info, SSTM_WAIT_BLOCK);
}

static int admit_describe(char *buf, size_t len) {
  return snprintf(buf, len, "gate=%s limit=%llu", atomic_load_explicit(&G.on, RLX) ? "on" : "off",
                  (unsigned long long)G.limit);
}

const sstm_cm_ops_t sstm__cm_admit = {
    .name = "admit",
    .description = "ser-block, and at most one transaction in flight per CPU while threads "
                   "outnumber CPUs and conflicts are frequent (FIFO admission)",
    .state_size = sizeof(admit_state_t),
    .init = admit_init,
    .fini = admit_fini,
    .desc_init = admit_desc_init,
    .desc_fini = admit_desc_fini,
    .on_begin = admit_begin,
    .on_commit = admit_commit,
    .on_conflict = sstm__cm_abort_self,
    .on_abort = admit_abort,
    .stat_names = {"ser_waits", "ser_timeouts", "admit_waits", "admit_timeouts", "admit_switches"},
    .describe = admit_describe,
};
