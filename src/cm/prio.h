/* SPDX-License-Identifier: MIT */
/* The priority-ordered policies' shared mechanism (cm/prio.c): os_prio.c
 * and timestamp.c order the two parties of a conflict, prio.c acts on the
 * order and bounds the retries (the livelock argument is in prio.c). */
#ifndef SSTM_CM_PRIO_H
#define SSTM_CM_PRIO_H

#include "cm/common.h"

/* Policy counters of both: P_KILLS counts decisions to abort the other
 * party; the engine's cm_kills (sstm_stats_t) counts the kills that took
 * effect (a party that was already committing, or whose attempt had ended,
 * is waited for instead). P_PRIO_CHANGES is os_prio's own. */
enum { P_KILLS, P_SELF_ABORTS, P_PRIO_CHANGES, P_ESCALATIONS };

/* order > 0: the caller wins (the other party is aborted); < 0: it aborts
 * itself; 0: the lower slot wins. A committing party is waited for. */
sstm_cm_action_t sstm__prio_decide(sstm_cm_ctx_t *ctx, const sstm_conflict_t *c, uint64_t *wait_ns,
                                   int order);
/* 1 if mine is older (smaller) than theirs, -1 if younger, 0 if equal. */
static inline int sstm__prio_older(uint64_t mine, uint64_t theirs) {
  return mine < theirs ? 1 : mine > theirs ? -1 : 0;
}
/* init: reads SCHEDSTM_PRIO_ESCALATE. on_abort: escalates after that many
 * lost conflicts. */
int sstm__prio_init(const sstm_config_t *cfg);
void sstm__prio_abort(sstm_cm_ctx_t *ctx, const sstm_abort_info_t *info);

#endif /* SSTM_CM_PRIO_H */
