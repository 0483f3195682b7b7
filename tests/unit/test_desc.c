/* SPDX-License-Identifier: MIT */
/* Unit tests: descriptors (create/destroy, detach/attach across threads)
 * and remote abort (sstm_desc_kill). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "../common/txhelp.h"

static uint64_t x, y, w;
/* a word in a stripe of its own: touching it involves no other stripe */
static uint64_t far[512] __attribute__((aligned(4096)));
#define FAR (&far[256])
static volatile int attempts;

struct attach_try {
  sstm_desc_t *d;
  int rc;
};
static void *try_attach(void *p) {
  struct attach_try *a = p;
  a->rc = sstm_desc_attach(a->d);
  CHECK_NULL(sstm_self());
  return NULL;
}

TEST(detach_attach_rules) {
  sstm_test_init();
  sstm_desc_t *d = sstm_self();
  CHECK_NOT_NULL(d);
  CHECK_RC(sstm_desc_attach(NULL), SSTM_EINVAL);
  /* attached to another thread: EINVAL */
  pthread_t th;
  struct attach_try at = {d, 12345};
  CHECK_EQ_I(pthread_create(&th, NULL, try_attach, &at), 0);
  CHECK_EQ_I(pthread_join(th, NULL), 0);
  CHECK_RC(at.rc, SSTM_EINVAL);
  sstm_desc_t *e = NULL;
  CHECK_OK(sstm_desc_create(&e));
  CHECK_NOT_NULL(e);
  CHECK_NE_PTR(e, d);
  CHECK_NE_U(sstm_desc_slot(e), sstm_desc_slot(d));
  CHECK_RC(sstm_desc_attach(e), SSTM_EBUSY); /* the thread has one */
  CHECK_EQ_PTR(sstm_desc_detach(), d);
  CHECK_NULL(sstm_self());
  CHECK_NULL(sstm_desc_detach());
  CHECK_OK(sstm_desc_attach(e));
  CHECK_EQ_PTR(sstm_self(), e);
  CHECK_EQ_I(sstm_desc_tid(e), gettid());
  tx_store_u64(&x, 3); /* a created descriptor runs transactions */
  CHECK_EQ_U(x, 3);
  CHECK_RC(sstm_desc_destroy(e), SSTM_EBUSY); /* attached */
  CHECK_EQ_PTR(sstm_desc_detach(), e);
  CHECK_OK(sstm_desc_destroy(e));
  CHECK_RC(sstm_desc_attach(e), SSTM_EINVAL); /* destroyed */
  CHECK_NULL(sstm_self());
  CHECK_OK(sstm_desc_attach(d));
  sstm_test_fini();
}

TEST(destroy_with_suspended_tx_is_ebusy) {
  sstm_test_init();
  sstm_desc_t *e = NULL;
  CHECK_OK(sstm_desc_create(&e));
  sstm_desc_t *d = sstm_desc_detach();
  CHECK_OK(sstm_desc_attach(e));
  SSTM_ATOMIC_BEGIN(NULL)
    sstm_store_u64(&x, 9);
    CHECK_EQ_PTR(sstm_desc_detach(), e);
    CHECK_RC(sstm_desc_destroy(e), SSTM_EBUSY);
    CHECK_OK(sstm_desc_attach(e));
  SSTM_ATOMIC_END();
  CHECK_EQ_U(x, 9);
  CHECK_EQ_PTR(sstm_desc_detach(), e);
  CHECK_OK(sstm_desc_destroy(e));
  CHECK_OK(sstm_desc_attach(d));
  sstm_test_fini();
}

/* sstm_desc_create and sstm_desc_destroy inside a transaction return
 * SSTM_EBUSY: an abort undoes neither. A body that created a descriptor
 * left one behind per aborted attempt (its handle lost with the attempt;
 * sstm_shutdown then refused), and one that destroyed a descriptor
 * destroyed the stale handle again in its next attempt. */
