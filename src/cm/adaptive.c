/* adaptive: chooses among suicide, backoff, yield, ser-spin, ser-block and
 * softser online, from what it observes, following paper 1's Table 1 and
 * conclusions (the paper leaves this as future work):
 *
 *   no contention (smoothed abort ratio under 2 % and no window over 50 %;
 *       left only after 100 windows under 0.1 %)           -> suicide;
 *   threads that ran in the window <= CPUs                -> ser-spin: the
 *       loser's CPU has nothing better to do (Table 1, "threads <= cores");
 *   more threads than CPUs, and
 *     retries take other paths (non-determinism > 30 %)   -> softser (the
 *       paper's best for STMBench7's non-deterministic transactions);
 *     short transactions (under a tenth of a 4 ms slice)  -> yield ("a simple
 *       yield is often sufficient" for short transactions, few updates);
 *     otherwise                                           -> ser-block.
 *
 * Observations, per window of at least 20 ms: commits and aborts (per-thread
 * counts flushed every 64 events and at each thread's first event of a
 * window), threads that ran transactions (the most over the last four
 * windows), the time per commit of each thread between flushes (the
 * transaction length, no clock read on the transaction paths), and
 * non-determinism:
 * the fraction of retries whose first 8 reads differ from those of the
 * previous attempt of the same transaction (it took another path).
 * Hysteresis: a new contention policy must win two (from suicide) or three
 * consecutive windows. The current choice and the
 * reason are in sstm_describe() ("cm-info=") and the switch count in the
 * policy counters.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cm/common.h"
#include "core/engine.h"

extern const sstm_cm_ops_t sstm__cm_suicide, sstm__cm_backoff, sstm__cm_yield, sstm__cm_ser_spin,
    sstm__cm_ser_block, sstm__cm_softser;

enum { SUB_SUICIDE, SUB_BACKOFF, SUB_YIELD, SUB_SER_SPIN, SUB_SER_BLOCK, SUB_SOFTSER, NSUB };
static const sstm_cm_ops_t *const subs[NSUB] = {&sstm__cm_suicide,  &sstm__cm_backoff,
                                                 &sstm__cm_yield,    &sstm__cm_ser_spin,
                                                 &sstm__cm_ser_block, &sstm__cm_softser};
/* Policy counters 0..3 belong to the sub-policies (waits, yields, priority
 * changes, ...), 4 and 5 to adaptive itself, 7 to an ext modifier. */
enum { A_SWITCHES = 4, A_EVALUATIONS = 5 };

#define WINDOW_NS 20000000ull
#define FLUSH_EVERY 64
#define SLICE_NS 4000000ull
#define PATH_LEN 8          /* reads compared between attempts */
#define ENTER_WINDOWS 2     /* windows a contention policy must win to enter */
#define SWITCH_WINDOWS 3    /* ... to replace another contention policy */
#define QUIET_WINDOWS 100   /* quiet windows before going back to suicide */
#define EWMA_ALPHA 0.25     /* weight of the newest window in the abort ratio */
/* state_size must be known before init: an upper bound, checked at init
 * against the sub-policies' sizes. */
#define ADAPTIVE_STATE_MAX 4096

typedef struct adaptive_state {
  uint32_t commits, aborts, events; /* since the last flush */
  uint64_t last_flush_ns;           /* when this thread last flushed */
  const void *prev_path[PATH_LEN];  /* first reads of the previous attempt */
  uint32_t prev_n;
  uint32_t nondet, compared;
  uint64_t len_sum, len_n;
  uint64_t window_seen;             /* last window this thread was counted in */
} adaptive_state_t;

static size_t sub_off[NSUB], own_size;
static long ncpu;

/* Shared decision state. `cur` is read by every hook (acquire, pairs with
 * the evaluator's release store: a thread that sees a new choice sees the
 * sub-policy's initialised state). The window counters are relaxed
 * statistics. The evaluator's own state is under `lock`: one evaluation at a
 * time, every 20 ms, off the transactions' paths. */
static struct {
  /* read on every commit: a cache line of its own, written every 20 ms */
  _Alignas(64) _Atomic int cur;
  _Atomic bool softser_used;
  _Atomic uint64_t window_id;
  /* written by flushes */
  _Alignas(64) _Atomic uint64_t window_start;
  _Atomic uint64_t commits, aborts, active, nondet, compared, len_sum, len_n;
  pthread_mutex_t lock;
  int candidate, streak, quiet; /* hysteresis (under lock) */
  double ewma;                  /* smoothed abort ratio (under lock) */
  uint64_t active_hist[4];      /* threads that ran, last windows (under lock) */
  char reason[160];             /* why `cur` was chosen (under lock) */
} G = {.lock = PTHREAD_MUTEX_INITIALIZER};

