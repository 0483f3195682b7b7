/* SPDX-License-Identifier: MIT */
/* Transactional stdio (include/schedstm/stdio.h): the design of
 * [Smiljkovic13] on the library's public API, extended so that regular
 * files never need irrevocability. docs/design/tm-libc.md explains it in
 * numbered steps, cited here as (S1)..(S7):
 *
 * (S1) The stream's state is transactional data: the words of struct
 *      sstm_file below and the two buffers, accessed only with the
 *      library's barriers while the stream is open.
 * (S2) Bytes that leave the write buffer inside a transaction become a
 *      record (offset, bytes) of the attempt's batch for the stream. The
 *      batch takes a ticket (the stream's wseq, incremented
 *      transactionally, so tickets follow the commit order) and an
 *      on_commit action that writes it; an abort drops it.
 * (S3) A batch is written after its commit, once every batch with a smaller
 *      ticket is written (applied == ticket - 1), all or nothing.
 * (S4) A read that needs the kernel first waits until every committed batch
 *      is written (applied == the wseq of its snapshot), reads with pread at
 *      its own position and overlays its own attempt's records; a batch
 *      that started to be written meanwhile (started moved) means the
 *      snapshot is stale: the attempt restarts.
 * (S5) Pipes, sockets and terminals: a read the buffer cannot serve and
 *      sstm_fflush inside a transaction go irrevocable first.
 * (S6) sstm_fseek write-locks the offset mirror (os_fpos, kgen) before its
 *      lseek; an abort resets the kernel offset to the last committed seek's
 *      position, and commits apply in kgen order.
 * (S7) Outside a transaction an operation is a transaction of its own.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <schedstm/alloc.h>
#include <schedstm/stdio.h>
#include <schedstm/tx.h>

#include "libc/sys.h"
#include "os/os.h"

/* ---- the system-call seam ------------------------------------------------ */

static off_t sys_lseek(int fd, off_t off, int whence) { return lseek(fd, off, whence); }
static int sys_fstat(int fd, struct stat *st) { return fstat(fd, st); }
static int sys_ftruncate(int fd, off_t len) { return ftruncate(fd, len); }

const sstm__stdio_sys_t sstm__stdio_sys_default = {
    .pread = pread,
    .pwrite = pwrite,
    .read = read,
    .write = write,
    .lseek = sys_lseek,
    .fstat = sys_fstat,
    .ftruncate = sys_ftruncate,
};
const sstm__stdio_sys_t *sstm__stdio_sys = &sstm__stdio_sys_default;

/* ---- the stream ------------------------------------------------------------ */

#define SF_LIVE 0x73746d66696c6531ULL /* an open stream's state word */
#define SF_DEAD 0x73746d66636c6f73ULL /* a closed one's */
#define SF_CAP 4096u                  /* bytes per buffer */
#define SF_SEEKFILL 512u              /* bytes of a refill that does not continue the last */
#define SF_QUARANTINE 1024u           /* closed headers kept (use-after-close) */

enum { M_RD = 1, M_WR = 2, M_APP = 4 };
enum { FL_EOF = 1, FL_ERR = 2 };

struct sstm_file {
  /* (S1) Transactional words: sstm_load_u64 / sstm_store_u64 only. */
  uint64_t ctl;     /* the reads' and writes' word: CTL_W, CTL_R, CTL_CLOSED */
  uint64_t pos;     /* the stream position; a byte stream: bytes consumed */
  uint64_t rbase;   /* the read buffer holds the file's [rbase, rbase + CTL_R) */
  uint64_t wbase;   /* the write buffer holds [wbase, wbase + CTL_W) */
  uint64_t state;   /* SF_LIVE or SF_DEAD: the indicator calls' closed check */
  uint64_t flags;   /* FL_EOF | FL_ERR */
  uint64_t wseq;    /* tickets handed out (S2) */
  uint64_t os_fpos; /* mirror of the kernel's file offset (S6) */
  uint64_t kgen;    /* number of committed offset moves (S6) */
  uint64_t apos;    /* append position (M_APP streams) */
  /* Set at open, constant until close. */
  int fd;
  unsigned mode;              /* M_* */
  bool reg;                   /* a regular file (else a byte stream) */
  unsigned char *rbuf, *wbuf; /* transactional, SF_CAP bytes each (S1) */
  /* Non-transactional: the writers of committed batches and their waiters. */
  _Alignas(64) _Atomic uint64_t applied; /* last ticket written (S3) */
  _Atomic uint64_t started;              /* last ticket whose writing began (S4) */
  _Atomic uint32_t waiters;              /* threads asleep on applied */
  _Atomic int werr;                      /* errno of a failed deferred write */
  uint64_t kend;                         /* the file's size as the writers know it; only the writer
                                            of the current ticket touches it (S3) */
  /* The kernel offset (S6), under kmu. */
  pthread_mutex_t kmu;
  uint64_t kgen_done; /* kgen of the last committed seek applied */
  uint64_t kpos_done; /* its position */
  uint64_t klast;     /* the offset the last lseek set */
};

/* ctl packs what every read or write loads into one word, so that a call
 * that the buffer serves costs few barriers: the write buffer's dirty
 * bytes (a byte stream: the read buffer's bytes from rbase, pos - rbase of
 * them consumed), the read buffer's length, and the closed bit (set with
 * state at close, so reads and writes need not load state). */
