/* SPDX-License-Identifier: MIT */
/* Internal tests: adaptive's decisions (src/cm/adaptive.c), window by
 * window, without threads or clocks. The test seam sstm__adaptive_feed
 * judges one window from given counts; a model gives each sub-policy a
 * commit rate, and every window is fed the rate of the policy adaptive
 * chose for it. What is checked:
 *  - long transactions, 64 threads on 2 CPUs: windows of 160 ms; a probe
 *    of os_prio against ser-block that ends early when the challenger's
 *    mean is 1.5x the default's with t >= 3 ("probe(early)"): after two
 *    windows each in a regime's first probe, after one each in a later
 *    one; the hold after a clear verdict (12 windows), doubled when the
 *    next verdict confirms it (24);
 *  - long transactions whose commits are mostly updates (over 2/3, until
 *    under 1/2) have os_prio as the default, ser-block as the challenger;
 *  - the challenger needs a significant lead (t >= 1.5): noisy windows
 *    1.3x ahead keep the default, with the long hold of a close verdict;
 *  - a close verdict: the full six-window probe, the challenger only when
 *    more than 3 % ahead, and the long hold (50 windows);
 *  - a verdict weighs the regime's earlier probes (3/4 per probe since),
 *    and a new regime forgets them;
 *  - window length by regime: 20 ms per 4 threads per CPU for long
 *    transactions (40 ms at 16 threads, capped at 160 ms), 20 ms for short
 *    ones at any count; at or below the CPU count short transactions get
 *    ser-kill without a probe;
 *  - hysteresis: leaving oversubscription takes three windows, the length
 *    regimes are a band (half the threshold to the threshold keeps the
 *    current one), a held yield gives way after two bad windows in a row;
 *  - transaction length is CPU time per commit (wall time when the CPU
 *    time is unknown);
 *  - the choice before any window: registered descriptors against CPUs;
 *  - the custom slice wanted: none before the first window and for short
 *    transactions at or below the CPU count, 100 ms for short ones
 *    oversubscribed while they keep the CPUs busy (a band: 80 %, 50 %),
 *    4 ms for long ones; a thread attaching takes the one wanted and
 *    gives it back at exit.
 * The counts are exact (no time, no threads): each expectation follows
 * from the rules at the top of adaptive.c.
 */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include <schedstm/statetab.h>

#include "../common/runner.h"
#include "cm/common.h"
#include "iface/cm_services.h" /* sstm__cm_admit_hook_on */
#include "os/sched.h"

#define MS 1000000ull

static char why[256];
static int cur = -1; /* the choice for the next window */

static double rate_os_prio, rate_ser_block, rate_other;
/* The share of the commits that are updates (read-only ones otherwise). */
static double upd_share = 0.0;
/* The share of min(threads, CPUs) that the threads kept busy (CPU time);
 * below 0: unknown (the seam's UINT64_MAX). */
static double cpu_share = 1.0;

static uint64_t cpu_of(uint64_t ns, unsigned threads, unsigned ncpu) {
  if (cpu_share < 0) return UINT64_MAX;
  unsigned busy = threads < ncpu ? threads : ncpu;
  return (uint64_t)((double)ns * busy * cpu_share);
}

static double rate_of(int choice) {
  const char *n = sstm__adaptive_sub_name(choice);
  if (strcmp(n, "os_prio") == 0) return rate_os_prio;
  if (strcmp(n, "ser-block") == 0) return rate_ser_block;
  return rate_other;
}

/* One window under the current choice; returns the next choice's name. */
static const char *feed(unsigned threads, unsigned ncpu) {
  uint64_t ns = sstm__adaptive_window_ns();
  uint64_t commits = (uint64_t)(rate_of(cur) * (double)ns / 1e9);
  uint64_t updates = (uint64_t)(upd_share * (double)commits);
  cur = sstm__adaptive_feed(ns, commits, updates, commits / 2, threads, cpu_of(ns, threads, ncpu),
                            ncpu, why, sizeof why);
  return sstm__adaptive_sub_name(cur);
}

static void start(void) {
  sstm_config_t cfg;
  sstm_config_default(&cfg);
  cfg.use_env = false;
  cfg.cm = "adaptive";
  CHECK_OK(sstm_init(&cfg));
  CHECK_OK(sstm_thread_init());
  cur = -1;
  upd_share = 0.0;
}

static void stop(void) {
  CHECK_OK(sstm_thread_exit());
  CHECK_OK(sstm_shutdown());
}

/* The long-transaction threshold the policy uses (from the thread's slice,
 * or its 1.4 ms fallback), as sstm_describe reports it ("long>NNus"), in
 * seconds. */
static double long_threshold_s(void) {
  char d[1024];
  CHECK_GT_I(sstm_describe(d, sizeof d), 0);
  const char *lp = strstr(d, "long>");
  CHECK_NOT_NULL(lp);
  return strtod(lp + 5, NULL) / 1e6;
}

/* Feed n hold windows: the choice stays `name`, no probe runs. */
static void hold(unsigned n, const char *name, unsigned threads, unsigned ncpu) {
  for (unsigned i = 0; i < n; i++) {
    CHECK_EQ_STR(feed(threads, ncpu), name);
    CHECK_MSG(strstr(why, "probing") == NULL, "hold window %u of %u probes: %s", i + 1, n, why);
  }
}

/* One window: the choice after it is `name`, and the reason says `says`. */
static void expect_feed(unsigned threads, unsigned ncpu, const char *name, const char *says) {
  CHECK_EQ_STR(feed(threads, ncpu), name);
  CHECK_MSG(strstr(why, says) != NULL, "expected \"%s\" in: %s", says, why);
}

/* n hold windows on `name`, then the window that starts the next probe,
 * whose first choice is `first`. */
static void hold_then_probe(unsigned n, const char *name, const char *first, unsigned threads,
                            unsigned ncpu) {
  hold(n, name, threads, ncpu);
  expect_feed(threads, ncpu, first, "probing");
}

TEST(long_tx_early_verdict_and_growing_hold) {
  start();
  rate_os_prio = 10000, rate_ser_block = 2000, rate_other = 2000;
  /* first window: long transactions, oversubscribed; the probe starts with
   * the challenger */
  expect_feed(64, 2, "os_prio", "long-tx");
  CHECK_NOT_NULL(strstr(why, "probing"));
  CHECK_EQ_U(sstm__adaptive_window_ns(), 160 * MS);
  CHECK_EQ_STR(feed(64, 2), "ser-block"); /* the default's windows */
  /* one window each, 5x apart: no variance yet, the probe goes on */
  expect_feed(64, 2, "ser-block", "probing");
  CHECK_EQ_STR(feed(64, 2), "os_prio");
  /* two windows each: verdict */
  expect_feed(64, 2, "os_prio", "probe(early)");
  /* a clear verdict not yet confirmed: 12 windows, then a probe */
  hold_then_probe(12, "os_prio", "os_prio", 64, 2);
  CHECK_EQ_STR(feed(64, 2), "ser-block");
  /* one window each, with the first probe's: verdict */
  expect_feed(64, 2, "os_prio", "probe(early)");
  /* confirmed: the hold doubles */
  hold_then_probe(24, "os_prio", "os_prio", 64, 2);
  stop();
}

