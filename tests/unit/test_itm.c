/* SPDX-License-Identifier: MIT */
/* The gcc -fgnu-tm ABI on the engine (libschedstm-itm, src/abi/itm.c,
 * docs/design/itm.md): this file is compiled with -fgnu-tm and linked with
 * libschedstm-itm instead of libitm, so every __transaction_* block below
 * runs through _ITM_beginTransaction and the compiler's _ITM_* barriers.
 * Threads are not registered by the tests: the ABI registers them at
 * their first transaction (I1). */
#define _GNU_SOURCE
#include <complex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/malloc_count.h"
#include "../common/runner.h"

/* Entry points a program may call itself ([IntelTMABI]); the compiler
 * declares the rest. */
uint32_t _ITM_inTransaction(void);
uint64_t _ITM_getTransactionId(void);
void _ITM_addUserCommitAction(void (*fn)(void *), uint64_t tid, void *arg);
void _ITM_addUserUndoAction(void (*fn)(void *), void *arg);
void _ITM_LB(const void *addr, size_t n);
int _ITM_versionCompatible(int version);
const char *_ITM_libraryVersion(void);
void _ITM_dropReferences(void *p, size_t n);
typedef struct {
  uint32_t reserved_1, flags, reserved_2, reserved_3;
  const char *psource;
} itm_src_location_t;
__attribute__((noreturn)) void _ITM_error(const itm_src_location_t *loc, int code);

/* The checks read memory through volatile: the compiler takes memory after
 * a cancel to be as it was before the transaction, and could otherwise
 * fold a check into what it already knew, whatever the runtime did. */
#define V(x) (*(volatile __typeof__(x) *)&(x))

/* ---- a bank: the instrumented path under threads ----------------------------- */

#define ACCOUNTS 32
static long accounts[ACCOUNTS];
static long transfers;
static _Atomic long bad_sums;

static void bank_worker(sstm_tt_t *t) {
  sstm_rng_t r;
  sstm_rng_seed(&r, sstm_test_seed() + (uint64_t)sstm_test_thread_index());
  uint64_t n = sstm_test_scaled(20000, 2000);
  for (uint64_t i = 0; i < n; i++) {
    int a = (int)sstm_rng_below(&r, ACCOUNTS), b = (int)sstm_rng_below(&r, ACCOUNTS);
    long amt = (long)sstm_rng_below(&r, 100);
    if (i % 8 == 0) {
      long sum = 0;
      __transaction_atomic {
        sum = 0;
        for (int k = 0; k < ACCOUNTS; k++)
          sum += accounts[k];
      }
      if (sum != 0) atomic_fetch_add_explicit(&bad_sums, 1, memory_order_relaxed);
    } else {
      __transaction_atomic {
        accounts[a] -= amt;
        accounts[b] += amt;
        transfers++;
      }
    }
  }
  (void)t;
}

TEST(bank_keeps_its_sum_under_threads) {
  sstm_test_init();
  unsigned nt = sstm_test_threads(4);
  sstm_test_run_threads(nt, false, bank_worker, NULL);
  long sum = 0;
  for (int k = 0; k < ACCOUNTS; k++)
    sum += accounts[k];
  CHECK_EQ_I(sum, 0);
  CHECK_EQ_I(atomic_load_explicit(&bad_sums, memory_order_relaxed), 0);
  uint64_t n = sstm_test_scaled(20000, 2000);
  CHECK_EQ_U((uint64_t)transfers, (uint64_t)nt * (n - (n + 7) / 8));
  sstm_test_fini();
}

/* ---- every access width and type ------------------------------------------------ */

typedef float v4f __attribute__((vector_size(16)));
static struct {
  uint8_t u8;
  uint16_t u16;
  uint32_t u32;
  uint64_t u64;
  float f;
  double d;
  long double ld;
  float _Complex cf;
  double _Complex cd;
  v4f v;
  char bytes[40];
} ty;

static void types_update(int cancel) {
  __transaction_atomic {
    ty.u8 = (uint8_t)(ty.u8 + 1);
    ty.u16 = (uint16_t)(ty.u16 + 300);
    ty.u32 += 70000;
    ty.u64 += 1ull << 40;
    ty.f += 0.5f;
    ty.d += 0.25;
    ty.ld += 0.125L;
    ty.cf += 1.0f + 2.0f * I;
    ty.cd += 3.0 + 4.0 * I;
    ty.v += (v4f){1, 2, 3, 4};
    if (cancel) __transaction_cancel;
  }
}

TEST(every_width_and_type_is_read_and_written_bit_exact) {
  sstm_test_init();
  for (int i = 0; i < 3; i++)
    types_update(0);
  types_update(1); /* cancelled: no change */
  CHECK_EQ_U(V(ty.u8), 3);
  CHECK_EQ_U(V(ty.u16), 900);
  CHECK_EQ_U(V(ty.u32), 210000);
  CHECK_EQ_U(V(ty.u64), 3ull << 40);
  CHECK(V(ty.f) == 1.5f);
  CHECK(V(ty.d) == 0.75);
  CHECK(V(ty.ld) == 0.375L);
  float _Complex cf = V(ty.cf);
  double _Complex cd = V(ty.cd);
  v4f v = V(ty.v);
  CHECK(crealf(cf) == 3.0f && cimagf(cf) == 6.0f);
  CHECK(creal(cd) == 9.0 && cimag(cd) == 12.0);
  CHECK(v[0] == 3 && v[1] == 6 && v[2] == 9 && v[3] == 12);
  sstm_test_fini();
}