#define CTL_W(c) ((c)&0xffffu)
#define CTL_R(c) (((c) >> 16) & 0xffffu)
#define CTL_CLOSED (1ull << 62)
#define CTL_MAKE(c, w, r) (((c) & ~0xffffffffull) | (uint64_t)(w) | ((uint64_t)(r) << 16))

#define LD(f, fld) sstm_load_u64(&(f)->fld)
#define ST(f, fld, v) sstm_store_u64(&(f)->fld, (v))

/* ---- batches (S2) -------------------------------------------------------- */

typedef struct rec {
  uint64_t off;
  size_t len;
  unsigned char *data;
  unsigned char *pre; /* the bytes it overwrites (S3), read before writing */
  size_t prelen;
} rec_t;

typedef struct batch {
  struct batch *next;
  sstm_file_t *f;
  uint64_t ticket; /* 0 until taken */
  rec_t *r;
  size_t n, cap;
} batch_t;

/* The current attempt's batches. Their actions (apply / drop) unlink them
 * when the attempt ends, so the list holds exactly the running attempt's. */
static __thread batch_t *tls_batches;

static void batch_unlink(batch_t *b) {
  for (batch_t **p = &tls_batches; *p; p = &(*p)->next)
    if (*p == b) {
      *p = b->next;
      return;
    }
}

static void batch_free(batch_t *b) {
  for (size_t i = 0; i < b->n; i++) {
    free(b->r[i].data);
    free(b->r[i].pre);
  }
  free(b->r);
  free(b);
}

static batch_t *batch_find(sstm_file_t *f) {
  for (batch_t *b = tls_batches; b; b = b->next)
    if (b->f == f) return b;
  return NULL;
}

static void wake(sstm_file_t *f) {
  /* seq_cst: with the seq_cst store of applied before it and the waiter's
   * seq_cst increment of waiters then load of applied, one of the two sees
   * the other (store-load order, which acquire/release does not give). */
  if (atomic_load_explicit(&f->waiters, memory_order_seq_cst) != 0)
    sstm__futex_wake_all(&f->applied);
}

/* Wait until applied >= want. Returns applied. */
static uint64_t wait_applied(sstm_file_t *f, uint64_t want) {
  for (unsigned spin = 0;; spin++) {
    /* acquire: pairs with the release/seq_cst store of applied after the
     * writes, so what follows (a pread, the next writer) comes after them. */
    uint64_t a = atomic_load_explicit(&f->applied, memory_order_acquire);
    if (a >= want) return a;
    if (spin < 64) {
      __builtin_ia32_pause();
      continue;
    }
    atomic_fetch_add_explicit(&f->waiters, 1, memory_order_seq_cst);
    a = atomic_load_explicit(&f->applied, memory_order_seq_cst);
    if (a < want) sstm__futex_wait(&f->applied, (uint32_t)a, 1000000);
    atomic_fetch_sub_explicit(&f->waiters, 1, memory_order_relaxed);
  }
}

static int pwrite_all(int fd, const unsigned char *p, size_t n, uint64_t off) {
  while (n > 0) {
    ssize_t r = sstm__stdio_sys->pwrite(fd, p, n, (off_t)off);
    if (r < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (r == 0) return EIO;
    p += r, n -= (size_t)r, off += (uint64_t)r;
  }
  return 0;
}

static int write_all(int fd, const unsigned char *p, size_t n) {
  while (n > 0) {
    ssize_t r = sstm__stdio_sys->write(fd, p, n);
    if (r < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (r == 0) return EIO;
    p += r, n -= (size_t)r;
  }
  return 0;
}

/* pread until n bytes or the end of the file: the count, or -errno. */
static ssize_t pread_all(int fd, unsigned char *p, size_t n, uint64_t off) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = sstm__stdio_sys->pread(fd, p + got, n - got, (off_t)(off + got));
    if (r < 0) {
      if (errno == EINTR) continue;
      return -errno;
    }
    if (r == 0) break;
    got += (size_t)r;
  }
  return (ssize_t)got;
}

/* (S3) Write a regular file's batch, all or nothing: the bytes each record
 * overwrites are read first; on a failure the records written so far are
 * restored and the file cut back to its size before the batch. */
static int write_batch_reg(sstm_file_t *f, batch_t *b) {
  uint64_t kend0 = f->kend, kend = kend0;
  for (size_t i = 0; i < b->n; i++) {
    rec_t *r = &b->r[i];
    if (r->off < kend0) {
      uint64_t e = r->off + r->len < kend0 ? r->off + r->len : kend0;
      r->pre = malloc(e - r->off);
      if (r->pre == NULL) return ENOMEM;
      ssize_t got = pread_all(f->fd, r->pre, e - r->off, r->off);
      if (got < 0) return (int)-got;
      r->prelen = (size_t)got;
    }
  }
  for (size_t i = 0; i < b->n; i++) {
    rec_t *r = &b->r[i];
    int err = pwrite_all(f->fd, r->data, r->len, r->off);
    if (err != 0) {
      bool grew = false;
      for (size_t j = i + 1; j-- > 0;) {
        if (b->r[j].prelen) (void)pwrite_all(f->fd, b->r[j].pre, b->r[j].prelen, b->r[j].off);
        grew |= b->r[j].off + b->r[j].len > kend0;
      }
      if (grew) (void)sstm__stdio_sys->ftruncate(f->fd, (off_t)kend0);
      return err;
    }
    if (r->off + r->len > kend) kend = r->off + r->len;
  }
  f->kend = kend;
  return 0;
}

