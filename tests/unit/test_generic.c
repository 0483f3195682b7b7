/* SPDX-License-Identifier: MIT */
/* Unit tests: the type-generic access form SSTM_LOAD / SSTM_STORE
 * (<schedstm/generic.h>). Every supported type round-trips inside a
 * transaction, after commit and in a later one; each access has exactly the
 * width of its lvalue (a neighbour that the thread changes with a plain
 * store while the transaction runs keeps that value through the write-back,
 * which a wider store would overwrite with the value it logged); the result
 * has the lvalue's type; stored values are converted as by assignment;
 * const lvalues load; four threads increment adjacent floats, shorts and
 * chars. The compile-time rejection of unsupported types is checked by
 * generic_compile.cmake (ctest unit.generic.compile.*). */
#include <limits.h>
#include <string.h>

#include "../common/txhelp.h"

/* The result has the lvalue's unqualified type (checked at compile time). */
#define SAME_TYPE(e, T) _Generic((e), T : 1, default : 0)

static struct all {
  _Bool b;
  char c;
  signed char sc;
  unsigned char uc;
  short s;
  unsigned short us;
  int i;
  unsigned int ui;
  long l;
  unsigned long ul;
  long long ll;
  unsigned long long ull;
  float f;
  double d;
  void *vp;
  struct all *next;
  const char *str;
  int8_t i8;
  uint16_t u16;
  int32_t i32;
  uint64_t u64;
  size_t sz;
  enum { E_ZERO, E_ONE, E_TWO } e;
} A;

static const struct all CA = {.c = 'x', .s = -7, .f = 0.25f, .d = 1e300, .str = "const"};

static void check_committed(void) {
  CHECK_EQ_I(A.b, 1);
  CHECK_EQ_I(A.c, 'q');
  CHECK_EQ_I(A.sc, -100);
  CHECK_EQ_U(A.uc, 250);
  CHECK_EQ_I(A.s, -32000);
  CHECK_EQ_U(A.us, 65000);
  CHECK_EQ_I(A.i, -2000000000);
  CHECK_EQ_U(A.ui, 4000000000u);
  CHECK_EQ_I(A.l, -9000000000000000000l);
  CHECK_EQ_U(A.ul, 18000000000000000000ul);
  CHECK_EQ_I(A.ll, -1234567890123456789ll);
  CHECK_EQ_U(A.ull, 0xFEDCBA9876543210ull);
  CHECK(A.f == 1.5f);
  CHECK(A.d == -2.25e100);
  CHECK_EQ_PTR(A.vp, &CA);
  CHECK_EQ_PTR(A.next, &A);
  CHECK_EQ_STR(A.str, "literal");
  CHECK_EQ_I(A.i8, -128);
  CHECK_EQ_U(A.u16, 0xBEEF);
  CHECK_EQ_I(A.i32, -1);
  CHECK_EQ_U(A.u64, UINT64_MAX);
  CHECK_EQ_U(A.sz, (size_t)1 << 40);
  CHECK_EQ_I(A.e, E_TWO);
}

