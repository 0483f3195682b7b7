/* SPDX-License-Identifier: MIT */
/* A contended stream kept for a batch (docs/design/tm-libc.md (S11)): a
 * thread that holds the stream's turn while others wait behind it keeps
 * the stream, works on it in place for a bounded batch while the others
 * wait, then yields it to one of them. Each test runs threads that share
 * one stream, in rounds until batches happened (hand-overs), and then
 * checks a guarantee:
 * - the stream holds every committed transaction's bytes, in the
 *   transactions' serial order (each transaction also increments a
 *   transactional counter and writes its value), with aborts in the
 *   keeper's attempts and attempts that leave solo mode in flight (a
 *   flush inside the transaction);
 * - the batch is bounded: no keeper enters more than n attempts while
 *   others wait (sstm__stdio_set_batch's n);
 * - no waiter starves: once a waiter took its ticket, at most (threads -
 *   1) hand-overs go to others before its own;
 * - a stream used by one thread at a time is never kept for a batch;
 * - a keeper whose thread ends keeps nothing: its waiter takes the
 *   stream at once, not at the batch's deadline; nor does a keeper that
 *   unregisters (sstm_thread_exit) and lives on, which may then register
 *   again and use a stream again;
 * - a live keeper counts as live at each keeping, also after another
 *   keeper whose tag shares its slot of the table of live keepers;
 * - calls outside transactions among the keepers' transactions lose
 *   nothing and double nothing, with batches short enough that waiters
 *   often take the stream at a batch's deadline.
 * The bounds are counts, not times: they hold whatever the scheduling. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libc/esc.h"
#include "runner.h"

static char path[64];

static void setup(void) {
  sstm_test_init();
  sstm_test_tmp_file(path, sizeof path, "batch");
}

static void teardown(void) {
  unlink(path);
  sstm_test_fini();
}

#define REC 16

/* Whether a test that needs a hand-over of the stream (a batch) runs
 * another round: at least `min` rounds, then rounds until a hand-over
 * happened, however many that takes. How many rounds a hand-over needs
 * is the scheduler's business: on a host that runs the threads one after
 * the other (one CPU, or an overloaded host) the threads contend only
 * when one is preempted inside a transaction, and a bound on the rounds
 * or their time failed there (tests/README.md, "libc_batch"). The only
 * bound is the test's watchdog: a build that never hands the stream over
 * runs rounds until it fails by it. */
static bool another_round(int r, int min, uint64_t takes, unsigned threads) {
  if (r < min) return true;
  return threads > 1 && takes == 0; /* one thread: never a hand-over */
}

static struct {
  sstm_file_t *f;
  uint64_t counter; /* transactional: the serial order */
  unsigned per_thread;
  unsigned flush_every; /* a flush in every such transaction (0: none) */
} g;

typedef struct body {
  unsigned thread, seq;
  int attempts;
} body_t;

static void rec_tx(void *arg) {
  body_t *b = arg;
  b->attempts++;
  uint64_t ord = sstm_load_u64(&g.counter);
  char rec[48];
  snprintf(rec, sizeof rec, "%06llu %02u %05u\n", (unsigned long long)ord, b->thread % 100,
           b->seq % 100000);
  CHECK_EQ_I(sstm_fputs(rec, g.f), REC);
  /* a while in flight with the stream acquired, so that the others'
   * acquisitions meanwhile queue behind this one and a batch begins when
   * two threads overlap (as in mixed_tx) */
  for (volatile unsigned k = 0; k < 2000; k++) {
  }
  /* leaves solo mode in flight: its bytes leave with the commit */
  if (g.flush_every != 0 && b->seq % g.flush_every == 1) CHECK_OK(sstm_fflush(g.f));
  sstm_store_u64(&g.counter, ord + 1);
  if (b->seq % 7 == 3 && b->attempts == 1) sstm_restart(); /* an abort, often a keeper's */
}

static void rec_thread(sstm_tt_t *t) {
  for (unsigned i = 0; i < g.per_thread; i++) {
    body_t b = {.thread = t->idx, .seq = i};
    CHECK_OK(sstm_run(NULL, rec_tx, &b));
  }
}

/* Run n threads of records on one stream; check the file. Returns the
 * stream's hand-overs. */
