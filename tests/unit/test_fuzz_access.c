/* SPDX-License-Identifier: MIT */
/* Unit tests: a differential fuzzer of the access layer.
 *
 * Random transactions of typed loads and stores (1, 2, 4 and 8 bytes,
 * aligned and not, floats, doubles, pointers) and bulk copies of 0 to 80
 * bytes run against a byte-array model. A transaction ends in a commit, a
 * restart (its second attempt commits) or a cancel; some are declared
 * read-only (a store then restarts them as update transactions), some start
 * irrevocable, some become irrevocable after their first accesses (which
 * restarts them). Every load is checked inside the attempt against the
 * model's view of that attempt (the committed bytes with its own stores
 * over them), and after every transaction the memory is compared with the
 * committed model. Each case runs under three stripe sizes: one lock per
 * word (8 B), the default (32 B) and one lock per page (4 KiB).
 *
 * Under a policy that makes every restart irrevocable, the same
 * transactions also restart or cancel in an irrevocable attempt: its writes
 * went to memory in place, and its undo log must bring back every byte.
 *
 * One thread: the model is exact. Several threads: each owns interleaved
 * 2-byte granules of one shared region, so that the neighbours' sub-word
 * stores share words and stripes, and checks its own granules exactly.
 * Each thread also keeps the sum of its granules in a word of its own,
 * updated in the same transactions, and audits of the whole region check
 * every thread's sum against its granules inside the transaction. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "../common/escalate.h"
#include "../common/txhelp.h"

enum { REGION = 4096 };
static const unsigned k_shifts[] = {3, 5, 12};

static unsigned char mem[REGION] __attribute__((aligned(64)));

/* sstm_init with this stripe and policy (NULL: the default), and register. */
static void init_with(unsigned shift, const char *cm) {
  sstm_config_t cfg;
  sstm_test_config(&cfg);
  cfg.stripe_shift = shift;
  if (cm) cfg.cm = cm;
  CHECK_OK(sstm_init(&cfg));
  CHECK_OK(sstm_thread_init());
}

/* A float or double bit pattern that is not a NaN (a NaN's payload is the
 * one thing a floating-point register may change). */
static uint32_t f32_bits(uint64_t r) {
  uint32_t b = (uint32_t)r;
  if ((b & 0x7f800000u) == 0x7f800000u) b &= ~0x00800000u;
  return b;
}
static uint64_t f64_bits(uint64_t r) {
  if ((r & 0x7ff0000000000000ull) == 0x7ff0000000000000ull) r &= ~0x0010000000000000ull;
  return r;
}

/* ---- one thread: the exact model ----------------------------------------- */

enum op_kind {
  OP_LOAD,        /* sstm_load_u8/16/32/64 at any offset */
  OP_STORE,       /* sstm_store_u8/16/32/64 at any offset */
  OP_LOAD_F,      /* sstm_load_float / sstm_load_double, aligned */
  OP_STORE_F,     /* sstm_store_float / sstm_store_double, aligned */
  OP_LOAD_PTR,    /* sstm_load_ptr, aligned */
  OP_STORE_PTR,   /* sstm_store_ptr, aligned */
  OP_LOAD_BYTES,  /* sstm_load_bytes of 0..80 bytes */
  OP_STORE_BYTES, /* sstm_store_bytes of 0..80 bytes */
  OP_NESTED,      /* a flat-nested sstm_run whose body is one more store */
  OP_IRREVOCABLE, /* sstm_become_irrevocable */
  OP_KINDS
};

/* END_RESTART2 and END_CANCEL2 end their second attempt too (with a
 * restart, a cancel): under the escalating policy below that attempt is
 * irrevocable, so its in-place writes are undone from its undo log. */
enum end_kind { END_COMMIT, END_RESTART, END_CANCEL, END_RESTART2, END_CANCEL2 };

enum { MAX_OPS = 40, BYTES_MAX = 80 };