TEST(every_type_round_trips) {
  sstm_test_init();
  memset(&A, 0, sizeof A);
  SSTM_ATOMIC_BEGIN(NULL)
    SSTM_STORE(A.b, 1);
    SSTM_STORE(A.c, 'q');
    SSTM_STORE(A.sc, -100);
    SSTM_STORE(A.uc, 250);
    SSTM_STORE(A.s, -32000);
    SSTM_STORE(A.us, 65000);
    SSTM_STORE(A.i, -2000000000);
    SSTM_STORE(A.ui, 4000000000u);
    SSTM_STORE(A.l, -9000000000000000000l);
    SSTM_STORE(A.ul, 18000000000000000000ul);
    SSTM_STORE(A.ll, -1234567890123456789ll);
    SSTM_STORE(A.ull, 0xFEDCBA9876543210ull);
    SSTM_STORE(A.f, 1.5f);
    SSTM_STORE(A.d, -2.25e100);
    SSTM_STORE(A.vp, (void *)&CA);
    SSTM_STORE(A.next, &A);
    SSTM_STORE(A.str, "literal");
    SSTM_STORE(A.i8, -128);
    SSTM_STORE(A.u16, 0xBEEF);
    SSTM_STORE(A.i32, -1);
    SSTM_STORE(A.u64, UINT64_MAX);
    SSTM_STORE(A.sz, (size_t)1 << 40);
    SSTM_STORE(A.e, E_TWO);
    /* read your own writes, with the lvalue's type */
    CHECK_EQ_I(SSTM_LOAD(A.b), 1);
    CHECK_EQ_I(SSTM_LOAD(A.c), 'q');
    CHECK_EQ_I(SSTM_LOAD(A.sc), -100);
    CHECK_EQ_U(SSTM_LOAD(A.uc), 250);
    CHECK_EQ_I(SSTM_LOAD(A.s), -32000);
    CHECK_EQ_U(SSTM_LOAD(A.us), 65000);
    CHECK_EQ_I(SSTM_LOAD(A.i), -2000000000);
    CHECK_EQ_U(SSTM_LOAD(A.ui), 4000000000u);
    CHECK_EQ_I(SSTM_LOAD(A.l), -9000000000000000000l);
    CHECK_EQ_U(SSTM_LOAD(A.ul), 18000000000000000000ul);
    CHECK_EQ_I(SSTM_LOAD(A.ll), -1234567890123456789ll);
    CHECK_EQ_U(SSTM_LOAD(A.ull), 0xFEDCBA9876543210ull);
    CHECK(SSTM_LOAD(A.f) == 1.5f);
    CHECK(SSTM_LOAD(A.d) == -2.25e100);
    CHECK_EQ_PTR(SSTM_LOAD(A.vp), &CA);
    CHECK_EQ_PTR(SSTM_LOAD(A.next), &A);
    CHECK_EQ_PTR(SSTM_LOAD(SSTM_LOAD(A.next)->next), &A); /* typed pointer result */
    CHECK_EQ_STR(SSTM_LOAD(A.str), "literal");
    CHECK_EQ_I(SSTM_LOAD(A.i8), -128);
    CHECK_EQ_U(SSTM_LOAD(A.u16), 0xBEEF);
    CHECK_EQ_I(SSTM_LOAD(A.i32), -1);
    CHECK_EQ_U(SSTM_LOAD(A.u64), UINT64_MAX);
    CHECK_EQ_U(SSTM_LOAD(A.sz), (size_t)1 << 40);
    CHECK_EQ_I(SSTM_LOAD(A.e), E_TWO);
    /* the redo log: nothing reached memory yet */
    CHECK_EQ_I(A.i, 0);
    CHECK(A.f == 0.0f);
    CHECK_NULL(A.next);
  SSTM_ATOMIC_END();
  check_committed();
  /* and from committed memory, in a new transaction */
  SSTM_ATOMIC_BEGIN(NULL)
    CHECK_EQ_I(SSTM_LOAD(A.sc), -100);
    CHECK_EQ_U(SSTM_LOAD(A.us), 65000);
    CHECK_EQ_I(SSTM_LOAD(A.l), -9000000000000000000l);
    CHECK(SSTM_LOAD(A.f) == 1.5f);
    CHECK(SSTM_LOAD(A.d) == -2.25e100);
    CHECK_EQ_PTR(SSTM_LOAD(A.next), &A);
    CHECK_EQ_STR(SSTM_LOAD(A.str), "literal");
  SSTM_ATOMIC_END();
  check_committed();
  sstm_test_fini();
}

