/* SPDX-License-Identifier: MIT */
/** @file
 * The type-generic access form, SSTM_LOAD(lvalue) and
 * SSTM_STORE(lvalue, value).
 *
 * The typed loads and stores of <schedstm/access.h> name the width of the
 * access (sstm_load_u32, sstm_store_float, ...). Code written for another
 * STM, or macros that wrap one (STAMP's TM_SHARED_READ and friends), often
 * know only the lvalue: these macros pick the typed function from the
 * lvalue's type at compile time, so that nobody writes a dispatch on type
 * and size by hand and a float is never accessed as a wider word by mistake
 * (an 8-byte access to a 4-byte float would log, lock and write back its
 * neighbour too).
 * @code{.c}
 *   struct point { float x, y; short tag; char c; struct point *next; };
 *   SSTM_ATOMIC_BEGIN(NULL)
 *     float x = SSTM_LOAD(p->x);            // sstm_load_float(&p->x)
 *     SSTM_STORE(p->y, x * 2);              // sstm_store_float: 4 bytes
 *     struct point *n = SSTM_LOAD(p->next); // sstm_load_ptr, typed result
 *     SSTM_STORE(p->tag, SSTM_LOAD(n->tag) + 1);
 *   SSTM_ATOMIC_END();
 * @endcode
 *
 * In C: C11 _Generic, with the __typeof__ and __builtin_classify_type that
 * gcc and clang provide. In C++: overloads on the lvalue's address, for
 * the same types except enumerations (and wchar_t, char16_t, char32_t,
 * which are distinct types there); what they reject fails a static_assert
 * with the same message. Both compile without a warning under -pedantic
 * and the strict warnings of README.md, "Compiler warnings" (-Wcast-qual,
 * -Wconversion, -Wold-style-cast, ...), on the lvalues and values of every
 * supported type and qualification. Included by <schedstm/schedstm.h>.
 */
#ifndef SCHEDSTM_GENERIC_H
#define SCHEDSTM_GENERIC_H

#include <schedstm/access.h>

/**
 * @def SSTM_LOAD(lvalue)
 * @brief Transactional load of @p lvalue, with the width its type gives.
 *
 * @p lvalue is an lvalue (a variable, `p->field`, `a[i]`) of one of these
 * types, qualified or not (`const` and `volatile` lvalues are fine):
 * - every integer type: `_Bool`, `char`, `signed char`, `unsigned char`,
 *   `short`, `int`, `long`, `long long` and their `unsigned` forms (hence
 *   the `<stdint.h>` types and `size_t`), and, in C, enumerations (through
 *   the integer type they are compatible with);
 * - `float` (a 4-byte access) and `double` (8 bytes), bit-exact;
 * - object pointers (`struct node *`, `const char *`, `void *`).
 *
 * The access is exactly `sizeof lvalue` bytes at `&lvalue` through the typed
 * function of <schedstm/access.h> (sstm_load_u8 ... sstm_load_u64,
 * sstm_load_float, sstm_load_double, sstm_load_ptr), and the result has the
 * lvalue's (unqualified) type. Any other type (a struct or union, `long
 * double`, a complex type, an integer wider than 8 bytes) is a compile-time
 * error whose message begins "SSTM_LOAD/SSTM_STORE: unsupported type"; use
 * sstm_load_bytes() for structs. Arrays, bit-fields and function pointers
 * are not supported either (the first two have no address of their own to
 * access; ISO C has no conversion between function and object pointers,
 * so a function pointer is rejected under -pedantic).
 *
 * The argument is evaluated once. Valid where the typed loads are: inside a
 * transaction on a registered thread (otherwise the misuse handler runs).
 * With SSTM_INLINE_BARRIERS defined the inline read fast path is used, as
 * for the typed loads.
 */

/**
 * @def SSTM_STORE(lvalue, value)
 * @brief Transactional store of @p value, converted to the type of
 *        @p lvalue, into @p lvalue.
 *
 * The same types as SSTM_LOAD(); the store writes exactly `sizeof lvalue`
 * bytes through the matching typed store (sstm_store_u8 ... sstm_store_ptr).
 * @p value is converted as by the assignment `lvalue = value`, and the
 * compiler checks that assignment as it would a plain one: a `const`
 * lvalue, a pointer of an incompatible type or an integer stored into a
 * pointer is diagnosed. The expression has type void. Each argument is
 * evaluated once; @p lvalue's address is taken before or after @p value is
 * evaluated (unsequenced, as the operands of an assignment).
 */