struct op {
  enum op_kind kind;
  unsigned off, size;
  unsigned char data[BYTES_MAX]; /* stored bytes (little endian for typed stores) */
};

struct fuzz_tx {
  struct op ops[MAX_OPS];
  unsigned nops;
  enum end_kind end;
  sstm_attr_t attr;
  unsigned attempts;
  bool escalating;      /* the ending kinds of the escalating policy */
  bool asked;           /* this attempt asked to be irrevocable */
  unsigned char *model; /* committed bytes */
  unsigned char *view;  /* this attempt's view: model with its own stores */
  void *ptr_base;       /* pointer values are ptr_base + k */
};

static unsigned pick_size(sstm_rng_t *r) { return 1u << sstm_rng_below(r, 4); }

/* An offset for an access of n bytes: naturally aligned three times in
 * four, else anywhere (unaligned accesses cross words and stripes). */
static unsigned pick_off(sstm_rng_t *r, unsigned n, unsigned align, unsigned region) {
  unsigned off = (unsigned)sstm_rng_below(r, region - n + 1);
  if (align > 1 && sstm_rng_below(r, 4) != 0) off &= ~(align - 1);
  return off;
}

static void gen_tx(sstm_rng_t *r, struct fuzz_tx *t, unsigned region) {
  memset(&t->attr, 0, sizeof t->attr);
  t->nops = 1 + (unsigned)sstm_rng_below(r, MAX_OPS);
  unsigned mode = (unsigned)sstm_rng_below(r, 16);
  t->attr.read_only = mode < 2;    /* 1 in 8: read-only hint (stores then restart it) */
  t->attr.irrevocable = mode == 2; /* 1 in 16: irrevocable from the start */
  unsigned e = (unsigned)sstm_rng_below(r, 8);
  t->end = e < 6 ? END_COMMIT : e == 6 ? END_RESTART : END_CANCEL;
  if (t->escalating && e >= 4) t->end = e < 6 ? END_RESTART2 : END_CANCEL2;
  for (unsigned i = 0; i < t->nops; i++) {
    struct op *o = &t->ops[i];
    o->kind = (enum op_kind)sstm_rng_below(r, OP_KINDS);
    if (o->kind == OP_IRREVOCABLE && sstm_rng_below(r, 4) != 0) o->kind = OP_LOAD;
    switch (o->kind) {
    case OP_LOAD:
    case OP_STORE:
    case OP_NESTED:
      o->size = pick_size(r);
      o->off = pick_off(r, o->size, o->size, region);
      break;
    case OP_LOAD_F:
    case OP_STORE_F:
      o->size = sstm_rng_below(r, 2) ? 8 : 4;
      o->off = (unsigned)sstm_rng_below(r, region / o->size) * o->size;
      break;
    case OP_LOAD_PTR:
    case OP_STORE_PTR:
      o->size = 8;
      o->off = (unsigned)sstm_rng_below(r, region / 8) * 8;
      break;
    case OP_LOAD_BYTES:
    case OP_STORE_BYTES:
      o->size = (unsigned)sstm_rng_below(r, BYTES_MAX + 1);
      o->off = pick_off(r, o->size, 8, region);
      break;
    case OP_IRREVOCABLE:
    case OP_KINDS: o->size = 0, o->off = 0; break;
    }
    uint64_t v = sstm_rng_next(r);
    if (o->kind == OP_STORE_F) v = o->size == 4 ? f32_bits(v) : f64_bits(v);
    if (o->kind == OP_STORE_PTR) v = sstm_rng_below(r, 1024);
    memcpy(o->data, &v, 8);
    for (unsigned k = 8; k < BYTES_MAX; k++)
      o->data[k] = (unsigned char)sstm_rng_next(r);
  }
}

static uint64_t view_bits(const unsigned char *view, unsigned off, unsigned n) {
  uint64_t v = 0;
  memcpy(&v, view + off, n); /* little endian */
  return v;
}

