/* SPDX-License-Identifier: MIT */
/* Integration: the transactional stdio (include/schedstm/stdio.h) under
 * concurrency and crashes.
 *
 *   itest_stdio <etl|ctl> model <threads>
 *     Threads run random transactions of writes (some larger than the
 *     stream's buffer), reads, fgetc, seeks (SET, CUR, END) and ftell on
 *     one shared stream of a regular file; some cancel, some restart once.
 *     Each transaction also takes a number from a transactional counter,
 *     which gives the serial order of the committed ones. Each keeps a log
 *     of what its calls returned. After the run the logs are replayed, in
 *     that order, on a sequential model of a file (bytes, size, position,
 *     EOF): every result must match, and the file must equal the model
 *     byte for byte; none of the cancelled transactions' bytes may appear
 *     (their bytes are distinct). Checks also that no transaction went
 *     irrevocable.
 *   itest_stdio <etl|ctl> model_vbuf <threads>
 *     The same with the stream's buffering set by sstm_setvbuf: unbuffered,
 *     line buffered (the writes hold newlines), and fully buffered with
 *     61-byte and 16 KiB buffers (the larger writes fit in the latter).
 *   itest_stdio <etl|ctl> append <threads>
 *     Threads append records (some larger than the buffer) through one
 *     stream opened "a+" after seeking to its start; some cancel, some
 *     restart once. The file must be its first line followed by the
 *     committed records in their serial order, and nothing else.
 *   itest_stdio <etl|ctl> mixed <threads>
 *     Threads write fixed-length lines through one stream, half of them
 *     outside transactions (the stream's lock, or a transaction of their
 *     own when the buffer cannot take them), half in transactions that
 *     first ask sstm_ftell and put that position into their lines (one or
 *     two), some cancelling. Every line must be whole; each thread's lines
 *     written outside transactions in its program order, none lost or
 *     doubled; each transaction's lines at the position it was told (no
 *     call outside transactions came between its peek and its writes) and
 *     in the transactions' serial order; no byte of a cancelled one.
 *   itest_stdio <etl|ctl> mixed_read <threads>
 *     Threads read one stream of numbered lines with sstm_fgets and
 *     sstm_fread outside transactions and with two sstm_fgets in a
 *     transaction: every line is read exactly once, a transaction's two
 *     lines are consecutive, and the stream ends at EOF.
 *   itest_stdio <etl|ctl> crash <unused>
 *     A child commits records with sstm_fflush after each and reports them
 *     through a pipe, then writes a large record in a transaction that
 *     never commits; the parent kills it (SIGKILL) there. The file must hold
 *     every reported record and no byte of the uncommitted one.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runner.h"

static char path[64];

static void make_path(void) { sstm_test_tmp_file(path, sizeof path, "itest-stdio"); }

static size_t file_bytes(unsigned char **out) {
  int fd = open(path, O_RDONLY);
  CHECK_GE_I(fd, 0);
  off_t n = lseek(fd, 0, SEEK_END);
  CHECK_GE_I(n, 0);
  unsigned char *b = malloc((size_t)n + 1);
  CHECK_NOT_NULL(b);
  CHECK_EQ_I(pread(fd, b, (size_t)n, 0), n);
  close(fd);
  *out = b;
  return (size_t)n;
}

/* ---- model -------------------------------------------------------------- */

enum { OP_WRITE, OP_READ, OP_GETC, OP_SEEK_SET, OP_SEEK_CUR, OP_SEEK_END, OP_TELL, OP_N };

typedef struct logop {
  int kind;
  long arg;             /* write/read length, seek offset */
  long res;             /* what the call returned */
  int eof;              /* feof after a read */
  unsigned char *bytes; /* written / read bytes */
} logop_t;

typedef struct txlog {
  uint64_t order;
  int n;
  logop_t ops[4];
} txlog_t;

typedef struct shared {
  sstm_file_t *f;
  int lines;        /* the writes' bytes hold newlines (line buffering) */
  uint64_t counter; /* transactional: the serial order */
  unsigned ntx;     /* transactions per thread */
  txlog_t *logs[64];
  unsigned nlogs[64];
} shared_t;

typedef struct body {
  sstm_tt_t *t;
  shared_t *s;
  txlog_t log;
  uint64_t seed; /* the transaction's plan: the same in every attempt */
  int attempts;
  int end;             /* 0 commit, 1 cancel, 2 restart once */
  unsigned char *pool; /* this thread's write payloads */
} body_t;

