/* SPDX-License-Identifier: MIT */
/* The transactional stdio's system calls fail while other threads read,
 * seek and call outside transactions (docs/design/tm-libc.md (S4) "After
 * a failed ticket", (S5), (S7), (S8)), on regular files.
 *
 * The slots cases. A file of fixed 32-byte slots, each a line that names
 * its slot and the write that put it there (transaction, call, thread),
 * opened "r+", fully buffered, line buffered or unbuffered. 3-6 threads
 * run transactions that take the next value of a transactional counter
 * (their place in the serial order) and then seek (SEEK_SET, SEEK_CUR or
 * SEEK_END) and either read 1-3 slot spans (sstm_fread, sstm_fgets,
 * sstm_fgetc) or overwrite 1-3 spans, sometimes reading a span first or
 * reading it back. Through the seam (src/libc/sys.h) one pwrite of a
 * ticket's records fails with ENOSPC or EIO after part of its bytes
 * reached the file; other rounds fail preads inside transactions (EIO
 * after a short count, or at once; EINTR and short counts everywhere) or
 * lseeks inside transactions. The injector logs every record that a
 * ticket writes (which slot writes it holds) and knows the failing
 * ticket's. What must hold, checked exactly:
 * - lost writes: the slot writes of the failing ticket (its records up to
 *   the failing one, from the injector's log, and the ones after it,
 *   never tried: the committed writes that no record holds). Every other
 *   committed slot write is in exactly one record; no record holds a
 *   write of a transaction that did not commit.
 * - the final file is the serial order of the committed transactions'
 *   writes with the lost ones left out (where a ticket is lost, the undo
 *   puts back what the earlier tickets wrote; a later ticket writes over
 *   it as usual).
 * - a committed transaction read each slot as the serial order had it at
 *   its place, in one of two states: M, with every committed write, or
 *   M', without the lost ones. A reader that comes after the failed
 *   ticket may see either: preads see the file (M'), while the read window
 *   that the failed ticket's transaction installed (it read back what it
 *   wrote, S5: its records laid over the file) holds its bytes (M) until
 *   a later write over it makes it stale. Nothing else: never a slot of
 *   another place, never a byte of a transaction that has not committed,
 *   never a half-written ticket.
 * - the error: the thread whose commit or flush wrote the failing ticket
 *   sees sstm_ferror once its call returns; exactly one sstm_fflush or
 *   sstm_fclose returns EOF, with the injected errno; none before it.
 * - a read that fails (EIO): sstm_fread returns the items read before the
 *   error, sstm_fgets NULL, sstm_fgetc EOF, each with errno EIO and the
 *   error indicator set; the bytes returned before it are right; the
 *   position counts them; later reads of the same transaction are right
 *   (a failed refill leaves no foreign bytes in the view). Half of those
 *   transactions cancel; the others commit, and the error indicator stays.
 * - a failing lseek (inside a transaction: the seek's own) fails the seek
 *   with its errno (EINVAL, as fseek(3)) and changes nothing: the position
 *   is where it was, and the body seeks again; after the round the
 *   kernel's offset is the last committed seek's (S7).
 * - calls outside transactions (S8) from the same threads: sstm_fgets and
 *   sstm_fread of the slot at the stream's position (mostly served in
 *   place from the installed window, under the lock), sstm_ftell,
 *   sstm_fflush. Each read returns a whole slot whose content the serial
 *   order had (M or M') at some place between the thread's transactions
 *   before and after the call; sstm_ftell is a slot boundary.
 *
 * The lines case: an "a" (O_APPEND) stream, line buffered or unbuffered,
 * that transactions (one or two lines) and calls outside transactions
 * (sstm_fputs, one line) write while one pwrite fails. Each failing call's
 * contract: a call outside transactions whose own write failed reports it
 * itself, as ISO C's unbuffered fputs does (EOF, the injected errno,
 * sstm_ferror set when it returns), and is the only report: no
 * sstm_fflush or sstm_fclose returns EOF after it; a transaction whose
 * commit wrote the failing ticket returns SSTM_OK from sstm_run and sees
 * sstm_ferror, and the report is one later sstm_fflush or sstm_fclose.
 * Either way the failure is reported exactly once. The file holds every
 * other committed line once, whole, each thread's in program order and the
 * transactions' in their serial order.
 *
 * Rounds alternate encounter-time and commit-time locking; under the
 * latter an attempt may read on after another commit until it validates,
 * so every attempt checks that it read whole slots, each the one it asked
 * for (opacity: never a ticket half written).
 *
 * SSTM_TEST_LONG=1 (the torture entries) runs many more rounds;
 * SSTM_FAULTS_ROUNDS sets their number; a failure prints the round's
 * parameters, SSTM_TEST_SEED reproduces them. */
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
#include "libc_model.h"
#include "runner.h"

#define MAXT 6
#define SREC 32
#define TMAIN MAXT /* the main thread's index in the injector's ticket ids */

/* ---- the injector ----------------------------------------------------------- */

/* One slot write (or line) that a record of a ticket holds. */
typedef struct wrote {
  uint64_t ticket; /* (thread + 1) << 32 | the thread's call number */
  uint64_t ord;    /* the transaction's place, or the call's number (lines) */
  unsigned slot;   /* the slot; lines: the thread */
  unsigned k;      /* the write's index in its transaction */
} wrote_t;

/* The plain fields are written by the main thread before the round's
 * threads start (pthread_create orders them) and only read meanwhile. */
static struct {
  int fail_at;      /* the record pwrite (counted over all threads) that fails; 0: none */
  int fail_errno;   /* ENOSPC or EIO */
  int short_first;  /* the failing call returns a short count, and its retry fails */
  size_t chunk;     /* largest count one pwrite writes */
  int eintr_every;  /* every k-th pwrite and pread returns EINTR */
  int rfail_every;  /* every k-th pread inside a transaction fails with EIO */
  size_t rchunk;    /* largest count one pread returns */
  int lfail_every;  /* every k-th lseek inside a transaction fails */
  int lines;        /* records are lines (the lines case), not slots */
  atomic_int calls; /* record pwrites so far */
  atomic_int preads, tx_preads, lseeks, tx_lseeks;
  atomic_int armed;  /* the failure has begun */
  atomic_int nfail;  /* the failure happened */
  atomic_int nrfail; /* preads failed */
  atomic_int nlfail; /* lseeks failed */
  atomic_int eintrs, shorts;
  atomic_ullong lost; /* the failing ticket's id */
  atomic_int fail_t;  /* the thread that wrote it */
  wrote_t *log;       /* the records' writes, in the order their records began */
  atomic_uint nlog;
  unsigned cap;
} fi;

static __thread struct {
  int fd;
  long long off, n, ret; /* the last pwrite: a call that continues it writes the same record */
  uint64_t ticket;       /* this thread's current call's ticket id */
  int fail_next;         /* the retry of a short count fails */
  int undo;              /* this call's ticket failed: its next pwrites are the undo's */
  int hit;               /* this thread's ticket failed (not yet checked) */
  int rfail_next;        /* the next pread fails (after a short count) */
  unsigned calls;
} tl;

