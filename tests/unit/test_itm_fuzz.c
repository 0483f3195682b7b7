/* SPDX-License-Identifier: MIT */
/* Unit tests: a differential fuzzer of the compiler ABI (libschedstm-itm,
 * src/abi/itm.c, docs/design/itm.md), as test_fuzz_access.c is of the
 * native access layer.
 *
 * The transactions are begun with _ITM_beginTransaction and their bodies
 * call the ABI's entry points themselves, as the code that gcc -fgnu-tm
 * emits does: every typed load (_ITM_R, RaR, RaW, RfW of U1, U2, U4, U8,
 * F, D, E, M64, M128, M256 when the CPU has AVX, CF, CD, CE) and store
 * (_ITM_W, WaR, WaW), aligned or not; every memcpy and memmove variant
 * (each side transactional or not, after a read or a write), memmove with
 * overlapping ranges both ways, the memset variants, 0 to 300 bytes; the
 * _ITM_L* log of private memory; writes into the attempt's own stack
 * frames (I6), which go in place; nested transactions, flat (pr_hasNoAbort)
 * or closed scopes (I5) that commit, cancel alone or cancel the outermost
 * one ([[outer]]); the switch to serial mode (_ITM_changeTransactionMode,
 * or a nested begin that goes irrevocable, I4) and transactions serial from
 * their begin; endings by commit, user cancel (_ITM_abortTransaction) and
 * restart (sstm_restart). This file is not compiled with -fgnu-tm (GCC
 * refuses it with the sanitizers), so it runs in the ASan build too: the
 * begin is declared returns_twice, as setjmp.
 *
 * One thread: the model is exact. Every load is checked inside the attempt
 * against the attempt's view (the committed bytes with its own stores over
 * them, and a nested scope's cancel taking its stores back out); each
 * attempt starts with memory and the logged private memory as committed;
 * after every transaction memory is compared with the committed model.
 * A long double's 6 padding bytes come from the argument's padding, which
 * the C calling convention leaves undefined: the model takes them from
 * memory after the commit and no load compares them.
 *
 * Several threads: each owns interleaved 2-byte granules of one region,
 * as in test_fuzz_access.c, and keeps their sum in a word of its own;
 * audits check every sum inside a transaction, and memory is checked
 * against each thread's committed model at the end.
 *
 * Both privatization settings of the ABI (cfg.itm_privatization, which
 * SCHEDSTM_ITM_PRIVATIZATION sets) have their own cases: the ABI reads it
 * once per process, and every case is a process. */
#define _GNU_SOURCE
#include <immintrin.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/escalate.h"
#include "../common/runner.h"

/* ---- the ABI's entry points ([IntelTMABI]) -------------------------------- */

/* It returns twice, as setjmp: again at every restart or cancel. */
uint32_t _ITM_beginTransaction(uint32_t props, ...) __attribute__((returns_twice));
void _ITM_commitTransaction(void);
void _ITM_abortTransaction(uint32_t reason);
void _ITM_changeTransactionMode(uint32_t mode);
uint32_t _ITM_inTransaction(void);
void _ITM_LB(const void *addr, size_t n);

enum {
  pr_instrumentedCode = 0x0001,
  pr_hasNoAbort = 0x0008,
  pr_doesGoIrrevocable = 0x0040,
  pr_readOnly = 0x4000,
  a_runInstrumentedCode = 0x01,
  a_abortTransaction = 0x10,
  userAbort = 1,
  outerAbort = 16,
  inIrrevocableTransaction = 2,
};

typedef long double _Complex cld_t;
typedef float _Complex cf_t;
typedef double _Complex cd_t;

#define ITM_DECL(suf, T, ...)                                                                      \
  __VA_ARGS__ T _ITM_R##suf(const T *);                                                            \
  __VA_ARGS__ T _ITM_RaR##suf(const T *);                                                          \
  __VA_ARGS__ T _ITM_RaW##suf(const T *);                                                          \
  __VA_ARGS__ T _ITM_RfW##suf(const T *);                                                          \
  __VA_ARGS__ void _ITM_W##suf(T *, T);                                                            \
  __VA_ARGS__ void _ITM_WaR##suf(T *, T);                                                          \
  __VA_ARGS__ void _ITM_WaW##suf(T *, T);                                                          \
  void _ITM_L##suf(const T *);                                                                     \
  __VA_ARGS__ static void rd_##suf(unsigned v, const void *p, unsigned char *out) {                \
    T x;                                                                                           \
    switch (v) {                                                                                   \
    case 0: x = _ITM_R##suf(p); break;                                                             \
    case 1: x = _ITM_RaR##suf(p); break;                                                           \
    case 2: x = _ITM_RaW##suf(p); break;                                                           \
    default: x = _ITM_RfW##suf(p); break;                                                          \
    }                                                                                              \
    memcpy(out, &x, sizeof x);                                                                     \
  }                                                                                                \
  __VA_ARGS__ static void wr_##suf(unsigned v, void *p, const unsigned char *in) {                 \
    T x;                                                                                           \
    memcpy(&x, in, sizeof x);                                                                      \
    switch (v) {                                                                                   \
    case 0: _ITM_W##suf(p, x); break;                                                              \
    case 1: _ITM_WaR##suf(p, x); break;                                                            \
    default: _ITM_WaW##suf(p, x); break;                                                           \
    }                                                                                              \
  }                                                                                                \
  static void lg_##suf(const void *p) { _ITM_L##suf(p); }

ITM_DECL(U1, uint8_t)
ITM_DECL(U2, uint16_t)
ITM_DECL(U4, uint32_t)
ITM_DECL(U8, uint64_t)
ITM_DECL(F, float)
ITM_DECL(D, double)
ITM_DECL(E, long double)
ITM_DECL(M64, __m64)
ITM_DECL(M128, __m128)
ITM_DECL(M256, __m256, __attribute__((target("avx"))))
ITM_DECL(CF, cf_t)
ITM_DECL(CD, cd_t)
ITM_DECL(CE, cld_t)

typedef void copy_fn(void *, const void *, size_t);
#define COPY_DECL(op)                                                                              \
  copy_fn _ITM_##op##RnWt, _ITM_##op##RnWtaR, _ITM_##op##RnWtaW, _ITM_##op##RtWn,                  \
      _ITM_##op##RtaRWn, _ITM_##op##RtaWWn, _ITM_##op##RtWt, _ITM_##op##RtWtaR, _ITM_##op##RtWtaW, \
      _ITM_##op##RtaRWt, _ITM_##op##RtaRWtaR, _ITM_##op##RtaRWtaW, _ITM_##op##RtaWWt,              \
      _ITM_##op##RtaWWtaR, _ITM_##op##RtaWWtaW;
COPY_DECL(memcpy)
COPY_DECL(memmove)
void _ITM_memsetW(void *, int, size_t);
void _ITM_memsetWaR(void *, int, size_t);
void _ITM_memsetWaW(void *, int, size_t);

/* [0]: memcpy, [1]: memmove; n: not transactional, t: transactional. */
static copy_fn *const copy_nt[2][3] = {{_ITM_memcpyRnWt, _ITM_memcpyRnWtaR, _ITM_memcpyRnWtaW},
                                       {_ITM_memmoveRnWt, _ITM_memmoveRnWtaR, _ITM_memmoveRnWtaW}};
static copy_fn *const copy_tn[2][3] = {{_ITM_memcpyRtWn, _ITM_memcpyRtaRWn, _ITM_memcpyRtaWWn},
                                       {_ITM_memmoveRtWn, _ITM_memmoveRtaRWn, _ITM_memmoveRtaWWn}};
static copy_fn *const copy_tt[2][9] = {
    {_ITM_memcpyRtWt, _ITM_memcpyRtWtaR, _ITM_memcpyRtWtaW, _ITM_memcpyRtaRWt, _ITM_memcpyRtaRWtaR,
     _ITM_memcpyRtaRWtaW, _ITM_memcpyRtaWWt, _ITM_memcpyRtaWWtaR, _ITM_memcpyRtaWWtaW},
    {_ITM_memmoveRtWt, _ITM_memmoveRtWtaR, _ITM_memmoveRtWtaW, _ITM_memmoveRtaRWt,
     _ITM_memmoveRtaRWtaR, _ITM_memmoveRtaRWtaW, _ITM_memmoveRtaWWt, _ITM_memmoveRtaWWtaR,
     _ITM_memmoveRtaWWtaW}};
