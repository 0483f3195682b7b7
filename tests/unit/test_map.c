/* SPDX-License-Identifier: MIT */
/* Unit tests: thread mapping through the public API (schedstm/map.h):
 *  - off by default: no sampling, nothing pinned, "map=none";
 *  - the SCHEDSTM_MAP_* variables and the configuration checks, strictly;
 *  - a topology of one core disables mapping, reported;
 *  - pinning applied and read back (pthread_getaffinity_np) for a static
 *    strategy, and by stmap's evaluation; un-pinning when the heuristic
 *    turns mapping off (needs two cores: skipped on one);
 *  - stmap on an hwloc synthetic topology: communicating pairs placed
 *    under one package, threads joining and leaving while evaluations run
 *    (automatic ones, every few thousand accesses);
 *  - the matrix dump read back by the strategy "file", and a malformed
 *    file refused with its line in the message;
 *  - a process whose affinity allows one CPU (taskset) is single-core:
 *    mapping disabled, reported; a PU outside the allowed set falls back
 *    to the whole set;
 *  - re-mapping with hysteresis: applied after a phase change when the
 *    predicted gain exceeds map_gain_pct, kept otherwise;
 *  - threads that left (sstm_thread_exit) and live on: un-pinned when
 *    mapping turns off, and at sstm_shutdown (an affinity the program set
 *    since stands);
 *  - the trigger: a claim at a thread's exit, and one inside a transaction
 *    run when its attempt ends.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include <schedstm/map.h>
#include <schedstm/statetab.h>

#include "../common/txhelp.h"

static uint64_t words[64][8] __attribute__((aligned(64)));

static void base_config(sstm_config_t *c, sstm_map_strategy_t s) {
  sstm_test_config(c);
  c->map = s;
  c->map_si = 0; /* every access: the tests count exactly */
}

static void init_with(const sstm_config_t *c) { CHECK_OK(sstm_init(c)); }

/* ---- transactions of the workers ---- */

typedef struct work {
  uint64_t *a, *b;   /* the words it increments */
  unsigned n;        /* transactions */
  unsigned restarts; /* user restarts before each commit */
} work_t;

static _Thread_local unsigned attempt_no;

static void inc_body(void *p) {
  work_t *w = p;
  sstm_store_u64(w->a, sstm_load_u64(w->a) + 1);
  sstm_store_u64(w->b, sstm_load_u64(w->b) + 1);
  if (attempt_no++ < w->restarts) sstm_restart();
}

static void run_work(work_t *w) {
  for (unsigned i = 0; i < w->n; i++) {
    attempt_no = 0;
    CHECK_OK(sstm_run(NULL, inc_body, w));
  }
}

/* A worker: registers, waits at the gate, works, waits at the gate again
 * (the main thread evaluates and reads back meanwhile), and leaves when
 * released. */
typedef struct worker {
  pthread_t th;
  work_t w;
  pthread_barrier_t *gate;
  unsigned slot;
  int rounds; /* work, gate: how many times */
  _Atomic int registered;
} worker_t;

static void *worker_main(void *p) {
  worker_t *k = p;
  CHECK_OK(sstm_thread_init());
  k->slot = sstm_desc_slot(sstm_self());
  atomic_store_explicit(&k->registered, 1, memory_order_release);
  for (int r = 0; r < k->rounds; r++) {
    pthread_barrier_wait(k->gate);
    run_work(&k->w);
    pthread_barrier_wait(k->gate);
  }
  pthread_barrier_wait(k->gate); /* released */
  CHECK_OK(sstm_thread_exit());
  return NULL;
}

/* Start a worker and wait until it has registered: workers take their
 * slots in the order they are started. */
static void start_worker(worker_t *k) {
  atomic_init(&k->registered, 0);
  CHECK_EQ_I(pthread_create(&k->th, NULL, worker_main, k), 0);
  while (!atomic_load_explicit(&k->registered, memory_order_acquire))
    sched_yield();
}

static cpu_set_t affinity_of(pthread_t t) {
  cpu_set_t s;
  CPU_ZERO(&s);
  CHECK_EQ_I(pthread_getaffinity_np(t, sizeof s, &s), 0);
  return s;
}

static unsigned allowed_cpus(void) {
  cpu_set_t s;
  CHECK_EQ_I(sched_getaffinity(0, sizeof s, &s), 0);
  return (unsigned)CPU_COUNT(&s);
}

/* ---- off by default ---- */

TEST(off_by_default) {
  sstm_test_init();
  sstm_config_t c;
  CHECK_OK(sstm_config_get(&c));
  CHECK_EQ_I(c.map, SSTM_MAP_STRATEGY_NONE);
  CHECK_EQ_U(c.sample_period, 0);
  CHECK_EQ_U(c.map_si, SSTM_MAP_SI_DEFAULT);
  CHECK_EQ_U(c.map_mi, SSTM_MAP_MI_DEFAULT);
  CHECK_EQ_U(c.map_da_threshold, SSTM_MAP_DA_THRESHOLD_DEFAULT);
  char d[1024];
  CHECK_GT_I(sstm_describe(d, sizeof d), 0);
  CHECK_CONTAINS(d, " map=none");
  sstm_map_stats_t s;
  CHECK_OK(sstm_map_stats_get(&s));
  CHECK_EQ_I(s.strategy, SSTM_MAP_STRATEGY_NONE);
  CHECK_EQ_U(s.samples + s.mappings_applied, 0);
  CHECK_RC(sstm_map_thread_cpu(0, NULL, NULL, NULL), SSTM_EINVAL);
  CHECK_RC(sstm_map_evaluate(), SSTM_EINVAL);
  CHECK_RC(sstm_map_dump("/dev/null"), SSTM_EINVAL);
  CHECK_CONTAINS(sstm_last_error(), "no detection");
  sstm_test_fini();
  CHECK_RC(sstm_map_stats_get(&s), SSTM_ESTATE);
  CHECK_RC(sstm_map_stats_get_sized(&s, 8), SSTM_EINVAL);
}

/* A program built against 0.2's sstm_config_t (up to no_membarrier) gets
 * the mapping's defaults: off. Sizes between two layouts are refused. */
TEST(older_config_layout_means_no_mapping) {
  sstm_config_t c;
  base_config(&c, SSTM_MAP_STRATEGY_STMAP);
  c.size = offsetof(sstm_config_t, map);
  CHECK_OK(sstm_init(&c));
  sstm_config_t e;
  CHECK_OK(sstm_config_get(&e));
  CHECK_EQ_I(e.map, SSTM_MAP_STRATEGY_NONE);
  CHECK_EQ_U(e.sample_period, 0);
  CHECK_OK(sstm_shutdown());
  c.size = offsetof(sstm_config_t, map) + 8;
  CHECK_RC(sstm_init(&c), SSTM_EINVAL);
  CHECK_CONTAINS(sstm_last_error(), "size");
}

/* ---- names, knobs and checks ---- */

TEST(strategy_names) {
  for (int i = 0; i <= SSTM_MAP_STRATEGY_DETECT; i++) {
    sstm_map_strategy_t s;
    CHECK_OK(sstm_map_strategy_parse(sstm_map_strategy_name((sstm_map_strategy_t)i), &s));
    CHECK_EQ_I(s, i);
  }
  CHECK_EQ_STR(sstm_map_strategy_name(SSTM_MAP_STRATEGY_ROUND_ROBIN), "round-robin");
  CHECK_EQ_STR(sstm_map_strategy_name((sstm_map_strategy_t)99), "?");
  CHECK_RC(sstm_map_strategy_parse("STMAP", NULL), SSTM_EINVAL);
  CHECK_CONTAINS(sstm_last_error(), "none, compact, scatter, round-robin, file, stmap, detect");
  CHECK_RC(sstm_map_strategy_parse(NULL, NULL), SSTM_EINVAL);
}

static const char *const MAP_VARS[] = {
    "SCHEDSTM_MAP_STRATEGY",     "SCHEDSTM_MAP_SI",         "SCHEDSTM_MAP_MI",
    "SCHEDSTM_MAP_DA_THRESHOLD", "SCHEDSTM_MAP_TABLE_BITS", "SCHEDSTM_MAP_GAIN",
    "SCHEDSTM_MAP_FILE",         "SCHEDSTM_MAP_DUMP",       "SCHEDSTM_MAP_TOPOLOGY",
    "SCHEDSTM_MAP_TOPO_CACHE",   "SCHEDSTM_MAP_LOG"};

static void clear_map_env(void) {
  for (size_t i = 0; i < sizeof MAP_VARS / sizeof MAP_VARS[0]; i++)
    unsetenv(MAP_VARS[i]);
}

static void env_bad(const char *var, const char *val, const char *msg) {
  clear_map_env();
  setenv(var, val, 1);
  sstm_config_t c;
  sstm_config_default(&c);
  sstm_config_t before = c;
  CHECK_RC(sstm_config_from_env(&c), SSTM_EINVAL);
  CHECK_CONTAINS(sstm_last_error(), var);
  CHECK_CONTAINS(sstm_last_error(), msg);
  CHECK_EQ_MEM(&c, &before, sizeof c);
}

