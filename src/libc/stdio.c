/* SPDX-License-Identifier: MIT */
/* Transactional stdio (include/schedstm/stdio.h): the design of
 * [Smiljkovic13] on the library's public API, extended so that regular
 * files never need irrevocability. docs/design/tm-libc.md explains it in
 * numbered steps, cited here as (S1)..(S11):
 *
 * (S1) The stream's state word own is the only transactional word: a call
 *      that changes the stream writes it once per transaction (acquires
 *      the stream), ftell/feof/ferror only read it.
 * (S2) The state itself (position, indicators, buffer windows, tickets,
 *      offset mirror, append position) is installed per version, under a
 *      sequence word (iver): version v is installed when iver == 2v.
 * (S3) An acquiring attempt copies version v's state into a view private
 *      to it and works on the view with plain memory operations; its commit
 *      installs version v + 1 from the view (an action, in version order
 *      since every acquirer writes own); an abort drops the view.
 * (S4) Bytes that leave the write buffer become records of the view; the
 *      installation gives them a ticket (tickets follow the version order)
 *      and then writes them, once every smaller ticket is written (applied
 *      == ticket - 1), all or nothing.
 * (S5) A read that needs the kernel first waits until every ticket of its
 *      version is written (applied == wseq), reads with pread at its own
 *      position and overlays its own records; a ticket that started to be
 *      written meanwhile (started moved) means the view is stale: restart.
 * (S6) Pipes, sockets and terminals: what read(2) returns goes into the
 *      stream's arrival log, which an abort does not undo, and views read
 *      it at their position as they read a file; sstm_fflush inside a
 *      transaction goes irrevocable first.
 * (S7) sstm_fseek moves the kernel offset after the acquisition (the write
 *      lock of own); an abort resets it to the last committed seek's
 *      position, and commits apply in kgen order.
 * (S8) Outside a transaction, a call the buffers serve takes the stream's
 *      lock nlk and works in place if no attempt is counted in q_active or
 *      q_peek; an attempt's first call counts itself, then waits while nlk
 *      is held. Any other call is a transaction of its own.
 * (S9) An acquisition takes the stream's turn (a lock of the stdio layer)
 *      before touching own, and holds it until its attempt ends, when
 *      another acquisition is in flight, or in serial mode: after a
 *      thread's attempts lost the stream SSTM__ESC_AFTER times in a row,
 *      for the next SSTM__ESC_SPAN committed turns (src/libc/esc.h holds
 *      the decisions).
 * (S10) A stream that one thread uses alone is kept by it ("solo"): its
 *      transactions of buffered calls work on the installed state in place,
 *      without own, without a view and without an action; the word solo
 *      (the keeper, and whether its last such attempt is in flight,
 *      committed or rolled back, which the engine's end mark stores) makes
 *      every other user wait for that attempt's end and hand the stream
 *      back (solo_revoke) before it reads anything of the stream.
 * (S11) A contended stream is kept for a batch: the turn's holder, with
 *      others waiting behind it, becomes the keeper; the others wait
 *      (solo_wait) until it yields after a bounded batch (solo_batch),
 *      then one of them, in ticket order once one has waited too long,
 *      takes the stream over as the next keeper.
 */
#define _GNU_SOURCE
/* The inline read barrier of <schedstm/inline.h> for the load of own, the
 * one transactional word (LD): one call less at a transaction's first
 * call on a stream. Its store (ST) calls the stores' general entry
 * directly (below). The inline load has no random-delay points and skips
 * the debug build's seams, which the library's own barriers keep: those
 * builds widen race windows on the engine's accesses and on the store of
 * own, not on its load. */
#define SSTM_INLINE_BARRIERS
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <schedstm/access.h>
#include <schedstm/alloc.h>
#include <schedstm/config.h>
#include <schedstm/stdio.h>
#include <schedstm/thread.h>
#include <schedstm/tx.h>

#include "iface/libc_services.h"
#include "libc/esc.h"
#include "libc/ntx.h"
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
    .poll = poll,
};
const sstm__stdio_sys_t *sstm__stdio_sys = &sstm__stdio_sys_default;

/* ---- the stream ------------------------------------------------------------ */

#define SF_CAP SSTM_STDIO_BUFSIZ            /* bytes per buffer by default (sstm_setvbuf) */
#define SF_CAP_BYTES SSTM_STDIO_PIPE_BUFSIZ /* ... on a byte stream (PIPE_BUF) */
#define SF_SEEKFILL 512u                    /* bytes of a refill that does not continue the last */
#define SF_QUARANTINE 1024u                 /* closed headers kept (use-after-close) */
#define SF_POLL_MS 1      /* (S6) a reader's first wait for data, then twice as long */
#define SF_POLL_MAX_MS 16 /*   up to this: how soon it sees a kill or logged bytes */

/* The buffer size of the streams opened from now on, 0: the default of
 * the stream's kind (bsz_default); tests change it (sstm__stdio_set_bufsize). */
static _Atomic uint32_t open_bsz = 0;

void sstm__stdio_set_bufsize(uint32_t n) {
  atomic_store_explicit(&open_bsz, n, memory_order_relaxed); /* relaxed: a tuning */
}

/* M_LBF: line buffered (sstm_setvbuf's _IOLBF): a write whose bytes hold a
 * newline sends the buffered bytes out with its commit. */
enum { M_RD = 1, M_WR = 2, M_APP = 4, M_LBF = 8 };

/* Whether n bytes written at off end at or before the largest position
 * (off_t's maximum). A write that does not is refused with EFBIG (wr), and
 * a write buffer starts only where a whole buffer (bsz bytes) fits below
 * it, so that the calls that continue a buffer in place (wr_fast,
 * solo_put, ntx_write) never take the position past it either: positions
 * stay valid off_t values, for sstm_ftell and sstm_fseek's SEEK_CUR. */
static inline bool pos_room(uint64_t off, uint64_t n) {
  return off <= (uint64_t)INT64_MAX && n <= (uint64_t)INT64_MAX - off;
}
enum { FL_EOF = 1, FL_ERR = 2 };

/* own (S1): | version (39 bits) | tag of the acquiring thread (24) | closed |.
 * An acquisition stores version + 1 and its thread's tag; the tag tells a
 * thread that the version it waits for is its own, committed but not yet
 * installed (wait_iver). Tags repeat after 2^24 - 1 threads. */
#define OWN_CLOSED 1ull
#define OWN_TAG_BITS 24
#define OWN_TAG_MASK ((1ull << OWN_TAG_BITS) - 1)
#define OWN_VER(o) ((o) >> (OWN_TAG_BITS + 1))
#define OWN_MAKE(ver, tag) (((uint64_t)(ver) << (OWN_TAG_BITS + 1)) | ((uint64_t)(tag) << 1))

/* The stream's state, one copy per version (S2). In the stream it is read
 * and written with relaxed atomics only (the seqlock protocol on iver
 * orders them); in a view it is plain private memory. */
typedef struct cstate {
  uint64_t pos;     /* the stream position; a byte stream: bytes consumed */
  uint64_t flags;   /* FL_EOF | FL_ERR */
  uint64_t rbase;   /* the read window holds the file's [rbase, rbase + rlen) */
  uint64_t rlen;    /*   (in the stream's rbuf) */
  uint64_t wbase;   /* the write buffer holds [wbase, wbase + wlen) */
  uint64_t wlen;    /*   (in the stream's wbuf, from woff) */
  uint64_t woff;    /* where the write buffer's bytes start in wbuf */
  uint64_t wseq;    /* tickets handed out (S4) */
  uint64_t os_fpos; /* mirror of the kernel's file offset (S7) */
  uint64_t kgen;    /* number of committed offset moves (S7) */
  uint64_t apos;    /* append position (M_APP streams) */
  uint64_t rbuf;    /* the read window's bytes (a pointer; NULL: none yet) */
  uint64_t wbuf;    /* the write buffer's bytes (a pointer; NULL: none yet) */
} cstate_t;

/* A published buffer's bytes never change while a view can read them: a
 * read window is published whole by the installation that made it (and
 * replaced whole); the write buffer's installed bytes [woff, woff + wlen)
 * are only ever extended in place, and an installation that starts the
 * write buffer again puts it after them (woff moves on) or, when it does
 * not fit there, publishes a new buffer: the end of the installed bytes
 * in a buffer only grows, and nothing beyond it was ever published. Replaced buffers are freed
 * after the grace period (sstm_free), so a stale view can still read them. Views therefore read
 * buffers with plain loads. */
#define RBUF(s) ((const unsigned char *)(uintptr_t)(s).rbuf)
#define WBUF(s) ((unsigned char *)(uintptr_t)(s).wbuf)

struct sstm_file {
  /* (S1) The only transactional word: sstm_load_u64 / sstm_store_u64. Alone
   * on its cache line, so that only calls on this stream touch its stripe. */
  _Alignas(64) uint64_t own;
  /* Set at open (bsz and mode's M_LBF also by sstm_setvbuf, before the
   * stream's first use), constant from then on until close. */
  int fd;
  unsigned mode; /* M_* */
  bool reg;      /* a regular file (else a byte stream) */
  /* Bytes per buffer, 0: unbuffered (sstm_setvbuf, before the first
   * installation; constant from then on). Every write buffer published for
   * the stream holds at least bsz bytes. */
  uint32_t bsz;
  /* (S9) Serial mode: the turn (0 free, 1 held), the acquisitions in
   * flight, the threads asleep on the turn, the turns left in serial
   * mode, the turns taken (for tests). Apart from own: waiters spin on
   * q_turn. */
  _Alignas(64) _Atomic uint64_t q_turn;
  _Atomic uint32_t q_active; /* acquisitions whose attempt has not ended */
  _Atomic uint32_t q_queued; /* of those, the ones waiting for the turn */
  _Atomic uint32_t q_waiters;
  _Atomic uint32_t q_span;
  _Atomic uint64_t q_taken;
  /* (S8) The lock of calls outside transactions (0 free, 1 held), the
   * threads asleep on it, and the peeks in flight (attempts that read the
   * stream without acquiring it: sstm_ftell, sstm_feof, sstm_ferror).
   * Next to q_active: a lock holder checks both. */
  _Atomic uint64_t nlk;
  _Atomic uint32_t nwaiters;
  _Atomic uint32_t q_peek;
  /* (S3) Calls outside transactions that changed the installed state in
   * place (S8): a thread's kept view (tls_keep) is that state only while
   * this count is the one it saw. Written under nlk, with no attempt
   * counted. */
  _Atomic uint64_t nmod;
  /* (S2) The installed state and its sequence word. */
  _Alignas(64) _Atomic uint64_t iver; /* 2v: version v installed; 2v - 1: installing it */
  _Atomic uint32_t iwaiters;          /* threads asleep on iver */
  cstate_t cs;                        /* the installed version's state (relaxed atomics) */
  /* (S10) The keeper of the stream and its state (SOLO_*), 0: none; the
   * engine's end mark of the keeper's attempt stores it. Apart from the
   * calls of other threads, which load it once per attempt. */
  _Alignas(64) _Atomic uint64_t solo;
  /* (S10) The fields a solo attempt can change, as they were before it
   * (solo_save): written by the keeper's attempt while solo is SOLO_I, read
   * by whoever hands a rolled-back one's stream over, ordered by solo. */
  uint64_t sb_pos, sb_wlen;            /* always saved; sb_wlen's top bit: SB_RARE */
  uint64_t sb_apos, sb_wbase, sb_rlen; /* saved when SB_RARE is set */
  /* (S10) The attempt in solo mode on the stream, while solo is SOLO_I:
   * written and read only by the keeper's thread (the one whose I value
   * solo holds). */
  uint64_t solo_tx;
  /* (S11) Threads waiting in solo_wait for the keeper to hand f over. */
  _Atomic uint32_t s_want;
  /* (S11) The waiters' word: moves on when the keeper yields or the
   * keeping ends (a futex word; apart from solo, so that the waiters do
   * not pull solo's line from the keeper while they wait), the batch's
   * deadline, the waiters asleep on it, the hand-overs so far, and the
   * waiters' tickets (a waiter passed over SOLO_STARVE times takes one;
   * while tickets are out, only the holder of ticket s_serve takes the
   * stream). */
  _Alignas(64) _Atomic uint64_t s_gen;
  _Atomic uint64_t s_dead; /* when the keeper's batch ends at the latest (sstm__now_ns) */
  _Atomic uint32_t s_sleep;
  /* (S11) The waiters that are spinning now (not in sched_yield, not
   * asleep): a hint for the keeper, which yields only when one may take
   * the stream at once (solo_ready). */
  _Atomic uint32_t s_hot;
  _Atomic uint32_t s_tick, s_serve;
  _Atomic uint64_t s_takes;
  _Atomic uint64_t s_yields, s_backs; /* yields, and take-backs of a yield (tests) */
  /* (S4) The writers of tickets and their waiters. */
  _Alignas(64) _Atomic uint64_t applied; /* last ticket written */
  _Atomic uint64_t started;              /* last ticket whose writing began (S5) */
  _Atomic uint32_t waiters;              /* threads asleep on applied */
  _Atomic int werr;                      /* errno of a failed deferred write */
  /* (S4) Failed tickets whose own call outside transactions reports them
   * (trep_t) and has not yet set the error indicator: sstm_ferror is set
   * meanwhile. */
  _Atomic uint32_t wmine;
  uint64_t kend; /* the file's size as the writers know it; only the writer
                    of the current ticket touches it (S4) */
  /* (S4) A ticket of the stream has failed: a read window may show its
   * lost bytes, so the undo bytes a buffer took from a window (pw_take)
   * are read from the file instead. As kend, the ticket writers' only. */
  bool wfailed;
  /* The kernel offset (S7), under kmu. */
  pthread_mutex_t kmu;
  uint64_t kgen_done; /* kgen of the last committed seek applied */
  uint64_t kpos_done; /* its position */
  uint64_t klast;     /* the offset the last lseek set */
  /* (S6) A byte stream's reader claim: the descriptor (sstm_desc_t *) of
   * the attempt that reads the kernel into the arrival log, 0 when free;
   * rwaiters sleep on it (futex). It is held across one read(2) that
   * poll(2) said would not wait, and nothing else. */
  _Atomic uint64_t rclaim;
  _Atomic uint32_t rwaiters;
  /* (S6) The arrival log: what read(2) returned, oldest first, from the
   * first arrival that an installed version may not have consumed. ahead
   * is stored by the first append (under rclaim) and then only by the
   * installations (exclusive, S3), which never remove the last arrival;
   * atail and aend (the position after the last logged byte) only under
   * rclaim. */
  _Atomic(struct arrival *) ahead;
  struct arrival *atail;
  uint64_t aend;
  /* The list of open streams (open_head), under open_mu: from the open
   * that made the stream to its close; opins counts the flushes of every
   * stream (flush_all) that work on it without open_mu, which its close
   * waits for before it unlinks it. */
  struct sstm_file *onext, *oprev;
  unsigned opins;
};

/* (S6) An arrival: the bytes one read(2) of a byte stream returned, at
 * stream position pos (the count of bytes read before them). len 0 marks
 * the end of the data that read(2) met at pos (a pipe's writers closed
 * it, a terminal's end-of-file key); gone once a committed attempt has
 * reported it, so that a terminal is read again after it. Written whole
 * before its release store into the log, immutable after, except next
 * (stored once, by the append after it) and gone. */
typedef struct arrival {
  _Atomic(struct arrival *) next;
  uint64_t pos;
  uint32_t len;
  _Atomic bool gone;
  unsigned char b[];
} arrival_t;

/* An attempt stores own once (S1), so the store almost never finds its
 * stripe owned already: straight to the general entry of the stores
 * (which handles every case), without the inline test for an owned
 * stripe. */
#define LD(f, fld) sstm_load_u64(&(f)->fld)
#define ST(f, fld, v) sstm__store_slow(&(f)->fld, (v), sizeof(f)->fld)

/* The fields that the calls the buffers serve change (hot), and those that
 * only a ticket, a seek or a new buffer changes (cold: view_t.cold). */
#define CS_HOT(X) X(pos) X(flags) X(rbase) X(rlen) X(wbase) X(wlen) X(woff) X(apos)
#define CS_COLD(X) X(wseq) X(os_fpos) X(kgen) X(rbuf) X(wbuf)
#define CS_FIELDS(X) CS_HOT(X) CS_COLD(X)
#define CS_LOAD(fld) s->fld = __atomic_load_n(&f->cs.fld, __ATOMIC_RELAXED);
#define CS_STORE(fld) __atomic_store_n(&f->cs.fld, s->fld, __ATOMIC_RELAXED);

static inline void cs_load(const sstm_file_t *f, cstate_t *s) { CS_FIELDS(CS_LOAD) }
static inline void cs_store(sstm_file_t *f, const cstate_t *s) { CS_FIELDS(CS_STORE) }
static inline void cs_store_hot(sstm_file_t *f, const cstate_t *s) { CS_HOT(CS_STORE) }
static inline void cs_store_cold(sstm_file_t *f, const cstate_t *s) { CS_COLD(CS_STORE) }

/* ---- views (S3) -------------------------------------------------------------- */

typedef struct rec {
  uint64_t off;
  size_t len;
  unsigned char *data;
  unsigned char *pre; /* the bytes it overwrites (S4): from the view's pw, else read before
                         writing */
  size_t prelen;
} rec_t;

/* (S4, "Buffering") The report of a ticket that holds the bytes of a call
 * outside transactions: the call reports the ticket's failure itself
 * (own_failed), not the next flush. In the call's op_t, on its thread's
 * stack: the ticket is written by the commit's installation, on that
 * thread, before sstm_run returns. */
typedef struct trep {
  int err;       /* the ticket's errno; 0: written */
  uint64_t lost; /* its bytes that did not stay in the kernel (a regular
                    file's ticket is undone whole: all of them) */
} trep_t;

typedef struct view {
  struct view *next;
  sstm_file_t *f;  /* NULL: in the pool */
  uint64_t txid;   /* the attempt that acquired the stream */
  uint64_t ver;    /* the version copied; the commit installs ver + 1 */
  uint64_t own;    /* the value stored in own */
  uint64_t nmod;   /* the stream's nmod when the attempt counted itself (S3, kept views) */
  bool armed;      /* own is written: the commit must install */
  bool closed;     /* sstm_fclose's attempt */
  bool bad;        /* the acquisition found the stream closed */
  bool turn;       /* (S9) this attempt holds the stream's turn */
  bool active;     /* (S9) counted in the stream's q_active */
  bool peek;       /* (S8) a peek: counted in q_peek, own only loaded (until an
                      acquisition of the same attempt stores it) */
  bool rown;       /* the read window's bytes are in rst (a refill of this attempt),
                      else in the installed s.rbuf */
  bool reset;      /* the write buffer restarts (a spill, or it was empty): the
                      installation puts wst after the installed bytes, or
                      publishes it as a new buffer */
  bool cold;       /* a cold field of s changed (CS_COLD; install knows the others) */
  bool hit;        /* the acquisition reused the thread's kept view (S3) without a copy */
  bool kept;       /* (S11) it left the solo mode of a keeper for a batch */
  bool revoke;     /* (S10) the acquisition met another thread's keeper: its
                      rollback waits until the stream is handed back */
  uint32_t wcap;   /* bytes the write buffer may hold (cw + sw) */
  uint32_t cw;     /* the write buffer: the first cw bytes of the installed s.wbuf, */
  uint32_t sw;     /*   then sw bytes in wst (this attempt's) */
  cstate_t s;      /* the attempt's state of the stream (s.wlen unused: cw + sw) */
  uint64_t ticket; /* taken early (S6), else 0 */
  rec_t *r;        /* the records (S4) */
  size_t n, cap;
  unsigned char *wst, *rst;  /* allocated on first use and kept with the node until an
                                installation publishes them; wst is NULL or holds at
                                least the stream's bsz bytes (view_new) */
  uint32_t wst_cap, rst_cap; /* their sizes */
  /* (S4) The file's bytes under the open write buffer, [s.wbase, s.wbase +
   * pw_len), taken from the read window when a write began the buffer
   * inside it (pw_take); the spill that makes the buffer a record gives
   * them to the record, so that its installation need not read them.
   * pw_len 0: none. Kept across attempts only by a kept view reused
   * without a copy (acquire_in). */
  unsigned char *pw;
  uint32_t pw_len, pw_cap;
  void *old[2]; /* buffers the installation replaced, to free */
  trep_t *rep;  /* (S4) a call outside transactions whose bytes the view's last record
                   ends with: where its ticket's failure goes; NULL: none (set by
                   op_write, cleared by write_ticket and view_put) */
  /* (S6) The end-of-data arrival the attempt's last read met (its
   * installation marks it gone), and the arrivals its installation took
   * out of the log, [atrim, aupto), to free after the commit. alast: the
   * arrival that its last read found or appended, where the next read
   * looks first (arrival_find). */
  arrival_t *eofm, *atrim, *aupto, *alast;
} view_t;

/* The views of the thread's attempts that have not ended yet (the running
 * one's, and a committed one's until its installation action has run), and
 * free nodes. */
static __thread view_t *tls_views;
static __thread view_t *tls_pool;
/* The view of the thread's last installation (S3, "kept views"): its
 * state is the installed state of version OWN_VER(own) of its stream, as
 * long as the stream's own still holds that value and its nmod is the
 * view's. Not in tls_views; NULL: none. */
static __thread view_t *tls_keep;
static __thread uint32_t tls_tag;
static __thread bool tls_pool_keyed;
static __thread sstm__esc_t tls_esc; /* (S9) this thread's lost attempts */
/* (S10) The stream this thread may keep (a hint: solo says whether it
 * does), solo's value while an attempt of the thread is in solo mode on
 * it; kept-view acquisitions in a row, and how many make the thread the
 * keeper (doubled when a keeping ends before a solo attempt of it worked:
 * its first one had to leave, or another thread handed the stream back;
 * back to SOLO_NEED0 when one did). */
static sstm_file_t solo_none; /* tls_k.solo's "none": never a stream, never NULL */
/* One block, initial-exec like the engine's descriptor pointer: the
 * calls on a kept stream read several of these, and in the shared library
 * the default model for a static thread-local calls __tls_get_addr at each
 * function that reads one; here the block's address is one load of the GOT
 * (an immediate in a static link). */
static __thread struct {
  sstm_file_t *solo;
  uint64_t solo_in;
  uint32_t solo_hits, solo_need;
  /* (S10) Solo attempts since the thread last became a keeper (solo_start). */
  uint32_t solo_run;
  /* (S11) This thread's keeping of solo came from a contended stream (a turn
   * holder with waiters, or a hand-over): it lasts a batch while others
   * wait, and survives an attempt that leaves solo mode in flight. The
   * keeper's attempts entered in solo mode while others waited. */
  bool solo_shared;
  uint32_t batch;
} tls_k __attribute__((tls_model("initial-exec"))) = {.solo = &solo_none};
/* SCHEDSTM_RANDOM_DELAY builds: a yield or a short sleep now and then
 * (sstm__os_random_delay, shift 6) between the steps of this layer's
 * protocols (the keeper word's claims and hand-backs, an acquisition's
 * count, load of solo and store of own, an installation, the lock of calls
 * outside transactions), so that the random-delay runs of the tests
 * (tests/internal/libc_stress.c) widen this layer's windows as the engine's
 * delay points widen the engine's. Nothing in other builds. */