static void (*const memset_w[3])(void *, int, size_t) = {_ITM_memsetW, _ITM_memsetWaR,
                                                         _ITM_memsetWaW};

/* ---- the types ------------------------------------------------------------- */

enum ty { T_U1, T_U2, T_U4, T_U8, T_F, T_D, T_E, T_M64, T_M128, T_M256, T_CF, T_CD, T_CE, T_N };
static const unsigned ty_size[T_N] = {1, 2, 4, 8, 4, 8, 16, 8, 16, 32, 8, 16, 32};
static const char *const ty_name[T_N] = {"U1",  "U2",   "U4",   "U8", "F",  "D", "E",
                                         "M64", "M128", "M256", "CF", "CD", "CE"};
static bool have_avx;

static void ty_read(enum ty k, unsigned v, const void *p, unsigned char *out) {
  switch (k) {
  case T_U1: rd_U1(v, p, out); break;
  case T_U2: rd_U2(v, p, out); break;
  case T_U4: rd_U4(v, p, out); break;
  case T_U8: rd_U8(v, p, out); break;
  case T_F: rd_F(v, p, out); break;
  case T_D: rd_D(v, p, out); break;
  case T_E: rd_E(v, p, out); break;
  case T_M64: rd_M64(v, p, out); break;
  case T_M128: rd_M128(v, p, out); break;
  case T_M256: rd_M256(v, p, out); break;
  case T_CF: rd_CF(v, p, out); break;
  case T_CD: rd_CD(v, p, out); break;
  case T_CE: rd_CE(v, p, out); break;
  case T_N: break;
  }
}

static void ty_write(enum ty k, unsigned v, void *p, const unsigned char *in) {
  switch (k) {
  case T_U1: wr_U1(v, p, in); break;
  case T_U2: wr_U2(v, p, in); break;
  case T_U4: wr_U4(v, p, in); break;
  case T_U8: wr_U8(v, p, in); break;
  case T_F: wr_F(v, p, in); break;
  case T_D: wr_D(v, p, in); break;
  case T_E: wr_E(v, p, in); break;
  case T_M64: wr_M64(v, p, in); break;
  case T_M128: wr_M128(v, p, in); break;
  case T_M256: wr_M256(v, p, in); break;
  case T_CF: wr_CF(v, p, in); break;
  case T_CD: wr_CD(v, p, in); break;
  case T_CE: wr_CE(v, p, in); break;
  case T_N: break;
  }
}

/* _ITM_L of the type, or _ITM_LB of its size (k == T_N: of n bytes). */
static void ty_log(enum ty k, const void *p, size_t n) {
  switch (k) {
  case T_U1: lg_U1(p); break;
  case T_U2: lg_U2(p); break;
  case T_U4: lg_U4(p); break;
  case T_U8: lg_U8(p); break;
  case T_F: lg_F(p); break;
  case T_D: lg_D(p); break;
  case T_E: lg_E(p); break;
  case T_M64: lg_M64(p); break;
  case T_M128: lg_M128(p); break;
  case T_M256: lg_M256(p); break;
  case T_CF: lg_CF(p); break;
  case T_CD: lg_CD(p); break;
  case T_CE: lg_CE(p); break;
  case T_N: _ITM_LB(p, n); break;
  }
}

/* The bytes of a value that a load returns: a long double is returned in
 * an x87 register, which holds its 10 bytes, not its 6 of padding. */
static bool ty_byte_counts(enum ty k, unsigned i) {
  if (k == T_E) return i < 10;
  if (k == T_CE) return i % 16 < 10;
  return true;
}

/* Bytes of a stored value that the type keeps bit-exact through the
 * registers: no NaN in a float or double (its payload is the one thing a
 * floating-point register may change), and long doubles normal (the
 * integer bit set, an exponent neither 0 nor all ones). */
static void ty_fix(enum ty k, unsigned char *b) {
  switch (k) {
  case T_F:
  case T_CF:
    for (unsigned i = 0; i < ty_size[k]; i += 4)
      if ((b[i + 3] & 0x7f) == 0x7f && (b[i + 2] & 0x80)) b[i + 2] &= 0x7f;
    break;
  case T_D:
  case T_CD:
    for (unsigned i = 0; i < ty_size[k]; i += 8)
      if ((b[i + 7] & 0x7f) == 0x7f && (b[i + 6] & 0xf0) == 0xf0) b[i + 6] &= 0xef;
    break;
  case T_E:
  case T_CE:
    for (unsigned i = 0; i < ty_size[k]; i += 16) {
      b[i + 7] |= 0x80;
      if ((b[i + 9] & 0x7f) == 0x7f) b[i + 9] &= 0x3f;
      if ((b[i + 9] & 0x7f) == 0 && b[i + 8] == 0) b[i + 8] = 1;
    }
    break;
  default: break;
  }
}

/* ---- memory and the model ---------------------------------------------------- */

enum { REGION = 4096, PRIV = 256, STK = 512, BULK_MAX = 300, MAX_DEPTH = 3 };
static const unsigned k_shifts[] = {3, 5, 12};

/* shared memory, accessed through the barriers only (inside transactions) */
static unsigned char mem[REGION] __attribute__((aligned(64)));
/* private memory, written plainly after an _ITM_L* of its bytes */
static unsigned char priv[PRIV] __attribute__((aligned(64)));
/* the plain side of the bulk copies */
static unsigned char nbuf[BULK_MAX + 32] __attribute__((aligned(64)));

/* A local of the calling function lies on the thread's stack, near its
 * frame: not so under ASan's detection of stack use after return, which
 * puts the arrays of frames on a fake stack elsewhere, where the ABI
 * cannot tell them from shared memory (I6): the checks that the barriers
 * write a frame in place are then left out. */
#define ON_THE_STACK(p) ((uintptr_t)(p) - (uintptr_t)__builtin_frame_address(0) + 65536u < 131072u)

/* Whether the arrays of frames are on the stack (ON_THE_STACK). Without,
 * a frame written through the barriers is shared memory to the ABI,
 * which writes it back at the commit, after the function returned: no
 * case writes one then. */
static __attribute__((noinline)) bool frames_on_the_stack(void) {
  uint64_t x[4];
  __asm__ volatile("" : : "r"(x) : "memory");
  return ON_THE_STACK(x);
}
static bool frames_ok;

static void fill_bytes(uint64_t seed, unsigned char *b, size_t n) {
  sstm_rng_t r;
  sstm_rng_seed(&r, seed);
  for (size_t i = 0; i < n; i += 8) {
    uint64_t v = sstm_rng_next(&r);
    memcpy(b + i, &v, n - i < 8 ? n - i : 8);
  }
}

/* ---- one thread: operations ---------------------------------------------------- */

enum op_kind {
  OP_READ,      /* a typed load of mem */
  OP_WRITE,     /* a typed store to mem */
  OP_OVERLAP,   /* a store, then a load of another width across it */
  OP_COPY_IN,   /* memcpy / memmove RnWt*: nbuf -> mem */
  OP_COPY_OUT,  /* memcpy / memmove Rt*Wn: mem -> nbuf, checked */
  OP_COPY_TT,   /* memcpy (apart) / memmove (overlapping either way) Rt*Wt* */
  OP_MEMSET,    /* memsetW* */
  OP_LOG,       /* _ITM_L* of priv, then plain stores there */
  OP_STACK,     /* a store or copy into the attempt's own frame (I6), then loads */
  OP_NESTED,    /* a nested transaction of its own operations */
  OP_SERIAL,    /* _ITM_changeTransactionMode, or a nested begin that goes irrevocable */
  OP_READ_BACK, /* the whole window read back (memcpyRtWn) and compared */
  OP_KINDS
};

