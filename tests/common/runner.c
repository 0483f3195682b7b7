/* SPDX-License-Identifier: MIT */
/* schedstm tests: runner implementation (see runner.h). */
#define _GNU_SOURCE
#include "runner.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_TESTS 256

static struct {
  const char *name;
  sstm_test_fn fn;
} g_tests[MAX_TESTS];
static int g_ntests;

static char g_name[256] = "?";
static char g_cmd[1024] = "";
static uint64_t g_seed;
static __thread int t_index = -1;

void sstm_test_register(const char *name, sstm_test_fn fn) {
  if (g_ntests >= MAX_TESTS) {
    fprintf(stderr, "too many tests\n");
    abort();
  }
  g_tests[g_ntests].name = name;
  g_tests[g_ntests].fn = fn;
  g_ntests++;
}

static uint64_t fnv1a(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) {
    h ^= (unsigned char)*s;
    h *= 1099511628211ull;
  }
  return h;
}

const char *sstm_test_name(void) { return g_name; }
uint64_t sstm_test_seed(void) { return g_seed; }
int sstm_test_thread_index(void) { return t_index; }

void sstm_test_failf(const char *file, int line, const char *fmt, ...) {
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fflush(stdout);
  fprintf(stderr,
          "FAIL %s [thread %d, seed %llu] at %s:%d:\n  %s\n"
          "  reproduce: SSTM_TEST_SEED=%llu %s\n",
          g_name, t_index, (unsigned long long)g_seed, file, line, msg, (unsigned long long)g_seed,
          g_cmd);
  fflush(stderr);
  abort();
}

void sstm_test_skip(const char *why) {
  printf("SKIP %s: %s\n", g_name, why);
  fflush(stdout);
  exit(SSTM_TEST_SKIP);
}

long sstm_test_env_long(const char *var, long dflt) {
  const char *s = getenv(var);
  if (!s || !*s) return dflt;
  char *end;
  errno = 0;
  long v = strtol(s, &end, 0);
  if (errno || *end) {
    fprintf(stderr, "bad value of %s: \"%s\"\n", var, s);
    abort();
  }
  return v;
}

bool sstm_test_long_mode(void) { return sstm_test_env_long("SSTM_TEST_LONG", 0) != 0; }

bool sstm_test_in_futex(int tid) {
  char path[64], buf[64];
  snprintf(path, sizeof path, "/proc/self/task/%d/syscall", tid);
  FILE *f = fopen(path, "r");
  if (f == NULL) sstm_test_failf(__FILE__, __LINE__, "cannot open %s: %s", path, strerror(errno));
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  return atoi(buf) == SYS_futex && buf[0] != '-';
}

double sstm_test_scale(void) {
  const char *s = getenv("SSTM_TEST_SCALE");
  if (!s || !*s) return 1.0;
  char *end;
  double v = strtod(s, &end);
  if (*end || !(v > 0)) {
    fprintf(stderr, "bad value of SSTM_TEST_SCALE: \"%s\"\n", s);
    abort();
  }
  return v;
}

uint64_t sstm_test_scaled(uint64_t n, uint64_t lo) {
  double v = (double)n * sstm_test_scale();
  uint64_t r = (uint64_t)v;
  return r < lo ? lo : r;
}

unsigned sstm_test_threads(unsigned n) {
  /* Thread counts are part of a test's identity: only shrink them when
   * asked to (SSTM_TEST_SCALE_THREADS=1) and never below 2 unless n is. */
  if (!sstm_test_env_long("SSTM_TEST_SCALE_THREADS", 0)) return n;
  unsigned r = (unsigned)((double)n * sstm_test_scale());
  unsigned lo = n < 2 ? n : 2;
  return r < lo ? lo : (r > n ? n : r);
}

/* ---- rng ---------------------------------------------------------------- */

