/* SPDX-License-Identifier: MIT */
/** @file
 * The scheduling side. Changing a thread's OS scheduling
 * parameters through schedstm keeps the contention managers that read them
 * (os_prio) informed at once, instead of at their next refresh (at most one
 * scheduling quantum later).
 */
#ifndef SCHEDSTM_SCHED_H
#define SCHEDSTM_SCHED_H

#include <schedstm/common.h>
#include <schedstm/thread.h>

SSTM_EXTERN_C_BEGIN

/** Set the calling thread's scheduling policy (SCHED_OTHER, SCHED_BATCH,
 * SCHED_IDLE with `prio` the nice value -20..19; SCHED_FIFO, SCHED_RR with
 * `prio` the real-time priority 1..99) and tell the contention manager.
 * Makes system calls. Errors: SSTM_EINVAL (bad policy or value), SSTM_EPERM
 * (the kernel refused: privileges or RLIMIT_NICE/RTPRIO; sstm_last_error()
 * has the errno text). Works on unregistered threads too.
 * @param policy SCHED_OTHER, SCHED_BATCH, SCHED_IDLE, SCHED_FIFO or SCHED_RR
 * @param prio the nice value or the real-time priority, as above
 * @return 0, SSTM_EINVAL or SSTM_EPERM */
SSTM_API int sstm_sched_set(int policy, int prio);

/** The OS conflict priority of a descriptor's thread as os_prio computes it
 * (larger = favoured by the OS: RT > OTHER > BATCH > IDLE, then priority).
 * Read now from the thread's attributes (a system call), not from os_prio's
 * per-thread cache, which may be up to one refresh period older. A
 * descriptor with no thread attached yet, or whose thread's attributes
 * cannot be read (it has exited), gets the value of SCHED_OTHER at nice 0,
 * as os_prio treats such a party. -1 (and sstm_last_error) for NULL. Never
 * blocks.
 * @param d a descriptor (sstm_self(), sstm_party_t::desc, ...)
 * @return the priority (>= 0), or -1 for a NULL d */
SSTM_API int sstm_sched_conflict_priority(const sstm_desc_t *d);

SSTM_EXTERN_C_END

#endif /* SCHEDSTM_SCHED_H */