/* END_RESTART2 and END_CANCEL2 end their second attempt too (with a
 * restart, a cancel): under the escalating policy that attempt is
 * irrevocable, its writes in place and undone from its log. */
enum end_kind { END_COMMIT, END_RESTART, END_CANCEL, END_RESTART2, END_CANCEL2 };
/* How a nested transaction ends. */
enum nest_end { NEST_COMMIT, NEST_CANCEL, NEST_OUTER_CANCEL };

enum { MAX_OPS = 40, POOL = 1024, FRAME_WORDS = 64 };

struct op {
  enum op_kind kind;
  enum ty ty;     /* typed accesses; T_N: bytes */
  enum ty ty2;    /* OP_OVERLAP's load */
  unsigned var;   /* which entry point of the family */
  unsigned off;   /* destination (or the load's) offset */
  unsigned off2;  /* source offset (OP_COPY_TT), the load's (OP_OVERLAP) */
  unsigned n;     /* bytes of a bulk operation */
  bool move;      /* memmove, not memcpy */
  uint64_t seed;  /* the stored bytes */
  unsigned first; /* OP_NESTED: its operations in the pool */
  unsigned count; /* OP_NESTED */
  bool closed;    /* OP_NESTED: a closed scope (no pr_hasNoAbort) */
  bool frame;     /* OP_NESTED: it writes its own frame through the barriers */
  enum nest_end nend;
};

struct fuzz_tx {
  struct op pool[POOL];
  unsigned npool;
  unsigned first, count; /* the top level's operations */
  unsigned window;
  uint32_t props;
  enum end_kind end;
  bool escalating;
  unsigned attempts;
  bool serial;    /* this attempt runs in serial mode (I3, I4) */
  bool to_serial; /* it asked for serial mode: the next attempt is */
  unsigned char model[REGION], view[REGION];
  unsigned char unk_model[REGION], unk_view[REGION]; /* 1: a long double's padding */
  unsigned char priv_model[PRIV], priv_view[PRIV];
  unsigned char *stk; /* this attempt's frame (OP_STACK) */
  unsigned char stk_view[STK];
  /* views at each nested begin, which a cancel of it goes back to */
  unsigned char snap_view[MAX_DEPTH][REGION], snap_unk[MAX_DEPTH][REGION];
  unsigned char snap_priv[MAX_DEPTH][PRIV], snap_stk[MAX_DEPTH][STK];
  uint64_t inner_cancels, outer_cancels, serials, stack_ops;
};

static enum ty pick_ty(sstm_rng_t *r) {
  for (;;) {
    enum ty k = (enum ty)sstm_rng_below(r, T_N);
    if (k != T_M256 || have_avx) return k;
  }
}

/* An offset for n bytes in [0, region): aligned to align three times in
 * four, else anywhere. */
static unsigned pick_off(sstm_rng_t *r, unsigned n, unsigned align, unsigned region) {
  unsigned off = (unsigned)sstm_rng_below(r, region - n + 1);
  if (align > 1 && sstm_rng_below(r, 4) != 0) off &= ~(align - 1);
  return off;
}

static unsigned pick_len(sstm_rng_t *r, unsigned max) {
  unsigned n = sstm_rng_below(r, 4) == 0 ? (unsigned)sstm_rng_below(r, BULK_MAX + 1)
                                         : (unsigned)sstm_rng_below(r, 41);
  return n > max ? max : n;
}

static unsigned gen_ops(sstm_rng_t *r, struct fuzz_tx *t, unsigned count, unsigned depth);

static void gen_op(sstm_rng_t *r, struct fuzz_tx *t, struct op *o, unsigned depth) {
  unsigned w = t->window;
  memset(o, 0, sizeof *o);
  o->kind = (enum op_kind)sstm_rng_below(r, OP_KINDS);
  if (o->kind == OP_SERIAL && sstm_rng_below(r, 4) != 0) o->kind = OP_READ;
  if (o->kind == OP_NESTED && depth + 1 >= MAX_DEPTH) o->kind = OP_WRITE;
  o->seed = sstm_rng_next(r);
  o->ty = pick_ty(r);
  switch (o->kind) {
  case OP_READ:
  case OP_WRITE:
    o->var = (unsigned)sstm_rng_below(r, o->kind == OP_READ ? 4 : 3);
    o->off = pick_off(r, ty_size[o->ty], ty_size[o->ty] > 16 ? 16 : ty_size[o->ty], w);
    break;
  case OP_OVERLAP: {
    /* a wide store and a narrow load inside it, or the reverse */
    bool wide_first = sstm_rng_below(r, 2);
    o->ty = wide_first ? T_U8 : T_U1;
    o->ty2 = wide_first ? T_U1 : T_U8;
    if (sstm_rng_below(r, 4) == 0) o->ty = wide_first ? T_M128 : T_U2;
    o->var = (unsigned)sstm_rng_below(r, 3);
    unsigned ws = ty_size[o->ty], rs = ty_size[o->ty2];
    unsigned lo = 8, hi = w - 24;
    o->off = lo + (unsigned)sstm_rng_below(r, hi - lo);
    /* the load covers at least one stored byte */
    unsigned first = o->off + 1 > rs ? o->off + 1 - rs : 0;
    o->off2 = first + (unsigned)sstm_rng_below(r, o->off + ws - first);
    break;
  }
  case OP_COPY_IN:
  case OP_COPY_OUT:
    o->move = sstm_rng_below(r, 2);
    o->var = (unsigned)sstm_rng_below(r, 3);
    o->n = pick_len(r, w);
    o->off = pick_off(r, o->n, 8, w);
    break;
  case OP_COPY_TT:
    o->move = sstm_rng_below(r, 2);
    o->var = (unsigned)sstm_rng_below(r, 9);
    o->n = pick_len(r, w / 2);
    if (o->move) { /* overlapping, either way, or apart */
      unsigned d = (unsigned)sstm_rng_below(r, o->n + 1);
      o->off2 = pick_off(r, o->n + d, 8, w);
      if (sstm_rng_below(r, 2))
        o->off = o->off2 + d;
      else
        o->off = o->off2, o->off2 += d;
    } else { /* apart: [0, w/2) and [w/2, w), either way */
      unsigned a = pick_off(r, o->n, 8, w / 2), b = w / 2 + pick_off(r, o->n, 8, w / 2);
      if (sstm_rng_below(r, 2))
        o->off = a, o->off2 = b;
      else
        o->off = b, o->off2 = a;
    }
    break;
  case OP_MEMSET:
    o->var = (unsigned)sstm_rng_below(r, 3);
    o->n = pick_len(r, w);
    o->off = pick_off(r, o->n, 8, w);
    break;
  case OP_LOG:
    if (sstm_rng_below(r, 3) == 0) o->ty = T_N;
    o->n = o->ty == T_N ? (unsigned)sstm_rng_below(r, 65) : ty_size[o->ty];
    o->off = pick_off(r, o->n, 8, PRIV);
    break;
  case OP_STACK:
    o->var = (unsigned)sstm_rng_below(r, 3);
    o->ty = (enum ty)sstm_rng_below(r, 4); /* U1..U8; or bytes */
    if (sstm_rng_below(r, 3) == 0) o->ty = T_N;
    o->n = o->ty == T_N ? pick_len(r, STK < w ? STK : w) : ty_size[o->ty];
    o->off = pick_off(r, o->n, 8, STK);
    o->off2 = pick_off(r, o->n, 8, w); /* bytes: copied from mem */
    break;
  case OP_NESTED:
    o->closed = sstm_rng_below(r, 4) != 0;
    o->frame = sstm_rng_below(r, 2);
    o->nend = NEST_COMMIT;
    if (o->closed && sstm_rng_below(r, 2)) o->nend = NEST_CANCEL;
    if (sstm_rng_below(r, 16) == 0) o->nend = NEST_OUTER_CANCEL;
    o->count = 1 + (unsigned)sstm_rng_below(r, 6);
    o->first = gen_ops(r, t, o->count, depth + 1);
    break;
  case OP_SERIAL: o->var = (unsigned)sstm_rng_below(r, 2); break;
  case OP_READ_BACK:
  case OP_KINDS: break;
  }
}

