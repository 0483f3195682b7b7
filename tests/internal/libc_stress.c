/* SPDX-License-Identifier: MIT */
/* A randomized stress of the transactional stdio (docs/design/tm-libc.md)
 * that mixes, on one or two shared streams, the modes that meet there:
 * solo mode (S10), batches (S11) with tunings that force frequent
 * hand-overs and with batches off, the turn (S9), tickets (S4), calls
 * outside transactions (S8), attempts that leave solo mode in flight (a
 * flush, a buffer's end, a seek), aborts and restarts, O_APPEND, seeks,
 * reads that refill, line buffering, _IONBF and small buffers, and
 * sstm_fclose once the threads are done. Each round picks the threads
 * (2-8), the buffering and the batch tuning from the seed.
 *
 * Each case checks, from the file and each committed transaction's own
 * log, that the file equals a serial order of the committed transactions
 * and of the calls outside transactions, byte for byte, and that what each
 * transaction read is what that order had there:
 * - records: every write is a whole record that names its kind
 *   (transaction, call outside transactions, cancelled), its thread, its
 *   serial number (a transactional counter's value for a transaction, the
 *   thread's own count for a call outside transactions) and its length,
 *   with a payload derived from them. The streams only grow at their end
 *   (every transaction leaves the position there), so the file must parse
 *   as whole records; the transactions' records appear in their serial
 *   order, each at the position its transaction saw, none lost or
 *   doubled; each thread's calls outside transactions appear in program
 *   order, once; no cancelled byte appears. What a transaction read
 *   (fread, fgets, fgetc after a seek or a rewind) must be the file's bytes
 *   there, up to the end it saw, also when it reads back around its own
 *   records. A call outside transactions that reads at
 *   the end must find EOF; its ftell must be a record boundary, never
 *   smaller than its thread's last one; once its sstm_fflush returns, its
 *   thread's last committed record is in the file. With two streams, a
 *   transaction's records reach both or neither. Some transactions become
 *   irrevocable (at their start, before their records, after the first).
 *   After the round the kernel's offset is where the last committed seek
 *   put it (S7).
 * - slots: a file of fixed slots that transactions read and overwrite
 *   (seek, read, seek back, write, sometimes read back); replayed in the
 *   serial order on a model, every read must match and the file must
 *   equal the model.
 * - lines: a file of numbered lines that transactions (one to three lines
 *   in a row) and calls outside transactions (one line) consume, so that
 *   the read window serves many of them in place (a keeper's solo reads,
 *   the lock's reads): every line read whole, once, none skipped, each
 *   thread's reads in program order, the transactions' in their serial
 *   order, and the position left after the last line read.
 *
 * SSTM_TEST_LONG=1 (the torture entries) runs many more rounds;
 * SSTM_STRESS_ROUNDS sets their number. A failure prints the round's
 * parameters; SSTM_TEST_SEED reproduces the run's plans. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "libc/esc.h"
#include "libc_model.h"
#include "runner.h"

static char path1[64], path2[64];

/* ---- the round's parameters -------------------------------------------- */

typedef struct params {
  unsigned threads;
  unsigned ops;       /* operations per thread */
  int append;         /* open "a+" (O_APPEND), else "w+" */
  int two;            /* a second stream */
  int vmode;          /* -1: default buffering, else sstm_setvbuf's mode */
  size_t vsize;       /* its size */
  uint32_t batch_n;   /* sstm__stdio_set_batch */
  uint64_t batch_ns;  /* its deadline */
  unsigned ntx_pct;   /* calls outside transactions, percent of operations */
  unsigned flush_pct; /* a flush after a transaction's record, percent */
} params_t;

static void describe(const params_t *p, uint64_t round) {
  fprintf(stderr,
          "round %llu: threads %u ops %u %s streams %d vbuf %d/%zu batch %u/%llu ntx %u%% "
          "flush %u%%\n",
          (unsigned long long)round, p->threads, p->ops, p->append ? "a+" : "w+", p->two ? 2 : 1,
          p->vmode, p->vsize, p->batch_n, (unsigned long long)p->batch_ns, p->ntx_pct,
          p->flush_pct);
}

static void pick(params_t *p, sstm_rng_t *r, unsigned max_threads) {
  memset(p, 0, sizeof *p);
  p->threads = 2 + (unsigned)sstm_rng_below(r, max_threads - 1);
  p->append = sstm_rng_below(r, 2) == 0;
  p->two = sstm_rng_below(r, 3) == 0;
  static const int vm[] = {-1, -1, -1, _IOFBF, _IOFBF, _IOLBF, _IONBF};
  static const size_t vs[] = {0, 0, 0, 61, 512, 256, 0};
  unsigned v = (unsigned)sstm_rng_below(r, sizeof vm / sizeof vm[0]);
  p->vmode = vm[v];
  p->vsize = vs[v];
  /* default; tiny batches with short deadlines (hand-overs and takes at
   * the deadline all the time); medium; off (serial mode, S9). n = 1
   * once livelocked: solo_batch made a new keeper yield before its first
   * attempt, so no keeper ever worked (n - 1 attempts per batch for any
   * n; fixed in 383fcc8, a batch is n attempts). */
  static const uint32_t bn[] = {0, 1, 2, 16, 64, UINT32_MAX};
  static const uint64_t bns[] = {0, 1000, 2000, 20000, 1000000000ull, 0};
  unsigned b = (unsigned)sstm_rng_below(r, sizeof bn / sizeof bn[0]);
  p->batch_n = bn[b];
  p->batch_ns = bns[b];
  static const unsigned np[] = {0, 10, 30, 60};
  p->ntx_pct = np[sstm_rng_below(r, 4)];
  static const unsigned fp[] = {0, 5, 25};
  p->flush_pct = fp[sstm_rng_below(r, 3)];
}

/* ---- records ------------------------------------------------------------ */

/* kind (1) thread (2) serial number (10) length (5), payload, '\n' */
#define HDR 18
#define MINREC (HDR + 1)

static char pay(char kind, unsigned thread, uint64_t seq, size_t j) {
  if (kind == 'X') return '#';
  return (char)('a' + (seq * 7 + thread * 3 + j) % 26);
}

