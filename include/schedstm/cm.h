/* schedstm: the contention-management interface.
 *
 * Mechanism (the engine) is separate from policy (a contention manager). A
 * policy is a small table of hooks, selected by name at sstm_init() (config
 * field cm or SCHEDSTM_CM). The engine reports every conflict it meets to
 * on_conflict() with the kind of conflict and, when known, the other party;
 * the policy answers with an action:
 *
 *   SSTM_CM_ABORT_SELF   roll back; on_abort() then runs before the restart
 *                        and may wait, yield, sleep or change priority;
 *   SSTM_CM_ABORT_OTHER  request a remote abort of the other party and retry
 *                        the access (the engine takes over the killed
 *                        party's lock); if the other party cannot be aborted
 *                        (committing, irrevocable) this behaves as WAIT;
 *   SSTM_CM_WAIT         spin for *wait_ns (bounded by the engine), then
 *                        retry the access; after cfg.wait_max consecutive
 *                        WAITs on one access the engine aborts self.
 *
 * Conflicts without another party (failed validation, killed) always abort
 * self; on_conflict is still called so that the policy sees them.
 *
 * Hooks run on the transaction's thread. on_begin/on_commit are on the hot
 * path: leave them NULL unless needed. No hook may start a transaction.
 */
#ifndef SCHEDSTM_CM_H
#define SCHEDSTM_CM_H

#include <schedstm/common.h>
#include <schedstm/stats.h>
#include <schedstm/thread.h>

SSTM_EXTERN_C_BEGIN

typedef enum sstm_conflict_kind {
  SSTM_CONFLICT_READ_LOCKED = 0,  /* read of a word write-locked by another */
  SSTM_CONFLICT_WRITE_LOCKED = 1, /* write/write: lock owned by another */
  SSTM_CONFLICT_COMMIT_LOCKED = 2,/* commit-time lock acquisition (CTL) */
  SSTM_CONFLICT_VALIDATION = 3,   /* read set no longer valid */
  SSTM_CONFLICT_KILLED = 4,       /* aborted remotely by another thread */
  SSTM_CONFLICT_IRREVOCABLE = 5,  /* an irrevocable transaction is running */
} sstm_conflict_kind_t;

/* Snapshot of the other party, taken without synchronisation: the values
 * are consistent enough for a decision, not exact. */
typedef struct sstm_party {
  sstm_desc_t *desc;     /* its descriptor (never freed while the library is
                            initialised, so always safe to pass back) */
  unsigned slot;         /* descriptor slot */
  int tid;               /* OS thread id last attached, 0 if unknown */
  uint64_t txid;         /* the attempt that owns the lock */
  uint64_t start;        /* its attempt's start timestamp (global clock) */
  uint64_t birth;        /* start timestamp of its transaction's first
                            attempt: the age used by timestamp policies */
  uint32_t reads;        /* read-set size */
  uint32_t writes;       /* write-set size */
  int priority;          /* sstm_attr_t priority */
  bool committing;       /* committing or irrevocable: cannot be aborted */
} sstm_party_t;

typedef struct sstm_conflict {
  sstm_conflict_kind_t kind;
  const void *addr;      /* address being accessed, NULL if none */
  bool has_other;        /* other is filled in */
  sstm_party_t other;
  unsigned attempt;      /* consecutive WAITs already done for this access */
} sstm_conflict_t;

typedef enum sstm_cm_action {
  SSTM_CM_ABORT_SELF = 0,
  SSTM_CM_ABORT_OTHER = 1,
  SSTM_CM_WAIT = 2,
} sstm_cm_action_t;

/* What a policy sees of its own transaction. */
typedef struct sstm_cm_ctx {
  void *state;           /* state_size bytes of per-descriptor policy state,
                            zeroed when the descriptor is created */
  sstm_desc_t *desc;     /* own descriptor */
  unsigned retries;      /* aborts so far of the current transaction */
  uint64_t txid;         /* current attempt */
  uint64_t start;        /* current attempt's start timestamp */
  uint64_t birth;        /* start timestamp of the first attempt */
  uint32_t reads, writes;/* current set sizes */
  int priority;          /* sstm_attr_t priority */
} sstm_cm_ctx_t;

/* Why an attempt ended without commit. Counted per thread. */
typedef struct sstm_abort_info {
  sstm_abort_reason_t reason;
  bool has_other;
  sstm_party_t other;    /* the winner, when known */
} sstm_abort_info_t;

typedef struct sstm_cm_ops {
  const char *name;        /* selection key, [a-z0-9+_-], unique */
  const char *description; /* one line */
  size_t state_size;       /* per-descriptor state bytes (may be 0) */
  /* Called once by sstm_init() after the configuration is final; a non-zero
   * return fails sstm_init() with that code. Optional. */
  int (*init)(const struct sstm_config *cfg);
  void (*fini)(void);                              /* optional */
  void (*desc_init)(sstm_cm_ctx_t *ctx);           /* optional */
  void (*desc_fini)(sstm_cm_ctx_t *ctx);           /* optional */
  void (*on_begin)(sstm_cm_ctx_t *ctx);            /* optional, hot path */
  void (*on_commit)(sstm_cm_ctx_t *ctx);           /* optional, hot path */
  /* Required. *wait_ns is preset to 0; set it for SSTM_CM_WAIT. */
  sstm_cm_action_t (*on_conflict)(sstm_cm_ctx_t *ctx, const sstm_conflict_t *c,
                                  uint64_t *wait_ns);
  /* After rollback, before restart. May block. Optional. */
  void (*on_abort)(sstm_cm_ctx_t *ctx, const sstm_abort_info_t *info);
} sstm_cm_ops_t;

/* Register a policy so that sstm_init() can select it by name. The table must
 * stay valid until the process exits. Callable before or after sstm_init();
 * a policy registered after init is used by the next init.
 * Errors: SSTM_EINVAL (missing name/on_conflict, bad name), SSTM_EBUSY (name
 * taken), SSTM_ELIMIT (table full). */
SSTM_API int sstm_cm_register(const sstm_cm_ops_t *ops);

/* Look up a registered policy by name; NULL if unknown. */
SSTM_API const sstm_cm_ops_t *sstm_cm_find(const char *name);

/* Names of the registered policies, comma-separated (for messages). */
SSTM_API int sstm_cm_list(char *buf, size_t len);

/* The policy in use (NULL before init). */
SSTM_API const sstm_cm_ops_t *sstm_cm_current(void);

/* True while the party's attempt (p->txid) has not ended (committed or
 * aborted). Lock-free, no system call: for policies that wait for a winner. */
SSTM_API bool sstm_party_running(const sstm_party_t *p);

/* Policy helper: busy-wait about ns nanoseconds (pause loop on the monotonic
 * clock, no system call). */
SSTM_API void sstm_spin_ns(uint64_t ns);

SSTM_EXTERN_C_END

#endif /* SCHEDSTM_CM_H */