#define RLX memory_order_relaxed

static sstm_cm_ctx_t sub_ctx(sstm_cm_ctx_t *ctx, int i) {
  sstm_cm_ctx_t c = *ctx;
  c.state = (char *)ctx->state + sub_off[i];
  return c;
}

static int adaptive_init(const sstm_config_t *cfg) {
  size_t off = (sizeof(adaptive_state_t) + 15) & ~(size_t)15;
  own_size = off;
  for (int i = 0; i < NSUB; i++) {
    sub_off[i] = off;
    off += (subs[i]->state_size + 15) & ~(size_t)15;
    if (subs[i]->init) {
      int rc = subs[i]->init(cfg);
      if (rc) return rc;
    }
  }
  own_size = off;
  if (own_size > ADAPTIVE_STATE_MAX) {
    sstm__set_error("adaptive: sub-policy state too large (%zu > %d)", own_size, ADAPTIVE_STATE_MAX);
    return SSTM_ELIMIT;
  }
  ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  if (ncpu < 1) ncpu = 1;
  pthread_mutex_lock(&G.lock);
  G.candidate = SUB_SUICIDE;
  G.streak = G.quiet = 0;
  G.ewma = 0;
  memset(G.active_hist, 0, sizeof G.active_hist);
  snprintf(G.reason, sizeof G.reason, "start");
  pthread_mutex_unlock(&G.lock);
  atomic_store_explicit(&G.cur, SUB_SUICIDE, memory_order_release);
  atomic_store_explicit(&G.softser_used, false, RLX);
  atomic_store_explicit(&G.window_start, sstm__now_ns(), RLX);
  atomic_store_explicit(&G.window_id, 1, RLX);
  return 0;
}

static int adaptive_describe(char *buf, size_t len) {
  pthread_mutex_lock(&G.lock);
  int n = snprintf(buf, len, "current=%s reason=%s",
                   subs[atomic_load_explicit(&G.cur, memory_order_acquire)]->name, G.reason);
  pthread_mutex_unlock(&G.lock);
  return n;
}

/* `contended`: the smoothed abort ratio says contention management pays. */
static int choose(bool contended, double ratio, unsigned threads, double nondet, double len_ns,
                  char *why, size_t n) {
  int c;
  if (!contended) {
    c = SUB_SUICIDE;
    snprintf(why, n, "abort-ratio=%.3f low", ratio);
  } else if ((long)threads <= ncpu) {
    c = SUB_SER_SPIN;
    snprintf(why, n, "threads=%u<=cpus=%ld abort-ratio=%.3f", threads, ncpu, ratio);
  } else if (nondet > 0.30) {
    c = SUB_SOFTSER;
    snprintf(why, n, "threads=%u>cpus=%ld nondet=%.2f", threads, ncpu, nondet);
  } else if (len_ns > 0 && len_ns < SLICE_NS / 10) {
    c = SUB_YIELD;
    snprintf(why, n, "threads=%u>cpus=%ld short-tx=%.1fus", threads, ncpu, len_ns / 1e3);
  } else {
    c = SUB_SER_BLOCK;
    snprintf(why, n, "threads=%u>cpus=%ld tx=%.0fus abort-ratio=%.3f", threads, ncpu,
             len_ns / 1e3, ratio);
  }
  return c;
}

/* Under G.lock. */
static void switch_to(sstm_cm_ctx_t *ctx, int c, const char *why) {
  snprintf(G.reason, sizeof G.reason, "%s", why);
  if (c == SUB_SOFTSER) atomic_store_explicit(&G.softser_used, true, RLX);
  atomic_store_explicit(&G.cur, c, memory_order_release);
  G.streak = G.quiet = 0;
  sstm_cm_count(ctx, A_SWITCHES, 1);
}