static volatile int in_tx_rc[3], in_tx_destroy_rc[3];
static sstm_desc_t *volatile in_tx_made[3];
TEST(create_and_destroy_refuse_inside_a_transaction) {
  sstm_test_init();
  sstm_desc_t *e = NULL;
  CHECK_OK(sstm_desc_create(&e));
  attempts = 0;
  SSTM_ATOMIC_BEGIN(NULL)
    int k = attempts++;
    sstm_desc_t *n = NULL;
    in_tx_rc[k] = sstm_desc_create(&n);
    in_tx_made[k] = n;
    in_tx_destroy_rc[k] = sstm_desc_destroy(e);
    if (k < 2) sstm_restart(); /* two aborted attempts, then a commit */
  SSTM_ATOMIC_END();
  CHECK_EQ_I(attempts, 3);
  for (int k = 0; k < 3; k++) {
    CHECK_RC(in_tx_rc[k], SSTM_EBUSY);
    CHECK_NULL(in_tx_made[k]);
    CHECK_RC(in_tx_destroy_rc[k], SSTM_EBUSY);
  }
  CHECK_NOT_NULL(strstr(sstm_last_error(), "inside a transaction"));
  CHECK_OK(sstm_desc_destroy(e)); /* still there, and destroyed outside */
  sstm_test_fini();               /* its sstm_shutdown finds no descriptor left behind */
}

/* Attempt ids are unique in the process, not only per descriptor: two
 * fresh descriptors that ran the same number of attempts, one of them
 * suspended inside a transaction on the thread that runs the other (as an
 * executor's paused transaction is), show different ids; within each the
 * id grows by one per attempt. (Layers key per-attempt state by the id
 * alone: the transactional stdio's views and kept streams.) */
static uint64_t uid_1, uid_2, uid_again;
/* Inside e1's transaction: suspend it, run one transaction on e2, attach
 * e1 again. A function of its own: no CHECK in the frame of the setjmp. */
static __attribute__((noinline)) void run_other_descriptor(sstm_desc_t *e1, sstm_desc_t *e2) {
  uid_1 = sstm_txid();
  CHECK_EQ_PTR(sstm_desc_detach(), e1); /* suspended inside its transaction */
  CHECK_OK(sstm_desc_attach(e2));
  tx_store_u64(&far[0], 1); /* not x's stripe, which e1 holds */
  SSTM_ATOMIC_BEGIN(NULL)
    sstm_store_u64(&far[0], 2);
    uid_2 = sstm_txid();
  SSTM_ATOMIC_END();
  CHECK_EQ_PTR(sstm_desc_detach(), e2);
  CHECK_OK(sstm_desc_attach(e1));
  uid_again = sstm_txid();
}

TEST(attempt_ids_are_unique_across_descriptors) {
  sstm_test_init();
  sstm_desc_t *e1 = NULL, *e2 = NULL;
  CHECK_OK(sstm_desc_create(&e1));
  CHECK_OK(sstm_desc_create(&e2));
  sstm_desc_t *d = sstm_desc_detach();
  CHECK_OK(sstm_desc_attach(e1));
  tx_store_u64(&x, 1);
  uint64_t first1 = sstm_desc_txid(e1);
  SSTM_ATOMIC_BEGIN(NULL)
    sstm_store_u64(&x, 2);
    run_other_descriptor(e1, e2);
  SSTM_ATOMIC_END();
  CHECK_EQ_U(x, 2);
  CHECK_EQ_U(far[0], 2);
  CHECK_EQ_U(uid_1, first1 + 1); /* one more per attempt */
  CHECK_EQ_U(uid_again, uid_1);
  CHECK_NE_U(uid_1, 0);
  CHECK_NE_U(uid_2, 0);
  CHECK_NE_U(uid_1, uid_2); /* the same count of attempts, different ids */
  CHECK_NE_U(sstm_desc_txid(e1), sstm_desc_txid(e2));
  CHECK_EQ_PTR(sstm_desc_detach(), e1);
  CHECK_OK(sstm_desc_destroy(e1));
  CHECK_OK(sstm_desc_destroy(e2));
  CHECK_OK(sstm_desc_attach(d));
  sstm_test_fini();
}

