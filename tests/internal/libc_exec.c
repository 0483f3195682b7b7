/* SPDX-License-Identifier: MIT */
/* The transactional stdio under the executor (docs/design/tm-libc.md
 * (S12)): a request suspended in the middle of a transaction that uses a
 * stream does not hold the stream's other users. One worker, so that the
 * request that preempts runs on the worker of the one it suspends, which
 * cannot resume before the other ends:
 *   warm-up requests write to the stream one after another, as a thread
 *   that uses a stream alone does, which is what makes a thread the
 *   stream's keeper (S10);
 *   L (priority 0) writes a line and then reads `x` (a polled point each
 *   time) until it is released;
 *   H (priority 3), submitted once L has written, writes a line.
 * H must end while L is suspended: before the rule, L's worker kept the
 * stream in solo mode and H waited in its rollback for L's attempt, which
 * waited for the worker (the watchdog ended the test). Two more cases, on
 * two workers, below: a suspended request that holds the stream's turn,
 * and one resumed on the other worker.
 * And a stress of many requests on two streams. Every step waits for an
 * event, none for a time. In this
 * statically linked test the signal's redirect refuses
 * (docs/design/executor.md), so L is switched out at a read in either
 * mode. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <schedstm/exec.h>
#include <schedstm/stdio.h>

#include "exec_cfg.h"
#include "exec_sum.h"
#include "libc/esc.h"
#include "runner.h"

#define WARM 20

static sstm_file_t *f;
static uint64_t x;
static _Atomic int l_in, release_l, h_done, l_done;

static void body_warm(void *arg) {
  (void)arg;
  CHECK(sstm_fputs("w\n", f) >= 0);
}

static void body_l(void *arg) {
  (void)arg;
  CHECK(sstm_fputs("L\n", f) >= 0);
  atomic_store_explicit(&l_in, 1, memory_order_seq_cst);
  while (!atomic_load_explicit(&release_l, memory_order_seq_cst))
    (void)sstm_load_u64(&x);
  /* Not the body's last word: an attempt that L's kill ends is rolled
   * back, and only the one that commits counts. */
  atomic_store_explicit(&l_done, 1, memory_order_seq_cst);
}

static void body_h(void *arg) {
  (void)arg;
  CHECK(sstm_fputs("H\n", f) >= 0);
  atomic_store_explicit(&h_done, 1, memory_order_seq_cst);
}

static void submit_arg(sstm_exec_t *ex, void (*fn)(void *), void *arg, unsigned prio,
                       sstm_exec_future_t *fu) {
  sstm_exec_req_t q = {.fn = fn, .arg = arg, .priority = prio, .future = fu};
  CHECK_OK(sstm_exec_submit(ex, &q));
}

static void submit(sstm_exec_t *ex, void (*fn)(void *), unsigned prio, sstm_exec_future_t *fu) {
  submit_arg(ex, fn, NULL, prio, fu);
}

/* The library, this thread and the stream f on a new file (its path in
 * path). */
static void open_case(char *path, size_t cap, const char *tag) {
  sstm_test_init();
  sstm_test_tmp_file(path, cap, tag);
  f = sstm_fopen(path, "w+");
  CHECK(f != NULL);
}

/* Close f, check that its file holds exactly `want`, remove it, and end
 * the library. */
static void close_case(const char *path, const char *want) {
  CHECK_EQ_I(sstm_fclose(f), 0);
  FILE *r = fopen(path, "r");
  CHECK(r != NULL);
  char got[256];
  size_t n = fread(got, 1, sizeof got - 1, r);
  got[n] = '\0';
  fclose(r);
  unlink(path);
  CHECK_EQ_STR(got, want);
  CHECK_OK(sstm_thread_exit());
  CHECK_OK(sstm_shutdown());
}

