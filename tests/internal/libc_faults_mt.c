/* SPDX-License-Identifier: MIT */
/* The transactional stdio's writes fail while several threads commit
 * (docs/design/tm-libc.md (S4)): tickets in commit order, a failing
 * ticket undone from the bytes it overwrites and cut back to the file's
 * size before it, the errno kept for the stream (werr) and reported by the
 * next sstm_fflush or sstm_fclose.
 *
 * Each round: 4-8 threads commit transactions on one shared stream, or
 * each on a stream of its own. A transaction takes the next value c of a
 * transactional counter of its stream (its place in the serial order) and
 * writes 1-3 lines, each with one sstm_fputs, whose lengths and bytes
 * follow from c; the thread logs c once it committed. The stream's bytes
 * in a serial order of the commits are therefore known exactly: S, the
 * lines of c = 0, 1, 2, ... The file is opened "r+" over a filler of '#'
 * (so that some tickets overwrite bytes and their undo needs them) or "a"
 * (O_APPEND) after it. The seam (src/libc/sys.h) makes exactly one pwrite
 * fail with ENOSPC or EIO, at a pseudo-random call number, after a
 * partial write of some bytes (returned as a short count whose retry
 * fails, or written and then reported as a failure); some rounds also
 * limit every pwrite to a chunk, so that the failing call lies inside its
 * record. What must hold, checked exactly:
 * - the file is S with the failing ticket's bytes, and only those, taken
 *   out: on "r+" the bytes there are the file's before the ticket (the
 *   filler, or a hole of zeros past the old end, or the end of the file
 *   when no later ticket wrote beyond it), and the later tickets' bytes
 *   are at their own offsets; on "a" the kernel puts every write at the
 *   end, so the later tickets' bytes follow the earlier ones at once.
 *   Every other committed transaction's bytes are there once, in the
 *   serial order of the counter. A ticket here is one record (a
 *   transaction writes far less than a buffer, so a view spills at most
 *   once): the injector knows it as the run of pwrite calls that retry
 *   one another;
 * - the transactions whose bytes were in that ticket stay committed (their
 *   counter values are taken, later bytes follow them): the loss is a
 *   stream error, and a transaction whose lines straddled a buffer's end
 *   keeps the lines of the other ticket;
 * - the thread whose commit (or flush) wrote the failing ticket sees
 *   sstm_ferror once its call returned; exactly one sstm_fflush or
 *   sstm_fclose on that stream returns EOF, with the injected errno; no
 *   call on another stream reports anything, and their files are their S.
 * Two more cases make two pwrites fail (on one stream, or on one or two of
 * the streams per thread): the second failing ticket comes after the
 * first one's cut back, where on "a" the append position runs ahead of
 * the file; each stream reports once per failure at most, at least once.
 * The last case makes every k-th pwrite and pread fail with EINTR and
 * limits pwrite to a chunk, from all threads at once: every file is
 * exactly its S, and nothing reports an error.
 *
 * SSTM_TEST_LONG=1 (the torture entries) runs many more rounds; a failure
 * prints the round's parameters, SSTM_TEST_SEED reproduces them. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "libc/sys.h"
#include "runner.h"

#define MAXT 8
#define FILLER '#'

/* ---- the injector ----------------------------------------------------------- */

/* The plain fields are written by the main thread before the round's
 * threads start (pthread_create orders them) and only read meanwhile. */
static struct {
  int fail_at[2];    /* the pwrite calls (counted over all threads) that fail; 0: none */
  int fail_errno;    /* ENOSPC or EIO */
  int short_first;   /* the failing call returns a short count, and its retry fails */
  int eintr_every;   /* every k-th pwrite and pread returns EINTR */
  size_t chunk;      /* largest count one pwrite writes */
  atomic_int calls;  /* pwrite calls so far */
  atomic_int preads; /* pread calls so far */
  atomic_int armed;  /* failures begun (the next one's index in fail_at) */
  atomic_int nclaim; /* failures injected: slots of fails[] taken */
  atomic_int nfail;  /* failures injected and recorded */
  atomic_int eintrs; /* EINTRs injected */
  atomic_int shorts; /* short counts returned */
  struct {
    atomic_int t;                  /* the test thread that got the failure */
    atomic_llong rec_off, rec_len; /* the failing record: its offset and length */
    atomic_llong wrote;            /* its bytes that reached the file before the failure */
  } fails[2];
} fi;