static void check_load(const struct fuzz_tx *t, unsigned i, uint64_t got) {
  const struct op *o = &t->ops[i];
  uint64_t want = view_bits(t->view, o->off, o->size);
  if (got != want)
    FAIL("op %u: %u-byte load at offset %u gave 0x%llx, the model has 0x%llx (attempt %u)", i,
         o->size, o->off, (unsigned long long)got, (unsigned long long)want, t->attempts);
}

static uint64_t typed_load(void *a, unsigned n) {
  switch (n) {
  case 1: return sstm_load_u8(a);
  case 2: return sstm_load_u16(a);
  case 4: return sstm_load_u32(a);
  default: return sstm_load_u64(a);
  }
}

static void typed_store(void *a, unsigned n, uint64_t v) {
  switch (n) {
  case 1: sstm_store_u8(a, (uint8_t)v); break;
  case 2: sstm_store_u16(a, (uint16_t)v); break;
  case 4: sstm_store_u32(a, (uint32_t)v); break;
  default: sstm_store_u64(a, v); break;
  }
}

static struct fuzz_tx *nested_tx;
static unsigned nested_op;

static void nested_body(void *arg) {
  (void)arg;
  const struct op *o = &nested_tx->ops[nested_op];
  typed_store(mem + o->off, o->size, view_bits(o->data, 0, o->size));
}

static void fuzz_body(void *arg) {
  struct fuzz_tx *t = arg;
  t->attempts++;
  t->asked = t->attr.irrevocable;
  CHECK_MSG(t->attempts < 100, "transaction restarted %u times on one thread", t->attempts);
  memcpy(t->view, t->model, REGION);
  for (unsigned i = 0; i < t->nops; i++) {
    const struct op *o = &t->ops[i];
    unsigned char *a = mem + o->off;
    switch (o->kind) {
    case OP_LOAD: check_load(t, i, typed_load(a, o->size)); break;
    case OP_STORE:
      typed_store(a, o->size, view_bits(o->data, 0, o->size));
      memcpy(t->view + o->off, o->data, o->size);
      break;
    case OP_LOAD_F:
      if (o->size == 4) {
        float f = sstm_load_float((const float *)(void *)a);
        uint32_t b;
        memcpy(&b, &f, 4);
        check_load(t, i, b);
      } else {
        double d = sstm_load_double((const double *)(void *)a);
        uint64_t b;
        memcpy(&b, &d, 8);
        check_load(t, i, b);
      }
      break;
    case OP_STORE_F:
      if (o->size == 4) {
        float f;
        memcpy(&f, o->data, 4);
        sstm_store_float((float *)(void *)a, f);
      } else {
        double d;
        memcpy(&d, o->data, 8);
        sstm_store_double((double *)(void *)a, d);
      }
      memcpy(t->view + o->off, o->data, o->size);
      break;
    case OP_LOAD_PTR: {
      void *p = sstm_load_ptr((void *const *)(void *)a);
      check_load(t, i, (uint64_t)(uintptr_t)p);
      break;
    }
    case OP_STORE_PTR: {
      void *p = (char *)t->ptr_base + view_bits(o->data, 0, 8);
      sstm_store_ptr((void **)(void *)a, p);
      memcpy(t->view + o->off, &p, 8);
      break;
    }
    case OP_LOAD_BYTES: {
      unsigned char buf[BYTES_MAX];
      sstm_load_bytes(buf, a, o->size);
      if (memcmp(buf, t->view + o->off, o->size) != 0)
        FAIL("op %u: load_bytes of %u at offset %u differs from the model (attempt %u)", i, o->size,
             o->off, t->attempts);
      break;
    }
    case OP_STORE_BYTES:
      sstm_store_bytes(a, o->data, o->size);
      memcpy(t->view + o->off, o->data, o->size);
      break;
    case OP_NESTED:
      nested_tx = t, nested_op = i;
      CHECK_OK(sstm_run(NULL, nested_body, NULL));
      CHECK_TRUE(sstm_in_tx()); /* flat nesting: still inside the outer one */
      memcpy(t->view + o->off, o->data, o->size);
      break;
    case OP_IRREVOCABLE:
      t->asked = true;
      CHECK_OK(sstm_become_irrevocable()); /* may restart this body first */
      CHECK_TRUE(sstm_is_irrevocable());
      break;
    case OP_KINDS: break;
    }
  }
  /* Restart and cancel are not allowed once the transaction asked to be
   * irrevocable: such a transaction commits. One that the policy made
   * irrevocable may restart or cancel. */
  if (t->asked) return;
  switch (t->end) {
  case END_COMMIT: break;
  case END_CANCEL: sstm_cancel();
  case END_RESTART:
    if (t->attempts == 1) sstm_restart();
    break;
  case END_RESTART2:
    if (t->attempts <= 2) sstm_restart();
    break;
  case END_CANCEL2:
    if (t->attempts == 1) sstm_restart();
    if (t->attempts == 2) sstm_cancel();
    break;
  }
}