static unsigned my_index(void) {
  int t = sstm_test_thread_index();
  return t < 0 ? TMAIN : (unsigned)t;
}

/* The first SREC bytes at p (not NUL-terminated) as a string, in b. */
static const char *head(char (*b)[SREC + 1], const char *p, size_t n) {
  size_t k = n < SREC ? n : SREC;
  memcpy(*b, p, k);
  (*b)[k] = 0;
  return *b;
}

/* The calling thread begins a call that may write one ticket (a
 * transaction on the stream, or a call outside transactions). */
static void tl_begin(void) {
  tl.ticket = ((uint64_t)my_index() + 1) << 32 | ++tl.calls;
  tl.undo = 0, tl.fail_next = 0, tl.fd = -1, tl.ret = 0, tl.n = 0;
}

static void log_write(uint64_t ord, unsigned slot, unsigned k) {
  unsigned i = atomic_fetch_add_explicit(&fi.nlog, 1, memory_order_relaxed);
  CHECK_LT_U(i, fi.cap);
  fi.log[i] = (wrote_t){.ticket = tl.ticket, .ord = ord, .slot = slot, .k = k};
}

/* A record begins: log the writes it holds. Slots: whole slots at slot
 * boundaries ("S%05u %010llu %u %02u"). Lines: "L%02u %08u ...\n" lines
 * (thread, the thread's line number). */
static void log_record(const char *b, size_t n, long long off) {
  if (fi.lines) {
    for (size_t i = 0; i < n;) {
      unsigned t, seq;
      char h[SREC + 1];
      CHECK_MSG(sscanf(head(&h, b + i, n - i), "L%02u %08u", &t, &seq) == 2,
                "a record holds no whole line at %zu", i);
      log_write(seq, t, 0);
      const char *e = memchr(b + i, '\n', n - i);
      CHECK_NOT_NULL(e);
      i = (size_t)(e - b) + 1;
    }
    return;
  }
  CHECK_MSG(off % SREC == 0 && n % SREC == 0, "a record [%lld, +%zu) is not whole slots", off, n);
  for (size_t i = 0; i < n; i += SREC) {
    unsigned slot, k, t;
    unsigned long long ord;
    char h[SREC + 1];
    CHECK_MSG(sscanf(head(&h, b + i, SREC), "S%05u %010llu %u %02u", &slot, &ord, &k, &t) == 4,
              "a record holds no slot at %lld", off + (long long)i);
    CHECK_EQ_U(slot, (unsigned long long)(off + (long long)i) / SREC);
    log_write(ord, slot, k);
  }
}

static void fail_now(void) {
  atomic_store_explicit(&fi.lost, tl.ticket, memory_order_relaxed);
  atomic_store_explicit(&fi.fail_t, (int)my_index(), memory_order_relaxed);
  /* release: the fields above, for whoever counts this failure (acquire) */
  atomic_store_explicit(&fi.nfail, 1, memory_order_release);
  tl.hit = 1, tl.undo = 1;
  errno = fi.fail_errno;
}

static ssize_t fi_pwrite(int fd, const void *b, size_t n, off_t off) {
  if (tl.undo) return pwrite(fd, b, n, off); /* the failed ticket's undo: never fails */
  long long done = tl.ret > 0 ? tl.ret : 0;
  bool cont = tl.fd == fd && tl.ret != tl.n && (long long)off == tl.off + done &&
              (long long)n == tl.n - done;
  if (!cont) log_record(b, n, (long long)off);
  tl.fd = fd, tl.off = (long long)off, tl.n = (long long)n;
  int call = atomic_fetch_add_explicit(&fi.calls, 1, memory_order_relaxed) + 1;
  ssize_t r;
  if (fi.eintr_every && call % fi.eintr_every == 0) {
    atomic_fetch_add_explicit(&fi.eintrs, 1, memory_order_relaxed);
    errno = EINTR;
    r = -1;
  } else if (tl.fail_next) {
    tl.fail_next = 0;
    fail_now();
    r = -1;
  } else if (fi.fail_at != 0 && call >= fi.fail_at &&
             atomic_exchange_explicit(&fi.armed, 1, memory_order_relaxed) == 0) {
    /* some bytes reach the file first */
    size_t k = n > 1 ? 1 + (size_t)((unsigned)call * 2654435761u % (n - 1)) : 0;
    for (size_t w = 0; w < k;) {
      ssize_t x = pwrite(fd, (const char *)b + w, k - w, off + (off_t)w);
      CHECK_GT_I(x, 0);
      w += (size_t)x;
    }
    if (fi.short_first && k > 0) {
      tl.fail_next = 1;
      r = (ssize_t)k;
    } else {
      fail_now();
      r = -1;
    }
  } else {
    if (fi.chunk && n > fi.chunk) {
      n = fi.chunk;
      atomic_fetch_add_explicit(&fi.shorts, 1, memory_order_relaxed);
    }
    r = pwrite(fd, b, n, off);
  }
  tl.ret = r;
  return r;
}

/* preads inside a transaction (sstm_txid() != 0) are the refills (S5) and
 * SEEK_END's; the others are a ticket's undo reads, which this test does
 * not fail (a failing undo read fails the ticket before it writes: the
 * one-thread test a_ticket_whose_undo_bytes_cannot_be_read_writes_nothing covers it). */
static ssize_t fi_pread(int fd, void *b, size_t n, off_t off) {
  int call = atomic_fetch_add_explicit(&fi.preads, 1, memory_order_relaxed) + 1;
  if (fi.eintr_every && call % fi.eintr_every == 0) {
    atomic_fetch_add_explicit(&fi.eintrs, 1, memory_order_relaxed);
    errno = EINTR;
    return -1;
  }
  if (fi.rchunk && n > fi.rchunk) n = fi.rchunk;
  if (fi.rfail_every && sstm_txid() != 0) {
    if (tl.rfail_next) {
      tl.rfail_next = 0;
      atomic_fetch_add_explicit(&fi.nrfail, 1, memory_order_relaxed);
      errno = EIO;
      return -1;
    }
    int c = atomic_fetch_add_explicit(&fi.tx_preads, 1, memory_order_relaxed) + 1;
    if (c % fi.rfail_every == 0) {
      if (c & 1) { /* at once */
        atomic_fetch_add_explicit(&fi.nrfail, 1, memory_order_relaxed);
        errno = EIO;
        return -1;
      }
      /* a short count whose bytes land in the buffer, then EIO */
      if (n > 7) n = 7;
      tl.rfail_next = 1;
    }
  }
  return pread(fd, b, n, off);
}

/* The seek's own lseek (inside its transaction) fails: nothing moves. */
static off_t fi_lseek(int fd, off_t off, int whence) {
  atomic_fetch_add_explicit(&fi.lseeks, 1, memory_order_relaxed);
  if (fi.lfail_every && sstm_txid() != 0) {
    int c = atomic_fetch_add_explicit(&fi.tx_lseeks, 1, memory_order_relaxed) + 1;
    if (c % fi.lfail_every == 0) {
      atomic_fetch_add_explicit(&fi.nlfail, 1, memory_order_relaxed);
      errno = EINVAL;
      return -1;
    }
  }
  return lseek(fd, off, whence);
}

