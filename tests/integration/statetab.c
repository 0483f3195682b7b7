/* SPDX-License-Identifier: MIT */
/* Integration: the per-thread state table (a sealed memfd of the process,
 * include/schedstm/statetab.h) seen from outside by tools/sstm-top.
 *
 * snapshot_<policy>: 4 threads run bank transfers with cfg.state_table =
 *   true (suicide, backoff, a test policy with counters and actions,
 *   ser-block, softser, os_prio, adaptive). While they run, `sstm-top -j
 *   <pid>` is parsed and checked against sstm_stats_get() taken just
 *   before and just after (bounds); once the
 *   threads have finished their loops but are still registered, a second
 *   snapshot must equal sstm_stats_get() of every descriptor exactly
 *   (commits, aborts, aborts by reason, policy counters, OS policy and nice
 *   of each thread; matched by slot), and the header's cm_info must be the
 *   policy's describe() line as it is then (adaptive's current choice and
 *   reason, not the one it started with). The name lists of the JSON hold
 *   no empty names. The live view (-n) and the listing (-l) run too. After
 *   the threads unregister no entry is in use; sstm_shutdown closes the
 *   memfd (the tool finds no table).
 * planted_names_do_not_stop_init: a file, symbolic links, a FIFO, a
 *   directory at the name versions 1-3 used (/dev/shm/schedstm.<pid>), of
 *   another user too: sstm_init succeeds and leaves them alone.
 * table_resource_errors: out of descriptors (RLIMIT_NOFILE) and a table
 *   beyond RLIMIT_FSIZE: SSTM_ENOMEM with the system's reason, nothing left.
 * table_cannot_shrink: another process cannot truncate, grow or reseal the
 *   table of a running program (EPERM), which goes on unharmed.
 * no_table: a live pid without a table, a dead pid, a bad pid: non-zero exit
 *   with a message.
 * garbage: tables held by a sleeping child filled with junk, truncated,
 *   with wrong version, header size, entry size, entry count, pid, or far
 *   too large, or a policy line stuck in its rewrite: non-zero exit with a
 *   message (or the line marked inconsistent), never a signal; a valid
 *   header over junk entries parses.
 * cm_info_wait_is_bounded: a policy line whose sequence number stays odd
 *   costs the tool a few milliseconds, not a thousand yields, even when it
 *   shares its CPU with busy processes.
 * permission: a table the tool may not read (another user's, or a process
 *   that is not dumpable): non-zero exit, "permission denied".
 * fifo: a FIFO (and a regular file) behind a descriptor whose link reads
 *   like the table's (root only): refused at once, never waited on.
 * header_changed / truncated_while_read: the tool is stopped (ptrace and a
 *   hardware watchpoint) right after it has read nentries to validate it,
 *   and the table is changed under it: a larger nentries must not be used
 *   (the output shows the validated count); a truncation fails (the seal)
 *   and the tool reads on. An unsealed table is refused.
 * control_bytes: C0, DEL, raw and UTF-8 encoded C1 bytes in every string of
 *   a table and in the process name: no output byte outside printable
 *   ASCII (and newline), in the JSON, the live view and the listing.
 * shm_full: a full /dev/shm (a private tmpfs; root only) does not concern
 *   the table any more.
 * exited_process: the table goes with its process: a zombie's and a reaped
 *   process's pid have none, and the live view of a process that is killed
 *   ends saying so.
 * clean_stale: -c removes our files of versions 1-3 of exited pids that
 *   start with a table header, and keeps a live pid's file, junk under a
 *   table's name, a symbolic link (and its target), another user's file, a
 *   file named for pid 0.
 * fork_child: a forked child of a process with a table runs transactions
 *   and shuts down: the parent's entries do not move, and the child does
 *   not publish the parent's table under its own pid.
 * live_view_fits_the_width: 80 columns by default and with COLUMNS=80
 *   (narrow layout, wrapped lines, adaptive's legend), the wide layout with
 *   COLUMNS=200.
 * live_view_follows_policy_line: the live view reads the policy's line
 *   again for every frame.
 * live_view_across_shutdown_and_reinit: the live view follows the new
 *   table of an sstm_shutdown + sstm_init under the same pid, and ends,
 *   saying so, when the last shutdown removes it.
 * mapping_shows_each_threads_cpu: under the compact mapping, each
 *   thread's pinned and seen CPU in the JSON and the wide live view.
 *
 * The tool is run as a separate process (fork + exec of SSTM_TOP_PATH), its
 * JSON parsed by the small parser below. Tables with chosen contents are
 * memfds named like the library's, held by a sleeping child (holder()).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include <schedstm/exec.h>
#include <schedstm/map.h>
#include <schedstm/statetab.h>

#include "../common/exec_cfg.h"
#include "../common/runner.h"

#ifndef SSTM_TOP_PATH
#error "SSTM_TOP_PATH (the built sstm-top) must be defined by the build"
#endif

/* ---- a minimal JSON parser ---------------------------------------------- */

typedef enum { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ } jtype_t;

typedef struct jval {
  jtype_t t;
  bool b;
  double num;
  bool is_uint; /* the number was written as a plain non-negative integer */
  unsigned long long u;
  char *str;
  size_t n; /* items (array, object) */
  struct jval **items;
  char **keys; /* object keys */
} jval_t;

typedef struct jparser {
  const char *s;
  const char *doc;
} jparser_t;

#define JFAIL(p, what) FAIL("JSON: %s at offset %td: %.40s", what, (p)->s - (p)->doc, (p)->s)

static void jws(jparser_t *p) {
  while (*p->s == ' ' || *p->s == '\n' || *p->s == '\t' || *p->s == '\r')
    p->s++;
}

static jval_t *jnew(jtype_t t) {
  jval_t *v = calloc(1, sizeof *v);
  CHECK_NOT_NULL(v);
  v->t = t;
  return v;
}

static char *jparse_str(jparser_t *p) {
  if (*p->s != '"') JFAIL(p, "string expected");
  p->s++;
  size_t cap = 16, n = 0;
  char *out = malloc(cap);
  CHECK_NOT_NULL(out);
  for (;;) {
    char c = *p->s++;
    if (c == '\0') JFAIL(p, "unterminated string");
    if (c == '"') break;
    if ((unsigned char)c < 0x20) JFAIL(p, "control character in string");
    if (c == '\\') {
      char e = *p->s++;
      switch (e) {
      case '"':
      case '\\':
      case '/': c = e; break;
      case 'b': c = '\b'; break;
      case 'f': c = '\f'; break;
      case 'n': c = '\n'; break;
      case 'r': c = '\r'; break;
      case 't': c = '\t'; break;
      case 'u': {
        unsigned x = 0;
        for (int i = 0; i < 4; i++) {
          char h = *p->s++;
          x <<= 4;
          if (h >= '0' && h <= '9')
            x |= (unsigned)(h - '0');
          else if (h >= 'a' && h <= 'f')
            x |= (unsigned)(h - 'a' + 10);
          else if (h >= 'A' && h <= 'F')
            x |= (unsigned)(h - 'A' + 10);
          else
            JFAIL(p, "bad \\u escape");
        }
        c = x < 0x80 ? (char)x : '?';
        break;
      }
      default: JFAIL(p, "bad escape");
      }
    }
    if (n + 2 > cap) {
      cap *= 2;
      out = realloc(out, cap);
      CHECK_NOT_NULL(out);
    }
    out[n++] = c;
  }
  out[n] = '\0';
  return out;
}

static jval_t *jparse_val(jparser_t *p, int depth);

static void jpush(jval_t *v, char *key, jval_t *item) {
  v->items = realloc(v->items, (v->n + 1) * sizeof *v->items);
  CHECK_NOT_NULL(v->items);
  if (v->t == J_OBJ) {
    v->keys = realloc(v->keys, (v->n + 1) * sizeof *v->keys);
    CHECK_NOT_NULL(v->keys);
    v->keys[v->n] = key;
  }
  v->items[v->n++] = item;
}

static jval_t *jparse_val(jparser_t *p, int depth) {
  if (depth > 32) JFAIL(p, "nested too deeply");
  jws(p);
  char c = *p->s;
  if (c == '{' || c == '[') {
    bool obj = c == '{';
    jval_t *v = jnew(obj ? J_OBJ : J_ARR);
    p->s++;
    jws(p);
    if (*p->s == (obj ? '}' : ']')) {
      p->s++;
      return v;
    }
    for (;;) {
      char *key = NULL;
      jws(p);
      if (obj) {
        key = jparse_str(p);
        jws(p);
        if (*p->s++ != ':') JFAIL(p, "':' expected");
      }
      jpush(v, key, jparse_val(p, depth + 1));
      jws(p);
      if (*p->s == ',') {
        p->s++;
        continue;
      }
      if (*p->s++ != (obj ? '}' : ']')) JFAIL(p, "',' or end of container expected");
      return v;
    }
  }
  if (c == '"') {
    jval_t *v = jnew(J_STR);
    v->str = jparse_str(p);
    return v;
  }
  if (strncmp(p->s, "null", 4) == 0) {
    p->s += 4;
    return jnew(J_NULL);
  }
  if (strncmp(p->s, "true", 4) == 0 || strncmp(p->s, "false", 5) == 0) {
    jval_t *v = jnew(J_BOOL);
    v->b = c == 't';
    p->s += v->b ? 4 : 5;
    return v;
  }
  if (c == '-' || (c >= '0' && c <= '9')) {
    jval_t *v = jnew(J_NUM);
    const char *start = p->s;
    char *end;
    v->num = strtod(start, &end);
    if (end == start) JFAIL(p, "bad number");
    bool plain = c != '-';
    for (const char *q = start; q < end; q++)
      plain &= *q >= '0' && *q <= '9';
    if (plain) {
      errno = 0;
      v->u = strtoull(start, NULL, 10);
      v->is_uint = errno == 0;
    }
    p->s = end;
    return v;
  }
  JFAIL(p, "value expected");
}

static jval_t *jparse(const char *doc) {
  jparser_t p = {doc, doc};
  jval_t *v = jparse_val(&p, 0);
  jws(&p);
  if (*p.s) JFAIL(&p, "trailing characters");
  return v;
}

static void jfree(jval_t *v) {
  if (!v) return;
  for (size_t i = 0; i < v->n; i++) {
    jfree(v->items[i]);
    if (v->keys) free(v->keys[i]);
  }
  free(v->items);
  free(v->keys);
  free(v->str);
  free(v);
}

static jval_t *jget(const jval_t *o, const char *key) {
  CHECK_EQ_I(o->t, J_OBJ);
  for (size_t i = 0; i < o->n; i++)
    if (strcmp(o->keys[i], key) == 0) return o->items[i];
  FAIL("JSON: no key \"%s\"", key);
}

static unsigned long long ju(const jval_t *o, const char *key) {
  jval_t *v = jget(o, key);
  CHECK_MSG(v->t == J_NUM && v->is_uint, "JSON: \"%s\" is not a non-negative integer", key);
  return v->u;
}

static long long ji(const jval_t *o, const char *key) {
  jval_t *v = jget(o, key);
  CHECK_MSG(v->t == J_NUM && v->num == (double)(long long)v->num, "JSON: \"%s\" is not an integer",
            key);
  return (long long)v->num;
}

static const char *js(const jval_t *o, const char *key) {
  jval_t *v = jget(o, key);
  CHECK_MSG(v->t == J_STR, "JSON: \"%s\" is not a string", key);
  return v->str;
}

/* ---- running sstm-top --------------------------------------------------- */

typedef struct tool_run {
  int status; /* waitpid status */
  char *out;
  char *err;
} tool_run_t;

static char *slurp(FILE *f) {
  CHECK_EQ_I(fflush(f), 0);
  long n = ftell(f);
  CHECK_GE_I(n, 0);
  rewind(f);
  char *buf = malloc((size_t)n + 1);
  CHECK_NOT_NULL(buf);
  CHECK_EQ_U(fread(buf, 1, (size_t)n, f), (size_t)n);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

/* A running sstm-top (tool_start), its output going to temporary files. */
typedef struct tool_proc {
  pid_t pid;
  FILE *out, *err;
} tool_proc_t;

/* Start sstm-top with args (NULL-terminated); drop_to_uid >= 0: as that
 * user (for the permission test, when run as root); watchdog_s > 0: a tool
 * still running after that many seconds gets SIGALRM (alarm() survives
 * execve), so that a tool that would block forever ends with a signal,
 * which check_exit reports, instead of hanging the test; traced: the child
 * asks to be traced (PTRACE_TRACEME) and stops at its exec, or exits 125
 * where ptrace is refused. */
static void tool_start(tool_proc_t *p, int drop_to_uid, unsigned watchdog_s, bool traced,
                       const char *a1, const char *a2, const char *a3, const char *a4,
                       const char *a5) {
  const char *argv[] = {SSTM_TOP_PATH, a1, a2, a3, a4, a5, NULL};
  FILE *out = tmpfile(), *err = tmpfile();
  CHECK_NOT_NULL(out);
  CHECK_NOT_NULL(err);
  fflush(stdout);
  fflush(stderr);
  pid_t pid = sstm_test_fork();
  CHECK_GE_I(pid, 0);
  if (pid == 0) {
    /* async-signal-safe only: the parent has threads. A tool left behind
     * by a test that fails (stopped with SIGSTOP, or waiting) dies with it
     * (sstm_test_fork): SIGKILL reaches a stopped process too. */
    dup2(fileno(out), 1);
    dup2(fileno(err), 2);
    if (drop_to_uid >= 0) {
      if (setgroups(0, NULL) != 0 || setgid((gid_t)drop_to_uid) != 0 ||
          setuid((uid_t)drop_to_uid) != 0)
        _exit(125);
      sstm_test_child_rearm(); /* the ID change cleared it */
    }
    if (watchdog_s) alarm(watchdog_s);
    if (traced && ptrace(PTRACE_TRACEME, 0, NULL, NULL) != 0) _exit(125);
    execv(SSTM_TOP_PATH, (char *const *)argv);
    _exit(126);
  }
  *p = (tool_proc_t){pid, out, err};
}

/* The tool has exited with waitpid status st (already reaped): collect. */
static void tool_collect(tool_proc_t *p, int st, tool_run_t *r) {
  r->status = st;
  r->out = slurp(p->out);
  r->err = slurp(p->err);
}

/* Wait for the running tool to exit, then collect. */
static void tool_wait(tool_proc_t *p, tool_run_t *r) {
  int st;
  while (waitpid(p->pid, &st, 0) < 0)
    CHECK_EQ_I(errno, EINTR);
  tool_collect(p, st, r);
}

static void run_tool_as(tool_run_t *r, int drop_to_uid, unsigned watchdog_s, const char *a1,
                        const char *a2, const char *a3, const char *a4, const char *a5) {
  tool_proc_t p;
  tool_start(&p, drop_to_uid, watchdog_s, false, a1, a2, a3, a4, a5);
  tool_wait(&p, r);
}

static void run_tool(tool_run_t *r, const char *a1, const char *a2, const char *a3, const char *a4,
                     const char *a5) {
  run_tool_as(r, -1, 0, a1, a2, a3, a4, a5);
  CHECK_MSG(!(WIFEXITED(r->status) && WEXITSTATUS(r->status) == 126), "cannot execute %s",
            SSTM_TOP_PATH);
}

/* run_tool for a case where the tool used to block forever: killed by
 * SIGALRM if it still runs when the test's own watchdog (SSTM_TEST_WATCHDOG,
 * an alarm of this process) is 5 seconds from firing, so that a blocked
 * tool fails the test with this message, and a tool that is only slow (on
 * a loaded host, with the test niced) has the test's whole time, as
 * every other step has. A fixed tool needs a few system calls and a few
 * 50 ms retries. Without a watchdog (a run by hand): 20 seconds. */
static void run_tool_bounded(tool_run_t *r, const char *a1, const char *a2, const char *a3,
                             const char *a4, const char *a5) {
  unsigned left = alarm(0); /* the seconds left of the watchdog, which goes on */
  if (left) alarm(left);
  run_tool_as(r, -1, left == 0 ? 20 : left > 10 ? left - 5 : left / 2 + 1, a1, a2, a3, a4, a5);
  CHECK_MSG(!(WIFEXITED(r->status) && WEXITSTATUS(r->status) == 126), "cannot execute %s",
            SSTM_TOP_PATH);
}

static void tool_free(tool_run_t *r) {
  free(r->out);
  free(r->err);
}

/* The tool exited by itself (no signal) with status code. */
static void check_exit(const tool_run_t *r, int code, const char *what) {
  CHECK_MSG(WIFEXITED(r->status), "%s: sstm-top was killed by signal %d; stderr: %s", what,
            WIFSIGNALED(r->status) ? WTERMSIG(r->status) : -1, r->err);
  CHECK_MSG(WEXITSTATUS(r->status) == code,
            "%s: sstm-top exited %d, expected %d; stdout: %.400s; stderr: %s", what,
            WEXITSTATUS(r->status), code, r->out, r->err);
}

/* What the running tool has written so far (its output file, read with
 * pread: the shared file offset is left alone); free() it. */
static char *tool_output_so_far(const tool_proc_t *p) {
  int fd = fileno(p->out);
  struct stat st;
  CHECK_EQ_I(fstat(fd, &st), 0);
  char *buf = malloc((size_t)st.st_size + 1);
  CHECK_NOT_NULL(buf);
  ssize_t n = pread(fd, buf, (size_t)st.st_size, 0);
  CHECK_GE_I(n, 0);
  buf[n] = '\0';
  return buf;
}

static jval_t *snapshot_json(int pid) {
  char p[16];
  snprintf(p, sizeof p, "%d", pid);
  tool_run_t r;
  run_tool(&r, "-j", p, NULL, NULL, NULL);
  check_exit(&r, 0, "sstm-top -j");
  jval_t *j = jparse(r.out);
  tool_free(&r);
  return j;
}

/* In `sstm-top -l` output, the THREADS column of pid's line, -1 if absent. */
static long listed_threads(const char *out, int pid) {
  for (const char *l = out; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
    int p;
    long t;
    if (sscanf(l, "%d %ld", &p, &t) == 2 && p == pid) return t;
    if (sscanf(l, "%d -", &p) == 1 && p == pid) return 0;
  }
  return -1;
}

/* ---- where a table is ------------------------------------------------------ */

/* The descriptor of process pid whose link reads like the table's
 * (SSTM_STT_FD_LINK), -1 if there is none. */
static int table_fd_of(pid_t pid) {
  char dir[64];
  snprintf(dir, sizeof dir, "/proc/%d/fd", (int)pid);
  DIR *d = opendir(dir);
  CHECK_MSG(d != NULL, "%s: %s", dir, strerror(errno));
  int fd = -1;
  struct dirent *de;
  while (fd < 0 && (de = readdir(d)) != NULL) {
    char link[128];
    ssize_t k = readlinkat(dirfd(d), de->d_name, link, sizeof link - 1);
    if (k <= 0) continue;
    link[k] = '\0';
    if (strcmp(link, SSTM_STT_FD_LINK) == 0) fd = atoi(de->d_name);
  }
  closedir(d);
  return fd;
}

/* Open the table of process pid through /proc/PID/fd (flags: O_RDONLY,
 * O_RDWR, ...), as another process would. */
static int open_table_of(pid_t pid, int flags) {
  int fd = table_fd_of(pid);
  CHECK_MSG(fd >= 0, "pid %d has no table descriptor", (int)pid);
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)pid, fd);
  int t = open(path, flags | O_CLOEXEC);
  CHECK_MSG(t >= 0, "%s: %s", path, strerror(errno));
  return t;
}