static void run(sstm_exec_preempt_t mode) {
  char path[128];
  open_case(path, sizeof path, "libc_exec");
  atomic_store_explicit(&l_in, 0, memory_order_seq_cst);
  atomic_store_explicit(&release_l, 0, memory_order_seq_cst);
  atomic_store_explicit(&h_done, 0, memory_order_seq_cst);
  atomic_store_explicit(&l_done, 0, memory_order_seq_cst);
  sstm_exec_config_t c = sstm_test_exec_config(1, 8, 5, mode);
  sstm_exec_t *ex;
  CHECK_OK(sstm_exec_create(&c, &ex));

  sstm_exec_future_t fw, fl, fh;
  for (int i = 0; i < WARM; i++) {
    submit(ex, body_warm, 0, &fw);
    CHECK_OK(sstm_exec_wait(&fw));
  }
  submit(ex, body_l, 0, &fl);
  while (!atomic_load_explicit(&l_in, memory_order_seq_cst))
    sched_yield();
  submit(ex, body_h, 3, &fh);
  /* H ends on L's only worker, so L was suspended (it cannot have ended:
   * it is not released yet). */
  CHECK_OK(sstm_exec_wait(&fh));
  CHECK(atomic_load_explicit(&h_done, memory_order_seq_cst));
  CHECK(!atomic_load_explicit(&l_done, memory_order_seq_cst));
  atomic_store_explicit(&release_l, 1, memory_order_seq_cst);
  CHECK_OK(sstm_exec_wait(&fl));
  CHECK(atomic_load_explicit(&l_done, memory_order_seq_cst));
  sstm_exec_level_stats_t st;
  CHECK_OK(sstm_exec_stats(ex, 0, &st));
  CHECK(st.preemptions >= 1); /* L was switched out */
  CHECK_OK(sstm_exec_destroy(ex));
  /* The file: the warm-up lines, then H's, then L's (L's first attempt
   * was taken over by H, and its retry committed after H). */
  char want[3 * (WARM + 2) + 1] = "";
  for (int i = 0; i < WARM; i++)
    strcat(want, "w\n");
  strcat(want, "H\nL\n");
  close_case(path, want);
}

/* A request suspended after a call on a stream and resumed on another
 * worker makes another call on it (S12: its views follow its descriptor).
 * Two workers: L (priority 0) writes a line and waits to be released; B
 * (priority 1) holds the other worker in a region that may not be
 * preempted, so that H (priority 3) suspends L on L's worker and holds
 * that one; once B ends, its worker resumes L, which writes again. Before
 * the rule, L's second call did not find its view on that thread and
 * acquired the stream again, reading its own store of the stream's word,
 * and waited for its own installation (the watchdog ended the test). */
static _Atomic int m_l_in, m_b_in, m_h_in, m_rel_l, m_rel_b, m_rel_h, m_tid1, m_tid2;

static void spin_until(_Atomic int *flag) {
  while (!atomic_load_explicit(flag, memory_order_seq_cst)) {
    (void)sstm_load_u64(&x); /* a polled point */
    sched_yield();           /* few reads: the read set stays small */
  }
}

static void m_body_l(void *arg) {
  (void)arg;
  atomic_store_explicit(&m_tid1, (int)gettid(), memory_order_seq_cst);
  CHECK(sstm_fputs("L1\n", f) >= 0);
  atomic_store_explicit(&m_l_in, 1, memory_order_seq_cst);
  spin_until(&m_rel_l);
  atomic_store_explicit(&m_tid2, (int)gettid(), memory_order_seq_cst);
  CHECK(sstm_fputs("L2\n", f) >= 0);
}

/* A request that holds its worker (body_hold): it marks `in`, then reads
 * (a polled point each time) until `until` is set; body_hold_np does so in
 * a region that may not be preempted, so that it keeps its worker
 * whatever arrives. */
struct hold {
  _Atomic int *in, *until;
};

static void body_hold(void *arg) {
  const struct hold *h = arg;
  atomic_store_explicit(h->in, 1, memory_order_seq_cst);
  spin_until(h->until);
}

static void body_hold_np(void *arg) {
  CHECK_OK(sstm_exec_nopreempt_begin());
  body_hold(arg);
  CHECK_OK(sstm_exec_nopreempt_end());
}

static void wait_flag(_Atomic int *flag) {
  while (!atomic_load_explicit(flag, memory_order_seq_cst))
    sched_yield();
}

