/* SPDX-License-Identifier: MIT */
/* adaptive: chooses among ser-kill, yield, ser-block and os_prio
 * online, and gives its threads a longer time slice when transactions are
 * long or threads outnumber CPUs, following [Maldonado10]'s Table 1 and conclusions (the paper
 * leaves this as future work) and what they measure to in docs/benchmarks.md:
 *
 *   long transactions (CPU time per commit over 1/35 of the time slice:
 *     40 us for a 1.4 ms EEVDF slice, the default on 2 CPUs), or
 *     non-deterministic ones (over 30 % of retries take another path),
 *     whatever the thread count               -> os_prio or ser-block,
 *       with a 4 ms EEVDF custom slice for its threads: the
 *       default os_prio while over 2/3 of the commits are updates (until
 *       under 1/2), ser-block otherwise, and the other one if a probe finds
 *       it significantly ahead. [Maldonado10] serialises such
 *       transactions (softly: softser); on the STMBench7-like workload
 *       [Guerraoui07] of docs/benchmarks.md, ser-block(+ext) leads the
 *       read-dominated mix (8 % updates) and os_prio (the larger
 *       transaction wins and aborts the other) the write-dominated one
 *       (86 %) at 16-64 threads;
 *   short transactions, and
 *     threads that ran transactions <= CPUs  -> ser-kill: wait for a
 *       running winner by spinning without aborting (SER-u spin, Table 1's
 *       "threads <= cores"), kill one that stalls (its CPU may be taken by
 *       another process: the count is of our threads only) and sleep
 *       behind a long one (cm/ser_kill.c). It replaced ser-spin-block
 *       (abort, spin up to 20 us, then sleep), which it matched or beat at
 *       2 threads on the as-written intsets (docs/benchmarks.md);
 *     more threads than CPUs                 -> yield or ser-block,
 *       whichever commits more in a probe. Neither leads consistently on
 *       short workloads (docs/benchmarks.md), and nothing observable
 *       without trying says which will on a given run. A
 *       held yield whose losers abort more than once per commit for two
 *       windows (it does not serialise) gives way to ser-block. Either
 *       way, while the threads that ran transactions keep the CPUs busy
 *       (other programs do not compete for them: OVER_SLICE_NS), they
 *       take a 100 ms EEVDF custom slice (the kernel's longest),
 *       [Maldonado10]'s EXT (section 4) as far as stock Linux allows: oversubscribed, most long
 * waits are behind a lock holder descheduled inside its commit, which no policy may abort, and
 *       those preemptions are mostly the scheduler's own (a tick past the
 *       default slice of about 1.5-4 ms, or a woken thread with an earlier
 *       deadline), so they fall in proportion to the slice: far fewer
 *       involuntary context switches when threads far outnumber CPUs,
 *       fewer waits, more commits per CPU-second
 *       (docs/benchmarks-history.md, "Why lock holders are descheduled in
 *       their commit", has the figures).
 *       The cost is latency: a
 *       thread may wait a round of 100 ms slices for its CPU; the slice
 *       is given back when the regime ends (at each thread's next abort)
 *       or the descriptor leaves the thread.
 *
 * With short transactions and more threads than CPUs, once a window has
 * at least ADMIT_ON_APC aborts per commit, adaptive also runs
 * admit-slice's admission gate (cm/admit.c): at most one thread per CPU
 * runs transactions, each for a 4 ms slice, the others sleep at the begin
 * of an attempt in FIFO order; conflicts among the admitted are still
 * resolved by the choice above. Calm windows keep the gate (under it
 * conflicts are those of as many threads as CPUs); it goes with the
 * regime, or as soon as no more threads than CPUs ran transactions.
 * Oversubscribed, the threads that hold stripes are then mostly running
 * ones, not threads the scheduler took off their CPU mid-transaction
 * (docs/benchmarks-history.md, "Oversubscribed: admission by time
 * slice"). A place
 * belongs to a thread that runs transactions: it is given back when the
 * descriptor is detached (an executor's pause or request end) or released,
 * at the thread's first begin after its slice, before it sleeps (ser-block)
 * behind a winner that holds no place, and a waiter reclaims it
 * from a thread that stopped beginning transactions once its slice is
 * over (cm/admit.c; docs/design/admission.md). A gate that leaves the
 * CPUs idle (the kernel may queue two of the few threads it keeps
 * runnable on one CPU) is tried against none and held off if that is
 * faster (gate_idle_allows; docs/design/admission.md (A4)). The gate needs an
 * admission hook at begin; adaptive has none in its table and switches
 * the engine's run-time admission hook (sstm__cm_admit_hook) on per thread
 * at its next abort in the regime, and off at its first begin after it
 * or while the gate is held off: then a begin costs what it costs without
 * a policy hook, and adaptive has no commit hook at all.
 *
 * A probe runs six windows alternating the challenger (os_prio or yield;
 * ser-block for long update-heavy transactions) and the default (ser-block;
 * os_prio for those): challenger, default, default, challenger,
 * challenger, default, balanced against a drift. Each policy's commit rate
 * is the mean over its probe windows in the regime so far, the earlier
 * probes' windows weighted down by 3/4 at each new probe (about twelve
 * windows a policy in the steady state): one window of long transactions
 * says little (sb7's 20 ms windows vary widely around their mean, and
 * independently of each other: docs/benchmarks.md, "Figures behind the
 * design"), so six windows alone cannot tell apart policies whose rates
 * differ by a third. The challenger is chosen only if it is more
 * than 3 % ahead and the lead is significant: 1.5 standard errors of the
 * difference of the means (Welch's t, from the same weighted windows); a
 * verdict without a significant lead either way is a close one, and the
 * default stays. Once each policy has two windows or more of evidence, a
 * challenger whose mean is 1.5x the default's with t >= 3 wins at once
 * (a probe that goes on would mostly measure the loser). Only the
 * challenger wins early: the default (held before the probe) must win the
 * whole probe, since the challenger's first window is the one after the
 * switch and can only look worse than it is. Every window runs whole: a window cut short
 * because it started badly would count its bad start and never the
 * recovery, a bias against the policy cut. A probe, or a hold, whose
 * thread count doubles or halves starts over (a program's threads
 * starting up); so does a new regime, and its evidence with it.
 * The probe is repeated at once when the
 * regime changes, else after a hold: 50 windows after a close verdict
 * (under 25 % apart), 12 after a clear one that differs from the last
 * clear one, and twice the last hold (up to 800 windows, 16 s) after one
 * that confirms it.
 *
 * Starting choice, before any window has been evaluated: from the threads
 * registered so far, ser-block if they outnumber the CPUs (the safe choice
 * when oversubscribed), ser-kill otherwise; no slice (the CPUs' load is
 * not known yet). suicide is never chosen: every
 * policy of the menu costs exactly what suicide costs on conflict-free
 * paths, and softser ([Maldonado10]'s choice for non-deterministic
 * transactions) is behind the better of os_prio and ser-block+ext at every
 * sb7 point of docs/benchmarks.md and needs a commit hook.
 *
 * Observations, per window of at least 20 ms (long transactions with more
 * than 4 threads per CPU: 20 ms per 4 threads per CPU, up to 160 ms, so a
 * window spans a scheduling round): the engine's own per-thread
 * counters (commits and aborts, kept for sstm_stats anyway), read by the
 * thread that closes the window: adaptive has no commit hook (nor a
 * begin hook but the gate's, in its regime), its abort hook reads the
 * clock once, and its
 * attach hook reads the thread's CPU clock. Threads that ran
 * transactions: the descriptors whose counters
 * moved in the last four windows (a thread descheduled for a whole window
 * still competes for the CPUs; so is a thread that sleeps between
 * transactions counted, since telling the two apart would take the
 * scheduler's per-thread statistics, a /proc file per thread and window;
 * and workers that run many descriptors in turn count each). Transaction
 * length: the CPU time per commit, from the CPU clocks of the threads the
 * descriptors that ran transactions are attached to, with baselines kept
 * per thread, not per descriptor (one system call per attached thread and
 * window, by the evaluator; a thread's first baseline is taken when it
 * attaches): aborted attempts and spinning waits included (what a commit
 * costs), and the thread's work between transactions too; not the time a
 * thread sleeps or waits for a CPU, so neither a sleeping program nor a
 * loaded machine looks long. If a clock cannot be read (a thread ended),
 * window length x min(threads, CPUs) stands for it. Non-determinism: the share of
 * retries whose first PATH_LEN reads (stripes) differ from those of the
 * previous attempt of the same transaction, compared in the abort hook
 * ([Maldonado10] calls such transactions non-deterministic and serialises
 * them softly; softser is behind os_prio or ser-block+ext on every sb7 mix
 * in docs/benchmarks.md, so they get what long transactions get). Windows are closed only by
 * aborts: without conflicts the choice does not matter.
 *
 * Hysteresis, asymmetric: more threads than CPUs is acted on at once (a
 * spinning loser may hold a CPU the winner needs), fewer only after three
 * windows; a change of transaction length after two, and leaving the long
 * regime needs half the length (or non-determinism) that entering it does.
 * The current choice and the reason are in sstm_describe() ("cm-info=") and
 * in the state table's cm_info line (refreshed at every change, so sstm-top
 * shows them live); the switch, evaluation, probe and slice-change counts
 * are in the policy counters.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <schedstm/statetab.h>

#include "cm/common.h"
#include "iface/cm_services.h"
#include "os/sched.h"

extern const sstm_cm_ops_t sstm__cm_yield, sstm__cm_ser_kill, sstm__cm_ser_block, sstm__cm_os_prio,
    sstm__cm_adaptive;

enum { SUB_YIELD, SUB_SER_KILL, SUB_SER_BLOCK, SUB_OS_PRIO, NSUB };
static const sstm_cm_ops_t *const subs[NSUB] = {&sstm__cm_yield, &sstm__cm_ser_kill,
                                                &sstm__cm_ser_block, &sstm__cm_os_prio};
/* Policy counters 0..3 belong to the sub-policies (waits, yields or kills;
 * timeouts or self-aborts; os_prio's priority refreshes and escalations),
 * 4..6 to adaptive itself, 7 to an ext modifier. */