static void mkrec(char *b, char kind, unsigned thread, uint64_t seq, size_t len) {
  char h[80];
  snprintf(h, sizeof h, "%c%02u%010llu%05zu", kind, thread % 100u,
           (unsigned long long)(seq % 10000000000ull), len % 100000u);
  memcpy(b, h, HDR);
  for (size_t j = HDR; j + 1 < len; j++)
    b[j] = pay(kind, thread, seq, j);
  b[len - 1] = '\n';
  b[len] = 0;
}

static size_t rec_len(sstm_rng_t *r) {
  unsigned k = (unsigned)sstm_rng_below(r, 100);
  if (k < 88) return MINREC + (size_t)sstm_rng_below(r, 100);
  if (k < 97) return 200 + (size_t)sstm_rng_below(r, 800);
  return 4000 + (size_t)sstm_rng_below(r, 5000); /* more than a buffer: a record at once */
}

/* Write the record b (len bytes) with one of the calls; in a transaction
 * it may be split over several calls. Returns the bytes written. */
static size_t put_rec(sstm_file_t *f, const char *b, size_t len, sstm_rng_t *r, int split) {
  unsigned how = (unsigned)sstm_rng_below(r, split ? 6 : 3);
  switch (how) {
  case 0: return sstm_fputs(b, f) >= 0 ? len : 0;
  case 1: return sstm_fwrite(b, 1, len, f);
  case 2: return sstm_fprintf(f, "%s", b) == (int)len ? len : 0;
  case 3:
    if (len < 300) {
      for (size_t j = 0; j < len; j++)
        if (sstm_fputc((unsigned char)b[j], f) != (unsigned char)b[j]) return j;
      return len;
    }
    /* fall through */
  default: {
    size_t done = 0;
    while (done < len) {
      size_t n = 1 + (size_t)sstm_rng_below(r, len - done);
      size_t w = sstm_fwrite(b + done, 1, n, f);
      done += w;
      if (w != n) break;
    }
    return done;
  }
  }
}

/* ---- the records case: transactions ------------------------------------ */

typedef struct rdlog {
  int kind; /* 0 none, 1 fread, 2 fgets, 3 fgetc, 4 getline */
  long at;  /* where it read */
  long end; /* the end of the file it saw (with its own records) */
  long want, res;
  char *bytes;
} rdlog_t;

typedef struct txlog {
  uint64_t ord;
  unsigned thread;
  int attempts;
  long end[2]; /* where its records went (the end it saw), per stream */
  unsigned nrec[2];
  size_t len[2][3];
  rdlog_t rd, rd2; /* a read before its records, one after them on stream 0 */
  long seek0;      /* where its last seek on stream 0 went (-1: none) */
} txlog_t;
_Static_assert(offsetof(txlog_t, ord) == 0, "by_commit_order reads ord first");

static struct {
  params_t p;
  sstm_file_t *f[2];
  uint64_t counter; /* transactional: the serial order */
  txlog_t *logs[8];
  unsigned nlogs[8];
  uint64_t nseq[8][2]; /* calls outside transactions per thread and stream */
  uint64_t round;
} g;

typedef struct body {
  sstm_tt_t *t;
  uint64_t seed; /* the transaction's plan: the same in every attempt */
  int attempts;
  int end; /* 0 commit, 1 cancel, 2 restart once at the end, 3 restart once mid-way,
             4 irrevocable from the start, 5 from its writes on, 6 from its second record on */
  txlog_t log;
  char *buf;
} body_t;

/* The thread's sstm_getline buffer: outside the attempts, since one that
 * aborts may have grown it (stdio.h), and a variable of the attempt would
 * lose it. Freed when the thread's work ends (getline_done). */
static __thread char *tl_line;
static __thread size_t tl_cap;

static void getline_done(void) {
  free(tl_line);
  tl_line = NULL, tl_cap = 0;
}

/* A read at `at` (a seek or a rewind first) with one of the calls, logged
 * in rd with the end the attempt sees (its own records included); then
 * the position goes back to that end. */
static void tx_read(sstm_file_t *f, sstm_rng_t *r, rdlog_t *rd, long at, long end) {
  free(rd->bytes);
  memset(rd, 0, sizeof *rd);
  rd->kind = 1 + (int)sstm_rng_below(r, 4);
  rd->at = at;
  rd->end = end;
  if (sstm_rng_below(r, 8) == 0) {
    rd->at = 0;
    sstm_rewind(f);
  } else {
    CHECK_EQ_I(sstm_fseek(f, rd->at, SEEK_SET), 0);
  }
  rd->want = 1 + (long)sstm_rng_below(r, sstm_rng_below(r, 4) == 0 ? 6000 : 200);
  rd->bytes = malloc((size_t)rd->want + 1);
  CHECK_NOT_NULL(rd->bytes);
  if (rd->kind == 1) {
    rd->res = (long)sstm_fread(rd->bytes, 1, (size_t)rd->want, f);
  } else if (rd->kind == 2) {
    if (rd->want < 2) rd->want = 2;
    char *s = sstm_fgets(rd->bytes, (int)rd->want, f);
    rd->res = s == NULL ? 0 : (long)strlen(rd->bytes);
  } else if (rd->kind == 4) { /* getline: a line of any length */
    ssize_t got = sstm_getline(&tl_line, &tl_cap, f);
    rd->res = got < 0 ? 0 : (long)got;
    rd->want = LONG_MAX;
    free(rd->bytes);
    rd->bytes = malloc((size_t)rd->res + 1);
    CHECK_NOT_NULL(rd->bytes);
    if (rd->res) memcpy(rd->bytes, tl_line, (size_t)rd->res);
  } else {
    int c = sstm_fgetc(f);
    rd->want = 1;
    rd->res = c == EOF ? 0 : 1;
    if (c != EOF) rd->bytes[0] = (char)c;
  }
  CHECK_EQ_I(sstm_ftell(f), rd->at + rd->res);
  /* back to the end */
  if (sstm_rng_below(r, 2) == 0)
    CHECK_EQ_I(sstm_fseek(f, 0, SEEK_END), 0);
  else
    CHECK_EQ_I(sstm_fseek(f, end, SEEK_SET), 0);
  CHECK_EQ_I(sstm_ftell(f), end);
}

