/* SPDX-License-Identifier: MIT */
/* Internal unit tests: bit layouts of lock words, the clock word and the
 * descriptor status word (src/core/lockword.h). */
#define _GNU_SOURCE
#include "core/lockword.h"

#include "../common/runner.h"

TEST(version_roundtrip) {
  sstm_rng_t r;
  sstm_rng_seed(&r, sstm_test_seed());
  const uint64_t fixed[] = {0, 1, 2, 12345, (1ull << 62) - 1, (1ull << 63) - 1};
  for (int i = 0; i < 6 + 10000; i++) {
    uint64_t ts = i < 6 ? fixed[i] : sstm_rng_next(&r) >> 1;
    uint64_t l = sstm_lw_make_version(ts);
    CHECK_FALSE(sstm_lw_locked(l));
    CHECK_EQ_U(sstm_lw_version(l), ts);
  }
  /* versions order like their timestamps */
  CHECK_LT_U(sstm_lw_make_version(5), sstm_lw_make_version(6));
}

TEST(owner_roundtrip) {
  sstm_rng_t r;
  sstm_rng_seed(&r, sstm_test_seed());
  for (int i = 0; i < 20000; i++) {
    unsigned slot = (unsigned)sstm_rng_below(&r, SSTM_MAX_SLOTS + 1);
    uint64_t serial = sstm_rng_next(&r);
    if (i < 4) {
      slot = i & 1 ? SSTM_MAX_SLOTS : 0;
      serial = i & 2 ? ~0ull : 1;
    }
    uint64_t l = sstm_lw_make_owner(slot, serial);
    CHECK_TRUE(sstm_lw_locked(l));
    CHECK_EQ_U(sstm_lw_slot(l), slot);
    CHECK_EQ_X(sstm_lw_serial(l), serial & SSTM_LW_SERIAL_MASK);
    /* a different slot or serial gives a different owner word */
    CHECK_NE_X(sstm_lw_make_owner(slot ^ 1, serial), l);
    CHECK_NE_X(sstm_lw_make_owner(slot, serial + 1), l);
  }
}

/* Constants, checked when this file compiles: max_threads' documented
 * limit, and that it fits the lock word's slot field. */
_Static_assert(SSTM_MAX_SLOTS == 32767, "max_threads is documented as 1..32767");
_Static_assert(32767 <= SSTM_LW_SLOT_MASK, "the slot field holds every slot");

TEST(clock_word) {
  for (uint64_t t = 0; t < 1000; t++) {
    uint64_t c = t * SSTM_CLOCK_TICK;
    CHECK_EQ_U(sstm_clock_time(c), t);
    CHECK_FALSE(sstm_clock_irrevocable(c));
    CHECK_EQ_U(sstm_clock_time(c | SSTM_CLOCK_IRREV), t);
    CHECK_TRUE(sstm_clock_irrevocable(c | SSTM_CLOCK_IRREV));
    /* a commit's version from the clock: same time scale */
    CHECK_EQ_U(sstm_lw_version(sstm_lw_make_version(sstm_clock_time(c) + 1)), t + 1);
  }
}

TEST(status_word) {
  const enum sstm_state states[] = {SSTM_ST_IDLE, SSTM_ST_ACTIVE, SSTM_ST_KILLED,
                                    SSTM_ST_COMMITTING, SSTM_ST_IRREVOCABLE};
  sstm_rng_t r;
  sstm_rng_seed(&r, sstm_test_seed());
  for (int i = 0; i < 10000; i++) {
    uint64_t serial = sstm_rng_next(&r) >> 8; /* 56 bits */
    enum sstm_state s = states[i % 5];
    uint64_t st = sstm_st_make(serial, s);
    CHECK_EQ_I(sstm_st_state(st), s);
    CHECK_EQ_X(sstm_st_serial(st), serial);
    CHECK_EQ_X(st & SSTM_ST_FLAGS, 0);
    /* flags survive a state change, and do not disturb state/serial */
    uint64_t fl = st | SSTM_ST_WATCHED | SSTM_ST_SLEEPERS;
    CHECK_EQ_I(sstm_st_state(fl), s);
    for (int k = 0; k < 5; k++) {
      uint64_t w = sstm_st_with_state(fl, states[k]);
      CHECK_EQ_I(sstm_st_state(w), states[k]);
      CHECK_EQ_X(w & SSTM_ST_FLAGS, SSTM_ST_FLAGS);
      CHECK_EQ_X(sstm_st_serial(w) & SSTM_LW_SERIAL_MASK, serial & SSTM_LW_SERIAL_MASK);
    }
    /* ownership: the lock word of this attempt, in any slot */
    uint64_t l = sstm_lw_make_owner((unsigned)(i % 100), serial);
    CHECK_TRUE(sstm_st_owns(st, l));
    CHECK_FALSE(sstm_st_owns(sstm_st_make(serial + 1, s), l));
  }
}

TEST(same_attempt_running) {
  uint64_t rec = sstm_st_make(77, SSTM_ST_ACTIVE);
  CHECK_TRUE(sstm_st_same_attempt_running(rec, rec));
  CHECK_TRUE(sstm_st_same_attempt_running(rec, sstm_st_make(77, SSTM_ST_KILLED)));
  CHECK_TRUE(sstm_st_same_attempt_running(rec, sstm_st_make(77, SSTM_ST_COMMITTING)));
  CHECK_TRUE(sstm_st_same_attempt_running(rec, sstm_st_make(77, SSTM_ST_ACTIVE) | SSTM_ST_WATCHED));
  CHECK_FALSE(sstm_st_same_attempt_running(rec, sstm_st_make(77, SSTM_ST_IDLE)));
  CHECK_FALSE(sstm_st_same_attempt_running(rec, sstm_st_make(78, SSTM_ST_ACTIVE)));
  CHECK_FALSE(sstm_st_same_attempt_running(rec, sstm_st_make(76, SSTM_ST_ACTIVE)));
}

SSTM_TEST_MAIN()