/* A float _Complex is 4-aligned. A wide access at an address that is not
 * 8-aligned goes as pieces of 4, 8 and 4 bytes (GCC 12 writes c4 and c8
 * here with one 16-byte _ITM_WM128 at offset 4), one at an 8-aligned
 * address as one 8-byte piece (c8b, an _ITM_WM64); both bit-exact, rolled
 * back when cancelled, and read after written in one transaction. */
static struct {
  uint32_t pad;
  float _Complex c4; /* offset 4 */
  float _Complex c8; /* offset 12: 4 mod 8 as well */
  uint32_t pad2;
  float _Complex c8b; /* offset 24: 8-aligned */
} __attribute__((aligned(16))) cx;

static float _Complex cx_update(int cancel) {
  float _Complex seen = 0;
  __transaction_atomic {
    cx.c4 += 1.0f + 2.0f * I;
    cx.c8 += 5.0f - 1.0f * I;
    cx.c8b += 0.5f + 0.25f * I;
    seen = cx.c4 + cx.c8b; /* read after write, both paths */
    if (cancel) __transaction_cancel;
  }
  return seen;
}

TEST(a_wide_type_at_an_address_not_8_aligned_is_bit_exact) {
  sstm_test_init();
  CHECK_EQ_U((uintptr_t)&cx.c4 & 7, 4);
  CHECK_EQ_U((uintptr_t)&cx.c8b & 7, 0);
  float _Complex s1 = cx_update(0);
  CHECK(crealf(s1) == 1.5f && cimagf(s1) == 2.25f);
  (void)cx_update(1); /* cancelled: no change */
  float _Complex s2 = cx_update(0);
  CHECK(crealf(s2) == 3.0f && cimagf(s2) == 4.5f);
  float _Complex c4 = V(cx.c4), c8 = V(cx.c8), c8b = V(cx.c8b);
  CHECK(crealf(c4) == 2.0f && cimagf(c4) == 4.0f);
  CHECK(crealf(c8) == 10.0f && cimagf(c8) == -2.0f);
  CHECK(crealf(c8b) == 1.0f && cimagf(c8b) == 0.5f);
  sstm_test_fini();
}

/* ---- cancel and nesting (I5) ------------------------------------------------------- */

static long nest_a, nest_b;

TEST(a_cancel_leaves_no_write_and_skips_the_rest) {
  sstm_test_init();
  int after = 0;
  __transaction_atomic {
    nest_a = 1;
    if (nest_b == 0) __transaction_cancel;
    nest_b = 2;
  }
  after = 1;
  CHECK_EQ_I(V(nest_a), 0);
  CHECK_EQ_I(V(nest_b), 0);
  CHECK_EQ_I(after, 1);
  CHECK_EQ_U(_ITM_inTransaction(), 0);
  sstm_test_fini();
}

TEST(an_outer_cancel_in_a_nested_transaction_rolls_back_both) {
  sstm_test_init();
  __transaction_atomic [[outer]] {
    nest_a = 1;
    __transaction_atomic {
      nest_b = 1;
      if (nest_a == 1) __transaction_cancel [[outer]];
    }
    nest_a = 5;
  }
  CHECK_EQ_I(V(nest_a), 0);
  CHECK_EQ_I(V(nest_b), 0);
  /* and a nested transaction without cancel commits with its outer one */
  __transaction_atomic {
    nest_a = 1;
    __transaction_atomic { nest_b = 2; }
  }
  CHECK_EQ_I(V(nest_a), 1);
  CHECK_EQ_I(V(nest_b), 2);
  sstm_test_fini();
}

/* A variable the enclosing transaction wrote, read again after a nested
 * transaction that may cancel. GCC's partial-redundancy elimination
 * (-ftree-pre, on at -O2) reloads it there with a plain load, which sees
 * memory, not the enclosing transaction's write (held in the redo log
 * until the commit): the update was lost (cell 2, not 3). libschedstm-itm's
 * targets and its pkg-config file give programs -fno-tree-pre
 * (docs/design/itm.md, "Limits"); this test gets it from the target. */
static long nest_cell, nest_other;

static __attribute__((noinline)) void nested_reload(void) {
  __transaction_atomic {
    nest_cell += 1;
    __transaction_atomic {
      nest_other += 1;
      if (nest_other < 0) __transaction_cancel;
    }
    nest_cell += 1;
  }
}

TEST(a_write_read_again_after_a_nested_transaction_is_not_lost) {
  sstm_test_init();
  V(nest_cell) = 1, V(nest_other) = 0;
  nested_reload();
  CHECK_EQ_I(V(nest_cell), 3);
  CHECK_EQ_I(V(nest_other), 1);
  sstm_test_fini();
}

/* (I5) A cancel of a nested transaction alone (closed nesting): every kind
 * of write it made is undone, the enclosing transaction goes on after the
 * block and commits. */
static long double nest_e;
static struct blk { long w[6]; } nest_s, nest_t;
static unsigned char nest_buf[40];
static long nest_logged[2];
static long *nest_block, *nest_kept;
/* The size of the block the inner transaction allocates: counted by the
 * malloc interposition (common/malloc_count.c), above the block cache's
 * sizes (512 bytes), so a block the library gives back goes to free(). */
#define NEST_BLOCK 1000
static _Atomic int nest_undos, nest_commits;
static int nest_undo_order[4], nest_nundo;

static void nest_undo(void *arg) {
  nest_undo_order[nest_nundo++] = (int)(intptr_t)arg;
  atomic_fetch_add_explicit(&nest_undos, 1, memory_order_relaxed);
}
static void nest_commit(void *arg) {
  (void)arg;
  atomic_fetch_add_explicit(&nest_commits, 1, memory_order_relaxed);
}