static void tx_body(void *arg) {
  body_t *b = arg;
  b->attempts++;
  free(b->log.rd.bytes);
  free(b->log.rd2.bytes);
  memset(&b->log, 0, sizeof b->log);
  sstm_rng_t r;
  sstm_rng_seed(&r, b->seed);
  int use2 = g.p.two && sstm_rng_below(&r, 2) == 0;
  int second_first = use2 && sstm_rng_below(&r, 2) == 0; /* the order of acquisition varies */
  sstm_file_t *f = g.f[0];
  if (b->end == 4) CHECK_OK(sstm_become_irrevocable());
  if (second_first) (void)sstm_ftell(g.f[1]);         /* a peek at the other stream first */
  if (sstm_rng_below(&r, 3) == 0) (void)sstm_feof(f); /* a peek first */
  /* the end: every committed state has the position there */
  long end;
  b->log.seek0 = -1;
  int seeked = sstm_rng_below(&r, 2) == 0;
  if (seeked) CHECK_EQ_I(sstm_fseek(f, 0, SEEK_END), 0);
  end = (long)sstm_ftell(f);
  CHECK_GE_I(end, 0);
  if (seeked) b->log.seek0 = end;
  if (sstm_rng_below(&r, 2) == 0) /* a read somewhere before the end */
    tx_read(f, &r, &b->log.rd, (long)sstm_rng_below(&r, (uint64_t)end + 20), end),
        b->log.seek0 = end;
  if (b->end == 5) CHECK_OK(sstm_become_irrevocable());
  uint64_t ord = sstm_load_u64(&g.counter);
  sstm_store_u64(&g.counter, ord + 1);
  b->log.ord = ord;
  b->log.thread = b->t->idx;
  b->log.attempts = b->attempts;
  char kind = b->end == 1 ? 'X' : 'T';
  for (int s = 0; s < (use2 ? 2 : 1); s++) {
    int si = second_first ? 1 - s : s;
    sstm_file_t *fs = g.f[si];
    long e = si == 0 ? end : (long)sstm_ftell(fs);
    CHECK_GE_I(e, 0);
    b->log.end[si] = e;
    unsigned nrec = si == 0 ? (unsigned)sstm_rng_below(&r, 4) : 1; /* 0: reads only */
    long at = e;
    for (unsigned k = 0; k < nrec; k++) {
      size_t len = rec_len(&r);
      mkrec(b->buf, kind, b->t->idx, ord * 4 + k, len);
      CHECK_EQ_U(put_rec(fs, b->buf, len, &r, 1), len);
      at += (long)len;
      b->log.len[si][k] = len;
      b->log.nrec[si] = k + 1;
      if (sstm_rng_below(&r, 100) < g.p.flush_pct) CHECK_EQ_I(sstm_fflush(fs), 0);
      if (b->end == 3 && b->attempts == 1 && k == 0) sstm_restart();
      if (b->end == 6 && k == 0) CHECK_OK(sstm_become_irrevocable());
    }
    CHECK_EQ_I(sstm_ftell(fs), at); /* nothing came between */
    /* read back around its own records (the view's buffer and records
     * laid over the file, S5) */
    if (si == 0 && nrec != 0 && sstm_rng_below(&r, 3) == 0) {
      long from = e > 100 ? e - 100 : 0;
      tx_read(fs, &r, &b->log.rd2, from + (long)sstm_rng_below(&r, (uint64_t)(at - from)), at);
      b->log.seek0 = at;
    }
  }
  if (b->end == 1) sstm_cancel();
  if (b->end == 2 && b->attempts == 1) sstm_restart();
}

typedef struct ntxlog {
  /* this thread's last committed transaction's last record, per stream:
   * where it is, its length, its serial number (ord * 4 + k); len 0: none */
  long lr_at[2];
  size_t lr_len[2];
  uint64_t lr_seq[2];
  long tell[2]; /* the last ftell outside transactions, per stream */
  long *tells;  /* all of them (stream 0) */
  unsigned ntells;
} ntxlog_t;

static ntxlog_t ntxl[8];

static void ntx_op(sstm_tt_t *t, char *buf) {
  int si = g.p.two && sstm_rng_below(&t->rng, 2) == 0;
  sstm_file_t *f = g.f[si];
  unsigned what = (unsigned)sstm_rng_below(&t->rng, 10);
  if (what < 6) { /* a record */
    size_t len = rec_len(&t->rng);
    mkrec(buf, 'N', t->idx, g.nseq[t->idx][si], len);
    CHECK_EQ_U(put_rec(f, buf, len, &t->rng, 0), len);
    g.nseq[t->idx][si]++;
  } else if (what == 6) { /* at the end: EOF */
    CHECK_EQ_I(sstm_fgetc(f), EOF);
  } else if (what == 7) {
    char c[8];
    CHECK_EQ_U(sstm_fread(c, 1, sizeof c, f), 0);
  } else if (what == 8) {
    CHECK_EQ_I(sstm_fflush(f), 0);
    /* Once sstm_fflush outside transactions returns, every byte of the
     * committed transactions is in the kernel: this thread's last record
     * among them, for one. */
    ntxlog_t *l = &ntxl[t->idx];
    if (l->lr_len[si] != 0) {
      int fd = open(si ? path2 : path1, O_RDONLY);
      CHECK_GE_I(fd, 0);
      char *want = buf + 10000;
      mkrec(want, 'T', t->idx, l->lr_seq[si], l->lr_len[si]);
      CHECK_EQ_I(pread(fd, buf, l->lr_len[si], l->lr_at[si]), (long)l->lr_len[si]);
      CHECK_MSG(memcmp(buf, want, l->lr_len[si]) == 0,
                "stream %d: after sstm_fflush, record %llu of %zu bytes at %ld is not in the file",
                si, (unsigned long long)l->lr_seq[si], l->lr_len[si], l->lr_at[si]);
      close(fd);
    }
  } else {
    long at = (long)sstm_ftell(f);
    CHECK_GE_I(at, ntxl[t->idx].tell[si]); /* the end only grows */
    ntxl[t->idx].tell[si] = at;
    if (si == 0) {
      ntxlog_t *l = &ntxl[t->idx];
      l->tells = realloc(l->tells, (l->ntells + 1) * sizeof *l->tells);
      CHECK_NOT_NULL(l->tells);
      l->tells[l->ntells++] = at;
    }
  }
}

