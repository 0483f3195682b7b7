/* SPDX-License-Identifier: MIT */
/* Unit tests: configuration defaults, environment parsing, library
 * lifetime (init/shutdown state machine), sstm_describe(). */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../common/runner.h"

/* getenv, counting the library's reads of SCHEDSTM_* variables: this
 * program's definition stands in for the C library's for every caller in
 * the program, the library included (the C library itself uses its own
 * internal one). use_env false must read none of them. */
extern char **environ;
static _Atomic unsigned schedstm_getenv_calls;
char *getenv(const char *name) {
  if (strncmp(name, "SCHEDSTM_", 9) == 0)
    atomic_fetch_add_explicit(&schedstm_getenv_calls, 1, memory_order_relaxed);
  size_t n = strlen(name);
  for (char **e = environ; e && *e; e++)
    if (strncmp(*e, name, n) == 0 && (*e)[n] == '=') return *e + n + 1;
  return NULL;
}

static const char *const ENV_VARS[] = {
    "SCHEDSTM_DESIGN",         "SCHEDSTM_CM",
    "SCHEDSTM_LOCK_BITS",      "SCHEDSTM_STRIPE_SHIFT",
    "SCHEDSTM_MAX_THREADS",    "SCHEDSTM_STATS",
    "SCHEDSTM_BACKOFF_MIN_NS", "SCHEDSTM_BACKOFF_MAX_NS",
    "SCHEDSTM_WAIT_MAX",       "SCHEDSTM_NO_MEMBARRIER",
    "SCHEDSTM_SOFTSER_LEVER",  "SCHEDSTM_EXT_MODE",
    "SCHEDSTM_EXT_SLICE_US",   "SCHEDSTM_PRIO_ESCALATE",
    "SCHEDSTM_STATE_TABLE",    "SCHEDSTM_READ_PAST",
    "SCHEDSTM_ALLOC_CACHE",    "SCHEDSTM_RO_LOG",
    "SCHEDSTM_STATS_AT_EXIT",  "SCHEDSTM_ITM_PRIVATIZATION",
};

static void clear_env(void) {
  for (size_t i = 0; i < sizeof ENV_VARS / sizeof ENV_VARS[0]; i++)
    unsetenv(ENV_VARS[i]);
}

TEST(config_default) {
  sstm_config_t c;
  memset(&c, 0xA5, sizeof c);
  sstm_config_default(&c);
  CHECK_EQ_I(c.design, SSTM_DESIGN_ETL);
  CHECK_EQ_STR(c.cm, "adaptive");
  CHECK_EQ_U(c.lock_bits, 20);
  CHECK_EQ_U(c.stripe_shift, 5);
  CHECK_EQ_U(c.max_threads, 1024);
  CHECK_EQ_I(c.stats, SSTM_STATS_BASIC);
  CHECK_EQ_U(c.backoff_min_ns, 256);
  CHECK_EQ_U(c.backoff_max_ns, 1000000);
  CHECK_EQ_U(c.wait_max, 64);
  CHECK_EQ_U(c.sample_period, 0);
  CHECK_NULL((const void *)c.sample_fn);
  CHECK_EQ_I(c.read_past, SSTM_READ_PAST_RO);
  CHECK_EQ_I(c.ro_log, SSTM_RO_LOG_OFF);
  CHECK_FALSE(c.state_table);
#if defined(__SANITIZE_ADDRESS__)
  CHECK_EQ_U(c.alloc_cache, 0); /* ASan must see every release */
#else
  CHECK_EQ_U(c.alloc_cache, SSTM_ALLOC_CACHE_DEFAULT);
#endif
  CHECK_TRUE(c.use_env);
  CHECK_TRUE(c.itm_privatization); /* safe by default (docs/design/itm.md (I8)) */
}

TEST(env_unset_changes_nothing) {
  clear_env();
  sstm_config_t c, ref;
  sstm_config_default(&c);
  ref = c;
  CHECK_OK(sstm_config_from_env(&c));
  CHECK_EQ_MEM(&c, &ref, sizeof c);
}

TEST(env_valid_all) {
  clear_env();
  setenv("SCHEDSTM_DESIGN", "ctl", 1);
  setenv("SCHEDSTM_CM", "backoff", 1);
  setenv("SCHEDSTM_LOCK_BITS", "16", 1);
  setenv("SCHEDSTM_STRIPE_SHIFT", "3", 1);
  setenv("SCHEDSTM_MAX_THREADS", "77", 1);
  setenv("SCHEDSTM_STATS", "detailed", 1);
  setenv("SCHEDSTM_BACKOFF_MIN_NS", "100", 1);
  setenv("SCHEDSTM_BACKOFF_MAX_NS", "50000", 1);
  setenv("SCHEDSTM_WAIT_MAX", "9", 1);
  sstm_config_t c;
  sstm_config_default(&c);
  CHECK_OK(sstm_config_from_env(&c));
  CHECK_EQ_I(c.design, SSTM_DESIGN_CTL);
  CHECK_EQ_STR(c.cm, "backoff");
  CHECK_EQ_U(c.lock_bits, 16);
  CHECK_EQ_U(c.stripe_shift, 3);
  CHECK_EQ_U(c.max_threads, 77);
  CHECK_EQ_I(c.stats, SSTM_STATS_DETAILED);
  CHECK_EQ_U(c.backoff_min_ns, 100);
  CHECK_EQ_U(c.backoff_max_ns, 50000);
  CHECK_EQ_U(c.wait_max, 9);
  /* and back */
  setenv("SCHEDSTM_DESIGN", "etl", 1);
  setenv("SCHEDSTM_STATS", "basic", 1);
  CHECK_OK(sstm_config_from_env(&c));
  CHECK_EQ_I(c.design, SSTM_DESIGN_ETL);
  CHECK_EQ_I(c.stats, SSTM_STATS_BASIC);
}

TEST(env_range_boundaries_valid) {
  static const struct {
    const char *var, *val;
    size_t off;
    unsigned want;
  } cases[] = {
      {"SCHEDSTM_LOCK_BITS", "10", offsetof(sstm_config_t, lock_bits), 10},
      {"SCHEDSTM_LOCK_BITS", "28", offsetof(sstm_config_t, lock_bits), 28},
      {"SCHEDSTM_STRIPE_SHIFT", "3", offsetof(sstm_config_t, stripe_shift), 3},
      {"SCHEDSTM_STRIPE_SHIFT", "12", offsetof(sstm_config_t, stripe_shift), 12},
      {"SCHEDSTM_MAX_THREADS", "1", offsetof(sstm_config_t, max_threads), 1},
      {"SCHEDSTM_MAX_THREADS", "32767", offsetof(sstm_config_t, max_threads), 32767},
      {"SCHEDSTM_WAIT_MAX", "0", offsetof(sstm_config_t, wait_max), 0},
      {"SCHEDSTM_WAIT_MAX", "1000000", offsetof(sstm_config_t, wait_max), 1000000},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    clear_env();
    setenv(cases[i].var, cases[i].val, 1);
    sstm_config_t c;
    sstm_config_default(&c);
    int rc = sstm_config_from_env(&c);
    CHECK_MSG(rc == 0, "%s=%s rejected: %s (%s)", cases[i].var, cases[i].val, sstm_strerror(rc),
              sstm_last_error());
    unsigned got;
    memcpy(&got, (char *)&c + cases[i].off, sizeof got);
    CHECK_EQ_U(got, cases[i].want);
  }
}

/* An invalid value: SSTM_EINVAL, cfg untouched, last_error names the
 * variable and contains every string in must (the valid values). */
static void expect_invalid(const char *var, const char *val, const char *const *must) {
  clear_env();
  setenv(var, val, 1);
  sstm_config_t c, ref;
  sstm_config_default(&c);
  c.max_threads = 99; /* a non-default value that must survive */
  ref = c;
  int rc = sstm_config_from_env(&c);
  CHECK_MSG(rc == SSTM_EINVAL, "%s=\"%s\": got %d (%s), expected SSTM_EINVAL", var, val, rc,
            sstm_strerror(rc));
  CHECK_EQ_MEM(&c, &ref, sizeof c);
  const char *e = sstm_last_error();
  CHECK_NOT_NULL(e);
  CHECK_MSG(strstr(e, var) != NULL, "last_error for %s=\"%s\" does not name the variable: \"%s\"",
            var, val, e);
  for (; must && *must; must++)
    CHECK_MSG(strstr(e, *must) != NULL, "last_error for %s=\"%s\" does not list \"%s\": \"%s\"",
              var, val, *must, e);
}

TEST(env_invalid_design) {
  const char *must[] = {"etl", "ctl", NULL};
  expect_invalid("SCHEDSTM_DESIGN", "bogus", must);
  expect_invalid("SCHEDSTM_DESIGN", "etl ", must);
  expect_invalid("SCHEDSTM_DESIGN", "etlx", must);
}

TEST(env_invalid_stats) {
  const char *must[] = {"basic", "detailed", NULL};
  expect_invalid("SCHEDSTM_STATS", "full", must);
  expect_invalid("SCHEDSTM_STATS", "1", must);
}

