/* SPDX-License-Identifier: MIT */
/* Measurements of the preemptive executor (include/schedstm/exec.h),
 * each comparing the preemption modes side by side in one run (rounds
 * interleave the modes, so that the machine's load drifts over all of
 * them alike). One JSON object per line on stdout.
 *
 *   exec-bench latency [--rounds R] [--samples N] [--gap-us G]
 *       Preemption latency: every worker runs a low-priority transaction
 *       (user code with a transactional read every G us, resubmitted as
 *       soon as it ends); a high-priority request arrives every 0.5-1.5 ms;
 *       latency = its body's first instruction - the submit call. p50, p90,
 *       p99, max per mode (none, signal, poll). Where the tail comes from:
 *       the CPU time of the worker that ran the request over the same
 *       interval (its thread CPU clock read before the submit and at the
 *       body's first instruction) is "ours" (the low transaction running
 *       up to the signal or the next barrier, the handler, the redirect,
 *       the check, the switch); the rest of the interval that worker was
 *       off its CPU (runnable, waiting for the host's other threads), and
 *       so was the submitter for the part of the submit call it did not
 *       run: "off_cpu" = those two, latency = ours + off_cpu.
 *       --trace FILE writes one JSON line per sample: where its latency
 *       went. Each worker's run-queue wait over the sample (the kernel's
 *       /proc/self/task/T/schedstat run_delay: runnable, not running, read
 *       just before the submit and by the request's first instruction), the
 *       submitter's own wait inside its submit call, which worker ran it
 *       and how it got there (the executor's counters around the sample:
 *       a switch at a polled point or by a signal, the poll mode's
 *       fallback signal, or a pop after a transaction ended). The
 *       summary line then also carries, for the samples over 100 us, how
 *       much of their latency the worker that ran the request spent
 *       waiting on a run queue ("tail_runq_share").
 *       --slices S,S,... (microseconds, 0 = the kernel's default) runs
 *       every mode once per slice in each round, with every thread of the
 *       process (workers and submitter) given that EEVDF slice
 *       (sched_setattr's sched_runtime for SCHED_OTHER, Linux 6.12;
 *       unprivileged, 100..100000 us): a shorter slice gives a thread that
 *       wakes or is signalled an earlier deadline, so the host's other
 *       threads hold it off its CPU for less. Lines carry "slice_us".
 *   exec-bench submit [--ms MS] [--threads T,T,...]
 *       Submission throughput under contention: T threads submit empty
 *       requests as fast as they can for MS milliseconds (sstm_exec_submit,
 *       waiting for a context when none is free); requests per second.
 *   exec-bench overhead [--rounds R] [--requests N] [--work-us W]
 *                       [--modes none,signal,poll]
 *       The machinery's cost with no high-priority load: N requests of
 *       one priority, W us of work and a few transactional accesses each;
 *       completed requests per second per mode, and the median and
 *       range of the per-round ratios to none (each round runs every mode
 *       once, in an order rotating with the round), with a 95 % bootstrap
 *       interval of that median from 5 rounds on (percentile method, 2000
 *       resamples, a fixed seed: the same rounds give the same interval;
 *       the method of bench/harness/summary.py's sweeps). --modes runs some
 *       modes only: one mode per process is what an instruction count
 *       (valgrind --tool=callgrind) of each needs.
 *
 * Linked to the shared library: linked statically, the library's code
 * range would hold the whole program and signals would never redirect
 * (docs/design/executor.md).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <schedstm/schedstm.h>

#include "bench_util.h"

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void die(const char *what, int rc) {
  fprintf(stderr, "exec-bench: %s: %s (%s)\n", what, sstm_strerror(rc), sstm_last_error());
  exit(1);
}

static long arg_long(const char *s, const char *opt, long lo, long hi) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || *end || end == s || v < lo || v > hi) {
    fprintf(stderr, "exec-bench: %s: '%s' is not an integer in %ld..%ld\n", opt, s, lo, hi);
    exit(2);
  }
  return v;
}

static int cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static sstm_exec_t *make(sstm_exec_preempt_t m, unsigned contexts) {
  sstm_exec_config_t c;
  sstm_exec_config_default(&c);
  c.use_env = false;
  c.preempt = m;
  c.contexts = contexts;
  c.stack_kb = 64;
  c.levels = 8;
  sstm_exec_t *ex;
  int rc = sstm_exec_create(&c, &ex);
  if (rc) die("sstm_exec_create", rc);
  return ex;
}

static const sstm_exec_preempt_t modes[] = {SSTM_EXEC_PREEMPT_NONE, SSTM_EXEC_PREEMPT_SIGNAL,
                                            SSTM_EXEC_PREEMPT_POLL};
#define NMODES 3

/* ---- latency ---- */

