/* SPDX-License-Identifier: MIT */
/* Internal tests: waiting for another attempt's end (sstm_party_wait and
 * sstm_party_watch, cm.h), the mechanism under ser-spin/ser-block/softser.
 *
 * The status word is read directly (core/lockword.h) to hold a winner until
 * a loser has really committed to sleeping (its sleepers flag is set, or it
 * is blocked in FUTEX_WAIT), so that the rounds below exercise the futex
 * value check and the sleepers protocol deterministically. The futex calls
 * on the winner's status word are counted (this binary interposes
 * syscall(), which the statically linked library calls): an attempt whose
 * end finds the sleepers flag must issue FUTEX_WAKE, one that nobody
 * flagged must not, and nobody may FUTEX_WAIT on an ended attempt, nor on
 * a committing one except BLOCK through the commit sleepers' count
 * (section 4). The library slices sleeps (1 ms, growing) to bound one case no conflict
 * produces (see cm.h); these tests make the sleeps unsliced
 * (sstm__wait_slice_ns = 0), so a lost wake-up also hangs the loser, and the
 * runner's watchdog fails the test instead of the slice hiding it. Nothing
 * here asserts an upper bound on time; section 8 brackets the sleeps'
 * timeouts by the clock the test reads (bounds that load cannot break).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <errno.h>
#include <linux/futex.h>
#include <stdarg.h>

#include "../common/txhelp.h"
#include "core/engine.h"
#include "iface/exec_services.h"

/* ---- futex calls on one word, counted ---------------------------------------- */

static _Atomic(const void *) fx_word;
static _Atomic long fx_wakes, fx_waits;
/* FUTEX_WAITs on fx_word without a timeout, and the longest timeout given */
static _Atomic long fx_untimed_waits;
static _Atomic uint64_t fx_max_sleep_ns;
/* The timeouts of the first FX_LOGGED FUTEX_WAITs since fx_log_reset(),
 * and when each was made (CLOCK_MONOTONIC). */
#define FX_LOGGED 8
static uint64_t fx_log_ns[FX_LOGGED], fx_log_at[FX_LOGGED];
static _Atomic int fx_logged;

static uint64_t mono_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void fx_log_reset(void) {
  memset(fx_log_ns, 0, sizeof fx_log_ns);
  memset(fx_log_at, 0, sizeof fx_log_at);
  atomic_store_explicit(&fx_logged, 0, memory_order_seq_cst);
}

static void fx_note_timeout(const struct timespec *ts) {
  if (ts == NULL) {
    atomic_fetch_add_explicit(&fx_untimed_waits, 1, memory_order_seq_cst);
    return;
  }
  uint64_t ns = (uint64_t)ts->tv_sec * 1000000000ull + (uint64_t)ts->tv_nsec;
  int i = atomic_load_explicit(&fx_logged, memory_order_seq_cst);
  if (i < FX_LOGGED) {
    fx_log_ns[i] = ns;
    fx_log_at[i] = mono_ns();
    atomic_store_explicit(&fx_logged, i + 1, memory_order_seq_cst);
  }
  uint64_t m = atomic_load_explicit(&fx_max_sleep_ns, memory_order_seq_cst);
  while (ns > m && !atomic_compare_exchange_weak_explicit(
                       &fx_max_sleep_ns, &m, ns, memory_order_seq_cst, memory_order_seq_cst)) {
  }
}

/* Replaces the C library's syscall() for this executable (the static
 * library's references bind to it): counts futex calls on fx_word, then
 * makes the call. */
long syscall(long nr, ...) {
  va_list ap;
  va_start(ap, nr);
  long a1 = va_arg(ap, long), a2 = va_arg(ap, long), a3 = va_arg(ap, long);
  long a4 = va_arg(ap, long), a5 = va_arg(ap, long), a6 = va_arg(ap, long);
  va_end(ap);
  if (nr == SYS_futex && (const void *)a1 == atomic_load_explicit(&fx_word, memory_order_seq_cst)) {
    int op = (int)a2 & FUTEX_CMD_MASK;
    if (op == FUTEX_WAKE)
      atomic_fetch_add_explicit(&fx_wakes, 1, memory_order_seq_cst);
    else if (op == FUTEX_WAIT) {
      fx_note_timeout((const struct timespec *)a4);
      atomic_fetch_add_explicit(&fx_waits, 1, memory_order_seq_cst);
    }
  }
  long ret;
  register long r10 __asm__("r10") = a4;
  register long r8 __asm__("r8") = a5;
  register long r9 __asm__("r9") = a6;
  __asm__ volatile("syscall"
                   : "=a"(ret)
                   : "a"(nr), "D"(a1), "S"(a2), "d"(a3), "r"(r10), "r"(r8), "r"(r9)
                   : "rcx", "r11", "memory");
  if (ret < 0 && ret > -4096) {
    errno = (int)-ret;
    return -1;
  }
  return ret;
}

/* Count futex calls on w from now on; checks that the counting works. */
static void fx_watch(const void *w) {
  _Atomic uint64_t probe = 0;
  atomic_store_explicit(&fx_word, (const void *)&probe, memory_order_seq_cst);
  long w0 = atomic_load_explicit(&fx_wakes, memory_order_seq_cst);
  sstm__futex_wake_all(&probe);
  CHECK_EQ_I(atomic_load_explicit(&fx_wakes, memory_order_seq_cst),
             w0 + 1); /* the interposition is in effect */
  atomic_store_explicit(&fx_word, w, memory_order_seq_cst);
}

/* Sleep until woken: without the protocol (flag, value check, wake at the
 * end) a loser would sleep for ever. */
static void unsliced_sleeps(void) {
  atomic_store_explicit(&sstm__wait_slice_ns, 0, memory_order_relaxed);
}

static uint64_t st_of(sstm_desc_t *d) {
  return atomic_load_explicit(&d->status, memory_order_acquire);
}
static bool sleepers_set(sstm_desc_t *d) { return (st_of(d) & SSTM_ST_SLEEPERS) != 0; }

static void pause_n(uint64_t n) {
  for (uint64_t i = 0; i < n; i++)
    __builtin_ia32_pause();
}

/* A random short spin: mostly tiny (the CAS-to-futex_wait window of the
 * loser is a few hundred cycles), sometimes a few microseconds. */
static void spin_rand(sstm_rng_t *r) {
  uint64_t x = sstm_rng_next(r);
  pause_n((x & 1) ? (x >> 8) % 64 : (x >> 8) % 4096);
}

