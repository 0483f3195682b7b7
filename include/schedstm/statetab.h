/* SPDX-License-Identifier: MIT */
/** @file schedstm/statetab.h
 * @brief Layout of the per-thread state table that schedstm publishes for
 * other processes.
 *
 * The table is [Maldonado10]'s table shared between the STM and the
 * scheduler, in user space: one header (sstm_stt_header_t) followed by one
 * entry (sstm_stt_entry_t) per descriptor slot. A program publishes it when
 * it runs with `cfg.state_table = true` or `SCHEDSTM_STATE_TABLE=1`, from
 * sstm_init() to sstm_shutdown(). Readers are tools (`tools/sstm-top`) and
 * schedulers (docs/design/kernel-scheduler.md); this header is all they
 * need: it declares types and constants only, no function, and a reader
 * does not link the library. It is not part of the umbrella header
 * <schedstm/schedstm.h>, which is for programs that run transactions.
 *
 * @par Where the table is
 * In a sealed memfd of the publishing process, named SSTM_STT_MEMFD_NAME,
 * open for as long as the table is published: a reader lists
 * /proc/PID/fd, picks the entry whose link reads SSTM_STT_FD_LINK and
 * opens it (read-only). The kernel lets only those who may inspect the
 * process do so (same user and a dumpable process, or CAP_SYS_PTRACE); no
 * other user can create, replace or remove the table, and it goes with its
 * process. The memfd carries F_SEAL_SHRINK, F_SEAL_GROW and F_SEAL_SEAL:
 * its size never changes, so a reader that checks F_SEAL_SHRINK
 * (fcntl F_GET_SEALS) before mapping it cannot be hit by SIGBUS; a table
 * without that seal is not one of this version. A program that closes
 * descriptors it did not open (a daemon closing every one) unpublishes its
 * table; the table keeps working, unseen.
 *
 * @par Versions
 * SSTM_STT_VERSION changes whenever the meaning or the place of a field
 * changes; a reader checks sstm_stt_header_t::magic, then version, then
 * header_size and entry_size against its own sizeof and refuses a table
 * whose values differ (the tables of another version are a different
 * format, not a different size of the same one). Version history:
 * 2 added header_size and 64-byte aligned entries; 3 put cm_info under
 * cm_info_seq and stored whole policy and counter names; 4 moved the table
 * from a file in /dev/shm (SSTM_STT_LEGACY_PATH_FMT) into a sealed memfd,
 * with the same bytes; 5 turned the entry's padding word into cpu and
 * appended cpu_pinned (thread mapping, schedstm/map.h); 6 put exec_offset
 * and exec_size into the header's former tail padding and appended the
 * executor's area (sstm_stt_exec_t) after the entries (it moved no field
 * of version 5, so a reader of version 6 read a version-5 table as one
 * without an executor area); 7 widened cm_info from 160 to 384 bytes,
 * which moved the header's later fields and made it 1344 bytes long:
 * adaptive's line, which carries the figures behind its choice, did not
 * fit in 160 and was cut. A reader of version 7 reads no earlier one.
 *
 * @par Writing
 * Each entry is written only by the thread running its descriptor, with
 * plain (relaxed atomic) stores and no system call; the one exception is
 * os_policy/os_nice, which a policy also writes when it gives a loser its
 * priority back (under the loser's priority lock, so the writes of one entry
 * are still ordered). A reader gets per-field values (every field is at
 * most 64 bits, naturally aligned, written by one store: never torn), not a
 * consistent cut across fields. The header is written once at sstm_init()
 * (magic last, with release order: a reader that loads the magic with
 * acquire order and finds SSTM_STT_MAGIC sees the rest of the header),
 * except cm_info and config, which are rewritten under a seqlock.
 *
 * @par Reading cm_info and config (seqlock protocol)
 * -# s1 = load cm_info_seq (acquire). If s1 is odd, a writer is in the
 *    middle: try again.
 * -# Copy config (if wanted) and cm_info, every byte with an acquire load
 *    (or relaxed loads followed by an acquire fence).
 * -# s2 = load cm_info_seq (relaxed). If s2 == s1 the copy is whole;
 *    otherwise try again.
 *
 * A writer stopped in the middle (a process stopped by a signal, or
 * descheduled for long) keeps the number odd: a reader bounds its retries by
 * time, not by a count, and reports the line as being rewritten rather than
 * waiting (`sstm-top` gives up after a few milliseconds).
 *
 * @par Trust
 * A reader must treat the table as untrusted input: validate the header's
 * counts against the size it mapped, once, and use its validated copies
 * afterwards (another process may rewrite the header at any time); bound
 * every string copy (a field need not hold a NUL) and filter what it prints.
 */
