/* SPDX-License-Identifier: MIT */
/** @file
 * The contention-management interface.
 *
 * Mechanism (the engine) is separate from policy (a contention manager). A
 * policy is a small table of hooks, selected by name at sstm_init() (config
 * field cm or SCHEDSTM_CM). The engine reports the conflicts of revocable
 * attempts to on_conflict() with the kind of conflict and, when known, the
 * other party; the policy answers with an action. Not reported: an
 * irrevocable attempt's lock conflicts (it waits: only committing attempts
 * can make it), a read that passes the lock of a writer not yet committing
 * (cfg.read_past), waiting at begin while an irrevocable transaction
 * runs, the restart of a read-only attempt without a read set that met a
 * newer stripe (SSTM_ABORT_RO_EXTEND), and taking over the lock of an
 * attempt already killed. The actions:
 * @code{.unparsed}
 *   SSTM_CM_ABORT_SELF   roll back; on_abort() then runs before the restart
 *                        and may wait, yield, sleep or change priority;
 *   SSTM_CM_ABORT_OTHER  request a remote abort of the other party and retry
 *                        the access (the engine takes over the killed
 *                        party's lock); if the other party cannot be aborted
 *                        (committing, irrevocable) this behaves as WAIT;
 *   SSTM_CM_WAIT         spin for *wait_ns (bounded by the engine), then
 *                        retry the access; after cfg.wait_max consecutive
 *                        WAITs on one access the engine aborts self.
 * @endcode
 *
 * Any other value is a bug of the policy: the engine reports it to the
 * misuse handler (sstm_set_misuse_handler; the default one prints it and
 * aborts the process) and, if the handler returns, aborts self.
 *
 * A failed validation, a kill and a running irrevocable transaction always
 * abort self, whatever on_conflict answers; it is still called so that the
 * policy sees them (a kill is reported wherever the victim notices it:
 * barrier, validation or commit). An attempt that was killed while it lost
 * another conflict aborts as killed (SSTM_ABORT_KILLED in on_abort and in
 * the statistics), although on_conflict saw the other conflict. A failed
 * validation names, when there is
 * one, the attempt that holds locked the first stripe of the read set that
 * changed (a writer still running or committing; none when that stripe was
 * changed by a commit that has ended, nor a running writer when the attempt
 * reads past running writers, cfg.read_past: the stripe changed before its
 * lock). A kill names the killer as the other
 * party, for information (and in sstm_abort_info_t) when known: the
 * descriptor that requested it, through a conflict's SSTM_CM_ABORT_OTHER or
 * sstm_desc_kill() on a registered thread. It is unknown when the request
 * came from an unregistered thread or from the victim's own thread, or when
 * the victim noticed the kill in the few instructions between the killer's
 * status CAS and its record of itself. The policy's on_abort gets it too,
 * so a policy that waits behind the winner of a conflict (ser-*, softser)
 * also waits behind its killer's attempt.
 *
 * Hooks run on the transaction's thread. on_begin/on_commit are on the hot
 * path: leave them NULL unless needed. No hook may start, restart,
 * cancel or commit a transaction (treated as in a global hook: hooks.h);
 * sstm_malloc() and sstm_free() in a hook act as outside a transaction,
 * even in on_begin and on_conflict (alloc.h).
 *
 * A policy's init hook gets the final configuration (sstm_config_t; the
 * backoff policy's bounds are its fields backoff_min_ns and
 * backoff_max_ns). The built-in policies also own these fields
 * (sstm_config_t::softser_lever, ext_mode, ext_slice_us, prio_escalate),
 * set from the SCHEDSTM_* variables below when use_env is true; sstm_init()
 * checks them whichever policy is selected (a bad value fails it with
 * SSTM_EINVAL) and the owning policy takes them at every sstm_init(); each
 * is documented with its policy in src/cm/, in schedstm/config.h and in
 * the README's table:
 * @code{.unparsed}
 *   SCHEDSTM_SOFTSER_LEVER   softser (cm/softser.c): the priority lever,
 *                            auto | none | nice | idle | batch | slice (auto)
 *   SCHEDSTM_EXT_MODE        P+ext (cm/ext.c): the facility, auto | none | slice
 *                            (auto: the probe decides; the others for tests)
 *   SCHEDSTM_EXT_SLICE_US    P+ext (cm/ext.c): the custom slice where the rseq
 *                            extension is absent, 100..100000 us (4000)
 *   SCHEDSTM_PRIO_ESCALATE   os_prio and timestamp (cm/prio.c), and adaptive
 *                            while it runs os_prio: lost conflicts before a
 *                            transaction restarts irrevocable, 0..1000000,
 *                            0 = never (32)
 * @endcode
 * A policy registered with sstm_cm_register() reads its own settings.
 */
