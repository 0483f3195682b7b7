/* SPDX-License-Identifier: MIT */
/* What the engine offers the transactional stdio (src/libc) beyond the
 * public API (include/schedstm/tx.h): two facilities, for the cost of a
 * transaction of one stdio call, one question about the running attempt,
 * a look for its kill during a long wait, a hook for the moves of a
 * descriptor between threads and one for a thread's unregistration.
 * Implemented by src/core/txn.c and src/core/registry.c (the hooks); not
 * exported from the library.
 *
 * src/libc is compiled with include/, src/iface/ and src/os/ on its
 * include path, not src/core/: it reaches the engine through the public
 * headers and this one.
 */
#ifndef SSTM_IFACE_LIBC_SERVICES_H
#define SSTM_IFACE_LIBC_SERVICES_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* An action that runs at the end of the current attempt, whichever way it
 * ends: fn(arg, true) after it commits, where sstm_on_commit() actions
 * run, and fn(arg, false) after it is rolled back, where sstm_on_abort()
 * actions run; in registration order with those, with their rules
 * (include/schedstm/tx.h: outside the transaction, on the thread that ran
 * it, discarded with the attempt). One registration where a caller would
 * otherwise make two (the same fn for both outcomes), for the same cost
 * as one of them. Takes no lock and makes no system call unless the
 * attempt's array of actions must grow (realloc).
 * @param fn the action (not NULL)
 * @param arg passed to fn
 * @return 0, SSTM_ENOTX outside a transaction, SSTM_EINVAL (fn NULL) or
 *         SSTM_ENOMEM, with sstm_last_error() saying which */
int sstm__on_end(void (*fn)(void *arg, bool committed), void *arg);

/* A mark of the end of the current attempt, if there is one, without an
 * action: after the attempt commits, the engine stores on_commit into
 * *word, where sstm_on_commit() actions run (before them); after it is
 * rolled back (a restart, a conflict, a cancel), on_abort, where
 * sstm_on_abort() actions run (before them). Each store has release
 * order, so a thread that loads the value with acquire order sees what
 * the attempt did before its end (and, after a commit, the commit itself).
 * One mark per attempt: a later call in the same attempt replaces it, a
 * call with word NULL drops it. The mark is the attempt's: it is stored
 * once, then forgotten. Costs a read-only commit one test and the store
 * (no call), where an action costs the registration of an entry and the
 * actions' loop. Takes no lock, makes no system call, cannot fail inside a
 * transaction. An attempt with a mark does not become irrevocable in
 * place: sstm_become_irrevocable() restarts it first (its rollback stores
 * the mark), since a thread that waits for the mark may hold the
 * irrevocability token. Outside a transaction it does nothing and records
 * no error (sstm_last_error() is left as it was), so that a caller can
 * register first and learn from the result whether it is in a
 * transaction: the attempt's id, as sstm_txid() returns it, which saves
 * that call.
 * @param word where to store (NULL: drop the attempt's mark)
 * @param on_commit the value stored after a commit
 * @param on_abort the value stored after a rollback
 * @return the current attempt's id (non-zero, sstm_txid()), or 0 outside a
 *         transaction (nothing registered) */
uint64_t sstm__end_mark(_Atomic uint64_t *word, uint64_t on_commit, uint64_t on_abort);

/* Whether the attempts of the calling thread's current descriptor may be
 * suspended in their middle (asked inside a transaction or its actions):
 * the descriptor was made by sstm_desc_create() (include/schedstm/thread.h),
 * so a user-level scheduler such as the executor (include/schedstm/exec.h)
 * may detach it inside the transaction and attach it again later, on
 * this or another thread, after other transactions ran on this thread. A
 * descriptor of sstm_thread_init() cannot be: detaching it inside a
 * transaction ends the transaction. The stdio layer keeps no stream and
 * takes no turn for such an attempt (docs/design/tm-libc.md (S12)): a
 * wait of the stdio layer for a suspended attempt could wait for the very
 * worker that waits. False on a thread without a descriptor. Two loads;
 * no lock, no system call. */
bool sstm__attempt_suspendable(void);

