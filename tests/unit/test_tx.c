/* SPDX-License-Identifier: MIT */
/* Unit tests: transaction semantics on one thread: read-your-own-writes,
 * rollback (restart, cancel), flat nesting, user callbacks, hooks (and
 * hooks changed while other threads run), state queries, irrevocability
 * basics. */
#define _GNU_SOURCE
#include <fenv.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "../common/txhelp.h"

static uint64_t x, y, z;

TEST(read_your_own_writes) {
  sstm_test_init();
  x = 1;
  y = 2;
  SSTM_ATOMIC_BEGIN(NULL)
    CHECK_EQ_U(sstm_load_u64(&x), 1);
    sstm_store_u64(&x, 10);
    CHECK_EQ_U(sstm_load_u64(&x), 10);
    sstm_store_u64(&x, 11);
    CHECK_EQ_U(sstm_load_u64(&x), 11);
    sstm_store_u64(&y, sstm_load_u64(&x) + sstm_load_u64(&y));
    CHECK_EQ_U(sstm_load_u64(&y), 13);
    CHECK_EQ_U(x, 1); /* memory untouched until commit */
    CHECK_EQ_U(y, 2);
  SSTM_ATOMIC_END();
  CHECK_EQ_U(x, 11);
  CHECK_EQ_U(y, 13);
  sstm_test_fini();
}

static volatile int attempts;

TEST(restart_discards_writes) {
  sstm_test_init();
  x = 5;
  y = 0;
  attempts = 0;
  SSTM_ATOMIC_BEGIN(NULL)
    attempts++;
    CHECK_EQ_U(sstm_load_u64(&x), 5); /* the first attempt's write is gone */
    sstm_store_u64(&x, 100 + (uint64_t)attempts);
    if (attempts == 1) sstm_restart();
    sstm_store_u64(&y, (uint64_t)attempts);
  SSTM_ATOMIC_END();
  CHECK_EQ_I(attempts, 2);
  CHECK_EQ_U(x, 102);
  CHECK_EQ_U(y, 2);
  sstm_stats_t s;
  CHECK_OK(sstm_stats_get(sstm_self(), &s));
  CHECK_EQ_U(s.aborts[SSTM_ABORT_USER_RETRY], 1);
  CHECK_EQ_U(s.retries, 1);
  CHECK_EQ_U(s.commits_update, 1);
  sstm_test_fini();
}

static int fn_calls;
static void fn_restart_once(void *arg) {
  uint64_t *p = arg;
  fn_calls++;
  CHECK_EQ_U(sstm_load_u64(p), 0);
  sstm_store_u64(p, (uint64_t)fn_calls);
  if (fn_calls == 1) sstm_restart();
}

TEST(restart_in_sstm_run) {
  sstm_test_init();
  x = 0;
  fn_calls = 0;
  CHECK_OK(sstm_run(NULL, fn_restart_once, &x));
  CHECK_EQ_I(fn_calls, 2);
  CHECK_EQ_U(x, 2);
  sstm_test_fini();
}

static void fn_cancel(void *arg) {
  uint64_t *p = arg;
  fn_calls++;
  sstm_store_u64(p, 999);
  sstm_cancel();
}

TEST(cancel_discards_writes) {
  sstm_test_init();
  x = 7;
  fn_calls = 0;
  CHECK_RC(sstm_run(NULL, fn_cancel, &x), SSTM_ECANCELED);
  CHECK_EQ_I(fn_calls, 1); /* not retried */
  CHECK_EQ_U(x, 7);
  CHECK_FALSE(sstm_in_tx());
  /* inline form: control goes to the end of the block */
  static volatile int after_cancel;
  after_cancel = 0;
  attempts = 0;
  SSTM_ATOMIC_BEGIN(NULL)
    attempts++;
    sstm_store_u64(&x, 1234);
    sstm_cancel();
    after_cancel = 1;
  SSTM_ATOMIC_END();
  CHECK_EQ_I(attempts, 1);
  CHECK_EQ_I(after_cancel, 0);
  CHECK_EQ_U(x, 7);
  CHECK_FALSE(sstm_in_tx());
  sstm_stats_t s;
  CHECK_OK(sstm_stats_get(sstm_self(), &s));
  CHECK_EQ_U(s.aborts[SSTM_ABORT_USER_CANCEL], 2);
  CHECK_EQ_U(s.commits_update + s.commits_ro, 0);
  /* the descriptor is usable afterwards */
  tx_store_u64(&x, 8);
  CHECK_EQ_U(x, 8);
  sstm_test_fini();
}

static void inner_store(void *arg) {
  (void)arg;
  CHECK_TRUE(sstm_in_tx());
  sstm_store_u64(&y, 20);
  CHECK_EQ_U(sstm_load_u64(&x), 10); /* sees the outer write */
}
/* A restart restores what longjmp restores and, like longjmp, not the
 * floating-point environment (schedstm/tx.h): the retry runs with the
 * rounding mode the aborted attempt set, unless an abort action puts it
 * back. */
static volatile int fp_seen[2];
static int fp_back;
static void round_back(void *arg) { (void)fesetround(*(const int *)arg); }
TEST(restart_leaves_the_fp_environment_as_longjmp_does) {
  sstm_test_init();
  const int orig = fegetround();
  CHECK_NE_I(orig, FE_UPWARD);
  CHECK_NE_I(orig, FE_DOWNWARD);
  attempts = 0;
  SSTM_ATOMIC_BEGIN(NULL)
    fp_seen[attempts] = fegetround();
    attempts++;
    if (attempts == 1) {
      CHECK_EQ_I(fesetround(FE_UPWARD), 0);
      sstm_restart();
    }
  SSTM_ATOMIC_END();
  CHECK_EQ_I(attempts, 2);
  CHECK_EQ_I(fp_seen[0], orig);
  CHECK_EQ_I(fp_seen[1], FE_UPWARD);
  CHECK_EQ_I(fesetround(orig), 0);

  attempts = 0;
  fp_back = orig;
  SSTM_ATOMIC_BEGIN(NULL)
    fp_seen[attempts] = fegetround();
    attempts++;
    if (attempts == 1) {
      CHECK_OK(sstm_on_abort(round_back, &fp_back));
      CHECK_EQ_I(fesetround(FE_DOWNWARD), 0);
      sstm_restart();
    }
  SSTM_ATOMIC_END();
  CHECK_EQ_I(attempts, 2);
  CHECK_EQ_I(fp_seen[1], orig);
  CHECK_EQ_I(fegetround(), orig);
  sstm_test_fini();
}

static void inner_cancel(void *arg) {
  (void)arg;
  sstm_store_u64(&z, 30);
  sstm_cancel();
}