static unsigned gen_ops(sstm_rng_t *r, struct fuzz_tx *t, unsigned count, unsigned depth) {
  unsigned first = t->npool;
  CHECK_LE_U(first + count, POOL);
  t->npool += count;
  for (unsigned i = 0; i < count; i++) {
    struct op tmp;
    gen_op(r, t, &tmp, depth); /* may add nested operations to the pool */
    t->pool[first + i] = tmp;
  }
  return first;
}

static void gen_tx(sstm_rng_t *r, struct fuzz_tx *t, unsigned window) {
  t->window = window;
  t->npool = 0;
  /* room for the nested ones: at most MAX_OPS + 6 * (MAX_OPS + 6 * ...) */
  t->count = 1 + (unsigned)sstm_rng_below(r, MAX_OPS / 2);
  t->first = gen_ops(r, t, t->count, 0);
  unsigned mode = (unsigned)sstm_rng_below(r, 16);
  t->props = pr_instrumentedCode;
  if (mode < 2) t->props |= pr_readOnly;           /* a hint: a store restarts it as an update */
  if (mode == 2) t->props |= pr_doesGoIrrevocable; /* serial from its begin */
  unsigned e = (unsigned)sstm_rng_below(r, 8);
  t->end = e < 5 ? END_COMMIT : e < 7 ? END_RESTART : END_CANCEL;
  if (t->escalating && e >= 4) t->end = e < 6 ? END_RESTART2 : END_CANCEL2;
}

/* ---- one thread: the body ---------------------------------------------------- */

static void check_bytes(const struct fuzz_tx *t, const char *what, const struct op *o,
                        const unsigned char *got, const unsigned char *want,
                        const unsigned char *unk, unsigned n, enum ty k) {
  for (unsigned i = 0; i < n; i++) {
    if (k != T_N && !ty_byte_counts(k, i)) continue;
    if (unk && unk[i]) continue;
    if (got[i] != want[i])
      FAIL("%s (%s, entry %u) at offset %u, %u bytes: byte %u is 0x%02x, the model has 0x%02x "
           "(attempt %u%s)",
           what, k == T_N ? "bytes" : ty_name[k], o->var, o->off, n, i, got[i], want[i],
           t->attempts, t->serial ? ", serial" : "");
  }
}

/* The model's view of a store of n bytes at off. */
static void view_store(struct fuzz_tx *t, unsigned off, const unsigned char *b, unsigned n,
                       enum ty k) {
  memcpy(t->view + off, b, n);
  for (unsigned i = 0; i < n; i++)
    t->unk_view[off + i] = k != T_N && !ty_byte_counts(k, i);
}

static void view_move(struct fuzz_tx *t, unsigned dst, unsigned src, unsigned n) {
  memmove(t->view + dst, t->view + src, n);
  memmove(t->unk_view + dst, t->unk_view + src, n);
}

static void exec_ops(struct fuzz_tx *t, unsigned first, unsigned count, unsigned depth);

/* A closed scope (none in serial mode) whose function writes its own frame
 * through the barriers inside it (in place, I6, and noted for the
 * scope's cancel) and commits it into the enclosing one, or cancels it. */
static __attribute__((noinline)) void scope_in_a_frame(struct fuzz_tx *t, uint64_t seed) {
  if (!frames_ok) return;
  uint64_t loc[FRAME_WORDS];
  memset(loc, 0, sizeof loc);
  __asm__ volatile("" : : "r"(loc) : "memory");
  bool cancel = seed % 4 == 0 && !t->serial;
  uint32_t a = _ITM_beginTransaction(pr_instrumentedCode);
  if (a & a_abortTransaction) {
    CHECK(cancel);
    for (unsigned i = 0; i < FRAME_WORDS; i++)
      CHECK_EQ_X(loc[i], 0); /* put back by the cancel */
    return;
  }
  for (unsigned i = 0; i < FRAME_WORDS; i++) {
    unsigned char b[8];
    fill_bytes(seed + i, b, 8);
    ty_write(T_U8, i % 3, &loc[i], b);
    CHECK_EQ_MEM(&loc[i], b, 8); /* in place */
  }
  if (cancel) _ITM_abortTransaction(userAbort);
  _ITM_commitTransaction();
  __asm__ volatile("" : : "r"(loc) : "memory");
}

/* A nested transaction: its begin, its operations, its end. */
static __attribute__((noinline)) void exec_nested(struct fuzz_tx *t, const struct op *o,
                                                  unsigned depth) {
  bool closed = o->closed && !t->serial; /* a serial transaction opens no scope */
  enum nest_end end = t->serial ? NEST_COMMIT : o->nend;
  if (!o->closed && end == NEST_CANCEL) end = NEST_COMMIT;
  memcpy(t->snap_view[depth], t->view, REGION);
  memcpy(t->snap_unk[depth], t->unk_view, REGION);
  memcpy(t->snap_priv[depth], t->priv_view, PRIV);
  memcpy(t->snap_stk[depth], t->stk_view, STK);
  uint64_t frame[FRAME_WORDS];
  memset(frame, 0, sizeof frame);
  __asm__ volatile("" : : "r"(frame) : "memory"); /* kept, whatever the optimizer sees */
  uint32_t a = _ITM_beginTransaction(pr_instrumentedCode | (o->closed ? 0 : pr_hasNoAbort));
  if (a & a_abortTransaction) {
    /* Its cancel: everything it did is undone, and the enclosing
     * transaction goes on. */
    CHECK_MSG(closed && end == NEST_CANCEL, "a nested begin returned a cancel (attempt %u)",
              t->attempts);
    memcpy(t->view, t->snap_view[depth], REGION);
    memcpy(t->unk_view, t->snap_unk[depth], REGION);
    memcpy(t->priv_view, t->snap_priv[depth], PRIV);
    memcpy(t->stk_view, t->snap_stk[depth], STK);
    /* plain memory: the logged bytes and the frame's in-place writes back */
    struct op rb = {.kind = OP_READ_BACK};
    check_bytes(t, "private memory after a nested cancel", &rb, priv, t->priv_view, NULL, PRIV,
                T_N);
    if (t->stk)
      check_bytes(t, "the attempt's frame after a nested cancel", &rb, t->stk, t->stk_view, NULL,
                  STK, T_N);
    t->inner_cancels++;
    return;
  }
  CHECK(a & a_runInstrumentedCode);
  if (o->frame && frames_ok) {
    /* This function's frame, made inside the enclosing transaction's
     * scope (if any), written through the barriers inside its own: in
     * place (I6), noted for its cancel, which must not write it back when
     * an enclosing scope cancels after this one committed (its frame is
     * gone by then). */
    unsigned char b[8];
    for (unsigned i = 0; i < FRAME_WORDS; i++) {
      fill_bytes(o->seed + i, b, 8);
      ty_write(T_U8, i % 3, &frame[i], b);
      CHECK_EQ_MEM(&frame[i], b, 8); /* in place */
    }
    memset_w[o->seed % 3](frame, (int)(o->seed & 0xff), sizeof frame);
  }
  exec_ops(t, o->first, o->count, depth + 1);
  /* A scope in a frame of its own that returns before this one ends: the
   * frame is gone when this one cancels, and the cancel's frames lie
   * where it was. */
  if (o->frame) scope_in_a_frame(t, o->seed);
  if (end == NEST_CANCEL) _ITM_abortTransaction(userAbort);
  if (end == NEST_OUTER_CANCEL) {
    t->outer_cancels++;
    _ITM_abortTransaction(userAbort | outerAbort);
  }
  _ITM_commitTransaction();
}