__attribute__((transaction_pure)) static void nest_actions_and_log(void) {
  _ITM_addUserUndoAction(nest_undo, (void *)1);
  _ITM_addUserUndoAction(nest_undo, (void *)2);
  _ITM_addUserCommitAction(nest_commit, 1, NULL);
  _ITM_LB(nest_logged, sizeof nest_logged);
  nest_logged[0] = -1; /* private memory, written plainly */
}

__attribute__((transaction_safe, noinline)) static void scribble(long *p, int cancel) {
  __transaction_atomic {
    for (int i = 0; i < 4; i++)
      p[i] = -1;
    nest_b += 100;
    nest_e = nest_e * 4;
    nest_s = nest_t;
    memset(nest_buf, 'x', sizeof nest_buf);
    nest_block = malloc(NEST_BLOCK);
    free(nest_kept);
    nest_actions_and_log();
    if (cancel) __transaction_cancel;
    nest_b += 1;
  }
}

/* The local array lives in a frame that the outer transaction made and
 * the inner one did not: written in place (I6), put back by the cancel. */
__attribute__((transaction_safe, noinline)) static long frame_sum(int cancel) {
  long local[4] = {1, 2, 3, 4};
  scribble(local, cancel);
  return local[0] + local[1] + local[2] + local[3];
}

TEST(a_cancel_of_an_inner_transaction_undoes_it_alone) {
  sstm_test_init();
  nest_a = nest_b = 0;
  nest_e = 1.5L;
  for (int i = 0; i < 6; i++)
    nest_t.w[i] = 10 + i;
  mc_track_sizes(NEST_BLOCK, NEST_BLOCK + 1);
  nest_kept = malloc(64);
  nest_kept[0] = 42;
  nest_logged[0] = 5;
  long sum = 0, b_seen = 0;
  __transaction_atomic {
    nest_a = 1;
    sum = frame_sum(1); /* cancelled */
    b_seen = nest_b;
    nest_a += 1;
  }
  CHECK_EQ_I(sum, 10);
  CHECK_EQ_I(b_seen, 0);
  CHECK_EQ_I(V(nest_a), 2); /* the enclosing transaction went on and committed */
  CHECK_EQ_I(V(nest_b), 0);
  CHECK(V(nest_e) == 1.5L);
  CHECK_EQ_I(V(nest_s.w[5]), 0);
  CHECK_EQ_I(V(nest_buf[0]), 0);
  CHECK_EQ_I(V(nest_logged[0]), 5);
  CHECK_EQ_I(V(nest_kept[0]), 42); /* its free was undone: still ours */
  CHECK_EQ_I(atomic_load_explicit(&nest_undos, memory_order_relaxed), 2);
  CHECK_EQ_I(nest_undo_order[0], 2); /* newest first */
  CHECK_EQ_I(nest_undo_order[1], 1);
  CHECK_EQ_I(atomic_load_explicit(&nest_commits, memory_order_relaxed), 0);
  CHECK(V(nest_block) == NULL); /* the write of its pointer was undone */
  sstm_reclaim();
  CHECK_EQ_I(mc_live(), 0); /* and the cancel gave the block back */
  /* The same block, not cancelled, commits with the enclosing one. */
  __transaction_atomic {
    sum = frame_sum(0);
    nest_a += 1;
  }
  CHECK_EQ_I(sum, -4);
  CHECK_EQ_I(V(nest_a), 3);
  CHECK_EQ_I(V(nest_b), 101);
  CHECK(V(nest_e) == 6.0L);
  CHECK_EQ_I(V(nest_s.w[5]), 15);
  CHECK_EQ_I(V(nest_buf[39]), 'x');
  CHECK_EQ_I(V(nest_logged[0]), -1);
  CHECK_EQ_I(atomic_load_explicit(&nest_undos, memory_order_relaxed), 2);
  CHECK_EQ_I(atomic_load_explicit(&nest_commits, memory_order_relaxed), 1);
  CHECK_EQ_I(mc_live(), 1); /* the committed block */
  free(nest_block);
  nest_block = NULL;
  nest_kept = NULL; /* freed by that commit */
  /* Three levels: the innermost cancels, the middle one goes on and
   * commits into the outermost. */
  __transaction_atomic {
    nest_a = 10;
    __transaction_atomic {
      nest_a += 100;
      sum = frame_sum(1);
      nest_a += 1000;
    }
  }
  CHECK_EQ_I(sum, 10);
  CHECK_EQ_I(V(nest_a), 1110);
  CHECK_EQ_I(V(nest_b), 101);
  CHECK(V(nest_block) == NULL);
  sstm_reclaim();
  CHECK_EQ_I(mc_live(), 0); /* the cancel gave its block back */
  CHECK_EQ_U(_ITM_inTransaction(), 0);
  sstm_test_fini();
}

/* Transfers under threads: each one's inner transaction cancels when the
 * source account would go below zero, and the enclosing one goes on and
 * counts the refusal. Conflicts restart the whole transaction, scopes
 * included. */
#define NEST_ACCOUNTS 8
static long nest_acct[NEST_ACCOUNTS], nest_done, nest_refused;
static _Atomic long nest_negative;

__attribute__((transaction_safe, noinline)) static int nest_transfer(int from, int to, long amt) {
  int ok = 0;
  __transaction_atomic {
    nest_acct[from] -= amt;
    nest_acct[to] += amt;
    if (nest_acct[from] < 0) __transaction_cancel;
    ok = 1;
  }
  return ok;
}

