/* SPDX-License-Identifier: MIT */
/* Unit tests: API misuse. Misuse that cannot be reported by a return value
 * goes to the misuse handler; the default handler prints and aborts (checked
 * in forked children). */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../common/txhelp.h"

static int nmisuse;
static char last_msg[512];
static void record_misuse(const char *msg) {
  nmisuse++;
  snprintf(last_msg, sizeof last_msg, "%s", msg ? msg : "(null)");
}

static uint64_t x = 42;

TEST(access_outside_tx_calls_handler) {
  sstm_test_init();
  sstm_misuse_fn prev = sstm_set_misuse_handler(record_misuse);
  CHECK_NOT_NULL((const void *)prev); /* the default handler */
  nmisuse = 0;
  CHECK_EQ_U(sstm_load_u64(&x), 0); /* a returning handler makes it read 0 */
  CHECK_EQ_I(nmisuse, 1);
  CHECK_MSG(strlen(last_msg) > 0, "empty misuse message");
  /* the failed call's message */
  CHECK_EQ_STR(sstm_last_error(), last_msg);
  sstm_store_u64(&x, 7); /* ignored */
  CHECK_EQ_I(nmisuse, 2);
  CHECK_EQ_U(x, 42);
  uint8_t b = 9;
  sstm_store_u8(&b, 1);
  CHECK_EQ_U(b, 9);
  CHECK_EQ_U(sstm_load_u8(&b), 0);
  char dst[4] = "abc";
  sstm_store_bytes(dst, "xyz", 3);
  CHECK_EQ_STR(dst, "abc");
  CHECK_GE_I(nmisuse, 5);
  CHECK_EQ_PTR((const void *)sstm_set_misuse_handler(prev), (const void *)record_misuse);
  /* NULL restores the default: the handler it replaces is returned next */
  sstm_set_misuse_handler(record_misuse);
  CHECK_EQ_PTR((const void *)sstm_set_misuse_handler(NULL), (const void *)record_misuse);
  CHECK_EQ_PTR((const void *)sstm_set_misuse_handler(prev), (const void *)prev);
  sstm_test_fini();
}

static void *unregistered_access(void *p) {
  (void)p;
  CHECK_NULL(sstm_self());
  CHECK_EQ_U(sstm_load_u64(&x), 0);
  return NULL;
}

TEST(access_on_unregistered_thread_calls_handler) {
  sstm_test_init();
  sstm_set_misuse_handler(record_misuse);
  nmisuse = 0;
  pthread_t th;
  CHECK_EQ_I(pthread_create(&th, NULL, unregistered_access, NULL), 0);
  CHECK_EQ_I(pthread_join(th, NULL), 0);
  CHECK_EQ_I(nmisuse, 1);
  sstm_test_fini();
}

TEST(commit_without_begin_is_enotx) {
  sstm_test_init();
  sstm_set_misuse_handler(record_misuse);
  nmisuse = 0;
  CHECK_RC(sstm_commit(), SSTM_ENOTX);
  /* debug builds also report it (tx.h) */
  CHECK_EQ_I(nmisuse, txh_debug_build() ? 1 : 0);
  if (nmisuse) CHECK_CONTAINS(last_msg, "sstm_commit without a transaction");
  CHECK_RC(sstm_quiesce(), SSTM_OK); /* outside a transaction: fine */
  CHECK_EQ_I(nmisuse, txh_debug_build() ? 1 : 0);
  CHECK_FALSE(sstm_in_tx());
  CHECK_RC(sstm_become_irrevocable(), SSTM_ENOTX);
  CHECK_RC(sstm_on_commit(free, NULL), SSTM_ENOTX);
  /* still works afterwards */
  tx_store_u64(&x, 5);
  CHECK_EQ_U(x, 5);
  sstm_test_fini();
}

/* A body that detaches its descriptor and returns leaves its transaction
 * suspended: sstm_run must not report it committed. The transaction goes
 * on where it was once a thread attaches the descriptor. */
