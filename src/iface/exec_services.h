/* SPDX-License-Identifier: MIT */
/* The engine's services to an executor (src/exec): mechanism only, no
 * policy. Implemented by src/core/exec.c; the protocol is argument (9) of
 * docs/design/core.md.
 *
 * An executor runs transactions on user-level contexts and switches a
 * running transaction out for a more urgent one without aborting it
 * ([Silvestri17]); the paused transaction's descriptor is detached (or
 * marked paused) and attached again on whichever worker resumes it. What
 * the engine offers for that:
 *
 *  (a) Polled preemption. sstm__exec_request() sets a flag in the
 *      descriptor's variant byte, which every barrier already dispatches
 *      on: the next transactional access (and an update commit, and the
 *      point between a rolled-back attempt and its retry) takes the slow
 *      path and calls the executor's hook, when the attempt may be
 *      switched out there. The fast paths are unchanged (the flag fails the
 *      tests they already make), in the manner of Concord's polled
 *      preemption points [Iyer23].
 *  (b) Where preemption may not happen: a per-descriptor non-preemptible
 *      depth (user-marked regions; irrevocable attempts and the engine's
 *      own code are never preempted), with a request that arrives meanwhile
 *      kept standing and replayed when the depth returns to zero; and an
 *      async-signal-safe test, for a signal handler, of whether the
 *      calling thread's transaction may be switched out at the interrupted
 *      instruction.
 *  (c) Paused transactions. A descriptor detached inside a transaction, or
 *      marked paused here, is paused: a conflict with it is decided against
 *      it whatever the contention manager (it is killed and its locks are
 *      taken over, (9)), or, under SSTM_EXEC_PAUSED_WAIT_HIGHER, a
 *      lower-priority transaction gives its worker up to the executor
 *      instead. The priority compared is the one the transaction carries
 *      (sstm_attr_t.priority, changed here by the executor's promotions).
 *
 * src/exec is compiled with include/, src/iface/, src/os/ and src/arch/ on
 * its include path, not src/core/: it reaches the engine through the
 * public headers and this one. Nothing here takes a lock or makes a system
 * call unless said.
 */
#ifndef SSTM_IFACE_EXEC_SERVICES_H
#define SSTM_IFACE_EXEC_SERVICES_H

#include <stdbool.h>
#include <stdint.h>

#include <schedstm/schedstm.h>

/* ---- (a) polled preemption ---- */

/* Where the hook is called from. At each of them the attempt holds no
 * engine-internal state across the call (no mutex, no allocation in
 * progress, not committing), so its descriptor may be detached and
 * attached on another thread before the hook returns. */
typedef enum sstm_exec_point {
  SSTM_EXEC_AT_BARRIER = 1,    /* a transactional load or store, before the access */
  SSTM_EXEC_AT_COMMIT = 2,     /* an update commit, before it begins to commit */
  SSTM_EXEC_AT_RESTART = 3,    /* an attempt rolled back, the retry not begun: holds nothing */
  SSTM_EXEC_AT_BLOCKED = 4,    /* blocked by a paused higher-priority attempt (`blocker`),
                                  under SSTM_EXEC_PAUSED_WAIT_HIGHER */
  SSTM_EXEC_AT_REGION_END = 5, /* sstm__exec_nopreempt_leave() replays a standing request */
} sstm_exec_point_t;

/* The executor's preemption hook, called on the thread that runs `self`'s
 * transaction, with `self` attached to it. It may detach `self`
 * (sstm_desc_detach), switch to another user-level context, and return
 * later on another thread, which must then have `self` attached again (the
 * engine checks, and ends the process with a message if not): the access
 * or commit then goes on. Returning at once is fine too (the request is
 * consumed). `blocker` is the paused attempt's descriptor at
 * SSTM_EXEC_AT_BLOCKED, NULL elsewhere. The hook must not begin a
 * transaction on `self`, and runs with the request flag cleared. */
typedef void (*sstm_exec_hook_t)(sstm_desc_t *self, sstm_exec_point_t where, sstm_desc_t *blocker);

/* Register the hook (one per process; NULL unregisters). Call it while no
 * transaction can reach a preemption point (before the executor's workers
 * start, after they stop). Errors: SSTM_EBUSY (another hook is registered;
 * unregister it first). */