static void exec_op(struct fuzz_tx *t, const struct op *o, unsigned depth) {
  unsigned char b[BULK_MAX + 32];
  unsigned char got[BULK_MAX + 32];
  switch (o->kind) {
  case OP_READ:
    ty_read(o->ty, o->var, mem + o->off, got);
    check_bytes(t, "load", o, got, t->view + o->off, t->unk_view + o->off, ty_size[o->ty], o->ty);
    break;
  case OP_WRITE:
    fill_bytes(o->seed, b, ty_size[o->ty]);
    ty_fix(o->ty, b);
    ty_write(o->ty, o->var, mem + o->off, b);
    view_store(t, o->off, b, ty_size[o->ty], o->ty);
    break;
  case OP_OVERLAP:
    fill_bytes(o->seed, b, ty_size[o->ty]);
    ty_write(o->ty, o->var, mem + o->off, b);
    view_store(t, o->off, b, ty_size[o->ty], o->ty);
    ty_read(o->ty2, o->var, mem + o->off2, got);
    check_bytes(t, "load across a store", o, got, t->view + o->off2, t->unk_view + o->off2,
                ty_size[o->ty2], o->ty2);
    break;
  case OP_COPY_IN:
    fill_bytes(o->seed, nbuf, o->n);
    copy_nt[o->move][o->var](mem + o->off, nbuf, o->n);
    view_store(t, o->off, nbuf, o->n, T_N);
    break;
  case OP_COPY_OUT:
    memset(nbuf, 0x5a, sizeof nbuf);
    copy_tn[o->move][o->var](nbuf, mem + o->off, o->n);
    check_bytes(t, "bulk load", o, nbuf, t->view + o->off, t->unk_view + o->off, o->n, T_N);
    for (unsigned i = o->n; i < sizeof nbuf; i++)
      CHECK_MSG(nbuf[i] == 0x5a, "a bulk load of %u bytes wrote byte %u past its end", o->n, i);
    break;
  case OP_COPY_TT:
    copy_tt[o->move][o->var](mem + o->off, mem + o->off2, o->n);
    view_move(t, o->off, o->off2, o->n);
    break;
  case OP_MEMSET: {
    int c = (int)(o->seed & 0xff);
    memset_w[o->var](mem + o->off, c, o->n);
    memset(b, c, o->n);
    view_store(t, o->off, b, o->n, T_N);
    break;
  }
  case OP_LOG:
    ty_log(o->ty, priv + o->off, o->n);
    fill_bytes(o->seed, priv + o->off, o->n); /* plain stores */
    memcpy(t->priv_view + o->off, priv + o->off, o->n);
    break;
  case OP_STACK: {
    /* The attempt's own frame: the barriers write it in place (I6), so the
     * plain bytes show the store at once. */
    if (t->stk == NULL) break;
    unsigned char *p = t->stk + o->off;
    if (o->ty == T_N) {
      if (o->var == 0) {
        copy_tt[0][o->seed % 9](p, mem + o->off2, o->n);
        memcpy(t->stk_view + o->off, t->view + o->off2, o->n);
        for (unsigned i = 0; i < o->n; i++) /* a long double's padding: as copied */
          if (t->unk_view[o->off2 + i]) t->stk_view[o->off + i] = p[i];
      } else if (o->var == 1) {
        fill_bytes(o->seed, nbuf, o->n);
        copy_nt[1][o->seed % 3](p, nbuf, o->n);
        memcpy(t->stk_view + o->off, nbuf, o->n);
      } else {
        memset_w[o->seed % 3](p, (int)(o->seed & 0xff), o->n);
        memset(t->stk_view + o->off, (int)(o->seed & 0xff), o->n);
      }
    } else {
      fill_bytes(o->seed, b, o->n);
      ty_write(o->ty, o->var, p, b);
      memcpy(t->stk_view + o->off, b, o->n);
      ty_read(o->ty, o->var, p, got);
      check_bytes(t, "load of the attempt's frame", o, got, b, NULL, o->n, o->ty);
    }
    check_bytes(t, "the attempt's frame (plain) after a store", o, t->stk, t->stk_view, NULL, STK,
                T_N);
    t->stack_ops++;
    break;
  }
  case OP_NESTED: exec_nested(t, o, depth); break;
  case OP_SERIAL:
    if (t->serial) break; /* already: a no-op */
    t->to_serial = true;
    t->serials++;
    if (o->var == 0) {
      _ITM_changeTransactionMode(0); /* restarts the transaction serial */
    } else {
      /* a nested transaction that goes irrevocable on every path (I4) */
      (void)_ITM_beginTransaction(pr_instrumentedCode | pr_hasNoAbort | pr_doesGoIrrevocable);
    }
    FAIL("the switch to serial mode returned in a revocable attempt (attempt %u)", t->attempts);
    break;
  case OP_READ_BACK:
    copy_tn[0][0](nbuf, mem, t->window < BULK_MAX ? t->window : BULK_MAX);
    check_bytes(t, "read back", o, nbuf, t->view, t->unk_view,
                t->window < BULK_MAX ? t->window : BULK_MAX, T_N);
    break;
  case OP_KINDS: break;
  }
}

static void exec_ops(struct fuzz_tx *t, unsigned first, unsigned count, unsigned depth) {
  for (unsigned i = 0; i < count; i++)
    exec_op(t, &t->pool[first + i], depth);
}

static __attribute__((noinline)) void fuzz_body(struct fuzz_tx *t) {
  unsigned char stk[STK]; /* this attempt's own frame (I6) */
  t->attempts++;
  CHECK_MSG(t->attempts < 100, "transaction restarted %u times on one thread", t->attempts);
  t->serial = t->to_serial || (t->props & pr_doesGoIrrevocable);
  if (t->serial) CHECK_EQ_U(_ITM_inTransaction(), inIrrevocableTransaction);
  /* One thread: memory and the logged private memory are as committed at
   * every attempt's begin (the rollback undid the last one's). */
  struct op rb = {.kind = OP_READ_BACK};
  check_bytes(t, "memory at an attempt's begin", &rb, mem, t->model, t->unk_model, REGION, T_N);
  check_bytes(t, "private memory at an attempt's begin", &rb, priv, t->priv_model, NULL, PRIV, T_N);
  memcpy(t->view, t->model, REGION);
  memcpy(t->unk_view, t->unk_model, REGION);
  memcpy(t->priv_view, t->priv_model, PRIV);
  memset(stk, 0xc3, STK);
  memset(t->stk_view, 0xc3, STK);
  /* none on a fake stack (ON_THE_STACK) */
  t->stk = ON_THE_STACK(stk) ? stk : NULL;
  exec_ops(t, t->first, t->count, 0);
  if (t->serial) return; /* a serial transaction cannot restart or cancel */
  switch (t->end) {
  case END_COMMIT: break;
  case END_CANCEL: _ITM_abortTransaction(userAbort); break;
  case END_RESTART:
    if (t->attempts == 1) sstm_restart();
    break;
  case END_RESTART2:
    if (t->attempts <= 2) sstm_restart();
    break;
  case END_CANCEL2:
    if (t->attempts == 1) sstm_restart();
    if (t->attempts == 2) _ITM_abortTransaction(userAbort);
    break;
  }
}

/* One transaction: true if it committed. */
static __attribute__((noinline)) bool run_tx(struct fuzz_tx *t) {
  uint32_t a = _ITM_beginTransaction(t->props);
  if (a & a_abortTransaction) return false;
  CHECK(a & a_runInstrumentedCode);
  fuzz_body(t);
  _ITM_commitTransaction();
  return true;
}

/* ---- one thread: the driver ------------------------------------------------ */

static void init_with(unsigned shift, const char *cm, bool priv_safe) {
  sstm_config_t cfg;
  sstm_test_config(&cfg);
  cfg.stripe_shift = shift;
  cfg.itm_privatization = priv_safe;
  if (cm) cfg.cm = cm;
  CHECK_OK(sstm_init(&cfg));
  CHECK_OK(sstm_thread_init());
}

static struct fuzz_tx the_tx;