/* The seals the library puts on its table. */
#define TABLE_SEALS (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)

/* What a holder() child holds: a memfd named like the table, with the n
 * bytes of buf (NULL: no memfd at all, a plain sleeper), size bytes in all
 * (0: n; more: a sparse tail); the header's pid set to the child's own
 * unless keep_pid; sealed with TABLE_SEALS unless seals says otherwise
 * (-1: none); comm its process name (NULL to keep); undumpable:
 * PR_SET_DUMPABLE 0, which makes /proc/PID/fd unreadable to its own user. */
typedef struct hold {
  const void *buf;
  size_t n, size;
  int seals;
  const char *comm;
  bool keep_pid, undumpable;
} hold_t;

/* A child that holds what h says and sleeps until killed (reap()). */
static pid_t holder(const hold_t *h) {
  int ready[2];
  CHECK_EQ_I(pipe2(ready, O_CLOEXEC), 0);
  fflush(stdout);
  fflush(stderr);
  /* never outlive the test (a failed test must not leave it holding
   * ctest's output pipe): sstm_test_fork */
  pid_t pid = sstm_test_fork();
  CHECK_GE_I(pid, 0);
  if (pid == 0) {
    /* system calls only: the parent may have threads */
    close(ready[0]);
    if (h->comm) prctl(PR_SET_NAME, h->comm);
    if (h->buf) {
      int fd = memfd_create(SSTM_STT_MEMFD_NAME, MFD_ALLOW_SEALING);
      if (fd < 0) _exit(3);
      for (size_t done = 0; done < h->n;) {
        ssize_t w = write(fd, (const char *)h->buf + done, h->n - done);
        if (w <= 0) _exit(4);
        done += (size_t)w;
      }
      if (h->size > h->n && ftruncate(fd, (off_t)h->size) != 0) _exit(5);
      int32_t me = (int32_t)getpid();
      if (!h->keep_pid && h->n >= sizeof(sstm_stt_header_t) &&
          pwrite(fd, &me, sizeof me, offsetof(sstm_stt_header_t, pid)) != (ssize_t)sizeof me)
        _exit(6);
      int seals = h->seals == 0 ? TABLE_SEALS : h->seals;
      if (seals > 0 && fcntl(fd, F_ADD_SEALS, seals) != 0) _exit(7);
    }
    if (h->undumpable) prctl(PR_SET_DUMPABLE, 0);
    if (write(ready[1], "k", 1) != 1) _exit(8); /* ready */
    close(ready[1]);
    for (;;)
      pause();
  }
  CHECK_EQ_I(close(ready[1]), 0);
  char c = 0;
  ssize_t r;
  while ((r = read(ready[0], &c, 1)) < 0)
    CHECK_EQ_I(errno, EINTR);
  CHECK_EQ_I(close(ready[0]), 0);
  CHECK_MSG(r == 1 && c == 'k', "the holder child failed to set up its table");
  return pid;
}

/* A child holding the n bytes of buf as a sealed table. */
static pid_t hold_table(const void *buf, size_t n) {
  hold_t h = {.buf = buf, .n = n};
  return holder(&h);
}

/* ---- the workload ------------------------------------------------------- */

#define NT 4
#define NACC 8
#define INITIAL 1000

static int64_t accounts[NACC];
static sstm_desc_t *descs[NT];
static int tids[NT];
static int phase; /* 0 run, 1 finish the loop, 2 unregister */
static unsigned registered, quiesced;
static uint64_t local_ops[NT];

struct xfer {
  int a, b;
  int64_t amt;
};

static void xfer_fn(void *p) {
  struct xfer *x = p;
  int64_t va = sstm_load_i64(&accounts[x->a]);
  int64_t vb = sstm_load_i64(&accounts[x->b]);
  sstm_store_i64(&accounts[x->a], va - x->amt);
  sstm_store_i64(&accounts[x->b], vb + x->amt);
}

static void audit_fn(void *p) {
  int64_t sum = 0;
  for (int i = 0; i < NACC; i++)
    sum += sstm_load_i64(&accounts[i]);
  CHECK_EQ_I(sum, (int64_t)NACC * INITIAL);
  *(int64_t *)p = sum;
}

static void *worker(void *arg) {
  unsigned i = (unsigned)(uintptr_t)arg;
  CHECK_OK(sstm_thread_init());
  descs[i] = sstm_self();
  tids[i] = (int)gettid();
  __atomic_fetch_add(&registered, 1, __ATOMIC_RELEASE);
  sstm_rng_t rng;
  sstm_rng_seed(&rng, sstm_test_seed() + i);
  sstm_attr_t ro = {.read_only = true};
  while (__atomic_load_n(&phase, __ATOMIC_ACQUIRE) == 0) {
    uint64_t r = sstm_rng_next(&rng);
    if (r % 8 == 0) {
      int64_t sum;
      CHECK_OK(sstm_run(&ro, audit_fn, &sum));
    } else {
      struct xfer x = {(int)(r % NACC), (int)((r >> 8) % (NACC - 1)), (int64_t)(r >> 16) % 50};
      if (x.b >= x.a) x.b++;
      CHECK_OK(sstm_run(NULL, xfer_fn, &x));
    }
    __atomic_fetch_add(&local_ops[i], 1, __ATOMIC_RELAXED);
  }
  __atomic_fetch_add(&quiesced, 1, __ATOMIC_RELEASE);
  while (__atomic_load_n(&phase, __ATOMIC_ACQUIRE) < 2)
    usleep(1000);
  CHECK_OK(sstm_thread_exit());
  return NULL;
}

/* A policy that uses counters and actions, to see them in the table. */
static sstm_cm_action_t tp_conflict(sstm_cm_ctx_t *ctx, const sstm_conflict_t *c, uint64_t *w) {
  (void)c, (void)w;
  sstm_cm_count(ctx, 0, 1);
  return SSTM_CM_ABORT_SELF;
}
static void tp_abort(sstm_cm_ctx_t *ctx, const sstm_abort_info_t *info) {
  (void)info;
  sstm_cm_count(ctx, 2, 1);
  sstm_cm_note(ctx, SSTM_ACT_BACKOFF);
  sstm_spin_ns(500);
}
static void tp_commit(sstm_cm_ctx_t *ctx) {
  if (ctx->retries) sstm_cm_note(ctx, SSTM_ACT_NONE);
}
static const sstm_cm_ops_t test_policy = {
    .name = "stt-test",
    .description = "statetab test: abort self, count, note backoff",
    .on_conflict = tp_conflict,
    .on_abort = tp_abort,
    .on_commit = tp_commit,
    .stat_names = {"conflicts", NULL, "aborted"},
};

static uint64_t commits_of(const sstm_stats_t *s) { return s->commits_ro + s->commits_update; }

/* Which worker has this slot. */
static int worker_of_slot(unsigned slot) {
  for (int i = 0; i < NT; i++)
    if (sstm_desc_slot(descs[i]) == slot) return i;
  return -1;
}

/* The policy's line as the table publishes it: cut at the field's size,
 * ending in "..." when longer (statetab.c, publish_cm_info). */
static void expected_cm_info(const sstm_cm_ops_t *cm, char *info, size_t size) {
  info[0] = '\0';
  if (cm->describe && cm->describe(info, size) >= (int)size) memcpy(info + size - 4, "...", 4);
}

/* Checks common to every snapshot of the running workload. */
static const jval_t *check_header(const jval_t *j, const char *policy, unsigned max_threads) {
  CHECK_EQ_I(ji(j, "pid"), getpid());
  CHECK_EQ_U(ju(j, "version"), SSTM_STT_VERSION);
  CHECK_EQ_U(ju(j, "entry_size"), sizeof(sstm_stt_entry_t));
  CHECK_EQ_U(ju(j, "nentries"), max_threads);
  char desc[512];
  CHECK_GT_I(sstm_describe(desc, sizeof desc), 0);
  desc[sizeof(((sstm_stt_header_t *)0)->config) - 1] = '\0'; /* the table keeps 319 chars */
  /* The line written at init, without its cm-info: that is the policy's
   * line, which changes (cm_info below is the current one), so that
   * sstm-top never shows a stale choice above the live one. */
  char *di = strstr(desc, " cm-info=");
  if (di) *di = '\0';
  CHECK_EQ_STR(js(j, "config"), desc);
  CHECK_NULL(strstr(js(j, "config"), "cm-info="));
  const jval_t *rn = jget(j, "reason_names");
  CHECK_EQ_I(rn->t, J_ARR);
  CHECK_EQ_U(rn->n, SSTM_ABORT_REASON_COUNT);
  for (int r = 0; r < SSTM_ABORT_REASON_COUNT; r++)
    CHECK_EQ_STR(rn->items[r]->str, sstm_abort_reason_name((sstm_abort_reason_t)r));
  /* the policy's counter names in order, without the unused slots (no
   * padding with empty names) */
  const jval_t *cn = jget(j, "cm_stat_names");
  const sstm_cm_ops_t *cm = sstm_cm_current();
  size_t named = 0;
  for (int s = 0; s < SSTM_STT_CMSTATS; s++) {
    if (!cm->stat_names[s] || !cm->stat_names[s][0]) continue;
    CHECK_LT_U(named, cn->n);
    CHECK_EQ_STR(cn->items[named]->str, cm->stat_names[s]);
    named++;
  }
  CHECK_EQ_U(cn->n, named);
  for (size_t k = 0; k < rn->n; k++)
    CHECK_MSG(rn->items[k]->str[0], "reason_names[%zu] is empty", k);
  CHECK_MSG(jget(j, "cm_info_consistent")->t == J_BOOL && jget(j, "cm_info_consistent")->b,
            "cm_info not read whole from a running program");
  /* cm_info: the policy's current describe() line (adaptive rewrites it at
   * every change); prefix "current=" for adaptive, the whole line for the
   * others, whose line never changes. */
  char info[sizeof(((sstm_stt_header_t *)0)->cm_info)];
  expected_cm_info(cm, info, sizeof info);
  if (strcmp(policy, "adaptive") == 0)
    CHECK_EQ_I(strncmp(js(j, "cm_info"), "current=", 8), 0);
  else
    CHECK_EQ_STR(js(j, "cm_info"), info);
  const jval_t *es = jget(j, "entries");
  CHECK_EQ_I(es->t, J_ARR);
  for (size_t k = 0; k < es->n; k++) {
    const jval_t *e = es->items[k];
    CHECK_EQ_U(ju(e, "in_use"), 1);
    CHECK_EQ_STR(js(e, "cm"), policy);
    int w = worker_of_slot((unsigned)ju(e, "slot"));
    CHECK_MSG(w >= 0, "entry with slot %llu is no worker's", ju(e, "slot"));
    CHECK_EQ_I(ji(e, "tid"), tids[w]);
    CHECK_EQ_U(ju(e, "index"), ju(e, "slot"));
    CHECK_LT_U(ju(e, "action"), SSTM_ACT_COUNT);
    CHECK_EQ_STR(js(e, "action_name"), sstm_cm_act_name((sstm_cm_act_t)ju(e, "action")));
    CHECK_LE_U(ju(e, "in_tx"), 1);
  }
  return es;
}

static void snapshot_test(const char *policy) {
  if (strcmp(policy, "stt-test") == 0 && sstm_cm_find(policy) == NULL)
    CHECK_OK(sstm_cm_register(&test_policy));
  sstm_config_t c;
  sstm_test_config(&c);
  c.cm = policy;
  c.state_table = true;
  CHECK_OK(sstm_init(&c));
  char pidstr[16];
  snprintf(pidstr, sizeof pidstr, "%d", (int)getpid());
  /* The table: a memfd of the table's size, sealed against any change of
   * size, its seals sealed; nothing in /dev/shm. */
  int tfd = open_table_of(getpid(), O_RDONLY);
  struct stat st;
  CHECK_EQ_I(fstat(tfd, &st), 0);
  CHECK(S_ISREG(st.st_mode));
  CHECK_EQ_U((uint64_t)st.st_size, sizeof(sstm_stt_header_t) +
                                       (uint64_t)c.max_threads * sizeof(sstm_stt_entry_t) +
                                       sizeof(sstm_stt_exec_t));
  CHECK_EQ_X(fcntl(tfd, F_GET_SEALS), TABLE_SEALS);
  CHECK_EQ_I(close(tfd), 0);
  char legacy[64];
  snprintf(legacy, sizeof legacy, SSTM_STT_LEGACY_PATH_FMT, (int)getpid());
  CHECK_MSG(lstat(legacy, &st) != 0 && errno == ENOENT, "%s exists", legacy);
  for (int i = 0; i < NACC; i++)
    accounts[i] = INITIAL;

  /* No thread registered yet (the main thread never registers). */
  jval_t *j = snapshot_json(getpid());
  CHECK_EQ_U(ju(j, "in_use"), 0);
  CHECK_EQ_U(jget(j, "entries")->n, 0);
  jfree(j);

  pthread_t th[NT];
  for (unsigned i = 0; i < NT; i++)
    CHECK_EQ_I(pthread_create(&th[i], NULL, worker, (void *)(uintptr_t)i), 0);
  while (__atomic_load_n(&registered, __ATOMIC_ACQUIRE) < NT)
    usleep(1000);
  /* Let every thread commit a little. */
  for (;;) {
    bool all = true;
    for (int i = 0; i < NT; i++)
      all &= __atomic_load_n(&local_ops[i], __ATOMIC_RELAXED) >= 500;
    if (all) break;
    usleep(2000);
  }

  /* 1. While the workload runs: bounds. */
  sstm_stats_t before[NT], after[NT];
  for (int i = 0; i < NT; i++)
    CHECK_OK(sstm_stats_get(descs[i], &before[i]));
  j = snapshot_json(getpid());
  for (int i = 0; i < NT; i++)
    CHECK_OK(sstm_stats_get(descs[i], &after[i]));
  const jval_t *es = check_header(j, policy, c.max_threads);
  CHECK_EQ_U(ju(j, "in_use"), NT);
  CHECK_EQ_U(es->n, NT);
  for (size_t k = 0; k < es->n; k++) {
    const jval_t *e = es->items[k];
    int w = worker_of_slot((unsigned)ju(e, "slot"));
    /* The table is updated just after the counters: it may lag by the one
     * attempt that was ending when `before` was taken. */
    CHECK_GE_U(ju(e, "commits") + 1, commits_of(&before[w]));
    CHECK_LE_U(ju(e, "commits"), commits_of(&after[w]));
    CHECK_GE_U(ju(e, "aborts") + 1, before[w].aborts_total);
    CHECK_LE_U(ju(e, "aborts"), after[w].aborts_total);
    CHECK_GT_U(ju(e, "txid"), 0);
  }
  jfree(j);

  /* The live view and the listing. */
  tool_run_t r;
  run_tool(&r, "-n", "2", "-i", "0.05", pidstr);
  check_exit(&r, 0, "sstm-top -n 2");
  char want[64];
  snprintf(want, sizeof want, "pid %d ", (int)getpid());
  CHECK_CONTAINS(r.out, want);
  CHECK_CONTAINS(r.out, "threads 4/");
  CHECK_CONTAINS(r.out, "COMMIT/S");
  CHECK_CONTAINS(r.out, policy);
  tool_free(&r);
  run_tool(&r, "-l", NULL, NULL, NULL, NULL);
  check_exit(&r, 0, "sstm-top -l");
  CHECK_EQ_I(listed_threads(r.out, getpid()), NT);
  tool_free(&r);

  /* 2. Quiesced (loops done, still registered): exact. */
  __atomic_store_n(&phase, 1, __ATOMIC_RELEASE);
  while (__atomic_load_n(&quiesced, __ATOMIC_ACQUIRE) < NT)
    usleep(1000);
  for (int i = 0; i < NT; i++)
    CHECK_OK(sstm_stats_get(descs[i], &before[i]));
  j = snapshot_json(getpid());
  es = check_header(j, policy, c.max_threads);
  CHECK_EQ_U(ju(j, "in_use"), NT);
  CHECK_EQ_U(es->n, NT);
  uint64_t tc = 0, ta = 0, seen = 0;
  const sstm_cm_ops_t *cm = sstm_cm_current();
  for (size_t k = 0; k < es->n; k++) {
    const jval_t *e = es->items[k];
    int w = worker_of_slot((unsigned)ju(e, "slot"));
    const sstm_stats_t *s = &before[w];
    CHECK_EQ_U(s->slot, ju(e, "slot"));
    CHECK_EQ_I(s->tid, ji(e, "tid"));
    CHECK_EQ_U(ju(e, "commits"), commits_of(s));
    CHECK_EQ_U(ju(e, "commits"), local_ops[w]);
    CHECK_EQ_U(ju(e, "aborts"), s->aborts_total);
    CHECK_EQ_U(ju(e, "in_tx"), 0);
    CHECK_EQ_STR(js(e, "action_name"), "run");
    /* The OS priority shown is the thread's own (softser has given back
     * what it lowered; nobody else changes it). */
    errno = 0;
    int nice = getpriority(PRIO_PROCESS, (id_t)tids[w]);
    CHECK_EQ_I(errno, 0);
    CHECK_EQ_I(ji(e, "os_policy"), sched_getscheduler(tids[w]));
    CHECK_EQ_I(ji(e, "os_nice"), nice);
    const jval_t *br = jget(e, "aborts_by_reason");
    CHECK_EQ_U(br->n, SSTM_ABORT_REASON_COUNT);
    uint64_t sum = 0;
    for (int x = 0; x < SSTM_ABORT_REASON_COUNT; x++) {
      uint64_t v = ju(br, sstm_abort_reason_name((sstm_abort_reason_t)x));
      CHECK_EQ_U(v, s->aborts[x]);
      sum += v;
    }
    CHECK_EQ_U(sum, s->aborts_total);
    if (s->aborts_total) {
      CHECK_LT_U(ju(e, "last_reason"), SSTM_ABORT_REASON_COUNT);
      CHECK_EQ_STR(js(e, "last_reason_name"),
                   sstm_abort_reason_name((sstm_abort_reason_t)ju(e, "last_reason")));
    }
    const jval_t *cs = jget(e, "cm_stats");
    unsigned named = 0;
    for (int x = 0; x < SSTM_CM_NSTATS; x++) {
      if (!cm->stat_names[x] || !cm->stat_names[x][0]) continue;
      named++;
      CHECK_EQ_U(ju(cs, cm->stat_names[x]), s->cm_stats[x]);
    }
    CHECK_EQ_U(cs->n, named);
    if (strcmp(policy, "stt-test") == 0) {
      CHECK_EQ_U(named, 2);
      /* every abort went through on_abort; conflicts <= aborts */
      CHECK_EQ_U(s->cm_stats[2], s->aborts_total);
      CHECK_LE_U(s->cm_stats[0], s->aborts_total);
      CHECK_EQ_U(s->cm_actions[SSTM_ACT_BACKOFF], s->aborts_total);
    }
    tc += ju(e, "commits");
    ta += ju(e, "aborts");
    seen |= 1u << w;
  }
  CHECK_EQ_U(seen, (1u << NT) - 1);
  const jval_t *tot = jget(j, "totals");
  CHECK_EQ_U(ju(tot, "commits"), tc);
  CHECK_EQ_U(ju(tot, "aborts"), ta);
  /* Quiesced, the policy's line cannot change any more: exact for every
   * policy, adaptive included (its choice and reason as they are now, not
   * as they were at init). */
  char info[sizeof(((sstm_stt_header_t *)0)->cm_info)];
  expected_cm_info(cm, info, sizeof info);
  CHECK_EQ_STR(js(j, "cm_info"), info);
  printf("statetab: %s, %llu commits, %llu aborts, cm_info \"%s\"\n", policy,
         (unsigned long long)tc, (unsigned long long)ta, info);
  jfree(j);

  /* 3. Unregistered: no entry in use. */
  __atomic_store_n(&phase, 2, __ATOMIC_RELEASE);
  for (int i = 0; i < NT; i++)
    CHECK_EQ_I(pthread_join(th[i], NULL), 0);
  j = snapshot_json(getpid());
  CHECK_EQ_U(ju(j, "in_use"), 0);
  CHECK_EQ_U(jget(j, "entries")->n, 0);
  jfree(j);
  int64_t total = 0;
  for (int i = 0; i < NACC; i++)
    total += accounts[i];
  CHECK_EQ_I(total, (int64_t)NACC * INITIAL);

  /* 4. sstm_shutdown closes the table. */
  CHECK_OK(sstm_shutdown());
  CHECK_EQ_I(table_fd_of(getpid()), -1);
  run_tool(&r, "-j", pidstr, NULL, NULL, NULL);
  check_exit(&r, 1, "sstm-top after shutdown");
  CHECK_CONTAINS(r.err, "no state table");
  tool_free(&r);
}

