/* SPDX-License-Identifier: MIT */
/* Communication detection of [Pasqualin20] (its Algorithm 1 and Equation 1):
 * an address table that keeps the last two threads to access each sampled
 * address, and a symmetric communication matrix per pair of threads. Plain
 * data structures with no engine types, so that tests drive them with
 * access streams of their own (tests/internal/map_detect.c).
 *
 * Concurrency: any number of threads call sstm__map_detect_access() at
 * once with no lock. The table is open-addressed with linear probing and
 * never deletes: a slot's key goes once from 0 to an address and stays;
 * the sharers of that address are one 64-bit word updated by
 * compare-and-swap, so every access is one atomic step of Algorithm 1 on
 * its address, and the events it counts are those of that step.
 *
 * Bounded memory: 2^bits slots. When an address finds no slot within
 * SSTM_MAP_PROBE probes (the table is full, or that neighbourhood is), it
 * is not tracked: its access counts no event and sstm__map_table_dropped()
 * grows. The number of distinct addresses the heuristic uses is then
 * "at least the slots in use", which is why the default table (2^16) is
 * larger than the default threshold (10 000): the heuristic's answer is
 * exact up to the threshold whatever the table holds beyond it.
 */
#ifndef SSTM_MAP_DETECT_H
#define SSTM_MAP_DETECT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Probes of one lookup before an address is dropped. */
#define SSTM_MAP_PROBE 32u
/* Largest thread index the state word holds (16 bits, minus "none"). */
#define SSTM_MAP_TID_MAX 0xfffeu

typedef struct sstm_map_detect {
  _Atomic uint64_t *keys;   /* address >> 3 + 1 per slot; 0 = free */
  _Atomic uint64_t *state;  /* the slot's sharers (detect.c, state word) */
  uint64_t mask;            /* slots - 1 */
  unsigned order;           /* threads the matrix has rows for: [0, order) */
  _Atomic uint64_t *matrix; /* order x order, upper triangle i < j used */
  _Atomic uint64_t used;    /* slots taken */
  _Atomic uint64_t dropped; /* accesses of addresses that found no slot */
  _Atomic uint64_t events;  /* communication events counted */
} sstm_map_detect_t;

/* Allocate a table of 2^bits slots and an order x order matrix, all zero
 * (anonymous mappings: untouched pages cost nothing). 0, or -1 with errno
 * (ENOMEM, EINVAL for bits outside 4..30 or an order outside
 * 1..SSTM_MAP_TID_MAX+1). */
int sstm__map_detect_init(sstm_map_detect_t *d, unsigned bits, unsigned order);
/* Release what init allocated; *d is then zero. */
void sstm__map_detect_fini(sstm_map_detect_t *d);

/* Algorithm 1 of [Pasqualin20] for an access of thread `tid` to `addr`:
 * with the address's last two sharers t1 (most recent) and t2, count a
 * communication event between tid and each of them that differs from tid,
 * then make tid the most recent (a repeated access by t1 counts its event
 * with t2, changing nothing). Accesses with tid >= order, and those of an
 * address the table cannot hold, count nothing. Addresses are taken per
 * 8-byte word (the engine's unit of access). Lock-free. */
void sstm__map_detect_access(sstm_map_detect_t *d, const void *addr, unsigned tid);

/* The matrix entry of the pair (i, j), symmetric; 0 for i == j or an index
 * >= order. A relaxed read: a value, not a cut across entries. */
uint64_t sstm__map_matrix_get(const sstm_map_detect_t *d, unsigned i, unsigned j);
/* Zero the cells of the pairs (t, o) for every o < n (t left; a newcomer
 * reusing its index starts clean; n: 1 + the highest index any thread was
 * given, beyond which every cell is still 0, untouched). Racy against
 * concurrent events of t's pairs by design: an event counted meanwhile may
 * stay. */
void sstm__map_matrix_clear(sstm_map_detect_t *d, unsigned t, unsigned n);

/* Distinct addresses in the table, and accesses that found no slot. */
uint64_t sstm__map_table_used(const sstm_map_detect_t *d);
uint64_t sstm__map_table_dropped(const sstm_map_detect_t *d);
uint64_t sstm__map_events(const sstm_map_detect_t *d);

/* Equation 1 of [Pasqualin20]: whether sharing-aware mapping is on, from
 * the distinct addresses `da` (with `da_exact` false when the table
 * dropped addresses: da is then a lower bound), and the aborts and commits
 * of the window evaluated. On when da < threshold; otherwise when the
 * commit ratio is below the abort ratio, i.e. aborts > commits. A window
 * with neither commits nor aborts, past the threshold, is off. */
bool sstm__map_enable(uint64_t da, bool da_exact, uint64_t threshold, uint64_t aborts,
                      uint64_t commits);

#endif /* SSTM_MAP_DETECT_H */
