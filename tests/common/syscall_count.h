/* SPDX-License-Identifier: MIT */
/* schedstm tests: counting one thread's system calls.
 *
 * sc_attach() installs, on the calling thread only, a seccomp filter that
 * reports each of its system calls to a supervisor thread
 * (SECCOMP_RET_USER_NOTIF), which counts the calls made while counting is
 * enabled, by number, and lets every call proceed unchanged
 * (SECCOMP_USER_NOTIF_FLAG_CONTINUE). The filter stays until the thread
 * ends (a filter cannot be removed): attach on a thread made for the
 * measurement, and let it end (sc_detach then joins the supervisor). Every
 * system call of the attached thread then costs a round trip to the
 * supervisor, enabled or not. Where the kernel refuses the filter
 * (seccomp or user notification unavailable), sc_attach() returns false
 * and nothing is counted. Unlike the trap of tests/integration/syscalls.c
 * (SECCOMP_RET_TRAP, where a trapped call does not run), every call runs,
 * so a window may contain calls the code needs, such as membarrier.
 */
#ifndef SSTM_TEST_SYSCALL_COUNT_H
#define SSTM_TEST_SYSCALL_COUNT_H

#include <stdbool.h>
#include <stdint.h>

/* Start the supervisor (from a thread that is not to be counted: it is the
 * supervisor's parent, and the supervisor must not be filtered). */
void sc_start(void);
/* On the thread to count, after sc_start(): install the filter. */
bool sc_attach(void);
/* Counting window of the attached thread. */
void sc_enable(bool on);
/* Calls counted in the window: all of them, and those of number nr. */
uint64_t sc_calls(void);
uint64_t sc_calls_of(long nr);
/* After the attached thread ended (or never attached): join the supervisor. */
void sc_stop(void);

#endif
