/* SPDX-License-Identifier: MIT */
/* The engine's error message, which every subsystem sets before it returns
 * an error code: the calling thread's sstm_last_error() text (public
 * contract: include/schedstm/common.h). Implemented by src/core/error.c.
 * One declaration for the engine (core/engine.h) and the subsystems that
 * reach it through src/iface/ (cm_services.h, map_services.h, the
 * executor's exec_internal.h).
 */
#ifndef SSTM_IFACE_ERROR_H
#define SSTM_IFACE_ERROR_H

#include <string.h>

/* Set the calling thread's sstm_last_error() message, printf-style; it
 * never fails (a message longer than the buffer is cut). A policy's or a
 * subsystem's init that fails says why with it before returning. */
void sstm__set_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A value of the user's quoted in a message ("'%.*s%s'", SSTM_QUOTE(s)),
 * cut after SSTM_QUOTE_MAX bytes with "...", so that a long bad value
 * leaves room for the explanation after it (the message buffer is 1 KiB). */
#define SSTM_QUOTE_MAX 64
#define SSTM_QUOTE(s)                                                                              \
  SSTM_QUOTE_MAX, (s), strnlen((s), SSTM_QUOTE_MAX + 1) > SSTM_QUOTE_MAX ? "..." : ""

#endif
