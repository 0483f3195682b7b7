/* SPDX-License-Identifier: MIT */
/** @file
 * Transactions: begin, commit, restart, cancel, irrevocability, commit and
 * abort actions, the privatization barrier, the misuse handler. The loads
 * and stores inside them are <schedstm/access.h>'s.
 *
 * Two ways to run a block atomically:
 *
 * 1. sstm_run(attr, fn, arg) runs fn(arg) as a transaction, restarting it
 *    until it commits. The hard-to-misuse form: no local variable of the
 *    caller can be clobbered by a restart.
 *
 * 2. SSTM_ATOMIC_BEGIN(attr) ... SSTM_ATOMIC_END() inline in a function:
 *    @code{.c}
 *      SSTM_ATOMIC_BEGIN(NULL)
 *        long a = sstm_load_i64(&acct[i]);
 *        sstm_store_i64(&acct[i], a - 10);
 *      SSTM_ATOMIC_END();
 *    @endcode
 *
 *    A restart returns control to SSTM_ATOMIC_BEGIN as if by longjmp: local
 *    variables of the enclosing function that are modified inside the block
 *    and read after a restart must be volatile (the usual setjmp rule). Do
 *    not return, break or goto out of the block: leave it with
 *    SSTM_ATOMIC_END() (or SSTM_ATOMIC_END_RC(rc), which also says whether
 *    the block committed), sstm_cancel() or sstm_restart().
 *
 * In both forms the body must not leave by longjmp or a C++ exception: the
 * library sees neither, so the transaction stays open on the thread (its
 * locks held, later transactions nested in it, sstm_shutdown refused).
 * Catch inside the body and call sstm_cancel() (or sstm_restart()).
 *
 *    On a thread that is not registered, SSTM_ATOMIC_BEGIN reports the
 *    misuse to the misuse handler (default: message on stderr, then
 *    abort()). If the handler returns, the body runs outside any
 *    transaction: each access in it is reported again (a load gives zero,
 *    a store is dropped) and the commit returns SSTM_ENOTX.
 *    SSTM_ATOMIC_END_RC(rc) then stores SSTM_ENOTHREAD in rc, as sstm_run()
 *    returns (without running the body); SSTM_ATOMIC_END() reports nothing
 *    more.
 *
 * In both forms a restart restores what longjmp restores (the callee-saved
 * registers and the stack) and, like longjmp, not the floating-point
 * environment: the rounding mode and the exception masks (MXCSR, the x87
 * control word) stay as the aborted attempt left them. A body that changes
 * them sets them at its own start, or registers an sstm_on_abort() action
 * that puts them back (abort actions run before the restart).
 *
 * Guarantees: opacity. Every transaction, including one that will abort,
 * observes a consistent snapshot of memory, so it never crashes or loops on
 * values that no serial execution could produce. Committed transactions are
 * serializable in commit-timestamp order; read-only ones at their snapshot.
 *
 * Nesting is flat: an inner begin/commit pair only counts depth; an abort
 * restarts the outermost transaction. An inner begin's attributes are
 * ignored, but for irrevocable: an inner block that asks for it makes the
 * transaction irrevocable, as sstm_become_irrevocable() does (which may
 * restart it from the outermost begin).
 */
#ifndef SCHEDSTM_TX_H
#define SCHEDSTM_TX_H

#include <schedstm/common.h>
#include <schedstm/stats.h>

SSTM_EXTERN_C_BEGIN

/** Transaction attributes, given at begin. A NULL attr means all zero. */
typedef struct sstm_attr {
  bool read_only;   /**< hint: the transaction will not write. Its attempts
                       then keep no read set until one aborts with
                       SSTM_ABORT_RO_EXTEND (unless cfg.ro_log gives the
                       first one a set); a write in an attempt without a read set
                       restarts it as an update transaction (abort reason
                       SSTM_ABORT_RO_WRITE), one in an attempt with a read
                       set goes on as an update. */
  bool irrevocable; /**< start in irrevocable mode (see sstm_become_irrevocable);
                       on a nested begin, make the enclosing transaction
                       irrevocable */
  int priority;     /**< user priority, visible to contention managers */
  uint32_t tag;     /**< user tag (transaction profile), 0..SSTM_MAX_TAGS-1 are
                       counted separately in detailed statistics
                       (SSTM_MAX_TAGS: schedstm/stats.h) */
} sstm_attr_t;

