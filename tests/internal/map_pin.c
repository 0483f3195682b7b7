/* SPDX-License-Identifier: MIT */
/* Thread mapping: affinity calls that the kernel refuses (docs/design/
 * mapping.md, "Pinning"). The refusals come from the test seam
 * sstm__map_affinity_seam (iface/map_runtime.h), which refuses one mask
 * and lets another through, for one thread: a seccomp filter sees the
 * call, not the mask.
 *  - A thread created by a thread pinned to one CPU inherits that CPU. Its
 *    first registration under a static strategy pins it to its PU; when
 *    the kernel refuses that pin (EINVAL: a CPU gone offline or outside a
 *    cpuset narrowed after sstm_init), it gets the process's allowed set
 *    instead, its record says not pinned, pin_errors counts the refusal
 *    and the map log has a "refused" line then the set's "pin" line.
 *    Before, it kept its creator's one CPU while the record called it
 *    unpinned.
 *  - When the set is refused too, it keeps what it has: two refusals
 *    counted, two "refused" lines.
 *  - A thread that left and ends between the un-pinning's check that it
 *    lives and the affinity call (ESRCH) is not a pin error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <schedstm/map.h>

#include "iface/map_runtime.h"

#include "../common/txhelp.h"

/* ---- the seam ---- */

static _Atomic pid_t victim;    /* the thread whose calls are refused (0: none) */
static _Atomic int refuse;      /* the errno given */
static _Atomic bool only_one;   /* refuse one-CPU masks only (else every mask) */
static _Atomic int refused;     /* calls refused */
static _Atomic int refused_cpu; /* the one CPU of the last refused mask, -1 a set */

static int affinity_seam(pid_t tid, const cpu_set_t *set) {
  if (tid != atomic_load_explicit(&victim, memory_order_relaxed)) return 0;
  bool one = CPU_COUNT(set) == 1;
  if (atomic_load_explicit(&only_one, memory_order_relaxed) && !one) return 0;
  int cpu = -1;
  for (int c = 0; one && c < CPU_SETSIZE; c++)
    if (CPU_ISSET(c, set)) cpu = c;
  atomic_store_explicit(&refused_cpu, cpu, memory_order_relaxed);
  atomic_fetch_add_explicit(&refused, 1, memory_order_relaxed);
  return atomic_load_explicit(&refuse, memory_order_relaxed);
}

static void arm_seam(int e, bool one_cpu_only) {
  atomic_store_explicit(&victim, 0, memory_order_relaxed);
  atomic_store_explicit(&refuse, e, memory_order_relaxed);
  atomic_store_explicit(&only_one, one_cpu_only, memory_order_relaxed);
  atomic_store_explicit(&refused, 0, memory_order_relaxed);
  atomic_store_explicit(&refused_cpu, -2, memory_order_relaxed);
  sstm__map_affinity_seam = affinity_seam;
}

/* ---- helpers ---- */

static cpu_set_t affinity_of(pthread_t t) {
  cpu_set_t s;
  CPU_ZERO(&s);
  CHECK_EQ_I(pthread_getaffinity_np(t, sizeof s, &s), 0);
  return s;
}

static int lowest(const cpu_set_t *s) {
  for (int c = 0; c < CPU_SETSIZE; c++)
    if (CPU_ISSET(c, s)) return c;
  return -1;
}

static void base_config(sstm_config_t *c, sstm_map_strategy_t s) {
  sstm_test_config(c);
  c->map = s;
  c->map_si = 0;
}

/* Skips unless two CPUs are allowed and hwloc sees two cores (else the
 * library pins nothing). */
static void need_two_cores(void) {
  cpu_set_t a = affinity_of(pthread_self());
  if (CPU_COUNT(&a) < 2) sstm_test_skip("one CPU allowed: nothing to pin apart");
  sstm_config_t c;
  base_config(&c, SSTM_MAP_STRATEGY_COMPACT);
  CHECK_OK(sstm_init(&c));
  sstm_map_stats_t s;
  CHECK_OK(sstm_map_stats_get(&s));
  CHECK_OK(sstm_shutdown());
  if (s.single_core) sstm_test_skip("hwloc sees a single core");
}

/* The map log's lines about thread tid ("pin ..." and "refused ..."),
 * without their times, "\n"-separated, into out; and its "allowed" list. */