static void fuzz_one_thread(unsigned shift, uint64_t seed, uint64_t ntx, bool escalating,
                            bool priv_safe) {
  static bool registered;
  if (escalating && !registered) CHECK_OK(sstm_cm_register(&escalate_ops));
  registered |= escalating;
  init_with(shift, escalating ? escalate_ops.name : NULL, priv_safe);
  struct fuzz_tx *t = &the_tx;
  sstm_rng_t r;
  sstm_rng_seed(&r, seed);
  for (unsigned i = 0; i < REGION; i++)
    mem[i] = t->model[i] = (unsigned char)sstm_rng_next(&r);
  for (unsigned i = 0; i < PRIV; i++)
    priv[i] = t->priv_model[i] = (unsigned char)sstm_rng_next(&r);
  memset(t->unk_model, 0, REGION);
  t->escalating = escalating;
  t->inner_cancels = t->outer_cancels = t->serials = t->stack_ops = 0;
  uint64_t commits = 0, cancels = 0, restarts = 0;
  bool stack_real = false;
  for (uint64_t n = 0; n < ntx; n++) {
    /* a window of the region, so that the accesses overlap */
    unsigned window = n % 3 == 0 ? 128 : n % 3 == 1 ? 512 : REGION;
    gen_tx(&r, t, window);
    t->attempts = 0;
    t->to_serial = false;
    bool committed = run_tx(t);
    stack_real |= t->stk != NULL;
    CHECK_EQ_U(_ITM_inTransaction(), 0);
    if (committed) {
      memcpy(t->model, t->view, REGION);
      memcpy(t->unk_model, t->unk_view, REGION);
      memcpy(t->priv_model, t->priv_view, PRIV);
      commits++;
    } else {
      cancels++;
    }
    restarts += t->attempts > 1;
    for (unsigned i = 0; i < REGION; i++) {
      if (t->unk_model[i]) { /* a long double's padding: as the store left it */
        t->model[i] = mem[i];
        t->unk_model[i] = 0;
      }
      if (mem[i] != t->model[i])
        FAIL("after transaction %llu (%s, %u attempts): byte %u is 0x%02x, the model has 0x%02x",
             (unsigned long long)n, committed ? "committed" : "cancelled", t->attempts, i, mem[i],
             t->model[i]);
    }
    for (unsigned i = 0; i < PRIV; i++)
      if (priv[i] != t->priv_model[i])
        FAIL("after transaction %llu (%s): private byte %u is 0x%02x, the model has 0x%02x",
             (unsigned long long)n, committed ? "committed" : "cancelled", i, priv[i],
             t->priv_model[i]);
  }
  printf("stripe 2^%u: %llu commits, %llu cancels, %llu restarted, %llu nested cancels, %llu "
         "outer cancels from nested, %llu serial switches, %llu frame stores\n",
         shift, (unsigned long long)commits, (unsigned long long)cancels,
         (unsigned long long)restarts, (unsigned long long)t->inner_cancels,
         (unsigned long long)t->outer_cancels, (unsigned long long)t->serials,
         (unsigned long long)t->stack_ops);
  /* Every kind of ending happened (the seed is fixed, so this is stable). */
  CHECK_GT_U(commits, 0);
  CHECK_GT_U(cancels, 0);
  CHECK_GT_U(restarts, 0);
  CHECK_GT_U(t->inner_cancels, 0);
  CHECK_GT_U(t->outer_cancels, 0);
  CHECK_GT_U(t->serials, 0);
  if (stack_real) CHECK_GT_U(t->stack_ops, 0);
  sstm_test_fini();
}

static void one_thread_cases(bool escalating, bool priv_safe) {
  have_avx = __builtin_cpu_supports("avx");
  frames_ok = frames_on_the_stack();
  uint64_t ntx = sstm_test_scaled(30000, 300);
  escalations = 0;
  for (unsigned s = 0; s < sizeof k_shifts / sizeof k_shifts[0]; s++)
    fuzz_one_thread(k_shifts[s], sstm_test_seed() + s, ntx, escalating, priv_safe);
  if (escalating) CHECK_GT_U(escalations, 0);
}

TEST(one_thread_matches_the_model) { one_thread_cases(false, true); }
TEST(one_thread_matches_the_model_without_privatization_safety) { one_thread_cases(false, false); }
TEST(escalated_attempts_undo_to_the_model) { one_thread_cases(true, true); }

/* ---- a closed scope's cancel and the frames of its inner scopes ----------- */

/* (I5) A scope opened in a function's frame, which that function writes
 * through the barriers inside the scope (in place, I6, and noted for the
 * scope's cancel), commits into an enclosing scope; the function returns.
 * When the enclosing scope then cancels, that frame is gone, and the
 * cancel's own frames lie where it was: writing the noted bytes back
 * there overwrote the cancel's return addresses (a jump to 0). */
static uint64_t scope_shared[8] __attribute__((aligned(64)));
static int scope_cancels;

static __attribute__((noinline)) void one_scope_in_a_frame(void) {
  uint64_t loc[128];
  memset(loc, 0, sizeof loc);
  __asm__ volatile("" : : "r"(loc) : "memory");
  uint32_t a = _ITM_beginTransaction(pr_instrumentedCode);
  CHECK_FALSE(a & a_abortTransaction);
  for (unsigned i = 0; i < 128; i++)
    _ITM_WU8(&loc[i], ~(uint64_t)i);
  CHECK_EQ_X(loc[5], ~(uint64_t)5); /* in place */
  _ITM_commitTransaction();         /* into the enclosing scope */
  __asm__ volatile("" : : "r"(loc) : "memory");
}

static __attribute__((noinline)) void enclosing_scope(void) {
  uint32_t a = _ITM_beginTransaction(pr_instrumentedCode);
  if (a & a_abortTransaction) {
    scope_cancels++;
    return;
  }
  _ITM_WU8(&scope_shared[0], 1);
  one_scope_in_a_frame();
  _ITM_abortTransaction(userAbort); /* this scope alone */
}

TEST(a_scope_cancel_writes_nothing_into_frames_its_inner_scopes_left) {
  if (!frames_on_the_stack()) sstm_test_skip("the frames' arrays are not on the stack");
  sstm_test_init();
  uint32_t a = _ITM_beginTransaction(pr_instrumentedCode);
  CHECK_FALSE(a & a_abortTransaction);
  enclosing_scope();
  CHECK_EQ_U(_ITM_RU8(&scope_shared[0]), 0); /* the scope's write undone */
  _ITM_WU8(&scope_shared[1], 2);
  _ITM_commitTransaction();
  CHECK_EQ_I(scope_cancels, 1);
  CHECK_EQ_U(scope_shared[0], 0);
  CHECK_EQ_U(scope_shared[1], 2);
  sstm_test_fini();
}

/* Three deep: a middle scope, opened in a frame of its own inside the
 * enclosing one, writes that frame, lets an inner scope in a deeper frame
 * commit into it and return, writes its frame again and cancels alone: its
 * own frame's bytes come back (they lie above its begin), the inner frame's
 * do not (below it, gone). Then another scope at the same addresses
 * commits, and the enclosing scope cancels past both. */
static int mid_cancels;

static __attribute__((noinline)) void mid_scope(bool cancel) {
  uint64_t m[16];
  for (unsigned i = 0; i < 16; i++)
    m[i] = 100 + i;
  __asm__ volatile("" : : "r"(m) : "memory");
  uint32_t a = _ITM_beginTransaction(pr_instrumentedCode);
  if (a & a_abortTransaction) {
    mid_cancels++;
    __asm__ volatile("" : : "r"(m) : "memory");
    for (unsigned i = 0; i < 16; i++)
      CHECK_EQ_X(m[i], 100 + i); /* the scope's frame writes undone */
    return;
  }
  for (unsigned i = 0; i < 16; i++)
    _ITM_WU8(&m[i], 200 + i);
  _ITM_WU8(&scope_shared[2], 3);
  one_scope_in_a_frame(); /* commits into this scope, returns */
  for (unsigned i = 0; i < 16; i += 2)
    _ITM_WU8(&m[i], 300 + i);
  CHECK_EQ_X(m[4], 304);                        /* in place */
  if (cancel) _ITM_abortTransaction(userAbort); /* this scope alone */
  _ITM_commitTransaction();                     /* into the enclosing scope */
  __asm__ volatile("" : : "r"(m) : "memory");
}