/* The two threads of section 1 hand each round over through these. A
 * waiter spins a little (the partner is usually a few microseconds away),
 * then sleeps on the word until its partner's publish() wakes it. It used
 * to spin and sched_yield: on a loaded machine each yield gave the CPU away
 * for a scheduling round, so a round took tens of milliseconds and the
 * rounds overran the watchdog. A thread that sleeps is run again soon
 * after it is woken. These futex calls are on the test's
 * own words, not on fx_word: the counts stay those of the winner's status
 * word. */
#define AWAIT_SPINS 2000

static void await_round(_Atomic uint64_t *v, uint64_t want) {
  for (unsigned i = 0;; i++) {
    /* acquire: pairs with publish()'s release store, so what the partner
     * wrote before publishing (mw.txid, the round's mode) is visible */
    uint64_t x = atomic_load_explicit(v, memory_order_acquire);
    if (x == want) return;
    if (i < AWAIT_SPINS)
      __builtin_ia32_pause();
    else /* returns at once if *v moved on since x was read */
      sstm__futex_wait(v, (uint32_t)x, 0);
  }
}

static void publish(_Atomic uint64_t *v, uint64_t r) {
  atomic_store_explicit(v, r, memory_order_release);
  sstm__futex_wake_all(v);
}

static void await_sleepers(sstm_desc_t *d) {
  for (unsigned i = 0; !sleepers_set(d); i++)
    if ((i & 63) == 63)
      sched_yield();
    else
      __builtin_ia32_pause();
}

/* Wait until thread tid is asleep in a futex: from then on only a
 * FUTEX_WAKE (or its timeout) can release it. */
static void await_in_futex(int tid) {
  while (!sstm_test_in_futex(tid))
    sched_yield();
}

/* ---- 1. missed wake-up ---------------------------------------------------- */

enum end_kind { END_COMMIT, END_CANCEL, END_RESTART, END_KILL, END_IRREV, END_KINDS };

/* The rounds explore timings: up to 20000 (scaled), fewer when the
 * machine is so loaded that a round takes milliseconds (each needs both
 * threads to run several times), but never under MW_MIN_ROUNDS. The
 * budget bounds only how much is explored: every verdict is the round's
 * own, and a lost wake-up still hangs the loser (the watchdog). */
#define MW_MIN_ROUNDS 100
#define MW_BUDGET_NS 5000000000ull

static struct {
  sstm_desc_t *wdesc;
  _Atomic uint64_t txid;
  _Atomic uint64_t round; /* published by the winner (txid valid) */
  _Atomic uint64_t done;  /* the loser's wait for this round returned */
  _Atomic int mode;       /* this round: SSTM_WAIT_BLOCK, _SPIN or _YIELD */
  _Atomic int sync;       /* winner waits for the sleepers flag */
  long rounds;            /* at most */
  _Atomic uint64_t last;  /* the last round, once the winner has chosen it */
  long slept_rounds;      /* rounds where the sleepers flag was seen set */
  long asleep_rounds;     /* ... and the loser seen blocked in FUTEX_WAIT */
  _Atomic int loser_tid;
  long running_at_call; /* loser saw the attempt running just before */
  uint64_t word[8];
} mw;

struct wctx {
  long r;
  int kind;
  bool sync;
  int attempts;
  sstm_rng_t *rng;
};

static void winner_body(void *p) {
  struct wctx *c = p;
  int a = ++c->attempts;
  if (a > 1) { /* restarts just commit */
    sstm_store_u64(&mw.word[1], (uint64_t)a);
    return;
  }
  if (c->kind != END_IRREV) /* irrevocable in place needs no access yet */
    sstm_store_u64(&mw.word[0], (uint64_t)c->r);
  atomic_store_explicit(&mw.txid, sstm_txid(), memory_order_relaxed);
  publish(&mw.round, (uint64_t)c->r);
  if (c->sync) {
    await_sleepers(sstm_self()); /* the loser is on its way into FUTEX_WAIT */
    mw.slept_rounds++;
    if (c->r % 2 == 0) {
      await_in_futex(atomic_load_explicit(&mw.loser_tid, memory_order_seq_cst)); /* and now in it */
      mw.asleep_rounds++;
    }
  }
  spin_rand(c->rng);
  switch (c->kind) {
  case END_COMMIT: return;
  case END_CANCEL: sstm_cancel();
  case END_RESTART: sstm_restart();
  case END_KILL:
    /* ACTIVE -> KILLED keeps the flags and wakes nobody; the rollback at
     * commit must. */
    CHECK_OK(sstm_desc_kill(sstm_self(), 0));
    return;
  case END_IRREV:
    /* ACTIVE -> IRREVOCABLE while the loser sleeps on the ACTIVE value:
     * no wake here, the irrevocable commit must wake it. */
    CHECK_OK(sstm_become_irrevocable());
    CHECK_TRUE(sstm_is_irrevocable());
    spin_rand(c->rng);
    sstm_store_u64(&mw.word[2], (uint64_t)c->r);
    return;
  }
}

static void mw_winner(sstm_rng_t *rng) {
  mw.wdesc = sstm_self();
  fx_watch(&mw.wdesc->status);
  while (atomic_load_explicit(&mw.loser_tid, memory_order_seq_cst) == 0)
    sched_yield();
  uint64_t deadline = mono_ns() + MW_BUDGET_NS;
  for (long r = 1;; r++) {
    bool last = r == mw.rounds || (r >= MW_MIN_ROUNDS && mono_ns() >= deadline);
    /* relaxed: published by the release store of this round (publish()
     * in winner_body), which the loser acquires before it reads this */
    if (last) atomic_store_explicit(&mw.last, (uint64_t)r, memory_order_relaxed);
    uint64_t x = sstm_rng_next(rng);
    struct wctx c = {.r = r, .kind = (int)(x % END_KINDS), .rng = rng};
    int mode = (x >> 8) % 8 == 0   ? SSTM_WAIT_SPIN
               : (x >> 8) % 8 == 1 ? SSTM_WAIT_YIELD
                                   : SSTM_WAIT_BLOCK;
    c.sync = mode == SSTM_WAIT_BLOCK && (x >> 16) % 3 == 0;
    atomic_store_explicit(&mw.mode, mode, memory_order_relaxed);
    atomic_store_explicit(&mw.sync, c.sync, memory_order_relaxed);
    long wakes0 = atomic_load_explicit(&fx_wakes, memory_order_seq_cst);
    int rc = sstm_run(NULL, winner_body, &c);
    CHECK_RC(rc, c.kind == END_CANCEL ? SSTM_ECANCELED : SSTM_OK);
    if (c.kind == END_RESTART || c.kind == END_KILL) CHECK_EQ_I(c.attempts, 2);
    await_round(&mw.done, (uint64_t)r);
    long wakes = atomic_load_explicit(&fx_wakes, memory_order_seq_cst) - wakes0;
    if (c.sync) /* the end found the sleepers flag: it must wake */
      CHECK_MSG(wakes >= 1,
                "round %ld (end kind %d): the loser flagged the attempt as "
                "slept on, its end issued no FUTEX_WAKE",
                r, c.kind);
    if (mode != SSTM_WAIT_BLOCK) /* nobody flagged it: no FUTEX_WAKE */
      CHECK_MSG(wakes == 0,
                "round %ld (end kind %d): %ld FUTEX_WAKE for an attempt nobody "
                "slept on",
                r, c.kind, wakes);
    if (last) break;
  }
}