/* A 0/1 switch: anything but "0" and "1" is refused, naming both. */
static void expect_invalid_01(const char *var) {
  const char *must[] = {"0", "1", NULL};
  expect_invalid(var, "on", must);
  expect_invalid(var, "2", must);
  expect_invalid(var, "01", must);
  expect_invalid(var, "", must);
}

/* "1" sets the field at offset `field` of the configuration, "0" clears it. */
static void expect_01(const char *var, size_t field) {
  clear_env();
  sstm_config_t c;
  sstm_config_default(&c);
  bool *f = (bool *)((char *)&c + field);
  setenv(var, "1", 1);
  CHECK_OK(sstm_config_from_env(&c));
  CHECK_TRUE(*f);
  setenv(var, "0", 1);
  CHECK_OK(sstm_config_from_env(&c));
  CHECK_FALSE(*f);
  setenv(var, "1", 1);
  CHECK_OK(sstm_config_from_env(&c));
  CHECK_TRUE(*f);
  clear_env();
}

TEST(env_invalid_state_table) { expect_invalid_01("SCHEDSTM_STATE_TABLE"); }
TEST(env_state_table_on_and_off) {
  expect_01("SCHEDSTM_STATE_TABLE", offsetof(sstm_config_t, state_table));
}
TEST(env_invalid_read_past) {
  const char *must[] = {"off", "ro", "all", NULL};
  expect_invalid("SCHEDSTM_READ_PAST", "1", must);
  expect_invalid("SCHEDSTM_READ_PAST", "RO", must);
  expect_invalid("SCHEDSTM_READ_PAST", "", must);
}

/* An enumerated setting: names[i] sets the enum at offset `field` to i. */
static void expect_names(const char *var, const char *const *names, int n, size_t field) {
  clear_env();
  sstm_config_t c;
  sstm_config_default(&c);
  for (int i = n - 1; i >= 0; i--) {
    setenv(var, names[i], 1);
    CHECK_OK(sstm_config_from_env(&c));
    int got;
    memcpy(&got, (char *)&c + field, sizeof got);
    CHECK_EQ_I(got, i);
  }
  clear_env();
}

/* sstm_init refuses the enum at offset `field` one past its last value,
 * naming the field. */
static void expect_init_refuses(const char *name, size_t field, int bad) {
  clear_env();
  sstm_config_t c;
  sstm_config_default(&c);
  c.use_env = false;
  memcpy((char *)&c + field, &bad, sizeof bad);
  CHECK_RC(sstm_init(&c), SSTM_EINVAL);
  CHECK_CONTAINS(sstm_last_error(), name);
  CHECK_FALSE(sstm_initialized());
}

TEST(env_read_past_modes) {
  const char *names[] = {"off", "ro", "all"};
  expect_names("SCHEDSTM_READ_PAST", names, 3, offsetof(sstm_config_t, read_past));
}

TEST(init_rejects_a_bad_read_past) {
  expect_init_refuses("read_past", offsetof(sstm_config_t, read_past), 3);
}

TEST(env_invalid_ro_log) {
  const char *must[] = {"off", "auto", "on", NULL};
  expect_invalid("SCHEDSTM_RO_LOG", "yes", must);
  expect_invalid("SCHEDSTM_RO_LOG", "AUTO", must);
  expect_invalid("SCHEDSTM_RO_LOG", "", must);
}

TEST(env_ro_log_modes) {
  const char *names[] = {"off", "auto", "on"};
  expect_names("SCHEDSTM_RO_LOG", names, 3, offsetof(sstm_config_t, ro_log));
}

TEST(init_rejects_a_bad_ro_log) {
  expect_init_refuses("ro_log", offsetof(sstm_config_t, ro_log), 3);
}

TEST(env_alloc_cache) {
  clear_env();
  sstm_config_t c;
  sstm_config_default(&c);
  const char *vals[] = {"0", "4096", "1073741824"};
  const size_t want[] = {0, 4096, SSTM_ALLOC_CACHE_MAX};
  for (int i = 0; i < 3; i++) {
    setenv("SCHEDSTM_ALLOC_CACHE", vals[i], 1);
    CHECK_OK(sstm_config_from_env(&c));
    CHECK_EQ_U(c.alloc_cache, want[i]);
  }
  const char *range[] = {"SCHEDSTM_ALLOC_CACHE", "[0, 1073741824]", NULL};
  expect_invalid("SCHEDSTM_ALLOC_CACHE", "1M", range);
  expect_invalid("SCHEDSTM_ALLOC_CACHE", "-1", range);
  expect_invalid("SCHEDSTM_ALLOC_CACHE", "1073741825", range);
  expect_invalid("SCHEDSTM_ALLOC_CACHE", "", range);
  clear_env();
}

TEST(init_rejects_an_oversized_alloc_cache) {
  clear_env();
  sstm_config_t c;
  sstm_config_default(&c);
  c.use_env = false;
  c.alloc_cache = SSTM_ALLOC_CACHE_MAX + 1;
  CHECK_RC(sstm_init(&c), SSTM_EINVAL);
  CHECK_CONTAINS(sstm_last_error(), "alloc_cache");
  CHECK_FALSE(sstm_initialized());
}

TEST(env_invalid_no_membarrier) { expect_invalid_01("SCHEDSTM_NO_MEMBARRIER"); }

TEST(env_invalid_stats_at_exit) { expect_invalid_01("SCHEDSTM_STATS_AT_EXIT"); }
TEST(env_stats_at_exit_on_and_off) {
  expect_01("SCHEDSTM_STATS_AT_EXIT", offsetof(sstm_config_t, stats_at_exit));
}

/* The gcc -fgnu-tm ABI's privatization safety: 0 or 1, anything else
 * refused with the variable and the valid values named, by
 * sstm_config_from_env and by sstm_init, which then stays uninitialised;
 * what sstm_init took is what sstm_config_get reports (the ABI reads it
 * there). */
TEST(env_invalid_itm_privatization) {
  expect_invalid_01("SCHEDSTM_ITM_PRIVATIZATION");
  const char *must[] = {"0", "1", NULL};
  expect_invalid("SCHEDSTM_ITM_PRIVATIZATION", "yes", must);
  expect_invalid("SCHEDSTM_ITM_PRIVATIZATION", " 1", must);
  clear_env();
  setenv("SCHEDSTM_ITM_PRIVATIZATION", "off", 1);
  CHECK_RC(sstm_init(NULL), SSTM_EINVAL);
  CHECK_FALSE(sstm_initialized());
  CHECK_CONTAINS(sstm_last_error(), "SCHEDSTM_ITM_PRIVATIZATION='off'");
  CHECK_CONTAINS(sstm_last_error(), "valid values: 0, 1");
  clear_env();
}
TEST(env_itm_privatization_on_and_off) {
  expect_01("SCHEDSTM_ITM_PRIVATIZATION", offsetof(sstm_config_t, itm_privatization));
  sstm_config_t got;
  setenv("SCHEDSTM_ITM_PRIVATIZATION", "0", 1);
  CHECK_OK(sstm_init(NULL));
  CHECK_OK(sstm_config_get(&got));
  CHECK_FALSE(got.itm_privatization);
  CHECK_OK(sstm_shutdown());
  clear_env();
  CHECK_OK(sstm_init(NULL));
  CHECK_OK(sstm_config_get(&got));
  CHECK_TRUE(got.itm_privatization);
  CHECK_OK(sstm_shutdown());
}

/* A child with SCHEDSTM_STATS_AT_EXIT=1 commits transactions and exits
 * without shutting the library down: its stderr then holds the
 * statistics; with 0 (or after a shutdown) nothing. */
static void incr_one(void *arg) { sstm_store_u64(arg, sstm_load_u64(arg) + 1); }

static void stats_at_exit_child(const char *val, bool shut) {
  static uint64_t counter;
  setenv("SCHEDSTM_STATS_AT_EXIT", val, 1);
  if (sstm_init(NULL) != 0 || sstm_thread_init() != 0) _exit(3);
  for (int i = 0; i < 5; i++)
    if (sstm_run(NULL, incr_one, &counter) != 0) _exit(4);
  if (shut && (sstm_thread_exit() != 0 || sstm_shutdown() != 0)) _exit(5);
  exit(0); /* atexit handlers run */
}

static void stats_at_exit_run(const char *val, bool shut, char *out, size_t len) {
  int p[2];
  CHECK_EQ_I(pipe(p), 0);
  pid_t pid = sstm_test_fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    close(p[0]);
    dup2(p[1], 2);
    stats_at_exit_child(val, shut);
  }
  close(p[1]);
  size_t n = 0;
  ssize_t r;
  while (n + 1 < len && (r = read(p[0], out + n, len - 1 - n)) > 0)
    n += (size_t)r;
  out[n] = '\0';
  close(p[0]);
  int st = 0;
  CHECK_EQ_I(waitpid(pid, &st, 0), pid);
  CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %#x, stderr: %s", st, out);
}