/* ---- a transaction that moves between threads ------------------------- */

struct handoff {
  sstm_desc_t *d;
  uint64_t txid;
  bool commit_here;
  int commit_rc;
  int tid;
};

static void *continue_on_b(void *p) {
  struct handoff *h = p;
  CHECK_NULL(sstm_self());
  CHECK_OK(sstm_desc_attach(h->d));
  h->tid = gettid();
  CHECK_EQ_I(sstm_desc_tid(h->d), h->tid);
  CHECK_TRUE(sstm_in_tx());
  CHECK_EQ_U(sstm_txid(), h->txid);
  CHECK_EQ_U(sstm_load_u64(&x), 1); /* A's write, read on B */
  sstm_store_u64(&y, sstm_load_u64(&x) + 1);
  CHECK_EQ_U(y, 0);
  if (h->commit_here) {
    h->commit_rc = sstm_commit();
    CHECK_FALSE(sstm_in_tx());
  }
  CHECK_EQ_PTR(sstm_desc_detach(), h->d);
  return NULL;
}

static int desc_misuse;
static void count_misuse(const char *msg) {
  CHECK_CONTAINS(msg, "sstm_commit without a transaction");
  desc_misuse++;
}

TEST(detach_attach_across_threads_commit_on_b) {
  sstm_test_init();
  /* The block's closing sstm_commit() finds the transaction committed on B:
   * SSTM_ENOTX, which debug builds also report to the misuse handler. */
  sstm_set_misuse_handler(count_misuse);
  desc_misuse = 0;
  x = y = 0;
  static struct handoff h;
  memset(&h, 0, sizeof h);
  h.commit_here = true;
  h.commit_rc = 12345;
  SSTM_ATOMIC_BEGIN(NULL)
    sstm_store_u64(&x, 1);
    h.txid = sstm_txid();
    h.d = sstm_desc_detach();
    CHECK_NOT_NULL(h.d);
    CHECK_FALSE(sstm_in_tx());
    pthread_t th;
    CHECK_EQ_I(pthread_create(&th, NULL, continue_on_b, &h), 0);
    CHECK_EQ_I(pthread_join(th, NULL), 0);
    CHECK_OK(sstm_desc_attach(h.d));
    CHECK_FALSE(sstm_in_tx()); /* B committed it */
  SSTM_ATOMIC_END();           /* sstm_commit() here returns SSTM_ENOTX */
  CHECK_EQ_I(desc_misuse, txh_debug_build() ? 1 : 0);
  sstm_set_misuse_handler(NULL);
  CHECK_OK(h.commit_rc);
  CHECK_EQ_U(x, 1);
  CHECK_EQ_U(y, 2);
  CHECK_EQ_I(sstm_desc_tid(sstm_self()), gettid());
  sstm_stats_t s;
  CHECK_OK(sstm_stats_get(sstm_self(), &s));
  CHECK_EQ_U(s.commits_update, 1);
  sstm_test_fini();
}

TEST(detach_attach_across_threads_commit_on_a) {
  sstm_test_init();
  x = y = 0;
  static struct handoff h;
  memset(&h, 0, sizeof h);
  h.commit_here = false;
  SSTM_ATOMIC_BEGIN(NULL)
    sstm_store_u64(&x, 1);
    h.txid = sstm_txid();
    h.d = sstm_desc_detach();
    pthread_t th;
    CHECK_EQ_I(pthread_create(&th, NULL, continue_on_b, &h), 0);
    CHECK_EQ_I(pthread_join(th, NULL), 0);
    CHECK_OK(sstm_desc_attach(h.d));
    CHECK_TRUE(sstm_in_tx());
    CHECK_EQ_U(sstm_txid(), h.txid);
    CHECK_EQ_U(sstm_load_u64(&y), 2); /* B's write, read back on A */
    CHECK_EQ_U(y, 0);
  SSTM_ATOMIC_END();
  CHECK_EQ_U(x, 1);
  CHECK_EQ_U(y, 2);
  sstm_test_fini();
}