static void free_log(txlog_t *l) {
  for (int i = 0; i < l->n; i++)
    free(l->ops[i].bytes);
  l->n = 0;
}

static void tx_body(void *arg) {
  body_t *b = arg;
  b->attempts++;
  free_log(&b->log); /* what an aborted attempt logged */
  sstm_rng_t r;
  sstm_rng_seed(&r, b->seed);
  sstm_file_t *f = b->s->f;
  int nops = 1 + (int)sstm_rng_below(&r, 4);
  for (int i = 0; i < nops; i++) {
    logop_t *o = &b->log.ops[i];
    memset(o, 0, sizeof *o);
    o->kind = (int)sstm_rng_below(&r, OP_N);
    b->log.n = i + 1;
    switch (o->kind) {
    case OP_WRITE: {
      o->arg = sstm_rng_below(&r, 8) == 0 ? 4000 + (long)sstm_rng_below(&r, 5000)
                                          : 1 + (long)sstm_rng_below(&r, 60);
      o->bytes = malloc((size_t)o->arg);
      CHECK_NOT_NULL(o->bytes);
      /* the pattern names the thread and the transaction's fate */
      for (long k = 0; k < o->arg; k++)
        o->bytes[k] = b->end == 1 ? '#'
                      : b->s->lines && k % 37 == 36
                          ? '\n'
                          : (unsigned char)('a' + (b->t->idx * 5 + k) % 26);
      o->res = (long)sstm_fwrite(o->bytes, 1, (size_t)o->arg, f);
      break;
    }
    case OP_READ:
      o->arg = 1 + (long)sstm_rng_below(&r, 6000);
      o->bytes = malloc((size_t)o->arg);
      CHECK_NOT_NULL(o->bytes);
      o->res = (long)sstm_fread(o->bytes, 1, (size_t)o->arg, f);
      o->eof = sstm_feof(f);
      break;
    case OP_GETC:
      o->res = sstm_fgetc(f);
      o->eof = sstm_feof(f);
      break;
    case OP_SEEK_SET:
      o->arg = (long)sstm_rng_below(&r, 40000);
      o->res = sstm_fseek(f, o->arg, SEEK_SET);
      break;
    case OP_SEEK_CUR:
      o->arg = (long)sstm_rng_below(&r, 200) - 100;
      o->res = sstm_fseek(f, o->arg, SEEK_CUR);
      break;
    case OP_SEEK_END:
      o->arg = -(long)sstm_rng_below(&r, 50);
      o->res = sstm_fseek(f, o->arg, SEEK_END);
      break;
    case OP_TELL: o->res = (long)sstm_ftell(f); break;
    }
  }
  uint64_t ord = sstm_load_u64(&b->s->counter);
  sstm_store_u64(&b->s->counter, ord + 1);
  b->log.order = ord;
  if (b->end == 1) sstm_cancel();
  if (b->end == 2 && b->attempts == 1) sstm_restart();
}

static void model_thread(sstm_tt_t *t) {
  shared_t *s = t->arg;
  txlog_t *logs = calloc(s->ntx, sizeof *logs);
  CHECK_NOT_NULL(logs);
  unsigned n = 0;
  for (unsigned i = 0; i < s->ntx; i++) {
    body_t b = {.t = t, .s = s, .seed = sstm_rng_next(&t->rng)};
    unsigned fate = (unsigned)sstm_rng_below(&t->rng, 10);
    b.end = fate == 0 ? 1 : fate == 1 ? 2 : 0;
    int rc = sstm_run(NULL, tx_body, &b);
    if (rc == SSTM_ECANCELED) {
      free_log(&b.log);
      continue;
    }
    CHECK_OK(rc);
    logs[n++] = b.log;
  }
  s->logs[t->idx] = logs;
  s->nlogs[t->idx] = n;
}

typedef struct model {
  unsigned char *b;
  size_t size, cap, pos;
  int eof;
} model_t;

static void model_grow(model_t *m, size_t need) {
  if (need <= m->cap) return;
  size_t nc = m->cap ? m->cap : 4096;
  while (nc < need)
    nc *= 2;
  m->b = realloc(m->b, nc);
  CHECK_NOT_NULL(m->b);
  memset(m->b + m->cap, 0, nc - m->cap);
  m->cap = nc;
}