static void nest_worker(sstm_tt_t *t) {
  (void)t;
  sstm_rng_t r;
  sstm_rng_seed(&r, sstm_test_seed() + (uint64_t)sstm_test_thread_index());
  uint64_t n = sstm_test_scaled(20000, 2000);
  for (uint64_t i = 0; i < n; i++) {
    int a = (int)sstm_rng_below(&r, NEST_ACCOUNTS), b = (int)sstm_rng_below(&r, NEST_ACCOUNTS);
    long amt = 1 + (long)sstm_rng_below(&r, 20);
    __transaction_atomic {
      if (nest_transfer(a, b, amt))
        nest_done++;
      else
        nest_refused++;
    }
    if (i % 64 == 0) {
      long neg = 0;
      __transaction_atomic {
        neg = 0;
        for (int k = 0; k < NEST_ACCOUNTS; k++)
          neg += nest_acct[k] < 0;
      }
      if (neg) atomic_fetch_add_explicit(&nest_negative, 1, memory_order_relaxed);
    }
  }
}

TEST(inner_cancels_under_threads_keep_the_sums_and_no_account_negative) {
  sstm_test_init();
  for (int k = 0; k < NEST_ACCOUNTS; k++)
    nest_acct[k] = 50;
  unsigned nt = sstm_test_threads(4);
  sstm_test_run_threads(nt, false, nest_worker, NULL);
  long sum = 0;
  for (int k = 0; k < NEST_ACCOUNTS; k++) {
    sum += nest_acct[k];
    CHECK(nest_acct[k] >= 0);
  }
  CHECK_EQ_I(sum, 50 * NEST_ACCOUNTS);
  CHECK_EQ_I(atomic_load_explicit(&nest_negative, memory_order_relaxed), 0);
  CHECK_EQ_U((uint64_t)(nest_done + nest_refused), (uint64_t)nt * sstm_test_scaled(20000, 2000));
  CHECK(nest_refused > 0);
  sstm_test_fini();
}

/* In serial mode the block's plain stores cannot be undone: the process
 * ends with a message rather than cancel the outer one or ignore the
 * cancel. */
__attribute__((transaction_safe, noinline)) static void inner_cancel(void) {
  __transaction_atomic {
    nest_b = 7;
    if (nest_a == 0) __transaction_cancel;
  }
}

static void unsafe_nothing(void) { __asm__ volatile("" ::: "memory"); }

static void serial_nested_cancel_body(void) {
  sstm_test_init();
  nest_a = 0;
  __transaction_relaxed {
    unsafe_nothing(); /* serial */
    inner_cancel();
  }
}

TEST(a_cancel_of_an_inner_transaction_in_serial_mode_is_reported_not_mistaken) {
  sstm_test_expect_abort(serial_nested_cancel_body, "inner cancel in serial mode",
                         "nested transaction in a serial");
}

/* ---- serial transactions (I3, I4) ------------------------------------------------ */

/* A serial block whose unsafe call makes GCC run its uninstrumented path:
 * its stores are plain, and its commit is still counted as an update. */
static long plain_counter;

TEST(a_serial_block_on_its_uninstrumented_path_counts_as_an_update) {
  sstm_test_init();
  CHECK_OK(sstm_stats_reset());
  for (int i = 0; i < 10; i++) {
    __transaction_relaxed {
      unsafe_nothing();
      plain_counter = plain_counter + 1;
    }
  }
  CHECK_EQ_I(V(plain_counter), 10);
  sstm_stats_t st;
  CHECK_OK(sstm_stats_get(sstm_self(), &st));
  CHECK_EQ_U(st.commits_irrevocable, 10);
  CHECK_EQ_U(st.commits_update, 10);
  CHECK_EQ_U(st.commits_ro, 0);
  sstm_test_fini();
}

/* The mark of plain stores ends with its attempt: a read-only irrevocable
 * transaction that follows on the same thread is counted as read-only. */
static void read_plain_counter(void *arg) {
  *(long *)arg = (long)sstm_load_u64((const uint64_t *)(const void *)&plain_counter);
}

TEST(the_mark_of_a_serial_blocks_plain_stores_ends_with_its_attempt) {
  sstm_test_init();
  CHECK_OK(sstm_stats_reset());
  __transaction_relaxed {
    unsafe_nothing();
    plain_counter = plain_counter + 1;
  }
  long seen = -1;
  sstm_attr_t a = {.irrevocable = true};
  CHECK_OK(sstm_run(&a, read_plain_counter, &seen));
  CHECK_EQ_I(seen, V(plain_counter));
  sstm_stats_t st;
  CHECK_OK(sstm_stats_get(sstm_self(), &st));
  CHECK_EQ_U(st.commits_irrevocable, 2);
  CHECK_EQ_U(st.commits_update, 1);
  CHECK_EQ_U(st.commits_ro, 1);
  sstm_test_fini();
}

/* x + y == 0 at every commit. Relaxed transactions change them inside an
 * unsafe function, with plain stores and a yield between the two: the
 * transaction runs serial, and no other transaction may see the middle. */
static long sx, sy, pad[32];
static _Atomic int serial_stop;
static _Atomic long torn, serial_reads;

__attribute__((noinline)) void unsafe_shift(long d) {
  sx += d;
  sched_yield();
  sy -= d;
}

static void serial_reader(sstm_tt_t *t) {
  (void)t;
  while (!atomic_load_explicit(&serial_stop, memory_order_relaxed)) {
    long a, b;
    __transaction_atomic {
      a = sx;
      long p = 0;
      for (int k = 0; k < 32; k++)
        p += pad[k];
      b = sy + p;
    }
    if (a + b != 0) atomic_fetch_add_explicit(&torn, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&serial_reads, 1, memory_order_relaxed);
  }
}

static long serial_done;