/* Sleep up to a few hundred microseconds (one time in k), so that threads
 * use the streams alone at times: a stream used by one thread gets a
 * keeper (S10), which the others then meet. */
static void pause_a_while(sstm_tt_t *t, unsigned k) {
  if (sstm_rng_below(&t->rng, k) != 0) return;
  struct timespec ts = {0, (long)sstm_rng_below(&t->rng, 500000)};
  nanosleep(&ts, NULL);
}

static void rec_thread(sstm_tt_t *t) {
  sstm_rng_seed(&t->rng, t->seed ^ (g.round * 0x9e3779b97f4a7c15ull));
  txlog_t *logs = calloc(g.p.ops, sizeof *logs);
  CHECK_NOT_NULL(logs);
  char *buf = malloc(20000);
  CHECK_NOT_NULL(buf);
  unsigned n = 0;
  pause_a_while(t, 2); /* a late start: the others use the streams alone meanwhile (S10) */
  for (unsigned i = 0; i < g.p.ops; i++) {
    if (sstm_rng_below(&t->rng, 64) == 0) pause_a_while(t, 1); /* bursts */
    if (sstm_rng_below(&t->rng, 100) < g.p.ntx_pct) {
      ntx_op(t, buf);
      continue;
    }
    body_t b = {.t = t, .seed = sstm_rng_next(&t->rng), .buf = buf};
    unsigned fate = (unsigned)sstm_rng_below(&t->rng, 40);
    b.end = fate < 2    ? 1
            : fate < 4  ? 2
            : fate < 6  ? 3
            : fate == 6 ? 4
            : fate == 7 ? 5
            : fate == 8 ? 6
                        : 0;
    int rc = sstm_run(NULL, tx_body, &b);
    if (rc == SSTM_ECANCELED) {
      free(b.log.rd.bytes);
      free(b.log.rd2.bytes);
      continue;
    }
    CHECK_OK(rc);
    for (int si = 0; si < 2; si++) { /* its last record, for the flush's check */
      unsigned nr = b.log.nrec[si];
      if (nr == 0) continue;
      long at = b.log.end[si];
      for (unsigned k = 0; k + 1 < nr; k++)
        at += (long)b.log.len[si][k];
      ntxl[t->idx].lr_at[si] = at;
      ntxl[t->idx].lr_len[si] = b.log.len[si][nr - 1];
      ntxl[t->idx].lr_seq[si] = b.log.ord * 4 + nr - 1;
    }
    logs[n++] = b.log;
  }
  free(buf);
  getline_done();
  g.logs[t->idx] = logs;
  g.nlogs[t->idx] = n;
}

/* Check stream si's file against the logs (txlog_t, in the serial order
 * in byord: by_commit_order). */
static void check_records(int si, const char *path, void *const *byord, uint64_t total) {
  char *fb;
  size_t n = read_file(path, &fb);
  /* the record boundaries, for the ftell checks */
  unsigned char *bound = calloc(n + 1, 1);
  CHECK_NOT_NULL(bound);
  uint64_t next_ord = 0; /* the next transaction's record expected */
  unsigned next_k = 0;
  uint64_t nseq[8] = {0};
  size_t at = 0;
  while (at < n) {
    bound[at] = 1;
    CHECK_MSG(n - at >= MINREC, "a piece of %zu bytes at %zu of %zu", n - at, at, n);
    char kind = fb[at];
    unsigned thread = (unsigned)(fb[at + 1] - '0') * 10 + (unsigned)(fb[at + 2] - '0');
    char num[11], lenb[6];
    memcpy(num, fb + at + 3, 10);
    num[10] = 0;
    memcpy(lenb, fb + at + 13, 5);
    lenb[5] = 0;
    uint64_t seq = strtoull(num, NULL, 10);
    size_t len = (size_t)strtoul(lenb, NULL, 10);
    CHECK_MSG(kind == 'T' || kind == 'N', "stream %d: kind %c (0x%02x) at %zu of %zu", si, kind,
              (unsigned char)kind, at, n);
    CHECK_MSG(thread < g.p.threads, "thread %u at %zu", thread, at);
    CHECK_MSG(len >= MINREC && at + len <= n, "length %zu at %zu of %zu", len, at, n);
    for (size_t j = HDR; j + 1 < len; j++)
      CHECK_MSG(fb[at + j] == pay(kind, thread, seq, j),
                "stream %d: record %c%u/%llu at %zu: "
                "byte %zu is 0x%02x",
                si, kind, thread, (unsigned long long)seq, at, j, (unsigned char)fb[at + j]);
    CHECK_MSG(fb[at + len - 1] == '\n', "record at %zu does not end its line", at);
    if (kind == 'N') {
      CHECK_MSG(seq == nseq[thread],
                "stream %d: call outside transactions %u/%llu at %zu, "
                "expected %llu (lost or doubled)",
                si, thread, (unsigned long long)seq, at, (unsigned long long)nseq[thread]);
      nseq[thread]++;
    } else {
      uint64_t ord = seq / 4;
      unsigned k = (unsigned)(seq % 4);
      /* skip transactions without records on this stream */
      if (next_k == 0)
        while (next_ord < total && ((const txlog_t *)byord[next_ord])->nrec[si] == 0)
          next_ord++;
      CHECK_MSG(ord == next_ord && k == next_k,
                "stream %d: transaction record %llu.%u at %zu, expected %llu.%u (lost, doubled "
                "or out of the serial order)",
                si, (unsigned long long)ord, k, at, (unsigned long long)next_ord, next_k);
      const txlog_t *l = byord[ord];
      CHECK_MSG(l->thread == thread && l->len[si][k] == len,
                "stream %d: record %llu.%u at %zu is thread %u's of %zu bytes; the committed "
                "transaction (attempt %d) was thread %u's, with %zu bytes there",
                si, (unsigned long long)ord, k, at, thread, len, l->attempts, l->thread,
                l->len[si][k]);
      if (k == 0)
        CHECK_MSG((size_t)l->end[si] == at,
                  "stream %d: transaction %llu saw the end at %ld, "
                  "its record is at %zu",
                  si, (unsigned long long)ord, l->end[si], at);
      if (++next_k == l->nrec[si]) next_k = 0, next_ord++;
    }
    at += len;
  }
  bound[n] = 1;
  if (next_k == 0)
    while (next_ord < total && ((const txlog_t *)byord[next_ord])->nrec[si] == 0)
      next_ord++;
  CHECK_MSG(next_ord == total && next_k == 0,
            "stream %d: transaction records end at %llu.%u of "
            "%llu",
            si, (unsigned long long)next_ord, next_k, (unsigned long long)total);
  for (unsigned t = 0; t < g.p.threads; t++)
    CHECK_MSG(nseq[t] == g.nseq[t][si],
              "stream %d: thread %u's calls outside transactions: "
              "%llu in the file, %llu made",
              si, t, (unsigned long long)nseq[t], (unsigned long long)g.nseq[t][si]);
  if (si == 0) {
    /* what the transactions read: the file's bytes, up to the end they saw */
    for (uint64_t o = 0; o < 2 * total; o++) {
      const txlog_t *l = byord[o / 2];
      const rdlog_t *rd = o % 2 ? &l->rd2 : &l->rd;
      if (rd->kind == 0) continue;
      long avail = rd->at < rd->end ? rd->end - rd->at : 0;
      CHECK_LE_I(rd->res, avail);
      CHECK_MSG(memcmp(rd->bytes, fb + rd->at, (size_t)rd->res) == 0,
                "transaction %llu read %ld bytes at %ld that the file does not hold there (%s)",
                (unsigned long long)(o / 2), rd->res, rd->at,
                o % 2 ? "after its writes" : "before");
      if (rd->kind == 2 || rd->kind == 4) { /* a line, or n - 1 bytes, or up to the end */
        CHECK_MSG(rd->res == rd->want - 1 || rd->res == avail ||
                      (rd->res > 0 && rd->bytes[rd->res - 1] == '\n'),
                  "line read of transaction %llu: %ld bytes at %ld (want %ld, end %ld)",
                  (unsigned long long)(o / 2), rd->res, rd->at, rd->want, rd->end);
        if (rd->res > 0) CHECK_EQ_PTR(memchr(rd->bytes, '\n', (size_t)rd->res - 1), NULL);
      } else {
        CHECK_MSG(rd->res == (rd->want < avail ? rd->want : avail),
                  "transaction %llu read %ld of %ld bytes at %ld, end %ld",
                  (unsigned long long)(o / 2), rd->res, rd->want, rd->at, rd->end);
      }
    }
    for (unsigned t = 0; t < g.p.threads; t++)
      for (unsigned i = 0; i < ntxl[t].ntells; i++)
        CHECK_MSG(ntxl[t].tells[i] >= 0 && (size_t)ntxl[t].tells[i] <= n && bound[ntxl[t].tells[i]],
                  "thread %u: ftell outside transactions %ld is no record boundary", t,
                  ntxl[t].tells[i]);
  }
  free(bound);
  free(fb);
}