/* ---- remote abort -------------------------------------------------------- */

static void writer_w(void *arg) {
  sstm_store_u64(&w, sstm_load_u64(&w) + (uint64_t)(uintptr_t)arg);
}

static int nabort_cb;
static void count_abort(void *arg) {
  (void)arg;
  nabort_cb++;
}

static sstm_abort_reason_t hook_reasons[16];
static int nhook;
static void h_abort(void *arg, uint64_t txid, sstm_abort_reason_t r) {
  (void)arg;
  (void)txid;
  if (nhook < 16) hook_reasons[nhook] = r;
  nhook++;
}
static const sstm_hooks_t HOOKS = {.tx_abort = h_abort};

/* The victim is suspended holding (ETL) the lock of w; it is killed; then
 * another transaction writes w without waiting for it; the victim aborts
 * with reason "killed" at its next barrier and its retry sees the new w. */
static void kill_suspended(bool barrier_is_commit) {
  sstm_test_init();
  CHECK_GE_I(sstm_hooks_add(&HOOKS, NULL), 0);
  w = 10;
  x = 0;
  attempts = 0;
  nabort_cb = 0;
  nhook = 0;
  sstm_desc_t *victim = sstm_self();
  SSTM_ATOMIC_BEGIN(NULL)
    attempts++;
    uint64_t v = sstm_load_u64(&w);
    sstm_store_u64(&w, v + 1);
    sstm_store_u64(&x, v);
    if (attempts == 1) {
      CHECK_OK(sstm_on_abort(count_abort, NULL));
      uint64_t txid = sstm_txid();
      CHECK_EQ_PTR(sstm_desc_detach(), victim);
      CHECK_OK(sstm_desc_attach(txh_other_desc()));
      CHECK_RC(sstm_desc_kill(victim, txid + 1000), SSTM_ENOTX); /* no such attempt */
      CHECK_OK(sstm_desc_kill(victim, txid));
      /* asked again: the attempt is already killed, the effect asked for
       * (0, by its id or as the current attempt) */
      CHECK_OK(sstm_desc_kill(victim, txid));
      CHECK_OK(sstm_desc_kill(victim, 0));
      /* the lock the victim holds on w protects unmodified memory: another
       * transaction writes w at once (a hang here is the failure) */
      CHECK_OK(sstm_run(NULL, writer_w, (void *)(uintptr_t)100));
      CHECK_EQ_U(w, 110);
      CHECK_EQ_U(x, 0);
      sstm_stats_t so;
      CHECK_OK(sstm_stats_get(txh_other_desc(), &so));
      CHECK_EQ_U(so.cm_kills, 1); /* the kill that took effect, not the repeats */
      if (sstm_test_design() == SSTM_DESIGN_ETL) CHECK_GE_U(so.locks_stolen, 1);
      CHECK_EQ_PTR(sstm_desc_detach(), txh_other_desc());
      CHECK_OK(sstm_desc_attach(victim));
      if (!barrier_is_commit) {
        (void)sstm_load_u64(FAR);
        FAIL("killed transaction went past a barrier");
      }
      /* else: go straight to commit, which must fail */
    }
  SSTM_ATOMIC_END();
  CHECK_EQ_I(attempts, 2);
  CHECK_EQ_U(w, 111);
  CHECK_EQ_U(x, 110);
  CHECK_EQ_I(nabort_cb, 1);
  CHECK_EQ_I(nhook, 1);
  CHECK_EQ_I(hook_reasons[0], SSTM_ABORT_KILLED);
  sstm_stats_t s;
  CHECK_OK(sstm_stats_get(victim, &s));
  CHECK_EQ_U(s.aborts[SSTM_ABORT_KILLED], 1);
  CHECK_EQ_U(s.aborts_total, 1);
  CHECK_EQ_U(s.commits_update, 1);
  txh_cleanup();
  sstm_test_fini();
}

