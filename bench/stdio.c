/* SPDX-License-Identifier: MIT */
/* stdio-schedstm: the file-operation benchmarks of [Smiljkovic13] (Fig. 4)
 * on the transactional stdio (include/schedstm/stdio.h).
 *
 * Threads run, for a fixed time, transactions of K calls of one operation
 * (fgetc, fgets, fread, fputc, fputs, fwrite, or mix: fseek to a random
 * line, fgets, fputs) on one shared stream or on a stream per thread
 * (a file each); "empty" runs transactions (critical sections) with no
 * call, the floor of each mode. Modes:
 *   tx       our stdio inside transactions (sstm_run)
 *   irr      the same work in irrevocable transactions (attr.irrevocable):
 *            what a TM without a TM-aware library must do
 *   ntx      our stdio outside transactions (each call a transaction of
 *            its own, the library's ordering with non-transactional use)
 *   glibc    glibc's stdio, the K calls under one process-wide mutex
 *   glibc-stream  glibc's stdio with only its own per-FILE lock
 * Reads go over a prepared file (lines of 64 bytes) and rewind at its end;
 * writes go to an empty file, which is removed after the run. -s pipe
 * (reads only) reads one shared stream over a pipe instead, which a plain
 * thread fills with the same lines as fast as the readers take them: a
 * byte stream, read through its arrival log (docs/design/tm-libc.md
 * (S6)).
 *
 * The shape of [Smiljkovic13]'s Fig. 4: its library makes every call a
 * transaction of its own (the call's body in an atomic block, its Fig. 1d)
 * and its threads call fgetc ... fwrite in a loop on one shared FILE, so a
 * transaction there is one call: -k 1, the default, is that shape (-s
 * shared is its sharing; -s private, a file per thread, is not in the
 * paper). Its "serial TM" is the same library with every such transaction
 * irrevocable: -m irr -k 1. The paper states no sizes for the calls (its
 * files are 2 GiB, on disk); here fgets, fread, fputs and fwrite move 64
 * bytes; our streams buffer 4 KiB, glibc the file's st_blksize (usually
 * 4 KiB). Calls that a program makes outside its own transactions, each
 * made atomic by the library, as the paper's benchmarks make them, are
 * -m ntx. -k K > 1 batches K calls in one transaction, a shape the paper
 * does not measure. -b BYTES sets every stream's buffers to BYTES (our
 * sstm_setvbuf, glibc's setvbuf, _IOFBF) before its first use.
 *
 * Output: one JSON object per run on stdout: operations (calls) per
 * second, the process's CPU time during the run (user and system: with
 * more threads than CPUs, calls per CPU second tell a call's cost apart
 * from the share of the CPUs the run got and from its waiting), commits,
 * the fraction of irrevocable commits and the aborts by reason (schedstm
 * modes). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <schedstm/schedstm.h>

enum op { OP_FGETC, OP_FGETS, OP_FREAD, OP_FPUTC, OP_FPUTS, OP_FWRITE, OP_MIX, OP_EMPTY, OP_N };
static const char *op_names[OP_N] = {"fgetc", "fgets",  "fread", "fputc",
                                     "fputs", "fwrite", "mix",   "empty"};
enum mode { M_TX, M_IRR, M_NTX, M_GLIBC, M_GLIBC_STREAM, M_N };
static const char *mode_names[M_N] = {"tx", "irr", "ntx", "glibc", "glibc-stream"};

#define LINE 64
#define READ_LINES 16384 /* a 1 MiB file to read */

static struct {
  enum op op;
  enum mode mode;
  bool shared;
  bool pipe; /* -s pipe: one shared stream over a pipe, fed by a thread */
  unsigned threads;
  unsigned k; /* calls per transaction / critical section */
  unsigned ms;
  unsigned buf; /* bytes per buffer (-b), 0: each library's default */
  char dir[256];
} opt = {.op = OP_FPUTC, .mode = M_TX, .threads = 1, .k = 1, .ms = 500};

