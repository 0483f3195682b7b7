/* SPDX-License-Identifier: MIT */
/* OS scheduling facilities (see os/sched.h). All of this is off the hot
 * path: probes run once, levers run on conflicts. Plain arguments only:
 * the public entry points that need the engine (sstm_sched_set, ...) are
 * in core/os_glue.c. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/rseq.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "os.h"    /* os/os.h: src/os includes only its own headers */
#include "sched.h" /* os/sched.h (this directory's, not <sched.h>) */

unsigned sstm__cpus_allowed(void) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
    return (unsigned)CPU_COUNT(&set);
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (unsigned)n : 1u;
}

bool sstm__cpus_idle_ns(uint64_t *ns, unsigned *ncpu) {
  cpu_set_t set;
  bool masked = sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0;
  return sstm__cpus_idle_ns_in("/proc/stat", masked ? &set : NULL, ns, ncpu);
}

/* One line of /proc/stat, NUL-terminated: add a per-CPU line's idle and
 * iowait ticks ("cpuN user nice system idle iowait ...", the total line
 * has no N) when CPU N is in set (NULL: any). */
static void idle_line(const char *line, const cpu_set_t *set, uint64_t *ticks, unsigned *n) {
  if (strncmp(line, "cpu", 3) != 0 || line[3] < '0' || line[3] > '9') return;
  char *p = (char *)line + 3;
  unsigned long cpu = strtoul(p, &p, 10);
  unsigned long long f[5];
  for (int k = 0; k < 5; k++) {
    char *q;
    f[k] = strtoull(p, &q, 10);
    if (q == p) return; /* not a CPU line of this format */
    p = q;
  }
  if (set && (cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, set))) return;
  *ticks += f[3] + f[4];
  (*n)++;
}

bool sstm__cpus_idle_ns_in(const char *path, const void *mask, uint64_t *ns, unsigned *ncpu) {
  const cpu_set_t *set = mask;
  long tck = sysconf(_SC_CLK_TCK);
  if (tck <= 0) tck = 100;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  /* The per-CPU lines follow the total, one short line per online CPU, a
   * host's worth of them (16 KiB held only some 230 of them whole): read
   * whole lines through a window, and stop at the first line after them
   * (intr, whose length grows with the interrupts). */
  char buf[4096];
  size_t len = 0;
  uint64_t ticks = 0;
  unsigned n = 0;
  for (bool done = false; !done;) {
    ssize_t r = read(fd, buf + len, sizeof buf - 1 - len);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break; /* a last line without its '\n' is left out */
    len += (size_t)r;
    buf[len] = '\0';
    char *line = buf, *nl;
    while (!done && (nl = memchr(line, '\n', (size_t)(buf + len - line))) != NULL) {
      *nl = '\0';
      if (strncmp(line, "cpu", 3) != 0)
        done = true; /* past the CPU lines */
      else
        idle_line(line, set, &ticks, &n);
      line = nl + 1;
    }
    len = (size_t)(buf + len - line);
    if (len == sizeof buf - 1) break; /* a line this long is no CPU line */
    memmove(buf, line, len);
  }
  close(fd);
  if (n == 0) return false;
  *ns = ticks * (1000000000ull / (uint64_t)tck);
  *ncpu = n;
  return true;
}

/* sched_attr as in linux/sched/types.h (glibc 2.36 has no wrapper). */
struct sstm_sched_attr {
  uint32_t size;
  uint32_t sched_policy;
  uint64_t sched_flags;
  int32_t sched_nice;
  uint32_t sched_priority;
  uint64_t sched_runtime, sched_deadline, sched_period;
  uint32_t sched_util_min, sched_util_max;
};

static int getattr(int tid, struct sstm_sched_attr *a) {
  memset(a, 0, sizeof *a);
  return (int)syscall(SYS_sched_getattr, tid, a, (unsigned)sizeof *a, 0u);
}
static int setattr(int tid, struct sstm_sched_attr *a) {
  a->size = sizeof *a;
  return (int)syscall(SYS_sched_setattr, tid, a, 0u);
}

static bool save(int tid, sstm_prio_saved_t *s) {
  struct sstm_sched_attr a;
  if (getattr(tid, &a) != 0) return false;
  s->policy = (int)a.sched_policy;
  s->nice = a.sched_nice;
  s->runtime = a.sched_runtime;
  return true;
}

#define LOWER_SLICE_NS 100000 /* the slice lever's: 0.1 ms, the minimum */