/* The calling thread's last pwrite: a call that continues it (the same
 * descriptor, the rest of a call that did not finish) writes the same
 * record (pwrite_all in src/libc/stdio.c retries EINTR and short counts). */
static __thread struct {
  int fd;
  long long off, n, ret;
  long long rec_off, rec_len;
  int fail_next; /* the retry of a short count fails */
  int hit;       /* this thread's call failed (not yet checked) */
} tl = {.fd = -1};

static void fail_now(long long wrote_to) {
  int k = atomic_fetch_add_explicit(&fi.nclaim, 1, memory_order_relaxed);
  CHECK_LT_I(k, 2);
  atomic_store_explicit(&fi.fails[k].rec_off, tl.rec_off, memory_order_relaxed);
  atomic_store_explicit(&fi.fails[k].rec_len, tl.rec_len, memory_order_relaxed);
  atomic_store_explicit(&fi.fails[k].wrote, wrote_to - tl.rec_off, memory_order_relaxed);
  atomic_store_explicit(&fi.fails[k].t, sstm_test_thread_index(), memory_order_relaxed);
  /* release: the fields above, for whoever counts this failure (acquire) */
  atomic_fetch_add_explicit(&fi.nfail, 1, memory_order_release);
  tl.hit = 1;
  errno = fi.fail_errno;
}

static ssize_t inject(int fd, const void *b, size_t n, off_t off) {
  int call = atomic_fetch_add_explicit(&fi.calls, 1, memory_order_relaxed) + 1;
  if (fi.eintr_every && call % fi.eintr_every == 0) {
    atomic_fetch_add_explicit(&fi.eintrs, 1, memory_order_relaxed);
    errno = EINTR;
    return -1;
  }
  if (tl.fail_next) {
    tl.fail_next = 0;
    fail_now((long long)off);
    return -1;
  }
  /* The k-th failure: the first call from fail_at[k] on that does not
   * write undo bytes. A failing ticket's undo puts back what its records
   * overwrote, here always the filler (lines hold no FILLER): a failure
   * of the undo itself leaves part of the ticket in the file, a limit of
   * the design (docs/design/tm-libc.md (S4)) that this test does not
   * check. */
  int next = atomic_load_explicit(&fi.armed, memory_order_relaxed);
  if (next < 2 && fi.fail_at[next] != 0 && call >= fi.fail_at[next] &&
      !(n > 0 && ((const char *)b)[0] == FILLER) &&
      atomic_compare_exchange_strong_explicit(&fi.armed, &next, next + 1, memory_order_relaxed,
                                              memory_order_relaxed)) {
    /* some bytes reach the file first */
    size_t k = n > 1 ? 1 + (size_t)((unsigned)call * 2654435761u % (n - 1)) : 0;
    if (fi.chunk && k > fi.chunk) k = fi.chunk;
    for (size_t done = 0; done < k;) {
      ssize_t r = pwrite(fd, (const char *)b + done, k - done, off + (off_t)done);
      CHECK_GT_I(r, 0);
      done += (size_t)r;
    }
    if (fi.short_first && k > 0) {
      tl.fail_next = 1;
      atomic_fetch_add_explicit(&fi.shorts, 1, memory_order_relaxed);
      return (ssize_t)k;
    }
    fail_now((long long)off + (long long)k);
    return -1;
  }
  if (fi.chunk && n > fi.chunk) {
    n = fi.chunk;
    atomic_fetch_add_explicit(&fi.shorts, 1, memory_order_relaxed);
  }
  return pwrite(fd, b, n, off);
}