#ifndef SCHEDSTM_STATETAB_H
#define SCHEDSTM_STATETAB_H

#include <stdint.h>

/** Value of sstm_stt_header_t::magic once the table is ready ("STTM"). */
#define SSTM_STT_MAGIC 0x4d545453u
/** Layout version in sstm_stt_header_t::version (see "Versions" above). */
#define SSTM_STT_VERSION 7u
/** The oldest version whose header and entries are laid out as this
 * version's (every version from it to SSTM_STT_VERSION only appended). */
#define SSTM_STT_VERSION_COMPAT 7u
/** Name given to memfd_create() for the table. */
#define SSTM_STT_MEMFD_NAME "schedstm-statetab"
/** What readlink() of /proc/PID/fd/N gives for the table's descriptor. */
#define SSTM_STT_FD_LINK "/memfd:" SSTM_STT_MEMFD_NAME " (deleted)"
/** Where versions 1 to 3 put the table of process `pid` (a file of mode
 * 0600 that a killed program left behind). Nothing creates it any more;
 * `sstm-top -c` removes such files once their process has exited. */
#define SSTM_STT_LEGACY_PATH_FMT "/dev/shm/schedstm.%d"
/** Slots of the per-reason arrays (reason_names, aborts_by_reason): at
 * least SSTM_ABORT_REASON_COUNT; sstm_stt_header_t::nreasons are in use. */
#define SSTM_STT_REASONS 16
/** Slots of the policy counter arrays (cm_stat_names, cm_stats), as
 * SSTM_CM_NSTATS; a slot whose name is empty is not used by the policy. */
#define SSTM_STT_CMSTATS 8
/** Slots of sstm_stt_exec_t::level: one per priority level an executor may
 * have (SSTM_EXEC_MAX_LEVELS of schedstm/exec.h). */
#define SSTM_STT_EXEC_LEVELS 64

/** The table's header; the entries start sstm_stt_header_t::header_size
 * bytes after its start, one every sstm_stt_header_t::entry_size bytes.
 * Strings are NUL-padded, but a reader must not rely on a NUL. */
typedef struct sstm_stt_header {
  uint32_t magic;       /**< SSTM_STT_MAGIC once the table is ready (stored last, release) */
  uint32_t version;     /**< SSTM_STT_VERSION */
  uint32_t nentries;    /**< entries that follow: cfg.max_threads */
  uint32_t entry_size;  /**< sizeof(sstm_stt_entry_t) */
  int32_t pid;          /**< the process that writes the table */
  uint32_t nreasons;    /**< abort reasons in use (at most SSTM_STT_REASONS) */
  uint32_t header_size; /**< sizeof(sstm_stt_header_t): the entries start here */
  uint32_t cm_info_seq; /**< seqlock over config and cm_info: odd while they are rewritten */
  uint64_t start_ns;    /**< CLOCK_MONOTONIC at sstm_init(), in nanoseconds */
  char config[320];     /**< sstm_describe() at sstm_init(), without its cm-info part */
  char cm_info[384];    /**< the policy's describe() line now (rewritten at every
                             sstm_cm_info_changed()); ends in "..." when cut
                             (adaptive's line, +ext or not, always fits) */
  char reason_names[SSTM_STT_REASONS][20]; /**< sstm_abort_reason_name() of each reason */
  /** the policy's counter names (sstm_cm_ops_t::stat_names), "" if unused */
  char cm_stat_names[SSTM_STT_CMSTATS][32];
  /** Version 6: where the executor area (sstm_stt_exec_t) starts, in bytes
   * from the table's start (header_size + nentries * entry_size), 0 if the
   * table has none; a reader checks it against what it computes. */
  uint32_t exec_offset;
  uint32_t exec_size; /**< version 6: sizeof(sstm_stt_exec_t), 0 if none */
} __attribute__((aligned(64))) sstm_stt_header_t;

/** One descriptor slot's entry. Counters count since the thread registered
 * (sstm_stats_reset() does not clear them). */