static uint64_t detached_word;
static sstm_desc_t *detached_desc;
static void body_that_detaches(void *arg) {
  (void)arg;
  sstm_store_u64(&detached_word, 7);
  detached_desc = sstm_desc_detach();
}

TEST(run_whose_body_detaches_its_descriptor_is_not_a_commit) {
  sstm_test_init();
  sstm_set_misuse_handler(record_misuse);
  nmisuse = 0;
  detached_word = 0;
  CHECK_RC(sstm_run(NULL, body_that_detaches, NULL), SSTM_ENOTHREAD);
  CHECK_CONTAINS(sstm_last_error(), "suspended, not committed");
  /* debug builds also report the commit that found no transaction */
  CHECK_EQ_I(nmisuse, txh_debug_build() ? 1 : 0);
  CHECK_NOT_NULL(detached_desc);
  CHECK_NULL(sstm_self());
  CHECK_EQ_U(detached_word, 0); /* not committed */
  CHECK_OK(sstm_desc_attach(detached_desc));
  CHECK_TRUE(sstm_in_tx());
  CHECK_OK(sstm_commit());
  CHECK_EQ_U(detached_word, 7);
  sstm_test_fini();
}

static int fn_called;
static void body(void *arg) {
  (void)arg;
  fn_called++;
}
static void *unregistered_run(void *p) {
  int *rc = p;
  *rc = sstm_run(NULL, body, NULL);
  return NULL;
}

TEST(begin_on_unregistered_thread) {
  sstm_test_init();
  pthread_t th;
  int rc = 0;
  fn_called = 0;
  CHECK_EQ_I(pthread_create(&th, NULL, unregistered_run, &rc), 0);
  CHECK_EQ_I(pthread_join(th, NULL), 0);
  CHECK_RC(rc, SSTM_ENOTHREAD);
  CHECK_EQ_I(fn_called, 0);
  /* also after unregistering the main thread */
  CHECK_OK(sstm_thread_exit());
  CHECK_RC(sstm_run(NULL, body, NULL), SSTM_ENOTHREAD);
  CHECK_EQ_I(fn_called, 0);
  CHECK_OK(sstm_shutdown());
}

/* An atomic block on a thread that is not registered: the begin reports it,
 * and with a returning handler the body runs outside any transaction (a
 * load gives zero, a store is dropped), each access reported again, as
 * tx.h documents. */
static int unreg_body_runs;
static uint64_t unreg_seen = 99;
static int unreg_rc = 12345;
static void *unregistered_block(void *p) {
  (void)p;
  SSTM_ATOMIC_BEGIN(NULL)
    unreg_body_runs++;
    unreg_seen = sstm_load_u64(&x);
    sstm_store_u64(&x, 1234);
  SSTM_ATOMIC_END();
  SSTM_ATOMIC_BEGIN(NULL) /* the same, with the result */
    unreg_body_runs++;
    SSTM_ATOMIC_END_RC(unreg_rc);
    return NULL;
}

TEST(atomic_block_on_unregistered_thread) {
  sstm_test_init();
  sstm_set_misuse_handler(record_misuse);
  nmisuse = 0;
  x = 42;
  pthread_t th;
  CHECK_EQ_I(pthread_create(&th, NULL, unregistered_block, NULL), 0);
  CHECK_EQ_I(pthread_join(th, NULL), 0);
  CHECK_EQ_I(unreg_body_runs, 2);
  CHECK_EQ_U(unreg_seen, 0);
  CHECK_EQ_U(x, 42);
  CHECK_RC(unreg_rc, SSTM_ENOTHREAD); /* as sstm_run() */
  /* begin, load, store, and (debug builds) the commit without a
   * transaction; then the second block's begin (and commit) */
  CHECK_EQ_I(nmisuse, txh_debug_build() ? 6 : 4);
  sstm_set_misuse_handler(NULL);
  sstm_test_fini();
}

/* SSTM_ATOMIC_END() drops the commit's result: a block whose body detached
 * its descriptor ended as silently as one that committed, its transaction
 * suspended. SSTM_ATOMIC_END_RC() stores the result, with sstm_run()'s
 * values (tx.h), its argument evaluated once. */