/* Under G.lock: fold one window into the decision. */
static void decide(sstm_cm_ctx_t *ctx, double ratio, uint64_t active, double nondet, double len) {
  /* Threads that ran transactions: the most of the last four windows (a
   * thread descheduled for a whole window still competes for the CPUs). */
  uint64_t threads = active;
  for (int i = 3; i > 0; i--) G.active_hist[i] = G.active_hist[i - 1];
  G.active_hist[0] = active;
  for (int i = 1; i < 4; i++)
    if (G.active_hist[i] > threads) threads = G.active_hist[i];
  /* Oversubscribed suicide aborts in bursts (a preempted lock holder):
   * windows are noisy, so the decision uses a smoothed ratio. */
  G.ewma = EWMA_ALPHA * (ratio < 100 ? ratio : 100) + (1 - EWMA_ALPHA) * G.ewma;
  int cur = atomic_load_explicit(&G.cur, RLX);
  /* Asymmetric hysteresis: a contention policy hides the contention it
   * handles (few aborts) and costs nothing on conflict-free paths, so going
   * back to suicide needs a long quiet run; entering is quick. */
  bool contended = cur == SUB_SUICIDE ? (G.ewma > 0.02 || ratio > 0.5) : G.ewma > 0.001;
  char why[160];
  int c = choose(contended, G.ewma, (unsigned)threads, nondet, len, why, sizeof why);
  if (c == SUB_SUICIDE) {
    G.streak = 0;
    if (cur != SUB_SUICIDE && ++G.quiet >= QUIET_WINDOWS) switch_to(ctx, c, why);
    return;
  }
  G.quiet = 0;
  if (c == cur) {
    G.streak = 0;
    return;
  }
  if (c != G.candidate) {
    G.candidate = c;
    G.streak = 1;
  } else {
    G.streak++;
  }
  if (G.streak >= (cur == SUB_SUICIDE ? ENTER_WINDOWS : SWITCH_WINDOWS)) switch_to(ctx, c, why);
}

/* The thread that closes a window (CAS on its start) evaluates it. */
static void maybe_evaluate(sstm_cm_ctx_t *ctx) {
  uint64_t now = sstm__now_ns(), start = atomic_load_explicit(&G.window_start, RLX);
  if (now - start < WINDOW_NS) return;
  if (!atomic_compare_exchange_strong_explicit(&G.window_start, &start, now, RLX, RLX)) return;
  atomic_fetch_add_explicit(&G.window_id, 1, RLX);
  uint64_t commits = atomic_exchange_explicit(&G.commits, 0, RLX);
  uint64_t aborts = atomic_exchange_explicit(&G.aborts, 0, RLX);
  uint64_t active = atomic_exchange_explicit(&G.active, 0, RLX);
  uint64_t nd = atomic_exchange_explicit(&G.nondet, 0, RLX);
  uint64_t cmp = atomic_exchange_explicit(&G.compared, 0, RLX);
  uint64_t ls = atomic_exchange_explicit(&G.len_sum, 0, RLX);
  uint64_t ln = atomic_exchange_explicit(&G.len_n, 0, RLX);
  if (commits + aborts < 16) return; /* too little to judge */
  sstm_cm_count(ctx, A_EVALUATIONS, 1);
  double ratio = (double)aborts / (double)(commits ? commits : 1);
  double nondet = cmp >= 8 ? (double)nd / (double)cmp : 0.0;
  double len = ln ? (double)ls / (double)ln : 0.0;
  pthread_mutex_lock(&G.lock);
  decide(ctx, ratio, active, nondet, len);
  pthread_mutex_unlock(&G.lock);
}

/* Publish this thread's counts; count it active in window w; estimate its
 * transaction length as the time per commit since the last flush (a
 * transaction plus what the thread does between transactions: no clock read
 * on the transaction paths). */
static void flush(sstm_cm_ctx_t *ctx, adaptive_state_t *s, uint64_t w) {
  uint64_t now = sstm__now_ns();
  if (s->last_flush_ns && s->commits) {
    s->len_sum += (now - s->last_flush_ns) / s->commits;
    s->len_n++;
  }
  s->last_flush_ns = now;
  atomic_fetch_add_explicit(&G.commits, s->commits, memory_order_relaxed);
  atomic_fetch_add_explicit(&G.aborts, s->aborts, memory_order_relaxed);
  if (s->compared) {
    atomic_fetch_add_explicit(&G.nondet, s->nondet, memory_order_relaxed);
    atomic_fetch_add_explicit(&G.compared, s->compared, memory_order_relaxed);
  }
  if (s->len_n) {
    atomic_fetch_add_explicit(&G.len_sum, s->len_sum, memory_order_relaxed);
    atomic_fetch_add_explicit(&G.len_n, s->len_n, memory_order_relaxed);
  }
  if (s->window_seen != w) {
    s->window_seen = w;
    atomic_fetch_add_explicit(&G.active, 1, memory_order_relaxed);
  }
  s->commits = s->aborts = s->events = s->nondet = s->compared = 0;
  s->len_sum = s->len_n = 0;
  maybe_evaluate(ctx);
}