typedef struct sstm_stt_entry {
  uint32_t in_use;        /**< 1 while a thread has the descriptor registered */
  int32_t tid;            /**< its OS thread id */
  uint32_t slot;          /**< descriptor slot (sstm_desc_slot()) */
  uint32_t in_tx;         /**< 1 from an attempt's begin to its commit or rollback
                               (0 while the policy waits or yields after an abort) */
  uint64_t txid;          /**< current (or last) attempt (sstm_txid()) */
  uint64_t commits;       /**< commits since the thread registered */
  uint64_t aborts;        /**< aborts since the thread registered */
  int32_t conflict_tid;   /**< thread id of the winner of the last conflict, 0 if none */
  uint32_t last_reason;   /**< sstm_abort_reason_t of the last abort */
  uint64_t conflict_txid; /**< that winner's attempt */
  uint32_t action;        /**< sstm_cm_act_t: what the policy is doing now */
  int32_t os_policy;      /**< SCHED_* of the thread: read when it registers, then
                               written when the library changes it */
  int32_t os_nice;        /**< its nice value, likewise */
  int32_t cpu;            /**< the CPU the thread was last seen on by the
                               thread mapping (at its registration, a pinning
                               and its samples), -1 unknown; schedstm/map.h */
  uint64_t aborts_by_reason[SSTM_STT_REASONS]; /**< aborts per sstm_abort_reason_t */
  /** the policy's counters (sstm_stats_t::cm_stats, which sstm_stats_reset()
   * clears), copied at every commit and at the start of every retry */
  uint64_t cm_stats[SSTM_STT_CMSTATS];
  char cm[64];        /**< the policy's name (at most 48 characters) */
  int32_t cpu_pinned; /**< the CPU the thread mapping pinned the thread to, -1 none */
  uint32_t pad;       /**< zero */
} __attribute__((aligned(64))) sstm_stt_entry_t;

/** Version 6: one priority level of the executor (schedstm/exec.h), the
 * requests *born* at that level (their submitted priority, whatever
 * promotions followed): the fields of sstm_exec_level_stats_t, the same
 * values, plus the requests in flight. Counters count since the executor
 * was created; times are nanoseconds summed over the requests that ended
 * (divide by `completed` for means). Written with relaxed atomic
 * read-modify-writes by the executor's workers and submitters. */
typedef struct sstm_stt_exec_level {
  uint64_t submitted;         /**< accepted */
  uint64_t completed;         /**< ended (committed, cancelled or failed) */
  uint64_t preemptions;       /**< times one was paused for a higher priority */
  uint64_t promotions;        /**< priority raises (dynamic priority) */
  uint64_t aborts;            /**< aborted attempts (each was retried) */
  uint64_t queue_ns;          /**< submission to first start, summed */
  uint64_t run_ns;            /**< on a worker, aborted attempts included */
  uint64_t paused_ns;         /**< preempted, in the hot list */
  uint64_t turnaround_ns;     /**< submission to end (the reply), summed */
  uint64_t turnaround_max_ns; /**< the longest turnaround */
  uint64_t in_flight;         /**< accepted and not ended, now */
  uint64_t pad;               /**< zero */
} sstm_stt_exec_level_t;

/** Version 6: the executor area, sstm_stt_header_t::exec_offset bytes from
 * the table's start. One executor of the process publishes here at a time
 * (the first one created while the area is free; sstm_exec_describe() says
 * `table=yes`). It fills the configuration fields and zeroes the levels,
 * then stores in_use = 1 with release order: a reader that loads in_use
 * with acquire order and finds 1 sees them. At sstm_exec_destroy() in_use
 * goes back to 0 and the counters stay as they were last. `generation`
 * changes every time an executor starts publishing: a reader that takes
 * rates compares it between two reads. */
typedef struct sstm_stt_exec {
  uint32_t in_use;        /**< 1 while an executor publishes here */
  uint32_t levels;        /**< its levels (at most SSTM_STT_EXEC_LEVELS) */
  uint32_t workers;       /**< worker threads */
  uint32_t contexts;      /**< contexts (NUM_CONTEXTS) */
  uint32_t contexts_busy; /**< contexts holding an accepted request, now */
  uint32_t preempt;       /**< sstm_exec_preempt_t */
  uint32_t tick_us;       /**< periodic tick, 0 off */
  uint32_t c_max;         /**< promotion threshold, 0 never */
  uint32_t lazy;          /**< lazy promotion: 0 or 1 */
  uint32_t pad0;          /**< zero */
  uint64_t generation;    /**< changes when an executor starts publishing */
  char preempt_name[16];  /**< sstm_exec_preempt_name() of preempt */
  /** per birth priority 0..levels-1 (the slots above levels stay zero) */
  sstm_stt_exec_level_t level[SSTM_STT_EXEC_LEVELS] __attribute__((aligned(64)));
} __attribute__((aligned(64))) sstm_stt_exec_t;

#endif /* SCHEDSTM_STATETAB_H */