static uint64_t cell;
static _Atomic int stop_low;
static unsigned gap_us = 20;
static sstm_exec_t *cur_ex;

static void low_body(void *a) {
  (void)a;
  uint64_t end = now_ns() + 2000000; /* 2 ms of work */
  while (now_ns() < end && !atomic_load_explicit(&stop_low, memory_order_relaxed)) {
    uint64_t t = now_ns() + (uint64_t)gap_us * 1000;
    while (now_ns() < t) {
    }
    (void)sstm_load_u64(&cell);
  }
}

static void low_done(void *a, int rc);
static void submit_low(void) {
  sstm_exec_req_t r = {.fn = low_body, .priority = 0, .done = low_done};
  (void)sstm_exec_try_submit(cur_ex, &r); /* EAGAIN/ESTATE: fewer lows, fine */
}
static void low_done(void *a, int rc) {
  (void)a;
  (void)rc;
  if (!atomic_load_explicit(&stop_low, memory_order_relaxed)) submit_low();
}

/* The CPU time of thread tid of this process (0: the calling thread), ns:
 * Linux's per-thread CPU clock, which any thread of the process may read
 * and which counts the running slice up to now. */
static uint64_t cpu_ns_of(int tid) {
  clockid_t id = tid ? (clockid_t)((~(unsigned)tid << 3) | 6) /* CPUCLOCK_SCHED, per thread */
                     : CLOCK_THREAD_CPUTIME_ID;
  struct timespec t;
  if (clock_gettime(id, &t) != 0) return 0;
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* The process's threads but the calling one: the workers (exec-bench has
 * no other threads). */
#define MAX_WT 64
static int wtids[MAX_WT];
static unsigned nwtids;
static void find_workers(void) {
  nwtids = 0;
  int me = (int)syscall(SYS_gettid);
  DIR *d = opendir("/proc/self/task");
  if (!d) return;
  for (struct dirent *e; (e = readdir(d)) && nwtids < MAX_WT;) {
    int t = atoi(e->d_name);
    if (t > 0 && t != me) wtids[nwtids++] = t;
  }
  closedir(d);
}

/* sched_setattr (Linux 3.14; sched_runtime as the EEVDF slice of a
 * SCHED_OTHER thread since 6.12). glibc has no wrapper. */
struct xb_sched_attr {
  uint32_t size, sched_policy;
  uint64_t sched_flags;
  int32_t sched_nice;
  uint32_t sched_priority;
  uint64_t sched_runtime, sched_deadline, sched_period;
  uint32_t util_min, util_max;
};

/* Give every thread of the process the slice us (0: back to the
 * default), keeping its policy and nice value. 0, or -1 with a message
 * when the kernel refuses (then the run would not be what it says). */
static int set_slice_all(unsigned us) {
  DIR *d = opendir("/proc/self/task");
  if (!d) return -1;
  int rc = 0;
  for (struct dirent *e; (e = readdir(d));) {
    int t = atoi(e->d_name);
    if (t <= 0) continue;
    struct xb_sched_attr a;
    memset(&a, 0, sizeof a);
    if (syscall(SYS_sched_getattr, t, &a, sizeof a, 0) != 0) continue; /* exited */
    a.size = sizeof a;
    a.sched_flags = 0;
    a.sched_runtime = (uint64_t)us * 1000u;
    if (syscall(SYS_sched_setattr, t, &a, 0) != 0) {
      fprintf(stderr, "exec-bench: sched_setattr(tid %d, slice %u us): %s\n", t, us,
              strerror(errno));
      rc = -1;
    }
  }
  closedir(d);
  return rc;
}