TEST(snapshot_suicide) { snapshot_test("suicide"); }
TEST(snapshot_backoff) { snapshot_test("backoff"); }
TEST(snapshot_policy) { snapshot_test("stt-test"); }
TEST(snapshot_ser_block) { snapshot_test("ser-block"); }
TEST(snapshot_softser) { snapshot_test("softser"); }
TEST(snapshot_os_prio) { snapshot_test("os_prio"); }
TEST(snapshot_adaptive) { snapshot_test("adaptive"); }

/* A registered thread shows its tid and OS priority before its first
 * transaction, and a slot reused by a new thread shows none of its previous
 * thread's values. */
static _Atomic int fresh_step; /* 1: A done, 2: B registered, 3: B may go */
static _Atomic int b_tid;
static void bump_fn(void *p) {
  (void)p;
  sstm_store_i64(&accounts[0], sstm_load_i64(&accounts[0]) + 1);
  if (sstm_load_i64(&accounts[0]) % 7 == 0 && sstm_txid() % 2 == 0) sstm_restart();
}
static void cancel_fn(void *p) {
  (void)p;
  sstm_cancel();
}
static void *fresh_a(void *arg) {
  (void)arg;
  CHECK_OK(sstm_thread_init());
  for (int i = 0; i < 200; i++)
    CHECK_OK(sstm_run(NULL, bump_fn, NULL));
  CHECK_RC(sstm_run(NULL, cancel_fn, NULL), SSTM_ECANCELED); /* an abort of one more reason */
  CHECK_OK(sstm_thread_exit());
  return NULL;
}
static void *fresh_b(void *arg) {
  (void)arg;
  CHECK_OK(sstm_thread_init());
  atomic_store_explicit(&b_tid, (int)syscall(SYS_gettid), memory_order_seq_cst);
  atomic_store_explicit(&fresh_step, 2, memory_order_seq_cst);
  while (atomic_load_explicit(&fresh_step, memory_order_seq_cst) != 3)
    usleep(1000);
  CHECK_OK(sstm_thread_exit());
  return NULL;
}

TEST(fresh_entries) {
  sstm_config_t c;
  sstm_test_config(&c);
  c.state_table = true;
  c.max_threads = 1; /* one slot: B must reuse A's */
  CHECK_OK(sstm_init(&c));
  accounts[0] = 0;
  pthread_t t;
  CHECK_EQ_I(pthread_create(&t, NULL, fresh_a, NULL), 0);
  CHECK_EQ_I(pthread_join(t, NULL), 0);
  CHECK_EQ_I(pthread_create(&t, NULL, fresh_b, NULL), 0);
  while (atomic_load_explicit(&fresh_step, memory_order_seq_cst) != 2)
    usleep(1000);
  jval_t *j = snapshot_json(getpid());
  const jval_t *es = jget(j, "entries");
  CHECK_EQ_U(es->n, 1);
  const jval_t *e = es->items[0];
  CHECK_EQ_I(ji(e, "tid"),
             atomic_load_explicit(&b_tid, memory_order_seq_cst)); /* before B's first transaction */
  CHECK_EQ_U(ju(e, "txid"), 0);
  CHECK_EQ_U(ju(e, "commits"), 0);
  CHECK_EQ_U(ju(e, "aborts"), 0);
  const jval_t *by = jget(e, "aborts_by_reason");
  CHECK_GT_U(by->n, 0);
  for (size_t r = 0; r < by->n; r++)
    CHECK_MSG(by->items[r]->u == 0, "aborts_by_reason.%s: %llu left by the slot's previous thread",
              by->keys[r], by->items[r]->u);
  CHECK_EQ_I(ji(e, "conflict_tid"), 0);
  CHECK_EQ_U(ju(e, "last_reason"), 0);
  /* the policy and nice B has (inherited from this thread) */
  int pol = sched_getscheduler(0);
  CHECK_GE_I(pol, 0);
  CHECK_EQ_I(ji(e, "os_policy"), pol);
  errno = 0;
  int nice = getpriority(PRIO_PROCESS, 0);
  CHECK_EQ_I(errno, 0);
  CHECK_EQ_I(ji(e, "os_nice"), nice);
  jfree(j);
  atomic_store_explicit(&fresh_step, 3, memory_order_seq_cst);
  CHECK_EQ_I(pthread_join(t, NULL), 0);
  CHECK_GE_I(accounts[0], 200);
  CHECK_OK(sstm_shutdown());
}

/* A cancelled transaction has ended: the entry says not in a transaction,
 * with the abort counted under user-cancel. */
TEST(cancelled_transaction_ends) {
  sstm_config_t c;
  sstm_test_config(&c);
  c.state_table = true;
  CHECK_OK(sstm_init(&c));
  CHECK_OK(sstm_thread_init());
  CHECK_RC(sstm_run(NULL, cancel_fn, NULL), SSTM_ECANCELED);
  jval_t *j = snapshot_json(getpid());
  const jval_t *es = jget(j, "entries");
  CHECK_EQ_U(es->n, 1);
  const jval_t *e = es->items[0];
  CHECK_EQ_I(ji(e, "tid"), (long long)syscall(SYS_gettid));
  CHECK_EQ_U(ju(e, "in_tx"), 0);
  CHECK_EQ_U(ju(e, "aborts"), 1);
  CHECK_EQ_STR(js(e, "last_reason_name"), "user-cancel");
  CHECK_EQ_U(ju(jget(e, "aborts_by_reason"), "user-cancel"), 1);
  jfree(j);
  CHECK_OK(sstm_thread_exit());
  CHECK_OK(sstm_shutdown());
}

/* While a policy waits after an abort the entry says "not in a
 * transaction" (the attempt was rolled back), and a retry shows the
 * policy's counters before any commit (a thread that keeps losing is the
 * one worth watching). The policy below takes a snapshot from its on_abort;
 * the body takes one in its retry. Before, in_tx stayed 1 in the first and
 * the counter showed 0 in the second. */
static unsigned long long wait_in_tx = 99, retry_in_tx = 99, retry_waits = 99;
static int wait_attempts;
static unsigned long long entry_field(const char *counters, const char *name) {
  jval_t *j = snapshot_json(getpid());
  const jval_t *e = jget(j, "entries")->items[0];
  unsigned long long v = counters ? ju(jget(e, counters), name) : ju(e, name);
  jfree(j);
  return v;
}
static void wp_abort(sstm_cm_ctx_t *ctx, const sstm_abort_info_t *info) {
  (void)info;
  sstm_cm_count(ctx, 0, 1);
  wait_in_tx = entry_field(NULL, "in_tx");
}
/* on_conflict of the test policies below that only abort themselves */
static sstm_cm_action_t abort_self(sstm_cm_ctx_t *ctx, const sstm_conflict_t *c, uint64_t *w) {
  (void)ctx, (void)c, (void)w;
  return SSTM_CM_ABORT_SELF;
}
static const sstm_cm_ops_t wait_policy = {
    .name = "stt-wait-test",
    .description = "statetab test: snapshot from on_abort",
    .on_conflict = abort_self,
    .on_abort = wp_abort,
    .stat_names = {"waits"},
};
static void wait_body(void *arg) {
  (void)arg;
  if (++wait_attempts == 1) sstm_restart();
  retry_in_tx = entry_field(NULL, "in_tx");
  retry_waits = entry_field("cm_stats", "waits");
}

TEST(policy_wait_is_outside_the_attempt_and_retry_shows_its_counters) {
  CHECK_OK(sstm_cm_register(&wait_policy));
  sstm_config_t c;
  sstm_test_config(&c);
  c.state_table = true;
  c.cm = "stt-wait-test";
  CHECK_OK(sstm_init(&c));
  CHECK_OK(sstm_thread_init());
  CHECK_OK(sstm_run(NULL, wait_body, NULL));
  CHECK_EQ_I(wait_attempts, 2);
  CHECK_EQ_U(wait_in_tx, 0);
  CHECK_EQ_U(retry_in_tx, 1);
  CHECK_EQ_U(retry_waits, 1);
  CHECK_OK(sstm_thread_exit());
  CHECK_OK(sstm_shutdown());
}

/* An abort's entry names the other party of its conflict: the thread and
 * the attempt that held the lock. A holder thread writes a word (etl: the
 * lock at the write) and waits inside its transaction; this thread's read
 * meets the lock and aborts itself; the policy's on_abort (after the
 * entry's update) reads this thread's entry, then lets the holder commit.
 * Kills the mutant that left conflict_txid as it was (0 in a fresh entry). */
static uint64_t party_word __attribute__((aligned(64)));
static _Atomic int party_step;
static int party_tid;
static uint64_t party_txid;
static long long seen_conflict_tid = -1;
static unsigned long long seen_conflict_txid, seen_reason = 99;
static void party_abort(sstm_cm_ctx_t *ctx, const sstm_abort_info_t *info) {
  (void)ctx, (void)info;
  if (atomic_load_explicit(&party_step, memory_order_acquire) != 1) return;
  jval_t *j = snapshot_json(getpid());
  const jval_t *es = jget(j, "entries");
  for (size_t i = 0; i < es->n; i++) {
    const jval_t *e = es->items[i];
    if (ji(e, "tid") != (long long)syscall(SYS_gettid)) continue;
    seen_conflict_tid = ji(e, "conflict_tid");
    seen_conflict_txid = ju(e, "conflict_txid");
    seen_reason = ju(e, "last_reason");
  }
  jfree(j);
  atomic_store_explicit(&party_step, 2, memory_order_release);
}
static const sstm_cm_ops_t party_policy = {
    .name = "stt-party-test",
    .description = "statetab test: reads the loser's entry from on_abort",
    .on_conflict = abort_self,
    .on_abort = party_abort,
};
static void *party_holder(void *arg) {
  (void)arg;
  CHECK_OK(sstm_thread_init());
  SSTM_ATOMIC_BEGIN(NULL)
    sstm_store_u64(&party_word, sstm_load_u64(&party_word) + 1);
    if (atomic_load_explicit(&party_step, memory_order_relaxed) == 0) {
      party_tid = (int)syscall(SYS_gettid);
      party_txid = sstm_txid();
      /* release: the two fields above before the step */
      atomic_store_explicit(&party_step, 1, memory_order_release);
      while (atomic_load_explicit(&party_step, memory_order_acquire) != 2)
        usleep(1000);
    }
  SSTM_ATOMIC_END();
  CHECK_OK(sstm_thread_exit());
  return NULL;
}
static void party_loser(void *arg) {
  (void)arg;
  sstm_store_u64(&party_word, sstm_load_u64(&party_word) + 10);
}

TEST(an_abort_names_the_other_party_of_its_conflict) {
  CHECK_OK(sstm_cm_register(&party_policy));
  sstm_config_t c;
  sstm_test_config(&c);
  c.state_table = true;
  c.design = SSTM_DESIGN_ETL;
  c.cm = "stt-party-test";
  CHECK_OK(sstm_init(&c));
  CHECK_OK(sstm_thread_init());
  pthread_t t;
  CHECK_EQ_I(pthread_create(&t, NULL, party_holder, NULL), 0);
  while (atomic_load_explicit(&party_step, memory_order_acquire) != 1)
    usleep(1000);
  CHECK_OK(sstm_run(NULL, party_loser, NULL));
  CHECK_EQ_I(pthread_join(t, NULL), 0);
  CHECK_EQ_I(atomic_load_explicit(&party_step, memory_order_relaxed), 2);
  CHECK_EQ_U(seen_reason, SSTM_ABORT_READ_LOCKED); /* its read meets the lock first */
  CHECK_EQ_I(seen_conflict_tid, party_tid);
  CHECK_NE_U(party_txid, 0);
  CHECK_EQ_U(seen_conflict_txid, party_txid);
  CHECK_EQ_U(party_word, 11);
  CHECK_OK(sstm_thread_exit());
  CHECK_OK(sstm_shutdown());
}

/* A policy line longer than the table's field ends in "..." there (cut
 * numbers would look plausible), while sstm_describe has it whole. */
static int long_line(char *buf, size_t len) {
  char line[501];
  for (int i = 0; i < 500; i++)
    line[i] = (char)('0' + i % 10);
  line[500] = '\0';
  return snprintf(buf, len, "%s", line);
}
static const sstm_cm_ops_t long_line_policy = {
    .name = "stt-long-line",
    .description = "statetab test: a 500-character describe line",
    .on_conflict = abort_self,
    .describe = long_line,
};

TEST(long_policy_line_is_marked_cut) {
  CHECK_OK(sstm_cm_register(&long_line_policy));
  sstm_config_t c;
  sstm_test_config(&c);
  c.state_table = true;
  c.cm = "stt-long-line";
  CHECK_OK(sstm_init(&c));
  jval_t *j = snapshot_json(getpid());
  const char *info = js(j, "cm_info");
  size_t n = strlen(info);
  CHECK_EQ_U(n, sizeof(((sstm_stt_header_t *)0)->cm_info) - 1);
  CHECK_EQ_STR(info + n - 3, "...");
  CHECK_EQ_I(strncmp(info, "0123456789", 10), 0);
  jfree(j);
  char d[1024];
  CHECK_GT_I(sstm_describe(d, sizeof d), 500);
  CHECK_NOT_NULL(strstr(d, "890123456789"));
  CHECK_OK(sstm_shutdown());
}

/* sstm_sched_set changes what the table shows for the thread: its policy
 * and nice value as the kernel now has them. */
TEST(sched_set_updates_the_entry) {
  sstm_config_t c;
  sstm_test_config(&c);
  c.state_table = true;
  CHECK_OK(sstm_init(&c));
  CHECK_OK(sstm_thread_init());
  errno = 0;
  int nice = getpriority(PRIO_PROCESS, 0);
  CHECK_EQ_I(errno, 0);
  int want = nice < 19 ? nice + 1 : 19; /* a higher nice value is always allowed */
  int rc = sstm_sched_set(SCHED_BATCH, want);
  if (rc == SSTM_EPERM) sstm_test_skip("SCHED_BATCH refused here");
  CHECK_OK(rc);
  jval_t *j = snapshot_json(getpid());
  const jval_t *e = jget(j, "entries")->items[0];
  CHECK_EQ_I(ji(e, "tid"), (long long)syscall(SYS_gettid));
  CHECK_EQ_I(ji(e, "os_policy"), SCHED_BATCH);
  CHECK_EQ_STR(js(e, "os_policy_name"), "batch");
  CHECK_EQ_I(ji(e, "os_nice"), want);
  jfree(j);
  CHECK_OK(sstm_thread_exit());
  CHECK_OK(sstm_shutdown());
}

/* ---- negative cases ----------------------------------------------------- */

/* A child that sleeps until killed: a live pid without a table; comm: its
 * process name (/proc/PID/comm), set before this returns, NULL to keep. */
static pid_t sleeper_named(const char *comm) {
  hold_t h = {.comm = comm};
  return holder(&h);
}

static pid_t sleeper(void) { return sleeper_named(NULL); }

static void reap(pid_t pid) {
  CHECK_EQ_I(kill(pid, SIGKILL), 0);
  int st;
  while (waitpid(pid, &st, 0) < 0)
    CHECK_EQ_I(errno, EINTR);
}

static void write_file(const char *path, const void *buf, size_t n, mode_t mode) {
  unlink(path);
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  CHECK_GE_I(fd, 0);
  CHECK_EQ_I(write(fd, buf, n), (long long)n);
  CHECK_EQ_I(close(fd), 0);
}

TEST(no_table) {
  pid_t pid = sleeper();
  char p[16];
  snprintf(p, sizeof p, "%d", (int)pid);
  tool_run_t r;
  run_tool(&r, "-j", p, NULL, NULL, NULL);
  check_exit(&r, 1, "live pid without a table");
  CHECK_CONTAINS(r.err, "no state table");
  CHECK_CONTAINS(r.err, "SCHEDSTM_STATE_TABLE");
  CHECK_NOT_CONTAINS(r.err, "earlier layout");
  CHECK_EQ_STR(r.out, "");
  tool_free(&r);
  /* A program of an earlier version publishes a file: the message says so. */
  char legacy[64];
  snprintf(legacy, sizeof legacy, SSTM_STT_LEGACY_PATH_FMT, (int)pid);
  write_file(legacy, "old", 3, 0600);
  run_tool(&r, "-j", p, NULL, NULL, NULL);
  CHECK_EQ_I(unlink(legacy), 0);
  check_exit(&r, 1, "live pid with a file of layout 3");
  CHECK_CONTAINS(r.err, "a file of an earlier layout at /dev/shm");
  tool_free(&r);
  run_tool(&r, "-n", "1", p, NULL, NULL);
  check_exit(&r, 1, "live view, pid without a table");
  CHECK_CONTAINS(r.err, "no state table");
  tool_free(&r);
  reap(pid);
  run_tool(&r, "-j", p, NULL, NULL, NULL);
  check_exit(&r, 1, "dead pid");
  CHECK_CONTAINS(r.err, "no such process");
  tool_free(&r);
  /* usage errors */
  run_tool(&r, "-j", "12abc", NULL, NULL, NULL);
  check_exit(&r, 2, "bad pid");
  CHECK_CONTAINS(r.err, "bad pid");
  tool_free(&r);
  run_tool(&r, "-i", "0", p, NULL, NULL);
  check_exit(&r, 2, "bad interval");
  tool_free(&r);
  run_tool(&r, "-n", "0", p, NULL, NULL); /* not "for ever": that is no -n */
  check_exit(&r, 2, "-n 0");
  CHECK_CONTAINS(r.err, "bad count");
  CHECK_CONTAINS(r.err, "1 or more");
  tool_free(&r);
  run_tool(&r, "-n", "-1", p, NULL, NULL);
  check_exit(&r, 2, "-n -1");
  CHECK_CONTAINS(r.err, "bad count");
  tool_free(&r);
  run_tool(&r, NULL, NULL, NULL, NULL, NULL);
  check_exit(&r, 2, "no pid");
  CHECK_CONTAINS(r.err, "usage");
  tool_free(&r);
}

/* A plausible header with n entries, the rest zero; holder() puts its own
 * pid in. */