enum { A_SWITCHES = 4, A_EVALUATIONS = 5, A_SLICE_CHANGES = 6 };

#define WINDOW_NS 20000000ull
#define WINDOW_MAX_SCALE 8 /* long windows: up to 8 x WINDOW_NS */
#define MIN_EVENTS 16      /* commits + aborts a window needs to be judged */
#define ACTIVE_WINDOWS 4   /* a thread counts as running for this many windows */
/* Transactions are long when their CPU time per commit exceeds the time
 * slice / LONG_TX_DIV: then at least one in 35 spans a scheduling point,
 * and a preempted winner (or a loser spinning for one) costs a slice of
 * the CPUs. Table 1 compares transaction length with the time slice; 35
 * puts the line at 40 us with a 1.4 ms slice (EEVDF's default on 2 CPUs),
 * between the intsets' transactions and sb7's traversals, well below and
 * well above it (docs/benchmarks.md, "Figures behind the design"). The slice is the sstm_init
 * thread's (sched_getattr), read once; DEFAULT_SLICE_NS when the kernel does not report one
 * (before 6.12). */
#define LONG_TX_DIV 35.0
#define DEFAULT_SLICE_NS 1400000ull
#define EXT_SLICE_NS 4000000ull /* ext's default custom slice */
/* The custom slice of oversubscribed threads running short transactions:
 * the longest the kernel takes (sched_setattr clamps sched_runtime to
 * 0.1..100 ms). A thread is then preempted by the tick about once per
 * 100 ms of CPU time instead of at every 4 ms tick past the default slice,
 * so far fewer lock holders are descheduled inside their commit, where no
 * policy may abort them and every thread that needs their stripes waits a
 * scheduling round (the file comment, and docs/benchmarks-history.md, "Why
 * lock holders are descheduled in their commit"). */
#define OVER_SLICE_NS 100000000ull
/* ... but only while the threads that ran transactions kept at least this
 * share of the CPUs busy (and until under OURS_LEAVE): EEVDF runs the
 * eligible thread with the earliest deadline, a thread's slice after its
 * last pick, so a thread with a 100 ms slice waits behind every runnable
 * thread of other programs with the default slice, up to the slice times
 * their number over the CPUs: on a host loaded by other programs, runs of
 * 64 threads with it took 6 s instead of 1.5 s, their threads starved
 * (docs/benchmarks.md). Among threads that all have it, it is fair. */
#define OURS_ENTER 0.80
#define OURS_LEAVE 0.50
#define UNDER_WINDOWS 3  /* windows with threads <= CPUs before leaving ser-block/yield */
#define LENGTH_WINDOWS 2 /* windows a change of transaction length must last */
#define PROBE_LEN 6
#define PROBE_MARGIN 1.03   /* the challenger must beat the default by this factor */
#define EVIDENCE_DECAY 0.75 /* weight an earlier probe's windows keep at each new probe */
#define HOLD_WINDOWS 50     /* windows between probes that found no clear winner */
#define HOLD_FIRST 12       /* ... after a clear verdict not yet confirmed */
#define HOLD_MAX 800        /* ... growing to this while clear verdicts agree */
#define CLEAR_MARGIN 1.25   /* a verdict this one-sided is clear */
#define SIGNIFICANT_T 1.5   /* Welch's t the challenger's lead needs (a verdict, a clear one) */
#define EARLY_MARGIN 1.5    /* a lead this one-sided ... */
#define EARLY_T 3.0         /* ... and this significant ends the probe early */
#define YIELD_MAX_APC 1.0   /* aborts per commit that make a held yield give way */
#define PATH_LEN 8          /* reads compared between attempts */
#define NONDET_MIN 8        /* compared retries a window needs to judge non-determinism */
#define NONDET_SHARE 0.30   /* share of retries on another path: non-deterministic */
#define UPD_ENTER 0.67      /* long transactions: update commits that make os_prio the default */
#define UPD_LEAVE 0.50      /* ... and below which ser-block is again */
/* The gate's idle CPUs (gate_idle_allows): judged over this many windows
 * of the gate admitting (with 10 ms clock ticks, 200 ms of 2 CPUs are 40
 * ticks) ... */
#define GATE_IDLE_WINDOWS 10
/* ... a share of the CPUs' time idle at or above this turns it off ... */
#define GATE_IDLE_MAX 0.05
/* ... if it is then faster without: for this many windows, doubled at
 * each such trial in a row (up to HOLD_MAX) */
#define GATE_IDLE_HOLD 50
/* state_size must be known before init: an upper bound, checked at init
 * against the sub-policies' sizes. */
#define ADAPTIVE_STATE_MAX 512

typedef struct adaptive_state {
  uint64_t slice_cur;              /* owner-only: the custom slice adaptive gave the attached
                                      thread, 0 if none (an OS setting of the thread: given back
                                      when the descriptor leaves it, on_detach) */
  uint64_t slice_prev;             /* the thread's slice before (0: the default) */
  uint32_t prev_n;                 /* owner-only: the previous attempt's */
  const void *prev_path[PATH_LEN]; /* first read stripes */
  bool gate_hook;                  /* owner-only: the gate's admission hook is on (gate_hook) */
} adaptive_state_t;

static size_t sub_off[NSUB], gate_off, own_size;
/* Probe windows: 1 runs the challenger, 0 the default (balanced against a
 * drift of the workload during the probe). */
static const bool probe_challenger[PROBE_LEN] = {1, 0, 0, 1, 1, 0};

/* Shared decision state. `cur` and `slice_want` are read by the abort and
 * conflict hooks (relaxed: the sub-policies keep no shared state, so a choice
 * publishes nothing but itself; a thread that acts on the previous choice
 * for one more conflict is harmless). `window_start` is claimed by CAS by the
 * thread that closes a window; the evaluation itself, and everything below
 * `lock`, is under `lock`: one evaluation at a time, every 20 ms, off the
 * commit path. */