TEST(a_gap_of_one_and_a_half_ends_the_probe_early) {
  start();
  /* 1.67x: above the 1.5x that ends a probe once each policy has two
   * windows */
  rate_os_prio = 10000, rate_ser_block = 6000, rate_other = 2000;
  CHECK_EQ_STR(feed(64, 2), "os_prio");   /* probe: the challenger first */
  CHECK_EQ_STR(feed(64, 2), "ser-block"); /* C done: the default's window */
  CHECK_EQ_STR(feed(64, 2), "ser-block"); /* C D done: go on */
  CHECK_NOT_NULL(strstr(why, "probing"));
  CHECK_EQ_STR(feed(64, 2), "os_prio"); /* C D D done: one window of C, go on */
  CHECK_NOT_NULL(strstr(why, "probing"));
  CHECK_EQ_STR(feed(64, 2), "os_prio"); /* C D D C done: verdict */
  CHECK_NOT_NULL(strstr(why, "probe(early) os_prio=10000/s ser-block=6000/s t=99"));
  hold(12, "os_prio", 64, 2); /* clear, not yet confirmed */
  stop();

  start();
  /* 1.4x: clear (over 1.25x) but never early: the full six windows */
  rate_os_prio = 10000, rate_ser_block = 7150, rate_other = 2000;
  CHECK_EQ_STR(feed(64, 2), "os_prio");
  for (unsigned i = 0; i < 5; i++) {
    feed(64, 2);
    CHECK_NOT_NULL(strstr(why, "probing"));
  }
  expect_feed(64, 2, "os_prio", "probe os_prio=");
  hold(12, "os_prio", 64, 2);
  stop();
}

/* Run one whole probe (six windows, challenger first) with the rates set:
 * the verdict's reason is in `why`; returns the choice after it. */
static const char *probe6(unsigned threads, unsigned ncpu) {
  CHECK_EQ_STR(feed(threads, ncpu), "os_prio");
  CHECK_NOT_NULL(strstr(why, "probing"));
  for (unsigned i = 0; i < 5; i++) {
    feed(threads, ncpu);
    CHECK_NOT_NULL(strstr(why, "probing"));
  }
  const char *v = feed(threads, ncpu);
  CHECK_NOT_NULL(strstr(why, "probe os_prio="));
  return v;
}

/* Long transactions whose commits are mostly updates: os_prio is the
 * default and ser-block the challenger (it must win the whole probe); the
 * roles change back only below half updates (a band), and with them the
 * probe starts over. */
TEST(update_heavy_long_transactions_default_to_os_prio) {
  start();
  rate_os_prio = 10000, rate_ser_block = 2000, rate_other = 2000;
  upd_share = 0.9;
  CHECK_EQ_STR(feed(64, 2), "ser-block"); /* the challenger's window first */
  CHECK_NOT_NULL(strstr(why, "upd=0.90"));
  const char *next[] = {"os_prio", "os_prio", "ser-block", "ser-block", "os_prio"};
  for (unsigned i = 0; i < 5; i++) {
    CHECK_EQ_STR(feed(64, 2), next[i]);
    CHECK_NOT_NULL(strstr(why, "probing"));
  }
  CHECK_EQ_STR(feed(64, 2), "os_prio"); /* the default won the whole probe */
  CHECK_NOT_NULL(strstr(why, "probe ser-block=2000/s os_prio=10000/s"));
  upd_share = 0.6; /* inside the band: the roles stay, so does the hold */
  hold(5, "os_prio", 64, 2);
  upd_share = 0.4; /* below it: ser-block the default again, a new probe */
  expect_feed(64, 2, "os_prio", "probing");
  expect_feed(64, 2, "ser-block", "upd=0.40");
  stop();
}

/* Noisy windows: os_prio at 20000, 6000 and 13000/s, 1.3x ser-block's
 * steady 10000/s on average, but t = 0.74: not a significant lead. The
 * default stays, and the verdict counts as a close one (the long hold). */
TEST(a_lead_within_the_noise_keeps_the_default) {
  start();
  rate_ser_block = 10000, rate_other = 2000;
  feed(64, 2); /* the regime's first window: the probe starts */
  /* windows C D D C C D; the rate set is the window's being judged */
  const double os[] = {20000, 0, 0, 6000, 13000, 0};
  for (unsigned i = 0; i < 5; i++) {
    rate_os_prio = os[i];
    feed(64, 2);
    CHECK_NOT_NULL(strstr(why, "probing"));
  }
  expect_feed(64, 2, "ser-block", "probe os_prio=13000/s ser-block=10000/s t=0.7");
  hold_then_probe(50, "ser-block", "os_prio", 64, 2);
  stop();
}

/* A probe's verdict weighs the regime's earlier probes too (3/4 per probe
 * since): ser-block 1.3x ahead in the first probe and 10 % behind in the
 * second is still ahead over both (os_prio 10571/s, ser-block 11286/s). */
TEST(evidence_carries_over_between_probes) {
  start();
  rate_os_prio = 10000, rate_ser_block = 13000, rate_other = 2000;
  feed(64, 2); /* the regime's first window: the probe starts */
  /* the rest of the first probe, challenger first: C D D C C D */
  const char *next[] = {"ser-block", "ser-block", "os_prio", "os_prio", "ser-block"};
  for (unsigned i = 0; i < 5; i++)
    CHECK_EQ_STR(feed(64, 2), next[i]);
  CHECK_EQ_STR(feed(64, 2), "ser-block"); /* clear: 1.3x */
  hold(12, "ser-block", 64, 2);
  rate_os_prio = 11000, rate_ser_block = 10000;
  CHECK_EQ_STR(probe6(64, 2), "ser-block");
  CHECK_NOT_NULL(strstr(why, "os_prio=10571/s ser-block=11286/s"));
  stop();
}

/* A new regime (here the thread count halved) starts without the old
 * regime's evidence: the same second probe then picks os_prio. */