TEST(kill_suspended_abort_at_barrier) { kill_suspended(false); }
TEST(kill_suspended_abort_at_commit) { kill_suspended(true); }

static void kill_read_only(bool barrier_is_commit) {
  sstm_test_init();
  w = 1;
  attempts = 0;
  sstm_desc_t *victim = sstm_self();
  sstm_attr_t ro = {.read_only = true};
  static volatile uint64_t seen;
  SSTM_ATOMIC_BEGIN(&ro)
    attempts++;
    seen = sstm_load_u64(&w);
    if (attempts == 1) {
      sstm_desc_detach();
      CHECK_OK(sstm_desc_attach(txh_other_desc()));
      CHECK_OK(sstm_desc_kill(victim, 0)); /* 0: whatever attempt is current */
      sstm_desc_detach();
      CHECK_OK(sstm_desc_attach(victim));
      if (!barrier_is_commit) {
        (void)sstm_load_u64(FAR);
        FAIL("killed read-only transaction went past a barrier");
      }
    }
  SSTM_ATOMIC_END();
  /* "the attempt can no longer commit" */
  CHECK_EQ_I(attempts, 2);
  CHECK_EQ_U(seen, 1);
  sstm_stats_t s;
  CHECK_OK(sstm_stats_get(victim, &s));
  CHECK_EQ_U(s.aborts[SSTM_ABORT_KILLED], 1);
  CHECK_EQ_U(s.commits_ro, 1);
  txh_cleanup();
  sstm_test_fini();
}

TEST(kill_read_only_victim_abort_at_barrier) { kill_read_only(false); }
TEST(kill_read_only_victim_abort_at_commit) { kill_read_only(true); }

/* ---- threads that end with a descriptor attached (thread.h) ---------- */

static void *end_inside_tx(void *arg) {
  bool irrevocable = arg != NULL;
  CHECK_OK(sstm_thread_init());
  sstm_attr_t a = {.irrevocable = irrevocable};
  SSTM_ATOMIC_BEGIN(&a)
    sstm_store_u64(&x, 7);
    if (!irrevocable) CHECK_OK(sstm_on_abort(count_abort, NULL));
    pthread_exit(NULL); /* inside the transaction */
  SSTM_ATOMIC_END();
  return NULL;
}
static void write_x(void *arg) { sstm_store_u64(&x, (uint64_t)(uintptr_t)arg); }

/* A revocable transaction is cancelled: its write is gone, its lock free
 * (the next writer commits), its abort actions ran, the abort is counted,
 * and the thread's slot is back (the library shuts down). */
TEST(thread_that_ends_inside_a_transaction_cancels_it) {
  sstm_test_init();
  x = 0;
  nabort_cb = 0;
  pthread_t th;
  CHECK_EQ_I(pthread_create(&th, NULL, end_inside_tx, NULL), 0);
  CHECK_EQ_I(pthread_join(th, NULL), 0);
  CHECK_EQ_U(x, 0);
  CHECK_EQ_I(nabort_cb, 1); /* run on the ending thread, before the join */
  CHECK_OK(sstm_run(NULL, write_x, (void *)(uintptr_t)5));
  CHECK_EQ_U(x, 5);
  sstm_stats_t s;
  CHECK_OK(sstm_stats_aggregate(&s));
  CHECK_EQ_U(s.aborts[SSTM_ABORT_USER_CANCEL], 1);
  CHECK_EQ_U(s.commits_update, 1);
  sstm_test_fini(); /* checks sstm_shutdown: nothing left registered */
}

/* An irrevocable one has written in place and holds the serial mode: it is
 * committed, so the other threads' transactions run again. */
TEST(thread_that_ends_inside_an_irrevocable_transaction_commits_it) {
  sstm_test_init();
  x = 0;
  pthread_t th;
  CHECK_EQ_I(pthread_create(&th, NULL, end_inside_tx, (void *)1), 0);
  CHECK_EQ_I(pthread_join(th, NULL), 0);
  CHECK_EQ_U(x, 7);
  CHECK_OK(sstm_run(NULL, write_x, (void *)(uintptr_t)8)); /* not blocked */
  CHECK_EQ_U(x, 8);
  sstm_stats_t s;
  CHECK_OK(sstm_stats_aggregate(&s));
  CHECK_EQ_U(s.commits_irrevocable, 1);
  sstm_test_fini();
}

