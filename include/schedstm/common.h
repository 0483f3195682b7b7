/* SPDX-License-Identifier: MIT */
/** @file
 * Common definitions shared by every public header: error codes, the
 * version, the export and linkage macros.
 *
 * Error convention: functions that can fail return an int, 0 on success and
 * a negative SSTM_E* code on failure. sstm_strerror() names a code;
 * sstm_last_error() gives the calling thread's detailed message for the last
 * failure (for example the list of valid values of a bad configuration
 * string).
 */
#ifndef SCHEDSTM_COMMON_H
#define SCHEDSTM_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
/** Opens the headers' declarations: `extern "C" {` in C++, nothing in C. */
#define SSTM_EXTERN_C_BEGIN extern "C" {
/** Closes what SSTM_EXTERN_C_BEGIN opened. */
#define SSTM_EXTERN_C_END }
#else
/** Opens the headers' declarations: `extern "C" {` in C++, nothing in C. */
#define SSTM_EXTERN_C_BEGIN
/** Closes what SSTM_EXTERN_C_BEGIN opened. */
#define SSTM_EXTERN_C_END
#endif

/* Internal: around the inline C code of the headers (access.h, fastpath.h,
 * inline.h), which C++ programs compile too. That code is C: its casts are
 * C casts, some of them to the type they already have on LP64 (a
 * uintptr_t as uint64_t), kept for the targets where the types differ. A
 * C++ program's -Wold-style-cast and -Wuseless-cast would report them as
 * its own, so they are off between the two macros, and only there
 * (push/pop: the program's code, the macros of these headers expanded in
 * it included, keeps its settings). Nothing in C. */
#if defined(__cplusplus) && defined(__clang__)
#define SSTM__CXX_CASTS_BEGIN                                                                      \
  _Pragma("clang diagnostic push") _Pragma("clang diagnostic ignored \"-Wold-style-cast\"")
#define SSTM__CXX_CASTS_END _Pragma("clang diagnostic pop")
#elif defined(__cplusplus)
#define SSTM__CXX_CASTS_BEGIN                                                                      \
  _Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Wold-style-cast\"")            \
      _Pragma("GCC diagnostic ignored \"-Wuseless-cast\"")
#define SSTM__CXX_CASTS_END _Pragma("GCC diagnostic pop")
#else
#define SSTM__CXX_CASTS_BEGIN
#define SSTM__CXX_CASTS_END
#endif

/** Marks a function exported from the shared library. Only functions marked
 * SSTM_API are exported; the library is built with -fvisibility=hidden. */
#define SSTM_API __attribute__((visibility("default")))

/** Marks a hot entry point of the library (the typed loads and stores,
 * begin, commit, allocation): a program compiled with GCC calls it
 * through its GOT entry, not through a PLT stub (GCC's noplt attribute,
 * what -fno-plt does for every call), which saves a jump per call when the
 * program links the shared library, and nothing when it links the static
 * one (the linker turns the call into a direct one). Empty where the
 * compiler has no such attribute (clang). */
#if defined(__has_attribute)
#if __has_attribute(noplt) && !defined(__clang__)
#define SSTM_NOPLT __attribute__((noplt))
#endif
#endif
#ifndef SSTM_NOPLT
#define SSTM_NOPLT
#endif

/** Major version of the headers (and of the library they belong to). */
#define SSTM_VERSION_MAJOR 0
/** Minor version of the headers. */
#define SSTM_VERSION_MINOR 2
/** Patch version of the headers. */
#define SSTM_VERSION_PATCH 0
/** The version of the headers as a string, "MAJOR.MINOR.PATCH". These macros
 * agree with project() in CMakeLists.txt (configuring checks it). */
#define SSTM_VERSION_STRING "0.2.0"

SSTM_EXTERN_C_BEGIN

/** Error codes. The enumerators are negative: functions return them as they
 * are (return SSTM_EINVAL, never -SSTM_EINVAL), and 0 or a non-negative
 * count on success. */
typedef enum sstm_error {
  SSTM_OK = 0,         /**< success */
  SSTM_EINVAL = -1,    /**< bad argument or configuration value */
  SSTM_ENOMEM = -2,    /**< allocation failed */
  SSTM_EBUSY = -3,     /**< resource busy: threads still in transactions, ... */
  SSTM_ESTATE = -4,    /**< library not initialised, or already initialised */
  SSTM_ENOTHREAD = -5, /**< calling thread is not registered */
  SSTM_ENOTX = -6,     /**< no transaction is active / target has no transaction */
  SSTM_ENOENT = -7,    /**< unknown contention-manager name (cfg.cm) */
  SSTM_ELIMIT = -8,    /**< a fixed limit was reached (threads, hooks, policies) */
  SSTM_ECANCELED = -9, /**< transaction was cancelled by sstm_cancel() */
  SSTM_EPERM = -10,    /**< the kernel refused (sstm_sched_set, the state table's memfd) */
  SSTM_EAGAIN = -11,   /**< would have to wait: no free context (sstm_exec_try_submit) */
} sstm_error_t;

/** Name of an error code ("SSTM_ENOMEM: out of memory").
 * @param err an SSTM_E* code; any other value gives "SSTM_E?: unknown error code"
 * @return a static string; never NULL */
SSTM_API const char *sstm_strerror(int err);

/** Detailed message for the calling thread's last failed schedstm call, or
 * "" if none.
 * @return the message, valid until the thread's next schedstm call */
SSTM_API const char *sstm_last_error(void);

SSTM_EXTERN_C_END

#endif /* SCHEDSTM_COMMON_H */
