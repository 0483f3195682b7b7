/* SPDX-License-Identifier: MIT */
/* Integration: the per-thread state table (/dev/shm/schedstm.<pid>) seen
 * from outside by tools/sstm-top.
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
 *   reason, not the one it started with).
 *   The live view (-n) and the listing (-l) run too. After the threads
 *   unregister no entry is in use; sstm_shutdown removes the file.
 * stale_table_under_our_pid_is_replaced: sstm_init replaces a file left
 *   under its pid by an earlier process.
 * no_table: a live pid without a table, a dead pid, a bad pid: non-zero exit
 *   with a message.
 * garbage: tables of a sleeping child's pid filled with junk, truncated,
 *   with wrong version, header size, entry size, entry count, pid, or far
 *   too large: non-zero exit with a message, never a signal; a valid
 *   header over junk entries parses.
 * permission: a table the tool may not read: non-zero exit, "permission".
 * fifo: a FIFO under a live pid's table name: -j, the live view and -l
 *   return at once with "not a regular file" (each run under a watchdog).
 * header_changed / truncated_while_read: the tool is stopped (ptrace and a
 *   hardware watchpoint) right after it has read nentries to validate it,
 *   and the table is changed under it: a larger nentries must not be used
 *   (the output shows the validated count); a truncation ends -j and the
 *   live view with the SIGBUS message and status 1, and -l (before: killed
 *   by SIGBUS) reports that table and goes on.
 * control_bytes: C0, DEL, raw and UTF-8 encoded C1 bytes in every string of
 *   a table and in the process name: no output byte outside printable
 *   ASCII (and newline), in the JSON, the live view and the listing.
 * shm_full: in a private mount namespace with a tiny full tmpfs on
 *   /dev/shm (root only, skipped otherwise), sstm_init with the table fails
 *   with SSTM_ENOMEM and a message instead of dying of SIGBUS.
 * exited_process: the table of a pid that has exited (a zombie, then reaped)
 *   is marked so in -j, and the live view shows it once and ends.
 * clean_stale: -c removes our tables of exited pids, and keeps a live pid's
 *   table, a symbolic link (and its target), another user's table, a file
 *   named for pid 0.
 * fork_child: a forked child of a process with a table runs transactions
 *   and shuts down: the parent's entries do not move and its file stays.
 * live_view_follows_policy_line: the live view reads the policy's line
 *   again for every frame.
 * live_view_across_shutdown_and_reinit: the live view follows the new
 *   table of an sstm_shutdown + sstm_init under the same pid, and ends,
 *   saying so, when the last shutdown removes it.
 *
 * The tool is run as a separate process (fork + exec of SSTM_TOP_PATH), its
 * JSON parsed by the small parser below.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../common/runner.h"
#include <schedstm/statetab.h>

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

static void run_tool_as(tool_run_t *r, int drop_to_uid, unsigned watchdog_s, const char *a1,
                        const char *a2, const char *a3, const char *a4, const char *a5) {
  tool_proc_t p;
  tool_start(&p, drop_to_uid, watchdog_s, false, a1, a2, a3, a4, a5);
  int st;
  while (waitpid(p.pid, &st, 0) < 0)
    CHECK_EQ_I(errno, EINTR);
  tool_collect(&p, st, r);
}

static void run_tool(tool_run_t *r, const char *a1, const char *a2, const char *a3, const char *a4,
                     const char *a5) {
  run_tool_as(r, -1, 0, a1, a2, a3, a4, a5);
  CHECK_MSG(!(WIFEXITED(r->status) && WEXITSTATUS(r->status) == 126), "cannot execute %s",
            SSTM_TOP_PATH);
}

/* run_tool for a case where the tool used to block forever: killed by
 * SIGALRM if it still runs after 20 seconds (a fixed tool needs a few
 * system calls; the first hang fails the test, so at most one watchdog
 * period is spent, well within the test's timeout). */