static uint64_t rc_word;
TEST(atomic_block_end_rc_reports_how_the_block_ended) {
  sstm_test_init();
  sstm_set_misuse_handler(record_misuse);
  int rcs[8] = {1, 1, 1, 1, 1, 1, 1, 1};
  int k = 0;
  rc_word = 0;
  SSTM_ATOMIC_BEGIN(NULL) /* committed */
    sstm_store_u64(&rc_word, 1);
    SSTM_ATOMIC_END_RC(rcs[k++]);
    CHECK_EQ_I(k, 1);
    CHECK_OK(rcs[0]);
    CHECK_EQ_U(rc_word, 1);
    SSTM_ATOMIC_BEGIN(NULL) /* cancelled */
      sstm_store_u64(&rc_word, 2);
      sstm_cancel();
      SSTM_ATOMIC_END_RC(rcs[k++]);
      CHECK_EQ_I(k, 2);
      CHECK_RC(rcs[1], SSTM_ECANCELED);
      CHECK_EQ_U(rc_word, 1);
      SSTM_ATOMIC_BEGIN(NULL) /* nested: the inner end leaves one level */
        sstm_store_u64(&rc_word, 3);
        SSTM_ATOMIC_BEGIN(NULL)
          sstm_store_u64(&rc_word, sstm_load_u64(&rc_word) + 1);
          SSTM_ATOMIC_END_RC(rcs[k++]);
          CHECK_TRUE(sstm_in_tx());
          SSTM_ATOMIC_END_RC(rcs[k++]);
          CHECK_EQ_I(k, 4);
          CHECK_OK(rcs[2]);
          CHECK_OK(rcs[3]);
          CHECK_EQ_U(rc_word, 4);
          /* the body detaches its descriptor: suspended, not committed */
          nmisuse = 0;
          sstm_desc_t *volatile d = NULL;
          SSTM_ATOMIC_BEGIN(NULL)
            sstm_store_u64(&rc_word, 5);
            d = sstm_desc_detach();
            SSTM_ATOMIC_END_RC(rcs[k++]);
            CHECK_EQ_I(k, 5);
            CHECK_RC(rcs[4], SSTM_ENOTHREAD);
            CHECK_CONTAINS(sstm_last_error(), "suspended, not committed");
            CHECK_EQ_I(nmisuse, txh_debug_build() ? 1 : 0); /* the commit's report */
            CHECK_EQ_U(rc_word, 4);
            CHECK_NOT_NULL(d);
            CHECK_OK(sstm_desc_attach(d));
            CHECK_TRUE(sstm_in_tx());
            CHECK_OK(sstm_commit());
            CHECK_EQ_U(rc_word, 5);
            /* the body committed its transaction itself */
            SSTM_ATOMIC_BEGIN(NULL)
              sstm_store_u64(&rc_word, 6);
              CHECK_OK(sstm_commit());
              SSTM_ATOMIC_END_RC(rcs[k++]);
              CHECK_EQ_I(k, 6);
              CHECK_RC(rcs[5], SSTM_ENOTX);
              CHECK_CONTAINS(sstm_last_error(), "no active transaction");
              CHECK_EQ_U(rc_word, 6);
              CHECK_FALSE(sstm_in_tx());
              sstm_set_misuse_handler(NULL);
              sstm_test_fini();
}

static void noop(void *arg) { (void)arg; }

/* NULL where a function or an output is required: an error code and a
 * message, nothing run, nothing written. */