TEST(environment_is_strict) {
  env_bad("SCHEDSTM_MAP_STRATEGY", "tmap", "valid values: none, compact");
  env_bad("SCHEDSTM_MAP_SI", "-1", "[0, 1000000]");
  env_bad("SCHEDSTM_MAP_SI", "1000001", "[0, 1000000]");
  env_bad("SCHEDSTM_MAP_MI", "0", "[1, ");
  env_bad("SCHEDSTM_MAP_MI", "1099511627777", "[1, 1099511627776]");
  env_bad("SCHEDSTM_MAP_DA_THRESHOLD", "1e4", "decimal integer");
  /* Past the top of the range, and past an unsigned int, which the field
   * is: a value taken without the range check would wrap to 5. */
  env_bad("SCHEDSTM_MAP_DA_THRESHOLD", "2147483649", "[0, 2147483648]");
  env_bad("SCHEDSTM_MAP_DA_THRESHOLD", "4294967301", "[0, 2147483648]");
  env_bad("SCHEDSTM_MAP_TABLE_BITS", "9", "[10, 26]");
  env_bad("SCHEDSTM_MAP_TABLE_BITS", "27", "[10, 26]");
  env_bad("SCHEDSTM_MAP_GAIN", "101", "[0, 100]");
  env_bad("SCHEDSTM_MAP_FILE", "", "empty");
  env_bad("SCHEDSTM_MAP_DUMP", "", "empty");
  env_bad("SCHEDSTM_MAP_TOPOLOGY", "", "empty");
  env_bad("SCHEDSTM_MAP_TOPO_CACHE", "", "empty");
  /* A relative path is refused: the values a user tries for "no cache"
   * (OFF, 0, none, no) made a cache directory of that name in whatever
   * directory the program ran from. */
  env_bad("SCHEDSTM_MAP_TOPO_CACHE", "OFF", "an absolute directory");
  env_bad("SCHEDSTM_MAP_TOPO_CACHE", "0", "an absolute directory");
  env_bad("SCHEDSTM_MAP_TOPO_CACHE", "none", "an absolute directory");
  env_bad("SCHEDSTM_MAP_TOPO_CACHE", "cache/schedstm", "or off");
  env_bad("SCHEDSTM_MAP_LOG", "", "empty");
  clear_map_env();
  setenv("SCHEDSTM_MAP_STRATEGY", "round-robin", 1);
  setenv("SCHEDSTM_MAP_SI", "0", 1);
  setenv("SCHEDSTM_MAP_MI", "5000", 1);
  setenv("SCHEDSTM_MAP_DA_THRESHOLD", "77", 1);
  setenv("SCHEDSTM_MAP_TABLE_BITS", "12", 1);
  setenv("SCHEDSTM_MAP_GAIN", "0", 1);
  setenv("SCHEDSTM_MAP_FILE", "/x/y", 1);
  setenv("SCHEDSTM_MAP_DUMP", "/x/z", 1);
  setenv("SCHEDSTM_MAP_TOPOLOGY", "Core:2 PU:1", 1);
  setenv("SCHEDSTM_MAP_TOPO_CACHE", "off", 1);
  setenv("SCHEDSTM_MAP_LOG", "/x/log", 1);
  sstm_config_t c;
  sstm_config_default(&c);
  CHECK_OK(sstm_config_from_env(&c));
  CHECK_EQ_I(c.map, SSTM_MAP_STRATEGY_ROUND_ROBIN);
  CHECK_EQ_U(c.map_si, 0);
  CHECK_EQ_U(c.map_mi, 5000);
  CHECK_EQ_U(c.map_da_threshold, 77);
  CHECK_EQ_U(c.map_table_bits, 12);
  CHECK_EQ_U(c.map_gain_pct, 0);
  CHECK_EQ_STR(c.map_file, "/x/y");
  CHECK_EQ_STR(c.map_dump, "/x/z");
  CHECK_EQ_STR(c.map_topology, "Core:2 PU:1");
  CHECK_EQ_STR(c.map_topo_cache, ""); /* off: no cache */
  CHECK_EQ_STR(c.map_log, "/x/log");
  setenv("SCHEDSTM_MAP_TOPO_CACHE", "/x/cache", 1);
  CHECK_OK(sstm_config_from_env(&c));
  CHECK_EQ_STR(c.map_topo_cache, "/x/cache");
  clear_map_env();
}

static void init_bad(sstm_config_t *c, const char *msg) {
  CHECK_RC(sstm_init(c), SSTM_EINVAL);
  CHECK_CONTAINS(sstm_last_error(), msg);
  CHECK_FALSE(sstm_initialized());
}

static void sample_nop(void *arg, const void *addr, bool w) {
  (void)arg;
  (void)addr;
  (void)w;
}

TEST(configuration_is_checked) {
  sstm_config_t c;
  base_config(&c, SSTM_MAP_STRATEGY_FILE);
  init_bad(&c, "map_file");
  base_config(&c, SSTM_MAP_STRATEGY_STMAP);
  c.sample_period = 10;
  c.sample_fn = sample_nop;
  init_bad(&c, "sampling hook");
  base_config(&c, (sstm_map_strategy_t)7);
  init_bad(&c, "map 7");
  base_config(&c, SSTM_MAP_STRATEGY_DETECT);
  c.map_si = SSTM_MAP_SI_MAX + 1;
  init_bad(&c, "map_si");
  base_config(&c, SSTM_MAP_STRATEGY_DETECT);
  c.map_mi = 0;
  init_bad(&c, "map_mi");
  base_config(&c, SSTM_MAP_STRATEGY_DETECT);
  c.map_table_bits = 27;
  init_bad(&c, "map_table_bits");
  base_config(&c, SSTM_MAP_STRATEGY_STMAP);
  c.map_gain_pct = 101;
  init_bad(&c, "map_gain_pct");
  base_config(&c, SSTM_MAP_STRATEGY_COMPACT);
  c.map_topology = "Pakage:2 PU:2";
  init_bad(&c, "topology");
  base_config(&c, SSTM_MAP_STRATEGY_SCATTER);
  c.map_topology = "/nonexistent/dir/for/sure/";
  init_bad(&c, "topology");
  /* a path that names no file says so, not only that it is no synthetic
   * description */
  CHECK_CONTAINS(sstm_last_error(), "not an XML file to read either");
  base_config(&c, SSTM_MAP_STRATEGY_STMAP);
  c.map_topology = "Package:2 Core:2 PU:1";
  c.map_log = "/nonexistent/dir/for/sure/log";
  init_bad(&c, "map_log");
  CHECK_CONTAINS(sstm_last_error(), "/nonexistent/dir/for/sure/log");
  /* A dump that sstm_shutdown() could not write fails sstm_init, not the
   * shutdown (which would lose the run's matrix without a word). */
  base_config(&c, SSTM_MAP_STRATEGY_DETECT);
  c.map_dump = "/nonexistent/dir/for/sure/matrix";
  init_bad(&c, "map_dump");
  CHECK_CONTAINS(sstm_last_error(), "/nonexistent/dir/for/sure/matrix");
  base_config(&c, SSTM_MAP_STRATEGY_STMAP);
  c.map_topology = "Package:2 Core:2 PU:1";
  c.map_dump = "/tmp"; /* a directory */
  init_bad(&c, "map_dump");
  /* The cache directory is absolute, "" (none) or NULL (the default), as
   * SCHEDSTM_MAP_TOPO_CACHE; checked whatever the strategy, like the other
   * knobs. */
  base_config(&c, SSTM_MAP_STRATEGY_NONE);
  c.map_topo_cache = "0";
  init_bad(&c, "map_topo_cache '0'");
  base_config(&c, SSTM_MAP_STRATEGY_COMPACT);
  c.map_topology = "Package:2 Core:2 PU:1";
  c.map_topo_cache = "off";
  init_bad(&c, "an absolute directory");
  /* The library is left as if sstm_init had not been called. */
  base_config(&c, SSTM_MAP_STRATEGY_NONE);
  init_with(&c);
  CHECK_OK(sstm_shutdown());
}

TEST(single_core_disables_and_reports) {
  sstm_config_t c;
  base_config(&c, SSTM_MAP_STRATEGY_STMAP);
  c.map_topology = "Core:1 PU:2";
  init_with(&c);
  char d[1024];
  sstm_describe(d, sizeof d);
  CHECK_CONTAINS(d, "map=stmap(off: single core)");
  sstm_map_stats_t s;
  CHECK_OK(sstm_map_stats_get(&s));
  CHECK_TRUE(s.single_core);
  CHECK_EQ_I(s.strategy, SSTM_MAP_STRATEGY_STMAP);
  sstm_config_t e;
  CHECK_OK(sstm_config_get(&e));
  CHECK_EQ_U(e.sample_period, 0); /* no sampling at all */
  CHECK_OK(sstm_shutdown());
}

/* ---- pinning on the machine ---- */

static void need_two_cores(void) {
  if (allowed_cpus() < 2) sstm_test_skip("one CPU allowed: nothing to pin apart");
  sstm_config_t c;
  base_config(&c, SSTM_MAP_STRATEGY_COMPACT);
  init_with(&c);
  sstm_map_stats_t s;
  CHECK_OK(sstm_map_stats_get(&s));
  CHECK_OK(sstm_shutdown());
  if (s.single_core) sstm_test_skip("hwloc sees a single core");
}