TEST(flat_nesting) {
  sstm_test_init();
  x = y = z = 0;
  uint64_t outer_txid = 0;
  SSTM_ATOMIC_BEGIN(NULL)
    outer_txid = sstm_txid();
    CHECK_NE_U(outer_txid, 0);
    sstm_store_u64(&x, 10);
    CHECK_OK(sstm_run(NULL, inner_store, NULL));
    CHECK_TRUE(sstm_in_tx()); /* inner commit only left one level */
    CHECK_EQ_U(sstm_txid(), outer_txid);
    CHECK_EQ_U(y, 0); /* inner commit published nothing */
    CHECK_EQ_U(sstm_load_u64(&y), 20);
    SSTM_ATOMIC_BEGIN(NULL)
      CHECK_EQ_U(sstm_txid(), outer_txid);
      sstm_store_u64(&z, 5);
    SSTM_ATOMIC_END();
    CHECK_TRUE(sstm_in_tx());
    CHECK_EQ_U(z, 0);
  SSTM_ATOMIC_END();
  CHECK_FALSE(sstm_in_tx());
  CHECK_EQ_U(x, 10);
  CHECK_EQ_U(y, 20);
  CHECK_EQ_U(z, 5);

  /* an inner restart restarts the outermost transaction */
  attempts = 0;
  static volatile int outer_runs;
  outer_runs = 0;
  x = y = z = 0;
  SSTM_ATOMIC_BEGIN(NULL)
    outer_runs++;
    sstm_store_u64(&x, 1);
    SSTM_ATOMIC_BEGIN(NULL)
      attempts++;
      CHECK_EQ_U(sstm_load_u64(&y), 0);
      sstm_store_u64(&y, 2);
      if (attempts == 1) sstm_restart();
    SSTM_ATOMIC_END();
  SSTM_ATOMIC_END();
  CHECK_EQ_I(outer_runs, 2);
  CHECK_EQ_I(attempts, 2);
  CHECK_EQ_U(x, 1);
  CHECK_EQ_U(y, 2);

  /* an inner cancel abandons the whole transaction, outer writes included */
  x = y = z = 0;
  static volatile int reached_end;
  reached_end = 0;
  SSTM_ATOMIC_BEGIN(NULL)
    sstm_store_u64(&x, 1);
    (void)sstm_run(NULL, inner_cancel, NULL);
    reached_end = 1;
  SSTM_ATOMIC_END();
  CHECK_EQ_I(reached_end, 0);
  CHECK_FALSE(sstm_in_tx());
  CHECK_EQ_U(x, 0);
  CHECK_EQ_U(z, 0);
  sstm_test_fini();
}

/* An inner block that asks to be irrevocable (attr.irrevocable) makes the
 * transaction irrevocable, as sstm_become_irrevocable() would: its body may
 * do what cannot be undone, so running it revocable because an outer block
 * happened to be open would be wrong. An outer attempt that has accessed
 * memory restarts once, irrevocable from its begin (reason irrevocable);
 * the restart rule of an irrevocable transaction then applies to the whole
 * one. Through sstm_run and the inline form, under an update and a
 * read-only outer block. */
static int irr_inner_saw;
static void inner_irrevocable(void *arg) {
  (void)arg;
  irr_inner_saw = sstm_is_irrevocable();
  sstm_store_u64(&y, sstm_load_u64(&y) + 1);
}

TEST(nested_irrevocable_attribute_makes_the_transaction_irrevocable) {
  sstm_test_init();
  sstm_attr_t irr = {.irrevocable = true};
  sstm_attr_t ro = {.read_only = true};
  for (int round = 0; round < 2; round++) {
    x = y = 0;
    irr_inner_saw = 0;
    static volatile int outer_runs;
    outer_runs = 0;
    sstm_stats_t before, after;
    CHECK_OK(sstm_stats_get(sstm_self(), &before));
    SSTM_ATOMIC_BEGIN(round == 0 ? NULL : &ro)
      outer_runs++;
      (void)sstm_load_u64(&x);
      CHECK_OK(sstm_run(&irr, inner_irrevocable, NULL));
      CHECK_TRUE(sstm_is_irrevocable()); /* the whole transaction is */
      sstm_store_u64(&x, 1);
    SSTM_ATOMIC_END();
    CHECK_OK(sstm_stats_get(sstm_self(), &after));
    CHECK_EQ_I(irr_inner_saw, 1);
    CHECK_EQ_I(outer_runs, 2);
    CHECK_EQ_U(after.aborts[SSTM_ABORT_IRREVOCABLE] - before.aborts[SSTM_ABORT_IRREVOCABLE], 1);
    CHECK_EQ_U(after.commits_irrevocable - before.commits_irrevocable, 1);
    CHECK_EQ_U(x, 1);
    CHECK_EQ_U(y, 1);
  }
  /* the inline form, with nothing accessed yet: no restart */
  static volatile int runs;
  runs = 0;
  SSTM_ATOMIC_BEGIN(NULL)
    runs++;
    SSTM_ATOMIC_BEGIN(&irr)
      CHECK_TRUE(sstm_is_irrevocable());
      sstm_store_u64(&z, 7);
    SSTM_ATOMIC_END();
    CHECK_TRUE(sstm_is_irrevocable());
  SSTM_ATOMIC_END();
  CHECK_EQ_I(runs, 1);
  CHECK_EQ_U(z, 7);
  sstm_test_fini();
}

/* ---- user callbacks ----------------------------------------------------- */

static char seq[64];
static int nseq;
static void rec_cb(void *arg) {
  CHECK_FALSE(sstm_in_tx()); /* run outside the transaction */
  CHECK_LT_I(nseq, (int)sizeof seq - 1);
  seq[nseq++] = (char)(uintptr_t)arg;
  seq[nseq] = 0;
}

TEST(on_commit_on_abort_order) {
  sstm_test_init();
  nseq = 0;
  seq[0] = 0;
  attempts = 0;
  SSTM_ATOMIC_BEGIN(NULL)
    attempts++;
    if (attempts == 1) {
      CHECK_OK(sstm_on_commit(rec_cb, (void *)'c'));
      CHECK_OK(sstm_on_abort(rec_cb, (void *)'A'));
      CHECK_OK(sstm_on_commit(rec_cb, (void *)'d'));
      CHECK_OK(sstm_on_abort(rec_cb, (void *)'B'));
      CHECK_OK(sstm_on_abort(rec_cb, (void *)'C'));
      sstm_restart();
    }
    CHECK_EQ_STR(seq, "ABC"); /* aborted attempt's on_abort ran, in order */
    CHECK_OK(sstm_on_commit(rec_cb, (void *)'x'));
    CHECK_OK(sstm_on_abort(rec_cb, (void *)'Z'));
    CHECK_OK(sstm_on_commit(rec_cb, (void *)'y'));
    sstm_store_u64(&x, 1);
    CHECK_EQ_STR(seq, "ABC"); /* nothing runs before commit */
  SSTM_ATOMIC_END();
  /* the aborted attempt's on_commit actions were discarded; the committed
   * attempt's on_abort ones did not run */
  CHECK_EQ_STR(seq, "ABCxy");
  CHECK_RC(sstm_on_commit(rec_cb, (void *)'q'), SSTM_ENOTX);
  CHECK_RC(sstm_on_abort(rec_cb, (void *)'q'), SSTM_ENOTX);

  /* cancel rolls back: on_abort actions run, on_commit ones do not */
  nseq = 0;
  seq[0] = 0;
  SSTM_ATOMIC_BEGIN(NULL)
    CHECK_OK(sstm_on_commit(rec_cb, (void *)'n'));
    CHECK_OK(sstm_on_abort(rec_cb, (void *)'K'));
    sstm_cancel();
  SSTM_ATOMIC_END();
  CHECK_EQ_STR(seq, "K");

  /* nested registration belongs to the outer transaction */
  nseq = 0;
  seq[0] = 0;
  SSTM_ATOMIC_BEGIN(NULL)
    CHECK_OK(sstm_on_commit(rec_cb, (void *)'1'));
    SSTM_ATOMIC_BEGIN(NULL)
      CHECK_OK(sstm_on_commit(rec_cb, (void *)'2'));
    SSTM_ATOMIC_END();
    CHECK_EQ_STR(seq, ""); /* inner commit runs nothing */
    CHECK_OK(sstm_on_commit(rec_cb, (void *)'3'));
  SSTM_ATOMIC_END();
  CHECK_EQ_STR(seq, "123");

  /* many callbacks (past any small inline array) keep their order */
  nseq = 0;
  seq[0] = 0;
  SSTM_ATOMIC_BEGIN(NULL)
    for (int i = 0; i < 40; i++)
      CHECK_OK(sstm_on_commit(rec_cb, (void *)(uintptr_t)('0' + i)));
  SSTM_ATOMIC_END();
  CHECK_EQ_I(nseq, 40);
  for (int i = 0; i < 40; i++)
    CHECK_EQ_I(seq[i], '0' + i);
  sstm_test_fini();
}

