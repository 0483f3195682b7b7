/* SPDX-License-Identifier: MIT */
/** @file
 * The preemptive priority executor: transactional requests run on a pool
 * of worker threads, highest priority first, and a request that outranks
 * a running transaction preempts it without aborting it [Silvestri17].
 *
 * A program creates an executor (sstm_exec_create()) after sstm_init(),
 * submits requests (sstm_exec_submit(): a transaction body, its argument
 * and a priority) from any thread, and gets each result by a callback on
 * the worker or by waiting on a future (sstm_exec_wait()). Every request
 * runs as one transaction (sstm_run() with attr.priority set to its
 * priority) on a context of its own: a stack with a guard page below it.
 * There are sstm_exec_config_t::contexts of them (NUM_CONTEXTS in
 * [Silvestri17]); a submission takes a free one or waits for one
 * (backpressure: requests are never queued without bound), and
 * sstm_exec_try_submit() returns SSTM_EAGAIN instead of waiting.
 *
 * Scheduling. Priorities are 0 (lowest) .. levels-1 (highest). Each level
 * has a hot list (transactions started, then preempted) and a cold list
 * (submitted, not started), FIFO each, hot before cold; a worker always
 * takes the first request of the highest non-empty level. When a request
 * arrives that outranks the lowest-priority transaction running while no
 * worker is idle, that worker is told to preempt (sstm_exec_preempt_t):
 * its transaction is paused, not aborted (its descriptor is detached with
 * the transaction suspended, schedstm/thread.h), goes to the hot list of
 * its current priority and is resumed later by any worker; its outcome is
 * decided by data conflicts alone. A transaction preempted c_max times is
 * promoted to the highest level; with lazy_promotion every preemption
 * before that raises it by one level ([Silvestri17], Section III-C).
 *
 * Where preemption does not happen: inside the library (barriers, begin,
 * commit, rollback, allocation, reclamation, the policies), inside the C
 * library, in an irrevocable transaction, and in a region the body marks
 * with sstm_exec_nopreempt_begin()/_end(). A request to preempt that
 * arrives there stands and is served at the next point where preemption
 * is allowed (the next barrier, or the end of the region). The request
 * body runs on the worker that runs its context at that moment, which can
 * change at a preemption: a body must not keep the address of a
 * thread-local variable (errno included) across code that can be
 * preempted, nor rely on the thread id staying the same. A body that blocks
 * in the kernel blocks its worker.
 *
 * Environment variables (read once by sstm_exec_create() when
 * cfg->use_env is true, the default, and by sstm_exec_config_from_env();
 * strict, like those of schedstm/config.h; numbers are plain decimal):
 * @code{.unparsed}
 *   SCHEDSTM_EXEC_WORKERS          worker threads, 0..1024 (0: one per CPU the
 *                                  process may run on)
 *   SCHEDSTM_EXEC_CONTEXTS         contexts (NUM_CONTEXTS), 1..65536
 *   SCHEDSTM_EXEC_STACK_KB         stack per context, KiB, 16..65536
 *   SCHEDSTM_EXEC_LEVELS           priority levels, 1..64
 *   SCHEDSTM_EXEC_PREEMPT          none | signal | poll | check-only
 *   SCHEDSTM_EXEC_POLL_FALLBACK_US poll: microseconds before a signal, 1..1000000
 *   SCHEDSTM_EXEC_TICK_US          periodic tick per worker, microseconds,
 *                                  0 (off) or 10..1000000
 *   SCHEDSTM_EXEC_CMAX             preemptions before promotion to the top
 *                                  level, 0..1000000, 0 = never
 *   SCHEDSTM_EXEC_LAZY             0 | 1: lazy promotion
 *   SCHEDSTM_EXEC_PAUSED_CONFLICT  takeover | handover | inherit
 *   SCHEDSTM_EXEC_RESERVE_PCT      percent of the contexts held back from the
 *                                  lowest level for higher ones, 0..90
 *   SCHEDSTM_EXEC_HOLDER_LEVEL     the level a transaction preempted while
 *                                  holding locks is raised to, 0..63, 0 = off
 *   SCHEDSTM_EXEC_WAITER_FIRST     0 | 1: preempt a worker whose transaction
 *                                  waits for another's end first
 * @endcode
 *
 * Thread safety: every function may be called from any thread, registered
 * with the library or not, except where said. sstm_exec_destroy() must not
 * race with calls on the same executor.
 */