TEST(stats_at_exit_prints_the_statistics_of_a_library_still_initialised) {
  clear_env();
  static char out[16384];
  stats_at_exit_run("1", false, out, sizeof out);
  CHECK_CONTAINS(out, "commits=5");
  stats_at_exit_run("0", false, out, sizeof out);
  CHECK_EQ_U(strlen(out), 0);
  stats_at_exit_run("1", true, out, sizeof out);
  CHECK_EQ_U(strlen(out), 0);
}

TEST(env_unknown_cm) {
  const char *must[] = {"suicide", "backoff", NULL};
  expect_invalid("SCHEDSTM_CM", "no-such-policy", must);
}

TEST(env_invalid_numbers) {
  const char *lock[] = {"10", "28", NULL};
  expect_invalid("SCHEDSTM_LOCK_BITS", "9", lock);
  expect_invalid("SCHEDSTM_LOCK_BITS", "29", lock);
  expect_invalid("SCHEDSTM_LOCK_BITS", "abc", lock);
  expect_invalid("SCHEDSTM_LOCK_BITS", "12x", lock);
  expect_invalid("SCHEDSTM_LOCK_BITS", "-12", lock);
  const char *stripe[] = {"3", "12", NULL};
  expect_invalid("SCHEDSTM_STRIPE_SHIFT", "2", stripe);
  expect_invalid("SCHEDSTM_STRIPE_SHIFT", "13", stripe);
  const char *thr[] = {"1", "32767", NULL};
  expect_invalid("SCHEDSTM_MAX_THREADS", "0", thr);
  expect_invalid("SCHEDSTM_MAX_THREADS", "32768", thr);
  expect_invalid("SCHEDSTM_MAX_THREADS", "99999999999999999999999", thr);
  const char *ns[] = {"[1, 1000000000]", NULL};
  expect_invalid("SCHEDSTM_BACKOFF_MIN_NS", "fast", ns);
  expect_invalid("SCHEDSTM_BACKOFF_MIN_NS", "0", ns);
  expect_invalid("SCHEDSTM_BACKOFF_MIN_NS", "1000000001", ns);
  expect_invalid("SCHEDSTM_BACKOFF_MAX_NS", "0", ns);
  expect_invalid("SCHEDSTM_BACKOFF_MAX_NS", "99999999999999999999999", ns);
  const char *wm[] = {"[0, 1000000]", NULL};
  expect_invalid("SCHEDSTM_WAIT_MAX", "many", wm);
  expect_invalid("SCHEDSTM_WAIT_MAX", "-1", wm);
  expect_invalid("SCHEDSTM_WAIT_MAX", "1000001", wm);
}

/* A long bad value is quoted cut short ("..."), so that the message keeps
 * its explanation: the whole value once filled the message buffer. */
TEST(env_long_values_keep_the_explanation) {
  char val[3001];
  memset(val, '2', sizeof val - 1);
  val[sizeof val - 1] = '\0';
  const char *lock[] = {"expected a decimal integer", "10", "28", "2222...'", NULL};
  expect_invalid("SCHEDSTM_LOCK_BITS", val, lock);
  CHECK_MSG(strlen(sstm_last_error()) < 200, "message of %zu bytes", strlen(sstm_last_error()));
  memset(val, 'x', sizeof val - 1);
  const char *design[] = {"valid values: etl, ctl", NULL};
  expect_invalid("SCHEDSTM_DESIGN", val, design);
  const char *cm[] = {"unknown contention manager", "suicide", "adaptive", NULL};
  expect_invalid("SCHEDSTM_CM", val, cm);
  const char *stats[] = {"basic", "detailed", NULL};
  expect_invalid("SCHEDSTM_STATS", val, stats);
  const char *lever[] = {"auto", "none", "nice", "idle", "batch", "slice", NULL};
  expect_invalid("SCHEDSTM_SOFTSER_LEVER", val, lever);
  const char *ext[] = {"auto", "none", "slice", NULL};
  expect_invalid("SCHEDSTM_EXT_MODE", val, ext);
  const char *sw[] = {"valid values: 0, 1", NULL};
  expect_invalid("SCHEDSTM_STATE_TABLE", val, sw);
}

/* Numbers are plain decimal digits: no sign, space or prefix, even where
 * strtoull would take them (" +5", " -0", "-1" wrapping to a huge value). */
TEST(env_numbers_are_plain_digits) {
  const char *lock[] = {"10", "28", NULL};
  expect_invalid("SCHEDSTM_LOCK_BITS", " +12", lock);
  expect_invalid("SCHEDSTM_LOCK_BITS", "+12", lock);
  expect_invalid("SCHEDSTM_LOCK_BITS", " 12", lock);
  expect_invalid("SCHEDSTM_LOCK_BITS", "\t12", lock);
  expect_invalid("SCHEDSTM_LOCK_BITS", "0x10", lock);
  expect_invalid("SCHEDSTM_LOCK_BITS", "", lock);
  const char *wait[] = {"0", "1000000", NULL};
  expect_invalid("SCHEDSTM_WAIT_MAX", " -0", wait);
  expect_invalid("SCHEDSTM_WAIT_MAX", " 5", wait);
  expect_invalid("SCHEDSTM_BACKOFF_MAX_NS", "-18446744073709551615", NULL);
  expect_invalid("SCHEDSTM_BACKOFF_MAX_NS", "18446744073709551616", NULL);
  /* leading zeros are still plain digits */
  clear_env();
  setenv("SCHEDSTM_LOCK_BITS", "012", 1);
  sstm_config_t c;
  sstm_config_default(&c);
  CHECK_OK(sstm_config_from_env(&c));
  CHECK_EQ_U(c.lock_bits, 12);
}

/* The policies' knobs (softser, ext, os_prio/timestamp) are checked with
 * the others, whichever policy is selected: a typo is an error that lists
 * the valid values, not silently the default. */
TEST(env_invalid_policy_knobs) {
  const char *lever[] = {"auto", "none", "nice", "idle", "batch", "slice", NULL};
  expect_invalid("SCHEDSTM_SOFTSER_LEVER", "nicee", lever);
  expect_invalid("SCHEDSTM_SOFTSER_LEVER", "", lever);
  expect_invalid("SCHEDSTM_SOFTSER_LEVER", "NICE", lever);
  const char *mode[] = {"auto", "none", "slice", NULL};
  expect_invalid("SCHEDSTM_EXT_MODE", "slcie", mode);
  expect_invalid("SCHEDSTM_EXT_MODE", "rseq ", mode);
  const char *slice[] = {"100", "100000", NULL};
  expect_invalid("SCHEDSTM_EXT_SLICE_US", "-18446744073709451616", slice);
  expect_invalid("SCHEDSTM_EXT_SLICE_US", "+4000", slice);
  expect_invalid("SCHEDSTM_EXT_SLICE_US", "99", slice);
  expect_invalid("SCHEDSTM_EXT_SLICE_US", "100001", slice);
  const char *esc[] = {"0", "1000000", NULL};
  expect_invalid("SCHEDSTM_PRIO_ESCALATE", "-18446744073709551615", esc);
  expect_invalid("SCHEDSTM_PRIO_ESCALATE", " 4", esc);
  expect_invalid("SCHEDSTM_PRIO_ESCALATE", "1000001", esc);
  expect_invalid("SCHEDSTM_PRIO_ESCALATE", "many", esc);
  /* every valid value passes */
  static const char *const good[][2] = {
      {"SCHEDSTM_SOFTSER_LEVER", "auto"},    {"SCHEDSTM_SOFTSER_LEVER", "none"},
      {"SCHEDSTM_SOFTSER_LEVER", "nice"},    {"SCHEDSTM_SOFTSER_LEVER", "idle"},
      {"SCHEDSTM_SOFTSER_LEVER", "batch"},   {"SCHEDSTM_SOFTSER_LEVER", "slice"},
      {"SCHEDSTM_EXT_MODE", "auto"},         {"SCHEDSTM_EXT_MODE", "none"},
      {"SCHEDSTM_EXT_MODE", "slice"},        {"SCHEDSTM_EXT_SLICE_US", "100"},
      {"SCHEDSTM_EXT_SLICE_US", "100000"},   {"SCHEDSTM_PRIO_ESCALATE", "0"},
      {"SCHEDSTM_PRIO_ESCALATE", "1000000"},
  };
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    clear_env();
    setenv(good[i][0], good[i][1], 1);
    sstm_config_t c;
    sstm_config_default(&c);
    int rc = sstm_config_from_env(&c);
    CHECK_MSG(rc == 0, "%s=%s rejected: %s", good[i][0], good[i][1], sstm_last_error());
  }
}

/* sstm_init checks the policies' knobs whichever policy is selected, when
 * it reads the environment (use_env); with use_env false it reads none of
 * it, so a bad value there changes nothing. */