TEST(null_arguments_are_einval) {
  sstm_test_init();
  sstm_set_misuse_handler(record_misuse);
  nmisuse = 0;
  CHECK_RC(sstm_run(NULL, NULL, NULL), SSTM_EINVAL);
  CHECK_CONTAINS(sstm_last_error(), "sstm_run: fn is NULL");
  CHECK_FALSE(sstm_in_tx());
  /* the argument first, also on a thread that is not registered */
  CHECK_OK(sstm_thread_exit());
  CHECK_RC(sstm_run(NULL, NULL, NULL), SSTM_EINVAL);
  CHECK_OK(sstm_thread_init());
  SSTM_ATOMIC_BEGIN(NULL)
    CHECK_RC(sstm_on_commit(NULL, NULL), SSTM_EINVAL);
    CHECK_CONTAINS(sstm_last_error(), "sstm_on_commit: fn is NULL");
    CHECK_RC(sstm_on_abort(NULL, NULL), SSTM_EINVAL);
    CHECK_CONTAINS(sstm_last_error(), "sstm_on_abort: fn is NULL");
    CHECK_OK(sstm_on_commit(noop, NULL)); /* the transaction goes on */
  SSTM_ATOMIC_END();
  CHECK_RC(sstm_stats_aggregate(NULL), SSTM_EINVAL);
  CHECK_CONTAINS(sstm_last_error(), "sstm_stats_aggregate: out is NULL");
  CHECK_RC(sstm_stats_dump(NULL), SSTM_EINVAL);
  CHECK_CONTAINS(sstm_last_error(), "sstm_stats_dump: out is NULL");
  CHECK_RC(sstm_desc_create(NULL), SSTM_EINVAL);
  CHECK_CONTAINS(sstm_last_error(), "sstm_desc_create: out is NULL");
  CHECK_RC(sstm_desc_destroy(NULL), SSTM_EINVAL);
  CHECK_EQ_I(nmisuse, 0); /* all reported by return value */
  sstm_set_misuse_handler(NULL);
  sstm_test_fini();
}

/* sstm_load_bytes outside a transaction: reported, and the destination
 * zeroed (never left holding a torn or uncommitted copy). */
TEST(load_bytes_outside_tx_calls_handler) {
  sstm_test_init();
  sstm_set_misuse_handler(record_misuse);
  nmisuse = 0;
  char src[8] = "abcdefg", dst[8] = "XXXXXXX";
  sstm_load_bytes(dst, src, sizeof src);
  CHECK_EQ_I(nmisuse, 1);
  CHECK_CONTAINS(last_msg, "sstm_load_bytes");
  static const char zero[8];
  CHECK_EQ_MEM(dst, zero, sizeof dst);
  sstm_load_bytes(NULL, src, 0); /* nothing to zero: reported, no memset(NULL) */
  CHECK_EQ_I(nmisuse, 2);
  sstm_set_misuse_handler(NULL);
  sstm_test_fini();
}

static void child_access(void) {
  sstm_test_init();
  (void)sstm_load_u64(&x);
}
static void child_restart_outside(void) {
  sstm_test_init();
  sstm_restart();
}
static void child_cancel_irrevocable(void) {
  sstm_test_init();
  sstm_attr_t a = {.irrevocable = true};
  SSTM_ATOMIC_BEGIN(&a)
    sstm_store_u64(&x, 1);
    sstm_cancel();
  SSTM_ATOMIC_END();
}
static void child_restart_irrevocable(void) {
  sstm_test_init();
  sstm_attr_t a = {.irrevocable = true};
  SSTM_ATOMIC_BEGIN(&a)
    sstm_store_u64(&x, 1);
    sstm_restart();
  SSTM_ATOMIC_END();
}

/* Asking for irrevocability inside the body counts as asking: a restart is
 * misuse after it, as with attr.irrevocable (a policy's escalation alone
 * is not: tests/unit/test_cm.c). */
static void child_restart_after_become_irrevocable(void) {
  sstm_test_init();
  SSTM_ATOMIC_BEGIN(NULL)
    CHECK_OK(sstm_become_irrevocable());
    sstm_store_u64(&x, 1);
    sstm_restart();
  SSTM_ATOMIC_END();
}

static void child_access_after_null_handler(void) {
  sstm_test_init();
  sstm_set_misuse_handler(record_misuse);
  sstm_set_misuse_handler(NULL); /* back to the default */
  (void)sstm_load_u64(&x);
}

