/* SPDX-License-Identifier: MIT */
/* Error codes, per-thread error messages, and the misuse handler. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/engine.h"

static __thread char last_error[1024];

void sstm__set_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_error, sizeof last_error, fmt, ap);
  va_end(ap);
}

SSTM_API const char *sstm_last_error(void) { return last_error; }

SSTM_API const char *sstm_strerror(int err) {
  switch (err) {
  case SSTM_OK: return "SSTM_OK: success";
  case SSTM_EINVAL: return "SSTM_EINVAL: invalid argument or configuration value";
  case SSTM_ENOMEM: return "SSTM_ENOMEM: out of memory";
  case SSTM_EBUSY: return "SSTM_EBUSY: resource busy";
  case SSTM_ESTATE: return "SSTM_ESTATE: library not initialised or already initialised";
  case SSTM_ENOTHREAD: return "SSTM_ENOTHREAD: calling thread is not registered";
  case SSTM_ENOTX: return "SSTM_ENOTX: no active transaction";
  case SSTM_ENOENT: return "SSTM_ENOENT: unknown contention manager";
  case SSTM_ELIMIT: return "SSTM_ELIMIT: limit reached";
  case SSTM_ECANCELED: return "SSTM_ECANCELED: transaction cancelled";
  case SSTM_EPERM: return "SSTM_EPERM: not permitted by the kernel";
  case SSTM_EAGAIN: return "SSTM_EAGAIN: would have to wait (no free context)";
  default: return "SSTM_E?: unknown error code";
  }
}

static void default_misuse(const char *msg) {
  fprintf(stderr, "schedstm: API misuse: %s\n", msg);
  abort();
}

static _Atomic(sstm_misuse_fn) misuse_fn = default_misuse;

SSTM_API sstm_misuse_fn sstm_set_misuse_handler(sstm_misuse_fn fn) {
  return atomic_exchange_explicit(&misuse_fn, fn ? fn : default_misuse, memory_order_acq_rel);
}

void sstm__misuse(const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  sstm__set_error("%s", msg);
  atomic_load_explicit(&misuse_fn, memory_order_acquire)(msg);
}

void sstm__fatal(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("schedstm: fatal: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  abort();
}
