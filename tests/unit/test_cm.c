/* SPDX-License-Identifier: MIT */
/* Unit tests: contention-manager registry and the policy interface as the
 * engine drives it (init/fini, per-descriptor state, on_conflict with the
 * other party, WAIT bound, ABORT_OTHER), in both designs: a lock held by a
 * running, killable attempt exists only under encounter-time locking (the
 * TEST_ETL cases, registered for etl only); the cases that run under both
 * build their lock holders from an irrevocable transaction or a commit held
 * in its failed validation (both hold locks in either design). */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cm_duo.h"

/* ---- a recording policy ------------------------------------------------ */

#define MAX_EVENTS 256
static struct {
  int inits, finis, desc_inits, desc_finis;
  unsigned init_wait_max;
  int begins, commits, aborts;
  sstm_abort_reason_t first_abort_reason;
  int nconf;
  sstm_conflict_t conf[MAX_EVENTS];
  sstm_desc_t *conf_self[MAX_EVENTS];
  sstm_cm_action_t action; /* what on_conflict answers */
  uint64_t wait_ns;
  unsigned begin_retries[MAX_EVENTS];
  int init_rc;
  sstm_abort_info_t abort_info[MAX_EVENTS];
  sstm_cm_ctx_t abort_ctx[MAX_EVENTS]; /* the policy's view in on_abort */
  int conf_limit;                      /* if set: more conflicts than this fail the test */
  bool watch;                          /* on_conflict tries sstm_party_watch on both parties */
  int nwatch;
  bool watched_self, watched_other; /* the results of the first try */
  bool escalate;                    /* on_abort: sstm_cm_next_irrevocable */
} rec;

static int rp_init(const struct sstm_config *cfg) {
  rec.inits++;
  rec.init_wait_max = cfg->wait_max;
  return rec.init_rc;
}
static void rp_fini(void) { rec.finis++; }
static void rp_desc_init(sstm_cm_ctx_t *ctx) {
  CHECK_NOT_NULL(ctx->state);
  const unsigned char *s = ctx->state;
  for (int i = 0; i < 40; i++)
    CHECK_MSG(s[i] == 0, "policy state byte %d not zeroed (0x%02x)", i, s[i]);
  memset(ctx->state, 0x5A, 40); /* the whole state_size is ours */
  rec.desc_inits++;
}
static void rp_desc_fini(sstm_cm_ctx_t *ctx) {
  (void)ctx;
  rec.desc_finis++;
}
static void rp_on_begin(sstm_cm_ctx_t *ctx) {
  CHECK_EQ_U(ctx->txid, sstm_desc_txid(ctx->desc));
  if (rec.begins < MAX_EVENTS) rec.begin_retries[rec.begins] = ctx->retries;
  rec.begins++;
}
static void rp_on_commit(sstm_cm_ctx_t *ctx) {
  (void)ctx;
  rec.commits++;
}
static sstm_cm_action_t rp_on_conflict(sstm_cm_ctx_t *ctx, const sstm_conflict_t *c,
                                       uint64_t *wait_ns) {
  CHECK_EQ_U(*wait_ns, 0); /* preset */
  CHECK_MSG(rec.conf_limit == 0 || rec.nconf < rec.conf_limit,
            "conflict %d reported, at most %d expected (kind %d, attempt %u)", rec.nconf + 1,
            rec.conf_limit, (int)c->kind, c->attempt);
  if (rec.nconf < MAX_EVENTS) {
    rec.conf[rec.nconf] = *c;
    rec.conf_self[rec.nconf] = ctx->desc;
  }
  rec.nconf++;
  if (rec.watch && rec.nwatch++ == 0) {
    sstm_party_t self = {.desc = ctx->desc, .txid = ctx->txid};
    rec.watched_self = sstm_party_watch(&self);
    rec.watched_other = c->has_other && sstm_party_watch(&c->other);
  }
  if (rec.action == SSTM_CM_WAIT) *wait_ns = rec.wait_ns;
  return rec.action;
}
static void rp_on_abort(sstm_cm_ctx_t *ctx, const sstm_abort_info_t *info) {
  if (rec.aborts < MAX_EVENTS) rec.abort_info[rec.aborts] = *info;
  if (rec.aborts < MAX_EVENTS) rec.abort_ctx[rec.aborts] = *ctx;
  if (rec.aborts++ == 0) rec.first_abort_reason = info->reason;
  if (rec.escalate) sstm_cm_next_irrevocable(ctx);
}

/* The conflicts of kind k reported to descriptor d's policy. */
static int conflicts_of(sstm_desc_t *d, sstm_conflict_kind_t k, int *first) {
  int n = 0;
  for (int i = 0; i < rec.nconf && i < MAX_EVENTS; i++)
    if (rec.conf_self[i] == d && rec.conf[i].kind == k && n++ == 0 && first) *first = i;
  return n;
}

static const sstm_cm_ops_t recorder = {
    .name = "test-recorder",
    .description = "records every call (tests)",
    .state_size = 40,
    .init = rp_init,
    .fini = rp_fini,
    .desc_init = rp_desc_init,
    .desc_fini = rp_desc_fini,
    .on_begin = rp_on_begin,
    .on_commit = rp_on_commit,
    .on_conflict = rp_on_conflict,
    .on_abort = rp_on_abort,
};

static void init_with_rp(const char *cm, unsigned wait_max, sstm_read_past_t read_past) {
  sstm_config_t c;
  sstm_test_config(&c);
  c.cm = cm;
  c.wait_max = wait_max;
  c.read_past = read_past;
  CHECK_OK(sstm_init(&c));
  CHECK_OK(sstm_thread_init());
}

static void init_with(const char *cm, unsigned wait_max) {
  init_with_rp(cm, wait_max, SSTM_READ_PAST_RO);
}

/* ---- registry ----------------------------------------------------------- */

TEST(builtin_policies_listed) {
  char buf[4096];
  int n = sstm_cm_list(buf, sizeof buf);
  CHECK_GT_I(n, 0);
  CHECK_CONTAINS(buf, "suicide");
  CHECK_CONTAINS(buf, "backoff");
  const sstm_cm_ops_t *s = sstm_cm_find("suicide");
  CHECK_NOT_NULL(s);
  CHECK_EQ_STR(s->name, "suicide");
  CHECK_NOT_NULL((const void *)s->on_conflict);
  CHECK_NOT_NULL(sstm_cm_find("backoff"));
  CHECK_NULL(sstm_cm_find("no-such-policy"));
  CHECK_NULL(sstm_cm_current()); /* before init */
}

TEST(register_custom_policy) {
  CHECK_OK(sstm_cm_register(&recorder));
  CHECK_EQ_PTR(sstm_cm_find("test-recorder"), &recorder);
  char buf[4096];
  CHECK_GT_I(sstm_cm_list(buf, sizeof buf), 0);
  CHECK_CONTAINS(buf, "test-recorder");
  CHECK_CONTAINS(buf, "suicide");

  init_with("test-recorder", 33);
  CHECK_EQ_PTR(sstm_cm_current(), &recorder);
  CHECK_EQ_I(rec.inits, 1);
  CHECK_EQ_U(rec.init_wait_max, 33);
  CHECK_GE_I(rec.desc_inits, 1);
  uint64_t w = 0;
  tx_store_u64(&w, 7);
  CHECK_GE_I(rec.begins, 1);
  CHECK_GE_I(rec.commits, 1);
  CHECK_EQ_I(rec.nconf, 0);
  sstm_test_fini();
  CHECK_EQ_I(rec.finis, 1);
  CHECK_EQ_I(rec.desc_finis, rec.desc_inits);
  CHECK_NULL(sstm_cm_current());
}

/* P+ext's describe line is P's line, a comma and ext's, however long P's
 * line is, and returns its whole length like snprintf. An intermediate
 * buffer of 120 bytes cut adaptive's line into plausible, wrong numbers. */
static int long_describe(char *buf, size_t len) {
  char line[201];
  memset(line, 'a', 200);
  line[200] = '\0';
  return snprintf(buf, len, "%s", line);
}
static sstm_cm_action_t abort_self(sstm_cm_ctx_t *ctx, const sstm_conflict_t *c, uint64_t *w) {
  (void)ctx, (void)c, (void)w;
  return SSTM_CM_ABORT_SELF;
}
static const sstm_cm_ops_t long_desc = {
    .name = "test-longdesc",
    .description = "a 200-character describe line (tests)",
    .on_conflict = abort_self,
    .describe = long_describe,
};

TEST(ext_composite_describe_keeps_a_long_base_line) {
  CHECK_OK(sstm_cm_register(&long_desc));
  init_with("test-longdesc+ext", 64);
  const sstm_cm_ops_t *cm = sstm_cm_current();
  CHECK_NOT_NULL((const void *)cm->describe);
  char buf[512];
  int n = cm->describe(buf, sizeof buf);
  CHECK_EQ_I(n, (int)strlen(buf));
  CHECK_GT_I(n, 205);
  CHECK_EQ_I((int)strspn(buf, "a"), 200);
  CHECK_EQ_I(strncmp(buf + 200, ",ext=", 5), 0);
  char small[50];
  CHECK_EQ_I(cm->describe(small, sizeof small), n); /* the whole length */
  CHECK_EQ_I((int)strlen(small), 49);
  CHECK_EQ_I((int)strspn(small, "a"), 49);
  CHECK_EQ_I(cm->describe(NULL, 0), n);
  char d[2048];
  CHECK_GT_I(sstm_describe(d, sizeof d), 0);
  CHECK_CONTAINS(d, buf);
  sstm_test_fini();
}

/* A policy's callback must not start a transaction (cm.h): sstm_run there
 * is refused with SSTM_ESTATE, and the transaction it runs for restarts
 * and commits unharmed. Before, the callback's transaction overwrote the
 * checkpoint of the one that aborted, whose restart jumped into a dead
 * frame. */
static int cb_rc[2] = {1, 1}, cb_runs;
static void cb_body(void *arg) { (void)arg, cb_runs++; }
static void cb_abort(sstm_cm_ctx_t *ctx, const sstm_abort_info_t *info) {
  (void)ctx, (void)info;
  cb_rc[0] = sstm_run(NULL, cb_body, NULL);
}
static void cb_commit(sstm_cm_ctx_t *ctx) {
  (void)ctx;
  cb_rc[1] = sstm_run(NULL, cb_body, NULL);
}
static const sstm_cm_ops_t tx_in_callback = {
    .name = "test-txincallback",
    .description = "starts transactions from its callbacks (tests)",
    .on_conflict = abort_self,
    .on_abort = cb_abort,
    .on_commit = cb_commit,
};
static uint64_t cb_word;
static int cb_attempts;
static void restart_first(void *arg) {
  (void)arg;
  sstm_store_u64(&cb_word, 5);
  if (cb_attempts++ == 0) sstm_restart();
}
TEST(policy_callbacks_cannot_start_transactions) {
  CHECK_OK(sstm_cm_register(&tx_in_callback));
  init_with("test-txincallback", 64);
  CHECK_OK(sstm_run(NULL, restart_first, NULL));
  CHECK_EQ_I(cb_attempts, 2);
  CHECK_RC(cb_rc[0], SSTM_ESTATE);
  CHECK_RC(cb_rc[1], SSTM_ESTATE);
  CHECK_CONTAINS(sstm_last_error(), "must not start transactions");
  CHECK_EQ_I(cb_runs, 0);
  CHECK_EQ_U(tx_load_u64(&cb_word), 5);
  sstm_test_fini();
}

/* Every counter name is checked, also after an unused (NULL) slot: the
 * dump, the state table and +ext read every slot. The check used to stop
 * at the first NULL. */
TEST(register_checks_the_counter_names_after_a_gap) {
  static char long_name[SSTM_CM_STAT_NAME_MAX + 2];
  memset(long_name, 'n', sizeof long_name - 1);
  static sstm_cm_ops_t gap;
  gap = long_desc;
  gap.name = "test-gap";
  gap.stat_names[0] = "a";
  gap.stat_names[2] = "";
  CHECK_RC(sstm_cm_register(&gap), SSTM_EINVAL);
  CHECK_CONTAINS(sstm_last_error(), "counter name 2 must have");
  gap.stat_names[2] = long_name;
  CHECK_RC(sstm_cm_register(&gap), SSTM_EINVAL);
  CHECK_CONTAINS(sstm_last_error(), "counter name 2 must have");
  CHECK_NULL(sstm_cm_find("test-gap"));
  gap.stat_names[2] = "c"; /* a gap at 1 is allowed */
  CHECK_OK(sstm_cm_register(&gap));
  CHECK_NOT_NULL(sstm_cm_find("test-gap+ext"));
}

/* buf NULL is a size query whatever len says (it was written through). */
TEST(list_and_describe_with_a_null_buffer) {
  char buf[4096];
  int n = sstm_cm_list(buf, sizeof buf);
  CHECK_EQ_I(sstm_cm_list(NULL, 100), n);
  CHECK_EQ_I(sstm_cm_list(NULL, 0), n);
  sstm_test_init();
  int d = sstm_describe(buf, sizeof buf);
  CHECK_GT_I(d, 0);
  CHECK_EQ_I(sstm_describe(NULL, 100), d);
  sstm_test_fini();
}

