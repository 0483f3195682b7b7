/* SPDX-License-Identifier: MIT */
/* schedstm tests: typed assertion macros.
 *
 * Every macro evaluates each operand exactly once and, on failure, prints the
 * expression, both operand values, the test name, the thread index and the
 * seed to reproduce the run (see runner.h), then aborts the process. They may
 * be used from any thread and inside transactions (a failed check inside a
 * transaction is a failure even if that attempt would later abort: opacity
 * promises that no attempt ever sees an inconsistent state).
 */
#ifndef SSTM_TEST_CHECK_H
#define SSTM_TEST_CHECK_H

#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <schedstm/schedstm.h>

/* Report a failure and abort. Defined in runner.c. */
__attribute__((noreturn, format(printf, 3, 4))) void sstm_test_failf(const char *file, int line,
                                                                     const char *fmt, ...);

#define FAIL(...) sstm_test_failf(__FILE__, __LINE__, __VA_ARGS__)

#define CHECK(cond)                                                                                \
  do {                                                                                             \
    if (!(cond)) FAIL("CHECK(%s) is false", #cond);                                                \
  } while (0)
#define CHECK_TRUE(cond) CHECK(cond)
#define CHECK_FALSE(cond)                                                                          \
  do {                                                                                             \
    if (cond) FAIL("CHECK_FALSE(%s) is true", #cond);                                              \
  } while (0)
#define CHECK_MSG(cond, ...)                                                                       \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      FAIL(__VA_ARGS__);                                                                           \
    }                                                                                              \
  } while (0)

