/* SPDX-License-Identifier: MIT */
/* A stream kept by one thread (docs/design/tm-libc.md (S10)): the
 * keeper's transactions of buffered calls work on the installed state in
 * place, without the stream's transactional word and without an action;
 * everyone else hands the stream back first. Each test makes a thread the
 * keeper (checked through the stdio layer's test hook, sstm__stdio_solo),
 * then checks one guarantee that solo mode must keep:
 * - an aborted attempt leaves no byte and no position change, whether the
 *   keeper or another thread finds it rolled back;
 * - another thread's transaction or call outside transactions waits for
 *   the keeper's attempt in flight and sees only committed state;
 * - a transaction of another thread that read other data before the
 *   keeper's commit does not see the keeper's stream changes with the old
 *   data (it restarts);
 * - an attempt that leaves solo mode in flight (a call the buffers do not
 *   serve) commits or vanishes whole;
 * - a keeper that exits leaves a stream that others can use.
 * The interleavings are forced with flags (release stores, acquire loads:
 * what the setter did before is seen); sleeps only make the other
 * thread's call more likely to arrive while the keeper's attempt is in
 * flight, and the checks hold whatever the timing. */
#define _GNU_SOURCE
#include <pthread.h>
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
  snprintf(path, sizeof path, "/tmp/sstm-solo-XXXXXX");
  int fd = mkstemp(path);
  CHECK_GE_I(fd, 0);
  close(fd);
}

static void teardown(void) {
  unlink(path);
  sstm_test_fini();
}

static size_t contents(char *buf, size_t cap) {
  FILE *f = fopen(path, "r");
  CHECK_NOT_NULL(f);
  size_t n = fread(buf, 1, cap, f);
  fclose(f);
  return n;
}

enum { SOLO_C = 1, SOLO_A = 2, SOLO_I = 3 };

static void putc_tx(void *arg) {
  sstm_file_t *f = arg;
  CHECK_EQ_I(sstm_fputc('.', f), '.');
}

/* One-call transactions until this thread keeps f (a few suffice: the
 * stream's word must still hold this thread's last commit). Returns the
 * calls made. */
static int make_keeper(sstm_file_t *f) {
  for (int i = 1; i <= 16; i++) {
    CHECK_OK(sstm_run(NULL, putc_tx, f));
    if (sstm__stdio_solo(f) != 0) return i;
  }
  CHECK_TRUE(!"the thread never kept the stream");
  return 0;
}

static sstm_file_t *g_f;
static _Atomic int g_in, g_done;
static long g_seen;
static int g_attempts, g_n;

/* ---- the keeper's rollback ---- */

static void rolled_back_body(void *arg) {
  (void)arg;
  g_attempts++;
  CHECK_EQ_I(sstm_fputs("xyz", g_f), 3); /* in place */
  CHECK_EQ_U(sstm__stdio_solo(g_f) & 0xff, SOLO_I);
  sstm_cancel();
}

static void *other_putc(void *arg) {
  (void)arg;
  CHECK_OK(sstm_thread_init());
  g_seen = (long)sstm_ftell(g_f); /* a transaction of its own: hands back */
  CHECK_EQ_I(sstm_fputc('o', g_f), 'o');
  CHECK_OK(sstm_thread_exit());
  return NULL;
}

/* The keeper cancels an attempt that wrote in place; the next user (the
 * keeper itself, then another thread) must see the stream as it was. */
TEST(a_rolled_back_solo_attempt_leaves_no_byte_and_no_position_change) {
  setup();
  g_f = sstm_fopen(path, "w+");
  CHECK_NOT_NULL(g_f);
  int n = make_keeper(g_f);
  g_attempts = 0;
  CHECK_EQ_I(sstm_run(NULL, rolled_back_body, NULL), SSTM_ECANCELED);
  CHECK_EQ_U(sstm__stdio_solo(g_f) & 0xff, SOLO_A);
  /* the keeper's next attempt puts it back itself */
  CHECK_OK(sstm_run(NULL, putc_tx, g_f));
  n++;
  CHECK_EQ_I(sstm_run(NULL, rolled_back_body, NULL), SSTM_ECANCELED);
  CHECK_EQ_U(sstm__stdio_solo(g_f) & 0xff, SOLO_A);
  /* another thread finds it rolled back and hands it back */
  pthread_t t;
  CHECK_EQ_I(pthread_create(&t, NULL, other_putc, NULL), 0);
  CHECK_EQ_I(pthread_join(t, NULL), 0);
  CHECK_EQ_I(g_seen, n);
  CHECK_EQ_U(sstm__stdio_solo(g_f), 0);
  CHECK_EQ_I(sstm_ftell(g_f), n + 1);
  CHECK_OK(sstm_fclose(g_f));
  char buf[64];
  CHECK_EQ_U(contents(buf, sizeof buf), (size_t)n + 1);
  for (int i = 0; i < n; i++)
    CHECK_EQ_I(buf[i], '.');
  CHECK_EQ_I(buf[n], 'o');
  teardown();
}

