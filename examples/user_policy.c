/* SPDX-License-Identifier: MIT */
/* user_policy: a contention manager of your own, behind the policy interface
 * (<schedstm/cm.h>), registered and selected by name like the built-in ones.
 *
 * The policy "user-prio" resolves conflicts by the transactions' user
 * priorities (sstm_attr_t.priority):
 *   - the higher priority aborts the other party (a remote abort; the engine
 *     takes over the victim's lock, so the winner never waits for it);
 *   - against a party that is committing it waits a few microseconds (the
 *     party is about to end) and retries the access;
 *   - otherwise it aborts itself and, before its restart, sleeps until the
 *     winner's attempt has ended (sstm_party_wait: a futex sleep, and no
 *     system call at all on the winner's side when nobody sleeps);
 *   - a transaction that has aborted MAX_RETRIES times restarts irrevocable
 *     (sstm_cm_next_irrevocable), which guarantees it completes even when
 *     higher-priority work keeps killing it.
 * It counts its decisions in its own counters (stat_names), which the
 * statistics dump prints by name, and publishes what it is doing (sleeping)
 * for the per-thread state table that sstm-top shows (when
 * cfg.state_table is on).
 *
 * The workload: URGENT threads (priority 1, tag 1) move small amounts
 * between two random accounts; BATCH threads (priority 0, tag 2) rotate
 * one unit through every account, a long transaction that conflicts with
 * all of them. Both keep the total constant, which the program checks at
 * the end, and it prints commits and aborts per tag (detailed statistics).
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <schedstm/schedstm.h>

#define NACCOUNTS 64
#define INITIAL 1000
#define URGENT 2
#define BATCH 2
#define URGENT_OPS 40000
#define BATCH_OPS 5000
#define MAX_RETRIES 8
#define TAG_URGENT 1
#define TAG_BATCH 2

#define CHECK(call)                                                                                \
  do {                                                                                             \
    int rc_ = (call);                                                                              \
    if (rc_ != 0) {                                                                                \
      fprintf(stderr, "%s: %s (%s)\n", #call, sstm_strerror(rc_), sstm_last_error());              \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

/* ---- the policy ----------------------------------------------------------- */

enum { C_KILL_REQUESTS, C_WAITS_COMMITTING, C_SLEEPS, C_IRREVOCABLE };

/* Called by the engine at every conflict, on the transaction's thread. */
static sstm_cm_action_t up_conflict(sstm_cm_ctx_t *ctx, const sstm_conflict_t *c,
                                    uint64_t *wait_ns) {
  if (!c->has_other) return SSTM_CM_ABORT_SELF; /* nobody to compare with */
  /* A failed validation, a kill and a running irrevocable transaction
   * abort self whatever the answer (cm.h): only lock conflicts are ours. */
  if (c->kind == SSTM_CONFLICT_VALIDATION || c->kind == SSTM_CONFLICT_KILLED ||
      c->kind == SSTM_CONFLICT_IRREVOCABLE)
    return SSTM_CM_ABORT_SELF;
  if (c->other.committing) {
    sstm_cm_count(ctx, C_WAITS_COMMITTING, 1);
    *wait_ns = 2000; /* bounded by the engine (cfg.wait_max), then abort self */
    return SSTM_CM_WAIT;
  }
  if (ctx->priority > c->other.priority) {
    /* st.cm_kills counts the remote aborts that succeeded (irrevocable
     * attempts' own included) */
    sstm_cm_count(ctx, C_KILL_REQUESTS, 1);
    return SSTM_CM_ABORT_OTHER;
  }
  return SSTM_CM_ABORT_SELF;
}

/* Called after the rollback, before the restart; holds no lock, may block. */
static void up_abort(sstm_cm_ctx_t *ctx, const sstm_abort_info_t *info) {
  if (info->reason == SSTM_ABORT_USER_CANCEL) return; /* no restart follows */
  if (ctx->retries >= MAX_RETRIES) {
    sstm_cm_count(ctx, C_IRREVOCABLE, 1);
    sstm_cm_next_irrevocable(ctx);
    return;
  }
  if (info->has_other) { /* the winner, or for a kill the killer */
    sstm_cm_note(ctx, SSTM_ACT_BLOCK);
    sstm_cm_count(ctx, C_SLEEPS, 1);
    (void)sstm_party_wait(&info->other, SSTM_WAIT_BLOCK, 2000000 /* at most 2 ms */);
    sstm_cm_note(ctx, SSTM_ACT_NONE);
  }
}

static const sstm_cm_ops_t user_prio = {
    .name = "user-prio",
    .description = "higher sstm_attr_t.priority kills; the loser sleeps until the winner ends",
    .on_conflict = up_conflict,
    .on_abort = up_abort,
    .stat_names = {"kill_requests", "waits_committing", "sleeps", "irrevocable"},
};

/* ---- the workload ---------------------------------------------------------- */

static int64_t accounts[NACCOUNTS];

struct transfer {
  int from, to;
  int64_t amount;
};