static void fuzz_one_thread(unsigned shift, uint64_t seed, uint64_t ntx, bool escalating) {
  static bool registered;
  if (escalating && !registered) CHECK_OK(sstm_cm_register(&escalate_ops));
  registered |= escalating;
  init_with(shift, escalating ? escalate_ops.name : NULL);
  static unsigned char model[REGION], view[REGION];
  static struct fuzz_tx t;
  sstm_rng_t r;
  sstm_rng_seed(&r, seed);
  for (unsigned i = 0; i < REGION; i++)
    mem[i] = model[i] = (unsigned char)sstm_rng_next(&r);
  t.model = model, t.view = view, t.ptr_base = mem;
  t.escalating = escalating;
  uint64_t commits = 0, cancels = 0, restarts = 0;
  for (uint64_t n = 0; n < ntx; n++) {
    /* The region is 4 KiB, but a transaction works in a window of it (the
     * first 128, 512 or all 4096 bytes) so that its accesses overlap. */
    unsigned window = n % 3 == 0 ? 128 : n % 3 == 1 ? 512 : REGION;
    gen_tx(&r, &t, window);
    t.attempts = 0;
    int rc = sstm_run(&t.attr, fuzz_body, &t);
    if (rc == 0) {
      memcpy(model, view, REGION);
      commits++;
    } else {
      CHECK_EQ_I(rc, SSTM_ECANCELED);
      CHECK_TRUE(t.end == END_CANCEL || t.end == END_CANCEL2);
      cancels++;
    }
    restarts += t.attempts > 1;
    for (unsigned i = 0; i < REGION; i++)
      if (mem[i] != model[i])
        FAIL("after transaction %llu (%s): byte %u is 0x%02x, the model has 0x%02x",
             (unsigned long long)n, rc == 0 ? "committed" : "cancelled", i, mem[i], model[i]);
  }
  /* Every kind of ending happened (the seed is fixed, so this is stable). */
  CHECK_GT_U(commits, 0);
  CHECK_GT_U(cancels, 0);
  CHECK_GT_U(restarts, 0);
  sstm_test_fini();
}

TEST(one_thread_matches_the_model) {
  uint64_t ntx = sstm_test_scaled(10000, 300);
  for (unsigned s = 0; s < sizeof k_shifts / sizeof k_shifts[0]; s++)
    fuzz_one_thread(k_shifts[s], sstm_test_seed() + s, ntx, false);
}

TEST(escalated_attempts_undo_to_the_model) {
  uint64_t ntx = sstm_test_scaled(10000, 300);
  escalations = 0;
  for (unsigned s = 0; s < sizeof k_shifts / sizeof k_shifts[0]; s++)
    fuzz_one_thread(k_shifts[s], sstm_test_seed() + s, ntx, true);
  CHECK_GT_U(escalations, 0);
}