int sstm__exec_set_hook(sstm_exec_hook_t fn);

/* Ask d's running attempt to call the hook at its next preemption point.
 * Async-signal-safe, callable from any thread, lock-free (one atomic OR);
 * d must exist (never destroyed while the executor may call this). A
 * request is seen if it is made while an attempt of d runs (between its
 * begin and the start of its commit or rollback); one made between
 * attempts may be dropped (the executor's worker looks at its queue when a
 * transaction ends anyway). release: the executor's writes before the call
 * (the queue entry of the urgent request) are visible to the hook. */
void sstm__exec_request(sstm_desc_t *d);

/* Drop d's pending request, flag and standing one. For the thread d runs
 * on, or while d is detached (an executor that has just switched away
 * anyway). Async-signal-safe. */
void sstm__exec_cancel(sstm_desc_t *d);

/* Whether d has a request pending: flagged, or standing behind a
 * non-preemptible region. Relaxed, any thread. */
bool sstm__exec_pending(const sstm_desc_t *d);

/* ---- (b) where preemption may not happen ---- */

/* Enter / leave a non-preemptible region on the calling thread's
 * descriptor (they nest; no-ops without a descriptor). Leaving the
 * outermost region with a request standing, or flagged (one that came
 * after the region's last polled point), calls the hook there
 * (SSTM_EXEC_AT_REGION_END) if the transaction may be switched out, else
 * the request stays standing. Async-signal-safe (enter and the depth's
 * update in leave; the replay itself runs the hook, which is the
 * executor's). Errors of leave: SSTM_ESTATE (no region open, or no
 * descriptor), nothing changed. */
void sstm__exec_nopreempt_enter(void);
int sstm__exec_nopreempt_leave(void);
/* Close every region of the calling thread's descriptor and drop a
 * request standing for them: at the start of a request, so that a region
 * its context's previous request left open (a body or callback that
 * returned inside one) does not keep this one from being preempted. An
 * abort closes the attempt's regions itself (txn.c, sstm__abort_tx). */
void sstm__exec_nopreempt_clear(void);

/* For a signal handler on the calling thread: may its transaction be
 * switched out at the interrupted instruction `pc`? True only inside a
 * running attempt (not committing, not irrevocable, not killed), outside
 * every non-preemptible region and every engine callback (policy, hooks,
 * actions), and with `pc` outside the engine's code (which is
 * non-preemptible by construction: it may hold a lock word it is about to
 * release, or be in the C library's allocator). A false answer for a
 * transaction that has a running attempt also sets the request flag
 * (sstm__exec_request), so that the polled points pick the preemption up
 * at the next barrier: the STANDING_TICK of [Silvestri17], replayed without
 * a wrapper. Async-signal-safe; reads the calling thread's descriptor
 * only. */
bool sstm__exec_preemptible_now(uintptr_t pc);

/* Whether pc lies in the code of the engine's library: the executable
 * segment of the shared object (or, linked statically, of the program)
 * that holds the engine, found at sstm__exec_set_hook. Linked statically,
 * that segment holds the whole program, so every pc is "in the engine" and
 * signal-driven preemption never switches at once (the polled points then
 * carry every request). Async-signal-safe. False before a hook is set. */
bool sstm__exec_pc_in_engine(uintptr_t pc);

/* ---- (c) paused transactions and priorities ---- */

/* Mark d paused (true) or running (false). A descriptor detached inside a
 * transaction is paused without a mark; the mark is for an executor that
 * switches a transaction out with its descriptor still attached. Mark from
 * the thread d runs on, before switching away (release: a reaper then sees
 * the attempt's logs); unmark before the transaction runs again: unmarking
 * waits while another thread takes the attempt's locks over (a few
 * microseconds, spinning then yielding). Errors: SSTM_EINVAL (d NULL). */
int sstm__exec_mark_paused(sstm_desc_t *d, bool paused);

/* Whether d's transaction is paused (detached inside a transaction, or
 * marked). Relaxed, any thread. */
bool sstm__exec_is_paused(const sstm_desc_t *d);

/* Whether d's attempt holds write locks now (encounter-time locking: it
 * has written; commit-time locking: only inside its commit). From the
 * thread d runs on, or while d is detached by the thread that detached it
 * (the lock set is the owner's; a take-over leaves its count alone). */