static void log_lines(const char *path, pid_t tid, char *out, size_t len, char *allowed,
                      size_t alen) {
  FILE *f = fopen(path, "r");
  CHECK_NOT_NULL(f);
  char line[512];
  size_t at = 0;
  out[0] = allowed[0] = '\0';
  while (fgets(line, sizeof line, f)) {
    char kind[16], cpus[256], why[32], err[32] = "";
    unsigned long long t0, t1;
    int id;
    if (sscanf(line, "allowed %255s", cpus) == 1) snprintf(allowed, alen, "%s", cpus);
    int n = sscanf(line, "%15s %llu %llu %d %255s %31s %31s", kind, &t0, &t1, &id, cpus, why, err);
    if (n < 6 || id != (int)tid) continue;
    CHECK_LE_U(t0, t1);
    at += (size_t)snprintf(out + at, len - at, "%s %s %s%s%s\n", kind, cpus, why, n == 7 ? " " : "",
                           err);
    CHECK_LT_U(at, len);
  }
  fclose(f);
}

/* ---- a refused first pin ---- */

typedef struct child {
  int strategy_pu; /* out: the PU its record names */
  int rec_cpu;     /* out: the CPU its record names */
  pid_t tid;
  cpu_set_t after; /* its affinity once registered */
} child_t;

static void *child_main(void *p) {
  child_t *k = p;
  k->tid = (pid_t)syscall(SYS_gettid);
  atomic_store_explicit(&victim, k->tid, memory_order_relaxed);
  CHECK_OK(sstm_thread_init());
  k->after = affinity_of(pthread_self());
  CHECK_OK(sstm_map_thread_cpu(sstm_desc_slot(sstm_self()), &k->rec_cpu, NULL, &k->strategy_pu));
  CHECK_OK(sstm_thread_exit());
  return NULL;
}

/* The creator: pinned to one CPU, it creates the child (which inherits
 * that CPU) and waits for it. */
typedef struct creator {
  int cpu;
  child_t *child;
} creator_t;

static void *creator_main(void *p) {
  creator_t *c = p;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(c->cpu, &one);
  CHECK_EQ_I(pthread_setaffinity_np(pthread_self(), sizeof one, &one), 0);
  pthread_t t;
  CHECK_EQ_I(pthread_create(&t, NULL, child_main, c->child), 0);
  CHECK_EQ_I(pthread_join(t, NULL), 0);
  return NULL;
}

/* A compact run in which the child's first pin meets the seam armed with
 * e, one-CPU masks only or every mask; returns the stats, fills *k, the
 * log's lines about the child and its allowed list. */
static sstm_map_stats_t refused_first_pin(int e, bool one_cpu_only, const cpu_set_t *before,
                                          child_t *k, char *lines, size_t len, char *allowed,
                                          size_t alen) {
  char log[64];
  sstm_test_tmp_file(log, sizeof log, "map-pin-log");
  sstm_config_t c;
  base_config(&c, SSTM_MAP_STRATEGY_COMPACT);
  c.map_log = log;
  arm_seam(e, one_cpu_only);
  CHECK_OK(sstm_init(&c));
  creator_t cr = {.cpu = lowest(before), .child = k};
  pthread_t t;
  CHECK_EQ_I(pthread_create(&t, NULL, creator_main, &cr), 0);
  CHECK_EQ_I(pthread_join(t, NULL), 0);
  sstm_map_stats_t s;
  CHECK_OK(sstm_map_stats_get(&s));
  CHECK_OK(sstm_shutdown());
  sstm__map_affinity_seam = NULL;
  log_lines(log, k->tid, lines, len, allowed, alen);
  unlink(log);
  return s;
}

/* Fails before the fix: the child keeps {creator's CPU}, and the log has
 * no line for it. */
TEST(a_refused_first_pin_gives_the_thread_the_allowed_set) {
  need_two_cores();
  cpu_set_t before = affinity_of(pthread_self());
  child_t k = {0};
  char lines[1024], allowed[256], want[1024];
  sstm_map_stats_t s =
      refused_first_pin(EINVAL, true, &before, &k, lines, sizeof lines, allowed, sizeof allowed);
  CHECK_EQ_I(atomic_load_explicit(&refused, memory_order_relaxed), 1);
  int cpu = atomic_load_explicit(&refused_cpu, memory_order_relaxed);
  CHECK_GE_I(cpu, 0); /* its PU's CPU was what the seam refused */
  CHECK_MSG(CPU_EQUAL(&k.after, &before), "the child runs on %d CPU(s), not the allowed set",
            CPU_COUNT(&k.after));
  CHECK_EQ_I(k.rec_cpu, -1);     /* not pinned */
  CHECK_EQ_I(k.strategy_pu, -1); /* not placed */
  CHECK_EQ_U(s.pin_errors, 1);
  CHECK_EQ_U(s.pin_fallbacks, 0);
  snprintf(want, sizeof want, "refused %d register EINVAL\npin %s register\n", cpu, allowed);
  CHECK_EQ_STR(lines, want);
}

/* The allowed set refused as well (EPERM): the thread keeps what it has,
 * both refusals counted and logged. */