#ifndef SCHEDSTM_CM_H
#define SCHEDSTM_CM_H

#include <schedstm/common.h>
#include <schedstm/stats.h>
#include <schedstm/thread.h>

SSTM_EXTERN_C_BEGIN

/** The kind of a conflict (sstm_conflict_t::kind). */
typedef enum sstm_conflict_kind {
  SSTM_CONFLICT_READ_LOCKED = 0,   /**< read of a word write-locked by another */
  SSTM_CONFLICT_WRITE_LOCKED = 1,  /**< write/write: lock owned by another */
  SSTM_CONFLICT_COMMIT_LOCKED = 2, /**< commit-time lock acquisition (CTL) */
  SSTM_CONFLICT_VALIDATION = 3,    /**< read set no longer valid */
  SSTM_CONFLICT_KILLED = 4,        /**< aborted remotely by another thread */
  SSTM_CONFLICT_IRREVOCABLE = 5,   /**< an irrevocable transaction is running */
} sstm_conflict_kind_t;

/** Snapshot of the other party, taken without synchronisation: the values
 * are consistent enough for a decision, not exact. */
typedef struct sstm_party {
  sstm_desc_t *desc; /**< its descriptor (never freed while the library is
                        initialised, so always safe to pass back) */
  unsigned slot;     /**< descriptor slot */
  int tid;           /**< OS thread id last attached, 0 if unknown */
  uint64_t txid;     /**< the attempt that owns the lock */
  uint64_t start;    /**< its attempt's start timestamp (global clock) */
  uint64_t birth;    /**< start timestamp of its transaction's first
                        attempt: the age used by timestamp policies */
  uint32_t reads;    /**< read-set size */
  uint32_t writes;   /**< write-set size */
  int priority;      /**< sstm_attr_t priority */
  bool committing;   /**< committing or irrevocable: cannot be aborted */
} sstm_party_t;

/** A conflict, as the engine reports it to sstm_cm_ops_t::on_conflict. */
typedef struct sstm_conflict {
  sstm_conflict_kind_t kind; /**< what happened */
  const void *addr;          /**< address being accessed, NULL if none */
  bool has_other;            /**< other is filled in */
  sstm_party_t other;        /**< the other party, when has_other */
  unsigned attempt;          /**< consecutive WAITs already done for this access */
} sstm_conflict_t;

/** A policy's answer to a conflict (the file comment says what each does). */
typedef enum sstm_cm_action {
  SSTM_CM_ABORT_SELF = 0,  /**< roll back; on_abort() then runs before the restart */
  SSTM_CM_ABORT_OTHER = 1, /**< request a remote abort of the other party and retry
                                the access (WAIT if it cannot be aborted) */
  SSTM_CM_WAIT = 2,        /**< spin for *wait_ns (bounded by the engine), then retry
                                the access */
} sstm_cm_action_t;