TEST(result_has_the_lvalue_type) {
  /* Compile-time checks (the operands of _Generic are not evaluated): a
   * char stays a char (no promotion), a pointer keeps its pointee type,
   * qualifiers of the lvalue are dropped as by any lvalue conversion. */
  _Static_assert(SAME_TYPE(SSTM_LOAD(A.b), _Bool), "_Bool");
  _Static_assert(SAME_TYPE(SSTM_LOAD(A.c), char), "char");
  _Static_assert(SAME_TYPE(SSTM_LOAD(A.sc), signed char), "signed char");
  _Static_assert(SAME_TYPE(SSTM_LOAD(A.uc), unsigned char), "unsigned char");
  _Static_assert(SAME_TYPE(SSTM_LOAD(A.s), short), "short");
  _Static_assert(SAME_TYPE(SSTM_LOAD(A.us), unsigned short), "unsigned short");
  _Static_assert(SAME_TYPE(SSTM_LOAD(A.ui), unsigned int), "unsigned int");
  _Static_assert(SAME_TYPE(SSTM_LOAD(A.l), long), "long");
  _Static_assert(SAME_TYPE(SSTM_LOAD(A.ull), unsigned long long), "unsigned long long");
  _Static_assert(SAME_TYPE(SSTM_LOAD(A.f), float), "float");
  _Static_assert(SAME_TYPE(SSTM_LOAD(A.d), double), "double");
  _Static_assert(SAME_TYPE(SSTM_LOAD(A.next), struct all *), "struct pointer");
  _Static_assert(SAME_TYPE(SSTM_LOAD(A.str), const char *), "pointer to const");
  _Static_assert(SAME_TYPE(SSTM_LOAD(CA.s), short), "const lvalue");
  /* and each argument is evaluated once */
  sstm_test_init();
  static float fl[4];
  static long lg[4];
  volatile int i = 0, j = 0; /* modified in the block (the setjmp rule) */
  SSTM_ATOMIC_BEGIN(NULL)
    SSTM_STORE(fl[i++], (float)(j++));
    SSTM_STORE(fl[i++], (float)(j++));
    CHECK_EQ_I(i, 2);
    CHECK_EQ_I(j, 2);
    (void)SSTM_LOAD(lg[i++]);
    CHECK_EQ_I(i, 3);
  SSTM_ATOMIC_END();
  CHECK(fl[0] == 0.0f && fl[1] == 1.0f);
  sstm_test_fini();
}

TEST(stored_value_is_converted_to_the_lvalue_type) {
  /* not a constant: the compiler diagnoses a constant that changes value,
   * as it does for a plain assignment */
  volatile int i300 = 300;
  volatile double d275 = 2.75;
  sstm_test_init();
  memset(&A, 0, sizeof A);
  SSTM_ATOMIC_BEGIN(NULL)
    SSTM_STORE(A.b, 256);     /* nonzero: true, not the low byte */
    SSTM_STORE(A.uc, i300);   /* modulo 256 */
    SSTM_STORE(A.f, 3);       /* int to float */
    SSTM_STORE(A.i, d275);    /* truncated */
    SSTM_STORE(A.d, 0.1f);    /* float widened to double */
    SSTM_STORE(A.ul, -1);     /* modulo 2^64 */
    SSTM_STORE(A.next, NULL); /* a null pointer constant */
    SSTM_STORE(A.vp, &A);     /* any object pointer into void * */
  SSTM_ATOMIC_END();
  CHECK_EQ_I(A.b, 1);
  CHECK_EQ_U(A.uc, 44);
  CHECK(A.f == 3.0f);
  CHECK_EQ_I(A.i, 2);
  CHECK(A.d == (double)0.1f);
  CHECK_EQ_U(A.ul, ULONG_MAX);
  CHECK_NULL(A.next);
  CHECK_EQ_PTR(A.vp, &A);
  sstm_test_fini();
}

TEST(const_lvalues_load) {
  sstm_test_init();
  const struct all *cp = &CA;
  const float cf = 2.5f; /* a const automatic: its own address */
  SSTM_ATOMIC_BEGIN(NULL)
    CHECK_EQ_I(SSTM_LOAD(cp->c), 'x');
    CHECK_EQ_I(SSTM_LOAD(cp->s), -7);
    CHECK(SSTM_LOAD(cp->f) == 0.25f);
    CHECK(SSTM_LOAD(CA.d) == 1e300);
    CHECK_EQ_STR(SSTM_LOAD(cp->str), "const");
    CHECK(SSTM_LOAD(cf) == 2.5f);
  SSTM_ATOMIC_END();
  sstm_test_fini();
}

/* volatile lvalues (generic.h: "qualified or not") load and store through
 * the typed accesses of their width, and the result drops the qualifier. */
static volatile struct {
  float f;
  short s;
  unsigned char uc;
  struct all *p;
} V;