TEST(static_strategy_pins_and_reads_back) {
  need_two_cores();
  cpu_set_t before = affinity_of(pthread_self());
  static const sstm_map_strategy_t st[] = {SSTM_MAP_STRATEGY_COMPACT, SSTM_MAP_STRATEGY_SCATTER,
                                           SSTM_MAP_STRATEGY_ROUND_ROBIN};
  for (size_t k = 0; k < 3; k++) {
    sstm_config_t c;
    base_config(&c, st[k]);
    init_with(&c);
    CHECK_OK(sstm_thread_init());
    unsigned slot = sstm_desc_slot(sstm_self());
    int cpu = -2, seen = -2, pu = -2;
    CHECK_OK(sstm_map_thread_cpu(slot, &cpu, &seen, &pu));
    CHECK_GE_I(cpu, 0);
    CHECK_GE_I(pu, 0);
    cpu_set_t a = affinity_of(pthread_self());
    CHECK_EQ_I(CPU_COUNT(&a), 1);
    CHECK_TRUE(CPU_ISSET(cpu, &a));
    CHECK_EQ_I(sched_getcpu(), cpu);
    CHECK_EQ_I(seen, cpu);
    /* A second thread gets a PU of its own (two or more allowed). */
    pthread_barrier_t gate;
    pthread_barrier_init(&gate, NULL, 2);
    worker_t w = {.w = {.a = words[0], .b = words[1], .n = 10}, .gate = &gate, .rounds = 1};
    start_worker(&w);
    pthread_barrier_wait(&gate);
    pthread_barrier_wait(&gate);
    int cpu2;
    CHECK_OK(sstm_map_thread_cpu(w.slot, &cpu2, NULL, NULL));
    cpu_set_t a2 = affinity_of(w.th);
    CHECK_EQ_I(CPU_COUNT(&a2), 1);
    CHECK_TRUE(CPU_ISSET(cpu2, &a2));
    CHECK_NE_I(cpu2, cpu);
    pthread_barrier_wait(&gate);
    pthread_join(w.th, NULL);
    pthread_barrier_destroy(&gate);
    sstm_map_stats_t s;
    CHECK_OK(sstm_map_stats_get(&s));
    CHECK_EQ_U(s.pin_errors, 0);
    CHECK_EQ_U(s.samples, 0); /* static: no detection */
    CHECK_OK(sstm_map_thread_cpu(slot, NULL, NULL, NULL));
    CHECK_RC(sstm_map_thread_cpu(w.slot, NULL, NULL, NULL), SSTM_EINVAL); /* it left */
    sstm_test_fini();
    /* shutdown gives the caller its set back */
    cpu_set_t after = affinity_of(pthread_self());
    CHECK_TRUE(CPU_EQUAL(&before, &after));
  }
}

/* The library initialised with strategy s (topology: NULL for the
 * machine's, or a simulated one), evaluated by sstm_map_evaluate only and
 * by the ratios alone, and the calling thread registered. */
static void init_evaluated_by_hand(sstm_map_strategy_t s, const char *topology) {
  sstm_config_t c;
  base_config(&c, s);
  if (topology) c.map_topology = topology;
  c.map_mi = SSTM_MAP_MI_MAX; /* evaluations by sstm_map_evaluate only */
  c.map_da_threshold = 0;     /* the ratios decide */
  init_with(&c);
  CHECK_OK(sstm_thread_init());
}

TEST(stmap_pins_then_unpins_when_heuristic_turns_off) {
  need_two_cores();
  cpu_set_t before = affinity_of(pthread_self());
  init_evaluated_by_hand(SSTM_MAP_STRATEGY_STMAP, NULL);
  pthread_barrier_t gate;
  pthread_barrier_init(&gate, NULL, 2);
  /* Round 1: each transaction aborts twice (user restarts) before it
   * commits: aborts > commits, mapping on. Round 2: commits only. */
  worker_t w = {
      .w = {.a = words[0], .b = words[1], .n = 200, .restarts = 2}, .gate = &gate, .rounds = 2};
  start_worker(&w);
  pthread_barrier_wait(&gate);
  work_t mine = {.a = words[0], .b = words[1], .n = 200, .restarts = 2};
  run_work(&mine);
  pthread_barrier_wait(&gate);
  CHECK_EQ_I(sstm_map_evaluate(), 1);
  sstm_map_stats_t s;
  CHECK_OK(sstm_map_stats_get(&s));
  CHECK_TRUE(s.enabled);
  CHECK_TRUE(s.applied);
  CHECK_EQ_U(s.mappings_applied, 1);
  CHECK_GT_U(s.events, 0);
  CHECK_EQ_U(s.pin_errors, 0);
  CHECK_EQ_U(s.threads, 2);
  unsigned slots[2] = {sstm_desc_slot(sstm_self()), w.slot};
  pthread_t ths[2] = {pthread_self(), w.th};
  for (int k = 0; k < 2; k++) {
    int cpu;
    CHECK_OK(sstm_map_thread_cpu(slots[k], &cpu, NULL, NULL));
    CHECK_GE_I(cpu, 0);
    cpu_set_t a = affinity_of(ths[k]);
    CHECK_EQ_I(CPU_COUNT(&a), 1);
    CHECK_TRUE(CPU_ISSET(cpu, &a));
  }
  /* A window with neither aborts nor commits: off, and unpinned. */
  CHECK_EQ_I(sstm_map_evaluate(), 0);
  CHECK_OK(sstm_map_stats_get(&s));
  CHECK_FALSE(s.applied);
  CHECK_EQ_U(s.unpins, 2);
  for (int k = 0; k < 2; k++) {
    int cpu;
    CHECK_OK(sstm_map_thread_cpu(slots[k], &cpu, NULL, NULL));
    CHECK_EQ_I(cpu, -1);
    cpu_set_t a = affinity_of(ths[k]);
    CHECK_TRUE(CPU_EQUAL(&a, &before));
  }
  /* Round 2 (commits only): stays off. The two threads work on words of
   * their own, so that no conflict aborts either (an abort ratio above the
   * commit ratio would turn mapping on). */
  w.w.restarts = 0;
  w.w.a = words[2];
  w.w.b = words[3];
  pthread_barrier_wait(&gate);
  mine.restarts = 0;
  run_work(&mine);
  pthread_barrier_wait(&gate);
  CHECK_EQ_I(sstm_map_evaluate(), 0);
  CHECK_OK(sstm_map_stats_get(&s));
  CHECK_EQ_U(s.decisions_on, 1);
  CHECK_EQ_U(s.decisions_off, 2);
  CHECK_EQ_U(s.evaluations, 3);
  pthread_barrier_wait(&gate);
  pthread_join(w.th, NULL);
  pthread_barrier_destroy(&gate);
  sstm_test_fini();
}

/* The two stats-reset cases' start: detection evaluated by
 * sstm_map_evaluate only, a first window of 150 commits and 50 aborts
 * (user restarts) judged off, then sstm_stats_reset(). *calm and
 * *restarting are the two kinds of work, for the windows after it. */
static void evaluate_then_reset(work_t *calm, work_t *restarting) {
  init_evaluated_by_hand(SSTM_MAP_STRATEGY_DETECT, "Package:2 Core:2 PU:1");
  *calm = (work_t){.a = words[0], .b = words[1], .n = 100};
  *restarting = (work_t){.a = words[0], .b = words[1], .n = 50, .restarts = 1};
  run_work(calm);
  run_work(restarting);
  CHECK_EQ_I(sstm_map_evaluate(), 0);
  CHECK_OK(sstm_stats_reset());
}

/* sstm_stats_reset() between two evaluations: the counters Equation 1
 * reads went down, so the next window's commits and aborts are the values
 * since the reset, not the difference from the previous evaluation's
 * (which wrapped to huge numbers and turned mapping on after a window
 * without a single abort). */
TEST(an_evaluation_after_a_stats_reset_judges_the_window_since_it) {
  work_t calm, restarting;
  evaluate_then_reset(&calm, &restarting);
  /* 10 commits and no abort since the reset: still off. */
  calm.n = 10;
  run_work(&calm);
  CHECK_EQ_I(sstm_map_evaluate(), 0);
  /* 10 commits and 20 aborts in the next window: on. */
  restarting.n = 10;
  restarting.restarts = 2;
  run_work(&restarting);
  CHECK_EQ_I(sstm_map_evaluate(), 1);
  sstm_map_stats_t s;
  CHECK_OK(sstm_map_stats_get(&s));
  CHECK_EQ_U(s.decisions_on, 1);
  CHECK_EQ_U(s.decisions_off, 2);
  sstm_test_fini();
}

/* Make every sched_setaffinity of the process fail with EINVAL, as the
 * kernel answers for a CPU that the cgroup's cpuset no longer holds (a
 * seccomp filter on every thread; the test's process ends with it). */
static void refuse_setaffinity(void) {
  struct sock_filter f[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_sched_setaffinity, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EINVAL),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog prog = {.len = sizeof f / sizeof f[0], .filter = f};
  CHECK_EQ_I(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
  if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog) != 0)
    sstm_test_skip("no seccomp filter here");
  cpu_set_t s = affinity_of(pthread_self());
  CHECK_EQ_I(pthread_setaffinity_np(pthread_self(), sizeof s, &s), EINVAL);
}

/* A pin the kernel refuses, and then the allowed set it falls back to,
 * leave the thread's record as the thread is: not placed, so the next
 * evaluation tries again. The record took the new PU anyway: the thread
 * was reported placed where it never ran, and an evaluation that computed
 * the same placement again tried nothing. */
