/* SPDX-License-Identifier: MIT */
/* admit, admit-slice: admission control when threads outnumber CPUs,
 * [Maldonado10]'s serialisation generalised from the loser of one
 * conflict to every thread. While the threads that run transactions
 * outnumber the CPUs and conflicts are frequent, at most ADMIT_PER_CPU
 * threads per CPU hold a place; the others sleep on a futex and are
 * admitted in FIFO order as places are given back. Conflicts among the
 * admitted are resolved as ser-block resolves them (abort, then sleep
 * until the winner's attempt ends: cm/ser.c).
 *
 * The two policies share the gate and differ in how long a thread keeps
 * its place:
 *   admit        one transaction: the place is given back at each commit,
 *                and the thread queues again at once. Each hand-over puts
 *                the thread that committed to sleep and wakes another: a
 *                context switch per transaction, several times what a short
 *                transaction costs (docs/benchmarks.md);
 *   admit-slice  a time slice, ADMIT_SLICE_NS of wall time from its
 *                admission: the thread runs transaction after transaction
 *                (and its code between them) and gives the place back at
 *                the first commit or abort after the slice has passed, so
 *                hand-overs happen at the rate of the scheduler's own
 *                preemptions, not of transactions. Oversubscribed, the
 *                threads that run are then about as many as the CPUs, and
 *                the kernel rarely takes one off its CPU inside a
 *                transaction: the others sleep at the gate, not in the
 *                run queue. [Maldonado10]'s time-slice extension (EXT)
 *                aims at the same from the other side.
 *
 * Why: with 32 threads per CPU and short transactions, many of the threads
 * that hold locks or have read stripes at a given moment are not running:
 * the scheduler took them off their CPU mid-transaction (docs/benchmarks.md,
 * "Why lock holders are descheduled in their commit"), and every running
 * thread that meets their stripes waits a scheduling round or aborts. With
 * admission, the threads that run transactions are about as many as the
 * CPUs.
 *
 * Where a thread waits: only between attempts, never inside one. The
 * engine calls on_begin after the attempt is published active and its
 * start time read, so a thread asleep there would hold back every grace
 * period of reclamation and wake with a stale snapshot (read-only
 * restarts, extensions). So there is no begin hook: a thread that finds
 * the gate on at a commit (on_commit runs after the attempt has ended) or
 * at an abort (on_abort, after the rollback) takes a ticket there and, if
 * it is not admitted, sleeps there; it holds no lock and runs no attempt
 * while it sleeps. A thread's first transaction after the gate turns on
 * thus runs unadmitted, once.
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
 * the thread giving its place back sees the mark. The ring has a power of
 * two >= cfg.max_threads entries: a thread holds at most one ticket, so
 * two tickets not yet given back never share an entry.
 *
 * Bounded: a thread waiting for admission gives up when no place has been
 * given back (`exits` has not moved) for ADMIT_WAIT_MAX_NS; it then runs
 * anyway (counted as admit_timeouts). The bound is on the gate's progress,
 * not on the wait: under admit-slice a thread waits its turn behind
 * threads / limit slices, longer than any fixed bound that still catches
 * a stuck holder. A holder held up where no commit can come (paused by an
 * executor, blocked in the application, descheduled by other programs)
 * thus costs the others at most that delay, and the gate can never
 * deadlock: it is a throttle, not a lock. A thread that ran after a
 * timeout still gives its ticket back, so the count of places taken stays
 * exact. A descriptor released or detached gives its ticket back. A
 * thread asleep in the gate runs again only in its turn (or after the
 * bound), also when the program is stopping its threads: while the gate
 * is on they leave one hand-over at a time; the gate turns off once the
 * threads that run no longer outnumber the places, and that wakes them
 * all.
 *
 * When (the decision, sstm__admit_decide, a pure function tested on
 * constructed inputs): every ADMIT_WINDOW_NS, the thread that notices the
 * window's end (at an abort, or at one commit in 64) sums the engine's
 * per-thread counters (as adaptive does) and judges the window: the gate
 * turns on when threads that ran transactions outnumber the limit and the
 * window had at least ADMIT_ON_APC aborts per commit; it turns off when
 * threads fall to the limit, or (admit only) after ADMIT_OFF_WINDOWS
 * windows in a row under ADMIT_OFF_APC (the lower bound: the gate itself
 * makes conflicts rarer). admit-slice does not turn off on calm windows:
 * under its gate conflicts are those of `limit` threads, so calm windows
 * say that the gate works, and keeping it costs a hand-over per slice.
 *
 * Cost: an on_commit hook on every transaction: a relaxed load of the
 * gate's flag and a per-descriptor counter. While the gate is on, admit
 * makes two shared atomic operations and a sleep per transaction;
 * admit-slice two per slice, and a clock read (vDSO, no system call)
 * every ADMIT_SLICE_CLOCK_EVERY commits.
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
 * (docs/benchmarks.md, "Oversubscribed: admission by time slice", compares
 * 1, 4 and 16 ms). */
