/* SPDX-License-Identifier: MIT */
/* The run-time side of thread mapping (include/schedstm/map.h): the
 * detection of [Pasqualin20] behind the engine's sampling hook, its
 * trigger and enable heuristic, pinning, periodic re-mapping with
 * hysteresis, un-pinning, the static strategies, statistics and the
 * description. The topology, the placements, the cost model and the matrix
 * files are the topology layer's (map/mapping.h); the address table and the
 * matrix are detect.c's.
 *
 * Threads. The subsystem follows registered threads (sstm_thread_init) by
 * a thread index of its own, through the public hooks: the first
 * registration of an operating-system thread gives it the lowest index no
 * thread holds, which it keeps through later sstm_thread_exit /
 * sstm_thread_init pairs (a worker of a pool that registers for each
 * parallel phase, as STAMP's do, is one row of the matrix, not one per
 * phase, and not a descriptor slot that the next thread to register
 * reuses); its row starts clean. An index goes to a new thread only when
 * none was never used and the thread holding it has ended (tgkill with
 * signal 0 says so). thread_init marks the thread live (and, for a static
 * strategy, pins it, on itself), thread_exit not live. A descriptor of
 * sstm_desc_create() is not followed: it has no thread of its own. `M.lock` guards the thread
 * table's identities, the placement in force and every evaluation; the sampled path never takes it.
 * An evaluation pins other threads by their pthread_t while holding it, and
 * a thread's thread_exit hook takes it before the thread can end: a thread
 * in the table is alive.
 *
 * The trigger (stmap, detect). [Pasqualin20] counts the accesses of one
 * thread (its "thread 1") and evaluates when that count reaches MI. Here
 * every thread counts its own accesses and adds them to a process-wide
 * total every SSTM_MAP_FLUSH of them: the evaluation then does not depend
 * on one thread staying busy (a main thread that only waits would never
 * trigger it; the paper reports its Kmeans at 32 threads never reaching
 * MI), MI means the same whatever the number of threads, and the shared
 * counter is written once per flush, not per access. The thread whose
 * flush crosses the mark claims the evaluation (a compare-and-swap of the
 * mark to "claimed") and runs it after its attempt ends, in a commit and
 * an abort action it registers on that attempt (sstm_on_commit,
 * sstm_on_abort: whichever runs), never inside a transaction whose locks
 * it would hold meanwhile; the subsystem registers no transaction hook, so
 * transactions pay nothing for it between samples.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <schedstm/hooks.h>
#include <schedstm/map.h>
#include <schedstm/stats.h>
#include <schedstm/thread.h>
#include <schedstm/tx.h>

#include "iface/map_runtime.h"
#include "iface/map_services.h"
#include "map/detect.h"
#include "map/mapping.h"

/* Accesses a thread counts before adding them to the shared total. */
#define SSTM_MAP_FLUSH 4096u
/* Evaluation intervals double up to this many times map_mi. */
#define SSTM_MAP_BACKOFF_MAX 64u
/* The mark's value while an evaluation is claimed. */
#define CLAIMED UINT64_MAX

/* One followed thread, one cache line: its owner writes the counters and
 * `seen` on every sample. */
typedef struct map_thread {
  pthread_t pt;             /* M.lock */
  pid_t tid;                /* M.lock: the OS thread holding the index */
  bool used;                /* M.lock: an OS thread holds the index */
  unsigned slot;            /* M.lock: its descriptor slot while live */
  _Atomic bool live;        /* written under M.lock; relaxed reads elsewhere */
  int pu;                   /* M.lock: the PU assigned, -1 none */
  _Atomic int cpu;          /* the CPU pinned to, -1 none (written under M.lock) */
  _Atomic int seen;         /* the CPU last seen, -1 never (owner) */
  _Atomic uint64_t samples; /* owner-written counter */
  uint64_t pending;         /* owner only: accesses not yet added to M.accesses */
  _Atomic bool due;         /* it claimed the next evaluation, not yet run */
} __attribute__((aligned(64))) map_thread_t;

static struct {
  pthread_mutex_t lock;
  sstm_map_strategy_t strategy;
  bool detecting;           /* stmap, detect: sampling and the matrix */
  bool pinning;             /* the strategy pins (not none, detect, single core, simulated);
                               M.lock once the topology loads in the background */
  _Atomic bool single_core; /* the topology has one core: disabled (written under M.lock) */
  bool simulated;           /* map_topology: placements are computed, never applied */
  sstm_topo_t *topo;        /* NULL while the background load runs (M.lock) */
  /* The topology's background load (stmap, detect, a cache miss): the
   * loader thread writes loaded, load_rc, load_err and topo_note, and the
   * thread that joins it (topo_wait, M.lock) installs the result. */
  bool loading;                              /* M.lock: a loader thread to join */
  bool loader_lost;                          /* M.lock: ... that fork() left in the parent */
  pthread_t loader;                          /* M.lock */
  sstm_topo_t *loaded;                       /* the loader's result, read after the join */
  int load_rc;                               /* likewise */
  char load_err[256];                        /* likewise */
  char topo_note[768];                       /* where the topology came from (describe) */
  char *cache_dir;                           /* cfg.map_topo_cache, copied; NULL: no cache */
  _Atomic bool topo_ready;                   /* M.topo and topo_note are set (release) */
  FILE *log;                                 /* cfg.map_log: every affinity change (M.lock) */
  char allowed_list[SSTM_TOPO_CPU_LIST_MAX]; /* M.allowed as a CPU list, for the log */
  sstm_map_detect_t det;
  unsigned order;   /* threads followed: indices [0, order) */
  unsigned gen;     /* bumped by each map_init: older thread indices are void */
  map_thread_t *th; /* order entries */
  unsigned period;  /* the sampling period installed: max(map_si, 1) */
  uint64_t mi, da_threshold;
  unsigned gain_pct;
  unsigned *static_pu; /* compact, scatter, round-robin, file: the PU of index i */
  unsigned static_n;   /* its entries (file: the matrix's order) */
  cpu_set_t allowed;   /* the process's CPUs at sstm_init: the un-pinned set */
  char *dump;          /* cfg.map_dump, copied */
  int hooks;           /* the hook handle, -1 none */
  /* The trigger. */
  _Atomic uint64_t accesses;          /* flushed accesses of all threads */
  _Atomic uint64_t mark;              /* the total that triggers the next evaluation */
  uint64_t interval;                  /* M.lock: accesses between evaluations now */
  uint64_t last_commits, last_aborts; /* M.lock: the window's start */
  uint64_t last_resets;               /* M.lock: sstm_stats_reset calls before it */
  _Atomic bool applied;               /* written under M.lock: a placement is pinned */
  /* Counters: relaxed, read whole by sstm_map_stats_get. */
  _Atomic uint64_t evaluations, decisions_on, decisions_off, computed, mapped, kept, migrations,
      unpins, fallbacks, pin_errors, last_cost;
  _Atomic bool enabled;
  _Atomic bool started;
  /* API calls reading the tables now (enter, leave): map_fini waits for
   * them to end before it frees the tables */
  _Atomic unsigned users;
  _Atomic unsigned hiwater; /* 1 + the highest thread index given */
} M = {.lock = PTHREAD_MUTEX_INITIALIZER, .hooks = -1};