TEST(a_new_regime_forgets_the_evidence) {
  start();
  rate_os_prio = 10000, rate_ser_block = 13000, rate_other = 2000;
  feed(64, 2);
  for (unsigned i = 0; i < 6; i++)
    feed(64, 2);
  CHECK_EQ_STR(sstm__adaptive_sub_name(cur), "ser-block");
  hold(3, "ser-block", 64, 2);
  rate_os_prio = 11000, rate_ser_block = 10000;
  CHECK_EQ_STR(feed(20, 2), "os_prio"); /* halved during the hold: a new probe */
  CHECK_NOT_NULL(strstr(why, "probing"));
  for (unsigned i = 0; i < 5; i++)
    feed(20, 2);
  expect_feed(20, 2, "os_prio", "probe os_prio=11000/s ser-block=10000/s");
  stop();
}

/* The threads of a program that is starting: a probe whose thread count
 * doubles starts again, so that its windows all see the same threads; a
 * hold whose count halves is probed again. */
TEST(probe_restarts_when_the_threads_double) {
  start();
  rate_os_prio = 10000, rate_ser_block = 2000, rate_other = 2000;
  CHECK_EQ_STR(feed(4, 2), "os_prio");  /* probe: the challenger's window */
  CHECK_EQ_STR(feed(12, 2), "os_prio"); /* 4 -> 12: again from the start */
  CHECK_NOT_NULL(strstr(why, "probing"));
  CHECK_EQ_STR(feed(64, 2), "os_prio");   /* 12 -> 64: again */
  CHECK_EQ_STR(feed(64, 2), "ser-block"); /* the probe goes on at 64 */
  CHECK_EQ_STR(feed(64, 2), "ser-block");
  CHECK_EQ_STR(feed(64, 2), "os_prio");
  expect_feed(64, 2, "os_prio", "probe(early)");
  hold(3, "os_prio", 64, 2);
  CHECK_EQ_STR(feed(20, 2), "os_prio"); /* halved during the hold: a new probe */
  CHECK_NOT_NULL(strstr(why, "probing"));
  CHECK_EQ_STR(feed(20, 2), "ser-block");
  stop();
}

/* The default does not win early: 3x ahead after one window each, the probe
 * goes on to its sixth window, and only then holds the default. */
TEST(the_default_wins_only_a_whole_probe) {
  start();
  rate_os_prio = 2000, rate_ser_block = 6000, rate_other = 2000;
  CHECK_EQ_STR(feed(64, 2), "os_prio");
  const char *next[] = {"ser-block", "ser-block", "os_prio", "os_prio", "ser-block"};
  for (unsigned i = 0; i < 5; i++) {
    CHECK_EQ_STR(feed(64, 2), next[i]);
    CHECK_NOT_NULL(strstr(why, "probing"));
  }
  CHECK_EQ_STR(feed(64, 2), "ser-block"); /* the verdict, after six windows */
  CHECK_NOT_NULL(strstr(why, "probe os_prio="));
  stop();
}

TEST(close_verdict_runs_the_full_probe_and_holds_long) {
  start();
  /* os_prio 5 % ahead: above the 3 % margin, below the 25 % of a clear
   * verdict and far below the 2x of an early one */
  rate_os_prio = 10500, rate_ser_block = 10000, rate_other = 2000;
  CHECK_EQ_STR(feed(64, 2), "os_prio");
  /* windows C D D C C D: the choice for the next one after each */
  const char *next[] = {"ser-block", "ser-block", "os_prio", "os_prio", "ser-block"};
  for (unsigned i = 0; i < 5; i++) {
    CHECK_EQ_STR(feed(64, 2), next[i]);
    CHECK_NOT_NULL(strstr(why, "probing"));
  }
  CHECK_EQ_STR(feed(64, 2), "os_prio"); /* the verdict */
  CHECK_NOT_NULL(strstr(why, "probe os_prio="));
  hold_then_probe(50, "os_prio", "os_prio", 64, 2);
  stop();
}

TEST(challenger_needs_more_than_three_percent) {
  start();
  rate_os_prio = 10200, rate_ser_block = 10000, rate_other = 2000; /* 2 %: not enough */
  CHECK_EQ_STR(feed(64, 2), "os_prio");
  for (unsigned i = 0; i < 5; i++)
    feed(64, 2);
  expect_feed(64, 2, "ser-block", "probe os_prio=");
  stop();
}

TEST(window_length_by_regime) {
  start();
  rate_os_prio = rate_ser_block = rate_other = 10000; /* long at 16 threads on 2 CPUs */
  feed(16, 2);
  CHECK_NOT_NULL(strstr(why, "long-tx"));
  CHECK_EQ_U(sstm__adaptive_window_ns(), 40 * MS);
  CHECK_NOT_NULL(strstr(why, "window=40ms"));
  stop();

  start();
  rate_os_prio = rate_ser_block = rate_other = 10000;
  feed(1000, 2); /* capped */
  CHECK_EQ_U(sstm__adaptive_window_ns(), 160 * MS);
  stop();

  start();
  rate_os_prio = rate_ser_block = rate_other = 5e6; /* 0.4 us per commit: short */
  feed(64, 2);
  CHECK_NOT_NULL(strstr(why, "short-tx"));
  CHECK_EQ_U(sstm__adaptive_window_ns(), 20 * MS);
  stop();

  start();
  rate_os_prio = rate_ser_block = rate_other = 5e6;
  CHECK_EQ_STR(feed(2, 2), "ser-kill"); /* threads <= CPUs: no probe */
  CHECK_MSG(strstr(why, "probing") == NULL, "%s", why);
  CHECK_EQ_U(sstm__adaptive_window_ns(), 20 * MS);
  stop();
}

/* The line between short and long transactions is the time slice / 35:
 * 60 us of CPU time per commit is long under a 1.4 ms slice and short
 * under a 4 ms one (the slice of the thread that calls sstm_init). */
static const char *regime_at_60us(void) {
  start();
  char d[512];
  CHECK_GT_I(sstm_describe(d, sizeof d), 0);
  rate_os_prio = rate_ser_block = rate_other = 2.0 / 60e-6; /* 2 CPUs busy */
  feed(4, 2);
  static char r[16];
  snprintf(r, sizeof r, "%s", strstr(why, "long-tx") ? "long" : "short");
  printf("%s -> %s\n", strstr(d, "long>"), r);
  stop();
  return r;
}

TEST(long_tx_threshold_follows_the_time_slice) {
  uint64_t own = sstm__sched_slice_ns();
  if (own == 0) sstm_test_skip("the kernel reports no time slice (before 6.12)");
  if (!sstm__ext_set_slice(1400000)) sstm_test_skip("cannot set a custom slice");
  CHECK_EQ_STR(regime_at_60us(), "long");
  CHECK_TRUE(sstm__ext_set_slice(4000000));
  CHECK_EQ_U(sstm__sched_slice_ns(), 4000000);
  CHECK_EQ_STR(regime_at_60us(), "short");
  CHECK_TRUE(sstm__ext_set_slice(0)); /* back to the default */
}