static sstm__stdio_sys_t fi_sys;

static void fi_reset(void) {
  fi.fail_at = 0, fi.fail_errno = 0, fi.short_first = 0, fi.chunk = 0, fi.eintr_every = 0;
  fi.rfail_every = 0, fi.rchunk = 0, fi.lfail_every = 0, fi.lines = 0;
  atomic_store_explicit(&fi.calls, 0, memory_order_relaxed);
  atomic_store_explicit(&fi.preads, 0, memory_order_relaxed);
  atomic_store_explicit(&fi.tx_preads, 0, memory_order_relaxed);
  atomic_store_explicit(&fi.lseeks, 0, memory_order_relaxed);
  atomic_store_explicit(&fi.tx_lseeks, 0, memory_order_relaxed);
  atomic_store_explicit(&fi.armed, 0, memory_order_relaxed);
  atomic_store_explicit(&fi.nfail, 0, memory_order_relaxed);
  atomic_store_explicit(&fi.nrfail, 0, memory_order_relaxed);
  atomic_store_explicit(&fi.nlfail, 0, memory_order_relaxed);
  atomic_store_explicit(&fi.eintrs, 0, memory_order_relaxed);
  atomic_store_explicit(&fi.shorts, 0, memory_order_relaxed);
  atomic_store_explicit(&fi.lost, 0, memory_order_relaxed);
  atomic_store_explicit(&fi.fail_t, -1, memory_order_relaxed);
  atomic_store_explicit(&fi.nlog, 0, memory_order_relaxed);
}

/* ---- the round's parameters ------------------------------------------------------ */

enum { C_WRITE, C_READ, C_NTX, C_SEEK, C_LINES };

typedef struct params {
  int kind; /* C_* */
  unsigned threads;
  unsigned ops;    /* operations per thread (at least, and until the failure) */
  int vmode;       /* sstm_setvbuf's mode */
  size_t bsz;      /* its size */
  unsigned nslots; /* slots */
  int wfail;       /* a record pwrite fails */
} params_t;

static void describe(const params_t *p) {
  fprintf(stderr,
          "round: case %d, %u threads, ops %u, %s %zu, %u slots; fail_at %d (%s, %s), chunk %zu, "
          "eintr every %d, pread fails every %d (chunk %zu), lseek fails every %d\n",
          p->kind, p->threads, p->ops,
          p->vmode == _IOFBF   ? "full"
          : p->vmode == _IOLBF ? "line"
                               : "none",
          p->bsz, p->nslots, fi.fail_at, fi.fail_errno == ENOSPC ? "ENOSPC" : "EIO",
          fi.short_first ? "short first" : "bytes then -1", fi.chunk, fi.eintr_every,
          fi.rfail_every, fi.rchunk, fi.lfail_every);
}

/* ---- the slots ---------------------------------------------------------------- */

#define NOORD 9999999999ull /* the initial slots' */
#define MAXOPS 3

static void mkslot(char *b, unsigned slot, uint64_t ord, unsigned k, unsigned thread) {
  char tmp[80];
  snprintf(tmp, sizeof tmp, "S%05u %010llu %u %02u ........\n", slot % 100000u,
           (unsigned long long)(ord % 10000000000ull), k % 10u, thread % 100u);
  memcpy(b, tmp, SREC);
}

typedef struct sop {
  char kind;     /* 'W' a write, 'R' a read */
  unsigned slot; /* the span's first slot */
  unsigned span; /* 1 or 2 slots */
  unsigned k;    /* 'W': the write's index in its transaction (its records name it) */
  unsigned got;  /* 'R': bytes read */
  char bytes[2 * SREC];
} sop_t;

typedef struct txlog {
  uint64_t ord;
  unsigned thread, n;
  long kpos;            /* where its last seek put the position */
  sop_t op[3 * MAXOPS]; /* a read, a write and its read back per span */
} txlog_t;
_Static_assert(offsetof(txlog_t, ord) == 0, "by_commit_order reads ord first");

/* A call outside transactions that read a slot (S8): after the thread's
 * first `after` committed transactions. */
typedef struct ntxread {
  unsigned after;
  char bytes[SREC];
} ntxread_t;

static struct {
  params_t p;
  char path[64];
  sstm_file_t *f;
  uint64_t counter; /* transactional: the serial order */
  txlog_t *logs[MAXT];
  unsigned nlogs[MAXT];
  ntxread_t *nr[MAXT];
  unsigned nnr[MAXT];
  atomic_int reports; /* sstm_fflush / sstm_fclose that returned EOF */
  atomic_int rerrs;   /* committed transactions that saw a read error */
  atomic_int cancels;
} g;

typedef struct body {
  sstm_tt_t *t;
  uint64_t seed;
  int reader;
  int attempts;
  int rerr; /* a read failed in this attempt */
  txlog_t log;
} body_t;

/* An sstm_fflush or sstm_fclose's result: EOF only with the injected
 * errno, once the failure happened. */
static void note_result(int rc, int err, const char *what) {
  if (rc == 0) return;
  CHECK_MSG(rc == EOF, "%s returned %d", what, rc);
  CHECK_MSG(atomic_load_explicit(&fi.nfail, memory_order_acquire) == 1,
            "%s failed (errno %d) with no write failure injected", what, err);
  CHECK_MSG(err == fi.fail_errno, "%s: errno %d, injected %d", what, err, fi.fail_errno);
  atomic_fetch_add_explicit(&g.reports, 1, memory_order_relaxed);
}

/* After a call of this thread returned: if its ticket failed, the stream's
 * error indicator is set. */
static void check_hit(void) {
  if (!tl.hit) return;
  tl.hit = 0;
  CHECK_MSG(sstm_ferror(g.f), "sstm_ferror is 0 after this thread's write failed");
}

/* Read span slots at the position into o->bytes with the call `how`; a
 * read that fails must keep its call's contract. Returns false when it
 * failed. */
