/* SPDX-License-Identifier: MIT */
/* sstm-top: a read-only viewer of the per-thread state table that schedstm
 * publishes (cfg.state_table or SCHEDSTM_STATE_TABLE=1; layout and reader
 * protocol in include/schedstm/statetab.h).
 *
 *   sstm-top [-i SECONDS] [-n N] [-a] PID   live view, like top
 *   sstm-top -j [-a] PID                    one JSON snapshot
 *   sstm-top -p [-i SECONDS] [-n N] PID     the policy's line at each change
 *   sstm-top -l                             tables of your running processes
 *   sstm-top -c                             remove files left by versions 1-3
 *
 * Finding the table: it is a sealed memfd of the process, found by listing
 * /proc/PID/fd for the descriptor whose link reads SSTM_STT_FD_LINK and
 * opened through that link, read-only. The kernel decides who may (the
 * ptrace read check: the process's user, when it is dumpable, or root);
 * nobody else can put a table, or anything else, under the process's name.
 * The tool never writes to the table and the observed program pays nothing
 * for being watched. Every field is read with a relaxed atomic load; values
 * are per-field exact, not a consistent cut across fields (as for
 * sstm_stats_get).
 *
 * The table is still not trusted (the process, or anyone who can inspect
 * it, may put any bytes in a memfd of that name): it is opened O_NONBLOCK,
 * must be a regular file sealed against shrinking (F_SEAL_SHRINK: its
 * mapping can never fault with SIGBUS), and its size is checked before
 * mapping; magic, version, entry_size, nentries * entry_size against the
 * size are validated once, at open: the counts used afterwards are the
 * validated copies, never values read again from the mapping. Strings are
 * bounded copies in which every byte outside printable ASCII is replaced.
 * The policy's line is read under the header's seqlock for at most
 * SEQ_WAIT_NS: a writer stopped half-way gives "(inconsistent ...)", not a
 * wait.
 *
 * Exit status: 0 success, 1 no usable table (message on stderr), 2 usage.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <schedstm/cm.h>
#include <schedstm/statetab.h>

/* config.h: max_threads is at most 32767. */
#define MAX_ENTRIES 32767u
/* How long a read of the policy's line waits for a writer that is in the
 * middle of rewriting it (odd sequence number). The writer copies 480
 * bytes: a number that stays odd for longer belongs to a writer that was
 * descheduled or stopped there, and waiting longer shows nothing newer. */
#define SEQ_WAIT_NS 5000000ull
/* A table being created (the memfd exists, its size, seals or magic not
 * yet): waited for this many times 50 ms. */
#define CREATE_TRIES 20
/* Versions 1 to 3 kept the table in a file (SSTM_STT_LEGACY_PATH_FMT). */
#define LEGACY_VERSION_MAX 3u

_Static_assert(SSTM_ACT_COUNT == 7, "update act_names to match sstm_cm_act_t");
/* sstm_cm_act_name(), without linking the library. */
static const char *const act_names[SSTM_ACT_COUNT] = {"run",     "spin",    "block", "yield",
                                                      "backoff", "lowered", "kill"};

static const char *prog = "sstm-top";

#define LD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)

/* ---- attaching ------------------------------------------------------------ */

typedef struct table {
  int pid;
  char path[64]; /* /proc/PID/fd/N: what was opened */
  const sstm_stt_header_t *h;
  const sstm_stt_entry_t *e;
  size_t size; /* mapped bytes */
  dev_t dev;   /* the memfd's identity: a new sstm_init makes a new one */
  ino_t ino;
  /* Validated at open (nentries * entry_size fits in size, nreasons <=
   * SSTM_STT_REASONS): the bounds of every loop over the table. */
  uint32_t nentries, nreasons;
  uint32_t version; /* SSTM_STT_VERSION_COMPAT..SSTM_STT_VERSION */
  /* The executor area, validated at open; NULL without one. */
  const sstm_stt_exec_t *x;
} table_t;

/* What the header says, copied and validated. */
typedef struct header {
  uint32_t version, nentries, entry_size, nreasons;
  int32_t pid;
  uint64_t start_ns;
  bool cm_info_ok; /* cm_info (and config) read whole under the seqlock */
  char config[sizeof(((sstm_stt_header_t *)0)->config) + 1];
  char cm_info[sizeof(((sstm_stt_header_t *)0)->cm_info) + 1];
  char reason_names[SSTM_STT_REASONS][sizeof(((sstm_stt_header_t *)0)->reason_names[0]) + 1];
  char cm_stat_names[SSTM_STT_CMSTATS][sizeof(((sstm_stt_header_t *)0)->cm_stat_names[0]) + 1];
} header_t;

/* The executor area, copied (read_exec). */
typedef struct xlevel {
  uint64_t submitted, completed, preemptions, promotions, aborts;
  uint64_t queue_ns, run_ns, paused_ns, turnaround_ns, turnaround_max_ns, in_flight;
} xlevel_t;

typedef struct xarea {
  bool present, in_use;
  uint32_t levels, workers, contexts, contexts_busy, preempt, tick_us, c_max, lazy;
  uint64_t generation;
  char preempt_name[sizeof(((sstm_stt_exec_t *)0)->preempt_name) + 1];
  xlevel_t level[SSTM_STT_EXEC_LEVELS];
} xarea_t;

typedef struct entry {
  uint32_t in_use, slot, in_tx, last_reason, action;
  int32_t tid, conflict_tid, os_policy, os_nice, cpu, cpu_pinned;
  uint64_t txid, commits, aborts, conflict_txid;
  uint64_t by_reason[SSTM_STT_REASONS];
  uint64_t cm_stats[SSTM_STT_CMSTATS];
  char cm[sizeof(((sstm_stt_entry_t *)0)->cm) + 1];
} entry_t;

/* A process with that pid exists and has not exited: a zombie (exited, not
 * yet reaped by its parent) counts as exited. Without /proc, kill(pid, 0)
 * alone decides. */