static void run_tool_bounded(tool_run_t *r, const char *a1, const char *a2, const char *a3,
                             const char *a4, const char *a5) {
  run_tool_as(r, -1, 20, a1, a2, a3, a4, a5);
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
  const jval_t *cn = jget(j, "cm_stat_names");
  CHECK_EQ_U(cn->n, SSTM_STT_CMSTATS);
  const sstm_cm_ops_t *cm = sstm_cm_current();
  for (int s = 0; s < SSTM_STT_CMSTATS; s++)
    CHECK_EQ_STR(cn->items[s]->str, cm->stat_names[s] ? cm->stat_names[s] : "");
  /* cm_info: the policy's current describe() line (adaptive rewrites it at
   * every change); prefix "current=" for adaptive, the whole line for the
   * others, whose line never changes. */
  char info[sizeof(((sstm_stt_header_t *)0)->cm_info)] = "";
  if (cm->describe) cm->describe(info, sizeof info);
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
  char path[64], pidstr[16];
  snprintf(path, sizeof path, SSTM_STT_PATH_FMT, (int)getpid());
  snprintf(pidstr, sizeof pidstr, "%d", (int)getpid());
  struct stat st;
  CHECK_EQ_I(stat(path, &st), 0);
  CHECK(S_ISREG(st.st_mode));
  CHECK_EQ_X(st.st_mode & 07777, 0600);
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
  char info[sizeof(((sstm_stt_header_t *)0)->cm_info)] = "";
  if (cm->describe) cm->describe(info, sizeof info);
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

  /* 4. sstm_shutdown removes the table. */
  CHECK_OK(sstm_shutdown());
  errno = 0;
  CHECK_EQ_I(stat(path, &st), -1);
  CHECK_EQ_I(errno, ENOENT);
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
  atomic_store(&b_tid, (int)syscall(SYS_gettid));
  atomic_store(&fresh_step, 2);
  while (atomic_load(&fresh_step) != 3)
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
  while (atomic_load(&fresh_step) != 2)
    usleep(1000);
  jval_t *j = snapshot_json(getpid());
  const jval_t *es = jget(j, "entries");
  CHECK_EQ_U(es->n, 1);
  const jval_t *e = es->items[0];
  CHECK_EQ_I(ji(e, "tid"), atomic_load(&b_tid)); /* before B's first transaction */
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
  atomic_store(&fresh_step, 3);
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

/* A policy line longer than the table's field ends in "..." there (cut
 * numbers would look plausible), while sstm_describe has it whole. */
static int long_line(char *buf, size_t len) {
  char line[301];
  for (int i = 0; i < 300; i++)
    line[i] = (char)('0' + i % 10);
  line[300] = '\0';
  return snprintf(buf, len, "%s", line);
}
static const sstm_cm_ops_t long_line_policy = {
    .name = "stt-long-line",
    .description = "statetab test: a 300-character describe line",
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
  CHECK_GT_I(sstm_describe(d, sizeof d), 300);
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

/* A child that sleeps until killed: a live pid we control; comm: its
 * process name (/proc/PID/comm), set before this returns, NULL to keep. */
static pid_t sleeper_named(const char *comm) {
  int ready[2];
  CHECK_EQ_I(pipe2(ready, O_CLOEXEC), 0);
  fflush(stdout);
  fflush(stderr);
  /* never outlive the test (a failed test must not leave it holding
   * ctest's output pipe): sstm_test_fork */
  pid_t pid = sstm_test_fork();
  CHECK_GE_I(pid, 0);
  if (pid == 0) {
    if (comm) prctl(PR_SET_NAME, comm);
    close(ready[1]); /* EOF for the parent: the name is set */
    for (;;)
      pause();
  }
  CHECK_EQ_I(close(ready[1]), 0);
  char c;
  while (read(ready[0], &c, 1) < 0)
    CHECK_EQ_I(errno, EINTR);
  CHECK_EQ_I(close(ready[0]), 0);
  return pid;
}

static pid_t sleeper(void) { return sleeper_named(NULL); }

static void reap(pid_t pid) {
  CHECK_EQ_I(kill(pid, SIGKILL), 0);
  int st;
  while (waitpid(pid, &st, 0) < 0)
    CHECK_EQ_I(errno, EINTR);
}

TEST(no_table) {
  pid_t pid = sleeper();
  char path[64], p[16];
  snprintf(path, sizeof path, SSTM_STT_PATH_FMT, (int)pid);
  snprintf(p, sizeof p, "%d", (int)pid);
  unlink(path);
  tool_run_t r;
  run_tool(&r, "-j", p, NULL, NULL, NULL);
  check_exit(&r, 1, "live pid without a table");
  CHECK_CONTAINS(r.err, "no state table");
  CHECK_CONTAINS(r.err, "SCHEDSTM_STATE_TABLE");
  CHECK_EQ_STR(r.out, "");
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

static void write_file(const char *path, const void *buf, size_t n, mode_t mode) {
  unlink(path);
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  CHECK_GE_I(fd, 0);
  CHECK_EQ_I(write(fd, buf, n), (long long)n);
  CHECK_EQ_I(close(fd), 0);
}

/* A plausible header for pid with n entries, the rest zero. */
static void *fake_table(int pid, uint32_t n, size_t *size) {
  *size = sizeof(sstm_stt_header_t) + (size_t)n * sizeof(sstm_stt_entry_t);
  sstm_stt_header_t *h = calloc(1, *size);
  CHECK_NOT_NULL(h);
  h->magic = SSTM_STT_MAGIC;
  h->version = SSTM_STT_VERSION;
  h->nentries = n;
  h->entry_size = sizeof(sstm_stt_entry_t);
  h->header_size = sizeof(sstm_stt_header_t);
  h->pid = pid;
  h->nreasons = 3;
  snprintf(h->config, sizeof h->config, "fake");
  return h;
}

static void expect_error(const char *path, const void *buf, size_t n, const char *pidstr,
                         const char *msg, const char *what) {
  write_file(path, buf, n, 0600);
  tool_run_t r;
  run_tool(&r, "-j", pidstr, NULL, NULL, NULL);
  check_exit(&r, 1, what);
  CHECK_CONTAINS(r.err, msg);
  tool_free(&r);
  run_tool(&r, "-n", "1", "-i", "0.01", pidstr);
  check_exit(&r, 1, what);
  CHECK_CONTAINS(r.err, msg);
  tool_free(&r);
}

/* A table file left under this process's pid by an earlier process with
 * the same pid (killed before sstm_shutdown): sstm_init replaces it. */
TEST(stale_table_under_our_pid_is_replaced) {
  char path[64];
  snprintf(path, sizeof path, SSTM_STT_PATH_FMT, (int)getpid());
  static const char junk[] = "left by an earlier process with this pid";
  write_file(path, junk, sizeof junk, 0600);
  sstm_config_t c;
  sstm_test_config(&c);
  c.state_table = true;
  c.max_threads = 5;
  CHECK_OK(sstm_init(&c));
  jval_t *j = snapshot_json(getpid());
  CHECK_EQ_U(ju(j, "pid"), (uint64_t)getpid());
  CHECK_EQ_U(ju(j, "nentries"), 5);
  jfree(j);
  CHECK_OK(sstm_shutdown());
  struct stat st;
  CHECK_MSG(stat(path, &st) != 0 && errno == ENOENT, "%s left after sstm_shutdown", path);
}

/* A table file that cannot be created is the system's refusal
 * (SSTM_EPERM, config.h), not a bad value: here a directory of that name. */
TEST(table_that_cannot_be_created_is_eperm) {
  char path[64];
  snprintf(path, sizeof path, SSTM_STT_PATH_FMT, (int)getpid());
  CHECK_EQ_I(mkdir(path, 0700), 0);
  sstm_config_t c;
  sstm_test_config(&c);
  c.state_table = true;
  int rc = sstm_init(&c);
  char err[256];
  snprintf(err, sizeof err, "%s", sstm_last_error());
  bool up = sstm_initialized();
  CHECK_EQ_I(rmdir(path), 0); /* before any check: a later process may get this pid */
  CHECK_RC(rc, SSTM_EPERM);
  CHECK_CONTAINS(err, path);
  CHECK_FALSE(up);
  CHECK_OK(sstm_init(&c)); /* nothing was left half done */
  CHECK_OK(sstm_shutdown());
}

/* A process that ends by exit() without sstm_shutdown (here with a thread
 * still registered, which makes shutdown fail) removes its table; one that
 * ends by _exit (as a killed one) leaves it, for sstm-top. */
static _Atomic bool worker_registered;
static void *registered_forever(void *arg) {
  (void)arg;
  if (sstm_thread_init() != 0) _exit(7);
  atomic_store(&worker_registered, true);
  for (;;)
    pause();
}
static void end_without_shutdown(bool by_exit, char *path, size_t len) {
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
    while (!atomic_load(&worker_registered))
      sched_yield();
    if (sstm_run(NULL, bump_fn, NULL) != 0) _exit(5);
    if (sstm_shutdown() != SSTM_EBUSY) _exit(4); /* still registered */
    if (by_exit) exit(0);
    _exit(0);
  }
  int st;
  while (waitpid(pid, &st, 0) < 0)
    CHECK_EQ_I(errno, EINTR);
  CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status 0x%x", st);
  snprintf(path, len, SSTM_STT_PATH_FMT, (int)pid);
}

TEST(exit_without_shutdown_removes_the_table) {
  char path[64];
  struct stat st;
  end_without_shutdown(true, path, sizeof path);
  CHECK_MSG(stat(path, &st) != 0 && errno == ENOENT, "%s left after exit()", path);
  end_without_shutdown(false, path, sizeof path);
  CHECK_MSG(stat(path, &st) == 0, "%s gone after _exit", path);
  CHECK_EQ_I(unlink(path), 0);
}

/* The live view's uptime is hours:minutes:seconds.tenths (a table started
 * 1 h 5 min 7.5 s ago; on a machine up for less than that, the uptime line
 * is not checked), and -a adds the free slots, in the JSON too. */
TEST(uptime_and_free_slots) {
  pid_t pid = sleeper();
  char path[64], pidstr[16];
  snprintf(path, sizeof path, SSTM_STT_PATH_FMT, (int)pid);
  snprintf(pidstr, sizeof pidstr, "%d", (int)pid);
  size_t n;
  sstm_stt_header_t *h = fake_table(pid, 3, &n);
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
  write_file(path, h, n, 0600);
  free(h);

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
  CHECK_EQ_I(unlink(path), 0);
  reap(pid);
}

TEST(garbage) {
  pid_t pid = sleeper();
  char path[64], p[16];
  snprintf(path, sizeof path, SSTM_STT_PATH_FMT, (int)pid);
  snprintf(p, sizeof p, "%d", (int)pid);
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
  expect_error(path, junk, jn, p, "bad magic", "junk");
  expect_error(path, junk, 100, p, "truncated", "100 bytes");
  expect_error(path, junk, 0, p, "truncated", "empty file");

  sstm_stt_header_t *h = fake_table(pid, 4, &n);
  h->version = 99;
  expect_error(path, h, n, p, "version 99", "version");
  free(h);
  h = fake_table(pid, 4, &n);
  h->entry_size = 100;
  expect_error(path, h, n, p, "entry_size 100", "entry_size");
  free(h);
  h = fake_table(pid, 4, &n);
  h->nentries = 1000; /* the file holds 4 */
  expect_error(path, h, n, p, "1000 entries", "nentries beyond the file");
  free(h);
  h = fake_table(pid, 4, &n);
  h->nentries = 0xffffffffu; /* nentries * entry_size overflows 32 bits */
  expect_error(path, h, n, p, "entries", "nentries overflow");
  free(h);
  h = fake_table(pid, 4, &n);
  h->pid = pid + 1;
  expect_error(path, h, n, p, "belongs to pid", "pid mismatch");
  free(h);
  h = fake_table(pid, 4, &n);
  h->nreasons = 1000;
  expect_error(path, h, n, p, "abort reasons", "nreasons");
  free(h);
  h = fake_table(pid, 4, &n);
  h->nreasons = SSTM_STT_REASONS + 1; /* one more than the arrays hold */
  expect_error(path, h, n, p, "abort reasons", "nreasons one past the end");
  free(h);
  /* A last reason the table does not name (nreasons 3, reason 3): "?", even
   * with a name in the slot past the count. */
  {
    h = fake_table(pid, 4, &n);
    snprintf(h->reason_names[0], sizeof h->reason_names[0], "zero");
    snprintf(h->reason_names[3], sizeof h->reason_names[3], "bogus");
    sstm_stt_entry_t *e0 = (sstm_stt_entry_t *)(void *)(h + 1);
    e0->in_use = 1;
    e0->aborts = 2;
    e0->last_reason = 3;
    e0[1].in_use = 1;
    e0[1].aborts = 1;
    e0[1].last_reason = 0;
    write_file(path, h, n, 0600);
    free(h);
    tool_run_t rr;
    run_tool(&rr, "-j", p, NULL, NULL, NULL);
    check_exit(&rr, 0, "reason past nreasons");
    jval_t *jj = jparse(rr.out);
    CHECK_EQ_STR(js(jget(jj, "entries")->items[0], "last_reason_name"), "?");
    CHECK_EQ_STR(js(jget(jj, "entries")->items[1], "last_reason_name"), "zero");
    jfree(jj);
    tool_free(&rr);
  }
  h = fake_table(pid, 4, &n);
  h->magic = 0;
  expect_error(path, h, n, p, "not initialised", "magic 0");
  free(h);
  h = fake_table(pid, 4, &n);
  h->header_size += 8; /* a header of another layout */
  expect_error(path, h, n, p, "header_size", "header_size");
  free(h);
  /* A file larger than any table could be (sparse): refused, with a
   * message. */
  {
    h = fake_table(pid, 4, &n);
    write_file(path, h, n, 0600);
    free(h);
    off_t huge = (off_t)(sizeof(sstm_stt_header_t) + 40000 * sizeof(sstm_stt_entry_t));
    CHECK_EQ_I(truncate(path, huge), 0);
    tool_run_t hr;
    run_tool(&hr, "-j", p, NULL, NULL, NULL);
    check_exit(&hr, 1, "implausible size");
    CHECK_CONTAINS(hr.err, "implausible size");
    tool_free(&hr);
  }

  /* A valid header over junk: strings without NUL, control characters,
   * random entries. The tool must print valid JSON. */
  h = fake_table(pid, 4, &n);
  unsigned char *raw = (unsigned char *)h;
  for (size_t i = offsetof(sstm_stt_header_t, config); i < n; i++)
    raw[i] = (unsigned char)sstm_rng_next(&rng);
  h->nreasons = SSTM_STT_REASONS;
  sstm_stt_entry_t *e = (sstm_stt_entry_t *)(void *)(h + 1);
  for (int i = 0; i < 4; i++) {
    e[i].in_use = 1;
    e[i].last_reason = 0xfffffff0u + (unsigned)i;
    e[i].action = 0x7fffffffu;
  }
  write_file(path, h, n, 0600);
  free(h);
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
  /* cm_info: read between two equal even sequence numbers; a writer stuck
   * half-way (odd number) gives a placeholder, not a half-written line. */
  for (int odd = 0; odd < 2; odd++) {
    h = fake_table(pid, 4, &n);
    snprintf(h->cm_info, sizeof h->cm_info, "current=x reason=y");
    h->cm_info_seq = 6 + (uint32_t)odd;
    write_file(path, h, n, 0600);
    free(h);
    run_tool(&r, "-j", p, NULL, NULL, NULL);
    check_exit(&r, 0, "cm_info");
    j = jparse(r.out);
    CHECK_EQ_STR(js(j, "cm_info"), odd ? "(being updated)" : "current=x reason=y");
    jfree(j);
    tool_free(&r);
  }

  reap(pid);
  run_tool(&r, "-l", NULL, NULL, NULL, NULL);
  check_exit(&r, 0, "-l after the pid exited");
  CHECK_EQ_I(listed_threads(r.out, pid), -1);
  tool_free(&r);
  CHECK_EQ_I(unlink(path), 0);
  free(junk);
}

TEST(permission) {
  pid_t pid = sleeper();
  char path[64], p[16];
  snprintf(path, sizeof path, SSTM_STT_PATH_FMT, (int)pid);
  snprintf(p, sizeof p, "%d", (int)pid);
  size_t n;
  sstm_stt_header_t *h = fake_table(pid, 2, &n);
  /* As root the mode does not stop us: run the tool as nobody instead. */
  bool root = geteuid() == 0;
  write_file(path, h, n, root ? 0600 : 0);
  free(h);
  tool_run_t r;
  run_tool_as(&r, root ? 65534 : -1, 0, "-j", p, NULL, NULL, NULL);
  unlink(path);
  reap(pid);
  if (WIFEXITED(r.status) && (WEXITSTATUS(r.status) == 125 || WEXITSTATUS(r.status) == 126)) {
    tool_free(&r);
    sstm_test_skip("cannot run sstm-top as an unprivileged user here");
  }
  check_exit(&r, 1, "unreadable table");
  CHECK_CONTAINS(r.err, "permission denied");
  tool_free(&r);
}

/* ---- a FIFO under a table's name ------------------------------------------ */

/* Anyone can create files in /dev/shm: a FIFO named like the table of a live
 * pid would keep a reader's open() waiting for a writer forever. Every mode
 * must refuse it at once (a tool that blocks dies of its watchdog's SIGALRM,
 * which check_exit reports). */
TEST(fifo) {
  pid_t pid = sleeper();
  char path[64], p[16], want[96];
  snprintf(path, sizeof path, SSTM_STT_PATH_FMT, (int)pid);
  snprintf(p, sizeof p, "%d", (int)pid);
  snprintf(want, sizeof want, "%s: not a regular file", path);
  unlink(path);
  CHECK_EQ_I(mkfifo(path, 0600), 0);
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
  CHECK_EQ_I(unlink(path), 0);
  reap(pid);
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

/* A table left by a process that exited without sstm_shutdown: -j marks it
 * (process_alive false, uptime null, a note on stderr), the live view shows
 * one frame marked "exited" and ends (it used to refresh forever, showing
 * the dead threads as still in their transactions). */
TEST(exited_process) {
  pid_t pid = sleeper();
  char path[64], p[16];
  snprintf(path, sizeof path, SSTM_STT_PATH_FMT, (int)pid);
  snprintf(p, sizeof p, "%d", (int)pid);
  size_t n;
  sstm_stt_header_t *h = fake_table(pid, 2, &n);
  sstm_stt_entry_t *e = (sstm_stt_entry_t *)(void *)(h + 1);
  e[0].in_use = 1;
  e[0].in_tx = 1;
  e[0].commits = 12345;
  write_file(path, h, n, 0600);
  free(h);

  tool_run_t r;
  run_tool(&r, "-j", p, NULL, NULL, NULL);
  check_exit(&r, 0, "-j, live process");
  jval_t *j = jparse(r.out);
  CHECK_MSG(jget(j, "process_alive")->t == J_BOOL && jget(j, "process_alive")->b,
            "process_alive false for a live pid: %s", r.out);
  CHECK_EQ_STR(r.err, "");
  jfree(j);
  tool_free(&r);

  /* Killed but not reaped: a zombie has exited too. */
  CHECK_EQ_I(kill(pid, SIGKILL), 0);
  /* no time limit: a SIGKILLed child becomes a zombie, however loaded the
   * machine (the watchdog would end a wait that did not) */
  while (!is_zombie(pid))
    usleep(1000);
  run_tool(&r, "-j", p, NULL, NULL, NULL);
  check_exit(&r, 0, "-j, zombie");
  j = jparse(r.out);
  CHECK_MSG(jget(j, "process_alive")->t == J_BOOL && !jget(j, "process_alive")->b,
            "process_alive true for a zombie: %s", r.out);
  jfree(j);
  tool_free(&r);
  int st;
  while (waitpid(pid, &st, 0) < 0)
    CHECK_EQ_I(errno, EINTR);

  run_tool(&r, "-j", p, NULL, NULL, NULL);
  check_exit(&r, 0, "-j, exited process");
  j = jparse(r.out);
  CHECK_MSG(jget(j, "process_alive")->t == J_BOOL && !jget(j, "process_alive")->b,
            "process_alive true for an exited pid: %s", r.out);
  CHECK_MSG(jget(j, "uptime_s")->t == J_NULL, "uptime of an exited process: %s", r.out);
  CHECK_EQ_U(jget(j, "entries")->n, 1);
  CHECK_EQ_U(ju(jget(j, "entries")->items[0], "commits"), 12345);
  jfree(j);
  CHECK_CONTAINS(r.err, "has exited without sstm_shutdown");
  tool_free(&r);

  /* No count: a view that does not notice would run until the watchdog. */
  run_tool_bounded(&r, "-i", "0.01", p, NULL, NULL);
  check_exit(&r, 0, "live view, exited process");
  CHECK_CONTAINS(r.out, "(exited, the state it left)");
  CHECK_CONTAINS(r.err, "has exited without sstm_shutdown");
  tool_free(&r);
  CHECK_EQ_I(unlink(path), 0);
}

/* ---- removing the tables of exited processes ------------------------------ */

/* -c removes a regular file of ours whose pid is gone, and nothing else: a
 * live pid's table, a symbolic link under a dead pid's name (and its
 * target), another user's table (as root) are kept, with the reason. */
TEST(clean_stale) {
  pid_t live = sleeper(), dead = sleeper(), dead_link = sleeper(), dead_other = sleeper();
  char live_path[64], dead_path[64], link_path[64], other_path[64], want[160];
  snprintf(live_path, sizeof live_path, SSTM_STT_PATH_FMT, (int)live);
  snprintf(dead_path, sizeof dead_path, SSTM_STT_PATH_FMT, (int)dead);
  snprintf(link_path, sizeof link_path, SSTM_STT_PATH_FMT, (int)dead_link);
  snprintf(other_path, sizeof other_path, SSTM_STT_PATH_FMT, (int)dead_other);
  size_t n;
  sstm_stt_header_t *h = fake_table(live, 2, &n);
  write_file(live_path, h, n, 0600);
  h->pid = dead;
  write_file(dead_path, h, n, 0600);
  char zero_path[64];
  snprintf(zero_path, sizeof zero_path, SSTM_STT_PATH_FMT, 0);
  write_file(zero_path, h, n, 0600);
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

  tool_run_t r;
  run_tool(&r, "-c", NULL, NULL, NULL, NULL);
  check_exit(&r, 0, "-c");
  struct stat st;
  snprintf(want, sizeof want, "removed %s (pid %d has exited", dead_path, (int)dead);
  CHECK_CONTAINS(r.out, want);
  CHECK_MSG(stat(dead_path, &st) != 0 && errno == ENOENT, "%s is still there", dead_path);
  CHECK_MSG(strstr(r.out, live_path) == NULL, "-c names a live pid's table: %s", r.out);
  CHECK_EQ_I(stat(live_path, &st), 0);
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
  CHECK_EQ_I(unlink(target), 0);
  if (root) CHECK_EQ_I(unlink(other_path), 0);
  reap(live);
}

/* ---- the table changed while the tool reads it -------------------------- */

#if defined(__x86_64__)
/* Where path is mapped in process pid, 0 if it is not. */
static unsigned long mapped_at(pid_t pid, const char *path) {
  char maps[64], line[512];
  snprintf(maps, sizeof maps, "/proc/%d/maps", (int)pid);
  FILE *f = fopen(maps, "re");
  CHECK_NOT_NULL(f);
  unsigned long at = 0;
  while (at == 0 && fgets(line, sizeof line, f)) {
    char *name = strchr(line, '/');
    if (name && strncmp(name, path, strlen(path)) == 0 && name[strlen(path)] == '\n')
      at = strtoul(line, NULL, 16);
  }
  fclose(f);
  return at;
}

#define DEBUGREG(i) ((void *)offsetof(struct user, u_debugreg[i]))
#endif

/* Run sstm-top (args as for run_tool) under ptrace, and call change(path)
 * at the moment the tool has read the header's nentries for the first time
 * (table_open validating it) and nothing after it: a hardware watchpoint
 * on that field, armed when the tool closes a descriptor with path mapped
 * (the close after table_open's mmap). The tool stays stopped while the
 * table changes: deterministic, no timing. Returns false, after reaping the
 * tool, where this cannot be done (not x86-64, ptrace refused, debug
 * registers refused, or a watchpoint that never fires): skip the test. */
static bool run_tool_changing(tool_run_t *r, const char *path, void (*change)(const char *path),
                              const char *a1, const char *a2, const char *a3, const char *a4,
                              const char *a5) {
#if !defined(__x86_64__)
  (void)path, (void)change, (void)a1, (void)a2, (void)a3, (void)a4, (void)a5;
  *r = (tool_run_t){0, NULL, NULL}; /* for tool_free */
  return false;
#else
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
    int phase = 0; /* 0: system-call stops until path is mapped, 1: watching, 2: changed */
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
        unsigned long base = regs.orig_rax == SYS_close ? mapped_at(pid, path) : 0;
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
        change(path);
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

/* The header says 1000 entries; the file holds 4. */
static void grow_nentries(const char *path) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  CHECK_GE_I(fd, 0);
  uint32_t n = 1000;
  CHECK_EQ_I(pwrite(fd, &n, sizeof n, offsetof(sstm_stt_header_t, nentries)), (long long)sizeof n);
  CHECK_EQ_I(close(fd), 0);
}

static void truncate_table(const char *path) { CHECK_EQ_I(truncate(path, 0), 0); }

/* One tool run over a fresh copy of the table h (n bytes) for pid, changed
 * by change once the tool has validated nentries; skips the test (after
 * cleaning up) where the tool cannot be stopped there. */
static void changed_run(tool_run_t *r, pid_t pid, const char *path, sstm_stt_header_t *h, size_t n,
                        void (*change)(const char *), const char *a1, const char *a2,
                        const char *a3, const char *a4, const char *a5) {
  write_file(path, h, n, 0600);
  if (run_tool_changing(r, path, change, a1, a2, a3, a4, a5)) return;
  tool_free(r);
  free(h);
  unlink(path);
  reap(pid);
  sstm_test_skip("cannot stop sstm-top at its read of nentries (needs x86-64, ptrace and "
                 "hardware watchpoints)");
}

/* nentries grows after table_open validated it: the tool keeps the
 * validated count (a re-read one would take the entry loops beyond the
 * 4 entries mapped: SIGBUS or SIGSEGV). */
TEST(header_changed) {
  pid_t pid = sleeper();
  char path[64], p[16];
  snprintf(path, sizeof path, SSTM_STT_PATH_FMT, (int)pid);
  snprintf(p, sizeof p, "%d", (int)pid);
  size_t n;
  sstm_stt_header_t *h = fake_table(pid, 4, &n);
  sstm_stt_entry_t *e = (sstm_stt_entry_t *)(void *)(h + 1);
  for (int i = 0; i < 4; i++)
    e[i].in_use = 1, e[i].slot = (uint32_t)i;
  tool_run_t r;
  changed_run(&r, pid, path, h, n, grow_nentries, "-j", p, NULL, NULL, NULL);
  check_exit(&r, 0, "-j, nentries grown after validation");
  jval_t *j = jparse(r.out);
  CHECK_EQ_U(ju(j, "nentries"), 4);
  CHECK_EQ_U(ju(j, "in_use"), 4);
  CHECK_EQ_U(jget(j, "entries")->n, 4);
  jfree(j);
  tool_free(&r);
  changed_run(&r, pid, path, h, n, grow_nentries, "-n", "1", "-i", "0.01", p);
  check_exit(&r, 0, "live view, nentries grown after validation");
  CHECK_CONTAINS(r.out, "threads 4/4 ");
  tool_free(&r);
  changed_run(&r, pid, path, h, n, grow_nentries, "-l", NULL, NULL, NULL, NULL);
  check_exit(&r, 0, "-l, nentries grown after validation");
  CHECK_EQ_I(listed_threads(r.out, pid), 4);
  tool_free(&r);
  free(h);
  CHECK_EQ_I(unlink(path), 0);
  reap(pid);
}

/* The table truncated to nothing under the tool's mapping (SIGBUS at the
 * next read): -j and the live view end with the message and status 1; the
 * listing reports that table and goes on. Never killed by the signal. */
TEST(truncated_while_read) {
  pid_t pid = sleeper();
  char path[64], p[16], want[128];
  snprintf(path, sizeof path, SSTM_STT_PATH_FMT, (int)pid);
  snprintf(p, sizeof p, "%d", (int)pid);
  size_t n;
  sstm_stt_header_t *h = fake_table(pid, 4, &n);
  tool_run_t r;
  changed_run(&r, pid, path, h, n, truncate_table, "-l", NULL, NULL, NULL, NULL);
  check_exit(&r, 0, "-l, table truncated while read");
  CHECK_EQ_I(listed_threads(r.out, pid), 0); /* "-": no count */
  snprintf(want, sizeof want, "(%s: the state table shrank while being read)", path);
  CHECK_CONTAINS(r.out, want);
  tool_free(&r);
  changed_run(&r, pid, path, h, n, truncate_table, "-j", p, NULL, NULL, NULL);
  check_exit(&r, 1, "-j, table truncated while read");
  CHECK_CONTAINS(r.err, "shrank while being read");
  tool_free(&r);
  changed_run(&r, pid, path, h, n, truncate_table, "-n", "1", "-i", "0.01", p);
  check_exit(&r, 1, "live view, table truncated while read");
  CHECK_CONTAINS(r.err, "shrank while being read");
  tool_free(&r);
  free(h);
  CHECK_EQ_I(unlink(path), 0);
  reap(pid);
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
  pid_t pid = sleeper_named("n\033]0;x\a\x9b");
  char path[64], p[16], want[128];
  snprintf(path, sizeof path, SSTM_STT_PATH_FMT, (int)pid);
  snprintf(p, sizeof p, "%d", (int)pid);
  size_t n;
  sstm_stt_header_t *h = fake_table(pid, 2, &n);
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
  write_file(path, h, n, 0600);
  free(h);
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
  CHECK_EQ_I(unlink(path), 0);
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
 * a private 64 KiB tmpfs on /dev/shm. */
static void shm_full_child(void) {
  if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
      mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "size=64k") != 0)
    sstm_test_skip("cannot mount a private tmpfs on /dev/shm here");
  sstm_config_t c;
  sstm_test_config(&c);
  c.state_table = true;
  c.max_threads = 64; /* a table of 7 pages */
  char path[64];
  snprintf(path, sizeof path, SSTM_STT_PATH_FMT, (int)getpid());
  size_t size = sizeof(sstm_stt_header_t) + 64 * sizeof(sstm_stt_entry_t);
  CHECK_GT_U(size, 4096 + sizeof(sstm_stt_header_t)); /* the entries need a page of their own */
  const char *fill = "/dev/shm/fill";
  /* 1. Not a page free: the header's first write used to be a SIGBUS. */
  fill_shm(fill, 0);
  CHECK_EQ_I(sstm_init(&c), SSTM_ENOMEM);
  CHECK_CONTAINS(sstm_last_error(), "state table");
  CHECK_CONTAINS(sstm_last_error(), strerror(ENOSPC));
  errno = 0;
  CHECK_EQ_I(access(path, F_OK), -1); /* nothing left behind */
  CHECK_EQ_I(errno, ENOENT);
  /* 2. Room for the header's page, not for all entries (the entry of a
   * thread registered later used to be the SIGBUS). */
  fill_shm(fill, 4096);
  CHECK_EQ_I(sstm_init(&c), SSTM_ENOMEM);
  CHECK_CONTAINS(sstm_last_error(), strerror(ENOSPC));
  CHECK_EQ_I(access(path, F_OK), -1);
  /* 3. Room: the table is created with all its pages. */
  CHECK_EQ_I(unlink(fill), 0);
  CHECK_OK(sstm_init(&c));
  struct stat st;
  CHECK_EQ_I(stat(path, &st), 0);
  CHECK_EQ_U(st.st_size, size);
  CHECK_GE_U((uint64_t)st.st_blocks * 512, size);
  CHECK_OK(sstm_thread_init());
  accounts[0] = 0;
  CHECK_OK(sstm_run(NULL, bump_fn, NULL));
  CHECK_OK(sstm_thread_exit());
  CHECK_OK(sstm_shutdown());
  CHECK_EQ_I(access(path, F_OK), -1);
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

/* ---- fork ---------------------------------------------------------------------- */

/* The entry of slot, read through the file (not through a mapping). */
static sstm_stt_entry_t file_entry(const char *path, unsigned slot) {
  sstm_stt_entry_t e;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  CHECK_GE_I(fd, 0);
  off_t off = (off_t)(sizeof(sstm_stt_header_t) + slot * sizeof e);
  CHECK_EQ_I(pread(fd, &e, sizeof e, off), (long long)sizeof e);
  CHECK_EQ_I(close(fd), 0);
  return e;
}

static void incr_fn(void *p) {
  (void)p;
  sstm_store_i64(&accounts[0], sstm_load_i64(&accounts[0]) + 1);
}

/* A child of fork() inherits the mapping of the parent's table and its
 * registered descriptor: its transactions must not count in the parent's
 * entry, and its sstm_shutdown must not remove the parent's file. */
TEST(fork_child) {
  sstm_config_t c;
  sstm_test_config(&c);
  c.state_table = true;
  CHECK_OK(sstm_init(&c));
  CHECK_OK(sstm_thread_init());
  char path[64];
  snprintf(path, sizeof path, SSTM_STT_PATH_FMT, (int)getpid());
  accounts[0] = 0;
  for (int i = 0; i < 100; i++)
    CHECK_OK(sstm_run(NULL, incr_fn, NULL));
  unsigned slot = sstm_desc_slot(sstm_self());
  sstm_stt_entry_t before = file_entry(path, slot);
  CHECK_EQ_U(before.in_use, 1);
  CHECK_EQ_U(before.commits, 100);
  fflush(stdout);
  fflush(stderr);
  pid_t pid = sstm_test_fork();
  CHECK_GE_I(pid, 0);
  if (pid == 0) {
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
  struct stat sb;
  CHECK_MSG(stat(path, &sb) == 0, "%s: %s after the child's sstm_shutdown", path, strerror(errno));
  sstm_stt_entry_t after = file_entry(path, slot);
  CHECK_EQ_U(after.in_use, 1);    /* the child's thread exit is not ours */
  CHECK_EQ_U(after.commits, 100); /* nor are its 1000 commits */
  CHECK_EQ_U(after.txid, before.txid);
  CHECK_EQ_I(after.tid, before.tid);
  CHECK_EQ_I(accounts[0], 100);
  /* The parent's table goes on. */
  for (int i = 0; i < 10; i++)
    CHECK_OK(sstm_run(NULL, incr_fn, NULL));
  CHECK_EQ_U(file_entry(path, slot).commits, 110);
  jval_t *j = snapshot_json(getpid());
  CHECK_EQ_U(ju(j, "in_use"), 1);
  CHECK_EQ_U(ju(jget(j, "totals"), "commits"), 110);
  jfree(j);
  CHECK_OK(sstm_thread_exit());
  CHECK_OK(sstm_shutdown());
  errno = 0;
  CHECK_EQ_I(stat(path, &sb), -1);
  CHECK_EQ_I(errno, ENOENT);
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
  int st;
  while (waitpid(p.pid, &st, 0) < 0)
    CHECK_EQ_I(errno, EINTR);
  tool_run_t r;
  tool_collect(&p, st, &r);
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

SSTM_TEST_MAIN()