#ifndef SCHEDSTM_EXEC_H
#define SCHEDSTM_EXEC_H

#include <schedstm/common.h>

SSTM_EXTERN_C_BEGIN

/** An executor (opaque). */
typedef struct sstm_exec sstm_exec_t;

/** How a worker is told to preempt its transaction
 * (sstm_exec_config_t::preempt, SCHEDSTM_EXEC_PREEMPT). */
typedef enum sstm_exec_preempt {
  /** No preemption on arrival (the baseline): a worker takes the next
   * request only when its transaction ends. With a periodic tick
   * (sstm_exec_config_t::tick_us) the ticks do preempt: [Silvestri17]'s
   * extra-tick mode. */
  SSTM_EXEC_PREEMPT_NONE = 0,
  /** Event-driven: the submitter signals the worker (tgkill), whose handler
   * redirects it into the preemption check in thread context. */
  SSTM_EXEC_PREEMPT_SIGNAL = 1,
  /** Polled: the submitter sets the transaction's preemption request,
   * which its next transactional access (or begin, commit) sees; a signal
   * follows after poll_fallback_us if it has not switched by then (code
   * that runs long between accesses). The worker disarms that signal once
   * it has looked at its queue (the check at the access, or the end of the
   * transaction): sstm_exec_describe() counts the fallbacks armed,
   * disarmed and fired. */
  SSTM_EXEC_PREEMPT_POLL = 2,
  /** Ticks without preemption ([Silvestri17]'s overhead configuration):
   * the periodic tick (tick_us, required) is delivered and handled exactly
   * as in the extra-tick mode (signal, handler, redirect into the
   * preemption check, standing requests at the polled points) but the
   * check never switches, and submitters do not interrupt anyone. What it
   * costs against SSTM_EXEC_PREEMPT_NONE is what the tick machinery costs;
   * sstm_exec_describe() counts the switches it declined. */
  SSTM_EXEC_PREEMPT_CHECK_ONLY = 3,
} sstm_exec_preempt_t;

/** How a conflict with a paused transaction is decided
 * (sstm_exec_config_t::paused_conflict, SCHEDSTM_EXEC_PAUSED_CONFLICT).
 * A running transaction that meets a lock of a paused one never waits for
 * it (the paused one cannot move until a worker resumes it). */
typedef enum sstm_exec_paused_conflict {
  /** The paused transaction is aborted remotely and its locks are taken
   * over; it rolls back and retries when it is resumed (the default). */
  SSTM_EXEC_PAUSED_CONFLICT_TAKEOVER = 0,
  /** When the paused transaction carries a higher (current) priority than
   * the running one, the running one is paused instead and its worker goes
   * to the paused one (queued above it), which then finishes and releases
   * its locks: a hand-over. Otherwise as TAKEOVER. */
  SSTM_EXEC_PAUSED_CONFLICT_HANDOVER = 1,
  /** The transaction that has done more work keeps it. The running one
   * gives its worker to the paused one (which resumes at once on that
   * worker, with the running one's priority if that is higher: priority
   * inheritance, so that the one it blocks does not preempt it) when the
   * paused one carries a higher priority; or, at the same or a lower
   * priority, when the paused one's attempt has run longer than the
   * running one's and, if its priority is lower, it is at least half-way
   * through (its run so far is at least what remains of its level's
   * recent committed attempts). The running one then waits, paused, until
   * a worker resumes it: at most as long as the paused one runs, for if it
   * meets that lock again with the holder paused again, the holder is
   * taken over. Otherwise as TAKEOVER. */
  SSTM_EXEC_PAUSED_CONFLICT_INHERIT = 2,
} sstm_exec_paused_conflict_t;