static struct {
  /* read on every abort: a cache line of its own, written at switches */
  _Alignas(64) _Atomic int cur;
  _Atomic uint64_t slice_want; /* the custom slice threads take at their next abort or
                                  attach, 0: none (set_slice) */
  _Atomic bool slice_failed;   /* the kernel refused a custom slice: stop asking */
  _Atomic bool gate_want;      /* admission gate wanted: threads switch its admission hook
                                  on at their next abort, off at their next begin */
  bool own_slice;              /* adaptive is the selected policy, not the base of
                                  "adaptive+ext" (whose ext owns the slice): set
                                  at init, before any descriptor */
  _Alignas(64) _Atomic uint64_t window_start;
  _Atomic uint64_t window_ns; /* the current window length (window_scale) */
  /* retries compared with their previous attempt, and those that took
   * another path: added by the abort hook (relaxed RMWs, on retries only),
   * taken by the evaluator */
  _Atomic uint64_t compared, differed;
  pthread_mutex_t lock;
  unsigned ncpu;
  unsigned nslots;                    /* size of the per-slot arrays */
  uint64_t *seen_c, *seen_a, *seen_u; /* per slot: commits, aborts, update commits at the
                                        last evaluation */
  uint64_t *last_win;                 /* per slot: last window it moved in (+1; 0 never) */
  /* Per thread (CPU clocks belong to threads, and a descriptor may move
   * between threads): the CPU time each thread attached at the last
   * evaluation, or that attached since, had then. Two open-addressing
   * tables keyed by tid (0: free), the next one built from the current one
   * at each evaluation, so that threads gone are dropped. */
  struct cpu_base {
    int tid;
    uint64_t ns;
  } * base, *base_next;
  unsigned base_mask; /* size - 1, a power of two >= 2 x nslots */
  unsigned base_n;    /* entries in base: at most nslots (attach adds no more) */
  uint64_t win;       /* windows evaluated */
  uint64_t last_eval; /* when the counters were last read (a window's end) */
  /* a window too small to judge, carried over; pend_cpu is the CPU time of
   * the threads that ran transactions, UINT64_MAX when some could not be
   * read (then the window is judged without it) */
  uint64_t pend_c, pend_u, pend_a, pend_ns, pend_cpu, pend_idle;
  unsigned registered; /* descriptors initialised and not finished */
  bool evaluated;      /* a window has been judged */
  bool over;           /* regime: more threads than CPUs */
  unsigned under_streak;
  bool longtx;              /* transactions are long or non-deterministic */
  bool upd_heavy;           /* long ones: most commits are updates (os_prio the default) */
  bool cpus_ours;           /* our threads keep most of the CPUs busy (OURS_ENTER, OURS_LEAVE) */
  sstm__admit_judge_t gate; /* the admission gate's decision (sstm__admit_decide) */
  /* The gate's idle CPUs (gate_idle_allows): the CPUs' idle time at the
   * last evaluation (idle_prev, 0: none), what the windows of the gate
   * admitting added up since the last verdict, the last verdict's share,
   * and the windows the gate stays off (and the last such hold). */
  uint64_t idle_prev, gi_idle, gi_ns, gi_c;
  unsigned idle_ncpu, gi_win;
  int gi_phase;         /* GI_JUDGE, GI_TRIAL (the gate off), GI_HOLD (as decided) */
  unsigned gi_hold;     /* GI_HOLD: windows left */
  bool gi_hold_on;      /* GI_HOLD: the gate admits */
  unsigned gi_off_len;  /* the next hold with the gate off (doubling while it wins) */
  double gate_idle;     /* the last verdict's idle share (< 0: none yet) */
  double gi_on, gi_off; /* commit rates with the gate and without, at the last trial */
  double test_idle;     /* sstm__adaptive_feed_idle: the share fed, < 0: none */
  double nondet;        /* share of compared retries that took another path */
  unsigned len_streak;
  int probe_pos;          /* next probe window, -1: not probing */
  int probe_a, probe_b;   /* the regime's challenger and default */
  unsigned probe_threads; /* threads when the last probe started */
  char regime[256];       /* what the last window showed */
  unsigned probe_n[NSUB]; /* windows of each policy in the current probe */
  /* The evidence of the regime's probes, per policy: the sums of the
   * commit rates of its probe windows, of their squares, and of the
   * windows' weights, all weighted down by EVIDENCE_DECAY at each probe
   * start and cleared with the regime. */
  struct evidence {
    double cps, sq, n;
  } ev[NSUB];
  unsigned hold;             /* windows before the next probe */
  unsigned hold_len;         /* the hold after the last probe */
  int last_pick;             /* that probe's choice, -1: none in this regime */
  unsigned yield_bad;        /* consecutive windows of yield not serialising */
  char reason[384];          /* why `cur` was chosen */
  uint64_t slice_ns;         /* the time slice transaction length is judged against */
  uint64_t default_slice_ns; /* the kernel's default (set_slice) */
  double long_ns;            /* slice_ns / LONG_TX_DIV */
} G = {.lock = PTHREAD_MUTEX_INITIALIZER};

#define RLX memory_order_relaxed

static sstm_cm_ctx_t sub_ctx(sstm_cm_ctx_t *ctx, int i) {
  return sstm__cm_part_ctx(ctx, sub_off[i]);
}

/* The admission gate's part of a thread's state (admit.c). */
static sstm_cm_ctx_t gate_ctx(sstm_cm_ctx_t *ctx) { return sstm__cm_part_ctx(ctx, gate_off); }

/* Under G.lock: the last verdict no longer says anything; the next clear
 * one starts the hold sequence again. */
static void verdict_forget(void) {
  G.hold_len = HOLD_WINDOWS;
  G.last_pick = -1;
}

enum { GI_JUDGE, GI_TRIAL, GI_HOLD };

/* Under G.lock: the gate's idle evidence and hold go with its regime. */
static void gate_idle_reset(void) {
  G.gi_idle = G.gi_ns = G.gi_c = 0;
  G.gi_win = G.gi_hold = 0;
  G.gi_phase = GI_JUDGE;
  G.gi_hold_on = true;
  G.gi_off_len = GATE_IDLE_HOLD;
  G.gate_idle = G.gi_on = G.gi_off = -1.0;
}

static int adaptive_init(const sstm_config_t *cfg) {
  own_size = sstm__cm_parts_layout(sizeof(adaptive_state_t), subs, NSUB, sub_off);
  gate_off = own_size; /* 16-byte aligned */
  own_size += (sstm__admit_gate_state_size() + 15) & ~(size_t)15;
  for (int i = 0; i < NSUB; i++) {
    if (subs[i]->init) {
      int rc = subs[i]->init(cfg);
      if (rc) return rc;
    }
  }
  int grc = sstm__admit_gate_init(cfg); /* off, and driven by decide() */
  if (grc) return grc;
  if (own_size > ADAPTIVE_STATE_MAX) {
    sstm__set_error("adaptive: sub-policy state too large (%zu > %d)", own_size,
                    ADAPTIVE_STATE_MAX);
    return SSTM_ELIMIT;
  }
  unsigned n = cfg->max_threads ? cfg->max_threads : 1;
  unsigned nb = 2;
  while (nb < 2 * n)
    nb *= 2;
  uint64_t *arr = calloc(4 * (size_t)n, sizeof *arr);
  struct cpu_base *bases = calloc(2 * (size_t)nb, sizeof *bases);
  if (arr == NULL || bases == NULL) {
    free(arr);
    free(bases);
    sstm__set_error("adaptive: out of memory for %u thread slots", n);
    return SSTM_ENOMEM;
  }
  uint64_t slice = sstm__sched_slice_ns(), default_slice = sstm__sched_default_slice_ns();
  pthread_mutex_lock(&G.lock);
  G.slice_ns = slice ? slice : DEFAULT_SLICE_NS;
  G.default_slice_ns = default_slice;
  G.long_ns = (double)G.slice_ns / LONG_TX_DIV;
  G.ncpu = sstm__cpus_allowed();
  G.nslots = n;
  G.seen_c = arr;
  G.seen_a = arr + n;
  G.last_win = arr + 2 * (size_t)n;
  G.seen_u = arr + 3 * (size_t)n;
  G.base = bases;
  G.base_next = bases + nb;
  G.base_mask = nb - 1;
  G.base_n = 0;
  G.win = 1;
  G.pend_c = G.pend_u = G.pend_a = G.pend_ns = G.pend_cpu = G.pend_idle = 0;
  G.registered = 0;
  G.evaluated = G.over = G.longtx = G.upd_heavy = G.cpus_ours = false;
  G.gate = (sstm__admit_judge_t){.sticky = true};
  G.idle_prev = 0;
  G.test_idle = -1.0;
  gate_idle_reset();
  G.nondet = 0.0;
  G.under_streak = G.len_streak = G.hold = G.yield_bad = 0;
  G.probe_pos = -1;
  G.probe_a = G.probe_b = -1;
  verdict_forget();
  snprintf(G.reason, sizeof G.reason, "start");
  G.last_eval = sstm__now_ns();
  pthread_mutex_unlock(&G.lock);
  G.own_slice = sstm__cm_selected() == &sstm__cm_adaptive;
  atomic_store_explicit(&G.cur, SUB_SER_KILL, RLX);
  atomic_store_explicit(&G.slice_want, 0, RLX);
  atomic_store_explicit(&G.slice_failed, false, RLX);
  atomic_store_explicit(&G.gate_want, false, RLX);
  atomic_store_explicit(&G.window_start, sstm__now_ns(), RLX);
  atomic_store_explicit(&G.window_ns, WINDOW_NS, RLX);
  atomic_store_explicit(&G.compared, 0, RLX);
  atomic_store_explicit(&G.differed, 0, RLX);
  return 0;
}

static void adaptive_fini(void) {
  for (int i = 0; i < NSUB; i++)
    if (subs[i]->fini) subs[i]->fini();
  sstm__admit_gate_fini();
  pthread_mutex_lock(&G.lock);
  free(G.seen_c);
  free(G.base < G.base_next ? G.base : G.base_next);
  G.seen_c = G.seen_a = G.seen_u = G.last_win = NULL;
  G.base = G.base_next = NULL;
  G.nslots = 0;
  pthread_mutex_unlock(&G.lock);
}

static const char *gate_detail(void);