static void *fake_table(uint32_t n, size_t *size) {
  size_t xo = sizeof(sstm_stt_header_t) + (size_t)n * sizeof(sstm_stt_entry_t);
  *size = xo + sizeof(sstm_stt_exec_t);
  sstm_stt_header_t *h = calloc(1, *size);
  CHECK_NOT_NULL(h);
  h->magic = SSTM_STT_MAGIC;
  h->version = SSTM_STT_VERSION;
  h->nentries = n;
  h->entry_size = sizeof(sstm_stt_entry_t);
  h->header_size = sizeof(sstm_stt_header_t);
  h->nreasons = 3;
  h->exec_offset = (uint32_t)xo;
  h->exec_size = sizeof(sstm_stt_exec_t);
  snprintf(h->config, sizeof h->config, "fake");
  return h;
}

/* -j and the live view of what h holds end with status 1 and msg. */
static void expect_error_held(const hold_t *h, const char *msg, const char *what) {
  pid_t pid = holder(h);
  char pidstr[16];
  snprintf(pidstr, sizeof pidstr, "%d", (int)pid);
  tool_run_t r;
  run_tool(&r, "-j", pidstr, NULL, NULL, NULL);
  check_exit(&r, 1, what);
  CHECK_CONTAINS(r.err, msg);
  tool_free(&r);
  run_tool(&r, "-n", "1", "-i", "0.01", pidstr);
  check_exit(&r, 1, what);
  CHECK_CONTAINS(r.err, msg);
  tool_free(&r);
  reap(pid);
}

static void expect_error(const void *buf, size_t n, const char *msg, const char *what) {
  hold_t h = {.buf = buf, .n = n};
  expect_error_held(&h, msg, what);
}

/* Whatever another user puts at the name versions 1-3 used for our table
 * (/dev/shm/schedstm.<pid>, predictable), sstm_init publishes its table
 * and leaves the thing alone: the table has no name there any more. It
 * used to fail with SSTM_EPERM (a directory, a symbolic link, a FIFO, a
 * file of another user), or to remove a planted file of our own. */
TEST(planted_names_do_not_stop_init) {
  char path[64];
  snprintf(path, sizeof path, SSTM_STT_LEGACY_PATH_FMT, (int)getpid());
  char target[] = "/tmp/sstm-planted-target-XXXXXX";
  int tfd = mkstemp(target);
  CHECK_GE_I(tfd, 0);
  static const char keep[] = "the symbolic link's target, untouched";
  CHECK_EQ_I(write(tfd, keep, sizeof keep), (long long)sizeof keep);
  CHECK_EQ_I(close(tfd), 0);
  bool root = geteuid() == 0;
  static const char *const kinds[] = {"file",          "file of another user",
                                      "symbolic link", "dangling symbolic link",
                                      "FIFO",          "directory"};
  for (int k = 0; k < 6; k++) {
    if (k == 1 && !root) continue; /* cannot give a file away */
    unlink(path);
    static const char junk[] = "planted by another user";
    mode_t type;
    switch (k) {
    case 0:
    case 1:
      write_file(path, junk, sizeof junk, 0644);
      if (k == 1) CHECK_EQ_I(chown(path, 65534, 65534), 0);
      type = S_IFREG;
      break;
    case 2:
      CHECK_EQ_I(symlink(target, path), 0);
      type = S_IFLNK;
      break;
    case 3:
      CHECK_EQ_I(symlink("/nonexistent/sstm-target", path), 0);
      type = S_IFLNK;
      break;
    case 4:
      CHECK_EQ_I(mkfifo(path, 0666), 0);
      type = S_IFIFO;
      break;
    default:
      CHECK_EQ_I(mkdir(path, 0755), 0);
      type = S_IFDIR;
      break;
    }
    struct stat before, after;
    CHECK_EQ_I(lstat(path, &before), 0);
    sstm_config_t c;
    sstm_test_config(&c);
    c.state_table = true;
    c.max_threads = 5;
    int rc = sstm_init(&c);
    CHECK_MSG(rc == 0, "%s at %s: sstm_init: %s (%s)", kinds[k], path, sstm_strerror(rc),
              sstm_last_error());
    jval_t *j = snapshot_json(getpid());
    CHECK_EQ_U(ju(j, "pid"), (uint64_t)getpid());
    CHECK_EQ_U(ju(j, "nentries"), 5);
    jfree(j);
    CHECK_OK(sstm_shutdown());
    CHECK_MSG(lstat(path, &after) == 0, "%s at %s: removed", kinds[k], path);
    CHECK_EQ_X(after.st_mode & S_IFMT, type);
    CHECK_EQ_U((uint64_t)after.st_ino, (uint64_t)before.st_ino);
    CHECK_EQ_U((uint64_t)after.st_size, (uint64_t)before.st_size);
    if (type == S_IFDIR)
      CHECK_EQ_I(rmdir(path), 0);
    else
      CHECK_EQ_I(unlink(path), 0);
  }
  char got[sizeof keep] = "";
  tfd = open(target, O_RDONLY | O_CLOEXEC);
  CHECK_GE_I(tfd, 0);
  CHECK_EQ_I(read(tfd, got, sizeof got), (long long)sizeof keep);
  CHECK_EQ_I(close(tfd), 0);
  CHECK_EQ_STR(got, keep);
  CHECK_EQ_I(unlink(target), 0);
}

/* In a forked child (it changes its limits): a table that cannot be
 * created for want of descriptors, or allocated beyond RLIMIT_FSIZE, is
 * SSTM_ENOMEM with the system's reason, nothing is left half done, and
 * init succeeds once the limit is lifted. A planted file cannot cause
 * either. */
static void resource_errors_child(void) {
  sstm_config_t c;
  sstm_test_config(&c);
  c.state_table = true;
  c.max_threads = 64; /* a table of 25 KiB */
  /* 1. No descriptor left: the limit is the lowest free descriptor. */
  struct rlimit nofile, fsize;
  CHECK_EQ_I(getrlimit(RLIMIT_NOFILE, &nofile), 0);
  int next = dup(0);
  CHECK_GE_I(next, 0);
  CHECK_EQ_I(close(next), 0);
  struct rlimit low = {(rlim_t)next, nofile.rlim_max};
  CHECK_EQ_I(setrlimit(RLIMIT_NOFILE, &low), 0);
  int rc = sstm_init(&c);
  char err[512];
  snprintf(err, sizeof err, "%s", sstm_last_error());
  bool up = sstm_initialized();
  CHECK_EQ_I(setrlimit(RLIMIT_NOFILE, &nofile), 0);
  CHECK_RC(rc, SSTM_ENOMEM);
  CHECK_FALSE(up);
  CHECK_CONTAINS(err, "state table");
  CHECK_CONTAINS(err, strerror(EMFILE));
  CHECK_EQ_I(table_fd_of(getpid()), -1);
  /* 2. The table beyond RLIMIT_FSIZE: posix_fallocate fails with EFBIG
   * (SIGXFSZ ignored, as the default action would end the process). */
  CHECK(signal(SIGXFSZ, SIG_IGN) != SIG_ERR);
  CHECK_EQ_I(getrlimit(RLIMIT_FSIZE, &fsize), 0);
  struct rlimit small = {4096, fsize.rlim_max};
  CHECK_EQ_I(setrlimit(RLIMIT_FSIZE, &small), 0);
  rc = sstm_init(&c);
  snprintf(err, sizeof err, "%s", sstm_last_error());
  up = sstm_initialized();
  CHECK_EQ_I(setrlimit(RLIMIT_FSIZE, &fsize), 0);
  CHECK_RC(rc, SSTM_ENOMEM);
  CHECK_FALSE(up);
  CHECK_CONTAINS(err, "state table: cannot allocate");
  CHECK_CONTAINS(err, strerror(EFBIG));
  CHECK_EQ_I(table_fd_of(getpid()), -1);
  /* 3. Limits lifted: it works. */
  CHECK_OK(sstm_init(&c));
  CHECK_GE_I(table_fd_of(getpid()), 0);
  CHECK_OK(sstm_shutdown());
  CHECK_EQ_I(table_fd_of(getpid()), -1);
}

TEST(table_resource_errors) {
  fflush(stdout);
  fflush(stderr);
  pid_t pid = sstm_test_fork();
  CHECK_GE_I(pid, 0);
  if (pid == 0) {
    resource_errors_child();
    fflush(stdout);
    _exit(0);
  }
  int st;
  while (waitpid(pid, &st, 0) < 0)
    CHECK_EQ_I(errno, EINTR);
  CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child %s %d",
            WIFSIGNALED(st) ? "was killed by signal" : "exited with",
            WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
}

/* A process that ends without sstm_shutdown (by exit() with a thread still
 * registered, which makes shutdown fail, or by _exit, as a killed one)
 * leaves nothing behind: its table went with it, and the tool says the
 * process is gone. */
static _Atomic bool worker_registered;
static void *registered_forever(void *arg) {
  (void)arg;
  if (sstm_thread_init() != 0) _exit(7);
  atomic_store_explicit(&worker_registered, true, memory_order_seq_cst);
  for (;;)
    pause();
}
static void end_without_shutdown(bool by_exit) {
  int go[2], ready[2];
  CHECK_EQ_I(pipe2(go, O_CLOEXEC), 0);
  CHECK_EQ_I(pipe2(ready, O_CLOEXEC), 0);
  fflush(stdout);
  fflush(stderr);
  pid_t pid = sstm_test_fork();
  CHECK_GE_I(pid, 0);
  if (pid == 0) {
    sstm_config_t c;
    sstm_test_config(&c);
    c.state_table = true;
    if (sstm_init(&c) != 0 || sstm_thread_init() != 0) _exit(3);
    pthread_t th; /* a worker that is still registered at the exit */
    if (pthread_create(&th, NULL, registered_forever, NULL) != 0) _exit(6);
    while (!atomic_load_explicit(&worker_registered, memory_order_seq_cst))
      sched_yield();
    if (sstm_run(NULL, bump_fn, NULL) != 0) _exit(5);
    if (sstm_shutdown() != SSTM_EBUSY) _exit(4); /* still registered */
    char c1 = 'r';
    if (write(ready[1], &c1, 1) != 1 || read(go[0], &c1, 1) != 1) _exit(8);
    if (by_exit) exit(0);
    _exit(0);
  }
  CHECK_EQ_I(close(go[0]), 0);
  CHECK_EQ_I(close(ready[1]), 0);
  char c1 = 0;
  CHECK_EQ_I(read(ready[0], &c1, 1), 1);
  CHECK_GE_I(table_fd_of(pid), 0); /* published while it runs */
  char p[16];
  snprintf(p, sizeof p, "%d", (int)pid);
  jval_t *j = snapshot_json(pid);
  CHECK_EQ_U(ju(j, "in_use"), 2);
  jfree(j);
  CHECK_EQ_I(write(go[1], "g", 1), 1);
  int st;
  while (waitpid(pid, &st, 0) < 0)
    CHECK_EQ_I(errno, EINTR);
  CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status 0x%x", st);
  CHECK_EQ_I(close(go[1]), 0);
  CHECK_EQ_I(close(ready[0]), 0);
  char legacy[64];
  struct stat sb;
  snprintf(legacy, sizeof legacy, SSTM_STT_LEGACY_PATH_FMT, (int)pid);
  CHECK_MSG(lstat(legacy, &sb) != 0 && errno == ENOENT, "%s left after the exit", legacy);
  tool_run_t r;
  run_tool(&r, "-j", p, NULL, NULL, NULL);
  check_exit(&r, 1, "-j of an exited process");
  CHECK_CONTAINS(r.err, "no such process");
  tool_free(&r);
}

TEST(exit_without_shutdown_removes_the_table) {
  end_without_shutdown(true);
  end_without_shutdown(false);
}

/* The live view's uptime is hours:minutes:seconds.tenths (a table started
 * 1 h 5 min 7.5 s ago; on a machine up for less than that, the uptime line
 * is not checked), and -a adds the free slots, in the JSON too. */
TEST(uptime_and_free_slots) {
  size_t n;
  sstm_stt_header_t *h = fake_table(3, &n);
  struct timespec ts;
  CHECK_EQ_I(clock_gettime(CLOCK_MONOTONIC, &ts), 0);
  uint64_t now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
  uint64_t age = ((1 * 60 + 5) * 60 + 7) * 1000000000ull + 500000000ull;
  bool old_enough = now > age + 1000000000ull;
  h->start_ns = old_enough ? now - age : now;
  sstm_stt_entry_t *e = (sstm_stt_entry_t *)(void *)(h + 1);
  e[1].in_use = 1;
  e[1].tid = 4242;
  e[1].slot = 1;
  pid_t pid = hold_table(h, n);
  free(h);
  char pidstr[16];
  snprintf(pidstr, sizeof pidstr, "%d", (int)pid);

  tool_run_t r;
  run_tool(&r, "-n", "1", "-i", "0.01", pidstr);
  check_exit(&r, 0, "live view");
  if (old_enough) {
    const char *up = strstr(r.out, " up 1:05:"); /* 1:05:07.5, or later if slow */
    CHECK_MSG(up && up[9] >= '0' && up[9] <= '5' && up[10] >= '0' && up[10] <= '9' && up[11] == '.',
              "uptime not h:mm:ss.t: %s", r.out);
  } else
    printf("the machine is up for less than 1 h 5 min: uptime format not checked\n");
  tool_free(&r);

  jval_t *j = snapshot_json(pid);
  CHECK_EQ_U(jget(j, "entries")->n, 1);
  CHECK_EQ_U(ju(j, "in_use"), 1);
  jfree(j);
  run_tool(&r, "-j", "-a", pidstr, NULL, NULL);
  check_exit(&r, 0, "-j -a");
  j = jparse(r.out);
  const jval_t *es = jget(j, "entries");
  CHECK_EQ_U(es->n, 3);
  CHECK_EQ_U(ju(es->items[0], "in_use"), 0);
  CHECK_EQ_U(ju(es->items[1], "in_use"), 1);
  CHECK_EQ_I(ji(es->items[1], "tid"), 4242);
  CHECK_EQ_U(ju(es->items[2], "in_use"), 0);
  jfree(j);
  tool_free(&r);
  reap(pid);
}

TEST(garbage) {
  sstm_rng_t rng;
  sstm_rng_seed(&rng, sstm_test_seed());
  size_t n;

  /* Random junk of a plausible size. */
  size_t jn = sizeof(sstm_stt_header_t) + 4 * sizeof(sstm_stt_entry_t);
  unsigned char *junk = malloc(jn);
  CHECK_NOT_NULL(junk);
  for (size_t i = 0; i < jn; i++)
    junk[i] = (unsigned char)sstm_rng_next(&rng);
  junk[0] = 'x'; /* never the magic */
  {
    hold_t hj = {.buf = junk, .n = jn, .keep_pid = true};
    expect_error_held(&hj, "bad magic", "junk");
    hj.n = 100;
    expect_error_held(&hj, "truncated", "100 bytes");
    hj.n = 0;
    expect_error_held(&hj, "truncated", "empty");
  }

  sstm_stt_header_t *h = fake_table(4, &n);
  h->version = 99;
  expect_error(h, n, "version 99", "version");
  free(h);
  h = fake_table(4, &n);
  h->version = 3; /* the last file-based version */
  expect_error(h, n, "version 3", "version 3");
  free(h);
  h = fake_table(4, &n);
  h->entry_size = 100;
  expect_error(h, n, "entry_size 100", "entry_size");
  free(h);
  h = fake_table(4, &n);
  h->nentries = 1000; /* the table holds 4 */
  expect_error(h, n, "1000 entries", "nentries beyond the table");
  free(h);
  h = fake_table(4, &n);
  h->nentries = 0xffffffffu; /* nentries * entry_size overflows 32 bits */
  expect_error(h, n, "entries", "nentries overflow");
  free(h);
  {
    h = fake_table(4, &n);
    h->pid = 1;
    hold_t hp = {.buf = h, .n = n, .keep_pid = true};
    expect_error_held(&hp, "belongs to pid 1", "pid mismatch");
    free(h);
  }
  h = fake_table(4, &n);
  h->nreasons = 1000;
  expect_error(h, n, "abort reasons", "nreasons");
  free(h);
  h = fake_table(4, &n);
  h->nreasons = SSTM_STT_REASONS + 1; /* one more than the arrays hold */
  expect_error(h, n, "abort reasons", "nreasons one past the end");
  free(h);
  /* A last reason the table does not name (nreasons 3, reason 3): "?", even
   * with a name in the slot past the count. */
  {
    h = fake_table(4, &n);
    snprintf(h->reason_names[0], sizeof h->reason_names[0], "zero");
    snprintf(h->reason_names[3], sizeof h->reason_names[3], "bogus");
    sstm_stt_entry_t *e0 = (sstm_stt_entry_t *)(void *)(h + 1);
    e0->in_use = 1;
    e0->aborts = 2;
    e0->last_reason = 3;
    e0[1].in_use = 1;
    e0[1].aborts = 1;
    e0[1].last_reason = 0;
    pid_t pid = hold_table(h, n);
    free(h);
    jval_t *jj = snapshot_json(pid);
    CHECK_EQ_STR(js(jget(jj, "entries")->items[0], "last_reason_name"), "?");
    CHECK_EQ_STR(js(jget(jj, "entries")->items[1], "last_reason_name"), "zero");
    jfree(jj);
    reap(pid);
  }
  h = fake_table(4, &n);
  h->magic = 0;
  expect_error(h, n, "not initialised", "magic 0");
  free(h);
  h = fake_table(4, &n);
  h->header_size += 8; /* a header of another layout */
  expect_error(h, n, "header_size", "header_size");
  free(h);
  /* A table larger than any table could be (sparse): refused, with a
   * message. */
  {
    h = fake_table(4, &n);
    hold_t hh = {
        .buf = h, .n = n, .size = sizeof(sstm_stt_header_t) + 40000 * sizeof(sstm_stt_entry_t)};
    expect_error_held(&hh, "implausible size", "implausible size");
    free(h);
  }

  /* A valid header over junk: strings without NUL, control characters,
   * random entries. The tool must print valid JSON. */
  h = fake_table(4, &n);
  unsigned char *raw = (unsigned char *)h;
  for (size_t i = offsetof(sstm_stt_header_t, config); i < n; i++)
    raw[i] = (unsigned char)sstm_rng_next(&rng);
  h->nreasons = SSTM_STT_REASONS;
  h->cm_info_seq = 0;
  /* the executor area where it belongs, its content junk too */
  h->exec_offset = (uint32_t)(sizeof(sstm_stt_header_t) + 4 * sizeof(sstm_stt_entry_t));
  h->exec_size = sizeof(sstm_stt_exec_t);
  sstm_stt_entry_t *e = (sstm_stt_entry_t *)(void *)(h + 1);
  for (int i = 0; i < 4; i++) {
    e[i].in_use = 1;
    e[i].last_reason = 0xfffffff0u + (unsigned)i;
    e[i].action = 0x7fffffffu;
  }
  pid_t pid = hold_table(h, n);
  free(h);
  char p[16];
  snprintf(p, sizeof p, "%d", (int)pid);
  tool_run_t r;
  run_tool(&r, "-j", p, NULL, NULL, NULL);
  check_exit(&r, 0, "valid header, junk content");
  jval_t *j = jparse(r.out);
  CHECK_EQ_U(ju(j, "in_use"), 4);
  CHECK_EQ_U(jget(j, "entries")->n, 4);
  CHECK_EQ_STR(js(jget(j, "entries")->items[0], "action_name"), "?");
  jfree(j);
  tool_free(&r);
  run_tool(&r, "-a", "-n2", "-i", "0.01", p);
  check_exit(&r, 0, "live view of junk");
  tool_free(&r);

  /* A table whose pid is alive is listed; once the pid is gone it is not. */
  run_tool(&r, "-l", NULL, NULL, NULL, NULL);
  check_exit(&r, 0, "-l");
  CHECK_EQ_I(listed_threads(r.out, pid), 4);
  tool_free(&r);
  reap(pid);
  run_tool(&r, "-l", NULL, NULL, NULL, NULL);
  check_exit(&r, 0, "-l after the pid exited");
  CHECK_EQ_I(listed_threads(r.out, pid), -1);
  tool_free(&r);

  /* cm_info: read between two equal even sequence numbers; a writer stuck
   * half-way (odd number) gives a placeholder and "cm_info_consistent":
   * false, not a half-written line; the live view shows the placeholder. */
  for (int odd = 0; odd < 2; odd++) {
    h = fake_table(4, &n);
    snprintf(h->cm_info, sizeof h->cm_info, "current=x reason=y");
    h->cm_info_seq = 6 + (uint32_t)odd;
    pid = hold_table(h, n);
    free(h);
    snprintf(p, sizeof p, "%d", (int)pid);
    run_tool(&r, "-j", p, NULL, NULL, NULL);
    check_exit(&r, 0, "cm_info");
    j = jparse(r.out);
    CHECK_EQ_STR(js(j, "cm_info"), odd ? "(inconsistent: being rewritten)" : "current=x reason=y");
    CHECK_EQ_I(jget(j, "cm_info_consistent")->t, J_BOOL);
    CHECK_EQ_I(jget(j, "cm_info_consistent")->b, !odd);
    jfree(j);
    tool_free(&r);
    run_tool(&r, "-n", "1", "-i", "0.01", p);
    check_exit(&r, 0, "cm_info, live view");
    CHECK_CONTAINS(r.out, odd ? "policy now: (inconsistent: being rewritten)"
                              : "policy now: current=x reason=y");
    tool_free(&r);
    reap(pid);
  }
  free(junk);
}