/** Limits and defaults of the configuration. */
#define SSTM_EXEC_MAX_WORKERS 1024u
/** @copydoc SSTM_EXEC_MAX_WORKERS */
#define SSTM_EXEC_MAX_CONTEXTS 65536u
/** @copydoc SSTM_EXEC_MAX_WORKERS */
#define SSTM_EXEC_MAX_LEVELS 64u
/** @copydoc SSTM_EXEC_MAX_WORKERS */
#define SSTM_EXEC_CONTEXTS_DEFAULT 256u
/** @copydoc SSTM_EXEC_MAX_WORKERS */
#define SSTM_EXEC_STACK_KB_DEFAULT 256u
/** @copydoc SSTM_EXEC_MAX_WORKERS */
#define SSTM_EXEC_LEVELS_DEFAULT 8u
/** @copydoc SSTM_EXEC_MAX_WORKERS */
#define SSTM_EXEC_POLL_FALLBACK_US_DEFAULT 50u
/** @copydoc SSTM_EXEC_MAX_WORKERS */
#define SSTM_EXEC_CMAX_DEFAULT 4u
/** @copydoc SSTM_EXEC_MAX_WORKERS */
#define SSTM_EXEC_RESERVE_PCT_DEFAULT 0u
/** @copydoc SSTM_EXEC_MAX_WORKERS */
#define SSTM_EXEC_RESERVE_PCT_MAX 90u
/** @copydoc SSTM_EXEC_MAX_WORKERS */
#define SSTM_EXEC_HOLDER_LEVEL_DEFAULT 0u
/** @copydoc SSTM_EXEC_MAX_WORKERS */
#define SSTM_EXEC_WAITER_FIRST_DEFAULT false

/** An executor's configuration: sstm_exec_config_default() fills in the
 * defaults, the SCHEDSTM_EXEC_* variables override them. Like
 * sstm_config_t it starts with its size and fields are only ever
 * appended. */