TEST(register_after_init_used_by_next_init) {
  sstm_test_init();
  CHECK_EQ_STR(sstm_cm_current()->name, "suicide");
  CHECK_OK(sstm_cm_register(&recorder));
  CHECK_EQ_STR(sstm_cm_current()->name, "suicide");
  sstm_test_fini();
  init_with("test-recorder", 64);
  CHECK_EQ_PTR(sstm_cm_current(), &recorder);
  sstm_test_fini();
}

TEST(register_duplicate_name) {
  CHECK_OK(sstm_cm_register(&recorder));
  CHECK_RC(sstm_cm_register(&recorder), SSTM_EBUSY);
  static sstm_cm_ops_t other;
  other = recorder;
  CHECK_RC(sstm_cm_register(&other), SSTM_EBUSY);
  static sstm_cm_ops_t builtin_clash;
  builtin_clash = recorder;
  builtin_clash.name = "suicide";
  CHECK_RC(sstm_cm_register(&builtin_clash), SSTM_EBUSY);
  CHECK_NE_PTR(sstm_cm_find("suicide"), &builtin_clash);
  CHECK_EQ_PTR(sstm_cm_find("test-recorder"), &recorder);
}

TEST(register_bad_names) {
  static const char *const bad[] = {"",           "Upper",    "has space", "a/b",
                                    "semi;colon", "dot.name", "tab\t",     "\xc3\xa9t\xc3\xa9",
                                    "comma,x"};
  static sstm_cm_ops_t ops[sizeof bad / sizeof bad[0]];
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ops[i] = recorder;
    ops[i].name = bad[i];
    int rc = sstm_cm_register(&ops[i]);
    CHECK_MSG(rc == SSTM_EINVAL, "name \"%s\" accepted: %d (%s)", bad[i], rc, sstm_strerror(rc));
    CHECK_NULL(sstm_cm_find(bad[i]));
  }
  CHECK_RC(sstm_cm_register(NULL), SSTM_EINVAL);
  static sstm_cm_ops_t noname, noconf;
  noname = recorder;
  noname.name = NULL;
  CHECK_RC(sstm_cm_register(&noname), SSTM_EINVAL);
  noconf = recorder;
  noconf.name = "no-conflict-hook";
  noconf.on_conflict = NULL;
  CHECK_RC(sstm_cm_register(&noconf), SSTM_EINVAL);
  CHECK_NULL(sstm_cm_find("no-conflict-hook"));
  /* counter names: 1..SSTM_CM_STAT_NAME_MAX characters (the state table
   * and the statistics dump keep them whole) */
  static sstm_cm_ops_t longstat, emptystat, maxstat;
  static char name32[SSTM_CM_STAT_NAME_MAX + 2];
  memset(name32, 'c', SSTM_CM_STAT_NAME_MAX + 1);
  longstat = recorder;
  longstat.name = "long-stat";
  longstat.stat_names[0] = "fine";
  longstat.stat_names[1] = name32;
  CHECK_RC(sstm_cm_register(&longstat), SSTM_EINVAL);
  CHECK_CONTAINS(sstm_last_error(), "counter name 1");
  CHECK_NULL(sstm_cm_find("long-stat"));
  emptystat = recorder;
  emptystat.name = "empty-stat";
  emptystat.stat_names[0] = "";
  CHECK_RC(sstm_cm_register(&emptystat), SSTM_EINVAL);
  maxstat = longstat;
  maxstat.name = "max-stat";
  maxstat.stat_names[1] = name32 + 1; /* SSTM_CM_STAT_NAME_MAX characters */
  CHECK_OK(sstm_cm_register(&maxstat));
  /* the ext modifier's names are reserved */
  static sstm_cm_ops_t extname, pext;
  extname = recorder;
  extname.name = "ext";
  CHECK_RC(sstm_cm_register(&extname), SSTM_EINVAL);
  CHECK_CONTAINS(sstm_last_error(), "reserved");
  pext = recorder;
  pext.name = "suicide+ext"; /* would shadow the composite of a built-in */
  CHECK_RC(sstm_cm_register(&pext), SSTM_EINVAL);
  CHECK_CONTAINS(sstm_last_error(), "reserved");
  /* 1..SSTM_CM_NAME_MAX characters */
  static char longname[SSTM_CM_NAME_MAX + 2];
  memset(longname, 'n', SSTM_CM_NAME_MAX + 1);
  static sstm_cm_ops_t toolong, maxlen;
  toolong = recorder;
  toolong.name = longname;
  CHECK_RC(sstm_cm_register(&toolong), SSTM_EINVAL);
  maxlen = recorder;
  maxlen.name = longname + 1;
  CHECK_OK(sstm_cm_register(&maxlen));
  CHECK_EQ_PTR(sstm_cm_find(longname + 1), &maxlen);
  /* every allowed character */
  static sstm_cm_ops_t good;
  good = recorder;
  good.name = "az09+_-x";
  CHECK_OK(sstm_cm_register(&good));
  CHECK_EQ_PTR(sstm_cm_find("az09+_-x"), &good);
}

TEST(register_until_full) {
  enum { N = 4096 };
  static sstm_cm_ops_t ops[N];
  static char names[N][24];
  int rc = 0, i;
  for (i = 0; i < N; i++) {
    snprintf(names[i], sizeof names[i], "fill-%d", i);
    ops[i] = recorder;
    ops[i].name = names[i];
    rc = sstm_cm_register(&ops[i]);
    if (rc != 0) break;
  }
  CHECK_RC(rc, SSTM_ELIMIT);
  CHECK_GT_I(i, 0);
  CHECK_EQ_PTR(sstm_cm_find(names[i - 1]), &ops[i - 1]);
  CHECK_NULL(sstm_cm_find(names[i]));
  CHECK_NOT_NULL(sstm_cm_find("suicide")); /* built-ins survive */
}

/* "P+ext" puts ext's counter in the last slot: refused for a P that uses
 * all SSTM_CM_NSTATS counters (its last one would be overwritten), with a
 * message naming P; a P with one counter fewer composes and keeps them. */
TEST(ext_refused_for_policy_using_every_counter) {
  static sstm_cm_ops_t eight, seven;
  eight = recorder;
  eight.name = "test-eight";
  for (int i = 0; i < SSTM_CM_NSTATS; i++)
    eight.stat_names[i] = "c";
  eight.stat_names[SSTM_CM_NSTATS - 1] = "eighth";
  CHECK_OK(sstm_cm_register(&eight));
  seven = eight;
  seven.name = "test-seven";
  seven.stat_names[SSTM_CM_NSTATS - 1] = NULL;
  seven.stat_names[SSTM_CM_NSTATS - 2] = "seventh";
  CHECK_OK(sstm_cm_register(&seven));

  CHECK_EQ_PTR(sstm_cm_find("test-eight"), &eight); /* alone it is fine */
  CHECK_NULL(sstm_cm_find("test-eight+ext"));
  CHECK_CONTAINS(sstm_last_error(), "'test-eight'");
  sstm_config_t c;
  sstm_test_config(&c);
  c.cm = "test-eight+ext";
  CHECK_RC(sstm_init(&c), SSTM_EINVAL);
  CHECK_FALSE(sstm_initialized());
  CHECK_CONTAINS(sstm_last_error(), "'test-eight'");
  CHECK_CONTAINS(sstm_last_error(), "counters");
  setenv("SCHEDSTM_CM", "test-eight+ext", 1);
  sstm_config_t e;
  sstm_config_default(&e);
  CHECK_RC(sstm_config_from_env(&e), SSTM_EINVAL);
  CHECK_CONTAINS(sstm_last_error(), "SCHEDSTM_CM");
  CHECK_CONTAINS(sstm_last_error(), "'test-eight'");
  unsetenv("SCHEDSTM_CM");

  const sstm_cm_ops_t *o = sstm_cm_find("test-seven+ext");
  CHECK_NOT_NULL(o);
  CHECK_EQ_STR(o->stat_names[SSTM_CM_NSTATS - 2], "seventh");
  CHECK_EQ_STR(o->stat_names[SSTM_CM_NSTATS - 1], "ext_yields");
}

/* A "P+ext" composite runs as the policy sstm_init selects. Wrapped inside
 * another policy, its init refuses (its init, fini and describe hooks have
 * no context that would say which composite they belong to), and sstm_init
 * fails with the reason instead of misreading the other policy's table. */
static const sstm_cm_ops_t *wrapped_ext;
static int wrap_init(const sstm_config_t *cfg) { return wrapped_ext->init(cfg); }
static sstm_cm_action_t wrap_conflict(sstm_cm_ctx_t *ctx, const sstm_conflict_t *c,
                                      uint64_t *wait_ns) {
  return wrapped_ext->on_conflict(ctx, c, wait_ns);
}

TEST(ext_composite_inside_another_policy_is_refused) {
  wrapped_ext = sstm_cm_find("ser-block+ext");
  CHECK_NOT_NULL(wrapped_ext);
  static sstm_cm_ops_t wrapper = {
      .name = "test-wraps-ext", .init = wrap_init, .on_conflict = wrap_conflict};
  wrapper.state_size = wrapped_ext->state_size;
  CHECK_OK(sstm_cm_register(&wrapper));
  sstm_config_t c;
  sstm_test_config(&c);
  c.cm = "test-wraps-ext";
  CHECK_RC(sstm_init(&c), SSTM_EINVAL);
  CHECK_FALSE(sstm_initialized());
  CHECK_NOT_NULL(strstr(sstm_last_error(), "runs only as the policy sstm_init selects"));
  CHECK_NOT_NULL(strstr(sstm_last_error(), "'test-wraps-ext'"));
  c.cm = "ser-block+ext"; /* selected by its name, it runs */
  CHECK_OK(sstm_init(&c));
  CHECK_OK(sstm_shutdown());
}

/* state_size is bounded at registration (SSTM_CM_STATE_MAX): a huge one
 * would make every sstm_thread_init fail, and "P+ext" rounds it up (it
 * would wrap to a tiny composite state). The bound itself is usable. */
TEST(register_bounds_state_size) {
  static const size_t bad[] = {(size_t)1 << 60, SIZE_MAX - 3, SIZE_MAX, SSTM_CM_STATE_MAX + 1};
  static sstm_cm_ops_t ops[sizeof bad / sizeof bad[0]];
  static char names[sizeof bad / sizeof bad[0]][16];
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    snprintf(names[i], sizeof names[i], "test-big%zu", i);
    ops[i] = recorder;
    ops[i].name = names[i];
    ops[i].state_size = bad[i];
    int rc = sstm_cm_register(&ops[i]);
    CHECK_MSG(rc == SSTM_EINVAL, "state_size %zu accepted: %d (%s)", bad[i], rc, sstm_strerror(rc));
    CHECK_CONTAINS(sstm_last_error(), "state_size");
    CHECK_CONTAINS(sstm_last_error(), names[i]);
    CHECK_NULL(sstm_cm_find(names[i]));
  }
  static sstm_cm_ops_t max;
  max = recorder;
  max.name = "test-max-state";
  max.state_size = SSTM_CM_STATE_MAX;
  CHECK_OK(sstm_cm_register(&max));
  const sstm_cm_ops_t *o = sstm_cm_find("test-max-state+ext");
  CHECK_NOT_NULL(o);
  CHECK_GT_U(o->state_size, SSTM_CM_STATE_MAX); /* the base's state, then ext's */
  init_with("test-max-state+ext", 64);
  uint64_t w = 0;
  tx_store_u64(&w, 3);
  CHECK_EQ_U(tx_load_u64(&w), 3);
  sstm_test_fini();
}

/* Every registrable policy has its "P+ext": lookups share one composite per
 * P and never use up the pool, and lookups of unknown names build nothing. */