/* A wait outside the barriers (one that may last, such as a poll(2) for a
 * pipe's data) looks for what would roll the running attempt back at its
 * next barrier: a kill by a conflicting attempt (the contention manager's
 * decision), or a read that a later commit made stale. Then the attempt
 * is rolled back now (does not return), releasing what it holds;
 * otherwise (the snapshot extended), and outside a transaction or in an
 * irrevocable attempt, returns. A declared read-only attempt without a
 * read set keeps its snapshot (it cannot be validated): its next read of
 * newer data aborts it, as at a barrier. The caller holds nothing that a rollback
 * would not release (no lock of its own, no memory it alone would free).
 * No lock, no system call; validates the read set. */
void sstm__attempt_check(void);

/* Around a wait outside the barriers (the stdio layer's poll or sleep for
 * a byte stream's data or room) that a revocable attempt makes holding
 * locks (encounter-time locking): begin marks the attempt as waiting, so
 * that a transaction that meets one of its locks takes them all over and
 * kills it, whatever the policies (docs/design/core.md (9.7)), instead of
 * waiting or restarting behind an attempt that may be waiting for that
 * very transaction's data; end clears the mark, waiting while a thread
 * takes the locks over, and the caller then calls sstm__attempt_check()
 * before anything else, which rolls a killed attempt back. begin returns
 * whether it marked (false outside a transaction, in an irrevocable
 * attempt, or without locks); pass that to end. No lock, no system call. */
bool sstm__attempt_wait_begin(void);
void sstm__attempt_wait_end(bool marked);

/* Thread-local state that belongs to a transaction follows its
 * descriptor. A descriptor detached inside a transaction
 * (sstm_desc_detach: an executor suspends the transaction) may be attached
 * again on another thread, where the transaction goes on; what a layer
 * keeps per thread for that transaction (the stdio layer's views of its
 * streams, docs/design/tm-libc.md (S12)) must go with it. The hook runs on
 * the thread that detaches the descriptor, with *slot the descriptor's
 * word for the layers (NULL unless a hook put something there) and out
 * true: it moves the transaction's state from the thread into *slot; and
 * on the thread that attaches a descriptor whose *slot is not NULL, with
 * out false: it moves the state from *slot to the thread and leaves *slot
 * NULL. It runs with the descriptor current (out) or already current (in),
 * must not begin a transaction, and must not fail. One hook per process:
 * a later registration replaces it. */
typedef void (*sstm_desc_move_fn)(void **slot, bool out);
extern _Atomic(sstm_desc_move_fn) sstm__desc_move_hook;

/* A thread unregisters: sstm_thread_exit() (include/schedstm/thread.h),
 * also the one of a thread's end and the one that only detaches a
 * descriptor of sstm_desc_create(). What a layer keeps for the thread
 * itself and other threads wait for, and would otherwise keep until the
 * thread ends, it gives up here: a thread that unregisters and lives on
 * may not come back for a long time (the stdio layer's keepings of
 * streams for a batch, docs/design/tm-libc.md (S11)). The hook runs on
 * the thread, outside any transaction, after the hooks' thread_exit
 * (include/schedstm/hooks.h), with its descriptor still current; it must
 * not begin a transaction, must not fail, and must leave the thread able
 * to register again and use the layer again. It may run again at the
 * thread's end (where the layer's own thread-exit destructor may also
 * run, before or after it): what it gives up it gives up once. One hook
 * per process: a later registration replaces it. */
typedef void (*sstm_thread_leave_fn)(void);
extern _Atomic(sstm_thread_leave_fn) sstm__thread_leave_hook;

/* The library is about to be torn down (sstm_shutdown(), which would
 * succeed: no other thread registered, the caller in no transaction).
 * What a layer holds for the program and would lose with the library (the
 * stdio layer's buffered bytes of committed transactions, which no later
 * call could write out) it writes out here. The hook runs on the caller of
 * sstm_shutdown(), registered or not, with the library initialised; it may
 * register the thread and run transactions, and must leave the thread
 * registered or not as it found it. It cannot make the shutdown fail: its
 * errors are its layer's to keep. One hook per process: a later
 * registration replaces it. */
typedef void (*sstm_shutdown_fn)(void);
extern _Atomic(sstm_shutdown_fn) sstm__shutdown_hook;

#endif /* SSTM_IFACE_LIBC_SERVICES_H */