static uint64_t run_records(unsigned n, unsigned per_thread, unsigned flush_every) {
  g.f = sstm_fopen(path, "w");
  CHECK_NOT_NULL(g.f);
  g.counter = 0;
  g.per_thread = per_thread;
  g.flush_every = flush_every;
  uint64_t total = (uint64_t)n * per_thread;
  sstm_test_run_threads(n, true, rec_thread, NULL);
  CHECK_EQ_U(g.counter, total);
  uint64_t takes = sstm__stdio_takes(g.f);
  CHECK_OK(sstm_fclose(g.f));
  size_t cap = (size_t)total * REC + 1;
  char *buf = malloc(cap);
  CHECK_NOT_NULL(buf);
  FILE *fp = fopen(path, "r");
  CHECK_NOT_NULL(fp);
  size_t got = fread(buf, 1, cap, fp);
  fclose(fp);
  CHECK_EQ_U(got, total * REC);
  /* The records are in the order of the counter they read: the stream's
   * order is the transactions' serial order, and nothing is lost or
   * doubled. */
  for (uint64_t i = 0; i < total; i++) {
    char want[24];
    snprintf(want, sizeof want, "%06llu ", (unsigned long long)i);
    CHECK_EQ_MEM(buf + i * REC, want, 7);
  }
  free(buf);
  return takes;
}

TEST(a_batch_keeps_a_shared_stream_in_serial_order) {
  setup();
  sstm__stdio_set_batch(16, 1000000000ull); /* batches end by their count */
  uint64_t bm, tm;
  sstm__stdio_batch_stats(&bm, &tm, 1);
  unsigned n = sstm_test_threads(4);
  /* Rounds until batches happened (threads that start apart may not
   * contend at first, and on an overloaded host they may run one after
   * the other for a long time: a debug-build CI run once had none in 200
   * rounds); every round's file is checked. */
  uint64_t takes = 0;
  for (int r = 0; another_round(r, 1, takes, n); r++)
    takes = run_records(n, (unsigned)sstm_test_scaled(3000, 300), 0);
  sstm__stdio_batch_stats(&bm, &tm, 1);
  sstm__stdio_set_batch(0, 0);
  CHECK_LE_U(bm, 16);
  CHECK_LE_U(tm, n - 1);
  teardown();
}

TEST(a_batch_whose_attempts_leave_solo_mode_keeps_the_serial_order) {
  setup();
  sstm__stdio_set_batch(16, 1000000000ull);
  uint64_t bm, tm;
  sstm__stdio_batch_stats(&bm, &tm, 1);
  unsigned n = sstm_test_threads(4);
  uint64_t takes = 0;
  for (int r = 0; another_round(r, 1, takes, n); r++) /* as above */
    takes = run_records(n, (unsigned)sstm_test_scaled(2000, 200), 3);
  sstm__stdio_batch_stats(&bm, &tm, 1);
  sstm__stdio_set_batch(0, 0);
  CHECK_LE_U(bm, 16);
  CHECK_LE_U(tm, n - 1);
  teardown();
}

/* ---- calls outside transactions among batches ----------------------------- */

/* Records of MREC bytes: kind ('N': a call outside transactions, 'T': a
 * transaction), thread, the thread's own sequence number for 'N' or the
 * transactional counter's value for 'T'. */
#define MREC 17

static void mrec(char *b, char kind, unsigned thread, uint64_t seq) {
  snprintf(b, MREC + 1, "%c%02u %012llu\n", kind, thread % 100, (unsigned long long)seq);
}

static void mixed_tx(void *arg) {
  unsigned thread = (unsigned)(uintptr_t)arg;
  off_t at = sstm_ftell(g.f); /* a peek: the attempt is in flight on the stream from here */
  CHECK_GE_I(at, 0);
  uint64_t ord = sstm_load_u64(&g.counter);
  sstm_store_u64(&g.counter, ord + 1);
  /* a while in flight: a turn holder that would keep the stream for a
   * batch waits for this attempt */
  for (volatile unsigned k = 0; k < 2000; k++) {
  }
  char rec[MREC + 1];
  mrec(rec, 'T', thread, ord);
  CHECK_EQ_I(sstm_fputs(rec, g.f), MREC);
  /* a while in flight with the stream acquired: the others' acquisitions
   * meanwhile take the turn and queue behind it, so that a batch begins
   * (a turn holder with others waiting) when two threads overlap. The
   * peek above takes no turn: with only it, a host that ran the threads
   * one after the other had too few turns for a batch (docs/benchmarks.md,
   * "One shared stream: yield only to a waiter that runs"). */
  for (volatile unsigned k = 0; k < 2000; k++) {
  }
  CHECK_EQ_I(sstm_ftell(g.f), at + MREC); /* nothing came between */
}