static int write_batch_bytes(sstm_file_t *f, batch_t *b) {
  for (size_t i = 0; i < b->n; i++) {
    int err = write_all(f->fd, b->r[i].data, b->r[i].len);
    if (err != 0) return err;
  }
  return 0;
}

static void set_werr(sstm_file_t *f, int err) {
  int zero = 0;
  /* relaxed: the error is a report; applied's store publishes it to the
   * threads that wait for this ticket. */
  atomic_compare_exchange_strong_explicit(&f->werr, &zero, err, memory_order_relaxed,
                                          memory_order_relaxed);
}

/* on_commit (S3): write the batch in ticket order. */
static void batch_apply(void *arg) {
  batch_t *b = arg;
  sstm_file_t *f = b->f;
  batch_unlink(b);
  if (b->ticket != 0) {
    wait_applied(f, b->ticket - 1);
    /* seq_cst: ordered before the writes' system calls, and against the
     * readers' seq_cst load of started after their pread (S4). */
    atomic_store_explicit(&f->started, b->ticket, memory_order_seq_cst);
    int err = f->reg ? write_batch_reg(f, b) : write_batch_bytes(f, b);
    if (err != 0) set_werr(f, err);
    /* seq_cst: release for the next writer and the readers (they acquire
     * it), and the store half of the waiters handshake (see wake). */
    atomic_store_explicit(&f->applied, b->ticket, memory_order_seq_cst);
    wake(f);
  }
  batch_free(b);
}

/* on_abort: the attempt's bytes never reach the kernel. */
static void batch_drop(void *arg) {
  batch_unlink(arg);
  batch_free(arg);
}

/* The attempt's batch for f, created with its ticket on first use. NULL
 * (ENOMEM) if it cannot be created. */
static batch_t *batch_get(sstm_file_t *f) {
  batch_t *b = batch_find(f);
  if (b) return b;
  b = calloc(1, sizeof *b);
  if (b == NULL) return NULL;
  b->f = f;
  /* Actions first, then the ticket: an abort inside the barriers below
   * finds the batch registered (batch_drop frees it); a batch whose
   * ticket was never taken writes nothing. */
  if (sstm_on_abort(batch_drop, b) != 0) {
    free(b);
    return NULL;
  }
  b->next = tls_batches;
  tls_batches = b;
  if (sstm_on_commit(batch_apply, b) != 0) {
    /* Out of memory: orphan the batch (no stream, no ticket) so that no
     * call finds it; an abort frees it, a commit leaks it. */
    b->f = NULL;
    return NULL;
  }
  uint64_t t = LD(f, wseq) + 1;
  ST(f, wseq, t);
  b->ticket = t;
  return b;
}

/* A record of len bytes at off, its data not yet filled. NULL: ENOMEM. */
static unsigned char *batch_add(batch_t *b, uint64_t off, size_t len) {
  if (b->n == b->cap) {
    size_t nc = b->cap ? 2 * b->cap : 4;
    rec_t *nr = realloc(b->r, nc * sizeof *nr);
    if (nr == NULL) return NULL;
    b->r = nr, b->cap = nc;
  }
  unsigned char *d = malloc(len);
  if (d == NULL) return NULL;
  b->r[b->n++] = (rec_t){.off = off, .len = len, .data = d};
  return d;
}

/* ---- operations ------------------------------------------------------------ */

typedef struct op {
  sstm_file_t *f;
  bool outer; /* a transaction of its own (S7) */
  int err;    /* errno to report, 0: none */
  const void *src;
  void *dst;
  size_t n;
  int64_t off;
  int whence;
  char **lp;
  size_t *lcap;
  int64_t r;
  uint64_t w;   /* sstm_fflush: the tickets to wait for */
  uint64_t ctl; /* the stream's ctl as live_rw() loaded it */
} op_t;

static void set_flag(sstm_file_t *f, uint64_t fl) {
  uint64_t v = LD(f, flags);
  if (!(v & fl)) ST(f, flags, v | fl);
}

/* The closed check of the indicator calls (which must not load ctl: they
 * would conflict with every read and write). */
static bool live(op_t *a) {
  if (LD(a->f, state) != SF_LIVE) {
    a->err = EBADF;
    return false;
  }
  return true;
}

/* The closed check of reads and writes: loads ctl into a->ctl. */
static bool live_rw(op_t *a) {
  a->ctl = LD(a->f, ctl);
  if (a->ctl & CTL_CLOSED) {
    a->err = EBADF;
    return false;
  }
  return true;
}

/* Move the write buffer's bytes to the batch (S2). */
static int spill(sstm_file_t *f) {
  uint64_t c = LD(f, ctl), wl = CTL_W(c);
  if (wl == 0) return 0;
  batch_t *b = batch_get(f);
  unsigned char *d = b ? batch_add(b, LD(f, wbase), wl) : NULL;
  if (d == NULL) return ENOMEM;
  sstm_load_bytes(d, f->wbuf, wl);
  ST(f, ctl, CTL_MAKE(c, 0, CTL_R(c)));
  return 0;
}

/* (S4) The committed writes of the stream are in the kernel and none is
 * being written: returns with applied == started == the snapshot's count,
 * or restarts the attempt. */
static uint64_t settle(sstm_file_t *f) {
  batch_t *b = batch_find(f);
  uint64_t w = b && b->ticket ? b->ticket - 1 : LD(f, wseq);
  if (wait_applied(f, w) != w) sstm_restart(); /* a newer commit: stale */
  return w;
}