/* The line's numbers are clamped to ranges that no run reaches (10^10
 * commits per second, 1000 s of CPU time per commit, 99999 threads or
 * CPUs, 9999 aborts per commit; shares to [0, 1]), so that each has a
 * bounded width and the whole line a longest form, LONGEST_LINE: the
 * state table's policy field holds it whole, with the part +ext appends
 * (the assertion below). A line longer than the field would be cut there,
 * and sstm-top would show it ending in "...". */
#define SHOW_RATE 9999999999.0 /* commits per second, "%.0f" */
#define SHOW_US 999999999.0    /* microseconds, "%.0f" and "%.2f" */
#define SHOW_N 99999u          /* threads and CPUs, "%u"; busy CPUs, "%.1f" */
#define SHOW_APC 9999.0        /* aborts per commit, "%.2f" */
/* x within [0, max]; NaN shows as 0. */
static double shown(double x, double max) { return x > max ? max : x >= 0 ? x : 0; }
static unsigned shown_n(unsigned n) { return n > SHOW_N ? SHOW_N : n; }

/* The longest line, piece by piece: each format of the reason and of
 * adaptive_describe at its widest (the clamps above, the longest
 * sub-policy name, the widest word where there is a choice). The windows
 * (160 ms at most) and slices (OVER_SLICE_NS, EXT_SLICE_NS) shown in ms
 * have three digits. tests/internal/adaptive_decide.c drives every number
 * past its clamp and checks each line against this length. */
#define LONGEST_NAME "ser-block"
#define LONGEST_GATE " gate-idle=1.00 with=9999999999/s without=9999999999/s"
#define LONGEST_SEEN "under threads=99999 busy=99999.0/99999"
#define LONGEST_SLICE " slice=100ms"
#define LONGEST_LONG                                                                               \
  LONGEST_SEEN " nondet-tx=999999999us nondet=1.00 upd=1.00" LONGEST_SLICE " window=160ms"
#define LONGEST_SHORT LONGEST_SEEN " short-tx=999999999.00us nondet=1.00" LONGEST_SLICE " gate-off"
#define LONGEST_START "start threads=99999<=cpus=99999"
#define LONGEST_VERDICT                                                                            \
  " probe(early) " LONGEST_NAME "=9999999999/s " LONGEST_NAME "=9999999999/s t=-99.0"
#define LONGEST_YIELD " yield-aborts/commit=9999.00"
#define LONGEST_LINE                                                                               \
  "current=" LONGEST_NAME " gate=off" LONGEST_GATE                                                 \
  " long>999999999us reason=" LONGEST_LONG LONGEST_VERDICT
_Static_assert(sizeof LONGEST_SHORT <= sizeof LONGEST_LONG &&
                   sizeof LONGEST_START <= sizeof LONGEST_LONG &&
                   sizeof LONGEST_YIELD <= sizeof LONGEST_VERDICT &&
                   sizeof " probing" <= sizeof LONGEST_VERDICT,
               "LONGEST_LINE takes the longest regime and the longest ending");
_Static_assert(OVER_SLICE_NS < 1000000000ull && EXT_SLICE_NS < 1000000000ull &&
                   WINDOW_NS * WINDOW_MAX_SCALE < 1000000000ull,
               "the slices and windows shown have at most three digits of ms");
_Static_assert(sizeof LONGEST_LINE - 1 + sizeof SSTM__CM_EXT_LONGEST - 1 <
                   sizeof(((sstm_stt_header_t *)0)->cm_info),
               "adaptive's longest line, and adaptive+ext's, fit the state table's field");

static int adaptive_describe(char *buf, size_t len) {
  pthread_mutex_lock(&G.lock);
  int n = snprintf(buf, len, "current=%s gate=%s%s long>%.0fus reason=%s",
                   subs[atomic_load_explicit(&G.cur, RLX)]->name,
                   atomic_load_explicit(&G.gate_want, RLX) ? "on" : "off", gate_detail(),
                   shown(G.long_ns / 1e3, SHOW_US), G.reason);
  pthread_mutex_unlock(&G.lock);
  return n;
}

/* Under G.lock. The reason is updated whenever it is given, the switch
 * counted only when the choice changes. */
static void choose(sstm_cm_ctx_t *ctx, int c) {
  if (atomic_load_explicit(&G.cur, RLX) == c) return;
  atomic_store_explicit(&G.cur, c, RLX);
  if (ctx) sstm_cm_count(ctx, A_SWITCHES, 1);
}

/* The slice the threads are to take (0: their own), unless the kernel
 * refused one before. */
static void want_slice(uint64_t ns) {
  if (atomic_load_explicit(&G.slice_failed, RLX)) ns = 0;
  if (atomic_load_explicit(&G.slice_want, RLX) != ns) atomic_store_explicit(&G.slice_want, ns, RLX);
}

/* Under G.lock: whether the threads are to run the admission gate; the
 * gate itself turns on or off at once (sleepers are woken when it turns
 * off), each thread's admission hook on at its next abort, off at its
 * next begin. */
static void gate_want(bool on) {
  if (atomic_load_explicit(&G.gate_want, RLX) == on) return;
  atomic_store_explicit(&G.gate_want, on, RLX);
  sstm__admit_drive(on);
}

static int probe_sub(int pos) { return probe_challenger[pos] ? G.probe_a : G.probe_b; }

/* Under G.lock: policy i's mean rate in the evidence (0 without any). */
static double ev_mean(int i) { return G.ev[i].n > 0 ? G.ev[i].cps / G.ev[i].n : 0; }

/* The square root of x > 0 by Newton's method (the library does not link
 * libm); once per probe window. */
static double root(double x) {
  double r = x > 1 ? x : 1;
  for (int i = 0; i < 200; i++) {
    double n = 0.5 * (r + x / r);
    if (n >= r) break; /* decreasing from above until it settles */
    r = n;
  }
  return r;
}

/* Under G.lock: Welch's t of policy a's mean rate over policy b's, from the
 * weighted evidence; 0 (nothing significant) while either has under 1.5
 * windows of weight, and +-1e9 when neither rate varied (a difference
 * without noise). */
static double ev_t(int a, int b) {
  double na = G.ev[a].n, nb = G.ev[b].n;
  if (na < 1.5 || nb < 1.5) return 0;
  double ma = ev_mean(a), mb = ev_mean(b);
  double va = (G.ev[a].sq / na - ma * ma) * na / (na - 1);
  double vb = (G.ev[b].sq / nb - mb * mb) * nb / (nb - 1);
  double se2 = (va > 0 ? va : 0) / na + (vb > 0 ? vb : 0) / nb;
  if (se2 <= 0) return ma > mb ? 1e9 : ma < mb ? -1e9 : 0;
  return (ma - mb) / root(se2);
}

/* Under G.lock: one probe window has ended under the current choice. */
static void probe_step(sstm_cm_ctx_t *ctx, double cps) {
  int cur = atomic_load_explicit(&G.cur, RLX);
  G.probe_n[cur]++;
  G.ev[cur].cps += cps;
  G.ev[cur].sq += cps * cps;
  G.ev[cur].n += 1.0;
  /* A gap of 1.5x, significant at t >= 3, ends the probe: the remaining
   * windows would mostly measure the loser (on sb7's read-write and
   * write-dominated mixes ser-block can be far behind os_prio, and with
   * 160 ms windows a full probe spends half a second on it). It takes two
   * windows of each policy in the first probe of a regime (one window has
   * no variance, and a first pair of sb7 windows can show a large gap
   * either way), and one each later, with the earlier probes' evidence.
   * Only the challenger wins early. A probe starts from the held default,
   * so the challenger's first window is the one after the switch and can
   * only look worse than it is; under load that once made ser-block win
   * early at 64 threads and hold the rest of the run
   * (docs/benchmarks.md, "Figures behind the design"). The default has to
   * win the whole probe. */
  bool early = false;
  if (G.probe_pos >= 1 && G.probe_n[G.probe_a] && G.probe_n[G.probe_b])
    early = ev_mean(G.probe_a) >= ev_mean(G.probe_b) * EARLY_MARGIN &&
            ev_t(G.probe_a, G.probe_b) >= EARLY_T;
  if (++G.probe_pos < PROBE_LEN && !early) {
    snprintf(G.reason, sizeof G.reason, "%s probing", G.regime);
    choose(ctx, probe_sub(G.probe_pos));
    return;
  }
  int a = G.probe_a, b = G.probe_b;
  double ya = ev_mean(a), yb = ev_mean(b), t = ev_t(a, b);
  snprintf(G.reason, sizeof G.reason, "%s probe%s %s=%.0f/s %s=%.0f/s t=%.1f", G.regime,
           early ? "(early)" : "", subs[a]->name, shown(ya, SHOW_RATE), subs[b]->name,
           shown(yb, SHOW_RATE),
           t > 99    ? 99
           : t < -99 ? -99
                     : t);
  /* Without a significant lead the default stays: the challenger ahead by
   * chance is what a probe of noisy windows mostly finds (on sb7's
   * read-dominated mix an adaptive without this rule held the slower
   * os_prio for much of the run: docs/benchmarks.md, "Figures behind the
   * design"). */
  bool significant = t >= SIGNIFICANT_T || t <= -SIGNIFICANT_T;
  int pick = ya > yb * PROBE_MARGIN && t >= SIGNIFICANT_T ? a : b;
  /* Hysteresis over time. A clear verdict is checked again soon (a probe's
   * windows are noisy: sb7's first probe at 64 threads can favour
   * ser-block, which then commits far less than os_prio for the whole hold);
   * each clear verdict that confirms the last doubles the hold (probing
   * the loser costs most where the choice is clearest); a close one, or
   * one without a significant lead, keeps the fixed hold. */
  double hi = ya > yb ? ya : yb, lo = ya > yb ? yb : ya;
  bool clear = hi >= lo * CLEAR_MARGIN && significant;
  if (!clear)
    G.hold_len = HOLD_WINDOWS;
  else if (pick == G.last_pick)
    G.hold_len = G.hold_len * 2 > HOLD_MAX ? HOLD_MAX : G.hold_len * 2;
  else
    G.hold_len = HOLD_FIRST;
  G.last_pick = clear ? pick : -1;
  G.probe_pos = -1;
  G.hold = G.hold_len;
  G.yield_bad = 0;
  choose(ctx, pick);
}