static unsigned mixed_n[64];

static void mixed_thread(sstm_tt_t *t) {
  char rec[MREC + 1];
  unsigned nseq = 0;
  for (unsigned i = 0; i < g.per_thread; i++) {
    if (sstm_rng_below(&t->rng, 2) == 0) { /* the stream's lock, or a transaction of its own */
      mrec(rec, 'N', t->idx, nseq++);
      CHECK_EQ_I(sstm_fputs(rec, g.f), MREC);
    } else {
      CHECK_OK(sstm_run(NULL, mixed_tx, (void *)(uintptr_t)t->idx));
    }
  }
  mixed_n[t->idx] = nseq;
}

/* A batch's keeper exists only once no attempt that loaded the keeper word
 * before it is in flight: a waiter that took the stream at the deadline
 * while the turn holder was still waiting for those attempts worked in
 * place beside them, and their installations lost its records (and the
 * other way round). */
TEST(calls_outside_transactions_among_batches_lose_nothing) {
  setup();
  sstm__stdio_set_batch(16, 2000); /* 2 us: waiters take at the deadline */
  unsigned n = sstm_test_threads(4);
  CHECK_LE_U(n, 64);
  g.per_thread = (unsigned)sstm_test_scaled(3000, 1500);
  uint64_t takes = 0;
  /* 20 rounds, and more until batches happened (another_round: on an
   * overloaded host, which may run the threads one after the other, 200
   * rounds once had none); every round's file is checked */
  for (int r = 0; another_round(r, 20, takes, n); r++) {
    g.f = sstm_fopen(path, "w");
    CHECK_NOT_NULL(g.f);
    g.counter = 0;
    memset(mixed_n, 0, sizeof mixed_n);
    sstm_test_run_threads(n, true, mixed_thread, NULL);
    takes += sstm__stdio_takes(g.f);
    CHECK_OK(sstm_fclose(g.f));
    FILE *fp = fopen(path, "r");
    CHECK_NOT_NULL(fp);
    char rec[MREC + 2];
    uint64_t next_n[64] = {0}, next_t = 0;
    while (fgets(rec, sizeof rec, fp) != NULL) {
      char kind;
      unsigned thread;
      unsigned long long seq;
      CHECK_EQ_U(strlen(rec), MREC);
      CHECK_EQ_I(sscanf(rec, "%c%2u %12llu", &kind, &thread, &seq), 3);
      CHECK_TRUE(thread < n);
      if (kind == 'N') { /* each thread's calls in program order, once */
        CHECK_EQ_U(seq, next_n[thread]);
        next_n[thread]++;
      } else { /* the transactions in their serial order, once */
        CHECK_EQ_I(kind, 'T');
        CHECK_EQ_U(seq, next_t);
        next_t++;
      }
    }
    fclose(fp);
    CHECK_EQ_U(next_t, g.counter);
    for (unsigned i = 0; i < n; i++)
      CHECK_EQ_U(next_n[i], mixed_n[i]);
  }
  sstm__stdio_set_batch(0, 0);
  teardown();
}

/* ---- one-call transactions: the batch's bound and the tickets ------------ */

static void putc_tx(void *arg) {
  CHECK_EQ_I(sstm_fputc('a' + (int)(uintptr_t)arg, g.f), 'a' + (int)(uintptr_t)arg);
}

static void putc_thread(sstm_tt_t *t) {
  for (unsigned i = 0; i < g.per_thread; i++)
    CHECK_OK(sstm_run(NULL, putc_tx, (void *)(uintptr_t)t->idx));
}