#ifndef __cplusplus

/* One load and one store function per supported arithmetic type; the width
 * is that of the type (sizeof, resolved at compile time), so `long` is 8
 * bytes on LP64 and 4 on ILP32. Signed values go through the unsigned
 * functions of the same width (two's complement, as sstm_load_i32 does).
 * They take volatile-qualified pointers, so that a volatile lvalue is
 * accepted like any other (the typed access is the one that touches the
 * memory). The qualifier is dropped through uintptr_t, where -Wcast-qual
 * does not look (a program compiled with it includes this header), and a
 * load's value is cast from a variable, not from the call, which
 * -Wbad-function-cast reports for a _Bool; neither costs an instruction. */
#define SSTM__GENERIC_INT(T, name)                                                                 \
  static inline T sstm__ld_##name(const volatile T *a) {                                           \
    const void *p = (const void *)(uintptr_t)a;                                                    \
    uint64_t v;                                                                                    \
    if (sizeof(T) == 1)                                                                            \
      v = sstm_load_u8((const uint8_t *)p);                                                        \
    else if (sizeof(T) == 2)                                                                       \
      v = sstm_load_u16((const uint16_t *)p);                                                      \
    else if (sizeof(T) == 4)                                                                       \
      v = sstm_load_u32((const uint32_t *)p);                                                      \
    else                                                                                           \
      v = sstm_load_u64((const uint64_t *)p);                                                      \
    return (T)v;                                                                                   \
  }                                                                                                \
  static inline void sstm__st_##name(volatile T *a, T v) {                                         \
    void *p = (void *)(uintptr_t)a;                                                                \
    if (sizeof(T) == 1)                                                                            \
      sstm_store_u8((uint8_t *)p, (uint8_t)v);                                                     \
    else if (sizeof(T) == 2)                                                                       \
      sstm_store_u16((uint16_t *)p, (uint16_t)v);                                                  \
    else if (sizeof(T) == 4)                                                                       \
      sstm_store_u32((uint32_t *)p, (uint32_t)v);                                                  \
    else                                                                                           \
      sstm_store_u64((uint64_t *)p, (uint64_t)v);                                                  \
  }

SSTM__GENERIC_INT(_Bool, bool)
SSTM__GENERIC_INT(char, char)
SSTM__GENERIC_INT(signed char, schar)
SSTM__GENERIC_INT(unsigned char, uchar)
SSTM__GENERIC_INT(short, short)
SSTM__GENERIC_INT(unsigned short, ushort)
SSTM__GENERIC_INT(int, int)
SSTM__GENERIC_INT(unsigned int, uint)
SSTM__GENERIC_INT(long, long)
SSTM__GENERIC_INT(unsigned long, ulong)
SSTM__GENERIC_INT(long long, llong)
SSTM__GENERIC_INT(unsigned long long, ullong)
#undef SSTM__GENERIC_INT

static inline float sstm__ld_float(const volatile float *a) {
  return sstm_load_float((const float *)(uintptr_t)a);
}
static inline void sstm__st_float(volatile float *a, float v) {
  sstm_store_float((float *)(uintptr_t)a, v);
}
static inline double sstm__ld_double(const volatile double *a) {
  return sstm_load_double((const double *)(uintptr_t)a);
}
static inline void sstm__st_double(volatile double *a, double v) {
  sstm_store_double((double *)(uintptr_t)a, v);
}
/* Object pointers (the default association; SSTM__GENERIC_CHECK has made
 * sure the lvalue is one). The value's type was checked by the assignment
 * in SSTM_STORE, so it travels as const volatile void * here (any object
 * pointer converts to it without a diagnostic, a pointer to volatile
 * included). */
static inline void *sstm__ld_ptr(const volatile void *a) {
  return sstm_load_ptr((void *const *)(uintptr_t)a);
}
static inline void sstm__st_ptr(volatile void *a, const volatile void *v) {
  sstm_store_ptr((void **)(uintptr_t)a, (void *)(uintptr_t)v);
}

/* The function for the lvalue's type; `op` is ld or st. (Laid out by hand:
 * clang-format 14 splits the associations of _Generic at their colons.) */