static void replay(model_t *m, const txlog_t *l) {
  for (int i = 0; i < l->n; i++) {
    const logop_t *o = &l->ops[i];
    switch (o->kind) {
    case OP_WRITE:
      CHECK_EQ_I(o->res, o->arg);
      model_grow(m, m->pos + (size_t)o->arg);
      memcpy(m->b + m->pos, o->bytes, (size_t)o->arg);
      m->pos += (size_t)o->arg;
      if (m->pos > m->size) m->size = m->pos;
      break;
    case OP_READ: {
      size_t avail = m->pos < m->size ? m->size - m->pos : 0;
      size_t want = (size_t)o->arg < avail ? (size_t)o->arg : avail;
      CHECK_EQ_I(o->res, (long)want);
      CHECK_EQ_MEM(o->bytes, m->b + m->pos, want);
      m->pos += want;
      if (want < (size_t)o->arg) m->eof = 1;
      CHECK_EQ_I(o->eof, m->eof);
      break;
    }
    case OP_GETC:
      if (m->pos < m->size) {
        CHECK_EQ_I(o->res, m->b[m->pos]);
        m->pos++;
      } else {
        CHECK_EQ_I(o->res, EOF);
        m->eof = 1;
      }
      CHECK_EQ_I(o->eof, m->eof);
      break;
    case OP_SEEK_SET:
    case OP_SEEK_CUR:
    case OP_SEEK_END: {
      long base = o->kind == OP_SEEK_SET   ? 0
                  : o->kind == OP_SEEK_CUR ? (long)m->pos
                                           : (long)m->size;
      if (base + o->arg < 0) {
        CHECK_EQ_I(o->res, -1);
      } else {
        CHECK_EQ_I(o->res, 0);
        m->pos = (size_t)(base + o->arg);
        m->eof = 0;
      }
      break;
    }
    case OP_TELL: CHECK_EQ_I(o->res, (long)m->pos); break;
    }
  }
}

static int cmp_order(const void *a, const void *b) {
  uint64_t x = ((const txlog_t *)a)->order, y = ((const txlog_t *)b)->order;
  return x < y ? -1 : x > y;
}

/* vmode < 0: the default buffering; else sstm_setvbuf(f, NULL, vmode, vsize). */
static void run_model_buf(unsigned nthreads, int vmode, size_t vsize) {
  make_path();
  static shared_t s;
  memset(&s, 0, sizeof s);
  s.f = sstm_fopen(path, "w+");
  CHECK_NOT_NULL(s.f);
  if (vmode >= 0) CHECK_OK(sstm_setvbuf(s.f, NULL, vmode, vsize));
  s.lines = vmode == _IOLBF;
  s.ntx = (unsigned)sstm_test_scaled(400, 40);
  sstm_stats_t before, after;
  CHECK_OK(sstm_stats_aggregate(&before));
  sstm_test_run_threads(nthreads, true, model_thread, &s);
  CHECK_OK(sstm_stats_aggregate(&after));
  CHECK_EQ_U(after.commits_irrevocable, before.commits_irrevocable);
  CHECK_EQ_I(sstm_ferror(s.f), 0);
  CHECK_OK(sstm_fclose(s.f));
  size_t total = 0;
  for (unsigned i = 0; i < nthreads; i++)
    total += s.nlogs[i];
  txlog_t *all = malloc(total * sizeof *all);
  CHECK_NOT_NULL(all);
  size_t k = 0;
  for (unsigned i = 0; i < nthreads; i++)
    for (unsigned j = 0; j < s.nlogs[i]; j++)
      all[k++] = s.logs[i][j];
  qsort(all, total, sizeof *all, cmp_order);
  for (size_t i = 0; i < total; i++)
    CHECK_EQ_U(all[i].order, i); /* no gap, no duplicate */
  model_t m = {0};
  for (size_t i = 0; i < total; i++)
    replay(&m, &all[i]);
  unsigned char *fb;
  size_t n = file_bytes(&fb);
  CHECK_EQ_U(n, m.size);
  CHECK_EQ_MEM(fb, m.b, n);
  CHECK_EQ_PTR(memchr(fb, '#', n), NULL); /* no byte of a cancelled one */
  printf("stdio model (buffering %d, %zu bytes): %u threads, %zu committed transactions, file "
         "%zu bytes: ok\n",
         vmode, vsize, nthreads, total, n);
  free(fb);
  free(m.b);
  for (size_t i = 0; i < total; i++)
    free_log(&all[i]);
  free(all);
  for (unsigned i = 0; i < nthreads; i++)
    free(s.logs[i]);
  unlink(path);
}