TEST(no_keeper_keeps_longer_than_its_batch_and_no_waiter_starves) {
  setup();
  sstm__stdio_set_batch(8, 1000000000ull);
  uint64_t bm, tm;
  sstm__stdio_batch_stats(&bm, &tm, 1);
  unsigned n = sstm_test_threads(6);
  g.per_thread = (unsigned)sstm_test_scaled(20000, 2000);
  uint64_t takes = 0;
  for (int r = 0; another_round(r, 1, takes, n); r++) { /* as above */
    g.f = sstm_fopen(path, "w");
    CHECK_NOT_NULL(g.f);
    sstm_test_run_threads(n, true, putc_thread, NULL);
    takes = sstm__stdio_takes(g.f);
    CHECK_OK(sstm_fclose(g.f));
  }
  sstm__stdio_batch_stats(&bm, &tm, 1);
  sstm__stdio_set_batch(0, 0);
  CHECK_LE_U(bm, 8);
  CHECK_LE_U(tm, n - 1);
  /* every byte of every thread, once */
  FILE *fp = fopen(path, "r");
  CHECK_NOT_NULL(fp);
  uint64_t cnt[26] = {0}, all = 0;
  for (int c; (c = fgetc(fp)) != EOF; all++) {
    CHECK_TRUE(c >= 'a' && c < 'a' + (int)n);
    cnt[c - 'a']++;
  }
  fclose(fp);
  CHECK_EQ_U(all, (uint64_t)n * g.per_thread);
  for (unsigned i = 0; i < n; i++)
    CHECK_EQ_U(cnt[i], g.per_thread);
  teardown();
}

/* ---- whom a keeper yields to: a waiter that runs -------------------------- */

/* Two threads on one stream, batches of 8 attempts: thread 1 (the waiter)
 * is stopped once inside its wait for thread 0's keeping (solo_wait's
 * hook), at the point the test names, until thread 0 has run its
 * transactions: with more threads than CPUs a waiter is often not running
 * when the keeper's batch ends. */
static struct {
  int at;              /* the hook's argument at which the waiter stops */
  unsigned n;          /* the keeper's transactions while the waiter is stopped */
  _Atomic int stopped; /* the waiter is stopped (once) */
  _Atomic int done;    /* the keeper ran its n transactions */
  _Atomic int gave_up; /* the waiter's stop ended without done (the keeper hung) */
  uint64_t y0, y1;     /* yields when the waiter stopped, when the keeper was done */
} hk;
static __thread int hk_me; /* this thread is the one to stop */

static void stop_hook(const sstm_file_t *f, int hot) {
  (void)f;
  /* relaxed: only this thread stores it (once) */
  if (!hk_me || hot != hk.at || atomic_load_explicit(&hk.stopped, memory_order_relaxed)) return;
  uint64_t backs;
  sstm__stdio_yields(g.f, &hk.y0, &backs);
  /* release: y0 before the keeper's load of stopped (acquire) */
  atomic_store_explicit(&hk.stopped, 1, memory_order_release);
  /* Until the keeper is done: it must not need this thread. A bound only
   * for a build that breaks the rule, where the keeper waits for this
   * thread (the test then fails instead of hanging). */
  /* acquire: pairs with the keeper's release of done (y1 before it) */
  for (int i = 0; i < 20000 && !atomic_load_explicit(&hk.done, memory_order_acquire); i++)
    usleep(1000);
  if (!atomic_load_explicit(&hk.done, memory_order_acquire))     /* as above */
    atomic_store_explicit(&hk.gave_up, 1, memory_order_relaxed); /* read after the join */
}

static void stop_thread(sstm_tt_t *t) {
  hk_me = t->idx == 1;
  unsigned after = 0;
  while (!atomic_load_explicit(&hk.done, memory_order_acquire)) { /* as in stop_hook */
    CHECK_OK(sstm_run(NULL, putc_tx, (void *)(uintptr_t)t->idx));
    if (t->idx == 0 && atomic_load_explicit(&hk.stopped, memory_order_acquire) && ++after == hk.n) {
      uint64_t backs;
      sstm__stdio_yields(g.f, &hk.y1, &backs);
      atomic_store_explicit(&hk.done, 1, memory_order_release); /* y1 before it */
    }
  }
}

/* Runs the two threads with the waiter stopped at `at`; returns the
 * keeper's take-backs. They run until the waiter stopped (a batch began
 * and it waited) and the keeper ran its n transactions after that. */
