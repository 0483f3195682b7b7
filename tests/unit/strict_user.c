/* SPDX-License-Identifier: MIT */
/* Not built: tests/unit/strict_headers.cmake compiles this file as C
 * (-std=c11, c17, c2x) and as C++ (-std=c++17) with the strict warnings a
 * program may use and -Werror: what the public headers put into a
 * program's own code (SSTM_LOAD/SSTM_STORE on every supported type, const
 * and volatile lvalues among them, the typed barriers, inline or not, and
 * nested atomic blocks in both checkpoint forms) must not warn there.
 * Every function has a prototype (-Wmissing-prototypes). */
#include <schedstm/schedstm.h>
#include <schedstm/statetab.h>

#ifdef __cplusplus
#define NUL nullptr
#define CAST(T, x) static_cast<T>(x)
#else
#define NUL NULL
#define CAST(T, x) ((T)(x))
#endif

enum color { RED, GREEN };

struct rec {
  bool b;
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
  struct rec *next;
  const char *str;
  int8_t i8;
  int16_t i16;
  int32_t i32;
  int64_t i64;
  uint8_t u8;
  uint16_t u16;
  uint32_t u32;
  uint64_t u64;
  size_t sz;
  uintptr_t up;
  ptrdiff_t pd;
  const volatile int *cvip; /* a pointer to const volatile */
#ifndef __cplusplus
  enum color col; /* C only (generic.h) */
#endif
};

struct vrec {
  volatile bool b;
  volatile char c;
  volatile signed char sc;
  volatile unsigned char uc;
  volatile short s;
  volatile unsigned short us;
  volatile int i;
  volatile unsigned int ui;
  volatile long l;
  volatile unsigned long ul;
  volatile long long ll;
  volatile unsigned long long ull;
  volatile float f;
  volatile double d;
  void *volatile vp;
  struct vrec *volatile next;
  const char *volatile str;
};

#define COPY(dst, src, fld) SSTM_STORE((dst)->fld, SSTM_LOAD((src)->fld))
/* The fields struct rec and struct vrec share. */
#define COPY_ALL(dst, src)                                                                         \
  do {                                                                                             \
    COPY(dst, src, b);                                                                             \
    COPY(dst, src, c);                                                                             \
    COPY(dst, src, sc);                                                                            \
    COPY(dst, src, uc);                                                                            \
    COPY(dst, src, s);                                                                             \
    COPY(dst, src, us);                                                                            \
    COPY(dst, src, i);                                                                             \
    COPY(dst, src, ui);                                                                            \
    COPY(dst, src, l);                                                                             \
    COPY(dst, src, ul);                                                                            \
    COPY(dst, src, ll);                                                                            \
    COPY(dst, src, ull);                                                                           \
    COPY(dst, src, f);                                                                             \
    COPY(dst, src, d);                                                                             \
    COPY(dst, src, vp);                                                                            \
    COPY(dst, src, next);                                                                          \
    COPY(dst, src, str);                                                                           \
  } while (0)

/* Plain lvalues into plain ones, from const ones. */
long use_plain(struct rec *r, const struct rec *cr);
long use_plain(struct rec *r, const struct rec *cr) {
  COPY_ALL(r, cr);
  COPY(r, cr, i8);
  COPY(r, cr, i16);
  COPY(r, cr, i32);
  COPY(r, cr, i64);
  COPY(r, cr, u8);
  COPY(r, cr, u16);
  COPY(r, cr, u32);
  COPY(r, cr, u64);
  COPY(r, cr, sz);
  COPY(r, cr, up);
  COPY(r, cr, pd);
  COPY(r, cr, cvip);
#ifndef __cplusplus
  COPY(r, cr, col);
  SSTM_STORE(r->col, GREEN);
#endif
  SSTM_STORE(r->next, NUL);
  SSTM_STORE(r->str, "x");
  SSTM_STORE(r->f, 1.5f);
  SSTM_STORE(r->d, 2.5);
  SSTM_STORE(r->b, true);
  const char *s = SSTM_LOAD(cr->str);
  const volatile int *p = SSTM_LOAD(r->cvip);
  return SSTM_LOAD(r->next)->l + s[0] + *p;
}