static void run_model(unsigned nthreads) { run_model_buf(nthreads, -1, 0); }

static void run_model_vbuf(unsigned nthreads) {
  run_model_buf(nthreads, _IONBF, 0);
  run_model_buf(nthreads, _IOLBF, 256);
  run_model_buf(nthreads, _IOFBF, 61);
  run_model_buf(nthreads, _IOFBF, 16384);
}

/* ---- append ------------------------------------------------------------- */

typedef struct app_rec {
  uint64_t order;
  size_t len;
  unsigned char *bytes;
} app_rec_t;

typedef struct app_shared {
  sstm_file_t *f;
  uint64_t counter; /* transactional: the serial order */
  unsigned ntx;
  app_rec_t *recs[64];
  unsigned nrecs[64];
} app_shared_t;

typedef struct app_body {
  app_shared_t *s;
  app_rec_t rec;
  int attempts, end;
} app_body_t;

static void app_tx(void *arg) {
  app_body_t *b = arg;
  b->attempts++;
  /* The append position moves with every append: the write lands at the
   * end whatever the stream's position. */
  if (b->attempts == 1) sstm_fseek(b->s->f, 0, SEEK_SET);
  CHECK_EQ_U(sstm_fwrite(b->rec.bytes, 1, b->rec.len, b->s->f), 1 * b->rec.len);
  uint64_t ord = sstm_load_u64(&b->s->counter);
  sstm_store_u64(&b->s->counter, ord + 1);
  b->rec.order = ord;
  if (b->end == 1) sstm_cancel();
  if (b->end == 2 && b->attempts == 1) sstm_restart();
}

static void app_thread(sstm_tt_t *t) {
  app_shared_t *s = t->arg;
  app_rec_t *recs = calloc(s->ntx, sizeof *recs);
  CHECK_NOT_NULL(recs);
  unsigned n = 0;
  for (unsigned i = 0; i < s->ntx; i++) {
    unsigned fate = (unsigned)sstm_rng_below(&t->rng, 10);
    app_body_t b = {.s = s, .end = fate == 0 ? 1 : fate == 1 ? 2 : 0};
    b.rec.len = sstm_rng_below(&t->rng, 10) == 0 ? 4096 + sstm_rng_below(&t->rng, 3000)
                                                 : 1 + sstm_rng_below(&t->rng, 100);
    b.rec.bytes = malloc(b.rec.len);
    CHECK_NOT_NULL(b.rec.bytes);
    for (size_t k = 0; k < b.rec.len; k++)
      b.rec.bytes[k] = b.end == 1 ? '#' : (unsigned char)('A' + (t->idx + i + k) % 26);
    int rc = sstm_run(NULL, app_tx, &b);
    if (rc == SSTM_ECANCELED) {
      free(b.rec.bytes);
      continue;
    }
    CHECK_OK(rc);
    recs[n++] = b.rec;
  }
  s->recs[t->idx] = recs;
  s->nrecs[t->idx] = n;
}

static int cmp_app(const void *a, const void *b) {
  uint64_t x = ((const app_rec_t *)a)->order, y = ((const app_rec_t *)b)->order;
  return x < y ? -1 : x > y;
}

/* Threads append records through one O_APPEND stream: the file must be
 * the committed records concatenated in their serial order. */
static void run_append(unsigned nthreads) {
  make_path();
  int fd = open(path, O_WRONLY | O_TRUNC);
  CHECK_EQ_I(write(fd, "head\n", 5), 5);
  close(fd);
  static app_shared_t s;
  s.f = sstm_fopen(path, "a+");
  CHECK_NOT_NULL(s.f);
  s.ntx = (unsigned)sstm_test_scaled(300, 30);
  sstm_test_run_threads(nthreads, true, app_thread, &s);
  CHECK_OK(sstm_fclose(s.f));
  size_t total = 0, bytes = 5;
  for (unsigned i = 0; i < nthreads; i++)
    total += s.nrecs[i];
  app_rec_t *all = malloc(total * sizeof *all);
  CHECK_NOT_NULL(all);
  size_t k = 0;
  for (unsigned i = 0; i < nthreads; i++)
    for (unsigned j = 0; j < s.nrecs[i]; j++)
      all[k++] = s.recs[i][j];
  qsort(all, total, sizeof *all, cmp_app);
  unsigned char *fb;
  size_t n = file_bytes(&fb);
  CHECK_EQ_MEM(fb, "head\n", 5);
  for (size_t i = 0; i < total; i++) {
    CHECK_EQ_U(all[i].order, i);
    CHECK_LE_U(bytes + all[i].len, n);
    CHECK_EQ_MEM(fb + bytes, all[i].bytes, all[i].len);
    bytes += all[i].len;
    free(all[i].bytes);
  }
  CHECK_EQ_U(n, bytes);
  printf("stdio append: %u threads, %zu committed appends, file %zu bytes: ok\n", nthreads, total,
         n);
  free(fb);
  free(all);
  for (unsigned i = 0; i < nthreads; i++)
    free(s.recs[i]);
  unlink(path);
}