/* ---- the function form ------------------------------------------------ */

/** Run fn(arg) atomically, retrying until it commits or calls sstm_cancel().
 * Blocks only as the contention manager decides (waiting, backoff) and, if
 * an irrevocable transaction is running, until it ends. Returns 0 after
 * commit, SSTM_ECANCELED after sstm_cancel(), SSTM_ENOTHREAD if the thread is
 * not registered, or if fn returned with the descriptor detached
 * (sstm_desc_detach(): its transaction is then suspended, not committed, and
 * goes on once a thread attaches the descriptor), SSTM_EINVAL if fn is NULL.
 * Called inside a transaction, fn runs as a flat-nested part of it (attr is
 * then ignored, but for attr->irrevocable: see the file comment).
 * @param attr the transaction's attributes, NULL for all zero
 * @param fn the body; it may run several times (once per attempt)
 * @param arg passed to fn
 * @return 0, SSTM_ECANCELED, SSTM_ENOTHREAD or SSTM_EINVAL */
SSTM_API SSTM_NOPLT int sstm_run(const sstm_attr_t *attr, void (*fn)(void *arg), void *arg);

/* ---- the inline form ------------------------------------------------- */

/** Opaque register checkpoint used to restart a transaction (large enough
 * for a jmp_buf, which ThreadSanitizer builds use instead). */
typedef struct sstm_ckpt {
  uint64_t regs[26] __attribute__((aligned(16))); /**< opaque: saved by the library */
} sstm_ckpt_t;

#define SSTM__CKPT_START 0
#define SSTM__CKPT_RESTART 1
#define SSTM__CKPT_CANCEL 2

/* Internal: save the callee-saved registers and the stack (as _setjmp:
 * not the floating-point control state, see the file comment); cheaper
 * than sigsetjmp (no signal mask, no system call). Returns
 * SSTM__CKPT_START when saving, the restart code when resumed.
 * ThreadSanitizer must see every non-local jump, so TSan builds (of both the
 * library and its users: they must agree) use the C library's _setjmp. */
#if defined(__SANITIZE_THREAD__) /* gcc */
#define SSTM__TSAN 1
#elif defined(__has_feature) /* clang */
#if __has_feature(thread_sanitizer)
#define SSTM__TSAN 1
#endif
#endif
#if defined(SSTM__TSAN) || defined(SSTM_CKPT_LIBC)
#include <setjmp.h>
/** Defined when the restart checkpoint is the C library's _setjmp: in
 * ThreadSanitizer builds, or when SSTM_CKPT_LIBC is defined (the library
 * and its users must agree). */
#define SSTM_CKPT_USES_LIBC 1
#if defined(__cplusplus) /* expanded in the program: its -Wold-style-cast */
#define sstm__ckpt_save(c) _setjmp(*reinterpret_cast<jmp_buf *>(c))
#else
#define sstm__ckpt_save(c) _setjmp(*(jmp_buf *)(void *)(c))
#endif
#else
SSTM_API SSTM_NOPLT int sstm__ckpt_save(sstm_ckpt_t *c) __attribute__((returns_twice));
/* Internal: sstm__begin and, for the outermost begin, sstm__ckpt_save in
 * one call (one call and one descriptor lookup per transaction instead of
 * two). Returns SSTM__CKPT_START, and the restart code when resumed. */
SSTM_API SSTM_NOPLT int sstm__begin_ckpt(const sstm_attr_t *attr) __attribute__((returns_twice));
#endif
/* Internal: begin (returns the checkpoint to save, or NULL when nested). */
SSTM_API SSTM_NOPLT sstm_ckpt_t *sstm__begin(const sstm_attr_t *attr);
/* Internal, for the compiler ABI's library: the current attempt, if
 * irrevocable, runs code that writes shared memory with plain stores
 * (GCC's uninstrumented path), and its commit is counted as an update. */
SSTM_API void sstm__irrev_plain_writes(void);

