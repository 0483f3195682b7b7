/* SPDX-License-Identifier: MIT */
/* Unit tests: statistics counters. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../common/txhelp.h"

/* words in distinct lock stripes (stripe <= 4 KiB with the test config) */
static uint64_t words[8][512] __attribute__((aligned(4096)));
#define W(i) (&words[i][0])
static volatile int attempts;

static void ro_body(void *arg) {
  (void)arg;
  (void)sstm_load_u64(W(0));
  (void)sstm_load_u64(W(1));
}
static void upd_body(void *arg) {
  (void)arg;
  sstm_store_u64(W(2), sstm_load_u64(W(2)) + 1);
}

TEST(commit_counters) {
  sstm_test_init();
  sstm_attr_t ro = {.read_only = true};
  for (int i = 0; i < 5; i++)
    CHECK_OK(sstm_run(&ro, ro_body, NULL));
  for (int i = 0; i < 3; i++)
    CHECK_OK(sstm_run(NULL, ro_body, NULL)); /* detected read-only */
  for (int i = 0; i < 4; i++)
    CHECK_OK(sstm_run(NULL, upd_body, NULL));
  sstm_stats_t s;
  CHECK_OK(sstm_stats_get(sstm_self(), &s));
  CHECK_EQ_U(s.commits_ro, 8);
  CHECK_EQ_U(s.commits_update, 4);
  CHECK_EQ_U(s.commits_irrevocable, 0);
  CHECK_EQ_U(s.aborts_total, 0);
  CHECK_EQ_U(s.retries, 0);
  CHECK_EQ_U(s.slot, sstm_desc_slot(sstm_self()));
  CHECK_RC(sstm_stats_get(NULL, &s), SSTM_EINVAL);
  sstm_test_fini();
}

TEST(abort_counters_user) {
  sstm_test_init();
  attempts = 0;
  SSTM_ATOMIC_BEGIN(NULL)
    attempts++;
    sstm_store_u64(W(0), 1);
    if (attempts <= 3) sstm_restart();
  SSTM_ATOMIC_END();
  SSTM_ATOMIC_BEGIN(NULL)
    sstm_cancel();
  SSTM_ATOMIC_END();
  sstm_stats_t s;
  CHECK_OK(sstm_stats_get(sstm_self(), &s));
  CHECK_EQ_U(s.aborts[SSTM_ABORT_USER_RETRY], 3);
  CHECK_EQ_U(s.aborts[SSTM_ABORT_USER_CANCEL], 1);
  CHECK_EQ_U(s.aborts_total, 4);
  CHECK_EQ_U(s.retries, 3); /* a cancel is not followed by a retry */
  CHECK_EQ_U(s.max_retries, 3);
  CHECK_EQ_U(s.commits_update, 1);
  uint64_t sum = 0;
  for (int r = 0; r < SSTM_ABORT_REASON_COUNT; r++)
    sum += s.aborts[r];
  CHECK_EQ_U(sum, s.aborts_total);
  /* a transaction cancelled after 5 retries is the one that retried most */
  attempts = 0;
  SSTM_ATOMIC_BEGIN(NULL)
    attempts++;
    sstm_store_u64(W(0), 2);
    if (attempts <= 5) sstm_restart();
    sstm_cancel();
  SSTM_ATOMIC_END();
  CHECK_OK(sstm_stats_get(sstm_self(), &s));
  CHECK_EQ_U(s.aborts[SSTM_ABORT_USER_RETRY], 3 + 5);
  CHECK_EQ_U(s.max_retries, 5);
  CHECK_EQ_U(*W(0), 1); /* the cancelled transaction left nothing */
  sstm_test_fini();
}