static const char *const strategy_label[] = {"none", "compact", "scatter", "round-robin",
                                             "file", "stmap",   "detect"};

static inline void inc(_Atomic uint64_t *c) {
  atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}
/* Flags written under M.lock and read without it (statistics): relaxed,
 * each read a value, the lock orders the writes. */
#define GET(f) atomic_load_explicit(&(f), memory_order_relaxed)
#define SET(f, v) atomic_store_explicit(&(f), (v), memory_order_relaxed)
#define LIVE(t) GET((t)->live)

/* The calling OS thread's index + 1 (0: none) and the M.gen it was given
 * under: an index of an earlier sstm_init is void. */
static __thread unsigned self_ix, self_gen;

static map_thread_t *self_thread(void) {
  return self_ix != 0 && self_gen == M.gen ? &M.th[self_ix - 1] : NULL;
}

static unsigned index_of(const map_thread_t *t) { return (unsigned)(t - M.th); }

/* ---- pinning (M.lock held) ---- */

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* One line of the affinity log (M.lock held): the change's time bracket
 * (before and after the system call, CLOCK_MONOTONIC), the thread, the
 * CPUs it may now run on and why. An outside reader of the thread's
 * affinity (bench/harness/map_affinity.py) must see the old set before
 * the bracket, the new one after it. */
static void log_pin(uint64_t t0, uint64_t t1, pid_t tid, int cpu, const char *why) {
  if (M.log == NULL) return;
  if (cpu >= 0)
    fprintf(M.log, "pin %llu %llu %d %d %s\n", (unsigned long long)t0, (unsigned long long)t1,
            (int)tid, cpu, why);
  else
    fprintf(M.log, "pin %llu %llu %d %s %s\n", (unsigned long long)t0, (unsigned long long)t1,
            (int)tid, M.allowed_list, why);
  fflush(M.log); /* rare (registrations and mappings): a reader sees it at once */
}

/* The errno of a refused affinity call, for the log. */
static const char *errno_name(int e, char *buf, size_t len) {
  switch (e) {
  case EINVAL: return "EINVAL";
  case EPERM: return "EPERM";
  case ESRCH: return "ESRCH";
  default: snprintf(buf, len, "%d", e); return buf;
  }
}

/* A line of the affinity log for a change the kernel refused (M.lock
 * held): "refused T0 T1 TID CPUS WHY ERRNO", the same fields as a pin line
 * and the error; the thread's affinity did not change. */
static void log_refused(uint64_t t0, uint64_t t1, pid_t tid, int cpu, const char *why, int e) {
  if (M.log == NULL) return;
  char cpus[16], num[16];
  if (cpu >= 0) snprintf(cpus, sizeof cpus, "%d", cpu);
  fprintf(M.log, "refused %llu %llu %d %s %s %s\n", (unsigned long long)t0, (unsigned long long)t1,
          (int)tid, cpu >= 0 ? cpus : M.allowed_list, why, errno_name(e, num, sizeof num));
  fflush(M.log);
}

int (*sstm__map_affinity_seam)(pid_t tid, const cpu_set_t *set);

/* Set thread t's affinity to set (M.lock held): through its pthread_t
 * while it is registered (alive: its exit hook waits for M.lock), by its
 * tid otherwise. Returns 0 or the errno of the refusal. */
static int set_affinity(const map_thread_t *t, bool by_tid, const cpu_set_t *set) {
  if (sstm__map_affinity_seam != NULL) {
    int e = sstm__map_affinity_seam(t->tid, set);
    if (e != 0) return e;
  }
  if (by_tid) return sched_setaffinity(t->tid, sizeof *set, set) != 0 ? errno : 0;
  return pthread_setaffinity_np(t->pt, sizeof *set, set);
}

/* Pin thread t to PU pu (or give it the allowed set back: pu < 0). With
 * force, the affinity is set even when the thread is believed to have it
 * already: at its first registration, whatever it inherited from the
 * thread that created it. A pin to one CPU that the kernel refuses (EINVAL:
 * a CPU gone offline, or that the cgroup's cpuset no longer holds; EPERM)
 * gives the thread the allowed set instead, and its record says so: not
 * pinned, no PU (the next evaluation that places it tries again). Left as
 * it was, the thread would stay on the one CPU it had (at its first
 * registration, its creator's), beside another thread while a CPU idles,
 * and the record would call it unpinned. A refused allowed set (the
 * fallback's, or an un-pinning's) leaves the thread and its record as they
 * were. Each refused call counts in pin_errors and has a "refused" line in
 * the log. */
static void pin_why(map_thread_t *t, int pu, bool force, const char *why) {
  if (!M.pinning) { /* simulated: assigned, not applied */
    t->pu = pu;
    return;
  }
  cpu_set_t set;
  int cpu = -1;
  if (pu >= 0) {
    cpu = sstm__topo_os_index(M.topo, (unsigned)pu);
    CPU_ZERO(&set);
    if (cpu < 0 || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &M.allowed)) {
      /* No CPU of its own in the allowed set: the whole set. */
      inc(&M.fallbacks);
      cpu = -1;
      set = M.allowed;
    } else {
      CPU_SET(cpu, &set);
    }
  } else {
    set = M.allowed;
  }
  int old = atomic_load_explicit(&t->cpu, memory_order_relaxed);
  if (old == cpu && !force) {
    t->pu = pu;
    return;
  }
  uint64_t t0;
  for (;;) {
    t0 = M.log ? now_ns() : 0;
    int e = set_affinity(t, false, &set);
    if (e == 0) break;
    log_refused(t0, M.log ? now_ns() : 0, t->tid, cpu, why, e);
    inc(&M.pin_errors);
    if (cpu < 0) return; /* the allowed set refused: nothing wider to try */
    /* Not placed: the allowed set rather than the CPU it has now. */
    pu = -1;
    cpu = -1;
    set = M.allowed;
  }
  t->pu = pu;
  log_pin(t0, M.log ? now_ns() : 0, t->tid, cpu, why);
  if (cpu >= 0 && old >= 0) inc(&M.migrations);
  if (cpu < 0 && old >= 0) inc(&M.unpins);
  atomic_store_explicit(&t->cpu, cpu, memory_order_relaxed);
}