/* The long slice is an OS setting of the thread, the state that records it
 * belongs to the descriptor: a thread that detaches gets its own slice
 * back (it kept the 4 ms slice), and releasing the descriptor on another
 * thread leaves that thread's slice alone (it was reset to the default). */
static sstm_desc_t *slice_desc;
static int slice_attempts;
static uint64_t slice_seen[3];
static void restart_once(void *arg) {
  (void)arg;
  if (++slice_attempts == 1) sstm_restart();
}
static void *slice_thread(void *arg) {
  (void)arg;
  CHECK_TRUE(sstm__ext_set_slice(2000000)); /* the thread's own slice */
  slice_seen[0] = sstm__sched_slice_ns();
  CHECK_OK(sstm_desc_attach(slice_desc));
  CHECK_OK(sstm_run(NULL, restart_once, NULL)); /* an abort: the long slice */
  slice_seen[1] = sstm__sched_slice_ns();
  CHECK_EQ_PTR(sstm_desc_detach(), slice_desc);
  slice_seen[2] = sstm__sched_slice_ns();
  return NULL;
}
TEST(long_slice_follows_the_thread_not_the_descriptor) {
  if (sstm__sched_slice_ns() == 0) sstm_test_skip("the kernel reports no time slice (before 6.12)");
  if (!sstm__ext_set_slice(1500000)) sstm_test_skip("cannot set a custom slice");
  start();
  rate_os_prio = rate_ser_block = rate_other = 1000; /* long transactions */
  feed(4, 2);
  CHECK_NOT_NULL(strstr(why, "slice=4ms"));
  CHECK_OK(sstm_desc_create(&slice_desc));
  pthread_t th;
  CHECK_EQ_I(pthread_create(&th, NULL, slice_thread, NULL), 0);
  CHECK_EQ_I(pthread_join(th, NULL), 0);
  CHECK_EQ_U(slice_seen[0], 2000000);
  CHECK_EQ_U(slice_seen[1], 4000000);
  CHECK_EQ_U(slice_seen[2], 2000000);
  CHECK_OK(sstm_desc_destroy(slice_desc));
  CHECK_EQ_U(sstm__sched_slice_ns(), 1500000); /* this thread's, untouched */
  stop();
  CHECK_TRUE(sstm__ext_set_slice(0));
}

/* One window under the current choice with a given abort ratio. */
static const char *feed_apc(unsigned threads, unsigned ncpu, double apc) {
  uint64_t ns = sstm__adaptive_window_ns();
  uint64_t commits = (uint64_t)(rate_of(cur) * (double)ns / 1e9);
  uint64_t updates = (uint64_t)(upd_share * (double)commits);
  cur = sstm__adaptive_feed(ns, commits, updates, (uint64_t)(apc * (double)commits), threads,
                            cpu_of(ns, threads, ncpu), ncpu, why, sizeof why);
  return sstm__adaptive_sub_name(cur);
}

/* Hysteresis on the thread count: leaving the oversubscribed regime takes
 * three windows in a row with threads <= CPUs (entering it, one). */
TEST(leaving_oversubscription_takes_three_windows) {
  start();
  rate_os_prio = rate_ser_block = rate_other = 5e6; /* short transactions */
  feed(64, 2);
  feed(64, 2);
  for (int w = 1; w <= 2; w++) {
    const char *c = feed(2, 2);
    CHECK_MSG(strcmp(c, "ser-kill") != 0, "left after %d window(s): %s", w, why);
    CHECK_NOT_NULL(strstr(why, "over threads=2 busy=2.0/2"));
  }
  expect_feed(2, 2, "ser-kill", "under threads=2 busy=2.0/2");
  CHECK_EQ_STR(feed(64, 2), "yield"); /* back at once: a new probe, challenger first */
  CHECK_NOT_NULL(strstr(why, "probing"));
  stop();
}

/* The line between short and long transactions is a band: a length
 * between half the threshold and the threshold keeps whichever regime is
 * current, however long it lasts. */
TEST(transaction_length_has_a_band) {
  start();
  double L = long_threshold_s();
  CHECK_GT_I((long long)(L * 1e9), 0);
  /* 4 threads on 2 CPUs: 2 busy, len = 2 / rate */
  rate_os_prio = rate_ser_block = rate_other = 2.0 / (2.0 * L);
  feed(4, 2);
  CHECK_NOT_NULL(strstr(why, "long-tx"));
  rate_os_prio = rate_ser_block = rate_other = 2.0 / (0.75 * L);
  for (int w = 0; w < 4; w++) {
    feed(4, 2);
    CHECK_MSG(strstr(why, "long-tx") != NULL, "window %d at 0.75 x the threshold: %s", w, why);
  }
  rate_os_prio = rate_ser_block = rate_other = 2.0 / (0.25 * L);
  feed(4, 2);
  feed(4, 2); /* two windows below the band: short */
  CHECK_NOT_NULL(strstr(why, "short-tx"));
  rate_os_prio = rate_ser_block = rate_other = 2.0 / (0.75 * L);
  for (int w = 0; w < 4; w++) {
    feed(4, 2);
    CHECK_MSG(strstr(why, "short-tx") != NULL, "window %d at 0.75 x the threshold: %s", w, why);
  }
  stop();
}

/* A held yield gives way to ser-block after two windows in a row with more
 * aborts than commits, not after one. */
TEST(held_yield_gives_way_after_two_bad_windows) {
  start();
  rate_other = 5e6, rate_ser_block = 1e6; /* yield (rate_other) 5x ahead */
  CHECK_EQ_STR(feed_apc(64, 2, 0.5), "yield");
  CHECK_EQ_STR(feed_apc(64, 2, 0.5), "ser-block");
  CHECK_EQ_STR(feed_apc(64, 2, 0.5), "ser-block");
  CHECK_EQ_STR(feed_apc(64, 2, 0.5), "yield");
  CHECK_EQ_STR(feed_apc(64, 2, 0.5), "yield");
  CHECK_NOT_NULL(strstr(why, "probe(early)"));
  CHECK_EQ_STR(feed_apc(64, 2, 2.0), "yield"); /* one bad window */
  CHECK_EQ_STR(feed_apc(64, 2, 0.5), "yield"); /* the streak ends */
  CHECK_EQ_STR(feed_apc(64, 2, 2.0), "yield");
  CHECK_EQ_STR(feed_apc(64, 2, 2.0), "ser-block"); /* two in a row */
  CHECK_NOT_NULL(strstr(why, "yield-aborts/commit=2.00"));
  stop();
}