typedef struct sstm_exec_config {
  /** sizeof(sstm_exec_config_t) as the program was compiled: set by
   * sstm_exec_config_default(), not by hand. */
  size_t size;
  unsigned workers;            /**< worker threads, 0 = one per CPU of the
                                  process's affinity mask (default 0) */
  unsigned contexts;           /**< contexts, each with a stack and a
                                  descriptor (default SSTM_EXEC_CONTEXTS_DEFAULT);
                                  counts against sstm_config_t::max_threads */
  unsigned stack_kb;           /**< stack of a context, KiB (default
                                  SSTM_EXEC_STACK_KB_DEFAULT). A
                                  signal-driven preemption runs on it, below
                                  the body's frames (the saved registers and
                                  FP/SIMD state, up to about 11 KiB with AMX,
                                  and the preemption check); where the body
                                  leaves less than that free, the preemption
                                  waits for the body's next transactional
                                  access */
  unsigned levels;             /**< priority levels 0..levels-1, at most
                                  SSTM_EXEC_MAX_LEVELS (default
                                  SSTM_EXEC_LEVELS_DEFAULT) */
  sstm_exec_preempt_t preempt; /**< how workers are told to preempt (default
                                  SSTM_EXEC_PREEMPT_SIGNAL) */
  unsigned poll_fallback_us;   /**< SSTM_EXEC_PREEMPT_POLL: the delay before
                                  the signal (default
                                  SSTM_EXEC_POLL_FALLBACK_US_DEFAULT) */
  unsigned tick_us;            /**< a periodic per-worker tick that runs the
                                  preemption check, as [Silvestri17]'s
                                  extra ticks; 0 = off (default); required
                                  by SSTM_EXEC_PREEMPT_CHECK_ONLY */
  unsigned c_max;              /**< preemptions after which a transaction is
                                  promoted to the top level; 0 = never
                                  (default SSTM_EXEC_CMAX_DEFAULT) */
  bool lazy_promotion;         /**< each preemption before c_max raises the
                                  priority by one level (default false) */
  bool use_env;                /**< read the SCHEDSTM_EXEC_* variables
                                  (default true) */
  /** conflicts with paused transactions (default
   * SSTM_EXEC_PAUSED_CONFLICT_TAKEOVER). The engine applies one rule to the
   * whole process: executors alive at the same time must agree
   * (sstm_exec_create() returns SSTM_EBUSY otherwise). */
  sstm_exec_paused_conflict_t paused_conflict;
  /** Priority-graded admission: the share of the contexts, in percent, that
   * a request of the lowest level may not take, graded linearly up to the
   * top level, which may take the last free context. A request of
   * priority p is admitted only while more than
   * floor(floor(contexts * reserve_pct / 100) * (levels - 1 - p) / (levels - 1))
   * contexts are free. Without it a full pool admits in arrival order
   * whatever the priority: low-priority requests, which wait longest, end
   * up holding every context, and a high-priority request then waits for
   * one of them to end before it can preempt anything. 0 = admission in
   * arrival order only, as [Silvestri17]; at most SSTM_EXEC_RESERVE_PCT_MAX
   * (default SSTM_EXEC_RESERVE_PCT_DEFAULT, 0: a program that submits at
   * one priority keeps its whole pool; one that uses priorities to favour
   * urgent requests under overload sets it, sstm-server uses 25). */
  unsigned reserve_pct;
  /** Lock holders resumed sooner: a transaction that holds write locks
   * (encounter-time locking: it has written) when it is preempted is raised
   * to this level if it is below it, so that it is queued there, hot, and
   * resumed before the requests waiting at this level and below that have
   * not started, and, once resumed, is preempted only by requests above
   * this level. A request at or below this level does not preempt such a
   * transaction at all (the worker keeps it; the request waits for a
   * worker as it would without preemption). A paused lock holder is open
   * to conflicts for as long as it is paused, and a conflict kills it
   * (SSTM_EXEC_PAUSED_CONFLICT_TAKEOVER): the work it then does again is
   * the lowest levels' main cost of preemption. A raise is not a promotion
   * (sstm_exec_level_stats_t::promotions); sstm_exec_describe() counts
   * raises and the preemptions kept from happening. 0 = off; less than
   * `levels` (default SSTM_EXEC_HOLDER_LEVEL_DEFAULT). */
  unsigned holder_level;
  /** Waiters first: a request that preempts picks, among the workers that
   * run a lower priority, one whose transaction is waiting in its
   * contention manager for another transaction's end (a serialising
   * policy's loser, between two attempts: it holds no lock and runs
   * nothing) before any that runs, whatever their priorities. Pausing it
   * costs no work and exposes nothing; pausing a running lock holder
   * instead leaves it open to conflicts until it is resumed, which under
   * SSTM_EXEC_PAUSED_CONFLICT_TAKEOVER kill it, often by the very waiter
   * (whose wait ends when its bound does). Such a worker is asked by its
   * mode and with the polled request, which ends the wait
   * (sstm_party_wait); the other workers are then not asked. Without it
   * the victim is the worker of lowest priority, waiting or not (default
   * SSTM_EXEC_WAITER_FIRST_DEFAULT). */
  bool waiter_first;
} sstm_exec_config_t;

/** Fill the first `size` bytes of *cfg with the defaults, cfg->size
 * included (see sstm_config_default_sized()).
 * @param[out] cfg the configuration to fill
 * @param size sizeof(sstm_exec_config_t) as the caller sees it
 * @return 0, or SSTM_EINVAL (cfg NULL or a size this library does not know) */
SSTM_API int sstm_exec_config_default_sized(sstm_exec_config_t *cfg, size_t size);

/** Fill *cfg with the defaults. NULL: nothing.
 * @param[out] cfg the configuration to fill */
static inline void sstm_exec_config_default(sstm_exec_config_t *cfg) {
  if (cfg) (void)sstm_exec_config_default_sized(cfg, sizeof *cfg);
}

/** Apply the SCHEDSTM_EXEC_* variables to *cfg, whatever cfg->use_env says.
 * SSTM_EINVAL on the first malformed value (sstm_last_error() says which
 * and what is valid), a NULL cfg or an unknown cfg->size; *cfg is then
 * unchanged.
 * @param[in,out] cfg the configuration to override
 * @return 0 or SSTM_EINVAL */
SSTM_API int sstm_exec_config_from_env(sstm_exec_config_t *cfg);