/** What a policy sees of its own transaction. */
typedef struct sstm_cm_ctx {
  void *state;        /**< state_size bytes of per-descriptor policy state,
                         zeroed when the descriptor is first created and
                         kept when a later thread reuses the descriptor
                         (other threads may still use it): desc_init
                         resets what it needs */
  sstm_desc_t *desc;  /**< own descriptor */
  unsigned retries;   /**< aborts so far of the current transaction */
  unsigned conflicts; /**< of which conflicts lost to other transactions
                         (locks, validation, kills, an irrevocable one in
                         the way): not user retries or cancels, nor a
                         switch to another mode (read-only hint wrong,
                         sstm_become_irrevocable) */
  uint64_t txid;      /**< current attempt */
  uint64_t start;     /**< current attempt's start timestamp */
  uint64_t birth;     /**< start timestamp of the first attempt */
  uint32_t reads;     /**< current read-set size */
  uint32_t writes;    /**< current write-set size */
  int priority;       /**< sstm_attr_t priority */
  bool watched;       /**< in on_commit/on_abort: some thread watched the
                         attempt that just ended (sstm_party_watch) */
} sstm_cm_ctx_t;

/** Why an attempt ended without commit. Counted per thread. */
typedef struct sstm_abort_info {
  sstm_abort_reason_t reason; /**< why */
  bool has_other;             /**< other is filled in */
  sstm_party_t other;         /**< the winner (for SSTM_ABORT_KILLED, the killer),
                                   when known */
} sstm_abort_info_t;

/** What a policy is doing, published in the per-thread state table and
 * counted per thread (sstm_stats_t.cm_actions). */
typedef enum sstm_cm_act {
  SSTM_ACT_NONE = 0, /**< running normally */
  SSTM_ACT_SPIN,     /**< spinning until a winner's attempt ends */
  SSTM_ACT_BLOCK,    /**< sleeping until a winner's attempt ends */
  SSTM_ACT_YIELD,    /**< yielded the CPU */
  SSTM_ACT_BACKOFF,  /**< random backoff */
  SSTM_ACT_LOWERED,  /**< running at lowered OS priority (softser) */
  SSTM_ACT_KILL,     /**< aborted another transaction */
  SSTM_ACT_COUNT     /**< number of actions, not an action */
} sstm_cm_act_t;

/** The action's short name as the statistics and sstm-top show it ("run",
 * "spin", "block", "yield", "backoff", "lowered", "kill"); "?" for a value
 * out of range. Static strings; never NULL.
 * @param a the action
 * @return its name */
SSTM_API const char *sstm_cm_act_name(sstm_cm_act_t a);

/** Number of policy-defined counters per thread (sstm_stats_t.cm_stats).
 * The ext modifier ("P+ext") keeps P's counters and uses the last one for
 * its own (ext_yields): a policy composable with +ext may use at most
 * SSTM_CM_NSTATS - 1 counters (stat_names[SSTM_CM_NSTATS - 1] NULL). For a
 * policy that names all SSTM_CM_NSTATS, "P+ext" is refused: sstm_cm_find()
 * returns NULL and sstm_init() fails with SSTM_EINVAL. */
#define SSTM_CM_NSTATS 8
/** Longest name of such a counter (sstm_cm_ops_t.stat_names). */
#define SSTM_CM_STAT_NAME_MAX 31
/** Largest per-descriptor policy state (sstm_cm_ops_t.state_size): 1 MiB. */
#define SSTM_CM_STATE_MAX ((size_t)1 << 20)
/** Longest name of a registered policy (sstm_cm_ops_t.name); its "P+ext"
 * composition is 4 characters longer. */
#define SSTM_CM_NAME_MAX 48
/** Most policies registered at once, the built-in ones included. */
#define SSTM_CM_MAX_POLICIES 32

/** A contention-management policy: its name and its hooks
 * (sstm_cm_register()). */