/* ---- calls outside transactions among transactions ------------------------ */

/* Lines of MIX_L bytes: kind ('N': written outside transactions, 'T': by a
 * transaction, 'X': by one that cancels), thread, sequence number (a
 * transactional counter's value for 'T'), the position the transaction saw
 * with sstm_ftell before writing (0 for 'N'). */
#define MIX_L 33

typedef struct mix_shared {
  sstm_file_t *f;
  uint64_t counter; /* transactional: the serial order of the 'T' lines */
  unsigned ntx;
  unsigned nlines[64]; /* lines each thread's calls and commits wrote */
} mix_shared_t;

typedef struct mix_body {
  mix_shared_t *s;
  unsigned idx;
  int lines; /* 1 or 2 */
  bool cancel;
} mix_body_t;

static void mix_line(char *b, char kind, unsigned idx, uint64_t seq, uint64_t pos) {
  snprintf(b, MIX_L + 1, "%c%02u %08llu %019llu\n", kind, idx, (unsigned long long)seq,
           (unsigned long long)pos);
}

static void mix_tx(void *arg) {
  mix_body_t *b = arg;
  sstm_file_t *f = b->s->f;
  off_t p = sstm_ftell(f); /* a peek: no call outside transactions may move it */
  CHECK_GE_I(p, 0);
  uint64_t seq = sstm_load_u64(&b->s->counter);
  sstm_store_u64(&b->s->counter, seq + 1);
  char line[MIX_L + 1];
  for (int k = 0; k < b->lines; k++) {
    mix_line(line, b->cancel ? 'X' : 'T', b->idx, seq, (uint64_t)p + (uint64_t)k * MIX_L);
    CHECK_GE_I(sstm_fputs(line, f), 0);
  }
  CHECK_EQ_I(sstm_ftell(f), p + (off_t)b->lines * MIX_L);
  if (b->cancel) sstm_cancel();
}

static void mix_thread(sstm_tt_t *t) {
  mix_shared_t *s = t->arg;
  uint64_t nseq = 0;
  char line[MIX_L + 1];
  for (unsigned i = 0; i < s->ntx; i++) {
    unsigned c = (unsigned)sstm_rng_below(&t->rng, 16);
    if (c < 8) { /* outside any transaction: the stream's lock, or a transaction of its own */
      mix_line(line, 'N', t->idx, nseq++, 0);
      CHECK_GE_I(sstm_fputs(line, s->f), 0);
      s->nlines[t->idx]++;
      if (c == 0) CHECK_GE_I(sstm_ftell(s->f), 0);
    } else {
      mix_body_t b = {.s = s, .idx = t->idx, .lines = 1 + (c & 1), .cancel = c == 15};
      int rc = sstm_run(NULL, mix_tx, &b);
      if (b.cancel) {
        CHECK_EQ_I(rc, SSTM_ECANCELED);
      } else {
        CHECK_OK(rc);
        s->nlines[t->idx] += (unsigned)b.lines;
      }
    }
  }
}

