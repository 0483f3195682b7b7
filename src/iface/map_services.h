/* SPDX-License-Identifier: MIT */
/* What the engine offers the thread-mapping subsystem (src/map) beyond the
 * public API: error messages, the state table's CPU columns and the
 * statistics' windows.
 * Implemented by src/core/map_services.c. src/map is compiled with
 * include/, src/iface/, src/os/ and src/map/ on its include path, never
 * src/core/ (src/CMakeLists.txt; tests/check_layers.py).
 */
#ifndef SSTM_IFACE_MAP_SERVICES_H
#define SSTM_IFACE_MAP_SERVICES_H

#include <stdint.h>

#include "iface/error.h" /* sstm__set_error, SSTM_QUOTE */

/* Show, in the calling thread's state-table entry (schedstm/statetab.h,
 * cpu and cpu_pinned), the CPU it was last seen on and the CPU the mapping
 * pinned it to (-1: none). Nothing when the table is off or the thread has
 * no descriptor. No system call, no lock. */
void sstm__map_stt_cpu(int seen, int pinned);

/* The process's commits and aborts (sstm_stats_aggregate's) and the
 * number of sstm_stats_reset() calls since sstm_init, read together: the
 * counts are those since the last of those resets. 0, or SSTM_ESTATE
 * when the library is not initialised (nothing written). Takes the
 * registry lock. */
int sstm__map_stats_window(uint64_t *commits, uint64_t *aborts, uint64_t *resets);
#endif /* SSTM_IFACE_MAP_SERVICES_H */
