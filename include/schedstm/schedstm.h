/* SPDX-License-Identifier: MIT */
/** @file
 * The umbrella header: includes every public header. A scheduling-aware
 * software transactional memory for Linux. See docs/architecture.md.
 *
 * fork(): as with most libraries that use threads and locks, the child of a
 * process that has run sstm_init() may only call async-signal-safe functions
 * until it execs; schedstm functions are not among them (a lock held by
 * another thread of the parent at the fork stays held in the child). What
 * the library guarantees is that the parent is unharmed: the child's
 * transactions, if it runs any anyway, are not counted in the parent's state
 * table, and the child never removes the parent's table file.
 *
 * Signals: the library installs no signal handler and sends no signal (a
 * remote abort is a flag the victim reads at its next barrier), except
 * while an executor exists (schedstm/exec.h): it handles SIGURG (passing
 * on to the program's own handler the SIGURGs that do not reach one of
 * its workers) and signals its workers with it. Its
 * functions are not async-signal-safe. A handler that interrupts a thread
 * inside a transaction must not call them: a transaction started there
 * would join the interrupted one as a flat-nested part, in the middle of
 * one of its barriers. */
#ifndef SCHEDSTM_H
#define SCHEDSTM_H

#include <schedstm/access.h>
#include <schedstm/alloc.h>
#include <schedstm/cm.h>
#include <schedstm/common.h>
#include <schedstm/config.h>
#include <schedstm/exec.h>
#include <schedstm/generic.h>
#include <schedstm/hooks.h>
#include <schedstm/inline.h>
#include <schedstm/map.h>
#include <schedstm/sched.h>
#include <schedstm/stats.h>
#include <schedstm/stdio.h>
#include <schedstm/thread.h>
#include <schedstm/tx.h>

#endif /* SCHEDSTM_H */