static void run_mixed(unsigned nthreads) {
  make_path();
  static mix_shared_t s;
  memset(&s, 0, sizeof s);
  s.f = sstm_fopen(path, "w+");
  CHECK_NOT_NULL(s.f);
  s.ntx = (unsigned)sstm_test_scaled(3000, 300);
  sstm_test_run_threads(nthreads, true, mix_thread, &s);
  CHECK_EQ_I(sstm_ferror(s.f), 0);
  CHECK_OK(sstm_fclose(s.f));
  unsigned char *fb;
  size_t n = file_bytes(&fb);
  CHECK_EQ_U(n % MIX_L, 0u);
  size_t total = 0;
  for (unsigned i = 0; i < nthreads; i++)
    total += s.nlines[i];
  CHECK_EQ_U(n / MIX_L, total);
  uint64_t next_n[64] = {0}, last_t = 0, tlines = 0;
  bool any_t = false;
  for (size_t at = 0; at < n; at += MIX_L) {
    char kind;
    unsigned idx;
    unsigned long long seq, pos;
    char line[MIX_L + 1];
    memcpy(line, fb + at, MIX_L);
    line[MIX_L] = '\0';
    CHECK_EQ_I(sscanf(line, "%c%2u %8llu %19llu", &kind, &idx, &seq, &pos), 4);
    CHECK_EQ_I(line[MIX_L - 1], '\n');
    CHECK_TRUE(idx < nthreads);
    if (kind == 'N') { /* each thread's calls in program order, none lost or doubled */
      CHECK_EQ_U(seq, next_n[idx]);
      next_n[idx]++;
    } else {
      CHECK_EQ_I(kind, 'T'); /* nothing of a cancelled transaction */
      /* where its sstm_ftell said: nothing came between its peek and its
       * writes; the transactions' lines in their serial order */
      CHECK_EQ_U(pos, at);
      CHECK_TRUE(!any_t || seq >= last_t);
      last_t = seq, any_t = true, tlines++;
    }
  }
  printf("stdio mixed: %u threads, %zu lines (%llu by transactions), every one where it "
         "belongs: ok\n",
         nthreads, total, (unsigned long long)tlines);
  free(fb);
  unlink(path);
}

/* Readers outside transactions and in transactions share one position:
 * every line of the file is read exactly once, and the two lines a
 * transaction reads are consecutive. */
#define MIXR_LINES 20000
#define MIXR_L 16

typedef struct mixr_shared {
  sstm_file_t *f;
  unsigned char seen[MIXR_LINES];
} mixr_shared_t;

static long mixr_num(const char *b) {
  unsigned long v;
  if (strlen(b) != MIXR_L || b[MIXR_L - 1] != '\n' || sscanf(b, "line %10lu", &v) != 1) return -1;
  return (long)v;
}

typedef struct mixr_body {
  mixr_shared_t *s;
  long a, b;
} mixr_body_t;

static void mixr_tx(void *arg) {
  mixr_body_t *b = arg;
  char x[MIXR_L + 1], y[MIXR_L + 1];
  b->a = b->b = -2;
  if (sstm_fgets(x, sizeof x, b->s->f) == NULL) return;
  b->a = mixr_num(x);
  if (sstm_fgets(y, sizeof y, b->s->f) == NULL) return;
  b->b = mixr_num(y);
}

static void mixr_mark(mixr_shared_t *s, long v) {
  CHECK_TRUE(v >= 0 && v < MIXR_LINES);
  /* plain bytes: each line is read once, so each slot has one writer
   * (the check below catches a second); the main thread reads them after
   * joining the threads */
  CHECK_EQ_I(s->seen[v], 0);
  s->seen[v] = 1;
}

static void mixr_thread(sstm_tt_t *t) {
  mixr_shared_t *s = t->arg;
  char buf[MIXR_L + 1];
  for (;;) {
    unsigned c = (unsigned)sstm_rng_below(&t->rng, 4);
    if (c == 0) {
      if (sstm_fgets(buf, sizeof buf, s->f) == NULL) return;
      mixr_mark(s, mixr_num(buf));
    } else if (c == 1) {
      size_t got = sstm_fread(buf, 1, MIXR_L, s->f);
      if (got == 0) return;
      CHECK_EQ_U(got, MIXR_L);
      buf[MIXR_L] = '\0';
      mixr_mark(s, mixr_num(buf));
    } else {
      mixr_body_t b = {.s = s};
      CHECK_OK(sstm_run(NULL, mixr_tx, &b));
      if (b.a == -2) return;
      mixr_mark(s, b.a);
      if (b.b == -2) return;
      CHECK_EQ_I(b.b, b.a + 1);
      mixr_mark(s, b.b);
    }
  }
}