bool sstm__exec_holds_locks(const sstm_desc_t *d);

/* Whether d's thread waits inside sstm_party_wait between two attempts (a
 * policy's wait for another transaction's end, after d's attempt rolled
 * back: it holds no lock and runs no attempt). From any thread: a relaxed
 * hint, true from just before the wait to just after it. */
bool sstm__exec_in_cm_wait(const sstm_desc_t *d);

/* Ask d's thread to end such a wait: true if it was waiting (it then
 * leaves at its next look, or when a signal interrupts its sleep: send one
 * after this), false if it was not (nothing is left behind). From any
 * thread. */
bool sstm__exec_end_cm_wait(sstm_desc_t *d);

/* The priority d's transaction carries (sstm_attr_t.priority; what
 * policies and the paused-conflict rule compare), and the executor's change
 * of it (dynamic promotion, [Silvestri17] Section III-C). Set it for the
 * transaction that runs or is paused on d, from the thread d runs on or
 * while d is detached; it holds until the transaction ends (the next one
 * starts with its own attribute's). */
void sstm__exec_set_priority(sstm_desc_t *d, int priority);
int sstm__exec_priority(const sstm_desc_t *d);

/* How a conflict with a paused attempt is decided (process-wide, default
 * TAKEOVER). Whatever the rule, it never depends on the contention
 * manager: the paused attempt cannot make progress until a worker resumes
 * it, and every worker may be retrying against it (the livelock of (9)). */
typedef enum sstm_exec_paused_rule {
  /* Kill the paused attempt and take all its locks over (9.2-9.4); it rolls
   * back when it is resumed. */
  SSTM_EXEC_PAUSED_TAKEOVER = 0,
  /* If the paused attempt carries a higher priority than the one that
   * meets its lock, and the latter may be switched out there, call the
   * hook (SSTM_EXEC_AT_BLOCKED, blocker = the paused one) so that the
   * executor can give this worker to the paused transaction; when the hook
   * returns, the conflict is looked at again. Otherwise (equal or lower
   * priority, no hook, not preemptible) as TAKEOVER. */
  SSTM_EXEC_PAUSED_WAIT_HIGHER = 1,
  /* Whatever the priorities, if the attempt that meets the paused one's
   * lock may be switched out there, call the hook once per conflict
   * (SSTM_EXEC_AT_BLOCKED, blocker = the paused one): the executor decides
   * whether to give this worker to the paused transaction (and returns
   * when this one is resumed) or not (it returns at once). If the holder
   * is still paused when the hook returns, as TAKEOVER: so a transaction
   * waits for a paused one at most once per conflict, for as long as the
   * executor keeps it switched out. */
  SSTM_EXEC_PAUSED_ASK = 2,
} sstm_exec_paused_rule_t;

/* Errors: SSTM_EINVAL (not a rule above). */
int sstm__exec_set_paused_rule(sstm_exec_paused_rule_t rule);

/* ---- (d) the state table's executor area ---- */

/* The executor area of the state table (schedstm/statetab.h, version 6)
 * for one executor at a time: NULL when no table is published or another
 * executor holds it. The holder fills and updates it (the protocol is the
 * header's) and gives it back with sstm__exec_stt_release before
 * sstm_shutdown, which unmaps the table. */
struct sstm_stt_exec;
struct sstm_stt_exec *sstm__exec_stt_claim(void);
void sstm__exec_stt_release(struct sstm_stt_exec *area);

/* ---- (e) a transaction left behind ---- */

/* End the calling thread's transaction whose restart point is gone: a
 * request's body detached the context's descriptor inside its transaction
 * and returned, sstm_run() returned SSTM_ENOTHREAD, and the executor has
 * attached the descriptor again. Ended as at a thread's end inside a
 * transaction (thread.h): cancelled (rolled back, its abort actions and
 * the policy's on_abort run, counted as SSTM_ABORT_USER_CANCEL), or
 * committed if it asked to be irrevocable; never a jump to its checkpoint.
 * Returns 0, or SSTM_ENOTX when the thread has no transaction to end (or
 * calls from a callback of it). */
int sstm__exec_end_left_tx(void);

#endif /* SSTM_IFACE_EXEC_SERVICES_H */