/* A policy line whose sequence number stays odd (its writer stopped
 * half-way) used to cost the tool 1000 sched_yield calls per read: on a
 * loaded host each can give the CPU away for a whole time slice (tens of
 * seconds for one -j: docs/benchmarks.md, "Figures behind the design").
 * The wait is bounded in time now. Here the tool shares one CPU
 * with busy processes: the old loop took tens of seconds there and died of
 * the watchdog (20 s); no time is asserted, the figure is printed. */
TEST(cm_info_wait_is_bounded) {
  size_t n;
  sstm_stt_header_t *h = fake_table(2, &n);
  snprintf(h->cm_info, sizeof h->cm_info, "current=x reason=y");
  h->cm_info_seq = 7;
  pid_t pid = hold_table(h, n);
  free(h);
  char p[16];
  snprintf(p, sizeof p, "%d", (int)pid);
  cpu_set_t old, one;
  CHECK_EQ_I(sched_getaffinity(0, sizeof old, &old), 0);
  int cpu = -1;
  for (int i = 0; i < CPU_SETSIZE && cpu < 0; i++)
    if (CPU_ISSET(i, &old)) cpu = i;
  CHECK_GE_I(cpu, 0);
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  /* children inherit the affinity: the spinners and the tool */
  CHECK_EQ_I(sched_setaffinity(0, sizeof one, &one), 0);
  enum { SPINNERS = 6 };
  pid_t spin[SPINNERS];
  for (int i = 0; i < SPINNERS; i++) {
    fflush(stdout);
    fflush(stderr);
    spin[i] = sstm_test_fork();
    CHECK_GE_I(spin[i], 0);
    if (spin[i] == 0)
      for (;;) {
      }
  }
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  tool_run_t r;
  run_tool_bounded(&r, "-j", p, NULL, NULL, NULL);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  for (int i = 0; i < SPINNERS; i++)
    reap(spin[i]);
  CHECK_EQ_I(sched_setaffinity(0, sizeof old, &old), 0);
  check_exit(&r, 0, "-j, a policy line stuck odd, a busy CPU");
  jval_t *j = jparse(r.out);
  CHECK_EQ_STR(js(j, "cm_info"), "(inconsistent: being rewritten)");
  CHECK_FALSE(jget(j, "cm_info_consistent")->b);
  jfree(j);
  tool_free(&r);
  printf("sstm-top -j with a stuck policy line, sharing a CPU with %d busy processes: %.3f s\n",
         SPINNERS, (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
  reap(pid);
}

/* Only who may inspect the process reads its table: the kernel's check on
 * /proc/PID/fd. A process that is not dumpable is closed to its own user
 * too; as root (which may inspect anything) the tool runs as nobody. */
TEST(permission) {
  size_t n;
  sstm_stt_header_t *h = fake_table(2, &n);
  bool root = geteuid() == 0;
  hold_t hd = {.buf = h, .n = n, .undumpable = !root};
  pid_t pid = holder(&hd);
  free(h);
  char p[16];
  snprintf(p, sizeof p, "%d", (int)pid);
  tool_run_t r;
  run_tool_as(&r, root ? 65534 : -1, 0, "-j", p, NULL, NULL, NULL);
  if (WIFEXITED(r.status) && (WEXITSTATUS(r.status) == 125 || WEXITSTATUS(r.status) == 126)) {
    tool_free(&r);
    reap(pid);
    sstm_test_skip("cannot run sstm-top as an unprivileged user here");
  }
  check_exit(&r, 1, "unreadable table");
  CHECK_CONTAINS(r.err, "permission denied");
  tool_free(&r);
  /* -l passes over it without a word */
  run_tool_as(&r, root ? 65534 : -1, 0, "-l", NULL, NULL, NULL, NULL);
  check_exit(&r, 0, "-l, an unreadable table");
  CHECK_EQ_I(listed_threads(r.out, pid), -1);
  tool_free(&r);
  reap(pid);
}

/* ---- a FIFO behind a table's name ------------------------------------------ */

/* A tmpfs of 64 KiB mounted nowhere (fsopen, fsmount): the descriptor of
 * its root, or -1 where the kernel, the C library's headers or the
 * caller's privileges do not allow it. No mount namespace is involved, so
 * it works in a chroot too (where "/" is not a mount point that could be
 * made private), and nothing any other process sees changes. */
static int detached_tmpfs(void) {
#if defined(FSMOUNT_CLOEXEC) && defined(FSOPEN_CLOEXEC) && defined(SYS_fsopen) &&                  \
    defined(SYS_fsconfig) && defined(SYS_fsmount)
  int fs = (int)syscall(SYS_fsopen, "tmpfs", FSOPEN_CLOEXEC);
  if (fs < 0) return -1;
  int m = -1;
  if (syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "size", "64k", 0) == 0 &&
      syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) == 0)
    m = (int)syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
  close(fs);
  return m;
#else
  return -1;
#endif
}

/* Open a FIFO (fifo) or a regular file without seals whose descriptor's
 * link reads exactly like a table's (SSTM_STT_FD_LINK); -1 on failure. In
 * a child of sstm_test_fork(): async-signal-safe calls only.
 *
 * The file is made at SSTM_STT_MEMFD_NAME in the root of a tmpfs that is
 * mounted nowhere (detached_tmpfs): the link of a file in a detached mount
 * is its path from that mount's root, "/memfd:schedstm-statetab
 * (deleted)", whoever reads it. Nothing is ever created in a file system
 * that another process sees, so two runs of this test at once (two builds'
 * suites on one host) cannot meet. Where no such mount can be made, the
 * file is made at the name in the real root instead, under an exclusive
 * lock on a file next to it that every run takes (flock), from before it
 * removes a stale file there to after its own is unlinked. (A tmpfs
 * mounted on /tmp in a mount namespace of the child's own, then detached,
 * did the same, but not in a chroot: there the mounts fail after the
 * namespace is made, and a file made in the root then reads, to the
 * parent in the first namespace, with the chroot's path in front.) */
static int open_at_table_name(bool fifo) {
  static const char name[] = "memfd:" SSTM_STT_MEMFD_NAME;
  static const char global[] = "/memfd:" SSTM_STT_MEMFD_NAME;
  int dir = detached_tmpfs();
  const char *at = dir >= 0 ? name : global;
  int at_dir = dir >= 0 ? dir : AT_FDCWD;
  int lk = -1;
  if (dir < 0) {
    lk = open("/tmp/schedstm-test-statetab-fifo.lock", O_RDONLY | O_CREAT | O_CLOEXEC, 0600);
    if (lk < 0 || flock(lk, LOCK_EX) != 0) return -1;
    unlink(at); /* a stale one, left by a run that was killed */
  }
  int fd = -1;
  if (fifo) {
    if (mkfifoat(at_dir, at, 0600) == 0)
      fd = openat(at_dir, at, O_RDWR | O_NONBLOCK); /* O_RDWR: opens at once */
  } else {
    int w = openat(at_dir, at, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (w >= 0) {
      if (write(w, "x", 1) == 1) fd = openat(at_dir, at, O_RDWR | O_NONBLOCK);
      close(w);
    }
  }
  bool ok = fd >= 0 && unlinkat(at_dir, at, 0) == 0;
  if (dir >= 0) close(dir); /* the mount stays as long as the file is open */
  if (lk >= 0) close(lk);   /* the lock goes with its last descriptor */
  return ok ? fd : -1;
}

/* A descriptor whose link reads exactly like the table's can be made by
 * root (open_at_table_name). Opening a FIFO would wait for a writer
 * forever: every mode must refuse it at once (a tool that blocks dies of
 * its watchdog's SIGALRM, which check_exit reports); a regular file
 * without seals is refused too. */
TEST(fifo) {
  if (geteuid() != 0) sstm_test_skip("needs root (a file named like the table)");
  for (int fifo = 1; fifo >= 0; fifo--) {
    fflush(stdout);
    fflush(stderr);
    int ready[2];
    CHECK_EQ_I(pipe2(ready, O_CLOEXEC), 0);
    pid_t pid = sstm_test_fork();
    CHECK_GE_I(pid, 0);
    if (pid == 0) {
      if (open_at_table_name(fifo) < 0 || write(ready[1], "k", 1) != 1) _exit(3);
      for (;;)
        pause();
    }
    CHECK_EQ_I(close(ready[1]), 0);
    char c = 0;
    CHECK_MSG(read(ready[0], &c, 1) == 1, "the child could not open a %s named like the table",
              fifo ? "FIFO" : "file");
    CHECK_EQ_I(close(ready[0]), 0);
    CHECK_GE_I(table_fd_of(pid), 0); /* the link reads like a table's */
    char p[16];
    snprintf(p, sizeof p, "%d", (int)pid);
    const char *want = fifo ? "not a regular file" : "not sealed against shrinking";
    tool_run_t r;
    run_tool_bounded(&r, "-j", p, NULL, NULL, NULL);
    check_exit(&r, 1, "-j, a FIFO as the table");
    CHECK_CONTAINS(r.err, want);
    CHECK_EQ_STR(r.out, "");
    tool_free(&r);
    run_tool_bounded(&r, "-n", "1", "-i", "0.01", p);
    check_exit(&r, 1, "live view, a FIFO as the table");
    CHECK_CONTAINS(r.err, want);
    tool_free(&r);
    /* The listing goes on: the pid's line gives the reason. */
    run_tool_bounded(&r, "-l", NULL, NULL, NULL, NULL);
    check_exit(&r, 0, "-l, a FIFO as a table");
    CHECK_EQ_I(listed_threads(r.out, pid), 0);
    CHECK_CONTAINS(r.out, want);
    tool_free(&r);
    reap(pid);
  }
}

/* ---- the table of a process that was killed ------------------------------- */

/* pid is a zombie (state Z in /proc/PID/stat; comm may hold ')'). */
static bool is_zombie(pid_t pid) {
  char path[64], buf[512];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  FILE *f = fopen(path, "re");
  if (f == NULL) return false;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  const char *p = strrchr(buf, ')');
  return p && p[1] == ' ' && p[2] == 'Z';
}

/* A child with the library and a table, one thread registered, running
 * until killed. */
static pid_t table_child(void) {
  int ready[2];
  CHECK_EQ_I(pipe2(ready, O_CLOEXEC), 0);
  fflush(stdout);
  fflush(stderr);
  pid_t pid = sstm_test_fork();
  CHECK_GE_I(pid, 0);
  if (pid == 0) {
    sstm_config_t c;
    sstm_test_config(&c);
    c.state_table = true;
    if (sstm_init(&c) != 0 || sstm_thread_init() != 0 || sstm_run(NULL, bump_fn, NULL) != 0)
      _exit(3);
    if (write(ready[1], "k", 1) != 1) _exit(4);
    for (;;)
      pause();
  }
  CHECK_EQ_I(close(ready[1]), 0);
  char c = 0;
  CHECK_EQ_I(read(ready[0], &c, 1), 1);
  CHECK_EQ_I(close(ready[0]), 0);
  return pid;
}

/* The table goes with its process: the live view of a process that is
 * killed ends, saying so; a zombie's pid and a reaped one's have no table,
 * with the reason. (Versions 1-3 left the table behind as a file.) */
TEST(exited_process) {
  pid_t pid = table_child();
  char p[16];
  snprintf(p, sizeof p, "%d", (int)pid);
  jval_t *j = snapshot_json(pid);
  CHECK_MSG(jget(j, "process_alive")->t == J_BOOL && jget(j, "process_alive")->b,
            "process_alive false for a live pid");
  CHECK_EQ_U(ju(j, "in_use"), 1);
  jfree(j);

  /* No count: a view that does not notice would run until the watchdog. */
  tool_proc_t tp;
  tool_start(&tp, -1, 20, false, "-i", "0.01", p, NULL, NULL);
  for (;;) { /* until its first frame */
    char *out = tool_output_so_far(&tp);
    bool framed = strstr(out, "total:") != NULL;
    free(out);
    if (framed) break;
    int st;
    pid_t w = waitpid(tp.pid, &st, WNOHANG);
    CHECK_GE_I(w, 0);
    if (w == tp.pid) {
      tool_run_t r;
      tool_collect(&tp, st, &r);
      CHECK_MSG(false, "the live view ended before its first frame: %s", r.err);
    }
    usleep(1000);
  }
  /* Killed but not reaped: a zombie has exited too. */
  CHECK_EQ_I(kill(pid, SIGKILL), 0);
  /* no time limit: a SIGKILLed child becomes a zombie, however loaded the
   * machine (the watchdog would end a wait that did not) */
  while (!is_zombie(pid))
    usleep(1000);
  tool_run_t r;
  tool_wait(&tp, &r);
  check_exit(&r, 0, "live view, the process killed");
  CHECK_CONTAINS(r.err, "state table removed (process exited)");
  tool_free(&r);
  run_tool(&r, "-j", p, NULL, NULL, NULL);
  check_exit(&r, 1, "-j, zombie");
  CHECK_CONTAINS(r.err, "the process has exited");
  tool_free(&r);
  int st;
  while (waitpid(pid, &st, 0) < 0)
    CHECK_EQ_I(errno, EINTR);
  run_tool(&r, "-j", p, NULL, NULL, NULL);
  check_exit(&r, 1, "-j, exited process");
  CHECK_CONTAINS(r.err, "no such process");
  tool_free(&r);
}

/* ---- removing the files of versions 1-3 ------------------------------------ */

/* The start of a table file of version 3, for pid. */
static void *legacy_table(int pid, size_t *size) {
  void *h = fake_table(2, size);
  ((sstm_stt_header_t *)h)->version = 3;
  ((sstm_stt_header_t *)h)->pid = pid;
  return h;
}

/* The files of versions 1-3 are in /dev/shm, which every process of the
 * host shares, and -c removes every one of ours whose pid has exited:
 * another run of clean_stale at the same time (another build's suite)
 * would meet this one's files (the one of pid 0 has a fixed name) and
 * remove those of its exited pids. So the test gets a /dev/shm of its
 * own: a tmpfs mounted there in a mount namespace of the test process
 * (which has no threads; the tool, its child, sees the same). Where no
 * mount is allowed, it takes an exclusive lock that every run takes,
 * held until the process ends. */
static void private_dev_shm(void) {
  if (unshare(CLONE_NEWNS) == 0 && mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0 &&
      mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "size=1m") == 0)
    return;
  char lock[64];
  snprintf(lock, sizeof lock, "/tmp/schedstm-test-statetab-shm.%d.lock", (int)geteuid());
  int lk = open(lock, O_RDONLY | O_CREAT | O_CLOEXEC, 0600);
  CHECK_MSG(lk >= 0, "%s: %s", lock, strerror(errno));
  CHECK_EQ_I(flock(lk, LOCK_EX), 0); /* released when the process ends */
}

/* -c removes a regular file of ours whose pid is gone and that starts with
 * a table header of versions 1-3, and nothing else: a live pid's table,
 * junk under a table's name, a symbolic link under a dead pid's name (and
 * its target), another user's table (as root), a file named for pid 0 are
 * kept, with the reason. */
TEST(clean_stale) {
  private_dev_shm();
  pid_t live = sleeper(), dead = sleeper(), dead_link = sleeper(), dead_other = sleeper(),
        dead_junk = sleeper();
  char live_path[64], dead_path[64], link_path[64], other_path[64], junk_path[64], want[200];
  snprintf(live_path, sizeof live_path, SSTM_STT_LEGACY_PATH_FMT, (int)live);
  snprintf(dead_path, sizeof dead_path, SSTM_STT_LEGACY_PATH_FMT, (int)dead);
  snprintf(link_path, sizeof link_path, SSTM_STT_LEGACY_PATH_FMT, (int)dead_link);
  snprintf(other_path, sizeof other_path, SSTM_STT_LEGACY_PATH_FMT, (int)dead_other);
  snprintf(junk_path, sizeof junk_path, SSTM_STT_LEGACY_PATH_FMT, (int)dead_junk);
  size_t n;
  sstm_stt_header_t *h = legacy_table(live, &n);
  write_file(live_path, h, n, 0600);
  h->pid = dead;
  write_file(dead_path, h, n, 0600);
  char zero_path[64];
  snprintf(zero_path, sizeof zero_path, SSTM_STT_LEGACY_PATH_FMT, 0);
  write_file(zero_path, h, n, 0600);
  static const char junk[] = "a file of someone else's that happens to have this name";
  write_file(junk_path, junk, sizeof junk, 0600);
  char target[] = "/tmp/sstm-clean-target-XXXXXX";
  int tfd = mkstemp(target);
  CHECK_GE_I(tfd, 0);
  CHECK_EQ_I(close(tfd), 0);
  unlink(link_path);
  CHECK_EQ_I(symlink(target, link_path), 0);
  bool root = geteuid() == 0;
  if (root) {
    h->pid = dead_other;
    write_file(other_path, h, n, 0600);
    CHECK_EQ_I(chown(other_path, 65534, 65534), 0);
  }
  free(h);
  reap(dead);
  reap(dead_link);
  reap(dead_other);
  reap(dead_junk);

  tool_run_t r;
  run_tool(&r, "-c", NULL, NULL, NULL, NULL);
  check_exit(&r, 0, "-c");
  struct stat st;
  CHECK_CONTAINS(r.out, "memfds that go with their process");
  snprintf(want, sizeof want, "removed %s (pid %d has exited", dead_path, (int)dead);
  CHECK_CONTAINS(r.out, want);
  CHECK_MSG(stat(dead_path, &st) != 0 && errno == ENOENT, "%s is still there", dead_path);
  CHECK_MSG(strstr(r.out, live_path) == NULL, "-c names a live pid's table: %s", r.out);
  CHECK_EQ_I(stat(live_path, &st), 0);
  snprintf(want, sizeof want, "kept %s: not a schedstm state table", junk_path);
  CHECK_CONTAINS(r.out, want);
  CHECK_EQ_I(stat(junk_path, &st), 0);
  snprintf(want, sizeof want, "kept %s: not a regular file", link_path);
  CHECK_CONTAINS(r.out, want);
  CHECK_EQ_I(lstat(link_path, &st), 0);
  CHECK_EQ_I(stat(target, &st), 0);
  CHECK_EQ_I(stat(zero_path, &st), 0); /* pid 0 names no process: not a table name */
  CHECK_MSG(strstr(r.out, zero_path) == NULL, "-c names %s: %s", zero_path, r.out);
  if (root) {
    snprintf(want, sizeof want, "kept %s: belongs to uid 65534", other_path);
    CHECK_CONTAINS(r.out, want);
    CHECK_EQ_I(stat(other_path, &st), 0);
  }
  CHECK_CONTAINS(r.out, "stale table(s) removed");
  tool_free(&r);

  /* Nothing left of ours: a second run removes nothing of these. */
  run_tool(&r, "-c", NULL, NULL, NULL, NULL);
  check_exit(&r, 0, "-c again");
  CHECK_MSG(strstr(r.out, "removed /") == NULL || strstr(r.out, dead_path) == NULL, "second -c: %s",
            r.out);
  tool_free(&r);

  /* usage: no pid, no other mode with it */
  run_tool(&r, "-c", "1", NULL, NULL, NULL);
  check_exit(&r, 2, "-c with a pid");
  tool_free(&r);
  run_tool(&r, "-c", "-l", NULL, NULL, NULL);
  check_exit(&r, 2, "-c with -l");
  tool_free(&r);

  CHECK_EQ_I(unlink(live_path), 0);
  CHECK_EQ_I(unlink(link_path), 0);
  CHECK_EQ_I(unlink(zero_path), 0);
  CHECK_EQ_I(unlink(junk_path), 0);
  CHECK_EQ_I(unlink(target), 0);
  if (root) CHECK_EQ_I(unlink(other_path), 0);
  reap(live);
}

