/* SPDX-License-Identifier: MIT */
/** @file
 * Statistics per descriptor (thread) and aggregated.
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
 *
 * Room to grow: sstm_stats_t starts with its size and fields are only ever
 * appended. sstm_stats_get() and sstm_stats_aggregate() pass the size the
 * program was compiled with, and the library fills that much: a program
 * built against an older, smaller sstm_stats_t keeps working with a newer
 * library, and one built against a newer header finds in `size` how much
 * an older library filled (the rest is zero).
 */
#ifndef SCHEDSTM_STATS_H
#define SCHEDSTM_STATS_H

#include <stdio.h>

#include <schedstm/common.h>

SSTM_EXTERN_C_BEGIN

struct sstm_desc;
struct sstm_config;

/** Tags counted separately in detailed statistics: sstm_attr_t.tag values
 * 0..SSTM_MAX_TAGS-1 (sstm_stats_t.tags). */
#define SSTM_MAX_TAGS 16
/** Policy-defined counters per thread (sstm_stats_t.cm_stats; what they
 * count and how the ext modifier shares them: schedstm/cm.h). */
#define SSTM_CM_NSTATS 8
/** Slots of sstm_stats_t.cm_actions, one per sstm_cm_act_t
 * (SSTM_ACT_COUNT of them are used, schedstm/cm.h). */
#define SSTM_CM_NACTIONS 8

/** Why an attempt ended without commit (sstm_stats_t::aborts, the tx_abort
 * hook, sstm_abort_info_t). */
typedef enum sstm_abort_reason {
  SSTM_ABORT_READ_LOCKED = 0, /**< read met a word locked by another */
  SSTM_ABORT_WRITE_LOCKED,    /**< write met a word locked by another */
  SSTM_ABORT_COMMIT_LOCKED,   /**< CTL commit could not lock its write set */
  SSTM_ABORT_VALIDATE_READ,   /**< snapshot extension failed on a read */
  SSTM_ABORT_VALIDATE_WRITE,  /**< snapshot extension failed on a write */
  SSTM_ABORT_VALIDATE_COMMIT, /**< commit-time validation failed */
  SSTM_ABORT_KILLED,          /**< aborted remotely */
  SSTM_ABORT_RO_WRITE,        /**< write in a transaction declared read-only */
  SSTM_ABORT_RO_EXTEND,       /**< declared read-only, needed its read set */
  SSTM_ABORT_IRREVOCABLE,     /**< restart to become irrevocable, or an
                                 irrevocable transaction blocked the commit
                                 (only the second is a lost conflict in
                                 sstm_cm_ctx_t.conflicts) */
  SSTM_ABORT_USER_RETRY,      /**< sstm_restart() */
  SSTM_ABORT_USER_CANCEL,     /**< sstm_cancel() */
  SSTM_ABORT_REASON_COUNT     /**< number of reasons (the size of
                                 sstm_stats_t::aborts), not a reason */
} sstm_abort_reason_t;

/** Short stable name ("read-locked", ...), or "?" for an invalid value.
 * @param r the reason
 * @return a static string; never NULL */
SSTM_API const char *sstm_abort_reason_name(sstm_abort_reason_t r);

/** Counts of one transaction tag (sstm_attr_t::tag), in detailed
 * statistics. */
typedef struct sstm_tag_stats {
  uint64_t commits; /**< commits of transactions with the tag */
  uint64_t aborts;  /**< aborted attempts of transactions with the tag */
} sstm_tag_stats_t;

/** The counters of one descriptor, or their sum over the process
 * (sstm_stats_get(), sstm_stats_aggregate()). */
typedef struct sstm_stats {
  /** The bytes of this struct that the library filled: at most the
   * caller's sizeof(sstm_stats_t); the fields after them are zero. */
  size_t size;
  uint64_t commits_ro;          /**< read-only commits (declared or detected) */
  uint64_t commits_update;      /**< update commits */
  uint64_t commits_irrevocable; /**< irrevocable commits (also counted in
                                   commits_update or commits_ro) */
  /** aborted attempts, by sstm_abort_reason_t */
  uint64_t aborts[SSTM_ABORT_REASON_COUNT];
  uint64_t aborts_total;                 /**< the sum of aborts[] */
  uint64_t retries;                      /**< restarts (aborts not followed by cancel) */
  uint64_t max_retries;                  /**< most consecutive aborts of one transaction,
                                            committed or cancelled */
  uint64_t cm_waits;                     /**< SSTM_CM_WAIT decisions */
  uint64_t cm_kills;                     /**< successful remote aborts requested by this one
                                            (its policy's, and its sstm_desc_kill calls) */
  uint64_t locks_stolen;                 /**< locks taken over from killed transactions */
  uint64_t extensions;                   /**< successful snapshot extensions */
  uint64_t reads_past;                   /**< reads that passed the lock of a writer
                                            that had not started to commit
                                            (cfg.read_past) */
  uint64_t ro_logged;                    /**< declared read-only transactions whose
                                            first attempt kept a read set
                                            (cfg.ro_log) */
  uint64_t cm_wait_ns;                   /**< time in the policy's on_abort and WAIT spins */
  uint64_t cm_stats[SSTM_CM_NSTATS];     /**< policy-defined counters (ops->stat_names) */
  uint64_t cm_actions[SSTM_CM_NACTIONS]; /**< sstm_cm_note() calls per sstm_cm_act_t */
  /** @name Detailed only (zero otherwise)
   * Set sizes count log entries, in
   * different units: a read-set entry is one logged load (repeated loads of
   * a word log again; loads of stripes the attempt itself has locked, and
   * every load of a read-only attempt without a read set, log nothing); a write-set
   * entry is one distinct 8-byte word written (sub-word stores to one word
   * share its entry).
   * @{ */
  uint64_t reads_total;  /**< sum of read-set sizes of committed attempts */
  uint64_t writes_total; /**< sum of write-set sizes of committed attempts */
  uint64_t reads_max;    /**< largest read set of a committed attempt */
  uint64_t writes_max;   /**< largest write set of a committed attempt */
  /** per tag (sstm_attr_t::tag < SSTM_MAX_TAGS) */
  sstm_tag_stats_t tags[SSTM_MAX_TAGS];
  /** @} */
  /* identity (per-descriptor stats only) */
  unsigned slot; /**< identity (per-descriptor stats only): the descriptor's slot */
  int tid;       /**< identity (per-descriptor stats only): its thread's OS id */
} sstm_stats_t;