static sstm_file_t *open_stream(const char *path, const params_t *p) {
  unlink(path); /* "a+" keeps what is there */
  sstm_file_t *f = sstm_fopen(path, p->append ? "a+" : "w+");
  CHECK_NOT_NULL(f);
  if (p->vmode >= 0) CHECK_OK(sstm_setvbuf(f, NULL, p->vmode, p->vsize));
  /* "a+" reads from the start: the position goes to the end, where every
   * transaction leaves it */
  if (p->append) CHECK_EQ_I(sstm_fseek(f, 0, SEEK_END), 0);
  return f;
}

static void records_round(const params_t *p) {
  g.p = *p;
  memset(g.nseq, 0, sizeof g.nseq);
  memset(ntxl, 0, sizeof ntxl);
  g.counter = 0;
  sstm__stdio_set_batch(p->batch_n, p->batch_ns);
  g.f[0] = open_stream(path1, p);
  g.f[1] = p->two ? open_stream(path2, p) : NULL;
  sstm_test_run_threads(p->threads, true, rec_thread, NULL);
  /* (S7) the kernel's offset is where the last committed seek put it */
  uint64_t best = UINT64_MAX;
  long want_k = 0;
  for (unsigned t = 0; t < p->threads; t++)
    for (unsigned i = 0; i < g.nlogs[t]; i++) {
      const txlog_t *l = &g.logs[t][i];
      if (l->seek0 >= 0 && (best == UINT64_MAX || l->ord > best)) best = l->ord, want_k = l->seek0;
    }
  CHECK_MSG(lseek(sstm_fileno(g.f[0]), 0, SEEK_CUR) == want_k,
            "the kernel's offset is %ld, the last committed seek (transaction %llu) went to %ld",
            (long)lseek(sstm_fileno(g.f[0]), 0, SEEK_CUR), (unsigned long long)best, want_k);
  for (int s = 0; s < 2; s++)
    if (g.f[s] != NULL) {
      CHECK_EQ_I(sstm_ferror(g.f[s]), 0);
      CHECK_OK(sstm_fclose(g.f[s]));
    }
  const void *logs[8];
  for (unsigned t = 0; t < p->threads; t++)
    logs[t] = g.logs[t];
  uint64_t total = g.counter;
  void **byord = by_commit_order(logs, g.nlogs, p->threads, sizeof(txlog_t), total);
  check_records(0, path1, byord, total);
  if (p->two) check_records(1, path2, byord, total);
  for (unsigned t = 0; t < p->threads; t++) {
    for (unsigned i = 0; i < g.nlogs[t]; i++)
      free(g.logs[t][i].rd.bytes), free(g.logs[t][i].rd2.bytes);
    free(g.logs[t]);
    free(ntxl[t].tells);
  }
  free(byord);
  sstm__stdio_set_batch(0, 0);
}

/* ---- the slots case: overwrites in place --------------------------------- */

#define SREC 32

static struct {
  params_t p;
  sstm_file_t *f;
  unsigned nslots;
  uint64_t counter;
  struct slotlog *logs[8];
  unsigned nlogs[8];
} s;

typedef struct slotlog {
  uint64_t ord;
  unsigned n;
  unsigned slot[3];
  unsigned span[3]; /* slots written by one call (1 or 2) */
  unsigned thread;
  char old[3][2 * SREC];
} slotlog_t;
_Static_assert(offsetof(slotlog_t, ord) == 0, "by_commit_order reads ord first");