TEST(ext_composite_for_every_policy) {
  enum { N = SSTM_CM_MAX_POLICIES };
  static sstm_cm_ops_t ops[N];
  static char names[N][24];
  int n, rc = 0;
  for (n = 0; n < N; n++) {
    snprintf(names[n], sizeof names[n], "test-p%d", n);
    ops[n] = recorder;
    ops[n].name = names[n];
    if ((rc = sstm_cm_register(&ops[n])) != 0) break;
  }
  CHECK_RC(rc, SSTM_ELIMIT); /* the table is full */
  CHECK_GT_I(n, 0);
  for (int round = 0; round < 3; round++) {
    for (int k = 0; k < 20; k++) {
      char bogus[32];
      snprintf(bogus, sizeof bogus, "test-nosuch%d+ext", k);
      CHECK_NULL(sstm_cm_find(bogus));
    }
    /* "P+ext" names P whole: a prefix of a registered name is no policy */
    static const char *const prefixes[] = {"ser+ext", "soft+ext",   "os+ext",
                                           "s+ext",   "test-p+ext", "+ext"};
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
      CHECK_MSG(sstm_cm_find(prefixes[i]) == NULL, "round %d: %s found as %s", round, prefixes[i],
                sstm_cm_find(prefixes[i])->name);
    static const char *const builtins[] = {"suicide",   "backoff",   "yield",   "ser-spin",
                                           "ser-yield", "ser-block", "softser", "os_prio",
                                           "timestamp", "adaptive"};
    for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++) {
      char x[64];
      snprintf(x, sizeof x, "%s+ext", builtins[i]);
      const sstm_cm_ops_t *o = sstm_cm_find(x);
      CHECK_MSG(o != NULL, "round %d: %s not found: %s", round, x, sstm_last_error());
      CHECK_EQ_STR(o->name, x);
    }
    for (int i = 0; i < n; i++) {
      char x[sizeof names[i] + 8];
      snprintf(x, sizeof x, "%.23s+ext", names[i]);
      const sstm_cm_ops_t *o = sstm_cm_find(x);
      CHECK_MSG(o != NULL, "round %d: %s not found: %s", round, x, sstm_last_error());
      CHECK_EQ_STR(o->name, x);
      CHECK_EQ_PTR(sstm_cm_find(x), o); /* the same composite every time */
    }
  }
  char last[64];
  snprintf(last, sizeof last, "%s+ext", names[n - 1]);
  init_with(last, 64);
  CHECK_EQ_STR(sstm_cm_current()->name, last);
  sstm_test_fini();
}

/* Failed lookups and registrations say why, not an older failure. */
TEST(registry_errors_set_last_error) {
  CHECK_RC(sstm_design_parse("stale-message", NULL), SSTM_EINVAL);
  CHECK_NULL(sstm_cm_find(NULL));
  CHECK_CONTAINS(sstm_last_error(), "sstm_cm_find");
  CHECK_RC(sstm_design_parse("stale-message", NULL), SSTM_EINVAL);
  CHECK_NULL(sstm_cm_find("no-such-policy"));
  CHECK_CONTAINS(sstm_last_error(), "no-such-policy");
  CHECK_RC(sstm_design_parse("stale-message", NULL), SSTM_EINVAL);
  CHECK_RC(sstm_cm_register(NULL), SSTM_EINVAL);
  CHECK_CONTAINS(sstm_last_error(), "sstm_cm_register");
  CHECK_RC(sstm_design_parse("stale-message", NULL), SSTM_EINVAL);
  CHECK_EQ_I(sstm_sched_conflict_priority(NULL), -1);
  CHECK_CONTAINS(sstm_last_error(), "sstm_sched_conflict_priority");
}

TEST(policy_init_failure_fails_sstm_init) {
  static sstm_cm_ops_t failing;
  failing = recorder;
  failing.name = "test-failing";
  CHECK_OK(sstm_cm_register(&failing));
  rec.init_rc = SSTM_ENOMEM;
  sstm_config_t c;
  sstm_test_config(&c);
  c.cm = "test-failing";
  CHECK_RC(sstm_init(&c), SSTM_ENOMEM);
  CHECK_FALSE(sstm_initialized());
  rec.init_rc = 0;
  CHECK_OK(sstm_init(&c));
  CHECK_OK(sstm_shutdown());
}

/* ---- the engine calling the policy ------------------------------------- */

/* ---- the policy's view of an aborted attempt ------------------------- */

/* on_abort sees the attempt that aborted: its id and its set sizes, even
 * when an abort action (run before the restart) ran a transaction of its own
 * on the same descriptor. */
static uint64_t view_words[4][8] __attribute__((aligned(64)));
static uint64_t view_txid;
static int view_attempts;

static void view_action_body(void *arg) {
  (void)arg;
  (void)sstm_load_u64(&view_words[3][0]);
}
static void view_action(void *arg) {
  (void)arg;
  CHECK_OK(sstm_run(NULL, view_action_body, NULL));
}
static void view_body(void *arg) {
  (void)arg;
  if (++view_attempts > 1) return;
  (void)sstm_load_u64(&view_words[0][0]);
  (void)sstm_load_u64(&view_words[1][0]);
  (void)sstm_load_u64(&view_words[2][0]);
  sstm_store_u64(&view_words[3][0], 1);
  view_txid = sstm_txid();
  CHECK_OK(sstm_on_abort(view_action, NULL));
  sstm_restart();
}

TEST(on_abort_sees_the_aborted_attempt_not_the_actions) {
  CHECK_OK(sstm_cm_register(&recorder));
  init_with("test-recorder", 64);
  view_attempts = 0;
  CHECK_OK(sstm_run(NULL, view_body, NULL));
  CHECK_EQ_I(view_attempts, 2);
  CHECK_EQ_I(rec.aborts, 1);
  CHECK_EQ_I(rec.first_abort_reason, SSTM_ABORT_USER_RETRY);
  CHECK_EQ_U(rec.abort_ctx[0].txid, view_txid);
  CHECK_EQ_U(rec.abort_ctx[0].reads, 3);
  CHECK_EQ_U(rec.abort_ctx[0].writes, 1);
  sstm_test_fini();
}

/* ctx->birth is the start of the transaction's first attempt, kept across
 * its retries (age-based policies such as timestamp rely on it); ctx->start
 * is the current attempt's. A commit by another descriptor between the
 * attempts moves the clock, so the two differ on the retry. */
static void view_bump(void *arg) {
  (void)arg;
  sstm_store_u64(&view_words[0][0], sstm_load_u64(&view_words[0][0]) + 1);
}
static void age_body(void *arg) {
  (void)arg;
  if (++view_attempts > 2) return;
  CHECK_OK(run_other(NULL, view_bump, NULL));
  sstm_restart();
}

TEST(birth_is_kept_across_retries) {
  CHECK_OK(sstm_cm_register(&recorder));
  init_with("test-recorder", 64);
  view_attempts = 0;
  CHECK_OK(sstm_run(NULL, age_body, NULL));
  CHECK_EQ_I(view_attempts, 3);
  CHECK_EQ_I(rec.aborts, 2);
  CHECK_EQ_U(rec.abort_ctx[0].birth, rec.abort_ctx[0].start);
  CHECK_EQ_U(rec.abort_ctx[1].birth, rec.abort_ctx[0].birth);
  CHECK_GT_U(rec.abort_ctx[1].start, rec.abort_ctx[1].birth);
  /* aborts so far, the one being reported included */
  CHECK_EQ_U(rec.abort_ctx[0].retries, 1);
  CHECK_EQ_U(rec.abort_ctx[1].retries, 2);
  txh_cleanup();
  sstm_test_fini();
}

/* A policy's escalation to irrevocability (sstm_cm_next_irrevocable, its
 * progress bound) does not take sstm_restart and sstm_cancel away from the
 * body: the irrevocable attempt's in-place writes are undone from its undo
 * log, its frees do not happen and its allocations are released. The
 * recorder escalates after every abort here, so the second and third
 * attempts are irrevocable, and the third must find every word as it was
 * before the second. Before, either call in such an attempt was misuse that
 * ended the process. */
static uint64_t undo_w = 5;
static uint32_t undo_h[2] = {7, 8};
static uint64_t *undo_kept;
static int undo_attempts;
static bool undo_irrev[4];

static void undo_body(void *arg) {
  (void)arg;
  int k = undo_attempts++;
  CHECK_MSG(k < 3, "attempt %d: the cancel did not end the transaction", k + 1);
  undo_irrev[k] = sstm_is_irrevocable();
  CHECK_EQ_U(sstm_load_u64(&undo_w), 5);
  CHECK_EQ_U(sstm_load_u32(&undo_h[0]), 7);
  CHECK_EQ_U(sstm_load_u32(&undo_h[1]), 8);
  CHECK_EQ_U(sstm_load_u64(&undo_kept[3]), 33);
  if (k == 2) sstm_cancel();
  sstm_store_u64(&undo_w, 6);
  sstm_store_u32(&undo_h[1], 9);
  sstm_store_u64(&undo_w, 7); /* the undo log keeps the first old value */
  CHECK_EQ_U(sstm_load_u64(&undo_w), 7);
  uint64_t *fresh = sstm_malloc(64);
  CHECK_NOT_NULL(fresh);
  sstm_store_u64(&fresh[0], 1);
  sstm_free(undo_kept); /* released only after a commit */
  sstm_restart();
}

TEST(restart_and_cancel_undo_an_escalated_irrevocable_attempt) {
  CHECK_OK(sstm_cm_register(&recorder));
  init_with("test-recorder", 64);
  rec.escalate = true;
  undo_kept = sstm_malloc(8 * sizeof *undo_kept);
  CHECK_NOT_NULL(undo_kept);
  undo_kept[3] = 33;
  CHECK_RC(sstm_run(NULL, undo_body, NULL), SSTM_ECANCELED);
  CHECK_EQ_I(undo_attempts, 3);
  CHECK_FALSE(undo_irrev[0]);
  CHECK_TRUE(undo_irrev[1]);
  CHECK_TRUE(undo_irrev[2]);
  CHECK_EQ_U(undo_w, 5);
  CHECK_EQ_U(undo_h[0], 7);
  CHECK_EQ_U(undo_h[1], 8);
  CHECK_EQ_U(undo_kept[3], 33); /* not freed (ASan would see the use) */
  sstm_stats_t s;
  CHECK_OK(sstm_stats_get(sstm_self(), &s));
  CHECK_EQ_U(s.aborts[SSTM_ABORT_USER_RETRY], 2);
  CHECK_EQ_U(s.aborts[SSTM_ABORT_USER_CANCEL], 1);
  CHECK_EQ_U(s.commits_irrevocable, 0);
  /* The serial mode was given back: another descriptor's update commits,
   * and the words it did not write keep the restored values. */
  rec.escalate = false;
  struct txh_store st = {&undo_w, 11};
  CHECK_OK(run_other(NULL, txh_store_fn, &st));
  CHECK_EQ_U(tx_load_u64(&undo_w), 11);
  CHECK_FALSE(sstm_is_irrevocable());
  sstm_free(undo_kept);
  txh_cleanup();
  sstm_test_fini();
}

/* A thread that ends inside an attempt that a policy made irrevocable: the
 * attempt is cancelled, its in-place write undone (it was committed, half a
 * transfer, because the policy had escalated it), and its on_commit action
 * does not run. */
static uint64_t ab_a = 100, ab_b;
static int ab_attempts, ab_commit_actions;
static void ab_on_commit(void *arg) {
  (void)arg;
  ab_commit_actions++;
}
static void ab_body(void *arg) {
  (void)arg;
  int k = ++ab_attempts;
  CHECK_OK(sstm_on_commit(ab_on_commit, NULL));
  sstm_store_u64(&ab_a, sstm_load_u64(&ab_a) - 10);
  if (k == 1) sstm_restart();
  CHECK_TRUE(sstm_is_irrevocable());
  pthread_exit(NULL); /* before the other half */
  sstm_store_u64(&ab_b, sstm_load_u64(&ab_b) + 10);
}
static void *ab_thread(void *arg) {
  (void)arg;
  CHECK_OK(sstm_thread_init());
  (void)sstm_run(NULL, ab_body, NULL);
  FAIL("the thread did not end inside its transaction");
  return NULL;
}

static void esc_every_abort(sstm_cm_ctx_t *ctx, const sstm_abort_info_t *info) {
  (void)info;
  sstm_cm_next_irrevocable(ctx);
}
static const sstm_cm_ops_t escalate_every = {
    .name = "test-escalate-every",
    .description = "abort self, every retry irrevocable (tests)",
    .on_conflict = abort_self,
    .on_abort = esc_every_abort,
};

TEST(thread_ending_inside_an_escalated_attempt_cancels_it) {
  CHECK_OK(sstm_cm_register(&escalate_every));
  init_with("test-escalate-every", 64);
  pthread_t t;
  CHECK_EQ_I(pthread_create(&t, NULL, ab_thread, NULL), 0);
  CHECK_EQ_I(pthread_join(t, NULL), 0);
  CHECK_EQ_I(ab_attempts, 2);
  CHECK_EQ_U(ab_a, 100);
  CHECK_EQ_U(ab_b, 0);
  CHECK_EQ_I(ab_commit_actions, 0);
  CHECK_FALSE(sstm_is_irrevocable());
  struct txh_store st = {&ab_b, 1}; /* the serial mode was given back */
  CHECK_OK(run_other(NULL, txh_store_fn, &st));
  txh_cleanup();
  sstm_test_fini();
}

/* The policy sees how many of a transaction's aborts were conflicts: user
 * restarts count in `retries`, not in `conflicts` (the progress bounds of
 * the built-in policies count conflicts). */
static uint64_t cc_word, cc_other;
static int cc_attempts;
static void cc_body(void *arg) {
  (void)arg;
  int k = ++cc_attempts;
  if (k == 2 || k == 4) sstm_restart();
  if (k >= 5) return;
  (void)sstm_load_u64(&cc_word);
  struct txh_store st = {&cc_word, (uint64_t)k};
  CHECK_OK(run_other(NULL, txh_store_fn, &st)); /* cc_word changes under us */
  sstm_store_u64(&cc_other, 100);               /* commit-time validation fails */
}

