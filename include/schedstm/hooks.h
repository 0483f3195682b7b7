/* schedstm: global hooks on thread and transaction events.
 *
 * Hooks are for tools (tracing, profiling, the scheduling policies of later
 * layers). They run on the thread concerned, synchronously:
 *   thread_init / thread_exit: when a thread registers / unregisters;
 *   tx_begin: when an attempt starts (after its snapshot is taken);
 *   tx_commit: after a commit, locks released, before the transaction's
 *     sstm_on_commit actions;
 *   tx_abort: after rollback, before the contention manager's on_abort.
 * A hook must not start a transaction. With no hook registered the engine
 * pays one predictable branch per event.
 */
#ifndef SCHEDSTM_HOOKS_H
#define SCHEDSTM_HOOKS_H

#include <schedstm/common.h>
#include <schedstm/stats.h>

SSTM_EXTERN_C_BEGIN

typedef struct sstm_hooks {
  void (*thread_init)(void *arg);
  void (*thread_exit)(void *arg);
  void (*tx_begin)(void *arg, uint64_t txid);
  void (*tx_commit)(void *arg, uint64_t txid);
  void (*tx_abort)(void *arg, uint64_t txid, sstm_abort_reason_t reason);
} sstm_hooks_t;

#define SSTM_MAX_HOOKS 8

/* Register hooks (any member may be NULL). Call while no transaction runs
 * (typically right after sstm_init). Returns a handle >= 0, or SSTM_EINVAL,
 * SSTM_ELIMIT. The table must stay valid until removed; a successful
 * sstm_shutdown removes every hook. */
SSTM_API int sstm_hooks_add(const sstm_hooks_t *hooks, void *arg);

/* Remove hooks by handle. Call while no transaction runs. SSTM_EINVAL if the
 * handle is not registered. */
SSTM_API int sstm_hooks_remove(int handle);

SSTM_EXTERN_C_END

#endif /* SCHEDSTM_HOOKS_H */
