/* SPDX-License-Identifier: MIT */
/* What the engine offers the built-in contention managers beyond the public
 * policy interface (include/schedstm/cm.h): the facts a policy needs about
 * descriptors and attempts, and the few engine facilities it may use.
 * Implemented by src/core/cm_services.c.
 *
 * src/cm/ is compiled with include/, src/iface/ and the OS layer (os/...)
 * on its include path, not src/core/ (src/CMakeLists.txt): a policy
 * reaches the engine through cm.h and this header only; the OS facilities
 * (os/os.h, os/sched.h) it may use directly. Everything here is
 * callable from any policy hook, on the thread that runs the hook; none of
 * it takes a lock or makes a system call unless said.
 */
#ifndef SSTM_IFACE_CM_SERVICES_H
#define SSTM_IFACE_CM_SERVICES_H

#include <stdbool.h>
#include <stdint.h>

#include <schedstm/schedstm.h>

#include "iface/error.h" /* sstm__set_error, SSTM_QUOTE */
#include "os/os.h"       /* clocks, thread ids: the layer below, usable by the policies */
#include "os/sched.h"    /* the scheduling facilities, and the knobs' types */

/* ---- the selected policy ---- */

/* The policy sstm_init() selected, from the moment it calls that policy's
 * init hook (sstm_cm_current() is NULL until sstm_init() returns) until
 * the next sstm_init(); NULL before the first. A policy that is a part of
 * another (a "P+ext" base, adaptive's sub-policies) is not the selected
 * one: the composite is. */
const sstm_cm_ops_t *sstm__cm_selected(void);

/* ---- counter snapshots (adaptive's evaluator) ---- */

/* One descriptor's engine counters (sstm_stats_t's, since it was
 * registered or the statistics were last reset) and the thread it runs on,
 * read with relaxed loads while its owner keeps counting: each value is
 * whole, not a consistent cut across them. */
typedef struct sstm_cm_counts {
  uint64_t commits; /* read-only commits + `updates` */
  uint64_t updates; /* update commits */
  uint64_t aborts;  /* aborts, every reason */
  int tid;          /* thread last attached, 0 once released */
  bool attached;    /* attached to a thread now */
} sstm_cm_counts_t;

/* Slots that may hold a descriptor: [0, sstm__cm_slots()); it only grows
 * while the library is initialised, up to cfg.max_threads. */
unsigned sstm__cm_slots(void);
/* The counters of the descriptor in `slot`; false if the slot has none
 * yet. Descriptors are never freed while the library is initialised. */
bool sstm__cm_counts(unsigned slot, sstm_cm_counts_t *out);

/* ---- the read set of the attempt that just ended ---- */

/* From on_abort: the first stripes (opaque lock-table addresses, equal
 * for equal stripes) that the attempt ctx->txid read, in the order it read
 * them, at most `max` of them into path[], their number in *n. False when
 * the read set is no longer that attempt's: the user's abort actions run
 * before the policy and may have run transactions on the descriptor. A
 * declared read-only attempt without a read set has none (*n = 0). */
bool sstm__cm_prev_reads(const sstm_cm_ctx_t *ctx, const void **path, uint32_t max, uint32_t *n);

/* ---- an admission hook switched at run time ---- */

/* Switch an admission hook on (fn) or off (NULL) for ctx's descriptor,
 * from a hook of that descriptor on its thread, or from desc_init
 * (owner-only). The engine calls fn at the start of each of the
 * descriptor's attempts, first attempts and restarts alike, with the
 * context the policy's hooks get, until it is switched off (fn may switch
 * itself off). It runs before anything of the attempt is published: the
 * previous attempt has ended (and its commit actions, or the rollback,
 * abort actions and on_abort, have run), the thread holds no lock and its
 * status is not ACTIVE, so fn may sleep (an admission gate, cm/admit.c).
 * It must not start a transaction (a misuse, as in any hook). While it is
 * off, and nothing else needs the slow begin (sampling, on_begin, the state
 * table, ...), a begin takes the engine's frameless path and costs nothing
 * more than under a policy without one. Every descriptor starts with none
 * (desc_init may switch one on). No lock, no system call. */
void sstm__cm_admit_hook(sstm_cm_ctx_t *ctx, void (*fn)(sstm_cm_ctx_t *ctx));
/* Whether d has one switched on now (tests). Owner-only. */
bool sstm__cm_admit_hook_on(const sstm_desc_t *d);

/* ---- OS priority generation ---- */

/* A number that changes whenever d's thread's OS priority may have changed
 * without the policy seeing it: sstm_sched_set() on that thread, or d
 * attached to another thread. A policy that caches a thread's OS priority
 * (os_prio) recomputes it when this moves. Relaxed: the cache itself
 * orders the value it computed with the generation it saw. */
uint32_t sstm__cm_prio_gen(sstm_desc_t *d);

/* ---- notes for the state table (sstm-top) ---- */

/* Show act as what the policy does on ctx's thread, without counting it in
 * sstm_stats_t.cm_actions (sstm_cm_note counts): the end of an instant
 * action such as a kill. Nothing when the table is off. */
void sstm__cm_stt_action(sstm_cm_ctx_t *ctx, sstm_cm_act_t act);
/* Show the OS scheduling policy and nice of d's thread, as the policy has
 * just read them (os_prio). Nothing when the table is off. */
void sstm__cm_stt_prio(sstm_desc_t *d, int policy, int nice);
/* Show them as the kernel has them now, after the policy changed them
 * (softser): one system call, none when the table is off. */
void sstm__cm_stt_prio_refresh(sstm_desc_t *d);

/* ---- typed knobs ----
 * The policies' knobs: fields of the configuration that sstm_init() is
 * applying (sstm_config_t: softser_lever, ext_mode, ext_slice_us,
 * prio_escalate), set by the program or from the SCHEDSTM_* variables,
 * read and checked by core/config.c before any policy initialises (a bad
 * value fails sstm_init with SSTM_EINVAL, whichever policy is selected).
 * For the policies' init hooks; each returns 0. The documentation of each
 * knob is with the policy that owns it (cm/softser.c, cm/ext.c,
 * cm/prio.c), in schedstm/config.h and in README.md's table. */

/* cfg.softser_lever (SCHEDSTM_SOFTSER_LEVER): *probe true for
 * SSTM_SOFTSER_LEVER_AUTO, else *lever is the one forced. */
int sstm__cm_knob_softser_lever(sstm_lever_t *lever, bool *probe);
/* cfg.ext_mode (SCHEDSTM_EXT_MODE: auto | none | slice) and
 * cfg.ext_slice_us (SCHEDSTM_EXT_SLICE_US, SSTM_EXT_SLICE_US_MIN..MAX,
 * default SSTM_EXT_SLICE_US_DEFAULT). */
int sstm__cm_knob_ext(sstm_ext_force_t *force, uint64_t *slice_us);
/* cfg.prio_escalate (SCHEDSTM_PRIO_ESCALATE, 0..SSTM_PRIO_ESCALATE_MAX,
 * default SSTM_PRIO_ESCALATE_DEFAULT; 0: never). */
int sstm__cm_knob_prio_escalate(unsigned *after);

/* ---- test seams ---- */

/* softser: d's owner is about to lower its own thread, holding no lock
 * (core/engine.h, SSTM_SEAM_SOFTSER_LOWER; debug builds only, a no-op
 * otherwise). */
void sstm__cm_seam_softser_lower(sstm_desc_t *d);

#endif /* SSTM_IFACE_CM_SERVICES_H */