/* Flush every FLUSH_EVERY events, and at the first event of each window so
 * that threads with long transactions are counted as running. */
static inline void count_event(sstm_cm_ctx_t *ctx, adaptive_state_t *s) {
  uint64_t w = atomic_load_explicit(&G.window_id, memory_order_relaxed);
  if (SSTM_UNLIKELY(++s->events >= FLUSH_EVERY || s->window_seen != w)) flush(ctx, s, w);
}

static void adaptive_desc_init(sstm_cm_ctx_t *ctx) {
  adaptive_state_t *s = ctx->state;
  memset(s, 0, sizeof *s);
  for (int i = 0; i < NSUB; i++)
    if (subs[i]->desc_init) {
      sstm_cm_ctx_t c = sub_ctx(ctx, i);
      subs[i]->desc_init(&c);
    }
}

static void adaptive_desc_fini(sstm_cm_ctx_t *ctx) {
  flush(ctx, ctx->state, atomic_load_explicit(&G.window_id, memory_order_relaxed));
  for (int i = 0; i < NSUB; i++)
    if (subs[i]->desc_fini) {
      sstm_cm_ctx_t c = sub_ctx(ctx, i);
      subs[i]->desc_fini(&c);
    }
}

static void adaptive_commit(sstm_cm_ctx_t *ctx) {
  adaptive_state_t *s = ctx->state;
  s->commits++;
  if (SSTM_UNLIKELY(atomic_load_explicit(&G.softser_used, memory_order_relaxed))) {
    sstm_cm_ctx_t c = sub_ctx(ctx, SUB_SOFTSER); /* restores priorities on every path */
    subs[SUB_SOFTSER]->on_commit(&c);
  }
  count_event(ctx, s);
}

static sstm_cm_action_t adaptive_conflict(sstm_cm_ctx_t *ctx, const sstm_conflict_t *cf,
                                          uint64_t *w) {
  int i = atomic_load_explicit(&G.cur, memory_order_acquire);
  sstm_cm_ctx_t c = sub_ctx(ctx, i);
  return subs[i]->on_conflict(&c, cf, w);
}

static void adaptive_abort(sstm_cm_ctx_t *ctx, const sstm_abort_info_t *info) {
  adaptive_state_t *s = ctx->state;
  /* Non-determinism: does this attempt's read path differ from the
   * previous attempt's over the prefix both executed? */
  const sstm_r_entry_t *rs = ctx->desc->rs.e;
  uint32_t n = ctx->desc->rs.n < PATH_LEN ? ctx->desc->rs.n : PATH_LEN;
  if (ctx->retries > 1 && sstm__cm_conflict_abort(info->reason)) {
    uint32_t k = n < s->prev_n ? n : s->prev_n;
    if (k >= 2) {
      s->compared++;
      for (uint32_t i = 0; i < k; i++)
        if (rs[i].lock != s->prev_path[i]) {
          s->nondet++;
          break;
        }
    }
  }
  for (uint32_t i = 0; i < n; i++) s->prev_path[i] = rs[i].lock;
  s->prev_n = n;
  s->aborts++;
  int i = atomic_load_explicit(&G.cur, memory_order_acquire);
  if (i != SUB_SOFTSER && ctx->watched) { /* a softser registration from before a switch */
    sstm_abort_info_t none = {.reason = info->reason};
    sstm_cm_ctx_t c = sub_ctx(ctx, SUB_SOFTSER);
    subs[SUB_SOFTSER]->on_abort(&c, &none);
  }
  if (subs[i]->on_abort) {
    sstm_cm_ctx_t c = sub_ctx(ctx, i);
    subs[i]->on_abort(&c, info);
  }
  count_event(ctx, s);
}

static void adaptive_fini(void) {
  for (int i = 0; i < NSUB; i++)
    if (subs[i]->fini) subs[i]->fini();
}

const sstm_cm_ops_t sstm__cm_adaptive = {
    .name = "adaptive",
    .description = "chooses suicide/ser-spin/ser-block/yield/softser online (paper 1, Table 1)",
    .state_size = ADAPTIVE_STATE_MAX,
    .init = adaptive_init,
    .fini = adaptive_fini,
    .desc_init = adaptive_desc_init,
    .desc_fini = adaptive_desc_fini,
    .on_commit = adaptive_commit,
    .on_conflict = adaptive_conflict,
    .on_abort = adaptive_abort,
    .stat_names = {"sub_waits_or_prio", "sub_timeouts_or_reg", "sub_prio_failures", "",
                   "switches", "evaluations"},
    .describe = adaptive_describe,
};