TEST(abort_counter_validation_conflict) {
  sstm_test_init();
  *W(0) = 10;
  attempts = 0;
  SSTM_ATOMIC_BEGIN(NULL)
    attempts++;
    uint64_t v = sstm_load_u64(W(0));
    if (attempts == 1) {
      struct txh_store st = {W(0), 20};
      CHECK_OK(run_other(NULL, txh_store_fn, &st));
    }
    sstm_store_u64(W(1), v);
  SSTM_ATOMIC_END();
  CHECK_EQ_I(attempts, 2);
  CHECK_EQ_U(*W(1), 20);
  sstm_stats_t s;
  CHECK_OK(sstm_stats_get(sstm_self(), &s));
  CHECK_EQ_U(s.aborts_total, 1);
  CHECK_EQ_U(s.aborts[SSTM_ABORT_VALIDATE_READ] + s.aborts[SSTM_ABORT_VALIDATE_WRITE] +
                 s.aborts[SSTM_ABORT_VALIDATE_COMMIT],
             1);
  CHECK_EQ_U(s.retries, 1);
  txh_cleanup();
  sstm_test_fini();
}

/* Each failed validation is counted under the reason that names where it
 * failed. The attempt reads W(0); another descriptor then commits W(0) and
 * W(1) (or only W(0)); then the attempt
 *   read:   loads W(1), newer than its snapshot: the extension fails
 *           (VALIDATE_READ);
 *   write:  stores W(1): under ETL the store locks it and must extend
 *           first, which fails (VALIDATE_WRITE); under CTL the store is
 *           only buffered and the commit's locking extends (VALIDATE_COMMIT);
 *   commit: stores W(2), which nobody touched: only the commit's
 *           validation sees W(0) changed (VALIDATE_COMMIT). */
enum vcase { V_READ, V_WRITE, V_COMMIT };
static enum vcase vcase;

static void bump_w0_w1(void *arg) {
  (void)arg;
  sstm_store_u64(W(0), sstm_load_u64(W(0)) + 1);
  if (vcase != V_COMMIT) sstm_store_u64(W(1), sstm_load_u64(W(1)) + 1);
}

static void validation_case_body(void *arg) {
  (void)arg;
  attempts++;
  uint64_t v = sstm_load_u64(W(0));
  if (attempts == 1) CHECK_OK(run_other(NULL, bump_w0_w1, NULL));
  switch (vcase) {
  case V_READ: (void)sstm_load_u64(W(1)); break;
  case V_WRITE: sstm_store_u64(W(1), v); break;
  case V_COMMIT: sstm_store_u64(W(2), v); break;
  }
}

static void check_validation_reason(enum vcase c, sstm_abort_reason_t expect) {
  sstm_stats_t b, a;
  CHECK_OK(sstm_stats_get(sstm_self(), &b));
  vcase = c;
  attempts = 0;
  CHECK_OK(sstm_run(NULL, validation_case_body, NULL));
  CHECK_EQ_I(attempts, 2);
  CHECK_OK(sstm_stats_get(sstm_self(), &a));
  CHECK_EQ_U(a.aborts_total - b.aborts_total, 1);
  CHECK_MSG(a.aborts[expect] - b.aborts[expect] == 1, "case %d: expected one %s abort", (int)c,
            sstm_abort_reason_name(expect));
}

TEST(abort_counter_validation_reasons) {
  sstm_test_init();
  check_validation_reason(V_READ, SSTM_ABORT_VALIDATE_READ);
  check_validation_reason(V_WRITE, sstm_test_design() == SSTM_DESIGN_ETL
                                       ? SSTM_ABORT_VALIDATE_WRITE
                                       : SSTM_ABORT_VALIDATE_COMMIT);
  check_validation_reason(V_COMMIT, SSTM_ABORT_VALIDATE_COMMIT);
  txh_cleanup();
  sstm_test_fini();
}

