/* schedstm: statistics per descriptor (thread) and aggregated.
 *
 * Basic counters (commits, aborts by reason, retries) are always kept: each
 * is one increment of a descriptor-private counter on a path that already
 * touches that cache line. Detailed statistics (set sizes, per-tag
 * profiles) cost a few more instructions per commit and are off unless
 * cfg.stats = SSTM_STATS_DETAILED.
 *
 * Counters are written by the descriptor's thread only and read by others
 * with relaxed atomic loads: a snapshot taken while transactions run is
 * per-counter exact but not a consistent cut across counters.
 */
#ifndef SCHEDSTM_STATS_H
#define SCHEDSTM_STATS_H

#include <stdio.h>

#include <schedstm/common.h>

SSTM_EXTERN_C_BEGIN

struct sstm_desc;
struct sstm_config;

typedef enum sstm_abort_reason {
  SSTM_ABORT_READ_LOCKED = 0, /* read met a word locked by another */
  SSTM_ABORT_WRITE_LOCKED,    /* write met a word locked by another */
  SSTM_ABORT_COMMIT_LOCKED,   /* CTL commit could not lock its write set */
  SSTM_ABORT_VALIDATE_READ,   /* snapshot extension failed on a read */
  SSTM_ABORT_VALIDATE_WRITE,  /* snapshot extension failed on a write */
  SSTM_ABORT_VALIDATE_COMMIT, /* commit-time validation failed */
  SSTM_ABORT_KILLED,          /* aborted remotely */
  SSTM_ABORT_RO_WRITE,        /* write in a transaction declared read-only */
  SSTM_ABORT_RO_EXTEND,       /* declared read-only, needed its read set */
  SSTM_ABORT_IRREVOCABLE,     /* restart to become irrevocable, or an
                                 irrevocable transaction blocked the commit */
  SSTM_ABORT_USER_RETRY,      /* sstm_restart() */
  SSTM_ABORT_USER_CANCEL,     /* sstm_cancel() */
  SSTM_ABORT_REASON_COUNT
} sstm_abort_reason_t;

/* Short stable name ("read-locked", ...), or "?" for an invalid value. */
SSTM_API const char *sstm_abort_reason_name(sstm_abort_reason_t r);

typedef struct sstm_tag_stats {
  uint64_t commits;
  uint64_t aborts;
} sstm_tag_stats_t;

typedef struct sstm_stats {
  uint64_t commits_ro;          /* read-only commits (declared or detected) */
  uint64_t commits_update;      /* update commits */
  uint64_t commits_irrevocable; /* irrevocable commits (also counted in
                                   commits_update or commits_ro) */
  uint64_t aborts[SSTM_ABORT_REASON_COUNT];
  uint64_t aborts_total;
  uint64_t retries;       /* restarts (aborts not followed by cancel) */
  uint64_t max_retries;   /* most consecutive aborts of one transaction,
                             committed or cancelled */
  uint64_t cm_waits;      /* SSTM_CM_WAIT decisions */
  uint64_t cm_kills;      /* successful remote aborts requested by this one */
  uint64_t locks_stolen;  /* locks taken over from killed transactions */
  uint64_t extensions;    /* successful snapshot extensions */
  uint64_t cm_wait_ns;    /* time in the policy's on_abort and WAIT spins */
  uint64_t cm_stats[8];   /* policy-defined counters (ops->stat_names, SSTM_CM_NSTATS) */
  uint64_t cm_actions[8]; /* sstm_cm_note() calls per sstm_cm_act_t */
  /* detailed only (zero otherwise) */
  uint64_t reads_total;  /* sum of read-set sizes of committed attempts */
  uint64_t writes_total; /* sum of write-set sizes of committed attempts */
  uint64_t reads_max;
  uint64_t writes_max;
  sstm_tag_stats_t tags[16];
  /* identity (per-descriptor stats only) */
  unsigned slot;
  int tid;
} sstm_stats_t;

/* Counters of one descriptor. Errors: SSTM_EINVAL (NULL). */
SSTM_API int sstm_stats_get(const struct sstm_desc *d, sstm_stats_t *out);

/* Sum over every live descriptor plus those of exited threads (max fields
 * are maxima). Errors: SSTM_EINVAL (out NULL), SSTM_ESTATE (not
 * initialised). */
SSTM_API int sstm_stats_aggregate(sstm_stats_t *out);

/* Call fn once per live descriptor with its counters, as they were when
 * the call began (copied under the registry lock, which is released before
 * the first call of fn, so fn may call any schedstm function). Returns the
 * number of descriptors visited, SSTM_EINVAL (fn NULL), SSTM_ENOMEM or
 * SSTM_ESTATE. */
SSTM_API int sstm_stats_foreach(void (*fn)(const sstm_stats_t *s, void *arg), void *arg);

/* Zero the counters of every live descriptor and the exited-thread totals
 * (not the state table's, which count since each thread registered).
 * Racy against running transactions by design (a counter being incremented
 * may keep one increment). */
SSTM_API int sstm_stats_reset(void);

/* Human-readable dump: per-thread lines and the total, with every non-zero
 * abort reason. Returns 0, SSTM_EINVAL (out NULL) or SSTM_ESTATE. */
SSTM_API int sstm_stats_dump(FILE *out);

SSTM_EXTERN_C_END

#endif /* SCHEDSTM_STATS_H */