/* clang-format off */
#define SSTM__GENERIC_FN(op, lv)                                                                   \
  _Generic((lv),                                                                                   \
      _Bool: sstm__##op##_bool,                                                                    \
      char: sstm__##op##_char,                                                                     \
      signed char: sstm__##op##_schar,                                                             \
      unsigned char: sstm__##op##_uchar,                                                           \
      short: sstm__##op##_short,                                                                   \
      unsigned short: sstm__##op##_ushort,                                                         \
      int: sstm__##op##_int,                                                                       \
      unsigned int: sstm__##op##_uint,                                                             \
      long: sstm__##op##_long,                                                                     \
      unsigned long: sstm__##op##_ulong,                                                           \
      long long: sstm__##op##_llong,                                                               \
      unsigned long long: sstm__##op##_ullong,                                                     \
      float: sstm__##op##_float,                                                                   \
      double: sstm__##op##_double,                                                                 \
      default: sstm__##op##_ptr)

/* 1 if the lvalue's type is supported: one of the types listed above, or
 * else a pointer (type class 5 of __builtin_classify_type, the same in gcc
 * and clang) of the size of void *. An integer constant expression. */
#define SSTM__GENERIC_OK(lv)                                                                       \
  _Generic((lv),                                                                                   \
      _Bool: 1,                                                                                    \
      char: 1,                                                                                     \
      signed char: 1,                                                                              \
      unsigned char: 1,                                                                            \
      short: 1,                                                                                    \
      unsigned short: 1,                                                                           \
      int: 1,                                                                                      \
      unsigned int: 1,                                                                             \
      long: 1,                                                                                     \
      unsigned long: 1,                                                                            \
      long long: 1,                                                                                \
      unsigned long long: 1,                                                                       \
      float: 1,                                                                                    \
      double: 1,                                                                                   \
      default: __builtin_classify_type(lv) == 5 && sizeof(lv) == sizeof(void *))
/* clang-format on */

/* A static assertion usable in an expression (C11 allows one among the
 * members of a struct); evaluates nothing. */
#define SSTM__GENERIC_CHECK(lv)                                                                    \
  ((void)sizeof(struct {                                                                           \
    _Static_assert(SSTM__GENERIC_OK(lv),                                                           \
                   "SSTM_LOAD/SSTM_STORE: unsupported type (supported: integer types, float, "     \
                   "double, object pointers; use sstm_load_bytes/sstm_store_bytes for "            \
                   "structs)");                                                                    \
    int sstm__unused;                                                                              \
  }))

/* The call's result is cast from a comma expression, not from the call
 * itself, which -Wbad-function-cast would report in the program for an
 * enumeration (read as its compatible integer type). */
#define SSTM_LOAD(lvalue)                                                                          \
  (SSTM__GENERIC_CHECK(lvalue),                                                                    \
   (__typeof__(lvalue))((void)0, SSTM__GENERIC_FN(ld, lvalue)(&(lvalue))))

#define SSTM_STORE(lvalue, value)                                                                  \
  (SSTM__GENERIC_CHECK(lvalue), (void)sizeof((lvalue) = (value)),                                  \
   SSTM__GENERIC_FN(st, lvalue)(&(lvalue), (value)))

#else /* __cplusplus: overloads on the lvalue's address */

/* The same mapping as overloads: one per arithmetic type, a template for
 * object pointers, and a catch-all whose instantiation fails with the same
 * message. (Not extern "C": overloads and templates have C++ linkage.)
 * Each has a volatile twin that drops the qualifier and calls it, for
 * volatile lvalues (the unqualified one stays the better match for the
 * others, and a non-template beats the catch-all).
 *
 * C++ casts only, none that casts away a qualifier but const_cast, so that
 * -Wold-style-cast and -Wcast-qual have nothing to report. The value and
 * pointer conversions go through two templates: where the source and the
 * target are the same type (an unsigned char through sstm_load_u8) the
 * cast is then a dependent one, which -Wuseless-cast does not report. */
template <class T, class U> static inline T sstm__cvt(U v) { return static_cast<T>(v); }
template <class T, class U> static inline T *sstm__pun(U *p) { return reinterpret_cast<T *>(p); }
#define SSTM__GENERIC_VOLATILE(T)                                                                  \
  static inline T sstm__ld(const volatile T *a) { return sstm__ld(const_cast<const T *>(a)); }     \
  static inline void sstm__st(volatile T *a, T v) { sstm__st(const_cast<T *>(a), v); }
#define SSTM__GENERIC_INT(T, bits)                                                                 \
  static inline T sstm__ld(const T *a) {                                                           \
    return sstm__cvt<T>(sstm_load_u##bits(sstm__pun<const uint##bits##_t>(a)));                    \
  }                                                                                                \
  static inline void sstm__st(T *a, T v) {                                                         \
    sstm_store_u##bits(sstm__pun<uint##bits##_t>(a), sstm__cvt<uint##bits##_t>(v));                \
  }                                                                                                \
  SSTM__GENERIC_VOLATILE(T)
#define SSTM__GENERIC_INT_ANY(T)                                                                   \
  static inline T sstm__ld(const T *a) {                                                           \
    return sizeof(T) == 4 ? sstm__cvt<T>(sstm_load_u32(sstm__pun<const uint32_t>(a)))              \
                          : sstm__cvt<T>(sstm_load_u64(sstm__pun<const uint64_t>(a)));             \
  }                                                                                                \
  static inline void sstm__st(T *a, T v) {                                                         \
    if (sizeof(T) == 4)                                                                            \
      sstm_store_u32(sstm__pun<uint32_t>(a), sstm__cvt<uint32_t>(v));                              \
    else                                                                                           \
      sstm_store_u64(sstm__pun<uint64_t>(a), sstm__cvt<uint64_t>(v));                              \
  }                                                                                                \
  SSTM__GENERIC_VOLATILE(T)
SSTM__GENERIC_INT(bool, 8)
SSTM__GENERIC_INT(char, 8)
SSTM__GENERIC_INT(signed char, 8)
SSTM__GENERIC_INT(unsigned char, 8)
SSTM__GENERIC_INT(short, 16)
SSTM__GENERIC_INT(unsigned short, 16)
SSTM__GENERIC_INT_ANY(int)
SSTM__GENERIC_INT_ANY(unsigned int)
SSTM__GENERIC_INT_ANY(long)
SSTM__GENERIC_INT_ANY(unsigned long)
SSTM__GENERIC_INT_ANY(long long)
SSTM__GENERIC_INT_ANY(unsigned long long)
#undef SSTM__GENERIC_INT
#undef SSTM__GENERIC_INT_ANY
static inline float sstm__ld(const float *a) { return sstm_load_float(a); }
static inline void sstm__st(float *a, float v) { sstm_store_float(a, v); }
static inline double sstm__ld(const double *a) { return sstm_load_double(a); }
static inline void sstm__st(double *a, double v) { sstm_store_double(a, v); }
SSTM__GENERIC_VOLATILE(float)
SSTM__GENERIC_VOLATILE(double)
#undef SSTM__GENERIC_VOLATILE
/* A pointer object is read and written as a void * (the pointer through
 * const void *, which every object pointer type converts to; the value
 * through const volatile void *, then const_cast). */
template <class T> static inline T *sstm__ld(T *const *a) {
  return static_cast<T *>(sstm_load_ptr(static_cast<void *const *>(static_cast<const void *>(a))));
}
/* The stored value's parameter is not deduced (sstm__id), so that it is
 * converted as by an assignment (NULL, a derived class) and the overloads
 * above, whose second parameter is a conversion away, still win over the
 * catch-all below. */
template <class T> struct sstm__id { typedef T type; };
template <class T> static inline void sstm__st(T **a, typename sstm__id<T *>::type v) {
  sstm_store_ptr(static_cast<void **>(static_cast<void *>(a)),
                 const_cast<void *>(static_cast<const volatile void *>(v)));
}
template <class T> static inline T *sstm__ld(T *const volatile *a) {
  return sstm__ld(const_cast<T *const *>(a));
}
template <class T> static inline void sstm__st(T *volatile *a, typename sstm__id<T *>::type v) {
  sstm__st(const_cast<T **>(a), v);
}
template <class T> struct sstm__unsupported { static const bool value = false; };
template <class T> static inline T sstm__ld(const T *) {
  static_assert(sstm__unsupported<T>::value,
                "SSTM_LOAD/SSTM_STORE: unsupported type (supported: integer types, float, "
                "double, object pointers; use sstm_load_bytes/sstm_store_bytes for structs)");
  return T();
}
template <class T> static inline void sstm__st(T *, typename sstm__id<T>::type) {
  static_assert(sstm__unsupported<T>::value,
                "SSTM_LOAD/SSTM_STORE: unsupported type (supported: integer types, float, "
                "double, object pointers; use sstm_load_bytes/sstm_store_bytes for structs)");
}

#define SSTM_LOAD(lvalue) sstm__ld(&(lvalue))
#define SSTM_STORE(lvalue, value) sstm__st(&(lvalue), (value))

#endif /* __cplusplus */

#endif /* SCHEDSTM_GENERIC_H */
