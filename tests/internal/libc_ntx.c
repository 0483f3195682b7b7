/* SPDX-License-Identifier: MIT */
/* The transactional stdio's lock for calls outside transactions
 * (docs/design/tm-libc.md (S8), src/libc/ntx.h): a transaction's first
 * call on a stream (an acquisition, or a peek such as sstm_ftell) waits
 * while a call outside transactions holds the stream's lock, and that
 * lock is refused while a transaction has the stream in flight. Nothing
 * here depends on timing: a transaction that did not wait would be seen
 * done during the 50 ms the lock is held, and one that waits always
 * ends once the lock is released. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libc/ntx.h"
#include "runner.h"

static char path[64];

static void make_path(void) { sstm_test_tmp_file(path, sizeof path, "ntx"); }

static size_t contents(char *buf, size_t cap) {
  FILE *f = fopen(path, "r");
  CHECK_NOT_NULL(f);
  size_t n = fread(buf, 1, cap, f);
  fclose(f);
  return n;
}

static sstm_file_t *g_f;
static int g_peek;
static _Atomic int g_in, g_go, g_done;

static void body(void *arg) {
  (void)arg;
  if (g_peek)
    CHECK_EQ_I(sstm_ftell(g_f), 1);
  else
    CHECK_EQ_I(sstm_fputc('x', g_f), 'x');
  atomic_store_explicit(&g_in, 1, memory_order_seq_cst);
  while (atomic_load_explicit(&g_go, memory_order_seq_cst) == 0)
    sched_yield();
}

static void *runner(void *arg) {
  (void)arg;
  CHECK_OK(sstm_thread_init());
  CHECK_OK(sstm_run(NULL, body, NULL));
  atomic_store_explicit(&g_done, 1, memory_order_seq_cst);
  CHECK_OK(sstm_thread_exit());
  return NULL;
}

static void open_stream(void) {
  g_f = sstm_fopen(path, "w+");
  CHECK_NOT_NULL(g_f);
  CHECK_EQ_I(sstm_fputc('0', g_f), '0');
  atomic_store_explicit(&g_in, 0, memory_order_seq_cst);
  atomic_store_explicit(&g_go, 0, memory_order_seq_cst);
  atomic_store_explicit(&g_done, 0, memory_order_seq_cst);
}

TEST(first_call_of_a_transaction_waits_for_the_lock) {
  sstm_test_init();
  make_path();
  for (g_peek = 0; g_peek < 2; g_peek++) {
    open_stream();
    atomic_store_explicit(&g_go, 1, memory_order_seq_cst);
    CHECK_TRUE(sstm__stdio_ntx_lock(g_f));
    pthread_t t;
    CHECK_EQ_I(pthread_create(&t, NULL, runner, NULL), 0);
    usleep(50000);
    CHECK_EQ_I(atomic_load_explicit(&g_in, memory_order_seq_cst),
               0); /* waiting before it read the stream */
    sstm__stdio_ntx_unlock(g_f);
    CHECK_EQ_I(pthread_join(t, NULL), 0);
    CHECK_EQ_I(atomic_load_explicit(&g_done, memory_order_seq_cst), 1);
    CHECK_OK(sstm_fclose(g_f));
    char buf[8];
    size_t n = contents(buf, sizeof buf);
    CHECK_EQ_U(n, g_peek ? 1u : 2u);
    CHECK_EQ_MEM(buf, g_peek ? "0" : "0x", n);
  }
  unlink(path);
  sstm_test_fini();
}

TEST(lock_is_refused_while_a_transaction_has_the_stream) {
  sstm_test_init();
  make_path();
  for (g_peek = 0; g_peek < 2; g_peek++) {
    open_stream();
    pthread_t t;
    CHECK_EQ_I(pthread_create(&t, NULL, runner, NULL), 0);
    while (atomic_load_explicit(&g_in, memory_order_seq_cst) == 0)
      sched_yield();
    CHECK_FALSE(sstm__stdio_ntx_lock(g_f)); /* acquired, or peeked at: in flight */
    atomic_store_explicit(&g_go, 1, memory_order_seq_cst);
    CHECK_EQ_I(pthread_join(t, NULL), 0);
    CHECK_TRUE(sstm__stdio_ntx_lock(g_f)); /* ended: installed, counters back to 0 */
    sstm__stdio_ntx_unlock(g_f);
    CHECK_OK(sstm_fclose(g_f));
  }
  unlink(path);
  sstm_test_fini();
}

SSTM_TEST_MAIN()