/* ---- the table changed while the tool reads it -------------------------- */

/* The inode of the table that process pid holds. */
static unsigned long table_ino_of(pid_t pid) {
  int fd = open_table_of(pid, O_RDONLY);
  struct stat st;
  CHECK_EQ_I(fstat(fd, &st), 0);
  CHECK_EQ_I(close(fd), 0);
  return (unsigned long)st.st_ino;
}

#if defined(__x86_64__)
/* Where the table of inode ino is mapped in process pid, 0 if it is not
 * (the tool may map other processes' tables too: -l). */
static unsigned long mapped_at(pid_t pid, unsigned long ino) {
  char maps[64], line[512];
  snprintf(maps, sizeof maps, "/proc/%d/maps", (int)pid);
  FILE *f = fopen(maps, "re");
  CHECK_NOT_NULL(f);
  unsigned long at = 0;
  while (at == 0 && fgets(line, sizeof line, f)) {
    unsigned long start, inode;
    char name[256] = "";
    /* start-end perms offset dev inode name */
    if (sscanf(line, "%lx-%*x %*s %*x %*s %lu %255[^\n]", &start, &inode, name) == 3 &&
        inode == ino && strcmp(name, SSTM_STT_FD_LINK) == 0)
      at = start;
  }
  fclose(f);
  return at;
}

#define DEBUGREG(i) ((void *)offsetof(struct user, u_debugreg[i]))
#endif

/* Run sstm-top (args as for run_tool) under ptrace, and call change(held)
 * at the moment the tool has read the header's nentries of the table that
 * process held holds for the first time (open_one validating it) and
 * nothing after it: a hardware watchpoint on that field, armed when the
 * tool closes a descriptor with that table mapped (the close after
 * open_one's mmap). The tool stays stopped while the table changes:
 * deterministic, no timing. Returns false, after reaping the tool, where
 * this cannot be done (not x86-64, ptrace refused, debug registers
 * refused, or a watchpoint that never fires): skip the test. */
static bool run_tool_changing(tool_run_t *r, pid_t held, void (*change)(pid_t held), const char *a1,
                              const char *a2, const char *a3, const char *a4, const char *a5) {
#if !defined(__x86_64__)
  (void)held, (void)change, (void)a1, (void)a2, (void)a3, (void)a4, (void)a5;
  *r = (tool_run_t){0, NULL, NULL}; /* for tool_free */
  return false;
#else
  unsigned long ino = table_ino_of(held);
  tool_proc_t p;
  tool_start(&p, -1, 0, true, a1, a2, a3, a4, a5);
  pid_t pid = p.pid;
  int st;
  while (waitpid(pid, &st, 0) < 0)
    CHECK_EQ_I(errno, EINTR);
  bool ok = WIFSTOPPED(st); /* the stop at exec; else exit 125: no ptrace */
  CHECK_MSG(ok || (WIFEXITED(st) && WEXITSTATUS(st) == 125), "cannot execute %s (status %d)",
            SSTM_TOP_PATH, st);
  if (ok) {
    CHECK_EQ_I(
        ptrace(PTRACE_SETOPTIONS, pid, NULL,
               (void *)(long)(PTRACE_O_TRACESYSGOOD | PTRACE_O_TRACEEXEC | PTRACE_O_EXITKILL)),
        0);
    int phase = 0; /* 0: system-call stops until the table is mapped, 1: watching, 2: changed */
    int sig = 0;
    for (;;) {
      CHECK_EQ_I(ptrace(phase == 0 ? PTRACE_SYSCALL : PTRACE_CONT, pid, NULL, (void *)(long)sig),
                 0);
      sig = 0;
      while (waitpid(pid, &st, 0) < 0)
        CHECK_EQ_I(errno, EINTR);
      if (!WIFSTOPPED(st)) break; /* exited or killed */
      int s = WSTOPSIG(st);
      if (s == (SIGTRAP | 0x80)) { /* a system call (phase 0 only) */
        struct user_regs_struct regs;
        CHECK_EQ_I(ptrace(PTRACE_GETREGS, pid, NULL, &regs), 0);
        unsigned long base = regs.orig_rax == SYS_close ? mapped_at(pid, ino) : 0;
        if (base == 0) continue;
        /* DR0: the 4 bytes of nentries; DR7: local enable 0, break on
         * read or write (RW0 = 11), length 4 (LEN0 = 11). */
        unsigned long field = base + offsetof(sstm_stt_header_t, nentries);
        if (ptrace(PTRACE_POKEUSER, pid, DEBUGREG(0), (void *)field) != 0 ||
            ptrace(PTRACE_POKEUSER, pid, DEBUGREG(7), (void *)0xf0001ul) != 0) {
          ok = false; /* no debug registers here */
          CHECK_EQ_I(kill(pid, SIGKILL), 0);
          do {
            while (waitpid(pid, &st, 0) < 0)
              CHECK_EQ_I(errno, EINTR);
          } while (!WIFEXITED(st) && !WIFSIGNALED(st));
          break;
        }
        phase = 1;
        continue;
      }
      if (st >> 16) continue; /* an event stop (a re-exec): nothing to deliver */
      if (s == SIGTRAP && phase == 1 &&
          (ptrace(PTRACE_PEEKUSER, pid, DEBUGREG(6), NULL) & 1) != 0) { /* DR6.B0: ours */
        change(held);
        CHECK_EQ_I(ptrace(PTRACE_POKEUSER, pid, DEBUGREG(7), NULL), 0);
        /* Let the tool run on its own, as in real use (LeakSanitizer's
         * check at exit, in sanitizer builds, cannot run under ptrace). */
        CHECK_EQ_I(ptrace(PTRACE_DETACH, pid, NULL, NULL), 0);
        phase = 2;
        do {
          while (waitpid(pid, &st, 0) < 0)
            CHECK_EQ_I(errno, EINTR);
        } while (!WIFEXITED(st) && !WIFSIGNALED(st));
        break;
      }
      sig = s; /* the tool's own signal: deliver it */
    }
    /* Armed but never hit: no working watchpoints here (the tool always
     * reads nentries after mapping the table). Never mapped: the tool
     * failed before, which the caller's checks report. */
    if (phase == 1) ok = false;
  }
  tool_collect(&p, st, r);
  return ok;
#endif
}

/* The header says 1000 entries; the table holds 4. */
static void grow_nentries(pid_t held) {
  int fd = open_table_of(held, O_WRONLY);
  uint32_t n = 1000;
  CHECK_EQ_I(pwrite(fd, &n, sizeof n, offsetof(sstm_stt_header_t, nentries)), (long long)sizeof n);
  CHECK_EQ_I(close(fd), 0);
}

/* Try to truncate the table, as anyone who can open it may: the seal
 * refuses (the same truncation of an unsealed file was a SIGBUS in the
 * tool, or in the program at its next entry write). */
static void truncate_table(pid_t held) {
  int fd = open_table_of(held, O_RDWR);
  errno = 0;
  CHECK_EQ_I(ftruncate(fd, 0), -1);
  CHECK_EQ_I(errno, EPERM);
  CHECK_EQ_I(close(fd), 0);
}

/* One tool run over a table held by process held, changed by change once
 * the tool has validated nentries; skips the test (after cleaning up)
 * where the tool cannot be stopped there. */
static void changed_run(tool_run_t *r, pid_t held, void (*change)(pid_t), const char *a1,
                        const char *a2, const char *a3, const char *a4, const char *a5) {
  if (run_tool_changing(r, held, change, a1, a2, a3, a4, a5)) return;
  tool_free(r);
  reap(held);
  sstm_test_skip("cannot stop sstm-top at its read of nentries (needs x86-64, ptrace and "
                 "hardware watchpoints)");
}

/* A fake table of 4 entries in use, held by a new child. */
static pid_t hold_four(void) {
  size_t n;
  sstm_stt_header_t *h = fake_table(4, &n);
  sstm_stt_entry_t *e = (sstm_stt_entry_t *)(void *)(h + 1);
  for (int i = 0; i < 4; i++)
    e[i].in_use = 1, e[i].slot = (uint32_t)i;
  pid_t pid = hold_table(h, n);
  free(h);
  return pid;
}

/* nentries grows after open_one validated it: the tool keeps the
 * validated count (a re-read one would take the entry loops beyond the
 * 4 entries mapped: SIGBUS or SIGSEGV). */
TEST(header_changed) {
  tool_run_t r;
  char p[16];
  pid_t pid = hold_four();
  snprintf(p, sizeof p, "%d", (int)pid);
  changed_run(&r, pid, grow_nentries, "-j", p, NULL, NULL, NULL);
  check_exit(&r, 0, "-j, nentries grown after validation");
  jval_t *j = jparse(r.out);
  CHECK_EQ_U(ju(j, "nentries"), 4);
  CHECK_EQ_U(ju(j, "in_use"), 4);
  CHECK_EQ_U(jget(j, "entries")->n, 4);
  jfree(j);
  tool_free(&r);
  reap(pid);
  pid = hold_four();
  snprintf(p, sizeof p, "%d", (int)pid);
  changed_run(&r, pid, grow_nentries, "-n", "1", "-i", "0.01", p);
  check_exit(&r, 0, "live view, nentries grown after validation");
  CHECK_CONTAINS(r.out, "threads 4/4 ");
  tool_free(&r);
  reap(pid);
  pid = hold_four();
  changed_run(&r, pid, grow_nentries, "-l", NULL, NULL, NULL, NULL);
  check_exit(&r, 0, "-l, nentries grown after validation");
  CHECK_EQ_I(listed_threads(r.out, pid), 4);
  tool_free(&r);
  reap(pid);
}

/* Truncating the table while the tool reads it (which used to be a SIGBUS
 * at the tool's next read) fails: the table is sealed, and the tool reads
 * on. A table without the seal is refused before it is mapped, so no
 * truncation can reach the tool; the listing names it and goes on. */
TEST(truncated_while_read) {
  tool_run_t r;
  char p[16];
  pid_t pid = hold_four();
  snprintf(p, sizeof p, "%d", (int)pid);
  changed_run(&r, pid, truncate_table, "-l", NULL, NULL, NULL, NULL);
  check_exit(&r, 0, "-l, table truncated while read");
  CHECK_EQ_I(listed_threads(r.out, pid), 4);
  tool_free(&r);
  changed_run(&r, pid, truncate_table, "-j", p, NULL, NULL, NULL);
  check_exit(&r, 0, "-j, table truncated while read");
  jval_t *j = jparse(r.out);
  CHECK_EQ_U(ju(j, "in_use"), 4);
  jfree(j);
  tool_free(&r);
  changed_run(&r, pid, truncate_table, "-n", "1", "-i", "0.01", p);
  check_exit(&r, 0, "live view, table truncated while read");
  CHECK_CONTAINS(r.out, "threads 4/4 ");
  tool_free(&r);
  reap(pid);

  size_t n;
  sstm_stt_header_t *h = fake_table(4, &n);
  hold_t unsealed = {.buf = h, .n = n, .seals = -1};
  expect_error_held(&unsealed, "not sealed against shrinking", "an unsealed table");
  pid = holder(&unsealed);
  free(h);
  run_tool(&r, "-l", NULL, NULL, NULL, NULL);
  check_exit(&r, 0, "-l, an unsealed table");
  CHECK_EQ_I(listed_threads(r.out, pid), 0); /* "-": no count */
  CHECK_CONTAINS(r.out, "not sealed against shrinking");
  tool_free(&r);
  reap(pid);
}

/* The table of a running program cannot be truncated, grown or resealed by
 * another process that can open it (same user): each fails with EPERM, and
 * the program goes on (a truncated table used to kill it with SIGBUS at its
 * next entry write). */
static void *tx_loop(void *arg) {
  CHECK_OK(sstm_thread_init());
  for (int i = 0; i < 1000; i++)
    CHECK_OK(sstm_run(NULL, bump_fn, NULL));
  CHECK_OK(sstm_thread_exit());
  return arg;
}

TEST(table_cannot_shrink) {
  sstm_config_t c;
  sstm_test_config(&c);
  c.state_table = true;
  c.max_threads = 8;
  CHECK_OK(sstm_init(&c));
  accounts[0] = 0;
  pid_t me = getpid();
  fflush(stdout);
  fflush(stderr);
  pid_t pid = sstm_test_fork();
  CHECK_GE_I(pid, 0);
  if (pid == 0) { /* another process: system calls only */
    char path[64];
    int t = -1;
    for (int fd = 0; fd < 1024 && t < 0; fd++) {
      char link[128];
      snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)me, fd);
      ssize_t k = readlink(path, link, sizeof link - 1);
      if (k > 0 && (size_t)k == sizeof SSTM_STT_FD_LINK - 1 &&
          memcmp(link, SSTM_STT_FD_LINK, (size_t)k) == 0)
        t = open(path, O_RDWR | O_CLOEXEC);
    }
    if (t < 0) _exit(3);
    if (ftruncate(t, 0) == 0 || errno != EPERM) _exit(4);
    if (ftruncate(t, 1 << 20) == 0 || errno != EPERM) _exit(5);
    if (fallocate(t, 0, 0, 1 << 20) == 0 || errno != EPERM) _exit(6);
    if (fcntl(t, F_ADD_SEALS, F_SEAL_WRITE) == 0 || errno != EPERM) _exit(7);
    if (fcntl(t, F_GET_SEALS) != TABLE_SEALS) _exit(8);
    _exit(0);
  }
  int st;
  while (waitpid(pid, &st, 0) < 0)
    CHECK_EQ_I(errno, EINTR);
  CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0,
            "another process changed the table (status 0x%x; 3 not found, 4 truncated, 5 grown, "
            "6 extended, 7 resealed, 8 other seals)",
            st);
  /* The program runs on and the table counts. */
  pthread_t th[2];
  for (int i = 0; i < 2; i++)
    CHECK_EQ_I(pthread_create(&th[i], NULL, tx_loop, NULL), 0);
  for (int i = 0; i < 2; i++)
    CHECK_EQ_I(pthread_join(th[i], NULL), 0);
  CHECK_EQ_I(accounts[0], 2000);
  CHECK_OK(sstm_shutdown());
}

/* ---- control bytes --------------------------------------------------------- */

/* Nothing a terminal would act on: printable ASCII and newlines only. */
static void check_printable(const char *s, const char *what) {
  for (const char *c = s; *c; c++) {
    unsigned char b = (unsigned char)*c;
    CHECK_MSG(b == '\n' || (b >= 0x20 && b <= 0x7e), "%s: byte 0x%02x at offset %td of: %s", what,
              b, c - s, s);
  }
}

/* ESC (C0), DEL, raw C1 (0x9b CSI), UTF-8 encoded C1 (c2 9b CSI, c2 85
 * NEL), a Latin-1 byte: each byte becomes '?'. 18 bytes: fits every
 * string field of the table, reason names (20) included. */
static const char ctl_name[] = "A\033[31mB\x9b"
                               "C\xc2\x9b"
                               "D\x7f"
                               "E\xc2\x85"
                               "F\xe9";
static const char ctl_shown[] = "A?[31mB?C??D?E??F?";

TEST(control_bytes) {
  char p[16], want[128];
  size_t n;
  sstm_stt_header_t *h = fake_table(2, &n);
  snprintf(h->config, sizeof h->config, "%s", ctl_name);
  snprintf(h->cm_info, sizeof h->cm_info, "%s", ctl_name);
  snprintf(h->reason_names[1], sizeof h->reason_names[1], "%s", ctl_name);
  snprintf(h->cm_stat_names[0], sizeof h->cm_stat_names[0], "%s", ctl_name);
  sstm_stt_entry_t *e = (sstm_stt_entry_t *)(void *)(h + 1);
  for (int i = 0; i < 2; i++) {
    e[i].in_use = 1;
    e[i].slot = (uint32_t)i;
    e[i].aborts = 1;
    e[i].last_reason = 1;
    snprintf(e[i].cm, sizeof e[i].cm, "%s", ctl_name);
  }
  hold_t hc = {.buf = h, .n = n, .comm = "n\033]0;x\a\x9b"};
  pid_t pid = holder(&hc);
  free(h);
  snprintf(p, sizeof p, "%d", (int)pid);
  tool_run_t r;
  run_tool(&r, "-j", p, NULL, NULL, NULL);
  check_exit(&r, 0, "-j, control bytes");
  check_printable(r.out, "-j");
  /* '?' in the JSON itself, not an escape (\u009b) that a JSON reader
   * would turn back into the control character */
  CHECK_NOT_CONTAINS(r.out, "\\u");
  snprintf(want, sizeof want, "\"config\": \"%s\"", ctl_shown);
  CHECK_CONTAINS(r.out, want);
  snprintf(want, sizeof want, "\"cm_info\": \"%s\"", ctl_shown);
  CHECK_CONTAINS(r.out, want);
  snprintf(want, sizeof want, "\"cm\": \"%s\"", ctl_shown);
  CHECK_CONTAINS(r.out, want);
  snprintf(want, sizeof want, "\"last_reason_name\": \"%s\"", ctl_shown);
  CHECK_CONTAINS(r.out, want);
  jval_t *j = jparse(r.out);
  CHECK_EQ_STR(jget(j, "cm_stat_names")->items[0]->str, ctl_shown);
  jfree(j);
  tool_free(&r);
  run_tool(&r, "-n", "1", "-i", "0.01", p);
  check_exit(&r, 0, "live view, control bytes");
  check_printable(r.out, "live view");
  CHECK_CONTAINS(r.out, ctl_shown);
  tool_free(&r);
  run_tool(&r, "-l", NULL, NULL, NULL, NULL);
  check_exit(&r, 0, "-l, control bytes");
  check_printable(r.out, "-l");
  CHECK_EQ_I(listed_threads(r.out, pid), 2);
  CHECK_CONTAINS(r.out, "n?]0;x?? "); /* the process name */
  CHECK_CONTAINS(r.out, ctl_shown);
  tool_free(&r);
  reap(pid);
}

