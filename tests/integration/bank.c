/* SPDX-License-Identifier: MIT */
/* Integration: the bank. N accounts, concurrent transfers and read-only
 * audits. Checks: every audit sees the constant total inside its
 * transaction (opacity: even attempts that later abort); per-thread commit
 * counters kept transactionally match the committed operations; the final
 * total; the statistics account for every commit.
 *
 * usage: bank DESIGN POLICY|all THREADS [--ops N | --scaled-ops N] [--seconds S]
 *             [--accounts A] [--expect-policies P1,P2,...]
 *   --ops is the total number of operations (default 1000000 * SSTM_TEST_SCALE,
 *   150000 * SSTM_TEST_SCALE per policy with "all"; --scaled-ops N is
 *   N * SSTM_TEST_SCALE)
 *   split over the threads; --seconds instead runs each thread for S seconds
 *   (torture). POLICY "all" runs once per registered contention manager
 *   (the names in sstm_cm_list()); with it --expect-policies is required:
 *   every policy it names (ctest passes SSTM_CM_BASE, the built-in ones)
 *   must be in the list and is run, so that a policy dropped from the
 *   registry, or listed under a name that does not parse, fails the test
 *   instead of going unnoticed.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <unistd.h>

#include "common_int.h"

#define INITIAL 1000
#define MAX_THREADS 256

static int64_t *accounts; /* adjacent: several accounts share a lock stripe */
static long naccounts;
static uint64_t op_count[MAX_THREADS][8]; /* [t][0]: transactional counter */
static uint64_t local_transfers[MAX_THREADS], local_audits[MAX_THREADS];
static long ops_per_thread;
static double seconds;
static volatile int stop;

struct transfer {
  long a, b;
  int64_t amt;
  unsigned t;
};

static void transfer_fn(void *p) {
  struct transfer *x = p;
  int64_t va = sstm_load_i64(&accounts[x->a]);
  int64_t vb = sstm_load_i64(&accounts[x->b]);
  sstm_store_i64(&accounts[x->a], va - x->amt);
  sstm_store_i64(&accounts[x->b], vb + x->amt);
  sstm_store_u64(&op_count[x->t][0], sstm_load_u64(&op_count[x->t][0]) + 1);
}

static void audit_fn(void *p) {
  int64_t *out = p;
  int64_t sum = 0;
  for (long i = 0; i < naccounts; i++)
    sum += sstm_load_i64(&accounts[i]);
  /* inside the transaction: no attempt may ever see another total */
  CHECK_EQ_I(sum, (int64_t)naccounts * INITIAL);
  *out = sum;
}

/* The inline form for half of the transfers. */
static void transfer_inline(long a, long b, int64_t amt, unsigned t) {
  SSTM_ATOMIC_BEGIN(NULL)
    int64_t va = sstm_load_i64(&accounts[a]);
    sstm_store_i64(&accounts[a], va - amt);
    int64_t vb = sstm_load_i64(&accounts[b]);
    sstm_store_i64(&accounts[b], vb + amt);
    sstm_store_u64(&op_count[t][0], sstm_load_u64(&op_count[t][0]) + 1);
  SSTM_ATOMIC_END();
}

static void worker(sstm_tt_t *t) {
  sstm_attr_t ro = {.read_only = true};
  long done = 0;
  for (;;) {
    if (seconds > 0) {
      if (__atomic_load_n(&stop, __ATOMIC_RELAXED)) break;
    } else if (done >= ops_per_thread) {
      break;
    }
    done++;
    uint64_t r = sstm_rng_next(&t->rng);
    if (r % 10 == 0) {
      int64_t sum = 0;
      /* audits: read-only hint for most, detected read-only for some */
      CHECK_OK(sstm_run((r >> 8) % 4 ? &ro : NULL, audit_fn, &sum));
      CHECK_EQ_I(sum, (int64_t)naccounts * INITIAL);
      local_audits[t->idx]++;
      continue;
    }
    long a = (long)sstm_rng_below(&t->rng, (uint64_t)naccounts);
    long b = (long)sstm_rng_below(&t->rng, (uint64_t)naccounts - 1);
    if (b >= a) b++;
    int64_t amt = (int64_t)sstm_rng_below(&t->rng, 100) + 1;
    if ((r >> 4) & 1) {
      struct transfer x = {a, b, amt, t->idx};
      CHECK_OK(sstm_run(NULL, transfer_fn, &x));
    } else {
      transfer_inline(a, b, amt, t->idx);
    }
    local_transfers[t->idx]++;
  }
}

static void *bank_timer(void *p) {
  (void)p;
  double end = int_now() + seconds;
  while (int_now() < end)
    usleep(100000);
  __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
  return NULL;
}