/* Transaction length is CPU time per commit: threads that sleep between
 * short transactions commit rarely, but each commit costs little CPU. */
TEST(transaction_length_is_cpu_time_per_commit) {
  start();
  double L = long_threshold_s();
  /* 2 threads on 2 CPUs committing once per 2 L each: long by the clock */
  rate_os_prio = rate_ser_block = rate_other = 2.0 / (2.0 * L);
  cpu_share = 0.1; /* but only a tenth of the time on a CPU: 0.2 L per commit */
  feed(2, 2);
  CHECK_NOT_NULL(strstr(why, "short-tx"));
  CHECK_EQ_STR(feed(2, 2), "ser-kill");
  cpu_share = 1.0; /* busy all the time: 2 L per commit, long after two windows */
  feed(2, 2);
  feed(2, 2);
  CHECK_NOT_NULL(strstr(why, "long-tx"));
  /* CPU time unknown (a thread could not be read): min(threads, CPUs) busy */
  cpu_share = -1;
  rate_os_prio = rate_ser_block = rate_other = 2.0 / (0.25 * L);
  feed(2, 2);
  feed(2, 2);
  CHECK_NOT_NULL(strstr(why, "short-tx"));
  CHECK_NOT_NULL(strstr(why, "busy=2.0/2"));
  cpu_share = 1.0;
  stop();
}

/* Before any window, the choice comes from the descriptors registered:
 * as many as CPUs is not oversubscribed (ser-kill), one more is
 * (ser-block). */
static unsigned affinity_cpus(void) {
  cpu_set_t set;
  CHECK_EQ_I(sched_getaffinity(0, sizeof set, &set), 0);
  return (unsigned)CPU_COUNT(&set);
}

TEST(start_choice_counts_registered_threads_against_cpus) {
  unsigned ncpu = affinity_cpus();
  if (ncpu > 64) sstm_test_skip("more than 64 CPUs");
  start(); /* one descriptor */
  sstm_desc_t *extra[65];
  for (unsigned i = 1; i < ncpu; i++)
    CHECK_OK(sstm_desc_create(&extra[i]));
  char d[512], want[64];
  CHECK_GT_I(sstm_describe(d, sizeof d), 0);
  CHECK_CONTAINS(d, "current=ser-kill");
  snprintf(want, sizeof want, "start threads=%u<=cpus=%u", ncpu, ncpu);
  CHECK_CONTAINS(d, want);
  CHECK_OK(sstm_desc_create(&extra[0]));
  CHECK_GT_I(sstm_describe(d, sizeof d), 0);
  CHECK_CONTAINS(d, "current=ser-block");
  snprintf(want, sizeof want, "start threads=%u>cpus=%u", ncpu + 1, ncpu);
  CHECK_CONTAINS(d, want);
  for (unsigned i = 0; i < ncpu; i++)
    CHECK_OK(sstm_desc_destroy(extra[i]));
  stop();
}

/* The slice wanted follows the regime, window by window: 100 ms for short
 * transactions while threads outnumber CPUs (entered at once, left after
 * three windows, as the regime) and keep at least 80 % of the CPUs busy
 * (until under 50 %: other programs compete for them), 4 ms for long ones
 * at any count (after two windows, as the length regime), none otherwise;
 * the reason says which. */
TEST(slice_follows_the_regime) {
  start();
  CHECK_EQ_U(sstm__adaptive_slice_want_ns(), 0);    /* no window yet */
  rate_os_prio = rate_ser_block = rate_other = 5e6; /* short transactions */
  expect_feed(2, 2, "ser-kill", "short-tx");
  CHECK_EQ_U(sstm__adaptive_slice_want_ns(), 0);
  CHECK_MSG(strstr(why, "slice=") == NULL, "a slice at 2 threads on 2 CPUs: %s", why);
  feed(64, 2);
  CHECK_EQ_U(sstm__adaptive_slice_want_ns(), 100 * MS);
  CHECK_CONTAINS(why, "slice=100ms");
  /* the CPUs shared with other programs: 0.6 of them busy keeps it, 0.4
   * drops it, 0.6 does not take it again, 0.8 does */
  cpu_share = 0.6;
  feed(64, 2);
  CHECK_EQ_U(sstm__adaptive_slice_want_ns(), 100 * MS);
  cpu_share = 0.4;
  feed(64, 2);
  CHECK_EQ_U(sstm__adaptive_slice_want_ns(), 0);
  CHECK_MSG(strstr(why, "slice=") == NULL, "a slice on shared CPUs: %s", why);
  cpu_share = 0.6;
  feed(64, 2);
  CHECK_EQ_U(sstm__adaptive_slice_want_ns(), 0);
  cpu_share = -1; /* unknown: the last judgement stands */
  feed(64, 2);
  CHECK_EQ_U(sstm__adaptive_slice_want_ns(), 0);
  cpu_share = 0.8;
  feed(64, 2);
  CHECK_EQ_U(sstm__adaptive_slice_want_ns(), 100 * MS);
  cpu_share = 1.0;
  /* long transactions, still oversubscribed: the long-transaction slice
   * once the length regime has changed (two windows) */
  double L = long_threshold_s();
  rate_os_prio = rate_ser_block = rate_other = 2.0 / (4.0 * L);
  feed(64, 2);
  CHECK_EQ_U(sstm__adaptive_slice_want_ns(), 100 * MS);
  feed(64, 2);
  CHECK_CONTAINS(why, "long-tx");
  CHECK_CONTAINS(why, "slice=4ms");
  CHECK_EQ_U(sstm__adaptive_slice_want_ns(), 4 * MS);
  /* short again, at 2 threads: over for two more windows (the 100 ms
   * slice), then none */
  rate_os_prio = rate_ser_block = rate_other = 5e6;
  feed(2, 2);
  feed(2, 2);
  CHECK_CONTAINS(why, "over threads=2");
  CHECK_EQ_U(sstm__adaptive_slice_want_ns(), 100 * MS);
  feed(2, 2);
  CHECK_CONTAINS(why, "under threads=2");
  CHECK_EQ_U(sstm__adaptive_slice_want_ns(), 0);
  stop();
}

/* A thread that attaches while a slice is wanted runs with it, and has its
 * own back when its descriptor leaves it; a thread attached before keeps
 * its own until its next abort. Before any window nothing is wanted, even
 * with more descriptors than CPUs. */