TEST(a_refused_first_pin_and_set_leave_the_thread_as_it_was) {
  need_two_cores();
  cpu_set_t before = affinity_of(pthread_self());
  child_t k = {0};
  char lines[1024], allowed[256], want[1024];
  sstm_map_stats_t s =
      refused_first_pin(EPERM, false, &before, &k, lines, sizeof lines, allowed, sizeof allowed);
  CHECK_EQ_I(atomic_load_explicit(&refused, memory_order_relaxed), 2);
  CHECK_EQ_I(CPU_COUNT(&k.after), 1);
  CHECK_TRUE(CPU_ISSET(lowest(&before), &k.after)); /* its creator's CPU */
  CHECK_EQ_I(k.rec_cpu, -1);
  CHECK_EQ_I(k.strategy_pu, -1);
  CHECK_EQ_U(s.pin_errors, 2);
  char first[1024];
  size_t nl = strcspn(lines, "\n");
  snprintf(first, sizeof first, "%.*s", (int)nl, lines);
  CHECK_CONTAINS(first, "refused ");
  snprintf(want, sizeof want, "refused %s register EPERM\n", allowed);
  CHECK_EQ_STR(lines + nl + 1, want);
}

/* ---- a thread that ends between the un-pinning's check and its call ---- */

static _Thread_local unsigned attempt_no;
static uint64_t words[2][8] __attribute__((aligned(64)));

static void inc_body(void *p) {
  (void)p;
  sstm_store_u64(&words[0][0], sstm_load_u64(&words[0][0]) + 1);
  sstm_store_u64(&words[1][0], sstm_load_u64(&words[1][0]) + 1);
  if (attempt_no++ < 2) sstm_restart();
}

/* 200 transactions that each abort twice: mapping on. */
static void work(void) {
  for (unsigned i = 0; i < 200; i++) {
    attempt_no = 0;
    CHECK_OK(sstm_run(NULL, inc_body, NULL));
  }
}

typedef struct leaver {
  pthread_barrier_t *gate;
  _Atomic pid_t tid;
} leaver_t;

static void *leaver_main(void *p) {
  leaver_t *k = p;
  atomic_store_explicit(&k->tid, (pid_t)syscall(SYS_gettid), memory_order_relaxed);
  CHECK_OK(sstm_thread_init());
  work();
  pthread_barrier_wait(k->gate); /* worked: the main thread evaluates */
  pthread_barrier_wait(k->gate);
  CHECK_OK(sstm_thread_exit());
  pthread_barrier_wait(k->gate); /* left, alive: the main thread un-pins */
  pthread_barrier_wait(k->gate);
  return NULL;
}

/* ESRCH from the un-pinning of a thread that left: it ended after the
 * check that it lives, and needs nothing; not a pin error (the seam
 * answers for the kernel, the thread itself lives on). Fails if unpin_left
 * counts every failed call. */
TEST(a_thread_that_ends_before_its_unpinning_is_not_a_pin_error) {
  need_two_cores();
  sstm_config_t c;
  base_config(&c, SSTM_MAP_STRATEGY_STMAP);
  c.map_mi = SSTM_MAP_MI_MAX; /* evaluations by sstm_map_evaluate only */
  c.map_da_threshold = 0;
  arm_seam(ESRCH, false);
  CHECK_OK(sstm_init(&c));
  CHECK_OK(sstm_thread_init());
  pthread_barrier_t gate;
  pthread_barrier_init(&gate, NULL, 2);
  leaver_t k = {.gate = &gate};
  pthread_t t;
  CHECK_EQ_I(pthread_create(&t, NULL, leaver_main, &k), 0);
  work();
  pthread_barrier_wait(&gate); /* worked */
  CHECK_EQ_I(sstm_map_evaluate(), 1);
  sstm_map_stats_t s;
  CHECK_OK(sstm_map_stats_get(&s));
  CHECK_TRUE(s.applied);
  pthread_barrier_wait(&gate);
  pthread_barrier_wait(&gate); /* left, alive */
  atomic_store_explicit(&victim, atomic_load_explicit(&k.tid, memory_order_relaxed),
                        memory_order_relaxed);
  /* A window with neither aborts nor commits: off, everything un-pinned. */
  CHECK_EQ_I(sstm_map_evaluate(), 0);
  CHECK_OK(sstm_map_stats_get(&s));
  CHECK_FALSE(s.applied);
  CHECK_EQ_I(atomic_load_explicit(&refused, memory_order_relaxed), 1); /* the leaver's call */
  CHECK_EQ_U(s.pin_errors, 0);
  CHECK_EQ_U(s.unpins, 1);     /* the main thread's */
  pthread_barrier_wait(&gate); /* released */
  CHECK_EQ_I(pthread_join(t, NULL), 0);
  pthread_barrier_destroy(&gate);
  sstm_test_fini();
  sstm__map_affinity_seam = NULL;
}

SSTM_TEST_MAIN()