static void run_mixed_read(unsigned nthreads) {
  make_path();
  FILE *g = fopen(path, "w");
  CHECK_NOT_NULL(g);
  for (unsigned i = 0; i < MIXR_LINES; i++)
    fprintf(g, "line %010u\n", i);
  CHECK_EQ_I(fclose(g), 0);
  static mixr_shared_t s;
  memset(&s, 0, sizeof s);
  s.f = sstm_fopen(path, "r");
  CHECK_NOT_NULL(s.f);
  sstm_test_run_threads(nthreads, true, mixr_thread, &s);
  CHECK_TRUE(sstm_feof(s.f));
  CHECK_OK(sstm_fclose(s.f));
  for (unsigned i = 0; i < MIXR_LINES; i++)
    CHECK_EQ_I(s.seen[i], 1);
  printf("stdio mixed reads: %u threads, %u lines each read once: ok\n", nthreads, MIXR_LINES);
  unlink(path);
}

/* ---- crash ---------------------------------------------------------------- */

static void run_crash(void) {
  make_path();
  int p[2];
  CHECK_EQ_I(pipe(p), 0);
  pid_t pid = sstm_test_fork();
  CHECK_GE_I(pid, 0);
  if (pid == 0) {
    close(p[0]);
    sstm_file_t *f = sstm_fopen(path, "w");
    if (f == NULL) _exit(3);
    for (int k = 0; k < 200; k++) {
      SSTM_ATOMIC_BEGIN(NULL)
        sstm_fprintf(f, "record %03d\n", k);
      SSTM_ATOMIC_END();
      if (k % 7 == 6) {
        if (sstm_fflush(f) != 0) _exit(4);
        if (write(p[1], &k, sizeof k) != sizeof k) _exit(5);
      }
    }
    if (sstm_fflush(f) != 0) _exit(4);
    int last = 199;
    if (write(p[1], &last, sizeof last) != sizeof last) _exit(5);
    static char junk[20000];
    memset(junk, '#', sizeof junk);
    SSTM_ATOMIC_BEGIN(NULL)
      sstm_fwrite(junk, 1, sizeof junk, f); /* records, deferred to commit */
      sstm_fflush(f);
      int done = -1;
      if (write(p[1], &done, sizeof done) != sizeof done) _exit(5);
      for (;;)
        pause(); /* killed here, before the commit */
    SSTM_ATOMIC_END();
    _exit(6);
  }
  close(p[1]);
  int last = -2, v;
  while (read(p[0], &v, sizeof v) == sizeof v) {
    if (v == -1) break;
    last = v;
  }
  CHECK_EQ_I(v, -1);
  CHECK_EQ_I(kill(pid, SIGKILL), 0);
  int st;
  CHECK_EQ_I(waitpid(pid, &st, 0), pid);
  CHECK_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
  close(p[0]);
  unsigned char *fb;
  size_t n = file_bytes(&fb);
  CHECK_EQ_I(last, 199);
  CHECK_EQ_U(n, 200u * 11u);
  for (int k = 0; k < 200; k++) {
    char want[sizeof "record -2147483648\n"]; /* room for any int */
    snprintf(want, sizeof want, "record %03d\n", k);
    CHECK_EQ_MEM(fb + 11 * k, want, 11);
  }
  CHECK_EQ_PTR(memchr(fb, '#', n), NULL);
  printf("stdio crash: %zu bytes, every committed record, nothing of the killed one: ok\n", n);
  free(fb);
  unlink(path);
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s etl|ctl model|model_vbuf|append|crash|mixed|mixed_read THREADS\n",
            argv[0]);
    return 2;
  }
  sstm_test_setup("stdio", argc, argv);
  setenv("SSTM_TEST_DESIGN", argv[1], 1);
  sstm_test_init();
  if (strcmp(argv[2], "model") == 0)
    run_model((unsigned)atoi(argv[3]));
  else if (strcmp(argv[2], "model_vbuf") == 0)
    run_model_vbuf((unsigned)atoi(argv[3]));
  else if (strcmp(argv[2], "append") == 0)
    run_append((unsigned)atoi(argv[3]));
  else if (strcmp(argv[2], "crash") == 0)
    run_crash();
  else if (strcmp(argv[2], "mixed") == 0)
    run_mixed((unsigned)atoi(argv[3]));
  else if (strcmp(argv[2], "mixed_read") == 0)
    run_mixed_read((unsigned)atoi(argv[3]));
  else {
    fprintf(stderr, "unknown case %s\n", argv[2]);
    return 2;
  }
  sstm_test_fini();
  return 0;
}