#ifdef SSTM_CFG_RANDOM_DELAY
static __thread uint64_t tls_delay_rng;
static void delay_point(void) {
  uint64_t x = tls_delay_rng;
  if (x == 0) x = (uint64_t)(uintptr_t)&tls_delay_rng * 0x9e3779b97f4a7c15ull | 1;
  x ^= x << 13, x ^= x >> 7, x ^= x << 17; /* xorshift64 */
  tls_delay_rng = x;
  sstm__os_random_delay(x, 6);
}
#define DELAY() delay_point()
#else
#define DELAY() ((void)0)
#endif
/* (S11) When this thread last yielded a stream it kept for a batch
 * (solo_yield; sstm__now_ns): solo_wait's take-back. */
static __thread uint64_t tls_yield_t;
/* Test hooks (src/libc/esc.h): solo_start's, solo_wait's, and snapshot's
 * (called in SCHEDSTM_DEBUG builds only). NULL: nothing. */
void (*sstm__stdio_solo_start_hook)(const sstm_file_t *f);
void (*sstm__stdio_wait_hook)(const sstm_file_t *f, int hot);
void (*sstm__stdio_snapshot_hook)(const sstm_file_t *f);
static _Atomic uint32_t next_tag;
static pthread_key_t pool_key;
static pthread_once_t pool_once = PTHREAD_ONCE_INIT;

/* (S11) The threads that kept a stream for a batch and have not ended
 * or unregistered since: slot tag % LIVE_SLOTS holds the tag of the last
 * such thread with that remainder to keep a stream (a batch_keep that
 * finds another tag there stores its own), cleared at its end or
 * unregistration (live_end). A waiter that finds its keeper's tag no
 * longer there takes the stream at once instead of at the batch's
 * deadline (solo_wait): a thread that ended, or that unregistered and may
 * not come back for a long time, keeps nothing. A hint only: a take in C
 * or A is sound at any time (the deadline's take), and two live keepers
 * whose tags share a slot cost each other at most the rest of a batch
 * (the next keeping stores its tag again). live_exits counts the ends, so
 * that spinning waiters look again. The thread's end or unregistration
 * does not read its kept stream, which another thread may have closed and
 * freed since (tls_k.solo is a hint, compared, never dereferenced). */
#define LIVE_SLOTS 1024u
static _Atomic uint32_t live_tag[LIVE_SLOTS];
static _Atomic uint64_t live_exits;
static __thread bool tls_live;

/* (S11) This thread's keepings end for their waiters: its slot is
 * cleared and the end counted. At the thread's end (pool_free) and when
 * it unregisters (sstm_thread_exit, the engine's hook:
 * src/iface/libc_services.h), once for both: tls_live says whether the
 * slot was stored since this thread last cleared it. A thread that
 * registers again and keeps a stream again stores its tag again
 * (batch_keep), and its next unregistration or end clears it again. Until
 * then a keeping that survives the unregistration (its waiters had not
 * taken it yet) counts as ended: its first waiter takes it, in C or A, as
 * at the deadline (a hint, as above). */
static void live_end(void) {
  if (!tls_live) return;
  uint32_t me = tls_tag;
  /* relaxed: a hint (above); failing: a later keeper took the slot */
  atomic_compare_exchange_strong_explicit(&live_tag[me % LIVE_SLOTS], &me, 0, memory_order_relaxed,
                                          memory_order_relaxed);
  /* release: the slot's clearing before the count (solo_wait's acquire) */
  atomic_fetch_add_explicit(&live_exits, 1, memory_order_release);
  tls_live = false;
}

static void pool_free(void *unused) {
  (void)unused;
  live_end();
  if (tls_keep) {
    tls_keep->next = tls_pool;
    tls_pool = tls_keep;
    tls_keep = NULL;
  }
  while (tls_pool) {
    view_t *v = tls_pool;
    tls_pool = v->next;
    free(v->wst);
    free(v->rst);
    free(v->pw);
    free(v->r);
    free(v);
  }
}

static void pool_init(void) { (void)pthread_key_create(&pool_key, pool_free); }

/* Thread-local state read or written after a polled point of the same
 * function (the barriers of own, where an executor may switch the
 * transaction out and resume it on another worker) goes through a
 * function of its own, which computes the address on the thread that runs
 * it: a caller may otherwise keep the address it computed before the
 * switch, the previous worker's (docs/design/executor.md, "the address
 * of a thread-local variable must not be kept across a switch"; the TSan
 * build did so in acquire_in). */
static __attribute__((noinline)) uint32_t my_tag(void) {
  if (tls_tag == 0) /* relaxed: only uniqueness matters */
    tls_tag =
        (uint32_t)(atomic_fetch_add_explicit(&next_tag, 1, memory_order_relaxed) % OWN_TAG_MASK) +
        1;
  return tls_tag;
}

/* The thread's pool and kept view are freed at its exit (pool_free):
 * false if that cannot be arranged (pthread_setspecific failed). */
static bool pool_keyed(void) {
  if (!tls_pool_keyed) {
    pthread_once(&pool_once, pool_init);
    if (pthread_setspecific(pool_key, &tls_pool) != 0) return false;
    tls_pool_keyed = true;
  }
  return true;
}

static view_t *view_get(void) {
  view_t *v = tls_pool;
  if (v) {
    tls_pool = v->next;
    return v;
  }
  if (!pool_keyed()) return NULL;
  return calloc(1, sizeof(view_t));
}

/* Free the view's records. */
static inline void view_clear(view_t *v) {
  for (size_t i = 0; i < v->n; i++) {
    free(v->r[i].data);
    free(v->r[i].pre);
  }
  v->n = 0;
}

static void view_put(view_t *v) {
  view_clear(v);
  v->f = NULL, v->pw_len = 0, v->rep = NULL;
  v->next = tls_pool;
  tls_pool = v;
}

static inline void view_unlink(view_t *v) {
  if (__builtin_expect(tls_views == v, 1)) { /* the latest view: the common case */
    tls_views = v->next;
    return;
  }
  for (view_t **p = &tls_views; *p; p = &(*p)->next)
    if (*p == v) {
      *p = v->next;
      return;
    }
}

/* (S3, S10) After acquire_in's barriers: see my_tag. */
static __attribute__((noinline)) void solo_hits_reset(void) { tls_k.solo_hits = 0; }
static __attribute__((noinline)) bool solo_shared_now(void) { return tls_k.solo_shared; }

/* (S12) The views of a transaction whose descriptor is detached inside it
 * (an executor suspends it) go with the descriptor, and come back on the
 * thread that attaches it, where the transaction goes on and finds them
 * (view_find, fast_view) and its actions unlink them. Only the running
 * attempt's views are in tls_views then: a descriptor is detached inside
 * a transaction, not inside its actions, and every view of an earlier
 * detached transaction of this thread went with its descriptor. The
 * engine calls it (src/iface/libc_services.h); the other thread-local
 * state is the thread's, not the transaction's: the kept view (S3) is a
 * copy of an installed state, the pool holds free nodes. */
static void views_move(void **slot, bool out) {
  if (out) {
    *slot = tls_views;
    tls_views = NULL;
    return;
  }
  view_t *v = *slot, *t = v;
  *slot = NULL;
  if (v == NULL) return;
  /* This thread may never have made a view: it frees these at its exit
   * (they end in its pool or as its kept view). A failure leaves them to
   * the process's end, as a failed view_get would. */
  (void)pool_keyed();
  while (t->next != NULL)
    t = t->next;
  t->next = tls_views;
  tls_views = v;
}

static view_t *view_find(const sstm_file_t *f, uint64_t txid) {
  for (view_t *v = tls_views; v; v = v->next)
    if (v->f == f && v->txid == txid) return v;
  return NULL;
}

/* A record of len bytes at off, its data not yet filled. NULL: ENOMEM. */
static unsigned char *rec_add(view_t *v, uint64_t off, size_t len) {
  if (v->n == v->cap) {
    size_t nc = v->cap ? 2 * v->cap : 4;
    rec_t *nr = realloc(v->r, nc * sizeof *nr);
    if (nr == NULL) return NULL;
    v->r = nr, v->cap = nc;
  }
  unsigned char *d = malloc(len);
  if (d == NULL) return NULL;
  v->r[v->n++] = (rec_t){.off = off, .len = len, .data = d};
  return d;
}

/* ---- waiting ----------------------------------------------------------------- */

static void wake(_Atomic uint64_t *word, _Atomic uint32_t *waiters) {
  /* seq_cst: with the seq_cst store of the word before it and the waiter's
   * seq_cst increment of waiters then load of the word, one of the two sees
   * the other (store-load order, which acquire/release does not give). */
  if (atomic_load_explicit(waiters, memory_order_seq_cst) != 0) sstm__futex_wake_all(word);
}

/* The first steps of a wait for another thread's progress (a turn, an
 * installation, a ticket's writes): true after a pause (the first 64
 * steps: the other thread is running and nearly done) or a sched_yield()
 * (the next 16: with more threads than CPUs the other one is often
 * runnable on this CPU, and a yield hands the CPU over without the
 * wake-up a futex sleep costs the sleeper and the system call it costs
 * the releaser; docs/benchmarks-history.md, "One shared stream: waiting
 * for the turn with yields"); false from then on: the caller sleeps on a futex (a
 * long wait, e.g. for a descheduled thread). */
static inline bool wait_step(unsigned spin) {
  if (spin < 64) {
    __builtin_ia32_pause();
    return true;
  }
  if (spin < 64 + 16) {
    sched_yield();
    return true;
  }
  return false;
}

/* Wait until *word >= want (wait_step, then futex sleeps). Returns *word. */
static uint64_t wait_word(_Atomic uint64_t *word, _Atomic uint32_t *waiters, uint64_t want) {
  for (unsigned spin = 0;; spin++) {
    /* acquire: pairs with the release/seq_cst store of the word after the
     * work it publishes (the writes of a ticket, an installed state), so
     * what follows (a pread, the next writer, a copy) comes after it. */
    uint64_t a = atomic_load_explicit(word, memory_order_acquire);
    if (a >= want) return a;
    if (wait_step(spin)) continue;
    atomic_fetch_add_explicit(waiters, 1, memory_order_seq_cst);
    a = atomic_load_explicit(word, memory_order_seq_cst);
    if (a < want) sstm__futex_wait(word, (uint32_t)a, 1000000);
    atomic_fetch_sub_explicit(waiters, 1, memory_order_relaxed);
  }
}

static uint64_t wait_applied(sstm_file_t *f, uint64_t want) {
  return wait_word(&f->applied, &f->waiters, want);
}

/* Take the lock word *word (0: free) for the value me != 0: wait_step,
 * then futex sleeps on the holder's value. Not first come, first served:
 * whichever waiter runs when the word is free takes it, so that a waiter
 * that is not running (more threads than CPUs) delays nobody. */
static void word_take(_Atomic uint64_t *word, _Atomic uint32_t *waiters, uint64_t me) {
  for (unsigned spin = 0;; spin++) {
    uint64_t free_ = 0;
    /* acquire: pairs with word_give's store, so that what the taker does
     * next comes after what the previous holder did before giving it. */
    if (atomic_load_explicit(word, memory_order_relaxed) == 0 &&
        atomic_compare_exchange_weak_explicit(word, &free_, me, memory_order_acquire,
                                              memory_order_relaxed))
      return;
    if (wait_step(spin)) continue;
    /* seq_cst: the waiter's half of the handshake of wake() */
    atomic_fetch_add_explicit(waiters, 1, memory_order_seq_cst);
    uint64_t h = atomic_load_explicit(word, memory_order_seq_cst);
    if (h != 0) sstm__futex_wait(word, (uint32_t)h, 1000000);
    atomic_fetch_sub_explicit(waiters, 1, memory_order_relaxed);
  }
}

/* Give back a word that word_take took. */
static void word_give(_Atomic uint64_t *word, _Atomic uint32_t *waiters) {
  /* seq_cst: release for the next taker (acquire), and the store half of
   * the waiters handshake (see wake) */
  atomic_store_explicit(word, 0, memory_order_seq_cst);
  wake(word, waiters);
}

/* (S9) Take f's turn: wait_step, then futex sleeps. Not first come, first
 * served: whichever waiter runs when the turn is free takes it, so that
 * a waiter that is not running (more threads than CPUs) delays nobody.
 * The caller holds no turn (esc.h), so the wait ends once the holder's
 * attempt ends, and the holder's attempt never waits for a turn. */
static void turn_take(sstm_file_t *f) {
  /* The acquire of word_take orders this attempt's acquisition after the
   * previous holder's installation (the turn orders attempts only; own
   * and the barriers protect the data). */
  word_take(&f->q_turn, &f->q_waiters, 1);
  /* relaxed: only the holder of the turn writes it; tests read it after
   * joining the threads. */
  atomic_store_explicit(&f->q_taken, atomic_load_explicit(&f->q_taken, memory_order_relaxed) + 1,
                        memory_order_relaxed);
}

/* (S9) How long the holder of a turn waits for the acquisitions that went
 * first without it (turn_alone); tests set it (sstm__stdio_set_alone_ns). */
static _Atomic uint64_t alone_ns = 1000000;

void sstm__stdio_set_alone_ns(uint64_t ns) {
  atomic_store_explicit(&alone_ns, ns, memory_order_relaxed); /* relaxed: a tuning */
}

/* (S9) The holder of f's turn, before it touches own: wait until the
 * acquisitions of f that are in flight without the turn (they went first,
 * when nothing was in flight; not those that wait for the turn) have
 * ended, so that it does not meet their lock of own again. Meeting it is
 * a lost conflict for the holder, which the policy counts, and after
 * enough of them in a row it makes the attempt irrevocable (adaptive's
 * escalation). Called for a retry only (acquire_in).
 * Bounded: after alone_ns the holder goes on and meets the lock as before
 * (an attempt in flight may be descheduled, or suspended on a detached
 * descriptor). The others end without waiting for this one: they hold no
 * turn of f, and a turn holder takes no other turn (esc.h), so no wait
 * closes a cycle. */
static __attribute__((noinline)) void turn_alone(sstm_file_t *f) {
  uint64_t deadline = 0;
  for (unsigned spin = 0;; spin++) {
    /* In flight without the turn: the acquisitions counted in q_active
     * but neither waiting for the turn (q_queued) nor this one. relaxed: a
     * hint; own and the barriers keep the data correct whatever these
     * loads see, and a transient count only shortens or lengthens the
     * bounded wait. */
    int64_t active = atomic_load_explicit(&f->q_active, memory_order_relaxed);
    int64_t queued = atomic_load_explicit(&f->q_queued, memory_order_relaxed);
    if (active - queued <= 1) return;
    if (spin < 64) {
      __builtin_ia32_pause();
      continue;
    }
    uint64_t now = sstm__now_ns();
    if (deadline == 0)
      deadline = now + atomic_load_explicit(&alone_ns, memory_order_relaxed);
    else if (now >= deadline)
      return;
    sched_yield(); /* the attempt waited for may need this CPU */
  }
}

/* (S10) Defined with the rest of solo mode, below. */
static __attribute__((noinline)) void solo_revoke(sstm_file_t *f);
static __attribute__((noinline)) void solo_wait(sstm_file_t *f);
static __attribute__((noinline)) void solo_start(sstm_file_t *f);

/* (S9) The attempt's turn ends (at its installation, or at its end): it
 * is no longer in flight, one turn less of serial mode if it committed,
 * and the turn is free. */
static __attribute__((noinline)) void turn_give(sstm_file_t *f, bool committed);

static inline void turn_release(view_t *v, bool committed) {
  sstm_file_t *f = v->f;
  /* release: a call outside transactions that finds both counters zero
   * (ntx_lock, acquire) then works on the installed state and buffers in
   * place: this attempt's installation must happen before it. */
  if (v->active) {
    atomic_fetch_sub_explicit(&f->q_active, 1, memory_order_release);
    v->active = false;
  }
  if (v->peek) {
    atomic_fetch_sub_explicit(&f->q_peek, 1, memory_order_release);
    v->peek = false;
  }
  if (__builtin_expect(!v->turn, 1)) return;
  v->turn = false;
  turn_give(f, committed);
}

/* turn_release's hand-over of a turn that the attempt held. */
static __attribute__((noinline)) void turn_give(sstm_file_t *f, bool committed) {
  /* relaxed: a hint read by acquisitions (queue_busy); a concurrent
   * escalation's store of a full span may be lost to this one, which only
   * makes serial mode end a little earlier. */
  uint32_t left = atomic_load_explicit(&f->q_span, memory_order_relaxed);
  if (committed) atomic_store_explicit(&f->q_span, sstm__esc_span_next(left), memory_order_relaxed);
  word_give(&f->q_turn, &f->q_waiters);
}

/* (S8) enter()'s wait: take the count back, wait until the lock is free
 * (a spin, then futex sleeps), count again; returns the count before this
 * attempt's once the lock was seen free. */
static __attribute__((noinline)) uint32_t enter_wait(sstm_file_t *f, _Atomic uint32_t *ctr) {
  for (;;) {
    /* release: as in turn_release (this attempt read nothing yet) */
    atomic_fetch_sub_explicit(ctr, 1, memory_order_release);
    for (unsigned spin = 0; atomic_load_explicit(&f->nlk, memory_order_relaxed) != 0; spin++) {
      if (spin < 64) {
        __builtin_ia32_pause();
        continue;
      }
      /* seq_cst: the waiter's half of the handshake of wake() */
      atomic_fetch_add_explicit(&f->nwaiters, 1, memory_order_seq_cst);
      if (atomic_load_explicit(&f->nlk, memory_order_seq_cst) != 0)
        sstm__futex_wait(&f->nlk, 1, 1000000);
      atomic_fetch_sub_explicit(&f->nwaiters, 1, memory_order_relaxed);
    }
    uint32_t before = atomic_fetch_add_explicit(ctr, 1, memory_order_seq_cst); /* see enter */
    if (atomic_load_explicit(&f->nlk, memory_order_seq_cst) == 0) return before;
  }
}

/* (S8) Count an attempt that is about to read f's state in *ctr (q_active
 * for an acquisition, q_peek for a peek), after any call outside
 * transactions that holds f's lock: such a call works on the installed
 * state in place and waits for nothing, so this wait is short and closes
 * no cycle. Returns the count before this attempt's. */
static inline uint32_t enter(sstm_file_t *f, _Atomic uint32_t *ctr) {
  /* seq_cst, both: the attempt's half of a store-load handshake with
   * ntx_lock (which stores nlk, then loads the counters): either the lock
   * holder sees this count and leaves the stream alone, or this load sees
   * its lock. acquire/release would allow both to miss. The load also
   * acquires the holder's in-place work when it reads its release of nlk. */
  uint32_t before = atomic_fetch_add_explicit(ctr, 1, memory_order_seq_cst);
  if (__builtin_expect(atomic_load_explicit(&f->nlk, memory_order_seq_cst) == 0, 1)) return before;
  return enter_wait(f, ctr);
}

static inline void ntx_unlock(sstm_file_t *f) {
  /* seq_cst: release of the in-place work for the next attempt (enter's
   * load of nlk) or lock holder (ntx_lock's exchange), and the store half
   * of the waiters handshake (see wake). */
  atomic_store_explicit(&f->nlk, 0, memory_order_seq_cst);
  if (__builtin_expect(atomic_load_explicit(&f->nwaiters, memory_order_seq_cst) != 0, 0))
    sstm__futex_wake_all(&f->nlk);
}

/* (S8) ntx_lock's wait for another holder of the lock, then the lock. */
static __attribute__((noinline)) void ntx_lock_wait(sstm_file_t *f) {
  for (unsigned spin = 0;; spin++) {
    /* seq_cst: as in ntx_lock */
    if (atomic_load_explicit(&f->nlk, memory_order_relaxed) == 0 &&
        atomic_exchange_explicit(&f->nlk, 1, memory_order_seq_cst) == 0)
      return;
    if (spin < 64) {
      __builtin_ia32_pause();
      continue;
    }
    atomic_fetch_add_explicit(&f->nwaiters, 1, memory_order_seq_cst); /* see enter */
    if (atomic_load_explicit(&f->nlk, memory_order_seq_cst) != 0)
      sstm__futex_wait(&f->nlk, 1, 1000000);
    atomic_fetch_sub_explicit(&f->nwaiters, 1, memory_order_relaxed);
  }
}

/* (S8) Take f's lock for a call outside transactions, if no attempt has
 * the stream in flight (acquired or peeked, and not yet ended: installed
 * or rolled back). false: the call must run as a transaction of its own
 * (the lock is not held). Waits only for another lock holder, which waits
 * for nothing. */
static inline bool ntx_lock(sstm_file_t *f) {
  for (;;) {
    /* seq_cst: the holder's half of the handshake with enter() (this store
     * of nlk, then the loads of the counters below); acquire for the
     * previous holder's in-place work. */
    if (__builtin_expect(atomic_exchange_explicit(&f->nlk, 1, memory_order_seq_cst) != 0, 0))
      ntx_lock_wait(f);
    DELAY();
    /* seq_cst: see above; the loads also acquire the installations and
     * rollbacks that brought the counters to zero (turn_release). solo:
     * the loading half of solo_start's handshake, as in enter's callers,
     * and the acquire of a hand-over's release. */
    bool idle = atomic_load_explicit(&f->q_active, memory_order_seq_cst) == 0 &&
                atomic_load_explicit(&f->q_peek, memory_order_seq_cst) == 0;
    uint64_t so = atomic_load_explicit(&f->solo, memory_order_seq_cst);
    if (__builtin_expect(idle && so == 0, 1)) return true;
    ntx_unlock(f);
    if (!idle || so == 0) return false;
    /* (S10) Kept by a thread (this one too: outside transactions its solo
     * attempts have ended): wait for the keeper's attempt, take the
     * stream back, try again. */
    solo_revoke(f);
  }
}

bool sstm__stdio_ntx_lock(sstm_file_t *f) { return ntx_lock(f); }
void sstm__stdio_ntx_unlock(sstm_file_t *f) { ntx_unlock(f); }

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

/* The bytes of v's records (S4). */
static uint64_t recs_len(const view_t *v) {
  uint64_t n = 0;
  for (size_t i = 0; i < v->n; i++)
    n += v->r[i].len;
  return n;
}