static void run_one(sstm_design_t design, const char *policy, unsigned threads) {
  int_init(design, policy);
  CHECK_OK(sstm_thread_init());
  memset(op_count, 0, sizeof op_count);
  memset(local_transfers, 0, sizeof local_transfers);
  memset(local_audits, 0, sizeof local_audits);
  for (long i = 0; i < naccounts; i++)
    accounts[i] = INITIAL;
  stop = 0;
  char desc[512];
  sstm_describe(desc, sizeof desc);
  printf("bank: %s, %u threads, %s\n", policy, threads, desc);
  if (seconds > 0) {
    /* run length only; nothing is asserted about time */
    pthread_t timer;
    CHECK_EQ_I(pthread_create(&timer, NULL, bank_timer, NULL), 0);
    sstm_test_run_threads(threads, true, worker, NULL);
    CHECK_EQ_I(pthread_join(timer, NULL), 0);
  } else {
    sstm_test_run_threads(threads, true, worker, NULL);
  }
  int64_t total = 0;
  for (long i = 0; i < naccounts; i++)
    total += accounts[i];
  CHECK_EQ_I(total, (int64_t)naccounts * INITIAL);
  uint64_t transfers = 0, audits = 0;
  for (unsigned t = 0; t < threads; t++) {
    CHECK_EQ_U(op_count[t][0], local_transfers[t]);
    transfers += local_transfers[t];
    audits += local_audits[t];
  }
  sstm_stats_t s;
  CHECK_OK(sstm_stats_aggregate(&s));
  CHECK_EQ_U(s.commits_update, transfers);
  CHECK_EQ_U(s.commits_ro, audits);
  CHECK_EQ_U(s.aborts[SSTM_ABORT_USER_CANCEL], 0);
  CHECK_EQ_U(s.aborts[SSTM_ABORT_USER_RETRY], 0);
  uint64_t sum = 0;
  for (int r = 0; r < SSTM_ABORT_REASON_COUNT; r++)
    sum += s.aborts[r];
  CHECK_EQ_U(sum, s.aborts_total);
  CHECK_EQ_U(s.retries, s.aborts_total);
  printf("  %llu transfers, %llu audits, %llu aborts\n", (unsigned long long)transfers,
         (unsigned long long)audits, (unsigned long long)s.aborts_total);
  CHECK_OK(sstm_shutdown());
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr,
            "usage: %s DESIGN POLICY|all THREADS [--ops N | --scaled-ops N] [--seconds S] "
            "[--accounts A] [--expect-policies P1,P2,...]\n",
            argv[0]);
    return 2;
  }
  char name[128];
  snprintf(name, sizeof name, "bank.%s.%s.%s", argv[1], argv[2], argv[3]);
  sstm_test_setup(name, argc, argv);
  sstm_design_t design = int_parse_design(argv[1]);
  unsigned threads = (unsigned)atoi(argv[3]);
  CHECK_GT_U(threads, 0);
  CHECK_LE_U(threads, MAX_THREADS);
  threads = sstm_test_threads(threads);
  naccounts = int_opt(argc, argv, "--accounts", 32);
  CHECK_GE_I(naccounts, 2);
  bool all = strcmp(argv[2], "all") == 0;
  long total_ops =
      int_opt_ops(argc, argv, (long)sstm_test_scaled(all ? 150000 : 1000000, 2000), 2000);
  ops_per_thread = total_ops / (long)threads;
  if (ops_per_thread < 100) ops_per_thread = 100;
  seconds = (double)int_opt(argc, argv, "--seconds", 0);
  accounts = calloc((size_t)naccounts, sizeof *accounts);
  CHECK_NOT_NULL(accounts);
  if (all) {
    const char *expect = int_opt_str(argc, argv, "--expect-policies", NULL);
    if (expect == NULL || *expect == 0) {
      fprintf(stderr,
              "%s: POLICY all needs --expect-policies P1,P2,... (the policies it must "
              "cover)\n",
              argv[0]);
      return 2;
    }
    char names[32][64], skipped[4][64];
    int nskipped;
    int n = int_policy_names(names, 32, skipped, 4, &nskipped);
    for (int i = 0; i < nskipped && i < 4; i++)
      printf("bank: sstm_cm_list entry \"%s\" is not a policy name: not run\n", skipped[i]);
    /* every expected policy is listed (checked before the runs) ... */
    bool expected[32] = {false};
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", expect);
    char *save = NULL;
    int nexpect = 0;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
      int found = -1;
      for (int i = 0; i < n && found < 0; i++)
        if (strcmp(names[i], tok) == 0) found = i;
      CHECK_MSG(found >= 0, "policy \"%s\" is not among the %d policy names of sstm_cm_list", tok,
                n);
      expected[found] = true;
      nexpect++;
    }
    CHECK_GT_I(nexpect, 0);
    /* ... and runs, with any other registered one */
    int nran_expected = 0;
    for (int i = 0; i < n; i++) {
      run_one(design, names[i], threads);
      nran_expected += expected[i];
    }
    CHECK_EQ_I(nran_expected, nexpect); /* fails on a name given twice */
    printf("bank: %d policies run, the %d expected among them\n", n, nexpect);
  } else {
    run_one(design, argv[2], threads);
  }
  free(accounts);
  printf("PASS %s\n", name);
  return 0;
}
