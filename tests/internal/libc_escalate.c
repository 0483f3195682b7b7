/* SPDX-License-Identifier: MIT */
/* The transactional stdio's escalation on a contended stream
 * (docs/design/tm-libc.md (S9), src/libc/esc.h): the decisions on
 * constructed inputs; a thread that loses a stream twice in a row puts it
 * in serial mode (made deterministic: the other transaction holds the
 * stream until the loser has started its fourth attempt); a retry that
 * holds the turn waits for an acquisition that went first without it
 * instead of meeting its lock again; and a shared
 * stream in serial mode keeps every committed transaction's bytes, in
 * their serial order, with each acquisition taking the stream's turn.
 * The tests run under the default test policy (suicide: a loser aborts at
 * once) and encounter-time locking, so that the holder of the stream's
 * word blocks the loser's acquisition. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libc/esc.h"
#include "runner.h"

static char path[64];

static void make_path(void) { sstm_test_tmp_file(path, sizeof path, "esc"); }

static size_t contents(char *buf, size_t cap) {
  FILE *f = fopen(path, "r");
  CHECK_NOT_NULL(f);
  size_t n = fread(buf, 1, cap, f);
  fclose(f);
  return n;
}

TEST(decisions_on_constructed_inputs) {
  int s1, s2; /* two streams' keys */
  /* Lost the stream: inside the acquisition (unless it found it closed),
   * or after it when another transaction has acquired the stream since. */
  CHECK_TRUE(sstm__esc_lost_stream(false, false, 0, 0));
  CHECK_FALSE(sstm__esc_lost_stream(false, true, 0, 0));
  CHECK_FALSE(sstm__esc_lost_stream(true, false, 7, 7));
  CHECK_TRUE(sstm__esc_lost_stream(true, false, 7, 8));

  /* The record: losses in a row on one stream; a commit on it clears it;
   * a loss on another stream starts again; an abort not charged to the
   * stream changes nothing. */
  sstm__esc_t e = {0};
  sstm__esc_record(&e, &s1, false, true);
  CHECK_EQ_PTR(e.key, &s1);
  CHECK_EQ_U(e.lost, 1);
  sstm__esc_record(&e, &s1, false, false);
  CHECK_EQ_U(e.lost, 1);
  sstm__esc_record(&e, &s1, false, true);
  CHECK_EQ_U(e.lost, 2);
  sstm__esc_record(&e, &s2, true, false); /* a commit on another stream */
  CHECK_EQ_U(e.lost, 2);
  sstm__esc_record(&e, &s2, false, true);
  CHECK_EQ_PTR(e.key, &s2);
  CHECK_EQ_U(e.lost, 1);
  sstm__esc_record(&e, &s2, true, false);
  CHECK_EQ_PTR(e.key, NULL);
  CHECK_EQ_U(e.lost, 0);

  /* The decision. */
  sstm__esc_t lost2 = {.key = &s1, .lost = SSTM__ESC_AFTER};
  sstm__esc_t lost1 = {.key = &s1, .lost = SSTM__ESC_AFTER - 1};
  sstm__esc_in_t quiet = {0};
  CHECK_EQ_I(sstm__esc_decide(&lost1, &s1, &quiet), SSTM__ESC_NONE);
  CHECK_EQ_I(sstm__esc_decide(&lost2, &s1, &quiet), SSTM__ESC_ENTER);
  CHECK_EQ_I(sstm__esc_decide(&lost2, &s2, &quiet), SSTM__ESC_NONE); /* another stream */
  sstm__esc_in_t held = {.turn_held = true};
  CHECK_EQ_I(sstm__esc_decide(&lost1, &s1, &held), SSTM__ESC_TURN);
  sstm__esc_in_t flight = {.in_flight = true};
  CHECK_EQ_I(sstm__esc_decide(&lost1, &s1, &flight), SSTM__ESC_TURN);
  CHECK_EQ_I(sstm__esc_decide(&lost2, &s1, &flight), SSTM__ESC_ENTER);
  sstm__esc_in_t serial = {.span = SSTM__ESC_SPAN};
  CHECK_EQ_I(sstm__esc_decide(&lost1, &s1, &serial), SSTM__ESC_TURN);
  CHECK_EQ_I(sstm__esc_decide(&lost2, &s1, &serial), SSTM__ESC_TURN);
  sstm__esc_in_t ending = {.span = SSTM__ESC_SPAN / 2 - 1};
  CHECK_EQ_I(sstm__esc_decide(&lost2, &s1, &ending), SSTM__ESC_ENTER); /* renewed */
  CHECK_EQ_I(sstm__esc_decide(&lost1, &s1, &ending), SSTM__ESC_TURN);
  /* Never waits: irrevocable, holding a turn, inside an earlier attempt's
   * action, an attempt that may be suspended (docs/design/tm-libc.md
   * (S12)); whatever the stream's state and the thread's record. */
  sstm__esc_in_t no[4] = {
      {.span = 5, .turn_held = true, .in_flight = true, .irrevocable = true},
      {.span = 5, .turn_held = true, .in_flight = true, .holds_turn = true},
      {.span = 5, .turn_held = true, .in_flight = true, .in_action = true},
      {.span = 5, .turn_held = true, .in_flight = true, .suspendable = true},
  };
  for (int i = 0; i < 4; i++) {
    CHECK_EQ_I(sstm__esc_decide(&lost2, &s1, &no[i]), SSTM__ESC_NONE);
    CHECK_EQ_I(sstm__esc_decide(&lost1, &s1, &no[i]), SSTM__ESC_NONE);
  }
  CHECK_EQ_U(sstm__esc_span_next(3), 2);
  CHECK_EQ_U(sstm__esc_span_next(0), 0);
}

