/* SPDX-License-Identifier: MIT */
/** @file
 * Transactional allocation and safe memory reclamation.
 *
 * Memory allocated inside a transaction is released if the transaction
 * aborts. Memory freed inside a transaction is released only after the
 * transaction commits, and only once no transaction that could still read it
 * is running (quiescence-based reclamation: every transaction that was
 * active when the free committed has ended, suspended ones included), so a
 * data structure can unlink and free a node while invisible readers traverse
 * it. Data that is unlinked and then kept, to be used with plain accesses,
 * needs the same grace period explicitly: sstm_quiesce() (<schedstm/tx.h>).
 *
 * Guarantees inside a transaction (docs/design/tm-libc.md, "Allocation"):
 *  - sstm_malloc, sstm_calloc, sstm_realloc and sstm_free never make the
 *    transaction irrevocable and never abort it themselves (sstm_realloc's
 *    copy reads the old block through the transaction, so a conflict there
 *    aborts it as any read does);
 *  - any size: a block above the block cache's sizes comes from malloc
 *    and, if the transaction aborts, goes back to free() at the rollback;
 *  - no lock and no system call on a registered thread whose blocks come
 *    from its block cache (the steady state of a thread that allocates and
 *    frees alike): the logs are per descriptor, retirement is per thread.
 *    A commit whose frees fill the thread's batch (1024 blocks; 8192 once
 *    a closed batch found other threads' descriptors registered; or
 *    blocks of 256 KiB in all, whichever comes first) closes it:
 *    one heavy fence (membarrier(2), or a seq_cst fence without it) and a
 *    scan of the running attempts, no waiting; if exited threads left
 *    batches behind, it also tries (never waits for) the lock of that
 *    shared list. A block the cache cannot serve is malloc's, with
 *    whatever malloc does (glibc: its arena's lock, sometimes mmap).
 */
#ifndef SCHEDSTM_ALLOC_H
#define SCHEDSTM_ALLOC_H

#include <schedstm/common.h>

SSTM_EXTERN_C_BEGIN

/** malloc/calloc inside a transaction; released automatically on abort.
 * Outside a transaction they allocate as malloc/calloc do. Either way the
 * block is a malloc block: free() or sstm_free() may release it, except
 * inside the transaction that allocated it, where only sstm_free() may
 * (the rollback of an attempt that aborts releases the block itself, so a
 * free() there would release it twice). That release comes after the
 * attempt's abort actions (sstm_on_abort, <schedstm/tx.h>), which may
 * still read and write the block, but neither keep it nor release it. Hooks
 * (<schedstm/hooks.h>), contention-manager callbacks (<schedstm/cm.h>) and
 * the sampling callback (cfg.sample_fn) count as outside, also those that
 * run within an attempt (tx_begin, on_begin, on_conflict, sample_fn): what
 * they allocate is theirs and survives the attempt's abort, and sstm_free()
 * there retires at once, also a block that the attempt they run in
 * allocated (which that attempt's abort then leaves alone).
 *
 * On a registered thread, a small block (under 512 usable bytes) may come
 * from the thread's block cache: blocks the library released on this
 * thread (after their grace period, or at the abort of the attempt that
 * allocated them) that it kept, up to cfg.alloc_cache bytes, instead of
 * handing them to free() (<schedstm/config.h>; SCHEDSTM_ALLOC_CACHE). Such
 * a block has at least the size asked for, holds stale data (sstm_calloc
 * zeroes it) and no transaction can still read it. The cache belongs to
 * the descriptor (a thread's own, or one of sstm_desc_create's, which it
 * follows from thread to thread); it is emptied into free() by
 * sstm_reclaim() (not counted in its result), when its thread exits (a
 * thread's own descriptor), at sstm_desc_destroy() and at sstm_shutdown().
 *
 * NULL on allocation failure (sstm_calloc also when n * size overflows;
 * errno is then ENOMEM). If the transaction's allocation log itself
 * cannot grow to record the block, the process ends (message on stderr,
 * then abort()), as for the other logs (<schedstm/access.h>). No system call
 * or lock when the block comes from the cache.
 * @param size bytes to allocate
 * @return the block, or NULL (errno ENOMEM) */
SSTM_API SSTM_NOPLT void *sstm_malloc(size_t size);
/** calloc inside a transaction: n * size zeroed bytes, with the contract of
 * sstm_malloc() (released on abort, a malloc block, the block cache). NULL
 * also when n * size overflows.
 * @param n number of elements
 * @param size bytes per element
 * @return the zeroed block, or NULL (errno ENOMEM) */