/** Open an atomic block (the inline form, see the file comment): the
 * statements up to SSTM_ATOMIC_END() run as one transaction, and a restart
 * returns here as if by longjmp. Blocks as sstm_run() does. On a thread
 * that is not registered: the misuse handler (see the file comment).
 * @param attr `const sstm_attr_t *`, the transaction's attributes, NULL for
 *             all zero */
#if defined(SSTM_CKPT_USES_LIBC)
/* The checkpoint's variable has a name of its own in each block
 * (__COUNTER__), so that a nested block's does not shadow the enclosing
 * one's (-Wshadow in the program that nests them). */
#define SSTM_ATOMIC_BEGIN(attr) SSTM__ATOMIC_BEGIN_C(attr, SSTM__CAT(sstm__c_, __COUNTER__))
#define SSTM__CAT(a, b) SSTM__CAT_(a, b)
#define SSTM__CAT_(a, b) a##b
#define SSTM__ATOMIC_BEGIN_C(attr, c)                                                              \
  {                                                                                                \
    sstm_ckpt_t *c = sstm__begin(attr);                                                            \
    if (c == NULL || sstm__ckpt_save(c) != SSTM__CKPT_CANCEL) {
#else
#define SSTM_ATOMIC_BEGIN(attr)                                                                    \
  {                                                                                                \
    if (sstm__begin_ckpt(attr) != SSTM__CKPT_CANCEL) {
#endif

/** Close the atomic block that SSTM_ATOMIC_BEGIN() opened: commit it
 * (sstm_commit(), which returns only on success: a conflict restarts the
 * block). After sstm_cancel() control arrives here without a commit. The
 * commit's result is not reported: when there is no transaction to commit
 * (see SSTM_ATOMIC_END_RC()) the block ends silently, except for what the
 * misuse handler was told at the begin (an unregistered thread, a hook)
 * and, in debug builds, by the commit. Use SSTM_ATOMIC_END_RC() to learn
 * whether the block committed. */
#define SSTM_ATOMIC_END()                                                                          \
  sstm_commit();                                                                                   \
  }                                                                                                \
  }

/* Internal: the result of SSTM_ATOMIC_END_RC() when the commit returned
 * rc != 0 (SSTM_ENOTX): SSTM_ENOTHREAD when the thread has no descriptor,
 * rc otherwise; sets sstm_last_error(). */
SSTM_API int sstm__atomic_end_error(int rc);

/** Close the atomic block as SSTM_ATOMIC_END() does, and store the block's
 * result in rc (an int lvalue, evaluated once): 0 when it committed (a
 * conflict restarts the block, as for SSTM_ATOMIC_END()); SSTM_ECANCELED
 * after sstm_cancel(); SSTM_ENOTHREAD when the thread has no descriptor at
 * the end: it is not registered (the begin reported it to the misuse
 * handler, which returned, and the body ran outside any transaction), or
 * the body detached its descriptor (sstm_desc_detach()), whose transaction
 * is then suspended, not committed, and goes on once a thread attaches the
 * descriptor; SSTM_ENOTX when the thread's descriptor has no transaction
 * to commit: the body committed it (sstm_commit(), or another thread that
 * it was handed to), or the begin ran in a hook or a policy's callback
 * (reported to the misuse handler; the body ran outside any transaction).
 * The values are sstm_run()'s, which returns 0 for a body that committed
 * its transaction itself and refuses the rest before running the body;
 * sstm_last_error() says what happened. Adds one test of the commit's
 * result to SSTM_ATOMIC_END()'s cost.
 * @code{.c}
 *   int rc;
 *   SSTM_ATOMIC_BEGIN(NULL)
 *     sstm_store_i64(&acct[i], sstm_load_i64(&acct[i]) - 10);
 *   SSTM_ATOMIC_END_RC(rc);
 *   if (rc != 0) fprintf(stderr, "not committed: %s\n", sstm_last_error());
 * @endcode
 * @param rc an int lvalue that receives 0, SSTM_ECANCELED, SSTM_ENOTHREAD
 *           or SSTM_ENOTX */
#define SSTM_ATOMIC_END_RC(rc)                                                                     \
  {                                                                                                \
    int sstm__r_ = sstm_commit();                                                                  \
    if (__builtin_expect(sstm__r_ != 0, 0)) sstm__r_ = sstm__atomic_end_error(sstm__r_);           \
    (rc) = sstm__r_;                                                                               \
  }                                                                                                \
  }                                                                                                \
  else {                                                                                           \
    (rc) = SSTM_ECANCELED;                                                                         \
  }                                                                                                \
  }