static pthread_mutex_t big_lock = PTHREAD_MUTEX_INITIALIZER;
/* The end of the run; relaxed: a flag, the join orders what follows. */
static _Atomic int stop;
static pthread_barrier_t start_gate;

static bool is_read(enum op o) { return o <= OP_FREAD || o == OP_MIX; }

typedef struct worker {
  unsigned idx;
  sstm_file_t *sf;
  FILE *gf;
  char *gbuf; /* glibc's buffer under -b (setvbuf ignores the size without one) */
  uint64_t ops;
  uint64_t rng;
  char path[288];
} worker_t;

static const char line_text[LINE + 1] =
    "the quick brown fox jumps over the lazy dog 0123456789 abcdefgh\n";

static void die(const char *what) {
  fprintf(stderr, "stdio-schedstm: %s: %s\n", what, strerror(errno));
  exit(1);
}

static void prepare(const char *path) {
  FILE *f = fopen(path, "w");
  if (f == NULL) die(path);
  if (is_read(opt.op))
    for (int i = 0; i < READ_LINES; i++)
      fputs(line_text, f);
  if (fclose(f) != 0) die(path);
}

/* ---- one call of the operation, on our stdio ---------------------------- */

static void our_call(worker_t *w) {
  sstm_file_t *f = w->sf;
  char buf[LINE + 1];
  switch (opt.op) {
  case OP_FGETC:
    if (sstm_fgetc(f) == EOF) sstm_rewind(f);
    break;
  case OP_FGETS:
    if (sstm_fgets(buf, sizeof buf, f) == NULL) sstm_rewind(f);
    break;
  case OP_FREAD:
    if (sstm_fread(buf, 1, LINE, f) != LINE) sstm_rewind(f);
    break;
  case OP_FPUTC: sstm_fputc('x', f); break;
  case OP_FPUTS: sstm_fputs(line_text, f); break;
  case OP_FWRITE: sstm_fwrite(line_text, 1, LINE, f); break;
  case OP_MIX: {
    w->rng = w->rng * 6364136223846793005ULL + 1442695040888963407ULL;
    off_t at = (off_t)((w->rng >> 33) % READ_LINES) * LINE;
    sstm_fseek(f, at, SEEK_SET);
    sstm_fgets(buf, sizeof buf, f);
    sstm_fputs(line_text, f);
    break;
  }
  default: break;
  }
}

static void glibc_call(worker_t *w) {
  FILE *f = w->gf;
  char buf[LINE + 1];
  switch (opt.op) {
  case OP_FGETC:
    if (fgetc(f) == EOF) rewind(f);
    break;
  case OP_FGETS:
    if (fgets(buf, sizeof buf, f) == NULL) rewind(f);
    break;
  case OP_FREAD:
    if (fread(buf, 1, LINE, f) != LINE) rewind(f);
    break;
  case OP_FPUTC: fputc('x', f); break;
  case OP_FPUTS: fputs(line_text, f); break;
  case OP_FWRITE: fwrite(line_text, 1, LINE, f); break;
  case OP_MIX: {
    w->rng = w->rng * 6364136223846793005ULL + 1442695040888963407ULL;
    long at = (long)((w->rng >> 33) % READ_LINES) * LINE;
    fseek(f, at, SEEK_SET);
    if (fgets(buf, sizeof buf, f) == NULL) clearerr(f);
    fputs(line_text, f);
    break;
  }
  default: break;
  }
}

static void tx_body(void *arg) {
  worker_t *w = arg;
  for (unsigned i = 0; i < opt.k; i++)
    our_call(w);
}

/* -s pipe: fill the pipe with lines until its reading end is closed (the
 * write then fails with EPIPE; SIGPIPE is ignored). */