TEST(init_checks_policy_knobs) {
  static const char *const bad[][2] = {
      {"SCHEDSTM_SOFTSER_LEVER", "nicee"},
      {"SCHEDSTM_EXT_MODE", "slcie"},
      {"SCHEDSTM_EXT_SLICE_US", "-18446744073709451616"},
      {"SCHEDSTM_PRIO_ESCALATE", "-18446744073709551615"},
      {"SCHEDSTM_NO_MEMBARRIER", "yes"},
  };
  static const char *const cms[] = {"suicide", "softser", "ser-block+ext", "os_prio", "backoff"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    clear_env();
    setenv(bad[i][0], bad[i][1], 1);
    sstm_config_t c;
    sstm_config_default(&c);
    int rc = sstm_init(&c); /* suicide: not the knob's policy */
    CHECK_MSG(rc == SSTM_EINVAL, "%s=%s, suicide: sstm_init returned %d (%s)", bad[i][0], bad[i][1],
              rc, sstm_strerror(rc));
    CHECK_FALSE(sstm_initialized());
    CHECK_CONTAINS(sstm_last_error(), bad[i][0]);
    c.cm = cms[i]; /* the knob's own policy */
    rc = sstm_init(&c);
    CHECK_MSG(rc == SSTM_EINVAL, "%s=%s, %s: sstm_init returned %d (%s)", bad[i][0], bad[i][1],
              cms[i], rc, sstm_strerror(rc));
    CHECK_FALSE(sstm_initialized());
    CHECK_CONTAINS(sstm_last_error(), bad[i][0]);
    c.use_env = false; /* not read: the defaults */
    CHECK_OK(sstm_init(&c));
    CHECK_OK(sstm_shutdown());
  }
  clear_env();
  CHECK_OK(sstm_init(NULL));
  CHECK_OK(sstm_shutdown());
}

/* use_env false: sstm_init reads no SCHEDSTM_* variable at all (counted by
 * the getenv above), and every one of them set to garbage changes
 * nothing. */
TEST(use_env_false_reads_no_environment) {
  clear_env();
  for (size_t i = 0; i < sizeof ENV_VARS / sizeof ENV_VARS[0]; i++)
    setenv(ENV_VARS[i], "garbage", 1);
  static const char *const cms[] = {"suicide", "softser", "ser-block+ext", "os_prio", "adaptive"};
  for (size_t i = 0; i < sizeof cms / sizeof cms[0]; i++) {
    sstm_config_t c, got, def;
    sstm_config_default(&c);
    c.use_env = false;
    c.cm = cms[i];
    unsigned before = atomic_load_explicit(&schedstm_getenv_calls, memory_order_relaxed);
    int rc = sstm_init(&c);
    CHECK_MSG(rc == 0, "%s: %s", cms[i], sstm_last_error());
    CHECK_OK(sstm_config_get(&got));
    CHECK_OK(sstm_shutdown());
    CHECK_EQ_U(atomic_load_explicit(&schedstm_getenv_calls, memory_order_relaxed), before);
    sstm_config_default(&def);
    CHECK_EQ_I(got.softser_lever, def.softser_lever);
    CHECK_EQ_I(got.ext_mode, def.ext_mode);
    CHECK_EQ_U(got.ext_slice_us, def.ext_slice_us);
    CHECK_EQ_U(got.prio_escalate, def.prio_escalate);
    CHECK_FALSE(got.no_membarrier);
    CHECK_EQ_U(got.lock_bits, def.lock_bits);
  }
  /* with use_env, the same environment is read and refused */
  unsigned before = atomic_load_explicit(&schedstm_getenv_calls, memory_order_relaxed);
  CHECK_RC(sstm_init(NULL), SSTM_EINVAL);
  CHECK_GT_U(atomic_load_explicit(&schedstm_getenv_calls, memory_order_relaxed), before);
  clear_env();
}

/* The policies' knobs as typed fields: from the environment, checked
 * whichever policy is selected, and what the policies then use. */