TEST(policy_context_counts_conflicts_apart_from_retries) {
  CHECK_OK(sstm_cm_register(&recorder));
  init_with("test-recorder", 64);
  CHECK_OK(sstm_run(NULL, cc_body, NULL));
  CHECK_EQ_I(cc_attempts, 5);
  CHECK_EQ_I(rec.aborts, 4);
  static const unsigned conflicts[4] = {1, 1, 2, 2};
  for (int i = 0; i < 4; i++) {
    CHECK_EQ_U(rec.abort_ctx[i].retries, (unsigned)i + 1);
    CHECK_EQ_U(rec.abort_ctx[i].conflicts, conflicts[i]);
  }
  /* validate-write when the two words share a stripe (ETL) */
  CHECK_TRUE(rec.abort_info[0].reason == SSTM_ABORT_VALIDATE_COMMIT ||
             rec.abort_info[0].reason == SSTM_ABORT_VALIDATE_WRITE);
  CHECK_EQ_I(rec.abort_info[1].reason, SSTM_ABORT_USER_RETRY);
  txh_cleanup();
  sstm_test_fini();
}

static uint64_t word_w, word_x;
static volatile int b_attempts;

static void writer_cancel_on_retry(void *arg) {
  (void)arg;
  if (++b_attempts > 1) sstm_cancel();
  sstm_store_u64(&word_w, 100);
}

/* ETL: a write meets a lock held by a suspended transaction. */
static void bump_word_x(void *arg) {
  (void)arg;
  sstm_store_u64(&word_x, sstm_load_u64(&word_x) + 1);
}

TEST_ETL(conflict_reports_other_party) {
  CHECK_OK(sstm_cm_register(&recorder));
  init_with("test-recorder", 64);
  rec.action = SSTM_CM_ABORT_SELF;
  sstm_desc_t *a = sstm_self();
  for (int i = 0; i < 3; i++) /* move the clock: a's start is then not 0 */
    CHECK_OK(sstm_run(NULL, bump_word_x, NULL));
  uint64_t a_txid = 0;
  sstm_attr_t a_attr = {.priority = 7};
  SSTM_ATOMIC_BEGIN(&a_attr)
    (void)sstm_load_u64(&word_x); /* one read-set entry */
    sstm_store_u64(&word_w, 1);
    a_txid = sstm_txid();
    CHECK_EQ_U(a_txid, sstm_desc_txid(a));
    rec.nconf = 0;
    rec.aborts = 0;
    b_attempts = 0;
    CHECK_RC(run_other_attached(NULL, writer_cancel_on_retry, NULL), SSTM_ECANCELED);
    CHECK_EQ_I(b_attempts, 2);
    CHECK_EQ_I(rec.nconf, 1);
    const sstm_conflict_t *c = &rec.conf[0];
    CHECK_EQ_I(c->kind, SSTM_CONFLICT_WRITE_LOCKED);
    CHECK_EQ_PTR(c->addr, &word_w);
    CHECK_TRUE(c->has_other);
    CHECK_EQ_PTR(c->other.desc, a);
    CHECK_EQ_U(c->other.slot, sstm_desc_slot(a));
    CHECK_EQ_U(c->other.txid, a_txid);
    CHECK_EQ_I(c->other.tid, sstm_desc_tid(a)); /* the thread last attached: this one */
    CHECK_EQ_I(c->other.tid, (int)gettid());
    CHECK_EQ_I(c->other.priority, 7);
    CHECK_GE_U(c->other.reads, 1);
    CHECK_GE_U(c->other.writes, 1);
    /* a's first attempt, and nothing committed between its start and the
     * start of the attempt that met it: the same timestamp */
    CHECK_GT_U(c->other.start, 0);
    CHECK_EQ_U(c->other.birth, c->other.start);
    CHECK_EQ_U(c->other.start, rec.abort_ctx[0].start);
    CHECK_FALSE(c->other.committing);
    CHECK_EQ_U(c->attempt, 0);
    CHECK_EQ_PTR(rec.conf_self[0], txh_other_desc());
    /* ABORT_SELF: the policy's on_abort sees the reason before the retry */
    CHECK_GE_I(rec.aborts, 1);
    CHECK_EQ_I(rec.first_abort_reason, SSTM_ABORT_WRITE_LOCKED);
  SSTM_ATOMIC_END();
  CHECK_EQ_U(word_w, 1);
  sstm_stats_t s;
  CHECK_OK(sstm_stats_get(txh_other_desc(), &s));
  CHECK_EQ_U(s.aborts[SSTM_ABORT_WRITE_LOCKED], 1);
  CHECK_EQ_U(s.aborts[SSTM_ABORT_USER_CANCEL], 1);
  txh_cleanup();
  sstm_test_fini();
}

static void reader_cancel_on_retry(void *arg) {
  (void)arg;
  if (++b_attempts > 1) sstm_cancel();
  (void)sstm_load_u64(&word_w);
}

/* With cfg.read_past off: with it on, the reader passes the lock of a
 * writer that has not started to commit (tests/unit/test_read_past.c). */
TEST_ETL(read_conflict_reports_read_locked) {
  CHECK_OK(sstm_cm_register(&recorder));
  init_with_rp("test-recorder", 64, SSTM_READ_PAST_OFF);
  rec.action = SSTM_CM_ABORT_SELF;
  SSTM_ATOMIC_BEGIN(NULL)
    sstm_store_u64(&word_w, 1);
    rec.nconf = 0;
    b_attempts = 0;
    CHECK_RC(run_other_attached(NULL, reader_cancel_on_retry, NULL), SSTM_ECANCELED);
    CHECK_EQ_I(rec.nconf, 1);
    CHECK_EQ_I(rec.conf[0].kind, SSTM_CONFLICT_READ_LOCKED);
    CHECK_TRUE(rec.conf[0].has_other);
  SSTM_ATOMIC_END();
  txh_cleanup();
  sstm_test_fini();
}

TEST_ETL(wait_is_bounded_by_wait_max) {
  CHECK_OK(sstm_cm_register(&recorder));
  const unsigned WM = 5;
  init_with("test-recorder", WM);
  rec.action = SSTM_CM_WAIT;
  const uint64_t WAIT = 200000; /* 200 us a wait: 1 ms in all */
  rec.wait_ns = WAIT;
  SSTM_ATOMIC_BEGIN(NULL)
    sstm_store_u64(&word_w, 1);
    rec.nconf = 0;
    b_attempts = 0;
    /* the holder is suspended: waiting can never succeed, the engine must
     * give up after wait_max WAITs and abort B (no hang) */
    uint64_t t0 = txh_now_ns();
    CHECK_RC(run_other_attached(NULL, writer_cancel_on_retry, NULL), SSTM_ECANCELED);
    uint64_t took = txh_now_ns() - t0;
    CHECK_EQ_I(b_attempts, 2);
    /* WM waits, then the conflict the engine turns into an abort */
    CHECK_EQ_I(rec.nconf, (int)WM + 1);
    /* each WAIT spun for its time (a lower bound: cannot fail by load) */
    CHECK_GE_U(took, WM * WAIT);
    for (int i = 0; i < rec.nconf; i++) {
      CHECK_EQ_U(rec.conf[i].attempt, (unsigned)i);
      CHECK_EQ_I(rec.conf[i].kind, SSTM_CONFLICT_WRITE_LOCKED);
    }
  SSTM_ATOMIC_END();
  sstm_stats_t s;
  CHECK_OK(sstm_stats_get(txh_other_desc(), &s));
  CHECK_EQ_U(s.cm_waits, WM);
  CHECK_GE_U(s.cm_wait_ns, WM * WAIT); /* measured, and as long */
  CHECK_EQ_U(s.aborts[SSTM_ABORT_WRITE_LOCKED], 1);
  txh_cleanup();
  sstm_test_fini();
}

static uint64_t b_txid;
static void writer_b(void *arg) {
  (void)arg;
  b_attempts++;
  b_txid = sstm_txid();
  sstm_store_u64(&word_w, 100);
}

TEST_ETL(abort_other_kills_lock_holder) {
  CHECK_OK(sstm_cm_register(&recorder));
  init_with("test-recorder", 64);
  rec.action = SSTM_CM_ABORT_OTHER;
  static volatile int a_attempts;
  a_attempts = 0;
  sstm_desc_t *a = sstm_self();
  SSTM_ATOMIC_BEGIN(NULL)
    a_attempts++;
    sstm_store_u64(&word_x, 1);
    sstm_store_u64(&word_w, 1);
    if (a_attempts == 1) {
      b_attempts = 0;
      /* B kills A (running, its thread waits for B) and takes over A's lock
       * on word_w: B commits. */
      CHECK_OK(run_other_attached(NULL, writer_b, NULL));
      CHECK_EQ_I(b_attempts, 1);
      CHECK_EQ_U(word_w, 100);
      CHECK_EQ_U(word_x, 0); /* A's buffered writes never reached memory */
      /* A's next barrier must abort it (reason killed) and restart. */
      (void)sstm_load_u64(&word_x);
      FAIL("a killed transaction continued past a barrier");
    }
    /* second attempt: overwrite */
    rec.action = SSTM_CM_ABORT_SELF;
  SSTM_ATOMIC_END();
  CHECK_EQ_I(a_attempts, 2);
  CHECK_EQ_U(word_w, 1);
  CHECK_EQ_U(word_x, 1);
  sstm_stats_t sa, sb;
  CHECK_OK(sstm_stats_get(a, &sa));
  CHECK_OK(sstm_stats_get(txh_other_desc(), &sb));
  CHECK_EQ_U(sa.aborts[SSTM_ABORT_KILLED], 1);
  CHECK_EQ_U(sb.cm_kills, 1);
  CHECK_EQ_U(sb.locks_stolen, 1);
  CHECK_EQ_U(sb.commits_update, 1);
  /* A's policy heard of the kill, noticed at a barrier, with the killer:
   * B's attempt that stole the lock. */
  int k = -1;
  CHECK_EQ_I(conflicts_of(a, SSTM_CONFLICT_KILLED, &k), 1);
  CHECK_TRUE(rec.conf[k].has_other);
  CHECK_EQ_PTR(rec.conf[k].other.desc, txh_other_desc());
  CHECK_EQ_U(rec.conf[k].other.slot, sstm_desc_slot(txh_other_desc()));
  CHECK_EQ_U(rec.conf[k].other.txid, b_txid);
  CHECK_EQ_I(rec.aborts, 1);
  CHECK_EQ_I(rec.abort_info[0].reason, SSTM_ABORT_KILLED);
  CHECK_TRUE(rec.abort_info[0].has_other);
  CHECK_EQ_PTR(rec.abort_info[0].other.desc, txh_other_desc());
  CHECK_EQ_U(rec.abort_info[0].other.txid, b_txid);
  txh_cleanup();
  sstm_test_fini();
}

/* sstm_desc_kill from a thread that is not registered. */
static void *kill_unregistered(void *d) {
  CHECK_NULL(sstm_self());
  CHECK_OK(sstm_desc_kill(d, 0));
  return NULL;
}

/* Kills requested through sstm_desc_kill: each reaches the victim's policy
 * (on_conflict and on_abort), naming the killer when it is a registered
 * thread's descriptor, nobody when the request came from an unregistered
 * thread or from the victim itself. */
static struct {
  sstm_desc_t *a, *o;
  int attempts;
  uint64_t o_txid;
} kn;

static void kill_body(void *arg) {
  (void)arg;
  kn.attempts++;
  sstm_store_u64(&word_w, (uint64_t)kn.attempts);
  if (kn.attempts == 1) { /* a registered thread, outside any transaction */
    CHECK_EQ_PTR(sstm_desc_detach(), kn.a);
    CHECK_OK(sstm_desc_attach(kn.o));
    kn.o_txid = sstm_desc_txid(kn.o);
    CHECK_OK(sstm_desc_kill(kn.a, 0));
    CHECK_EQ_PTR(sstm_desc_detach(), kn.o);
    CHECK_OK(sstm_desc_attach(kn.a));
  } else if (kn.attempts == 2) { /* an unregistered thread */
    pthread_t th;
    CHECK_EQ_I(pthread_create(&th, NULL, kill_unregistered, kn.a), 0);
    CHECK_EQ_I(pthread_join(th, NULL), 0);
  } else if (kn.attempts == 3) { /* itself */
    CHECK_OK(sstm_desc_kill(kn.a, 0));
  }
  if (kn.attempts < 4) {
    (void)sstm_load_u64(&word_x); /* the next barrier notices the kill */
    FAIL("attempt %d continued past a barrier after its kill", kn.attempts);
  }
}