static bool read_span(body_t *b, sop_t *o, unsigned how) {
  sstm_file_t *f = g.f;
  size_t want = (size_t)o->span * SREC;
  long at = (long)o->slot * SREC;
  size_t got = 0;
  int err = 0;
  if (how == 0) {
    errno = 0;
    got = sstm_fread(o->bytes, 1, want, f);
    if (got != want) err = errno;
  } else if (how == 1) {
    for (unsigned j = 0; j < o->span && !err; j++) {
      char line[2 * SREC];
      errno = 0;
      if (sstm_fgets(line, sizeof line, f) == NULL) {
        err = errno;
        /* the bytes before the error: counted by the position */
        long pos = sstm_ftell(f);
        CHECK_GE_I(pos, at + (long)got);
        CHECK_LT_I(pos, at + (long)got + SREC);
        size_t part = (size_t)(pos - at) - got;
        got += part; /* their contents are indeterminate (ISO C) */
        memset(o->bytes + got - part, '?', part);
        break;
      }
      CHECK_EQ_U(strlen(line), SREC);
      memcpy(o->bytes + got, line, SREC);
      got += SREC;
    }
  } else {
    for (; got < want; got++) {
      errno = 0;
      int c = sstm_fgetc(f);
      if (c == EOF) {
        err = errno;
        break;
      }
      o->bytes[got] = (char)c;
    }
  }
  o->got = (unsigned)got;
  /* Opacity: even an attempt that will abort reads whole slots, each the
   * slot it asked for (never part of a ticket being written, S5) */
  for (size_t q = 0; q + SREC <= got; q += SREC) {
    unsigned s;
    char h[SREC + 1];
    CHECK_MSG(sscanf(head(&h, o->bytes + q, SREC), "S%05u ", &s) == 1 && s == o->slot + q / SREC &&
                  o->bytes[q + SREC - 1] == '\n',
              "attempt of transaction %llu read \"%.31s\" for slot %u",
              (unsigned long long)b->log.ord, o->bytes + q, o->slot + (unsigned)(q / SREC));
  }
  if (got == want) return true;
  /* only an injected read error cuts a read short here (no EOF inside the
   * file) */
  CHECK_MSG(fi.rfail_every != 0 && err == EIO,
            "a read of %zu bytes at %ld returned %zu (call %u, errno %d)", want, at, got, how, err);
  CHECK_FALSE(sstm_feof(f));
  CHECK_TRUE(sstm_ferror(f));
  CHECK_EQ_I(sstm_ftell(f), at + (long)got);
  b->rerr = 1;
  return false;
}

/* A seek whose lseek the injector fails fails (EINVAL) and changes
 * nothing; it is tried again until its lseek goes through (at most every
 * second lseek fails). */
static void seek_retry(sstm_file_t *f, long off, int whence) {
  long before = sstm_ftell(f);
  for (;;) {
    errno = 0;
    if (sstm_fseek(f, off, whence) == 0) return;
    CHECK_MSG(fi.lfail_every != 0 && errno == EINVAL, "sstm_fseek(%ld, %d) failed, errno %d", off,
              whence, errno);
    CHECK_EQ_I(sstm_ftell(f), before);
  }
}

static void seek_slot(body_t *b, sstm_rng_t *r, unsigned slot) {
  sstm_file_t *f = g.f;
  long to = (long)slot * SREC;
  unsigned how = (unsigned)sstm_rng_below(r, 3);
  if (how == 0) {
    seek_retry(f, to, SEEK_SET);
  } else if (how == 1) {
    long cur = sstm_ftell(f);
    CHECK_GE_I(cur, 0);
    seek_retry(f, to - cur, SEEK_CUR);
  } else {
    seek_retry(f, to - (long)g.p.nslots * SREC, SEEK_END);
  }
  CHECK_EQ_I(sstm_ftell(f), to);
  b->log.kpos = to;
}

static void slot_body(void *arg) {
  body_t *b = arg;
  sstm_file_t *f = g.f;
  b->attempts++;
  b->rerr = 0;
  memset(&b->log, 0, sizeof b->log);
  b->log.kpos = -1;
  sstm_rng_t r;
  sstm_rng_seed(&r, b->seed);
  uint64_t ord = sstm_load_u64(&g.counter);
  sstm_store_u64(&g.counter, ord + 1);
  b->log.ord = ord;
  b->log.thread = b->t->idx;
  unsigned nops = 1 + (unsigned)sstm_rng_below(&r, MAXOPS);
  for (unsigned k = 0; k < nops; k++) {
    unsigned span = sstm_rng_below(&r, 4) == 0 ? 2 : 1;
    unsigned slot = (unsigned)sstm_rng_below(&r, g.p.nslots - span + 1);
    seek_slot(b, &r, slot);
    if (b->reader || sstm_rng_below(&r, 3) == 0) { /* a read (before a write: of its old bytes) */
      sop_t *o = &b->log.op[b->log.n++];
      o->kind = 'R', o->slot = slot, o->span = span;
      if (!read_span(b, o, (unsigned)sstm_rng_below(&r, 3))) continue;
      if (b->reader) continue;
      seek_slot(b, &r, slot);
    }
    if (b->reader) continue;
    sop_t *o = &b->log.op[b->log.n++];
    o->kind = 'W', o->slot = slot, o->span = span, o->k = k;
    char rec[2 * SREC + 1];
    for (unsigned j = 0; j < span; j++)
      mkslot(rec + j * SREC, slot + j, ord, k, b->t->idx);
    rec[span * SREC] = 0;
    memcpy(o->bytes, rec, span * SREC);
    if (sstm_rng_below(&r, 2))
      CHECK_EQ_I(sstm_fputs(rec, f), (int)(span * SREC));
    else
      CHECK_EQ_U(sstm_fwrite(rec, 1, span * SREC, f), span * SREC);
    if (sstm_rng_below(&r, 3) == 0) { /* read it back: the view's records laid over (S5) */
      seek_slot(b, &r, slot);
      sop_t *o2 = &b->log.op[b->log.n++];
      o2->kind = 'R', o2->slot = slot, o2->span = span;
      if (read_span(b, o2, (unsigned)sstm_rng_below(&r, 3)))
        CHECK_MSG(memcmp(o2->bytes, rec, span * SREC) == 0,
                  "transaction %llu read back slot %u as \"%.31s\" after writing \"%.31s\"",
                  (unsigned long long)ord, slot, o2->bytes, rec);
    }
  }
  if (b->rerr) {
    /* the position is inside a slot: leave it at a boundary for the calls
     * outside transactions; half of these transactions cancel */
    seek_slot(b, &r, (unsigned)sstm_rng_below(&r, g.p.nslots));
    if (sstm_rng_below(&r, 2) == 0) sstm_cancel();
  }
}

/* A call outside transactions: read the slot at the position, or ask for
 * the position, or flush. */
static void ntx_call(sstm_tt_t *t, unsigned committed) {
  sstm_file_t *f = g.f;
  unsigned what = (unsigned)sstm_rng_below(&t->rng, 4);
  if (what == 0) {
    long pos = sstm_ftell(f);
    CHECK_GE_I(pos, 0);
    CHECK_MSG(pos % SREC == 0, "sstm_ftell outside transactions: %ld, not a slot boundary", pos);
    return;
  }
  if (what == 1) {
    errno = 0;
    int rc = sstm_fflush(f);
    note_result(rc, errno, "sstm_fflush");
    return;
  }
  char line[2 * SREC];
  size_t got;
  if (what == 2) {
    got = sstm_fgets(line, sizeof line, f) != NULL ? strlen(line) : 0;
  } else {
    got = sstm_fread(line, 1, SREC, f);
  }
  if (got == 0) { /* at the end of the file (a seek may clear the indicator before sstm_feof) */
    seek_retry(f, 0, SEEK_SET);
    return;
  }
  CHECK_MSG(got == SREC, "a read outside transactions returned %zu bytes: \"%.*s\"", got, (int)got,
            line);
  unsigned i = t->idx;
  ntxread_t *n = &g.nr[i][g.nnr[i]++];
  n->after = committed;
  memcpy(n->bytes, line, SREC);
}