static void serial_writer(sstm_tt_t *t) {
  int idx = sstm_test_thread_index();
  uint64_t n = sstm_test_scaled(300, 50);
  for (uint64_t i = 0; i < n; i++) {
    if (idx == 0) {
      /* only uninstrumented code: serial from its begin */
      __transaction_relaxed {
        unsafe_shift((long)(i % 5) + 1);
        serial_done++;
      }
    } else {
      /* instrumented, serial only on the paths that reach the unsafe
       * call (_ITM_changeTransactionMode) */
      __transaction_relaxed {
        sx += 1;
        if (i % 3 == 0) unsafe_shift(2);
        sy -= 1;
        serial_done++;
      }
    }
    usleep(50); /* let the readers run between them */
  }
  (void)t;
}

static _Atomic int writers_left;

static void serial_all(sstm_tt_t *t) {
  if (sstm_test_thread_index() >= 2) {
    serial_reader(t);
    return;
  }
  serial_writer(t);
  /* the last writer to finish stops the readers */
  if (atomic_fetch_sub_explicit(&writers_left, 1, memory_order_relaxed) == 1)
    atomic_store_explicit(&serial_stop, 1, memory_order_relaxed);
}

TEST(a_serial_transaction_runs_alone) {
  sstm_test_init();
  /* Threads 0 and 1 write, 2 and 3 read. */
  atomic_store_explicit(&writers_left, 2, memory_order_relaxed);
  sstm_test_run_threads(4, false, serial_all, NULL);
  CHECK_EQ_I(atomic_load_explicit(&torn, memory_order_relaxed), 0);
  CHECK_EQ_I(V(sx) + V(sy), 0);
  CHECK_EQ_U((uint64_t)serial_done, 2 * sstm_test_scaled(300, 50));
  CHECK(atomic_load_explicit(&serial_reads, memory_order_relaxed) > 0);
  sstm_test_fini();
}

/* ---- allocation ------------------------------------------------------------------ */

typedef struct node {
  long v;
  struct node *next;
} node_t;
static node_t *stack_top;
static long pushed, popped;

static void alloc_worker(sstm_tt_t *t) {
  (void)t;
  uint64_t n = sstm_test_scaled(5000, 500);
  for (uint64_t i = 0; i < n; i++) {
    __transaction_atomic {
      node_t *x = malloc(sizeof *x);
      x->v = (long)i;
      x->next = stack_top;
      stack_top = x;
      pushed++;
    }
    if (i % 2) {
      node_t *x = NULL;
      __transaction_atomic {
        x = stack_top;
        if (x) {
          stack_top = x->next;
          popped++;
          free(x); /* after the commit and the grace period */
        }
      }
    }
    if (i % 64 == 0) {
      __transaction_atomic {
        node_t *y = malloc(64); /* released by the cancel */
        y->v = 1;
        __transaction_cancel;
      }
    }
  }
}

TEST(malloc_and_free_inside_transactions) {
  sstm_test_init();
  unsigned nt = sstm_test_threads(4);
  sstm_test_run_threads(nt, false, alloc_worker, NULL);
  long left = 0;
  while (stack_top) {
    node_t *x = stack_top;
    stack_top = x->next;
    free(x); /* a block of _ITM_malloc is malloc's */
    left++;
  }
  CHECK_EQ_I(left, pushed - popped);
  uint64_t n = sstm_test_scaled(5000, 500);
  CHECK_EQ_U((uint64_t)pushed, nt * n);
  sstm_test_fini();
}

/* ---- bulk copies -------------------------------------------------------------------- */

static struct blob { long w[24]; } blob_a, blob_b;
static unsigned char ring[300];

TEST(struct_copies_memmove_and_memset_are_transactional) {
  sstm_test_init();
  for (int i = 0; i < 24; i++)
    blob_b.w[i] = i * 3 + 1;
  for (int i = 0; i < 300; i++)
    ring[i] = (unsigned char)i;
  __transaction_atomic {
    blob_a = blob_b; /* a transactional copy */
    blob_b.w[0] = -1;
  }
  CHECK_EQ_I(V(blob_a.w[23]), 70);
  CHECK_EQ_I(V(blob_a.w[0]), 1);
  CHECK_EQ_I(V(blob_b.w[0]), -1);
  /* overlapping moves both ways, longer than the copy's 256-byte chunk */
  __transaction_atomic { __builtin_memmove(ring + 10, ring, 280); }
  for (int i = 0; i < 280; i++)
    CHECK_EQ_U(V(ring[10 + i]), (unsigned char)i);
  __transaction_atomic { __builtin_memmove(ring, ring + 10, 280); }
  for (int i = 0; i < 280; i++)
    CHECK_EQ_U(V(ring[i]), (unsigned char)i);
  __transaction_atomic {
    __builtin_memset(ring, 0xab, 270);
    if (ring[0] == 0) __transaction_cancel;
  }
  CHECK_EQ_U(V(ring[269]), 0xab);
  CHECK_EQ_U(V(ring[270]), (unsigned char)(270 - 10 + 10));
  __transaction_atomic {
    __builtin_memset(ring, 0, 300);
    __transaction_cancel;
  }
  CHECK_EQ_U(V(ring[0]), 0xab);
  sstm_test_fini();
}

/* ---- indirect calls (clone tables) --------------------------------------------------- */

static long icount;
__attribute__((transaction_safe, noinline)) static void add_one(long *p) { *p += 1; }
__attribute__((transaction_safe, noinline)) static void add_two(long *p) { *p += 2; }
/* Not static, so that the compiler cannot see which function is called. */
typedef void safe_fn_t(long *) __attribute__((transaction_safe));
safe_fn_t *itm_test_safe_fns[2] = {add_one, add_two};
__attribute__((noinline)) void not_safe_add(long *p) { *p += 10; }
void (*itm_test_any_fn)(long *) = not_safe_add;