/* ---- the kernel's scheduler statistics of a thread ---- */

/* /proc/self/task/T/schedstat: CPU time, time spent runnable on a run
 * queue without running (run_delay), slices run; ns. Opened once per
 * worker, read with pread at offset 0 (the kernel regenerates it). A
 * thread's run_delay is brought up to date when it gets a CPU: that of
 * the thread reading is exact, another's may miss the wait it is in. */
typedef struct sched_stat {
  uint64_t cpu, delay, slices;
} sched_stat_t;

static int wfd[MAX_WT];
static int self_fd = -1;

static bool read_stat(int fd, sched_stat_t *s) {
  char b[96];
  ssize_t n = fd >= 0 ? pread(fd, b, sizeof b - 1, 0) : -1;
  if (n <= 0) return false;
  b[n] = 0;
  unsigned long long c, d, k;
  if (sscanf(b, "%llu %llu %llu", &c, &d, &k) != 3) return false;
  s->cpu = c;
  s->delay = d;
  s->slices = k;
  return true;
}

static void open_stats(void) {
  char path[64];
  for (unsigned i = 0; i < nwtids; i++) {
    snprintf(path, sizeof path, "/proc/self/task/%d/schedstat", wtids[i]);
    wfd[i] = open(path, O_RDONLY | O_CLOEXEC);
  }
  if (self_fd < 0) {
    snprintf(path, sizeof path, "/proc/self/task/%d/schedstat", (int)syscall(SYS_gettid));
    self_fd = open(path, O_RDONLY | O_CLOEXEC);
  }
}

static void close_stats(void) {
  for (unsigned i = 0; i < nwtids; i++)
    if (wfd[i] >= 0) close(wfd[i]);
}

/* The executor's counters (sstm_exec_describe): "name=N". */
static uint64_t desc_field(const char *d, const char *name) {
  const char *p = strstr(d, name);
  return p ? strtoull(p + strlen(name), NULL, 10) : 0;
}

typedef struct hi_req {
  uint64_t t_submit;
  _Atomic uint64_t t_first;
  int tid;         /* the worker that ran its first attempt */
  uint64_t cpu_at; /* that worker's CPU time then */
  bool trace;      /* read the workers' scheduler statistics at the start */
  sched_stat_t at[MAX_WT];
} hi_req_t;

static void hi_body(void *a) {
  hi_req_t *h = a;
  uint64_t expect = 0;
  uint64_t t = now_ns();
  if (atomic_compare_exchange_strong_explicit(&h->t_first, &expect, t, memory_order_seq_cst,
                                              memory_order_seq_cst)) { /* first attempt only */
    h->cpu_at = cpu_ns_of(0);
    h->tid = (int)syscall(SYS_gettid);
    if (h->trace)
      for (unsigned i = 0; i < nwtids; i++)
        if (!read_stat(wfd[i], &h->at[i])) h->at[i] = (sched_stat_t){0, 0, 0};
  }
}

#define MAX_SLICES 4