static void *feeder(void *arg) {
  int fd = (int)(intptr_t)arg;
  static char block[LINE * 1024];
  for (size_t i = 0; i < sizeof block; i += LINE)
    memcpy(block + i, line_text, LINE);
  for (;;) {
    size_t off = 0;
    while (off < sizeof block) {
      ssize_t k = write(fd, block + off, sizeof block - off);
      if (k < 0 && errno == EINTR) continue;
      if (k <= 0) return NULL;
      off += (size_t)k;
    }
  }
}

static void *run_worker(void *arg) {
  worker_t *w = arg;
  bool ours = opt.mode <= M_NTX;
  if (ours && sstm_thread_init() != 0) die("sstm_thread_init");
  sstm_attr_t irr = {.irrevocable = true};
  pthread_barrier_wait(&start_gate);
  uint64_t n = 0;
  while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
    switch (opt.mode) {
    case M_TX: sstm_run(NULL, tx_body, w); break;
    case M_IRR: sstm_run(&irr, tx_body, w); break;
    case M_NTX:
      for (unsigned i = 0; i < opt.k; i++)
        our_call(w);
      break;
    case M_GLIBC:
      pthread_mutex_lock(&big_lock);
      for (unsigned i = 0; i < opt.k; i++)
        glibc_call(w);
      pthread_mutex_unlock(&big_lock);
      break;
    case M_GLIBC_STREAM:
      for (unsigned i = 0; i < opt.k; i++)
        glibc_call(w);
      break;
    default: break;
    }
    n += opt.k;
  }
  w->ops = n;
  if (ours) sstm_thread_exit();
  return NULL;
}

static void usage(FILE *out, const char *prog) {
  fprintf(out,
          "usage: %s [-o fgetc|fgets|fread|fputc|fputs|fwrite|mix|empty] "
          "[-m tx|irr|ntx|glibc|glibc-stream] [-s shared|private|pipe] [-n threads] "
          "[-k calls per transaction] [-d duration ms] [-b buffer bytes]\n",
          prog);
}

/* A whole decimal number in [min, max], or status 2 with the option named:
 * atoi took "10x" as 10 and "x" as 0. */
static unsigned num(const char *v, const char *optname, unsigned long min, unsigned long max) {
  char *end;
  errno = 0;
  unsigned long x = strtoul(v, &end, 10);
  if (v[0] < '0' || v[0] > '9' || *end || errno || x < min || x > max) {
    fprintf(stderr, "stdio-schedstm: %s: '%s' is not a whole number in %lu..%lu\n", optname, v, min,
            max);
    exit(2);
  }
  return (unsigned)x;
}

static int lookup(const char *v, const char *const *names, int n, const char *what) {
  for (int i = 0; i < n; i++)
    if (strcmp(v, names[i]) == 0) return i;
  fprintf(stderr, "stdio-schedstm: unknown %s '%s'\n", what, v);
  exit(2);
}