static void pin(map_thread_t *t, int pu) { pin_why(t, pu, false, pu < 0 ? "unpin" : "map"); }

/* Give thread t, which holds an index but is not registered now (it left
 * by sstm_thread_exit, and may have ended), the allowed set back if it is
 * still pinned where the library put it; why: "unpin", "shutdown". Its
 * pthread_t may name a thread that has ended and whose memory is gone, so
 * this goes by its tid, and only while that is a thread of this process
 * (tgkill with no signal finds it) whose affinity is still the one CPU it
 * was pinned to: an affinity the program set since stands. (A tid reused
 * since by a new thread of this process that the program pinned to that
 * very CPU would get the set too: it would need the thread to end and the
 * tid to come back within the program's own pinning of the new one.)
 * A thread that ends between the check and the call (ESRCH) is not an
 * error: it needs nothing, as when the check finds it gone. Either way the
 * record says not pinned. */
static void unpin_left(map_thread_t *t, const char *why) {
  int cpu = atomic_load_explicit(&t->cpu, memory_order_relaxed);
  t->pu = -1;
  if (cpu < 0 || !M.pinning) return;
  atomic_store_explicit(&t->cpu, -1, memory_order_relaxed);
  cpu_set_t cur, set = M.allowed;
  if (syscall(SYS_tgkill, getpid(), t->tid, 0) != 0 ||
      sched_getaffinity(t->tid, sizeof cur, &cur) != 0 || CPU_COUNT(&cur) != 1 ||
      !CPU_ISSET(cpu, &cur))
    return; /* ended, or its affinity is the program's now */
  uint64_t t0 = M.log ? now_ns() : 0;
  int e = set_affinity(t, true, &set);
  if (e == ESRCH) return; /* it ended after the check: it needs nothing either */
  if (e != 0) {
    log_refused(t0, M.log ? now_ns() : 0, t->tid, -1, why, e);
    inc(&M.pin_errors);
    return;
  }
  log_pin(t0, M.log ? now_ns() : 0, t->tid, -1, why);
  inc(&M.unpins);
}

/* Every thread the mapping pinned gets the allowed set back: the
 * registered ones, and those that left and may come back (left pinned,
 * they would run pinned while mapping is off once they register again). */
static void unpin_all(void) {
  for (unsigned s = 0; s < M.order; s++)
    if (LIVE(&M.th[s]))
      pin(&M.th[s], -1);
    else if (M.th[s].used)
      unpin_left(&M.th[s], "unpin");
  SET(M.applied, false);
}

/* ---- the evaluation (M.lock held) ---- */

static uint64_t total_accesses(void) {
  return atomic_load_explicit(&M.accesses, memory_order_relaxed);
}

/* Arm the trigger `interval` accesses from now. relaxed: the mark is a
 * number compared with a counter, nothing is published with it. */
static void arm(void) {
  atomic_store_explicit(&M.mark, total_accesses() + M.interval, memory_order_relaxed);
}

/* The live threads' slots into idx, their matrix into m (n x n); n. */
static unsigned live_matrix(unsigned *idx, uint64_t **mp) {
  unsigned n = 0;
  for (unsigned s = 0; s < M.order; s++)
    if (LIVE(&M.th[s])) idx[n++] = s;
  *mp = NULL;
  if (n < 2) return n;
  uint64_t *m = calloc((size_t)n * n, sizeof *m);
  if (m == NULL) return 0;
  for (unsigned i = 0; i < n; i++)
    for (unsigned j = i + 1; j < n; j++)
      m[(size_t)i * n + j] = m[(size_t)j * n + i] = sstm__map_matrix_get(&M.det, idx[i], idx[j]);
  *mp = m;
  return n;
}

/* Map the live threads by the current matrix and apply it if it gains
 * enough; true when the placement changed. */
static bool remap(void) {
  unsigned *idx = malloc(M.order * sizeof *idx);
  unsigned *pu = malloc(M.order * sizeof *pu);
  unsigned *cur = malloc(M.order * sizeof *cur);
  uint64_t *m = NULL;
  bool changed = false;
  unsigned n = idx && pu && cur ? live_matrix(idx, &m) : 0;
  if (m == NULL) goto out;
  char err[160];
  if (sstm__map_compute(M.topo, m, n, 0, pu, err, sizeof err) != 0) goto out;
  inc(&M.computed);
  uint64_t cost_new = sstm__map_cost(M.topo, m, n, pu);
  bool complete = GET(M.applied);
  for (unsigned k = 0; k < n && complete; k++) {
    if (M.th[idx[k]].pu < 0) complete = false; /* a newcomer has no place yet */
    cur[k] = (unsigned)M.th[idx[k]].pu;
  }
  if (complete) {
    uint64_t cost_cur = sstm__map_cost(M.topo, m, n, cur);
    /* Hysteresis: keep the placement in force unless the new one is
     * predicted cheaper by more than gain_pct percent of it. */
    if (cost_cur == 0 || cost_new >= cost_cur ||
        (unsigned __int128)(cost_cur - cost_new) * 100 <=
            (unsigned __int128)cost_cur * M.gain_pct) {
      inc(&M.kept);
      atomic_store_explicit(&M.last_cost, cost_cur, memory_order_relaxed);
      goto out;
    }
  }
  for (unsigned k = 0; k < n; k++)
    if (M.th[idx[k]].pu != (int)pu[k]) {
      pin(&M.th[idx[k]], (int)pu[k]);
      changed = true;
    }
  SET(M.applied, true);
  inc(&M.mapped);
  atomic_store_explicit(&M.last_cost, cost_new, memory_order_relaxed);
out:
  free(m);
  free(idx);
  free(pu);
  free(cur);
  return changed;
}

static void topo_load(void);

/* Install the topology of the background load (M.lock held), waiting for
 * the loader if it still runs: the first evaluation of stmap needs it. The
 * loader takes no lock, so joining it under M.lock cannot deadlock. A
 * topology of one core disables the strategy from here on, as sstm_init
 * does when it loads the topology itself; a failed load too (the reason
 * in sstm_describe). block false: only if the loader has finished. */