TEST(a_refused_pin_leaves_the_thread_unplaced_and_is_tried_again) {
  need_two_cores();
  init_evaluated_by_hand(SSTM_MAP_STRATEGY_STMAP, NULL);
  pthread_barrier_t gate;
  pthread_barrier_init(&gate, NULL, 2);
  /* Two rounds in which every transaction aborts twice: on, both times. */
  worker_t w = {
      .w = {.a = words[0], .b = words[1], .n = 200, .restarts = 2}, .gate = &gate, .rounds = 2};
  start_worker(&w); /* registered: its first pin (the allowed set) took */
  refuse_setaffinity();
  work_t mine = {.a = words[0], .b = words[1], .n = 200, .restarts = 2};
  unsigned slots[2] = {sstm_desc_slot(sstm_self()), w.slot};
  for (unsigned round = 1; round <= 2; round++) {
    pthread_barrier_wait(&gate);
    run_work(&mine);
    pthread_barrier_wait(&gate);
    CHECK_EQ_I(sstm_map_evaluate(), 1);
    sstm_map_stats_t s;
    CHECK_OK(sstm_map_stats_get(&s));
    /* Each thread's pin and its fallback to the allowed set, each round. */
    CHECK_EQ_U(s.pin_errors, 4 * round);
    CHECK_EQ_U(s.migrations, 0);
    for (int k = 0; k < 2; k++) {
      int cpu, pu;
      CHECK_OK(sstm_map_thread_cpu(slots[k], &cpu, NULL, &pu));
      CHECK_EQ_I(cpu, -1);
      CHECK_EQ_I(pu, -1);
    }
  }
  pthread_barrier_wait(&gate);
  pthread_join(w.th, NULL);
  pthread_barrier_destroy(&gate);
  sstm_test_fini();
}

/* The same when the counts since the reset have passed those of the
 * previous evaluation by the next one (a long window): none went down,
 * but the window is still what was counted since the reset, not a
 * difference from counts the reset cleared. */
TEST(an_evaluation_after_a_stats_reset_judges_the_window_since_it_when_the_counts_grew_back) {
  work_t calm, restarting;
  evaluate_then_reset(&calm, &restarting);
  /* 160 commits and 140 aborts since the reset: off. As differences from
   * the counts before it, 10 commits and 90 aborts: on. */
  calm.n = 90;
  restarting.n = 70;
  restarting.restarts = 2;
  run_work(&calm);
  run_work(&restarting);
  CHECK_EQ_I(sstm_map_evaluate(), 0);
  sstm_test_fini();
}

/* The state table's entry of a slot (schedstm/statetab.h), found as a
 * reader finds it: the memfd among the process's descriptors. */
static const sstm_stt_entry_t *stt_entry(unsigned slot, void **map, size_t *len) {
  DIR *d = opendir("/proc/self/fd");
  CHECK_NOT_NULL(d);
  struct dirent *e;
  int fd = -1;
  while ((e = readdir(d)) != NULL && fd < 0) {
    char link[256], path[300];
    snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
    ssize_t n = readlink(path, link, sizeof link - 1);
    if (n <= 0) continue;
    link[n] = '\0';
    if (strcmp(link, SSTM_STT_FD_LINK) == 0) fd = open(path, O_RDONLY);
  }
  closedir(d);
  CHECK_GE_I(fd, 0);
  struct stat st;
  CHECK_EQ_I(fstat(fd, &st), 0);
  *len = (size_t)st.st_size;
  *map = mmap(NULL, *len, PROT_READ, MAP_SHARED, fd, 0);
  close(fd);
  CHECK(*map != MAP_FAILED);
  const sstm_stt_header_t *h = *map;
  CHECK_EQ_U(h->version, SSTM_STT_VERSION);
  CHECK_EQ_U(h->entry_size, sizeof(sstm_stt_entry_t));
  CHECK_LT_U(slot, h->nentries);
  return (const sstm_stt_entry_t *)((const char *)*map + h->header_size +
                                    (size_t)slot * h->entry_size);
}

TEST(state_table_shows_each_threads_cpu) {
  sstm_config_t c;
  base_config(&c, SSTM_MAP_STRATEGY_NONE);
  c.state_table = true;
  init_with(&c);
  CHECK_OK(sstm_thread_init());
  void *map;
  size_t len;
  const sstm_stt_entry_t *e = stt_entry(sstm_desc_slot(sstm_self()), &map, &len);
  CHECK_EQ_I(e->cpu, -1); /* no mapping: not followed */
  CHECK_EQ_I(e->cpu_pinned, -1);
  munmap(map, len);
  sstm_test_fini();
  need_two_cores();
  base_config(&c, SSTM_MAP_STRATEGY_COMPACT);
  c.state_table = true;
  init_with(&c);
  CHECK_OK(sstm_thread_init());
  int cpu;
  CHECK_OK(sstm_map_thread_cpu(sstm_desc_slot(sstm_self()), &cpu, NULL, NULL));
  e = stt_entry(sstm_desc_slot(sstm_self()), &map, &len);
  CHECK_EQ_I(e->cpu_pinned, cpu);
  CHECK_EQ_I(e->cpu, cpu); /* pinned there, seen there */
  munmap(map, len);
  sstm_test_fini();
}

/* ---- stmap on a synthetic topology ---- */

TEST(pairs_share_a_package_on_a_synthetic_topology) {
  sstm_config_t c;
  base_config(&c, SSTM_MAP_STRATEGY_STMAP);
  c.map_topology = "Package:2 Core:2 PU:1";
  c.map_mi = SSTM_MAP_MI_MAX;
  init_with(&c);
  enum { T = 4 };
  pthread_barrier_t gate;
  pthread_barrier_init(&gate, NULL, T + 1);
  worker_t w[T];
  /* Pairs {0, 3} and {1, 2} (by start order): each pair on its own words. */
  static const unsigned pair_of[T] = {0, 1, 1, 0};
  for (unsigned t = 0; t < T; t++) {
    w[t] =
        (worker_t){.w = {.a = words[8 + 2 * pair_of[t]], .b = words[9 + 2 * pair_of[t]], .n = 300},
                   .gate = &gate,
                   .rounds = 1};
    start_worker(&w[t]);
  }
  pthread_barrier_wait(&gate);
  pthread_barrier_wait(&gate);
  CHECK_EQ_I(sstm_map_evaluate(), 1); /* 4 distinct addresses < 10000 */
  int pu[T];
  for (unsigned t = 0; t < T; t++) {
    int cpu;
    CHECK_OK(sstm_map_thread_cpu(w[t].slot, &cpu, NULL, &pu[t]));
    CHECK_EQ_I(cpu, -1); /* simulated: nothing pinned */
    CHECK_GE_I(pu[t], 0);
    CHECK_LT_I(pu[t], 4);
  }
  /* One package (PUs 0-1 or 2-3) per pair. */
  CHECK_EQ_I(pu[0] / 2, pu[3] / 2);
  CHECK_EQ_I(pu[1] / 2, pu[2] / 2);
  CHECK_NE_I(pu[0] / 2, pu[1] / 2);
  uint64_t m[T * T];
  unsigned n = (unsigned)sstm_map_matrix(NULL, 0);
  CHECK_EQ_U(n, T);
  CHECK_EQ_I(sstm_map_matrix(m, T), T);
  CHECK_GT_U(m[w[0].slot * T + w[3].slot], 0);
  CHECK_EQ_U(m[w[0].slot * T + w[1].slot], 0);
  sstm_map_stats_t s;
  CHECK_OK(sstm_map_stats_get(&s));
  CHECK_TRUE(s.simulated);
  CHECK_EQ_U(s.migrations + s.pin_errors, 0);
  char d[1024];
  sstm_describe(d, sizeof d);
  CHECK_CONTAINS(d, "map=stmap(simulated)");
  pthread_barrier_wait(&gate);
  for (unsigned t = 0; t < T; t++)
    pthread_join(w[t].th, NULL);
  pthread_barrier_destroy(&gate);
  CHECK_OK(sstm_shutdown());
}

/* Waves of threads that join, work in a ring (thread k shares words with
 * k + 1) and leave, overlapping: wave v registers and starts while wave
 * v - 1 still runs, and wave v - 1 leaves while wave v runs; automatic
 * evaluations every few thousand accesses meanwhile. */
typedef struct ring_arg {
  unsigned k, txs;
  pthread_barrier_t *go;    /* the wave (and main): all registered */
  pthread_barrier_t *leave; /* the wave (and main): the next wave runs */
} ring_arg_t;

static void ring_body(void *p) {
  ring_arg_t *r = p;
  uint64_t *mine = words[16 + r->k % 32], *next = words[16 + (r->k + 1) % 32];
  sstm_store_u64(mine, sstm_load_u64(mine) + 1);
  sstm_store_u64(next, sstm_load_u64(next) + 1);
}

static void *ring_main(void *p) {
  ring_arg_t *r = p;
  CHECK_OK(sstm_thread_init());
  pthread_barrier_wait(r->go);
  for (unsigned i = 0; i < r->txs; i++)
    CHECK_OK(sstm_run(NULL, ring_body, r));
  pthread_barrier_wait(r->leave);
  CHECK_OK(sstm_thread_exit());
  return NULL;
}