static ssize_t fi_pwrite(int fd, const void *b, size_t n, off_t off) {
  long long done = tl.ret > 0 ? tl.ret : 0;
  bool cont = tl.fd == fd && tl.ret != tl.n && (long long)off == tl.off + done &&
              (long long)n == tl.n - done;
  if (!cont) tl.rec_off = (long long)off, tl.rec_len = (long long)n;
  tl.fd = fd, tl.off = (long long)off, tl.n = (long long)n;
  ssize_t r = inject(fd, b, n, off);
  tl.ret = r;
  return r;
}

static ssize_t fi_pread(int fd, void *b, size_t n, off_t off) {
  int call = atomic_fetch_add_explicit(&fi.preads, 1, memory_order_relaxed) + 1;
  if (fi.eintr_every && call % fi.eintr_every == 0) {
    atomic_fetch_add_explicit(&fi.eintrs, 1, memory_order_relaxed);
    errno = EINTR;
    return -1;
  }
  return pread(fd, b, n, off);
}

static sstm__stdio_sys_t fi_sys;

/* ---- the round ---------------------------------------------------------------- */

typedef struct params {
  unsigned threads;
  unsigned ops;  /* transactions per thread, at least (and until the failure) */
  int shared;    /* one stream for all threads, else one per thread */
  int append;    /* "a" after the filler, else "r+" over it */
  size_t bsz;    /* sstm_setvbuf's size */
  size_t filler; /* the file's bytes before the round */
  int fault;     /* failing pwrites (1 or 2); 0: EINTR and short writes only */
} params_t;

static struct {
  params_t p;
  uint64_t salt; /* the round's: lines differ between rounds */
  unsigned nstreams;
  sstm_file_t *f[MAXT];
  char path[MAXT][64];
  uint64_t ctr[MAXT]; /* transactional: each stream's serial order */
  uint64_t *log[MAXT];
  unsigned nlog[MAXT];
  atomic_int reports[MAXT]; /* sstm_fflush/sstm_fclose that returned EOF */
  atomic_int flushes;
} g;

static uint64_t mix(uint64_t x) {
  x ^= x >> 31, x *= 0x7fb5d329728ea185ull;
  x ^= x >> 27, x *= 0x81dadef4bc2dd44dull;
  return x ^ (x >> 33);
}

static unsigned nlines(unsigned s, uint64_t c) {
  return 1 + (unsigned)(mix(g.salt ^ (s * 977u) ^ (c * 3 + 1)) % 3);
}

/* Line k of transaction c of stream s (thread t) into b: no FILLER, no
 * zero byte, ends with '\n'. Returns its length. */
static size_t mkline(char *b, unsigned s, uint64_t c, unsigned t, unsigned k) {
  uint64_t h = mix(g.salt ^ (s * 977u) ^ (c << 2) ^ k);
  size_t len = 24 + (size_t)(h % 90);
  int n = snprintf(b, len + 1, "c%llu t%u k%u ", (unsigned long long)c, t, k);
  for (size_t i = (size_t)n; i + 1 < len; i++)
    b[i] = (char)('a' + (h >> (i % 50)) % 26);
  b[len - 1] = '\n';
  b[len] = '\0';
  return len;
}

typedef struct body {
  unsigned t, s;
  uint64_t c;
  char buf[160];
} body_t;

static void tx_body(void *arg) {
  body_t *b = arg;
  sstm_file_t *f = g.f[b->s];
  uint64_t c = sstm_load_u64(&g.ctr[b->s]);
  sstm_store_u64(&g.ctr[b->s], c + 1);
  unsigned nl = nlines(b->s, c);
  for (unsigned k = 0; k < nl; k++) {
    size_t len = mkline(b->buf, b->s, c, b->t, k);
    CHECK_EQ_I(sstm_fputs(b->buf, f), (long long)len);
  }
  b->c = c;
}

/* After a call of this thread returned: if its pwrite failed, the stream's
 * error indicator is set. */
static void check_hit(unsigned s) {
  if (!tl.hit) return;
  tl.hit = 0;
  CHECK_MSG(sstm_ferror(g.f[s]), "stream %u: sstm_ferror is 0 after the failed write", s);
}

