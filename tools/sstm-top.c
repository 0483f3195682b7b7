/* SPDX-License-Identifier: MIT */
/* sstm-top: a read-only viewer of the per-thread state table that schedstm
 * publishes in /dev/shm/schedstm.<pid> (cfg.state_table or
 * SCHEDSTM_STATE_TABLE=1; layout in include/schedstm/statetab.h).
 *
 *   sstm-top [-i SECONDS] [-n N] [-a] PID   live view, like top
 *   sstm-top -j [-a] PID                    one JSON snapshot
 *   sstm-top -l                             tables of running processes
 *   sstm-top -c                             remove your tables of exited ones
 *
 * The table is opened O_RDONLY and mapped PROT_READ: the tool never writes
 * to it and the observed program pays nothing for being watched. Every field
 * is read with a relaxed atomic load; values are per-field exact, not a
 * consistent cut across fields (as for sstm_stats_get).
 *
 * The file is not trusted (anyone can create files in /dev/shm): it is
 * opened O_NONBLOCK | O_NOFOLLOW, so that a FIFO or a symbolic link planted
 * under the name can neither block the tool nor redirect it, and must be a
 * regular file; its size is checked before mapping, and magic, version,
 * entry_size, nentries * entry_size against the file size are validated
 * once, at open: the counts used afterwards are the validated copies, never
 * values read again from the mapping (another process may rewrite the
 * header at any time). Strings are bounded copies in which every byte
 * outside printable ASCII is replaced. A SIGBUS (the file truncated under
 * the mapping) never kills the tool: the live view and -j end with an error
 * message (status 1), -l lists that table as shrunk and goes on.
 *
 * A program killed before sstm_shutdown leaves its table behind: -j marks
 * it "process_alive": false, the live view shows one frame of the state it
 * left and ends (both with a note on stderr), -l counts it as stale, -c
 * removes it.
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
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <schedstm/cm.h>

#include <schedstm/statetab.h>

/* config.h: max_threads is at most 32767. */
#define MAX_ENTRIES 32767u

_Static_assert(SSTM_ACT_COUNT == 7, "update act_names to match sstm_cm_act_t");
/* sstm_cm_act_name(), without linking the library. */
static const char *const act_names[SSTM_ACT_COUNT] = {"run",     "spin",    "block", "yield",
                                                      "backoff", "lowered", "kill"};

static const char *prog = "sstm-top";

#define LD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)

/* ---- attaching ------------------------------------------------------------ */

typedef struct table {
  int pid;
  char path[64];
  const sstm_stt_header_t *h;
  const sstm_stt_entry_t *e;
  size_t size; /* mapped bytes */
  bool exited; /* the live view found the process gone, its table left */
  dev_t dev;
  ino_t ino;
  /* Validated at open (nentries * entry_size fits in size, nreasons <=
   * SSTM_STT_REASONS): the bounds of every loop over the table. */
  uint32_t nentries, nreasons;
} table_t;

/* What the header says, copied and validated. */
typedef struct header {
  uint32_t version, nentries, entry_size, nreasons;
  int32_t pid;
  uint64_t start_ns;
  char config[sizeof(((sstm_stt_header_t *)0)->config) + 1];
  char cm_info[sizeof(((sstm_stt_header_t *)0)->cm_info) + 1];
  char reason_names[SSTM_STT_REASONS][sizeof(((sstm_stt_header_t *)0)->reason_names[0]) + 1];
  char cm_stat_names[SSTM_STT_CMSTATS][sizeof(((sstm_stt_header_t *)0)->cm_stat_names[0]) + 1];
} header_t;

typedef struct entry {
  uint32_t in_use, slot, in_tx, last_reason, action;
  int32_t tid, conflict_tid, os_policy, os_nice;
  uint64_t txid, commits, aborts, conflict_txid;
  uint64_t by_reason[SSTM_STT_REASONS];
  uint64_t cm_stats[SSTM_STT_CMSTATS];
  char cm[sizeof(((sstm_stt_entry_t *)0)->cm) + 1];
} entry_t;