static void run_moved(sstm_exec_preempt_t mode) {
  char path[128];
  open_case(path, sizeof path, "libc_exec_moved");
  _Atomic int *flags[] = {&m_l_in,  &m_b_in,  &m_h_in, &m_rel_l,
                          &m_rel_b, &m_rel_h, &m_tid1, &m_tid2};
  for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
    atomic_store_explicit(flags[i], 0, memory_order_seq_cst);
  sstm_exec_config_t c = sstm_test_exec_config(2, 8, 5, mode);
  sstm_exec_t *ex;
  CHECK_OK(sstm_exec_create(&c, &ex));
  sstm_exec_future_t fl, fb, fh;
  submit(ex, m_body_l, 0, &fl);
  wait_flag(&m_l_in);
  while (!exec_idle_worker(ex)) /* B goes to the idle worker */
    sched_yield();
  struct hold b = {&m_b_in, &m_rel_b}, h = {&m_h_in, &m_rel_h};
  submit_arg(ex, body_hold_np, &b, 1, &fb);
  wait_flag(&m_b_in);
  submit_arg(ex, body_hold, &h, 3, &fh); /* preempts L, the only one it may */
  wait_flag(&m_h_in);
  atomic_store_explicit(&m_rel_b, 1, memory_order_seq_cst);
  CHECK_OK(sstm_exec_wait(&fb)); /* B's worker resumes L next */
  atomic_store_explicit(&m_rel_l, 1, memory_order_seq_cst);
  CHECK_OK(sstm_exec_wait(&fl));
  /* L went on on the other worker's thread: what the case is about. */
  CHECK(atomic_load_explicit(&m_tid1, memory_order_seq_cst) !=
        atomic_load_explicit(&m_tid2, memory_order_seq_cst));
  atomic_store_explicit(&m_rel_h, 1, memory_order_seq_cst);
  CHECK_OK(sstm_exec_wait(&fh));
  CHECK_OK(sstm_exec_destroy(ex));
  close_case(path, "L1\nL2\n");
}

TEST(a_request_resumed_on_another_worker_finds_its_stream) {
  run_moved(SSTM_EXEC_PREEMPT_POLL);
  run_moved(SSTM_EXEC_PREEMPT_SIGNAL);
}

/* Many requests of random priorities (0..4) on two or four workers, each
 * writing its number as a line to one of two streams, a quarter of them to
 * both, a third of them reading between and after (polled points, where
 * the more urgent requests suspend them): every request's lines are in
 * the files exactly once. The library before (S12) hung here (the
 * watchdog); with only one of its two parts taken out it passes: the
 * cases below pin each. */
#define MIX_MAX 4000
static sstm_file_t *mix_f[2];
static uint64_t mix_x[8];
static struct mix_req {
  unsigned id, reads;
  bool both;
} mix_req[MIX_MAX];
static unsigned char mix_seen[2][MIX_MAX];

static void mix_body(void *arg) {
  const struct mix_req *q = arg;
  char line[16];
  snprintf(line, sizeof line, "%u\n", q->id);
  CHECK(sstm_fputs(line, mix_f[q->id & 1]) >= 0);
  for (unsigned i = 0; i < q->reads; i++)
    (void)sstm_load_u64(&mix_x[i & 7]);
  if (q->both) CHECK(sstm_fputs(line, mix_f[(q->id & 1) ^ 1]) >= 0);
  for (unsigned i = 0; i < q->reads; i++)
    (void)sstm_load_u64(&mix_x[(i + 3) & 7]);
}

static void run_mix(unsigned workers, sstm_exec_preempt_t mode) {
  sstm_test_init();
  char path[2][128];
  for (int k = 0; k < 2; k++) {
    sstm_test_tmp_file(path[k], sizeof path[k], k ? "libc_exec_mix1" : "libc_exec_mix0");
    mix_f[k] = sstm_fopen(path[k], "w+");
    CHECK(mix_f[k] != NULL);
  }
  unsigned n = (unsigned)sstm_test_scaled(MIX_MAX, 200);
  if (n > MIX_MAX) n = MIX_MAX;
  sstm_rng_t r;
  sstm_rng_seed(&r, sstm_test_seed() + workers * 2 + (mode == SSTM_EXEC_PREEMPT_SIGNAL));
  sstm_exec_config_t c = sstm_test_exec_config(workers, 32, 5, mode);
  sstm_exec_t *ex;
  CHECK_OK(sstm_exec_create(&c, &ex));
  for (unsigned i = 0; i < n; i++) {
    mix_req[i] = (struct mix_req){
        .id = i,
        .reads = sstm_rng_below(&r, 3) == 0 ? (unsigned)sstm_rng_below(&r, 2000) : 0,
        .both = sstm_rng_below(&r, 4) == 0};
    submit_arg(ex, mix_body, &mix_req[i], (unsigned)sstm_rng_below(&r, 5), NULL);
  }
  CHECK_OK(sstm_exec_destroy(ex)); /* runs every accepted request first */
  memset(mix_seen, 0, sizeof mix_seen);
  for (int k = 0; k < 2; k++) {
    CHECK_EQ_I(sstm_fclose(mix_f[k]), 0);
    FILE *in = fopen(path[k], "r");
    CHECK(in != NULL);
    unsigned v;
    while (fscanf(in, "%u", &v) == 1) {
      CHECK(v < n);
      mix_seen[k][v]++;
    }
    fclose(in);
    unlink(path[k]);
  }
  for (unsigned i = 0; i < n; i++) {
    bool want0 = (i & 1) == 0 || mix_req[i].both, want1 = (i & 1) == 1 || mix_req[i].both;
    CHECK_EQ_U(mix_seen[0][i], want0);
    CHECK_EQ_U(mix_seen[1][i], want1);
  }
  CHECK_OK(sstm_thread_exit());
  CHECK_OK(sstm_shutdown());
}