static uint64_t splitmix64(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

void sstm_rng_seed(sstm_rng_t *r, uint64_t seed) {
  uint64_t x = seed;
  r->s = splitmix64(&x);
  if (r->s == 0) r->s = 0x2545f4914f6cdd1dull;
}

uint64_t sstm_rng_next(sstm_rng_t *r) {
  /* xorshift64* */
  uint64_t x = r->s;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  r->s = x;
  return x * 0x2545f4914f6cdd1dull;
}

/* ---- watchdog ----------------------------------------------------------- */

static void on_alarm(int sig) {
  (void)sig;
  char buf[512];
  int n = snprintf(buf, sizeof buf,
                   "TIMEOUT %s [seed %llu]: watchdog fired (hang or livelock)\n"
                   "  reproduce: SSTM_TEST_SEED=%llu %s\n",
                   g_name, (unsigned long long)g_seed, (unsigned long long)g_seed, g_cmd);
  if (n > 0) {
    ssize_t w = write(2, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
    (void)w;
  }
  _exit(124);
}

static void setup_common(const char *name, int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  snprintf(g_name, sizeof g_name, "%s", name);
  size_t off = 0;
  for (int i = 0; i < argc && off < sizeof g_cmd - 1; i++) {
    int n = snprintf(g_cmd + off, sizeof g_cmd - off, "%s%s", i ? " " : "", argv[i]);
    if (n < 0) break;
    off += (size_t)n;
  }
  const char *s = getenv("SSTM_TEST_SEED");
  if (s && *s) {
    /* Strictly (decimal or 0x hex, nothing after it): a mistyped seed must
     * not run the case with another one, which the failure's reproduce
     * line would then print as if it had been asked for. */
    char *end;
    errno = 0;
    g_seed = (s[0] >= '0' && s[0] <= '9') ? strtoull(s, &end, 0) : 0;
    if (!(s[0] >= '0' && s[0] <= '9') || errno || *end) {
      fprintf(stderr, "bad value of SSTM_TEST_SEED: \"%s\" (a decimal or 0x number)\n", s);
      abort();
    }
  } else
    g_seed = fnv1a(name);
  const char *d = getenv("SSTM_TEST_DESIGN");
  if (d && *d) {
    /* part of the identity of the run */
    size_t l = strlen(g_name);
    snprintf(g_name + l, sizeof g_name - l, " (design %s)", d);
  }
  long wd = sstm_test_env_long("SSTM_TEST_WATCHDOG", 0);
  if (wd > 0) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, NULL);
    alarm((unsigned)wd);
  }
}

void sstm_test_setup(const char *name, int argc, char **argv) { setup_common(name, argc, argv); }

int sstm_test_main(int argc, char **argv) {
  if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
    printf("usage: %s [NAME | --list | --help]\n"
           "  NAME     run the test case NAME in this process\n"
           "  --list   list the test cases\n"
           "  (none)   run every case, each in a process of its own\n"
           "Environment: SSTM_TEST_SEED=N (the seed; default derived from the case's\n"
           "name), SSTM_TEST_SCALE=X (iteration counts times X > 0), SSTM_TEST_DESIGN=\n"
           "etl|ctl, SSTM_TEST_WATCHDOG=SECONDS (a hung case exits 124), SSTM_TEST_LONG=1.\n"
           "Exit status: 0 passed, 77 skipped, 2 unknown case, else failed.\n",
           argv[0]);
    return 0;
  }
  if (argc >= 2 && strcmp(argv[1], "--list") == 0) {
    for (int i = 0; i < g_ntests; i++)
      printf("%s\n", g_tests[i].name);
    return 0;
  }
  if (argc >= 2) {
    for (int i = 0; i < g_ntests; i++) {
      if (strcmp(argv[1], g_tests[i].name) == 0) {
        setup_common(g_tests[i].name, argc, argv);
        g_tests[i].fn();
        printf("PASS %s\n", g_name);
        return 0;
      }
    }
    fprintf(stderr, "unknown test \"%s\" (try --list)\n", argv[1]);
    return 2;
  }
  /* Run all, each in its own process. */
  int failed = 0, skipped = 0;
  for (int i = 0; i < g_ntests; i++) {
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
      perror("fork");
      return 2;
    }
    if (pid == 0) {
      char *args[] = {argv[0], (char *)g_tests[i].name, NULL};
      execv("/proc/self/exe", args);
      perror("execv");
      _exit(127);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    if (WIFEXITED(st) && WEXITSTATUS(st) == SSTM_TEST_SKIP)
      skipped++;
    else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
      printf("FAILED: %s\n", g_tests[i].name);
      failed++;
    }
  }
  printf("%d tests, %d failed, %d skipped\n", g_ntests, failed, skipped);
  return failed ? 1 : 0;
}