static void topo_wait(bool block) {
  if (!M.loading) return;
  if (M.loader_lost) {
    /* A child of fork(): the loader is a thread of the parent's, which
     * this process does not have (joining it returned at once, with no
     * topology). The child loads the topology itself, once; whatever the
     * parent's loader had got when the process forked goes. */
    M.loader_lost = false;
    sstm__topo_free(M.loaded);
    M.loaded = NULL;
    topo_load();
  } else if (block) {
    pthread_join(M.loader, NULL);
  } else if (pthread_tryjoin_np(M.loader, NULL) != 0) {
    return; /* still loading */
  }
  M.loading = false;
  if (M.load_rc == 0) {
    M.topo = M.loaded;
    if (sstm__topo_single_core(M.topo)) {
      SET(M.single_core, true);
      M.pinning = false;
    }
  } else {
    char note[sizeof M.topo_note];
    snprintf(note, sizeof note, "failed: %s", M.load_err);
    memcpy(M.topo_note, note, sizeof note);
    M.pinning = false;
  }
  /* release: sstm_describe (acquire) then reads M.topo and topo_note. */
  atomic_store_explicit(&M.topo_ready, true, memory_order_release);
}

void (*sstm__map_loader_seam)(void);

/* The loader's work: the topology from the cache or hwloc, into M.loaded,
 * M.load_rc, M.load_err and M.topo_note. */
static void topo_load(void) {
  M.load_rc = sstm__topo_load_system_cached(M.cache_dir, &M.loaded, M.topo_note, sizeof M.topo_note,
                                            M.load_err, sizeof M.load_err);
}

/* The loader thread: topo_load off the application's threads. */
static void *topo_loader(void *arg) {
  (void)arg;
  if (sstm__map_loader_seam) sstm__map_loader_seam();
  topo_load();
  return NULL;
}

/* fork(): the child of a process that has run sstm_init may call no
 * schedstm function (schedstm/schedstm.h). One that does anyway, forked
 * while the topology loads in the background, knows that its loader is
 * not there: the thread is the parent's (topo_wait loads the topology
 * itself, release does not join it). Nothing is done in the parent, whose
 * fork() waits for nothing of the library's: a lock that another thread
 * held at the fork stays held in the child, as the header says.
 * Registered once per process, at the first sstm_init with a strategy. */
static void fork_child(void) { M.loader_lost = M.loading; }
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;
static int fork_rc; /* pthread_atfork's result, read after pthread_once */
static void fork_register(void) { fork_rc = pthread_atfork(NULL, NULL, fork_child); }

/* One evaluation: Equation 1, then for stmap the mapping. Returns the
 * decision. */
static bool evaluate_locked(void) {
  inc(&M.evaluations);
  uint64_t commits = M.last_commits, aborts = M.last_aborts, resets = M.last_resets;
  (void)sstm__map_stats_window(&commits, &aborts, &resets); /* unchanged on failure */
  /* After an sstm_stats_reset the window is what was counted since it
   * (the counts and the resets are read together), not a difference from
   * counts the reset cleared, which wraps, or, once the counts have grown
   * back past them, is some other window. A count that went down all the
   * same (an increment the reset raced with, stats.h) is read as reset
   * too: a difference never wraps. */
  bool reset = resets != M.last_resets || commits < M.last_commits || aborts < M.last_aborts;
  uint64_t dc = reset ? commits : commits - M.last_commits;
  uint64_t da_ = reset ? aborts : aborts - M.last_aborts;
  M.last_commits = commits;
  M.last_aborts = aborts;
  M.last_resets = resets;
  uint64_t da = sstm__map_table_used(&M.det);
  bool exact = sstm__map_table_dropped(&M.det) == 0;
  bool on = sstm__map_enable(da, exact, M.da_threshold, da_, dc);
  bool was = atomic_load_explicit(&M.enabled, memory_order_relaxed);
  atomic_store_explicit(&M.enabled, on, memory_order_relaxed);
  inc(on ? &M.decisions_on : &M.decisions_off);
  bool changed = on != was;
  topo_wait(M.strategy == SSTM_MAP_STRATEGY_STMAP); /* detect only reports it */
  if (M.strategy == SSTM_MAP_STRATEGY_STMAP && M.topo != NULL && !GET(M.single_core)) {
    if (on)
      changed |= remap();
    else if (GET(M.applied))
      unpin_all();
  }
  /* Back off while nothing changes; start over when something did, or
   * when fewer than two threads were there to map (threads still joining). */
  unsigned live = 0;
  for (unsigned s = 0; s < M.order && live < 2; s++)
    live += LIVE(&M.th[s]);
  if (changed || live < 2)
    M.interval = M.mi;
  else if (M.interval < M.mi * SSTM_MAP_BACKOFF_MAX)
    M.interval *= 2;
  arm();
  return on;
}

/* The claim of thread t (its commit or abort action, or its exit): run
 * the evaluation once, on whichever thread gets here first. */
static void run_claim(void *arg) {
  map_thread_t *t = arg;
  /* relaxed: the exchange only makes the evaluation run once; it
   * synchronises through M.lock. */
  if (!atomic_exchange_explicit(&t->due, false, memory_order_relaxed)) return;
  pthread_mutex_lock(&M.lock);
  evaluate_locked();
  pthread_mutex_unlock(&M.lock);
}

/* ---- the sampled path ---- */

/* Add the thread's pending accesses to the total; the flush that crosses
 * the mark claims the next evaluation for the thread (t->due) and, inside
 * a transaction, registers the actions that run it when the attempt ends.
 * If they cannot be registered (out of memory) the claim is given back:
 * the next flush takes it. */
static void flush(map_thread_t *t) {
  uint64_t total =
      atomic_fetch_add_explicit(&M.accesses, t->pending, memory_order_relaxed) + t->pending;
  t->pending = 0;
  uint64_t mark = atomic_load_explicit(&M.mark, memory_order_relaxed);
  /* relaxed: the claim only decides who evaluates; the evaluation itself
   * synchronises through M.lock. */
  if (total >= mark && mark != CLAIMED &&
      atomic_compare_exchange_strong_explicit(&M.mark, &mark, CLAIMED, memory_order_relaxed,
                                              memory_order_relaxed)) {
    atomic_store_explicit(&t->due, true, memory_order_relaxed);
    if (!sstm_in_tx()) return; /* the exit hook runs it */
    if (sstm_on_abort(run_claim, t) != 0 || sstm_on_commit(run_claim, t) != 0) {
      /* An abort action registered alone finds due false and does nothing. */
      atomic_store_explicit(&t->due, false, memory_order_relaxed);
      atomic_store_explicit(&M.mark, mark, memory_order_relaxed);
    }
  }
}

/* The engine's sampling hook (cfg.sample_fn), on the accessing thread,
 * every M.period accesses: Algorithm 2 of [Pasqualin20] with Algorithm 1
 * (detect.c) on this access, and the trigger. No lock, no system call
 * (sched_getcpu reads the rseq area or the vDSO). */
