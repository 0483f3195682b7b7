/* SPDX-License-Identifier: MIT */
/* A request declared read-only (sstm_exec_req_t::read_only) runs as a
 * declared read-only transaction: it reads past the lock of a writer that
 * it paused (docs/design/core.md, (8)) instead of meeting it, which under
 * take-over kills the paused writer. One worker, priorities 0..4, the
 * default read_past (declared read-only attempts):
 *   W (priority 0) writes `held` (encounter-time locking: it holds the
 *     lock) and then reads `other` (a polled point each time) until
 *     released;
 *   R (priority 3) preempts it and reads `held`.
 * Read-only, R reads the committed value and W is never killed; as an
 * update request, R meets W's lock, kills W and takes it over, and W runs
 * again. Every step waits for an event, none for a time. */
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <schedstm/exec.h>

#include "exec_cfg.h"
#include "runner.h"

static uint64_t held __attribute__((aligned(128))), other __attribute__((aligned(128)));
static _Atomic int release, w_in;
static _Atomic uint64_t r_saw;

static void body_w(void *arg) {
  (void)arg;
  sstm_store_u64(&held, sstm_load_u64(&held) + 1);
  atomic_store_explicit(&w_in, 1, memory_order_seq_cst);
  while (!atomic_load_explicit(&release, memory_order_seq_cst))
    (void)sstm_load_u64(&other);
}

static void body_r(void *arg) {
  (void)arg;
  atomic_store_explicit(&r_saw, sstm_load_u64(&held), memory_order_seq_cst);
  atomic_store_explicit(&release, 1, memory_order_seq_cst); /* seen when W resumes */
}

static void run(sstm_exec_preempt_t mode, bool read_only) {
  sstm_config_t cfg;
  sstm_test_config(&cfg);
  cfg.design = SSTM_DESIGN_ETL; /* W's lock is held before its commit */
  cfg.read_past = SSTM_READ_PAST_RO;
  CHECK_OK(sstm_init(&cfg));
  sstm_exec_config_t c = sstm_test_exec_config(1, 16, 5, mode);
  c.c_max = 0;
  sstm_exec_t *ex;
  CHECK_OK(sstm_exec_create(&c, &ex));
  held = 41;
  other = 0;
  atomic_store_explicit(&release, 0, memory_order_seq_cst);
  atomic_store_explicit(&w_in, 0, memory_order_seq_cst);
  atomic_store_explicit(&r_saw, 0, memory_order_seq_cst);
  sstm_exec_future_t fw, fr;
  sstm_exec_req_t qw = {.fn = body_w, .priority = 0, .future = &fw};
  CHECK_OK(sstm_exec_submit(ex, &qw));
  while (!atomic_load_explicit(&w_in, memory_order_seq_cst))
    sched_yield();
  sstm_exec_req_t qr = {.fn = body_r, .priority = 3, .future = &fr, .read_only = read_only};
  CHECK_OK(sstm_exec_submit(ex, &qr));
  CHECK_OK(sstm_exec_wait(&fr));
  CHECK_OK(sstm_exec_wait(&fw));
  CHECK_EQ_U(atomic_load_explicit(&r_saw, memory_order_seq_cst), 41); /* before W's commit */
  CHECK_EQ_U(held, 42);
  sstm_exec_level_stats_t st;
  do /* the future is set before the worker counts the end */
    CHECK_OK(sstm_exec_stats(ex, 0, &st));
  while (st.completed == 0 && (sched_yield(), 1));
  CHECK_EQ_U(st.preemptions, 1);
  /* Killed while paused (and run again) only when R was an update. */
  CHECK_EQ_U(st.aborts, (read_only ? 0u : 1u));
  CHECK_OK(sstm_exec_destroy(ex));
  CHECK_OK(sstm_shutdown());
}

TEST(a_read_only_request_reads_past_a_paused_writer) {
  run(SSTM_EXEC_PREEMPT_SIGNAL, true);
  run(SSTM_EXEC_PREEMPT_POLL, true);
}

/* The same as an update request: the paused writer is killed. This is
 * what the flag changes (and the case above cannot pass without it). */
TEST(an_update_request_kills_the_paused_writer) {
  run(SSTM_EXEC_PREEMPT_SIGNAL, false);
  run(SSTM_EXEC_PREEMPT_POLL, false);
}

SSTM_TEST_MAIN()