typedef struct sstm_cm_ops {
  const char *name;        /**< selection key: 1..SSTM_CM_NAME_MAX characters of
                              [a-z0-9+_-], unique, neither "ext" nor ending
                              in "+ext" (the ext modifier's names) */
  const char *description; /**< one line */
  size_t state_size;       /**< per-descriptor state bytes (may be 0, at most
                              SSTM_CM_STATE_MAX) */
  /** Called once by sstm_init() after the configuration is final; a non-zero
   * return fails sstm_init() with that code. Optional. */
  int (*init)(const struct sstm_config *cfg);
  /** Called by sstm_shutdown() (and by an sstm_init() that fails after init
   * succeeded). Optional. */
  void (*fini)(void);
  /** A descriptor is set up for a thread that registers or for
   * sstm_desc_create(), before it is attached. Optional. */
  void (*desc_init)(sstm_cm_ctx_t *ctx);
  /** A descriptor is released (its thread unregisters, sstm_desc_destroy()).
   * Optional. */
  void (*desc_fini)(sstm_cm_ctx_t *ctx);
  void (*on_begin)(sstm_cm_ctx_t *ctx);  /**< an attempt begins; optional, hot path */
  void (*on_commit)(sstm_cm_ctx_t *ctx); /**< an attempt committed; optional, hot path */
  /** A conflict (sstm_conflict_t), answered with an action. Required.
   * *wait_ns is preset to 0; set it for SSTM_CM_WAIT. */
  sstm_cm_action_t (*on_conflict)(sstm_cm_ctx_t *ctx, const sstm_conflict_t *c, uint64_t *wait_ns);
  /** After rollback, before the restart (also after a cancel, which has no
   * restart: check info->reason). May block. Optional. */
  void (*on_abort)(sstm_cm_ctx_t *ctx, const sstm_abort_info_t *info);
  /** Names of the policy's counters (sstm_cm_count), by slot: NULL for a
   * slot not used (the ones after it may be), each name
   * 1..SSTM_CM_STAT_NAME_MAX characters; optional. The last slot NULL for
   * use with +ext (above). */
  const char *stat_names[SSTM_CM_NSTATS];
  /** One line on the OS facilities the policy uses (for sstm_describe), e.g.
   * "lever=nice". Returns snprintf-style length. Optional. */
  int (*describe)(char *buf, size_t len);
  /** The descriptor has been attached to the calling thread (sstm_thread_init,
   * sstm_desc_attach), or is about to be detached from it (sstm_desc_detach,
   * sstm_thread_exit). Per-thread OS state belongs here, not in desc_init:
   * a descriptor made with sstm_desc_create() is initialised on one thread
   * and may run on others, and a detached transaction may resume on another
   * worker. Both run on the thread concerned, outside any attempt's
   * barriers; they may make system calls. Optional.
   * @{ */
  void (*on_attach)(sstm_cm_ctx_t *ctx);
  void (*on_detach)(sstm_cm_ctx_t *ctx);
  /** @} */
} sstm_cm_ops_t;

/** Register a policy so that sstm_init() can select it by name. The table must
 * stay valid until the process exits. Callable before or after sstm_init();
 * a policy registered after init is used by the next init.
 * Errors: SSTM_EINVAL (missing name/on_conflict, bad name: see
 * sstm_cm_ops_t.name; a counter name
 * empty or longer than SSTM_CM_STAT_NAME_MAX, in any slot; state_size
 * larger than
 * SSTM_CM_STATE_MAX), SSTM_EBUSY (name taken), SSTM_ELIMIT (table full:
 * SSTM_CM_MAX_POLICIES).
 * @param ops the policy (not copied)
 * @return 0, SSTM_EINVAL, SSTM_EBUSY or SSTM_ELIMIT */
SSTM_API int sstm_cm_register(const sstm_cm_ops_t *ops);

/** Look up a registered policy by name, or "P+ext" for a registered P (the
 * composite is built once per P and then shared). NULL if unknown, or if
 * P+ext is refused (P uses every counter); sstm_last_error() then says
 * why.
 * @param name the policy's name, or "P+ext"
 * @return the policy, or NULL */