static void mkslot(char *b, unsigned slot, uint64_t ord, unsigned k, unsigned thread) {
  char tmp[80];
  snprintf(tmp, sizeof tmp, "S%05u %010llu %u %02u ........\n", slot % 100000u,
           (unsigned long long)(ord % 10000000000ull), k % 10u, thread % 100u);
  memcpy(b, tmp, SREC);
}

typedef struct sbody {
  sstm_tt_t *t;
  uint64_t seed;
  int attempts, end;
  slotlog_t log;
} sbody_t;

static void slot_body(void *arg) {
  sbody_t *b = arg;
  b->attempts++;
  memset(&b->log, 0, sizeof b->log);
  sstm_rng_t r;
  sstm_rng_seed(&r, b->seed);
  uint64_t ord = sstm_load_u64(&s.counter);
  sstm_store_u64(&s.counter, ord + 1);
  b->log.ord = ord;
  b->log.thread = b->t->idx;
  if (b->end == 4) CHECK_OK(sstm_become_irrevocable());
  unsigned n = 1 + (unsigned)sstm_rng_below(&r, 3);
  for (unsigned k = 0; k < n; k++) {
    unsigned span = sstm_rng_below(&r, 4) == 0 ? 2 : 1;
    unsigned slot = (unsigned)sstm_rng_below(&r, s.nslots - span + 1);
    b->log.slot[k] = slot;
    b->log.span[k] = span;
    b->log.n = k + 1;
    CHECK_EQ_I(sstm_fseek(s.f, (long)slot * SREC, SEEK_SET), 0);
    if (sstm_rng_below(&r, 2) == 0) {
      CHECK_EQ_U(sstm_fread(b->log.old[k], 1, span * SREC, s.f), span * SREC);
    } else {
      for (unsigned j = 0; j < span * SREC; j++) {
        int c = sstm_fgetc(s.f);
        CHECK_NE_I(c, EOF);
        b->log.old[k][j] = (char)c;
      }
    }
    if (sstm_rng_below(&r, 2) == 0)
      CHECK_EQ_I(sstm_fseek(s.f, -(long)(span * SREC), SEEK_CUR), 0);
    else
      CHECK_EQ_I(sstm_fseek(s.f, (long)slot * SREC, SEEK_SET), 0);
    char rec[2 * SREC + 1];
    for (unsigned j = 0; j < span; j++)
      mkslot(rec + j * SREC, slot + j, ord, k, b->t->idx);
    rec[span * SREC] = 0;
    if (b->end == 1) memset(rec, '#', span * SREC);
    CHECK_EQ_U(put_rec(s.f, rec, span * SREC, &r, 1), span * SREC);
    if (sstm_rng_below(&r, 3) == 0) { /* read back what it wrote (its view's bytes, S5) */
      char back[2 * SREC];
      CHECK_EQ_I(sstm_fseek(s.f, (long)slot * SREC, SEEK_SET), 0);
      CHECK_EQ_U(sstm_fread(back, 1, span * SREC, s.f), span * SREC);
      CHECK_MSG(memcmp(back, rec, span * SREC) == 0,
                "transaction %llu read back slot %u as \"%.31s\" after writing \"%.31s\"",
                (unsigned long long)ord, slot, back, rec);
    }
    if (sstm_rng_below(&r, 100) < s.p.flush_pct) CHECK_EQ_I(sstm_fflush(s.f), 0);
    if (b->end == 3 && b->attempts == 1) sstm_restart();
    if (b->end == 5) CHECK_OK(sstm_become_irrevocable()); /* from its second write on */
  }
  if (b->end == 1) sstm_cancel();
  if (b->end == 2 && b->attempts == 1) sstm_restart();
}

static uint64_t g_round_for_slots;

static void slot_thread(sstm_tt_t *t) {
  sstm_rng_seed(&t->rng, t->seed ^ (g_round_for_slots * 0x9e3779b97f4a7c15ull));
  slotlog_t *logs = calloc(s.p.ops, sizeof *logs);
  CHECK_NOT_NULL(logs);
  unsigned n = 0;
  pause_a_while(t, 2);
  for (unsigned i = 0; i < s.p.ops; i++) {
    if (sstm_rng_below(&t->rng, 64) == 0) pause_a_while(t, 1);
    if (sstm_rng_below(&t->rng, 100) < s.p.ntx_pct) { /* calls outside transactions */
      if (sstm_rng_below(&t->rng, 2) == 0)
        CHECK_EQ_I(sstm_fflush(s.f), 0);
      else
        CHECK_GE_I(sstm_ftell(s.f), 0);
      continue;
    }
    sbody_t b = {.t = t, .seed = sstm_rng_next(&t->rng)};
    unsigned fate = (unsigned)sstm_rng_below(&t->rng, 40);
    b.end = fate < 2 ? 1 : fate < 4 ? 2 : fate < 6 ? 3 : fate == 6 ? 4 : fate == 7 ? 5 : 0;
    int rc = sstm_run(NULL, slot_body, &b);
    if (rc == SSTM_ECANCELED) continue;
    CHECK_OK(rc);
    logs[n++] = b.log;
  }
  s.logs[t->idx] = logs;
  s.nlogs[t->idx] = n;
}