/* Generic typed comparison: T is the type both operands are converted to. */
#define SSTM_CHECK_OP_(T, FMT, a, op, b)                                                           \
  do {                                                                                             \
    T sstm_ca_ = (T)(a);                                                                           \
    T sstm_cb_ = (T)(b);                                                                           \
    if (!(sstm_ca_ op sstm_cb_))                                                                   \
      FAIL("CHECK(%s %s %s): left " FMT ", right " FMT, #a, #op, #b, sstm_ca_, sstm_cb_);          \
  } while (0)

/* Signed integers (printed as %lld). */
#define CHECK_EQ_I(a, b) SSTM_CHECK_OP_(long long, "%lld", a, ==, b)
#define CHECK_NE_I(a, b) SSTM_CHECK_OP_(long long, "%lld", a, !=, b)
#define CHECK_LT_I(a, b) SSTM_CHECK_OP_(long long, "%lld", a, <, b)
#define CHECK_LE_I(a, b) SSTM_CHECK_OP_(long long, "%lld", a, <=, b)
#define CHECK_GT_I(a, b) SSTM_CHECK_OP_(long long, "%lld", a, >, b)
#define CHECK_GE_I(a, b) SSTM_CHECK_OP_(long long, "%lld", a, >=, b)

/* Unsigned integers (printed as %llu). */
#define CHECK_EQ_U(a, b) SSTM_CHECK_OP_(unsigned long long, "%llu", a, ==, b)
#define CHECK_NE_U(a, b) SSTM_CHECK_OP_(unsigned long long, "%llu", a, !=, b)
#define CHECK_LT_U(a, b) SSTM_CHECK_OP_(unsigned long long, "%llu", a, <, b)
#define CHECK_LE_U(a, b) SSTM_CHECK_OP_(unsigned long long, "%llu", a, <=, b)
#define CHECK_GT_U(a, b) SSTM_CHECK_OP_(unsigned long long, "%llu", a, >, b)
#define CHECK_GE_U(a, b) SSTM_CHECK_OP_(unsigned long long, "%llu", a, >=, b)

/* Bit patterns (printed in hex). */
#define CHECK_EQ_X(a, b) SSTM_CHECK_OP_(unsigned long long, "0x%llx", a, ==, b)
#define CHECK_NE_X(a, b) SSTM_CHECK_OP_(unsigned long long, "0x%llx", a, !=, b)

/* Pointers. */
#define CHECK_EQ_PTR(a, b) SSTM_CHECK_OP_(const void *, "%p", a, ==, b)
#define CHECK_NE_PTR(a, b) SSTM_CHECK_OP_(const void *, "%p", a, !=, b)
#define CHECK_NULL(a) CHECK_EQ_PTR(a, NULL)
#define CHECK_NOT_NULL(a) CHECK_NE_PTR(a, NULL)

/* Strings (NULL is printed as "(null)" and only equals NULL). */
#define CHECK_EQ_STR(a, b)                                                                         \
  do {                                                                                             \
    const char *sstm_sa_ = (a);                                                                    \
    const char *sstm_sb_ = (b);                                                                    \
    if (!((sstm_sa_ == NULL && sstm_sb_ == NULL) ||                                                \
          (sstm_sa_ != NULL && sstm_sb_ != NULL && strcmp(sstm_sa_, sstm_sb_) == 0)))              \
      FAIL("CHECK_EQ_STR(%s, %s): left \"%s\", right \"%s\"", #a, #b,                              \
           sstm_sa_ ? sstm_sa_ : "(null)", sstm_sb_ ? sstm_sb_ : "(null)");                        \
  } while (0)
#define CHECK_CONTAINS(hay, needle)                                                                \
  do {                                                                                             \
    const char *sstm_sh_ = (hay);                                                                  \
    const char *sstm_sn_ = (needle);                                                               \
    if (sstm_sh_ == NULL || sstm_sn_ == NULL || !strstr(sstm_sh_, sstm_sn_))                       \
      FAIL("CHECK_CONTAINS(%s, %s): \"%s\" does not contain \"%s\"", #hay, #needle,                \
           sstm_sh_ ? sstm_sh_ : "(null)", sstm_sn_ ? sstm_sn_ : "(null)");                        \
  } while (0)
#define CHECK_NOT_CONTAINS(hay, needle)                                                            \
  do {                                                                                             \
    const char *sstm_sh_ = (hay);                                                                  \
    const char *sstm_sn_ = (needle);                                                               \
    if (sstm_sh_ != NULL && sstm_sn_ != NULL && strstr(sstm_sh_, sstm_sn_))                        \
      FAIL("CHECK_NOT_CONTAINS(%s, %s): \"%s\" contains \"%s\"", #hay, #needle, sstm_sh_,          \
           sstm_sn_);                                                                              \
  } while (0)

/* Memory ranges: prints the first differing offset and both bytes. */
#define CHECK_EQ_MEM(a, b, n)                                                                      \
  do {                                                                                             \
    const unsigned char *sstm_ma_ = (const unsigned char *)(a);                                    \
    const unsigned char *sstm_mb_ = (const unsigned char *)(b);                                    \
    size_t sstm_mn_ = (n);                                                                         \
    for (size_t sstm_mi_ = 0; sstm_mi_ < sstm_mn_; sstm_mi_++)                                     \
      if (sstm_ma_[sstm_mi_] != sstm_mb_[sstm_mi_])                                                \
        FAIL("CHECK_EQ_MEM(%s, %s, %s): first difference at offset %zu: "                          \
             "left 0x%02x, right 0x%02x",                                                          \
             #a, #b, #n, sstm_mi_, sstm_ma_[sstm_mi_], sstm_mb_[sstm_mi_]);                        \
  } while (0)

/* schedstm return codes: printed with their names. */
#define CHECK_RC(expr, expected)                                                                   \
  do {                                                                                             \
    int sstm_ra_ = (int)(expr);                                                                    \
    int sstm_rb_ = (int)(expected);                                                                \
    if (sstm_ra_ != sstm_rb_)                                                                      \
      FAIL("CHECK_RC(%s, %s): got %d (%s), expected %d (%s); last error: "                         \
           "\"%s\"",                                                                               \
           #expr, #expected, sstm_ra_, sstm_strerror(sstm_ra_), sstm_rb_, sstm_strerror(sstm_rb_), \
           sstm_last_error());                                                                     \
  } while (0)
#define CHECK_OK(expr) CHECK_RC(expr, SSTM_OK)

#endif /* SSTM_TEST_CHECK_H */
