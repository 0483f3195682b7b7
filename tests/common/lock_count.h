/* SPDX-License-Identifier: MIT */
/* schedstm tests: counting pthread lock interposition.
 *
 * Linked into a test binary (lock_count.c), it replaces pthread_mutex_lock,
 * pthread_mutex_trylock and pthread_spin_lock (the library's only lock
 * type is the mutex; glibc does not export rwlock entry points a wrapper
 * could forward to) with wrappers that count the
 * calls made while counting is enabled, then forward to glibc. The library's
 * calls bind to the wrappers whether it is linked statically or shared (an
 * executable's definition interposes). Under ASan/TSan the sanitizer owns
 * these entry points: nothing is interposed and lc_available() is false.
 */
#ifndef SSTM_TEST_LOCK_COUNT_H
#define SSTM_TEST_LOCK_COUNT_H

#include <stdbool.h>
#include <stdint.h>

bool lc_available(void);
/* Counting window: lock calls from any thread while enabled. */
void lc_enable(bool on);
uint64_t lc_locks(void);
void lc_reset(void);

#endif