/* The default handler prints the misuse and aborts. */
#define MISUSE "schedstm: API misuse: "
#define IN_IRREVOCABLE " in a transaction that asked to be irrevocable"
TEST(default_handler_aborts) {
  sstm_test_expect_abort(child_access, "load outside a transaction",
                         MISUSE
                         "transactional load outside a transaction (or on an unregistered thread)");
  sstm_test_expect_abort(
      child_access_after_null_handler, "load outside a transaction, handler reset with NULL",
      MISUSE "transactional load outside a transaction (or on an unregistered thread)");
  sstm_test_expect_abort(child_restart_outside, "sstm_restart outside a transaction",
                         MISUSE "sstm_restart outside a transaction");
  sstm_test_expect_abort(child_cancel_irrevocable, "sstm_cancel in an irrevocable transaction",
                         MISUSE "sstm_cancel" IN_IRREVOCABLE);
  sstm_test_expect_abort(child_restart_irrevocable, "sstm_restart in an irrevocable transaction",
                         MISUSE "sstm_restart" IN_IRREVOCABLE);
  sstm_test_expect_abort(child_restart_after_become_irrevocable,
                         "sstm_restart after sstm_become_irrevocable",
                         MISUSE "sstm_restart" IN_IRREVOCABLE);
}

static void exiting_handler(const char *msg) { _exit(msg && *msg ? 42 : 43); }
TEST(custom_handler_called_for_cancel_in_irrevocable) {
  fflush(stdout);
  pid_t pid = sstm_test_fork();
  CHECK_GE_I(pid, 0);
  if (pid == 0) {
    sstm_test_init();
    sstm_set_misuse_handler(exiting_handler);
    sstm_attr_t a = {.irrevocable = true};
    SSTM_ATOMIC_BEGIN(&a)
      sstm_cancel();
    SSTM_ATOMIC_END();
    _exit(0);
  }
  int st;
  CHECK_EQ_I(waitpid(pid, &st, 0), pid);
  CHECK_MSG(WIFEXITED(st), "child died: status 0x%x", st);
  CHECK_EQ_I(WEXITSTATUS(st), 42);
}

/* ---- teardown from code that runs on behalf of a transaction ----------
 * Actions, hooks and the policy run after the attempt has ended (depth 0)
 * but while the engine still uses the descriptor: shutting down, leaving
 * or detaching from there must be refused, not free the descriptor under
 * the running commit or abort (ASan saw the use after free). */
static int teardown_rc[4];
static sstm_desc_t *teardown_detached;
static void teardown_from_action(void *arg) {
  (void)arg;
  teardown_rc[0] = sstm_shutdown();
  teardown_rc[1] = sstm_thread_exit();
  teardown_detached = sstm_desc_detach();
}
static void register_teardown(void *arg) {
  CHECK_OK(sstm_on_commit(teardown_from_action, arg));
  CHECK_OK(sstm_on_abort(teardown_from_action, arg));
}
static int cancel_once;
static void register_teardown_and_cancel(void *arg) {
  register_teardown(arg);
  if (cancel_once++ == 0) sstm_restart();
}

TEST(teardown_from_actions_is_ebusy) {
  sstm_test_init();
  for (int mode = 0; mode < 2; mode++) {
    memset(teardown_rc, 0, sizeof teardown_rc);
    teardown_detached = (sstm_desc_t *)&x;
    cancel_once = 0;
    /* mode 0: on_commit runs; mode 1: an abort first runs on_abort */
    CHECK_OK(sstm_run(NULL, mode ? register_teardown_and_cancel : register_teardown, NULL));
    CHECK_RC(teardown_rc[0], SSTM_EBUSY);
    CHECK_RC(teardown_rc[1], SSTM_EBUSY);
    CHECK_CONTAINS(sstm_last_error(), "sstm_desc_detach: called from a callback");
    CHECK_TRUE(teardown_detached == NULL);
    CHECK_TRUE(sstm_self() != NULL); /* still registered, still attached */
    tx_store_u64(&x, 7 + (uint64_t)mode);
    CHECK_EQ_U(x, 7 + (uint64_t)mode);
  }
  sstm_test_fini(); /* and now they succeed */
}