/* ---- a loser escalates ----------------------------------------------------- */

static struct {
  sstm_file_t *f;
  int b_attempts;  /* __atomic */
  int a_acquired;  /* __atomic */
  uint32_t span_b; /* the span B saw when it started its fourth attempt */
} lz;

static void a_body(void *arg) {
  (void)arg;
  CHECK_EQ_I(sstm_fputc('A', lz.f), 'A'); /* holds own's write lock (etl) */
  __atomic_store_n(&lz.a_acquired, 1, __ATOMIC_RELEASE);
  /* Keep it until B has lost it twice and escalated: B's fourth attempt
   * began, so its third (the first in serial mode) ended. */
  while (__atomic_load_n(&lz.b_attempts, __ATOMIC_ACQUIRE) < 4)
    sstm_test_relax();
}

static void b_body(void *arg) {
  (void)arg;
  int n = __atomic_add_fetch(&lz.b_attempts, 1, __ATOMIC_ACQ_REL);
  if (n == 4) lz.span_b = sstm__stdio_span(lz.f);
  CHECK_EQ_I(sstm_fputc('B', lz.f), 'B');
}

static void loser_thread(sstm_tt_t *t) {
  if (t->idx == 0) {
    CHECK_OK(sstm_run(NULL, a_body, NULL));
  } else {
    while (!__atomic_load_n(&lz.a_acquired, __ATOMIC_ACQUIRE))
      sstm_test_relax();
    CHECK_OK(sstm_run(NULL, b_body, NULL));
  }
}

TEST(a_thread_that_loses_the_stream_twice_puts_it_in_serial_mode) {
  sstm_test_init();
  make_path();
  lz.f = sstm_fopen(path, "w");
  CHECK_NOT_NULL(lz.f);
  CHECK_EQ_U(sstm__stdio_span(lz.f), 0);
  sstm_test_run_threads(2, true, loser_thread, NULL);
  /* Attempts 1 and 2 lost the stream; attempt 3 entered serial mode and
   * took the turn (and lost again); attempt 4 found serial mode on. */
  CHECK_GE_I(lz.b_attempts, 4);
  CHECK_EQ_U(lz.span_b, SSTM__ESC_SPAN);
  CHECK_GE_U(sstm__stdio_turns(lz.f), 2);
  /* B's commit was a turn of serial mode: one less. */
  CHECK_EQ_U(sstm__stdio_span(lz.f), SSTM__ESC_SPAN - 1);
  CHECK_OK(sstm_fclose(lz.f));
  char buf[8];
  CHECK_EQ_U(contents(buf, sizeof buf), 2);
  CHECK_EQ_MEM(buf, "AB", 2);
  unlink(path);
  sstm_test_fini();
}

/* ---- the turn's holder waits for the acquisition that went first ----------- */

static struct {
  sstm_file_t *f;
  int a_acquired; /* __atomic */
  int b_attempts; /* __atomic */
} al;

static void al_a_body(void *arg) {
  (void)arg;
  /* Nothing in flight: no turn. Holds own's write lock (etl). */
  CHECK_EQ_I(sstm_fputc('A', al.f), 'A');
  __atomic_store_n(&al.a_acquired, 1, __ATOMIC_RELEASE);
  /* Keep the stream until B's second attempt holds the turn (its first
   * met this lock and lost), and a while longer: that attempt must not
   * touch own before this one ends. Without the holder's wait it meets
   * this lock again, and the test policy (suicide) restarts it at once. */
  while (sstm__stdio_turns(al.f) < 2)
    sstm_test_relax();
  for (int i = 0; i < 200; i++)
    sstm_test_relax();
}