/* An sstm_fflush or sstm_fclose's result on stream s: EOF only with the
 * injected errno, once a failure happened (on that stream: checked at the
 * end, with the count of reports). */
static void note_result(unsigned s, int rc, int err, const char *what) {
  if (rc == 0) return;
  CHECK_MSG(rc == EOF, "%s returned %d", what, rc);
  CHECK_MSG(atomic_load_explicit(&fi.nfail, memory_order_acquire) >= 1,
            "%s on stream %u failed (errno %d) with no failure injected", what, s, err);
  CHECK_MSG(err == fi.fail_errno, "%s on stream %u: errno %d, injected %d", what, s, err,
            fi.fail_errno);
  atomic_fetch_add_explicit(&g.reports[s], 1, memory_order_relaxed);
}

static void worker(sstm_tt_t *t) {
  unsigned s = g.p.shared ? 0 : t->idx;
  sstm_file_t *f = g.f[s];
  unsigned cap = g.p.ops * 200 + 1000;
  uint64_t *log = malloc(cap * sizeof *log);
  CHECK_NOT_NULL(log);
  unsigned n = 0;
  body_t *b = malloc(sizeof *b);
  CHECK_NOT_NULL(b);
  tl.fd = -1, tl.ret = 0, tl.n = 0, tl.hit = 0, tl.fail_next = 0;
  for (unsigned i = 0;; i++) {
    /* until this thread's share is done and the failure happened (an
     * event: every round's writes reach the failing call number) */
    if (i >= g.p.ops && atomic_load_explicit(&fi.nfail, memory_order_acquire) == g.p.fault) break;
    CHECK_MSG(n < cap, "no failure after %u transactions (fail_at %d, %d calls)", n, fi.fail_at[0],
              atomic_load_explicit(&fi.calls, memory_order_relaxed));
    if (sstm_rng_below(&t->rng, 16) == 0) {
      errno = 0;
      int rc = sstm_fflush(f);
      note_result(s, rc, errno, "sstm_fflush");
      atomic_fetch_add_explicit(&g.flushes, 1, memory_order_relaxed);
      check_hit(s);
      continue;
    }
    b->t = t->idx, b->s = s;
    CHECK_OK(sstm_run(NULL, tx_body, b));
    log[n++] = b->c;
    check_hit(s);
  }
  g.log[t->idx] = log;
  g.nlog[t->idx] = n;
  free(b);
}

/* The stream's bytes in the serial order: S, from the threads' logs. */
static char *serial_bytes(unsigned s, size_t *len) {
  uint64_t total = g.ctr[s];
  unsigned *owner = malloc((total + 1) * sizeof *owner);
  CHECK_NOT_NULL(owner);
  for (uint64_t c = 0; c < total; c++)
    owner[c] = UINT32_MAX;
  uint64_t seen = 0;
  for (unsigned t = 0; t < g.p.threads; t++) {
    if (!g.p.shared && t != s) continue;
    for (unsigned i = 0; i < g.nlog[t]; i++) {
      uint64_t c = g.log[t][i];
      CHECK_LT_U(c, total);
      CHECK_MSG(owner[c] == UINT32_MAX, "stream %u: counter value %llu committed twice", s,
                (unsigned long long)c);
      owner[c] = t;
      seen++;
    }
  }
  CHECK_EQ_U(seen, total); /* every counter value belongs to one commit */
  size_t cap = total * 3 * 120 + 1, n = 0;
  char *S = malloc(cap);
  CHECK_NOT_NULL(S);
  for (uint64_t c = 0; c < total; c++)
    for (unsigned k = 0; k < nlines(s, c); k++)
      n += mkline(S + n, s, c, owner[c], k);
  free(owner);
  *len = n;
  return S;
}

static char *file_bytes(const char *path, size_t *len) {
  int fd = open(path, O_RDONLY);
  CHECK_GE_I(fd, 0);
  struct stat st;
  CHECK_EQ_I(fstat(fd, &st), 0);
  char *d = malloc((size_t)st.st_size + 1);
  CHECK_NOT_NULL(d);
  size_t got = 0;
  while (got < (size_t)st.st_size) {
    ssize_t r = pread(fd, d + got, (size_t)st.st_size - got, (off_t)got);
    CHECK_GT_I(r, 0);
    got += (size_t)r;
  }
  close(fd);
  *len = got;
  return d;
}