TEST(abort_counter_ro_write) {
  sstm_test_init();
  sstm_attr_t ro = {.read_only = true};
  attempts = 0;
  SSTM_ATOMIC_BEGIN(&ro)
    attempts++;
    sstm_store_u64(W(3), sstm_load_u64(W(3)) + 1);
  SSTM_ATOMIC_END();
  CHECK_EQ_I(attempts, 2);
  CHECK_EQ_U(*W(3), 1);
  sstm_stats_t s;
  CHECK_OK(sstm_stats_get(sstm_self(), &s));
  CHECK_EQ_U(s.aborts[SSTM_ABORT_RO_WRITE], 1);
  CHECK_EQ_U(s.aborts_total, 1);
  CHECK_EQ_U(s.commits_update, 1);
  CHECK_EQ_U(s.commits_ro, 0);
  sstm_test_fini();
}

static void thread_work(sstm_tt_t *t) {
  for (unsigned i = 0; i < 10 + t->idx; i++)
    CHECK_OK(sstm_run(NULL, upd_body, NULL));
}

static void count_visit(const sstm_stats_t *s, void *arg) {
  int *n = arg;
  (*n)++;
  CHECK_NOT_NULL(s);
}

TEST(aggregate_foreach_reset) {
  sstm_test_init();
  for (int i = 0; i < 2; i++)
    CHECK_OK(sstm_run(NULL, upd_body, NULL));
  sstm_test_run_threads(3, true, thread_work, NULL); /* 10+11+12, then exit */
  sstm_stats_t a;
  CHECK_OK(sstm_stats_aggregate(&a));
  CHECK_EQ_U(a.commits_update, 2 + 33);
  CHECK_EQ_U(*W(2), 35);
  sstm_desc_t *e;
  CHECK_OK(sstm_desc_create(&e));
  int visited = 0;
  CHECK_EQ_I(sstm_stats_foreach(count_visit, &visited), 2); /* main + e */
  CHECK_EQ_I(visited, 2);
  CHECK_OK(sstm_stats_reset());
  CHECK_OK(sstm_stats_aggregate(&a));
  CHECK_EQ_U(a.commits_update, 0);
  CHECK_EQ_U(a.aborts_total, 0);
  CHECK_OK(sstm_desc_destroy(e));
  sstm_test_fini();
  CHECK_RC(sstm_stats_foreach(count_visit, &visited), SSTM_ESTATE);
}

/* Every counter of sstm_stats_t but the identity fields is zero. */
static void check_all_zero(const sstm_stats_t *s, const char *what) {
  sstm_stats_t z, c = *s;
  memset(&z, 0, sizeof z);
  z.size = c.size;
  c.slot = 0, c.tid = 0;
  const uint64_t *w = (const uint64_t *)(const void *)&c.commits_ro;
  const uint64_t *zw = (const uint64_t *)(const void *)&z.commits_ro;
  size_t n = (offsetof(sstm_stats_t, slot) - offsetof(sstm_stats_t, commits_ro)) / sizeof *w;
  for (size_t i = 0; i < n; i++)
    CHECK_MSG(w[i] == zw[i], "%s: word %zu of the counters is %llu after sstm_stats_reset", what, i,
              (unsigned long long)w[i]);
}

/* A tagged transaction of the last tag that restarts once and commits, and
 * one that cancels: the last words of the counters (the last tag's aborts)
 * and the last abort reason are not zero. */
static void last_tag_aborts(void) {
  sstm_attr_t last = {.tag = SSTM_MAX_TAGS - 1};
  attempts = 0;
  SSTM_ATOMIC_BEGIN(&last)
    attempts++;
    sstm_store_u64(W(5), sstm_load_u64(W(5)) + 1);
    if (attempts == 1) sstm_restart();
  SSTM_ATOMIC_END();
  SSTM_ATOMIC_BEGIN(&last)
    sstm_cancel();
  SSTM_ATOMIC_END();
}
static void last_tag_aborts_thread(sstm_tt_t *t) {
  (void)t;
  last_tag_aborts();
}

/* sstm_stats_reset clears every counter: of the registered descriptors, of
 * those made by sstm_desc_create, and of the threads that have exited
 * (kept in the process totals). Kills the mutant whose reset loop stops
 * one word short of the counters (the last tag's aborts survived it). */