static void mw_loser(sstm_rng_t *rng) {
  atomic_store_explicit(&mw.loser_tid, (int)syscall(SYS_gettid), memory_order_seq_cst);
  for (long r = 1;; r++) {
    await_round(&mw.round, (uint64_t)r);
    bool last = atomic_load_explicit(&mw.last, memory_order_relaxed) == (uint64_t)r;
    sstm_party_t p;
    memset(&p, 0, sizeof p);
    p.desc = mw.wdesc;
    p.txid = atomic_load_explicit(&mw.txid, memory_order_relaxed);
    int mode = atomic_load_explicit(&mw.mode, memory_order_relaxed);
    if (!atomic_load_explicit(&mw.sync, memory_order_relaxed)) spin_rand(rng);
    mw.running_at_call += sstm_party_running(&p);
    CHECK_OK(sstm_party_wait(&p, (sstm_wait_mode_t)mode, 0)); /* no timeout */
    /* it returned because the attempt ended, not early */
    CHECK_FALSE(sstm_party_running(&p));
    publish(&mw.done, (uint64_t)r);
    if (last) break;
  }
}

static void mw_thread(sstm_tt_t *t) {
  if (t->idx == 0)
    mw_winner(&t->rng);
  else
    mw_loser(&t->rng);
}

TEST(wait_never_misses_the_end) {
  sstm_test_init();
  unsliced_sleeps();
  mw.rounds = (long)sstm_test_scaled(20000, 2000);
  /* the winner publishes its descriptor before round 1 */
  sstm_test_run_threads(2, true, mw_thread, NULL);
  printf("%llu of %ld rounds, %ld with the loser committed to sleep (%ld seen asleep), %ld "
         "running at the call; %ld FUTEX_WAKE, %ld FUTEX_WAIT on the winner's word\n",
         (unsigned long long)atomic_load_explicit(&mw.last, memory_order_seq_cst), mw.rounds,
         mw.slept_rounds, mw.asleep_rounds, mw.running_at_call,
         atomic_load_explicit(&fx_wakes, memory_order_seq_cst),
         atomic_load_explicit(&fx_waits, memory_order_seq_cst));
  CHECK_GT_I(mw.slept_rounds, 0);
  CHECK_GT_I(mw.asleep_rounds, 0);
  sstm_test_fini();
}

/* ---- 2. an attempt that already ended -------------------------------------- */

static void cancel_fn(void *p) {
  *(uint64_t *)p = sstm_txid();
  sstm_store_u64(&mw.word[3], 1);
  sstm_cancel();
}

TEST(wait_on_ended_attempt_returns_zero) {
  sstm_test_init();
  unsliced_sleeps();
  sstm_desc_t *me = sstm_self();
  tx_store_u64(&mw.word[0], 7);
  uint64_t committed = sstm_desc_txid(me);
  CHECK_NE_U(committed, 0);
  CHECK_EQ_I(sstm_st_state(st_of(me)), SSTM_ST_IDLE);
  uint64_t cancelled = 0;
  CHECK_RC(sstm_run(NULL, cancel_fn, &cancelled), SSTM_ECANCELED);
  CHECK_GT_U(cancelled, committed);
  fx_watch(&me->status);
  uint64_t ids[] = {committed, cancelled, committed - 1, 1};
  for (unsigned i = 0; i < sizeof ids / sizeof ids[0]; i++) {
    sstm_party_t p = {.desc = me, .txid = ids[i]};
    CHECK_FALSE(sstm_party_running(&p));
    CHECK_FALSE(sstm_party_watch(&p));
    /* no timeout: a sleep here would never end */
    CHECK_OK(sstm_party_wait(&p, SSTM_WAIT_BLOCK, 0));
    CHECK_OK(sstm_party_wait(&p, SSTM_WAIT_SPIN, 0));
    CHECK_OK(sstm_party_wait(&p, SSTM_WAIT_YIELD, 0));
    CHECK_OK(sstm_party_wait(&p, SSTM_WAIT_BLOCK, 1000));
  }
  /* nothing was flagged on the idle word, nobody slept on it */
  CHECK_EQ_X(st_of(me) & SSTM_ST_FLAGS, 0);
  CHECK_EQ_I(atomic_load_explicit(&fx_waits, memory_order_seq_cst), 0);
  CHECK_EQ_I(atomic_load_explicit(&fx_wakes, memory_order_seq_cst), 1); /* fx_watch's own probe */
  CHECK_RC(sstm_party_wait(NULL, SSTM_WAIT_BLOCK, 0), SSTM_EINVAL);
  sstm_party_t mine = {.desc = me, .txid = committed};
  CHECK_RC(sstm_party_wait(&mine, (sstm_wait_mode_t)7, 0), SSTM_EINVAL); /* unknown mode */
  sstm_party_t none = {.desc = NULL, .txid = 1};
  CHECK_RC(sstm_party_wait(&none, SSTM_WAIT_BLOCK, 0), SSTM_EINVAL);
  CHECK_FALSE(sstm_party_running(&none));
  CHECK_FALSE(sstm_party_watch(&none));
  sstm_test_fini();
}

/* ---- 3. timeout while the winner stays suspended, then the wake ------------- */

static struct {
  sstm_party_t p;
  _Atomic int rc;
  _Atomic int returned, tid;
} sus;