/* Under G.lock: the regime changed; its next probe starts afresh, without
 * the evidence of the last regime's. */
static void regime_reset(void) {
  memset(G.ev, 0, sizeof G.ev);
  G.probe_pos = -1;
  G.hold = 0;
  verdict_forget();
}

static void probe_start(sstm_cm_ctx_t *ctx) {
  G.probe_pos = 0;
  memset(G.probe_n, 0, sizeof G.probe_n);
  for (int i = 0; i < NSUB; i++) { /* the earlier probes count less */
    G.ev[i].cps *= EVIDENCE_DECAY;
    G.ev[i].sq *= EVIDENCE_DECAY;
    G.ev[i].n *= EVIDENCE_DECAY;
  }
  snprintf(G.reason, sizeof G.reason, "%s probing", G.regime);
  choose(ctx, probe_sub(0));
}

/* Under G.lock: a regime whose choice is the better of challenger `a` and
 * default `b`, found by a probe and held for HOLD_WINDOWS windows. A probe
 * or a hold whose thread count has since doubled or halved is void: the
 * windows of a probe must see the same threads (a program's first windows
 * see its threads still starting: sb7 at 64 threads once judged ser-block
 * ahead from windows at 4, 12 and 64 threads, and held it for the whole
 * run, far below os_prio's rate). */
static void probe_regime(sstm_cm_ctx_t *ctx, double cps, int a, int b, unsigned threads) {
  if (G.probe_a != a || G.probe_b != b) { /* another regime: probe anew */
    G.probe_a = a;
    G.probe_b = b;
    regime_reset();
  }
  if ((G.probe_pos >= 0 || G.hold > 0) &&
      (threads > 2 * G.probe_threads || 2 * threads < G.probe_threads))
    regime_reset();
  if (G.probe_pos < 0 && G.hold == 0) G.probe_threads = threads;
  if (G.probe_pos >= 0) {
    probe_step(ctx, cps);
    return;
  }
  if (G.hold == 0) {
    probe_start(ctx);
    return;
  }
  G.hold--;
  int cur = atomic_load_explicit(&G.cur, RLX);
  if (cur != a && cur != b) probe_start(ctx); /* held a choice of another regime */
}

/* The slice wanted, as the reason shows it: "" (none), " slice=ext"
 * under adaptive+ext (whose ext owns the slice: adaptive_abort), else its
 * length. A static buffer: under G.lock. */
static const char *slice_note(void) {
  static char buf[32];
  uint64_t ns = atomic_load_explicit(&G.slice_want, RLX);
  if (ns == 0) return "";
  if (!G.own_slice) return " slice=ext";
  snprintf(buf, sizeof buf, " slice=%ums", (unsigned)(ns / 1000000));
  return buf;
}

/* Under G.lock, in the gate's regime (short transactions, more threads
 * than CPUs, conflicts frequent): whether the gate admits in the next
 * window, from this one's commits and the CPUs' idle time `idle_ns` in its
 * `ns` (UINT64_MAX: unknown). With as many places as CPUs the gate keeps
 * about as many threads runnable as there are CPUs, and the kernel often
 * leaves one of them queued behind another on one CPU while the other CPU
 * idles, up to a scheduler tick: a woken successor placed on the busy CPU,
 * a holder preempted there (docs/benchmarks-history.md, "The gate's idle
 * CPUs").
 * Without the gate every CPU has threads of ours to run. So:
 *   GI_JUDGE  the gate admits; over GATE_IDLE_WINDOWS windows its idle
 *             time and commit rate are summed. Under GATE_IDLE_MAX of the
 *             CPUs' time idle (a host whose other programs take what the
 *             gate leaves, too) it goes on admitting; else
 *   GI_TRIAL  it stops for as many windows (the threads' hooks go off at
 *             their next begin: they run as without the gate), and the
 *             two commit rates are compared, both in a steady state (the
 *             gate had reached the threads that abort; without it, every
 *             thread is reached at once);
 *   GI_HOLD   the faster is held: without the gate only if more than
 *             PROBE_MARGIN ahead, for GATE_IDLE_HOLD windows doubled at
 *             each trial in a row it wins (up to HOLD_MAX); with it for
 *             GATE_IDLE_HOLD. Then GI_JUDGE again: the host's load changes.
 */
static bool gate_idle_allows(uint64_t ns, uint64_t commits, uint64_t idle_ns) {
  if (G.gi_phase == GI_HOLD) {
    if (G.gi_hold > 0 && --G.gi_hold > 0) return G.gi_hold_on;
    G.gi_phase = GI_JUDGE; /* the window after the hold admits and is judged */
    return true;
  }
  bool trial = G.gi_phase == GI_TRIAL;
  /* A judged window ran with the gate admitting if it was wanted at its
   * start (a gate that just turned on counts from its next window). */
  if (!trial && !atomic_load_explicit(&G.gate_want, RLX)) return true;
  if (!trial && idle_ns == UINT64_MAX) return true;
  if (!trial) G.gi_idle += idle_ns;
  G.gi_ns += ns;
  G.gi_c += commits;
  if (++G.gi_win < GATE_IDLE_WINDOWS) return !trial;
  double rate = G.gi_ns ? (double)G.gi_c * 1e9 / (double)G.gi_ns : 0.0;
  double idle = G.gi_ns ? (double)G.gi_idle / ((double)G.gi_ns * G.ncpu) : 0.0;
  G.gi_idle = G.gi_ns = G.gi_c = 0;
  G.gi_win = 0;
  if (!trial) {
    G.gate_idle = idle;
    G.gi_on = rate;
    if (idle < GATE_IDLE_MAX) return true;
    G.gi_phase = GI_TRIAL;
    return false;
  }
  G.gi_off = rate;
  G.gi_phase = GI_HOLD;
  G.gi_hold_on = !(G.gi_off > G.gi_on * PROBE_MARGIN);
  if (G.gi_hold_on) {
    G.gi_hold = GATE_IDLE_HOLD;
    G.gi_off_len = GATE_IDLE_HOLD;
  } else {
    G.gi_hold = G.gi_off_len;
    G.gi_off_len = G.gi_off_len * 2 > HOLD_MAX ? HOLD_MAX : G.gi_off_len * 2;
  }
  return G.gi_hold_on;
}

/* Under G.lock: the gate's idle verdicts, as sstm_describe shows them
 * after "gate=": "" before the first, else the last verdict's
 * idle share and, after a trial, the two commit rates. */
static const char *gate_detail(void) {
  static char buf[80];
  buf[0] = '\0';
  if (G.gate_idle < 0) return buf;
  int n = snprintf(buf, sizeof buf, " gate-idle=%.2f", shown(G.gate_idle, 1));
  if (G.gi_off >= 0 && n > 0 && (size_t)n < sizeof buf)
    snprintf(buf + n, sizeof buf - (size_t)n, " with=%.0f/s without=%.0f/s",
             shown(G.gi_on, SHOW_RATE), shown(G.gi_off, SHOW_RATE));
  return buf;
}

/* Under G.lock: the gate, as the regime shows it: "" (not its regime),
 * " gate" (on), " gate-off" (off for its idle CPUs: on trial or held).
 * gate_detail is shown once, after "gate=" in adaptive_describe: repeated
 * here it made the line longer than the state table's field. */
static const char *gate_note(bool regime, bool on) {
  if (!regime) return "";
  return on ? " gate" : " gate-off";
}

/* Under G.lock: fold one window into the decision. cpu_ns: the CPU time
 * the threads that ran transactions used in it, or UINT64_MAX when it could
 * not be read (then they are taken to have kept min(threads, CPUs) busy). */