bool sstm__lever_lower(sstm_lever_t l, int tid, sstm_prio_saved_t *saved) {
  if (l == SSTM_LEVER_NONE || !save(tid, saved)) return false;
  struct sstm_sched_attr a;
  if (getattr(tid, &a) != 0) return false;
  switch (l) {
  case SSTM_LEVER_NICE: return setpriority(PRIO_PROCESS, (id_t)tid, 19) == 0;
  case SSTM_LEVER_IDLE: a.sched_policy = SCHED_IDLE; break;
  case SSTM_LEVER_BATCH: a.sched_policy = SCHED_BATCH; break;
  case SSTM_LEVER_SLICE: a.sched_runtime = LOWER_SLICE_NS; break;
  default: return false;
  }
  a.sched_flags = 0;
  return setattr(tid, &a) == 0;
}

/* Only what the lever set is put back: a thread whose attributes changed
 * since the lowering (sstm_sched_set, or anyone) keeps the change, which
 * the restore would otherwise undo. */
bool sstm__lever_restore(sstm_lever_t l, int tid, const sstm_prio_saved_t *s) {
  if (l == SSTM_LEVER_NICE) {
    errno = 0;
    int nice = getpriority(PRIO_PROCESS, (id_t)tid);
    if (errno != 0) return false;
    if (nice != 19) return true; /* changed since: the change stands */
    return setpriority(PRIO_PROCESS, (id_t)tid, s->nice) == 0;
  }
  struct sstm_sched_attr a;
  if (getattr(tid, &a) != 0) return false;
  bool as_lowered = l == SSTM_LEVER_IDLE    ? a.sched_policy == SCHED_IDLE
                    : l == SSTM_LEVER_BATCH ? a.sched_policy == SCHED_BATCH
                                            : a.sched_runtime == LOWER_SLICE_NS;
  if (!as_lowered) return true; /* changed since: the change stands */
  a.sched_policy = (uint32_t)s->policy;
  a.sched_nice = s->nice;
  a.sched_runtime = s->runtime;
  a.sched_flags = 0;
  return setattr(tid, &a) == 0;
}

static const char *const lever_names[] = {"none", "nice", "idle", "batch", "slice"};

const char *sstm__lever_name(sstm_lever_t l) { return (unsigned)l < 5 ? lever_names[l] : "?"; }

/* Whether lever l lowers the calling thread and puts it back; *lowers
 * says whether the lowering changed anything (a thread already at nice 19
 * "lowers" to nice 19 and back, which says nothing about the lever). */
static bool lever_works(sstm_lever_t l, bool *lowers) {
  int tid = sstm__gettid();
  sstm_prio_saved_t s, low;
  *lowers = false;
  if (!sstm__lever_lower(l, tid, &s)) return false;
  *lowers =
      save(tid, &low) && (low.policy != s.policy || low.nice != s.nice || low.runtime != s.runtime);
  return sstm__lever_restore(l, tid, &s); /* false: a one-way change */
}

/* Run fn(arg) on a new thread and wait for it. Probes that change the
 * calling thread's scheduling attributes run there: a lever that cannot be
 * undone (nice or SCHED_IDLE with the default RLIMIT_NICE of 0) then leaves
 * only that thread lowered, not the thread that called sstm_init() and the
 * threads it creates afterwards, which inherit its attributes. The new
 * thread inherits the caller's attributes, so it probes from the same
 * starting point. Returns false if no thread could be created (fn not run). */
static bool on_scratch_thread(void *(*fn)(void *), void *arg) {
  pthread_t t;
  if (pthread_create(&t, NULL, fn, arg) != 0) return false;
  pthread_join(t, NULL);
  return true;
}

struct lever_try {
  sstm_lever_t lever;
  bool works, lowers;
};

static void *lever_probe_thread(void *arg) {
  struct lever_try *t = arg;
  t->works = lever_works(t->lever, &t->lowers);
  return NULL;
}

/* Lever l tried on a scratch thread: whether it can be undone, and in
 * *lowers whether it lowered the thread at all. */
static bool lever_try(sstm_lever_t l, bool *lowers) {
  struct lever_try t = {l, false, false};
  bool ran = on_scratch_thread(lever_probe_thread, &t);
  *lowers = ran && t.lowers;
  return ran && t.works;
}