static pid_t fork_parent; /* in a child of sstm_test_fork: its parent */

void sstm_test_child_rearm(void) {
  /* The parent may have ended before the prctl: then the child ends. */
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != fork_parent) _exit(125);
}

pid_t sstm_test_fork(void) {
  pid_t parent = getpid();
  pid_t pid = fork();
  /* async-signal-safe only in the child: the parent may have threads. */
  if (pid == 0) {
    fork_parent = parent;
    sstm_test_child_rearm();
  }
  return pid;
}

void sstm_test_expect_abort(void (*fn)(void), const char *what, const char *want) {
  int pfd[2];
  CHECK_EQ_I(pipe(pfd), 0);
  fflush(stdout);
  fflush(stderr);
  pid_t pid = sstm_test_fork();
  CHECK_GE_I(pid, 0);
  if (pid == 0) {
    dup2(pfd[1], 2);
    close(pfd[0]);
    signal(SIGABRT, SIG_DFL);
    fn();
    _exit(0); /* not reached if fn aborted */
  }
  close(pfd[1]);
  char out[4096];
  size_t n = 0;
  ssize_t r;
  while (n < sizeof out - 1 && (r = read(pfd[0], out + n, sizeof out - 1 - n)) > 0)
    n += (size_t)r;
  out[n] = 0;
  close(pfd[0]);
  int st;
  CHECK_EQ_I(waitpid(pid, &st, 0), pid);
  CHECK_MSG(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT,
            "%s: child did not abort (status 0x%x); stderr: %s", what, st, out);
  CHECK_MSG(n > 0, "%s: nothing printed on stderr", what);
  if (want) CHECK_MSG(strstr(out, want) != NULL, "%s: stderr lacks \"%s\": %s", what, want, out);
}

/* ---- library setup ------------------------------------------------------ */

sstm_design_t sstm_test_design(void) {
  const char *d = getenv("SSTM_TEST_DESIGN");
  if (!d || !*d || strcmp(d, "etl") == 0) return SSTM_DESIGN_ETL;
  if (strcmp(d, "ctl") == 0) return SSTM_DESIGN_CTL;
  fprintf(stderr, "bad SSTM_TEST_DESIGN \"%s\" (etl|ctl)\n", d);
  abort();
}

void sstm_test_env_knobs(sstm_config_t *cfg) {
  sstm_config_t e;
  sstm_config_default(&e);
  int rc = sstm_config_from_env(&e);
  CHECK_MSG(rc == 0, "the SCHEDSTM_* environment: %s", sstm_last_error());
  cfg->softser_lever = e.softser_lever;
  cfg->ext_mode = e.ext_mode;
  cfg->ext_slice_us = e.ext_slice_us;
  cfg->prio_escalate = e.prio_escalate;
  cfg->no_membarrier = e.no_membarrier;
  cfg->backoff_min_ns = e.backoff_min_ns;
  cfg->backoff_max_ns = e.backoff_max_ns;
}

void sstm_test_config(sstm_config_t *cfg) {
  sstm_config_default(cfg);
  cfg->use_env = false;
  /* The tests' conflicts are written against the policy that aborts and
   * restarts at once (the library's default until adaptive took its
   * place); a test of another policy names it. */
  cfg->cm = "suicide";
  cfg->design = sstm_test_design();
  sstm_test_env_knobs(cfg);
}