/** Commit the current transaction (or leave one nesting level). On conflict
 * the transaction is rolled back and restarted at its begin, so this call
 * returns only on success. Returns 0, or SSTM_ENOTX when no transaction is
 * active (debug builds first report the misuse to the misuse handler, whose
 * default prints it and aborts), or SSTM_ESTATE when called from a hook, a
 * contention manager's callback or the sampling callback running within
 * the attempt, which must not end it (reported to the misuse handler; the
 * transaction goes on).
 * @return 0, SSTM_ENOTX or SSTM_ESTATE */
SSTM_API SSTM_NOPLT int sstm_commit(void);

/** Abort the current transaction and restart it (STAMP's TM_RESTART). The
 * contention manager's abort hook runs before the restart. Does not return.
 * Misuse (no transaction, one that asked to be irrevocable: attr or
 * sstm_become_irrevocable, or a call from a hook, a contention manager's
 * callback or the sampling callback) goes to the misuse handler. A
 * transaction that a policy made irrevocable (its progress bound, see the
 * README) is rolled
 * back, its in-place writes undone, and restarts revocable. User restarts
 * and cancels do not count towards the policies' bounds. */
SSTM_API void sstm_restart(void) __attribute__((noreturn));

/** Abort the current transaction and leave it without retrying: control goes
 * to the end of the atomic block (SSTM_ATOMIC_BEGIN skips the body) and
 * sstm_run() returns SSTM_ECANCELED. Not allowed in a transaction that asked
 * to be irrevocable, nor from a callback (misuse handler, as sstm_restart);
 * one that a policy made irrevocable is rolled back as by sstm_restart.
 * Does not return. */
SSTM_API void sstm_cancel(void) __attribute__((noreturn));

/** Make the current transaction irrevocable: it then runs without conflicts
 * with concurrent updates (no other transaction commits an update while it
 * runs; new transactions wait at begin) and never aborts. If it has already
 * performed accesses, or keeps no read set because of attr.read_only (then
 * always, accesses or not), it is first aborted and restarted in
 * irrevocable mode (abort reason SSTM_ABORT_IRREVOCABLE); the call returns
 * once the transaction is irrevocable. Blocks until other irrevocable
 * transactions and in-flight commits have finished. Returns 0, or
 * SSTM_ENOTX.
 * @return 0, or SSTM_ENOTX (no transaction) */
SSTM_API int sstm_become_irrevocable(void);

/** State query: inside a transaction?
 * @return true inside a transaction on the calling thread */
SSTM_API bool sstm_in_tx(void);
/** State query: inside an irrevocable one?
 * @return true inside an irrevocable transaction on the calling thread */
SSTM_API bool sstm_is_irrevocable(void);
/** State query: the current attempt's id (as sstm_desc_txid(sstm_self())):
 * unique in the process, not only per descriptor (thread.h says how).
 * @return the current attempt id, 0 if none */
SSTM_API uint64_t sstm_txid(void);

/** @name User actions
 * @{ */
/** User actions: run after the transaction commits (on_commit) or after it is
 * rolled back (on_abort, then discarded; the restarted attempt registers its
 * own). Run on the committing thread, outside the transaction, in
 * registration order; on_commit actions run last, after the policy and the
 * hooks have seen the commit, and may run transactions of their own (but
 * must return normally: no longjmp or C++ exception out of them); abort
 * actions run after the hooks and before the policy's on_abort (which
 * decides how the retry starts: waiting, a lowered priority). The blocks
 * the attempt allocated (sstm_malloc) are released after its abort actions,
 * which may still use them. Returns
 * SSTM_ENOTX
 * outside a transaction, SSTM_EINVAL (fn NULL), SSTM_ENOMEM.
 * @param fn the action
 * @param arg passed to fn
 * @return 0, SSTM_ENOTX, SSTM_EINVAL or SSTM_ENOMEM */
