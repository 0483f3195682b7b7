/* SPDX-License-Identifier: MIT */
/* Integration: no livelock on paused lock holders, under any policy
 * (docs/design/core.md, (9)).
 *
 * An executor's shape without its machinery: THREADS threads share TOKENS
 * run tokens (its workers; a semaphore). A thread runs a bank transfer only
 * while it holds a token; in the first attempt of each transfer, after its
 * first write, it suspends the transaction (detaches its descriptor, gives
 * its token back, takes one again, attaches and goes on), as a preempted
 * transaction waits in the executor's queue while its context holds its
 * locks. Before (9), with suicide, backoff or ext, the token holders
 * retried for ever against locks of suspended transactions, which could not
 * be resumed because every token was held by a retrier: no commit at all
 * (64 threads, 2 tokens). The ser-* policies waited for the suspended
 * holders instead, no better. Requirements:
 *  - every thread completes its quota of transfers before a deadline far
 *    beyond what the run needs (a livelock makes no progress and fails it;
 *    the time is never compared with anything else);
 *  - the total balance is constant, checked inside audit transactions
 *    (opacity) and at the end;
 *  - the suspended transactions were taken over: with more threads than
 *    tokens some transfer must have met a suspended holder (locks_stolen,
 *    aborts[killed] > 0; unless the design locks at commit, CTL, where a
 *    suspended transaction holds no lock).
 * With TOKENS = THREADS every suspended transaction resumes at once, racing
 * the threads that take its locks over: the entries of the TSan build.
 *
 * usage: paused_holders DESIGN POLICY THREADS TOKENS [--ops N]
 *   --ops: transfers per thread (default 40 * SSTM_TEST_SCALE)
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <unistd.h>

#include "common_int.h"

#define ACCOUNTS 16
#define INITIAL 1000
#define DEADLINE_S 60.0

struct acct {
  _Alignas(64) int64_t v;
};
static struct acct account[ACCOUNTS];
static sem_t tokens;
static long ops;
static _Atomic long committed;

struct xfer {
  unsigned from, to;
  int64_t amount;
  int attempts;
};

static void suspend_and_resume(void) {
  sstm_desc_t *me = sstm_desc_detach();
  CHECK_NOT_NULL(me);
  CHECK_EQ_I(sem_post(&tokens), 0);
  sched_yield(); /* let the others run into the locks we keep */
  while (sem_wait(&tokens) != 0)
    CHECK_EQ_I(errno, EINTR);
  CHECK_OK(sstm_desc_attach(me));
}

static void xfer_fn(void *p) {
  struct xfer *x = p;
  x->attempts++;
  int64_t a = sstm_load_i64(&account[x->from].v);
  sstm_store_i64(&account[x->from].v, a - x->amount);
  if (x->attempts == 1) suspend_and_resume(); /* paused, holding from's lock */
  int64_t b = sstm_load_i64(&account[x->to].v);
  sstm_store_i64(&account[x->to].v, b + x->amount);
}

static void audit_fn(void *p) {
  (void)p;
  int64_t sum = 0;
  for (int i = 0; i < ACCOUNTS; i++)
    sum += sstm_load_i64(&account[i].v);
  CHECK_EQ_I(sum, (int64_t)ACCOUNTS * INITIAL);
}

static void worker(sstm_tt_t *t) {
  for (long i = 0; i < ops; i++) {
    while (sem_wait(&tokens) != 0)
      CHECK_EQ_I(errno, EINTR);
    struct xfer x = {.from = (unsigned)sstm_rng_below(&t->rng, ACCOUNTS)};
    x.to = (x.from + 1 + (unsigned)sstm_rng_below(&t->rng, ACCOUNTS - 1)) % ACCOUNTS;
    x.amount = 1 + (int64_t)sstm_rng_below(&t->rng, 10);
    CHECK_OK(sstm_run(NULL, xfer_fn, &x));
    if (i % 8 == 0) CHECK_OK(sstm_run(NULL, audit_fn, NULL));
    CHECK_EQ_I(sem_post(&tokens), 0);
    atomic_fetch_add_explicit(&committed, 1, memory_order_seq_cst);
  }
}

static unsigned nthreads;
static _Atomic int finished;

static void *runner(void *arg) {
  (void)arg;
  sstm_test_run_threads(nthreads, true, worker, NULL);
  atomic_store_explicit(&finished, 1, memory_order_seq_cst);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: %s DESIGN POLICY THREADS TOKENS [--ops N]\n", argv[0]);
    return 2;
  }
  char name[160];
  snprintf(name, sizeof name, "paused_holders.%s.%s.%s.%s", argv[1], argv[2], argv[3], argv[4]);
  sstm_test_setup(name, argc, argv);
  sstm_design_t design = int_parse_design(argv[1]);
  const char *policy = argv[2];
  nthreads = (unsigned)atoi(argv[3]);
  unsigned ntokens = (unsigned)atoi(argv[4]);
  ops = int_opt(argc, argv, "--ops", (long)sstm_test_scaled(40, 10));
  CHECK_MSG(nthreads >= 1 && nthreads <= 256 && ntokens >= 1 && ntokens <= nthreads && ops > 0,
            "THREADS 1..256, TOKENS 1..THREADS, --ops > 0");
  int_init(design, policy);
  for (int i = 0; i < ACCOUNTS; i++)
    account[i].v = INITIAL;
  CHECK_EQ_I(sem_init(&tokens, 0, ntokens), 0);

  /* The threads run in the background; this one watches their progress
   * against a deadline that only a livelock reaches. */
  pthread_t th;
  double t0 = int_now();
  CHECK_EQ_I(pthread_create(&th, NULL, runner, NULL), 0);
  while (!atomic_load_explicit(&finished, memory_order_seq_cst)) {
    long c = atomic_load_explicit(&committed, memory_order_seq_cst);
    if (int_now() - t0 > DEADLINE_S)
      CHECK_MSG(false,
                "livelock: %ld of %ld transfers committed in %.0f s (%s, %u threads, %u tokens)", c,
                (long)nthreads * ops, DEADLINE_S, policy, nthreads, ntokens);
    usleep(10000);
  }
  CHECK_EQ_I(pthread_join(th, NULL), 0);

  CHECK_EQ_I(atomic_load_explicit(&committed, memory_order_seq_cst), (long)nthreads * ops);
  int64_t total = 0;
  for (int i = 0; i < ACCOUNTS; i++)
    total += account[i].v;
  CHECK_EQ_I(total, (int64_t)ACCOUNTS * INITIAL);
  sstm_stats_t s;
  CHECK_OK(sstm_stats_aggregate(&s));
  printf("paused_holders %s %s: %u threads, %u tokens, %ld transfers in %.2f s; locks taken over "
         "%llu, kills %llu, killed aborts %llu\n",
         argv[1], policy, nthreads, ntokens, (long)nthreads * ops, int_now() - t0,
         (unsigned long long)s.locks_stolen, (unsigned long long)s.cm_kills,
         (unsigned long long)s.aborts[SSTM_ABORT_KILLED]);
  if (design == SSTM_DESIGN_ETL && ntokens < nthreads && nthreads >= 8) {
    CHECK_GT_U(s.locks_stolen, 0);
    CHECK_GT_U(s.aborts[SSTM_ABORT_KILLED], 0);
  }
  CHECK_EQ_I(sem_destroy(&tokens), 0);
  CHECK_OK(sstm_shutdown());
  return 0;
}