TEST(requests_of_mixed_priorities_write_every_line_once) {
  run_mix(2, SSTM_EXEC_PREEMPT_POLL);
  run_mix(2, SSTM_EXEC_PREEMPT_SIGNAL);
  run_mix(4, SSTM_EXEC_PREEMPT_POLL);
}

TEST(a_suspended_request_does_not_keep_its_stream_from_a_higher_one) {
  run(SSTM_EXEC_PREEMPT_POLL);
  run(SSTM_EXEC_PREEMPT_SIGNAL);
}

/* The stream in serial mode (S9): L (priority 0) writes, which takes the
 * stream's turn, and waits to be released; K (priority 1, in a region
 * that may not be preempted) holds the other worker, so that H
 * (priority 3) suspends L and holds L's worker until B has ended; B
 * (priority 2) runs on K's worker once K ends, and writes. Before the
 * rule, B took the turn and slept on it behind the suspended L, whose
 * worker H held until B ended (the watchdog ended the test); now B meets
 * L's lock of the stream's word, which the engine takes over from a
 * suspended attempt ((9) in docs/design/core.md), and L writes after B. */
static _Atomic int t_k_in, t_h_in, t_rel_k, t_b_done;

static void t_body_l(void *arg) {
  (void)arg;
  CHECK(sstm_fputs("L\n", f) >= 0);
  atomic_store_explicit(&m_l_in, 1, memory_order_seq_cst);
  spin_until(&m_rel_l);
}

static void t_body_b(void *arg) {
  (void)arg;
  CHECK(sstm_fputs("B\n", f) >= 0);
}

static void run_turn(sstm_exec_preempt_t mode) {
  char path[128];
  open_case(path, sizeof path, "libc_exec_turn");
  _Atomic int *flags[] = {&m_l_in, &m_rel_l, &t_k_in, &t_h_in, &t_rel_k, &t_b_done};
  for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
    atomic_store_explicit(flags[i], 0, memory_order_seq_cst);
  sstm_exec_config_t c = sstm_test_exec_config(2, 8, 5, mode);
  sstm_exec_t *ex;
  CHECK_OK(sstm_exec_create(&c, &ex));
  sstm__stdio_set_span(f, SSTM__ESC_SPAN); /* every acquisition may take the turn */
  sstm_exec_future_t fl, fk, fh, fb;
  submit(ex, t_body_l, 0, &fl);
  wait_flag(&m_l_in);
  while (!exec_idle_worker(ex)) /* K goes to the idle worker */
    sched_yield();
  struct hold k = {&t_k_in, &t_rel_k}, h = {&t_h_in, &t_b_done};
  submit_arg(ex, body_hold_np, &k, 1, &fk);
  wait_flag(&t_k_in);
  submit_arg(ex, body_hold, &h, 3, &fh); /* preempts L, the only one it may */
  wait_flag(&t_h_in);
  submit(ex, t_body_b, 2, &fb); /* queued: both workers are busy */
  atomic_store_explicit(&t_rel_k, 1, memory_order_seq_cst);
  CHECK_OK(sstm_exec_wait(&fk)); /* K's worker takes B next */
  CHECK_OK(sstm_exec_wait(&fb));
  atomic_store_explicit(&t_b_done, 1, memory_order_seq_cst);
  CHECK_OK(sstm_exec_wait(&fh));
  atomic_store_explicit(&m_rel_l, 1, memory_order_seq_cst);
  CHECK_OK(sstm_exec_wait(&fl));
  CHECK_OK(sstm_exec_destroy(ex));
  close_case(path, "B\nL\n");
}

TEST(a_suspended_request_does_not_hold_the_turn_of_its_stream) {
  run_turn(SSTM_EXEC_PREEMPT_POLL);
  run_turn(SSTM_EXEC_PREEMPT_SIGNAL);
}

SSTM_TEST_MAIN()