/* A descriptor of sstm_desc_create(), attached by a worker that ends
 * without detaching it, with a transaction suspended in it: the
 * descriptor is detached, not released, and its transaction goes on where
 * it began (here, this thread's stack) and commits. */
static void *attach_write_and_end(void *arg) {
  sstm_desc_t *d = arg;
  CHECK_OK(sstm_desc_attach(d));
  CHECK_TRUE(sstm_in_tx());
  sstm_store_u64(&y, sstm_load_u64(&y) + 10);
  return NULL; /* no sstm_desc_detach */
}

TEST(created_descriptor_outlives_the_thread_that_ends_with_it) {
  sstm_test_init();
  y = 0;
  sstm_desc_t *mine = sstm_desc_detach(), *d = NULL;
  CHECK_OK(sstm_desc_create(&d));
  CHECK_OK(sstm_desc_attach(d));
  SSTM_ATOMIC_BEGIN(NULL)
    sstm_store_u64(&y, 1);
    CHECK_TRUE(sstm_desc_detach() == d);
    pthread_t th;
    CHECK_EQ_I(pthread_create(&th, NULL, attach_write_and_end, d), 0);
    CHECK_EQ_I(pthread_join(th, NULL), 0);
    CHECK_OK(sstm_desc_attach(d)); /* detached, still in use */
    CHECK_TRUE(sstm_in_tx());
    CHECK_EQ_U(y, 0); /* nothing published yet */
  SSTM_ATOMIC_END();
  CHECK_EQ_U(y, 11);
  CHECK_TRUE(sstm_desc_detach() == d);
  CHECK_OK(sstm_desc_destroy(d)); /* still the creator's */
  CHECK_OK(sstm_desc_attach(mine));
  sstm_test_fini();
}

/* sstm_thread_exit() on a thread whose current descriptor is a created
 * one only detaches it (thread.h): the creator's handle stays valid, and a
 * thread that registers next gets a slot of its own, not that one. */
static void *attach_init_exit(void *arg) {
  sstm_desc_t *d = arg;
  CHECK_OK(sstm_desc_attach(d));
  CHECK_OK(sstm_thread_init()); /* a descriptor is attached: registered */
  SSTM_ATOMIC_BEGIN(NULL)
    CHECK_RC(sstm_thread_exit(), SSTM_EBUSY); /* a transaction is active */
  SSTM_ATOMIC_END();
  CHECK_OK(sstm_thread_exit());
  CHECK_NULL(sstm_self());
  CHECK_RC(sstm_thread_exit(), SSTM_ENOTHREAD);
  return NULL;
}
static _Atomic unsigned registered_slot;
static void *register_and_report(void *arg) {
  (void)arg;
  CHECK_OK(sstm_thread_init());
  atomic_store_explicit(&registered_slot, sstm_desc_slot(sstm_self()), memory_order_seq_cst);
  CHECK_OK(sstm_thread_exit());
  return NULL;
}

TEST(thread_exit_only_detaches_a_created_descriptor) {
  sstm_test_init();
  sstm_desc_t *d = NULL;
  CHECK_OK(sstm_desc_create(&d));
  pthread_t th;
  CHECK_EQ_I(pthread_create(&th, NULL, attach_init_exit, d), 0);
  CHECK_EQ_I(pthread_join(th, NULL), 0);
  CHECK_EQ_I(pthread_create(&th, NULL, register_and_report, NULL), 0);
  CHECK_EQ_I(pthread_join(th, NULL), 0);
  unsigned other = atomic_load_explicit(&registered_slot, memory_order_seq_cst);
  CHECK_NE_I((int)other, (int)sstm_desc_slot(d));
  sstm_stats_t s;
  CHECK_OK(sstm_stats_get(d, &s));
  CHECK_EQ_U(s.commits_ro, 1);    /* its counters were not folded away */
  CHECK_OK(sstm_desc_destroy(d)); /* still the creator's */
  sstm_test_fini();
}