TEST(indirect_calls_find_their_clone_or_go_serial) {
  sstm_test_init();
  __transaction_atomic {
    itm_test_safe_fns[0](&icount);
    itm_test_safe_fns[1](&icount);
    if (icount == 3) __transaction_cancel; /* the clones wrote transactionally */
  }
  CHECK_EQ_I(V(icount), 0);
  __transaction_atomic { itm_test_safe_fns[1](&icount); }
  CHECK_EQ_I(V(icount), 2);
  __transaction_relaxed {
    icount += 1;
    itm_test_any_fn(&icount);            /* no clone: the transaction becomes serial first */
    CHECK_EQ_U(_ITM_inTransaction(), 2); /* inIrrevocableTransaction */
  }
  CHECK_EQ_I(V(icount), 13);
  sstm_test_fini();
}

/* ---- the entry points a program calls itself -------------------------------------- */

/* Atomic: the compiler takes memory after a cancel to be as before the
 * transaction, and would fold a plain counter that only an action
 * changes. */
static _Atomic int commit_runs, undo_runs;
static void on_commit_fn(void *arg) {
  atomic_fetch_add_explicit((_Atomic int *)arg, 1, memory_order_relaxed);
}
static void on_undo_fn(void *arg) {
  atomic_fetch_add_explicit((_Atomic int *)arg, 1, memory_order_relaxed);
}

__attribute__((transaction_pure)) static void register_actions(void) {
  _ITM_addUserCommitAction(on_commit_fn, _ITM_getTransactionId(), (void *)&commit_runs);
  _ITM_addUserUndoAction(on_undo_fn, (void *)&undo_runs);
}

static long logged[4];

__attribute__((transaction_pure)) static void log_and_scribble(void) {
  _ITM_LB(logged, sizeof logged);
  for (int i = 0; i < 4; i++)
    logged[i] = -1; /* private memory, written plainly */
}

TEST(user_actions_ids_and_the_private_memory_log) {
  sstm_test_init();
  CHECK_EQ_U(_ITM_inTransaction(), 0);
  CHECK_EQ_U(_ITM_getTransactionId(), 1); /* _ITM_noTransactionId */
  __transaction_atomic {
    register_actions();
    nest_a += 1;
  }
  CHECK_EQ_I(atomic_load_explicit(&commit_runs, memory_order_relaxed), 1);
  CHECK_EQ_I(atomic_load_explicit(&undo_runs, memory_order_relaxed), 0);
  __transaction_atomic {
    register_actions();
    nest_a += 1;
    __transaction_cancel;
  }
  CHECK_EQ_I(atomic_load_explicit(&commit_runs, memory_order_relaxed), 1);
  CHECK_EQ_I(atomic_load_explicit(&undo_runs, memory_order_relaxed), 1);
  for (int i = 0; i < 4; i++)
    logged[i] = i;
  __transaction_atomic {
    log_and_scribble();
    __transaction_cancel;
  }
  for (int i = 0; i < 4; i++)
    CHECK_EQ_I(V(logged[i]), i); /* put back by the rollback */
  __transaction_atomic {
    log_and_scribble();
    nest_a += 1;
  }
  CHECK_EQ_I(V(logged[0]), -1); /* kept at commit */
  log_and_scribble();           /* outside a transaction: nothing to log */
  CHECK_EQ_I(V(logged[3]), -1);
  sstm_test_fini();
}

/* ---- the order of user actions --------------------------------------------------- */

/* The ABI's order: commit actions as registered, undo actions newest first
 * (an undo action may rely on the ones registered after it having run,
 * as a rollback undoes the latest change first). */
static int act_order[8], nact_order;
static void note_order(void *arg) { act_order[nact_order++] = (int)(intptr_t)arg; }

__attribute__((transaction_pure)) static void register_ordered(int kind) {
  for (intptr_t i = 1; i <= 3; i++) {
    if (kind == 0)
      _ITM_addUserUndoAction(note_order, (void *)i);
    else
      _ITM_addUserCommitAction(note_order, 1, (void *)i);
  }
}

static long order_attempts;
__attribute__((transaction_pure)) static void restart_first_attempt(void) {
  if (order_attempts++ == 0) sstm_restart();
}

TEST(undo_actions_run_newest_first_and_commit_actions_in_order) {
  sstm_test_init();
  __transaction_atomic {
    register_ordered(0);
    nest_a += 1;
    __transaction_cancel;
  }
  CHECK_EQ_I(V(nact_order), 3);
  CHECK_EQ_I(V(act_order[0]), 3);
  CHECK_EQ_I(V(act_order[1]), 2);
  CHECK_EQ_I(V(act_order[2]), 1);
  /* A restart runs them too, and the new attempt registers its own. */
  nact_order = 0;
  __transaction_atomic {
    register_ordered(0);
    nest_a += 1;
    restart_first_attempt();
  }
  CHECK_EQ_I(V(nact_order), 3);
  CHECK_EQ_I(V(act_order[0]), 3);
  CHECK_EQ_I(V(act_order[2]), 1);
  nact_order = 0;
  __transaction_atomic {
    register_ordered(1);
    nest_a += 1;
  }
  CHECK_EQ_I(V(nact_order), 3);
  CHECK_EQ_I(V(act_order[0]), 1);
  CHECK_EQ_I(V(act_order[1]), 2);
  CHECK_EQ_I(V(act_order[2]), 3);
  sstm_test_fini();
}