SSTM_API const sstm_cm_ops_t *sstm_cm_find(const char *name);

/** Names of the registered policies, comma-separated, followed by the ext
 * forms (for messages). Writes at most len bytes, NUL-terminated when len
 * > 0 (buf NULL: nothing is written, whatever len), and returns the length
 * it needed, like snprintf: a return value >= len means the list was
 * truncated.
 * Takes the registry's mutex; never fails.
 * @param buf where to write, or NULL
 * @param len the size of buf
 * @return the length of the whole list */
SSTM_API int sstm_cm_list(char *buf, size_t len);

/** The policy in use (NULL before init).
 * @return the policy, or NULL */
SSTM_API const sstm_cm_ops_t *sstm_cm_current(void);

/** True while the party's attempt (p->txid) has not ended (committed or
 * aborted). Lock-free, no system call: for policies that wait for a winner.
 * @param p the party (sstm_conflict_t::other)
 * @return whether its attempt still runs (false for a NULL p) */
SSTM_API bool sstm_party_running(const sstm_party_t *p);

/** Policy helper: busy-wait about ns nanoseconds (pause loop on the monotonic
 * clock, no system call).
 * @param ns nanoseconds */
SSTM_API void sstm_spin_ns(uint64_t ns);

/** Ask that the end of the party's attempt be reported to its own policy
 * (ctx->watched is true in its on_commit/on_abort). Succeeds only while the
 * attempt runs and is not committing (active, killed or irrevocable): a
 * committing attempt is about to end. Returns true if the attempt is now
 * watched. Lock-free (one CAS on the party's status word).
 * @param p the party
 * @return whether the attempt is watched (false for a NULL p) */
SSTM_API bool sstm_party_watch(const sstm_party_t *p);

/** How sstm_party_wait() waits. */
typedef enum sstm_wait_mode {
  SSTM_WAIT_SPIN = 0,  /**< pause loop; the thread keeps its CPU */
  SSTM_WAIT_BLOCK = 1, /**< sleep on a futex on the party's status word */
  SSTM_WAIT_YIELD = 2, /**< sched_yield() between checks: gives the CPU to the
                          other runnable threads, the winner among them */
} sstm_wait_mode_t;

/** Wait until the party's attempt has ended (committed or aborted), or
 * timeout_ns has passed (0: no limit). Returns 0 once it has ended,
 * SSTM_EBUSY on timeout, SSTM_EINVAL for a NULL party or an unknown mode.
 * BLOCK: the caller sets a sleepers flag in the party's status word and
 * sleeps with FUTEX_WAIT on that word's low 32 bits, which change at every
 * state transition; the kernel compares them atomically before sleeping, so
 * a wake-up cannot be missed and an ended attempt is never slept on. The
 * party wakes sleepers when its attempt ends only if the flag is set: an
 * attempt that nobody waits for makes no system call. Sleeps are sliced:
 * each lasts at most as long as the wait so far, but at least 1 ms and at
 * most 16 ms, before the caller re-checks. That bounds the one unwoken
 * case, a read-only attempt flagged in its commit's last instant (its
 * commit ends with a plain store): its end is noticed at most 1 ms, or as
 * long as the caller had already waited, late. Lock conflicts never name
 * such an attempt, but a victim waiting behind the read-only attempt that
 * killed it, a grace period of reclamation, or a party built by hand can. YIELD: calls
 * sched_yield() between checks, sets no flag and never sleeps, so the
 * party's end issues no wake-up. A committing party is waited for by
 * spinning (its end is imminent): in SPIN mode without end; in YIELD mode
 * with a sched_yield() every 64 rounds (in case it was preempted); in BLOCK
 * mode for 128 rounds (a few microseconds), then asleep on the same futex
 * word, registered in a count of the party's that the end of its commit
 * reads after its status store, so that it wakes sleepers only when there
 * are some. Registering costs the waiter one membarrier(2)
 * (MEMBARRIER_CMD_PRIVATE_EXPEDITED) per wait, which spares the committer
 * a full barrier; where that facility is missing (or disabled:
 * sstm_config_t.no_membarrier), BLOCK spins on a committing party and
 * yields every 64 rounds, as YIELD does. Deadlock freedom: policies
 * call this after their own attempt has rolled back (from on_abort), so a
 * waiting thread holds no lock and runs no attempt, and the wait-for graph
 * (waiting thread -> running attempt) has no cycle. Called between
 * attempts (the caller's attempt rolled back), the wait also ends, with 0,
 * when an executor running the caller's transaction chooses its worker to
 * preempt (sstm_exec_config_t::waiter_first): the retry then gives the
 * worker up at its first polled point.
 * @param p the party
 * @param mode SSTM_WAIT_SPIN, SSTM_WAIT_BLOCK or SSTM_WAIT_YIELD
 * @param timeout_ns the longest wait, 0 for no limit
 * @return 0, SSTM_EBUSY or SSTM_EINVAL */