static void recheck(sstm_file_t *f, uint64_t w) {
  /* seq_cst: after the pread (a system call) and against the writer's
   * seq_cst store of started before its pwrite. */
  if (atomic_load_explicit(&f->started, memory_order_seq_cst) != w) sstm_restart();
}

/* Fill the read buffer at position p. Returns the bytes now buffered from
 * p (0: end of file), or -errno. */
static long fill(sstm_file_t *f, uint64_t p) {
  unsigned char tmp[SF_CAP];
  long n;
  if (f->reg) {
    int e = spill(f);
    if (e) return -e;
    uint64_t w = settle(f);
    /* A refill that continues the previous window reads a whole buffer
     * (sequential reading); one after a seek elsewhere reads SF_SEEKFILL
     * bytes: every buffered byte costs a transactional store, and a reader
     * that seeks around uses few of them. */
    uint64_t c0 = LD(f, ctl);
    size_t want = CTL_R(c0) != 0 && LD(f, rbase) + CTL_R(c0) == p ? SF_CAP : SF_SEEKFILL;
    ssize_t got = pread_all(f->fd, tmp, want, p);
    if (got < 0) return (long)got;
    recheck(f, w);
    /* The attempt's own records: their bytes replace the kernel's, and the
     * file ends at the last of them if that is further: the bytes between
     * the kernel's end and it are a hole (zeros), as pwrite will make. */
    uint64_t end = p + (uint64_t)got;
    batch_t *b = batch_find(f);
    for (size_t i = 0; b && i < b->n; i++)
      if (b->r[i].off + b->r[i].len > end) end = b->r[i].off + b->r[i].len;
    if (end > p + want) end = p + want;
    n = (long)(end - p);
    if (n > got) memset(tmp + got, 0, (size_t)(n - got));
    for (size_t i = 0; b && i < b->n; i++) {
      rec_t *r = &b->r[i];
      uint64_t lo = r->off > p ? r->off : p;
      uint64_t hi = r->off + r->len < end ? r->off + r->len : end;
      if (lo < hi) memcpy(tmp + (lo - p), r->data + (lo - r->off), hi - lo);
    }
  } else {
    /* (S5) Consuming kernel data cannot be undone. */
    if (!sstm_is_irrevocable()) sstm_become_irrevocable();
    ssize_t r;
    do
      r = sstm__stdio_sys->read(f->fd, tmp, SF_CAP);
    while (r < 0 && errno == EINTR);
    if (r < 0) return -errno;
    n = (long)r;
  }
  if (n > 0) sstm_store_bytes(f->rbuf, tmp, (size_t)n);
  ST(f, rbase, p);
  uint64_t c = LD(f, ctl);
  ST(f, ctl, CTL_MAKE(c, CTL_W(c), n));
  return n;
}

/* Read up to n bytes into dst, stopping after a newline when nl. Sets the
 * EOF / error indicators. Returns the count; *saw_nl when it ended on one. */
static size_t rd(op_t *a, unsigned char *dst, size_t n, bool nl, bool *saw_nl) {
  sstm_file_t *f = a->f;
  *saw_nl = false;
  if (!(f->mode & M_RD)) {
    a->err = EBADF;
    set_flag(f, FL_ERR);
    return 0;
  }
  uint64_t p = LD(f, pos), p0 = p;
  uint64_t c = a->ctl;
  size_t got = 0;
  while (got < n) {
    uint64_t rl = CTL_R(c), rb = rl ? LD(f, rbase) : 0;
    if (p >= rb && p < rb + rl) {
      size_t k = rb + rl - p < n - got ? (size_t)(rb + rl - p) : n - got;
      if (k == 1)
        dst[got] = sstm_load_u8(f->rbuf + (p - rb));
      else
        sstm_load_bytes(dst + got, f->rbuf + (p - rb), k);
      if (nl) {
        unsigned char *q = memchr(dst + got, '\n', k);
        if (q) {
          k = (size_t)(q - (dst + got)) + 1;
          *saw_nl = true;
        }
      }
      got += k, p += k;
      if (*saw_nl) break;
      continue;
    }
    long m = fill(f, p);
    if (m < 0) {
      a->err = (int)-m;
      set_flag(f, FL_ERR);
      break;
    }
    if (m == 0) {
      set_flag(f, FL_EOF);
      break;
    }
    c = LD(f, ctl);
  }
  if (p != p0) ST(f, pos, p);
  return got;
}

/* Write n bytes of private memory src. Returns 0 or an errno (then nothing
 * of this call is written). */
static int wr(op_t *a, const unsigned char *src, size_t n) {
  sstm_file_t *f = a->f;
  if (!(f->mode & M_WR)) {
    set_flag(f, FL_ERR);
    return EBADF;
  }
  if (n == 0) return 0;
  /* Every load before the first store: a load of a stripe this attempt
   * has locked takes the barrier's slow path. */
  uint64_t c = a->ctl;
  uint64_t off = !f->reg ? 0 : (f->mode & M_APP) ? LD(f, apos) : LD(f, pos);
  uint64_t wl = CTL_W(c);
  if (wl != 0 && ((f->reg && LD(f, wbase) + wl != off) || wl + n > SF_CAP)) {
    int e = spill(f);
    if (e) goto fail;
    c = LD(f, ctl);
    wl = 0;
  }
  uint64_t rl = CTL_R(c);
  if (f->reg && rl != 0) { /* a buffered read window these bytes overlap is stale */
    uint64_t rb = LD(f, rbase);
    if (rb < off + n && off < rb + rl) rl = 0;
  }
  if (n >= SF_CAP) {
    batch_t *b = batch_get(f);
    unsigned char *d = b ? batch_add(b, off, n) : NULL;
    if (d == NULL) goto fail;
    memcpy(d, src, n);
    if (rl != CTL_R(c)) ST(f, ctl, CTL_MAKE(c, wl, rl));
  } else {
    if (wl == 0) ST(f, wbase, off);
    if (n == 1)
      sstm_store_u8(f->wbuf + wl, src[0]);
    else
      sstm_store_bytes(f->wbuf + wl, src, n);
    ST(f, ctl, CTL_MAKE(c, wl + n, rl));
  }
  if (f->reg) {
    if (f->mode & M_APP) ST(f, apos, off + n);
    ST(f, pos, off + n);
  }
  return 0;
fail:
  set_flag(f, FL_ERR);
  return ENOMEM;
}