/* Volatile lvalues, through plain and volatile structs, from const
 * volatile ones. */
long use_volatile(struct vrec *r, const volatile struct vrec *cr);
long use_volatile(struct vrec *r, const volatile struct vrec *cr) {
  COPY_ALL(r, cr);
  volatile struct vrec *vr = r;
  COPY_ALL(vr, cr);
  SSTM_STORE(r->next, NUL);
  SSTM_STORE(vr->str, "x");
  struct vrec *n = SSTM_LOAD(r->next);
  return SSTM_LOAD(n->i) + SSTM_LOAD(cr->str)[0];
}

/* Through pointers with every qualification. */
double use_pointers(int *ip, const int *cip, volatile int *vip, const volatile int *cvip, float *fp,
                    const double *cdp, char **pp, const char *const *cpp);
double use_pointers(int *ip, const int *cip, volatile int *vip, const volatile int *cvip, float *fp,
                    const double *cdp, char **pp, const char *const *cpp) {
  SSTM_STORE(*ip, SSTM_LOAD(*cip) + SSTM_LOAD(*cvip));
  SSTM_STORE(*vip, SSTM_LOAD(*ip));
  SSTM_STORE(*fp, SSTM_LOAD(*fp));
  SSTM_STORE(*pp, SSTM_LOAD(*pp));
  return SSTM_LOAD(*cdp) + SSTM_LOAD(*vip) + SSTM_LOAD(*cpp)[0];
}

/* The typed barriers (<schedstm/inline.h>'s with SSTM_INLINE_BARRIERS). */
uint64_t use_typed(struct rec *r, const struct rec *cr);
uint64_t use_typed(struct rec *r, const struct rec *cr) {
  sstm_store_u8(&r->u8, sstm_load_u8(&cr->u8));
  sstm_store_u16(&r->u16, sstm_load_u16(&cr->u16));
  sstm_store_u32(&r->u32, sstm_load_u32(&cr->u32));
  sstm_store_u64(&r->u64, sstm_load_u64(&cr->u64));
  sstm_store_i8(&r->i8, sstm_load_i8(&cr->i8));
  sstm_store_i16(&r->i16, sstm_load_i16(&cr->i16));
  sstm_store_i32(&r->i32, sstm_load_i32(&cr->i32));
  sstm_store_i64(&r->i64, sstm_load_i64(&cr->i64));
  sstm_store_float(&r->f, sstm_load_float(&cr->f));
  sstm_store_double(&r->d, sstm_load_double(&cr->d));
  sstm_store_ptr(&r->vp, sstm_load_ptr(&cr->vp));
  struct rec tmp;
  sstm_load_bytes(&tmp, cr, sizeof tmp);
  sstm_store_bytes(r, &tmp, sizeof tmp);
  return tmp.u64;
}

static void body(void *arg) {
  struct rec *r = CAST(struct rec *, arg);
  (void)use_typed(r, r);
}

/* Atomic blocks, one nested in another (-Wshadow), and the one whose
 * result is stored. */
int use_tx(struct rec *r);
int use_tx(struct rec *r) {
  SSTM_ATOMIC_BEGIN(NUL)
    (void)use_plain(r, r);
    SSTM_ATOMIC_BEGIN(NUL)
      (void)use_typed(r, r);
    SSTM_ATOMIC_END();
  SSTM_ATOMIC_END();
  return sstm_run(NUL, body, r);
}
void use_tx_rc(struct rec *r, int *rc);
void use_tx_rc(struct rec *r, int *rc) {
  SSTM_ATOMIC_BEGIN(NUL)
    (void)use_plain(r, r);
    SSTM_ATOMIC_BEGIN(NUL)
      (void)use_typed(r, r);
    SSTM_ATOMIC_END();
    SSTM_ATOMIC_END_RC(*rc);
}