TEST(policy_knobs_typed) {
  clear_env();
  setenv("SCHEDSTM_SOFTSER_LEVER", "batch", 1);
  setenv("SCHEDSTM_EXT_MODE", "none", 1);
  setenv("SCHEDSTM_EXT_SLICE_US", "2500", 1);
  setenv("SCHEDSTM_PRIO_ESCALATE", "7", 1);
  setenv("SCHEDSTM_NO_MEMBARRIER", "1", 1);
  sstm_config_t c;
  sstm_config_default(&c);
  CHECK_OK(sstm_config_from_env(&c));
  CHECK_EQ_I(c.softser_lever, SSTM_SOFTSER_LEVER_BATCH);
  CHECK_EQ_I(c.ext_mode, SSTM_EXT_FACILITY_NONE);
  CHECK_EQ_U(c.ext_slice_us, 2500);
  CHECK_EQ_U(c.prio_escalate, 7);
  CHECK_TRUE(c.no_membarrier);
  clear_env();
  /* the same, typed, without the environment */
  c.use_env = false;
  c.cm = "ser-block+ext";
  CHECK_OK(sstm_init(&c));
  char buf[512];
  sstm_describe(buf, sizeof buf);
  CHECK_CONTAINS(buf, "begin-fence=fence");
  CHECK_CONTAINS(buf, "ext=none");
  CHECK_OK(sstm_shutdown());
  /* out of range: refused, whichever policy */
  static const struct {
    size_t off, len;
    unsigned val;
    const char *name;
  } bad[] = {
      {offsetof(sstm_config_t, softser_lever), sizeof c.softser_lever, 6, "softser_lever 6"},
      {offsetof(sstm_config_t, ext_mode), sizeof c.ext_mode, 3, "ext_mode 3"},
      {offsetof(sstm_config_t, ext_slice_us), sizeof c.ext_slice_us, 99, "ext_slice_us 99"},
      {offsetof(sstm_config_t, ext_slice_us), sizeof c.ext_slice_us, 100001, "ext_slice_us 100001"},
      {offsetof(sstm_config_t, prio_escalate), sizeof c.prio_escalate, 1000001,
       "prio_escalate 1000001"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    sstm_config_default(&c);
    c.use_env = false;
    CHECK_EQ_U(bad[i].len, sizeof(unsigned));
    memcpy((char *)&c + bad[i].off, &bad[i].val, sizeof(unsigned));
    CHECK_RC(sstm_init(&c), SSTM_EINVAL);
    CHECK_CONTAINS(sstm_last_error(), bad[i].name);
    CHECK_FALSE(sstm_initialized());
  }
}

static void note_stats_size(const sstm_stats_t *s, void *arg) { *(size_t *)arg = s->size; }

/* Room to grow (config.h, stats.h): a struct whose size the library does
 * not know is refused with a message that says what to do, never read
 * past its end; a larger output buffer gets zeros after what the library
 * fills, and `size` says how much that was. */
TEST(struct_sizes_checked) {
  clear_env();
  sstm_config_t c;
  static const size_t bad_sizes[] = {0, 8, sizeof c - 1, sizeof c + 8, (size_t)-1};
  for (size_t i = 0; i < sizeof bad_sizes / sizeof bad_sizes[0]; i++) {
    sstm_config_default(&c);
    c.size = bad_sizes[i];
    CHECK_RC(sstm_init(&c), SSTM_EINVAL);
    CHECK_CONTAINS(sstm_last_error(), "sstm_init: the sstm_config_t's size is");
    CHECK_CONTAINS(sstm_last_error(), "sstm_config_default()");
    CHECK_FALSE(sstm_initialized());
    sstm_config_t ref = c;
    CHECK_RC(sstm_config_from_env(&c), SSTM_EINVAL);
    CHECK_CONTAINS(sstm_last_error(), "sstm_config_from_env");
    CHECK_EQ_MEM(&c, &ref, sizeof c);
    CHECK_RC(sstm_config_default_sized(&c, bad_sizes[i]), SSTM_EINVAL);
    CHECK_CONTAINS(sstm_last_error(), "sstm_config_default_sized");
  }
  CHECK_RC(sstm_config_default_sized(NULL, sizeof c), SSTM_EINVAL);
  /* an uninitialised-looking struct (size 0: designated initialisers
   * without sstm_config_default) */
  sstm_config_t z = {.cm = "suicide", .lock_bits = 20};
  CHECK_RC(sstm_init(&z), SSTM_EINVAL);
  /* sstm_config_default sets the size */
  memset(&c, 0xA5, sizeof c);
  sstm_config_default(&c);
  CHECK_EQ_U(c.size, sizeof c);
  c.use_env = false;
  CHECK_OK(sstm_init(&c));
  CHECK_OK(sstm_thread_init());
  /* outputs: too small refused, larger zero-filled past the library's */
  struct {
    sstm_config_t cfg;
    unsigned char more[32];
  } big;
  memset(&big, 0xA5, sizeof big);
  CHECK_RC(sstm_config_get_sized(&big.cfg, 8), SSTM_EINVAL);
  CHECK_CONTAINS(sstm_last_error(), "sstm_config_get");
  CHECK_OK(sstm_config_get_sized(&big.cfg, sizeof big));
  CHECK_EQ_U(big.cfg.size, sizeof(sstm_config_t));
  CHECK_EQ_U(big.cfg.lock_bits, 20);
  for (size_t i = 0; i < sizeof big.more; i++)
    CHECK_EQ_U(big.more[i], 0);
  struct {
    sstm_stats_t s;
    unsigned char more[32];
  } sbig;
  memset(&sbig, 0xA5, sizeof sbig);
  CHECK_RC(sstm_stats_get_sized(sstm_self(), &sbig.s, 16), SSTM_EINVAL);
  CHECK_CONTAINS(sstm_last_error(), "sstm_stats_get: the sstm_stats_t's size is 16");
  CHECK_RC(sstm_stats_aggregate_sized(&sbig.s, 0), SSTM_EINVAL);
  CHECK_CONTAINS(sstm_last_error(), "sstm_stats_aggregate");
  CHECK_OK(sstm_stats_get_sized(sstm_self(), &sbig.s, sizeof sbig));
  CHECK_EQ_U(sbig.s.size, sizeof(sstm_stats_t));
  for (size_t i = 0; i < sizeof sbig.more; i++)
    CHECK_EQ_U(sbig.more[i], 0);
  memset(&sbig, 0xA5, sizeof sbig);
  CHECK_OK(sstm_stats_aggregate_sized(&sbig.s, sizeof sbig));
  CHECK_EQ_U(sbig.s.size, sizeof(sstm_stats_t));
  CHECK_EQ_U(sbig.more[0], 0);
  sstm_stats_t s;
  CHECK_OK(sstm_stats_get(sstm_self(), &s));
  CHECK_EQ_U(s.size, sizeof s);
  /* the callback's counters say their size too */
  size_t seen = 0;
  CHECK_EQ_I(sstm_stats_foreach(note_stats_size, &seen), 1);
  CHECK_EQ_U(seen, sizeof(sstm_stats_t));
  CHECK_OK(sstm_thread_exit());
  CHECK_OK(sstm_shutdown());
  /* sstm_config_from_env keeps the caller's size (it writes only that) */
  setenv("SCHEDSTM_LOCK_BITS", "12", 1);
  sstm_config_default(&c);
  CHECK_OK(sstm_config_from_env(&c));
  CHECK_EQ_U(c.size, sizeof c);
  CHECK_EQ_U(c.lock_bits, 12);
  clear_env();
}

/* Calls that fail say why in sstm_last_error(), not an older failure's
 * message. */
TEST(config_errors_set_last_error) {
  clear_env();
  CHECK_RC(sstm_design_parse("stale-message", NULL), SSTM_EINVAL);
  CHECK_RC(sstm_config_from_env(NULL), SSTM_EINVAL);
  CHECK_CONTAINS(sstm_last_error(), "sstm_config_from_env");
  CHECK_RC(sstm_design_parse("stale-message", NULL), SSTM_EINVAL);
  CHECK_RC(sstm_config_get(NULL), SSTM_EINVAL);
  CHECK_CONTAINS(sstm_last_error(), "sstm_config_get");
  sstm_config_t c;
  CHECK_RC(sstm_design_parse("stale-message", NULL), SSTM_EINVAL);
  CHECK_RC(sstm_config_get(&c), SSTM_ESTATE);
  CHECK_CONTAINS(sstm_last_error(), "sstm_config_get");
  char buf[64];
  CHECK_RC(sstm_design_parse("stale-message", NULL), SSTM_EINVAL);
  CHECK_RC(sstm_describe(buf, sizeof buf), SSTM_ESTATE);
  CHECK_CONTAINS(sstm_last_error(), "sstm_describe");
}

TEST(env_first_error_leaves_cfg_unchanged) {
  clear_env();
  setenv("SCHEDSTM_DESIGN", "ctl", 1);     /* valid */
  setenv("SCHEDSTM_LOCK_BITS", "1000", 1); /* invalid */
  sstm_config_t c, ref;
  sstm_config_default(&c);
  ref = c;
  CHECK_RC(sstm_config_from_env(&c), SSTM_EINVAL);
  CHECK_EQ_MEM(&c, &ref, sizeof c); /* design not half-applied */
}

TEST(init_env_invalid_fails_cleanly) {
  clear_env();
  setenv("SCHEDSTM_DESIGN", "tl2", 1);
  CHECK_RC(sstm_init(NULL), SSTM_EINVAL);
  CHECK_CONTAINS(sstm_last_error(), "etl");
  CHECK_CONTAINS(sstm_last_error(), "ctl");
  CHECK_FALSE(sstm_initialized());
  sstm_config_t c;
  CHECK_RC(sstm_config_get(&c), SSTM_ESTATE);
  unsetenv("SCHEDSTM_DESIGN");
  CHECK_OK(sstm_init(NULL));
  CHECK_TRUE(sstm_initialized());
  CHECK_OK(sstm_shutdown());
}

/* A minimum above the default maximum, from the environment alone: the
 * message names the variables and both values, not only the fields. */
TEST(init_env_backoff_min_above_max) {
  clear_env();
  setenv("SCHEDSTM_BACKOFF_MIN_NS", "2000000", 1);
  CHECK_RC(sstm_init(NULL), SSTM_EINVAL);
  CHECK_CONTAINS(sstm_last_error(), "SCHEDSTM_BACKOFF_MAX_NS");
  CHECK_CONTAINS(sstm_last_error(), "backoff_min_ns 2000000, backoff_max_ns 1000000");
  CHECK_FALSE(sstm_initialized());
  setenv("SCHEDSTM_BACKOFF_MAX_NS", "2000000", 1);
  CHECK_OK(sstm_init(NULL));
  sstm_config_t c;
  CHECK_OK(sstm_config_get(&c));
  CHECK_EQ_U(c.backoff_min_ns, 2000000);
  CHECK_OK(sstm_shutdown());
  clear_env();
}

TEST(init_applies_env) {
  clear_env();
  setenv("SCHEDSTM_DESIGN", "ctl", 1);
  setenv("SCHEDSTM_CM", "backoff", 1);
  setenv("SCHEDSTM_LOCK_BITS", "12", 1);
  CHECK_OK(sstm_init(NULL));
  sstm_config_t c;
  CHECK_OK(sstm_config_get(&c));
  CHECK_EQ_I(c.design, SSTM_DESIGN_CTL);
  CHECK_EQ_STR(c.cm, "backoff");
  CHECK_EQ_U(c.lock_bits, 12);
  CHECK_NOT_NULL(sstm_cm_current());
  CHECK_EQ_STR(sstm_cm_current()->name, "backoff");
  CHECK_OK(sstm_shutdown());
}

/* sstm_config_get() hands back the library's copies of the string fields,
 * not the caller's strings, which may be gone by then (here: overwritten;
 * a stack buffer of a function that has returned, a freed block), nor the
 * environment's. */
TEST(config_get_strings_are_the_librarys_own) {
  clear_env();
  char topo[32] = "Package:2 Core:2 PU:1", dump[32] = "/tmp/sstm-dump-never-written";
  char file[32] = "/tmp/sstm-file-never-read", log[32] = "/tmp/sstm-log-never-written";
  char cache[32] = "/tmp/sstm-cache-never-used";
  sstm_config_t c;
  sstm_config_default(&c);
  c.use_env = false;
  c.map_topology = topo; /* the strategy none reads none of them */
  c.map_dump = dump;
  c.map_file = file;
  c.map_log = log;
  c.map_topo_cache = cache;
  CHECK_OK(sstm_init(&c));
  memset(topo, 'x', sizeof topo - 1);
  memset(dump, 'x', sizeof dump - 1);
  memset(file, 'x', sizeof file - 1);
  memset(log, 'x', sizeof log - 1);
  memset(cache, 'x', sizeof cache - 1);
  sstm_config_t g;
  CHECK_OK(sstm_config_get(&g));
  CHECK_EQ_STR(g.map_topology, "Package:2 Core:2 PU:1");
  CHECK_EQ_STR(g.map_dump, "/tmp/sstm-dump-never-written");
  CHECK_EQ_STR(g.map_file, "/tmp/sstm-file-never-read");
  CHECK_EQ_STR(g.map_log, "/tmp/sstm-log-never-written");
  CHECK_EQ_STR(g.map_topo_cache, "/tmp/sstm-cache-never-used");
  CHECK_NULL(g.sample_fn);
  CHECK_OK(sstm_shutdown());
  /* from the environment too */
  setenv("SCHEDSTM_MAP_LOG", "/tmp/sstm-env-log", 1);
  c.use_env = true;
  c.map_topology = c.map_dump = c.map_file = c.map_log = c.map_topo_cache = NULL;
  CHECK_OK(sstm_init(&c));
  setenv("SCHEDSTM_MAP_LOG", "/tmp/sstm-env-log-changed-since", 1);
  CHECK_OK(sstm_config_get(&g));
  CHECK_EQ_STR(g.map_log, "/tmp/sstm-env-log");
  CHECK_NULL(g.map_dump);
  CHECK_OK(sstm_shutdown());
  unsetenv("SCHEDSTM_MAP_LOG");
  clear_env();
}

TEST(init_use_env_false_ignores_env) {
  clear_env();
  setenv("SCHEDSTM_DESIGN", "ctl", 1);
  setenv("SCHEDSTM_LOCK_BITS", "garbage", 1);
  sstm_config_t c;
  sstm_config_default(&c);
  c.use_env = false;
  CHECK_OK(sstm_init(&c));
  sstm_config_t got;
  CHECK_OK(sstm_config_get(&got));
  CHECK_EQ_I(got.design, SSTM_DESIGN_ETL);
  CHECK_EQ_U(got.lock_bits, 20);
  CHECK_OK(sstm_shutdown());
}

TEST(init_bad_typed_values) {
  clear_env();
  for (int i = 0; i < 16; i++) {
    sstm_config_t c;
    sstm_config_default(&c);
    c.use_env = false;
    int want = SSTM_EINVAL;
    switch (i) {
    case 0: c.lock_bits = 9; break;
    case 1: c.lock_bits = 29; break;
    case 2: c.stripe_shift = 2; break;
    case 3: c.stripe_shift = 13; break;
    case 4: c.max_threads = 0; break;
    case 5: c.max_threads = 32768; break;
    case 6: c.design = (sstm_design_t)7; break;
    case 7:
      c.sample_period = 10;
      c.sample_fn = NULL;
      break;
    case 8:
      c.cm = "no-such-policy";
      want = SSTM_ENOENT;
      break;
    case 9: c.backoff_max_ns = 1000000001ull; break; /* the environment's bounds too */
    case 10: c.wait_max = 1000001; break;
    case 11: c.backoff_min_ns = 0; break;
    case 12: c.stats = (sstm_stats_level_t)3; break;
    case 13: c.stats = (sstm_stats_level_t)-1; break;
    case 14: c.cm = NULL; break;
    case 15: c.cm = ""; break;
    }
    int rc = sstm_init(&c);
    CHECK_MSG(rc == want, "case %d: sstm_init returned %d (%s), expected %d (%s)", i, rc,
              sstm_strerror(rc), want, sstm_strerror(want));
    CHECK_MSG(!sstm_initialized(), "case %d: initialised after a failed init", i);
    CHECK_MSG(sstm_last_error()[0] != '\0', "case %d: no last_error message", i);
  }
  /* and a good one still works afterwards */
  sstm_config_t c;
  sstm_config_default(&c);
  c.use_env = false;
  CHECK_OK(sstm_init(&c));
  CHECK_OK(sstm_shutdown());
}

/* The typed fields at the ends of their ranges are accepted by sstm_init
 * (the failing values one past them are in init_bad_typed_values). */
TEST(init_range_boundaries_valid) {
  clear_env();
  for (int i = 0; i < 8; i++) {
    sstm_config_t c;
    sstm_config_default(&c);
    c.use_env = false;
    switch (i) {
    case 0: c.lock_bits = 10; break;
    case 1: c.stripe_shift = 3; break;
    case 2: c.stripe_shift = 12; break;
    case 3: c.max_threads = 1; break;
    case 4: c.wait_max = 0; break;
    case 5: c.wait_max = 1000000; break;
    case 6: c.backoff_min_ns = c.backoff_max_ns = 1; break;
    case 7: c.backoff_min_ns = c.backoff_max_ns = 1000000000ull; break;
    }
    int rc = sstm_init(&c);
    CHECK_MSG(rc == 0, "case %d: sstm_init returned %d (%s): %s", i, rc, sstm_strerror(rc),
              sstm_last_error());
    CHECK_OK(sstm_shutdown());
  }
}

TEST(init_twice_is_estate) {
  clear_env();
  sstm_config_t c;
  sstm_test_config(&c);
  c.lock_bits = 14;
  CHECK_OK(sstm_init(&c));
  sstm_config_t c2;
  sstm_test_config(&c2);
  c2.lock_bits = 16;
  CHECK_RC(sstm_init(&c2), SSTM_ESTATE);
  CHECK_TRUE(sstm_initialized());
  sstm_config_t got;
  CHECK_OK(sstm_config_get(&got));
  CHECK_EQ_U(got.lock_bits, 14); /* the second init changed nothing */
  CHECK_OK(sstm_shutdown());
  CHECK_FALSE(sstm_initialized());
  CHECK_RC(sstm_shutdown(), SSTM_ESTATE);
}

TEST(not_initialised_is_estate) {
  CHECK_FALSE(sstm_initialized());
  CHECK_RC(sstm_shutdown(), SSTM_ESTATE);
  sstm_config_t c;
  CHECK_RC(sstm_config_get(&c), SSTM_ESTATE);
  char buf[64];
  CHECK_RC(sstm_describe(buf, sizeof buf), SSTM_ESTATE);
  CHECK_RC(sstm_thread_init(), SSTM_ESTATE);
  sstm_stats_t s;
  CHECK_RC(sstm_stats_aggregate(&s), SSTM_ESTATE);
  CHECK_NULL(sstm_cm_current());
  CHECK_NULL(sstm_self());
}

/* Use after shutdown: every entry point answers with its documented error;
 * an access (which has no return code) reaches the misuse handler. */
static int after_shutdown_misuse;
static void count_after_shutdown(const char *msg) {
  (void)msg;
  after_shutdown_misuse++;
}
static void never_run(void *arg) {
  (void)arg;
  CHECK_MSG(false, "a transaction body ran after sstm_shutdown");
}

TEST(use_after_shutdown) {
  clear_env();
  sstm_config_t c;
  sstm_test_config(&c);
  CHECK_OK(sstm_init(&c));
  CHECK_OK(sstm_thread_init());
  CHECK_OK(sstm_thread_exit());
  CHECK_OK(sstm_shutdown());
  CHECK_FALSE(sstm_initialized());
  CHECK_RC(sstm_thread_init(), SSTM_ESTATE);
  CHECK_CONTAINS(sstm_last_error(), "not initialised");
  CHECK_RC(sstm_run(NULL, never_run, NULL), SSTM_ENOTHREAD);
  sstm_desc_t *d = NULL;
  CHECK_RC(sstm_desc_create(&d), SSTM_ESTATE);
  CHECK_NULL(d);
  sstm_stats_t s;
  CHECK_RC(sstm_stats_aggregate(&s), SSTM_ESTATE);
  CHECK_RC(sstm_shutdown(), SSTM_ESTATE);
  after_shutdown_misuse = 0;
  sstm_set_misuse_handler(count_after_shutdown);
  static uint64_t word = 3;
  CHECK_EQ_U(sstm_load_u64(&word), 0);
  sstm_store_u64(&word, 4);
  CHECK_EQ_U(word, 3);
  CHECK_EQ_I(after_shutdown_misuse, 2);
  sstm_set_misuse_handler(NULL);
}

static void dummy_tx(void *arg) {
  uint64_t *w = arg;
  sstm_store_u64(w, sstm_load_u64(w) + 1);
}

TEST(reinit_cycles) {
  clear_env();
  static uint64_t word;
  for (int i = 0; i < 4; i++) {
    sstm_config_t c;
    sstm_config_default(&c);
    c.use_env = false;
    c.design = (i & 1) ? SSTM_DESIGN_CTL : SSTM_DESIGN_ETL;
    c.cm = (i & 2) ? "backoff" : "suicide";
    CHECK_OK(sstm_init(&c));
    sstm_config_t got;
    CHECK_OK(sstm_config_get(&got));
    CHECK_EQ_I(got.design, c.design);
    CHECK_EQ_STR(got.cm, c.cm);
    CHECK_OK(sstm_thread_init());
    CHECK_OK(sstm_run(NULL, dummy_tx, &word));
    CHECK_OK(sstm_shutdown()); /* unregisters the caller */
    CHECK_NULL(sstm_self());
  }
  CHECK_EQ_U(word, 4);
}

struct holder {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int registered, release;
};

static void *holder_main(void *p) {
  struct holder *h = p;
  CHECK_OK(sstm_thread_init());
  pthread_mutex_lock(&h->mu);
  h->registered = 1;
  pthread_cond_broadcast(&h->cv);
  while (!h->release)
    pthread_cond_wait(&h->cv, &h->mu);
  pthread_mutex_unlock(&h->mu);
  CHECK_OK(sstm_thread_exit());
  return NULL;
}

TEST(shutdown_with_registered_thread_is_ebusy) {
  sstm_test_init();
  struct holder h = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};
  pthread_t th;
  CHECK_EQ_I(pthread_create(&th, NULL, holder_main, &h), 0);
  pthread_mutex_lock(&h.mu);
  while (!h.registered)
    pthread_cond_wait(&h.cv, &h.mu);
  pthread_mutex_unlock(&h.mu);

  CHECK_RC(sstm_shutdown(), SSTM_EBUSY);
  CHECK_NOT_NULL(strstr(sstm_last_error(), "another thread is still registered"));
  CHECK_TRUE(sstm_initialized());
  /* nothing was released: the caller is still registered and works */
  CHECK_NOT_NULL(sstm_self());
  static uint64_t w;
  CHECK_OK(sstm_run(NULL, dummy_tx, &w));
  CHECK_EQ_U(w, 1);

  pthread_mutex_lock(&h.mu);
  h.release = 1;
  pthread_cond_broadcast(&h.cv);
  pthread_mutex_unlock(&h.mu);
  CHECK_EQ_I(pthread_join(th, NULL), 0);
  CHECK_OK(sstm_shutdown());
  CHECK_FALSE(sstm_initialized());
}