sstm_lever_t sstm__lever_probe(void) {
  /* One fresh thread per lever: a one-way lever leaves its probing thread
   * lowered (nice 19, SCHED_IDLE), which would make the next lever's probe
   * start from there and fail (leaving SCHED_IDLE needs privilege). A
   * lever that leaves the thread as it was (nice for a program already at
   * nice 19) would lower no loser: the next one is tried. */
  for (sstm_lever_t l = SSTM_LEVER_NICE; l <= SSTM_LEVER_SLICE; l++) {
    bool lowers;
    if (lever_try(l, &lowers) && lowers) return l;
  }
  return SSTM_LEVER_NONE;
}

bool sstm__lever_undoable(sstm_lever_t l) {
  if (l == SSTM_LEVER_NONE) return true;
  bool lowers;
  return lever_try(l, &lowers);
}

int sstm__conflict_prio_encode(int policy, int nice, int rt_priority) {
  switch (policy) {
  case SCHED_FIFO:
  case SCHED_RR: return 3000 + rt_priority;
  case SCHED_OTHER: return 2000 + (19 - nice);
  case SCHED_BATCH: return 1000 + (19 - nice);
  default: return 0; /* SCHED_IDLE and unknown */
  }
}

int sstm__conflict_prio_of(int tid, int *policy, int *nice) {
  struct sstm_sched_attr a;
  if (tid == 0 || getattr(tid, &a) != 0) {
    if (policy) *policy = SCHED_OTHER;
    if (nice) *nice = 0;
    return sstm__conflict_prio_encode(SCHED_OTHER, 0, 0);
  }
  if (policy) *policy = (int)a.sched_policy;
  if (nice) *nice = a.sched_nice;
  return sstm__conflict_prio_encode((int)a.sched_policy, a.sched_nice, (int)a.sched_priority);
}

/* ---- ext ---- */

#ifndef PR_RSEQ_SLICE_EXTENSION
#define PR_RSEQ_SLICE_EXTENSION 79
#define PR_RSEQ_SLICE_EXTENSION_SET 2
#define PR_RSEQ_SLICE_EXT_ENABLE 1
#endif
#define SSTM_RSEQ_FLAG_SLICE_EXT_AVAILABLE (1u << 4)
#define SSTM_RSEQ_FLAG_SLICE_EXT_ENABLED (1u << 5)
#define SSTM_SYS_RSEQ_SLICE_YIELD 471
/* Offset of the slice-control word in struct rseq on Linux >= 7.0 (after
 * cpu_id_start, cpu_id, rseq_cs, flags, node_id, mm_cid). */
#define SSTM_RSEQ_SLICE_CTRL_OFFSET 28

static const char *const ext_names[] = {"none", "rseq", "slice"};

const char *sstm__ext_mode_name(sstm_ext_mode_t m) { return (unsigned)m < 3 ? ext_names[m] : "?"; }

sstm_ext_mode_t sstm__ext_choose(const sstm_ext_probe_t *p) {
  if (p->rseq_registered && (p->rseq_flags & SSTM_RSEQ_FLAG_SLICE_EXT_AVAILABLE) &&
      p->prctl_rc == 0)
    return SSTM_EXT_RSEQ;
  if (p->setattr_rc == 0) return SSTM_EXT_SLICE;
  return SSTM_EXT_NONE;
}

static struct rseq *rseq_area(void) {
  if (__rseq_size == 0) return NULL;
  return (struct rseq *)(void *)((char *)__builtin_thread_pointer() + __rseq_offset);
}

static int rseq_slice_enable(void) {
  return prctl(PR_RSEQ_SLICE_EXTENSION, PR_RSEQ_SLICE_EXTENSION_SET, PR_RSEQ_SLICE_EXT_ENABLE, 0,
               0);
}

static void *ext_probe_thread(void *arg) {
  sstm_ext_probe_t *p = arg;
  struct rseq *r = rseq_area();
  p->rseq_registered = r != NULL;
  p->rseq_flags = r ? __atomic_load_n(&r->flags, __ATOMIC_RELAXED) : 0;
  p->prctl_rc = -1;
  if (p->rseq_registered && (p->rseq_flags & SSTM_RSEQ_FLAG_SLICE_EXT_AVAILABLE))
    p->prctl_rc = rseq_slice_enable();
  /* Custom slice: set our own to the current value (a no-op change) to see
   * whether the kernel accepts sched_runtime for SCHED_OTHER (>= 6.12). */
  struct sstm_sched_attr a;
  p->setattr_rc = -1;
  if (getattr(0, &a) == 0 && (a.sched_policy == SCHED_OTHER || a.sched_policy == SCHED_BATCH)) {
    a.sched_flags = 0;
    if (a.sched_runtime == 0) a.sched_runtime = 3000000;
    uint64_t want = a.sched_runtime;
    p->setattr_rc = setattr(0, &a);
    struct sstm_sched_attr b;
    if (p->setattr_rc == 0 && (getattr(0, &b) != 0 || b.sched_runtime != want)) p->setattr_rc = -1;
  }
  return NULL;
}