TEST(kill_names_the_killer_when_known) {
  CHECK_OK(sstm_cm_register(&recorder));
  init_with("test-recorder", 64);
  rec.action = SSTM_CM_ABORT_SELF;
  sstm_desc_t *a = sstm_self(), *o = txh_other_desc();
  kn.a = a;
  kn.o = o;
  for (int i = 0; i < 3; i++) /* o's last attempt gets a txid of its own */
    CHECK_OK(run_other(NULL, writer_b, NULL));
  CHECK_GT_U(sstm_desc_txid(o), 2);
  CHECK_OK(sstm_run(NULL, kill_body, NULL));
  int attempts = kn.attempts;
  uint64_t o_txid = kn.o_txid;
  CHECK_EQ_I(attempts, 4);
  CHECK_EQ_U(word_w, 4);
  int k = -1;
  CHECK_EQ_I(conflicts_of(a, SSTM_CONFLICT_KILLED, &k), 3);
  CHECK_TRUE(rec.conf[k].has_other);
  CHECK_EQ_PTR(rec.conf[k].other.desc, o);
  CHECK_EQ_U(rec.conf[k].other.txid, o_txid);
  CHECK_FALSE(rec.conf[k + 1].has_other);
  CHECK_FALSE(rec.conf[k + 2].has_other);
  CHECK_EQ_I(rec.aborts, 3);
  for (int i = 0; i < 3; i++) {
    CHECK_EQ_I(rec.abort_info[i].reason, SSTM_ABORT_KILLED);
    CHECK_EQ_I(rec.abort_info[i].has_other, i == 0);
  }
  CHECK_EQ_PTR(rec.abort_info[0].other.desc, o);
  sstm_stats_t sa;
  CHECK_OK(sstm_stats_get(a, &sa));
  CHECK_EQ_U(sa.aborts[SSTM_ABORT_KILLED], 3);
  txh_cleanup();
  sstm_test_fini();
}

/* CTL: a validation conflict has no other party and always aborts self. */
/* A failed validation names the writer that holds the changed stripe
 * locked. A reads w; thread B commits x (so that A's next read needs an
 * extension), then locks w in a second transaction and waits inside it;
 * A's read of x fails the extension on w, held by B's running attempt. */
/* Two words in different stripes (32-byte stripes). */
static uint64_t vp_w[8] __attribute__((aligned(64)));
static uint64_t vp_x[8] __attribute__((aligned(64)));

static struct {
  _Atomic int step; /* 1: A read w; 2: B holds w; 3: B may commit; 4: done */
  sstm_desc_t *b;
  uint64_t b_txid;
  int attempts;
  bool read_past; /* the retry passes B's lock instead of waiting for B */
} vp;

static void vp_store_x(void *arg) {
  (void)arg;
  sstm_store_u64(&vp_x[0], sstm_load_u64(&vp_x[0]) + 1);
}

static void vp_hold_w(void *arg) {
  (void)arg;
  sstm_store_u64(&vp_w[0], 77); /* ETL: locked from here to the commit */
  vp.b_txid = sstm_txid();
  atomic_store_explicit(&vp.step, 2, memory_order_seq_cst);
  while (atomic_load_explicit(&vp.step, memory_order_seq_cst) < 3)
    sched_yield();
}

static void *vp_writer(void *arg) {
  (void)arg;
  CHECK_OK(sstm_thread_init());
  vp.b = sstm_self();
  while (atomic_load_explicit(&vp.step, memory_order_seq_cst) < 1)
    sched_yield();
  CHECK_OK(sstm_run(NULL, vp_store_x, NULL));
  CHECK_OK(sstm_run(NULL, vp_hold_w, NULL));
  CHECK_OK(sstm_thread_exit());
  atomic_store_explicit(&vp.step, 4, memory_order_seq_cst);
  return NULL;
}

static void vp_reader(void *arg) {
  uint64_t *out = arg;
  if (++vp.attempts == 1) {
    (void)sstm_load_u64(&vp_w[0]);
    atomic_store_explicit(&vp.step, 1, memory_order_seq_cst);
    while (atomic_load_explicit(&vp.step, memory_order_seq_cst) < 2)
      sched_yield();
    (void)sstm_load_u64(&vp_x[0]); /* newer than our snapshot: extension fails */
    FAIL("the extension over a stripe locked by B succeeded");
  }
  if (vp.read_past) { /* retry: read w past B, still running */
    *out = sstm_load_u64(&vp_w[0]) + sstm_load_u64(&vp_x[0]);
    return;
  }
  atomic_store_explicit(&vp.step, 3, memory_order_seq_cst); /* retry: let B commit first */
  while (atomic_load_explicit(&vp.step, memory_order_seq_cst) < 4)
    sched_yield();
  *out = sstm_load_u64(&vp_w[0]) + sstm_load_u64(&vp_x[0]);
}

/* With cfg.read_past off (the next case has it on). */
TEST_ETL(validation_names_the_lock_holder) { /* CTL: validation_names_the_committing_lock_holder */
  CHECK_OK(sstm_cm_register(&recorder));
  init_with_rp("test-recorder", 64, SSTM_READ_PAST_OFF);
  rec.action = SSTM_CM_ABORT_SELF;
  pthread_t th;
  CHECK_EQ_I(pthread_create(&th, NULL, vp_writer, NULL), 0);
  uint64_t sum = 0;
  CHECK_OK(sstm_run(NULL, vp_reader, &sum));
  CHECK_EQ_I(pthread_join(th, NULL), 0);
  CHECK_EQ_I(vp.attempts, 2);
  CHECK_EQ_U(sum, 77 + 1);
  int k = -1;
  CHECK_EQ_I(conflicts_of(sstm_self(), SSTM_CONFLICT_VALIDATION, &k), 1);
  CHECK_TRUE(rec.conf[k].has_other);
  CHECK_EQ_PTR(rec.conf[k].other.desc, vp.b);
  CHECK_EQ_U(rec.conf[k].other.txid, vp.b_txid);
  CHECK_EQ_I(rec.abort_info[0].reason, SSTM_ABORT_VALIDATE_READ);
  CHECK_TRUE(rec.abort_info[0].has_other);
  CHECK_EQ_PTR(rec.abort_info[0].other.desc, vp.b);
  sstm_test_fini();
}

/* The same with cfg.read_past = SSTM_READ_PAST_ALL. B locked w after its commit of x, so its
 * lock_end is past A's snapshot and A's extension refuses w, although B has
 * not written it (lock_end bounds all of B's locks). B is running, not
 * committing: it is not named (a policy would wait for a writer that
 * changed nothing), and A's retry passes B's lock and reads w's committed
 * value while B still runs. */
TEST_ETL(validation_with_read_past_does_not_name_a_running_holder) {
  CHECK_OK(sstm_cm_register(&recorder));
  init_with_rp("test-recorder", 64, SSTM_READ_PAST_ALL);
  rec.action = SSTM_CM_ABORT_SELF;
  vp.read_past = true;
  pthread_t th;
  CHECK_EQ_I(pthread_create(&th, NULL, vp_writer, NULL), 0);
  uint64_t sum = 0;
  CHECK_OK(sstm_run(NULL, vp_reader, &sum));
  CHECK_EQ_I(vp.attempts, 2);
  CHECK_EQ_U(sum, 0 + 1); /* w before B's commit, x after B's first one */
  int k = -1;
  CHECK_EQ_I(conflicts_of(sstm_self(), SSTM_CONFLICT_VALIDATION, &k), 1);
  CHECK_FALSE(rec.conf[k].has_other);
  CHECK_EQ_I(rec.abort_info[0].reason, SSTM_ABORT_VALIDATE_READ);
  CHECK_FALSE(rec.abort_info[0].has_other);
  sstm_stats_t s;
  CHECK_OK(sstm_stats_get(sstm_self(), &s));
  CHECK_EQ_U(s.reads_past, 1);
  atomic_store_explicit(&vp.step, 3, memory_order_seq_cst); /* now B may commit */
  CHECK_EQ_I(pthread_join(th, NULL), 0);
  CHECK_EQ_U(tx_load_u64(&vp_w[0]), 77);
  sstm_test_fini();
}

TEST(validation_conflict_reported) {
  CHECK_OK(sstm_cm_register(&recorder));
  init_with("test-recorder", 64);
  rec.action = SSTM_CM_ABORT_SELF;
  static volatile int a_attempts;
  a_attempts = 0;
  word_w = 10;
  SSTM_ATOMIC_BEGIN(NULL)
    a_attempts++;
    uint64_t v = sstm_load_u64(&word_w);
    if (a_attempts == 1) {
      rec.nconf = 0;
      struct txh_store s = {&word_w, 20};
      CHECK_OK(run_other(NULL, txh_store_fn, &s));
    }
    sstm_store_u64(&word_x, v);
  SSTM_ATOMIC_END();
  CHECK_EQ_I(a_attempts, 2);
  CHECK_EQ_U(word_x, 20); /* never commits the stale read */
  CHECK_GE_I(rec.nconf, 1);
  CHECK_EQ_I(rec.conf[0].kind, SSTM_CONFLICT_VALIDATION);
  CHECK_FALSE(rec.conf[0].has_other);
  txh_cleanup();
  sstm_test_fini();
}

/* A failed validation aborts the attempt whatever the policy answers (cm.h):
 * WAIT and ABORT_OTHER change nothing, at a read (the snapshot extension
 * fails) and at commit. The writer is another descriptor whose commit has
 * ended, so no party is named. */
static uint64_t va_w[8] __attribute__((aligned(64)));
static uint64_t va_x[8] __attribute__((aligned(64)));
static uint64_t va_out[8] __attribute__((aligned(64)));
static struct {
  bool at_read; /* fail at a read, else at commit */
  int attempts;
} va;

static void va_writer(void *arg) {
  (void)arg;
  sstm_store_u64(&va_w[0], sstm_load_u64(&va_w[0]) + 1);
  sstm_store_u64(&va_x[0], sstm_load_u64(&va_x[0]) + 1);
}

static void va_body(void *arg) {
  (void)arg;
  int k = ++va.attempts;
  uint64_t w = sstm_load_u64(&va_w[0]);
  if (k == 1) CHECK_OK(run_other(NULL, va_writer, NULL)); /* w and x change under us */
  if (va.at_read) {
    (void)sstm_load_u64(&va_x[0]); /* newer than our snapshot: the extension fails on w */
    if (k == 1)
      FAIL("a read returned after a failed validation (policy answer %d)", (int)rec.action);
  }
  sstm_store_u64(&va_out[0], w); /* at commit: w has changed */
}

TEST(validation_aborts_whatever_the_answer) {
  CHECK_OK(sstm_cm_register(&recorder));
  init_with("test-recorder", 8);
  static const sstm_cm_action_t acts[] = {SSTM_CM_ABORT_SELF, SSTM_CM_WAIT, SSTM_CM_ABORT_OTHER};
  for (int at_read = 0; at_read < 2; at_read++) {
    for (size_t i = 0; i < sizeof acts / sizeof acts[0]; i++) {
      sstm_abort_reason_t why = at_read ? SSTM_ABORT_VALIDATE_READ : SSTM_ABORT_VALIDATE_COMMIT;
      rec.action = acts[i];
      rec.wait_ns = 100;
      rec.nconf = 0;
      rec.aborts = 0;
      va.at_read = at_read;
      va.attempts = 0;
      sstm_stats_t s0 = duo_stats(sstm_self());
      CHECK_OK(sstm_run(NULL, va_body, NULL));
      sstm_stats_t s1 = duo_stats(sstm_self());
      printf("answer %d, %s: %d attempts\n", (int)acts[i], at_read ? "read" : "commit",
             va.attempts);
      CHECK_EQ_I(va.attempts, 2);
      CHECK_EQ_U(va_out[0], va_w[0]); /* never the stale value */
      CHECK_EQ_I(rec.nconf, 1);
      CHECK_EQ_I(rec.conf[0].kind, SSTM_CONFLICT_VALIDATION);
      CHECK_EQ_PTR(rec.conf_self[0], sstm_self());
      CHECK_EQ_I(rec.aborts, 1);
      CHECK_EQ_I(rec.abort_info[0].reason, why);
      CHECK_EQ_U(s1.aborts[why] - s0.aborts[why], 1);
      CHECK_EQ_U(s1.aborts_total - s0.aborts_total, 1);
      CHECK_EQ_U(s1.cm_waits - s0.cm_waits, 0); /* WAIT was not honoured */
      CHECK_EQ_U(s1.cm_kills - s0.cm_kills, 0);
    }
  }
  txh_cleanup();
  sstm_test_fini();
}

/* ---- an irrevocable lock holder on another thread (both designs) ----------- */

/* H runs an irrevocable transaction that writes ih_words[0] in place, under
 * the word's lock (an irrevocable attempt locks at its writes in either
 * design), and stays inside it until the requester (the main thread) has
 * rolled back an attempt. The requester begins first: an attempt that
 * begins while an irrevocable one runs waits for it at its begin, which is
 * also why its restart runs only after H's commit. H never calls the policy
 * (an irrevocable attempt decides alone), so the recorder sees only the
 * requester. */
static uint64_t ih_words[2][8] __attribute__((aligned(64)));
static struct {
  sstm_desc_t *req;   /* the requester's descriptor */
  sstm_desc_t *desc;  /* H's */
  uint64_t txid;      /* H's attempt */
  sstm_stats_t stats; /* H's, after its commit */
  _Atomic int go, holding, done, req_done;
} ih;