static void *sus_waiter(void *arg) {
  (void)arg;
  atomic_store_explicit(&sus.tid, (int)syscall(SYS_gettid), memory_order_seq_cst);
  atomic_store_explicit(&sus.rc, sstm_party_wait(&sus.p, SSTM_WAIT_BLOCK, 0), memory_order_seq_cst);
  atomic_store_explicit(&sus.returned, 1, memory_order_release);
  return NULL;
}

static void suspended_fn(void *arg) {
  (void)arg;
  sstm_store_u64(&mw.word[4], 1);
  sstm_desc_t *me = sstm_self();
  sus.p = (sstm_party_t){.desc = me, .txid = sstm_txid()};
  fx_watch(&me->status);
  /* suspend: the attempt stays ACTIVE with nobody running it */
  CHECK_EQ_PTR(sstm_desc_detach(), me);
  CHECK_TRUE(sstm_party_running(&sus.p));
  CHECK_RC(sstm_party_wait(&sus.p, SSTM_WAIT_BLOCK, 1000000), SSTM_EBUSY);
  CHECK_RC(sstm_party_wait(&sus.p, SSTM_WAIT_SPIN, 1000000), SSTM_EBUSY);
  CHECK_RC(sstm_party_wait(&sus.p, SSTM_WAIT_BLOCK, 1), SSTM_EBUSY);
  CHECK_TRUE(sstm_party_running(&sus.p));
  CHECK_TRUE(sstm_party_watch(&sus.p));
  CHECK_TRUE(sstm_party_watch(&sus.p)); /* idempotent */
  /* a waiter without timeout: must return once this attempt commits */
  pthread_t th;
  CHECK_EQ_I(pthread_create(&th, NULL, sus_waiter, NULL), 0);
  await_sleepers(me);
  while (atomic_load_explicit(&sus.tid, memory_order_seq_cst) == 0)
    sched_yield();
  await_in_futex(atomic_load_explicit(
      &sus.tid, memory_order_seq_cst)); /* asleep: only the commit's wake frees it */
  CHECK_FALSE(atomic_load_explicit(&sus.returned, memory_order_seq_cst));
  CHECK_TRUE(sstm_party_running(&sus.p));
  CHECK_OK(sstm_desc_attach(me));
  /* back on this thread: the body returns and sstm_run commits; the waiter
   * is joined after that */
  *(pthread_t *)arg = th;
}

TEST(wait_times_out_on_suspended_winner_then_wakes_on_commit) {
  sstm_test_init();
  unsliced_sleeps();
  pthread_t th;
  CHECK_OK(sstm_run(NULL, suspended_fn, &th));
  CHECK_EQ_I(pthread_join(th, NULL), 0);
  CHECK_OK(atomic_load_explicit(&sus.rc, memory_order_seq_cst));
  CHECK_GE_I(atomic_load_explicit(&fx_wakes, memory_order_seq_cst),
             1 + 1); /* the commit woke the sleeper */
  CHECK_FALSE(sstm_party_running(&sus.p));
  CHECK_EQ_U(tx_load_u64(&mw.word[4]), 1);
  sstm_test_fini();
}

/* ---- 4. a committing party: spun on, or slept on until its commit ends ---- */

/* CTL: the committer locks its write set after COMMITTING. A lock word
 * forged to name another running attempt makes the commit meet a conflict,
 * and the policy below runs while the committer is COMMITTING. Three
 * waiters, one per mode. SPIN spins without giving up its CPU; YIELD spins
 * and gives it up now and then (a committing party may have been
 * preempted). BLOCK, with the asymmetric fence (the default), looks a
 * little, then sleeps on the status word, registered in the party's
 * commit_sleepers, until the end of the commit wakes it ((4.8) in
 * docs/design/core.md); without it (cfg.no_membarrier), BLOCK spins and
 * yields as YIELD does. sched_yield() is interposed to count each waiter's
 * calls. */
static uint64_t cw_word[8] __attribute__((aligned(64)));
#define CW_WAITERS 3          /* SSTM_WAIT_SPIN, _BLOCK, _YIELD */
#define CW_LOOKS 512          /* loads of the COMMITTING word each waiter makes at least */
#define CW_SPIN_CPU_NS 500000 /* the SPIN waiter's CPU time while it is held */
static struct {
  _Atomic uint64_t *lk;
  uint64_t old_lw;
  sstm_desc_t *holder;
  sstm_party_t p;
  _Atomic int published, entering, returned, rc[CW_WAITERS];
  _Atomic long yields[CW_WAITERS]; /* sched_yield calls inside the wait */
  _Atomic int block_tid;           /* the BLOCK waiter's thread id */
  bool sleeps;                     /* BLOCK is to sleep (the membarrier fence is on) */
  int calls;
  long observed;
  uint32_t sleepers_seen; /* the committing party's commit_sleepers while BLOCK slept */
  clockid_t spin_clock;   /* the SPIN waiter's CPU clock */
} cw;