static uint64_t run_stopped(int at) {
  sstm__stdio_set_batch(8, 2000000); /* 2 ms: the waiter takes over after the keeper stops */
  memset(&hk, 0, sizeof hk);
  hk.at = at;
  hk.n = (unsigned)sstm_test_scaled(2000, 200);
  g.f = sstm_fopen(path, "w");
  CHECK_NOT_NULL(g.f);
  sstm__stdio_wait_hook = stop_hook;
  sstm_test_run_threads(2, true, stop_thread, NULL);
  sstm__stdio_wait_hook = NULL;
  uint64_t yields, backs;
  sstm__stdio_yields(g.f, &yields, &backs);
  CHECK_OK(sstm_fclose(g.f));
  sstm__stdio_set_batch(0, 0);
  int gave_up = atomic_load_explicit(&hk.gave_up, memory_order_relaxed); /* threads joined */
  CHECK_EQ_I(gave_up, 0); /* the keeper went on without the waiter */
  return backs;
}

/* A keeper whose batch ends while the only waiter does not spin (here: it
 * is stopped where it would yield the CPU or sleep) begins its next batch
 * instead of yielding the stream to nobody. */
TEST(a_keeper_does_not_yield_when_no_waiter_spins) {
  setup();
  (void)run_stopped(0);
  /* at most one: the keeper may have seen the waiter spinning just before
   * it stopped */
  CHECK_LE_U(hk.y1 - hk.y0, 1);
  teardown();
}

/* A keeper that yielded to a waiter that then did not take the stream
 * (here: stopped while it counts as spinning) takes the stream back and
 * goes on, instead of waiting until that waiter runs again. */
TEST(a_keeper_takes_back_a_yield_that_nobody_takes) {
  setup();
  uint64_t backs = run_stopped(1);
  CHECK_GE_U(hk.y1 - hk.y0, 1); /* it yielded to the stopped waiter */
  CHECK_GE_U(backs, 1);
  teardown();
}

/* ---- a keeper whose thread ends ------------------------------------------- */

/* Two threads on one stream, batches of more attempts and a longer
 * deadline than the test lasts. Once one of them (the waiter) waits for
 * the other's batch, the other (the keeper) ends its thread. The waiter
 * takes the stream at once instead of at the batch's deadline: an ended
 * thread keeps nothing. The bound is a count of the waiter's looks (its
 * wait hook's calls) after the keeper's end, not a time: a waiter looks
 * again when any thread ends, and then takes an ended keeper's stream at
 * its first look; without that it would look until the deadline (an
 * hour). With `unregister`, the keeper only unregisters (sstm_thread_exit)
 * and lives on, unregistered, until the waiter's thread has ended; then
 * it registers again and uses another stream (the first one closed and
 * freed meanwhile), and ends. */
static struct {
  _Atomic int waiter;     /* the thread that waited first (its hook ran), -1: none yet */
  _Atomic int joined;     /* the keeper's thread has ended (unregister: it unregistered) */
  _Atomic unsigned after; /* the waiter's looks after that */
  _Atomic int gave_up;    /* threads that met no waiter (the round ends) */
  _Atomic int in_wait;    /* the waiter waited since its last commit */
  int across;             /* it did when the keeper's thread was about to end */
  int unregister;         /* the keeper unregisters and lives on (set between rounds) */
  _Atomic int done;       /* unregister: the waiter's thread has ended */
} ke;
static __thread int ke_me = -1; /* this thread's index (ended_main); -1: the main thread */

static void ended_hook(const sstm_file_t *f, int hot) {
  (void)hot;
  if (ke_me < 0) return; /* sstm_fclose's wait, after a round */
  int none = -1;
  /* relaxed, all: flags; the joins order the rest */
  atomic_compare_exchange_strong_explicit(&ke.waiter, &none, ke_me, memory_order_relaxed,
                                          memory_order_relaxed);
  if (atomic_load_explicit(&ke.waiter, memory_order_relaxed) != ke_me) return;
  atomic_store_explicit(&ke.in_wait, 1, memory_order_relaxed);
  if (!atomic_load_explicit(&ke.joined, memory_order_relaxed)) return;
  unsigned a = atomic_fetch_add_explicit(&ke.after, 1, memory_order_relaxed) + 1;
  CHECK_MSG(a < 1000,
            "the waiter still waits, %u looks after the keeper's thread ended or unregistered "
            "(solo %#llx)",
            a, (unsigned long long)sstm__stdio_solo(f));
}

