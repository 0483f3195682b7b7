/* SPDX-License-Identifier: MIT */
/* schedstm tests: counting malloc interposition.
 *
 * Linked into a test binary (malloc_count.c), it replaces malloc and friends
 * with wrappers over glibc's __libc_* entry points, so that the library's
 * own calls (shared or static) are counted too. Under ASan/TSan the
 * sanitizer owns malloc: the same counts come from its allocator's hooks
 * (__sanitizer_install_malloc_and_free_hooks) instead. mc_available() is
 * true in both; a build with neither would say false.
 */
#ifndef SSTM_TEST_MALLOC_COUNT_H
#define SSTM_TEST_MALLOC_COUNT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

bool mc_available(void);

/* Counting window: every allocation call (malloc, calloc, realloc,
 * memalign family) made while enabled, from any thread, is counted. */
void mc_enable(bool on);
uint64_t mc_allocs(void);
uint64_t mc_frees(void);
void mc_reset(void);

/* Tracking: blocks requested with a size in [lo, hi) are remembered until
 * freed. mc_live() is how many such blocks are currently allocated. */
void mc_track_sizes(size_t lo, size_t hi);
long mc_live(void);
long mc_tracked_total(void);

#endif