static void latency(int argc, char **argv) {
  long rounds = 3, samples = 300;
  unsigned slices[MAX_SLICES] = {0}, nsl = 1;
  FILE *trace = NULL;
  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "--trace") && i + 1 < argc) {
      if (!(trace = fopen(argv[++i], "w"))) {
        fprintf(stderr, "exec-bench latency: --trace %s: %s\n", argv[i], strerror(errno));
        exit(2);
      }
    } else if (!strcmp(argv[i], "--slices") && i + 1 < argc) {
      nsl = 0;
      for (char *t = strtok(argv[++i], ","); t; t = strtok(NULL, ",")) {
        long v = arg_long(t, "--slices", 0, 100000);
        if (nsl == MAX_SLICES || (v != 0 && v < 100)) {
          fprintf(stderr,
                  "exec-bench latency: --slices: at most %d values, each 0 or "
                  "100..100000 us\n",
                  MAX_SLICES);
          exit(2);
        }
        slices[nsl++] = (unsigned)v;
      }
    } else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
      rounds = arg_long(argv[++i], "--rounds", 1, 1000);
    else if (!strcmp(argv[i], "--samples") && i + 1 < argc)
      samples = arg_long(argv[++i], "--samples", 10, 1000000);
    else if (!strcmp(argv[i], "--gap-us") && i + 1 < argc)
      gap_us = (unsigned)arg_long(argv[++i], "--gap-us", 1, 1000000);
    else {
      fprintf(stderr, "exec-bench latency: unknown option %s\n", argv[i]);
      exit(2);
    }
  }
  /* one series per (slice, mode): index sl * NMODES + mode */
  enum { NS = MAX_SLICES * NMODES };
  uint64_t *lat[NS], *ours[NS], *rqw[NS];
  size_t nlat[NS] = {0}, host_tail[NS] = {0}, tail[NS] = {0};
  /* samples over 100 us: their latency, and the run-queue wait of the
   * worker that ran them within it (--trace) */
  uint64_t tail_lat[NS] = {0}, tail_runq[NS] = {0};
  for (unsigned k = 0; k < nsl * NMODES; k++) {
    lat[k] = malloc(sizeof(uint64_t) * (size_t)(rounds * samples));
    ours[k] = malloc(sizeof(uint64_t) * (size_t)(rounds * samples));
    rqw[k] = malloc(sizeof(uint64_t) * (size_t)(rounds * samples));
  }
  unsigned seed = 12345;
  char desc[NS][1024];
  for (long r = 0; r < rounds; r++) {
    for (unsigned k = 0; k < nsl * NMODES; k++) {
      unsigned sl = k / NMODES;
      int m = (int)(k % NMODES);
      sstm_exec_t *ex = make(modes[m], 64);
      cur_ex = ex;
      if (set_slice_all(slices[sl]) != 0) exit(1);
      atomic_store_explicit(&stop_low, 0, memory_order_seq_cst);
      char d[1024];
      sstm_exec_describe(ex, d, sizeof d);
      unsigned workers = (unsigned)strtoul(strstr(d, "workers=") + 8, NULL, 10);
      for (unsigned i = 0; i < 2 * workers; i++)
        submit_low();
      usleep(5000);
      find_workers();
      if (trace) open_stats();
      uint64_t cpu_before[MAX_WT];
      sched_stat_t st_before[MAX_WT], sub_a = {0}, sub_b = {0};
      char d0[1024], d1[1024];
      for (long s = 0; s < samples; s++) {
        hi_req_t h = {0};
        h.trace = trace != NULL;
        sstm_exec_future_t f;
        sstm_exec_req_t q = {.fn = hi_body, .arg = &h, .priority = 7, .future = &f};
        usleep(500 + rand_r(&seed) % 1000);
        /* The workers' clocks just before the submit: read again when this
         * thread lost its CPU meanwhile (the workers' CPU time until the
         * submit would count as ours). */
        uint64_t sub_cpu;
        if (trace) sstm_exec_describe(ex, d0, sizeof d0);
        for (int tries = 0;; tries++) {
          if (trace)
            for (unsigned i = 0; i < nwtids; i++)
              if (!read_stat(wfd[i], &st_before[i])) st_before[i] = (sched_stat_t){0, 0, 0};
          uint64_t t_a = now_ns();
          for (unsigned i = 0; i < nwtids; i++)
            cpu_before[i] = cpu_ns_of(wtids[i]);
          sub_cpu = cpu_ns_of(0);
          if (trace) read_stat(self_fd, &sub_a);
          h.t_submit = now_ns();
          if (h.t_submit - t_a < 20000 || tries == 20) break;
        }
        int rc = sstm_exec_submit(ex, &q);
        if (rc) die("sstm_exec_submit", rc);
        uint64_t t_ret = now_ns();
        sub_cpu = cpu_ns_of(0) - sub_cpu;
        if (trace) read_stat(self_fd, &sub_b);
        sstm_exec_wait(&f);
        uint64_t t_first = atomic_load_explicit(&h.t_first, memory_order_seq_cst),
                 l = t_first - h.t_submit;
        /* off CPU: the submitter during its call (until the signal left or
         * the flag was set), the worker from the submit to the first
         * instruction; the clocks were read just outside the interval. */
        uint64_t sub_wall = (t_ret < t_first ? t_ret : t_first) - h.t_submit;
        uint64_t w = sub_wall > sub_cpu ? sub_wall - sub_cpu : 0;
        for (unsigned i = 0; i < nwtids; i++)
          if (wtids[i] == h.tid) {
            uint64_t on = h.cpu_at > cpu_before[i] ? h.cpu_at - cpu_before[i] : 0;
            w += l > on ? l - on : 0;
          }
        if (w > l) w = l;
        size_t i_ = nlat[k]++;
        lat[k][i_] = l;
        rqw[k][i_] = w;
        ours[k][i_] = l - w;
        /* The run-queue wait of each worker between the submit and the
         * first instruction; the running one's is exact (it has a CPU). */
        uint64_t rq[MAX_WT] = {0}, run_rq = 0;
        int ran = -1;
        if (trace)
          for (unsigned i = 0; i < nwtids; i++) {
            rq[i] = h.at[i].delay > st_before[i].delay ? h.at[i].delay - st_before[i].delay : 0;
            if (wtids[i] == h.tid) {
              ran = (int)i;
              run_rq = rq[i] < l ? rq[i] : l;
            }
          }
        if (l > 100000) {
          tail[k]++;
          host_tail[k] += w * 2 >= l;
          tail_lat[k] += l;
          tail_runq[k] += run_rq;
        }
        if (trace) {
          sstm_exec_describe(ex, d1, sizeof d1);
          fprintf(trace,
                  "{\"mode\":\"%s\",\"round\":%ld,\"sample\":%ld,\"lat_us\":%.1f,"
                  "\"ours_us\":%.1f,\"off_cpu_us\":%.1f,\"ran_on\":%d,"
                  "\"runq_us\":[%.1f,%.1f],\"slices\":[%llu,%llu],"
                  "\"submitter_runq_us\":%.1f,\"submit_call_us\":%.1f,"
                  "\"signals\":%llu,\"refused\":%llu,\"checks\":%llu,\"switches\":%llu}\n",
                  sstm_exec_preempt_name(modes[m]), r, s, l / 1e3, (l - w) / 1e3, w / 1e3, ran,
                  rq[0] / 1e3, nwtids > 1 ? rq[1] / 1e3 : 0.0,
                  (unsigned long long)(h.at[0].slices - st_before[0].slices),
                  (unsigned long long)(nwtids > 1 ? h.at[1].slices - st_before[1].slices : 0),
                  (sub_b.delay - sub_a.delay) / 1e3, (t_ret - h.t_submit) / 1e3,
                  (unsigned long long)(desc_field(d1, "signals=") - desc_field(d0, "signals=")),
                  (unsigned long long)(desc_field(d1, "refused=") - desc_field(d0, "refused=")),
                  (unsigned long long)(desc_field(d1, "checks=") - desc_field(d0, "checks=")),
                  (unsigned long long)(desc_field(d1, "switches=") - desc_field(d0, "switches=")));
        }
      }
      if (trace) close_stats();
      atomic_store_explicit(&stop_low, 1, memory_order_seq_cst);
      sstm_exec_describe(ex, desc[k], sizeof desc[k]);
      int rc = sstm_exec_destroy(ex);
      if (rc) die("sstm_exec_destroy", rc);
    }
  }
  set_slice_all(0);
  if (trace) fclose(trace);
  for (unsigned k = 0; k < nsl * NMODES; k++) {
    int m = (int)(k % NMODES);
    size_t n = nlat[k];
    qsort(lat[k], n, sizeof(uint64_t), cmp_u64);
    qsort(ours[k], n, sizeof(uint64_t), cmp_u64);
    qsort(rqw[k], n, sizeof(uint64_t), cmp_u64);
    printf("{\"bench\":\"exec-latency\",\"mode\":\"%s\",\"slice_us\":%u,\"gap_us\":%u,"
           "\"samples\":%zu,"
           "\"p50_us\":%.1f,\"p90_us\":%.1f,\"p99_us\":%.1f,\"max_us\":%.1f,"
           "\"off_cpu_p50_us\":%.1f,\"off_cpu_p99_us\":%.1f,"
           "\"ours_p50_us\":%.1f,\"ours_p90_us\":%.1f,\"ours_p99_us\":%.1f,\"ours_max_us\":%.1f,"
           "\"over_100us\":%zu,\"over_100us_mostly_off_cpu\":%zu,\"tail_runq_share\":%.3f,"
           "\"describe\":\"%s\"}\n",
           sstm_exec_preempt_name(modes[m]), slices[k / NMODES], gap_us, n, lat[k][n / 2] / 1e3,
           lat[k][n * 9 / 10] / 1e3, lat[k][n * 99 / 100] / 1e3, lat[k][n - 1] / 1e3,
           rqw[k][n / 2] / 1e3, rqw[k][n * 99 / 100] / 1e3, ours[k][n / 2] / 1e3,
           ours[k][n * 9 / 10] / 1e3, ours[k][n * 99 / 100] / 1e3, ours[k][n - 1] / 1e3, tail[k],
           host_tail[k], tail_lat[k] ? (double)tail_runq[k] / (double)tail_lat[k] : 0.0, desc[k]);
    free(lat[k]);
    free(ours[k]);
    free(rqw[k]);
  }
}