static void sample(void *arg, const void *addr, bool is_write) {
  (void)arg;
  (void)is_write;
  map_thread_t *t = self_thread();
  if (t == NULL) return; /* a thread not followed (a created descriptor's, or none left) */
  sstm__map_detect_access(&M.det, addr, index_of(t));
  /* relaxed, owner-written: counters and a fact for sstm-top */
  atomic_store_explicit(&t->samples, atomic_load_explicit(&t->samples, memory_order_relaxed) + 1,
                        memory_order_relaxed);
  int cpu = sched_getcpu();
  if (cpu != atomic_load_explicit(&t->seen, memory_order_relaxed)) {
    atomic_store_explicit(&t->seen, cpu, memory_order_relaxed);
    sstm__map_stt_cpu(cpu, atomic_load_explicit(&t->cpu, memory_order_relaxed));
  }
  t->pending += M.period;
  if (t->pending >= SSTM_MAP_FLUSH) flush(t);
}

/* ---- hooks ---- */

/* Whether the OS thread tid has ended (tgkill with no signal: ESRCH). A
 * reused tid looks alive: its index then just stays taken. */
static bool thread_gone(pid_t tid) {
  return syscall(SYS_tgkill, getpid(), tid, 0) != 0 && errno == ESRCH;
}

/* Give the calling OS thread an index (M.lock held): the lowest never
 * used, else one whose thread has ended; NULL when none is free. Its row
 * and counters start clean. */
static map_thread_t *take_index(void) {
  map_thread_t *t = NULL;
  for (unsigned i = 0; i < M.order && t == NULL; i++)
    if (!M.th[i].used) t = &M.th[i];
  for (unsigned i = 0; i < M.order && t == NULL; i++)
    if (!LIVE(&M.th[i]) && thread_gone(M.th[i].tid)) t = &M.th[i];
  if (t == NULL) return NULL;
  unsigned ix = index_of(t);
  bool reused = t->used;
  t->used = true;
  t->tid = (pid_t)syscall(SYS_gettid);
  t->pu = -1;
  t->pending = 0;
  atomic_store_explicit(&t->due, false, memory_order_relaxed);
  atomic_store_explicit(&t->cpu, -1, memory_order_relaxed);
  atomic_store_explicit(&t->samples, 0, memory_order_relaxed);
  unsigned hw = atomic_load_explicit(&M.hiwater, memory_order_relaxed);
  /* A newcomer on a reused index starts clean. An index never given before
   * has only zero cells: an event's two indices are the accessing thread's
   * and those of the address's sharers, all given. */
  if (M.detecting && reused) sstm__map_matrix_clear(&M.det, ix, hw);
  if (ix + 1 > hw) atomic_store_explicit(&M.hiwater, ix + 1, memory_order_relaxed);
  self_ix = ix + 1;
  self_gen = M.gen;
  return t;
}

static void on_thread_init(void *arg) {
  (void)arg;
  pthread_mutex_lock(&M.lock);
  map_thread_t *t = self_thread();
  bool first = t == NULL;
  if (t == NULL && (t = take_index()) == NULL) {
    pthread_mutex_unlock(&M.lock);
    return; /* every index is held by a thread that may come back */
  }
  unsigned ix = index_of(t);
  t->pt = pthread_self();
  t->slot = sstm_desc_slot(sstm_self());
  SET(t->live, true);
  /* A first registration sets the thread's affinity, whatever it inherited
   * from its creator (a pinned thread's children start pinned to its CPU):
   * its PU under a static strategy, else the process's CPUs until a
   * mapping places it. A returning thread keeps its PU and CPU: its
   * affinity is its own. */
  if (first && M.static_pu != NULL)
    pin_why(t, ix < M.static_n ? (int)M.static_pu[ix] : -1, true, "register");
  else if (first && M.pinning)
    pin_why(t, -1, true, "register");
  pthread_mutex_unlock(&M.lock);
  int cpu = sched_getcpu();
  atomic_store_explicit(&t->seen, cpu, memory_order_relaxed);
  sstm__map_stt_cpu(cpu, atomic_load_explicit(&t->cpu, memory_order_relaxed));
}

static void on_thread_exit(void *arg) {
  (void)arg;
  map_thread_t *t = self_thread();
  if (t == NULL) return;
  /* A thread that leaves before its first flush still counts towards the
   * trigger, and may cross the mark with its last accesses; a claim not
   * yet run (its actions could not be registered) runs here. */
  if (t->pending) flush(t);
  run_claim(t);
  pthread_mutex_lock(&M.lock);
  SET(t->live, false);
  /* Its index, row, PU and CPU stay with the OS thread, which may register
   * again; a dump at shutdown shows its row. */
  pthread_mutex_unlock(&M.lock);
}

/* Thread events only: transactions pay nothing for them (hooks.h). */
static const sstm_hooks_t thread_hooks = {.thread_init = on_thread_init,
                                          .thread_exit = on_thread_exit};

/* ---- lifecycle ---- */

static void release(void) {
  if (M.hooks >= 0) sstm_hooks_remove(M.hooks);
  M.hooks = -1;
  if (M.loading) {
    if (!M.loader_lost) pthread_join(M.loader, NULL); /* lost: a fork child's (topo_wait) */
    M.loading = M.loader_lost = false;
    sstm__topo_free(M.loaded);
  }
  M.loaded = NULL;
  if (M.log) fclose(M.log);
  M.log = NULL;
  free(M.cache_dir);
  M.cache_dir = NULL;
  sstm__map_detect_fini(&M.det);
  sstm__topo_free(M.topo);
  free(M.th);
  free(M.static_pu);
  free(M.dump);
  M.topo = NULL;
  M.th = NULL;
  M.static_pu = NULL;
  M.dump = NULL;
  atomic_store_explicit(&M.started, false, memory_order_release);
}

static int fail(int rc, const char *what, const char *why) {
  sstm__set_error("sstm_init: thread mapping: %s: %s", what, why);
  release();
  return rc;
}

/* Whether sstm_shutdown() will be able to create or truncate the file at
 * path (cfg.map_dump): asked at sstm_init(), so that a path that cannot be
 * written fails there with the reason, instead of the matrix of the whole
 * run being lost at the shutdown, which has no way left to say so. An
 * existing file is opened without truncation; a missing one is created and
 * removed again. false: the reason in err. */
static bool dump_path_writable(const char *path, char *err, size_t len) {
  int fd = open(path, O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT &&
      (fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOCTTY | O_CLOEXEC, 0666)) >= 0)
    (void)unlink(path);
  if (fd < 0) {
    snprintf(err, len, "%s: %s", path, strerror(errno));
    return false;
  }
  close(fd);
  return true;
}