static void *ended_main(void *arg) {
  ke_me = (int)(uintptr_t)arg;
  CHECK_OK(sstm_thread_init());
  unsigned past = 0; /* the waiter's transactions since it waited */
  bool keeper = false;
  for (unsigned i = 0;; i++) {
    /* relaxed: flags (see ended_hook) */
    int joined = atomic_load_explicit(&ke.joined, memory_order_relaxed);
    CHECK_OK(sstm_run(NULL, putc_tx, arg));
    atomic_store_explicit(&ke.in_wait, 0, memory_order_relaxed);
    /* a while outside transactions: the keeper's stream is mostly between
     * attempts, where a waiter tells the keeper that it waits */
    for (volatile unsigned k = 0; k < 500; k++) {
    }
    int waiter = atomic_load_explicit(&ke.waiter, memory_order_relaxed);
    if (waiter < 0) {
      if (i < 200000) continue;
      atomic_fetch_add_explicit(&ke.gave_up, 1, memory_order_relaxed); /* no batch: a round */
      break;
    }
    if (waiter != ke_me) { /* the keeper: its thread ends */
      ke.across = atomic_load_explicit(&ke.in_wait, memory_order_relaxed); /* read after the join */
      keeper = true;
      break;
    }
    /* The waiter: until a transaction begun after the keeper's end has
     * committed. Or, if the two swapped roles (this thread keeps the
     * stream and the other waits for it), until its own end lets the
     * other go on. */
    if (joined || ++past == 100000) break;
  }
  if (keeper && !ke.unregister) return NULL; /* its end unregisters it (thread.h) */
  CHECK_OK(sstm_thread_exit());
  if (!keeper) return NULL;
  /* Unregistered, the keeper keeps nothing: its tag no longer counts as
   * live (it was, if this thread kept the stream for a batch). */
  CHECK(!sstm__stdio_tag_live(sstm__stdio_tag()));
  atomic_store_explicit(&ke.joined, 1, memory_order_relaxed); /* relaxed: a flag */
  /* acquire: pairs with the main thread's release (the stream it opened) */
  while (!atomic_load_explicit(&ke.done, memory_order_acquire))
    usleep(1000);
  CHECK_OK(sstm_thread_init()); /* again, and stdio again */
  for (unsigned i = 0; i < 100; i++)
    CHECK_OK(sstm_run(NULL, putc_tx, arg));
  CHECK_OK(sstm_thread_exit());
  return NULL;
}

/* The rounds of a_keeper_whose_thread_ends_hands_the_stream_over_at_once
 * (unregister 0) and of a_keeper_that_unregisters_hands_the_stream_over_at_once
 * (1), until the waiter waited across the keeper's end (or
 * unregistration). */
static void keeper_ends(int unregister) {
  setup();
  ke.unregister = unregister;
  sstm__stdio_set_batch(UINT32_MAX - 1, 3600ull * 1000000000ull);
  sstm__stdio_wait_hook = ended_hook;
  /* Rounds until the waiter waited across the keeper's end: in other
   * rounds its wait ended first (the keeper yielded), the roles swapped,
   * or no batch began. */
  for (;;) {
    atomic_store_explicit(&ke.waiter, -1, memory_order_relaxed);
    atomic_store_explicit(&ke.joined, 0, memory_order_relaxed);
    atomic_store_explicit(&ke.after, 0, memory_order_relaxed);
    atomic_store_explicit(&ke.gave_up, 0, memory_order_relaxed);
    atomic_store_explicit(&ke.in_wait, 0, memory_order_relaxed);
    atomic_store_explicit(&ke.done, 0, memory_order_relaxed);
    ke.across = 0;
    g.f = sstm_fopen(path, "w");
    CHECK_NOT_NULL(g.f);
    pthread_t th[2];
    for (uintptr_t i = 0; i < 2; i++)
      CHECK_EQ_I(pthread_create(&th[i], NULL, ended_main, (void *)i), 0);
    int waiter;
    while ((waiter = atomic_load_explicit(&ke.waiter, memory_order_relaxed)) < 0 &&
           atomic_load_explicit(&ke.gave_up, memory_order_relaxed) < 2)
      usleep(1000);
    uint64_t yields, backs;
    if (waiter >= 0 && unregister) {
      /* The keeper unregisters (it sets joined) and waits for done. */
      CHECK_EQ_I(pthread_join(th[waiter], NULL), 0);
      sstm__stdio_yields(g.f, &yields, &backs);
      CHECK_OK(sstm_fclose(g.f)); /* what the keeper kept is freed */
      g.f = sstm_fopen(path, "w");
      CHECK_NOT_NULL(g.f);
      /* The ends counted so far include those of the keeper's
       * unregistration and of the waiter's thread. The keeper, alone from
       * here on, keeps no stream for a batch: its end counts none again. */
      uint64_t exits = sstm__stdio_live_exits();
      atomic_store_explicit(&ke.done, 1, memory_order_release); /* see ended_main */
      CHECK_EQ_I(pthread_join(th[1 - waiter], NULL), 0);
      CHECK_EQ_U(sstm__stdio_live_exits(), exits);
    } else {
      if (waiter >= 0) {
        CHECK_EQ_I(pthread_join(th[1 - waiter], NULL), 0); /* the keeper's end */
        atomic_store_explicit(&ke.joined, 1, memory_order_relaxed);
        CHECK_EQ_I(pthread_join(th[waiter], NULL), 0);
      } else {
        for (int i = 0; i < 2; i++)
          CHECK_EQ_I(pthread_join(th[i], NULL), 0);
      }
      sstm__stdio_yields(g.f, &yields, &backs);
    }
    CHECK_OK(sstm_fclose(g.f));
    /* The waiter was in its wait when the keeper's thread was about to
     * end, and no keeper yielded in the round: that wait ended by the
     * keeper's end, long before the deadline. */
    if (ke.across && yields == 0) break;
  }
  sstm__stdio_wait_hook = NULL;
  sstm__stdio_set_batch(0, 0);
  teardown();
}

