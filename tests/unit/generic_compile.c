/* SPDX-License-Identifier: MIT */
/* Not built: tests/unit/generic_compile.cmake compiles this file once per
 * case (-DCASE_<name>), as C11 with -pedantic -Werror and as C++, and checks
 * the outcome. CASE_GOOD uses every supported type through SSTM_LOAD and
 * SSTM_STORE, CASE_VOLATILE volatile lvalues of them; both must compile
 * without a warning; every other case misuses
 * them and must fail, the unsupported types with the static assertion's
 * message. */
#include <schedstm/schedstm.h>

struct pair {
  int a, b; /* 8 bytes: the size of a pointer, still not a pointer */
};

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
  long double ld;
  struct pair pr;
  union {
    long x;
  } un;
  const int ci;
};

#if defined(CASE_GOOD)
long use(struct rec *r, const struct rec *cr) {
  SSTM_STORE(r->b, SSTM_LOAD(cr->b));
  SSTM_STORE(r->c, SSTM_LOAD(cr->c));
  SSTM_STORE(r->sc, SSTM_LOAD(cr->sc));
  SSTM_STORE(r->uc, SSTM_LOAD(cr->uc));
  SSTM_STORE(r->s, SSTM_LOAD(cr->s));
  SSTM_STORE(r->us, SSTM_LOAD(cr->us));
  SSTM_STORE(r->i, SSTM_LOAD(cr->i));
  SSTM_STORE(r->ui, SSTM_LOAD(cr->ui));
  SSTM_STORE(r->l, SSTM_LOAD(cr->l));
  SSTM_STORE(r->ul, SSTM_LOAD(cr->ul));
  SSTM_STORE(r->ll, SSTM_LOAD(cr->ll));
  SSTM_STORE(r->ull, SSTM_LOAD(cr->ull));
  SSTM_STORE(r->f, SSTM_LOAD(cr->f));
  SSTM_STORE(r->d, SSTM_LOAD(cr->d));
  SSTM_STORE(r->vp, SSTM_LOAD(cr->vp));
  SSTM_STORE(r->next, SSTM_LOAD(cr->next));
  SSTM_STORE(r->next, NULL);
  SSTM_STORE(r->str, "x");
  const char *s = SSTM_LOAD(cr->str);
  return SSTM_LOAD(r->next)->l + s[0] + SSTM_LOAD(cr->ci);
}
#elif defined(CASE_VOLATILE)
/* volatile lvalues of every kind load and store like the others */
struct vrec {
  volatile bool b;
  volatile char c;
  volatile unsigned char uc;
  volatile short s;
  volatile int i;
  volatile unsigned long ul;
  volatile long long ll;
  volatile float f;
  volatile double d;
  struct vrec *volatile next;
  void *volatile vp;
  const char *volatile str;
};
long use(struct vrec *r, const volatile struct vrec *cr) {
  SSTM_STORE(r->b, SSTM_LOAD(cr->b));
  SSTM_STORE(r->c, SSTM_LOAD(cr->c));
  SSTM_STORE(r->uc, SSTM_LOAD(cr->uc));
  SSTM_STORE(r->s, SSTM_LOAD(cr->s));
  SSTM_STORE(r->i, SSTM_LOAD(cr->i));
  SSTM_STORE(r->ul, SSTM_LOAD(cr->ul));
  SSTM_STORE(r->ll, SSTM_LOAD(cr->ll));
  SSTM_STORE(r->f, SSTM_LOAD(cr->f));
  SSTM_STORE(r->d, SSTM_LOAD(cr->d));
  SSTM_STORE(r->vp, SSTM_LOAD(cr->vp));
  SSTM_STORE(r->next, SSTM_LOAD(cr->next));
  SSTM_STORE(r->next, NULL);
  SSTM_STORE(r->str, "x");
  const char *s = SSTM_LOAD(cr->str);
  struct vrec *n = SSTM_LOAD(r->next);
  return SSTM_LOAD(n->i) + s[0];
}
#elif defined(CASE_CONST_VOLATILE_STORE)
void use(const volatile int *p) { SSTM_STORE(*p, 1); }
#elif defined(CASE_STRUCT_LOAD)
struct pair use(struct rec *r) {
  return SSTM_LOAD(r->pr);
}
#elif defined(CASE_STRUCT_STORE)
void use(struct rec *r, struct pair p) { SSTM_STORE(r->pr, p); }
#elif defined(CASE_UNION_LOAD)
long use(struct rec *r) { return SSTM_LOAD(r->un).x; }
#elif defined(CASE_LONG_DOUBLE_LOAD)
long double use(struct rec *r) { return SSTM_LOAD(r->ld); }
#elif defined(CASE_LONG_DOUBLE_STORE)
void use(struct rec *r) { SSTM_STORE(r->ld, 1.0L); }
#elif defined(CASE_CONST_STORE)
void use(struct rec *r) { SSTM_STORE(r->ci, 1); }
#elif defined(CASE_INCOMPATIBLE_POINTER_STORE)
void use(struct rec *r) { SSTM_STORE(r->next, &r->i); }
#elif defined(CASE_INTEGER_INTO_POINTER_STORE)
void use(struct rec *r) { SSTM_STORE(r->next, r->l); }
#else
#error "generic_compile.c: no CASE_ given"
#endif