/* Threads register and unregister in a loop (each registration runs one
 * transaction) while the main thread shuts the library down and starts it
 * again. A registration either happens before a shutdown (which is then
 * busy) or fails with SSTM_ESTATE: never a slot in a registry being torn
 * down (ASan sees the use after free, the normal build the lost slot).
 * Once the main thread wants to shut down, each registrar makes one more
 * attempt, racing the shutdown, then waits for the next cycle: a shutdown
 * then always finds a moment when nobody is registered (with registrars
 * that never pause, it may not, on a loaded machine). The wait for the next
 * cycle sleeps on race_cv (race_cycle and race_stop change under race_mu):
 * parked registrars that yielded in a loop took the CPU from the main
 * thread and the registrars still racing, and on a loaded machine each
 * cycle cost several rounds of the scheduler. Bounded by work: a fixed
 * number of cycles (50; 30, the floor, in the parts of tests/run_all.sh
 * that scale down), each waiting only for events. It had 300: on a host
 * loaded a hundred times over its CPUs each cycle costs tenths of a second
 * of waiting for the CPU, and the entry ran past its watchdog. */
static _Atomic int race_stop, race_closing, race_cycle;
static _Atomic long race_ok, race_estate, race_parked;
static pthread_mutex_t race_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t race_cv = PTHREAD_COND_INITIALIZER;

