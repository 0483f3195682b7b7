/* SPDX-License-Identifier: MIT */
/** @file
 * Threads, transaction descriptors and remote abort.
 *
 * All per-transaction state lives in a descriptor (sstm_desc_t). A thread
 * that registers gets a descriptor and becomes its current one;
 * thread-local storage holds only the pointer to the current descriptor
 * (twice: also as the inline fast path's prefix) and the thread's last
 * error message (sstm_last_error), no transaction state. A descriptor can
 * be detached from one thread (with its transaction still running, i.e.
 * suspended) and attached to another thread later; reclamation and the
 * irrevocability protocol treat a detached, active transaction as running.
 *
 * Threads join and leave at any time; registration takes a short mutex that
 * running transactions never take (other registrations, hooks changes,
 * statistics retrieval and shutdown take it too).
 */
#ifndef SCHEDSTM_THREAD_H
#define SCHEDSTM_THREAD_H

#include <schedstm/common.h>

SSTM_EXTERN_C_BEGIN

/** A transaction descriptor: all per-transaction state (opaque). A
 * registered thread has its own; sstm_desc_create() makes others. */
typedef struct sstm_desc sstm_desc_t;

/** Register the calling thread and attach a fresh descriptor to it. Must be
 * called before the thread's first transaction. Idempotent: a thread that is
 * already registered gets 0, and so does one that has a descriptor of
 * sstm_desc_create() attached (it is then not registered: it runs on that
 * descriptor until it detaches it). Errors: SSTM_ESTATE (library not initialised),
 * SSTM_ELIMIT (max_threads descriptors exist), SSTM_ENOMEM.
 * A thread that ends with its own descriptor attached is unregistered as if
 * it had called sstm_thread_exit() (a thread-specific-data destructor), so
 * its slot is not lost. If it ends inside a transaction (pthread_exit in an
 * atomic block), that transaction is ended first: a revocable one is
 * cancelled (rolled back; its abort actions and the policy run, and it is
 * counted as SSTM_ABORT_USER_CANCEL), and so is one that a policy made
 * irrevocable (its undo log puts its in-place writes back); one that asked
 * for irrevocability (attr.irrevocable or sstm_become_irrevocable), which
 * may have done what cannot be undone and holds back every other
 * transaction, is committed. A descriptor of sstm_desc_create() attached at
 * the end is only detached: it remains its creator's. Its transaction, if
 * any, stays suspended when it began on another stack (a user-level context
 * that outlives the thread); one that began on the ending thread's own
 * stack, where its restart checkpoint is, is ended first as above. A thread
 * that ends inside an action, hook or policy callback leaves its descriptor
 * attached for good: sstm_shutdown() then fails with SSTM_EBUSY.
 * @return 0, SSTM_ESTATE, SSTM_ELIMIT or SSTM_ENOMEM
 */
SSTM_API int sstm_thread_init(void);

/** Unregister the calling thread and release its descriptor (its statistics
 * are folded into the process totals; its deferred frees are handed to the
 * process-wide reclaimer). If the current descriptor is one of
 * sstm_desc_create(), it is only detached: it remains its creator's. Errors: SSTM_ENOTHREAD (not
 * registered), SSTM_EBUSY (a transaction is active on the current descriptor, or the call comes
 * from code running on its behalf: an sstm_on_commit/on_abort action, a hook, or the policy).
 * @return 0, SSTM_ENOTHREAD or SSTM_EBUSY */
SSTM_API int sstm_thread_exit(void);

/** The calling thread's current descriptor, or NULL if none is attached.
 * @return the descriptor, or NULL */
SSTM_API sstm_desc_t *sstm_self(void);

/** Detach the current descriptor from the calling thread and return it. Its
 * transaction, if any, stays active (suspended): it keeps its snapshot, it
 * is counted as running by reclamation, and it can be aborted remotely. It
 * keeps its locks until another transaction meets one of them: that
 * conflict is decided against the suspended one whatever the contention
 * manager (it is aborted and all its locks are taken over at once), since
 * nothing ends it until some thread attaches it again; it then rolls back
 * at its next access or commit and restarts (docs/design/core.md, (9)).
 * Must not be called from inside a transactional access. Returns
 * NULL (with sstm_last_error set) if no descriptor is attached, or when
 * called from an action, hook, policy or sampling callback running for the
 * descriptor's transaction (within its attempt or around it).
 * A suspended transaction must go on in the stack (user-level context) it
 * began on, whichever thread attaches it: its restart checkpoint returns to
 * the frame of its begin. Do not suspend an irrevocable transaction: new
 * transactions of every thread wait at begin until it ends. The policy's
 * on_detach runs first, on the calling thread (per-thread OS state such as
 * ext's slice is put back).
 * @return the detached descriptor, for sstm_desc_attach(); NULL as above */