/* A callback may start a new transaction (it runs outside the old one). */
static void cb_starts_tx(void *arg) {
  (void)arg;
  tx_store_u64(&z, 77);
}
TEST(callback_may_run_transaction) {
  sstm_test_init();
  z = 0;
  SSTM_ATOMIC_BEGIN(NULL)
    CHECK_OK(sstm_on_commit(cb_starts_tx, NULL));
    sstm_store_u64(&x, 1);
  SSTM_ATOMIC_END();
  CHECK_EQ_U(z, 77);
  sstm_test_fini();
}

/* An abort action that runs a transaction: the restart must still resume
 * the outer block (its checkpoint, attributes and retry count survive the
 * action's transaction), and actions registered by the action's own
 * transaction run once, not mixed into the outer list. */
static int inner_commits;
static void inner_commit_cb(void *arg) {
  (void)arg;
  inner_commits++;
}
static void inner_tx_fn(void *arg) {
  (void)arg;
  sstm_store_u64(&z, sstm_load_u64(&z) + 1);
  CHECK_OK(sstm_on_commit(inner_commit_cb, NULL));
}
static void cb_runs_tx(void *arg) {
  (void)arg;
  CHECK_OK(sstm_run(NULL, inner_tx_fn, NULL));
}
TEST(abort_callback_may_run_transaction) {
  sstm_test_init();
  z = 0;
  x = 0;
  inner_commits = 0;
  volatile int attempts = 0;
  sstm_attr_t attr = {.tag = 3};
  SSTM_ATOMIC_BEGIN(&attr)
    attempts++;
    sstm_store_u64(&x, (uint64_t)attempts);
    if (attempts <= 2) {
      CHECK_OK(sstm_on_abort(cb_runs_tx, NULL));
      CHECK_OK(sstm_on_commit(cb_runs_tx, NULL));
      sstm_restart();
    }
    CHECK_OK(sstm_on_commit(cb_runs_tx, NULL));
  SSTM_ATOMIC_END();
  CHECK_EQ_I(attempts, 3);
  CHECK_EQ_U(x, 3);
  CHECK_EQ_U(z, 3);             /* two abort actions, one commit action */
  CHECK_EQ_I(inner_commits, 3); /* each inner transaction's own action, once */
  sstm_stats_t st;
  CHECK_OK(sstm_stats_get(sstm_self(), &st));
  CHECK_EQ_U(st.max_retries, 2); /* the retry count survived the inner commits */
  sstm_test_fini();
}

/* The sampling hook (the way thread mapping [Pasqualin20] sees which threads
 * share data): one call every sample_period accesses of a thread, counted
 * across transactions and kinds of attempt (update, declared read-only,
 * irrevocable), with the address and kind of the access that fired it. */
static uint64_t sampled[64];
static struct {
  const void *addr;
  bool is_write;
  void *arg;
} fired[16];
static int nfired;
static void sample_cb(void *arg, const void *addr, bool is_write) {
  CHECK_LT_I(nfired, 16);
  fired[nfired].addr = addr;
  fired[nfired].is_write = is_write;
  fired[nfired].arg = arg;
  nfired++;
}
TEST(sampling_calls_back_every_period_accesses) {
  sstm_test_init_sampling(4, sample_cb, &nfired);
  nfired = 0;
  SSTM_ATOMIC_BEGIN(NULL) /* accesses 1-10 read, 11-16 write */
    for (int i = 0; i < 10; i++)
      (void)sstm_load_u64(&sampled[i]);
    for (int i = 0; i < 6; i++)
      sstm_store_u64(&sampled[20 + i], (uint64_t)i);
  SSTM_ATOMIC_END();
  sstm_attr_t ro = {.read_only = true};
  SSTM_ATOMIC_BEGIN(&ro) /* 17-24 */
    for (int i = 0; i < 8; i++)
      (void)sstm_load_u64(&sampled[30 + i]);
  SSTM_ATOMIC_END();
  sstm_attr_t irr = {.irrevocable = true};
  SSTM_ATOMIC_BEGIN(&irr) /* 25-28 */
    for (int i = 0; i < 2; i++)
      sstm_store_u64(&sampled[40 + i], sstm_load_u64(&sampled[40 + i]) + 1);
  SSTM_ATOMIC_END();
  CHECK_EQ_I(nfired, 7);
  const struct {
    const uint64_t *addr;
    bool is_write;
  } want[7] = {{&sampled[3], false}, {&sampled[7], false},  {&sampled[21], true},
               {&sampled[25], true}, {&sampled[33], false}, {&sampled[37], false},
               {&sampled[41], true}};
  for (int i = 0; i < 7; i++) {
    CHECK_MSG(fired[i].addr == want[i].addr, "call %d: address %p, expected %p (sampled[%ld])", i,
              fired[i].addr, (const void *)want[i].addr, (long)(want[i].addr - sampled));
    CHECK_EQ_I(fired[i].is_write, want[i].is_write);
    CHECK_TRUE(fired[i].arg == &nfired);
  }
  CHECK_EQ_U(sampled[41], 1);
  sstm_test_fini();
}

/* The sampling countdown counts each access once wherever it runs: in the
 * loads' and stores' fast paths while it has not run out, and in the slow
 * path for an access the fast path gives up on (a read after this
 * attempt's own write finds its stripe locked, an unaligned access, a
 * bulk copy of a sampled attempt, which goes word by word). Period 3:
 * accesses 3, 6, 9, ... call back. */