static void *race_registrar(void *arg) {
  (void)arg;
  static uint64_t w[4];
  int parked_in = -1; /* the cycle whose shutdown this thread waits out */
  while (!atomic_load_explicit(&race_stop, memory_order_seq_cst)) {
    int cycle = atomic_load_explicit(&race_cycle, memory_order_seq_cst);
    if (parked_in == cycle) { /* sleep until the next cycle (or the end) */
      pthread_mutex_lock(&race_mu);
      while (atomic_load_explicit(&race_cycle, memory_order_seq_cst) == cycle &&
             !atomic_load_explicit(&race_stop, memory_order_seq_cst))
        pthread_cond_wait(&race_cv, &race_mu);
      pthread_mutex_unlock(&race_mu);
      continue;
    }
    bool last = atomic_load_explicit(&race_closing, memory_order_seq_cst) !=
                0; /* the attempt racing the shutdown */
    int rc = sstm_thread_init();
    if (rc == SSTM_OK) {
      CHECK_OK(sstm_run(NULL, dummy_tx, &w[0]));
      CHECK_OK(sstm_thread_exit());
      atomic_fetch_add_explicit(&race_ok, 1, memory_order_seq_cst);
    } else {
      CHECK_RC(rc, SSTM_ESTATE);
      atomic_fetch_add_explicit(&race_estate, 1, memory_order_seq_cst);
    }
    if (last) {
      parked_in = cycle;
      atomic_fetch_add_explicit(&race_parked, 1, memory_order_seq_cst);
    }
  }
  return NULL;
}

TEST(shutdown_races_registration) {
  enum { NTH = 3 };
  int cycles = (int)sstm_test_scaled(50, 30);
  long busy = 0;
  pthread_t th[NTH];
  sstm_test_init();
  for (int i = 0; i < NTH; i++)
    CHECK_EQ_I(pthread_create(&th[i], NULL, race_registrar, NULL), 0);
  for (int c = 0; c < cycles; c++) {
    if (c > 0) {
      sstm_test_init();
      pthread_mutex_lock(&race_mu);
      atomic_store_explicit(&race_closing, 0, memory_order_seq_cst);
      atomic_fetch_add_explicit(&race_cycle, 1, memory_order_seq_cst); /* the registrars go again */
      pthread_cond_broadcast(&race_cv);
      pthread_mutex_unlock(&race_mu);
    }
    long ok0 = atomic_load_explicit(&race_ok, memory_order_seq_cst);
    while (atomic_load_explicit(&race_ok, memory_order_seq_cst) ==
           ok0) /* someone registers in this cycle */
      sched_yield();
    long parked0 = atomic_load_explicit(&race_parked, memory_order_seq_cst);
    atomic_store_explicit(&race_closing, 1, memory_order_seq_cst);
    int rc;
    while ((rc = sstm_shutdown()) == SSTM_EBUSY) {
      busy++;
      sched_yield();
    }
    CHECK_OK(rc);
    CHECK_FALSE(sstm_initialized());
    CHECK_RC(sstm_thread_init(), SSTM_ESTATE); /* nobody registers until the next init */
    while (atomic_load_explicit(&race_parked, memory_order_seq_cst) <
           parked0 + NTH) /* every last attempt is over */
      sched_yield();
  }
  pthread_mutex_lock(&race_mu);
  atomic_store_explicit(&race_stop, 1, memory_order_seq_cst);
  pthread_cond_broadcast(&race_cv);
  pthread_mutex_unlock(&race_mu);
  for (int i = 0; i < NTH; i++)
    CHECK_EQ_I(pthread_join(th[i], NULL), 0);
  printf("%d cycles, %ld registrations, %ld refused, %ld busy shutdowns\n", cycles,
         atomic_load_explicit(&race_ok, memory_order_seq_cst),
         atomic_load_explicit(&race_estate, memory_order_seq_cst), busy);
}

TEST(shutdown_with_suspended_tx_is_ebusy) {
  sstm_test_init();
  static uint64_t w;
  sstm_desc_t *d = NULL;
  SSTM_ATOMIC_BEGIN(NULL)
    sstm_store_u64(&w, 5);
    d = sstm_desc_detach();
    CHECK_NOT_NULL(d);
    CHECK_RC(sstm_shutdown(), SSTM_EBUSY); /* d is active, detached */
    CHECK_NOT_NULL(strstr(sstm_last_error(), "detached"));
    CHECK_TRUE(sstm_initialized());
    CHECK_OK(sstm_desc_attach(d));
  SSTM_ATOMIC_END();
  CHECK_EQ_U(w, 5);
  sstm_test_fini();
}

TEST(shutdown_inside_tx_is_ebusy) {
  sstm_test_init();
  static uint64_t w;
  SSTM_ATOMIC_BEGIN(NULL)
    sstm_store_u64(&w, 1);
    CHECK_RC(sstm_shutdown(), SSTM_EBUSY);
    CHECK_NOT_NULL(strstr(sstm_last_error(), "inside a transaction"));
  SSTM_ATOMIC_END();
  CHECK_TRUE(sstm_initialized());
  CHECK_EQ_U(w, 1);
  sstm_test_fini();
}

TEST(describe_content) {
  clear_env();
  for (int i = 0; i < 2; i++) {
    sstm_config_t c;
    sstm_config_default(&c);
    c.use_env = false;
    c.design = i ? SSTM_DESIGN_CTL : SSTM_DESIGN_ETL;
    c.cm = i ? "backoff" : "suicide";
    c.read_past = i ? SSTM_READ_PAST_OFF : SSTM_READ_PAST_ALL;
    c.alloc_cache = i ? 0 : 4096;
    c.ro_log = i ? SSTM_RO_LOG_AUTO : SSTM_RO_LOG_ON;
    c.stats = i ? SSTM_STATS_BASIC : SSTM_STATS_DETAILED;
    CHECK_OK(sstm_init(&c));
    char buf[1024];
    int n = sstm_describe(buf, sizeof buf);
    CHECK_GT_I(n, 0);
    CHECK_LT_I(n, (long long)sizeof buf);
    CHECK_EQ_U(strlen(buf), (unsigned long long)n);
    CHECK_CONTAINS(buf, SSTM_VERSION_STRING);
    CHECK_CONTAINS(buf, i ? "ctl" : "etl");
    CHECK_CONTAINS(buf, c.cm);
    CHECK_CONTAINS(buf, "locks=2^20 "); /* the default table: 2^20 locks */
    CHECK_CONTAINS(buf, "stripe=32B "); /* of 32-byte stripes */
    CHECK_CONTAINS(buf, i ? " read_past=off " : " read_past=all ");
    CHECK_CONTAINS(buf, i ? " alloc_cache=0 " : " alloc_cache=4096 ");
    CHECK_CONTAINS(buf, i ? " ro_log=auto " : " ro_log=on ");
    CHECK_CONTAINS(buf, i ? " stats=basic " : " stats=detailed ");
    CHECK_NULL(strchr(buf, '\n')); /* one line */
    /* truncation like snprintf */
    char small[8];
    memset(small, 'X', sizeof small);
    int n2 = sstm_describe(small, sizeof small);
    CHECK_EQ_I(n2, n);
    CHECK_EQ_U(strlen(small), sizeof small - 1);
    CHECK_EQ_MEM(small, buf, sizeof small - 1);
    CHECK_OK(sstm_shutdown());
  }
}