/* ---- /dev/shm full ----------------------------------------------------------- */

/* Fill /dev/shm with one file, then give back `leave` bytes of it. */
static void fill_shm(const char *fill, off_t leave) {
  int fd = open(fill, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  CHECK_GE_I(fd, 0);
  static char page[4096];
  memset(page, 0x5a, sizeof page);
  off_t size = 0;
  for (;;) {
    ssize_t w = write(fd, page, sizeof page);
    if (w < 0) {
      CHECK_EQ_I(errno, ENOSPC);
      break;
    }
    size += w;
  }
  CHECK_GE_I(size, leave);
  if (leave) CHECK_EQ_I(ftruncate(fd, size - leave), 0);
  CHECK_EQ_I(close(fd), 0);
}

/* In a forked child (a mount namespace needs a single-threaded caller):
 * a private 64 KiB tmpfs on /dev/shm, full. Versions 1-3 kept the table
 * there and failed (or, before they allocated it whole, died of SIGBUS);
 * the memfd does not live in /dev/shm. */
static void shm_full_child(void) {
  if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
      mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "size=64k") != 0)
    sstm_test_skip("cannot mount a private tmpfs on /dev/shm here");
  sstm_config_t c;
  sstm_test_config(&c);
  c.state_table = true;
  c.max_threads = 64; /* a table of 8 pages */
  size_t size = sizeof(sstm_stt_header_t) + 64 * sizeof(sstm_stt_entry_t) + sizeof(sstm_stt_exec_t);
  const char *fill = "/dev/shm/fill";
  fill_shm(fill, 0);
  CHECK_OK(sstm_init(&c));
  /* allocated whole: every page is there */
  int fd = open_table_of(getpid(), O_RDONLY);
  struct stat st;
  CHECK_EQ_I(fstat(fd, &st), 0);
  CHECK_EQ_I(close(fd), 0);
  CHECK_EQ_U(st.st_size, size);
  CHECK_GE_U((uint64_t)st.st_blocks * 512, size);
  CHECK_OK(sstm_thread_init());
  accounts[0] = 0;
  CHECK_OK(sstm_run(NULL, bump_fn, NULL));
  CHECK_OK(sstm_thread_exit());
  CHECK_OK(sstm_shutdown());
  CHECK_EQ_I(unlink(fill), 0);
}

TEST(shm_full) {
  if (geteuid() != 0) sstm_test_skip("needs root (a private tmpfs on /dev/shm)");
  fflush(stdout);
  fflush(stderr);
  pid_t pid = sstm_test_fork();
  CHECK_GE_I(pid, 0);
  if (pid == 0) {
    shm_full_child();
    fflush(stdout);
    _exit(0);
  }
  int st;
  while (waitpid(pid, &st, 0) < 0)
    CHECK_EQ_I(errno, EINTR);
  if (WIFEXITED(st) && WEXITSTATUS(st) == SSTM_TEST_SKIP)
    sstm_test_skip("cannot mount a private tmpfs on /dev/shm here");
  CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child %s %d",
            WIFSIGNALED(st) ? "was killed by signal" : "exited with",
            WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
}

/* ---- the width of the live view ------------------------------------------------- */

/* Every line of text is at most width columns; returns the longest. */
static size_t check_width(const char *text, size_t width, const char *what) {
  size_t longest = 0;
  for (const char *l = text; *l;) {
    const char *nl = strchr(l, '\n');
    size_t len = nl ? (size_t)(nl - l) : strlen(l);
    CHECK_MSG(len <= width, "%s: a line of %zu columns (at most %zu): %.*s", what, len, width,
              (int)len, l);
    if (len > longest) longest = len;
    l += len + (nl != NULL);
  }
  return longest;
}

/* 80 columns unless told otherwise (not a terminal, no COLUMNS), and with
 * COLUMNS=80: the narrow layout, the configuration and policy lines
 * wrapped, adaptive's legend; COLUMNS=200: the wide layout. Counters of
 * ten digits, a configuration line of the full 319 characters. */
TEST(live_view_fits_the_width) {
  size_t n;
  sstm_stt_header_t *h = fake_table(3, &n);
  memset(h->config, 0, sizeof h->config);
  for (size_t i = 0; i + 1 < sizeof h->config; i++)
    h->config[i] = i % 12 == 11 ? ' ' : (char)('a' + i % 26);
  snprintf(h->cm_info, sizeof h->cm_info,
           "current=ser-block long>40us reason=over threads=64 busy=2.0/2 long-tx=120us "
           "nondet=0.01 upd=0.90 window=160ms probe os_prio=1200/s ser-block=1500/s t=3.1");
  h->nreasons = 6;
  snprintf(h->reason_names[5], sizeof h->reason_names[5], "validate-commit");
  sstm_stt_entry_t *e = (sstm_stt_entry_t *)(void *)(h + 1);
  for (int i = 0; i < 3; i++) {
    e[i].in_use = 1;
    e[i].slot = (uint32_t)i;
    e[i].tid = 4194304 - i;
    e[i].in_tx = 1;
    e[i].txid = 9876543210ull;
    e[i].commits = 9999999999ull;
    e[i].aborts = 999999999ull;
    e[i].last_reason = 5;
    e[i].conflict_tid = 4194304;
    e[i].action = SSTM_ACT_LOWERED;
    e[i].os_policy = 5;
    e[i].os_nice = 19;
    snprintf(e[i].cm, sizeof e[i].cm, "adaptive");
  }
  pid_t pid = hold_table(h, n);
  free(h);
  char p[16];
  snprintf(p, sizeof p, "%d", (int)pid);
  const char *had = getenv("COLUMNS");
  char saved[32] = "";
  if (had) snprintf(saved, sizeof saved, "%s", had);
  for (int k = 0; k < 3; k++) {
    if (k == 0)
      CHECK_EQ_I(unsetenv("COLUMNS"), 0);
    else
      CHECK_EQ_I(setenv("COLUMNS", k == 1 ? "80" : "200", 1), 0);
    tool_run_t r;
    run_tool(&r, "-a", "-n1", "-i", "0.01", p);
    check_exit(&r, 0, "live view");
    size_t longest = check_width(r.out, k < 2 ? 79 : 200, k < 2 ? "80 columns" : "200 columns");
    CHECK_CONTAINS(r.out, "validate-commit");
    CHECK_CONTAINS(r.out, "lowered");
    CHECK_CONTAINS(r.out, "9999999999");
    CHECK_CONTAINS(r.out, "(adaptive: current=policy in use");
    CHECK_CONTAINS(r.out, "t=3.1");
    if (k < 2) {
      CHECK_NOT_CONTAINS(r.out, "OSPOL");
      CHECK_CONTAINS(r.out, "ABORT/S LAST-REASON");
    } else {
      CHECK_CONTAINS(r.out, "OSPOL");
      CHECK_CONTAINS(r.out, " idle ");
      CHECK_GT_U(longest, 100);
    }
    printf("COLUMNS=%s: the longest line has %zu columns\n", k == 0 ? "(unset)" : getenv("COLUMNS"),
           longest);
    tool_free(&r);
  }
  if (had)
    CHECK_EQ_I(setenv("COLUMNS", saved, 1), 0);
  else
    CHECK_EQ_I(unsetenv("COLUMNS"), 0);
  /* -h: within 80 columns too, and it explains adaptive's figures */
  tool_run_t r;
  run_tool(&r, "-h", NULL, NULL, NULL, NULL);
  check_exit(&r, 0, "-h");
  check_width(r.out, 79, "-h");
  CHECK_CONTAINS(r.out, "Welch's t");
  CHECK_CONTAINS(r.out, "nondet=");
  tool_free(&r);
  reap(pid);
}

/* ---- fork ---------------------------------------------------------------------- */

/* The entry of slot of this process's table, read through its descriptor
 * (not through a mapping). */
static sstm_stt_entry_t file_entry(unsigned slot) {
  sstm_stt_entry_t e;
  int fd = open_table_of(getpid(), O_RDONLY);
  off_t off = (off_t)(sizeof(sstm_stt_header_t) + slot * sizeof e);
  CHECK_EQ_I(pread(fd, &e, sizeof e, off), (long long)sizeof e);
  CHECK_EQ_I(close(fd), 0);
  return e;
}

static void incr_fn(void *p) {
  (void)p;
  sstm_store_i64(&accounts[0], sstm_load_i64(&accounts[0]) + 1);
}

/* A child of fork() inherits the mapping of the parent's table, the
 * table's descriptor and its registered descriptor: its transactions must
 * not count in the parent's entry, it must not show the parent's table
 * under its own pid, and its sstm_shutdown must not unpublish the
 * parent's table. */
TEST(fork_child) {
  sstm_config_t c;
  sstm_test_config(&c);
  c.state_table = true;
  CHECK_OK(sstm_init(&c));
  CHECK_OK(sstm_thread_init());
  accounts[0] = 0;
  for (int i = 0; i < 100; i++)
    CHECK_OK(sstm_run(NULL, incr_fn, NULL));
  unsigned slot = sstm_desc_slot(sstm_self());
  sstm_stt_entry_t before = file_entry(slot);
  CHECK_EQ_U(before.in_use, 1);
  CHECK_EQ_U(before.commits, 100);
  fflush(stdout);
  fflush(stderr);
  pid_t pid = sstm_test_fork();
  CHECK_GE_I(pid, 0);
  if (pid == 0) {
    /* the child does not publish its parent's table under its own pid */
    CHECK_EQ_I(table_fd_of(getpid()), -1);
    for (int i = 0; i < 1000; i++)
      CHECK_OK(sstm_run(NULL, incr_fn, NULL));
    CHECK_EQ_I(accounts[0], 1100);
    CHECK_OK(sstm_shutdown());
    _exit(0);
  }
  int st;
  while (waitpid(pid, &st, 0) < 0)
    CHECK_EQ_I(errno, EINTR);
  CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child %s %d",
            WIFSIGNALED(st) ? "was killed by signal" : "exited with",
            WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
  CHECK_GE_I(table_fd_of(getpid()), 0); /* still published after the child's sstm_shutdown */
  sstm_stt_entry_t after = file_entry(slot);
  CHECK_EQ_U(after.in_use, 1);    /* the child's thread exit is not ours */
  CHECK_EQ_U(after.commits, 100); /* nor are its 1000 commits */
  CHECK_EQ_U(after.txid, before.txid);
  CHECK_EQ_I(after.tid, before.tid);
  CHECK_EQ_I(accounts[0], 100);
  /* The parent's table goes on. */
  for (int i = 0; i < 10; i++)
    CHECK_OK(sstm_run(NULL, incr_fn, NULL));
  CHECK_EQ_U(file_entry(slot).commits, 110);
  jval_t *j = snapshot_json(getpid());
  CHECK_EQ_U(ju(j, "in_use"), 1);
  CHECK_EQ_U(ju(jget(j, "totals"), "commits"), 110);
  jfree(j);
  CHECK_OK(sstm_thread_exit());
  CHECK_OK(sstm_shutdown());
  CHECK_EQ_I(table_fd_of(getpid()), -1);
}

/* The live view shows the policy's current line in every frame ("policy
 * now:"), not the one it read at start: a policy whose describe() gives a
 * generation that the test bumps (sstm_cm_info_changed) while the tool
 * runs. Deterministically, without relying on timing: once the tool's
 * output shows a frame, the tool is stopped (SIGSTOP, waited for); k
 * frames are then complete in its output, and the tool has read the line
 * for at most frame k+1 (it reads the line for a frame after writing the
 * previous one). The generation is bumped while it is stopped, and it
 * continues: frames 1..k must show the old generation, frames k+2.. the
 * new one. If the tool got too far before it stopped (k+2 > FRAMES, on a
 * loaded machine) the run proves nothing and is repeated; the watchdog
 * bounds the repetitions. */
#define LIVE_FRAMES 6
static _Atomic unsigned live_gen;
static int gen_describe(char *buf, size_t len) {
  return snprintf(buf, len, "gen=%u", atomic_load_explicit(&live_gen, memory_order_seq_cst));
}
static const sstm_cm_ops_t gen_policy = {
    .name = "stt-gen",
    .description = "statetab test: describe() gives a generation",
    .on_conflict = abort_self,
    .describe = gen_describe,
};

/* sstm-top -p: the policy's line each time it changes, after the seconds
 * since sstm_init, one output line per change, flushed as it happens: the
 * line as it is when the tool starts, then each new one; -n N stops after
 * N lines. The test's policy (stt-gen) describes itself as "gen=K" and
 * the test moves K once the tool has printed the line before (read from the tool's
 * output file as it writes it), so no change can fall between two polls.
 * -p with -j is a usage error, as is any option that the chosen mode would
 * ignore (-j with -n or -l, -l with -i). */
/* Wait until the running tool's output holds `want`, or the tool has
 * exited. */
static bool wait_output(tool_proc_t *p, const char *want) {
  for (int i = 0; i < 20000; i++) {
    char *out = tool_output_so_far(p);
    bool found = strstr(out, want) != NULL;
    free(out);
    if (found) return true;
    int st;
    if (waitpid(p->pid, &st, WNOHANG) == p->pid) return false;
    usleep(1000);
  }
  return false;
}

TEST(policy_log_prints_each_change) {
  if (sstm_cm_find("stt-gen") == NULL) CHECK_OK(sstm_cm_register(&gen_policy));
  sstm_config_t c;
  sstm_test_config(&c);
  c.state_table = true;
  c.cm = "stt-gen";
  atomic_store_explicit(&live_gen, 0, memory_order_seq_cst);
  CHECK_OK(sstm_init(&c));
  char pidstr[16];
  snprintf(pidstr, sizeof pidstr, "%d", (int)getpid());
  tool_proc_t tp;
  tool_start(&tp, -1, 60, false, "-p", "-n", "3", pidstr, NULL);
  for (int k = 0; k < 3; k++) {
    char want[32];
    snprintf(want, sizeof want, " gen=%d\n", k);
    CHECK_MSG(wait_output(&tp, want), "the tool did not print '%s'", want + 1);
    atomic_store_explicit(&live_gen, (unsigned)k + 1, memory_order_seq_cst);
    sstm_cm_info_changed();
  }
  tool_run_t r;
  tool_wait(&tp, &r);
  check_exit(&r, 0, "sstm-top -p -n 3");
  /* three lines "SECONDS gen=K", K = 0, 1, 2, the seconds never going back */
  const char *q = r.out;
  double prev = 0;
  for (int k = 0; k < 3; k++) {
    double sec;
    int step, used = 0;
    CHECK_MSG(sscanf(q, "%lf gen=%d%n", &sec, &step, &used) == 2 && used > 0, "line %d: %.80s",
              k + 1, q);
    CHECK_EQ_I(step, k);
    CHECK_GE_I((int)(sec * 1000), (int)(prev * 1000));
    prev = sec;
    q += used;
    CHECK_EQ_I(*q, '\n');
    q++;
  }
  CHECK_EQ_I(*q, '\0');
  tool_free(&r);
  run_tool(&r, "-p", "-j", pidstr, NULL, NULL);
  check_exit(&r, 2, "sstm-top -p -j");
  CHECK_CONTAINS(r.err, "-p does not go with");
  tool_free(&r);
  /* options that another mode would ignore are refused too */
  run_tool(&r, "-j", "-n", "2", pidstr, NULL);
  check_exit(&r, 2, "sstm-top -j -n 2");
  CHECK_CONTAINS(r.err, "-j does not go with");
  tool_free(&r);
  run_tool(&r, "-j", "-l", NULL, NULL, NULL);
  check_exit(&r, 2, "sstm-top -j -l");
  tool_free(&r);
  run_tool(&r, "-l", "-i", "1", NULL, NULL);
  check_exit(&r, 2, "sstm-top -l -i 1");
  CHECK_CONTAINS(r.err, "-l and -c do not go with");
  tool_free(&r);
  CHECK_OK(sstm_shutdown());
}

/* The generations of the complete "policy now: gen=N" lines of text, in
 * order (up to max); returns how many there are. */
static unsigned policy_gens(const char *text, unsigned *gens, unsigned max) {
  unsigned n = 0;
  for (const char *p = text; (p = strstr(p, "policy now: ")) != NULL; p++) {
    const char *nl = strchr(p, '\n');
    if (nl == NULL) break; /* not complete yet */
    const char *g = strstr(p, "gen=");
    CHECK_MSG(g != NULL && g < nl, "a policy line without gen=: %.80s", p);
    if (n < max) gens[n] = (unsigned)strtoul(g + 4, NULL, 10);
    n++;
  }
  return n;
}

/* The complete policy lines the running tool has written so far. */
static unsigned policy_lines_so_far(const tool_proc_t *p) {
  char *buf = tool_output_so_far(p);
  unsigned gens[1];
  unsigned k = policy_gens(buf, gens, 0);
  free(buf);
  return k;
}

TEST(live_view_follows_policy_line) {
  CHECK_OK(sstm_cm_register(&gen_policy));
  sstm_config_t cfg;
  sstm_test_config(&cfg);
  cfg.cm = "stt-gen";
  cfg.state_table = true;
  CHECK_OK(sstm_init(&cfg));
  char pidstr[16], nframes[16];
  snprintf(pidstr, sizeof pidstr, "%d", (int)getpid());
  snprintf(nframes, sizeof nframes, "%d", LIVE_FRAMES);
  for (int attempt = 1;; attempt++) {
    unsigned gen0 = atomic_load_explicit(&live_gen, memory_order_seq_cst), gen1 = gen0 + 1;
    tool_proc_t p;
    tool_start(&p, -1, 0, false, "-i", "0.05", "-n", nframes, pidstr);
    int st;
    bool reaped = false;
    /* until the first frame is out (or the tool has exited: an error) */
    while (policy_lines_so_far(&p) == 0) {
      pid_t w = waitpid(p.pid, &st, WNOHANG);
      CHECK_GE_I(w, 0);
      if (w == p.pid) {
        reaped = true;
        break;
      }
      sched_yield();
    }
    unsigned k = 0;
    bool bumped = false;
    if (!reaped) {
      CHECK_EQ_I(kill(p.pid, SIGSTOP), 0);
      while (waitpid(p.pid, &st, WUNTRACED) < 0)
        CHECK_EQ_I(errno, EINTR);
      if (WIFSTOPPED(st)) {
        k = policy_lines_so_far(&p);
        CHECK_GE_U(k, 1);
        if (k + 2 <= LIVE_FRAMES) {
          atomic_store_explicit(&live_gen, gen1, memory_order_seq_cst);
          sstm_cm_info_changed();
          bumped = true;
        }
        CHECK_EQ_I(kill(p.pid, SIGCONT), 0);
        while (waitpid(p.pid, &st, 0) < 0)
          CHECK_EQ_I(errno, EINTR);
      } /* else it exited before the stop took effect */
    }
    tool_run_t r;
    tool_collect(&p, st, &r);
    check_exit(&r, 0, "live view");
    unsigned gens[LIVE_FRAMES];
    unsigned frames = policy_gens(r.out, gens, LIVE_FRAMES);
    CHECK_MSG(frames == LIVE_FRAMES, "%u frames with a policy line: %.600s", frames, r.out);
    for (unsigned i = 0; i < frames; i++) {
      /* frames written before the stop: the old line; frames whose line
       * was read after the bump: the new one; frame k+1 either */
      unsigned want = !bumped || i < k ? gen0 : gen1;
      if (bumped && i == k) continue;
      CHECK_MSG(gens[i] == want,
                "attempt %d: frame %u of %u shows gen=%u, want gen=%u (%s; the tool was "
                "stopped after %u frames)",
                attempt, i + 1, frames, gens[i], want,
                bumped ? "bumped while the tool was stopped" : "not bumped", k);
    }
    tool_free(&r);
    if (bumped) {
      printf("live view: gen %u -> %u while stopped after frame %u (attempt %d)\n", gen0, gen1, k,
             attempt);
      break;
    }
    printf("live view: the tool had written %u of %d frames when it stopped: again\n", k,
           LIVE_FRAMES);
  }
  CHECK_OK(sstm_shutdown());
}