void sstm__ext_probe(sstm_ext_probe_t *p) {
  /* On a scratch thread: the enable and the slice test change the probing
   * thread only, and the caller's own slice must stay as it is. */
  p->rseq_registered = false;
  p->rseq_flags = 0;
  p->prctl_rc = p->setattr_rc = -1;
  if (!on_scratch_thread(ext_probe_thread, p)) ext_probe_thread(p);
  if (sstm__ext_sim) { /* a kernel with the extension, as far as rseq goes */
    p->rseq_registered = true;
    p->rseq_flags |= SSTM_RSEQ_FLAG_SLICE_EXT_AVAILABLE | SSTM_RSEQ_FLAG_SLICE_EXT_ENABLED;
    p->prctl_rc = 0;
  }
  p->mode = sstm__ext_choose(p);
}

const sstm_ext_sim_t *sstm__ext_sim;

bool sstm__ext_rseq_enable(void) { return sstm__ext_sim || rseq_slice_enable() == 0; }

sstm_slice_ctrl_t *sstm__ext_rseq_ctrl(void) {
  if (sstm__ext_sim) return sstm__ext_sim->ctrl();
  struct rseq *r = rseq_area();
  if (r == NULL || __rseq_size < SSTM_RSEQ_SLICE_CTRL_OFFSET + 4) return NULL;
  return (sstm_slice_ctrl_t *)(void *)((char *)r + SSTM_RSEQ_SLICE_CTRL_OFFSET);
}

uint64_t sstm__sched_slice_ns(void) {
  struct sstm_sched_attr a;
  if (getattr(0, &a) != 0) return 0;
  if (a.sched_policy != SCHED_OTHER && a.sched_policy != SCHED_BATCH) return 0;
  return a.sched_runtime;
}

/* On a scratch thread (which inherits the caller's custom slice, if any):
 * ask for the default (sched_runtime 0) and read what the kernel reports. */
static void *default_slice_thread(void *arg) {
  uint64_t *out = arg;
  *out = 0;
  struct sstm_sched_attr a;
  if (getattr(0, &a) != 0 || (a.sched_policy != SCHED_OTHER && a.sched_policy != SCHED_BATCH))
    return NULL;
  a.sched_runtime = 0;
  a.sched_flags = 0;
  if (setattr(0, &a) == 0) *out = sstm__sched_slice_ns();
  return NULL;
}

uint64_t sstm__sched_default_slice_ns(void) {
  uint64_t ns = 0;
  if (!on_scratch_thread(default_slice_thread, &ns)) return 0;
  return ns;
}

bool sstm__ext_set_slice(uint64_t ns) {
  struct sstm_sched_attr a;
  if (getattr(0, &a) != 0) return false;
  a.sched_runtime = ns;
  a.sched_flags = 0;
  return setattr(0, &a) == 0;
}

void sstm__ext_slice_yield(void) {
  if (sstm__ext_sim)
    sstm__ext_sim->yield();
  else
    syscall(SSTM_SYS_RSEQ_SLICE_YIELD);
}

/* sched_setattr for the calling thread: policy with nice (SCHED_OTHER,
 * SCHED_BATCH, SCHED_IDLE) or RT priority (SCHED_FIFO, SCHED_RR), starting
 * from the thread's attributes so that what is not set stays as it is (a
 * custom slice in particular; an RT policy has none). */
int sstm__sched_set_self(int policy, int nice, int rt_priority, int *nice_out) {
  struct sstm_sched_attr a;
  if (getattr(0, &a) != 0) memset(&a, 0, sizeof a);
  a.sched_flags = 0;
  a.sched_nice = 0;
  a.sched_priority = 0;
  if (policy == SCHED_FIFO || policy == SCHED_RR) {
    a.sched_priority = (uint32_t)rt_priority;
    a.sched_runtime = 0;
  } else {
    a.sched_nice = nice;
  }
  a.sched_policy = (uint32_t)policy;
  if (setattr(0, &a) != 0) return errno;
  if (nice_out) *nice_out = a.sched_nice;
  return 0;
}