static int map_init(const sstm_config_t *cfg, sstm_sample_fn *fn, unsigned *period) {
  *fn = NULL;
  *period = 0;
  M.strategy = cfg->map;
  M.detecting = M.pinning = M.simulated = M.loading = M.loader_lost = false;
  SET(M.single_core, false);
  SET(M.applied, false);
  atomic_store_explicit(&M.topo_ready, false, memory_order_relaxed);
  M.topo = M.loaded = NULL;
  M.topo_note[0] = '\0';
  M.hooks = -1;
  if (cfg->map == SSTM_MAP_STRATEGY_NONE) return 0;
  char err[256];
  int rc;
  pthread_once(&fork_once, fork_register);
  if (fork_rc != 0) return fail(SSTM_ENOMEM, "its fork handlers", strerror(fork_rc));
  if (sched_getaffinity(0, sizeof M.allowed, &M.allowed) != 0)
    return fail(SSTM_EINVAL, "sched_getaffinity", strerror(errno));
  sstm__topo_cpu_list(&M.allowed, M.allowed_list, sizeof M.allowed_list);
  bool detecting = cfg->map == SSTM_MAP_STRATEGY_STMAP || cfg->map == SSTM_MAP_STRATEGY_DETECT;
  if (cfg->map_topology) {
    M.simulated = true;
    /* An existing file is XML, anything else a synthetic description. */
    FILE *f = fopen(cfg->map_topology, "r");
    int open_errno = errno;
    if (f) fclose(f);
    rc = f ? sstm__topo_load_xml(cfg->map_topology, &M.topo, err, sizeof err)
           : sstm__topo_load_synthetic(cfg->map_topology, &M.topo, err, sizeof err);
    if (rc == SSTM_EINVAL && !f && strchr(cfg->map_topology, '/')) {
      /* A path (no synthetic description has a '/'): why it was not read
       * as an XML file is what the user needs to hear. */
      size_t used = strnlen(err, sizeof err);
      snprintf(err + used, sizeof err - used, " (not an XML file to read either: %s)",
               strerror(open_errno));
    }
    snprintf(M.topo_note, sizeof M.topo_note, "%s", f ? "xml" : "synthetic");
  } else {
    if (cfg->map_topo_cache && cfg->map_topo_cache[0] &&
        (M.cache_dir = strdup(cfg->map_topo_cache)) == NULL)
      return fail(SSTM_ENOMEM, "map_topo_cache", "out of memory");
    /* stmap and detect need the topology only at their first evaluation:
     * on a cache miss hwloc loads it in a thread of its own while the
     * program starts (a process of one CPU has one core: no thread). The
     * static strategies place each thread as it registers: they load it
     * here. */
    rc = sstm__topo_cache_lookup(M.cache_dir, &M.topo, M.topo_note, sizeof M.topo_note);
    if (rc != 0 && detecting && CPU_COUNT(&M.allowed) > 1) {
      sigset_t all, old;
      sigfillset(&all);
      /* The loader blocks every signal: the program's go to its threads. */
      pthread_sigmask(SIG_SETMASK, &all, &old);
      M.loading = pthread_create(&M.loader, NULL, topo_loader, NULL) == 0;
      pthread_sigmask(SIG_SETMASK, &old, NULL);
    }
    if (rc != 0 && !M.loading)
      rc = sstm__topo_load_system_cached(M.cache_dir, &M.topo, M.topo_note, sizeof M.topo_note, err,
                                         sizeof err);
    else
      rc = 0;
  }
  if (rc != 0) return fail(rc, "the topology", err);
  if (M.topo) {
    SET(M.single_core, sstm__topo_single_core(M.topo));
    atomic_store_explicit(&M.topo_ready, true, memory_order_relaxed); /* published by started */
  }
  if (cfg->map_log) {
    if ((M.log = fopen(cfg->map_log, "we")) == NULL) {
      snprintf(err, sizeof err, "%s: %s", cfg->map_log, strerror(errno));
      return fail(SSTM_EINVAL, "map_log", err);
    }
    fprintf(M.log, "schedstm-map-log 1\npid %d\nallowed %s\nstrategy %s\n", (int)getpid(),
            M.allowed_list, strategy_label[cfg->map]);
    fflush(M.log);
  }
  M.order = cfg->max_threads < SSTM_MAP_MAX_THREADS ? cfg->max_threads : SSTM_MAP_MAX_THREADS;
  M.gen++; /* the indices threads hold from an earlier sstm_init are void */
  M.th = calloc(M.order, sizeof *M.th);
  if (M.th == NULL) return fail(SSTM_ENOMEM, "the thread table", "out of memory");
  for (unsigned s = 0; s < M.order; s++) {
    M.th[s].pu = -1;
    atomic_init(&M.th[s].cpu, -1);
    atomic_init(&M.th[s].seen, -1);
  }
  bool single = GET(M.single_core);
  M.pinning = !single && !M.simulated && cfg->map != SSTM_MAP_STRATEGY_DETECT;
  bool disabled = single && cfg->map != SSTM_MAP_STRATEGY_DETECT;
  if (!disabled) switch (cfg->map) {
    case SSTM_MAP_STRATEGY_COMPACT:
    case SSTM_MAP_STRATEGY_SCATTER:
    case SSTM_MAP_STRATEGY_ROUND_ROBIN: {
      sstm_map_static_t s = cfg->map == SSTM_MAP_STRATEGY_COMPACT   ? SSTM_MAP_COMPACT
                            : cfg->map == SSTM_MAP_STRATEGY_SCATTER ? SSTM_MAP_SCATTER
                                                                    : SSTM_MAP_ROUND_ROBIN;
      M.static_n = M.order;
      M.static_pu = malloc(M.order * sizeof *M.static_pu);
      if (M.static_pu == NULL) return fail(SSTM_ENOMEM, "the placement", "out of memory");
      if ((rc = sstm__map_static(M.topo, s, M.order, M.static_pu, err, sizeof err)) != 0)
        return fail(rc, "the placement", err);
      break;
    }
    case SSTM_MAP_STRATEGY_FILE: {
      uint64_t *m;
      unsigned n;
      if ((rc = sstm__cmat_load(cfg->map_file, &m, &n, err, sizeof err)) != 0)
        return fail(rc == SSTM_EPERM ? SSTM_EINVAL : rc, "the matrix file", err);
      M.static_n = n;
      M.static_pu = malloc(n * sizeof *M.static_pu);
      rc = M.static_pu ? sstm__map_compute(M.topo, m, n, 0, M.static_pu, err, sizeof err)
                       : SSTM_ENOMEM;
      free(m);
      if (rc != 0) return fail(rc, "the mapping of the matrix file", M.static_pu ? err : "");
      break;
    }
    case SSTM_MAP_STRATEGY_STMAP:
    case SSTM_MAP_STRATEGY_DETECT: M.detecting = true; break;
    default: break;
    }
  if (M.detecting) {
    if (sstm__map_detect_init(&M.det, cfg->map_table_bits, M.order) != 0)
      return fail(SSTM_ENOMEM, "the address table", strerror(errno));
    M.period = cfg->map_si ? cfg->map_si : 1;
    M.mi = M.interval = cfg->map_mi;
    M.da_threshold = cfg->map_da_threshold;
    M.gain_pct = cfg->map_gain_pct;
    M.last_commits = M.last_aborts = M.last_resets = 0;
    atomic_store_explicit(&M.accesses, 0, memory_order_relaxed);
    atomic_store_explicit(&M.mark, M.mi, memory_order_relaxed);
    *fn = sample;
    *period = M.period;
  }
  if (cfg->map_dump && M.detecting && !dump_path_writable(cfg->map_dump, err, sizeof err))
    return fail(SSTM_EINVAL, "map_dump", err);
  if (cfg->map_dump && (M.dump = strdup(cfg->map_dump)) == NULL)
    return fail(SSTM_ENOMEM, "map_dump", "out of memory");
  atomic_store_explicit(&M.hiwater, 0, memory_order_relaxed);
  atomic_store_explicit(&M.enabled, false, memory_order_relaxed);
  _Atomic uint64_t *ctr[] = {&M.evaluations, &M.decisions_on, &M.decisions_off, &M.computed,
                             &M.mapped,      &M.kept,         &M.migrations,    &M.unpins,
                             &M.fallbacks,   &M.pin_errors,   &M.last_cost};
  for (size_t i = 0; i < sizeof ctr / sizeof ctr[0]; i++)
    atomic_store_explicit(ctr[i], 0, memory_order_relaxed);
  if (M.detecting || M.static_pu) {
    rc = sstm_hooks_add(&thread_hooks, NULL);
    if (rc < 0) return fail(rc, "its hooks", "every hook slot is taken");
    M.hooks = rc;
  }
  /* release: the statistics and API calls that see started (acquire) see
   * the tables above. */
  atomic_store_explicit(&M.started, true, memory_order_release);
  return 0;
}