/* ---- submit ---- */

static _Atomic int sub_stop;
static _Atomic uint64_t sub_count;
static sstm_exec_t *sub_ex;

static void empty_body(void *a) { (void)a; }

static void *submitter(void *a) {
  (void)a;
  uint64_t n = 0;
  sstm_exec_req_t r = {.fn = empty_body, .priority = 1};
  while (!atomic_load_explicit(&sub_stop, memory_order_relaxed)) {
    int rc = sstm_exec_submit(sub_ex, &r);
    if (rc) die("sstm_exec_submit", rc);
    n++;
  }
  atomic_fetch_add_explicit(&sub_count, n, memory_order_seq_cst);
  return NULL;
}

static void submit_bench(int argc, char **argv) {
  long ms = 1000;
  unsigned threads[16] = {1, 2, 4, 8};
  unsigned nthreads = 4;
  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "--ms") && i + 1 < argc)
      ms = arg_long(argv[++i], "--ms", 10, 600000);
    else if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
      nthreads = 0;
      for (char *t = strtok(argv[++i], ","); t; t = strtok(NULL, ",")) {
        if (nthreads == 16) {
          fprintf(stderr, "exec-bench submit: --threads: at most 16 values\n");
          exit(2);
        }
        threads[nthreads++] = (unsigned)arg_long(t, "--threads", 1, 256);
      }
      if (nthreads == 0) {
        fprintf(stderr, "exec-bench submit: --threads: no thread count\n");
        exit(2);
      }
    } else {
      fprintf(stderr, "exec-bench submit: unknown option %s\n", argv[i]);
      exit(2);
    }
  }
  for (unsigned k = 0; k < nthreads; k++) {
    sub_ex = make(SSTM_EXEC_PREEMPT_SIGNAL, 256);
    atomic_store_explicit(&sub_stop, 0, memory_order_seq_cst);
    atomic_store_explicit(&sub_count, 0, memory_order_seq_cst);
    pthread_t th[256];
    uint64_t t0 = now_ns();
    for (unsigned i = 0; i < threads[k]; i++)
      pthread_create(&th[i], NULL, submitter, NULL);
    usleep((useconds_t)ms * 1000);
    atomic_store_explicit(&sub_stop, 1, memory_order_seq_cst);
    for (unsigned i = 0; i < threads[k]; i++)
      pthread_join(th[i], NULL);
    uint64_t t1 = now_ns();
    sstm_exec_destroy(sub_ex);
    printf("{\"bench\":\"exec-submit\",\"threads\":%u,\"ms\":%ld,\"requests\":%llu,"
           "\"per_s\":%.0f}\n",
           threads[k], ms,
           (unsigned long long)atomic_load_explicit(&sub_count, memory_order_seq_cst),
           atomic_load_explicit(&sub_count, memory_order_seq_cst) / ((t1 - t0) / 1e9));
  }
}