static void slot_thread(sstm_tt_t *t) {
  unsigned cap = g.p.ops * 8 + 2000;
  txlog_t *logs = calloc(cap, sizeof *logs);
  ntxread_t *nr = calloc(cap, sizeof *nr);
  body_t *b = calloc(1, sizeof *b);
  CHECK_NOT_NULL(logs);
  CHECK_NOT_NULL(nr);
  CHECK_NOT_NULL(b);
  g.nr[t->idx] = nr;
  unsigned n = 0;
  memset(&tl, 0, sizeof tl);
  for (unsigned i = 0;; i++) {
    /* until this thread's share is done and the failure happened (an
     * event: the writes reach the failing call number) */
    if (i >= g.p.ops && (!g.p.wfail || atomic_load_explicit(&fi.nfail, memory_order_acquire) == 1))
      break;
    CHECK_MSG(i < cap, "no failure after %u operations (fail_at %d, %d calls)", i, fi.fail_at,
              atomic_load_explicit(&fi.calls, memory_order_relaxed));
    tl_begin();
    if (g.p.kind == C_NTX && sstm_rng_below(&t->rng, 3) == 0) {
      ntx_call(t, n);
      check_hit();
      continue;
    }
    if (g.p.kind != C_NTX && sstm_rng_below(&t->rng, 24) == 0) {
      errno = 0;
      int rc = sstm_fflush(g.f);
      note_result(rc, errno, "sstm_fflush");
      check_hit();
      continue;
    }
    b->t = t;
    b->seed = sstm_rng_next(&t->rng);
    b->reader = g.p.kind == C_READ ? sstm_rng_below(&t->rng, 4) != 0 : sstm_rng_below(&t->rng, 2);
    b->attempts = 0;
    int rc = sstm_run(NULL, slot_body, b);
    check_hit();
    if (rc == SSTM_ECANCELED) {
      atomic_fetch_add_explicit(&g.cancels, 1, memory_order_relaxed);
      continue;
    }
    CHECK_OK(rc);
    if (b->rerr) atomic_fetch_add_explicit(&g.rerrs, 1, memory_order_relaxed);
    CHECK_LT_U(n, cap);
    logs[n++] = b->log;
  }
  g.logs[t->idx] = logs;
  g.nlogs[t->idx] = n;
  free(b);
}

/* A slot's contents over the serial order: its versions in M (every
 * committed write) and M' (the lost writes left out), each with the place
 * from which it holds. */
typedef struct ver {
  uint64_t from;
  const char *bytes;
} ver_t;

typedef struct hist {
  ver_t *v;
  unsigned n, cap;
} hist_t;

static void hist_add(hist_t *h, uint64_t from, const char *bytes) {
  if (h->n == h->cap) {
    h->cap = h->cap ? 2 * h->cap : 8;
    h->v = realloc(h->v, h->cap * sizeof *h->v);
    CHECK_NOT_NULL(h->v);
  }
  h->v[h->n++] = (ver_t){from, bytes};
}

/* Does slot s hold `bytes` in M or M' at some place in [lo, hi]? */
static bool held(const hist_t *hm, const hist_t *hp, uint64_t lo, uint64_t hi, const char *bytes) {
  const hist_t *hs[2] = {hm, hp};
  for (int m = 0; m < 2; m++) {
    const hist_t *h = hs[m];
    for (unsigned i = 0; i < h->n; i++) {
      uint64_t end = i + 1 < h->n ? h->v[i + 1].from : UINT64_MAX; /* holds in [from, end) */
      if (h->v[i].from <= hi && end > lo && memcmp(h->v[i].bytes, bytes, SREC) == 0) return true;
    }
  }
  return false;
}

/* The len bytes read equal want's, but where they are '?' (indeterminate). */
static bool same(const char *read, const char *want, size_t len) {
  for (size_t c = 0; c < len; c++)
    if (read[c] != '?' && read[c] != want[c]) return false;
  return true;
}

static int cmp_wrote(const void *a, const void *b) {
  const wrote_t *x = a, *y = b;
  if (x->ord != y->ord) return x->ord < y->ord ? -1 : 1;
  if (x->k != y->k) return x->k < y->k ? -1 : 1;
  return x->slot < y->slot ? -1 : x->slot > y->slot;
}