static struct {
  uint64_t *word; /* what the requester accesses */
  bool write;
  int attempts;
  uint64_t seen;
} rq;

static void ih_body(void *arg) {
  (void)arg;
  CHECK_TRUE(sstm_is_irrevocable());
  sstm_store_u64(&ih_words[0][0], 500);
  ih.txid = sstm_txid();
  atomic_store_explicit(&ih.holding, 1, memory_order_seq_cst);
  /* (or until the requester is done: a requester that wrongly committed
   * fails its checks instead of hanging) */
  while (duo_stats(ih.req).aborts_total < 1 &&
         !atomic_load_explicit(&ih.req_done, memory_order_seq_cst))
    sched_yield();
}

static void *ih_main(void *arg) {
  (void)arg;
  CHECK_OK(sstm_thread_init());
  ih.desc = sstm_self();
  duo_wait_flag(&ih.go, 1);
  sstm_attr_t irr = {.irrevocable = true};
  CHECK_OK(sstm_run(&irr, ih_body, NULL));
  ih.stats = duo_stats(ih.desc);
  atomic_store_explicit(&ih.done, 1, memory_order_seq_cst);
  CHECK_OK(sstm_thread_exit());
  return NULL;
}

static void rq_body(void *arg) {
  (void)arg;
  int k = ++rq.attempts;
  CHECK_MSG(k <= 2, "attempt %d: the requester aborted more than once", k);
  if (k == 1) {
    atomic_store_explicit(&ih.go, 1, memory_order_seq_cst); /* we run: H may take the token */
    duo_wait_flag(&ih.holding, 1);
  } else {
    duo_wait_flag(&ih.done, 1); /* H's commit, and its policy calls, are over */
  }
  if (rq.write)
    sstm_store_u64(rq.word, 1000 + (uint64_t)k);
  else
    rq.seen = sstm_load_u64(rq.word);
}

/* The requester (this thread, the recorder answering act) accesses word
 * while H holds ih_words[0]; returns the requester's statistics. Checks
 * what every case shares: one abort, then a commit after H's; H never
 * aborted, whatever was answered. */
static sstm_stats_t vs_irrevocable(uint64_t *word, bool write, sstm_cm_action_t act,
                                   unsigned wait_max) {
  init_with("test-recorder", wait_max);
  memset(&ih, 0, sizeof ih);
  memset(&rq, 0, sizeof rq);
  rec.action = act;
  rec.wait_ns = 100;
  rec.nconf = 0;
  rec.aborts = 0;
  rec.conf_limit = (int)wait_max + 1;
  ih.req = sstm_self();
  rq.word = word;
  rq.write = write;
  pthread_t h = duo_spawn(ih_main, NULL);
  CHECK_OK(sstm_run(NULL, rq_body, NULL));
  atomic_store_explicit(&ih.req_done, 1, memory_order_seq_cst);
  duo_join(h);
  sstm_stats_t s = duo_stats(sstm_self());
  CHECK_EQ_I(rq.attempts, 2);
  CHECK_EQ_U(s.aborts_total, 1);
  CHECK_EQ_U(s.cm_kills, 0);
  CHECK_EQ_U(s.locks_stolen, 0);
  CHECK_EQ_I(rec.aborts, 1);
  for (int i = 0; i < rec.nconf; i++)
    CHECK_EQ_PTR(rec.conf_self[i], sstm_self());
  CHECK_EQ_U(ih.stats.aborts_total, 0);
  CHECK_EQ_U(ih.stats.commits_irrevocable, 1);
  if (write)
    CHECK_EQ_U(tx_load_u64(word), 1002); /* the requester's retry committed after H */
  else
    CHECK_EQ_U(rq.seen, 500);
  CHECK_EQ_U(tx_load_u64(&ih_words[0][0]), word == &ih_words[0][0] && write ? 1002 : 500);
  return s;
}

/* The conflict with a lock held by a running irrevocable transaction names
 * it, as committing (it cannot be aborted): under ETL at the write, under
 * CTL when the commit locks its write set. ABORT_SELF: the attempt aborts
 * with the conflict's reason, naming H. */
static void check_names_irrevocable_holder(const sstm_conflict_t *c, sstm_conflict_kind_t kind,
                                           const void *addr, unsigned attempt) {
  CHECK_EQ_I(c->kind, kind);
  CHECK_EQ_PTR(c->addr, addr);
  CHECK_TRUE(c->has_other);
  CHECK_EQ_PTR(c->other.desc, ih.desc);
  CHECK_EQ_U(c->other.txid, ih.txid);
  CHECK_GE_U(c->other.writes, 1);
  CHECK_TRUE(c->other.committing);
  CHECK_EQ_U(c->attempt, attempt);
}

static void check_abort_names_holder(sstm_abort_reason_t why) {
  CHECK_EQ_I(rec.abort_info[0].reason, why);
  CHECK_TRUE(rec.abort_info[0].has_other);
  CHECK_EQ_PTR(rec.abort_info[0].other.desc, ih.desc);
  CHECK_EQ_U(rec.abort_info[0].other.txid, ih.txid);
}

static bool etl(void) { return sstm_test_design() == SSTM_DESIGN_ETL; }

TEST(conflict_with_irrevocable_holder_names_it) {
  CHECK_OK(sstm_cm_register(&recorder));
  uint64_t *w = &ih_words[0][0];
  sstm_stats_t s = vs_irrevocable(w, true, SSTM_CM_ABORT_SELF, 64);
  sstm_conflict_kind_t kind = etl() ? SSTM_CONFLICT_WRITE_LOCKED : SSTM_CONFLICT_COMMIT_LOCKED;
  sstm_abort_reason_t why = etl() ? SSTM_ABORT_WRITE_LOCKED : SSTM_ABORT_COMMIT_LOCKED;
  CHECK_EQ_I(rec.nconf, 1);
  check_names_irrevocable_holder(&rec.conf[0], kind, w, 0);
  check_abort_names_holder(why);
  CHECK_EQ_U(s.aborts[why], 1);
  CHECK_EQ_U(s.cm_waits, 0);
  sstm_test_fini();
}

/* sstm_party_watch succeeds on a running attempt that is not committing
 * (an irrevocable one included) and refuses a committing one, which is about
 * to end (cm.h). In the conflict above, the requester under CTL meets the
 * lock while committing; under ETL at its write, while active. */
TEST(watch_refuses_a_committing_attempt) {
  CHECK_OK(sstm_cm_register(&recorder));
  rec.watch = true;
  (void)vs_irrevocable(&ih_words[0][0], true, SSTM_CM_ABORT_SELF, 64);
  CHECK_EQ_I(rec.nwatch, 1);
  CHECK_TRUE(rec.watched_other);       /* H: irrevocable, running */
  CHECK_EQ_I(rec.watched_self, etl()); /* CTL: committing, refused */
  sstm_test_fini();
}

TEST(read_of_irrevocable_holders_word_reports_read_locked) {
  CHECK_OK(sstm_cm_register(&recorder));
  uint64_t *w = &ih_words[0][0];
  sstm_stats_t s = vs_irrevocable(w, false, SSTM_CM_ABORT_SELF, 64);
  CHECK_EQ_I(rec.nconf, 1);
  check_names_irrevocable_holder(&rec.conf[0], SSTM_CONFLICT_READ_LOCKED, w, 0);
  check_abort_names_holder(SSTM_ABORT_READ_LOCKED);
  CHECK_EQ_U(s.aborts[SSTM_ABORT_READ_LOCKED], 1);
  sstm_test_fini();
}

/* WAIT, and ABORT_OTHER against a party that cannot be aborted (cm.h: it
 * behaves as WAIT): wait_max waits, then the engine aborts the requester;
 * H is neither killed nor robbed of its lock. */
static void waits_on_irrevocable_holder(sstm_cm_action_t act, bool write) {
  CHECK_OK(sstm_cm_register(&recorder));
  const unsigned WM = 5;
  uint64_t *w = &ih_words[0][0];
  sstm_stats_t s = vs_irrevocable(w, write, act, WM);
  sstm_conflict_kind_t kind = !write  ? SSTM_CONFLICT_READ_LOCKED
                              : etl() ? SSTM_CONFLICT_WRITE_LOCKED
                                      : SSTM_CONFLICT_COMMIT_LOCKED;
  sstm_abort_reason_t why = !write  ? SSTM_ABORT_READ_LOCKED
                            : etl() ? SSTM_ABORT_WRITE_LOCKED
                                    : SSTM_ABORT_COMMIT_LOCKED;
  CHECK_EQ_I(rec.nconf, (int)WM + 1);
  for (int i = 0; i < rec.nconf; i++)
    check_names_irrevocable_holder(&rec.conf[i], kind, w, (unsigned)i);
  check_abort_names_holder(why);
  CHECK_EQ_U(s.aborts[why], 1);
  CHECK_EQ_U(s.cm_waits, WM);
  sstm_test_fini();
}

TEST(wait_on_irrevocable_holder_is_bounded_by_wait_max) {
  waits_on_irrevocable_holder(SSTM_CM_WAIT, true);
}
TEST(abort_other_on_irrevocable_holder_waits) {
  waits_on_irrevocable_holder(SSTM_CM_ABORT_OTHER, true);
}
TEST(abort_other_on_irrevocable_holder_waits_at_read) {
  waits_on_irrevocable_holder(SSTM_CM_ABORT_OTHER, false);
}

/* An update commit while an irrevocable transaction runs: the commit meets
 * the irrevocable flag, reports SSTM_CONFLICT_IRREVOCABLE to the policy and
 * aborts with SSTM_ABORT_IRREVOCABLE whatever the policy answers (cm.h);
 * the restart waits for H at its begin and then commits. The requester
 * writes a word of its own (no lock conflict with H). */
TEST(commit_meets_irrevocable_aborts_self) {
  CHECK_OK(sstm_cm_register(&recorder));
  static const sstm_cm_action_t acts[] = {SSTM_CM_ABORT_SELF, SSTM_CM_WAIT, SSTM_CM_ABORT_OTHER};
  for (size_t i = 0; i < sizeof acts / sizeof acts[0]; i++) {
    ih_words[1][0] = 0;
    sstm_stats_t s = vs_irrevocable(&ih_words[1][0], true, acts[i], 64);
    CHECK_EQ_I(rec.nconf, 1);
    CHECK_EQ_I(rec.conf[0].kind, SSTM_CONFLICT_IRREVOCABLE);
    CHECK_EQ_I(rec.abort_info[0].reason, SSTM_ABORT_IRREVOCABLE);
    CHECK_EQ_U(rec.abort_ctx[0].conflicts, 1); /* a lost conflict: the bounds count it */
    CHECK_EQ_U(s.aborts[SSTM_ABORT_IRREVOCABLE], 1);
    CHECK_EQ_U(s.cm_waits, 0);
    CHECK_EQ_U(s.commits_update, 1); /* the retry, after H */
    sstm_test_fini();
  }
}

/* ---- a committing party (both designs) ------------------------------------- */

/* P (another thread) reads hc_r and writes hc_x, and the main thread then
 * changes hc_r: P's commit-time validation fails, and the engine reports it
 * to P's policy while P is COMMITTING and holds hc_x's lock (ETL: since its
 * write; CTL: it locked its write set before validating). This policy holds
 * P there until told: a committing party, built without timing. Every
 * other conflict it answers with ABORT_OTHER. */
static uint64_t hc_r[8] __attribute__((aligned(64)));
static uint64_t hc_x[8] __attribute__((aligned(64)));
static uint64_t hc_y[8] __attribute__((aligned(64)));
#define HC_MAX 16
static struct {
  sstm_desc_t *p, *req;
  uint64_t p_txid;               /* P's held attempt */
  int p_attempts, p_validations; /* P's thread */
  sstm_stats_t ps;               /* P's, after its commit */
  _Atomic int p_go, p_ready, r_changed, p_held, p_may_go, p_done;
  unsigned wait_max;
  int nconf, naborts, attempts; /* the requester (main thread) */
  sstm_conflict_t conf[HC_MAX];
  sstm_abort_info_t abort_info[HC_MAX];
} hc;

static sstm_cm_action_t hc_on_conflict(sstm_cm_ctx_t *ctx, const sstm_conflict_t *c,
                                       uint64_t *wait_ns) {
  (void)wait_ns;
  if (ctx->desc == hc.p) {
    CHECK_EQ_I(c->kind, SSTM_CONFLICT_VALIDATION);
    if (++hc.p_validations == 1) {
      hc.p_txid = ctx->txid;
      atomic_store_explicit(&hc.p_held, 1, memory_order_seq_cst);
      duo_wait_flag(&hc.p_may_go, 1);
    }
    return SSTM_CM_ABORT_OTHER; /* no effect: a failed validation aborts self */
  }
  CHECK_EQ_PTR(ctx->desc, hc.req);
  CHECK_MSG(hc.nconf <= (int)hc.wait_max && hc.nconf < HC_MAX,
            "conflict %d reported (kind %d): ABORT_OTHER against a committing party "
            "did not behave as WAIT (wait_max %u)",
            hc.nconf + 1, (int)c->kind, hc.wait_max);
  hc.conf[hc.nconf++] = *c;
  return SSTM_CM_ABORT_OTHER;
}