static void transfer_tx(void *arg) {
  const struct transfer *t = arg;
  sstm_store_i64(&accounts[t->from], sstm_load_i64(&accounts[t->from]) - t->amount);
  sstm_store_i64(&accounts[t->to], sstm_load_i64(&accounts[t->to]) + t->amount);
}

/* One unit from every account to the next: long, touches everything. */
static void rotate_tx(void *arg) {
  (void)arg;
  for (int i = 0; i < NACCOUNTS; i++) {
    int j = (i + 1) % NACCOUNTS;
    sstm_store_i64(&accounts[i], sstm_load_i64(&accounts[i]) - 1);
    sstm_store_i64(&accounts[j], sstm_load_i64(&accounts[j]) + 1);
  }
}

static void *urgent(void *arg) {
  unsigned seed = (unsigned)(uintptr_t)arg;
  const sstm_attr_t attr = {.priority = 1, .tag = TAG_URGENT};
  CHECK(sstm_thread_init());
  for (int i = 0; i < URGENT_OPS; i++) {
    struct transfer t;
    t.from = rand_r(&seed) % NACCOUNTS;
    t.to = (t.from + 1 + rand_r(&seed) % (NACCOUNTS - 1)) % NACCOUNTS;
    t.amount = rand_r(&seed) % 10;
    CHECK(sstm_run(&attr, transfer_tx, &t));
  }
  CHECK(sstm_thread_exit());
  return NULL;
}

static void *batch(void *arg) {
  (void)arg;
  const sstm_attr_t attr = {.priority = 0, .tag = TAG_BATCH};
  CHECK(sstm_thread_init());
  for (int i = 0; i < BATCH_OPS; i++)
    CHECK(sstm_run(&attr, rotate_tx, NULL));
  CHECK(sstm_thread_exit());
  return NULL;
}

int main(void) {
  /* Register before sstm_init, which selects the policy by name (the same
   * name works in SCHEDSTM_CM in other programs; this one fixes its whole
   * configuration, so the SCHEDSTM_* environment is not read). */
  CHECK(sstm_cm_register(&user_prio));
  sstm_config_t cfg;
  sstm_config_default(&cfg);
  cfg.use_env = false;
  cfg.cm = "user-prio";
  cfg.stats = SSTM_STATS_DETAILED; /* per-tag counts */
  CHECK(sstm_init(&cfg));
  char desc[512];
  sstm_describe(desc, sizeof desc);
  printf("user_policy: %s\n", desc);
  if (strcmp(sstm_cm_current()->name, "user-prio") != 0) {
    printf("user_policy: FAILED (policy %s)\n", sstm_cm_current()->name);
    return 1;
  }

  for (int i = 0; i < NACCOUNTS; i++)
    accounts[i] = INITIAL;
  pthread_t th[URGENT + BATCH];
  for (int i = 0; i < URGENT + BATCH; i++)
    if (pthread_create(&th[i], NULL, i < URGENT ? urgent : batch, (void *)(uintptr_t)(i + 1))) {
      printf("user_policy: FAILED (pthread_create)\n");
      return 1;
    }
  for (int i = 0; i < URGENT + BATCH; i++)
    pthread_join(th[i], NULL);

  sstm_stats_t st;
  CHECK(sstm_stats_aggregate(&st));
  /* The totals, with the policy's counters by name (the workers have
   * exited: per-thread lines are printed for live threads only). */
  CHECK(sstm_stats_dump(stdout));
  int64_t total = 0;
  for (int i = 0; i < NACCOUNTS; i++)
    total += accounts[i]; /* no transaction runs any more */
  CHECK(sstm_shutdown());

  const sstm_tag_stats_t *u = &st.tags[TAG_URGENT], *b = &st.tags[TAG_BATCH];
  printf("user_policy: urgent %" PRIu64 " commits, %.3f aborts/commit; batch %" PRIu64
         " commits, %.3f aborts/commit; remote aborts %" PRIu64 ", sleeps %" PRIu64
         ", irrevocable restarts %" PRIu64 "\n",
         u->commits, u->commits ? (double)u->aborts / (double)u->commits : 0.0, b->commits,
         b->commits ? (double)b->aborts / (double)b->commits : 0.0, st.cm_kills,
         st.cm_stats[C_SLEEPS], st.cm_stats[C_IRREVOCABLE]);
  if (total != (int64_t)NACCOUNTS * INITIAL || u->commits != (uint64_t)URGENT * URGENT_OPS ||
      b->commits != (uint64_t)BATCH * BATCH_OPS) {
    printf("user_policy: FAILED (total %" PRId64 ", expected %d; commits urgent %" PRIu64
           ", expected %d; batch %" PRIu64 ", expected %d)\n",
           total, NACCOUNTS * INITIAL, u->commits, URGENT * URGENT_OPS, b->commits,
           BATCH * BATCH_OPS);
    return 1;
  }
  printf("user_policy: OK\n");
  return 0;
}