static uint64_t thread_slice_in, thread_slice_out;
static int thread_rc_in, thread_rc_out;
static void *attach_thread(void *arg) {
  (void)arg;
  thread_rc_in = sstm_thread_init();
  thread_slice_in = sstm__sched_slice_ns();
  thread_rc_out = sstm_thread_exit();
  thread_slice_out = sstm__sched_slice_ns();
  return NULL;
}

static void attach_one(void) {
  pthread_t t;
  CHECK_EQ_I(pthread_create(&t, NULL, attach_thread, NULL), 0);
  CHECK_EQ_I(pthread_join(t, NULL), 0);
  CHECK_OK(thread_rc_in);
  CHECK_OK(thread_rc_out);
}

TEST(attaching_thread_takes_the_slice_wanted) {
  unsigned ncpu = affinity_cpus();
  if (ncpu > 64) sstm_test_skip("more than 64 CPUs");
  uint64_t own = sstm__sched_slice_ns();
  if (own == 0) sstm_test_skip("the kernel reports no time slice (before 6.12)");
  if (!sstm__ext_set_slice(0)) sstm_test_skip("cannot set a custom slice");
  uint64_t dflt = sstm__sched_slice_ns(); /* what a new thread inherits */
  start();
  sstm_desc_t *extra[65];
  for (unsigned i = 0; i < ncpu; i++)
    CHECK_OK(sstm_desc_create(&extra[i]));
  char d[512];
  CHECK_GT_I(sstm_describe(d, sizeof d), 0);
  CHECK_CONTAINS(d, "current=ser-block");        /* oversubscribed from the start ... */
  CHECK_EQ_U(sstm__adaptive_slice_want_ns(), 0); /* ... but no slice yet */
  attach_one();
  CHECK_EQ_U(thread_slice_in, dflt);
  rate_os_prio = rate_ser_block = rate_other = 5e6; /* short, 64 threads, CPUs busy */
  feed(64, 2);
  CHECK_EQ_U(sstm__adaptive_slice_want_ns(), 100 * MS);
  attach_one();
  CHECK_EQ_U(thread_slice_in, 100 * MS);
  CHECK_EQ_U(thread_slice_out, dflt);
  CHECK_EQ_U(sstm__sched_slice_ns(), dflt); /* this thread attached before: untouched */
  for (unsigned i = 0; i < ncpu; i++)
    CHECK_OK(sstm_desc_destroy(extra[i]));
  stop();
  if (own != dflt) CHECK_TRUE(sstm__ext_set_slice(own)); /* as the test found it */
}

/* The admission gate's hook (cm/admit.c's gate, run by adaptive through
 * the engine's run-time admission hook, sstm__cm_admit_hook): off at one
 * thread, with or without aborts, so that adaptive's begins keep the
 * frameless path; wanted once a window shows more threads than CPUs, short
 * transactions and frequent conflicts; a thread switches it on at its next
 * abort (a commit before that leaves it off), and off at its first begin
 * after the regime ends. Windows are fed by hand: no timing. */
static long gate_word;
static int gate_restarts;
static void gate_tx(void *arg) {
  (void)arg;
  SSTM_STORE(gate_word, SSTM_LOAD(gate_word) + 1);
  if (gate_restarts > 0) {
    gate_restarts--;
    sstm_restart(); /* an abort: adaptive's on_abort runs */
  }
}
static void gate_run(int restarts) {
  gate_restarts = restarts;
  CHECK_OK(sstm_run(NULL, gate_tx, NULL));
}
static bool gate_described_on(void) {
  char d[1024];
  CHECK_GT_I(sstm_describe(d, sizeof d), 0);
  return strstr(d, "gate=on") != NULL;
}

TEST(gate_hook_off_at_one_thread_and_on_in_the_regime) {
  start();
  sstm_desc_t *me = sstm_self();
  CHECK_NOT_NULL(me);
  CHECK_FALSE(sstm__cm_admit_hook_on(me));
  gate_run(0);
  gate_run(2);
  CHECK_FALSE(sstm__cm_admit_hook_on(me));          /* no window yet: nothing wanted */
  rate_os_prio = rate_ser_block = rate_other = 5e6; /* short transactions */
  feed(1, 2);                                       /* one thread, aborts 1 per 2 commits */
  CHECK_MSG(strstr(why, " gate") == NULL, "a gate at one thread: %s", why);
  CHECK_FALSE(gate_described_on());
  gate_run(1);
  gate_run(0);
  CHECK_FALSE(sstm__cm_admit_hook_on(me));
  /* 64 threads on 2 CPUs, short transactions, an abort per 2 commits */
  feed(64, 2);
  CHECK_CONTAINS(why, " gate");
  CHECK_TRUE(gate_described_on());
  gate_run(0);
  CHECK_FALSE(sstm__cm_admit_hook_on(me)); /* switched at the next abort, not a begin */
  gate_run(1);
  CHECK_TRUE(sstm__cm_admit_hook_on(me));
  gate_run(0); /* admitted at once: one thread, a place per CPU */
  gate_run(1);
  CHECK_TRUE(sstm__cm_admit_hook_on(me));
  /* calm windows keep it (admit-slice's rule) */
  uint64_t ns = sstm__adaptive_window_ns();
  sstm__adaptive_feed(ns, 100000, 0, 0, 64, cpu_of(ns, 64, 2), 2, why, sizeof why);
  CHECK_TRUE(gate_described_on());
  /* long transactions: not the gate's regime, even oversubscribed */
  double L = long_threshold_s();
  rate_os_prio = rate_ser_block = rate_other = 2.0 / (4.0 * L);
  feed(64, 2);
  feed(64, 2);
  CHECK_CONTAINS(why, "long-tx");
  CHECK_FALSE(gate_described_on());
  gate_run(0); /* the hook, at this begin, switches itself off */
  CHECK_FALSE(sstm__cm_admit_hook_on(me));
  /* short again, oversubscribed: wanted again, on at the next abort */
  rate_os_prio = rate_ser_block = rate_other = 5e6;
  feed(64, 2);
  feed(64, 2);
  CHECK_TRUE(gate_described_on());
  gate_run(1);
  CHECK_TRUE(sstm__cm_admit_hook_on(me));
  /* back to one thread: still "over" for two more windows, but with no
   * more threads than places there is nothing to gate */
  feed(1, 2);
  CHECK_CONTAINS(why, "over threads=1");
  CHECK_FALSE(gate_described_on());
  gate_run(0);
  CHECK_FALSE(sstm__cm_admit_hook_on(me));
  CHECK_EQ_I((int)gate_word, 11); /* one per commit: a restart undoes its increment */
  stop();
}

/* What sstm_describe says of the policy (a static buffer). */
static const char *described(void) {
  static char d[1024];
  CHECK_GT_I(sstm_describe(d, sizeof d), 0);
  return d;
}