static bool pid_alive(int pid) {
  if (kill(pid, 0) != 0 && errno != EPERM) return false;
  char path[64], buf[512];
  snprintf(path, sizeof path, "/proc/%d/stat", pid);
  FILE *f = fopen(path, "re");
  if (f == NULL) return errno != ENOENT; /* ENOENT: it was reaped meanwhile */
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  /* "pid (comm) S ppid pgrp session tty_nr tpgid flags ...": comm may
   * hold any byte, ')' included */
  const char *p = strrchr(buf, ')');
  if (!p || p[1] != ' ') return true;
  if (p[2] == 'Z' || p[2] == 'X') return false;
  /* An exiting process (PF_EXITING, 0x4 in the kernel's task flags, set
   * at the start of its exit) closes its files, the state table's among
   * them, while its state still reads as running: it is not alive either,
   * or a SIGKILLed process would read as one that called sstm_shutdown. */
  unsigned long flags = 0;
  if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %lu", &flags) == 1 && (flags & 0x4ul)) return false;
  return true;
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_ns(uint64_t ns) {
  struct timespec ts = {(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/* Copy a fixed-size char field that may lack its NUL (dst holds n + 1
 * bytes); replace every byte outside printable ASCII (0x20-0x7e) with '?',
 * so that garbage cannot drive the terminal: C0 controls and DEL, but also
 * bytes >= 0x80, among them raw C1 controls (0x9b is CSI) and UTF-8 encoded
 * ones (c2 80 to c2 9f). The library writes ASCII names only. */
static void copy_str(char *dst, const char *src, size_t n) {
  size_t i = 0;
  for (; i < n && src[i]; i++) {
    unsigned char c = (unsigned char)src[i];
    dst[i] = c >= 0x20 && c <= 0x7e ? (char)c : '?';
  }
  dst[i] = '\0';
}

/* The descriptors of pid whose link reads SSTM_STT_FD_LINK, in ascending
 * order of discovery, at most max of them in fds; returns how many there
 * are, or -1 with errno set when /proc/PID/fd cannot be listed (ENOENT: no
 * such process; EACCES: not ours to inspect). */
static int table_fds(int pid, int *fds, int max) {
  char dir[64];
  snprintf(dir, sizeof dir, "/proc/%d/fd", pid);
  DIR *d = opendir(dir);
  if (d == NULL) return -1;
  int n = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    char *end;
    errno = 0;
    long fd = strtol(de->d_name, &end, 10);
    if (errno || end == de->d_name || *end || fd < 0 || fd > INT_MAX) continue; /* . and .. */
    char link[sizeof SSTM_STT_FD_LINK + 1];
    ssize_t k = readlinkat(dirfd(d), de->d_name, link, sizeof link - 1);
    if (k != (ssize_t)sizeof SSTM_STT_FD_LINK - 1) continue; /* closed meanwhile, or another */
    link[k] = '\0';
    if (strcmp(link, SSTM_STT_FD_LINK) != 0) continue;
    if (n < max) fds[n] = (int)fd;
    n++;
  }
  int e = errno;
  closedir(d);
  errno = e;
  return n;
}

static void table_close(table_t *t) {
  if (t->h) munmap((void *)t->h, t->size);
  t->h = NULL;
  t->e = NULL;
}

/* Open, check and map descriptor fd of pid into t. Returns 0; 1 with a
 * message in err; 2 with a message when the table may be one being created
 * (empty, not sealed yet, magic 0: worth another look in a moment). */
static int open_one(int pid, int fdnum, table_t *t, char *err, size_t errlen) {
  memset(t, 0, sizeof *t);
  t->pid = pid;
  snprintf(t->path, sizeof t->path, "/proc/%d/fd/%d", pid, fdnum);
  /* O_NONBLOCK: whatever the descriptor became since its link was read
   * (a FIFO, say), opening it returns at once; the checks below refuse it.
   * Not O_NOFOLLOW: /proc/PID/fd/N is a link by nature. */
  int fd = open(t->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    int e = errno;
    if (e == ENOENT) {
      snprintf(err, errlen, "%s: closed while being opened", t->path);
      return 2;
    }
    if (e == EACCES || e == EPERM)
      snprintf(err, errlen, "%s: permission denied (only the user of pid %d can read its table)",
               t->path, pid);
    else
      snprintf(err, errlen, "%s: %s", t->path, strerror(e));
    return 1;
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    snprintf(err, errlen, "%s: fstat: %s", t->path, strerror(errno));
    close(fd);
    return 1;
  }
  if (!S_ISREG(st.st_mode)) {
    snprintf(err, errlen, "%s: not a regular file", t->path);
    close(fd);
    return 1;
  }
  t->dev = st.st_dev;
  t->ino = st.st_ino;
  /* F_SEAL_SHRINK, once set, stays: the size below is then the least the
   * file will ever have, and no page of the mapping can fault (SIGBUS). */
  int seals = fcntl(fd, F_GET_SEALS);
  if (seals < 0 || !(seals & F_SEAL_SHRINK)) {
    snprintf(err, errlen,
             "%s: not sealed against shrinking (F_SEAL_SHRINK): not a schedstm state table of "
             "version %u",
             t->path, SSTM_STT_VERSION);
    close(fd);
    return 2; /* sstm_init seals it just after creating it */
  }
  size_t hs = sizeof(sstm_stt_header_t);
  if ((uint64_t)st.st_size < hs) {
    close(fd);
    snprintf(err, errlen, "%s: truncated: %lld bytes, smaller than the %zu-byte header", t->path,
             (long long)st.st_size, hs);
    return 1; /* sealed: it can never grow to a table */
  }
  if ((uint64_t)st.st_size >
      hs + (uint64_t)MAX_ENTRIES * sizeof(sstm_stt_entry_t) + sizeof(sstm_stt_exec_t)) {
    close(fd);
    snprintf(err, errlen, "%s: implausible size %lld bytes: not a schedstm state table", t->path,
             (long long)st.st_size);
    return 1;
  }
  t->size = (size_t)st.st_size;
  void *p = mmap(NULL, t->size, PROT_READ, MAP_SHARED, fd, 0);
  int e = errno;
  close(fd);
  if (p == MAP_FAILED) {
    snprintf(err, errlen, "%s: mmap: %s", t->path, strerror(e));
    return 1;
  }
  t->h = p;
  int rc = 1;
  /* acquire: pairs with the release store of the magic in sstm_init; the
   * header's other fields are read after it. */
  uint32_t magic = __atomic_load_n(&t->h->magic, __ATOMIC_ACQUIRE);
  uint32_t v = LD(t->h->version), es = LD(t->h->entry_size), n = LD(t->h->nentries);
  uint32_t nr = LD(t->h->nreasons);
  uint64_t need = (uint64_t)hs + (uint64_t)n * es;
  int32_t tpid = LD(t->h->pid);
  uint32_t xo = 0; /* the executor area's offset */
  if (magic == 0) {
    snprintf(err, errlen,
             "%s: not initialised (magic 0): a table being created, or not a "
             "schedstm state table",
             t->path);
    rc = 2;
  } else if (magic != SSTM_STT_MAGIC)
    snprintf(err, errlen,
             "%s: bad magic 0x%08" PRIx32 " (expected 0x%08x): not a schedstm "
             "state table",
             t->path, magic, SSTM_STT_MAGIC);
  else if (v < SSTM_STT_VERSION_COMPAT || v > SSTM_STT_VERSION)
    snprintf(err, errlen, "%s: table version %" PRIu32 ", this sstm-top reads versions %u to %u",
             t->path, v, SSTM_STT_VERSION_COMPAT, SSTM_STT_VERSION);
  else if (LD(t->h->header_size) != sizeof(sstm_stt_header_t))
    snprintf(err, errlen, "%s: header_size %" PRIu32 " differs from this sstm-top's %zu", t->path,
             LD(t->h->header_size), sizeof(sstm_stt_header_t));
  else if (es != sizeof(sstm_stt_entry_t))
    snprintf(err, errlen,
             "%s: entry_size %" PRIu32 " differs from this sstm-top's %zu "
             "(library and tool built from different sources)",
             t->path, es, sizeof(sstm_stt_entry_t));
  else if (n > MAX_ENTRIES || need > t->size)
    snprintf(err, errlen,
             "%s: %" PRIu32 " entries of %" PRIu32 " bytes need %" PRIu64
             " bytes, the table has %zu",
             t->path, n, es, need, t->size);
  else if (nr > SSTM_STT_REASONS)
    snprintf(err, errlen, "%s: %" PRIu32 " abort reasons, at most %d", t->path, nr,
             SSTM_STT_REASONS);
  else if (tpid != pid)
    snprintf(err, errlen, "%s: the table says it belongs to pid %" PRId32, t->path, tpid);
  else if ((xo = LD(t->h->exec_offset)) != 0 &&
           (xo != need || LD(t->h->exec_size) != sizeof(sstm_stt_exec_t) ||
            need + sizeof(sstm_stt_exec_t) > t->size))
    snprintf(err, errlen,
             "%s: executor area at %" PRIu32 " of %" PRIu32 " bytes: expected %" PRIu64
             " bytes at %" PRIu64 " within the table's %zu",
             t->path, xo, LD(t->h->exec_size), (uint64_t)sizeof(sstm_stt_exec_t), need, t->size);
  else {
    t->nentries = n;
    t->nreasons = nr;
    t->version = v;
    t->x = xo ? (const sstm_stt_exec_t *)(const void *)((const char *)p + xo) : NULL;
    t->e = (const sstm_stt_entry_t *)(const void *)(t->h + 1);
    return 0;
  }
  table_close(t);
  return rc;
}

/* Open and validate the table of pid. Returns 0, or 1 with a message in
 * err. A table being created (sstm_init running) is given up to a second. */
static int table_open(int pid, table_t *t, char *err, size_t errlen) {
  for (int tries = 0;; tries++) {
    int fds[8];
    int n = table_fds(pid, fds, 8);
    if (n < 0) {
      int e = errno;
      if (e == ENOENT)
        snprintf(err, errlen, "no state table for pid %d: no such process", pid);
      else if (e == EACCES || e == EPERM)
        snprintf(err, errlen,
                 "cannot list /proc/%d/fd: permission denied (only the user of pid %d can "
                 "read its table, and only while the process is dumpable; or root)",
                 pid, pid);
      else
        snprintf(err, errlen, "cannot list /proc/%d/fd: %s", pid, strerror(e));
      return 1;
    }
    if (n == 0) {
      /* A program built with a library of versions 1-3 publishes a file
       * instead: say so rather than "does not publish one". */
      char legacy[64];
      struct stat st;
      snprintf(legacy, sizeof legacy, SSTM_STT_LEGACY_PATH_FMT, pid);
      bool old = lstat(legacy, &st) == 0 && S_ISREG(st.st_mode);
      snprintf(err, errlen, "no state table for pid %d: %s%s%s", pid,
               pid_alive(pid) ? "the process does not publish one (run it with "
                                "SCHEDSTM_STATE_TABLE=1 or cfg.state_table = true, "
                                "after sstm_init)"
                              : "the process has exited (its table went with it)",
               old ? "; there is a file " : "",
               old ? "of an earlier layout at /dev/shm (this sstm-top reads layout 4, a memfd)"
                   : "");
      return 1;
    }
    /* The first one that is a table; else the first one's reason. */
    int worst = 0;
    char first[512] = "";
    for (int i = 0; i < n && i < 8; i++) {
      char why[512];
      int rc = open_one(pid, fds[i], t, why, sizeof why);
      if (rc == 0) return 0;
      if (!first[0]) snprintf(first, sizeof first, "%s", why);
      if (rc == 2) worst = 2;
    }
    if (worst == 2 && tries < CREATE_TRIES) {
      sleep_ns(50000000);
      continue;
    }
    snprintf(err, errlen, "%s", first);
    return 1;
  }
}

/* The table changed under the live view: 0 same, 1 replaced (sstm_shutdown
 * and sstm_init again: a new memfd), -1 gone. */
static int table_changed(const table_t *t) {
  int fds[8];
  int n = table_fds(t->pid, fds, 8);
  if (n <= 0) return -1;
  for (int i = 0; i < n && i < 8; i++) {
    char path[64];
    struct stat st;
    snprintf(path, sizeof path, "/proc/%d/fd/%d", t->pid, fds[i]);
    if (stat(path, &st) == 0 && st.st_dev == t->dev && st.st_ino == t->ino) return 0;
  }
  return 1;
}

/* The policy's current line, and with cfg (NULL: not wanted, else of
 * sizeof config + 1 bytes) the configuration line, both written under the
 * same sequence number (the seqlock reader of schedstm/statetab.h: two
 * equal even numbers around the copy). A writer that stays in the middle
 * for SEQ_WAIT_NS (descheduled or stopped there) leaves "(inconsistent
 * ...)" and false: a bound in time, since yields alone can each give the
 * CPU away for a whole time slice on a loaded host. */
static bool read_cm_info(const table_t *t, char *dst, size_t dstlen, char *cfg) {
  char buf[sizeof t->h->cm_info], cbuf[sizeof t->h->config];
  uint64_t deadline = 0;
  for (;;) {
    uint32_t s1 = __atomic_load_n(&t->h->cm_info_seq, __ATOMIC_ACQUIRE);
    if (!(s1 & 1)) {
      /* acquire loads: a byte written after the writer made the number odd
       * (and fenced, release) brings that odd number with it, so the
       * re-read below cannot see s1 again; they also keep the re-read after
       * the copy. (Not an acquire fence: ThreadSanitizer builds reject
       * fences.) */
      for (size_t i = 0; cfg && i < sizeof cbuf; i++)
        cbuf[i] = __atomic_load_n(&t->h->config[i], __ATOMIC_ACQUIRE);
      for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = __atomic_load_n(&t->h->cm_info[i], __ATOMIC_ACQUIRE);
      if (LD(t->h->cm_info_seq) == s1) {
        (void)dstlen;
        copy_str(dst, buf, sizeof buf);
        if (cfg) copy_str(cfg, cbuf, sizeof cbuf);
        return true;
      }
    }
    uint64_t now = now_ns();
    if (deadline == 0)
      deadline = now + SEQ_WAIT_NS;
    else if (now >= deadline)
      break;
    sched_yield(); /* a writer descheduled on this CPU may finish */
  }
  snprintf(dst, dstlen, "(inconsistent: being rewritten)");
  if (cfg) snprintf(cfg, sizeof cbuf + 1, "(inconsistent: being rewritten)");
  return false;
}

static void read_header(const table_t *t, header_t *h) {
  memset(h, 0, sizeof *h);
  /* What table_open validated, not the mapping again: a writer (or anyone
   * else who can write the table) may have changed these since, and a
   * larger nentries would take the entry loops beyond the mapping. */
  h->version = t->version;
  h->nentries = t->nentries;
  h->entry_size = sizeof(sstm_stt_entry_t);
  h->nreasons = t->nreasons;
  h->pid = t->pid;
  h->start_ns = LD(t->h->start_ns);
  h->cm_info_ok = read_cm_info(t, h->cm_info, sizeof h->cm_info, h->config);
  for (int i = 0; i < SSTM_STT_REASONS; i++)
    copy_str(h->reason_names[i], t->h->reason_names[i], sizeof t->h->reason_names[i]);
  for (int i = 0; i < SSTM_STT_CMSTATS; i++)
    copy_str(h->cm_stat_names[i], t->h->cm_stat_names[i], sizeof t->h->cm_stat_names[i]);
}

static void read_entry(const table_t *t, uint32_t i, entry_t *x) {
  const sstm_stt_entry_t *e = &t->e[i];
  x->in_use = LD(e->in_use);
  x->slot = LD(e->slot);
  x->tid = LD(e->tid);
  x->in_tx = LD(e->in_tx);
  x->txid = LD(e->txid);
  x->commits = LD(e->commits);
  x->aborts = LD(e->aborts);
  x->conflict_tid = LD(e->conflict_tid);
  x->last_reason = LD(e->last_reason);
  x->conflict_txid = LD(e->conflict_txid);
  x->action = LD(e->action);
  x->os_policy = LD(e->os_policy);
  x->os_nice = LD(e->os_nice);
  x->cpu = LD(e->cpu);
  x->cpu_pinned = LD(e->cpu_pinned);
  for (int r = 0; r < SSTM_STT_REASONS; r++)
    x->by_reason[r] = LD(e->aborts_by_reason[r]);
  for (int s = 0; s < SSTM_STT_CMSTATS; s++)
    x->cm_stats[s] = LD(e->cm_stats[s]);
  copy_str(x->cm, e->cm, sizeof e->cm);
}

/* The executor area: in_use first (acquire: pairs with the executor's
 * release store, so the configuration read after it is the one it
 * published), then every field relaxed. levels is clamped to the slots. */
static void read_exec(const table_t *t, xarea_t *a) {
  memset(a, 0, sizeof *a);
  const sstm_stt_exec_t *x = t->x;
  if (!x) return;
  a->present = true;
  a->in_use = __atomic_load_n(&x->in_use, __ATOMIC_ACQUIRE) == 1;
  a->levels = LD(x->levels);
  if (a->levels > SSTM_STT_EXEC_LEVELS) a->levels = SSTM_STT_EXEC_LEVELS;
  a->workers = LD(x->workers);
  a->contexts = LD(x->contexts);
  a->contexts_busy = LD(x->contexts_busy);
  a->preempt = LD(x->preempt);
  a->tick_us = LD(x->tick_us);
  a->c_max = LD(x->c_max);
  a->lazy = LD(x->lazy);
  a->generation = LD(x->generation);
  copy_str(a->preempt_name, x->preempt_name, sizeof x->preempt_name);
  for (uint32_t l = 0; l < a->levels; l++) {
    const sstm_stt_exec_level_t *s = &x->level[l];
    xlevel_t *d = &a->level[l];
    d->submitted = LD(s->submitted);
    d->completed = LD(s->completed);
    d->preemptions = LD(s->preemptions);
    d->promotions = LD(s->promotions);
    d->aborts = LD(s->aborts);
    d->queue_ns = LD(s->queue_ns);
    d->run_ns = LD(s->run_ns);
    d->paused_ns = LD(s->paused_ns);
    d->turnaround_ns = LD(s->turnaround_ns);
    d->turnaround_max_ns = LD(s->turnaround_max_ns);
    d->in_flight = LD(s->in_flight);
  }
}

/* The abort probability of a level: aborted attempts / all attempts. */
static double abort_prob(const xlevel_t *l) {
  uint64_t att = l->aborts + l->completed;
  return att ? (double)l->aborts / (double)att : 0.0;
}

static double mean_us(uint64_t sum_ns, uint64_t n) {
  return n ? (double)sum_ns / (double)n / 1e3 : 0.0;
}

static const char *act_name(uint32_t a) { return a < SSTM_ACT_COUNT ? act_names[a] : "?"; }

static const char *reason_name(const header_t *h, uint32_t r) {
  return r < h->nreasons && h->reason_names[r][0] ? h->reason_names[r] : "?";
}

static const char *os_policy_name(int32_t p) {
  switch (p) {
  case 0: return "other";
  case 1: return "fifo";
  case 2: return "rr";
  case 3: return "batch";
  case 5: return "idle";
  case 6: return "deadline";
  case 7: return "ext";
  default: return "?";
  }
}

/* ---- JSON ------------------------------------------------------------------ */

static void jstr(FILE *o, const char *s) {
  fputc('"', o);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      fprintf(o, "\\%c", c);
    else if (c < 0x20 || c >= 0x7f)
      fprintf(o, "\\u%04x", c); /* bytes >= 0x80 as Latin-1: always valid JSON */
    else
      fputc(c, o);
  }
  fputc('"', o);
}

/* "exec": null without an executor area (exec_offset 0); else the
 * area, whose levels are those of the executor that published last (kept
 * after it ended: in_use false). Means in microseconds, null for a level
 * with no request ended. */
static void json_exec(FILE *o, const table_t *t) {
  xarea_t a;
  read_exec(t, &a);
  if (!a.present) {
    fprintf(o, "null");
    return;
  }
  fprintf(o,
          "{\"in_use\": %s, \"generation\": %" PRIu64 ", \"levels\": %" PRIu32
          ", \"workers\": %" PRIu32 ", \"contexts\": %" PRIu32 ", \"contexts_busy\": %" PRIu32
          ", \"preempt\": %" PRIu32 ", \"preempt_name\": ",
          a.in_use ? "true" : "false", a.generation, a.levels, a.workers, a.contexts,
          a.contexts_busy, a.preempt);
  jstr(o, a.preempt_name);
  fprintf(o,
          ", \"tick_us\": %" PRIu32 ", \"c_max\": %" PRIu32 ", \"lazy\": %" PRIu32
          ",\n  \"level_stats\": [",
          a.tick_us, a.c_max, a.lazy);
  for (uint32_t l = 0; l < a.levels; l++) {
    const xlevel_t *x = &a.level[l];
    fprintf(o,
            "%s\n   {\"priority\": %" PRIu32 ", \"submitted\": %" PRIu64 ", \"completed\": %" PRIu64
            ", \"in_flight\": %" PRIu64 ", \"preemptions\": %" PRIu64 ", \"promotions\": %" PRIu64
            ", \"aborts\": %" PRIu64 ", \"queue_ns\": %" PRIu64 ", \"run_ns\": %" PRIu64
            ", \"paused_ns\": %" PRIu64 ", \"turnaround_ns\": %" PRIu64
            ", \"turnaround_max_ns\": %" PRIu64 ", \"abort_probability\": %.6f",
            l ? "," : "", l, x->submitted, x->completed, x->in_flight, x->preemptions,
            x->promotions, x->aborts, x->queue_ns, x->run_ns, x->paused_ns, x->turnaround_ns,
            x->turnaround_max_ns, abort_prob(x));
    if (x->completed)
      fprintf(o, ", \"turnaround_us_mean\": %.3f}", mean_us(x->turnaround_ns, x->completed));
    else
      fprintf(o, ", \"turnaround_us_mean\": null}");
  }
  fprintf(o, "\n  ]}");
}

static int json_snapshot(const table_t *t, bool all) {
  header_t h;
  read_header(t, &h);
  FILE *o = stdout;
  uint64_t now = now_ns();
  /* Our mapping keeps the table of a process that exits after the open:
   * what it shows is then the state that process left. */
  bool alive = pid_alive(t->pid);
  if (!alive)
    fprintf(stderr, "%s: pid %d exited while its table was read: the state it left\n", prog,
            t->pid);
  fprintf(o,
          "{\"pid\": %" PRId32 ", \"process_alive\": %s, \"version\": %" PRIu32
          ", \"nentries\": %" PRIu32 ", \"entry_size\": %" PRIu32 ",\n",
          h.pid, alive ? "true" : "false", h.version, h.nentries, h.entry_size);
  fprintf(o, " \"start_ns\": %" PRIu64 ", \"now_ns\": %" PRIu64 ", \"uptime_s\": ", h.start_ns,
          now);
  if (alive)
    fprintf(o, "%.3f,\n", now > h.start_ns ? (double)(now - h.start_ns) / 1e9 : 0.0);
  else
    fprintf(o, "null,\n");
  fprintf(o, " \"config\": ");
  jstr(o, h.config);
  fprintf(o, ",\n \"cm_info\": ");
  jstr(o, h.cm_info);
  fprintf(o, ", \"cm_info_consistent\": %s", h.cm_info_ok ? "true" : "false");
  /* reason_names: index = sstm_abort_reason_t, nreasons of them. */
  fprintf(o, ",\n \"reason_names\": [");
  for (uint32_t r = 0; r < h.nreasons; r++) {
    fprintf(o, r ? ", " : "");
    jstr(o, h.reason_names[r]);
  }
  /* cm_stat_names: the counters the policy uses, in order (the unused
   * slots, with empty names, are left out: cm_stats below is keyed by
   * name). */
  fprintf(o, "],\n \"cm_stat_names\": [");
  bool first = true;
  for (int s = 0; s < SSTM_STT_CMSTATS; s++) {
    if (!h.cm_stat_names[s][0]) continue;
    fprintf(o, first ? "" : ", ");
    first = false;
    jstr(o, h.cm_stat_names[s]);
  }
  fprintf(o, "],\n \"entries\": [");
  uint64_t commits = 0, aborts = 0;
  unsigned in_use = 0, shown = 0;
  for (uint32_t i = 0; i < h.nentries; i++) {
    entry_t x;
    read_entry(t, i, &x);
    if (!x.in_use && !all) continue;
    if (x.in_use) {
      in_use++;
      commits += x.commits;
      aborts += x.aborts;
    }
    fprintf(o,
            "%s\n  {\"index\": %" PRIu32 ", \"in_use\": %" PRIu32 ", \"slot\": %" PRIu32
            ", \"tid\": %" PRId32 ", \"in_tx\": %" PRIu32 ", \"txid\": %" PRIu64
            ", \"commits\": %" PRIu64 ", \"aborts\": %" PRIu64 ", \"abort_ratio\": ",
            shown++ ? "," : "", i, x.in_use, x.slot, x.tid, x.in_tx, x.txid, x.commits, x.aborts);
    if (x.commits)
      fprintf(o, "%.6f", (double)x.aborts / (double)x.commits);
    else
      fprintf(o, "null");
    fprintf(o, ",\n   \"last_reason\": %" PRIu32 ", \"last_reason_name\": ", x.last_reason);
    jstr(o, x.aborts ? reason_name(&h, x.last_reason) : "");
    fprintf(o,
            ", \"conflict_tid\": %" PRId32 ", \"conflict_txid\": %" PRIu64 ", \"action\": %" PRIu32
            ", \"action_name\": \"%s\", \"os_policy\": %" PRId32
            ", \"os_policy_name\": \"%s\", \"os_nice\": %" PRId32 ", \"cpu\": %" PRId32
            ", \"cpu_pinned\": %" PRId32 ", \"cm\": ",
            x.conflict_tid, x.conflict_txid, x.action, act_name(x.action), x.os_policy,
            os_policy_name(x.os_policy), x.os_nice, x.cpu, x.cpu_pinned);
    jstr(o, x.cm);
    fprintf(o, ",\n   \"aborts_by_reason\": {");
    for (uint32_t r = 0; r < h.nreasons; r++) {
      fprintf(o, r ? ", " : "");
      jstr(o, reason_name(&h, r));
      fprintf(o, ": %" PRIu64, x.by_reason[r]);
    }
    fprintf(o, "},\n   \"cm_stats\": {");
    first = true;
    for (int s = 0; s < SSTM_STT_CMSTATS; s++) {
      if (!h.cm_stat_names[s][0]) continue; /* unused counter */
      fprintf(o, first ? "" : ", ");
      first = false;
      jstr(o, h.cm_stat_names[s]);
      fprintf(o, ": %" PRIu64, x.cm_stats[s]);
    }
    fprintf(o, "}}");
  }
  fprintf(o,
          "\n ],\n \"in_use\": %u, \"totals\": {\"commits\": %" PRIu64 ", \"aborts\": %" PRIu64
          "},\n \"exec\": ",
          in_use, commits, aborts);
  json_exec(o, t);
  fprintf(o, "}\n");
  return fflush(o) == 0 && !ferror(o) ? 0 : 1;
}

/* ---- layout ----------------------------------------------------------------- */

/* The output's width in columns: the terminal's (TIOCGWINSZ) when stdout
 * is one, else $COLUMNS when it is a number, else 80. */
static int out_width(void) {
  struct winsize ws;
  if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
    return ws.ws_col;
  const char *c = getenv("COLUMNS");
  if (c && *c) {
    char *end;
    errno = 0;
    long v = strtol(c, &end, 10);
    if (!errno && !*end && v > 0 && v <= 10000) return (int)v;
  }
  return 80;
}

/* The wide layout's columns; it is used when they fit. The narrow one
 * leaves out TXID, AB/COM, CONFL, OSPOL, NICE, CPU and CM (the
 * policy is on the "policy now" line, the JSON has every field). */
#define WIDE_FMT_H "%5s %8s %2s %12s %11s %9s %10s %9s %7s %-16s %8s %-7s %-6s %4s %5s %s\n"
#define WIDE_COLUMNS 146 /* the columns above with a 12-character policy name */
/* 78 columns: one spare, so that no terminal wraps a full line */
#define NARROW_FMT_H "%4s %7s %2s %10s %8s %9s %8s %-15s %s\n"

/* Print text, cut into lines of at most width columns at spaces (a word
 * longer than a line is cut where the line ends), continuation lines
 * indented by two spaces. */
static void put_wrapped(FILE *o, const char *text, int width) {
  if (width < 20) width = 20;
  const char *p = text;
  int indent = 0;
  while (*p) {
    int room = width - indent;
    size_t len = strlen(p);
    size_t take = len;
    if ((int)len > room) {
      take = (size_t)room;
      while (take > 0 && p[take] != ' ')
        take--;
      if (take == 0) take = (size_t)room; /* one long word */
    }
    fprintf(o, "%*s%.*s\n", indent, "", (int)take, p);
    p += take;
    while (*p == ' ')
      p++;
    indent = 2;
  }
}

/* What adaptive's line means (its describe(): "current=P long>Nus
 * reason=..."): in full for -h, in short under the live view's line. */
static const char adaptive_legend_short[] =
    "(adaptive: current=policy in use, long>=long-tx threshold; over|under=threads vs CPUs, "
    "busy=CPUs used/CPUs, *-tx=CPU time per commit, nondet=retries reading other data, "
    "upd=update share; probe: commit rates, t=Welch's t. sstm-top -h explains)";
static const char adaptive_legend[] =
    "adaptive: current= the sub-policy in use; long> CPU time per commit above which "
    "transactions count as long; reason= what the last window showed: over|under = more "
    "threads than CPUs or not, threads= that ran transactions, busy= CPUs they kept busy/CPUs, "
    "short-tx|long-tx|nondet-tx= CPU time per commit, nondet= share of retries that read other "
    "data, upd= share of update commits, slice= time-slice extension, window= evaluation window; "
    "probe A=x/s B=y/s = commit rates of the two candidates, t= Welch's t of their difference; "
    "start = no window judged yet.";

/* ---- live view --------------------------------------------------------------- */

typedef struct prev {
  bool valid;
  int32_t tid;
  uint64_t commits, aborts;
} prev_t;

/* The executor area at the previous frame: completions per level, for
 * rates within one executor's life (generation). */
typedef struct xprev {
  bool valid;
  uint64_t generation;
  uint64_t completed[SSTM_STT_EXEC_LEVELS];
} xprev_t;

static void fmt_rate(char *buf, size_t n, bool valid, uint64_t now, uint64_t before, double dt) {
  if (!valid || dt <= 0 || now < before)
    snprintf(buf, n, "-");
  else
    snprintf(buf, n, "%.0f", (double)(now - before) / dt);
}

static void fmt_uptime(char *buf, size_t n, uint64_t ns) {
  uint64_t ds = ns / 100000000ull; /* tenths of a second */
  snprintf(buf, n, "%" PRIu64 ":%02" PRIu64 ":%02" PRIu64 ".%" PRIu64, ds / 36000, ds / 600 % 60,
           ds / 10 % 60, ds % 10);
}

/* Read every entry into cur (nentries of them), return the in-use count. */
static unsigned snapshot(const table_t *t, uint32_t n, entry_t *cur) {
  unsigned k = 0;
  for (uint32_t i = 0; i < n; i++) {
    read_entry(t, i, &cur[i]);
    k += cur[i].in_use != 0;
  }
  return k;
}

/* The executor's lines of a frame: its configuration and occupancy, then
 * one line per priority level that had a request (every level with -a). */
static void exec_lines(FILE *o, const table_t *t, xprev_t *xp, double dt, bool all, bool wide,
                       int width) {
  xarea_t a;
  read_exec(t, &a);
  if (!a.present) return;
  char line[512];
  if (!a.in_use) {
    bool any = false;
    for (uint32_t l = 0; l < a.levels; l++)
      any |= a.level[l].submitted != 0;
    put_wrapped(o, any ? "executor: ended (the counters below are its last)" : "executor: none",
                width);
    if (!any) {
      xp->valid = false;
      return;
    }
  } else {
    char cmax[16];
    if (a.c_max)
      snprintf(cmax, sizeof cmax, "%" PRIu32, a.c_max);
    else
      snprintf(cmax, sizeof cmax, "inf");
    snprintf(line, sizeof line,
             "executor: preempt %s  tick %" PRIu32 "us  c_max %s%s  workers %" PRIu32
             "  contexts %" PRIu32 "/%" PRIu32 " busy",
             a.preempt_name, a.tick_us, cmax, a.lazy ? " lazy" : "", a.workers, a.contexts_busy,
             a.contexts);
    put_wrapped(o, line, width);
  }
  bool pvalid = dt > 0 && xp->valid && xp->generation == a.generation;
  if (wide)
    fprintf(o, "%4s %10s %10s %8s %5s %8s %6s %6s %9s %9s %9s %10s %10s\n", "PRIO", "SUBMITTED",
            "DONE", "DONE/S", "INFL", "PREEMPT", "PROMO", "ABORT%", "QUEUE-us", "RUN-us",
            "PAUSE-us", "TURN-us", "MAX-us");
  else
    fprintf(o, "%4s %10s %8s %5s %8s %6s %6s %10s %10s\n", "PRIO", "DONE", "DONE/S", "INFL",
            "PREEMPT", "PROMO", "ABORT%", "TURN-us", "MAX-us");
  for (uint32_t l = 0; l < a.levels; l++) {
    const xlevel_t *x = &a.level[l];
    if (x->submitted == 0 && !all) continue;
    char rate[24], turn[24];
    fmt_rate(rate, sizeof rate, pvalid, x->completed, xp->completed[l], dt);
    if (x->completed)
      snprintf(turn, sizeof turn, "%.1f", mean_us(x->turnaround_ns, x->completed));
    else
      snprintf(turn, sizeof turn, "-");
    if (wide)
      fprintf(o,
              "%4" PRIu32 " %10" PRIu64 " %10" PRIu64 " %8s %5" PRIu64 " %8" PRIu64 " %6" PRIu64
              " %6.2f %9.1f %9.1f %9.1f %10s %10.1f\n",
              l, x->submitted, x->completed, rate, x->in_flight, x->preemptions, x->promotions,
              100 * abort_prob(x), mean_us(x->queue_ns, x->completed),
              mean_us(x->run_ns, x->completed), mean_us(x->paused_ns, x->completed), turn,
              (double)x->turnaround_max_ns / 1e3);
    else
      fprintf(o,
              "%4" PRIu32 " %10" PRIu64 " %8s %5" PRIu64 " %8" PRIu64 " %6" PRIu64
              " %6.2f %10s %10.1f\n",
              l, x->completed, rate, x->in_flight, x->preemptions, x->promotions,
              100 * abort_prob(x), turn, (double)x->turnaround_max_ns / 1e3);
  }
  xp->valid = true;
  xp->generation = a.generation;
  for (uint32_t l = 0; l < a.levels; l++)
    xp->completed[l] = a.level[l].completed;
  fputc('\n', o);
}

static void frame(const table_t *t, const header_t *h, const entry_t *cur, prev_t *prev,
                  xprev_t *xp, double dt, bool all, bool clear, double interval) {
  FILE *o = stdout;
  int width = out_width();
  bool wide = width >= WIDE_COLUMNS;
  width--; /* a full-width line makes some terminals wrap */
  uint64_t now = now_ns();
  char up[32], rc[24], ra[24], line[512];
  fmt_uptime(up, sizeof up, now > h->start_ns ? now - h->start_ns : 0);
  uint64_t tc = 0, ta = 0, pc = 0, pa = 0;
  unsigned in_use = 0;
  bool pvalid = dt > 0;
  for (uint32_t i = 0; i < h->nentries; i++) {
    if (!cur[i].in_use) continue;
    in_use++;
    tc += cur[i].commits;
    ta += cur[i].aborts;
    if (prev[i].valid && prev[i].tid == cur[i].tid) {
      pc += prev[i].commits;
      pa += prev[i].aborts;
    } else {
      pc += cur[i].commits; /* new thread: no rate contribution */
      pa += cur[i].aborts;
    }
  }
  if (clear) fputs("\033[H\033[2J", o);
  fmt_rate(rc, sizeof rc, pvalid, tc, pc, dt);
  fmt_rate(ra, sizeof ra, pvalid, ta, pa, dt);
  snprintf(line, sizeof line, "sstm-top - pid %d  up %s  threads %u/%" PRIu32 "  refresh %.2fs",
           t->pid, up, in_use, h->nentries, interval);
  put_wrapped(o, line, width);
  put_wrapped(o, h->config[0] ? h->config : "(no configuration line)", width);
  if (h->cm_info[0]) {
    _Static_assert(sizeof line >= sizeof "policy now: " + sizeof h->cm_info,
                   "the policy's line is shown whole");
    snprintf(line, sizeof line, "policy now: %s", h->cm_info);
    put_wrapped(o, line, width);
    if (strncmp(h->cm_info, "current=", 8) == 0) put_wrapped(o, adaptive_legend_short, width);
  }
  snprintf(line, sizeof line,
           "total: commits %" PRIu64 " (%s/s)  aborts %" PRIu64 " (%s/s)  aborts/commit ", tc, rc,
           ta, ra);
  if (tc)
    snprintf(line + strlen(line), sizeof line - strlen(line), "%.3f", (double)ta / (double)tc);
  else
    snprintf(line + strlen(line), sizeof line - strlen(line), "-");
  put_wrapped(o, line, width);
  fputc('\n', o);
  exec_lines(o, t, xp, dt, all, wide, width);
  if (wide)
    fprintf(o, WIDE_FMT_H, "SLOT", "TID", "TX", "TXID", "COMMITS", "COMMIT/S", "ABORTS", "ABORT/S",
            "AB/COM", "LAST-REASON", "CONFL", "ACTION", "OSPOL", "NICE", "CPU", "CM");
  else
    fprintf(o, NARROW_FMT_H, "SLOT", "TID", "TX", "COMMITS", "COMMIT/S", "ABORTS", "ABORT/S",
            "LAST-REASON", "ACTION");
  for (uint32_t i = 0; i < h->nentries; i++) {
    const entry_t *x = &cur[i];
    if (!x->in_use && !all) {
      prev[i].valid = false;
      continue;
    }
    bool pv = pvalid && prev[i].valid && prev[i].tid == x->tid;
    fmt_rate(rc, sizeof rc, pv, x->commits, prev[i].commits, dt);
    fmt_rate(ra, sizeof ra, pv, x->aborts, prev[i].aborts, dt);
    const char *why = x->aborts ? reason_name(h, x->last_reason) : "-";
    if (wide) {
      char ratio[16], confl[16], cpu[16];
      /* the CPU seen, with "p" when the thread mapping pinned it there */
      if (x->cpu >= 0)
        snprintf(cpu, sizeof cpu, "%" PRId32 "%s", x->cpu, x->cpu_pinned == x->cpu ? "p" : "");
      else
        snprintf(cpu, sizeof cpu, "-");
      if (x->commits)
        snprintf(ratio, sizeof ratio, "%.3f", (double)x->aborts / (double)x->commits);
      else
        snprintf(ratio, sizeof ratio, "-");
      if (x->conflict_tid)
        snprintf(confl, sizeof confl, "%" PRId32, x->conflict_tid);
      else
        snprintf(confl, sizeof confl, "-");
      fprintf(o,
              "%5" PRIu32 " %8" PRId32 " %2s %12" PRIu64 " %11" PRIu64 " %9s %10" PRIu64
              " %9s %7s %-16s %8s %-7s %-6s %4" PRId32 " %5s %s%s\n",
              x->slot, x->tid, x->in_tx ? "*" : "", x->txid, x->commits, rc, x->aborts, ra, ratio,
              why, confl, act_name(x->action), os_policy_name(x->os_policy), x->os_nice, cpu, x->cm,
              x->in_use ? "" : " (free)");
    } else {
      /* the free marker in the TX column: no room for a column of its own */
      fprintf(o, "%4" PRIu32 " %7" PRId32 " %2s %10" PRIu64 " %8s %9" PRIu64 " %8s %-15.15s %s\n",
              x->slot, x->tid,
              !x->in_use ? "-"
              : x->in_tx ? "*"
                         : "",
              x->commits, rc, x->aborts, ra, why, act_name(x->action));
    }
    prev[i].valid = x->in_use != 0;
    prev[i].tid = x->tid;
    prev[i].commits = x->commits;
    prev[i].aborts = x->aborts;
  }
  fflush(o);
}

/* A viewer's step after each wait: the table as table_changed finds it.
 * 0 the same; 1 replaced (sstm_shutdown then sstm_init again: a new
 * memfd, same pid), now open and *h read again; -1 removed (the program
 * shut down or ended), said on stderr, the view ends with status 0; -2 the
 * new table could not be opened, said on stderr, status 1. */
static int table_follow(table_t *t, header_t *h) {
  int ch = table_changed(t);
  if (ch == 0) return 0;
  if (ch < 0) {
    fprintf(stderr, "%s: pid %d: state table removed (%s)\n", prog, t->pid,
            pid_alive(t->pid) ? "sstm_shutdown" : "process exited");
    return -1;
  }
  char err[512];
  table_close(t);
  if (table_open(t->pid, t, err, sizeof err) != 0) {
    fprintf(stderr, "%s: %s\n", prog, err);
    return -2;
  }
  read_header(t, h);
  return 1;
}

static int live(table_t *t, double interval, long count, bool all) {
  bool clear = isatty(STDOUT_FILENO);
  uint64_t period = (uint64_t)(interval * 1e9);
  header_t h;
  read_header(t, &h);
  entry_t *cur = calloc(h.nentries ? h.nentries : 1, sizeof *cur);
  prev_t *prev = calloc(h.nentries ? h.nentries : 1, sizeof *prev);
  if (!cur || !prev) {
    fprintf(stderr, "%s: out of memory\n", prog);
    free(cur);
    free(prev);
    return 1;
  }
  /* Baseline: the first frame already shows rates over one interval. */
  xprev_t xp = {0};
  snapshot(t, h.nentries, cur);
  {
    xarea_t a;
    read_exec(t, &a);
    xp.valid = a.present;
    xp.generation = a.generation;
    for (uint32_t l = 0; l < a.levels; l++)
      xp.completed[l] = a.level[l].completed;
  }
  for (uint32_t i = 0; i < h.nentries; i++)
    prev[i] = (prev_t){cur[i].in_use != 0, cur[i].tid, cur[i].commits, cur[i].aborts};
  uint64_t last = now_ns();
  int rc = 0;
  for (long done = 0; count <= 0 || done < count; done++) {
    sleep_ns(period);
    int ch = table_follow(t, &h);
    if (ch < 0) {
      rc = ch == -1 ? 0 : 1;
      break;
    }
    if (ch > 0) {
      xp.valid = false; /* another table: no rates against the old one's levels */
      free(cur);
      free(prev);
      cur = calloc(h.nentries ? h.nentries : 1, sizeof *cur);
      prev = calloc(h.nentries ? h.nentries : 1, sizeof *prev);
      if (!cur || !prev) {
        fprintf(stderr, "%s: out of memory\n", prog);
        rc = 1;
        break;
      }
    }
    uint64_t now = now_ns();
    double dt = ch == 0 ? (double)(now - last) / 1e9 : 0.0;
    last = now;
    snapshot(t, h.nentries, cur);
    /* The policy's line changes while the program runs (adaptive's choice
     * and reason): read it again for every frame. */
    h.cm_info_ok = read_cm_info(t, h.cm_info, sizeof h.cm_info, NULL);
    frame(t, &h, cur, prev, &xp, dt, all, clear, interval);
    if (!clear && (count <= 0 || done + 1 < count)) fputc('\n', stdout);
  }
  free(cur);
  free(prev);
  return rc;
}

/* ---- policy log -------------------------------------------------------------- */

/* -p: the policy's line (the header's cm_info: adaptive rewrites it at
 * every window it judges, with its choice, the regime and the figures
 * behind them) each time its text changes, one output line per change:
 * the seconds since the program's sstm_init (start_ns, CLOCK_MONOTONIC as
 * now_ns), a space, the line. The first output line is the line as it is
 * when the tool starts. Each is flushed at once, so that a pipe or a file
 * has it as it happens. Polled every `interval` seconds: a line that the
 * policy replaced again within one interval is not seen, and a line caught
 * in the middle of its rewrite is read again at the next poll, never
 * printed. Stops after `count` lines (0: no limit) or when the table goes
 * away (exit status 0, a note on stderr); a new table of the same pid
 * (sstm_shutdown, then sstm_init) is followed from its first line. */
static int policy_log(table_t *t, double interval, long count) {
  uint64_t period = (uint64_t)(interval * 1e9);
  header_t h;
  read_header(t, &h);
  char last[sizeof h.cm_info], line[sizeof h.cm_info];
  bool have = false;
  long printed = 0;
  for (;;) {
    if (read_cm_info(t, line, sizeof line, NULL) && (!have || strcmp(line, last) != 0)) {
      uint64_t now = now_ns();
      double s = now > h.start_ns ? (double)(now - h.start_ns) / 1e9 : 0.0;
      printf("%.3f %s\n", s, line);
      if (fflush(stdout) != 0) {
        fprintf(stderr, "%s: cannot write: %s\n", prog, strerror(errno));
        return 1;
      }
      memcpy(last, line, sizeof last);
      have = true;
      if (count > 0 && ++printed >= count) return 0;
    }
    sleep_ns(period);
    int ch = table_follow(t, &h);
    if (ch < 0) return ch == -1 ? 0 : 1;
    if (ch > 0) have = false; /* a new table: its first line */
  }
}

/* ---- listing ----------------------------------------------------------------- */

/* -l: every process of /proc whose descriptors we may list (ours) and that
 * has a table descriptor. */
static int list_tables(void) {
  DIR *d = opendir("/proc");
  if (d == NULL) {
    fprintf(stderr, "%s: /proc: %s\n", prog, strerror(errno));
    return 1;
  }
  unsigned found = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    char *end;
    errno = 0;
    long pid = strtol(de->d_name, &end, 10);
    if (errno || end == de->d_name || *end || pid <= 0 || pid > INT_MAX) continue;
    int fds[1];
    if (table_fds((int)pid, fds, 1) <= 0) continue; /* none, gone, or not ours */
    if (found++ == 0) printf("%8s %7s %-16s %s\n", "PID", "THREADS", "COMMAND", "CONFIG");
    /* The name is the process's own choice (prctl PR_SET_NAME): as
     * untrusted as the table. */
    char raw[64] = "?", comm[sizeof raw], path[64];
    snprintf(path, sizeof path, "/proc/%ld/comm", pid);
    FILE *f = fopen(path, "re");
    if (f) {
      if (fgets(raw, sizeof raw, f)) raw[strcspn(raw, "\n")] = '\0';
      fclose(f);
    }
    copy_str(comm, raw, sizeof raw - 1);
    table_t t;
    char err[512];
    if (table_open((int)pid, &t, err, sizeof err) != 0) {
      printf("%8ld %7s %-16s (%s)\n", pid, "-", comm, err);
      continue;
    }
    header_t h;
    read_header(&t, &h);
    unsigned in_use = 0;
    for (uint32_t i = 0; i < t.nentries; i++)
      in_use += LD(t.e[i].in_use) != 0;
    /* one line per process: the configuration cut to the width */
    int room = out_width() - 1 - 34;
    if (room < 10) room = 10;
    if ((int)strlen(h.config) > room) memcpy(h.config + room - 3, "...", 4);
    printf("%8ld %7u %-16s %s\n", pid, in_use, comm, h.config);
    table_close(&t);
  }
  closedir(d);
  if (found == 0) printf("no schedstm state tables in your running processes\n");
  return 0;
}

/* ---- removing files of earlier versions ----------------------------------------- */

/* The pid in a directory entry named like a table of versions 1 to 3
 * ("schedstm.<digits>", SSTM_STT_LEGACY_PATH_FMT), or -1 for any other
 * name. */
static int legacy_name_pid(const char *name) {
  if (strncmp(name, "schedstm.", 9) != 0) return -1;
  const char *s = name + 9;
  if (!*s || strlen(s) > 9) return -1;
  for (const char *c = s; *c; c++)
    if (!isdigit((unsigned char)*c)) return -1;
  int pid = atoi(s);
  return pid > 0 ? pid : -1;
}

/* The file dfd/name starts like a table of versions 1 to 3 (magic, then a
 * version from 1 to LEGACY_VERSION_MAX): read with pread, not mapped. */
static bool legacy_header(int dfd, const char *name, const struct stat *st) {
  int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return false;
  uint32_t w[2];
  struct stat again;
  bool ok = fstat(fd, &again) == 0 && again.st_dev == st->st_dev && again.st_ino == st->st_ino &&
            pread(fd, w, sizeof w, 0) == (ssize_t)sizeof w && w[0] == SSTM_STT_MAGIC && w[1] >= 1 &&
            w[1] <= LEGACY_VERSION_MAX;
  close(fd);
  return ok;
}

/* -c: the library keeps its table in a memfd since version 4, which goes
 * with its process: nothing is left to clean. Versions 1 to 3 kept it in
 * /dev/shm/schedstm.<pid>, which a killed program left behind (its whole
 * size in memory, /dev/shm being RAM). -c removes those: a file is removed
 * only if its pid has no process, it is a regular file (lstat: a symbolic
 * link planted under the name is left alone, and so is what it points
 * to), it belongs to the effective user, and it starts with a table's
 * header (magic and a version from 1 to 3: the name alone proves nothing,
 * anyone can create files in /dev/shm); anything else is reported and
 * kept.
 *
 * A file whose pid is alive is kept even if that process is not the one
 * that wrote it (pid reuse): the tool cannot tell, and keeping garbage is
 * the safe error. Device and inode are compared again just before the
 * unlink, which leaves only the window between that lstat and the unlink.
 *
 * Exit status 0 when every such file of the user is gone (also when there
 * was none), 1 when one could not be removed. */
static int clean_tables(void) {
  printf("state tables of version %u and later are memfds that go with their process: "
         "nothing of theirs to remove. Files left in /dev/shm by versions 1-%u:\n",
         LEGACY_VERSION_MAX + 1, LEGACY_VERSION_MAX);
  int dfd = open("/dev/shm", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR *d = dfd < 0 ? NULL : fdopendir(dfd);
  if (d == NULL) {
    if (errno == ENOENT) {
      printf("0 stale table(s) removed (no /dev/shm)\n");
      return 0;
    }
    fprintf(stderr, "%s: /dev/shm: %s\n", prog, strerror(errno));
    if (dfd >= 0) close(dfd);
    return 1;
  }
  unsigned removed = 0, kept = 0, failed = 0;
  uid_t me = geteuid();
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    int pid = legacy_name_pid(de->d_name);
    if (pid < 0 || pid_alive(pid)) continue;
    struct stat st, again;
    if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue; /* gone already */
    if (!S_ISREG(st.st_mode)) {
      printf("kept /dev/shm/%s: not a regular file\n", de->d_name);
      kept++;
      continue;
    }
    if (st.st_uid != me) {
      printf("kept /dev/shm/%s: belongs to uid %u\n", de->d_name, (unsigned)st.st_uid);
      kept++;
      continue;
    }
    if (!legacy_header(dfd, de->d_name, &st)) {
      printf("kept /dev/shm/%s: not a schedstm state table (no table header of version 1-%u)\n",
             de->d_name, LEGACY_VERSION_MAX);
      kept++;
      continue;
    }
    if (pid_alive(pid) || fstatat(dfd, de->d_name, &again, AT_SYMLINK_NOFOLLOW) != 0 ||
        again.st_dev != st.st_dev || again.st_ino != st.st_ino)
      continue; /* the pid is in use again, or the file was replaced */
    if (unlinkat(dfd, de->d_name, 0) != 0) {
      if (errno == ENOENT) continue;
      fprintf(stderr, "%s: cannot remove /dev/shm/%s: %s\n", prog, de->d_name, strerror(errno));
      failed++;
      continue;
    }
    printf("removed /dev/shm/%s (pid %d has exited; %lld bytes)\n", de->d_name, pid,
           (long long)st.st_size);
    removed++;
  }
  closedir(d); /* closes dfd */
  printf("%u stale table(s) removed", removed);
  if (kept) printf(", %u kept", kept);
  printf("\n");
  return failed ? 1 : 0;
}

/* ---- main ------------------------------------------------------------------- */

static void usage(FILE *o, bool full) {
  fprintf(o,
          "usage: %s [-i SECONDS] [-n N] [-a] PID   live view of a schedstm program\n"
          "       %s -j [-a] PID                    one JSON snapshot\n"
          "       %s -p [-i SECONDS] [-n N] PID     the policy's line at each change\n"
          "       %s -l                             list your processes' tables\n"
          "       %s -c                             remove files of versions 1-%u\n",
          prog, prog, prog, prog, prog, LEGACY_VERSION_MAX);
  if (!full) {
    fprintf(o, "%s -h explains the options and the columns.\n", prog);
    return;
  }
  fprintf(o,
          "Shows the state table of a program run with SCHEDSTM_STATE_TABLE=1 (or\n"
          "cfg.state_table = true): a sealed memfd of the process, reached through\n"
          "/proc/PID/fd, so only the process's user (or root) can read it.\n"
          "  -i SECONDS  refresh interval (default 0.5; -p: 0.005); 0.001 to 3600\n"
          "  -n N        stop after N refreshes (-p: N lines); 1 or more\n"
          "  -a          also show free slots and every executor level\n"
          "  -j          print one JSON snapshot and exit\n"
          "  -p          print the policy's line each time it changes, after the\n"
          "              seconds since the program's sstm_init, one line per change\n"
          "              (adaptive: one per window it judges); until the program\n"
          "              ends, or N lines\n"
          "  -l          list your processes that publish a table\n"
          "  -c          remove /dev/shm/schedstm.PID files that versions 1-%u left\n"
          "              behind (killed programs); a table of this version goes with\n"
          "              its process\n"
          "  -h, --help  this help\n"
          "The live view is as wide as the terminal (or $COLUMNS, else 80): the narrow\n"
          "layout fits 80 columns; %d columns or more add TXID, AB/COM, CONFL,\n"
          "OSPOL, NICE, CPU and CM.\n"
          "Columns: SLOT descriptor slot; TID thread id; TX * in a transaction, - a\n"
          "free slot (-a); COMMITS, ABORTS since the thread registered, with their rates\n"
          "per second over the last refresh; AB/COM aborts per commit; LAST-REASON\n"
          "of the last abort; CONFL thread id of the last conflict's winner; ACTION\n"
          "what the policy is doing (run, spin, block, yield, backoff, lowered, kill);\n"
          "OSPOL, NICE the thread's OS scheduling policy and nice value; CPU the CPU\n"
          "the thread mapping last saw it on, p: pinned there (schedstm/map.h);\n"
          "CM policy.\n"
          "A program with an executor (schedstm/exec.h) adds its lines above the\n"
          "threads: its preemption mode, tick, C_max, workers and busy contexts, then per\n"
          "birth priority (PRIO; -a: every level) SUBMITTED, DONE (with DONE/S), INFL\n"
          "in flight, PREEMPT preemptions, PROMO promotions, ABORT%% aborted attempts of\n"
          "all attempts, and mean QUEUE (to first start), RUN, PAUSE and TURN (to the\n"
          "end) times with the longest turnaround (MAX), in microseconds; the wide\n"
          "layout adds SUBMITTED, QUEUE, RUN and PAUSE.\n"
          "The \"policy now\" line is the policy's own description, updated live;\n"
          "\"(inconsistent: being rewritten)\" when the program was caught in the middle\n"
          "of rewriting it for more than %llu ms (-j: \"cm_info_consistent\": false).\n",
          LEGACY_VERSION_MAX, WIDE_COLUMNS, SEQ_WAIT_NS / 1000000ull);
  put_wrapped(o, adaptive_legend, 79);
}

int main(int argc, char **argv) {
  double interval = -1; /* not given: 0.5, or 0.005 with -p */
  long count = 0;
  bool json = false, list = false, clean = false, all = false, plog = false;
  int c;
  static const struct option longopts[] = {{"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
  while ((c = getopt_long(argc, argv, "i:n:jlcaph", longopts, NULL)) != -1) {
    char *end;
    switch (c) {
    case 'i':
      errno = 0;
      interval = strtod(optarg, &end);
      if (errno || end == optarg || *end || !(interval >= 0.001 && interval <= 3600)) {
        fprintf(stderr, "%s: -i: bad interval '%s' (0.001 to 3600 seconds)\n", prog, optarg);
        return 2;
      }
      break;
    case 'n':
      errno = 0;
      count = strtol(optarg, &end, 10);
      if (errno || end == optarg || *end || count <= 0) {
        fprintf(stderr,
                "%s: -n: bad count '%s' (a whole number, 1 or more; without -n: until stopped)\n",
                prog, optarg);
        return 2;
      }
      break;
    case 'j': json = true; break;
    case 'l': list = true; break;
    case 'c': clean = true; break;
    case 'a': all = true; break;
    case 'p': plog = true; break;
    case 'h': usage(stdout, true); return 0;
    default: usage(stderr, false); return 2;
    }
  }
  /* An option that the chosen mode would ignore is refused: a command line
   * that says more than what runs misleads whoever reads it. */
  const char *clash = NULL;
  if (plog && (json || list || clean || all))
    clash = "-p does not go with -j, -l, -c or -a";
  else if (json && (interval >= 0 || count > 0 || list || clean))
    clash = "-j does not go with -i, -n, -l or -c";
  else if ((list || clean) && (interval >= 0 || count > 0 || all))
    clash = "-l and -c do not go with -i, -n or -a";
  if (clash) {
    fprintf(stderr, "%s: %s\n", prog, clash);
    usage(stderr, false);
    return 2;
  }
  if (interval < 0) interval = plog ? 0.005 : 0.5;
  if (list || clean) {
    if (optind != argc || (clean && list)) {
      usage(stderr, false);
      return 2;
    }
    return list ? list_tables() : clean_tables();
  }
  if (optind + 1 != argc) {
    usage(stderr, false);
    return 2;
  }
  char *end;
  errno = 0;
  long pid = strtol(argv[optind], &end, 10);
  if (errno || end == argv[optind] || *end || pid <= 0 || pid > INT_MAX) {
    fprintf(stderr, "%s: bad pid '%s'\n", prog, argv[optind]);
    return 2;
  }
  table_t t;
  char err[512];
  if (table_open((int)pid, &t, err, sizeof err) != 0) {
    fprintf(stderr, "%s: %s\n", prog, err);
    return 1;
  }
  int rc = json   ? json_snapshot(&t, all)
           : plog ? policy_log(&t, interval, count)
                  : live(&t, interval, count, all);
  table_close(&t);
  return rc;
}
