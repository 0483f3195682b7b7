/* SPDX-License-Identifier: MIT */
/* Ownership records (versioned locks), the global clock and the descriptor
 * status word: their bit layouts and the pure functions that encode and
 * decode them. No memory ordering here: callers own the atomic accesses.
 *
 * Lock word (one per stripe of 2^stripe_shift bytes, in a table indexed by
 * address hash):
 *
 *   unlocked:  [ 0 | version : 63                        ]
 *   locked:    [ 1 | owner serial : 48 | owner slot : 15 ]
 *
 * The version is the commit timestamp of the last transaction that wrote the
 * stripe. The lock bit is the top bit, so an unlocked word is its version
 * and every locked word is larger than every version: "unlocked, with a
 * version the snapshot covers" is the single unsigned comparison
 * l <= end, which the read fast path uses (include/schedstm/fastpath.h). A locked word names the
 * owning attempt by descriptor slot and the low 48 bits of the attempt serial, not by a pointer
 * into its write set: this lets any thread decide from the lock word alone whether the owner is a
 * given attempt (see the lock take-over of killed transactions, core.md (6.4)); an attempt is
 * identified uniquely as long as a thread observing a lock word does not stall for 2^48
 * transactions of the owner.
 *
 * Clock word:  [ time : 63 | irrevocable flag : 1 ]
 *   time advances by one per update commit (fetch_add of 2); the flag is set
 *   while an irrevocable transaction runs.
 *
 * Status word of a descriptor:  [ serial : 56 | sleepers : 1 | watched : 1 | 0 : 3 | state : 3 ]
 *   serial grows by one per attempt (restarts included); state is one of
 *   SSTM_ST_*. The word changes at every begin, so "status differs from a
 *   recorded ACTIVE value" means "that attempt has ended" (reclamation).
 *   watched and sleepers are set by other threads (CAS, while the attempt
 *   runs and is not committing) to ask its end to report to the policy
 *   (watched) or to wake futex sleepers (sleepers); the attempt reads them
 *   with the RMW that ends it as a running attempt (COMMITTING CAS, or the
 *   exchange in rollback/irrevocable commit), after which they cannot be
 *   set, so an end with nobody waiting needs no extra atomic and no system
 *   call. Futex sleepers wait on the low 32 bits of the word, which change
 *   at every transition.
 */
#ifndef SSTM_CORE_LOCKWORD_H
#define SSTM_CORE_LOCKWORD_H

#include <stdbool.h>
#include <stdint.h>

#define SSTM_LW_LOCKED (1ull << 63)
#define SSTM_LW_SLOT_SHIFT 0
#define SSTM_LW_SLOT_BITS 15
#define SSTM_LW_SLOT_MASK ((1ull << SSTM_LW_SLOT_BITS) - 1)
#define SSTM_LW_SERIAL_SHIFT 15
#define SSTM_LW_SERIAL_MASK ((1ull << 48) - 1)
#define SSTM_MAX_SLOTS ((unsigned)SSTM_LW_SLOT_MASK) /* 32767 */
/* A descriptor's first serial is its slot shifted by this (registry.c,
 * desc_new): 15 slot bits + 40 fit the status word's 56 serial bits. */
#define SSTM_SERIAL_SLOT_SHIFT 40
_Static_assert(SSTM_LW_SLOT_BITS + SSTM_SERIAL_SLOT_SHIFT <= 56,
               "a slot's first serial must fit the status word's serial bits");

#define SSTM_CLOCK_IRREV 1ull
#define SSTM_CLOCK_TICK 2ull

enum sstm_state {
  SSTM_ST_IDLE = 0,        /* no attempt running */
  SSTM_ST_ACTIVE = 1,      /* running, may be killed */
  SSTM_ST_KILLED = 2,      /* running, can no longer commit; locks may be taken over */
  SSTM_ST_COMMITTING = 3,  /* committing: cannot be killed */
  SSTM_ST_IRREVOCABLE = 4, /* irrevocable: cannot be killed */
};

static inline bool sstm_lw_locked(uint64_t l) { return (l & SSTM_LW_LOCKED) != 0; }
static inline uint64_t sstm_lw_version(uint64_t l) { return l; }
static inline uint64_t sstm_lw_make_version(uint64_t ts) { return ts; }
static inline unsigned sstm_lw_slot(uint64_t l) {
  return (unsigned)((l >> SSTM_LW_SLOT_SHIFT) & SSTM_LW_SLOT_MASK);
}
static inline uint64_t sstm_lw_serial(uint64_t l) {
  return (l >> SSTM_LW_SERIAL_SHIFT) & SSTM_LW_SERIAL_MASK;
}
static inline uint64_t sstm_lw_make_owner(unsigned slot, uint64_t serial) {
  return ((serial & SSTM_LW_SERIAL_MASK) << SSTM_LW_SERIAL_SHIFT) |
         ((uint64_t)slot << SSTM_LW_SLOT_SHIFT) | SSTM_LW_LOCKED;
}

static inline uint64_t sstm_clock_time(uint64_t c) { return c >> 1; }
static inline bool sstm_clock_irrevocable(uint64_t c) { return (c & SSTM_CLOCK_IRREV) != 0; }

#define SSTM_ST_STATE_MASK 0x7ull
#define SSTM_ST_WATCHED 0x40ull
#define SSTM_ST_SLEEPERS 0x80ull
#define SSTM_ST_FLAGS (SSTM_ST_WATCHED | SSTM_ST_SLEEPERS)

static inline uint64_t sstm_st_make(uint64_t serial, enum sstm_state s) {
  return (serial << 8) | (uint64_t)s;
}
static inline enum sstm_state sstm_st_state(uint64_t st) {
  return (enum sstm_state)(st & SSTM_ST_STATE_MASK);
}
/* Same attempt and flags, another state. */
static inline uint64_t sstm_st_with_state(uint64_t st, enum sstm_state s) {
  return (st & ~SSTM_ST_STATE_MASK) | (uint64_t)s;
}
static inline uint64_t sstm_st_serial(uint64_t st) { return st >> 8; }
/* The status of the next attempt, ACTIVE: serial + 1, no flags, from the
 * IDLE status st that the last attempt's end stored. One addition: that
 * low byte is IDLE without flags, as every end of an attempt stores it
 * (sstm_st_make, or sstm_st_with_state of a running status without flags),
 * and nobody else changes an IDLE status (watchers and sleepers set their
 * flags by CAS from a running state, sstm__kill from ACTIVE). */
static inline uint64_t sstm_st_next_active(uint64_t st) {
  return st + (1ull << 8) + (uint64_t)SSTM_ST_ACTIVE;
}
/* Does lock word l belong to the attempt described by status st? */
static inline bool sstm_st_owns(uint64_t st, uint64_t l) {
  return (sstm_st_serial(st) & SSTM_LW_SERIAL_MASK) == sstm_lw_serial(l);
}
/* True while the attempt recorded as `rec` has not ended, `now` being the
 * current status of the same descriptor. */
static inline bool sstm_st_same_attempt_running(uint64_t rec, uint64_t now) {
  return sstm_st_serial(rec) == sstm_st_serial(now) && sstm_st_state(now) != SSTM_ST_IDLE;
}

#endif /* SSTM_CORE_LOCKWORD_H */