static void decide(sstm_cm_ctx_t *ctx, uint64_t ns, uint64_t commits, uint64_t updates,
                   uint64_t aborts, unsigned threads, uint64_t cpu_ns, uint64_t idle_ns) {
  double nondet = G.nondet;
  bool first = !G.evaluated, was_over = G.over;
  G.evaluated = true;
  unsigned busy = threads == 0 ? 1 : threads < G.ncpu ? threads : G.ncpu;
  double cpu = cpu_ns == UINT64_MAX ? (double)ns * busy : (double)cpu_ns;
  /* at most every CPU for the whole window (a baseline read late) */
  if (cpu > (double)ns * G.ncpu) cpu = (double)ns * G.ncpu;
  /* Are the CPUs ours (the long slice of short transactions needs it)? A
   * band; unknown CPU time keeps the last judgement. */
  if (cpu_ns != UINT64_MAX) {
    double share = cpu / ((double)ns * G.ncpu);
    G.cpus_ours = G.cpus_ours ? share >= OURS_LEAVE : share >= OURS_ENTER;
  }
  if (threads > G.ncpu) {
    G.over = true;
    G.under_streak = 0;
  } else if (first || (G.over && ++G.under_streak >= UNDER_WINDOWS)) {
    G.over = false;
  }
  if (G.over != was_over) /* a probe's windows belong to one regime */
    regime_reset();
  double len = commits ? cpu / (double)commits : 1e12;
  double cps = (double)commits * 1e9 / (double)ns;
  double apc = (double)aborts / (double)(commits ? commits : 1);
  /* A band, not a threshold: a workload of mixed lengths (sb7's short
   * operations and long traversals) hovers around any one value. */
  bool long_now = G.longtx ? len > G.long_ns / 2 || nondet > NONDET_SHARE / 2
                           : len > G.long_ns || nondet > NONDET_SHARE;
  if (first) {
    G.longtx = long_now;
  } else if (long_now != G.longtx) {
    if (++G.len_streak >= LENGTH_WINDOWS) {
      G.longtx = long_now;
      G.len_streak = 0;
      regime_reset();
    }
  } else {
    G.len_streak = 0;
  }
  /* Long transactions, many more threads than CPUs: a 20 ms window sees
   * only the threads the scheduler ran in it (a round over 64 threads on 2
   * CPUs takes longer), and what a policy does to the others (sleepers,
   * convoys) shows over rounds, not within one window: on sb7's
   * write-dominated mix at 64 threads, probes of 20 ms windows could not
   * tell ser-block and os_prio apart while whole runs differed severalfold
   * (docs/benchmarks.md, "Figures behind the design"). So windows grow by
   * 20 ms per 4 threads per CPU, up to WINDOW_MAX_SCALE. */
  unsigned scale = G.longtx && G.over ? threads / (4 * G.ncpu) : 1;
  scale = scale < 1 ? 1 : scale > WINDOW_MAX_SCALE ? WINDOW_MAX_SCALE : scale;
  atomic_store_explicit(&G.window_ns, WINDOW_NS * scale, RLX);
  /* The regime (over: more threads than CPUs, or still leaving it), then
   * the window's own figures: threads that ran transactions, the CPUs they
   * kept busy on average. */
  char seen[64];
  snprintf(seen, sizeof seen, "%s threads=%u busy=%.1f/%u", G.over ? "over" : "under",
           shown_n(threads), shown(cpu / (double)ns, SHOW_N), shown_n(G.ncpu));
  /* The admission gate (cm/admit.c, admit-slice's): short transactions,
   * more threads than CPUs, and conflicts frequent (sstm__admit_decide:
   * at least ADMIT_ON_APC aborts per commit; calm windows keep it on,
   * since under the gate conflicts are those of as many threads as CPUs).
   * It leaves with the regime. */
  bool gate = G.over && !G.longtx && sstm__admit_decide(&G.gate, commits, aborts, threads, G.ncpu);
  bool gate_on = gate && gate_idle_allows(ns, commits, idle_ns);
  if (!gate) {
    G.gate = (sstm__admit_judge_t){.sticky = true};
    gate_idle_reset();
  }
  gate_want(gate_on);
  if (G.longtx) {
    want_slice(EXT_SLICE_NS);
    const char *slice = slice_note();
    /* Which policy is the default: ser-block while most commits are
     * read-only, os_prio once most are updates (a band: enter above
     * UPD_ENTER, leave below UPD_LEAVE). */
    double upd = commits ? (double)updates / (double)commits : 0.0;
    G.upd_heavy = G.upd_heavy ? upd >= UPD_LEAVE : upd > UPD_ENTER;
    snprintf(G.regime, sizeof G.regime, "%s %s=%.0fus nondet=%.2f upd=%.2f%s window=%ums", seen,
             nondet > NONDET_SHARE ? "nondet-tx" : "long-tx", shown(len / 1e3, SHOW_US),
             shown(nondet, 1), shown(upd, 1), slice, (unsigned)(WINDOW_NS * scale / 1000000));
    if (G.upd_heavy)
      probe_regime(ctx, cps, SUB_SER_BLOCK, SUB_OS_PRIO, threads);
    else
      probe_regime(ctx, cps, SUB_OS_PRIO, SUB_SER_BLOCK, threads);
    return;
  }
  /* Short transactions: the long slice only while oversubscribed on CPUs
   * that our threads have to themselves (the file comment). */
  want_slice(G.over && G.cpus_ours ? OVER_SLICE_NS : 0);
  snprintf(G.regime, sizeof G.regime, "%s short-tx=%.2fus nondet=%.2f%s%s", seen,
           shown(len / 1e3, SHOW_US), shown(nondet, 1), slice_note(), gate_note(gate, gate_on));
  if (!G.over) {
    G.probe_a = G.probe_b = -1;
    snprintf(G.reason, sizeof G.reason, "%s", G.regime);
    choose(ctx, SUB_SER_KILL);
    return;
  }
  probe_regime(ctx, cps, SUB_YIELD, SUB_SER_BLOCK, threads);
  if (G.probe_pos < 0 && atomic_load_explicit(&G.cur, RLX) == SUB_YIELD) {
    /* a held yield that does not serialise gives way to ser-block */
    G.yield_bad = apc > YIELD_MAX_APC ? G.yield_bad + 1 : 0;
    if (G.yield_bad >= 2) {
      snprintf(G.reason, sizeof G.reason, "%s yield-aborts/commit=%.2f", G.regime,
               shown(apc, SHOW_APC));
      choose(ctx, SUB_SER_BLOCK);
      verdict_forget();
    }
  }
}

/* Under G.lock: the baseline of thread `tid` in table t (NULL if none),
 * or with `add`, the free entry where it goes (the table has room: at most
 * nslots threads are attached at once, in 2 x nslots entries). */
static struct cpu_base *base_find(struct cpu_base *t, int tid, bool add) {
  for (unsigned h = ((unsigned)tid * 2654435761u) & G.base_mask;; h = (h + 1) & G.base_mask) {
    if (t[h].tid == tid) return &t[h];
    if (t[h].tid == 0) return add ? &t[h] : NULL;
  }
}

/* Under G.lock: the counters of every thread since the last evaluation. The
 * owners write them with relaxed stores (sstm__ctr_add); a value read a
 * moment early is counted in the next window. A counter that went down was
 * reset (sstm_stats_reset, a descriptor's new thread): its whole value is
 * new. The next window starts from them; the CPU time of the threads that
 * ran transactions in this one is added to *cpu_ns (one system call per
 * attached thread and window; UINT64_MAX when none could be read), and the
 * descriptors that ran transactions are returned. */