/* The failing records of stream s: [ra[k], ra[k] + rl[k]) in file offsets. */
typedef struct lost {
  int n;
  long long ra[2], rl[2];
} lost_t;

static bool in_lost(const lost_t *l, long long at) {
  for (int k = 0; k < l->n; k++)
    if (at >= l->ra[k] && at < l->ra[k] + l->rl[k]) return true;
  return false;
}

/* What the file of stream s must hold: S laid over (r+) or after (a) the
 * filler, without the failing records. */
static char *expected(const char *S, size_t slen, const lost_t *l, size_t *len) {
  size_t P = g.p.filler;
  size_t cap = P + slen + 1;
  char *e = calloc(cap, 1);
  CHECK_NOT_NULL(e);
  memset(e, FILLER, P);
  if (g.p.append) { /* the kernel appends: the later bytes close the gap */
    size_t n = P;
    for (size_t i = 0; i < slen; i++)
      if (!in_lost(l, (long long)(P + i))) e[n++] = S[i];
    *len = n;
    return e;
  }
  /* r+: S from offset 0, each byte at its offset; a lost byte leaves the
   * filler, or a hole of zeros where a later ticket wrote beyond it. The
   * file was cut back to its size before each failing ticket, so it ends
   * with the filler or with the last byte written, whichever is later. */
  size_t n = P;
  for (size_t i = 0; i < slen; i++) {
    if (in_lost(l, (long long)i)) continue;
    e[i] = S[i];
    if (i + 1 > n) n = i + 1;
  }
  *len = n;
  return e;
}

/* How many bytes of a len-byte buffer to print from `from` on. */
static int show(size_t len, size_t from) {
  return len <= from ? 0 : len - from < 120 ? (int)(len - from) : 120;
}

static void check_stream(unsigned s, const lost_t *l) {
  size_t slen, flen, elen;
  char *S = serial_bytes(s, &slen);
  char *F = file_bytes(g.path[s], &flen);
  for (int k = 0; k < l->n; k++) {
    long long ra = l->ra[k], rl = l->rl[k];
    /* the record is whole lines of S */
    long long base = g.p.append ? (long long)g.p.filler : 0;
    CHECK_MSG(ra >= base && ra + rl <= base + (long long)slen,
              "failing record [%lld, +%lld) outside the stream's bytes", ra, rl);
    CHECK_MSG(ra == base || S[ra - base - 1] == '\n', "failing record at %lld: not a line start",
              ra);
    CHECK_MSG(S[ra + rl - base - 1] == '\n', "failing record [%lld, +%lld): not a line end", ra,
              rl);
  }
  char *E = expected(S, slen, l, &elen);
  size_t i = 0;
  while (i < flen && i < elen && F[i] == E[i])
    i++;
  if (i != flen || i != elen) {
    fprintf(stderr,
            "stream %u: the file (%zu bytes) differs from the serial order at %zu "
            "(expected %zu bytes; filler %zu)\n",
            s, flen, i, elen, g.p.filler);
    for (int k = 0; k < l->n; k++)
      fprintf(stderr, "  failing record [%lld, +%lld)\n", l->ra[k], l->rl[k]);
    size_t from = i > 40 ? i - 40 : 0;
    fprintf(stderr, "  file:     %.*s\n", show(flen, from), F + from);
    fprintf(stderr, "  expected: %.*s\n", show(elen, from), E + from);
    FAIL("stream %u: the file is not the serial order less the failing ticket", s);
  }
  free(S), free(F), free(E);
}