static void check_slots(void) {
  const params_t *p = &g.p;
  uint64_t total = g.counter;
  const void *logs[MAXT];
  for (unsigned t = 0; t < p->threads; t++)
    logs[t] = g.logs[t];
  txlog_t **by = (txlog_t **)by_commit_order(logs, g.nlogs, p->threads, sizeof(txlog_t), total);
  /* the records' writes, sorted by (ord, k, slot): each committed write
   * once, lost when its ticket failed; none of another transaction */
  unsigned nw = atomic_load_explicit(&fi.nlog, memory_order_relaxed);
  qsort(fi.log, nw, sizeof *fi.log, cmp_wrote);
  uint64_t lost_ticket = atomic_load_explicit(&fi.lost, memory_order_relaxed);
  for (unsigned i = 0; i < nw; i++) {
    const wrote_t *w = &fi.log[i];
    CHECK_MSG(w->ord < total, "a record holds slot %u of transaction %llu, which did not commit",
              w->slot, (unsigned long long)w->ord);
    CHECK_MSG(i == 0 || cmp_wrote(w, &fi.log[i - 1]) != 0,
              "slot %u of transaction %llu (write %u) is in two records", w->slot,
              (unsigned long long)w->ord, w->k);
  }
  size_t size = (size_t)p->nslots * SREC;
  char *init = malloc(size);
  CHECK_NOT_NULL(init);
  for (unsigned s = 0; s < p->nslots; s++)
    mkslot(init + (size_t)s * SREC, s, NOORD, 9, 99);
  hist_t *hm = calloc(p->nslots, sizeof *hm), *hp = calloc(p->nslots, sizeof *hp);
  CHECK_NOT_NULL(hm);
  CHECK_NOT_NULL(hp);
  for (unsigned s = 0; s < p->nslots; s++) {
    hist_add(&hm[s], 0, init + (size_t)s * SREC);
    hist_add(&hp[s], 0, init + (size_t)s * SREC);
  }
  /* replay: transaction i reads the state at place i (after 0..i-1), its
   * own earlier writes laid over it; its writes hold from place i + 1 */
  unsigned nlost = 0, ntried = 0, nsaw_m = 0, nsaw_mp = 0;
  static char own[2 * SREC];
  for (uint64_t i = 0; i < total; i++) {
    txlog_t *l = by[i];
    for (unsigned j = 0; j < l->n; j++) {
      sop_t *o = &l->op[j];
      if (o->kind == 'W') {
        for (unsigned q = 0; q < o->span; q++) {
          unsigned s = o->slot + q;
          const char *bytes = o->bytes + q * SREC;
          wrote_t key = {.ord = l->ord, .slot = s, .k = o->k};
          const wrote_t *w = bsearch(&key, fi.log, nw, sizeof *fi.log, cmp_wrote);
          bool lost = w == NULL || w->ticket == lost_ticket;
          if (w != NULL) ntried++;
          CHECK_MSG(!lost || lost_ticket != 0,
                    "slot %u of transaction %llu is in no record, and no write failed", s,
                    (unsigned long long)l->ord);
          if (lost) nlost++;
          hist_add(&hm[s], i + 1, bytes);
          if (!lost) hist_add(&hp[s], i + 1, bytes);
        }
      } else {
        for (unsigned q = 0; q * SREC < o->got; q++) {
          unsigned s = o->slot + q;
          size_t len = o->got - q * SREC < SREC ? o->got - q * SREC : SREC;
          /* its own earlier writes to s in this transaction come first */
          const char *mine = NULL;
          for (unsigned z = 0; z < j; z++)
            if (l->op[z].kind == 'W' && l->op[z].slot <= s && s < l->op[z].slot + l->op[z].span)
              mine = l->op[z].bytes + (s - l->op[z].slot) * SREC;
          /* the bytes read (a failed fgets' part is indeterminate: '?') */
          memcpy(own, o->bytes + q * SREC, len);
          bool ok = mine != NULL && same(own, mine, len);
          /* else M or M' at place i */
          if (mine == NULL) {
            bool m = same(own, hm[s].v[hm[s].n - 1].bytes, len);
            bool mp = same(own, hp[s].v[hp[s].n - 1].bytes, len);
            ok = m || mp;
            if (m != mp) m ? nsaw_m++ : nsaw_mp++; /* where the lost write differs */
          }
          if (!ok) {
            const char *nm = hm[s].v[hm[s].n - 1].bytes, *np = hp[s].v[hp[s].n - 1].bytes;
            FAIL("transaction %llu (thread %u) read slot %u as \"%.*s\"; the serial order had "
                 "\"%.31s\" (M) or \"%.31s\" (M')",
                 (unsigned long long)i, l->thread, s, (int)len - 1, o->bytes + q * SREC, nm, np);
          }
        }
      }
    }
  }
  /* every write of a record belongs to a committed transaction's write
   * (checked above by ord < total; the slot and op match) */
  CHECK_EQ_U(ntried, nw);
  if (lost_ticket != 0) CHECK_GT_U(nlost, 0);
  /* the calls outside transactions: a slot as M or M' had it at a place
   * between the thread's transactions before and after the call */
  for (unsigned t = 0; t < p->threads; t++)
    for (unsigned k = 0; k < g.nnr[t]; k++) {
      const ntxread_t *n = &g.nr[t][k];
      unsigned s;
      char h[SREC + 1];
      CHECK_MSG(sscanf(head(&h, n->bytes, SREC), "S%05u", &s) == 1 && s < p->nslots,
                "a read outside transactions returned \"%.31s\", no slot", n->bytes);
      uint64_t lo = n->after == 0 ? 0 : g.logs[t][n->after - 1].ord + 1;
      uint64_t hi = n->after < g.nlogs[t] ? g.logs[t][n->after].ord : total;
      CHECK_MSG(held(&hm[s], &hp[s], lo, hi, n->bytes),
                "thread %u read \"%.31s\" outside transactions, which slot %u did not hold "
                "between places %llu and %llu",
                t, n->bytes, s, (unsigned long long)lo, (unsigned long long)hi);
    }
  /* the file: M' at the end */
  char *fb;
  size_t n = read_file(g.path, &fb);
  CHECK_EQ_U(n, size);
  for (unsigned s = 0; s < p->nslots; s++) {
    const char *want = hp[s].v[hp[s].n - 1].bytes, *a = fb + (size_t)s * SREC;
    CHECK_MSG(memcmp(a, want, SREC) == 0,
              "slot %u holds \"%.31s\", the serial order less the lost writes \"%.31s\" (with "
              "them \"%.31s\")",
              s, a, want, hm[s].v[hm[s].n - 1].bytes);
  }
  fprintf(stderr,
          "  %llu transactions, %u cancelled, %u writes in records, %u lost; reads of a lost "
          "write's slot: %u saw it (M), %u the file (M')\n",
          (unsigned long long)total, atomic_load_explicit(&g.cancels, memory_order_relaxed), nw,
          nlost, nsaw_m, nsaw_mp);
  free(fb);
  for (unsigned s = 0; s < p->nslots; s++)
    free(hm[s].v), free(hp[s].v);
  free(hm), free(hp), free(init), free(by);
}

static void slots_round(const params_t *p) {
  memset(&g, 0, sizeof g);
  g.p = *p;
  sstm_test_tmp_file(g.path, sizeof g.path, "faultsrw");
  size_t size = (size_t)p->nslots * SREC;
  char *init = malloc(size);
  CHECK_NOT_NULL(init);
  for (unsigned s = 0; s < p->nslots; s++)
    mkslot(init + (size_t)s * SREC, s, NOORD, 9, 99);
  int fd = open(g.path, O_WRONLY);
  CHECK_GE_I(fd, 0);
  CHECK_EQ_I(pwrite(fd, init, size, 0), (long long)size);
  close(fd);
  free(init);
  g.f = sstm_fopen(g.path, "r+");
  CHECK_NOT_NULL(g.f);
  CHECK_OK(sstm_setvbuf(g.f, NULL, p->vmode, p->bsz));
  describe(p);
  sstm_test_run_threads(p->threads, true, slot_thread, NULL);

  int nfail = atomic_load_explicit(&fi.nfail, memory_order_acquire);
  CHECK_EQ_I(nfail, p->wfail);
  if (fi.rfail_every) CHECK_GT_I(atomic_load_explicit(&fi.nrfail, memory_order_relaxed), 0);
  if (fi.lfail_every) CHECK_GT_I(atomic_load_explicit(&fi.nlfail, memory_order_relaxed), 0);
  /* (S7) the kernel's offset: the last committed transaction's last seek
   * (every transaction seeks; a seek whose lseek failed changed nothing) */
  uint64_t total = g.counter;
  long want_k = -1;
  for (unsigned t = 0; t < p->threads; t++)
    for (unsigned i = 0; i < g.nlogs[t]; i++)
      if (g.logs[t][i].ord == total - 1) want_k = g.logs[t][i].kpos;
  if (p->kind != C_NTX) { /* calls outside transactions seek after an EOF */
    long k = (long)lseek(sstm_fileno(g.f), 0, SEEK_CUR);
    CHECK_MSG(k == want_k, "the kernel's offset is %ld, the last committed seek went to %ld", k,
              want_k);
  }
  /* the error indicator: a failed write, or a committed read error */
  int rerrs = atomic_load_explicit(&g.rerrs, memory_order_relaxed);
  CHECK_EQ_I(sstm_ferror(g.f) != 0, nfail != 0 || rerrs != 0);
  tl_begin();
  errno = 0;
  int rc = sstm_fclose(g.f);
  note_result(rc, errno, "sstm_fclose");
  tl.hit = 0;
  CHECK_EQ_I(atomic_load_explicit(&g.reports, memory_order_relaxed), nfail);
  check_slots();
  unlink(g.path);
  for (unsigned t = 0; t < p->threads; t++)
    free(g.logs[t]), free(g.nr[t]);
}

/* ---- the lines case -------------------------------------------------------------- */

static struct {
  sstm_file_t *f;
  char path[64];
  uint64_t counter;    /* transactional: the transactions' serial order */
  uint64_t *ord[MAXT]; /* each thread's lines: the transaction's place, or UINT64_MAX */
  unsigned nseq[MAXT];
  atomic_int reports;
  atomic_int ntx_failed; /* the failing ticket was a call outside transactions' */
} L;