static void hc_on_abort(sstm_cm_ctx_t *ctx, const sstm_abort_info_t *info) {
  if (ctx->desc == hc.req && hc.naborts < HC_MAX) hc.abort_info[hc.naborts++] = *info;
}

static const sstm_cm_ops_t hc_policy = {
    .name = "test-hold-committer",
    .description = "holds a commit in its failed validation, else ABORT_OTHER (tests)",
    .on_conflict = hc_on_conflict,
    .on_abort = hc_on_abort,
};

static void hc_p_body(void *arg) {
  (void)arg;
  int k = ++hc.p_attempts;
  uint64_t r = sstm_load_u64(&hc_r[0]);
  sstm_store_u64(&hc_x[0], 100 * (uint64_t)k + r);
  if (k == 1) {
    atomic_store_explicit(&hc.p_ready, 1, memory_order_seq_cst);
    duo_wait_flag(&hc.r_changed, 1); /* then commit: the validation fails on r */
  }
}

static void *hc_p_main(void *arg) {
  (void)arg;
  CHECK_OK(sstm_thread_init());
  hc.p = sstm_self();
  duo_wait_flag(&hc.p_go, 1);
  CHECK_OK(sstm_run(NULL, hc_p_body, NULL));
  hc.ps = duo_stats(hc.p);
  atomic_store_explicit(&hc.p_done, 1, memory_order_seq_cst);
  CHECK_OK(sstm_thread_exit());
  return NULL;
}

static pthread_t hc_start(unsigned wait_max) {
  CHECK_OK(sstm_cm_register(&hc_policy));
  hc.wait_max = wait_max;
  init_with(hc_policy.name, wait_max);
  hc.req = sstm_self();
  return duo_spawn(hc_p_main, NULL);
}

/* What every case shares once P is released: P aborted once, for its
 * validation (not killed), and its retry committed x = 201. */
static void hc_check_p(void) {
  CHECK_EQ_I(hc.p_validations, 1);
  CHECK_EQ_I(hc.p_attempts, 2);
  CHECK_EQ_U(hc.ps.aborts[SSTM_ABORT_VALIDATE_COMMIT], 1);
  CHECK_EQ_U(hc.ps.aborts[SSTM_ABORT_KILLED], 0);
  CHECK_EQ_U(hc.ps.aborts_total, 1);
  CHECK_EQ_U(hc.ps.commits_update, 1);
}

static void hc_reader_body(void *arg) {
  uint64_t *seen = arg;
  if (++hc.attempts == 1) {
    *seen = sstm_load_u64(&hc_x[0]); /* held by committing P */
    FAIL("a read of a word locked by a committing attempt returned");
  }
  atomic_store_explicit(&hc.p_may_go, 1, memory_order_seq_cst);
  duo_wait_flag(&hc.p_done, 1);
  *seen = sstm_load_u64(&hc_x[0]);
}

/* ABORT_OTHER against a committing party behaves as WAIT (cm.h): wait_max
 * waits, then the engine aborts the requester; the party is not killed.
 * sstm_desc_kill on the committing attempt returns SSTM_EBUSY. */
TEST(abort_other_on_committing_party_waits) {
  const unsigned WM = 4;
  pthread_t p = hc_start(WM);
  atomic_store_explicit(&hc.p_go, 1, memory_order_seq_cst);
  duo_wait_flag(&hc.p_ready, 1);
  tx_store_u64(&hc_r[0], 1);
  atomic_store_explicit(&hc.r_changed, 1, memory_order_seq_cst);
  duo_wait_flag(&hc.p_held, 1); /* P is COMMITTING, holding x */
  CHECK_RC(sstm_desc_kill(hc.p, 0), SSTM_EBUSY);
  CHECK_CONTAINS(sstm_last_error(), "committing");
  CHECK_RC(sstm_desc_kill(hc.p, hc.p_txid), SSTM_EBUSY);
  CHECK_EQ_U(sstm_desc_txid(hc.p), hc.p_txid); /* the same attempt, still running */
  uint64_t seen = 0;
  CHECK_OK(sstm_run(NULL, hc_reader_body, &seen));
  duo_join(p);
  hc_check_p();
  CHECK_EQ_U(seen, 201);
  CHECK_EQ_I(hc.attempts, 2);
  CHECK_EQ_I(hc.nconf, (int)WM + 1);
  for (int i = 0; i < hc.nconf; i++) {
    const sstm_conflict_t *c = &hc.conf[i];
    CHECK_EQ_I(c->kind, SSTM_CONFLICT_READ_LOCKED);
    CHECK_EQ_PTR(c->addr, &hc_x[0]);
    CHECK_TRUE(c->has_other);
    CHECK_EQ_PTR(c->other.desc, hc.p);
    CHECK_EQ_U(c->other.txid, hc.p_txid);
    CHECK_TRUE(c->other.committing);
    CHECK_EQ_U(c->attempt, (unsigned)i);
  }
  CHECK_EQ_I(hc.naborts, 1);
  CHECK_EQ_I(hc.abort_info[0].reason, SSTM_ABORT_READ_LOCKED);
  CHECK_TRUE(hc.abort_info[0].has_other);
  CHECK_EQ_PTR(hc.abort_info[0].other.desc, hc.p);
  sstm_stats_t s = duo_stats(sstm_self());
  CHECK_EQ_U(s.cm_kills, 0);
  CHECK_EQ_U(s.locks_stolen, 0);
  CHECK_EQ_U(s.cm_waits, WM);
  CHECK_EQ_U(s.aborts[SSTM_ABORT_READ_LOCKED], 1);
  CHECK_EQ_U(s.aborts_total, 1);
  sstm_test_fini();
}

/* The CTL form of validation_names_the_lock_holder (and a second form under
 * ETL): the requester read x; P then locks x and is held committing; the
 * requester's read of the newer y needs an extension, which fails on x:
 * the validation names P (committing), and the answer ABORT_OTHER changes
 * nothing (a failed validation aborts self, and P is not killed). */
static void hc_o_writes(void *arg) {
  (void)arg;
  sstm_store_u64(&hc_r[0], 1); /* P's validation will fail */
  sstm_store_u64(&hc_y[0], 1); /* newer than the requester's snapshot */
}

static void hc_validating_body(void *arg) {
  uint64_t *sum = arg;
  if (++hc.attempts == 1) {
    (void)sstm_load_u64(&hc_x[0]);
    atomic_store_explicit(&hc.p_go, 1, memory_order_seq_cst);
    duo_wait_flag(&hc.p_ready, 1); /* P read r and wrote x */
    CHECK_OK(run_other(NULL, hc_o_writes, NULL));
    atomic_store_explicit(&hc.r_changed, 1, memory_order_seq_cst);
    duo_wait_flag(&hc.p_held, 1); /* P is COMMITTING, holding x */
    (void)sstm_load_u64(&hc_y[0]);
    FAIL("the extension over a stripe locked by a committing attempt succeeded");
  }
  atomic_store_explicit(&hc.p_may_go, 1, memory_order_seq_cst);
  duo_wait_flag(&hc.p_done, 1);
  *sum = sstm_load_u64(&hc_x[0]) + sstm_load_u64(&hc_y[0]);
}

TEST(validation_names_the_committing_lock_holder) {
  pthread_t p = hc_start(4);
  uint64_t sum = 0;
  CHECK_OK(sstm_run(NULL, hc_validating_body, &sum));
  duo_join(p);
  hc_check_p();
  CHECK_EQ_U(sum, 201 + 1);
  CHECK_EQ_I(hc.attempts, 2);
  CHECK_EQ_I(hc.nconf, 1);
  CHECK_EQ_I(hc.conf[0].kind, SSTM_CONFLICT_VALIDATION);
  CHECK_TRUE(hc.conf[0].has_other);
  CHECK_EQ_PTR(hc.conf[0].other.desc, hc.p);
  CHECK_EQ_U(hc.conf[0].other.txid, hc.p_txid);
  CHECK_TRUE(hc.conf[0].other.committing);
  CHECK_EQ_I(hc.naborts, 1);
  CHECK_EQ_I(hc.abort_info[0].reason, SSTM_ABORT_VALIDATE_READ);
  CHECK_TRUE(hc.abort_info[0].has_other);
  CHECK_EQ_PTR(hc.abort_info[0].other.desc, hc.p);
  CHECK_EQ_U(hc.abort_info[0].other.txid, hc.p_txid);
  sstm_stats_t s = duo_stats(sstm_self());
  CHECK_EQ_U(s.cm_kills, 0);
  CHECK_EQ_U(s.cm_waits, 0);
  CHECK_EQ_U(s.aborts[SSTM_ABORT_VALIDATE_READ], 1);
  CHECK_EQ_U(s.aborts_total, 1);
  txh_cleanup();
  sstm_test_fini();
}

/* ---- statistics ----------------------------------------------------------- */

static void foreach_count(const sstm_stats_t *s, void *arg) {
  (void)s;
  ++*(int *)arg;
}

/* stats.h: sstm_stats_foreach returns SSTM_EINVAL for a NULL fn, before
 * sstm_init as after it. */
TEST(stats_foreach_null_fn_is_einval) {
  CHECK_RC(sstm_stats_foreach(NULL, NULL), SSTM_EINVAL);
  CHECK_CONTAINS(sstm_last_error(), "fn is NULL");
  int n = 0;
  CHECK_RC(sstm_stats_foreach(foreach_count, &n), SSTM_ESTATE);
  init_with("suicide", 64);
  CHECK_RC(sstm_stats_foreach(NULL, &n), SSTM_EINVAL);
  CHECK_CONTAINS(sstm_last_error(), "fn is NULL");
  CHECK_EQ_I(n, 0);
  CHECK_EQ_I(sstm_stats_foreach(foreach_count, &n), 1);
  CHECK_EQ_I(n, 1);
  sstm_test_fini();
}

/* A descriptor whose policy state cannot be allocated: SSTM_ENOMEM with a
 * message, the slot given back, nothing aborted (it was a fatal error).
 * In a child whose address space is then capped just above what it uses,
 * so that the 1 MiB state (an mmap) fails. */
static long vm_bytes(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  long pages = 0;
  if (f == NULL || fscanf(f, "%ld", &pages) != 1) pages = 0;
  if (f) fclose(f);
  return pages * sysconf(_SC_PAGESIZE);
}
TEST(policy_state_out_of_memory_is_enomem) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  /* the sanitizers' allocators neither fail under RLIMIT_AS nor return NULL */
  sstm_test_skip("an address-space limit means nothing under a sanitizer");
#endif
  fflush(stdout);
  pid_t pid = sstm_test_fork();
  CHECK_GE_I(pid, 0);
  if (pid == 0) {
    static sstm_cm_ops_t big;
    big = recorder;
    big.name = "test-big-state";
    big.state_size = SSTM_CM_STATE_MAX;
    if (sstm_cm_register(&big) != 0) _exit(10);
    sstm_config_t c;
    sstm_test_config(&c);
    c.cm = "test-big-state";
    if (sstm_init(&c) != 0 || sstm_thread_init() != 0) _exit(11);
    free(malloc(256 << 10)); /* heap room for the next descriptor itself */
    long used = vm_bytes();
    if (used <= 0) _exit(12);
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl) != 0) _exit(13);
    rlim_t hard = rl.rlim_max;
    rl.rlim_cur = (rlim_t)used + (512 << 10); /* the soft limit only: it can go back up */
    if (setrlimit(RLIMIT_AS, &rl) != 0) _exit(13);
    sstm_desc_t *d = (sstm_desc_t *)&rl;
    int rc = sstm_desc_create(&d);
    if (rc != SSTM_ENOMEM) _exit(14);
    if (strstr(sstm_last_error(), "policy 'test-big-state'") == NULL) _exit(15);
    rl.rlim_cur = hard;
    if (setrlimit(RLIMIT_AS, &rl) != 0) _exit(16);
    if (sstm_desc_create(&d) != 0 || sstm_desc_destroy(d) != 0) _exit(17); /* the slot is back */
    if (sstm_thread_exit() != 0 || sstm_shutdown() != 0) _exit(18);
    _exit(0);
  }
  int st;
  CHECK_EQ_I(waitpid(pid, &st, 0), pid);
  CHECK_MSG(WIFEXITED(st), "child died: status 0x%x", st);
  CHECK_EQ_I(WEXITSTATUS(st), 0);
}

/* Mutation round 7: m12 (resolve's wait_max abort not counted in `conflicts`),
 * m13 (an ABORT_SELF at a lock not counted) and m11 (a kill not counted):
 * the progress bounds of the built-in policies (SSTM_CM_RETRY_BOUND,
 * os_prio's escalation) count ctx->conflicts, and until now only failed
 * validations were checked to count (policy_context_counts_conflicts_apart_
 * from_retries). A transaction that loses only lock conflicts or kills
 * would then never be escalated. */