static void slots_round(const params_t *p, uint64_t round) {
  sstm_rng_t rr, *r = &rr;
  sstm_rng_seed(r, sstm_test_seed() ^ (round * 0x51ed27u));
  s.p = *p;
  s.counter = 0;
  s.nslots = 16 + (unsigned)sstm_rng_below(r, 400);
  sstm__stdio_set_batch(p->batch_n, p->batch_ns);
  /* the initial file: every slot named, version "none" */
  size_t size = (size_t)s.nslots * SREC;
  char *model = malloc(size);
  CHECK_NOT_NULL(model);
  for (unsigned i = 0; i < s.nslots; i++)
    mkslot(model + (size_t)i * SREC, i, 9999999999ull, 9, 99);
  FILE *fp = fopen(path1, "w");
  CHECK_NOT_NULL(fp);
  CHECK_EQ_U(fwrite(model, 1, size, fp), size);
  fclose(fp);
  s.f = sstm_fopen(path1, "r+");
  CHECK_NOT_NULL(s.f);
  if (p->vmode >= 0) CHECK_OK(sstm_setvbuf(s.f, NULL, p->vmode, p->vsize));
  sstm_test_run_threads(p->threads, true, slot_thread, NULL);
  CHECK_EQ_I(sstm_ferror(s.f), 0);
  CHECK_OK(sstm_fclose(s.f));
  const void *logs[8];
  for (unsigned t = 0; t < p->threads; t++)
    logs[t] = s.logs[t];
  uint64_t total = s.counter;
  void **byord = by_commit_order(logs, s.nlogs, p->threads, sizeof(slotlog_t), total);
  for (uint64_t i = 0; i < total; i++) {
    const slotlog_t *l = byord[i];
    for (unsigned j = 0; j < l->n; j++) {
      char *at = model + (size_t)l->slot[j] * SREC;
      CHECK_MSG(memcmp(l->old[j], at, l->span[j] * SREC) == 0,
                "transaction %llu read slot %u as \"%.31s\", the serial order had \"%.31s\"",
                (unsigned long long)i, l->slot[j], l->old[j], at);
      for (unsigned q = 0; q < l->span[j]; q++)
        mkslot(at + q * SREC, l->slot[j] + q, l->ord, j, l->thread);
    }
  }
  char *fb;
  size_t n = read_file(path1, &fb);
  CHECK_EQ_U(n, size);
  for (unsigned i = 0; i < s.nslots; i++) {
    char *a = fb + (size_t)i * SREC, *m = model + (size_t)i * SREC;
    CHECK_MSG(memcmp(a, m, SREC) == 0, "slot %u holds \"%.31s\", the serial order \"%.31s\"", i, a,
              m);
  }
  free(fb);
  free(model);
  free(byord);
  for (unsigned t = 0; t < p->threads; t++)
    free(s.logs[t]);
  sstm__stdio_set_batch(0, 0);
}

/* ---- the lines case: a file consumed by readers ------------------------- */

/* Numbered lines of LREC bytes, read once each by transactions (one to
 * three lines in a row) and by calls outside transactions (one line),
 * whose reads the read window often serves in place: a keeper's solo
 * reads (S10), the lock's reads (S8), refills at a window's end. */
#define LREC 24

static void mkline(char *b, uint64_t i) {
  char tmp[64];
  snprintf(tmp, sizeof tmp, "L%010llu ...........\n", (unsigned long long)(i % 10000000000ull));
  memcpy(b, tmp, LREC);
}

typedef struct linelog {
  uint64_t ord;   /* transactions: the serial order; calls outside: UINT64_MAX */
  uint64_t first; /* the first line read */
  unsigned n;     /* lines read */
} linelog_t;

static struct {
  params_t p;
  sstm_file_t *f;
  uint64_t nlines;
  uint64_t counter;
  linelog_t *logs[8];
  unsigned nlogs[8];
} ln;

/* Read one whole line with one of the calls; its number, or -1 at EOF. */
static long long read_line(sstm_file_t *f, sstm_rng_t *r, int in_tx) {
  char b[LREC + 8];
  memset(b, 0, sizeof b);
  unsigned how = (unsigned)sstm_rng_below(r, in_tx ? 4 : 3);
  size_t got;
  if (how == 0) {
    got = sstm_fgets(b, sizeof b, f) == NULL ? 0 : strlen(b);
  } else if (how == 1) {
    got = sstm_fread(b, 1, LREC, f);
  } else if (how == 2) {
    ssize_t k = sstm_getline(&tl_line, &tl_cap, f);
    got = k < 0 ? 0 : (size_t)k;
    CHECK_LE_U(got, LREC);
    if (got) memcpy(b, tl_line, got);
  } else { /* byte by byte: only in a transaction (a line is its unit) */
    for (got = 0; got < LREC; got++) {
      int c = sstm_fgetc(f);
      if (c == EOF) break;
      b[got] = (char)c;
    }
  }
  if (got == 0) return -1;
  CHECK_MSG(got == LREC && b[0] == 'L' && b[LREC - 1] == '\n',
            "a piece of a line: %zu bytes \"%.*s\"", got, (int)got, b);
  long long i = strtoll(b + 1, NULL, 10);
  char want[LREC];
  mkline(want, (uint64_t)i);
  CHECK_MSG(memcmp(b, want, LREC) == 0, "line %lld read as \"%.*s\"", i, LREC - 1, b);
  return i;
}

typedef struct lbody {
  sstm_tt_t *t;
  uint64_t seed;
  int attempts, end;
  linelog_t log;
} lbody_t;

static void line_body(void *arg) {
  lbody_t *b = arg;
  b->attempts++;
  memset(&b->log, 0, sizeof b->log);
  sstm_rng_t r;
  sstm_rng_seed(&r, b->seed);
  if (b->end == 4) CHECK_OK(sstm_become_irrevocable());
  long at = -1;
  if (sstm_rng_below(&r, 3) == 0) at = (long)sstm_ftell(ln.f); /* a peek first */
  unsigned n = 1 + (unsigned)sstm_rng_below(&r, 3);
  for (unsigned k = 0; k < n; k++) {
    long long i = read_line(ln.f, &r, 1);
    if (i < 0) break; /* EOF */
    if (k == 0) b->log.first = (uint64_t)i;
    CHECK_MSG((uint64_t)i == b->log.first + k, "a transaction read lines %llu and then %lld",
              (unsigned long long)b->log.first, i);
    if (at >= 0) CHECK_EQ_I(at, (long)(b->log.first * LREC));
    b->log.n = k + 1;
    if (b->end == 3 && b->attempts == 1) sstm_restart();
  }
  uint64_t ord = sstm_load_u64(&ln.counter);
  sstm_store_u64(&ln.counter, ord + 1);
  b->log.ord = ord;
  if (b->end == 1) sstm_cancel();
  if (b->end == 2 && b->attempts == 1) sstm_restart();
}