/* A created descriptor whose transaction began on the stack of the thread
 * that ends with it attached: that stack goes with the thread, and with it
 * the restart checkpoint, so the transaction is cancelled (as a thread's own
 * descriptor's would be) before the descriptor is detached. Before, it
 * stayed suspended for good: the descriptor could not be destroyed
 * (SSTM_EBUSY), and a restart jumped into the dead stack. */
static void *attach_begin_and_end(void *arg) {
  sstm_desc_t *d = arg;
  CHECK_OK(sstm_desc_attach(d));
  SSTM_ATOMIC_BEGIN(NULL)
    sstm_store_u64(&x, 9);
    CHECK_OK(sstm_on_abort(count_abort, NULL));
    pthread_exit(NULL); /* inside the transaction, on this stack */
  SSTM_ATOMIC_END();
  return NULL;
}

TEST(created_descriptor_with_a_transaction_on_the_ending_threads_stack_cancels_it) {
  sstm_test_init();
  x = 0;
  nabort_cb = 0;
  sstm_desc_t *d = NULL;
  CHECK_OK(sstm_desc_create(&d));
  pthread_t th;
  CHECK_EQ_I(pthread_create(&th, NULL, attach_begin_and_end, d), 0);
  CHECK_EQ_I(pthread_join(th, NULL), 0);
  CHECK_EQ_U(x, 0);
  CHECK_EQ_I(nabort_cb, 1);
  sstm_stats_t s;
  CHECK_OK(sstm_stats_get(d, &s));
  CHECK_EQ_U(s.aborts[SSTM_ABORT_USER_CANCEL], 1);
  CHECK_OK(sstm_run(NULL, write_x, (void *)(uintptr_t)5)); /* its lock is free */
  CHECK_EQ_U(x, 5);
  CHECK_OK(sstm_desc_destroy(d)); /* no transaction left in it */
  sstm_test_fini();
}

/* A thread that kills its own transaction makes no remote abort: its
 * cm_kills stays 0 (stats.h), and the attempt aborts as killed. */
TEST(killing_ones_own_transaction_is_not_counted_as_a_kill) {
  sstm_test_init();
  attempts = 0;
  SSTM_ATOMIC_BEGIN(NULL)
    attempts++;
    if (attempts == 1) {
      CHECK_OK(sstm_desc_kill(sstm_self(), 0));
      (void)sstm_load_u64(&x);
      FAIL("killed transaction went past a barrier");
    }
  SSTM_ATOMIC_END();
  CHECK_EQ_I(attempts, 2);
  sstm_stats_t s;
  CHECK_OK(sstm_stats_get(sstm_self(), &s));
  CHECK_EQ_U(s.cm_kills, 0);
  CHECK_EQ_U(s.aborts[SSTM_ABORT_KILLED], 1);
  sstm_test_fini();
}

/* sstm_shutdown refuses while a created descriptor exists, also when it is
 * the caller's current one (config.h): it is its creator's to destroy. */
TEST(shutdown_refuses_with_a_created_descriptor_attached) {
  sstm_test_init();
  CHECK_OK(sstm_thread_exit()); /* the created one is the only descriptor */
  sstm_desc_t *d = NULL;
  CHECK_OK(sstm_desc_create(&d));
  CHECK_OK(sstm_desc_attach(d));
  CHECK_RC(sstm_shutdown(), SSTM_EBUSY);
  /* the message names the cause (an executor's contexts are such descriptors) */
  CHECK_NOT_NULL(strstr(sstm_last_error(), "sstm_desc_create"));
  CHECK_TRUE(sstm_initialized());
  CHECK_EQ_PTR(sstm_desc_detach(), d);
  CHECK_OK(sstm_desc_destroy(d));
  CHECK_OK(sstm_thread_init());
  sstm_test_fini();
}