/** Create an executor and start its workers. cfg NULL: the defaults (and
 * the environment). The library must be initialised; the executor must be
 * destroyed before sstm_shutdown(). Takes a descriptor per context
 * (sstm_desc_create()), so contexts plus the registered threads must fit
 * in sstm_config_t::max_threads. Blocks until every worker has started.
 * Errors: SSTM_EINVAL (out NULL, bad value, unknown size, check-only without
 * a tick; sstm_last_error() says which), SSTM_ESTATE (library not initialised), SSTM_ELIMIT (not
 * enough descriptors), SSTM_EBUSY (another executor alive uses another
 * paused_conflict rule, or the call is inside a transaction, whose
 * attempts would each leave an executor behind), SSTM_ENOMEM (memory,
 * stacks, threads, timers).
 * On error nothing is left behind.
 * @param cfg the configuration, or NULL
 * @param[out] out receives the executor
 * @return 0, SSTM_EINVAL, SSTM_ESTATE, SSTM_ELIMIT, SSTM_EBUSY or SSTM_ENOMEM */
SSTM_API int sstm_exec_create(const sstm_exec_config_t *cfg, sstm_exec_t **out);

/** Stop accepting requests, run every request already accepted to its end
 * (drain), stop the workers and release everything. Submissions that wait
 * for a context when it is called fail with SSTM_ESTATE, and so do those
 * that the requests' callbacks and actions make while it drains. Blocks
 * until the drain is over and every submission that waited has returned.
 * Other calls on the executor must not overlap it (see Thread safety,
 * above): one that may still be running, or begin, when it returns uses
 * freed memory. Must not be called from a
 * request body or callback, nor inside a transaction, which a request may
 * wait for (SSTM_EBUSY), nor twice.
 * @param ex the executor (NULL: SSTM_EINVAL)
 * @return 0, SSTM_EINVAL or SSTM_EBUSY */
SSTM_API int sstm_exec_destroy(sstm_exec_t *ex);

/** Called on a worker when a request's transaction has ended, with the
 * return value of its sstm_run() (0 committed, SSTM_ECANCELED cancelled by
 * sstm_cancel(), or the error sstm_run() reported). It runs outside any
 * transaction, may call sstm_run() itself, and may submit to the executor
 * with sstm_exec_try_submit() (not the blocking sstm_exec_submit(): a full
 * executor would wait for itself; nor sstm_exec_wait() for a request that
 * has not ended, its own included: SSTM_EBUSY). The body and this callback run with the
 * request's context's descriptor attached (sstm_self()) and must leave it
 * so: a callback that detaches it (sstm_desc_detach(), or sstm_thread_exit(),
 * which detaches a descriptor of sstm_desc_create()) gets it back after it
 * returns (a transaction it runs meanwhile on a descriptor of its own is
 * never preempted). A body that detaches it inside its transaction and returns
 * (sstm_run() then returns SSTM_ENOTHREAD: the transaction is suspended,
 * its restart point in a frame that has returned) gets it back too, and
 * its transaction is ended as at a thread's end (thread.h): cancelled
 * (rolled back, its abort actions run), or committed if it asked to be
 * irrevocable; the request's result (this callback's rc, the future's) is
 * SSTM_ENOTHREAD. Only a descriptor that another thread has attached
 * meanwhile cannot be had back: the process then stops with a message on
 * stderr (abort()). */
typedef void (*sstm_exec_done_fn)(void *done_arg, int rc);

/** A waitable result: caller-owned storage, set up by sstm_exec_submit()
 * and read by sstm_exec_wait(). It must stay valid (not move, not be
 * freed) until sstm_exec_wait() has returned. Opaque. */
typedef struct sstm_exec_future {
  uint64_t opaque[2]; /**< state and result; do not touch */
} sstm_exec_future_t;

/** A request: the transaction body fn(arg), run by sstm_run() with
 * attr.priority = priority and attr.tag = tag, and how its end is reported
 * (done, future, both or neither). */
