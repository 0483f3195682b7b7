/* SPDX-License-Identifier: MIT */
/* hello: concurrent bank transfers with sstm_run().
 *
 * Threads move money between random accounts; each transfer reads two
 * balances and writes both back in one transaction. Because every transfer
 * is atomic, the total never changes, which main() checks at the end. A
 * third kind of transaction, read-only, sums all accounts while transfers
 * run and must always see the same total (opacity).
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include <schedstm/schedstm.h>

#define NACCOUNTS 64
#define INITIAL 1000
#define NTHREADS 2
#define TRANSFERS 50000

static int64_t accounts[NACCOUNTS];
static int bad_audits; /* audits that saw a wrong total (must stay 0) */

#define CHECK(call)                                                                                \
  do {                                                                                             \
    int rc_ = (call);                                                                              \
    if (rc_ != 0) {                                                                                \
      fprintf(stderr, "%s: %s (%s)\n", #call, sstm_strerror(rc_), sstm_last_error());              \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

struct transfer {
  int from, to;
  int64_t amount;
};

/* The transaction body: may run several times, so it only touches shared
 * memory through sstm_load/sstm_store and writes nothing else but *arg. */
static void transfer_tx(void *arg) {
  const struct transfer *t = arg;
  int64_t a = sstm_load_i64(&accounts[t->from]);
  int64_t b = sstm_load_i64(&accounts[t->to]);
  sstm_store_i64(&accounts[t->from], a - t->amount);
  sstm_store_i64(&accounts[t->to], b + t->amount);
}

static void audit_tx(void *arg) {
  int64_t sum = 0;
  for (int i = 0; i < NACCOUNTS; i++)
    sum += sstm_load_i64(&accounts[i]);
  *(int64_t *)arg = sum;
}

static void *worker(void *arg) {
  unsigned seed = (unsigned)(uintptr_t)arg;
  CHECK(sstm_thread_init());
  for (int i = 0; i < TRANSFERS; i++) {
    struct transfer t;
    t.from = rand_r(&seed) % NACCOUNTS;
    t.to = (t.from + 1 + rand_r(&seed) % (NACCOUNTS - 1)) % NACCOUNTS; /* != from */
    t.amount = rand_r(&seed) % 100;
    CHECK(sstm_run(NULL, transfer_tx, &t));
    if (i % 1000 == 0) {
      const sstm_attr_t ro = {.read_only = true};
      int64_t sum;
      CHECK(sstm_run(&ro, audit_tx, &sum));
      if (sum != (int64_t)NACCOUNTS * INITIAL) __atomic_fetch_add(&bad_audits, 1, __ATOMIC_RELAXED);
    }
  }
  CHECK(sstm_thread_exit());
  return NULL;
}

int main(void) {
  CHECK(sstm_init(NULL)); /* defaults, plus SCHEDSTM_* environment overrides */
  char desc[256];
  sstm_describe(desc, sizeof desc);
  printf("hello: %s\n", desc);

  for (int i = 0; i < NACCOUNTS; i++)
    accounts[i] = INITIAL;

  pthread_t th[NTHREADS];
  for (int i = 0; i < NTHREADS; i++)
    pthread_create(&th[i], NULL, worker, (void *)(uintptr_t)(i + 1));
  for (int i = 0; i < NTHREADS; i++)
    pthread_join(th[i], NULL);

  sstm_stats_t st;
  CHECK(sstm_stats_aggregate(&st));
  int64_t total = 0;
  for (int i = 0; i < NACCOUNTS; i++)
    total += accounts[i]; /* no thread runs transactions any more */
  CHECK(sstm_shutdown());

  printf("hello: %d transfers, %" PRIu64 " commits, %" PRIu64 " aborts, total %" PRId64
         " (expected %d), bad audits %d\n",
         NTHREADS * TRANSFERS, st.commits_ro + st.commits_update, /* irrevocable ones included */
         st.aborts_total, total, NACCOUNTS * INITIAL, bad_audits);
  if (total != (int64_t)NACCOUNTS * INITIAL || bad_audits != 0) {
    printf("hello: FAILED\n");
    return 1;
  }
  printf("hello: OK\n");
  return 0;
}