TEST(a_keeper_whose_thread_ends_hands_the_stream_over_at_once) { keeper_ends(0); }

/* A keeper that unregisters (sstm_thread_exit) and lives on keeps nothing
 * either: its waiter takes the stream at once, not at the batch's
 * deadline (it did not: only the thread's end handed the batch over). The
 * keeper then registers again and uses a stream again, after the one it
 * kept was closed and freed; its end does not count its unregistration's
 * end again (live_exits), and reads nothing of the freed stream (the
 * sanitizer builds). */
TEST(a_keeper_that_unregisters_hands_the_stream_over_at_once) { keeper_ends(1); }

/* ---- two live keepers whose tags share a slot ---------------------------- */

/* Two threads whose tags are 1024 apart (stdio.c's LIVE_SLOTS: they share
 * a slot of live_tag; the threads made between them take a tag each and
 * end) keep one stream in turn, with short batches. A thread that keeps
 * the stream counts as live at every keeping: when the other's keeping
 * took the slot, its own next keeping takes it back. (It did not: the
 * slot was stored at a thread's first keeping only, so from the other's
 * first keeping on, the first thread counted as ended for the rest of its
 * life, and its waiters took each of its batches at once.) The check runs
 * between two reads of the keeper word that show the same keeping by the
 * checking thread: the other thread stores the slot only after it took
 * the word, so the slot is this keeping's. Until each thread was seen
 * keeping 3 times after the other; no bound but the watchdog, as
 * another_round. */
static struct {
  uint32_t tag[2];
  _Atomic int decided;       /* the threads that took their tag */
  _Atomic int go;            /* both threads made: keep the stream */
  _Atomic int last;          /* the thread last seen keeping, -1: none */
  _Atomic unsigned again[2]; /* keepings seen right after the other's */
  _Atomic int stop;
} ks;

/* w is a keeping for a batch by tag, no attempt in flight: the keeper word
 * (esc.h) holds tag << 8, the batch bit 0x10 and state C (1) or A (2) */
static bool keeps_batch(uint64_t w, uint32_t tag) {
  unsigned st = (unsigned)(w & 0x0f);
  return (uint32_t)(w >> 8) == tag && (w & 0x10) != 0 && (st == 1 || st == 2);
}

/* Thread 0, or a candidate for thread 1: one whose tag does not share
 * thread 0's slot ends at once (its tag taken). */