TEST(threads_join_and_leave_while_mapping) {
  sstm_config_t c;
  base_config(&c, SSTM_MAP_STRATEGY_STMAP);
  c.map_topology = "Package:2 Core:4 PU:2";
  c.map_mi = 2000;
  c.max_threads = 64;
  init_with(&c);
  enum { WAVES = 4, PER = 6 };
  pthread_t th[WAVES][PER];
  ring_arg_t args[WAVES][PER];
  pthread_barrier_t go[WAVES], leave[WAVES];
  unsigned txs = (unsigned)sstm_test_scaled(3000, 500);
  for (unsigned v = 0; v < WAVES; v++) {
    pthread_barrier_init(&go[v], NULL, PER + 1);
    pthread_barrier_init(&leave[v], NULL, PER + 1);
    for (unsigned i = 0; i < PER; i++) {
      args[v][i] = (ring_arg_t){.k = v * PER + i, .txs = txs, .go = &go[v], .leave = &leave[v]};
      CHECK_EQ_I(pthread_create(&th[v][i], NULL, ring_main, &args[v][i]), 0);
    }
    pthread_barrier_wait(&go[v]); /* wave v registered: it runs */
    if (v > 0) {                  /* the previous wave leaves while this one runs */
      pthread_barrier_wait(&leave[v - 1]);
      for (unsigned i = 0; i < PER; i++)
        pthread_join(th[v - 1][i], NULL);
    }
  }
  pthread_barrier_wait(&leave[WAVES - 1]);
  for (unsigned i = 0; i < PER; i++)
    pthread_join(th[WAVES - 1][i], NULL);
  for (unsigned v = 0; v < WAVES; v++) {
    pthread_barrier_destroy(&go[v]);
    pthread_barrier_destroy(&leave[v]);
  }
  sstm_map_stats_t s;
  CHECK_OK(sstm_map_stats_get(&s));
  CHECK_EQ_U(s.threads, 0);
  CHECK_GT_U(s.evaluations, 0);
  /* An "on" evaluation computes a mapping when it finds threads to map;
   * one run at the exit of a wave's last thread may find none. */
  CHECK_LE_U(s.mappings_computed, s.decisions_on);
  CHECK_GT_U(s.mappings_computed, 0);
  CHECK_EQ_U(s.decisions_on + s.decisions_off, s.evaluations);
  CHECK_EQ_U(s.pin_errors, 0);
  CHECK_GE_U(s.accesses, (uint64_t)WAVES * PER * txs * 4); /* flushed at every exit */
  /* Every thread is gone: no slot is followed any more. */
  for (unsigned slot = 0; slot < 64; slot++)
    CHECK_RC(sstm_map_thread_cpu(slot, NULL, NULL, NULL), SSTM_EINVAL);
  CHECK_OK(sstm_shutdown());
}

/* ---- the matrix file ---- */

/* sstm_init's check of cfg.map_dump leaves the path as it found it: an
 * existing file keeps its bytes until the shutdown rewrites it, a missing
 * one is not created; a strategy without detection writes no dump and
 * does not check it. */
TEST(the_dump_path_is_checked_at_init_and_left_as_it_was) {
  char path[] = "/tmp/sstm-map-XXXXXX";
  int fd = mkstemp(path);
  CHECK_GE_I(fd, 0);
  CHECK_EQ_I((int)write(fd, "old", 3), 3);
  close(fd);
  sstm_config_t c;
  base_config(&c, SSTM_MAP_STRATEGY_DETECT);
  c.map_dump = path;
  init_with(&c);
  struct stat st;
  CHECK_EQ_I(stat(path, &st), 0);
  CHECK_EQ_I((int)st.st_size, 3);
  CHECK_OK(sstm_shutdown());
  CHECK_EQ_I(unlink(path), 0); /* the dump replaced it; a missing path now */
  init_with(&c);
  CHECK_EQ_I(stat(path, &st), -1);
  CHECK_OK(sstm_shutdown());
  CHECK_EQ_I(stat(path, &st), 0); /* written at the shutdown */
  CHECK_EQ_I(unlink(path), 0);
  base_config(&c, SSTM_MAP_STRATEGY_NONE);
  c.map_dump = "/nonexistent/dir/for/sure/matrix"; /* ignored without detection */
  init_with(&c);
  CHECK_OK(sstm_shutdown());
}

TEST(dump_then_map_from_the_file) {
  char path[] = "/tmp/sstm-map-XXXXXX";
  int fd = mkstemp(path);
  CHECK_GE_I(fd, 0);
  close(fd);
  sstm_config_t c;
  base_config(&c, SSTM_MAP_STRATEGY_DETECT);
  c.map_topology = "Package:2 Core:2 PU:1";
  c.map_dump = path; /* written at shutdown */
  init_with(&c);
  enum { T = 4 };
  pthread_barrier_t gate;
  pthread_barrier_init(&gate, NULL, T + 1);
  worker_t w[T];
  static const unsigned pair_of[T] = {0, 1, 0, 1};
  for (unsigned t = 0; t < T; t++) {
    w[t] = (worker_t){
        .w = {.a = words[40 + 2 * pair_of[t]], .b = words[41 + 2 * pair_of[t]], .n = 200},
        .gate = &gate,
        .rounds = 1};
    start_worker(&w[t]);
  }
  pthread_barrier_wait(&gate);
  pthread_barrier_wait(&gate);
  uint64_t m[T * T];
  CHECK_EQ_I(sstm_map_matrix(m, T), T);
  CHECK_EQ_I(sstm_map_evaluate(), 1); /* detect: decides, pins nothing */
  int pu;
  CHECK_OK(sstm_map_thread_cpu(w[0].slot, NULL, NULL, &pu));
  CHECK_EQ_I(pu, -1);
  CHECK_RC(sstm_map_dump("/nonexistent-dir/x"), SSTM_EPERM);
  pthread_barrier_wait(&gate);
  for (unsigned t = 0; t < T; t++)
    pthread_join(w[t].th, NULL);
  pthread_barrier_destroy(&gate);
  CHECK_OK(sstm_shutdown());
  /* The file has the matrix as it was (the threads have not run since). */
  FILE *f = fopen(path, "r");
  CHECK_NOT_NULL(f);
  char line[4096];
  unsigned rows = 0, n = 0;
  while (fgets(line, sizeof line, f)) {
    if (line[0] == '#' || line[0] == '\n') continue;
    if (sscanf(line, "threads %u", &n) == 1 || strncmp(line, "schedstm-comm-matrix", 20) == 0)
      continue;
    char *p = line;
    for (unsigned j = 0; j < T; j++) {
      unsigned long long v = strtoull(p, &p, 10);
      CHECK_EQ_U(v, m[rows * T + j]);
    }
    rows++;
  }
  fclose(f);
  CHECK_EQ_U(n, T);
  CHECK_EQ_U(rows, T);
  /* The strategy "file" maps from it: the pairs under one package. */
  base_config(&c, SSTM_MAP_STRATEGY_FILE);
  c.map_topology = "Package:2 Core:2 PU:1";
  c.map_file = path;
  init_with(&c);
  pthread_barrier_init(&gate, NULL, T + 1);
  for (unsigned t = 0; t < T; t++) {
    w[t].w.n = 1;
    start_worker(&w[t]);
  }
  pthread_barrier_wait(&gate);
  pthread_barrier_wait(&gate);
  int p[T];
  for (unsigned t = 0; t < T; t++)
    CHECK_OK(sstm_map_thread_cpu(w[t].slot, NULL, NULL, &p[t]));
  CHECK_EQ_I(p[0] / 2, p[2] / 2);
  CHECK_EQ_I(p[1] / 2, p[3] / 2);
  CHECK_NE_I(p[0] / 2, p[1] / 2);
  pthread_barrier_wait(&gate);
  for (unsigned t = 0; t < T; t++)
    pthread_join(w[t].th, NULL);
  pthread_barrier_destroy(&gate);
  CHECK_OK(sstm_shutdown());
  /* A malformed file: refused, with where. */
  f = fopen(path, "w");
  CHECK_NOT_NULL(f);
  fprintf(f, "schedstm-comm-matrix 1\nthreads 2\n0 1\n2 0\n");
  fclose(f);
  CHECK_RC(sstm_init(&c), SSTM_EINVAL);
  CHECK_CONTAINS(sstm_last_error(), "matrix file");
  CHECK_CONTAINS(sstm_last_error(), path);
  CHECK_FALSE(sstm_initialized());
  c.map_file = "/nonexistent/matrix";
  CHECK_RC(sstm_init(&c), SSTM_EINVAL);
  CHECK_CONTAINS(sstm_last_error(), "/nonexistent/matrix");
  unlink(path);
}

/* ---- the machine's CPUs: a process allowed one, a PU not allowed ---- */

/* A temporary directory for a topology cache; removed by rm_dir. */
static void make_dir(char *tmpl) { CHECK_NOT_NULL(mkdtemp(tmpl)); }

static void rm_dir(const char *dir) {
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  CHECK_EQ_I(system(cmd), 0);
}

/* A process started under `taskset -c N` (here: its affinity set to one
 * CPU before sstm_init) has one core to run on, whatever hwloc's allowed
 * set holds: every pinning strategy is disabled and says so, with the
 * topology from hwloc and then from the cache (which is keyed by the
 * CPU set). Nothing is pinned: the thread keeps its one CPU. */