/* ---- overhead ---- */

static uint64_t counters[64];
static unsigned work_us = 20;

static void work_body(void *a) {
  unsigned k = (unsigned)(uintptr_t)a;
  uint64_t t = now_ns() + (uint64_t)work_us * 1000;
  while (now_ns() < t) {
  }
  for (unsigned i = 0; i < 4; i++)
    sstm_store_u64(&counters[(k + i * 8) % 64], sstm_load_u64(&counters[(k + i * 8) % 64]) + 1);
}

/* The median of the n values of v, which it sorts. */
static double median_sorted(double *v, long n) {
  qsort(v, (size_t)n, sizeof(double), cmp_dbl);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* A 95 % bootstrap interval of the median of the n values of v
 * (percentile method: the 2.5th and 97.5th percentiles of the medians of
 * 2000 resamples with replacement), with a fixed seed, so that the same
 * values always give the same interval. False when out of memory. */
static bool median_interval(const double *v, long n, double *lo, double *hi) {
  enum { RESAMPLES = 2000 };
  double *med = malloc(sizeof(double) * RESAMPLES), *s = malloc(sizeof(double) * (size_t)n);
  if (!med || !s) {
    free(med);
    free(s);
    return false;
  }
  bench_rng_t rng;
  bench_rng_seed(&rng, 1, 0);
  for (int b = 0; b < RESAMPLES; b++) {
    for (long i = 0; i < n; i++)
      s[i] = v[bench_rng_below(&rng, (uint64_t)n)];
    med[b] = median_sorted(s, n);
  }
  qsort(med, RESAMPLES, sizeof(double), cmp_dbl);
  /* the quantiles' indices of bench/harness/summary.py's median_interval */
  *lo = med[(RESAMPLES - 1) * 25 / 1000];
  *hi = med[(RESAMPLES - 1) * 975 / 1000];
  free(med);
  free(s);
  return true;
}

static void overhead(int argc, char **argv) {
  long rounds = 3, requests = 20000;
  bool use[NMODES] = {true, true, true};
  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "--modes") && i + 1 < argc) {
      for (int m = 0; m < NMODES; m++)
        use[m] = false;
      for (char *t = strtok(argv[++i], ","); t; t = strtok(NULL, ",")) {
        int m = 0;
        while (m < NMODES && strcmp(t, sstm_exec_preempt_name(modes[m])) != 0)
          m++;
        if (m == NMODES) {
          fprintf(stderr, "exec-bench overhead: --modes: '%s' is not none, signal or poll\n", t);
          exit(2);
        }
        use[m] = true;
      }
    } else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
      rounds = arg_long(argv[++i], "--rounds", 1, 1000);
    else if (!strcmp(argv[i], "--requests") && i + 1 < argc)
      requests = arg_long(argv[++i], "--requests", 100, 100000000);
    else if (!strcmp(argv[i], "--work-us") && i + 1 < argc)
      work_us = (unsigned)arg_long(argv[++i], "--work-us", 0, 100000);
    else {
      fprintf(stderr, "exec-bench overhead: unknown option %s\n", argv[i]);
      exit(2);
    }
  }
  /* Each round runs every mode once, in an order that rotates with the
   * round (so that no mode always runs first, after the allocator and the
   * caches have settled, or last); a round's ratio is none's time over the
   * mode's, and the median and range of those paired ratios say how much
   * the host moved between rounds. */
  double total[NMODES] = {0};
  double *t = calloc((size_t)(rounds * NMODES), sizeof(double));
  if (!t) die("overhead", SSTM_ENOMEM);
  for (long r = 0; r < rounds; r++) {
    for (int k = 0; k < NMODES; k++) {
      int m = (int)((k + r) % NMODES);
      if (!use[m]) continue;
      sstm_exec_t *ex = make(modes[m], 256);
      uint64_t t0 = now_ns();
      for (long i = 0; i < requests; i++) {
        sstm_exec_req_t q = {.fn = work_body, .arg = (void *)(uintptr_t)i, .priority = 2};
        int rc = sstm_exec_submit(ex, &q);
        if (rc) die("sstm_exec_submit", rc);
      }
      sstm_exec_destroy(ex);
      t[r * NMODES + m] = (now_ns() - t0) / 1e9;
      total[m] += t[r * NMODES + m];
    }
  }
  double *ratio = calloc((size_t)rounds, sizeof(double));
  if (!ratio) die("overhead", SSTM_ENOMEM);
  for (int m = 0; m < NMODES; m++) {
    if (!use[m]) continue;
    /* Paired ratios exist only when none ran too. */
    double med = 0, lo = 0, hi = 0;
    char ci[96] = "";
    if (use[0]) {
      for (long r = 0; r < rounds; r++)
        ratio[r] = t[r * NMODES] / t[r * NMODES + m];
      double ilo, ihi;
      if (rounds >= 5 && median_interval(ratio, rounds, &ilo, &ihi))
        snprintf(ci, sizeof ci,
                 ",\"round_ratio_median_lo95\":%.4f,\"round_ratio_median_hi95\":%.4f", ilo, ihi);
      med = median_sorted(ratio, rounds);
      lo = ratio[0];
      hi = ratio[rounds - 1];
    }
    printf("{\"bench\":\"exec-overhead\",\"mode\":\"%s\",\"work_us\":%u,\"requests\":%ld,"
           "\"rounds\":%ld,\"per_s\":%.0f,\"ratio_to_none\":%.4f,\"round_ratio_median\":%.4f,"
           "\"round_ratio_min\":%.4f,\"round_ratio_max\":%.4f%s}\n",
           sstm_exec_preempt_name(modes[m]), work_us, requests, rounds,
           requests * rounds / total[m], use[0] ? total[0] / total[m] : 0.0, med, lo, hi, ci);
  }
  free(ratio);
  free(t);
}