/* (S7) Run op on a: directly inside a transaction, else as one. false:
 * unregistered thread (a->err EPERM). */
static bool run(void (*op)(void *), op_t *a) {
  a->outer = !sstm_in_tx();
  if (!a->outer) {
    op(a);
    return true;
  }
  if (sstm_run(NULL, op, a) == SSTM_ENOTHREAD) {
    a->err = EPERM;
    return false;
  }
  return true;
}

static void finish(op_t *a) {
  if (a->err) errno = a->err;
}

/* ---- open and close -------------------------------------------------------- */

static int parse_mode(const char *mode, int *oflags, unsigned *m) {
  if (mode == NULL) return EINVAL;
  switch (mode[0]) {
  case 'r': *oflags = O_RDONLY, *m = M_RD; break;
  case 'w': *oflags = O_WRONLY | O_CREAT | O_TRUNC, *m = M_WR; break;
  case 'a': *oflags = O_WRONLY | O_CREAT | O_APPEND, *m = M_WR | M_APP; break;
  default: return EINVAL;
  }
  for (const char *c = mode + 1; *c; c++) {
    switch (*c) {
    case '+':
      *oflags = (*oflags & ~(O_RDONLY | O_WRONLY)) | O_RDWR;
      *m |= M_RD | M_WR;
      break;
    case 'b': break;
    case 'x': *oflags |= O_EXCL; break;
    case 'e': *oflags |= O_CLOEXEC; break;
    default: return EINVAL;
    }
  }
  return 0;
}

static sstm_file_t *make(int fd, unsigned m) {
  struct stat st;
  if (sstm__stdio_sys->fstat(fd, &st) != 0) return NULL;
  sstm_file_t *f = aligned_alloc(64, (sizeof *f + 63) & ~(size_t)63);
  unsigned char *bufs = malloc(2 * SF_CAP);
  if (f == NULL || bufs == NULL) {
    free(f);
    free(bufs);
    errno = ENOMEM;
    return NULL;
  }
  memset(f, 0, sizeof *f);
  f->reg = S_ISREG(st.st_mode);
  uint64_t cur = 0;
  if (f->reg) {
    off_t c = sstm__stdio_sys->lseek(fd, 0, SEEK_CUR);
    cur = c > 0 ? (uint64_t)c : 0;
  }
  f->state = SF_LIVE;
  f->pos = cur;
  f->os_fpos = cur;
  f->apos = f->reg ? (uint64_t)st.st_size : 0;
  f->fd = fd;
  f->mode = m;
  f->rbuf = bufs;
  f->wbuf = bufs + SF_CAP;
  f->kend = f->reg ? (uint64_t)st.st_size : 0;
  f->kpos_done = f->klast = cur;
  pthread_mutex_init(&f->kmu, NULL);
  atomic_init(&f->applied, 0);
  atomic_init(&f->started, 0);
  atomic_init(&f->waiters, 0);
  atomic_init(&f->werr, 0);
  return f;
}

sstm_file_t *sstm_fopen(const char *path, const char *mode) {
  int oflags;
  unsigned m;
  if (path == NULL || sstm_in_tx() || parse_mode(mode, &oflags, &m) != 0) {
    errno = EINVAL;
    return NULL;
  }
  int fd = open(path, oflags, 0666);
  if (fd < 0) return NULL;
  sstm_file_t *f = make(fd, m);
  if (f == NULL) {
    int e = errno;
    close(fd);
    errno = e;
  }
  return f;
}

sstm_file_t *sstm_fdopen(int fd, const char *mode) {
  int oflags;
  unsigned m;
  if (sstm_in_tx() || parse_mode(mode, &oflags, &m) != 0) {
    errno = EINVAL;
    return NULL;
  }
  int fl = fcntl(fd, F_GETFL);
  if (fl < 0) return NULL; /* EBADF */
  int acc = fl & O_ACCMODE;
  if (((m & M_RD) && acc == O_WRONLY) || ((m & M_WR) && acc == O_RDONLY)) {
    errno = EINVAL;
    return NULL;
  }
  if (fl & O_APPEND) m |= M_APP;
  return make(fd, m);
}

static pthread_mutex_t quarantine_mu = PTHREAD_MUTEX_INITIALIZER;
static sstm_file_t *quarantine[SF_QUARANTINE];
static unsigned quarantine_next;

/* Keep a closed header for the next SF_QUARANTINE closes, so that a use
 * after close reads SF_DEAD and fails with EBADF. */