TEST(reset_clears_every_counter) {
  sstm_config_t c;
  sstm_test_config(&c);
  c.stats = SSTM_STATS_DETAILED;
  CHECK_OK(sstm_init(&c));
  CHECK_OK(sstm_thread_init());
  sstm_test_run_threads(1, true, last_tag_aborts_thread, NULL); /* then exits */
  last_tag_aborts();
  sstm_desc_t *e;
  CHECK_OK(sstm_desc_create(&e));
  sstm_desc_t *self = sstm_desc_detach();
  CHECK_NOT_NULL(self);
  CHECK_OK(sstm_desc_attach(e));
  last_tag_aborts();
  CHECK_NOT_NULL(sstm_desc_detach());
  CHECK_OK(sstm_desc_attach(self));
  sstm_stats_t s;
  CHECK_OK(sstm_stats_aggregate(&s));
  CHECK_EQ_U(s.tags[SSTM_MAX_TAGS - 1].aborts, 6); /* the premise */
  CHECK_EQ_U(s.aborts[SSTM_ABORT_REASON_COUNT - 1], 3);
  CHECK_OK(sstm_stats_reset());
  CHECK_OK(sstm_stats_aggregate(&s));
  check_all_zero(&s, "the aggregate");
  CHECK_OK(sstm_stats_get(self, &s));
  check_all_zero(&s, "the registered descriptor");
  CHECK_OK(sstm_stats_get(e, &s));
  check_all_zero(&s, "the created descriptor");
  CHECK_OK(sstm_desc_destroy(e));
  sstm_test_fini();
}

typedef struct {
  unsigned slot[4];
  uint64_t commits[4];
  int n;
} seen_t;
static void record_visit(const sstm_stats_t *s, void *arg) {
  seen_t *v = arg;
  CHECK_LT_I(v->n, 4);
  v->slot[v->n] = s->slot;
  v->commits[v->n] = s->commits_update;
  v->n++;
}

/* sstm_stats_foreach gives each descriptor in use its own counters, also
 * after a slot below it was freed: the descriptors made by
 * sstm_desc_create in slots 1 and 2, the first destroyed, the second with
 * 4 commits. Kills the mutant that read the n-th slot for the n-th
 * descriptor found (the freed slot's counters, under its number). */
TEST(foreach_gives_each_descriptor_its_own_counters_past_a_freed_slot) {
  sstm_test_init();
  CHECK_OK(sstm_run(NULL, upd_body, NULL)); /* the main descriptor: 1 commit */
  sstm_desc_t *gap, *e;
  CHECK_OK(sstm_desc_create(&gap));
  CHECK_OK(sstm_desc_create(&e));
  unsigned main_slot = sstm_desc_slot(sstm_self());
  unsigned gap_slot = sstm_desc_slot(gap), e_slot = sstm_desc_slot(e);
  CHECK_LT_U(gap_slot, e_slot); /* the premise: the freed slot lies below e's */
  sstm_desc_t *self = sstm_desc_detach();
  CHECK_OK(sstm_desc_attach(gap));
  for (int i = 0; i < 2; i++)
    CHECK_OK(sstm_run(NULL, upd_body, NULL));
  CHECK_NOT_NULL(sstm_desc_detach());
  CHECK_OK(sstm_desc_attach(e));
  for (int i = 0; i < 4; i++)
    CHECK_OK(sstm_run(NULL, upd_body, NULL));
  CHECK_NOT_NULL(sstm_desc_detach());
  CHECK_OK(sstm_desc_attach(self));
  CHECK_OK(sstm_desc_destroy(gap));
  seen_t v = {.n = 0};
  CHECK_EQ_I(sstm_stats_foreach(record_visit, &v), 2);
  CHECK_EQ_I(v.n, 2);
  bool saw_main = false, saw_e = false;
  for (int i = 0; i < v.n; i++) {
    CHECK_NE_U(v.slot[i], gap_slot);
    if (v.slot[i] == main_slot) {
      saw_main = true;
      CHECK_EQ_U(v.commits[i], 1);
    }
    if (v.slot[i] == e_slot) {
      saw_e = true;
      CHECK_EQ_U(v.commits[i], 4);
    }
  }
  CHECK_TRUE(saw_main);
  CHECK_TRUE(saw_e);
  CHECK_OK(sstm_desc_destroy(e));
  sstm_test_fini();
}