static const void *fired_at[64];
static int nfired_at;
static void record_cb(void *arg, const void *addr, bool is_write) {
  (void)arg;
  (void)is_write;
  CHECK_LT_I(nfired_at, 64);
  fired_at[nfired_at++] = addr;
}
static uint64_t words[16];
TEST(sampling_counts_each_access_once) {
  sstm_test_init_sampling(3, record_cb, NULL);
  nfired_at = 0;
  unsigned char buf[16];
  const uint32_t *odd = (const uint32_t *)(const void *)((const char *)&words[2] + 2);
  SSTM_ATOMIC_BEGIN(NULL)
    sstm_store_u64(&words[0], 1);        /* 1 */
    (void)sstm_load_u64(&words[0]);      /* 2: read after write */
    (void)sstm_load_u64(&words[0]);      /* 3: fires */
    (void)sstm_load_u64(&words[1]);      /* 4 */
    (void)sstm_load_u32(odd);            /* 5, 6: two 2-byte pieces, the second fires */
    sstm_load_bytes(buf, &words[4], 16); /* 7, 8: a word each */
    (void)sstm_load_u64(&words[6]);      /* 9: fires */
  SSTM_ATOMIC_END();
  CHECK_EQ_I(nfired_at, 3);
  CHECK_TRUE(fired_at[0] == &words[0]);
  CHECK_TRUE(fired_at[1] == (const char *)&words[2] + 4);
  CHECK_TRUE(fired_at[2] == &words[6]);
  sstm_test_fini();
}

/* The stores and the reads after writes of a sampled attempt, the shape of
 * an accumulating transaction (STAMP's kmeans): 4-byte words, each read
 * after the attempt wrote it; between two samples they take the fast
 * store and the read-after-write test of the slow entry, each counted
 * once, and the reads see the attempt's own values. Period 4. */
static uint32_t acc[3];
TEST(sampling_counts_stores_and_reads_after_writes_once) {
  sstm_test_init_sampling(4, record_cb, NULL);
  nfired_at = 0;
  uint32_t got[3] = {0, 0, 0};
  SSTM_ATOMIC_BEGIN(NULL)
    sstm_store_u32(&acc[0], 10);              /* 1 */
    got[0] = sstm_load_u32(&acc[0]);          /* 2: read after write */
    sstm_store_u32(&acc[1], 20);              /* 3 */
    sstm_store_u32(&acc[0], got[0] + 1);      /* 4: fires (a write) */
    got[1] = sstm_load_u32(&acc[1]);          /* 5: read after write */
    got[0] = sstm_load_u32(&acc[0]);          /* 6: read after write */
    sstm_store_u32(&acc[2], got[0] + got[1]); /* 7 */
    got[2] = sstm_load_u32(&acc[2]);          /* 8: fires (a read after write) */
  SSTM_ATOMIC_END();
  CHECK_EQ_I(nfired_at, 2);
  CHECK_TRUE(fired_at[0] == &acc[0]);
  CHECK_TRUE(fired_at[1] == &acc[2]);
  CHECK_EQ_U(got[0], 11);
  CHECK_EQ_U(got[1], 20);
  CHECK_EQ_U(got[2], 31);
  CHECK_EQ_U(acc[0], 11);
  CHECK_EQ_U(acc[1], 20);
  CHECK_EQ_U(acc[2], 31);
  sstm_test_fini();
}

/* A period longer than the fast paths' 16-bit countdown: the rest waits in
 * the descriptor and the hook still fires on exactly every period-th
 * access. */
static uint64_t long_words[8];
TEST(sampling_period_longer_than_the_fast_countdown) {
  const unsigned period = 70001; /* > UINT16_MAX */
  sstm_test_init_sampling(period, record_cb, NULL);
  nfired_at = 0;
  for (unsigned round = 0; round < 3; round++) {
    SSTM_ATOMIC_BEGIN(NULL)
      for (unsigned i = 0; i < period - 1; i++)
        (void)sstm_load_u64(&long_words[i % 8]);
      sstm_store_u64(&long_words[round], round); /* the period-th access */
    SSTM_ATOMIC_END();
    CHECK_EQ_I(nfired_at, (int)round + 1);
    CHECK_TRUE(fired_at[round] == &long_words[round]);
  }
  sstm_test_fini();
}

/* An attempt that aborts inside the sampling callback (here: a kill the
 * callback's own access notices) leaves the callback's frame behind; the
 * thread must not stay "in a callback": the restart and the next
 * transactions begin normally, and a callback's sstm_restart is misuse. */
static int kill_armed, kill_calls;
static void sample_kill_self(void *arg, const void *addr, bool is_write) {
  (void)arg, (void)addr, (void)is_write;
  kill_calls++;
  if (!kill_armed) return;
  kill_armed = 0;
  CHECK_OK(sstm_desc_kill(sstm_self(), 0));
  (void)sstm_load_u64(&sampled[50]); /* notices the kill: the attempt aborts here */
  FAIL("the killed attempt went on");
}
static void sample_restart(void *arg, const void *addr, bool is_write) {
  (void)arg, (void)addr, (void)is_write;
  sstm_restart();
}
static void restart_in_sampling_callback(void) {
  sstm_test_init_sampling(1, sample_restart, NULL);
  SSTM_ATOMIC_BEGIN(NULL)
    (void)sstm_load_u64(&sampled[0]);
  SSTM_ATOMIC_END();
}
TEST(abort_inside_the_sampling_callback_leaves_no_callback_state) {
  sstm_test_init_sampling(1, sample_kill_self, NULL);
  kill_armed = 1;
  kill_calls = 0;
  static volatile int attempts; /* survives the restart's jump */
  attempts = 0;
  SSTM_ATOMIC_BEGIN(NULL)
    attempts++;
    sstm_store_u64(&sampled[51], sstm_load_u64(&sampled[51]) + 1);
  SSTM_ATOMIC_END();
  CHECK_EQ_I(attempts, 2);
  sstm_stats_t st;
  CHECK_OK(sstm_stats_get(sstm_self(), &st));
  CHECK_EQ_U(st.aborts[SSTM_ABORT_KILLED], 1);
  /* a later transaction, through both ways in */
  int calls = kill_calls;
  SSTM_ATOMIC_BEGIN(NULL)
    sstm_store_u64(&sampled[51], sstm_load_u64(&sampled[51]) + 1);
  SSTM_ATOMIC_END();
  tx_store_u64(&sampled[52], 1);
  CHECK_GT_I(kill_calls, calls); /* sampling still calls back */
  CHECK_EQ_U(sampled[51], 2);
  sstm_test_fini();
  sstm_test_expect_abort(restart_in_sampling_callback, "sstm_restart in the sampling callback",
                         "sstm_restart in a hook or a callback");
}

/* ---- hooks --------------------------------------------------------------- */

#define MAXEV 64
static struct {
  char kind;
  uint64_t txid;
  sstm_abort_reason_t reason;
  uintptr_t arg;
} ev[MAXEV];
static int nev;

static void push(char k, uint64_t txid, sstm_abort_reason_t r, void *arg) {
  CHECK_LT_I(nev, MAXEV);
  ev[nev].kind = k;
  ev[nev].txid = txid;
  ev[nev].reason = r;
  ev[nev].arg = (uintptr_t)arg;
  nev++;
}
static void h_thread_init(void *arg) { push('I', 0, 0, arg); }
static void h_thread_exit(void *arg) { push('E', 0, 0, arg); }
static void h_begin(void *arg, uint64_t txid) {
  CHECK_TRUE(sstm_in_tx());
  CHECK_EQ_U(sstm_txid(), txid);
  push('b', txid, 0, arg);
}
static void h_commit(void *arg, uint64_t txid) { push('c', txid, 0, arg); }
static void h_abort(void *arg, uint64_t txid, sstm_abort_reason_t r) { push('a', txid, r, arg); }