SSTM_API sstm_desc_t *sstm_desc_detach(void);

/** Attach d to the calling thread, which must have no descriptor attached.
 * The policy's on_attach then runs on the calling thread. A previous
 * thread's writes to d (it detached it) are visible here.
 * Errors, checked in this order: SSTM_EINVAL (d NULL or destroyed),
 * SSTM_EBUSY (the calling thread already has a descriptor, d included),
 * SSTM_EINVAL (d attached to another thread).
 * @param d a detached descriptor (sstm_desc_detach(), sstm_desc_create())
 * @return 0, SSTM_EINVAL or SSTM_EBUSY */
SSTM_API int sstm_desc_attach(sstm_desc_t *d);

/** Create a descriptor not attached to any thread (for executors that run
 * many transactions on a pool of worker threads); sstm_desc_destroy()
 * destroys it.
 * Errors: SSTM_EINVAL (out NULL), SSTM_EBUSY (called inside a
 * transaction: an abort does not undo a creation, so each attempt would
 * leave a descriptor behind), SSTM_ESTATE (library not initialised, or
 * shut down), SSTM_ELIMIT (max_threads descriptors exist), SSTM_ENOMEM.
 * @param[out] out receives the new descriptor
 * @return 0, SSTM_EINVAL, SSTM_EBUSY, SSTM_ESTATE, SSTM_ELIMIT or SSTM_ENOMEM */
SSTM_API int sstm_desc_create(sstm_desc_t **out);
/** Destroy a descriptor of sstm_desc_create() (must be detached and have no
 * active transaction).
 * Errors: SSTM_EINVAL (d NULL or already
 * destroyed), SSTM_EBUSY (attached, or with an active transaction, or
 * called inside a transaction: an abort does not undo a destruction, and
 * the next attempt would destroy the stale handle again).
 * A destroyed handle is like a freed pointer: the next sstm_desc_create or
 * sstm_thread_init may return the same descriptor, and a call with the old
 * handle then acts on the new owner's (the checks above catch a stale
 * handle only until then).
 * @param d the descriptor
 * @return 0, SSTM_EINVAL or SSTM_EBUSY */
SSTM_API int sstm_desc_destroy(sstm_desc_t *d);

/** @name Identity of a descriptor
 * @{ */
/** Identity of a descriptor: a small slot index (stable while it exists), the
 * OS thread id of the thread that last attached it, and the identity of its
 * current (or last) transaction attempt. Transaction ids grow by one with
 * every attempt, restarts included, and are unique in the process while it
 * is initialised: each descriptor's ids start at a base of its own (its slot
 * times 2^40), so two descriptors never show the same id unless one of them
 * has run 2^40 attempts more than the other. Each is a relaxed read,
 * callable from any thread while d exists; d NULL gives 0.
 * @param d the descriptor
 * @return the slot, thread id or attempt id; 0 for a NULL d */
SSTM_API unsigned sstm_desc_slot(const sstm_desc_t *d);
SSTM_API int sstm_desc_tid(const sstm_desc_t *d);
SSTM_API uint64_t sstm_desc_txid(const sstm_desc_t *d);
/** @} */

/** Ask that d's transaction abort. txid selects the attempt to kill (0: the
 * current one, whatever it is). Returns 0 when the request took effect: the
 * attempt can no longer commit (one exception: a read-only attempt already
 * in its commit, past its last check, completes; it wrote nothing and its
 * snapshot was consistent, so only its on_commit actions tell); it rolls
 * back at its next barrier,
 * validation or commit, and the write locks it holds may be taken over by
 * any other transaction at once (they protect unmodified memory), so a
 * killed transaction that is descheduled blocks nobody. Called on a
 * registered thread, the caller's descriptor (its current or last attempt)
 * is reported to the victim's policy as the party that killed it (cm.h).
 * Errors: SSTM_ENOTX (no such active attempt), SSTM_EBUSY (the attempt is
 * committing or irrevocable and cannot be aborted), SSTM_EINVAL (d NULL).
 * Lock-free; never blocks.
 * @param d the victim's descriptor
 * @param txid the attempt to kill (sstm_desc_txid(), sstm_party_t::txid), 0 for the current one
 * @return 0, SSTM_ENOTX, SSTM_EBUSY or SSTM_EINVAL */
SSTM_API int sstm_desc_kill(sstm_desc_t *d, uint64_t txid);

SSTM_EXTERN_C_END

#endif /* SCHEDSTM_THREAD_H */