/* ---- a rollback's order: the _ITM_L* log, then the undo actions ------------------ */

/* libitm rolls a transaction back in this order (gtm_thread::rollback,
 * libitm/beginend.cc): its undo log (the _ITM_L* entries among them), its
 * method's rollback, the user's undo actions newest first, the blocks
 * allocated, the C++ exception state; a cancel of a nested transaction
 * alone the same, down to the nested begin. So an undo action that reads
 * private memory which the _ITM_L* log restores sees its value from
 * before the transaction, whichever of the two the transaction
 * registered first. */
static long ord_logged, ord_seen[8];
static int ord_nseen;
static void read_ord_logged(void *arg) {
  (void)arg;
  ord_seen[ord_nseen++] = V(ord_logged);
}

__attribute__((transaction_pure)) static void undo_action_and_log(int undo_first) {
  if (undo_first) _ITM_addUserUndoAction(read_ord_logged, NULL);
  _ITM_LB(&ord_logged, sizeof ord_logged);
  ord_logged = -1; /* private memory, written plainly */
  if (!undo_first) _ITM_addUserUndoAction(read_ord_logged, NULL);
}

static long ord_attempts;
__attribute__((transaction_pure)) static void restart_first_ord_attempt(void) {
  if (ord_attempts++ == 0) sstm_restart();
}

TEST(undo_actions_run_after_the_private_memory_log_is_restored) {
  sstm_test_init();
  /* A cancel, the undo action registered before the log entry, then after. */
  for (int undo_first = 1; undo_first >= 0; undo_first--) {
    ord_logged = 7;
    __transaction_atomic {
      undo_action_and_log(undo_first);
      nest_a += 1;
      __transaction_cancel;
    }
    CHECK_EQ_I(V(ord_logged), 7);
  }
  CHECK_EQ_I(V(ord_nseen), 2);
  CHECK_EQ_I(V(ord_seen[0]), 7);
  CHECK_EQ_I(V(ord_seen[1]), 7);
  /* A restart: the first attempt's action, then the second attempt commits. */
  ord_logged = 7;
  __transaction_atomic {
    undo_action_and_log(1);
    nest_a += 1;
    restart_first_ord_attempt();
  }
  CHECK_EQ_I(V(ord_nseen), 3);
  CHECK_EQ_I(V(ord_seen[2]), 7);
  CHECK_EQ_I(V(ord_logged), -1); /* kept at the commit */
  /* A cancel of a nested transaction alone (I5). */
  ord_logged = 7;
  __transaction_atomic {
    nest_a += 1;
    __transaction_atomic {
      undo_action_and_log(1);
      if (nest_a > 0) __transaction_cancel;
    }
  }
  CHECK_EQ_I(V(ord_nseen), 4);
  CHECK_EQ_I(V(ord_seen[3]), 7);
  CHECK_EQ_I(V(ord_logged), 7);
  sstm_test_fini();
}

/* ---- transaction ids ---------------------------------------------------------------- */

static uint64_t ids[3];

__attribute__((transaction_pure)) static void note_id(int i) { ids[i] = _ITM_getTransactionId(); }

/* _ITM_noTransactionId (1) means "outside a transaction": no transaction
 * may have it, the first one of the process included (the engine's first
 * attempt id is 1). Nested transactions have ids at least their outer
 * one's. */
TEST(no_transaction_has_the_id_of_none) {
  sstm_test_init();
  __transaction_atomic {
    note_id(0);
    nest_a += 1;
    __transaction_atomic {
      note_id(1);
      nest_b += 1;
    }
  }
  __transaction_atomic {
    note_id(2);
    nest_a += 1;
  }
  CHECK(V(ids[0]) != 1);
  CHECK(V(ids[1]) >= V(ids[0]));
  CHECK(V(ids[2]) != 1);
  CHECK(V(ids[2]) != V(ids[0]));
  CHECK_EQ_U(_ITM_getTransactionId(), 1);
  sstm_test_fini();
}

/* ---- version checks, errors, dropped references ------------------------------------ */

/* The rest of the ABI's entry points for programs: a program that calls
 * them links (they are exported) and gets the ABI's answers. */
TEST(version_checks_answer_as_the_abi_says) {
  CHECK_EQ_I(_ITM_versionCompatible(90), 1); /* _ITM_VERSION_NO */
  CHECK_EQ_I(_ITM_versionCompatible(89), 0);
  CHECK(_ITM_libraryVersion() != NULL);
  CHECK(strstr(_ITM_libraryVersion(), "schedstm") != NULL);
}

static void itm_error_body(void) {
  static const itm_src_location_t loc = {0, 0, 0, 0, ";prog.c;main;12;3;;"};
  _ITM_error(&loc, 7);
}

TEST(itm_error_ends_the_process_naming_the_code_and_place) {
  sstm_test_expect_abort(itm_error_body, "_ITM_error", "error 7 at ;prog.c;main;12;3;;");
}

static long dropped[8];

__attribute__((transaction_pure)) static void drop_dropped(void) {
  _ITM_dropReferences(dropped, sizeof dropped);
}

static void drop_in_tx_body(void) {
  sstm_test_init();
  __transaction_atomic {
    dropped[0] += 1;
    drop_dropped();
  }
}

TEST(drop_references_is_refused_in_a_transaction_and_a_no_op_outside) {
  sstm_test_init();
  drop_dropped(); /* no transaction, no references: returns */
  sstm_test_fini();
  /* The engine cannot drop an attempt's references: a message, not a
   * silent no-op that would still write the memory back at the commit. */
  sstm_test_expect_abort(drop_in_tx_body, "drop in a transaction", "_ITM_dropReferences");
}