static const sstm_hooks_t HOOKS = {h_thread_init, h_thread_exit, h_begin, h_commit, h_abort};

TEST(hooks_see_events_in_order) {
  sstm_config_t c;
  sstm_test_config(&c);
  CHECK_OK(sstm_init(&c));
  int h = sstm_hooks_add(&HOOKS, (void *)0x42);
  CHECK_GE_I(h, 0);
  nev = 0;
  CHECK_OK(sstm_thread_init());
  CHECK_EQ_I(nev, 1);
  CHECK_EQ_I(ev[0].kind, 'I');
  CHECK_EQ_X(ev[0].arg, 0x42);

  nev = 0;
  attempts = 0;
  SSTM_ATOMIC_BEGIN(NULL)
    attempts++;
    sstm_store_u64(&x, 1);
    if (attempts == 1) sstm_restart();
  SSTM_ATOMIC_END();
  CHECK_EQ_I(nev, 4);
  CHECK_EQ_I(ev[0].kind, 'b');
  CHECK_EQ_I(ev[1].kind, 'a');
  CHECK_EQ_I(ev[1].reason, SSTM_ABORT_USER_RETRY);
  CHECK_EQ_U(ev[1].txid, ev[0].txid);
  CHECK_EQ_I(ev[2].kind, 'b');
  CHECK_GT_U(ev[2].txid, ev[0].txid); /* ids grow with every attempt */
  CHECK_EQ_I(ev[3].kind, 'c');
  CHECK_EQ_U(ev[3].txid, ev[2].txid);
  CHECK_EQ_U(sstm_desc_txid(sstm_self()), ev[3].txid);

  /* cancel reports an abort with reason user-cancel */
  nev = 0;
  SSTM_ATOMIC_BEGIN(NULL)
    sstm_cancel();
  SSTM_ATOMIC_END();
  CHECK_EQ_I(nev, 2);
  CHECK_EQ_I(ev[1].kind, 'a');
  CHECK_EQ_I(ev[1].reason, SSTM_ABORT_USER_CANCEL);

  /* nesting: one begin, one commit */
  nev = 0;
  SSTM_ATOMIC_BEGIN(NULL)
    SSTM_ATOMIC_BEGIN(NULL)
      sstm_store_u64(&x, 2);
    SSTM_ATOMIC_END();
  SSTM_ATOMIC_END();
  CHECK_EQ_I(nev, 2);
  CHECK_EQ_I(ev[0].kind, 'b');
  CHECK_EQ_I(ev[1].kind, 'c');

  /* two hook sets: both called */
  int h2 = sstm_hooks_add(&HOOKS, (void *)0x43);
  CHECK_GE_I(h2, 0);
  CHECK_NE_I(h2, h);
  nev = 0;
  tx_store_u64(&x, 3);
  CHECK_EQ_I(nev, 4);
  CHECK_OK(sstm_hooks_remove(h2));
  CHECK_RC(sstm_hooks_remove(h2), SSTM_EINVAL);
  CHECK_RC(sstm_hooks_remove(12345), SSTM_EINVAL);
  /* the first handle past the table is out of range, not a slot (another
   * message first, so that the check sees this call's) */
  CHECK_RC(sstm_hooks_add(NULL, NULL), SSTM_EINVAL);
  CHECK_RC(sstm_hooks_remove(SSTM_MAX_HOOKS), SSTM_EINVAL);
  CHECK_CONTAINS(sstm_last_error(), "out of range");
  CHECK_RC(sstm_hooks_remove(-1), SSTM_EINVAL);
  CHECK_CONTAINS(sstm_last_error(), "out of range");
  CHECK_RC(sstm_hooks_add(NULL, NULL), SSTM_EINVAL);

  nev = 0;
  CHECK_OK(sstm_thread_exit());
  CHECK_EQ_I(nev, 1);
  CHECK_EQ_I(ev[0].kind, 'E');
  CHECK_OK(sstm_hooks_remove(h));
  nev = 0;
  CHECK_OK(sstm_thread_init());
  tx_store_u64(&x, 4);
  CHECK_EQ_I(nev, 0); /* removed: no more events */
  sstm_test_fini();
}

TEST(hooks_limit) {
  sstm_test_init();
  static const sstm_hooks_t empty = {0};
  int handles[SSTM_MAX_HOOKS];
  for (int i = 0; i < SSTM_MAX_HOOKS; i++) {
    handles[i] = sstm_hooks_add(&empty, NULL);
    CHECK_GE_I(handles[i], 0);
  }
  CHECK_RC(sstm_hooks_add(&empty, NULL), SSTM_ELIMIT);
  CHECK_OK(sstm_hooks_remove(handles[3]));
  CHECK_GE_I(sstm_hooks_add(&empty, NULL), 0);
  sstm_test_fini();
}

/* A set with thread events only and one with transaction events only:
 * each is called for its own events (the engine counts them apart, so
 * that the first costs transactions nothing), also after the other is
 * removed, and a set registered again after removal is counted again. */
static void *run_one(void *arg) {
  (void)arg;
  CHECK_OK(sstm_thread_init());
  SSTM_ATOMIC_BEGIN(NULL)
  SSTM_ATOMIC_END();
  CHECK_OK(sstm_thread_exit());
  return NULL;
}
static int count_kind(char k) {
  int n = 0;
  for (int i = 0; i < nev; i++)
    n += ev[i].kind == k;
  return n;
}
TEST(hooks_of_one_kind_of_event) {
  sstm_test_init();
  static const sstm_hooks_t threads_only = {.thread_init = h_thread_init,
                                            .thread_exit = h_thread_exit};
  static const sstm_hooks_t tx_only = {.tx_begin = h_begin, .tx_commit = h_commit};
  for (int round = 0; round < 2; round++) {
    int ht = sstm_hooks_add(&threads_only, NULL);
    int hx = sstm_hooks_add(&tx_only, NULL);
    CHECK_GE_I(ht, 0);
    CHECK_GE_I(hx, 0);
    nev = 0;
    pthread_t t;
    CHECK_EQ_I(pthread_create(&t, NULL, run_one, NULL), 0);
    CHECK_EQ_I(pthread_join(t, NULL), 0);
    CHECK_EQ_I(count_kind('I'), 1);
    CHECK_EQ_I(count_kind('E'), 1);
    CHECK_EQ_I(count_kind('b'), 1);
    CHECK_EQ_I(count_kind('c'), 1);
    /* Remove one kind, then the other: the remaining set still runs. */
    CHECK_OK(sstm_hooks_remove(round == 0 ? hx : ht));
    nev = 0;
    CHECK_EQ_I(pthread_create(&t, NULL, run_one, NULL), 0);
    CHECK_EQ_I(pthread_join(t, NULL), 0);
    CHECK_EQ_I(count_kind('I') + count_kind('E'), round == 0 ? 2 : 0);
    CHECK_EQ_I(count_kind('b') + count_kind('c'), round == 0 ? 0 : 2);
    CHECK_OK(sstm_hooks_remove(round == 0 ? ht : hx));
    nev = 0;
    CHECK_EQ_I(pthread_create(&t, NULL, run_one, NULL), 0);
    CHECK_EQ_I(pthread_join(t, NULL), 0);
    CHECK_EQ_I(nev, 0);
  }
  sstm_test_fini();
}