static __attribute__((noinline)) void enclosing_scope_of_three(void) {
  uint32_t a = _ITM_beginTransaction(pr_instrumentedCode);
  if (a & a_abortTransaction) {
    scope_cancels++;
    return;
  }
  _ITM_WU8(&scope_shared[0], 1);
  mid_scope(true);
  CHECK_EQ_U(_ITM_RU8(&scope_shared[2]), 0); /* the middle scope's write undone */
  mid_scope(false);
  CHECK_EQ_U(_ITM_RU8(&scope_shared[2]), 3);
  _ITM_abortTransaction(userAbort); /* this scope alone */
}

TEST(three_deep_scopes_cancel_their_own_frames_writes_and_skip_those_left) {
  if (!frames_on_the_stack()) sstm_test_skip("the frames' arrays are not on the stack");
  sstm_test_init();
  scope_cancels = mid_cancels = 0;
  memset(scope_shared, 0, sizeof scope_shared);
  uint32_t a = _ITM_beginTransaction(pr_instrumentedCode);
  CHECK_FALSE(a & a_abortTransaction);
  enclosing_scope_of_three();
  CHECK_EQ_U(_ITM_RU8(&scope_shared[0]), 0);
  CHECK_EQ_U(_ITM_RU8(&scope_shared[2]), 0);
  _ITM_WU8(&scope_shared[1], 2);
  _ITM_commitTransaction();
  CHECK_EQ_I(scope_cancels, 1);
  CHECK_EQ_I(mid_cancels, 1);
  CHECK_EQ_U(scope_shared[0], 0);
  CHECK_EQ_U(scope_shared[1], 2);
  CHECK_EQ_U(scope_shared[2], 0);
  sstm_test_fini();
}

/* ---- several threads: owned granules ------------------------------------- */

enum { MT_THREADS = 4, MT_REGION = 1024, GRANULE = 2 };

/* Thread u owns the granules g with g % MT_THREADS == u. Its sum word is
 * the 16-bit sum of its granules (as little-endian 16-bit numbers). */
static uint64_t mt_sum[MT_THREADS][8] __attribute__((aligned(64)));
static unsigned char mt_init[MT_REGION];
static unsigned char mt_final[MT_THREADS][MT_REGION];
static uint16_t mt_final_sum[MT_THREADS];

static unsigned owner_of(unsigned off) { return (off / GRANULE) % MT_THREADS; }

struct mt_ctx {
  unsigned me;
  unsigned char model[MT_REGION], view[MT_REGION], snap[MT_REGION];
  uint16_t sum_model, sum_view, sum_snap;
  unsigned nstores;
  unsigned st_off[16], st_size[16], st_how[16];
  uint16_t st_val[16];
  unsigned nloads;
  unsigned ld_off[16], ld_size[16], ld_how[16];
  unsigned nest_from, nest_to; /* stores [from, to) in a closed scope */
  bool nest_cancel;
  bool audit, cancel, serial_switch, yield;
  bool serial;
  unsigned attempts;
  uint64_t inner_cancels, serials, restarted;
};

static uint16_t granule_at(const unsigned char *m, unsigned g) {
  return (uint16_t)(m[g * GRANULE] | (unsigned)m[g * GRANULE + 1] << 8);
}

static void mt_audit(struct mt_ctx *c) {
  static __thread unsigned char buf[MT_REGION];
  copy_tn[c->attempts % 2][c->attempts % 3](buf, mem, MT_REGION);
  for (unsigned u = 0; u < MT_THREADS; u++) {
    uint16_t s = 0;
    for (unsigned g = u; g < MT_REGION / GRANULE; g += MT_THREADS)
      s = (uint16_t)(s + granule_at(buf, g));
    uint64_t want = _ITM_RU8(&mt_sum[u][0]);
    if (s != (uint16_t)want)
      FAIL("audit: thread %u's granules sum to %u, its sum word says %llu", u, s,
           (unsigned long long)want);
  }
}

static void mt_store(struct mt_ctx *c, unsigned i) {
  unsigned off = c->st_off[i], n = c->st_size[i];
  unsigned g = off / GRANULE;
  uint16_t before = granule_at(c->view, g);
  uint16_t v = c->st_val[i];
  unsigned char b[2];
  memcpy(b, &v, 2);
  if (n == 2) {
    switch (c->st_how[i]) {
    case 0: wr_U2(v % 3, mem + off, b); break;
    case 1: copy_nt[v % 2][v % 3](mem + off, b, 2); break;
    default:
      b[1] = b[0];
      memset_w[v % 3](mem + off, b[0], 2);
      break;
    }
    memcpy(c->view + off, b, 2);
  } else {
    wr_U1(c->st_how[i] % 3, mem + off, b);
    c->view[off] = b[0];
  }
  c->sum_view = (uint16_t)(c->sum_view - before + granule_at(c->view, g));
}

static __attribute__((noinline)) void mt_nested(struct mt_ctx *c) {
  memcpy(c->snap, c->view, MT_REGION);
  c->sum_snap = c->sum_view;
  bool cancel = c->nest_cancel && !c->serial;
  uint32_t a = _ITM_beginTransaction(pr_instrumentedCode);
  if (a & a_abortTransaction) {
    CHECK(cancel);
    memcpy(c->view, c->snap, MT_REGION);
    c->sum_view = c->sum_snap;
    c->inner_cancels++;
    return;
  }
  for (unsigned i = c->nest_from; i < c->nest_to; i++)
    mt_store(c, i);
  _ITM_WU8(&mt_sum[c->me][0], c->sum_view);
  if (cancel) _ITM_abortTransaction(userAbort);
  _ITM_commitTransaction();
}

static __attribute__((noinline)) void mt_body(struct mt_ctx *c) {
  unsigned me = c->me;
  c->attempts++;
  c->serial = _ITM_inTransaction() == inIrrevocableTransaction;
  memcpy(c->view, c->model, MT_REGION);
  c->sum_view = c->sum_model;
  if (c->audit) {
    mt_audit(c);
    return;
  }
  for (unsigned i = 0; i < c->nloads; i++) {
    unsigned off = c->ld_off[i], n = c->ld_size[i];
    unsigned char buf[8];
    if (n == 3) { /* a bulk read of 7 bytes, any alignment */
      copy_tn[c->ld_how[i] % 2][c->ld_how[i] % 3](buf, mem + off, 7);
      n = 7;
    } else {
      enum ty k = n == 1 ? T_U1 : n == 2 ? T_U2 : n == 4 ? T_U4 : T_U8;
      ty_read(k, c->ld_how[i], mem + off, buf);
    }
    for (unsigned k = 0; k < n; k++)
      if (owner_of(off + k) == me && buf[k] != c->view[off + k])
        FAIL("thread %u: byte %u is 0x%02x in the transaction, its model has 0x%02x", me, off + k,
             buf[k], c->view[off + k]);
  }
  /* Off the CPU between its loads and its stores now and then: the other
   * threads' commits meet its read set. Not with stores made: under
   * encounter-time locking its locks would hold the others off, whose
   * policy (suicide) aborts them at each meeting, for as long as it is
   * off the CPU. */
  if (c->yield) sched_yield();
  if (c->serial_switch && !c->serial) {
    c->serials++;
    _ITM_changeTransactionMode(0);
    FAIL("the switch to serial mode returned in a revocable attempt");
  }
  for (unsigned i = 0; i < c->nstores; i++) {
    if (i == c->nest_from && c->nest_to > c->nest_from) {
      mt_nested(c);
      i = c->nest_to - 1;
      continue;
    }
    mt_store(c, i);
  }
  if (c->nstores > 0) _ITM_WU8(&mt_sum[me][0], c->sum_view);
  if (c->cancel && !c->serial) _ITM_abortTransaction(userAbort);
}

static __attribute__((noinline)) bool mt_run_tx(struct mt_ctx *c) {
  uint32_t props = pr_instrumentedCode;
  if (c->audit || c->nstores == 0) props |= pr_readOnly;
  uint32_t a = _ITM_beginTransaction(props);
  if (a & a_abortTransaction) return false;
  mt_body(c);
  _ITM_commitTransaction();
  return true;
}