static void round_run(const params_t *p, sstm_rng_t *r) {
  memset(&g, 0, sizeof g);
  g.p = *p;
  g.salt = sstm_rng_next(r);
  g.nstreams = p->shared ? 1 : p->threads;
  /* the injector: pthread_create publishes these to the threads */
  fi.fail_at[0] = fi.fail_at[1] = 0, fi.eintr_every = 0, fi.chunk = 0, fi.short_first = 0;
  atomic_store_explicit(&fi.calls, 0, memory_order_relaxed);
  atomic_store_explicit(&fi.preads, 0, memory_order_relaxed);
  atomic_store_explicit(&fi.nfail, 0, memory_order_relaxed);
  atomic_store_explicit(&fi.nclaim, 0, memory_order_relaxed);
  atomic_store_explicit(&fi.armed, 0, memory_order_relaxed);
  atomic_store_explicit(&fi.eintrs, 0, memory_order_relaxed);
  atomic_store_explicit(&fi.shorts, 0, memory_order_relaxed);
  for (unsigned s = 0; s < g.nstreams; s++) {
    sstm_test_tmp_file(g.path[s], sizeof g.path[s], "faultsmt");
    if (p->filler) {
      int fd = open(g.path[s], O_WRONLY);
      CHECK_GE_I(fd, 0);
      char *fill = malloc(p->filler);
      CHECK_NOT_NULL(fill);
      memset(fill, FILLER, p->filler);
      CHECK_EQ_I(pwrite(fd, fill, p->filler, 0), (long long)p->filler);
      free(fill);
      close(fd);
    }
    g.f[s] = sstm_fopen(g.path[s], p->append ? "a" : "r+");
    CHECK_NOT_NULL(g.f[s]);
    CHECK_OK(sstm_setvbuf(g.f[s], NULL, _IOFBF, p->bsz));
  }
  /* a transaction writes 1-3 lines of 24-113 bytes, 137 on average: the
   * failing call falls within the first three quarters of the threads'
   * shares (before the end when more calls come with short writes) */
  unsigned est = (unsigned)((uint64_t)p->threads * p->ops * 100 / p->bsz) + 1;
  if (p->fault) {
    fi.fail_at[0] = 1 + (int)sstm_rng_below(r, est);
    /* a second failure a few tickets later, or many */
    if (p->fault == 2) fi.fail_at[1] = fi.fail_at[0] + 2 + (int)sstm_rng_below(r, est / 2 + 2);
    fi.fail_errno = sstm_rng_below(r, 2) ? ENOSPC : EIO;
    fi.short_first = (int)sstm_rng_below(r, 2);
    if (sstm_rng_below(r, 2)) fi.chunk = 40 + (size_t)sstm_rng_below(r, 200);
  } else {
    fi.eintr_every = 2 + (int)sstm_rng_below(r, 4);
    fi.chunk = 1 + (size_t)sstm_rng_below(r, 300);
  }
  fprintf(stderr,
          "round: %u threads, %s stream%s, \"%s\", buffer %zu, filler %zu, ops %u; fail_at %d %d "
          "(%s, %s), eintr every %d, chunk %zu\n",
          p->threads, p->shared ? "one shared" : "a", p->shared ? "" : " per thread",
          p->append ? "a" : "r+", p->bsz, p->filler, p->ops, fi.fail_at[0], fi.fail_at[1],
          fi.fail_errno == ENOSPC ? "ENOSPC" : "EIO",
          fi.short_first ? "short first" : "bytes then -1", fi.eintr_every, fi.chunk);
  sstm_test_run_threads(p->threads, true, worker, NULL);

  int nfail = atomic_load_explicit(&fi.nfail, memory_order_acquire);
  CHECK_EQ_I(nfail, p->fault);
  lost_t lost[MAXT];
  memset(lost, 0, sizeof lost);
  for (int k = 0; k < nfail; k++) {
    int ft = atomic_load_explicit(&fi.fails[k].t, memory_order_relaxed);
    CHECK_GE_I(ft, 0); /* a worker's commit or flush wrote the failing ticket */
    lost_t *l = &lost[p->shared ? 0 : (unsigned)ft];
    l->ra[l->n] = atomic_load_explicit(&fi.fails[k].rec_off, memory_order_relaxed);
    l->rl[l->n] = atomic_load_explicit(&fi.fails[k].rec_len, memory_order_relaxed);
    l->n++;
  }
  if (!p->fault) {
    CHECK_GT_I(atomic_load_explicit(&fi.eintrs, memory_order_relaxed), 0);
    CHECK_GT_I(atomic_load_explicit(&fi.shorts, memory_order_relaxed), 0);
  }
  for (unsigned s = 0; s < g.nstreams; s++) {
    /* the error indicator: on a stream that failed only */
    CHECK_EQ_I(sstm_ferror(g.f[s]) != 0, lost[s].n != 0);
    errno = 0;
    int rc = sstm_fclose(g.f[s]);
    note_result(s, rc, errno, "sstm_fclose");
    /* reported on that stream only: once, or once per failure when a
     * flush came between them (werr keeps the first until it is taken) */
    int reports = atomic_load_explicit(&g.reports[s], memory_order_relaxed);
    if (lost[s].n == 0)
      CHECK_EQ_I(reports, 0);
    else
      CHECK_MSG(reports >= 1 && reports <= lost[s].n, "stream %u: %d reports of %d failures", s,
                reports, lost[s].n);
    check_stream(s, &lost[s]);
    unlink(g.path[s]);
  }
  for (unsigned t = 0; t < p->threads; t++)
    free(g.log[t]);
}