/* ---- transactions inside user actions ------------------------------------------------ */

/* The engine runs user actions outside the transaction, and they may run
 * transactions of their own (schedstm/tx.h). Through the ABI, such a
 * transaction is an outermost one, whatever the state of the transaction
 * whose actions run: that one's depth, its serial mode and its log of
 * private memory must neither mislead nor be overwritten by it. */
static long act_count, act_other[4];

__attribute__((transaction_pure)) static void log_and_scribble_other(void) {
  _ITM_LB(act_other, sizeof act_other);
  for (int i = 0; i < 4; i++)
    act_other[i] = -1;
}

static void tx_in_action(void *arg) {
  (void)arg;
  __transaction_atomic {
    act_count += 1;
    log_and_scribble_other(); /* its own log of private memory */
  }
}

__attribute__((transaction_pure)) static void register_tx_actions(void) {
  _ITM_addUserCommitAction(tx_in_action, _ITM_getTransactionId(), NULL);
  _ITM_addUserUndoAction(tx_in_action, NULL);
}

TEST(user_actions_run_transactions_of_their_own) {
  sstm_test_init();
  __transaction_atomic {
    register_tx_actions();
    nest_a += 1;
  }
  CHECK_EQ_I(V(act_count), 1);
  int after = 0;
  for (int i = 0; i < 4; i++)
    logged[i] = i;
  __transaction_atomic {
    register_tx_actions();
    log_and_scribble(); /* logged after the action: put back after it ran */
    nest_a += 1;
    __transaction_cancel;
  }
  after = 1;
  CHECK_EQ_I(after, 1);
  CHECK_EQ_I(V(act_count), 2);
  for (int i = 0; i < 4; i++)
    CHECK_EQ_I(V(logged[i]), i);
  CHECK_EQ_U(_ITM_inTransaction(), 0);
  /* A serial transaction's commit actions: their transactions must not
   * wait for the serial transaction that runs them. */
  __transaction_relaxed {
    register_tx_actions();
    nest_a += 1;
    unsafe_shift(0); /* unsafe: serial */
    CHECK_EQ_U(_ITM_inTransaction(), 2);
  }
  CHECK_EQ_I(V(act_count), 3);
  CHECK_EQ_U(_ITM_inTransaction(), 0);
  /* and the ABI's state is a clean outermost one again */
  __transaction_atomic {
    nest_a += 1;
    if (nest_a > 0) __transaction_cancel;
  }
  CHECK_EQ_I(V(act_count), 3);
  sstm_test_fini();
}

/* ---- a killed attempt that leaves ------------------------------------------------- */

/* An attempt that was killed (by another transaction's policy, which takes
 * over the locks of the attempts it kills) and then leaves to become
 * serial (I4) must still leave, not restart revocable: the engine's cancel
 * ends a killed attempt as a cancel. Otherwise the leave the ABI asked for
 * would stay pending for a later transaction, whose own
 * __transaction_cancel would then rerun it serial. */
static long kill_attempts;
static _Atomic uint32_t kill_rerun_mode;

/* Not transactional: counts the attempts, restarts included. */
__attribute__((transaction_pure)) static long attempt_number(void) { return kill_attempts++; }

/* What a policy of another thread does to a lock holder: here to this
 * thread's own attempt, so that the kill lands before the mode change. */
__attribute__((transaction_pure)) static void kill_this_attempt(void) {
  CHECK_EQ_I(sstm_desc_kill(sstm_self(), 0), 0);
}

__attribute__((transaction_pure)) static void note_mode(void) {
  atomic_store_explicit(&kill_rerun_mode, _ITM_inTransaction(), memory_order_relaxed);
}

TEST(a_killed_attempt_that_asks_for_serial_mode_reruns_serial) {
  sstm_test_init();
  kill_attempts = 0;
  __transaction_relaxed {
    nest_a += 1;
    if (attempt_number() == 0) {
      kill_this_attempt();
      unsafe_shift(0); /* _ITM_changeTransactionMode */
    }
    note_mode();
  }
  CHECK_EQ_I(V(kill_attempts), 2);
  CHECK_EQ_U(atomic_load_explicit(&kill_rerun_mode, memory_order_relaxed), 2); /* irrevocable */
  CHECK_EQ_U(_ITM_inTransaction(), 0);
  /* a later transaction's cancel skips its block */
  int after = 0;
  __transaction_atomic {
    nest_b += 1;
    if (nest_b > 0) __transaction_cancel;
  }
  after = 1;
  CHECK_EQ_I(after, 1);
  sstm_test_fini();
}

/* ---- a thread that ends inside a serial transaction ------------------------------- */

/* The engine commits a transaction that asked to be irrevocable when its
 * thread ends inside it; the ABI's serial mode must end with it, or every
 * later transaction waits for it for ever (a hang: ctest's timeout). */
static long exit_count;

__attribute__((noinline)) void unsafe_exit(void) {
  sched_yield();
  pthread_exit(NULL);
}

static void *exit_in_serial(void *arg) {
  (void)arg;
  __transaction_relaxed {
    exit_count += 1;
    unsafe_exit();
  }
  return NULL;
}

TEST(a_thread_that_ends_in_a_serial_transaction_lets_the_others_run) {
  sstm_test_init();
  pthread_t th;
  CHECK_EQ_I(pthread_create(&th, NULL, exit_in_serial, NULL), 0);
  CHECK_EQ_I(pthread_join(th, NULL), 0);
  __transaction_atomic { exit_count += 1; }
  CHECK_EQ_I(V(exit_count), 2);
  sstm_test_fini();
}

SSTM_TEST_MAIN()
