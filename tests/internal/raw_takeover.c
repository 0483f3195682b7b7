/* SPDX-License-Identifier: MIT */
/* Internal unit test: the read after write of <schedstm/fastpath.h>
 * (sstm__load_own, which the inline barriers' sstm__load_refused<N> and the
 * exported loads' cold path call once they have found the stripe's lock
 * word equal to the attempt's own) re-checks the lock word after its data
 * load, so that an attempt whose lock was taken over after a kill ((6.4)
 * in docs/design/core.md) never returns bytes from memory that may be
 * newer than its snapshot: its read fails and the library aborts it.
 * Since (3.3) the re-check is made even when the log holds every byte read.
 * The window between the caller's lock load and this re-check is a few
 * instructions wide; the test calls sstm__load_own directly after the
 * take-over, as a caller that loaded the lock word just before would. */
#include <string.h>

#include "core/engine.h"

#include "../common/txhelp.h"

static uint64_t words[8] __attribute__((aligned(64)));
static volatile int attempts;

static void init_32_byte_stripes(void) {
  sstm_config_t c;
  sstm_test_config(&c);
  c.stripe_shift = 5;
  CHECK_OK(sstm_init(&c));
  CHECK_OK(sstm_thread_init());
}

TEST_ETL(a_taken_over_lock_fails_the_read_after_write) {
  init_32_byte_stripes();
  for (unsigned i = 0; i < 8; i++)
    words[i] = 0x0101010101010101ull * (i + 1);
  sstm_desc_t *me = sstm_self();
  const sstm__fast_t *f = (const sstm__fast_t *)(const void *)me;
  attempts = 0;
  SSTM_ATOMIC_BEGIN(NULL)
    attempts++;
    sstm_store_u32((uint32_t *)(void *)&words[1], 0xAAAAAAAAu); /* locks words 0-3 */
    sstm_store_u64(&words[2], 0xBBBBBBBBBBBBBBBBull);
    if (attempts == 1) {
      const uint64_t *lk = (const uint64_t *)sstm__lock_for(me, &words[1]);
      CHECK_EQ_PTR(lk, (const uint64_t *)sstm__lock_for(me, &words[3]));
      CHECK_EQ_X(atomic_load_explicit(sstm__lock_for(me, &words[1]), memory_order_acquire),
                 me->owner_lw);
      uint64_t v = 0;
      /* held: log and memory merged, log alone, memory alone */
      CHECK_TRUE(sstm__load_own(f, lk, &words[1], 8, &v));
      CHECK_EQ_X(v, 0x02020202AAAAAAAAull);
      CHECK_TRUE(sstm__load_own(f, lk, &words[2], 8, &v));
      CHECK_EQ_X(v, 0xBBBBBBBBBBBBBBBBull);
      CHECK_TRUE(sstm__load_own(f, lk, (const uint32_t *)(const void *)&words[1] + 1, 4, &v));
      CHECK_EQ_X(v, 0x02020202u);
      CHECK_TRUE(sstm__load_own(f, lk, &words[3], 8, &v));
      CHECK_EQ_X(v, 0x0404040404040404ull);
      /* killed, and its lock taken over by a reader on another descriptor */
      uint64_t serial = sstm_txid();
      sstm_desc_detach();
      CHECK_OK(sstm_desc_attach(txh_other_desc()));
      CHECK_OK(sstm_desc_kill(me, serial));
      CHECK_EQ_U(tx_load_u64(&words[3]), 0x0404040404040404ull); /* steals the lock */
      sstm_desc_detach();
      CHECK_OK(sstm_desc_attach(me));
      CHECK_NE_X(atomic_load_explicit(sstm__lock_for(me, &words[1]), memory_order_acquire),
                 me->owner_lw);
      /* every read after write now fails, whatever the log holds */
      v = 7;
      CHECK_FALSE(sstm__load_own(f, lk, &words[1], 8, &v));
      CHECK_FALSE(sstm__load_own(f, lk, &words[2], 8, &v));
      CHECK_FALSE(sstm__load_own(f, lk, &words[2], 1, &v));
      CHECK_FALSE(sstm__load_own(f, lk, &words[3], 4, &v));
      CHECK_EQ_X(v, 7);
      /* and the barrier aborts the attempt */
      (void)sstm_load_u64(&words[1]);
      CHECK_TRUE(false); /* not reached */
    }
  SSTM_ATOMIC_END();
  CHECK_EQ_I(attempts, 2);
  CHECK_EQ_X(words[1], 0x02020202AAAAAAAAull);
  CHECK_EQ_X(words[2], 0xBBBBBBBBBBBBBBBBull);
  txh_cleanup();
  sstm_test_fini();
}

SSTM_TEST_MAIN()