/* hooks.h: the table may change while other threads register, run
 * transactions and leave, and a hook is always called with its own arg. A
 * changer thread moves two hook sets (A with &tag_a, B with &tag_b) through
 * the same slots, so that a slot freed by one is taken by the other while
 * the workers' events read it. Each hook checks its arg. Under TSan
 * (stress label) an unsynchronised read of the table fails the test. */
static int tag_a, tag_b;
static _Atomic long hk_calls_a, hk_calls_b, hk_mismatch;
static _Atomic int hk_workers_done, hk_cycles;
static void hk_a(void *arg) {
  atomic_fetch_add_explicit(arg == &tag_a ? &hk_calls_a : &hk_mismatch, 1, memory_order_relaxed);
}
static void hk_b(void *arg) {
  atomic_fetch_add_explicit(arg == &tag_b ? &hk_calls_b : &hk_mismatch, 1, memory_order_relaxed);
}
static void hk_a_tx(void *arg, uint64_t txid) { (void)txid, hk_a(arg); }
static void hk_b_tx(void *arg, uint64_t txid) { (void)txid, hk_b(arg); }
static void hk_a_abort(void *arg, uint64_t txid, sstm_abort_reason_t r) {
  (void)txid, (void)r, hk_a(arg);
}
static void hk_b_abort(void *arg, uint64_t txid, sstm_abort_reason_t r) {
  (void)txid, (void)r, hk_b(arg);
}
static const sstm_hooks_t HK_A = {hk_a, hk_a, hk_a_tx, hk_a_tx, hk_a_abort};
static const sstm_hooks_t HK_B = {hk_b, hk_b, hk_b_tx, hk_b_tx, hk_b_abort};
static uint64_t hk_counter;
enum { HK_ROUNDS = 50, HK_TX = 100, HK_MIN_CYCLES = 200 };

static void hk_increment(void *p) {
  (void)p;
  sstm_store_u64(&hk_counter, sstm_load_u64(&hk_counter) + 1);
}

static void *hk_worker(void *p) {
  (void)p;
  int rounds = 0;
  /* At least HK_ROUNDS registrations, and on until the changer has run
   * HK_MIN_CYCLES cycles, so that the two overlap. */
  while (rounds < HK_ROUNDS ||
         atomic_load_explicit(&hk_cycles, memory_order_relaxed) < HK_MIN_CYCLES) {
    CHECK_OK(sstm_thread_init());
    for (int i = 0; i < HK_TX; i++)
      CHECK_OK(sstm_run(NULL, hk_increment, NULL));
    CHECK_OK(sstm_thread_exit());
    rounds++;
  }
  atomic_fetch_add_explicit(&hk_workers_done, 1, memory_order_relaxed);
  return (void *)(intptr_t)rounds;
}

TEST(hooks_change_while_other_threads_run) {
  sstm_test_init();
  pthread_t w[2];
  for (int i = 0; i < 2; i++)
    CHECK_EQ_I(pthread_create(&w[i], NULL, hk_worker, NULL), 0);
  int cycles = 0;
  while (atomic_load_explicit(&hk_workers_done, memory_order_relaxed) < 2) {
    int h0 = sstm_hooks_add(&HK_A, &tag_a);
    int h1 = sstm_hooks_add(&HK_B, &tag_b);
    CHECK_GE_I(h0, 0);
    CHECK_GE_I(h1, 0);
    CHECK_OK(sstm_hooks_remove(h0));
    CHECK_EQ_I(sstm_hooks_add(&HK_B, &tag_b), h0); /* the lowest free slot */
    CHECK_OK(sstm_hooks_remove(h1));
    CHECK_EQ_I(sstm_hooks_add(&HK_A, &tag_a), h1);
    CHECK_OK(sstm_hooks_remove(h0));
    CHECK_OK(sstm_hooks_remove(h1));
    atomic_store_explicit(&hk_cycles, ++cycles, memory_order_relaxed);
  }
  long txs = 0;
  for (int i = 0; i < 2; i++) {
    void *rounds;
    CHECK_EQ_I(pthread_join(w[i], &rounds), 0);
    txs += (long)(intptr_t)rounds * HK_TX;
  }
  CHECK_GE_I(cycles, HK_MIN_CYCLES);
  CHECK_EQ_I(atomic_load_explicit(&hk_mismatch, memory_order_seq_cst), 0);
  CHECK_EQ_U(hk_counter, (uint64_t)txs); /* no transaction lost or doubled */
  /* Registered now, both are called with their own arg: the table is
   * usable after the churn. */
  CHECK_OK(sstm_thread_init());
  long a0 = atomic_load_explicit(&hk_calls_a, memory_order_seq_cst),
       b0 = atomic_load_explicit(&hk_calls_b, memory_order_seq_cst);
  int h0 = sstm_hooks_add(&HK_A, &tag_a), h1 = sstm_hooks_add(&HK_B, &tag_b);
  tx_store_u64(&x, 1);
  CHECK_EQ_I(atomic_load_explicit(&hk_calls_a, memory_order_seq_cst) - a0, 2); /* begin, commit */
  CHECK_EQ_I(atomic_load_explicit(&hk_calls_b, memory_order_seq_cst) - b0, 2);
  CHECK_OK(sstm_hooks_remove(h0));
  CHECK_OK(sstm_hooks_remove(h1));
  CHECK_EQ_I(atomic_load_explicit(&hk_mismatch, memory_order_seq_cst), 0);
  sstm_test_fini();
}

/* sstm_shutdown removes every hook (hooks.h): after a new sstm_init none
 * of the old ones is called, and all SSTM_MAX_HOOKS slots are free. */
static int shut_begins;
static void count_begin(void *arg, uint64_t txid) {
  (void)arg, (void)txid;
  shut_begins++;
}

TEST(shutdown_removes_hooks) {
  sstm_test_init();
  static const sstm_hooks_t h = {.tx_begin = count_begin};
  CHECK_GE_I(sstm_hooks_add(&h, NULL), 0);
  tx_store_u64(&x, 1);
  CHECK_EQ_I(shut_begins, 1);
  sstm_test_fini();
  sstm_test_init();
  tx_store_u64(&x, 2);
  CHECK_EQ_I(shut_begins, 1);
  static const sstm_hooks_t empty = {0};
  for (int i = 0; i < SSTM_MAX_HOOKS; i++)
    CHECK_GE_I(sstm_hooks_add(&empty, NULL), 0);
  sstm_test_fini();
}

/* ---- state queries and ids --------------------------------------------- */

TEST(state_queries_and_txids) {
  sstm_test_init();
  CHECK_FALSE(sstm_in_tx());
  CHECK_FALSE(sstm_is_irrevocable());
  CHECK_EQ_U(sstm_txid(), 0);
  static volatile uint64_t last;
  last = 0;
  for (int i = 0; i < 5; i++) {
    SSTM_ATOMIC_BEGIN(NULL)
      CHECK_TRUE(sstm_in_tx());
      CHECK_FALSE(sstm_is_irrevocable());
      CHECK_GT_U(sstm_txid(), last);
      last = sstm_txid();
    SSTM_ATOMIC_END();
  }
  CHECK_FALSE(sstm_in_tx());
  CHECK_EQ_U(sstm_txid(), 0);
  sstm_desc_t *d = sstm_self();
  CHECK_EQ_I(sstm_desc_tid(d), gettid());
  sstm_test_fini();
}

