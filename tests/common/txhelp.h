/* SPDX-License-Identifier: MIT */
/* schedstm tests: helpers to drive transactions deterministically on one
 * thread, by suspending the current transaction (detaching its descriptor)
 * and running another transaction with a second descriptor. */
#ifndef SSTM_TEST_TXHELP_H
#define SSTM_TEST_TXHELP_H

#include <pthread.h>
#include <string.h>
#include <time.h>

#include "runner.h"

/* CLOCK_MONOTONIC in ns: for lower bounds only (a wait lasted at least
 * its time), never for upper ones, which a loaded machine breaks. */
static inline uint64_t txh_now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* The second descriptor used by run_other() (created on first use). */
static sstm_desc_t *txh_other_desc_;

static inline sstm_desc_t *txh_other_desc(void) {
  if (!txh_other_desc_) CHECK_OK(sstm_desc_create(&txh_other_desc_));
  return txh_other_desc_;
}

/* Suspend the calling thread's current descriptor (and its transaction, if
 * any), run fn(arg) with sstm_run on the second descriptor, then re-attach
 * the first one. Returns sstm_run's result. */
static inline int run_other(const sstm_attr_t *attr, void (*fn)(void *), void *arg) {
  sstm_desc_t *mine = sstm_desc_detach();
  CHECK_NOT_NULL(mine);
  CHECK_NULL(sstm_self());
  CHECK_FALSE(sstm_in_tx());
  sstm_desc_t *o = txh_other_desc();
  CHECK_OK(sstm_desc_attach(o));
  int rc = sstm_run(attr, fn, arg);
  CHECK_EQ_PTR(sstm_desc_detach(), o);
  CHECK_OK(sstm_desc_attach(mine));
  return rc;
}

/* Like run_other(), but the calling thread keeps its descriptor attached:
 * fn runs on a helper thread (with the second descriptor attached there),
 * while this one waits in pthread_join. The caller's transaction, if any,
 * is then a running holder whose thread is off the CPU, as a descheduled
 * thread's is, and a conflict with it goes to the policy. run_other()
 * detaches it instead, which makes it a paused holder: a conflict with that
 * one is decided against it whatever the policy (docs/design/core.md, (9)).
 * Returns sstm_run's result. */
struct txh_other_call {
  const sstm_attr_t *attr;
  void (*fn)(void *);
  void *arg;
  int rc;
};
static inline void *txh_other_thread(void *p) {
  struct txh_other_call *c = p;
  /* created here on first use, not by the caller, which may be inside a
   * transaction, where sstm_desc_create refuses (this thread has no
   * descriptor); the caller reads it after pthread_join */
  sstm_desc_t *o = txh_other_desc();
  CHECK_OK(sstm_desc_attach(o));
  c->rc = sstm_run(c->attr, c->fn, c->arg);
  CHECK_EQ_PTR(sstm_desc_detach(), o);
  return NULL;
}
static inline int run_other_attached(const sstm_attr_t *attr, void (*fn)(void *), void *arg) {
  struct txh_other_call c = {attr, fn, arg, 0};
  pthread_t th;
  CHECK_EQ_I(pthread_create(&th, NULL, txh_other_thread, &c), 0);
  CHECK_EQ_I(pthread_join(th, NULL), 0);
  return c.rc;
}

/* A library built with SCHEDSTM_DEBUG (sstm_describe says " debug"):
 * misuse that has an error code is also reported to the misuse handler.
 * The library must be initialised. */
static inline bool txh_debug_build(void) {
  char d[512];
  CHECK_GT_I(sstm_describe(d, sizeof d), 0);
  return strstr(d, " debug") != NULL; /* no other word starts so */
}

/* Destroy the second descriptor (before sstm_shutdown). */
static inline void txh_cleanup(void) {
  if (txh_other_desc_) {
    CHECK_OK(sstm_desc_destroy(txh_other_desc_));
    txh_other_desc_ = NULL;
  }
}

/* Common transaction bodies. */
struct txh_store {
  uint64_t *addr;
  uint64_t val;
};
static inline void txh_store_fn(void *p) {
  struct txh_store *s = p;
  sstm_store_u64(s->addr, s->val);
}
struct txh_load {
  const uint64_t *addr;
  uint64_t val;
};
static inline void txh_load_fn(void *p) {
  struct txh_load *s = p;
  s->val = sstm_load_u64(s->addr);
}

/* Plain store/load in their own transaction on the current descriptor. */
static inline void tx_store_u64(uint64_t *a, uint64_t v) {
  struct txh_store s = {a, v};
  CHECK_OK(sstm_run(NULL, txh_store_fn, &s));
}
static inline uint64_t tx_load_u64(const uint64_t *a) {
  struct txh_load s = {a, 0};
  CHECK_OK(sstm_run(NULL, txh_load_fn, &s));
  return s.val;
}

static inline void skip_unless_etl(void) {
  if (sstm_test_design() != SSTM_DESIGN_ETL) sstm_test_skip("needs encounter-time locking");
}

static inline void skip_unless_ctl(void) {
  if (sstm_test_design() != SSTM_DESIGN_CTL) sstm_test_skip("needs commit-time locking");
}

/* A case for one design only: it skips under the other, and the CMake scan
 * (tests/CMakeLists.txt, sstm_unit) registers it for its design only, so
 * that no ctest entry always skips. Written at the start of a line, as
 * TEST. TEST_ETL: a lock held by a running, killable attempt; TEST_CTL: a
 * commit that meets a lock. */
#define SSTM_TEST_ONE_DESIGN_(name, d)                                                             \
  static void sstm_test_##d##_##name(void);                                                        \
  TEST(name) {                                                                                     \
    skip_unless_##d();                                                                             \
    sstm_test_##d##_##name();                                                                      \
  }                                                                                                \
  static void sstm_test_##d##_##name(void)
#define TEST_ETL(name) SSTM_TEST_ONE_DESIGN_(name, etl)
#define TEST_CTL(name) SSTM_TEST_ONE_DESIGN_(name, ctl)

#endif /* SSTM_TEST_TXHELP_H */