static void usage(FILE *f) {
  fprintf(f, "usage: exec-bench latency [--rounds R] [--samples N] [--gap-us G] [--trace FILE]\n"
             "                          [--slices S,S,...]\n"
             "       exec-bench submit [--ms MS] [--threads T,T,...]\n"
             "       exec-bench overhead [--rounds R] [--requests N] [--work-us W]\n"
             "                           [--modes none,signal,poll]\n"
             "Measurements of the preemptive executor, the preemption modes side by side\n"
             "in one run; one JSON object per line on stdout.\n"
             "  latency   preemption latency of a high-priority request over workers busy\n"
             "            with low-priority transactions (a barrier every G us), p50 ...\n"
             "            max per mode; defaults: --rounds 3 --samples 300 --gap-us 20;\n"
             "            --trace FILE one line per sample (where its latency went);\n"
             "            --slices every mode once per EEVDF slice (us, 0 = the kernel's,\n"
             "            else 100..100000)\n"
             "  submit    submissions per second of T threads for MS ms (default 1000;\n"
             "            threads 1,2,4,8)\n"
             "  overhead  requests per second with no high-priority load, per mode, and\n"
             "            the per-round ratios to none; defaults: --rounds 3\n"
             "            --requests 20000 --work-us 20, every mode\n"
             "  -h, --help  this help\n"
             "Exit status 0, 2 on a bad command line.\n");
}

static bool wants_help(int argc, char **argv) {
  for (int i = 0; i < argc; i++)
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) return true;
  return false;
}

int main(int argc, char **argv) {
  if (wants_help(argc - 1, argv + 1)) {
    usage(stdout);
    return 0;
  }
  if (argc < 2 ||
      (strcmp(argv[1], "latency") && strcmp(argv[1], "submit") && strcmp(argv[1], "overhead"))) {
    if (argc >= 2) fprintf(stderr, "exec-bench: unknown command %s\n", argv[1]);
    usage(stderr);
    return 2;
  }
  sstm_config_t cfg;
  sstm_config_default(&cfg);
  int rc = sstm_init(&cfg);
  if (rc) die("sstm_init", rc);
  if (!strcmp(argv[1], "latency"))
    latency(argc - 2, argv + 2);
  else if (!strcmp(argv[1], "submit"))
    submit_bench(argc - 2, argv + 2);
  else
    overhead(argc - 2, argv + 2);
  sstm_shutdown();
  return 0;
}