static void line_thread(sstm_tt_t *t) {
  sstm_rng_seed(&t->rng, t->seed ^ (g.round * 0x9e3779b97f4a7c15ull));
  linelog_t *logs = calloc(ln.p.ops, sizeof *logs);
  CHECK_NOT_NULL(logs);
  unsigned n = 0;
  pause_a_while(t, 2);
  for (unsigned i = 0; i < ln.p.ops; i++) {
    if (sstm_rng_below(&t->rng, 64) == 0) pause_a_while(t, 1);
    if (sstm_rng_below(&t->rng, 100) < ln.p.ntx_pct) { /* a call outside transactions */
      long long k = read_line(ln.f, &t->rng, 0);
      if (k >= 0) logs[n++] = (linelog_t){.ord = UINT64_MAX, .first = (uint64_t)k, .n = 1};
      continue;
    }
    lbody_t b = {.t = t, .seed = sstm_rng_next(&t->rng)};
    unsigned fate = (unsigned)sstm_rng_below(&t->rng, 40);
    b.end = fate < 2 ? 1 : fate < 4 ? 2 : fate < 6 ? 3 : fate == 6 ? 4 : 0;
    int rc = sstm_run(NULL, line_body, &b);
    if (rc == SSTM_ECANCELED) continue;
    CHECK_OK(rc);
    if (b.log.n) logs[n++] = b.log;
  }
  getline_done();
  ln.logs[t->idx] = logs;
  ln.nlogs[t->idx] = n;
}

static int cmp_line(const void *a, const void *b) {
  uint64_t x = ((const linelog_t *)a)->first, y = ((const linelog_t *)b)->first;
  return x < y ? -1 : x > y;
}

static void lines_round(const params_t *p) {
  ln.p = *p;
  if (ln.p.ntx_pct == 0) ln.p.ntx_pct = 30;
  ln.counter = 0;
  /* about as many lines as the threads read, so that some rounds reach EOF */
  ln.nlines = (uint64_t)p->threads * p->ops * 3 / 2;
  sstm__stdio_set_batch(p->batch_n, p->batch_ns);
  FILE *fp = fopen(path1, "w");
  CHECK_NOT_NULL(fp);
  char b[LREC];
  for (uint64_t i = 0; i < ln.nlines; i++) {
    mkline(b, i);
    CHECK_EQ_U(fwrite(b, 1, LREC, fp), LREC);
  }
  fclose(fp);
  ln.f = sstm_fopen(path1, "r");
  CHECK_NOT_NULL(ln.f);
  if (p->vmode >= 0) CHECK_OK(sstm_setvbuf(ln.f, NULL, p->vmode, p->vsize));
  sstm_test_run_threads(p->threads, true, line_thread, NULL);
  size_t total = 0;
  for (unsigned t = 0; t < p->threads; t++)
    total += ln.nlogs[t];
  linelog_t *all = malloc((total + 1) * sizeof *all);
  CHECK_NOT_NULL(all);
  size_t k = 0;
  for (unsigned t = 0; t < p->threads; t++) {
    uint64_t last = 0;
    for (unsigned i = 0; i < ln.nlogs[t]; i++) {
      const linelog_t *l = &ln.logs[t][i];
      /* each thread's reads in its program order */
      if (i)
        CHECK_MSG(l->first >= last, "thread %u read line %llu after %llu", t,
                  (unsigned long long)l->first, (unsigned long long)last);
      last = l->first + l->n;
      all[k++] = *l;
    }
  }
  qsort(all, total, sizeof *all, cmp_line);
  /* every line read once, from the first on, none skipped */
  uint64_t next = 0, prev_ord = 0;
  int have_ord = 0;
  for (size_t i = 0; i < total; i++) {
    CHECK_MSG(all[i].first == next, "lines read: %llu follows %llu (lost or read twice)",
              (unsigned long long)all[i].first, (unsigned long long)next);
    next += all[i].n;
    if (all[i].ord != UINT64_MAX) { /* the transactions in their serial order */
      if (have_ord)
        CHECK_MSG(all[i].ord > prev_ord, "transaction %llu read line %llu after transaction %llu",
                  (unsigned long long)all[i].ord, (unsigned long long)all[i].first,
                  (unsigned long long)prev_ord);
      prev_ord = all[i].ord, have_ord = 1;
    }
  }
  CHECK_LE_U(next, ln.nlines);
  /* the position is where the reads left it: the next read gets line next */
  sstm_rng_t r;
  sstm_rng_seed(&r, 1);
  long long after = read_line(ln.f, &r, 0);
  getline_done();
  CHECK_EQ_I(after, next < ln.nlines ? (long long)next : -1);
  CHECK_OK(sstm_fclose(ln.f));
  free(all);
  for (unsigned t = 0; t < p->threads; t++)
    free(ln.logs[t]);
  sstm__stdio_set_batch(0, 0);
}

/* ---- the cases ---------------------------------------------------------- */

static unsigned rounds(unsigned dflt) {
  long n = sstm_test_env_long("SSTM_STRESS_ROUNDS", 0);
  if (n > 0) return (unsigned)n;
  if (sstm_test_long_mode()) return dflt * 25;
  return (unsigned)sstm_test_scaled(dflt, 3);
}

static void run(int kind, unsigned dflt_rounds, unsigned ops) {
  sstm_test_init();
  sstm_test_tmp_file(path1, sizeof path1, "stress1");
  sstm_test_tmp_file(path2, sizeof path2, "stress2");
  sstm_rng_t r;
  sstm_rng_seed(&r, sstm_test_seed());
  unsigned max_threads = sstm_test_threads(8);
  if (max_threads > 8) max_threads = 8;
  if (max_threads < 2) max_threads = 2;
  unsigned nr = rounds(dflt_rounds);
  /* SSTM_STRESS_FIRST=i: start at round i (the rounds before are only drawn) */
  unsigned first = (unsigned)sstm_test_env_long("SSTM_STRESS_FIRST", 0);
  for (unsigned i = 0; i < first + nr; i++) {
    params_t p;
    pick(&p, &r, max_threads);
    if (i < first) continue;
    p.ops = (unsigned)sstm_test_scaled(ops, ops / 4);
    g.round = i;
    g_round_for_slots = i;
    describe(&p, i); /* before the round: a failure's output names it */
    if (kind == 1)
      slots_round(&p, i);
    else if (kind == 2)
      lines_round(&p);
    else
      records_round(&p);
  }
  unlink(path1);
  unlink(path2);
  sstm_test_fini();
}

TEST(records_on_shared_streams_keep_a_serial_order) { run(0, 8, 300); }

TEST(overwrites_in_place_keep_a_serial_order) { run(1, 8, 300); }

TEST(readers_read_every_line_once_in_a_serial_order) { run(2, 8, 300); }

SSTM_TEST_MAIN()