/* ---- several threads: owned granules ------------------------------------- */

enum { MT_THREADS = 4, MT_REGION = 1024, GRANULE = 2 };

/* Thread u owns the granules g with g % MT_THREADS == u. Its sum word is
 * the 16-bit sum of its granules (as little-endian 16-bit numbers). */
static uint64_t mt_sum[MT_THREADS][8] __attribute__((aligned(64)));
/* mem as the threads start (read by them while the others commit: not mem) */
static unsigned char mt_init[MT_REGION];
/* What each thread committed, checked against mem once all have joined. */
static unsigned char mt_final[MT_THREADS][MT_REGION];
static uint16_t mt_final_sum[MT_THREADS];

static unsigned owner_of(unsigned off) { return (off / GRANULE) % MT_THREADS; }

struct mt_ctx {
  sstm_tt_t *tt;
  unsigned char model[MT_REGION]; /* committed bytes of this thread's granules */
  unsigned char view[MT_REGION];
  uint16_t sum_model, sum_view;
  unsigned nstores;
  unsigned st_off[16], st_size[16];
  uint16_t st_val[16];
  unsigned nloads;
  unsigned ld_off[16], ld_size[16];
  bool audit, cancel;
  unsigned attempts;
};

static uint16_t granule_at(const unsigned char *m, unsigned g) {
  return (uint16_t)(m[g * GRANULE] | (unsigned)m[g * GRANULE + 1] << 8);
}

static void mt_audit_body(void) {
  unsigned char buf[MT_REGION];
  sstm_load_bytes(buf, mem, MT_REGION);
  for (unsigned u = 0; u < MT_THREADS; u++) {
    uint16_t s = 0;
    for (unsigned g = u; g < MT_REGION / GRANULE; g += MT_THREADS)
      s = (uint16_t)(s + granule_at(buf, g));
    uint64_t want = sstm_load_u64(&mt_sum[u][0]);
    if (s != (uint16_t)want)
      FAIL("audit: thread %u's granules sum to %u, its sum word says %llu", u, s,
           (unsigned long long)want);
  }
}

static void mt_body(void *arg) {
  struct mt_ctx *c = arg;
  unsigned me = c->tt->idx;
  c->attempts++;
  memcpy(c->view, c->model, MT_REGION);
  c->sum_view = c->sum_model;
  if (c->audit) {
    mt_audit_body();
    return;
  }
  for (unsigned i = 0; i < c->nloads; i++) {
    unsigned off = c->ld_off[i], n = c->ld_size[i];
    unsigned char buf[8];
    if (n == 3) { /* a bulk read of 7 bytes, any alignment */
      sstm_load_bytes(buf, mem + off, 7);
      n = 7;
    } else {
      uint64_t v = typed_load(mem + off, n);
      memcpy(buf, &v, n);
    }
    for (unsigned k = 0; k < n; k++)
      if (owner_of(off + k) == me && buf[k] != c->view[off + k])
        FAIL("thread %u: byte %u is 0x%02x in the transaction, its model has 0x%02x", me, off + k,
             buf[k], c->view[off + k]);
  }
  for (unsigned i = 0; i < c->nstores; i++) {
    unsigned off = c->st_off[i], n = c->st_size[i];
    unsigned g = off / GRANULE;
    uint16_t before = granule_at(c->view, g);
    if (n == 2) {
      uint16_t v = c->st_val[i];
      if (i % 2)
        sstm_store_bytes(mem + off, &v, 2);
      else
        sstm_store_u16((uint16_t *)(void *)(mem + off), v);
      memcpy(c->view + off, &v, 2);
    } else {
      sstm_store_u8(mem + off, (uint8_t)c->st_val[i]);
      c->view[off] = (unsigned char)c->st_val[i];
    }
    c->sum_view = (uint16_t)(c->sum_view - before + granule_at(c->view, g));
  }
  if (c->nstores > 0) sstm_store_u64(&mt_sum[me][0], c->sum_view);
  if (c->cancel) sstm_cancel();
}