static unsigned rounds(unsigned dflt) {
  long n = sstm_test_env_long("SSTM_FAULTS_ROUNDS", 0);
  if (n > 0) return (unsigned)n;
  if (sstm_test_long_mode()) return dflt * 25;
  return (unsigned)sstm_test_scaled(dflt, 2);
}

static void run(int fault, int shared, unsigned dflt_rounds) {
  sstm_test_init();
  fi_sys = sstm__stdio_sys_default;
  fi_sys.pwrite = fi_pwrite;
  fi_sys.pread = fi_pread;
  sstm__stdio_sys = &fi_sys; /* before any stream operation */
  sstm_rng_t r;
  sstm_rng_seed(&r, sstm_test_seed());
  unsigned max_threads = sstm_test_threads(8);
  if (max_threads > MAXT) max_threads = MAXT;
  if (max_threads < 4) max_threads = 4;
  unsigned nr = rounds(dflt_rounds);
  static const size_t sizes[] = {512, 1024, 4096};
  for (unsigned i = 0; i < nr; i++) {
    params_t p = {0};
    p.threads = 4 + (unsigned)sstm_rng_below(&r, max_threads - 3);
    p.ops = (unsigned)sstm_test_scaled(200, 30);
    p.shared = shared;
    p.append = (int)sstm_rng_below(&r, 2);
    p.bsz = sizes[sstm_rng_below(&r, 3)];
    /* about half the rounds over a filler that the writes overwrite, up to
     * the stream's expected bytes (137 per transaction) */
    uint64_t bytes = (uint64_t)p.ops * 137 * (shared ? p.threads : 1);
    p.filler = sstm_rng_below(&r, 2) ? 0 : (size_t)sstm_rng_below(&r, bytes);
    p.fault = fault;
    round_run(&p, &r);
  }
  sstm__stdio_sys = &sstm__stdio_sys_default;
  sstm_test_fini();
}

TEST(a_failing_write_on_a_shared_stream_loses_its_ticket_only) { run(1, 1, 24); }

TEST(a_failing_write_on_one_of_a_stream_per_thread_is_reported_there_only) { run(1, 0, 24); }

/* Two failures: the second comes after the first's cut back, which on
 * "a" is where the kernel's end and the append position part. */
TEST(two_failing_writes_on_a_shared_stream_lose_their_tickets_only) { run(2, 1, 16); }

TEST(two_failing_writes_among_streams_per_thread_lose_their_tickets_only) { run(2, 0, 16); }

TEST(eintr_and_short_writes_from_all_threads_lose_nothing_on_a_shared_stream) { run(0, 1, 12); }

TEST(eintr_and_short_writes_from_all_threads_lose_nothing_on_streams_per_thread) { run(0, 0, 12); }

SSTM_TEST_MAIN()