/* A process with that pid exists and has not exited: a zombie (exited, not
 * yet reaped by its parent) counts as exited, since its table can no
 * longer change. Without /proc, kill(pid, 0) alone decides. */
static bool pid_alive(int pid) {
  if (kill(pid, 0) != 0 && errno != EPERM) return false;
  char path[64], buf[512];
  snprintf(path, sizeof path, "/proc/%d/stat", pid);
  FILE *f = fopen(path, "re");
  if (f == NULL) return errno != ENOENT; /* ENOENT: it was reaped meanwhile */
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  /* "pid (comm) S ...": comm may hold any byte, ')' included */
  const char *p = strrchr(buf, ')');
  return !(p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X'));
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

static void table_close(table_t *t) {
  if (t->h) munmap((void *)t->h, t->size);
  t->h = NULL;
  t->e = NULL;
}

/* Open and validate the table of pid. Returns 0, or 1 with a message in err. */
static int table_open(int pid, table_t *t, char *err, size_t errlen) {
  memset(t, 0, sizeof *t);
  t->pid = pid;
  snprintf(t->path, sizeof t->path, SSTM_STT_PATH_FMT, pid);
  /* sstm_init creates the file empty, sizes it, then writes the header and
   * the magic last: give a table being created up to one second. */
  for (int tries = 0;; tries++) {
    /* O_NONBLOCK: opening a FIFO planted under the name returns at once
     * (the fstat below rejects it) instead of waiting for a writer; it
     * changes nothing for a regular file. */
    int fd = open(t->path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) {
      int e = errno;
      if (e == ENOENT)
        snprintf(err, errlen, "no state table for pid %d (%s does not exist): %s", pid, t->path,
                 pid_alive(pid) ? "the process does not publish one (run it with "
                                  "SCHEDSTM_STATE_TABLE=1 or cfg.state_table = true, "
                                  "after sstm_init)"
                                : "no such process");
      else if (e == EACCES || e == EPERM)
        snprintf(err, errlen,
                 "%s: permission denied (the table is mode 0600: run as the user of pid %d)",
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
    size_t hs = sizeof(sstm_stt_header_t);
    if ((uint64_t)st.st_size < hs) {
      close(fd);
      if (tries < 20 && st.st_size == 0) {
        sleep_ns(50000000);
        continue;
      }
      snprintf(err, errlen, "%s: truncated: %lld bytes, smaller than the %zu-byte header", t->path,
               (long long)st.st_size, hs);
      return 1;
    }
    if ((uint64_t)st.st_size > hs + (uint64_t)MAX_ENTRIES * sizeof(sstm_stt_entry_t)) {
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
    uint32_t magic = __atomic_load_n(&t->h->magic, __ATOMIC_ACQUIRE);
    if (magic == 0 && tries < 20) {
      table_close(t);
      sleep_ns(50000000);
      continue;
    }
    if (magic == 0) {
      snprintf(err, errlen,
               "%s: not initialised (magic 0): a table being created, or not a "
               "schedstm state table",
               t->path);
      break;
    }
    if (magic != SSTM_STT_MAGIC) {
      snprintf(err, errlen,
               "%s: bad magic 0x%08" PRIx32 " (expected 0x%08x): not a schedstm "
               "state table",
               t->path, magic, SSTM_STT_MAGIC);
      break;
    }
    uint32_t v = LD(t->h->version);
    if (v != SSTM_STT_VERSION) {
      snprintf(err, errlen, "%s: table version %" PRIu32 ", this sstm-top reads version %u",
               t->path, v, SSTM_STT_VERSION);
      break;
    }
    if (LD(t->h->header_size) != sizeof(sstm_stt_header_t)) {
      snprintf(err, errlen, "%s: header_size %" PRIu32 " differs from this sstm-top's %zu", t->path,
               LD(t->h->header_size), sizeof(sstm_stt_header_t));
      break;
    }
    uint32_t es = LD(t->h->entry_size);
    if (es != sizeof(sstm_stt_entry_t)) {
      snprintf(err, errlen,
               "%s: entry_size %" PRIu32 " differs from this sstm-top's %zu "
               "(library and tool built from different sources)",
               t->path, es, sizeof(sstm_stt_entry_t));
      break;
    }
    uint32_t n = LD(t->h->nentries);
    uint64_t need = (uint64_t)hs + (uint64_t)n * es;
    if (n > MAX_ENTRIES || need > t->size) {
      snprintf(err, errlen,
               "%s: %" PRIu32 " entries of %" PRIu32 " bytes need %" PRIu64
               " bytes, the file has %zu",
               t->path, n, es, need, t->size);
      break;
    }
    uint32_t nr = LD(t->h->nreasons);
    if (nr > SSTM_STT_REASONS) {
      snprintf(err, errlen, "%s: %" PRIu32 " abort reasons, at most %d", t->path, nr,
               SSTM_STT_REASONS);
      break;
    }
    int32_t tpid = LD(t->h->pid);
    if (tpid != pid) {
      snprintf(err, errlen, "%s: the table says it belongs to pid %" PRId32, t->path, tpid);
      break;
    }
    t->nentries = n;
    t->nreasons = nr;
    t->e = (const sstm_stt_entry_t *)(const void *)(t->h + 1);
    return 0;
  }
  table_close(t);
  return 1;
}

/* The policy's current line, and with cfg (NULL: not wanted, else of
 * sizeof config + 1 bytes) the configuration line, both written under the
 * same sequence number (seqlock reader: two equal even numbers around the
 * copy). A writer that stays in the middle (a process stopped there) leaves
 * "(being updated)" after a bounded number of tries. */
static void read_cm_info(const table_t *t, char *dst, size_t dstlen, char *cfg) {
  char buf[sizeof t->h->cm_info], cbuf[sizeof t->h->config];
  for (int tries = 0; tries < 1000; tries++) {
    uint32_t s1 = __atomic_load_n(&t->h->cm_info_seq, __ATOMIC_ACQUIRE);
    if (s1 & 1) {
      sched_yield();
      continue;
    }
    /* acquire loads: a byte written after the writer made the number odd
     * (and fenced, release) brings that odd number with it, so the re-read
     * below cannot see s1 again; they also keep the re-read after the copy.
     * (Not an acquire fence: ThreadSanitizer builds reject fences.) */
    for (size_t i = 0; cfg && i < sizeof cbuf; i++)
      cbuf[i] = __atomic_load_n(&t->h->config[i], __ATOMIC_ACQUIRE);
    for (size_t i = 0; i < sizeof buf; i++)
      buf[i] = __atomic_load_n(&t->h->cm_info[i], __ATOMIC_ACQUIRE);
    if (LD(t->h->cm_info_seq) == s1) {
      (void)dstlen;
      copy_str(dst, buf, sizeof buf);
      if (cfg) copy_str(cfg, cbuf, sizeof cbuf);
      return;
    }
  }
  snprintf(dst, dstlen, "(being updated)");
  if (cfg) snprintf(cfg, sizeof cbuf + 1, "(being updated)");
}

static void read_header(const table_t *t, header_t *h) {
  memset(h, 0, sizeof *h);
  /* What table_open validated, not the mapping again: a writer (or anyone
   * else who can write the file) may have changed these since, and a larger
   * nentries would take the entry loops beyond the mapping. */
  h->version = SSTM_STT_VERSION;
  h->nentries = t->nentries;
  h->entry_size = sizeof(sstm_stt_entry_t);
  h->nreasons = t->nreasons;
  h->pid = t->pid;
  h->start_ns = LD(t->h->start_ns);
  read_cm_info(t, h->cm_info, sizeof h->cm_info, h->config);
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
  for (int r = 0; r < SSTM_STT_REASONS; r++)
    x->by_reason[r] = LD(e->aborts_by_reason[r]);
  for (int s = 0; s < SSTM_STT_CMSTATS; s++)
    x->cm_stats[s] = LD(e->cm_stats[s]);
  copy_str(x->cm, e->cm, sizeof e->cm);
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

/* -l: while a table is being opened and read, a SIGBUS jumps back to the
 * listing, which reports that table and goes on with the next one. The
 * fault is synchronous, in plain loads from the mapping: no lock is held
 * there. */
static sigjmp_buf list_jmp;
static volatile sig_atomic_t list_jmp_armed;

static void sigbus_handler(int sig) {
  (void)sig;
  if (list_jmp_armed) siglongjmp(list_jmp, 1);
  static const char msg[] = ": the state table shrank while being read (SIGBUS)\n";
  ssize_t r = write(2, prog, strlen(prog));
  r = write(2, msg, sizeof msg - 1);
  (void)r;
  _exit(1);
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

/* The table's process has exited without sstm_shutdown (killed, crashed,
 * _exit): what the table shows is each thread's state at that moment. A
 * pid reused by another process since is not detected (the pid is alive). */
static void exited_note(const table_t *t) {
  fprintf(stderr,
          "%s: pid %d has exited without sstm_shutdown: %s is the state it left (%s -c "
          "removes it)\n",
          prog, t->pid, t->path, prog);
}

static int json_snapshot(const table_t *t, bool all) {
  header_t h;
  read_header(t, &h);
  FILE *o = stdout;
  uint64_t now = now_ns();
  bool alive = pid_alive(t->pid);
  if (!alive) exited_note(t);
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
  fprintf(o, ",\n \"reason_names\": [");
  for (uint32_t r = 0; r < h.nreasons; r++) {
    fprintf(o, r ? ", " : "");
    jstr(o, h.reason_names[r]);
  }
  fprintf(o, "],\n \"cm_stat_names\": [");
  for (int s = 0; s < SSTM_STT_CMSTATS; s++) {
    fprintf(o, s ? ", " : "");
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
            ", \"os_policy_name\": \"%s\", \"os_nice\": %" PRId32 ", \"cm\": ",
            x.conflict_tid, x.conflict_txid, x.action, act_name(x.action), x.os_policy,
            os_policy_name(x.os_policy), x.os_nice);
    jstr(o, x.cm);
    fprintf(o, ",\n   \"aborts_by_reason\": {");
    for (uint32_t r = 0; r < h.nreasons; r++) {
      fprintf(o, r ? ", " : "");
      jstr(o, reason_name(&h, r));
      fprintf(o, ": %" PRIu64, x.by_reason[r]);
    }
    fprintf(o, "},\n   \"cm_stats\": {");
    bool first = true;
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
          "}}\n",
          in_use, commits, aborts);
  return fflush(o) == 0 && !ferror(o) ? 0 : 1;
}

/* ---- live view --------------------------------------------------------------- */

typedef struct prev {
  bool valid;
  int32_t tid;
  uint64_t commits, aborts;
} prev_t;

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

static void frame(const table_t *t, const header_t *h, const entry_t *cur, prev_t *prev, double dt,
                  bool all, bool clear, double interval) {
  FILE *o = stdout;
  uint64_t now = now_ns();
  char up[32], rc[24], ra[24];
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
  if (t->exited)
    fprintf(o, "sstm-top - pid %d (exited, the state it left)  threads %u/%" PRIu32 "\n", t->pid,
            in_use, h->nentries);
  else
    fprintf(o, "sstm-top - pid %d  up %s  threads %u/%" PRIu32 "  refresh %.2fs\n", t->pid, up,
            in_use, h->nentries, interval);
  fprintf(o, "%s\n", h->config[0] ? h->config : "(no configuration line)");
  if (h->cm_info[0]) fprintf(o, "policy now: %s\n", h->cm_info);
  fprintf(o, "total: commits %" PRIu64 " (%s/s)  aborts %" PRIu64 " (%s/s)  aborts/commit ", tc, rc,
          ta, ra);
  if (tc)
    fprintf(o, "%.3f\n\n", (double)ta / (double)tc);
  else
    fprintf(o, "-\n\n");
  fprintf(o, "%5s %8s %2s %12s %11s %9s %10s %9s %7s %-16s %8s %-7s %-6s %4s %s\n", "SLOT", "TID",
          "TX", "TXID", "COMMITS", "COMMIT/S", "ABORTS", "ABORT/S", "AB/COM", "LAST-REASON",
          "CONFL", "ACTION", "OSPOL", "NICE", "CM");
  for (uint32_t i = 0; i < h->nentries; i++) {
    const entry_t *x = &cur[i];
    if (!x->in_use && !all) {
      prev[i].valid = false;
      continue;
    }
    bool pv = pvalid && prev[i].valid && prev[i].tid == x->tid;
    fmt_rate(rc, sizeof rc, pv, x->commits, prev[i].commits, dt);
    fmt_rate(ra, sizeof ra, pv, x->aborts, prev[i].aborts, dt);
    char ratio[16], confl[16];
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
            " %9s %7s %-16s %8s %-7s %-6s %4" PRId32 " %s%s\n",
            x->slot, x->tid, x->in_tx ? "*" : "", x->txid, x->commits, rc, x->aborts, ra, ratio,
            x->aborts ? reason_name(h, x->last_reason) : "-", confl, act_name(x->action),
            os_policy_name(x->os_policy), x->os_nice, x->cm, x->in_use ? "" : " (free)");
    prev[i].valid = x->in_use != 0;
    prev[i].tid = x->tid;
    prev[i].commits = x->commits;
    prev[i].aborts = x->aborts;
  }
  fflush(o);
}

/* The table file changed: 0 same, 1 replaced (re-attach), -1 gone. */
static int table_changed(const table_t *t) {
  struct stat st;
  if (stat(t->path, &st) != 0) return -1;
  return st.st_dev == t->dev && st.st_ino == t->ino ? 0 : 1;
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
    return 1;
  }
  /* Baseline: the first frame already shows rates over one interval. */
  snapshot(t, h.nentries, cur);
  for (uint32_t i = 0; i < h.nentries; i++)
    prev[i] = (prev_t){cur[i].in_use != 0, cur[i].tid, cur[i].commits, cur[i].aborts};
  uint64_t last = now_ns();
  int rc = 0;
  if (!pid_alive(t->pid)) { /* one frame of what it left, and stop */
    t->exited = true;
    read_cm_info(t, h.cm_info, sizeof h.cm_info, NULL);
    frame(t, &h, cur, prev, 0.0, all, false, interval);
    exited_note(t);
  }
  for (long done = 0; !t->exited && (count <= 0 || done < count); done++) {
    sleep_ns(period);
    int ch = table_changed(t);
    if (ch != 0) {
      if (ch < 0) {
        fprintf(stderr, "%s: pid %d: state table removed (%s)\n", prog, t->pid,
                pid_alive(t->pid) ? "sstm_shutdown" : "process exited");
        break;
      }
      /* sstm_shutdown then sstm_init again: a new table, same pid. */
      char err[512];
      table_close(t);
      if (table_open(t->pid, t, err, sizeof err) != 0) {
        fprintf(stderr, "%s: %s\n", prog, err);
        rc = 1;
        break;
      }
      read_header(t, &h);
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
    read_cm_info(t, h.cm_info, sizeof h.cm_info, NULL);
    /* Killed since the last frame: its table stays, frozen; this frame is
     * the state it left, and the view ends. */
    t->exited = !pid_alive(t->pid);
    frame(t, &h, cur, prev, dt, all, clear, interval);
    if (t->exited) {
      exited_note(t);
      break;
    }
    if (!clear && (count <= 0 || done + 1 < count)) fputc('\n', stdout);
  }
  free(cur);
  free(prev);
  return rc;
}

/* ---- listing ----------------------------------------------------------------- */

/* The pid in a directory entry named like a table ("schedstm.<digits>",
 * SSTM_STT_PATH_FMT), or -1 for any other name. */
static int table_name_pid(const char *name) {
  if (strncmp(name, "schedstm.", 9) != 0) return -1;
  const char *s = name + 9;
  if (!*s || strlen(s) > 9) return -1;
  for (const char *c = s; *c; c++)
    if (!isdigit((unsigned char)*c)) return -1;
  int pid = atoi(s);
  return pid > 0 ? pid : -1;
}

static int list_tables(void) {
  DIR *d = opendir("/dev/shm");
  if (d == NULL) {
    fprintf(stderr, "%s: /dev/shm: %s\n", prog, strerror(errno));
    return 1;
  }
  unsigned found = 0, stale = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    int pid = table_name_pid(de->d_name);
    if (pid < 0) continue;
    if (!pid_alive(pid)) {
      stale++;
      continue;
    }
    if (found++ == 0) printf("%8s %7s %-16s %s\n", "PID", "THREADS", "COMMAND", "CONFIG");
    /* The name is the process's own choice (prctl PR_SET_NAME): as
     * untrusted as the table. */
    char raw[64] = "?", comm[sizeof raw], path[64];
    snprintf(path, sizeof path, "/proc/%d/comm", pid);
    FILE *f = fopen(path, "re");
    if (f) {
      if (fgets(raw, sizeof raw, f)) raw[strcspn(raw, "\n")] = '\0';
      fclose(f);
    }
    copy_str(comm, raw, sizeof raw - 1);
    static table_t t;                  /* static: still valid after a siglongjmp */
    if (sigsetjmp(list_jmp, 1) != 0) { /* SIGBUS: the file shrank */
      list_jmp_armed = 0;
      printf("%8d %7s %-16s (%s: the state table shrank while being read)\n", pid, "-", comm,
             t.path);
      table_close(&t);
      continue;
    }
    list_jmp_armed = 1;
    char err[512];
    if (table_open(pid, &t, err, sizeof err) != 0) {
      list_jmp_armed = 0;
      printf("%8d %7s %-16s (%s)\n", pid, "-", comm, err);
      continue;
    }
    header_t h;
    read_header(&t, &h);
    unsigned in_use = 0;
    for (uint32_t i = 0; i < t.nentries; i++)
      in_use += LD(t.e[i].in_use) != 0;
    list_jmp_armed = 0;
    printf("%8d %7u %-16s %s\n", pid, in_use, comm, h.config);
    table_close(&t);
  }
  closedir(d);
  if (found == 0) printf("no schedstm state tables of running processes in /dev/shm\n");
  if (stale)
    fprintf(stderr,
            "%s: %u stale table(s) of exited processes in /dev/shm/schedstm.* "
            "(%s -c removes yours)\n",
            prog, stale, prog);
  return 0;
}

/* ---- removing stale tables ---------------------------------------------------- */

/* -c: remove the tables that processes left behind when they ended without
 * sstm_shutdown (killed, crashed, _exit): each holds its whole size in
 * memory (/dev/shm is RAM) until removed. A table is removed only if its
 * pid has no process, it is a regular file (lstat: a symbolic link planted
 * under the name is left alone, and so is what it points to) and it
 * belongs to the effective user; anything else is reported and kept.
 *
 * A table whose pid is alive is kept even if that process is not the one
 * that wrote it (pid reuse): the tool cannot tell, and keeping garbage is
 * the safe error. The other race, a new process taking the pid between the
 * check and the unlink, gives it a new inode (statetab.c unlinks a stale
 * file under its name and creates its own with O_EXCL): device and inode
 * are compared again just before the unlink, which leaves only the window
 * between that lstat and the unlink, and only after the pids have wrapped.
 *
 * Exit status 0 when every stale table of the user is gone (also when there
 * was none), 1 when one could not be removed. */
static int clean_tables(void) {
  int dfd = open("/dev/shm", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR *d = dfd < 0 ? NULL : fdopendir(dfd);
  if (d == NULL) {
    fprintf(stderr, "%s: /dev/shm: %s\n", prog, strerror(errno));
    if (dfd >= 0) close(dfd);
    return 1;
  }
  unsigned removed = 0, kept = 0, failed = 0;
  uid_t me = geteuid();
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    int pid = table_name_pid(de->d_name);
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
    if (pid_alive(pid) || fstatat(dfd, de->d_name, &again, AT_SYMLINK_NOFOLLOW) != 0 ||
        again.st_dev != st.st_dev || again.st_ino != st.st_ino)
      continue; /* the pid is in use again: a new table, or one on its way */
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

static void usage(FILE *o) {
  fprintf(o,
          "usage: %s [-i SECONDS] [-n N] [-a] PID   live view of a schedstm program\n"
          "       %s -j [-a] PID                    one JSON snapshot\n"
          "       %s -l                             list tables of running processes\n"
          "       %s -c                             remove your tables of exited processes\n"
          "Reads /dev/shm/schedstm.PID, published by programs run with\n"
          "SCHEDSTM_STATE_TABLE=1 (or cfg.state_table = true).\n"
          "  -i SECONDS  refresh interval (default 0.5)\n"
          "  -n N        stop after N refreshes\n"
          "  -a          also show free slots\n"
          "  -j          print one JSON snapshot and exit\n"
          "  -l          list /dev/shm/schedstm.* tables whose process is alive\n"
          "  -c          remove the tables of exited processes (left by a program\n"
          "              killed before sstm_shutdown) that belong to you\n"
          "  -h, --help  this help\n"
          "The table of a process that exited without sstm_shutdown stays until removed:\n"
          "-j and the live view show the state it left (\"process_alive\": false in the JSON).\n",
          prog, prog, prog, prog);
}

int main(int argc, char **argv) {
  double interval = 0.5;
  long count = 0;
  bool json = false, list = false, clean = false, all = false;
  int c;
  static const struct option longopts[] = {{"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
  while ((c = getopt_long(argc, argv, "i:n:jlcah", longopts, NULL)) != -1) {
    char *end;
    switch (c) {
    case 'i':
      errno = 0;
      interval = strtod(optarg, &end);
      if (errno || end == optarg || *end || !(interval >= 0.01 && interval <= 3600)) {
        fprintf(stderr, "%s: -i: bad interval '%s' (0.01 to 3600 seconds)\n", prog, optarg);
        return 2;
      }
      break;
    case 'n':
      errno = 0;
      count = strtol(optarg, &end, 10);
      if (errno || end == optarg || *end || count <= 0) {
        fprintf(stderr, "%s: -n: bad count '%s'\n", prog, optarg);
        return 2;
      }
      break;
    case 'j': json = true; break;
    case 'l': list = true; break;
    case 'c': clean = true; break;
    case 'a': all = true; break;
    case 'h': usage(stdout); return 0;
    default: usage(stderr); return 2;
    }
  }
  /* Before any table is mapped, the listing's included. */
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = sigbus_handler;
  sigaction(SIGBUS, &sa, NULL);

  if (list || clean) {
    if (optind != argc || (clean && (list || json))) {
      usage(stderr);
      return 2;
    }
    return list ? list_tables() : clean_tables();
  }
  if (optind + 1 != argc) {
    usage(stderr);
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
  int rc = json ? json_snapshot(&t, all) : live(&t, interval, count, all);
  table_close(&t);
  return rc;
}