static int hook_rc = 1, hook_calls;
static void hook_abort(void *arg, uint64_t txid, sstm_abort_reason_t r) {
  (void)arg, (void)txid, (void)r;
  hook_calls++;
  hook_rc = sstm_shutdown();
}
static void hook_commit(void *arg, uint64_t txid) {
  (void)arg, (void)txid;
  if (sstm_thread_exit() != SSTM_EBUSY) hook_rc = 2;
}
static void restart_once(void *arg) {
  (void)arg;
  if (cancel_once++ == 0) sstm_restart();
}
TEST(teardown_from_hooks_is_ebusy) {
  sstm_test_init();
  static const sstm_hooks_t h = {.tx_abort = hook_abort, .tx_commit = hook_commit};
  int handle = sstm_hooks_add(&h, NULL);
  CHECK_GE_I(handle, 0);
  cancel_once = 0;
  CHECK_OK(sstm_run(NULL, restart_once, NULL));
  CHECK_EQ_I(hook_calls, 1);
  CHECK_RC(hook_rc, SSTM_EBUSY);
  CHECK_OK(sstm_hooks_remove(handle));
  sstm_test_fini();
}

/* sstm_desc_detach from code that runs within an attempt on its behalf (a
 * tx_begin hook, the sampling callback) returns NULL (thread.h), as from
 * the actions and the hooks around it: the descriptor stays attached and
 * the attempt goes on. Before, these detached it, and the body's accesses
 * then went to the misuse handler (by default: the process aborted). */
static sstm_desc_t *in_attempt_detached[2];
static int in_attempt_calls[2];
static void detach_in_begin_hook(void *arg, uint64_t txid) {
  (void)arg, (void)txid;
  if (in_attempt_calls[0]++ == 0) in_attempt_detached[0] = sstm_desc_detach();
}
static void detach_in_sample(void *arg, const void *addr, bool is_write) {
  (void)arg, (void)addr, (void)is_write;
  if (in_attempt_calls[1]++ == 0) in_attempt_detached[1] = sstm_desc_detach();
}
TEST(detach_from_inside_an_attempt_is_refused) {
  sstm_config_t c;
  sstm_test_config(&c);
  c.sample_period = 1;
  c.sample_fn = detach_in_sample;
  CHECK_OK(sstm_init(&c));
  CHECK_OK(sstm_thread_init());
  sstm_set_misuse_handler(record_misuse);
  nmisuse = 0;
  static const sstm_hooks_t h = {.tx_begin = detach_in_begin_hook};
  int handle = sstm_hooks_add(&h, NULL);
  CHECK_GE_I(handle, 0);
  for (int i = 0; i < 2; i++) {
    in_attempt_detached[i] = (sstm_desc_t *)&x;
    in_attempt_calls[i] = 0;
  }
  sstm_desc_t *self = sstm_self();
  tx_store_u64(&x, 11);
  CHECK_EQ_U(x, 11);
  CHECK_EQ_I(in_attempt_calls[0], 1);
  CHECK_GE_I(in_attempt_calls[1], 1);
  CHECK_TRUE(in_attempt_detached[0] == NULL);
  CHECK_TRUE(in_attempt_detached[1] == NULL);
  CHECK_EQ_I(nmisuse, 0);
  CHECK_TRUE(sstm_self() == self);
  CHECK_OK(sstm_hooks_remove(handle));
  sstm_set_misuse_handler(NULL);
  CHECK_OK(sstm_thread_exit());
  CHECK_OK(sstm_shutdown());
}

/* sstm_commit from code that runs within an attempt on its behalf (a
 * tx_begin hook, the sampling callback) would end the attempt under the
 * body, whose accesses then ran outside any transaction (dropped, and
 * sstm_run returned 0): it goes to the misuse handler and returns
 * SSTM_ESTATE, and the transaction goes on to commit the body's writes. */