static unsigned scan_counts(uint64_t *commits, uint64_t *updates, uint64_t *aborts,
                            uint64_t *cpu_ns) {
  unsigned hw = sstm__cm_slots();
  if (hw > G.nslots) hw = G.nslots;
  unsigned active = 0, read = 0, next_n = 0;
  for (unsigned i = 0; i < hw; i++) {
    sstm_cm_counts_t k;
    if (!sstm__cm_counts(i, &k)) continue;
    uint64_t u = k.updates, c = k.commits, a = k.aborts;
    uint64_t dc = c >= G.seen_c[i] ? c - G.seen_c[i] : c;
    uint64_t da = a >= G.seen_a[i] ? a - G.seen_a[i] : a;
    uint64_t du = u >= G.seen_u[i] ? u - G.seen_u[i] : u;
    *commits += dc;
    *updates += du < dc ? du : dc;
    *aborts += da;
    G.seen_c[i] = c;
    G.seen_a[i] = a;
    G.seen_u[i] = u;
    if (dc + da) G.last_win[i] = G.win;
    bool is_active = G.last_win[i] && G.win - G.last_win[i] < ACTIVE_WINDOWS;
    active += is_active;
    /* The thread each attached descriptor runs on: its CPU time since its
     * baseline (the last evaluation, or its attach if later) is summed when
     * the descriptor ran transactions, and becomes its next baseline. A
     * detached descriptor (a suspended transaction) has no thread: the one
     * it last ran on is charged through the descriptor it runs now, if any.
     * The thread attached is 0 once the descriptor is released (its
     * counters, and so its commits, went with it). */
    int tid = k.tid;
    if (!k.attached || tid <= 0) continue;
    if (base_find(G.base_next, tid, false)) continue; /* read already */
    uint64_t t;
    if (!sstm__thread_cpu_ns(tid, &t)) continue; /* ended since */
    const struct cpu_base *b = base_find(G.base, tid, false);
    if (is_active && b && t >= b->ns) {
      *cpu_ns += t - b->ns;
      read++;
    }
    *base_find(G.base_next, tid, true) = (struct cpu_base){tid, t};
    next_n++;
  }
  /* The next baselines are this evaluation's readings. */
  struct cpu_base *old = G.base;
  G.base = G.base_next;
  G.base_next = old;
  G.base_n = next_n;
  memset(G.base_next, 0, ((size_t)G.base_mask + 1) * sizeof *G.base_next);
  /* No thread that ran transactions could be read (a thread whose baseline
   * is new counts 0 for its first window): the CPU time is unknown. */
  if (active > 0 && read == 0) *cpu_ns = UINT64_MAX;
  return active;
}

/* Under G.lock: the CPUs' idle time since the last evaluation (UINT64_MAX:
 * unknown), read only in the regime where the gate may run (a file read
 * per window, by the evaluator; elsewhere the next reading is the
 * baseline). */
static uint64_t idle_since(void) {
  uint64_t v;
  unsigned n;
  if (!G.over || G.longtx || !sstm__cpus_idle_ns(&v, &n)) {
    G.idle_prev = 0;
    return UINT64_MAX;
  }
  uint64_t d = G.idle_prev && n == G.idle_ncpu && v >= G.idle_prev ? v - G.idle_prev : UINT64_MAX;
  G.idle_prev = v;
  G.idle_ncpu = n;
  return d;
}

/* The thread that closes a window (CAS on its start) evaluates it. */
static void maybe_evaluate(sstm_cm_ctx_t *ctx) {
  /* start before now: read the other way round, a window closed by
   * another thread in between gives start > now, and now - start wraps to
   * a huge "window" that this thread would then judge. */
  uint64_t start = atomic_load_explicit(&G.window_start, RLX), now = sstm__now_ns();
  if (now <= start) return;
  if (now - start < atomic_load_explicit(&G.window_ns, RLX)) return;
  /* relaxed: the CAS only elects the evaluator; G.lock orders its work. */
  if (!atomic_compare_exchange_strong_explicit(&G.window_start, &start, now, RLX, RLX)) return;
  pthread_mutex_lock(&G.lock);
  bool judged = false;
  if (G.nslots) {
    uint64_t c = 0, u = 0, a = 0, cpu = 0;
    unsigned threads = scan_counts(&c, &u, &a, &cpu);
    /* The window is what the counters cover: from the last reading to
     * this one, both under G.lock. The CAS above only elects the
     * evaluator; an evaluator preempted between it and this point (common
     * with 64 threads on 2 CPUs) would otherwise count the delay's
     * commits in this window and its time in the next, and two elected
     * evaluators can take the lock in either order. */
    uint64_t t = sstm__now_ns();
    uint64_t span = t > G.last_eval ? t - G.last_eval : 0;
    G.last_eval = t;
    G.win++;
    G.pend_c += c;
    G.pend_u += u;
    G.pend_a += a;
    G.pend_ns += span;
    G.pend_cpu = cpu == UINT64_MAX || G.pend_cpu == UINT64_MAX ? UINT64_MAX : G.pend_cpu + cpu;
    uint64_t idle = idle_since();
    G.pend_idle = idle == UINT64_MAX || G.pend_idle == UINT64_MAX ? UINT64_MAX : G.pend_idle + idle;
    /* Judged with enough events, over at least half a window (a span cut
     * short by a delayed evaluator before this one is carried over). */
    if (G.pend_c + G.pend_a >= MIN_EVENTS &&
        G.pend_ns >= atomic_load_explicit(&G.window_ns, RLX) / 2) {
      /* relaxed: counts only; a retry counted a moment late falls in the
       * next judgement. Retries are rare under a serialising policy, so
       * they are gathered over as many windows as it takes to have
       * NONDET_MIN, and the last judgement holds meanwhile. */
      if (atomic_load_explicit(&G.compared, RLX) >= NONDET_MIN) {
        uint64_t dif = atomic_exchange_explicit(&G.differed, 0, RLX);
        uint64_t cmp = atomic_exchange_explicit(&G.compared, 0, RLX);
        G.nondet = cmp ? (double)(dif < cmp ? dif : cmp) / (double)cmp : 0.0;
      }
      sstm_cm_count(ctx, A_EVALUATIONS, 1);
      decide(ctx, G.pend_ns, G.pend_c, G.pend_u, G.pend_a, threads, G.pend_cpu, G.pend_idle);
      judged = true; /* the reason carries the window's figures: republish */
      G.pend_c = G.pend_u = G.pend_a = G.pend_ns = G.pend_cpu = G.pend_idle = 0;
    }
  }
  pthread_mutex_unlock(&G.lock);
  if (judged) sstm_cm_info_changed(); /* outside G.lock: it calls adaptive_describe */
}

static void adaptive_desc_init(sstm_cm_ctx_t *ctx) {
  adaptive_state_t *s = ctx->state;
  memset(s, 0, sizeof *s);
  for (int i = 0; i < NSUB; i++)
    if (subs[i]->desc_init) {
      sstm_cm_ctx_t c = sub_ctx(ctx, i);
      subs[i]->desc_init(&c);
    }
  sstm_cm_ctx_t g = gate_ctx(ctx);
  sstm__admit_gate_desc_init(&g);
  pthread_mutex_lock(&G.lock);
  G.registered++;
  if (!G.evaluated) {
    /* No window judged yet: the regime from the threads registered so far. */
    bool over = G.registered > G.ncpu;
    snprintf(G.reason, sizeof G.reason, "start threads=%u%scpus=%u", shown_n(G.registered),
             over ? ">" : "<=", shown_n(G.ncpu));
    choose(NULL, over ? SUB_SER_BLOCK : SUB_SER_KILL);
  }
  bool changed = !G.evaluated;
  pthread_mutex_unlock(&G.lock);
  if (changed) sstm_cm_info_changed();
}

/* Give the calling thread, which has the descriptor attached, the custom
 * slice ns, or (0) put back the slice it had before adaptive gave it one:
 * its own custom slice, or the default (a slice equal to the kernel's
 * default, probed at init, is taken for the default). */
static void set_slice(sstm_cm_ctx_t *ctx, adaptive_state_t *s, uint64_t ns) {
  if (ns && !s->slice_cur) {
    uint64_t prev = sstm__sched_slice_ns();
    s->slice_prev = prev == G.default_slice_ns ? 0 : prev;
  }
  if (sstm__ext_set_slice(ns ? ns : s->slice_prev)) {
    s->slice_cur = ns;
    sstm_cm_count(ctx, A_SLICE_CHANGES, 1);
  } else if (ns) {
    atomic_store_explicit(&G.slice_failed, true, RLX);
    atomic_store_explicit(&G.slice_want, 0, RLX);
  }
  /* A failed restore leaves slice_cur set: the thread still has the long
   * slice, and the next abort, detach or release tries again. */
}

/* The slice the calling thread should have now (0: its own). */
static uint64_t slice_wanted(void) {
  /* Under "adaptive+ext" the ext modifier owns the thread's slice. */
  return G.own_slice ? atomic_load_explicit(&G.slice_want, RLX) : 0;
}

/* A thread takes a descriptor: it takes the slice the regime wants, if
 * any (two system calls), and a thread without a baseline gets its CPU
 * time now, the start of the first window it is judged in (scan_counts).
 * A thread that has one (a worker attaching one descriptor after another)
 * keeps it, and pays a mutex, not a system call. */
static void adaptive_attach(sstm_cm_ctx_t *ctx) {
  adaptive_state_t *s = ctx->state;
  uint64_t want = slice_wanted();
  if (want != s->slice_cur) set_slice(ctx, s, want);
  int tid = sstm__gettid();
  pthread_mutex_lock(&G.lock);
  if (G.nslots && G.base_n < G.nslots && base_find(G.base, tid, false) == NULL) {
    uint64_t t;
    if (sstm__thread_cpu_ns(tid, &t)) {
      *base_find(G.base, tid, true) = (struct cpu_base){tid, t};
      G.base_n++;
    }
  }
  pthread_mutex_unlock(&G.lock);
}

