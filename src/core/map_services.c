/* SPDX-License-Identifier: MIT */
/* The engine's services to the thread-mapping subsystem
 * (src/iface/map_services.h). */
#include "core/engine.h"
/* after engine.h, whose SSTM_QUOTE it then leaves as it is */
#include "iface/map_services.h"

void sstm__map_stt_cpu(int seen, int pinned) { sstm__stt_cpu(sstm__cur, seen, pinned); }

int sstm__map_stats_window(uint64_t *commits, uint64_t *aborts, uint64_t *resets) {
  return sstm__stats_window(commits, aborts, resets);
}