/** Counters of one descriptor into the first `size` bytes of *out:
 * sizeof(sstm_stats_t) as the caller was compiled, which sstm_stats_get()
 * passes. Errors: SSTM_EINVAL (NULL, or a size smaller than any
 * sstm_stats_t this library knows; sstm_last_error() says which).
 * @param d the descriptor
 * @param[out] out receives the counters
 * @param size sizeof(sstm_stats_t) as the caller sees it
 * @return 0 or SSTM_EINVAL */
SSTM_API int sstm_stats_get_sized(const struct sstm_desc *d, sstm_stats_t *out, size_t size);

/** Counters of one descriptor. Errors: SSTM_EINVAL (NULL).
 * @param d the descriptor
 * @param[out] out receives the counters
 * @return 0 or SSTM_EINVAL */
static inline int sstm_stats_get(const struct sstm_desc *d, sstm_stats_t *out) {
  return sstm_stats_get_sized(d, out, sizeof *out);
}

/** Sum over every live descriptor plus those of exited threads (max fields
 * are maxima), into the first `size` bytes of *out (as
 * sstm_stats_get_sized()). Errors: SSTM_EINVAL (out NULL, or a size
 * smaller than any sstm_stats_t this library knows), SSTM_ESTATE (not
 * initialised).
 * @param[out] out receives the totals
 * @param size sizeof(sstm_stats_t) as the caller sees it
 * @return 0, SSTM_EINVAL or SSTM_ESTATE */
SSTM_API int sstm_stats_aggregate_sized(sstm_stats_t *out, size_t size);

/** Sum over every live descriptor plus those of exited threads (max fields
 * are maxima). Errors: SSTM_EINVAL (out NULL), SSTM_ESTATE (not
 * initialised).
 * @param[out] out receives the totals
 * @return 0, SSTM_EINVAL or SSTM_ESTATE */
static inline int sstm_stats_aggregate(sstm_stats_t *out) {
  return sstm_stats_aggregate_sized(out, sizeof *out);
}

/** Call fn once per live descriptor with its counters (an sstm_stats_t of
 * this library's size, s->size: a caller built against a newer header
 * reads only that much), as they were when the call began (copied under the registry lock, which is
 * released before the first call of fn, so fn may call any schedstm function). Returns the number
 * of descriptors visited, SSTM_EINVAL (fn NULL), SSTM_ENOMEM or SSTM_ESTATE.
 * @param fn called with each descriptor's counters and arg
 * @param arg passed to fn
 * @return the number of descriptors visited, SSTM_EINVAL, SSTM_ENOMEM or
 *         SSTM_ESTATE */
SSTM_API int sstm_stats_foreach(void (*fn)(const sstm_stats_t *s, void *arg), void *arg);

/** Zero the counters of every live descriptor and the exited-thread totals
 * (not the state table's, which count since each thread registered).
 * Racy against running transactions by design (a counter being incremented
 * may keep one increment). Takes the registry lock. Returns 0, or
 * SSTM_ESTATE (not initialised).
 * @return 0 or SSTM_ESTATE */
SSTM_API int sstm_stats_reset(void);

/** Human-readable dump: per-thread lines and the total, with every non-zero
 * abort reason and the policy's counters, then a line on the policy as it
 * describes itself now (sstm_describe's cm-info: the OS lever in use,
 * adaptive's current choice and the reason for it), for a policy that has
 * a describe hook, then flushes the stream. Returns 0, SSTM_EINVAL (out
 * NULL), SSTM_ESTATE, or SSTM_EPERM when writing or flushing failed (a
 * full disk, a stream not open for writing; an error indicator the
 * stream had before the call does not count), the reason in
 * sstm_last_error().
 * @param out the stream to write to
 * @return 0, SSTM_EINVAL, SSTM_ESTATE or SSTM_EPERM */
SSTM_API int sstm_stats_dump(FILE *out);

SSTM_EXTERN_C_END

#endif /* SCHEDSTM_STATS_H */