TEST(design_parse_and_name) {
  sstm_design_t d = (sstm_design_t)42;
  CHECK_OK(sstm_design_parse("etl", &d));
  CHECK_EQ_I(d, SSTM_DESIGN_ETL);
  CHECK_OK(sstm_design_parse("ctl", &d));
  CHECK_EQ_I(d, SSTM_DESIGN_CTL);
  d = SSTM_DESIGN_CTL;
  CHECK_RC(sstm_design_parse("tl2", &d), SSTM_EINVAL);
  CHECK_EQ_I(d, SSTM_DESIGN_CTL); /* unchanged */
  CHECK_CONTAINS(sstm_last_error(), "etl");
  CHECK_CONTAINS(sstm_last_error(), "ctl");
  CHECK_EQ_STR(sstm_design_name(SSTM_DESIGN_ETL), "etl");
  CHECK_EQ_STR(sstm_design_name(SSTM_DESIGN_CTL), "ctl");
  CHECK_NOT_NULL(sstm_design_name((sstm_design_t)99));
}

static void *try_register(void *p) {
  int *rc = p;
  *rc = sstm_thread_init();
  if (*rc == 0) CHECK_OK(sstm_thread_exit());
  return NULL;
}

TEST(max_threads_limit) {
  clear_env();
  sstm_config_t c;
  sstm_test_config(&c);
  c.max_threads = 2;
  CHECK_OK(sstm_init(&c));
  CHECK_OK(sstm_thread_init());
  sstm_desc_t *d2 = NULL, *d3 = NULL;
  CHECK_OK(sstm_desc_create(&d2));
  CHECK_NOT_NULL(d2);
  CHECK_RC(sstm_desc_create(&d3), SSTM_ELIMIT);
  pthread_t th;
  int rc = 1;
  CHECK_EQ_I(pthread_create(&th, NULL, try_register, &rc), 0);
  CHECK_EQ_I(pthread_join(th, NULL), 0);
  CHECK_RC(rc, SSTM_ELIMIT);
  CHECK_OK(sstm_desc_destroy(d2));
  rc = 1;
  CHECK_EQ_I(pthread_create(&th, NULL, try_register, &rc), 0);
  CHECK_EQ_I(pthread_join(th, NULL), 0);
  CHECK_OK(rc);
  sstm_test_fini();
}

/* A thread that returns while registered, without sstm_thread_exit: the
 * thread-exit destructor unregisters it. Its slot comes back (with
 * max_threads 2 and the main thread registered, each new thread needs the
 * previous one's) and its commits stay in the totals. (Each thread also
 * frees a block in its transaction: the exit path hands it to reclamation;
 * test_alloc checks where such blocks go.) */
static uint64_t reg_cell;
static void bump_and_free(void *arg) {
  void **blk = arg;
  sstm_store_u64(&reg_cell, sstm_load_u64(&reg_cell) + 1);
  sstm_free(*blk);
}
static void *register_and_return(void *p) {
  int *rc = p;
  *rc = sstm_thread_init();
  if (*rc != 0) return NULL;
  void *blk = malloc(64);
  CHECK_NOT_NULL(blk);
  CHECK_OK(sstm_run(NULL, bump_and_free, &blk));
  return NULL; /* no sstm_thread_exit */
}

TEST(a_thread_that_ends_registered_is_unregistered) {
  clear_env();
  sstm_config_t c;
  sstm_test_config(&c);
  c.max_threads = 2;
  CHECK_OK(sstm_init(&c));
  CHECK_OK(sstm_thread_init());
  reg_cell = 0;
  for (int i = 0; i < 5; i++) {
    pthread_t th;
    int rc = 1;
    CHECK_EQ_I(pthread_create(&th, NULL, register_and_return, &rc), 0);
    CHECK_EQ_I(pthread_join(th, NULL), 0);
    CHECK_MSG(rc == 0,
              "thread %d: sstm_thread_init: %s (the previous thread's slot was not given back)", i,
              sstm_strerror(rc));
  }
  CHECK_EQ_U(reg_cell, 5);
  sstm_stats_t s;
  CHECK_OK(sstm_stats_aggregate(&s));
  CHECK_EQ_U(s.commits_update, 5);
  /* and the slot is free for a descriptor now */
  sstm_desc_t *d2 = NULL;
  CHECK_OK(sstm_desc_create(&d2));
  CHECK_OK(sstm_desc_destroy(d2));
  sstm_test_fini();
}

TEST(thread_registration_rules) {
  sstm_test_init();
  sstm_desc_t *d = sstm_self();
  CHECK_NOT_NULL(d);
  CHECK_OK(sstm_thread_init()); /* idempotent */
  CHECK_EQ_PTR(sstm_self(), d);
  SSTM_ATOMIC_BEGIN(NULL)
    CHECK_RC(sstm_thread_exit(), SSTM_EBUSY);
  SSTM_ATOMIC_END();
  CHECK_OK(sstm_thread_exit());
  CHECK_NULL(sstm_self());
  CHECK_RC(sstm_thread_exit(), SSTM_ENOTHREAD);
  CHECK_OK(sstm_shutdown());
}

/* A softser lever forced by SCHEDSTM_SOFTSER_LEVER that cannot be undone
 * here is refused by sstm_init (SSTM_EPERM), instead of leaving threads at
 * nice 19 for good. In a child that runs as nobody with RLIMIT_NICE 0, or
 * as the unprivileged user this already is: nice cannot go back up from 19
 * there, while SCHED_BATCH can be left. */
TEST(softser_lever_that_cannot_be_undone_is_eperm) {
  /* At nice 19 already, lowering to 19 and going back are both no-ops, so
   * the lever can be undone: the premise needs a lower starting value,
   * which root can set and an unprivileged runner (e.g. a test suite run
   * under `nice -n 19`) cannot. */
  errno = 0;
  int start_nice = getpriority(PRIO_PROCESS, 0);
  if (geteuid() != 0 && errno == 0 && start_nice >= 19)
    sstm_test_skip("an unprivileged process already at nice 19 can undo any nice lever");
  fflush(stdout);
  pid_t pid = sstm_test_fork();
  CHECK_GE_I(pid, 0);
  if (pid == 0) {
    if (geteuid() == 0 && setpriority(PRIO_PROCESS, 0, 0) != 0) _exit(12);
    struct rlimit rl = {0, 0};
    if (setrlimit(RLIMIT_NICE, &rl) != 0) _exit(10);
    if (geteuid() == 0) {
      if (setgid(65534) != 0 || setuid(65534) != 0) _exit(11);
      sstm_test_child_rearm(); /* the ID change cleared it */
    }
    sstm_config_t c;
    sstm_config_default(&c);
    c.cm = "softser";
    setenv("SCHEDSTM_SOFTSER_LEVER", "nice", 1);
    int rc = sstm_init(&c);
    if (rc != SSTM_EPERM) _exit(20);
    if (strstr(sstm_last_error(), "SCHEDSTM_SOFTSER_LEVER=nice") == NULL) _exit(21);
    setenv("SCHEDSTM_SOFTSER_LEVER", "batch", 1);
    if (sstm_init(&c) != 0) _exit(22);
    if (sstm_shutdown() != 0) _exit(23);
    _exit(0);
  }
  int st;
  CHECK_EQ_I(waitpid(pid, &st, 0), pid);
  CHECK_MSG(WIFEXITED(st), "child died: status 0x%x", st);
  CHECK_EQ_I(WEXITSTATUS(st), 0);
}

SSTM_TEST_MAIN()

/* Pages of the process from /proc/self/statm: field 0 is the whole mapped
 * size, field 1 the resident set. */
static long statm_pages(int field) {
  FILE *f = fopen("/proc/self/statm", "r");
  CHECK_NOT_NULL(f);
  long v[2] = {0, 0};
  CHECK_EQ_I(fscanf(f, "%ld %ld", &v[0], &v[1]), 2);
  fclose(f);
  return v[field];
}

static uint64_t lt_words[64];
static void lt_body(void *arg) {
  (void)arg;
  for (int i = 0; i < 64; i++)
    sstm_store_u64(&lt_words[i], sstm_load_u64(&lt_words[i]) + 1);
}

/* The lock table is mapped, not written at sstm_init: with the largest
 * table (2^28 words, 2 GiB) only the pages of the stripes that
 * transactions use become resident. Written at init, as it was, all of it
 * became resident (and init took more than a minute). A bound on memory,
 * not on time; and shutdown unmaps the table. */
TEST(init_large_lock_table_touches_little_memory) {
  clear_env();
  sstm_config_t c;
  sstm_test_config(&c);
  c.lock_bits = 28;
  const long page = sysconf(_SC_PAGESIZE);
  const long table = (long)(sizeof(uint64_t) << 28);
  long rss0 = statm_pages(1);
  CHECK_OK(sstm_init(&c));
  CHECK_OK(sstm_thread_init());
  for (int i = 0; i < 100; i++)
    CHECK_OK(sstm_run(NULL, lt_body, NULL));
  CHECK_EQ_U(lt_words[63], 100);
  long grown = (statm_pages(1) - rss0) * page;
  CHECK_MSG(grown < table / 32, "sstm_init with a %ld-byte lock table made %ld bytes resident",
            table, grown);
  long vm = statm_pages(0);
  CHECK_OK(sstm_thread_exit());
  CHECK_OK(sstm_shutdown());
  long unmapped = (vm - statm_pages(0)) * page;
  CHECK_MSG(unmapped >= table, "shutdown unmapped %ld bytes, the lock table has %ld", unmapped,
            table);
}