static void al_b_body(void *arg) {
  (void)arg;
  __atomic_add_fetch(&al.b_attempts, 1, __ATOMIC_ACQ_REL);
  CHECK_EQ_I(sstm_fputc('B', al.f), 'B'); /* A in flight: takes the turn */
}

static void alone_thread(sstm_tt_t *t) {
  if (t->idx == 0) {
    CHECK_OK(sstm_run(NULL, al_a_body, NULL));
  } else {
    while (!__atomic_load_n(&al.a_acquired, __ATOMIC_ACQUIRE))
      sstm_test_relax();
    CHECK_OK(sstm_run(NULL, al_b_body, NULL));
  }
}

TEST(a_retry_holding_the_turn_waits_for_the_acquisition_that_went_first) {
  sstm_test_init();
  make_path();
  al.f = sstm_fopen(path, "w");
  CHECK_NOT_NULL(al.f);
  al.a_acquired = al.b_attempts = 0;
  /* The holder's wait ends only when A's attempt ends (not by its bound),
   * whatever the scheduling. */
  sstm__stdio_set_alone_ns(600ull * 1000000000ull);
  sstm_test_run_threads(2, true, alone_thread, NULL);
  sstm__stdio_set_alone_ns(1000000);
  CHECK_EQ_I(al.b_attempts, 2); /* B's retry did not meet A's lock */
  CHECK_EQ_U(sstm__stdio_turns(al.f), 2);
  CHECK_OK(sstm_fclose(al.f));
  char buf[8];
  CHECK_EQ_U(contents(buf, sizeof buf), 2);
  CHECK_EQ_MEM(buf, "AB", 2);
  unlink(path);
  sstm_test_fini();
}

/* ---- serial mode keeps the serial order ------------------------------------ */

#define REC 16

static struct {
  sstm_file_t *f;
  uint64_t counter; /* transactional: the serial order */
  unsigned per_thread;
} sm;

typedef struct sm_body {
  unsigned thread, seq;
  int attempts;
} sm_body_t;

static void sm_tx(void *arg) {
  sm_body_t *b = arg;
  b->attempts++;
  uint64_t ord = sstm_load_u64(&sm.counter);
  char rec[48];
  snprintf(rec, sizeof rec, "%06llu %02u %05u\n", (unsigned long long)ord, b->thread, b->seq);
  CHECK_EQ_I(sstm_fputs(rec, sm.f), REC);
  sstm_store_u64(&sm.counter, ord + 1);
  if (b->seq % 7 == 3 && b->attempts == 1) sstm_restart(); /* an abort in its turn */
}

static void sm_thread(sstm_tt_t *t) {
  for (unsigned i = 0; i < sm.per_thread; i++) {
    sm_body_t b = {.thread = t->idx, .seq = i};
    CHECK_OK(sstm_run(NULL, sm_tx, &b));
  }
}

TEST(serial_mode_keeps_a_shared_stream_in_serial_order) {
  sstm_test_init();
  make_path();
  sm.f = sstm_fopen(path, "w");
  CHECK_NOT_NULL(sm.f);
  sm.counter = 0;
  sm.per_thread = (unsigned)sstm_test_scaled(300, 30);
  unsigned n = sstm_test_threads(4);
  uint64_t total = (uint64_t)n * sm.per_thread;
  sstm__stdio_set_span(sm.f, (uint32_t)(total + 1000)); /* serial mode throughout */
  /* Turns only: no keeping for a batch ((S11), tests/internal/libc_batch.c) */
  sstm__stdio_set_batch(UINT32_MAX, 0);
  sstm_test_run_threads(n, true, sm_thread, NULL);
  sstm__stdio_set_batch(0, 0);
  CHECK_EQ_U(sm.counter, total);
  /* Every acquisition took the turn, the restarted attempts' too. */
  CHECK_GE_U(sstm__stdio_turns(sm.f), total);
  CHECK_EQ_U(sstm__stdio_span(sm.f), 1000); /* one less per commit */
  CHECK_OK(sstm_fclose(sm.f));
  size_t cap = (size_t)total * REC + 1;
  char *buf = malloc(cap);
  CHECK_NOT_NULL(buf);
  CHECK_EQ_U(contents(buf, cap), total * REC);
  /* The records are in the order of the counter they took: the stream's
   * order is the transactions' serial order. */
  for (uint64_t i = 0; i < total; i++) {
    char want[24];
    snprintf(want, sizeof want, "%06llu ", (unsigned long long)i);
    CHECK_EQ_MEM(buf + i * REC, want, 7);
  }
  free(buf);
  unlink(path);
  sstm_test_fini();
}

SSTM_TEST_MAIN()