TEST(irrevocable_basics) {
  sstm_test_init();
  x = 0;
  sstm_attr_t a = {.irrevocable = true};
  attempts = 0;
  SSTM_ATOMIC_BEGIN(&a)
    attempts++;
    CHECK_TRUE(sstm_is_irrevocable());
    sstm_store_u64(&x, sstm_load_u64(&x) + 1);
  SSTM_ATOMIC_END();
  CHECK_EQ_I(attempts, 1);
  CHECK_EQ_U(x, 1);

  /* becoming irrevocable after accesses restarts once */
  attempts = 0;
  SSTM_ATOMIC_BEGIN(NULL)
    attempts++;
    sstm_store_u64(&x, sstm_load_u64(&x) + 1);
    CHECK_OK(sstm_become_irrevocable());
    CHECK_TRUE(sstm_is_irrevocable());
    CHECK_OK(sstm_become_irrevocable()); /* already: no-op */
  SSTM_ATOMIC_END();
  CHECK_EQ_I(attempts, 2); /* after accesses: always one restart (tx.h) */
  CHECK_EQ_U(x, 2);
  CHECK_FALSE(sstm_is_irrevocable());
  CHECK_RC(sstm_become_irrevocable(), SSTM_ENOTX);
  sstm_stats_t s;
  CHECK_OK(sstm_stats_get(sstm_self(), &s));
  CHECK_EQ_U(s.commits_irrevocable, 2);
  CHECK_EQ_U(s.aborts[SSTM_ABORT_IRREVOCABLE], 1);

  /* before any access: switches in place, no restart, no abort */
  attempts = 0;
  SSTM_ATOMIC_BEGIN(NULL)
    attempts++;
    CHECK_OK(sstm_become_irrevocable());
    CHECK_TRUE(sstm_is_irrevocable());
    sstm_store_u64(&x, sstm_load_u64(&x) + 1);
  SSTM_ATOMIC_END();
  CHECK_EQ_I(attempts, 1);
  CHECK_EQ_U(x, 3);
  CHECK_OK(sstm_stats_get(sstm_self(), &s));
  CHECK_EQ_U(s.commits_irrevocable, 3);
  CHECK_EQ_U(s.aborts[SSTM_ABORT_IRREVOCABLE], 1);
  sstm_test_fini();
}

/* Becoming irrevocable after reads only (no write yet) restarts too: the
 * values read may already be stale, and an irrevocable attempt is never
 * validated again. Here another descriptor commits x = 5 between this
 * attempt's read of x and its switch; switching in place would then write
 * back x = old + 1 and lose that update. */
static void store_x_five(void *arg) {
  (void)arg;
  sstm_store_u64(&x, 5);
}

TEST(becoming_irrevocable_after_reads_restarts) {
  sstm_test_init();
  x = 0;
  attempts = 0;
  SSTM_ATOMIC_BEGIN(NULL)
    attempts++;
    uint64_t v = sstm_load_u64(&x);
    if (attempts == 1) CHECK_OK(run_other(NULL, store_x_five, NULL));
    CHECK_OK(sstm_become_irrevocable());
    sstm_store_u64(&x, v + 1);
  SSTM_ATOMIC_END();
  CHECK_EQ_I(attempts, 2);
  CHECK_EQ_U(x, 6); /* the other commit is not lost */
  sstm_stats_t s;
  CHECK_OK(sstm_stats_get(sstm_self(), &s));
  CHECK_EQ_U(s.aborts[SSTM_ABORT_IRREVOCABLE], 1);
  txh_cleanup();
  sstm_test_fini();
}

/* Abort actions may run transactions of their own on this descriptor
 * (tx.h); the restart that follows is still the one the abort asked for:
 * after sstm_become_irrevocable's abort it starts irrevocable, whatever
 * the action's transactions did to the descriptor meanwhile. */
static void abort_action_runs_tx(void *arg) {
  (void)arg;
  tx_store_u64(&y, tx_load_u64(&y) + 1);
}

static volatile int irrevocable_at_retry_start = -1;

TEST(irrevocable_restart_survives_an_abort_action_transaction) {
  sstm_test_init();
  x = 0;
  y = 0;
  attempts = 0;
  SSTM_ATOMIC_BEGIN(NULL)
    attempts++;
    if (attempts == 2) irrevocable_at_retry_start = sstm_is_irrevocable();
    uint64_t v = sstm_load_u64(&x);
    if (attempts == 1) CHECK_OK(sstm_on_abort(abort_action_runs_tx, NULL));
    CHECK_OK(sstm_become_irrevocable());
    sstm_store_u64(&x, v + 1);
  SSTM_ATOMIC_END();
  CHECK_EQ_I(attempts, 2);
  CHECK_EQ_I(irrevocable_at_retry_start, 1);
  CHECK_EQ_U(x, 1);
  CHECK_EQ_U(y, 1); /* the action ran, once */
  sstm_stats_t s;
  CHECK_OK(sstm_stats_get(sstm_self(), &s));
  CHECK_EQ_U(s.aborts[SSTM_ABORT_IRREVOCABLE], 1);
  CHECK_EQ_U(s.aborts_total, 1);
  CHECK_EQ_U(s.commits_irrevocable, 1);
  sstm_test_fini();
}

/* A transaction declared read-only runs its first attempt without a read
 * set; when that attempt needs one (a stripe newer than its snapshot), its
 * retry keeps one and can extend (tx.h, sstm_attr_t.read_only). Here every
 * attempt meets a newer stripe: a retry that stayed without a read set
 * would abort every time. */
/* two words in different stripes (the default stripe is 32 bytes) */
static uint64_t ro_words[16] __attribute__((aligned(128)));

static void bump_ro_second(void *arg) {
  (void)arg;
  sstm_store_u64(&ro_words[8], sstm_load_u64(&ro_words[8]) + 1);
}

TEST(read_only_retry_keeps_a_read_set) {
  sstm_test_init();
  sstm_stats_t before, after;
  CHECK_OK(sstm_stats_get(sstm_self(), &before));
  sstm_attr_t ro = {.read_only = true};
  attempts = 0;
  SSTM_ATOMIC_BEGIN(&ro)
    attempts++;
    (void)sstm_load_u64(&ro_words[0]);
    /* the second word: newer than the snapshot */
    if (attempts <= 10) CHECK_OK(run_other(NULL, bump_ro_second, NULL));
    (void)sstm_load_u64(&ro_words[8]);
  SSTM_ATOMIC_END();
  CHECK_EQ_I(attempts, 2);
  CHECK_OK(sstm_stats_get(sstm_self(), &after));
  CHECK_EQ_U(after.aborts[SSTM_ABORT_RO_EXTEND] - before.aborts[SSTM_ABORT_RO_EXTEND], 1);
  CHECK_EQ_U(after.extensions - before.extensions, 1);
  CHECK_EQ_U(after.commits_ro - before.commits_ro, 1);
  txh_cleanup();
  sstm_test_fini();
}

/* A kill that returned 0 means the attempt can no longer commit (thread.h):
 * an attempt killed before it switches to irrevocable in place aborts
 * (reason killed) and its restart runs irrevocable. It used to switch and
 * commit. */