SSTM_API int sstm_on_commit(void (*fn)(void *arg), void *arg);
SSTM_API int sstm_on_abort(void (*fn)(void *arg), void *arg);
/** @} */

/* ---- privatization ----------------------------------------------------- */

/** Privatization barrier: wait until every transaction attempt that is
 * running when the call starts has ended, so that data which committed
 * transactions made private (unlinked it, or set an owner flag that every
 * transaction tests before touching the data) can then be accessed with
 * plain loads and stores. Without it, such accesses race with transactions
 * that are still running: a doomed attempt that tested the flag before the
 * privatizing commit may go on reading the data (and see the private
 * values), and an update transaction serialised before that commit may still
 * be writing the data back.
 *
 * Waits for every attempt running at the call, on any descriptor: active,
 * killed but not yet rolled back, committing (write-back in progress) or
 * irrevocable, including attempts suspended on a detached descriptor, which
 * end only once a thread attaches the descriptor and commits, restarts or
 * cancels them. An attempt has ended when it has committed or been rolled
 * back; its descriptor starting another attempt counts as that end. Attempts
 * that start during the call are not waited for: they observe every commit
 * that preceded the call.
 *
 * Memory ordering, on success: a full barrier on entry; on return, every
 * access (reads and write-back) of the attempts waited for, and of every
 * update transaction serialised before the caller's own last commit,
 * happens before the caller's later accesses. Hence, for transactions that
 * honour the privatization protocol:
 *
 *     SSTM_ATOMIC_BEGIN(NULL)
 *       sstm_store_u64(&node->owner, me); // others test owner first
 *     SSTM_ATOMIC_END();
 *     sstm_quiesce();
 *     node->data[0] = 42;                  // private: plain accesses
 *     ...
 *     SSTM_ATOMIC_BEGIN(NULL)              // publish it again
 *       sstm_store_u64(&node->owner, 0);
 *     SSTM_ATOMIC_END();
 *
 * no transaction can read or write node->data between the barrier and the
 * publishing commit. Data unlinked and then freed needs no barrier:
 * sstm_free() already waits for the same grace period (<schedstm/alloc.h>).
 *
 * Cost: one heavy fence (membarrier(2), or a seq_cst fence), a scan of the
 * descriptors, and the wait: a short poll, then a futex sleep on each attempt
 * still running (sstm_party_wait), whose end then costs its thread one
 * FUTEX_WAKE. Callable from any thread, registered or not, outside a
 * transaction. It never returns while an attempt it waits for stays
 * suspended or blocked: do not call it with a transaction suspended that
 * only the calling thread would resume, nor while holding a lock that a
 * running transaction waits for.
 *
 * Returns 0; SSTM_EBUSY inside a transaction (it would wait for itself;
 * debug builds also report the misuse to the misuse handler), SSTM_ESTATE
 * if the library is not initialised, SSTM_ENOMEM.
 * @return 0, SSTM_EBUSY, SSTM_ESTATE or SSTM_ENOMEM */
SSTM_API int sstm_quiesce(void);

/** A misuse handler, called with a message (sstm_set_misuse_handler()).
 * @param msg what was misused */
typedef void (*sstm_misuse_fn)(const char *msg);

/** Misuse handler: called with a message when the API is misused in a way
 * that cannot be reported through a return value (an access outside a
 * transaction, cancel in irrevocable mode). Libraries built with
 * -DSCHEDSTM_DEBUG=ON (sstm_describe() then says "debug") also call it for
 * misuse that has an error code, before returning the code: sstm_commit()
 * without a transaction, sstm_quiesce() inside one. The default prints the
 * message on stderr and calls abort(). A handler that returns makes the
 * offending access read 0 / be ignored, and the calls with an error code
 * return it; sstm_restart() and sstm_cancel(), which cannot return, then
 * print the message and abort() anyway. NULL restores the default. Returns
 * the previous handler.
 * @param fn the new handler, NULL for the default
 * @return the previous handler */
SSTM_API sstm_misuse_fn sstm_set_misuse_handler(sstm_misuse_fn fn);

SSTM_EXTERN_C_END

#endif /* SCHEDSTM_TX_H */