#define ADMIT_SLICE_NS 4000000ull
/* ... and commits between two looks at the clock while it holds one: a
 * slice ends at most this many commits late. */
#define ADMIT_SLICE_CLOCK_EVERY 16
/* A window of the decision. */
#define ADMIT_WINDOW_NS 20000000ull
/* Commits between two looks at the clock, per descriptor. */
#define ADMIT_CLOCK_EVERY 64

enum { C_SER_WAITS, C_SER_TIMEOUTS, C_ADMIT_WAITS, C_ADMIT_TIMEOUTS, C_ADMIT_SWITCHES };

typedef struct admit_state {
  bool held;         /* owner-only: this thread holds a ticket */
  uint64_t ticket;   /* ... that one */
  uint64_t since;    /* ... admitted at this time (admit-slice) */
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
  uint64_t hold_ns;     /* admit-slice: the slice; 0: admit (one transaction) */
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

/* The calling thread takes a ticket and waits until it is admitted, or
 * no place has been given back for G.wait_max_ns, or the gate turned
 * off. */
static void gate_enter(sstm_cm_ctx_t *ctx, admit_state_t *s) {
  /* seq_cst: the ticket order is the admission order (a relaxed RMW would
   * do for that; seq_cst for uniformity with the exits it is compared to). */
  uint64_t t = atomic_fetch_add_explicit(&G.tickets, 1, memory_order_seq_cst);
  s->held = true;
  s->ticket = t;
  /* seq_cst: the store-buffering pair with gate_exit (file comment). */
  uint64_t e = atomic_load_explicit(&G.exits, memory_order_seq_cst);
  if (t < e + G.limit) goto admitted;
  sstm_cm_count(ctx, C_ADMIT_WAITS, 1);
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
    uint64_t now = sstm__now_ns();
    if (e2 != e) { /* a place was given back: the gate is alive */
      e = e2;
      moved = now;
    }
    if (G.wait_max_ns && now - moved >= G.wait_max_ns) {
      sstm_cm_count(ctx, C_ADMIT_TIMEOUTS, 1);
      break;
    }
    /* returns at once if the entry no longer holds our mark; woken only
     * by our turn, so it sleeps at most until the bound would pass */
    sstm__futex_wait(w, (uint32_t)mark, G.wait_max_ns ? G.wait_max_ns - (now - moved) : 0);
  }
  atomic_store_explicit(w, 0, RLX); /* no longer sleeping: a stale wake is harmless */
  sstm_cm_note(ctx, SSTM_ACT_NONE);
admitted:
  if (G.hold_ns) {
    s->since = sstm__now_ns();
    s->to_clock = ADMIT_SLICE_CLOCK_EVERY;
  }
}

/* Give the place back: admit the next ticket. */
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

static void window_check(sstm_cm_ctx_t *ctx, uint64_t now) {
  if (atomic_load_explicit(&G.pinned, RLX)) return;
  uint64_t ws = atomic_load_explicit(&G.window_start, RLX);
  if (now - ws < ADMIT_WINDOW_NS) return;
  /* one thread closes the window: the one whose CAS moves its start */
  if (!atomic_compare_exchange_strong_explicit(&G.window_start, &ws, now, RLX, RLX)) return;
  if (pthread_mutex_trylock(&G.lock) != 0) return;
  window_close(ctx);
  pthread_mutex_unlock(&G.lock);
}