static int dump_to(const char *path) {
  unsigned n = atomic_load_explicit(&M.hiwater, memory_order_relaxed);
  if (n == 0) n = 1;
  uint64_t *m = calloc((size_t)n * n, sizeof *m);
  if (m == NULL) return sstm__set_error("sstm_map_dump: out of memory"), SSTM_ENOMEM;
  for (unsigned i = 0; i < n; i++)
    for (unsigned j = i + 1; j < n; j++)
      m[(size_t)i * n + j] = m[(size_t)j * n + i] = sstm__map_matrix_get(&M.det, i, j);
  char err[256];
  int rc = sstm__cmat_save(path, m, n, err, sizeof err);
  free(m);
  if (rc != 0) sstm__set_error("sstm_map_dump: %s", err);
  return rc;
}

static void map_fini(void) {
  if (!atomic_load_explicit(&M.started, memory_order_acquire)) return;
  if (M.detecting && M.dump) (void)dump_to(M.dump);
  /* Every thread that registered has left by now; those the library
   * pinned and that live on, the caller among them, get the process's CPU
   * set back: no thread keeps a pin of a library that is no longer there,
   * which an sstm_init with strategy none would leave for good. A thread
   * the library never pinned, or whose affinity the program set since,
   * keeps what it has (unpin_left). */
  pthread_mutex_lock(&M.lock);
  for (unsigned s = 0; s < M.order; s++)
    if (M.th[s].used) unpin_left(&M.th[s], "shutdown");
  pthread_mutex_unlock(&M.lock);
  /* API calls of threads the library does not follow (a monitor reading
   * the statistics) may still be reading the tables: no new one reads
   * them once started is cleared, and those that do are waited for.
   * seq_cst: the store-buffering pair with enter (either it sees started
   * cleared, or this sees its count); acquire, too, with leave's release:
   * its reads come before the frees. */
  atomic_store_explicit(&M.started, false, memory_order_seq_cst);
  while (atomic_load_explicit(&M.users, memory_order_seq_cst) != 0)
    sched_yield();
  release();
}

/* release: the reads of the tables come before map_fini's frees (its
 * load of the count). */
static void leave(void) { atomic_fetch_sub_explicit(&M.users, 1, memory_order_release); }

/* An API call that reads the tables enters first and leaves when done:
 * false (nothing to leave) when the subsystem is not started, or is being
 * shut down (map_fini). seq_cst: the store-buffering pair with map_fini
 * (either this sees started cleared, or map_fini sees the count); the
 * load is also the acquire that pairs with map_init's release. */
static bool enter(void) {
  atomic_fetch_add_explicit(&M.users, 1, memory_order_seq_cst);
  if (atomic_load_explicit(&M.started, memory_order_seq_cst)) return true;
  leave();
  return false;
}

/* map_describe's line, between enter and leave. */
static int describe_entered(char *at, size_t room) {
  if (M.strategy == SSTM_MAP_STRATEGY_NONE) return snprintf(at, room, " map=none");
  const char *name = strategy_label[M.strategy];
  /* The topology, and where it came from (the cache, hwloc, a background
   * load still running). */
  pthread_mutex_lock(&M.lock);
  topo_wait(false);
  pthread_mutex_unlock(&M.lock);
  char topo[sizeof M.topo_note + 200];
  if (!atomic_load_explicit(&M.topo_ready, memory_order_acquire))
    snprintf(topo, sizeof topo, "map-topo=\"?\" map-topo-from=\"hwloc, loading\"");
  else
    snprintf(topo, sizeof topo, "map-topo=\"%s\" map-topo-from=\"%s\"",
             M.topo ? sstm__topo_describe(M.topo) : "?", M.topo_note);
  if (GET(M.single_core) && M.strategy != SSTM_MAP_STRATEGY_DETECT)
    return snprintf(at, room, " map=%s(off: single core) %s", name, topo);
  if (!M.detecting)
    return snprintf(at, room, " map=%s%s %s", name, M.simulated ? "(simulated)" : "", topo);
  return snprintf(
      at, room, " map=%s%s map-si=%u map-mi=%llu map-da=%llu map-gain=%u%% map-table=%llu %s", name,
      M.simulated ? "(simulated)" : "", M.period == 1 ? 0 : M.period, (unsigned long long)M.mi,
      (unsigned long long)M.da_threshold, M.gain_pct, (unsigned long long)M.det.mask + 1, topo);
}