static uint64_t thread_cpu_ns(clockid_t c) {
  struct timespec t;
  CHECK_EQ_I(clock_gettime(c, &t), 0);
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static __thread int cw_mode = -1; /* the calling waiter's mode, -1: none */

/* Replaces the C library's sched_yield for this executable (the static
 * library's calls bind to it). */
int sched_yield(void) {
  if (cw_mode >= 0) atomic_fetch_add_explicit(&cw.yields[cw_mode], 1, memory_order_seq_cst);
  return (int)syscall(SYS_sched_yield);
}

/* Has the BLOCK waiter done what its mode does behind a committing party:
 * asleep in FUTEX_WAIT on the status word, or yielded many times? */
static bool cw_block_ready(void) {
  if (!cw.sleeps)
    return atomic_load_explicit(&cw.yields[SSTM_WAIT_BLOCK], memory_order_seq_cst) >= CW_LOOKS / 64;
  int tid = atomic_load_explicit(&cw.block_tid, memory_order_seq_cst);
  return atomic_load_explicit(&fx_waits, memory_order_seq_cst) >= 1 && tid != 0 &&
         sstm_test_in_futex(tid);
}

static sstm_cm_action_t cw_conflict(sstm_cm_ctx_t *ctx, const sstm_conflict_t *c,
                                    uint64_t *wait_ns) {
  cw.calls++;
  CHECK_EQ_I(c->kind, SSTM_CONFLICT_COMMIT_LOCKED);
  CHECK_TRUE(c->has_other);
  CHECK_EQ_PTR(c->other.desc, cw.holder);
  CHECK_EQ_I(sstm_st_state(st_of(ctx->desc)), SSTM_ST_COMMITTING);
  cw.p = (sstm_party_t){.desc = ctx->desc, .txid = ctx->txid, .committing = true};
  fx_watch(&ctx->desc->status);
  atomic_store_explicit(&cw.published, 1, memory_order_release);
  while (atomic_load_explicit(&cw.entering, memory_order_acquire) < CW_WAITERS)
    sched_yield();
  /* The waiters are inside sstm_party_wait (or about to be). None may set
   * the sleepers flag on a COMMITTING word (its CAS refuses: the commit's
   * final store is a plain one). Held until each waiter has done what its
   * mode does: the YIELD one (and BLOCK without the fence) yields once per
   * 64 looks (counted), the SPIN one never yields, so its CPU time since
   * it entered stands for its looks; BLOCK with the fence is asleep in
   * the kernel. Counts of events, not of this thread's yields: 2000 of
   * those took tens of seconds on a loaded machine, where each yield gives
   * the CPU away for a scheduling round. */
  uint64_t spin_cpu0 = thread_cpu_ns(cw.spin_clock);
  while (!cw_block_ready() ||
         atomic_load_explicit(&cw.yields[SSTM_WAIT_YIELD], memory_order_seq_cst) < CW_LOOKS / 64 ||
         thread_cpu_ns(cw.spin_clock) - spin_cpu0 < CW_SPIN_CPU_NS) {
    CHECK_EQ_X(st_of(ctx->desc) & SSTM_ST_SLEEPERS, 0);
    CHECK_EQ_I(atomic_load_explicit(&cw.returned, memory_order_seq_cst), 0);
    sched_yield();
    cw.observed++;
  }
  CHECK_EQ_X(st_of(ctx->desc) & SSTM_ST_SLEEPERS, 0);
  CHECK_EQ_I(atomic_load_explicit(&cw.returned, memory_order_seq_cst), 0);
  cw.sleepers_seen = atomic_load_explicit(&ctx->desc->commit_sleepers, memory_order_seq_cst);
  atomic_store_explicit(cw.lk, cw.old_lw, memory_order_release); /* unforge */
  *wait_ns = 1000;
  return SSTM_CM_WAIT;
}

static const sstm_cm_ops_t cw_ops = {
    .name = "test-cw-hold",
    .on_conflict = cw_conflict,
};

static void *cw_waiter(void *arg) {
  int mode = (int)(intptr_t)arg;
  if (mode == SSTM_WAIT_BLOCK)
    atomic_store_explicit(&cw.block_tid, sstm__gettid(), memory_order_seq_cst);
  while (!atomic_load_explicit(&cw.published, memory_order_acquire))
    sched_yield();
  atomic_fetch_add_explicit(&cw.entering, 1, memory_order_release);
  cw_mode = mode;
  atomic_store_explicit(&cw.rc[mode], sstm_party_wait(&cw.p, (sstm_wait_mode_t)mode, 0),
                        memory_order_seq_cst);
  cw_mode = -1;
  atomic_fetch_add_explicit(&cw.returned, 1, memory_order_seq_cst);
  return NULL;
}

static void cw_writer(void *arg) {
  (void)arg;
  sstm_store_u64(&cw_word[0], 42); /* buffered (CTL) */
}

static void cw_holder_body(void *arg) {
  (void)arg;
  struct sstm_desc *h = sstm__cur;
  cw.holder = h;
  /* forge: cw_word[0]'s lock owned by this (running) attempt */
  cw.lk = sstm__lock_for(h, &cw_word[0]);
  cw.old_lw = atomic_load_explicit(cw.lk, memory_order_seq_cst);
  CHECK_FALSE(sstm_lw_locked(cw.old_lw));
  atomic_store_explicit(cw.lk, sstm_lw_make_owner(h->slot, sstm_txid()), memory_order_seq_cst);
  CHECK_OK(run_other_attached(NULL, cw_writer, NULL));
}

/* One run of section 4, with the asymmetric fence or without it. */
static void cw_run(bool no_membarrier) {
  memset(&cw, 0, sizeof cw);
  atomic_store_explicit(&fx_waits, 0, memory_order_seq_cst);
  atomic_store_explicit(&fx_wakes, 0, memory_order_seq_cst);
  unsliced_sleeps();
  int rc = sstm_cm_register(&cw_ops);
  CHECK_TRUE(rc == 0 || rc == SSTM_EBUSY); /* registered once per process */
  sstm_config_t cfg;
  sstm_test_config(&cfg);
  cfg.design = SSTM_DESIGN_CTL;
  cfg.cm = "test-cw-hold";
  cfg.no_membarrier = no_membarrier;
  CHECK_OK(sstm_init(&cfg));
  if (!no_membarrier && !sstm__g.membarrier) {
    sstm_shutdown();
    sstm_test_skip("membarrier(PRIVATE_EXPEDITED) is not available: BLOCK never sleeps on a "
                   "committing party");
  }
  cw.sleeps = !no_membarrier;
  CHECK_OK(sstm_thread_init());
  pthread_t th[CW_WAITERS];
  for (int m = 0; m < CW_WAITERS; m++)
    CHECK_EQ_I(pthread_create(&th[m], NULL, cw_waiter, (void *)(intptr_t)m), 0);
  CHECK_EQ_I(pthread_getcpuclockid(th[SSTM_WAIT_SPIN], &cw.spin_clock), 0);
  CHECK_OK(sstm_run(NULL, cw_holder_body, NULL));
  for (int m = 0; m < CW_WAITERS; m++) {
    CHECK_EQ_I(pthread_join(th[m], NULL), 0);
    CHECK_OK(atomic_load_explicit(&cw.rc[m], memory_order_seq_cst));
  }
  /* SPIN keeps its CPU; YIELD gave it up while the party was committing
   * (the holder waited for that, bounded by the watchdog) */
  CHECK_EQ_I(atomic_load_explicit(&cw.yields[SSTM_WAIT_SPIN], memory_order_seq_cst), 0);
  CHECK_GT_I(atomic_load_explicit(&cw.yields[SSTM_WAIT_YIELD], memory_order_seq_cst), 0);
  if (cw.sleeps) {
    /* BLOCK slept (the holder saw it in FUTEX_WAIT, counted in the party's
     * commit_sleepers) and never yielded; the commit's end woke it: a lost
     * wake-up would leave it asleep (unsliced sleeps) and the watchdog
     * would fail the test. */
    CHECK_GE_I(atomic_load_explicit(&fx_waits, memory_order_seq_cst), 1);
    CHECK_EQ_U(cw.sleepers_seen, 1);
    CHECK_GE_I(atomic_load_explicit(&fx_wakes, memory_order_seq_cst),
               1 + 1); /* fx_watch's own, and the commit's */
    CHECK_EQ_I(atomic_load_explicit(&cw.yields[SSTM_WAIT_BLOCK], memory_order_seq_cst), 0);
  } else {
    CHECK_EQ_I(atomic_load_explicit(&fx_waits, memory_order_seq_cst),
               0); /* a committing attempt is spun on */
    CHECK_EQ_I(atomic_load_explicit(&fx_wakes, memory_order_seq_cst),
               1); /* fx_watch's own: the commit had nobody to wake */
    CHECK_GT_I(atomic_load_explicit(&cw.yields[SSTM_WAIT_BLOCK], memory_order_seq_cst), 0);
  }
  CHECK_EQ_U(atomic_load_explicit(&cw.p.desc->commit_sleepers, memory_order_seq_cst),
             0); /* the sleeper left */
  printf("while the party was committing: yields spin %ld, block %ld, yield %ld; futex waits %ld, "
         "wakes %ld\n",
         atomic_load_explicit(&cw.yields[0], memory_order_seq_cst),
         atomic_load_explicit(&cw.yields[1], memory_order_seq_cst),
         atomic_load_explicit(&cw.yields[2], memory_order_seq_cst),
         atomic_load_explicit(&fx_waits, memory_order_seq_cst),
         atomic_load_explicit(&fx_wakes, memory_order_seq_cst));
  CHECK_EQ_I(cw.calls, 1);
  CHECK_FALSE(sstm_party_running(&cw.p));
  CHECK_EQ_U(tx_load_u64(&cw_word[0]), 42);
  txh_cleanup();
  sstm_test_fini();
}

TEST(wait_on_committing_party_spins_and_returns) { cw_run(true); }

TEST(wait_on_committing_party_sleeps_until_its_commit_ends) { cw_run(false); }

/* ---- 5. a party built for an attempt that only reads ------------------------ */

/* cm.h: sstm_party_wait waits "until the party's attempt has ended"; a
 * party is any (descriptor, txid) pair (sstm_desc_txid is public). An
 * attempt that read but wrote nothing commits with a plain store: if a
 * sleeper flagged it meanwhile, that commit must still wake it. */
static struct {
  sstm_party_t p;
  _Atomic int rc, returned, tid;
} ro;

static void *ro_waiter(void *arg) {
  (void)arg;
  atomic_store_explicit(&ro.tid, (int)syscall(SYS_gettid), memory_order_seq_cst);
  atomic_store_explicit(&ro.rc, sstm_party_wait(&ro.p, SSTM_WAIT_BLOCK, 0), memory_order_seq_cst);
  atomic_store_explicit(&ro.returned, 1, memory_order_seq_cst);
  return NULL;
}

static void ro_body(void *arg) {
  uint64_t v = sstm_load_u64(&mw.word[5]);
  (void)v;
  ro.p = (sstm_party_t){.desc = sstm_self(), .txid = sstm_txid()};
  fx_watch(&sstm_self()->status);
  pthread_t *th = arg;
  CHECK_EQ_I(pthread_create(th, NULL, ro_waiter, NULL), 0);
  await_sleepers(sstm_self());
  while (atomic_load_explicit(&ro.tid, memory_order_seq_cst) == 0)
    sched_yield();
  await_in_futex(
      atomic_load_explicit(&ro.tid, memory_order_seq_cst)); /* asleep on this attempt's word */
  CHECK_FALSE(atomic_load_explicit(&ro.returned, memory_order_seq_cst));
}

TEST(wait_on_reading_attempt_wakes_at_its_commit) {
  sstm_test_init();
  unsliced_sleeps();
  pthread_t th;
  CHECK_OK(sstm_run(NULL, ro_body, &th)); /* detected read-only commit */
  CHECK_EQ_I(pthread_join(th, NULL), 0);
  CHECK_OK(atomic_load_explicit(&ro.rc, memory_order_seq_cst));
  CHECK_GE_I(atomic_load_explicit(&fx_wakes, memory_order_seq_cst),
             1 + 1); /* the commit woke the sleeper */
  sstm_test_fini();
}

/* ---- 6. the party of a conflict is the lock's owner ------------------------- */

/* The engine resolves a conflict on lock word l by reading the owner's
 * status, then snapshotting the party. If the owner's attempt ended and a
 * new one started in between, the party must still name the attempt that
 * owned l (which has ended), not the owner's new attempt: policies wait
 * for it, watch it or kill it. */
static struct {
  uint64_t lw;
  sstm_desc_t *d;
} snap;

static void snap_write(void *arg) {
  (void)arg;
  sstm_store_u64(&mw.word[6], 1);
  snap.lw = atomic_load_explicit(sstm__lock_for(sstm__cur, &mw.word[6]), memory_order_seq_cst);
  snap.d = sstm_self();
}

static void snap_next(void *arg) {
  sstm_party_t *p = arg;
  uint64_t v = sstm_load_u64(&mw.word[7]); /* a new attempt of the same descriptor */
  (void)v;
  sstm__party_snapshot(snap.d, snap.lw, p);
  CHECK_NE_U(sstm_txid(), sstm_lw_serial(snap.lw));
}

TEST_ETL(party_snapshot_names_the_lock_owner_attempt) { /* the lock is held while it runs */
  sstm_test_init();
  CHECK_OK(sstm_run(NULL, snap_write, NULL));
  CHECK_TRUE(sstm_lw_locked(snap.lw));
  CHECK_EQ_U(sstm_lw_slot(snap.lw), sstm_desc_slot(snap.d));
  sstm_party_t p;
  CHECK_OK(sstm_run(NULL, snap_next, &p));
  CHECK_EQ_PTR(p.desc, snap.d);
  CHECK_EQ_U(p.txid & SSTM_LW_SERIAL_MASK, sstm_lw_serial(snap.lw));
  sstm_test_fini();
}

/* ---- 7. watch rules ------------------------------------------------------------ */

static void watch_body(void *arg) {
  (void)arg;
  sstm_store_u64(&mw.word[0], 3);
  sstm_party_t p = {.desc = sstm_self(), .txid = sstm_txid()};
  CHECK_TRUE(sstm_party_watch(&p));
  CHECK_NE_X(st_of(sstm_self()) & SSTM_ST_WATCHED, 0);
  sstm_party_t other = {.desc = sstm_self(), .txid = sstm_txid() + 1};
  CHECK_FALSE(sstm_party_watch(&other));
  CHECK_FALSE(sstm_party_running(&other));
}

static struct {
  bool watched_seen;
  int commits;
} wr;
static void wr_commit(sstm_cm_ctx_t *ctx) {
  wr.commits++;
  wr.watched_seen = ctx->watched;
}
static sstm_cm_action_t wr_conflict(sstm_cm_ctx_t *c, const sstm_conflict_t *cf, uint64_t *w) {
  (void)c, (void)cf, (void)w;
  return SSTM_CM_ABORT_SELF;
}
static const sstm_cm_ops_t wr_ops = {
    .name = "test-watch-rec",
    .on_conflict = wr_conflict,
    .on_commit = wr_commit,
};

TEST(watch_reported_to_the_watched_attempt_only) {
  CHECK_OK(sstm_cm_register(&wr_ops));
  sstm_config_t cfg;
  sstm_test_config(&cfg);
  cfg.cm = "test-watch-rec";
  CHECK_OK(sstm_init(&cfg));
  CHECK_OK(sstm_thread_init());
  CHECK_OK(sstm_run(NULL, watch_body, NULL));
  CHECK_EQ_I(wr.commits, 1);
  CHECK_TRUE(wr.watched_seen); /* the ending RMW read the flag */
  CHECK_EQ_X(st_of(sstm_self()) & SSTM_ST_FLAGS, 0);
  tx_store_u64(&mw.word[1], 4); /* the next attempt starts unwatched */
  CHECK_EQ_I(wr.commits, 2);
  CHECK_FALSE(wr.watched_seen);
  sstm_test_fini();
}

/* ---- 8. the sleeps' timeouts, and every sleeper woken ------------------------ */

/* Each FUTEX_WAIT that sstm_party_wait makes is bounded by the slice (as
 * long as the wait so far, from sstm__wait_slice_ns, 1 ms, up to 16 ms: it
 * bounds the cost of a lost wake-up, cm.h) and by what is left of the
 * caller's timeout. Checked on the argument the kernel gets (the interposed
 * syscall() records it) and bracketed by the test's own clock readings: a waiter on a suspended
 * attempt, with a timeout of several slices, one shorter than a slice, and with slicing off. */
static void sleep_bounds(sstm_party_t *p, uint64_t timeout_ns, uint64_t max_ns) {
  atomic_store_explicit(&fx_max_sleep_ns, 0, memory_order_seq_cst);
  atomic_store_explicit(&fx_untimed_waits, 0, memory_order_seq_cst);
  long w0 = atomic_load_explicit(&fx_waits, memory_order_seq_cst);
  /* until a few sleeps were seen (a preempted waiter may time out without
   * sleeping at all) */
  while (atomic_load_explicit(&fx_waits, memory_order_seq_cst) - w0 < 3)
    CHECK_RC(sstm_party_wait(p, SSTM_WAIT_BLOCK, timeout_ns), SSTM_EBUSY);
  CHECK_EQ_I(atomic_load_explicit(&fx_untimed_waits, memory_order_seq_cst), 0);
  CHECK_GT_U(atomic_load_explicit(&fx_max_sleep_ns, memory_order_seq_cst), 0);
  CHECK_LE_U(atomic_load_explicit(&fx_max_sleep_ns, memory_order_seq_cst), max_ns);
}

/* The n logged sleeps of one wait that started at t0 (bounds above). */
static void check_slices(uint64_t t0, int n, uint64_t timeout, uint64_t min, uint64_t max) {
  uint64_t slept = 0;
  for (int i = 0; i < n; i++) {
    uint64_t seen = fx_log_at[i] - t0;
    uint64_t hi = seen < min ? min : seen < max ? seen : max;
    uint64_t lo = slept < min ? min : slept < max ? slept : max;
    uint64_t left = seen < timeout ? timeout - seen : 0;
    if (left < lo) lo = left;
    CHECK_MSG(fx_log_ns[i] >= lo && fx_log_ns[i] <= hi,
              "sleep %d: %llu ns, not in [%llu, %llu] (slept %llu ns before, %llu ns seen)", i,
              (unsigned long long)fx_log_ns[i], (unsigned long long)lo, (unsigned long long)hi,
              (unsigned long long)slept, (unsigned long long)seen);
    slept += fx_log_ns[i];
  }
}

static void sliced_fn(void *arg) {
  (void)arg;
  sstm_store_u64(&mw.word[5], 1);
  sstm_desc_t *me = sstm_self();
  sstm_party_t p = {.desc = me, .txid = sstm_txid()};
  fx_watch(&me->status);
  CHECK_EQ_PTR(sstm_desc_detach(), me); /* suspended: it never ends meanwhile */
  atomic_store_explicit(&sstm__wait_slice_ns, 1000000, memory_order_relaxed);
  sleep_bounds(&p, 300000, 300000); /* 0.3 ms: one sleep, shorter than a slice */
  /* A slice lasts as long as the wait so far, from 1 ms up to 16 ms, and
   * no longer than what is left of the timeout. Each sleep is bracketed,
   * whatever the machine's load:
   * - above by the wait so far as this test sees it (it started the clock
   *   before the library did, and reads it after, at the system call);
   * - below by the sum of the sleeps before (each lasted at least its
   *   timeout: nothing wakes the word), unless the deadline cut it, which
   *   leaves at least the timeout minus that same wait so far.
   * Without the growth (fixed 1 ms) the third sleep is below its bound;
   * with a fixed 16 ms the first is above it. */
  const uint64_t TIMEOUT = 300000000, MIN = 1000000, MAX = 16000000;
  /* Until a wait made at least three sleeps, the growth's evidence: under
   * load one sleep can last the whole timeout. Each round's sleeps are
   * checked. */
  for (int n = 0; n < 3;) {
    fx_log_reset();
    uint64_t t0 = mono_ns();
    CHECK_RC(sstm_party_wait(&p, SSTM_WAIT_BLOCK, TIMEOUT), SSTM_EBUSY);
    n = atomic_load_explicit(&fx_logged,
                             memory_order_seq_cst); /* 0 if preempted past the deadline first */
    check_slices(t0, n, TIMEOUT, MIN, MAX);
  }
  atomic_store_explicit(&sstm__wait_slice_ns, 0, memory_order_relaxed);
  sleep_bounds(&p, 2000000, 2000000); /* unsliced: the timeout only */
  CHECK_OK(sstm_desc_attach(me));
}

TEST(sleeps_are_sliced_and_bounded_by_the_timeout) {
  sstm_test_init();
  CHECK_OK(sstm_run(NULL, sliced_fn, NULL));
  CHECK_EQ_U(tx_load_u64(&mw.word[5]), 1);
  sstm_test_fini();
}

/* Several losers asleep on one winner: its end wakes them all (one
 * FUTEX_WAKE for every sleeper). Sleeps are unsliced and without a timeout,
 * so a sleeper left asleep hangs and the watchdog fails the test. */
#define MS_SLEEPERS 3
static struct {
  sstm_party_t p;
  _Atomic int tid[MS_SLEEPERS], rc[MS_SLEEPERS], returned;
} ms;

static void *ms_sleeper(void *arg) {
  int i = (int)(intptr_t)arg;
  atomic_store_explicit(&ms.tid[i], (int)syscall(SYS_gettid), memory_order_seq_cst);
  atomic_store_explicit(&ms.rc[i], sstm_party_wait(&ms.p, SSTM_WAIT_BLOCK, 0),
                        memory_order_seq_cst);
  atomic_fetch_add_explicit(&ms.returned, 1, memory_order_seq_cst);
  return NULL;
}

static void many_fn(void *arg) {
  pthread_t *th = arg;
  sstm_store_u64(&mw.word[6], 1);
  sstm_desc_t *me = sstm_self();
  ms.p = (sstm_party_t){.desc = me, .txid = sstm_txid()};
  fx_watch(&me->status);
  CHECK_EQ_PTR(sstm_desc_detach(), me);
  for (int i = 0; i < MS_SLEEPERS; i++)
    CHECK_EQ_I(pthread_create(&th[i], NULL, ms_sleeper, (void *)(intptr_t)i), 0);
  for (int i = 0; i < MS_SLEEPERS; i++) {
    while (atomic_load_explicit(&ms.tid[i], memory_order_seq_cst) == 0)
      sched_yield();
    await_in_futex(atomic_load_explicit(&ms.tid[i], memory_order_seq_cst)); /* all asleep at once */
  }
  CHECK_EQ_I(atomic_load_explicit(&ms.returned, memory_order_seq_cst), 0);
  CHECK_OK(sstm_desc_attach(me)); /* the commit (sstm_run) wakes them */
}

TEST(attempt_end_wakes_every_sleeper) {
  sstm_test_init();
  unsliced_sleeps();
  pthread_t th[MS_SLEEPERS];
  CHECK_OK(sstm_run(NULL, many_fn, th));
  for (int i = 0; i < MS_SLEEPERS; i++) {
    CHECK_EQ_I(pthread_join(th[i], NULL), 0);
    CHECK_OK(atomic_load_explicit(&ms.rc[i], memory_order_seq_cst));
  }
  CHECK_FALSE(sstm_party_running(&ms.p));
  sstm_test_fini();
}

/* ---- 10. sstm_quiesce: an executor's request to leave a wait -------------- */

/* sstm_quiesce waits for each running attempt through sstm_party_wait,
 * which an executor ends early when it picks the waiting thread for a
 * request (cm_wait: sstm__exec_end_cm_wait, exec.c's waiter_first): that
 * ends a policy's wait between two attempts, whose retry then switches.
 * sstm_quiesce's grace period must outlast it: it returns only once the
 * attempt has ended. The holder's attempt stays open until released; the
 * quiescer is told to leave once it waits, and then either returns (the
 * grace period cut short) or waits again. Every step waits for an event. */
static struct {
  _Atomic int in, release, done;
  _Atomic(sstm_desc_t *) qdesc;
} qz;

static void qz_body(void *arg) {
  (void)arg;
  atomic_store_explicit(&qz.in, 1, memory_order_seq_cst);
  while (!atomic_load_explicit(&qz.release, memory_order_seq_cst))
    pause_n(64);
}

static void *qz_holder(void *arg) {
  (void)arg;
  CHECK_OK(sstm_thread_init());
  CHECK_OK(sstm_run(NULL, qz_body, NULL));
  CHECK_OK(sstm_thread_exit());
  return NULL;
}

static void *qz_quiescer(void *arg) {
  (void)arg;
  CHECK_OK(sstm_thread_init());
  atomic_store_explicit(&qz.qdesc, sstm_self(), memory_order_seq_cst);
  CHECK_OK(sstm_quiesce());
  atomic_store_explicit(&qz.done, 1, memory_order_seq_cst);
  CHECK_OK(sstm_thread_exit());
  return NULL;
}

TEST(quiesce_outlasts_a_request_to_leave_its_wait) {
  sstm_test_init();
  pthread_t h, q;
  CHECK_EQ_I(pthread_create(&h, NULL, qz_holder, NULL), 0);
  while (!atomic_load_explicit(&qz.in, memory_order_seq_cst))
    sched_yield();
  CHECK_EQ_I(pthread_create(&q, NULL, qz_quiescer, NULL), 0);
  sstm_desc_t *d;
  while ((d = atomic_load_explicit(&qz.qdesc, memory_order_seq_cst)) == NULL ||
         !sstm__exec_in_cm_wait(d))
    sched_yield();
  CHECK_TRUE(sstm__exec_end_cm_wait(d)); /* as an executor's submitter would */
  while (!atomic_load_explicit(&qz.done, memory_order_seq_cst) && !sstm__exec_in_cm_wait(d))
    sched_yield();
  CHECK_FALSE(atomic_load_explicit(&qz.done, memory_order_seq_cst)); /* it waits again */
  atomic_store_explicit(&qz.release, 1, memory_order_seq_cst);
  CHECK_EQ_I(pthread_join(h, NULL), 0);
  CHECK_EQ_I(pthread_join(q, NULL), 0);
  CHECK_TRUE(atomic_load_explicit(&qz.done, memory_order_seq_cst));
  sstm_test_fini();
}

SSTM_TEST_MAIN()