void sstm_test_init(void) {
  sstm_config_t cfg;
  sstm_test_config(&cfg);
  CHECK_OK(sstm_init(&cfg));
  CHECK_OK(sstm_thread_init());
}

void sstm_test_tmp_file(char *path, size_t cap, const char *tag) {
  int n = snprintf(path, cap, "/tmp/sstm-%s-XXXXXX", tag);
  CHECK(n > 0 && (size_t)n < cap);
  int fd = mkstemp(path);
  CHECK_GE_I(fd, 0);
  close(fd);
}

void sstm_test_init_sampling(unsigned period, sstm_sample_fn fn, void *arg) {
  sstm_config_t cfg;
  sstm_test_config(&cfg);
  cfg.sample_period = period;
  cfg.sample_fn = fn;
  cfg.sample_arg = arg;
  CHECK_OK(sstm_init(&cfg));
  CHECK_OK(sstm_thread_init());
}

void sstm_test_fini(void) {
  CHECK_OK(sstm_thread_exit());
  CHECK_OK(sstm_shutdown());
}

/* ---- threads ------------------------------------------------------------ */

struct run_ctx {
  pthread_barrier_t start;
  void (*fn)(sstm_tt_t *t);
  bool reg;
};

struct thread_arg {
  struct run_ctx *ctx;
  sstm_tt_t tt;
};

static void *thread_main(void *p) {
  struct thread_arg *a = p;
  t_index = (int)a->tt.idx;
  if (a->ctx->reg) CHECK_OK(sstm_thread_init());
  pthread_barrier_wait(&a->ctx->start);
  a->ctx->fn(&a->tt);
  if (a->ctx->reg) CHECK_OK(sstm_thread_exit());
  return NULL;
}

void sstm_test_run_threads(unsigned n, bool register_thread, void (*fn)(sstm_tt_t *t), void *arg) {
  struct run_ctx ctx;
  ctx.fn = fn;
  ctx.reg = register_thread;
  CHECK_EQ_I(pthread_barrier_init(&ctx.start, NULL, n), 0);
  pthread_t *th = calloc(n, sizeof *th);
  struct thread_arg *args = calloc(n, sizeof *args);
  CHECK_NOT_NULL(th);
  CHECK_NOT_NULL(args);
  for (unsigned i = 0; i < n; i++) {
    args[i].ctx = &ctx;
    args[i].tt.idx = i;
    args[i].tt.n = n;
    uint64_t x = g_seed ^ (0x9e3779b97f4a7c15ull * (i + 1));
    args[i].tt.seed = splitmix64(&x);
    sstm_rng_seed(&args[i].tt.rng, args[i].tt.seed);
    args[i].tt.arg = arg;
    int rc = pthread_create(&th[i], NULL, thread_main, &args[i]);
    CHECK_MSG(rc == 0, "pthread_create: %s", strerror(rc));
  }
  for (unsigned i = 0; i < n; i++)
    CHECK_EQ_I(pthread_join(th[i], NULL), 0);
  pthread_barrier_destroy(&ctx.start);
  free(th);
  free(args);
}

void sstm_test_barrier_init(sstm_test_barrier_t *b, unsigned n) {
  b->n = n;
  b->count = 0;
  b->generation = 0;
}

void sstm_test_barrier_wait(sstm_test_barrier_t *b) {
  unsigned gen = __atomic_load_n(&b->generation, __ATOMIC_ACQUIRE);
  if (__atomic_add_fetch(&b->count, 1, __ATOMIC_ACQ_REL) == b->n) {
    __atomic_store_n(&b->count, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&b->generation, gen + 1, __ATOMIC_RELEASE);
    return;
  }
  while (__atomic_load_n(&b->generation, __ATOMIC_ACQUIRE) == gen)
    sched_yield();
}

void sstm_test_relax(void) { sched_yield(); }