static void retire_header(sstm_file_t *f) {
  pthread_mutex_lock(&quarantine_mu);
  sstm_file_t *old = quarantine[quarantine_next];
  quarantine[quarantine_next] = f;
  quarantine_next = (quarantine_next + 1) % SF_QUARANTINE;
  pthread_mutex_unlock(&quarantine_mu);
  if (old) {
    pthread_mutex_destroy(&old->kmu);
    sstm_free(old); /* after the grace period: a doomed reader may still load it */
  }
}

static void op_flags(void *p);

static void op_close(void *p) {
  op_t *a = p;
  a->err = 0;
  if (!live(a)) return;
  ST(a->f, state, SF_DEAD);
  ST(a->f, ctl, LD(a->f, ctl) | CTL_CLOSED);
  a->w = LD(a->f, wseq);
}

int sstm_fclose(sstm_file_t *f) {
  if (f == NULL) {
    errno = EBADF;
    return EOF;
  }
  if (sstm_in_tx()) {
    errno = EINVAL;
    return EOF;
  }
  int rc = sstm_fflush(f);
  int err = rc ? errno : 0;
  op_t a = {.f = f};
  if (!run(op_close, &a)) {
    finish(&a);
    return EOF;
  }
  if (a.err) { /* closed already */
    finish(&a);
    return EOF;
  }
  wait_applied(f, a.w);
  int we = atomic_exchange_explicit(&f->werr, 0, memory_order_relaxed);
  if (!err && we) err = we;
  if (close(f->fd) != 0 && !err) err = errno;
  sstm_free(f->rbuf); /* both buffers: one block; a doomed attempt may read it */
  retire_header(f);
  if (err) {
    errno = err;
    return EOF;
  }
  return 0;
}

int sstm_fileno(sstm_file_t *f) {
  if (f == NULL || __atomic_load_n(&f->state, __ATOMIC_RELAXED) != SF_LIVE) {
    /* relaxed: a racy peek for the error only; fd itself is constant */
    errno = EBADF;
    return -1;
  }
  return f->fd;
}

/* ---- reading --------------------------------------------------------------- */

static void op_read(void *p) {
  op_t *a = p;
  a->err = 0, a->r = 0;
  if (!live_rw(a)) return;
  bool nl;
  a->r = (int64_t)rd(a, a->dst, a->n, a->whence != 0, &nl);
  a->off = nl;
}

int sstm_fgetc(sstm_file_t *f) {
  unsigned char c;
  op_t a = {.f = f, .dst = &c, .n = 1};
  if (f == NULL) {
    errno = EBADF;
    return EOF;
  }
  if (!run(op_read, &a) || a.r != 1) {
    finish(&a);
    return EOF;
  }
  return c;
}

char *sstm_fgets(char *s, int n, sstm_file_t *f) {
  if (f == NULL || s == NULL || n <= 0) {
    errno = f == NULL ? EBADF : EINVAL;
    return NULL;
  }
  op_t a = {.f = f, .dst = s, .n = (size_t)n - 1, .whence = 1};
  if (!run(op_read, &a) || a.r == 0) {
    finish(&a);
    return NULL;
  }
  s[a.r] = '\0';
  finish(&a);
  return s;
}

size_t sstm_fread(void *ptr, size_t size, size_t nmemb, sstm_file_t *f) {
  if (f == NULL) {
    errno = EBADF;
    return 0;
  }
  if (size == 0 || nmemb == 0) return 0;
  if (nmemb > SIZE_MAX / size) {
    errno = EINVAL;
    return 0;
  }
  op_t a = {.f = f, .dst = ptr, .n = size * nmemb};
  if (!run(op_read, &a)) {
    finish(&a);
    return 0;
  }
  finish(&a);
  return (size_t)a.r / size;
}

/* getline: read into the caller's buffer, growing it between chunks. */
static void op_getline(void *p) {
  op_t *a = p;
  a->err = 0, a->r = -1;
  if (!live_rw(a)) return;
  size_t len = 0;
  for (;;) {
    if (*a->lcap < len + 2 || *a->lp == NULL) {
      size_t nc = *a->lcap < 120 ? 120 : *a->lcap * 2;
      if (nc < len + 2) nc = len + 2;
      char *nb = realloc(*a->lp, nc); /* the caller's buffer: never rolled back */
      if (nb == NULL) {
        a->err = ENOMEM;
        set_flag(a->f, FL_ERR);
        return;
      }
      *a->lp = nb, *a->lcap = nc;
    }
    bool nl;
    if (len != 0) a->ctl = LD(a->f, ctl); /* the previous chunk may have refilled */
    size_t k = rd(a, (unsigned char *)*a->lp + len, *a->lcap - len - 1, true, &nl);
    len += k;
    if (nl || k == 0 || a->err) break;
  }
  if (len == 0) return;
  (*a->lp)[len] = '\0';
  a->r = (int64_t)len;
  a->err = 0;
}

ssize_t sstm_getline(char **lineptr, size_t *n, sstm_file_t *f) {
  if (f == NULL || lineptr == NULL || n == NULL) {
    errno = f == NULL ? EBADF : EINVAL;
    return -1;
  }
  if (*lineptr == NULL) *n = 0;
  op_t a = {.f = f, .lp = lineptr, .lcap = n};
  if (!run(op_getline, &a)) {
    finish(&a);
    return -1;
  }
  finish(&a);
  return (ssize_t)a.r;
}

/* ---- writing --------------------------------------------------------------- */

static void op_write(void *p) {
  op_t *a = p;
  a->err = 0, a->r = -1;
  if (!live_rw(a)) return;
  a->err = wr(a, a->src, a->n);
  if (a->err == 0) a->r = (int64_t)a->n;
}