static volatile int irrev_attempts, irrev_kill_rc = -1, irrev_flag_seen;
TEST(killed_attempt_does_not_become_irrevocable) {
  sstm_test_init();
  sstm_stats_t before;
  CHECK_OK(sstm_stats_get(sstm_self(), &before));
  irrev_attempts = 0;
  SSTM_ATOMIC_BEGIN(NULL)
    if (++irrev_attempts == 1) irrev_kill_rc = sstm_desc_kill(sstm_self(), sstm_txid());
    CHECK_OK(sstm_become_irrevocable());
    irrev_flag_seen = sstm_is_irrevocable();
    sstm_store_u64(&x, 42);
  SSTM_ATOMIC_END();
  CHECK_OK(irrev_kill_rc);
  CHECK_EQ_I(irrev_attempts, 2);
  CHECK_TRUE(irrev_flag_seen);
  CHECK_EQ_U(x, 42);
  sstm_stats_t after;
  CHECK_OK(sstm_stats_get(sstm_self(), &after));
  CHECK_EQ_U(after.aborts[SSTM_ABORT_KILLED] - before.aborts[SSTM_ABORT_KILLED], 1);
  CHECK_EQ_U(after.commits_irrevocable - before.commits_irrevocable, 1);
  sstm_test_fini();
}

/* An irrevocable attempt never aborts and never waits for a running
 * attempt ((7), docs/design/core.md): on a lock held by one it kills it and
 * takes the lock over (6.1-6.4), whatever the policy (suicide here, which
 * would have the writer abort itself). The holder's thread waits for the
 * irrevocable one meanwhile (run_other_attached): an irrevocable attempt
 * that waited for the holder, or for its rollback, would wait for ever.
 * The holder aborts as killed at its next barrier and its retry reads the
 * irrevocable write. */
static int irw_attempts, irw_irrev_attempts;
static void irrevocable_writer(void *arg) {
  (void)arg;
  irw_irrev_attempts++;
  CHECK_TRUE(sstm_is_irrevocable());
  sstm_store_u64(&y, sstm_load_u64(&y) + 100); /* y is locked by the holder */
}
TEST_ETL(irrevocable_attempt_takes_a_running_holders_lock_over) {
  sstm_test_init();
  y = 1;
  irw_attempts = irw_irrev_attempts = 0;
  sstm_attr_t irr = {.irrevocable = true};
  SSTM_ATOMIC_BEGIN(NULL)
    irw_attempts++;
    sstm_store_u64(&y, sstm_load_u64(&y) + 1);
    if (irw_attempts == 1) {
      CHECK_OK(run_other_attached(&irr, irrevocable_writer, NULL));
      CHECK_EQ_U(y, 101);      /* written in place, committed */
      (void)sstm_load_u64(&z); /* the kill is noticed here: restart */
      FAIL("a killed attempt went on past a barrier");
    }
  SSTM_ATOMIC_END();
  CHECK_EQ_I(irw_attempts, 2);
  CHECK_EQ_I(irw_irrev_attempts, 1);
  CHECK_EQ_U(y, 102);
  sstm_stats_t s;
  CHECK_OK(sstm_stats_get(sstm_self(), &s));
  CHECK_EQ_U(s.aborts[SSTM_ABORT_KILLED], 1);
  CHECK_EQ_U(s.aborts_total, 1);
  CHECK_OK(sstm_stats_get(txh_other_desc(), &s));
  CHECK_EQ_U(s.commits_irrevocable, 1);
  CHECK_EQ_U(s.aborts_total, 0);
  CHECK_EQ_U(s.cm_kills, 1);
  CHECK_EQ_U(s.locks_stolen, 1);
  txh_cleanup();
  sstm_test_fini();
}

/* An abort action that runs a transaction of its own runs after the hooks
 * and the policy have heard of the abort: they name the attempt that
 * aborted, not the action's transaction. */
static uint64_t aborted_txid, hook_txid;
static int restart_attempts;
static void noop_body(void *arg) {
  (void)arg;
  sstm_store_u64(&y, sstm_load_u64(&y) + 1);
}
static void action_runs_tx(void *arg) {
  (void)arg;
  CHECK_OK(sstm_run(NULL, noop_body, NULL));
}
static void abort_hook(void *arg, uint64_t txid, sstm_abort_reason_t r) {
  (void)arg, (void)r;
  hook_txid = txid;
}
static void restart_with_tx_action(void *arg) {
  (void)arg;
  if (++restart_attempts == 1) {
    aborted_txid = sstm_txid();
    CHECK_OK(sstm_on_abort(action_runs_tx, NULL));
    sstm_restart();
  }
}
TEST(abort_reports_name_the_aborted_attempt_not_the_actions) {
  sstm_test_init();
  static const sstm_hooks_t h = {.tx_abort = abort_hook};
  int handle = sstm_hooks_add(&h, NULL);
  CHECK_GE_I(handle, 0);
  uint64_t y0 = y;
  restart_attempts = 0;
  CHECK_OK(sstm_run(NULL, restart_with_tx_action, NULL));
  CHECK_EQ_I(restart_attempts, 2);
  CHECK_EQ_U(y, y0 + 1); /* the action's transaction ran */
  CHECK_EQ_U(hook_txid, aborted_txid);
  CHECK_OK(sstm_hooks_remove(handle));
  sstm_test_fini();
}

/* Mutation round 7: m03: validate() without its `l != tx->owner_lw` exemption.
 *
 * A stripe the attempt read and then wrote is locked by the attempt itself
 * when the read set is validated (ETL: since the write; CTL: since
 * lock_write_set at commit). validate() must accept it (argument (2)):
 * otherwise every read-modify-write that meets another commit before its
 * own commit (commit-time validation) or before a later read of a newer
 * stripe (extension) aborts spuriously, however often it retries. */
static _Alignas(256) uint64_t rw_x[32], rw_y[32], rw_z[32]; /* distinct stripes */
static int rw_attempts;

static void rw_body(void *arg) {
  bool extend = arg != NULL;
  CHECK_MSG(++rw_attempts == 1, "attempt %d: a spurious validation failure", rw_attempts);
  sstm_store_u64(&rw_x[0], sstm_load_u64(&rw_x[0]) + 1); /* read, then write */
  /* another descriptor commits to an unrelated stripe: end + 1 != ts now */
  struct txh_store st = {&rw_y[0], (uint64_t)rw_attempts};
  CHECK_OK(run_other(NULL, txh_store_fn, &st));
  if (extend) (void)sstm_load_u64(&rw_y[0]); /* newer than the snapshot: extension */
  sstm_store_u64(&rw_z[0], 1);
}

TEST(read_then_written_stripe_passes_validation) {
  sstm_test_init();
  for (int extend = 0; extend < 2; extend++) {
    rw_attempts = 0;
    CHECK_OK(sstm_run(NULL, rw_body, extend ? (void *)1 : NULL));
    CHECK_EQ_I(rw_attempts, 1); /* no abort: nothing it read has changed */
    CHECK_EQ_U(rw_x[0], (uint64_t)extend + 1);
  }
  txh_cleanup();
  sstm_test_fini();
}

SSTM_TEST_MAIN()