static int in_attempt_commit_rc[2] = {1, 1};
static void commit_in_begin_hook(void *arg, uint64_t txid) {
  (void)arg, (void)txid;
  if (in_attempt_calls[0]++ == 0) in_attempt_commit_rc[0] = sstm_commit();
}
static void commit_in_sample(void *arg, const void *addr, bool is_write) {
  (void)arg, (void)addr, (void)is_write;
  if (in_attempt_calls[1]++ == 0) in_attempt_commit_rc[1] = sstm_commit();
}
static uint64_t y2;
static void two_stores(void *arg) {
  (void)arg;
  sstm_store_u64(&x, sstm_load_u64(&x) + 1);
  sstm_store_u64(&y2, 5);
}
TEST(commit_from_inside_an_attempt_is_refused) {
  sstm_config_t c;
  sstm_test_config(&c);
  c.sample_period = 1;
  c.sample_fn = commit_in_sample;
  CHECK_OK(sstm_init(&c));
  CHECK_OK(sstm_thread_init());
  sstm_set_misuse_handler(record_misuse);
  nmisuse = 0;
  static const sstm_hooks_t h = {.tx_begin = commit_in_begin_hook};
  int handle = sstm_hooks_add(&h, NULL);
  CHECK_GE_I(handle, 0);
  in_attempt_calls[0] = in_attempt_calls[1] = 0;
  x = 1;
  y2 = 0;
  CHECK_OK(sstm_run(NULL, two_stores, NULL));
  CHECK_EQ_U(x, 2);
  CHECK_EQ_U(y2, 5);
  CHECK_RC(in_attempt_commit_rc[0], SSTM_ESTATE);
  CHECK_RC(in_attempt_commit_rc[1], SSTM_ESTATE);
  CHECK_EQ_I(nmisuse, 2);
  CHECK_CONTAINS(last_msg, "sstm_commit");
  CHECK_OK(sstm_hooks_remove(handle));
  sstm_set_misuse_handler(NULL);
  CHECK_OK(sstm_thread_exit());
  CHECK_OK(sstm_shutdown());
}

/* A hook that starts a transaction (hooks.h): sstm_run there is refused
 * with SSTM_ESTATE, an atomic block goes to the misuse handler and runs
 * outside any transaction (or flat-nested in the attempt a tx_begin hook
 * runs for), and the user's transaction goes on unharmed: its restart
 * returns to its own begin and its on_commit actions run. Before, the
 * hook's transaction overwrote the checkpoint (a restart jumped into a
 * dead frame) and dropped the actions. */
static int hk_rc[3] = {1, 1, 1}, hk_runs, hk_blocks, hk_actions, hk_attempts;
static uint64_t hk_word;
static void hk_body(void *arg) { (void)arg, hk_runs++; }
static void hk_try(int i) {
  hk_rc[i] = sstm_run(NULL, hk_body, NULL);
  SSTM_ATOMIC_BEGIN(NULL)
    hk_blocks++;
  SSTM_ATOMIC_END();
}
static void hk_begin(void *arg, uint64_t txid) { (void)arg, (void)txid, hk_try(0); }
static void hk_commit(void *arg, uint64_t txid) { (void)arg, (void)txid, hk_try(1); }
static void hk_abort(void *arg, uint64_t txid, sstm_abort_reason_t r) {
  (void)arg, (void)txid, (void)r, hk_try(2);
}
static void hk_action(void *arg) { (void)arg, hk_actions++; }
static void hk_user(void *arg) {
  (void)arg;
  CHECK_OK(sstm_on_commit(hk_action, NULL));
  sstm_store_u64(&hk_word, 7);
  if (hk_attempts++ == 0) sstm_restart();
}
TEST(hooks_cannot_start_transactions) {
  sstm_test_init();
  sstm_set_misuse_handler(record_misuse);
  static const sstm_hooks_t h = {
      .tx_begin = hk_begin, .tx_commit = hk_commit, .tx_abort = hk_abort};
  int handle = sstm_hooks_add(&h, NULL);
  CHECK_GE_I(handle, 0);
  nmisuse = 0;
  CHECK_OK(sstm_run(NULL, hk_user, NULL));
  CHECK_OK(sstm_hooks_remove(handle));
  CHECK_EQ_I(hk_attempts, 2);
  CHECK_EQ_I(hk_actions, 1);
  CHECK_EQ_U(tx_load_u64(&hk_word), 7);
  for (int i = 0; i < 3; i++)
    CHECK_RC(hk_rc[i], SSTM_ESTATE);
  CHECK_EQ_I(hk_runs, 0);
  /* two attempts begun, one aborted, one committed: four blocks, each
   * reported at its begin (debug builds also report the commits of the two
   * that ran outside any transaction) */
  CHECK_EQ_I(hk_blocks, 4);
  CHECK_EQ_I(nmisuse, txh_debug_build() ? 6 : 4);
  CHECK_FALSE(sstm_in_tx());
  sstm_set_misuse_handler(NULL);
  sstm_test_fini();
}