static uint64_t lc_word[8] __attribute__((aligned(64)));
static int lc_attempts;

static void lc_writer(void *arg) {
  (void)arg;
  if (++lc_attempts > 2) sstm_cancel();
  sstm_store_u64(&lc_word[0], 100); /* held by the suspended transaction */
}

static void lost_lock_conflicts(sstm_cm_action_t act) {
  CHECK_OK(sstm_cm_register(&recorder));
  init_with("test-recorder", 3);
  rec.action = act; /* ABORT_SELF: on_conflict's answer; WAIT: wait_max (3) ends the wait */
  SSTM_ATOMIC_BEGIN(NULL)
    sstm_store_u64(&lc_word[0], 1);
    rec.aborts = 0;
    lc_attempts = 0;
    CHECK_RC(run_other_attached(NULL, lc_writer, NULL), SSTM_ECANCELED);
    CHECK_EQ_I(rec.aborts, 3); /* two lost conflicts, then the cancel */
    for (int i = 0; i < 2; i++) {
      CHECK_EQ_I(rec.abort_info[i].reason, SSTM_ABORT_WRITE_LOCKED);
      CHECK_EQ_U(rec.abort_ctx[i].conflicts, (unsigned)i + 1);
    }
    CHECK_EQ_I(rec.abort_info[2].reason, SSTM_ABORT_USER_CANCEL);
    CHECK_EQ_U(rec.abort_ctx[2].conflicts, 2); /* a cancel is not a conflict */
  SSTM_ATOMIC_END();
  txh_cleanup();
  sstm_test_fini();
}

TEST_ETL(lost_lock_conflicts_count_as_conflicts) { lost_lock_conflicts(SSTM_CM_ABORT_SELF); }
TEST_ETL(lock_waits_past_wait_max_count_as_conflicts) { lost_lock_conflicts(SSTM_CM_WAIT); }

/* Each kill is a lost conflict: the three killed attempts of
 * kill_names_the_killer_when_known's body count 1, 2 and 3. */
TEST(kills_count_as_conflicts) {
  CHECK_OK(sstm_cm_register(&recorder));
  init_with("test-recorder", 64);
  rec.action = SSTM_CM_ABORT_SELF;
  kn.a = sstm_self();
  kn.o = txh_other_desc();
  CHECK_OK(sstm_run(NULL, kill_body, NULL));
  CHECK_EQ_I(kn.attempts, 4);
  CHECK_EQ_I(rec.aborts, 3);
  for (int i = 0; i < 3; i++) {
    CHECK_EQ_I(rec.abort_info[i].reason, SSTM_ABORT_KILLED);
    CHECK_EQ_U(rec.abort_ctx[i].conflicts, (unsigned)i + 1);
  }
  txh_cleanup();
  sstm_test_fini();
}

/* Mutation round 7: m25 (run_actions not putting `conflicts` back after an
 * abort action's own transaction, whose sstm__begin zeroes it: a
 * transaction whose every abort runs such an action never reaches a
 * progress bound) and m26 (sstm__begin not zeroing `conflicts`: the bound
 * counts the conflicts of earlier transactions and escalates early). */
static uint64_t ct_word[8] __attribute__((aligned(64))), ct_other[8] __attribute__((aligned(64)));
static uint64_t ct_side;
static int ct_attempts, ct_lose;

static void ct_action(void *arg) { /* a transaction of its own, on this descriptor */
  (void)arg;
  tx_store_u64(&ct_side, tx_load_u64(&ct_side) + 1);
}

static void ct_body(void *arg) {
  bool with_action = arg != NULL;
  if (++ct_attempts > ct_lose) return;
  if (with_action) CHECK_OK(sstm_on_abort(ct_action, NULL));
  (void)sstm_load_u64(&ct_word[0]);
  struct txh_store st = {&ct_word[0], (uint64_t)ct_attempts};
  CHECK_OK(run_other(NULL, txh_store_fn, &st)); /* ct_word changes under us */
  sstm_store_u64(&ct_other[0], 1);              /* validation fails */
}

TEST(conflicts_survive_an_abort_action_transaction) {
  CHECK_OK(sstm_cm_register(&recorder));
  init_with("test-recorder", 64);
  ct_lose = 3;
  CHECK_OK(sstm_run(NULL, ct_body, (void *)1));
  CHECK_EQ_I(ct_attempts, 4);
  CHECK_EQ_U(ct_side, 3); /* each abort ran its action */
  int n = 0;
  for (int i = 0; i < rec.aborts && i < MAX_EVENTS; i++) {
    if (rec.abort_info[i].reason == SSTM_ABORT_VALIDATE_COMMIT ||
        rec.abort_info[i].reason == SSTM_ABORT_VALIDATE_WRITE) {
      n++;
      CHECK_EQ_U(rec.abort_ctx[i].conflicts, (unsigned)n);
    }
  }
  CHECK_EQ_I(n, 3);
  txh_cleanup();
  sstm_test_fini();
}

TEST(conflicts_start_from_zero_in_each_transaction) {
  CHECK_OK(sstm_cm_register(&recorder));
  init_with("test-recorder", 64);
  for (int t = 0; t < 2; t++) { /* two transactions that lose two conflicts each */
    ct_attempts = 0;
    ct_lose = 2;
    CHECK_OK(sstm_run(NULL, ct_body, NULL));
  }
  CHECK_EQ_I(rec.aborts, 4);
  static const unsigned conflicts[4] = {1, 2, 1, 2};
  for (int i = 0; i < 4; i++)
    CHECK_EQ_U(rec.abort_ctx[i].conflicts, conflicts[i]);
  txh_cleanup();
  sstm_test_fini();
}

SSTM_TEST_MAIN()

/* ---- a kill that lands while the victim loses another conflict ---------- */

/* The victim B meets a lock (a read-locked conflict) and its policy is still
 * deciding when another thread kills B's attempt; the policy then answers
 * SSTM_CM_ABORT_SELF. The kill took effect, so the abort is a kill: in
 * aborts[SSTM_ABORT_KILLED], and in on_abort with the killer as the other
 * party. It used to be recorded under the conflict B noticed first
 * (read-locked), so that aborts[killed] undercounted the kills. */
static struct {
  _Atomic int phase; /* 1: B's policy waits for the kill; 2: killed */
  sstm_desc_t *victim, *killer;
  uint64_t victim_txid;
  int calls;
  sstm_abort_info_t b_abort;
  int b_aborts;
} kd;

static sstm_cm_action_t kd_conflict(sstm_cm_ctx_t *ctx, const sstm_conflict_t *c,
                                    uint64_t *wait_ns) {
  (void)c;
  (void)wait_ns;
  if (ctx->desc != kd.victim) return SSTM_CM_ABORT_SELF;
  if (kd.calls++ > 0) return SSTM_CM_ABORT_OTHER; /* the retry takes the lock over */
  CHECK_EQ_I(c->kind, SSTM_CONFLICT_READ_LOCKED);
  kd.victim_txid = ctx->txid;
  atomic_store_explicit(&kd.phase, 1, memory_order_release);
  duo_wait_flag(&kd.phase, 2); /* the killer thread has killed this attempt */
  return SSTM_CM_ABORT_SELF;
}

static void kd_abort(sstm_cm_ctx_t *ctx, const sstm_abort_info_t *info) {
  if (ctx->desc == kd.victim && kd.b_aborts++ == 0) kd.b_abort = *info;
}

static const sstm_cm_ops_t kill_during_decision = {
    .name = "test-kill-during-decision",
    .description = "B's first conflict waits until another thread kills B (tests)",
    .on_conflict = kd_conflict,
    .on_abort = kd_abort,
};

static void *kd_killer(void *arg) {
  (void)arg;
  CHECK_OK(sstm_thread_init());
  kd.killer = sstm_self();
  duo_wait_flag(&kd.phase, 1);
  CHECK_OK(sstm_desc_kill(kd.victim, kd.victim_txid));
  atomic_store_explicit(&kd.phase, 2, memory_order_release);
  CHECK_OK(sstm_thread_exit());
  return NULL;
}

static void kd_reader(void *arg) {
  (void)arg;
  (void)sstm_load_u64(&word_w); /* locked by the suspended attempt A */
}

TEST_ETL(kill_during_another_conflict_counts_as_killed) {
  CHECK_OK(sstm_cm_register(&kill_during_decision));
  init_with("test-kill-during-decision", 64);
  sstm_desc_t *a = sstm_self();
  kd.victim = txh_other_desc();
  pthread_t k = duo_spawn(kd_killer, NULL);
  static volatile int a_attempts;
  a_attempts = 0;
  SSTM_ATOMIC_BEGIN(NULL)
    a_attempts++;
    sstm_store_u64(&word_w, 1);
    /* first attempt: B (another descriptor, this thread) reads word_w */
    if (a_attempts == 1) CHECK_OK(run_other_attached(NULL, kd_reader, NULL));
  SSTM_ATOMIC_END();
  duo_join(k);
  CHECK_EQ_I(a_attempts, 2); /* B's retry killed A and took its lock */
  CHECK_EQ_I(kd.calls, 2);
  sstm_stats_t sb;
  CHECK_OK(sstm_stats_get(kd.victim, &sb));
  CHECK_EQ_U(sb.aborts[SSTM_ABORT_KILLED], 1);
  CHECK_EQ_U(sb.aborts[SSTM_ABORT_READ_LOCKED], 0);
  CHECK_EQ_U(sb.commits_ro, 1);
  CHECK_EQ_I(kd.b_aborts, 1);
  CHECK_EQ_I(kd.b_abort.reason, SSTM_ABORT_KILLED);
  CHECK_TRUE(kd.b_abort.has_other);
  CHECK_EQ_PTR(kd.b_abort.other.desc, kd.killer);
  sstm_stats_t sa;
  CHECK_OK(sstm_stats_get(a, &sa));
  CHECK_EQ_U(sa.aborts[SSTM_ABORT_KILLED], 1);
  txh_cleanup();
  sstm_test_fini();
}

/* ---- a policy that answers with a value outside sstm_cm_action_t -------- */

/* It is a bug of the policy, reported to the misuse handler at once (the
 * default handler aborts), for a conflict the policy may resolve (resolve)
 * and for one it may not (a kill noticed: conflict_abort). If the handler
 * returns, the attempt aborts itself. It used to be taken silently as
 * SSTM_CM_ABORT_SELF. */
static struct {
  sstm_desc_t *b;
  int b_calls;
} ba;
static int ba_misuse;
static char ba_msg[512];
static void ba_record(const char *msg) {
  ba_misuse++;
  snprintf(ba_msg, sizeof ba_msg, "%s", msg);
}

static sstm_cm_action_t ba_conflict(sstm_cm_ctx_t *ctx, const sstm_conflict_t *c,
                                    uint64_t *wait_ns) {
  (void)c;
  (void)wait_ns;
  if (ctx->desc == ba.b && ba.b_calls++ > 0) return SSTM_CM_ABORT_OTHER;
  return (sstm_cm_action_t)7;
}

static const sstm_cm_ops_t bad_answer = {
    .name = "test-bad-answer",
    .description = "answers 7 (tests)",
    .on_conflict = ba_conflict,
};

static void ba_writer(void *arg) {
  (void)arg;
  sstm_store_u64(&word_w, 2); /* locked by the suspended attempt A */
}

static void ba_scenario(void) {
  CHECK_OK(sstm_cm_register(&bad_answer));
  init_with("test-bad-answer", 64);
  ba.b = txh_other_desc();
  static volatile int a_attempts;
  a_attempts = 0;
  SSTM_ATOMIC_BEGIN(NULL)
    a_attempts++;
    sstm_store_u64(&word_w, 1);
    if (a_attempts == 1) CHECK_OK(run_other_attached(NULL, ba_writer, NULL));
  SSTM_ATOMIC_END();
  CHECK_EQ_I(a_attempts, 2);
  CHECK_EQ_U(word_w, 1);
}

TEST_ETL(policy_answer_outside_the_enum_is_misuse) {
  sstm_misuse_fn prev = sstm_set_misuse_handler(ba_record);
  ba_scenario();
  /* B's first write conflict (then B aborted itself), and A's kill noticed */
  CHECK_EQ_I(ba_misuse, 2);
  CHECK_CONTAINS(ba_msg, "test-bad-answer");
  CHECK_CONTAINS(ba_msg, "on_conflict returned 7");
  CHECK_EQ_I(ba.b_calls, 2);
  sstm_stats_t sb;
  CHECK_OK(sstm_stats_get(ba.b, &sb));
  CHECK_EQ_U(sb.aborts[SSTM_ABORT_WRITE_LOCKED], 1);
  CHECK_EQ_U(sb.commits_update, 1);
  sstm_set_misuse_handler(prev);
  txh_cleanup();
  sstm_test_fini();
}

static void ba_child(void) { ba_scenario(); }

TEST_ETL(policy_answer_outside_the_enum_aborts_by_default) {
  sstm_test_expect_abort(ba_child, "a policy answering 7", "on_conflict returned 7");
}