static void *slot_main(void *arg) {
  int me = (int)(uintptr_t)arg;
  uint32_t tag = sstm__stdio_tag();
  bool mine = me == 0 || tag % 1024u == ks.tag[0] % 1024u;
  if (mine) ks.tag[me] = tag;
  /* release: the tag, for the main thread's acquire below */
  atomic_fetch_add_explicit(&ks.decided, 1, memory_order_release);
  if (!mine) return (void *)0;
  /* acquire: pairs with the release of go (both tags are set) */
  while (!atomic_load_explicit(&ks.go, memory_order_acquire))
    sched_yield();
  CHECK_OK(sstm_thread_init());
  /* relaxed, below: flags and counts; the joins order the rest */
  while (!atomic_load_explicit(&ks.stop, memory_order_relaxed)) {
    CHECK_OK(sstm_run(NULL, putc_tx, arg));
    uint64_t w = sstm__stdio_solo(g.f);
    if (!keeps_batch(w, tag)) continue;
    bool live = sstm__stdio_tag_live(tag);
    if (sstm__stdio_solo(g.f) != w) continue; /* that keeping ended meanwhile */
    CHECK_MSG(live,
              "thread %d (tag %u) keeps the stream but counts as ended (keepings after the "
              "other's: %u, %u)",
              me, tag, atomic_load_explicit(&ks.again[0], memory_order_relaxed),
              atomic_load_explicit(&ks.again[1], memory_order_relaxed));
    if (atomic_exchange_explicit(&ks.last, me, memory_order_relaxed) == 1 - me &&
        atomic_fetch_add_explicit(&ks.again[me], 1, memory_order_relaxed) + 1 >= 3 &&
        atomic_load_explicit(&ks.again[1 - me], memory_order_relaxed) >= 3)
      atomic_store_explicit(&ks.stop, 1, memory_order_relaxed);
  }
  CHECK_OK(sstm_thread_exit());
  atomic_store_explicit(&ks.stop, 1, memory_order_relaxed); /* the other stops too */
  return (void *)1;
}

TEST(two_live_keepers_whose_tags_share_a_slot_each_count_as_live) {
  setup();
  /* short batches and deadlines: the keepings alternate (a keeper may
   * take its untaken yields back until the deadline) */
  sstm__stdio_set_batch(4, 1000000);
  g.f = sstm_fopen(path, "w");
  CHECK_NOT_NULL(g.f);
  atomic_store_explicit(&ks.last, -1, memory_order_relaxed);
  pthread_t th[2];
  CHECK_EQ_I(pthread_create(&th[0], NULL, slot_main, (void *)(uintptr_t)0), 0);
  /* acquire, both loops: pairs with the release of decided (the tag) */
  while (atomic_load_explicit(&ks.decided, memory_order_acquire) < 1)
    sched_yield();
  /* Candidates, one at a time, until one takes a tag 1024 apart (the
   * tags are the next values of a counter, which only these threads move
   * now): at most 1024. */
  for (int n = 2;; n++) {
    CHECK(n <= 1026);
    CHECK_EQ_I(pthread_create(&th[1], NULL, slot_main, (void *)(uintptr_t)1), 0);
    while (atomic_load_explicit(&ks.decided, memory_order_acquire) < n)
      sched_yield();
    if (ks.tag[1] != 0) break;
    CHECK_EQ_I(pthread_join(th[1], NULL), 0);
  }
  CHECK_EQ_U(ks.tag[1] % 1024u, ks.tag[0] % 1024u);
  CHECK(ks.tag[1] != ks.tag[0]);
  atomic_store_explicit(&ks.go, 1, memory_order_release); /* as above */
  for (int i = 0; i < 2; i++) {
    void *r;
    CHECK_EQ_I(pthread_join(th[i], &r), 0);
    CHECK(r == (void *)1);
  }
  CHECK_GE_U(atomic_load_explicit(&ks.again[0], memory_order_relaxed), 3);
  CHECK_GE_U(atomic_load_explicit(&ks.again[1], memory_order_relaxed), 3);
  CHECK_OK(sstm_fclose(g.f));
  sstm__stdio_set_batch(0, 0);
  teardown();
}

/* One thread at a time (the others join before the next starts): never a
 * turn, so never a batch. */
TEST(a_stream_used_by_one_thread_at_a_time_is_not_kept_for_a_batch) {
  setup();
  g.f = sstm_fopen(path, "w");
  CHECK_NOT_NULL(g.f);
  g.per_thread = 1000;
  for (int i = 0; i < 3; i++)
    sstm_test_run_threads(1, true, putc_thread, NULL);
  CHECK_EQ_U(sstm__stdio_takes(g.f), 0);
  CHECK_EQ_U(sstm__stdio_turns(g.f), 0);
  CHECK_OK(sstm_fclose(g.f));
  teardown();
}

SSTM_TEST_MAIN()
