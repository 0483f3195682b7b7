/* SPDX-License-Identifier: MIT */
/* Layout of the per-thread state table that schedstm publishes for other
 * processes ([Maldonado10]'s table shared between the STM and the scheduler,
 * in user space): a file /dev/shm/schedstm.<pid>, mode 0600, one header and
 * one entry per descriptor slot. Shared by the library (writer) and the
 * tools/sstm-top reader; a kernel-side scheduler would read the same layout
 * (docs/design/kernel-scheduler.md).
 *
 * Writing: each entry is written only by the thread running its descriptor,
 * with plain (relaxed atomic) stores, no system call; the one exception is
 * os_policy/os_nice, which softser also writes when a winner restores a
 * loser's priority (under the loser's priority lock, so the writes of one
 * entry are still ordered). The header's cm_info is rewritten whenever the
 * policy reports a change (sstm_cm_info_changed: adaptive's choice and
 * reason), under a seqlock so that a reader never takes a half-written line
 * for the current one. commits, aborts and aborts_by_reason count since
 * the thread registered; sstm_stats_reset() does not clear them. cm_stats
 * is a copy of the statistics' policy counters (which sstm_stats_reset()
 * clears), taken at every commit and at the start of every retry. in_tx is
 * 1 from an attempt's begin to its commit or rollback, so it is 0 while a
 * policy waits or yields after an abort. Readers get per-field
 * values (64-bit fields are single stores, so never torn), not a consistent
 * cut across fields.
 *
 * The file is allocated whole at sstm_init (posix_fallocate: no page of it
 * can fault for want of space in /dev/shm later), and only the process that
 * created it writes to it and removes it: in a child of fork() the mapping
 * is replaced by private memory (pthread_atfork), so the child's commits do
 * not count in its parent's entries and its sstm_shutdown leaves the file.
 */
#ifndef SSTM_OS_STATETAB_H
#define SSTM_OS_STATETAB_H

#include <stdint.h>

#define SSTM_STT_MAGIC 0x4d545453u /* "STTM" */
#define SSTM_STT_VERSION                                                                           \
  3u /* 2: header_size, 64-byte aligned entries;                                                   \
        3: cm_info under cm_info_seq, whole policy                                                 \
        and counter names */
#define SSTM_STT_PATH_FMT "/dev/shm/schedstm.%d"
#define SSTM_STT_REASONS 16
#define SSTM_STT_CMSTATS 8

typedef struct sstm_stt_header {
  uint32_t magic;      /* SSTM_STT_MAGIC once the table is ready */
  uint32_t version;    /* SSTM_STT_VERSION */
  uint32_t nentries;   /* entries that follow */
  uint32_t entry_size; /* sizeof(sstm_stt_entry_t) */
  int32_t pid;
  uint32_t nreasons;    /* abort reasons in use (<= SSTM_STT_REASONS) */
  uint32_t header_size; /* sizeof(sstm_stt_header_t): entries start here */
  uint32_t cm_info_seq; /* seqlock over cm_info: odd while it is rewritten */
  uint64_t start_ns;    /* CLOCK_MONOTONIC at sstm_init */
  char config[320];     /* sstm_describe() at init, without its cm-info
                           (written under cm_info_seq too) */
  char cm_info[160];    /* the policy's describe() now (sstm_cm_info_changed);
                           read it between two equal even cm_info_seq values */
  char reason_names[SSTM_STT_REASONS][20];
  char cm_stat_names[SSTM_STT_CMSTATS][32];       /* sstm_cm_ops_t.stat_names */
} __attribute__((aligned(64))) sstm_stt_header_t; /* entries follow, 64-aligned */

typedef struct sstm_stt_entry {
  uint32_t in_use; /* descriptor registered */
  int32_t tid;     /* OS thread id */
  uint32_t slot;
  uint32_t in_tx; /* 1 while an attempt runs (0 while the policy waits) */
  uint64_t txid;  /* current (or last) attempt */
  uint64_t commits;
  uint64_t aborts;
  int32_t conflict_tid;   /* winner of the last conflict, 0 if none */
  uint32_t last_reason;   /* sstm_abort_reason_t of the last abort */
  uint64_t conflict_txid; /* its attempt */
  uint32_t action;        /* sstm_cm_act_t: what the policy is doing */
  int32_t os_policy;      /* SCHED_* of the thread: read at attach, then
                             written when the library changes it (softser,
                             os_prio's refresh, sstm_sched_set) */
  int32_t os_nice;
  uint32_t pad;
  uint64_t aborts_by_reason[SSTM_STT_REASONS];
  uint64_t cm_stats[SSTM_STT_CMSTATS];
  char cm[64]; /* policy name (at most 48 characters) */
} __attribute__((aligned(64))) sstm_stt_entry_t;

#endif /* SSTM_OS_STATETAB_H */