TEST(kill_errors) {
  sstm_test_init();
  CHECK_RC(sstm_desc_kill(NULL, 0), SSTM_EINVAL);
  sstm_desc_t *d = sstm_self();
  CHECK_RC(sstm_desc_kill(d, 0), SSTM_ENOTX); /* idle */
  tx_store_u64(&x, 1);
  uint64_t done = sstm_desc_txid(d);
  CHECK_RC(sstm_desc_kill(d, done), SSTM_ENOTX); /* attempt over */
  /* an irrevocable transaction cannot be killed */
  sstm_attr_t irr = {.irrevocable = true};
  SSTM_ATOMIC_BEGIN(&irr)
    sstm_store_u64(&x, 2);
    uint64_t t = sstm_txid();
    sstm_desc_detach();
    CHECK_OK(sstm_desc_attach(txh_other_desc()));
    CHECK_RC(sstm_desc_kill(d, t), SSTM_EBUSY);
    CHECK_RC(sstm_desc_kill(d, 0), SSTM_EBUSY);
    sstm_desc_detach();
    CHECK_OK(sstm_desc_attach(d));
  SSTM_ATOMIC_END();
  CHECK_EQ_U(x, 2);
  sstm_stats_t s;
  CHECK_OK(sstm_stats_get(d, &s));
  CHECK_EQ_U(s.aborts_total, 0);
  txh_cleanup();
  sstm_test_fini();
}

/* Kill a transaction running on another thread (not suspended): it must
 * abort and retry, and its effects must be applied exactly once. */
struct spin_ctx {
  sstm_desc_t *volatile desc;
  volatile int phase; /* 1: victim running; 2: kill took effect */
  volatile int inner_attempts;
  volatile long barriers_after_kill;
};
static struct spin_ctx sc;

static void *spinning_victim(void *p) {
  (void)p;
  CHECK_OK(sstm_thread_init());
  sc.desc = sstm_self();
  SSTM_ATOMIC_BEGIN(NULL)
    sc.inner_attempts++;
    sstm_store_u64(&x, sstm_load_u64(&x) + 1);
    if (sc.inner_attempts == 1) {
      __atomic_store_n(&sc.phase, 1, __ATOMIC_SEQ_CST);
      /* hit barriers until the kill took effect, then a bounded number more:
       * the first one must already roll the attempt back */
      while (__atomic_load_n(&sc.phase, __ATOMIC_SEQ_CST) != 2) {
        (void)sstm_load_u64(FAR);
        sstm_test_relax();
      }
      for (sc.barriers_after_kill = 1; sc.barriers_after_kill <= 100000; sc.barriers_after_kill++)
        (void)sstm_load_u64(FAR);
      FAIL("killed attempt still running after %ld barriers", sc.barriers_after_kill - 1);
    }
  SSTM_ATOMIC_END();
  CHECK_OK(sstm_thread_exit());
  return NULL;
}

TEST(kill_running_on_other_thread) {
  sstm_test_init();
  x = 0;
  memset(&sc, 0, sizeof sc);
  pthread_t th;
  CHECK_EQ_I(pthread_create(&th, NULL, spinning_victim, NULL), 0);
  while (__atomic_load_n(&sc.phase, __ATOMIC_SEQ_CST) != 1)
    sstm_test_relax();
  CHECK_OK(sstm_desc_kill(sc.desc, 0));
  __atomic_store_n(&sc.phase, 2, __ATOMIC_SEQ_CST);
  CHECK_EQ_I(pthread_join(th, NULL), 0);
  CHECK_EQ_I(sc.inner_attempts, 2);
  CHECK_LE_I(sc.barriers_after_kill, 1);
  CHECK_EQ_U(x, 1);
  sstm_stats_t agg;
  CHECK_OK(sstm_stats_aggregate(&agg));
  CHECK_EQ_U(agg.aborts[SSTM_ABORT_KILLED], 1);
  sstm_test_fini();
}

SSTM_TEST_MAIN()