SSTM_API SSTM_NOPLT void *sstm_calloc(size_t n, size_t size);

/** realloc for blocks that transactions may read: a block of at least n
 * bytes whose first min(n, old size) bytes are p's, where the old size is
 * malloc_usable_size(p).
 *
 * Inside a transaction: p itself when it already holds n bytes and at most
 * half of it would be left unused (nothing is written); otherwise a new
 * block (as sstm_malloc: released if the transaction aborts) into which
 * p's bytes are copied through the transaction's reads (so the copy sees
 * the transaction's own earlier writes to p and is consistent with its
 * snapshot; a conflict there aborts the transaction as any read does),
 * and p is freed as sstm_free() frees it: at commit, after the grace
 * period. If the transaction aborts, p is untouched and still live. Never
 * makes the transaction irrevocable.
 *
 * Outside a transaction: the same, with a plain copy and p retired through
 * the grace period (sstm_free), so transactions that may still read p are
 * safe; the caller must not write p concurrently.
 *
 * p == NULL: sstm_malloc(n). n == 0: sstm_free(p), and NULL is returned.
 * On allocation failure NULL is returned with errno ENOMEM and p is left as
 * it was (still the caller's). A debug build (SCHEDSTM_DEBUG) reports a p
 * that cannot be a malloc block through the misuse handler (then NULL,
 * errno EINVAL), as sstm_free() does.
 * @param p a malloc block (sstm_malloc(), sstm_calloc(), malloc()), or NULL
 * @param n bytes wanted
 * @return the block (p or a new one), or NULL (n == 0, or errno set) */
SSTM_API SSTM_NOPLT void *sstm_realloc(void *p, size_t n);

/** Free inside a transaction: deferred until commit and the grace period. If
 * the transaction aborts the free is forgotten. p may be NULL. Outside a
 * transaction, sstm_free() retires p through the same grace period (use it
 * for memory unlinked by a committed transaction): blocks wait in the
 * thread's batch, which is closed and swept every 1024 blocks (8192 once a
 * closed batch found other descriptors registered) or 256 KiB of blocks
 * (malloc_usable_size), whichever comes first (or by
 * sstm_reclaim); on a thread that is not registered, each block is a batch
 * of its own, released by a later sstm_reclaim() on any thread, by a commit
 * that closes a batch of its own, or at sstm_shutdown(). While the library
 * is not initialised no transaction can exist, and p is freed at once.
 * Released means handed to free() or, for a small block on a registered
 * thread, kept in that thread's block cache (see sstm_malloc).
 *
 * As with free(), p must be a block not yet freed. A release build does not
 * check it: a pointer that no allocator returned (a stack or static
 * address), or a block freed twice (in one transaction, or again after the
 * free committed), is handed to free() only after the grace period, so the
 * error shows long after the call, inside reclamation (glibc aborts the
 * process with "free(): invalid pointer" or "double free detected"), or a
 * small block enters the cache twice and is handed out twice. A debug
 * build (SCHEDSTM_DEBUG) reports at the call, through the misuse handler
 * (sstm_set_misuse_handler), a pointer that cannot be a malloc block
 * (misaligned, on the calling thread's stack, or in the static data of the
 * program or a library) and a second free of a block in one transaction;
 * if the handler returns, that free is ignored.
 * @param p a malloc block (sstm_malloc(), sstm_calloc(), malloc()), or NULL */
SSTM_API SSTM_NOPLT void sstm_free(void *p);

/** Release retired memory whose grace period has elapsed: the calling
 * thread's own retired blocks (its pending batch is closed first) and those
 * on the shared list (handed over by exited threads, or retired by threads
 * that are not registered), to free(); the calling thread's block
 * cache (see sstm_malloc) goes to free() too. Blocks retired by another
 * live thread are released by that thread (at its commits, sstm_reclaim or
 * exit): retirement lists are per thread so that retiring takes no lock.
 * Called inside a transaction, it leaves the thread's own blocks (they
 * wait for a commit or a later call outside) and releases only the shared
 * list's. Returns how many retired blocks were released (the
 * cache's are not counted). Never blocks on running transactions.
 * @return the number of retired blocks released */
SSTM_API size_t sstm_reclaim(void);

SSTM_EXTERN_C_END

#endif /* SCHEDSTM_ALLOC_H */