static int64_t do_write(sstm_file_t *f, const void *src, size_t n) {
  if (f == NULL) {
    errno = EBADF;
    return -1;
  }
  op_t a = {.f = f, .src = src, .n = n};
  if (!run(op_write, &a)) {
    finish(&a);
    return -1;
  }
  finish(&a);
  return a.r;
}

int sstm_fputc(int c, sstm_file_t *f) {
  unsigned char b = (unsigned char)c;
  return do_write(f, &b, 1) == 1 ? b : EOF;
}

int sstm_fputs(const char *s, sstm_file_t *f) {
  if (s == NULL) {
    errno = EINVAL;
    return EOF;
  }
  size_t n = strlen(s);
  return do_write(f, s, n) == (int64_t)n ? (n > INT_MAX ? INT_MAX : (int)n) : EOF;
}

size_t sstm_fwrite(const void *ptr, size_t size, size_t nmemb, sstm_file_t *f) {
  if (size == 0 || nmemb == 0) return 0;
  if (nmemb > SIZE_MAX / size) {
    errno = EINVAL;
    return 0;
  }
  return do_write(f, ptr, size * nmemb) < 0 ? 0 : nmemb;
}

int sstm_vfprintf(sstm_file_t *f, const char *fmt, va_list ap) {
  char small[256];
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(small, sizeof small, fmt, ap);
  if (n < 0) {
    va_end(ap2);
    return -1;
  }
  char *buf = small;
  bool tx = sstm_in_tx();
  if ((size_t)n >= sizeof small) {
    /* In a transaction the block must not leak when an abort unwinds this
     * frame: sstm_malloc releases it then. */
    buf = tx ? sstm_malloc((size_t)n + 1) : malloc((size_t)n + 1);
    if (buf == NULL) {
      va_end(ap2);
      errno = ENOMEM;
      return -1;
    }
    vsnprintf(buf, (size_t)n + 1, fmt, ap2);
  }
  va_end(ap2);
  int64_t r = do_write(f, buf, (size_t)n);
  if (buf != small) {
    if (tx)
      sstm_free(buf);
    else
      free(buf);
  }
  return r < 0 ? -1 : n;
}

int sstm_fprintf(sstm_file_t *f, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int r = sstm_vfprintf(f, fmt, ap);
  va_end(ap);
  return r;
}

/* ---- flushing -------------------------------------------------------------- */

static void op_flush(void *p) {
  op_t *a = p;
  a->err = 0, a->r = 0;
  if (!live(a)) {
    a->r = EOF;
    return;
  }
  sstm_file_t *f = a->f;
  if (!(f->mode & M_WR)) {
    a->w = 0;
    return;
  }
  if (!f->reg && !a->outer) {
    /* (S5) The bytes must leave now: irrevocable, then write the batch in
     * ticket order (this transaction will commit; nobody else commits
     * meanwhile). */
    if (!sstm_is_irrevocable()) sstm_become_irrevocable();
  }
  int e = spill(f);
  if (e) {
    a->err = e, a->r = EOF;
    return;
  }
  a->w = LD(f, wseq);
  batch_t *b = batch_find(f);
  if (!f->reg && !a->outer && b && b->ticket) {
    wait_applied(f, b->ticket - 1);
    e = write_batch_bytes(f, b);
    for (size_t i = 0; i < b->n; i++)
      free(b->r[i].data);
    b->n = 0;
    if (e) {
      a->err = e, a->r = EOF;
      set_flag(f, FL_ERR);
    }
  }
}

int sstm_fflush(sstm_file_t *f) {
  if (f == NULL) {
    errno = EBADF;
    return EOF;
  }
  op_t a = {.f = f};
  if (!run(op_flush, &a)) {
    finish(&a);
    return EOF;
  }
  if (a.r == 0 && a.outer) {
    /* Our own batch was written at the commit; earlier ones too, unless
     * their committers are still writing: wait for them. */
    wait_applied(f, a.w);
    int we = atomic_exchange_explicit(&f->werr, 0, memory_order_relaxed);
    if (we) { /* a deferred write failed: report it now, keep ferror set */
      a.err = we, a.r = EOF;
      op_t c = {.f = f, .whence = 2};
      run(op_flags, &c);
    }
  }
  finish(&a);
  return a.r ? EOF : 0;
}

/* ---- positioning ----------------------------------------------------------- */

typedef struct seekact {
  sstm_file_t *f;
  uint64_t gen, pos;
} seekact_t;

/* (S6) on_commit: the latest committed seek's offset stays in the kernel. */
static void seek_commit(void *p) {
  seekact_t *s = p;
  sstm_file_t *f = s->f;
  pthread_mutex_lock(&f->kmu);
  if (s->gen > f->kgen_done) {
    f->kgen_done = s->gen, f->kpos_done = s->pos;
    if (f->klast != s->pos && sstm__stdio_sys->lseek(f->fd, (off_t)s->pos, SEEK_SET) >= 0)
      f->klast = s->pos;
  }
  pthread_mutex_unlock(&f->kmu);
  free(s);
}

/* (S6) on_abort: undo the lseek (back to the last committed position). */
static void seek_abort(void *p) {
  seekact_t *s = p;
  sstm_file_t *f = s->f;
  pthread_mutex_lock(&f->kmu);
  if (f->klast != f->kpos_done && sstm__stdio_sys->lseek(f->fd, (off_t)f->kpos_done, SEEK_SET) >= 0)
    f->klast = f->kpos_done;
  pthread_mutex_unlock(&f->kmu);
  free(s);
}