/* The process's CPU time (user and system), in seconds. */
static double cpu_s(void) {
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) != 0) die("getrusage");
  return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  int c;
  static const struct option longopts[] = {{"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
  while ((c = getopt_long(argc, argv, "o:m:s:n:k:d:b:h", longopts, NULL)) != -1) {
    switch (c) {
    case 'o': opt.op = (enum op)lookup(optarg, op_names, OP_N, "operation"); break;
    case 'm': opt.mode = (enum mode)lookup(optarg, mode_names, M_N, "mode"); break;
    case 's':
      if (strcmp(optarg, "shared") != 0 && strcmp(optarg, "private") != 0 &&
          strcmp(optarg, "pipe") != 0) {
        usage(stderr, argv[0]);
        return 2;
      }
      opt.pipe = strcmp(optarg, "pipe") == 0;
      opt.shared = opt.pipe || strcmp(optarg, "shared") == 0;
      break;
    case 'n': opt.threads = num(optarg, "-n", 1, 256); break;
    case 'k': opt.k = num(optarg, "-k", 1, 1000000); break;
    case 'd': opt.ms = num(optarg, "-d", 1, 3600000); break;
    case 'b': opt.buf = num(optarg, "-b", 0, 1u << 30); break;
    case 'h': usage(stdout, argv[0]); return 0;
    default: usage(stderr, argv[0]); return 2;
    }
  }
  if (opt.threads < 1 || opt.threads > 256 || opt.k < 1 || opt.ms < 1) {
    usage(stderr, argv[0]);
    return 2;
  }
  if (opt.pipe && !(opt.op == OP_FGETC || opt.op == OP_FGETS || opt.op == OP_FREAD)) {
    fprintf(stderr, "stdio-schedstm: -s pipe reads: -o fgetc, fgets or fread\n");
    return 2;
  }
  /* The files go under $TMPDIR (default /tmp), so that a run can choose the
   * file system whose write path it measures (docs/benchmarks.md, "A stream
   * per thread: where the time goes"). */
  const char *tmp = getenv("TMPDIR");
  if (tmp == NULL || tmp[0] == '\0') tmp = "/tmp";
  if (snprintf(opt.dir, sizeof opt.dir, "%s/stdio-bench-XXXXXX", tmp) >= (int)sizeof opt.dir) {
    fprintf(stderr, "TMPDIR too long\n");
    return 2;
  }
  if (mkdtemp(opt.dir) == NULL) die("mkdtemp");
  bool ours = opt.mode <= M_NTX;
  if (ours) {
    sstm_config_t cfg;
    sstm_config_default(&cfg);
    cfg.use_env = true;
    if (sstm_init(&cfg) != 0 || sstm_thread_init() != 0) die("sstm_init");
  }
  worker_t *ws = calloc(opt.threads, sizeof *ws);
  if (ws == NULL) die("calloc");
  unsigned nfiles = opt.shared ? 1 : opt.threads;
  const char *fmode = is_read(opt.op) ? "r+" : "w";
  int pfd[2] = {-1, -1};
  pthread_t feed;
  if (opt.pipe) {
    if (signal(SIGPIPE, SIG_IGN) == SIG_ERR) die("signal");
    if (pipe2(pfd, O_CLOEXEC) != 0) die("pipe2");
    if (pthread_create(&feed, NULL, feeder, (void *)(intptr_t)pfd[1]) != 0) die("pthread_create");
    if (ours ? (ws[0].sf = sstm_fdopen(pfd[0], "r")) == NULL
             : (ws[0].gf = fdopen(pfd[0], "r")) == NULL)
      die("fdopen");
    if (opt.buf && ours && sstm_setvbuf(ws[0].sf, NULL, _IOFBF, opt.buf) != 0) die("sstm_setvbuf");
    if (opt.buf && !ours) {
      if ((ws[0].gbuf = malloc(opt.buf)) == NULL) die("malloc");
      if (setvbuf(ws[0].gf, ws[0].gbuf, _IOFBF, opt.buf) != 0) die("setvbuf");
    }
    nfiles = 0; /* closed below, after the workers */
  }
  for (unsigned i = 0; i < nfiles; i++) {
    snprintf(ws[i].path, sizeof ws[i].path, "%s/f%u", opt.dir, i);
    prepare(ws[i].path);
    if (ours) {
      ws[i].sf = sstm_fopen(ws[i].path, fmode);
      if (ws[i].sf == NULL) die(ws[i].path);
      if (opt.buf && sstm_setvbuf(ws[i].sf, NULL, _IOFBF, opt.buf) != 0) die("sstm_setvbuf");
    } else {
      ws[i].gf = fopen(ws[i].path, fmode);
      if (ws[i].gf == NULL) die(ws[i].path);
      /* glibc's setvbuf allocates its default buffer (st_blksize bytes)
       * and ignores size when buf is NULL: the size takes a buffer of ours. */
      if (opt.buf) {
        if ((ws[i].gbuf = malloc(opt.buf)) == NULL) die("malloc");
        if (setvbuf(ws[i].gf, ws[i].gbuf, _IOFBF, opt.buf) != 0) die("setvbuf");
      }
    }
  }
  for (unsigned i = 0; i < opt.threads; i++) {
    ws[i].idx = i;
    ws[i].rng = 0x9e3779b97f4a7c15ULL * (i + 1);
    if (opt.shared) ws[i].sf = ws[0].sf, ws[i].gf = ws[0].gf;
  }
  sstm_stats_t s0 = {0}, s1 = {0};
  if (ours) sstm_stats_aggregate(&s0);
  pthread_barrier_init(&start_gate, NULL, opt.threads + 1);
  pthread_t *tids = calloc(opt.threads, sizeof *tids);
  for (unsigned i = 0; i < opt.threads; i++)
    if (pthread_create(&tids[i], NULL, run_worker, &ws[i]) != 0) die("pthread_create");
  double c0 = cpu_s();
  pthread_barrier_wait(&start_gate);
  double t0 = now_s();
  usleep(opt.ms * 1000u);
  atomic_store_explicit(&stop, 1, memory_order_relaxed);
  for (unsigned i = 0; i < opt.threads; i++)
    pthread_join(tids[i], NULL);
  double secs = now_s() - t0;
  double cpu = cpu_s() - c0;
  if (ours) sstm_stats_aggregate(&s1);
  uint64_t ops = 0;
  for (unsigned i = 0; i < opt.threads; i++)
    ops += ws[i].ops;
  for (unsigned i = 0; i < nfiles; i++) {
    int rc = ours ? sstm_fclose(ws[i].sf) : fclose(ws[i].gf);
    if (rc != 0) die("close");
    free(ws[i].gbuf); /* after fclose, which flushes it */
    unlink(ws[i].path);
  }
  if (opt.pipe) { /* the feeder's next write fails: it ends */
    if ((ours ? sstm_fclose(ws[0].sf) : fclose(ws[0].gf)) != 0) die("close");
    free(ws[0].gbuf);
    pthread_join(feed, NULL);
    close(pfd[1]);
  }
  rmdir(opt.dir);
  uint64_t commits = (s1.commits_ro + s1.commits_update) - (s0.commits_ro + s0.commits_update);
  uint64_t irr = s1.commits_irrevocable - s0.commits_irrevocable;
  printf("{\"bench\":\"stdio\",\"op\":\"%s\",\"mode\":\"%s\",\"sharing\":\"%s\",\"threads\":%u,"
         "\"k\":%u,\"buf\":%u,\"cm\":\"%s\",\"duration_s\":%.3f,\"cpu_s\":%.3f,\"ops\":%llu,\"ops_"
         "per_s\":%.0f,"
         "\"commits\":%llu,\"irrevocable_frac\":%.4f,\"aborts\":{",
         op_names[opt.op], mode_names[opt.mode],
         opt.pipe     ? "pipe"
         : opt.shared ? "shared"
                      : "private",
         opt.threads, opt.k, opt.buf,
         ours ? (getenv("SCHEDSTM_CM") ? getenv("SCHEDSTM_CM") : "default") : "-", secs, cpu,
         (unsigned long long)ops, (double)ops / secs, (unsigned long long)commits,
         commits ? (double)irr / (double)commits : 0.0);
  bool first = true;
  for (int r = 0; r < SSTM_ABORT_REASON_COUNT; r++) {
    uint64_t a = s1.aborts[r] - s0.aborts[r];
    if (a == 0) continue;
    printf("%s\"%s\":%llu", first ? "" : ",", sstm_abort_reason_name((sstm_abort_reason_t)r),
           (unsigned long long)a);
    first = false;
  }
  printf("}}\n");
  if (ours) {
    sstm_thread_exit();
    sstm_shutdown();
  }
  free(tids);
  free(ws);
  return 0;
}
