/* SPDX-License-Identifier: MIT */
/* The engine's side of the OS facilities: src/os takes plain arguments
 * and knows nothing of descriptors, configuration or error messages
 * (os/os.h); what needs them is here. The public entry points built on
 * the facilities (sstm_spin_ns, sstm_sched_set,
 * sstm_sched_conflict_priority), the choice of the begin fence and the
 * reclaimer's fence that goes with it. */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <string.h>

#include "core/engine.h"
#include "os/os.h"
#include "os/sched.h"

bool sstm__membarrier_init(bool disable) { return !disable && sstm__membarrier_register(); }

void sstm__heavy_fence(void) {
  if (sstm__g.membarrier) {
    if (sstm__membarrier_fence()) return;
    sstm__fatal("membarrier(PRIVATE_EXPEDITED) failed after registration");
  }
  sstm__full_fence();
}

SSTM_API void sstm_spin_ns(uint64_t ns) {
  if (ns < 64) {
    sstm__cpu_relax();
    return;
  }
  uint64_t t0 = sstm__now_ns();
  do {
    for (int i = 0; i < 16; i++)
      sstm__cpu_relax();
  } while (sstm__now_ns() - t0 < ns);
}

SSTM_API int sstm_sched_set(int policy, int prio) {
  switch (policy) {
  case SCHED_OTHER:
  case SCHED_BATCH:
  case SCHED_IDLE:
    if (prio < -20 || prio > 19) goto bad;
    break;
  case SCHED_FIFO:
  case SCHED_RR:
    if (prio < 1 || prio > 99) goto bad;
    break;
  default: goto bad;
  }
  bool rt = policy == SCHED_FIFO || policy == SCHED_RR;
  int nice = 0;
  int err = sstm__sched_set_self(policy, rt ? 0 : prio, rt ? prio : 0, &nice);
  if (err != 0) {
    sstm__set_error("sstm_sched_set: sched_setattr: %s", strerror(err));
    return SSTM_EPERM;
  }
  struct sstm_desc *d = sstm__cur;
  if (d) {
    /* relaxed: a generation the policies compare, no data published. */
    atomic_fetch_add_explicit(&d->os_prio_gen, 1, memory_order_relaxed);
    sstm__stt_prio(d, policy, nice);
  }
  return 0;
bad:
  sstm__set_error("sstm_sched_set: policy %d with priority %d is not valid", policy, prio);
  return SSTM_EINVAL;
}

SSTM_API int sstm_sched_conflict_priority(const sstm_desc_t *d) {
  if (d == NULL) {
    sstm__set_error("sstm_sched_conflict_priority: d is NULL");
    return -1;
  }
  return sstm__conflict_prio_of(sstm_desc_tid(d), NULL, NULL);
}