TEST(one_cpu_by_affinity_disables_and_reports) {
  cpu_set_t allowed;
  CHECK_EQ_I(sched_getaffinity(0, sizeof allowed, &allowed), 0);
  int c0 = 0;
  while (!CPU_ISSET(c0, &allowed))
    c0++;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(c0, &one);
  CHECK_EQ_I(sched_setaffinity(0, sizeof one, &one), 0);
  char dir[] = "/tmp/sstm-map-cache-XXXXXX";
  make_dir(dir);
  static const struct {
    sstm_map_strategy_t s;
    const char *want, *from;
  } runs[] = {
      {SSTM_MAP_STRATEGY_COMPACT, "map=compact(off: single core)", "hwloc (cached)"},
      {SSTM_MAP_STRATEGY_STMAP, "map=stmap(off: single core)", "map-topo-from=\"cache\""},
      {SSTM_MAP_STRATEGY_ROUND_ROBIN, "map=round-robin(off: single core)", "\"cache\""},
  };
  for (size_t k = 0; k < sizeof runs / sizeof runs[0]; k++) {
    sstm_config_t c;
    base_config(&c, runs[k].s);
    c.map_topo_cache = dir;
    init_with(&c);
    CHECK_OK(sstm_thread_init());
    char d[2048];
    CHECK_GT_I(sstm_describe(d, sizeof d), 0);
    CHECK_CONTAINS(d, runs[k].want);
    CHECK_CONTAINS(d, runs[k].from);
    sstm_map_stats_t s;
    CHECK_OK(sstm_map_stats_get(&s));
    CHECK_TRUE(s.single_core);
    CHECK_FALSE(s.applied);
    sstm_config_t e;
    CHECK_OK(sstm_config_get(&e));
    CHECK_EQ_U(e.sample_period, 0); /* stmap: no sampling either */
    /* Disabled: threads are not followed at all. */
    CHECK_RC(sstm_map_thread_cpu(sstm_desc_slot(sstm_self()), NULL, NULL, NULL), SSTM_EINVAL);
    cpu_set_t a = affinity_of(pthread_self());
    CHECK_TRUE(CPU_EQUAL(&a, &one));
    sstm_test_fini();
  }
  CHECK_EQ_I(sched_setaffinity(0, sizeof allowed, &allowed), 0);
  rm_dir(dir);
}

/* The documented fallback for a thread without a CPU of its own: a PU
 * whose OS CPU is not in the set the process was allowed at sstm_init
 * gives the thread that whole set (pin_fallbacks). Built from a topology
 * cache file whose PUs name CPUs outside the set (as after a cgroup
 * change the cache key cannot see). */
TEST(a_pu_outside_the_allowed_set_falls_back_to_the_set) {
  need_two_cores();
  cpu_set_t before = affinity_of(pthread_self());
  char dir[] = "/tmp/sstm-map-cache-XXXXXX";
  make_dir(dir);
  sstm_config_t c;
  base_config(&c, SSTM_MAP_STRATEGY_COMPACT);
  c.map_topo_cache = dir;
  init_with(&c); /* writes the cache file */
  CHECK_OK(sstm_shutdown());
  DIR *dd = opendir(dir);
  CHECK_NOT_NULL(dd);
  struct dirent *de;
  char path[512] = "";
  while ((de = readdir(dd)) != NULL)
    if (de->d_name[0] != '.') snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
  closedir(dd);
  CHECK_MSG(path[0] != '\0', "no cache file in %s", dir);
  /* Rewrite each PU line's OS index (its first number) to a CPU outside
   * the allowed set, distinct from one line to the next. */
  FILE *f = fopen(path, "r");
  CHECK_NOT_NULL(f);
  char text[1 << 16], line[4096];
  size_t at = 0;
  bool in_pus = false;
  int next_cpu = 0;
  unsigned rewritten = 0;
  while (fgets(line, sizeof line, f)) {
    if (in_pus && strcmp(line, "end\n") != 0) {
      while (CPU_ISSET(next_cpu, &before))
        next_cpu++;
      CHECK_LT_I(next_cpu, CPU_SETSIZE);
      at += (size_t)snprintf(text + at, sizeof text - at, "%d%s", next_cpu++, strchr(line, ' '));
      rewritten++;
      continue;
    }
    if (strncmp(line, "pus ", 4) == 0) in_pus = true;
    at += (size_t)snprintf(text + at, sizeof text - at, "%s", line);
    CHECK_LT_U(at, sizeof text);
  }
  fclose(f);
  CHECK_GE_U(rewritten, 2);
  f = fopen(path, "w");
  CHECK_NOT_NULL(f);
  CHECK_EQ_U(fwrite(text, 1, at, f), at);
  CHECK_EQ_I(fclose(f), 0);
  init_with(&c);
  char d[2048];
  sstm_describe(d, sizeof d);
  CHECK_CONTAINS(d, "map-topo-from=\"cache\""); /* the edited file was taken */
  CHECK_OK(sstm_thread_init());
  int cpu = -2, pu = -2;
  CHECK_OK(sstm_map_thread_cpu(sstm_desc_slot(sstm_self()), &cpu, NULL, &pu));
  CHECK_EQ_I(pu, 0);   /* compact: index 0 on PU 0 */
  CHECK_EQ_I(cpu, -1); /* ... whose CPU is not allowed: not pinned to one */
  cpu_set_t a = affinity_of(pthread_self());
  CHECK_TRUE(CPU_EQUAL(&a, &before)); /* the whole set */
  sstm_map_stats_t s;
  CHECK_OK(sstm_map_stats_get(&s));
  CHECK_EQ_U(s.pin_fallbacks, 1);
  CHECK_EQ_U(s.pin_errors, 0);
  sstm_test_fini();
  rm_dir(dir);
}

/* ---- re-mapping with hysteresis ---- */

/* Four workers on a synthetic 2 packages x 2 cores: phase 1 pairs {0, 1}
 * and {2, 3} share words, phase 2 (twenty times as many transactions) pairs
 * {0, 2} and {1, 3}. Every access is sampled; a worker shares only with
 * its partner, so the cross-pair cells stay 0 whatever the interleaving.
 * After phase 1 a mapping is applied; evaluated again with nothing new,
 * the same placement is computed and kept (no gain). After phase 2 the
 * new pairs cost, in the placement of phase 1, A + 2B (A the phase-1
 * weight, B the phase-2 weight: every access to a shared word after both
 * partners touched it counts one event, so B is 10 to 20 times A without
 * aborts, and still above 2A with phase 1 at 3 aborts per commit and
 * phase 2 at none), against B + 2A re-mapped: a predicted gain above 10 %
 * from B > 1.375 A on. With map_gain_pct 10 it is applied and
 * the new pairs share a package; with 100 nothing can gain enough, and
 * the placement of phase 1 stays. */
static void remap_run(unsigned gain_pct, sstm_map_stats_t *s, int pu[4]) {
  sstm_config_t c;
  base_config(&c, SSTM_MAP_STRATEGY_STMAP);
  c.map_topology = "Package:2 Core:2 PU:1";
  c.map_mi = SSTM_MAP_MI_MAX; /* evaluations by sstm_map_evaluate only */
  c.map_gain_pct = gain_pct;
  init_with(&c);
  enum { T = 4 };
  pthread_barrier_t gate;
  pthread_barrier_init(&gate, NULL, T + 1);
  worker_t w[T];
  static const unsigned pair1[T] = {0, 0, 1, 1}, pair2[T] = {2, 3, 2, 3};
  for (unsigned t = 0; t < T; t++) {
    w[t] = (worker_t){.w = {.a = words[48 + 2 * pair1[t]], .b = words[49 + 2 * pair1[t]], .n = 50},
                      .gate = &gate,
                      .rounds = 2};
    start_worker(&w[t]);
  }
  pthread_barrier_wait(&gate); /* phase 1 runs */
  pthread_barrier_wait(&gate);
  CHECK_EQ_I(sstm_map_evaluate(), 1);
  CHECK_OK(sstm_map_stats_get(s));
  CHECK_EQ_U(s->mappings_applied, 1);
  for (unsigned t = 0; t < T; t++)
    CHECK_OK(sstm_map_thread_cpu(w[t].slot, NULL, NULL, &pu[t]));
  CHECK_EQ_I(pu[0] / 2, pu[1] / 2);
  CHECK_EQ_I(pu[2] / 2, pu[3] / 2);
  CHECK_NE_I(pu[0] / 2, pu[2] / 2);
  CHECK_EQ_I(sstm_map_evaluate(), 1); /* nothing new: the same placement, kept */
  CHECK_OK(sstm_map_stats_get(s));
  CHECK_EQ_U(s->mappings_applied, 1);
  CHECK_EQ_U(s->mappings_kept, 1);
  for (unsigned t = 0; t < T; t++) {
    w[t].w.a = words[48 + 2 * pair2[t]];
    w[t].w.b = words[49 + 2 * pair2[t]];
    w[t].w.n = 1000;
  }
  pthread_barrier_wait(&gate); /* phase 2 runs */
  pthread_barrier_wait(&gate);
  CHECK_EQ_I(sstm_map_evaluate(), 1);
  CHECK_OK(sstm_map_stats_get(s));
  for (unsigned t = 0; t < T; t++)
    CHECK_OK(sstm_map_thread_cpu(w[t].slot, NULL, NULL, &pu[t]));
  pthread_barrier_wait(&gate); /* released */
  for (unsigned t = 0; t < T; t++)
    pthread_join(w[t].th, NULL);
  pthread_barrier_destroy(&gate);
  CHECK_EQ_U(s->mappings_computed, 3);
  CHECK_EQ_U(s->evaluations, 3);
  CHECK_EQ_U(s->pin_errors, 0);
  CHECK_OK(sstm_shutdown());
}

TEST(remaps_only_when_the_predicted_gain_exceeds_the_threshold) {
  sstm_map_stats_t s;
  int pu[4];
  remap_run(10, &s, pu);
  CHECK_EQ_U(s.mappings_applied, 2);
  CHECK_EQ_U(s.mappings_kept, 1);
  CHECK_EQ_I(pu[0] / 2, pu[2] / 2); /* the new pairs share a package */
  CHECK_EQ_I(pu[1] / 2, pu[3] / 2);
  CHECK_NE_I(pu[0] / 2, pu[1] / 2);
  remap_run(100, &s, pu);
  CHECK_EQ_U(s.mappings_applied, 1);
  CHECK_EQ_U(s.mappings_kept, 2);
  CHECK_EQ_I(pu[0] / 2, pu[1] / 2); /* phase 1's placement stays */
  CHECK_EQ_I(pu[2] / 2, pu[3] / 2);
}

