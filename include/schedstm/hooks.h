/* SPDX-License-Identifier: MIT */
/** @file
 * Global hooks on thread and transaction events.
 *
 * Hooks are for tools (tracing, profiling, the scheduling policies of later
 * layers). They run on the thread concerned, synchronously:
 * - thread_init / thread_exit: when a thread registers / unregisters;
 * - tx_begin: when an attempt starts (after its snapshot is taken);
 * - tx_commit: after a commit, locks released, before the transaction's
 *   sstm_on_commit actions;
 * - tx_abort: after rollback, before the contention manager's on_abort.
 *
 * With several hook sets registered, each event calls them one after
 * the other in an order that is not specified (not necessarily that of
 * registration). A hook must not start a transaction: SSTM_ATOMIC_BEGIN
 * there goes to the misuse handler (and, if it returns, the block runs
 * outside any transaction, or flat-nested in the one the hook runs for),
 * and sstm_run() returns SSTM_ESTATE; nor restart, cancel or commit one
 * (sstm_restart, sstm_cancel: misuse; sstm_commit: misuse, SSTM_ESTATE). sstm_malloc() and
 * sstm_free() in a hook act as outside a transaction, even in tx_begin (<schedstm/alloc.h>). With
 * no hook registered the engine pays one predictable branch per event, and transactions pay only
 * that while the sets registered have thread events alone (which events a set has is read when it
 * is registered: set its members before sstm_hooks_add()).
 */
#ifndef SCHEDSTM_HOOKS_H
#define SCHEDSTM_HOOKS_H

#include <schedstm/common.h>
#include <schedstm/stats.h>

SSTM_EXTERN_C_BEGIN

/** A set of hooks (sstm_hooks_add()). Each is called with the arg registered
 * with the set, on the thread concerned; any member may be NULL. */
typedef struct sstm_hooks {
  /** The calling thread has registered (sstm_thread_init(); its descriptor
   * is attached). Not called when a descriptor of sstm_desc_create() is
   * attached. */
  void (*thread_init)(void *arg);
  /** The calling thread unregisters (sstm_thread_exit(), or its end with its
   * own descriptor attached), before its descriptor is released. */
  void (*thread_exit)(void *arg);
  /** An attempt starts (after its snapshot is taken); txid is the
   * attempt's id (sstm_txid()). */
  void (*tx_begin)(void *arg, uint64_t txid);
  /** After a commit, locks released, before the transaction's
   * sstm_on_commit() actions. */
  void (*tx_commit)(void *arg, uint64_t txid);
  /** After rollback, before the contention manager's on_abort; reason says
   * why the attempt ended. */
  void (*tx_abort)(void *arg, uint64_t txid, sstm_abort_reason_t reason);
} sstm_hooks_t;

/** Most hook sets registered at once (sstm_hooks_add()). */
#define SSTM_MAX_HOOKS 8

/** Register hooks (any member may be NULL), called with arg. May be called
 * at any time, from any thread (registered or not) and from a hook, also
 * while other threads run transactions; it may block briefly on the
 * library's registry mutex. An event that happens at the same time on
 * another thread may or may not call the new hooks; every event ordered
 * after the return (on this thread, or on a thread that synchronised with
 * it since) does. A hook is always called with the arg registered with it.
 * Returns a handle >= 0, or SSTM_EINVAL (hooks NULL), SSTM_ELIMIT
 * (SSTM_MAX_HOOKS are registered). Removal does not wait for events in
 * progress on other threads: such an event may still read the table and
 * call its hooks with arg after sstm_hooks_remove() has returned (a call
 * may even start then). The table and arg must therefore stay valid until
 * sstm_shutdown(), which removes every hook (static storage is simplest).
 * @param hooks the hook table (not copied: it must stay valid, see above)
 * @param arg passed to every hook of the table
 * @return a handle >= 0 for sstm_hooks_remove(), SSTM_EINVAL or SSTM_ELIMIT */
SSTM_API int sstm_hooks_add(const sstm_hooks_t *hooks, void *arg);

/** Remove hooks by handle, at any time, as sstm_hooks_add. No event ordered
 * after the return calls them; an event that another thread was running
 * at the same time may still read the table and call them (and start the
 * call) after it returns: see sstm_hooks_add for how long the table and arg
 * must live. SSTM_EINVAL if the handle is not registered.
 * @param handle what sstm_hooks_add() returned
 * @return 0, or SSTM_EINVAL */
SSTM_API int sstm_hooks_remove(int handle);

SSTM_EXTERN_C_END

#endif /* SCHEDSTM_HOOKS_H */