typedef struct sstm_exec_req {
  void (*fn)(void *arg);      /**< the transaction body (required) */
  void *arg;                  /**< its argument */
  unsigned priority;          /**< 0 (lowest) .. levels-1 */
  uint32_t tag;               /**< sstm_attr_t::tag (transaction profile) */
  sstm_exec_done_fn done;     /**< called when it ended, or NULL */
  void *done_arg;             /**< passed to done */
  sstm_exec_future_t *future; /**< set when it ended, or NULL */
  bool read_only;             /**< sstm_attr_t::read_only: the body only
                                 reads; its attempts may then read past the
                                 locks of running and paused writers
                                 (sstm_config_t::read_past) instead of
                                 meeting them (a paused writer's conflict
                                 kills it, SSTM_EXEC_PAUSED_CONFLICT_TAKEOVER) */
} sstm_exec_req_t;

/** Submit a request; waits while no context is free for its priority
 * (backpressure; sstm_exec_config_t::reserve_pct holds some back for
 * higher priorities), then
 * queues it and returns: the request is then accepted and will run, even
 * if sstm_exec_destroy() follows. It may preempt a running transaction of
 * lower priority (sstm_exec_preempt_t). Memory effects of the submitter
 * before the call are visible to the body.
 * On error nothing is accepted and req->future is left as it was.
 * Errors: SSTM_EINVAL (ex or req NULL, req->fn NULL, priority >= levels),
 * SSTM_ESTATE (the executor is being destroyed), SSTM_EBUSY (called from
 * one of this executor's request bodies or callbacks: it could wait for
 * itself; inside a transaction, which the requests holding the contexts
 * may wait for; or req->future belongs to a request still in flight,
 * which keeps it: wait for that one first; a concurrent submission naming
 * the same future is not detected).
 * @param ex the executor
 * @param req the request (copied; req itself may go away after the call)
 * @return 0, SSTM_EINVAL, SSTM_ESTATE or SSTM_EBUSY */
SSTM_API int sstm_exec_submit(sstm_exec_t *ex, const sstm_exec_req_t *req);

/** sstm_exec_submit() that never waits: SSTM_EAGAIN when no context is
 * free for the request's priority (sstm_exec_config_t::reserve_pct).
 * Callable from request callbacks. SSTM_EBUSY for a req->future still in
 * flight, as sstm_exec_submit().
 * A request's context goes back to the pool only after its end has been
 * reported (its done callback has returned, then its future is set): a
 * callback's own request still holds its context, and right after
 * sstm_exec_wait() returns the worker may not have freed it yet. So this
 * call can return SSTM_EAGAIN although every earlier request has ended;
 * sstm_exec_submit() waits for the context instead. Inside a transaction
 * (where sstm_exec_submit() refuses) the submission is not part of it: an
 * attempt that aborts has submitted all the same, and its retry submits
 * again (submit from an sstm_on_commit() action to submit once).
 * @param ex the executor
 * @param req the request
 * @return 0, SSTM_EAGAIN, SSTM_EINVAL, SSTM_EBUSY or SSTM_ESTATE */
SSTM_API int sstm_exec_try_submit(sstm_exec_t *ex, const sstm_exec_req_t *req);

/** Wait until the request whose future f is has ended and return its
 * sstm_run() result (see sstm_exec_done_fn). f may be reused afterwards.
 * The request's context is freed just after (see sstm_exec_try_submit()).
 * Blocks (futex) without a time limit. SSTM_EINVAL for f NULL or a future
 * no submission set up. SSTM_EBUSY, for a request that has not ended,
 * where it may wait for the caller: inside a transaction (the request may
 * wait for its end: its locks, its irrevocability; wait after the commit)
 * or on an executor's worker (a request's body, done callback or actions:
 * the request may need that worker, and a request's own future is set
 * after its done callback returns; wait outside the executor, or test
 * sstm_exec_done()). A future whose request has ended is read anywhere.
 * @param f the future passed in sstm_exec_req_t::future
 * @return the request's result, SSTM_EINVAL or SSTM_EBUSY */
SSTM_API int sstm_exec_wait(sstm_exec_future_t *f);

/** Whether the request whose future f is has ended (then sstm_exec_wait()
 * does not block). Never blocks.
 * @param f the future
 * @return true when ended; false otherwise or for f NULL */
SSTM_API bool sstm_exec_done(const sstm_exec_future_t *f);