SSTM_TEST_MAIN()

/* ---- rows keyed by thread ---- */

/* A pool of workers that register for each phase and leave, one at a time
 * (as STAMP's workers do when there are more of them than CPUs): each
 * operating-system thread is one row, whatever descriptor slot it gets in
 * each phase. Workers 2k and 2k+1 share a word; phases run one worker at a
 * time in turn, so at most one worker is registered at any moment. */
enum { POOL = 4, PHASES = 3 };
static struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  unsigned turn; /* phase * POOL + worker whose turn it is */
} pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};

static void *pool_main(void *p) {
  unsigned k = (unsigned)(uintptr_t)p;
  work_t w = {.a = &words[k / 2][0], .b = &words[k / 2][1], .n = 3};
  for (unsigned ph = 0; ph < PHASES; ph++) {
    pthread_mutex_lock(&pool.mu);
    while (pool.turn != ph * POOL + k)
      pthread_cond_wait(&pool.cv, &pool.mu);
    pthread_mutex_unlock(&pool.mu);
    CHECK_OK(sstm_thread_init());
    run_work(&w);
    CHECK_OK(sstm_thread_exit());
    pthread_mutex_lock(&pool.mu);
    pool.turn++;
    pthread_cond_broadcast(&pool.cv);
    pthread_mutex_unlock(&pool.mu);
  }
  return NULL;
}

TEST(a_thread_that_registers_again_keeps_its_row) {
  sstm_config_t c;
  base_config(&c, SSTM_MAP_STRATEGY_DETECT);
  c.map_mi = 1ull << 40; /* no evaluation: the matrix only */
  c.max_threads = 8;
  init_with(&c);
  pool.turn = 0;
  pthread_t th[POOL];
  for (unsigned k = 0; k < POOL; k++)
    CHECK_EQ_I(pthread_create(&th[k], NULL, pool_main, (void *)(uintptr_t)k), 0);
  for (unsigned k = 0; k < POOL; k++)
    CHECK_EQ_I(pthread_join(th[k], NULL), 0);
  /* The workers first registered in turn 0..3: indices 0..3. */
  uint64_t m[8 * 8];
  CHECK_EQ_I(sstm_map_matrix(m, 8), POOL);
  for (unsigned i = 0; i < POOL; i++)
    for (unsigned j = 0; j < POOL; j++) {
      bool partners = i != j && i / 2 == j / 2;
      CHECK_MSG(partners ? m[i * 8 + j] > 0 : m[i * 8 + j] == 0,
                "matrix (%u, %u) = %llu: only partners (2k, 2k+1) share a word", i, j,
                (unsigned long long)m[i * 8 + j]);
    }
  CHECK_OK(sstm_shutdown());
}

/* With every index held by a thread that has ended, a newcomer reuses one
 * and its row starts clean; while the holders are alive, it is not
 * followed. */
static void *register_and_share(void *p) {
  work_t *w = p;
  CHECK_OK(sstm_thread_init());
  run_work(w);
  CHECK_OK(sstm_thread_exit());
  return NULL;
}

TEST(an_ended_threads_index_goes_to_a_newcomer) {
  sstm_config_t c;
  base_config(&c, SSTM_MAP_STRATEGY_DETECT);
  c.map_mi = 1ull << 40;
  c.max_threads = 2;
  init_with(&c);
  CHECK_OK(sstm_thread_init()); /* this thread: index 0, kept while it lives */
  work_t w = {.a = &words[10][0], .b = &words[10][1], .n = 2};
  run_work(&w);
  pthread_t t;
  CHECK_EQ_I(pthread_create(&t, NULL, register_and_share, &w), 0); /* index 1 */
  CHECK_EQ_I(pthread_join(t, NULL), 0);
  uint64_t m[2 * 2];
  CHECK_EQ_I(sstm_map_matrix(m, 2), 2);
  CHECK_GT_U(m[0 * 2 + 1], 0);
  /* Index 1's thread has ended: the next thread takes it with a clean row
   * and shares nothing with index 0 (other words). */
  work_t w2 = {.a = &words[11][0], .b = &words[11][1], .n = 2};
  CHECK_EQ_I(pthread_create(&t, NULL, register_and_share, &w2), 0);
  CHECK_EQ_I(pthread_join(t, NULL), 0);
  CHECK_EQ_I(sstm_map_matrix(m, 2), 2);
  CHECK_EQ_U(m[0 * 2 + 1], 0);
  sstm_map_stats_t s;
  CHECK_OK(sstm_map_stats_get(&s));
  CHECK_EQ_U(s.threads, 1); /* this thread */
  CHECK_OK(sstm_thread_exit());
  CHECK_OK(sstm_shutdown());
}

/* The map API called by a thread that is not registered while the library
 * shuts down and starts again (a monitor thread reading the statistics):
 * each call returns a value or SSTM_ESTATE, never reads the tables that
 * sstm_shutdown() frees and unmaps (the matrix is an anonymous mapping: a
 * read after its unmapping is a SIGSEGV, in every build). */
static _Atomic int q_stop;

static void *map_querier(void *arg) {
  (void)arg;
  uint64_t m[4 * 4];
  while (!atomic_load_explicit(&q_stop, memory_order_relaxed)) {
    sstm_map_stats_t s;
    int rc = sstm_map_stats_get(&s);
    CHECK(rc == 0 || rc == SSTM_ESTATE);
    rc = sstm_map_thread_cpu(0, NULL, NULL, NULL);
    CHECK(rc == 0 || rc == SSTM_ESTATE || rc == SSTM_EINVAL);
    rc = sstm_map_matrix(m, 4);
    CHECK(rc >= 0 || rc == SSTM_ESTATE || rc == SSTM_EINVAL);
  }
  return NULL;
}

TEST(queries_while_the_library_shuts_down_and_starts_again) {
  char dir[] = "/tmp/sstm-map-cache-XXXXXX";
  make_dir(dir); /* hwloc once, then the cache: a fast sstm_init */
  atomic_store_explicit(&q_stop, 0, memory_order_relaxed); /* before the thread starts */
  pthread_t q;
  CHECK_EQ_I(pthread_create(&q, NULL, map_querier, NULL), 0);
  unsigned rounds = sstm_test_long_mode() ? 20000 : 2000;
  for (unsigned i = 0; i < rounds; i++) {
    sstm_config_t c;
    base_config(&c, SSTM_MAP_STRATEGY_DETECT);
    c.map_topo_cache = dir;
    c.max_threads = 4;
    init_with(&c);
    CHECK_OK(sstm_thread_init());
    work_t w = {.a = &words[12][0], .b = &words[12][1], .n = 1};
    run_work(&w);
    sstm_test_fini();
  }
  atomic_store_explicit(&q_stop, 1, memory_order_relaxed); /* a flag: the join orders the rest */
  CHECK_EQ_I(pthread_join(q, NULL), 0);
  rm_dir(dir);
}

/* ---- pins left on threads that left ---- */

/* A thread that registers, works, leaves (sstm_thread_exit) and lives on,
 * stepped by the main thread through `gate`: each step between two waits. */
typedef struct leaver {
  pthread_t th;
  work_t w;
  pthread_barrier_t *gate;
  unsigned slot;
  bool again;  /* register a second time after the main thread's step */
  int own_cpu; /* >= 0: after leaving, pin itself there (the program's own choice) */
} leaver_t;

static void *leaver_main(void *p) {
  leaver_t *k = p;
  CHECK_OK(sstm_thread_init());
  k->slot = sstm_desc_slot(sstm_self());
  pthread_barrier_wait(k->gate); /* registered */
  run_work(&k->w);
  pthread_barrier_wait(k->gate); /* worked: the main thread evaluates */
  pthread_barrier_wait(k->gate);
  CHECK_OK(sstm_thread_exit());
  if (k->own_cpu >= 0) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(k->own_cpu, &one);
    CHECK_EQ_I(pthread_setaffinity_np(pthread_self(), sizeof one, &one), 0);
  }
  pthread_barrier_wait(k->gate); /* left, alive: the main thread's step */
  pthread_barrier_wait(k->gate);
  if (k->again) {
    CHECK_OK(sstm_thread_init());
    k->slot = sstm_desc_slot(sstm_self());
    pthread_barrier_wait(k->gate); /* registered again: the main thread reads */
    pthread_barrier_wait(k->gate);
    CHECK_OK(sstm_thread_exit());
  }
  return NULL;
}

static void start_leaver(leaver_t *k) {
  CHECK_EQ_I(pthread_create(&k->th, NULL, leaver_main, k), 0);
}

/* The CPU the thread t may run on alone, -1 if more than one. */
static int only_cpu(pthread_t t) {
  cpu_set_t a = affinity_of(t);
  if (CPU_COUNT(&a) != 1) return -1;
  for (int c = 0; c < CPU_SETSIZE; c++)
    if (CPU_ISSET(c, &a)) return c;
  return -1;
}

/* The threads a static strategy pinned and that left, still alive, get
 * the process's CPU set back at sstm_shutdown(), as its caller does: no
 * thread keeps a pin of a library that is no longer there (sstm_init
 * again with strategy none would leave it so for good). One that the
 * program pinned itself after it left keeps the program's choice.
 * Fails if map_fini restores the caller alone (both checks of the first
 * worker) or resets every thread whatever its affinity (the second). */