/* ---- another thread while the keeper's attempt is in flight ---- */

static int g_commit; /* the keeper's attempt commits (else cancels) */

static void in_flight_body(void *arg) {
  (void)arg;
  CHECK_EQ_I(sstm_fputc('k', g_f), 'k');
  CHECK_EQ_U(sstm__stdio_solo(g_f) & 0xff, SOLO_I);
  atomic_store_explicit(&g_in, 1, memory_order_release);
  usleep(30000); /* the other thread's call most likely arrives now */
  if (!g_commit) sstm_cancel();
}

static int g_outside; /* the other thread's call: 0 ftell then fputc in transactions, 1 fputc
                         outside transactions, 2 fputc in a transaction (an acquisition first) */
static void tell_tx(void *arg) {
  (void)arg;
  g_seen = (long)sstm_ftell(g_f);
}
static void *other_during(void *arg) {
  (void)arg;
  CHECK_OK(sstm_thread_init());
  while (!atomic_load_explicit(&g_in, memory_order_acquire))
    sched_yield();
  if (g_outside == 1) {
    CHECK_EQ_I(sstm_fputc('o', g_f), 'o'); /* in place under the lock, after hand-back */
  } else if (g_outside == 2) {
    CHECK_OK(sstm_run(NULL, putc_tx, g_f));
  } else {
    CHECK_OK(sstm_run(NULL, tell_tx, NULL));
    CHECK_OK(sstm_run(NULL, putc_tx, g_f));
  }
  CHECK_OK(sstm_thread_exit());
  return NULL;
}

/* Six runs: the keeper commits or cancels; the other thread's calls are
 * a peek and a write in transactions, a write outside transactions, or a
 * write in a transaction. The other thread's bytes come after the
 * keeper's committed ones, never after a cancelled one, and its ftell
 * sees the committed position. */
TEST(another_thread_waits_for_the_keepers_attempt_and_sees_committed_state) {
  for (int run = 0; run < 6; run++) {
    setup();
    g_commit = run & 1, g_outside = run >> 1;
    g_f = sstm_fopen(path, "w+");
    CHECK_NOT_NULL(g_f);
    int n = make_keeper(g_f);
    atomic_store_explicit(&g_in, 0, memory_order_release);
    g_seen = -1;
    pthread_t t;
    CHECK_EQ_I(pthread_create(&t, NULL, other_during, NULL), 0);
    CHECK_EQ_I(sstm_run(NULL, in_flight_body, NULL), g_commit ? 0 : SSTM_ECANCELED);
    CHECK_EQ_I(pthread_join(t, NULL), 0);
    int k = n + (g_commit ? 1 : 0); /* committed bytes before the other's */
    if (g_outside == 0) CHECK_EQ_I(g_seen, k);
    CHECK_OK(sstm_fclose(g_f));
    char buf[64];
    CHECK_EQ_U(contents(buf, sizeof buf), (size_t)k + 1);
    if (g_commit) CHECK_EQ_I(buf[n], 'k');
    CHECK_EQ_I(buf[k], g_outside == 1 ? 'o' : '.');
    CHECK_TRUE(memchr(buf, 'k', (size_t)k + 1) == (g_commit ? buf + n : NULL));
    teardown();
  }
}

/* ---- serialisability with the keeper's other data ---- */

static uint64_t g_x; /* written with the keeper's byte, in one transaction */
static _Atomic int g_read_x;
static long g_rx, g_pos;

static void keeper_x_body(void *arg) {
  (void)arg;
  CHECK_EQ_I(sstm_fputc('k', g_f), 'k');
  sstm_store_u64(&g_x, 1);
}

static void reader_body(void *arg) {
  (void)arg;
  g_rx = (long)sstm_load_u64(&g_x);
  if (!atomic_load_explicit(&g_done, memory_order_acquire)) {
    atomic_store_explicit(&g_read_x, 1, memory_order_release);
    while (!atomic_load_explicit(&g_done, memory_order_acquire)) /* the keeper commits meanwhile */
      sched_yield();
  }
  g_pos = (long)sstm_ftell(g_f);
}

