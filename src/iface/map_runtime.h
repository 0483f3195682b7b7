/* SPDX-License-Identifier: MIT */
/* What the thread-mapping subsystem (src/map/runtime.c) offers the engine:
 * its start, end and description, called by core/config.c from
 * sstm_init(), sstm_shutdown() and sstm_describe(). The subsystem reaches
 * the engine through the public API (hooks, descriptors, statistics) and
 * src/iface/map_services.h only, so the two depend on each other one way
 * each, through these two headers.
 */
#ifndef SSTM_IFACE_MAP_RUNTIME_H
#define SSTM_IFACE_MAP_RUNTIME_H

#include <sched.h>
#include <stddef.h>
#include <sys/types.h>

#include <schedstm/config.h>

typedef struct sstm_map_runtime {
  /* Start the strategy of cfg (checked by core/config.c: values in range,
   * map_file set for "file", the sampling hook free for stmap and detect).
   * Called by sstm_init() once the registry exists and before any thread
   * can register. Sets *fn and *period to the sampling hook and period the
   * engine must install (*period 0: none). Returns 0, or SSTM_EINVAL (a
   * topology or matrix file that cannot be loaded), SSTM_ENOMEM, SSTM_ELIMIT
   * (no hook slot left), with the reason in sstm_last_error(); nothing
   * stays started then. */
  int (*init)(const sstm_config_t *cfg, sstm_sample_fn *fn, unsigned *period);
  /* End it: writes cfg.map_dump if set, unpins every thread it pinned
   * that lives on (still where it put it; the caller included), removes
   * the hooks, frees everything. Called by sstm_shutdown() after every
   * thread has unregistered. */
  void (*fini)(void);
  /* Append nothing, or " map=..." (snprintf-style: returns the length it
   * needs; buf NULL: only that). */
  int (*describe)(char *buf, size_t len);
} sstm_map_runtime_t;

extern const sstm_map_runtime_t sstm__map_runtime;

/* Test seam (tests/internal/map_fork.c): when not NULL, the thread that
 * loads the topology in the background (stmap, detect: a cache miss) calls
 * it before it loads anything. A plain pointer read without
 * synchronisation: set it before sstm_init() and clear it after
 * sstm_shutdown(). Never set by the library. */
extern void (*sstm__map_loader_seam)(void);

/* Test seam (tests/internal/map_pin.c): when not NULL, every affinity
 * change of the library (a pin, a fallback to the allowed set, an
 * un-pinning, the shutdown's) calls it first, under the subsystem's lock,
 * with the thread's id and the CPU set it is about to get. It returns 0
 * to let the call be made, or an errno value (EINVAL, EPERM, ESRCH) that
 * the call then fails with without being made: a kernel refusal that a
 * seccomp filter cannot produce for one mask and not another. Same rules
 * as sstm__map_loader_seam: set before sstm_init(), cleared after
 * sstm_shutdown(), never set by the library. */
extern int (*sstm__map_affinity_seam)(pid_t tid, const cpu_set_t *set);

#endif /* SSTM_IFACE_MAP_RUNTIME_H */