TEST(detailed_stats) {
  sstm_config_t c;
  sstm_test_config(&c);
  c.stats = SSTM_STATS_DETAILED;
  CHECK_OK(sstm_init(&c));
  CHECK_OK(sstm_thread_init());
  sstm_attr_t tagged = {.tag = 5};
  SSTM_ATOMIC_BEGIN(&tagged)
    (void)sstm_load_u64(W(0));
    (void)sstm_load_u64(W(1));
    (void)sstm_load_u64(W(2));
    sstm_store_u64(W(3), 1);
    sstm_store_u64(W(4), 1);
  SSTM_ATOMIC_END();
  attempts = 0;
  SSTM_ATOMIC_BEGIN(&tagged)
    attempts++;
    (void)sstm_load_u64(W(0));
    if (attempts == 1) sstm_restart();
  SSTM_ATOMIC_END();
  sstm_stats_t s;
  CHECK_OK(sstm_stats_get(sstm_self(), &s));
  CHECK_EQ_U(s.reads_total, 4);
  CHECK_EQ_U(s.writes_total, 2);
  CHECK_EQ_U(s.reads_max, 3);
  CHECK_EQ_U(s.writes_max, 2);
  CHECK_EQ_U(s.tags[5].commits, 2);
  CHECK_EQ_U(s.tags[5].aborts, 1);
  CHECK_EQ_U(s.tags[0].commits, 0);
  sstm_test_fini();
}

/* The aggregate of the per-thread maxima is their maximum, not their sum:
 * this descriptor's largest sets are 3 reads and 2 writes, the second
 * descriptor's 2 reads and 3 writes; the aggregate says 3 and 3. (Its
 * totals, like every other counter, are sums.) */
static void two_reads_three_writes(void *arg) {
  (void)arg;
  (void)sstm_load_u64(W(5));
  (void)sstm_load_u64(W(6));
  sstm_store_u64(W(5), 1);
  sstm_store_u64(W(6), 1);
  sstm_store_u64(W(7), 1);
}

TEST(aggregate_takes_the_maximum_of_maxima) {
  sstm_config_t c;
  sstm_test_config(&c);
  c.stats = SSTM_STATS_DETAILED;
  CHECK_OK(sstm_init(&c));
  CHECK_OK(sstm_thread_init());
  attempts = 0;
  SSTM_ATOMIC_BEGIN(NULL)
    if (++attempts < 3) { /* two aborted attempts, then a commit */
      (void)sstm_load_u64(W(0));
      sstm_restart();
    }
    (void)sstm_load_u64(W(0));
    (void)sstm_load_u64(W(1));
    (void)sstm_load_u64(W(2));
    sstm_store_u64(W(3), 1);
    sstm_store_u64(W(4), 1);
  SSTM_ATOMIC_END();
  CHECK_EQ_I(run_other(NULL, two_reads_three_writes, NULL), 0);
  sstm_stats_t a;
  CHECK_OK(sstm_stats_aggregate(&a));
  CHECK_EQ_U(a.reads_max, 3);
  CHECK_EQ_U(a.writes_max, 3);
  CHECK_EQ_U(a.max_retries, 2);
  CHECK_EQ_U(a.reads_total, 5);
  CHECK_EQ_U(a.writes_total, 5);
  CHECK_EQ_U(a.commits_update, 2);
  txh_cleanup();
  sstm_test_fini();
}

/* A thread that registers after another one left may get its slot (and
 * descriptor) again: it starts from zero counters, and the aggregate still
 * has the first thread's counts exactly once. */