static size_t mkline(char *b, unsigned t, unsigned seq) {
  size_t len = 24 + (size_t)(((uint64_t)t * 7919u + seq * 104729u) % 57);
  int n = snprintf(b, len + 1, "L%02u %08u ", t, seq);
  for (size_t i = (size_t)n; i + 1 < len; i++)
    b[i] = (char)('a' + (t + seq + i) % 26);
  b[len - 1] = '\n';
  b[len] = 0;
  return len;
}

/* Is the line in the file now? (Read to its end: a failing ticket's cut
 * back may shrink it meanwhile.) */
static bool in_file(const char *line, size_t len) {
  int fd = open(L.path, O_RDONLY);
  CHECK_GE_I(fd, 0);
  size_t cap = 1 << 16, n = 0;
  char *b = malloc(cap);
  CHECK_NOT_NULL(b);
  for (;;) {
    if (n == cap) {
      b = realloc(b, cap *= 2);
      CHECK_NOT_NULL(b);
    }
    ssize_t r = pread(fd, b + n, cap - n, (off_t)n);
    CHECK_GE_I(r, 0);
    if (r == 0) break;
    n += (size_t)r;
  }
  close(fd);
  bool in = memmem(b, n, line, len) != NULL;
  free(b);
  return in;
}

typedef struct lbody {
  unsigned t, seq0, nl;
  uint64_t c;
} lbody_t;

static void line_body(void *arg) {
  lbody_t *b = arg;
  uint64_t c = sstm_load_u64(&L.counter);
  sstm_store_u64(&L.counter, c + 1);
  char line[96];
  for (unsigned k = 0; k < b->nl; k++) {
    size_t len = mkline(line, b->t, b->seq0 + k);
    CHECK_EQ_I(sstm_fputs(line, L.f), (int)len);
  }
  b->c = c;
}

static void lnote(int rc, int err, const char *what) {
  if (rc == 0) return;
  CHECK_MSG(rc == EOF, "%s returned %d", what, rc);
  CHECK_MSG(atomic_load_explicit(&fi.nfail, memory_order_acquire) == 1,
            "%s failed (errno %d) with no write failure injected", what, err);
  CHECK_MSG(err == fi.fail_errno, "%s: errno %d, injected %d", what, err, fi.fail_errno);
  atomic_fetch_add_explicit(&L.reports, 1, memory_order_relaxed);
}

static void line_thread(sstm_tt_t *t) {
  unsigned cap = g.p.ops * 4 + 4000;
  uint64_t *ord = calloc(cap + 2, sizeof *ord);
  CHECK_NOT_NULL(ord);
  unsigned seq = 0;
  memset(&tl, 0, sizeof tl);
  char line[96];
  for (unsigned i = 0;; i++) {
    if (i >= g.p.ops && atomic_load_explicit(&fi.nfail, memory_order_acquire) == 1) break;
    CHECK_MSG(seq < cap, "no failure after %u lines (fail_at %d, %d calls)", seq, fi.fail_at,
              atomic_load_explicit(&fi.calls, memory_order_relaxed));
    tl_begin();
    unsigned what = (unsigned)sstm_rng_below(&t->rng, 16);
    if (what == 0) {
      errno = 0;
      int rc = sstm_fflush(L.f);
      lnote(rc, errno, "sstm_fflush");
      check_hit();
    } else if (what < 8) { /* a call outside transactions: a transaction of its own (S8) */
      size_t len = mkline(line, t->idx, seq);
      errno = 0;
      int rc = sstm_fputs(line, L.f);
      int err = errno;
      if (tl.hit) {
        /* its own write failed: it reports it, once (docs/design/tm-libc.md,
         * "Buffering") */
        CHECK_MSG(rc == EOF, "sstm_fputs returned %d after its own write failed", rc);
        lnote(rc, err, "sstm_fputs outside a transaction");
        atomic_store_explicit(&L.ntx_failed, 1, memory_order_relaxed);
      } else {
        CHECK_EQ_I(rc, (int)len); /* its line is in the kernel when it returns ("Buffering") */
        CHECK_MSG(in_file(line, len),
                  "line %u of thread %u is not in the file when its call returned", seq, t->idx);
      }
      check_hit();
      ord[seq++] = UINT64_MAX;
    } else {
      lbody_t b = {.t = t->idx, .seq0 = seq, .nl = 1 + (unsigned)sstm_rng_below(&t->rng, 2)};
      CHECK_OK(sstm_run(NULL, line_body, &b));
      check_hit();
      for (unsigned k = 0; k < b.nl; k++)
        ord[seq++] = b.c;
    }
  }
  L.ord[t->idx] = ord;
  L.nseq[t->idx] = seq;
}

static void lines_round(const params_t *p) {
  memset(&L, 0, sizeof L);
  memset(&g, 0, sizeof g);
  g.p = *p;
  fi.lines = 1;
  sstm_test_tmp_file(L.path, sizeof L.path, "faultsrw");
  L.f = sstm_fopen(L.path, "a");
  CHECK_NOT_NULL(L.f);
  CHECK_OK(sstm_setvbuf(L.f, NULL, p->vmode, p->bsz));
  g.f = L.f; /* check_hit's */
  describe(p);
  sstm_test_run_threads(p->threads, true, line_thread, NULL);
  CHECK_EQ_I(atomic_load_explicit(&fi.nfail, memory_order_acquire), 1);
  CHECK_TRUE(sstm_ferror(L.f));
  tl_begin();
  errno = 0;
  int rc = sstm_fclose(L.f);
  lnote(rc, errno, "sstm_fclose");
  CHECK_EQ_I(tl.hit, 0); /* the line buffered / unbuffered stream holds no byte at the close */
  CHECK_EQ_I(atomic_load_explicit(&L.reports, memory_order_relaxed), 1);
  /* the records' lines: (thread, seq) each once, of lines that were
   * written; lost: the failed ticket's, and the committed lines in no
   * record */
  unsigned nw = atomic_load_explicit(&fi.nlog, memory_order_relaxed);
  uint64_t lost_ticket = atomic_load_explicit(&fi.lost, memory_order_relaxed);
  unsigned char *st[MAXT]; /* 0: in no record, 1: written, 2: lost */
  for (unsigned t = 0; t < p->threads; t++) {
    st[t] = calloc(L.nseq[t] + 1, 1);
    CHECK_NOT_NULL(st[t]);
  }
  for (unsigned i = 0; i < nw; i++) {
    const wrote_t *w = &fi.log[i];
    CHECK_LT_U(w->slot, p->threads);
    CHECK_MSG(w->ord < L.nseq[w->slot], "a record holds line %llu of thread %u, never written",
              (unsigned long long)w->ord, w->slot);
    CHECK_MSG(st[w->slot][w->ord] == 0, "line %llu of thread %u is in two records",
              (unsigned long long)w->ord, w->slot);
    st[w->slot][w->ord] = w->ticket == lost_ticket ? 2 : 1;
  }
  char *fb;
  size_t n = read_file(L.path, &fb);
  unsigned next[MAXT] = {0};
  uint64_t last_c = 0;
  unsigned nlines = 0, nlost = 0;
  char want[96];
  for (size_t at = 0; at < n;) {
    unsigned t, seq;
    char h[SREC + 1];
    CHECK_MSG(sscanf(head(&h, fb + at, n - at), "L%02u %08u", &t, &seq) == 2 && t < p->threads &&
                  seq < L.nseq[t],
              "no line of a thread at %zu: \"%.40s\"", at, fb + at);
    /* the thread's lines in program order, those before it lost */
    CHECK_MSG(seq >= next[t], "line %u of thread %u at %zu comes after its line %u", seq, t, at,
              next[t] - 1);
    for (unsigned q = next[t]; q < seq; q++) {
      CHECK_MSG(st[t][q] != 1, "line %u of thread %u was written, and is not in the file", q, t);
      nlost++;
    }
    CHECK_MSG(st[t][seq] == 1, "line %u of thread %u is in the file, its ticket %s", seq, t,
              st[t][seq] == 2 ? "failed" : "never wrote it");
    size_t len = mkline(want, t, seq);
    CHECK_MSG(at + len <= n && memcmp(fb + at, want, len) == 0,
              "line %u of thread %u at %zu is not whole: \"%.*s\"", seq, t, at, (int)len, fb + at);
    uint64_t c = L.ord[t][seq];
    if (c != UINT64_MAX) { /* the transactions' lines in their serial order */
      CHECK_MSG(c >= last_c, "a line of transaction %llu follows one of %llu",
                (unsigned long long)c, (unsigned long long)last_c);
      last_c = c;
    }
    next[t] = seq + 1;
    at += len;
    nlines++;
  }
  for (unsigned t = 0; t < p->threads; t++) {
    for (unsigned q = next[t]; q < L.nseq[t]; q++) {
      CHECK_MSG(st[t][q] != 1, "line %u of thread %u was written, and is not in the file", q, t);
      nlost++;
    }
    free(st[t]);
    free(L.ord[t]);
  }
  CHECK_GT_U(nlost, 0);
  fprintf(stderr, "  %u lines in the file, %u lost (%s)\n", nlines, nlost,
          atomic_load_explicit(&L.ntx_failed, memory_order_relaxed)
              ? "a call outside transactions' write"
              : "a transaction's commit");
  free(fb);
  unlink(L.path);
}