static int map_describe(char *buf, size_t len) {
  size_t used = buf ? strnlen(buf, len) : 0;
  char *at = buf && used < len ? buf + used : NULL;
  size_t room = at ? len - used : 0;
  if (!enter()) return snprintf(at, room, " map=none");
  int n = describe_entered(at, room);
  leave();
  return n;
}

const sstm_map_runtime_t sstm__map_runtime = {
    .init = map_init, .fini = map_fini, .describe = map_describe};

/* ---- the public API ---- */

/* 0 when entered (the caller leaves), else SSTM_ESTATE with the message. */
static int need_started(const char *who) {
  if (enter()) return 0;
  sstm__set_error("%s: not initialised (sstm_init)", who);
  return SSTM_ESTATE;
}

SSTM_API int sstm_map_stats_get_sized(sstm_map_stats_t *out, size_t size) {
  if (out == NULL || size < sizeof(sstm_map_stats_t)) {
    sstm__set_error("sstm_map_stats_get: %s", out ? "size too small" : "out is NULL");
    return SSTM_EINVAL;
  }
  sstm_map_stats_t s;
  memset(&s, 0, sizeof s);
  if (!enter()) {
    if (!sstm_initialized()) {
      sstm__set_error("sstm_map_stats_get: not initialised (sstm_init)");
      return SSTM_ESTATE;
    }
    s.strategy = SSTM_MAP_STRATEGY_NONE; /* initialised without mapping */
  } else {
    s.strategy = M.strategy;
    s.single_core = GET(M.single_core);
    s.simulated = M.simulated;
    s.enabled = atomic_load_explicit(&M.enabled, memory_order_relaxed);
    s.applied = GET(M.applied);
    unsigned hw = atomic_load_explicit(&M.hiwater, memory_order_relaxed);
    for (unsigned i = 0; i < hw && i < M.order; i++) {
      s.threads += LIVE(&M.th[i]);
      s.samples += atomic_load_explicit(&M.th[i].samples, memory_order_relaxed);
    }
    if (M.detecting) {
      s.accesses = total_accesses();
      s.events = sstm__map_events(&M.det);
      s.distinct = sstm__map_table_used(&M.det);
      s.dropped = sstm__map_table_dropped(&M.det);
    }
    s.evaluations = atomic_load_explicit(&M.evaluations, memory_order_relaxed);
    s.decisions_on = atomic_load_explicit(&M.decisions_on, memory_order_relaxed);
    s.decisions_off = atomic_load_explicit(&M.decisions_off, memory_order_relaxed);
    s.mappings_computed = atomic_load_explicit(&M.computed, memory_order_relaxed);
    s.mappings_applied = atomic_load_explicit(&M.mapped, memory_order_relaxed);
    s.mappings_kept = atomic_load_explicit(&M.kept, memory_order_relaxed);
    s.migrations = atomic_load_explicit(&M.migrations, memory_order_relaxed);
    s.unpins = atomic_load_explicit(&M.unpins, memory_order_relaxed);
    s.pin_fallbacks = atomic_load_explicit(&M.fallbacks, memory_order_relaxed);
    s.pin_errors = atomic_load_explicit(&M.pin_errors, memory_order_relaxed);
    s.last_cost = atomic_load_explicit(&M.last_cost, memory_order_relaxed);
    leave();
  }
  size_t n = size < sizeof s ? size : sizeof s;
  s.size = n;
  memcpy(out, &s, n);
  if (size > n) memset((char *)out + n, 0, size - n);
  return 0;
}

SSTM_API int sstm_map_thread_cpu(unsigned slot, int *cpu, int *seen, int *pu) {
  int rc = need_started("sstm_map_thread_cpu");
  if (rc == SSTM_ESTATE && sstm_initialized()) {
    sstm__set_error("sstm_map_thread_cpu: thread mapping is off (strategy none)");
    return SSTM_EINVAL;
  }
  if (rc) return rc;
  pthread_mutex_lock(&M.lock);
  const map_thread_t *t = NULL;
  for (unsigned i = 0; i < M.order && t == NULL; i++)
    if (LIVE(&M.th[i]) && M.th[i].slot == slot) t = &M.th[i];
  if (t != NULL) {
    if (cpu) *cpu = atomic_load_explicit(&t->cpu, memory_order_relaxed);
    if (seen) *seen = atomic_load_explicit(&t->seen, memory_order_relaxed);
    if (pu) *pu = t->pu;
  }
  pthread_mutex_unlock(&M.lock);
  leave();
  if (t == NULL) {
    sstm__set_error("sstm_map_thread_cpu: slot %u has no registered thread followed by the "
                    "mapping",
                    slot);
    return SSTM_EINVAL;
  }
  return 0;
}

/* 0 when entered with detection on (the caller leaves), else an error. */
static int need_detection(const char *who) {
  int rc = need_started(who);
  if (rc == SSTM_ESTATE && sstm_initialized()) rc = SSTM_EINVAL;
  if (rc == 0 && !M.detecting) {
    leave();
    rc = SSTM_EINVAL;
  }
  if (rc == SSTM_EINVAL)
    sstm__set_error("%s: the strategy has no detection (stmap and detect have)", who);
  return rc;
}

SSTM_API int sstm_map_matrix(uint64_t *m, unsigned n) {
  int rc = need_detection("sstm_map_matrix");
  if (rc) return rc;
  if (m == NULL && n > 0) {
    leave();
    return sstm__set_error("sstm_map_matrix: m is NULL"), SSTM_EINVAL;
  }
  for (unsigned i = 0; i < n; i++)
    for (unsigned j = 0; j < n; j++)
      m[(size_t)i * n + j] = sstm__map_matrix_get(&M.det, i, j);
  rc = (int)atomic_load_explicit(&M.hiwater, memory_order_relaxed);
  leave();
  return rc;
}

SSTM_API int sstm_map_dump(const char *path) {
  int rc = need_detection("sstm_map_dump");
  if (rc) return rc;
  rc = path ? dump_to(path) : (sstm__set_error("sstm_map_dump: path is NULL"), SSTM_EINVAL);
  leave();
  return rc;
}

SSTM_API int sstm_map_evaluate(void) {
  int rc = need_detection("sstm_map_evaluate");
  if (rc) return rc;
  if (sstm_in_tx()) {
    leave();
    sstm__set_error("sstm_map_evaluate: called inside a transaction");
    return SSTM_ESTATE;
  }
  pthread_mutex_lock(&M.lock);
  bool on = evaluate_locked();
  pthread_mutex_unlock(&M.lock);
  leave();
  return on ? 1 : 0;
}