static void *other_reader(void *arg) {
  (void)arg;
  CHECK_OK(sstm_thread_init());
  CHECK_OK(sstm_run(NULL, reader_body, NULL));
  CHECK_OK(sstm_thread_exit());
  return NULL;
}

/* The other thread reads x (0), then the keeper commits x = 1 with a byte
 * in place, then the other thread asks for the position: it must not
 * commit having seen x == 0 and the keeper's byte. */
TEST(a_transaction_that_read_older_data_does_not_see_the_keepers_changes) {
  setup();
  g_f = sstm_fopen(path, "w+");
  CHECK_NOT_NULL(g_f);
  g_x = 0;
  int n = make_keeper(g_f);
  atomic_store_explicit(&g_read_x, 0, memory_order_release);
  atomic_store_explicit(&g_done, 0, memory_order_release);
  pthread_t t;
  CHECK_EQ_I(pthread_create(&t, NULL, other_reader, NULL), 0);
  while (!atomic_load_explicit(&g_read_x, memory_order_acquire))
    sched_yield();
  CHECK_OK(sstm_run(NULL, keeper_x_body, NULL));
  atomic_store_explicit(&g_done, 1, memory_order_release);
  CHECK_EQ_I(pthread_join(t, NULL), 0);
  CHECK_EQ_I(g_rx, 1);
  CHECK_EQ_I(g_pos, n + 1);
  CHECK_OK(sstm_fclose(g_f));
  teardown();
}

/* ---- leaving solo mode in flight ---- */

static char g_big[6000];

static void leave_body(void *arg) {
  (void)arg;
  g_attempts++;
  CHECK_EQ_I(sstm_fputc('a', g_f), 'a'); /* in place */
  /* more than the buffer: the attempt leaves solo mode, its 'a' kept */
  CHECK_EQ_U(sstm_fwrite(g_big, 1, sizeof g_big, g_f), sizeof g_big);
  CHECK_EQ_U(sstm__stdio_solo(g_f), 0);
  CHECK_EQ_I(sstm_fputc('b', g_f), 'b');
  if (g_attempts == 1) sstm_restart();
}

TEST(an_attempt_that_leaves_solo_mode_commits_or_vanishes_whole) {
  setup();
  g_f = sstm_fopen(path, "w+");
  CHECK_NOT_NULL(g_f);
  memset(g_big, 'z', sizeof g_big);
  int n = make_keeper(g_f);
  g_attempts = 0;
  CHECK_OK(sstm_run(NULL, leave_body, NULL));
  CHECK_EQ_I(g_attempts, 2);
  CHECK_EQ_I(sstm_ftell(g_f), n + 2 + (long)sizeof g_big);
  CHECK_OK(sstm_fclose(g_f));
  static char buf[8192];
  size_t len = contents(buf, sizeof buf);
  CHECK_EQ_U(len, (size_t)n + 2 + sizeof g_big);
  CHECK_EQ_I(buf[n], 'a');
  CHECK_EQ_I(buf[n + 1], 'z');
  CHECK_EQ_I(buf[n + sizeof g_big], 'z');
  CHECK_EQ_I(buf[n + 1 + sizeof g_big], 'b');
  teardown();
}

/* ---- a keeper that exits ---- */

static void *keeper_thread(void *arg) {
  (void)arg;
  CHECK_OK(sstm_thread_init());
  g_n = make_keeper(g_f);
  CHECK_EQ_I(sstm_run(NULL, rolled_back_body, NULL), SSTM_ECANCELED); /* leaves it rolled back */
  CHECK_OK(sstm_thread_exit());
  return NULL;
}

TEST(a_stream_whose_keeper_exited_is_handed_back_by_its_next_user) {
  setup();
  g_f = sstm_fopen(path, "w+");
  CHECK_NOT_NULL(g_f);
  pthread_t t;
  CHECK_EQ_I(pthread_create(&t, NULL, keeper_thread, NULL), 0);
  CHECK_EQ_I(pthread_join(t, NULL), 0);
  CHECK_EQ_U(sstm__stdio_solo(g_f) & 0xff, SOLO_A);
  int n = g_n;
  CHECK_EQ_I(sstm_ftell(g_f), n);
  CHECK_EQ_I(sstm_fputc('m', g_f), 'm');
  CHECK_OK(sstm_fclose(g_f));
  char buf[64];
  CHECK_EQ_U(contents(buf, sizeof buf), (size_t)n + 1);
  CHECK_EQ_I(buf[n], 'm');
  teardown();
}

SSTM_TEST_MAIN()