/* One window at `with` commits per second if the gate admits in it, else
 * at `without`, whatever the sub-policy; returns the next choice. */
static const char *feed_gate(double with, double without) {
  rate_other = rate_ser_block = rate_os_prio = gate_described_on() ? with : without;
  return feed(64, 2);
}

/* n windows (feed_gate); the gate admits after each of them as `on` says. */
static void gate_windows(unsigned n, double with, double without, bool on) {
  for (unsigned i = 0; i < n; i++) {
    feed_gate(with, without);
    CHECK_MSG(gate_described_on() == on, "window %u of %u: gate %s, expected %s: %s", i + 1, n,
              on ? "off" : "on", on ? "on" : "off", described());
  }
}

/* The gate's idle CPUs (gate_idle_allows): 10 windows of the gate with
 * 15 % of the CPUs' time idle start a trial of 10 windows without it; the
 * faster is held (without it, 50 windows; with it, 50), then it is judged
 * again; 2 % idle keeps it without a trial. The threads' hooks go off at
 * their next begin while the gate is off, and abort do not switch them on.
 * Windows, their idle time and rates fed by hand: no timing. */
TEST(a_gate_that_leaves_cpus_idle_is_tried_against_none) {
  start();
  sstm_desc_t *me = sstm_self();
  CHECK_NOT_NULL(me);
  cpu_share = 0.4; /* no long slice: not what this test is about */
  sstm__adaptive_feed_idle(0.15);
  gate_windows(1, 5e6, 10e6, true); /* the regime's first window turns it on */
  gate_run(1);
  CHECK_TRUE(sstm__cm_admit_hook_on(me));
  gate_windows(9, 5e6, 10e6, true);
  CHECK_MSG(strstr(described(), "gate-idle") == NULL, "judged before 10 windows: %s", described());
  gate_windows(1, 5e6, 10e6, false); /* the tenth: 15 % idle, the trial */
  CHECK_CONTAINS(described(), "gate=off gate-idle=0.15 long");
  gate_run(0); /* the hook switches itself off at this begin */
  CHECK_FALSE(sstm__cm_admit_hook_on(me));
  gate_windows(9, 5e6, 10e6, false);
  gate_windows(1, 5e6, 10e6, false); /* the trial's end: without it, 2x */
  CHECK_CONTAINS(described(), "gate=off gate-idle=0.15 with=5000000/s without=10000000/s");
  gate_run(1); /* held off: an abort does not switch the hook on */
  CHECK_FALSE(sstm__cm_admit_hook_on(me));
  gate_windows(49, 5e6, 10e6, false);
  /* the hold's end: the gate admits again, to be judged; now it is the
   * faster one, and is held after its trial */
  gate_windows(1, 10e6, 5e6, true);
  gate_windows(9, 10e6, 5e6, true);
  gate_windows(1, 10e6, 5e6, false); /* 15 % idle again: the trial */
  gate_windows(9, 10e6, 5e6, false);
  gate_windows(1, 10e6, 5e6, true);
  CHECK_CONTAINS(described(), "gate=on gate-idle=0.15 with=10000000/s without=5000000/s");
  gate_run(1);
  CHECK_TRUE(sstm__cm_admit_hook_on(me));
  gate_windows(49, 10e6, 5e6, true);
  /* judged again with 2 % idle: no trial */
  sstm__adaptive_feed_idle(0.02);
  gate_windows(1 + 10 + 10, 10e6, 5e6, true);
  CHECK_CONTAINS(described(), "gate=on gate-idle=0.02 with=10000000/s without=5000000/s");
  sstm__adaptive_feed_idle(-1.0);
  cpu_share = 1.0;
  stop();
}

/* A thread that holds a place and loses a conflict gives the place back
 * before it sleeps behind the winner (ser-block, the sub-policy chosen
 * here): a place is for a thread that runs transactions. One place, a
 * slice that never ends, no bound on the gate or on the wait: A holds the
 * place and meets the lock of B (a thread that never aborted, so its
 * begins are not gated); C can be admitted only if A gave the place back,
 * and only C lets B commit. Kept, the place would leave all three asleep
 * for ever, and the watchdog fails the test. Counts and events, no
 * timing. */
static long held_word;
static _Atomic int held_b_locked, held_release, held_c_in;
static int held_c_restarts;
static void held_b_tx(void *arg) {
  (void)arg;
  SSTM_STORE(held_word, 1L); /* the stripe's lock, until B commits */
  atomic_store_explicit(&held_b_locked, 1, memory_order_seq_cst);
  while (!atomic_load_explicit(&held_release, memory_order_seq_cst))
    sched_yield();
}
static void *held_b(void *arg) {
  (void)arg;
  CHECK_OK(sstm_thread_init());
  CHECK_OK(sstm_run(NULL, held_b_tx, NULL));
  CHECK_OK(sstm_thread_exit());
  return NULL;
}
static void held_c_tx(void *arg) {
  (void)arg;
  if (held_c_restarts > 0) {
    held_c_restarts--;
    sstm_restart(); /* its hook on, at its abort in the regime */
  }
}
static void *held_c(void *arg) {
  (void)arg;
  CHECK_OK(sstm_thread_init());
  held_c_restarts = 1;
  CHECK_OK(sstm_run(NULL, held_c_tx, NULL)); /* the restart was admitted */
  atomic_store_explicit(&held_c_in, 1, memory_order_seq_cst);
  atomic_store_explicit(&held_release, 1, memory_order_seq_cst);
  CHECK_OK(sstm_thread_exit()); /* and gives its place back */
  return NULL;
}
static long held_seen;
static void held_a_tx(void *arg) {
  (void)arg;
  held_seen = SSTM_LOAD(held_word);
}