TEST(volatile_lvalues_load_and_store) {
  _Static_assert(SAME_TYPE(SSTM_LOAD(V.f), float), "volatile float");
  _Static_assert(SAME_TYPE(SSTM_LOAD(V.p), struct all *), "volatile pointer");
  sstm_test_init();
  V.f = 1.5f, V.s = -3, V.uc = 7, V.p = NULL;
  SSTM_ATOMIC_BEGIN(NULL)
    SSTM_STORE(V.f, SSTM_LOAD(V.f) * 2);
    SSTM_STORE(V.s, SSTM_LOAD(V.s) - 1);
    SSTM_STORE(V.uc, SSTM_LOAD(V.uc) + 1);
    SSTM_STORE(V.p, &A);
    CHECK(SSTM_LOAD(V.f) == 3.0f);
    CHECK_EQ_PTR(SSTM_LOAD(V.p), &A);
  SSTM_ATOMIC_END();
  CHECK(V.f == 3.0f);
  CHECK_EQ_I(V.s, -4);
  CHECK_EQ_U(V.uc, 8);
  CHECK_EQ_PTR(V.p, &A);
  sstm_test_fini();
}

/* Neighbours of every width: each store must write back exactly its own
 * bytes. The plain stores below stand for other code changing the neighbour
 * while the transaction runs (on one thread, so deterministically): a store
 * wider than its lvalue would have logged the neighbour's old bytes and
 * written them back at commit. */
static struct nb {
  float f0, f1; /* adjacent 4-byte fields in one 8-byte word */
  char c0, c1;
  short s0, s1;
  unsigned char u0;
  _Bool b0;
  float f2;
} N;

TEST(neighbours_are_not_clobbered) {
  sstm_test_init();
  memset(&N, 0, sizeof N);
  N.f0 = 1.0f;
  N.f1 = 2.0f;
  N.f2 = 3.0f;
  SSTM_ATOMIC_BEGIN(NULL)
    SSTM_STORE(N.f0, SSTM_LOAD(N.f0) + 10.0f);
    SSTM_STORE(N.c1, 'b');
    SSTM_STORE(N.s0, -2);
    SSTM_STORE(N.b0, 1);
    SSTM_STORE(N.f2, SSTM_LOAD(N.f2) * 2);
    /* the neighbours, changed behind the transaction's back */
    N.f1 = 20.0f;
    N.c0 = 'a';
    N.s1 = 7;
    N.u0 = 0xEE;
  SSTM_ATOMIC_END();
  CHECK(N.f0 == 11.0f);
  CHECK(N.f1 == 20.0f);
  CHECK_EQ_I(N.c0, 'a');
  CHECK_EQ_I(N.c1, 'b');
  CHECK_EQ_I(N.s0, -2);
  CHECK_EQ_I(N.s1, 7);
  CHECK_EQ_U(N.u0, 0xEE);
  CHECK_EQ_I(N.b0, 1);
  CHECK(N.f2 == 6.0f);
  /* and the other way round: the float next door */
  SSTM_ATOMIC_BEGIN(NULL)
    SSTM_STORE(N.f1, 21.0f);
    N.f0 = 12.0f;
  SSTM_ATOMIC_END();
  CHECK(N.f0 == 12.0f);
  CHECK(N.f1 == 21.0f);
  sstm_test_fini();
}

/* Four threads, each incrementing its own float, short and char, all in one
 * lock stripe: the counts must all come out exact. */
#define NT 4
static struct {
  float f[NT];
  short s[NT];
  char c[NT];
} CT;

static void count_worker(sstm_tt_t *t) {
  unsigned k = t->idx;
  /* volatile: the counter lives across the block's setjmp. No restart
   * returns to it after the counter changed, but GCC cannot tell
   * (-Wclobbered, at -O1). */
  for (volatile int n = 0; n < 100; n++) {
    SSTM_ATOMIC_BEGIN(NULL)
      SSTM_STORE(CT.f[k], SSTM_LOAD(CT.f[k]) + 1.0f);
      SSTM_STORE(CT.s[k], SSTM_LOAD(CT.s[k]) + 1);
      SSTM_STORE(CT.c[k], SSTM_LOAD(CT.c[k]) + 1);
    SSTM_ATOMIC_END();
  }
}

TEST(threads_on_adjacent_fields) {
  sstm_test_init();
  memset(&CT, 0, sizeof CT);
  sstm_test_run_threads(NT, true, count_worker, NULL);
  for (int k = 0; k < NT; k++) {
    CHECK(CT.f[k] == 100.0f);
    CHECK_EQ_I(CT.s[k], 100);
    CHECK_EQ_I(CT.c[k], 100);
  }
  sstm_test_fini();
}

SSTM_TEST_MAIN()