static unsigned first_slot;
static void *commit_three_and_leave(void *arg) {
  (void)arg;
  CHECK_OK(sstm_thread_init());
  first_slot = sstm_desc_slot(sstm_self());
  for (int i = 0; i < 3; i++)
    CHECK_OK(sstm_run(NULL, upd_body, NULL));
  CHECK_OK(sstm_thread_exit());
  return NULL;
}

TEST(reused_slot_starts_from_zero) {
  sstm_config_t c;
  sstm_test_config(&c);
  CHECK_OK(sstm_init(&c));
  pthread_t t;
  CHECK_EQ_I(pthread_create(&t, NULL, commit_three_and_leave, NULL), 0);
  CHECK_EQ_I(pthread_join(t, NULL), 0);
  CHECK_OK(sstm_thread_init());
  /* the premise: the registry hands the freed slot out again */
  CHECK_EQ_U(sstm_desc_slot(sstm_self()), first_slot);
  sstm_stats_t s, a;
  CHECK_OK(sstm_stats_get(sstm_self(), &s));
  CHECK_EQ_U(s.commits_update, 0);
  CHECK_EQ_U(s.aborts_total, 0);
  CHECK_OK(sstm_stats_aggregate(&a));
  CHECK_EQ_U(a.commits_update, 3);
  sstm_test_fini();
}

TEST(basic_stats_leave_detail_zero) {
  sstm_test_init();
  sstm_attr_t tagged = {.tag = 5};
  SSTM_ATOMIC_BEGIN(&tagged)
    (void)sstm_load_u64(W(0));
    sstm_store_u64(W(3), 1);
  SSTM_ATOMIC_END();
  sstm_stats_t s;
  CHECK_OK(sstm_stats_get(sstm_self(), &s));
  CHECK_EQ_U(s.reads_total, 0);
  CHECK_EQ_U(s.writes_total, 0);
  CHECK_EQ_U(s.tags[5].commits, 0);
  CHECK_EQ_U(s.commits_update, 1);
  sstm_test_fini();
}

/* What sstm_stats_dump writes. */
static char *dump_text(void) {
  FILE *f = tmpfile();
  CHECK_NOT_NULL(f);
  CHECK_OK(sstm_stats_dump(f));
  long n = ftell(f);
  CHECK_GT_I(n, 0);
  rewind(f);
  char *text = calloc(1, (size_t)n + 1);
  CHECK_EQ_U(fread(text, 1, (size_t)n, f), (unsigned long long)n);
  fclose(f);
  return text;
}

/* A dump whose bytes cannot be written is an error, not 0: a full disk
 * (/dev/full, unbuffered so that the failure is the dump's own write, and
 * buffered so that it comes at the flush), a stream opened for reading. An
 * error indicator the stream had before is not the dump's. */
TEST(dump_reports_a_write_error) {
  sstm_test_init();
  FILE *full = fopen("/dev/full", "w");
  if (full == NULL) sstm_test_skip("no /dev/full");
  setvbuf(full, NULL, _IONBF, 0);
  CHECK_RC(sstm_stats_dump(full), SSTM_EPERM);
  CHECK_CONTAINS(sstm_last_error(), "sstm_stats_dump: write error");
  fclose(full);
  full = fopen("/dev/full", "w");
  CHECK_NOT_NULL(full);
  CHECK_RC(sstm_stats_dump(full), SSTM_EPERM); /* fully buffered: at the flush */
  fclose(full);
  FILE *ro = fopen("/dev/null", "r");
  CHECK_NOT_NULL(ro);
  CHECK_RC(sstm_stats_dump(ro), SSTM_EPERM);
  fclose(ro);
  FILE *ok = tmpfile();
  CHECK_NOT_NULL(ok);
  CHECK_OK(sstm_stats_dump(ok));
  fclose(ok);
  sstm_test_fini();
}

/* The dump ends with the policy's own line (its describe hook): for
 * adaptive, the current choice and the reason; suicide has none. */