/* The slice belongs to the thread, the state to the descriptor: a thread
 * that detaches gets its slice back, and a thread that attaches takes the
 * one wanted then (adaptive_attach; later changes at its aborts). */
static void adaptive_detach(sstm_cm_ctx_t *ctx) {
  adaptive_state_t *s = ctx->state;
  if (s->slice_cur) set_slice(ctx, s, 0);
  sstm_cm_ctx_t g = gate_ctx(ctx);
  sstm__admit_gate_leave(&g); /* the gate's place is the thread's */
}

static void adaptive_desc_fini(sstm_cm_ctx_t *ctx) {
  adaptive_state_t *s = ctx->state;
  if (s->slice_cur) set_slice(ctx, s, 0);
  sstm_cm_ctx_t g = gate_ctx(ctx);
  sstm__admit_gate_leave(&g);
  for (int i = 0; i < NSUB; i++)
    if (subs[i]->desc_fini) {
      sstm_cm_ctx_t c = sub_ctx(ctx, i);
      subs[i]->desc_fini(&c);
    }
  pthread_mutex_lock(&G.lock);
  if (G.registered) G.registered--;
  pthread_mutex_unlock(&G.lock);
}

static sstm_cm_action_t adaptive_conflict(sstm_cm_ctx_t *ctx, const sstm_conflict_t *cf,
                                          uint64_t *w) {
  int i = atomic_load_explicit(&G.cur, RLX);
  sstm_cm_ctx_t c = sub_ctx(ctx, i);
  return subs[i]->on_conflict(&c, cf, w);
}

/* Does this retry's read path differ from the previous attempt's, over the
 * prefix both executed? `retries` counts this abort, so retries > 1 means the
 * previous attempt belonged to the same transaction. A declared read-only
 * first attempt keeps no read set and is not compared. */
static void note_path(sstm_cm_ctx_t *ctx, adaptive_state_t *s, const sstm_abort_info_t *info) {
  /* The user's abort actions run before the policy and may run
   * transactions on this descriptor: its read set is then theirs, and
   * there is no path to compare. */
  const void *rs[PATH_LEN];
  uint32_t n;
  if (!sstm__cm_prev_reads(ctx, rs, PATH_LEN, &n)) {
    s->prev_n = 0;
    return;
  }
  if (ctx->retries > 1 && sstm__cm_conflict_abort(info->reason)) {
    uint32_t k = n < s->prev_n ? n : s->prev_n;
    if (k >= 1) {
      bool differs = false;
      for (uint32_t i = 0; i < k && !differs; i++)
        differs = rs[i] != s->prev_path[i];
      atomic_fetch_add_explicit(&G.compared, 1, RLX);
      if (differs) atomic_fetch_add_explicit(&G.differed, 1, RLX);
    }
  }
  for (uint32_t i = 0; i < n; i++)
    s->prev_path[i] = rs[i];
  s->prev_n = n;
}

static void gate_begin(sstm_cm_ctx_t *ctx);

/* Switch the calling thread's gate admission hook on or off (owner-only,
 * from its hooks). Off, it gives back the place it may hold: the gate is
 * off, or going off. */
static void gate_hook(sstm_cm_ctx_t *ctx, adaptive_state_t *s, bool on) {
  if (!on) {
    sstm_cm_ctx_t g = gate_ctx(ctx);
    sstm__admit_gate_leave(&g);
  }
  sstm__cm_admit_hook(ctx, on ? gate_begin : NULL);
  s->gate_hook = on;
}

/* The admission hook while the gate is wanted (sstm__cm_admit_hook): at
 * the start of every attempt, admit-slice's admission, which gives the
 * place back when its slice is over (or finds it reclaimed) and queues
 * for the next. The engine calls it only while it is on: outside the
 * gate's regime adaptive's begins cost nothing. */
static void gate_begin(sstm_cm_ctx_t *ctx) {
  adaptive_state_t *s = ctx->state;
  /* relaxed: a thread that sees the change one begin late runs one more
   * transaction as it did (the gate is a throttle, not a lock) */
  if (SSTM_UNLIKELY(!atomic_load_explicit(&G.gate_want, RLX))) {
    gate_hook(ctx, s, false);
    return;
  }
  sstm_cm_ctx_t g = gate_ctx(ctx);
  sstm__admit_gate_begin(&g);
}

static void adaptive_abort(sstm_cm_ctx_t *ctx, const sstm_abort_info_t *info) {
  maybe_evaluate(ctx);
  adaptive_state_t *s = ctx->state;
  note_path(ctx, s, info);
  uint64_t want = slice_wanted();
  if (SSTM_UNLIKELY(want != s->slice_cur)) set_slice(ctx, s, want);
  /* relaxed: a thread that sees a change one abort late runs one more
   * transaction as it did (the gate is a throttle, not a lock). Switched
   * on, the hook admits this transaction's restart, at its begin, after
   * this hook and the sub-policy's wait: nothing waits for the gate here. */
  bool gate = atomic_load_explicit(&G.gate_want, RLX);
  if (SSTM_UNLIKELY(gate && !s->gate_hook)) gate_hook(ctx, s, true);
  int i = atomic_load_explicit(&G.cur, RLX);
  /* A place is for a thread that runs transactions (docs/design/
   * admission.md (A3)). ser-block is about to put this one to sleep until
   * the winner's attempt ends; a winner without a place is not one of the
   * threads the gate runs (it lost its place inside a long transaction, or
   * began before the gate was on) and may wait for a CPU for a scheduling
   * round, so the place goes back first and the restart queues at its
   * begin: kept, it would run nothing until the winner ends, or until a
   * waiter reclaims it after its slice, and with as many places as CPUs a
   * CPU may idle meanwhile. A winner that holds a place is running or about
   * to: that wait is short, and the place is kept. */
  if (s->gate_hook && i == SUB_SER_BLOCK && info->has_other &&
      sstm__cm_conflict_abort(info->reason)) {
    sstm_cm_ctx_t g = gate_ctx(ctx);
    if (!sstm__admit_gate_peer_holds(&g, info->other.desc)) sstm__admit_gate_leave(&g);
  }
  if (subs[i]->on_abort) {
    sstm_cm_ctx_t c = sub_ctx(ctx, i);
    subs[i]->on_abort(&c, info);
  }
}

/* Test seam (tests/internal/adaptive_decide.c): judge one window as if
 * the evaluator had counted `commits` (`updates` of them update
 * commits) and `aborts` of `threads` threads
 * using `cpu_ns` of CPU time (UINT64_MAX: unknown) over `ns` on `ncpu`
 * CPUs, without the clock or the engine's counters. Returns the choice
 * after it; `reason` (may be NULL) gets the reason string. Internal: not in
 * the exported API. */
int sstm__adaptive_feed(uint64_t ns, uint64_t commits, uint64_t updates, uint64_t aborts,
                        unsigned threads, uint64_t cpu_ns, unsigned ncpu, char *reason,
                        size_t len) {
  pthread_mutex_lock(&G.lock);
  G.ncpu = ncpu;
  uint64_t idle = G.test_idle < 0 ? UINT64_MAX : (uint64_t)(G.test_idle * (double)ns * ncpu);
  decide(NULL, ns, commits, updates, aborts, threads, cpu_ns, idle);
  int cur = atomic_load_explicit(&G.cur, RLX);
  if (reason) snprintf(reason, len, "%s", G.reason);
  pthread_mutex_unlock(&G.lock);
  return cur;
}

const char *sstm__adaptive_sub_name(int i) { return i >= 0 && i < NSUB ? subs[i]->name : "?"; }

size_t sstm__adaptive_line_max(void) { return sizeof LONGEST_LINE - 1; }

uint64_t sstm__adaptive_window_ns(void) { return atomic_load_explicit(&G.window_ns, RLX); }

uint64_t sstm__adaptive_slice_want_ns(void) { return atomic_load_explicit(&G.slice_want, RLX); }

void sstm__adaptive_feed_idle(double share) {
  pthread_mutex_lock(&G.lock);
  G.test_idle = share;
  pthread_mutex_unlock(&G.lock);
}

const sstm_cm_ops_t sstm__cm_adaptive = {
    .name = "adaptive",
    .description =
        "chooses ser-kill/yield/ser-block/os_prio (and a long slice) online ([Maldonado10], "
        "Table 1)",
    .state_size = ADAPTIVE_STATE_MAX,
    .init = adaptive_init,
    .fini = adaptive_fini,
    .desc_init = adaptive_desc_init,
    .desc_fini = adaptive_desc_fini,
    .on_conflict = adaptive_conflict,
    .on_abort = adaptive_abort,
    .on_attach = adaptive_attach,
    .on_detach = adaptive_detach,
    .stat_names = {"sub_waits_yields_kills", "sub_timeouts_self_aborts", "sub_prio_changes",
                   "sub_escalations", "switches", "evaluations", "slice_changes"},
    .describe = adaptive_describe,
};