/* ---- the cases ---------------------------------------------------------------- */

static unsigned rounds(unsigned dflt) {
  long n = sstm_test_env_long("SSTM_FAULTS_ROUNDS", 0);
  if (n > 0) return (unsigned)n;
  if (sstm_test_long_mode()) return dflt * 25;
  return (unsigned)sstm_test_scaled(dflt, 2);
}

/* The runtime with the given design (both alternate between rounds). */
static void init_design(sstm_design_t d) {
  sstm_config_t cfg;
  sstm_test_config(&cfg);
  cfg.design = d;
  CHECK_OK(sstm_init(&cfg));
  CHECK_OK(sstm_thread_init());
}

static void run(int kind, unsigned dflt_rounds) {
  fi_sys = sstm__stdio_sys_default;
  fi_sys.pwrite = fi_pwrite;
  fi_sys.pread = fi_pread;
  fi_sys.lseek = fi_lseek;
  fi.cap = 1u << 20;
  fi.log = malloc(fi.cap * sizeof *fi.log);
  CHECK_NOT_NULL(fi.log);
  sstm__stdio_sys = &fi_sys; /* before any stream operation */
  sstm_rng_t r;
  sstm_rng_seed(&r, sstm_test_seed());
  unsigned max_threads = sstm_test_threads(MAXT);
  if (max_threads > MAXT) max_threads = MAXT;
  if (max_threads < 3) max_threads = 3;
  unsigned nr = rounds(dflt_rounds);
  for (unsigned i = 0; i < nr; i++) {
    /* encounter-time locking, commit-time locking (whose attempts may read
     * past a commit until they validate: opacity) */
    init_design(i % 2 ? SSTM_DESIGN_CTL : SSTM_DESIGN_ETL);
    params_t p = {0};
    p.kind = kind;
    p.threads = 3 + (unsigned)sstm_rng_below(&r, max_threads - 2);
    p.ops = (unsigned)sstm_test_scaled(150, 30);
    p.nslots = 16 + (unsigned)sstm_rng_below(&r, 300);
    static const int vm[] = {_IOFBF, _IOFBF, _IOFBF, _IOLBF, _IONBF};
    static const size_t vs[] = {512, 1024, 4096, 256, 0};
    unsigned v = (unsigned)sstm_rng_below(&r, 5);
    if (kind == C_LINES) v = 3 + (unsigned)sstm_rng_below(&r, 2);
    p.vmode = vm[v], p.bsz = vs[v];
    fi_reset();
    p.wfail = kind != C_READ || sstm_rng_below(&r, 2) == 0;
    if (p.wfail) {
      /* a record per transaction at most on unbuffered and line buffered
       * streams; about one per buffer's worth of slot writes otherwise */
      unsigned per = p.vmode == _IOFBF ? (unsigned)(p.bsz / 64) + 1 : 1;
      unsigned est = p.threads * p.ops / per + 2;
      fi.fail_at = 1 + (int)sstm_rng_below(&r, est);
      fi.fail_errno = sstm_rng_below(&r, 2) ? ENOSPC : EIO;
      fi.short_first = (int)sstm_rng_below(&r, 2);
      if (sstm_rng_below(&r, 2)) fi.chunk = SREC + (size_t)sstm_rng_below(&r, 200);
    }
    if (kind == C_READ) {
      fi.rfail_every = 3 + (int)sstm_rng_below(&r, 20);
      fi.eintr_every = sstm_rng_below(&r, 2) ? 3 + (int)sstm_rng_below(&r, 5) : 0;
      fi.rchunk = sstm_rng_below(&r, 2) ? 1 + (size_t)sstm_rng_below(&r, 100) : 0;
    }
    if (kind == C_NTX) fi.rchunk = sstm_rng_below(&r, 2) ? 1 + (size_t)sstm_rng_below(&r, 100) : 0;
    if (kind == C_SEEK) fi.lfail_every = 2 + (int)sstm_rng_below(&r, 4);
    fprintf(stderr, "design %s\n", i % 2 ? "ctl" : "etl");
    if (kind == C_LINES)
      lines_round(&p);
    else
      slots_round(&p);
    sstm_test_fini();
  }
  sstm__stdio_sys = &sstm__stdio_sys_default;
  free(fi.log);
}

TEST(readers_and_seekers_see_a_serial_order_while_a_write_fails) { run(C_WRITE, 12); }

TEST(failing_preads_leave_no_foreign_bytes_under_concurrent_readers) { run(C_READ, 12); }

TEST(calls_outside_transactions_see_a_serial_order_while_a_write_fails) { run(C_NTX, 12); }

TEST(a_failing_lseek_leaves_the_position_and_the_kernel_offset_right) { run(C_SEEK, 8); }

TEST(unbuffered_and_line_buffered_calls_keep_their_contract_when_their_write_fails) {
  run(C_LINES, 12);
}

SSTM_TEST_MAIN()