/* The output so far holds a complete policy line with generation gen. */
static bool tool_showed_gen(const tool_proc_t *p, unsigned gen) {
  char *buf = tool_output_so_far(p);
  char want[32];
  snprintf(want, sizeof want, "gen=%u", gen);
  bool seen = false;
  for (const char *q = buf; !seen && (q = strstr(q, want)) != NULL; q++) {
    const char *end = q + strlen(want);
    seen = *end != '\0' && (*end < '0' || *end > '9') && strchr(end, '\n') != NULL;
  }
  free(buf);
  return seen;
}

/* Until the tool's output shows generation gen; the tool must not exit
 * before (an exit is reported with its output). */
static void wait_for_gen(tool_proc_t *p, unsigned gen) {
  while (!tool_showed_gen(p, gen)) {
    int st;
    pid_t w = waitpid(p->pid, &st, WNOHANG);
    CHECK_GE_I(w, 0);
    if (w == p->pid) {
      tool_run_t r;
      tool_collect(p, st, &r);
      CHECK_MSG(false, "the live view ended before showing gen=%u (status 0x%x): %.400s / %.400s",
                gen, st, r.out, r.err);
    }
    sched_yield();
  }
}

static void stop_tool(pid_t pid) {
  int st;
  CHECK_EQ_I(kill(pid, SIGSTOP), 0);
  while (waitpid(pid, &st, WUNTRACED) < 0)
    CHECK_EQ_I(errno, EINTR);
  CHECK_MSG(WIFSTOPPED(st), "the tool ended instead of stopping (status 0x%x)", st);
}

/* The program shuts the library down and initialises it again while the
 * live view runs: a new table under the same pid, which the view opens and
 * follows; at the final shutdown the view says the table was removed and
 * ends with status 0. The tool is stopped (SIGSTOP) across each change, so
 * every step is ordered without timing. */
TEST(live_view_across_shutdown_and_reinit) {
  CHECK_OK(sstm_cm_register(&gen_policy));
  sstm_config_t cfg;
  sstm_test_config(&cfg);
  cfg.cm = "stt-gen";
  cfg.state_table = true;
  atomic_store_explicit(&live_gen, 100, memory_order_seq_cst);
  CHECK_OK(sstm_init(&cfg));
  char pidstr[16];
  snprintf(pidstr, sizeof pidstr, "%d", (int)getpid());
  tool_proc_t p;
  tool_start(&p, -1, 0, false, "-i", "0.02", "-n", "1000000", pidstr);
  wait_for_gen(&p, 100);
  stop_tool(p.pid);
  CHECK_OK(sstm_shutdown());
  atomic_store_explicit(&live_gen, 200, memory_order_seq_cst);
  CHECK_OK(sstm_init(&cfg)); /* a new file: the tool still maps the old one */
  CHECK_EQ_I(kill(p.pid, SIGCONT), 0);
  wait_for_gen(&p, 200);
  stop_tool(p.pid);
  CHECK_OK(sstm_shutdown());
  CHECK_EQ_I(kill(p.pid, SIGCONT), 0);
  tool_run_t r;
  tool_wait(&p, &r);
  check_exit(&r, 0, "live view after the final shutdown");
  CHECK_CONTAINS(r.err, "state table removed (sstm_shutdown)");
  /* The first frame of the new table has no rates yet: nothing to take
   * them against (the previous frame counted another table). */
  const char *first = strstr(r.out, "gen=200");
  CHECK_NOT_NULL(first);
  const char *total = strstr(first, "total:");
  CHECK_NOT_NULL(total);
  const char *eol = strchr(total, '\n');
  CHECK_NOT_NULL(eol);
  char line[256];
  snprintf(line, sizeof line, "%.*s", (int)(eol - total), total);
  CHECK_CONTAINS(line, "commits 0 (-/s)");
  CHECK_CONTAINS(line, "aborts 0 (-/s)");
  tool_free(&r);
}

/* ---- the executor's area (version 6) ------------------------------------- */

static _Atomic int hi_ran, low_started;
static uint64_t exec_cell;

/* Low priority: reads transactionally until the high one has run. Each
 * read is a polled preemption point, so a high request submitted meanwhile
 * preempts it there (one worker: nobody else could run the high one). */
static void exec_low(void *a) {
  (void)a;
  atomic_store_explicit(&low_started, 1, memory_order_release);
  while (!atomic_load_explicit(&hi_ran, memory_order_acquire))
    (void)sstm_load_u64(&exec_cell);
}
static void exec_hi(void *a) {
  (void)a;
  sstm_store_u64(&exec_cell, sstm_load_u64(&exec_cell) + 1);
  atomic_store_explicit(&hi_ran, 1, memory_order_release);
}
static void exec_plain(void *a) {
  sstm_store_u64(&exec_cell, sstm_load_u64(&exec_cell) + (uintptr_t)a);
}

/* The area's levels are sstm_exec_stats()'s values, exactly, once every
 * request has ended; the live view shows the executor's lines; after
 * sstm_exec_destroy() the area says it ended and keeps the counters; a
 * second executor created meanwhile does not publish (one at a time). */
TEST(executor_levels_in_the_table) {
  sstm_config_t cfg;
  sstm_test_config(&cfg);
  cfg.state_table = true;
  CHECK_OK(sstm_init(&cfg));
  char pidstr[16];
  snprintf(pidstr, sizeof pidstr, "%d", (int)getpid());

  /* Before any executor: an area that never held one. */
  jval_t *j = snapshot_json(getpid());
  CHECK_EQ_U(ju(j, "version"), SSTM_STT_VERSION);
  const jval_t *x = jget(j, "exec");
  CHECK_NOT_NULL(x);
  CHECK_MSG(x->t == J_OBJ, "exec is not an object");
  CHECK_MSG(jget(x, "in_use")->t == J_BOOL && !jget(x, "in_use")->b, "in_use before any executor");
  jfree(j);

  sstm_exec_config_t ec = sstm_test_exec_config(1, 8, 6, SSTM_EXEC_PREEMPT_POLL);
  ec.c_max = 0;
  sstm_exec_t *ex, *ex2;
  CHECK_OK(sstm_exec_create(&ec, &ex));
  CHECK_OK(sstm_exec_create(&ec, &ex2)); /* a second one: not in the table */
  char d1[512], d2[512];
  sstm_exec_describe(ex, d1, sizeof d1);
  sstm_exec_describe(ex2, d2, sizeof d2);
  CHECK_CONTAINS(d1, "table=yes");
  CHECK_CONTAINS(d2, "table=no");

  /* A preemption: low at 1 runs on the only worker, high at 5 arrives. */
  atomic_store_explicit(&hi_ran, 0, memory_order_seq_cst);
  atomic_store_explicit(&low_started, 0, memory_order_seq_cst);
  sstm_exec_future_t fl, fh, fp[12];
  sstm_exec_req_t rl = {.fn = exec_low, .priority = 1, .future = &fl};
  CHECK_OK(sstm_exec_submit(ex, &rl));
  /* in flight now; the table says so before it ends */
  j = snapshot_json(getpid());
  x = jget(j, "exec");
  CHECK_MSG(jget(x, "in_use")->b, "in_use while the executor runs");
  CHECK_EQ_U(ju(x, "levels"), 6);
  CHECK_EQ_U(ju(x, "workers"), 1);
  CHECK_EQ_U(ju(x, "contexts"), 8);
  CHECK_EQ_U(ju(x, "contexts_busy"), 1);
  CHECK_EQ_U(ju(x, "c_max"), 0);
  CHECK_EQ_STR(js(x, "preempt_name"), "poll");
  CHECK_EQ_U(jget(x, "level_stats")->n, 6);
  CHECK_EQ_U(ju(jget(x, "level_stats")->items[1], "in_flight"), 1);
  CHECK_EQ_U(ju(jget(x, "level_stats")->items[1], "submitted"), 1);
  uint64_t gen = ju(x, "generation");
  jfree(j);
  /* wait until the low one runs (inside its transaction), then submit high */
  while (!atomic_load_explicit(&low_started, memory_order_acquire))
    sched_yield();
  sstm_exec_req_t rh = {.fn = exec_hi, .priority = 5, .future = &fh};
  CHECK_OK(sstm_exec_submit(ex, &rh));
  CHECK_OK(sstm_exec_wait(&fh));
  CHECK_OK(sstm_exec_wait(&fl));
  /* Four at each of 2, 1, 0, in that order: every request submitted
   * before one has at least its priority, the one running included, so
   * none of them preempts anything, whatever the worker's pace. (In mixed
   * order one at 2 preempted one at 1 or not, depending on the pace.) */
  for (unsigned i = 0; i < 12; i++) {
    sstm_exec_req_t r = {.fn = exec_plain,
                         .arg = (void *)(uintptr_t)(i + 1),
                         .priority = 2 - i / 4,
                         .future = &fp[i]};
    CHECK_OK(sstm_exec_submit(ex, &r));
  }
  for (unsigned i = 0; i < 12; i++)
    CHECK_OK(sstm_exec_wait(&fp[i]));
  /* The futures are set before the context is given back and the level's
   * end counted: wait for the counts, not for a time. */
  for (;;) {
    uint64_t done = 0;
    for (unsigned l = 0; l < 6; l++) {
      sstm_exec_level_stats_t s;
      CHECK_OK(sstm_exec_stats(ex, l, &s));
      done += s.completed;
    }
    if (done == 14) break;
    sched_yield();
  }
  j = snapshot_json(getpid());
  x = jget(j, "exec");
  CHECK_EQ_U(ju(x, "generation"), gen);
  const jval_t *lv = jget(x, "level_stats");
  uint64_t pre = 0;
  for (unsigned l = 0; l < 6; l++) {
    sstm_exec_level_stats_t s;
    CHECK_OK(sstm_exec_stats(ex, l, &s));
    const jval_t *y = lv->items[l];
    CHECK_EQ_U(ju(y, "priority"), l);
    CHECK_EQ_U(ju(y, "submitted"), s.submitted);
    CHECK_EQ_U(ju(y, "completed"), s.completed);
    CHECK_EQ_U(ju(y, "in_flight"), 0);
    CHECK_EQ_U(ju(y, "preemptions"), s.preemptions);
    CHECK_EQ_U(ju(y, "promotions"), s.promotions);
    CHECK_EQ_U(ju(y, "aborts"), s.aborts);
    CHECK_EQ_U(ju(y, "queue_ns"), s.queue_ns);
    CHECK_EQ_U(ju(y, "run_ns"), s.run_ns);
    CHECK_EQ_U(ju(y, "paused_ns"), s.paused_ns);
    CHECK_EQ_U(ju(y, "turnaround_ns"), s.turnaround_ns);
    CHECK_EQ_U(ju(y, "turnaround_max_ns"), s.turnaround_max_ns);
    pre += s.preemptions;
  }
  CHECK_EQ_U(ju(lv->items[1], "submitted"), 5); /* low + 4 plain */
  CHECK_EQ_U(ju(lv->items[5], "completed"), 1);
  CHECK_EQ_U(ju(lv->items[1], "preemptions"), 1);
  CHECK_MSG(ju(lv->items[1], "paused_ns") > 0, "the paused low request has no paused time");
  CHECK_EQ_U(pre, 1);
  CHECK_EQ_U(ju(x, "contexts_busy"), 0);
  jfree(j);

  /* The live view: the executor's line and a line per level that had
   * requests (1 and 5 and 0, 2), none for 3 and 4. */
  tool_run_t r;
  run_tool(&r, "-n", "1", "-i", "0.01", pidstr);
  check_exit(&r, 0, "live view with an executor");
  CHECK_CONTAINS(r.out,
                 "executor: preempt poll  tick 0us  c_max inf  workers 1  contexts 0/8 busy");
  const char *head = strstr(r.out, "PRIO");
  CHECK_NOT_NULL(head);
  unsigned rows = 0, seen = 0;
  for (const char *l = strchr(head, '\n') + 1; l && *l != '\n'; l = strchr(l, '\n') + 1) {
    unsigned prio;
    if (sscanf(l, "%u", &prio) != 1) break;
    rows++;
    seen |= 1u << prio;
  }
  CHECK_EQ_U(rows, 4);
  CHECK_EQ_U(seen, (1u << 0) | (1u << 1) | (1u << 2) | (1u << 5));
  tool_free(&r);

  CHECK_OK(sstm_exec_destroy(ex2));
  CHECK_OK(sstm_exec_destroy(ex));
  j = snapshot_json(getpid());
  x = jget(j, "exec");
  CHECK_MSG(!jget(x, "in_use")->b, "in_use after sstm_exec_destroy");
  CHECK_EQ_U(ju(jget(x, "level_stats")->items[5], "completed"), 1);
  jfree(j);
  run_tool(&r, "-n", "1", "-i", "0.01", pidstr);
  check_exit(&r, 0, "live view after the executor");
  CHECK_CONTAINS(r.out, "executor: ended");
  tool_free(&r);

  /* A new executor starts from zero, with another generation. */
  CHECK_OK(sstm_exec_create(&ec, &ex));
  j = snapshot_json(getpid());
  x = jget(j, "exec");
  CHECK_MSG(jget(x, "in_use")->b, "in_use of the new executor");
  CHECK_MSG(ju(x, "generation") != gen, "the generation did not change");
  CHECK_EQ_U(ju(jget(x, "level_stats")->items[5], "completed"), 0);
  jfree(j);
  CHECK_OK(sstm_exec_destroy(ex));
  CHECK_OK(sstm_shutdown());
}

/* A table without an executor area (exec_offset 0) is read: "exec" is
 * null and the live view has no executor line. A table of version 6 (a
 * 160-byte cm_info, the header's later fields elsewhere) is refused, as is
 * a header whose area is not where the entries end. */
TEST(table_without_exec_area_old_version_and_bad_exec_area) {
  size_t n;
  sstm_stt_header_t *h = fake_table(2, &n);
  h->exec_offset = 0;
  h->exec_size = 0;
  pid_t pid = hold_table(h, n);
  jval_t *j = snapshot_json(pid);
  CHECK_EQ_U(ju(j, "version"), SSTM_STT_VERSION);
  CHECK_MSG(jget(j, "exec")->t == J_NULL, "exec of a table without an area is not null");
  jfree(j);
  char pidstr[16];
  snprintf(pidstr, sizeof pidstr, "%d", (int)pid);
  tool_run_t r;
  run_tool(&r, "-n", "1", "-i", "0.01", pidstr);
  check_exit(&r, 0, "live view of a table without an executor area");
  CHECK_MSG(!strstr(r.out, "executor"), "an executor line without an area: %s", r.out);
  tool_free(&r);
  reap(pid);

  h->version = 6;
  expect_error(h, n, "table version 6", "version 6");

  h->version = SSTM_STT_VERSION;
  h->exec_offset = (uint32_t)n - 64; /* not where the entries end, and too short */
  h->exec_size = sizeof(sstm_stt_exec_t);
  expect_error(h, n, "executor area at", "misplaced executor area");
  free(h);
}

/* mapping_shows_each_threads_cpu: under a pinning strategy (compact) each
 * registered thread's entry says the CPU it was pinned to and the CPU it
 * was seen on (schedstm/map.h), in sstm-top's JSON and, with a "p" for
 * pinned there, in the wide live view's CPU column. Needs two CPUs and
 * two cores (mapping is disabled on one). */
static _Atomic int cpu_worker_state; /* 1 registered, 2 may leave */
static void *cpu_worker(void *arg) {
  (void)arg;
  CHECK_OK(sstm_thread_init());
  atomic_store_explicit(&cpu_worker_state, 1, memory_order_seq_cst);
  while (atomic_load_explicit(&cpu_worker_state, memory_order_seq_cst) != 2)
    usleep(1000);
  CHECK_OK(sstm_thread_exit());
  return NULL;
}

TEST(mapping_shows_each_threads_cpu) {
  cpu_set_t allowed;
  CHECK_EQ_I(sched_getaffinity(0, sizeof allowed, &allowed), 0);
  if (CPU_COUNT(&allowed) < 2) sstm_test_skip("one CPU allowed: nothing is pinned");
  sstm_config_t c;
  sstm_test_config(&c);
  c.state_table = true;
  c.map = SSTM_MAP_STRATEGY_COMPACT;
  CHECK_OK(sstm_init(&c));
  sstm_map_stats_t ms;
  CHECK_OK(sstm_map_stats_get(&ms));
  if (ms.single_core) {
    CHECK_OK(sstm_shutdown());
    sstm_test_skip("hwloc sees a single core: mapping is disabled");
  }
  CHECK_OK(sstm_thread_init());
  atomic_store_explicit(&cpu_worker_state, 0, memory_order_seq_cst);
  pthread_t t;
  CHECK_EQ_I(pthread_create(&t, NULL, cpu_worker, NULL), 0);
  while (atomic_load_explicit(&cpu_worker_state, memory_order_seq_cst) != 1)
    usleep(1000);
  jval_t *j = snapshot_json(getpid());
  const jval_t *es = jget(j, "entries");
  CHECK_EQ_U(es->n, 2);
  char want[2][16];
  for (size_t i = 0; i < es->n; i++) {
    const jval_t *e = es->items[i];
    int cpu = -2, seen = -2;
    CHECK_OK(sstm_map_thread_cpu((unsigned)ju(e, "slot"), &cpu, &seen, NULL));
    CHECK_GE_I(cpu, 0);
    CHECK_EQ_I(ji(e, "cpu_pinned"), cpu);
    CHECK_EQ_I(ji(e, "cpu"), seen);
    CHECK_EQ_I(seen, cpu); /* seen at its registration, once pinned */
    snprintf(want[i], sizeof want[i], " %dp ", cpu);
  }
  CHECK_NE_I(ji(es->items[0], "cpu_pinned"), ji(es->items[1], "cpu_pinned"));
  jfree(j);
  const char *had = getenv("COLUMNS");
  char saved[32] = "";
  if (had) snprintf(saved, sizeof saved, "%s", had);
  CHECK_EQ_I(setenv("COLUMNS", "200", 1), 0);
  char p[16];
  snprintf(p, sizeof p, "%d", (int)getpid());
  tool_run_t r;
  run_tool(&r, "-n1", "-i", "0.01", p, NULL);
  check_exit(&r, 0, "live view");
  CHECK_CONTAINS(r.out, " CPU ");
  for (int i = 0; i < 2; i++)
    CHECK_CONTAINS(r.out, want[i]);
  tool_free(&r);
  if (had)
    CHECK_EQ_I(setenv("COLUMNS", saved, 1), 0);
  else
    CHECK_EQ_I(unsetenv("COLUMNS"), 0);
  atomic_store_explicit(&cpu_worker_state, 2, memory_order_seq_cst);
  CHECK_EQ_I(pthread_join(t, NULL), 0);
  CHECK_OK(sstm_thread_exit());
  CHECK_OK(sstm_shutdown());
}

SSTM_TEST_MAIN()