/* The end of the file as this attempt sees it (S4). -errno on failure. */
static int64_t end_of_file(sstm_file_t *f) {
  uint64_t w = settle(f);
  struct stat st;
  if (sstm__stdio_sys->fstat(f->fd, &st) != 0) return -errno;
  recheck(f, w);
  uint64_t end = (uint64_t)st.st_size;
  batch_t *b = batch_find(f);
  for (size_t i = 0; b && i < b->n; i++)
    if (b->r[i].off + b->r[i].len > end) end = b->r[i].off + b->r[i].len;
  uint64_t wl = CTL_W(LD(f, ctl));
  if (wl && LD(f, wbase) + wl > end) end = LD(f, wbase) + wl;
  return (int64_t)end;
}

static void op_seek(void *p) {
  op_t *a = p;
  a->err = 0, a->r = -1;
  if (!live(a)) return;
  sstm_file_t *f = a->f;
  if (!f->reg) {
    a->err = ESPIPE;
    return;
  }
  int64_t base;
  switch (a->whence) {
  case SEEK_SET: base = 0; break;
  case SEEK_CUR: base = (int64_t)LD(f, pos); break;
  case SEEK_END:
    base = end_of_file(f);
    if (base < 0) {
      a->err = (int)-base;
      return;
    }
    if (f->mode & M_APP) ST(f, apos, (uint64_t)base);
    break;
  default: a->err = EINVAL; return;
  }
  if ((a->off > 0 && base > INT64_MAX - a->off) || base + a->off < 0) {
    a->err = EINVAL;
    return;
  }
  uint64_t np = (uint64_t)(base + a->off);
  if (LD(f, os_fpos) != np) {
    /* (S6) Write-lock the mirror before the lseek ([Smiljkovic13] Fig. 3a):
     * a concurrent seek conflicts here, before touching the kernel. */
    uint64_t g = LD(f, kgen) + 1;
    ST(f, os_fpos, np);
    ST(f, kgen, g);
    seekact_t *s = malloc(sizeof *s);
    if (s == NULL) {
      a->err = ENOMEM;
      return;
    }
    *s = (seekact_t){.f = f, .gen = g, .pos = np};
    if (sstm_on_abort(seek_abort, s) != 0) {
      free(s);
      a->err = ENOMEM;
      return;
    }
    if (sstm_on_commit(seek_commit, s) != 0) {
      /* seek_abort frees s if the attempt aborts; it commits: the error
       * leaves the kernel offset as this seek set it, the mirror says so. */
      a->err = ENOMEM;
      return;
    }
    pthread_mutex_lock(&f->kmu);
    if (sstm__stdio_sys->lseek(f->fd, (off_t)np, SEEK_SET) >= 0) f->klast = np;
    pthread_mutex_unlock(&f->kmu);
  }
  ST(f, pos, np);
  uint64_t fl = LD(f, flags);
  if (fl & FL_EOF) ST(f, flags, fl & ~(uint64_t)FL_EOF);
  a->r = 0;
}

int sstm_fseek(sstm_file_t *f, off_t offset, int whence) {
  if (f == NULL) {
    errno = EBADF;
    return -1;
  }
  op_t a = {.f = f, .off = offset, .whence = whence};
  if (!run(op_seek, &a)) {
    finish(&a);
    return -1;
  }
  finish(&a);
  return (int)a.r;
}

static void op_tell(void *p) {
  op_t *a = p;
  a->err = 0, a->r = -1;
  if (!live(a)) return;
  if (!a->f->reg) {
    a->err = ESPIPE;
    return;
  }
  a->r = (int64_t)LD(a->f, pos);
}

off_t sstm_ftell(sstm_file_t *f) {
  if (f == NULL) {
    errno = EBADF;
    return -1;
  }
  op_t a = {.f = f};
  if (!run(op_tell, &a)) {
    finish(&a);
    return -1;
  }
  finish(&a);
  return (off_t)a.r;
}

/* ---- indicators ------------------------------------------------------------ */

static void op_flags(void *p) {
  op_t *a = p;
  a->err = 0, a->r = 0;
  if (!live(a)) return;
  if (a->whence == 1) { /* clear */
    if (LD(a->f, flags) != 0) ST(a->f, flags, 0);
    return;
  }
  if (a->whence == 2) { /* set the error indicator */
    set_flag(a->f, FL_ERR);
    return;
  }
  a->r = (int64_t)LD(a->f, flags);
}

static int64_t flags_of(sstm_file_t *f) {
  if (f == NULL) {
    errno = EBADF;
    return 0;
  }
  op_t a = {.f = f};
  run(op_flags, &a);
  finish(&a);
  return a.r;
}

int sstm_feof(sstm_file_t *f) { return (flags_of(f) & FL_EOF) != 0; }

int sstm_ferror(sstm_file_t *f) {
  int64_t fl = flags_of(f);
  /* relaxed: a report of a write that failed after its commit */
  return (fl & FL_ERR) || (f && atomic_load_explicit(&f->werr, memory_order_relaxed) != 0);
}

void sstm_clearerr(sstm_file_t *f) {
  if (f == NULL) return;
  op_t a = {.f = f, .whence = 1};
  run(op_flags, &a);
  finish(&a);
  if (a.err == 0) atomic_store_explicit(&f->werr, 0, memory_order_relaxed);
}

void sstm_rewind(sstm_file_t *f) {
  if (sstm_fseek(f, 0, SEEK_SET) == 0) sstm_clearerr(f);
}
