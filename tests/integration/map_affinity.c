/* SPDX-License-Identifier: MIT */
/* Integration: in a real multi-threaded run, every thread runs where the
 * thread mapping decided, as the kernel reports it from outside the
 * library, and the affinity log (sstm_config_t::map_log) says so too.
 *
 * itest_map_affinity DESIGN STRATEGY [THREADS]
 *
 * THREADS workers (default 4; pairs of them share counters, so stmap sees
 * communicating pairs) run transactions in phases; with stmap every access
 * is sampled and the automatic evaluations run every few thousand
 * accesses, and worker 0 also asks for one (sstm_map_evaluate) at the end
 * of each phase, so at least one mapping is computed whatever the timing.
 * Between phases the workers are parked at a barrier, still registered, so
 * no evaluation runs: the main thread (not registered) then reads each
 * worker's Cpus_allowed_list from /proc/self/task/TID/status and checks it
 * against the library's decision (sstm_map_thread_cpu: the CPU it pinned
 * the thread to, or the process's CPU set when none), and checks that the
 * last line of the affinity log for that thread id names the same CPUs.
 * Needs two cores (skipped on one: mapping is then disabled). Nothing
 * depends on timing: the checks run only at the barriers.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <schedstm/map.h>

#include "common_int.h"

#define MAXT 16
#define PHASES 4

static unsigned nworkers, ops;
static sstm_map_strategy_t strategy;
static pthread_barrier_t arrive, leave;
static pid_t tids[MAXT];
static unsigned slots[MAXT];
static uint64_t cells[MAXT / 2][8] __attribute__((aligned(64)));

static void body(void *arg) {
  uint64_t *c = arg;
  for (int i = 0; i < 4; i++)
    sstm_store_u64(&c[i], sstm_load_u64(&c[i]) + 1);
}

static void *worker(void *arg) {
  unsigned w = (unsigned)(uintptr_t)arg;
  CHECK_OK(sstm_thread_init());
  tids[w] = (pid_t)syscall(SYS_gettid);
  slots[w] = sstm_desc_slot(sstm_self());
  for (unsigned ph = 0; ph < PHASES; ph++) {
    for (unsigned i = 0; i < ops; i++)
      CHECK_OK(sstm_run(NULL, body, cells[w / 2]));
    if (w == 0 && strategy == SSTM_MAP_STRATEGY_STMAP) CHECK(sstm_map_evaluate() >= 0);
    pthread_barrier_wait(&arrive);
    pthread_barrier_wait(&leave); /* the main thread checks in between */
  }
  CHECK_OK(sstm_thread_exit());
  return NULL;
}

/* A kernel CPU list ("0-3,8") into *set; false if malformed. */
static bool parse_list(const char *s, cpu_set_t *set) {
  CPU_ZERO(set);
  while (*s && *s != '\n') {
    char *e;
    long a = strtol(s, &e, 10), b = a;
    if (e == s || a < 0 || a >= CPU_SETSIZE) return false;
    if (*e == '-') {
      s = e + 1;
      b = strtol(s, &e, 10);
      if (e == s || b < a || b >= CPU_SETSIZE) return false;
    }
    for (long c = a; c <= b; c++)
      CPU_SET((int)c, set);
    s = e;
    if (*s == ',') s++;
  }
  return CPU_COUNT(set) > 0;
}

/* The kernel's view of thread tid's affinity. */
static void read_back(pid_t tid, cpu_set_t *set, char *text, size_t len) {
  char path[64], line[4096];
  snprintf(path, sizeof path, "/proc/self/task/%d/status", (int)tid);
  FILE *f = fopen(path, "re");
  CHECK_MSG(f != NULL, "%s: %s", path, strerror(errno));
  bool found = false;
  while (!found && fgets(line, sizeof line, f))
    if (strncmp(line, "Cpus_allowed_list:", 18) == 0) {
      const char *v = line + 18 + strspn(line + 18, " \t");
      snprintf(text, len, "%.*s", (int)strcspn(v, "\n"), v);
      CHECK_MSG(parse_list(v, set), "%s: Cpus_allowed_list \"%s\"", path, text);
      found = true;
    }
  fclose(f);
  CHECK_MSG(found, "%s has no Cpus_allowed_list", path);
}

/* The CPUs of the last line of the affinity log for tid; false if none. */
static bool last_logged(const char *log, pid_t tid, cpu_set_t *set, char *text, size_t len) {
  FILE *f = fopen(log, "re");
  CHECK_MSG(f != NULL, "%s: %s", log, strerror(errno));
  char line[4096];
  bool found = false;
  CHECK(fgets(line, sizeof line, f) != NULL);
  CHECK_EQ_STR(line, "schedstm-map-log 1\n");
  while (fgets(line, sizeof line, f)) {
    unsigned long long t0, t1;
    int id, n = 0;
    char cpus[2048], why[32];
    if (sscanf(line, "pin %llu %llu %d %2047s %31s%n", &t0, &t1, &id, cpus, why, &n) == 5) {
      CHECK_MSG(t0 <= t1, "log line with its bracket reversed: %s", line);
      if (id != tid) continue;
      CHECK_MSG(parse_list(cpus, set), "log line: %s", line);
      snprintf(text, len, "%s (%s)", cpus, why);
      found = true;
    } else {
      CHECK_MSG(strncmp(line, "pid ", 4) == 0 || strncmp(line, "allowed ", 8) == 0 ||
                    strncmp(line, "strategy ", 9) == 0,
                "unexpected log line: %s", line);
    }
  }
  fclose(f);
  return found;
}