/* sstm_stats_foreach calls fn without holding the registry lock: fn may
 * call the other statistics functions (this deadlocked on the lock; the
 * watchdog turns a hang into a failure). */
static int foreach_inner_rc = 1, foreach_calls;
static void foreach_noop(const sstm_stats_t *s, void *arg) { (void)s, (void)arg; }
static void foreach_reenter(const sstm_stats_t *s, void *arg) {
  (void)s, (void)arg;
  sstm_stats_t total;
  foreach_calls++;
  foreach_inner_rc = sstm_stats_aggregate(&total);
  if (foreach_inner_rc == 0 && sstm_stats_foreach(foreach_noop, NULL) < 1) foreach_inner_rc = 3;
}
TEST(stats_foreach_callback_may_call_the_library) {
  sstm_test_init();
  tx_store_u64(&x, 1);
  CHECK_EQ_I(sstm_stats_foreach(foreach_reenter, NULL), 1);
  CHECK_EQ_I(foreach_calls, 1);
  CHECK_OK(foreach_inner_rc);
  sstm_test_fini();
}

/* A timeout too large for the clock waits without bound (it returned
 * SSTM_EBUSY at once: the deadline overflowed). */
static volatile int waiter_started, waiter_tid, waiter_returned;
static int waiter_rc = 1;
static sstm_party_t waited;
static void *wait_forever(void *arg) {
  (void)arg;
  waiter_tid = gettid();
  waiter_started = 1;
  waiter_rc = sstm_party_wait(&waited, SSTM_WAIT_BLOCK, UINT64_MAX);
  waiter_returned = 1;
  return NULL;
}
static pthread_t waiter_th;
TEST(party_wait_huge_timeout_waits_for_the_end) {
  sstm_test_init();
  SSTM_ATOMIC_BEGIN(NULL)
    (void)sstm_load_u64(&x);
    /* our attempt, suspended while the waiter starts: it stays active
     * until the commit below */
    waited.desc = sstm_self();
    waited.txid = sstm_desc_txid(waited.desc);
    CHECK_EQ_PTR(sstm_desc_detach(), waited.desc);
    CHECK_EQ_I(pthread_create(&waiter_th, NULL, wait_forever, NULL), 0);
    while (!waiter_started)
      usleep(1000);
    /* Asleep in the futex on our attempt, which is still running: with the
     * broken deadline it returned SSTM_EBUSY at once and never got there. */
    while (!sstm_test_in_futex(waiter_tid)) {
      CHECK_MSG(!waiter_returned, "the waiter returned %d while the attempt ran", waiter_rc);
      usleep(1000);
    }
    CHECK_OK(sstm_desc_attach(waited.desc));
  SSTM_ATOMIC_END();
  CHECK_EQ_I(pthread_join(waiter_th, NULL), 0);
  CHECK_OK(waiter_rc); /* returned because the attempt ended */
  sstm_test_fini();
}

SSTM_TEST_MAIN()