struct mt_arg {
  unsigned shift;
  uint64_t ntx;
};

static void mt_thread(sstm_tt_t *tt) {
  const struct mt_arg *a = tt->arg;
  struct mt_ctx *c = calloc(1, sizeof *c);
  CHECK_NOT_NULL(c);
  c->tt = tt;
  memcpy(c->model, mt_init, MT_REGION);
  c->sum_model = (uint16_t)mt_sum[tt->idx][0];
  unsigned me = tt->idx;
  unsigned granules = MT_REGION / GRANULE;
  for (uint64_t n = 0; n < a->ntx; n++) {
    sstm_rng_t *r = &tt->rng;
    c->audit = sstm_rng_below(r, 16) == 0;
    c->cancel = sstm_rng_below(r, 10) == 0;
    c->nloads = (unsigned)sstm_rng_below(r, 17);
    for (unsigned i = 0; i < c->nloads; i++) {
      unsigned n8 = (unsigned)sstm_rng_below(r, 5); /* 1, 2, 4, 8, or 3: 7 bytes in bulk */
      unsigned size = n8 == 4 ? 3 : 1u << n8;
      unsigned span = size == 3 ? 7 : size;
      unsigned off = (unsigned)sstm_rng_below(r, MT_REGION - span + 1);
      if (size != 3 && sstm_rng_below(r, 2)) off &= ~(size - 1);
      c->ld_off[i] = off, c->ld_size[i] = size;
    }
    c->nstores = (unsigned)sstm_rng_below(r, 17);
    for (unsigned i = 0; i < c->nstores; i++) {
      unsigned g = (unsigned)sstm_rng_below(r, granules / MT_THREADS) * MT_THREADS + me;
      unsigned size = sstm_rng_below(r, 2) ? 2 : 1;
      c->st_off[i] = g * GRANULE + (size == 1 ? (unsigned)sstm_rng_below(r, 2) : 0);
      c->st_size[i] = size;
      c->st_val[i] = (uint16_t)sstm_rng_next(r);
    }
    c->attempts = 0;
    sstm_attr_t attr = {.read_only = c->audit || c->nstores == 0};
    int rc = sstm_run(&attr, mt_body, c);
    if (rc == 0) {
      memcpy(c->model, c->view, MT_REGION);
      c->sum_model = c->sum_view;
    } else {
      CHECK_EQ_I(rc, SSTM_ECANCELED);
      CHECK_TRUE(c->cancel);
    }
  }
  memcpy(mt_final[me], c->model, MT_REGION);
  mt_final_sum[me] = c->sum_model;
  free(c);
}

TEST(threads_with_interleaved_granules_match_their_models) {
  uint64_t ntx = sstm_test_scaled(10000, 2000);
  for (unsigned s = 0; s < sizeof k_shifts / sizeof k_shifts[0]; s++) {
    init_with(k_shifts[s], NULL);
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
    struct mt_arg a = {k_shifts[s], ntx};
    sstm_test_run_threads(MT_THREADS, true, mt_thread, &a);
    /* Every thread's granules hold exactly what it committed: no
     * neighbour's write-back of a shared word or stripe changed them. */
    for (unsigned off = 0; off < MT_REGION; off++) {
      unsigned u = owner_of(off);
      if (mem[off] != mt_final[u][off])
        FAIL("thread %u: byte %u is 0x%02x after the run, its model has 0x%02x", u, off, mem[off],
             mt_final[u][off]);
    }
    for (unsigned u = 0; u < MT_THREADS; u++)
      CHECK_EQ_U(mt_sum[u][0], mt_final_sum[u]);
    sstm_test_fini();
  }
}

SSTM_TEST_MAIN()