static void check_phase(unsigned ph, const cpu_set_t *allowed, const char *log, unsigned *pinned) {
  for (unsigned w = 0; w < nworkers; w++) {
    int cpu = -2, seen, pu;
    CHECK_OK(sstm_map_thread_cpu(slots[w], &cpu, &seen, &pu));
    cpu_set_t want, got, logged;
    if (cpu >= 0) {
      CPU_ZERO(&want);
      CPU_SET(cpu, &want);
      (*pinned)++;
    } else {
      want = *allowed;
    }
    char gtext[4096], ltext[4096];
    read_back(tids[w], &got, gtext, sizeof gtext);
    CHECK_MSG(CPU_EQUAL(&got, &want),
              "phase %u, worker %u (tid %d): the kernel says CPUs %s, the mapping decided %s%d", ph,
              w, (int)tids[w], gtext, cpu >= 0 ? "CPU " : "the process's set, pinned = ", cpu);
    CHECK_MSG(last_logged(log, tids[w], &logged, ltext, sizeof ltext),
              "phase %u, worker %u (tid %d): no line in the affinity log", ph, w, (int)tids[w]);
    CHECK_MSG(CPU_EQUAL(&logged, &got),
              "phase %u, worker %u (tid %d): the log's last change is %s, the kernel says %s", ph,
              w, (int)tids[w], ltext, gtext);
  }
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s DESIGN STRATEGY [THREADS]\n", argv[0]);
    return 2;
  }
  char name[128];
  snprintf(name, sizeof name, "map_affinity.%s.%s", argv[1], argv[2]);
  sstm_test_setup(name, argc, argv);
  sstm_design_t design = int_parse_design(argv[1]);
  CHECK_OK(sstm_map_strategy_parse(argv[2], &strategy));
  nworkers = argc > 3 ? (unsigned)atoi(argv[3]) : 4;
  CHECK_GT_U(nworkers, 0);
  CHECK_LE_U(nworkers, MAXT);
  ops = (unsigned)sstm_test_scaled(3000, 300);
  cpu_set_t allowed;
  CHECK_EQ_I(sched_getaffinity(0, sizeof allowed, &allowed), 0);
  if (CPU_COUNT(&allowed) < 2) sstm_test_skip("one CPU: thread mapping is disabled");

  char dir[] = "/tmp/sstm-map-affinity-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  char log[sizeof dir + 16], cache[sizeof dir + 16];
  snprintf(log, sizeof log, "%s/log", dir);
  snprintf(cache, sizeof cache, "%s/cache", dir);
  sstm_config_t c;
  int_config(&c, design, NULL);
  c.map = strategy;
  c.map_si = 0;    /* every access */
  c.map_mi = 4096; /* automatic evaluations every few thousand accesses */
  c.map_log = log;
  c.map_topo_cache = cache;
  CHECK_OK(sstm_init(&c));
  sstm_map_stats_t s;
  CHECK_OK(sstm_map_stats_get(&s));
  bool single = s.single_core;
  if (strategy == SSTM_MAP_STRATEGY_STMAP && !single) {
    /* The topology may still be loading: an evaluation waits for it. */
    CHECK(sstm_map_evaluate() >= 0);
    CHECK_OK(sstm_map_stats_get(&s));
    single = s.single_core;
  }
  if (single) {
    CHECK_OK(sstm_shutdown());
    sstm_test_skip("hwloc sees one core: thread mapping is disabled");
  }

  CHECK_EQ_I(pthread_barrier_init(&arrive, NULL, nworkers + 1), 0);
  CHECK_EQ_I(pthread_barrier_init(&leave, NULL, nworkers + 1), 0);
  pthread_t th[MAXT];
  for (unsigned w = 0; w < nworkers; w++)
    CHECK_EQ_I(pthread_create(&th[w], NULL, worker, (void *)(uintptr_t)w), 0);
  unsigned pinned = 0;
  for (unsigned ph = 0; ph < PHASES; ph++) {
    pthread_barrier_wait(&arrive);
    check_phase(ph, &allowed, log, &pinned);
    pthread_barrier_wait(&leave);
  }
  for (unsigned w = 0; w < nworkers; w++)
    CHECK_EQ_I(pthread_join(th[w], NULL), 0);

  CHECK_OK(sstm_map_stats_get(&s));
  CHECK_EQ_U(s.pin_errors, 0);
  if (strategy == SSTM_MAP_STRATEGY_STMAP) {
    /* Equation 1 is on (a few distinct addresses): each explicit
     * evaluation maps, and the first placement is always applied. */
    CHECK_GE_U(s.evaluations, PHASES);
    CHECK_GE_U(s.mappings_applied, 1);
  }
  /* Static strategies pin at registration, stmap from the first phase's
   * evaluation on (a PU outside the allowed set falls back to the set). */
  CHECK_MSG(pinned > 0 || s.pin_fallbacks > 0, "no thread was ever pinned");
  uint64_t total = 0;
  for (unsigned g = 0; g < (nworkers + 1) / 2; g++)
    total += cells[g][0];
  CHECK_EQ_U(total, (unsigned long long)nworkers * ops * PHASES);
  char desc[1024];
  CHECK(sstm_describe(desc, sizeof desc) >= 0);
  CHECK_MSG(strstr(desc, "map-topo-from=") != NULL, "describe: %s", desc);
  CHECK_OK(sstm_shutdown());
  unlink(log);
  char cmd[sizeof dir + 16];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  CHECK_EQ_I(system(cmd), 0);
  return 0;
}