TEST(dump_shows_the_policys_current_choice) {
  sstm_config_t cfg;
  sstm_test_config(&cfg);
  cfg.cm = "adaptive";
  CHECK_OK(sstm_init(&cfg));
  CHECK_OK(sstm_thread_init());
  char *text = dump_text();
  CHECK_CONTAINS(text, "policy         adaptive: current=ser-kill");
  CHECK_CONTAINS(text, "reason=start threads=1<=cpus=");
  free(text);
  sstm_test_fini();
  sstm_test_init(); /* suicide */
  text = dump_text();
  CHECK_NOT_CONTAINS(text, "policy ");
  free(text);
  sstm_test_fini();
}

TEST(dump_names_nonzero_reasons) {
  sstm_test_init();
  attempts = 0;
  SSTM_ATOMIC_BEGIN(NULL)
    attempts++;
    if (attempts == 1) sstm_restart();
    sstm_store_u64(W(0), 1);
  SSTM_ATOMIC_END();
  char *text = dump_text();
  CHECK_CONTAINS(text, sstm_abort_reason_name(SSTM_ABORT_USER_RETRY));
  CHECK_NOT_CONTAINS(text, sstm_abort_reason_name(SSTM_ABORT_RO_EXTEND));
  free(text);
  sstm_test_fini();
  CHECK_RC(sstm_stats_dump(stderr), SSTM_ESTATE);
  CHECK_CONTAINS(sstm_last_error(), "sstm_stats_dump: the library is not initialised");
}

/* The dump also shows the transaction profiles (tags, detailed
 * statistics) and the policy's named counters and actions. */
static sstm_cm_action_t dt_conflict(sstm_cm_ctx_t *ctx, const sstm_conflict_t *c, uint64_t *w) {
  (void)ctx, (void)c, (void)w;
  return SSTM_CM_ABORT_SELF;
}
static void dt_abort(sstm_cm_ctx_t *ctx, const sstm_abort_info_t *info) {
  (void)info;
  sstm_cm_count(ctx, 1, 1);
  sstm_cm_note(ctx, SSTM_ACT_YIELD);
  sstm_cm_note(ctx, SSTM_ACT_NONE);
}
static const sstm_cm_ops_t dump_policy = {
    .name = "dump-test",
    .on_conflict = dt_conflict,
    .on_abort = dt_abort,
    .stat_names = {"unused", "seen_aborts"},
};

TEST(dump_shows_tags_and_policy) {
  CHECK_OK(sstm_cm_register(&dump_policy));
  sstm_config_t cfg;
  sstm_test_config(&cfg);
  cfg.stats = SSTM_STATS_DETAILED;
  cfg.cm = "dump-test";
  CHECK_OK(sstm_init(&cfg));
  CHECK_OK(sstm_thread_init());
  char *text = dump_text(); /* nothing happened yet: no tag, no policy line */
  CHECK_NOT_CONTAINS(text, "tags:");
  CHECK_NOT_CONTAINS(text, "dump-test:");
  free(text);
  sstm_attr_t a = {.tag = 3};
  attempts = 0;
  SSTM_ATOMIC_BEGIN(&a)
    attempts++;
    sstm_store_u64(W(0), 5);
    if (attempts <= 2) sstm_restart();
  SSTM_ATOMIC_END();
  a.tag = 7;
  for (int i = 0; i < 4; i++)
    CHECK_OK(sstm_run(&a, upd_body, NULL));
  sstm_stats_t st;
  CHECK_OK(sstm_stats_get(sstm_self(), &st));
  CHECK_EQ_U(st.tags[3].commits, 1);
  CHECK_EQ_U(st.tags[3].aborts, 2);
  CHECK_EQ_U(st.tags[7].commits, 4);
  text = dump_text();
  CHECK_CONTAINS(text, "tags: 3: commits=1 aborts=2 (2.000/commit) 7: commits=4 aborts=0");
  CHECK_CONTAINS(text, "dump-test: seen_aborts=2 yield=2 time=");
  CHECK_NOT_CONTAINS(text, "unused=");
  free(text);
  sstm_test_fini();
}

SSTM_TEST_MAIN()