TEST(a_holder_gives_its_place_back_before_it_sleeps_behind_a_winner) {
  start();
  sstm_desc_t *me = sstm_self();
  CHECK_NOT_NULL(me);
  /* 64 threads on 2 CPUs, short transactions, frequent aborts, ser-block
   * well ahead of yield: the gate and ser-block, held */
  rate_ser_block = rate_os_prio = 5e6;
  rate_other = 1e6;
  cpu_share = 0.4; /* no long slice: not what this test is about */
  const char *c = "";
  for (int i = 0; i < 20 && (strcmp(c, "ser-block") != 0 || strstr(why, "probing")); i++)
    c = feed(64, 2);
  CHECK_EQ_STR(c, "ser-block");
  CHECK_TRUE(gate_described_on());
  sstm__admit_pin(true, 1, 0, UINT64_MAX); /* one place, no bound, no slice end */
  uint64_t bound = atomic_load_explicit(&sstm__ser_wait_max_ns, memory_order_relaxed);
  atomic_store_explicit(&sstm__ser_wait_max_ns, 0, memory_order_relaxed);
  gate_run(1); /* A: the hook on at the abort, the restart admitted */
  CHECK_TRUE(sstm__cm_admit_hook_on(me));
  held_word = 0;
  held_seen = -1;
  atomic_store_explicit(&held_b_locked, 0, memory_order_seq_cst);
  atomic_store_explicit(&held_release, 0, memory_order_seq_cst);
  atomic_store_explicit(&held_c_in, 0, memory_order_seq_cst);
  pthread_t b, cth;
  CHECK_EQ_I(pthread_create(&b, NULL, held_b, NULL), 0);
  while (!atomic_load_explicit(&held_b_locked, memory_order_seq_cst))
    sched_yield();
  CHECK_EQ_I(pthread_create(&cth, NULL, held_c, NULL), 0);
  CHECK_OK(sstm_run(NULL, held_a_tx, NULL)); /* read-locked: gives back, waits for B */
  CHECK_EQ_I(pthread_join(cth, NULL), 0);
  CHECK_EQ_I(pthread_join(b, NULL), 0);
  CHECK_EQ_I((int)held_seen, 1);
  CHECK_EQ_I(atomic_load_explicit(&held_c_in, memory_order_seq_cst), 1);
  uint64_t w, t, r;
  sstm__admit_gate_counts(&w, &t, &r);
  CHECK_EQ_U(t, 0); /* no bound: nobody left the gate but by a place */
  CHECK_EQ_U(r, 0); /* no slice ends: nothing reclaimed */
  atomic_store_explicit(&sstm__ser_wait_max_ns, bound, memory_order_relaxed);
  cpu_share = 1.0;
  stop();
}

SSTM_TEST_MAIN()

/* The longest line: adaptive's describe() line is never longer than
 * sstm__adaptive_line_max(), which, with the part "+ext" appends, fits
 * the state table's policy field whole (a longer line is cut there and
 * sstm-top shows it ending in "..."). Every number the line shows is
 * driven past its clamp (threads, CPUs, CPUs kept busy, CPU time per
 * commit, the update share, the probe's and the gate's commit rates,
 * aborts per commit), and every line on the way is checked. */
static const char *const clamped[] = {
    "threads=99999 ",          "busy=99999.0/99999",
    "-tx=999999999",           "upd=1.00",
    "9999999999/s t=",         "with=9999999999/s without=9999999999/s",
    "short-tx=999999999.00us", "yield-aborts/commit=9999.00",
};
static bool clamped_seen[sizeof clamped / sizeof clamped[0]];
static size_t longest_seen;

/* adaptive's line now, checked against the bound. */
static void check_line(void) {
  char d[1024];
  const sstm_cm_ops_t *ops = sstm_cm_find("adaptive");
  CHECK_NOT_NULL(ops);
  int n = ops->describe(d, sizeof d);
  CHECK_GT_I(n, 0);
  CHECK_LT_I(n, (long long)sizeof d);
  CHECK_MSG((size_t)n <= sstm__adaptive_line_max(), "%d characters, the bound is %zu: %s", n,
            sstm__adaptive_line_max(), d);
  if ((size_t)n > longest_seen) longest_seen = (size_t)n;
  for (size_t i = 0; i < sizeof clamped / sizeof clamped[0]; i++)
    if (strstr(d, clamped[i])) clamped_seen[i] = true;
}

TEST(the_longest_line_fits_the_state_table) {
  CHECK_LT_U(sstm__adaptive_line_max() + strlen(SSTM__CM_EXT_LONGEST),
             sizeof(((sstm_stt_header_t *)0)->cm_info));
  /* the bound counts the longest sub-policy name, "ser-block" */
  for (int i = 0; i < 4; i++)
    CHECK_LE_U(strlen(sstm__adaptive_sub_name(i)), strlen("ser-block"));
  /* Short transactions, 10^5 threads on 2 CPUs, the gate on, 15 % of the
   * CPUs idle: the gate's trial and the probe at 10^13 and 2x10^13 commits
   * per second. */
  start();
  sstm__adaptive_feed_idle(0.15);
  for (int i = 0; i < 30; i++) {
    rate_other = rate_ser_block = rate_os_prio = gate_described_on() ? 1e13 : 2e13;
    feed(100000, 2);
    check_line();
  }
  sstm__adaptive_feed_idle(-1.0);
  stop();
  /* Long transactions, 10^8 threads on 2x10^8 CPUs (all busy), every
   * commit an update twice over: CPU time per commit 4 and 8 times the
   * threshold at commit rates past the clamp, then a window of one commit
   * (its CPU time per commit, 2x10^15 ns, past the clamp). */
  start();
  double L = long_threshold_s();
  unsigned T = 100000000u;
  upd_share = 2.0;
  rate_os_prio = rate_other = T / (4.0 * L);
  rate_ser_block = T / (8.0 * L);
  for (int i = 0; i < 12; i++) {
    feed(T, 2 * T);
    check_line();
  }
  CHECK_CONTAINS(why, "long-tx");
  uint64_t ns = sstm__adaptive_window_ns();
  sstm__adaptive_feed(ns, 1, 2, 1, T, cpu_of(ns, T, 2 * T), 2 * T, why, sizeof why);
  check_line();
  stop();
  /* A held yield, then two windows of 10^6 aborts per commit, the second
   * 1000 s long with one commit (2000 s of CPU time for it: still short
   * transactions for that one window, the length regime's hysteresis). */
  start();
  rate_other = 5e6, rate_ser_block = 1e6;
  for (int i = 0; i < 5; i++) {
    feed_apc(64, 2, 0.5);
    check_line();
  }
  CHECK_EQ_STR(sstm__adaptive_sub_name(cur), "yield");
  feed_apc(64, 2, 1e6);
  check_line();
  sstm__adaptive_feed(1000000 * MS, 1, 0, 1000000, 64, 2000000 * MS, 2, why, sizeof why);
  check_line();
  CHECK_CONTAINS(why, "yield-aborts");
  stop();
  for (size_t i = 0; i < sizeof clamped / sizeof clamped[0]; i++)
    CHECK_MSG(clamped_seen[i], "no line showed \"%s\"", clamped[i]);
  printf("longest line %zu characters, bound %zu, with +ext's part %zu, the field %zu\n",
         longest_seen, sstm__adaptive_line_max(),
         sstm__adaptive_line_max() + strlen(SSTM__CM_EXT_LONGEST),
         sizeof(((sstm_stt_header_t *)0)->cm_info));
}