TEST(shutdown_gives_the_threads_it_pinned_their_set_back) {
  need_two_cores();
  cpu_set_t before = affinity_of(pthread_self());
  sstm_config_t c;
  base_config(&c, SSTM_MAP_STRATEGY_COMPACT);
  init_with(&c);
  pthread_barrier_t gate;
  pthread_barrier_init(&gate, NULL, 3);
  leaver_t k[2] = {{.w = {.a = words[4], .b = words[5], .n = 10}, .gate = &gate, .own_cpu = -1},
                   {.w = {.a = words[6], .b = words[7], .n = 10}, .gate = &gate, .own_cpu = -1}};
  start_leaver(&k[0]);
  start_leaver(&k[1]);
  pthread_barrier_wait(&gate); /* both registered: indices 0 and 1 */
  int pinned[2];
  for (int i = 0; i < 2; i++) {
    pinned[i] = only_cpu(k[i].th);
    CHECK_GE_I(pinned[i], 0);
  }
  CHECK_NE_I(pinned[0], pinned[1]);
  /* The second worker pins itself, after leaving, to the first one's CPU. */
  k[1].own_cpu = pinned[0];    /* read after the barriers below */
  pthread_barrier_wait(&gate); /* worked */
  pthread_barrier_wait(&gate);
  pthread_barrier_wait(&gate); /* left, alive */
  CHECK_EQ_I(only_cpu(k[0].th), pinned[0]);
  CHECK_EQ_I(only_cpu(k[1].th), pinned[0]);
  CHECK_OK(sstm_shutdown());
  cpu_set_t a0 = affinity_of(k[0].th);
  CHECK_MSG(CPU_EQUAL(&a0, &before), "a thread the library pinned keeps CPU %d after shutdown",
            only_cpu(k[0].th));
  CHECK_EQ_I(only_cpu(k[1].th), pinned[0]); /* the program's own pin stands */
  cpu_set_t me = affinity_of(pthread_self());
  CHECK_TRUE(CPU_EQUAL(&me, &before));
  pthread_barrier_wait(&gate); /* released */
  for (int i = 0; i < 2; i++)
    CHECK_EQ_I(pthread_join(k[i].th, NULL), 0);
  pthread_barrier_destroy(&gate);
}

/* sstm_shutdown() leaves alone the affinity of a calling thread that the
 * library never pinned: here one that never registered and that the
 * program pinned itself after sstm_init. The shutdown gave its caller the
 * process's set whatever it had. */
TEST(shutdown_leaves_a_callers_own_affinity) {
  need_two_cores();
  cpu_set_t before = affinity_of(pthread_self());
  int mine = -1;
  for (int c = CPU_SETSIZE - 1; c >= 0 && mine < 0; c--)
    if (CPU_ISSET(c, &before)) mine = c;
  sstm_config_t c;
  base_config(&c, SSTM_MAP_STRATEGY_COMPACT);
  init_with(&c);
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(mine, &one);
  CHECK_EQ_I(pthread_setaffinity_np(pthread_self(), sizeof one, &one), 0);
  CHECK_OK(sstm_shutdown());
  CHECK_MSG(only_cpu(pthread_self()) == mine, "the caller's own pin to CPU %d is gone", mine);
  CHECK_EQ_I(pthread_setaffinity_np(pthread_self(), sizeof before, &before), 0);
}

/* stmap's un-pinning (the heuristic turned mapping off) reaches the
 * threads it pinned that have left since (sstm_thread_exit) and live on,
 * not only the registered ones: such a thread registering again would
 * otherwise run pinned while mapping is off, until the next mapping moves
 * it. Fails if unpin_all skips the threads that are not registered. */
TEST(stmap_unpins_a_pinned_thread_that_left_when_mapping_turns_off) {
  need_two_cores();
  cpu_set_t before = affinity_of(pthread_self());
  init_evaluated_by_hand(SSTM_MAP_STRATEGY_STMAP, NULL);
  pthread_barrier_t gate;
  pthread_barrier_init(&gate, NULL, 2);
  /* Each transaction aborts twice (user restarts) before it commits:
   * aborts > commits, mapping on. */
  leaver_t k = {.w = {.a = words[0], .b = words[1], .n = 200, .restarts = 2},
                .gate = &gate,
                .again = true,
                .own_cpu = -1};
  start_leaver(&k);
  pthread_barrier_wait(&gate); /* registered */
  work_t mine = {.a = words[0], .b = words[1], .n = 200, .restarts = 2};
  run_work(&mine);
  pthread_barrier_wait(&gate); /* worked */
  CHECK_EQ_I(sstm_map_evaluate(), 1);
  sstm_map_stats_t s;
  CHECK_OK(sstm_map_stats_get(&s));
  CHECK_TRUE(s.applied);
  CHECK_GE_I(only_cpu(k.th), 0);
  pthread_barrier_wait(&gate);
  pthread_barrier_wait(&gate);   /* left, alive */
  CHECK_GE_I(only_cpu(k.th), 0); /* leaving keeps the pin (its index keeps its place) */
  /* A window with neither aborts nor commits: off, and every thread the
   * mapping pinned unpinned, the one that left too. */
  CHECK_EQ_I(sstm_map_evaluate(), 0);
  CHECK_OK(sstm_map_stats_get(&s));
  CHECK_FALSE(s.applied);
  cpu_set_t a = affinity_of(k.th);
  CHECK_MSG(CPU_EQUAL(&a, &before), "the thread that left keeps CPU %d with mapping off",
            only_cpu(k.th));
  CHECK_EQ_U(s.unpins, 2);
  pthread_barrier_wait(&gate);
  pthread_barrier_wait(&gate); /* registered again */
  a = affinity_of(k.th);
  CHECK_TRUE(CPU_EQUAL(&a, &before));
  int cpu = -2;
  CHECK_OK(sstm_map_thread_cpu(k.slot, &cpu, NULL, NULL));
  CHECK_EQ_I(cpu, -1);
  pthread_barrier_wait(&gate); /* released */
  CHECK_EQ_I(pthread_join(k.th, NULL), 0);
  pthread_barrier_destroy(&gate);
  sstm_test_fini();
}

/* ---- the trigger (docs/design/mapping.md, "Trigger (MI)") ---- */

/* Detection evaluated by the trigger alone, on a simulated topology (the
 * same on any machine), every access sampled. */
static void init_triggered(uint64_t mi) {
  sstm_config_t c;
  base_config(&c, SSTM_MAP_STRATEGY_DETECT);
  c.map_topology = "Package:2 Core:2 PU:1";
  c.map_mi = mi;
  init_with(&c);
}

static uint64_t evaluations(void) {
  sstm_map_stats_t s;
  CHECK_OK(sstm_map_stats_get(&s));
  return s.evaluations;
}

/* A thread that leaves before its first flush (fewer than 4096 accesses)
 * still counts towards MI: its exit hook flushes what it counted, and a
 * flush that crosses the mark outside a transaction runs the evaluation
 * there. Fails if the exit hook does not flush (the accesses are lost) or
 * does not run the claim (it waits for a thread that is gone, and no
 * evaluation ever runs again: the mark stays claimed). */
TEST(a_thread_that_leaves_before_its_first_flush_triggers_the_evaluation) {
  init_triggered(100);
  work_t w = {.a = words[8], .b = words[9], .n = 50}; /* 200 accesses */
  pthread_t t;
  CHECK_EQ_I(pthread_create(&t, NULL, register_and_share, &w), 0);
  CHECK_EQ_I(pthread_join(t, NULL), 0);
  CHECK_EQ_U(evaluations(), 1);
  CHECK_OK(sstm_shutdown());
}

/* The flush that crosses the mark inside a transaction claims the
 * evaluation, which runs when that attempt ends, never inside it (it
 * would hold the attempt's locks through the mapping): here the attempt
 * sees none done after the flush, then aborts (a user restart), and the
 * retry sees the evaluation done (the abort action ran it); its commit
 * runs no second one (the claim is spent). Fails if the claim registers
 * no abort action (the commit action of an aborted attempt never runs: no
 * evaluation until the thread leaves), or if the claiming sample
 * evaluates at once. */
static _Atomic uint64_t seen_in_first, seen_in_retry;

static void long_then_restart(void *p) {
  uint64_t *a = p;
  if (attempt_no++ == 0) {
    uint64_t sum = 0;
    for (int i = 0; i < 5000; i++) /* a flush (every 4096) inside the attempt */
      sum += sstm_load_u64(&a[i % 8]);
    sstm_store_u64(&a[0], sum);
    sstm_map_stats_t s;
    CHECK_OK(sstm_map_stats_get(&s));
    atomic_store_explicit(&seen_in_first, s.evaluations, memory_order_relaxed);
    sstm_restart();
  }
  sstm_map_stats_t s;
  CHECK_OK(sstm_map_stats_get(&s));
  atomic_store_explicit(&seen_in_retry, s.evaluations, memory_order_relaxed);
  sstm_store_u64(&a[1], sstm_load_u64(&a[1]) + 1);
}

TEST(an_evaluation_claimed_inside_a_transaction_runs_when_its_attempt_ends) {
  init_triggered(1000);
  CHECK_OK(sstm_thread_init());
  atomic_store_explicit(&seen_in_first, UINT64_MAX, memory_order_relaxed);
  atomic_store_explicit(&seen_in_retry, UINT64_MAX, memory_order_relaxed);
  attempt_no = 0;
  CHECK_OK(sstm_run(NULL, long_then_restart, words[10]));
  CHECK_EQ_U(atomic_load_explicit(&seen_in_first, memory_order_relaxed), 0);
  CHECK_EQ_U(atomic_load_explicit(&seen_in_retry, memory_order_relaxed), 1);
  CHECK_EQ_U(evaluations(), 1);
  sstm_test_fini();
}