static void mt_thread(sstm_tt_t *tt) {
  const uint64_t *ntx = tt->arg;
  struct mt_ctx *c = calloc(1, sizeof *c);
  CHECK_NOT_NULL(c);
  c->me = tt->idx;
  memcpy(c->model, mt_init, MT_REGION);
  c->sum_model = (uint16_t)mt_sum[tt->idx][0];
  unsigned me = tt->idx;
  unsigned granules = MT_REGION / GRANULE;
  for (uint64_t n = 0; n < *ntx; n++) {
    sstm_rng_t *r = &tt->rng;
    c->audit = sstm_rng_below(r, 16) == 0;
    c->cancel = sstm_rng_below(r, 10) == 0;
    c->serial_switch = sstm_rng_below(r, 64) == 0;
    c->yield = sstm_rng_below(r, 8) == 0;
    c->nloads = (unsigned)sstm_rng_below(r, 17);
    for (unsigned i = 0; i < c->nloads; i++) {
      unsigned n8 = (unsigned)sstm_rng_below(r, 5); /* 1, 2, 4, 8, or 3: 7 bytes in bulk */
      unsigned size = n8 == 4 ? 3 : 1u << n8;
      unsigned span = size == 3 ? 7 : size;
      unsigned off = (unsigned)sstm_rng_below(r, MT_REGION - span + 1);
      if (size != 3 && sstm_rng_below(r, 2)) off &= ~(size - 1);
      c->ld_off[i] = off, c->ld_size[i] = size, c->ld_how[i] = (unsigned)sstm_rng_below(r, 4);
    }
    c->nstores = (unsigned)sstm_rng_below(r, 17);
    for (unsigned i = 0; i < c->nstores; i++) {
      unsigned g = (unsigned)sstm_rng_below(r, granules / MT_THREADS) * MT_THREADS + me;
      unsigned size = sstm_rng_below(r, 2) ? 2 : 1;
      c->st_off[i] = g * GRANULE + (size == 1 ? (unsigned)sstm_rng_below(r, 2) : 0);
      c->st_size[i] = size;
      c->st_how[i] = (unsigned)sstm_rng_below(r, 3);
      c->st_val[i] = (uint16_t)sstm_rng_next(r);
    }
    c->nest_from = c->nest_to = 0;
    if (c->nstores > 1 && sstm_rng_below(r, 4) == 0) {
      c->nest_from = (unsigned)sstm_rng_below(r, c->nstores);
      c->nest_to = c->nest_from + 1 + (unsigned)sstm_rng_below(r, c->nstores - c->nest_from);
      c->nest_cancel = sstm_rng_below(r, 2);
    }
    c->attempts = 0;
    bool committed = mt_run_tx(c);
    c->restarted += c->attempts > 1;
    if (committed) {
      memcpy(c->model, c->view, MT_REGION);
      c->sum_model = c->sum_view;
    } else {
      CHECK_TRUE(c->cancel);
    }
  }
  memcpy(mt_final[me], c->model, MT_REGION);
  mt_final_sum[me] = c->sum_model;
  printf("thread %u: %llu transactions, %llu restarted, %llu nested cancels, %llu serial "
         "switches\n",
         me, (unsigned long long)*ntx, (unsigned long long)c->restarted,
         (unsigned long long)c->inner_cancels, (unsigned long long)c->serials);
  CHECK_GT_U(c->inner_cancels, 0);
  free(c);
}

/* The region's start and the threads' run; abi_init: the library is not
 * initialised by the test but by the ABI at the first transaction, as in
 * a program compiled with -fgnu-tm (its configuration from the
 * environment: the default policy, begins that fence, I8), once. */
static void threads_run(unsigned s, bool abi_init) {
  uint64_t ntx = sstm_test_scaled(20000, 300);
  sstm_rng_t r;
  sstm_rng_seed(&r, sstm_test_seed() + s);
  for (unsigned i = 0; i < MT_REGION; i++)
    mem[i] = (unsigned char)sstm_rng_next(&r);
  for (unsigned u = 0; u < MT_THREADS; u++) {
    uint16_t sum = 0;
    for (unsigned g = u; g < MT_REGION / GRANULE; g += MT_THREADS)
      sum = (uint16_t)(sum + granule_at(mem, g));
    mt_sum[u][0] = sum;
  }
  memcpy(mt_init, mem, MT_REGION);
  /* Not registered: the ABI registers each thread at its first
   * transaction (I1). */
  sstm_test_run_threads(MT_THREADS, false, mt_thread, &ntx);
  if (abi_init) CHECK_TRUE(sstm_initialized());
  for (unsigned off = 0; off < MT_REGION; off++) {
    unsigned u = owner_of(off);
    if (mem[off] != mt_final[u][off])
      FAIL("thread %u: byte %u is 0x%02x after the run, its model has 0x%02x", u, off, mem[off],
           mt_final[u][off]);
  }
  for (unsigned u = 0; u < MT_THREADS; u++)
    CHECK_EQ_U(mt_sum[u][0], mt_final_sum[u]);
}

static void threads_case(bool priv_safe) {
  for (unsigned s = 0; s < sizeof k_shifts / sizeof k_shifts[0]; s++) {
    init_with(k_shifts[s], NULL, priv_safe);
    threads_run(s, false);
    sstm_test_fini();
  }
}

TEST(threads_with_interleaved_granules_match_their_models) { threads_case(true); }
TEST(threads_with_interleaved_granules_without_privatization_safety) { threads_case(false); }

TEST(threads_on_the_abis_own_initialisation) {
  /* The test's design, through the variable the library reads. */
  CHECK_EQ_I(setenv("SCHEDSTM_DESIGN", sstm_test_design() == SSTM_DESIGN_CTL ? "ctl" : "etl", 1),
             0);
  CHECK_FALSE(sstm_initialized());
  threads_run(0, true);
  sstm_config_t c;
  CHECK_OK(sstm_config_get(&c));
  CHECK_EQ_I(c.design, sstm_test_design());
  CHECK_TRUE(c.itm_privatization);
}

/* ---- misuse ---------------------------------------------------------------- */

/* Outside a transaction a wide load or store is misuse, reported once per
 * call as a word's is (test_access.c's load_without_descriptor_is_misuse),
 * not once per naturally aligned piece; the load returns zeros and the
 * store writes nothing. At an 8-aligned address and at 4 mod 8, where a
 * 16-byte access is three pieces. */
static int nmisuse;
static void count_misuse(const char *msg) {
  (void)msg;
  nmisuse++;
}

TEST(a_wide_access_outside_a_transaction_is_misuse_reported_once) {
  have_avx = __builtin_cpu_supports("avx");
  init_with(5, NULL, true);
  sstm_misuse_fn prev = sstm_set_misuse_handler(count_misuse);
  for (enum ty k = T_E; k < T_N; k++) {
    if (k == T_M256 && !have_avx) continue;
    for (unsigned off = 0; off <= 4; off += 4) {
      for (unsigned v = 0; v < 4; v++) {
        unsigned char in[32], out[32], before[32];
        memset(in, 0xA5, sizeof in);
        memset(out, 0x5A, sizeof out);
        fill_bytes(k * 8 + off + v, mem + 64 + off, ty_size[k]);
        memcpy(before, mem + 64 + off, ty_size[k]);
        nmisuse = 0;
        ty_read(k, v, mem + 64 + off, out);
        if (nmisuse != 1)
          FAIL("a %s load (variant %u) at offset %u outside a transaction was reported %d times",
               ty_name[k], v, off, nmisuse);
        for (unsigned i = 0; i < ty_size[k]; i++)
          if (ty_byte_counts(k, i) && out[i] != 0)
            FAIL("a %s load outside a transaction returned byte %u = 0x%02x, not 0", ty_name[k], i,
                 out[i]);
        nmisuse = 0;
        ty_write(k, v % 3, mem + 64 + off, in);
        if (nmisuse != 1)
          FAIL("a %s store (variant %u) at offset %u outside a transaction was reported %d times",
               ty_name[k], v % 3, off, nmisuse);
        if (memcmp(mem + 64 + off, before, ty_size[k]) != 0)
          FAIL("a %s store outside a transaction wrote memory", ty_name[k]);
      }
    }
  }
  sstm_set_misuse_handler(prev);
  sstm_test_fini();
}

SSTM_TEST_MAIN()