/** Mark a region of a request body where it must not be preempted (code
 * that holds a lock of its own, or talks to a device, or that a library
 * calls back while it holds a lock: a pthread_once initialiser, a C++
 * function-local static's initialiser, a fopencookie function, a
 * dl_iterate_phdr callback; preempted there, the paused body keeps that
 * lock, and a request that needs it blocks its worker). Nests. A
 * preemption requested meanwhile is served at the matching
 * sstm_exec_nopreempt_end(). An attempt that aborts (a restart, a cancel,
 * a conflict) closes the regions it opened, as it leaves their frames (a
 * preemption requested meanwhile is then served before the retry);
 * a request that ends with one open does not pass it on to the next
 * request on its context. Outside an executor's body both do nothing
 * and return 0.
 * @return 0, or SSTM_ESTATE for an end without a begin */
SSTM_API int sstm_exec_nopreempt_begin(void);
/** @copydoc sstm_exec_nopreempt_begin */
SSTM_API int sstm_exec_nopreempt_end(void);

/** Statistics of the requests born at one priority level (their
 * submitted priority, whatever promotions followed), since the executor
 * was created. Times in nanoseconds, summed over the requests that
 * ended; divide by `completed` for means. */
typedef struct sstm_exec_level_stats {
  /** The bytes of this struct that the library filled (set by the call):
   * at most the caller's sizeof(sstm_exec_level_stats_t); the fields after
   * them are zero. */
  size_t size;
  uint64_t submitted;         /**< accepted */
  uint64_t completed;         /**< ended (committed, cancelled or failed) */
  uint64_t preemptions;       /**< times one was paused for a higher priority */
  uint64_t promotions;        /**< priority raises (dynamic priority) */
  uint64_t aborts;            /**< aborted attempts (each is retried) */
  uint64_t queue_ns;          /**< submitted to first start (cold list) */
  uint64_t run_ns;            /**< on a worker, aborted attempts included */
  uint64_t paused_ns;         /**< preempted, in the hot list */
  uint64_t turnaround_ns;     /**< submitted to end (the reply), in total */
  uint64_t turnaround_max_ns; /**< the longest turnaround */
} sstm_exec_level_stats_t;

/** Read the statistics of level `level` into the first `size` bytes of
 * *out (sizeof as the caller was compiled, which sstm_exec_stats()
 * passes). Reads of counters that the workers keep updating: each value
 * is whole, the set is not one instant's, but the sums (aborts, times)
 * cover at least the `completed` requests counted. Never blocks.
 * @param ex the executor
 * @param level the birth priority, 0..levels-1
 * @param[out] out receives the statistics
 * @param size sizeof(*out) as the caller sees it
 * @return 0, or SSTM_EINVAL (NULL argument, level out of range, size too small) */
SSTM_API int sstm_exec_stats_sized(sstm_exec_t *ex, unsigned level, sstm_exec_level_stats_t *out,
                                   size_t size);

/** sstm_exec_stats_sized() with the caller's size.
 * @param ex the executor
 * @param level the birth priority
 * @param[out] out receives the statistics
 * @return 0 or SSTM_EINVAL */
static inline int sstm_exec_stats(sstm_exec_t *ex, unsigned level, sstm_exec_level_stats_t *out) {
  return sstm_exec_stats_sized(ex, level, out, sizeof *out);
}

/** One-line description of an executor's effective configuration and of
 * the preemption facility in use (like sstm_describe()): writes at most
 * len bytes, NUL-terminated, and returns the length it needed. Never
 * blocks (the counters are read without a lock).
 * @param ex the executor
 * @param buf where to write, or NULL
 * @param len the size of buf
 * @return the length, or SSTM_EINVAL for ex NULL */
SSTM_API int sstm_exec_describe(sstm_exec_t *ex, char *buf, size_t len);

/** Name of a preemption mode ("none", "signal", "poll", "check-only"; "?"
 * out of range).
 * @param m the mode
 * @return a static string */
SSTM_API const char *sstm_exec_preempt_name(sstm_exec_preempt_t m);

SSTM_EXTERN_C_END

#endif /* SCHEDSTM_EXEC_H */
