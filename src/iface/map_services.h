/* SPDX-License-Identifier: MIT */
/* What the engine offers the thread-mapping subsystem (src/map) beyond the
 * public API: error messages and the state table's CPU columns.
 * Implemented by src/core/map_services.c. src/map is compiled with
 * include/, src/iface/, src/os/ and src/map/ on its include path, never
 * src/core/ (src/CMakeLists.txt; tests/check_layers.py).
 */
#ifndef SSTM_IFACE_MAP_SERVICES_H
#define SSTM_IFACE_MAP_SERVICES_H

#include <string.h>

/* Set the calling thread's sstm_last_error() message (core/error.c). */
void sstm__set_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#ifndef SSTM_QUOTE
/* A value of the user's quoted in a message (as core/engine.h's). */
#define SSTM_QUOTE_MAX 64
#define SSTM_QUOTE(s)                                                                              \
  SSTM_QUOTE_MAX, (s), strnlen((s), SSTM_QUOTE_MAX + 1) > SSTM_QUOTE_MAX ? "..." : ""
#endif

/* Show, in the calling thread's state-table entry (schedstm/statetab.h,
 * cpu and cpu_pinned), the CPU it was last seen on and the CPU the mapping
 * pinned it to (-1: none). Nothing when the table is off or the thread has
 * no descriptor. No system call, no lock. */
void sstm__map_stt_cpu(int seen, int pinned);

#endif /* SSTM_IFACE_MAP_SERVICES_H */