void sstm__admit_pin(bool on, uint64_t limit, uint64_t wait_max_ns, uint64_t hold_ns) {
  pthread_mutex_lock(&G.lock);
  atomic_store_explicit(&G.pinned, true, RLX);
  G.limit = limit;
  G.wait_max_ns = wait_max_ns;
  if (G.hold_ns && hold_ns) G.hold_ns = hold_ns;
  atomic_store_explicit(&G.on, on, RLX);
  pthread_mutex_unlock(&G.lock);
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
  G.hold_ns = hold_ns;
  G.judge = (sstm__admit_judge_t){.sticky = hold_ns != 0};
  atomic_store_explicit(&G.pinned, false, RLX);
  G.nslots = n;
  G.seen_c = seen;
  G.seen_a = seen + n;
  pthread_mutex_unlock(&G.lock);
  atomic_store_explicit(&G.on, false, RLX);
  atomic_store_explicit(&G.tickets, 0, RLX);
  atomic_store_explicit(&G.exits, 0, RLX);
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

/* A descriptor released with a ticket (its thread ended within its
 * place): the ticket ends with it. */
static void admit_desc_fini(sstm_cm_ctx_t *ctx) { gate_exit(ctx->state); }

/* The place is the thread's: a thread that lets the descriptor go gives it
 * back (a transaction suspended with the descriptor goes on unadmitted
 * when it resumes: the gate is a throttle, not a lock). */
static void admit_detach(sstm_cm_ctx_t *ctx) { gate_exit(ctx->state); }

/* Give the place back if its time is over (hold_ns after its admission;
 * every time for admit) and, the gate being on, queue for the next one:
 * called only between attempts (file comment). `now` is a clock reading
 * (0: not read yet). */
static void gate_turn(sstm_cm_ctx_t *ctx, admit_state_t *s, uint64_t now) {
  if (s->held) {
    if (G.hold_ns) {
      if (now == 0) now = sstm__now_ns();
      if (now - s->since < G.hold_ns) return;
    }
    gate_exit(s);
  }
  /* relaxed: as in admit_commit; a thread that sees the gate late runs
   * one more transaction unadmitted. */
  if (atomic_load_explicit(&G.on, RLX)) gate_enter(ctx, s);
}

static void admit_commit(sstm_cm_ctx_t *ctx) {
  admit_state_t *s = ctx->state;
  if (s->held) {
    uint64_t now = 0;
    if (G.hold_ns) {
      if (--s->to_clock != 0) return; /* admit-slice: look at the clock now and then */
      s->to_clock = ADMIT_SLICE_CLOCK_EVERY;
      now = sstm__now_ns();
      window_check(ctx, now);
    } else if (--s->to_clock == 0) {
      s->to_clock = ADMIT_CLOCK_EVERY;
      window_check(ctx, sstm__now_ns());
    }
    gate_turn(ctx, s, now);
    return;
  }
  /* relaxed: a thread that sees the gate on one commit late runs one more
   * transaction unadmitted (file comment). */
  if (atomic_load_explicit(&G.on, RLX)) {
    gate_enter(ctx, s);
  } else if (--s->to_clock == 0) {
    s->to_clock = ADMIT_CLOCK_EVERY;
    window_check(ctx, sstm__now_ns());
  }
}

static void admit_abort(sstm_cm_ctx_t *ctx, const sstm_abort_info_t *info) {
  admit_state_t *s = ctx->state;
  uint64_t now = sstm__now_ns();
  window_check(ctx, now);
  /* After the rollback, so a thread may sleep at the gate here. Under
   * admit the place is the transaction's, kept across its retries; under
   * admit-slice one whose time is over is given back here too, so that a
   * thread that keeps losing or cancelling lets others run. */
  bool keep = s->held && !G.hold_ns && info->reason != SSTM_ABORT_USER_CANCEL;
  if (!keep) gate_turn(ctx, s, now);
  if (info->reason != SSTM_ABORT_USER_CANCEL) sstm__cm_ser_wait(ctx, info, SSTM_WAIT_BLOCK);
}

static int admit_describe(char *buf, size_t len) {
  int n = snprintf(buf, len, "gate=%s limit=%llu", atomic_load_explicit(&G.on, RLX) ? "on" : "off",
                   (unsigned long long)G.limit);
  if (G.hold_ns && n >= 0)
    n += snprintf(buf + ((size_t)n < len ? (size_t)n : len), (size_t)n < len ? len - (size_t)n : 0,
                  " slice=%lluus", (unsigned long long)(G.hold_ns / 1000));
  return n;
}

/* The two policies differ only in their name, description and init (the
 * slice); everything else is the same gate. */
#define ADMIT_OPS(NAME, DESCRIPTION, INIT)                                                         \
  {                                                                                                \
    .name = NAME, .description = DESCRIPTION, .state_size = sizeof(admit_state_t), .init = INIT,   \
    .fini = admit_fini, .desc_init = admit_desc_init, .desc_fini = admit_desc_fini,                \
    .on_commit = admit_commit, .on_conflict = sstm__cm_abort_self, .on_abort = admit_abort,        \
    .stat_names = {"ser_waits", "ser_timeouts", "admit_waits", "admit_timeouts",                   \
                   "admit_switches"},                                                              \
    .describe = admit_describe, .on_detach = admit_detach,                                         \
  }

const sstm_cm_ops_t sstm__cm_admit =
    ADMIT_OPS("admit",
              "ser-block, and at most one transaction in flight per CPU while threads "
              "outnumber CPUs and conflicts are frequent (FIFO admission)",
              admit_init);

const sstm_cm_ops_t sstm__cm_admit_slice =
    ADMIT_OPS("admit-slice",
              "ser-block, and at most one thread per CPU runs transactions while threads "
              "outnumber CPUs and conflicts are frequent, each for a time slice (FIFO)",
              slice_init);