SSTM_API int sstm_party_wait(const sstm_party_t *p, sstm_wait_mode_t mode, uint64_t timeout_ns);

/** Another descriptor's policy state (state_size bytes), for policies whose
 * threads cooperate (softser). Descriptors are never freed while the library
 * is initialised, so the pointer stays valid. NULL for a NULL descriptor.
 * @param d the descriptor (sstm_party_t::desc)
 * @return its state, or NULL */
SSTM_API void *sstm_cm_state_of(sstm_desc_t *d);

/** Add n to the policy counter idx (< SSTM_CM_NSTATS) of the calling thread
 * (sstm_stats_t::cm_stats). As sstm_cm_note(), which publishes the
 * policy's current action, it only touches the caller's own descriptor:
 * call it from hooks that run on ctx's thread. A NULL ctx or an idx out of
 * range is ignored.
 * @param ctx the policy's context
 * @param idx the counter, < SSTM_CM_NSTATS
 * @param n what to add */
SSTM_API void sstm_cm_count(sstm_cm_ctx_t *ctx, unsigned idx, uint64_t n);

/** From on_abort: the restart of ctx's transaction runs irrevocable (it then
 * never aborts; a policy's way to guarantee progress).
 * @param ctx the policy's context */
SSTM_API void sstm_cm_next_irrevocable(sstm_cm_ctx_t *ctx);

/** The line the policy's describe() hook returns has changed (adaptive: a
 * new choice or reason): refresh the copy published in the per-thread
 * state table, so that tools attached to the process (sstm-top) show the
 * current one. Takes a library mutex and calls describe() under it (so
 * concurrent refreshes publish in order): do not call it from describe()
 * or while holding a lock that describe() takes. A no-op when the state
 * table is off. Not for the hot path (a few hundred bytes copied under a
 * seqlock). From policy hooks, or from any thread between sstm_init() and
 * sstm_shutdown() (not concurrently with the shutdown). */
SSTM_API void sstm_cm_info_changed(void);

/** Publish what the policy is doing for ctx's thread (act: waiting,
 * backing off, running at lowered priority, ...): the `action` of its entry
 * in the state table (sstm-top) and the per-action counts of the statistics
 * (sstm_stats_t.cm_actions). A relaxed store and a counter increment, no
 * system call: callable from any hook, on the thread that runs ctx's
 * descriptor. A NULL ctx or an act out of range is ignored.
 * @param ctx the policy's context
 * @param act what the policy is doing */
SSTM_API void sstm_cm_note(sstm_cm_ctx_t *ctx, sstm_cm_act_t act);

SSTM_EXTERN_C_END

#endif /* SCHEDSTM_CM_H */