/* write until n bytes; *done counts the bytes written (also on failure). */
static int write_all(int fd, const unsigned char *p, size_t n, uint64_t *done) {
  while (n > 0) {
    ssize_t r = sstm__stdio_sys->write(fd, p, n);
    if (r < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (r == 0) return EIO;
    p += r, n -= (size_t)r, *done += (uint64_t)r;
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

/* (S4) Write a regular file's records, all or nothing: the bytes each record
 * overwrites are read first; on a failure the records written so far are
 * restored and the file cut back to its size before the ticket. On an
 * O_APPEND descriptor (M_APP) the kernel puts every write at the file's
 * end, whatever its offset: a record overwrites nothing, and the file
 * grows by the lengths written. Its records' offsets (the append position)
 * count the bytes of an earlier failed ticket, which the file does not
 * hold: the size before a ticket is not the last record's end there. */
static int write_recs_reg(sstm_file_t *f, view_t *b) {
  bool app = (f->mode & M_APP) != 0;
  uint64_t kend0 = f->kend;
  /* kend counts this stream's writes only: another writer of the file
   * (another stream on it, another process) may have made it longer
   * since. A ticket that extends the file as kend says (every append)
   * takes its size from the kernel first, so that a failure restores that
   * writer's bytes under the records and does not cut them off; kend if
   * fstat fails. */
  for (size_t i = 0; i < b->n; i++)
    if (app || b->r[i].off + b->r[i].len > kend0) {
      struct stat st;
      if (sstm__stdio_sys->fstat(f->fd, &st) == 0) kend0 = (uint64_t)st.st_size;
      break;
    }
  uint64_t kend = kend0;
  for (size_t i = 0; i < b->n; i++) {
    rec_t *r = &b->r[i];
    if (!app && r->off < kend0) {
      uint64_t e = r->off + r->len < kend0 ? r->off + r->len : kend0;
      if (r->pre != NULL) { /* from the read window (pw_take) */
        if (!f->wfailed && r->prelen >= e - r->off) {
          r->prelen = (size_t)(e - r->off);
          continue;
        }
        /* it does not cover the bytes the file holds, or the window may
         * have shown a failed ticket's bytes (wfailed): read them */
        free(r->pre);
      }
      r->pre = malloc(e - r->off);
      if (r->pre == NULL) return ENOMEM;
      ssize_t got = pread_all(f->fd, r->pre, e - r->off, r->off);
      if (got == -EBADF) {
        /* A descriptor not open for reading (sstm_fdopen of a write-only
         * one, or a file sstm_fopen could not reopen for reading): the
         * committed bytes are written without undo bytes, so a write that
         * fails half-way cannot be undone here (docs/design/tm-libc.md
         * (S4)). Failing the ticket would lose the commit. */
        free(r->pre);
        r->pre = NULL, r->prelen = 0;
        continue;
      }
      if (got < 0) return (int)-got;
      r->prelen = (size_t)got;
    }
  }
  for (size_t i = 0; i < b->n; i++) {
    rec_t *r = &b->r[i];
    int err = pwrite_all(f->fd, r->data, r->len, r->off);
    if (err != 0) {
      bool grew = app;
      for (size_t j = i + 1; j-- > 0;) {
        if (b->r[j].prelen) (void)pwrite_all(f->fd, b->r[j].pre, b->r[j].prelen, b->r[j].off);
        grew |= b->r[j].off + b->r[j].len > kend0;
      }
      if (grew) (void)sstm__stdio_sys->ftruncate(f->fd, (off_t)kend0);
      f->kend = kend0;
      return err;
    }
    if (app)
      kend += r->len;
    else if (r->off + r->len > kend)
      kend = r->off + r->len;
  }
  f->kend = kend;
  return 0;
}

/* A byte stream's records, in order; *done: the bytes that reached the
 * kernel (they stay there when a later write fails, S6). */
static int write_recs_bytes(sstm_file_t *f, view_t *b, uint64_t *done) {
  *done = 0;
  for (size_t i = 0; i < b->n; i++) {
    int err = write_all(f->fd, b->r[i].data, b->r[i].len, done);
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

/* (S4) Write the view's records as ticket `ticket`, after every smaller
 * ticket. */
static void write_ticket(sstm_file_t *f, view_t *v, uint64_t ticket) {
  wait_applied(f, ticket - 1);
  /* seq_cst: ordered before the writes' system calls, and against the
   * readers' seq_cst load of started after their pread (S5). */
  atomic_store_explicit(&f->started, ticket, memory_order_seq_cst);
  uint64_t done = 0;
  int err = v->n == 0 ? 0 : f->reg ? write_recs_reg(f, v) : write_recs_bytes(f, v, &done);
  if (__builtin_expect(err != 0, 0)) {
    f->wfailed = true; /* the next writer reads it after applied's store below */
    if (v->rep != NULL) {
      /* The ticket holds the bytes of a call outside transactions, whose
       * commit this is: that call reports the failure when its sstm_run
       * returns (own_failed), once, and the next flush does not (werr
       * stays as it is). wmine keeps sstm_ferror set until the call has
       * set the indicator. relaxed: as set_werr's. */
      v->rep->err = err, v->rep->lost = recs_len(v) - done;
      atomic_fetch_add_explicit(&f->wmine, 1, memory_order_relaxed);
    } else {
      set_werr(f, err);
    }
  }
  v->rep = NULL; /* the call's frame ends with its sstm_run */
  /* seq_cst: release for the next writer and the readers (they acquire
   * it), and the store half of the waiters handshake (see wake). */
  atomic_store_explicit(&f->applied, ticket, memory_order_seq_cst);
  wake(&f->applied, &f->waiters);
}

/* (S6) The installation of a byte stream's view that read (from the log):
 * the end-of-data arrival it reported is gone, and the arrivals before
 * the installed position leave the log (never the last one: an append
 * stores its next). Exclusive, as every installation (S3). A stale view
 * may still walk them: they are freed after the commit, after the grace
 * period (view_commit), and their next pointers do not change. */
static void arrival_trim(view_t *v) {
  sstm_file_t *f = v->f;
  uint64_t pos = v->s.pos;
  /* relaxed: a view that copies this version reads it after its acquire
   * of iver, which the installation's release store follows; an older
   * view that misses it is stale (validate) */
  if (v->eofm) atomic_store_explicit(&v->eofm->gone, true, memory_order_relaxed), v->eofm = NULL;
  /* acquire: the arrivals' contents, published by the appends' release */
  arrival_t *h = atomic_load_explicit(&f->ahead, memory_order_acquire), *h0 = h, *n;
  while (h != NULL && (n = atomic_load_explicit(&h->next, memory_order_acquire)) != NULL &&
         (h->len != 0 ? h->pos + h->len <= pos
                      : h->pos < pos || atomic_load_explicit(&h->gone, memory_order_relaxed)))
    h = n;
  if (h == h0) return;
  /* release, pairs with the walkers' acquire loads of ahead: they see
   * either value, and every arrival they can reach is intact until the
   * grace period ends; the new head's contents were published to this
   * thread by the append's release (the acquire loads of next above),
   * and a walker that has not copied this version (a stale view, whose
   * acquire of iver does not order it after this installation) reaches
   * them only through this store, so it must be a release for that
   * walker to read them (relaxed, it would race with the appender's
   * writes in the memory model, whatever the hardware's dependencies) */
  atomic_store_explicit(&f->ahead, h, memory_order_release);
  v->atrim = h0, v->aupto = h;
}

/* install's work on the buffers, apart from its common case (no refilled
 * window, and no byte, or one byte that extends the installed bytes). */
static __attribute__((noinline)) void install_bufs(view_t *v) {
  if (v->reset) { /* a new write buffer, after the installed bytes if it fits */
    uint64_t at = v->s.woff + v->s.wlen;
    if (v->sw == 0) {
      v->s.woff = at;
    } else if (v->s.wbuf != 0 && at + v->sw <= v->f->bsz) {
      memcpy(WBUF(v->s) + at, v->wst, v->sw);
      v->s.woff = at;
    } else {
      v->old[0] = WBUF(v->s);
      v->s.wbuf = (uintptr_t)v->wst, v->s.woff = 0;
      v->wst = NULL, v->wst_cap = 0;
    }
  } else if (v->sw != 0) { /* extend the installed bytes: wcap kept them inside */
    memcpy(WBUF(v->s) + v->s.woff + v->cw, v->wst, v->sw);
  }
  if (v->rown && v->s.rlen != 0) { /* publish the refilled window */
    v->old[1] = (void *)(uintptr_t)v->s.rbuf;
    v->s.rbuf = (uintptr_t)v->rst;
    v->rst = NULL, v->rst_cap = 0;
  }
  if (v->rown && !v->f->reg) arrival_trim(v);
}

/* (S3) Install version ver + 1 from the view: the seqlock's writer. Only
 * the attempt that committed own = ver + 1 gets here, after version ver
 * was installed (it waited for it before copying), so installations are
 * exclusive and in version order. */
static __attribute__((noinline)) void batch_start(view_t *v);
static __attribute__((noinline)) void solo_handoff(sstm_file_t *f);

static inline __attribute__((always_inline)) void install(view_t *v, bool may_keep) {
  sstm_file_t *f = v->f;
  uint64_t nv = v->ver + 1;
  bool cold = v->cold;
  v->armed = false;
  /* relaxed, then a release fence: the odd value is ordered before the
   * state stores below, so that a view that read one of them and then
   * (after its acquire fence, snapshot) finds iver unchanged read none of
   * them. The buffers need no such care (see RBUF). */
  atomic_store_explicit(&f->iver, 2 * nv - 1, memory_order_relaxed);
  atomic_thread_fence(memory_order_release);
  DELAY();
  if (__builtin_expect(v->sw <= 1 && !v->rown, 1) && (v->sw == 0 || !v->reset)) {
    if (v->reset) /* nothing buffered: the next bytes go after the installed ones */
      v->s.woff += v->s.wlen;
    else if (v->sw) /* extend the installed bytes: wcap kept it inside */
      WBUF(v->s)[v->s.woff + v->cw] = v->wst[0];
  } else {
    install_bufs(v);
    cold = true;
  }
  uint64_t ticket = v->ticket ? v->ticket : v->n ? v->s.wseq + 1 : 0;
  v->s.wlen = v->cw + v->sw;
  if (ticket) v->s.wseq = ticket, cold = true;
  /* The cold fields of the view are the installed ones unless one changed:
   * the view's state was the installed one at its acquisition. */
  cs_store_hot(f, &v->s);
  if (__builtin_expect(cold, 0)) cs_store_cold(f, &v->s);
  /* seq_cst: release for the views that copy version nv (they acquire it),
   * and the store half of the waiters handshake (see wake). */
  atomic_store_explicit(&f->iver, 2 * nv, memory_order_seq_cst);
  wake(&f->iver, &f->iwaiters);
  DELAY();
  /* (S11) A turn holder that others wait behind may keep the stream for
   * a batch (before it gives the turn up: see batch_start). */
  if (__builtin_expect(v->turn, 0) && may_keep) batch_start(v);
  /* (S11) A keeper for a batch hands the stream over before its ticket's
   * writes, so that they overlap the next keeper's batch. */
  if (__builtin_expect(v->kept, 0) && ticket && may_keep) solo_handoff(f);
  /* (S9) The next acquirer can copy version nv now: its turn may begin
   * before this ticket's writes, which it waits for only to read. */
  turn_release(v, true);
  DELAY();
  if (ticket) write_ticket(f, v, ticket);
}

/* (S6) Free the arrivals from a up to b (not b) after the grace period:
 * a stale view may still read them. Their next pointers do not change. */
static void arrivals_free(arrival_t *a, const arrival_t *b) {
  while (a != b) {
    /* relaxed: stored before the installation that took a out */
    arrival_t *n = atomic_load_explicit(&a->next, memory_order_relaxed);
    sstm_free(a);
    a = n;
  }
}

/* This thread installed a version of f without keeping its view (S3): a
 * view it kept of f before is stale, and must not match own later. (Its
 * value of own cannot come back on f itself, but f's header may be freed
 * after a close and reused for another stream, where this thread could
 * install a version with the same number in the same way.) */
static void keep_forget(const sstm_file_t *f) {
  if (tls_keep != NULL && tls_keep->f == f) {
    view_put(tls_keep);
    tls_keep = NULL;
  }
}

/* After a commit (S3): install the view, and keep it as the thread's
 * view of the stream (tls_keep): its state is now the installed one. */
static inline void view_commit(view_t *v) {
  view_unlink(v);
  bool keep = v->armed && !v->closed;
  if (v->armed)
    install(v, true); /* releases the turn and the counts */
  else
    turn_release(v, true); /* committed without acquiring (a peek, EBADF) */
  sstm__esc_record(&tls_esc, v->f, true, false);
  /* After the grace period: views of earlier versions may still read them.
   * Here, not in install: this action runs outside any transaction. */
  if (__builtin_expect(v->old[0] != NULL || v->old[1] != NULL, 0)) {
    if (v->old[0]) sstm_free(v->old[0]);
    if (v->old[1]) sstm_free(v->old[1]);
    v->old[0] = v->old[1] = NULL;
  }
  if (__builtin_expect(v->atrim != NULL, 0)) arrivals_free(v->atrim, v->aupto), v->atrim = NULL;
  if (__builtin_expect(!keep, 0)) {
    /* closed: its header may be reused for another stream (a view that
     * was not armed installed nothing: a kept view of f stays good) */
    if (v->closed) keep_forget(v->f);
    view_put(v);
    return;
  }
  if (__builtin_expect(v->n != 0, 0)) view_clear(v); /* written by install */
  view_t *k = tls_keep;
  tls_keep = v;
  if (__builtin_expect(k != NULL, 0)) view_put(k); /* another stream's, or a peek's */
  if (v->hit) solo_start(v->f);                    /* (S10) */
}

/* After a rollback (S3): the attempt's state and bytes never become
 * visible. */
static __attribute__((noinline)) void view_drop(view_t *v) {
  view_unlink(v);
  if (__builtin_expect(v->revoke, 0)) {
    /* (S10) it met another thread's keeping and restarted: not a lost
     * stream; the retry begins once the stream is handed back. The views
     * registered before this one are dropped already (their turns
     * released: the wait holds none). */
    sstm_file_t *f = v->f;
    turn_release(v, false);
    view_put(v);
    DELAY();
    solo_wait(f);
    return;
  }
  if (v->peek && !v->armed) { /* a peek only: the stream was not lost */
    turn_release(v, false);
  } else {
    turn_release(v, false);
    /* (S9) Did it lose the stream? The attempt is rolled back: own holds
     * what committed transactions made of it. relaxed: a hint for the next
     * acquisition's choice, read outside any transaction (as sstm_fileno). */
    uint64_t now = OWN_VER(__atomic_load_n(&v->f->own, __ATOMIC_RELAXED));
    sstm__esc_record(&tls_esc, v->f, false, sstm__esc_lost_stream(v->armed, v->bad, v->ver, now));
  }
  view_put(v);
}

/* The attempt's action (sstm__on_end): install the view after a commit,
 * drop it after a rollback. */
static void view_end(void *p, bool committed) {
  if (__builtin_expect(committed, 1))
    view_commit(p);
  else
    view_drop(p);
}

/* (S2) Wait until the version of own value o is installed; returns iver.
 * That version may be this thread's own: committed by an attempt whose
 * installation action has not run yet, because an earlier commit action
 * of its transaction started the transaction that waits. Then install it
 * now (its action will find it done). */
static __attribute__((noinline)) uint64_t wait_iver_slow(sstm_file_t *f, uint64_t o) {
  uint64_t want = 2 * OWN_VER(o);
  if (((o >> 1) & OWN_TAG_MASK) == tls_tag)
    for (view_t *p = tls_views; p; p = p->next)
      if (p->f == f && p->armed && p->own == o) {
        install(p, false);
        keep_forget(f); /* see keep_forget */
        break;
      }
  return wait_word(&f->iver, &f->iwaiters, want);
}

static inline uint64_t wait_iver(sstm_file_t *f, uint64_t o) {
  /* acquire: as in wait_word */
  uint64_t iv = atomic_load_explicit(&f->iver, memory_order_acquire);
  if (__builtin_expect(iv >= 2 * OWN_VER(o), 1)) return iv;
  return wait_iver_slow(f, o);
}

/* (S2) Copy the installed state of own value o's version into s; restart
 * the attempt if a newer version is (being) installed: its read of own is
 * stale. */
static inline void snapshot(sstm_file_t *f, uint64_t o, cstate_t *s) {
  uint64_t want = 2 * OWN_VER(o);
  if (wait_iver(f, o) != want) sstm_restart();
#ifdef SSTM_CFG_DEBUG
  if (sstm__stdio_snapshot_hook != NULL) sstm__stdio_snapshot_hook(f);
#endif
  cs_load(f, s);
  /* acquire fence: the loads of the state above are ordered before the
   * load of iver below (the seqlock reader's second check, see install). */
  atomic_thread_fence(memory_order_acquire);
  if (atomic_load_explicit(&f->iver, memory_order_relaxed) != want) sstm_restart();
}

/* (S3) What a system call on the stream's descriptor returned belongs to
 * the view's version (the stream was not closed, its descriptor reused,
 * meanwhile): restart if a newer version has begun to be installed. Never
 * fails in an irrevocable attempt: no other commit happens during one. */
static void validate(const view_t *v) {
  /* acquire fence: the loads of the results (and the system call, a full
   * barrier on x86-64) come before the load of iver. */
  atomic_thread_fence(memory_order_acquire);
  if (atomic_load_explicit(&v->f->iver, memory_order_relaxed) != 2 * v->ver) sstm_restart();
}

/* ---- a stream kept by one thread (S10) ---------------------------------- */

#define CSL(f, fld) __atomic_load_n(&(f)->cs.fld, __ATOMIC_RELAXED)
#define CSS(f, fld, v) __atomic_store_n(&(f)->cs.fld, (v), __ATOMIC_RELAXED)

/* (S8, S10) The installed state changed in place: a kept view (S3) is
 * stale. relaxed: under nlk, published with the state by ntx_unlock's
 * release, or by a hand-over, published by its release of solo. */
static inline void nmod_bump(sstm_file_t *f) {
  atomic_store_explicit(&f->nmod, atomic_load_explicit(&f->nmod, memory_order_relaxed) + 1,
                        memory_order_relaxed);
}

/* solo: | keeper's tag (24 bits) | state (8) |, 0: no keeper. SOLO_C: no
 * attempt of the keeper is in solo mode on the stream, and the installed
 * state is the committed one; SOLO_A: the last one was rolled back, the
 * installed state holds its changes and sb_* the state before them;
 * SOLO_I: one is in flight (only the keeper's thread reads or writes the
 * installed state); SOLO_H: some thread is handing the stream back or
 * over, or (S11) a turn holder waits to begin a batch (batch_start);
 * SOLO_Y: the keeper yielded the stream to the threads that wait for it
 * (S11), and the installed state is the committed one. */
enum { SOLO_C = 1, SOLO_A = 2, SOLO_I = 3, SOLO_H = 4, SOLO_Y = 5 };
/* (S11) With the state: the keeping is for a batch (a contended stream);
 * without it, the keeper keeps the stream until someone needs it. */
#define SOLO_BATCH_BIT 0x10u
/* (S11) With a batch's state: threads wait for the keeper, so that the
 * keeper's test of its C value (solo_id) fails and its attempt takes the
 * rare path (solo_enter_rare), which counts the batch. Set by a waiter in
 * C or A (no attempt in flight), kept by the end marks of the attempts
 * that enter with it, and by a taker when others still wait. */
#define SOLO_WAIT_BIT 0x20u
#define SOLO_NOW(w) ((w) & ~(uint64_t)SOLO_WAIT_BIT)
#define SOLO_MAKE(tag, st) (((uint64_t)(tag) << 8) | (uint64_t)(st))
#define SOLO_TAG(w) ((uint32_t)((w) >> 8))
#define SOLO_ST(w) ((unsigned)((w)&0x0f))
#define SOLO_NEED0 2u      /* kept-view acquisitions in a row that make a keeper */
#define SOLO_NEEDMAX 1024u /* at most, after solo attempts that had to leave */

/* (S10) The fields a solo attempt changes (solo_write, solo_read), saved
 * before it and put back if it was rolled back: the position and the
 * write buffer's length at its start, the others (append position, the
 * write buffer's offset, the read window's length, which only some calls
 * change) before the first call that changes one (solo_save_rare). */
/* Whether the others were saved: the top bit of sb_wlen (a length below
 * 2^32), so that the save at an attempt's start clears it with the same
 * store. */
#define SB_RARE (1ull << 63)
static inline void solo_save(sstm_file_t *f) {
  f->sb_pos = CSL(f, pos), f->sb_wlen = CSL(f, wlen); /* SB_RARE clear */
}
static inline void solo_save_rare(sstm_file_t *f) {
  if (f->sb_wlen & SB_RARE) return;
  f->sb_apos = CSL(f, apos), f->sb_wbase = CSL(f, wbase), f->sb_rlen = CSL(f, rlen);
  f->sb_wlen |= SB_RARE;
}
static inline void solo_restore(sstm_file_t *f) {
  CSS(f, pos, f->sb_pos), CSS(f, wlen, f->sb_wlen & ~SB_RARE);
  if (f->sb_wlen & SB_RARE)
    CSS(f, apos, f->sb_apos), CSS(f, wbase, f->sb_wbase), CSS(f, rlen, f->sb_rlen);
}

/* ---- a contended stream kept for a batch (S11) ----------------------------- */

/* (S11) A keeper that others wait for yields after SOLO_BATCH of its
 * attempts (entered in solo mode while others waited) or batch_ns after
 * the first of them began to wait, whichever comes first; a waiter that
 * has seen SOLO_STARVE hand-overs to others during its wait takes a
 * ticket, and while tickets are out only the holder of the oldest one
 * takes the stream. docs/design/tm-libc.md (S11) and docs/benchmarks.md
 * ("One shared stream kept for a batch") say why these values. Tests
 * change them (sstm__stdio_set_batch). */
#define SOLO_BATCH 4096u
#define SOLO_BATCH_NS 100000u
#define SOLO_STARVE 2u
/* (S11) A keeper hands f over at the installation of an attempt with a
 * ticket (solo_handoff) only after this many attempts of its batch, so
 * that a stream whose every transaction writes a record (after a seek)
 * still gets batches. */
#define SOLO_HANDOFF_MIN 64u
/* (S11) A keeper that yielded takes the stream back when no other waiter
 * took it within this many nanoseconds (solo_wait): a waiter that runs
 * sees a yield within a microsecond or two. */
#define SOLO_BACK_NS 5000u
/* UINT32_MAX: no keeping for a batch, a contended stream stays in serial
 * mode (S9); tests set it (sstm__stdio_set_batch). */
static _Atomic uint32_t batch_n = SOLO_BATCH;
static _Atomic uint64_t batch_ns = SOLO_BATCH_NS;
/* For tests: the most attempts a keeper entered in one batch while others
 * waited, and the most hand-overs to others that a waiter saw after it
 * took its ticket (both process-wide maxima). */
static _Atomic uint64_t stat_batch_max, stat_ticket_max;

void sstm__stdio_set_batch(uint32_t n, uint64_t ns) {
  /* relaxed: tunings, read as hints */
  atomic_store_explicit(&batch_n, n ? n : SOLO_BATCH, memory_order_relaxed);
  atomic_store_explicit(&batch_ns, ns ? ns : SOLO_BATCH_NS, memory_order_relaxed);
}

void sstm__stdio_batch_stats(uint64_t *batch_max, uint64_t *ticket_max, int reset) {
  /* relaxed: tests read them after joining their threads */
  *batch_max = atomic_load_explicit(&stat_batch_max, memory_order_relaxed);
  *ticket_max = atomic_load_explicit(&stat_ticket_max, memory_order_relaxed);
  if (reset) {
    atomic_store_explicit(&stat_batch_max, 0, memory_order_relaxed);
    atomic_store_explicit(&stat_ticket_max, 0, memory_order_relaxed);
  }
}

uint64_t sstm__stdio_takes(const sstm_file_t *f) {
  return atomic_load_explicit(&f->s_takes, memory_order_relaxed); /* relaxed: tests */
}

void sstm__stdio_yields(const sstm_file_t *f, uint64_t *yields, uint64_t *backs) {
  *yields = atomic_load_explicit(&f->s_yields, memory_order_relaxed); /* relaxed: tests */
  *backs = atomic_load_explicit(&f->s_backs, memory_order_relaxed);
}

/* (S11) Tests: solo_wait's hook, once the keeper knows that others wait
 * (the waiting bit): in a round of a waiter's loop where it spins (hot: 1,
 * counted in s_hot), and before it yields the CPU or sleeps (hot: 0, not
 * counted). */
static inline void wait_hook(const sstm_file_t *f, int hot) {
  if (__builtin_expect(sstm__stdio_wait_hook != NULL, 0)) sstm__stdio_wait_hook(f, hot);
}

static void stat_max(_Atomic uint64_t *m, uint64_t x) {
  /* relaxed: a statistic */
  uint64_t o = atomic_load_explicit(m, memory_order_relaxed);
  while (o < x && !atomic_compare_exchange_weak_explicit(m, &o, x, memory_order_relaxed,
                                                         memory_order_relaxed)) {
  }
}

/* (S11) The keeper of solo value w (a batch's C or A) has ended
 * (live_tag). relaxed: a hint; batch_keep's store of the slot came before
 * the release store of solo that the caller's acquire load read. */
static inline bool keeper_ended(uint64_t w) {
  uint32_t t = SOLO_TAG(w);
  return atomic_load_explicit(&live_tag[t % LIVE_SLOTS], memory_order_relaxed) != t;
}

uint32_t sstm__stdio_tag(void) { return my_tag(); }
bool sstm__stdio_tag_live(uint32_t tag) { return !keeper_ended(SOLO_MAKE(tag, SOLO_C)); }
uint64_t sstm__stdio_live_exits(void) {
  return atomic_load_explicit(&live_exits, memory_order_relaxed); /* relaxed: tests */
}

/* (S11) Can f be kept at all (as solo_start's first test). */
static inline bool solo_ok(const sstm_file_t *f) {
  return f->reg && !(f->mode & M_LBF) && f->bsz != 0;
}

/* (S11) solo changed in a way the waiters wait for (a yield, or the end of
 * the keeping): move s_gen on and wake the sleepers. */
static void solo_signal(sstm_file_t *f) {
  /* seq_cst: the store half of the waiters' handshake (see wake): solo
   * was stored before, the waiter loads s_gen before solo */
  atomic_fetch_add_explicit(&f->s_gen, 1, memory_order_seq_cst);
  if (atomic_load_explicit(&f->s_sleep, memory_order_seq_cst) != 0) sstm__futex_wake_all(&f->s_gen);
}

/* (S11) A batch of f begins now: its deadline (solo_batch, solo_wait). */
static void batch_deadline(sstm_file_t *f) {
  /* relaxed: a tuning, and a hint */
  uint64_t ns = atomic_load_explicit(&batch_ns, memory_order_relaxed);
  atomic_store_explicit(&f->s_dead, sstm__now_ns() + ns, memory_order_relaxed);
}

/* (S11) This thread becomes f's keeper for a batch: from a turn holder's
 * installation (batch_start) or a hand-over (solo_wait), with solo at its
 * H value. Stores its C, with the waiting bit when others wait (self: 1
 * when this thread is itself counted in s_want, a waiter that took f). */
static void batch_keep(sstm_file_t *f, uint32_t me, uint32_t self) {
  /* (S11) This keeping's thread is live, and its end will be known
   * (live_tag; live_end runs at its end or unregistration): the slot
   * holds its tag, stored at its first keeping (also the first after an
   * unregistration) and again at a keeping that finds another keeper's
   * tag there (one whose tag shares the slot; without the store again
   * this thread would count as ended for the rest of its life).
   * relaxed, both: the release store of solo below publishes the slot to
   * the waiters that see this keeping. Without the key
   * (pthread_setspecific failed) its keepings end at a waiter's first
   * look, as an ended thread's. */
  if (__builtin_expect(atomic_load_explicit(&live_tag[me % LIVE_SLOTS], memory_order_relaxed) != me,
                       0) &&
      pool_keyed()) {
    atomic_store_explicit(&live_tag[me % LIVE_SLOTS], me, memory_order_relaxed);
    tls_live = true;
  }
  tls_k.solo = f, tls_k.solo_in = SOLO_MAKE(me, SOLO_I | SOLO_BATCH_BIT), tls_k.solo_run = 0;
  tls_k.solo_shared = true, tls_k.batch = 0;
  batch_deadline(f);
  /* relaxed: a hint; the waiters that this load misses set the bit
   * themselves (solo_wait) */
  uint32_t others = atomic_load_explicit(&f->s_want, memory_order_relaxed) - self;
  DELAY();
  /* release: the state f was put in before this store (a hand-over's
   * restore, an installation) before this thread's next attempt's CAS and
   * before the acquire loads of solo of the other users (solo_wait's take) */
  atomic_store_explicit(&f->solo,
                        SOLO_MAKE(me, SOLO_C | SOLO_BATCH_BIT | (others ? SOLO_WAIT_BIT : 0)),
                        memory_order_release);
}

/* (S11) The turn holder of view v, at its installation (before it gives
 * up the turn and its count): when others wait for the turn, it keeps the
 * stream for a batch. It first moves solo from 0 to its H value (seq_cst,
 * as solo_start's store): an acquisition or peek counted after that loads
 * solo after this CAS and restarts; the acquisitions waiting for the turn
 * (q_queued) load solo again once they have it (acquire_in), which this
 * thread gives up only after the CAS. It then waits, briefly, until the
 * others in flight have ended or wait for the turn, and no peek or call
 * outside transactions is under way (the loads of the counters: active
 * first, queued second, so that one that moves from the first to the
 * second in between is not missed). Only then does solo become its C: H
 * during the wait keeps the waiters from taking the stream (solo_wait
 * takes Y, C or A) while an attempt that loaded solo before the CAS may
 * still work on the installed state; the keeping exists once C is
 * stored. If the others do not end in time, it withdraws (solo back to 0:
 * nobody else moves solo out of this H) and wakes the threads that met
 * the keeping meanwhile. The wait closes no cycle: the attempts in flight
 * wait for no turn holder (esc.h), an irrevocable one that meets H waits
 * for this bounded wait (solo_revoke), and it is bounded. */
static __attribute__((noinline)) void batch_start(view_t *v) {
  sstm_file_t *f = v->f;
  /* relaxed: hints; the handshake decides */
  if (v->closed || !solo_ok(f) || atomic_load_explicit(&f->q_queued, memory_order_relaxed) == 0 ||
      atomic_load_explicit(&f->solo, memory_order_relaxed) != 0 ||
      atomic_load_explicit(&batch_n, memory_order_relaxed) == UINT32_MAX /* tests: off */ ||
      sstm__attempt_suspendable()) /* (S12) */
    return;
  for (const view_t *p = tls_views; p; p = p->next)
    if (p->f == f) return; /* another attempt of this thread has f in flight */
  uint32_t me = my_tag();
  uint64_t z = 0;
  DELAY();
  /* seq_cst: the keeper's half of solo_start's handshake (this store of
   * solo, then the loads of the counters below). Failing: another keeping
   * began meanwhile. */
  if (!atomic_compare_exchange_strong_explicit(&f->solo, &z, SOLO_MAKE(me, SOLO_H | SOLO_BATCH_BIT),
                                               memory_order_seq_cst, memory_order_relaxed))
    return;
  for (unsigned spin = 0;; spin++) {
    uint32_t act = atomic_load_explicit(&f->q_active, memory_order_seq_cst);
    DELAY();
    uint32_t queued = atomic_load_explicit(&f->q_queued, memory_order_seq_cst);
    if (act - 1 == queued && atomic_load_explicit(&f->q_peek, memory_order_seq_cst) == 0 &&
        atomic_load_explicit(&f->nlk, memory_order_seq_cst) == 0)
      break;
    if (!wait_step(spin)) {
      /* release: nothing was changed in place; as solo_revoke's store */
      atomic_store_explicit(&f->solo, 0, memory_order_release);
      solo_signal(f);
      return;
    }
  }
  batch_keep(f, me, 0);
  solo_signal(f); /* the waiters that met H look again */
}

static bool solo_yield(sstm_file_t *f, uint64_t w, uint64_t n);

/* (S11) Whether a waiter for f spins now, so that a yield would be taken
 * at once. A waiter that is in sched_yield or asleep, with more threads
 * than CPUs, may not run again for a time slice or more: the stream would
 * stay idle until it does (or until the keeper takes it back,
 * solo_wait). Without one, the keeper begins its next batch instead of
 * yielding; a waiter that runs is counted here again within a few
 * microseconds, and gets the stream at the batch's end. relaxed: a hint
 * (a waiter counted a moment too late waits one batch more). */
static inline bool solo_ready(const sstm_file_t *f) {
  return atomic_load_explicit(&f->s_hot, memory_order_relaxed) != 0;
}

/* (S11) A waiter of f begins (on) or ends (off) a spell of spinning. */
static inline void solo_hot(sstm_file_t *f, bool *hot, bool on) {
  if (*hot == on) return;
  *hot = on;
  /* relaxed: a hint (solo_ready) */
  if (on)
    atomic_fetch_add_explicit(&f->s_hot, 1, memory_order_relaxed);
  else
    atomic_fetch_sub_explicit(&f->s_hot, 1, memory_order_relaxed);
}

/* (S11) solo_enter's test while others wait for f (s_want): one more
 * attempt of the batch, or the batch is over and the keeper yields: f
 * (solo value w, C or A: no attempt of the keeper in flight) is put back
 * to its committed state, kept views learn that it changed, and solo
 * becomes Y, which a waiter takes. true: the attempt must not work in
 * place (it goes the general way, meets Y, restarts and waits behind the
 * others, solo_meet). */
static __attribute__((noinline)) bool solo_batch(sstm_file_t *f, uint64_t w) {
  uint32_t n = atomic_load_explicit(&batch_n, memory_order_relaxed); /* relaxed: a tuning */
  /* the clock every 16 attempts (a call of some 20 ns) */
  if (++tls_k.batch <= n && /* this attempt is not the n + 1st */
      ((tls_k.batch & 15) != 0 ||
       sstm__now_ns() < atomic_load_explicit(&f->s_dead, memory_order_relaxed))) /* a hint */
    return false;
  if (!solo_ready(f)) { /* nobody could take it now: the next batch begins */
    stat_max(&stat_batch_max, tls_k.batch - 1);
    tls_k.batch = 1; /* this attempt, the next batch's first */
    batch_deadline(f);
    return false;
  }
  return solo_yield(f, w, tls_k.batch - 1);
}

/* (S11) The keeper yields f (solo value w, its C or A) to the threads that
 * wait for it, after n attempts of its batch: f is put back to its
 * committed state, kept views learn that it changed, and solo becomes Y,
 * which a waiter takes. true, also when a waiter took f at its deadline
 * meanwhile (the CAS fails). */
static bool solo_yield(sstm_file_t *f, uint64_t w, uint64_t n) {
  stat_max(&stat_batch_max, n);
  tls_k.solo = &solo_none, tls_k.solo_shared = false;
  /* acquire: as solo_enter's CAS. Failing: a waiter took f at its
   * deadline (solo_wait), which this attempt meets as it goes on. */
  if (!atomic_compare_exchange_strong_explicit(&f->solo, &w,
                                               SOLO_MAKE(tls_tag, SOLO_H | SOLO_BATCH_BIT),
                                               memory_order_acquire, memory_order_relaxed))
    return true;
  DELAY();
  if (SOLO_ST(w) == SOLO_A) solo_restore(f);
  nmod_bump(f);
  tls_yield_t = sstm__now_ns();
  atomic_fetch_add_explicit(&f->s_yields, 1, memory_order_relaxed); /* relaxed: a count */
  /* release: the state above before the taker (solo_wait's acquire) */
  atomic_store_explicit(&f->solo, SOLO_MAKE(tls_tag, SOLO_Y | SOLO_BATCH_BIT),
                        memory_order_release);
  solo_signal(f);
  return true;
}

/* (S11) At the installation of a keeper's attempt that left solo mode and
 * has bytes to write (a ticket): hand f over now if others wait, so that
 * the ticket's writes overlap the next keeper's batch. The end mark has
 * stored C already (before the actions). */
static __attribute__((noinline)) void solo_handoff(sstm_file_t *f) {
  if (tls_k.solo != f || !tls_k.solo_shared || tls_k.batch < SOLO_HANDOFF_MIN || !solo_ready(f))
    return;
  /* relaxed: the CAS in solo_yield decides; others wait (the bit) */
  uint64_t w = atomic_load_explicit(&f->solo, memory_order_relaxed);
  if (w == ((tls_k.solo_in - (SOLO_I - SOLO_C)) | SOLO_WAIT_BIT))
    (void)solo_yield(f, w, tls_k.batch);
}

/* (S11) This thread's committed attempts whose installation of f is still
 * to come (this thread runs an action of one of them): install them now,
 * as wait_iver_slow does, so that no waiter for that installation waits
 * for this thread. */
static void install_pending(sstm_file_t *f) {
  for (view_t *p = tls_views; p; p = p->next)
    if (p->f == f && p->armed) {
      install(p, false);
      keep_forget(f); /* see keep_forget */
    }
}

/* (S11) The wait of a rolled-back attempt that met another thread's keeping
 * of f (view_drop): it holds no turn, no count and no view. It waits until
 * the keeper yields (Y) or its batch's deadline has passed with no solo
 * attempt in flight (C or A: the keeper is slow, or stopped using f), and
 * then takes f over as its keeper, or until nobody keeps f (0). Takes are
 * in ticket order while tickets are out (a waiter passed over SOLO_STARVE
 * times takes one); the keeper that yielded takes f back only when nobody
 * else waits. The take puts back a rolled-back attempt's changes (A) and
 * waits until the version that the keeper's last attempt committed, if it
 * left solo mode in flight (solo_leave), is installed. Waits: pauses,
 * yields, then sleeps on s_gen until the deadline. Closes no cycle: the
 * keeper's attempts wait for no stream's hand-over (S10), and this
 * thread's own pending installation of f is done first. */
static __attribute__((noinline)) void solo_wait(sstm_file_t *f) {
  if (!solo_ok(f)) {
    solo_revoke(f);
    return;
  }
  install_pending(f);
  uint32_t me = my_tag();
  uint64_t ns = atomic_load_explicit(&batch_ns, memory_order_relaxed); /* relaxed: a tuning */
  /* relaxed: hints (the keeper's test of its batch, the deadline) */
  if (atomic_fetch_add_explicit(&f->s_want, 1, memory_order_relaxed) == 0)
    atomic_store_explicit(&f->s_dead, sstm__now_ns() + ns, memory_order_relaxed);
  uint64_t t0 = atomic_load_explicit(&f->s_takes, memory_order_relaxed); /* relaxed: a count */
  uint64_t tk0 = 0; /* s_takes when this waiter had been passed over SOLO_STARVE times */
  bool starved = false, ticketed = false;
  unsigned wspin = 0;
  uint32_t ticket = 0;
  bool hot = false; /* counted in s_hot */
  for (;;) {
    solo_hot(f, &hot, true);
    /* acquire, both: s_gen before solo (the waiters' handshake, see
     * solo_signal); solo pairs with the release stores of a yield, an end
     * mark, a hand-over */
    uint64_t g = atomic_load_explicit(&f->s_gen, memory_order_acquire);
    /* acquire: pairs with the release of an ended thread's count (its
     * slot cleared before it): when the wait below begins with this
     * count, keeper_ended saw that thread's end, or the wait sees the
     * count move */
    uint64_t ends = atomic_load_explicit(&live_exits, memory_order_acquire);
    uint64_t w = atomic_load_explicit(&f->solo, memory_order_acquire);
    if (w == 0) break;
    if (!(w & SOLO_BATCH_BIT)) { /* kept until someone needs it: hand it back (S10) */
      solo_revoke(f);
      break;
    }
    unsigned st = SOLO_ST(w);
    /* relaxed: counts; the tickets' order is decided by the fetch_add */
    uint64_t takes = atomic_load_explicit(&f->s_takes, memory_order_relaxed);
    if (!starved && takes - t0 >= SOLO_STARVE) {
      starved = true, tk0 = takes;
      ticket = atomic_fetch_add_explicit(&f->s_tick, 1, memory_order_relaxed);
      ticketed = true;
    }
    /* acquire: pairs with the previous ticket holder's release of s_serve */
    uint32_t serve = atomic_load_explicit(&f->s_serve, memory_order_acquire);
    bool mine = ticketed ? serve == ticket
                         : serve == atomic_load_explicit(&f->s_tick, memory_order_relaxed);
    uint64_t now = 0, dead = atomic_load_explicit(&f->s_dead, memory_order_relaxed);
    bool take = false, back = false;
    if (mine && st == SOLO_Y)
      take = SOLO_TAG(w) != me || atomic_load_explicit(&f->s_want, memory_order_relaxed) == 1;
    else if (st == SOLO_C || st == SOLO_A) /* the deadline, or a keeper that ended */
      take = mine && ((now = sstm__now_ns()) >= dead || keeper_ended(w));
    if (!take && st == SOLO_Y && SOLO_TAG(w) == me && !ticketed) {
      /* This thread's own yield (the only one with its tag while it
       * waits), untaken SOLO_BACK_NS after it: the others that wait are
       * not running (more threads than CPUs), or the holder of the oldest
       * ticket is not. This thread, which runs, takes the stream back for
       * a new batch instead of leaving it idle until one of them runs (as
       * whichever waiter runs takes the turn, S9). Not a hand-over to
       * another thread: neither counted in s_takes nor against the
       * tickets (a ticket holder that runs takes a yield within
       * SOLO_BACK_NS). Not when this waiter holds a ticket itself: it
       * takes in its order. */
      now = sstm__now_ns();
      take = back = now - tls_yield_t >= SOLO_BACK_NS;
    }
    /* acquire on success: as the load of solo */
    uint64_t seen = w; /* a failed CAS must not change w (used below) */
    if (take) DELAY();
    if (take && atomic_compare_exchange_strong_explicit(
                    &f->solo, &seen, SOLO_MAKE(me, SOLO_H | SOLO_BATCH_BIT), memory_order_acquire,
                    memory_order_relaxed)) {
      DELAY();
      if (st == SOLO_A) solo_restore(f);
      /* The keeper's last attempt may have left solo mode (solo_leave)
       * and committed a version whose installation follows its end mark.
       * relaxed: own's committed value came before the mark's release. */
      uint64_t o = __atomic_load_n(&f->own, __ATOMIC_RELAXED);
      if (!(o & OWN_CLOSED)) wait_word(&f->iver, &f->iwaiters, 2 * OWN_VER(o));
      nmod_bump(f);
      if (starved) stat_max(&stat_ticket_max, takes - tk0);
      if (ticketed) {
        /* release: the next ticket holder's take after this one */
        atomic_store_explicit(&f->s_serve, ticket + 1, memory_order_release);
        ticketed = false;
      }
      /* relaxed: counts */
      atomic_fetch_add_explicit(back ? &f->s_backs : &f->s_takes, 1, memory_order_relaxed);
      batch_keep(f, me, 1); /* this waiter is counted in s_want until it leaves */
      break;
    }
    /* Not taken: the keeper must know that others wait (the bit, which
     * sends its attempts to the rare path that counts the batch). Set it
     * in C or A, when no attempt of the keeper is in flight (an attempt
     * that entered without it would store C or A without it at its end);
     * until then, watch solo for a while (then the deadline's take covers
     * a keeper that does not come back). */
    if (!(w & SOLO_WAIT_BIT) && wspin++ < 256) {
      /* relaxed: the keeper's next attempt reads it with its CAS */
      uint64_t e = w; /* the value seen: C or A of this keeping, never 0 */
      if (st == SOLO_C || st == SOLO_A)
        atomic_compare_exchange_strong_explicit(&f->solo, &e, w | SOLO_WAIT_BIT,
                                                memory_order_relaxed, memory_order_relaxed);
      __builtin_ia32_pause();
      continue;
    }
    /* Not taken: wait until s_gen moves (a yield, the end of the keeping)
     * or the deadline passes, without touching solo's line (the keeper's):
     * pauses, with a yield every 64 (a keeper on this CPU runs), for about
     * four batches (a waiter asleep when the keeper yields would cost the
     * hand-over its wake-up), then sleeps on s_gen. */
    if (w & SOLO_WAIT_BIT) wait_hook(f, 1); /* spinning, and the keeper knows it waits */
    if (now == 0) now = sstm__now_ns();
    uint64_t until = dead > now + 5000 ? dead : now + 5000;
    if (st == SOLO_Y && SOLO_TAG(w) == me && until > tls_yield_t + SOLO_BACK_NS)
      until = tls_yield_t + SOLO_BACK_NS; /* its own yield: the take-back */
    for (unsigned k = 1;; k++) {
      if (atomic_load_explicit(&f->s_gen, memory_order_relaxed) != g) break; /* relaxed: a hint */
      if (k % 64 != 0) {
        __builtin_ia32_pause();
        continue;
      }
      uint64_t t = sstm__now_ns();
      if (t >= until) break;
      /* relaxed: a hint; a thread ended, perhaps the keeper (keeper_ended) */
      if (atomic_load_explicit(&live_exits, memory_order_relaxed) != ends) break;
      solo_hot(f, &hot, false); /* may not run for a while */
      if (w & SOLO_WAIT_BIT) wait_hook(f, 0);
      if (t - now < 4 * ns) {
        sched_yield();
        solo_hot(f, &hot, true);
        continue;
      }
      /* seq_cst: the waiter's half of the handshake of solo_signal */
      atomic_fetch_add_explicit(&f->s_sleep, 1, memory_order_seq_cst);
      if (atomic_load_explicit(&f->s_gen, memory_order_seq_cst) == g)
        sstm__futex_wait(&f->s_gen, (uint32_t)g, until - t);
      atomic_fetch_sub_explicit(&f->s_sleep, 1, memory_order_relaxed);
      solo_hot(f, &hot, true);
    }
  }
  solo_hot(f, &hot, false);
  if (ticketed) { /* f is kept no more: pass the ticket on, in order */
    for (unsigned spin = 0; atomic_load_explicit(&f->s_serve, memory_order_acquire) != ticket;
         spin++)
      if (!wait_step(spin)) sched_yield();
    atomic_store_explicit(&f->s_serve, ticket + 1, memory_order_release); /* as above */
  }
  atomic_fetch_sub_explicit(&f->s_want, 1, memory_order_relaxed); /* relaxed: a hint */
}

/* (S10) End f's keeping, once no solo attempt is in flight: the installed
 * state becomes what the keeper's transactions committed (a rolled-back
 * attempt's changes undone), kept views see that it changed (nmod), and
 * solo is free. Returns when f has no keeper. A thread never calls it
 * while its own solo attempt on f is in flight (solo_leave does that
 * case); it waits only for another thread's solo attempt to end, which
 * itself waits for no stream (the keeper's in-place calls wait for
 * nothing, and an attempt with an end mark does not become irrevocable in
 * place: src/iface/libc_services.h), and for another hand-over, a few
 * stores. */
static __attribute__((noinline)) void solo_revoke(sstm_file_t *f) {
  for (unsigned spin = 0;; spin++) {
    /* acquire: pairs with the end mark's release store (the keeper's
     * attempt and its in-place changes before it) and with a hand-over's
     * release of 0 */
    uint64_t w = atomic_load_explicit(&f->solo, memory_order_acquire);
    if (w == 0) return;
    unsigned st = SOLO_ST(w);
    /* acquire on success: as the load; whoever moves solo out of C or A
     * first hands over (the keeper's next attempt would move it to I) */
    if ((st == SOLO_C || st == SOLO_A || st == SOLO_Y) &&
        atomic_compare_exchange_strong_explicit(&f->solo, &w, SOLO_MAKE(SOLO_TAG(w), SOLO_H),
                                                memory_order_acquire, memory_order_relaxed)) {
      DELAY();
      if (st == SOLO_A) solo_restore(f);
      nmod_bump(f);
      DELAY();
      /* release: the state above before the stream's next user (which
       * loads solo with acquire or seq_cst order before it reads it) */
      atomic_store_explicit(&f->solo, 0, memory_order_release);
      solo_signal(f); /* (S11) the waiters retry */
      return;
    }
    /* The keeper's attempt runs (SOLO_I) or another thread hands over:
     * pauses, yields, then sleeps of 50 us (the end mark wakes nobody). */
    if (!wait_step(spin)) {
      struct timespec ts = {0, 50000};
      nanosleep(&ts, NULL);
    }
  }
}

/* (S10) solo_enter_rare's cases other than the keeper's C or A: f is being
 * handed back (-1), or is not kept by this thread any more (another
 * thread handed it back): this thread keeps it again only after more
 * kept-view commits. */
static __attribute__((noinline)) int solo_miss(uint64_t w) {
  if (SOLO_TAG(w) != tls_tag) {
    tls_k.solo = &solo_none, tls_k.solo_shared = false;
    /* from SOLO_NEED0 when an earlier solo attempt of the keeping worked */
    uint32_t need = tls_k.solo_run > 1 ? SOLO_NEED0 : tls_k.solo_need;
    tls_k.solo_need = need < SOLO_NEEDMAX ? 2 * need : SOLO_NEEDMAX;
  }
  return -1;
}

/* (S10) The running attempt, if there is one, enters solo mode on f,
 * whose word solo it found at w, this thread's C (c) or A (its last solo
 * attempt committed, or was rolled back): solo moves from w to I (a
 * rolled-back attempt's changes are undone first), the fields the attempt
 * may change are saved, and the engine's end mark is registered, which
 * stores C or A in solo when the attempt ends and returns the attempt's
 * id (0: outside a transaction, nothing registered; then solo goes back
 * to C). Nothing between the CAS and the registration can end the
 * attempt. The attempt's id, or 0: outside a transaction, or f is being
 * handed back (the general paths then deal with it). c_only: w is c
 * (solo_id's case, inlined into the calls). */
static __attribute__((noinline)) uint64_t solo_enter_none(sstm_file_t *f, uint64_t c) {
  tls_k.solo_run--;
  /* release: as in solo_revoke (nothing was changed in place) */
  atomic_store_explicit(&f->solo, c, memory_order_release);
  return 0;
}
static inline __attribute__((always_inline)) uint64_t solo_enter(sstm_file_t *f, uint64_t w,
                                                                 uint64_t c, bool c_only) {
  /* acquire: a hand-over's release (the keeper's own changes are this
   * thread's); the revokers' CAS from C or A fails from now on, until the
   * end mark stores C or A again. */
  if (__builtin_expect(!atomic_compare_exchange_strong_explicit(&f->solo, &w, c + (SOLO_I - SOLO_C),
                                                                memory_order_acquire,
                                                                memory_order_relaxed),
                       0))
    return 0;
  if (!c_only && w != c) solo_restore(f);
  solo_save(f);
  tls_k.solo_run++;
  /* The values from I, which the CAS kept in a register. */
  uint64_t i = c + (SOLO_I - SOLO_C);
  uint64_t id = sstm__end_mark(&f->solo, i - (SOLO_I - SOLO_C), i - (SOLO_I - SOLO_A));
  if (__builtin_expect(id == 0, 0)) return solo_enter_none(f, c);
  /* f and id only after the call: the caller's frame (the calls inline
   * this) keeps no more than f across it. */
  f->solo_tx = id;
  DELAY();
  return id;
}

/* (S10) solo_id's and solo_in's cases other than this thread's I, and C
 * for solo_id: A (enters), or f is not kept by this thread (0). */
static __attribute__((noinline)) uint64_t solo_enter_rare(sstm_file_t *f, uint64_t w) {
  uint64_t c = tls_k.solo_in - (SOLO_I - SOLO_C);
  if (w == c || w == c + (SOLO_A - SOLO_C)) return solo_enter(f, w, c, false);
  if (__builtin_expect(w & SOLO_WAIT_BIT, 0)) { /* (S11) others wait for f */
    uint64_t n = SOLO_NOW(w);
    if (n == c || n == c + (SOLO_A - SOLO_C)) {
      if (solo_batch(f, w)) return 0; /* yielded: the general path meets Y */
      return solo_enter(f, w, c | SOLO_WAIT_BIT, false);
    }
    if (n == tls_k.solo_in) { /* the attempt's later calls, as in solo_id_kept */
      uint64_t id = sstm_txid();
      return f->solo_tx == id ? id : 0;
    }
  }
  (void)solo_miss(w);
  return 0;
}

/* (S10) Whether the running attempt may work on f in place: f is kept by
 * this thread and the attempt is (now) in solo mode on it. Its id, or 0
 * (outside a transaction too: the caller then looks the id up itself).
 * Inlined into each call, so that a transaction of one call on a kept
 * stream enters solo mode with one call (the end mark's) and no stack
 * frame of its own. */
static inline __attribute__((always_inline)) uint64_t solo_id_kept(sstm_file_t *f);
static inline __attribute__((always_inline)) uint64_t solo_id(sstm_file_t *f) {
  if (tls_k.solo != f) return 0; /* also when f is NULL */
  return solo_id_kept(f);
}
/* solo_id when tls_k.solo is f. */
static inline __attribute__((always_inline)) uint64_t solo_id_kept(sstm_file_t *f) {
  /* relaxed: only this thread moves solo from its I value, and the CAS
   * decides the others */
  uint64_t w = atomic_load_explicit(&f->solo, memory_order_relaxed);
  uint64_t in = tls_k.solo_in;
  if (__builtin_expect(w == in - (SOLO_I - SOLO_C), 1)) return solo_enter(f, w, w, true);
  if (w == in) { /* the attempt's later calls, or another attempt's (S10, solo_meet) */
    uint64_t id = sstm_txid();
    return f->solo_tx == id ? id : 0;
  }
  return solo_enter_rare(f, w);
}

/* (S10) solo_id for the general paths, which know the attempt id (non-zero). */
static inline bool solo_in(sstm_file_t *f, uint64_t id) {
  if (tls_k.solo != f) return false;
  /* relaxed: as in solo_id */
  uint64_t w = atomic_load_explicit(&f->solo, memory_order_relaxed);
  if (w == tls_k.solo_in) return f->solo_tx == id;
  return solo_enter_rare(f, w) != 0;
}

/* (S10) sstm_fputc's common case in solo mode: the byte continues the
 * write buffer's bytes (not an append stream, no read window). Buffered
 * bytes (wl != 0) make it a write stream, and a kept stream is not
 * line-buffered (solo_start; sstm_setvbuf refuses a stream in use): the
 * append bit is the only one of the mode to test. */
static inline bool solo_put1(sstm_file_t *f, unsigned char b) {
  if (f->mode & M_APP) return false;
  uint64_t wbuf = CSL(f, wbuf), woff = CSL(f, woff), wl = CSL(f, wlen), pos = CSL(f, pos);
  if (wl == 0 || woff + wl >= f->bsz || CSL(f, wbase) + wl != pos || CSL(f, rlen) != 0)
    return false;
  ((unsigned char *)(uintptr_t)wbuf)[woff + wl] = b; /* wl != 0: wbuf is set */
  CSS(f, wlen, wl + 1);
  CSS(f, pos, pos + 1);
  return true;
}

/* (S10) solo_write's common case, for sstm_fputs and sstm_fwrite: the n
 * bytes continue the write buffer's bytes and fit (not an append stream,
 * no read window; the mode as in solo_put1). false: solo_write decides.
 * The state first, then the copy: only this thread reads it until the
 * attempt ends, and the caller keeps fewer values across the call. */
static inline bool solo_put(sstm_file_t *f, const void *src, size_t n) {
  if ((f->mode & M_APP) || n == 0) return false; /* fwrite of 0 bytes returns 0 */
  uint64_t wbuf = CSL(f, wbuf), woff = CSL(f, woff), wl = CSL(f, wlen), pos = CSL(f, pos);
  if (wl == 0 || woff + wl + n > f->bsz || CSL(f, wbase) + wl != pos || CSL(f, rlen) != 0)
    return false;
  CSS(f, wlen, wl + n);
  CSS(f, pos, pos + n);
  memcpy((unsigned char *)(uintptr_t)wbuf + woff + wl, src, n); /* wl != 0: wbuf is set */
  return true;
}

/* (S10) sstm_fgetc's common case in solo mode: the byte is in the window. */
static inline int solo_get1(sstm_file_t *f) {
  if (!(f->mode & M_RD)) return -1;
  uint64_t p = CSL(f, pos), rb = CSL(f, rbase), rl = CSL(f, rlen);
  if (p - rb >= rl) return -1; /* also p < rb (unsigned) and rl == 0 */
  CSS(f, pos, p + 1);
  return ((const unsigned char *)(uintptr_t)CSL(f, rbuf))[p - rb];
}

/* (S8, S10) A read that the read window serves: n bytes, or up to a
 * newline when nl, all in the window; the position moves past them, *got
 * says how many. false: not served, nothing done. For ntx_read (under the
 * stream's lock) and solo_read. */
static inline bool window_read(sstm_file_t *f, unsigned char *dst, size_t n, bool nl, size_t *got) {
  uint64_t p = CSL(f, pos), rb = CSL(f, rbase), rl = CSL(f, rlen), rbuf = CSL(f, rbuf);
  if (rbuf == 0 || p < rb || p >= rb + rl) return false;
  size_t k = rb + rl - p < n ? (size_t)(rb + rl - p) : n;
  const unsigned char *q = (const unsigned char *)(uintptr_t)rbuf + (p - rb);
  if (k == 1 && n == 1) {
    dst[0] = q[0]; /* fgetc's case, without a call */
  } else {
    const unsigned char *e = nl ? memchr(q, '\n', k) : NULL;
    if (e != NULL) k = (size_t)(e - q) + 1;
    if (e == NULL && k != n) return false;
    memcpy(dst, q, k);
  }
  CSS(f, pos, p + k);
  *got = k;
  return true;
}

/* (S10) A write that the write buffer serves (as ntx_write's), in place by
 * a solo attempt: the bytes go after the installed ones. false: not
 * served, nothing done. */
static inline bool solo_write(sstm_file_t *f, const void *src, size_t n) {
  if ((f->mode & (M_WR | M_LBF)) != M_WR || n == 0 || n >= f->bsz) return false;
  uint64_t wbuf = CSL(f, wbuf), woff = CSL(f, woff), wl = CSL(f, wlen);
  uint64_t off = (f->mode & M_APP) ? CSL(f, apos) : CSL(f, pos);
  if (wbuf == 0 || woff + wl + n > f->bsz || (wl != 0 && CSL(f, wbase) + wl != off) ||
      (wl == 0 && !pos_room(off, f->bsz)))
    return false;
  uint64_t rb = CSL(f, rbase), rl = CSL(f, rlen);
  bool stale = rl != 0 && rb < off + n && off < rb + rl;
  if (stale || wl == 0 || (f->mode & M_APP)) solo_save_rare(f);
  if (stale) CSS(f, rlen, 0); /* stale window */
  memcpy((unsigned char *)(uintptr_t)wbuf + woff + wl, src, n);
  if (wl == 0) CSS(f, wbase, off);
  CSS(f, wlen, wl + n);
  if (f->mode & M_APP) CSS(f, apos, off + n);
  CSS(f, pos, off + n);
  return true;
}

/* (S10) A read that the read window serves, in place by a solo attempt. */
static inline bool solo_read(sstm_file_t *f, unsigned char *dst, size_t n, bool nl, size_t *got) {
  return (f->mode & M_RD) && n != 0 && window_read(f, dst, n, nl, got);
}

/* (S10) After a commit that reused this thread's kept view of f (S3): after
 * enough of them in a row, the thread keeps f. Its acquisitions have ended
 * (counted no more); solo is stored, then the counts and the lock of calls
 * outside transactions are loaded, while every other user of the stream
 * counts itself (or takes the lock) and then loads solo, all seq_cst: one
 * of the two sees the other. If another user is there, the keeping is
 * withdrawn (it changed nothing), or that user hands it back. */
static __attribute__((noinline)) void solo_start(sstm_file_t *f) {
  if (tls_k.solo_need == 0) tls_k.solo_need = SOLO_NEED0;
  if (++tls_k.solo_hits < tls_k.solo_need) return;
  /* (S12) An attempt that may be suspended keeps nothing. */
  if (sstm__attempt_suspendable()) return;
  /* relaxed: hints (the handshake below decides); not in serial mode
   * (S9): a contended stream is not kept */
  if (!f->reg || (f->mode & M_LBF) || f->bsz == 0 ||
      atomic_load_explicit(&f->solo, memory_order_relaxed) != 0 ||
      atomic_load_explicit(&f->q_span, memory_order_relaxed) != 0 ||
      atomic_load_explicit(&f->q_turn, memory_order_relaxed) != 0)
    return;
  if (__builtin_expect(sstm__stdio_solo_start_hook != NULL, 0)) sstm__stdio_solo_start_hook(f);
  DELAY();
  uint32_t me = my_tag();
  uint64_t c = SOLO_MAKE(me, SOLO_C), z = 0;
  /* seq_cst: the keeper's half of the handshake. A CAS from 0, not a
   * store: another thread that passed the test above at the same time may
   * have begun its keeping, and its solo attempt (not counted anywhere)
   * may be working in place already; a store would take the stream from
   * under it and make two keepers (tests/internal/libc_solo.c). */
  if (!atomic_compare_exchange_strong_explicit(&f->solo, &z, c, memory_order_seq_cst,
                                               memory_order_relaxed))
    return;
  DELAY();
  if (atomic_load_explicit(&f->q_active, memory_order_seq_cst) != 0 ||
      atomic_load_explicit(&f->q_peek, memory_order_seq_cst) != 0 ||
      atomic_load_explicit(&f->nlk, memory_order_seq_cst) != 0) {
    /* relaxed: nothing was changed in place; a failure means a revoker
     * hands it back (it moved solo to H) */
    atomic_compare_exchange_strong_explicit(&f->solo, &c, 0, memory_order_relaxed,
                                            memory_order_relaxed);
    return;
  }
  tls_k.solo = f, tls_k.solo_in = SOLO_MAKE(me, SOLO_I);
  tls_k.solo_run = 0;
  tls_k.solo_shared = false;
}

/* (S10) An acquisition or a peek of the running attempt found f kept
 * (solo value w, non-zero), after it counted itself. Another thread's
 * keeping: the attempt restarts and, rolled back, waits in view_drop
 * until the stream is handed back, so that its retry begins after the
 * keeper's last attempt ended (its snapshot then includes that attempt's
 * commit, whose stream changes it will read); an irrevocable attempt
 * cannot restart and waits here. This thread's: handed back at once; true
 * when this attempt is in solo mode on f (the caller then leaves it,
 * solo_leave, once own is stored). */
static __attribute__((noinline)) bool solo_meet(sstm_file_t *f, view_t *v, uint64_t w) {
  /* (S11) This thread keeps f for a batch and the attempt's first call on
   * it is not one that solo mode serves (a seek): it enters solo mode and
   * leaves it at once (the caller's solo_leave), keeping f. */
  if (tls_k.solo_shared && tls_k.solo == f && (w & ~(uint64_t)SOLO_WAIT_BIT) != tls_k.solo_in &&
      SOLO_TAG(w) == tls_tag && (SOLO_ST(w) == SOLO_C || SOLO_ST(w) == SOLO_A)) {
    if (solo_enter_rare(f, w) != 0) return true;
    w = atomic_load_explicit(&f->solo, memory_order_acquire); /* as in acquire_in */
    if (w == 0) return false;
  }
  /* Another attempt's solo mode on this thread (an executor's suspended
   * transaction, on another descriptor) is treated as another thread's. */
  if (SOLO_TAG(w) != my_tag() || SOLO_ST(w) == SOLO_Y ||
      (SOLO_ST(w) == SOLO_I && f->solo_tx != v->txid)) {
    if (sstm_is_irrevocable()) {
      solo_revoke(f);
      return false;
    }
    v->revoke = true;
    sstm_restart();
  }
  bool current = tls_k.solo == f; /* the keeping that tls_k counts */
  /* (S11) a keeping for a batch survives an attempt that leaves */
  if (!tls_k.solo_shared || SOLO_ST(w) != SOLO_I) tls_k.solo = &solo_none;
  if (SOLO_ST(w) == SOLO_I) return true;
  /* (S10) This thread's keeping ends before a solo attempt of it worked
   * (its attempts begin with a call that solo mode does not serve, a seek
   * per transaction): keeping did not pay, as when another thread hands
   * the stream back first (solo_miss). */
  if (current && !tls_k.solo_shared && tls_k.solo_run == 0)
    tls_k.solo_need = tls_k.solo_need < SOLO_NEEDMAX ? 2 * tls_k.solo_need : SOLO_NEEDMAX;
  tls_k.solo_shared = false;
  solo_revoke(f); /* C or A, or H: not in flight, no wait for the keeper */
  return false;
}

uint64_t sstm__stdio_solo(const sstm_file_t *f) {
  return atomic_load_explicit(&f->solo, memory_order_relaxed); /* relaxed: tests */
}

/* (S10) The running attempt, in solo mode on f, needs more than the
 * buffers' in-place calls: it has counted itself and stored own (the
 * stream's other users now meet its lock), so it takes the installed
 * state with its own changes as its view's state, puts the installed
 * state back to what the keeper committed, drops the end mark and frees
 * solo; its commit installs the next version as any acquisition's does.
 * Returns the stream's new nmod. */
static __attribute__((noinline)) uint64_t solo_leave(sstm_file_t *f, view_t *v) {
  DELAY();
  cs_load(f, &v->s);
  solo_restore(f);
  nmod_bump(f);
  DELAY();
  if (tls_k.solo_shared) {
    /* (S11) A keeping for a batch stays: solo stays I and the end mark
     * stays (it stores C or A when the attempt ends; the installation of
     * its version follows, and a taker waits for it, solo_wait); the
     * attempt's later calls use its view (solo_in fails from here on). */
    f->solo_tx = 0;
    return atomic_load_explicit(&f->nmod, memory_order_relaxed); /* relaxed: this thread's */
  }
  (void)sstm__end_mark(NULL, 0, 0);
  if (tls_k.solo_run > 1) {
    /* An earlier attempt of this keeping worked in solo mode, so this one
     * leaves at a buffer's end (a refill, a spill) of a stream that the
     * thread still uses alone: its own installation makes the thread the
     * keeper again (solo_start's handshake decides), instead of the
     * acquisitions in a row that a new keeper needs. */
    tls_k.solo_need = SOLO_NEED0, tls_k.solo_hits = SOLO_NEED0 - 1;
    v->hit = true;
  } else {
    /* Its first solo attempt: keeping did not pay, it takes more next time. */
    tls_k.solo_need = tls_k.solo_need < SOLO_NEEDMAX ? 2 * tls_k.solo_need : SOLO_NEEDMAX;
    tls_k.solo_hits = 0;
  }
  uint64_t nmod = atomic_load_explicit(&f->nmod, memory_order_relaxed);
  /* release: as in solo_revoke */
  atomic_store_explicit(&f->solo, 0, memory_order_release);
  return nmod;
}

/* ---- operations ------------------------------------------------------------ */

typedef struct op {
  sstm_file_t *f;
  bool outer;    /* a transaction of its own (S8) */
  uint64_t txid; /* the enclosing attempt (!outer) */
  int err;       /* errno to report, 0: none */
  const void *src;
  void *dst;
  size_t n;
  int64_t off;
  int whence;
  char **lp;
  size_t *lcap;
  int64_t r;
  uint64_t w; /* sstm_fflush, sstm_fclose: the tickets to wait for */
  trep_t rep; /* (S4) a write outside transactions: its own ticket's failure */
} op_t;

/* (S9) The stream is in serial mode, or its turn is held. relaxed: a
 * hint; a stale value makes one acquisition more or less take the turn,
 * which the engine's conflict detection keeps correct either way. */
static inline bool queue_busy(sstm_file_t *f) {
  return atomic_load_explicit(&f->q_span, memory_order_relaxed) != 0 ||
         atomic_load_explicit(&f->q_turn, memory_order_relaxed) != 0;
}

/* (S9) Whether the acquisition that made view v (linked first in
 * tls_views) queues: sstm__esc_should_queue with this thread's facts. */
static __attribute__((noinline)) bool should_queue(sstm_file_t *f, const view_t *v, bool others) {
  bool holds = false, in_action = false;
  for (const view_t *p = tls_views; p; p = p->next) {
    if (p->txid != v->txid)
      in_action = true; /* a committed attempt's view, installation pending */
    else if (p->turn)
      holds = true;
  }
  /* relaxed: hints, as in queue_busy */
  sstm__esc_in_t in = {
      .span = atomic_load_explicit(&f->q_span, memory_order_relaxed),
      .turn_held = atomic_load_explicit(&f->q_turn, memory_order_relaxed) != 0,
      .in_flight = others,
      .irrevocable = sstm_is_irrevocable(),
      .holds_turn = holds,
      .in_action = in_action,
      .suspendable = sstm__attempt_suspendable(),
  };
  sstm__esc_act_t act = sstm__esc_decide(&tls_esc, f, &in);
  if (act == SSTM__ESC_ENTER) /* relaxed: a hint, as in turn_release */
    atomic_store_explicit(&f->q_span, SSTM__ESC_SPAN, memory_order_relaxed);
  return act != SSTM__ESC_NONE;
}

/* Tests (tests/internal/libc_escalate.c): turns taken on f so far; serial
 * mode for the next span committed turns. */
uint64_t sstm__stdio_turns(const sstm_file_t *f) {
  return atomic_load_explicit(&f->q_taken, memory_order_relaxed);
}
uint32_t sstm__stdio_span(const sstm_file_t *f) {
  return atomic_load_explicit(&f->q_span, memory_order_relaxed);
}
void sstm__stdio_set_span(sstm_file_t *f, uint32_t span) {
  atomic_store_explicit(&f->q_span, span, memory_order_relaxed);
}

/* (S1, S3) The view of f of the running attempt id, acquiring the stream
 * at the attempt's first call on it: one transactional load and store of
 * own, the two actions, a copy of the installed state. NULL with *err
 * (EBADF: closed; ENOMEM). */
/* A new view of f for the running attempt id, with its two actions
 * registered and linked first in tls_views; not counted yet. NULL with
 * *err ENOMEM. */
static inline view_t *view_new(sstm_file_t *f, uint64_t id, view_t *v, int *err) {
  if (v == NULL) { /* not the thread's kept view of f (view_keep) */
    if ((v = view_get()) == NULL) {
      *err = ENOMEM;
      return NULL;
    }
    v->pw_len = 0;
  }
  /* A write buffer kept from a stream with smaller buffers (sstm_setvbuf,
   * or a pipe's) is too small for this one: wr allocates one of the right
   * size. Also a kept view's (S3): its stream may be closed (by another
   * thread: the closer forgets only its own, keep_forget) and its header
   * freed and reused for f, whose bsz may be larger. */
  if (__builtin_expect(v->wst != NULL && v->wst_cap < f->bsz, 0)) {
    free(v->wst);
    v->wst = NULL, v->wst_cap = 0;
  }
  v->f = f, v->txid = id, v->armed = false, v->closed = false, v->ticket = 0, v->cold = false;
  v->bad = false, v->turn = false, v->active = false, v->peek = false, v->ver = 0;
  v->hit = false, v->revoke = false, v->kept = false, v->eofm = NULL, v->alast = NULL;
  /* The action first, then own: an abort inside the barriers below finds
   * the view registered (view_drop takes it back); an attempt that commits
   * without having stored own installs nothing. One action for both ends
   * of the attempt: one registration instead of two. */
  if (sstm__on_end(view_end, v) != 0) {
    view_put(v);
    *err = ENOMEM;
    return NULL;
  }
  v->next = tls_views;
  tls_views = v;
  return v;
}

/* (S3) The view's state after its snapshot: the write buffer continues the
 * installed bytes; the view is armed (own is stored). */
static inline void arm(view_t *v) {
  v->cw = (uint32_t)v->s.wlen, v->sw = 0, v->rown = false;
  v->reset = v->cw == 0;
  uint32_t cap = v->f->bsz;
  v->wcap = v->reset ? cap : cap - (uint32_t)v->s.woff;
  v->armed = true;
}

/* (S1, S3) The view of f of the running attempt id, acquiring the stream
 * at the attempt's first call on it: one transactional load and store of
 * own, the two actions, a copy of the installed state. NULL with *err
 * (EBADF: closed; ENOMEM). */
static __attribute__((noinline)) view_t *acquire_again(view_t *v, int *err);

static view_t *acquire_in(sstm_file_t *f, uint64_t id, int *err) {
  view_t *v = view_find(f, id);
  if (__builtin_expect(v != NULL, 0)) return acquire_again(v, err);
  /* The thread's kept view of f, if any (S3): taken for this attempt (an
   * abort puts it back in the pool: its state is then not the installed
   * one any more). */
  view_t *k = tls_keep;
  if (k != NULL && k->f == f)
    tls_keep = NULL;
  else
    k = NULL;
  if ((v = view_new(f, id, k, err)) == NULL) return NULL;
  uint32_t others = enter(f, &f->q_active);
  v->active = true;
  DELAY();
  /* (S10) seq_cst: the loading half of solo_start's handshake (after the
   * count above); acquire for a hand-over's release. */
  uint64_t so = atomic_load_explicit(&f->solo, memory_order_seq_cst);
  bool leave = __builtin_expect(so != 0, 0) && solo_meet(f, v, so);
  /* relaxed: written under nlk while no attempt was counted; enter()'s
   * seq_cst load of nlk, after this attempt's count, reads the release of
   * nlk that followed the last such write (or the write is not before the
   * count, and then the lock holder saw the count and changed nothing). */
  uint64_t nmod = atomic_load_explicit(&f->nmod, memory_order_relaxed);
  /* (S11) An attempt of a keeper for a batch that leaves solo mode has
   * the stream alone: no turn. */
  if (__builtin_expect(others != 0 || queue_busy(f) ||
                           (tls_esc.key == f && tls_esc.lost >= SSTM__ESC_AFTER),
                       0) &&
      !(leave && tls_k.solo_shared))
    if (should_queue(f, v, others != 0)) {
      /* relaxed: counts for turn_alone's hint */
      atomic_fetch_add_explicit(&f->q_queued, 1, memory_order_relaxed);
      turn_take(f);
      atomic_fetch_sub_explicit(&f->q_queued, 1, memory_order_relaxed);
      v->turn = true;
      /* (S11) The holder the turn came from may keep the stream now
       * (batch_start): acquire, pairs with its release of the turn after
       * its store of solo. */
      uint64_t so2 = atomic_load_explicit(&f->solo, memory_order_acquire);
      if (__builtin_expect(so2 != 0, 0)) (void)solo_meet(f, v, so2);
      /* Only when this thread's last attempt on f lost it (a retry):
       * a first attempt goes on at once, since it rarely conflicts with
       * an acquisition in flight, and waiting for every one of them cost
       * more CPU time than those conflicts (docs/benchmarks-history.md,
       * "[Smiljkovic13]'s Fig. 4 shape in four modes"). */
      if (tls_esc.key == f && tls_esc.lost != 0) turn_alone(f);
    }
  DELAY();
  uint64_t o = LD(f, own);
  if (__builtin_expect(o & OWN_CLOSED, 0)) {
    v->bad = true;
    *err = EBADF;
    return NULL;
  }
  v->ver = OWN_VER(o);
  uint64_t kown = v->own; /* the kept view's: the value its commit left in own */
  v->own = OWN_MAKE(v->ver + 1, my_tag());
  ST(f, own, v->own);
  /* (S3) A kept view whose version is still the stream's (no acquisition
   * committed since this thread's, which installed it before this attempt
   * began) and that no call outside transactions changed in place holds
   * the installed state already: no copy. */
  if (__builtin_expect(leave, 0))
    v->kept = solo_shared_now(), v->pw_len = 0,
    nmod = solo_leave(f, v); /* (S10) the installed state with this attempt's changes */
  else if (k == NULL || o != kown || nmod != v->nmod)
    snapshot(f, o, &v->s), solo_hits_reset(), v->pw_len = 0;
  else
    v->hit = true; /* no ticket since its installation: pw is still the file's */
  v->nmod = nmod;
  arm(v);
  return v;
}

/* acquire_in when the attempt has a view of the stream already. */
static __attribute__((noinline)) view_t *acquire_again(view_t *v, int *err) {
  if (v->peek && !v->armed && !v->bad) {
    /* (S8) The attempt peeked at the stream (own loaded, the state copied)
     * and has been counted since, so no call outside transactions changed
     * the state meanwhile; a transaction that did makes the load of own
     * fail validation. Acquire that version. */
    v->own = OWN_MAKE(v->ver + 1, my_tag());
    ST(v->f, own, v->own);
    arm(v);
    return v;
  }
  if (!v->armed || v->closed) {
    *err = EBADF;
    return NULL;
  }
  return v;
}

/* acquire_in for an operation: its stream and attempt; a->err on failure. */
static view_t *acquire(op_t *a) {
  return acquire_in(a->f, a->outer ? sstm_txid() : a->txid, &a->err);
}

/* (S1) ftell, feof, ferror: the attempt's state of a->f, read without
 * acquiring the stream (own is only loaded). The first peek of an attempt
 * makes a view, counted in q_peek until the attempt ends, so that no call
 * outside transactions changes the state in place under it (S8): the
 * attempt's later calls on f see the state it saw, or fail validation.
 * false with a->err EBADF or ENOMEM. */
static bool peek(op_t *a, cstate_t *s) {
  sstm_file_t *f = a->f;
  uint64_t id = a->outer ? sstm_txid() : a->txid;
  view_t *v = view_find(f, id);
  if (v) {
    if (v->bad || v->closed) {
      a->err = EBADF;
      return false;
    }
    *s = v->s;
    return true;
  }
  /* (S10) This attempt works on f in place: its own state is the
   * installed one; an acquisition leaves solo mode first. */
  if (tls_k.solo == f && ((atomic_load_explicit(&f->solo, memory_order_relaxed) == tls_k.solo_in &&
                           f->solo_tx == id) ||
                          tls_k.solo_shared)) { /* (S11) a keeper for a batch acquires */
    if ((v = acquire_in(f, id, &a->err)) == NULL) return false;
    *s = v->s;
    return true;
  }
  if ((v = view_new(f, id, NULL, &a->err)) == NULL) return false;
  enter(f, &f->q_peek);
  v->peek = true;
  DELAY();
  /* (S10) seq_cst, as in acquire_in; not in solo mode (above), so
   * solo_meet hands this thread's keeping back or restarts */
  uint64_t so = atomic_load_explicit(&f->solo, memory_order_seq_cst);
  if (__builtin_expect(so != 0, 0)) (void)solo_meet(f, v, so);
  v->nmod = atomic_load_explicit(&f->nmod, memory_order_relaxed); /* as in acquire_in */
  uint64_t o = LD(f, own);
  if (o & OWN_CLOSED) {
    v->bad = true;
    a->err = EBADF;
    return false;
  }
  v->ver = OWN_VER(o);
  snapshot(f, o, &v->s);
  *s = v->s;
  return true;
}

/* Move the write buffer's bytes to a record (S4). */
static int spill(view_t *v) {
  size_t wl = (size_t)v->cw + v->sw;
  if (wl == 0) return 0;
  unsigned char *d = rec_add(v, v->s.wbase, wl);
  if (d == NULL) return ENOMEM;
  if (v->cw) memcpy(d, WBUF(v->s) + v->s.woff, v->cw);
  if (v->sw) memcpy(d + v->cw, v->wst, v->sw);
  if (v->pw_len != 0) { /* the bytes it overwrites, for the installation (S4) */
    rec_t *r = &v->r[v->n - 1];
    size_t k = v->pw_len < wl ? v->pw_len : wl;
    v->pw_len = 0;
    if ((r->pre = malloc(k)) != NULL) { /* else the installation reads them */
      memcpy(r->pre, v->pw, k);
      r->prelen = k;
    }
  }
  v->cw = v->sw = 0;
  v->reset = true, v->wcap = v->f->bsz;
  return 0;
}

/* (S5) Every ticket of the view's version is written and none is being
 * written: returns with applied == the version's wseq, or restarts the
 * attempt. (A ticket taken early, S6, may be written already.) */
static uint64_t settle(view_t *v) {
  uint64_t w = v->s.wseq;
  uint64_t a = wait_applied(v->f, w);
  if (a != w && !(v->ticket != 0 && a == v->ticket)) sstm_restart(); /* a newer version */
  return a;
}

static void recheck(view_t *v, uint64_t w) {
  /* seq_cst: after the system call and against the writer's seq_cst store
   * of started before its pwrite. */
  if (atomic_load_explicit(&v->f->started, memory_order_seq_cst) != w) sstm_restart();
  validate(v); /* the descriptor was still this stream's */
}

/* The attempt's read buffer, at least cap bytes; false: ENOMEM. */
static bool rst_reserve(view_t *v, uint32_t cap) {
  if (v->rst != NULL && v->rst_cap >= cap) return true;
  free(v->rst);
  v->rst = malloc(cap);
  v->rst_cap = v->rst ? cap : 0;
  return v->rst != NULL;
}

/* (S6) After one revocable wait of a byte stream's call (a poll or a sleep
 * of ms milliseconds, holding nothing of its own): a kill of the attempt
 * or a read that a commit made stale rolls it back now
 * (sstm__attempt_check); else the next wait's length, twice as long, up
 * to SF_POLL_MAX_MS. */
static int wait_next(int ms) {
  sstm__attempt_check();
  return ms < SF_POLL_MAX_MS ? 2 * ms : ms;
}

/* (S6) Whether a read of the byte stream fd would not block now: it has
 * data, its end (the writers closed it) or an error, or it is
 * non-blocking (O_NONBLOCK: the read fails with EAGAIN rather than wait).
 * With ms > 0, sleeps in poll(2) until then, for ms milliseconds at most. */
static bool bytes_ready(int fd, int ms) {
  int fl = fcntl(fd, F_GETFL);
  if (fl >= 0 && (fl & O_NONBLOCK)) return true;
  struct pollfd p = {.fd = fd, .events = POLLIN};
  for (;;) {
    int r = sstm__stdio_sys->poll(&p, 1, ms);
    if (r < 0 && errno == EINTR) continue;
    return r != 0; /* an error of poll: the read reports it */
  }
}

/* (S6) The arrivals that this thread's walks of arrival logs visited
 * (tests: sstm__stdio_arrivals_walked). */
static __thread uint64_t tls_awalk;

/* (S6) f's reader claim, for the descriptor me: held across one read(2)
 * into the arrival log that poll(2) said would not wait. word_take's
 * acquire orders this reader's look at the log and poll after the
 * previous holder's read and append. */
static void rclaim_take(sstm_file_t *f, uint64_t me) { word_take(&f->rclaim, &f->rwaiters, me); }

static void rclaim_release(sstm_file_t *f) { word_give(&f->rclaim, &f->rwaiters); }

/* (S6) The bytes of v's stream's arrival log at position p: copies up to
 * cap of them to dst and returns the count; 0 when an end-of-data arrival
 * not gone is at p (*m: it); -1 when the log has none (p is its end, or,
 * for a stale view, before its first arrival). The walk begins at the
 * arrival of the view's last read (v->alast) when p is not before it, so
 * that a call that reads n arrivals in one attempt (a sstm_fread of many
 * small writes) walks each once, not n^2 / 2 times. alast is this
 * attempt's (view_new clears it): an arrival that the attempt reached is
 * not freed before it ends (the grace period, arrivals_free), its link
 * does not change, and the log from it on holds every position up to its
 * end. From there a stale view may find bytes that an installation has
 * taken out of the log since: the bytes of a position never change, and
 * the view's commit fails. Tested (the arrivals visited, tls_awalk):
 * unit.internal_libc_pipes.a_read_of_many_arrivals_visits_each_arrival_once. */
static long arrival_find(view_t *v, uint64_t p, unsigned char *dst, size_t cap, arrival_t **m) {
  /* acquire: each arrival's contents, published by the release store that
   * linked it (alast's: read by this thread before) */
  arrival_t *c = v->alast != NULL && v->alast->pos <= p
                     ? v->alast
                     : atomic_load_explicit(&v->f->ahead, memory_order_acquire);
  long k = -1;
  uint64_t seen = 0;
  for (; c != NULL; c = atomic_load_explicit(&c->next, memory_order_acquire)) {
    seen++;
    if (c->len == 0) {
      /* relaxed: see arrival_trim */
      if (c->pos == p && !atomic_load_explicit(&c->gone, memory_order_relaxed)) {
        *m = c, v->alast = c, k = 0;
        break;
      }
    } else if (p >= c->pos && p - c->pos < c->len) {
      size_t n = c->len - (p - c->pos);
      if (n > cap) n = cap;
      memcpy(dst, c->b + (p - c->pos), n);
      v->alast = c, k = (long)n;
      break;
    }
  }
  tls_awalk += seen;
  return k;
}

uint64_t sstm__stdio_arrivals_walked(void) { return tls_awalk; }

/* (S6) Read up to cap bytes of the byte stream of view v at its position
 * p into dst: the count (0 at the end of the data) or -errno. Consuming
 * the kernel's data cannot be undone, so what read(2) returns goes first
 * into the stream's arrival log, which no abort undoes, and the view
 * reads the log at p as it reads a file at an offset: an attempt that
 * rolls back leaves the bytes there for the next one, and none needs
 * irrevocability. When the log has nothing at p, the attempt takes the
 * reader claim, looks again (another reader may have logged the bytes
 * meanwhile), and reads if poll(2) says the read would not wait; else it
 * gives the claim back and waits in poll, holding nothing of its own,
 * for a while (SF_POLL_MS, doubling up to SF_POLL_MAX_MS), marked as
 * waiting (sstm__attempt_wait_begin), so that a transaction that meets one
 * of the attempt's locks takes them over whatever the policies (it may be
 * the one that sends the data): then it looks for a kill of its attempt
 * (sstm__attempt_check) and at the log again, since another reader may
 * have taken the data it waited for into the log. The claim is held
 * across one read that does not wait and nothing else, so no holder
 * waits for a transaction, and irrevocable attempts take it like the
 * others. */
static long read_bytes(view_t *v, uint64_t p, unsigned char *dst, size_t cap) {
  sstm_file_t *f = v->f;
  arrival_t *m = NULL;
  long k = arrival_find(v, p, dst, cap, &m);
  if (k < 0) {
    uint64_t me = (uint64_t)(uintptr_t)sstm_self();
    for (int ms = SF_POLL_MS;; ms = wait_next(ms)) {
      rclaim_take(f, me);
      /* A newer version has begun to be installed (perhaps the close,
       * after which the descriptor may be another file's): the view is
       * stale, and must not read. relaxed: the closer's installation comes
       * before its claim (sstm_fclose), which rclaim_take acquired. And a
       * current view's arrivals are in the log: no installation after its
       * version's took them out. */
      if (atomic_load_explicit(&f->iver, memory_order_relaxed) != 2 * v->ver ||
          ((k = arrival_find(v, p, dst, cap, &m)) < 0 && p != f->aend)) {
        rclaim_release(f);
        sstm_restart();
      }
      if (k >= 0) break;
      if (bytes_ready(f->fd, 0)) {
        arrival_t *c = malloc(sizeof *c + cap);
        if (c == NULL) {
          k = -ENOMEM;
          break;
        }
        ssize_t r;
        do
          r = sstm__stdio_sys->read(f->fd, c->b, cap);
        while (r < 0 && errno == EINTR);
        if (r < 0) {
          k = -(long)errno;
          free(c);
          break;
        }
        memcpy(dst, c->b, (size_t)r);
        /* The arrival stays until an installation trims it: it keeps the
         * bytes read, not the count asked for (a terminal's line, a small
         * write, in a buffer's worth of memory each). Allocated before the
         * read, so that no byte read is lost to ENOMEM; a shrink that
         * fails keeps the block. Tested:
         * unit.internal_libc_pipes.arrivals_take_the_memory_of_the_bytes_read_not_of_the_buffer. */
        if ((size_t)r < cap) {
          arrival_t *s = realloc(c, sizeof *c + (size_t)r);
          if (s != NULL) c = s;
        }
        c->pos = p, c->len = (uint32_t)r;
        atomic_init(&c->next, NULL);
        atomic_init(&c->gone, false);
        /* release: the arrival's contents before the readers' acquire
         * loads that reach it */
        if (f->atail != NULL)
          atomic_store_explicit(&f->atail->next, c, memory_order_release);
        else
          atomic_store_explicit(&f->ahead, c, memory_order_release);
        f->atail = c, f->aend = p + (uint64_t)r, v->alast = c;
        m = r == 0 ? c : NULL, k = (long)r;
        break;
      }
      rclaim_release(f);
      bool marked = sstm__attempt_wait_begin();
      (void)bytes_ready(f->fd, ms);
      sstm__attempt_wait_end(marked); /* wait_next's check follows */
    }
    rclaim_release(f);
  }
  v->eofm = m;
  return k;
}

/* Fill the read window at position p for a call that wants need more
 * bytes (>= 1). Returns the bytes now buffered from p (0: end of file), or
 * -errno. */
static long fill(view_t *v, uint64_t p, size_t need) {
  sstm_file_t *f = v->f;
  long n, err;
  /* An unbuffered stream reads what the call wants (up to SF_CAP bytes
   * per system call), nothing ahead. */
  uint32_t cap = f->bsz != 0 ? f->bsz : need < SF_CAP ? (uint32_t)need : SF_CAP;
  if (!rst_reserve(v, f->bsz != 0 ? f->bsz : SF_CAP)) return -ENOMEM;
  if (f->reg) {
    int e = spill(v);
    if (e) return -e;
    uint64_t w = settle(v);
    /* A refill that continues the previous window reads a whole buffer
     * (sequential reading); one after a seek elsewhere reads SF_SEEKFILL
     * bytes: the installation copies the window into the stream's buffer,
     * and a reader that seeks around uses few of its bytes. */
    size_t want =
        (v->s.rlen != 0 && v->s.rbase + v->s.rlen == p) || cap < SF_SEEKFILL ? cap : SF_SEEKFILL;
    ssize_t got = pread_all(f->fd, v->rst, want, p);
    if (got < 0) {
      err = (long)got;
      goto failed;
    }
    recheck(v, w);
    /* The attempt's own records: their bytes replace the kernel's, and the
     * file ends at the last of them if that is further: the bytes between
     * the kernel's end and it are a hole (zeros), as pwrite will make. */
    uint64_t end = p + (uint64_t)got;
    for (size_t i = 0; i < v->n; i++)
      if (v->r[i].off + v->r[i].len > end) end = v->r[i].off + v->r[i].len;
    if (end > p + want) end = p + want;
    n = (long)(end - p);
    if (n > got) memset(v->rst + got, 0, (size_t)(n - got));
    for (size_t i = 0; i < v->n; i++) {
      rec_t *r = &v->r[i];
      uint64_t lo = r->off > p ? r->off : p;
      uint64_t hi = r->off + r->len < end ? r->off + r->len : end;
      if (lo < hi) memcpy(v->rst + (lo - p), r->data + (lo - r->off), hi - lo);
    }
  } else {
    n = read_bytes(v, p, v->rst, cap);
    if (n < 0) {
      err = n;
      goto failed;
    }
  }
  v->s.rbase = p, v->s.rlen = (uint64_t)n, v->rown = true;
  return n;
failed:
  /* The system call may have read part of the bytes into rst, which holds
   * the window it was to replace when that window is the attempt's own:
   * the window is gone (else this attempt, and after its commit every
   * reader of the installed window, would read those bytes at the old
   * window's offsets: a pread short of its count, then EIO).
   * Tested:
   * unit.internal_libc_faults.a_refill_that_fails_half_way_leaves_no_foreign_bytes_in_the_window.
   */
  if (v->rown) v->s.rlen = 0;
  return err;
}

/* Read up to n bytes into dst, stopping after a newline when nl. Sets the
 * EOF / error indicators. Returns the count; *saw_nl when it ended on one. */
static size_t rd(op_t *a, view_t *v, unsigned char *dst, size_t n, bool nl, bool *saw_nl) {
  sstm_file_t *f = v->f;
  *saw_nl = false;
  if (!(f->mode & M_RD)) {
    a->err = EBADF;
    v->s.flags |= FL_ERR;
    return 0;
  }
  uint64_t p = v->s.pos;
  size_t got = 0;
  while (got < n) {
    uint64_t rb = v->s.rbase, rl = v->s.rlen;
    if (p >= rb && p < rb + rl) {
      size_t k = rb + rl - p < n - got ? (size_t)(rb + rl - p) : n - got;
      memcpy(dst + got, (v->rown ? v->rst : RBUF(v->s)) + (p - rb), k);
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
    long m = fill(v, p, n - got);
    if (m < 0) {
      a->err = (int)-m;
      v->s.flags |= FL_ERR;
      break;
    }
    if (m == 0) {
      v->s.flags |= FL_EOF;
      break;
    }
  }
  v->s.pos = p;
  return got;
}

/* (S4) A write buffer begins at off, inside the read window (whose bytes
 * are the file's as it will be when this view's records before that
 * buffer are written: the window was read after every ticket of its
 * version was written, its own records laid over it, and every write that
 * overlapped it since made it stale): keep the window's bytes from off
 * on, up to a buffer's size, in pw. They stay the file's bytes under the
 * buffer until its spill: while the buffer is open this view adds no
 * other record, and a later attempt keeps pw only when no acquisition or
 * call outside transactions changed the stream since (acquire_in), so no
 * ticket wrote there meanwhile. Without memory for pw (ENOMEM), none:
 * the installation reads the bytes. */
static void pw_take(view_t *v, uint64_t off) {
  uint32_t cap = v->f->bsz;
  v->pw_len = 0;
  if (v->pw == NULL || v->pw_cap < cap) {
    free(v->pw);
    v->pw_cap = 0;
    if ((v->pw = malloc(cap)) == NULL) return;
    v->pw_cap = cap;
  }
  uint64_t end = v->s.rbase + v->s.rlen;
  size_t k = end - off < cap ? (size_t)(end - off) : cap;
  memcpy(v->pw, (v->rown ? v->rst : RBUF(v->s)) + (off - v->s.rbase), k);
  v->pw_len = (uint32_t)k;
}

/* Write n bytes of private memory src. Returns 0 or an errno (then nothing
 * of this call is written). */
static int wr(view_t *v, const unsigned char *src, size_t n) {
  sstm_file_t *f = v->f;
  if (!(f->mode & M_WR)) {
    v->s.flags |= FL_ERR;
    return EBADF;
  }
  if (n == 0) return 0;
  uint64_t off = !f->reg ? 0 : (f->mode & M_APP) ? v->s.apos : v->s.pos;
  if (!pos_room(off, n)) { /* past off_t's maximum: as write(2)'s EFBIG */
    v->s.flags |= FL_ERR;
    return EFBIG;
  }
  size_t wl = (size_t)v->cw + v->sw;
  bool take = false; /* a buffer begins in the read window: pw_take */
  if (wl != 0 && ((f->reg && v->s.wbase + wl != off) || wl + n > v->wcap)) {
    if (spill(v) != 0) goto fail;
    wl = 0;
  }
  /* a record of its own: every write of an unbuffered stream, and one
   * where no whole buffer fits below the largest position (pos_room) */
  bool rec = n >= f->bsz || (wl == 0 && !pos_room(off, f->bsz));
  /* a buffered read window these bytes overlap is stale; its bytes from
   * off on are what a write buffer that begins here overwrites (pw_take) */
  if (f->reg && v->s.rlen != 0 && v->s.rbase < off + n && off < v->s.rbase + v->s.rlen) {
    take = wl == 0 && !rec && off >= v->s.rbase && !(f->mode & M_APP);
    if (take) pw_take(v, off);
    v->s.rlen = 0;
  }
  if (rec) {
    unsigned char *d = rec_add(v, off, n);
    if (d == NULL) goto fail;
    memcpy(d, src, n);
  } else {
    if (v->wst == NULL) { /* view_new: NULL or large enough */
      if ((v->wst = malloc(f->bsz)) == NULL) goto fail;
      v->wst_cap = f->bsz;
    }
    if (wl == 0) v->s.wbase = off;
    if (n == 1)
      v->wst[v->sw] = src[0];
    else
      memcpy(v->wst + v->sw, src, n);
    v->sw += (uint32_t)n;
  }
  if (f->reg) {
    if (f->mode & M_APP) v->s.apos = off + n;
    v->s.pos = off + n;
  }
  /* Line buffered: bytes up to a newline leave with the commit. A spill
   * that fails (ENOMEM) leaves them buffered, to leave with a later one:
   * ISO C only says they are "intended" to be transmitted. */
  if ((f->mode & M_LBF) && memchr(src, '\n', n) != NULL) (void)spill(v);
  return 0;
fail:
  if (take) v->pw_len = 0; /* no buffer began */
  v->s.flags |= FL_ERR;
  return ENOMEM;
}

/* The common write, inlined into the calls: n bytes continue the write
 * buffer, fit in it, and there is no read window to check. false: take wr. */
static inline bool wr_fast(view_t *v, const unsigned char *src, size_t n) {
  sstm_file_t *f = v->f;
  size_t wl = (size_t)v->cw + v->sw;
  if ((f->mode & (M_WR | M_LBF)) != M_WR || wl == 0 || wl + n > v->wcap || v->s.rlen != 0 ||
      v->wst == NULL)
    return false;
  if (f->reg) {
    uint64_t off = (f->mode & M_APP) ? v->s.apos : v->s.pos;
    if (v->s.wbase + wl != off) return false;
    if (f->mode & M_APP) v->s.apos = off + n;
    v->s.pos = off + n;
  }
  if (n == 1)
    v->wst[v->sw] = src[0];
  else
    memcpy(v->wst + v->sw, src, n);
  v->sw += (uint32_t)n;
  return true;
}

/* (S8) Run op on a: directly inside a transaction, else as one. false:
 * op did not run: an unregistered thread (a->err EPERM), or a hook or a
 * contention manager's callback, where no transaction can run
 * (SSTM_ESTATE: a->err EINVAL); the call must not answer as if op had
 * done its work. */
static bool run_in(void (*op)(void *), op_t *a, uint64_t id) {
  a->txid = id;
  a->outer = id == 0;
  if (!a->outer) {
    op(a);
    return true;
  }
  int rc = sstm_run(NULL, op, a);
  if (__builtin_expect(rc != 0, 0)) {
    a->err = rc == SSTM_ENOTHREAD ? EPERM : EINVAL;
    return false;
  }
  return true;
}

/* run_in with the caller's attempt id, sstm_txid() (0: none). */
static bool run(void (*op)(void *), op_t *a) { return run_in(op, a, sstm_txid()); }

static void finish(op_t *a) {
  if (a->err) errno = a->err;
}

/* The fast path's test: the view of f that the running attempt id (non-zero)
 * made at its latest acquisition, or NULL (then the general path). */
static inline view_t *fast_view(sstm_file_t *f, uint64_t id) {
  view_t *v = tls_views;
  return v != NULL && v->f == f && v->txid == id && v->armed && !v->closed ? v : NULL;
}

/* ---- calls outside transactions (S8) ---------------------------------------- */

/* (S8) A write outside transactions that the write buffer serves (the n
 * bytes continue the buffered bytes and fit), done in place under the
 * stream's lock: the bytes go after the installed ones, where no view can
 * be reading (see RBUF), and the state is updated in the stream. false:
 * not served (nothing done); the call then runs as a transaction. The
 * relaxed accesses to the state are ordered by the lock (ntx_lock,
 * ntx_unlock) and by the counters' handshake (enter). */
static inline bool ntx_write(sstm_file_t *f, const void *src, size_t n) {
  if (!(f->mode & M_WR) || n == 0 || n >= f->bsz || sstm_self() == NULL) return false;
  if ((f->mode & M_LBF) && memchr(src, '\n', n) != NULL) return false; /* leaves at a commit */
  if (!ntx_lock(f)) return false;
  bool done = false;
  /* relaxed: own changes only in commits whose installation (and its
   * release of q_active) came before the lock */
  if (!(__atomic_load_n(&f->own, __ATOMIC_RELAXED) & OWN_CLOSED)) {
    uint64_t wbuf = CSL(f, wbuf), woff = CSL(f, woff), wl = CSL(f, wlen);
    uint64_t off = !f->reg ? 0 : (f->mode & M_APP) ? CSL(f, apos) : CSL(f, pos);
    if (wbuf != 0 && woff + wl + n <= f->bsz &&
        (wl == 0 ? pos_room(off, f->bsz) : !f->reg || CSL(f, wbase) + wl == off)) {
      uint64_t rb = CSL(f, rbase), rl = CSL(f, rlen);
      if (f->reg && rl != 0 && rb < off + n && off < rb + rl) CSS(f, rlen, 0); /* stale window */
      DELAY();
      unsigned char *d = (unsigned char *)(uintptr_t)wbuf + woff + wl;
      if (n == 1)
        d[0] = *(const unsigned char *)src; /* fputc's case, without a call */
      else
        memcpy(d, src, n);
      if (wl == 0) CSS(f, wbase, off);
      CSS(f, wlen, wl + n);
      if (f->reg) {
        if (f->mode & M_APP) CSS(f, apos, off + n);
        CSS(f, pos, off + n);
      }
      nmod_bump(f);
      done = true;
    }
  }
  ntx_unlock(f);
  return done;
}

/* (S8) A read outside transactions that the read window serves (n bytes,
 * or up to a newline when nl, all in the window), in place under the
 * stream's lock; *got: the bytes read. false: not served (nothing done). */
static inline bool ntx_read(sstm_file_t *f, unsigned char *dst, size_t n, bool nl, size_t *got) {
  if (!(f->mode & M_RD) || n == 0 || sstm_self() == NULL) return false;
  if (!ntx_lock(f)) return false;
  bool done = false;
  if (!(__atomic_load_n(&f->own, __ATOMIC_RELAXED) & OWN_CLOSED)) { /* relaxed: as above */
    if (window_read(f, dst, n, nl, got)) {
      nmod_bump(f);
      done = true;
    }
  }
  ntx_unlock(f);
  return done;
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

/* The default buffer size of f's kind: SF_CAP on a regular file, SF_CAP_BYTES
 * on a byte stream (pipe, socket, terminal). */
static inline uint32_t bsz_default(const sstm_file_t *f) { return f->reg ? SF_CAP : SF_CAP_BYTES; }

static sstm_file_t *make(int fd, unsigned m) {
  /* (S12, S11) Once, before the first stream exists: release, pairs with
   * the engine's acquire loads of the hooks. */
  if (atomic_load_explicit(&sstm__desc_move_hook, memory_order_relaxed) != views_move)
    atomic_store_explicit(&sstm__desc_move_hook, views_move, memory_order_release);
  if (atomic_load_explicit(&sstm__thread_leave_hook, memory_order_relaxed) != live_end)
    atomic_store_explicit(&sstm__thread_leave_hook, live_end, memory_order_release);
  struct stat st;
  if (sstm__stdio_sys->fstat(fd, &st) != 0) return NULL;
  sstm_file_t *f = aligned_alloc(64, (sizeof *f + 63) & ~(size_t)63);
  if (f == NULL) {
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
  /* Version 0: own == 0, iver == 0. */
  cstate_t s = {.pos = cur, .os_fpos = cur, .apos = f->reg ? (uint64_t)st.st_size : 0};
  cs_store(f, &s);
  f->fd = fd;
  f->mode = m;
  f->bsz = atomic_load_explicit(&open_bsz, memory_order_relaxed); /* relaxed: a tuning */
  if (f->bsz == 0) f->bsz = bsz_default(f);
  f->kend = f->reg ? (uint64_t)st.st_size : 0;
  f->kpos_done = f->klast = cur;
  pthread_mutex_init(&f->kmu, NULL);
  atomic_init(&f->iver, 0);
  atomic_init(&f->iwaiters, 0);
  atomic_init(&f->applied, 0);
  atomic_init(&f->started, 0);
  atomic_init(&f->waiters, 0);
  atomic_init(&f->werr, 0);
  atomic_init(&f->rclaim, 0);
  atomic_init(&f->rwaiters, 0);
  atomic_init(&f->ahead, NULL); /* (S6) atail NULL, aend 0: the memset */
  atomic_init(&f->q_turn, 0);
  atomic_init(&f->q_active, 0);
  atomic_init(&f->q_queued, 0);
  atomic_init(&f->q_waiters, 0);
  atomic_init(&f->q_span, 0);
  atomic_init(&f->q_taken, 0);
  atomic_init(&f->nlk, 0);
  atomic_init(&f->nwaiters, 0);
  atomic_init(&f->q_peek, 0);
  atomic_init(&f->nmod, 0);
  return f;
}

/* (S4) A write-only stream ("w", "a") on a regular file: the descriptor
 * opened for reading too, if the file allows it, so that a ticket that
 * overwrites bytes of the file can read them first and undo a half-failed
 * write (write_recs_reg). The same file, reopened through /proc/self/fd
 * (no O_CREAT or O_TRUNC: the open above did them), keeping O_APPEND and
 * O_CLOEXEC; the stream's mode stays write-only. Otherwise (not a regular
 * file, no read permission, no /proc) the descriptor as it was. */
static int reopen_rw(int fd, int oflags) {
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return fd;
  char p[40];
  snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
  int rw = open(p, O_RDWR | (oflags & (O_APPEND | O_CLOEXEC)));
  if (rw < 0) return fd;
  close(fd);
  return rw;
}

/* ---- the open streams, written out for the program ---------------------- */

/* Every open stream, newest first, so that sstm_fflush(NULL), exit() and
 * sstm_shutdown() write out what the program's committed transactions
 * left in the buffers, as exit() does for C's streams. Taken by opens,
 * closes and those three only, never held over a flush: no call on a
 * stream takes it. open_cv: a stream's last pin is dropped. */
static pthread_mutex_t open_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t open_cv = PTHREAD_COND_INITIALIZER;
static sstm_file_t *open_head;
static pthread_once_t open_once = PTHREAD_ONCE_INIT;

static void open_link(sstm_file_t *f) {
  pthread_mutex_lock(&open_mu);
  f->opins = 0;
  f->oprev = NULL;
  f->onext = open_head;
  if (open_head) open_head->oprev = f;
  open_head = f;
  pthread_mutex_unlock(&open_mu);
}

static void open_unlink(sstm_file_t *f) {
  pthread_mutex_lock(&open_mu);
  while (f->opins != 0)
    pthread_cond_wait(&open_cv, &open_mu);
  if (f->oprev)
    f->oprev->onext = f->onext;
  else
    open_head = f->onext;
  if (f->onext) f->onext->oprev = f->oprev;
  f->onext = f->oprev = NULL;
  pthread_mutex_unlock(&open_mu);
}

/* Flush every open stream that writes, outside a transaction, on a
 * registered thread. Each flush runs without open_mu, with the stream
 * pinned (opins), so that it stays in the list and is not freed: a close
 * on another thread waits for the pin at its unlink, after its own flush
 * and close (a stream it closed meanwhile answers EBADF here, which is no
 * error). Not holding the list over the flush matters: a flush of a pipe
 * waits for room, which its reader may make only after an open or close
 * of its own. Streams opened during the loop, at the list's head, are not
 * visited. */
static int flush_all(void) {
  int err = 0;
  pthread_mutex_lock(&open_mu);
  for (sstm_file_t *f = open_head; f != NULL;) {
    if (!(f->mode & M_WR)) {
      f = f->onext;
      continue;
    }
    f->opins++;
    pthread_mutex_unlock(&open_mu);
    errno = 0;
    if (sstm_fflush(f) != 0 && errno != EBADF && err == 0) err = errno ? errno : EIO;
    pthread_mutex_lock(&open_mu);
    sstm_file_t *next = f->onext; /* still linked: pinned */
    if (--f->opins == 0) pthread_cond_broadcast(&open_cv);
    f = next;
  }
  pthread_mutex_unlock(&open_mu);
  if (err) {
    errno = err;
    return EOF;
  }
  return 0;
}

/* Write out every stream for the program, which is about to lose them:
 * at exit() and before sstm_shutdown(). Not inside a transaction (exit()
 * called from one: the flush's own transaction would be part of it, which
 * never commits), not in the child of a fork() (forked_child) and not
 * without the library. A thread that is not
 * registered is, for the flush. Errors stay in the streams' error
 * indicators (sstm_ferror()); nothing here can report them. */
static bool in_fork_child; /* set in the child of a fork() (forked_child) */

static void flush_for_program(void) {
  if (in_fork_child || !sstm_initialized() || sstm_in_tx()) return;
  bool registered = sstm_self() != NULL;
  if (!registered && sstm_thread_init() != 0) return;
  (void)flush_all();
  if (!registered) (void)sstm_thread_exit();
}

/* The child of a fork() may not use the library (<schedstm/schedstm.h>),
 * and its exit() does not write out the streams it inherited: a flush
 * there could wait forever for a transaction, a turn or open_mu that a
 * parent's thread, absent from the child, held at the fork; and the parent
 * writes the bytes out itself. Written by the child's only thread, before
 * anything of the child reads it. */
static void forked_child(void) { in_fork_child = true; }

static void open_once_init(void) {
  (void)atexit(flush_for_program);
  (void)pthread_atfork(NULL, NULL, forked_child);
  /* release: pairs with sstm_shutdown's acquire load of the hook */
  atomic_store_explicit(&sstm__shutdown_hook, flush_for_program, memory_order_release);
}

/* A stream just made joins the list (and the first one arms the flushes
 * for the program). */
static sstm_file_t *opened(sstm_file_t *f) {
  if (f == NULL) return NULL;
  pthread_once(&open_once, open_once_init);
  open_link(f);
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
  if ((oflags & O_ACCMODE) == O_WRONLY) fd = reopen_rw(fd, oflags);
  sstm_file_t *f = make(fd, m);
  if (f == NULL) {
    int e = errno;
    close(fd);
    errno = e;
  }
  return opened(f);
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
  /* "a" and "a+" on a descriptor without O_APPEND: set it, as glibc's and
   * musl's fdopen do. The records of an append stream are written at its
   * append position, which is where the file ended as this stream knows
   * it; only O_APPEND has the kernel put them at the file's real end
   * (write_recs_reg), so without it they would overwrite what another
   * writer appended since. The flag belongs to the open file description:
   * the descriptor's duplicates append too, as after glibc's fdopen. */
  bool set_app = (m & M_APP) && !(fl & O_APPEND);
  if (set_app && fcntl(fd, F_SETFL, fl | O_APPEND) != 0) return NULL;
  if (fl & O_APPEND) m |= M_APP;
  sstm_file_t *f = make(fd, m);
  if (f == NULL && set_app) {
    int e = errno;
    (void)fcntl(fd, F_SETFL, fl); /* the descriptor as the caller gave it */
    errno = e;
  }
  return opened(f);
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
  view_t *v = acquire(a);
  if (v == NULL) return;
  /* Bytes another thread wrote since sstm_fflush leave with this commit. */
  if (spill(v) != 0) {
    a->err = ENOMEM;
    return;
  }
  v->own |= OWN_CLOSED;
  ST(a->f, own, v->own);
  v->closed = true;
  a->w = v->n ? v->s.wseq + 1 : v->s.wseq;
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
  if (a.err) { /* closed already, or out of memory */
    finish(&a);
    return EOF;
  }
  wait_applied(f, a.w);
  int we = atomic_exchange_explicit(&f->werr, 0, memory_order_relaxed);
  if (!err && we) err = we;
  /* (S6) A stale reader of a byte stream reads only under the claim,
   * after it checked iver (read_bytes): not after this close, when the
   * descriptor may be another file's. */
  if (!f->reg) rclaim_take(f, (uint64_t)(uintptr_t)f);
  if (close(f->fd) != 0 && !err) err = errno;
  if (!f->reg) rclaim_release(f);
  /* relaxed: the close's installation is ours and has returned; a stale
   * view may still read the buffers: after the grace period */
  sstm_free((void *)(uintptr_t)__atomic_load_n(&f->cs.rbuf, __ATOMIC_RELAXED));
  sstm_free((void *)(uintptr_t)__atomic_load_n(&f->cs.wbuf, __ATOMIC_RELAXED));
  /* (S6) relaxed: as the buffers; no reader claim can be held any more
   * (every attempt on f has ended), so the log does not change */
  arrivals_free(atomic_load_explicit(&f->ahead, memory_order_relaxed), NULL);
  open_unlink(f);
  retire_header(f);
  if (err) {
    errno = err;
    return EOF;
  }
  return 0;
}

int sstm_fileno(sstm_file_t *f) {
  /* relaxed: a racy peek for the error only; fd itself is constant */
  if (f == NULL || (__atomic_load_n(&f->own, __ATOMIC_RELAXED) & OWN_CLOSED)) {
    errno = EBADF;
    return -1;
  }
  return f->fd;
}

int sstm_setvbuf(sstm_file_t *f, char *buf, int mode, size_t size) {
  (void)buf; /* ISO C lets the stream use its own buffers instead (stdio.h) */
  if (f == NULL) {
    errno = EBADF;
    return EOF;
  }
  if (sstm_in_tx() || (mode != _IOFBF && mode != _IOLBF && mode != _IONBF) ||
      (mode != _IONBF && size > SSTM_STDIO_BUFMAX)) {
    errno = EINVAL;
    return EOF;
  }
  /* relaxed, all three: the caller guarantees that no other thread uses
   * the stream (the contract), so these read what this thread or the
   * threads it synchronised with last wrote. Version 0 means that no
   * acquisition has committed: no buffer exists, no state was installed,
   * and the calls outside transactions that work in place need a buffer;
   * an attempt in flight (counted) would read bsz. */
  uint64_t own = __atomic_load_n(&f->own, __ATOMIC_RELAXED);
  if (own & OWN_CLOSED) {
    errno = EBADF;
    return EOF;
  }
  if (OWN_VER(own) != 0 || atomic_load_explicit(&f->q_active, memory_order_relaxed) != 0 ||
      atomic_load_explicit(&f->q_peek, memory_order_relaxed) != 0) {
    errno = EBUSY;
    return EOF;
  }
  f->bsz = mode == _IONBF ? 0 : size != 0 ? (uint32_t)size : bsz_default(f);
  f->mode = (f->mode & ~(unsigned)M_LBF) | (mode == _IOLBF ? M_LBF : 0u);
  return 0;
}

/* ---- reading --------------------------------------------------------------- */

static void op_read(void *p) {
  op_t *a = p;
  a->err = 0, a->r = 0;
  view_t *v = acquire(a);
  if (v == NULL) return;
  bool nl;
  a->r = (int64_t)rd(a, v, a->dst, a->n, a->whence != 0, &nl);
}

/* sstm_fgetc but solo mode's common case (S10), with the attempt id. */
static __attribute__((noinline)) int fgetc_general(sstm_file_t *f, uint64_t id) {
  unsigned char c;
  if (f == NULL) {
    errno = EBADF;
    return EOF;
  }
  view_t *v = NULL;
  if (id != 0) { /* inside a transaction: acquire without an operation record */
    int e = 0;
    if ((v = fast_view(f, id)) == NULL && (v = acquire_in(f, id, &e)) == NULL) {
      errno = e;
      return EOF;
    }
  }
  if (v != NULL && (f->mode & M_RD)) { /* acquired: the byte from the window, no barrier */
    uint64_t p = v->s.pos, rb = v->s.rbase;
    if (p >= rb && p < rb + v->s.rlen) {
      c = (v->rown ? v->rst : RBUF(v->s))[p - rb];
      v->s.pos = p + 1;
      return c;
    }
  }
  size_t got;
  if (id == 0 && ntx_read(f, &c, 1, false, &got)) return c;
  op_t a = {.f = f, .dst = &c, .n = 1};
  if (!run_in(op_read, &a, id) || a.r != 1) {
    finish(&a);
    return EOF;
  }
  return c;
}

int sstm_fgetc(sstm_file_t *f) {
  /* (S10) a kept stream: the byte in place */
  if (solo_id(f) != 0) {
    int c = solo_get1(f);
    if (c >= 0) return c;
  }
  return fgetc_general(f, f != NULL ? sstm_txid() : 0);
}

/* op_read on the caller's attempt; inside a transaction without sstm_run
 * and without looking the view up twice. false: as run_in. */
static bool read_op(op_t *a) {
  uint64_t id = sstm_txid();
  if (id == 0) {
    size_t got;
    if (ntx_read(a->f, a->dst, a->n, a->whence != 0, &got)) {
      a->err = 0, a->r = (int64_t)got;
      return true;
    }
    return run_in(op_read, a, 0);
  }
  a->txid = id, a->outer = false, a->err = 0, a->r = 0;
  size_t got;
  if (solo_in(a->f, id) && solo_read(a->f, a->dst, a->n, a->whence != 0, &got)) { /* (S10) */
    a->r = (int64_t)got;
    return true;
  }
  view_t *v = fast_view(a->f, id);
  if (v == NULL && (v = acquire_in(a->f, id, &a->err)) == NULL) return true;
  bool nl;
  a->r = (int64_t)rd(a, v, a->dst, a->n, a->whence != 0, &nl);
  return true;
}

/* sstm_fgets but solo mode's common case (S10). */
static inline __attribute__((always_inline)) char *fgets_general(char *s, int n, sstm_file_t *f) {
  if (f == NULL || s == NULL || n <= 0) {
    errno = f == NULL ? EBADF : EINVAL;
    return NULL;
  }
  if (n == 1) { /* room for the NUL only: nothing to read, as fgets(3) */
    s[0] = '\0';
    return s;
  }
  op_t a = {.f = f, .dst = s, .n = (size_t)n - 1, .whence = 1};
  /* NULL also after a read error that followed part of the line (ISO C:
   * the array's contents are then indeterminate), as glibc's fgets does */
  if (!read_op(&a) || a.r == 0 || a.err != 0) {
    finish(&a);
    return NULL;
  }
  s[a.r] = '\0';
  finish(&a);
  return s;
}

/* (S10) sstm_fgets on the stream this thread keeps: the line from the
 * read window, in place. Apart from sstm_fgets, so that its other calls
 * (every call on a stream that is not kept) have no more to save. */
static __attribute__((noinline)) char *fgets_kept(char *s, int n, sstm_file_t *f) {
  size_t got;
  if (s != NULL && n > 1 && solo_id_kept(f) != 0 &&
      solo_read(f, (unsigned char *)s, (size_t)n - 1, true, &got)) {
    s[got] = '\0';
    return s;
  }
  return fgets_general(s, n, f);
}

char *sstm_fgets(char *s, int n, sstm_file_t *f) {
  if (tls_k.solo == f) return fgets_kept(s, n, f); /* f is not NULL (solo_none) */
  return fgets_general(s, n, f);
}

/* sstm_fread but solo mode's common case (S10). */
static inline __attribute__((always_inline)) size_t fread_general(void *ptr, size_t size,
                                                                  size_t nmemb, sstm_file_t *f) {
  if (f == NULL) {
    errno = EBADF;
    return 0;
  }
  size_t n; /* as in sstm_fwrite */
  if (__builtin_mul_overflow(size, nmemb, &n)) {
    errno = EINVAL;
    return 0;
  }
  if (n == 0) return 0;
  op_t a = {.f = f, .dst = ptr, .n = n};
  if (!read_op(&a)) {
    finish(&a);
    return 0;
  }
  finish(&a);
  return (size_t)a.r / size;
}

/* (S10) sstm_fread on the stream this thread keeps: the bytes from the
 * read window, in place (got is n: without nl, solo_read serves all n
 * bytes or none). Apart, as fgets_kept. */
static __attribute__((noinline)) size_t fread_kept(void *ptr, size_t size, size_t nmemb,
                                                   sstm_file_t *f) {
  size_t n, got;
  if (!__builtin_mul_overflow(size, nmemb, &n) && solo_id_kept(f) != 0 &&
      solo_read(f, ptr, n, false, &got))
    return nmemb;
  return fread_general(ptr, size, nmemb, f);
}

size_t sstm_fread(void *ptr, size_t size, size_t nmemb, sstm_file_t *f) {
  if (__builtin_expect(ptr == NULL, 0) && size != 0 && nmemb != 0) {
    errno = f == NULL ? EBADF : EINVAL; /* as sstm_fgets: nothing read */
    return 0;
  }
  if (tls_k.solo == f) return fread_kept(ptr, size, nmemb, f);
  return fread_general(ptr, size, nmemb, f);
}

/* getline: read into the caller's buffer, growing it between chunks. */
static void op_getline(void *p) {
  op_t *a = p;
  a->err = 0, a->r = -1;
  view_t *v = acquire(a);
  if (v == NULL) return;
  size_t len = 0;
  for (;;) {
    if (*a->lcap < len + 2 || *a->lp == NULL) {
      size_t nc = *a->lcap < 120 ? 120 : *a->lcap * 2;
      if (nc < len + 2) nc = len + 2;
      char *nb = realloc(*a->lp, nc); /* the caller's buffer: never rolled back */
      if (nb == NULL) {
        a->err = ENOMEM;
        v->s.flags |= FL_ERR;
        return;
      }
      *a->lp = nb, *a->lcap = nc;
    }
    bool nl;
    size_t k = rd(a, v, (unsigned char *)*a->lp + len, *a->lcap - len - 1, true, &nl);
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
  view_t *v = acquire(a);
  if (v == NULL) return;
  a->err = wr(v, a->src, a->n);
  if (a->err != 0) return;
  a->r = (int64_t)a->n;
  /* (S4, "Buffering") A call outside transactions whose bytes left the
   * write buffer (a record of their own: unbuffered, or a buffer's size or
   * more; or the line buffer's spill, which ends with them) finds its
   * ticket's failure in a->rep when its transaction returns. Bytes that
   * stayed in the buffer (cw + sw holds them) have not failed: a ticket
   * that only holds the bytes spilled before them is reported by the
   * next flush. */
  if (a->outer && a->n != 0 && v->cw + v->sw == 0) v->rep = &a->rep;
}

/* (S4, "Buffering") The ticket of a call outside transactions, holding its
 * bytes, failed after its commit: the call reports it, as ISO C's
 * unbuffered fputs returns EOF there, and the next flush does not (the
 * failure never became the stream's pending report, werr). The error
 * indicator is set by a transaction of its own, then the count in wmine
 * that kept sstm_ferror set since the failure ends. Returns the bytes of
 * the call that stayed in the kernel, fewer than n (a ticket that fails
 * loses its last byte, which is the call's): 0 on a regular file, whose
 * ticket is undone whole; on a byte stream, the call's bytes among those
 * written before the failure. errno: the ticket's. */
static __attribute__((noinline, cold)) int64_t own_failed(sstm_file_t *f, const op_t *a) {
  op_t c = {.f = f, .whence = 2};
  run(op_flags, &c);
  /* release: the indicator's installation comes before the end of the
   * count, for sstm_ferror's acquire load of wmine */
  atomic_fetch_sub_explicit(&f->wmine, 1, memory_order_release);
  errno = a->rep.err;
  return a->rep.lost >= a->n ? 0 : (int64_t)(a->n - a->rep.lost);
}
/* Write n bytes inside the running attempt id (non-zero), f not NULL: no
 * operation record, no sstm_run. Returns n, or -1 with errno. */
static inline __attribute__((always_inline)) int64_t write_in(sstm_file_t *f, const void *src,
                                                              size_t n, uint64_t id) {
  if (solo_in(f, id) && solo_write(f, src, n)) return (int64_t)n; /* (S10) */
  view_t *v = fast_view(f, id);
  int e = 0;
  if (v == NULL && (v = acquire_in(f, id, &e)) == NULL) {
    errno = e;
    return -1;
  }
  if (wr_fast(v, src, n)) return (int64_t)n;
  e = wr(v, src, n);
  if (e != 0) {
    errno = e;
    return -1;
  }
  return (int64_t)n;
}

/* Write n bytes; id: sstm_txid(); ntx: outside a transaction, try the
 * stream's lock first (S8). Returns n, or fewer (-1, or the bytes that
 * stayed in the kernel when the call's own ticket failed) with errno. */
static int64_t do_write(sstm_file_t *f, const void *src, size_t n, uint64_t id, bool ntx) {
  if (f == NULL) {
    errno = EBADF;
    return -1;
  }
  if (id != 0) return write_in(f, src, n, id);
  if (ntx && ntx_write(f, src, n)) return (int64_t)n;
  op_t a = {.f = f, .src = src, .n = n};
  if (!run_in(op_write, &a, id)) {
    finish(&a);
    return -1;
  }
  if (__builtin_expect(a.rep.err != 0, 0)) return own_failed(f, &a);
  finish(&a);
  return a.r;
}

/* sstm_fputc but solo mode's common case (S10), with the attempt id. */
static __attribute__((noinline)) int fputc_general(int c, sstm_file_t *f, uint64_t id) {
  unsigned char b = (unsigned char)c;
  if (id != 0) /* the attempt's later calls: a byte into its view, no call */
    return write_in(f, &b, 1, id) == 1 ? b : EOF;
  if (f != NULL && ntx_write(f, &b, 1)) return b;
  return do_write(f, &b, 1, id, false) == 1 ? b : EOF;
}

int sstm_fputc(int c, sstm_file_t *f) {
  /* (S10) a kept stream: the byte in place */
  if (solo_id(f) != 0 && solo_put1(f, (unsigned char)c)) return (unsigned char)c;
  return fputc_general(c, f, f != NULL ? sstm_txid() : 0);
}

/* (S10) sstm_fputs and sstm_fwrite on the stream this thread keeps: the
 * n bytes in place when the write buffer takes them (solo_put), else
 * do_write. Apart from the calls, as fgets_kept. */
static __attribute__((noinline)) int64_t write_kept(sstm_file_t *f, const void *src, size_t n) {
  if (solo_id_kept(f) != 0 && solo_put(f, src, n)) return (int64_t)n;
  return do_write(f, src, n, sstm_txid(), true);
}

int sstm_fputs(const char *s, sstm_file_t *f) {
  if (s == NULL) {
    errno = EINVAL;
    return EOF;
  }
  size_t n = strlen(s);
  int64_t r = tls_k.solo == f ? write_kept(f, s, n) : do_write(f, s, n, sstm_txid(), true);
  return r == (int64_t)n ? (n > INT_MAX ? INT_MAX : (int)n) : EOF;
}

/* sstm_fwrite's failure: the whole items that stayed (own_failed), the
 * item's size from n and nmemb. Apart from the call: its common path keeps
 * no more registers for it. */
static __attribute__((noinline, cold)) size_t fwrite_short(int64_t r, size_t n, size_t nmemb) {
  return r < 0 ? 0 : (size_t)r / (n / nmemb);
}

size_t sstm_fwrite(const void *ptr, size_t size, size_t nmemb, sstm_file_t *f) {
  size_t n; /* without a division, which costs a one-call transaction time */
  if (__builtin_mul_overflow(size, nmemb, &n)) {
    errno = EINVAL;
    return 0;
  }
  if (n == 0) return 0;
  if (__builtin_expect(ptr == NULL, 0)) {
    errno = f == NULL ? EBADF : EINVAL; /* as sstm_fputs: nothing written */
    return 0;
  }
  int64_t r = tls_k.solo == f ? write_kept(f, ptr, n) : do_write(f, ptr, n, sstm_txid(), true);
  return __builtin_expect(r == (int64_t)n, 1) ? nmemb : fwrite_short(r, n, nmemb);
}

int sstm_vfprintf(sstm_file_t *f, const char *fmt, va_list ap) {
  if (fmt == NULL) { /* vsnprintf(3) would crash, or fail without errno */
    errno = f == NULL ? EBADF : EINVAL;
    return -1;
  }
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
  int64_t r = do_write(f, buf, (size_t)n, sstm_txid(), true);
  if (buf != small) {
    if (tx)
      sstm_free(buf);
    else
      free(buf);
  }
  return r != (int64_t)n ? -1 : n;
}

int sstm_fprintf(sstm_file_t *f, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int r = sstm_vfprintf(f, fmt, ap);
  va_end(ap);
  return r;
}

/* ---- flushing -------------------------------------------------------------- */

/* (S6) Wait, revocable, until the byte stream fd takes n bytes without
 * blocking: a pipe whose capacity holds them (F_GETPIPE_SZ) until its
 * free room does (the capacity less FIONREAD's unread bytes); a larger
 * flush, and a socket or a terminal, until poll(2) says it is writable.
 * An O_NONBLOCK descriptor is written at once (EAGAIN). The caller holds
 * nothing of its own; between waits (SF_POLL_MS doubling up to
 * SF_POLL_MAX_MS) the attempt looks for a kill or a stale read. */
static void wait_room(int fd, uint64_t n) {
  int fl = fcntl(fd, F_GETFL);
  if (fl >= 0 && (fl & O_NONBLOCK)) return;
  int cap = fcntl(fd, F_GETPIPE_SZ);
  for (int ms = SF_POLL_MS;; ms = wait_next(ms)) {
    struct pollfd p = {.fd = fd, .events = POLLOUT};
    int r = sstm__stdio_sys->poll(&p, 1, 0);
    if (r < 0 && errno != EINTR) return; /* the write reports it */
    if (r > 0) {
      int used;
      if ((p.revents & (POLLERR | POLLHUP | POLLNVAL)) || cap <= 0 || n > (size_t)cap ||
          ioctl(fd, FIONREAD, &used) != 0 || used < 0 || (size_t)cap - (size_t)used >= n)
        return;
      /* Writable, with less room than n: poll would not wait. */
      struct timespec ts = {0, (long)ms * 1000000L};
      bool marked = sstm__attempt_wait_begin();
      (void)nanosleep(&ts, NULL);
      sstm__attempt_wait_end(marked); /* wait_next's check follows */
    } else {
      bool marked = sstm__attempt_wait_begin();
      (void)sstm__stdio_sys->poll(&p, 1, ms);
      sstm__attempt_wait_end(marked);
    }
  }
}

static void op_flush(void *p) {
  op_t *a = p;
  a->err = 0, a->r = 0, a->w = 0;
  sstm_file_t *f = a->f;
  if (!(f->mode & M_WR)) { /* nothing to push: only the closed check */
    cstate_t s;
    if (!peek(a, &s)) a->r = EOF;
    return;
  }
  view_t *v = acquire(a);
  if (v == NULL) {
    a->r = EOF;
    return;
  }
  int e = spill(v);
  if (e) {
    a->err = e, a->r = EOF;
    return;
  }
  if (!f->reg && !a->outer) {
    /* (S6) The bytes must leave now: irrevocable (this transaction will
     * commit; nobody else commits meanwhile); also when a policy made it
     * irrevocable, so that its body cannot restart it after the bytes
     * left. An irrevocable attempt holds back every other transaction of
     * the process, among them the readers that would drain a full pipe:
     * so a revocable attempt first waits, revocable, for room for its
     * bytes, and only then becomes irrevocable (it restarts: the
     * acquisition wrote own; its retry comes here irrevocable, with the
     * same bytes if its body makes the same calls). */
    if (!sstm_is_irrevocable()) {
      uint64_t total = recs_len(v);
      if (total != 0) wait_room(f->fd, total);
    }
    sstm_become_irrevocable();
  }
  if (!f->reg && !a->outer && v->n) {
    /* Take the ticket now (no other installation can come before ours)
     * and write, after the earlier tickets. */
    if (v->ticket == 0) v->ticket = v->s.wseq + 1;
    wait_applied(f, v->ticket - 1);
    uint64_t done;
    e = write_recs_bytes(f, v, &done);
    for (size_t i = 0; i < v->n; i++)
      free(v->r[i].data);
    v->n = 0;
    if (e) {
      a->err = e, a->r = EOF;
      v->s.flags |= FL_ERR;
    }
  }
  a->w = v->ticket ? v->ticket : v->n ? v->s.wseq + 1 : v->s.wseq;
}

int sstm_fflush(sstm_file_t *f) {
  if (f == NULL) {
    /* Every stream, as fflush(NULL); not in a transaction, where a
     * rollback would leave the list locked. */
    if (sstm_in_tx()) {
      errno = EINVAL;
      return EOF;
    }
    return flush_all();
  }
  op_t a = {.f = f};
  if (!run(op_flush, &a)) {
    finish(&a);
    return EOF;
  }
  if (a.r == 0 && a.outer) {
    /* Our own records were written at the commit; earlier tickets too,
     * unless their committers are still writing: wait for them. */
    wait_applied(f, a.w);
    /* relaxed: a report; applied's acquire above made a failure of those
     * tickets visible */
    if (atomic_load_explicit(&f->werr, memory_order_relaxed) != 0) {
      /* A deferred write failed: set the error indicator first, then take
       * the error to report it, so that sstm_ferror sees one of the two
       * throughout (it loads werr before the indicator). Another flush may
       * take it first: then that one reports it. */
      op_t c = {.f = f, .whence = 2};
      run(op_flags, &c);
      /* acq_rel: the release orders the indicator's installation before
       * the 0 that sstm_ferror's acquire load may read */
      int we = atomic_exchange_explicit(&f->werr, 0, memory_order_acq_rel);
      if (we) a.err = we, a.r = EOF;
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

/* (S7) After a commit: the latest committed seek's offset stays in the
 * kernel. */
static void seek_commit(seekact_t *s) {
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

/* (S7) After a rollback: undo the lseek (back to the last committed
 * position). */
static void seek_abort(seekact_t *s) {
  sstm_file_t *f = s->f;
  pthread_mutex_lock(&f->kmu);
  if (f->klast != f->kpos_done && sstm__stdio_sys->lseek(f->fd, (off_t)f->kpos_done, SEEK_SET) >= 0)
    f->klast = f->kpos_done;
  pthread_mutex_unlock(&f->kmu);
  free(s);
}

/* The seek's action (sstm__on_end). */
static void seek_end(void *p, bool committed) {
  if (committed)
    seek_commit(p);
  else
    seek_abort(p);
}

/* The end of the file as this attempt sees it (S5). -errno on failure. */
static int64_t end_of_file(view_t *v) {
  sstm_file_t *f = v->f;
  uint64_t w = settle(v);
  struct stat st;
  if (sstm__stdio_sys->fstat(f->fd, &st) != 0) return -errno;
  recheck(v, w);
  uint64_t end = (uint64_t)st.st_size;
  for (size_t i = 0; i < v->n; i++)
    if (v->r[i].off + v->r[i].len > end) end = v->r[i].off + v->r[i].len;
  uint64_t wl = (uint64_t)v->cw + v->sw;
  if (wl && v->s.wbase + wl > end) end = v->s.wbase + wl;
  return (int64_t)end;
}

static void op_seek(void *p) {
  op_t *a = p;
  a->err = 0, a->r = -1;
  view_t *v = acquire(a);
  if (v == NULL) return;
  sstm_file_t *f = a->f;
  if (!f->reg) {
    a->err = ESPIPE;
    return;
  }
  int64_t base;
  switch (a->whence) {
  case SEEK_SET: base = 0; break;
  case SEEK_CUR: base = (int64_t)v->s.pos; break;
  case SEEK_END:
    base = end_of_file(v);
    if (base < 0) {
      a->err = (int)-base;
      return;
    }
    if (f->mode & M_APP) v->s.apos = (uint64_t)base;
    break;
  default: a->err = EINVAL; return;
  }
  if ((a->off > 0 && base > INT64_MAX - a->off) || base + a->off < 0) {
    a->err = EINVAL;
    return;
  }
  uint64_t np = (uint64_t)(base + a->off);
  if (v->s.os_fpos != np) {
    /* (S7) The stream is acquired (own is written: under encounter-time
     * locking, write-locked) before the lseek ([Smiljkovic13] Fig. 3a): a
     * concurrent seek conflicts there, before touching the kernel. */
    uint64_t g = v->s.kgen + 1;
    seekact_t *s = malloc(sizeof *s);
    if (s == NULL) {
      a->err = ENOMEM;
      return;
    }
    *s = (seekact_t){.f = f, .gen = g, .pos = np};
    if (sstm__on_end(seek_end, s) != 0) {
      free(s);
      a->err = ENOMEM;
      return;
    }
    uint64_t os_fpos0 = v->s.os_fpos, kgen0 = v->s.kgen;
    v->s.os_fpos = np, v->s.kgen = g, v->cold = true;
    pthread_mutex_lock(&f->kmu);
    bool moved = sstm__stdio_sys->lseek(f->fd, (off_t)np, SEEK_SET) >= 0;
    int lerr = errno;
    if (moved) f->klast = np;
    pthread_mutex_unlock(&f->kmu);
    if (!moved) {
      /* The kernel refused the offset (EINVAL past the file system's
       * largest file): the seek fails as fseek(3)'s does, and changes
       * nothing. Its action is made inert (gen 0 is no committed seek's:
       * the commit applies nothing, the abort puts back what is already
       * there). */
      s->gen = 0;
      v->s.os_fpos = os_fpos0, v->s.kgen = kgen0;
      a->err = lerr != 0 ? lerr : EINVAL;
      return;
    }
  }
  v->s.pos = np;
  v->s.flags &= ~(uint64_t)FL_EOF;
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
  cstate_t s;
  if (!peek(a, &s)) return;
  if (!a->f->reg) {
    a->err = ESPIPE;
    return;
  }
  a->r = (int64_t)s.pos;
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
  if (a->whence == 0) { /* read: feof, ferror */
    cstate_t s;
    if (peek(a, &s)) a->r = (int64_t)s.flags;
    return;
  }
  view_t *v = acquire(a);
  if (v == NULL) return;
  if (a->whence == 1) /* clear */
    v->s.flags = 0;
  else /* set the error indicator */
    v->s.flags |= FL_ERR;
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
  /* werr before the indicator. acquire: a 0 stored by sstm_fflush's
   * exchange (release) comes after the indicator it installed, which
   * flags_of then reads; a failure of this thread's own commit is seen by
   * program order. */
  int we = f != NULL ? atomic_load_explicit(&f->werr, memory_order_acquire) : 0;
  /* acquire: a 0 stored by own_failed's decrement (release) comes after
   * the indicator it installed */
  uint32_t mine = f != NULL ? atomic_load_explicit(&f->wmine, memory_order_acquire) : 0;
  int64_t fl = flags_of(f);
  return (fl & FL_ERR) || we != 0 || mine != 0;
}

void sstm_clearerr(sstm_file_t *f) {
  if (f == NULL) return;
  /* (S4) The pending error of a deferred write first, then the indicator:
   * a ticket that fails during this call sets werr after this store and
   * stays reported; cleared after the indicator's transaction, it was
   * lost (the next flush returned 0). relaxed: one word, whose order of
   * modification alone decides which failures this call clears. Not on
   * an unregistered thread, where the call fails (EPERM). */
  if (sstm_self() != NULL) atomic_store_explicit(&f->werr, 0, memory_order_relaxed);
  op_t a = {.f = f, .whence = 1};
  run(op_flags, &a);
  finish(&a);
}

void sstm_rewind(sstm_file_t *f) {
  /* ISO C: (void)fseek(f, 0, SEEK_SET), and the error indicator cleared
   * even when the seek fails (ESPIPE on a pipe or socket) */
  (void)sstm_fseek(f, 0, SEEK_SET);
  sstm_clearerr(f);
}
